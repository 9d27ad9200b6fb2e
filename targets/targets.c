/* targets/targets.c - the host target and the toolchain driver.
 *
 * tgt_host describes the machine tfcc runs on: the system C compiler `cc`,
 * the ISA flags the runtime was built with (TFCC_RUNTIME_CFLAGS) plus -O2,
 * and where the runtime's headers and static libraries are (paths baked in
 * at build time through tfcc_config.h).
 * tgt_build_exe runs four compiler commands (three compiles, one link) with
 * fork/execvp - no shell, so names need no quoting - in the output folder
 * (cwd = dir, so NAME_weights.S's .incbin finds the .bin), with stdout and
 * stderr appended to dir/NAME_build.log.  A failing command becomes a
 * Status error holding the command line and the last 40 lines it printed.
 * Invariants: nothing here reads the environment; the caller's cwd is never
 * changed (only the child's).
 */
#include "targets/targets.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tfcc_config.h"

#if defined(__x86_64__)
#define HOST_TRIPLE "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define HOST_TRIPLE "aarch64-linux-gnu"
#else
#define HOST_TRIPLE "unknown-linux-gnu"
#endif

static const TgtTarget host = {
    .name = HOST_TRIPLE,
    .cc = "cc",
    .cflags = TFCC_RUNTIME_CFLAGS " -O2",
    .runtime_libdir = TFCC_RUNTIME_LIBDIR,
    .runtime_include = TFCC_RUNTIME_INCLUDE,
};

const TgtTarget *tgt_host(void) { return &host; }

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
static bool run_cmd(const Cmd *c, const char *dir, const char *log_path, Status *st)
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
        int devnull = open("/dev/null", O_RDONLY);
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

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool tgt_build_exe(const TgtTarget *t, const char *dir, const char *name, const char *exe_path,
                   TgtTimes *times, Status *st)
{
    if (!st_ok(st))
        return false;
    if (!t || !dir || !name || !exe_path)
        return st_errorf(st, ST_ERROR, "tgt_build_exe: missing target, folder, name or output");
    double t0 = now_seconds();

    /* The executable path relative to the caller's cwd, made absolute. */
    char exe[4096];
    if (exe_path[0] == '/') {
        snprintf(exe, sizeof exe, "%s", exe_path);
    } else {
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd))
            return st_errorf(st, ST_IO, "cannot get the current directory: %s", strerror(errno));
        int n = snprintf(exe, sizeof exe, "%s/%s", cwd, exe_path);
        if (n < 0 || (size_t)n >= sizeof exe)
            return st_errorf(st, ST_IO, "output path too long: '%s'", exe_path);
    }
    char log_path[4096];
    int n = snprintf(log_path, sizeof log_path, "%s/%s_build.log", dir, name);
    if (n < 0 || (size_t)n >= sizeof log_path)
        return st_errorf(st, ST_IO, "folder path too long: '%s'", dir);
    /* A fresh log for this build. */
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return st_errorf(st, ST_IO, "cannot write '%s': %s", log_path, strerror(errno));
    close(fd);

    char src[600], obj[600];
    static const char *const units[3][2] = {{"", ""}, {"_weights", ".S"}, {"_main", ""}};
    bool ok = true;
    for (int u = 0; u < 3 && ok; u++) {
        Cmd c = {.argc = 0};
        cmd_add(&c, t->cc);
        snprintf(src, sizeof src, "%s%s%s", name, units[u][0], units[u][1][0] ? units[u][1] : ".c");
        snprintf(obj, sizeof obj, "%s%s.o", name, units[u][0]);
        if (u != 1) {
            cmd_add(&c, "-std=c11");
            cmd_add_split(&c, t->cflags);
            cmd_addf(&c, "-I", t->runtime_include);
        }
        cmd_add(&c, "-c");
        cmd_add(&c, src);
        cmd_add(&c, "-o");
        cmd_add(&c, obj);
        ok = run_cmd(&c, dir, log_path, st);
    }
    if (ok) {
        Cmd c = {.argc = 0};
        cmd_add(&c, t->cc);
        cmd_add(&c, "-o");
        cmd_add(&c, exe);
        char o1[600], o2[600], o3[600];
        snprintf(o1, sizeof o1, "%s.o", name);
        snprintf(o2, sizeof o2, "%s_weights.o", name);
        snprintf(o3, sizeof o3, "%s_main.o", name);
        cmd_add(&c, o1);
        cmd_add(&c, o2);
        cmd_add(&c, o3);
        cmd_addf(&c, "-L", t->runtime_libdir);
        cmd_add(&c, "-ltcrt_fast");
        cmd_add(&c, "-ltcrt");
        cmd_add(&c, "-lstdc++");
        cmd_add(&c, "-pthread");
        cmd_add(&c, "-lm");
        ok = run_cmd(&c, dir, log_path, st);
    }
    if (times)
        times->cc_seconds = now_seconds() - t0;
    return ok;
}
