/* tests/codegen/test_llvm.c - the LLVM backend (codegen/llvm/, Check suite
 * "llvm").  Skips (exit 77) with a message when tfcc is built without LLVM.
 *
 * Every case compiles one graph with both backends: the C backend (cgc_emit
 * + tgt_build_exe, as the driver does) and the LLVM backend (cgc_emit for
 * NAME.h / NAME_main.c, cgl_emit_object, then cc links NAME_main.c, the
 * object and the runtime), runs both executables on the same .npy feeds and
 * compares every result: integers and bools exactly, floats within 2e-6
 * relative (+1e-6 absolute; NaN matches NaN).  The C backend is the
 * independent implementation here; for the corpus models both are also
 * compared with the stored TensorFlow.js references (../shared/models, as
 * tests/e2e: rtol 1e-3 + atol 1e-4), and the hand-made graphs check a few
 * values derived by hand.
 * Cases: graphs that together use every elementwise op of ir/ops.def (a test
 * asserts the coverage) on f32, f64, i32, i64, u8 and bool with broadcasting
 * and fused chains; WHILE and COND regions; the header API through a user
 * program linked with the LLVM object; an aarch64 object (ELF relocatable,
 * e_machine 183); determinism (two emits, same bytes); and corpus models.
 * Prints compile times (cc vs LLVM) for the models.
 *
 * Usage: test_llvm [SHARED_MODELS_DIR]
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "float_bits.h"
#include "codegen/codegen.h"
#include "compiler/frontend/frontend.h"
#include "compiler/onnx/onnx.h"
#include "compiler/tf/tf.h"
#include "passes/passes.h"
#include "targets/targets.h"
#include "tfcc_config.h"

#if defined(__aarch64__)
#define HOST_TRIPLE "aarch64-unknown-linux-gnu"
#define HOST_CPU "generic"
#else
#define HOST_TRIPLE "x86_64-pc-linux-gnu"
#define HOST_CPU "x86-64"
#endif

static const char *models_dir;
static bool ops_used[OP_COUNT];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void remove_tree(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static int run_argv(char *const argv[])
{
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* A graph built with both backends in dir. */
typedef struct Built {
    char dir[64];
    char name[64];
    char exe_c[256], exe_l[256];
    double cc_s, llvm_s, link_s;
} Built;

static void note_ops(const IrGraph *g)
{
    IR_FOR_EACH(g, n) {
        ops_used[n->op] = true;
        for (int k = 0; k < n->n_regions; k++)
            note_ops(n->regions[k]);
    }
}

static void emit_llvm(const IrGraph *g, const char *name, const char *triple, const char *cpu, const char *obj)
{
    Status st = ST_INIT;
    CgOptions o = {.name = name, .source_file = "test.pb"};
    CgLlvmTarget t = {triple, cpu, NULL};
    ck_assert_msg(cgl_emit_object(g, &o, &t, obj, &st), "%s", st.msg);
}

/* Links dir/NAME_main.c and dir/NAME_llvm.o with the runtime into
 * dir/NAME_llvm (libs: extra libraries before -lm). */
static void link_llvm(const char *dir, const char *name, const char *libs)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cc -std=c11 -O2 -I'%s' %s_main.c %s_llvm.o -o %s_llvm -L'%s' "
             "-ltcrt_fast -ltcrt -pthread %s -lm > link.log 2>&1",
             dir, TFCC_RUNTIME_INCLUDE, name, name, name, TFCC_RUNTIME_LIBDIR, libs);
    ck_assert_msg(system(cmd) == 0, "linking the LLVM object failed (see %s/link.log)", dir);
}

