/* tests/codegen/test_codegen.c - unit tests for codegen/ and targets/
 * (Check suite "codegen").
 *
 * Builds small graphs by hand, runs the pipeline, emits C into a temporary
 * folder, compiles and links it with tgt_build_exe against the runtime
 * built in this build dir, runs the executable on an .npy written here and
 * compares its .npy outputs with values derived by hand (a large fused
 * elementwise kernel on 1 and 2 threads among them; the libm functions that
 * run through libmvec's vector variants against double-precision libm).  Also: emitting
 * twice gives identical bytes, the header API compiles and runs from a user
 * program, and a compiler failure is reported with its output.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "float_bits.h"
#include "codegen/codegen.h"
#include "passes/passes.h"
#include "targets/targets.h"
#include "tfcc_config.h"

static void make_tmpdir(char *buf, size_t n)
{
    snprintf(buf, n, "/tmp/tfcc-cg-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(buf));
}

static void remove_tree(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* x f32[2,3] (feed "x:0"); y = relu(x * 2 - bias), bias f32[3] = {1, 0.5, -1};
 * z = matmul(y, W), W f32[3,2] = {{1,2},{3,4},{5,6}}; fetches z:0 and y:0. */
static IrGraph *tiny_graph(void)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    ck_assert_ptr_nonnull(g);
    g->fold_on_build = false;
    ir_graph_set_origin(g, "x", "Placeholder");
    IrType xt = {TCRT_F32, ir_shape_make(2, (int64_t[]){2, 3})};
    IrValue x = ir_add_feed(g, "x:0", &xt, &st);
    ir_graph_set_origin(g, "two", "Const");
    IrValue two = ir_const_scalar_f(g, TCRT_F32, 2.0, &st);
    ir_graph_set_origin(g, "bias", "Const");
    IrShape s3 = ir_shape_make(1, (int64_t[]){3});
    IrValue bias = ir_const(g, TCRT_F32, &s3, (float[]){1.0f, 0.5f, -1.0f}, &st);
    ir_graph_set_origin(g, "W", "Const");
    IrShape s32 = ir_shape_make(2, (int64_t[]){3, 2});
    IrValue w = ir_const(g, TCRT_F32, &s32, (float[]){1, 2, 3, 4, 5, 6}, &st);
    ir_graph_set_origin(g, "mul", "Mul");
    IrValue m = ir_binary(g, OP_MUL, x, two, &st);
    ir_graph_set_origin(g, "sub", "Sub");
    IrValue s = ir_binary(g, OP_SUB, m, bias, &st);
    ir_graph_set_origin(g, "y", "Relu");
    IrValue y = ir_unary(g, OP_RELU, s, &st);
    ir_graph_set_origin(g, "z", "MatMul");
    IrValue mm_in[2] = {y, w};
    IrParams p;
    memset(&p, 0, sizeof p);
    IrValue z = ir_emit1(g, OP_MATMUL, mm_in, 2, &p, NULL, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_add_fetch(g, "z:0", z, &st));
    ck_assert(ir_add_fetch(g, "y:0", y, &st));
    ck_assert_msg(pass_run_pipeline(g, NULL, &st), "%s", st.msg);
    return g;
}

static void emit_and_build(const IrGraph *g, const char *dir, const char *name)
{
    Status st = ST_INIT;
    CgOptions o = {.name = name, .source_file = "/some/where/tiny.pbtxt"};
    ck_assert_msg(cgc_emit(g, &o, dir, &st), "%s", st.msg);
    char exe[600];
    snprintf(exe, sizeof exe, "%s/%s", dir, name);
    TgtTimes times = {0};
    ck_assert_msg(tgt_build_exe(tgt_host(), dir, name, exe, &times, &st), "%s", st.msg);
    ck_assert(times.cc_seconds > 0);
}

/* Runs argv[0] with argv, waits, returns the exit status. */
static int run_exe(char *const argv[])
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
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

