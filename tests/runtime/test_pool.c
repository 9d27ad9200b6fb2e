/* test_pool.c - Check suite: the runtime thread pool (tcrt_parallel_tasks).
 *
 * Cases: every task runs exactly once (n = 0, 1, 2, 3, 1000 with 1, 2 and 4
 * threads), tids lie in [0, threads) and no two tasks ever run on the same
 * tid at once (a per-tid atomic flag set on entry and cleared on exit: an
 * entry that finds it set is a collision); a call from inside a task runs
 * its tasks in order, on the same OS thread, with the outer task's tid;
 * tcrt_set_threads up and down between jobs; two application threads
 * posting jobs at once (one gets the pool, the other runs serially: all
 * tasks still once each); idle workers sleep (the process's CPU time over a
 * 100 ms pause with 4 threads is far below the wall time; a spinning pool
 * would use about 300 ms); a fork() child of a process with a live pool runs
 * jobs and starts its own pool; no allocation inside tcrt_parallel_tasks;
 * jobs around 65535 tasks (the largest claimed from both ends, runtime/pool.c)
 * still run every task once; with 2 threads, tid 0 runs a prefix of the
 * tasks and tid 1 the rest (the caller takes from the front, the worker
 * from the back); Linux: a worker woken on the CPU its job was posted from
 * moves to another CPU of its starting affinity (the caller pinned to the
 * worker's CPU, the next job's worker task runs on another CPU), and keeps
 * its mask when the pool has more threads than CPUs.
 * Allocations are counted by alloc_count.h (every allocation of every
 * thread); that case is compiled out under AddressSanitizer, whose allocator
 * cannot be replaced.
 */
#ifdef __linux__
#define _GNU_SOURCE /* sched_getcpu, sched_setaffinity, cpu_set_t */
#endif
#include "tcrt.h"
#include "tcrt_pool.h"

#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc_count.h"

/* ---- a job that checks itself ---- */

#define MAX_TASKS 1000

typedef struct Job {
    int threads;                         /* tids must be below this */
    atomic_int runs[MAX_TASKS];          /* times each task ran */
    atomic_int on_tid[TCRT_MAX_THREADS]; /* 1 while a task runs on that tid */
    atomic_int bad_tid, collisions;
    atomic_int used_tid[TCRT_MAX_THREADS];
} Job;

static void busy_work(int64_t t)
{
    volatile uint64_t x = (uint64_t)t; /* unsigned: wraps without overflow */
    for (int i = 0; i < 200; i++)
        x = x * 3 + 1;
}

static void check_task(void *ctx, int64_t task, int tid)
{
    Job *j = ctx;
    if (tid < 0 || tid >= j->threads || task < 0 || task >= MAX_TASKS) {
        atomic_fetch_add(&j->bad_tid, 1);
        return;
    }
    if (atomic_exchange(&j->on_tid[tid], 1) != 0)
        atomic_fetch_add(&j->collisions, 1);
    atomic_store(&j->used_tid[tid], 1);
    atomic_fetch_add(&j->runs[task], 1);
    busy_work(task);
    atomic_store(&j->on_tid[tid], 0);
}

/* Runs n tasks of check_task and checks every one ran once. */
static void run_checked(int64_t n, int threads)
{
    static Job j;
    memset(&j, 0, sizeof j);
    j.threads = threads;
    tcrt_parallel_tasks(n, check_task, &j);
    ck_assert_int_eq(atomic_load(&j.bad_tid), 0);
    ck_assert_int_eq(atomic_load(&j.collisions), 0);
    int64_t t = 0; /* first wrong count (one assertion: Check's are slow in a loop) */
    while (t < MAX_TASKS && atomic_load(&j.runs[t]) == (t < n ? 1 : 0))
        t++;
    ck_assert_msg(t == MAX_TASKS, "n=%lld threads=%d: task %lld ran %d times", (long long)n, threads,
                  (long long)t, t < MAX_TASKS ? atomic_load(&j.runs[t]) : 0);
}

START_TEST(pool_every_task_once)
{
    static const int64_t ns[] = {0, 1, 2, 3, 1000};
    static const int threads[] = {1, 2, 4};
    for (size_t t = 0; t < 3; t++) {
        tcrt_set_threads(threads[t]);
        ck_assert_int_eq(tcrt_get_threads(), threads[t]);
        for (int rep = 0; rep < 20; rep++)
            for (size_t i = 0; i < 5; i++)
                run_checked(ns[i], threads[t]);
    }
    tcrt_set_threads(1);
}
END_TEST

