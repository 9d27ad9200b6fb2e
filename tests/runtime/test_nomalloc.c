/* test_nomalloc.c - Check suite: the fast kernels allocate nothing during a run.
 *
 * How allocations are seen: alloc_count.h replaces malloc & co. for the
 * whole process (every thread, shared libraries included) and counts calls
 * between alloc_count_start() and alloc_count_stop().
 * Each case: set the thread count (1, then 2: tcrt_set_threads starts the
 * thread pool), get the workspace size the kernel reports, give exactly that many
 * bytes (deliberately misaligned by 4 bytes), call once to warm up, then
 * count allocations over three more calls (must be 0) and compare the result
 * with the reference kernel: |fast - ref| <= 1e-4 * (1 + |ref|).
 * Cases: matmul (plain, transposed, K and N blocked, batched with bias and
 * broadcast, GEMV), conv2d 1x1, 3x3 stride 2 SAME, depthwise (M = 2), an
 * im2col conv with several row blocks.
 */
#include "tcrt_kernels.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- allocation counting (alloc_count.h) ---- */

#include "alloc_count.h"

/* Under AddressSanitizer the allocator belongs to ASan: the replacement
 * malloc cannot coexist with it, so the ASan build skips this test (the
 * normal build runs it). */
#ifndef ALLOC_COUNT_AVAILABLE
#define NOMALLOC_SKIP 1
int main(void)
{
    printf("SKIP: allocation counting does not work under AddressSanitizer\n");
    return 77;
}
#endif

#ifndef NOMALLOC_SKIP
/* ---- helpers ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float frand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static float *rand_buf(int64_t n)
{
    float *b = malloc((size_t)(n ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(b);
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

typedef tcrt_status (*fast_fn)(const tcrt_tensor *, int, tcrt_tensor *, int, const tcrt_params *);

/* Warm-up call, then three counted calls; returns the allocations seen. */
static long count_calls(fast_fn f, const tcrt_tensor *in, int n_in, tcrt_tensor *out, const tcrt_params *p)
{
    ck_assert_int_eq(f(in, n_in, out, 2, p), TCRT_OK);
    alloc_count_start();
    tcrt_status s = TCRT_OK;
    for (int r = 0; r < 3 && s == TCRT_OK; r++)
        s = f(in, n_in, out, 2, p);
    long n = alloc_count_stop();
    ck_assert_int_eq(s, TCRT_OK);
    return n;
}

/* out[1] = exactly ws bytes at an address that is 4 mod 64 bytes. */
static void *give_ws(tcrt_tensor *w, size_t ws, void **raw)
{
    *raw = malloc(ws + 68);
    ck_assert_ptr_nonnull(*raw);
    uint8_t *p = (uint8_t *)(((uintptr_t)*raw + 63) & ~(uintptr_t)63) + 4;
    *w = (tcrt_tensor){.data = p, .dtype = TCRT_U8, .rank = 1, .dims = {(int64_t)ws}};
    return p;
}

/* ---- matmul ---- */

typedef struct MMCase {
    int64_t batch_a, batch_b; /* 0: rank 2; else a leading batch dim */
    int64_t m, k, n;
    bool ta, tb, bias;
    int act;
    bool gemv; /* expects no workspace */
} MMCase;

