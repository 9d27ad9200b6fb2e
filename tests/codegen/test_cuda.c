/* tests/codegen/test_cuda.c - the CUDA backend (codegen/cuda/), compile-only.
 *
 * Usage: test_cuda            structure of the emitted CUDA C (no CUDA needed)
 *        test_cuda nvrtc DIR  NVRTC compiles the emitted code for sm_80 and
 *                             sm_90: hand-built graphs (every elementwise op
 *                             of ir/ops.def over several dtypes, reductions)
 *                             and corpus models from DIR (../shared/models)
 *                             placed on gpu:0; exits 77 (SKIP) when NVRTC
 *                             cannot be loaded or DIR does not exist.
 * Expected texts (index expressions, strides, kernel bounds) are derived by
 * hand from the graphs below.  No numeric check: this machine has no GPU
 * (and no CUDA driver); the kernels are compiled, never run.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "passes/passes.h"
#include "tests/tfcc_inproc.h"
#include "tfcc_config.h"

#define GPU0 "/job:localhost/replica:0/task:0/device:GPU:0"
#define CPU0 "/job:localhost/replica:0/task:0/device:CPU:0"

static const char *models_dir;

/* Runs the pipeline with every node on default (gpu:0 unless given). */
static void place_and_run(IrGraph *g, const char *dev)
{
    Status st = ST_INIT;
    PassPlaceOptions po = {.default_device = dev ? dev : "gpu:0"};
    PipelineOptions o = {.place = &po};
    ck_assert_msg(pass_run_pipeline(g, &o, &st), "%s", st.msg);
}

/* The CUDA source (and plan) of g as malloc'ed strings; false with st set. */
static bool emit(const IrGraph *g, const char *name, char **cu, char **plan, int *n_kernels, Status *st)
{
    size_t n1, n2;
    FILE *f1 = open_memstream(cu, &n1), *f2 = open_memstream(plan, &n2);
    CgOptions co = {.name = name, .source_file = "test.pb"};
    bool ok = cgu_emit_source(g, &co, f1, f2, n_kernels, st);
    fclose(f1);
    fclose(f2);
    return ok;
}

/* needle in hay (on failure the haystack goes to stderr: Check's messages are short) */
#define HAS(hay, needle)                                                                           \
    do {                                                                                           \
        if (!strstr((hay), (needle)))                                                              \
            fprintf(stderr, "missing '%s' in:\n%s\n", (needle), (hay));                            \
        ck_assert_msg(strstr((hay), (needle)) != NULL, "missing '%.200s'", (needle));               \
    } while (0)

/* x f32[2,3] (feed); y = relu(x * 2 - bias), bias f32[3] = {1, 0.5, -1}. */
static IrGraph *elem_graph(void)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    ir_graph_set_origin(g, "x", "Placeholder");
    IrType xt = {TCRT_F32, ir_shape_make(2, (int64_t[]){2, 3})};
    IrValue x = ir_add_feed(g, "x:0", &xt, &st);
    ir_graph_set_origin(g, "two", "Const");
    IrValue two = ir_const_scalar_f(g, TCRT_F32, 2.0, &st);
    ir_graph_set_origin(g, "bias", "Const");
    IrShape s3 = ir_shape_make(1, (int64_t[]){3});
    IrValue bias = ir_const(g, TCRT_F32, &s3, (float[]){1.0f, 0.5f, -1.0f}, &st);
    ir_graph_set_origin(g, "mul", "Mul");
    IrValue m = ir_binary(g, OP_MUL, x, two, &st);
    ir_graph_set_origin(g, "sub", "Sub");
    IrValue s = ir_binary(g, OP_SUB, m, bias, &st);
    ir_graph_set_origin(g, "y", "Relu");
    IrValue y = ir_unary(g, OP_RELU, s, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_add_fetch(g, "y:0", y, &st));
    return g;
}

