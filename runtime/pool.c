/* runtime/pool.c - tcrt_parallel_tasks (tcrt_pool.h).
 * Placeholder: runs every task on the caller, in order.  The worker pool
 * replaces it. */
#include "tcrt_pool.h"

void tcrt_parallel_tasks(int64_t n_tasks, tcrt_task_fn fn, void *ctx)
{
    for (int64_t t = 0; t < n_tasks; t++)
        fn(ctx, t, 0);
}
