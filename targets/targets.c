/* targets/targets.c - the target table and the toolchain driver.
 *
 * The table (one row per --target): the host (x86_64-linux-gnu on x86-64:
 * the system `cc`, the ISA flags the runtime was built with,
 * TFCC_RUNTIME_CFLAGS, plus -O2), aarch64-linux-gnu (Debian's cross
 * compilers, generic armv8-a by default, the runtime cross-compiled by
 * targets/aarch64-linux-gnu/meson.build) and aarch64-linux-android (no NDK
 * here: only --emit c, whose Makefile takes the NDK's compiler).  Runtime
 * paths are baked in at build time through tfcc_config.h.
 * tgt_build runs the compiler commands (compiles, then a link, `-r` or an
 * archive) with fork/execvp - no shell, so names need no quoting - in the
 * generated folder (cwd = dir, so NAME_weights.S's .incbin finds the .bin
 * by a relative name), with stdout and stderr appended to
 * dir/NAME_build.log.  A failing command becomes a Status error holding the
 * command line and the last 40 lines it printed.
 * Reproducibility: no -g (no paths or temp-folder names in debug info),
 * relative source names, deterministic archives (ar D, and -M scripts),
 * the linker's build-id hashes the contents only.
 * Invariants: nothing here reads the environment but PATH (to tell a missing
 * compiler); the caller's cwd is never changed (only the child's).
 */
#include "targets/targets.h"
#include "tcrt_kernels.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tfcc_config.h"

#if defined(__x86_64__)
#define HOST_TRIPLE "x86_64-linux-gnu"
#define HOST_LLVM "x86_64-pc-linux-gnu"
#elif defined(__aarch64__)
#define HOST_TRIPLE "aarch64-linux-gnu"
#define HOST_LLVM "aarch64-unknown-linux-gnu"
#else
#define HOST_TRIPLE "unknown-linux-gnu"
#define HOST_LLVM "unknown-unknown-linux-gnu"
#endif

static const TgtTarget table[] = {
    {
        .name = HOST_TRIPLE,
        .llvm_triple = HOST_LLVM,
        .default_cpu = NULL,
        .cpu_flag = "-march=",
        .cc = "cc",
        .cxx = "c++",
        .ar = "ar",
        .cflags = TFCC_RUNTIME_CFLAGS " -O2",
        .runtime_libdir = TFCC_RUNTIME_LIBDIR,
        .runtime_include = TFCC_RUNTIME_INCLUDE,
        .exe_wrapper = "",
        .text_order = TFCC_TEXT_ORDER,
#if defined(__x86_64__) && TFCC_HAVE_LIBMVEC
        .vector_math = true,
#endif
    },
#if defined(__x86_64__)
    {
        .name = "aarch64-linux-gnu",
        .llvm_triple = "aarch64-unknown-linux-gnu",
        .default_cpu = "generic",
        .cpu_flag = "-mcpu=",
        .cc = "aarch64-linux-gnu-gcc",
        .cxx = "aarch64-linux-gnu-g++",
        .ar = "aarch64-linux-gnu-ar",
        .cflags = "-O2",
        .runtime_libdir = TFCC_AARCH64_RUNTIME_LIBDIR,
        .runtime_include = TFCC_RUNTIME_INCLUDE,
        .exe_wrapper = "qemu-aarch64 -L /usr/aarch64-linux-gnu",
    },
#endif
    {
        .name = "aarch64-linux-android",
        .llvm_triple = "aarch64-linux-android24",
        .default_cpu = "generic",
        .cpu_flag = "-mcpu=",
        .cc = "aarch64-linux-android24-clang",
        .cxx = "aarch64-linux-android24-clang++",
        .ar = "llvm-ar",
        .cflags = "-O2",
        .runtime_libdir = "",
        .runtime_include = TFCC_RUNTIME_INCLUDE,
        .exe_wrapper = "adb shell",
        .unavailable = "needs the Android NDK (aarch64-linux-android24-clang and its sysroot), which this "
                       "tfcc does not use: --emit c writes sources and a Makefile to build with the NDK "
                       "(make CC=aarch64-linux-android24-clang), and "
                       "--emit obj --backend llvm writes the model's object, which needs no toolchain",
    },
};
#define N_TARGETS ((int)(sizeof table / sizeof table[0]))

