/* ref_move.c - reference data-movement kernels: copy, transpose, slice, pad,
 * concat, gather, gather_nd, tile, broadcast.
 *
 * All work on any dtype by element size (the output dtype must equal the
 * input's).  Most are one "strided gather": walk the output in row-major
 * order with an odometer whose per-dim input strides encode the movement
 * (transpose: permuted strides; slice: stride*step, possibly negative, from
 * a base offset; broadcast: stride 0 on broadcast dims).  Pad and tile map
 * each output coordinate through a per-dim index function instead.
 * Gather checks every index before writing anything, so an out-of-range or
 * negative index returns TCRT_ERR_RUNTIME and never reads out of bounds.
 * Invariants: every source offset is proven in range from the shapes before
 * the copy loop starts.
 */
#include "kern_int.h"

static bool same_dtype(const tcrt_tensor *a, const tcrt_tensor *b)
{
    return a->dtype == b->dtype;
}

static size_t esize(const tcrt_tensor *t)
{
    return tcrt_dtype_size(t->dtype);
}

/* out[i...] = in[base + sum idx[d]*ist[d]] over out's index space. */
static void strided_gather(void *out, const void *in, int rank, const int64_t *odims, const int64_t *ist,
                           int64_t base, size_t esz)
{
    int64_t total = 1;
    for (int d = 0; d < rank; d++)
        total *= odims[d];
    if (total == 0)
        return;
    if (rank == 0) {
        k_copy_elem(out, (const char *)in + base * (int64_t)esz, esz);
        return;
    }
    /* inner loop over the last dim, odometer over the rest */
    int64_t inner = odims[rank - 1], ist_in = ist[rank - 1];
    Odo o;
    odo_init(&o, rank - 1, odims, ist);
    char *dst = out;
    const char *src = in;
    for (int64_t r = 0; r < total / inner; r++, odo_next(&o)) {
        int64_t off = base + o.off;
        if (ist_in == 1) {
            memcpy(dst, src + off * (int64_t)esz, (size_t)inner * esz);
            dst += inner * (int64_t)esz;
            continue;
        }
        switch (esz) {
        case 4:
            for (int64_t i = 0; i < inner; i++, dst += 4)
                memcpy(dst, src + (off + i * ist_in) * 4, 4);
            break;
        case 8:
            for (int64_t i = 0; i < inner; i++, dst += 8)
                memcpy(dst, src + (off + i * ist_in) * 8, 8);
            break;
        default:
            for (int64_t i = 0; i < inner; i++, dst += esz)
                k_copy_elem(dst, src + (off + i * ist_in) * (int64_t)esz, esz);
            break;
        }
    }
}

tcrt_status tcrt_ref_copy(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    (void)p;
    KCHECK(in && out && n_in >= 1 && n_out >= 1);
    KCHECK(k_valid(&in[0]) && k_valid(out));
    size_t ib = (size_t)k_count(&in[0]) * esize(&in[0]), ob = (size_t)k_count(out) * esize(out);
    KCHECK(ib == ob && esize(out) > 0);
    if (ob && in[0].data != out->data)
        memmove(out->data, in[0].data, ob);
    return TCRT_OK;
}

tcrt_status tcrt_ref_assign(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    KCHECK(in && n_in == 2);
    return tcrt_ref_copy(&in[1], 1, out, n_out, p);
}

tcrt_status tcrt_ref_transpose(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                               const tcrt_params *p)
{
    KCHECK(in && out && p && n_in == 1 && n_out >= 1);
    const tcrt_tensor *x = &in[0];
    KCHECK(k_valid(x) && k_valid(out) && x->rank == out->rank && same_dtype(x, out) && esize(x) > 0);
    int64_t xs[TCRT_MAX_RANK], ost[TCRT_MAX_RANK];
    k_strides(x, xs);
    unsigned seen = 0;
    for (int d = 0; d < x->rank; d++) {
        int64_t pd = p->i[TCRT_TR_PERM + d];
        KCHECK(pd >= 0 && pd < x->rank && !(seen & (1u << pd)));
        seen |= 1u << pd;
        KCHECK(out->dims[d] == x->dims[pd]);
        ost[d] = xs[pd];
    }
    strided_gather(out->data, x->data, out->rank, out->dims, ost, 0, esize(x));
    return TCRT_OK;
}

