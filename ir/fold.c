/* ir/fold.c - evaluates nodes at compile time (constant folding).
 *
 * Elementwise ops run their ops.def C expression, compiled here twice per op
 * (a double variant evd_<OP> and an int64 variant evi_<OP>) with the same
 * tcrt_elem.h helpers generated code uses, so folding and run time agree.
 * The domain is that of the output dtype (float -> double, else int64),
 * except comparisons/logic (F_BOOLOUT) and CAST, which evaluate in their
 * input's domain.  Inputs broadcast NumPy-style: each input gets strides
 * over the output index space (0 on broadcast dims) and an odometer walks
 * the output in C order.  COPY is a memcpy; every other op calls its
 * reference kernel from libtcrt on tensors wrapping the constants' data.
 * Results count against a per-graph budget (IR_MAX_FOLD_TOTAL_BYTES); once
 * it is spent only tiny results (shape arithmetic) fold, the rest run.
 * Integer add/sub/mul/neg/abs/square/pow whose exact result (bounded by the
 * double evaluation) leaves +-2^62 are not folded: int64 overflow is
 * undefined behaviour here, and run time computes them as generated code does.
 * Invariants: F_EFFECT and leaf ops are never folded; results are new CONST
 * nodes in g's arena (64-byte aligned data); inputs are never modified.
 */
#include "ir/ir.h"
#include "ir/ir_int.h"

#include <string.h>

#include "tcrt_elem.h"

/* ---- the expressions of ops.def, compiled ---- */

#define X(e, name, arity, nout, kind, shape, ref, expr, flags)                                    \
    static double evd_##e(double A, double B, double C)                                             \
    {                                                                                               \
        (void)A;                                                                                    \
        (void)B;                                                                                    \
        (void)C;                                                                                    \
        return (double)(expr);                                                                      \
    }                                                                                               \
    static int64_t evi_##e(int64_t A, int64_t B, int64_t C)                                         \
    {                                                                                               \
        (void)A;                                                                                    \
        (void)B;                                                                                    \
        (void)C;                                                                                    \
        return (int64_t)(expr);                                                                     \
    }
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wfloat-conversion"
#include "ir/ops.def"
#pragma GCC diagnostic pop
#undef X

typedef double (*EvalD)(double, double, double);
typedef int64_t (*EvalI)(int64_t, int64_t, int64_t);

static const EvalD eval_d[OP_COUNT] = {
#define X(e, name, arity, nout, kind, shape, ref, expr, flags) [OP_##e] = evd_##e,
#include "ir/ops.def"
#undef X
};
static const EvalI eval_i[OP_COUNT] = {
#define X(e, name, arity, nout, kind, shape, ref, expr, flags) [OP_##e] = evi_##e,
#include "ir/ops.def"
#undef X
};

static bool tensor_shape_ok(const tcrt_tensor *t)
{
    return t->rank >= 0 && t->rank <= TCRT_MAX_RANK && tcrt_tensor_count(t) >= 0;
}

