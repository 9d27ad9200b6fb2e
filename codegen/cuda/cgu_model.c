/* codegen/cuda/cgu_model.c - the CUDA backend's driver: the GPU-placed part
 * of a graph as CUDA C (NAME.cu) and its launch plan (NAME_cuda_plan.h),
 * compiled by NVRTC (cgu_nvrtc.c) to NAME.ptx and NAME_sm_XX.cubin.
 *
 * Input: a graph after the pipeline with placement on (every node's device
 * set by passes/place, cross-device edges cut into send/recv by
 * passes/partition, memplan done).  The GPU part is every live top-level
 * node whose device has type GPU (several GPUs share one module).  Walking
 * it in schedule order:
 *   - const, arg, variable: buffers, no step (weights and state are
 *     uploaded by the runtime);
 *   - elementwise groups (cg_elem_group_build: the C backend's groups),
 *     copy and assign: a grid-stride kernel (cgu_elem.c);
 *   - reductions, argmax/argmin: a block-per-output kernel (cgu_reduce.c);
 *   - matmul: a cuBLAS GEMM step, conv2d: a cuDNN convolution step (the
 *     node's parameters, tcrt_kernels.h layouts, copied into the plan);
 *   - send, recv: a host<->device copy step (the rendezvous key);
 *   - anything else: an error naming the node and op, pointing at
 *     --device-map.
 * Kernel names: NAME_k<NNN>_<ops> with NNN the root's schedule position
 * (as the C backend).  The module starts with a prelude that gives
 * ir/ops.def's C expressions a device-side meaning: stdint typedefs,
 * tcrt_elem.h's TCRT_DIV/FLOORDIV/FLOORMOD/SIGN (overloads on the promoted
 * type instead of C11 _Generic; the same values), and CUDA's C++ math
 * overloads stand in for <tgmath.h>.
 * Not done here: the host runtime (CUDA driver loader, launches, cuBLAS and
 * cuDNN calls, copies); the artifacts are GPU code only.
 * Output is deterministic: same graph, same bytes (NVRTC's output is too,
 * for one NVRTC version and options).
 */
#include "codegen/cuda/cgu_int.h"

#include <errno.h>
#include <string.h>

