/* ir/shape.c - dtype checks and one shape rule per shape_rule name of ops.def.
 *
 * ir_infer_node(n) first derives output dtypes from the inputs and the op's
 * flags (ir_infer_dtypes), then calls the op's rule, which reads the input
 * types and n->p and writes n->out[*].type.shape.  Ops whose output shape is
 * "given" find it already stored in n->out[0] (rank -1 when the builder got
 * none) and only validate it against the inputs.  Every output element count
 * is then checked for overflow and IR_MAX_ELEMENTS.
 * Rules may normalize negative axes in n->p in place (idempotent), so the
 * kernels always see resolved axes.  Errors name the origin node:
 * "node 'x_y_sum' (Add): shapes [2] and [3] do not broadcast".
 * Invariants: rules never allocate and never touch anything but n->out and
 * axis normalization in n->p; running a rule twice gives the same result.
 */
#include "ir/ir.h"
#include "ir/ir_int.h"

#include <string.h>

#define BIG_PARAM ((int64_t)1 << 20)    /* bound on strides, dilations, window sizes */

static const IrType *in_t(const IrNode *n, int i)
{
    return &n->inputs[i].node->out[n->inputs[i].index].type;
}

static const IrShape *in_s(const IrNode *n, int i)
{
    return &in_t(n, i)->shape;
}

/* Shape strings for messages: each call site gets its own buffer. */
typedef struct ShapeBuf {
    char b[160];
} ShapeBuf;
#define SH(s) (ir_shape_str((s), (ShapeBuf){{0}}.b, sizeof(ShapeBuf)))

static bool need_given(IrNode *n, Status *st)
{
    const IrShape *s = &n->out[0].type.shape;
    if (s->rank < 0 || s->rank > IR_MAX_RANK)
        return ir_node_errorf(st, n, "output shape not given (or rank %d out of range)", s->rank);
    for (int d = 0; d < s->rank; d++)
        if (s->dims[d] < 0)
            return ir_node_errorf(st, n, "output shape %s has a negative dimension", SH(s));
    return true;
}

static bool too_many(IrNode *n, const IrShape *s, Status *st)
{
    return ir_node_errorf(st, n, "output shape %s has too many elements", SH(s));
}

static bool in_range(int64_t v, int64_t lo, int64_t hi)
{
    return v >= lo && v <= hi;
}

/* ---- dtypes ---- */

bool ir_infer_dtypes(IrNode *n, const IrType *given, Status *st)
{
    const OpInfo *info = ir_op_info(n->op);
    /* f16 and bf16 are storage types: the only op on them is a cast to or
     * from u16, which reinterprets the 16 bits (frontends build the numeric
     * conversions from integer and float ops). */
    bool to_storage = n->op == OP_CAST && given && (given->dtype == TCRT_F16 || given->dtype == TCRT_BF16);
    for (int i = 0; i < n->n_inputs; i++) {
        tcrt_dtype dt = in_t(n, i)->dtype;
        bool storage = dt == TCRT_F16 || dt == TCRT_BF16;
        if (n->op == OP_CAST && (storage || to_storage)) {
            tcrt_dtype other = storage ? (given ? given->dtype : TCRT_INVALID) : dt;
            if (other != TCRT_U16 || (storage && to_storage))
                return ir_node_errorf(st, n, "a cast from %s to %s: f16 and bf16 are only cast to and from u16 "
                                             "(a reinterpretation)", tcrt_dtype_name(dt),
                                      tcrt_dtype_name(given ? given->dtype : TCRT_INVALID));
            if (to_storage) {
                for (int k = 0; k < n->n_outputs; k++)
                    n->out[k].type.dtype = given->dtype;
            } else {
                for (int k = 0; k < n->n_outputs; k++)
                    n->out[k].type.dtype = TCRT_U16;
            }
            return true;
        }
        if (!ir_dtype_is_numeric(dt))
            return ir_node_errorf(st, n, "input %d has unsupported dtype %s", i, tcrt_dtype_name(dt));
    }
    if (info->kind == K_ELEM && n->op != OP_SELECT && n->n_inputs == 2 &&
        in_t(n, 0)->dtype != in_t(n, 1)->dtype)
        return ir_node_errorf(st, n, "input dtypes %s and %s differ",
                              tcrt_dtype_name(in_t(n, 0)->dtype), tcrt_dtype_name(in_t(n, 1)->dtype));
    if (n->op == OP_SELECT) {
        if (in_t(n, 0)->dtype != TCRT_BOOL)
            return ir_node_errorf(st, n, "select condition must be bool, got %s",
                                  tcrt_dtype_name(in_t(n, 0)->dtype));
        if (in_t(n, 1)->dtype != in_t(n, 2)->dtype)
            return ir_node_errorf(st, n, "select branches have dtypes %s and %s",
                                  tcrt_dtype_name(in_t(n, 1)->dtype), tcrt_dtype_name(in_t(n, 2)->dtype));
    }
    if (info->flags & F_FLOAT) {
        for (int i = 0; i < n->n_inputs; i++) {
            tcrt_dtype dt = in_t(n, i)->dtype;
            if (!ir_dtype_is_float(dt))
                return ir_node_errorf(st, n, "input %d must be float32 or float64, got %s", i,
                                      tcrt_dtype_name(dt));
        }
    }
    tcrt_dtype out;
    if ((info->flags & F_DTYPE_GIVEN) || n->n_inputs == 0) {
        out = given ? given->dtype : TCRT_INVALID;
        if (!ir_dtype_is_numeric(out) && !(n->op == OP_ARG && (out == TCRT_F16 || out == TCRT_BF16)))
            return ir_node_errorf(st, n, "output dtype %s not given or unsupported", tcrt_dtype_name(out));
    } else if (info->flags & F_BOOLOUT) {
        out = TCRT_BOOL;
    } else if (n->op == OP_SELECT) {
        out = in_t(n, 1)->dtype;
    } else {
        out = in_t(n, 0)->dtype;
    }
    for (int k = 0; k < n->n_outputs; k++)
        n->out[k].type.dtype = out;
    return true;
}

bool ir_infer_node(IrGraph *g, IrNode *n, Status *st)
{
    const OpInfo *info = ir_op_info(n->op);
    if (!info)
        return st_errorf(st, ST_ERROR, "invalid op %d", (int)n->op);
    if (info->n_outputs >= 0 && n->n_outputs != info->n_outputs)
        return ir_node_errorf(st, n, "has %d outputs, op %s has %d", n->n_outputs, info->name,
                              info->n_outputs);
    IrType given = n->out[0].type;
    if (info->n_outputs >= 0 && !ir_infer_dtypes(n, &given, st))
        return false;
    if (!(ir_dyn_involved(n) ? ir_dyn_infer(g, n, st) : info->shape_rule(g, n, st)))
        return false;
    for (int k = 0; k < n->n_outputs; k++) {
        const IrShape *s = &n->out[k].type.shape;
        if (s->rank < 0 || s->rank > IR_MAX_RANK)
            return ir_node_errorf(st, n, "output rank %d out of range [0,%d]", s->rank, IR_MAX_RANK);
        if (!ir_shape_count_checked(s, NULL))
            return too_many(n, s, st);
    }
    return true;
}

