/* runtime/kernels/fast_move.c - fast float32 pad (constant mode) and NHWC
 * resize (bilinear, nearest); tcrt_kernels.h.  Everything else (other
 * dtypes, reflect/symmetric pad, a bad shape) goes to the reference kernels
 * (ref_move.c, ref_misc.c), which define the semantics and report errors.
 *
 * Pad: the trailing dims that are not padded form one contiguous block
 *   ("unit"); the innermost padded dim L is a row of before[L] constant units,
 *   dims[L] units copied (one memcpy, or inline moves for a short row),
 *   after[L] constant units; the dims before L are walked line by line (dim
 *   L-1 innermost), and a row whose coordinate lies in the padding of any
 *   outer dim is all constant.  The result is bit-identical to tcrt_ref_pad.
 *   Rows are split over the thread pool when the output is big
 *   (MOVE_SERIAL_BYTES).
 * Resize: source rows, columns and fractions come from the reference's
 *   formulas (in double); the columns' are tabulated once per task for up to
 *   RS_COLS output columns (on the stack), then every output row of the task
 *   reuses them.  Bilinear interpolates 8 channels at a time in float
 *   (top = tl + (tr-tl)*fx, bottom likewise, y = top + (bottom-top)*fy, the
 *   reference's expression, which evaluates it in double and rounds once:
 *   results differ by a few float roundings); nearest copies the C channels
 *   of the source pixel (bit-identical).  Output rows (n, oh) are split over
 *   the thread pool.
 * Transpose: output dims of extent 1 are dropped and neighbours that are
 *   contiguous in the input too are merged (NCHW -> NHWC becomes [H*W][C]
 *   from [C][H*W]); when the input's innermost dim a is not the output's
 *   innermost dim, every plane (the other dims, by odometer) is copied in
 *   TR_BLOCK runs of a, each run reading TR_BLOCK contiguous floats per
 *   output column and writing whole output rows (with 8 or more columns in
 *   8 x 8 tiles transposed in registers), else each output row is a
 *   strided (or contiguous) copy.  Runs / rows are split over the thread
 *   pool.  A copy, so bit-identical to tcrt_ref_transpose, which takes every
 *   call this does not handle (and reports errors).
 * No allocation, no workspace.
 */
#include "kern_int.h"
#include "tcrt_pool.h"

#include <stdbool.h>
#include <string.h>

/* Output bytes below which one thread runs.  256 KB left a channel pad of
 * 24x24x64 (147 KB) on one thread, reading the half of its input the other
 * core wrote; with 32 KB, facemesh-detection-short at 2 threads 0.691 ->
 * 0.667 and 0.691 -> 0.650 ms (medians of 10 and 8 alternating runs of 50),
 * facemesh, blazeface and 1 thread unchanged. */
#define MOVE_SERIAL_BYTES (32 << 10)

/* Tasks for n_rows rows of row_bytes output bytes each: 1 for a small output
 * or one thread, else up to 4 per thread; *per_task rows each. */
static int64_t move_tasks(int64_t n_rows, int64_t row_bytes, int64_t *per_task)
{
    int64_t threads = tcrt_get_threads();
    int64_t n = n_rows * row_bytes < MOVE_SERIAL_BYTES || threads <= 1 ? 1 : 4 * threads;
    if (n > n_rows)
        n = n_rows;
    if (n < 1)
        n = 1;
    *per_task = (n_rows + n - 1) / n;
    if (*per_task < 1)
        *per_task = 1;
    return (n_rows + *per_task - 1) / *per_task;
}

/* ---- pad ---- */

typedef struct Pad {
    const float *x;
    float *y;
    float cval;
    int L;                      /* innermost padded dim */
    int64_t unit;               /* floats per element of dim L (product of dims after L) */
    int64_t odims[TCRT_MAX_RANK], xdims[TCRT_MAX_RANK], before[TCRT_MAX_RANK], xst[TCRT_MAX_RANK];
    int64_t n_rows, per_task;   /* rows = product of output dims before L */
} Pad;

