/* compiler/tf/tf_ops_nn.c - lowering of TensorFlow's neural-network and
 * elementwise math ops to IR primitives: one row per TF op type.
 *
 * Contractions (Conv2D, DepthwiseConv2dNative, MatMul and their fused
 * forms) become one CONV2D / MATMUL node whose optional third input is the
 * bias and whose TCRT_*_ACT parameter holds a relu/relu6/leaky activation;
 * every other fused piece (FusedBatchNorm folded into the weights, Elu,
 * Sigmoid, Tanh, Prelu) becomes separate elementwise nodes.  Windows use
 * NHWC: an NCHW node is wrapped in two transposes.  SAME padding is turned
 * into explicit pads as TensorFlow computes them:
 *   out = ceil(in / s), total = max((out-1)*s + k_eff - in, 0), top = total/2
 * with k_eff = (k-1)*dilation + 1.  Composite ops (Softmax, Elu, Selu,
 * Softplus, BatchNorm, ...) are written out in primitives, numerically
 * stable forms where TensorFlow uses them (softmax subtracts the max).
 *
 * Invariants: a lower function either writes every output it declares in
 * *n_out and returns true, or records a message naming the node (tf_errorf,
 * or the IR builder's own error naming the origin) and returns false.
 */
#include <math.h>
#include <string.h>

#include "compiler/tf/tf_int.h"
#include "compiler/tf/tf_lower.h"

#define TRY(v)                                                                                               \
    do {                                                                                                     \
        if (!(v).node)                                                                                       \
            return false;                                                                                    \
    } while (0)

/* ---- small helpers ---- */

static bool is_float(tcrt_dtype dt)
{
    return dt == TCRT_F32 || dt == TCRT_F64;
}

/* ---- elementwise ---- */

static const struct {
    const char *tf;
    Op op;
} elem_ops[] = {
    {"Neg", OP_NEG},          {"Abs", OP_ABS},         {"Sign", OP_SIGN},         {"Exp", OP_EXP},
    {"Log", OP_LOG},          {"Log1p", OP_LOG1P},     {"Sqrt", OP_SQRT},         {"Rsqrt", OP_RSQRT},
    {"Reciprocal", OP_RECIP}, {"Inv", OP_RECIP},       {"Square", OP_SQUARE},     {"Sin", OP_SIN},
    {"Cos", OP_COS},          {"Tan", OP_TAN},         {"Tanh", OP_TANH},         {"Sigmoid", OP_SIGMOID},
    {"Relu", OP_RELU},        {"Floor", OP_FLOOR},     {"Ceil", OP_CEIL},         {"Round", OP_ROUND},
    {"Rint", OP_ROUND},       {"Erf", OP_ERF},         {"LogicalNot", OP_NOT},    {"Add", OP_ADD},
    {"AddV2", OP_ADD},        {"BiasAddV1", OP_ADD},   {"Sub", OP_SUB},           {"Mul", OP_MUL},
    {"RealDiv", OP_DIV},      {"Div", OP_DIV},         {"FloorDiv", OP_FLOORDIV}, {"FloorMod", OP_FLOORMOD},
    {"Maximum", OP_MAX},      {"Minimum", OP_MIN},     {"Pow", OP_POW},           {"Atan2", OP_ATAN2},
    {"Equal", OP_EQ},         {"NotEqual", OP_NE},     {"Less", OP_LT},           {"LessEqual", OP_LE},
    {"Greater", OP_GT},       {"GreaterEqual", OP_GE}, {"LogicalAnd", OP_AND},    {"LogicalOr", OP_OR},
};

static bool elem_op(TfCtx *c, Op *op)
{
    for (size_t i = 0; i < sizeof elem_ops / sizeof elem_ops[0]; i++)
        if (strcmp(elem_ops[i].tf, c->row->tf_op) == 0) {
            *op = elem_ops[i].op;
            return true;
        }
    return tf_errorf(c, "internal: no elementwise mapping");
}

static bool lower_unary(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    Op op;
    if (!tfl_want_inputs(c, n_in, 1) || !elem_op(c, &op))
        return false;
    *n_out = 1;
    /* Rounding an integer is the identity (TF Round/Floor/Ceil on ints). */
    if ((op == OP_ROUND || op == OP_FLOOR || op == OP_CEIL) && !is_float(tfl_dtype(in[0]))) {
        out[0] = in[0];
        return true;
    }
    out[0] = tfl_unary(c, op, in[0]);
    return out[0].node != NULL;
}

static bool lower_binary(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    Op op;
    if (!tfl_want_inputs(c, n_in, 2) || !elem_op(c, &op))
        return false;
    *n_out = 1;
    out[0] = tfl_binary(c, op, in[0], in[1]);
    return out[0].node != NULL;
}

static bool lower_addn(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (n_in < 1)
        return tf_errorf(c, "expected at least 1 input, got %d", n_in);
    IrValue acc = in[0];
    for (int i = 1; i < n_in; i++)
        acc = tfl_binary(c, OP_ADD, acc, in[i]);
    *n_out = 1;
    out[0] = acc;
    return acc.node != NULL;
}

static bool lower_squared_difference(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 2))
        return false;
    *n_out = 1;
    out[0] = tfl_unary(c, OP_SQUARE, tfl_binary(c, OP_SUB, in[0], in[1]));
    return out[0].node != NULL;
}

/* DivNoNan: 0 where y == 0, else x / y. */
static bool lower_div_no_nan(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 2))
        return false;
    tcrt_dtype dt = tfl_dtype(in[0]);
    IrValue zero = tfl_scalar(c, dt, 0);
    IrValue is_zero = tfl_binary(c, OP_EQ, in[1], zero);
    IrValue q = tfl_binary(c, OP_DIV, in[0], in[1]);
    *n_out = 1;
    out[0] = tfl_select(c, is_zero, zero, q);
    return out[0].node != NULL;
}