bool ir_broadcast_shapes(const IrShape *a, const IrShape *b, IrShape *out)
{
    if (a->rank < 0 || b->rank < 0 || a->rank > IR_MAX_RANK || b->rank > IR_MAX_RANK)
        return false;
    IrShape r = {0};
    memset(&r, 0, sizeof r);
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int d = 0; d < r.rank; d++) {
        int da = d - (r.rank - a->rank), db = d - (r.rank - b->rank);
        int64_t x = da >= 0 ? a->dims[da] : 1, y = db >= 0 ? b->dims[db] : 1;
        bool xd = da >= 0 && a->has_dyn && a->dyn_dim == da, yd = db >= 0 && b->has_dyn && b->dyn_dim == db;
        if (xd || yd) {
            /* a data-dependent extent broadcasts only against 1 or the same extent */
            if (xd && yd && !ir_aff_eq(&a->dyn, &b->dyn))
                return false;
            if ((xd && !yd && y != 1) || (yd && !xd && x != 1))
                return false;
            if (r.has_dyn)
                return false;
            r.dims[d] = xd ? x : y;
            r.has_dyn = true;
            r.dyn_dim = d;
            r.dyn = xd ? a->dyn : b->dyn;
            continue;
        }
        if (x == y || y == 1)
            r.dims[d] = x;
        else if (x == 1)
            r.dims[d] = y;
        else
            return false;
    }
    /* the extent must stay the outermost one with more than one element */
    for (int d = 0; r.has_dyn && d < r.dyn_dim; d++)
        if (r.dims[d] != 1)
            return false;
    *out = r;
    return true;
}

/* ---- rules ---- */

bool ir_shape_given(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!need_given(n, st))
        return false;
    if (n->op == OP_RANGE && n->out[0].type.shape.rank != 1)
        return ir_node_errorf(st, n, "range output must be 1-D, got %s", SH(&n->out[0].type.shape));
    return true;
}

bool ir_shape_same(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    (void)st;
    n->out[0].type.shape = *in_s(n, 0);
    return true;
}

bool ir_shape_broadcast(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    IrShape s = *in_s(n, 0);
    for (int i = 1; i < n->n_inputs; i++) {
        IrShape r = {0};
        if (!ir_broadcast_shapes(&s, in_s(n, i), &r))
            return ir_node_errorf(st, n, "shapes %s and %s do not broadcast", SH(&s), SH(in_s(n, i)));
        s = r;
    }
    n->out[0].type.shape = s;
    return true;
}

bool ir_shape_reduce(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrShape *x = in_s(n, 0);
    int64_t mask = n->p.i[TCRT_RED_MASK];
    bool keep = n->p.i[1] != 0;
    if (mask < 0 || (mask >> x->rank) != 0)
        return ir_node_errorf(st, n, "reduction axis mask 0x%llx out of range for input %s",
                              (unsigned long long)mask, SH(x));
    IrShape o = {0};
    memset(&o, 0, sizeof o);
    for (int d = 0; d < x->rank; d++) {
        if (mask & ((int64_t)1 << d)) {
            if (keep)
                o.dims[o.rank++] = 1;
        } else {
            o.dims[o.rank++] = x->dims[d];
        }
    }
    n->out[0].type.shape = o;
    return true;
}

bool ir_shape_argreduce(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrShape *x = in_s(n, 0);
    int64_t axis = n->p.i[TCRT_ARG_AXIS];
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis >= x->rank)
        return ir_node_errorf(st, n, "axis %lld out of range for input %s",
                              (long long)n->p.i[TCRT_ARG_AXIS], SH(x));
    n->p.i[TCRT_ARG_AXIS] = axis;
    tcrt_dtype dt = n->out[0].type.dtype;
    if (dt != TCRT_I32 && dt != TCRT_I64)
        return ir_node_errorf(st, n, "output dtype must be int32 or int64, got %s", tcrt_dtype_name(dt));
    IrShape o = {0};
    memset(&o, 0, sizeof o);
    for (int d = 0; d < x->rank; d++)
        if (d != axis)
            o.dims[o.rank++] = x->dims[d];
    n->out[0].type.shape = o;
    return true;
}

static bool same_input_dtypes(IrNode *n, Status *st)
{
    for (int i = 1; i < n->n_inputs; i++)
        if (in_t(n, i)->dtype != in_t(n, 0)->dtype)
            return ir_node_errorf(st, n, "input %d has dtype %s, input 0 has %s", i,
                                  tcrt_dtype_name(in_t(n, i)->dtype), tcrt_dtype_name(in_t(n, 0)->dtype));
    return true;
}

static bool check_act(IrNode *n, int64_t act, Status *st)
{
    if (!in_range(act, TCRT_ACT_NONE, TCRT_ACT_LEAKY))
        return ir_node_errorf(st, n, "unknown fused activation %lld", (long long)act);
    return true;
}

bool ir_shape_matmul(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (n->n_inputs != 2 && n->n_inputs != 3)
        return ir_node_errorf(st, n, "matmul takes 2 or 3 inputs, got %d", n->n_inputs);
    if (!same_input_dtypes(n, st))
        return false;
    tcrt_dtype dt = in_t(n, 0)->dtype;
    if (dt != TCRT_F32 && dt != TCRT_F64 && dt != TCRT_I32 && dt != TCRT_I64)
        return ir_node_errorf(st, n, "matmul does not support dtype %s", tcrt_dtype_name(dt));
    const IrShape *a = in_s(n, 0), *b = in_s(n, 1);
    if (a->rank < 2 || b->rank < 2)
        return ir_node_errorf(st, n, "matmul operands must have rank >= 2, got %s and %s", SH(a), SH(b));
    bool ta = n->p.i[TCRT_MM_TA] != 0, tb = n->p.i[TCRT_MM_TB] != 0;
    int64_t m = ta ? a->dims[a->rank - 1] : a->dims[a->rank - 2];
    int64_t k = ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
    int64_t kb = tb ? b->dims[b->rank - 1] : b->dims[b->rank - 2];
    int64_t nn = tb ? b->dims[b->rank - 2] : b->dims[b->rank - 1];
    if (k != kb)
        return ir_node_errorf(st, n,
                              "matmul shapes %s and %s do not match (transpose_a=%d, transpose_b=%d): "
                              "%lld != %lld",
                              SH(a), SH(b), ta, tb, (long long)k, (long long)kb);
    IrShape ba = *a, bb = *b, o;
    ba.rank -= 2;
    bb.rank -= 2;
    if (!ir_broadcast_shapes(&ba, &bb, &o))
        return ir_node_errorf(st, n, "matmul batch dimensions of %s and %s do not broadcast", SH(a), SH(b));
    o.dims[o.rank++] = m;
    o.dims[o.rank++] = nn;
    if (n->n_inputs == 3) {
        const IrShape *bias = in_s(n, 2);
        if (bias->rank != 1 || bias->dims[0] != nn)
            return ir_node_errorf(st, n, "bias shape %s does not match %lld output columns", SH(bias),
                                  (long long)nn);
    }
    if (!check_act(n, n->p.i[TCRT_MM_ACT], st))
        return false;
    n->out[0].type.shape = o;
    return true;
}

