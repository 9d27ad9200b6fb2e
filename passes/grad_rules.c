/* passes/grad_rules.c - one gradient rule per primitive (a table indexed by Op).
 *
 * Each rule gets the adjoints of a node's outputs (dy) and writes those of
 * its inputs (dx) that need one (grad_int.h).  The formulas are TensorFlow's
 * (math_grad.py, nn_grad.py, array_grad.py), written over primitives:
 *   elementwise  y = f(a[, b]): dy * f'(...), returned in the output's shape
 *                (the builder sums broadcast axes back, grad_unbroadcast);
 *                max/min give ties to the first operand (a >= b / a <= b),
 *                pow's exponent gradient is 0 where the base is <= 0;
 *   reductions   sum: dy reshaped and broadcast; max/min: split evenly over
 *                the elements equal to the result (TF); prod: the product
 *                of the other elements (zeros handled by counting them);
 *   matmul       the four transpose cases of TF's _MatMulGrad, batch
 *                broadcast summed back; fused bias: sum over rows;
 *                a fused activation is undone from the output first;
 *   conv2d       input: conv2d_transpose (depthwise too, with the HWCM
 *                filter); filter: conv2d_backprop_filter;
 *                bias and residual inputs as for an add;
 *   pools        maxpool_grad / avgpool_grad;
 *   movement     copy: reshape; transpose: inverse perm; slice: pad (strided:
 *                interleaved with zeros, negative strides reversed first);
 *                pad (constant): slice; concat: slices; gather (batch_dims 0),
 *                gather_nd: scatter_add; tile: reshape + reduce_sum; broadcast:
 *                reduce.
 * Ops whose results carry no gradient (comparisons, logic, argmax, floor,
 * round, sign, random numbers, ranges, nms) are grad_nodiff.  Ops with no
 * entry are an error when they lie on a gradient path (topk, resize,
 * while, the gradient primitives themselves).
 * cond: a new cond whose branches differentiate the forward ones (g_cond).
 */
#include "passes/grad_int.h"

#include <math.h>
#include <string.h>

#define NONE ((IrValue){NULL, 0})

static IrValue in_v(const IrNode *n, int i)
{
    return n->inputs[i];
}

static const IrType *in_t(const IrNode *n, int i)
{
    return ir_value_type(n->inputs[i]);
}

static IrValue out_v(IrNode *n)
{
    return (IrValue){n, 0};
}

static tcrt_dtype dt_of(const IrNode *n)
{
    return n->out[0].type.dtype;
}

static IrValue cst(GradCtx *c, const IrNode *n, double v)
{
    return grad_scalar(c, dt_of(n), v);
}

bool grad_nodiff(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)c, (void)n, (void)dy, (void)need, (void)dx;
    return true;
}

/* ---- elementwise unary: dx = dy * f'(x) ---- */

#define UNARY_RULE(name, expr)                                                                               \
    static bool name(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)                \
    {                                                                                                        \
        (void)need;                                                                                          \
        IrValue x = in_v(n, 0), y = out_v(n), g = dy[0];                                                     \
        (void)x, (void)y;                                                                                    \
        dx[0] = (expr);                                                                                      \
        return dx[0].node != NULL;                                                                           \
    }

#define MUL(a, b) grad_bin(c, OP_MUL, (a), (b))
#define DIV(a, b) grad_bin(c, OP_DIV, (a), (b))
#define ADD(a, b) grad_bin(c, OP_ADD, (a), (b))
#define SUB(a, b) grad_bin(c, OP_SUB, (a), (b))
#define UN(op, a) grad_un(c, (op), (a))
#define K(v) cst(c, n, (v))

UNARY_RULE(g_neg, UN(OP_NEG, g))
UNARY_RULE(g_abs, MUL(g, UN(OP_SIGN, x)))
UNARY_RULE(g_exp, MUL(g, y))
UNARY_RULE(g_log, DIV(g, x))
UNARY_RULE(g_log1p, DIV(g, ADD(x, K(1))))
UNARY_RULE(g_sqrt, DIV(g, MUL(y, K(2))))
UNARY_RULE(g_rsqrt, MUL(g, MUL(K(-0.5), MUL(y, MUL(y, y)))))
UNARY_RULE(g_recip, UN(OP_NEG, MUL(g, MUL(y, y))))
UNARY_RULE(g_square, MUL(g, MUL(x, K(2))))
UNARY_RULE(g_sin, MUL(g, UN(OP_COS, x)))
UNARY_RULE(g_cos, UN(OP_NEG, MUL(g, UN(OP_SIN, x))))
UNARY_RULE(g_tan, MUL(g, ADD(K(1), MUL(y, y))))
UNARY_RULE(g_tanh, MUL(g, SUB(K(1), MUL(y, y))))
UNARY_RULE(g_sigmoid, MUL(g, MUL(y, SUB(K(1), y))))
UNARY_RULE(g_relu, grad_select(c, grad_bin(c, OP_GT, x, K(0)), g, K(0)))
UNARY_RULE(g_erf, MUL(g, MUL(K(1.1283791670955126), UN(OP_EXP, UN(OP_NEG, MUL(x, x))))))

