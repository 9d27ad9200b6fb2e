/* tests/targets/test_targets.c - targets, --emit kinds, reproducibility.
 *
 * One executable, one Check suite per mode (each its own meson test, so they
 * run in parallel):
 *   errors     unknown --target / --emit / --backend, --backend llvm without
 *              LLVM, the Android target without an NDK, run with --target:
 *              exit codes and message text pinned
 *   aarch64    DS_CNN_S and DNN_S (ML-KWS) compiled for aarch64-linux-gnu,
 *              run under qemu-aarch64, outputs compared with the TF.js
 *              references (rtol 1e-3 + atol 1e-4, as tests/e2e); DS_CNN_S
 *              also with --static and with --backend llvm when tfcc has LLVM
 *   app        app.c (a phone-app-style program using kws.h) linked with the
 *              --emit lib archive (cc, -pthread -lm, no libstdc++), host and
 *              aarch64 (qemu), compared likewise
 *   emitc-gcc, emitc-clang   the --emit c folder is pure C (no C++ file,
 *              no Eigen, no CXX / -lstdc++ in its Makefile), builds with
 *              `make CC=... CXX=false CFLAGS='-O2 -Wall -Werror'`, runs and
 *              matches likewise; once as compiled, once with the pack pass
 *              disabled (convolutions on runtime/kernels/fast_gemm.c)
 *   repro      exe, lib, obj and c for two targets, compiled twice into two
 *              different folders: the trees must be byte-identical (diff -r)
 *   gc         DNN_S's executable (tfcc's link, for the host and for
 *              aarch64-linux-gnu when it can be built, and the --emit c make
 *              build) defines none of the convolution kernels DS_CNN_S's
 *              does (nm), tfcc's host executables have no .debug_ section
 *              (readelf), and the host ones run and match; with lld and
 *              an order for this CPU's kernels (tgt_text_order), the
 *              functions runtime/text.order.ISA lists lie together at the
 *              start of the host executable's code (nm -S), and the
 *              executable runs and matches
 * usage: test_targets MODE MODELS_DIR TESTS_SRC_DIR
 * Exits 77 (SKIP) when the models, the cross compiler, qemu or a compiler
 * the mode needs is missing.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "tfcc_config.h"
#include "compiler/driver.h"
#include "targets/targets.h"
#include "tcrt.h"

static const char *models_dir, *src_dir;
static char work[] = "/tmp/tfcc-targets-XXXXXX";

#define QEMU "qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"

static bool on_path(const char *cmd)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path && *path) {
        size_t n = strcspn(path, ":");
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, cmd);
        if (n && access(buf, X_OK) == 0)
            return true;
        path += n + (path[n] == ':');
    }
    return false;
}

/* Whether aarch64 artifacts can be built here (cross compiler and the
 * cross-compiled runtime; a build dir configured before the cross compilers
 * were installed has none) and run (qemu). */
static bool a64_ready(void)
{
    Status st = ST_INIT;
    const TgtTarget *t = tgt_find("aarch64-linux-gnu");
    return t && tgt_check(t, &st) && on_path("qemu-aarch64");
}

/* Runs argv (searched on PATH); its exit code, 128 when it did not exit. */
static int run(char *const *argv)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* tfcc compile on a KWS model with extra args (NULL-terminated). */
static int tfcc(const char *model, const char *out, const char *const *extra, FILE *err)
{
    char path[1024], feed[64];
    snprintf(path, sizeof path, "%s/github-ml-kws/%s/%s.pb", models_dir, model, model);
    snprintf(feed, sizeof feed, "Reshape:0:1x%d", strstr(model, "DNN") == model ? 250 : 490);
    char *argv[40] = {"tfcc", "compile", path, "--feed", feed, "--fetch", "labels_softmax", "-o", (char *)out};
    int k = 9;
    for (int i = 0; extra && extra[i]; i++)
        argv[k++] = (char *)extra[i];
    argv[k] = NULL;
    return drv_main(k, argv, stdout, err ? err : stderr);
}

static void ref_path(const char *model, const char *what, char *buf, size_t n)
{
    snprintf(buf, n, "%s/github-ml-kws/%s/reference/%s/%s", models_dir, model, model, what);
}