/* trunc(q) for floats: sign(q) * floor(|q|). */
static IrValue trunc_f(TfCtx *c, IrValue q)
{
    return tfl_binary(c, OP_MUL, tfl_unary(c, OP_SIGN, q), tfl_unary(c, OP_FLOOR, tfl_unary(c, OP_ABS, q)));
}

/* TruncateDiv: integer division truncates already (DIV); floats trunc(x/y). */
static bool lower_truncate_div(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 2))
        return false;
    IrValue q = tfl_binary(c, OP_DIV, in[0], in[1]);
    *n_out = 1;
    out[0] = is_float(tfl_dtype(in[0])) ? trunc_f(c, q) : q;
    return out[0].node != NULL;
}

/* Mod / TruncateMod: x - trunc(x/y)*y, the sign of x (C's fmod, %). */
static bool lower_mod(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 2))
        return false;
    IrValue q = tfl_binary(c, OP_DIV, in[0], in[1]);
    if (is_float(tfl_dtype(in[0])))
        q = trunc_f(c, q);
    *n_out = 1;
    out[0] = tfl_binary(c, OP_SUB, in[0], tfl_binary(c, OP_MUL, q, in[1]));
    return out[0].node != NULL;
}

static bool lower_expm1(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 1))
        return false;
    *n_out = 1;
    out[0] = tfl_binary(c, OP_SUB, tfl_unary(c, OP_EXP, in[0]), tfl_scalar(c, tfl_dtype(in[0]), 1));
    return out[0].node != NULL;
}

/* IsNan: x != x.  IsInf: |x| == inf.  IsFinite: x - x == 0 (NaN for inf and NaN). */
static bool lower_is_class(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 1))
        return false;
    IrValue x = in[0];
    tcrt_dtype dt = tfl_dtype(x);
    const char *op = c->row->tf_op;
    *n_out = 1;
    if (strcmp(op, "IsNan") == 0)
        out[0] = tfl_binary(c, OP_NE, x, x);
    else if (strcmp(op, "IsInf") == 0)
        out[0] = tfl_binary(c, OP_EQ, tfl_unary(c, OP_ABS, x), tfl_scalar(c, dt, INFINITY));
    else
        out[0] = tfl_binary(c, OP_EQ, tfl_binary(c, OP_SUB, x, x), tfl_scalar(c, dt, 0));
    return out[0].node != NULL;
}

/* Atan: atan2(x, 1). */
static bool lower_atan(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 1))
        return false;
    *n_out = 1;
    out[0] = tfl_binary(c, OP_ATAN2, in[0], tfl_scalar(c, tfl_dtype(in[0]), 1));
    return out[0].node != NULL;
}

/* ClipByValue: min(max(x, lo), hi). */
static bool lower_clip_by_value(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 3))
        return false;
    *n_out = 1;
    out[0] = tfl_binary(c, OP_MIN, tfl_binary(c, OP_MAX, in[0], in[1]), in[2]);
    return out[0].node != NULL;
}

/* L2Loss: sum(x^2) / 2 over every axis, a scalar. */
static bool lower_l2_loss(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 1))
        return false;
    IrValue x = in[0];
    int rank = tfl_shape(x)->rank;
    IrValue sq = tfl_unary(c, OP_SQUARE, x);
    if (rank > 0 && sq.node) {
        IrParams p;
        memset(&p, 0, sizeof p);
        p.i[0] = ((int64_t)1 << rank) - 1;
        p.i[1] = 0;
        sq = ir_emit1(c->g, OP_REDUCE_SUM, &sq, 1, &p, NULL, c->st);
    }
    *n_out = 1;
    out[0] = tfl_binary(c, OP_MUL, sq, tfl_scalar(c, tfl_dtype(x), 0.5));
    return out[0].node != NULL;
}

/* ---- activations ---- */

static IrValue relu6(TfCtx *c, IrValue x)
{
    return tfl_binary(c, OP_MIN, tfl_unary(c, OP_RELU, x), tfl_scalar(c, tfl_dtype(x), 6));
}

/* x > 0 ? x : exp(x) - 1 */
static IrValue elu(TfCtx *c, IrValue x)
{
    tcrt_dtype dt = tfl_dtype(x);
    IrValue neg = tfl_binary(c, OP_SUB, tfl_unary(c, OP_EXP, x), tfl_scalar(c, dt, 1));
    return tfl_select(c, tfl_binary(c, OP_GT, x, tfl_scalar(c, dt, 0)), x, neg);
}

/* x > 0 ? x : alpha * x */
static IrValue leaky(TfCtx *c, IrValue x, double alpha)
{
    tcrt_dtype dt = tfl_dtype(x);
    return tfl_select(c, tfl_binary(c, OP_GT, x, tfl_scalar(c, dt, 0)), x, tfl_binary(c, OP_MUL, x, tfl_scalar(c, dt, alpha)));
}

/* max(x, 0) + alpha * min(x, 0) */
static IrValue prelu(TfCtx *c, IrValue x, IrValue alpha)
{
    IrValue zero = tfl_scalar(c, tfl_dtype(x), 0);
    return tfl_binary(c, OP_ADD, tfl_unary(c, OP_RELU, x), tfl_binary(c, OP_MUL, alpha, tfl_binary(c, OP_MIN, x, zero)));
}

static bool lower_relu6(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 1))
        return false;
    *n_out = 1;
    out[0] = relu6(c, in[0]);
    return out[0].node != NULL;
}

static bool lower_elu(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 1))
        return false;
    *n_out = 1;
    out[0] = elu(c, in[0]);
    return out[0].node != NULL;
}

/* scale * (x > 0 ? x : alpha * (exp(x) - 1)), constants from TF's selu. */
static bool lower_selu(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 1))
        return false;
    const double alpha = 1.6732632423543772848170429916717;
    const double scale = 1.0507009873554804934193349852946;
    tcrt_dtype dt = tfl_dtype(in[0]);
    IrValue x = in[0];
    IrValue neg =
        tfl_binary(c, OP_MUL, tfl_binary(c, OP_SUB, tfl_unary(c, OP_EXP, x), tfl_scalar(c, dt, 1)), tfl_scalar(c, dt, alpha));
    IrValue y = tfl_select(c, tfl_binary(c, OP_GT, x, tfl_scalar(c, dt, 0)), x, neg);
    *n_out = 1;
    out[0] = tfl_binary(c, OP_MUL, y, tfl_scalar(c, dt, scale));
    return out[0].node != NULL;
}

