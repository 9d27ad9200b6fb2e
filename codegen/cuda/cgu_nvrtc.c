/* codegen/cuda/cgu_nvrtc.c - NVRTC, loaded at run time, and the --emit cuda
 * artifacts.
 *
 * tfcc neither links nor includes NVRTC: the build needs no CUDA and tfcc
 * runs without it.  The first GPU compile dlopen()s libnvrtc (the names in
 * lib_names, the unversioned and CUDA 13/12 sonames, then
 * /usr/local/cuda/lib64) and looks up the few functions below; the
 * prototypes are declared here by hand, copied in meaning from NVRTC's
 * public header (CUDA's include/nvrtc.h: nvrtcResult is an int-sized enum
 * with NVRTC_SUCCESS = 0, nvrtcProgram an opaque pointer), a stable C ABI
 * since CUDA 7 (nvrtcGetCUBIN since 11.1).  A missing NVRTC is an error only
 * when GPU code is requested.
 * cgu_nvrtc_compile compiles one source for one architecture: "sm_XX"
 * gives a cubin (nvrtcGetCUBIN), "compute_XX" PTX text.  A failed compile's
 * message carries NVRTC's log and, for every line the log points at, the
 * `// kernel NAME: nodes ...` marker above it (cgu_kernel_header), so the
 * error names the graph's nodes.
 * cgu_emit writes NAME.cu, NAME_cuda_plan.h, NAME.ptx (compute_XX of the
 * lowest requested architecture; drivers JIT it for newer GPUs) and one
 * NAME_sm_XX.cubin per architecture into dir.
 */
#include "codegen/cuda/cgu_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef int nvrtcResult;                  /* enum nvrtcResult; 0 = NVRTC_SUCCESS */
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
    bool tried, ok;
    char why[512];
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                                 const char *const *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
} nv;

static const char *const lib_names[] = {
    "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so",
    "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12",
};

static bool load(void)
{
    if (nv.tried)
        return nv.ok;
    nv.tried = true;
    void *h = NULL;
    for (size_t i = 0; i < sizeof lib_names / sizeof lib_names[0] && !h; i++)
        h = dlopen(lib_names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(nv.why, sizeof nv.why,
                 "NVRTC not found (tried libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12 and /usr/local/cuda/lib64; "
                 "install the CUDA toolkit or add its lib64 to LD_LIBRARY_PATH)");
        return false;
    }
#define SYM(field, name)                                                                                     \
    do {                                                                                                     \
        *(void **)&nv.field = dlsym(h, name);                                                                \
        if (!nv.field) {                                                                                     \
            snprintf(nv.why, sizeof nv.why, "NVRTC: symbol %s missing (NVRTC older than CUDA 11.1?)", name); \
            return false;                                                                                    \
        }                                                                                                    \
    } while (0)
    SYM(GetErrorString, "nvrtcGetErrorString");
    SYM(Version, "nvrtcVersion");
    SYM(CreateProgram, "nvrtcCreateProgram");
    SYM(DestroyProgram, "nvrtcDestroyProgram");
    SYM(CompileProgram, "nvrtcCompileProgram");
    SYM(GetPTXSize, "nvrtcGetPTXSize");
    SYM(GetPTX, "nvrtcGetPTX");
    SYM(GetCUBINSize, "nvrtcGetCUBINSize");
    SYM(GetCUBIN, "nvrtcGetCUBIN");
    SYM(GetProgramLogSize, "nvrtcGetProgramLogSize");
    SYM(GetProgramLog, "nvrtcGetProgramLog");
#undef SYM
    nv.ok = true;
    return true;
}

bool cgu_nvrtc_available(char *why, size_t n)
{
    bool ok = load();
    if (!ok && why && n)
        snprintf(why, n, "%s", nv.why);
    return ok;
}

bool cgu_nvrtc_version(int *major, int *minor)
{
    return load() && nv.Version(major, minor) == 0;
}

/* Appends to buf the marker lines of the kernels holding the source lines
 * that log points at ("NAME.cu(LINE): error ..."), each once. */
static void blame_kernels(const char *src, const char *file, const char *log, char *buf, size_t cap)
{
    size_t len = strlen(buf), flen = strlen(file);
    for (const char *p = strstr(log, file); p; p = strstr(p + 1, file)) {
        if (p[flen] != '(')
            continue;
        long line = strtol(p + flen + 1, NULL, 10);
        const char *marker = NULL, *q = src;
        for (long l = 1; l < line && q; l++) { /* find the line, remembering the last marker */
            if (!strncmp(q, "// kernel ", 10))
                marker = q;
            q = strchr(q, '\n');
            q = q ? q + 1 : NULL;
        }
        if (q && !strncmp(q, "// kernel ", 10))
            marker = q;
        if (!marker)
            continue;
        size_t ml = strcspn(marker, "\n");
        char one[600];
        snprintf(one, sizeof one, "; in %.*s", (int)(ml - 3 < 580 ? ml - 3 : 580), marker + 3);
        if (strstr(buf, one + 2))
            continue;
        size_t ol = strlen(one);
        if (len + ol + 1 < cap) {
            memcpy(buf + len, one, ol + 1);
            len += ol;
        }
    }
}