/* A row of at most SHORT_ROW floats is copied and filled inline, 8 floats
 * (then 4) per move through float-element vector types (one ymm move; a
 * 32-byte memcpy became two xmm moves), not by a libc call: a channel pad
 * of facemesh-detection (64x64 pixels, 24 -> 28 channels) is 4096 rows of
 * 24 copied and 4 filled floats, where the calls cost more than the moves. */
#define SHORT_ROW 64
typedef float mv8 __attribute__((vector_size(8 * sizeof(float)), aligned(sizeof(float))));
typedef float mv4 __attribute__((vector_size(4 * sizeof(float)), aligned(sizeof(float))));

static inline __attribute__((always_inline)) void fill(float *d, float v, int64_t n)
{
    if (n <= SHORT_ROW) {
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            *(mv8 *)(d + i) = (mv8){v, v, v, v, v, v, v, v};
        if (i + 4 <= n)
            *(mv4 *)(d + i) = (mv4){v, v, v, v}, i += 4;
        for (; i < n; i++)
            d[i] = v;
    } else if (v == 0.0f && !signbit(v)) {
        memset(d, 0, (size_t)n * sizeof(float));
    } else {
        for (int64_t i = 0; i < n; i++)
            d[i] = v;
    }
}

static inline __attribute__((always_inline)) void copy(float *d, const float *s, int64_t n)
{
    if (n > SHORT_ROW) {
        memcpy(d, s, (size_t)n * sizeof(float));
        return;
    }
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        *(mv8 *)(d + i) = *(const mv8 *)(s + i);
    if (i + 4 <= n)
        *(mv4 *)(d + i) = *(const mv4 *)(s + i), i += 4;
    for (; i < n; i++)
        d[i] = s[i];
}

/* Rows [r0, r1): per line (the rows that share their coordinates over dims
 * [0, L-1)) the outer offset and padding test are found once, then dim L-1
 * steps through the line's rows (per-row divisions took 40% of a channel
 * pad's time). */
static void pad_task(void *ctx, int64_t task, int tid)
{
    (void)tid;
    const Pad *q = ctx;
    const int L = q->L;
    int64_t r0 = task * q->per_task, r1 = r0 + q->per_task;
    r1 = r1 > q->n_rows ? q->n_rows : r1;
    const int64_t orow = q->odims[L] * q->unit, xrow = q->xdims[L] * q->unit;
    const int64_t b = q->before[L] * q->unit, a = orow - b - xrow;
    /* dim L-1 of the line (L == 0: one row, no outer dims) */
    const int64_t ext = L > 0 ? q->odims[L - 1] : 1, bef = L > 0 ? q->before[L - 1] : 0;
    const int64_t xext = L > 0 ? q->xdims[L - 1] : 1, xst = L > 0 ? q->xst[L - 1] : 0;
    for (int64_t r = r0; r < r1;) {
        int64_t j = r % ext, rem = r / ext, off = 0;
        bool outer_pad = false;
        for (int k = L - 2; k >= 0; k--) {
            int64_t i = rem % q->odims[k] - q->before[k];
            rem /= q->odims[k];
            if (i < 0 || i >= q->xdims[k])
                outer_pad = true;
            off += i * q->xst[k];
        }
        int64_t jend = ext - j < r1 - r ? ext : j + (r1 - r);
        for (; j < jend; j++, r++) {
            float *d = q->y + r * orow;
            int64_t i = j - bef;
            if (outer_pad || i < 0 || i >= xext) {
                fill(d, q->cval, orow);
                continue;
            }
            fill(d, q->cval, b);
            copy(d + b, q->x + off + i * xst, xrow);
            fill(d + b + xrow, q->cval, a);
        }
    }
}