static bool lower_leaky_relu(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    double alpha;
    if (!tfl_want_inputs(c, n_in, 1) || !tf_attr_float(c, "alpha", &alpha))
        return false;
    *n_out = 1;
    out[0] = leaky(c, in[0], alpha);
    return out[0].node != NULL;
}

static bool lower_prelu(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 2))
        return false;
    *n_out = 1;
    out[0] = prelu(c, in[0], in[1]);
    return out[0].node != NULL;
}

/* Stable softplus: max(x, 0) + log1p(exp(-|x|)). */
static bool lower_softplus(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 1))
        return false;
    IrValue x = in[0];
    IrValue t = tfl_unary(c, OP_LOG1P, tfl_unary(c, OP_EXP, tfl_unary(c, OP_NEG, tfl_unary(c, OP_ABS, x))));
    *n_out = 1;
    out[0] = tfl_binary(c, OP_ADD, tfl_unary(c, OP_RELU, x), t);
    return out[0].node != NULL;
}

/* x / (1 + |x|) */
static bool lower_softsign(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 1))
        return false;
    IrValue x = in[0];
    IrValue d = tfl_binary(c, OP_ADD, tfl_unary(c, OP_ABS, x), tfl_scalar(c, tfl_dtype(x), 1));
    *n_out = 1;
    out[0] = tfl_binary(c, OP_DIV, x, d);
    return out[0].node != NULL;
}

/* softmax = exp(x - max) / sum(exp(x - max)) over the last axis;
 * log_softmax = (x - max) - log(sum(exp(x - max))). */
static bool softmax_common(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, bool log_form)
{
    if (!tfl_want_inputs(c, n_in, 1))
        return false;
    IrValue x = in[0];
    int rank = tfl_shape(x)->rank;
    if (rank < 1)
        return tfl_shape_msg(c, "input", x, "at least 1-D");
    int64_t mask = (int64_t)1 << (rank - 1);
    IrValue d = tfl_binary(c, OP_SUB, x, tfl_reduce(c, OP_REDUCE_MAX, x, mask, true));
    IrValue e = tfl_unary(c, OP_EXP, d);
    IrValue s = tfl_reduce(c, OP_REDUCE_SUM, e, mask, true);
    *n_out = 1;
    out[0] = log_form ? tfl_binary(c, OP_SUB, d, tfl_unary(c, OP_LOG, s)) : tfl_binary(c, OP_DIV, e, s);
    return out[0].node != NULL;
}

static bool lower_softmax(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return softmax_common(c, in, n_in, out, n_out, false);
}

static bool lower_log_softmax(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return softmax_common(c, in, n_in, out, n_out, true);
}

/* ---- select, cast, random ---- */

/* Select (v1): a rank-1 condition picks rows of higher-rank x and y. */
static bool lower_select(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 3))
        return false;
    IrValue cond = in[0];
    const IrShape *cs = tfl_shape(cond), *xs = tfl_shape(in[1]);
    if (cs->rank == 1 && xs->rank > 1) {
        if (cs->dims[0] != xs->dims[0])
            return tf_errorf(c, "condition has %lld elements but x has %lld rows", (long long)cs->dims[0],
                             (long long)xs->dims[0]);
        int64_t dims[IR_MAX_RANK];
        dims[0] = cs->dims[0];
        for (int i = 1; i < xs->rank; i++)
            dims[i] = 1;
        cond = tfl_reshape(c, cond, xs->rank, dims);
    }
    *n_out = 1;
    out[0] = tfl_select(c, cond, in[1], in[2]);
    return out[0].node != NULL;
}

static bool lower_select_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 3))
        return false;
    *n_out = 1;
    out[0] = tfl_select(c, in[0], in[1], in[2]);
    return out[0].node != NULL;
}

static bool lower_cast(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    tcrt_dtype to;
    if (!tfl_want_inputs(c, n_in, 1) || !tf_attr_type(c, "DstT", &to))
        return false;
    *n_out = 1;
    if (tfl_dtype(in[0]) == to) {
        out[0] = in[0];
        return true;
    }
    out[0] = ir_cast(c->g, in[0], to, c->st);
    return out[0].node != NULL;
}

static bool lower_random_uniform(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t dims[IR_MAX_RANK + 1], seed, seed2;
    int n;
    IrType t = {0};
    if (!tfl_want_inputs(c, n_in, 1) || !tf_const_ints(c, in[0], "input 0 (shape)", dims, IR_MAX_RANK + 1, &n) ||
        !tf_attr_type(c, "dtype", &t.dtype) || !tf_attr_int(c, "seed", &seed) ||
        !tf_attr_int(c, "seed2", &seed2))
        return false;
    if (n > IR_MAX_RANK)
        return tf_errorf(c, "shape has rank %d, at most %d supported", n, IR_MAX_RANK);
    if (!is_float(t.dtype))
        return tf_errorf(c, "dtype must be a float type, not %s", tcrt_dtype_name(t.dtype));
    for (int i = 0; i < n; i++)
        if (dims[i] < 0)
            return tf_errorf(c, "shape has a negative dimension");
    t.shape = ir_shape_make(n, dims);
    int64_t count;
    if (!ir_shape_count_checked(&t.shape, &count))
        return tf_errorf(c, "shape is too large");
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_RND_SEED] = seed;
    p.i[TCRT_RND_SEED2] = seed2;
    *n_out = 1;
    out[0] = ir_emit1(c->g, OP_RANDOM_UNIFORM, NULL, 0, &p, &t, c->st);
    return out[0].node != NULL;
}

/* ---- bias and batch norm ---- */

