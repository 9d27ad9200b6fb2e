/* benchmarks/sgemm.c - float32 GEMM and packed convolution throughput of the
 * runtime's fast kernels against the machine's FMA peak (not a test; built
 * by meson as build/benchmarks/sgemm, run by hand).
 *
 *   sgemm [--isa portable|avx2|avx512] [--impl new|old] [--sizes 512,1024,2048] [--reps N]
 *         [--min-time SECONDS]
 *
 * Peak: a register-only loop of 16 independent FMA chains (vector width of
 * the best ISA the CPU has) = what a core can issue.  GEMM:
 * tcrt_fast_matmul on square f32 matrices, best of N runs (at least
 * --reps, and at least --min-time seconds of runs per case), with 1 and 2
 * threads.  1 thread: the process's CPU time, so that other load on the
 * machine does not count; 2 threads: wall time (the process's CPU time
 * divided by 2 undercounts a run in which one thread sleeps while the other
 * works: a 2-thread 1024^3 run read 108% of the peak that way).
 * The peak a GEMM row is set against is measured in the same window as the
 * row: before every timed run of the case, the FMA loop runs for about
 * 10 ms on as many threads as the case (through the runtime's pool, timed
 * as the case is), and the row's peak is the best of those; this host's
 * speed drifts by up to 1.5x over minutes, so one peak taken at the start
 * of the binary's run could fall in another phase than a row measured
 * seconds later.  The peak at the start is printed too, for context.
 * GFLOP/s = flops / seconds, %peak = GFLOP/s / that peak (GEMM rows), GFLOP/s /
 * (the start peak x threads) (conv rows).  Conv: tcrt_fast_conv2d with packed
 * weights on ResNet-like 3x3 and 1x1 layers.  GFLOP/s count 2 flops per
 * multiply-add.
 */
#include "fast_conv_int.h"
#include "tcrt_kernels.h"
#include "tcrt_pool.h"

#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static bool use_cpu_time;     /* the process's CPU time (1 thread), else wall time */
static double min_time = 0.5; /* seconds of timed runs per case, at least */

