/* compiler/onnx/onnx_ops.c - the ONNX op table: one lowering per op type
 * into IR primitives (the same ones the TensorFlow rows use).  Opset-aware
 * where the operator's signature changed: Reshape shape input (5), Clip
 * min/max inputs (11), Squeeze/Unsqueeze/ReduceSum axes inputs (13),
 * Softmax on one axis instead of a 2-D coercion (13).  NCHW conv and pool
 * transpose to the NHWC primitives and back.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/onnx/onnx_int.h"

static tcrt_dtype dtype_of(IrValue v)
{
    return ir_value_type(v)->dtype;
}

static IrValue slice(OnnxCtx *c, IrValue x, const int64_t *begin, const int64_t *stride, const int64_t *count);
static IrValue broadcast_to(OnnxCtx *c, IrValue x, const IrShape *s);
static IrValue bin(OnnxCtx *c, Op op, IrValue a, IrValue b);
static IrValue select3(OnnxCtx *c, IrValue cond, IrValue a, IrValue b);
static IrValue reduce(OnnxCtx *c, Op op, IrValue x, int64_t mask, bool keep);

static bool need(OnnxCtx *c, const IrValue *in, int n_in, int k)
{
    for (int i = 0; i < k; i++)
        if (i >= n_in || !in[i].node)
            return onnx_errorf(c, "input %d is required", i);
    return true;
}

static IrValue transpose(OnnxCtx *c, IrValue a, const int64_t *perm, int rank)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < rank; i++)
        p.i[i] = perm[i];
    return ir_emit1(c->g, OP_TRANSPOSE, &a, 1, &p, NULL, c->st);
}

static IrValue reshape_to(OnnxCtx *c, IrValue a, int rank, const int64_t *dims)
{
    IrShape s = ir_shape_make(rank, dims);
    return ir_reshape(c->g, a, &s, c->st);
}

static bool norm_axis(OnnxCtx *c, int64_t *axis, int rank, const char *what)
{
    if (*axis < -rank || *axis >= (rank ? rank : 1))
        return onnx_errorf(c, "%s %lld is out of range for rank %d", what, (long long)*axis, rank);
    if (*axis < 0)
        *axis += rank;
    return true;
}

/* ---- elementwise ---- */

static bool lower_unary(OnnxCtx *c, Op op, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    out[0] = ir_unary(c->g, op, in[0], c->st);
    return out[0].node != NULL;
}

static bool lower_binary(OnnxCtx *c, Op op, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 2))
        return false;
    int64_t bc, axis;
    if (!onnx_attr_int(c, "broadcast", 0, &bc) || !onnx_attr_int(c, "axis", -1, &axis))
        return false;
    IrValue b = in[1];
    if (c->opset < 7 && bc && onnx_attr(c, "axis")) { /* legacy: b's dims line up from `axis` */
        const IrShape *as = shape_of(in[0]), *bs = shape_of(b);
        if (!norm_axis(c, &axis, as->rank, "axis") || axis + bs->rank > as->rank)
            return onnx_errorf(c, "legacy broadcast: B does not fit A at axis %lld", (long long)axis);
        int64_t d[IR_MAX_RANK];
        for (int i = 0; i < as->rank - (int)axis; i++)
            d[i] = i < bs->rank ? bs->dims[i] : 1;
        TRY(b = reshape_to(c, b, as->rank - (int)axis, d));
    }
    if (op == OP_POW && dtype_of(b) != dtype_of(in[0]))
        TRY(b = ir_cast(c->g, b, dtype_of(in[0]), c->st));
    out[0] = ir_binary(c->g, op, in[0], b, c->st);
    return out[0].node != NULL;
}

#define UNARY(fn, op)                                                                                      \
    static bool fn(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)                                  \
    {                                                                                                      \
        return lower_unary(c, op, in, n_in, out);                                                          \
    }
#define BINARY(fn, op)                                                                                     \
    static bool fn(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)                                  \
    {                                                                                                      \
        return lower_binary(c, op, in, n_in, out);                                                         \
    }
UNARY(lower_relu, OP_RELU)
UNARY(lower_sigmoid, OP_SIGMOID)
UNARY(lower_tanh, OP_TANH)
UNARY(lower_exp, OP_EXP)
UNARY(lower_log, OP_LOG)
UNARY(lower_sqrt, OP_SQRT)
UNARY(lower_neg, OP_NEG)
UNARY(lower_abs, OP_ABS)
UNARY(lower_erf, OP_ERF)
UNARY(lower_floor, OP_FLOOR)
UNARY(lower_ceil, OP_CEIL)
UNARY(lower_reciprocal, OP_RECIP)
UNARY(lower_sin, OP_SIN)
UNARY(lower_cos, OP_COS)
UNARY(lower_not, OP_NOT)
BINARY(lower_add, OP_ADD)
BINARY(lower_sub, OP_SUB)
BINARY(lower_mul, OP_MUL)
BINARY(lower_div, OP_DIV)
BINARY(lower_pow, OP_POW)
BINARY(lower_equal, OP_EQ)
BINARY(lower_less, OP_LT)
BINARY(lower_greater, OP_GT)
BINARY(lower_and, OP_AND)
BINARY(lower_or, OP_OR)

static bool lower_identity(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (n_in >= 1 && onnx_is_seq(in[0])) { /* a sequence or an optional passes through */
        out[0] = in[0];
        return true;
    }
    if (!need(c, in, n_in, 1))
        return false;
    out[0] = in[0];
    return true;
}

static bool lower_leaky_relu(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    double alpha;
    if (!need(c, in, n_in, 1) || !onnx_attr_float(c, "alpha", 0.01, &alpha))
        return false;
    tcrt_dtype dt = dtype_of(in[0]);
    IrValue neg = ir_binary(c->g, OP_LT, in[0], scalar(c, dt, 0), c->st);
    IrValue ax = ir_binary(c->g, OP_MUL, in[0], scalar(c, dt, alpha), c->st);
    TRY(neg);
    TRY(ax);
    IrValue ins[3] = {neg, ax, in[0]};
    out[0] = ir_emit1(c->g, OP_SELECT, ins, 3, NULL, NULL, c->st);
    return out[0].node != NULL;
}

static bool lower_clip(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    IrValue x = in[0], lo = {NULL, 0}, hi = {NULL, 0};
    tcrt_dtype dt = dtype_of(x);
    if (c->opset < 11) {
        double mn, mx;
        if (!onnx_attr_float(c, "min", -INFINITY, &mn) || !onnx_attr_float(c, "max", INFINITY, &mx))
            return false;
        if (!isinf(mn))
            lo = scalar(c, dt, mn);
        if (!isinf(mx))
            hi = scalar(c, dt, mx);
    } else {
        if (n_in > 1)
            lo = in[1];
        if (n_in > 2)
            hi = in[2];
    }
    if (lo.node)
        TRY(x = ir_binary(c->g, OP_MAX, x, lo, c->st));
    if (hi.node)
        TRY(x = ir_binary(c->g, OP_MIN, x, hi, c->st));
    out[0] = x;
    return true;
}

static bool lower_cast(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t to;
    tcrt_dtype dt;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "to", 0, &to) || !onnx_dtype(c, (int)to, "attribute 'to'", &dt))
        return false;
    out[0] = onnx_cast(c, in[0], dt);
    return out[0].node != NULL;
}

static bool lower_constant(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    (void)in;
    (void)n_in;
    const Onnx__AttributeProto *a;
    if ((a = onnx_attr(c, "value")) && a->t)
        return onnx_tensor_to_const(c->g, a->t, c->file, "attribute 'value'", &out[0], c->st);
    if ((a = onnx_attr(c, "value_float"))) {
        out[0] = scalar(c, TCRT_F32, a->f);
    } else if ((a = onnx_attr(c, "value_int"))) {
        int64_t v = a->i;
        out[0] = ir_const(c->g, TCRT_I64, &(IrShape){0, {0}}, &v, c->st);
    } else if ((a = onnx_attr(c, "value_floats"))) {
        IrShape s = ir_shape_make(1, (int64_t[]){(int64_t)a->n_floats});
        out[0] = ir_const(c->g, TCRT_F32, &s, a->floats, c->st);
    } else if ((a = onnx_attr(c, "value_ints"))) {
        IrShape s = ir_shape_make(1, (int64_t[]){(int64_t)a->n_ints});
        out[0] = ir_const(c->g, TCRT_I64, &s, a->ints, c->st);
    } else
        return onnx_errorf(c, "no supported value attribute (value, value_float(s), value_int(s))");
    return out[0].node != NULL;
}

/* ---- contractions ---- */

static IrValue matmul(OnnxCtx *c, IrValue a, IrValue b, bool ta, bool tb)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_MM_TA] = ta;
    p.i[TCRT_MM_TB] = tb;
    IrValue ins[2] = {a, b};
    return ir_emit1(c->g, OP_MATMUL, ins, 2, &p, NULL, c->st);
}

static bool lower_matmul(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 2))
        return false;
    IrValue a = in[0], b = in[1];
    IrShape as = *shape_of(a), bs = *shape_of(b);
    if (as.rank == 0 || bs.rank == 0)
        return onnx_errorf(c, "MatMul operands must not be scalars");
    if (as.rank == 1)
        TRY(a = reshape_to(c, a, 2, (int64_t[]){1, as.dims[0]}));
    if (bs.rank == 1)
        TRY(b = reshape_to(c, b, 2, (int64_t[]){bs.dims[0], 1}));
    IrValue y = matmul(c, a, b, false, false);
    TRY(y);
    if (as.rank == 1 || bs.rank == 1) {
        IrShape ys = *shape_of(y), r = {0};
        r.rank = 0;
        for (int i = 0; i < ys.rank; i++) {
            if (as.rank == 1 && i == ys.rank - 2)
                continue;
            if (bs.rank == 1 && i == ys.rank - 1)
                continue;
            r.dims[r.rank++] = ys.dims[i];
        }
        TRY(y = ir_reshape(c->g, y, &r, c->st));
    }
    out[0] = y;
    return true;
}

static bool lower_gemm(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t ta, tb;
    double alpha, beta;
    if (!need(c, in, n_in, 2) || !onnx_attr_int(c, "transA", 0, &ta) || !onnx_attr_int(c, "transB", 0, &tb) ||
        !onnx_attr_float(c, "alpha", 1.0, &alpha) || !onnx_attr_float(c, "beta", 1.0, &beta))
        return false;
    if (shape_of(in[0])->rank != 2 || shape_of(in[1])->rank != 2)
        return onnx_errorf(c, "A and B must be matrices");
    tcrt_dtype dt = dtype_of(in[0]);
    IrValue y = matmul(c, in[0], in[1], ta != 0, tb != 0);
    TRY(y);
    if (alpha != 1.0)
        TRY(y = ir_binary(c->g, OP_MUL, y, scalar(c, dt, alpha), c->st));
    if (n_in > 2 && in[2].node && beta != 0.0) {
        IrValue cc = in[2];
        if (beta != 1.0)
            TRY(cc = ir_binary(c->g, OP_MUL, cc, scalar(c, dt, beta), c->st));
        TRY(y = ir_binary(c->g, OP_ADD, y, cc, c->st));
    }
    out[0] = y;
    return true;
}

/* ---- windows (NCHW -> NHWC primitives) ---- */

static const int64_t TO_NHWC[4] = {0, 2, 3, 1}, TO_NCHW[4] = {0, 3, 1, 2};

typedef struct Window {
    int64_t k[2], s[2], d[2], pads[4]; /* pads: top, left, bottom, right */
} Window;

/* Spatial attributes of a 2-D window op over input spatial dims ih, iw;
 * kernel dims kh, kw (from the weights or kernel_shape). */
/* nsp 1: a 1-D window over W (H is 1): the attributes have one value per
 * spatial dim (pads: begin, end). */
static bool window_attrs_n(OnnxCtx *c, int nsp, int64_t ih, int64_t iw, int64_t kh, int64_t kw, bool ceil_ok,
                           Window *w)
{
    int64_t v[8];
    int n;
    char ap[32];
    w->k[0] = kh;
    w->k[1] = kw;
    w->s[0] = w->s[1] = w->d[0] = w->d[1] = 1;
    memset(w->pads, 0, sizeof w->pads);
    if (!onnx_attr_ints(c, "strides", v, 8, &n))
        return false;
    if (nsp == 1 && n == 1)
        w->s[1] = v[0];
    else if (n == 2 && nsp == 2)
        w->s[0] = v[0], w->s[1] = v[1];
    else if (n)
        return onnx_errorf(c, "strides must have %d values", nsp);
    if (!onnx_attr_ints(c, "dilations", v, 8, &n))
        return false;
    if (nsp == 1 && n == 1)
        w->d[1] = v[0];
    else if (n == 2 && nsp == 2)
        w->d[0] = v[0], w->d[1] = v[1];
    else if (n)
        return onnx_errorf(c, "dilations must have %d values", nsp);
    for (int i = 0; i < 2; i++)
        if (w->s[i] <= 0 || w->d[i] <= 0 || w->k[i] <= 0)
            return onnx_errorf(c, "kernel, strides and dilations must be positive");
    if (!onnx_attr_str(c, "auto_pad", "NOTSET", ap, sizeof ap))
        return false;
    int64_t in[2] = {ih, iw};
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
        for (int i = 0; i < 2; i++) {
            int64_t o = (in[i] + w->s[i] - 1) / w->s[i];
            int64_t ek = (w->k[i] - 1) * w->d[i] + 1;
            int64_t tot = (o - 1) * w->s[i] + ek - in[i];
            if (tot < 0)
                tot = 0;
            int64_t small = tot / 2;
            w->pads[i] = ap[5] == 'U' ? small : tot - small;
            w->pads[i + 2] = tot - w->pads[i];
        }
    } else if (!strcmp(ap, "NOTSET")) {
        if (!onnx_attr_ints(c, "pads", v, 8, &n))
            return false;
        if (nsp == 1 && n == 2) {
            w->pads[1] = v[0], w->pads[3] = v[1];
        } else if (nsp == 2 && n == 4) {
            w->pads[0] = v[0], w->pads[1] = v[1], w->pads[2] = v[2], w->pads[3] = v[3];
        } else if (n)
            return onnx_errorf(c, "pads must have %d values", 2 * nsp);
        for (int i = 0; i < 4; i++)
            if (w->pads[i] < 0)
                return onnx_errorf(c, "negative pads are not supported");
    } else if (strcmp(ap, "VALID"))
        return onnx_errorf(c, "auto_pad '%s' is not supported", ap);
    int64_t cm;
    if (!onnx_attr_int(c, "ceil_mode", 0, &cm))
        return false;
    if (cm) {
        if (!ceil_ok)
            return onnx_errorf(c, "ceil_mode is not supported here");
        for (int i = 0; i < 2; i++) {
            int64_t ek = (w->k[i] - 1) * w->d[i] + 1;
            int64_t span = in[i] + w->pads[i] + w->pads[i + 2] - ek;
            if (span < 0)
                continue;
            int64_t o = (span + w->s[i] - 1) / w->s[i] + 1;
            if ((o - 1) * w->s[i] >= in[i] + w->pads[i])
                o--; /* the last window must start inside the input or its begin padding */
            int64_t need_len = (o - 1) * w->s[i] + ek;
            int64_t extra = need_len - (in[i] + w->pads[i] + w->pads[i + 2]);
            if (extra > 0)
                w->pads[i + 2] += extra;
        }
    }
    return true;
}

/* 3-D convolution as a sum over the kernel's depth taps of 2-D
 * convolutions: tap kd reads the depth positions od * sd + kd * dd of the
 * depth-padded input, folded into the batch ([N*Do, C, H, W]); groups are
 * one convolution per group, concatenated. */
static bool conv3d(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    IrValue x = in[0], w = in[1];
    const IrShape xs = *shape_of(x), ws = *shape_of(w);
    int64_t group, st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, pads[6] = {0}, v[8];
    int n;
    char ap[32];
    if (!onnx_attr_int(c, "group", 1, &group) || !onnx_attr_str(c, "auto_pad", "NOTSET", ap, sizeof ap))
        return false;
    if (strcmp(ap, "NOTSET"))
        return onnx_errorf(c, "3-D convolution: auto_pad '%s' is not supported (explicit pads are)", ap);
    if (!onnx_attr_ints(c, "strides", v, 8, &n))
        return false;
    for (int i = 0; n == 3 && i < 3; i++)
        st[i] = v[i];
    if (!onnx_attr_ints(c, "dilations", v, 8, &n))
        return false;
    for (int i = 0; n == 3 && i < 3; i++)
        dl[i] = v[i];
    if (!onnx_attr_ints(c, "pads", v, 8, &n))
        return false;
    for (int i = 0; n == 6 && i < 6; i++)
        pads[i] = v[i];
    int64_t cin = xs.dims[1], m = ws.dims[0];
    if (group <= 0 || cin % group || m % group || ws.dims[1] * group != cin || group > 64)
        return onnx_errorf(c, "weights [%lld,%lld,...] do not fit %lld input channels in %lld groups",
                           (long long)ws.dims[0], (long long)ws.dims[1], (long long)cin, (long long)group);
    for (int i = 0; i < 3; i++)
        if (st[i] <= 0 || dl[i] <= 0 || pads[i] < 0 || pads[i + 3] < 0)
            return onnx_errorf(c, "strides and dilations must be positive, pads not negative");
    int64_t kd = ws.dims[2], ekd = (kd - 1) * dl[0] + 1, dp = xs.dims[2] + pads[0] + pads[3];
    if (dp < ekd)
        return onnx_errorf(c, "the kernel is deeper than the padded input");
    int64_t od = (dp - ekd) / st[0] + 1;
    if (pads[0] || pads[3]) {
        IrParams pp;
        memset(&pp, 0, sizeof pp);
        pp.i[4] = pads[0], pp.i[5] = pads[3];
        IrType pt = {dtype_of(x), xs};
        pt.shape.dims[2] = dp;
        TRY(x = ir_emit1(c->g, OP_PAD, &x, 1, &pp, &pt, c->st));
    }
    int64_t cg = cin / group, mg = m / group;
    IrValue acc = {NULL, 0};
    for (int64_t t = 0; t < kd; t++) {
        int64_t b5[5] = {0, 0, t * dl[0], 0, 0}, s5[5] = {1, 1, st[0], 1, 1};
        int64_t c5[5] = {xs.dims[0], cin, od, xs.dims[3], xs.dims[4]};
        IrValue xt = slice(c, x, b5, s5, c5);
        TRY(xt = transpose(c, xt, (int64_t[]){0, 2, 3, 4, 1}, 5)); /* [N, Do, H, W, C] */
        TRY(xt = reshape_to(c, xt, 4, (int64_t[]){xs.dims[0] * od, xs.dims[3], xs.dims[4], cin}));
        int64_t wb[5] = {0, 0, t, 0, 0}, wsd[5] = {1, 1, 1, 1, 1}, wc[5] = {m, ws.dims[1], 1, ws.dims[3], ws.dims[4]};
        IrValue wt = slice(c, w, wb, wsd, wc);
        TRY(wt = reshape_to(c, wt, 4, (int64_t[]){m, ws.dims[1], ws.dims[3], ws.dims[4]}));
        TRY(wt = transpose(c, wt, (int64_t[]){2, 3, 1, 0}, 4)); /* [KH, KW, Cg, M] */
        IrValue parts[64];
        for (int64_t gi = 0; gi < group; gi++) {
            IrValue xg = xt, wg = wt;
            if (group > 1) {
                const IrShape *a = shape_of(xt), *b = shape_of(wt);
                TRY(xg = slice(c, xt, (int64_t[]){0, 0, 0, gi * cg}, (int64_t[]){1, 1, 1, 1},
                               (int64_t[]){a->dims[0], a->dims[1], a->dims[2], cg}));
                TRY(wg = slice(c, wt, (int64_t[]){0, 0, 0, gi * mg}, (int64_t[]){1, 1, 1, 1},
                               (int64_t[]){b->dims[0], b->dims[1], b->dims[2], mg}));
            }
            IrParams p;
            memset(&p, 0, sizeof p);
            p.i[TCRT_CONV_SH] = st[1];
            p.i[TCRT_CONV_SW] = st[2];
            p.i[TCRT_CONV_DH] = dl[1];
            p.i[TCRT_CONV_DW] = dl[2];
            p.i[TCRT_CONV_PT] = pads[1];
            p.i[TCRT_CONV_PL] = pads[2];
            p.i[TCRT_CONV_PB] = pads[4];
            p.i[TCRT_CONV_PR] = pads[5];
            IrValue ins[2] = {xg, wg};
            TRY(parts[gi] = ir_emit1(c->g, OP_CONV2D, ins, 2, &p, NULL, c->st));
        }
        IrValue y = parts[0];
        if (group > 1) {
            IrParams cp;
            memset(&cp, 0, sizeof cp);
            cp.i[0] = 3;
            TRY(y = ir_emit1(c->g, OP_CONCAT, parts, (int)group, &cp, NULL, c->st));
        }
        acc = t ? bin(c, OP_ADD, acc, y) : y;
        TRY(acc);
    }
    if (n_in > 2 && in[2].node)
        TRY(acc = bin(c, OP_ADD, acc, in[2]));
    const IrShape *as = shape_of(acc); /* [N*Do, Ho, Wo, M] */
    TRY(acc = reshape_to(c, acc, 5, (int64_t[]){xs.dims[0], od, as->dims[1], as->dims[2], m}));
    out[0] = transpose(c, acc, (int64_t[]){0, 4, 1, 2, 3}, 5);
    return out[0].node != NULL;
}