/* ir/ops.def's expressions on the device (see the file comment). */
static const char prelude[] =
    "/* ---- prelude: ir/ops.def expressions on the device ---- */\n"
    "typedef signed char int8_t;\n"
    "typedef short int16_t;\n"
    "typedef int int32_t;\n"
    "typedef long long int64_t;\n"
    "typedef unsigned char uint8_t;\n"
    "typedef unsigned short uint16_t;\n"
    "typedef unsigned int uint32_t;\n"
    "typedef unsigned long long uint64_t;\n"
    "\n"
    "/* tcrt_elem.h: integer division never traps (b == 0: 0; b == -1: wrapping\n"
    " * negation); floor division and modulo round toward -inf.  Overloaded on\n"
    " * the promoted type of a + b, as tcrt_elem.h's _Generic selects. */\n"
    "__device__ __forceinline__ long long tcrt_neg_wrap(long long a) { return (long long)(0ULL - (unsigned long long)a); }\n"
    "__device__ __forceinline__ float tcrt_div(float a, float b) { return a / b; }\n"
    "__device__ __forceinline__ double tcrt_div(double a, double b) { return a / b; }\n"
    "__device__ __forceinline__ long long tcrt_div(long long a, long long b) { return b == 0 ? 0 : b == -1 ? tcrt_neg_wrap(a) : a / b; }\n"
    "__device__ __forceinline__ long long tcrt_div(int a, int b) { return tcrt_div((long long)a, (long long)b); }\n"
    "__device__ __forceinline__ unsigned long long tcrt_div(unsigned long long a, unsigned long long b) { return b == 0 ? 0 : a / b; }\n"
    "__device__ __forceinline__ unsigned long long tcrt_div(unsigned a, unsigned b) { return tcrt_div((unsigned long long)a, (unsigned long long)b); }\n"
    "__device__ __forceinline__ long long tcrt_floordiv(long long a, long long b)\n"
    "{\n"
    "    if (b == 0)\n"
    "        return 0;\n"
    "    if (b == -1)\n"
    "        return tcrt_neg_wrap(a);\n"
    "    long long q = a / b;\n"
    "    if ((a % b != 0) && ((a < 0) != (b < 0)))\n"
    "        q--;\n"
    "    return q;\n"
    "}\n"
    "__device__ __forceinline__ long long tcrt_floordiv(int a, int b) { return tcrt_floordiv((long long)a, (long long)b); }\n"
    "__device__ __forceinline__ long long tcrt_floordiv(unsigned long long a, unsigned long long b) { return tcrt_floordiv((long long)a, (long long)b); }\n"
    "__device__ __forceinline__ long long tcrt_floordiv(unsigned a, unsigned b) { return tcrt_floordiv((long long)a, (long long)b); }\n"
    "__device__ __forceinline__ float tcrt_floordiv(float a, float b) { return floorf(a / b); }\n"
    "__device__ __forceinline__ double tcrt_floordiv(double a, double b) { return floor(a / b); }\n"
    "__device__ __forceinline__ long long tcrt_floormod(long long a, long long b)\n"
    "{\n"
    "    if (b == 0 || b == -1)\n"
    "        return 0;\n"
    "    long long r = a % b;\n"
    "    if (r != 0 && ((r < 0) != (b < 0)))\n"
    "        r += b;\n"
    "    return r;\n"
    "}\n"
    "__device__ __forceinline__ long long tcrt_floormod(int a, int b) { return tcrt_floormod((long long)a, (long long)b); }\n"
    "__device__ __forceinline__ long long tcrt_floormod(unsigned long long a, unsigned long long b) { return tcrt_floormod((long long)a, (long long)b); }\n"
    "__device__ __forceinline__ long long tcrt_floormod(unsigned a, unsigned b) { return tcrt_floormod((long long)a, (long long)b); }\n"
    "__device__ __forceinline__ float tcrt_floormod(float a, float b)\n"
    "{\n"
    "    float r = fmodf(a, b);\n"
    "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
    "}\n"
    "__device__ __forceinline__ double tcrt_floormod(double a, double b)\n"
    "{\n"
    "    double r = fmod(a, b);\n"
    "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
    "}\n"
    "#define TCRT_PROMOTED(a, b) decltype((a) + (b))\n"
    "#define TCRT_DIV(a, b) tcrt_div((TCRT_PROMOTED(a, b))(a), (TCRT_PROMOTED(a, b))(b))\n"
    "#define TCRT_FLOORDIV(a, b) tcrt_floordiv((TCRT_PROMOTED(a, b))(a), (TCRT_PROMOTED(a, b))(b))\n"
    "#define TCRT_FLOORMOD(a, b) tcrt_floormod((TCRT_PROMOTED(a, b))(a), (TCRT_PROMOTED(a, b))(b))\n"
    "#define TCRT_SIGN(a) (((a) > 0) - ((a) < 0))\n"
    "\n"
    "/* argmax/argmin: whether (v, k) beats (bv, bk): a NaN wins, then the\n"
    " * larger (smaller) value, ties to the lower index (order-independent). */\n"
    "template <typename T>\n"
    "__device__ __forceinline__ bool tcrt_cu_arg_better(int is_max, T v, long long k, T bv, long long bk)\n"
    "{\n"
    "    bool vn = v != v, bn = bv != bv;\n"
    "    if (vn || bn)\n"
    "        return vn && (!bn || k < bk);\n"
    "    if (v == bv)\n"
    "        return k < bk;\n"
    "    return is_max ? v > bv : v < bv;\n"
    "}\n"
    "#define TCRT_CU_ARG_BETTER(is_max, v, k, bv, bk) tcrt_cu_arg_better((is_max), (v), (k), (bv), (bk))\n"
    "/* ---- end of prelude ---- */\n\n";

void cgu_kernel_header(CgOut *o, const char *kname, const IrNode *const *nodes, int n_nodes)
{
    char text[256], op[128];
    cg_printf(o, "// kernel %s: nodes ", kname);
    int shown = 0;
    for (int m = 0; m < n_nodes; m++) {
        const IrNode *n = nodes[m];
        bool seen = false; /* one entry per TF node */
        for (int j = 0; j < m && !seen; j++)
            seen = nodes[j]->origin == n->origin ||
                   (nodes[j]->origin && n->origin && !strcmp(nodes[j]->origin, n->origin));
        if (seen)
            continue;
        cg_comment_text(n->origin ? n->origin : "?", text, sizeof text);
        cg_comment_text(n->origin_op ? n->origin_op : "?", op, sizeof op);
        cg_printf(o, "%s'%s' (%s)", shown++ ? ", " : "", text, op);
    }
    cg_printf(o, "\n");
}

