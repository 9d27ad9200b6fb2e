/* ref_misc.c - reference resize, topk, range and random_uniform.
 *
 * resize (NHWC, output shape given) follows TensorFlow.js's CPU backend:
 *   effective in/out size = size-1 on an axis when align_corners and the
 *   output size > 1, else the size; ratio = eff_in / eff_out;
 *   src = half_pixel ? ratio*(o+0.5) - 0.5 : ratio*o.
 *   bilinear: lo = max(0, floor(src)), hi = min(in-1, ceil(src)),
 *     frac = src - lo; top = tl + (tr-tl)*fx, bottom likewise,
 *     y = top + (bottom-top)*fy (computed in double, stored in the output dtype).
 *   nearest: n = min(in-1, align ? round_half_up(src) : floor(src)) with
 *     src = half_pixel ? ratio*(o+0.5) : ratio*o; clamped at 0 when half_pixel.
 * topk: along the last axis, values and int32 (or int64) indices, descending,
 *   the lower index first on ties.  An insertion sort into the output row
 *   itself (O(n*k), no allocation): an element enters only when strictly
 *   greater than the current k-th, and goes after the equal ones.
 * range: out[i] = start + i*delta accumulated in the output dtype like
 *   TF/TF.js (v[i] = v[i-1] + delta), integers exactly.
 * random_uniform: splitmix64 stream seeded from (seed, seed2); float32 uses
 *   the top 24 bits, float64 the top 53, so values lie in [0, 1).
 */
#include "kern_int.h"

/* ---- resize ---- */

static double resize_ratio(int64_t in, int64_t out, bool align)
{
    double ei = (align && out > 1) ? (double)(in - 1) : (double)in;
    double eo = (align && out > 1) ? (double)(out - 1) : (double)out;
    return ei / eo;
}

static int64_t nearest_src(int64_t o, double ratio, int64_t in, bool align, bool half)
{
    double src = half ? ratio * ((double)o + 0.5) : ratio * (double)o;
    int64_t n = (int64_t)(align ? floor(src + 0.5) : floor(src));
    if (n > in - 1)
        n = in - 1;
    if (half && n < 0)
        n = 0;
    return n < 0 ? 0 : n;
}

