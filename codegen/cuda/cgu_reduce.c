/* codegen/cuda/cgu_reduce.c - CUDA kernels for reductions (kind K_REDUCE).
 *
 * reduce_sum/max/min/prod over any axis mask (p.i[0]) and argmax/argmin
 * (one axis): one block of CGU_BLOCK threads per output element
 * (grid-stride over the outputs when there are more than CGU_MAX_GRID).  The
 * input's dims are split at compile time into kept dims (the output's, in
 * order) and reduced dims, each with its input stride; block b decomposes
 * its output index into the kept dims' offset, thread t accumulates the
 * reduced elements t, t + CGU_BLOCK, ... (index decomposed over the reduced
 * dims), and a shared-memory tree combines the CGU_BLOCK partials.
 * Semantics follow runtime/kernels/ref_reduce.c (the oracle): floats
 * accumulate in double, max/min propagate NaN; integer sums and products
 * wrap in 64 bits; argmax/argmin: a NaN wins, then the larger (smaller)
 * value, ties to the lower index (the combine is order-independent, so the
 * tree gives the sequential answer).  Summation order differs from the
 * sequential loop (rounding may differ in the last bits).
 */
#include "codegen/cuda/cgu_int.h"

#include <string.h>

bool cgu_is_reduce(Op op)
{
    return op == OP_REDUCE_SUM || op == OP_REDUCE_MAX || op == OP_REDUCE_MIN || op == OP_REDUCE_PROD ||
           op == OP_ARGMAX || op == OP_ARGMIN;
}

typedef struct Dims {
    int n;
    int64_t size[IR_MAX_RANK], stride[IR_MAX_RANK];
    int64_t count;
} Dims;

/* Code computing `var` += offset of index `idx` decomposed over d (innermost first). */
static void emit_decompose(CgOut *o, const Dims *d, const char *idx, const char *var)
{
    if (d->n == 0)
        return;
    if (d->n == 1) {
        cg_printf(o, "%s += %s * %lldLL;\n", var, idx, (long long)d->stride[0]);
        return;
    }
    cg_printf(o, "{\n");
    o->indent++;
    cg_printf(o, "long long q = %s;\n", idx);
    for (int k = d->n - 1; k >= 0; k--) {
        if (k == 0)
            cg_printf(o, "%s += q * %lldLL;\n", var, (long long)d->stride[k]);
        else
            cg_printf(o, "%s += (q %% %lldLL) * %lldLL;\nq /= %lldLL;\n", var, (long long)d->size[k],
                      (long long)d->stride[k], (long long)d->size[k]);
    }
    o->indent--;
    cg_printf(o, "}\n");
}

/* Lowest and highest value of an integer C type, as literals. */
static void int_limits(tcrt_dtype dt, const char **lo, const char **hi)
{
    switch (dt) {
    case TCRT_I8: *lo = "(-128)"; *hi = "127"; break;
    case TCRT_I16: *lo = "(-32768)"; *hi = "32767"; break;
    case TCRT_I32: *lo = "(-2147483647 - 1)"; *hi = "2147483647"; break;
    case TCRT_I64: *lo = "(-9223372036854775807LL - 1)"; *hi = "9223372036854775807LL"; break;
    case TCRT_U16: *lo = "0"; *hi = "65535"; break;
    case TCRT_U32: *lo = "0"; *hi = "4294967295U"; break;
    case TCRT_U64: *lo = "0"; *hi = "18446744073709551615ULL"; break;
    default: *lo = "0"; *hi = "255"; break; /* u8, bool */
    }
}