/* cast between float types: the adjoint cast back; anything else passes none */
static bool g_cast(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    if (need[0] && (dt_of(n) == TCRT_F32 || dt_of(n) == TCRT_F64)) {
        IrType t = *in_t(n, 0);
        dx[0] = grad_emit(c, OP_CAST, &dy[0], 1, NULL, &t);
    }
    return st_ok(c->st);
}

/* ---- elementwise binary (results in the output's shape) ---- */

static bool g_add(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)c, (void)n, (void)need;
    dx[0] = dy[0];
    dx[1] = dy[0];
    return true;
}

static bool g_sub(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)n;
    dx[0] = dy[0];
    if (need[1])
        dx[1] = UN(OP_NEG, dy[0]);
    return st_ok(c->st);
}

static bool g_mul(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    if (need[0])
        dx[0] = MUL(dy[0], in_v(n, 1));
    if (need[1])
        dx[1] = MUL(dy[0], in_v(n, 0));
    return st_ok(c->st);
}

/* TF RealDiv: da = dy / b, db = dy * ((-a / b) / b) */
static bool g_div(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    IrValue a = in_v(n, 0), b = in_v(n, 1);
    if (need[0])
        dx[0] = DIV(dy[0], b);
    if (need[1])
        dx[1] = MUL(dy[0], DIV(DIV(UN(OP_NEG, a), b), b));
    return st_ok(c->st);
}

/* TF FloorMod: da = dy, db = dy * -floor(a / b) */
static bool g_floormod(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    dx[0] = dy[0];
    if (need[1])
        dx[1] = MUL(dy[0], UN(OP_NEG, grad_bin(c, OP_FLOORDIV, in_v(n, 0), in_v(n, 1))));
    return st_ok(c->st);
}

/* TF Pow: da = dy * b * a^(b-1); db = dy * y * (a > 0 ? log(a) : 0) */
static bool g_pow(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    IrValue a = in_v(n, 0), b = in_v(n, 1);
    if (need[0])
        dx[0] = MUL(dy[0], MUL(b, grad_bin(c, OP_POW, a, SUB(b, K(1)))));
    if (need[1]) {
        IrValue pos = grad_bin(c, OP_GT, a, K(0));
        IrValue safe = grad_select(c, pos, a, K(1));
        dx[1] = MUL(dy[0], MUL(out_v(n), grad_select(c, pos, UN(OP_LOG, safe), K(0))));
    }
    return st_ok(c->st);
}

/* TF _MaximumMinimumGrad: the first operand wins ties (a >= b, a <= b). */
static bool g_maxmin(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    IrValue a = in_v(n, 0), b = in_v(n, 1);
    IrValue first = grad_bin(c, n->op == OP_MAX ? OP_GE : OP_LE, a, b);
    /* the mask has the output's shape when a or b is broadcast */
    first = grad_broadcast_to(c, first, &n->out[0].type.shape);
    if (need[0])
        dx[0] = grad_select(c, first, dy[0], K(0));
    if (need[1])
        dx[1] = grad_select(c, first, K(0), dy[0]);
    return st_ok(c->st);
}

/* atan2(a, b): da = dy * b / (a^2 + b^2), db = dy * -a / (a^2 + b^2) */
static bool g_atan2(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    IrValue a = in_v(n, 0), b = in_v(n, 1);
    IrValue den = ADD(MUL(a, a), MUL(b, b));
    if (need[0])
        dx[0] = MUL(dy[0], DIV(b, den));
    if (need[1])
        dx[1] = MUL(dy[0], DIV(UN(OP_NEG, a), den));
    return st_ok(c->st);
}

static bool g_select(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    IrValue cond = grad_broadcast_to(c, in_v(n, 0), &n->out[0].type.shape);
    if (need[1])
        dx[1] = grad_select(c, cond, dy[0], K(0));
    if (need[2])
        dx[2] = grad_select(c, cond, K(0), dy[0]);
    return st_ok(c->st);
}

/* ---- reductions ---- */

/* x's shape with the reduced axes kept as 1 */
static IrShape keep_shape(const IrNode *n)
{
    IrShape s = in_t(n, 0)->shape;
    for (int d = 0; d < s.rank; d++)
        if (n->p.i[TCRT_RED_MASK] & ((int64_t)1 << d))
            s.dims[d] = 1;
    return s;
}

