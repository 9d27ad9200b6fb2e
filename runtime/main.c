/* main.c - the standalone executable's main(): feeds from .npy, fetches to .npy.
 *
 * Algorithm:
 *   1. parse flags (--feed NAME=FILE.npy repeatable, --out-dir DIR,
 *      --repeat N, --threads N, --help; "--flag=value" also accepted);
 *   2. match every feed name to an arg ("x" and "x:0" are the same name),
 *      reject unknown or repeated names and report missing feeds, and check
 *      that no two results map to the same output file, all before any file
 *      is read;
 *   3. read each .npy with tcrt_npy_read_feed: dtype and shape are checked
 *      exactly against the signature from the header, before the data is
 *      allocated or read; then the byte size (tcrt_check_feed);
 *   4. allocate the 64-byte-aligned arena, copy feeds to their offsets, run
 *      (with --repeat: one warm-up run and N timed runs, feeds copied again
 *      before each run outside the timing, median printed as median_ms=X);
 *   5. create the output folder and write each result atomically; on a
 *      failure the results already written by this call are removed.
 * Exit codes: 0 ok, 1 runtime or I/O error (malformed .npy included),
 * 2 usage error (bad flags, feed names, dtypes or shapes).  Every error goes
 * to stderr as "error: ...", naming the feed or result and the file.
 * Invariants: the descriptor is checked (tcrt_check_model) before anything
 * else; nothing is written unless every check passed and run returned
 * TCRT_OK; the arena is only touched with feeds that passed their checks;
 * this function returns, it never exits or aborts.
 */
#include "tcrt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { EXIT_OK = 0, EXIT_RUN = 1, EXIT_USAGE = 2 };

static void errorf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* "float32[1,224,224,3]" */
static void fmt_sig(char *buf, size_t n, tcrt_dtype dt, int rank, const int64_t *dims)
{
    tcrt_type_str(dt, rank, dims, buf, n);
}

/* Length of the name without a trailing ":0" (so "x" == "x:0"). */
static size_t base_len(const char *s)
{
    size_t n = strlen(s);
    if (n >= 2 && s[n - 2] == ':' && s[n - 1] == '0')
        return n - 2;
    return n;
}

static bool same_name(const char *a, size_t alen, const char *b)
{
    size_t la = alen, lb = base_len(b);
    /* a is "NAME" from the command line, alen its length */
    if (la >= 2 && a[la - 2] == ':' && a[la - 1] == '0')
        la -= 2;
    return la == lb && memcmp(a, b, la) == 0;
}

static void print_signature(const tcrt_model *m, FILE *o)
{
    char sig[256];
    fprintf(o, "model %s\nargs:\n", m->name ? m->name : "?");
    for (int i = 0; i < m->n_args; i++) {
        fmt_sig(sig, sizeof sig, m->args[i].dtype, m->args[i].rank, m->args[i].dims);
        fprintf(o, "  %s %s\n", m->args[i].name, sig);
    }
    fprintf(o, "results:\n");
    for (int i = 0; i < m->n_results; i++) {
        fmt_sig(sig, sizeof sig, m->results[i].dtype, m->results[i].rank, m->results[i].dims);
        fprintf(o, "  %s %s\n", m->results[i].name, sig);
    }
}

static void usage(const char *prog, const tcrt_model *m, FILE *o)
{
    fprintf(o,
            "usage: %s [--feed NAME=FILE.npy]... [--out-dir DIR] [--repeat N] [--threads N] [--help]\n"
            "  --feed NAME=FILE.npy  one per arg (NAME 'x' and 'x:0' are the same)\n"
            "  --out-dir DIR         where results are written as NAME.npy (default .)\n"
            "  --repeat N            one warm-up run, then N timed runs; prints median_ms=X\n"
            "  --threads N           threads for the kernels that use them\n",
            prog);
    print_signature(m, o);
}

static bool parse_count(const char *flag, const char *v, long lo, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > 1000000000L) {
        errorf("%s expects an integer >= %ld, got '%s'", flag, lo, v);
        return false;
    }
    *out = x;
    return true;
}

/* mkdir -p */
static bool make_dirs(const char *dir)
{
    char buf[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof buf)
        return n == 0;
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == 0) {
            char c = buf[i];
            buf[i] = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return false;
            buf[i] = c;
        }
    }
    struct stat sb;
    return stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool check_model(const tcrt_model *m)
{
    char err[512];
    if (tcrt_check_model(m, err, sizeof err) != TCRT_OK) {
        errorf("%s", err);
        return false;
    }
    return true;
}