static void build_both(const IrGraph *g, const char *name, Built *b)
{
    memset(b, 0, sizeof *b);
    snprintf(b->dir, sizeof b->dir, "/tmp/tfcc-llvm-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(b->dir));
    snprintf(b->name, sizeof b->name, "%s", name);
    note_ops(g);
    Status st = ST_INIT;
    CgOptions o = {.name = name, .source_file = "test.pb"};
    ck_assert_msg(cgc_emit(g, &o, b->dir, &st), "%s", st.msg);
    snprintf(b->exe_c, sizeof b->exe_c, "%s/%s_c", b->dir, name);
    TgtTimes times = {0};
    ck_assert_msg(tgt_build_exe(tgt_host(), b->dir, name, b->exe_c, &times, &st), "%s", st.msg);
    b->cc_s = times.cc_seconds;
    char obj[300];
    snprintf(obj, sizeof obj, "%s/%s_llvm.o", b->dir, name);
    double t0 = now_s();
    emit_llvm(g, name, HOST_TRIPLE, HOST_CPU, obj);
    b->llvm_s = now_s() - t0;
    snprintf(b->exe_l, sizeof b->exe_l, "%s/%s_llvm", b->dir, name);
    t0 = now_s();
    link_llvm(b->dir, name, "");
    b->link_s = now_s() - t0;
}

static double as_double(const tcrt_tensor *t, int64_t i)
{
    switch (t->dtype) {
    case TCRT_F32: return ((const float *)t->data)[i];
    case TCRT_F64: return ((const double *)t->data)[i];
    case TCRT_I32: return ((const int32_t *)t->data)[i];
    case TCRT_U32: return ((const uint32_t *)t->data)[i];
    case TCRT_I64: return (double)((const int64_t *)t->data)[i];
    case TCRT_I16: return ((const int16_t *)t->data)[i];
    case TCRT_U16: return ((const uint16_t *)t->data)[i];
    case TCRT_I8: return ((const int8_t *)t->data)[i];
    case TCRT_U8:
    case TCRT_BOOL: return ((const uint8_t *)t->data)[i];
    default: return NAN;
    }
}

/* Compares two .npy files: same dtype and shape; floats within rtol * |want|
 * + atol (NaN == NaN), other dtypes bit-exact.  Returns the max abs diff. */
static double compare_npy(const char *what, const char *got_path, const char *want_path, double rtol,
                          double atol, bool same_dtype)
{
    tcrt_tensor got, want;
    char err[512];
    ck_assert_msg(tcrt_npy_read(got_path, &got, err, sizeof err) == TCRT_OK, "%s: %s", what, err);
    ck_assert_msg(tcrt_npy_read(want_path, &want, err, sizeof err) == TCRT_OK, "%s: %s", what, err);
    int64_t n = tcrt_tensor_count(&want);
    ck_assert_msg(tcrt_tensor_count(&got) == n, "%s: %lld elements, want %lld", what,
                  (long long)tcrt_tensor_count(&got), (long long)n);
    if (same_dtype) {
        ck_assert_msg(got.dtype == want.dtype && got.rank == want.rank, "%s: dtype/rank differ", what);
    }
    bool is_float = want.dtype == TCRT_F32 || want.dtype == TCRT_F64;
    double max_abs = 0;
    for (int64_t i = 0; i < n; i++) {
        double g = as_double(&got, i), w = as_double(&want, i);
        if (is_float && isnan(g) && isnan(w))
            continue;
        double d = fabs(g - w);
        if (isinf(g) && isinf(w) && (g > 0) == (w > 0))
            d = 0;
        if (d > max_abs)
            max_abs = d;
        bool ok = is_float ? d <= atol + rtol * fabs(w) : g == w;
        if (!ok) {
            free(got.data);
            free(want.data);
            ck_abort_msg("%s: element %lld of %lld differs: got %.9g, want %.9g", what, (long long)i,
                         (long long)n, g, w);
        }
    }
    free(got.data);
    free(want.data);
    return max_abs;
}

/* Runs both executables with feed args ("NAME=path"), compares every
 * result of g; out dirs b->dir/out_c and out_l. */
static void run_both(const Built *b, const IrGraph *g, char **feeds, int n_feeds)
{
    char out_c[300], out_l[300];
    snprintf(out_c, sizeof out_c, "%s/out_c", b->dir);
    snprintf(out_l, sizeof out_l, "%s/out_l", b->dir);
    for (int pass = 0; pass < 2; pass++) {
        char *argv[40];
        int k = 0;
        argv[k++] = (char *)(pass ? b->exe_l : b->exe_c);
        for (int i = 0; i < n_feeds && k < 36; i++) {
            argv[k++] = "--feed";
            argv[k++] = feeds[i];
        }
        argv[k++] = "--out-dir";
        argv[k++] = pass ? out_l : out_c;
        argv[k] = NULL;
        ck_assert_msg(run_argv(argv) == 0, "%s: %s executable failed", b->name, pass ? "LLVM" : "C");
    }
    double worst = 0;
    for (int i = 0; i < g->n_fetches; i++) {
        char fn[512], pc[900], pl[900], what[700];
        tcrt_output_filename(g->fetches[i].name, fn, sizeof fn);
        snprintf(pc, sizeof pc, "%s/%s", out_c, fn);
        snprintf(pl, sizeof pl, "%s/%s", out_l, fn);
        snprintf(what, sizeof what, "%s result '%s' (LLVM vs C)", b->name, g->fetches[i].name);
        double d = compare_npy(what, pl, pc, 2e-6, 1e-6, true);
        worst = d > worst ? d : worst;
    }
    printf("  %s: %d results agree (LLVM vs C, max abs diff %.3g)\n", b->name, g->n_fetches, worst);
}

static void write_npy(const char *path, tcrt_dtype dt, int rank, const int64_t *dims, const void *data)
{
    tcrt_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)data;
    t.dtype = dt;
    t.rank = rank;
    for (int d = 0; d < rank; d++)
        t.dims[d] = dims[d];
    char err[256];
    ck_assert_msg(tcrt_npy_write(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
}

static IrValue feed(IrGraph *g, const char *name, tcrt_dtype dt, int rank, const int64_t *dims, Status *st)
{
    IrType t = {dt, ir_shape_make(rank, dims)};
    ir_graph_set_origin(g, name, "Placeholder");
    return ir_add_feed(g, name, &t, st);
}

static void fetch(IrGraph *g, const char *name, IrValue v, Status *st)
{
    ck_assert_msg(st_ok(st), "%s: %s", name, st->msg);
    ck_assert_msg(ir_add_fetch(g, name, v, st), "%s: %s", name, st->msg);
}

static IrValue un(IrGraph *g, Op op, IrValue a, Status *st)
{
    ir_graph_set_origin(g, ir_op_name(op), ir_op_name(op));
    return ir_unary(g, op, a, st);
}

static IrValue bin(IrGraph *g, Op op, IrValue a, IrValue b, Status *st)
{
    ir_graph_set_origin(g, ir_op_name(op), ir_op_name(op));
    return ir_binary(g, op, a, b, st);
}

static IrValue sel(IrGraph *g, IrValue c, IrValue a, IrValue b, Status *st)
{
    IrValue in[3] = {c, a, b};
    ir_graph_set_origin(g, "select", "Select");
    return ir_emit1(g, OP_SELECT, in, 3, NULL, NULL, st);
}

static void plan(IrGraph *g)
{
    Status st = ST_INIT;
    ck_assert_msg(pass_run_pipeline(g, NULL, &st), "%s", st.msg);
}

/* ---- elementwise: every op ---- */

#define FLOAT_N 40 /* x f32[5,8]; y f32[8] broadcast along rows */
static float fx[FLOAT_N], fy[8];

static void float_inputs(void)
{
    static const float ys[8] = {1.5f, -2.0f, 0.25f, 3.0f, -0.75f, 7.0f, -1.0f, 0.5f};
    for (int i = 0; i < FLOAT_N; i++)
        fx[i] = (float)(i - 20) * 0.37f + (i % 3 == 0 ? 0.5f : 0.0f);
    fx[5] = 0.0f;
    fx[11] = -0.0f;
    fx[17] = 1e-3f;
    memcpy(fy, ys, sizeof ys);
}

START_TEST(test_elem_float)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    IrValue x = feed(g, "x", TCRT_F32, 2, (int64_t[]){5, 8}, &st);
    IrValue y = feed(g, "y", TCRT_F32, 1, (int64_t[]){8}, &st);
    static const Op unary[] = {OP_NEG, OP_ABS, OP_SIGN, OP_EXP, OP_LOG, OP_LOG1P, OP_SQRT, OP_RSQRT,
                               OP_RECIP, OP_SQUARE, OP_SIN, OP_COS, OP_TAN, OP_TANH, OP_SIGMOID,
                               OP_RELU, OP_FLOOR, OP_CEIL, OP_ROUND, OP_ERF};
    static const Op binary[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_FLOORMOD, OP_POW,
                                OP_MAX, OP_MIN, OP_ATAN2, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE};
    char nm[64];
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++) {
        snprintf(nm, sizeof nm, "u_%s", ir_op_name(unary[i]));
        fetch(g, nm, un(g, unary[i], x, &st), &st);
    }
    for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++) {
        snprintf(nm, sizeof nm, "b_%s", ir_op_name(binary[i]));
        fetch(g, nm, bin(g, binary[i], x, y, &st), &st);
    }
    /* bools, select, casts */
    IrValue gt = bin(g, OP_GT, x, y, &st), lt0 = bin(g, OP_LT, x, ir_const_scalar_f(g, TCRT_F32, 0, &st), &st);
    fetch(g, "l_not", un(g, OP_NOT, gt, &st), &st);
    fetch(g, "l_and", bin(g, OP_AND, gt, lt0, &st), &st);
    fetch(g, "l_or", bin(g, OP_OR, gt, lt0, &st), &st);
    fetch(g, "s_select", sel(g, gt, x, y, &st), &st);
    static const tcrt_dtype casts[] = {TCRT_I32, TCRT_I64, TCRT_U8, TCRT_BOOL, TCRT_F64, TCRT_I8, TCRT_I16};
    for (size_t i = 0; i < sizeof casts / sizeof casts[0]; i++) {
        snprintf(nm, sizeof nm, "c_%s", tcrt_dtype_name(casts[i]));
        ir_graph_set_origin(g, nm, "Cast");
        IrValue c = ir_cast(g, x, casts[i], &st);
        fetch(g, nm, c, &st);
    }
    /* f64 path: cast up, math, back down */
    ir_graph_set_origin(g, "x64", "Cast");
    IrValue x64 = ir_cast(g, x, TCRT_F64, &st);
    ir_graph_set_origin(g, "y64", "Cast");
    IrValue y64 = ir_cast(g, y, TCRT_F64, &st);
    fetch(g, "d_tanh", un(g, OP_TANH, x64, &st), &st);
    fetch(g, "d_exp", un(g, OP_EXP, x64, &st), &st);
    fetch(g, "d_floormod", bin(g, OP_FLOORMOD, x64, y64, &st), &st);
    fetch(g, "d_pow", bin(g, OP_POW, x64, y64, &st), &st);
    /* x ** 2 by a constant: one multiply in both backends */
    fetch(g, "pow2", bin(g, OP_POW, x, ir_const_scalar_f(g, TCRT_F32, 2, &st), &st), &st);
    /* a fused chain: relu(x * 2 - y) + sigmoid(x), only the end fetched */
    IrValue t = bin(g, OP_MUL, x, ir_const_scalar_f(g, TCRT_F32, 2, &st), &st);
    t = bin(g, OP_SUB, t, y, &st);
    t = un(g, OP_RELU, t, &st);
    t = bin(g, OP_ADD, t, un(g, OP_SIGMOID, x, &st), &st);
    fetch(g, "chain", t, &st);
    plan(g);

    Built b;
    build_both(g, "elemf", &b);
    float_inputs();
    char px[300], py[300], fa[320], fb[320];
    snprintf(px, sizeof px, "%s/x.npy", b.dir);
    snprintf(py, sizeof py, "%s/y.npy", b.dir);
    write_npy(px, TCRT_F32, 2, (int64_t[]){5, 8}, fx);
    write_npy(py, TCRT_F32, 1, (int64_t[]){8}, fy);
    snprintf(fa, sizeof fa, "x=%s", px);
    snprintf(fb, sizeof fb, "y=%s", py);
    char *feeds[2] = {fa, fb};
    run_both(&b, g, feeds, 2);

    /* a few values by hand from the LLVM executable: chain[0][0] with
     * x = -20*0.37+0.5 = -6.9, y = 1.5: relu(-15.3) + sigmoid(-6.9) */
    char path[400], err[256];
    snprintf(path, sizeof path, "%s/out_l/chain.npy", b.dir);
    tcrt_tensor r;
    ck_assert_msg(tcrt_npy_read(path, &r, err, sizeof err) == TCRT_OK, "%s", err);
    float want = 1.0f / (1.0f + expf(6.9f));
    ck_assert(fabsf(((float *)r.data)[0] - want) < 1e-6f);
    free(r.data);
    snprintf(path, sizeof path, "%s/out_l/b_max.npy", b.dir);
    ck_assert_msg(tcrt_npy_read(path, &r, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert(((float *)r.data)[1] == -2.0f);   /* max(-6.53, -2) */
    ck_assert(((float *)r.data)[8 * 4 + 5] == 7.0f); /* max(x[36] = 6.32, 7) */
    free(r.data);
    ir_graph_free(g);
    remove_tree(b.dir);
}
END_TEST

/* integers: a i32[4,6] with b i32[6] holding 0 and -1 (division never traps) */
START_TEST(test_elem_int)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    IrValue a = feed(g, "a", TCRT_I32, 2, (int64_t[]){4, 6}, &st);
    IrValue bv = feed(g, "b", TCRT_I32, 1, (int64_t[]){6}, &st);
    IrValue u = feed(g, "u", TCRT_U8, 2, (int64_t[]){4, 6}, &st);
    IrValue l = feed(g, "l", TCRT_I64, 2, (int64_t[]){4, 6}, &st);
    static const Op unary[] = {OP_NEG, OP_ABS, OP_SIGN, OP_SQUARE, OP_RELU};
    static const Op binary[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_FLOORMOD, OP_POW,
                                OP_MAX, OP_MIN, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE};
    char nm[64];
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++) {
        snprintf(nm, sizeof nm, "u_%s", ir_op_name(unary[i]));
        fetch(g, nm, un(g, unary[i], a, &st), &st);
        snprintf(nm, sizeof nm, "l_%s", ir_op_name(unary[i]));
        fetch(g, nm, un(g, unary[i], l, &st), &st);
    }
    for (size_t i = 0; i < sizeof binary / sizeof binary[0]; i++) {
        snprintf(nm, sizeof nm, "b_%s", ir_op_name(binary[i]));
        /* pow goes through double: |b| keeps 0^-4 = inf (no int value) out */
        IrValue rhs = binary[i] == OP_POW ? un(g, OP_ABS, bv, &st) : bv;
        fetch(g, nm, bin(g, binary[i], a, rhs, &st), &st);
        snprintf(nm, sizeof nm, "q_%s", ir_op_name(binary[i]));
        IrValue u2 = un(g, OP_SQUARE, u, &st);
        if (binary[i] != OP_POW)
            fetch(g, nm, bin(g, binary[i], u, u2, &st), &st);
        snprintf(nm, sizeof nm, "w_%s", ir_op_name(binary[i]));
        if (binary[i] != OP_POW)
            fetch(g, nm, bin(g, binary[i], l, ir_cast(g, a, TCRT_I64, &st), &st), &st);
    }
    IrValue ne = bin(g, OP_NE, a, bv, &st);
    fetch(g, "select", sel(g, ne, a, bv, &st), &st);
    fetch(g, "not", un(g, OP_NOT, ne, &st), &st);
    static const tcrt_dtype casts[] = {TCRT_F32, TCRT_F64, TCRT_I64, TCRT_U8, TCRT_BOOL, TCRT_I8, TCRT_U16};
    for (size_t i = 0; i < sizeof casts / sizeof casts[0]; i++) {
        snprintf(nm, sizeof nm, "c_%s", tcrt_dtype_name(casts[i]));
        ir_graph_set_origin(g, nm, "Cast");
        fetch(g, nm, ir_cast(g, a, casts[i], &st), &st);
        snprintf(nm, sizeof nm, "cu_%s", tcrt_dtype_name(casts[i]));
        if (casts[i] != TCRT_U8)
            fetch(g, nm, ir_cast(g, u, casts[i], &st), &st);
    }
    plan(g);

    Built b;
    build_both(g, "elemi", &b);
    int32_t av[24], bw[6] = {3, -1, 0, -4, 7, 2};
    uint8_t uv[24];
    int64_t lv[24];
    for (int i = 0; i < 24; i++) {
        av[i] = (i * 37) % 23 - 11;
        uv[i] = (uint8_t)(i * 29 + 3);
        lv[i] = (int64_t)(i - 12) * 100000007LL;
    }
    /* Large values whose neg/abs/square/products still fit: the C backend's
     * signed arithmetic must not overflow (undefined behaviour, which the
     * sanitizer build rejects); INT_MIN / -1 is covered in test_guards.c. */
    av[1] = -46340; /* 46340^2 < 2^31 */
    lv[3] = -3000000000LL;
    char p[4][300], f[4][330];
    const char *names[4] = {"a", "b", "u", "l"};
    snprintf(p[0], sizeof p[0], "%s/a.npy", b.dir);
    write_npy(p[0], TCRT_I32, 2, (int64_t[]){4, 6}, av);
    snprintf(p[1], sizeof p[1], "%s/b.npy", b.dir);
    write_npy(p[1], TCRT_I32, 1, (int64_t[]){6}, bw);
    snprintf(p[2], sizeof p[2], "%s/u.npy", b.dir);
    write_npy(p[2], TCRT_U8, 2, (int64_t[]){4, 6}, uv);
    snprintf(p[3], sizeof p[3], "%s/l.npy", b.dir);
    write_npy(p[3], TCRT_I64, 2, (int64_t[]){4, 6}, lv);
    char *feeds[4];
    for (int i = 0; i < 4; i++) {
        snprintf(f[i], sizeof f[i], "%s=%s", names[i], p[i]);
        feeds[i] = f[i];
    }
    run_both(&b, g, feeds, 4);

    /* by hand: a / b and floormod with b = {3, -1, 0, -4, 7, 2} on row 1
     * (a[6..11] = 11, -9, 5, -4, -10, 4... computed: (i*37)%23-11) */
    char path[400], err[256];
    snprintf(path, sizeof path, "%s/out_l/b_div.npy", b.dir);
    tcrt_tensor r;
    ck_assert_msg(tcrt_npy_read(path, &r, err, sizeof err) == TCRT_OK, "%s", err);
    const int32_t *d = r.data;
    ck_assert_int_eq(d[1], 46340); /* -46340 / -1 */
    ck_assert_int_eq(d[2], 0);         /* x / 0 = 0 */
    for (int i = 6; i < 12; i++)
        if (bw[i % 6] != 0 && bw[i % 6] != -1)
            ck_assert_int_eq(d[i], av[i] / bw[i % 6]);
    free(r.data);
    snprintf(path, sizeof path, "%s/out_l/b_floormod.npy", b.dir);
    ck_assert_msg(tcrt_npy_read(path, &r, err, sizeof err) == TCRT_OK, "%s", err);
    d = r.data;
    for (int i = 6; i < 12; i++) {
        int32_t m = bw[i % 6];
        if (m == 0 || m == -1) {
            ck_assert_int_eq(d[i], 0);
            continue;
        }
        int32_t want = av[i] % m;
        if (want != 0 && ((want < 0) != (m < 0)))
            want += m;
        ck_assert_int_eq(d[i], want);
    }
    free(r.data);
    ir_graph_free(g);
    remove_tree(b.dir);
}
END_TEST