tcrt_status tcrt_fast_pad(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    if (!in || !out || !p || n_in < 1 || n_out < 1 || !k_valid(&in[0]) || !k_valid(out) ||
        in[0].dtype != TCRT_F32 || out->dtype != TCRT_F32 || in[0].rank != out->rank || in[0].rank < 1 || in[0].rank > 8 ||
        p->i[TCRT_PAD_MODE] != 0)
        return tcrt_ref_pad(in, n_in, out, n_out, p);
    const tcrt_tensor *x = &in[0];
    int rank = x->rank;
    for (int d = 0; d < rank; d++) {
        int64_t b = p->i[2 * d], a = p->i[2 * d + 1];
        if (b < 0 || a < 0 || x->dims[d] + b + a != out->dims[d])
            return tcrt_ref_pad(in, n_in, out, n_out, p);
    }
    int64_t total = k_count(out);
    if (total == 0)
        return TCRT_OK;
    Pad q = {.x = x->data, .y = out->data, .cval = (float)p->f[0]};
    int L = rank - 1;
    while (L > 0 && p->i[2 * L] == 0 && p->i[2 * L + 1] == 0)
        L--;
    q.L = L;
    q.unit = 1;
    for (int d = L + 1; d < rank; d++)
        q.unit *= x->dims[d];
    k_strides(x, q.xst);
    q.n_rows = 1;
    for (int d = 0; d < rank; d++) {
        q.odims[d] = out->dims[d];
        q.xdims[d] = x->dims[d];
        q.before[d] = p->i[2 * d];
        if (d < L)
            q.n_rows *= out->dims[d];
    }
    int64_t n_tasks = move_tasks(q.n_rows, q.odims[L] * q.unit * (int64_t)sizeof(float), &q.per_task);
    tcrt_parallel_tasks(n_tasks, pad_task, &q);
    return TCRT_OK;
}

/* ---- resize ---- */

#define RS_VL 8
#define RS_COLS 512 /* output columns whose source indices are tabulated at once (stack) */
typedef float vf __attribute__((vector_size(RS_VL * sizeof(float))));

typedef struct Resize {
    const float *x;
    float *y;
    int64_t N, H, W, C, OH, OW;
    bool nearest, align, half;
    double rh, rw;
    int64_t per_task;
} Resize;

static double rs_ratio(int64_t in, int64_t out, bool align)
{
    double ei = (align && out > 1) ? (double)(in - 1) : (double)in;
    double eo = (align && out > 1) ? (double)(out - 1) : (double)out;
    return ei / eo;
}

/* Nearest source index of output index o (ref_misc.c's nearest_src). */
static int64_t rs_nearest(int64_t o, double ratio, int64_t in, bool align, bool half)
{
    double src = half ? ratio * ((double)o + 0.5) : ratio * (double)o;
    int64_t n = (int64_t)(align ? floor(src + 0.5) : floor(src));
    if (n > in - 1)
        n = in - 1;
    if (half && n < 0)
        n = 0;
    return n < 0 ? 0 : n;
}

/* Bilinear source indices lo, hi and fraction of output index o (ref_misc.c). */
static void rs_linear(int64_t o, double ratio, int64_t in, bool half, int64_t *lo, int64_t *hi, double *f)
{
    double s = half ? ratio * ((double)o + 0.5) - 0.5 : ratio * (double)o;
    int64_t i0 = (int64_t)floor(s);
    i0 = i0 < 0 ? 0 : i0;
    *f = s - (double)i0;
    int64_t i1 = (int64_t)ceil(s);
    i1 = i1 > in - 1 ? in - 1 : i1;
    i0 = i0 > in - 1 ? in - 1 : i0;
    i1 = i1 < 0 ? 0 : i1;
    *lo = i0;
    *hi = i1;
}