START_TEST(test_elem_broadcast)
{
    IrGraph *g = elem_graph();
    place_and_run(g, NULL);
    char *cu, *plan;
    int nk = 0;
    Status st = ST_INIT;
    ck_assert_msg(emit(g, "m", &cu, &plan, &nk, &st), "%s", st.msg);
    ck_assert_int_eq(nk, 1); /* mul, sub, relu fused into one kernel */
    /* one kernel over the 6 outputs; loops i0 (2) and i1 (3): x is affine
     * across both (stride 3, 1) but bias is not (0, 1), two is a scalar */
    HAS(cu, "// kernel m_k");
    HAS(cu, "_mul_sub_relu: nodes 'mul' (Mul), 'sub' (Sub), 'y' (Relu)\n");
    HAS(cu, "extern \"C\" __global__ void __launch_bounds__(256) m_k");
    HAS(cu, "_mul_sub_relu(const float *__restrict__ a, const float *__restrict__ b, const float *__restrict__ c, "
            "float *__restrict__ y)\n");
    HAS(cu, "for (int i = (int)blockIdx.x * blockDim.x + threadIdx.x; i < 6; i += (int)blockDim.x * gridDim.x) {\n");
    HAS(cu, "int r = i;\n");
    HAS(cu, "const int i1 = r % 3;\n");
    HAS(cu, "r /= 3;\n");
    HAS(cu, "const int i0 = r;\n");
    HAS(cu, "const float t0 = ((a[i0 * 3 + i1]) * (b[0]));\n");
    HAS(cu, "const float t1 = ((t0) - (c[i1]));\n");
    HAS(cu, "y[i] = ((t1) > 0 ? (t1) : 0);\n");
    /* the plan: one launch of 1 block, then the result's send to the host */
    HAS(plan, "{.kind = TCRT_CUDA_KERNEL, .name = \"m_k");
    HAS(plan, ".grid = 1, .block = 256, .n_in = 3,");
    HAS(plan, ".kind = TCRT_CUDA_SEND");
    HAS(plan, "#define m_CUDA_NUM_KERNELS 1\n");
    /* the plan is C11 that a runtime can include (system cc, warnings as errors) */
    char dir[] = "/tmp/tfcc-cuda-XXXXXX", path[128], cmd[600];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m_cuda_plan.h", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(plan, f);
    fclose(f);
    snprintf(path, sizeof path, "%s/use.c", dir);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("#include \"m_cuda_plan.h\"\n"
          "int main(void) { return m_cuda_steps[0].kind == TCRT_CUDA_KERNEL && m_CUDA_NUM_STEPS == 2 ? 0 : 1; }\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I'%s' -I'%s' '%s'", dir,
             TFCC_RUNTIME_INCLUDE, path);
    ck_assert_int_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    /* deterministic */
    char *cu2, *plan2;
    ck_assert(emit(g, "m", &cu2, &plan2, NULL, &st));
    ck_assert_str_eq(cu, cu2);
    ck_assert_str_eq(plan, plan2);
    free(cu);
    free(plan);
    free(cu2);
    free(plan2);
    ir_graph_free(g);
}
END_TEST

/* Every TCRT_* helper an ops.def expression uses is defined in the prelude. */
START_TEST(test_prelude_macros)
{
    IrGraph *g = elem_graph();
    place_and_run(g, NULL);
    char *cu, *plan;
    Status st = ST_INIT;
    ck_assert(emit(g, "m", &cu, &plan, NULL, &st));
    int n_macros = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        const char *e = ir_op_info((Op)op)->c_expr;
        for (const char *p = e ? strstr(e, "TCRT_") : NULL; p; p = strstr(p + 1, "TCRT_")) {
            char name[64], def[80];
            size_t n = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
            snprintf(name, sizeof name, "%.*s", (int)n, p);
            snprintf(def, sizeof def, "#define %s(", name);
            HAS(cu, def);
            n_macros++;
        }
    }
    ck_assert_int_ge(n_macros, 4); /* SIGN, DIV, FLOORDIV, FLOORMOD */
    free(cu);
    free(plan);
    ir_graph_free(g);
}
END_TEST

/* x f32[2,3,4]: s = reduce_sum over axes {0, 2} -> [3]; m = reduce_max over
 * axis 1 -> [2,4]; am = argmax over axis 2 (int64) -> [2,3]; xi i32[2,3,4]:
 * si = reduce_sum over axis 2 -> [2,3]. */