/* Reshapes a per-channel vector [C] so it broadcasts against a rank-`rank`
 * tensor whose channel dim is 1 (NCHW) or last (NHWC: left as is). */
static IrValue channel_vec(TfCtx *c, IrValue v, int rank, bool nchw)
{
    if (!nchw || !v.node)
        return v;
    int64_t dims[IR_MAX_RANK];
    dims[0] = tfl_shape(v)->dims[0];
    for (int i = 1; i < rank - 1; i++)
        dims[i] = 1;
    return tfl_reshape(c, v, rank - 1, dims);
}

static bool lower_bias_add(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw;
    if (!tfl_want_inputs(c, n_in, 2) || !tfl_data_format(c, &nchw) || !tfl_want_rank(c, in[1], 1, "bias"))
        return false;
    const IrShape *xs = tfl_shape(in[0]);
    int cd = nchw ? 1 : xs->rank - 1;
    if (xs->rank < (nchw ? 3 : 1))
        return tfl_shape_msg(c, "input", in[0], nchw ? "at least 3-D for NCHW" : "at least 1-D");
    if (xs->dims[cd] != tfl_shape(in[1])->dims[0])
        return tf_errorf(c, "bias has %lld elements but the input has %lld channels",
                         (long long)tfl_shape(in[1])->dims[0], (long long)xs->dims[cd]);
    *n_out = 1;
    out[0] = tfl_binary(c, OP_ADD, in[0], channel_vec(c, in[1], xs->rank, nchw));
    return out[0].node != NULL;
}

/* FusedBatchNorm{,V2,V3}: x, scale, offset, mean, variance.
 * Inference: y = (x - mean) * (scale * rsqrt(variance + eps)) + offset.
 * Training (is_training): the batch's own mean and (biased) variance over
 * N, H, W are used, as TensorFlow does; the variance output is Bessel-corrected.
 * Outputs: y, batch_mean, batch_variance, reserve_1, reserve_2 (, reserve_3). */
static bool lower_fused_batch_norm(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw, training;
    double eps;
    if (!tfl_want_inputs(c, n_in, 5) || !tfl_data_format(c, &nchw) || !tf_attr_float(c, "epsilon", &eps) ||
        !tf_attr_bool(c, "is_training", &training) || !tfl_want_rank(c, in[0], 4, "input x"))
        return false;
    IrValue x = in[0], scale = in[1], offset = in[2], mean = in[3], var = in[4];
    const IrShape *xs = tfl_shape(x);
    int64_t ch = xs->dims[nchw ? 1 : 3];
    const char *names[5] = {"x", "scale", "offset", "mean", "variance"};
    for (int i = 1; i < 5; i++) {
        if (!tfl_want_rank(c, in[i], 1, names[i]))
            return false;
        int64_t d = tfl_shape(in[i])->dims[0];
        if (d != ch && !(training && i >= 3 && d == 0))
            return tf_errorf(c, "%s has %lld elements but x has %lld channels", names[i], (long long)d,
                             (long long)ch);
    }
    tcrt_dtype dt = tfl_dtype(x);
    IrValue y, bmean, bvar;
    if (training) {
        int64_t mask = nchw ? 0xD : 0x7; /* N, H, W */
        int64_t count = xs->dims[0] * xs->dims[1] * xs->dims[2] * xs->dims[3] / (ch ? ch : 1);
        IrValue cnt = tfl_scalar(c, dt, (double)count);
        IrValue m = tfl_binary(c, OP_DIV, tfl_reduce(c, OP_REDUCE_SUM, x, mask, true), cnt);
        IrValue d = tfl_binary(c, OP_SUB, x, m);
        IrValue v = tfl_binary(c, OP_DIV, tfl_reduce(c, OP_REDUCE_SUM, tfl_unary(c, OP_SQUARE, d), mask, true), cnt);
        IrValue f = tfl_binary(c, OP_MUL, channel_vec(c, scale, 4, nchw),
                           tfl_unary(c, OP_RSQRT, tfl_binary(c, OP_ADD, v, tfl_scalar(c, dt, eps))));
        y = tfl_binary(c, OP_ADD, tfl_binary(c, OP_MUL, d, f), channel_vec(c, offset, 4, nchw));
        bmean = tfl_reshape(c, m, 1, &ch);
        IrValue vu = count > 1 ? tfl_binary(c, OP_MUL, v, tfl_scalar(c, dt, (double)count / (double)(count - 1))) : v;
        bvar = tfl_reshape(c, vu, 1, &ch);
    } else {
        IrValue f = tfl_binary(c, OP_MUL, scale, tfl_unary(c, OP_RSQRT, tfl_binary(c, OP_ADD, var, tfl_scalar(c, dt, eps))));
        IrValue d = tfl_binary(c, OP_SUB, x, channel_vec(c, mean, 4, nchw));
        y = tfl_binary(c, OP_ADD, tfl_binary(c, OP_MUL, d, channel_vec(c, f, 4, nchw)),
                   channel_vec(c, offset, 4, nchw));
        bmean = mean;
        bvar = var;
    }
    TRY(y);
    TRY(bmean);
    TRY(bvar);
    out[0] = y;
    out[1] = bmean;
    out[2] = bvar;
    out[3] = bmean;
    out[4] = bvar;
    *n_out = 5;
    if (strcmp(c->row->tf_op, "FusedBatchNormV3") == 0) {
        out[5] = bmean;
        *n_out = 6;
    }
    return true;
}

/* BatchNormWithGlobalNormalization (deprecated, 2016 graphs): t, m, v, beta,
 * gamma over the last dim: (t - m) * rsqrt(v + eps) [* gamma] + beta. */