/* Output size of a window along one dim; false when the window does not fit. */
static bool window_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pa, int64_t pb, int64_t *out)
{
    int64_t eff = (k - 1) * d + 1;
    int64_t padded = in + pa + pb;
    if (k < 1 || padded < eff)
        return false;
    *out = (padded - eff) / s + 1;
    return true;
}

static bool check_window_params(IrNode *n, const int64_t *pos, int n_pos, const int64_t *pads, Status *st)
{
    for (int i = 0; i < n_pos; i++)
        if (!in_range(pos[i], 1, BIG_PARAM))
            return ir_node_errorf(st, n, "stride/dilation/window size %lld out of range [1,%lld]",
                                  (long long)pos[i], (long long)BIG_PARAM);
    for (int i = 0; i < 4; i++)
        if (!in_range(pads[i], 0, IR_MAX_ELEMENTS))
            return ir_node_errorf(st, n, "padding %lld out of range", (long long)pads[i]);
    return true;
}

bool ir_shape_conv2d(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (n->n_inputs < 2 || n->n_inputs > 4)
        return ir_node_errorf(st, n, "conv2d takes 2 to 4 inputs, got %d", n->n_inputs);
    if (!same_input_dtypes(n, st))
        return false;
    if (in_t(n, 0)->dtype != TCRT_F32)
        return ir_node_errorf(st, n, "conv2d supports float32 only, got %s",
                              tcrt_dtype_name(in_t(n, 0)->dtype));
    const IrShape *x = in_s(n, 0), *w = in_s(n, 1);
    const int64_t *p = n->p.i;
    /* Packed weights (passes/pack): [ceil(Cout/16),KH,KW,Cin,16] seen as HWIO
     * [KH,KW,Cin,Cout] for the checks below. */
    IrShape wv = {0}, xv = {0};
    int64_t proj_cout = 0;
    if (p[TCRT_CONV_PACKED] == TCRT_CONV_PACK_DWBLOCK) {
        /* a depthwise conv with fused 1x1 convs: checked as the depthwise
         * conv of the [N,H,W,Ce] input (expanded, or x) with filter
         * [KH,KW,Ce,1]; the output has Co channels with a projection */
        int64_t fuse = p[TCRT_CONV_FUSE], ce = p[TCRT_CONV_COUT], kh = p[TCRT_CONV_KH], kw = p[TCRT_CONV_KW];
        int64_t co = p[TCRT_CONV_PCOUT];
        int64_t want = x->rank == 4 ? tcrt_conv_dwblock_floats(fuse, x->dims[3], ce, kh, kw, co, NULL) : 0;
        if (!p[TCRT_CONV_DEPTHWISE] || w->rank != 1 || want <= 0 || w->dims[0] != want ||
            (!(fuse & TCRT_FUSE_EXPAND) && x->dims[3] != ce))
            return ir_node_errorf(st, n,
                                  "fused depthwise filter %s does not fit input %s with fuse bits %lld, %lld "
                                  "depthwise channels, a %lldx%lld window and %lld projected channels",
                                  SH(w), SH(x), (long long)fuse, (long long)ce, (long long)kh, (long long)kw,
                                  (long long)co);
        if (!check_act(n, p[TCRT_CONV_EACT], st) || !check_act(n, p[TCRT_CONV_PACT], st))
            return false;
        proj_cout = fuse & TCRT_FUSE_PROJECT ? co : 0;
        xv = *x;
        xv.dims[3] = ce;
        x = &xv;
        wv = ir_shape_make(4, (int64_t[]){kh, kw, ce, 1});
        w = &wv;
    } else if (p[TCRT_CONV_PACKED]) {
        int64_t co = p[TCRT_CONV_COUT];
        if (p[TCRT_CONV_DEPTHWISE] || w->rank != 5 || w->dims[4] != TCRT_PACK_NR || co <= 0 ||
            w->dims[0] != (co + TCRT_PACK_NR - 1) / TCRT_PACK_NR)
            return ir_node_errorf(st, n, "packed filter %s does not fit %lld output channels", SH(w),
                                  (long long)co);
        int64_t kh = w->dims[1], kw = w->dims[2];
        if (p[TCRT_CONV_PACKED] == TCRT_CONV_PACK_WINO || p[TCRT_CONV_PACKED] == TCRT_CONV_PACK_WINO4) {
            /* a 3x3 stride-1 filter's a x a transform */
            int64_t a = p[TCRT_CONV_PACKED] == TCRT_CONV_PACK_WINO ? 4 : 6;
            if (kh != a || kw != a || p[TCRT_CONV_SH] != 1 || p[TCRT_CONV_SW] != 1 || p[TCRT_CONV_DH] != 1 ||
                p[TCRT_CONV_DW] != 1)
                return ir_node_errorf(st, n,
                                      "Winograd filter %s needs a %lldx%lld transform, strides and "
                                      "dilations 1",
                                      SH(w), (long long)a, (long long)a);
            kh = kw = 3;
        } else if (p[TCRT_CONV_PACKED] != TCRT_CONV_PACK_DIRECT) {
            return ir_node_errorf(st, n, "unknown packed filter kind %lld", (long long)p[TCRT_CONV_PACKED]);
        }
        wv = ir_shape_make(4, (int64_t[]){kh, kw, w->dims[3], co});
        w = &wv;
    }
    if (x->rank != 4 || w->rank != 4)
        return ir_node_errorf(st, n, "conv2d needs a rank-4 input and filter, got %s and %s", SH(x), SH(w));
    int64_t pos[4] = {p[TCRT_CONV_SH], p[TCRT_CONV_SW], p[TCRT_CONV_DH], p[TCRT_CONV_DW]};
    int64_t pads[4] = {p[TCRT_CONV_PT], p[TCRT_CONV_PL], p[TCRT_CONV_PB], p[TCRT_CONV_PR]};
    if (!check_window_params(n, pos, 4, pads, st))
        return false;
    int64_t cout, x2s = p[TCRT_CONV_X2S];
    const IrShape *x2 = x2s && n->n_inputs == 4 ? in_s(n, 3) : NULL;
    if (x2s) {
        /* a conv pair: 1x1 unpadded convs of x and of x2 at stride x2s */
        if (x2s < 1 || x2s > BIG_PARAM || n->n_inputs != 4 || p[TCRT_CONV_DEPTHWISE] ||
            (p[TCRT_CONV_PACKED] && p[TCRT_CONV_PACKED] != TCRT_CONV_PACK_DIRECT))
            return ir_node_errorf(st, n,
                                  "conv pair (second-input stride %lld) needs 4 inputs, a plain or "
                                  "directly packed filter and stride >= 1",
                                  (long long)x2s);
        if (w->dims[0] != 1 || w->dims[1] != 1 || pads[0] || pads[1] || pads[2] || pads[3])
            return ir_node_errorf(st, n, "conv pair needs a 1x1 filter without padding, got %s", SH(w));
        if (x2->rank != 4 || x2->dims[0] != x->dims[0] || x2->dims[1] < 1 || x2->dims[2] < 1 ||
            w->dims[2] != x->dims[3] + x2->dims[3])
            return ir_node_errorf(st, n, "conv pair filter %s does not take inputs %s and %s", SH(w), SH(x),
                                  SH(x2));
        cout = w->dims[3];
    } else if (p[TCRT_CONV_DEPTHWISE]) {
        if (w->dims[2] != x->dims[3])
            return ir_node_errorf(st, n, "depthwise filter %s does not match %lld input channels of %s",
                                  SH(w), (long long)x->dims[3], SH(x));
        cout = w->dims[2] * w->dims[3];
    } else {
        if (w->dims[2] != x->dims[3])
            return ir_node_errorf(st, n, "filter %s expects %lld input channels, input %s has %lld", SH(w),
                                  (long long)w->dims[2], SH(x), (long long)x->dims[3]);
        cout = w->dims[3];
    }
    int64_t oh, ow;
    if (!window_out(x->dims[1], w->dims[0], pos[0], pos[2], pads[0], pads[2], &oh) ||
        !window_out(x->dims[2], w->dims[1], pos[1], pos[3], pads[1], pads[3], &ow))
        return ir_node_errorf(st, n, "filter %s (dilations %lld,%lld) does not fit input %s with padding "
                              "%lld,%lld,%lld,%lld",
                              SH(w), (long long)pos[2], (long long)pos[3], SH(x), (long long)pads[0],
                              (long long)pads[1], (long long)pads[2], (long long)pads[3]);
    if (n->n_inputs >= 3) {
        const IrShape *b = in_s(n, 2);
        if (b->rank != 1 || b->dims[0] != cout)
            return ir_node_errorf(st, n, "bias shape %s does not match %lld output channels", SH(b),
                                  (long long)cout);
    }
    if (!check_act(n, p[TCRT_CONV_ACT], st))
        return false;
    IrShape o = ir_shape_make(4, NULL);
    o.dims[0] = x->dims[0];
    o.dims[1] = oh;
    o.dims[2] = ow;
    o.dims[3] = proj_cout > 0 ? proj_cout : cout;
    if (x2 && ((x2->dims[1] - 1) / x2s + 1 != oh || (x2->dims[2] - 1) / x2s + 1 != ow))
        return ir_node_errorf(st, n, "conv pair input %s at stride %lld does not give the output %s", SH(x2),
                              (long long)x2s, SH(&o));
    if (n->n_inputs == 4 && !x2 && !ir_shape_eq(in_s(n, 3), &o))
        return ir_node_errorf(st, n, "residual shape %s does not match the output %s", SH(in_s(n, 3)),
                              SH(&o));
    n->out[0].type.shape = o;
    return true;
}