static bool g_reduce_sum(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)need;
    IrShape ks = keep_shape(n);
    dx[0] = grad_broadcast_to(c, grad_reshape(c, dy[0], &ks), &in_t(n, 0)->shape);
    return st_ok(c->st);
}

/* TF _MinOrMaxGrad: dy split evenly over the elements equal to the result */
static bool g_reduce_maxmin(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)need;
    IrShape ks = keep_shape(n);
    IrType ft = {dt_of(n), in_t(n, 0)->shape};
    IrValue eq = grad_bin(c, OP_EQ, in_v(n, 0), grad_reshape(c, out_v(n), &ks));
    IrValue ind = grad_emit(c, OP_CAST, &eq, 1, NULL, &ft);
    IrValue cnt = grad_reduce_sum(c, ind, n->p.i[TCRT_RED_MASK], true);
    dx[0] = MUL(ind, DIV(grad_reshape(c, dy[0], &ks), cnt));
    return st_ok(c->st);
}

/* d prod / d x_i = the product of the other elements, without dividing by
 * zero: with p = the product of the non-zero elements and z = the number of
 * zeros in x_i's reduction, it is p / x_i when z = 0, p at the zero when
 * z = 1, and 0 otherwise (TF gets the same with exclusive cumulative
 * products, which tfcc has no primitive for). */
static bool g_reduce_prod(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)need;
    IrShape ks = keep_shape(n);
    IrValue x = in_v(n, 0);
    int64_t mask = n->p.i[TCRT_RED_MASK];
    IrValue zero = grad_bin(c, OP_EQ, x, K(0));
    IrType ft = {dt_of(n), in_t(n, 0)->shape};
    IrValue zf = grad_emit(c, OP_CAST, &zero, 1, NULL, &ft);
    IrValue nz = grad_select(c, zero, K(1), x);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_RED_MASK] = mask;
    p.i[1] = 1;
    IrValue prod_nz = grad_emit(c, OP_REDUCE_PROD, &nz, 1, &p, NULL); /* keep-shaped */
    IrValue cnt = grad_reduce_sum(c, zf, mask, true);
    IrValue none = grad_bin(c, OP_EQ, cnt, K(0)), one = grad_bin(c, OP_EQ, cnt, K(1));
    IrValue others =
        grad_select(c, none, DIV(prod_nz, nz), grad_select(c, grad_bin(c, OP_AND, one, zero), prod_nz, K(0)));
    dx[0] = MUL(others, grad_reshape(c, dy[0], &ks));
    return st_ok(c->st);
}

/* ---- contractions ---- */

/* Undoes a fused activation: the adjoint of the pre-activation value. */
static IrValue act_back(GradCtx *c, IrNode *n, IrValue dy, int64_t act, double alpha)
{
    IrValue y = out_v(n);
    switch (act) {
    case TCRT_ACT_RELU:
        return grad_select(c, grad_bin(c, OP_GT, y, K(0)), dy, K(0));
    case TCRT_ACT_RELU6:
        return grad_select(c, grad_bin(c, OP_AND, grad_bin(c, OP_GT, y, K(0)), grad_bin(c, OP_LT, y, K(6))),
                           dy, K(0));
    case TCRT_ACT_LEAKY:
        return grad_select(c, grad_bin(c, OP_GT, y, K(0)), dy, MUL(dy, K(alpha)));
    default:
        return dy;
    }
}

static IrValue mm(GradCtx *c, IrValue a, IrValue b, bool ta, bool tb)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_MM_TA] = ta;
    p.i[TCRT_MM_TB] = tb;
    IrValue in[2] = {a, b};
    return grad_emit(c, OP_MATMUL, in, 2, &p, NULL);
}

/* TF _MatMulGrad; batch dims are summed back by the builder */
static bool g_matmul(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    IrValue a = in_v(n, 0), b = in_v(n, 1);
    bool ta = n->p.i[TCRT_MM_TA] != 0, tb = n->p.i[TCRT_MM_TB] != 0;
    IrValue g = act_back(c, n, dy[0], n->p.i[TCRT_MM_ACT], n->p.f[0]);
    if (need[0])
        dx[0] = !ta ? (!tb ? mm(c, g, b, false, true) : mm(c, g, b, false, false))
                    : (!tb ? mm(c, b, g, false, true) : mm(c, b, g, true, true));
    if (need[1])
        dx[1] = !tb ? (!ta ? mm(c, a, g, true, false) : mm(c, a, g, false, false))
                    : (!ta ? mm(c, g, a, true, false) : mm(c, g, a, true, true));
    if (n->n_inputs > 2 && need[2]) {
        int r = n->out[0].type.shape.rank;
        dx[2] = grad_reduce_sum(c, g, (((int64_t)1 << r) - 1) & ~((int64_t)1 << (r - 1)), false);
    }
    return st_ok(c->st);
}