static bool lower_batch_norm_global(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    double eps;
    bool scale_after;
    if (!tfl_want_inputs(c, n_in, 5) || !tf_attr_float(c, "variance_epsilon", &eps) ||
        !tf_attr_bool(c, "scale_after_normalization", &scale_after))
        return false;
    tcrt_dtype dt = tfl_dtype(in[0]);
    IrValue f = tfl_unary(c, OP_RSQRT, tfl_binary(c, OP_ADD, in[2], tfl_scalar(c, dt, eps)));
    if (scale_after)
        f = tfl_binary(c, OP_MUL, f, in[4]);
    *n_out = 1;
    out[0] = tfl_binary(c, OP_ADD, tfl_binary(c, OP_MUL, tfl_binary(c, OP_SUB, in[0], in[1]), f), in[3]);
    return out[0].node != NULL;
}

/* ---- fused contractions ---- */

enum { POST_NONE, POST_ELU, POST_SIGMOID, POST_TANH, POST_PRELU };

typedef struct Fused {
    bool has_bias, has_bn;
    IrValue bias;     /* BiasAdd's, or the batch norm's shift */
    IrValue bn_scale; /* per-channel multiplier folded into the weights */
    int act;          /* TCRT_ACT_* carried by the contraction */
    double alpha;     /* leaky alpha */
    int post;         /* POST_*: separate elementwise nodes */
    IrValue prelu_alpha;
} Fused;

static bool bad_fused(TfCtx *c, const char **ops, int n)
{
    char list[512];
    size_t at = 0;
    list[0] = 0;
    for (int i = 0; i < n && at < sizeof list; i++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s\"%s\"", i ? "," : "", ops[i]);
    return tf_errorf(c, "unsupported fused_ops [%s]", list);
}

/* Parses fused_ops/num_args; args are in[2..n_in).  allow_bn: conv only. */
static bool parse_fused(TfCtx *c, const IrValue *in, int n_in, bool allow_bn, Fused *f)
{
    const char *ops[8];
    int n_ops;
    memset(f, 0, sizeof *f);
    if (!tf_attr_strs(c, "fused_ops", ops, 8, &n_ops))
        return false;
    int n_args = n_in - 2, need = 0, i = 0;
    const IrValue *args = in + 2;
    if (n_args < 0)
        return tf_errorf(c, "expected at least 2 inputs, got %d", n_in);
    if (i < n_ops && strcmp(ops[i], "BiasAdd") == 0) {
        f->has_bias = true;
        need = 1;
        i++;
    } else if (i < n_ops && allow_bn && strcmp(ops[i], "FusedBatchNorm") == 0) {
        f->has_bn = true;
        need = 4;
        i++;
    }
    if (i < n_ops) {
        const char *a = ops[i++];
        if (strcmp(a, "Relu") == 0)
            f->act = TCRT_ACT_RELU;
        else if (strcmp(a, "Relu6") == 0)
            f->act = TCRT_ACT_RELU6;
        else if (strcmp(a, "LeakyRelu") == 0) {
            f->act = TCRT_ACT_LEAKY;
            if (!tf_attr_float(c, "leakyrelu_alpha", &f->alpha))
                return false;
        } else if (strcmp(a, "Elu") == 0)
            f->post = POST_ELU;
        else if (strcmp(a, "Sigmoid") == 0)
            f->post = POST_SIGMOID;
        else if (strcmp(a, "Tanh") == 0)
            f->post = POST_TANH;
        else if (strcmp(a, "Prelu") == 0) {
            f->post = POST_PRELU;
            need++;
        } else
            return bad_fused(c, ops, n_ops);
    }
    if (i < n_ops)
        return bad_fused(c, ops, n_ops);
    if (n_args != need)
        return tf_errorf(c, "fused_ops needs %d extra input%s, node has %d", need, need == 1 ? "" : "s",
                         n_args);
    int64_t num_args;
    if (tf_attr_has(c, "num_args") && tf_attr_int(c, "num_args", &num_args) && num_args != need) {
        /* tfjs counts the prelu alpha in num_args, TensorFlow does not. */
        if (!(f->post == POST_PRELU && num_args == need - 1))
            return tf_errorf(c, "num_args is %lld but fused_ops needs %d", (long long)num_args, need);
    }
    if (!st_ok(c->st))
        return false;
    if (f->has_bias) {
        if (!tfl_want_rank(c, args[0], 1, "bias"))
            return false;
        f->bias = args[0];
    }
    if (f->has_bn) {
        double eps;
        if (!tf_attr_float(c, "epsilon", &eps))
            return false;
        for (int k = 0; k < 4; k++)
            if (!tfl_want_rank(c, args[k], 1, "batch norm argument"))
                return false;
        tcrt_dtype dt = tfl_dtype(args[0]);
        /* s = scale * rsqrt(var + eps); shift = offset - mean * s */
        f->bn_scale =
            tfl_binary(c, OP_MUL, args[0], tfl_unary(c, OP_RSQRT, tfl_binary(c, OP_ADD, args[3], tfl_scalar(c, dt, eps))));
        f->bias = tfl_binary(c, OP_SUB, args[1], tfl_binary(c, OP_MUL, args[2], f->bn_scale));
        TRY(f->bias);
    }
    if (f->post == POST_PRELU)
        f->prelu_alpha = args[need - 1];
    return true;
}

static IrValue apply_post(TfCtx *c, const Fused *f, IrValue y)
{
    switch (f->post) {
    case POST_ELU:
        return elu(c, y);
    case POST_SIGMOID:
        return tfl_unary(c, OP_SIGMOID, y);
    case POST_TANH:
        return tfl_unary(c, OP_TANH, y);
    case POST_PRELU:
        return prelu(c, y, f->prelu_alpha);
    default:
        return y;
    }
}

/* Conv2D / depthwise core: x in data_format, w HWIO (depthwise HWCM),
 * optional bias [Cout], fused activation. */