tcrt_status tcrt_ref_resize(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                            const tcrt_params *p)
{
    KCHECK(in && out && p && n_in >= 1 && n_out >= 1);
    const tcrt_tensor *x = &in[0];
    KCHECK(k_valid(x) && k_valid(out) && x->rank == 4 && out->rank == 4);
    KCHECK(tcrt_dtype_size(x->dtype) > 0 && x->dtype != TCRT_F16 && x->dtype != TCRT_STRING);
    int64_t mode = p->i[TCRT_RS_MODE];
    bool align = p->i[TCRT_RS_ALIGN] != 0, half = p->i[TCRT_RS_HALF] != 0;
    KCHECK(mode == 0 || mode == 1);
    if (mode == 0)
        KCHECK(k_is_float(out->dtype));
    else
        KCHECK(out->dtype == x->dtype || k_is_float(out->dtype));
    int64_t N = x->dims[0], H = x->dims[1], W = x->dims[2], C = x->dims[3];
    int64_t OH = out->dims[1], OW = out->dims[2];
    KCHECK(out->dims[0] == N && out->dims[3] == C);
    if (k_count(out) == 0)
        return TCRT_OK;
    KCHECK(H > 0 && W > 0);
    double rh = resize_ratio(H, OH, align), rw = resize_ratio(W, OW, align);
    size_t esz = tcrt_dtype_size(x->dtype);
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < OH; oh++) {
            if (mode == 1) {
                int64_t ih = nearest_src(oh, rh, H, align, half);
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t iw = nearest_src(ow, rw, W, align, half);
                    int64_t si = ((n * H + ih) * W + iw) * C, oi = ((n * OH + oh) * OW + ow) * C;
                    if (out->dtype == x->dtype)
                        memcpy((char *)out->data + oi * (int64_t)esz,
                               (const char *)x->data + si * (int64_t)esz, (size_t)C * esz);
                    else
                        for (int64_t c = 0; c < C; c++)
                            k_store(out->data, out->dtype, oi + c, k_load(x->data, x->dtype, si + c));
                }
                continue;
            }
            double sy = half ? rh * ((double)oh + 0.5) - 0.5 : rh * (double)oh;
            int64_t y0 = (int64_t)floor(sy);
            y0 = y0 < 0 ? 0 : y0;
            double fy = sy - (double)y0;
            int64_t y1 = (int64_t)ceil(sy);
            y1 = y1 > H - 1 ? H - 1 : y1;
            y0 = y0 > H - 1 ? H - 1 : y0; /* only when src exceeds the input (not for valid ratios) */
            y1 = y1 < 0 ? 0 : y1;
            for (int64_t ow = 0; ow < OW; ow++) {
                double sx = half ? rw * ((double)ow + 0.5) - 0.5 : rw * (double)ow;
                int64_t x0 = (int64_t)floor(sx);
                x0 = x0 < 0 ? 0 : x0;
                double fx = sx - (double)x0;
                int64_t x1 = (int64_t)ceil(sx);
                x1 = x1 > W - 1 ? W - 1 : x1;
                x0 = x0 > W - 1 ? W - 1 : x0;
                x1 = x1 < 0 ? 0 : x1;
                int64_t tl = ((n * H + y0) * W + x0) * C, tr = ((n * H + y0) * W + x1) * C;
                int64_t bl = ((n * H + y1) * W + x0) * C, br = ((n * H + y1) * W + x1) * C;
                int64_t oi = ((n * OH + oh) * OW + ow) * C;
                for (int64_t c = 0; c < C; c++) {
                    double vtl = k_load(x->data, x->dtype, tl + c), vtr = k_load(x->data, x->dtype, tr + c);
                    double vbl = k_load(x->data, x->dtype, bl + c), vbr = k_load(x->data, x->dtype, br + c);
                    double top = vtl + (vtr - vtl) * fx;
                    double bot = vbl + (vbr - vbl) * fx;
                    k_store(out->data, out->dtype, oi + c, top + (bot - top) * fy);
                }
            }
        }
    return TCRT_OK;
}

/* ---- topk ---- */

#define TOPK_ROWS(T)                                                                                         \
    do {                                                                                                     \
        const T *X = (const T *)x->data;                                                                     \
        T *V = (T *)vals->data;                                                                              \
        for (int64_t r = 0; r < rows; r++) {                                                                 \
            const T *xr = X + r * n;                                                                         \
            T *vr = V + r * k;                                                                               \
            int64_t cnt = 0;                                                                                 \
            for (int64_t j = 0; j < n; j++) {                                                                \
                T v = xr[j];                                                                                 \
                if (cnt == k && !(v > vr[k - 1]))                                                            \
                    continue;                                                                                \
                int64_t pos = cnt < k ? cnt++ : k - 1;                                                       \
                while (pos > 0 && v > vr[pos - 1]) {                                                         \
                    vr[pos] = vr[pos - 1];                                                                   \
                    set_index(idx, r *k + pos, get_index(idx, r * k + pos - 1));                             \
                    pos--;                                                                                   \
                }                                                                                            \
                vr[pos] = v;                                                                                 \
                set_index(idx, r *k + pos, j);                                                               \
            }                                                                                                \
        }                                                                                                    \
    } while (0)

static void set_index(tcrt_tensor *t, int64_t i, int64_t v)
{
    if (t->dtype == TCRT_I32)
        ((int32_t *)t->data)[i] = (int32_t)v;
    else
        ((int64_t *)t->data)[i] = v;
}

