/* compiler/onnx/onnx_ops_resize.c - ONNX Resize (opsets 10 to 18) and
 * Upsample (7, 9) on any rank, lowered to gathers and weighted sums whose
 * index and weight tables are computed at compile time (shapes are static).
 *
 * ONNX defines N-D resizing as 1-D resizing along each axis in turn, so
 * each axis whose output differs from its input is one step:
 *   1. map each output coordinate j to an input coordinate x by the
 *      coordinate_transformation_mode (half_pixel, pytorch_half_pixel,
 *      align_corners, asymmetric, tf_half_pixel_for_nn, tf_crop_and_resize),
 *      with the scale given or out/in when sizes are given;
 *   2. taps: L = floor(x), or x - 1 when x is an integer (ratio = x - L in
 *      (0, 1]); nearest chooses L or L+1 by nearest_mode; linear weighs L,
 *      L+1 by (1-r, r); cubic weighs L-1..L+2 by Keys' kernel with
 *      coefficient cubic_coeff_a; taps outside the input read the edge, or
 *      get weight 0 (the rest renormalized) with exclude_outside;
 *   3. y = sum over taps of gather(x, idx_t, axis) * w_t; tf_crop_and_resize
 *      puts extrapolation_value where x falls outside [0, in-1].
 * An axis whose table is the identity is skipped.  Linear and cubic need a
 * float input; nearest moves any element type.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/onnx/onnx_int.h"

enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum { C_HALF, C_PYTORCH_HALF, C_ALIGN, C_ASYM, C_TF_HALF_NN, C_CROP };
enum { N_ROUND_FLOOR, N_ROUND_CEIL, N_FLOOR, N_CEIL };

typedef struct ResizeCfg {
    int mode, ctm, nearest;
    double a; /* cubic_coeff_a */
    bool exclude_outside;
    double extrapolation;
} ResizeCfg;