const TgtTarget *tgt_host(void) { return &table[0]; }

const char *tgt_text_order(const TgtTarget *t, char *buf, size_t n)
{
    if (!t->text_order || !t->text_order[0])
        return NULL;
    /* the kernels an executable built here runs: the runtime's own choice on
     * this CPU (tfcc links the same libtcrt, with the same runtime_isa cap) */
    int isa = tcrt_kern_isa();
    const char *suffix = isa == TCRT_ISA_AVX512 ? "avx512" : isa == TCRT_ISA_AVX2 ? "avx2" : "portable";
    int len = snprintf(buf, n, "%s.%s", t->text_order, suffix);
    if (len < 0 || (size_t)len >= n || access(buf, R_OK) != 0)
        return NULL;
    return buf;
}

const TgtTarget *tgt_at(int i) { return i >= 0 && i < N_TARGETS ? &table[i] : NULL; }

const TgtTarget *tgt_find(const char *name)
{
    if (!name || !strcmp(name, "host"))
        return tgt_host();
    for (int i = 0; i < N_TARGETS; i++)
        if (!strcmp(table[i].name, name))
            return &table[i];
    return NULL;
}

const char *tgt_cpu(const TgtTarget *t, const char *cpu)
{
    if (cpu && *cpu)
        return cpu;
    if (t->default_cpu)
        return t->default_cpu;
    /* the host: the runtime's -march=X (a static copy, for the lifetime of the program) */
    static char host_cpu[64];
    const char *m = strstr(t->cflags, "-march=");
    if (!m)
        return "x86-64-v3";
    m += 7;
    size_t n = strcspn(m, " \t");
    if (n >= sizeof host_cpu)
        n = sizeof host_cpu - 1;
    memcpy(host_cpu, m, n);
    host_cpu[n] = '\0';
    return host_cpu;
}

/* Whether cmd (a name without '/') is an executable on PATH. */
static bool on_path(const char *cmd)
{
    if (strchr(cmd, '/'))
        return access(cmd, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        char buf[4096];
        if (n > 0 && n < sizeof buf - strlen(cmd) - 2) {
            snprintf(buf, sizeof buf, "%.*s/%s", (int)n, path, cmd);
            if (access(buf, X_OK) == 0)
                return true;
        }
        path += n;
        if (*path == ':')
            path++;
    }
    return false;
}

bool tgt_check(const TgtTarget *t, Status *st)
{
    if (!st_ok(st))
        return false;
    if (t->unavailable)
        return st_errorf(st, ST_ERROR, "target %s: %s", t->name, t->unavailable);
    if (!on_path(t->cc))
        return st_errorf(st, ST_ERROR, "target %s: C compiler '%s' not found (Debian: apt-get install %s)",
                         t->name, t->cc,
                         t == tgt_host() ? "gcc g++" : "gcc-aarch64-linux-gnu g++-aarch64-linux-gnu");
    char lib[4096];
    static const char *const libs[] = {"libtcrt.a", "libtcrt_fast.a"};
    for (int i = 0; i < 2; i++) {
        snprintf(lib, sizeof lib, "%s/%s", t->runtime_libdir, libs[i]);
        if (access(lib, R_OK) != 0)
            return st_errorf(st, ST_ERROR,
                             "target %s: runtime library '%s' missing (it is cross-compiled when tfcc is "
                             "built with the target's compilers installed; rebuild tfcc after installing them)",
                             t->name, lib);
    }
    return true;
}

#define MAX_ARGV 64

typedef struct Cmd {
    char *argv[MAX_ARGV + 1];
    int argc;
    char store[8192];             /* argument strings */
    size_t used;
    bool overflow;
} Cmd;

static void cmd_add(Cmd *c, const char *s)
{
    size_t n = strlen(s) + 1;
    if (c->argc >= MAX_ARGV || c->used + n > sizeof c->store) {
        c->overflow = true;
        return;
    }
    memcpy(c->store + c->used, s, n);
    c->argv[c->argc++] = c->store + c->used;
    c->argv[c->argc] = NULL;
    c->used += n;
}

