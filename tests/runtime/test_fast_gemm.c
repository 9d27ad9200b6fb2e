/* test_fast_gemm.c - Check suite: runtime/kernels/fast_gemm.c (the portable
 * C matmul / conv2d that --emit c ships instead of fast_eigen.cc) against
 * the reference kernels.
 *
 * fast_gemm.c is compiled with -DTCRT_FAST_GEMM_RENAME (runtime/meson.build),
 * so its entry points are tcrt_cgemm_* here and libtcrt's Eigen versions
 * stay linked beside it.  Random inputs in [-1, 1] from a fixed-seed
 * generator; every case runs tcrt_ref_matmul / tcrt_ref_conv2d and the C
 * kernel on the same tensors and requires |fast - ref| <= 1e-4 * (1 + |ref|).
 * The packed SIMD GEMM of fast_conv.c is switched off (portable ISA, as in
 * the --emit c build) so the C GEMM itself runs; one pass also runs with
 * the CPU's ISA.  Every case checks that the workspace size equals the
 * Eigen version's (the compiler's memory planner sizes it with that one).
 * Matmul: odd sizes (edge panels in both directions), all four transpose
 * combinations, batch broadcast, bias + relu/relu6/leaky, GEMV in both
 * forms, K/N/M cache blocking, K = 0, empty, random shapes, 1 and 2
 * threads, the missing-workspace fallback, bad shapes.  Conv: stride,
 * dilation, SAME (asymmetric) padding, 1x1 (matmul path), im2col over
 * several row blocks, depthwise (delegated to fast_pool.c), a residual
 * input, random shapes.
 */
#include "fast_conv_int.h"
#include "tcrt_kernels.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ws_alloc.h"

tcrt_status tcrt_cgemm_matmul(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
size_t tcrt_cgemm_matmul_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p);
tcrt_status tcrt_cgemm_conv2d(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p);
size_t tcrt_cgemm_conv2d_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p);

static uint64_t rng = 0x9e3779b9;

static float frand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* Integer in [lo, hi]. */
static int64_t irand(int64_t lo, int64_t hi)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (int64_t)((rng >> 33) % (uint64_t)(hi - lo + 1));
}

static float *rand_buf(int64_t n)
{
    float *b = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        b[i] = frand();
    return b;
}

static void compare(const float *fast, const float *ref, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(fast[i] - ref[i]) <= 1e-4f * (1 + fabsf(ref[i])), "%s [%lld]: fast %.7g ref %.7g",
                      what, (long long)i, fast[i], ref[i]);
}

/* ---- matmul ---- */

typedef struct MMCase {
    int ra, rb;
    int64_t ad[4], bd[4]; /* batch dims of a and b (right-aligned) */
    int64_t m, k, n;
    bool ta, tb, bias;
    int act;
} MMCase;

