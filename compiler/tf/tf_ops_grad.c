/* compiler/tf/tf_ops_grad.c - lowering of the gradient ops TensorFlow builds
 * into training graphs (tf.gradients / optimizer.minimize), one row per TF
 * op type in tf_ops_grad[].
 *
 *   - activation gradients (ReluGrad, SigmoidGrad, RsqrtGrad, ...) are
 *     elementwise compositions of the op's saved input or output and dy;
 *   - Conv2DBackpropFilter{,V2}, Conv2DBackpropInputV2 and
 *     DepthwiseConv2dNativeBackprop{Filter,Input},
 *     MaxPoolGrad{,V2} and AvgPoolGrad map onto the gradient primitives
 *     (conv2d_backprop_filter, conv2d_transpose, maxpool_grad,
 *     avgpool_grad) with the forward op's window parameters; NCHW nodes are
 *     wrapped in transposes, SAME padding resolved as in tf_ops_nn.c;
 *   - BiasAddGrad and FusedBatchNormGrad{,V2,V3} are reductions over the
 *     non-channel axes.  In training mode the batch mean and (biased)
 *     variance are recomputed from x, which is what TF's CPU kernel reads
 *     from reserve_space_1/2 (the forward's saved batch statistics), so the
 *     result does not depend on how the forward lowering fills them;
 *   - (Sparse)SoftmaxCrossEntropyWithLogits: loss and backprop from one
 *     max-shifted log-sum-exp; a sparse label outside [0, classes) gives a
 *     NaN row (TF's GPU behaviour; its CPU kernel raises an error);
 *   - UnsortedSegmentSum is scatter_add (negative ids dropped, as TF),
 *     ScatterNd (TopKV2's gradient) scatter_add of flat row numbers;
 *     StridedSliceGrad is scatter_add of dy into the flat positions that
 *     StridedSlice (tf_ops_array.c, reused as is) selects from an iota of
 *     the input's shape; DynamicStitch (constant indices) is a gather from
 *     the concatenated data rows;
 *   - BroadcastGradientArgs and ConcatOffset are constants computed from
 *     constant shapes (a non-constant shape is an error naming the input).
 * Invariants: as every lowering table (tf_int.h): either every declared
 * output is written and true returned, or one error names the node.
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

#define MAX_LIST 1024 /* DynamicStitch / ConcatOffset inputs */

/* ---- small helpers ---- */

static IrValue none(void)
{
    return (IrValue){NULL, 0};
}

static bool want_float(TfCtx *c, IrValue v, const char *what)
{
    tcrt_dtype dt = tfl_dtype(v);
    if (dt == TCRT_F32 || dt == TCRT_F64)
        return true;
    return tf_errorf(c, "%s must be float32 or float64, got %s", what, tcrt_dtype_name(dt));
}

/* A 4-value constant size input (input_sizes, filter_sizes,
 * orig_input_shape), all positive. */
static bool const_sizes4(TfCtx *c, IrValue v, const char *what, int64_t sizes[4])
{
    int64_t buf[8];
    int n;
    if (!tf_const_ints(c, v, what, buf, 8, &n))
        return false;
    if (n != 4)
        return tf_errorf(c, "%s must have 4 values, has %d", what, n);
    for (int i = 0; i < 4; i++) {
        if (buf[i] <= 0)
            return tf_errorf(c, "%s must be positive", what);
        sizes[i] = buf[i];
    }
    return true;
}

/* NCHW [N,C,H,W] sizes -> NHWC order, in place. */
static void sizes_to_nhwc(int64_t s[4])
{
    int64_t t[4] = {s[0], s[2], s[3], s[1]};
    memcpy(s, t, sizeof t);
}

/* ---- activation gradients (elementwise) ---- */

/* The two operands of an activation gradient: (a, b) in TF's order. */
static bool grad_pair(TfCtx *c, const IrValue *in, int n_in)
{
    return tfl_want_inputs(c, n_in, 2) && want_float(c, in[0], "input 0") && want_float(c, in[1], "input 1");
}

static bool one_out(IrValue v, IrValue *out, int *n_out)
{
    out[0] = v;
    *n_out = 1;
    return v.node != NULL;
}

/* ReluGrad(gradients, features): gradients where features > 0, else 0. */
static bool lower_relu_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    IrValue zero = tfl_scalar(c, tfl_dtype(in[0]), 0);
    return one_out(tfl_select(c, tfl_binary(c, OP_GT, in[1], zero), in[0], zero), out, n_out);
}

/* Relu6Grad(gradients, features): gradients where 0 < features < 6. */
static bool lower_relu6_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    tcrt_dtype dt = tfl_dtype(in[0]);
    IrValue zero = tfl_scalar(c, dt, 0);
    IrValue inside =
        tfl_binary(c, OP_AND, tfl_binary(c, OP_GT, in[1], zero), tfl_binary(c, OP_LT, in[1], tfl_scalar(c, dt, 6)));
    return one_out(tfl_select(c, inside, in[0], zero), out, n_out);
}

/* EluGrad(gradients, outputs): outputs < 0 ? gradients * (outputs + 1) : gradients. */
static bool lower_elu_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    tcrt_dtype dt = tfl_dtype(in[0]);
    IrValue neg = tfl_binary(c, OP_LT, in[1], tfl_scalar(c, dt, 0));
    IrValue scaled = tfl_binary(c, OP_MUL, in[0], tfl_binary(c, OP_ADD, in[1], tfl_scalar(c, dt, 1)));
    return one_out(tfl_select(c, neg, scaled, in[0]), out, n_out);
}

/* SeluGrad(gradients, outputs): outputs < 0 ? gradients * (outputs +
 * scale*alpha) : gradients * scale (TF's constants). */
static bool lower_selu_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    const double scale = 1.0507009873554804934193349852946, alpha = 1.6732632423543772848170429916717;
    tcrt_dtype dt = tfl_dtype(in[0]);
    IrValue neg = tfl_binary(c, OP_LT, in[1], tfl_scalar(c, dt, 0));
    IrValue a = tfl_binary(c, OP_MUL, in[0], tfl_binary(c, OP_ADD, in[1], tfl_scalar(c, dt, scale * alpha)));
    IrValue b = tfl_binary(c, OP_MUL, in[0], tfl_scalar(c, dt, scale));
    return one_out(tfl_select(c, neg, a, b), out, n_out);
}

