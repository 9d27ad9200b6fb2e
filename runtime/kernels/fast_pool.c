/* runtime/kernels/fast_pool.c - fast NHWC max/average pooling and depthwise
 * convolution, float32 (tcrt_kernels.h); everything else goes to the
 * reference kernels (ref_pool.c, ref_conv.c), which define the semantics.
 *
 * Vectors: GCC/Clang vector extensions of NV = 8 floats (one ymm with the
 * default -march=x86-64-v3, two xmm or NEON registers elsewhere), over the
 * channel dimension, which is innermost in NHWC; a channel tail below NV runs
 * the same arithmetic on scalars.  Loads and stores go through memcpy, so no
 * alignment is assumed.
 * Pooling: per output pixel, the window is clipped to the input once (taps in
 *   the padding never count: max ignores them, the average divides by the
 *   in-bounds count, and an empty window gives 0, as the reference); channels
 *   in blocks of 4 vectors, then 1, then the tail as the last vector's worth
 *   (recomputing a few channels; scalars below NV channels or when x and y
 *   overlap).  Max keeps NaN as the reference does (a NaN tap wins and
 *   stays).
 * Depthwise (w [KH,KW,C,M], output channel c*M+m): for M = 1, per output row
 *   and block of NV channels, the output pixels whose taps all lie inside the
 *   input are done four at a time (each weight vector loaded once per tap for
 *   four outputs), the border pixels one at a time with clipped taps; M > 1
 *   accumulates tap by tap into the output row (channel c broadcast to its M
 *   outputs).  y = act(sum + bias + residual), residual (in[3], output
 *   shape) read element by element just before that element is written, so
 *   the output may share the residual's buffer.
 * Threads: output rows (n, oh) are cut into up to 4 x threads ranges handed
 *   out by tcrt_parallel_tasks; a problem below kSerialWork multiply-adds is
 *   one task.  No allocation, no workspace.
 */
#include "fast_conv_int.h"
#include "tcrt_kernels.h"
#include "tcrt_pool.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define NV 8 /* fast_vec_int.h: 8-lane vectors, the build's ISA */
#include "fast_vec_int.h"

#define SERIAL_WORK (1 << 16) /* multiply-adds (or compares) below which one thread runs */

static inline void nv_store(float *p, nvf v)
{
    memcpy(p, &v, sizeof v);
}

/* n_rows cut into tasks (about 4 per thread) whose rows differ by one at
 * most: task t takes rows [t * n_rows / tasks, (t + 1) * n_rows / tasks).
 * Tasks of ceil(n_rows / tasks) rows gave 28 rows as 7 tasks of 4, so 16
 * rows to one of two threads and 12 to the other (measured, depthwise, 2
 * threads, medians of 2000: 28x28x192 0.035 -> 0.027 ms, 14x14x384 0.018 ->
 * 0.014, 14x14x576 0.0245 -> 0.021). */
typedef struct Rows {
    int64_t n_rows, tasks;
} Rows;

static int64_t row_tasks(Rows *r, int64_t n_rows, int64_t work)
{
    int64_t threads = tcrt_get_threads();
    int64_t n = work < SERIAL_WORK || threads <= 1 ? 1 : 4 * threads;
    r->n_rows = n_rows;
    r->tasks = n < n_rows ? n : n_rows;
    return r->tasks;
}

/* Task t's rows [*r0, *r1). */
static inline void task_rows(const Rows *r, int64_t t, int64_t *r0, int64_t *r1)
{
    *r0 = t * r->n_rows / r->tasks, *r1 = (t + 1) * r->n_rows / r->tasks;
}

/* ---- pooling ---- */

typedef struct Pool {
    const float *x;
    float *y;
    int64_t N, H, W, C, OH, OW, kh, kw, sh, sw, pt, pl;
    bool is_max;
    bool disjoint; /* x and y do not overlap (the channel tail may be stored twice) */
    Rows rows;
} Pool;

