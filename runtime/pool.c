/* runtime/pool.c - the runtime's thread pool: tcrt_parallel_tasks (tcrt_pool.h).
 *
 * Workers 1..n-1 are pthreads created by tcrt_pool_start (called from
 * tcrt_set_threads); the caller of tcrt_parallel_tasks is tid 0.  One job at
 * a time is posted in the Pool below:
 *   - post: the caller writes claim, done = 0, fn, ctx, n, then gen
 *     (seq_cst), and wakes sleeping workers (futex on gen);
 *   - take: every thread claims task indices with a CAS on `claim`, which
 *     succeeds only while the high half still holds the job's gen, so a worker
 *     that wakes late (or reads the fields of a job that has since ended) can
 *     never take a task of a later job; it just gets fewer tasks, or none.
 *     The low half is two 16-bit ends, front and back (jobs of up to
 *     CLAIM_TWO_ENDS tasks): even tids take tasks from the front, odd tids
 *     (tcrt_pool_descending) from the back, until the ends meet.  So with two threads the caller
 *     runs the first tasks and the worker the last ones, as a static split
 *     would, and a kernel's consecutive tasks (pixel ranges, Cout blocks)
 *     stay on one core from kernel to kernel: activations stay in that
 *     core's L2 instead of moving between cores, and a Cout-block-major conv
 *     reads each weight panel on one core only (measured: tasks of a 2-thread
 *     ResNet-18 ran ~10-20% slower than alone when handed out in order from
 *     one end).  The split point still moves with the threads' speed (a late
 *     or descheduled thread takes fewer tasks).  Larger jobs: the low half is
 *     the next index, every thread takes from the front;
 *   - finish: the thread that finishes the last task (done reaches n) stores
 *     gen in `finished` and wakes the caller if it sleeps; the caller waits
 *     for that, not for the workers to check in, so a descheduled worker never
 *     holds up a run.
 * Waiting (a worker for the next job, the caller for the last task) spins,
 * then sleeps on a futex (Linux) or a condition variable (elsewhere): an idle
 * pool takes no CPU from other processes.  The spin is adaptive, per thread:
 * TCRT_POOL_SPIN_NS (5 us) normally, TCRT_POOL_SPIN_HOT_NS (200 us) while the
 * thread is "hot", i.e. its previous wait (spin and sleep together) ended
 * within that long window, as it does between the kernels of a running
 * model.  A futex wake costs 10-50 us on a VM, which a model whose kernels
 * take 20-100 us each paid for nearly every kernel (the worker went to sleep
 * while the caller finished its last task); measured on 2 cores: worker
 * start latency 26 -> 4 us per job, MobileNetV2 5.3 -> 4.5 ms at 2 threads.
 * A pool that goes idle spins 200 us once and then sleeps, and the next wait
 * after a sleep spins briefly again.  A busy core is not burnt on spinning:
 * the spin calls sched_yield every TCRT_POOL_YIELD_NS, so a process that
 * wants this core gets it, and a spin that finds it lost the core (a gap of
 * TCRT_POOL_PREEMPT_NS in its clock reads, or a yield that long) sleeps at
 * once and spins only briefly for the next TCRT_POOL_COLD_NS; the dynamic
 * task claim lets the other threads take the tasks of a thread that is
 * off its core.  (Measured with a CPU hog on one of the 2 cores: ResNet-18
 * and MobileNetV2 at 2 threads as before the long spin, within noise.)
 * The sleeper counts use
 * the store-then-load pattern on both sides (all seq_cst), so a post never
 * misses a worker that is about to sleep.
 * Stacking (Linux): on a virtual machine the kernel at times wakes a worker
 * onto the CPU its job was posted from although another CPU is idle
 * (presumably as an idle vCPU the host has descheduled does not count as
 * idle: Linux's vcpu_is_preempted), and there the
 * worker runs only when the caller waits; a short run could end before the
 * load balancer separated them.  A worker that finds itself on the CPU the
 * job was posted from (post_cpu, read with sched_getcpu) therefore moves to
 * the other CPUs of the affinity it started with (sched_setaffinity), when
 * there are as many of those CPUs as threads in the pool (no move when
 * oversubscribed, or under taskset to one CPU).  The caller is never
 * pinned.  Measured on 2 vCPUs, facemesh (93 kernels, about 1.3 ms at 1
 * thread) with --repeat 10 at 2 threads: 8 of 30 runs had the worker
 * stacked (median 1.0-1.33 ms instead of 0.75-0.85); with the move, 0 of
 * 30.  With a CPU hog on either CPU, MobileNetV2 at 2 threads 6.3-7.9 ms
 * before, 5.7-6.7 after.
 * tcrt_parallel_tasks_max: tids at or above the job's max_tids leave it at
 * once (a kernel whose per-thread scratch has fewer slots than threads).
 * Nesting: a call from inside a task (or while another thread's job holds the
 * pool) runs its tasks in order on the calling thread, with the calling
 * task's tid (0 outside a task).
 * Start: tcrt_pool_start returns once every worker it created has begun
 * its loop, so a fork() after it never copies a worker in the middle of its
 * thread start-up.  (Under AddressSanitizer a starting thread holds the
 * sanitizer's allocator lock for a moment: a child forked then found it
 * locked for good, and its own new workers waited on it forever; test_pool's
 * fork case hung in about 1 run of 10 under ASan.)
 * Exit: the first start registers an atexit handler that stops and joins the
 * workers, so a process that exits with a live pool has no threads (and no
 * thread stacks or TLS blocks) left for valgrind or LeakSanitizer to report;
 * joining is safe there because an idle worker is only ever waiting.  A
 * fork() child starts with no workers (an atfork handler forgets them).
 * Invariants: nothing allocates after tcrt_pool_start; task indices fit in 32
 * bits (larger jobs run serially); tcrt_pool_start is not called while
 * another thread is inside tcrt_parallel_tasks (it waits for the job to end).
 */