/* LeakyReluGrad(gradients, features): features > 0 ? gradients : gradients * alpha. */
static bool lower_leaky_relu_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    double alpha;
    if (!grad_pair(c, in, n_in) || !tf_attr_float(c, "alpha", &alpha))
        return false;
    tcrt_dtype dt = tfl_dtype(in[0]);
    IrValue pos = tfl_binary(c, OP_GT, in[1], tfl_scalar(c, dt, 0));
    return one_out(tfl_select(c, pos, in[0], tfl_binary(c, OP_MUL, in[0], tfl_scalar(c, dt, alpha))), out, n_out);
}

/* SigmoidGrad(y, dy) = dy * y * (1 - y). */
static bool lower_sigmoid_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    IrValue y = in[0], one = tfl_scalar(c, tfl_dtype(y), 1);
    return one_out(tfl_binary(c, OP_MUL, in[1], tfl_binary(c, OP_MUL, y, tfl_binary(c, OP_SUB, one, y))), out, n_out);
}

/* TanhGrad(y, dy) = dy * (1 - y^2). */
static bool lower_tanh_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    IrValue y = in[0], one = tfl_scalar(c, tfl_dtype(y), 1);
    return one_out(tfl_binary(c, OP_MUL, in[1], tfl_binary(c, OP_SUB, one, tfl_unary(c, OP_SQUARE, y))), out, n_out);
}

/* RsqrtGrad(y, dy) = dy * -0.5 * y^3. */
static bool lower_rsqrt_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    IrValue y = in[0];
    IrValue y3 = tfl_binary(c, OP_MUL, tfl_unary(c, OP_SQUARE, y), y);
    return one_out(tfl_binary(c, OP_MUL, in[1], tfl_binary(c, OP_MUL, y3, tfl_scalar(c, tfl_dtype(y), -0.5))), out, n_out);
}

/* SqrtGrad(y, dy) = dy * 0.5 / y. */
static bool lower_sqrt_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    IrValue y = in[0];
    return one_out(tfl_binary(c, OP_DIV, tfl_binary(c, OP_MUL, in[1], tfl_scalar(c, tfl_dtype(y), 0.5)), y), out, n_out);
}

/* ReciprocalGrad / InvGrad(y, dy) = -dy * y^2. */
static bool lower_reciprocal_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    return one_out(tfl_unary(c, OP_NEG, tfl_binary(c, OP_MUL, in[1], tfl_unary(c, OP_SQUARE, in[0]))), out, n_out);
}

/* SoftplusGrad(gradients, features) = gradients * sigmoid(features). */
static bool lower_softplus_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    return one_out(tfl_binary(c, OP_MUL, in[0], tfl_unary(c, OP_SIGMOID, in[1])), out, n_out);
}

/* SoftsignGrad(gradients, features) = gradients / (1 + |features|)^2. */
static bool lower_softsign_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!grad_pair(c, in, n_in))
        return false;
    IrValue d = tfl_binary(c, OP_ADD, tfl_scalar(c, tfl_dtype(in[1]), 1), tfl_unary(c, OP_ABS, in[1]));
    return one_out(tfl_binary(c, OP_DIV, in[0], tfl_unary(c, OP_SQUARE, d)), out, n_out);
}

/* ---- bias and batch norm ---- */

/* BiasAddGrad(out_backprop): sum over every dim but the channel (the last
 * for NHWC, dim 1 for NCHW). */
static bool lower_bias_add_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw;
    if (!tfl_want_inputs(c, n_in, 1) || !tfl_data_format(c, &nchw))
        return false;
    const IrShape *s = tfl_shape(in[0]);
    if (s->rank < (nchw ? 3 : 1)) {
        char buf[200];
        return tf_errorf(c, "out_backprop must be at least %s, got shape %s", nchw ? "3-D for NCHW" : "1-D",
                         ir_shape_str(s, buf, sizeof buf));
    }
    int cd = nchw ? 1 : s->rank - 1;
    int64_t mask = (((int64_t)1 << s->rank) - 1) & ~((int64_t)1 << cd);
    IrValue r = mask ? tfl_reduce(c, OP_REDUCE_SUM, in[0], mask, false) : in[0];
    return one_out(r, out, n_out);
}

/* A per-channel vector [C] shaped to broadcast against a rank-4 tensor. */
static IrValue chan(TfCtx *c, IrValue v, bool nchw)
{
    if (!nchw || !v.node)
        return v;
    int64_t dims[3] = {tfl_shape(v)->dims[0], 1, 1};
    return tfl_reshape(c, v, 3, dims);
}

/* FusedBatchNormGrad{,V2,V3}(y_backprop, x, scale, reserve_space_1,
 * reserve_space_2[, reserve_space_3]) -> x_backprop, scale_backprop,
 * offset_backprop, and two empty tensors.  Per channel, over the m values
 * of N, H, W, with r = rsqrt(var + eps) and xc = x - mean:
 *   training:  dx = scale * r * (dy - mean(dy) - xc * r^2 * mean(dy * xc)),
 *              mean and biased var of x itself (TF's reserve spaces);
 *   inference: dx = dy * scale * r, mean/var = reserve_space_1/2
 *              (the population statistics the forward op was given);
 *   dscale = sum(dy * xc) * r, doffset = sum(dy). */