bool ir_shape_conv2d_transpose(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!need_given(n, st) || !same_input_dtypes(n, st))
        return false;
    const IrShape *dy = in_s(n, 0), *w = in_s(n, 1), *o = &n->out[0].type.shape;
    if (dy->rank != 4 || w->rank != 4 || o->rank != 4)
        return ir_node_errorf(st, n, "conv2d_transpose needs rank-4 gradient, filter and output, got %s, %s, %s",
                              SH(dy), SH(w), SH(o));
    const int64_t *p = n->p.i;
    int64_t pos[4] = {p[TCRT_CONV_SH], p[TCRT_CONV_SW], p[TCRT_CONV_DH], p[TCRT_CONV_DW]};
    int64_t pads[4] = {p[TCRT_CONV_PT], p[TCRT_CONV_PL], p[TCRT_CONV_PB], p[TCRT_CONV_PR]};
    if (!check_window_params(n, pos, 4, pads, st))
        return false;
    /* depthwise (TCRT_CONV_DEPTHWISE): w [KH,KW,C,M] and dy has C*M channels */
    int64_t cdy = p[TCRT_CONV_DEPTHWISE] ? w->dims[2] * w->dims[3] : w->dims[3];
    if (w->dims[2] != o->dims[3] || cdy != dy->dims[3] || o->dims[0] != dy->dims[0])
        return ir_node_errorf(st, n, "filter %s does not connect gradient %s to output %s", SH(w), SH(dy), SH(o));
    int64_t fh, fw;
    if (!window_out(o->dims[1], w->dims[0], pos[0], pos[2], pads[0], pads[2], &fh) ||
        !window_out(o->dims[2], w->dims[1], pos[1], pos[3], pads[1], pads[3], &fw) ||
        fh != dy->dims[1] || fw != dy->dims[2])
        return ir_node_errorf(st, n, "output shape %s is inconsistent with gradient %s for filter %s", SH(o),
                              SH(dy), SH(w));
    return true;
}

bool ir_shape_pool(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrShape *x = in_s(n, 0);
    if (x->rank != 4)
        return ir_node_errorf(st, n, "pooling needs a rank-4 NHWC input, got %s", SH(x));
    const int64_t *p = n->p.i;
    int64_t pos[4] = {p[TCRT_POOL_KH], p[TCRT_POOL_KW], p[TCRT_POOL_SH], p[TCRT_POOL_SW]};
    int64_t pads[4] = {p[TCRT_POOL_PT], p[TCRT_POOL_PL], p[TCRT_POOL_PB], p[TCRT_POOL_PR]};
    if (!check_window_params(n, pos, 4, pads, st))
        return false;
    int64_t oh, ow;
    if (!window_out(x->dims[1], pos[0], pos[2], 1, pads[0], pads[2], &oh) ||
        !window_out(x->dims[2], pos[1], pos[3], 1, pads[1], pads[3], &ow))
        return ir_node_errorf(st, n, "window %lldx%lld does not fit input %s", (long long)pos[0],
                              (long long)pos[1], SH(x));
    IrShape o = *x;
    o.dims[1] = oh;
    o.dims[2] = ow;
    n->out[0].type.shape = o;
    return true;
}

bool ir_shape_copy(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!need_given(n, st))
        return false;
    const IrShape *x = in_s(n, 0), *o = &n->out[0].type.shape;
    int64_t cx, co;
    if (!ir_shape_count_checked(o, &co))
        return too_many(n, o, st);
    if (!ir_shape_count_checked(x, &cx) || cx != co)
        return ir_node_errorf(st, n, "cannot reshape %s (%lld elements) to %s (%lld elements)", SH(x),
                              (long long)ir_shape_count(x), SH(o), (long long)co);
    return true;
}