/* tcrt_parallel_tasks_max: with 4 threads and a limit of 2 (and 1), every
 * task runs once and only tids below the limit run them; with a limit of 2
 * both take part (retried, as below: with 4 threads on a busy 2-core
 * machine tid 1 may stay off a core for 100 jobs in a row, so the jobs go
 * on, every one still checked, until it has taken part). */
START_TEST(pool_max_threads)
{
    tcrt_set_threads(4);
    static Job j;
    bool both = false;
    for (int rep = 0; rep < 200 || (!both && rep < 4000); rep++) {
        int limit = rep % 2 ? 1 : 2;
        memset(&j, 0, sizeof j);
        j.threads = limit;
        tcrt_parallel_tasks_max(MAX_TASKS, limit, check_task, &j);
        ck_assert_int_eq(atomic_load(&j.bad_tid), 0);
        ck_assert_int_eq(atomic_load(&j.collisions), 0);
        int64_t t = 0;
        while (t < MAX_TASKS && atomic_load(&j.runs[t]) == 1)
            t++;
        ck_assert_msg(t == MAX_TASKS, "limit %d: task %lld ran %d times", limit, (long long)t,
                      t < MAX_TASKS ? atomic_load(&j.runs[t]) : 0);
        both |= limit == 2 && atomic_load(&j.used_tid[0]) && atomic_load(&j.used_tid[1]);
    }
    ck_assert_msg(both, "with a limit of 2, tid 1 never ran a task");
    /* the next unlimited job still uses every thread */
    memset(&j, 0, sizeof j);
    j.threads = 4;
    tcrt_parallel_tasks(MAX_TASKS, check_task, &j);
    ck_assert_int_eq(atomic_load(&j.bad_tid), 0);
    tcrt_set_threads(1);
}
END_TEST

/* With several threads and many tasks, more than one tid takes part (the
 * workers do run tasks); retried, since a busy machine may leave one idle. */
START_TEST(pool_workers_take_tasks)
{
    tcrt_set_threads(2);
    static Job j;
    bool both = false;
    for (int rep = 0; rep < 200 && !both; rep++) {
        memset(&j, 0, sizeof j);
        j.threads = 2;
        tcrt_parallel_tasks(MAX_TASKS, check_task, &j);
        both = atomic_load(&j.used_tid[0]) && atomic_load(&j.used_tid[1]);
    }
    ck_assert_msg(both, "worker tid 1 never ran a task");
    tcrt_set_threads(1);
}
END_TEST

/* ---- large jobs, and the two ends ---- */

#define BIG_TASKS 70000

typedef struct Big {
    atomic_uchar runs[BIG_TASKS];  /* times each task ran (at most 255 counted) */
    atomic_schar tid_of[BIG_TASKS]; /* tid that ran it */
} Big;

static void big_task(void *ctx, int64_t task, int tid)
{
    Big *b = ctx;
    atomic_fetch_add(&b->runs[task], 1);
    atomic_store(&b->tid_of[task], (signed char)tid);
}

/* big_task made slower (a few us), so that the worker takes part */
static void big_slow_task(void *ctx, int64_t task, int tid)
{
    for (int i = 0; i < 10; i++)
        busy_work(task);
    big_task(ctx, task, tid);
}

/* Jobs of 65534..65537 and BIG_TASKS tasks on 2 threads: each task once. */
START_TEST(pool_large_jobs_every_task_once)
{
    static const int64_t ns[] = {65534, 65535, 65536, 65537, BIG_TASKS};
    static Big b;
    tcrt_set_threads(2);
    for (size_t i = 0; i < 5; i++) {
        memset(&b, 0, sizeof b);
        tcrt_parallel_tasks(ns[i], big_task, &b);
        int64_t t = 0;
        while (t < BIG_TASKS && atomic_load(&b.runs[t]) == (t < ns[i] ? 1 : 0))
            t++;
        ck_assert_msg(t == BIG_TASKS, "n=%lld: task %lld ran %d times", (long long)ns[i], (long long)t,
                      t < BIG_TASKS ? atomic_load(&b.runs[t]) : 0);
    }
    tcrt_set_threads(1);
}
END_TEST