static bool lower_fused_batch_norm_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw, training;
    double eps;
    bool v3 = strcmp(c->row->tf_op, "FusedBatchNormGradV3") == 0;
    if (!tfl_want_inputs(c, n_in, v3 ? 6 : 5) || !tfl_data_format(c, &nchw) || !tf_attr_float(c, "epsilon", &eps) ||
        !tf_attr_bool(c, "is_training", &training) || !tfl_want_rank(c, in[0], 4, "y_backprop") ||
        !tfl_want_rank(c, in[1], 4, "x") || !want_float(c, in[1], "x"))
        return false;
    IrValue dy = in[0], x = in[1], scale = in[2];
    const IrShape *xs = tfl_shape(x);
    if (!ir_shape_eq(xs, tfl_shape(dy)))
        return tf_errorf(c, "y_backprop and x must have the same shape");
    int64_t ch = xs->dims[nchw ? 1 : 3];
    const char *names[4] = {"scale", "reserve_space_1", "reserve_space_2", ""};
    for (int i = 2; i < 5; i++) {
        if (!training || i == 2) {
            if (!tfl_want_rank(c, in[i], 1, names[i - 2]))
                return false;
            if (tfl_shape(in[i])->dims[0] != ch)
                return tf_errorf(c, "%s has %lld elements but x has %lld channels", names[i - 2],
                                 (long long)tfl_shape(in[i])->dims[0], (long long)ch);
        }
    }
    tcrt_dtype dt = tfl_dtype(x);
    int64_t mask = nchw ? 0xD : 0x7; /* N, H, W */
    int64_t m = ch ? ir_shape_count(xs) / ch : 0;
    IrValue cnt = tfl_scalar(c, dt, (double)(m ? m : 1));
    IrValue mean, var;
    if (training) {
        mean = tfl_binary(c, OP_DIV, tfl_reduce(c, OP_REDUCE_SUM, x, mask, true), cnt);
        var = tfl_binary(c, OP_DIV,
                     tfl_reduce(c, OP_REDUCE_SUM, tfl_unary(c, OP_SQUARE, tfl_binary(c, OP_SUB, x, mean)), mask, true),
                     cnt);
    } else {
        mean = chan(c, in[3], nchw);
        var = chan(c, in[4], nchw);
    }
    IrValue r = tfl_unary(c, OP_RSQRT, tfl_binary(c, OP_ADD, var, tfl_scalar(c, dt, eps)));
    IrValue xc = tfl_binary(c, OP_SUB, x, mean);
    IrValue sc = chan(c, scale, nchw);
    IrValue dx;
    if (training) {
        IrValue mdy = tfl_binary(c, OP_DIV, tfl_reduce(c, OP_REDUCE_SUM, dy, mask, true), cnt);
        IrValue mdyxc =
            tfl_binary(c, OP_DIV, tfl_reduce(c, OP_REDUCE_SUM, tfl_binary(c, OP_MUL, dy, xc), mask, true), cnt);
        IrValue t = tfl_binary(c, OP_MUL, xc, tfl_binary(c, OP_MUL, tfl_unary(c, OP_SQUARE, r), mdyxc));
        dx = tfl_binary(c, OP_MUL, tfl_binary(c, OP_MUL, sc, r), tfl_binary(c, OP_SUB, tfl_binary(c, OP_SUB, dy, mdy), t));
    } else {
        dx = tfl_binary(c, OP_MUL, dy, tfl_binary(c, OP_MUL, sc, r));
    }
    IrValue rv = tfl_reshape(c, r, 1, &ch);
    IrValue dscale = tfl_binary(c, OP_MUL, tfl_reduce(c, OP_REDUCE_SUM, tfl_binary(c, OP_MUL, dy, xc), mask, false), rv);
    IrValue doffset = tfl_reduce(c, OP_REDUCE_SUM, dy, mask, false);
    int64_t zero = 0;
    IrShape empty = ir_shape_make(1, &zero);
    IrValue e = ir_const(c->g, dt, &empty, NULL, c->st);
    TRY(dx);
    TRY(dscale);
    TRY(doffset);
    TRY(e);
    out[0] = dx;
    out[1] = dscale;
    out[2] = doffset;
    out[3] = e;
    out[4] = e;
    *n_out = 5;
    return true;
}

/* ---- convolution and pooling gradients ---- */

/* A 4-D input's static shape as sizes (V2 ops pass the tensor itself). */
static bool shape_sizes4(TfCtx *c, IrValue v, const char *what, int64_t sizes[4])
{
    if (!tfl_want_rank(c, v, 4, what))
        return false;
    memcpy(sizes, tfl_shape(v)->dims, 4 * sizeof(int64_t));
    return true;
}

/* Conv2DBackpropFilter(input, filter_sizes, out_backprop),
 * Conv2DBackpropFilterV2(input, filter, out_backprop) and
 * DepthwiseConv2dNativeBackpropFilter (filter [KH,KW,C,M]). */
static bool lower_conv_backprop_filter(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw;
    int64_t fs[4], sh, sw, dh, dw, pads[4];
    bool depthwise = strcmp(c->row->tf_op, "DepthwiseConv2dNativeBackpropFilter") == 0;
    bool v2 = strcmp(c->row->tf_op, "Conv2DBackpropFilterV2") == 0;
    if (!tfl_want_inputs(c, n_in, 3) || !tfl_data_format(c, &nchw) ||
        !(v2 ? shape_sizes4(c, in[1], "filter", fs) : const_sizes4(c, in[1], "input 1 (filter_sizes)", fs)) ||
        !tfl_want_rank(c, in[0], 4, "input") || !tfl_want_rank(c, in[2], 4, "out_backprop") ||
        !tfl_hw_attr(c, "strides", nchw, &sh, &sw) || !tfl_hw_attr(c, "dilations", nchw, &dh, &dw))
        return false;
    IrValue x = in[0], dy = in[2];
    if (nchw) {
        TRY(x = tfl_to_nhwc(c, x));
        TRY(dy = tfl_to_nhwc(c, dy));
    }
    const IrShape *xs = tfl_shape(x);
    if (!tfl_window_pads(c, nchw, xs->dims[1], xs->dims[2], fs[0], fs[1], sh, sw, dh, dw, pads))
        return false;
    IrParams p = tfl_conv_params(sh, sw, dh, dw, pads);
    p.i[TCRT_CONV_DEPTHWISE] = depthwise;
    IrType t = {tfl_dtype(x), ir_shape_make(4, fs)};
    IrValue ins[2] = {x, dy};
    return one_out(ir_emit1(c->g, OP_CONV2D_BACKPROP_FILTER, ins, 2, &p, &t, c->st), out, n_out);
}

/* DepthwiseConv2dNativeBackpropInput(input_sizes, filter, out_backprop)
 * (conv2d_transpose with the depthwise flag) and Conv2DBackpropInputV2(
 * input, filter, out_backprop) (the input's shape as input_sizes). */
static bool lower_backprop_input(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw;
    int64_t sizes[4], sh, sw, dh, dw, pads[4];
    bool v2 = strcmp(c->row->tf_op, "Conv2DBackpropInputV2") == 0;
    if (!tfl_want_inputs(c, n_in, 3) || !tfl_data_format(c, &nchw) ||
        !(v2 ? shape_sizes4(c, in[0], "input", sizes)
             : const_sizes4(c, in[0], "input 0 (input_sizes)", sizes)) ||
        !tfl_want_rank(c, in[1], 4, "filter") || !tfl_want_rank(c, in[2], 4, "out_backprop") ||
        !tfl_hw_attr(c, "strides", nchw, &sh, &sw) || !tfl_hw_attr(c, "dilations", nchw, &dh, &dw))
        return false;
    IrValue dy = in[2], w = in[1];
    if (nchw) {
        sizes_to_nhwc(sizes);
        TRY(dy = tfl_to_nhwc(c, dy));
    }
    const IrShape *ws = tfl_shape(w);
    if (!tfl_window_pads(c, nchw, sizes[1], sizes[2], ws->dims[0], ws->dims[1], sh, sw, dh, dw, pads))
        return false;
    IrParams p = tfl_conv_params(sh, sw, dh, dw, pads);
    p.i[TCRT_CONV_DEPTHWISE] = !v2;
    IrType t = {tfl_dtype(dy), ir_shape_make(4, sizes)};
    IrValue ins[2] = {dy, w};
    IrValue r = ir_emit1(c->g, OP_CONV2D_TRANSPOSE, ins, 2, &p, &t, c->st);
    TRY(r);
    if (nchw)
        TRY(r = tfl_from_nhwc(c, r));
    return one_out(r, out, n_out);
}