static bool g_conv2d(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    if (n->p.i[TCRT_CONV_PACKED])
        return grad_fail(c, n, "packed filter (differentiate before the pack pass)");
    IrValue x = in_v(n, 0), w = in_v(n, 1);
    bool dwise = n->p.i[TCRT_CONV_DEPTHWISE] != 0;
    IrValue g = act_back(c, n, dy[0], n->p.i[TCRT_CONV_ACT], n->p.f[0]);
    IrParams q = n->p;
    q.i[TCRT_CONV_ACT] = 0;
    q.f[0] = 0;
    if (need[0]) {
        if (!dwise && in_t(n, 1)->shape.dims[2] != in_t(n, 0)->shape.dims[3])
            return grad_fail(c, n, "grouped convolution (input gradient)");
        IrValue in[2] = {g, w}; /* depthwise: conv2d_transpose takes the HWCM filter as it is */
        dx[0] = grad_emit(c, OP_CONV2D_TRANSPOSE, in, 2, &q, in_t(n, 0));
    }
    if (need[1]) {
        IrValue in[2] = {x, g};
        dx[1] = grad_emit(c, OP_CONV2D_BACKPROP_FILTER, in, 2, &q, in_t(n, 1));
    }
    if (n->n_inputs > 2 && need[2])
        dx[2] = grad_reduce_sum(c, g, 7, false);
    if (n->n_inputs > 3 && need[3])
        dx[3] = g;
    return st_ok(c->st);
}

/* y = conv2d_transpose(d, w): dd = conv2d(dy, w), dw = backprop_filter(dy, d) */
static bool g_conv2d_transpose(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    if (n->p.i[TCRT_CONV_DEPTHWISE] || n->p.i[TCRT_CONV_ACT])
        return grad_fail(c, n, "depthwise or fused-activation conv2d_transpose");
    if (need[0]) {
        IrValue in[2] = {dy[0], in_v(n, 1)};
        dx[0] = grad_emit(c, OP_CONV2D, in, 2, &n->p, NULL);
    }
    if (need[1]) {
        IrValue in[2] = {dy[0], in_v(n, 0)};
        dx[1] = grad_emit(c, OP_CONV2D_BACKPROP_FILTER, in, 2, &n->p, in_t(n, 1));
    }
    return st_ok(c->st);
}

/* ---- windows ---- */

static bool g_maxpool(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)need;
    IrValue in[2] = {in_v(n, 0), dy[0]};
    dx[0] = grad_emit(c, OP_MAXPOOL_GRAD, in, 2, &n->p, in_t(n, 0));
    return st_ok(c->st);
}

static bool g_avgpool(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)need;
    dx[0] = grad_emit(c, OP_AVGPOOL_GRAD, &dy[0], 1, &n->p, in_t(n, 0));
    return st_ok(c->st);
}

/* ---- movement ---- */

static bool g_copy(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)need;
    if (n->p.i[0] == 1)
        return true; /* a gradient stop (StopGradient): no gradient */
    dx[0] = grad_reshape(c, dy[0], &in_t(n, 0)->shape);
    return st_ok(c->st);
}

/* ReverseSequence is a permutation that is its own inverse: the same
 * reversal of dy (the lengths get no gradient). */
static bool g_reverse_seq(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    if (!need[0])
        return true;
    IrValue in[2] = {dy[0], in_v(n, 1)};
    dx[0] = grad_emit(c, OP_REVERSE_SEQ, in, 2, &n->p, NULL);
    return st_ok(c->st);
}

static bool g_transpose(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)need;
    int64_t inv[IR_MAX_RANK];
    int r = in_t(n, 0)->shape.rank;
    for (int d = 0; d < r; d++)
        inv[n->p.i[TCRT_TR_PERM + d]] = d;
    dx[0] = grad_transpose(c, dy[0], inv);
    return st_ok(c->st);
}

static IrValue pad_zero(GradCtx *c, IrValue a, const int64_t *before, const int64_t *after)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    bool any = false;
    for (int d = 0; d < ir_value_type(a)->shape.rank; d++) {
        p.i[2 * d] = before[d];
        p.i[2 * d + 1] = after[d];
        any |= before[d] || after[d];
    }
    return any ? grad_emit(c, OP_PAD, &a, 1, &p, NULL) : a;
}

/* Strided slice: per dim, reverse a negative stride, interleave a stride
 * s > 1 with s-1 zeros (reshape to [.., count, 1, ..], pad to s, merge,
 * trim), then one pad puts the result at its begin. */
