/* test_fast.c - Check suite: fast kernels (Eigen shim) against the reference kernels.
 *
 * Random inputs in [-1, 1] from a fixed-seed generator; every case runs the
 * reference and the fast kernel on the same tensors and requires
 * |fast - ref| <= 1e-4 * (1 + |ref|).  Cases: stride 2, TF SAME pads
 * (asymmetric), dilation 2, depthwise multiplier 1 and 2, 1x1 pointwise,
 * an im2col that needs several row blocks, bias + relu6/leaky epilogues,
 * the missing-workspace fallback, and batched matmul with broadcast batch
 * dims, transposes and bias/relu6, GEMV shapes, K/N cache blocking and
 * K = 0, with and without the workspace, with 1 and 2 threads.
 */
#include "tcrt_kernels.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ws_alloc.h"

static uint64_t rng = 0x1234567;

static float frand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
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
    bool same, depthwise, bias;
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
    float *x = rand_buf(cc->n * cc->h * cc->w * cc->c);
    float *w = rand_buf(cc->kh * cc->kw * cc->c * cc->m);
    float *b = rand_buf(o);
    int64_t ny = cc->n * oh * ow * o;
    float *yr = calloc((size_t)ny, sizeof(float)), *yf = calloc((size_t)ny, sizeof(float));
    tcrt_tensor in[3] = {
        {.data = x, .dtype = TCRT_F32, .rank = 4, .dims = {cc->n, cc->h, cc->w, cc->c}},
        {.data = w, .dtype = TCRT_F32, .rank = 4, .dims = {cc->kh, cc->kw, cc->c, cc->m}},
        {.data = b, .dtype = TCRT_F32, .rank = 1, .dims = {o}},
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
    int n_in = cc->bias ? 3 : 2;
    tcrt_tensor outr = {.data = yr, .dtype = TCRT_F32, .rank = 4, .dims = {cc->n, oh, ow, o}};
    ck_assert_int_eq(tcrt_ref_conv2d(in, n_in, &outr, 1, &p), TCRT_OK);
    tcrt_tensor outf[2] = {outr, {.dtype = TCRT_U8, .rank = 1}};
    outf[0].data = yf;
    size_t ws = tcrt_fast_conv2d_workspace(in, n_in, &outf[0], &p);
    if (cc->depthwise)
        ck_assert_uint_eq(ws, 0);
    void *wsb = give_workspace ? ws_alloc(ws) : NULL;
    outf[1].data = wsb;
    outf[1].dims[0] = give_workspace ? (int64_t)ws : 0;
    /* per thread (16 at most): a 2 MB patch block (or 128 rows) + GEMM
     * packing buffers (at most 288 x (1536 + nc) floats, nc*288*4 <= 768 KB) */
    ck_assert_uint_le(ws, 16 * ((2u << 20) + 128 * (size_t)cc->kh * cc->kw * cc->c * 4 + 288 * 1536 * 4 +
                                (768u << 10) + 256) + 64);
    ck_assert_int_eq(tcrt_fast_conv2d(in, n_in, outf, give_workspace ? 2 : 1, &p), TCRT_OK);
    compare(yf, yr, ny, "conv2d");
    free(wsb);
    free(x);
    free(w);
    free(b);
    free(yr);
    free(yf);
}

