/* test_fast_sgemm.c - Check suite: the packed AVX-512 float32 GEMM
 * (runtime/kernels/fast_sgemm_avx512.c) against the reference matmul
 * (runtime/kernels/ref_matmul.c, which accumulates in double).
 *
 * Inputs are uniform in [-1, 1] from a fixed-seed generator; a result may
 * differ from the reference by float32 rounding of a K-term sum in another
 * order: |fast - ref| <= (1e-5 + 1e-6 K) (1 + |ref|), far below the error
 * of one wrong or missing product.  Cases:
 *   - the kernel itself (tcrt_sgemm_avx512) on 1x1x1, random M, N, K in
 *     1..70, 97, 129, 257 and sizes that cross the K and N blocks (with
 *     the preferred workspace the A store is kept across N blocks, with
 *     3/4 of it narrower N blocks run without the store), every
 *     transpose, bias and each activation, with 1, 2 and 3 threads (3: an
 *     odd count, three threads claiming A panels from one counter; M up to
 *     300, 22 panels); skipped
 *     where the CPU or the build has no AVX-512;
 *   - tcrt_fast_matmul on shapes that take it (batch dims with broadcast,
 *     transposes, epilogues), with the new GEMM on and off
 *     (tcrt_sgemm_enable), and with a too small workspace (the fallback);
 *   - the epilogue's activations on NaN and past the clip (hand-derived).
 */
#include "fast_conv_int.h"
#include "tcrt_kernels.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_alloc.h"

#ifndef TCRT_ISA_MAX
#define TCRT_ISA_MAX TCRT_ISA_PORTABLE
#endif

static uint64_t rng = 0x5eed1234;

static uint32_t next_u32(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

static float frand(void)
{
    return (float)(next_u32() * (1.0 / 2147483648.0)) * 2.0f - 1.0f;
}

static float *rand_buf(int64_t n)
{
    float *b = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        b[i] = frand();
    return b;
}

static void compare(const float *fast, const float *ref, int64_t n, int64_t K, const char *what)
{
    float tol = 1e-5f + 1e-6f * (float)K;
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(fast[i] - ref[i]) <= tol * (1 + fabsf(ref[i])), "%s [%lld]: fast %.7g ref %.7g", what,
                      (long long)i, fast[i], ref[i]);
}

/* C = act(op(A) op(B) + bias) by the reference kernel (2-D). */
__attribute__((unused)) static void ref_mm(int64_t M, int64_t N, int64_t K, const float *A, bool ta, const float *B, bool tb,
                   const float *bias, int act, float *C)
{
    tcrt_tensor in[3] = {{.data = (void *)A, .dtype = TCRT_F32, .rank = 2, .dims = {ta ? K : M, ta ? M : K}},
                         {.data = (void *)B, .dtype = TCRT_F32, .rank = 2, .dims = {tb ? N : K, tb ? K : N}},
                         {.data = (void *)bias, .dtype = TCRT_F32, .rank = 1, .dims = {N}}};
    tcrt_tensor o = {.data = C, .dtype = TCRT_F32, .rank = 2, .dims = {M, N}};
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_MM_TA] = ta;
    p.i[TCRT_MM_TB] = tb;
    p.i[TCRT_MM_ACT] = act;
    p.f[0] = 0.1;
    ck_assert_int_eq(tcrt_ref_matmul(in, bias ? 3 : 2, &o, 1, &p), TCRT_OK);
}

#if TCRT_ISA_MAX >= TCRT_ISA_AVX512
/* One direct call of the kernel on a team of nth, against the reference. */
static void run_direct(int64_t M, int64_t N, int64_t K, bool ta, bool tb, bool has_bias, int act, int nth)
{
    float *A = rand_buf(M * K), *B = rand_buf(K * N), *bias = rand_buf(N);
    float *cr = malloc((size_t)(M * N) * sizeof(float)), *cf = malloc((size_t)(M * N) * sizeof(float));
    for (int64_t i = 0; i < M * N; i++)
        cf[i] = NAN; /* every element must be written */
    size_t ws = tcrt_sgemm_workspace(M, N, K);
    ck_assert_uint_gt(ws, 0);
    void *w = ws_alloc(ws);
    ref_mm(M, N, K, A, ta, B, tb, has_bias ? bias : NULL, act, cr);
    ck_assert(tcrt_sgemm_avx512(M, N, K, A, ta, B, tb, cf, has_bias ? bias : NULL, act, 0.1f, w, ws, nth));
    char what[128];
    snprintf(what, sizeof what, "sgemm %lldx%lldx%lld ta %d tb %d bias %d act %d threads %d", (long long)M,
             (long long)N, (long long)K, ta, tb, has_bias, act, nth);
    compare(cf, cr, M * N, K, what);
    /* a workspace under the preferred size: narrower N blocks, same result,
     * or (not even one micro-panel fits) false with C untouched */
    for (int64_t i = 0; i < M * N; i++)
        cf[i] = NAN;
    if (tcrt_sgemm_avx512(M, N, K, A, ta, B, tb, cf, has_bias ? bias : NULL, act, 0.1f, w, ws * 3 / 4, nth)) {
        compare(cf, cr, M * N, K, what);
    } else {
        for (int64_t i = 0; i < M * N; i++)
            ck_assert_msg(isnan(cf[i]), "%s: C written without a usable workspace", what);
    }
    free(A), free(B), free(bias), free(cr), free(cf), free(w);
}
#endif