#ifdef __linux__
#define _GNU_SOURCE /* sched_getcpu, sched_setaffinity, cpu_set_t */
#endif
#include "tcrt.h"
#include "tcrt_pool.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define TCRT_POOL_SPIN_NS 5000       /* spin this long before sleeping */
#define TCRT_POOL_SPIN_HOT_NS 200000 /* ... while the previous wait ended within this */
#define TCRT_POOL_YIELD_NS 20000     /* sched_yield this often while spinning */
#define TCRT_POOL_PREEMPT_NS 50000   /* a spin that lost the core this long ... */
#define TCRT_POOL_COLD_NS 20000000   /* ... spins briefly only, for this long */
#define CLAIM_TWO_ENDS 0xffff        /* jobs of up to this many tasks are claimed from both ends */

typedef struct Pool {
    _Atomic uint32_t gen;      /* job generation; workers wait for it to change */
    _Atomic uint32_t finished; /* gen of the last finished job */
    _Atomic uint64_t claim;    /* (gen << 32) | front << 16 | back, or | next task index */
    _Atomic int64_t done;      /* tasks of the current job finished */
    _Atomic(tcrt_task_fn) fn;  /* current job */
    _Atomic(void *) ctx;
    _Atomic int64_t n;
    _Atomic int max_tids;        /* only tids below this take tasks of the current job */
    _Atomic int sleepers;        /* workers in (or entering) a futex wait on gen */
    _Atomic int caller_sleeping; /* the poster waits on `finished` */
    _Atomic uint32_t fp_mode;    /* the poster's floating-point control (fp_mode_get) */
    _Atomic int busy;            /* a job is posted (one poster at a time) */
    _Atomic int quit;            /* workers exit at the next gen change */
    _Atomic int started;         /* workers of the last tcrt_pool_start that have begun */
    _Atomic int post_cpu;        /* the CPU the current job was posted from (-1: unknown) */
    int n_workers;               /* running workers (threads - 1) */
    uint32_t start_gen;          /* gen when the workers were created */
    pthread_t th[TCRT_MAX_THREADS];
} Pool;

/* A waiting thread's spin state (per thread). */
typedef struct Waiter {
    bool hot;           /* the previous wait ended within TCRT_POOL_SPIN_HOT_NS */
    int64_t cold_until; /* no long spin before this time (the core was taken) */
} Waiter;

static Pool pool;
static _Thread_local int cur_tid = -1; /* tid of the task running on this thread, -1 outside tasks */
static _Thread_local Waiter caller_wait; /* this thread's spin state waiting for a job's end */
static bool hooks;                     /* the atexit and atfork handlers are registered */

/* The calling thread's floating-point control bits: MXCSR without its
 * exception flags (x86: rounding, exception masks, FTZ, DAZ), FPCR
 * (AArch64: rounding, FZ); 0 elsewhere.  Workers take the poster's for each
 * job (tcrt_pool.h), so a caller that flushes subnormals (or rounds
 * otherwise) gets the same arithmetic on every thread. */
