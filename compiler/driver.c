/* compiler/driver.c - the tfcc command line.
 *
 *   tfcc compile MODEL --feed NAME[:DIMS]... --fetch NAME... -o OUT
 *        [--target T]... [--cpu CPU] [--emit exe|lib|obj|c|cuda] [--backend c|llvm]
 *        [--cuda-arch sm_80,sm_90]
 *        [--signature KEY] [--train-op NAME]...
 *   tfcc run MODEL --feed NAME=FILE.npy... --fetch NAME... [--out-dir DIR]
 *   tfcc info MODEL
 *   tfcc ops [--markdown]
 *
 * compile: frontend (any format, detected by content) -> tf_import (prune
 * to the fetches and --train-op targets, lower to primitives; variables'
 * initial values from the checkpoint beside a SavedModel or X.meta, see
 * checkpoint_prefix) -> pass pipeline -> C backend (and,
 * with --backend llvm, the LLVM backend's object instead of NAME.c and its
 * weights) -> per --target, the target's C compiler + runtime (targets/) ->
 * the --emit artifact: a standalone executable (OUT is its path), or in the
 * folder OUT libNAME.a, NAME.o or portable sources, each with NAME.h and
 * tcrt.h.  Several --target: one folder per target, OUT/<target>/.  --emit cuda
 * instead writes the GPU-placed part's CUDA code (codegen/cuda: NAME.cu, its
 * plan, PTX and cubins via NVRTC) into the folder OUT; no host runtime yet.  run does the same
 * into a temporary folder, then executes the result on the given .npy files.
 * Every error is collected in a Status and printed once, prefixed "error: ";
 * the exit code is 0 (ok), 1 (error) or 2 (usage).
 */
#include "compiler/driver.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "compiler/frontend/frontend.h"
#include "compiler/onnx/onnx.h"
#include "compiler/tf/tf.h"
#include "passes/passes.h"
#include "targets/targets.h"
#include "tfcc_config.h"

#define MAX_ITEMS 256
#define MAX_TARGETS 8

typedef struct Options {
    const char *cmd;
    const char *model;
    const char *feeds[MAX_ITEMS];   /* raw --feed values */
    int n_feeds;
    const char *consts[MAX_ITEMS];  /* raw --const NAME=VALUE values */
    int n_consts;
    const char *fetches[MAX_ITEMS];
    int n_fetches;
    const char *train_ops[MAX_ITEMS]; /* --train-op: run-only targets (one training step per run) */
    int n_train_ops;
    const char *signature;          /* --signature KEY */
    const char *config;
    const char *output;
    const char *name;
    const char *keep_dir;
    const char *out_dir;
    const char *dump_after;
    const char *dump_dir;
    const char *disabled[MAX_ITEMS];
    int n_disabled;
    bool verify_each;
    bool stats;
    bool static_link; /* --static: link the executable statically */
    bool markdown;
    const char *targets[MAX_TARGETS]; /* --target, in order (none: the host) */
    int n_targets;
    const char *cpu;                /* --cpu (NULL: each target's default) */
    const char *emit;               /* --emit exe|lib|obj|c (NULL: exe) */
    const char *backend;            /* --backend c|llvm (NULL: c) */
    const char *cuda_archs[MAX_ITEMS]; /* --cuda-arch, split at commas (none: sm_80, sm_90) */
    int n_cuda_archs;
    const char *loss;               /* --loss TENSOR: train (with --optimizer) */
    const char *optimizer;          /* --optimizer SPEC (passes.h pass_grad_parse_optimizer) */
    const char *trainable;          /* --trainable all|NAME[,NAME...] */
    const char *run_args[MAX_ITEMS]; /* extra args passed to the executable (run) */
    int n_run_args;
    bool placement;                 /* --placement (compile: honor device requests; info: report) */
    const char *default_device;     /* --default-device */
    const char *devices[MAX_ITEMS]; /* --devices, split at commas */
    int n_devices;
    PassDeviceMap device_map[MAX_ITEMS]; /* --device-map PATTERN=DEVICE, in order */
    int n_device_map;
    const char *cluster_spec;       /* --cluster JOB=N,... (docs/distributed.md) */
    const char *replicas;           /* --replicas JOB: one training replica per task of JOB */
    const char *transfer_compress;  /* --transfer-compress none|trunc16 */
    bool data_parallel;             /* --data-parallel: SPMD replicas, gradients averaged (MPI) */
    PassCluster cluster;            /* parsed cluster_spec */
    char cluster_default[128];      /* the default device with --cluster: first job's task 0 */
    FILE *info_out;                 /* info --placement: where the report goes */
    char *owned[2 * MAX_ITEMS + 8]; /* strings allocated for the options, freed by drv_main */
    int n_owned;
} Options;