/* ---- control flow ---- */

/* x = 0; for (i = 0; i < n; i++) x = (i % 2 == 0) ? x + i : x - 1;
 * plus a COND on an int32 selector over a f32[3]: 0: v + 1, 1: v * v,
 * else: the constant {7, 8, 9}. */
START_TEST(test_regions)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    IrValue n = feed(g, "n", TCRT_I32, 0, NULL, &st);
    IrValue idx = feed(g, "idx", TCRT_I32, 0, NULL, &st);
    IrValue v = feed(g, "v", TCRT_F32, 1, (int64_t[]){3}, &st);
    ir_graph_set_origin(g, "loop", "While");
    IrGraph *cond = ir_region_new(g, &st);
    IrValue ci_ = feed(cond, "i", TCRT_I32, 0, NULL, &st);
    feed(cond, "x", TCRT_I32, 0, NULL, &st);
    IrValue cn = feed(cond, "n", TCRT_I32, 0, NULL, &st);
    fetch(cond, "lt", bin(cond, OP_LT, ci_, cn, &st), &st);
    IrGraph *body = ir_region_new(g, &st);
    IrValue bi = feed(body, "i", TCRT_I32, 0, NULL, &st);
    IrValue bx = feed(body, "x", TCRT_I32, 0, NULL, &st);
    IrValue bn = feed(body, "n", TCRT_I32, 0, NULL, &st);
    IrValue even = bin(body, OP_EQ, bin(body, OP_FLOORMOD, bi, ir_const_scalar_f(body, TCRT_I32, 2, &st), &st),
                       ir_const_scalar_f(body, TCRT_I32, 0, &st), &st);
    ir_graph_set_origin(body, "pick", "If");
    IrGraph *br[2];
    for (int k = 0; k < 2; k++) {
        br[k] = ir_region_new(body, &st);
        IrValue x = feed(br[k], "x", TCRT_I32, 0, NULL, &st);
        IrValue i = feed(br[k], "i", TCRT_I32, 0, NULL, &st);
        IrValue r = k == 0 ? bin(br[k], OP_ADD, x, i, &st)
                           : bin(br[k], OP_SUB, x, ir_const_scalar_f(br[k], TCRT_I32, 1, &st), &st);
        fetch(br[k], "x", r, &st);
    }
    IrValue cin[3] = {even, bx, bi};
    IrNode *c = ir_emit_region(body, OP_COND, cin, 3, br, 2, &st);
    ck_assert_msg(c != NULL, "%s", st.msg);
    fetch(body, "i", bin(body, OP_ADD, bi, ir_const_scalar_f(body, TCRT_I32, 1, &st), &st), &st);
    fetch(body, "x", (IrValue){c, 0}, &st);
    fetch(body, "n", bn, &st);
    IrValue init[3] = {ir_const_scalar_f(g, TCRT_I32, 0, &st), ir_const_scalar_f(g, TCRT_I32, 0, &st), n};
    IrGraph *rs[2] = {cond, body};
    IrNode *w = ir_emit_region(g, OP_WHILE, init, 3, rs, 2, &st);
    ck_assert_msg(w != NULL, "%s", st.msg);
    fetch(g, "x", (IrValue){w, 1}, &st);
    ir_graph_set_origin(g, "k", "Case");
    IrGraph *kb[3];
    for (int k = 0; k < 3; k++) {
        kb[k] = ir_region_new(g, &st);
        IrValue p = feed(kb[k], "v", TCRT_F32, 1, (int64_t[]){3}, &st);
        IrShape s3 = ir_shape_make(1, (int64_t[]){3});
        IrValue r = k == 0   ? bin(kb[k], OP_ADD, p, ir_const_scalar_f(kb[k], TCRT_F32, 1, &st), &st)
                    : k == 1 ? bin(kb[k], OP_MUL, p, p, &st)
                             : ir_const(kb[k], TCRT_F32, &s3, (float[]){7, 8, 9}, &st);
        fetch(kb[k], "y", r, &st);
    }
    IrValue kin[2] = {idx, v};
    IrNode *kc = ir_emit_region(g, OP_COND, kin, 2, kb, 3, &st);
    ck_assert_msg(kc != NULL, "%s", st.msg);
    fetch(g, "k", (IrValue){kc, 0}, &st);
    plan(g);

    Built b;
    build_both(g, "flow", &b);
    static const struct {
        int32_t n, idx;
        int32_t x;
        float k[3];
    } cases[] = {{6, 0, 3, {2, 3, 4}}, {7, 1, 9, {1, 4, 9}}, {1, 2, 0, {7, 8, 9}}, {0, -5, 0, {7, 8, 9}}};
    static const float vv[3] = {1, 2, 3};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char p[3][300], f[3][330];
        snprintf(p[0], sizeof p[0], "%s/n.npy", b.dir);
        write_npy(p[0], TCRT_I32, 0, NULL, &cases[i].n);
        snprintf(p[1], sizeof p[1], "%s/idx.npy", b.dir);
        write_npy(p[1], TCRT_I32, 0, NULL, &cases[i].idx);
        snprintf(p[2], sizeof p[2], "%s/v.npy", b.dir);
        write_npy(p[2], TCRT_F32, 1, (int64_t[]){3}, vv);
        const char *names[3] = {"n", "idx", "v"};
        char *feeds[3];
        for (int j = 0; j < 3; j++) {
            snprintf(f[j], sizeof f[j], "%s=%s", names[j], p[j]);
            feeds[j] = f[j];
        }
        run_both(&b, g, feeds, 3);
        char path[400], err[256];
        tcrt_tensor r;
        snprintf(path, sizeof path, "%s/out_l/x.npy", b.dir);
        ck_assert_msg(tcrt_npy_read(path, &r, err, sizeof err) == TCRT_OK, "%s", err);
        ck_assert_int_eq(*(int32_t *)r.data, cases[i].x);
        free(r.data);
        snprintf(path, sizeof path, "%s/out_l/k.npy", b.dir);
        ck_assert_msg(tcrt_npy_read(path, &r, err, sizeof err) == TCRT_OK, "%s", err);
        for (int j = 0; j < 3; j++)
            ck_assert(((float *)r.data)[j] == cases[i].k[j]);
        free(r.data);
    }
    ir_graph_free(g);
    remove_tree(b.dir);
}
END_TEST