START_TEST(test_reduce)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    IrType xt = {TCRT_F32, ir_shape_make(3, (int64_t[]){2, 3, 4})};
    ir_graph_set_origin(g, "x", "Placeholder");
    IrValue x = ir_add_feed(g, "x:0", &xt, &st);
    IrType xit = {TCRT_I32, ir_shape_make(3, (int64_t[]){2, 3, 4})};
    ir_graph_set_origin(g, "xi", "Placeholder");
    IrValue xi = ir_add_feed(g, "xi:0", &xit, &st);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 5;
    ir_graph_set_origin(g, "s", "Sum");
    IrValue s = ir_emit1(g, OP_REDUCE_SUM, &x, 1, &p, NULL, &st);
    p.i[0] = 2;
    ir_graph_set_origin(g, "m", "Max");
    IrValue m = ir_emit1(g, OP_REDUCE_MAX, &x, 1, &p, NULL, &st);
    p.i[0] = 4;
    ir_graph_set_origin(g, "si", "Sum");
    IrValue si = ir_emit1(g, OP_REDUCE_SUM, &xi, 1, &p, NULL, &st);
    p.i[0] = 2;
    IrType amt = {TCRT_I64, ir_shape_make(2, (int64_t[]){2, 3})};
    ir_graph_set_origin(g, "am", "ArgMax");
    IrValue am = ir_emit1(g, OP_ARGMAX, &x, 1, &p, &amt, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_add_fetch(g, "s:0", s, &st) && ir_add_fetch(g, "m:0", m, &st) && ir_add_fetch(g, "si:0", si, &st) &&
              ir_add_fetch(g, "am:0", am, &st));
    place_and_run(g, NULL);
    char *cu, *plan;
    int nk = 0;
    ck_assert_msg(emit(g, "r", &cu, &plan, &nk, &st), "%s", st.msg);
    ck_assert_int_eq(nk, 4);
    /* s: kept dim 1 (3, stride 4); reduced dims 0 (2, stride 12) and 2 (4, stride 1) */
    HAS(cu, "_reduce_sum: nodes 's' (Sum)\n");
    HAS(cu, "a f32[2,3,4] -> y f32[3]: reduce_sum over axis mask 0x5; 3 outputs of 8 elements */\n");
    HAS(cu, "__shared__ double s[256];\n");
    HAS(cu, "for (long long out = blockIdx.x; out < 3LL; out += gridDim.x) {\n");
    HAS(cu, "base += out * 4LL;\n");
    HAS(cu, "for (long long k = t; k < 8LL; k += 256) {\n");
    HAS(cu, "off += (q % 4LL) * 1LL;\n"
            "                q /= 4LL;\n"
            "                off += q * 12LL;\n");
    HAS(cu, "for (int w = 128; w > 0; w >>= 1) {\n");
    /* m: kept dims 0 (2, stride 12) and 2 (4, stride 1); reduced dim 1 (3, stride 4); NaN propagates */
    HAS(cu, "a f32[2,3,4] -> y f32[2,4]: reduce_max over axis mask 0x2; 8 outputs of 3 elements */\n");
    HAS(cu, "base += (q % 4LL) * 1LL;\n"
            "            q /= 4LL;\n"
            "            base += q * 12LL;\n");
    HAS(cu, "double acc = __longlong_as_double(0xfff0000000000000ULL);\n");
    HAS(cu, "if (v > acc || v != v) acc = acc != acc ? acc : v;\n");
    /* si: integer sums wrap in 64 bits */
    HAS(cu, "__shared__ unsigned long long s[256];\n");
    HAS(cu, "acc += (unsigned long long)v;\n");
    HAS(cu, "y[out] = (int32_t)s[0];\n");
    /* am: (value, index) pairs, written as int64 */
    HAS(cu, "__shared__ long long si[256];\n");
    HAS(cu, "if (bi < 0 || TCRT_CU_ARG_BETTER(1, v, k, best, bi)) {\n");
    HAS(cu, "y[out] = (int64_t)(si[0] < 0 ? 0 : si[0]);\n");
    HAS(plan, ".grid = 8, .block = 256, .n_in = 1,");
    free(cu);
    free(plan);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_errors)
{
    /* an op without a CUDA kernel (transpose) */
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    IrType xt = {TCRT_F32, ir_shape_make(2, (int64_t[]){2, 3})};
    ir_graph_set_origin(g, "x", "Placeholder");
    IrValue x = ir_add_feed(g, "x:0", &xt, &st);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1;
    p.i[1] = 0;
    ir_graph_set_origin(g, "tr", "Transpose");
    IrValue t = ir_emit1(g, OP_TRANSPOSE, &x, 1, &p, NULL, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_add_fetch(g, "tr:0", t, &st));
    place_and_run(g, NULL);
    /* placement soft-places a transpose on the CPU (no GPU kernel); put it
     * on the GPU by hand to check codegen's own guard */
    ck_assert_str_eq(t.node->device, CPU0);
    t.node->device = GPU0;
    char *cu, *plan;
    ck_assert(!emit(g, "e", &cu, &plan, NULL, &st));
    ck_assert_str_eq(st.msg, "no CUDA kernel for 'transpose' (node 'tr' (Transpose) on " GPU0
                             "): place it on the CPU with --device-map 'tr=cpu:0'");
    free(cu);
    free(plan);
    ir_graph_free(g);

    /* nothing on a GPU */
    g = elem_graph();
    place_and_run(g, "cpu:0");
    st = (Status)ST_INIT;
    ck_assert(!emit(g, "e", &cu, &plan, NULL, &st));
    ck_assert_str_eq(st.msg, "--emit cuda: no node of 'e' is placed on a GPU (use --default-device gpu:0 or "
                             "--device-map PATTERN=gpu:0)");
    free(cu);
    free(plan);
    ir_graph_free(g);

    /* architectures */
    ck_assert(cgu_arch_valid("sm_80") && cgu_arch_valid("sm_90a") && cgu_arch_valid("sm_100f"));
    ck_assert(!cgu_arch_valid("sm80") && !cgu_arch_valid("compute_80") && !cgu_arch_valid("sm_") &&
              !cgu_arch_valid("sm_0") && !cgu_arch_valid("sm_90b"));
}
END_TEST