static double now(void)
{
    struct timespec ts;
    clock_gettime(use_cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
/* AVX2 has 16 ymm registers: 16 chains plus the two constants spilled to the
 * stack every iteration (the probe read 58 GFLOP/s on a Zen 3 core whose
 * SGEMM ran at 80); 12 chains cover 2 FMA ports x 4-5 cycles of latency. */
#define CHAINS12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

/* Flops of iters x 16 FMAs on 16 lanes (AVX-512) or 8 (AVX2). */
__attribute__((target("avx512f,fma"))) static double peak512(long iters)
{
    __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
#define DECL(i) __m512 v##i = _mm512_set1_ps((float)i);
    CHAINS(DECL)
#undef DECL
    for (long i = 0; i < iters; i++) {
#define STEP(i) v##i = _mm512_fmadd_ps(v##i, m, a);
        CHAINS(STEP)
#undef STEP
        __asm__ volatile("" : "+v"(v0), "+v"(v1), "+v"(v2), "+v"(v3));
    }
    float sum = 0;
#define SUM(i) sum += _mm512_reduce_add_ps(v##i);
    CHAINS(SUM)
#undef SUM
    __asm__ volatile("" : : "r"(sum));
    return iters * 16.0 * 16 * 2;
}

__attribute__((target("avx2,fma"))) static double peak256(long iters)
{
    __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
#define DECL(i) __m256 v##i = _mm256_set1_ps((float)i);
    CHAINS12(DECL)
#undef DECL
    for (long i = 0; i < iters; i++) {
#define STEP(i) v##i = _mm256_fmadd_ps(v##i, m, a);
        CHAINS12(STEP)
#undef STEP
        __asm__ volatile("" : "+x"(v0), "+x"(v1), "+x"(v2), "+x"(v3));
    }
    float out[8], sum = 0;
#define SUM(i) _mm256_storeu_ps(out, v##i), sum += out[0];
    CHAINS12(SUM)
#undef SUM
    __asm__ volatile("" : : "r"(sum));
    return iters * 12.0 * 8 * 2;
}

/* One FMA-loop run per task (2 tasks: one per thread of 2); ctx: bool wide,
 * the steps, then the tasks' flops. */
typedef struct PeakJob {
    bool wide;
    long iters;
    double flops[2];
} PeakJob;

static void peak_task(void *ctx, int64_t task, int tid)
{
    (void)tid;
    PeakJob *j = ctx;
    j->flops[task] = j->wide ? peak512(j->iters) : peak256(j->iters);
}

/* GFLOP/s of one FMA-loop run of iters steps on th threads (1: the calling
 * thread; 2: one run per thread of the runtime's pool, at once), timed with
 * now() as the rows are. */
static double fma_rate(bool wide, int th, long iters)
{
    PeakJob j = {wide, iters, {0, 0}};
    double t0 = now();
    if (th == 1)
        peak_task(&j, 0, 0);
    else
        tcrt_parallel_tasks(2, peak_task, &j);
    return (j.flops[0] + j.flops[1]) / (now() - t0) * 1e-9;
}

/* The best of 5 long runs on th threads: the peak printed at the start
 * (th 1: one core at the best ISA; th 2: what the 2 cores give together at
 * the moment, for context; the pool must have 2 threads). */
static double fma_best(bool wide, int th)
{
    double best = 0;
    for (int r = 0; r < 5; r++) {
        double g = fma_rate(wide, th, 20000000);
        best = g > best ? g : best;
    }
    return best;
}

/* The window peak's samples (file comment): one short run (about 10 ms) on
 * th threads. */
static bool peak_wide;
static double fma_sample(int th)
{
    return fma_rate(peak_wide, th, peak_wide ? 5000000 : 10000000);
}

static float *rnd(int64_t n)
{
    float *b = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        b[i] = (float)((i * 7919 % 2001) - 1000) * 1e-3f;
    return b;
}

static tcrt_tensor t2(float *d, int64_t r, int64_t c)
{
    tcrt_tensor t = {d, TCRT_F32, 2, {r, c}};
    return t;
}

/* Calls timed together: about 4 GFLOP (20 ms at 200 GFLOP/s), so that the
 * CPU time of a second thread, accounted at scheduler ticks, is exact
 * enough. */
static int calls_per_rep(double flops)
{
    int n = (int)(4e9 / flops);
    return n < 1 ? 1 : n;
}

/* Best seconds of one matmul n x n x n over at least reps runs and at least
 * min_secs of them, on th threads; *peak: the best FMA-loop sample on th
 * threads, one taken before each timed run (file comment). */
static double time_gemm(int64_t n, int th, int reps, double min_secs, double *peak)
{
    float *a = rnd(n * n), *b = rnd(n * n), *c = malloc((size_t)(n * n) * sizeof(float));
    tcrt_tensor in[2] = {t2(a, n, n), t2(b, n, n)};
    tcrt_tensor out[2] = {t2(c, n, n), {NULL, TCRT_U8, 1, {0}}};
    tcrt_params p;
    memset(&p, 0, sizeof p);
    size_t ws = tcrt_fast_matmul_workspace(in, 2, out, &p);
    out[1].data = malloc(ws ? ws : 1);
    out[1].dims[0] = (int64_t)ws;
    double best = 1e30;
    int inner = calls_per_rep(2.0 * n * n * n);
    double spent = 0;
    *peak = 0;
    for (int r = 0; r < reps || spent < min_secs; r++) {
        double pk = fma_sample(th);
        *peak = pk > *peak ? pk : *peak;
        double t0 = now();
        for (int i = 0; i < inner; i++)
            tcrt_fast_matmul(in, 2, out, 2, &p);
        double t = now() - t0;
        spent += t;
        best = t / inner < best ? t / inner : best;
    }
    free(a), free(b), free(c), free(out[1].data);
    return best;
}

/* Best seconds of a packed conv NHWC [1,hw,hw,cin] -> cout, k x k, stride s, SAME pads
 * (wino: Winograd F(2x2,3x3) weights, k 3 and s 1 only; flops counts the direct
 * convolution's multiply-adds either way), over at least reps runs and at least
 * min_time seconds of them. */
static double time_conv(int64_t hw, int64_t cin, int64_t cout, int64_t k, int64_t s, int wino, int reps,
                        double *flops)
{
    int64_t oh = (hw + s - 1) / s, pad = ((oh - 1) * s + k - hw) / 2;
    pad = pad < 0 ? 0 : pad;
    float *x = rnd(hw * hw * cin), *w = rnd(k * k * cin * cout), *bias = rnd(cout);
    int64_t pk = wino ? wino + 2 : k;
    float *pw = malloc((size_t)tcrt_conv_packed_floats(pk, pk, cin, cout) * sizeof(float));
    float *y = malloc((size_t)(oh * oh * cout) * sizeof(float));
    if (wino)
        tcrt_pack_conv_wino(w, wino, cin, cout, pw);
    else
        tcrt_pack_conv_weights(w, k, k, cin, cout, pw);
    tcrt_tensor in[3] = {{x, TCRT_F32, 4, {1, hw, hw, cin}},
                         {pw, TCRT_F32, 5, {(cout + 15) / 16, pk, pk, cin, 16}},
                         {bias, TCRT_F32, 1, {cout}}};
    tcrt_tensor out[2] = {{y, TCRT_F32, 4, {1, oh, oh, cout}}, {NULL, TCRT_U8, 1, {0}}};
    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = s;
    p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
    p.i[TCRT_CONV_PT] = p.i[TCRT_CONV_PL] = pad;
    p.i[TCRT_CONV_PB] = p.i[TCRT_CONV_PR] = (oh - 1) * s + k - hw - pad < 0 ? 0 : (oh - 1) * s + k - hw - pad;
    p.i[TCRT_CONV_ACT] = TCRT_ACT_RELU;
    p.i[TCRT_CONV_PACKED] = wino == 4 ? TCRT_CONV_PACK_WINO4
                            : wino    ? TCRT_CONV_PACK_WINO
                                      : TCRT_CONV_PACK_DIRECT;
    p.i[TCRT_CONV_COUT] = cout;
    size_t ws = tcrt_fast_conv2d_workspace(in, 3, out, &p);
    out[1].data = malloc(ws ? ws : 1);
    out[1].dims[0] = (int64_t)ws;
    double best = 1e30;
    *flops = 2.0 * oh * oh * cout * k * k * cin;
    int inner = calls_per_rep(*flops);
    double spent = 0;
    for (int r = 0; r < reps || spent < min_time; r++) {
        double t0 = now();
        for (int i = 0; i < inner; i++)
            tcrt_fast_conv2d(in, 3, out, 2, &p);
        double t = now() - t0;
        spent += t;
        best = t / inner < best ? t / inner : best;
    }
    free(x), free(w), free(bias), free(pw), free(y), free(out[1].data);
    return best;
}

int main(int argc, char **argv)
{
    const char *sizes = "256,512,1024,2048";
    bool convs_only = false;
    int reps = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--isa"))
            tcrt_kern_force_isa(!strcmp(argv[i + 1], "avx512") ? TCRT_ISA_AVX512
                                : !strcmp(argv[i + 1], "avx2") ? TCRT_ISA_AVX2
                                                               : TCRT_ISA_PORTABLE);
        else if (!strcmp(argv[i], "--sizes"))
            sizes = argv[i + 1];
        else if (!strcmp(argv[i], "--impl")) /* new: the AVX-512 packed GEMM where it applies; old: without it */
            tcrt_sgemm_enable(strcmp(argv[i + 1], "old") != 0);
        else if (!strcmp(argv[i], "--convs-only"))
            convs_only = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--min-time"))
            min_time = atof(argv[i + 1]);
    }
    __builtin_cpu_init();
    bool wide = __builtin_cpu_supports("avx512f");
    if (!wide && !__builtin_cpu_supports("fma")) {
        printf("no FMA unit: nothing to measure\n");
        return 0;
    }
    peak_wide = wide;
    use_cpu_time = true;
    double peak = fma_best(wide, 1);
    use_cpu_time = false;
    tcrt_set_threads(2);
    double peak2 = fma_best(wide, 2);
    tcrt_set_threads(1);
    int isa = tcrt_kern_isa();
    printf("FMA peak (1 thread, %s): %.1f GFLOP/s; micro-kernel ISA: %s\n", wide ? "avx512" : "avx2", peak,
           isa == TCRT_ISA_AVX512 ? "avx512"
           : isa == TCRT_ISA_AVX2 ? "avx2"
                                  : "portable");
    printf("FMA loop on 2 threads at once: %.1f GFLOP/s (%.1f%% of 2 x the 1-thread peak)\n", peak2,
           100 * peak2 / (2 * peak));
    printf("sgemm rows: %%peak against the FMA loop on as many threads, measured alongside the row (its "
           "GFLOP/s in the last column); conv rows: against threads x the 1-thread peak above\n");
    printf("%-28s %8s %10s %8s %10s\n", "case", "threads", "GFLOP/s", "%peak", "peak");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", sizes);
    for (char *tok = convs_only ? NULL : strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int64_t n = atoll(tok);
        for (int th = 1; th <= 2; th++) {
            tcrt_set_threads(th);
            use_cpu_time = th == 1;
            double wpeak;
            time_gemm(n, th, 1, 0, &wpeak); /* warm-up */
            double t = time_gemm(n, th, reps, min_time, &wpeak), gf = 2.0 * n * n * n / t * 1e-9;
            char name[64];
            snprintf(name, sizeof name, "sgemm %lld", (long long)n);
            printf("%-28s %8d %10.1f %7.1f%% %10.1f\n", name, th, gf, 100 * gf / wpeak, wpeak);
        }
    }
    static const int64_t convs[][5] = {{56, 64, 64, 3, 1},
                                       {28, 128, 128, 3, 1},
                                       {14, 256, 256, 3, 1},
                                       {7, 512, 512, 3, 1},
                                       {56, 64, 128, 1, 2},
                                       {7, 512, 512, 1, 1},
                                       /* MobileNetV2's expansions and projections */
                                       {112, 16, 96, 1, 1},
                                       {56, 24, 144, 1, 1},
                                       {56, 144, 24, 1, 1},
                                       /* ResNet's stem: Cin 3 */
                                       {224, 3, 64, 7, 2}};
    for (size_t c = 0; c < sizeof convs / sizeof convs[0]; c++) {
        const int64_t *v = convs[c];
        for (int wino = 0; wino <= (v[3] == 3 && v[4] == 1 ? 4 : 0); wino += 2)
            for (int th = 1; th <= 2; th++) {
                tcrt_set_threads(th);
                use_cpu_time = th == 1;
                double fl, t = time_conv(v[0], v[1], v[2], v[3], v[4], wino, reps, &fl), gf = fl / t * 1e-9;
                char name[64];
                snprintf(name, sizeof name, "conv %lldx%lldx%lld->%lld k%lld s%lld%s", (long long)v[0],
                         (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3], (long long)v[4],
                         wino == 4 ? " wino4"
                         : wino    ? " wino"
                                   : "");
                /* wino: GFLOP/s of the direct convolution's work (effective) */
                printf("%-34s %8d %10.1f %7.1f%%  %.3f ms\n", name, th, gf, 100 * gf / (peak * th), t * 1e3);
            }
    }
    tcrt_set_threads(1);
    return 0;
}
