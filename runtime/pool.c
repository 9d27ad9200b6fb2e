/* runtime/pool.c - the runtime's thread pool: tcrt_parallel_tasks (tcrt_pool.h).
 *
 * Workers 1..n-1 are pthreads created by tcrt_pool_start (called from
 * tcrt_set_threads); the caller of tcrt_parallel_tasks is tid 0.  One job at
 * a time is posted in the Pool below:
 *   - post: the caller writes claim = (gen << 32 | 0), done = 0, fn, ctx, n,
 *     then gen (seq_cst), and wakes sleeping workers (futex on gen);
 *   - take: every thread claims task indices with a CAS on `claim`, which
 *     succeeds only while the high half still holds the job's gen, so a worker
 *     that wakes late (or reads the fields of a job that has since ended) can
 *     never take a task of a later job; it just gets fewer tasks, or none;
 *   - finish: the thread that finishes the last task (done reaches n) stores
 *     gen in `finished` and wakes the caller if it sleeps; the caller waits
 *     for that, not for the workers to check in, so a descheduled worker never
 *     holds up a run.
 * Waiting (a worker for the next job, the caller for the last task) spins for
 * at most TCRT_POOL_SPIN_NS, then sleeps on a futex (Linux) or a condition
 * variable (elsewhere): an idle pool takes no CPU from other processes.  The
 * sleeper counts use the store-then-load pattern on both sides (all seq_cst),
 * so a post never misses a worker that is about to sleep.
 * Nesting: a call from inside a task (or while another thread's job holds the
 * pool) runs its tasks in order on the calling thread, with the calling
 * task's tid (0 outside a task).
 * Exit: the first start registers an atexit handler that stops and joins the
 * workers, so a process that exits with a live pool has no threads (and no
 * thread stacks or TLS blocks) left for valgrind or LeakSanitizer to report;
 * joining is safe there because an idle worker is only ever waiting.  A
 * fork() child starts with no workers (an atfork handler forgets them).
 * Invariants: nothing allocates after tcrt_pool_start; task indices fit in 32
 * bits (larger jobs run serially); tcrt_pool_start is not called while
 * another thread is inside tcrt_parallel_tasks (it waits for the job to end).
 */
#include "tcrt.h"
#include "tcrt_pool.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define TCRT_POOL_SPIN_NS 5000 /* spin this long before sleeping */

typedef struct Pool {
    _Atomic uint32_t gen;      /* job generation; workers wait for it to change */
    _Atomic uint32_t finished; /* gen of the last finished job */
    _Atomic uint64_t claim;    /* (gen << 32) | next task index */
    _Atomic int64_t done;      /* tasks of the current job finished */
    _Atomic(tcrt_task_fn) fn;  /* current job */
    _Atomic(void *) ctx;
    _Atomic int64_t n;
    _Atomic int sleepers;        /* workers in (or entering) a futex wait on gen */
    _Atomic int caller_sleeping; /* the poster waits on `finished` */
    _Atomic int busy;            /* a job is posted (one poster at a time) */
    _Atomic int quit;            /* workers exit at the next gen change */
    int n_workers;               /* running workers (threads - 1) */
    uint32_t start_gen;          /* gen when the workers were created */
    pthread_t th[TCRT_MAX_THREADS];
} Pool;

static Pool pool;
static _Thread_local int cur_tid = -1; /* tid of the task running on this thread, -1 outside tasks */
static bool hooks;                     /* the atexit and atfork handlers are registered */

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

/* Spins until *a != v or TCRT_POOL_SPIN_NS pass; true when it changed. */
static bool spin_while(_Atomic uint32_t *a, uint32_t v)
{
    int64_t t0 = 0;
    for (int i = 0;; i++) {
        if (atomic_load(a) != v)
            return true;
        cpu_relax();
        if ((i & 31) == 31) {
            int64_t t = now_ns();
            if (t0 == 0)
                t0 = t;
            else if (t - t0 > TCRT_POOL_SPIN_NS)
                return false;
        }
    }
}

/* Claims and runs tasks of job g until none is left (or the job changed). */
static void run_tasks(uint32_t g, int tid)
{
    tcrt_task_fn fn = atomic_load(&pool.fn);
    void *ctx = atomic_load(&pool.ctx);
    int64_t n = atomic_load(&pool.n);
    for (;;) {
        uint64_t c = atomic_load(&pool.claim);
        do {
            if ((uint32_t)(c >> 32) != g || (int64_t)(c & 0xffffffffu) >= n)
                return;
        } while (!atomic_compare_exchange_weak(&pool.claim, &c, c + 1));
        /* the CAS saw job g unfinished, so fn, ctx and n above were g's */
        fn(ctx, (int64_t)(c & 0xffffffffu), tid);
        if (atomic_fetch_add(&pool.done, 1) + 1 == n) {
            atomic_store(&pool.finished, g);
            if (atomic_load(&pool.caller_sleeping))
                wake(&pool.finished, 1);
        }
    }
}

static void *worker_main(void *arg)
{
    int tid = (int)(intptr_t)arg;
    uint32_t seen = pool.start_gen;
    cur_tid = tid;
    for (;;) {
        if (!spin_while(&pool.gen, seen)) {
            atomic_fetch_add(&pool.sleepers, 1);
            while (atomic_load(&pool.gen) == seen)
                wait_while(&pool.gen, seen);
            atomic_fetch_sub(&pool.sleepers, 1);
        }
        seen = atomic_load(&pool.gen);
        if (atomic_load(&pool.quit))
            return NULL;
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
    for (int i = 0; i < want; i++) {
        if (pthread_create(&pool.th[i], NULL, worker_main, (void *)(intptr_t)(i + 1)) != 0)
            break;
        pool.n_workers++;
    }
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
    if (n_tasks <= 0 || !fn)
        return;
    int z = 0;
    if (n_tasks == 1 || pool.n_workers == 0 || cur_tid >= 0 || n_tasks > (int64_t)UINT32_MAX ||
        !atomic_compare_exchange_strong(&pool.busy, &z, 1)) {
        run_serial(n_tasks, fn, ctx);
        return;
    }
    uint32_t g = atomic_load(&pool.gen) + 1;
    atomic_store(&pool.claim, (uint64_t)g << 32);
    atomic_store(&pool.done, 0);
    atomic_store(&pool.fn, fn);
    atomic_store(&pool.ctx, ctx);
    atomic_store(&pool.n, n_tasks);
    atomic_store(&pool.gen, g);
    if (atomic_load(&pool.sleepers) > 0)
        wake(&pool.gen, n_tasks - 1 < pool.n_workers ? (int)(n_tasks - 1) : pool.n_workers);

    cur_tid = 0;
    run_tasks(g, 0);
    cur_tid = -1;

    uint32_t f = atomic_load(&pool.finished);
    if (f != g)
        spin_while(&pool.finished, f);
    while ((f = atomic_load(&pool.finished)) != g) {
        atomic_store(&pool.caller_sleeping, 1);
        if (atomic_load(&pool.finished) == f)
            wait_while(&pool.finished, f);
        atomic_store(&pool.caller_sleeping, 0);
    }
    atomic_store(&pool.busy, 0);
}