static void run_mm(const MMCase *mc)
{
    tcrt_tensor a = {.dtype = TCRT_F32, .rank = mc->ra}, b = {.dtype = TCRT_F32, .rank = mc->rb};
    int nb_a = mc->ra - 2, nb_b = mc->rb - 2, ro = mc->ra > mc->rb ? mc->ra : mc->rb;
    for (int d = 0; d < nb_a; d++)
        a.dims[d] = mc->ad[d];
    for (int d = 0; d < nb_b; d++)
        b.dims[d] = mc->bd[d];
    a.dims[nb_a] = mc->ta ? mc->k : mc->m;
    a.dims[nb_a + 1] = mc->ta ? mc->m : mc->k;
    b.dims[nb_b] = mc->tb ? mc->n : mc->k;
    b.dims[nb_b + 1] = mc->tb ? mc->k : mc->n;
    tcrt_tensor o = {.dtype = TCRT_F32, .rank = ro};
    for (int d = 0; d < ro - 2; d++) {
        int da = d - (ro - mc->ra), db = d - (ro - mc->rb);
        int64_t x = da >= 0 ? a.dims[da] : 1, y = db >= 0 ? b.dims[db] : 1;
        o.dims[d] = x > y ? x : y;
    }
    o.dims[ro - 2] = mc->m;
    o.dims[ro - 1] = mc->n;
    a.data = rand_buf(tcrt_tensor_count(&a));
    b.data = rand_buf(tcrt_tensor_count(&b));
    float *bias = rand_buf(mc->n);
    int64_t ny = tcrt_tensor_count(&o);
    float *yr = calloc((size_t)(ny ? ny : 1), 4), *yf = calloc((size_t)(ny ? ny : 1), 4);
    tcrt_tensor in[3] = {a, b, {.data = bias, .dtype = TCRT_F32, .rank = 1, .dims = {mc->n}}};
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_MM_TA] = mc->ta;
    p.i[TCRT_MM_TB] = mc->tb;
    p.i[TCRT_MM_ACT] = mc->act;
    p.f[0] = 0.1;
    int n_in = mc->bias ? 3 : 2;
    o.data = yr;
    ck_assert_int_eq(tcrt_ref_matmul(in, n_in, &o, 1, &p), TCRT_OK);
    o.data = yf;
    size_t ws = tcrt_cgemm_matmul_workspace(in, n_in, &o, &p);
    ck_assert_uint_eq(ws, tcrt_fast_matmul_workspace(in, n_in, &o, &p)); /* the planner's size */
    if ((mc->m == 1 || mc->n == 1) && ro == 2)
        ck_assert_uint_eq(ws, 0); /* GEMV (batched rows of one may fold into a GEMM) */
    void *wsb = ws_alloc(ws);
    tcrt_tensor outs[2] = {o, {.data = wsb, .dtype = TCRT_U8, .rank = 1, .dims = {(int64_t)ws}}};
    ck_assert_int_eq(tcrt_cgemm_matmul(in, n_in, outs, 2, &p), TCRT_OK);
    compare(yf, yr, ny, "matmul");
    /* without the workspace: the reference (same result) */
    memset(yf, 0, (size_t)ny * 4);
    ck_assert_int_eq(tcrt_cgemm_matmul(in, n_in, &o, 1, &p), TCRT_OK);
    compare(yf, yr, ny, "matmul (no workspace)");
    free(wsb);
    free(a.data);
    free(b.data);
    free(bias);
    free(yr);
    free(yf);
}

