/* test_fast_pool.c - Check suite: fast NHWC pooling and depthwise convolution
 * (runtime/kernels/fast_pool.c) against the reference kernels.
 *
 * Shapes: channels 1, 3, 16, 17, 33, 64 (below, at and off the vector
 * width), kernels 1x1, 2x2, 3x3, 7x7, strides 1 and 2, asymmetric pads
 * (pads may exceed the kernel, giving windows with no input tap), random
 * H and W (wide enough for the kernel's four-pixel interior path), batch 1
 * or 2, on 1 and 2 threads; one larger case per kernel so that 2 threads
 * really split the rows.  Depthwise adds dilation 2, multiplier 1 and 2,
 * bias or none, residual, and every activation (leaky alpha 0.1).
 * Oracles: tcrt_ref_maxpool / tcrt_ref_avgpool / tcrt_ref_conv2d; with a
 * residual, the reference conv without activation, then + residual and the
 * activation written out here.  Tolerance: max pooling exact; average and
 * convolution |fast - ref| <= 1e-5 (1e-4 conv) x (1 + |ref|) (the reference
 * accumulates in double).  Also: NaN in a max window gives NaN; float64 goes
 * to the reference (identical result).
 * ISAs: the depthwise cases run once per instruction set the CPU and build
 * have (tcrt_kern_force_isa caps it: AVX-512 takes the 16-lane row kernel,
 * AVX2 and portable the 8-lane one); fast_dw_blocks sweeps output widths 1..40
 * and channels 8..57 of 3x3 stride 1 and 2 (the unrolled kernel), so that
 * every block size (8, 4, 2, 1), both vector widths and the scalar channel
 * tail meet borders.
 */
#include "fast_conv_int.h"
#include "tcrt_kernels.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

static float frand(void)
{
    return (float)(urand() % 2000001) * 1e-6f - 1.0f;
}

static float *rand_buf(int64_t n)
{
    float *b = malloc((size_t)(n ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(b);
    for (int64_t i = 0; i < n; i++)
        b[i] = frand();
    return b;
}

static tcrt_tensor t4(void *data, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return (tcrt_tensor){.data = data, .dtype = TCRT_F32, .rank = 4, .dims = {a, b, c, d}};
}

/* Output size along one axis, or <= 0. */
static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1)
{
    int64_t span = (k - 1) * d + 1;
    return in + p0 + p1 < span ? 0 : (in + p0 + p1 - span) / s + 1;
}

static const int64_t chans[] = {1, 3, 16, 17, 25, 33, 64};
static const int64_t kernels[] = {1, 2, 3, 7};

/* ---- pooling ---- */

typedef struct PoolCase {
    int64_t n, h, w, c, k, s, pt, pb, pl, pr;
} PoolCase;

static void check_pool(const PoolCase *pc, bool is_max, int threads)
{
    int64_t oh = out_dim(pc->h, pc->k, pc->s, 1, pc->pt, pc->pb),
            ow = out_dim(pc->w, pc->k, pc->s, 1, pc->pl, pc->pr);
    if (oh <= 0 || ow <= 0)
        return;
    tcrt_set_threads(threads);
    int64_t nx = pc->n * pc->h * pc->w * pc->c, ny = pc->n * oh * ow * pc->c;
    float *x = rand_buf(nx), *yr = calloc((size_t)ny, 4), *yf = malloc((size_t)ny * 4);
    ck_assert_ptr_nonnull(yr);
    ck_assert_ptr_nonnull(yf);
    for (int64_t i = 0; i < ny; i++)
        yf[i] = 12345.0f; /* every element must be written */
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_POOL_KH] = p.i[TCRT_POOL_KW] = pc->k;
    p.i[TCRT_POOL_SH] = p.i[TCRT_POOL_SW] = pc->s;
    p.i[TCRT_POOL_PT] = pc->pt, p.i[TCRT_POOL_PB] = pc->pb;
    p.i[TCRT_POOL_PL] = pc->pl, p.i[TCRT_POOL_PR] = pc->pr;
    tcrt_tensor in = t4(x, pc->n, pc->h, pc->w, pc->c);
    tcrt_tensor o = t4(yr, pc->n, oh, ow, pc->c);
    ck_assert_int_eq((is_max ? tcrt_ref_maxpool : tcrt_ref_avgpool)(&in, 1, &o, 1, &p), TCRT_OK);
    o.data = yf;
    ck_assert_int_eq((is_max ? tcrt_fast_maxpool : tcrt_fast_avgpool)(&in, 1, &o, 1, &p), TCRT_OK);
    int64_t i = 0; /* first mismatch (one assertion: Check's are slow in a loop) */
    while (i < ny && fabsf(yf[i] - yr[i]) <= (is_max ? 0.0f : 1e-5f * (1 + fabsf(yr[i]))))
        i++;
    if (i < ny)
        ck_assert_msg(false,
                      "%spool n%lld h%lld w%lld c%lld k%lld s%lld pads %lld,%lld,%lld,%lld thr %d [%lld]: "
                      "fast %.8g ref %.8g",
                      is_max ? "max" : "avg", (long long)pc->n, (long long)pc->h, (long long)pc->w,
                      (long long)pc->c, (long long)pc->k, (long long)pc->s, (long long)pc->pt,
                      (long long)pc->pb, (long long)pc->pl, (long long)pc->pr, threads, (long long)i, yf[i],
                      yr[i]);
    free(x);
    free(yr);
    free(yf);
}