static void cmd_addf(Cmd *c, const char *a, const char *b)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s%s", a, b);
    cmd_add(c, buf);
}

/* Splits a flag string on spaces. */
static void cmd_add_split(Cmd *c, const char *flags)
{
    const char *p = flags ? flags : "";
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *q = p;
        while (*q && *q != ' ' && *q != '\t')
            q++;
        if (q > p) {
            char buf[512];
            size_t n = (size_t)(q - p) < sizeof buf - 1 ? (size_t)(q - p) : sizeof buf - 1;
            memcpy(buf, p, n);
            buf[n] = '\0';
            cmd_add(c, buf);
        }
        p = q;
    }
}

static void cmd_line(const Cmd *c, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->argc && len + 1 < n; i++) {
        int w = snprintf(buf + len, n - len, "%s%s", i ? " " : "", c->argv[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

/* The last max_lines lines of path from byte offset `from` into out. */
static void log_tail(const char *path, off_t from, int max_lines, char *out, size_t n)
{
    out[0] = '\0';
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    off_t end = lseek(fd, 0, SEEK_END);
    off_t start = end - (off_t)(n - 1);
    if (start < from)
        start = from;
    if (start < 0)
        start = 0;
    if (lseek(fd, start, SEEK_SET) < 0) {
        close(fd);
        return;
    }
    ssize_t got = read(fd, out, n - 1);
    close(fd);
    if (got <= 0)
        return;
    out[got] = '\0';
    /* keep the last max_lines lines */
    int lines = 0;
    for (ssize_t i = got - 1; i >= 0; i--) {
        if (out[i] == '\n' && i != got - 1 && ++lines >= max_lines) {
            memmove(out, out + i + 1, (size_t)(got - i));
            break;
        }
    }
}

/* Runs c in dir with output appended to log_path; true on exit status 0. */
static bool run_cmd_in(const Cmd *c, const char *dir, const char *log_path, const char *stdin_path, Status *st)
{
    char line[8192];
    cmd_line(c, line, sizeof line);
    if (c->overflow)
        return st_errorf(st, ST_ERROR, "command too long: %s", line);
    int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log < 0)
        return st_errorf(st, ST_IO, "cannot write '%s': %s", log_path, strerror(errno));
    off_t from = lseek(log, 0, SEEK_END);
    dprintf(log, "$ %s\n", line);
    pid_t pid = fork();
    if (pid < 0) {
        close(log);
        return st_errorf(st, ST_ERROR, "cannot start '%s': %s", c->argv[0], strerror(errno));
    }
    if (pid == 0) {
        if (chdir(dir) != 0) {
            dprintf(log, "cannot enter '%s': %s\n", dir, strerror(errno));
            _exit(126);
        }
        int devnull = open(stdin_path ? stdin_path : "/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(log, 1);
        dup2(log, 2);
        execvp(c->argv[0], c->argv);
        dprintf(log, "cannot run '%s': %s\n", c->argv[0], strerror(errno));
        _exit(127);
    }
    close(log);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return st_errorf(st, ST_ERROR, "waiting for '%s': %s", c->argv[0], strerror(errno));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return true;
    char tail[3000];
    log_tail(log_path, from, 40, tail, sizeof tail);
    if (WIFEXITED(status))
        return st_errorf(st, ST_ERROR, "C compiler failed (exit %d): %s\n%s", WEXITSTATUS(status),
                         line, tail);
    return st_errorf(st, ST_ERROR, "C compiler killed by signal %d: %s\n%s",
                     WIFSIGNALED(status) ? WTERMSIG(status) : 0, line, tail);
}

static bool run_cmd(const Cmd *c, const char *dir, const char *log_path, Status *st)
{
    return run_cmd_in(c, dir, log_path, NULL, st);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Adds the C flags of j: t's flags with its ISA flag replaced by --cpu. */
static void add_cflags(Cmd *c, const TgtJob *j)
{
    const TgtTarget *t = j->t;
    if (!j->cpu || !*j->cpu) {
        cmd_add_split(c, t->cflags);
        if (t->default_cpu)
            cmd_addf(c, t->cpu_flag, t->default_cpu);
        return;
    }
    /* keep every flag but -march=/-mcpu=/-mtune=, then the requested cpu */
    Cmd tmp = {.argc = 0};
    cmd_add_split(&tmp, t->cflags);
    for (int i = 0; i < tmp.argc; i++)
        if (strncmp(tmp.argv[i], "-march=", 7) && strncmp(tmp.argv[i], "-mcpu=", 6) &&
            strncmp(tmp.argv[i], "-mtune=", 7))
            cmd_add(c, tmp.argv[i]);
    cmd_addf(c, t->cpu_flag, j->cpu);
}

/* out_path made absolute (relative to the caller's cwd). */
static bool abs_path(const char *path, char *buf, size_t n, Status *st)
{
    if (path[0] == '/') {
        if (snprintf(buf, n, "%s", path) >= (int)n)
            return st_errorf(st, ST_IO, "output path too long: '%s'", path);
        return true;
    }
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        return st_errorf(st, ST_IO, "cannot get the current directory: %s", strerror(errno));
    int w = snprintf(buf, n, "%s/%s", cwd, path);
    if (w < 0 || (size_t)w >= n)
        return st_errorf(st, ST_IO, "output path too long: '%s'", path);
    return true;
}

/* Compiles one unit of j: NAME<suffix><ext> -> NAME<suffix>.o in j->dir. */
/* vec: with the target's vector math (TgtTarget.vector_math; the model's
 * code of an executable tfcc links, so that -lmvec is on its link). */
static bool compile_unit(const TgtJob *j, const char *suffix, const char *ext, bool pic, bool vec,
                         const char *log, Status *st)
{
    char src[600], obj[600];
    snprintf(src, sizeof src, "%s%s%s", j->name, suffix, ext);
    snprintf(obj, sizeof obj, "%s%s.o", j->name, suffix);
    Cmd c = {.argc = 0};
    cmd_add(&c, j->t->cc);
    if (strcmp(ext, ".S")) {
        cmd_add(&c, "-std=c11");
        add_cflags(&c, j);
        cmd_addf(&c, "-I", j->t->runtime_include);
        if (vec) {
            cmd_add(&c, "-fopenmp-simd");
            cmd_add(&c, "-DTFCC_VECTOR_MATH");
        }
    }
    if (pic)
        cmd_add(&c, "-fPIC");
    cmd_add(&c, "-c");
    cmd_add(&c, src);
    cmd_add(&c, "-o");
    cmd_add(&c, obj);
    return run_cmd(&c, j->dir, log, st);
}

/* Adds the model's objects (generated code and weights, or the LLVM object). */
static void add_model_objs(Cmd *c, const TgtJob *j)
{
    char buf[600];
    if (j->model_obj) {
        cmd_add(c, j->model_obj);
        return;
    }
    snprintf(buf, sizeof buf, "%s.o", j->name);
    cmd_add(c, buf);
    snprintf(buf, sizeof buf, "%s_weights.o", j->name);
    cmd_add(c, buf);
}

/* Copies src to dst (whole file, mode 0644). */
static bool copy_file(const char *src, const char *dst, Status *st)
{
    int in = open(src, O_RDONLY);
    if (in < 0)
        return st_errorf(st, ST_IO, "cannot read '%s': %s", src, strerror(errno));
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0) {
        close(in);
        return st_errorf(st, ST_IO, "cannot write '%s': %s", dst, strerror(errno));
    }
    char buf[1 << 16];
    bool ok = true;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            ok = st_errorf(st, ST_IO, "cannot read '%s': %s", src, strerror(errno));
            break;
        }
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                ok = st_errorf(st, ST_IO, "cannot write '%s': %s", dst, strerror(errno));
                break;
            }
            done += w;
        }
        if (!ok)
            break;
    }
    close(in);
    if (close(out) != 0 && ok)
        ok = st_errorf(st, ST_IO, "cannot write '%s': %s", dst, strerror(errno));
    return ok;
}