static bool g_slice(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)need;
    const IrShape *xs = &in_t(n, 0)->shape, *os = &n->out[0].type.shape;
    if (ir_shape_count(os) == 0) {
        dx[0] = grad_fill(c, in_t(n, 0), 0);
        return st_ok(c->st);
    }
    int r = xs->rank;
    int64_t before[IR_MAX_RANK] = {0}, after[IR_MAX_RANK] = {0};
    IrValue cur = dy[0];
    for (int d = 0; d < r && cur.node; d++) {
        int64_t b = n->p.i[TCRT_SL_BEGIN + d], s = n->p.i[TCRT_SL_STRIDE + d], cnt = os->dims[d];
        if (s < 0) {
            IrParams p;
            memset(&p, 0, sizeof p);
            for (int e = 0; e < r; e++) {
                p.i[TCRT_SL_BEGIN + e] = e == d ? cnt - 1 : 0;
                p.i[TCRT_SL_STRIDE + e] = e == d ? -1 : 1;
            }
            cur = grad_emit(c, OP_SLICE, &cur, 1, &p, ir_value_type(cur));
            b += (cnt - 1) * s;
            s = -s;
        }
        if (cnt == 1)
            s = 1;
        int64_t ext = cnt;
        if (s > 1) {
            if (r + 1 > IR_MAX_RANK)
                return grad_fail(c, n, "strided slice of a rank-%d tensor", r);
            IrShape cs = ir_value_type(cur)->shape, wide = cs;
            /* [.., cnt, ..] -> [.., cnt, 1, ..] */
            wide.rank = r + 1;
            for (int e = r; e > d + 1; e--)
                wide.dims[e] = cs.dims[e - 1];
            wide.dims[d + 1] = 1;
            int64_t pb[IR_MAX_RANK] = {0}, pa[IR_MAX_RANK] = {0};
            pa[d + 1] = s - 1;
            cur = pad_zero(c, grad_reshape(c, cur, &wide), pb, pa);
            IrShape merged = cs;
            merged.dims[d] = cnt * s;
            cur = grad_reshape(c, cur, &merged);
            int64_t zb[IR_MAX_RANK] = {0}, cc[IR_MAX_RANK];
            for (int e = 0; e < r; e++)
                cc[e] = merged.dims[e];
            ext = (cnt - 1) * s + 1;
            cc[d] = ext;
            cur = grad_slice(c, cur, zb, cc);
        }
        before[d] = b;
        after[d] = xs->dims[d] - b - ext;
    }
    dx[0] = pad_zero(c, cur, before, after);
    return st_ok(c->st);
}

static bool g_pad(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)need;
    if (n->p.i[TCRT_PAD_MODE] != 0)
        return grad_fail(c, n, "reflect and symmetric padding are not supported (constant padding is)");
    const IrShape *xs = &in_t(n, 0)->shape;
    int64_t b[IR_MAX_RANK];
    for (int d = 0; d < xs->rank; d++)
        b[d] = n->p.i[2 * d];
    dx[0] = grad_slice(c, dy[0], b, xs->dims);
    return st_ok(c->st);
}

static bool g_concat(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    int axis = (int)n->p.i[TCRT_CAT_AXIS];
    int64_t off = 0;
    for (int k = 0; k < n->n_inputs && st_ok(c->st); k++) {
        const IrShape *s = &in_t(n, k)->shape;
        if (need[k]) {
            int64_t b[IR_MAX_RANK] = {0};
            b[axis] = off;
            dx[k] = grad_slice(c, dy[0], b, s->dims);
        }
        off += s->dims[axis];
    }
    return st_ok(c->st);
}

/* gather(params, indices, axis a): the index dims of dy moved to the front,
 * scatter_add into [params[a], rest...], and the first axis moved back to a. */