bool ir_shape_transpose(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrShape *x = in_s(n, 0);
    IrShape o = *x;
    bool seen[IR_MAX_RANK] = {false};
    for (int d = 0; d < x->rank; d++) {
        int64_t q = n->p.i[TCRT_TR_PERM + d];
        if (q < 0 || q >= x->rank || seen[q]) {
            char buf[128];
            size_t k = 0;
            for (int e = 0; e < x->rank && k < sizeof buf; e++)
                k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", e ? "," : "",
                                      (long long)n->p.i[TCRT_TR_PERM + e]);
            return ir_node_errorf(st, n, "perm [%s] is not a permutation of %d axes", buf, x->rank);
        }
        seen[q] = true;
        o.dims[d] = x->dims[q];
    }
    n->out[0].type.shape = o;
    return true;
}

bool ir_shape_slice(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!need_given(n, st))
        return false;
    const IrShape *x = in_s(n, 0), *o = &n->out[0].type.shape;
    if (o->rank != x->rank)
        return ir_node_errorf(st, n, "slice output %s must have the rank of input %s", SH(o), SH(x));
    for (int d = 0; d < x->rank; d++) {
        int64_t b = n->p.i[TCRT_SL_BEGIN + d], s = n->p.i[TCRT_SL_STRIDE + d], c = o->dims[d];
        if (s == 0)
            return ir_node_errorf(st, n, "slice stride of dim %d is zero", d);
        if (c == 0)
            continue;
        bool ok = in_range(b, 0, x->dims[d] - 1) && in_range(s, -IR_MAX_ELEMENTS, IR_MAX_ELEMENTS);
        if (ok) {
            int64_t last = b + (c - 1) * s;
            ok = in_range(last, 0, x->dims[d] - 1);
        }
        if (!ok)
            return ir_node_errorf(st, n,
                                  "slice of dim %d out of range (begin %lld, stride %lld, count %lld, size %lld)",
                                  d, (long long)b, (long long)s, (long long)c, (long long)x->dims[d]);
    }
    return true;
}

bool ir_shape_pad(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrShape *x = in_s(n, 0);
    int64_t mode = n->p.i[TCRT_PAD_MODE];
    if (!in_range(mode, 0, 2))
        return ir_node_errorf(st, n, "unknown pad mode %lld", (long long)mode);
    IrShape o = *x;
    for (int d = 0; d < x->rank; d++) {
        int64_t b = n->p.i[2 * d], a = n->p.i[2 * d + 1];
        int64_t lim = mode == 0 ? IR_MAX_ELEMENTS : mode == 1 ? x->dims[d] - 1 : x->dims[d];
        if (!in_range(b, 0, lim) || !in_range(a, 0, lim))
            return ir_node_errorf(st, n, "padding %lld,%lld of dim %d out of range for %s (mode %lld)",
                                  (long long)b, (long long)a, d, SH(x), (long long)mode);
        o.dims[d] = x->dims[d] + b + a;
    }
    n->out[0].type.shape = o;
    return true;
}

bool ir_shape_concat(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!same_input_dtypes(n, st))
        return false;
    const IrShape *x = in_s(n, 0);
    int64_t axis = n->p.i[TCRT_CAT_AXIS];
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis >= x->rank)
        return ir_node_errorf(st, n, "concat axis %lld out of range for %s", (long long)n->p.i[TCRT_CAT_AXIS],
                              SH(x));
    n->p.i[TCRT_CAT_AXIS] = axis;
    IrShape o = *x;
    for (int i = 1; i < n->n_inputs; i++) {
        const IrShape *y = in_s(n, i);
        bool ok = y->rank == x->rank;
        for (int d = 0; d < x->rank && ok; d++)
            ok = d == axis || y->dims[d] == x->dims[d];
        if (!ok)
            return ir_node_errorf(st, n, "concat input %d shape %s does not match input 0 shape %s on axis %lld",
                                  i, SH(y), SH(x), (long long)axis);
        o.dims[axis] += y->dims[axis];
    }
    n->out[0].type.shape = o;
    return true;
}

static bool int_indices(IrNode *n, int i, Status *st)
{
    tcrt_dtype dt = in_t(n, i)->dtype;
    if (dt != TCRT_I32 && dt != TCRT_I64)
        return ir_node_errorf(st, n, "indices must be int32 or int64, got %s", tcrt_dtype_name(dt));
    return true;
}

bool ir_shape_gather(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!int_indices(n, 1, st))
        return false;
    const IrShape *x = in_s(n, 0), *ix = in_s(n, 1);
    int64_t axis = n->p.i[TCRT_GA_AXIS], batch = n->p.i[TCRT_GA_BATCH];
    if (axis < 0)
        axis += x->rank;
    if (batch < 0)
        batch += ix->rank;
    if (axis < 0 || axis >= x->rank)
        return ir_node_errorf(st, n, "gather axis %lld out of range for params %s",
                              (long long)n->p.i[TCRT_GA_AXIS], SH(x));
    if (batch < 0 || batch > axis || batch > ix->rank)
        return ir_node_errorf(st, n, "gather batch_dims %lld out of range (axis %lld, indices %s)",
                              (long long)n->p.i[TCRT_GA_BATCH], (long long)axis, SH(ix));
    for (int d = 0; d < batch; d++)
        if (x->dims[d] != ix->dims[d])
            return ir_node_errorf(st, n, "gather batch dimension %d differs: params %s, indices %s", d, SH(x),
                                  SH(ix));
    int rank = (int)(axis + (ix->rank - batch) + (x->rank - axis - 1));
    if (rank > IR_MAX_RANK)
        return ir_node_errorf(st, n, "gather result rank %d exceeds %d", rank, IR_MAX_RANK);
    n->p.i[TCRT_GA_AXIS] = axis;
    n->p.i[TCRT_GA_BATCH] = batch;
    IrShape o = {0};
    memset(&o, 0, sizeof o);
    for (int d = 0; d < axis; d++)
        o.dims[o.rank++] = x->dims[d];
    for (int d = (int)batch; d < ix->rank; d++)
        o.dims[o.rank++] = ix->dims[d];
    for (int d = (int)axis + 1; d < x->rank; d++)
        o.dims[o.rank++] = x->dims[d];
    n->out[0].type.shape = o;
    return true;
}

bool ir_shape_gather_nd(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!int_indices(n, 1, st))
        return false;
    const IrShape *x = in_s(n, 0), *ix = in_s(n, 1);
    if (ix->rank < 1)
        return ir_node_errorf(st, n, "gather_nd indices must have rank >= 1, got %s", SH(ix));
    int64_t q = ix->dims[ix->rank - 1];
    if (q < 0 || q > x->rank)
        return ir_node_errorf(st, n, "gather_nd index depth %lld exceeds params rank of %s", (long long)q, SH(x));
    int rank = ix->rank - 1 + x->rank - (int)q;
    if (rank > IR_MAX_RANK)
        return ir_node_errorf(st, n, "gather_nd result rank %d exceeds %d", rank, IR_MAX_RANK);
    IrShape o = {0};
    memset(&o, 0, sizeof o);
    for (int d = 0; d < ix->rank - 1; d++)
        o.dims[o.rank++] = ix->dims[d];
    for (int d = (int)q; d < x->rank; d++)
        o.dims[o.rank++] = x->dims[d];
    n->out[0].type.shape = o;
    return true;
}