/* The step kinds of the plan (NAME_cuda_plan.h). */
static const char plan_types[] =
    "#ifndef TCRT_CUDA_PLAN_TYPES\n"
    "#define TCRT_CUDA_PLAN_TYPES\n"
    "/* One step of a GPU schedule.  KERNEL: launch `name` from NAME.cu with\n"
    " * grid x block threads, arguments the buffers of nodes in[0..n_in) then\n"
    " * out.  GEMM: cublasGemmEx-style matmul, CONV: cuDNN convolution; params\n"
    " * holds the node's p.i (layouts: runtime/include/tcrt_kernels.h\n"
    " * TCRT_MM_*, TCRT_CONV_*), dims[0..8) the first input's shape, dims2 the\n"
    " * second's.  SEND/RECV: a copy between devices keyed by `key`. */\n"
    "enum { TCRT_CUDA_KERNEL = 1, TCRT_CUDA_GEMM = 2, TCRT_CUDA_CONV = 3, TCRT_CUDA_SEND = 4, TCRT_CUDA_RECV = 5 };\n"
    "typedef struct tcrt_cuda_step {\n"
    "    int kind;\n"
    "    const char *name;       /* kernel, or the library call to make */\n"
    "    const char *node;       /* TF node */\n"
    "    const char *op;         /* IR op */\n"
    "    const char *device;\n"
    "    long long grid, block;  /* KERNEL */\n"
    "    int n_in;\n"
    "    int in[8];              /* node ids of the input buffers */\n"
    "    int out;                /* node id of the output buffer */\n"
    "    int dtype;              /* tcrt_dtype of the output */\n"
    "    long long dims[8], dims2[8], out_dims[8];\n"
    "    int rank, rank2, out_rank;\n"
    "    long long params[16];\n"
    "    const char *key;        /* SEND/RECV */\n"
    "} tcrt_cuda_step;\n"
    "#endif\n\n";

typedef struct Ctx {
    const IrGraph *g;
    const CgOptions *opt;
    CgOut cu, plan;
    int *pos;
    int n_steps, n_kernels;
    Status *st;
} Ctx;

static const char *nm(const IrNode *n)
{
    return n->origin ? n->origin : "?";
}

static void dims_str(CgOut *o, const IrShape *s)
{
    cg_printf(o, "{");
    for (int d = 0; d < s->rank && d < 8; d++)
        cg_printf(o, "%s%lld", d ? ", " : "", (long long)s->dims[d]);
    cg_printf(o, "}");
}

/* One row of the plan. */
static void plan_step(Ctx *c, const char *kind, const char *name, const IrNode *n, int64_t grid, const IrValue *in,
                      int n_in, const char *key)
{
    CgOut *o = &c->plan;
    cg_printf(o, "    {.kind = %s, .name = ", kind);
    cg_c_string(o->f, name);
    cg_printf(o, ", .node = ");
    cg_c_string(o->f, nm(n));
    cg_printf(o, ", .op = \"%s\", .device = ", ir_op_name(n->op));
    cg_c_string(o->f, n->device ? n->device : "");
    cg_printf(o, ",\n     ");
    if (grid > 0)
        cg_printf(o, ".grid = %lld, .block = %d, ", (long long)grid, CGU_BLOCK);
    cg_printf(o, ".n_in = %d, .in = {", n_in > 8 ? 8 : n_in);
    for (int i = 0; i < n_in && i < 8; i++)
        cg_printf(o, "%s%d", i ? ", " : "", in[i].node->id);
    cg_printf(o, "}, .out = %d, .dtype = %s,\n     ", n->id, cg_dtype_enum(n->out[0].type.dtype));
    if (n_in > 0) {
        const IrShape *s = &ir_value_type(in[0])->shape;
        cg_printf(o, ".rank = %d, .dims = ", s->rank);
        dims_str(o, s);
        cg_printf(o, ", ");
    }
    if (n_in > 1) {
        const IrShape *s = &ir_value_type(in[1])->shape;
        cg_printf(o, ".rank2 = %d, .dims2 = ", s->rank);
        dims_str(o, s);
        cg_printf(o, ", ");
    }
    cg_printf(o, ".out_rank = %d, .out_dims = ", n->out[0].type.shape.rank);
    dims_str(o, &n->out[0].type.shape);
    if (!strcmp(kind, "TCRT_CUDA_GEMM") || !strcmp(kind, "TCRT_CUDA_CONV")) {
        cg_printf(o, ",\n     .params = {");
        for (int i = 0; i < 16; i++)
            cg_printf(o, "%s%lld", i ? ", " : "", (long long)n->p.i[i]);
        cg_printf(o, "}");
    }
    if (key) {
        cg_printf(o, ", .key = ");
        cg_c_string(o->f, key);
    }
    cg_printf(o, "},\n");
    c->n_steps++;
}