/* The driver: flags and the "no CUDA runtime" error without --emit cuda. */
START_TEST(test_driver_flags)
{
    Result r = tfcc("compile", "m.pb", "--cuda-arch", "sm80", "-o", "x", NULL);
    ck_assert_int_eq(r.rc, 2);
    ck_assert_str_eq(r.err, "error: --cuda-arch 'sm80': not a GPU architecture like sm_80 or sm_90a\n");
    result_free(&r);
    r = tfcc("compile", "m.pb", "--emit", "ptx", "-o", "x", NULL);
    ck_assert_int_eq(r.rc, 2);
    ck_assert_str_eq(r.err, "error: unknown --emit kind 'ptx' (exe, lib, obj, c or cuda)\n");
    result_free(&r);
}
END_TEST

/* ---- NVRTC (mode "nvrtc") ---------------------------------------------- */

/* Compiles cu for sm_80 and sm_90 (cubins: ELF, non-empty) and
 * compute_80 (PTX): every __global__ kernel of cu is a .entry. */
static void check_compiles(const char *cu, const char *file)
{
    static const char *const archs[] = {"sm_80", "sm_90", "compute_80"};
    for (int a = 0; a < 3; a++) {
        char *bin;
        size_t n;
        Status st = ST_INIT;
        ck_assert_msg(cgu_nvrtc_compile(cu, file, archs[a], &bin, &n, &st), "%s: %s", archs[a], st.msg);
        ck_assert_uint_gt(n, 64);
        if (a < 2) {
            ck_assert(!memcmp(bin, "\x7f" "ELF", 4));
        } else {
            int n_kernels = 0;
            for (const char *p = strstr(cu, "__global__ void __launch_bounds__(256) "); p;
                 p = strstr(p + 1, "__global__ void __launch_bounds__(256) ")) {
                const char *nm = p + strlen("__global__ void __launch_bounds__(256) ");
                char entry[300];
                snprintf(entry, sizeof entry, ".entry %.*s(", (int)strcspn(nm, "("), nm);
                ck_assert_msg(strstr(bin, entry), "%s not in the PTX", entry);
                n_kernels++;
            }
            ck_assert_int_gt(n_kernels, 0);
        }
        xx_free(bin);
    }
}