static bool lower_conv(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 2))
        return false;
    IrValue x = in[0], w = in[1];
    int xr = shape_of(x)->rank;
    if (xr != 4 && xr != 3 && xr != 5)
        return onnx_errorf(c, "only 1-D, 2-D and 3-D convolutions are supported (input rank %d)", xr);
    if (shape_of(w)->rank != xr)
        return onnx_errorf(c, "weights must have rank %d", xr);
    if (dtype_of(x) != TCRT_F32)
        return onnx_errorf(c, "only float32 convolutions are supported");
    if (xr == 5)
        return conv3d(c, in, n_in, out);
    if (xr == 3) { /* 1-D: a 2-D conv over [N,C,1,W] */
        const IrShape *xs = shape_of(x), *ws = shape_of(w);
        TRY(x = reshape_to(c, x, 4, (int64_t[]){xs->dims[0], xs->dims[1], 1, xs->dims[2]}));
        TRY(w = reshape_to(c, w, 4, (int64_t[]){ws->dims[0], ws->dims[1], 1, ws->dims[2]}));
    }
    const IrShape xs = *shape_of(x), ws = *shape_of(w);
    int64_t group;
    if (!onnx_attr_int(c, "group", 1, &group))
        return false;
    int64_t cin = xs.dims[1], m = ws.dims[0];
    if (group <= 0 || cin % group || m % group || ws.dims[1] * group != cin)
        return onnx_errorf(c, "weights [%lld,%lld,...] do not fit %lld input channels in %lld groups",
                           (long long)ws.dims[0], (long long)ws.dims[1], (long long)cin, (long long)group);
    bool depthwise = group > 1;
    Window win;
    if (!window_attrs_n(c, xr == 3 ? 1 : 2, xs.dims[2], xs.dims[3], ws.dims[2], ws.dims[3], false, &win))
        return false;
    if (depthwise && group != cin) { /* grouped: one convolution per group, concatenated */
        int64_t cg = cin / group, mg = m / group;
        bool bias = n_in > 2 && in[2].node;
        IrValue parts[64];
        if (group > 64)
            return onnx_errorf(c, "more than 64 groups");
        int64_t b1[IR_MAX_RANK] = {0}, st1[IR_MAX_RANK] = {1, 1, 1, 1};
        for (int64_t gi = 0; gi < group; gi++) {
            int64_t cnt[4] = {xs.dims[0], cg, xs.dims[2], xs.dims[3]}, wc[4] = {mg, ws.dims[1], ws.dims[2], ws.dims[3]};
            b1[1] = gi * cg;
            IrValue xg = slice(c, x, b1, st1, cnt);
            b1[1] = 0;
            b1[0] = gi * mg;
            IrValue wg = slice(c, w, b1, st1, wc);
            b1[0] = 0;
            TRY(xg);
            TRY(wg);
            IrValue gin[3] = {xg, wg, {NULL, 0}};
            if (bias) {
                int64_t bb[1] = {gi * mg}, bs[1] = {1}, bc[1] = {mg};
                TRY(gin[2] = slice(c, in[2], bb, bs, bc));
            }
            IrValue xn = transpose(c, xg, TO_NHWC, 4), wn = transpose(c, wg, (int64_t[]){2, 3, 1, 0}, 4);
            TRY(xn);
            TRY(wn);
            IrParams gp;
            memset(&gp, 0, sizeof gp);
            gp.i[TCRT_CONV_SH] = win.s[0];
            gp.i[TCRT_CONV_SW] = win.s[1];
            gp.i[TCRT_CONV_DH] = win.d[0];
            gp.i[TCRT_CONV_DW] = win.d[1];
            gp.i[TCRT_CONV_PT] = win.pads[0];
            gp.i[TCRT_CONV_PL] = win.pads[1];
            gp.i[TCRT_CONV_PB] = win.pads[2];
            gp.i[TCRT_CONV_PR] = win.pads[3];
            IrValue ins3[3] = {xn, wn, gin[2]};
            TRY(parts[gi] = ir_emit1(c->g, OP_CONV2D, ins3, bias ? 3 : 2, &gp, NULL, c->st));
        }
        IrParams cp;
        memset(&cp, 0, sizeof cp);
        cp.i[0] = 3;
        IrValue y = ir_emit1(c->g, OP_CONCAT, parts, (int)group, &cp, NULL, c->st);
        TRY(y);
        TRY(y = transpose(c, y, TO_NCHW, 4));
        if (xr == 3) {
            const IrShape *ys = shape_of(y);
            TRY(y = reshape_to(c, y, 3, (int64_t[]){ys->dims[0], ys->dims[1], ys->dims[3]}));
        }
        out[0] = y;
        return true;
    }
    TRY(x = transpose(c, x, TO_NHWC, 4));
    if (depthwise) { /* [C*mult,1,kh,kw] -> [C,mult,kh,kw] -> [kh,kw,C,mult] */
        int64_t mult = m / cin;
        TRY(w = reshape_to(c, w, 4, (int64_t[]){cin, mult, ws.dims[2], ws.dims[3]}));
        TRY(w = transpose(c, w, (int64_t[]){2, 3, 0, 1}, 4));
    } else
        TRY(w = transpose(c, w, (int64_t[]){2, 3, 1, 0}, 4));
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = win.s[0];
    p.i[TCRT_CONV_SW] = win.s[1];
    p.i[TCRT_CONV_DH] = win.d[0];
    p.i[TCRT_CONV_DW] = win.d[1];
    p.i[TCRT_CONV_PT] = win.pads[0];
    p.i[TCRT_CONV_PL] = win.pads[1];
    p.i[TCRT_CONV_PB] = win.pads[2];
    p.i[TCRT_CONV_PR] = win.pads[3];
    p.i[TCRT_CONV_DEPTHWISE] = depthwise;
    bool bias = n_in > 2 && in[2].node;
    if (bias && (shape_of(in[2])->rank != 1 || shape_of(in[2])->dims[0] != m))
        return onnx_errorf(c, "bias must have %lld elements", (long long)m);
    IrValue ins[3] = {x, w, bias ? in[2] : (IrValue){NULL, 0}};
    IrValue y = ir_emit1(c->g, OP_CONV2D, ins, bias ? 3 : 2, &p, NULL, c->st);
    TRY(y);
    TRY(y = transpose(c, y, TO_NCHW, 4));
    if (xr == 3) {
        const IrShape *ys = shape_of(y);
        TRY(y = reshape_to(c, y, 3, (int64_t[]){ys->dims[0], ys->dims[1], ys->dims[3]}));
    }
    out[0] = y;
    return true;
}

static bool pool_slices(OnnxCtx *c, Op op, const IrValue *in, IrValue *out);

static bool lower_pool(OnnxCtx *c, Op op, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    IrValue x = in[0];
    int xr = shape_of(x)->rank;
    int64_t dil[8];
    int n_dil;
    if (!onnx_attr_ints(c, "dilations", dil, 8, &n_dil))
        return false;
    bool dilated = false;
    for (int i = 0; i < n_dil; i++)
        dilated |= dil[i] != 1;
    /* the NHWC primitives take 1-D and 2-D float32 windows without dilation */
    if ((xr != 4 && xr != 3) || dtype_of(x) != TCRT_F32 || dilated || (c->nd->n_output > 1 && c->nd->output[1][0]))
        return pool_slices(c, op, in, out);
    int64_t k[8];
    int nk;
    if (!onnx_attr_ints(c, "kernel_shape", k, 8, &nk))
        return false;
    if (nk != xr - 2)
        return onnx_errorf(c, "kernel_shape must have %d values", xr - 2);
    if (xr == 3) {
        const IrShape *s3 = shape_of(x);
        TRY(x = reshape_to(c, x, 4, (int64_t[]){s3->dims[0], s3->dims[1], 1, s3->dims[2]}));
        k[1] = k[0];
        k[0] = 1;
    }
    const IrShape xs = *shape_of(x);
    Window win;
    if (!window_attrs_n(c, xr - 2, xs.dims[2], xs.dims[3], k[0], k[1], true, &win))
        return false;
    if (win.d[0] != 1 || win.d[1] != 1)
        return onnx_errorf(c, "dilated pooling is not supported");
    int64_t cip = 0;
    if (op == OP_AVGPOOL && !onnx_attr_int(c, "count_include_pad", 0, &cip))
        return false;
    TRY(x = transpose(c, x, TO_NHWC, 4));
    if (cip && (win.pads[0] || win.pads[1] || win.pads[2] || win.pads[3])) {
        int64_t cm;
        if (!onnx_attr_int(c, "ceil_mode", 0, &cm))
            return false;
        if (cm)
            return onnx_errorf(c, "count_include_pad with ceil_mode is not supported");
        IrParams pp;
        memset(&pp, 0, sizeof pp);
        pp.i[2] = win.pads[0], pp.i[3] = win.pads[2], pp.i[4] = win.pads[1], pp.i[5] = win.pads[3];
        const IrShape *s = shape_of(x);
        IrType t = {dtype_of(x), ir_shape_make(4, (int64_t[]){s->dims[0], s->dims[1] + win.pads[0] + win.pads[2],
                                                              s->dims[2] + win.pads[1] + win.pads[3], s->dims[3]})};
        TRY(x = ir_emit1(c->g, OP_PAD, &x, 1, &pp, &t, c->st));
        memset(win.pads, 0, sizeof win.pads);
    }
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_POOL_KH] = win.k[0];
    p.i[TCRT_POOL_KW] = win.k[1];
    p.i[TCRT_POOL_SH] = win.s[0];
    p.i[TCRT_POOL_SW] = win.s[1];
    p.i[TCRT_POOL_PT] = win.pads[0];
    p.i[TCRT_POOL_PL] = win.pads[1];
    p.i[TCRT_POOL_PB] = win.pads[2];
    p.i[TCRT_POOL_PR] = win.pads[3];
    IrValue y = ir_emit1(c->g, op, &x, 1, &p, NULL, c->st);
    TRY(y);
    TRY(y = transpose(c, y, TO_NCHW, 4));
    if (xr == 3) {
        const IrShape *ys = shape_of(y);
        TRY(y = reshape_to(c, y, 3, (int64_t[]){ys->dims[0], ys->dims[1], ys->dims[3]}));
    }
    out[0] = y;
    return true;
}

/* Pooling over any number of spatial dims, with dilations, any element
 * type and MaxPool's Indices output: the max (or sum) of one strided slice
 * of the padded input per kernel offset.  Average divides by the number of
 * input (or, with count_include_pad, input and pad) elements per window,
 * computed here per output position (separable by axis).  Indices: the
 * flat input index (storage_order 1: spatial dims column-major) of the
 * first maximum in kernel scan order, carried through the same selects. */
/* Pooling's last step: average divides by the per-window element count
 * (computed here, separable by axis); integer inputs cast back. */
static bool pool_finish(OnnxCtx *c, Op op, IrValue acc, IrShape xs, int nsp, const int64_t *o, const int64_t *k,
                        const int64_t *st, const int64_t *dl, const int64_t *pb, const int64_t *pe, int64_t cip,
                        bool fl, tcrt_dtype dt, IrValue *out)
{
    int r = xs.rank;
    int64_t total = 1;
    for (int d = 0; d < nsp; d++)
        total *= o[d];
    bool is_max = op == OP_MAXPOOL;
    if (!is_max) { /* divide by the per-window element count */
        double *cnt = malloc(sizeof(double) * (size_t)(total ? total : 1));
        float *cntf = malloc(sizeof(float) * (size_t)(total ? total : 1));
        if (!cnt || !cntf) {
            free(cnt);
            free(cntf);
            return st_errorf(c->st, ST_NOMEM, "out of memory");
        }
        for (int64_t i = 0; i < total; i++) {
            int64_t q = i;
            double n_el = 1;
            for (int d = nsp - 1; d >= 0; d--) {
                int64_t od = q % o[d], hit = 0;
                q /= o[d];
                for (int64_t kk = 0; kk < k[d]; kk++) {
                    int64_t pos = od * st[d] + kk * dl[d] - pb[d]; /* in input coordinates */
                    hit += cip ? pos < xs.dims[2 + d] + pe[d] : pos >= 0 && pos < xs.dims[2 + d];
                }
                n_el *= (double)hit;
            }
            cnt[i] = n_el ? n_el : 1;
            cntf[i] = (float)cnt[i];
        }
        IrShape cs = {0};
        cs.rank = r;
        cs.dims[0] = cs.dims[1] = 1;
        for (int d = 0; d < nsp; d++)
            cs.dims[2 + d] = o[d];
        IrValue cv = ir_const(c->g, dtype_of(acc), &cs, dtype_of(acc) == TCRT_F32 ? (void *)cntf : (void *)cnt,
                              c->st);
        free(cnt);
        free(cntf);
        TRY(acc = bin(c, OP_DIV, acc, cv));
    }
    out[0] = fl ? acc : ir_cast(c->g, acc, dt, c->st);
    return out[0].node != NULL;
}

static bool pool_slices(OnnxCtx *c, Op op, const IrValue *in, IrValue *out)
{
    IrValue x = in[0];
    const IrShape xs = *shape_of(x);
    int r = xs.rank, nsp = r - 2;
    bool is_max = op == OP_MAXPOOL;
    int64_t k[8], st[8], dl[8], pads[16], ceil_mode, cip = 0, order = 0;
    int nk, ns, nd, np;
    char ap[32];
    if (!onnx_attr_ints(c, "kernel_shape", k, 8, &nk) || !onnx_attr_ints(c, "strides", st, 8, &ns) ||
        !onnx_attr_ints(c, "dilations", dl, 8, &nd) || !onnx_attr_ints(c, "pads", pads, 16, &np) ||
        !onnx_attr_str(c, "auto_pad", "NOTSET", ap, sizeof ap) || !onnx_attr_int(c, "ceil_mode", 0, &ceil_mode) ||
        (!is_max && !onnx_attr_int(c, "count_include_pad", 0, &cip)) ||
        (is_max && !onnx_attr_int(c, "storage_order", 0, &order)))
        return false;
    if (nsp < 1 || nsp > 6 || nk != nsp)
        return onnx_errorf(c, "attribute 'kernel_shape' must have %d values (input rank %d)", nsp, r);
    if ((ns && ns != nsp) || (nd && nd != nsp) || (np && np != 2 * nsp))
        return onnx_errorf(c, "strides and dilations need %d values, pads %d", nsp, 2 * nsp);
    int64_t o[8], pb[8], pe[8], kcount = 1;
    for (int d = 0; d < nsp; d++) {
        st[d] = ns ? st[d] : 1;
        dl[d] = nd ? dl[d] : 1;
        pb[d] = np ? pads[d] : 0;
        pe[d] = np ? pads[nsp + d] : 0;
        if (k[d] <= 0 || st[d] <= 0 || dl[d] <= 0 || pb[d] < 0 || pe[d] < 0)
            return onnx_errorf(c, "kernel_shape, strides and dilations must be positive, pads not negative");
        int64_t n = xs.dims[2 + d], ek = (k[d] - 1) * dl[d] + 1;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            o[d] = (n + st[d] - 1) / st[d];
            int64_t tot = (o[d] - 1) * st[d] + ek - n;
            tot = tot < 0 ? 0 : tot;
            pb[d] = ap[5] == 'U' ? tot / 2 : tot - tot / 2;
            pe[d] = tot - pb[d];
        } else if (!strcmp(ap, "VALID")) {
            pb[d] = pe[d] = 0;
            o[d] = n >= ek ? (n - ek) / st[d] + 1 : 0;
        } else if (!strcmp(ap, "NOTSET")) {
            int64_t span = n + pb[d] + pe[d] - ek;
            o[d] = span < 0 ? 0 : (ceil_mode ? (span + st[d] - 1) / st[d] : span / st[d]) + 1;
            if (ceil_mode && o[d] > 0 && (o[d] - 1) * st[d] >= n + pb[d])
                o[d]--; /* the last window starts inside the input or its begin padding */
        } else
            return onnx_errorf(c, "attribute 'auto_pad': unknown value '%s'", ap);
        kcount *= k[d];
    }
    bool want_idx = is_max && c->nd->n_output > 1 && c->nd->output[1][0];
    if (want_idx && kcount > 25) /* two fused operands per kernel element */
        return onnx_errorf(c, "the Indices output is supported for kernels of at most 25 elements (this one has "
                              "%lld)", (long long)kcount);
    tcrt_dtype dt = dtype_of(x);
    if (dt == TCRT_I64 || dt == TCRT_U64)
        return onnx_errorf(c, "pooling of %s is not supported", tcrt_dtype_name(dt));
    bool fl = dt == TCRT_F32 || dt == TCRT_F64;
    if (!fl)
        TRY(x = ir_cast(c->g, x, TCRT_F64, c->st)); /* exact for every other integer type */
    /* pad: begin pb, end up to the last window's reach */
    IrParams pp;
    memset(&pp, 0, sizeof pp);
    IrType pt = {dtype_of(x), xs};
    bool padded = false;
    for (int d = 0; d < nsp; d++) {
        int64_t n = xs.dims[2 + d], reach = (o[d] - 1) * st[d] + (k[d] - 1) * dl[d] + 1;
        int64_t end = reach - n - pb[d] > 0 ? reach - n - pb[d] : 0;
        pp.i[2 * (2 + d)] = pb[d];
        pp.i[2 * (2 + d) + 1] = end;
        pt.shape.dims[2 + d] = n + pb[d] + end;
        padded |= pb[d] || end;
    }
    pp.f[0] = is_max ? -INFINITY : 0;
    IrValue xp = padded ? ir_emit1(c->g, OP_PAD, &x, 1, &pp, &pt, c->st) : x;
    TRY(xp);
    IrValue iota = {NULL, 0};
    if (!want_idx) {
        /* separable: per spatial axis, gather the K taps of each output
         * position side by side ([.., O*K, ..] -> [.., O, K, ..]) and reduce */
        IrValue acc = xp;
        for (int d = 0; d < nsp; d++) {
            int a = 2 + d;
            int64_t *iv = malloc(sizeof(int64_t) * (size_t)(o[d] * k[d] > 0 ? o[d] * k[d] : 1));
            if (!iv)
                return st_errorf(c->st, ST_NOMEM, "out of memory");
            for (int64_t oo = 0; oo < o[d]; oo++)
                for (int64_t kk = 0; kk < k[d]; kk++)
                    iv[oo * k[d] + kk] = oo * st[d] + kk * dl[d];
            IrValue idx = ir_const(c->g, TCRT_I64, &(IrShape){1, {o[d] * k[d]}}, iv, c->st);
            free(iv);
            TRY(idx);
            IrParams gp;
            memset(&gp, 0, sizeof gp);
            gp.i[0] = a;
            IrValue ins[2] = {acc, idx};
            IrValue g = ir_emit1(c->g, OP_GATHER, ins, 2, &gp, NULL, c->st);
            TRY(g);
            IrShape gs = *shape_of(g), ss = {0};
            ss.rank = gs.rank + 1;
            for (int i = 0, j = 0; i < gs.rank; i++) {
                if (i == a) {
                    ss.dims[j++] = o[d];
                    ss.dims[j++] = k[d];
                } else
                    ss.dims[j++] = gs.dims[i];
            }
            TRY(g = ir_reshape(c->g, g, &ss, c->st));
            TRY(acc = reduce(c, is_max ? OP_REDUCE_MAX : OP_REDUCE_SUM, g, (int64_t)1 << (a + 1), false));
        }
        return pool_finish(c, op, acc, xs, nsp, o, k, st, dl, pb, pe, cip, fl, dt, out);
    }
    {
        int64_t cnt = ir_shape_count(&xs);
        int64_t *v = malloc(sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
        if (!v)
            return st_errorf(c->st, ST_NOMEM, "out of memory");
        int64_t sp = 1;
        for (int d = 0; d < nsp; d++)
            sp *= xs.dims[2 + d];
        for (int64_t i = 0; i < cnt; i++) {
            int64_t rem = i % sp, idx = i - rem, mul = 1;
            if (order) { /* column-major spatial index */
                int64_t q = rem, pos[8];
                for (int d = nsp - 1; d >= 0; d--)
                    pos[d] = q % xs.dims[2 + d], q /= xs.dims[2 + d];
                for (int d = 0; d < nsp; d++)
                    idx += pos[d] * mul, mul *= xs.dims[2 + d];
            } else
                idx = i;
            v[i] = idx;
        }
        iota = ir_const(c->g, TCRT_I64, &xs, v, c->st);
        free(v);
        TRY(iota);
        if (padded) {
            IrParams ip = pp;
            ip.f[0] = 0;
            IrType it = {TCRT_I64, pt.shape};
            TRY(iota = ir_emit1(c->g, OP_PAD, &iota, 1, &ip, &it, c->st));
        }
    }
    IrValue acc = {NULL, 0}, aidx = {NULL, 0};
    int64_t off[8] = {0}, begin[8] = {0}, stride[8], count[8];
    stride[0] = stride[1] = 1;
    count[0] = xs.dims[0], count[1] = xs.dims[1];
    for (int64_t t = 0; t < kcount; t++) {
        for (int d = 0; d < nsp; d++) {
            begin[2 + d] = off[d] * dl[d];
            stride[2 + d] = st[d];
            count[2 + d] = o[d];
        }
        IrValue sl = slice(c, xp, begin, stride, count);
        TRY(sl);
        if (!acc.node) {
            acc = sl;
            if (want_idx)
                TRY(aidx = slice(c, iota, begin, stride, count));
        } else if (want_idx) {
            IrValue gt = bin(c, OP_GT, sl, acc);
            TRY(aidx = select3(c, gt, slice(c, iota, begin, stride, count), aidx));
            TRY(acc = select3(c, gt, sl, acc));
        } else
            TRY(acc = bin(c, is_max ? OP_MAX : OP_ADD, acc, sl));
        for (int d = nsp - 1; d >= 0; d--) { /* next offset, last dim fastest */
            if (++off[d] < k[d])
                break;
            off[d] = 0;
        }
    }
    if (!pool_finish(c, op, acc, xs, nsp, o, k, st, dl, pb, pe, cip, fl, dt, out))
        return false;
    out[1] = aidx;
    return true;
}