/* got (n floats) against the model's output_0.npy. */
static void compare_floats(const char *what, const char *model, const float *got, int64_t n)
{
    char ref[1024], msg[512];
    tcrt_tensor want;
    ref_path(model, "output_0.npy", ref, sizeof ref);
    ck_assert_msg(tcrt_npy_read(ref, &want, msg, sizeof msg) == TCRT_OK, "%s", msg);
    ck_assert_int_eq(want.dtype, TCRT_F32);
    ck_assert_int_eq(tcrt_tensor_count(&want), n);
    const float *w = want.data;
    double max_diff = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - w[i]);
        ck_assert_msg(d <= 1e-4 + 1e-3 * fabs(w[i]), "%s: element %lld: got %g, want %g", what, (long long)i,
                      got[i], w[i]);
        max_diff = d > max_diff ? d : max_diff;
    }
    printf("  %s: %lld elements match (max abs diff %.3g)\n", what, (long long)n, max_diff);
    free(want.data);
}

static void compare_npy(const char *what, const char *model, const char *got_path)
{
    tcrt_tensor got;
    char msg[512];
    ck_assert_msg(tcrt_npy_read(got_path, &got, msg, sizeof msg) == TCRT_OK, "%s: %s", what, msg);
    ck_assert_int_eq(got.dtype, TCRT_F32);
    compare_floats(what, model, got.data, tcrt_tensor_count(&got));
    free(got.data);
}

/* Runs exe (through qemu when is_a64) on the model's input_0.npy and compares. */
static void run_exe(const char *what, const char *model, const char *exe, bool is_a64)
{
    char feed[1200], in[1024], outdir[1100], got[1200];
    ref_path(model, "input_0.npy", in, sizeof in);
    snprintf(feed, sizeof feed, "Reshape:0=%s", in);
    snprintf(outdir, sizeof outdir, "%s.out", exe);
    char *a64[] = {QEMU, (char *)exe, "--feed", feed, "--out-dir", outdir, NULL};
    char *host[] = {(char *)exe, "--feed", feed, "--out-dir", outdir, NULL};
    ck_assert_msg(run(is_a64 ? a64 : host) == 0, "%s: %s failed", what, exe);
    snprintf(got, sizeof got, "%s/labels_softmax.npy", outdir);
    compare_npy(what, model, got);
}

/* ---- errors ---------------------------------------------------------------- */

static int tfcc_err(const char *const *extra, char *msg, size_t n)
{
    FILE *f = fmemopen(msg, n, "w");
    ck_assert_ptr_nonnull(f);
    char out[600];
    snprintf(out, sizeof out, "%s/err", work);
    int rc = tfcc("DNN_S", out, extra, f);
    fclose(f);
    msg[n - 1] = 0;
    return rc;
}

