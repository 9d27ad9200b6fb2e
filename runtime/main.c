/* main.c - the standalone executable's main(): feeds from .npy, fetches to
 * .npy, and training runs (steps, batches, checkpoints) for models with
 * variables (docs/training.md, "Running a training executable").
 *
 * Algorithm:
 *   1. parse flags (--feed NAME=FILE.npy repeatable, --out-dir DIR,
 *      --repeat N, --threads N, --steps N, --log-every K, --save PREFIX,
 *      --save-every K, --restore PREFIX, --profile, --flush-denormals,
 *      --huge-pages, --help; "--flag=value" also accepted) and check
 *      their combinations;
 *   2. match every feed name to an arg ("x" and "x:0" are the same name),
 *      reject unknown or repeated names and report missing feeds, and check
 *      that no two results map to the same output file, all before any file
 *      is read;
 *   3. read each .npy with tcrt_npy_read_feed: dtype and shape are checked
 *      exactly against the signature from the header, before the data is
 *      allocated or read; then the byte size (tcrt_check_feed).  With
 *      --steps a file of the arg's dtype whose first dimension is k times
 *      the arg's (k >= 1, the other dims equal) is read whole and holds k
 *      batches; with --data-parallel (runtime/mpi.c sets the replica
 *      globals below) also without --steps, and k must be a multiple of
 *      the replica count N for every feed of rank >= 1; a feed of at least
 *      FEED_REREAD_BYTES that is not batches is freed after its checks;
 *   4. allocate the 64-byte-aligned arena, load the variables' initial
 *      values (tcrt_vars_init), then with --restore the variables and the
 *      global step from the checkpoint; with --huge-pages, move the
 *      weights onto transparent huge pages (tcrt_huge_pages);
 *   5. run: without --steps once (with --repeat: one warm-up run and N timed
 *      runs, median printed as median_ms=X); with --steps N the global steps
 *      S..N-1 after the restored step S, step i copying batch i mod k of each
 *      batched feed (--data-parallel: replica r of R copies batch
 *      (i*R + r) mod k) (every feed is copied again before each run,
 *      outside the timing; a freed large feed is read from its file again,
 *      straight into the arena, header checked again).  After every
 *      successful run the assigned values are committed
 *      (tcrt_vars_commit).  With --steps, every K steps (and after
 *      the last) a line "step=S NAME=VALUE ..." gives each float32/float64
 *      one-element result (%.9g / %.17g: the value the step computed, the
 *      loss before its update); --save writes the checkpoint (every variable
 *      by name plus "tfcc/global_step", int64) every --save-every K steps
 *      and after the last step as PREFIX-S, then points PREFIX.latest at it
 *      (tcrt_ckpt_write_step: a kill at any moment leaves the pointer on a
 *      complete checkpoint; the two newest are kept) ("saved step=S
 *      PREFIX-S"); --restore PREFIX reads the checkpoint PREFIX.latest
 *      names, or PREFIX itself when there is no pointer; with --profile
 *      each timed run (or the one run) points tcrt_prof_ns at its row of
 *      n_kernels counters, and print_profile then prints each kernel's
 *      median over the runs, largest first, and a total per TF op;
 *   6. create the output folder and write each result atomically; on a
 *      failure the results already written by this call are removed.
 * Exit codes: 0 ok, 1 runtime or I/O error (malformed .npy, a missing or
 * corrupt checkpoint included), 2 usage error (bad flags, feed names,
 * dtypes or shapes).  Every error goes to stderr as "error: ...", naming the
 * feed or result and the file.
 * Invariants: the descriptor is checked (tcrt_check_model) before anything
 * else; results are written only after every run returned TCRT_OK (a
 * checkpoint saved before a failing step stays: it is a complete earlier
 * state); the arena is only touched with feeds that passed their checks;
 * the global step after a run is the number of steps the state has seen, so
 * a resumed run continues the same batch sequence; this function returns,
 * it never exits or aborts.
 */
#include "tcrt.h"
#include "tcrt_ckpt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { EXIT_OK = 0, EXIT_RUN = 1, EXIT_USAGE = 2 };
/* Feeds of at least this many bytes (that are not batches) are not kept in
 * memory after their check: each run reads the file again into the arena
 * (tcrt_npy_read_feed_into).  Smaller ones are kept (a training loop's
 * step would otherwise open a file per feed). */