static bool g_gather(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    if (!need[0])
        return true;
    if (n->p.i[TCRT_GA_BATCH] != 0)
        return grad_fail(c, n, "gather with batch_dims");
    const IrShape *ps = &in_t(n, 0)->shape;
    int a = (int)n->p.i[TCRT_GA_AXIS], pr = ps->rank;
    IrValue ix = in_v(n, 1), g = dy[0];
    int ir = in_t(n, 1)->shape.rank;
    if (ir == 0) { /* a scalar index: one row, as indices [1] */
        IrShape one = ir_shape_make(1, (int64_t[]){1});
        ix = grad_reshape(c, ix, &one);
        IrShape gs = *ps;
        gs.dims[a] = 1;
        g = grad_reshape(c, g, &gs);
        ir = 1;
    }
    int gr = ir_value_type(g)->shape.rank;
    int64_t perm[IR_MAX_RANK];
    int k = 0;
    for (int d = a; d < a + ir; d++)
        perm[k++] = d;
    for (int d = 0; d < a; d++)
        perm[k++] = d;
    for (int d = a + ir; d < gr; d++)
        perm[k++] = d;
    g = grad_transpose(c, g, perm);
    IrType sct = {in_t(n, 0)->dtype, *ps};
    sct.shape.dims[0] = ps->dims[a];
    k = 1;
    for (int d = 0; d < pr; d++)
        if (d != a)
            sct.shape.dims[k++] = ps->dims[d];
    IrParams p;
    memset(&p, 0, sizeof p);
    IrValue in[2] = {g, ix};
    IrValue sc = grad_emit(c, OP_SCATTER_ADD, in, 2, &p, &sct);
    int64_t back[IR_MAX_RANK];
    for (int d = 0; d < a; d++)
        back[d] = d + 1;
    back[a] = 0;
    for (int d = a + 1; d < pr; d++)
        back[d] = d;
    dx[0] = grad_transpose(c, sc, back);
    return st_ok(c->st);
}

/* gather_nd(params, indices [I..., q]): the q leading params dims flattened
 * into one (linear index = indices . strides), then as gather: scatter_add
 * into [prod(params[:q]), params[q:]...] and a reshape to params' shape. */
static bool g_gather_nd(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    if (!need[0])
        return true;
    const IrShape *ps = &in_t(n, 0)->shape, *is = &in_t(n, 1)->shape;
    int q = (int)is->dims[is->rank - 1];
    if (q < 1)
        return grad_fail(c, n, "gather_nd with an empty index");
    int64_t strides[IR_MAX_RANK], rows = 1;
    for (int k = q - 1; k >= 0; k--) {
        strides[k] = rows;
        rows *= ps->dims[k];
    }
    IrValue sv = st_ok(c->st) ? ir_const_i64s(c->g, in_t(n, 1)->dtype, strides, q, c->st) : NONE;
    IrValue lin =
        grad_reduce_sum(c, grad_bin(c, OP_MUL, in_v(n, 1), sv), (int64_t)1 << (is->rank - 1), false);
    IrValue g = dy[0];
    if (is->rank == 1) { /* one index: as indices [1] */
        IrShape one = ir_shape_make(1, (int64_t[]){1});
        lin = grad_reshape(c, lin, &one);
        IrShape gs = ir_shape_make(1, (int64_t[]){1});
        for (int d = q; d < ps->rank; d++)
            gs.dims[gs.rank++] = ps->dims[d];
        g = grad_reshape(c, g, &gs);
    }
    IrType sct = {in_t(n, 0)->dtype, ir_shape_make(1, (int64_t[]){rows})};
    for (int d = q; d < ps->rank; d++)
        sct.shape.dims[sct.shape.rank++] = ps->dims[d];
    IrParams p;
    memset(&p, 0, sizeof p);
    IrValue in[2] = {g, lin};
    dx[0] = grad_reshape(c, grad_emit(c, OP_SCATTER_ADD, in, 2, &p, &sct), ps);
    return st_ok(c->st);
}

/* scatter_add(updates, indices): d updates = gather(dy, indices) */
static bool g_scatter_add(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    if (!need[0])
        return true;
    if (n->p.i[TCRT_SCAT_DROP_NEG])
        return grad_fail(c, n, "scatter_add that drops negative indices");
    IrParams p;
    memset(&p, 0, sizeof p);
    IrValue in[2] = {dy[0], in_v(n, 1)};
    dx[0] = grad_emit(c, OP_GATHER, in, 2, &p, NULL);
    return st_ok(c->st);
}

/* tile: dy as [.., multiple, x dim, ..] summed over the multiples */
static bool g_tile(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)need;
    const IrShape *xs = &in_t(n, 0)->shape, *os = &n->out[0].type.shape;
    if (ir_shape_count(xs) == 0) {
        dx[0] = grad_fill(c, in_t(n, 0), 0);
        return st_ok(c->st);
    }
    IrShape rs = {0};
    memset(&rs, 0, sizeof rs);
    int64_t mask = 0;
    for (int d = 0; d < xs->rank; d++) {
        int64_t m = os->dims[d] / xs->dims[d];
        if (m == 1) {
            rs.dims[rs.rank++] = xs->dims[d];
            continue;
        }
        if (rs.rank + (xs->dims[d] == 1 ? 1 : 2) > IR_MAX_RANK)
            return grad_fail(c, n, "tile of a rank-%d tensor along many axes", xs->rank);
        mask |= (int64_t)1 << rs.rank;
        if (xs->dims[d] == 1) {
            rs.dims[rs.rank++] = m;
        } else {
            rs.dims[rs.rank++] = m;
            rs.dims[rs.rank++] = xs->dims[d];
        }
    }
    dx[0] = grad_reshape(c, grad_reduce_sum(c, grad_reshape(c, dy[0], &rs), mask, false), xs);
    return st_ok(c->st);
}