bool ir_eval_elementwise(Op op, const tcrt_tensor *in, int n_in, tcrt_tensor *out, Status *st)
{
    const OpInfo *info = ir_op_info(op);
    if (!info || info->kind != K_ELEM || !info->c_expr)
        return st_errorf(st, ST_ERROR, "op %s is not elementwise", info ? info->name : "?");
    if (n_in != info->arity || n_in < 1 || n_in > 3)
        return st_errorf(st, ST_ERROR, "%s takes %d inputs, got %d", info->name, info->arity, n_in);
    if (!tensor_shape_ok(out) || !ir_dtype_is_numeric(out->dtype))
        return st_errorf(st, ST_ERROR, "%s: bad output tensor (dtype %s)", info->name,
                         tcrt_dtype_name(out->dtype));
    int64_t strides[3][TCRT_MAX_RANK];
    for (int i = 0; i < n_in; i++) {
        if (!tensor_shape_ok(&in[i]) || !ir_dtype_is_numeric(in[i].dtype) || in[i].rank > out->rank)
            return st_errorf(st, ST_ERROR, "%s: bad input tensor %d", info->name, i);
        /* right-aligned strides over the output index space, 0 where broadcast */
        int64_t s = 1;
        for (int d = out->rank - 1; d >= 0; d--) {
            int di = d - (out->rank - in[i].rank);
            int64_t dim = di >= 0 ? in[i].dims[di] : 1;
            if (dim != 1 && dim != out->dims[d])
                return st_errorf(st, ST_ERROR, "%s: input %d does not broadcast to the output", info->name, i);
            strides[i][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    /* evaluation domain */
    tcrt_dtype dom = out->dtype;
    if ((info->flags & F_BOOLOUT) || op == OP_CAST)
        dom = in[0].dtype;
    bool use_f = ir_dtype_is_float(dom);
    bool guard_div = op == OP_DIV || op == OP_FLOORDIV || op == OP_FLOORMOD;
    bool guard_ovf = op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_NEG || op == OP_ABS ||
                     op == OP_SQUARE || op == OP_POW;
    EvalD fd = eval_d[op];
    EvalI fi = eval_i[op];

    int64_t count = tcrt_tensor_count(out);
    int64_t idx[TCRT_MAX_RANK] = {0};
    int64_t off[3] = {0, 0, 0};
    for (int64_t k = 0; k < count; k++) {
        if (use_f) {
            double a[3] = {0, 0, 0};
            for (int i = 0; i < n_in; i++)
                a[i] = ir_load_f64(in[i].data, in[i].dtype, off[i]);
            ir_store_f64(out->data, out->dtype, k, fd(a[0], a[1], a[2]));
        } else {
            int64_t a[3] = {0, 0, 0};
            for (int i = 0; i < n_in; i++)
                a[i] = ir_load_i64(in[i].data, in[i].dtype, off[i]);
            int64_t r;
            if (guard_div && a[0] == INT64_MIN && a[1] == -1) {
                r = op == OP_FLOORMOD ? 0 : INT64_MIN;   /* wraps instead of trapping */
            } else {
                /* int64 overflow is undefined in C (and pow's double may not
                 * fit): the double evaluation bounds the exact result, and
                 * past 2^62 the node is left to run time (ST_UNSUPPORTED). */
                if (guard_ovf) {
                    double rd = fd((double)a[0], (double)a[1], (double)a[2]);
                    if (!(rd > -0x1p62 && rd < 0x1p62))
                        return st_errorf(st, ST_UNSUPPORTED, "%s: integer result out of range", info->name);
                }
                r = fi(a[0], a[1], a[2]);
            }
            ir_store_i64(out->data, out->dtype, k, r);
        }
        /* odometer step */
        for (int d = out->rank - 1; d >= 0; d--) {
            for (int i = 0; i < n_in; i++)
                off[i] += strides[i][d];
            if (++idx[d] < out->dims[d])
                break;
            for (int i = 0; i < n_in; i++)
                off[i] -= strides[i][d] * idx[d];
            idx[d] = 0;
        }
    }
    return true;
}

static tcrt_tensor wrap(const IrType *t, void *data)
{
    tcrt_tensor x;
    memset(&x, 0, sizeof x);
    x.data = data;
    x.dtype = t->dtype;
    x.rank = t->shape.rank;
    for (int d = 0; d < t->shape.rank; d++)
        x.dims[d] = t->shape.dims[d];
    return x;
}

bool ir_fold_node(IrGraph *g, IrNode *n, IrValue *outv, Status *st)
{
    const OpInfo *info = ir_op_info(n->op);
    if (!info || info->kind == K_LEAF || (info->flags & F_EFFECT))
        return false;
    if (n->n_outputs < 1 || n->n_outputs > 4 || n->n_inputs > 4096)
        return false;
    for (int i = 0; i < n->n_inputs; i++) {
        const IrNode *c = n->inputs[i].node;
        if (!c || c->op != OP_CONST || (!c->data && c->data_bytes))
            return false;
    }
    size_t total = 0;
    for (int k = 0; k < n->n_outputs; k++) {
        const IrType *t = &n->out[k].type;
        if (!ir_shape_count_checked(&t->shape, NULL) || !ir_dtype_is_numeric(t->dtype))
            return false;
        total += ir_type_bytes(t);
    }
    /* Per-graph budget: without it a few bytes of file (a chain of Adds on
     * a 64 MiB Fill) make gigabytes of constants. */
    if (total > IR_MAX_FOLD_BYTES ||
        (total > IR_FOLD_SMALL_BYTES &&
         (g->fold_bytes >= IR_MAX_FOLD_TOTAL_BYTES || total > IR_MAX_FOLD_TOTAL_BYTES - g->fold_bytes)))
        return false;

    tcrt_tensor inbuf[8], *in = inbuf;
    if (n->n_inputs > 8) {
        in = arena_alloc(&g->arena, sizeof(tcrt_tensor) * (size_t)n->n_inputs);
        if (!in)
            return st_errorf(st, ST_NOMEM, "out of memory");
    }
    for (int i = 0; i < n->n_inputs; i++)
        in[i] = wrap(&n->inputs[i].node->out[0].type, n->inputs[i].node->data);
    /* inputs must use output 0 of their CONST: the only output it has */
    tcrt_tensor out[4];
    void *data[4];
    for (int k = 0; k < n->n_outputs; k++) {
        size_t bytes = ir_type_bytes(&n->out[k].type);
        data[k] = arena_alloc_align(&g->arena, bytes, 64);
        if (!data[k])
            return st_errorf(st, ST_NOMEM, "out of memory");
        out[k] = wrap(&n->out[k].type, data[k]);
    }
    g->fold_bytes += total;

    if (info->kind == K_ELEM) {
        Status est = ST_INIT;
        if (!ir_eval_elementwise(n->op, in, n->n_inputs, &out[0], &est)) {
            if (est.code == ST_UNSUPPORTED)
                return false; /* integer overflow: not folded, computed at run time */
            return ir_node_errorf(st, n, "constant folding failed: %s", est.msg);
        }
    } else if (n->op == OP_COPY) {
        size_t bytes = ir_type_bytes(&n->out[0].type);
        if (bytes != ir_type_bytes(&n->inputs[0].node->out[0].type))
            return ir_node_errorf(st, n, "constant folding failed: copy size mismatch");
        if (bytes)
            memcpy(data[0], in[0].data, bytes);
    } else {
        if (!info->ref_kernel)
            return false;
        tcrt_params p;
        memset(&p, 0, sizeof p);
        memcpy(p.i, n->p.i, sizeof p.i);
        memcpy(p.f, n->p.f, sizeof p.f);
        tcrt_status ts = info->ref_kernel(in, n->n_inputs, out, n->n_outputs, &p);
        if (ts == TCRT_ERR_DTYPE || ts == TCRT_ERR_ARG)
            return false;   /* the kernel does not cover this case: keep the node */
        if (ts != TCRT_OK)
            return ir_node_errorf(st, n, "constant folding failed: %s (%s)", tcrt_status_str(ts),
                                  info->ref_kernel_name);
    }

    const char *so = g->cur_origin, *sop = g->cur_origin_op;
    g->cur_origin = n->origin;
    g->cur_origin_op = n->origin_op;
    bool ok = true;
    for (int k = 0; k < n->n_outputs && ok; k++) {
        IrNode *c = ir_const_node_take(g, &n->out[k].type, data[k], st);
        if (!c)
            ok = false;
        else
            outv[k] = (IrValue){c, 0};
    }
    g->cur_origin = so;
    g->cur_origin_op = sop;
    return ok;
}