tcrt_status tcrt_ref_slice(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    KCHECK(in && out && p && n_in == 1 && n_out >= 1);
    const tcrt_tensor *x = &in[0];
    KCHECK(k_valid(x) && k_valid(out) && x->rank == out->rank && same_dtype(x, out) && esize(x) > 0);
    int64_t xs[TCRT_MAX_RANK], ost[TCRT_MAX_RANK], base = 0;
    k_strides(x, xs);
    if (k_count(out) == 0)
        return TCRT_OK;
    for (int d = 0; d < x->rank; d++) {
        int64_t b = p->i[TCRT_SL_BEGIN + d], s = p->i[TCRT_SL_STRIDE + d], n = out->dims[d];
        KCHECK(s != 0);
        KCHECK(b >= 0 && b < x->dims[d]);
        int64_t span, last; /* n >= 1 here */
        KCHECK(!__builtin_mul_overflow(n - 1, s, &span) && !__builtin_add_overflow(b, span, &last));
        KCHECK(last >= 0 && last < x->dims[d]);
        base += b * xs[d];
        ost[d] = s * xs[d];
    }
    strided_gather(out->data, x->data, out->rank, out->dims, ost, base, esize(x));
    return TCRT_OK;
}

tcrt_status tcrt_ref_broadcast(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                               const tcrt_params *p)
{
    (void)p;
    KCHECK(in && out && n_in == 1 && n_out >= 1);
    const tcrt_tensor *x = &in[0];
    KCHECK(k_valid(x) && k_valid(out) && x->rank <= out->rank && same_dtype(x, out) && esize(x) > 0);
    int64_t xs[TCRT_MAX_RANK], ost[TCRT_MAX_RANK];
    k_strides(x, xs);
    int lead = out->rank - x->rank;
    for (int d = 0; d < out->rank; d++) {
        int xd = d - lead;
        if (xd < 0) {
            ost[d] = 0;
        } else {
            KCHECK(x->dims[xd] == out->dims[d] || x->dims[xd] == 1);
            ost[d] = x->dims[xd] == 1 ? 0 : xs[xd];
        }
    }
    if (k_count(out) == 0)
        return TCRT_OK;
    strided_gather(out->data, x->data, out->rank, out->dims, ost, 0, esize(x));
    return TCRT_OK;
}

/* Source coordinate of output coordinate i along a padded dim, or -1 for
 * padding (constant mode).  -2 when reflect/symmetric cannot map it. */
static int64_t pad_src(int64_t i, int64_t before, int64_t n, int64_t mode)
{
    int64_t j = i - before;
    if (j >= 0 && j < n)
        return j;
    if (mode == 0)
        return -1;
    /* reflect: ... 2 1 [0 1 2] 1 0 ...; symmetric: ... 1 0 [0 1 2] 2 1 ... */
    for (int guard = 0; guard < 64 && (j < 0 || j >= n); guard++) {
        if (mode == 1) {
            if (n == 1)
                return 0;
            if (j < 0)
                j = -j;
            else
                j = 2 * (n - 1) - j;
        } else {
            if (j < 0)
                j = -j - 1;
            else
                j = 2 * n - 1 - j;
        }
    }
    return (j >= 0 && j < n) ? j : -2;
}

tcrt_status tcrt_ref_pad(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    KCHECK(in && out && p && n_in >= 1 && n_out >= 1);
    const tcrt_tensor *x = &in[0];
    KCHECK(k_valid(x) && k_valid(out) && x->rank == out->rank && same_dtype(x, out) && esize(x) > 0);
    KCHECK(x->rank <= 8);
    int64_t mode = p->i[TCRT_PAD_MODE];
    KCHECK(mode >= 0 && mode <= 2);
    for (int d = 0; d < x->rank; d++) {
        int64_t b = p->i[2 * d], a = p->i[2 * d + 1];
        KCHECK(b >= 0 && a >= 0 && x->dims[d] + b + a == out->dims[d]);
        if (mode != 0 && out->dims[d] > x->dims[d])
            KCHECK(x->dims[d] > 0);
    }
    size_t esz = esize(x);
    int64_t total = k_count(out);
    if (total == 0)
        return TCRT_OK;
    /* constant value in the tensor's dtype */
    unsigned char cval[16] = {0};
    k_store(cval, x->dtype, 0, p->f[0]);
    int64_t xs[TCRT_MAX_RANK];
    k_strides(x, xs);
    int64_t idx[TCRT_MAX_RANK] = {0};
    char *dst = out->data;
    const char *src = x->data;
    for (int64_t o = 0; o < total; o++, dst += esz) {
        int64_t off = 0;
        bool is_pad = false;
        for (int d = 0; d < x->rank; d++) {
            int64_t j = pad_src(idx[d], p->i[2 * d], x->dims[d], mode);
            if (j == -2)
                return TCRT_ERR_RUNTIME;
            if (j < 0) {
                is_pad = true;
                break;
            }
            off += j * xs[d];
        }
        k_copy_elem(dst, is_pad ? (const char *)cval : src + off * (int64_t)esz, esz);
        for (int d = x->rank - 1; d >= 0; d--) {
            if (++idx[d] < out->dims[d])
                break;
            idx[d] = 0;
        }
    }
    return TCRT_OK;
}