static const MMCase mm_cases[] = {
    {2, 2, {0}, {0}, 5, 7, 3, false, false, false, TCRT_ACT_NONE},
    {2, 2, {0}, {0}, 6, 16, 16, false, false, false, TCRT_ACT_NONE},      /* one full 6x16 tile */
    {2, 2, {0}, {0}, 13, 37, 35, false, false, true, TCRT_ACT_RELU},      /* edge rows and columns */
    {2, 2, {0}, {0}, 64, 100, 48, true, false, true, TCRT_ACT_RELU6},     /* A^T */
    {2, 2, {0}, {0}, 33, 17, 65, false, true, true, TCRT_ACT_LEAKY},      /* B^T */
    {2, 2, {0}, {0}, 31, 29, 47, true, true, false, TCRT_ACT_RELU},       /* A^T B^T */
    {3, 3, {4}, {4}, 6, 9, 5, true, true, true, TCRT_ACT_RELU6},
    {3, 2, {3}, {0}, 6, 9, 5, false, false, true, TCRT_ACT_LEAKY},        /* b broadcast (folded rows) */
    {3, 2, {3}, {0}, 7, 9, 18, true, false, true, TCRT_ACT_NONE},         /* b broadcast, A^T */
    {2, 3, {0}, {3}, 7, 9, 18, false, false, true, TCRT_ACT_RELU},        /* a broadcast */
    {4, 3, {2, 1}, {3}, 4, 5, 6, false, true, false, TCRT_ACT_NONE},      /* [2,1] x [3] -> [2,3] */
    {3, 4, {1}, {2, 3}, 4, 5, 6, true, false, true, TCRT_ACT_RELU6},
    {2, 2, {0}, {0}, 1, 256, 1000, false, false, true, TCRT_ACT_NONE},    /* GEMV, axpy form */
    {2, 2, {0}, {0}, 1, 300, 70, true, true, true, TCRT_ACT_RELU},        /* GEMV, dot form */
    {2, 2, {0}, {0}, 1, 37, 29, false, false, true, TCRT_ACT_RELU},       /* axpy: K % 4, N % 8 tails */
    {2, 2, {0}, {0}, 1, 19, 29, false, true, false, TCRT_ACT_LEAKY},      /* dot: K % 16 tail */
    {2, 2, {0}, {0}, 1, 7, 5, true, true, true, TCRT_ACT_RELU6},          /* dot: K < 16 */
    {2, 2, {0}, {0}, 90, 300, 1, true, false, true, TCRT_ACT_RELU6},      /* N == 1, axpy form */
    {2, 2, {0}, {0}, 90, 301, 1, false, false, false, TCRT_ACT_LEAKY},    /* N == 1, dot form */
    {3, 2, {4}, {0}, 1, 37, 21, false, true, true, TCRT_ACT_NONE},        /* rows of 1: one GEMM */
    {3, 2, {4}, {0}, 37, 21, 1, true, false, true, TCRT_ACT_NONE},        /* batched GEMV (A^T) */
    {2, 2, {0}, {0}, 300, 600, 700, false, false, true, TCRT_ACT_NONE},   /* K and N blocked */
    {2, 2, {0}, {0}, 700, 300, 40, true, false, true, TCRT_ACT_RELU},     /* M blocked, A^T */
    {2, 2, {0}, {0}, 50, 2000, 30, false, true, false, TCRT_ACT_NONE},    /* many K blocks, B^T */
    {3, 2, {5}, {0}, 40, 50, 30, false, true, true, TCRT_ACT_RELU},       /* batch >= threads */
    {3, 3, {5}, {5}, 40, 50, 30, true, false, true, TCRT_ACT_RELU6},      /* batch, both operands */
    {3, 3, {4}, {4}, 128, 64, 128, false, false, false, TCRT_ACT_NONE},   /* attention-sized entries */
    {3, 3, {1}, {7}, 13, 40, 70, false, true, true, TCRT_ACT_RELU6},      /* a broadcast, 7 entries */
    {2, 2, {0}, {0}, 0, 5, 3, false, false, true, TCRT_ACT_NONE},         /* empty */
    {2, 2, {0}, {0}, 4, 0, 3, false, false, true, TCRT_ACT_RELU6},        /* K = 0: bias */
};

START_TEST(gemm_matmul_cases)
{
    int prev = tcrt_kern_force_isa(TCRT_ISA_PORTABLE);
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        for (size_t i = 0; i < sizeof mm_cases / sizeof mm_cases[0]; i++)
            run_mm(&mm_cases[i]);
    }
    /* the CPU's ISA: non-transposed A may take fast_conv.c's packed GEMM (at
     * 2 threads a batch of small entries one per thread: tcrt_kmm_run_batch) */
    tcrt_kern_force_isa(prev);
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        for (size_t i = 0; i < sizeof mm_cases / sizeof mm_cases[0]; i++)
            run_mm(&mm_cases[i]);
    }
    tcrt_set_threads(1);
}
END_TEST

START_TEST(gemm_matmul_random)
{
    int prev = tcrt_kern_force_isa(TCRT_ISA_PORTABLE);
    for (int it = 0; it < 60; it++) {
        tcrt_set_threads(it % 2 ? 2 : 1);
        MMCase mc = {2, 2, {0}, {0}, 0, 0, 0, false, false, false, TCRT_ACT_NONE};
        mc.m = irand(1, 70), mc.k = irand(1, 90), mc.n = irand(1, 70);
        mc.ta = irand(0, 1), mc.tb = irand(0, 1), mc.bias = irand(0, 1), mc.act = (int)irand(0, 3);
        if (it % 3 == 0) { /* batched; each operand's batch dim is the output's or 1 */
            mc.ra = (int)irand(2, 4), mc.rb = (int)irand(2, 4);
            int ro = mc.ra > mc.rb ? mc.ra : mc.rb;
            for (int d = 0; d < ro - 2; d++) {
                int64_t full = irand(1, 3);
                int da = d - (ro - mc.ra), db = d - (ro - mc.rb);
                if (da >= 0)
                    mc.ad[da] = irand(0, 1) ? full : 1;
                if (db >= 0)
                    mc.bd[db] = irand(0, 1) ? full : 1;
            }
        }
        run_mm(&mc);
    }
    tcrt_set_threads(1);
    tcrt_kern_force_isa(prev);
}
END_TEST