START_TEST(test_errors)
{
    char msg[2048];
    const char *unknown_target[] = {"--target", "riscv64-linux-gnu", NULL};
    ck_assert_int_eq(tfcc_err(unknown_target, msg, sizeof msg), 2);
    ck_assert_msg(strstr(msg, "error: unknown target 'riscv64-linux-gnu' (known: x86_64-linux-gnu"), "%s", msg);
    ck_assert_msg(strstr(msg, "aarch64-linux-android)"), "%s", msg);

    const char *unknown_emit[] = {"--emit", "dll", NULL};
    ck_assert_int_eq(tfcc_err(unknown_emit, msg, sizeof msg), 2);
    ck_assert_msg(strstr(msg, "error: unknown --emit kind 'dll' (exe, lib, obj, c or cuda)"), "%s", msg);

    const char *unknown_backend[] = {"--backend", "gcc", NULL};
    ck_assert_int_eq(tfcc_err(unknown_backend, msg, sizeof msg), 2);
    ck_assert_msg(strstr(msg, "error: unknown --backend 'gcc' (c or llvm)"), "%s", msg);

    const char *twice[] = {"--target", "host", "--target", "x86_64-linux-gnu", NULL};
    ck_assert_int_eq(tfcc_err(twice, msg, sizeof msg), 2);
    ck_assert_msg(strstr(msg, "given twice"), "%s", msg);

    if (!cgl_available()) {
        const char *llvm[] = {"--backend", "llvm", NULL};
        ck_assert_int_eq(tfcc_err(llvm, msg, sizeof msg), 1);
        ck_assert_msg(strstr(msg, "error: --backend llvm: this tfcc was built without LLVM"), "%s", msg);
    }
    const char *llvm_c[] = {"--backend", "llvm", "--emit", "c", NULL};
    if (cgl_available()) {
        ck_assert_int_eq(tfcc_err(llvm_c, msg, sizeof msg), 1);
        ck_assert_msg(strstr(msg, "--emit c writes the C backend's sources: it cannot use --backend llvm"), "%s",
                      msg);
    }

    const char *android[] = {"--target", "aarch64-linux-android", "--emit", "lib", NULL};
    ck_assert_int_eq(tfcc_err(android, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "error: target aarch64-linux-android: needs the Android NDK"), "%s", msg);

    /* the Android target's sources need no toolchain here */
    const char *android_c[] = {"--target", "aarch64-linux-android", "--emit", "c", "--name", "kws", NULL};
    ck_assert_int_eq(tfcc_err(android_c, msg, sizeof msg), 0);
    char mk[700];
    snprintf(mk, sizeof mk, "%s/err/Makefile", work);
    ck_assert_int_eq(access(mk, R_OK), 0);

    /* ... nor does its LLVM object: an AArch64 ELF relocatable (e_type 1 at
     * byte 16, e_machine 183 at 18) next to the header */
    if (cgl_available()) {
        const char *android_o[] = {"--target", "aarch64-linux-android", "--emit", "obj", "--backend", "llvm",
                                   "--name", "kwsa", NULL};
        ck_assert_int_eq(tfcc_err(android_o, msg, sizeof msg), 0);
        char obj[700], hdr[700];
        snprintf(obj, sizeof obj, "%s/err/kwsa.o", work);
        snprintf(hdr, sizeof hdr, "%s/err/kwsa.h", work);
        ck_assert_int_eq(access(hdr, R_OK), 0);
        FILE *fo = fopen(obj, "rb");
        ck_assert_ptr_nonnull(fo);
        unsigned char e[20];
        ck_assert_int_eq(fread(e, 1, sizeof e, fo), sizeof e);
        fclose(fo);
        ck_assert(e[0] == 0x7f && e[1] == 'E' && e[2] == 'L' && e[3] == 'F' && e[4] == 2);
        ck_assert_int_eq(e[16] | e[17] << 8, 1);
        ck_assert_int_eq(e[18] | e[19] << 8, 183);
    }

    /* run builds for the host only */
    char model[1024];
    snprintf(model, sizeof model, "%s/github-ml-kws/DNN_S/DNN_S.pb", models_dir);
    char *argv[] = {"tfcc", "run", model, "--target", "aarch64-linux-gnu", "--fetch", "labels_softmax", NULL};
    FILE *f = fmemopen(msg, sizeof msg, "w");
    ck_assert_int_eq(drv_main(7, argv, stdout, f), 1);
    fclose(f);
    ck_assert_msg(strstr(msg, "error: run builds and runs a host executable: --target and --emit are for compile"),
                  "%s", msg);
}
END_TEST

/* ---- aarch64 under qemu --------------------------------------------------- */

START_TEST(test_aarch64_models)
{
    static const char *const models[] = {"DS_CNN_S", "DNN_S"};
    for (int i = 0; i < 2; i++) {
        char exe[600], what[128];
        snprintf(exe, sizeof exe, "%s/%s_a64", work, models[i]);
        const char *extra[] = {"--target", "aarch64-linux-gnu", i ? NULL : "--cpu", "cortex-a76", NULL};
        ck_assert_int_eq(tfcc(models[i], exe, extra, NULL), 0);
        snprintf(what, sizeof what, "%s aarch64-linux-gnu (qemu)", models[i]);
        run_exe(what, models[i], exe, true);
    }
    /* --static: the cross libc.a linked in (libc6-dev-arm64-cross) */
    char sexe[600];
    snprintf(sexe, sizeof sexe, "%s/DS_CNN_S_a64_static", work);
    const char *sextra[] = {"--target", "aarch64-linux-gnu", "--static", NULL};
    ck_assert_int_eq(tfcc("DS_CNN_S", sexe, sextra, NULL), 0);
    run_exe("DS_CNN_S aarch64-linux-gnu --static (qemu)", "DS_CNN_S", sexe, true);
    if (!cgl_available()) {
        printf("  --backend llvm: skipped (tfcc built without LLVM)\n");
        return;
    }
    /* the LLVM backend's object for aarch64, linked with the cross runtime */
    char exe[600];
    snprintf(exe, sizeof exe, "%s/DS_CNN_S_a64_llvm", work);
    const char *extra[] = {"--target", "aarch64-linux-gnu", "--backend", "llvm", NULL};
    ck_assert_int_eq(tfcc("DS_CNN_S", exe, extra, NULL), 0);
    run_exe("DS_CNN_S aarch64-linux-gnu --backend llvm (qemu)", "DS_CNN_S", exe, true);
}
END_TEST