/* The GPU-placed node n (not fused, not a leaf): its kernel or plan step. */
static bool emit_node(Ctx *c, const IrNode *n)
{
    const OpInfo *oi = ir_op_info(n->op);
    char kname[200];
    int64_t grid = 0;
    const char *model = c->opt->name;
    if (oi->kind == K_ELEM) {
        CgcElemGroup grp;
        if (!cg_elem_group_build(c->g, n, c->pos, &grp, c->st))
            return false;
        size_t len = (size_t)snprintf(kname, sizeof kname, "%s_k%03d", model, c->pos[n->id]);
        for (int i = 0; i < grp.n_members; i++) {
            const char *op = ir_op_name(grp.members[i]->op);
            if (len + strlen(op) + 6 >= sizeof kname - 1) {
                snprintf(kname + len, sizeof kname - len, "_etc");
                break;
            }
            len += (size_t)snprintf(kname + len, sizeof kname - len, "_%s", op);
        }
        bool ok = cgu_emit_elem(&c->cu, &grp, kname, &grid, c->st);
        if (ok)
            plan_step(c, "TCRT_CUDA_KERNEL", kname, n, grid, grp.ext, grp.n_ext, NULL);
        cg_elem_group_free(&grp);
        c->n_kernels += ok;
        return ok;
    }
    snprintf(kname, sizeof kname, "%s_k%03d_%s", model, c->pos[n->id], oi->name);
    switch (n->op) {
    case OP_COPY:
    case OP_ASSIGN: {
        IrValue src = n->inputs[n->op == OP_ASSIGN ? 1 : 0];
        if (!cgu_emit_copy(&c->cu, n, src, kname, &grid, c->st))
            return false;
        plan_step(c, "TCRT_CUDA_KERNEL", kname, n, grid, &src, 1, NULL);
        c->n_kernels++;
        return true;
    }
    case OP_SEND:
    case OP_RECV:
        plan_step(c, n->op == OP_SEND ? "TCRT_CUDA_SEND" : "TCRT_CUDA_RECV", n->op == OP_SEND ? "send" : "recv", n,
                  0, n->inputs, n->n_inputs, n->key ? n->key : "");
        return true;
    case OP_MATMUL:
        plan_step(c, "TCRT_CUDA_GEMM", "cublasGemmStridedBatchedEx", n, 0, n->inputs, n->n_inputs, NULL);
        return true;
    case OP_CONV2D:
        plan_step(c, "TCRT_CUDA_CONV",
                  n->n_inputs > 2 ? "cudnnConvolutionBiasActivationForward" : "cudnnConvolutionForward", n, 0,
                  n->inputs, n->n_inputs, NULL);
        return true;
    default:
        break;
    }
    if (cgu_is_reduce(n->op)) {
        if (!cgu_emit_reduce(&c->cu, n, kname, &grid, c->st))
            return false;
        plan_step(c, "TCRT_CUDA_KERNEL", kname, n, grid, n->inputs, 1, NULL);
        c->n_kernels++;
        return true;
    }
    return st_errorf(c->st, ST_UNSUPPORTED,
                     "no CUDA kernel for '%s' (node '%s' (%s) on %s): place it on the CPU with --device-map '%s=cpu:0'",
                     ir_op_name(n->op), nm(n), n->origin_op ? n->origin_op : "?", n->device, nm(n));
}

/* Whether n is placed on a GPU; false with st set when its device is
 * malformed or belongs to another task (those cannot be compiled here). */
