/* compiler/tf/tf_lower.c - the builders and window arithmetic shared by
 * the TF lowering tables (see tf_lower.h).
 * Invariants: every builder returns an undefined value ({NULL, 0}) when an
 * operand is undefined or the IR builder fails (which recorded the error);
 * every check returns false after recording one message naming the node. */
#include "compiler/tf/tf_lower.h"

#include <stdio.h>
#include <string.h>

bool tfl_want_inputs(TfCtx *c, int n_in, int want)
{
    if (n_in == want)
        return true;
    return tf_errorf(c, "expected %d input%s, got %d", want, want == 1 ? "" : "s", n_in);
}

bool tfl_shape_msg(TfCtx *c, const char *what, IrValue v, const char *need)
{
    char buf[200];
    return tf_errorf(c, "%s must be %s, got shape %s", what, need, ir_shape_str(tfl_shape(v), buf, sizeof buf));
}

bool tfl_want_rank(TfCtx *c, IrValue v, int rank, const char *what)
{
    if (tfl_shape(v)->rank == rank)
        return true;
    char need[32];
    snprintf(need, sizeof need, "%d-D", rank);
    return tfl_shape_msg(c, what, v, need);
}

IrValue tfl_scalar(TfCtx *c, tcrt_dtype dt, double v)
{
    return ir_const_scalar_f(c->g, dt, v, c->st);
}

IrValue tfl_unary(TfCtx *c, Op op, IrValue a)
{
    return a.node ? ir_unary(c->g, op, a, c->st) : a;
}

IrValue tfl_binary(TfCtx *c, Op op, IrValue a, IrValue b)
{
    if (!a.node || !b.node)
        return (IrValue){NULL, 0};
    return ir_binary(c->g, op, a, b, c->st);
}

IrValue tfl_select(TfCtx *c, IrValue cond, IrValue a, IrValue b)
{
    if (!cond.node || !a.node || !b.node)
        return (IrValue){NULL, 0};
    IrValue in[3] = {cond, a, b};
    return ir_emit1(c->g, OP_SELECT, in, 3, NULL, NULL, c->st);
}

IrValue tfl_reshape(TfCtx *c, IrValue a, int rank, const int64_t *dims)
{
    if (!a.node)
        return a;
    IrShape s = ir_shape_make(rank, dims);
    return ir_reshape(c->g, a, &s, c->st);
}

IrValue tfl_transpose4(TfCtx *c, IrValue a, int p0, int p1, int p2, int p3)
{
    if (!a.node)
        return a;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = p0;
    p.i[1] = p1;
    p.i[2] = p2;
    p.i[3] = p3;
    return ir_emit1(c->g, OP_TRANSPOSE, &a, 1, &p, NULL, c->st);
}

IrValue tfl_to_nhwc(TfCtx *c, IrValue a)
{
    return tfl_transpose4(c, a, 0, 2, 3, 1);
}

IrValue tfl_from_nhwc(TfCtx *c, IrValue a)
{
    return tfl_transpose4(c, a, 0, 3, 1, 2);
}

IrValue tfl_reduce(TfCtx *c, Op op, IrValue a, int64_t mask, bool keep)
{
    if (!a.node)
        return a;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = mask;
    p.i[1] = keep;
    return ir_emit1(c->g, op, &a, 1, &p, NULL, c->st);
}

bool tfl_data_format(TfCtx *c, bool *nchw)
{
    const char *f;
    if (!tf_attr_str(c, "data_format", &f))
        return false;
    if (strcmp(f, "NHWC") == 0)
        *nchw = false;
    else if (strcmp(f, "NCHW") == 0)
        *nchw = true;
    else
        return tf_errorf(c, "unsupported data_format '%s'", f);
    return true;
}