bool ir_shape_tile(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!need_given(n, st))
        return false;
    const IrShape *x = in_s(n, 0), *o = &n->out[0].type.shape;
    bool ok = o->rank == x->rank;
    for (int d = 0; d < x->rank && ok; d++)
        ok = x->dims[d] == 0 ? o->dims[d] == 0 : o->dims[d] % x->dims[d] == 0;
    if (!ok)
        return ir_node_errorf(st, n, "tile output %s is not a multiple of input %s", SH(o), SH(x));
    return true;
}

bool ir_shape_broadcast_to(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!need_given(n, st))
        return false;
    const IrShape *x = in_s(n, 0), *o = &n->out[0].type.shape;
    IrShape r = {0};
    if (x->rank > o->rank || !ir_broadcast_shapes(x, o, &r) || !ir_shape_eq(&r, o))
        return ir_node_errorf(st, n, "cannot broadcast %s to %s", SH(x), SH(o));
    return true;
}

bool ir_shape_resize(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!need_given(n, st))
        return false;
    const IrShape *x = in_s(n, 0), *o = &n->out[0].type.shape;
    if (x->rank != 4 || o->rank != 4 || x->dims[0] != o->dims[0] || x->dims[3] != o->dims[3])
        return ir_node_errorf(st, n, "resize output %s must keep batch and channels of NHWC input %s", SH(o),
                              SH(x));
    if (!in_range(n->p.i[TCRT_RS_MODE], 0, 1))
        return ir_node_errorf(st, n, "unknown resize mode %lld", (long long)n->p.i[TCRT_RS_MODE]);
    return true;
}

bool ir_shape_topk(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrShape *x = in_s(n, 0);
    if (x->rank < 1)
        return ir_node_errorf(st, n, "topk needs an input of rank >= 1, got %s", SH(x));
    int64_t k = n->p.i[TCRT_TOPK_K];
    if (k < 0 || k > x->dims[x->rank - 1])
        return ir_node_errorf(st, n, "k = %lld out of range for input %s", (long long)k, SH(x));
    IrShape o = *x;
    o.dims[o.rank - 1] = k;
    n->out[0].type.shape = o;
    n->out[1].type.shape = o;
    n->out[1].type.dtype = TCRT_I32;
    return true;
}

/* Region ops (ir.h, "regions"): checks the regions' parameters and results
 * against the operands and sets the outputs. */
static bool types_match(const IrType *a, const IrType *b)
{
    return a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape);
}

static const char *type_str(const IrType *t, char *buf, size_t n)
{
    char sb[160];
    snprintf(buf, n, "%s%s", tcrt_dtype_name(t->dtype), ir_shape_str(&t->shape, sb, sizeof sb));
    return buf;
}

/* Region r's parameters must be the operands from index `first` on. */
static bool check_params(const IrNode *n, const IrGraph *r, int k, int first, Status *st)
{
    int m = n->n_inputs - first;
    if (r->n_feeds != m)
        return ir_node_errorf(st, n, "region %d has %d parameters, the op passes %d", k, r->n_feeds, m);
    for (int i = 0; i < m; i++) {
        const IrNode *a = r->feeds[i].arg;
        if (!a || a->op != OP_ARG || a->p.i[0] != i)
            return ir_node_errorf(st, n, "region %d: parameter %d is not its arg %d", k, i, i);
        if (!types_match(&a->out[0].type, in_t(n, first + i))) {
            char b1[200], b2[200];
            return ir_node_errorf(st, n, "region %d: parameter %d is %s, the operand is %s", k, i,
                                  type_str(&a->out[0].type, b1, sizeof b1), type_str(in_t(n, first + i), b2, sizeof b2));
        }
    }
    return true;
}

bool ir_shape_region(IrGraph *g, IrNode *n, Status *st)
{
    for (int k = 0; k < n->n_regions; k++) {
        const IrGraph *r = n->regions[k];
        if (!r || r->parent != g)
            return ir_node_errorf(st, n, "region %d does not belong to this graph", k);
        for (int i = 0; i < r->n_fetches; i++)
            if (!r->fetches[i].value.node)
                return ir_node_errorf(st, n, "region %d: result %d is undefined", k, i);
    }
    char b1[200], b2[200];
    if (n->op == OP_WHILE) {
        if (n->n_regions != 2)
            return ir_node_errorf(st, n, "while needs 2 regions (cond, body), has %d", n->n_regions);
        const IrGraph *c = n->regions[0], *b = n->regions[1];
        if (!check_params(n, c, 0, 0, st) || !check_params(n, b, 1, 0, st))
            return false;
        if (c->n_fetches != 1)
            return ir_node_errorf(st, n, "while cond has %d results, needs 1", c->n_fetches);
        const IrType *ct = ir_value_type(c->fetches[0].value);
        if (ct->dtype != TCRT_BOOL || ir_shape_count(&ct->shape) != 1)
            return ir_node_errorf(st, n, "while cond result is %s, needs a bool scalar", type_str(ct, b1, sizeof b1));
        if (b->n_fetches != n->n_inputs)
            return ir_node_errorf(st, n, "while body has %d results for %d loop variables", b->n_fetches,
                                  n->n_inputs);
        for (int i = 0; i < n->n_inputs; i++) {
            const IrType *bt = ir_value_type(b->fetches[i].value);
            if (!types_match(bt, in_t(n, i)))
                return ir_node_errorf(st, n, "loop variable %d enters as %s but the body makes it %s "
                                      "(loop variables keep their shape)",
                                      i, type_str(in_t(n, i), b1, sizeof b1), type_str(bt, b2, sizeof b2));
            n->out[i].type = *in_t(n, i);
        }
        return true;
    }
    /* COND */
    const IrType *sel = in_t(n, 0);
    if (ir_shape_count(&sel->shape) != 1 || (sel->dtype != TCRT_BOOL && sel->dtype != TCRT_I32))
        return ir_node_errorf(st, n, "cond selector is %s, needs a bool or int32 scalar",
                              type_str(sel, b1, sizeof b1));
    if (sel->dtype == TCRT_BOOL && n->n_regions != 2)
        return ir_node_errorf(st, n, "cond on a bool needs 2 branches, has %d", n->n_regions);
    const IrGraph *r0 = n->regions[0];
    if (n->n_outputs != r0->n_fetches)
        return ir_node_errorf(st, n, "cond has %d outputs, branch 0 %d results", n->n_outputs, r0->n_fetches);
    for (int k = 0; k < n->n_regions; k++) {
        const IrGraph *r = n->regions[k];
        if (!check_params(n, r, k, 1, st))
            return false;
        if (r->n_fetches != r0->n_fetches)
            return ir_node_errorf(st, n, "cond branches give %d and %d results", r0->n_fetches, r->n_fetches);
        for (int i = 0; i < r->n_fetches; i++) {
            const IrType *t0 = ir_value_type(r0->fetches[i].value), *t = ir_value_type(r->fetches[i].value);
            if (!types_match(t0, t))
                return ir_node_errorf(st, n, "cond result %d is %s in branch 0 but %s in branch %d", i,
                                      type_str(t0, b1, sizeof b1), type_str(t, b2, sizeof b2), k);
        }
    }
    for (int i = 0; i < n->n_outputs; i++)
        n->out[i].type = *ir_value_type(r0->fetches[i].value);
    return true;
}