/* maxpool_grad of orig_input x and grad dy (orig_output is not needed: the
 * maxima are found again in x, as TF's CPU kernel does). */
static bool maxpool_grad_common(TfCtx *c, IrValue x, IrValue dy, int64_t kh, int64_t kw, int64_t sh,
                                int64_t sw, bool nchw, IrValue *out, int *n_out)
{
    if (!tfl_want_rank(c, x, 4, "orig_input") || !tfl_want_rank(c, dy, 4, "grad"))
        return false;
    if (nchw) {
        TRY(x = tfl_to_nhwc(c, x));
        TRY(dy = tfl_to_nhwc(c, dy));
    }
    int64_t pads[4];
    if (!tfl_window_pads(c, nchw, tfl_shape(x)->dims[1], tfl_shape(x)->dims[2], kh, kw, sh, sw, 1, 1, pads))
        return false;
    IrParams p = tfl_pool_params(kh, kw, sh, sw, pads);
    IrValue ins[2] = {x, dy};
    IrValue r = ir_emit1(c->g, OP_MAXPOOL_GRAD, ins, 2, &p, NULL, c->st);
    TRY(r);
    if (nchw)
        TRY(r = tfl_from_nhwc(c, r));
    return one_out(r, out, n_out);
}

/* MaxPoolGrad(orig_input, orig_output, grad). */
static bool lower_maxpool_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw;
    int64_t kh, kw, sh, sw;
    if (!tfl_want_inputs(c, n_in, 3) || !tfl_data_format(c, &nchw) || !tfl_hw_attr(c, "ksize", nchw, &kh, &kw) ||
        !tfl_hw_attr(c, "strides", nchw, &sh, &sw))
        return false;
    return maxpool_grad_common(c, in[0], in[2], kh, kw, sh, sw, nchw, out, n_out);
}

/* MaxPoolGradV2(orig_input, orig_output, grad, ksize, strides): constant windows. */
static bool lower_maxpool_grad_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw;
    int64_t k[8], s[8], kh, kw, sh, sw;
    int nk, ns;
    if (!tfl_want_inputs(c, n_in, 5) || !tfl_data_format(c, &nchw) ||
        !tf_const_ints(c, in[3], "input 3 (ksize)", k, 8, &nk) ||
        !tf_const_ints(c, in[4], "input 4 (strides)", s, 8, &ns) ||
        !tfl_hw_of(c, "ksize", k, nk, nchw, &kh, &kw) || !tfl_hw_of(c, "strides", s, ns, nchw, &sh, &sw))
        return false;
    return maxpool_grad_common(c, in[0], in[2], kh, kw, sh, sw, nchw, out, n_out);
}

/* AvgPoolGrad(orig_input_shape, grad). */
static bool lower_avgpool_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    bool nchw;
    int64_t sizes[4], kh, kw, sh, sw, pads[4];
    if (!tfl_want_inputs(c, n_in, 2) || !tfl_data_format(c, &nchw) ||
        !const_sizes4(c, in[0], "input 0 (orig_input_shape)", sizes) || !tfl_want_rank(c, in[1], 4, "grad") ||
        !tfl_hw_attr(c, "ksize", nchw, &kh, &kw) || !tfl_hw_attr(c, "strides", nchw, &sh, &sw))
        return false;
    IrValue dy = in[1];
    if (nchw) {
        sizes_to_nhwc(sizes);
        TRY(dy = tfl_to_nhwc(c, dy));
    }
    if (!tfl_window_pads(c, nchw, sizes[1], sizes[2], kh, kw, sh, sw, 1, 1, pads))
        return false;
    IrParams p = tfl_pool_params(kh, kw, sh, sw, pads);
    IrType t = {tfl_dtype(dy), ir_shape_make(4, sizes)};
    IrValue r = ir_emit1(c->g, OP_AVGPOOL_GRAD, &dy, 1, &p, &t, c->st);
    TRY(r);
    if (nchw)
        TRY(r = tfl_from_nhwc(c, r));
    return one_out(r, out, n_out);
}

/* ---- losses ---- */

/* Shifted logits s = f - max(f) over the last axis, and log(sum(exp(s))). */
static void log_sum_exp(TfCtx *c, IrValue f, IrValue *s, IrValue *lse)
{
    int64_t last = (int64_t)1 << (tfl_shape(f)->rank - 1);
    *s = tfl_binary(c, OP_SUB, f, tfl_reduce(c, OP_REDUCE_MAX, f, last, true));
    *lse = tfl_unary(c, OP_LOG, tfl_reduce(c, OP_REDUCE_SUM, tfl_unary(c, OP_EXP, *s), last, true));
}

/* SoftmaxCrossEntropyWithLogits(features, labels) [B,C] (broadcasting) ->
 * loss [B] = sum(labels * (lse - s)), backprop [B,C] = softmax - labels. */
static bool lower_softmax_xent(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 2) || !want_float(c, in[0], "features"))
        return false;
    IrShape bs = {0};
    char a[200], b[200];
    if (!ir_broadcast_shapes(tfl_shape(in[0]), tfl_shape(in[1]), &bs) || bs.rank != 2)
        return tf_errorf(c, "features %s and labels %s must broadcast to a 2-D shape",
                         ir_shape_str(tfl_shape(in[0]), a, sizeof a),
                         ir_shape_str(tfl_shape(in[1]), b, sizeof b));
    IrValue f = in[0], labels = in[1];
    if (!ir_shape_eq(tfl_shape(f), &bs)) {
        IrType t = {tfl_dtype(f), bs};
        TRY(f = ir_emit1(c->g, OP_BROADCAST, &f, 1, NULL, &t, c->st));
    }
    IrValue s, lse;
    log_sum_exp(c, f, &s, &lse);
    IrValue loss = tfl_reduce(c, OP_REDUCE_SUM, tfl_binary(c, OP_MUL, labels, tfl_binary(c, OP_SUB, lse, s)), 2, false);
    IrValue bp = tfl_binary(c, OP_SUB, tfl_unary(c, OP_EXP, tfl_binary(c, OP_SUB, s, lse)), labels);
    TRY(loss);
    TRY(bp);
    out[0] = loss;
    out[1] = bp;
    *n_out = 2;
    return true;
}