bool tgt_build(const TgtJob *j, TgtEmit kind, const char *out_path, TgtTimes *times, Status *st)
{
    if (!st_ok(st))
        return false;
    if (!j || !j->t || !j->dir || !j->name || !out_path)
        return st_errorf(st, ST_ERROR, "tgt_build: missing target, folder, name or output");
    /* --backend llvm --emit obj: the LLVM object already holds code and
     * weights; it is the artifact, no toolchain is needed (so this works for
     * a target whose toolchain is unavailable, e.g. Android without an NDK). */
    if (kind == TGT_OBJ && j->model_obj) {
        char src[4096];
        if (snprintf(src, sizeof src, "%s/%s", j->dir, j->model_obj) >= (int)sizeof src)
            return st_errorf(st, ST_IO, "folder path too long: '%s'", j->dir);
        double t_copy = now_seconds();
        bool copied = copy_file(src, out_path, st);
        if (times)
            times->cc_seconds = now_seconds() - t_copy;
        return copied;
    }
    if (j->t->unavailable)
        return st_errorf(st, ST_ERROR, "target %s: %s", j->t->name, j->t->unavailable);
    double t0 = now_seconds();
    const TgtTarget *t = j->t;
    char out[4096];
    if (!abs_path(out_path, out, sizeof out, st))
        return false;
    char log_path[4096];
    int n = snprintf(log_path, sizeof log_path, "%s/%s_build.log", j->dir, j->name);
    if (n < 0 || (size_t)n >= sizeof log_path)
        return st_errorf(st, ST_IO, "folder path too long: '%s'", j->dir);
    /* A fresh log for this build. */
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return st_errorf(st, ST_IO, "cannot write '%s': %s", log_path, strerror(errno));
    close(fd);

    bool pic = kind != TGT_EXE;
    bool ok = true;
    /* vector math only where tfcc links: --emit lib|obj leave the link (and
     * -lmvec) to the app, so their code calls libm as before; an LLVM object
     * (model_obj) was made with CgLlvmTarget.vector_math already, and only
     * the link needs -lmvec */
    bool vec_link = kind == TGT_EXE && t->vector_math, vec = vec_link && !j->model_obj;
    if (!j->model_obj)
        ok = compile_unit(j, "", ".c", pic, vec, log_path, st) &&
             compile_unit(j, "_weights", ".S", pic, false, log_path, st);
    if (ok && kind == TGT_EXE)
        ok = compile_unit(j, "_main", ".c", pic, false, log_path, st);
    char mpi_lib[4096];
    snprintf(mpi_lib, sizeof mpi_lib, "%s/libtcrt_mpi.a", t->runtime_libdir);
    if (ok && kind == TGT_EXE && j->mpi && j->static_link)
        ok = st_errorf(st, ST_ERROR, "an executable that links MPI cannot be linked statically");
    if (ok && kind == TGT_EXE && j->mpi && access(mpi_lib, R_OK) != 0)
        ok = st_errorf(st, ST_ERROR,
                       "the graph needs MPI (edges between --cluster tasks, or --data-parallel) but this "
                       "tfcc was built without MPI (%s missing; install openmpi-bin libopenmpi-dev and "
                       "reconfigure)",
                       mpi_lib);
    if (ok && kind == TGT_EXE) {
        Cmd c = {.argc = 0};
        if (j->mpi) { /* mpicc adds MPI's link flags around the target's cc (docs/distributed.md) */
            cmd_add(&c, "env");
            cmd_addf(&c, "OMPI_CC=", t->cc);
            cmd_add(&c, "mpicc");
        } else
            cmd_add(&c, t->cc);
        cmd_add(&c, "-o");
        cmd_add(&c, out);
        add_model_objs(&c, j);
        char o3[600];
        snprintf(o3, sizeof o3, "%s_main.o", j->name);
        cmd_add(&c, o3);
        cmd_addf(&c, "-L", t->runtime_libdir);
        if (j->mpi)
            cmd_add(&c, "-ltcrt_mpi");
        cmd_add(&c, "-ltcrt_fast");
        cmd_add(&c, "-ltcrt");
        cmd_add(&c, "-pthread");
        if (vec_link)
            cmd_add(&c, "-lmvec");
        cmd_add(&c, "-lm");
        /* the runtime is built with a section per function (runtime/meson.build):
         * the linker drops every kernel the model does not call */
        cmd_add(&c, "-Wl,--gc-sections");
        /* no DWARF: a debug build's runtime carries its debug info and source
         * paths; the symbol table stays (nm, backtraces) */
        cmd_add(&c, "-Wl,--strip-debug");
        if (j->static_link)
            cmd_add(&c, "-static");
        /* code layout (docs/targets.md): the functions that runs execute first,
         * together, so that a run maps fewer 64 KiB windows of code; names the
         * model does not link are skipped without a warning */
        char order[1024];
        if (!j->mpi && tgt_text_order(t, order, sizeof order)) {
            cmd_add(&c, "-fuse-ld=lld");
            cmd_addf(&c, "-Wl,--symbol-ordering-file=", order);
            cmd_add(&c, "-Wl,--no-warn-symbol-ordering");
        }
        ok = run_cmd(&c, j->dir, log_path, st);
    } else if (ok && kind == TGT_OBJ) {
        /* one relocatable object: code + weights (cc -r; no build-id, no paths) */
        Cmd c = {.argc = 0};
        cmd_add(&c, t->cc);
        cmd_add(&c, "-r");
        cmd_add(&c, "-nostdlib");
        cmd_add(&c, "-o");
        cmd_add(&c, out);
        add_model_objs(&c, j);
        ok = run_cmd(&c, j->dir, log_path, st);
    } else if (ok && kind == TGT_LIB) {
        /* libNAME.a: the model's objects, then every member of the runtime's
         * archives, by an ar -M script (archive made in dir: MRI names are
         * not quoted), then copied to out. */
        char mri[4096], lib[700];
        snprintf(mri, sizeof mri, "%s/%s_lib.mri", j->dir, j->name);
        snprintf(lib, sizeof lib, "lib%s.a", j->name);
        FILE *f = fopen(mri, "w");
        if (!f)
            return st_errorf(st, ST_IO, "cannot write '%s': %s", mri, strerror(errno));
        fprintf(f, "CREATE %s\n", lib);
        if (j->model_obj)
            fprintf(f, "ADDMOD %s\n", j->model_obj);
        else
            fprintf(f, "ADDMOD %s.o\nADDMOD %s_weights.o\n", j->name, j->name);
        fprintf(f, "ADDLIB %s/libtcrt.a\nADDLIB %s/libtcrt_fast.a\nSAVE\nEND\n", t->runtime_libdir,
                t->runtime_libdir);
        if (fclose(f) != 0)
            return st_errorf(st, ST_IO, "cannot write '%s'", mri);
        char lib_path[4096];
        snprintf(lib_path, sizeof lib_path, "%s/%s", j->dir, lib);
        unlink(lib_path);
        Cmd c = {.argc = 0};
        cmd_add(&c, t->ar);
        cmd_add(&c, "-M");
        ok = run_cmd_in(&c, j->dir, log_path, mri, st) && copy_file(lib_path, out, st);
    }
    if (times)
        times->cc_seconds = now_seconds() - t0;
    return ok;
}