bool tfl_hw_of(TfCtx *c, const char *name, const int64_t *v, int n, bool nchw, int64_t *h, int64_t *w)
{
    if (n != 4)
        return tf_errorf(c, "attribute '%s' must have 4 values, has %d", name, n);
    int hd = nchw ? 2 : 1, wd = nchw ? 3 : 2, cd = nchw ? 1 : 3;
    if (v[0] != 1 || v[cd] != 1)
        return tf_errorf(c, "attribute '%s' must be 1 in the batch and channel dimensions", name);
    if (v[hd] <= 0 || v[wd] <= 0)
        return tf_errorf(c, "attribute '%s' must be positive", name);
    *h = v[hd];
    *w = v[wd];
    return true;
}

bool tfl_hw_attr(TfCtx *c, const char *name, bool nchw, int64_t *h, int64_t *w)
{
    int64_t v[8];
    int n;
    if (!tf_attr_ints(c, name, v, 8, &n))
        return false;
    return tfl_hw_of(c, name, v, n, nchw, h, w);
}

void tfl_same_pads(int64_t in, int64_t k, int64_t s, int64_t d, int64_t *lo, int64_t *hi)
{
    int64_t keff = (k - 1) * d + 1;
    int64_t out = (in + s - 1) / s;
    int64_t total = (out - 1) * s + keff - in;
    if (total < 0)
        total = 0;
    *lo = total / 2;
    *hi = total - *lo;
}

bool tfl_window_pads(TfCtx *c, bool nchw, int64_t ih, int64_t iw, int64_t kh, int64_t kw, int64_t sh,
                     int64_t sw, int64_t dh, int64_t dw, int64_t pads[4])
{
    const char *padding;
    if (!tf_attr_str(c, "padding", &padding))
        return false;
    if (strcmp(padding, "SAME") == 0) {
        tfl_same_pads(ih, kh, sh, dh, &pads[0], &pads[2]);
        tfl_same_pads(iw, kw, sw, dw, &pads[1], &pads[3]);
    } else if (strcmp(padding, "VALID") == 0) {
        pads[0] = pads[1] = pads[2] = pads[3] = 0;
    } else if (strcmp(padding, "EXPLICIT") == 0) {
        int64_t e[16];
        int n;
        if (!tf_attr_ints(c, "explicit_paddings", e, 16, &n))
            return false;
        if (n != 8)
            return tf_errorf(c, "explicit_paddings must have 8 values, has %d", n);
        int hd = nchw ? 2 : 1, wd = nchw ? 3 : 2;
        pads[0] = e[2 * hd];
        pads[2] = e[2 * hd + 1];
        pads[1] = e[2 * wd];
        pads[3] = e[2 * wd + 1];
        for (int i = 0; i < 4; i++)
            if (pads[i] < 0)
                return tf_errorf(c, "explicit_paddings must not be negative");
    } else {
        return tf_errorf(c, "unsupported padding '%s'", padding);
    }
    return true;
}

IrParams tfl_conv_params(int64_t sh, int64_t sw, int64_t dh, int64_t dw, const int64_t pads[4])
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = sh;
    p.i[TCRT_CONV_SW] = sw;
    p.i[TCRT_CONV_DH] = dh;
    p.i[TCRT_CONV_DW] = dw;
    p.i[TCRT_CONV_PT] = pads[0];
    p.i[TCRT_CONV_PL] = pads[1];
    p.i[TCRT_CONV_PB] = pads[2];
    p.i[TCRT_CONV_PR] = pads[3];
    return p;
}

IrParams tfl_pool_params(int64_t kh, int64_t kw, int64_t sh, int64_t sw, const int64_t pads[4])
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_POOL_KH] = kh;
    p.i[TCRT_POOL_KW] = kw;
    p.i[TCRT_POOL_SH] = sh;
    p.i[TCRT_POOL_SW] = sw;
    p.i[TCRT_POOL_PT] = pads[0];
    p.i[TCRT_POOL_PL] = pads[1];
    p.i[TCRT_POOL_PB] = pads[2];
    p.i[TCRT_POOL_PR] = pads[3];
    return p;
}