/* ---- phone-app-style program on --emit lib --------------------------------- */

static void app_for(const char *target, const char *cc, bool is_a64)
{
    char out[600], lib[700], inc[700], app_src[1024], app[700], in_raw[700], out_raw[700], in_npy[1024];
    snprintf(out, sizeof out, "%s/lib-%s", work, target);
    const char *extra[] = {"--target", target, "--emit", "lib", "--name", "kws", NULL};
    ck_assert_int_eq(tfcc("DS_CNN_S", out, extra, NULL), 0);
    snprintf(lib, sizeof lib, "%s/libkws.a", out);
    snprintf(inc, sizeof inc, "-I%s", out);
    snprintf(app_src, sizeof app_src, "%s/targets/app.c", src_dir);
    snprintf(app, sizeof app, "%s/app-%s", work, target);
    char *ccv[] = {(char *)cc, "-std=c11", "-O2",      "-Wall", "-Wextra", "-Werror", inc,
                   app_src,    lib,        "-pthread", "-lm",   "-o",      app,       NULL};
    ck_assert_msg(run(ccv) == 0, "building app.c against %s failed", lib);

    /* raw float32 input from the reference's input_0.npy */
    tcrt_tensor t;
    char msg[512];
    ref_path("DS_CNN_S", "input_0.npy", in_npy, sizeof in_npy);
    ck_assert_msg(tcrt_npy_read(in_npy, &t, msg, sizeof msg) == TCRT_OK, "%s", msg);
    snprintf(in_raw, sizeof in_raw, "%s/in-%s.f32", work, target);
    snprintf(out_raw, sizeof out_raw, "%s/out-%s.f32", work, target);
    FILE *f = fopen(in_raw, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fwrite(t.data, sizeof(float), (size_t)tcrt_tensor_count(&t), f), tcrt_tensor_count(&t));
    fclose(f);
    free(t.data);

    char *a64[] = {QEMU, app, "Reshape:0", in_raw, out_raw, NULL};
    char *host[] = {app, "Reshape:0", in_raw, out_raw, NULL};
    ck_assert_msg(run(is_a64 ? a64 : host) == 0, "%s failed", app);
    float got[12];
    f = fopen(out_raw, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fread(got, sizeof(float), 12, f), 12);
    fclose(f);
    char what[128];
    snprintf(what, sizeof what, "app.c + libkws.a (%s)", target);
    compare_floats(what, "DS_CNN_S", got, 12);
}

START_TEST(test_app_host) { app_for("x86_64-linux-gnu", "cc", false); }
END_TEST

START_TEST(test_app_aarch64)
{
    if (!a64_ready()) {
        printf("  skipped: aarch64-linux-gnu-gcc, its runtime or qemu-aarch64 missing\n");
        return;
    }
    app_for("aarch64-linux-gnu", "aarch64-linux-gnu-gcc", true);
}
END_TEST

/* ---- --emit c built with gcc / clang --------------------------------------- */

static const char *emitc_cc;

/* Whether the file at path contains needle (case-insensitive when nocase). */
static bool file_has(const char *path, const char *needle, bool nocase)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    ck_assert_msg(feof(f), "%s: larger than the scan buffer", path);
    fclose(f);
    buf[n] = 0;
    for (size_t i = 0; i < n; i++) { /* NULs would end the search early; needle is lower case with nocase */
        if (!buf[i])
            buf[i] = ' ';
        else if (nocase && buf[i] >= 'A' && buf[i] <= 'Z')
            buf[i] = (char)(buf[i] - 'A' + 'a');
    }
    return strstr(buf, needle) != NULL;
}

/* Every file under dir: no C++ source and no Eigen include; returns how many
 * .c files it holds. */