static bool conv_core(TfCtx *c, IrValue x, IrValue w, const IrValue *bias, bool depthwise, int act,
                      double alpha, IrValue *y)
{
    bool nchw;
    int64_t sh, sw, dh, dw, pads[4];
    if (!tfl_data_format(c, &nchw) || !tfl_want_rank(c, x, 4, "input") || !tfl_want_rank(c, w, 4, "filter") ||
        !tfl_hw_attr(c, "strides", nchw, &sh, &sw) || !tfl_hw_attr(c, "dilations", nchw, &dh, &dw))
        return false;
    if (nchw)
        TRY(x = tfl_to_nhwc(c, x));
    const IrShape *xs = tfl_shape(x), *ws = tfl_shape(w);
    if (ws->dims[2] != xs->dims[3])
        return tf_errorf(c, "filter expects %lld input channels but the input has %lld%s",
                         (long long)ws->dims[2], (long long)xs->dims[3],
                         depthwise ? "" : " (grouped convolution is not supported)");
    if (!tfl_window_pads(c, nchw, xs->dims[1], xs->dims[2], ws->dims[0], ws->dims[1], sh, sw, dh, dw, pads))
        return false;
    IrParams p = tfl_conv_params(sh, sw, dh, dw, pads);
    p.i[TCRT_CONV_DEPTHWISE] = depthwise;
    p.i[TCRT_CONV_ACT] = act;
    p.f[0] = alpha;
    IrValue ins[3] = {x, w, bias ? *bias : (IrValue){NULL, 0}};
    if (bias) {
        int64_t cout = depthwise ? ws->dims[2] * ws->dims[3] : ws->dims[3];
        if (tfl_shape(*bias)->rank != 1 || tfl_shape(*bias)->dims[0] != cout)
            return tf_errorf(c, "bias must have %lld elements, got shape %s", (long long)cout,
                             ir_shape_str(tfl_shape(*bias), (char[200]){0}, 200));
    }
    IrValue r = ir_emit1(c->g, OP_CONV2D, ins, bias ? 3 : 2, &p, NULL, c->st);
    TRY(r);
    if (nchw)
        TRY(r = tfl_from_nhwc(c, r));
    *y = r;
    return true;
}

static bool lower_conv2d(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 2))
        return false;
    *n_out = 1;
    return conv_core(c, in[0], in[1], NULL, strcmp(c->row->tf_op, "DepthwiseConv2dNative") == 0,
                     TCRT_ACT_NONE, 0, &out[0]);
}

/* _FusedConv2D / FusedDepthwiseConv2dNative: x, filter, args... */
static bool lower_fused_conv2d(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    Fused f;
    if (n_in < 2)
        return tfl_want_inputs(c, n_in, 2);
    if (!parse_fused(c, in, n_in, true, &f))
        return false;
    bool depthwise = strcmp(c->row->tf_op, "FusedDepthwiseConv2dNative") == 0;
    IrValue w = in[1];
    if (f.has_bn) {
        /* Fold the batch norm's per-output-channel scale into the filter. */
        if (!tfl_want_rank(c, w, 4, "filter"))
            return false;
        IrValue s = f.bn_scale;
        if (depthwise) {
            int64_t dims[2] = {tfl_shape(w)->dims[2], tfl_shape(w)->dims[3]};
            s = tfl_reshape(c, s, 2, dims);
        }
        TRY(w = tfl_binary(c, OP_MUL, w, s));
    }
    IrValue y;
    if (!conv_core(c, in[0], w, (f.has_bias || f.has_bn) ? &f.bias : NULL, depthwise, f.act, f.alpha, &y))
        return false;
    *n_out = 1;
    out[0] = apply_post(c, &f, y);
    return out[0].node != NULL;
}

/* Conv2DBackpropInput: input_sizes (const), filter, out_backprop. */
static bool lower_conv2d_backprop_input(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw;
    int64_t sizes[8], sh, sw, dh, dw, pads[4];
    int n;
    if (!tfl_want_inputs(c, n_in, 3) || !tfl_data_format(c, &nchw) ||
        !tf_const_ints(c, in[0], "input 0 (input_sizes)", sizes, 8, &n) ||
        !tfl_want_rank(c, in[1], 4, "filter") || !tfl_want_rank(c, in[2], 4, "out_backprop") ||
        !tfl_hw_attr(c, "strides", nchw, &sh, &sw) || !tfl_hw_attr(c, "dilations", nchw, &dh, &dw))
        return false;
    if (n != 4)
        return tf_errorf(c, "input_sizes must have 4 values, has %d", n);
    IrValue dy = in[2], w = in[1];
    if (nchw) {
        int64_t t[4] = {sizes[0], sizes[2], sizes[3], sizes[1]};
        memcpy(sizes, t, sizeof t);
        TRY(dy = tfl_to_nhwc(c, dy));
    }
    for (int i = 0; i < 4; i++)
        if (sizes[i] <= 0)
            return tf_errorf(c, "input_sizes must be positive");
    const IrShape *ws = tfl_shape(w);
    if (!tfl_window_pads(c, nchw, sizes[1], sizes[2], ws->dims[0], ws->dims[1], sh, sw, dh, dw, pads))
        return false;
    IrParams p = tfl_conv_params(sh, sw, dh, dw, pads);
    IrType t = {0};
    t.dtype = tfl_dtype(dy);
    t.shape = ir_shape_make(4, sizes);
    IrValue ins[2] = {dy, w};
    IrValue r = ir_emit1(c->g, OP_CONV2D_TRANSPOSE, ins, 2, &p, &t, c->st);
    TRY(r);
    if (nchw)
        TRY(r = tfl_from_nhwc(c, r));
    *n_out = 1;
    out[0] = r;
    return true;
}

static IrValue matmul(TfCtx *c, IrValue a, IrValue b, const IrValue *bias, bool ta, bool tb, int act,
                      double alpha)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_MM_TA] = ta;
    p.i[TCRT_MM_TB] = tb;
    p.i[TCRT_MM_ACT] = act;
    p.f[0] = alpha;
    IrValue ins[3] = {a, b, bias ? *bias : (IrValue){NULL, 0}};
    return ir_emit1(c->g, OP_MATMUL, ins, bias ? 3 : 2, &p, NULL, c->st);
}