/* One output pixel: taps rows [h0,h1) x cols [w0,w1) of image row base xb. */
static void pool_pixel(const Pool *q, const float *xb, int64_t h0, int64_t h1, int64_t w0, int64_t w1,
                       float *y)
{
    const int64_t C = q->C, rs = q->W * C;
    int64_t cnt = (h1 - h0) * (w1 - w0);
    if (cnt <= 0) {
        memset(y, 0, (size_t)C * sizeof(float));
        return;
    }
    nvf vinit = nv_splat(q->is_max ? -INFINITY : 0.0f), vinv = nv_splat(1.0f / (float)cnt);
    int64_t c = 0;
    for (; c + 4 * NV <= C; c += 4 * NV) {
        nvf a0 = vinit, a1 = vinit, a2 = vinit, a3 = vinit;
        for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) {
                const float *p = xb + ih * rs + iw * C + c;
                nvf v0 = nv_load(p), v1 = nv_load(p + NV), v2 = nv_load(p + 2 * NV), v3 = nv_load(p + 3 * NV);
                if (q->is_max) {
                    a0 = nv_blend((v0 > a0) | (v0 != v0), v0, a0);
                    a1 = nv_blend((v1 > a1) | (v1 != v1), v1, a1);
                    a2 = nv_blend((v2 > a2) | (v2 != v2), v2, a2);
                    a3 = nv_blend((v3 > a3) | (v3 != v3), v3, a3);
                } else {
                    a0 += v0, a1 += v1, a2 += v2, a3 += v3;
                }
            }
        if (!q->is_max)
            a0 *= vinv, a1 *= vinv, a2 *= vinv, a3 *= vinv;
        nv_store(y + c, a0);
        nv_store(y + c + NV, a1);
        nv_store(y + c + 2 * NV, a2);
        nv_store(y + c + 3 * NV, a3);
    }
    for (; c + NV <= C; c += NV) {
        nvf a = vinit;
        for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) {
                nvf v = nv_load(xb + ih * rs + iw * C + c);
                a = q->is_max ? nv_blend((v > a) | (v != v), v, a) : a + v;
            }
        nv_store(y + c, q->is_max ? a : a * vinv);
    }
    if (c < C && C >= NV && q->disjoint) {
        /* the channel tail as the last NV channels, recomputing a few (the
         * same values stored again): the scalar loop below took the 4 tail
         * channels of facemesh-detection's 64x64x28 max pool to 1.5x the
         * time of its 24 vector channels */
        nvf a = vinit;
        for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) {
                nvf v = nv_load(xb + ih * rs + iw * C + C - NV);
                a = q->is_max ? nv_blend((v > a) | (v != v), v, a) : a + v;
            }
        nv_store(y + C - NV, q->is_max ? a : a * vinv);
        c = C;
    }
    for (; c < C; c++) {
        float a = q->is_max ? -INFINITY : 0.0f;
        for (int64_t ih = h0; ih < h1; ih++)
            for (int64_t iw = w0; iw < w1; iw++) {
                float v = xb[ih * rs + iw * C + c];
                if (!q->is_max)
                    a += v;
                else if (v > a || v != v)
                    a = v;
            }
        y[c] = q->is_max ? a : a / (float)cnt;
    }
}

static void pool_task(void *ctx, int64_t task, int tid)
{
    (void)tid;
    const Pool *q = ctx;
    int64_t r0, r1;
    task_rows(&q->rows, task, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / q->OH, oh = r % q->OH;
        int64_t h0 = oh * q->sh - q->pt, h1 = h0 + q->kh;
        h0 = h0 < 0 ? 0 : h0;
        h1 = h1 > q->H ? q->H : h1;
        const float *xb = q->x + n * q->H * q->W * q->C;
        float *yr = q->y + r * q->OW * q->C;
        for (int64_t ow = 0; ow < q->OW; ow++) {
            int64_t w0 = ow * q->sw - q->pl, w1 = w0 + q->kw;
            w0 = w0 < 0 ? 0 : w0;
            w1 = w1 > q->W ? q->W : w1;
            pool_pixel(q, xb, h0, h1 < h0 ? h0 : h1, w0, w1 < w0 ? w0 : w1, yr + ow * q->C);
        }
    }
}