/* broadcast: dy summed back by the builder */
static bool g_identity(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)c, (void)n, (void)need;
    dx[0] = dy[0];
    return true;
}

/* assign(var, value): the output is the value */
static bool g_assign(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    (void)c, (void)n, (void)need;
    dx[1] = dy[0];
    return true;
}

/* update_slice(x, u, start): dx = dy with the slice zeroed; du would need a
 * run-time slice, which tfcc has no primitive for */
static bool g_update_slice(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    if (need[1])
        return grad_fail(c, n, "the gradient of the update operand is not supported");
    IrValue in[3] = {dy[0], grad_fill(c, in_t(n, 1), 0), in_v(n, 2)};
    dx[0] = grad_emit(c, OP_UPDATE_SLICE, in, 3, NULL, NULL);
    return st_ok(c->st);
}

/* ---- control flow ---- */

/* cond(sel, x...) -> y...: a new cond on the same selector whose branch b
 * takes x... and the adjoints of the float outputs, inlines the forward
 * branch b and returns its vector-Jacobian product for the x that need one
 * (grad_vjp inside the branch; zeros where a branch does not use an x). */
static bool g_cond(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx)
{
    IrGraph *g = c->g;
    Status *st = c->st;
    int m = n->n_inputs - 1, k = n->n_outputs, nr = n->n_regions;
    int n_d = 0, n_f = 0;
    int *dix = arena_alloc(&g->arena, sizeof(int) * (size_t)(m + k + 1));
    int *fix = dix ? dix + m : NULL;
    IrValue *ops = arena_alloc(&g->arena, sizeof(IrValue) * (size_t)(1 + m + k));
    IrGraph **regs = arena_alloc(&g->arena, sizeof(IrGraph *) * (size_t)(nr + 1));
    IrValue *tmp = arena_alloc(&g->arena, sizeof(IrValue) * (size_t)(3 * (m + k) + 3));
    if (!dix || !ops || !regs || !tmp)
        return st_errorf(st, ST_NOMEM, "gradient: out of memory");
    for (int i = 0; i < m; i++)
        if (need[i + 1])
            dix[n_d++] = i;
    ops[0] = in_v(n, 0);
    for (int i = 0; i < m; i++)
        ops[1 + i] = in_v(n, 1 + i);
    for (int j = 0; j < k; j++) {
        tcrt_dtype dt = n->out[j].type.dtype;
        if (dt != TCRT_F32 && dt != TCRT_F64)
            continue;
        fix[n_f] = j;
        ops[1 + m + n_f++] = dy[j].node ? dy[j] : grad_fill(c, &n->out[j].type, 0);
    }
    for (int b = 0; b < nr && st_ok(st); b++) {
        const IrGraph *br = n->regions[b];
        IR_FOR_EACH(br, q)
        {
            if (q->n_regions)
                return grad_fail(c, n, "a cond branch with nested control flow");
        }
        IrGraph *r = ir_region_new(g, st);
        if (!r)
            return false;
        IrValue *xs = tmp, *ys = tmp + m + 1, *gr = tmp + m + 2 * k + 2;
        char nm[32];
        for (int i = 0; i < m + n_f && st_ok(st); i++) {
            snprintf(nm, sizeof nm, i < m ? "x%d" : "dy%d", i < m ? i : i - m);
            IrValue p = ir_add_feed(r, nm, ir_value_type(ops[1 + i]), st);
            if (i < m)
                xs[i] = p;
            else
                ys[k + (i - m)] = p; /* parked after the k results */
        }
        if (!st_ok(st) || !ir_inline_region(r, br, xs, ys, st))
            return false;
        IrValue fy[64], fdy[64], wrt[64];
        if (n_f > 64 || n_d > 64)
            return grad_fail(c, n, "more than 64 operands or results");
        for (int j = 0; j < n_f; j++) {
            fy[j] = ys[fix[j]];
            fdy[j] = ys[k + j];
        }
        for (int i = 0; i < n_d; i++)
            wrt[i] = xs[dix[i]];
        if (!grad_vjp(r, fy, fdy, n_f, wrt, n_d, gr, NULL, st))
            return false;
        for (int i = 0; i < n_d && st_ok(st); i++) {
            snprintf(nm, sizeof nm, "dx%d", dix[i]);
            ir_add_fetch(r, nm, gr[i], st);
        }
        regs[b] = r;
    }
    if (!st_ok(st))
        return false;
    IrNode *gc = ir_emit_region(g, OP_COND, ops, 1 + m + n_f, regs, nr, st);
    if (!gc)
        return false;
    for (int i = 0; i < n_d; i++)
        dx[1 + dix[i]] = (IrValue){gc, i};
    return true;
}