static bool lower_maxpool(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_pool(c, OP_MAXPOOL, in, n_in, out);
}
static bool lower_avgpool(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_pool(c, OP_AVGPOOL, in, n_in, out);
}

/* ---- reductions ---- */

static IrValue reduce(OnnxCtx *c, Op op, IrValue x, int64_t mask, bool keep)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_RED_MASK] = mask;
    p.i[1] = keep;
    return ir_emit1(c->g, op, &x, 1, &p, NULL, c->st);
}

static bool lower_global_avgpool(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    const IrShape *s = shape_of(in[0]);
    if (s->rank < 3)
        return onnx_errorf(c, "input must have rank >= 3");
    int64_t mask = 0, cnt = 1;
    for (int i = 2; i < s->rank; i++)
        mask |= (int64_t)1 << i, cnt *= s->dims[i];
    IrValue y = reduce(c, OP_REDUCE_SUM, in[0], mask, true);
    TRY(y);
    out[0] = ir_binary(c->g, OP_MUL, y, scalar(c, dtype_of(y), cnt ? 1.0 / (double)cnt : 0), c->st);
    return out[0].node != NULL;
}

static bool lower_reduce(OnnxCtx *c, Op op, bool mean, bool axes_input, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    int rank = shape_of(in[0])->rank;
    int64_t keep, noop, axes[IR_MAX_RANK * 2];
    int n = 0;
    if (!onnx_attr_int(c, "keepdims", 1, &keep) || !onnx_attr_int(c, "noop_with_empty_axes", 0, &noop))
        return false;
    if (axes_input) {
        if (n_in > 1 && in[1].node && !onnx_const_ints(c, in[1], "input 1 (axes)", axes, IR_MAX_RANK * 2, &n))
            return false;
    } else if (!onnx_attr_ints(c, "axes", axes, IR_MAX_RANK * 2, &n))
        return false;
    if (n == 0 && noop) {
        out[0] = in[0];
        return true;
    }
    int64_t mask = 0, cnt = 1;
    const IrShape *s = shape_of(in[0]);
    if (n == 0)
        for (int i = 0; i < rank; i++)
            mask |= (int64_t)1 << i;
    for (int i = 0; i < n; i++) {
        if (!norm_axis(c, &axes[i], rank, "axis"))
            return false;
        mask |= (int64_t)1 << axes[i];
    }
    for (int i = 0; i < rank; i++)
        if (mask & ((int64_t)1 << i))
            cnt *= s->dims[i];
    IrValue y = reduce(c, op, in[0], mask, keep != 0);
    TRY(y);
    if (mean)
        TRY(y = ir_binary(c->g, OP_MUL, y, scalar(c, dtype_of(y), cnt ? 1.0 / (double)cnt : NAN), c->st));
    out[0] = y;
    return true;
}

static bool lower_reduce_sum(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_reduce(c, OP_REDUCE_SUM, false, c->opset >= 13, in, n_in, out);
}
static bool lower_reduce_mean(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_reduce(c, OP_REDUCE_SUM, true, c->opset >= 18, in, n_in, out);
}
static bool lower_reduce_max(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_reduce(c, OP_REDUCE_MAX, false, c->opset >= 18, in, n_in, out);
}
static bool lower_reduce_min(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_reduce(c, OP_REDUCE_MIN, false, c->opset >= 18, in, n_in, out);
}
static bool lower_reduce_prod(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_reduce(c, OP_REDUCE_PROD, false, c->opset >= 18, in, n_in, out);
}

/* softmax over one axis: exp(x - max) / sum(exp(x - max)). */
static IrValue softmax_axis(OnnxCtx *c, IrValue x, int axis, bool log_form)
{
    int64_t mask = (int64_t)1 << axis;
    IrValue mx = reduce(c, OP_REDUCE_MAX, x, mask, true);
    IrValue d = ir_binary(c->g, OP_SUB, x, mx, c->st);
    IrValue e = ir_unary(c->g, OP_EXP, d, c->st);
    IrValue s = reduce(c, OP_REDUCE_SUM, e, mask, true);
    if (log_form)
        return ir_binary(c->g, OP_SUB, d, ir_unary(c->g, OP_LOG, s, c->st), c->st);
    return ir_binary(c->g, OP_DIV, e, s, c->st);
}

static bool softmax_common(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out, bool log_form)
{
    if (!need(c, in, n_in, 1))
        return false;
    const IrShape s = *shape_of(in[0]);
    int64_t axis;
    if (!onnx_attr_int(c, "axis", c->opset >= 13 ? -1 : 1, &axis) || !norm_axis(c, &axis, s.rank, "axis"))
        return false;
    if (c->opset >= 13 || axis == s.rank - 1) {
        out[0] = softmax_axis(c, in[0], (int)axis, log_form);
        return out[0].node != NULL;
    }
    int64_t a = 1, b = 1;
    for (int i = 0; i < s.rank; i++)
        if (i < axis)
            a *= s.dims[i];
        else
            b *= s.dims[i];
    IrValue x = reshape_to(c, in[0], 2, (int64_t[]){a, b});
    TRY(x);
    TRY(x = softmax_axis(c, x, 1, log_form));
    out[0] = ir_reshape(c->g, x, &s, c->st);
    return out[0].node != NULL;
}

static bool lower_softmax(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return softmax_common(c, in, n_in, out, false);
}
static bool lower_log_softmax(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return softmax_common(c, in, n_in, out, true);
}

static bool lower_batchnorm(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    double eps;
    int64_t training;
    if (!need(c, in, n_in, 5) || !onnx_attr_float(c, "epsilon", 1e-5, &eps) ||
        !onnx_attr_int(c, "training_mode", 0, &training))
        return false;
    if ((training && c->opset < 14) || (!training && c->nd->n_output > 1 && c->nd->output[1][0]))
        return onnx_errorf(c, "training mode before opset 14 (mean/var/saved outputs) is not supported");
    const IrShape *xs = shape_of(in[0]);
    if (xs->rank < 2)
        return onnx_errorf(c, "input must have rank >= 2");
    int64_t dims[IR_MAX_RANK];
    dims[0] = xs->dims[1];
    for (int i = 2; i < xs->rank; i++)
        dims[i - 1] = 1;
    IrValue p[4];
    for (int i = 0; i < 4; i++) {
        if (shape_of(in[i + 1])->rank != 1 || shape_of(in[i + 1])->dims[0] != xs->dims[1])
            return onnx_errorf(c, "input %d must have %lld elements", i + 1, (long long)xs->dims[1]);
        TRY(p[i] = reshape_to(c, in[i + 1], xs->rank - 1, dims));
    }
    tcrt_dtype dt = dtype_of(in[0]);
    if (training) {
        /* normalize with the batch statistics (population variance); the
         * running ones are momentum * old + (1 - momentum) * batch */
        double mom;
        if (!onnx_attr_float(c, "momentum", 0.9, &mom))
            return false;
        int64_t mask = 0, cnt = 1;
        for (int i = 0; i < xs->rank; i++)
            if (i != 1)
                mask |= (int64_t)1 << i, cnt *= xs->dims[i];
        IrValue mean = bin(c, OP_MUL, reduce(c, OP_REDUCE_SUM, in[0], mask, true), scalar(c, dt, 1.0 / (double)cnt));
        IrValue dev = bin(c, OP_SUB, in[0], mean);
        IrValue var = bin(c, OP_MUL, reduce(c, OP_REDUCE_SUM, bin(c, OP_MUL, dev, dev), mask, true),
                          scalar(c, dt, 1.0 / (double)cnt));
        TRY(var);
        TRY(p[2] = reshape_to(c, mean, xs->rank - 1, dims));
        TRY(p[3] = reshape_to(c, var, xs->rank - 1, dims));
        for (int k = 0; k < 2; k++) {
            if (c->nd->n_output <= (size_t)(k + 1) || !c->nd->output[k + 1][0])
                continue;
            IrValue batch = reshape_to(c, k ? var : mean, 1, (int64_t[]){xs->dims[1]});
            TRY(out[k + 1] = bin(c, OP_ADD, bin(c, OP_MUL, in[3 + k], scalar(c, dt, mom)),
                                 bin(c, OP_MUL, batch, scalar(c, dt, 1 - mom))));
        }
    }
    IrValue a = ir_binary(c->g, OP_MUL, p[0],
                          ir_unary(c->g, OP_RSQRT, ir_binary(c->g, OP_ADD, p[3], scalar(c, dt, eps), c->st), c->st),
                          c->st);
    IrValue b = ir_binary(c->g, OP_SUB, p[1], ir_binary(c->g, OP_MUL, p[2], a, c->st), c->st);
    out[0] = ir_binary(c->g, OP_ADD, ir_binary(c->g, OP_MUL, in[0], a, c->st), b, c->st);
    return out[0].node != NULL;
}

/* ---- shapes and data movement ---- */

static bool lower_reshape(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t sh[IR_MAX_RANK + 1], allowzero;
    int n;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "allowzero", 0, &allowzero))
        return false;
    if (c->opset >= 5) {
        if (!need(c, in, n_in, 2) || !onnx_const_ints(c, in[1], "input 1 (shape)", sh, IR_MAX_RANK + 1, &n))
            return false;
    } else if (!onnx_attr_ints(c, "shape", sh, IR_MAX_RANK + 1, &n))
        return false;
    if (n > IR_MAX_RANK)
        return onnx_errorf(c, "target rank %d is more than %d", n, IR_MAX_RANK);
    const IrShape xs = *shape_of(in[0]);
    int64_t total = ir_shape_count(&xs), known = 1;
    int infer = -1;
    for (int i = 0; i < n; i++) {
        if (sh[i] == 0 && !allowzero) {
            if (i >= xs.rank)
                return onnx_errorf(c, "shape[%d] = 0 copies a dim the input does not have", i);
            sh[i] = xs.dims[i];
        }
        if (sh[i] == -1) {
            if (infer >= 0)
                return onnx_errorf(c, "more than one -1 in the shape");
            infer = i;
        } else if (sh[i] < 0)
            return onnx_errorf(c, "negative dim %lld in the shape", (long long)sh[i]);
        else
            known *= sh[i];
    }
    if (infer >= 0) {
        if (known == 0 || total % known)
            return onnx_errorf(c, "cannot infer the -1 dim (%lld elements into %lld)", (long long)total,
                               (long long)known);
        sh[infer] = total / known;
    }
    out[0] = reshape_to(c, in[0], n, sh);
    return out[0].node != NULL;
}

static bool lower_flatten(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "axis", 1, &axis))
        return false;
    const IrShape s = *shape_of(in[0]);
    if (axis < 0)
        axis += s.rank;
    if (axis < 0 || axis > s.rank)
        return onnx_errorf(c, "axis out of range");
    int64_t a = 1, b = 1;
    for (int i = 0; i < s.rank; i++)
        if (i < axis)
            a *= s.dims[i];
        else
            b *= s.dims[i];
    out[0] = reshape_to(c, in[0], 2, (int64_t[]){a, b});
    return out[0].node != NULL;
}

static bool lower_transpose(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t perm[IR_MAX_RANK];
    int n;
    if (!need(c, in, n_in, 1) || !onnx_attr_ints(c, "perm", perm, IR_MAX_RANK, &n))
        return false;
    int r = shape_of(in[0])->rank;
    if (n == 0) {
        for (int i = 0; i < r; i++)
            perm[i] = r - 1 - i;
        n = r;
    }
    if (n != r)
        return onnx_errorf(c, "perm has %d values for rank %d", n, r);
    out[0] = transpose(c, in[0], perm, r);
    return out[0].node != NULL;
}

static bool lower_concat(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "axis", 0, &axis))
        return false;
    IrValue ins[64];
    int k = 0;
    for (int i = 0; i < n_in; i++)
        if (in[i].node && ir_shape_count(shape_of(in[i])) > 0)
            ins[k++] = in[i];
    if (k == 0)
        ins[k++] = in[0];
    if (!norm_axis(c, &axis, shape_of(in[0])->rank, "axis"))
        return false;
    if (k == 1) {
        out[0] = ins[0];
        return true;
    }
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = axis;
    out[0] = ir_emit1(c->g, OP_CONCAT, ins, k, &p, NULL, c->st);
    return out[0].node != NULL;
}

static bool lower_squeeze(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axes[IR_MAX_RANK];
    int n = 0;
    if (!need(c, in, n_in, 1))
        return false;
    if (c->opset >= 13) {
        if (n_in > 1 && in[1].node && !onnx_const_ints(c, in[1], "input 1 (axes)", axes, IR_MAX_RANK, &n))
            return false;
    } else if (!onnx_attr_ints(c, "axes", axes, IR_MAX_RANK, &n))
        return false;
    const IrShape s = *shape_of(in[0]);
    bool drop[IR_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (!norm_axis(c, &axes[i], s.rank, "axis"))
            return false;
        if (s.dims[axes[i]] != 1)
            return onnx_errorf(c, "cannot squeeze dim %lld of size %lld", (long long)axes[i],
                               (long long)s.dims[axes[i]]);
        drop[axes[i]] = true;
    }
    IrShape r = {0};
    r.rank = 0;
    for (int i = 0; i < s.rank; i++)
        if (!(n ? drop[i] : s.dims[i] == 1))
            r.dims[r.rank++] = s.dims[i];
    out[0] = ir_reshape(c->g, in[0], &r, c->st);
    return out[0].node != NULL;
}

static bool lower_unsqueeze(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axes[IR_MAX_RANK];
    int n = 0;
    if (!need(c, in, n_in, 1))
        return false;
    if (c->opset >= 13) {
        if (!need(c, in, n_in, 2) || !onnx_const_ints(c, in[1], "input 1 (axes)", axes, IR_MAX_RANK, &n))
            return false;
    } else if (!onnx_attr_ints(c, "axes", axes, IR_MAX_RANK, &n))
        return false;
    const IrShape s = *shape_of(in[0]);
    int r = s.rank + n;
    if (r > IR_MAX_RANK)
        return onnx_errorf(c, "result rank %d is more than %d", r, IR_MAX_RANK);
    bool ins[IR_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        if (!norm_axis(c, &axes[i], r, "axis"))
            return false;
        if (ins[axes[i]])
            return onnx_errorf(c, "axis %lld given twice", (long long)axes[i]);
        ins[axes[i]] = true;
    }
    IrShape o = {0};
    o.rank = r;
    for (int i = 0, k = 0; i < r; i++)
        o.dims[i] = ins[i] ? 1 : s.dims[k++];
    out[0] = ir_reshape(c->g, in[0], &o, c->st);
    return out[0].node != NULL;
}

static bool lower_gather(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis;
    if (!need(c, in, n_in, 2) || !onnx_attr_int(c, "axis", 0, &axis))
        return false;
    const IrShape *s = shape_of(in[0]);
    if (!norm_axis(c, &axis, s->rank, "axis"))
        return false;
    IrValue idx = in[1];
    tcrt_dtype it = dtype_of(idx);
    if (it != TCRT_I32 && it != TCRT_I64)
        return onnx_errorf(c, "indices must be int32 or int64");
    /* negative indices count from the end */
    IrValue neg = ir_binary(c->g, OP_LT, idx, scalar(c, it, 0), c->st);
    IrValue wrapped = ir_binary(c->g, OP_ADD, idx, scalar(c, it, (double)s->dims[axis]), c->st);
    TRY(neg);
    TRY(wrapped);
    IrValue sel[3] = {neg, wrapped, idx};
    TRY(idx = ir_emit1(c->g, OP_SELECT, sel, 3, NULL, NULL, c->st));
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = axis;
    IrValue ins[2] = {in[0], idx};
    out[0] = ir_emit1(c->g, OP_GATHER, ins, 2, &p, NULL, c->st);
    return out[0].node != NULL;
}

static bool lower_shape(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t start, end;
    if (!need(c, in, n_in, 1))
        return false;
    const IrShape *s = shape_of(in[0]);
    if (!onnx_attr_int(c, "start", 0, &start) || !onnx_attr_int(c, "end", s->rank, &end))
        return false;
    if (start < 0)
        start += s->rank;
    if (end < 0)
        end += s->rank;
    start = start < 0 ? 0 : start > s->rank ? s->rank : start;
    end = end < start ? start : end > s->rank ? s->rank : end;
    out[0] = ir_const_i64s(c->g, TCRT_I64, s->dims + start, (int)(end - start), c->st);
    return out[0].node != NULL;
}

/* ---- more elementwise ---- */

UNARY(lower_sign, OP_SIGN)
UNARY(lower_round, OP_ROUND)
UNARY(lower_tan, OP_TAN)
BINARY(lower_less_equal, OP_LE)
BINARY(lower_greater_equal, OP_GE)
BINARY(lower_xor, OP_NE)

static IrValue bin(OnnxCtx *c, Op op, IrValue a, IrValue b)
{
    return ir_binary(c->g, op, a, b, c->st);
}

static IrValue select3(OnnxCtx *c, IrValue cond, IrValue a, IrValue b)
{
    if (!cond.node || !a.node || !b.node)
        return (IrValue){NULL, 0};
    IrValue ins[3] = {cond, a, b};
    return ir_emit1(c->g, OP_SELECT, ins, 3, NULL, NULL, c->st);
}

static bool lower_elu_like(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out, double alpha, double gamma)
{
    if (!need(c, in, n_in, 1))
        return false;
    IrValue x = in[0];
    tcrt_dtype dt = dtype_of(x);
    IrValue neg = bin(c, OP_MUL, bin(c, OP_SUB, ir_unary(c->g, OP_EXP, x, c->st), scalar(c, dt, 1)),
                      scalar(c, dt, alpha));
    IrValue y = select3(c, bin(c, OP_LT, x, scalar(c, dt, 0)), neg, x);
    if (gamma != 1.0)
        y = bin(c, OP_MUL, y, scalar(c, dt, gamma));
    out[0] = y;
    return y.node != NULL;
}

static bool lower_elu(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    double alpha;
    return onnx_attr_float(c, "alpha", 1.0, &alpha) && lower_elu_like(c, in, n_in, out, alpha, 1.0);
}

static bool lower_selu(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    double alpha, gamma;
    return onnx_attr_float(c, "alpha", 1.67326319217681884765625, &alpha) &&
           onnx_attr_float(c, "gamma", 1.05070102214813232421875, &gamma) &&
           lower_elu_like(c, in, n_in, out, alpha, gamma);
}

static bool lower_prelu(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 2))
        return false;
    IrValue x = in[0], slope = in[1];
    const IrShape *xs = shape_of(x), *ss = shape_of(slope);
    IrShape r = {0};
    if (ss->rank == 1 && xs->rank > 2 && ss->dims[0] == xs->dims[1] && !ir_broadcast_shapes(xs, ss, &r)) {
        int64_t d[IR_MAX_RANK]; /* a per-channel slope (opset < 7 semantics) */
        d[0] = ss->dims[0];
        for (int i = 1; i < xs->rank - 1; i++)
            d[i] = 1;
        TRY(slope = reshape_to(c, slope, xs->rank - 1, d));
    }
    out[0] = select3(c, bin(c, OP_LT, x, scalar(c, dtype_of(x), 0)), bin(c, OP_MUL, x, slope), x);
    return out[0].node != NULL;
}