/* ---- API, aarch64, determinism ---- */

/* x f32[2,3]; y = relu(x * 2 - bias), bias {1, 0.5, -1}; z = matmul(y, W),
 * W {{1,2},{3,4},{5,6}}; fetches z:0, y:0 (as tests/codegen/test_codegen.c). */
static IrGraph *tiny_graph(void)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    IrValue x = feed(g, "x:0", TCRT_F32, 2, (int64_t[]){2, 3}, &st);
    IrShape s3 = ir_shape_make(1, (int64_t[]){3});
    IrValue bias = ir_const(g, TCRT_F32, &s3, (float[]){1.0f, 0.5f, -1.0f}, &st);
    IrShape s32 = ir_shape_make(2, (int64_t[]){3, 2});
    IrValue w = ir_const(g, TCRT_F32, &s32, (float[]){1, 2, 3, 4, 5, 6}, &st);
    IrValue m = bin(g, OP_MUL, x, ir_const_scalar_f(g, TCRT_F32, 2.0, &st), &st);
    IrValue y = un(g, OP_RELU, bin(g, OP_SUB, m, bias, &st), &st);
    IrValue mm_in[2] = {y, w};
    IrParams p;
    memset(&p, 0, sizeof p);
    ir_graph_set_origin(g, "z", "MatMul");
    IrValue z = ir_emit1(g, OP_MATMUL, mm_in, 2, &p, NULL, &st);
    fetch(g, "z:0", z, &st);
    fetch(g, "y:0", y, &st);
    plan(g);
    return g;
}