/* With 2 threads, the tasks tid 0 ran are [0, k) and tid 1's are [k, n). */
START_TEST(pool_two_threads_split_prefix_suffix)
{
    static Big b;
    tcrt_set_threads(2);
    for (int rep = 0; rep < 50; rep++) {
        int64_t n = 16 + rep * 7;
        memset(&b, 0, sizeof b);
        tcrt_parallel_tasks(n, big_slow_task, &b);
        int64_t k = 0;
        while (k < n && atomic_load(&b.tid_of[k]) == 0)
            k++;
        int64_t t = k;
        while (t < n && atomic_load(&b.tid_of[t]) == 1)
            t++;
        ck_assert_msg(t == n, "n=%lld: tid 0 ran [0, %lld), then task %lld ran on tid %d", (long long)n,
                      (long long)k, (long long)t, t < n ? atomic_load(&b.tid_of[t]) : -1);
    }
    tcrt_set_threads(1);
}
END_TEST

/* ---- nesting ---- */

typedef struct Nest {
    pthread_t outer_thread[8];
    int outer_tid[8];
    int64_t inner_seen[8][5]; /* inner task index in call order */
    int inner_count[8];
    atomic_int mismatch;
} Nest;

typedef struct Inner {
    Nest *nest;
    int64_t outer;
} Inner;

static void inner_task(void *ctx, int64_t task, int tid)
{
    Inner *in = ctx;
    Nest *s = in->nest;
    if (!pthread_equal(pthread_self(), s->outer_thread[in->outer]) || tid != s->outer_tid[in->outer])
        atomic_fetch_add(&s->mismatch, 1);
    if (s->inner_count[in->outer] < 5)
        s->inner_seen[in->outer][s->inner_count[in->outer]++] = task;
}

static void outer_task(void *ctx, int64_t task, int tid)
{
    Nest *s = ctx;
    s->outer_thread[task] = pthread_self();
    s->outer_tid[task] = tid;
    Inner in = {s, task};
    tcrt_parallel_tasks(5, inner_task, &in);
}

START_TEST(pool_nested_runs_serially)
{
    for (int threads = 1; threads <= 4; threads *= 2) {
        tcrt_set_threads(threads);
        static Nest s;
        memset(&s, 0, sizeof s);
        tcrt_parallel_tasks(8, outer_task, &s);
        ck_assert_int_eq(atomic_load(&s.mismatch), 0);
        for (int o = 0; o < 8; o++) {
            ck_assert_int_eq(s.inner_count[o], 5);
            for (int k = 0; k < 5; k++)
                ck_assert_int_eq(s.inner_seen[o][k], k);
        }
    }
    tcrt_set_threads(1);
}
END_TEST

/* ---- thread count changes ---- */

START_TEST(pool_set_threads_changes)
{
    static const int seq[] = {1, 3, 2, 4, 4, 1, 2, 16, 0, 2, 1};
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        tcrt_set_threads(seq[i]);
        int want = seq[i] < 1 ? 1 : seq[i];
        ck_assert_int_eq(tcrt_get_threads(), want);
        run_checked(1000, want);
        run_checked(3, want);
    }
}
END_TEST

/* ---- two application threads ---- */

static void *poster(void *arg)
{
    Job *j = arg;
    for (int rep = 0; rep < 200; rep++) {
        for (int t = 0; t < MAX_TASKS; t++)
            atomic_store(&j->runs[t], 0);
        tcrt_parallel_tasks(MAX_TASKS, check_task, j);
        for (int t = 0; t < MAX_TASKS; t++)
            if (atomic_load(&j->runs[t]) != 1)
                atomic_fetch_add(&j->bad_tid, 1000);
    }
    return NULL;
}

START_TEST(pool_two_posters)
{
    tcrt_set_threads(2);
    static Job a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.threads = b.threads = 2;
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, poster, &a), 0);
    poster(&b);
    pthread_join(t, NULL);
    ck_assert_int_eq(atomic_load(&a.bad_tid) + atomic_load(&b.bad_tid), 0);
    tcrt_set_threads(1);
}
END_TEST

/* ---- idle workers sleep ---- */