/* ---- the table ---- */

static const GradRule rules[OP_COUNT] = {
    [OP_NEG] = g_neg,
    [OP_ABS] = g_abs,
    [OP_SIGN] = grad_nodiff,
    [OP_EXP] = g_exp,
    [OP_LOG] = g_log,
    [OP_LOG1P] = g_log1p,
    [OP_SQRT] = g_sqrt,
    [OP_RSQRT] = g_rsqrt,
    [OP_RECIP] = g_recip,
    [OP_SQUARE] = g_square,
    [OP_SIN] = g_sin,
    [OP_COS] = g_cos,
    [OP_TAN] = g_tan,
    [OP_TANH] = g_tanh,
    [OP_SIGMOID] = g_sigmoid,
    [OP_RELU] = g_relu,
    [OP_FLOOR] = grad_nodiff,
    [OP_CEIL] = grad_nodiff,
    [OP_ROUND] = grad_nodiff,
    [OP_ERF] = g_erf,
    [OP_NOT] = grad_nodiff,
    [OP_CAST] = g_cast,
    [OP_ADD] = g_add,
    [OP_SUB] = g_sub,
    [OP_MUL] = g_mul,
    [OP_DIV] = g_div,
    [OP_FLOORDIV] = grad_nodiff,
    [OP_FLOORMOD] = g_floormod,
    [OP_POW] = g_pow,
    [OP_MAX] = g_maxmin,
    [OP_MIN] = g_maxmin,
    [OP_ATAN2] = g_atan2,
    [OP_EQ] = grad_nodiff,
    [OP_NE] = grad_nodiff,
    [OP_LT] = grad_nodiff,
    [OP_LE] = grad_nodiff,
    [OP_GT] = grad_nodiff,
    [OP_GE] = grad_nodiff,
    [OP_AND] = grad_nodiff,
    [OP_OR] = grad_nodiff,
    [OP_SELECT] = g_select,
    [OP_REDUCE_SUM] = g_reduce_sum,
    [OP_REDUCE_MAX] = g_reduce_maxmin,
    [OP_REDUCE_MIN] = g_reduce_maxmin,
    [OP_REDUCE_PROD] = g_reduce_prod,
    [OP_ARGMAX] = grad_nodiff,
    [OP_ARGMIN] = grad_nodiff,
    [OP_MATMUL] = g_matmul,
    [OP_CONV2D] = g_conv2d,
    [OP_CONV2D_TRANSPOSE] = g_conv2d_transpose,
    [OP_MAXPOOL] = g_maxpool,
    [OP_AVGPOOL] = g_avgpool,
    [OP_COPY] = g_copy,
    [OP_TRANSPOSE] = g_transpose,
    [OP_REVERSE_SEQ] = g_reverse_seq,
    [OP_SLICE] = g_slice,
    [OP_PAD] = g_pad,
    [OP_CONCAT] = g_concat,
    [OP_GATHER] = g_gather,
    [OP_GATHER_ND] = g_gather_nd,
    [OP_TILE] = g_tile,
    [OP_BROADCAST] = g_identity,
    [OP_RANGE] = grad_nodiff,
    [OP_RANDOM_UNIFORM] = grad_nodiff,
    [OP_UPDATE_SLICE] = g_update_slice,
    [OP_NMS] = grad_nodiff,
    [OP_WHERE] = grad_nodiff,
    [OP_SYMVAL] = grad_nodiff,
    [OP_SCATTER_ADD] = g_scatter_add,
    [OP_COND] = g_cond,
    [OP_CONST] = grad_nodiff,
    [OP_ARG] = grad_nodiff,
    [OP_VARIABLE] = grad_nodiff,
    [OP_ASSIGN] = g_assign,
    /* the mean over --data-parallel replicas: identity, the one replica's
     * view (optim.c applies it after differentiation, never before) */
    [OP_ALLREDUCE] = g_identity,
};

GradRule grad_rule(Op op)
{
    return op >= 0 && op < OP_COUNT ? rules[op] : NULL;
}

bool pass_grad_has_rule(Op op, bool *nodiff)
{
    GradRule r = grad_rule(op);
    if (nodiff)
        *nodiff = r == grad_nodiff;
    return r != NULL || op == OP_WHILE; /* a while: unrolled first (grad.c), when its trip count is constant */
}