START_TEST(test_api)
{
    IrGraph *g = tiny_graph();
    Built b;
    build_both(g, "tiny", &b);
    char path[200];
    snprintf(path, sizeof path, "%s/user.c", b.dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    /* y = relu(2x - bias): x row 0 {1,-2,3} -> {1, 0, 7}; row 1 {0.5,4,-1} -> {0, 7.5, 0}
     * z = y W: row 0 {1+0+35, 2+0+42} = {36, 44}; row 1 {22.5, 30} */
    fputs("#include <stdio.h>\n#include <string.h>\n#include \"tiny.h\"\n"
          "int main(void)\n{\n"
          "    static const float x[6] = {1, -2, 3, 0.5f, 4, -1};\n"
          "    if (tiny_size() != sizeof(tiny)) return 1;\n"
          "    tiny *m = tiny_new();\n"
          "    if (!m) return 2;\n"
          "    memcpy(tiny_arg_x(m), x, TINY_ARG0_BYTES);\n"
          "    if (tiny_run(m) != TCRT_OK) return 3;\n"
          "    const float *z = tiny_result_z(m);\n"
          "    if (z[0] != 36 || z[1] != 44 || z[2] != 22.5f || z[3] != 30) return 4;\n"
          "    if (tiny_result(m, 2) != NULL || tiny_arg(m, -1) != NULL) return 5;\n"
          "    if (tiny_result0(m) != z || (const void *)tiny_result1(m) != tiny_result(m, 1)) return 12;\n"
          "    tcrt_tensor t = {(void *)x, TCRT_F32, 2, {2, 3}};\n"
          "    char err[200];\n"
          "    if (tiny_set_arg(m, 0, &t, err, sizeof err) != TCRT_OK) return 13;\n"
          "    t.dims[1] = 4;\n"
          "    if (tiny_set_arg(m, 0, &t, err, sizeof err) != TCRT_ERR_SHAPE) return 14;\n"
          "    tiny_free(m);\n"
          "    tiny_free(NULL);\n"
          "    static _Alignas(64) unsigned char scratch[TINY_ARENA_BYTES];\n"
          "    tiny t2;\n"
          "    if (tiny_init(&t2, scratch, sizeof scratch - 1) != TCRT_ERR_ARG) return 6;\n"
          "    if (tiny_init(&t2, scratch, sizeof scratch) != TCRT_OK) return 7;\n"
          "    memcpy(tiny_arg0(&t2), x, sizeof x);\n"
          "    if (tiny_run(&t2) != TCRT_OK) return 8;\n"
          "    const float *y = tiny_result_y(&t2);\n"
          "    if (y[0] != 1 || y[2] != 7 || y[4] != 7.5f || y[5] != 0) return 9;\n"
          "    const tcrt_model *sig = tiny_signature();\n"
          "    if (sig != &tiny_model || sig->n_args != TINY_NUM_ARGS || sig->n_results != 2) return 10;\n"
          "    if (strcmp(sig->results[0].name, \"z:0\") != 0 || sig->results[0].bytes != TINY_RESULT0_BYTES) return 11;\n"
          "    if (sig->arena_bytes != TINY_ARENA_BYTES || sig->weights_bytes != TINY_WEIGHTS_BYTES) return 15;\n"
          "    if (tiny_run(NULL) != TCRT_ERR_ARG) return 16;\n"
          "    return 0;\n}\n",
          f);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cc -std=c11 -I'%s' user.c tiny_llvm.o -o user -L'%s' "
             "-ltcrt_fast -ltcrt -pthread -lm > user.log 2>&1",
             b.dir, TFCC_RUNTIME_INCLUDE, TFCC_RUNTIME_LIBDIR);
    ck_assert_msg(system(cmd) == 0, "compiling user.c with the LLVM object failed (see %s/user.log)", b.dir);
    char exe[200];
    snprintf(exe, sizeof exe, "%s/user", b.dir);
    char *argv[] = {exe, NULL};
    ck_assert_int_eq(run_argv(argv), 0);
    ir_graph_free(g);
    remove_tree(b.dir);
}
END_TEST

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_int_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return buf;
}