/* Keeps p (malloc'ed) until drv_main returns; false (and frees p) when full. */
static bool own(Options *o, char *p)
{
    if (!p || o->n_owned >= (int)(sizeof o->owned / sizeof o->owned[0])) {
        free(p);
        return false;
    }
    o->owned[o->n_owned++] = p;
    return true;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage(FILE *f)
{
    fprintf(f, "usage:\n"
               "  tfcc compile MODEL --feed NAME[:DIMS]... --fetch NAME... -o EXE [options]\n"
               "  tfcc run MODEL --feed NAME=FILE.npy... --fetch NAME... [--out-dir DIR] [options]\n"
               "  tfcc info MODEL\n"
               "  tfcc ops [--markdown]\n"
               "\n"
               "MODEL: GraphDef (.pb binary or .pbtxt text, detected by content), a TF.js\n"
               "graph model (model.json with its weight shards), a MetaGraphDef (.meta) or a\n"
               "SavedModel (saved_model.pb/.pbtxt).  Tensor names are 'node' or 'node:k'.\n"
               "DIMS fixes unknown dims of a feed: input:0:1x224x224x3.  Without --fetch (and\n"
               "--config), compile takes the feeds and fetches of the model's signature\n"
               "'serving_default' (or its only one); --feed then overrides a signature input.\n"
               "\n"
               "options:\n"
               "  --config FILE       tfcompile config (feeds/fetches) instead of --feed/--fetch\n"
               "  --signature KEY     feeds and fetches of the SignatureDef KEY (MetaGraphDef, SavedModel)\n"
               "  --train-op NAME     also run node NAME (repeatable; e.g. the optimizer's minimize op):\n"
               "                      every run of the result is one training step; variables keep\n"
               "                      their values between runs (docs/training.md)\n"
               "  --const NAME=VALUE  bind a placeholder to a value at compile time (a number,\n"
               "                      a comma-separated list, or FILE.npy): shapes and\n"
               "                      conditions that depend on it are resolved when compiling\n"
               "  --name PREFIX       C prefix of the generated API (default: from -o)\n"
               "  --keep-dir DIR      keep the generated C, header and weights in DIR\n"
               "  --dump-after PASS   write the IR after PASS (or 'all') as text and DOT\n"
               "  --dump-dir DIR      where dumps go (default: dump)\n"
               "  --disable-pass P    skip pass P (fold, cse, dce, layout, fuse, winograd, pack, dwfuse, pair)\n"
               "  --verify-each       run the IR verifier after every pass\n"
               "  --stats             print timings and memory statistics to stderr\n"
               "  --target T          build for T (repeatable; default: the host): x86_64-linux-gnu,\n"
               "                      aarch64-linux-gnu (cross gcc; run with qemu-aarch64 -L\n"
               "                      /usr/aarch64-linux-gnu), aarch64-linux-android (--emit c, or\n"
               "                      --emit obj --backend llvm)\n"
               "  --cpu CPU           CPU for the generated code (x86-64-v3, cortex-a76, ...)\n"
               "  --emit KIND         exe (default; -o is the executable), lib (libNAME.a with the\n"
               "                      runtime), obj (NAME.o), c (portable sources + Makefile); lib, obj\n"
               "                      and c go in the folder -o, with NAME.h and tcrt.h; several\n"
               "                      --target: -o OUT gives OUT/<target>/\n"
               "  --backend B         c (default) or llvm (when tfcc was built with LLVM 19)\n"
               "  --static            link the executable statically (libc and libm included): it\n"
               "                      needs no shared library at run time and starts with a\n"
               "                      smaller footprint (--emit exe; not with MPI)\n"
               "  --emit cuda         with nodes placed on a GPU (--default-device gpu:0,\n"
               "                      --device-map): write their CUDA code into the folder -o:\n"
               "                      NAME.cu, NAME_cuda_plan.h, NAME.ptx, NAME_sm_XX.cubin (needs\n"
               "                      NVRTC at run time; GPU code only, not runnable yet: the host\n"
               "                      runtime is not written; docs/devices.md)\n"
               "  --cuda-arch LIST    GPU architectures for --emit cuda (default sm_80,sm_90)\n"
               "  --out-dir DIR       (run) where fetched tensors are written (default .)\n"
               "  --loss TENSOR       build a training step: gradients of this float scalar with\n"
               "                      respect to the trainable variables, then --optimizer's update\n"
               "                      (the loss is fetched; docs/training.md)\n"
               "  --optimizer SPEC    sgd:lr=X | momentum:lr=X[,momentum=0.9][,nesterov=1] |\n"
               "                      adam[:lr=0.001][,beta1=0.9][,beta2=0.999][,epsilon=1e-8]\n"
               "  --trainable WHAT    with --loss: turn constants into trainable variables\n"
               "                      initialized with their values: 'all' (float constants of\n"
               "                      2+ elements feeding a matmul, conv2d or bias add) or NAME,...\n"
               "  --threads N, --repeat N   (run) passed to the compiled executable\n"
               "  --profile           (run) print each kernel's time (docs/profiling.md)\n"
               "  --flush-denormals   (run) flush subnormal floats to zero (docs/performance.md)\n"
               "  --placement         place nodes on devices (docs/devices.md): honor the model's\n"
               "                      device requests; with info: print each node's device and why\n"
               "  --default-device D  device of nodes without a request (cpu:0, gpu:0, /device:CPU:1)\n"
               "  --device-map P=D    put nodes whose TF name matches glob P on device D (repeatable;\n"
               "                      the last match wins, over the model's request)\n"
               "  --devices D,...     devices of the cluster besides the local CPUs (e.g. gpu:0)\n"
               "                      (any of these four turns placement on)\n"
               "  --cluster J=N,...   tasks of a multi-process MPI run (docs/distributed.md), e.g.\n"
               "                      ps=1,worker=2 (ranks in that order); turns placement on\n"
               "  --replicas JOB      with --cluster and --loss: parameter-server training, one replica\n"
               "                      of the step per task of JOB on its share of the batch, variables\n"
               "                      and updates on the first other job's tasks (docs/distributed.md)\n"
               "  --transfer-compress none|trunc16\n"
               "                      with --cluster: float32 tensors cross tasks as their upper 16\n"
               "                      bits (truncated mantissa; the run reports the largest error)\n"
               "  --data-parallel     with --loss or --train-op: an SPMD executable for mpirun -np N\n"
               "                      (any N): every rank runs the whole step on its own batch,\n"
               "                      gradients and the loss are averaged with MPI_Allreduce\n"
               "                      (docs/distributed.md)\n");
}

/* ---- argument parsing ---------------------------------------------------- */

static bool push(const char **arr, int *n, const char *v, FILE *err, const char *what)
{
    if (*n >= MAX_ITEMS) {
        fprintf(err, "error: too many %s (limit %d)\n", what, MAX_ITEMS);
        return false;
    }
    arr[(*n)++] = v;
    return true;
}

static int parse_args(int argc, char **argv, Options *o, FILE *err)
{
    memset(o, 0, sizeof *o);
    if (argc < 2) {
        usage(err);
        return 2;
    }
    o->cmd = argv[1];
    if (!strcmp(o->cmd, "-h") || !strcmp(o->cmd, "--help") || !strcmp(o->cmd, "help")) {
        usage(stdout);
        return -1;
    }
    if (!strcmp(o->cmd, "--version")) {
        printf("tfcc %s\n", TFCC_VERSION);
        return -1;
    }
    if (strcmp(o->cmd, "compile") && strcmp(o->cmd, "run") && strcmp(o->cmd, "info") &&
        strcmp(o->cmd, "ops")) {
        fprintf(err, "error: unknown command '%s'\n", o->cmd);
        usage(err);
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKE(field)                                                                                \
    do {                                                                                           \
        if (!v) {                                                                                  \
            fprintf(err, "error: %s needs a value\n", a);                                          \
            return 2;                                                                              \
        }                                                                                          \
        o->field = v;                                                                              \
        i++;                                                                                       \
    } while (0)
        if (!strcmp(a, "--feed")) {
            if (!v) {
                fprintf(err, "error: --feed needs a value\n");
                return 2;
            }
            if (!push(o->feeds, &o->n_feeds, v, err, "feeds"))
                return 2;
            i++;
        } else if (!strcmp(a, "--const")) {
            if (!v) {
                fprintf(err, "error: --const needs NAME=VALUE\n");
                return 2;
            }
            if (!push(o->consts, &o->n_consts, v, err, "consts"))
                return 2;
            i++;
        } else if (!strcmp(a, "--fetch")) {
            if (!v) {
                fprintf(err, "error: --fetch needs a value\n");
                return 2;
            }
            /* accept comma separated lists too */
            char *dup = strdup(v);
            if (!own(o, dup))
                return 1;
            for (char *save = NULL, *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
                if (!push(o->fetches, &o->n_fetches, t, err, "fetches"))
                    return 2;
            i++;
        } else if (!strcmp(a, "--train-op")) {
            if (!v) {
                fprintf(err, "error: --train-op needs a node name\n");
                return 2;
            }
            if (!push(o->train_ops, &o->n_train_ops, v, err, "train ops"))
                return 2;
            i++;
        } else if (!strcmp(a, "--signature")) {
            TAKE(signature);
        } else if (!strcmp(a, "--disable-pass")) {
            if (!v) {
                fprintf(err, "error: --disable-pass needs a value\n");
                return 2;
            }
            if (!push(o->disabled, &o->n_disabled, v, err, "disabled passes"))
                return 2;
            i++;
        } else if (!strcmp(a, "--profile") || !strcmp(a, "--flush-denormals")) {
            if (!push(o->run_args, &o->n_run_args, a, err, "args"))
                return 2;
        } else if (!strcmp(a, "--threads") || !strcmp(a, "--repeat")) {
            if (!v) {
                fprintf(err, "error: %s needs a value\n", a);
                return 2;
            }
            if (!push(o->run_args, &o->n_run_args, a, err, "args") ||
                !push(o->run_args, &o->n_run_args, v, err, "args"))
                return 2;
            i++;
        } else if (!strcmp(a, "--target")) {
            if (!v) {
                fprintf(err, "error: --target needs a value\n");
                return 2;
            }
            if (!tgt_find(v)) {
                fprintf(err, "error: unknown target '%s' (known:", v);
                for (int t = 0; tgt_at(t); t++)
                    fprintf(err, " %s", tgt_at(t)->name);
                fprintf(err, ")\n");
                return 2;
            }
            if (o->n_targets >= MAX_TARGETS) {
                fprintf(err, "error: too many --target (limit %d)\n", MAX_TARGETS);
                return 2;
            }
            for (int t = 0; t < o->n_targets; t++)
                if (tgt_find(o->targets[t]) == tgt_find(v)) {
                    fprintf(err, "error: --target %s given twice\n", v);
                    return 2;
                }
            o->targets[o->n_targets++] = v;
            i++;
        } else if (!strcmp(a, "--emit")) {
            TAKE(emit);
            if (strcmp(v, "exe") && strcmp(v, "lib") && strcmp(v, "obj") && strcmp(v, "c") && strcmp(v, "cuda")) {
                fprintf(err, "error: unknown --emit kind '%s' (exe, lib, obj, c or cuda)\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--backend")) {
            TAKE(backend);
            if (strcmp(v, "c") && strcmp(v, "llvm")) {
                fprintf(err, "error: unknown --backend '%s' (c or llvm)\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--cpu"))
            TAKE(cpu);
        else if (!strcmp(a, "--loss"))
            TAKE(loss);
        else if (!strcmp(a, "--trainable"))
            TAKE(trainable);
        else if (!strcmp(a, "--optimizer")) {
            TAKE(optimizer);
            GradOptions go;
            Status ost = ST_INIT;
            if (!pass_grad_parse_optimizer(v, &go, &ost)) {
                fprintf(err, "error: --optimizer: %s\n", ost.msg);
                return 2;
            }
        }
        else if (!strcmp(a, "--config"))
            TAKE(config);
        else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
            TAKE(output);
        else if (!strcmp(a, "--name"))
            TAKE(name);
        else if (!strcmp(a, "--keep-dir"))
            TAKE(keep_dir);
        else if (!strcmp(a, "--out-dir"))
            TAKE(out_dir);
        else if (!strcmp(a, "--dump-after") || !strcmp(a, "--dump-ir-after"))
            TAKE(dump_after);
        else if (!strncmp(a, "--dump-after=", 13))
            o->dump_after = a + 13;
        else if (!strncmp(a, "--dump-ir-after=", 16))
            o->dump_after = a + 16;
        else if (!strcmp(a, "--dump-dir"))
            TAKE(dump_dir);
        else if (!strcmp(a, "--verify-each"))
            o->verify_each = true;
        else if (!strcmp(a, "--stats"))
            o->stats = true;
        else if (!strcmp(a, "--static"))
            o->static_link = true;
        else if (!strcmp(a, "--markdown"))
            o->markdown = true;
        else if (!strcmp(a, "--placement"))
            o->placement = true;
        else if (!strcmp(a, "--default-device"))
            TAKE(default_device);
        else if (!strcmp(a, "--cluster"))
            TAKE(cluster_spec);
        else if (!strcmp(a, "--replicas"))
            TAKE(replicas);
        else if (!strcmp(a, "--transfer-compress"))
            TAKE(transfer_compress);
        else if (!strcmp(a, "--data-parallel"))
            o->data_parallel = true;
        else if (!strcmp(a, "--cuda-arch")) {
            if (!v) {
                fprintf(err, "error: %s needs a value\n", a);
                return 2;
            }
            char *dup = strdup(v);
            if (!own(o, dup))
                return 1;
            for (char *save = NULL, *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (!cgu_arch_valid(t)) {
                    fprintf(err, "error: --cuda-arch '%s': not a GPU architecture like sm_80 or sm_90a\n", t);
                    return 2;
                }
                if (!push(o->cuda_archs, &o->n_cuda_archs, t, err, "--cuda-arch"))
                    return 2;
            }
            i++;
        }
        else if (!strcmp(a, "--devices") || !strcmp(a, "--device-map")) {
            if (!v) {
                fprintf(err, "error: %s needs a value\n", a);
                return 2;
            }
            char *dup = strdup(v);
            if (!own(o, dup))
                return 1;
            if (!strcmp(a, "--devices")) {
                for (char *save = NULL, *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save))
                    if (!push(o->devices, &o->n_devices, t, err, "devices"))
                        return 2;
            } else {
                char *eq = strrchr(dup, '=');
                if (!eq || eq == dup || !eq[1]) {
                    fprintf(err, "error: --device-map '%s': expected PATTERN=DEVICE\n", v);
                    return 2;
                }
                if (o->n_device_map >= MAX_ITEMS) {
                    fprintf(err, "error: too many --device-map (limit %d)\n", MAX_ITEMS);
                    return 2;
                }
                *eq = '\0';
                o->device_map[o->n_device_map++] = (PassDeviceMap){dup, eq + 1};
            }
            i++;
        }
        else if (a[0] == '-' && a[1]) {
            fprintf(err, "error: unknown option '%s'\n", a);
            return 2;
        } else if (!o->model)
            o->model = a;
        else {
            fprintf(err, "error: unexpected argument '%s'\n", a);
            return 2;
        }
#undef TAKE
    }
    if (strcmp(o->cmd, "ops") && !o->model) {
        fprintf(err, "error: %s needs a MODEL file\n", o->cmd);
        return 2;
    }
    if ((o->optimizer || o->trainable) && !o->loss) {
        fprintf(err, "error: %s needs --loss TENSOR\n", o->optimizer ? "--optimizer" : "--trainable");
        return 2;
    }
    if (o->transfer_compress && strcmp(o->transfer_compress, "none") && strcmp(o->transfer_compress, "trunc16")) {
        fprintf(err, "error: --transfer-compress '%s': expected none or trunc16\n", o->transfer_compress);
        return 2;
    }
    if (o->transfer_compress && !o->cluster_spec) {
        fprintf(err, "error: --transfer-compress needs --cluster (it compresses transfers between tasks)\n");
        return 2;
    }
    if (o->replicas && (!o->cluster_spec || !o->loss)) {
        fprintf(err, "error: --replicas needs --cluster and --loss (tfcc builds the replicated step)\n");
        return 2;
    }
    if (o->loss && !o->optimizer) {
        fprintf(err, "error: --loss needs --optimizer (sgd:lr=X, momentum:lr=X or adam)\n");
        return 2;
    }
    if (o->data_parallel) { /* docs/distributed.md "Data-parallel training" */
        const char *bad =
            !o->loss && !o->n_train_ops
                ? "--data-parallel needs --loss/--optimizer (tfcc builds the gradients it averages) or --train-op "
                  "(the graph's own optimizer ops, whose gradient inputs it averages)"
            : o->cluster_spec ? "--data-parallel cannot be combined with --cluster (every rank runs the whole graph)"
            : o->emit && !strcmp(o->emit, "cuda") ? "--data-parallel: --emit cuda is not supported"
                                                  : NULL;
        if (bad) {
            fprintf(err, "error: %s\n", bad);
            return 2;
        }
    }
    if (o->static_link && o->emit && strcmp(o->emit, "exe")) {
        fprintf(err, "error: --static links an executable: it needs --emit exe, not --emit %s\n", o->emit);
        return 2;
    }
    if (!strcmp(o->cmd, "compile") && !o->output) {
        fprintf(err, "error: compile needs -o OUTPUT\n");
        return 2;
    }
    return 0;
}

/* "1x224x224x3" -> shape; "scalar" -> rank 0. */
static bool parse_dims(const char *s, IrShape *sh)
{
    memset(sh, 0, sizeof *sh);
    if (!strcmp(s, "scalar"))
        return true;
    const char *p = s;
    while (*p) {
        if (!isdigit((unsigned char)*p) || sh->rank >= IR_MAX_RANK)
            return false;
        errno = 0;
        char *end;
        long long d = strtoll(p, &end, 10);
        if (errno || d < 0 || d > IR_MAX_ELEMENTS)
            return false;
        sh->dims[sh->rank++] = d;
        p = end;
        if (*p == 'x') {
            p++;
            if (!*p)
                return false;
        } else if (*p)
            return false;
    }
    return sh->rank > 0;
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* --feed for compile: NAME, NAME:k, NAME:DIMS, NAME:k:DIMS. DIMS has an 'x'
 * (1x224x224x3) or is 'scalar'; a rank-1 shape needs the explicit index
 * (input:0:5). */
static bool parse_compile_feed(const char *v, TfFeedSpec *f, char **name_out, Status *st)
{
    memset(f, 0, sizeof *f);
    char *name = strdup(v);
    if (!name)
        return st_errorf(st, ST_NOMEM, "out of memory");
    *name_out = name;
    char *c = strrchr(name, ':');
    if (c) {
        const char *suffix = c + 1;
        bool has_index_before = memchr(name, ':', (size_t)(c - name)) != NULL;
        bool looks_dims = strchr(suffix, 'x') != NULL || !strcmp(suffix, "scalar");
        if (looks_dims || (has_index_before && all_digits(suffix))) {
            if (!parse_dims(suffix, &f->shape))
                return st_errorf(st, ST_ERROR, "--feed %s: bad dims '%s' (expected e.g. 1x224x224x3)", v,
                                 suffix);
            f->has_shape = true;
            *c = 0;
        }
    }
    f->name = name;
    return true;
}

/* ---- temp dirs and processes --------------------------------------------- */

static bool mkdir_p(const char *path, Status *st)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return st_errorf(st, ST_IO, "%s: path too long", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0777) && errno != EEXIST)
                return st_errorf(st, ST_IO, "%s: cannot create directory: %s", buf, strerror(errno));
            *p = '/';
        }
    }
    if (mkdir(buf, 0777) && errno != EEXIST)
        return st_errorf(st, ST_IO, "%s: cannot create directory: %s", buf, strerror(errno));
    return true;
}

