/* tests/codegen/test_state.c - variables through the passes, both backends
 * and the training executable (Check suite "state"; docs/training.md).
 *
 * Graphs are built by hand with the IR API: VARIABLE nodes with CONST
 * initial values, updates as elementwise ops + ASSIGN (no autodiff pass).
 *   ctr: c f32[2] := 2 c + x (assigned), k f32[2] (never assigned: frozen),
 *        fetches c (a read), the assign's output and k + x;
 *   lin: linear regression y ~ x W + b on batches of 4 rows, loss = mean
 *        squared error, one hand-written SGD step per run (dW = x^T e / 2,
 *        db = sum(e) / 2 with e = x W + b - y, lr = 0.05).
 * Cases:
 *   - the generated C API (a user program, C backend and LLVM backend):
 *     values kept across NAME_run calls and after writes through
 *     NAME_var_<x>, fetched reads see the run-start value (snapshot),
 *     NAME_init resets, the frozen variable has no table entry; the
 *     expected values are derived by hand in the program's comments;
 *   - lin trained for 60 steps over 7 batches (--steps, batch i mod 7):
 *     the final W and b against an independent double-precision SGD loop
 *     written here (within 1e-4), the first logged loss against its value
 *     derived by hand;
 *   - kill and resume: the trainer (400 steps, --save-every 10) runs as a
 *     child with stdout in a 4 KiB pipe, so it blocks writing its log a
 *     bounded number of steps after the parent stops reading; once the
 *     checkpoint holds a step >= 30 (polled) it is SIGKILLed, restarted
 *     with --restore, and its final variables (results and checkpoint)
 *     must be bitwise equal to an uninterrupted run's (--threads 1);
 *   - --backend llvm gives bitwise the same variables and losses as
 *     --backend c after 50 steps (skipped when LLVM is not built).
 */
#define _GNU_SOURCE /* F_SETPIPE_SZ */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "passes/passes.h"
#include "targets/targets.h"
#include "tcrt_ckpt.h"
#include "tfcc_config.h"

#if defined(__aarch64__)
#define HOST_TRIPLE "aarch64-unknown-linux-gnu"
#define HOST_CPU "generic"
#else
#define HOST_TRIPLE "x86_64-pc-linux-gnu"
#define HOST_CPU "x86-64"
#endif

/* ---- files and processes ---- */

static void make_tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/tfcc-state-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

static void remove_tree(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Runs argv (NULL-terminated) with stdout and stderr into log_path;
 * returns the exit status (128 + signal when killed). */
static int run_logged(char *const argv[], const char *log_path)
{
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        close(fd);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The whole file as a NUL-terminated malloc'ed string. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

/* The lines of text that start with "step=", from the one starting with
 * `first` (or the first such line when first is NULL), malloc'ed. */
static char *step_lines(const char *text, const char *first)
{
    char *out = malloc(strlen(text) + 1);
    ck_assert_ptr_nonnull(out);
    size_t n = 0;
    bool on = first == NULL;
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) + 1 : strlen(l);
        if (!on && strncmp(l, first, strlen(first)) == 0)
            on = true;
        if (on && strncmp(l, "step=", 5) == 0) {
            memcpy(out + n, l, len);
            n += len;
        }
        l += len;
    }
    out[n] = 0;
    return out;
}