/* Two results written to the same NAME.npy would overwrite each other. */
static bool check_result_files(const tcrt_model *m)
{
    for (int i = 0; i < m->n_results; i++) {
        char a[1024];
        tcrt_output_filename(m->results[i].name, a, sizeof a);
        for (int j = 0; j < i; j++) {
            char b[1024];
            tcrt_output_filename(m->results[j].name, b, sizeof b);
            if (strcmp(a, b) == 0) {
                errorf("results '%s' and '%s' would both be written to %s", m->results[j].name,
                       m->results[i].name, a);
                return false;
            }
        }
    }
    return true;
}

int tcrt_main(const tcrt_model *m, int argc, char **argv)
{
    const char *prog = argc > 0 && argv[0] ? argv[0] : "model";
    if (!check_model(m))
        return EXIT_RUN;
    int n_args = m->n_args;
    const char **feed_file = calloc((size_t)n_args + 1, sizeof *feed_file);
    tcrt_tensor *feeds = calloc((size_t)n_args + 1, sizeof *feeds);
    uint8_t *arena = NULL;
    char **written = calloc((size_t)m->n_results + 1, sizeof *written);
    int n_written = 0;
    int rc = EXIT_OK;
    const char *out_dir = ".";
    long repeat = 0, threads = 0;
    if (!feed_file || !feeds || !written) {
        errorf("out of memory");
        rc = EXIT_RUN;
        goto done;
    }

    /* 1-2. flags and feed names */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        const char *eq = strchr(a, '=');
        char flag[32];
        size_t flen = (strncmp(a, "--", 2) == 0 && eq) ? (size_t)(eq - a) : strlen(a);
        if (flen >= sizeof flag) {
            errorf("unknown flag '%s' (try --help)", a);
            rc = EXIT_USAGE;
            goto done;
        }
        memcpy(flag, a, flen);
        flag[flen] = 0;
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(prog, m, stdout);
            rc = EXIT_OK;
            goto done;
        }
        bool known = strcmp(flag, "--feed") == 0 || strcmp(flag, "--out-dir") == 0 ||
                     strcmp(flag, "--repeat") == 0 || strcmp(flag, "--threads") == 0;
        if (!known) {
            errorf("unknown flag '%s' (try --help)", a);
            rc = EXIT_USAGE;
            goto done;
        }
        if (a[flen] == '=')
            val = a + flen + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else {
            errorf("%s expects a value", flag);
            rc = EXIT_USAGE;
            goto done;
        }
        if (strcmp(flag, "--out-dir") == 0) {
            out_dir = val;
        } else if (strcmp(flag, "--repeat") == 0) {
            if (!parse_count(flag, val, 1, &repeat)) {
                rc = EXIT_USAGE;
                goto done;
            }
        } else if (strcmp(flag, "--threads") == 0) {
            if (!parse_count(flag, val, 1, &threads)) {
                rc = EXIT_USAGE;
                goto done;
            }
        } else { /* --feed NAME=FILE */
            const char *feq = strchr(val, '=');
            if (!feq || feq == val || !feq[1]) {
                errorf("--feed expects NAME=FILE.npy, got '%s'", val);
                rc = EXIT_USAGE;
                goto done;
            }
            size_t nlen = (size_t)(feq - val);
            int k = -1;
            for (int j = 0; j < n_args; j++)
                if (same_name(val, nlen, m->args[j].name)) {
                    k = j;
                    break;
                }
            if (k < 0) {
                fprintf(stderr, "error: unknown feed '%.*s'; the model's args are:", (int)nlen, val);
                for (int j = 0; j < n_args; j++) {
                    char sig[256];
                    fmt_sig(sig, sizeof sig, m->args[j].dtype, m->args[j].rank, m->args[j].dims);
                    fprintf(stderr, "%s %s %s", j ? "," : "", m->args[j].name, sig);
                }
                fprintf(stderr, "%s\n", n_args ? "" : " (none)");
                rc = EXIT_USAGE;
                goto done;
            }
            if (feed_file[k]) {
                errorf("feed '%s' given more than once", m->args[k].name);
                rc = EXIT_USAGE;
                goto done;
            }
            feed_file[k] = feq + 1;
        }
    }
    if (!check_result_files(m)) {
        rc = EXIT_RUN;
        goto done;
    }
    for (int j = 0; j < n_args; j++)
        if (!feed_file[j]) {
            char sig[256];
            fmt_sig(sig, sizeof sig, m->args[j].dtype, m->args[j].rank, m->args[j].dims);
            errorf("missing feed '%s' (%s); pass --feed %s=FILE.npy", m->args[j].name, sig, m->args[j].name);
            rc = EXIT_USAGE;
            goto done;
        }

    /* 3. read and check feeds: the header against the signature first */
    for (int j = 0; j < n_args; j++) {
        char err[1024];
        const tcrt_io *io = &m->args[j];
        tcrt_status s = tcrt_npy_read_feed(feed_file[j], io, &feeds[j], err, sizeof err);
        if (s != TCRT_OK)
            errorf("feed '%s': %s", io->name, err); /* err: "FILE: reason" */
        else if ((s = tcrt_check_feed(io, &feeds[j], err, sizeof err)) != TCRT_OK)
            errorf("%s (from %s)", err, feed_file[j]); /* err: "feed 'NAME': reason" */
        if (s != TCRT_OK) {
            rc = (s == TCRT_ERR_DTYPE || s == TCRT_ERR_SHAPE) ? EXIT_USAGE : EXIT_RUN;
            goto done;
        }
    }

    /* 4. arena and runs */
    if (threads > 0)
        tcrt_set_threads((int)threads);
    size_t abytes = (m->arena_bytes + 63) / 64 * 64;
    if (abytes < m->arena_bytes) {
        errorf("arena size overflows");
        rc = EXIT_RUN;
        goto done;
    }
    arena = aligned_alloc(64, abytes ? abytes : 64);
    if (!arena) {
        errorf("cannot allocate the %zu-byte arena", m->arena_bytes);
        rc = EXIT_RUN;
        goto done;
    }
    memset(arena, 0, abytes ? abytes : 64);
    tcrt_vars_init(m, arena);
    long n_runs = repeat > 0 ? repeat + 1 : 1;
    double *times = repeat > 0 ? calloc((size_t)repeat, sizeof *times) : NULL;
    if (repeat > 0 && !times) {
        errorf("out of memory");
        rc = EXIT_RUN;
        goto done;
    }
    for (long r = 0; r < n_runs; r++) {
        for (int j = 0; j < n_args; j++) {
            char err[1024];
            tcrt_status s = tcrt_set_feed(m, arena, j, &feeds[j], err, sizeof err);
            if (s != TCRT_OK) {
                errorf("%s", err);
                free(times);
                rc = EXIT_RUN;
                goto done;
            }
        }
        double t0 = now_ms();
        tcrt_status s = m->run(arena);
        double t1 = now_ms();
        if (s != TCRT_OK) {
            errorf("model '%s' failed: %s (status %d)", m->name ? m->name : "?", tcrt_status_str(s), (int)s);
            free(times);
            rc = EXIT_RUN;
            goto done;
        }
        tcrt_vars_commit(m, arena);
        if (r > 0)
            times[r - 1] = t1 - t0;
    }
    if (repeat > 0) {
        qsort(times, (size_t)repeat, sizeof *times, cmp_double);
        double med = repeat % 2 ? times[repeat / 2] : (times[repeat / 2 - 1] + times[repeat / 2]) / 2;
        printf("median_ms=%.3f\n", med);
        free(times);
    }

    /* 5. results */
    if (!make_dirs(out_dir)) {
        errorf("cannot create output folder '%s': %s", out_dir, strerror(errno));
        rc = EXIT_RUN;
        goto done;
    }
    for (int j = 0; j < m->n_results; j++) {
        const tcrt_io *io = &m->results[j];
        char fname[1024], sig[256], err[1024];
        tcrt_output_filename(io->name, fname, sizeof fname);
        size_t plen = strlen(out_dir) + strlen(fname) + 2;
        char *path = malloc(plen);
        if (!path) {
            errorf("out of memory");
            rc = EXIT_RUN;
            goto done;
        }
        snprintf(path, plen, "%s/%s", out_dir, fname);
        tcrt_tensor t = {.data = arena + io->offset, .dtype = io->dtype, .rank = io->rank};
        for (int d = 0; d < io->rank && d < TCRT_MAX_RANK; d++)
            t.dims[d] = io->dims[d];
        if (tcrt_npy_write(path, &t, err, sizeof err) != TCRT_OK) {
            errorf("result '%s': %s", io->name, err);
            free(path);
            rc = EXIT_RUN;
            goto done;
        }
        written[n_written++] = path;
        fmt_sig(sig, sizeof sig, io->dtype, io->rank, io->dims);
        printf("wrote %s %s\n", path, sig);
    }
    fflush(stdout);

done:
    if (rc != EXIT_OK)
        for (int j = 0; j < n_written; j++)
            remove(written[j]);
    for (int j = 0; j < n_written; j++)
        free(written[j]);
    free(written);
    if (feeds)
        for (int j = 0; j < n_args; j++)
            free(feeds[j].data);
    free(feeds);
    free((void *)feed_file);
    free(arena);
    return rc;
}