START_TEST(fast_pool_random)
{
    for (int threads = 1; threads <= 2; threads++)
        for (size_t ci = 0; ci < sizeof chans / sizeof chans[0]; ci++)
            for (size_t ki = 0; ki < 4; ki++)
                for (int64_t s = 1; s <= 2; s++) {
                    int64_t k = kernels[ki];
                    PoolCase pc = {
                        1 + urand() % 2,   k + urand() % 8, k + 4 + urand() % 12, chans[ci],        k, s,
                        urand() % (k + 1), urand() % k,     urand() % k,          urand() % (k + 1)};
                    check_pool(&pc, true, threads);
                    check_pool(&pc, false, threads);
                }
    tcrt_set_threads(1);
}
END_TEST

START_TEST(fast_pool_edges)
{
    static const PoolCase cases[] = {
        {2, 40, 40, 64, 3, 2, 1, 1, 1, 1}, /* ResNet stem-like, large enough to split */
        {1, 30, 30, 33, 7, 1, 3, 3, 2, 4}, /* large, channel tail */
        {1, 4, 4, 17, 2, 1, 3, 3, 3, 3},   /* pads > kernel: empty windows give 0 */
        {1, 1, 1, 16, 7, 1, 3, 3, 3, 3},   /* a single input pixel */
    };
    for (int threads = 1; threads <= 2; threads++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            check_pool(&cases[i], true, threads);
            check_pool(&cases[i], false, threads);
        }
    tcrt_set_threads(1);
}
END_TEST