static void assert_same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    ck_assert_msg(na == nb && memcmp(x, y, na) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

static void write_npy_f32(const char *path, const float *data, int rank, const int64_t *dims)
{
    tcrt_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)data;
    t.dtype = TCRT_F32;
    t.rank = rank;
    for (int d = 0; d < rank; d++)
        t.dims[d] = dims[d];
    char err[256];
    ck_assert_msg(tcrt_npy_write(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
}

/* n floats of an .npy result into out. */
static void read_npy_f32(const char *path, float *out, int64_t n)
{
    tcrt_tensor t;
    char err[256];
    ck_assert_msg(tcrt_npy_read(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(t.dtype, TCRT_F32);
    ck_assert_int_eq(tcrt_tensor_count(&t), n);
    memcpy(out, t.data, (size_t)n * sizeof(float));
    free(t.data);
}

/* The checkpoint a trainer's --save PREFIX last committed (PREFIX.latest). */
static const char *latest(const char *prefix, char *buf, size_t n)
{
    return tcrt_ckpt_resolve(prefix, buf, n, NULL, 0) == TCRT_OK ? buf : prefix;
}

/* The global step of the newest checkpoint of series prefix, -1 when it
 * cannot be opened. */
static int64_t ckpt_step(const char *series)
{
    char prefix[600];
    tcrt_ckpt *ck = NULL;
    if (tcrt_ckpt_open(latest(series, prefix, sizeof prefix), &ck, NULL, 0) != TCRT_OK)
        return -1;
    int64_t gs = -1;
    const tcrt_ckpt_entry *e = tcrt_ckpt_find(ck, "tfcc/global_step");
    if (!e || e->dtype != TCRT_I64 || tcrt_ckpt_read(ck, e, &gs, sizeof gs, NULL, 0) != TCRT_OK)
        gs = -1;
    tcrt_ckpt_close(ck);
    return gs;
}

/* Every entry of the newest checkpoints of series sa and sb has the same
 * key, type and bytes. */
static void assert_same_ckpt(const char *sa, const char *sb)
{
    tcrt_ckpt *ca = NULL, *cb = NULL;
    char err[512], pa[600], pb[600];
    const char *a = latest(sa, pa, sizeof pa), *b = latest(sb, pb, sizeof pb);
    ck_assert_msg(tcrt_ckpt_open(a, &ca, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_msg(tcrt_ckpt_open(b, &cb, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_ckpt_count(ca), tcrt_ckpt_count(cb));
    for (int i = 0; i < tcrt_ckpt_count(ca); i++) {
        const tcrt_ckpt_entry *ea = tcrt_ckpt_get(ca, i), *eb = tcrt_ckpt_find(cb, ea->key);
        ck_assert_msg(eb != NULL, "%s: no entry '%s'", b, ea->key);
        ck_assert_int_eq(ea->dtype, eb->dtype);
        ck_assert_uint_eq(ea->bytes, eb->bytes);
        char *da = malloc(ea->bytes + 1), *db = malloc(eb->bytes + 1);
        ck_assert(da && db);
        ck_assert_msg(tcrt_ckpt_read(ca, ea, da, ea->bytes, err, sizeof err) == TCRT_OK, "%s", err);
        ck_assert_msg(tcrt_ckpt_read(cb, eb, db, eb->bytes, err, sizeof err) == TCRT_OK, "%s", err);
        ck_assert_msg(memcmp(da, db, ea->bytes) == 0, "entry '%s' differs between %s and %s", ea->key, a, b);
        free(da);
        free(db);
    }
    tcrt_ckpt_close(ca);
    tcrt_ckpt_close(cb);
}

/* ---- graphs ---- */

static IrValue variable(IrGraph *g, const char *name, int rank, const int64_t *dims, const float *init,
                        Status *st)
{
    ir_graph_set_origin(g, name, "VariableV2");
    IrShape s = ir_shape_make(rank, dims);
    IrValue c = ir_const(g, TCRT_F32, &s, init, st);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1; /* trainable */
    return ir_emit1(g, OP_VARIABLE, &c, 1, &p, NULL, st);
}

static IrValue assign(IrGraph *g, const char *name, IrValue var, IrValue value, Status *st)
{
    ir_graph_set_origin(g, name, "Assign");
    IrValue in[2] = {var, value};
    return ir_emit1(g, OP_ASSIGN, in, 2, NULL, NULL, st);
}

static IrValue op2(IrGraph *g, const char *name, Op op, IrValue a, IrValue b, Status *st)
{
    ir_graph_set_origin(g, name, ir_op_name(op));
    return ir_binary(g, op, a, b, st);
}

static IrValue scalar(IrGraph *g, double v, Status *st)
{
    ir_graph_set_origin(g, "const", "Const");
    return ir_const_scalar_f(g, TCRT_F32, v, st);
}

static void plan(IrGraph *g, Status *st)
{
    ck_assert_msg(st_ok(st), "%s", st->msg);
    ck_assert_msg(pass_run_pipeline(g, NULL, st), "%s", st->msg);
}

/* ctr: c := 2 c + x; fetches c_read (c), c_next (the assign) and k_plus
 * (k + x, k never assigned). */
static IrGraph *counter_graph(void)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    ck_assert_ptr_nonnull(g);
    g->fold_on_build = false;
    IrType xt = {TCRT_F32, ir_shape_make(1, (int64_t[]){2})};
    ir_graph_set_origin(g, "x", "Placeholder");
    IrValue x = ir_add_feed(g, "x", &xt, &st);
    IrValue c = variable(g, "c", 1, (int64_t[]){2}, (float[]){1, 2}, &st);
    IrValue k = variable(g, "k", 1, (int64_t[]){2}, (float[]){10, 20}, &st);
    IrValue next = op2(g, "c_new", OP_ADD, op2(g, "c2", OP_MUL, c, scalar(g, 2, &st), &st), x, &st);
    IrValue a = assign(g, "c_next", c, next, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_add_fetch(g, "c_read", c, &st));
    ck_assert(ir_add_fetch(g, "c_next", a, &st));
    ck_assert(ir_add_fetch(g, "k_plus", op2(g, "k_plus", OP_ADD, k, x, &st), &st));
    plan(g, &st);
    return g;
}

#define LIN_B 4 /* rows per batch */
#define LIN_K 7 /* batches in the fed files (a kill at step 30, 40, 50 or 60 is mid-cycle) */
#define LIN_LR 0.05
static const float lin_w0[3] = {0.1f, -0.2f, 0.3f};

/* lin: one SGD step of y ~ x W + b per run; fetches loss (before the
 * step), w_next and b_next (the assigns). */
static IrGraph *linreg_graph(void)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    ck_assert_ptr_nonnull(g);
    g->fold_on_build = false;
    IrType xt = {TCRT_F32, ir_shape_make(2, (int64_t[]){LIN_B, 3})};
    IrType yt = {TCRT_F32, ir_shape_make(2, (int64_t[]){LIN_B, 1})};
    ir_graph_set_origin(g, "x", "Placeholder");
    IrValue x = ir_add_feed(g, "x", &xt, &st);
    ir_graph_set_origin(g, "y", "Placeholder");
    IrValue y = ir_add_feed(g, "y", &yt, &st);
    IrValue w = variable(g, "dense/kernel", 2, (int64_t[]){3, 1}, lin_w0, &st);
    IrValue b = variable(g, "dense/bias", 1, (int64_t[]){1}, (float[]){0}, &st);
    IrParams p;
    memset(&p, 0, sizeof p);
    ir_graph_set_origin(g, "dense/MatMul", "MatMul");
    IrValue mm = ir_emit1(g, OP_MATMUL, (IrValue[]){x, w}, 2, &p, NULL, &st);
    IrValue pred = op2(g, "dense/BiasAdd", OP_ADD, mm, b, &st);
    IrValue e = op2(g, "err", OP_SUB, pred, y, &st);
    IrValue sq = op2(g, "sq", OP_MUL, e, e, &st);
    memset(&p, 0, sizeof p);
    p.i[0] = 3; /* both axes */
    ir_graph_set_origin(g, "sum_sq", "Sum");
    IrValue ss = ir_emit1(g, OP_REDUCE_SUM, &sq, 1, &p, NULL, &st);
    IrValue loss = op2(g, "loss", OP_MUL, ss, scalar(g, 1.0 / LIN_B, &st), &st);
    IrValue ge = op2(g, "grad_pred", OP_MUL, e, scalar(g, 2.0 / LIN_B, &st), &st);
    memset(&p, 0, sizeof p);
    p.i[TCRT_MM_TA] = 1;
    ir_graph_set_origin(g, "grad_w", "MatMul");
    IrValue gw = ir_emit1(g, OP_MATMUL, (IrValue[]){x, ge}, 2, &p, NULL, &st);
    memset(&p, 0, sizeof p);
    p.i[0] = 1; /* rows */
    ir_graph_set_origin(g, "grad_b", "Sum");
    IrValue gb = ir_emit1(g, OP_REDUCE_SUM, &ge, 1, &p, NULL, &st);
    IrValue lr = scalar(g, LIN_LR, &st);
    IrValue wn = op2(g, "w_new", OP_SUB, w, op2(g, "w_step", OP_MUL, gw, lr, &st), &st);
    IrValue bn = op2(g, "b_new", OP_SUB, b, op2(g, "b_step", OP_MUL, gb, lr, &st), &st);
    IrValue wa = assign(g, "w_next", w, wn, &st);
    IrValue ba = assign(g, "b_next", b, bn, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_add_fetch(g, "loss", loss, &st));
    ck_assert(ir_add_fetch(g, "w_next", wa, &st));
    ck_assert(ir_add_fetch(g, "b_next", ba, &st));
    plan(g, &st);
    return g;
}

/* The fed data: LIN_K batches of LIN_B rows, y = x (1, -2, 0.5) + 0.3. */
static void lin_data(float *xs, float *ys)
{
    for (int r = 0; r < LIN_K * LIN_B; r++) {
        for (int c = 0; c < 3; c++)
            xs[r * 3 + c] = (float)((r * 7 + c * 5) % 11 - 5) / 4.0f;
        ys[r] = xs[r * 3] - 2 * xs[r * 3 + 1] + 0.5f * xs[r * 3 + 2] + 0.3f;
    }
}

static void write_lin_feeds(const char *dir, char *xarg, char *yarg, size_t n)
{
    float xs[LIN_K * LIN_B * 3], ys[LIN_K * LIN_B];
    lin_data(xs, ys);
    char path[256];
    snprintf(path, sizeof path, "%s/x.npy", dir);
    write_npy_f32(path, xs, 2, (int64_t[]){LIN_K * LIN_B, 3});
    snprintf(xarg, n, "x=%s", path);
    snprintf(path, sizeof path, "%s/y.npy", dir);
    write_npy_f32(path, ys, 2, (int64_t[]){LIN_K * LIN_B, 1});
    snprintf(yarg, n, "y=%s", path);
}

/* ---- building ---- */

/* C backend: dir/NAME.{c,h,o}, NAME_weights.o and the executable dir/NAME. */
static void build_c(const IrGraph *g, const char *dir, const char *name)
{
    Status st = ST_INIT;
    CgOptions o = {.name = name, .source_file = "state.pbtxt"};
    ck_assert_msg(cgc_emit(g, &o, dir, &st), "%s", st.msg);
    char exe[300];
    snprintf(exe, sizeof exe, "%s/%s", dir, name);
    TgtTimes times = {0};
    ck_assert_msg(tgt_build_exe(tgt_host(), dir, name, exe, &times, &st), "%s", st.msg);
}

/* LLVM backend: dir/NAME_llvm.o and the executable dir/NAME_llvm (NAME.h
 * and NAME_main.c from a build_c into the same dir). */
static void build_llvm(const IrGraph *g, const char *dir, const char *name)
{
    Status st = ST_INIT;
    CgOptions o = {.name = name, .source_file = "state.pbtxt"};
    CgLlvmTarget t = {HOST_TRIPLE, HOST_CPU, NULL};
    char obj[300], cmd[2048];
    snprintf(obj, sizeof obj, "%s/%s_llvm.o", dir, name);
    ck_assert_msg(cgl_emit_object(g, &o, &t, obj, &st), "%s", st.msg);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cc -std=c11 -O2 -I'%s' %s_main.c %s_llvm.o -o %s_llvm -L'%s' "
             "-ltcrt_fast -ltcrt -pthread -lm > link.log 2>&1",
             dir, TFCC_RUNTIME_INCLUDE, name, name, name, TFCC_RUNTIME_LIBDIR);
    ck_assert_msg(system(cmd) == 0, "linking the LLVM object failed (see %s/link.log)", dir);
}

/* ---- the generated API ---- */

/* Expected values: c starts {1, 2}; x = {0.5, 1}.
 * run 1: read {1, 2}, next 2 {1, 2} + x = {2.5, 5};
 * run 2: read {2.5, 5}, next {5.5, 11};
 * after c := {0, -1}: read {0, -1}, next {0.5, -1};
 * k + x = {10.5, 21} every run. */
static const char ctr_user[] =
    "#include <string.h>\n#include \"ctr.h\"\n"
    "static int eq2(const float *v, float a, float b) { return v[0] == a && v[1] == b; }\n"
    "int main(void)\n{\n"
    "    static const float x[2] = {0.5f, 1};\n"
    "    if (CTR_NUM_VARS != 1) return 2;\n"
    "    const tcrt_model *sig = ctr_signature();\n"
    "    if (sig->n_vars != 1 || tcrt_find_var(sig, \"c\") != 0 || tcrt_find_var(sig, \"k\") != -1) return "
    "3;\n"
    "    if (strcmp(sig->vars[0].name, \"c\") != 0 || sig->vars[0].new_offset < 0) return 4;\n"
    "    ctr *m = ctr_new();\n"
    "    if (!m) return 5;\n"
    "    float *c = ctr_var_c(m);\n"
    "    if (c != ctr_var(m, 0) || ctr_var(m, 1) != NULL || ctr_var(m, -1) != NULL) return 6;\n"
    "    if (!eq2(c, 1, 2)) return 7;\n"
    "    memcpy(ctr_arg_x(m), x, sizeof x);\n"
    "    const float *rd = ctr_result_c_read(m), *nx = ctr_result_c_next(m), *kp = ctr_result_k_plus(m);\n"
    "    if (ctr_run(m) != TCRT_OK) return 8;\n"
    "    if (!eq2(rd, 1, 2) || !eq2(nx, 2.5f, 5) || !eq2(c, 2.5f, 5) || !eq2(kp, 10.5f, 21)) return 9;\n"
    "    if (ctr_run(m) != TCRT_OK) return 10;\n"
    "    if (!eq2(rd, 2.5f, 5) || !eq2(nx, 5.5f, 11) || !eq2(c, 5.5f, 11)) return 11;\n"
    "    c[0] = 0;\n"
    "    c[1] = -1;\n"
    "    if (ctr_run(m) != TCRT_OK) return 12;\n"
    "    if (!eq2(rd, 0, -1) || !eq2(nx, 0.5f, -1) || !eq2(c, 0.5f, -1)) return 13;\n"
    "    ctr_free(m);\n"
    "    static _Alignas(64) unsigned char scratch[CTR_ARENA_BYTES];\n"
    "    ctr t;\n"
    "    if (ctr_init(&t, scratch, sizeof scratch) != TCRT_OK) return 14;\n"
    "    float *tc = ctr_var_c(&t);\n"
    "    if (!eq2(tc, 1, 2)) return 15;\n"
    "    memcpy(ctr_arg0(&t), x, sizeof x);\n"
    "    if (ctr_run(&t) != TCRT_OK || !eq2(tc, 2.5f, 5)) return 16;\n"
    "    if (ctr_init(&t, scratch, sizeof scratch) != TCRT_OK || !eq2(tc, 1, 2)) return 17;\n"
    "    if (ctr_run(&t) != TCRT_OK || !eq2(tc, 2.5f, 5)) return 18;\n"
    "    tcrt_vars_init(sig, scratch);\n"
    "    if (!eq2(tc, 1, 2)) return 19;\n"
    "    return 0;\n}\n";

/* Compiles ctr_user against objs (in dir) and runs it. */
static void run_ctr_user(const char *dir, const char *objs)
{
    char path[300], cmd[2048], log[300];
    snprintf(path, sizeof path, "%s/user.c", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(ctr_user, f);
    fclose(f);
    snprintf(
        cmd, sizeof cmd,
        "cd '%s' && cc -std=c11 -I'%s' user.c %s -o user -L'%s' -ltcrt_fast -ltcrt -pthread -lm "
        "> user.log 2>&1",
        dir, TFCC_RUNTIME_INCLUDE, objs, TFCC_RUNTIME_LIBDIR);
    ck_assert_msg(system(cmd) == 0, "compiling user.c failed (see %s/user.log)", dir);
    snprintf(path, sizeof path, "%s/user", dir);
    snprintf(log, sizeof log, "%s/user.out", dir);
    char *argv[] = {path, NULL};
    int rc = run_logged(argv, log);
    ck_assert_msg(rc == 0, "%s: the API check failed at step %d", objs, rc);
}

START_TEST(test_api_c)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    IrGraph *g = counter_graph();
    /* the frozen k is a constant now: one VARIABLE left */
    int n_vars = 0;
    IR_FOR_EACH(g, n)
    {
        n_vars += n->op == OP_VARIABLE;
    }
    ck_assert_int_eq(n_vars, 1);
    build_c(g, dir, "ctr");
    char path[300];
    snprintf(path, sizeof path, "%s/ctr.h", dir);
    char *h = slurp(path, NULL);
    ck_assert_ptr_nonnull(strstr(h, "#define CTR_NUM_VARS 1"));
    ck_assert_ptr_nonnull(strstr(h, "float *ctr_var_c(ctr *m);"));
    ck_assert_ptr_null(strstr(h, "ctr_var_k"));
    free(h);
    run_ctr_user(dir, "ctr.o ctr_weights.o");
    ir_graph_free(g);
    remove_tree(dir);
}
END_TEST

START_TEST(test_api_llvm)
{
    if (!cgl_available()) {
        printf("  state: LLVM backend not built; API case skipped\n");
        return;
    }
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    IrGraph *g = counter_graph();
    build_c(g, dir, "ctr"); /* ctr.h */
    build_llvm(g, dir, "ctr");
    run_ctr_user(dir, "ctr_llvm.o");
    ir_graph_free(g);
    remove_tree(dir);
}
END_TEST

/* ---- training ---- */

/* The same SGD in double, steps 0..n-1 on batch i mod LIN_K. */
static void lin_reference(int n, double *w, double *b, double *first_loss)
{
    float xs[LIN_K * LIN_B * 3], ys[LIN_K * LIN_B];
    lin_data(xs, ys);
    for (int c = 0; c < 3; c++)
        w[c] = lin_w0[c];
    *b = 0;
    for (int s = 0; s < n; s++) {
        const float *x = xs + (s % LIN_K) * LIN_B * 3, *y = ys + (s % LIN_K) * LIN_B;
        double gw[3] = {0, 0, 0}, gb = 0, loss = 0;
        for (int r = 0; r < LIN_B; r++) {
            double e = x[r * 3] * w[0] + x[r * 3 + 1] * w[1] + x[r * 3 + 2] * w[2] + *b - y[r];
            loss += e * e / LIN_B;
            for (int c = 0; c < 3; c++)
                gw[c] += x[r * 3 + c] * e * 2 / LIN_B;
            gb += e * 2 / LIN_B;
        }
        if (s == 0)
            *first_loss = loss;
        for (int c = 0; c < 3; c++)
            w[c] -= LIN_LR * gw[c];
        *b -= LIN_LR * gb;
    }
}

START_TEST(test_train_against_reference)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    IrGraph *g = linreg_graph();
    build_c(g, dir, "lin");
    char xarg[300], yarg[300], exe[300], out[300], log[300];
    write_lin_feeds(dir, xarg, yarg, sizeof xarg);
    snprintf(exe, sizeof exe, "%s/lin", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    char *argv[] = {exe, "--feed", xarg, "--feed", yarg, "--steps", "60", "--out-dir", out, NULL};
    ck_assert_int_eq(run_logged(argv, log), 0);
    char *text = slurp(log, NULL);
    /* 60 steps log every 6: the first line is step 6, the last step 60 */
    ck_assert_msg(strncmp(text, "step=6 loss=", 12) == 0, "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "\nstep=60 loss="));
    ck_assert_ptr_null(strstr(text, "\nstep=7 "));
    free(text);
    double w[3], b, loss0;
    lin_reference(60, w, &b, &loss0);
    /* the first batch's loss by hand (rows 0-3 of lin_data: x = (-1.25, 0,
     * 1.25), (0.5, -1, 0.25), (-0.5, 0.75, -0.75), (1.25, -0.25, 1); y =
     * -0.325, 2.925, -2.075, 2.55; w0 = (0.1, -0.2, 0.3), b = 0): errors
     * 0.575, -2.6, 1.65, -2.075, loss (0.330625 + 6.76 + 2.7225 + 4.305625) / 4 */
    ck_assert(fabs(loss0 - 3.5296875) < 1e-6);
    char *argv1[] = {exe, "--feed", xarg, "--feed", yarg, "--steps", "1", "--out-dir", out, NULL};
    ck_assert_int_eq(run_logged(argv1, log), 0);
    text = slurp(log, NULL);
    ck_assert_msg(strncmp(text, "step=1 loss=", 12) == 0, "%s", text);
    double l1 = strtod(text + 12, NULL);
    ck_assert_msg(fabs(l1 - 3.5296875) < 1e-6, "first loss %.9g", l1);
    free(text);
    /* the 60-step run's results */
    ck_assert_int_eq(run_logged(argv, log), 0);
    float got_w[3], got_b;
    char path[400];
    snprintf(path, sizeof path, "%s/w_next.npy", out);
    read_npy_f32(path, got_w, 3);
    snprintf(path, sizeof path, "%s/b_next.npy", out);
    read_npy_f32(path, &got_b, 1);
    for (int c = 0; c < 3; c++)
        ck_assert_msg(fabs(got_w[c] - w[c]) < 1e-4, "W[%d]: got %.7g, want %.7g", c, (double)got_w[c], w[c]);
    ck_assert_msg(fabs(got_b - b) < 1e-4, "b: got %.7g, want %.7g", (double)got_b, b);
    /* and training reduced the loss on the way to (1, -2, 0.5), 0.3 */
    ck_assert(fabs(w[1] - -2.0) < fabs(lin_w0[1] - -2.0));
    ir_graph_free(g);
    remove_tree(dir);
}
END_TEST

#define KILL_STEPS "400"

START_TEST(test_kill_and_resume)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    IrGraph *g = linreg_graph();
    build_c(g, dir, "lin");
    char xarg[300], yarg[300], exe[300];
    write_lin_feeds(dir, xarg, yarg, sizeof xarg);
    snprintf(exe, sizeof exe, "%s/lin", dir);
    char full_ck[300], full_out[300], full_log[300], ck[300], out1[300], out2[300], log2[300];
    snprintf(full_ck, sizeof full_ck, "%s/full/ckpt", dir);
    snprintf(full_out, sizeof full_out, "%s/full_out", dir);
    snprintf(full_log, sizeof full_log, "%s/full.txt", dir);
    snprintf(ck, sizeof ck, "%s/killed/ckpt", dir);
    snprintf(out1, sizeof out1, "%s/out1", dir);
    snprintf(out2, sizeof out2, "%s/out2", dir);
    snprintf(log2, sizeof log2, "%s/resumed.txt", dir);

    /* the uninterrupted run */
    char *full[] = {exe,        "--feed",       xarg, "--feed",      yarg,     "--steps",
                    KILL_STEPS, "--threads",    "1",  "--log-every", "1",      "--save",
                    full_ck,    "--save-every", "10", "--out-dir",   full_out, NULL};
    ck_assert_int_eq(run_logged(full, full_log), 0);
    ck_assert_int_eq(ckpt_step(full_ck), 400);

    /* the killed run: its log goes into a 4 KiB pipe that is no longer read
     * after step 30, so it blocks ~130 steps later, long before step 400 */
    int pfd[2];
    ck_assert_int_eq(pipe(pfd), 0);
    ck_assert_int_ge(fcntl(pfd[1], F_SETPIPE_SZ, 4096), 4096);
    char *killed[] = {exe,        "--feed",       xarg, "--feed",      yarg, "--steps",
                      KILL_STEPS, "--threads",    "1",  "--log-every", "1",  "--save",
                      ck,         "--save-every", "10", "--out-dir",   out1, NULL};
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (dup2(pfd[1], 1) < 0)
            _exit(126);
        close(pfd[0]);
        close(pfd[1]);
        execv(exe, killed);
        _exit(127);
    }
    close(pfd[1]);
    /* a log line is >= 24 bytes ("step=NN loss=X b_next=Y"): the child can
     * get at most capacity / 24 steps past the last line read here */
    int capacity = fcntl(pfd[0], F_GETPIPE_SZ);
    ck_assert_msg(capacity > 0 && 30 + capacity / 24 < 400, "pipe capacity %d", capacity);
    char line[512];
    size_t len = 0;
    long seen = 0;
    while (seen < 30) { /* byte by byte: nothing read ahead of the line */
        char ch;
        ck_assert_int_eq(read(pfd[0], &ch, 1), 1);
        if (ch != '\n' && len + 1 < sizeof line) {
            line[len++] = ch;
            continue;
        }
        line[len] = 0;
        len = 0;
        if (strncmp(line, "step=", 5) == 0)
            seen = strtol(line + 5, NULL, 10);
    }
    int64_t at = -1;
    for (int i = 0; i < 10000 && at < 30; i++) { /* poll: at most 10 s */
        at = ckpt_step(ck);
        if (at < 30)
            usleep(1000);
    }
    ck_assert_msg(at >= 30, "no checkpoint at step >= 30 (got %lld)", (long long)at);
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    close(pfd[0]);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the trainer ended before the kill");
    int64_t saved = ckpt_step(ck);
    ck_assert_msg(saved >= 30 && saved < 400 && saved % 10 == 0, "checkpoint at step %lld", (long long)saved);
    printf("  state: trainer killed with its checkpoint at step %lld of 400\n", (long long)saved);
    char path[400];
    snprintf(path, sizeof path, "%s/w_next.npy", out1);
    ck_assert_int_ne(access(path, F_OK), 0); /* a killed run writes no results */

    /* resumed: continues at saved + 1 with the same batches */
    char *resumed[] = {exe,  "--feed",      xarg, "--feed",    yarg, "--steps", KILL_STEPS, "--threads",
                       "1",  "--log-every", "1",  "--restore", ck,   "--save",  ck,         "--save-every",
                       "10", "--out-dir",   out2, NULL};
    ck_assert_int_eq(run_logged(resumed, log2), 0);
    char *text = slurp(log2, NULL);
    char want[64];
    snprintf(want, sizeof want, "step=%lld loss=", (long long)saved + 1);
    ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "resumed log starts with: %.60s", text);
    snprintf(want, sizeof want, "trained step=400 steps_run=%lld ", (long long)(400 - saved));
    ck_assert_ptr_nonnull(strstr(text, want));
    /* the resumed log's step lines are the uninterrupted run's from there on */
    char *full_text = slurp(full_log, NULL);
    snprintf(want, sizeof want, "step=%lld loss=", (long long)saved + 1);
    char *a = step_lines(full_text, want), *b = step_lines(text, NULL);
    ck_assert_uint_eq(strlen(b), strlen(a));
    ck_assert_int_gt(strlen(b), 0);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    free(text);
    free(full_text);
    assert_same_ckpt(full_ck, ck);
    ck_assert_int_eq(ckpt_step(ck), 400);
    static const char *const results[] = {"w_next.npy", "b_next.npy", "loss.npy"};
    for (int i = 0; i < 3; i++) {
        char a[400], b[400];
        snprintf(a, sizeof a, "%s/%s", full_out, results[i]);
        snprintf(b, sizeof b, "%s/%s", out2, results[i]);
        assert_same_file(a, b);
    }
    ir_graph_free(g);
    remove_tree(dir);
}
END_TEST

START_TEST(test_llvm_matches_c)
{
    if (!cgl_available()) {
        printf("  state: LLVM backend not built; C-vs-LLVM case skipped\n");
        return;
    }
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    IrGraph *g = linreg_graph();
    build_c(g, dir, "lin");
    build_llvm(g, dir, "lin");
    char xarg[300], yarg[300];
    write_lin_feeds(dir, xarg, yarg, sizeof xarg);
    char exe[2][300], ck[2][300], out[2][300], log[2][300];
    for (int k = 0; k < 2; k++) {
        snprintf(exe[k], sizeof exe[k], "%s/lin%s", dir, k ? "_llvm" : "");
        snprintf(ck[k], sizeof ck[k], "%s/ck%d/lin", dir, k);
        snprintf(out[k], sizeof out[k], "%s/out%d", dir, k);
        snprintf(log[k], sizeof log[k], "%s/log%d.txt", dir, k);
        char *argv[] = {exe[k], "--feed",    xarg, "--feed", yarg,  "--steps",   "50",   "--log-every",
                        "1",    "--threads", "1",  "--save", ck[k], "--out-dir", out[k], NULL};
        ck_assert_msg(run_logged(argv, log[k]) == 0, "%s failed (see %s)", exe[k], log[k]);
    }
    assert_same_ckpt(ck[0], ck[1]);
    static const char *const results[] = {"w_next.npy", "b_next.npy", "loss.npy"};
    for (int i = 0; i < 3; i++) {
        char a[400], b[400];
        snprintf(a, sizeof a, "%s/%s", out[0], results[i]);
        snprintf(b, sizeof b, "%s/%s", out[1], results[i]);
        assert_same_file(a, b);
    }
    /* every logged loss is the same */
    char *ta = slurp(log[0], NULL), *tb = slurp(log[1], NULL);
    char *a = step_lines(ta, NULL), *b = step_lines(tb, NULL);
    ck_assert_ptr_nonnull(strstr(a, "step=50 loss="));
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    free(ta);
    free(tb);
    ir_graph_free(g);
    remove_tree(dir);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("state");
    TCase *tc = tcase_create("state");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_api_c);
    tcase_add_test(tc, test_api_llvm);
    tcase_add_test(tc, test_train_against_reference);
    tcase_add_test(tc, test_kill_and_resume);
    tcase_add_test(tc, test_llvm_matches_c);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