static void run_mm(const MMCase *mc, int threads)
{
    tcrt_set_threads(threads);
    int ra = mc->batch_a ? 3 : 2, rb = mc->batch_b ? 3 : 2;
    tcrt_tensor a = {.dtype = TCRT_F32, .rank = ra}, b = {.dtype = TCRT_F32, .rank = rb};
    int64_t nb = mc->batch_a > mc->batch_b ? mc->batch_a : mc->batch_b;
    if (mc->batch_a)
        a.dims[0] = mc->batch_a;
    if (mc->batch_b)
        b.dims[0] = mc->batch_b;
    a.dims[ra - 2] = mc->ta ? mc->k : mc->m;
    a.dims[ra - 1] = mc->ta ? mc->m : mc->k;
    b.dims[rb - 2] = mc->tb ? mc->n : mc->k;
    b.dims[rb - 1] = mc->tb ? mc->k : mc->n;
    tcrt_tensor o = {.dtype = TCRT_F32, .rank = nb ? 3 : 2};
    if (nb)
        o.dims[0] = nb;
    o.dims[o.rank - 2] = mc->m;
    o.dims[o.rank - 1] = mc->n;
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
    if (mc->gemv)
        ck_assert_uint_eq(ws, 0);
    else
        ck_assert_uint_gt(ws, 0);
    tcrt_tensor outs[2] = {o};
    void *raw;
    give_ws(&outs[1], ws, &raw);
    long n = count_calls(tcrt_fast_matmul, in, n_in, outs, &p);
    ck_assert_msg(n == 0, "matmul %lldx%lldx%lld (batch %lld), %d threads: %ld allocations", (long long)mc->m,
                  (long long)mc->k, (long long)mc->n, (long long)nb, threads, n);
    compare(yf, yr, ny, "matmul");
    free(raw);
    free(a.data);
    free(b.data);
    free(bias);
    free(yr);
    free(yf);
}