START_TEST(fast_pool_nan_and_f64)
{
    /* 1x2x2x9: channel 0 (vector lane) and 8 (the tail, done as the vector
     * of channels 1..8) see a NaN. */
    float x[36];
    for (int i = 0; i < 36; i++)
        x[i] = (float)i;
    x[9 + 0] = NAN;
    x[27 + 8] = NAN;
    float y[9];
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_POOL_KH] = p.i[TCRT_POOL_KW] = 2;
    p.i[TCRT_POOL_SH] = p.i[TCRT_POOL_SW] = 1;
    tcrt_tensor in = t4(x, 1, 2, 2, 9), o = t4(y, 1, 1, 1, 9);
    ck_assert_int_eq(tcrt_fast_maxpool(&in, 1, &o, 1, &p), TCRT_OK);
    ck_assert(isnan(y[0]) && isnan(y[8]));
    for (int c = 1; c < 8; c++)
        ck_assert_float_eq(y[c], (float)(27 + c)); /* max of c, 9+c, 18+c, 27+c */
    ck_assert_int_eq(tcrt_fast_avgpool(&in, 1, &o, 1, &p), TCRT_OK);
    ck_assert(isnan(y[0]) && isnan(y[8]));
    ck_assert_float_eq(y[4], (4 + 13 + 22 + 31) / 4.0f);
    /* 1x2x2x3: fewer channels than a vector, the scalar loop; channel 2 sees a NaN */
    float xs[12] = {1, 2, 3, 4, 5, 6, 7, 8, NAN, 10, 11, 12}, ys[3];
    tcrt_tensor ins = t4(xs, 1, 2, 2, 3), os = t4(ys, 1, 1, 1, 3);
    ck_assert_int_eq(tcrt_fast_maxpool(&ins, 1, &os, 1, &p), TCRT_OK);
    ck_assert(ys[0] == 10.0f && ys[1] == 11.0f && isnan(ys[2]));
    ck_assert_int_eq(tcrt_fast_avgpool(&ins, 1, &os, 1, &p), TCRT_OK);
    ck_assert(ys[0] == 5.5f && ys[1] == 6.5f && isnan(ys[2]));

    double xd[8] = {1, 2, 3, 4, 5, 6, 7, 8}, yd[2], yr[2];
    tcrt_tensor ind = {.data = xd, .dtype = TCRT_F64, .rank = 4, .dims = {1, 2, 2, 2}};
    tcrt_tensor od = {.data = yd, .dtype = TCRT_F64, .rank = 4, .dims = {1, 1, 1, 2}};
    ck_assert_int_eq(tcrt_fast_avgpool(&ind, 1, &od, 1, &p), TCRT_OK);
    od.data = yr;
    ck_assert_int_eq(tcrt_ref_avgpool(&ind, 1, &od, 1, &p), TCRT_OK);
    ck_assert(yd[0] == yr[0] && yd[1] == yr[1] && yd[0] == 4.0 && yd[1] == 5.0);
}
END_TEST

/* ---- depthwise ---- */

typedef struct DwCase {
    int64_t n, h, w, c, m, k, s, d, pt, pb, pl, pr;
    bool bias, res;
    int act;
} DwCase;

static double act_ref(double v, int act)
{
    switch (act) {
    case TCRT_ACT_RELU:
        return v > 0 ? v : 0;
    case TCRT_ACT_RELU6:
        return v < 0 ? 0 : v > 6 ? 6 : v;
    case TCRT_ACT_LEAKY:
        return v < 0 ? 0.1 * v : v;
    default:
        return v;
    }
}

static void check_dw(const DwCase *dc, int threads)
{
    int64_t oh = out_dim(dc->h, dc->k, dc->s, dc->d, dc->pt, dc->pb);
    int64_t ow = out_dim(dc->w, dc->k, dc->s, dc->d, dc->pl, dc->pr);
    if (oh <= 0 || ow <= 0)
        return;
    tcrt_set_threads(threads);
    int64_t o_ch = dc->c * dc->m;
    int64_t nx = dc->n * dc->h * dc->w * dc->c, ny = dc->n * oh * ow * o_ch;
    float *x = rand_buf(nx), *w = rand_buf(dc->k * dc->k * o_ch), *b = rand_buf(o_ch), *r = rand_buf(ny);
    /* scale up so that relu6 clips and leaky sees negatives */
    for (int64_t i = 0; i < nx; i++)
        x[i] *= 4;
    float *yr = calloc((size_t)ny, 4), *yf = malloc((size_t)ny * 4);
    ck_assert_ptr_nonnull(yr);
    ck_assert_ptr_nonnull(yf);
    for (int64_t i = 0; i < ny; i++)
        yf[i] = 12345.0f;
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = dc->s;
    p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = dc->d;
    p.i[TCRT_CONV_PT] = dc->pt, p.i[TCRT_CONV_PB] = dc->pb;
    p.i[TCRT_CONV_PL] = dc->pl, p.i[TCRT_CONV_PR] = dc->pr;
    p.i[TCRT_CONV_DEPTHWISE] = 1;
    p.i[TCRT_CONV_ACT] = dc->res ? TCRT_ACT_NONE : dc->act;
    p.f[0] = 0.1;
    tcrt_tensor in[4] = {t4(x, dc->n, dc->h, dc->w, dc->c),
                         t4(w, dc->k, dc->k, dc->c, dc->m),
                         {.data = b, .dtype = TCRT_F32, .rank = 1, .dims = {o_ch}},
                         t4(r, dc->n, oh, ow, o_ch)};
    int n_in = dc->res ? 4 : dc->bias ? 3 : 2;
    tcrt_tensor o = t4(yr, dc->n, oh, ow, o_ch);
    ck_assert_int_eq(tcrt_ref_conv2d(in, n_in < 3 ? n_in : 3, &o, 1, &p), TCRT_OK);
    if (dc->res)
        for (int64_t i = 0; i < ny; i++)
            yr[i] = (float)act_ref((double)yr[i] + r[i], dc->act);
    p.i[TCRT_CONV_ACT] = dc->act;
    o.data = yf;
    ck_assert_int_eq(tcrt_fast_depthwise_conv2d(in, n_in, &o, 1, &p), TCRT_OK);
    int64_t i = 0;
    while (i < ny && fabsf(yf[i] - yr[i]) <= 1e-4f * (1 + fabsf(yr[i])))
        i++;
    if (i < ny)
        ck_assert_msg(
            false,
            "dw n%lld h%lld w%lld c%lld m%lld k%lld s%lld d%lld pads %lld,%lld,%lld,%lld bias %d res %d "
            "act %d thr %d [%lld]: fast %.8g ref %.8g",
            (long long)dc->n, (long long)dc->h, (long long)dc->w, (long long)dc->c, (long long)dc->m,
            (long long)dc->k, (long long)dc->s, (long long)dc->d, (long long)dc->pt, (long long)dc->pb,
            (long long)dc->pl, (long long)dc->pr, dc->bias, dc->res, dc->act, threads, (long long)i, yf[i],
            yr[i]);
    free(x);
    free(w);
    free(b);
    free(r);
    free(yr);
    free(yf);
}