START_TEST(gemm_matmul_errors)
{
    /* int32 goes through the reference: [[1,2],[3,4]] @ [[5],[6]] = [17, 39] */
    int32_t a[4] = {1, 2, 3, 4}, b[2] = {5, 6}, y[2];
    tcrt_tensor in[2] = {{.data = a, .dtype = TCRT_I32, .rank = 2, .dims = {2, 2}},
                         {.data = b, .dtype = TCRT_I32, .rank = 2, .dims = {2, 1}}};
    tcrt_tensor o = {.data = y, .dtype = TCRT_I32, .rank = 2, .dims = {2, 1}};
    tcrt_params p = {{0}, {0}};
    ck_assert_int_eq(tcrt_cgemm_matmul(in, 2, &o, 1, &p), TCRT_OK);
    ck_assert_int_eq(y[0], 17);
    ck_assert_int_eq(y[1], 39);
    /* shape mismatch is an error, not a crash */
    in[1].dims[0] = 3;
    ck_assert_int_eq(tcrt_cgemm_matmul(in, 2, &o, 1, &p), TCRT_ERR_RUNTIME);
    float fa[4] = {0}, fb[3] = {0}, fy[2];
    tcrt_tensor fin[2] = {{.data = fa, .dtype = TCRT_F32, .rank = 2, .dims = {2, 2}},
                          {.data = fb, .dtype = TCRT_F32, .rank = 2, .dims = {3, 1}}};
    tcrt_tensor fo = {.data = fy, .dtype = TCRT_F32, .rank = 2, .dims = {2, 1}};
    ck_assert_int_eq(tcrt_cgemm_matmul(fin, 2, &fo, 1, &p), TCRT_ERR_RUNTIME);
    ck_assert_uint_eq(tcrt_cgemm_matmul_workspace(fin, 2, &fo, &p), 0);
    /* hand-derived 2x2 f32: [[1,2],[3,4]] @ [[5,6],[7,8]] + [1,-100], relu */
    float ha[4] = {1, 2, 3, 4}, hb[4] = {5, 6, 7, 8}, hbias[2] = {1, -100}, hy[4];
    tcrt_tensor hin[3] = {{.data = ha, .dtype = TCRT_F32, .rank = 2, .dims = {2, 2}},
                          {.data = hb, .dtype = TCRT_F32, .rank = 2, .dims = {2, 2}},
                          {.data = hbias, .dtype = TCRT_F32, .rank = 1, .dims = {2}}};
    tcrt_tensor ho[2] = {{.data = hy, .dtype = TCRT_F32, .rank = 2, .dims = {2, 2}}, {.dtype = TCRT_U8, .rank = 1}};
    p.i[TCRT_MM_ACT] = TCRT_ACT_RELU;
    size_t ws = tcrt_cgemm_matmul_workspace(hin, 3, &ho[0], &p);
    void *wsb = ws_alloc(ws);
    ho[1].data = wsb, ho[1].dims[0] = (int64_t)ws;
    ck_assert_int_eq(tcrt_cgemm_matmul(hin, 3, ho, 2, &p), TCRT_OK);
    ck_assert_float_eq(hy[0], 20); /* 1*5 + 2*7 + 1 */
    ck_assert_float_eq(hy[1], 0);  /* 1*6 + 2*8 - 100 -> relu */
    ck_assert_float_eq(hy[2], 44); /* 3*5 + 4*7 + 1 */
    ck_assert_float_eq(hy[3], 0);  /* 3*6 + 4*8 - 100 -> relu */
    free(wsb);
}
END_TEST