START_TEST(nomalloc_matmul)
{
    static const MMCase cases[] = {
        /* ba bb  m    k    n    ta     tb     bias   act             gemv */
        {0, 0, 64, 96, 80, false, false, true, TCRT_ACT_RELU, false},
        {0, 0, 70, 40, 90, true, true, false, TCRT_ACT_NONE, false},
        {0, 0, 300, 600, 700, false, false, true, TCRT_ACT_RELU6, false}, /* K and N blocked */
        {4, 4, 33, 70, 45, false, true, true, TCRT_ACT_NONE, false},      /* batch with bias */
        {3, 0, 20, 50, 30, true, false, true, TCRT_ACT_LEAKY, false},     /* b broadcast */
        {0, 0, 1, 512, 300, false, false, true, TCRT_ACT_NONE, true},     /* dense, axpy form */
        {0, 0, 1, 512, 300, false, true, true, TCRT_ACT_RELU, true},      /* dense, dot form */
        {0, 0, 200, 300, 1, false, false, true, TCRT_ACT_NONE, true},     /* N == 1 */
    };
    for (int t = 1; t <= 2; t++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_mm(&cases[i], t);
    tcrt_set_threads(1);
}
END_TEST

/* ---- conv2d ---- */

typedef struct ConvCase {
    int64_t n, h, w, c, kh, kw, m; /* m: out channels, or multiplier when depthwise */
    int64_t s;
    int64_t pt, pb, pl, pr, oh, ow; /* hand-derived pads and output size */
    bool depthwise;
    int act;
} ConvCase;

static void run_conv(const ConvCase *cc, int threads)
{
    tcrt_set_threads(threads);
    int64_t o = cc->depthwise ? cc->c * cc->m : cc->m;
    float *x = rand_buf(cc->n * cc->h * cc->w * cc->c);
    float *w = rand_buf(cc->kh * cc->kw * cc->c * cc->m);
    float *b = rand_buf(o);
    int64_t ny = cc->n * cc->oh * cc->ow * o;
    float *yr = calloc((size_t)ny, sizeof(float)), *yf = calloc((size_t)ny, sizeof(float));
    tcrt_tensor in[3] = {
        {.data = x, .dtype = TCRT_F32, .rank = 4, .dims = {cc->n, cc->h, cc->w, cc->c}},
        {.data = w, .dtype = TCRT_F32, .rank = 4, .dims = {cc->kh, cc->kw, cc->c, cc->m}},
        {.data = b, .dtype = TCRT_F32, .rank = 1, .dims = {o}},
    };
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = cc->s;
    p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
    p.i[TCRT_CONV_PT] = cc->pt;
    p.i[TCRT_CONV_PB] = cc->pb;
    p.i[TCRT_CONV_PL] = cc->pl;
    p.i[TCRT_CONV_PR] = cc->pr;
    p.i[TCRT_CONV_DEPTHWISE] = cc->depthwise;
    p.i[TCRT_CONV_ACT] = cc->act;
    tcrt_tensor outs[2] = {{.data = yr, .dtype = TCRT_F32, .rank = 4, .dims = {cc->n, cc->oh, cc->ow, o}}};
    ck_assert_int_eq(tcrt_ref_conv2d(in, 3, outs, 1, &p), TCRT_OK);
    outs[0].data = yf;
    size_t ws = tcrt_fast_conv2d_workspace(in, 3, &outs[0], &p);
    if (cc->depthwise)
        ck_assert_uint_eq(ws, 0);
    else
        ck_assert_uint_gt(ws, 0);
    void *raw;
    give_ws(&outs[1], ws, &raw);
    long n = count_calls(tcrt_fast_conv2d, in, 3, outs, &p);
    ck_assert_msg(n == 0, "conv %lldx%lld stride %lld on %lldx%lldx%lld%s, %d threads: %ld allocations",
                  (long long)cc->kh, (long long)cc->kw, (long long)cc->s, (long long)cc->h, (long long)cc->w,
                  (long long)cc->c, cc->depthwise ? " (depthwise)" : "", threads, n);
    compare(yf, yr, ny, "conv2d");
    free(raw);
    free(x);
    free(w);
    free(b);
    free(yr);
    free(yf);
}

START_TEST(nomalloc_conv)
{
    /* Output sizes and TF SAME pads (out = ceil(in/s), total pad =
     * max((out-1)*s + k - in, 0), before = total/2):
     *   3x3 s2 on 17: out 9, total (8*2+3-17) = 2 -> 1/1;
     *   3x3 s2 on 16: out 8, total (7*2+3-16) = 1 -> 0/1;
     *   3x3 s1 on 10: out 10, total 2 -> 1/1;
     *   3x3 s1 on 48 with 64 channels: K = 576, 2304 patch rows > 910 per
     *   block (2 MB / (576*4)), so several blocks. */
    static const ConvCase cases[] = {
        /* n  h   w   c   kh kw m   s  pt pb pl pr oh  ow  dw     act */
        {1, 14, 14, 32, 1, 1, 48, 1, 0, 0, 0, 0, 14, 14, false, TCRT_ACT_RELU6}, /* 1x1 */
        {2, 17, 16, 8, 3, 3, 16, 2, 1, 1, 0, 1, 9, 8, false, TCRT_ACT_RELU},     /* 3x3 s2 SAME */
        {2, 10, 10, 6, 3, 3, 2, 1, 1, 1, 1, 1, 10, 10, true, TCRT_ACT_RELU6},    /* depthwise m=2 */
        {1, 40, 40, 32, 3, 3, 1, 1, 1, 1, 1, 1, 40, 40, true, TCRT_ACT_NONE},    /* depthwise, big */
        {1, 48, 48, 64, 3, 3, 24, 1, 1, 1, 1, 1, 48, 48, false, TCRT_ACT_NONE},  /* im2col blocks */
    };
    for (int t = 1; t <= 2; t++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_conv(&cases[i], t);
    tcrt_set_threads(1);
}
END_TEST

/* The counter itself works: a malloc inside the window is seen. */
START_TEST(nomalloc_counter_sees_malloc)
{
    alloc_count_start();
    void *volatile p = malloc(100);
    long n = alloc_count_stop();
    free(p);
    ck_assert_int_eq(n, 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_nomalloc");
    TCase *tc = tcase_create("nomalloc");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, nomalloc_counter_sees_malloc);
    tcase_add_test(tc, nomalloc_matmul);
    tcase_add_test(tc, nomalloc_conv);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
#endif /* !NOMALLOC_SKIP */