bool cgu_emit_reduce(CgOut *o, const IrNode *n, const char *kname, int64_t *grid, Status *st)
{
    const char *who = n->origin ? n->origin : "?";
    const IrType *it = ir_value_type(n->inputs[0]), *ot = &n->out[0].type;
    tcrt_dtype dt = it->dtype;
    const char *ct = cg_c_type(dt), *oct = cg_c_type(ot->dtype);
    if (!ct || !oct || dt == TCRT_F16 || dt == TCRT_BF16)
        return st_errorf(st, ST_UNSUPPORTED, "node '%s' (%s): dtype %s not supported by the CUDA backend's %s",
                         who, n->origin_op ? n->origin_op : "?", tcrt_dtype_name(dt), ir_op_name(n->op));
    bool is_arg = n->op == OP_ARGMAX || n->op == OP_ARGMIN;
    int r = it->shape.rank;
    int64_t mask;
    if (is_arg) {
        int64_t axis = n->p.i[TCRT_ARG_AXIS];
        if (axis < 0)
            axis += r;
        if (axis < 0 || axis >= r)
            return st_errorf(st, ST_ERROR, "node '%s' (%s): axis %lld out of range for rank %d", who,
                             n->origin_op ? n->origin_op : "?", (long long)n->p.i[TCRT_ARG_AXIS], r);
        mask = (int64_t)1 << axis;
    } else {
        mask = n->p.i[TCRT_RED_MASK];
    }
    Dims kept = {0}, red = {0};
    kept.count = red.count = 1;
    int64_t stride = 1, strides[IR_MAX_RANK];
    for (int d = r - 1; d >= 0; d--) {
        strides[d] = stride;
        stride *= it->shape.dims[d];
    }
    for (int d = 0; d < r; d++) {
        Dims *t = (mask >> d) & 1 ? &red : &kept;
        t->count *= it->shape.dims[d];
        if (it->shape.dims[d] == 1)
            continue;
        t->size[t->n] = it->shape.dims[d];
        t->stride[t->n++] = strides[d];
    }
    if (kept.count != ir_shape_count(&ot->shape))
        return st_errorf(st, ST_ERROR, "node '%s' (%s): %lld outputs, the reduction gives %lld", who,
                         n->origin_op ? n->origin_op : "?", (long long)ir_shape_count(&ot->shape),
                         (long long)kept.count);
    bool is_float = dt == TCRT_F32 || dt == TCRT_F64;
    bool is_max = n->op == OP_REDUCE_MAX || n->op == OP_ARGMAX;
    bool is_sum = n->op == OP_REDUCE_SUM, is_prod = n->op == OP_REDUCE_PROD;
    /* accumulator type, identity, combine(acc, v) into acc */
    const char *acc_t, *ident;
    char combine[256];
    const char *lo, *hi;
    int_limits(dt, &lo, &hi);
    if (is_arg) {
        acc_t = is_float ? "double" : "long long";
        ident = "0";
    } else if (is_float) {
        acc_t = "double";
        ident = is_sum ? "0.0" : is_prod ? "1.0" : is_max ? "__longlong_as_double(0xfff0000000000000ULL)"
                                                           : "__longlong_as_double(0x7ff0000000000000ULL)";
    } else if (is_sum || is_prod) {
        acc_t = "unsigned long long";
        ident = is_sum ? "0" : "1";
    } else {
        acc_t = ct;
        ident = is_max ? lo : hi;
    }
    if (is_sum)
        snprintf(combine, sizeof combine, "acc += %s", is_float ? "v" : "(unsigned long long)v");
    else if (is_prod)
        snprintf(combine, sizeof combine, "acc *= %s", is_float ? "v" : "(unsigned long long)v");
    else if (is_float)
        snprintf(combine, sizeof combine, "if (v %c acc || v != v) acc = acc != acc ? acc : v", is_max ? '>' : '<');
    else
        snprintf(combine, sizeof combine, "if (v %c acc) acc = v", is_max ? '>' : '<');

    const IrNode *nodes[1] = {n};
    cgu_kernel_header(o, kname, nodes, 1);
    char t1[IR_MAX_RANK * 24 + 16], t2[IR_MAX_RANK * 24 + 16];
    cg_printf(o, "/*   a %s -> y %s: %s over axis mask 0x%llx; %lld outputs of %lld elements */\n",
              cg_type_str(it, t1, sizeof t1), cg_type_str(ot, t2, sizeof t2), ir_op_name(n->op),
              (unsigned long long)mask, (long long)kept.count, (long long)red.count);
    cg_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const %s *__restrict__ a, %s *__restrict__ y)\n{\n",
              CGU_BLOCK, kname, ct, oct);
    o->indent++;
    cg_printf(o, "__shared__ %s s[%d];\n", acc_t, CGU_BLOCK);
    if (is_arg)
        cg_printf(o, "__shared__ long long si[%d];\n", CGU_BLOCK);
    cg_printf(o, "const int t = threadIdx.x;\n");
    cg_printf(o, "for (long long out = blockIdx.x; out < %lldLL; out += gridDim.x) {\n", (long long)kept.count);
    o->indent++;
    cg_printf(o, "long long base = 0;\n");
    emit_decompose(o, &kept, "out", "base");
    if (is_arg) {
        /* (best value, its index); bi < 0: none yet */
        cg_printf(o, "%s best = 0;\nlong long bi = -1;\n", acc_t);
        cg_printf(o, "for (long long k = t; k < %lldLL; k += %d) {\n", (long long)red.count, CGU_BLOCK);
        o->indent++;
        cg_printf(o, "long long off = base;\n");
        emit_decompose(o, &red, "k", "off");
        cg_printf(o, "const %s v = (%s)a[off];\n", acc_t, acc_t);
        cg_printf(o, "if (bi < 0 || TCRT_CU_ARG_BETTER(%d, v, k, best, bi)) {\n", is_max ? 1 : 0);
        cg_printf(o, "    best = v;\n    bi = k;\n}\n");
        o->indent--;
        cg_printf(o, "}\n");
        cg_printf(o, "s[t] = best;\nsi[t] = bi;\n__syncthreads();\n");
        cg_printf(o, "for (int w = %d; w > 0; w >>= 1) {\n", CGU_BLOCK / 2);
        o->indent++;
        cg_printf(o, "if (t < w && si[t + w] >= 0 && (si[t] < 0 || TCRT_CU_ARG_BETTER(%d, s[t + w], si[t + w], s[t], si[t]))) {\n",
                  is_max ? 1 : 0);
        cg_printf(o, "    s[t] = s[t + w];\n    si[t] = si[t + w];\n}\n__syncthreads();\n");
        o->indent--;
        cg_printf(o, "}\n");
        cg_printf(o, "if (t == 0)\n    y[out] = (%s)(si[0] < 0 ? 0 : si[0]);\n", oct);
    } else {
        cg_printf(o, "%s acc = %s;\n", acc_t, ident);
        cg_printf(o, "for (long long k = t; k < %lldLL; k += %d) {\n", (long long)red.count, CGU_BLOCK);
        o->indent++;
        cg_printf(o, "long long off = base;\n");
        emit_decompose(o, &red, "k", "off");
        cg_printf(o, "const %s v = a[off];\n", is_float ? "double" : ct);
        cg_printf(o, "%s;\n", combine);
        o->indent--;
        cg_printf(o, "}\n");
        cg_printf(o, "s[t] = acc;\n__syncthreads();\n");
        cg_printf(o, "for (int w = %d; w > 0; w >>= 1) {\n", CGU_BLOCK / 2);
        o->indent++;
        cg_printf(o, "if (t < w) {\n");
        o->indent++;
        cg_printf(o, "const %s v = s[t + w];\n", acc_t);
        cg_printf(o, "acc = s[t];\n");
        if (is_sum || is_prod)
            cg_printf(o, "acc %s= v;\n", is_sum ? "+" : "*");
        else
            cg_printf(o, "%s;\n", combine);
        cg_printf(o, "s[t] = acc;\n");
        o->indent--;
        cg_printf(o, "}\n__syncthreads();\n");
        o->indent--;
        cg_printf(o, "}\n");
        cg_printf(o, "if (t == 0)\n    y[out] = (%s)s[0];\n", oct);
    }
    cg_printf(o, "__syncthreads();\n");
    o->indent--;
    cg_printf(o, "}\n");
    o->indent--;
    cg_printf(o, "}\n\n");
    *grid = kept.count < 1 ? 1 : kept.count > CGU_MAX_GRID ? CGU_MAX_GRID : kept.count;
    return true;
}