bool tgt_build_exe(const TgtTarget *t, const char *dir, const char *name, const char *exe_path,
                   TgtTimes *times, Status *st)
{
    TgtJob j = {.t = t, .dir = dir, .name = name};
    return tgt_build(&j, TGT_EXE, exe_path, times, st);
}

bool tgt_copy_headers(const TgtJob *j, const char *out_dir, Status *st)
{
    if (!st_ok(st))
        return false;
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/%s.h", j->dir, j->name);
    if (snprintf(dst, sizeof dst, "%s/%s.h", out_dir, j->name) >= (int)sizeof dst)
        return st_errorf(st, ST_IO, "folder path too long: '%s'", out_dir);
    if (!copy_file(src, dst, st))
        return false;
    snprintf(src, sizeof src, "%s/tcrt.h", j->t->runtime_include);
    snprintf(dst, sizeof dst, "%s/tcrt.h", out_dir);
    return copy_file(src, dst, st);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

#define MAX_RT_FILES 128

/* Runtime sources that --emit c leaves out besides the x86 micro-kernels:
 * mpi.c needs MPI (built only into libtcrt_mpi, for --cluster executables),
 * and the folder has no cluster support. */
static const char *const emitc_skip[] = {"mpi.c", NULL};

/* The file names in dir ending in one of exts (sorted; x86 micro-kernels,
 * "_avx" in the name, and emitc_skip left out).  Names are malloc'ed into
 * names[]. */
static int list_files(const char *dir, const char *const *exts, char **names, int max, Status *st)
{
    DIR *d = opendir(dir);
    if (!d) {
        st_errorf(st, ST_IO, "cannot read the runtime sources '%s': %s", dir, strerror(errno));
        return -1;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t len = strlen(e->d_name);
        bool want = false;
        for (int k = 0; exts[k]; k++) {
            size_t el = strlen(exts[k]);
            want |= len > el && !strcmp(e->d_name + len - el, exts[k]);
        }
        for (int k = 0; emitc_skip[k]; k++)
            want &= strcmp(e->d_name, emitc_skip[k]) != 0;
        if (!want || strstr(e->d_name, "_avx"))
            continue;
        names[n] = strdup(e->d_name);
        if (!names[n]) {
            st_errorf(st, ST_NOMEM, "out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    return st_ok(st) ? n : -1;
}

static bool mkdir_one(const char *path, Status *st)
{
    if (mkdir(path, 0777) && errno != EEXIST)
        return st_errorf(st, ST_IO, "%s: cannot create directory: %s", path, strerror(errno));
    return true;
}

/* Copies runtime/<sub> (its .c and .h files) into out/runtime/<sub>;
 * appends the .c names (relative to out) to csrc.  The C++ sources
 * (kernels/fast_eigen.cc) stay behind: kernels/fast_gemm.c is their portable
 * C twin (same symbols), so the folder is C only. */
static bool copy_runtime_dir(const char *rt, const char *sub, const char *out, FILE *csrc, Status *st)
{
    static const char *const exts[] = {".c", ".h", NULL};
    char src_dir[4096], dst_dir[4096], a[4600], b[4600];
    snprintf(src_dir, sizeof src_dir, "%s%s%s", rt, *sub ? "/" : "", sub);
    snprintf(dst_dir, sizeof dst_dir, "%s/runtime%s%s", out, *sub ? "/" : "", sub);
    if (!mkdir_one(dst_dir, st))
        return false;
    char *names[MAX_RT_FILES];
    int n = list_files(src_dir, exts, names, MAX_RT_FILES, st);
    if (n < 0)
        return false;
    bool ok = true;
    for (int i = 0; i < n; i++) {
        snprintf(a, sizeof a, "%s/%s", src_dir, names[i]);
        snprintf(b, sizeof b, "%s/%s", dst_dir, names[i]);
        ok = ok && copy_file(a, b, st);
        size_t len = strlen(names[i]);
        if (len > 2 && !strcmp(names[i] + len - 2, ".c"))
            fprintf(csrc, " \\\n    runtime%s%s/%s", *sub ? "/" : "", sub, names[i]);
        free(names[i]);
    }
    return ok;
}

bool tgt_write_c_project(const TgtJob *j, const char *out, Status *st)
{
    if (!st_ok(st))
        return false;
    if (j->model_obj)
        return st_errorf(st, ST_ERROR, "--emit c needs the C backend (--backend c)");
    const TgtTarget *t = j->t;
    static const char *const gen[] = {".c", ".h", "_main.c", "_weights.S", "_weights.bin"};
    char a[4600], b[4600];
    for (int i = 0; i < 5; i++) {
        snprintf(a, sizeof a, "%s/%s%s", j->dir, j->name, gen[i]);
        snprintf(b, sizeof b, "%s/%s%s", out, j->name, gen[i]);
        if (!copy_file(a, b, st))
            return false;
    }
    /* runtime sources: the parent of runtime/include */
    char rt[4096];
    snprintf(rt, sizeof rt, "%s/..", t->runtime_include);
    char rt_out[4600];
    snprintf(rt_out, sizeof rt_out, "%s/runtime", out);
    if (!mkdir_one(rt_out, st))
        return false;
    char *csrc = NULL;
    size_t csz = 0;
    FILE *cf = open_memstream(&csrc, &csz);
    bool ok = cf != NULL;
    if (!ok)
        st_errorf(st, ST_NOMEM, "out of memory");
    ok = ok && copy_runtime_dir(rt, "", out, cf, st) && copy_runtime_dir(rt, "include", out, cf, st) &&
         copy_runtime_dir(rt, "kernels", out, cf, st);
    if (cf)
        fclose(cf);
    if (ok) {
        snprintf(a, sizeof a, "%s/Makefile", out);
        FILE *f = fopen(a, "w");
        if (!f) {
            ok = st_errorf(st, ST_IO, "cannot write '%s': %s", a, strerror(errno));
        } else {
            const char *nm = j->name;
            Cmd fl = {.argc = 0};
            add_cflags(&fl, j);
            /* ARCH: the target's ISA flags (kept when CFLAGS is overridden), CFLAGS: -O */
            char arch[1024] = "", opt[256] = "";
            for (int i = 0; i < fl.argc; i++) {
                char *dst = strncmp(fl.argv[i], "-O", 2) ? arch : opt;
                size_t cap = dst == arch ? sizeof arch : sizeof opt, len = strlen(dst);
                snprintf(dst + len, cap - len, "%s%s", len ? " " : "", fl.argv[i]);
            }
            fprintf(
                f,
                "# Generated by tfcc - DO NOT EDIT\n"
                "# %s for %s: the generated C11 code (%s.c, %s.h), its weights\n"
                "# (%s_weights.S: .incbin of %s_weights.bin, GNU as syntax, ELF), and the tfcc\n"
                "# runtime's portable C sources (runtime/, GNU C11; matmul and conv2d on the\n"
                "# portable C GEMM of kernels/fast_gemm.c; no C++ compiler needed).\n"
                "#   make                     the executable %s (%s --help) and lib%s.a\n"
                "#   make CC=clang CFLAGS='-O2 -Wall -Werror'   (ARCH: the target's ISA)\n"
                "# An app includes %s.h and links lib%s.a $(LDLIBS).\n"
                "CC = %s\nAR = %s\n"
                "ARCH = %s -fPIC\nCFLAGS = %s\n"
                "# a section per function and datum; the link keeps the ones the model uses\n"
                "SECTIONS = -ffunction-sections -fdata-sections\n"
                "CPPFLAGS = -Iruntime/include -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L -DTCRT_ISA_MAX=0\n"
                "LDFLAGS = -Wl,--gc-sections\n"
                "LDLIBS = -pthread -lm\n"
                "RT_C =%s\n"
                "OBJS = %s.o %s_weights.o $(RT_C:.c=.o)\n\n"
                "all: %s lib%s.a\n\n"
                "%s: $(OBJS) %s_main.o\n\t$(CC) $(ARCH) $(CFLAGS) $(LDFLAGS) -o $@ $(OBJS) %s_main.o "
                "$(LDLIBS)\n\n"
                "lib%s.a: $(OBJS)\n\trm -f $@\n\t$(AR) rcs $@ $(OBJS)\n\n"
                "%s.o: %s.c %s.h\n\t$(CC) -std=c11 $(CPPFLAGS) $(ARCH) $(CFLAGS) -c %s.c -o $@\n\n"
                "%s_main.o: %s_main.c\n\t$(CC) -std=c11 $(CPPFLAGS) $(ARCH) $(CFLAGS) -c %s_main.c -o $@\n\n"
                "%s_weights.o: %s_weights.S %s_weights.bin\n\t$(CC) $(ARCH) -c %s_weights.S -o $@\n\n"
                "runtime/%%.o: runtime/%%.c\n\t$(CC) -std=gnu11 $(CPPFLAGS) $(ARCH) $(SECTIONS) $(CFLAGS) -c "
                "$< -o $@\n\n"
                "clean:\n\trm -f %s lib%s.a *.o runtime/*.o runtime/kernels/*.o\n\n"
                ".PHONY: all clean\n",
                nm, t->name, nm, nm, nm, nm, nm, nm, nm, nm, nm, t->cc, t->ar, arch, opt[0] ? opt : "-O2",
                csrc ? csrc : "", nm, nm, nm, nm, nm, nm, nm, nm, nm, nm, nm, nm, nm, nm, nm, nm, nm, nm, nm,
                nm, nm);
            if (fclose(f) != 0)
                ok = st_errorf(st, ST_IO, "cannot write '%s'", a);
        }
    }
    free(csrc);
    return ok;
}