static tcrt_status fast_pool(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                             const tcrt_params *p, bool is_max)
{
    tcrt_status (*ref)(const tcrt_tensor *, int, tcrt_tensor *, int, const tcrt_params *) =
        is_max ? tcrt_ref_maxpool : tcrt_ref_avgpool;
    if (!in || !out || !p || n_in != 1 || n_out < 1)
        return ref(in, n_in, out, n_out, p);
    const tcrt_tensor *x = &in[0];
    if (x->dtype != TCRT_F32 || out->dtype != TCRT_F32 || x->rank != 4 || out->rank != 4 || !x->data ||
        !out->data)
        return ref(in, n_in, out, n_out, p);
    Pool q = {.x = (const float *)x->data, .y = (float *)out->data, .is_max = is_max};
    q.N = x->dims[0], q.H = x->dims[1], q.W = x->dims[2], q.C = x->dims[3];
    q.OH = out->dims[1], q.OW = out->dims[2];
    q.kh = p->i[TCRT_POOL_KH], q.kw = p->i[TCRT_POOL_KW], q.sh = p->i[TCRT_POOL_SH],
    q.sw = p->i[TCRT_POOL_SW];
    q.pt = p->i[TCRT_POOL_PT], q.pl = p->i[TCRT_POOL_PL];
    if (q.kh < 1 || q.kw < 1 || q.sh < 1 || q.sw < 1 || q.pt < 0 || q.pl < 0 || out->dims[0] != q.N ||
        out->dims[3] != q.C || tcrt_tensor_count(x) < 0 || tcrt_tensor_count(out) < 0)
        return ref(in, n_in, out, n_out, p);
    int64_t n_out_el = tcrt_tensor_count(out);
    if (n_out_el == 0)
        return TCRT_OK;
    q.disjoint = q.y + n_out_el <= q.x || q.x + tcrt_tensor_count(x) <= q.y;
    int64_t n_tasks = row_tasks(&q.rows, q.N * q.OH, n_out_el * q.kh * q.kw);
    tcrt_parallel_tasks(n_tasks, pool_task, &q);
    return TCRT_OK;
}

tcrt_status tcrt_fast_maxpool(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                              const tcrt_params *p)
{
    return fast_pool(in, n_in, out, n_out, p, true);
}

tcrt_status tcrt_fast_avgpool(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                              const tcrt_params *p)
{
    return fast_pool(in, n_in, out, n_out, p, false);
}

/* ---- depthwise convolution ---- */

typedef struct Dw {
    const float *x, *w, *bias, *res; /* bias, res: NULL when absent */
    float *y;
    int64_t N, H, W, C, M, O, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl;
    int64_t act;
    float alpha;
    int64_t ow_in0, ow_in1; /* output columns whose taps all lie inside the input */
    int isa;                /* tcrt_kern_isa(): TCRT_ISA_AVX512 takes the 16-lane kernel */
    Rows rows;
    /* fused expansion (tcrt_dwblock_run): input row ih is row ih % ring_n of
     * ring (W*C floats each; ring_n a power of two), not a row of x; NULL:
     * of x */
    const float *ring;
    int64_t ring_n;
    bool yrow; /* y holds output row oh only (tcrt_dwblock_run's projection) */
} Dw;

/* Input row ih of the image at xn (the ring slot by a mask, not a division
 * per tap). */
static inline const float *dw_xrow(const Dw *d, const float *xn, int64_t ih)
{
    return d->ring ? d->ring + (ih & (d->ring_n - 1)) * d->W * d->C : xn + ih * d->W * d->C;
}

/* The multiplier-1 row kernel (fast_pool_dw.h) for 8 lanes (any target)
 * and, where the build allows AVX-512, for 16 lanes (zmm, chosen at run
 * time; the file is built for x86-64-v3, hence the target attribute). */
#define DWV 8
#define DW_FN(x) x##8
#define DW_ATTR
#include "fast_pool_dw.h"
#undef DWV
#undef DW_FN
#undef DW_ATTR

#if TCRT_ISA_MAX >= TCRT_ISA_AVX512 && (defined(__x86_64__) || defined(__i386__))
#define DW_HAVE_AVX512 1
#define DWV 16
#define DW_FN(x) x##16
#define DW_ATTR __attribute__((target("avx512f")))
#include "fast_pool_dw.h"
#undef DWV
#undef DW_FN
#undef DW_ATTR
#else
#define DW_HAVE_AVX512 0
#endif

/* M == 1, output row (n, oh) whose valid taps are kh in [k0, k1): vectors
 * of 16 channels (AVX-512), then of 8, then the last channels one by one. */