/* The ISAs this CPU and build can run, best first; returns the count. */
static int isa_list(int *isas)
{
    int n = 0;
    for (int isa = TCRT_ISA_AVX512; isa >= TCRT_ISA_PORTABLE; isa--)
        if (tcrt_kern_isa_supported(isa))
            isas[n++] = isa;
    return n;
}

START_TEST(fast_dw_random)
{
    int i = 0, isas[3], n_isa = isa_list(isas);
    for (int threads = 1; threads <= 2; threads++)
        for (size_t ci = 0; ci < sizeof chans / sizeof chans[0]; ci++)
            for (size_t ki = 0; ki < 4; ki++)
                for (int64_t s = 1; s <= 2; s++)
                    for (int64_t d = 1; d <= 2; d++, i++) {
                        tcrt_kern_force_isa(isas[i % n_isa]);
                        int64_t k = kernels[ki], span = (k - 1) * d + 1;
                        DwCase dc = {1 + urand() % 2,
                                     span + urand() % 6,
                                     span + 4 * s + urand() % 12,
                                     chans[ci],
                                     1 + (i / 3) % 2,
                                     k,
                                     s,
                                     d,
                                     urand() % (k + 1),
                                     urand() % k,
                                     urand() % k,
                                     urand() % (k + 1),
                                     i % 4 != 0,
                                     i % 3 == 0,
                                     i % 4};
                        check_dw(&dc, threads);
                    }
    tcrt_kern_force_isa(-1);
    tcrt_set_threads(1);
}
END_TEST

START_TEST(fast_dw_blocks)
{
    int isas[3], n_isa = isa_list(isas);
    for (int k = 0; k < n_isa; k++) {
        tcrt_kern_force_isa(isas[k]);
        for (int64_t s = 1; s <= 2; s++)
            for (int64_t ow = 1; ow <= 40; ow++) {
                int64_t c = 8 + (ow * 7 + s) % 50, w = (ow - 1) * s + 3 - (ow % 3 == 0 ? 2 : 0);
                /* pads 1 or 0 left, any right; 4 rows (top and bottom rows clip kh) */
                DwCase dc = {1, 4, w, c, 1, 3, s, 1, 1, 1, ow % 3 == 0 ? 1 : 0, ow % 3 == 0 ? 1 : 0,
                             ow % 2 == 0, ow % 5 == 0, (int)(ow % 4)};
                check_dw(&dc, 1);
            }
        /* 3-wide kernels that are not 3x3: 3x1 columns (generic KW = 3 copy) */
        for (int64_t c = 15; c <= 49; c += 17) {
            DwCase dc = {1, 9, 30, c, 1, 3, 1, 2, 2, 2, 2, 2, true, false, TCRT_ACT_RELU6};
            check_dw(&dc, 1);
        }
    }
    tcrt_kern_force_isa(-1);
}
END_TEST

