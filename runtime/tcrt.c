/* tcrt.c - small runtime basics: dtype table, status strings, tensor element
 * count, the thread-count setting and output file names.
 *
 * Algorithm: table lookups.  tcrt_tensor_count multiplies dims with an
 * overflow check (returns -1 on a negative dim or overflow).  The thread
 * count is one process-wide setting read by the fast kernels (OpenMP);
 * it is never below 1 nor above TCRT_MAX_THREADS, and setting it starts the
 * OpenMP team (an empty parallel region) so that no run creates threads.
 * Invariants: nothing here allocates (except libgomp's team, at
 * tcrt_set_threads); every function accepts any input.
 */
#include "tcrt.h"

#include <stdio.h>
#include <string.h>

static int n_threads = 1;

size_t tcrt_dtype_size(tcrt_dtype dt)
{
    switch (dt) {
    case TCRT_F32:
    case TCRT_I32:
    case TCRT_U32:
        return 4;
    case TCRT_F64:
    case TCRT_I64:
    case TCRT_U64:
        return 8;
    case TCRT_U8:
    case TCRT_I8:
    case TCRT_BOOL:
        return 1;
    case TCRT_I16:
    case TCRT_U16:
    case TCRT_F16:
        return 2;
    case TCRT_STRING:
    case TCRT_INVALID:
        break;
    }
    return 0;
}

const char *tcrt_dtype_name(tcrt_dtype dt)
{
    switch (dt) {
    case TCRT_F32:
        return "float32";
    case TCRT_F64:
        return "float64";
    case TCRT_I32:
        return "int32";
    case TCRT_U8:
        return "uint8";
    case TCRT_I16:
        return "int16";
    case TCRT_I8:
        return "int8";
    case TCRT_STRING:
        return "string";
    case TCRT_I64:
        return "int64";
    case TCRT_BOOL:
        return "bool";
    case TCRT_U16:
        return "uint16";
    case TCRT_F16:
        return "float16";
    case TCRT_U32:
        return "uint32";
    case TCRT_U64:
        return "uint64";
    case TCRT_INVALID:
        break;
    }
    return "invalid";
}

int64_t tcrt_tensor_count(const tcrt_tensor *t)
{
    if (!t || t->rank < 0 || t->rank > TCRT_MAX_RANK)
        return -1;
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0)
            return -1;
        if (t->dims[d] != 0 && n > INT64_MAX / t->dims[d])
            return -1;
        n *= t->dims[d];
    }
    return n;
}

const char *tcrt_status_str(tcrt_status s)
{
    switch (s) {
    case TCRT_OK:
        return "ok";
    case TCRT_ERR_ARG:
        return "bad argument";
    case TCRT_ERR_DTYPE:
        return "wrong dtype";
    case TCRT_ERR_SHAPE:
        return "wrong shape";
    case TCRT_ERR_IO:
        return "I/O error";
    case TCRT_ERR_FORMAT:
        return "malformed file";
    case TCRT_ERR_NOMEM:
        return "out of memory";
    case TCRT_ERR_RUNTIME:
        return "runtime error";
    }
    return "unknown status";
}

void tcrt_set_threads(int n)
{
    n_threads = n < 1 ? 1 : (n > TCRT_MAX_THREADS ? TCRT_MAX_THREADS : n);
#ifdef _OPENMP
    /* Start the team now: libgomp creates its threads (and allocates) on the
     * first region of a given size; the kernels reuse it afterwards. */
    if (n_threads > 1) {
#pragma omp parallel num_threads(n_threads)
        {
            (void)0;
        }
    }
#endif
}

int tcrt_get_threads(void)
{
    return n_threads;
}

void tcrt_output_filename(const char *tensor, char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    size_t j = 0;
    for (const char *s = tensor ? tensor : ""; *s && j + 1 < n; s++) {
        char c = *s;
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '_' || c == '-';
        buf[j++] = ok ? c : '_';
    }
    buf[j] = 0;
    const char *ext = ".npy";
    for (size_t k = 0; ext[k] && j + 1 < n; k++)
        buf[j++] = ext[k];
    buf[j] = 0;
}