static IrValue hard_sigmoid(OnnxCtx *c, IrValue x, double alpha, double beta)
{
    tcrt_dtype dt = dtype_of(x);
    IrValue y = bin(c, OP_ADD, bin(c, OP_MUL, x, scalar(c, dt, alpha)), scalar(c, dt, beta));
    return bin(c, OP_MIN, bin(c, OP_MAX, y, scalar(c, dt, 0)), scalar(c, dt, 1));
}

static bool lower_hard_sigmoid(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    double alpha, beta;
    if (!need(c, in, n_in, 1) || !onnx_attr_float(c, "alpha", 0.2, &alpha) ||
        !onnx_attr_float(c, "beta", 0.5, &beta))
        return false;
    out[0] = hard_sigmoid(c, in[0], alpha, beta);
    return out[0].node != NULL;
}

static bool lower_hard_swish(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    out[0] = bin(c, OP_MUL, in[0], hard_sigmoid(c, in[0], 1.0 / 6, 0.5));
    return out[0].node != NULL;
}

static bool lower_softplus(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    out[0] = ir_unary(c->g, OP_LOG1P, ir_unary(c->g, OP_EXP, in[0], c->st), c->st);
    return out[0].node != NULL;
}

static bool lower_softsign(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    IrValue x = in[0];
    out[0] = bin(c, OP_DIV, x, bin(c, OP_ADD, ir_unary(c->g, OP_ABS, x, c->st), scalar(c, dtype_of(x), 1)));
    return out[0].node != NULL;
}

static bool lower_dropout(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    /* identity unless training_mode may be true with a non-zero ratio */
    double ratio = 0.5, training = 0;
    bool ratio_known = !(n_in > 1 && in[1].node) || ir_const_scalar(in[1], &ratio);
    bool training_known = !(n_in > 2 && in[2].node) || ir_const_scalar(in[2], &training);
    if ((!training_known || training != 0) && (!ratio_known || ratio != 0))
        return onnx_errorf(c, "training mode (random dropout) is not supported");
    out[0] = in[0];
    if (c->nd->n_output > 1 && c->nd->output[1][0]) { /* the mask: all kept */
        uint8_t one = 1;
        IrValue t = ir_const(c->g, TCRT_BOOL, &(IrShape){0, {0}}, &one, c->st);
        IrType ty = {TCRT_BOOL, *shape_of(in[0])};
        TRY(t);
        out[1] = ir_emit1(c->g, OP_BROADCAST, &t, 1, NULL, &ty, c->st);
        return out[1].node != NULL;
    }
    return true;
}

/* Max, Min, Sum, Mean: variadic, broadcasting. */
static bool lower_variadic(OnnxCtx *c, Op op, bool mean, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    IrValue y = in[0];
    for (int i = 1; i < n_in; i++)
        TRY(y = bin(c, op, y, in[i]));
    if (mean && n_in > 1)
        TRY(y = bin(c, OP_DIV, y, scalar(c, dtype_of(y), n_in)));
    out[0] = y;
    return true;
}
static bool lower_max(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_variadic(c, OP_MAX, false, in, n_in, out);
}
static bool lower_min(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_variadic(c, OP_MIN, false, in, n_in, out);
}
static bool lower_sum(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_variadic(c, OP_ADD, false, in, n_in, out);
}
static bool lower_mean(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_variadic(c, OP_ADD, true, in, n_in, out);
}

static bool lower_where(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 3))
        return false;
    out[0] = select3(c, in[0], in[1], in[2]);
    return out[0].node != NULL;
}

/* ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp: a
 * map, ReduceSum's axes handling, then a finish. */
static bool lower_reduce_composite(OnnxCtx *c, Op pre, Op post, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    IrValue x[2] = {in[0], n_in > 1 ? in[1] : (IrValue){NULL, 0}};
    if (pre == OP_SQUARE || pre == OP_ABS || pre == OP_EXP)
        TRY(x[0] = ir_unary(c->g, pre, x[0], c->st));
    if (!lower_reduce(c, OP_REDUCE_SUM, false, c->opset >= 18, x, n_in, out))
        return false;
    if (post != OP_COUNT)
        TRY(out[0] = ir_unary(c->g, post, out[0], c->st));
    return true;
}
static bool lower_reduce_l1(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_reduce_composite(c, OP_ABS, OP_COUNT, in, n_in, out);
}
static bool lower_reduce_l2(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_reduce_composite(c, OP_SQUARE, OP_SQRT, in, n_in, out);
}
static bool lower_reduce_sum_square(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_reduce_composite(c, OP_SQUARE, OP_COUNT, in, n_in, out);
}
static bool lower_reduce_log_sum(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_reduce_composite(c, OP_COUNT, OP_LOG, in, n_in, out);
}
static bool lower_reduce_log_sum_exp(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_reduce_composite(c, OP_EXP, OP_LOG, in, n_in, out);
}

static bool lower_argreduce(OnnxCtx *c, Op op, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis, keep, last;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "axis", 0, &axis) || !onnx_attr_int(c, "keepdims", 1, &keep) ||
        !onnx_attr_int(c, "select_last_index", 0, &last))
        return false;
    IrShape s = *shape_of(in[0]);
    if (!norm_axis(c, &axis, s.rank, "axis"))
        return false;
    IrValue x = in[0];
    if (last) { /* the first index of the reversed axis, mapped back */
        int64_t begin[IR_MAX_RANK] = {0}, stride[IR_MAX_RANK], count[IR_MAX_RANK];
        for (int i = 0; i < s.rank; i++)
            stride[i] = 1, count[i] = s.dims[i];
        begin[axis] = s.dims[axis] - 1;
        stride[axis] = -1;
        TRY(x = slice(c, x, begin, stride, count));
    }
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_ARG_AXIS] = axis;
    IrType t = {0};
    memset(&t, 0, sizeof t);
    t.dtype = TCRT_I64;
    IrValue y = ir_emit1(c->g, op, &x, 1, &p, &t, c->st);
    TRY(y);
    if (last)
        TRY(y = bin(c, OP_SUB, scalar(c, TCRT_I64, (double)(s.dims[axis] - 1)), y));
    if (keep) {
        s.dims[axis] = 1;
        TRY(y = ir_reshape(c->g, y, &s, c->st));
    }
    out[0] = y;
    return true;
}
static bool lower_argmax(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_argreduce(c, OP_ARGMAX, in, n_in, out);
}
static bool lower_argmin(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_argreduce(c, OP_ARGMIN, in, n_in, out);
}

/* ---- more data movement ---- */

static IrValue slice(OnnxCtx *c, IrValue x, const int64_t *begin, const int64_t *stride, const int64_t *count)
{
    const IrShape *s = shape_of(x);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrType t = {0};
    t.dtype = dtype_of(x);
    t.shape = *s;
    for (int i = 0; i < s->rank; i++) {
        p.i[TCRT_SL_BEGIN + i] = begin[i];
        p.i[TCRT_SL_STRIDE + i] = stride[i];
        t.shape.dims[i] = count[i];
    }
    return ir_emit1(c->g, OP_SLICE, &x, 1, &p, &t, c->st);
}

static bool lower_slice(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t starts[IR_MAX_RANK], ends[IR_MAX_RANK], axes[IR_MAX_RANK], steps[IR_MAX_RANK];
    int ns, ne, na = 0, nst = 0;
    if (!need(c, in, n_in, 1))
        return false;
    const IrShape s = *shape_of(in[0]);
    if (s.rank > 8)
        return onnx_errorf(c, "rank %d is more than 8", s.rank);
    if (c->opset < 10) {
        if (!onnx_attr_ints(c, "starts", starts, IR_MAX_RANK, &ns) || !onnx_attr_ints(c, "ends", ends, IR_MAX_RANK, &ne) ||
            !onnx_attr_ints(c, "axes", axes, IR_MAX_RANK, &na))
            return false;
    } else {
        if (!need(c, in, n_in, 3) || !onnx_const_ints(c, in[1], "input 1 (starts)", starts, IR_MAX_RANK, &ns) ||
            !onnx_const_ints(c, in[2], "input 2 (ends)", ends, IR_MAX_RANK, &ne))
            return false;
        if (n_in > 3 && in[3].node && !onnx_const_ints(c, in[3], "input 3 (axes)", axes, IR_MAX_RANK, &na))
            return false;
        if (n_in > 4 && in[4].node && !onnx_const_ints(c, in[4], "input 4 (steps)", steps, IR_MAX_RANK, &nst))
            return false;
    }
    if (ns != ne || (na && na != ns) || (nst && nst != ns))
        return onnx_errorf(c, "starts, ends, axes and steps must have the same length");
    int64_t begin[IR_MAX_RANK], stride[IR_MAX_RANK], count[IR_MAX_RANK];
    for (int i = 0; i < s.rank; i++)
        begin[i] = 0, stride[i] = 1, count[i] = s.dims[i];
    for (int i = 0; i < ns; i++) {
        int64_t ax = na ? axes[i] : i, st = nst ? steps[i] : 1;
        if (!norm_axis(c, &ax, s.rank, "axis"))
            return false;
        if (st == 0)
            return onnx_errorf(c, "step 0");
        int64_t d = s.dims[ax], b = starts[i], e = ends[i];
        if (b < 0)
            b += d;
        if (e < 0)
            e += d;
        if (st > 0) {
            b = b < 0 ? 0 : b > d ? d : b;
            e = e < 0 ? 0 : e > d ? d : e;
        } else {
            b = b < 0 ? -1 : b > d - 1 ? d - 1 : b;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
        }
        int64_t n = st > 0 ? (e - b + st - 1) / st : (b - e + (-st) - 1) / (-st);
        begin[ax] = n > 0 ? b : 0;
        stride[ax] = st;
        count[ax] = n > 0 ? n : 0;
    }
    out[0] = slice(c, in[0], begin, stride, count);
    return out[0].node != NULL;
}

static bool lower_split(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis, split[ONNX_MAX_OUTPUTS];
    int n = 0, nout = (int)c->nd->n_output;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "axis", 0, &axis))
        return false;
    const IrShape s = *shape_of(in[0]);
    if (!norm_axis(c, &axis, s.rank, "axis"))
        return false;
    if (c->opset >= 13) {
        if (n_in > 1 && in[1].node && !onnx_const_ints(c, in[1], "input 1 (split)", split, ONNX_MAX_OUTPUTS, &n))
            return false;
    } else if (!onnx_attr_ints(c, "split", split, ONNX_MAX_OUTPUTS, &n))
        return false;
    int64_t d = s.dims[axis];
    if (n == 0) {
        int64_t chunk = (d + nout - 1) / nout;
        for (int i = 0; i < nout; i++) {
            int64_t rest = d - chunk * i;
            split[i] = rest < 0 ? 0 : rest < chunk ? rest : chunk;
        }
        n = nout;
    }
    if (n != nout)
        return onnx_errorf(c, "%d split sizes for %d outputs", n, nout);
    int64_t tot = 0;
    for (int i = 0; i < n; i++)
        tot += split[i];
    if (tot != d)
        return onnx_errorf(c, "split sizes add up to %lld, the axis has %lld", (long long)tot, (long long)d);
    int64_t begin[IR_MAX_RANK] = {0}, stride[IR_MAX_RANK], count[IR_MAX_RANK];
    for (int i = 0; i < s.rank; i++)
        stride[i] = 1, count[i] = s.dims[i];
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        begin[axis] = off;
        count[axis] = split[i];
        TRY(out[i] = slice(c, in[0], begin, stride, count));
        off += split[i];
    }
    return true;
}

static bool lower_expand(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t sh[IR_MAX_RANK];
    int n;
    if (!need(c, in, n_in, 2) || !onnx_const_ints(c, in[1], "input 1 (shape)", sh, IR_MAX_RANK, &n))
        return false;
    IrShape to = ir_shape_make(n, sh), r;
    if (!ir_broadcast_shapes(shape_of(in[0]), &to, &r))
        return onnx_errorf(c, "the input does not broadcast to the shape");
    if (ir_shape_eq(&r, shape_of(in[0]))) {
        out[0] = in[0];
        return true;
    }
    IrType t = {dtype_of(in[0]), r};
    out[0] = ir_emit1(c->g, OP_BROADCAST, &in[0], 1, NULL, &t, c->st);
    return out[0].node != NULL;
}

static bool lower_tile(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t rep[IR_MAX_RANK];
    int n;
    if (!need(c, in, n_in, 2) || !onnx_const_ints(c, in[1], "input 1 (repeats)", rep, IR_MAX_RANK, &n))
        return false;
    IrShape s = *shape_of(in[0]);
    if (n != s.rank)
        return onnx_errorf(c, "%d repeats for rank %d", n, s.rank);
    bool same = true;
    for (int i = 0; i < n; i++) {
        if (rep[i] < 0)
            return onnx_errorf(c, "negative repeat");
        same &= rep[i] == 1;
        s.dims[i] *= rep[i];
    }
    IrType t = {dtype_of(in[0]), s};
    out[0] = same ? in[0] : ir_emit1(c->g, OP_TILE, &in[0], 1, NULL, &t, c->st);
    return out[0].node != NULL;
}

/* Pad mode edge: along each padded axis in turn, the first (last) slice
 * broadcast over the before (after) pads and concatenated around x; the
 * corners come out as the corner values, as required. */
static bool pad_edge(OnnxCtx *c, IrValue x, const IrParams *pads, IrValue *out)
{
    const int r = shape_of(x)->rank;
    for (int ax = 0; ax < r; ax++) {
        int64_t b = pads->i[2 * ax], e = pads->i[2 * ax + 1];
        if (!b && !e)
            continue;
        const IrShape s = *shape_of(x);
        if (s.dims[ax] == 0)
            return onnx_errorf(c, "edge padding of an empty axis %d", ax);
        int64_t begin[IR_MAX_RANK] = {0}, stride[IR_MAX_RANK], count[IR_MAX_RANK];
        for (int i = 0; i < r; i++)
            stride[i] = 1, count[i] = s.dims[i];
        count[ax] = 1;
        IrValue parts[3];
        int n = 0;
        IrShape bs = s;
        if (b) {
            bs.dims[ax] = b;
            TRY(parts[n] = broadcast_to(c, slice(c, x, begin, stride, count), &bs));
            n++;
        }
        parts[n++] = x;
        if (e) {
            begin[ax] = s.dims[ax] - 1;
            bs.dims[ax] = e;
            TRY(parts[n] = broadcast_to(c, slice(c, x, begin, stride, count), &bs));
            n++;
        }
        IrParams p;
        memset(&p, 0, sizeof p);
        p.i[TCRT_CAT_AXIS] = ax;
        TRY(x = ir_emit1(c->g, OP_CONCAT, parts, n, &p, NULL, c->st));
    }
    out[0] = x;
    return true;
}

static bool lower_pad(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t pads[2 * IR_MAX_RANK], axes[IR_MAX_RANK];
    int np = 0, na = 0;
    double value = 0;
    char mode[32];
    if (!need(c, in, n_in, 1) || !onnx_attr_str(c, "mode", "constant", mode, sizeof mode))
        return false;
    const IrShape s = *shape_of(in[0]);
    if (c->opset < 11) {
        if (!onnx_attr_ints(c, "pads", pads, 2 * IR_MAX_RANK, &np) || !onnx_attr_float(c, "value", 0, &value))
            return false;
    } else {
        if (!need(c, in, n_in, 2) || !onnx_const_ints(c, in[1], "input 1 (pads)", pads, 2 * IR_MAX_RANK, &np))
            return false;
        if (n_in > 2 && in[2].node && !ir_const_scalar(in[2], &value))
            return onnx_errorf(c, "input 2 (constant_value) must be a constant");
        if (n_in > 3 && in[3].node && !onnx_const_ints(c, in[3], "input 3 (axes)", axes, IR_MAX_RANK, &na))
            return false;
    }
    int nax = na ? na : s.rank;
    if (np != 2 * nax)
        return onnx_errorf(c, "pads has %d values, expected %d", np, 2 * nax);
    if (s.rank > 8)
        return onnx_errorf(c, "rank %d is more than 8", s.rank);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrType t = {dtype_of(in[0]), s};
    for (int i = 0; i < nax; i++) {
        int64_t ax = na ? axes[i] : i;
        if (!norm_axis(c, &ax, s.rank, "axis"))
            return false;
        int64_t b = pads[i], e = pads[i + nax];
        if (b < 0 || e < 0)
            return onnx_errorf(c, "negative pads are not supported");
        p.i[2 * ax] = b;
        p.i[2 * ax + 1] = e;
        t.shape.dims[ax] += b + e;
    }
    if (!strcmp(mode, "edge")) /* per axis: first slice repeated, x, last slice repeated */
        return pad_edge(c, in[0], &p, out);
    if (!strcmp(mode, "constant"))
        p.i[TCRT_PAD_MODE] = 0;
    else if (!strcmp(mode, "reflect"))
        p.i[TCRT_PAD_MODE] = 1;
    else
        return onnx_errorf(c, "mode '%s' is not supported (constant, reflect and edge are)", mode);
    p.f[0] = value;
    out[0] = ir_emit1(c->g, OP_PAD, &in[0], 1, &p, &t, c->st);
    return out[0].node != NULL;
}

static bool lower_constant_of_shape(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t sh[IR_MAX_RANK];
    int n;
    if (!need(c, in, n_in, 1) || !onnx_const_ints(c, in[0], "input 0 (shape)", sh, IR_MAX_RANK, &n))
        return false;
    IrValue v;
    const Onnx__AttributeProto *a = onnx_attr(c, "value");
    if (a && a->t) {
        if (!onnx_tensor_to_const(c->g, a->t, c->file, "attribute 'value'", &v, c->st))
            return false;
    } else
        v = scalar(c, TCRT_F32, 0);
    TRY(v);
    IrShape s = ir_shape_make(n, sh);
    if (ir_shape_count(shape_of(v)) != 1)
        return onnx_errorf(c, "value must have one element");
    TRY(v = ir_reshape(c->g, v, &(IrShape){0, {0}}, c->st));
    IrType t = {dtype_of(v), s};
    out[0] = ir_emit1(c->g, OP_BROADCAST, &v, 1, NULL, &t, c->st);
    return out[0].node != NULL;
}

static bool lower_range(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    double st, lim, d;
    if (!need(c, in, n_in, 3))
        return false;
    if (!ir_const_scalar(in[0], &st) || !ir_const_scalar(in[1], &lim) || !ir_const_scalar(in[2], &d))
        return onnx_errorf(c, "start, limit and delta must be compile-time constants");
    if (d == 0)
        return onnx_errorf(c, "delta is 0");
    double cnt = ceil((lim - st) / d);
    int64_t n = cnt > 0 ? (int64_t)cnt : 0;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.f[TCRT_RANGE_START] = st;
    p.f[TCRT_RANGE_DELTA] = d;
    IrType t = {dtype_of(in[0]), ir_shape_make(1, &n)};
    out[0] = ir_emit1(c->g, OP_RANGE, NULL, 0, &p, &t, c->st);
    return out[0].node != NULL;
}

static bool lower_size(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    int64_t n = ir_shape_count(shape_of(in[0]));
    out[0] = ir_const(c->g, TCRT_I64, &(IrShape){0, {0}}, &n, c->st);
    return out[0].node != NULL;
}

/* ---- normalizations ---- */

/* (x - mean) * rsqrt(var + eps) over the axes in mask (kept). */
static IrValue normalize(OnnxCtx *c, IrValue x, int64_t mask, int64_t cnt, double eps)
{
    tcrt_dtype dt = dtype_of(x);
    IrValue inv = scalar(c, dt, 1.0 / (double)cnt);
    IrValue mean = bin(c, OP_MUL, reduce(c, OP_REDUCE_SUM, x, mask, true), inv);
    IrValue d = bin(c, OP_SUB, x, mean);
    IrValue var = bin(c, OP_MUL, reduce(c, OP_REDUCE_SUM, ir_unary(c->g, OP_SQUARE, d, c->st), mask, true), inv);
    return bin(c, OP_MUL, d, ir_unary(c->g, OP_RSQRT, bin(c, OP_ADD, var, scalar(c, dt, eps)), c->st));
}