START_TEST(test_nvrtc_small)
{
    IrGraph *g = elem_graph();
    place_and_run(g, NULL);
    char *cu, *plan;
    Status st = ST_INIT;
    ck_assert(emit(g, "m", &cu, &plan, NULL, &st));
    check_compiles(cu, "m.cu");
    free(cu);
    free(plan);
    ir_graph_free(g);
}
END_TEST

/* Every elementwise op of ops.def, each its own kernel, over f32 and f64
 * (F_FLOAT ops) or f32, i32, i64, i8 and u8 (others); bool ops on bools;
 * casts between several types; reductions of every kind and dtype. */
START_TEST(test_nvrtc_all_ops)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    g->fold_on_build = false;
    static const tcrt_dtype dts[] = {TCRT_F32, TCRT_F64, TCRT_I32, TCRT_I64, TCRT_I8, TCRT_U8};
    IrValue a[6], b[6];
    for (int d = 0; d < 6; d++) {
        char nm[32];
        IrType t = {dts[d], ir_shape_make(2, (int64_t[]){3, 4})};
        IrType tb = {dts[d], ir_shape_make(1, (int64_t[]){4})};
        snprintf(nm, sizeof nm, "a%d:0", d);
        ir_graph_set_origin(g, nm, "Placeholder");
        a[d] = ir_add_feed(g, nm, &t, &st);
        snprintf(nm, sizeof nm, "b%d:0", d);
        ir_graph_set_origin(g, nm, "Placeholder");
        b[d] = ir_add_feed(g, nm, &tb, &st); /* broadcast along dim 0 */
    }
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    int n_fetch = 0;
    IrValue cond = {0};
    for (int op = 0; op < OP_COUNT; op++) {
        const OpInfo *oi = ir_op_info((Op)op);
        if (oi->kind != K_ELEM || op == OP_CAST || op == OP_SELECT)
            continue;
        bool is_bool = op == OP_NOT || op == OP_AND || op == OP_OR;
        for (int d = 0; d < 6; d++) {
            bool fl = dts[d] == TCRT_F32 || dts[d] == TCRT_F64;
            if ((oi->flags & F_FLOAT) && !fl)
                continue;
            IrValue x = a[d], y = b[d];
            if (is_bool) { /* on bools: x > 0, y > 0 */
                if (d > 0)
                    continue;
                IrValue z = ir_const_scalar_f(g, TCRT_F32, 0.0, &st);
                x = ir_binary(g, OP_GT, a[0], z, &st);
                y = ir_binary(g, OP_GT, b[0], z, &st);
            }
            char nm[64];
            snprintf(nm, sizeof nm, "%s_%s", oi->name, tcrt_dtype_name(dts[d]));
            ir_graph_set_origin(g, nm, oi->name);
            IrValue ins[2] = {x, y};
            IrValue v = ir_emit1(g, (Op)op, ins, oi->arity, NULL, NULL, &st);
            ck_assert_msg(st_ok(&st), "%s: %s", nm, st.msg);
            if (op == OP_GT && d == 0)
                cond = v;
            strcat(nm, ":0");
            ck_assert(ir_add_fetch(g, nm, v, &st));
            n_fetch++;
        }
    }
    ck_assert_int_gt(n_fetch, 100);
    /* select, casts */
    IrValue sel_in[3] = {cond, a[0], b[0]};
    ir_graph_set_origin(g, "select", "Select");
    ck_assert(ir_add_fetch(g, "select:0", ir_emit1(g, OP_SELECT, sel_in, 3, NULL, NULL, &st), &st));
    static const tcrt_dtype to[] = {TCRT_I32, TCRT_BOOL, TCRT_F64, TCRT_I8};
    for (int d = 0; d < 4; d++) {
        char nm[32];
        snprintf(nm, sizeof nm, "cast%d", d);
        ir_graph_set_origin(g, nm, "Cast");
        IrValue c = ir_cast(g, a[d], to[d], &st);
        strcat(nm, ":0");
        ck_assert(ir_add_fetch(g, nm, c, &st));
    }
    /* reductions of every kind over dim 0 and over everything */
    static const Op reds[] = {OP_REDUCE_SUM, OP_REDUCE_MAX, OP_REDUCE_MIN, OP_REDUCE_PROD, OP_ARGMAX, OP_ARGMIN};
    for (int r = 0; r < 6; r++)
        for (int d = 0; d < 6; d++) {
            IrParams p;
            memset(&p, 0, sizeof p);
            p.i[0] = reds[r] == OP_ARGMAX || reds[r] == OP_ARGMIN ? 0 : (d % 2 ? 3 : 1);
            IrType it = {TCRT_I32, ir_shape_make(1, (int64_t[]){4})};
            char nm[64];
            snprintf(nm, sizeof nm, "%s_%s", ir_op_name(reds[r]), tcrt_dtype_name(dts[d]));
            ir_graph_set_origin(g, nm, "Reduce");
            IrValue v = ir_emit1(g, reds[r], &a[d], 1, &p, reds[r] == OP_ARGMAX || reds[r] == OP_ARGMIN ? &it : NULL,
                                 &st);
            ck_assert_msg(st_ok(&st), "%s: %s", nm, st.msg);
            strcat(nm, ":0");
            ck_assert(ir_add_fetch(g, nm, v, &st));
        }
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    place_and_run(g, NULL);
    char *cu, *plan;
    int nk = 0;
    ck_assert_msg(emit(g, "ops", &cu, &plan, &nk, &st), "%s", st.msg);
    ck_assert_int_gt(nk, n_fetch);
    check_compiles(cu, "ops.cu");
    free(cu);
    free(plan);
    ir_graph_free(g);
}
END_TEST