START_TEST(sgemm_direct)
{
#if TCRT_ISA_MAX >= TCRT_ISA_AVX512
    if (!tcrt_kern_isa_supported(TCRT_ISA_AVX512)) {
        printf("sgemm_direct: no AVX-512 on this CPU, skipped\n");
        return;
    }
    static const int64_t fixed[][3] = {
        {1, 1, 1},
        {14, 32, 16},
        {15, 33, 17},
        {97, 129, 257},
        {129, 97, 31},
        {257, 65, 9},
        {28, 1000, 1},
        {3, 700, 530},
        {300, 40, 1100},
        /* three N blocks and two K blocks (261, 260): the A store, a last
         * panel of 3 rows; at 3/4 of the workspace narrower N blocks
         * without it */
        {45, 2100, 521},
    };
    for (int t = 1; t <= 3; t++) {
        tcrt_set_threads(t);
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            for (int tr = 0; tr < 4; tr++)
                run_direct(fixed[i][0], fixed[i][1], fixed[i][2], tr & 1, tr >> 1, tr != 0, tr, t);
        for (int i = 0; i < 60; i++) {
            int64_t M = 1 + next_u32() % 70, N = 1 + next_u32() % 70, K = 1 + next_u32() % 70;
            run_direct(M, N, K, next_u32() & 1, next_u32() & 1, next_u32() & 1, (int)(next_u32() % 4), t);
        }
    }
    tcrt_set_threads(1);
#else
    printf("sgemm_direct: built without AVX-512 kernels, skipped\n");
#endif
}
END_TEST

typedef struct BCase {
    int ra, rb;           /* ranks */
    int64_t ad[2], bd[2]; /* leading (batch) dims */
    int64_t m, k, n;
    bool ta, tb, bias;
    int act;
} BCase;

/* tcrt_fast_matmul on case c against the reference; ws_short: give a
 * workspace one byte too small (the kernel must fall back, same result). */
static void run_fast(const BCase *c, bool ws_short, const char *tag)
{
    tcrt_tensor a = {.dtype = TCRT_F32, .rank = c->ra}, b = {.dtype = TCRT_F32, .rank = c->rb};
    int nb_a = c->ra - 2, nb_b = c->rb - 2, ro = c->ra > c->rb ? c->ra : c->rb;
    for (int d = 0; d < nb_a; d++)
        a.dims[d] = c->ad[d];
    for (int d = 0; d < nb_b; d++)
        b.dims[d] = c->bd[d];
    a.dims[nb_a] = c->ta ? c->k : c->m;
    a.dims[nb_a + 1] = c->ta ? c->m : c->k;
    b.dims[nb_b] = c->tb ? c->n : c->k;
    b.dims[nb_b + 1] = c->tb ? c->k : c->n;
    tcrt_tensor o = {.dtype = TCRT_F32, .rank = ro};
    for (int d = 0; d < ro - 2; d++) {
        int da = d - (ro - c->ra), db = d - (ro - c->rb);
        int64_t x = da >= 0 ? a.dims[da] : 1, y = db >= 0 ? b.dims[db] : 1;
        o.dims[d] = x > y ? x : y;
    }
    o.dims[ro - 2] = c->m;
    o.dims[ro - 1] = c->n;
    a.data = rand_buf(tcrt_tensor_count(&a));
    b.data = rand_buf(tcrt_tensor_count(&b));
    float *bias = rand_buf(c->n);
    int64_t ny = tcrt_tensor_count(&o);
    float *yr = malloc((size_t)ny * 4), *yf = malloc((size_t)ny * 4);
    for (int64_t i = 0; i < ny; i++)
        yf[i] = NAN;
    tcrt_tensor in[3] = {a, b, {.data = bias, .dtype = TCRT_F32, .rank = 1, .dims = {c->n}}};
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_MM_TA] = c->ta;
    p.i[TCRT_MM_TB] = c->tb;
    p.i[TCRT_MM_ACT] = c->act;
    p.f[0] = 0.1;
    int n_in = c->bias ? 3 : 2;
    o.data = yr;
    ck_assert_int_eq(tcrt_ref_matmul(in, n_in, &o, 1, &p), TCRT_OK);
    o.data = yf;
    size_t ws = tcrt_fast_matmul_workspace(in, n_in, &o, &p);
    if (ws_short && ws > 0)
        ws--;
    void *wsb = ws_alloc(ws);
    tcrt_tensor outs[2] = {o, {.data = wsb, .dtype = TCRT_U8, .rank = 1, .dims = {(int64_t)ws}}};
    ck_assert_int_eq(tcrt_fast_matmul(in, n_in, outs, 2, &p), TCRT_OK);
    char what[160];
    snprintf(what, sizeof what, "%s: matmul %lldx%lldx%lld ta %d tb %d ranks %d/%d%s", tag, (long long)c->m,
             (long long)c->k, (long long)c->n, c->ta, c->tb, c->ra, c->rb, ws_short ? " (short workspace)" : "");
    compare(yf, yr, ny, c->k, what);
    free(wsb), free(a.data), free(b.data), free(bias), free(yr), free(yf);
}