tcrt_status tcrt_ref_concat(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                            const tcrt_params *p)
{
    KCHECK(in && out && p && n_in >= 1 && n_out >= 1);
    KCHECK(k_valid(out) && out->rank >= 1 && esize(out) > 0);
    int64_t axis = p->i[TCRT_CAT_AXIS];
    if (axis < 0)
        axis += out->rank;
    KCHECK(axis >= 0 && axis < out->rank);
    int64_t sum = 0;
    for (int k = 0; k < n_in; k++) {
        KCHECK(k_valid(&in[k]) && in[k].rank == out->rank && same_dtype(&in[k], out));
        for (int d = 0; d < out->rank; d++)
            if (d != axis)
                KCHECK(in[k].dims[d] == out->dims[d]);
        sum += in[k].dims[axis];
    }
    KCHECK(sum == out->dims[axis]);
    size_t esz = esize(out);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= out->dims[d];
    for (int d = (int)axis + 1; d < out->rank; d++)
        inner *= out->dims[d];
    char *dst = out->data;
    for (int64_t o = 0; o < outer; o++)
        for (int k = 0; k < n_in; k++) {
            size_t chunk = (size_t)(in[k].dims[axis] * inner) * esz;
            if (chunk)
                memcpy(dst, (const char *)in[k].data + (size_t)o * chunk, chunk);
            dst += chunk;
        }
    return TCRT_OK;
}

static int64_t index_at(const tcrt_tensor *ix, int64_t i)
{
    return ix->dtype == TCRT_I32 ? ((const int32_t *)ix->data)[i] : ((const int64_t *)ix->data)[i];
}

/* gather: params [B..., P..., A, R...], indices [B..., I...];
 * out [B..., P..., I..., R...]: out[b,p,i,r] = params[b,p,idx[b,i],r]. */
tcrt_status tcrt_ref_gather(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                            const tcrt_params *p)
{
    KCHECK(in && out && p && n_in == 2 && n_out >= 1);
    const tcrt_tensor *x = &in[0], *ix = &in[1];
    KCHECK(k_valid(x) && k_valid(ix) && k_valid(out) && same_dtype(x, out) && esize(x) > 0);
    KCHECK(ix->dtype == TCRT_I32 || ix->dtype == TCRT_I64);
    int64_t axis = p->i[TCRT_GA_AXIS], bd = p->i[TCRT_GA_BATCH];
    if (axis < 0)
        axis += x->rank;
    if (bd < 0)
        bd += ix->rank;
    KCHECK(axis >= 0 && axis < x->rank && bd >= 0 && bd <= axis && bd <= ix->rank);
    KCHECK(out->rank == x->rank - 1 + ix->rank - bd);
    int64_t B = 1, P = 1, A = x->dims[axis], R = 1, I = 1;
    for (int d = 0; d < bd; d++) {
        KCHECK(x->dims[d] == ix->dims[d]);
        B *= x->dims[d];
    }
    for (int d = (int)bd; d < axis; d++)
        P *= x->dims[d];
    for (int d = (int)axis + 1; d < x->rank; d++)
        R *= x->dims[d];
    for (int d = (int)bd; d < ix->rank; d++)
        I *= ix->dims[d];
    /* out dims: x[:axis] + ix[bd:] + x[axis+1:] */
    int od = 0;
    for (int d = 0; d < axis; d++)
        KCHECK(out->dims[od++] == x->dims[d]);
    for (int d = (int)bd; d < ix->rank; d++)
        KCHECK(out->dims[od++] == ix->dims[d]);
    for (int d = (int)axis + 1; d < x->rank; d++)
        KCHECK(out->dims[od++] == x->dims[d]);
    int64_t n_idx = k_count(ix);
    for (int64_t i = 0; i < n_idx; i++) {
        int64_t v = index_at(ix, i);
        if (v < 0 || v >= A)
            return TCRT_ERR_RUNTIME;
    }
    size_t esz = esize(x), row = (size_t)R * esz;
    char *dst = out->data;
    const char *src = x->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t pp = 0; pp < P; pp++)
            for (int64_t i = 0; i < I; i++) {
                int64_t v = index_at(ix, b * I + i);
                if (row)
                    memcpy(dst, src + (size_t)(((b * P + pp) * A + v) * R) * esz, row);
                dst += row;
            }
    return TCRT_OK;
}