START_TEST(fast_dw_every_act)
{
    int isas[3], n_isa = isa_list(isas);
    for (int k = 0; k < n_isa; k++) {
        tcrt_kern_force_isa(isas[k]);
        for (int act = TCRT_ACT_NONE; act <= TCRT_ACT_LEAKY; act++)
            for (int res = 0; res <= 1; res++)
                for (int64_t m = 1; m <= 2; m++)
                    for (int threads = 1; threads <= 2; threads++) {
                        /* large enough that 2 threads split the rows */
                        DwCase dc = {2, 24, 28, 33, m, 3, 1, 1, 1, 1, 1, 1, true, res != 0, act};
                        check_dw(&dc, threads);
                        DwCase d2 = {1, 20, 20, 64, m, 3, 2, 2, 2, 1, 0, 2, res != 0, res != 0, act};
                        check_dw(&d2, threads);
                    }
    }
    tcrt_kern_force_isa(-1);
    tcrt_set_threads(1);
}
END_TEST

/* The activations on NaN and on values past the clip, hand-derived: a 3x3
 * all-ones kernel (pad 1, no bias) over zeros with one NaN in channel 3,
 * +100 in channel 4 and -100 in channel 5 at pixel (5, 5) of a 12x12x16
 * map, so the outputs whose window holds that pixel (rows and columns 4-6:
 * interior blocks and no border) are NaN, +100 and -100 before the
 * activation, every other output 0.  As tcrt_kern_act: relu gives 0 for
 * NaN (v > 0 fails), relu6 and leaky keep NaN (v < 0 and v > 6 fail);
 * relu6 clips +100 to 6 and -100 to 0, leaky scales -100 to -10. */
START_TEST(fast_dw_act_nan)
{
    enum { H = 12, W = 12, C = 16 };
    static float x[H * W * C], w[9 * C], y[H * W * C];
    memset(x, 0, sizeof x);
    for (int i = 0; i < 9 * C; i++)
        w[i] = 1.0f;
    x[(5 * W + 5) * C + 3] = NAN;
    x[(5 * W + 5) * C + 4] = 100.0f;
    x[(5 * W + 5) * C + 5] = -100.0f;
    int isas[3], n_isa = isa_list(isas);
    for (int k = 0; k < n_isa; k++) {
        tcrt_kern_force_isa(isas[k]);
        for (int act = TCRT_ACT_NONE; act <= TCRT_ACT_LEAKY; act++) {
            tcrt_params p = {{0}, {0}};
            p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
            p.i[TCRT_CONV_PT] = p.i[TCRT_CONV_PB] = p.i[TCRT_CONV_PL] = p.i[TCRT_CONV_PR] = 1;
            p.i[TCRT_CONV_DEPTHWISE] = 1;
            p.i[TCRT_CONV_ACT] = act;
            p.f[0] = 0.1;
            tcrt_tensor in[2] = {t4(x, 1, H, W, C), t4(w, 3, 3, C, 1)};
            tcrt_tensor o = t4(y, 1, H, W, C);
            ck_assert_int_eq(tcrt_fast_depthwise_conv2d(in, 2, &o, 1, &p), TCRT_OK);
            float pos = act == TCRT_ACT_RELU6 ? 6.0f : 100.0f;
            float neg = act == TCRT_ACT_NONE ? -100.0f : act == TCRT_ACT_LEAKY ? -10.0f : 0.0f;
            bool nan_kept = act != TCRT_ACT_RELU;
            for (int oh = 0; oh < H; oh++)
                for (int ow = 0; ow < W; ow++)
                    for (int c = 0; c < C; c++) {
                        bool hit = oh >= 4 && oh <= 6 && ow >= 4 && ow <= 6;
                        float v = y[(oh * W + ow) * C + c];
                        if (hit && c == 3 && nan_kept)
                            ck_assert_msg(isnan(v), "isa %d act %d (%d,%d): %g, want NaN", isas[k], act, oh,
                                          ow, v);
                        else
                            ck_assert_msg(v == (!hit     ? 0.0f
                                                : c == 4 ? pos
                                                : c == 5 ? neg
                                                         : 0.0f),
                                          "isa %d act %d (%d,%d) channel %d: %g", isas[k], act, oh, ow, c, v);
                    }
        }
    }
    tcrt_kern_force_isa(-1);
}
END_TEST

