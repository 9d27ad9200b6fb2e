/* compiler/onnx/onnx_ops_grid.c - ONNX GridSample (opset 16) lowered to
 * elementwise index arithmetic and batched gathers at run-time indices.
 *
 * X [N,C,H,W] is viewed as [N, H*W, C]; for each tap the grid-shaped
 * coordinates give a flat index y*W + x, gathered with batch_dims 1 into
 * [N, Ho*Wo, C] and weighted.  Coordinates: align_corners maps -1/1 to the
 * centres of the corner pixels (x = (g+1)/2 (W-1)), otherwise to their
 * outer edges (x = ((g+1) W - 1)/2).  A coordinate outside [lo, hi] (lo =
 * 0 or -0.5, hi = W-1 or W-0.5) is clamped to [0, W-1] (border) or
 * reflected at lo/hi (reflection) before the taps are taken; taps outside
 * the image read 0 (zeros), the nearest edge pixel (border) or the
 * reflected pixel (reflection).  Modes: nearest (round half to even),
 * bilinear (2x2 taps), bicubic (4x4 taps, A = -0.75).
 */
#include <string.h>

#include "compiler/onnx/onnx_int.h"

enum { PAD_ZEROS, PAD_BORDER, PAD_REFLECT };

typedef struct Grid {
    OnnxCtx *c;
    tcrt_dtype dt;
    int64_t N, C, H, W, Ho, Wo;
    int pad;
    double lo_x, hi_x, lo_y, hi_y; /* the reflection bounds */
    IrValue xt;                   /* X as [N, H*W, C] */
} Grid;

static IrValue k(Grid *g, double v)
{
    return ir_const_scalar_f(g->c->g, g->dt, v, g->c->st);
}

static IrValue b2(Grid *g, Op op, IrValue a, IrValue b)
{
    if (!a.node || !b.node)
        return (IrValue){NULL, 0};
    return ir_binary(g->c->g, op, a, b, g->c->st);
}

static IrValue u1(Grid *g, Op op, IrValue a)
{
    return a.node ? ir_unary(g->c->g, op, a, g->c->st) : a;
}

static IrValue sel(Grid *g, IrValue m, IrValue a, IrValue b)
{
    if (!m.node || !a.node || !b.node)
        return (IrValue){NULL, 0};
    return ir_emit1(g->c->g, OP_SELECT, (IrValue[]){m, a, b}, 3, NULL, NULL, g->c->st);
}

static IrValue clampv(Grid *g, IrValue x, double lo, double hi)
{
    return b2(g, OP_MIN, b2(g, OP_MAX, x, k(g, lo)), k(g, hi));
}

/* ONNX's reflection of x into [lo, hi]: the distance past a bound folded
 * back, the direction flipping with each whole range crossed. */
static IrValue reflect(Grid *g, IrValue x, double lo, double hi)
{
    double range = hi - lo;
    if (range <= 0)
        return b2(g, OP_MUL, x, k(g, 0)); /* a single pixel: lo (= 0) */
    IrValue below = b2(g, OP_LT, x, k(g, lo)), above = b2(g, OP_GT, x, k(g, hi));
    IrValue d = sel(g, below, b2(g, OP_SUB, k(g, lo), x), b2(g, OP_SUB, x, k(g, hi)));
    IrValue n = u1(g, OP_FLOOR, b2(g, OP_DIV, d, k(g, range)));
    IrValue r = b2(g, OP_SUB, d, b2(g, OP_MUL, n, k(g, range)));
    IrValue odd = b2(g, OP_NE, b2(g, OP_SUB, n, b2(g, OP_MUL, u1(g, OP_FLOOR, b2(g, OP_MUL, n, k(g, 0.5))), k(g, 2))),
                     k(g, 0));
    /* below: even -> lo + r, odd -> hi - r; above: even -> hi - r, odd -> lo + r */
    IrValue from_lo = b2(g, OP_ADD, k(g, lo), r), from_hi = b2(g, OP_SUB, k(g, hi), r);
    IrValue take_lo = b2(g, OP_NE, below, odd); /* below xor odd */
    IrValue folded = sel(g, take_lo, from_lo, from_hi);
    return sel(g, b2(g, OP_OR, below, above), folded, x);
}