/* SparseSoftmaxCrossEntropyWithLogits(features [B,C], labels [B] int) ->
 * loss [B] = lse - s[label], backprop = softmax - one_hot(label); a label
 * outside [0, C) makes its row NaN. */
static bool lower_sparse_softmax_xent(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!tfl_want_inputs(c, n_in, 2) || !want_float(c, in[0], "features") ||
        !tfl_want_rank(c, in[0], 2, "features") || !tfl_want_rank(c, in[1], 1, "labels"))
        return false;
    IrValue f = in[0], labels = in[1];
    tcrt_dtype dt = tfl_dtype(f), lt = tfl_dtype(labels);
    if (lt != TCRT_I32 && lt != TCRT_I64)
        return tf_errorf(c, "labels must be int32 or int64, got %s", tcrt_dtype_name(lt));
    int64_t batch = tfl_shape(f)->dims[0], classes = tfl_shape(f)->dims[1];
    if (tfl_shape(labels)->dims[0] != batch)
        return tf_errorf(c, "labels has %lld entries but features has %lld rows",
                         (long long)tfl_shape(labels)->dims[0], (long long)batch);
    int64_t *iota = xx_malloc(sizeof(int64_t) * (size_t)(classes > 0 ? classes : 1));
    if (!iota)
        return tf_errorf(c, "out of memory");
    for (int64_t i = 0; i < classes; i++)
        iota[i] = i;
    IrValue range = ir_const_i64s(c->g, lt, iota, (int)classes, c->st);
    xx_free(iota);
    TRY(range);
    int64_t col[2] = {batch, 1};
    IrValue lab = tfl_reshape(c, labels, 2, col);
    IrValue hot = ir_cast(c->g, tfl_binary(c, OP_EQ, lab, range), dt, c->st);
    TRY(hot);
    IrValue s, lse;
    log_sum_exp(c, f, &s, &lse);
    IrValue picked = tfl_reduce(c, OP_REDUCE_SUM, tfl_binary(c, OP_MUL, hot, s), 2, true);
    IrValue valid = tfl_binary(c, OP_AND, tfl_binary(c, OP_GE, lab, tfl_scalar(c, lt, 0)),
                           tfl_binary(c, OP_LT, lab, tfl_scalar(c, lt, (double)classes)));
    IrValue nan = tfl_scalar(c, dt, NAN);
    IrValue loss = tfl_select(c, valid, tfl_binary(c, OP_SUB, lse, picked), nan);
    IrValue bp = tfl_select(c, valid, tfl_binary(c, OP_SUB, tfl_unary(c, OP_EXP, tfl_binary(c, OP_SUB, s, lse)), hot), nan);
    TRY(loss);
    TRY(bp);
    int64_t b1 = batch;
    out[0] = tfl_reshape(c, loss, 1, &b1);
    out[1] = bp;
    *n_out = 2;
    return out[0].node != NULL;
}

/* ---- shape helpers built by tf.gradients ---- */

/* BroadcastGradientArgs(s0, s1) -> r0, r1: the axes of the broadcast shape
 * along which each input was stretched (its 1-extended dim is 1), to be
 * summed over by the gradient; TF's BCast rule, both constant. */
static bool lower_broadcast_gradient_args(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t s[2][IR_MAX_RANK * 4];
    int n[2];
    if (!tfl_want_inputs(c, n_in, 2) || !tf_const_ints(c, in[0], "input 0 (s0)", s[0], IR_MAX_RANK * 4, &n[0]) ||
        !tf_const_ints(c, in[1], "input 1 (s1)", s[1], IR_MAX_RANK * 4, &n[1]))
        return false;
    int rank = n[0] > n[1] ? n[0] : n[1];
    int64_t r[2][IR_MAX_RANK * 4];
    int nr[2] = {0, 0};
    for (int d = 0; d < rank; d++) {
        int64_t a = d - (rank - n[0]) >= 0 ? s[0][d - (rank - n[0])] : 1;
        int64_t b = d - (rank - n[1]) >= 0 ? s[1][d - (rank - n[1])] : 1;
        if (a != b && a != 1 && b != 1)
            return tf_errorf(c, "incompatible shapes: dim %d is %lld and %lld", d, (long long)a,
                             (long long)b);
        if (a == 1)
            r[0][nr[0]++] = d;
        if (b == 1)
            r[1][nr[1]++] = d;
    }
    tcrt_dtype dt = tfl_dtype(in[0]);
    for (int i = 0; i < 2; i++) {
        out[i] = ir_const_i64s(c->g, dt, r[i], nr[i], c->st);
        TRY(out[i]);
    }
    *n_out = 2;
    return true;
}

/* ConcatOffset(concat_dim, shape_0..shape_n-1) -> offset_i: zeros except
 * the sum of the earlier shapes' concat_dim entries at concat_dim. */
static bool lower_concat_offset(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t axis, rank_v[IR_MAX_RANK + 1], v[IR_MAX_RANK + 1];
    int n_axis, rank;
    if (n_in < 3)
        return tf_errorf(c, "expected at least 3 inputs, got %d", n_in);
    if (!tf_const_ints(c, in[0], "input 0 (concat_dim)", &axis, 1, &n_axis) ||
        !tf_const_ints(c, in[1], "input 1 (shape)", rank_v, IR_MAX_RANK + 1, &rank))
        return false;
    if (n_axis != 1)
        return tf_errorf(c, "concat_dim must be a scalar");
    if (axis < -rank || axis >= rank)
        return tf_errorf(c, "concat_dim %lld out of range for rank %d", (long long)axis, rank);
    if (axis < 0)
        axis += rank;
    int64_t at = 0;
    for (int i = 1; i < n_in; i++) {
        int nv;
        char what[48];
        snprintf(what, sizeof what, "input %d (shape)", i);
        if (!tf_const_ints(c, in[i], what, v, IR_MAX_RANK + 1, &nv))
            return false;
        if (nv != rank)
            return tf_errorf(c, "shape %d has %d entries, shape 0 has %d", i - 1, nv, rank);
        for (int d = 0; d < rank; d++)
            if (d != axis && v[d] != rank_v[d])
                return tf_errorf(c, "shape %d differs from shape 0 outside concat_dim (dim %d)", i - 1, d);
        int64_t off[IR_MAX_RANK + 1] = {0};
        off[axis] = at;
        at += v[axis];
        out[i - 1] = ir_const_i64s(c->g, tfl_dtype(in[i]), off, rank, c->st);
        TRY(out[i - 1]);
    }
    *n_out = n_in - 1;
    return true;
}