static bool device_of(const IrNode *n, bool *is_gpu, Status *st)
{
    *is_gpu = false;
    if (!n->device || !n->device[0])
        return true;
    IrDevName d;
    if (!ir_dev_parse(n->device, &d))
        return st_errorf(st, ST_ERROR, "node '%s' (%s): malformed device '%s'", nm(n),
                         n->origin_op ? n->origin_op : "?", n->device);
    ir_dev_complete(&d, ir_dev_local_task());
    if (!ir_dev_same_task(&d, ir_dev_local_task()))
        return st_errorf(st, ST_ERROR,
                         "node '%s' (%s) is placed on %s, another task: this tfcc compiles one process "
                         "(/job:localhost/replica:0/task:0) and has no distributed runtime; use "
                         "--default-device cpu:0 or --device-map",
                         nm(n), n->origin_op ? n->origin_op : "?", n->device);
    *is_gpu = !strcmp(d.type, "GPU");
    return true;
}

bool cgu_emit_source(const IrGraph *g, const CgOptions *opt, FILE *cu, FILE *plan, int *n_kernels, Status *st)
{
    Ctx c;
    memset(&c, 0, sizeof c);
    c.g = g;
    c.opt = opt;
    c.cu.f = cu;
    c.plan.f = plan;
    c.st = st;
    int n_ids = g->next_id;
    IR_FOR_EACH(g, n) {
        if (n->id >= n_ids)
            n_ids = n->id + 1;
    }
    c.pos = xx_malloc(sizeof(int) * ((size_t)n_ids + 1));
    if (!c.pos)
        return st_errorf(st, ST_NOMEM, "cuda codegen: out of memory");
    int p = 0, n_gpu = 0;
    bool ok = true;
    IR_FOR_EACH(g, n) {
        c.pos[n->id] = p++;
        bool gpu = false;
        if (!(ok = device_of(n, &gpu, st)))
            break;
        n_gpu += gpu && n->op != OP_CONST;
    }
    if (ok && n_gpu == 0)
        ok = st_errorf(st, ST_ERROR,
                       "--emit cuda: no node of '%s' is placed on a GPU (use --default-device gpu:0 or "
                       "--device-map PATTERN=gpu:0)",
                       opt->name);
    if (!ok) {
        xx_free(c.pos);
        return false;
    }
    char src[512];
    cg_comment_text(opt->source_file ? opt->source_file : "?", src, sizeof src);
    cg_printf(&c.cu,
              "/* %s.cu - Generated by tfcc - DO NOT EDIT.\n"
              " * GPU kernels of %s (from %s) for NVRTC; the launch order, grids and\n"
              " * the cuBLAS/cuDNN calls are in %s_cuda_plan.h.  GPU code only: the\n"
              " * host runtime (CUDA driver loader, launches) is not written yet. */\n\n",
              opt->name, opt->name, src, opt->name);
    cg_printf(&c.cu, "%s", prelude);
    cg_printf(&c.plan,
              "/* %s_cuda_plan.h - Generated by tfcc - DO NOT EDIT.\n"
              " * The GPU steps of %s (from %s) in schedule order: kernels of %s.cu,\n"
              " * cuBLAS/cuDNN calls and copies between devices.  Not runnable yet: the\n"
              " * host runtime that executes this plan comes next. */\n"
              "#ifndef %s_CUDA_PLAN_H\n#define %s_CUDA_PLAN_H\n\n#include \"tcrt.h\"\n\n",
              opt->name, opt->name, src, opt->name, opt->name, opt->name);
    cg_printf(&c.plan, "%s", plan_types);
    cg_printf(&c.plan, "static const tcrt_cuda_step %s_cuda_steps[] = {\n", opt->name);
    IR_FOR_EACH(g, n) {
        bool gpu = false;
        (void)device_of(n, &gpu, st); /* checked above */
        if (!ok || !gpu || ir_op_info(n->op)->kind == K_LEAF || cg_is_fused(n))
            continue;
        ok = emit_node(&c, n);
    }
    if (c.n_steps == 0)
        cg_printf(&c.plan, "    {0},\n");
    cg_printf(&c.plan, "};\n#define %s_CUDA_NUM_STEPS %d\n#define %s_CUDA_NUM_KERNELS %d\n\n#endif\n", opt->name,
              c.n_steps, opt->name, c.n_kernels);
    xx_free(c.pos);
    if (ok && n_kernels)
        *n_kernels = c.n_kernels;
    return ok;
}