bool ir_shape_update_slice(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrType *x = in_t(n, 0), *u = in_t(n, 1), *s = in_t(n, 2);
    if (u->dtype != x->dtype)
        return ir_node_errorf(st, n, "update dtype %s differs from %s", tcrt_dtype_name(u->dtype),
                              tcrt_dtype_name(x->dtype));
    if (u->shape.rank != x->shape.rank)
        return ir_node_errorf(st, n, "update %s and operand %s differ in rank", SH(&u->shape), SH(&x->shape));
    for (int d = 0; d < x->shape.rank; d++)
        if (u->shape.dims[d] > x->shape.dims[d])
            return ir_node_errorf(st, n, "update %s does not fit in %s", SH(&u->shape), SH(&x->shape));
    if ((s->dtype != TCRT_I32 && s->dtype != TCRT_I64) || s->shape.rank != 1 || s->shape.dims[0] != x->shape.rank)
        return ir_node_errorf(st, n, "start must be int32/int64 [%d], got %s%s", x->shape.rank,
                              tcrt_dtype_name(s->dtype), SH(&s->shape));
    n->out[0].type.shape = x->shape;
    return true;
}

/* nms: boxes [N,4], scores [N] (float32) -> indices i32 [M], scores f32 [M],
 * count i32 [], candidate order i32 [N]; M = p.i[TCRT_NMS_MAX_OUT]. */
bool ir_shape_nms(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrType *b = in_t(n, 0), *s = in_t(n, 1);
    if (b->dtype != TCRT_F32 || s->dtype != TCRT_F32)
        return ir_node_errorf(st, n, "nms boxes and scores must be float32, got %s and %s",
                              tcrt_dtype_name(b->dtype), tcrt_dtype_name(s->dtype));
    if (b->shape.rank != 2 || b->shape.dims[1] != 4)
        return ir_node_errorf(st, n, "nms boxes must be [N,4], got %s", SH(&b->shape));
    if (s->shape.rank != 1 || s->shape.dims[0] != b->shape.dims[0])
        return ir_node_errorf(st, n, "nms scores must be [%lld] (one per box), got %s",
                              (long long)b->shape.dims[0], SH(&s->shape));
    int64_t m = n->p.i[TCRT_NMS_MAX_OUT];
    if (m < 0 || m > IR_MAX_ELEMENTS)
        return ir_node_errorf(st, n, "nms max output size %lld out of range", (long long)m);
    double iou = n->p.f[TCRT_NMS_IOU];
    if (!(iou >= 0 && iou <= 1))
        return ir_node_errorf(st, n, "nms IoU threshold %g is not in [0, 1]", iou);
    if (b->shape.dims[0] > INT32_MAX)
        return ir_node_errorf(st, n, "nms has %lld boxes, more than int32 indices can hold",
                              (long long)b->shape.dims[0]);
    IrShape vec = {1, {m}}, scalar = {0, {0}}, all = {1, {b->shape.dims[0]}};
    n->out[0].type = (IrType){TCRT_I32, vec};
    n->out[1].type = (IrType){TCRT_F32, vec};
    n->out[2].type = (IrType){TCRT_I32, scalar};
    n->out[3].type = (IrType){TCRT_I32, all};
    return true;
}

bool ir_shape_reverse_seq(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrType *x = in_t(n, 0), *l = in_t(n, 1);
    int64_t sd = n->p.i[0], bd = n->p.i[1];
    if (sd < 0 || sd >= x->shape.rank || bd < 0 || bd >= x->shape.rank || sd == bd)
        return ir_node_errorf(st, n, "seq_dim %lld and batch_dim %lld must be distinct dims of %s", (long long)sd,
                              (long long)bd, SH(&x->shape));
    if (l->dtype != TCRT_I32 && l->dtype != TCRT_I64)
        return ir_node_errorf(st, n, "seq_lengths must be int32 or int64, got %s", tcrt_dtype_name(l->dtype));
    if (l->shape.rank != 1 || l->shape.dims[0] != x->shape.dims[bd])
        return ir_node_errorf(st, n, "seq_lengths must be [%lld] (one per batch_dim entry), got %s",
                              (long long)x->shape.dims[bd], SH(&l->shape));
    n->out[0].type = *x;
    return true;
}

bool ir_shape_where(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrType *x = in_t(n, 0);
    if (x->shape.rank < 1)
        return ir_node_errorf(st, n, "where needs an input of rank >= 1, got a scalar");
    int64_t count = ir_shape_count(&x->shape);
    n->out[0].type = (IrType){TCRT_I64, {2, {count, x->shape.rank}}};
    n->out[1].type = (IrType){TCRT_I64, {0, {0}}};
    return true;
}

/* variable: init must be a CONST (the initial value); the value has its
 * type.  assign: var must be a VARIABLE's output and value of its type. */
bool ir_shape_state(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrNode *v = n->inputs[0].node;
    if (n->op == OP_VARIABLE && v->op != OP_CONST)
        return ir_node_errorf(st, n, "variable's initial value must be a constant, got %s", ir_op_name(v->op));
    if (n->op == OP_ASSIGN) {
        if (v->op != OP_VARIABLE)
            return ir_node_errorf(st, n, "assign target must be a variable, got %s", ir_op_name(v->op));
        const IrType *x = in_t(n, 0), *u = in_t(n, 1);
        if (u->dtype != x->dtype || !ir_shape_eq(&u->shape, &x->shape))
            return ir_node_errorf(st, n, "assigns %s%s to variable '%s' of type %s%s", tcrt_dtype_name(u->dtype),
                                  SH(&u->shape), v->origin ? v->origin : "?", tcrt_dtype_name(x->dtype),
                                  SH(&x->shape));
    }
    n->out[0].type.shape = in_t(n, 0)->shape;
    return true;
}

/* ---- gradient primitives (ops.def "gradients") ---- */

/* conv2d_backprop_filter: x [N,H,W,C], dy [N,OH,OW,O] -> the given filter
 * shape [KH,KW,WI,WO]; the forward conv2d of x with that filter and p must
 * produce dy's shape. */