START_TEST(fast_conv_cases)
{
    static const ConvCase cases[] = {
        /* n  h   w  c  kh kw m  s  d  same  dw    bias  act */
        {1, 7, 7, 3, 3, 3, 8, 1, 1, false, false, false, TCRT_ACT_NONE},
        {2, 9, 8, 4, 3, 3, 5, 2, 1, true, false, true, TCRT_ACT_RELU},     /* stride 2 SAME */
        {1, 10, 11, 3, 3, 2, 6, 1, 2, true, false, true, TCRT_ACT_RELU6},  /* dilation 2 */
        {1, 8, 8, 6, 1, 1, 7, 1, 1, false, false, true, TCRT_ACT_LEAKY},   /* 1x1 pointwise */
        {1, 8, 8, 6, 1, 1, 7, 2, 1, false, false, false, TCRT_ACT_NONE},   /* 1x1 stride 2 */
        {2, 9, 9, 5, 3, 3, 1, 1, 1, true, true, true, TCRT_ACT_RELU6},     /* depthwise m=1 */
        {1, 8, 7, 3, 3, 3, 2, 2, 1, true, true, false, TCRT_ACT_NONE},     /* depthwise m=2, s=2 */
        {1, 9, 9, 4, 5, 5, 2, 1, 2, true, true, true, TCRT_ACT_LEAKY},     /* depthwise dil 2 */
        {1, 6, 5, 2, 7, 7, 3, 1, 1, true, false, false, TCRT_ACT_NONE},    /* kernel > input */
        {1, 64, 64, 64, 3, 3, 16, 1, 1, true, false, true, TCRT_ACT_NONE}, /* im2col in 2 blocks */
    };
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_conv(&cases[i], true);
    }
    tcrt_set_threads(1);
    /* without a workspace the fast kernel falls back to the reference */
    run_conv(&cases[1], false);
}
END_TEST

START_TEST(fast_conv_random)
{
    for (int it = 0; it < 30; it++) {
        rng = rng * 31 + (uint64_t)it;
        ConvCase cc;
        cc.n = 1 + (int64_t)((frand() + 1) * 1);
        cc.h = 3 + (int64_t)((frand() + 1) * 5);
        cc.w = 3 + (int64_t)((frand() + 1) * 5);
        cc.c = 1 + (int64_t)((frand() + 1) * 4);
        cc.kh = 1 + (int64_t)((frand() + 1) * 1.5);
        cc.kw = 1 + (int64_t)((frand() + 1) * 1.5);
        cc.m = 1 + (int64_t)((frand() + 1) * 3);
        cc.s = 1 + (int64_t)((frand() + 1) * 0.99);
        cc.d = 1 + (int64_t)((frand() + 1) * 0.99);
        cc.same = frand() > 0;
        cc.depthwise = frand() > 0.3f;
        cc.bias = frand() > 0;
        cc.act = (int)((frand() + 1) * 1.99);
        if (!cc.same && ((cc.kh - 1) * cc.d + 1 > cc.h || (cc.kw - 1) * cc.d + 1 > cc.w))
            cc.same = true;
        run_conv(&cc, true);
    }
}
END_TEST

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
    float *yr = calloc((size_t)ny, 4), *yf = calloc((size_t)ny, 4);
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
    size_t ws = tcrt_fast_matmul_workspace(in, n_in, &o, &p);
    if (mc->m == 1 || mc->n == 1)
        ck_assert_uint_eq(ws, 0); /* GEMV */
    void *wsb = ws_alloc(ws);
    tcrt_tensor outs[2] = {o, {.data = wsb, .dtype = TCRT_U8, .rank = 1, .dims = {(int64_t)ws}}};
    ck_assert_int_eq(tcrt_fast_matmul(in, n_in, outs, 2, &p), TCRT_OK);
    compare(yf, yr, ny, "matmul");
    /* without the workspace: the reference (same result) */
    memset(yf, 0, (size_t)ny * 4);
    ck_assert_int_eq(tcrt_fast_matmul(in, n_in, &o, 1, &p), TCRT_OK);
    compare(yf, yr, ny, "matmul (no workspace)");
    free(wsb);
    free(a.data);
    free(b.data);
    free(bias);
    free(yr);
    free(yf);
}

