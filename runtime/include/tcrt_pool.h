/* tcrt_pool.h - the runtime's thread pool, used by the kernels that split work.
 *
 * tcrt_parallel_tasks(n, fn, ctx) runs fn(ctx, task, tid) once for every task in
 * [0, n) and returns when all have finished.  Tasks are handed out dynamically
 * (a shared counter), so a thread that starts late, or whose core is busy,
 * simply takes fewer of them; the calling thread takes part as tid 0.  Even
 * tids take tasks in increasing order from the front, odd tids
 * (tcrt_pool_descending) in decreasing order from the back (jobs of up to
 * 65535 tasks), so with two threads each runs one contiguous range of the
 * tasks: a kernel whose consecutive tasks touch neighbouring data keeps it
 * on one core, and may prefetch for the task it will likely run next (a
 * hint: which tasks a thread gets still varies from run to run).  tid is in
 * [0, tcrt_get_threads()) and no two tasks run on the same tid at the same time,
 * so per-thread scratch can be indexed by tid.  With 1 thread, n <= 1, or when
 * called from inside a task (nesting), every task runs on the caller, in order.
 * The pool is started by tcrt_set_threads (workers are created there, never in a
 * run) and never allocates afterwards.  Idle workers sleep (they may spin only
 * briefly first): a busy core is not taken from other processes.  The
 * workers are stopped and joined at exit (atexit), so a process may exit with
 * a live pool.  Each job runs on the workers in the poster's floating-point
 * mode (rounding, flush-to-zero: tcrt.h, tcrt_flush_denormals).
 */
#ifndef TCRT_POOL_H
#define TCRT_POOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*tcrt_task_fn)(void *ctx, int64_t task, int tid);

/* Whether tid takes its tasks from the back (in decreasing order). */
static inline int tcrt_pool_descending(int tid)
{
    return tid & 1;
}

void tcrt_parallel_tasks(int64_t n_tasks, tcrt_task_fn fn, void *ctx);
/* The same, with only tids below max_threads taking tasks (per-thread
 * scratch for fewer threads than TCRT_MAX_THREADS; max_threads <= 1: every
 * task runs on the caller). */
void tcrt_parallel_tasks_max(int64_t n_tasks, int max_threads, tcrt_task_fn fn, void *ctx);

/* Restarts the pool with n_threads - 1 workers (clamped to
 * [1, TCRT_MAX_THREADS]; nothing happens when the count is unchanged or when
 * called from inside a task) and returns the thread count now in use, lower
 * than asked when a thread could not be created.  tcrt_set_threads calls it;
 * not to be called while another thread runs tcrt_parallel_tasks. */
int tcrt_pool_start(int n_threads);

#ifdef __cplusplus
}
#endif
#endif