/* ---- conv ---- */

/* TF SAME padding along one axis: returns out size, sets before/after. */
static int64_t same_pad(int64_t in, int64_t k, int64_t s, int64_t d, int64_t *before, int64_t *after)
{
    int64_t out = (in + s - 1) / s;
    int64_t eff = (k - 1) * d + 1;
    int64_t total = (out - 1) * s + eff - in;
    if (total < 0)
        total = 0;
    *before = total / 2;
    *after = total - *before;
    return out;
}

typedef struct ConvCase {
    int64_t n, h, w, c, kh, kw, m; /* m: out channels, or multiplier when depthwise */
    int64_t s, d;
    bool same, depthwise, bias, residual;
    int act;
} ConvCase;

static void run_conv(const ConvCase *cc, bool give_workspace)
{
    int64_t pt = 0, pb = 0, pl = 0, pr = 0, oh, ow;
    if (cc->same) {
        oh = same_pad(cc->h, cc->kh, cc->s, cc->d, &pt, &pb);
        ow = same_pad(cc->w, cc->kw, cc->s, cc->d, &pl, &pr);
    } else {
        oh = (cc->h - ((cc->kh - 1) * cc->d + 1)) / cc->s + 1;
        ow = (cc->w - ((cc->kw - 1) * cc->d + 1)) / cc->s + 1;
    }
    int64_t o = cc->depthwise ? cc->c * cc->m : cc->m;
    int64_t ny = cc->n * oh * ow * o;
    float *x = rand_buf(cc->n * cc->h * cc->w * cc->c);
    float *w = rand_buf(cc->kh * cc->kw * cc->c * cc->m);
    float *b = rand_buf(o), *res = rand_buf(ny);
    float *yr = calloc((size_t)ny, sizeof(float)), *yf = calloc((size_t)ny, sizeof(float));
    tcrt_tensor in[4] = {
        {.data = x, .dtype = TCRT_F32, .rank = 4, .dims = {cc->n, cc->h, cc->w, cc->c}},
        {.data = w, .dtype = TCRT_F32, .rank = 4, .dims = {cc->kh, cc->kw, cc->c, cc->m}},
        {.data = b, .dtype = TCRT_F32, .rank = 1, .dims = {o}},
        {.data = res, .dtype = TCRT_F32, .rank = 4, .dims = {cc->n, oh, ow, o}},
    };
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = cc->s;
    p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = cc->d;
    p.i[TCRT_CONV_PT] = pt;
    p.i[TCRT_CONV_PB] = pb;
    p.i[TCRT_CONV_PL] = pl;
    p.i[TCRT_CONV_PR] = pr;
    p.i[TCRT_CONV_DEPTHWISE] = cc->depthwise;
    p.i[TCRT_CONV_ACT] = cc->act;
    p.f[0] = 0.2;
    int n_in = cc->residual ? 4 : cc->bias ? 3 : 2;
    tcrt_tensor outr = {.data = yr, .dtype = TCRT_F32, .rank = 4, .dims = {cc->n, oh, ow, o}};
    ck_assert_int_eq(tcrt_ref_conv2d(in, n_in, &outr, 1, &p), TCRT_OK);
    tcrt_tensor outf[2] = {outr, {.dtype = TCRT_U8, .rank = 1}};
    outf[0].data = yf;
    size_t ws = tcrt_cgemm_conv2d_workspace(in, n_in, &outf[0], &p);
    ck_assert_uint_eq(ws, tcrt_fast_conv2d_workspace(in, n_in, &outf[0], &p)); /* the planner's size */
    if (cc->depthwise)
        ck_assert_uint_eq(ws, 0);
    void *wsb = give_workspace ? ws_alloc(ws) : NULL;
    outf[1].data = wsb;
    outf[1].dims[0] = give_workspace ? (int64_t)ws : 0;
    ck_assert_int_eq(tcrt_cgemm_conv2d(in, n_in, outf, give_workspace ? 2 : 1, &p), TCRT_OK);
    compare(yf, yr, ny, "conv2d");
    free(wsb);
    free(x);
    free(w);
    free(b);
    free(res);
    free(yr);
    free(yf);
}