static void dw_row_m1(const Dw *d, int64_t n, int64_t oh, int64_t k0, int64_t k1)
{
    const int64_t C = d->C, KW = d->KW;
    int64_t c = 0;
#if DW_HAVE_AVX512
    if (d->isa >= TCRT_ISA_AVX512) {
        dw_row_m116(d, n, oh, k0, k1, 0, C);
        c = C - C % 16;
    }
#endif
    dw_row_m18(d, n, oh, k0, k1, c, C);
    c = C - C % NV;
    if (c < C && C >= NV && (!d->res || d->res != d->y)) {
        /* the channel tail as the last NV channels, recomputing a few: the
         * same values stored again (not with y in the residual's buffer,
         * which would add it twice); the scalar loop below took the 4
         * tail channels of facemesh-detection's 28- and 36-channel
         * depthwise convs to 2.4x the time of a 24-channel one */
        dw_row_m18(d, n, oh, k0, k1, C - NV, C);
        c = C;
    }
    const float *xn = d->x + n * d->H * d->W * C;
    const int64_t ybase = d->yrow ? 0 : ((n * d->OH + oh) * d->OW) * C;
    for (; c < C; c++)
        for (int64_t ow = 0; ow < d->OW; ow++) {
            float a = d->bias ? d->bias[c] : 0.0f;
            for (int64_t kh = k0; kh < k1; kh++) {
                int64_t ih = oh * d->sh - d->pt + kh * d->dh;
                for (int64_t kw = 0; kw < KW; kw++) {
                    int64_t iw = ow * d->sw - d->pl + kw * d->dw;
                    if (iw >= 0 && iw < d->W)
                        a += dw_xrow(d, xn, ih)[iw * C + c] * d->w[(kh * KW + kw) * C + c];
                }
            }
            int64_t off = ybase + ow * C + c;
            if (d->res)
                a += d->res[off];
            d->y[off] = tcrt_kern_act(a, d->act, d->alpha);
        }
}

/* M > 1: each output pixel accumulated in place in y, tap by tap. */
static void dw_row_mn(const Dw *d, int64_t n, int64_t oh, int64_t k0, int64_t k1)
{
    const int64_t C = d->C, M = d->M, O = d->O, KW = d->KW;
    const float *xn = d->x + n * d->H * d->W * C;
    for (int64_t ow = 0; ow < d->OW; ow++) {
        int64_t off = ((n * d->OH + oh) * d->OW + ow) * O;
        float *y = d->y + off;
        float r[NV];
        for (int64_t o0 = 0; o0 < O; o0 += NV) {
            /* residual first: y may share its buffer */
            int64_t nb = O - o0 < NV ? O - o0 : NV;
            for (int64_t j = 0; j < nb; j++)
                r[j] = (d->bias ? d->bias[o0 + j] : 0.0f) + (d->res ? d->res[off + o0 + j] : 0.0f);
            memcpy(y + o0, r, (size_t)nb * sizeof(float));
        }
        for (int64_t kh = k0; kh < k1; kh++) {
            int64_t ih = oh * d->sh - d->pt + kh * d->dh;
            for (int64_t kw = 0; kw < KW; kw++) {
                int64_t iw = ow * d->sw - d->pl + kw * d->dw;
                if (iw < 0 || iw >= d->W)
                    continue;
                const float *xp = xn + (ih * d->W + iw) * C;
                const float *wp = d->w + (kh * KW + kw) * O;
                for (int64_t c = 0; c < C; c++) {
                    float xv = xp[c];
                    for (int64_t m = 0; m < M; m++)
                        y[c * M + m] += xv * wp[c * M + m];
                }
            }
        }
        int64_t o = 0;
        for (; o + NV <= O; o += NV)
            nv_store(y + o, nv_act(nv_load(y + o), d->act, d->alpha));
        for (; o < O; o++)
            y[o] = tcrt_kern_act(y[o], d->act, d->alpha);
    }
}

static void dw_task(void *ctx, int64_t task, int tid)
{
    (void)tid;
    const Dw *d = ctx;
    int64_t r0, r1;
    task_rows(&d->rows, task, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / d->OH, oh = r % d->OH;
        /* valid kh: 0 <= oh*sh - pt + kh*dh < H */
        int64_t base = oh * d->sh - d->pt, k0 = 0, k1 = d->KH;
        while (k0 < k1 && base + k0 * d->dh < 0)
            k0++;
        while (k1 > k0 && base + (k1 - 1) * d->dh >= d->H)
            k1--;
        if (d->M == 1)
            dw_row_m1(d, n, oh, k0, k1);
        else
            dw_row_mn(d, n, oh, k0, k1);
    }
}

static bool is_f32(const tcrt_tensor *t)
{
    return t->dtype == TCRT_F32 && t->data && tcrt_tensor_count(t) >= 0;
}

