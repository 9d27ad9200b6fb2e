/* tcrt.c - small runtime basics: dtype table, status strings, tensor element
 * count, the thread-count setting, output file names, and the checks of a
 * model descriptor and of feeds against it.
 *
 * Algorithm: table lookups.  tcrt_tensor_count multiplies dims with an
 * overflow check (returns -1 on a negative dim or overflow).  The thread
 * count is one process-wide setting read by the fast kernels; it is never
 * below 1 nor above TCRT_MAX_THREADS, and setting it (re)starts the thread
 * pool (pool.c) so that no run creates threads.
 * Feed checks compare dtype, then rank and dims, then the byte size
 * (count x element size, overflow-checked) with the signature, and only then
 * is anything copied.
 * tcrt_prof_ns / tcrt_clock_ns: the per-kernel timing hooks the generated
 * run functions call (--profile; docs/profiling.md).
 * Invariants: nothing here allocates (except the pool's threads, at
 * tcrt_set_threads); every function accepts any input, NULL included, and
 * reports through a tcrt_status, never exit() or abort().
 */
#include "tcrt.h"
#include "tcrt_pool.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
    case TCRT_BF16:
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
    case TCRT_BF16:
        return "bfloat16";
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
    /* Workers are created here (never inside a run); if the system refuses a
     * thread the pool runs with fewer and the count says so. */
    n_threads = tcrt_pool_start(n < 1 ? 1 : (n > TCRT_MAX_THREADS ? TCRT_MAX_THREADS : n));
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

void tcrt_type_str(tcrt_dtype dt, int rank, const int64_t *dims, char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    if (rank < 0 || !dims)
        rank = 0;
    if (rank > TCRT_MAX_RANK)
        rank = TCRT_MAX_RANK;
    size_t j = 0;
    int w = snprintf(buf, n, "%s[", tcrt_dtype_name(dt));
    j = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < rank && j < n; i++) {
        w = snprintf(buf + j, n - j, "%s%lld", i ? "," : "", (long long)dims[i]);
        j += w > 0 ? (size_t)w : 0;
    }
    if (j < n)
        snprintf(buf + j, n - j, "]");
}

/* ---- descriptor and feed checks ---- */

static tcrt_status failf(char *err, size_t errlen, tcrt_status s, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return s;
}

static const char *name_or(const char *s)
{
    return s ? s : "(unnamed)";
}

/* Element count x element size of dtype/rank/dims; false on a bad dtype,
 * rank or dim, or overflow. */
static bool byte_size(tcrt_dtype dt, int rank, const int64_t *dims, size_t *out)
{
    size_t esz = tcrt_dtype_size(dt);
    if (esz == 0 || rank < 0 || rank > TCRT_MAX_RANK)
        return false;
    size_t n = esz;
    for (int d = 0; d < rank; d++) {
        if (dims[d] < 0)
            return false;
        uint64_t dim = (uint64_t)dims[d];
        if (dim != 0 && n > SIZE_MAX / dim)
            return false;
        n *= (size_t)dim;
    }
    *out = n;
    return true;
}

tcrt_status tcrt_check_model(const tcrt_model *m, char *err, size_t errlen)
{
    if (!m)
        return failf(err, errlen, TCRT_ERR_ARG, "invalid model descriptor: none given");
    if (m->n_args < 0 || m->n_results < 0 || !m->run || (m->n_args && !m->args) ||
        (m->n_results && !m->results))
        return failf(err, errlen, TCRT_ERR_ARG,
                     "invalid model descriptor '%s': negative counts or missing tables or run function",
                     name_or(m->name));
    for (int k = 0; k < 2; k++) {
        const tcrt_io *ios = k ? m->results : m->args;
        int n = k ? m->n_results : m->n_args;
        for (int i = 0; i < n; i++) {
            const tcrt_io *io = &ios[i];
            size_t bytes;
            if (!io->name)
                return failf(err, errlen, TCRT_ERR_ARG, "invalid model descriptor: %s %d has no name",
                             k ? "result" : "arg", i);
            if (!byte_size(io->dtype, io->rank, io->dims, &bytes) || bytes != io->bytes)
                return failf(err, errlen, TCRT_ERR_ARG,
                             "invalid model descriptor: '%s' has a bad dtype, rank or dims, or its byte "
                             "size %zu does not match them",
                             io->name, io->bytes);
            if (io->offset > m->arena_bytes || io->bytes > m->arena_bytes - io->offset)
                return failf(err, errlen, TCRT_ERR_ARG,
                             "invalid model descriptor: '%s' lies outside the arena", io->name);
        }
    }
    if (m->n_vars < 0 || (m->n_vars && (!m->vars || !m->weights)))
        return failf(err, errlen, TCRT_ERR_ARG, "invalid model descriptor '%s': bad variable table",
                     name_or(m->name));
    if (m->n_kernels < 0 || (m->n_kernels && !m->kernels))
        return failf(err, errlen, TCRT_ERR_ARG, "invalid model descriptor '%s': bad kernel table",
                     name_or(m->name));
    for (int i = 0; i < m->n_vars; i++) {
        const tcrt_var *v = &m->vars[i];
        size_t bytes;
        if (!v->name || !byte_size(v->dtype, v->rank, v->dims, &bytes) || bytes != v->bytes)
            return failf(err, errlen, TCRT_ERR_ARG,
                         "invalid model descriptor: variable %d ('%s') has no name or a bad type", i,
                         name_or(v->name));
        if (v->offset > m->arena_bytes || v->bytes > m->arena_bytes - v->offset ||
            v->init_offset > m->weights_bytes || v->bytes > m->weights_bytes - v->init_offset ||
            (v->new_offset >= 0 && ((uint64_t)v->new_offset > m->arena_bytes ||
                                    v->bytes > m->arena_bytes - (size_t)v->new_offset)))
            return failf(err, errlen, TCRT_ERR_ARG,
                         "invalid model descriptor: variable '%s' lies outside the arena or weights", v->name);
    }
    return TCRT_OK;
}