#if defined(__x86_64__) || defined(__i386__)
#define FP_MXCSR_FLAGS 0x3fu /* IE DE ZE OE UE PE: sticky status, not control */
static uint32_t fp_mode_get(void)
{
    return _mm_getcsr() & ~FP_MXCSR_FLAGS;
}
static void fp_mode_set(uint32_t m)
{
    _mm_setcsr((_mm_getcsr() & FP_MXCSR_FLAGS) | (m & ~FP_MXCSR_FLAGS));
}
#elif defined(__aarch64__)
static uint32_t fp_mode_get(void)
{
    uint64_t v;
    __asm__ volatile("mrs %0, fpcr" : "=r"(v));
    return (uint32_t)v;
}
static void fp_mode_set(uint32_t m)
{
    uint64_t v = m;
    __asm__ volatile("msr fpcr, %0" : : "r"(v));
}
#else
static uint32_t fp_mode_get(void)
{
    return 0;
}
static void fp_mode_set(uint32_t m)
{
    (void)m;
}
#endif

int tcrt_flush_denormals(int on)
{
#if defined(__x86_64__) || defined(__i386__)
    const uint32_t bits = 0x8040u; /* FTZ (15), DAZ (6) */
#elif defined(__aarch64__)
    const uint32_t bits = 1u << 24; /* FZ */
#else
    const uint32_t bits = 0;
    if (on)
        return -1;
#endif
    uint32_t m = fp_mode_get();
    fp_mode_set(on ? m | bits : m & ~bits);
    return 0;
}

#ifndef __linux__
static pthread_mutex_t fb_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fb_cv = PTHREAD_COND_INITIALIZER;
#endif