static inline vf rs_load(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline vf rs_splat(float s)
{
    return (vf){s, s, s, s, s, s, s, s};
}

/* Output columns [c0, c1) of rows [r0, r1): the columns' source offsets
 * (x0, x1: element offsets in a source row) and fractions are tabulated
 * once, then every row interpolates them. */
static void resize_cols(const Resize *q, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    int64_t x0[RS_COLS], x1[RS_COLS];
    float fx[RS_COLS];
    const int64_t C = q->C, cv = C - C % RS_VL;
    for (int64_t ow = c0; ow < c1; ow++) {
        int64_t lo, hi;
        double f = 0;
        if (q->nearest)
            lo = hi = rs_nearest(ow, q->rw, q->W, q->align, q->half);
        else
            rs_linear(ow, q->rw, q->W, q->half, &lo, &hi, &f);
        x0[ow - c0] = lo * C, x1[ow - c0] = hi * C, fx[ow - c0] = (float)f;
    }
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / q->OH, oh = r % q->OH;
        float *yr = q->y + (r * q->OW + c0) * C;
        if (q->nearest) {
            int64_t ih = rs_nearest(oh, q->rh, q->H, q->align, q->half);
            const float *xr = q->x + (n * q->H + ih) * q->W * C;
            for (int64_t i = 0; i < c1 - c0; i++)
                memcpy(yr + i * C, xr + x0[i], (size_t)C * sizeof(float));
            continue;
        }
        int64_t y0, y1;
        double fyd;
        rs_linear(oh, q->rh, q->H, q->half, &y0, &y1, &fyd);
        const float fy = (float)fyd;
        const float *t = q->x + (n * q->H + y0) * q->W * C, *b = q->x + (n * q->H + y1) * q->W * C;
        const vf vfy = rs_splat(fy);
        for (int64_t i = 0; i < c1 - c0; i++) {
            const float *tl = t + x0[i], *tr = t + x1[i], *bl = b + x0[i], *br = b + x1[i];
            float *o = yr + i * C;
            const float f = fx[i];
            const vf vfx = rs_splat(f);
            for (int64_t c = 0; c < cv; c += RS_VL) {
                vf a = rs_load(tl + c), top = a + (rs_load(tr + c) - a) * vfx;
                vf d = rs_load(bl + c), bot = d + (rs_load(br + c) - d) * vfx;
                vf v = top + (bot - top) * vfy;
                memcpy(o + c, &v, sizeof v);
            }
            for (int64_t c = cv; c < C; c++) {
                float top = tl[c] + (tr[c] - tl[c]) * f;
                float bot = bl[c] + (br[c] - bl[c]) * f;
                o[c] = top + (bot - top) * fy;
            }
        }
    }
}

static void resize_task(void *ctx, int64_t task, int tid)
{
    (void)tid;
    const Resize *q = ctx;
    int64_t r0 = task * q->per_task, r1 = r0 + q->per_task;
    r1 = r1 > q->N * q->OH ? q->N * q->OH : r1;
    for (int64_t c0 = 0; c0 < q->OW; c0 += RS_COLS)
        resize_cols(q, r0, r1, c0, q->OW - c0 < RS_COLS ? q->OW : c0 + RS_COLS);
}

tcrt_status tcrt_fast_resize(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                             const tcrt_params *p)
{
    if (!in || !out || !p || n_in < 1 || n_out < 1 || !k_valid(&in[0]) || !k_valid(out) ||
        in[0].dtype != TCRT_F32 || out->dtype != TCRT_F32 || in[0].rank != 4 || out->rank != 4 ||
        (p->i[TCRT_RS_MODE] != 0 && p->i[TCRT_RS_MODE] != 1) || in[0].dims[0] != out->dims[0] ||
        in[0].dims[3] != out->dims[3])
        return tcrt_ref_resize(in, n_in, out, n_out, p);
    const tcrt_tensor *x = &in[0];
    if (k_count(out) == 0)
        return TCRT_OK;
    if (x->dims[1] <= 0 || x->dims[2] <= 0)
        return tcrt_ref_resize(in, n_in, out, n_out, p);
    Resize q = {.x = x->data, .y = out->data, .N = x->dims[0], .H = x->dims[1], .W = x->dims[2],
                .C = x->dims[3], .OH = out->dims[1], .OW = out->dims[2], .nearest = p->i[TCRT_RS_MODE] == 1,
                .align = p->i[TCRT_RS_ALIGN] != 0, .half = p->i[TCRT_RS_HALF] != 0};
    q.rh = rs_ratio(q.H, q.OH, q.align);
    q.rw = rs_ratio(q.W, q.OW, q.align);
    int64_t n_tasks = move_tasks(q.N * q.OH, q.OW * q.C * (int64_t)sizeof(float) * (q.nearest ? 1 : 4),
                                 &q.per_task);
    tcrt_parallel_tasks(n_tasks, resize_task, &q);
    return TCRT_OK;
}