START_TEST(sgemm_through_matmul)
{
    static const BCase cases[] = {
        {2, 2, {0}, {0}, 97, 257, 129, false, false, true, TCRT_ACT_RELU},
        {2, 2, {0}, {0}, 129, 97, 257, true, false, true, TCRT_ACT_RELU6},
        {2, 2, {0}, {0}, 200, 64, 96, false, true, false, TCRT_ACT_NONE},
        {2, 2, {0}, {0}, 64, 300, 70, true, true, true, TCRT_ACT_LEAKY},
        {2, 2, {0}, {0}, 600, 530, 130, false, false, true, TCRT_ACT_NONE}, /* two K blocks */
        {3, 2, {3}, {0}, 40, 100, 80, false, false, true, TCRT_ACT_RELU},  /* batch folded into M */
        {3, 3, {3}, {3}, 50, 90, 70, false, true, true, TCRT_ACT_NONE},    /* batched */
        {4, 3, {2, 1}, {3}, 40, 80, 96, true, false, false, TCRT_ACT_RELU6}, /* broadcast batch */
        {3, 4, {1}, {2, 2}, 48, 96, 64, true, true, true, TCRT_ACT_LEAKY},
    };
    for (int on = 1; on >= 0; on--) {
        int prev = tcrt_sgemm_enable(on);
        for (int t = 1; t <= 2; t++) {
            tcrt_set_threads(t);
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                run_fast(&cases[i], false, on ? "new" : "old");
                run_fast(&cases[i], true, on ? "new" : "old");
            }
        }
        tcrt_sgemm_enable(prev);
    }
    tcrt_set_threads(1);
}
END_TEST

/* The epilogue's activations on NaN and past the clip, hand-derived: B is
 * all ones (K = 20, N = 40), row 0 of A holds one NaN, row 1 is 5 (sum 100),
 * row 2 is -5 (sum -100), the other rows are 0; no bias.  As tcrt_kern_act:
 * relu gives 0 for NaN, relu6 and leaky keep it; relu6 clips 100 to 6 and
 * leaky scales -100 by 0.1. */
START_TEST(sgemm_act_nan)
{
#if TCRT_ISA_MAX >= TCRT_ISA_AVX512
    if (!tcrt_kern_isa_supported(TCRT_ISA_AVX512))
        return;
    enum { M = 20, N = 40, K = 20 };
    static float A[M * K], B[K * N], C[M * N];
    for (int i = 0; i < K * N; i++)
        B[i] = 1.0f;
    memset(A, 0, sizeof A);
    A[7] = NAN;
    for (int k = 0; k < K; k++)
        A[K + k] = 5.0f, A[2 * K + k] = -5.0f;
    size_t ws = tcrt_sgemm_workspace(M, N, K);
    void *w = ws_alloc(ws);
    for (int act = TCRT_ACT_NONE; act <= TCRT_ACT_LEAKY; act++) {
        ck_assert(tcrt_sgemm_avx512(M, N, K, A, false, B, false, C, NULL, act, 0.1f, w, ws, 1));
        float pos = act == TCRT_ACT_RELU6 ? 6.0f : 100.0f;
        float neg = act == TCRT_ACT_NONE ? -100.0f : act == TCRT_ACT_LEAKY ? -10.0f : 0.0f;
        for (int n = 0; n < N; n++) {
            if (act == TCRT_ACT_RELU)
                ck_assert_msg(C[n] == 0.0f, "act %d col %d: %g, want 0", act, n, C[n]);
            else
                ck_assert_msg(isnan(C[n]), "act %d col %d: %g, want NaN", act, n, C[n]);
            ck_assert_msg(C[N + n] == pos, "act %d col %d: %g, want %g", act, n, C[N + n], pos);
            ck_assert_msg(C[2 * N + n] == neg, "act %d col %d: %g, want %g", act, n, C[2 * N + n], neg);
            for (int m = 3; m < M; m++)
                ck_assert_msg(C[m * N + n] == 0.0f, "act %d (%d,%d): %g", act, m, n, C[m * N + n]);
        }
    }
    free(w);
#endif
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_fast_sgemm");
    TCase *tc = tcase_create("sgemm");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sgemm_direct);
    tcase_add_test(tc, sgemm_through_matmul);
    tcase_add_test(tc, sgemm_act_nan);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