/* A compile error names the kernel and its nodes (the marker above it). */
START_TEST(test_nvrtc_error)
{
    const char *src = "/* test */\n"
                      "// kernel k1: nodes 'n1' (Add), 'n2' (Relu)\n"
                      "extern \"C\" __global__ void k1(float *y)\n"
                      "{\n"
                      "    y[0] = undefined_thing;\n"
                      "}\n";
    char *bin;
    size_t n;
    Status st = ST_INIT;
    ck_assert(!cgu_nvrtc_compile(src, "bad.cu", "sm_80", &bin, &n, &st));
    HAS(st.msg, "NVRTC failed to compile bad.cu for sm_80 (NVRTC_ERROR_COMPILATION); in kernel k1: nodes 'n1' "
                "(Add), 'n2' (Relu):\n");
    HAS(st.msg, "bad.cu(5): error");
    HAS(st.msg, "undefined_thing");
}
END_TEST

/* Corpus models placed entirely on gpu:0 (ops without a CUDA kernel moved
 * to the CPU with --device-map), through the tfcc driver. */
typedef struct GpuModel {
    const char *file, *feed, *fetch, *map; /* map: --device-map value or NULL */
    int min_kernels;
} GpuModel;

static const GpuModel gpu_models[] = {
    /* matmuls (cuBLAS steps) + softmax: reduce_max, sub/exp, reduce_sum, div */
    {"github-ml-kws/DNN_S/DNN_S.pb", "Reshape:0:1x250", "labels_softmax", NULL, 4},
    {"github-ml-kws/CNN_S/CNN_S.pb", "Reshape:0:1x490", "labels_softmax", NULL, 4},
    /* depthwise convolutions (cuDNN steps), avgpool on the CPU */
    {"github-ml-kws/DS_CNN_S/DS_CNN_S.pb", "Reshape:0:1x490", "labels_softmax", "MobileNet/avg_pool/AvgPool=cpu:0", 4},
    /* a GRU over time steps: the while loop soft-placed on the CPU */
    {"github-ml-kws/CRNN_S/CRNN_S.pb", "Reshape:0:1x490", "labels_softmax", NULL, 4},
};

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    buf[len] = '\0';
    *n = (size_t)len;
    return buf;
}