static bool lower_layer_norm(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis;
    double eps;
    if (!need(c, in, n_in, 2) || !onnx_attr_int(c, "axis", -1, &axis) || !onnx_attr_float(c, "epsilon", 1e-5, &eps))
        return false;
    IrValue x = in[0];
    const IrShape *s = shape_of(x);
    if (!norm_axis(c, &axis, s->rank, "axis"))
        return false;
    int64_t mask = 0, cnt = 1;
    for (int i = (int)axis; i < s->rank; i++)
        mask |= (int64_t)1 << i, cnt *= s->dims[i];
    tcrt_dtype dt = dtype_of(x);
    IrValue inv = scalar(c, dt, 1.0 / (double)cnt);
    IrValue mean = bin(c, OP_MUL, reduce(c, OP_REDUCE_SUM, x, mask, true), inv);
    IrValue d = bin(c, OP_SUB, x, mean);
    IrValue var = bin(c, OP_MUL, reduce(c, OP_REDUCE_SUM, ir_unary(c->g, OP_SQUARE, d, c->st), mask, true), inv);
    IrValue rstd = ir_unary(c->g, OP_RSQRT, bin(c, OP_ADD, var, scalar(c, dt, eps)), c->st);
    IrValue y = bin(c, OP_MUL, bin(c, OP_MUL, d, rstd), in[1]);
    if (n_in > 2 && in[2].node)
        y = bin(c, OP_ADD, y, in[2]);
    out[0] = y;
    if (c->nd->n_output > 1)
        out[1] = mean;
    if (c->nd->n_output > 2)
        out[2] = rstd;
    return y.node != NULL;
}

static bool lower_instance_norm(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    double eps;
    if (!need(c, in, n_in, 3) || !onnx_attr_float(c, "epsilon", 1e-5, &eps))
        return false;
    const IrShape *s = shape_of(in[0]);
    if (s->rank < 3)
        return onnx_errorf(c, "input must have rank >= 3");
    int64_t mask = 0, cnt = 1, dims[IR_MAX_RANK];
    for (int i = 2; i < s->rank; i++)
        mask |= (int64_t)1 << i, cnt *= s->dims[i];
    dims[0] = s->dims[1];
    for (int i = 2; i < s->rank; i++)
        dims[i - 1] = 1;
    IrValue sc = reshape_to(c, in[1], s->rank - 1, dims), b = reshape_to(c, in[2], s->rank - 1, dims);
    out[0] = bin(c, OP_ADD, bin(c, OP_MUL, normalize(c, in[0], mask, cnt, eps), sc), b);
    return out[0].node != NULL;
}

static bool lower_mvn(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axes[IR_MAX_RANK];
    int n;
    if (!need(c, in, n_in, 1) || !onnx_attr_ints(c, "axes", axes, IR_MAX_RANK, &n))
        return false;
    const IrShape *s = shape_of(in[0]);
    if (n == 0) {
        axes[0] = 0, axes[1] = 2, axes[2] = 3;
        n = 3;
    }
    int64_t mask = 0, cnt = 1;
    for (int i = 0; i < n; i++) {
        if (!norm_axis(c, &axes[i], s->rank, "axis"))
            return false;
        mask |= (int64_t)1 << axes[i];
        cnt *= s->dims[axes[i]];
    }
    out[0] = normalize(c, in[0], mask, cnt, 1e-9);
    return out[0].node != NULL;
}

/* ---- batch 3: indexing, losses, misc ---- */

/* int64 iota [0, n) laid along dim d of a rank-r shape (other dims 1). */
static IrValue iota_along(OnnxCtx *c, int64_t n, int d, int r)
{
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!v) {
        st_errorf(c->st, ST_NOMEM, "out of memory");
        return (IrValue){NULL, 0};
    }
    for (int64_t i = 0; i < n; i++)
        v[i] = i;
    IrShape s = {0};
    s.rank = r;
    for (int i = 0; i < r; i++)
        s.dims[i] = i == d ? n : 1;
    IrValue y = ir_const(c->g, TCRT_I64, &s, v, c->st);
    free(v);
    return y;
}

static IrValue broadcast_to(OnnxCtx *c, IrValue x, const IrShape *s)
{
    if (!x.node || ir_shape_eq(shape_of(x), s))
        return x;
    IrType t = {dtype_of(x), *s};
    return ir_emit1(c->g, OP_BROADCAST, &x, 1, NULL, &t, c->st);
}

/* indices (any int type) with negatives wrapped by dim n, as int64. */
static IrValue wrap_indices(OnnxCtx *c, IrValue idx, int64_t n)
{
    if (dtype_of(idx) != TCRT_I64)
        idx = ir_cast(c->g, idx, TCRT_I64, c->st);
    if (!idx.node)
        return idx;
    return select3(c, bin(c, OP_LT, idx, scalar(c, TCRT_I64, 0)), bin(c, OP_ADD, idx, scalar(c, TCRT_I64, (double)n)),
                   idx);
}

static bool lower_gather_elements(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis;
    if (!need(c, in, n_in, 2) || !onnx_attr_int(c, "axis", 0, &axis))
        return false;
    const IrShape xs = *shape_of(in[0]), is = *shape_of(in[1]);
    if (!norm_axis(c, &axis, xs.rank, "axis"))
        return false;
    if (is.rank != xs.rank || xs.rank + 1 > IR_MAX_RANK)
        return onnx_errorf(c, "indices must have the data's rank (at most %d)", IR_MAX_RANK - 1);
    IrShape one = is;
    one.dims[one.rank++] = 1;
    IrValue parts[IR_MAX_RANK];
    for (int d = 0; d < xs.rank; d++) {
        IrValue v = d == axis ? wrap_indices(c, in[1], xs.dims[axis]) : broadcast_to(c, iota_along(c, is.dims[d], d, is.rank), &is);
        TRY(v);
        TRY(parts[d] = ir_reshape(c->g, v, &one, c->st));
    }
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = is.rank;
    IrValue ix = xs.rank == 1 ? parts[0] : ir_emit1(c->g, OP_CONCAT, parts, xs.rank, &p, NULL, c->st);
    TRY(ix);
    IrValue ins[2] = {in[0], ix};
    out[0] = ir_emit1(c->g, OP_GATHER_ND, ins, 2, NULL, NULL, c->st);
    return out[0].node != NULL;
}

static bool lower_gather_nd(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t bd;
    if (!need(c, in, n_in, 2) || !onnx_attr_int(c, "batch_dims", 0, &bd))
        return false;
    IrValue idx = in[1];
    const IrShape is = *shape_of(idx);
    if (bd < 0 || bd >= is.rank || bd >= shape_of(in[0])->rank)
        return onnx_errorf(c, "attribute 'batch_dims' %lld is out of range", (long long)bd);
    if (bd) { /* prepend each index tuple's batch coordinates: batch_dims 0 */
        IrValue parts[IR_MAX_RANK + 1];
        IrShape one = is;
        one.dims[is.rank - 1] = 1;
        for (int j = 0; j < bd; j++) {
            if (is.dims[j] != shape_of(in[0])->dims[j])
                return onnx_errorf(c, "batch dim %d is %lld in the data and %lld in the indices", j,
                                   (long long)shape_of(in[0])->dims[j], (long long)is.dims[j]);
            IrValue io = iota_along(c, is.dims[j], j, is.rank);
            TRY(io = ir_cast(c->g, io, dtype_of(idx), c->st));
            TRY(parts[j] = broadcast_to(c, io, &one));
        }
        parts[bd] = idx;
        IrParams cp;
        memset(&cp, 0, sizeof cp);
        cp.i[0] = is.rank - 1;
        TRY(idx = ir_emit1(c->g, OP_CONCAT, parts, (int)bd + 1, &cp, NULL, c->st));
    }
    IrValue ins[2] = {in[0], idx};
    out[0] = ir_emit1(c->g, OP_GATHER_ND, ins, 2, NULL, NULL, c->st);
    return out[0].node != NULL;
}

static bool lower_trilu(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t upper, k = 0, kv[1];
    int n;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "upper", 1, &upper))
        return false;
    if (n_in > 1 && in[1].node) {
        if (!onnx_const_ints(c, in[1], "input 1 (k)", kv, 1, &n))
            return false;
        k = n ? kv[0] : 0;
    }
    const IrShape *s = shape_of(in[0]);
    if (s->rank < 2)
        return onnx_errorf(c, "input must have rank >= 2");
    int r = s->rank;
    IrValue i = iota_along(c, s->dims[r - 2], r - 2, r), j = iota_along(c, s->dims[r - 1], r - 1, r);
    IrValue diff = bin(c, OP_SUB, j, i); /* j - i */
    IrValue mask = upper ? bin(c, OP_GE, diff, scalar(c, TCRT_I64, (double)k))
                         : bin(c, OP_LE, diff, scalar(c, TCRT_I64, (double)k));
    out[0] = select3(c, mask, in[0], scalar(c, dtype_of(in[0]), 0));
    return out[0].node != NULL;
}

static bool lower_mod(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t fm;
    if (!need(c, in, n_in, 2) || !onnx_attr_int(c, "fmod", 0, &fm))
        return false;
    IrValue a = in[0], b = in[1];
    tcrt_dtype dt = dtype_of(a);
    bool fl = dt == TCRT_F32 || dt == TCRT_F64;
    if (!fm) {
        if (fl)
            return onnx_errorf(c, "fmod=0 on floats is not allowed");
        out[0] = bin(c, OP_FLOORMOD, a, b);
    } else if (!fl) {
        out[0] = bin(c, OP_SUB, a, bin(c, OP_MUL, b, bin(c, OP_DIV, a, b))); /* truncating division */
    } else {
        IrValue q = bin(c, OP_DIV, a, b);
        IrValue t = select3(c, bin(c, OP_LT, q, scalar(c, dt, 0)), ir_unary(c->g, OP_CEIL, q, c->st),
                            ir_unary(c->g, OP_FLOOR, q, c->st));
        out[0] = bin(c, OP_SUB, a, bin(c, OP_MUL, b, t));
    }
    return out[0].node != NULL;
}

/* NegativeLogLikelihoodLoss core: logp [N,C,d...], target [N,d...] (int). */
static IrValue nll(OnnxCtx *c, IrValue logp, IrValue target, IrValue weight)
{
    char red[32];
    int64_t ignore;
    bool has_ignore = onnx_attr(c, "ignore_index") != NULL;
    if (!onnx_attr_str(c, "reduction", "mean", red, sizeof red) || !onnx_attr_int(c, "ignore_index", 0, &ignore))
        return (IrValue){NULL, 0};
    const IrShape xs = *shape_of(logp), ts = *shape_of(target);
    if (xs.rank < 2 || ts.rank != xs.rank - 1) {
        onnx_errorf(c, "input must be [N,C,...] and target [N,...]");
        return (IrValue){NULL, 0};
    }
    tcrt_dtype dt = dtype_of(logp);
    IrShape t1 = {0}; /* target with a C axis of 1 */
    t1.rank = xs.rank;
    t1.dims[0] = ts.dims[0];
    t1.dims[1] = 1;
    for (int i = 1; i < ts.rank; i++)
        t1.dims[i + 1] = ts.dims[i];
    IrValue tg = ir_cast(c->g, target, TCRT_I64, c->st);
    IrValue tr = ir_reshape(c->g, tg, &t1, c->st);
    IrValue onehot = ir_cast(c->g, bin(c, OP_EQ, tr, iota_along(c, xs.dims[1], 1, xs.rank)), dt, c->st);
    if (weight.node) {
        int64_t wd[IR_MAX_RANK];
        wd[0] = xs.dims[1];
        for (int i = 1; i < xs.rank - 1; i++)
            wd[i] = 1;
        onehot = bin(c, OP_MUL, onehot, reshape_to(c, weight, xs.rank - 1, wd));
    }
    if (has_ignore) /* targets equal to ignore_index weigh 0 */
        onehot = bin(c, OP_MUL, onehot, ir_cast(c->g, bin(c, OP_NE, tr, scalar(c, TCRT_I64, (double)ignore)), dt, c->st));
    IrValue loss = ir_unary(c->g, OP_NEG, reduce(c, OP_REDUCE_SUM, bin(c, OP_MUL, onehot, logp), 2, false), c->st);
    if (!loss.node)
        return loss;
    int64_t all = ((int64_t)1 << ts.rank) - 1;
    if (!strcmp(red, "none"))
        return loss;
    IrValue sum = reduce(c, OP_REDUCE_SUM, loss, all, false);
    if (!strcmp(red, "sum"))
        return sum;
    if (strcmp(red, "mean")) {
        onnx_errorf(c, "reduction '%s' is not supported", red);
        return (IrValue){NULL, 0};
    }
    IrValue wsum = reduce(c, OP_REDUCE_SUM, onehot, ((int64_t)1 << xs.rank) - 1, false);
    return bin(c, OP_DIV, sum, wsum);
}

static bool lower_nll_loss(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 2))
        return false;
    out[0] = nll(c, in[0], in[1], n_in > 2 ? in[2] : (IrValue){NULL, 0});
    return out[0].node != NULL;
}

static bool lower_softmax_ce_loss(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 2))
        return false;
    if (shape_of(in[0])->rank < 2)
        return onnx_errorf(c, "scores must have rank >= 2");
    IrValue logp = softmax_axis(c, in[0], 1, true);
    TRY(logp);
    out[0] = nll(c, logp, in[1], n_in > 2 ? in[2] : (IrValue){NULL, 0});
    if (c->nd->n_output > 1)
        out[1] = logp;
    return out[0].node != NULL;
}

/* CumSum along an axis: a matmul with a triangular 0/1 matrix. */
static bool lower_cumsum(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t excl, rev, axis, av[1];
    int n;
    if (!need(c, in, n_in, 2) || !onnx_attr_int(c, "exclusive", 0, &excl) || !onnx_attr_int(c, "reverse", 0, &rev) ||
        !onnx_const_ints(c, in[1], "input 1 (axis)", av, 1, &n))
        return false;
    IrValue x = in[0];
    const IrShape s = *shape_of(x);
    axis = av[0];
    if (!norm_axis(c, &axis, s.rank, "axis"))
        return false;
    tcrt_dtype dt = dtype_of(x);
    int64_t len = s.dims[axis];
    if (len > 4096)
        return onnx_errorf(c, "axis of %lld elements is too long", (long long)len);
    /* y[..., j] = sum_i x[..., i] * m[i][j] */
    IrValue i = iota_along(c, len, 0, 2), j = iota_along(c, len, 1, 2);
    Op op = rev ? (excl ? OP_GT : OP_GE) : (excl ? OP_LT : OP_LE);
    IrValue m = ir_cast(c->g, bin(c, op, i, j), dt, c->st);
    int64_t perm[IR_MAX_RANK];
    for (int d = 0, k = 0; d < s.rank; d++)
        if (d != axis)
            perm[k++] = d;
    perm[s.rank - 1] = axis;
    int64_t inv[IR_MAX_RANK];
    for (int d = 0; d < s.rank; d++)
        inv[perm[d]] = d;
    if (axis != s.rank - 1)
        TRY(x = transpose(c, x, perm, s.rank));
    IrShape ts = *shape_of(x);
    int64_t rows = ir_shape_count(&ts) / (len ? len : 1);
    TRY(x = reshape_to(c, x, 2, (int64_t[]){rows, len}));
    IrValue y = matmul(c, x, m, false, false);
    TRY(y);
    TRY(y = ir_reshape(c->g, y, &ts, c->st));
    if (axis != s.rank - 1)
        TRY(y = transpose(c, y, inv, s.rank));
    out[0] = y;
    return true;
}

static bool lower_global_maxpool(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    const IrShape *s = shape_of(in[0]);
    int64_t mask = 0;
    for (int i = 2; i < s->rank; i++)
        mask |= (int64_t)1 << i;
    out[0] = reduce(c, OP_REDUCE_MAX, in[0], mask, true);
    return out[0].node != NULL;
}

static bool lower_thresholded_relu(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    double alpha;
    if (!need(c, in, n_in, 1) || !onnx_attr_float(c, "alpha", 1.0, &alpha))
        return false;
    tcrt_dtype dt = dtype_of(in[0]);
    out[0] = select3(c, bin(c, OP_GT, in[0], scalar(c, dt, alpha)), in[0], scalar(c, dt, 0));
    return out[0].node != NULL;
}

static bool lower_celu(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    double alpha;
    if (!need(c, in, n_in, 1) || !onnx_attr_float(c, "alpha", 1.0, &alpha))
        return false;
    IrValue x = in[0];
    tcrt_dtype dt = dtype_of(x);
    IrValue e = bin(c, OP_MUL, bin(c, OP_SUB, ir_unary(c->g, OP_EXP, bin(c, OP_DIV, x, scalar(c, dt, alpha)), c->st),
                                   scalar(c, dt, 1)),
                    scalar(c, dt, alpha));
    out[0] = bin(c, OP_ADD, bin(c, OP_MAX, x, scalar(c, dt, 0)), bin(c, OP_MIN, e, scalar(c, dt, 0)));
    return out[0].node != NULL;
}

static bool lower_shrink(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    double lambd, bias;
    if (!need(c, in, n_in, 1) || !onnx_attr_float(c, "lambd", 0.5, &lambd) || !onnx_attr_float(c, "bias", 0, &bias))
        return false;
    IrValue x = in[0];
    tcrt_dtype dt = dtype_of(x);
    IrValue lo = select3(c, bin(c, OP_LT, x, scalar(c, dt, -lambd)), bin(c, OP_ADD, x, scalar(c, dt, bias)), scalar(c, dt, 0));
    out[0] = select3(c, bin(c, OP_GT, x, scalar(c, dt, lambd)), bin(c, OP_SUB, x, scalar(c, dt, bias)), lo);
    return out[0].node != NULL;
}

static bool lower_isnan(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    out[0] = bin(c, OP_NE, in[0], in[0]);
    return out[0].node != NULL;
}

static bool lower_isinf(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t pos, neg;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "detect_positive", 1, &pos) ||
        !onnx_attr_int(c, "detect_negative", 1, &neg))
        return false;
    tcrt_dtype dt = dtype_of(in[0]);
    IrValue p = bin(c, OP_EQ, in[0], scalar(c, dt, INFINITY)), n = bin(c, OP_EQ, in[0], scalar(c, dt, -INFINITY));
    out[0] = pos && neg ? bin(c, OP_OR, p, n) : pos ? p : neg ? n : bin(c, OP_NE, in[0], in[0]) /* never true but NaN */;
    if (!pos && !neg)
        out[0] = bin(c, OP_AND, out[0], bin(c, OP_EQ, in[0], in[0]));
    return out[0].node != NULL;
}

static bool lower_sinh_cosh(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out, bool cosh_)
{
    if (!need(c, in, n_in, 1))
        return false;
    IrValue x = in[0];
    tcrt_dtype dt = dtype_of(x);
    IrValue e = ir_unary(c->g, OP_EXP, x, c->st), em = ir_unary(c->g, OP_EXP, ir_unary(c->g, OP_NEG, x, c->st), c->st);
    out[0] = bin(c, OP_MUL, bin(c, cosh_ ? OP_ADD : OP_SUB, e, em), scalar(c, dt, 0.5));
    return out[0].node != NULL;
}
static bool lower_sinh(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_sinh_cosh(c, in, n_in, out, false);
}
static bool lower_cosh(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_sinh_cosh(c, in, n_in, out, true);
}

static bool lower_cast_like(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 2))
        return false;
    out[0] = onnx_cast(c, in[0], dtype_of(in[1]));
    return out[0].node != NULL;
}

/* DepthToSpace / SpaceToDepth: reshape + transpose + reshape (NCHW). */
static bool lower_depth_space(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out, bool to_space)
{
    int64_t b;
    char mode[16];
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "blocksize", 0, &b) ||
        !onnx_attr_str(c, "mode", "DCR", mode, sizeof mode))
        return false;
    const IrShape s = *shape_of(in[0]);
    if (s.rank != 4 || b <= 0)
        return onnx_errorf(c, "input must be NCHW and blocksize positive");
    int64_t N = s.dims[0], C = s.dims[1], H = s.dims[2], W = s.dims[3];
    IrValue x;
    if (to_space) {
        if (C % (b * b))
            return onnx_errorf(c, "channels not divisible by blocksize^2");
        bool crd = !strcmp(mode, "CRD");
        int64_t c2 = C / (b * b);
        x = crd ? reshape_to(c, in[0], 6, (int64_t[]){N, c2, b, b, H, W})
                : reshape_to(c, in[0], 6, (int64_t[]){N, b, b, c2, H, W});
        x = transpose(c, x, crd ? (int64_t[]){0, 1, 4, 2, 5, 3} : (int64_t[]){0, 3, 4, 1, 5, 2}, 6);
        out[0] = reshape_to(c, x, 4, (int64_t[]){N, c2, H * b, W * b});
    } else {
        if (H % b || W % b)
            return onnx_errorf(c, "spatial dims not divisible by blocksize");
        x = reshape_to(c, in[0], 6, (int64_t[]){N, C, H / b, b, W / b, b});
        x = transpose(c, x, (int64_t[]){0, 3, 5, 1, 2, 4}, 6);
        out[0] = reshape_to(c, x, 4, (int64_t[]){N, C * b * b, H / b, W / b});
    }
    return out[0].node != NULL;
}
static bool lower_depth_to_space(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_depth_space(c, in, n_in, out, true);
}
static bool lower_space_to_depth(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_depth_space(c, in, n_in, out, false);
}