/* Few rows per task at 2 and 3 threads (7x7, 14x14, 28x28 maps: tasks of
 * rows differing by one at most); channel counts with no tail, an 8-lane
 * tail and a 6-lane one; strides 1 and 2. */
START_TEST(fast_dw_few_rows)
{
    static const int64_t sizes[] = {7, 14, 28};
    static const int64_t cs[] = {960, 200, 150, 44}; /* tails: none, 8 lanes, 6 lanes; 44: serial at 7x7 */
    int isas[3], n_isa = isa_list(isas), i = 0;
    for (int k = 0; k < n_isa; k++) {
        tcrt_kern_force_isa(isas[k]);
        for (int threads = 2; threads <= 3; threads++)
            for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
                for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++)
                    for (int64_t s = 1; s <= 2; s++, i++) {
                        int64_t h = sizes[si] * s;
                        DwCase dc = {1, h, h, cs[ci], 1, 3, s, 1, 1, 1, 1, 1, true, i % 3 == 0, i % 4};
                        check_dw(&dc, threads);
                    }
    }
    tcrt_kern_force_isa(-1);
    tcrt_set_threads(1);
}
END_TEST

/* Residual sharing the output buffer (the planner may reuse it in place). */
START_TEST(fast_dw_residual_in_place)
{
    /* 17 channels: one task; 150 at 7x7 on 2 threads: a task per row */
    for (int64_t m = 1; m <= 3; m++) {
        int64_t c = m == 3 ? 150 : 17, o_ch = m == 3 ? c : c * m, h = m == 3 ? 7 : 9, w = m == 3 ? 7 : 11,
                n_y = h * w * o_ch;
        tcrt_set_threads(m == 3 ? 2 : 1);
        float *x = rand_buf(h * w * c), *wt = rand_buf(9 * o_ch), *b = rand_buf(o_ch), *r = rand_buf(n_y);
        float *buf = malloc((size_t)n_y * 4), *yr = malloc((size_t)n_y * 4);
        memcpy(buf, r, (size_t)n_y * 4);
        tcrt_params p = {{0}, {0}};
        p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
        p.i[TCRT_CONV_PT] = p.i[TCRT_CONV_PB] = p.i[TCRT_CONV_PL] = p.i[TCRT_CONV_PR] = 1;
        p.i[TCRT_CONV_DEPTHWISE] = 1;
        tcrt_tensor in[4] = {t4(x, 1, h, w, c),
                             t4(wt, 3, 3, c, o_ch / c),
                             {.data = b, .dtype = TCRT_F32, .rank = 1, .dims = {o_ch}},
                             t4(buf, 1, h, w, o_ch)};
        tcrt_tensor o = t4(yr, 1, h, w, o_ch);
        ck_assert_int_eq(tcrt_ref_conv2d(in, 3, &o, 1, &p), TCRT_OK);
        o.data = buf;
        ck_assert_int_eq(tcrt_fast_depthwise_conv2d(in, 4, &o, 1, &p), TCRT_OK);
        int64_t i = 0;
        while (i < n_y && fabsf(buf[i] - (yr[i] + r[i])) <= 1e-4f * (1 + fabsf(yr[i] + r[i])))
            i++;
        ck_assert_msg(i == n_y, "case %lld (c %lld) [%lld]", (long long)m, (long long)c, (long long)i);
        free(x);
        free(wt);
        free(b);
        free(r);
        free(buf);
        free(yr);
    }
    tcrt_set_threads(1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_fast_pool");
    TCase *tc = tcase_create("fast_pool");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fast_pool_random);
    tcase_add_test(tc, fast_pool_edges);
    tcase_add_test(tc, fast_dw_few_rows);
    tcase_add_test(tc, fast_pool_nan_and_f64);
    tcase_add_test(tc, fast_dw_random);
    tcase_add_test(tc, fast_dw_blocks);
    tcase_add_test(tc, fast_dw_every_act);
    tcase_add_test(tc, fast_dw_act_nan);
    tcase_add_test(tc, fast_dw_residual_in_place);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