START_TEST(test_nvrtc_models)
{
    const GpuModel *m = &gpu_models[_i];
    char model[1024], dir[64], path[1200];
    snprintf(model, sizeof model, "%s/%s", models_dir, m->file);
    snprintf(dir, sizeof dir, "/tmp/tfcc-cuda-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char out[128];
    snprintf(out, sizeof out, "%s/gm", dir);
    Result r = m->map ? tfcc("compile", model, "--feed", m->feed, "--fetch", m->fetch, "--default-device", "gpu:0",
                             "--device-map", m->map, "--emit", "cuda", "--cuda-arch", "sm_80,sm_90", "-o", out, NULL)
                      : tfcc("compile", model, "--feed", m->feed, "--fetch", m->fetch, "--default-device", "gpu:0",
                             "--emit", "cuda", "-o", out, NULL);
    ck_assert_msg(r.rc == 0, "%s: %s", m->file, r.err);
    HAS(r.out, "not runnable yet");
    result_free(&r);
    size_t n_cu, n_ptx, n_bin;
    snprintf(path, sizeof path, "%s/gm.cu", out);
    char *cu = slurp(path, &n_cu);
    snprintf(path, sizeof path, "%s/gm.ptx", out);
    char *ptx = slurp(path, &n_ptx);
    ck_assert_ptr_nonnull(cu);
    ck_assert_ptr_nonnull(ptx);
    HAS(ptx, ".target sm_80");
    int n_kernels = 0;
    const char *tag = "__global__ void __launch_bounds__(256) ";
    for (const char *p = strstr(cu, tag); p; p = strstr(p + 1, tag)) {
        const char *nm = p + strlen(tag);
        char entry[300];
        snprintf(entry, sizeof entry, ".entry %.*s(", (int)strcspn(nm, "("), nm);
        ck_assert_msg(strstr(ptx, entry), "%s: %s not in the PTX", m->file, entry);
        n_kernels++;
    }
    ck_assert_int_ge(n_kernels, m->min_kernels);
    static const char *const archs[] = {"sm_80", "sm_90"};
    for (int a = 0; a < 2; a++) {
        snprintf(path, sizeof path, "%s/gm_%s.cubin", out, archs[a]);
        char *bin = slurp(path, &n_bin);
        ck_assert_msg(bin && n_bin > 64 && !memcmp(bin, "\x7f" "ELF", 4), "%s: bad %s", m->file, path);
        /* every kernel name is in the cubin's string table */
        for (const char *p = strstr(cu, tag); p; p = strstr(p + 1, tag)) {
            const char *nm = p + strlen(tag);
            size_t len = strcspn(nm, "(");
            bool found = false;
            for (size_t i = 0; i + len <= n_bin && !found; i++)
                found = !memcmp(bin + i, nm, len) && bin[i + len] == '\0';
            ck_assert_msg(found, "%s: %.*s not in %s", m->file, (int)len, nm, path);
        }
        free(bin);
    }
    snprintf(path, sizeof path, "%s/gm_cuda_plan.h", out);
    size_t n_plan;
    char *plan = slurp(path, &n_plan);
    ck_assert_ptr_nonnull(plan);
    HAS(plan, "static const tcrt_cuda_step gm_cuda_steps[] = {\n");
    free(plan);
    free(cu);
    free(ptx);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(int argc, char **argv)
{
    bool nvrtc = argc > 1 && !strcmp(argv[1], "nvrtc");
    Suite *s = suite_create("cuda");
    TCase *tc = tcase_create("cuda");
    tcase_set_timeout(tc, 300);
    if (!nvrtc) {
        tcase_add_test(tc, test_elem_broadcast);
        tcase_add_test(tc, test_prelude_macros);
        tcase_add_test(tc, test_reduce);
        tcase_add_test(tc, test_errors);
        tcase_add_test(tc, test_driver_flags);
    } else {
        char why[512];
        if (!cgu_nvrtc_available(why, sizeof why)) {
            printf("SKIP: %s\n", why);
            return 77;
        }
        int major = 0, minor = 0;
        if (!cgu_nvrtc_version(&major, &minor))
            return 1;
        printf("NVRTC %d.%d\n", major, minor);
        models_dir = argc > 2 ? argv[2] : "../shared/models";
        struct stat sb;
        if (stat(models_dir, &sb) != 0) {
            printf("SKIP: %s not found\n", models_dir);
            return 77;
        }
        tcase_add_test(tc, test_nvrtc_small);
        tcase_add_test(tc, test_nvrtc_all_ops);
        tcase_add_test(tc, test_nvrtc_error);
        tcase_add_loop_test(tc, test_nvrtc_models, 0, (int)(sizeof gpu_models / sizeof gpu_models[0]));
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