static int check_pure_c(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot list %s", dir);
    int n_c = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        ck_assert_int_eq(stat(path, &sb), 0);
        if (S_ISDIR(sb.st_mode)) {
            n_c += check_pure_c(path);
            continue;
        }
        size_t len = strlen(e->d_name);
        const char *ext = strrchr(e->d_name, '.');
        ck_assert_msg(!ext || (strcmp(ext, ".cc") && strcmp(ext, ".cpp") && strcmp(ext, ".cxx") &&
                               strcmp(ext, ".hpp")),
                      "--emit c folder holds a C++ file: %s", path);
        if (len > 2 && (!strcmp(e->d_name + len - 2, ".c") || !strcmp(e->d_name + len - 2, ".h"))) {
            ck_assert_msg(!file_has(path, "include <Eigen", false) && !file_has(path, "include <eigen", false),
                          "%s includes Eigen", path);
            n_c += !strcmp(e->d_name + len - 2, ".c");
        }
    }
    closedir(d);
    return n_c;
}

/* --emit c of DS_CNN_S (extra: more tfcc flags, NULL-terminated) into
 * c-CC-tag: the folder is pure C (no C++ file, no Eigen, a Makefile without
 * CXX / -lstdc++ that builds the generated files as -std=c11 and the runtime
 * as -std=gnu11), it builds with make CC=CC CXX=false (no C++ compiler is
 * ever run) CFLAGS='-O2 -Wall -Werror', and the executable's output matches
 * the TF.js reference. */
static void emit_c_with(const char *tag, const char *const *extra)
{
    char out[600], exe[700], cc[64], mk[700], gemm[700], eigen[700];
    snprintf(out, sizeof out, "%s/c-%s-%s", work, emitc_cc, tag);
    const char *args[12] = {"--emit", "c", "--name", "kws"};
    int k = 4;
    for (int i = 0; extra && extra[i] && k < 11; i++)
        args[k++] = extra[i];
    args[k] = NULL;
    ck_assert_int_eq(tfcc("DS_CNN_S", out, args, NULL), 0);
    snprintf(gemm, sizeof gemm, "%s/runtime/kernels/fast_gemm.c", out);
    snprintf(eigen, sizeof eigen, "%s/runtime/kernels/fast_eigen.cc", out);
    ck_assert_msg(access(gemm, R_OK) == 0, "%s missing", gemm);
    ck_assert_msg(access(eigen, F_OK) != 0, "%s present", eigen);
    int n_c = check_pure_c(out);
    ck_assert_int_ge(n_c, 10);
    snprintf(mk, sizeof mk, "%s/Makefile", out);
    ck_assert_msg(!file_has(mk, "eigen", true), "Makefile names Eigen");
    ck_assert_msg(!file_has(mk, "stdc++", false), "Makefile links -lstdc++");
    ck_assert_msg(!file_has(mk, "CXX", false), "Makefile uses a C++ compiler");
    ck_assert_msg(!file_has(mk, ".cc", false), "Makefile names a .cc source");
    ck_assert_msg(file_has(mk, "kernels/fast_gemm.c", false), "Makefile misses fast_gemm.c");
    ck_assert_msg(file_has(mk, "$(CC) -std=c11 $(CPPFLAGS)", false), "generated files not built as C11");
    ck_assert_msg(file_has(mk, "$(CC) -std=gnu11 $(CPPFLAGS)", false), "runtime not built as GNU C11");
    snprintf(cc, sizeof cc, "CC=%s", emitc_cc);
    char *make[] = {"make", "-s", "-C", out, cc, "CXX=false", "CFLAGS=-O2 -Wall -Werror", NULL};
    ck_assert_msg(run(make) == 0, "make in %s failed", out);
    snprintf(exe, sizeof exe, "%s/kws", out);
    char what[160];
    snprintf(what, sizeof what, "--emit c (%s, %d C files) built with %s", tag, n_c, emitc_cc);
    run_exe(what, "DS_CNN_S", exe, false);
}

START_TEST(test_emit_c) { emit_c_with("default", NULL); }
END_TEST

/* Without the pack pass the convolutions keep HWIO weights and run on
 * fast_gemm.c: the 10x4 stride-2 first conv by im2col, the 1x1 convs as
 * matmuls (the workspace sized by the compiler's Eigen twin). */
START_TEST(test_emit_c_unpacked)
{
    const char *extra[] = {"--disable-pass", "pack", NULL};
    emit_c_with("unpacked", extra);
}
END_TEST

/* ---- kernels a model does not call are not linked -------------------------- */