enum { FEED_REREAD_BYTES = 64 << 10 };

/* The checkpoint entry holding the global step (int64 scalar). */
#define GLOBAL_STEP_KEY "tfcc/global_step"

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
    if (m->n_vars > 0) {
        fprintf(o, "variables:\n");
        for (int i = 0; i < m->n_vars; i++) {
            fmt_sig(sig, sizeof sig, m->vars[i].dtype, m->vars[i].rank, m->vars[i].dims);
            fprintf(o, "  %s %s%s\n", m->vars[i].name, sig, m->vars[i].new_offset >= 0 ? " (assigned)" : "");
        }
    }
}

/* ---- --data-parallel (runtime/mpi.c, docs/distributed.md) ---- */

/* Set by runtime/mpi.c in a --data-parallel run (docs/distributed.md):
 * this process is replica tcrt_main_replica of tcrt_main_n_replicas; with
 * k batches in a feed, replica r at global step s uses batch (s * N + r)
 * mod k (without --steps: batch r); k must be a multiple of N.  Ranks
 * other than 0 skip --save (every replica holds the same variables). */
int tcrt_main_data_parallel; /* --help explains the batches */
int tcrt_main_replica;
int tcrt_main_n_replicas = 1;
int tcrt_main_skip_save;
/* Set by runtime/mpi.c in a --cluster run: called on every rank before each
 * --save (it gathers the variables to rank 0, which alone writes); nonzero
 * fails the run.  tcrt_main_runs counts the runs done (traffic per run). */
int (*tcrt_main_before_save)(const tcrt_model *m, uint8_t *arena);
long tcrt_main_runs;

static void dp_batch_error(const tcrt_io *io, const char *file, int64_t k)
{
    int n = tcrt_main_n_replicas;
    errorf("feed '%s': %s holds %lld batch%s of %lld rows but --data-parallel with %d replicas needs a "
           "multiple of %d batches (replica r uses batch r, r+%d, ...)",
           io->name, file, (long long)k, k == 1 ? "" : "es", (long long)io->dims[0], n, n, n);
}

static void usage(const char *prog, const tcrt_model *m, FILE *o)
{
    fprintf(
        o,
        "usage: %s [--feed NAME=FILE.npy]... [--out-dir DIR] [--repeat N] [--threads N]\n"
        "       [--steps N [--log-every K]] [--save PREFIX [--save-every K]] [--restore PREFIX] [--profile]\n"
        "       [--flush-denormals] [--huge-pages] [--help]\n"
        "  --feed NAME=FILE.npy  one per arg (NAME 'x' and 'x:0' are the same); with --steps the\n"
        "                        file may hold k batches: first dim k times the arg's, step i uses i mod k\n"
        "  --out-dir DIR         where results are written as NAME.npy (default .)\n"
        "  --repeat N            one warm-up run, then N timed runs; prints median_ms=X\n"
        "  --threads N           threads for the kernels that use them\n"
        "  --profile             time every kernel of the timed runs (with --repeat; else the one run)\n"
        "                        and print their medians, largest first, and a total per TF op\n"
        "  --flush-denormals     flush subnormal floats to zero (FTZ/DAZ; as TensorFlow's CPU runtime):\n"
        "                        faster where kernels meet subnormals; default IEEE subnormals\n"
        "  --huge-pages          move the weights onto transparent huge pages before the first run, where\n"
        "                        the system has them: each run streams them faster; loading takes longer\n"
        "                        (a copy of the weights; ResNet-50: +20 ms) (docs/performance.md)\n"
        "  --steps N             train until the global step is N (N runs, fewer after --restore)\n"
        "  --log-every K         print step=S and every scalar float result each K steps\n"
        "                        (default: every step when N <= 20, else every N/10 steps)\n"
        "  --save PREFIX         write a checkpoint PREFIX-STEP after the last step; PREFIX.latest names it\n"
        "  --save-every K        ... and every K steps\n"
        "  --restore PREFIX      load the variables and the global step (PREFIX.latest's checkpoint, else "
        "PREFIX)\n",
        prog);
    if (tcrt_main_data_parallel)
        fprintf(o,
                "--data-parallel (run under mpirun -np N; N = %d here): every replica runs the whole step on\n"
                "  its own batch and the gradients are averaged; a feed holds k batches, k a multiple of N:\n"
                "  replica r uses batch (s*N + r) mod k at step s (without --steps: batch r); only rank 0\n"
                "  writes results and --save checkpoints\n",
                tcrt_main_n_replicas);
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
    return (double)tcrt_clock_ns() / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1), sorting v. */