START_TEST(gemm_conv_cases)
{
    static const ConvCase cases[] = {
        /* n  h   w  c  kh kw m  s  d  same  dw    bias  res    act */
        {1, 7, 7, 3, 3, 3, 8, 1, 1, false, false, false, false, TCRT_ACT_NONE},
        {2, 9, 8, 4, 3, 3, 5, 2, 1, true, false, true, false, TCRT_ACT_RELU},     /* stride 2 SAME */
        {1, 10, 11, 3, 3, 2, 6, 1, 2, true, false, true, false, TCRT_ACT_RELU6},  /* dilation 2 */
        {1, 8, 8, 6, 1, 1, 7, 1, 1, false, false, true, false, TCRT_ACT_LEAKY},   /* 1x1: matmul */
        {2, 8, 8, 20, 1, 1, 37, 1, 1, false, false, true, true, TCRT_ACT_RELU},   /* 1x1 + residual */
        {1, 8, 8, 6, 1, 1, 7, 2, 1, false, false, false, false, TCRT_ACT_NONE},   /* 1x1 stride 2 */
        {1, 49, 10, 1, 10, 4, 64, 2, 1, true, false, true, false, TCRT_ACT_RELU}, /* KWS first conv */
        {2, 9, 9, 5, 3, 3, 1, 1, 1, true, true, true, false, TCRT_ACT_RELU6},     /* depthwise m=1 */
        {1, 8, 7, 3, 3, 3, 2, 2, 1, true, true, false, false, TCRT_ACT_NONE},     /* depthwise m=2, s=2 */
        {1, 6, 5, 2, 7, 7, 3, 1, 1, true, false, false, false, TCRT_ACT_NONE},    /* kernel > input */
        {1, 9, 9, 7, 3, 3, 19, 1, 1, true, false, true, true, TCRT_ACT_LEAKY},    /* residual */
        {1, 64, 64, 64, 3, 3, 16, 1, 1, true, false, true, false, TCRT_ACT_NONE}, /* im2col in 2 blocks */
    };
    int prev = tcrt_kern_force_isa(TCRT_ISA_PORTABLE);
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_conv(&cases[i], true);
    }
    tcrt_set_threads(1);
    /* without a workspace the kernel falls back to the reference */
    run_conv(&cases[1], false);
    run_conv(&cases[3], false);
    tcrt_kern_force_isa(prev);
}
END_TEST

START_TEST(gemm_conv_random)
{
    int prev = tcrt_kern_force_isa(TCRT_ISA_PORTABLE);
    for (int it = 0; it < 40; it++) {
        tcrt_set_threads(it % 2 ? 2 : 1);
        ConvCase cc;
        cc.n = irand(1, 2), cc.h = irand(3, 12), cc.w = irand(3, 12), cc.c = irand(1, 9);
        cc.kh = irand(1, 4), cc.kw = irand(1, 4), cc.m = irand(1, 20);
        cc.s = irand(1, 2), cc.d = irand(1, 2);
        cc.same = irand(0, 1), cc.depthwise = irand(0, 3) == 0, cc.bias = irand(0, 1);
        cc.residual = cc.bias && !cc.depthwise && irand(0, 1);
        cc.act = (int)irand(0, 3);
        if (cc.depthwise)
            cc.m = irand(1, 3);
        if (!cc.same && ((cc.kh - 1) * cc.d + 1 > cc.h || (cc.kw - 1) * cc.d + 1 > cc.w))
            cc.same = true;
        run_conv(&cc, true);
    }
    tcrt_set_threads(1);
    tcrt_kern_force_isa(prev);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_fast_gemm");
    TCase *tc = tcase_create("fast_gemm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, gemm_matmul_cases);
    tcase_add_test(tc, gemm_matmul_random);
    tcase_add_test(tc, gemm_matmul_errors);
    tcase_add_test(tc, gemm_conv_cases);
    tcase_add_test(tc, gemm_conv_random);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