/* Runtime functions that only convolutions reach. */
static const char *const conv_syms[] = {"tcrt_fast_conv2d", "tcrt_fast_depthwise_conv2d", "tcrt_ref_conv2d",
                                        "tcrt_pconv_run"};
#define N_CONV_SYMS ((int)(sizeof conv_syms / sizeof conv_syms[0]))

/* How many of conv_syms the file defines (NM --defined-only); -1 when nm fails. */
static int conv_syms_in_nm(const char *nm, const char *file)
{
    char cmd[1200], line[512];
    snprintf(cmd, sizeof cmd, "%s --defined-only '%s'", nm, file);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    bool seen[N_CONV_SYMS] = {false};
    while (fgets(line, sizeof line, p)) {
        char addr[64], type[8], name[400];
        if (sscanf(line, "%63s %7s %399s", addr, type, name) != 3)
            continue;
        for (int i = 0; i < N_CONV_SYMS; i++)
            seen[i] |= !strcmp(name, conv_syms[i]);
    }
    if (pclose(p) != 0)
        return -1;
    int n = 0;
    for (int i = 0; i < N_CONV_SYMS; i++)
        n += seen[i];
    return n;
}

static int conv_syms_in(const char *file)
{
    return conv_syms_in_nm("nm", file);
}

/* How many .debug_* sections the ELF file has (readelf -S); -1 when readelf fails. */
static int debug_sections_in(const char *file)
{
    char cmd[1200], line[512];
    snprintf(cmd, sizeof cmd, "readelf -S --wide '%s'", file);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    int n = 0;
    bool any = false;
    while (fgets(line, sizeof line, p)) {
        n += strstr(line, " .debug_") != NULL;
        any |= strstr(line, " .text") != NULL;
    }
    return pclose(p) == 0 && any ? n : -1;
}

static long long file_size(const char *path)
{
    struct stat sb;
    ck_assert_msg(stat(path, &sb) == 0, "%s missing", path);
    return (long long)sb.st_size;
}

/* The runtime is built with a section per function and executables are
 * linked with --gc-sections: DNN_S (MatMul, Add, Relu, Softmax) carries none
 * of the convolution kernels that DS_CNN_S needs, as a tfcc executable (host
 * and aarch64) and as the --emit c folder's make build; both still run and
 * match.  tfcc's executables are also linked with --strip-debug: no
 * .debug_ section, whatever the runtime was built with. */
START_TEST(test_gc)
{
    char cnn[600], dnn[600];
    snprintf(cnn, sizeof cnn, "%s/gc_DS_CNN_S", work);
    snprintf(dnn, sizeof dnn, "%s/gc_DNN_S", work);
    ck_assert_int_eq(tfcc("DS_CNN_S", cnn, NULL, NULL), 0);
    ck_assert_int_eq(tfcc("DNN_S", dnn, NULL, NULL), 0);
    ck_assert_int_eq(conv_syms_in(cnn), N_CONV_SYMS); /* the names are the runtime's */
    ck_assert_int_eq(conv_syms_in(dnn), 0);
    /* and without debug information (the runtime's, in a debug build) */
    ck_assert_int_eq(debug_sections_in(cnn), 0);
    ck_assert_int_eq(debug_sections_in(dnn), 0);
    printf("  exe: DS_CNN_S %lld bytes with the %d convolution entry points, DNN_S %lld bytes with none; "
           "no .debug_ sections\n",
           file_size(cnn), N_CONV_SYMS, file_size(dnn));
    run_exe("DNN_S exe linked with --gc-sections", "DNN_S", dnn, false);
    run_exe("DS_CNN_S exe linked with --gc-sections", "DS_CNN_S", cnn, false);
    /* the aarch64 runtime is built with sections too (run under qemu by the aarch64 mode) */
    if (a64_ready() && on_path("aarch64-linux-gnu-nm")) {
        const char *a64[] = {"--target", "aarch64-linux-gnu", NULL};
        snprintf(cnn, sizeof cnn, "%s/gc_DS_CNN_S_a64", work);
        snprintf(dnn, sizeof dnn, "%s/gc_DNN_S_a64", work);
        ck_assert_int_eq(tfcc("DS_CNN_S", cnn, a64, NULL), 0);
        ck_assert_int_eq(tfcc("DNN_S", dnn, a64, NULL), 0);
        ck_assert_int_eq(conv_syms_in_nm("aarch64-linux-gnu-nm", cnn), N_CONV_SYMS);
        ck_assert_int_eq(conv_syms_in_nm("aarch64-linux-gnu-nm", dnn), 0);
        printf("  aarch64-linux-gnu exe: DS_CNN_S %lld bytes, DNN_S %lld bytes without them\n",
               file_size(cnn), file_size(dnn));
    } else
        printf(
            "  aarch64-linux-gnu: skipped (cross compiler, its runtime or aarch64-linux-gnu-nm missing)\n");
    if (!on_path("cc") || !on_path("make")) {
        printf("  --emit c: skipped (cc or make missing)\n");
        return;
    }
    char out[600], exe[700];
    snprintf(out, sizeof out, "%s/gc-c", work);
    const char *args[] = {"--emit", "c", "--name", "kws", NULL};
    ck_assert_int_eq(tfcc("DNN_S", out, args, NULL), 0);
    char *make[] = {"make", "-s", "-C", out, "CC=cc", "CXX=false", NULL};
    ck_assert_msg(run(make) == 0, "make in %s failed", out);
    snprintf(exe, sizeof exe, "%s/kws", out);
    ck_assert_int_eq(conv_syms_in(exe), 0);
    run_exe("DNN_S --emit c, make", "DNN_S", exe, false);
}
END_TEST