static bool lower_matmul(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool ta, tb;
    if (!tfl_want_inputs(c, n_in, 2) || !tfl_want_rank(c, in[0], 2, "a") || !tfl_want_rank(c, in[1], 2, "b") ||
        !tf_attr_bool(c, "transpose_a", &ta) || !tf_attr_bool(c, "transpose_b", &tb))
        return false;
    *n_out = 1;
    out[0] = matmul(c, in[0], in[1], NULL, ta, tb, TCRT_ACT_NONE, 0);
    return out[0].node != NULL;
}

static bool lower_fused_matmul(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool ta, tb;
    Fused f;
    if (n_in < 2)
        return tfl_want_inputs(c, n_in, 2);
    if (!tfl_want_rank(c, in[0], 2, "a") || !tfl_want_rank(c, in[1], 2, "b") ||
        !tf_attr_bool(c, "transpose_a", &ta) || !tf_attr_bool(c, "transpose_b", &tb) ||
        !parse_fused(c, in, n_in, false, &f))
        return false;
    IrValue y = matmul(c, in[0], in[1], f.has_bias ? &f.bias : NULL, ta, tb, f.act, f.alpha);
    TRY(y);
    *n_out = 1;
    out[0] = apply_post(c, &f, y);
    return out[0].node != NULL;
}

/* BatchMatMul{,V2}: adj_x / adj_y transpose the last two dims (real types). */
static bool lower_batch_matmul(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool ax, ay;
    if (!tfl_want_inputs(c, n_in, 2) || !tf_attr_bool(c, "adj_x", &ax) || !tf_attr_bool(c, "adj_y", &ay))
        return false;
    if (tfl_shape(in[0])->rank < 2 || tfl_shape(in[1])->rank < 2)
        return tf_errorf(c, "inputs must be at least 2-D");
    *n_out = 1;
    out[0] = matmul(c, in[0], in[1], NULL, ax, ay, TCRT_ACT_NONE, 0);
    return out[0].node != NULL;
}

/* ---- pooling ---- */

static bool pool_common(TfCtx *c, IrValue x, Op op, int64_t kh, int64_t kw, int64_t sh, int64_t sw, bool nchw,
                        IrValue *y)
{
    if (!tfl_want_rank(c, x, 4, "input"))
        return false;
    if (nchw)
        TRY(x = tfl_to_nhwc(c, x));
    const IrShape *xs = tfl_shape(x);
    int64_t pads[4];
    if (!tfl_window_pads(c, nchw, xs->dims[1], xs->dims[2], kh, kw, sh, sw, 1, 1, pads))
        return false;
    IrParams p = tfl_pool_params(kh, kw, sh, sw, pads);
    IrValue r = ir_emit1(c->g, op, &x, 1, &p, NULL, c->st);
    TRY(r);
    if (nchw)
        TRY(r = tfl_from_nhwc(c, r));
    *y = r;
    return true;
}

static bool lower_pool(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw;
    int64_t kh, kw, sh, sw;
    if (!tfl_want_inputs(c, n_in, 1) || !tfl_data_format(c, &nchw) || !tfl_hw_attr(c, "ksize", nchw, &kh, &kw) ||
        !tfl_hw_attr(c, "strides", nchw, &sh, &sw))
        return false;
    Op op = strcmp(c->row->tf_op, "AvgPool") == 0 ? OP_AVGPOOL : OP_MAXPOOL;
    *n_out = 1;
    return pool_common(c, in[0], op, kh, kw, sh, sw, nchw, &out[0]);
}

/* MaxPoolV2: ksize and strides are constant inputs. */
static bool lower_maxpool_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw;
    int64_t k[8], s[8];
    int nk, ns;
    if (!tfl_want_inputs(c, n_in, 3) || !tfl_data_format(c, &nchw) ||
        !tf_const_ints(c, in[1], "input 1 (ksize)", k, 8, &nk) ||
        !tf_const_ints(c, in[2], "input 2 (strides)", s, 8, &ns))
        return false;
    if (nk != 4 || ns != 4)
        return tf_errorf(c, "ksize and strides must have 4 values");
    int hd = nchw ? 2 : 1, wd = nchw ? 3 : 2;
    if (k[hd] <= 0 || k[wd] <= 0 || s[hd] <= 0 || s[wd] <= 0)
        return tf_errorf(c, "ksize and strides must be positive");
    *n_out = 1;
    return pool_common(c, in[0], OP_MAXPOOL, k[hd], k[wd], s[hd], s[wd], nchw, &out[0]);
}

/* ---- the table ---- */

#define ELEM1(name, doc)                                                                                     \
    {                                                                                                        \
        name, lower_unary, "", doc                                                                           \
    }
#define ELEM2(name, doc)                                                                                     \
    {                                                                                                        \
        name, lower_binary, "", doc                                                                          \
    }