static int64_t get_index(const tcrt_tensor *t, int64_t i)
{
    return t->dtype == TCRT_I32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

tcrt_status tcrt_ref_topk(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    KCHECK(in && out && p && n_in == 1 && n_out == 2);
    const tcrt_tensor *x = &in[0];
    tcrt_tensor *vals = &out[0], *idx = &out[1];
    KCHECK(k_valid(x) && k_valid(vals) && k_valid(idx) && x->rank >= 1);
    KCHECK(vals->rank == x->rank && idx->rank == x->rank && vals->dtype == x->dtype);
    KCHECK(idx->dtype == TCRT_I32 || idx->dtype == TCRT_I64);
    int last = x->rank - 1;
    int64_t n = x->dims[last], k = p->i[TCRT_TOPK_K];
    KCHECK(k >= 0 && k <= n && vals->dims[last] == k && idx->dims[last] == k);
    for (int d = 0; d < last; d++)
        KCHECK(vals->dims[d] == x->dims[d] && idx->dims[d] == x->dims[d]);
    if (k == 0)
        return TCRT_OK;
    int64_t rows = k_count(x) / n;
    switch (x->dtype) {
    case TCRT_F32:
        TOPK_ROWS(float);
        break;
    case TCRT_F64:
        TOPK_ROWS(double);
        break;
    case TCRT_I32:
        TOPK_ROWS(int32_t);
        break;
    case TCRT_I64:
        TOPK_ROWS(int64_t);
        break;
    case TCRT_U8:
        TOPK_ROWS(uint8_t);
        break;
    default:
        return TCRT_ERR_RUNTIME;
    }
    return TCRT_OK;
}

/* ---- range ---- */

tcrt_status tcrt_ref_range(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    (void)in;
    (void)n_in;
    KCHECK(out && p && n_out >= 1 && k_valid(out) && out->rank == 1);
    int64_t n = out->dims[0];
    double start = p->f[TCRT_RANGE_START], delta = p->f[TCRT_RANGE_DELTA];
    switch (out->dtype) {
    case TCRT_F32: {
        float v = (float)start;
        for (int64_t i = 0; i < n; i++) {
            ((float *)out->data)[i] = v;
            v = (float)((double)v + delta);
        }
        break;
    }
    case TCRT_F64: {
        double v = start;
        for (int64_t i = 0; i < n; i++) {
            ((double *)out->data)[i] = v;
            v += delta;
        }
        break;
    }
    case TCRT_I32:
    case TCRT_I64: {
        KCHECK(start == floor(start) && delta == floor(delta) && fabs(start) < 9.2e18 &&
               fabs(delta) < 9.2e18);
        uint64_t v = (uint64_t)(int64_t)start, dv = (uint64_t)(int64_t)delta;
        for (int64_t i = 0; i < n; i++, v += dv) {
            if (out->dtype == TCRT_I32)
                ((int32_t *)out->data)[i] = (int32_t)(int64_t)v;
            else
                ((int64_t *)out->data)[i] = (int64_t)v;
        }
        break;
    }
    default:
        return TCRT_ERR_RUNTIME;
    }
    return TCRT_OK;
}

/* ---- random_uniform ---- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

tcrt_status tcrt_ref_random_uniform(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                    const tcrt_params *p)
{
    (void)in;
    (void)n_in;
    KCHECK(out && p && n_out >= 1 && k_valid(out));
    KCHECK(out->dtype == TCRT_F32 || out->dtype == TCRT_F64);
    uint64_t s = (uint64_t)p->i[TCRT_RND_SEED] * 0xD1B54A32D192ED03ull ^ (uint64_t)p->i[TCRT_RND_SEED2];
    int64_t n = k_count(out);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = splitmix64(&s);
        if (out->dtype == TCRT_F32)
            ((float *)out->data)[i] = (float)(r >> 40) * (1.0f / 16777216.0f);
        else
            ((double *)out->data)[i] = (double)(r >> 11) * (1.0 / 9007199254740992.0);
    }
    return TCRT_OK;
}