static double seconds(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

START_TEST(pool_idle_workers_sleep)
{
    tcrt_set_threads(4);
    run_checked(1000, 4);
    double c0 = seconds(CLOCK_PROCESS_CPUTIME_ID), w0 = seconds(CLOCK_MONOTONIC);
    struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
    double cpu = seconds(CLOCK_PROCESS_CPUTIME_ID) - c0, wall = seconds(CLOCK_MONOTONIC) - w0;
    ck_assert_msg(cpu < 0.25 * wall, "idle pool used %.1f ms of CPU in %.1f ms", cpu * 1e3, wall * 1e3);
    run_checked(1000, 4); /* and wakes up again */
    tcrt_set_threads(1);
}
END_TEST

/* ---- fork ---- */

/* A child of fork() has no workers: its jobs still run (on the caller), and
 * it can start a new pool and exit (joining it) cleanly. */
START_TEST(pool_fork_child)
{
    tcrt_set_threads(2);
    run_checked(1000, 2);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        static Job j;
        j.threads = 2;
        tcrt_parallel_tasks(MAX_TASKS, check_task, &j);
        int bad = atomic_load(&j.bad_tid) + atomic_load(&j.collisions);
        for (int t = 0; t < MAX_TASKS; t++)
            bad += atomic_load(&j.runs[t]) != 1;
        tcrt_set_threads(3);
        memset(&j, 0, sizeof j);
        j.threads = 3;
        tcrt_parallel_tasks(MAX_TASKS, check_task, &j);
        for (int t = 0; t < MAX_TASKS; t++)
            bad += atomic_load(&j.runs[t]) != 1;
        exit(bad ? 3 : 0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    run_checked(1000, 2);
    tcrt_set_threads(1);
}
END_TEST

/* ---- stacking (Linux) ---- */

#ifdef __linux__
/* A job of `threads` tasks, each held until every task has begun (so every
 * thread holds one; 2 s at most), that records where each tid ran: its CPU
 * and whether `cpu` was in its affinity mask. */
typedef struct Where {
    int threads, cpu;
    atomic_int begun;
    atomic_int on_cpu[TCRT_MAX_THREADS];  /* CPU + 1; 0: the tid ran no task */
    atomic_int may_use[TCRT_MAX_THREADS]; /* `cpu` in the tid's mask + 1 */
} Where;

static void where_task(void *ctx, int64_t task, int tid)
{
    Where *w = ctx;
    (void)task;
    atomic_fetch_add(&w->begun, 1);
    double t0 = seconds(CLOCK_MONOTONIC);
    while (atomic_load(&w->begun) < w->threads && seconds(CLOCK_MONOTONIC) - t0 < 2.0)
        ;
    cpu_set_t m;
    CPU_ZERO(&m);
    (void)sched_getaffinity(0, sizeof m, &m);
    atomic_store(&w->may_use[tid], CPU_ISSET(w->cpu, &m) ? 2 : 1);
    atomic_store(&w->on_cpu[tid], sched_getcpu() + 1);
}

static void run_where(Where *w, int threads, int cpu)
{
    memset(w, 0, sizeof *w);
    w->threads = threads;
    w->cpu = cpu;
    tcrt_parallel_tasks(threads, where_task, w);
}

/* The caller pinned to the CPU a worker runs on: the next job's worker task
 * runs on another CPU (the worker moves, its mask without the caller's CPU,
 * unless the kernel moved it first; without the move the worker stayed with
 * the caller in 11 of 14 runs on a 2-vCPU VM). */
START_TEST(pool_worker_leaves_poster_cpu)
{
    cpu_set_t all;
    CPU_ZERO(&all);
    ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
    if (CPU_COUNT(&all) < 2) {
        printf("pool_worker_leaves_poster_cpu: skipped, %d CPU in this process's affinity\n",
               CPU_COUNT(&all));
        return;
    }
    tcrt_set_threads(2);
    static Where w;
    int wcpu = -1;
    for (int rep = 0; rep < 20 && wcpu < 0; rep++) { /* the worker's CPU */
        run_where(&w, 2, 0);
        if (atomic_load(&w.on_cpu[1]) > 0)
            wcpu = atomic_load(&w.on_cpu[1]) - 1;
    }
    ck_assert_msg(wcpu >= 0, "the worker ran no task in 20 jobs");
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(wcpu, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0); /* the caller onto the worker's CPU */
    int caller = -1, worker = -1, may = 0;
    for (int rep = 0; rep < 20 && worker < 0; rep++) {
        run_where(&w, 2, wcpu);
        caller = atomic_load(&w.on_cpu[0]) - 1;
        worker = atomic_load(&w.on_cpu[1]) - 1;
        may = atomic_load(&w.may_use[1]);
    }
    ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
    tcrt_set_threads(1);
    ck_assert_msg(worker >= 0, "the worker ran no task in 20 jobs");
    ck_assert_int_eq(caller, wcpu);
    /* (the kernel may have moved the worker itself, its mask unchanged) */
    ck_assert_msg(worker != caller, "the worker stayed with the caller on CPU %d (CPU %d %s in its mask)",
                  worker, wcpu, may == 2 ? "still" : "not");
}
END_TEST

/* More threads than CPUs: no worker's mask changes. */
START_TEST(pool_oversubscribed_workers_stay)
{
    cpu_set_t all;
    CPU_ZERO(&all);
    ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
    int n = CPU_COUNT(&all) + 1;
    if (n > TCRT_MAX_THREADS) {
        printf("pool_oversubscribed_workers_stay: skipped, %d CPUs\n", n - 1);
        return;
    }
    int c0 = -1;
    for (int c = 0; c < CPU_SETSIZE && c0 < 0; c++)
        if (CPU_ISSET(c, &all))
            c0 = c;
    tcrt_set_threads(n);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c0, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
    static Where w;
    int moved = 0;
    for (int rep = 0; rep < 10; rep++) {
        run_where(&w, n, c0);
        for (int t = 1; t < n; t++)
            moved += atomic_load(&w.may_use[t]) == 1;
    }
    ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
    tcrt_set_threads(1);
    ck_assert_msg(moved == 0, "%d worker tasks ran without CPU %d in their mask", moved, c0);
}
END_TEST
#endif

/* ---- no allocation ---- */

#ifdef ALLOC_COUNT_AVAILABLE
START_TEST(pool_no_alloc)
{
    for (int threads = 1; threads <= 4; threads *= 2) {
        tcrt_set_threads(threads);
        static Job j;
        memset(&j, 0, sizeof j);
        j.threads = threads;
        tcrt_parallel_tasks(MAX_TASKS, check_task, &j); /* warm */
        alloc_count_start();
        for (int rep = 0; rep < 100; rep++)
            tcrt_parallel_tasks(rep % 2 ? MAX_TASKS : 3, check_task, &j);
        struct timespec pause = {0, 20 * 1000 * 1000}; /* workers go to sleep, then wake */
        nanosleep(&pause, NULL);
        tcrt_parallel_tasks(MAX_TASKS, check_task, &j);
        long n = alloc_count_stop();
        ck_assert_msg(n == 0, "%d threads: %ld allocations", threads, n);
    }
    tcrt_set_threads(1);
}
END_TEST

/* The counter itself works: a malloc inside the window is seen. */
START_TEST(pool_counter_sees_malloc)
{
    alloc_count_start();
    void *volatile p = malloc(100);
    long n = alloc_count_stop();
    free(p);
    ck_assert_int_eq(n, 1);
}
END_TEST
#endif

int main(void)
{
    Suite *s = suite_create("runtime_pool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, pool_every_task_once);
    tcase_add_test(tc, pool_workers_take_tasks);
    tcase_add_test(tc, pool_max_threads);
    tcase_add_test(tc, pool_large_jobs_every_task_once);
    tcase_add_test(tc, pool_two_threads_split_prefix_suffix);
    tcase_add_test(tc, pool_nested_runs_serially);
    tcase_add_test(tc, pool_set_threads_changes);
    tcase_add_test(tc, pool_two_posters);
    tcase_add_test(tc, pool_idle_workers_sleep);
    tcase_add_test(tc, pool_fork_child);
#ifdef __linux__
    tcase_add_test(tc, pool_worker_leaves_poster_cpu);
    tcase_add_test(tc, pool_oversubscribed_workers_stay);
#endif
#ifdef ALLOC_COUNT_AVAILABLE
    tcase_add_test(tc, pool_no_alloc);
    tcase_add_test(tc, pool_counter_sees_malloc);
#endif
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