/* gather_nd: params [P0..Pk-1, R...], indices [..., k]; out [..., R...]. */
tcrt_status tcrt_ref_gather_nd(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                               const tcrt_params *p)
{
    (void)p;
    KCHECK(in && out && n_in == 2 && n_out >= 1);
    const tcrt_tensor *x = &in[0], *ix = &in[1];
    KCHECK(k_valid(x) && k_valid(ix) && k_valid(out) && same_dtype(x, out) && esize(x) > 0);
    KCHECK(ix->dtype == TCRT_I32 || ix->dtype == TCRT_I64);
    KCHECK(ix->rank >= 1);
    int64_t k = ix->dims[ix->rank - 1];
    KCHECK(k >= 0 && k <= x->rank);
    KCHECK(out->rank == ix->rank - 1 + x->rank - k);
    int od = 0;
    for (int d = 0; d < ix->rank - 1; d++)
        KCHECK(out->dims[od++] == ix->dims[d]);
    for (int d = (int)k; d < x->rank; d++)
        KCHECK(out->dims[od++] == x->dims[d]);
    int64_t xs[TCRT_MAX_RANK];
    k_strides(x, xs);
    int64_t R = 1;
    for (int d = (int)k; d < x->rank; d++)
        R *= x->dims[d];
    int64_t n_rows = 1;
    for (int d = 0; d < ix->rank - 1; d++)
        n_rows *= ix->dims[d];
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t j = 0; j < k; j++) {
            int64_t v = index_at(ix, r * k + j);
            if (v < 0 || v >= x->dims[j])
                return TCRT_ERR_RUNTIME;
        }
    size_t esz = esize(x), row = (size_t)R * esz;
    char *dst = out->data;
    for (int64_t r = 0; r < n_rows; r++) {
        int64_t off = 0;
        for (int64_t j = 0; j < k; j++)
            off += index_at(ix, r * k + j) * xs[j];
        if (row)
            memcpy(dst, (const char *)x->data + (size_t)off * esz, row);
        dst += row;
    }
    return TCRT_OK;
}

tcrt_status tcrt_ref_tile(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    (void)p;
    KCHECK(in && out && n_in >= 1 && n_out >= 1);
    const tcrt_tensor *x = &in[0];
    KCHECK(k_valid(x) && k_valid(out) && x->rank == out->rank && same_dtype(x, out) && esize(x) > 0);
    for (int d = 0; d < x->rank; d++) {
        if (x->dims[d] == 0)
            KCHECK(out->dims[d] == 0);
        else
            KCHECK(out->dims[d] % x->dims[d] == 0);
    }
    int64_t total = k_count(out);
    if (total == 0)
        return TCRT_OK;
    int64_t xs[TCRT_MAX_RANK], idx[TCRT_MAX_RANK] = {0};
    k_strides(x, xs);
    size_t esz = esize(x);
    char *dst = out->data;
    const char *src = x->data;
    if (x->rank == 0) {
        k_copy_elem(dst, src, esz);
        return TCRT_OK;
    }
    /* copy whole input rows (last dim) at a time */
    int last = x->rank - 1;
    int64_t xrow = x->dims[last], orow = out->dims[last];
    for (int64_t o = 0; o < total; o += orow) {
        int64_t off = 0;
        for (int d = 0; d < last; d++)
            off += (idx[d] % x->dims[d]) * xs[d];
        for (int64_t c = 0; c < orow; c += xrow) {
            memcpy(dst, src + off * (int64_t)esz, (size_t)xrow * esz);
            dst += xrow * (int64_t)esz;
        }
        for (int d = last - 1; d >= 0; d--) {
            if (++idx[d] < out->dims[d])
                break;
            idx[d] = 0;
        }
    }
    return TCRT_OK;
}