static bool lower_eye_like(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t k, dtv;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "k", 0, &k) || !onnx_attr_int(c, "dtype", 0, &dtv))
        return false;
    tcrt_dtype dt = dtype_of(in[0]);
    if (dtv && !onnx_dtype(c, (int)dtv, "attribute 'dtype'", &dt))
        return false;
    const IrShape *s = shape_of(in[0]);
    if (s->rank != 2)
        return onnx_errorf(c, "input must be a matrix");
    IrValue d = bin(c, OP_SUB, iota_along(c, s->dims[1], 1, 2), iota_along(c, s->dims[0], 0, 2));
    IrValue eq = bin(c, OP_EQ, d, scalar(c, TCRT_I64, (double)k));
    out[0] = ir_cast(c->g, eq, dt, c->st);
    return out[0].node != NULL;
}

/* ---- ConvTranspose, Resize ---- */

/* Python's floor division by 2 (ONNX's reference splits pads with it). */
static int64_t floor_half(int64_t v)
{
    return v >= 0 ? v / 2 : -((-v + 1) / 2);
}

static bool lower_conv_transpose(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);

/* 3-D without attributes (unit strides and dilations, no padding, group
 * 1): y[:, :, od] = sum over the depth taps kd of the 2-D transposed
 * convolution of x[:, :, od - kd] with w[:, :, kd].  The depth is folded
 * into the batch; each tap's result is padded along the depth to its
 * place (kd before, KD - 1 - kd after) and the taps are summed. */
static bool conv_transpose_3d(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    static const char *const attrs[] = {"strides", "dilations", "pads", "output_padding", "output_shape",
                                        "kernel_shape", "auto_pad"};
    for (size_t i = 0; i < sizeof attrs / sizeof *attrs; i++)
        if (onnx_attr(c, attrs[i]) && strcmp(attrs[i], "kernel_shape"))
            return onnx_errorf(c, "3-D transposed convolution: attribute '%s' is not supported (only the "
                                  "defaults: unit strides, no padding)", attrs[i]);
    int64_t group;
    if (!onnx_attr_int(c, "group", 1, &group))
        return false;
    const IrShape xs = *shape_of(in[0]), ws = *shape_of(in[1]);
    if (group != 1 || ws.rank != 5 || ws.dims[0] != xs.dims[1])
        return onnx_errorf(c, "3-D transposed convolution: group must be 1 and W [C, M, kD, kH, kW] match X");
    int64_t N = xs.dims[0], C = xs.dims[1], D = xs.dims[2], KD = ws.dims[2];
    IrValue xr = transpose(c, in[0], (int64_t[]){0, 2, 1, 3, 4}, 5);
    TRY(xr = reshape_to(c, xr, 4, (int64_t[]){N * D, C, xs.dims[3], xs.dims[4]}));
    IrValue sum = {NULL, 0};
    for (int64_t kd = 0; kd < KD; kd++) {
        IrValue iv = ir_const_i64s(c->g, TCRT_I64, &kd, 1, c->st), wk, z;
        TRY(iv);
        IrParams p;
        memset(&p, 0, sizeof p);
        p.i[0] = 2;
        TRY(wk = ir_emit1(c->g, OP_GATHER, (IrValue[]){in[1], iv}, 2, &p, NULL, c->st));
        TRY(wk = reshape_to(c, wk, 4, (int64_t[]){ws.dims[0], ws.dims[1], ws.dims[3], ws.dims[4]}));
        if (!lower_conv_transpose(c, (IrValue[]){xr, wk}, 2, &z))
            return false;
        const IrShape zs = *shape_of(z);
        TRY(z = reshape_to(c, z, 5, (int64_t[]){N, D, zs.dims[1], zs.dims[2], zs.dims[3]}));
        memset(&p, 0, sizeof p);
        p.i[2] = kd;
        p.i[3] = KD - 1 - kd;
        TRY(z = ir_emit1(c->g, OP_PAD, &z, 1, &p, NULL, c->st));
        sum = sum.node ? bin(c, OP_ADD, sum, z) : z;
        TRY(sum);
    }
    TRY(sum = transpose(c, sum, (int64_t[]){0, 2, 1, 3, 4}, 5));
    if (n_in > 2 && in[2].node) {
        IrValue bias = reshape_to(c, in[2], 4, (int64_t[]){ws.dims[1], 1, 1, 1});
        TRY(bias);
        TRY(sum = bin(c, OP_ADD, sum, bias));
    }
    out[0] = sum;
    return true;
}

/* 1-D (as 2-D over H = 1) and 2-D; output_shape may ask for more than the
 * transposed convolution produces: the extra rows/columns are zeros (plus
 * the bias), as negative pads in ONNX's reference.  3-D: conv_transpose_3d. */
static bool lower_conv_transpose(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 2))
        return false;
    IrValue x = in[0], w = in[1];
    int rank = shape_of(x)->rank;
    if (rank == 5)
        return conv_transpose_3d(c, in, n_in, out);
    if ((rank != 4 && rank != 3) || shape_of(w)->rank != rank)
        return onnx_errorf(c, "only 1-D, 2-D and 3-D transposed convolutions are supported (input rank %d)",
                           rank);
    int nsp = rank - 2, sp0 = 2 - nsp; /* attribute value i goes to spatial slot sp0 + i */
    if (rank == 3) {
        const IrShape *a = shape_of(x), *b = shape_of(w);
        TRY(x = reshape_to(c, x, 4, (int64_t[]){a->dims[0], a->dims[1], 1, a->dims[2]}));
        TRY(w = reshape_to(c, w, 4, (int64_t[]){b->dims[0], b->dims[1], 1, b->dims[2]}));
    }
    const IrShape xs = *shape_of(x), ws = *shape_of(w);
    int64_t group, v[8];
    int n;
    char ap[32];
    if (!onnx_attr_int(c, "group", 1, &group) || !onnx_attr_str(c, "auto_pad", "NOTSET", ap, sizeof ap))
        return false;
    if (group != 1)
        return onnx_errorf(c, "grouped transposed convolution is not supported");
    if (ws.dims[0] != xs.dims[1])
        return onnx_errorf(c, "weights expect %lld input channels, the input has %lld", (long long)ws.dims[0],
                           (long long)xs.dims[1]);
    int64_t st[2] = {1, 1}, dil[2] = {1, 1}, opad[2] = {0, 0}, pads[4] = {0, 0, 0, 0}, osh[2] = {1, 0};
    bool has_osh = false;
    if (!onnx_attr_ints(c, "strides", v, 8, &n))
        return false;
    for (int i = 0; n == nsp && i < nsp; i++)
        st[sp0 + i] = v[i];
    if (!onnx_attr_ints(c, "dilations", v, 8, &n))
        return false;
    for (int i = 0; n == nsp && i < nsp; i++)
        dil[sp0 + i] = v[i];
    if (!onnx_attr_ints(c, "output_padding", v, 8, &n))
        return false;
    for (int i = 0; n == nsp && i < nsp; i++)
        opad[sp0 + i] = v[i];
    if (!onnx_attr_ints(c, "pads", v, 8, &n))
        return false;
    for (int i = 0; n == 2 * nsp && i < nsp; i++)
        pads[sp0 + i] = v[i], pads[sp0 + i + 2] = v[nsp + i];
    if (!onnx_attr_ints(c, "output_shape", v, 8, &n))
        return false;
    if (n >= nsp) {
        for (int i = 0; i < nsp; i++)
            osh[sp0 + i] = v[n - nsp + i];
        has_osh = true;
    }
    int64_t o[2], grow[4] = {0, 0, 0, 0};
    bool any_grow = false;
    for (int i = 0; i < 2; i++) {
        if (st[i] <= 0 || dil[i] <= 0 || opad[i] < 0 || (opad[i] >= st[i] && opad[i] >= dil[i]))
            return onnx_errorf(c, "bad strides, dilations or output_padding");
        int64_t ek = (ws.dims[2 + i] - 1) * dil[i] + 1, full = st[i] * (xs.dims[2 + i] - 1) + opad[i] + ek;
        bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
        if (has_osh || same) {
            int64_t want = has_osh ? osh[i] : xs.dims[2 + i] * st[i];
            int64_t tot = full - want;
            bool upper = !strcmp(ap, "SAME_UPPER");
            pads[i] = upper ? floor_half(tot) : tot - floor_half(tot);
            pads[i + 2] = tot - pads[i];
        }
        for (int e = 0; e < 2; e++) /* negative pads: zeros added after */
            if (pads[i + 2 * e] < 0) {
                grow[i + 2 * e] = -pads[i + 2 * e];
                pads[i + 2 * e] = 0;
                any_grow = true;
            }
        o[i] = full - pads[i] - pads[i + 2];
        if (o[i] <= 0)
            return onnx_errorf(c, "empty output");
    }
    TRY(x = transpose(c, x, TO_NHWC, 4));
    TRY(w = transpose(c, w, (int64_t[]){2, 3, 1, 0}, 4));
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = st[0];
    p.i[TCRT_CONV_SW] = st[1];
    p.i[TCRT_CONV_DH] = dil[0];
    p.i[TCRT_CONV_DW] = dil[1];
    p.i[TCRT_CONV_PT] = pads[0];
    p.i[TCRT_CONV_PL] = pads[1];
    p.i[TCRT_CONV_PB] = pads[2];
    p.i[TCRT_CONV_PR] = pads[3];
    IrType t = {dtype_of(x), ir_shape_make(4, (int64_t[]){xs.dims[0], o[0], o[1], ws.dims[1]})};
    IrValue ins[2] = {x, w};
    IrValue y = ir_emit1(c->g, OP_CONV2D_TRANSPOSE, ins, 2, &p, &t, c->st);
    TRY(y);
    if (any_grow) {
        IrParams pp;
        memset(&pp, 0, sizeof pp);
        pp.i[2] = grow[0], pp.i[3] = grow[2], pp.i[4] = grow[1], pp.i[5] = grow[3];
        IrType gt = {dtype_of(y), ir_shape_make(4, (int64_t[]){xs.dims[0], o[0] + grow[0] + grow[2],
                                                               o[1] + grow[1] + grow[3], ws.dims[1]})};
        TRY(y = ir_emit1(c->g, OP_PAD, &y, 1, &pp, &gt, c->st));
    }
    if (n_in > 2 && in[2].node)
        TRY(y = bin(c, OP_ADD, y, in[2]));
    TRY(y = transpose(c, y, TO_NCHW, 4));
    if (rank == 3) {
        const IrShape *ys = shape_of(y);
        TRY(y = reshape_to(c, y, 3, (int64_t[]){ys->dims[0], ys->dims[1], ys->dims[3]}));
    }
    out[0] = y;
    return true;
}

/* BitShift (unsigned types): x * 2^y or x / 2^y with 2^y gathered from a
 * table of the element type (0 from the type's width on, so over-wide
 * shifts give 0, as C's shifts would not). */
static bool lower_bitshift(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    char dir[16];
    if (!need(c, in, n_in, 2) || !onnx_attr_str(c, "direction", "", dir, sizeof dir))
        return false;
    bool left = !strcmp(dir, "LEFT");
    if (!left && strcmp(dir, "RIGHT"))
        return onnx_errorf(c, "attribute 'direction' must be \"LEFT\" or \"RIGHT\", got '%s'", dir);
    tcrt_dtype dt = dtype_of(in[0]);
    if (dt != TCRT_U8 && dt != TCRT_U16 && dt != TCRT_U32 && dt != TCRT_U64)
        return onnx_errorf(c, "element type %s is not supported (unsigned integers are)", tcrt_dtype_name(dt));
    if (dtype_of(in[1]) != dt)
        return onnx_errorf(c, "X is %s and Y is %s: they must have one type", tcrt_dtype_name(dt),
                           tcrt_dtype_name(dtype_of(in[1])));
    int width = 8 * (int)tcrt_dtype_size(dt);
    _Alignas(8) uint8_t buf[64 * 8];
    for (int i = 0; i < 64; i++) {
        uint64_t pw = i < width ? (uint64_t)1 << i : 0;
        if (dt == TCRT_U8)
            buf[i] = (uint8_t)pw;
        else if (dt == TCRT_U16)
            ((uint16_t *)buf)[i] = (uint16_t)pw;
        else if (dt == TCRT_U32)
            ((uint32_t *)buf)[i] = (uint32_t)pw;
        else
            ((uint64_t *)buf)[i] = pw;
    }
    IrValue table = ir_const(c->g, dt, &(IrShape){1, {64}}, buf, c->st);
    IrValue idx = ir_cast(c->g, bin(c, OP_MIN, in[1], scalar(c, dt, 63)), TCRT_I64, c->st);
    TRY(table);
    TRY(idx);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrValue ins[2] = {table, idx};
    IrValue f = ir_emit1(c->g, OP_GATHER, ins, 2, &p, NULL, c->st);
    TRY(f);
    out[0] = bin(c, left ? OP_MUL : OP_DIV, in[0], f);
    return out[0].node != NULL;
}

/* HannWindow, HammingWindow, BlackmanWindow: constants (size must be
 * constant): a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size when
 * periodic, size - 1 otherwise. */
static bool lower_window(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out, double a0, double a1, double a2)
{
    int64_t size, periodic, odt;
    int n;
    tcrt_dtype dt;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "periodic", 1, &periodic) ||
        !onnx_attr_int(c, "output_datatype", 1, &odt) ||
        !onnx_dtype(c, (int)odt, "attribute 'output_datatype'", &dt) ||
        !onnx_const_ints(c, in[0], "input 0 (size)", &size, 1, &n))
        return false;
    if (n != 1 || size < 0 || size > ((int64_t)1 << 24))
        return onnx_errorf(c, "input 0 (size) must be one value in [0, 2^24]");
    double *v = malloc(sizeof(double) * (size_t)(size ? size : 1));
    if (!v)
        return st_errorf(c->st, ST_NOMEM, "out of memory");
    double nn = periodic ? (double)size : (double)size - 1;
    for (int64_t i = 0; i < size; i++) {
        double t = nn > 0 ? 2 * M_PI * (double)i / nn : 0;
        v[i] = a0 - a1 * cos(t) + a2 * cos(2 * t);
    }
    IrValue w = ir_const(c->g, TCRT_F64, &(IrShape){1, {size}}, v, c->st);
    free(v);
    TRY(w);
    out[0] = onnx_cast(c, w, dt);
    return out[0].node != NULL;
}
static bool lower_hann_window(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_window(c, in, n_in, out, 0.5, 0.5, 0);
}
static bool lower_hamming_window(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_window(c, in, n_in, out, 25.0 / 46, 21.0 / 46, 0);
}
static bool lower_blackman_window(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    return lower_window(c, in, n_in, out, 0.42, 0.5, 0.08);
}

/* ---- the table (looked up by name; order irrelevant) ---- */

/* ---- TopK, Hardmax, OneHot, LRN, inverse trigonometric ---- */

/* perm moving axis to the end (and its inverse). */
static void axis_last_perm(int rank, int axis, int64_t *perm, int64_t *inv)
{
    for (int d = 0, k = 0; d < rank; d++)
        if (d != axis)
            perm[k++] = d;
    perm[rank - 1] = axis;
    for (int d = 0; d < rank; d++)
        inv[perm[d]] = d;
}

/* TopK along axis (moved last): the topk primitive keeps the lower index
 * first among equal values, as ONNX requires.  Smallest-k is the largest-k
 * of an order-reversing map: -x for floats, c - x for integers (c = -1 for
 * signed types, 255 for uint8: no overflow), mapped back afterwards.  The
 * result is always sorted (ONNX leaves the order free when sorted = 0). */
static bool lower_topk(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis, largest, k;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "axis", -1, &axis) || !onnx_attr_int(c, "largest", 1, &largest))
        return false;
    if (c->opset < 10) {
        if (!onnx_attr_int(c, "k", -1, &k))
            return false;
        if (k < 0)
            return onnx_errorf(c, "attribute k is required");
    } else {
        int64_t kv[1];
        int n;
        if (!need(c, in, n_in, 2) || !onnx_const_ints(c, in[1], "input 1 (K)", kv, 1, &n))
            return false;
        if (n != 1)
            return onnx_errorf(c, "input 1 (K) must hold one value, has %d", n);
        k = kv[0];
    }
    IrValue x = in[0];
    const IrShape s = *shape_of(x);
    tcrt_dtype dt = dtype_of(x);
    if (s.rank < 1)
        return onnx_errorf(c, "input 0 must have rank >= 1");
    if (!norm_axis(c, &axis, s.rank, "axis"))
        return false;
    if (k < 0 || k > s.dims[axis])
        return onnx_errorf(c, "K = %lld is out of range for axis %lld of size %lld", (long long)k, (long long)axis,
                           (long long)s.dims[axis]);
    bool flt = dt == TCRT_F32 || dt == TCRT_F64;
    if (!flt && dt != TCRT_I32 && dt != TCRT_I64 && dt != TCRT_U8)
        return onnx_errorf(c, "element type of input 0 is not supported (float, double, int32, int64, uint8 are)");
    double flip = dt == TCRT_U8 ? 255 : -1;
    if (!largest)
        TRY(x = flt ? ir_unary(c->g, OP_NEG, x, c->st) : bin(c, OP_SUB, scalar(c, dt, flip), x));
    int64_t perm[IR_MAX_RANK], inv[IR_MAX_RANK];
    axis_last_perm(s.rank, (int)axis, perm, inv);
    bool move = axis != s.rank - 1;
    if (move)
        TRY(x = transpose(c, x, perm, s.rank));
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_TOPK_K] = k;
    p.i[TCRT_TOPK_SORTED] = 1;
    IrNode *nd = ir_emit(c->g, OP_TOPK, &x, 1, &p, NULL, c->st);
    if (!nd)
        return false;
    IrValue v = {nd, 0}, ix = {nd, 1};
    if (!largest)
        TRY(v = flt ? ir_unary(c->g, OP_NEG, v, c->st) : bin(c, OP_SUB, scalar(c, dt, flip), v));
    if (dtype_of(ix) != TCRT_I64)
        TRY(ix = ir_cast(c->g, ix, TCRT_I64, c->st));
    if (move) {
        TRY(v = transpose(c, v, inv, s.rank));
        TRY(ix = transpose(c, ix, inv, s.rank));
    }
    out[0] = v;
    out[1] = ix;
    return true;
}

/* Hardmax: 1 at the first maximum along the axis (argmax), 0 elsewhere.
 * Before opset 13 the input is coerced to 2-D at axis (default 1). */
static bool lower_hardmax(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "axis", c->opset < 13 ? 1 : -1, &axis))
        return false;
    IrValue x = in[0];
    const IrShape s0 = *shape_of(x);
    tcrt_dtype dt = dtype_of(x);
    if (s0.rank < 1)
        return onnx_errorf(c, "input 0 must have rank >= 1");
    if (!norm_axis(c, &axis, s0.rank, "axis"))
        return false;
    if (c->opset < 13) {
        int64_t d[2] = {1, 1};
        for (int i = 0; i < s0.rank; i++)
            d[i >= axis] *= s0.dims[i];
        TRY(x = reshape_to(c, x, 2, d));
        axis = 1;
    }
    IrShape s = *shape_of(x);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_ARG_AXIS] = axis;
    IrType t = {0};
    memset(&t, 0, sizeof t);
    t.dtype = TCRT_I64;
    IrValue am = ir_emit1(c->g, OP_ARGMAX, &x, 1, &p, &t, c->st);
    TRY(am);
    IrShape ks = s;
    ks.dims[axis] = 1;
    TRY(am = ir_reshape(c->g, am, &ks, c->st));
    IrValue y = ir_cast(c->g, bin(c, OP_EQ, iota_along(c, s.dims[axis], (int)axis, s.rank), am), dt, c->st);
    TRY(y);
    TRY(y = broadcast_to(c, y, &s));
    if (c->opset < 13)
        TRY(y = ir_reshape(c->g, y, &s0, c->st));
    out[0] = y;
    return true;
}

/* OneHot: out = indices (negatives wrapped by depth, non-integers truncated)
 * == iota(depth) along axis ? values[1] : values[0]; indices out of range
 * give an all-off row.  depth must be a compile-time constant. */