bool cgu_nvrtc_compile(const char *src, const char *file, const char *arch, char **out, size_t *n_out,
                       Status *st)
{
    *out = NULL;
    *n_out = 0;
    if (!load())
        return st_errorf(st, ST_UNSUPPORTED, "%s", nv.why);
    bool cubin = !strncmp(arch, "sm_", 3);
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    const char *opts[] = {archopt, "-std=c++17"};
    nvrtcProgram prog = NULL;
    nvrtcResult r = nv.CreateProgram(&prog, src, file, 0, NULL, NULL);
    if (r != 0)
        return st_errorf(st, ST_ERROR, "NVRTC: cannot create a program for %s: %s", file, nv.GetErrorString(r));
    r = nv.CompileProgram(prog, 2, opts);
    if (r != 0) {
        size_t ls = 0;
        char *log = NULL;
        if (nv.GetProgramLogSize(prog, &ls) == 0 && (log = xx_malloc(ls + 1)) != NULL) {
            if (nv.GetProgramLog(prog, log) != 0)
                log[0] = '\0';
            log[ls] = '\0';
        }
        char where[2048] = "";
        if (log)
            blame_kernels(src, file, log, where, sizeof where);
        st_errorf(st, ST_ERROR, "NVRTC failed to compile %s for %s (%s)%s:\n%s", file, arch, nv.GetErrorString(r),
                  where, log ? log : "(no log)");
        xx_free(log);
        nv.DestroyProgram(&prog);
        return false;
    }
    size_t n = 0;
    r = cubin ? nv.GetCUBINSize(prog, &n) : nv.GetPTXSize(prog, &n);
    char *buf = r == 0 ? xx_malloc(n + 1) : NULL;
    if (r == 0 && !buf) {
        nv.DestroyProgram(&prog);
        return st_errorf(st, ST_NOMEM, "NVRTC: out of memory");
    }
    if (r == 0)
        r = cubin ? nv.GetCUBIN(prog, buf) : nv.GetPTX(prog, buf);
    nv.DestroyProgram(&prog);
    if (r != 0) {
        xx_free(buf);
        return st_errorf(st, ST_ERROR, "NVRTC: cannot read the %s for %s: %s", cubin ? "cubin" : "PTX", arch,
                         nv.GetErrorString(r));
    }
    if (!cubin && n > 0 && buf[n - 1] == '\0')
        n--; /* PTX size counts the terminating NUL */
    buf[n] = '\0';
    *out = buf;
    *n_out = n;
    return true;
}

bool cgu_arch_valid(const char *arch)
{
    if (strncmp(arch, "sm_", 3) || !(arch[3] >= '1' && arch[3] <= '9'))
        return false;
    const char *p = arch + 3;
    while (*p >= '0' && *p <= '9')
        p++;
    return p - arch <= 6 && (*p == '\0' || ((*p == 'a' || *p == 'f') && p[1] == '\0'));
}

/* Reads a whole file (for NVRTC: the .cu just written). */
static char *slurp(const char *path, Status *st)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        st_errorf(st, ST_IO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? xx_malloc((size_t)n + 1) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        xx_free(buf);
        st_errorf(st, ST_IO, "%s: cannot read", path);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static bool write_file(const char *path, const char *data, size_t n, Status *st)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return st_errorf(st, ST_IO, "%s: %s", path, strerror(errno));
    bool ok = fwrite(data, 1, n, f) == n;
    ok = fclose(f) == 0 && ok;
    return ok || st_errorf(st, ST_IO, "%s: write failed", path);
}

static const char *const default_archs[] = {"sm_80", "sm_90"};

bool cgu_emit(const IrGraph *g, const CgOptions *o, const CgCudaOptions *co, const char *dir, Status *st)
{
    const char *const *archs = co && co->n_archs ? co->archs : default_archs;
    int n_archs = co && co->n_archs ? co->n_archs : 2;
    for (int i = 0; i < n_archs; i++)
        if (!cgu_arch_valid(archs[i]))
            return st_errorf(st, ST_ERROR, "--cuda-arch: '%s' is not a GPU architecture like sm_80 or sm_90a",
                             archs[i]);
    char why[512];
    if (!cgu_nvrtc_available(why, sizeof why))
        return st_errorf(st, ST_UNSUPPORTED, "--emit cuda: %s", why);
    char cu_path[4096], plan_path[4096], path[4096], file[256];
    snprintf(file, sizeof file, "%s.cu", o->name);
    snprintf(cu_path, sizeof cu_path, "%s/%s.cu", dir, o->name);
    snprintf(plan_path, sizeof plan_path, "%s/%s_cuda_plan.h", dir, o->name);
    FILE *cu = fopen(cu_path, "wb");
    FILE *plan = cu ? fopen(plan_path, "wb") : NULL;
    if (!cu || !plan) {
        st_errorf(st, ST_IO, "%s: %s", cu ? plan_path : cu_path, strerror(errno));
        if (cu)
            fclose(cu);
        return false;
    }
    bool ok = cgu_emit_source(g, o, cu, plan, NULL, st);
    bool closed = fclose(cu) == 0;
    closed = fclose(plan) == 0 && closed;
    if (ok && !closed)
        ok = st_errorf(st, ST_IO, "%s: write failed", cu_path);
    char *src = ok ? slurp(cu_path, st) : NULL;
    ok = ok && src;
    /* PTX for the lowest architecture (forward-compatible through the driver's JIT) */
    int lowest = 0;
    for (int i = 1; i < n_archs; i++)
        if (atoi(archs[i] + 3) < atoi(archs[lowest] + 3))
            lowest = i;
    for (int i = -1; ok && i < n_archs; i++) {
        char arch[32];
        if (i < 0)
            snprintf(arch, sizeof arch, "compute_%s", archs[lowest] + 3);
        else
            snprintf(arch, sizeof arch, "%s", archs[i]);
        char *bin;
        size_t n;
        ok = cgu_nvrtc_compile(src, file, arch, &bin, &n, st);
        if (!ok)
            break;
        if (i < 0)
            snprintf(path, sizeof path, "%s/%s.ptx", dir, o->name);
        else
            snprintf(path, sizeof path, "%s/%s_%s.cubin", dir, o->name, arch);
        ok = write_file(path, bin, n, st);
        xx_free(bin);
    }
    xx_free(src);
    return ok;
}