tcrt_status tcrt_fast_depthwise_conv2d(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                       const tcrt_params *p)
{
    if (!in || !out || !p || n_in < 2 || n_in > 4 || n_out < 1 || !p->i[TCRT_CONV_DEPTHWISE] ||
        p->i[TCRT_CONV_PACKED])
        return tcrt_ref_conv2d(in, n_in, out, n_out, p);
    const tcrt_tensor *x = &in[0], *w = &in[1];
    bool ok = x->rank == 4 && w->rank == 4 && out->rank == 4 && is_f32(x) && is_f32(w) && is_f32(out);
    for (int k = 2; k < n_in && ok; k++)
        ok = is_f32(&in[k]);
    if (!ok)
        return tcrt_ref_conv2d(in, n_in, out, n_out, p);
    Dw d = {.x = (const float *)x->data, .w = (const float *)w->data, .y = (float *)out->data};
    d.bias = n_in >= 3 ? (const float *)in[2].data : NULL;
    d.res = n_in == 4 ? (const float *)in[3].data : NULL;
    d.N = x->dims[0], d.H = x->dims[1], d.W = x->dims[2], d.C = x->dims[3];
    d.M = w->dims[3], d.O = out->dims[3], d.OH = out->dims[1], d.OW = out->dims[2];
    d.KH = w->dims[0], d.KW = w->dims[1];
    d.sh = p->i[TCRT_CONV_SH], d.sw = p->i[TCRT_CONV_SW], d.dh = p->i[TCRT_CONV_DH],
    d.dw = p->i[TCRT_CONV_DW];
    d.pt = p->i[TCRT_CONV_PT], d.pl = p->i[TCRT_CONV_PL];
    d.act = p->i[TCRT_CONV_ACT], d.alpha = (float)p->f[0];
    ok = d.sh >= 1 && d.sw >= 1 && d.dh >= 1 && d.dw >= 1 && d.pt >= 0 && d.pl >= 0 &&
         p->i[TCRT_CONV_PB] >= 0 && p->i[TCRT_CONV_PR] >= 0 && d.act >= TCRT_ACT_NONE &&
         d.act <= TCRT_ACT_LEAKY && out->dims[0] == d.N && w->dims[2] == d.C && d.M >= 1 &&
         d.O == d.C * d.M && d.KH >= 1 && d.KW >= 1;
    if (ok && n_in >= 3)
        ok = tcrt_tensor_count(&in[2]) == d.O;
    if (ok && n_in == 4) {
        ok = in[3].rank == 4;
        for (int k = 0; k < 4 && ok; k++)
            ok = in[3].dims[k] == out->dims[k];
    }
    if (!ok)
        return tcrt_ref_conv2d(in, n_in, out, n_out, p);
    int64_t n_y = tcrt_tensor_count(out);
    if (n_y == 0 || tcrt_tensor_count(x) == 0)
        return n_y == 0 ? TCRT_OK : tcrt_ref_conv2d(in, n_in, out, n_out, p);
    tcrt_interior_cols(d.W, d.KW, d.sw, d.dw, d.pl, d.OW, &d.ow_in0, &d.ow_in1);
    d.isa = tcrt_kern_isa();
    tcrt_parallel_tasks(row_tasks(&d.rows, d.N * d.OH, n_y * d.KH * d.KW), dw_task, &d);
    return TCRT_OK;
}

/* ---- depthwise convolution with fused 1x1 convs (TCRT_CONV_PACK_DWBLOCK) ---- */

/* Each task does a band of output rows of one image.  With an expansion,
 * per output row it expands the rows of its window's span that the band
 * has not made yet (1x1 packed conv, tcrt_pconv_rows) into a ring of rows
 * (the span (KH-1)*DH+1 rounded up to a power of two,
 * tcrt_dwblock_ring_rows) of W*Ce floats, and the depthwise row kernel
 * reads the ring: each expanded row is made once per band (rows two bands
 * share are made by both) and read from L2.  With a projection, the
 * depthwise row goes to a row buffer (OW*Ce floats) and the projection
 * (tcrt_pconv_rows, with the residual) makes the output row from it.  At
 * most DWB_SLOTS threads take part, one ring and row buffer each (the
 * workspace is planned for that many; the slots are spread over all of it,
 * tcrt_ws_slot_stride); bands: up to DWB_BANDS per thread taking part,
 * handed out dynamically, so that a thread the host slows down takes fewer.
 * With an expansion each band boundary makes the rows two bands' windows
 * share twice (span - stride rows: 1 for a 3x3 stride-2 window, 2 at
 * stride 1), so a band has at least DWB_REDO_PARTS times that many rows of
 * input (the work made twice is at most 1/DWB_REDO_PARTS of a band's), in
 * whole rounds of the threads, and at least one band per thread.  Measured
 * (MobileNetV2 at 2 threads, AVX2 EPYC, host busy at times, --profile
 * medians of 8 interleaved runs of 30): the stride-2 block at 112x112 (16
 * -> 96 -> 24) 0.82 -> 0.71 ms with 4 bands per thread instead of one
 * (faster in 6 of the 8 pairs; the same 0.55 in quiet moments), the whole
 * model 6.37 -> 6.31 ms (within noise); with 4 bands per thread at stride
 * 1 too, the 56x56 stride-1 block ran 5% slower in quiet moments (28% of
 * its expansion made twice), so that one keeps one band per thread. */