static void check_npy_f32(const char *path, const float *want, int rank, const int64_t *dims)
{
    tcrt_tensor t;
    char err[256];
    ck_assert_msg(tcrt_npy_read(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(t.dtype, TCRT_F32);
    ck_assert_int_eq(t.rank, rank);
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        ck_assert_int_eq(t.dims[d], dims[d]);
        n *= dims[d];
    }
    const float *got = t.data;
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "%s[%lld]: got %g, want %g", path, (long long)i,
                      (double)got[i], (double)want[i]);
    free(t.data);
}

START_TEST(test_tiny_model_runs)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    IrGraph *g = tiny_graph();
    emit_and_build(g, dir, "tiny");

    /* x = {{1,-2,3},{0.5,4,-1}}
     * x*2 - bias = {{2-1, -4-0.5, 6+1}, {1-1, 8-0.5, -2+1}} = {{1,-4.5,7},{0,7.5,-1}}
     * y = relu(.) = {{1,0,7},{0,7.5,0}}
     * z = y . W: row0 = 1*(1,2) + 7*(5,6) = (36,44); row1 = 7.5*(3,4) = (22.5,30) */
    static const float x[6] = {1, -2, 3, 0.5f, 4, -1};
    static const float y_want[6] = {1, 0, 7, 0, 7.5f, 0};
    static const float z_want[4] = {36, 44, 22.5f, 30};
    char xpath[128], feed[160], outdir[128], exe[128], path[200];
    snprintf(xpath, sizeof xpath, "%s/x.npy", dir);
    write_npy_f32(xpath, x, 2, (int64_t[]){2, 3});
    snprintf(feed, sizeof feed, "x:0=%s", xpath);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    ck_assert_int_eq(mkdir(outdir, 0755), 0);
    snprintf(exe, sizeof exe, "%s/tiny", dir);
    char *argv[] = {exe, "--feed", feed, "--out-dir", outdir, NULL};
    ck_assert_int_eq(run_exe(argv), 0);
    char fname[64];
    tcrt_output_filename("z:0", fname, sizeof fname);
    snprintf(path, sizeof path, "%s/%s", outdir, fname);
    check_npy_f32(path, z_want, 2, (int64_t[]){2, 2});
    tcrt_output_filename("y:0", fname, sizeof fname);
    snprintf(path, sizeof path, "%s/%s", outdir, fname);
    check_npy_f32(path, y_want, 2, (int64_t[]){2, 3});

    /* The generated source: kernels by name, weights not as C literals. */
    snprintf(path, sizeof path, "%s/tiny.c", dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "Generated by tfcc from tiny.pbtxt - DO NOT EDIT"));
    /* the matmul with a constant W runs as a packed 1x1 conv (passes/pack.c) */
    ck_assert_ptr_nonnull(strstr(text, "tcrt_fast_conv2d"));
    ck_assert_ptr_null(strstr(text, "tcrt_fast_matmul"));
    ck_assert_ptr_nonnull(strstr(text, "_relu("));
    ck_assert_ptr_nonnull(strstr(text, "extern const unsigned char tiny_weights[];"));
    ck_assert_ptr_null(strstr(text, "0.5f"));
    ir_graph_free(g);
    remove_tree(dir);
}
END_TEST

/* The header API from a user program: new, typed accessors, run, results,
 * and _init on caller memory. */