/* Sleeps while *a == v (may return early). */
static void wait_while(_Atomic uint32_t *a, uint32_t v)
{
#ifdef __linux__
    syscall(SYS_futex, (uint32_t *)a, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
#else
    pthread_mutex_lock(&fb_mu);
    while (atomic_load(a) == v)
        pthread_cond_wait(&fb_cv, &fb_mu);
    pthread_mutex_unlock(&fb_mu);
#endif
}

/* Wakes up to n threads sleeping in wait_while(a, ...); *a was changed first. */
static void wake(_Atomic uint32_t *a, int n)
{
#ifdef __linux__
    syscall(SYS_futex, (uint32_t *)a, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
#else
    (void)a;
    (void)n;
    pthread_mutex_lock(&fb_mu);
    pthread_cond_broadcast(&fb_cv);
    pthread_mutex_unlock(&fb_mu);
#endif
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

enum { SPIN_CHANGED, SPIN_TIMEOUT, SPIN_PREEMPTED };

/* Spins until *a != v or limit_ns pass since t0 (now_ns() when the wait
 * began), yielding the core every TCRT_POOL_YIELD_NS; SPIN_PREEMPTED when
 * another thread ran on this core meanwhile (a gap of TCRT_POOL_PREEMPT_NS
 * between two looks at the clock, or a sched_yield that long). */
static int spin_while(_Atomic uint32_t *a, uint32_t v, int64_t t0, int64_t limit_ns)
{
    int64_t next_yield = t0 + TCRT_POOL_YIELD_NS, last = t0;
    for (int i = 0;; i++) {
        if (atomic_load(a) != v)
            return SPIN_CHANGED;
        cpu_relax();
        if ((i & 31) == 31) {
            int64_t t = now_ns();
            if (t - last > TCRT_POOL_PREEMPT_NS)
                return SPIN_PREEMPTED;
            if (t - t0 > limit_ns)
                return SPIN_TIMEOUT;
            if (t > next_yield) {
                sched_yield();
                last = now_ns();
                if (last - t > TCRT_POOL_PREEMPT_NS)
                    return atomic_load(a) != v ? SPIN_CHANGED : SPIN_PREEMPTED;
                next_yield = last + TCRT_POOL_YIELD_NS;
            } else {
                last = t;
            }
        }
    }
}

/* Waits while *a == v: spins (long when w is hot and not cold), then
 * sleeps; w->hot becomes whether this wait ended within
 * TCRT_POOL_SPIN_HOT_NS, and a preempted spin turns the long spin off for
 * TCRT_POOL_COLD_NS.  sleepers, when not NULL, counts the thread while it
 * may sleep (the post side wakes only when it is non-zero); NULL: the
 * caller waiting on `finished`. */
static void wait_for_change(_Atomic uint32_t *a, uint32_t v, Waiter *w, _Atomic int *sleepers)
{
    int64_t t0 = now_ns();
    int r = spin_while(a, v, t0, w->hot && t0 >= w->cold_until ? TCRT_POOL_SPIN_HOT_NS : TCRT_POOL_SPIN_NS);
    if (r == SPIN_CHANGED) {
        w->hot = true;
        return;
    }
    if (r == SPIN_PREEMPTED)
        w->cold_until = now_ns() + TCRT_POOL_COLD_NS;
    if (sleepers) {
        atomic_fetch_add(sleepers, 1);
        while (atomic_load(a) == v)
            wait_while(a, v);
        atomic_fetch_sub(sleepers, 1);
    } else {
        while (atomic_load(a) == v) {
            atomic_store(&pool.caller_sleeping, 1);
            if (atomic_load(a) == v)
                wait_while(a, v);
            atomic_store(&pool.caller_sleeping, 0);
        }
    }
    w->hot = now_ns() - t0 <= TCRT_POOL_SPIN_HOT_NS;
}

/* Claims one task of job g (n tasks) for tid into *task; false when none
 * is left or the job changed (file comment: the two ends). */
static bool claim_task(uint32_t g, int64_t n, int tid, int64_t *task)
{
    uint64_t c = atomic_load(&pool.claim), next;
    do {
        if ((uint32_t)(c >> 32) != g)
            return false;
        if (n <= CLAIM_TWO_ENDS) {
            uint64_t front = (c >> 16) & 0xffffu, back = c & 0xffffu;
            if (front >= back)
                return false;
            if (tcrt_pool_descending(tid))
                *task = (int64_t)--back;
            else
                *task = (int64_t)front++;
            next = (c & ~(uint64_t)0xffffffffu) | front << 16 | back;
        } else {
            *task = (int64_t)(c & 0xffffffffu);
            if (*task >= n)
                return false;
            next = c + 1;
        }
    } while (!atomic_compare_exchange_weak(&pool.claim, &c, next));
    return true;
}

/* Claims and runs tasks of job g until none is left (or the job changed). */
static void run_tasks(uint32_t g, int tid)
{
    tcrt_task_fn fn = atomic_load(&pool.fn);
    void *ctx = atomic_load(&pool.ctx);
    int64_t n = atomic_load(&pool.n), task;
    /* a successful claim saw job g unfinished, so fn, ctx, n and max_tids
     * above were g's */
    if (tid >= atomic_load(&pool.max_tids))
        return;
    while (claim_task(g, n, tid, &task)) {
        fn(ctx, task, tid);
        if (atomic_fetch_add(&pool.done, 1) + 1 == n) {
            atomic_store(&pool.finished, g);
            if (atomic_load(&pool.caller_sleeping))
                wake(&pool.finished, 1);
        }
    }
}

/* Stacking (file comment): a worker that finds itself on the CPU its job
 * was posted from moves to the other CPUs of its starting affinity, when
 * there are enough of them for every thread of the pool.  *cpus is that
 * starting set (read once per worker). */
#ifdef __linux__
static void leave_poster_cpu(const cpu_set_t *cpus)
{
    int cpu = sched_getcpu(), poster = atomic_load(&pool.post_cpu);
    if (cpu < 0 || cpu != poster || poster >= CPU_SETSIZE || !CPU_ISSET(poster, cpus) ||
        CPU_COUNT(cpus) < pool.n_workers + 1)
        return;
    cpu_set_t others = *cpus;
    CPU_CLR(poster, &others);
    (void)sched_setaffinity(0, sizeof others, &others); /* on failure it stays: no worse */
}
#endif

static void *worker_main(void *arg)
{
    int tid = (int)(intptr_t)arg;
    uint32_t seen = pool.start_gen, fp = fp_mode_get();
    Waiter w = {false, 0};
#ifdef __linux__
    cpu_set_t cpus; /* the affinity this worker started with (leave_poster_cpu) */
    bool unstack = sched_getaffinity(0, sizeof cpus, &cpus) == 0;
#endif
    cur_tid = tid;
    atomic_fetch_add(&pool.started, 1);
    for (;;) {
        wait_for_change(&pool.gen, seen, &w, &pool.sleepers);
        seen = atomic_load(&pool.gen);
        if (atomic_load(&pool.quit))
            return NULL;
        /* the poster's rounding and subnormal mode (stored before gen) */
        uint32_t want = atomic_load(&pool.fp_mode);
        if (want != fp)
            fp_mode_set(fp = want);
#ifdef __linux__
        if (unstack)
            leave_poster_cpu(&cpus);
#endif
        run_tasks(seen, tid);
    }
}

static void acquire_pool(void)
{
    int z = 0;
    while (!atomic_compare_exchange_weak(&pool.busy, &z, 1)) {
        z = 0;
        sched_yield();
    }
}

/* Stops and joins every worker; the caller holds `busy`. */
static void stop_workers(void)
{
    if (pool.n_workers == 0)
        return;
    atomic_store(&pool.quit, 1);
    uint32_t g = atomic_load(&pool.gen) + 1;
    atomic_store(&pool.gen, g);
    atomic_store(&pool.finished, g);
    wake(&pool.gen, INT_MAX);
    for (int i = 0; i < pool.n_workers; i++)
        pthread_join(pool.th[i], NULL);
    pool.n_workers = 0;
    atomic_store(&pool.quit, 0);
}

/* A child of fork() has none of the parent's workers: forget them. */
static void reset_in_child(void)
{
    pool.n_workers = 0;
    atomic_store(&pool.busy, 0);
    atomic_store(&pool.sleepers, 0);
    atomic_store(&pool.caller_sleeping, 0);
    atomic_store(&pool.quit, 0);
    atomic_store(&pool.finished, atomic_load(&pool.gen));
    cur_tid = -1;
}

static void stop_at_exit(void)
{
    if (cur_tid > 0) /* exit() called from inside a task on a worker */
        return;
    acquire_pool();
    stop_workers();
    atomic_store(&pool.busy, 0);
}

int tcrt_pool_start(int n_threads)
{
    if (cur_tid >= 0) /* from inside a task: keep the running pool */
        return pool.n_workers + 1;
    int want = n_threads < 1 ? 0 : (n_threads > TCRT_MAX_THREADS ? TCRT_MAX_THREADS : n_threads) - 1;
    if (want == pool.n_workers)
        return want + 1;
    acquire_pool();
    stop_workers();
    if (want > 0 && !hooks)
        hooks = atexit(stop_at_exit) == 0 && pthread_atfork(NULL, NULL, reset_in_child) == 0;
    pool.start_gen = atomic_load(&pool.gen);
    atomic_store(&pool.started, 0);
    for (int i = 0; i < want; i++) {
        if (pthread_create(&pool.th[i], NULL, worker_main, (void *)(intptr_t)(i + 1)) != 0)
            break;
        pool.n_workers++;
    }
    /* every worker past its start-up (file comment: Start) */
    while (atomic_load(&pool.started) < pool.n_workers)
        sched_yield();
    atomic_store(&pool.busy, 0);
    return pool.n_workers + 1;
}

static void run_serial(int64_t n_tasks, tcrt_task_fn fn, void *ctx)
{
    int saved = cur_tid, tid = cur_tid >= 0 ? cur_tid : 0;
    cur_tid = tid;
    for (int64_t t = 0; t < n_tasks; t++)
        fn(ctx, t, tid);
    cur_tid = saved;
}

void tcrt_parallel_tasks(int64_t n_tasks, tcrt_task_fn fn, void *ctx)
{
    tcrt_parallel_tasks_max(n_tasks, TCRT_MAX_THREADS, fn, ctx);
}

void tcrt_parallel_tasks_max(int64_t n_tasks, int max_threads, tcrt_task_fn fn, void *ctx)
{
    if (n_tasks <= 0 || !fn)
        return;
    int z = 0;
    if (n_tasks == 1 || pool.n_workers == 0 || cur_tid >= 0 || n_tasks > (int64_t)UINT32_MAX ||
        max_threads <= 1 || !atomic_compare_exchange_strong(&pool.busy, &z, 1)) {
        run_serial(n_tasks, fn, ctx);
        return;
    }
    uint32_t g = atomic_load(&pool.gen) + 1;
    atomic_store(&pool.claim, (uint64_t)g << 32 | (n_tasks <= CLAIM_TWO_ENDS ? (uint64_t)n_tasks : 0));
    atomic_store(&pool.done, 0);
    atomic_store(&pool.fn, fn);
    atomic_store(&pool.ctx, ctx);
    atomic_store(&pool.n, n_tasks);
    atomic_store(&pool.max_tids, max_threads);
    atomic_store(&pool.fp_mode, fp_mode_get());
#ifdef __linux__
    atomic_store(&pool.post_cpu, sched_getcpu());
#endif
    atomic_store(&pool.gen, g);
    /* (the futex wakes any sleepers, not the tids below max_threads: as many
     * as without the limit, and the others go back to waiting) */
    if (atomic_load(&pool.sleepers) > 0)
        wake(&pool.gen, n_tasks - 1 < pool.n_workers ? (int)(n_tasks - 1) : pool.n_workers);

    cur_tid = 0;
    run_tasks(g, 0);
    cur_tid = -1;

    /* finished only moves to g (the job is ours), so wait while it holds
     * the previous value */
    uint32_t f = atomic_load(&pool.finished);
    if (f != g)
        wait_for_change(&pool.finished, f, &caller_wait, NULL);
    atomic_store(&pool.busy, 0);
}