static double median_of(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Prints "median_ms=X" with X to 3 decimals, the decimals formatted by hand:
 * printf's "%.3f" enters libc's multi-precision helpers and "%03lld" its padding
 * code only for some values, so one run in a few mapped another 64 KiB window of
 * code than the others and a small model's peak RSS varied with the time it
 * printed (docs/targets.md, "Code layout"). */
static void print_median_ms(double ms)
{
    if (!(ms >= 0 && ms < 1e15)) {
        printf("median_ms=%.3f\n", ms);
        return;
    }
    long long us = (long long)(ms * 1000 + 0.5), frac = us % 1000;
    printf("median_ms=%lld.%c%c%c\n", us / 1000, (char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
           (char)('0' + frac % 10));
}

/* --profile: a kernel (or TF op: its first kernel k, and the sums over its
 * kernels) with its median ms, operations and kernel count. */
typedef struct ProfRow {
    double ms;
    int k;
    double flops;
    int count;
} ProfRow;

static int cmp_prof_desc(const void *a, const void *b)
{
    const ProfRow *x = a, *y = b;
    if (x->ms != y->ms)
        return (x->ms < y->ms) - (x->ms > y->ms);
    return (x->k > y->k) - (x->k < y->k);
}

/* The MFLOP and GFLOP/s columns of --profile ("-" where not counted or not
 * timed); mf and gf hold at least 32 bytes. */
static void fmt_flops(double flops, double ms, char *mf, char *gf)
{
    if (!(flops > 0)) {
        snprintf(mf, 32, "-");
        snprintf(gf, 32, "-");
        return;
    }
    snprintf(mf, 32, "%.3f", flops / 1e6);
    if (ms > 0)
        snprintf(gf, 32, "%.1f", flops / (ms * 1e6));
    else
        snprintf(gf, 32, "-");
}

/* Prints the profile of n_runs runs, prof[r * n_kernels + k] ns of kernel
 * k in run r: one line per kernel (median over the runs, largest first,
 * share of the sum of medians and cumulative share), then one line per TF
 * op (sum of its kernels' medians).  run_ms[r]: run r's time; the header
 * gives the median run and the median over the runs of each run's time
 * outside its kernels.  False when out of memory. */
static bool print_profile(const tcrt_model *m, const uint64_t *prof, long n_runs, const double *run_ms)
{
    int nk = m->n_kernels;
    ProfRow *rows = calloc((size_t)nk + 1, sizeof *rows);
    ProfRow *ops = calloc((size_t)nk + 1, sizeof *ops);
    double *col = calloc((size_t)n_runs + 1, sizeof *col);
    if (!rows || !ops || !col) {
        free(rows);
        free(ops);
        free(col);
        return false;
    }
    double total = 0;
    int n_ops = 0;
    for (int k = 0; k < nk; k++) {
        const tcrt_kernel_info *ki = &m->kernels[k];
        for (long r = 0; r < n_runs; r++)
            col[r] = (double)prof[(size_t)r * (size_t)nk + (size_t)k] / 1e6;
        double med = median_of(col, n_runs), flops = ki->flops > 0 ? ki->flops : 0;
        rows[k] = (ProfRow){med, k, flops, 1};
        total += med;
        /* its TF op's row: ops[j].k is the op's first kernel */
        const char *op = ki->op ? ki->op : "?";
        int j = 0;
        while (j < n_ops && strcmp(m->kernels[ops[j].k].op ? m->kernels[ops[j].k].op : "?", op) != 0)
            j++;
        if (j == n_ops)
            ops[n_ops++] = (ProfRow){0, k, 0, 0};
        ops[j].ms += med;
        ops[j].flops += flops;
        ops[j].count++;
    }
    qsort(rows, (size_t)nk, sizeof *rows, cmp_prof_desc);
    qsort(ops, (size_t)n_ops, sizeof *ops, cmp_prof_desc);
    for (long r = 0; r < n_runs; r++)
        col[r] = run_ms[r];
    double run_med = median_of(col, n_runs);
    for (long r = 0; r < n_runs; r++) {
        uint64_t in = 0;
        for (int k = 0; k < nk; k++)
            in += prof[(size_t)r * (size_t)nk + (size_t)k];
        col[r] = run_ms[r] - (double)in / 1e6;
    }
    double out_med = median_of(col, n_runs);
    printf("profile: %d kernels, median of %ld run%s each, ms of wall time on the calling thread; "
           "sum of the medians %.3f ms; median run %.3f ms, of which %.3f ms outside the kernels\n",
           nk, n_runs, n_runs == 1 ? "" : "s", total, run_med, out_med);
    printf("profile: %9s %6s %6s %10s %8s  %-28s %-24s %-32s %s\n", "ms", "share", "cum", "MFLOP", "GFLOP/s",
           "kernel", "TF op", "TF node", "output");
    double cum = 0;
    for (int i = 0; i < nk; i++) {
        const tcrt_kernel_info *ki = &m->kernels[rows[i].k];
        double share = total > 0 ? 100.0 * rows[i].ms / total : 0;
        char mf[32], gf[32];
        fmt_flops(ki->flops, rows[i].ms, mf, gf);
        cum += share;
        printf("profile: %9.4f %5.1f%% %5.1f%% %10s %8s  %-28s %-24s %-32s %s\n", rows[i].ms, share, cum, mf,
               gf, ki->kernel ? ki->kernel : "?", ki->op ? ki->op : "?", ki->node ? ki->node : "?",
               ki->type ? ki->type : "?");
    }
    for (int j = 0; j < n_ops; j++) {
        const char *op = m->kernels[ops[j].k].op ? m->kernels[ops[j].k].op : "?";
        char mf[32], gf[32];
        fmt_flops(ops[j].flops, ops[j].ms, mf, gf);
        printf("profile-op: %9.4f %5.1f%% %10s %8s  %-24s %d kernel%s\n", ops[j].ms,
               total > 0 ? 100.0 * ops[j].ms / total : 0, mf, gf, op, ops[j].count,
               ops[j].count == 1 ? "" : "s");
    }
    fflush(stdout);
    free(rows);
    free(ops);
    free(col);
    return true;
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

/* ---- training: batches, log lines, checkpoints ---- */

/* A fed file that did not match the arg exactly (--steps only): read it
 * whole and accept it as k batches when its first dimension is k times the
 * arg's and the other dims are equal.  Returns the exit code (EXIT_OK with
 * *k set and t filled, t->data malloc'ed). */
static int read_batches(const tcrt_io *io, const char *file, tcrt_tensor *t, int64_t *k)
{
    char err[1024];
    tcrt_status s = tcrt_npy_read(file, t, err, sizeof err);
    if (s != TCRT_OK) {
        errorf("feed '%s': %s", io->name, err);
        return (s == TCRT_ERR_DTYPE || s == TCRT_ERR_SHAPE) ? EXIT_USAGE : EXIT_RUN;
    }
    bool ok = t->dtype == io->dtype && io->rank >= 1 && t->rank == io->rank && io->dims[0] >= 1 &&
              t->dims[0] >= io->dims[0] && t->dims[0] % io->dims[0] == 0;
    for (int d = 1; ok && d < io->rank; d++)
        ok = t->dims[d] == io->dims[d];
    if (ok) {
        *k = t->dims[0] / io->dims[0];
        return EXIT_OK;
    }
    char want[256], got[256], batched[300];
    fmt_sig(want, sizeof want, io->dtype, io->rank, io->dims);
    fmt_sig(got, sizeof got, t->dtype, t->rank, t->dims);
    if (io->rank >= 1 && io->dims[0] >= 1) {
        size_t n = (size_t)snprintf(batched, sizeof batched, ", or %s[k*%lld", tcrt_dtype_name(io->dtype),
                                    (long long)io->dims[0]);
        for (int d = 1; d < io->rank && n < sizeof batched; d++)
            n += (size_t)snprintf(batched + n, sizeof batched - n, ",%lld", (long long)io->dims[d]);
        if (n < sizeof batched)
            snprintf(batched + n, sizeof batched - n, "] for k batches (--steps)");
    } else {
        snprintf(batched, sizeof batched, " (an arg of this shape takes no batches)");
    }
    errorf("feed '%s': %s: wrong %s: expected %s%s, got %s", io->name, file,
           t->dtype != io->dtype ? "dtype" : "shape", want, batched, got);
    free(t->data);
    t->data = NULL;
    return EXIT_USAGE;
}

/* "step=S NAME=VALUE ..." for every float one-element result. */
static void log_step(const tcrt_model *m, const uint8_t *arena, int64_t step)
{
    printf("step=%lld", (long long)step);
    for (int j = 0; j < m->n_results; j++) {
        const tcrt_io *io = &m->results[j];
        if (io->dtype == TCRT_F32 && io->bytes == sizeof(float)) {
            float v;
            memcpy(&v, arena + io->offset, sizeof v);
            printf(" %s=%.9g", io->name, (double)v);
        } else if (io->dtype == TCRT_F64 && io->bytes == sizeof(double)) {
            double v;
            memcpy(&v, arena + io->offset, sizeof v);
            printf(" %s=%.17g", io->name, v);
        }
    }
    printf("\n");
    fflush(stdout);
}

/* The folder of a checkpoint prefix ("ckpt/model" -> "ckpt"), created. */
static bool make_prefix_dir(const char *prefix)
{
    const char *slash = strrchr(prefix, '/');
    if (!slash || slash == prefix)
        return true;
    char dir[4096];
    size_t n = (size_t)(slash - prefix);
    if (n >= sizeof dir)
        return false;
    memcpy(dir, prefix, n);
    dir[n] = 0;
    return make_dirs(dir);
}

/* Every variable by name plus the global step; e has n_vars + 1 slots. */
static bool save_ckpt(const tcrt_model *m, const uint8_t *arena, const char *prefix, int64_t step,
                      tcrt_ckpt_entry *e)
{
    for (int i = 0; i < m->n_vars; i++) {
        const tcrt_var *v = &m->vars[i];
        memset(&e[i], 0, sizeof e[i]);
        e[i].key = v->name;
        e[i].dtype = v->dtype;
        e[i].rank = v->rank;
        for (int d = 0; d < v->rank && d < TCRT_MAX_RANK; d++)
            e[i].dims[d] = v->dims[d];
        e[i].bytes = v->bytes;
        e[i].data = arena + v->offset;
    }
    int64_t gs = step;
    memset(&e[m->n_vars], 0, sizeof e[m->n_vars]);
    e[m->n_vars].key = GLOBAL_STEP_KEY;
    e[m->n_vars].dtype = TCRT_I64;
    e[m->n_vars].bytes = sizeof gs;
    e[m->n_vars].data = &gs;
    char err[1024];
    if (tcrt_ckpt_write_step(prefix, step, e, m->n_vars + 1, 2, err, sizeof err) != TCRT_OK) {
        errorf("--save %s (step %lld): %s", prefix, (long long)step, err);
        return false;
    }
    printf("saved step=%lld %s-%lld\n", (long long)step, prefix, (long long)step);
    fflush(stdout);
    return true;
}

/* Every variable of m and the global step (0 when the checkpoint has no
 * "tfcc/global_step": one written by tcrt_model_save or TensorFlow). */
static bool restore_ckpt(const tcrt_model *m, uint8_t *arena, const char *given, int64_t *step)
{
    char err[1024], prefix[4300];
    *step = 0;
    if (tcrt_ckpt_resolve(given, prefix, sizeof prefix, err, sizeof err) != TCRT_OK) {
        errorf("--restore %s: %s", given, err);
        return false;
    }
    if (tcrt_model_restore(m, arena, prefix, err, sizeof err) != TCRT_OK) {
        errorf("--restore %s: %s", prefix, err);
        return false;
    }
    tcrt_ckpt *ck = NULL;
    if (tcrt_ckpt_open(prefix, &ck, err, sizeof err) != TCRT_OK) {
        errorf("--restore %s: %s", prefix, err);
        return false;
    }
    bool ok = true;
    const tcrt_ckpt_entry *e = tcrt_ckpt_find(ck, GLOBAL_STEP_KEY);
    if (e) {
        int64_t gs = -1;
        if (e->dtype != TCRT_I64 || e->bytes != sizeof gs) {
            errorf("--restore %s: %s.index: entry '%s' is %s with %zu bytes, expected an int64 scalar",
                   prefix, prefix, GLOBAL_STEP_KEY, tcrt_dtype_name(e->dtype), e->bytes);
            ok = false;
        } else if (tcrt_ckpt_read(ck, e, &gs, sizeof gs, err, sizeof err) != TCRT_OK) {
            errorf("--restore %s: %s", prefix, err);
            ok = false;
        } else if (gs < 0) {
            errorf("--restore %s: %s.index: entry '%s' is negative (%lld)", prefix, prefix, GLOBAL_STEP_KEY,
                   (long long)gs);
            ok = false;
        } else {
            *step = gs;
        }
    }
    tcrt_ckpt_close(ck);
    return ok;
}

/* Set by runtime/mpi.c on ranks other than 0 of a --cluster run: the
 * results are rank 0's (docs/distributed.md). */
int tcrt_main_skip_results;
int tcrt_main(const tcrt_model *m, int argc, char **argv)
{
    const char *prog = argc > 0 && argv[0] ? argv[0] : "model";
    if (!check_model(m))
        return EXIT_RUN;
    int n_args = m->n_args;
    const char **feed_file = calloc((size_t)n_args + 1, sizeof *feed_file);
    tcrt_tensor *feeds = calloc((size_t)n_args + 1, sizeof *feeds);
    int64_t *n_batches = calloc((size_t)n_args + 1, sizeof *n_batches);
    tcrt_ckpt_entry *entries = calloc((size_t)m->n_vars + 1, sizeof *entries);
    uint8_t *arena = NULL;
    char **written = calloc((size_t)m->n_results + 1, sizeof *written);
    double *times = NULL;
    int n_written = 0;
    int rc = EXIT_OK;
    const char *out_dir = ".", *save = NULL, *restore = NULL;
    long repeat = 0, threads = 0, steps = 0, log_every = 0, save_every = 0;
    bool profile = false, flush = false, flushing = false, huge = false;
    uint64_t *prof = NULL;
    double *prof_run = NULL; /* --profile: each profiled run's time (ms) */
    if (!feed_file || !feeds || !n_batches || !entries || !written) {
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
        if (strcmp(flag, "--profile") == 0 || strcmp(flag, "--flush-denormals") == 0 ||
            strcmp(flag, "--huge-pages") == 0) {
            if (a[flen] == '=') {
                errorf("%s takes no value, got '%s'", flag, a);
                rc = EXIT_USAGE;
                goto done;
            }
            *(strcmp(flag, "--profile") == 0           ? &profile
              : strcmp(flag, "--flush-denormals") == 0 ? &flush
                                                       : &huge) = true;
            continue;
        }
        static const char *const known[] = {"--feed",    "--out-dir",    "--repeat",
                                            "--threads", "--steps",      "--log-every",
                                            "--save",    "--save-every", "--restore"};
        bool is_known = false;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            is_known = is_known || strcmp(flag, known[k]) == 0;
        if (!is_known) {
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
        long *count = strcmp(flag, "--repeat") == 0       ? &repeat
                      : strcmp(flag, "--threads") == 0    ? &threads
                      : strcmp(flag, "--steps") == 0      ? &steps
                      : strcmp(flag, "--log-every") == 0  ? &log_every
                      : strcmp(flag, "--save-every") == 0 ? &save_every
                                                          : NULL;
        if (count) {
            if (!parse_count(flag, val, 1, count)) {
                rc = EXIT_USAGE;
                goto done;
            }
        } else if (strcmp(flag, "--out-dir") == 0) {
            out_dir = val;
        } else if (strcmp(flag, "--save") == 0 || strcmp(flag, "--restore") == 0) {
            size_t vl = strlen(val);
            if (vl == 0 || val[vl - 1] == '/') {
                errorf("%s expects a checkpoint prefix (a file name without .index), got '%s'", flag, val);
                rc = EXIT_USAGE;
                goto done;
            }
            if (strcmp(flag, "--save") == 0)
                save = val;
            else
                restore = val;
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
    const char *conflict = repeat && steps ? "--repeat (timed inference runs) and --steps (training) cannot "
                                             "be combined"
                           : log_every && !steps ? "--log-every needs --steps"
                           : save_every && !save ? "--save-every needs --save"
                           : profile && steps
                               ? "--profile times inference runs (with --repeat); it cannot be "
                                 "combined with --steps"
                               : NULL;
    if (conflict) {
        errorf("%s", conflict);
        rc = EXIT_USAGE;
        goto done;
    }
    if ((save || restore) && m->n_vars == 0) {
        errorf("%s: model '%s' has no variables to checkpoint", save ? "--save" : "--restore",
               m->name ? m->name : "?");
        rc = EXIT_USAGE;
        goto done;
    }
    if (profile && (m->n_kernels <= 0 || !m->kernels)) {
        errorf(
            "--profile: model '%s' has no per-kernel timing (compiled with --cluster, or it has no kernel)",
            m->name ? m->name : "?");
        rc = EXIT_USAGE;
        goto done;
    }
    if (steps && !log_every)
        log_every = steps <= 20 ? 1 : steps / 10;
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
        n_batches[j] = 1;
        tcrt_status s = tcrt_npy_read_feed(feed_file[j], io, &feeds[j], err, sizeof err);
        if (s == TCRT_ERR_SHAPE && (steps || tcrt_main_n_replicas > 1)) {
            rc = read_batches(io, feed_file[j], &feeds[j], &n_batches[j]);
            if (rc == EXIT_OK && tcrt_main_n_replicas > 1 && n_batches[j] % tcrt_main_n_replicas != 0) {
                dp_batch_error(io, feed_file[j], n_batches[j]);
                rc = EXIT_USAGE;
            }
            if (rc != EXIT_OK)
                goto done;
            continue;
        }
        if (s == TCRT_OK && tcrt_main_n_replicas > 1 && io->rank >= 1) { /* one batch for N replicas */
            dp_batch_error(io, feed_file[j], 1);
            rc = EXIT_USAGE;
            goto done;
        }
        if (s != TCRT_OK)
            errorf("feed '%s': %s", io->name, err); /* err: "FILE: reason" */
        else if ((s = tcrt_check_feed(io, &feeds[j], err, sizeof err)) != TCRT_OK)
            errorf("%s (from %s)", err, feed_file[j]); /* err: "feed 'NAME': reason" */
        if (s != TCRT_OK) {
            rc = (s == TCRT_ERR_DTYPE || s == TCRT_ERR_SHAPE) ? EXIT_USAGE : EXIT_RUN;
            goto done;
        }
        /* a large feed is read again, straight into the arena, before each
         * run instead of being kept: no second copy of it while the model
         * runs (an RGB image is a few hundred KB to a few MB) */
        if (io->bytes >= FEED_REREAD_BYTES) {
            free(feeds[j].data);
            feeds[j].data = NULL;
        }
    }

    /* 4. arena, state, checkpoint folder */
    if (threads > 0)
        tcrt_set_threads((int)threads);
    if (flush) { /* this thread's mode; the pool's workers follow it per job */
        if (tcrt_flush_denormals(1) != 0) {
            errorf("--flush-denormals: this CPU has no flush-to-zero mode");
            rc = EXIT_USAGE;
            goto done;
        }
        flushing = true;
    }
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
    tcrt_vars_init(m, arena);
    if (huge) /* before the runs stream the weights (tcrt.h) */
        (void)tcrt_huge_pages(m->weights, m->weights_bytes);
    int64_t start = 0;
    if (restore && !restore_ckpt(m, arena, restore, &start)) {
        rc = EXIT_RUN;
        goto done;
    }
    if (save && !tcrt_main_skip_save && !make_prefix_dir(save)) {
        errorf("--save %s: cannot create the checkpoint's folder: %s", save, strerror(errno));
        rc = EXIT_RUN;
        goto done;
    }
    if (steps && start >= steps) {
        printf(
            "step=%lld: the restored state is already at --steps %ld; nothing to run, no results written\n",
            (long long)start, steps);
        fflush(stdout);
        goto done;
    }

    /* 5. runs */
    long n_runs = repeat > 0 ? repeat + 1 : 1;
    int64_t end = steps ? (int64_t)steps : start + n_runs;
    times = repeat > 0 ? calloc((size_t)repeat, sizeof *times) : NULL;
    if (repeat > 0 && !times) {
        errorf("out of memory");
        rc = EXIT_RUN;
        goto done;
    }
    long n_prof = repeat > 0 ? repeat : 1;
    if (profile && (size_t)n_prof > SIZE_MAX / sizeof *prof / (size_t)m->n_kernels) {
        errorf("--profile: too many runs");
        rc = EXIT_USAGE;
        goto done;
    }
    prof = profile ? calloc((size_t)n_prof * (size_t)m->n_kernels, sizeof *prof) : NULL;
    prof_run = profile ? calloc((size_t)n_prof, sizeof *prof_run) : NULL;
    if (profile && (!prof || !prof_run)) {
        errorf("--profile: cannot allocate %ld x %d timings", n_prof, m->n_kernels);
        rc = EXIT_RUN;
        goto done;
    }
    double run_ms = 0;
    for (int64_t step = start; step < end; step++) {
        for (int j = 0; j < n_args; j++) {
            char err[1024];
            if (!feeds[j].data && m->args[j].bytes > 0) { /* FEED_REREAD_BYTES */
                if (tcrt_npy_read_feed_into(feed_file[j], &m->args[j], arena + m->args[j].offset, err,
                                            sizeof err) != TCRT_OK) {
                    errorf("feed '%s': %s (read again before run %lld)", m->args[j].name, err,
                           (long long)(step - start) + 1);
                    rc = EXIT_RUN;
                    goto done;
                }
                continue;
            }
            tcrt_tensor batch = feeds[j];
            if (n_batches[j] > 1) {
                batch.dims[0] = m->args[j].dims[0];
                int64_t b = steps ? (step * tcrt_main_n_replicas + tcrt_main_replica) % n_batches[j]
                                  : tcrt_main_replica % n_batches[j];
                batch.data = (uint8_t *)feeds[j].data + (size_t)b * m->args[j].bytes;
            }
            tcrt_status s = tcrt_set_feed(m, arena, j, &batch, err, sizeof err);
            if (s != TCRT_OK) {
                errorf("%s", err);
                rc = EXIT_RUN;
                goto done;
            }
        }
        long pr = repeat > 0 ? (long)(step - start) - 1 : 0; /* the profiled run's row; -1: warm-up */
        if (prof && pr >= 0)
            tcrt_prof_ns = prof + (size_t)pr * (size_t)m->n_kernels;
        double t0 = now_ms();
        tcrt_status s = m->run(arena);
        double t1 = now_ms();
        tcrt_prof_ns = NULL;
        if (prof && pr >= 0)
            prof_run[pr] = t1 - t0;
        if (s != TCRT_OK) {
            if (steps)
                errorf("model '%s' failed at step %lld: %s (status %d)", m->name ? m->name : "?",
                       (long long)step + 1, tcrt_status_str(s), (int)s);
            else
                errorf("model '%s' failed: %s (status %d)", m->name ? m->name : "?", tcrt_status_str(s),
                       (int)s);
            rc = EXIT_RUN;
            goto done;
        }
        tcrt_vars_commit(m, arena);
        run_ms += t1 - t0;
        long r = (long)(step - start);
        if (repeat > 0 && r > 0)
            times[r - 1] = t1 - t0;
        bool last = step + 1 == end;
        if (steps && ((step + 1) % log_every == 0 || last))
            log_step(m, arena, step + 1);
        tcrt_main_runs++;
        bool saving = save && ((save_every && (step + 1) % save_every == 0) || last);
        if (saving && tcrt_main_before_save && tcrt_main_before_save(m, arena) != 0) {
            rc = EXIT_RUN;
            goto done;
        }
        if (saving && !tcrt_main_skip_save &&
            !save_ckpt(m, arena, save, step + 1, entries)) {
            rc = EXIT_RUN;
            goto done;
        }
    }
    if (repeat > 0) {
        print_median_ms(median_of(times, repeat));
    }
    if (prof && !print_profile(m, prof, n_prof, prof_run)) {
        errorf("out of memory");
        rc = EXIT_RUN;
        goto done;
    }
    if (steps)
        printf("trained step=%lld steps_run=%lld ms_per_step=%.4f\n", (long long)end,
               (long long)(end - start), run_ms / (double)(end - start));

    /* 6. results (skipped on the MPI ranks other than 0: runtime/mpi.c) */
    if (tcrt_main_skip_results)
        goto done;
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
    if (flushing) /* the caller's thread back to IEEE subnormals (tcrt_main may be called again) */
        tcrt_flush_denormals(0);
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
    free(n_batches);
    free(entries);
    free(times);
    free(prof);
    free(prof_run);
    free((void *)feed_file);
    free(arena);
    return rc;
}