START_TEST(test_aarch64_and_determinism)
{
    IrGraph *g = tiny_graph();
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tfcc-llvm-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char p1[200], p2[200], p3[200];
    snprintf(p1, sizeof p1, "%s/a1.o", dir);
    snprintf(p2, sizeof p2, "%s/a2.o", dir);
    snprintf(p3, sizeof p3, "%s/x1.o", dir);
    emit_llvm(g, "tiny", "aarch64-unknown-linux-gnu", "cortex-a76", p1);
    emit_llvm(g, "tiny", "aarch64-unknown-linux-gnu", "cortex-a76", p2);
    emit_llvm(g, "tiny", HOST_TRIPLE, HOST_CPU, p3);
    size_t n1, n2;
    unsigned char *a = read_all(p1, &n1), *b = read_all(p2, &n2);
    /* ELF64 little-endian relocatable for AArch64: EI_CLASS 2, EI_DATA 1,
     * e_type 1 (ET_REL) at 16, e_machine 183 (EM_AARCH64) at 18 */
    ck_assert(n1 > 64 && memcmp(a, "\177ELF", 4) == 0);
    ck_assert_int_eq(a[4], 2);
    ck_assert_int_eq(a[5], 1);
    ck_assert_int_eq(a[16] | a[17] << 8, 1);
    ck_assert_int_eq(a[18] | a[19] << 8, 183);
    ck_assert_msg(n1 == n2 && memcmp(a, b, n1) == 0, "two emits differ");
    free(a);
    free(b);
    a = read_all(p3, &n1);
    ck_assert_int_eq(a[18] | a[19] << 8, strstr(HOST_TRIPLE, "x86_64") ? 62 : 183);
    free(a);
    /* errors: an unknown triple, a model name that is not an identifier */
    Status st = ST_INIT;
    CgOptions o = {.name = "tiny", .source_file = "t.pb"};
    CgLlvmTarget t = {"nonsense-unknown-none", "generic", NULL};
    ck_assert(!cgl_emit_object(g, &o, &t, p1, &st));
    ck_assert_msg(strstr(st.msg, "nonsense-unknown-none") != NULL, "%s", st.msg);
    Status st2 = ST_INIT;
    CgOptions bad = {.name = "1x", .source_file = "t.pb"};
    CgLlvmTarget ht = {HOST_TRIPLE, HOST_CPU, NULL};
    ck_assert(!cgl_emit_object(g, &bad, &ht, p1, &st2));
    ck_assert_msg(strstr(st2.msg, "not a C identifier") != NULL, "%s", st2.msg);
    ir_graph_free(g);
    /* a graph the pipeline has not planned */
    Status st3 = ST_INIT;
    IrGraph *u = ir_graph_new(NULL, &st3);
    IrValue x = feed(u, "x", TCRT_F32, 1, (int64_t[]){4}, &st3);
    fetch(u, "y", un(u, OP_EXP, x, &st3), &st3);
    ck_assert(!cgl_emit_object(u, &o, &ht, p1, &st3));
    ck_assert_msg(strstr(st3.msg, "not memory-planned") != NULL, "%s", st3.msg);
    ir_graph_free(u);
    remove_tree(dir);
}
END_TEST