const TfOpRow tf_ops_nn[] = {
    /* contractions */
    {"Conv2D", lower_conv2d, "data_format=NHWC;dilations=[1,1,1,1];explicit_paddings=[]", "conv2d"},
    {"DepthwiseConv2dNative", lower_conv2d, "data_format=NHWC;dilations=[1,1,1,1];explicit_paddings=[]",
     "conv2d (depthwise)"},
    {"_FusedConv2D", lower_fused_conv2d,
     "data_format=NHWC;dilations=[1,1,1,1];explicit_paddings=[];fused_ops=[];epsilon=0.0001;leakyrelu_alpha="
     "0.2",
     "conv2d (+ bias, relu/relu6/leaky) [+ elementwise activation]"},
    {"FusedDepthwiseConv2dNative", lower_fused_conv2d,
     "data_format=NHWC;dilations=[1,1,1,1];explicit_paddings=[];fused_ops=[];epsilon=0.0001;leakyrelu_alpha="
     "0.2",
     "conv2d (depthwise, + bias, relu/relu6/leaky) [+ elementwise activation]"},
    {"Conv2DBackpropInput", lower_conv2d_backprop_input,
     "data_format=NHWC;dilations=[1,1,1,1];explicit_paddings=[]", "conv2d_transpose"},
    {"MatMul", lower_matmul, "transpose_a=false;transpose_b=false", "matmul"},
    {"_FusedMatMul", lower_fused_matmul,
     "transpose_a=false;transpose_b=false;fused_ops=[];leakyrelu_alpha=0.2",
     "matmul (+ bias, relu/relu6/leaky) [+ elementwise activation]"},
    {"BatchMatMul", lower_batch_matmul, "adj_x=false;adj_y=false", "matmul (batched)"},
    {"BatchMatMulV2", lower_batch_matmul, "adj_x=false;adj_y=false", "matmul (batched, broadcasting)"},
    {"BatchMatMulV3", lower_batch_matmul, "adj_x=false;adj_y=false", "matmul (batched, broadcasting)"},
    {"BiasAdd", lower_bias_add, "data_format=NHWC", "add"},
    {"BiasAddV1", lower_binary, "", "add"},
    {"FusedBatchNorm", lower_fused_batch_norm, "epsilon=0.0001;is_training=true;data_format=NHWC",
     "sub + mul + add (inference); reduce_sum moments (training)"},
    {"FusedBatchNormV2", lower_fused_batch_norm, "epsilon=0.0001;is_training=true;data_format=NHWC",
     "sub + mul + add (inference); reduce_sum moments (training)"},
    {"FusedBatchNormV3", lower_fused_batch_norm, "epsilon=0.0001;is_training=true;data_format=NHWC",
     "sub + mul + add (inference); reduce_sum moments (training)"},
    /* windows */
    {"BatchNormWithGlobalNormalization", lower_batch_norm_global, "", "sub + mul + add"},
    {"MaxPool", lower_pool, "data_format=NHWC;explicit_paddings=[]", "maxpool"},
    {"MaxPoolV2", lower_maxpool_v2, "data_format=NHWC", "maxpool"},
    {"AvgPool", lower_pool, "data_format=NHWC", "avgpool"},
    /* activations */
    ELEM1("Relu", "relu"),
    {"Relu6", lower_relu6, "", "relu + min"},
    {"Elu", lower_elu, "", "select(gt, x, exp - 1)"},
    {"Selu", lower_selu, "", "select(gt, x, alpha*(exp - 1)) * scale"},
    {"LeakyRelu", lower_leaky_relu, "alpha=0.2", "select(gt, x, alpha*x)"},
    {"Prelu", lower_prelu, "", "relu + alpha*min(x, 0)"},
    ELEM1("Sigmoid", "sigmoid"),
    ELEM1("Tanh", "tanh"),
    {"Softplus", lower_softplus, "", "relu + log1p(exp(-abs))"},
    {"Softsign", lower_softsign, "", "div(x, abs + 1)"},
    {"Softmax", lower_softmax, "", "reduce_max + sub + exp + reduce_sum + div"},
    {"LogSoftmax", lower_log_softmax, "", "reduce_max + sub + exp + reduce_sum + log + sub"},
    /* elementwise unary */
    ELEM1("Neg", "neg"),
    ELEM1("Abs", "abs"),
    ELEM1("Sign", "sign"),
    ELEM1("Exp", "exp"),
    {"Expm1", lower_expm1, "", "exp + sub"},
    ELEM1("Log", "log"),
    ELEM1("Log1p", "log1p"),
    ELEM1("Sqrt", "sqrt"),
    ELEM1("Rsqrt", "rsqrt"),
    ELEM1("Reciprocal", "recip"),
    ELEM1("Inv", "recip"),
    ELEM1("Square", "square"),
    ELEM1("Sin", "sin"),
    ELEM1("Cos", "cos"),
    ELEM1("Tan", "tan"),
    ELEM1("Floor", "floor"),
    ELEM1("Ceil", "ceil"),
    ELEM1("Round", "round"),
    ELEM1("Rint", "round"),
    ELEM1("Erf", "erf"),
    ELEM1("LogicalNot", "not"),
    /* elementwise binary */
    ELEM2("Add", "add"),
    ELEM2("AddV2", "add"),
    {"AddN", lower_addn, "", "add (chain)"},
    ELEM2("Sub", "sub"),
    ELEM2("Mul", "mul"),
    ELEM2("RealDiv", "div"),
    ELEM2("Div", "div"),
    {"DivNoNan", lower_div_no_nan, "", "select(eq(y, 0), 0, div)"},
    ELEM2("FloorDiv", "floordiv"),
    ELEM2("FloorMod", "floormod"),
    {"Mod", lower_mod, "", "x - trunc(x/y)*y"},
    {"TruncateMod", lower_mod, "", "x - trunc(x/y)*y"},
    {"TruncateDiv", lower_truncate_div, "", "div (+ trunc for floats)"},
    ELEM2("Maximum", "max"),
    ELEM2("Minimum", "min"),
    ELEM2("Pow", "pow"),
    {"SquaredDifference", lower_squared_difference, "", "sub + square"},
    ELEM2("Atan2", "atan2"),
    ELEM2("Equal", "eq"),
    ELEM2("NotEqual", "ne"),
    ELEM2("Less", "lt"),
    ELEM2("LessEqual", "le"),
    ELEM2("Greater", "gt"),
    ELEM2("GreaterEqual", "ge"),
    ELEM2("LogicalAnd", "and"),
    ELEM2("LogicalOr", "or"),
    {"IsNan", lower_is_class, "", "ne(x, x)"},
    {"IsInf", lower_is_class, "", "eq(abs, inf)"},
    {"IsFinite", lower_is_class, "", "eq(x - x, 0)"},
    {"Atan", lower_atan, "", "atan2(x, 1)"},
    {"ClipByValue", lower_clip_by_value, "", "max + min"},
    {"L2Loss", lower_l2_loss, "", "square + reduce_sum + mul"},
    {"Select", lower_select, "", "select"},
    {"SelectV2", lower_select_v2, "", "select (broadcasting)"},
    {"Cast", lower_cast, "Truncate=false", "cast"},
    {"RandomUniform", lower_random_uniform, "seed=0;seed2=0", "random_uniform"},
    {NULL, NULL, NULL, NULL},
};