/* ---- scatter-style gradients ---- */

/* UnsortedSegmentSum(data, segment_ids, num_segments): scatter_add with
 * negative ids dropped; an id >= num_segments is a run-time error. */
static bool lower_unsorted_segment_sum(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t num;
    int n;
    if (!tfl_want_inputs(c, n_in, 3) || !tf_const_ints(c, in[2], "input 2 (num_segments)", &num, 1, &n))
        return false;
    if (n != 1 || num < 0)
        return tf_errorf(c, "num_segments must be a non-negative scalar");
    const IrShape *ds = tfl_shape(in[0]), *is = tfl_shape(in[1]);
    bool ok = is->rank <= ds->rank;
    for (int d = 0; ok && d < is->rank; d++)
        ok = ds->dims[d] == is->dims[d];
    char a[200], b[200];
    if (!ok)
        return tf_errorf(c, "segment_ids shape %s is not a prefix of data shape %s",
                         ir_shape_str(is, a, sizeof a), ir_shape_str(ds, b, sizeof b));
    IrType t = {tfl_dtype(in[0]), ir_shape_make(0, NULL)};
    t.shape.rank = 1 + ds->rank - is->rank;
    t.shape.dims[0] = num;
    for (int d = is->rank; d < ds->rank; d++)
        t.shape.dims[1 + d - is->rank] = ds->dims[d];
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_SCAT_DROP_NEG] = 1;
    IrValue ins[2] = {in[0], in[1]};
    return one_out(ir_emit1(c->g, OP_SCATTER_ADD, ins, 2, &p, &t, c->st), out, n_out);
}

/* ScatterNd(indices [I..., K], updates [I..., R...], shape): zeros of
 * shape with updates summed in at the indexed rows (duplicates add up, as
 * TF).  Each index row becomes a flat row number sum_k idx_k * stride_k of
 * the leading K dims (int64); a row with a component outside its dim gets
 * a negative number, which scatter_add rejects at run time (TCRT_ERR_ARG),
 * as TF's CPU kernel rejects it. */
static bool lower_scatter_nd(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t shape[IR_MAX_RANK + 1];
    int rank;
    if (!tfl_want_inputs(c, n_in, 3) ||
        !tf_const_ints(c, in[2], "input 2 (shape)", shape, IR_MAX_RANK + 1, &rank))
        return false;
    IrValue idx = in[0], upd = in[1];
    const IrShape *is = tfl_shape(idx), *us = tfl_shape(upd);
    tcrt_dtype it = tfl_dtype(idx);
    if (it != TCRT_I32 && it != TCRT_I64)
        return tf_errorf(c, "indices must be int32 or int64, got %s", tcrt_dtype_name(it));
    if (rank > IR_MAX_RANK || is->rank < 1)
        return tf_errorf(c, "shape must have at most %d entries and indices rank >= 1", IR_MAX_RANK);
    int64_t k = is->dims[is->rank - 1], n_rows = 1, lead = 1, total;
    IrShape os = ir_shape_make(rank, shape);
    for (int d = 0; d < rank; d++)
        if (shape[d] < 0)
            return tf_errorf(c, "shape must not be negative");
    if (!ir_shape_count_checked(&os, &total))
        return tf_errorf(c, "shape has too many elements");
    bool fits = k >= 1 && k <= rank && us->rank == is->rank - 1 + rank - k;
    for (int d = 0; fits && d < is->rank - 1; d++) {
        fits = us->dims[d] == is->dims[d];
        n_rows *= is->dims[d];
    }
    for (int d = (int)k; fits && d < rank; d++)
        fits = us->dims[is->rank - 1 + d - k] == shape[d];
    char a[200], b[200];
    if (!fits)
        return tf_errorf(c, "updates shape %s does not match indices %s and shape",
                         ir_shape_str(us, a, sizeof a), ir_shape_str(is, b, sizeof b));
    int64_t stride[IR_MAX_RANK], dims[IR_MAX_RANK];
    for (int64_t d = k - 1, s = 1; d >= 0; d--) {
        stride[d] = s;
        dims[d] = shape[d];
        s *= shape[d];
    }
    for (int d = 0; d < k; d++)
        lead *= shape[d];
    IrValue ix = it == TCRT_I64 ? idx : ir_cast(c->g, idx, TCRT_I64, c->st);
    IrValue st_v = ir_const_i64s(c->g, TCRT_I64, stride, (int)k, c->st);
    IrValue dim_v = ir_const_i64s(c->g, TCRT_I64, dims, (int)k, c->st);
    IrValue zero = tfl_scalar(c, TCRT_I64, 0);
    IrValue inside = tfl_binary(c, OP_AND, tfl_binary(c, OP_GE, ix, zero), tfl_binary(c, OP_LT, ix, dim_v));
    /* an outside component contributes -(lead * k), more than every inside one adds */
    IrValue term = tfl_select(c, inside, tfl_binary(c, OP_MUL, ix, st_v), tfl_scalar(c, TCRT_I64, -(double)(lead * k)));
    IrValue flat = tfl_reduce(c, OP_REDUCE_SUM, term, (int64_t)1 << (is->rank - 1), false);
    int64_t udims[IR_MAX_RANK + 1], odims[IR_MAX_RANK + 1];
    udims[0] = n_rows;
    odims[0] = lead;
    for (int d = (int)k; d < rank; d++)
        udims[1 + d - k] = odims[1 + d - k] = shape[d];
    int r_rank = 1 + rank - (int)k;
    IrValue ins[2] = {tfl_reshape(c, upd, r_rank, udims), tfl_reshape(c, flat, 1, &n_rows)};
    TRY(ins[0]);
    TRY(ins[1]);
    IrType t = {tfl_dtype(upd), ir_shape_make(r_rank, odims)};
    IrParams p;
    memset(&p, 0, sizeof p);
    IrValue r = ir_emit1(c->g, OP_SCATTER_ADD, ins, 2, &p, &t, c->st);
    return one_out(tfl_reshape(c, r, rank, shape), out, n_out);
}

/* StridedSliceGrad(shape, begin, end, strides, dy): StridedSlice (its own
 * lowering, with this node's masks) applied to iota(shape) gives the flat
 * input position of every dy element; dy is scatter-added there. */