enum { DWB_SLOTS = 4, DWB_BANDS = 4, DWB_REDO_PARTS = 8 };

typedef struct DwBlock {
    Dw d;
    const float *x, *we, *be, *wp, *bp,
        *res; /* block input [N,H,W,CI]; expansion, projection; final residual */
    float *y; /* block output [N,OH,OW,CO] */
    int64_t CI, CO, eact, pact;
    float ealpha, palpha;
    bool expand, project;
    float *ws;                         /* per thread tid: ring then row buffer, at ws + tid * stride */
    int64_t ring_floats, slot, stride; /* floats; stride: tcrt_ws_slot_stride */
    int64_t bands, per_band, more_front, more_back; /* band_start */
    bool descend; /* the thread taking bands from the back goes down them (ring_fill) */
    /* per tid: the image and the input rows [lo, hi] its ring holds (lo > hi:
     * none), kept from band to band (ring_fill) */
    struct {
        int64_t n, lo, hi;
    } held[DWB_SLOTS];
} DwBlock;

static int64_t round16f(int64_t n)
{
    return (n + 15) / 16 * 16;
}

int64_t tcrt_dwblock_ring_rows(int64_t kh, int64_t dh)
{
    int64_t span = (kh - 1) * dh + 1, n = 1;
    while (n < span && n < ((int64_t)1 << 40))
        n *= 2;
    return n;
}

/* Fills b from the call (pointers aside from the workspace); false when it
 * is not a fused conv this kernel handles. */
static bool dwblock_geom(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p,
                         DwBlock *b)
{
    memset(b, 0, sizeof *b);
    if (!in || !out || !p || n_in < 3 || n_in > 4 || p->i[TCRT_CONV_PACKED] != TCRT_CONV_PACK_DWBLOCK ||
        !p->i[TCRT_CONV_DEPTHWISE])
        return false;
    const tcrt_tensor *x = &in[0], *w = &in[1];
    bool ok = x->rank == 4 && w->rank == 1 && out->rank == 4 && x->dtype == TCRT_F32 &&
              w->dtype == TCRT_F32 && out->dtype == TCRT_F32;
    for (int k = 2; k < n_in && ok; k++)
        ok = in[k].dtype == TCRT_F32;
    if (!ok)
        return false;
    Dw *d = &b->d;
    int64_t off[TCRT_DWB_PARTS], fuse = p->i[TCRT_CONV_FUSE];
    b->expand = fuse & TCRT_FUSE_EXPAND, b->project = fuse & TCRT_FUSE_PROJECT;
    b->CI = x->dims[3], b->CO = p->i[TCRT_CONV_PCOUT];
    d->N = x->dims[0], d->H = x->dims[1], d->W = x->dims[2], d->C = p->i[TCRT_CONV_COUT];
    d->KH = p->i[TCRT_CONV_KH], d->KW = p->i[TCRT_CONV_KW], d->M = 1, d->O = d->C;
    d->OH = out->dims[1], d->OW = out->dims[2];
    d->sh = p->i[TCRT_CONV_SH], d->sw = p->i[TCRT_CONV_SW], d->dh = p->i[TCRT_CONV_DH],
    d->dw = p->i[TCRT_CONV_DW], d->pt = p->i[TCRT_CONV_PT], d->pl = p->i[TCRT_CONV_PL];
    d->act = p->i[TCRT_CONV_ACT], d->alpha = (float)p->f[0];
    b->eact = p->i[TCRT_CONV_EACT], b->ealpha = (float)p->f[1];
    b->pact = p->i[TCRT_CONV_PACT], b->palpha = (float)p->f[2];
    int64_t cy = b->project ? b->CO : d->C;
    ok = d->C > 0 && d->KH > 0 && d->KW > 0 && b->CI > 0 &&
         tcrt_conv_dwblock_floats(fuse, b->CI, d->C, d->KH, d->KW, b->CO, off) == w->dims[0] &&
         (b->expand || b->CI == d->C) && d->sh >= 1 && d->sw >= 1 && d->dh >= 1 && d->dw >= 1 && d->pt >= 0 &&
         d->pl >= 0 && d->act >= TCRT_ACT_NONE && d->act <= TCRT_ACT_LEAKY && b->eact >= TCRT_ACT_NONE &&
         b->eact <= TCRT_ACT_LEAKY && b->pact >= TCRT_ACT_NONE && b->pact <= TCRT_ACT_LEAKY &&
         out->dims[0] == d->N && out->dims[3] == cy && d->OH > 0 && d->OW > 0 && d->N > 0 && d->H > 0 &&
         d->W > 0 && tcrt_tensor_count(&in[2]) == d->C;
    if (ok && n_in == 4)
        for (int k = 0; k < 4 && ok; k++)
            ok = in[3].rank == 4 && in[3].dims[k] == out->dims[k];
    if (!ok)
        return false;
    const float *wv = (const float *)w->data;
    b->x = (const float *)x->data;
    b->we = wv + off[TCRT_DWB_WE], b->be = wv + off[TCRT_DWB_BE];
    b->wp = wv + off[TCRT_DWB_WP], b->bp = wv + off[TCRT_DWB_BP];
    d->w = wv + off[TCRT_DWB_WD];
    d->bias = (const float *)in[2].data;
    b->res = n_in == 4 ? (const float *)in[3].data : NULL;
    b->y = (float *)out->data;
    /* the depthwise output: the block's (with its residual), or the row buffer */
    d->x = b->x;
    d->y = b->y;
    d->res = b->project ? NULL : b->res;
    d->yrow = b->project;
    d->ring_n = b->expand ? tcrt_dwblock_ring_rows(d->KH, d->dh) : 0;
    b->ring_floats = round16f(d->ring_n * d->W * d->C);
    b->slot = b->ring_floats + (b->project ? round16f(d->OW * d->C) : 0);
    return true;
}