static int lookup(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

static bool parse_cfg(OnnxCtx *c, bool upsample, ResizeCfg *cfg)
{
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const ctms[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                       "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    char mode[32], ctm[40], nm[40];
    int64_t excl;
    /* before opset 11 (and in Upsample) nearest is asymmetric + floor, as
     * ONNX's reference for those versions (np.repeat for integer scales) */
    bool old = upsample || c->opset < 11;
    if (!onnx_attr_str(c, "mode", "nearest", mode, sizeof mode) ||
        !onnx_attr_str(c, "coordinate_transformation_mode", old ? "asymmetric" : "half_pixel", ctm,
                       sizeof ctm) ||
        !onnx_attr_str(c, "nearest_mode", old ? "floor" : "round_prefer_floor", nm, sizeof nm) ||
        !onnx_attr_float(c, "cubic_coeff_a", -0.75, &cfg->a) ||
        !onnx_attr_int(c, "exclude_outside", 0, &excl) ||
        !onnx_attr_float(c, "extrapolation_value", 0.0, &cfg->extrapolation))
        return false;
    if (upsample && !strcmp(mode, "bilinear")) /* Upsample-7's name for linear */
        snprintf(mode, sizeof mode, "linear");
    cfg->mode = lookup(mode, modes, 3);
    cfg->ctm = lookup(ctm, ctms, 6);
    cfg->nearest = lookup(nm, nms, 4);
    cfg->exclude_outside = excl != 0;
    if (cfg->mode < 0)
        return onnx_errorf(c, "attribute 'mode': unknown mode '%s' (nearest, linear or cubic)", mode);
    if (cfg->ctm < 0)
        return onnx_errorf(c, "attribute 'coordinate_transformation_mode': unknown mode '%s'", ctm);
    if (cfg->nearest < 0)
        return onnx_errorf(c, "attribute 'nearest_mode': unknown mode '%s'", nm);
    if (onnx_attr(c, "antialias") || onnx_attr(c, "axes") || onnx_attr(c, "keep_aspect_ratio_policy"))
        return onnx_errorf(c, "the opset 18 attributes antialias, axes and keep_aspect_ratio_policy are not "
                              "supported");
    return true;
}

/* Input coordinate of output index j; false when it falls outside the
 * input under tf_crop_and_resize (extrapolation). */
static bool source_coord(const ResizeCfg *cfg, int64_t j, int64_t in, double scale, double lo, double hi,
                         double *x)
{
    double ow = scale * (double)in; /* ONNX's float output width */
    switch (cfg->ctm) {
    case C_HALF:
        *x = ((double)j + 0.5) / scale - 0.5;
        break;
    case C_PYTORCH_HALF:
        *x = ow == 1 ? -0.5 : ((double)j + 0.5) / scale - 0.5;
        break;
    case C_ALIGN:
        *x = ow == 1 ? 0 : (double)j * (double)(in - 1) / (ow - 1);
        break;
    case C_ASYM:
        *x = (double)j / scale;
        break;
    case C_TF_HALF_NN:
        *x = ((double)j + 0.5) / scale;
        break;
    default:
        *x = ow == 1 ? (hi - lo) * (double)(in - 1) / 2 : (double)j * (hi - lo) * (double)(in - 1) / (ow - 1);
        *x += lo * (double)(in - 1);
        return *x >= 0 && *x <= (double)(in - 1);
    }
    return true;
}

static void cubic(double r, double a, double *w)
{
    double s = 1 - r;
    w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
    w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
    w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
    w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
}

/* Tap tables of one axis: idx[t * out + j], w[t * out + j], ext[j].
 * Returns the number of taps; *identity when the step changes nothing. */
static int axis_taps(const ResizeCfg *cfg, int64_t in, int64_t out, double scale, double lo, double hi,
                     int64_t *idx, double *w, uint8_t *ext, bool *identity)
{
    int n = cfg->mode == M_NEAREST ? 1 : cfg->mode == M_LINEAR ? 2 : 4;
    *identity = in == out;
    for (int64_t j = 0; j < out; j++) {
        double x;
        ext[j] = !source_coord(cfg, j, in, scale, lo, hi, &x);
        *identity &= !ext[j];
        double fl = floor(x);
        bool integral = fl == x;
        int64_t l = (int64_t)fl - (integral ? 1 : 0);
        double r = integral ? 1 : x - fl;
        double cw[4];
        int64_t ci[4];
        if (cfg->mode == M_NEAREST) {
            bool right;
            switch (cfg->nearest) {
            case N_ROUND_FLOOR:
                right = r > 0.5;
                break;
            case N_ROUND_CEIL:
                right = r >= 0.5;
                break;
            case N_FLOOR:
                right = false;
                break;
            default:
                right = true;
                break;
            }
            if (integral)
                right = true;
            ci[0] = l + right;
            cw[0] = 1;
        } else if (cfg->mode == M_LINEAR) {
            ci[0] = l, ci[1] = l + 1;
            cw[0] = 1 - r, cw[1] = r;
        } else {
            for (int t = 0; t < 4; t++)
                ci[t] = l - 1 + t;
            cubic(r, cfg->a, cw);
        }
        if (cfg->exclude_outside && n > 1) {
            double sum = 0;
            for (int t = 0; t < n; t++) {
                if (ci[t] < 0 || ci[t] >= in)
                    cw[t] = 0;
                sum += cw[t];
            }
            for (int t = 0; t < n && sum != 0; t++)
                cw[t] /= sum;
        }
        for (int t = 0; t < n; t++) {
            int64_t k = ci[t] < 0 ? 0 : ci[t] >= in ? in - 1 : ci[t];
            idx[t * out + j] = k;
            w[t * out + j] = cw[t];
            if (cw[t] != 0 && k != j)
                *identity = false;
            if (k == j && cw[t] != 1 && cw[t] != 0)
                *identity = false;
        }
    }
    return n;
}

/* One 1-D step along axis d of x (rank r): out elements. */
static IrValue resize_axis(OnnxCtx *c, const ResizeCfg *cfg, IrValue x, int d, int64_t out, double scale,
                           double lo, double hi)
{
    const IrType *xt = ir_value_type(x);
    int r = xt->shape.rank;
    int64_t in = xt->shape.dims[d];
    IrValue none = {NULL, 0}, y = none;
    size_t cnt = (size_t)(out ? out : 1);
    int64_t *idx = malloc(4 * cnt * sizeof *idx);
    double *w = malloc(4 * cnt * sizeof *w);
    uint8_t *ext = malloc(cnt);
    void *wt = malloc(cnt * 8);
    if (!idx || !w || !ext || !wt) {
        st_errorf(c->st, ST_NOMEM, "out of memory");
        goto done;
    }
    bool identity;
    int n = axis_taps(cfg, in, out, scale, lo, hi, idx, w, ext, &identity);
    if (identity) {
        y = x;
        goto done;
    }
    IrShape along = {0}; /* [1, .., out, .., 1] */
    along.rank = r;
    for (int i = 0; i < r; i++)
        along.dims[i] = i == d ? out : 1;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = d;
    bool any_ext = false;
    for (int64_t j = 0; j < out; j++)
        any_ext |= ext[j] != 0;
    for (int t = 0; t < n; t++) {
        IrValue iv = ir_const(c->g, TCRT_I64, &(IrShape){1, {out}}, idx + (size_t)t * cnt, c->st);
        if (!iv.node)
            goto done;
        IrValue ins[2] = {x, iv};
        IrValue g = ir_emit1(c->g, OP_GATHER, ins, 2, &p, NULL, c->st);
        if (n > 1) {
            for (int64_t j = 0; j < out; j++) {
                if (xt->dtype == TCRT_F64)
                    ((double *)wt)[j] = w[(size_t)t * cnt + (size_t)j];
                else
                    ((float *)wt)[j] = (float)w[(size_t)t * cnt + (size_t)j];
            }
            g = ir_binary(c->g, OP_MUL, g, ir_const(c->g, xt->dtype, &along, wt, c->st), c->st);
        }
        y = t ? ir_binary(c->g, OP_ADD, y, g, c->st) : g;
        if (!y.node)
            goto done;
    }
    if (any_ext) {
        IrValue sel[3] = {ir_const(c->g, TCRT_BOOL, &along, ext, c->st),
                          ir_const_scalar_f(c->g, xt->dtype, cfg->extrapolation, c->st), y};
        y = sel[0].node && sel[1].node ? ir_emit1(c->g, OP_SELECT, sel, 3, NULL, NULL, c->st) : none;
    }
done:
    free(idx);
    free(w);
    free(ext);
    free(wt);
    return y;
}

/* A constant float vector (scales, roi) of n values. */
static bool const_floats(OnnxCtx *c, IrValue v, const char *what, double *out, int n)
{
    const IrType *t = ir_value_type(v);
    if (!ir_is_const(v) || !v.node->data || (t->dtype != TCRT_F32 && t->dtype != TCRT_F64))
        return onnx_errorf(c,
                           "%s must be a float constant (an initializer, a Constant or a graph input bound "
                           "with --const)",
                           what);
    if (ir_shape_count(&t->shape) != n)
        return onnx_errorf(c, "%s has %lld values, the input's rank needs %d", what,
                           (long long)ir_shape_count(&t->shape), n);
    for (int i = 0; i < n; i++)
        out[i] = t->dtype == TCRT_F32 ? ((const float *)v.node->data)[i] : ((const double *)v.node->data)[i];
    return true;
}

static bool resize_common(OnnxCtx *c, bool upsample, IrValue x, IrValue roi, IrValue scales, IrValue sizes,
                          const double *attr_scales, IrValue *out)
{
    ResizeCfg cfg;
    if (!parse_cfg(c, upsample, &cfg))
        return false;
    const IrType *xt = ir_value_type(x);
    int r = xt->shape.rank;
    double sc[IR_MAX_RANK], lo[IR_MAX_RANK], hi[IR_MAX_RANK];
    int64_t osz[IR_MAX_RANK];
    if (sizes.node) {
        int n;
        if (!onnx_const_ints(c, sizes, "input 3 (sizes)", osz, IR_MAX_RANK, &n))
            return false;
        if (n != r)
            return onnx_errorf(c, "input 3 (sizes) has %d values, the input has rank %d", n, r);
        for (int d = 0; d < r; d++) {
            if (osz[d] < 0)
                return onnx_errorf(c, "input 3 (sizes): negative size %lld", (long long)osz[d]);
            sc[d] = xt->shape.dims[d] ? (double)osz[d] / (double)xt->shape.dims[d] : 1;
        }
    } else {
        if (attr_scales)
            memcpy(sc, attr_scales, sizeof(double) * (size_t)r);
        else if (!scales.node)
            return onnx_errorf(c, "scales or sizes must be given");
        else if (!const_floats(c, scales, upsample || c->opset < 11 ? "input 1 (scales)" : "input 2 (scales)",
                               sc, r))
            return false;
        for (int d = 0; d < r; d++) {
            if (!(sc[d] > 0) || !isfinite(sc[d]) || sc[d] * (double)xt->shape.dims[d] > (double)INT32_MAX)
                return onnx_errorf(c, "scale %g of axis %d is not a positive finite number or too large",
                                   sc[d], d);
            osz[d] = (int64_t)floor(sc[d] * (double)xt->shape.dims[d]);
        }
    }
    for (int d = 0; d < r; d++)
        lo[d] = 0, hi[d] = 1;
    if (cfg.ctm == C_CROP) {
        double rv[2 * IR_MAX_RANK];
        if (!roi.node)
            return onnx_errorf(c, "tf_crop_and_resize needs input 1 (roi)");
        if (!const_floats(c, roi, "input 1 (roi)", rv, 2 * r))
            return false;
        for (int d = 0; d < r; d++)
            lo[d] = rv[d], hi[d] = rv[r + d];
    }
    bool fl = xt->dtype == TCRT_F32 || xt->dtype == TCRT_F64;
    if (cfg.mode != M_NEAREST && !fl)
        return onnx_errorf(c, "%s resize needs a float input, got %s",
                           cfg.mode == M_LINEAR ? "linear" : "cubic", tcrt_dtype_name(xt->dtype));
    IrValue y = x;
    for (int d = r - 1; d >= 0; d--) {
        y = resize_axis(c, &cfg, y, d, osz[d], sc[d], lo[d], hi[d]);
        if (!y.node)
            return false;
    }
    *out = y;
    return true;
}

bool onnx_lower_resize(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    IrValue none = {NULL, 0};
    if (n_in < 1 || !in[0].node)
        return onnx_errorf(c, "input 0 is required");
    if (c->opset < 11)
        return resize_common(c, false, in[0], none, n_in > 1 ? in[1] : none, none, NULL, out);
    return resize_common(c, false, in[0], n_in > 1 ? in[1] : none, n_in > 2 ? in[2] : none,
                         n_in > 3 ? in[3] : none, NULL, out);
}

bool onnx_lower_upsample(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out)
{
    IrValue none = {NULL, 0};
    if (n_in < 1 || !in[0].node)
        return onnx_errorf(c, "input 0 is required");
    if (n_in > 1 && in[1].node)
        return resize_common(c, true, in[0], none, in[1], none, NULL, out);
    /* Upsample-7: scales is an attribute */
    const Onnx__AttributeProto *a = onnx_attr(c, "scales");
    int r = ir_value_type(in[0])->shape.rank;
    if (!a || (int)a->n_floats != r)
        return onnx_errorf(c, "attribute 'scales' must have one value per input dimension (%d)", r);
    double sc[IR_MAX_RANK];
    for (int d = 0; d < r; d++)
        sc[d] = a->floats[d];
    return resize_common(c, true, in[0], none, none, none, sc, out);
}