/* The pixel values at integer-valued coordinates (ix, iy) ([N, Ho, Wo]
 * floats): [N, Ho*Wo, C]. */
static IrValue tap(Grid *g, IrValue ix, IrValue iy)
{
    IrValue valid = {NULL, 0};
    if (g->pad == PAD_ZEROS)
        valid = b2(g, OP_AND,
                   b2(g, OP_AND, b2(g, OP_GE, ix, k(g, 0)), b2(g, OP_LE, ix, k(g, (double)g->W - 1))),
                   b2(g, OP_AND, b2(g, OP_GE, iy, k(g, 0)), b2(g, OP_LE, iy, k(g, (double)g->H - 1))));
    else if (g->pad == PAD_REFLECT) {
        ix = reflect(g, ix, g->lo_x, g->hi_x); /* whole pixels stay whole */
        iy = reflect(g, iy, g->lo_y, g->hi_y);
    }
    ix = clampv(g, ix, 0, (double)g->W - 1);
    iy = clampv(g, iy, 0, (double)g->H - 1);
    IrValue flat = b2(g, OP_ADD, b2(g, OP_MUL, iy, k(g, (double)g->W)), ix);
    if (!flat.node)
        return flat;
    IrValue idx = ir_cast(g->c->g, flat, TCRT_I64, g->c->st);
    IrShape is = ir_shape_make(2, (int64_t[]){g->N, g->Ho * g->Wo});
    if (idx.node)
        idx = ir_reshape(g->c->g, idx, &is, g->c->st);
    if (!idx.node)
        return idx;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1;
    p.i[1] = 1;
    IrValue v = ir_emit1(g->c->g, OP_GATHER, (IrValue[]){g->xt, idx}, 2, &p, NULL, g->c->st);
    if (valid.node && v.node) {
        IrShape ms = ir_shape_make(3, (int64_t[]){g->N, g->Ho * g->Wo, 1});
        IrValue m = ir_reshape(g->c->g, valid, &ms, g->c->st);
        IrType bt = {TCRT_BOOL, ir_value_type(v)->shape};
        m = m.node ? ir_emit1(g->c->g, OP_BROADCAST, &m, 1, NULL, &bt, g->c->st) : m;
        v = sel(g, m, v, b2(g, OP_MUL, v, k(g, 0)));
    }
    return v;
}

/* w ([N, Ho, Wo]) as [N, Ho*Wo, 1] times v. */
static IrValue weigh(Grid *g, IrValue w, IrValue v)
{
    if (!w.node || !v.node)
        return (IrValue){NULL, 0};
    IrShape s = ir_shape_make(3, (int64_t[]){g->N, g->Ho * g->Wo, 1});
    return b2(g, OP_MUL, ir_reshape(g->c->g, w, &s, g->c->st), v);
}

static IrValue acc(Grid *g, IrValue a, IrValue t)
{
    return a.node ? b2(g, OP_ADD, a, t) : t;
}

/* Cubic convolution weights (A = -0.75) for the fraction t: w[4]. */
static void cubic_w(Grid *g, IrValue t, IrValue *w)
{
    const double A = -0.75;
    IrValue t1 = b2(g, OP_ADD, t, k(g, 1)), s = b2(g, OP_SUB, k(g, 1), t);
    /* w0 = ((A(t+1) - 5A)(t+1) + 8A)(t+1) - 4A */
    w[0] = b2(g, OP_SUB,
              b2(g, OP_MUL, b2(g, OP_ADD, b2(g, OP_MUL, b2(g, OP_SUB, b2(g, OP_MUL, t1, k(g, A)), k(g, 5 * A)), t1),
                               k(g, 8 * A)),
                 t1),
              k(g, 4 * A));
    /* w1 = ((A+2)t - (A+3)) t t + 1 */
    w[1] = b2(g, OP_ADD, b2(g, OP_MUL, b2(g, OP_MUL, b2(g, OP_SUB, b2(g, OP_MUL, t, k(g, A + 2)), k(g, A + 3)), t), t),
              k(g, 1));
    w[2] = b2(g, OP_ADD, b2(g, OP_MUL, b2(g, OP_MUL, b2(g, OP_SUB, b2(g, OP_MUL, s, k(g, A + 2)), k(g, A + 3)), s), s),
              k(g, 1));
    w[3] = b2(g, OP_SUB, b2(g, OP_SUB, b2(g, OP_SUB, k(g, 1), w[0]), w[1]), w[2]);
}