static bool lower_strided_slice_grad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t shape[IR_MAX_RANK + 1];
    int rank;
    if (!tfl_want_inputs(c, n_in, 5) ||
        !tf_const_ints(c, in[0], "input 0 (shape)", shape, IR_MAX_RANK + 1, &rank))
        return false;
    if (rank > IR_MAX_RANK)
        return tf_errorf(c, "shape has %d dims, more than %d", rank, IR_MAX_RANK);
    IrShape xs = ir_shape_make(rank, shape);
    int64_t count;
    for (int d = 0; d < rank; d++)
        if (shape[d] < 0)
            return tf_errorf(c, "shape must not be negative");
    if (!ir_shape_count_checked(&xs, &count))
        return tf_errorf(c, "shape has too many elements");
    const TfOpRow *ss = tf_find_row("StridedSlice");
    if (!ss)
        return tf_errorf(c, "internal: no StridedSlice lowering");
    tcrt_dtype it = count > INT32_MAX ? TCRT_I64 : TCRT_I32;
    size_t es = tcrt_dtype_size(it);
    void *buf = xx_malloc((size_t)(count ? count : 1) * es);
    if (!buf)
        return tf_errorf(c, "out of memory");
    for (int64_t i = 0; i < count; i++) {
        if (it == TCRT_I32)
            ((int32_t *)buf)[i] = (int32_t)i;
        else
            ((int64_t *)buf)[i] = i;
    }
    IrValue iota = ir_const(c->g, it, &xs, buf, c->st);
    xx_free(buf);
    TRY(iota);
    TfCtx sc = *c;
    sc.row = ss; /* StridedSlice's registry defaults; the masks are this node's */
    IrValue sin[4] = {iota, in[1], in[2], in[3]}, pos[TF_MAX_OUTPUTS];
    int n_pos = 0;
    if (!ss->lower(&sc, sin, 4, pos, &n_pos))
        return false;
    TRY(pos[0]);
    IrValue dy = in[4];
    int64_t n = ir_shape_count(tfl_shape(pos[0]));
    if (n != ir_shape_count(tfl_shape(dy))) {
        char a[200], b[200];
        return tf_errorf(c, "dy shape %s does not match the slice shape %s",
                         ir_shape_str(tfl_shape(dy), a, sizeof a),
                         ir_shape_str(tfl_shape(pos[0]), b, sizeof b));
    }
    IrValue flat_dy = tfl_reshape(c, dy, 1, &n), flat_pos = tfl_reshape(c, pos[0], 1, &n);
    IrType t = {tfl_dtype(dy), ir_shape_make(1, &count)};
    IrParams p;
    memset(&p, 0, sizeof p);
    IrValue ins[2] = {flat_dy, flat_pos};
    TRY(flat_dy);
    TRY(flat_pos);
    IrValue r = ir_emit1(c->g, OP_SCATTER_ADD, ins, 2, &p, &t, c->st);
    return one_out(tfl_reshape(c, r, rank, shape), out, n_out);
}

/* DynamicStitch / ParallelDynamicStitch(indices_0..n-1, data_0..n-1) with
 * constant indices: out[indices_m[i]] = data_m[i], the later one winning;
 * rows no index names are 0.  Emitted as a gather from the concatenated
 * data rows (plus a zero row when some row is unnamed). */
static bool lower_dynamic_stitch(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (n_in < 2 || n_in % 2)
        return tf_errorf(c, "expected an even number (>= 2) of inputs, got %d", n_in);
    int n = n_in / 2;
    const IrShape *d0 = tfl_shape(in[n]), *i0 = tfl_shape(in[0]);
    int rrank = d0->rank - i0->rank; /* rank of one row */
    char a[200], b[200];
    if (rrank < 0)
        return tf_errorf(c, "data 0 shape %s does not start with indices 0 shape %s",
                         ir_shape_str(d0, a, sizeof a), ir_shape_str(i0, b, sizeof b));
    int64_t row[IR_MAX_RANK];
    for (int d = 0; d < rrank; d++)
        row[d] = d0->dims[i0->rank + d];
    int64_t total = 0, max_idx = -1;
    for (int m = 0; m < n; m++)
        total += ir_shape_count(tfl_shape(in[m]));
    int64_t *idx = xx_malloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
    IrValue *rows = xx_malloc(sizeof(IrValue) * (size_t)(n + 1));
    if (!idx || !rows) {
        xx_free(idx);
        xx_free(rows);
        return tf_errorf(c, "out of memory");
    }
    bool okay = true;
    int64_t at = 0;
    for (int m = 0; m < n && okay; m++) {
        const IrShape *is = tfl_shape(in[m]), *ds = tfl_shape(in[n + m]);
        bool fits = ds->rank == is->rank + rrank && tfl_dtype(in[n + m]) == tfl_dtype(in[n]);
        for (int d = 0; fits && d < is->rank; d++)
            fits = ds->dims[d] == is->dims[d];
        for (int d = 0; fits && d < rrank; d++)
            fits = ds->dims[is->rank + d] == row[d];
        if (!fits) {
            okay = tf_errorf(
                c, "data %d shape %s does not match indices %d shape %s and the row shape of data 0", m,
                ir_shape_str(ds, a, sizeof a), m, ir_shape_str(is, b, sizeof b));
            break;
        }
        int64_t cnt = ir_shape_count(is);
        char what[48];
        int got;
        snprintf(what, sizeof what, "input %d (indices)", m);
        if (cnt > INT32_MAX) {
            okay = tf_errorf(c, "indices %d has too many elements", m);
            break;
        }
        if (!tf_const_ints(c, in[m], what, idx + at, (int)cnt, &got)) {
            okay = false;
            break;
        }
        for (int64_t i = 0; i < cnt; i++) {
            if (idx[at + i] < 0 || idx[at + i] >= IR_MAX_ELEMENTS) {
                okay = tf_errorf(c, "indices %d holds %lld, out of range", m, (long long)idx[at + i]);
                break;
            }
            if (idx[at + i] > max_idx)
                max_idx = idx[at + i];
        }
        int64_t rdims[IR_MAX_RANK + 1];
        rdims[0] = cnt;
        memcpy(rdims + 1, row, sizeof(int64_t) * (size_t)rrank);
        rows[m] = tfl_reshape(c, in[n + m], rrank + 1, rdims);
        okay = okay && rows[m].node;
        at += cnt;
    }
    int64_t n_out_rows = max_idx + 1;
    int64_t *src = okay ? xx_malloc(sizeof(int64_t) * (size_t)(n_out_rows > 0 ? n_out_rows : 1)) : NULL;
    if (okay && !src)
        okay = tf_errorf(c, "out of memory");
    IrValue r = none();
    if (okay) {
        bool missing = false;
        for (int64_t k = 0; k < n_out_rows; k++)
            src[k] = -1;
        for (int64_t i = 0; i < total; i++)
            src[idx[i]] = i; /* later entries win */
        for (int64_t k = 0; k < n_out_rows; k++)
            if (src[k] < 0) {
                src[k] = total; /* the zero row */
                missing = true;
            }
        int n_cat = n;
        if (missing) {
            int64_t zdims[IR_MAX_RANK + 1];
            zdims[0] = 1;
            memcpy(zdims + 1, row, sizeof(int64_t) * (size_t)rrank);
            IrShape zs = ir_shape_make(rrank + 1, zdims);
            rows[n_cat++] = ir_const(c->g, tfl_dtype(in[n]), &zs, NULL, c->st);
        }
        IrParams p;
        memset(&p, 0, sizeof p);
        IrValue cat = n_cat == 1 ? rows[0] : ir_emit1(c->g, OP_CONCAT, rows, n_cat, &p, NULL, c->st);
        tcrt_dtype it = total + 1 > INT32_MAX ? TCRT_I64 : TCRT_I32;
        IrValue gi = n_out_rows <= INT32_MAX ? ir_const_i64s(c->g, it, src, (int)n_out_rows, c->st) : none();
        if (cat.node && gi.node) {
            IrValue gin[2] = {cat, gi};
            r = ir_emit1(c->g, OP_GATHER, gin, 2, &p, NULL, c->st);
        } else if (st_ok(c->st)) {
            tf_errorf(c, "output has too many rows");
        }
    }
    xx_free(src);
    xx_free(idx);
    xx_free(rows);
    if (!okay || !r.node)
        return false;
    return one_out(r, out, n_out);
}