static void rm_rf(const char *dir)
{
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", "--", dir, (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

/* Model prefix: from --name or the output's base name, made a C identifier. */
static void model_name(const Options *o, char *buf, size_t n)
{
    const char *src = o->name;
    if (!src && o->output) {
        const char *b = strrchr(o->output, '/');
        src = b ? b + 1 : o->output;
    }
    if (!src || !*src)
        src = "model";
    cg_c_ident(src, buf, n);
    if (strlen(buf) > 40) /* keep generated identifiers short */
        buf[40] = 0;
    /* The name is also the model's C type: not a keyword or a standard type. */
    static const char *const reserved[] = {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
        "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
        "volatile", "while", "bool", "true", "false", "main", "size_t", "int8_t", "int16_t", "int32_t",
        "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "FILE", "NULL", "errno", "assert"};
    bool is_reserved = false;
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        is_reserved |= strcmp(buf, reserved[i]) == 0;
    if (!buf[0] || isdigit((unsigned char)buf[0]) || buf[0] == '_' || is_reserved) {
        char tmp[128];
        snprintf(tmp, sizeof tmp, "m_%s", buf);
        snprintf(buf, n, "%s", tmp);
    }
}

/* ---- compile ------------------------------------------------------------- */

typedef struct Stats {
    double load_ms, import_ms, passes_ms, codegen_ms, cc_ms;
    int tf_nodes, ir_nodes;
} Stats;

static void print_stats(const Stats *s, const IrGraph *g, FILE *err)
{
    fprintf(err,
            "stats: load_ms=%.1f import_ms=%.1f passes_ms=%.1f codegen_ms=%.1f cc_ms=%.1f tf_nodes=%d "
            "ir_nodes=%d arena_bytes=%lld intermediates_bytes=%lld weights_bytes=%lld\n",
            s->load_ms, s->import_ms, s->passes_ms, s->codegen_ms, s->cc_ms, s->tf_nodes, s->ir_nodes,
            (long long)g->arena_bytes, (long long)g->unplanned_bytes, (long long)g->weights_bytes);
}

/* Builds o->emit for each target from the generated files in gen_dir (see
 * the file comment for where they go). */
static bool build_artifacts(const Options *o, const IrGraph *g, const char *gen_dir, const char *out_path,
                            const char *name, Stats *stats, Status *st)
{
    const char *emit = o->emit ? o->emit : "exe";
    bool is_llvm = o->backend && !strcmp(o->backend, "llvm");
    bool is_exe = !strcmp(emit, "exe"), is_c = !strcmp(emit, "c");
    int n_targets = o->n_targets ? o->n_targets : 1;
    if (is_llvm && is_c)
        return st_errorf(st, ST_ERROR, "--emit c writes the C backend's sources: it cannot use --backend llvm");
    for (int i = 0; i < n_targets && st_ok(st); i++) {
        const TgtTarget *t = o->n_targets ? tgt_find(o->targets[i]) : tgt_host();
        bool llvm_obj = is_llvm && !strcmp(emit, "obj"); /* needs no toolchain */
        if (!is_c && !llvm_obj && t != tgt_host() && !tgt_check(t, st))
            return false;
        /* where: -o itself (one target), or -o/<target>/ */
        char dir[PATH_MAX], path[PATH_MAX];
        if (n_targets > 1) {
            if (snprintf(dir, sizeof dir, "%s/%s", out_path, t->name) >= (int)sizeof dir)
                return st_errorf(st, ST_IO, "%s: path too long", out_path);
        } else
            snprintf(dir, sizeof dir, "%s", out_path);
        if ((!is_exe || n_targets > 1) && !mkdir_p(dir, st))
            return false;
        TgtJob j = {.t = t, .cpu = o->cpu, .dir = gen_dir, .name = name};
        j.mpi = (o->cluster_spec && cgc_needs_mpi(g, &o->cluster)) || o->data_parallel;
        j.static_link = o->static_link;
        if (j.mpi && j.static_link)
            return st_errorf(st, ST_ERROR,
                             "--static: an executable that links MPI (%s) cannot be static; drop --static",
                             o->data_parallel ? "--data-parallel" : "--cluster with edges between tasks");
        if (j.mpi && (!is_exe || is_llvm || t != tgt_host()))
            return st_errorf(st, ST_ERROR,
                             "%s: only the host executable "
                             "(--emit exe, --backend c, no --target) links MPI so far",
                             o->data_parallel ? "--data-parallel" : "--cluster with edges between tasks");
        char obj[PATH_MAX], obj_name[160];
        if (is_llvm) {
            /* libmvec where tfcc links the executable, as the C backend's
             * code (targets.c: -lmvec); --emit lib|obj keep libm calls */
            CgLlvmTarget lt = {.triple = t->llvm_triple,
                               .cpu = tgt_cpu(t, o->cpu),
                               .features = NULL,
                               .vector_math = is_exe && t->vector_math};
            CgOptions co = {.name = name, .source_file = o->model};
            snprintf(obj_name, sizeof obj_name, "%s_llvm.o", name);
            snprintf(obj, sizeof obj, "%s/%s", gen_dir, obj_name);
            double t0 = now_ms();
            if (!cgl_emit_object(g, &co, &lt, obj, st))
                return false;
            stats->codegen_ms += now_ms() - t0;
            j.model_obj = obj_name;
        }
        TgtTimes times = {0};
        bool ok;
        if (is_c) {
            ok = tgt_write_c_project(&j, dir, st);
        } else if (is_exe) {
            if (n_targets > 1) {
                if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
                    return st_errorf(st, ST_IO, "%s: path too long", dir);
            } else
                snprintf(path, sizeof path, "%s", out_path);
            ok = tgt_build(&j, TGT_EXE, path, &times, st);
        } else {
            bool is_lib = !strcmp(emit, "lib");
            if (snprintf(path, sizeof path, is_lib ? "%s/lib%s.a" : "%s/%s.o", dir, name) >= (int)sizeof path)
                return st_errorf(st, ST_IO, "%s: path too long", dir);
            ok = tgt_build(&j, is_lib ? TGT_LIB : TGT_OBJ, path, &times, st) && tgt_copy_headers(&j, dir, st);
        }
        stats->cc_ms += times.cc_seconds * 1e3;
        if (!ok)
            return false;
    }
    return st_ok(st);
}

/* "x" and "x:0" name the same tensor. */
static bool same_tensor(const char *a, const char *b);

/* --loss: the fetches get the loss (when not already there). */
static bool add_loss_fetch(const Options *o, const char **fetches, int *n_fetches, Status *st)
{
    if (!o->loss)
        return true;
    for (int i = 0; i < *n_fetches; i++)
        if (same_tensor(fetches[i], o->loss))
            return true;
    if (*n_fetches >= MAX_ITEMS)
        return st_errorf(st, ST_ERROR, "too many fetches");
    fetches[(*n_fetches)++] = o->loss;
    return true;
}

/* --loss/--optimizer/--trainable: the training step (passes/optim.c), added
 * to the imported graph before the pipeline. */
static bool build_training(const Options *o, IrGraph *g, Status *st)
{
    if (o->trainable && !pass_grad_trainable(g, o->trainable, st))
        return false;
    int li = -1;
    for (int i = 0; i < g->n_fetches && li < 0; i++)
        if (same_tensor(g->fetches[i].name, o->loss))
            li = i;
    if (li >= 0 && o->replicas && !pass_replicate(g, &o->cluster, o->replicas, li, st))
        return false;
    IrValue loss = li >= 0 ? g->fetches[li].value : (IrValue){NULL, 0};
    if (!loss.node)
        return st_errorf(st, ST_ERROR, "--loss %s: not a fetched tensor of the model", o->loss);
    GradOptions go;
    if (!pass_grad_parse_optimizer(o->optimizer, &go, st))
        return false;
    go.loss_name = o->loss;
    go.data_parallel = o->data_parallel;
    return pass_grad_build(g, loss, &go, st);
}

/* --data-parallel with --train-op: the import averaged the optimizer ops'
 * gradient inputs (TF_IMPORT_DATA_PARALLEL); the fetched float scalars (the
 * loss, metrics) are averaged too, so rank 0 reports the global values.  A
 * graph without an optimizer op to average is an error. */
static bool average_fetches(const Options *o, IrGraph *g, Status *st)
{
    int n_avg = 0;
    IR_FOR_EACH(g, n)
    {
        n_avg += n->op == OP_ALLREDUCE;
    }
    if (n_avg == 0)
        return st_errorf(st, ST_ERROR,
                         "--data-parallel: the --train-op nodes run no optimizer op (Apply*, ResourceApply*) whose "
                         "gradient could be averaged");
    (void)o;
    for (int i = 0; i < g->n_fetches; i++) {
        IrValue v = g->fetches[i].value;
        const IrType *t = v.node ? ir_value_type(v) : NULL;
        if (!t || (t->dtype != TCRT_F32 && t->dtype != TCRT_F64) || ir_shape_count(&t->shape) != 1)
            continue;
        IrParams p;
        memset(&p, 0, sizeof p);
        ir_graph_set_origin(g, v.node->origin, "AllReduce");
        IrValue m = ir_emit1(g, OP_ALLREDUCE, &v, 1, &p, NULL, st);
        if (!m.node)
            return false;
        g->fetches[i].value = m;
    }
    return true;
}

/* The checkpoint holding a model's variables: a SavedModel's
 * <dir>/variables/variables, a MetaGraphDef X.meta's X (tf.train.Saver
 * writes both with one prefix); NULL when its .index file is absent. */
static const char *checkpoint_prefix(const char *model, const FeModel *m, char *buf, size_t n)
{
    if (!m->meta || !model)
        return NULL;
    size_t len = strlen(model);
    if (m->saved_model) {
        const char *slash = strrchr(model, '/');
        int dir = slash ? (int)(slash - model) : 0;
        if (snprintf(buf, n, "%.*s%svariables/variables", dir, model, slash ? "/" : "") >= (int)n)
            return NULL;
    } else if (len > 5 && !strcmp(model + len - 5, ".meta")) {
        if (snprintf(buf, n, "%.*s", (int)(len - 5), model) >= (int)n)
            return NULL;
    } else {
        return NULL;
    }
    char idx[PATH_MAX];
    struct stat sb;
    if (snprintf(idx, sizeof idx, "%s.index", buf) >= (int)sizeof idx || stat(idx, &sb) != 0)
        return NULL;
    return buf;
}

/* ---- placement (docs/devices.md) ------------------------------------------ */

static bool placement_requested(const Options *o)
{
    return o->placement || o->default_device || o->n_devices || o->n_device_map || o->cluster_spec;
}

static const char *why_text(PassPlaceWhy w)
{
    switch (w) {
    case PLACE_REQUESTED: return "requested";
    case PLACE_MAPPED: return "mapped";
    case PLACE_COLOCATED: return "colocated";
    case PLACE_DEFAULT: return "default device";
    case PLACE_HOST: return "feed (host memory)";
    case PLACE_SOFT: return "soft-placed";
    case PLACE_COST: return "cost model";
    }
    return "?";
}

/* --replicas JOB: the model imported again with every fed tensor of rank
 * >= 1 given 1/N of the rows it has in g (N = tasks of JOB), so the
 * frontend's shape-derived constants are one replica's; pass_replicate
 * then copies that step per replica (passes/replicate.c). */
static IrGraph *replica_import(const Options *o, const FeModel *m, const TfImportOptions *io, const IrGraph *g,
                               const TfFeedSpec *feeds, int n_feeds, TfFeedSpec *rf, Status *st)
{
    int n = 0;
    for (int j = 0; j < o->cluster.n_jobs; j++)
        if (!strcmp(o->cluster.job[j], o->replicas))
            n = o->cluster.count[j];
    if (n < 1) {
        st_errorf(st, ST_ERROR, "--replicas %s: the --cluster has no job '%s'", o->replicas, o->replicas);
        return NULL;
    }
    if (m->onnx || n_feeds > MAX_ITEMS) {
        st_errorf(st, ST_UNSUPPORTED, "--replicas: only TensorFlow graphs (with at most %d feeds)", MAX_ITEMS);
        return NULL;
    }
    for (int i = 0; i < n_feeds; i++) {
        rf[i] = feeds[i];
        const IrNode *a = NULL;
        for (int k = 0; k < g->n_feeds && !a; k++)
            if (same_tensor(g->feeds[k].name, feeds[i].name))
                a = g->feeds[k].arg;
        if (!a || feeds[i].value || a->out[0].type.shape.rank < 1)
            continue;
        const IrShape *sh = &a->out[0].type.shape;
        if (sh->dims[0] % n != 0) {
            st_errorf(st, ST_ERROR,
                      "--replicas %s: feed '%s' has %lld rows (dimension 0), which does not split into %d equal "
                      "replica batches",
                      o->replicas, feeds[i].name, (long long)sh->dims[0], n);
            return NULL;
        }
        rf[i].has_shape = true;
        rf[i].shape = *sh;
        rf[i].shape.dims[0] = sh->dims[0] / n;
    }
    TfImportOptions ro = *io;
    ro.feeds = rf;
    ro.flags |= TF_IMPORT_BATCH_FREE;
    return tf_import(m->graph, &ro, st);
}

/* info --placement: the cluster, each node's device and why, the cut edges. */
static void print_placement(FILE *out, const PassPlaceReport *r)
{
    fprintf(out, "devices (%d):\n", r->n_devices);
    for (int d = 0; d < r->n_devices; d++)
        fprintf(out, "  [%d] %s\n", d, r->devices[d]);
    fprintf(out, "\nplacement (%d nodes, %d soft-placed; simulated time %.3f ms):\n", r->n_entries, r->n_soft,
            r->est_seconds * 1e3);
    for (int i = 0; i < r->n_entries; i++) {
        const PassPlaceEntry *e = &r->entries[i];
        const IrNode *n = e->node;
        fprintf(out, "  %s (%s) %%%d %s -> [%d] %s", n->origin ? n->origin : "?",
                n->origin_op ? n->origin_op : "?", n->id, ir_op_name(n->op), e->device, why_text(e->why));
        if (e->detail)
            fprintf(out, ": %s", e->detail);
        fprintf(out, "\n");
    }
    fprintf(out, "\npartition: %d send/recv pair%s\n", r->n_pairs, r->n_pairs == 1 ? "" : "s");
    for (int i = 0; i < r->n_pairs; i++)
        fprintf(out, "  %s\n", r->keys[i]);
    fprintf(out, "peak live bytes: %lld with recv as late as possible, %lld as soon as possible\n",
            (long long)r->peak_alap, (long long)r->peak_asap);
}

/* Compiles o->model with the given feed specs into exe_path, generated files
 * in gen_dir.  pre: the model already loaded (taken over and freed), or NULL. */
static bool compile_model(const Options *o, FeModel *pre, const TfFeedSpec *feeds, int n_feeds,
                          const char *const *fetches, int n_fetches, const char *gen_dir, const char *exe_path,
                          const char *name, Stats *stats, FILE *err, Status *st)
{
    FeModel m = {0};
    double t0 = now_ms();
    if (pre && (pre->graph || pre->onnx)) {
        m = *pre;
        memset(pre, 0, sizeof *pre);
    } else if (!fe_load(o->model, &m, st))
        return false;
    stats->load_ms = now_ms() - t0;
    stats->tf_nodes = m.onnx ? (m.onnx->graph ? (int)m.onnx->graph->n_node : 0) : (int)m.graph->n_node;

    char ckpt[PATH_MAX];
    TfImportOptions io = {.file = o->model, .feeds = feeds, .n_feeds = n_feeds, .fetches = fetches,
                          .n_fetches = n_fetches, .targets = o->train_ops, .n_targets = o->n_train_ops,
                          .checkpoint = checkpoint_prefix(o->model, &m, ckpt, sizeof ckpt), .meta = m.meta,
                          .flags = o->data_parallel ? TF_IMPORT_DATA_PARALLEL : 0};
    OnnxImportOptions oo = {.file = o->model, .feeds = feeds, .n_feeds = n_feeds, .fetches = fetches,
                            .n_fetches = n_fetches};
    t0 = now_ms();
    IrGraph *g = m.onnx ? onnx_import(m.onnx, &oo, st) : tf_import(m.graph, &io, st);
    if (g && o->replicas) { /* one replica's step: imported again with 1/N of each batch */
        TfFeedSpec rf[MAX_ITEMS];
        IrGraph *one = replica_import(o, &m, &io, g, feeds, n_feeds, rf, st);
        ir_graph_free(g);
        g = one;
    }
    stats->import_ms = now_ms() - t0;
    fe_model_free(&m);
    if (!g)
        return false;
    g->name = arena_strdup(&g->arena, name);
    if (o->loss && !build_training(o, g, st)) {
        ir_graph_free(g);
        return false;
    }
    if (o->data_parallel && !o->loss && !average_fetches(o, g, st)) {
        ir_graph_free(g);
        return false;
    }

    PipelineOptions po = {.dump_after = o->dump_after,
                          .dump_dir = o->dump_dir ? o->dump_dir : "dump",
                          .verify_each = o->verify_each,
                          .disabled = o->disabled,
                          .n_disabled = o->n_disabled};
    bool info_only = !strcmp(o->cmd, "info"); /* info --placement: report, no code */
    bool is_cuda = o->emit && !strcmp(o->emit, "cuda"); /* GPU nodes allowed: codegen/cuda takes them */
    PassPlaceReport prep;
    memset(&prep, 0, sizeof prep);
    PassPlaceOptions popt = {.default_device = o->default_device, .devices = o->devices,
                             .n_devices = o->n_devices, .map = o->device_map, .n_map = o->n_device_map,
                             .for_codegen = !info_only && !is_cuda, .report = &prep};
    if (o->cluster_spec) { /* nodes without a request go to the first job's task 0 (rank 0) */
        popt.cluster = &o->cluster;
        if (!popt.default_device)
            popt.default_device = o->cluster_default;
    }
    if (placement_requested(o))
        po.place = &popt;
    else
        pass_clear_devices(g); /* no placement: the host CPU runs everything, requests ignored */
    t0 = now_ms();
    bool ok = pass_run_pipeline(g, &po, st);
    stats->passes_ms = now_ms() - t0;
    stats->ir_nodes = ir_graph_live_count(g);
    if (ok && info_only) {
        print_placement(o->info_out ? o->info_out : stdout, &prep);
        ir_graph_free(g);
        return true;
    }
    if (ok && po.place && o->stats)
        fprintf(err,
                "stats: devices=%d send_recv_pairs=%d soft_placed=%d peak_bytes_alap=%lld "
                "peak_bytes_asap=%lld\n",
                prep.n_devices, prep.n_pairs, prep.n_soft, (long long)prep.peak_alap, (long long)prep.peak_asap);
    if (ok && is_cuda) { /* GPU code only (codegen/cuda), into the folder -o */
        CgOptions co = {.name = name, .source_file = o->model};
        CgCudaOptions cuo = {.archs = o->cuda_archs, .n_archs = o->n_cuda_archs};
        t0 = now_ms();
        ok = mkdir_p(exe_path, st) && cgu_emit(g, &co, &cuo, exe_path, st);
        stats->codegen_ms = now_ms() - t0;
        if (ok && o->stats)
            print_stats(stats, g, err);
        ir_graph_free(g);
        return ok;
    }
    if (ok) {
        CgOptions co = {
            .name = name,
            .source_file = o->model,
            .cluster = o->cluster_spec ? &o->cluster : NULL,
            .trunc16 = o->transfer_compress && !strcmp(o->transfer_compress, "trunc16")};
        t0 = now_ms();
        ok = cgc_emit(g, &co, gen_dir, st);
        stats->codegen_ms = now_ms() - t0;
    }
    if (ok)
        ok = build_artifacts(o, g, gen_dir, exe_path, name, stats, st);
    if (ok && o->stats)
        print_stats(stats, g, err);
    ir_graph_free(g);
    return ok;
}

/* Feed and fetch specs from --config (tfcompile's tf2xla.Config). */
static bool config_specs(Options *opt, const char *path, TfFeedSpec *feeds, int *n_feeds, const char **fetches,
                         int *n_fetches, Tensorflow__Tf2xla__Config **cfg_out, Status *st)
{
    Tensorflow__Tf2xla__Config *cfg = fe_config_load(path, st);
    if (!cfg)
        return false;
    *cfg_out = cfg;
    for (size_t i = 0; i < cfg->n_feed; i++) {
        if (*n_feeds >= MAX_ITEMS)
            return st_errorf(st, ST_ERROR, "%s: too many feeds", path);
        Tensorflow__Tf2xla__Feed *f = cfg->feed[i];
        if (!f->id || !f->id->node_name || !f->id->node_name[0])
            return st_errorf(st, ST_ERROR, "%s: feed %zu has no id.node_name", path, i);
        TfFeedSpec *s = &feeds[(*n_feeds)++];
        memset(s, 0, sizeof *s);
        char *nm = malloc(strlen(f->id->node_name) + 24);
        if (!own(opt, nm))
            return st_errorf(st, ST_NOMEM, "out of memory");
        sprintf(nm, "%s:%lld", f->id->node_name, (long long)f->id->output_index);
        s->name = nm;
        if (f->shape && !f->shape->unknown_rank) {
            if (f->shape->n_dim > IR_MAX_RANK)
                return st_errorf(st, ST_ERROR, "%s: feed '%s': rank %zu > %d", path, nm, f->shape->n_dim,
                                 IR_MAX_RANK);
            s->has_shape = true;
            s->shape.rank = (int)f->shape->n_dim;
            for (size_t d = 0; d < f->shape->n_dim; d++) {
                s->shape.dims[d] = f->shape->dim[d]->size;
                if (s->shape.dims[d] < 0)
                    s->has_shape = false;
            }
        }
        if (f->type)
            s->dtype = (tcrt_dtype)f->type;
    }
    for (size_t i = 0; i < cfg->n_fetch; i++) {
        if (*n_fetches >= MAX_ITEMS)
            return st_errorf(st, ST_ERROR, "%s: too many fetches", path);
        Tensorflow__Tf2xla__Fetch *f = cfg->fetch[i];
        if (!f->id || !f->id->node_name || !f->id->node_name[0])
            return st_errorf(st, ST_ERROR, "%s: fetch %zu has no id.node_name", path, i);
        char *nm = malloc(strlen(f->id->node_name) + 24);
        if (!own(opt, nm))
            return st_errorf(st, ST_NOMEM, "out of memory");
        sprintf(nm, "%s:%lld", f->id->node_name, (long long)f->id->output_index);
        fetches[(*n_fetches)++] = nm;
    }
    return true;
}

/* "x" and "x:0" name the same tensor. */
static bool same_tensor(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la >= 2 && !strcmp(a + la - 2, ":0"))
        la -= 2;
    if (lb >= 2 && !strcmp(b + lb - 2, ":0"))
        lb -= 2;
    return la == lb && !memcmp(a, b, la);
}

/* Default feeds/fetches from the model's signature (MetaGraphDef, SavedModel):
 * every output is fetched, every input not already given by --feed (feeds[0..
 * *n_feeds)) is fed with the signature's dtype and, when fully known, shape.
 * *used: whether m had a signature (false leaves everything as it was). */
static bool signature_specs(Options *opt, const FeModel *m, TfFeedSpec *feeds, int *n_feeds,
                            const char **fetches, int *n_fetches, bool *used, Status *st)
{
    const char *key = opt->signature;
    *used = false;
    const Tensorflow__SignatureDef *sig =
        key ? fe_signature(m, key, st) : fe_default_signature(m, &key, st);
    if (!sig)
        return st_ok(st);
    *used = true;
    int n_user = *n_feeds;
    for (size_t i = 0; i < sig->n_inputs; i++) {
        const Tensorflow__TensorInfo *ti = sig->inputs[i]->value;
        if (!ti || ti->encoding_case != TENSORFLOW__TENSOR_INFO__ENCODING_NAME || !ti->name || !ti->name[0])
            return st_errorf(st, ST_ERROR, "%s: signature '%s': input '%s' is not a dense tensor (no name)",
                             m->path, key, sig->inputs[i]->key ? sig->inputs[i]->key : "");
        bool given = false;
        for (int k = 0; k < n_user; k++)
            given |= same_tensor(feeds[k].name, ti->name);
        if (given)
            continue;
        if (*n_feeds >= MAX_ITEMS)
            return st_errorf(st, ST_ERROR, "%s: too many feeds", m->path);
        char *nm = strdup(ti->name);
        if (!own(opt, nm))
            return st_errorf(st, ST_NOMEM, "out of memory");
        TfFeedSpec *f = &feeds[(*n_feeds)++];
        memset(f, 0, sizeof *f);
        f->name = nm;
        f->dtype = (tcrt_dtype)ti->dtype;
        const Tensorflow__TensorShapeProto *sh = ti->tensor_shape;
        if (sh && !sh->unknown_rank && sh->n_dim <= IR_MAX_RANK) {
            f->has_shape = true;
            f->shape.rank = (int)sh->n_dim;
            for (size_t d = 0; d < sh->n_dim; d++) {
                f->shape.dims[d] = sh->dim[d]->size;
                if (sh->dim[d]->size < 0)
                    f->has_shape = false; /* the graph's shape (or --feed DIMS) decides */
            }
        }
    }
    for (size_t i = 0; i < sig->n_outputs; i++) {
        const Tensorflow__TensorInfo *ti = sig->outputs[i]->value;
        if (!ti || ti->encoding_case != TENSORFLOW__TENSOR_INFO__ENCODING_NAME || !ti->name || !ti->name[0])
            return st_errorf(st, ST_ERROR, "%s: signature '%s': output '%s' is not a dense tensor (no name)",
                             m->path, key, sig->outputs[i]->key ? sig->outputs[i]->key : "");
        if (*n_fetches >= MAX_ITEMS)
            return st_errorf(st, ST_ERROR, "%s: too many fetches", m->path);
        char *nm = strdup(ti->name);
        if (!own(opt, nm))
            return st_errorf(st, ST_NOMEM, "out of memory");
        fetches[(*n_fetches)++] = nm;
    }
    return true;
}

static int report(Status *st, FILE *err)
{
    if (st_ok(st))
        return 0;
    const char *p = st->msg;
    while (*p) {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        fprintf(err, "error: %.*s\n", len, p);
        p += len + (nl ? 1 : 0);
    }
    if (!st->msg[0])
        fprintf(err, "error: failed (no message)\n");
    return 1;
}

/* --const NAME=VALUE: VALUE is FILE.npy, one number (a scalar) or a
 * comma-separated list (rank 1), numbers kept as float64 and cast to the
 * placeholder's dtype by the importer.  Appends a spec per --const; vals[i]
 * owns its data (freed by free_consts). */
static bool add_consts(const Options *o, TfFeedSpec *feeds, int *n_feeds, tcrt_tensor *vals, char **names,
                       Status *st)
{
    for (int i = 0; i < o->n_consts; i++) {
        const char *arg = o->consts[i];
        const char *eq = strchr(arg, '=');
        memset(&vals[i], 0, sizeof vals[i]);
        if (!eq || eq == arg || !eq[1])
            return st_errorf(st, ST_ERROR, "--const '%s': expected NAME=VALUE (a number, a list or FILE.npy)", arg);
        if (*n_feeds >= MAX_ITEMS)
            return st_errorf(st, ST_ERROR, "too many feeds");
        names[i] = strndup(arg, (size_t)(eq - arg));
        if (!names[i])
            return st_errorf(st, ST_NOMEM, "out of memory");
        const char *val = eq + 1;
        size_t len = strlen(val);
        tcrt_tensor *t = &vals[i];
        if (len > 4 && strcmp(val + len - 4, ".npy") == 0) {
            char msg[512];
            if (tcrt_npy_read(val, t, msg, sizeof msg) != TCRT_OK)
                return st_errorf(st, ST_IO, "--const %s: %s", names[i], msg);
        } else {
            int n = 1;
            for (const char *c = val; *c; c++)
                n += *c == ',';
            if (n > (1 << 20))
                return st_errorf(st, ST_ERROR, "--const %s: too many values", names[i]);
            double *d = malloc(sizeof(double) * (size_t)n);
            if (!d)
                return st_errorf(st, ST_NOMEM, "out of memory");
            t->data = d;
            t->dtype = TCRT_F64;
            t->rank = n == 1 ? 0 : 1;
            t->dims[0] = n;
            const char *c = val;
            for (int k = 0; k < n; k++) {
                char *end;
                errno = 0;
                d[k] = strtod(c, &end);
                if (end == c || errno || (*end && *end != ','))
                    return st_errorf(st, ST_ERROR, "--const %s: '%s' is not a number or a comma-separated list",
                                     names[i], val);
                c = *end ? end + 1 : end;
            }
        }
        TfFeedSpec *f = &feeds[(*n_feeds)++];
        memset(f, 0, sizeof *f);
        f->name = names[i];
        f->has_shape = true;
        f->shape.rank = t->rank;
        for (int d = 0; d < t->rank; d++)
            f->shape.dims[d] = t->dims[d];
        f->value = t;
    }
    return true;
}

static void free_consts(const Options *o, tcrt_tensor *vals, char **names)
{
    for (int i = 0; i < o->n_consts; i++) {
        free(vals[i].data);
        free(names[i]);
    }
}

static int cmd_compile(Options *o, FILE *out, FILE *err)
{
    tcrt_tensor cvals[MAX_ITEMS];
    char *cnames[MAX_ITEMS] = {0};
    memset(cvals, 0, sizeof cvals);
    Status st = ST_INIT;
    TfFeedSpec feeds[MAX_ITEMS];
    char *names[MAX_ITEMS] = {0};
    const char *fetches[MAX_ITEMS];
    int n_feeds = 0, n_fetches = 0;
    Tensorflow__Tf2xla__Config *cfg = NULL;
    FeModel pre = {0};
    int rc = 1;

    if (o->emit && !strcmp(o->emit, "cuda") && (o->n_targets || o->backend)) {
        st_errorf(&st, ST_ERROR, "--emit cuda writes GPU code: --target and --backend are for CPU artifacts");
        goto done;
    }
    if (o->n_cuda_archs && !(o->emit && !strcmp(o->emit, "cuda"))) {
        st_errorf(&st, ST_ERROR, "--cuda-arch is for --emit cuda");
        goto done;
    }
    if (o->backend && !strcmp(o->backend, "llvm") && !cgl_available()) {
        st_errorf(&st, ST_ERROR, "--backend llvm: this tfcc was built without LLVM (install llvm-19-dev, "
                                 "reconfigure and rebuild; see docs/targets.md)");
        goto done;
    }
    if (o->config && !config_specs(o, o->config, feeds, &n_feeds, fetches, &n_fetches, &cfg, &st))
        goto done;
    for (int i = 0; i < o->n_feeds; i++) {
        if (n_feeds >= MAX_ITEMS) {
            st_errorf(&st, ST_ERROR, "too many feeds");
            goto done;
        }
        if (!parse_compile_feed(o->feeds[i], &feeds[n_feeds], &names[i], &st))
            goto done;
        n_feeds++;
    }
    if (!add_consts(o, feeds, &n_feeds, cvals, cnames, &st))
        goto done;
    for (int i = 0; i < o->n_fetches; i++)
        fetches[n_fetches++] = o->fetches[i];
    if (!add_loss_fetch(o, fetches, &n_fetches, &st))
        goto done;
    if ((n_fetches == 0 && !o->config && o->n_train_ops == 0) || o->signature) {
        /* the model's signature (--signature, else the default), if it has one */
        bool used;
        if (!fe_load(o->model, &pre, &st) ||
            (!pre.onnx && !signature_specs(o, &pre, feeds, &n_feeds, fetches, &n_fetches, &used, &st)))
            goto done;
    }
    if (n_fetches == 0 && o->n_train_ops == 0 && !pre.onnx) { /* ONNX: the graph's outputs */
        st_errorf(&st, ST_ERROR, "nothing to compile: give --fetch NAME (see 'tfcc info %s')", o->model);
        goto done;
    }

    char name[128];
    model_name(o, name, sizeof name);
    char tmpl[] = "/tmp/tfcc-XXXXXX";
    const char *gen_dir = o->keep_dir;
    if (gen_dir) {
        if (!mkdir_p(gen_dir, &st))
            goto done;
    } else {
        gen_dir = mkdtemp(tmpl);
        if (!gen_dir) {
            st_errorf(&st, ST_IO, "cannot create a temporary directory: %s", strerror(errno));
            goto done;
        }
    }
    Stats stats = {0};
    bool ok =
        compile_model(o, &pre, feeds, n_feeds, fetches, n_fetches, gen_dir, o->output, name, &stats, err, &st);
    if (!o->keep_dir)
        rm_rf(gen_dir);
    if (ok && !strcmp(o->cmd, "info"))
        rc = 0;
    else if (ok && o->emit && !strcmp(o->emit, "cuda")) {
        fprintf(out,
                "compiled %s -> %s (GPU code: %s.cu, %s_cuda_plan.h, %s.ptx, cubins; not runnable yet: "
                "the CUDA host runtime is not written)\n",
                o->model, o->output, name, name, name);
        rc = 0;
    } else if (ok) {
        fprintf(out, "compiled %s -> %s\n", o->model, o->output);
        rc = 0;
    }
done:
    for (int i = 0; i < o->n_feeds; i++)
        free(names[i]);
    free_consts(o, cvals, cnames);
    if (cfg)
        protobuf_c_message_free_unpacked(&cfg->base, NULL);
    fe_model_free(&pre);
    return rc ? report(&st, err) : 0;
}

/* ---- run ----------------------------------------------------------------- */

static int run_exe(const char *exe, char **argv, FILE *err)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(err, "error: fork failed: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        execv(exe, argv);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0)
        return 1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    fprintf(err, "error: %s killed by signal %d\n", exe, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return 1;
}

static int cmd_run(const Options *o, FILE *out, FILE *err)
{
    tcrt_tensor cvals[MAX_ITEMS];
    char *cnames[MAX_ITEMS] = {0};
    memset(cvals, 0, sizeof cvals);
    Status st = ST_INIT;
    TfFeedSpec feeds[MAX_ITEMS];
    char *names[MAX_ITEMS] = {0};
    const char *files[MAX_ITEMS];
    const char *fetches[MAX_ITEMS];
    int n_feeds = 0, n_fetches = 0, rc = 1;
    char dir_tmpl[] = "/tmp/tfcc-run-XXXXXX";
    const char *gen_dir = NULL;
    FeModel pre = {0};
    (void)out;
    if (o->n_targets || (o->emit && strcmp(o->emit, "exe"))) {
        st_errorf(&st, ST_ERROR, "run builds and runs a host executable: --target and --emit are for compile");
        goto done;
    }

    for (int i = 0; i < o->n_feeds; i++) {
        const char *eq = strrchr(o->feeds[i], '=');
        if (!eq || eq == o->feeds[i] || !eq[1]) {
            st_errorf(&st, ST_ERROR, "--feed '%s': run needs NAME=FILE.npy", o->feeds[i]);
            goto done;
        }
        names[i] = strndup(o->feeds[i], (size_t)(eq - o->feeds[i]));
        files[i] = eq + 1;
        tcrt_tensor t;
        char msg[512];
        tcrt_status s = tcrt_npy_read(files[i], &t, msg, sizeof msg);
        if (s != TCRT_OK) {
            st_errorf(&st, ST_IO, "%s", msg);
            goto done;
        }
        free(t.data);
        TfFeedSpec *f = &feeds[n_feeds++];
        memset(f, 0, sizeof *f);
        f->name = names[i];
        f->has_shape = true;
        f->dtype = t.dtype;
        f->shape.rank = t.rank;
        for (int d = 0; d < t.rank; d++)
            f->shape.dims[d] = t.dims[d];
    }
    if (!add_consts(o, feeds, &n_feeds, cvals, cnames, &st))
        goto done;
    for (int i = 0; i < o->n_fetches; i++)
        fetches[n_fetches++] = o->fetches[i];
    if (!add_loss_fetch(o, fetches, &n_fetches, &st))
        goto done;
    if (n_fetches == 0) { /* ONNX: the graph's outputs */
        if (!fe_load(o->model, &pre, &st))
            goto done;
        if (!pre.onnx) {
            st_errorf(&st, ST_ERROR, "nothing to run: give --fetch NAME (see 'tfcc info %s')", o->model);
            goto done;
        }
    }
    gen_dir = o->keep_dir;
    if (gen_dir) {
        if (!mkdir_p(gen_dir, &st))
            goto done;
    } else if (!(gen_dir = mkdtemp(dir_tmpl))) {
        st_errorf(&st, ST_IO, "cannot create a temporary directory: %s", strerror(errno));
        goto done;
    }
    char exe[PATH_MAX];
    snprintf(exe, sizeof exe, "%s/model", gen_dir);
    Options oc = *o;
    oc.output = exe;
    oc.n_targets = 0; /* run builds and runs a host executable */
    oc.emit = NULL;
    char name[128];
    snprintf(name, sizeof name, "model");
    if (o->name)
        model_name(o, name, sizeof name);
    Stats stats = {0};
    if (!compile_model(&oc, pre.onnx ? &pre : NULL, feeds, n_feeds, fetches, n_fetches, gen_dir, exe, name,
                       &stats, err, &st))
        goto done;

    /* exe --feed NAME=FILE ... --out-dir DIR [--threads N] [--repeat N] */
    char *argv[2 * MAX_ITEMS + MAX_ITEMS + 8];
    int k = 0;
    argv[k++] = exe;
    for (int i = 0; i < o->n_feeds; i++) { /* --const values are compiled in, not fed */
        argv[k++] = "--feed";
        argv[k++] = (char *)o->feeds[i];
    }
    argv[k++] = "--out-dir";
    argv[k++] = (char *)(o->out_dir ? o->out_dir : ".");
    for (int i = 0; i < o->n_run_args; i++)
        argv[k++] = (char *)o->run_args[i];
    argv[k] = NULL;
    rc = run_exe(exe, argv, err);
    if (!o->keep_dir)
        rm_rf(gen_dir);
    for (int i = 0; i < o->n_feeds; i++)
        free(names[i]);
    free_consts(o, cvals, cnames);
    fe_model_free(&pre);
    return rc;
done:
    if (gen_dir && !o->keep_dir)
        rm_rf(gen_dir);
    for (int i = 0; i < o->n_feeds; i++)
        free(names[i]);
    free_consts(o, cvals, cnames);
    fe_model_free(&pre);
    return report(&st, err);
}

/* ---- info ---------------------------------------------------------------- */

typedef struct OpCount {
    const char *op;
    int n;
} OpCount;

static int cmp_opcount(const void *a, const void *b)
{
    const OpCount *x = a, *y = b;
    if (x->n != y->n)
        return y->n - x->n;
    return strcmp(x->op, y->op);
}

static const Tensorflow__AttrValue *find_attr(const Tensorflow__NodeDef *nd, const char *key)
{
    const Tensorflow__AttrValue *v = NULL;
    for (size_t i = 0; i < nd->n_attr; i++)
        if (nd->attr[i]->key && !strcmp(nd->attr[i]->key, key))
            v = nd->attr[i]->value; /* last duplicate wins, as protobuf */
    return v;
}

static void print_shape(FILE *out, const Tensorflow__TensorShapeProto *sh)
{
    if (!sh) {
        fprintf(out, "[?]");
        return;
    }
    if (sh->unknown_rank) {
        fprintf(out, "[unknown rank]");
        return;
    }
    fprintf(out, "[");
    for (size_t d = 0; d < sh->n_dim; d++)
        fprintf(out, "%s%lld", d ? "," : "", (long long)sh->dim[d]->size);
    fprintf(out, "]");
}

static void print_shape_attr(FILE *out, const Tensorflow__AttrValue *v)
{
    print_shape(out, v && v->value_case == TENSORFLOW__ATTR_VALUE__VALUE_SHAPE ? v->shape : NULL);
}

/* MetaGraphDef / SavedModel: which meta graph, and the signatures, e.g.
 *   meta graph: 1 of 1, tags: serve, TensorFlow 1.10.0
 *   signatures (2, compile uses 'serving_default'):
 *     serving_default  (tensorflow/serving/predict)
 *       in   x: x:0  float32 [-1,1]
 *       out  y: y:0  float32 [-1,1]                                        */
static void print_meta(FILE *out, const FeModel *m)
{
    const Tensorflow__MetaGraphDef *mg = m->meta;
    const Tensorflow__MetaGraphDef__MetaInfoDef *mi = mg->meta_info_def;
    fprintf(out, "meta graph: ");
    if (m->saved_model)
        fprintf(out, "%d of %zu, ", m->meta_index + 1, m->saved_model->n_meta_graphs);
    fprintf(out, "tags: ");
    for (size_t t = 0; mi && t < mi->n_tags; t++)
        fprintf(out, "%s%s", t ? "," : "", mi->tags[t]);
    if (!mi || !mi->n_tags)
        fprintf(out, "(none)");
    if (mi && mi->tensorflow_version && mi->tensorflow_version[0])
        fprintf(out, ", TensorFlow %s", mi->tensorflow_version);
    fprintf(out, "\n\nsignatures");
    Status st = ST_INIT;
    const char *key = NULL;
    fe_default_signature(m, &key, &st);
    if (!mg->n_signature_def)
        fprintf(out, ": none\n");
    else if (key)
        fprintf(out, " (%zu, compile uses '%s'):\n", mg->n_signature_def, key);
    else
        fprintf(out, " (%zu, no default: compile needs --fetch):\n", mg->n_signature_def);
    for (size_t i = 0; i < mg->n_signature_def; i++) {
        const Tensorflow__MetaGraphDef__SignatureDefEntry *e = mg->signature_def[i];
        const Tensorflow__SignatureDef *sd = e->value;
        fprintf(out, "  %s", e->key ? e->key : "");
        if (sd && sd->method_name && sd->method_name[0])
            fprintf(out, "  (%s)", sd->method_name);
        fprintf(out, "\n");
        for (int io = 0; sd && io < 2; io++) {
            size_t n = io ? sd->n_outputs : sd->n_inputs;
            for (size_t k = 0; k < n; k++) {
                /* InputsEntry and OutputsEntry have the same layout */
                const Tensorflow__SignatureDef__InputsEntry *te =
                    io ? (const Tensorflow__SignatureDef__InputsEntry *)sd->outputs[k] : sd->inputs[k];
                const Tensorflow__TensorInfo *ti = te->value;
                fprintf(out, "    %-4s %s: ", io ? "out" : "in", te->key ? te->key : "");
                if (!ti) {
                    fprintf(out, "?\n");
                    continue;
                }
                if (ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_NAME)
                    fprintf(out, "%s", ti->name);
                else if (ti->encoding_case == TENSORFLOW__TENSOR_INFO__ENCODING_COO_SPARSE)
                    fprintf(out, "(sparse) %s", ti->coo_sparse->values_tensor_name);
                else
                    fprintf(out, "(composite)");
                const char *dn = ti->dtype ? tcrt_dtype_name((tcrt_dtype)ti->dtype) : "?";
                if (!strcmp(dn, "invalid"))
                    fprintf(out, "  DT_%d ", (int)ti->dtype);
                else
                    fprintf(out, "  %s ", dn);
                print_shape(out, ti->tensor_shape);
                fprintf(out, "\n");
            }
        }
    }
}

static int cmd_info(Options *o, FILE *out, FILE *err)
{
    if (o->placement || placement_requested(o)) { /* import, place and partition, then report */
        o->info_out = out;
        return cmd_compile(o, out, err);
    }
    Status st = ST_INIT;
    FeModel m = {0};
    if (!fe_load(o->model, &m, &st))
        return report(&st, err);
    if (m.onnx) {
        fprintf(out, "model: %s\nformat: %s\n", o->model, fe_format_name(m.format));
        onnx_print_info(out, m.onnx);
        fe_model_free(&m);
        return 0;
    }
    const Tensorflow__GraphDef *gd = m.graph;
    fprintf(out, "model: %s\nformat: %s\nnodes: %zu\n", o->model, fe_format_name(m.format), gd->n_node);
    if (m.meta)
        print_meta(out, &m);

    /* inputs: placeholders */
    fprintf(out, "\ninputs:\n");
    for (size_t i = 0; i < gd->n_node; i++) {
        const Tensorflow__NodeDef *nd = gd->node[i];
        if (!nd->op || (strcmp(nd->op, "Placeholder") && strcmp(nd->op, "PlaceholderV2") &&
                        strcmp(nd->op, "PlaceholderWithDefault") && strcmp(nd->op, "_Arg")))
            continue;
        const Tensorflow__AttrValue *dt = find_attr(nd, strcmp(nd->op, "_Arg") ? "dtype" : "T");
        tcrt_dtype d = dt && dt->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TYPE ? (tcrt_dtype)dt->type : 0;
        fprintf(out, "  %s:0  %s ", nd->name, d ? tcrt_dtype_name(d) : "?");
        print_shape_attr(out, find_attr(nd, "shape"));
        fprintf(out, "%s\n", strcmp(nd->op, "PlaceholderWithDefault") ? "" : "  (has default)");
    }

    /* outputs: nodes nobody consumes (data or control) */
    fprintf(out, "\noutputs (nodes no other node uses):\n");
    size_t n = gd->n_node;
    bool *used = calloc(n ? n : 1, sizeof *used);
    if (!used) {
        fe_model_free(&m);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        const Tensorflow__NodeDef *nd = gd->node[i];
        for (size_t k = 0; k < nd->n_input; k++) {
            char buf[1024];
            int idx;
            const char *in = nd->input[k];
            if (in[0] == '^')
                in++;
            if (!tf_parse_tensor_name(in, buf, sizeof buf, &idx))
                continue;
            for (size_t j = 0; j < n; j++)
                if (gd->node[j]->name && !strcmp(gd->node[j]->name, buf)) {
                    used[j] = true;
                    break;
                }
        }
    }
    for (size_t i = 0; i < n; i++) {
        const Tensorflow__NodeDef *nd = gd->node[i];
        if (used[i] || !nd->op || !strcmp(nd->op, "NoOp") || !strcmp(nd->op, "Const"))
            continue;
        fprintf(out, "  %s  (%s)\n", nd->name, nd->op);
    }
    free(used);

    /* op histogram and unsupported ops */
    OpCount *hist = calloc(n ? n : 1, sizeof *hist);
    int nh = 0;
    if (!hist) {
        fe_model_free(&m);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        const char *op = gd->node[i]->op ? gd->node[i]->op : "?";
        int j = 0;
        while (j < nh && strcmp(hist[j].op, op))
            j++;
        if (j == nh)
            hist[nh++].op = op;
        hist[j].n++;
    }
    qsort(hist, (size_t)nh, sizeof *hist, cmp_opcount);
    fprintf(out, "\nops (%d types):\n", nh);
    for (int j = 0; j < nh; j++)
        fprintf(out, "  %6d  %s%s\n", hist[j].n, hist[j].op,
                tf_op_supported_in(gd, hist[j].op) ? "" : "   [unsupported]");
    int n_unsup = 0;
    for (size_t i = 0; i < n; i++)
        if (gd->node[i]->op && !tf_op_supported_in(gd, gd->node[i]->op)) {
            if (!n_unsup++)
                fprintf(out, "\nunsupported ops by node:\n");
            fprintf(out, "  %s  (%s)\n", gd->node[i]->name, gd->node[i]->op);
        }
    if (!n_unsup)
        fprintf(out, "\nunsupported ops: none\n");
    free(hist);
    fe_model_free(&m);
    return 0;
}

/* ---- ops ----------------------------------------------------------------- */

typedef struct OpsCtx {
    FILE *out;
    bool markdown;
    int n;
} OpsCtx;

/* A primitive's gradient as docs/ops.md shows it. */
static const char *prim_grad(Op op)
{
    bool nodiff = false;
    if (!pass_grad_has_rule(op, &nodiff))
        return "no";
    return nodiff ? "zero" : "yes";
}

/* The gradient column of a TF op: every IR primitive named in lowers_to
 * has a rule ("yes"), passes none ("zero": integer or piecewise-constant
 * results), or "no (prim)" for the first without one; "-" when it names
 * none (constants, shape arithmetic folded away). */
static void tf_op_grad(const char *lowers_to, char *buf, size_t n)
{
    bool any = false, all_zero = true;
    for (const char *p = lowers_to ? lowers_to : ""; *p;) {
        if (!(isalnum((unsigned char)*p) || *p == '_')) {
            p++;
            continue;
        }
        const char *q = p;
        while (isalnum((unsigned char)*q) || *q == '_')
            q++;
        char word[64];
        Op op;
        if ((size_t)(q - p) < sizeof word) {
            memcpy(word, p, (size_t)(q - p));
            word[q - p] = 0;
            if (ir_op_from_name(word, &op)) {
                const char *gr = prim_grad(op);
                if (!strcmp(gr, "no")) {
                    snprintf(buf, n, "no (%s)", word);
                    return;
                }
                any = true;
                all_zero = all_zero && !strcmp(gr, "zero");
            }
        }
        p = q;
    }
    snprintf(buf, n, "%s", !any ? "-" : all_zero ? "zero" : "yes");
}

static void print_op(const TfOpDoc *d, void *ud)
{
    OpsCtx *c = ud;
    c->n++;
    char gr[96];
    tf_op_grad(d->lowers_to, gr, sizeof gr);
    if (c->markdown)
        fprintf(c->out, "| `%s` | %s | C, LLVM (CPU) | %s |\n", d->tf_op, d->lowers_to ? d->lowers_to : "", gr);
    else
        fprintf(c->out, "%-32s %s\n", d->tf_op, d->lowers_to ? d->lowers_to : "");
}

static int cmd_ops(const Options *o, FILE *out)
{
    OpsCtx c = {out, o->markdown, 0};
    if (o->markdown) {
        fprintf(out, "# Supported operations\n\n"
                     "Generated by `tfcc ops --markdown` from the op tables (compiler/tf/tf_ops_*.c and\n"
                     "ir/ops.def). Do not edit by hand: run `make docs`.\n\n"
                     "## TensorFlow ops\n\n"
                     "The gradient column says whether `--loss` can differentiate through the op:\n"
                     "every primitive it lowers to has a rule (yes), passes no gradient (zero: integer\n"
                     "or piecewise-constant results), or the first primitive without a rule (docs/training.md).\n\n"
                     "| TF op | lowers to (IR primitives) | backends | gradient |\n|---|---|---|---|\n");
    }
    tf_ops_foreach(print_op, &c);
    if (o->markdown) {
        fprintf(out, "\n%d TensorFlow op types.\n\n## IR primitives (ir/ops.def)\n\n"
                     "| primitive | kind | inputs | C expression / kernel | gradient |\n|---|---|---|---|---|\n",
                c.n);
        for (int op = 0; op < OP_COUNT; op++) {
            const OpInfo *inf = ir_op_info((Op)op);
            char ar[16];
            if (inf->arity < 0)
                snprintf(ar, sizeof ar, "variadic");
            else
                snprintf(ar, sizeof ar, "%d", inf->arity);
            const char *impl = inf->c_expr ? inf->c_expr : inf->ref_kernel_name ? inf->ref_kernel_name : "-";
            fprintf(out, "| `%s` | %s | %s | `", inf->name, ir_kind_name(inf->kind), ar);
            for (const char *p = impl; *p; p++)
                fputs(*p == '|' ? "\\|" : (char[]){*p, 0}, out);
            fprintf(out, "` | %s |\n", prim_grad((Op)op));
        }
    }
    return 0;
}

int drv_main(int argc, char **argv, FILE *out, FILE *err)
{
    Options o;
    int rc = parse_args(argc, argv, &o, err);
    if (rc == 0 && o.cluster_spec) { /* --cluster: validated before anything is read */
        Status cst = ST_INIT;
        if (!pass_cluster_parse(o.cluster_spec, &o.cluster, &cst)) {
            fprintf(err, "error: %s\n", cst.msg);
            rc = 2;
        } else
            snprintf(o.cluster_default, sizeof o.cluster_default, "/job:%s/replica:0/task:0/device:CPU:0",
                     o.cluster.job[0]);
    }
    if (rc == -1)
        rc = 0;
    else if (rc)
        ;
    else if (!strcmp(o.cmd, "compile"))
        rc = cmd_compile(&o, out, err);
    else if (!strcmp(o.cmd, "run"))
        rc = cmd_run(&o, out, err);
    else if (!strcmp(o.cmd, "info"))
        rc = cmd_info(&o, out, err);
    else
        rc = cmd_ops(&o, out);
    for (int i = 0; i < o.n_owned; i++)
        free(o.owned[i]);
    return rc;
}