/* ---- transpose ---- */

#define TR_BLOCK 64 /* elements of the input's innermost dim per run */

typedef struct Transpose {
    const float *x;
    float *y;
    int rank;                                   /* after dropping and merging, >= 1 */
    int64_t dims[TCRT_MAX_RANK], st[TCRT_MAX_RANK]; /* output dims, input stride of each */
    int a;                                      /* dim of input stride 1 (blocked), or -1 */
    int64_t ost_a;                              /* output stride of dim a */
    int64_t n_units, per_task, units_per_plane; /* runs of a (blocked) or output rows */
} Transpose;

/* Input and output offsets of unit u: the odometer over the dims other than
 * the innermost (and a, whose run index is u % units_per_plane). */
static void tr_unit_base(const Transpose *q, int64_t u, int64_t *xo, int64_t *yo, int64_t *a0)
{
    int last = q->rank - 1;
    int64_t rest = u, xoff = 0, yoff = 0, ostride = q->dims[last];
    if (q->a >= 0) {
        int64_t run = rest % q->units_per_plane;
        rest /= q->units_per_plane;
        *a0 = run * TR_BLOCK;
    }
    for (int d = last - 1; d >= 0; d--) {
        if (d != q->a) {
            int64_t i = rest % q->dims[d];
            rest /= q->dims[d];
            xoff += i * q->st[d];
            yoff += i * ostride;
        }
        ostride *= q->dims[d];
    }
    *xo = xoff;
    *yo = yoff;
}

/* Output rows [a0, a1) of a plane (dim a), each of the n columns read at
 * stride s; n a literal 3 or 4 at the calls where it is (the column loop
 * unrolls: an RGB image's NCHW -> NHWC ran its 3-trip loop per pixel). */
static inline __attribute__((always_inline)) void
tr_rows_n(const Transpose *q, int64_t xo, int64_t yo, int64_t a0, int64_t a1, int64_t s, const int64_t n)
{
    for (int64_t i = a0; i < a1; i++) {
        const float *x = q->x + xo + i;
        float *y = q->y + yo + i * q->ost_a;
        for (int64_t j = 0; j < n; j++)
            y[j] = x[j * s];
    }
}

/* NCHW -> NHWC of a 3-channel image: output rows [a0, a1) (pixels), 8 at a
 * time as three 8-lane loads (one per channel plane) interleaved by
 * shuffles into three stores (the scalar loop ran MobileNetV2's 224x224x3
 * input at 0.14 ms); the tail as tr_rows_n. */
static void tr_rows_3(const Transpose *q, int64_t xo, int64_t yo, int64_t a0, int64_t a1, int64_t s)
{
    int64_t i = a0;
    if (q->ost_a == 3)
        for (; i + RS_VL <= a1; i += RS_VL) {
            const float *x = q->x + xo + i;
            vf r, g, b;
            memcpy(&r, x, sizeof r);
            memcpy(&g, x + s, sizeof g);
            memcpy(&b, x + 2 * s, sizeof b);
            /* [r0 g0 b0 r1 g1 b1 r2 g2] [b2 r3 g3 b3 r4 g4 b4 r5] [g5 b5 r6 g6 b6 r7 g7 b7] */
            vf t0 = __builtin_shufflevector(r, g, 0, 8, 0, 1, 9, 0, 2, 10);
            vf t1 = __builtin_shufflevector(r, g, 0, 3, 11, 0, 4, 12, 0, 5);
            vf t2 = __builtin_shufflevector(r, g, 13, 0, 6, 14, 0, 7, 15, 0);
            vf o[3] = {__builtin_shufflevector(t0, b, 0, 1, 8, 3, 4, 9, 6, 7),
                       __builtin_shufflevector(t1, b, 10, 1, 2, 11, 4, 5, 12, 7),
                       __builtin_shufflevector(t2, b, 0, 13, 2, 3, 14, 5, 6, 15)};
            memcpy(q->y + yo + i * 3, o, sizeof o);
        }
    tr_rows_n(q, xo, yo, i, a1, s, 3);
}