START_TEST(test_tiny_api)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    IrGraph *g = tiny_graph();
    emit_and_build(g, dir, "tiny");
    char path[200];
    snprintf(path, sizeof path, "%s/user.c", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("#include <stdio.h>\n#include <string.h>\n#include \"tiny.h\"\n"
          "int main(void)\n{\n"
          "    static const float x[6] = {1, -2, 3, 0.5f, 4, -1};\n"
          "    tiny *m = tiny_new();\n"
          "    if (!m) return 2;\n"
          "    memcpy(tiny_arg_x(m), x, TINY_ARG0_BYTES);\n"
          "    if (tiny_run(m) != TCRT_OK) return 3;\n"
          "    const float *z = tiny_result_z(m);\n"
          "    if (z[0] != 36 || z[1] != 44 || z[2] != 22.5f || z[3] != 30) return 4;\n"
          "    if (tiny_result(m, 2) != NULL || tiny_arg(m, -1) != NULL) return 5;\n"
          "    tiny_free(m);\n"
          "    static _Alignas(64) unsigned char scratch[TINY_ARENA_BYTES];\n"
          "    tiny t;\n"
          "    if (tiny_init(&t, scratch, sizeof scratch - 1) != TCRT_ERR_ARG) return 6;\n"
          "    if (tiny_init(&t, scratch, sizeof scratch) != TCRT_OK) return 7;\n"
          "    memcpy(tiny_arg0(&t), x, sizeof x);\n"
          "    if (tiny_run(&t) != TCRT_OK) return 8;\n"
          "    const float *y = tiny_result_y(&t);\n"
          "    if (y[2] != 7 || y[4] != 7.5f || y[5] != 0) return 9;\n"
          "    const tcrt_model *sig = tiny_signature();\n"
          "    if (sig->n_args != TINY_NUM_ARGS || sig->n_results != 2) return 10;\n"
          "    if (strcmp(sig->results[0].name, \"z:0\") != 0 || sig->results[0].bytes != TINY_RESULT0_BYTES) return 11;\n"
          "    return 0;\n}\n",
          f);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cc -std=c11 -I'%s' user.c tiny.o tiny_weights.o -o user -L'%s' "
             "-ltcrt_fast -ltcrt -pthread -lm > user.log 2>&1",
             dir, TFCC_RUNTIME_INCLUDE, TFCC_RUNTIME_LIBDIR);
    ck_assert_msg(system(cmd) == 0, "compiling user.c failed (see %s/user.log)", dir);
    char exe[200];
    snprintf(exe, sizeof exe, "%s/user", dir);
    char *argv[] = {exe, NULL};
    ck_assert_int_eq(run_exe(argv), 0);
    ir_graph_free(g);
    remove_tree(dir);
}
END_TEST

/* Broadcasting on three axes: a f32[2,1,3] (feed) + b f32[4,1] (const) ->
 * [2,4,3]; out[i][j][k] = a[i][0][k] + b[j][0], with a = i*10+k and b = 100*j,
 * so out = 100*j + 10*i + k.  Also int32 cast of the result and a compare. */