bool ir_shape_conv2d_backprop_filter(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!need_given(n, st) || !same_input_dtypes(n, st))
        return false;
    const IrShape *x = in_s(n, 0), *dy = in_s(n, 1), *w = &n->out[0].type.shape;
    if (x->rank != 4 || dy->rank != 4 || w->rank != 4)
        return ir_node_errorf(st, n, "conv2d_backprop_filter needs rank-4 input, gradient and filter, got %s, %s, %s",
                              SH(x), SH(dy), SH(w));
    const int64_t *p = n->p.i;
    if (p[TCRT_CONV_ACT] != TCRT_ACT_NONE || p[TCRT_CONV_PACKED])
        return ir_node_errorf(st, n, "conv2d_backprop_filter takes no activation or packed filter");
    int64_t pos[4] = {p[TCRT_CONV_SH], p[TCRT_CONV_SW], p[TCRT_CONV_DH], p[TCRT_CONV_DW]};
    int64_t pads[4] = {p[TCRT_CONV_PT], p[TCRT_CONV_PL], p[TCRT_CONV_PB], p[TCRT_CONV_PR]};
    if (!check_window_params(n, pos, 4, pads, st))
        return false;
    bool ok;
    if (p[TCRT_CONV_DEPTHWISE])
        ok = w->dims[2] == x->dims[3] && dy->dims[3] == x->dims[3] * w->dims[3];
    else
        ok = w->dims[2] > 0 && x->dims[3] % w->dims[2] == 0 && w->dims[3] == dy->dims[3] &&
             dy->dims[3] % (x->dims[3] / w->dims[2]) == 0;
    if (!ok || dy->dims[0] != x->dims[0])
        return ir_node_errorf(st, n, "filter %s does not connect input %s to gradient %s%s", SH(w), SH(x), SH(dy),
                              p[TCRT_CONV_DEPTHWISE] ? " (depthwise)" : "");
    int64_t oh, ow;
    if (!window_out(x->dims[1], w->dims[0], pos[0], pos[2], pads[0], pads[2], &oh) ||
        !window_out(x->dims[2], w->dims[1], pos[1], pos[3], pads[1], pads[3], &ow) || oh != dy->dims[1] ||
        ow != dy->dims[2])
        return ir_node_errorf(st, n, "gradient %s is inconsistent with input %s for filter %s", SH(dy), SH(x),
                              SH(w));
    return true;
}

/* Pool output spatial dims of input shape x under n's TCRT_POOL_* params. */
static bool pool_out_dims(IrNode *n, const IrShape *x, int64_t *oh, int64_t *ow, Status *st)
{
    const int64_t *p = n->p.i;
    int64_t pos[4] = {p[TCRT_POOL_KH], p[TCRT_POOL_KW], p[TCRT_POOL_SH], p[TCRT_POOL_SW]};
    int64_t pads[4] = {p[TCRT_POOL_PT], p[TCRT_POOL_PL], p[TCRT_POOL_PB], p[TCRT_POOL_PR]};
    if (!check_window_params(n, pos, 4, pads, st))
        return false;
    if (!window_out(x->dims[1], pos[0], pos[2], 1, pads[0], pads[2], oh) ||
        !window_out(x->dims[2], pos[1], pos[3], 1, pads[1], pads[3], ow))
        return ir_node_errorf(st, n, "window %lldx%lld does not fit input %s", (long long)pos[0],
                              (long long)pos[1], SH(x));
    return true;
}

static bool check_pool_grad(IrNode *n, const IrShape *x, const IrShape *dy, Status *st)
{
    if (x->rank != 4 || dy->rank != 4)
        return ir_node_errorf(st, n, "pooling gradient needs rank-4 NHWC input and gradient, got %s and %s", SH(x),
                              SH(dy));
    int64_t oh = 0, ow = 0;
    if (!pool_out_dims(n, x, &oh, &ow, st))
        return false;
    if (dy->dims[0] != x->dims[0] || dy->dims[1] != oh || dy->dims[2] != ow || dy->dims[3] != x->dims[3])
        return ir_node_errorf(st, n, "gradient %s does not match the pooled shape of %s ([%lld,%lld,%lld,%lld])",
                              SH(dy), SH(x), (long long)x->dims[0], (long long)oh, (long long)ow,
                              (long long)x->dims[3]);
    return true;
}

/* maxpool_grad: x, dy (maxpool(x)'s shape) -> x's shape. */
bool ir_shape_maxpool_grad(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!same_input_dtypes(n, st) || !check_pool_grad(n, in_s(n, 0), in_s(n, 1), st))
        return false;
    n->out[0].type.shape = *in_s(n, 0);
    return true;
}

/* avgpool_grad: dy -> the given forward input shape; pooling it gives dy's. */
bool ir_shape_avgpool_grad(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!need_given(n, st))
        return false;
    return check_pool_grad(n, &n->out[0].type.shape, in_s(n, 0), st);
}

/* scatter_add: updates [I..., R...], indices [I...] -> given [S, R...]. */
bool ir_shape_scatter_add(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    if (!need_given(n, st) || !int_indices(n, 1, st))
        return false;
    tcrt_dtype dt = in_t(n, 0)->dtype;
    if (dt != TCRT_F32 && dt != TCRT_F64 && dt != TCRT_I32 && dt != TCRT_I64)
        return ir_node_errorf(st, n, "scatter_add supports f32, f64, i32 and i64, got %s", tcrt_dtype_name(dt));
    const IrShape *u = in_s(n, 0), *ix = in_s(n, 1), *o = &n->out[0].type.shape;
    bool ok = o->rank >= 1 && u->rank == ix->rank + o->rank - 1;
    for (int d = 0; ok && d < ix->rank; d++)
        ok = u->dims[d] == ix->dims[d];
    for (int d = 1; ok && d < o->rank; d++)
        ok = u->dims[ix->rank + d - 1] == o->dims[d];
    if (!ok)
        return ir_node_errorf(st, n, "scatter_add updates %s do not match indices %s and output %s", SH(u), SH(ix),
                              SH(o));
    return true;
}

/* ---- communication (ops.def "communication between devices") ---- */

/* send: any value, same type out.  recv: its input must be a SEND's output
 * (the other half of the pair, same key); same type out.  allreduce: a
 * float32/float64 value, p.i[0] = 0 (mean); same type out. */
bool ir_shape_comm(IrGraph *g, IrNode *n, Status *st)
{
    (void)g;
    const IrNode *src = n->inputs[0].node;
    if (n->op == OP_RECV && src->op != OP_SEND)
        return ir_node_errorf(st, n, "recv must read a send, got %s", ir_op_name(src->op));
    if (n->op == OP_RECV && n->key && src->key && strcmp(n->key, src->key) != 0)
        return ir_node_errorf(st, n, "recv key '%s' differs from its send's '%s'", n->key, src->key);
    if (n->op == OP_ALLREDUCE && in_t(n, 0)->dtype != TCRT_F32 && in_t(n, 0)->dtype != TCRT_F64)
        return ir_node_errorf(st, n, "allreduce needs a float32 or float64 input, got %s",
                              tcrt_dtype_name(in_t(n, 0)->dtype));
    if (n->op == OP_ALLREDUCE && n->p.i[0] != 0)
        return ir_node_errorf(st, n, "allreduce: unknown reduction %lld (0: mean)", (long long)n->p.i[0]);
    n->out[0].type = *in_t(n, 0);
    return true;
}