/* Vector math (CgLlvmTarget.vector_math, x86-64 with libmvec and AVX2):
 * the float32 calls of exp, log, log1p, sin, cos, tanh, sigmoid, erf, pow
 * and atan2 over 1003 elements (a remainder past every multiple of 8), each
 * against the double-precision libm function rounded to float (independent
 * of both backends) within 4 ulp, as libmvec documents its float variants;
 * the executable must hold libmvec's expf variant (the loops vectorized
 * through it), and an object emitted without vector_math must not name it. */
START_TEST(test_vector_math)
{
#if defined(__x86_64__) && TFCC_HAVE_LIBMVEC
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2")) {
        printf("  vector math: skipped (no AVX2 on this CPU)\n");
        return;
    }
    enum { N = 1003, NOUT = 10 };
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    IrValue x = feed(g, "x", TCRT_F32, 1, (int64_t[]){N}, &st),
            p = feed(g, "p", TCRT_F32, 1, (int64_t[]){N}, &st),
            e = feed(g, "e", TCRT_F32, 1, (int64_t[]){N}, &st);
    static const char *names[NOUT] = {"exp",  "log",     "log1p", "sin", "cos",
                                      "tanh", "sigmoid", "erf",   "pow", "atan2"};
    static const Op un_ops[8] = {OP_EXP, OP_LOG, OP_LOG1P, OP_SIN, OP_COS, OP_TANH, OP_SIGMOID, OP_ERF};
    for (int i = 0; i < 8; i++)
        fetch(g, names[i], un(g, un_ops[i], i == 1 || i == 2 ? p : x, &st), &st);
    fetch(g, "pow", bin(g, OP_POW, p, e, &st), &st);
    fetch(g, "atan2", bin(g, OP_ATAN2, x, e, &st), &st);
    plan(g);
    char dir[64] = "/tmp/tfcc-llvm-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    CgOptions o = {.name = "vm", .source_file = "test.pb"};
    ck_assert_msg(cgc_emit(g, &o, dir, &st), "%s", st.msg);
    char obj[128], plain[128], path[256];
    snprintf(obj, sizeof obj, "%s/vm_llvm.o", dir);
    snprintf(plain, sizeof plain, "%s/plain.o", dir);
    CgLlvmTarget t = {HOST_TRIPLE, "x86-64-v3", NULL, true}, t0 = {HOST_TRIPLE, "x86-64-v3", NULL, false};
    ck_assert_msg(cgl_emit_object(g, &o, &t, obj, &st), "%s", st.msg);
    ck_assert_msg(cgl_emit_object(g, &o, &t0, plain, &st), "%s", st.msg);
    link_llvm(dir, "vm", "-lmvec");
    size_t len;
    snprintf(path, sizeof path, "%s/vm_llvm", dir);
    unsigned char *bin_exe = read_all(path, &len);
    ck_assert_msg(bytes_contain(bin_exe, len, "_ZGVdN8v_expf"),
                  "no _ZGVdN8v_expf in the executable: the loops did not vectorize through libmvec");
    free(bin_exe);
    unsigned char *bin_plain = read_all(plain, &len);
    ck_assert_msg(!bytes_contain(bin_plain, len, "_ZGVd"), "an object without vector_math names libmvec");
    free(bin_plain);

    /* x in [-20, 20), p in [0.01, 20), e in [-3, 3) (atan2: every quadrant) */
    static float in[3][N];
    for (int i = 0; i < N; i++) {
        in[0][i] = -20.0f + 40.0f * (float)i / N;
        in[1][i] = 0.01f + 20.0f * (float)((i * 7919) % N) / N;
        in[2][i] = -3.0f + 6.0f * (float)((i * 104729) % N) / N;
    }
    char feeds[3][200];
    static const char *fn[3] = {"x", "p", "e"};
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s.npy", dir, fn[k]);
        write_npy(path, TCRT_F32, 1, (int64_t[]){N}, in[k]);
        snprintf(feeds[k], sizeof feeds[k], "%s=%s", fn[k], path);
    }
    char exe[128], outdir[128];
    snprintf(exe, sizeof exe, "%s/vm_llvm", dir);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    char *argv[] = {exe,      "--feed", feeds[0],    "--feed", feeds[1],
                    "--feed", feeds[2], "--out-dir", outdir,   NULL};
    ck_assert_int_eq(run_argv(argv), 0);
    for (int k = 0; k < NOUT; k++) {
        char err[256];
        tcrt_tensor r;
        snprintf(path, sizeof path, "%s/%s.npy", outdir, names[k]);
        ck_assert_msg(tcrt_npy_read(path, &r, err, sizeof err) == TCRT_OK, "%s", err);
        const float *got = r.data;
        for (int i = 0; i < N; i++) {
            double a = in[0][i], q = in[1][i], b = in[2][i];
            double want = k == 0   ? exp(a)
                          : k == 1 ? log(q)
                          : k == 2 ? log1p(q)
                          : k == 3 ? sin(a)
                          : k == 4 ? cos(a)
                          : k == 5 ? tanh(a)
                          : k == 6 ? 1 / (1 + exp(-a))
                          : k == 7 ? erf(a)
                          : k == 8 ? pow(q, b)
                                   : atan2(a, b);
            ck_assert_msg(ulps_apart(got[i], (float)want) <= 4,
                          "%s(%.9g, %.9g, %.9g) [%d]: got %.9g, want %.9g", names[k], a, q, b, i,
                          (double)got[i], (double)(float)want);
        }
        free(r.data);
    }
    ir_graph_free(g);
    remove_tree(dir);
#else
    printf("  vector math: skipped (not x86-64 with libmvec)\n");
#endif
}
END_TEST

/* Runs last: every elementwise op of ir/ops.def appeared in a graph above. */
START_TEST(test_elem_coverage)
{
    for (int op = 0; op < OP_COUNT; op++)
        if (ir_op_info((Op)op)->kind == K_ELEM)
            ck_assert_msg(ops_used[op], "elementwise op %s is not covered by test_llvm", ir_op_name((Op)op));
}
END_TEST

/* ---- corpus models ---- */

typedef struct ModelCase {
    const char *file, *ref;
    const char *feeds;   /* "name:0:1x490;..." in input_K order */
    const char *fetches; /* "name;..." in output_K order */
} ModelCase;

