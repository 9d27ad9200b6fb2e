/* compiler/tf/tf_lower.h - small builders shared by the TF lowering tables
 * (tf_ops_nn.c, tf_ops_grad.c): IR node shorthands that pass an undefined
 * operand through (so a chain stops at the first error, which the IR
 * builder has recorded), argument checks with messages naming the node,
 * and the window arithmetic of TensorFlow's Conv/Pool ops.
 * Implemented in tf_lower.c. */
#ifndef COMPILER_TF_LOWER_H
#define COMPILER_TF_LOWER_H

#include "compiler/tf/tf_int.h"

#define TFL_TRY(v)                                                                                           \
    do {                                                                                                     \
        if (!(v).node)                                                                                       \
            return false;                                                                                    \
    } while (0)

static inline const IrShape *tfl_shape(IrValue v)
{
    return &ir_value_type(v)->shape;
}
static inline tcrt_dtype tfl_dtype(IrValue v)
{
    return ir_value_type(v)->dtype;
}

/* "expected 2 inputs, got 3" unless n_in == want. */
bool tfl_want_inputs(TfCtx *c, int n_in, int want);
/* "<what> must be 4-D, got shape [2,3]" unless v has that rank. */
bool tfl_want_rank(TfCtx *c, IrValue v, int rank, const char *what);
/* "<what> must be <need>, got shape [..]"; always false. */
bool tfl_shape_msg(TfCtx *c, const char *what, IrValue v, const char *need);

/* Builders: an undefined operand gives an undefined result. */
IrValue tfl_scalar(TfCtx *c, tcrt_dtype dt, double v);
IrValue tfl_unary(TfCtx *c, Op op, IrValue a);
IrValue tfl_binary(TfCtx *c, Op op, IrValue a, IrValue b);
IrValue tfl_select(TfCtx *c, IrValue cond, IrValue a, IrValue b);
IrValue tfl_reshape(TfCtx *c, IrValue a, int rank, const int64_t *dims);
IrValue tfl_transpose4(TfCtx *c, IrValue a, int p0, int p1, int p2, int p3);
IrValue tfl_to_nhwc(TfCtx *c, IrValue a);   /* NCHW -> NHWC */
IrValue tfl_from_nhwc(TfCtx *c, IrValue a); /* NHWC -> NCHW */
/* Reduction op over the axes in mask (keep: reduced dims stay as 1). */
IrValue tfl_reduce(TfCtx *c, Op op, IrValue a, int64_t mask, bool keep);

/* Windows.  data_format attr: NHWC (false) or NCHW (true). */
bool tfl_data_format(TfCtx *c, bool *nchw);
/* H and W of a 4-value window list (strides, dilations, ksize; from an
 * attribute or a constant input) in data format order; batch and channel
 * entries must be 1, H and W positive. */
bool tfl_hw_of(TfCtx *c, const char *name, const int64_t *v, int n, bool nchw, int64_t *h, int64_t *w);
bool tfl_hw_attr(TfCtx *c, const char *name, bool nchw, int64_t *h, int64_t *w);
/* TensorFlow's SAME padding for one dim: out = ceil(in / s),
 * total = max((out-1)*s + (k-1)*d + 1 - in, 0), lo = total/2. */
void tfl_same_pads(int64_t in, int64_t k, int64_t s, int64_t d, int64_t *lo, int64_t *hi);
/* pads[4] = top, left, bottom, right for an input of height ih, width iw
 * under the node's padding attr (SAME, VALID or EXPLICIT). */
bool tfl_window_pads(TfCtx *c, bool nchw, int64_t ih, int64_t iw, int64_t kh, int64_t kw, int64_t sh,
                     int64_t sw, int64_t dh, int64_t dw, int64_t pads[4]);
/* Conv parameter block (TCRT_CONV_* layout). */
IrParams tfl_conv_params(int64_t sh, int64_t sw, int64_t dh, int64_t dw, const int64_t pads[4]);
/* Pool parameter block (TCRT_POOL_* layout): window kh x kw, strides, pads. */
IrParams tfl_pool_params(int64_t kh, int64_t kw, int64_t sh, int64_t sw, const int64_t pads[4]);

#endif