/* ---- code layout ---------------------------------------------------------- */

/* Of the executable's functions (nm -S), those named in the order file (#
 * lines skipped): their bytes in *listed, and in *span the bytes from the
 * lowest function address to the end of the last of them; *anchor: the
 * offset from that address of tfcc_model_code, the function the C backend
 * emits in the model's one code section (-1 if absent); false when nm or
 * the file fails. */
static bool layout_of(const char *exe, const char *order, long long *listed, long long *span,
                      long long *anchor)
{
    FILE *o = fopen(order, "r");
    ck_assert_msg(o != NULL, "%s missing", order);
    size_t n = 0, cap = 1024;
    char **names = malloc(cap * sizeof *names), line[512];
    while (fgets(line, sizeof line, o)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#')
            continue;
        if (n == cap)
            names = realloc(names, (cap *= 2) * sizeof *names);
        names[n++] = strdup(line);
    }
    fclose(o);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "nm -S --defined-only '%s'", exe);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    unsigned long long lo = ~0ull, end = 0, at = 0;
    bool has_anchor = false;
    *listed = 0;
    bool *seen = calloc(n ? n : 1, sizeof *seen);
    while (fgets(line, sizeof line, p)) {
        unsigned long long addr, size;
        char type[8], name[400];
        if (sscanf(line, "%llx %llx %7s %399s", &addr, &size, type, name) != 4 || !strchr("tTwW", type[0]))
            continue;
        lo = addr < lo ? addr : lo;
        if (!strcmp(name, "tfcc_model_code"))
            at = addr, has_anchor = true;
        for (size_t i = 0; i < n; i++)
            if (!seen[i] && !strcmp(name, names[i])) {
                seen[i] = true; /* aliases at one address: counted once */
                *listed += (long long)size;
                end = addr + size > end ? addr + size : end;
                break;
            }
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names), free(seen);
    *span = end > lo ? (long long)(end - lo) : 0;
    *anchor = has_anchor ? (long long)(at - lo) : -1;
    return pclose(p) == 0 && *listed > 0;
}

/* With lld, tfcc links host executables with --symbol-ordering-file=
 * runtime/text.order (docs/targets.md, "Code layout"): the listed functions
 * the executable has come first in its code, so they span little more than
 * their own bytes (functions sharing a section with a listed one, such as
 * libc's in a static link, come along); the default order scatters them
 * over the whole text (facemesh-detection-short --static: 339 KB of them
 * over 908 of 913 KB, against 454 with the order); the model's own code
 * lies among them, at its anchor's place.  Checked on a dynamic
 * DS_CNN_S (the runtime's functions; sanitizer builds cannot link
 * statically), which runs and matches. */