START_TEST(test_broadcast_elementwise)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    IrType at = {TCRT_F32, ir_shape_make(3, (int64_t[]){2, 1, 3})};
    IrValue a = ir_add_feed(g, "a", &at, &st);
    IrShape bs = ir_shape_make(2, (int64_t[]){4, 1});
    IrValue b = ir_const(g, TCRT_F32, &bs, (float[]){0, 100, 200, 300}, &st);
    IrValue s = ir_binary(g, OP_ADD, a, b, &st);
    IrValue half = ir_const_scalar_f(g, TCRT_F32, 0.5, &st);
    IrValue c = ir_cast(g, ir_binary(g, OP_ADD, s, half, &st), TCRT_I32, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_add_fetch(g, "sum", s, &st));
    ck_assert(ir_add_fetch(g, "int", c, &st));
    ck_assert_msg(pass_run_pipeline(g, NULL, &st), "%s", st.msg);
    emit_and_build(g, dir, "bcast");

    float av[6];
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++)
            av[i * 3 + k] = (float)(i * 10 + k);
    char apath[128], feed[160], outdir[128], exe[128], path[200];
    snprintf(apath, sizeof apath, "%s/a.npy", dir);
    write_npy_f32(apath, av, 3, (int64_t[]){2, 1, 3});
    snprintf(feed, sizeof feed, "a=%s", apath);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    ck_assert_int_eq(mkdir(outdir, 0755), 0);
    snprintf(exe, sizeof exe, "%s/bcast", dir);
    char *argv[] = {exe, "--feed", feed, "--out-dir", outdir, NULL};
    ck_assert_int_eq(run_exe(argv), 0);
    float want[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 3; k++)
                want[(i * 4 + j) * 3 + k] = (float)(100 * j + 10 * i + k);
    snprintf(path, sizeof path, "%s/sum.npy", outdir);
    check_npy_f32(path, want, 3, (int64_t[]){2, 4, 3});
    /* (int)(v + 0.5) == v for these integers */
    snprintf(path, sizeof path, "%s/int.npy", outdir);
    tcrt_tensor t;
    char err[256];
    ck_assert_msg(tcrt_npy_read(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(t.dtype, TCRT_I32);
    for (int i = 0; i < 24; i++)
        ck_assert_int_eq(((int32_t *)t.data)[i], (int32_t)want[i]);
    free(t.data);
    ir_graph_free(g);
    remove_tree(dir);
}
END_TEST

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* A fused elementwise kernel over 300 x 7 x 40 = 84000 elements (above
 * the emitter's threading threshold): y = (a - b) ** 2 + a, b f32[40] = k
 * broadcast over the last axis, a[i,j,k] = (i * 7 + j) % 13 - 0.5 k.  Every
 * value is a multiple of 0.25 below 2^10, so the hand-computed result is
 * exact.  Run with 1 and 2 threads; the generated C splits the kernel over
 * the pool (kNNN_part, tcrt_parallel_tasks) and squares with a multiply. */
START_TEST(test_large_elementwise_threads)
{
    enum { D0 = 300, D1 = 7, D2 = 40, N = D0 * D1 * D2 };
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    IrType at = {TCRT_F32, ir_shape_make(3, (int64_t[]){D0, D1, D2})};
    IrValue a = ir_add_feed(g, "a", &at, &st);
    float bv[D2];
    for (int k = 0; k < D2; k++)
        bv[k] = (float)k;
    IrShape bs = ir_shape_make(1, (int64_t[]){D2});
    IrValue b = ir_const(g, TCRT_F32, &bs, bv, &st);
    IrValue two = ir_const_scalar_f(g, TCRT_F32, 2.0, &st);
    IrValue d = ir_binary(g, OP_SUB, a, b, &st);
    IrValue y = ir_binary(g, OP_ADD, ir_binary(g, OP_POW, d, two, &st), a, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_add_fetch(g, "y", y, &st));
    ck_assert_msg(pass_run_pipeline(g, NULL, &st), "%s", st.msg);
    emit_and_build(g, dir, "big");

    char path[200];
    snprintf(path, sizeof path, "%s/big.c", dir);
    size_t len;
    char *src = slurp(path, &len);
    ck_assert_msg(strstr(src, "_part(") && strstr(src, "tcrt_parallel_tasks("), "kernel not split");
    ck_assert_msg(!strstr(src, "pow("), "x ** 2 still calls pow");
    free(src);

    float *av = malloc(sizeof(float) * N), *want = malloc(sizeof(float) * N);
    ck_assert(av && want);
    for (int i = 0; i < D0; i++)
        for (int j = 0; j < D1; j++)
            for (int k = 0; k < D2; k++) {
                int e = (i * D1 + j) * D2 + k;
                av[e] = (float)((i * 7 + j) % 13) - 0.5f * (float)k;
                double diff = (double)av[e] - k;
                want[e] = (float)(diff * diff + av[e]);
            }
    char apath[128], feed[160], exe[128];
    snprintf(apath, sizeof apath, "%s/a.npy", dir);
    write_npy_f32(apath, av, 3, (int64_t[]){D0, D1, D2});
    snprintf(feed, sizeof feed, "a=%s", apath);
    snprintf(exe, sizeof exe, "%s/big", dir);
    for (int threads = 1; threads <= 2; threads++) {
        char outdir[128], targ[8];
        snprintf(outdir, sizeof outdir, "%s/out%d", dir, threads);
        ck_assert_int_eq(mkdir(outdir, 0755), 0);
        snprintf(targ, sizeof targ, "%d", threads);
        char *argv[] = {exe, "--feed", feed, "--out-dir", outdir, "--threads", targ, NULL};
        ck_assert_int_eq(run_exe(argv), 0);
        snprintf(path, sizeof path, "%s/y.npy", outdir);
        check_npy_f32(path, want, 3, (int64_t[]){D0, D1, D2});
    }
    free(av);
    free(want);
    ir_graph_free(g);
    remove_tree(dir);
}
END_TEST

static double sigmoid_d(double a)
{
    return 1 / (1 + exp(-a));
}

/* test_vector_math's first 8 results, in double precision */
static double (*const unary_want[8])(double) = {exp, log, log1p, sin, cos, tanh, sigmoid_d, erf};

/* The elementwise ops whose float expressions call libm functions that
 * glibc's libmvec vectorizes (tcrt_elem.h, TFCC_SIMD), over 61 x 173 =
 * 10553 elements (the emitter splits them over the pool: kNNN_part, a loop
 * whose length leaves a remainder past every multiple of 8 and 16), and one
 * fused group with a broadcast (tanh(x * w), w f32[173]: two loops, the
 * inner one marked).  Each result is checked against the double-precision
 * libm function rounded to float (an independent computation here), within
 * 4 ulp (libmvec's float variants are documented within 4 ulp; libm's within
 * 1-2), at 1 and 2 threads.  Where meson found libmvec (TFCC_HAVE_LIBMVEC),
 * the executable must hold libmvec's expf variant, i.e. the loops did
 * vectorize through it (not in a sanitizer build, which keeps them scalar). */
START_TEST(test_vector_math)
{
    enum { R = 61, C = 173, N = R * C, NOUT = 11 };
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    IrType tt = {TCRT_F32, ir_shape_make(2, (int64_t[]){R, C})};
    IrValue x = ir_add_feed(g, "x", &tt, &st), p = ir_add_feed(g, "p", &tt, &st),
            e = ir_add_feed(g, "e", &tt, &st);
    float wv[C];
    for (int k = 0; k < C; k++)
        wv[k] = 0.05f * (float)(k % 23) - 0.5f;
    IrShape ws = ir_shape_make(1, (int64_t[]){C});
    IrValue w = ir_const(g, TCRT_F32, &ws, wv, &st);
    static const char *names[NOUT] = {"exp",     "log", "log1p", "sin",   "cos",       "tanh",
                                      "sigmoid", "erf", "pow",   "atan2", "tanh_bcast"};
    IrValue outs[NOUT] = {ir_unary(g, OP_EXP, x, &st),
                          ir_unary(g, OP_LOG, p, &st),
                          ir_unary(g, OP_LOG1P, p, &st),
                          ir_unary(g, OP_SIN, x, &st),
                          ir_unary(g, OP_COS, x, &st),
                          ir_unary(g, OP_TANH, x, &st),
                          ir_unary(g, OP_SIGMOID, x, &st),
                          ir_unary(g, OP_ERF, x, &st),
                          ir_binary(g, OP_POW, p, e, &st),
                          ir_binary(g, OP_ATAN2, x, e, &st),
                          ir_unary(g, OP_TANH, ir_binary(g, OP_MUL, x, w, &st), &st)};
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    for (int i = 0; i < NOUT; i++)
        ck_assert(ir_add_fetch(g, names[i], outs[i], &st));
    ck_assert_msg(pass_run_pipeline(g, NULL, &st), "%s", st.msg);
    emit_and_build(g, dir, "vmath");

    char path[200];
    snprintf(path, sizeof path, "%s/vmath.c", dir);
    size_t len;
    char *src = slurp(path, &len);
    int marked = 0;
    for (const char *at = strstr(src, "TFCC_SIMD\n"); at; at = strstr(at + 1, "TFCC_SIMD\n"))
        marked++;
    ck_assert_msg(marked == NOUT, "%d loops marked TFCC_SIMD, want %d", marked, NOUT);
    free(src);
    /* (in a sanitizer build GCC leaves the instrumented loops scalar, with
     * -fsanitize=address or =undefined alike: the values are checked all the same) */
#if TFCC_HAVE_LIBMVEC && !defined(__SANITIZE_ADDRESS__)
    snprintf(path, sizeof path, "%s/vmath", dir);
    char *bin = slurp(path, &len);
    ck_assert_msg(bytes_contain(bin, len, "v_expf"), "no libmvec expf variant in the executable");
    free(bin);
#endif

    /* x in [-20, 20), p in [0.01, 20), e in [-3, 3) (also atan2's x: every quadrant) */
    float *xv = malloc(sizeof(float) * N * 3);
    ck_assert_ptr_nonnull(xv);
    float *pv = xv + N, *ev = xv + 2 * N;
    for (int i = 0; i < N; i++) {
        xv[i] = -20.0f + 40.0f * (float)i / N;
        pv[i] = 0.01f + 20.0f * (float)((i * 7919) % N) / N;
        ev[i] = -3.0f + 6.0f * (float)((i * 104729) % N) / N;
    }
    char feeds[3][240], exe[128];
    const char *fn[3] = {"x", "p", "e"};
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s.npy", dir, fn[k]);
        write_npy_f32(path, xv + k * N, 2, (int64_t[]){R, C});
        snprintf(feeds[k], sizeof feeds[k], "%s=%s", fn[k], path);
    }
    snprintf(exe, sizeof exe, "%s/vmath", dir);
    for (int threads = 1; threads <= 2; threads++) {
        char outdir[128], targ[8];
        snprintf(outdir, sizeof outdir, "%s/out%d", dir, threads);
        ck_assert_int_eq(mkdir(outdir, 0755), 0);
        snprintf(targ, sizeof targ, "%d", threads);
        char *argv[] = {exe,      "--feed",    feeds[0], "--feed",    feeds[1], "--feed",
                        feeds[2], "--out-dir", outdir,   "--threads", targ,     NULL};
        ck_assert_int_eq(run_exe(argv), 0);
        for (int o = 0; o < NOUT; o++) {
            snprintf(path, sizeof path, "%s/%s.npy", outdir, names[o]);
            tcrt_tensor t;
            char err[256];
            ck_assert_msg(tcrt_npy_read(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
            ck_assert_int_eq(t.dtype, TCRT_F32);
            ck_assert_int_eq(tcrt_tensor_count(&t), N);
            const float *got = t.data;
            for (int i = 0; i < N; i++) {
                double a = xv[i], q = pv[i], b = ev[i], want;
                if (o < 8) /* exp, sin, cos, tanh, sigmoid, erf of x; log, log1p of p */
                    want = unary_want[o](o == 1 || o == 2 ? q : a);
                else if (o == 8)
                    want = pow(q, b);
                else if (o == 9)
                    want = atan2(a, b);
                else
                    want = tanh((double)(float)(xv[i] * wv[i % C])); /* the product in float, as the kernel */
                ck_assert_msg(ulps_apart(got[i], (float)want) <= 4,
                              "%s(%.9g, %.9g, %.9g) [%d, %d threads]: got %.9g, want %.9g", names[o], a, q, b,
                              i, threads, (double)got[i], (float)want);
            }
            free(t.data);
        }
    }
    free(xv);
    ir_graph_free(g);
    remove_tree(dir);
}
END_TEST

START_TEST(test_deterministic_output)
{
    char d1[64], d2[64];
    make_tmpdir(d1, sizeof d1);
    make_tmpdir(d2, sizeof d2);
    IrGraph *g1 = tiny_graph(), *g2 = tiny_graph();
    Status st = ST_INIT;
    CgOptions o = {.name = "tiny", .source_file = "tiny.pbtxt"};
    ck_assert_msg(cgc_emit(g1, &o, d1, &st), "%s", st.msg);
    ck_assert_msg(cgc_emit(g2, &o, d2, &st), "%s", st.msg);
    ck_assert_msg(cgc_emit(g1, &o, d2, &st), "%s", st.msg); /* again over the same files */
    const char *files[] = {"tiny.h", "tiny.c", "tiny_weights.bin", "tiny_weights.S", "tiny_main.c"};
    for (int i = 0; i < 5; i++) {
        char p1[200], p2[200];
        snprintf(p1, sizeof p1, "%s/%s", d1, files[i]);
        snprintf(p2, sizeof p2, "%s/%s", d2, files[i]);
        size_t n1, n2;
        char *b1 = slurp(p1, &n1), *b2 = slurp(p2, &n2);
        ck_assert_msg(n1 == n2 && memcmp(b1, b2, n1) == 0, "%s differs", files[i]);
        free(b1);
        free(b2);
    }
    /* weights in node order, each at a 64-byte boundary: the scalar 2 at 0,
     * bias (12 bytes) at 64, W at 128, packed as the filter of a 1x1 conv
     * (passes/pack.c): [1][1][1][3][16], each input row's 2 outputs then 14
     * zeros (192 bytes); 320 bytes in all. */
    char p[200];
    snprintf(p, sizeof p, "%s/tiny_weights.bin", d1);
    size_t n;
    char *w = slurp(p, &n);
    ck_assert_int_eq(n, 320);
    const float want_two = 2.0f, want_bias[3] = {1.0f, 0.5f, -1.0f};
    float want_w[48] = {0};
    for (int k = 0; k < 3; k++)
        want_w[16 * k] = (float)(2 * k + 1), want_w[16 * k + 1] = (float)(2 * k + 2);
    ck_assert(memcmp(w, &want_two, 4) == 0);
    ck_assert(memcmp(w + 64, want_bias, 12) == 0);
    ck_assert(memcmp(w + 128, want_w, sizeof want_w) == 0);
    for (size_t k = 4; k < 64; k++)
        ck_assert_int_eq(w[k], 0);
    free(w);
    ir_graph_free(g1);
    ir_graph_free(g2);
    remove_tree(d1);
    remove_tree(d2);
}
END_TEST

START_TEST(test_emit_requires_plan)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    IrType xt = {TCRT_F32, ir_shape_make(1, (int64_t[]){4})};
    IrValue x = ir_add_feed(g, "x:0", &xt, &st);
    ck_assert(ir_add_fetch(g, "y:0", ir_unary(g, OP_RELU, x, &st), &st));
    CgOptions o = {.name = "m", .source_file = "m.pb"};
    ck_assert(!cgc_emit(g, &o, "/tmp", &st));
    ck_assert_ptr_nonnull(strstr(st.msg, "not memory-planned"));
    Status st2 = ST_INIT;
    CgOptions bad = {.name = "9lives", .source_file = "m.pb"};
    ck_assert(!cgc_emit(g, &bad, "/tmp", &st2));
    ck_assert_ptr_nonnull(strstr(st2.msg, "not a C identifier"));
    ir_graph_free(g);
}
END_TEST

START_TEST(test_build_error_reported)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    const char *files[3][2] = {{"bad.c", "int f(void) { return syntax error; }\n"},
                               {"bad_weights.S", "\n"},
                               {"bad_main.c", "int main(void) { return 0; }\n"}};
    for (int i = 0; i < 3; i++) {
        char p[200];
        snprintf(p, sizeof p, "%s/%s", dir, files[i][0]);
        FILE *f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        fputs(files[i][1], f);
        fclose(f);
    }
    Status st = ST_INIT;
    char exe[128];
    snprintf(exe, sizeof exe, "%s/bad", dir);
    ck_assert(!tgt_build_exe(tgt_host(), dir, "bad", exe, NULL, &st));
    ck_assert_ptr_nonnull(strstr(st.msg, "C compiler failed"));
    ck_assert_ptr_nonnull(strstr(st.msg, "-c bad.c -o bad.o"));
    ck_assert_ptr_nonnull(strstr(st.msg, "error"));
    remove_tree(dir);
}
END_TEST

START_TEST(test_util)
{
    char buf[64];
    cg_c_ident("conv/Relu:0", buf, sizeof buf);
    ck_assert_str_eq(buf, "conv_Relu_0");
    cg_c_ident("0abc", buf, sizeof buf);
    ck_assert_str_eq(buf, "_0abc");
    ck_assert_str_eq(cg_c_type(TCRT_F32), "float");
    ck_assert_str_eq(cg_c_type(TCRT_BOOL), "uint8_t");
    ck_assert_str_eq(cg_c_type(TCRT_I64), "int64_t");
    const TgtTarget *t = tgt_host();
    ck_assert_str_eq(t->cc, "cc");
    ck_assert_ptr_nonnull(strstr(t->cflags, "-O2"));
}
END_TEST

static Suite *codegen_suite(void)
{
    Suite *s = suite_create("codegen");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_util);
    tcase_add_test(tc, test_emit_requires_plan);
    tcase_add_test(tc, test_deterministic_output);
    tcase_add_test(tc, test_tiny_model_runs);
    tcase_add_test(tc, test_tiny_api);
    tcase_add_test(tc, test_broadcast_elementwise);
    tcase_add_test(tc, test_large_elementwise_threads);
    tcase_add_test(tc, test_vector_math);
    tcase_add_test(tc, test_build_error_reported);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(codegen_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