static bool lower_one_hot(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis;
    double depth_f;
    if (!need(c, in, n_in, 3) || !onnx_attr_int(c, "axis", -1, &axis))
        return false;
    if (ir_shape_count(shape_of(in[1])) != 1 || !ir_const_scalar(in[1], &depth_f))
        return onnx_errorf(c, "input 1 (depth) must be a constant holding one value");
    int64_t depth = (int64_t)depth_f;
    if (depth < 1)
        return onnx_errorf(c, "depth %lld must be positive", (long long)depth);
    const IrShape is = *shape_of(in[0]);
    if (is.rank + 1 > IR_MAX_RANK)
        return onnx_errorf(c, "indices rank %d is too large", is.rank);
    if (ir_shape_count(shape_of(in[2])) != 2)
        return onnx_errorf(c, "input 2 (values) must hold two values [off, on]");
    int r = is.rank + 1;
    if (!norm_axis(c, &axis, r, "axis"))
        return false;
    IrValue idx = wrap_indices(c, in[0], depth); /* casts to int64 (floats truncate) */
    TRY(idx);
    IrShape us = {0};
    us.rank = r;
    for (int d = 0, k = 0; d < r; d++)
        us.dims[d] = d == axis ? 1 : is.dims[k++];
    TRY(idx = ir_reshape(c->g, idx, &us, c->st));
    IrValue hit = bin(c, OP_EQ, idx, iota_along(c, depth, (int)axis, r));
    TRY(hit);
    IrValue vals = reshape_to(c, in[2], 1, (int64_t[]){2});
    TRY(vals);
    IrValue off = slice(c, vals, (int64_t[]){0}, (int64_t[]){1}, (int64_t[]){1});
    IrValue on = slice(c, vals, (int64_t[]){1}, (int64_t[]){1}, (int64_t[]){1});
    TRY(off);
    TRY(on);
    IrShape os = us;
    os.dims[axis] = depth;
    TRY(off = broadcast_to(c, off, &os));
    TRY(on = broadcast_to(c, on, &os));
    TRY(hit = broadcast_to(c, hit, &os));
    out[0] = select3(c, hit, on, off);
    return out[0].node != NULL;
}

/* LRN over the channel axis 1: y = x / (bias + alpha / size * sum of x^2 over
 * channels [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta, the window
 * sum as size shifted slices of the zero-padded squares. */
static bool lower_lrn(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t size;
    double alpha, beta, bias;
    if (!need(c, in, n_in, 1) || !onnx_attr_int(c, "size", 0, &size) || !onnx_attr_float(c, "alpha", 1e-4, &alpha) ||
        !onnx_attr_float(c, "beta", 0.75, &beta) || !onnx_attr_float(c, "bias", 1.0, &bias))
        return false;
    IrValue x = in[0];
    const IrShape s = *shape_of(x);
    tcrt_dtype dt = dtype_of(x);
    if (dt != TCRT_F32 && dt != TCRT_F64)
        return onnx_errorf(c, "input 0 must be float or double");
    if (s.rank < 3 || s.rank > 8)
        return onnx_errorf(c, "input 0 must have rank 3 to 8, has %d", s.rank);
    if (size < 1 || size > 1024)
        return onnx_errorf(c, "attribute size %lld is out of range (1 to 1024)", (long long)size);
    int64_t before = (size - 1) / 2, after = size - 1 - before;
    IrValue sq = ir_unary(c->g, OP_SQUARE, x, c->st);
    TRY(sq);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[2] = before;
    p.i[3] = after;
    IrType t = {dt, s};
    t.shape.dims[1] += before + after;
    IrValue pd = ir_emit1(c->g, OP_PAD, &sq, 1, &p, &t, c->st);
    TRY(pd);
    int64_t begin[IR_MAX_RANK] = {0}, stride[IR_MAX_RANK], count[IR_MAX_RANK];
    for (int i = 0; i < s.rank; i++)
        stride[i] = 1, count[i] = s.dims[i];
    IrValue sum = {NULL, 0};
    for (int64_t k = 0; k < size; k++) {
        begin[1] = k;
        IrValue part = slice(c, pd, begin, stride, count);
        TRY(part);
        TRY(sum = k ? bin(c, OP_ADD, sum, part) : part);
    }
    IrValue den = bin(c, OP_ADD, scalar(c, dt, bias), bin(c, OP_MUL, scalar(c, dt, alpha / (double)size), sum));
    out[0] = bin(c, OP_DIV, x, bin(c, OP_POW, den, scalar(c, dt, beta)));
    return out[0].node != NULL;
}

/* Inverse trigonometric and hyperbolic functions from atan2, sqrt and log1p
 * (float types):
 *   asin x = atan2(x, sqrt((1-x)(1+x)))    acos x = atan2(sqrt((1-x)(1+x)), x)
 *   atan x = atan2(x, 1)
 *   asinh x = sign(x) log1p(|x| + x^2 / (1 + sqrt(x^2 + 1)))
 *   acosh x = log1p((x-1) + sqrt((x-1)(x+1)))
 *   atanh x = 0.5 log1p(2x / (1-x))
 * (outside the domains the sqrt or log1p gives NaN, as required). */
enum { INV_ASIN, INV_ACOS, INV_ATAN, INV_ASINH, INV_ACOSH, INV_ATANH };
static bool lower_inverse_trig(OnnxCtx *c, int which, const IrValue *in, int n_in, IrValue *out)
{
    if (!need(c, in, n_in, 1))
        return false;
    IrValue x = in[0];
    tcrt_dtype dt = dtype_of(x);
    if (dt != TCRT_F32 && dt != TCRT_F64)
        return onnx_errorf(c, "input 0 must be float or double");
    IrValue one = scalar(c, dt, 1), y = {NULL, 0};
    IrValue omx = bin(c, OP_SUB, one, x), opx = bin(c, OP_ADD, one, x), xm1 = bin(c, OP_SUB, x, one);
    switch (which) {
    case INV_ASIN:
    case INV_ACOS: {
        IrValue r = ir_unary(c->g, OP_SQRT, bin(c, OP_MUL, omx, opx), c->st);
        y = which == INV_ASIN ? bin(c, OP_ATAN2, x, r) : bin(c, OP_ATAN2, r, x);
        break;
    }
    case INV_ATAN:
        y = bin(c, OP_ATAN2, x, broadcast_to(c, one, shape_of(x)));
        break;
    case INV_ASINH: {
        IrValue a = ir_unary(c->g, OP_ABS, x, c->st), x2 = ir_unary(c->g, OP_SQUARE, x, c->st);
        IrValue q = bin(c, OP_DIV, x2, bin(c, OP_ADD, one, ir_unary(c->g, OP_SQRT, bin(c, OP_ADD, x2, one), c->st)));
        y = bin(c, OP_MUL, ir_unary(c->g, OP_SIGN, x, c->st), ir_unary(c->g, OP_LOG1P, bin(c, OP_ADD, a, q), c->st));
        break;
    }
    case INV_ACOSH:
        y = ir_unary(c->g, OP_LOG1P, bin(c, OP_ADD, xm1, ir_unary(c->g, OP_SQRT, bin(c, OP_MUL, xm1, opx), c->st)),
                     c->st);
        break;
    default:
        y = bin(c, OP_MUL, scalar(c, dt, 0.5),
                ir_unary(c->g, OP_LOG1P, bin(c, OP_DIV, bin(c, OP_ADD, x, x), omx), c->st));
        break;
    }
    out[0] = y;
    return y.node != NULL;
}
#define INVERSE(fn, w)                                                                                     \
    static bool fn(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)                                  \
    {                                                                                                      \
        return lower_inverse_trig(c, w, in, n_in, out);                                                    \
    }
INVERSE(lower_asin, INV_ASIN)
INVERSE(lower_acos, INV_ACOS)
INVERSE(lower_atan, INV_ATAN)
INVERSE(lower_asinh, INV_ASINH)
INVERSE(lower_acosh, INV_ACOSH)
INVERSE(lower_atanh, INV_ATANH)

/* ---- Einsum (one or two operands) ---- */

/* A term's subscripts (letters) into l[]; false with an error otherwise. */
static bool einsum_term(OnnxCtx *c, const char *s, size_t len, char *l, int *n, const char *what)
{
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch == ' ')
            continue;
        if (ch == '.')
            return onnx_errorf(c, "equation %s: ellipsis ('...') is not supported", what);
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
            return onnx_errorf(c, "equation %s: bad character '%c'", what, ch);
        if (*n >= IR_MAX_RANK)
            return onnx_errorf(c, "equation %s: more than %d subscripts", what, IR_MAX_RANK);
        if (memchr(l, ch, (size_t)*n) && !strcmp(what, "output"))
            return onnx_errorf(c, "equation %s: repeated subscript '%c'", what, ch);
        l[(*n)++] = ch;
    }
    return true;
}

static int letter_at(const char *l, int n, char ch)
{
    for (int i = 0; i < n; i++)
        if (l[i] == ch)
            return i;
    return -1;
}

/* Sums away the subscripts of x (letters l[n]) that keep[] does not hold;
 * l and n are updated to the remaining ones. */
static IrValue einsum_sum_out(OnnxCtx *c, IrValue x, char *l, int *n, const char *keep, int nk)
{
    int64_t mask = 0;
    int m = 0;
    for (int i = 0; i < *n; i++) {
        if (letter_at(keep, nk, l[i]) < 0)
            mask |= (int64_t)1 << i;
        else
            l[m++] = l[i];
    }
    *n = m;
    return mask ? reduce(c, OP_REDUCE_SUM, x, mask, false) : x;
}

/* x (letters l[n]) transposed to the order to[n]. */
static IrValue einsum_order(OnnxCtx *c, IrValue x, const char *l, int n, const char *to)
{
    int64_t perm[IR_MAX_RANK];
    bool id = true;
    for (int i = 0; i < n; i++) {
        perm[i] = letter_at(l, n, to[i]);
        id &= perm[i] == i;
    }
    return id ? x : transpose(c, x, perm, n);
}

/* Rewrites eq (operands in[n_in]) with each "..." replaced by letters the
 * equation does not use, one per dim it covers (right-aligned across the
 * operands); an implicit output becomes explicit (the ellipsis letters, then
 * the subscripts used once, in alphabetical order).  out gets the result. */