void tcrt_vars_init(const tcrt_model *m, uint8_t *arena)
{
    for (int i = 0; m && arena && i < m->n_vars; i++)
        memcpy(arena + m->vars[i].offset, m->weights + m->vars[i].init_offset, m->vars[i].bytes);
}

void tcrt_vars_commit(const tcrt_model *m, uint8_t *arena)
{
    for (int i = 0; m && arena && i < m->n_vars; i++)
        if (m->vars[i].new_offset >= 0)
            memmove(arena + m->vars[i].offset, arena + m->vars[i].new_offset, m->vars[i].bytes);
}

int tcrt_find_var(const tcrt_model *m, const char *name)
{
    for (int i = 0; m && name && i < m->n_vars; i++)
        if (m->vars[i].name && strcmp(m->vars[i].name, name) == 0)
            return i;
    return -1;
}

/* Length of s without a trailing ":0" (so "x" == "x:0"). */
static size_t base_len(const char *s, size_t n)
{
    if (n >= 2 && s[n - 2] == ':' && s[n - 1] == '0')
        return n - 2;
    return n;
}

int tcrt_find_arg(const tcrt_model *m, const char *name)
{
    if (!m || !name || m->n_args <= 0 || !m->args)
        return -1;
    size_t ln = base_len(name, strlen(name));
    for (int i = 0; i < m->n_args; i++) {
        const char *a = m->args[i].name;
        if (!a)
            continue;
        size_t la = base_len(a, strlen(a));
        if (la == ln && memcmp(a, name, ln) == 0)
            return i;
    }
    return -1;
}

tcrt_status tcrt_check_feed(const tcrt_io *io, const tcrt_tensor *t, char *err, size_t errlen)
{
    if (!io || !t)
        return failf(err, errlen, TCRT_ERR_ARG, "feed '%s': no tensor given", io ? name_or(io->name) : "?");
    char want[256], got[256];
    tcrt_type_str(io->dtype, io->rank, io->dims, want, sizeof want);
    tcrt_type_str(t->dtype, t->rank, t->dims, got, sizeof got);
    if (t->dtype != io->dtype)
        return failf(err, errlen, TCRT_ERR_DTYPE, "feed '%s': wrong dtype: expected %s, got %s",
                     name_or(io->name), want, got);
    bool same = t->rank == io->rank;
    for (int d = 0; same && d < io->rank && d < TCRT_MAX_RANK; d++)
        same = t->dims[d] == io->dims[d];
    if (!same) {
        if (t->rank < 0 || t->rank > TCRT_MAX_RANK)
            return failf(err, errlen, TCRT_ERR_SHAPE, "feed '%s': wrong shape: expected %s, got rank %d",
                         name_or(io->name), want, t->rank);
        return failf(err, errlen, TCRT_ERR_SHAPE, "feed '%s': wrong shape: expected %s, got %s",
                     name_or(io->name), want, got);
    }
    size_t bytes;
    if (!byte_size(t->dtype, t->rank, t->dims, &bytes) || bytes != io->bytes)
        return failf(err, errlen, TCRT_ERR_ARG,
                     "feed '%s': %s is %zu bytes but the signature says %zu (invalid model descriptor)",
                     name_or(io->name), got, bytes, io->bytes);
    return TCRT_OK;
}

tcrt_status tcrt_set_feed(const tcrt_model *m, uint8_t *arena, int i, const tcrt_tensor *t, char *err,
                          size_t errlen)
{
    if (!m || !arena)
        return failf(err, errlen, TCRT_ERR_ARG, "set feed: no model or no arena");
    if (i < 0 || i >= m->n_args || !m->args)
        return failf(err, errlen, TCRT_ERR_ARG, "model '%s' has no arg %d (it has %d)", name_or(m->name), i,
                     m->n_args);
    const tcrt_io *io = &m->args[i];
    if (io->offset > m->arena_bytes || io->bytes > m->arena_bytes - io->offset)
        return failf(err, errlen, TCRT_ERR_ARG, "invalid model descriptor: '%s' lies outside the arena",
                     name_or(io->name));
    tcrt_status s = tcrt_check_feed(io, t, err, errlen);
    if (s != TCRT_OK)
        return s;
    if (io->bytes && !t->data)
        return failf(err, errlen, TCRT_ERR_ARG, "feed '%s': tensor has no data", name_or(io->name));
    if (io->bytes)
        memmove(arena + io->offset, t->data, io->bytes);
    return TCRT_OK;
}

uint64_t *tcrt_prof_ns = NULL;

uint64_t tcrt_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t tcrt_prof_begin(void)
{
    return tcrt_prof_ns ? tcrt_clock_ns() : 0;
}

void tcrt_prof_end(int i, uint64_t t0)
{
    if (tcrt_prof_ns && i >= 0)
        tcrt_prof_ns[i] += tcrt_clock_ns() - t0;
}