START_TEST(test_layout)
{
    char order[1024];
    if (!tgt_text_order(tgt_host(), order, sizeof order)) {
        printf("  code layout: skipped (tfcc was built without lld, or no runtime/text.order.ISA for this "
               "CPU's kernels)\n");
        return;
    }
    char exe[600];
    snprintf(exe, sizeof exe, "%s/layout_DS_CNN_S", work);
    /* dynamic: sanitizer builds (make test-asan) cannot link --static */
    ck_assert_int_eq(tfcc("DS_CNN_S", exe, NULL, NULL), 0);
    long long listed, span, anchor;
    ck_assert(layout_of(exe, order, &listed, &span, &anchor));
    printf("  code layout: %lld bytes of listed functions within the first %lld bytes of code; the model's "
           "code at %lld\n",
           listed, span, anchor);
    /* the model's own code (one section) goes where the order lists its anchor */
    ck_assert_msg(anchor >= 0 && anchor < span, "tfcc_model_code at %lld, outside the listed %lld bytes",
                  anchor, span);
    /* DS_CNN_S: 1.02x with the order, 1.46x in the default one */
    ck_assert_msg(span <= listed + listed / 8, "listed functions (%lld bytes) spread over %lld bytes", listed,
                  span);
    run_exe("DS_CNN_S, linked with runtime/text.order", "DS_CNN_S", exe, false);
}
END_TEST

/* ---- reproducibility ------------------------------------------------------ */

START_TEST(test_repro)
{
    static const char *const kinds[] = {"exe", "lib", "obj", "c"};
    bool a64 = a64_ready();
    for (int k = 0; k < 4; k++) {
        char a[700], b[700];
        snprintf(a, sizeof a, "%s/repro-one/%s", work, kinds[k]);
        snprintf(b, sizeof b, "%s/repro-two-other-folder/%s", work, kinds[k]);
        const char *extra[] = {"--emit", kinds[k], "--name", "kws", "--target", "x86_64-linux-gnu",
                               a64 ? "--target" : NULL, "aarch64-linux-gnu", NULL};
        ck_assert_int_eq(tfcc("DNN_S", a, extra, NULL), 0);
        ck_assert_int_eq(tfcc("DNN_S", b, extra, NULL), 0);
        char *diff[] = {"diff", "-r", "-q", a, b, NULL};
        ck_assert_msg(run(diff) == 0, "--emit %s: %s and %s differ", kinds[k], a, b);
        printf("  --emit %s: byte-identical across two runs and folders (%s)\n", kinds[k],
               a64 ? "x86_64-linux-gnu, aarch64-linux-gnu" : "x86_64-linux-gnu");
    }
}
END_TEST

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODE MODELS_DIR TESTS_SRC_DIR\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    models_dir = argv[2];
    src_dir = argv[3];
    struct stat sb;
    if (stat(models_dir, &sb) != 0) {
        printf("SKIP: %s not found (the shared model corpus is absent)\n", models_dir);
        return 77;
    }
    bool need_a64 = !strcmp(mode, "aarch64");
    if (need_a64 && !a64_ready()) {
        printf("SKIP: aarch64-linux-gnu-gcc, its runtime (rebuild after installing it) or qemu-aarch64 missing\n");
        return 77;
    }
    if (!strncmp(mode, "emitc-", 6)) {
        emitc_cc = mode + 6;
        if (!on_path(emitc_cc) || !on_path("make")) {
            printf("SKIP: %s or make not installed\n", emitc_cc);
            return 77;
        }
    }
    if (!mkdtemp(work)) {
        perror("mkdtemp");
        return 1;
    }
    Suite *s = suite_create("targets");
    TCase *tc = tcase_create(mode);
    tcase_set_timeout(tc, 300);
    if (!strcmp(mode, "errors"))
        tcase_add_test(tc, test_errors);
    else if (need_a64)
        tcase_add_test(tc, test_aarch64_models);
    else if (!strcmp(mode, "app")) {
        tcase_add_test(tc, test_app_host);
        tcase_add_test(tc, test_app_aarch64);
    } else if (emitc_cc) {
        tcase_add_test(tc, test_emit_c);
        tcase_add_test(tc, test_emit_c_unpacked);
    }
    else if (!strcmp(mode, "repro"))
        tcase_add_test(tc, test_repro);
    else if (!strcmp(mode, "gc")) {
        tcase_add_test(tc, test_gc);
        tcase_add_test(tc, test_layout);
    } else {
        fprintf(stderr, "unknown mode '%s'\n", mode);
        return 2;
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (!getenv("TFCC_KEEP")) {
        char *rm[] = {"rm", "-rf", work, NULL};
        run(rm);
    }
    return failed ? 1 : 0;
}
