/* benchmarks/hostprobe.c - how much of this machine's cores a benchmark gets
 * right now (bench.js builds it with `cc -O2 -march=native` and runs it
 * before every group of measurements).
 *
 * On a virtual machine the host decides where the vCPUs run: measured on the
 * 2-vCPU benchmark machine, for minutes at a time both vCPUs ran on the two
 * hyperthreads of one physical core (an FMA loop reached 179 GFLOP/s alone
 * on either vCPU and 88 on each when both ran it), and at other times a
 * vCPU's sibling hyperthread was busy with another guest.  The guest's
 * /proc/stat shows neither (no steal time), so the harness's check for other
 * processes cannot see it; this probe measures it directly:
 *   - solo: an FMA loop (12 independent chains of the widest vectors
 *     -march=native gives) on each CPU in turn, pinned, the others idle;
 *   - together: the same loop on every CPU at once, started together.
 * Each figure is the best of REPS runs of ITERS iterations (0.4 ms each on
 * a 3 GHz core with two 512-bit FMA ports), in GFLOP/s.  Output, one line:
 *   hostprobe solo G0 G1 ... together G0 G1 ... [roundtrip NS]
 * With independent cores `together` matches `solo`; with two vCPUs on one
 * core each gets about half.
 * With 2 CPUs or more it also measures how far apart CPUs 0 and 1 are: a
 * cache line passed back and forth between a thread pinned on each (one
 * stores, the other waits for the store and answers), the best of REPS runs
 * of RT_ITERS round trips, in ns, appended as ` roundtrip NS`.  On the
 * benchmark machine it reads 130-180 ns for minutes at a time and 420-480
 * ns at others (the host moves the vCPUs; guessed: onto cores that share a
 * last-level cache, or not), and every exchange of data between the
 * threads of a 2-thread run costs accordingly.
 * The whole probe takes about 60 ms on 2 CPUs.  Exit status 1 when a CPU
 * cannot be pinned for the FMA loops (the round trip is left out when its
 * threads cannot be).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 64
#define CHAINS 12
enum { ITERS = 200000, REPS = 5, RT_ITERS = 20000 };

typedef float vf __attribute__((vector_size(64)));

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static bool pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return sched_setaffinity(0, sizeof s, &s) == 0;
}

/* Best GFLOP/s of REPS runs of the FMA loop on the calling thread. */
static double fma_rate(void)
{
    vf x[CHAINS], m, b;
    for (int k = 0; k < (int)(sizeof(vf) / sizeof(float)); k++)
        m[k] = 0.999f, b[k] = 1e-4f;
    for (int i = 0; i < CHAINS; i++)
        for (int k = 0; k < (int)(sizeof(vf) / sizeof(float)); k++)
            x[i][k] = (float)i * 1e-3f;
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        for (int it = 0; it < ITERS; it++) {
#pragma GCC unroll 12
            for (int i = 0; i < CHAINS; i++)
                x[i] = x[i] * m + b;
        }
        double t = now_s() - t0;
        best = t < best ? t : best;
    }
    float sink = 0;
    for (int i = 0; i < CHAINS; i++)
        sink += x[i][0];
    if (sink == 12345.0f) /* never: uses the result */
        puts("");
    return (double)ITERS * CHAINS * (double)(sizeof(vf) / sizeof(float)) * 2.0 / best * 1e-9;
}

typedef struct Arg {
    int cpu;
    bool ok;
    double rate;
} Arg;

static atomic_int ready;
static int n_threads;

static void *together(void *p)
{
    Arg *a = p;
    a->ok = pin(a->cpu);
    atomic_fetch_add(&ready, 1);
    while (atomic_load(&ready) < n_threads) /* start at once */
        ;
    a->rate = fma_rate();
    return NULL;
}

/* Round trips: the line `ball` goes from CPU 0 (odd values) to CPU 1 (even
 * values) and back. */
static _Alignas(64) atomic_uint ball;
static _Alignas(64) atomic_int rt_ok;

static void *rt_answer(void *p)
{
    (void)p;
    if (!pin(1)) {
        atomic_store(&rt_ok, -1);
        return NULL;
    }
    atomic_store(&rt_ok, 1);
    for (unsigned i = 0; i < (unsigned)(REPS * RT_ITERS); i++) {
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 1)
            ;
        atomic_store_explicit(&ball, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

/* Best ns per round trip between CPUs 0 and 1; negative when they cannot
 * be pinned. */
static double round_trip(void)
{
    pthread_t th;
    if (!pin(0) || pthread_create(&th, NULL, rt_answer, NULL) != 0)
        return -1;
    while (atomic_load(&rt_ok) == 0)
        ;
    double best = 1e30;
    if (atomic_load(&rt_ok) > 0) {
        unsigned i = 0;
        for (int r = 0; r < REPS; r++) {
            double t0 = now_s();
            for (int k = 0; k < RT_ITERS; k++, i++) {
                atomic_store_explicit(&ball, 2 * i + 1, memory_order_release);
                while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 2)
                    ;
            }
            double t = now_s() - t0;
            best = t < best ? t : best;
        }
    }
    pthread_join(th, NULL);
    return atomic_load(&rt_ok) > 0 ? best / RT_ITERS * 1e9 : -1;
}

int main(void)
{
    int n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    n = n < 1 ? 1 : n > MAX_CPUS ? MAX_CPUS : n;
    double solo[MAX_CPUS];
    for (int c = 0; c < n; c++) {
        if (!pin(c)) {
            fprintf(stderr, "hostprobe: cannot run on CPU %d\n", c);
            return 1;
        }
        solo[c] = fma_rate();
    }
    Arg args[MAX_CPUS];
    pthread_t th[MAX_CPUS];
    n_threads = n;
    for (int c = 0; c < n; c++) {
        args[c] = (Arg){c, false, 0};
        if (pthread_create(&th[c], NULL, together, &args[c]) != 0) {
            fprintf(stderr, "hostprobe: cannot start a thread\n");
            return 1;
        }
    }
    bool ok = true;
    for (int c = 0; c < n; c++) {
        pthread_join(th[c], NULL);
        ok = ok && args[c].ok;
    }
    if (!ok) {
        fprintf(stderr, "hostprobe: cannot pin a thread\n");
        return 1;
    }
    printf("hostprobe solo");
    for (int c = 0; c < n; c++)
        printf(" %.1f", solo[c]);
    printf(" together");
    for (int c = 0; c < n; c++)
        printf(" %.1f", args[c].rate);
    double rt = n >= 2 ? round_trip() : -1;
    if (rt >= 0)
        printf(" roundtrip %.0f", rt);
    else if (n >= 2)
        fprintf(stderr, "hostprobe: cannot pin the round-trip threads (no round trip)\n");
    printf("\n");
    return 0;
}