/* ---- the table ---- */

#define CONV_DEFAULTS "data_format=NHWC;dilations=[1,1,1,1];explicit_paddings=[]"

const TfOpRow tf_ops_grad[] = {
    /* activation gradients */
    {"ReluGrad", lower_relu_grad, "", "gt + select"},
    {"Relu6Grad", lower_relu6_grad, "", "gt, lt, and + select"},
    {"EluGrad", lower_elu_grad, "", "lt + select (+ add, mul)"},
    {"SeluGrad", lower_selu_grad, "", "lt + select (+ add, mul)"},
    {"LeakyReluGrad", lower_leaky_relu_grad, "alpha=0.2", "gt + select (+ mul)"},
    {"SigmoidGrad", lower_sigmoid_grad, "", "dy * y * (1 - y)"},
    {"TanhGrad", lower_tanh_grad, "", "dy * (1 - y^2)"},
    {"RsqrtGrad", lower_rsqrt_grad, "", "dy * -0.5 * y^3"},
    {"SqrtGrad", lower_sqrt_grad, "", "dy * 0.5 / y"},
    {"ReciprocalGrad", lower_reciprocal_grad, "", "-dy * y^2"},
    {"InvGrad", lower_reciprocal_grad, "", "-dy * y^2"},
    {"SoftplusGrad", lower_softplus_grad, "", "dy * sigmoid(x)"},
    {"SoftsignGrad", lower_softsign_grad, "", "dy / (1 + |x|)^2"},
    /* bias, batch norm */
    {"BiasAddGrad", lower_bias_add_grad, "data_format=NHWC", "reduce_sum"},
    {"FusedBatchNormGrad", lower_fused_batch_norm_grad, "data_format=NHWC;epsilon=0.0001;is_training=true",
     "reduce_sum + elementwise"},
    {"FusedBatchNormGradV2", lower_fused_batch_norm_grad, "data_format=NHWC;epsilon=0.0001;is_training=true",
     "reduce_sum + elementwise"},
    {"FusedBatchNormGradV3", lower_fused_batch_norm_grad, "data_format=NHWC;epsilon=0.0001;is_training=true",
     "reduce_sum + elementwise"},
    /* convolution and pooling */
    {"Conv2DBackpropFilter", lower_conv_backprop_filter, CONV_DEFAULTS, "conv2d_backprop_filter"},
    {"DepthwiseConv2dNativeBackpropFilter", lower_conv_backprop_filter, CONV_DEFAULTS,
     "conv2d_backprop_filter (depthwise)"},
    {"Conv2DBackpropFilterV2", lower_conv_backprop_filter, CONV_DEFAULTS, "conv2d_backprop_filter"},
    {"Conv2DBackpropInputV2", lower_backprop_input, CONV_DEFAULTS, "conv2d_transpose"},
    {"DepthwiseConv2dNativeBackpropInput", lower_backprop_input, CONV_DEFAULTS,
     "conv2d_transpose (depthwise)"},
    {"MaxPoolGrad", lower_maxpool_grad, "data_format=NHWC;explicit_paddings=[]", "maxpool_grad"},
    {"MaxPoolGradV2", lower_maxpool_grad_v2, "data_format=NHWC;explicit_paddings=[]", "maxpool_grad"},
    {"AvgPoolGrad", lower_avgpool_grad, "data_format=NHWC", "avgpool_grad"},
    /* losses */
    {"SoftmaxCrossEntropyWithLogits", lower_softmax_xent, "", "reduce_max/sum + exp, log (loss, backprop)"},
    {"SparseSoftmaxCrossEntropyWithLogits", lower_sparse_softmax_xent, "",
     "eq (one-hot) + reduce_max/sum + exp, log (loss, backprop)"},
    /* shape helpers */
    {"BroadcastGradientArgs", lower_broadcast_gradient_args, "", "const (from constant shapes)"},
    {"ConcatOffset", lower_concat_offset, "", "const (from constant shapes)"},
    /* scatter-style */
    {"UnsortedSegmentSum", lower_unsorted_segment_sum, "", "scatter_add"},
    {"ScatterNd", lower_scatter_nd, "", "mul + reduce_sum (flat rows) + scatter_add"},
    {"StridedSliceGrad", lower_strided_slice_grad,
     "begin_mask=0;end_mask=0;ellipsis_mask=0;new_axis_mask=0;shrink_axis_mask=0", "scatter_add"},
    {"DynamicStitch", lower_dynamic_stitch, "", "concat + gather (constant indices)"},
    {"ParallelDynamicStitch", lower_dynamic_stitch, "", "concat + gather (constant indices)"},
    {NULL, NULL, NULL, NULL},
};