/* Workspace bytes of b: alignment slack and DWB_SLOTS slots. */
static size_t dwblock_ws_bytes(const DwBlock *b)
{
    return b->slot == 0 ? 0 : 64 + (size_t)DWB_SLOTS * (size_t)b->slot * sizeof(float);
}

size_t tcrt_dwblock_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p)
{
    DwBlock b;
    return dwblock_geom(in, n_in, out, p, &b) ? dwblock_ws_bytes(&b) : 0;
}

/* The first output row of band i: bands of per_band rows, one more in the
 * first more_front and the last more_back bands (the remainder spread from
 * both ends: two threads take bands from both ends of the list, tcrt_pool.h,
 * so each meets as many longer bands; 28 rows in 6 bands are 5 5 4 4 5 5,
 * where bands of 5 with a last one of 3 gave one thread 15 rows and the
 * other 13). */
static int64_t band_start(const DwBlock *b, int64_t i)
{
    int64_t back0 = b->bands - b->more_back;
    return i * b->per_band + (i < b->more_front ? i : b->more_front) + (i > back0 ? i - back0 : 0);
}

/* Expands input rows [first, last] of image n into the ring, making only
 * those it does not hold ([*lo, *hi]: the rows it holds, updated): rows above the
 * held ones upward, rows below them downward, so a band that continues the
 * thread's previous one (the next band up for a thread taking tasks from the
 * front, the next one down, its rows in descending order, for a thread
 * taking them from the back: tcrt_pool.h) starts from the rows that band
 * made, and only the band boundary where the two threads meet is made twice
 * (8 bands of MobileNetV2's 112x112 stride-2 block made 7 of its 112
 * expanded rows twice: 6% of the expansion). */
static void ring_fill(const DwBlock *b, float *ring, int64_t n, int64_t first, int64_t last, int64_t *lo,
                      int64_t *hi)
{
    const Dw *d = &b->d;
    const int64_t R = d->ring_n;
    if (*lo > *hi || first > *hi + 1 || last < *lo - 1)
        *lo = first, *hi = first - 1; /* nothing to reuse: made upward from first */
    for (int64_t ih = *hi + 1; ih <= last; ih++)
        tcrt_pconv_rows(b->x + (n * d->H + ih) * d->W * b->CI, d->W, b->CI, b->we, b->be, d->C, (int)b->eact,
                        b->ealpha, NULL, ring + (ih & (R - 1)) * d->W * d->C);
    if (last > *hi) {
        *hi = last;
        *lo = *hi - *lo + 1 > R ? *hi - R + 1 : *lo;
    }
    for (int64_t ih = *lo - 1; ih >= first; ih--)
        tcrt_pconv_rows(b->x + (n * d->H + ih) * d->W * b->CI, d->W, b->CI, b->we, b->be, d->C, (int)b->eact,
                        b->ealpha, NULL, ring + (ih & (R - 1)) * d->W * d->C);
    if (first < *lo) {
        *lo = first;
        *hi = *hi - *lo + 1 > R ? *lo + R - 1 : *hi;
    }
}