START_TEST(fast_matmul_cases)
{
    static const MMCase cases[] = {
        {2, 2, {0}, {0}, 5, 7, 3, false, false, false, TCRT_ACT_NONE},
        {2, 2, {0}, {0}, 64, 100, 48, true, false, true, TCRT_ACT_RELU6},
        {2, 2, {0}, {0}, 33, 17, 65, false, true, true, TCRT_ACT_RELU},
        {3, 3, {4}, {4}, 6, 9, 5, true, true, true, TCRT_ACT_RELU6},
        {3, 2, {3}, {0}, 6, 9, 5, false, false, true, TCRT_ACT_LEAKY},   /* b broadcast */
        {4, 3, {2, 1}, {3}, 4, 5, 6, false, true, false, TCRT_ACT_NONE}, /* [2,1] x [3] -> [2,3] */
        {3, 4, {1}, {2, 3}, 4, 5, 6, true, false, true, TCRT_ACT_RELU6},
        {2, 2, {0}, {0}, 1, 256, 1000, false, false, true, TCRT_ACT_NONE}, /* dense layer */
        {2, 2, {0}, {0}, 1, 300, 70, true, true, true, TCRT_ACT_RELU},      /* GEMV, dot form */
        {2, 2, {0}, {0}, 90, 300, 1, true, false, true, TCRT_ACT_RELU6},    /* GEMV, N == 1 */
        {2, 2, {0}, {0}, 300, 600, 700, false, false, true, TCRT_ACT_NONE}, /* K and N blocked */
        {3, 2, {5}, {0}, 40, 50, 30, false, true, true, TCRT_ACT_RELU},     /* batch >= threads */
        /* entries too small to split, one per thread at a time (tcrt_kmm_run_batch):
         * attention's Q K^T and its weights x V, odd sizes, a broadcast A */
        {3, 3, {4}, {4}, 128, 64, 128, false, false, false, TCRT_ACT_NONE},
        {4, 4, {2, 3}, {2, 3}, 37, 45, 29, false, true, true, TCRT_ACT_LEAKY},
        {3, 3, {1}, {7}, 13, 40, 70, false, false, true, TCRT_ACT_RELU6},
        {2, 2, {0}, {0}, 0, 5, 3, false, false, true, TCRT_ACT_NONE},       /* empty */
        {2, 2, {0}, {0}, 4, 0, 3, false, false, true, TCRT_ACT_RELU6},      /* K = 0: bias */
    };
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_mm(&cases[i]);
    }
    tcrt_set_threads(1);
}
END_TEST

START_TEST(fast_matmul_other_dtypes)
{
    /* int32 goes through the reference: [[1,2],[3,4]] @ [[5],[6]] = [17, 39] */
    int32_t a[4] = {1, 2, 3, 4}, b[2] = {5, 6}, y[2];
    tcrt_tensor in[2] = {{.data = a, .dtype = TCRT_I32, .rank = 2, .dims = {2, 2}},
                         {.data = b, .dtype = TCRT_I32, .rank = 2, .dims = {2, 1}}};
    tcrt_tensor o = {.data = y, .dtype = TCRT_I32, .rank = 2, .dims = {2, 1}};
    tcrt_params p = {{0}, {0}};
    ck_assert_int_eq(tcrt_fast_matmul(in, 2, &o, 1, &p), TCRT_OK);
    ck_assert_int_eq(y[0], 17);
    ck_assert_int_eq(y[1], 39);
    /* shape mismatch is an error, not a crash */
    in[1].dims[0] = 3;
    ck_assert_int_eq(tcrt_fast_matmul(in, 2, &o, 1, &p), TCRT_ERR_RUNTIME);
    float fa[4] = {0}, fb[3] = {0}, fy[2];
    tcrt_tensor fin[2] = {{.data = fa, .dtype = TCRT_F32, .rank = 2, .dims = {2, 2}},
                          {.data = fb, .dtype = TCRT_F32, .rank = 2, .dims = {3, 1}}};
    tcrt_tensor fo = {.data = fy, .dtype = TCRT_F32, .rank = 2, .dims = {2, 1}};
    ck_assert_int_eq(tcrt_fast_matmul(fin, 2, &fo, 1, &p), TCRT_ERR_RUNTIME);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_fast");
    TCase *tc = tcase_create("fast");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fast_conv_cases);
    tcase_add_test(tc, fast_conv_random);
    tcase_add_test(tc, fast_matmul_cases);
    tcase_add_test(tc, fast_matmul_other_dtypes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