static const ModelCase models[] = {
    {"github-ml-kws/DS_CNN_S/DS_CNN_S.pb", "github-ml-kws/DS_CNN_S/reference/DS_CNN_S", "Reshape:0:1x490", "labels_softmax"},
    {"github-ml-kws/DNN_S/DNN_S.pb", "github-ml-kws/DNN_S/reference/DNN_S", "Reshape:0:1x250", "labels_softmax"},
    {"github-ml-kws/LSTM_S/LSTM_S.pb", "github-ml-kws/LSTM_S/reference/LSTM_S", "Reshape:0:1x250", "labels_softmax"},
    {"github-ml-kws/GRU_S/GRU_S.pb", "github-ml-kws/GRU_S/reference/GRU_S", "Reshape:0:1x250", "labels_softmax"},
    {"github-mlnet-testdata/cifar_model/frozen_model.pb", "github-mlnet-testdata/cifar_model/reference/frozen_model", "Input:0:1x32x32x3", "Output"},
    {"github-tensorflow/lite_multi_add/multi_add.pb", "github-tensorflow/lite_multi_add/reference/multi_add", "a:0:1x8x8x3;b:0:1x8x8x3;c:0:1x8x8x3;d:0:1x8x8x3", "x;y"},
};

static int split(const char *s, char parts[][256], int max)
{
    int n = 0;
    const char *p = s;
    while (*p && n < max) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        snprintf(parts[n++], 256, "%.*s", (int)len, p);
        if (!e)
            break;
        p = e + 1;
    }
    return n;
}

/* "name:0:1x490" -> name "name:0", shape; "scalar" is rank 0 */
static void parse_feed(const char *spec, char *name, size_t n, IrShape *s)
{
    snprintf(name, n, "%s", spec);
    char *c = strrchr(name, ':');
    ck_assert_ptr_nonnull(c);
    *c = 0;
    s->rank = 0;
    if (strcmp(c + 1, "scalar") == 0)
        return;
    for (char *p = c + 1; *p;) {
        s->dims[s->rank++] = strtoll(p, &p, 10);
        if (*p == 'x')
            p++;
    }
}

START_TEST(test_models)
{
    const ModelCase *mc = &models[_i];
    char model[1024];
    snprintf(model, sizeof model, "%s/%s", models_dir, mc->file);
    FeModel m;
    memset(&m, 0, sizeof m);
    Status st = ST_INIT;
    ck_assert_msg(fe_load(model, &m, &st), "%s", st.msg);
    char fs[8][256], ts[8][256], names[8][256];
    int nf = split(mc->feeds, fs, 8), nt = split(mc->fetches, ts, 8);
    TfFeedSpec feeds[8];
    memset(feeds, 0, sizeof feeds);
    const char *fetches[8];
    for (int i = 0; i < nf; i++) {
        parse_feed(fs[i], names[i], sizeof names[i], &feeds[i].shape);
        feeds[i].name = names[i];
        feeds[i].has_shape = true;
    }
    for (int i = 0; i < nt; i++)
        fetches[i] = ts[i];
    TfImportOptions io = {.file = model, .feeds = feeds, .n_feeds = nf, .fetches = fetches, .n_fetches = nt};
    OnnxImportOptions oo = {.file = model, .feeds = feeds, .n_feeds = nf, .fetches = fetches, .n_fetches = nt};
    IrGraph *g = m.onnx ? onnx_import(m.onnx, &oo, &st) : tf_import(m.graph, &io, &st);
    fe_model_free(&m);
    ck_assert_msg(g != NULL, "%s", st.msg);
    plan(g);
    Built b;
    build_both(g, "model", &b);
    char feedargs[8][1200], *argv[8];
    for (int i = 0; i < nf; i++) {
        snprintf(feedargs[i], sizeof feedargs[i], "%s=%s/%s/input_%d.npy", names[i], models_dir, mc->ref, i);
        argv[i] = feedargs[i];
    }
    run_both(&b, g, argv, nf);
    for (int i = 0; i < nt; i++) {
        char fn[512], got[900], want[1200], what[700];
        tcrt_output_filename(g->fetches[i].name, fn, sizeof fn);
        snprintf(want, sizeof want, "%s/%s/output_%d.npy", models_dir, mc->ref, i);
        for (int pass = 0; pass < 2; pass++) {
            snprintf(got, sizeof got, "%s/%s/%s", b.dir, pass ? "out_l" : "out_c", fn);
            snprintf(what, sizeof what, "%s %s (%s vs reference)", mc->file, fn, pass ? "LLVM" : "C");
            compare_npy(what, got, want, 1e-3, 1e-4, false);
        }
    }
    printf("  %s: C backend cc %.2f s; LLVM emit %.2f s + link %.2f s; reference matched\n", mc->file, b.cc_s,
           b.llvm_s, b.link_s);
    ir_graph_free(g);
    remove_tree(b.dir);
}
END_TEST

static Suite *llvm_suite(bool with_models)
{
    Suite *s = suite_create("llvm");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_elem_float);
    tcase_add_test(tc, test_elem_int);
    tcase_add_test(tc, test_regions);
    tcase_add_test(tc, test_api);
    tcase_add_test(tc, test_aarch64_and_determinism);
    tcase_add_test(tc, test_vector_math);
    tcase_add_test(tc, test_elem_coverage); /* last: reads what the tests above recorded */
    suite_add_tcase(s, tc);
    if (with_models) {
        TCase *tm = tcase_create("models");
        tcase_set_timeout(tm, 600);
        tcase_add_loop_test(tm, test_models, 0, (int)(sizeof models / sizeof models[0]));
        suite_add_tcase(s, tm);
    }
    return s;
}

int main(int argc, char **argv)
{
    if (!cgl_available()) {
        printf("SKIP: tfcc was built without LLVM (meson did not find llvm-config-19); "
               "install llvm-19-dev and reconfigure to test the LLVM backend\n");
        return 77;
    }
    models_dir = argc > 1 ? argv[1] : NULL;
    struct stat sb;
    bool with_models = models_dir && stat(models_dir, &sb) == 0 && S_ISDIR(sb.st_mode);
    if (!with_models)
        printf("note: no models dir (%s): corpus models skipped\n", models_dir ? models_dir : "not given");
    SRunner *sr = srunner_create(llvm_suite(with_models));
    /* no fork: test_elem_coverage reads what the earlier tests recorded */
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