/* In-register transpose of 8 x 8 (v[i] lane l -> v[l] lane i): three
 * perfect shuffles (vectors i, i + 4 -> 2i, 2i + 1 interleaved), each
 * rotating the 6-bit (vector, lane) address by one bit. */
static inline __attribute__((always_inline)) void tr8x8(vf v[8])
{
#define TR_LO(a, b) __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11)
#define TR_HI(a, b) __builtin_shufflevector(a, b, 4, 12, 5, 13, 6, 14, 7, 15)
#define TR_ROUND(v)                                                                                          \
    {                                                                                                        \
        vf t0 = TR_LO(v[0], v[4]), t1 = TR_HI(v[0], v[4]), t2 = TR_LO(v[1], v[5]), t3 = TR_HI(v[1], v[5]);   \
        vf t4 = TR_LO(v[2], v[6]), t5 = TR_HI(v[2], v[6]), t6 = TR_LO(v[3], v[7]), t7 = TR_HI(v[3], v[7]);   \
        v[0] = t0, v[1] = t1, v[2] = t2, v[3] = t3, v[4] = t4, v[5] = t5, v[6] = t6, v[7] = t7;              \
    }
    TR_ROUND(v)
    TR_ROUND(v)
    TR_ROUND(v)
#undef TR_ROUND
#undef TR_HI
#undef TR_LO
}

/* Output rows [a0, a1) of a plane as tr_rows_n, in 8 x 8 tiles (8 rows of
 * a, 8 columns) through registers: the scalar loop ran a 2-D transpose of
 * 128 x 256 floats (an attention layer's K^T) at 4.6 GB/s; tails as
 * tr_rows_n. */
static void tr_rows_tiled(const Transpose *q, int64_t xo, int64_t yo, int64_t a0, int64_t a1, int64_t s,
                          int64_t n)
{
    const int64_t ost = q->ost_a; /* a local: the stores to y may alias *q */
    int64_t i = a0;
    for (; i + RS_VL <= a1; i += RS_VL) {
        const float *x = q->x + xo + i;
        float *y = q->y + yo + i * ost;
        int64_t j = 0;
        for (; j + RS_VL <= n; j += RS_VL) {
            vf v[RS_VL];
#pragma GCC unroll 8
            for (int k = 0; k < RS_VL; k++) /* column j + k, rows i .. i + 7 */
                memcpy(&v[k], x + (j + k) * s, sizeof(vf));
            tr8x8(v);
#pragma GCC unroll 8
            for (int r = 0; r < RS_VL; r++) /* row i + r, columns j .. j + 7 */
                memcpy(y + r * ost + j, &v[r], sizeof(vf));
        }
        for (int r = 0; r < RS_VL; r++)
            for (int64_t jj = j; jj < n; jj++)
                y[r * ost + jj] = x[r + jj * s];
    }
    tr_rows_n(q, xo, yo, i, a1, s, n);
}