static void dwblock_task(void *ctx, int64_t task, int tid)
{
    DwBlock *b = ctx;
    Dw d = b->d;
    float *ring = b->ws + tid * b->stride, *row = ring + b->ring_floats;
    d.ring = b->expand ? ring : NULL;
    if (b->project)
        d.y = row;
    int64_t n = task / b->bands, oh0 = band_start(b, task % b->bands),
            oh1 = band_start(b, task % b->bands + 1);
    if (b->held[tid].n != n) /* another image's rows */
        b->held[tid].n = n, b->held[tid].lo = 1, b->held[tid].hi = 0;
    /* a thread taking tasks from the back goes down its band (ring_fill) */
    const bool down = b->descend && tcrt_pool_descending(tid);
    for (int64_t i = oh0; i < oh1; i++) {
        int64_t oh = down ? oh0 + oh1 - 1 - i : i;
        int64_t base = oh * d.sh - d.pt, k0 = 0, k1 = d.KH;
        while (k0 < k1 && base + k0 * d.dh < 0)
            k0++;
        while (k1 > k0 && base + (k1 - 1) * d.dh >= d.H)
            k1--;
        /* every row of the window's span (a dilated window's gaps too: the
         * next output rows read them) */
        if (b->expand && k1 > k0)
            ring_fill(b, ring, n, base + k0 * d.dh, base + (k1 - 1) * d.dh, &b->held[tid].lo,
                      &b->held[tid].hi);
        dw_row_m1(&d, n, oh, k0, k1);
        if (b->project) {
            int64_t y0 = (n * d.OH + oh) * d.OW * b->CO;
            tcrt_pconv_rows(row, d.OW, d.C, b->wp, b->bp, b->CO, (int)b->pact, b->palpha,
                            b->res ? b->res + y0 : NULL, b->y + y0);
        }
    }
}

tcrt_status tcrt_dwblock_run(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                             const tcrt_params *p)
{
    DwBlock b;
    if (n_out < 1)
        return tcrt_ref_conv2d(in, n_in, out, n_out, p);
    if (n_out < 2 || !dwblock_geom(in, n_in, out, p, &b) || !b.x || !b.d.w || !b.d.bias || !b.y ||
        (n_in == 4 && !b.res) || !out[1].data ||
        (size_t)tcrt_tensor_count(&out[1]) * tcrt_dtype_size(out[1].dtype) < dwblock_ws_bytes(&b))
        return tcrt_ref_conv2d(in, n_in, out, 1, p);
    b.ws = (float *)(((uintptr_t)out[1].data + 63) & ~(uintptr_t)63);
    b.stride = tcrt_ws_slot_stride(&out[1], b.ws, DWB_SLOTS, b.slot);
    b.d.isa = tcrt_kern_isa();
    tcrt_interior_cols(b.d.W, b.d.KW, b.d.sw, b.d.dw, b.d.pl, b.d.OW, &b.d.ow_in0, &b.d.ow_in1);
    int64_t slots = tcrt_get_threads();
    slots = slots < 1 ? 1 : slots > DWB_SLOTS ? DWB_SLOTS : slots;
    b.bands = slots == 1 ? 1 : slots * DWB_BANDS;
    if (b.expand && slots > 1) {
        /* bands of at least DWB_REDO_PARTS x (rows two bands share) / stride
         * output rows, in whole rounds of the threads (file comment) */
        int64_t span = (b.d.KH - 1) * b.d.dh + 1, shared = span > b.d.sh ? span - b.d.sh : 0;
        int64_t rows = (DWB_REDO_PARTS * shared + b.d.sh - 1) / b.d.sh;
        int64_t most = b.d.OH / (rows > 1 ? rows : 1) / slots * slots;
        b.bands = most < slots ? slots : most < b.bands ? most : b.bands;
    }
    b.bands = b.bands > b.d.OH ? b.d.OH : b.bands;
    b.per_band = b.d.OH / b.bands;
    int64_t rem = b.d.OH - b.per_band * b.bands;
    b.more_front = (rem + 1) / 2, b.more_back = rem / 2;
    for (int t = 0; t < DWB_SLOTS; t++)
        b.held[t].n = -1, b.held[t].lo = 1, b.held[t].hi = 0;
    /* only where a thread may take two bands in a row (measured, at 2
     * threads with a band each, the 56x56 stride-1 block of MobileNetV2
     * ran 1% slower with one thread going down) */
    b.descend = b.expand && b.d.N * b.bands > slots;
    tcrt_parallel_tasks_max(b.d.N * b.bands, (int)slots, dwblock_task, &b);
    return TCRT_OK;
}