bool onnx_lower_grid_sample(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    if (n_in < 2 || !in[0].node || !in[1].node)
        return onnx_errorf(c, "inputs X and grid are required");
    char mode[32], padm[32];
    int64_t align;
    if (!onnx_attr_str(c, "mode", "bilinear", mode, sizeof mode) ||
        !onnx_attr_str(c, "padding_mode", "zeros", padm, sizeof padm) ||
        !onnx_attr_int(c, "align_corners", 0, &align))
        return false;
    const IrType *xt = ir_value_type(in[0]), *gt = ir_value_type(in[1]);
    if (xt->shape.rank != 4 || gt->shape.rank != 4 || gt->shape.dims[3] != 2 || gt->shape.dims[0] != xt->shape.dims[0])
        return onnx_errorf(c, "X must be [N,C,H,W] and grid [N,Ho,Wo,2] (4-D only)");
    if ((xt->dtype != TCRT_F32 && xt->dtype != TCRT_F64) || gt->dtype != xt->dtype)
        return onnx_errorf(c, "X and grid must both be float or double");
    int m = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "bilinear") ? 1 : !strcmp(mode, "bicubic") ? 2 : -1;
    if (m < 0)
        return onnx_errorf(c, "attribute 'mode' is '%s', expected nearest, bilinear or bicubic", mode);
    Grid g = {c, xt->dtype, xt->shape.dims[0], xt->shape.dims[1], xt->shape.dims[2], xt->shape.dims[3],
              gt->shape.dims[1], gt->shape.dims[2], 0, 0, 0, 0, 0, {NULL, 0}};
    g.lo_x = g.lo_y = align ? 0 : -0.5;
    g.hi_x = align ? (double)g.W - 1 : (double)g.W - 0.5;
    g.hi_y = align ? (double)g.H - 1 : (double)g.H - 0.5;
    g.pad = !strcmp(padm, "zeros") ? PAD_ZEROS : !strcmp(padm, "border") ? PAD_BORDER
            : !strcmp(padm, "reflection") ? PAD_REFLECT : -1;
    if (g.pad < 0)
        return onnx_errorf(c, "attribute 'padding_mode' is '%s', expected zeros, border or reflection", padm);
    if (g.H < 1 || g.W < 1)
        return onnx_errorf(c, "X has an empty spatial dimension");
    /* X -> [N, H*W, C] */
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 0, p.i[1] = 2, p.i[2] = 3, p.i[3] = 1;
    g.xt = ir_emit1(c->g, OP_TRANSPOSE, &in[0], 1, &p, NULL, c->st);
    IrShape fs = ir_shape_make(3, (int64_t[]){g.N, g.H * g.W, g.C});
    TRY(g.xt);
    TRY(g.xt = ir_reshape(c->g, g.xt, &fs, c->st));
    /* grid coordinates, unnormalized */
    IrValue coord[2];
    for (int a = 0; a < 2; a++) {
        IrParams sp;
        memset(&sp, 0, sizeof sp);
        IrType st = *gt;
        for (int d = 0; d < 4; d++)
            sp.i[TCRT_SL_STRIDE + d] = 1;
        sp.i[TCRT_SL_BEGIN + 3] = a;
        st.shape.dims[3] = 1;
        IrValue s = ir_emit1(c->g, OP_SLICE, &in[1], 1, &sp, &st, c->st);
        IrShape rs = ir_shape_make(3, (int64_t[]){g.N, g.Ho, g.Wo});
        TRY(s);
        TRY(s = ir_reshape(c->g, s, &rs, c->st));
        double size = a == 0 ? (double)g.W : (double)g.H;
        IrValue v = align ? b2(&g, OP_MUL, b2(&g, OP_ADD, s, k(&g, 1)), k(&g, (size - 1) / 2))
                          : b2(&g, OP_MUL, b2(&g, OP_SUB, b2(&g, OP_MUL, b2(&g, OP_ADD, s, k(&g, 1)), k(&g, size)),
                                              k(&g, 1)),
                               k(&g, 0.5));
        if (m == 0)
            v = u1(&g, OP_ROUND, v);
        double lo = align ? 0 : -0.5, hi = align ? size - 1 : size - 0.5;
        if (g.pad != PAD_ZEROS) {
            IrValue outside = b2(&g, OP_OR, b2(&g, OP_LT, v, k(&g, lo)), b2(&g, OP_GT, v, k(&g, hi)));
            IrValue fixed = g.pad == PAD_BORDER ? clampv(&g, v, 0, size - 1) : reflect(&g, v, lo, hi);
            v = sel(&g, outside, fixed, v);
        }
        TRY(v);
        coord[a] = v;
    }
    IrValue x = coord[0], y = coord[1], res = {NULL, 0};
    if (m == 0)
        res = tap(&g, x, y);
    else if (m == 1) {
        IrValue x0 = u1(&g, OP_FLOOR, x), y0 = u1(&g, OP_FLOOR, y);
        IrValue x1 = b2(&g, OP_ADD, x0, k(&g, 1)), y1 = b2(&g, OP_ADD, y0, k(&g, 1));
        IrValue dx1 = b2(&g, OP_SUB, x, x0), dx0 = b2(&g, OP_SUB, x1, x);
        IrValue dy1 = b2(&g, OP_SUB, y, y0), dy0 = b2(&g, OP_SUB, y1, y);
        res = acc(&g, res, weigh(&g, b2(&g, OP_MUL, dy0, dx0), tap(&g, x0, y0)));
        res = acc(&g, res, weigh(&g, b2(&g, OP_MUL, dy0, dx1), tap(&g, x1, y0)));
        res = acc(&g, res, weigh(&g, b2(&g, OP_MUL, dy1, dx0), tap(&g, x0, y1)));
        res = acc(&g, res, weigh(&g, b2(&g, OP_MUL, dy1, dx1), tap(&g, x1, y1)));
    } else {
        IrValue x0 = b2(&g, OP_SUB, u1(&g, OP_FLOOR, x), k(&g, 1)), y0 = b2(&g, OP_SUB, u1(&g, OP_FLOOR, y), k(&g, 1));
        IrValue wx[4], wy[4];
        cubic_w(&g, b2(&g, OP_SUB, b2(&g, OP_SUB, x, x0), k(&g, 1)), wx);
        cubic_w(&g, b2(&g, OP_SUB, b2(&g, OP_SUB, y, y0), k(&g, 1)), wy);
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                IrValue ix = b2(&g, OP_ADD, x0, k(&g, j)), iy = b2(&g, OP_ADD, y0, k(&g, i));
                res = acc(&g, res, weigh(&g, b2(&g, OP_MUL, wy[i], wx[j]), tap(&g, ix, iy)));
            }
    }
    TRY(res);
    /* [N, Ho*Wo, C] -> [N, C, Ho, Wo] */
    IrShape os = ir_shape_make(4, (int64_t[]){g.N, g.Ho, g.Wo, g.C});
    TRY(res = ir_reshape(c->g, res, &os, c->st));
    memset(&p, 0, sizeof p);
    p.i[0] = 0, p.i[1] = 3, p.i[2] = 1, p.i[3] = 2;
    out[0] = ir_emit1(c->g, OP_TRANSPOSE, &res, 1, &p, NULL, c->st);
    return out[0].node != NULL;
}