/* update_slice: out = x with out[s0:s0+u0, s1:s1+u1, ...] = u; the start
 * vector is read at run time and must fit (TCRT_ERR_RUNTIME otherwise). */
tcrt_status tcrt_ref_update_slice(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                  const tcrt_params *p)
{
    (void)p;
    KCHECK(in && out && n_in == 3 && n_out >= 1);
    const tcrt_tensor *x = &in[0], *u = &in[1], *s = &in[2];
    KCHECK(k_valid(x) && k_valid(u) && k_valid(s) && k_valid(out) && same_dtype(x, out) && same_dtype(x, u));
    KCHECK(esize(x) > 0 && u->rank == x->rank && out->rank == x->rank);
    KCHECK((s->dtype == TCRT_I32 || s->dtype == TCRT_I64) && s->rank == 1 && s->dims[0] == x->rank);
    int64_t start[TCRT_MAX_RANK], xst[TCRT_MAX_RANK], ust[TCRT_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        KCHECK(out->dims[d] == x->dims[d] && u->dims[d] <= x->dims[d]);
        start[d] = index_at(s, d);
        if (start[d] < 0 || start[d] > x->dims[d] - u->dims[d])
            return TCRT_ERR_RUNTIME;
    }
    size_t esz = esize(x);
    if (out->data != x->data)
        memcpy(out->data, x->data, (size_t)k_count(x) * esz);
    int64_t n = k_count(u);
    if (n == 0)
        return TCRT_OK;
    /* strides in elements */
    int64_t sx = 1, su = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        xst[d] = sx;
        ust[d] = su;
        sx *= x->dims[d];
        su *= u->dims[d];
    }
    int r = x->rank;
    int64_t row = r > 0 ? u->dims[r - 1] : 1; /* contiguous run */
    int64_t idx[TCRT_MAX_RANK] = {0};
    for (int64_t off_u = 0; off_u < n; off_u += row) {
        int64_t off_x = 0;
        for (int d = 0; d < r; d++)
            off_x += (start[d] + idx[d]) * xst[d];
        memcpy((char *)out->data + off_x * (int64_t)esz, (const char *)u->data + off_u * (int64_t)esz,
               (size_t)row * esz);
        for (int d = r - 2; d >= 0; d--) {
            if (++idx[d] < u->dims[d])
                break;
            idx[d] = 0;
        }
    }
    (void)ust;
    return TCRT_OK;
}

tcrt_status tcrt_ref_reverse_seq(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    KCHECK(in && out && p && n_in == 2 && n_out >= 1);
    const tcrt_tensor *x = &in[0], *len = &in[1];
    KCHECK(k_valid(x) && k_valid(len) && k_valid(out) && same_dtype(x, out) && esize(x) > 0);
    KCHECK(out->rank == x->rank && len->rank == 1);
    KCHECK(len->dtype == TCRT_I32 || len->dtype == TCRT_I64);
    int64_t sd = p->i[0], bd = p->i[1];
    KCHECK(sd >= 0 && sd < x->rank && bd >= 0 && bd < x->rank && sd != bd && len->dims[0] == x->dims[bd]);
    for (int d = 0; d < x->rank; d++)
        KCHECK(out->dims[d] == x->dims[d]);
    for (int64_t b = 0; b < len->dims[0]; b++) {
        int64_t l = len->dtype == TCRT_I32 ? ((const int32_t *)len->data)[b] : ((const int64_t *)len->data)[b];
        KCHECK(l >= 0 && l <= x->dims[sd]);
    }
    int64_t xs[TCRT_MAX_RANK], idx[TCRT_MAX_RANK] = {0}, n = k_count(x);
    k_strides(x, xs);
    size_t es = esize(x);
    const uint8_t *src = x->data;
    uint8_t *dst = out->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t b = idx[bd], s = idx[sd];
        int64_t l = len->dtype == TCRT_I32 ? ((const int32_t *)len->data)[b] : ((const int64_t *)len->data)[b];
        int64_t from = i + (s < l ? (l - 1 - 2 * s) * xs[sd] : 0);
        memcpy(dst + (size_t)i * es, src + (size_t)from * es, es);
        for (int d = x->rank - 1; d >= 0; d--) {
            if (++idx[d] < x->dims[d])
                break;
            idx[d] = 0;
        }
    }
    return TCRT_OK;
}