static bool einsum_expand(OnnxCtx *c, const char *eq, const IrValue *in, int n_in, char *res, size_t nres)
{
    if (!strstr(eq, "..."))
        return snprintf(res, nres, "%s", eq) < (int)nres;
    bool used[128] = {false};
    for (const char *p = eq; *p; p++)
        if ((unsigned char)*p < 128)
            used[(int)*p] = true;
    char el[IR_MAX_RANK];
    int ne = 0;
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    /* the ellipsis rank: the most dims any operand's "..." covers */
    int erank[2] = {0, 0}, emax = 0;
    const char *t = eq;
    for (int k = 0; k < n_in; k++) {
        const char *end = memchr(t, ',', lhs_len - (size_t)(t - eq));
        size_t len = end ? (size_t)(end - t) : lhs_len - (size_t)(t - eq);
        int letters = 0;
        bool has = false;
        for (size_t i = 0; i < len; i++) {
            if (t[i] == '.' && i + 2 < len + 0 && t[i + 1] == '.' && t[i + 2] == '.')
                has = true, i += 2;
            else if (t[i] != ' ')
                letters++;
        }
        if (has) {
            erank[k] = ir_value_type(in[k])->shape.rank - letters;
            if (erank[k] < 0)
                return onnx_errorf(c, "operand %d has rank %d, fewer than its term's %d subscripts", k,
                                   ir_value_type(in[k])->shape.rank, letters);
            emax = erank[k] > emax ? erank[k] : emax;
        }
        t = end ? end + 1 : t + len;
    }
    for (int ch = 'A'; ch <= 'z' && ne < emax; ch++)
        if (((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')) && !used[ch])
            el[ne++] = (char)ch;
    if (ne < emax)
        return onnx_errorf(c, "equation '%s': no letters left for the ellipsis", eq);
    size_t w = 0;
    int k = 0;
    for (size_t i = 0; i < lhs_len && w + IR_MAX_RANK + 2 < nres; i++) {
        if (eq[i] == ',')
            k++;
        if (eq[i] == '.' && i + 2 < lhs_len && eq[i + 1] == '.' && eq[i + 2] == '.') {
            for (int j = emax - erank[k < 2 ? k : 1]; j < emax; j++)
                res[w++] = el[j];
            i += 2;
        } else
            res[w++] = eq[i];
    }
    if (w + 3 * IR_MAX_RANK + 8 >= nres)
        return onnx_errorf(c, "attribute equation is too long");
    res[w++] = '-', res[w++] = '>';
    if (arrow) {
        for (const char *p = arrow + 2; *p && w + IR_MAX_RANK + 1 < nres; p++) {
            if (p[0] == '.' && p[1] == '.' && p[2] == '.') {
                for (int j = 0; j < emax; j++)
                    res[w++] = el[j];
                p += 2;
            } else
                res[w++] = *p;
        }
    } else {
        for (int j = 0; j < emax; j++)
            res[w++] = el[j];
        for (int ch = 'A'; ch <= 'z'; ch++) {
            if (!used[ch] || !((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')))
                continue;
            int uses = 0;
            for (size_t i = 0; i < lhs_len; i++)
                uses += eq[i] == ch;
            if (uses == 1 && w + 1 < nres)
                res[w++] = (char)ch;
        }
    }
    res[w] = 0;
    return true;
}

/* A subscript repeated within one term (x's letters l[n]) takes the
 * diagonal: the second axis moved after the first, the two merged, and a
 * gather of positions k * (d + 1). */
static IrValue einsum_diagonal(OnnxCtx *c, IrValue x, char *l, int *n)
{
    for (int i = 0; i < *n && x.node; i++) {
        for (int j = i + 1; j < *n && x.node; j++) {
            if (l[j] != l[i])
                continue;
            const IrShape *s = shape_of(x);
            int64_t d = s->dims[i];
            if (s->dims[j] != d) {
                onnx_errorf(c, "repeated subscript '%c' has sizes %lld and %lld", l[i], (long long)d,
                            (long long)s->dims[j]);
                return (IrValue){NULL, 0};
            }
            int64_t perm[IR_MAX_RANK], dims[IR_MAX_RANK], m = 0;
            char nl[IR_MAX_RANK];
            for (int k = 0; k < *n; k++) {
                if (k == j)
                    continue;
                perm[m] = k;
                nl[m] = l[k];
                dims[m++] = s->dims[k];
                if (k == i)
                    perm[m++] = j;
            }
            x = transpose(c, x, perm, *n);
            dims[i] = d * d;
            for (int k = i + 1; k < *n - 1; k++)
                dims[k] = s->dims[perm[k + 1]];
            x = x.node ? reshape_to(c, x, *n - 1, dims) : x;
            int64_t *pos = malloc((size_t)(d + 1) * sizeof *pos);
            if (!pos) {
                st_errorf(c->st, ST_NOMEM, "out of memory");
                return (IrValue){NULL, 0};
            }
            for (int64_t k = 0; k < d; k++)
                pos[k] = k * (d + 1);
            IrValue iv = ir_const_i64s(c->g, TCRT_I64, pos, (int)d, c->st);
            free(pos);
            IrParams p;
            memset(&p, 0, sizeof p);
            p.i[0] = i;
            x = x.node && iv.node ? ir_emit1(c->g, OP_GATHER, (IrValue[]){x, iv}, 2, &p, NULL, c->st)
                                  : (IrValue){NULL, 0};
            (*n)--;
            memcpy(l, nl, (size_t)*n);
            j = i; /* look again after the merged axis */
        }
    }
    return x;
}

/* One operand: reduce_sum + transpose.  Two: the subscripts only one side
 * has and the output lacks are summed first; then A -> [batch, M, K] and
 * B -> [batch, K, N] (transpose + reshape), a batched matmul, and the
 * result reshaped and transposed to the output's order. */
static bool lower_einsum(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    char eq0[256], eq[512];
    if (!need(c, in, n_in, 1) || !onnx_attr_str(c, "equation", "", eq0, sizeof eq0))
        return false;
    if (strlen(eq0) >= sizeof eq0 - 1)
        return onnx_errorf(c, "attribute equation is too long");
    if (n_in > 2)
        return onnx_errorf(c, "%d operands: only one or two are supported", n_in);
    if (!need(c, in, n_in, n_in) || !einsum_expand(c, eq0, in, n_in, eq, sizeof eq))
        return false;
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    const char *comma = memchr(eq, ',', lhs_len);
    if ((comma != NULL) != (n_in == 2) || (comma && memchr(comma + 1, ',', lhs_len - (size_t)(comma + 1 - eq))))
        return onnx_errorf(c, "equation '%s' does not have %d operand terms", eq, n_in);
    char l[2][IR_MAX_RANK], o[IR_MAX_RANK];
    int n[2] = {0, 0}, no = 0;
    if (!einsum_term(c, eq, comma ? (size_t)(comma - eq) : lhs_len, l[0], &n[0], "operand 0"))
        return false;
    if (comma && !einsum_term(c, comma + 1, lhs_len - (size_t)(comma + 1 - eq), l[1], &n[1], "operand 1"))
        return false;
    int64_t dim[128];
    bool seen[128] = {false};
    IrValue ops[2] = {in[0], n_in > 1 ? in[1] : in[0]};
    for (int k = 0; k < n_in; k++) {
        if (shape_of(in[k])->rank != n[k])
            return onnx_errorf(c, "operand %d has rank %d, its term %d subscripts", k, shape_of(in[k])->rank,
                               n[k]);
        TRY(ops[k] = einsum_diagonal(c, ops[k], l[k], &n[k]));
        const IrShape *s = shape_of(ops[k]);
        if (s->rank != n[k])
            return onnx_errorf(c, "operand %d has rank %d, its term %d subscripts", k, s->rank, n[k]);
        for (int i = 0; i < n[k]; i++) {
            int ch = l[k][i];
            if (seen[ch] && dim[ch] != s->dims[i])
                return onnx_errorf(c, "subscript '%c' has sizes %lld and %lld", ch, (long long)dim[ch],
                                   (long long)s->dims[i]);
            seen[ch] = true;
            dim[ch] = s->dims[i];
        }
    }
    if (arrow) {
        if (!einsum_term(c, arrow + 2, strlen(arrow + 2), o, &no, "output"))
            return false;
        for (int i = 0; i < no; i++)
            if (!seen[(int)o[i]])
                return onnx_errorf(c, "output subscript '%c' is not in an operand", o[i]);
    } else { /* implicit: the subscripts used once, in alphabetical order */
        for (int ch = 'A'; ch <= 'z'; ch++) {
            if (!seen[ch])
                continue;
            int uses = (letter_at(l[0], n[0], (char)ch) >= 0) + (n_in == 2 && letter_at(l[1], n[1], (char)ch) >= 0);
            if (uses == 1)
                o[no++] = (char)ch;
        }
    }
    IrValue x = ops[0];
    if (n_in == 1) {
        TRY(x = einsum_sum_out(c, x, l[0], &n[0], o, no));
        out[0] = einsum_order(c, x, l[0], n[0], o);
        return out[0].node != NULL;
    }
    IrValue y = ops[1];
    char keep0[2 * IR_MAX_RANK], keep1[2 * IR_MAX_RANK];
    memcpy(keep0, o, (size_t)no), memcpy(keep0 + no, l[1], (size_t)n[1]);
    memcpy(keep1, o, (size_t)no), memcpy(keep1 + no, l[0], (size_t)n[0]);
    TRY(x = einsum_sum_out(c, x, l[0], &n[0], keep0, no + n[1]));
    TRY(y = einsum_sum_out(c, y, l[1], &n[1], keep1, no + n[0]));
    char bt[IR_MAX_RANK], ka[IR_MAX_RANK], kb[IR_MAX_RANK], ct[IR_MAX_RANK];
    int nbt = 0, nka = 0, nkb = 0, nct = 0;
    int64_t B = 1, M = 1, N = 1, K = 1;
    for (int i = 0; i < no; i++) /* batch: in both and in the output (output order) */
        if (letter_at(l[0], n[0], o[i]) >= 0 && letter_at(l[1], n[1], o[i]) >= 0)
            bt[nbt++] = o[i], B *= dim[(int)o[i]];
    for (int i = 0; i < n[0]; i++) {
        char ch = l[0][i];
        bool inb = letter_at(l[1], n[1], ch) >= 0, ino = letter_at(o, no, ch) >= 0;
        if (inb && !ino)
            ct[nct++] = ch, K *= dim[(int)ch];
        else if (!inb)
            ka[nka++] = ch, M *= dim[(int)ch];
    }
    for (int i = 0; i < n[1]; i++)
        if (letter_at(l[0], n[0], l[1][i]) < 0)
            kb[nkb++] = l[1][i], N *= dim[(int)l[1][i]];
    char oa[IR_MAX_RANK], ob[IR_MAX_RANK], r[3 * IR_MAX_RANK];
    memcpy(oa, bt, (size_t)nbt), memcpy(oa + nbt, ka, (size_t)nka), memcpy(oa + nbt + nka, ct, (size_t)nct);
    memcpy(ob, bt, (size_t)nbt), memcpy(ob + nbt, ct, (size_t)nct), memcpy(ob + nbt + nct, kb, (size_t)nkb);
    TRY(x = einsum_order(c, x, l[0], n[0], oa));
    TRY(y = einsum_order(c, y, l[1], n[1], ob));
    TRY(x = reshape_to(c, x, 3, (int64_t[]){B, M, K}));
    TRY(y = reshape_to(c, y, 3, (int64_t[]){B, K, N}));
    IrValue z = matmul(c, x, y, false, false);
    TRY(z);
    int nr = nbt + nka + nkb;
    if (nr > IR_MAX_RANK)
        return onnx_errorf(c, "result rank %d is more than %d", nr, IR_MAX_RANK);
    memcpy(r, bt, (size_t)nbt), memcpy(r + nbt, ka, (size_t)nka), memcpy(r + nbt + nka, kb, (size_t)nkb);
    int64_t rd[IR_MAX_RANK];
    for (int i = 0; i < nr; i++)
        rd[i] = dim[(int)r[i]];
    TRY(z = reshape_to(c, z, nr, rd));
    out[0] = einsum_order(c, z, r, nr, o);
    return out[0].node != NULL;
}

/* ---- ScatterElements / Scatter / ScatterND ---- */

enum { SC_NONE, SC_ADD, SC_MUL };
static bool scatter_reduction(OnnxCtx *c, int *red)
{
    char r[16];
    if (!onnx_attr_str(c, "reduction", "none", r, sizeof r))
        return false;
    if (!strcmp(r, "none"))
        *red = SC_NONE;
    else if (!strcmp(r, "add"))
        *red = SC_ADD;
    else if (!strcmp(r, "mul"))
        *red = SC_MUL;
    else
        return onnx_errorf(c, "reduction '%s' is not supported (none, add, mul are)", r);
    return true;
}

/* out where mask, else acc: the update (none), acc + u (add), acc * u (mul). */
static IrValue scatter_step(OnnxCtx *c, int red, IrValue mask, IrValue u, IrValue acc)
{
    const IrShape *s = shape_of(acc);
    IrValue v = red == SC_ADD ? bin(c, OP_ADD, acc, u) : red == SC_MUL ? bin(c, OP_MUL, acc, u) : broadcast_to(c, u, s);
    return select3(c, broadcast_to(c, mask, s), broadcast_to(c, v, s), acc);
}

#define SCATTER_MAX_STEPS 256

/* ScatterElements (and Scatter before opset 11): one select per position k
 * along the axis of indices: where iota(axis) == indices[.., k, ..] the
 * update (or acc + u, acc * u) is taken, in increasing k as the reference
 * applies them.  Indices and updates smaller than the data in the other
 * dims are padded with -1 (never matches) and 0. */
static bool lower_scatter_elements(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t axis;
    int red = SC_NONE;
    if (!need(c, in, n_in, 3) || !onnx_attr_int(c, "axis", 0, &axis) || !scatter_reduction(c, &red))
        return false;
    const IrShape ds = *shape_of(in[0]), is = *shape_of(in[1]);
    if (!norm_axis(c, &axis, ds.rank, "axis"))
        return false;
    if (is.rank != ds.rank || !ir_shape_eq(&is, shape_of(in[2])))
        return onnx_errorf(c, "indices and updates must have one shape of the data's rank");
    if (dtype_of(in[2]) != dtype_of(in[0]))
        return onnx_errorf(c, "updates and data must have one element type");
    if (ds.rank > 8)
        return onnx_errorf(c, "rank %d is more than 8", ds.rank);
    if (is.dims[axis] > SCATTER_MAX_STEPS)
        return onnx_errorf(c, "%lld indices along the axis: at most %d are supported", (long long)is.dims[axis],
                           SCATTER_MAX_STEPS);
    IrValue idx = wrap_indices(c, in[1], ds.dims[axis]), upd = in[2];
    TRY(idx);
    IrParams pi, pu;
    memset(&pi, 0, sizeof pi);
    memset(&pu, 0, sizeof pu);
    IrShape ps = ds;
    ps.dims[axis] = is.dims[axis];
    bool pad = false;
    for (int d = 0; d < ds.rank; d++) {
        if (d == axis)
            continue;
        if (is.dims[d] > ds.dims[d])
            return onnx_errorf(c, "indices dim %d (%lld) exceeds the data's (%lld)", d, (long long)is.dims[d],
                               (long long)ds.dims[d]);
        pi.i[2 * d + 1] = pu.i[2 * d + 1] = ds.dims[d] - is.dims[d];
        pad |= ds.dims[d] != is.dims[d];
    }
    if (pad) {
        pi.f[0] = -1;
        IrType ti = {TCRT_I64, ps}, tu = {dtype_of(upd), ps};
        TRY(idx = ir_emit1(c->g, OP_PAD, &idx, 1, &pi, &ti, c->st));
        TRY(upd = ir_emit1(c->g, OP_PAD, &upd, 1, &pu, &tu, c->st));
    }
    IrValue iota = iota_along(c, ds.dims[axis], (int)axis, ds.rank), acc = in[0];
    TRY(iota);
    int64_t begin[IR_MAX_RANK] = {0}, stride[IR_MAX_RANK], count[IR_MAX_RANK];
    for (int d = 0; d < ds.rank; d++)
        stride[d] = 1, count[d] = ps.dims[d];
    count[axis] = 1;
    for (int64_t k = 0; k < is.dims[axis]; k++) {
        begin[axis] = k;
        IrValue ik = slice(c, idx, begin, stride, count), uk = slice(c, upd, begin, stride, count);
        TRY(ik);
        TRY(uk);
        TRY(acc = scatter_step(c, red, bin(c, OP_EQ, ik, iota), uk, acc));
    }
    out[0] = acc;
    return true;
}

/* ScatterND: for each of the N index tuples (in order) a select where the
 * leading q coordinates equal the tuple (an and of q eq's against iotas). */
static bool lower_scatter_nd(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int red = SC_NONE;
    if (!need(c, in, n_in, 3) || !scatter_reduction(c, &red))
        return false;
    const IrShape ds = *shape_of(in[0]), is = *shape_of(in[1]), us = *shape_of(in[2]);
    if (is.rank < 1)
        return onnx_errorf(c, "indices must have rank >= 1");
    int q = (int)is.dims[is.rank - 1];
    if (q < 1 || q > ds.rank)
        return onnx_errorf(c, "indices' last dim %d must be in 1..%d", q, ds.rank);
    if (dtype_of(in[2]) != dtype_of(in[0]))
        return onnx_errorf(c, "updates and data must have one element type");
    bool ok = us.rank == is.rank - 1 + ds.rank - q;
    for (int d = 0; ok && d < is.rank - 1; d++)
        ok = us.dims[d] == is.dims[d];
    for (int d = q; ok && d < ds.rank; d++)
        ok = us.dims[is.rank - 1 + d - q] == ds.dims[d];
    if (!ok) {
        char b0[96], b1[96], b2[96];
        return onnx_errorf(c, "updates shape %s does not match indices %s and data %s",
                           ir_shape_str(&us, b0, sizeof b0), ir_shape_str(&is, b1, sizeof b1),
                           ir_shape_str(&ds, b2, sizeof b2));
    }
    int64_t n = ir_shape_count(&is) / q;
    if (n > SCATTER_MAX_STEPS)
        return onnx_errorf(c, "%lld index tuples: at most %d are supported", (long long)n, SCATTER_MAX_STEPS);
    IrValue idx = in[1];
    if (dtype_of(idx) != TCRT_I64)
        TRY(idx = ir_cast(c->g, idx, TCRT_I64, c->st));
    TRY(idx = reshape_to(c, idx, 2, (int64_t[]){n, q}));
    IrShape ush = {0}; /* one update: ones over the q leading dims, then data dims q.. */
    ush.rank = ds.rank;
    for (int d = 0; d < ds.rank; d++)
        ush.dims[d] = d < q ? 1 : ds.dims[d];
    int64_t per = ir_shape_count(&ush);
    IrValue upd = reshape_to(c, in[2], 2, (int64_t[]){n, per});
    TRY(upd);
    IrShape one = {0};
    one.rank = ds.rank;
    for (int d = 0; d < ds.rank; d++)
        one.dims[d] = 1;
    IrValue iotas[IR_MAX_RANK];
    for (int d = 0; d < q; d++)
        TRY(iotas[d] = iota_along(c, ds.dims[d], d, ds.rank));
    IrValue acc = in[0];
    for (int64_t i = 0; i < n; i++) {
        IrValue mask = {NULL, 0};
        for (int d = 0; d < q; d++) {
            IrValue v = slice(c, idx, (int64_t[]){i, d}, (int64_t[]){1, 1}, (int64_t[]){1, 1});
            TRY(v);
            TRY(v = ir_reshape(c->g, wrap_indices(c, v, ds.dims[d]), &one, c->st));
            IrValue m = bin(c, OP_EQ, v, iotas[d]);
            TRY(m);
            TRY(mask = d ? bin(c, OP_AND, mask, m) : m);
        }
        IrValue u = slice(c, upd, (int64_t[]){i, 0}, (int64_t[]){1, 1}, (int64_t[]){1, per});
        TRY(u);
        TRY(u = ir_reshape(c->g, u, &ush, c->st));
        TRY(acc = scatter_step(c, red, mask, u, acc));
    }
    out[0] = acc;
    return true;
}

/* ReverseSequence: out[.., t, .., b, ..] = x[.., src, .., b, ..] with
 * src = t < len[b] ? len[b] - 1 - t : t (negative lengths and lengths past
 * the time axis are clamped to 0 and to its size), as one gather_nd whose
 * index tuples are iotas except along the time axis. */
static bool lower_reverse_sequence(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    int64_t ba, ta;
    if (!need(c, in, n_in, 2) || !onnx_attr_int(c, "batch_axis", 1, &ba) || !onnx_attr_int(c, "time_axis", 0, &ta))
        return false;
    const IrShape xs = *shape_of(in[0]);
    if (xs.rank < 2 || xs.rank + 1 > IR_MAX_RANK)
        return onnx_errorf(c, "input 0 must have rank 2 to %d", IR_MAX_RANK - 1);
    if (!norm_axis(c, &ba, xs.rank, "batch_axis") || !norm_axis(c, &ta, xs.rank, "time_axis"))
        return false;
    if (ba == ta)
        return onnx_errorf(c, "batch_axis and time_axis must differ");
    const IrShape *ls = shape_of(in[1]);
    if (ls->rank != 1 || ls->dims[0] != xs.dims[ba])
        return onnx_errorf(c, "input 1 (sequence_lens) must have shape [%lld]", (long long)xs.dims[ba]);
    IrValue len = in[1];
    if (dtype_of(len) != TCRT_I64)
        TRY(len = ir_cast(c->g, len, TCRT_I64, c->st));
    int64_t nt = xs.dims[ta];
    len = bin(c, OP_MIN, bin(c, OP_MAX, len, scalar(c, TCRT_I64, 0)), scalar(c, TCRT_I64, (double)nt));
    IrShape lb = {0};
    lb.rank = xs.rank;
    for (int d = 0; d < xs.rank; d++)
        lb.dims[d] = d == ba ? xs.dims[ba] : 1;
    TRY(len = ir_reshape(c->g, len, &lb, c->st));
    IrValue t = iota_along(c, nt, (int)ta, xs.rank);
    IrValue rev = bin(c, OP_SUB, bin(c, OP_SUB, len, scalar(c, TCRT_I64, 1)), t);
    IrValue src = select3(c, bin(c, OP_LT, t, len), rev, broadcast_to(c, t, shape_of(rev)));
    TRY(src);
    IrShape one = xs;
    one.dims[one.rank++] = 1;
    IrValue parts[IR_MAX_RANK];
    for (int d = 0; d < xs.rank; d++) {
        IrValue v = broadcast_to(c, d == ta ? src : iota_along(c, xs.dims[d], d, xs.rank), &xs);
        TRY(v);
        TRY(parts[d] = ir_reshape(c->g, v, &one, c->st));
    }
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CAT_AXIS] = xs.rank;
    IrValue ix = ir_emit1(c->g, OP_CONCAT, parts, xs.rank, &p, NULL, c->st);
    TRY(ix);
    IrValue ins[2] = {in[0], ix};
    out[0] = ir_emit1(c->g, OP_GATHER_ND, ins, 2, NULL, NULL, c->st);
    return out[0].node != NULL;
}

const OnnxOpRow onnx_ops[] = {
    {"Abs", lower_abs, "abs"},
    {"Add", lower_add, "add"},
    {"And", lower_and, "and"},
    {"AveragePool", lower_avgpool, "transpose + avgpool + transpose"},
    {"BatchNormalization", lower_batchnorm, "mul + add (scale and shift folded)"},
    {"Cast", lower_cast, "cast"},
    {"Ceil", lower_ceil, "ceil"},
    {"Clip", lower_clip, "max + min"},
    {"Concat", lower_concat, "concat"},
    {"Constant", lower_constant, "const"},
    {"Conv", lower_conv, "transpose + conv2d + transpose"},
    {"Cos", lower_cos, "cos"},
    {"Div", lower_div, "div"},
    {"Equal", lower_equal, "eq"},
    {"Erf", lower_erf, "erf"},
    {"Exp", lower_exp, "exp"},
    {"Flatten", lower_flatten, "copy"},
    {"Floor", lower_floor, "floor"},
    {"Gather", lower_gather, "gather"},
    {"Gemm", lower_gemm, "matmul + mul + add"},
    {"GlobalAveragePool", lower_global_avgpool, "reduce_sum + mul"},
    {"Greater", lower_greater, "gt"},
    {"Identity", lower_identity, "(none)"},
    {"LeakyRelu", lower_leaky_relu, "select"},
    {"Less", lower_less, "lt"},
    {"Log", lower_log, "log"},
    {"LogSoftmax", lower_log_softmax, "reduce_max + sub + exp + reduce_sum + log + sub"},
    {"MatMul", lower_matmul, "matmul"},
    {"MaxPool", lower_maxpool, "transpose + maxpool + transpose"},
    {"Mul", lower_mul, "mul"},
    {"Neg", lower_neg, "neg"},
    {"Not", lower_not, "not"},
    {"Or", lower_or, "or"},
    {"Pow", lower_pow, "pow"},
    {"Reciprocal", lower_reciprocal, "recip"},
    {"ReduceMax", lower_reduce_max, "reduce_max"},
    {"ReduceMean", lower_reduce_mean, "reduce_sum + mul"},
    {"ReduceMin", lower_reduce_min, "reduce_min"},
    {"ReduceProd", lower_reduce_prod, "reduce_prod"},
    {"ReduceSum", lower_reduce_sum, "reduce_sum"},
    {"Relu", lower_relu, "relu"},
    {"Reshape", lower_reshape, "copy"},
    {"Shape", lower_shape, "const"},
    {"Sigmoid", lower_sigmoid, "sigmoid"},
    {"Sin", lower_sin, "sin"},
    {"Softmax", lower_softmax, "reduce_max + sub + exp + reduce_sum + div"},
    {"Sqrt", lower_sqrt, "sqrt"},
    {"Squeeze", lower_squeeze, "copy"},
    {"Sub", lower_sub, "sub"},
    {"Tanh", lower_tanh, "tanh"},
    {"Transpose", lower_transpose, "transpose"},
    {"Unsqueeze", lower_unsqueeze, "copy"},
    {"ArgMax", lower_argmax, "argmax"},
    {"ArgMin", lower_argmin, "argmin"},
    {"ConstantOfShape", lower_constant_of_shape, "broadcast"},
    {"Dropout", lower_dropout, "(none)"},
    {"Elu", lower_elu, "exp + select"},
    {"Expand", lower_expand, "broadcast"},
    {"GreaterOrEqual", lower_greater_equal, "ge"},
    {"HardSigmoid", lower_hard_sigmoid, "mul + add + max + min"},
    {"HardSwish", lower_hard_swish, "mul + add + max + min + mul"},
    {"InstanceNormalization", lower_instance_norm, "reduce_sum + sub + mul + rsqrt"},
    {"LayerNormalization", lower_layer_norm, "reduce_sum + sub + mul + rsqrt"},
    {"LessOrEqual", lower_less_equal, "le"},
    {"Max", lower_max, "max"},
    {"Mean", lower_mean, "add + div"},
    {"MeanVarianceNormalization", lower_mvn, "reduce_sum + sub + mul + rsqrt"},
    {"Min", lower_min, "min"},
    {"PRelu", lower_prelu, "select"},
    {"Pad", lower_pad, "pad"},
    {"Range", lower_range, "range"},
    {"ReduceL1", lower_reduce_l1, "abs + reduce_sum"},
    {"ReduceL2", lower_reduce_l2, "square + reduce_sum + sqrt"},
    {"ReduceLogSum", lower_reduce_log_sum, "reduce_sum + log"},
    {"ReduceLogSumExp", lower_reduce_log_sum_exp, "exp + reduce_sum + log"},
    {"ReduceSumSquare", lower_reduce_sum_square, "square + reduce_sum"},
    {"Round", lower_round, "round"},
    {"Selu", lower_selu, "exp + select + mul"},
    {"Sign", lower_sign, "sign"},
    {"Size", lower_size, "const"},
    {"Slice", lower_slice, "slice"},
    {"Softplus", lower_softplus, "exp + log1p"},
    {"Softsign", lower_softsign, "abs + add + div"},
    {"Split", lower_split, "slice"},
    {"Sum", lower_sum, "add"},
    {"Tan", lower_tan, "tan"},
    {"Tile", lower_tile, "tile"},
    {"Where", lower_where, "select"},
    {"Xor", lower_xor, "ne"},
    {"CastLike", lower_cast_like, "cast"},
    {"Celu", lower_celu, "exp + max + min + add"},
    {"Cosh", lower_cosh, "exp + add + mul"},
    {"CumSum", lower_cumsum, "matmul (triangular)"},
    {"DepthToSpace", lower_depth_to_space, "copy + transpose + copy"},
    {"EyeLike", lower_eye_like, "const"},
    {"GatherElements", lower_gather_elements, "gather_nd"},
    {"GatherND", lower_gather_nd, "gather_nd"},
    {"GlobalMaxPool", lower_global_maxpool, "reduce_max"},
    {"IsInf", lower_isinf, "eq + or"},
    {"IsNaN", lower_isnan, "ne"},
    {"Mod", lower_mod, "floormod"},
    {"NegativeLogLikelihoodLoss", lower_nll_loss, "eq + mul + reduce_sum"},
    {"Shrink", lower_shrink, "select"},
    {"Sinh", lower_sinh, "exp + sub + mul"},
    {"SoftmaxCrossEntropyLoss", lower_softmax_ce_loss, "log_softmax + eq + mul + reduce_sum"},
    {"SpaceToDepth", lower_space_to_depth, "copy + transpose + copy"},
    {"ThresholdedRelu", lower_thresholded_relu, "select"},
    {"Trilu", lower_trilu, "select"},
    {"ConvTranspose", lower_conv_transpose, "transpose + conv2d_transpose + transpose"},
    {"Resize", onnx_lower_resize, "gather + mul + add per axis (tables computed at compile time)"},
    {"Upsample", onnx_lower_upsample, "gather + mul + add per axis (as Resize)"},
    {"TopK", lower_topk, "topk (+ neg / sub, transpose, cast)"},
    {"Hardmax", lower_hardmax, "argmax + eq + cast"},
    {"OneHot", lower_one_hot, "eq + select"},
    {"LRN", lower_lrn, "square + pad + slice + add + pow + div"},
    {"Asin", lower_asin, "atan2 + sqrt"},
    {"Acos", lower_acos, "atan2 + sqrt"},
    {"Atan", lower_atan, "atan2"},
    {"Asinh", lower_asinh, "log1p + sqrt + sign"},
    {"Acosh", lower_acosh, "log1p + sqrt"},
    {"Atanh", lower_atanh, "log1p + div"},
    {"Einsum", lower_einsum, "reduce_sum + transpose + matmul"},
    {"ScatterElements", lower_scatter_elements, "eq + select per index along the axis"},
    {"Scatter", lower_scatter_elements, "eq + select per index along the axis"},
    {"ScatterND", lower_scatter_nd, "eq + and + select per index tuple"},
    {"ReverseSequence", lower_reverse_sequence, "select + gather_nd"},
    {"BitShift", lower_bitshift, "gather (2^y) + mul / div"},
    {"HannWindow", lower_hann_window, "const"},
    {"HammingWindow", lower_hamming_window, "const"},
    {"BlackmanWindow", lower_blackman_window, "const"},
    {NULL, NULL, NULL},
};

const OnnxOpRow *onnx_find_row(const char *op)
{
    for (const OnnxOpRow *r = onnx_ops; r->op; r++)
        if (!strcmp(r->op, op))
            return r;
    for (const OnnxOpRow *r = onnx_ops_flow; r->op; r++)
        if (!strcmp(r->op, op))
            return r;
    return NULL;
}