static void tr_task(void *ctx, int64_t task, int tid)
{
    (void)tid;
    const Transpose *q = ctx;
    int last = q->rank - 1;
    int64_t u0 = task * q->per_task, u1 = u0 + q->per_task < q->n_units ? u0 + q->per_task : q->n_units;
    int64_t n = q->dims[last], s = q->st[last];
    for (int64_t u = u0; u < u1; u++) {
        int64_t xo, yo, a0 = 0;
        tr_unit_base(q, u, &xo, &yo, &a0);
        if (q->a < 0) { /* one output row: a strided or contiguous copy */
            const float *x = q->x + xo;
            float *y = q->y + yo;
            if (s == 1)
                memcpy(y, x, (size_t)n * sizeof(float));
            else
                for (int64_t j = 0; j < n; j++)
                    y[j] = x[j * s];
            continue;
        }
        /* TR_BLOCK output rows (dim a) of a plane: each row reads the n
         * columns at stride s, consecutive rows the next floats */
        int64_t a1 = a0 + TR_BLOCK < q->dims[q->a] ? a0 + TR_BLOCK : q->dims[q->a];
        switch (n) {
        case 3: /* NCHW -> NHWC of an RGB image */
            tr_rows_3(q, xo, yo, a0, a1, s);
            break;
        case 4:
            tr_rows_n(q, xo, yo, a0, a1, s, 4);
            break;
        default:
            if (n >= RS_VL)
                tr_rows_tiled(q, xo, yo, a0, a1, s, n);
            else
                tr_rows_n(q, xo, yo, a0, a1, s, n);
        }
    }
}

tcrt_status tcrt_fast_transpose(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                const tcrt_params *p)
{
    if (!in || !out || !p || n_in != 1 || n_out < 1 || !k_valid(&in[0]) || !k_valid(out) ||
        in[0].dtype != TCRT_F32 || out->dtype != TCRT_F32 || in[0].rank != out->rank || in[0].rank < 1 ||
        in[0].rank > TCRT_MAX_RANK || !in[0].data || !out->data)
        return tcrt_ref_transpose(in, n_in, out, n_out, p);
    const tcrt_tensor *x = &in[0];
    int rank = x->rank;
    int64_t xs[TCRT_MAX_RANK];
    k_strides(x, xs);
    unsigned seen = 0;
    Transpose q = {.x = x->data, .y = out->data, .rank = 0, .a = -1};
    for (int d = 0; d < rank; d++) {
        int64_t pd = p->i[TCRT_TR_PERM + d];
        if (pd < 0 || pd >= rank || (seen & (1u << pd)) || out->dims[d] != x->dims[pd])
            return tcrt_ref_transpose(in, n_in, out, n_out, p);
        seen |= 1u << pd;
        if (out->dims[d] == 1)
            continue;
        /* merge with the previous kept dim when contiguous in the input too */
        if (q.rank > 0 && q.st[q.rank - 1] == xs[pd] * out->dims[d]) {
            q.dims[q.rank - 1] *= out->dims[d];
            q.st[q.rank - 1] = xs[pd];
            continue;
        }
        q.dims[q.rank] = out->dims[d];
        q.st[q.rank++] = xs[pd];
    }
    int64_t total = k_count(out);
    if (total == 0)
        return TCRT_OK;
    if (q.rank == 0) { /* a single element */
        q.dims[0] = 1, q.st[0] = 1, q.rank = 1;
    }
    int last = q.rank - 1;
    for (int d = 0; d < last; d++)
        if (q.st[d] == 1)
            q.a = d;
    int64_t rows = total / q.dims[last];
    if (q.a >= 0) {
        q.ost_a = 1;
        for (int d = q.a + 1; d < q.rank; d++)
            q.ost_a *= q.dims[d];
        q.units_per_plane = (q.dims[q.a] + TR_BLOCK - 1) / TR_BLOCK;
        q.n_units = rows / q.dims[q.a] * q.units_per_plane;
        int64_t n_tasks = move_tasks(q.n_units, TR_BLOCK * q.dims[last] * (int64_t)sizeof(float), &q.per_task);
        tcrt_parallel_tasks(n_tasks, tr_task, &q);
        return TCRT_OK;
    }
    q.n_units = rows;
    int64_t n_tasks = move_tasks(q.n_units, q.dims[last] * (int64_t)sizeof(float), &q.per_task);
    tcrt_parallel_tasks(n_tasks, tr_task, &q);
    return TCRT_OK;
}
