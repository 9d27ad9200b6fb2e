/* compiler/tf/tf_ops_array.c - lowering of TensorFlow array, shape and
 * reduction ops to IR primitives.
 *
 * One row per TF op type in tf_ops_array[] (registry defaults as data, see
 * tf_int.h).  Every shape is static, so each lowering resolves TF's dynamic
 * arguments (axes, perms, sizes, paddings, slice specs) at compile time from
 * constant inputs (tf_const_ints names the input when one is not constant)
 * and emits movement primitives with fully resolved parameters:
 *   - Identity-like ops forward their input value (no node);
 *   - Reshape/Squeeze/ExpandDims are ir_reshape (a COPY, folded for consts);
 *   - Shape/Size/Rank become constants read from the static input shape;
 *   - Pack = reshapes + CONCAT; Unpack/Split/SplitV = SLICEs (+ reshape);
 *   - StridedSlice follows TensorFlow's ValidateStridedSliceOp: the sparse
 *     spec (with ellipsis / new-axis / shrink bits) is expanded to a dense
 *     per-input-dim (begin, stride, count), emitted as one SLICE whose output
 *     has the input's rank (the "processing shape"), then reshaped to the
 *     final shape (new axes inserted as 1, shrunk axes dropped);
 *   - reductions take an axis bitmask; Mean = sum / count (integer division
 *     for integer dtypes, as TF); All/Any reduce a 0/1 int32 copy with
 *     min/max and cast back to bool;
 *   - DepthToSpace/SpaceToDepth and SpaceToBatchND/BatchToSpaceND are
 *     (pad +) reshape + transpose + reshape (+ crop slice);
 *   - OneHot = select(indices == range, on, off); ReverseV2 = SLICE with
 *     stride -1 on the reversed dims.
 * Invariants: a lowering either writes every output and returns true, or
 * records exactly one error through tf_errorf (or the IR builder's own error)
 * and returns false.  Messages name node, op and field, e.g.
 * "node 'r' (Reshape): cannot reshape [2,3] to [4,-1]".
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/tf/tf_int.h"

#define MAX_SPEC 32 /* StridedSlice masks are 32-bit */

/* ---- small helpers ------------------------------------------------------ */

static bool ok(IrValue v) { return v.node != NULL; }

static const char *shp(const IrShape *s, char *buf, size_t n) { return ir_shape_str(s, buf, n); }

/* Formats int64 dims as "[4,-1]" (for requested shapes that are not IrShapes). */
static const char *dims_str(const int64_t *d, int n, char *buf, size_t cap)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, cap - k, "[");
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? "," : "", (long long)d[i]);
    if (k < cap)
        snprintf(buf + k, cap - k, "]");
    return buf;
}

static bool need_inputs(TfCtx *c, int n_in, int want)
{
    if (n_in < want)
        return tf_errorf(c, "expected %d inputs, got %d", want, n_in);
    return true;
}

/* Normalizes a possibly negative axis against rank (valid: [-rank, rank)). */
static bool norm_axis(TfCtx *c, const char *field, int64_t axis, int rank, int *out)
{
    *out = 0;
    if (axis < -rank || axis >= rank)
        return tf_errorf(c, "%s %lld out of range for rank %d", field, (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

/* A constant integer scalar input (or a one-element vector). */
static bool const_int1(TfCtx *c, IrValue v, const char *what, int64_t *out)
{
    int n = 0;
    int64_t buf[1];
    if (!tf_const_ints(c, v, what, buf, 1, &n))
        return false;
    if (n != 1)
        return tf_errorf(c, "%s must be a scalar, got %d values", what, n);
    *out = buf[0];
    return true;
}

/* A constant numeric scalar input, read as double. */
static bool const_num1(TfCtx *c, IrValue v, const char *what, double *out)
{
    if (!ir_is_const(v))
        return tf_errorf(c, "%s must be a constant", what);
    if (ir_shape_count(&ir_value_type(v)->shape) != 1 || !ir_const_scalar(v, out))
        return tf_errorf(c, "%s must be a scalar", what);
    return true;
}

static IrType type_of(tcrt_dtype dt, const IrShape *s)
{
    IrType t = {0};
    t.dtype = dt;
    t.shape = *s;
    return t;
}

/* Emits a strided SLICE of x (begin/stride per input dim) with output shape `to`. */
static IrValue slice_of(TfCtx *c, IrValue x, const int64_t *begin, const int64_t *stride,
                        const IrShape *to)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    for (int d = 0; d < to->rank; d++) {
        p.i[TCRT_SL_BEGIN + d] = begin[d];
        p.i[TCRT_SL_STRIDE + d] = stride[d];
    }
    IrType t = type_of(ir_value_type(x)->dtype, to);
    return ir_emit1(c->g, OP_SLICE, &x, 1, &p, &t, c->st);
}

/* Slice [start, start+len) of x along axis (stride 1). */
static IrValue slice_axis(TfCtx *c, IrValue x, int axis, int64_t start, int64_t len)
{
    const IrShape *s = &ir_value_type(x)->shape;
    int64_t begin[IR_MAX_RANK] = {0}, stride[IR_MAX_RANK];
    IrShape to = *s;
    for (int d = 0; d < s->rank; d++)
        stride[d] = 1;
    begin[axis] = start;
    to.dims[axis] = len;
    if (start == 0 && len == s->dims[axis])
        return x;
    return slice_of(c, x, begin, stride, &to);
}

static IrValue reshape_to(TfCtx *c, IrValue x, const IrShape *to)
{
    if (ir_shape_eq(&ir_value_type(x)->shape, to))
        return x;
    return ir_reshape(c->g, x, to, c->st);
}

static IrValue transpose(TfCtx *c, IrValue x, const int *perm, int rank)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    bool is_id = true;
    for (int d = 0; d < rank; d++) {
        p.i[TCRT_TR_PERM + d] = perm[d];
        is_id &= perm[d] == d;
    }
    if (is_id)
        return x;
    return ir_emit1(c->g, OP_TRANSPOSE, &x, 1, &p, NULL, c->st);
}

static bool is_float(tcrt_dtype dt) { return dt == TCRT_F32 || dt == TCRT_F64 || dt == TCRT_F16; }

/* ---- identity family ---------------------------------------------------- */

static bool lower_identity(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 1))
        return false;
    out[0] = in[0];
    *n_out = 1;
    return true;
}

/* StopGradient, PreventGradient: the value, marked so that gradients
 * built by tfcc (--loss) stop here (a COPY with p.i[0] = 1). */
static bool lower_stop_gradient(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 1))
        return false;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1;
    out[0] = ir_emit1(c->g, OP_COPY, &in[0], 1, &p, ir_value_type(in[0]), c->st);
    *n_out = 1;
    return out[0].node != NULL;
}

static bool lower_identity_n(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (n_in > TF_MAX_OUTPUTS)
        return tf_errorf(c, "%d inputs, more than the %d outputs supported", n_in, TF_MAX_OUTPUTS);
    for (int i = 0; i < n_in; i++)
        out[i] = in[i];
    *n_out = n_in;
    return true;
}

static bool lower_noop(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    (void)c, (void)in, (void)n_in, (void)out;
    *n_out = 0;
    return true;
}

/* ---- reshape family ----------------------------------------------------- */

static bool lower_reshape(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 2))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    int64_t want[IR_MAX_RANK + 1];
    int n = 0;
    char a[128], b[128];
    if (!tf_const_ints(c, in[1], "shape", want, IR_MAX_RANK + 1, &n))
        return false;
    if (n > IR_MAX_RANK)
        return tf_errorf(c, "shape has rank %d, more than %d", n, IR_MAX_RANK);
    int64_t total = ir_shape_count(s), known = 1;
    int unknown = -1;
    for (int i = 0; i < n; i++) {
        if (want[i] == -1) {
            if (unknown >= 0)
                return tf_errorf(c, "cannot reshape %s to %s: more than one -1", shp(s, a, sizeof a),
                                 dims_str(want, n, b, sizeof b));
            unknown = i;
        } else if (want[i] < 0) {
            return tf_errorf(c, "cannot reshape %s to %s: negative dimension", shp(s, a, sizeof a),
                             dims_str(want, n, b, sizeof b));
        } else {
            if (want[i] > 0 && known > IR_MAX_ELEMENTS / want[i])
                return tf_errorf(c, "cannot reshape %s to %s: too many elements", shp(s, a, sizeof a),
                                 dims_str(want, n, b, sizeof b));
            known *= want[i];
        }
    }
    IrShape to = {0};
    to.rank = n;
    for (int i = 0; i < n; i++)
        to.dims[i] = want[i];
    if (unknown >= 0) {
        if (known == 0 ? total != 0 : total % known != 0)
            return tf_errorf(c, "cannot reshape %s to %s", shp(s, a, sizeof a), dims_str(want, n, b, sizeof b));
        to.dims[unknown] = known == 0 ? 0 : total / known;
    } else if (known != total) {
        return tf_errorf(c, "cannot reshape %s to %s", shp(s, a, sizeof a), dims_str(want, n, b, sizeof b));
    }
    out[0] = reshape_to(c, in[0], &to);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_squeeze(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 1))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    int64_t axes[IR_MAX_RANK * 2];
    int n = 0;
    char a[128];
    if (!tf_attr_ints(c, "squeeze_dims", axes, IR_MAX_RANK * 2, &n))
        return false;
    bool drop[IR_MAX_RANK] = {false};
    if (n == 0) {
        for (int d = 0; d < s->rank; d++)
            drop[d] = s->dims[d] == 1;
    }
    for (int i = 0; i < n; i++) {
        int d;
        if (!norm_axis(c, "squeeze_dims", axes[i], s->rank, &d))
            return false;
        if (s->dims[d] != 1)
            return tf_errorf(c, "cannot squeeze dim %d of shape %s: size is %lld, not 1", d,
                             shp(s, a, sizeof a), (long long)s->dims[d]);
        drop[d] = true;
    }
    IrShape to = {0, {0}};
    for (int d = 0; d < s->rank; d++)
        if (!drop[d])
            to.dims[to.rank++] = s->dims[d];
    out[0] = reshape_to(c, in[0], &to);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_expand_dims(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 2))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    int64_t dim;
    int d;
    if (!const_int1(c, in[1], "dim", &dim))
        return false;
    if (s->rank >= IR_MAX_RANK)
        return tf_errorf(c, "rank %d is already the maximum", s->rank);
    if (!norm_axis(c, "dim", dim, s->rank + 1, &d))
        return false;
    IrShape to = {0};
    to.rank = s->rank + 1;
    for (int i = 0, j = 0; i < to.rank; i++)
        to.dims[i] = i == d ? 1 : s->dims[j++];
    out[0] = reshape_to(c, in[0], &to);
    *n_out = 1;
    return ok(out[0]);
}

/* ---- shape queries (constants) ------------------------------------------ */

static bool out_int_type(TfCtx *c, tcrt_dtype *dt)
{
    if (!tf_attr_type(c, "out_type", dt))
        return false;
    if (*dt != TCRT_I32 && *dt != TCRT_I64)
        return tf_errorf(c, "out_type must be int32 or int64, got %s", tcrt_dtype_name(*dt));
    return true;
}

static IrValue shape_const(TfCtx *c, IrValue x, tcrt_dtype dt)
{
    const IrShape *s = &ir_value_type(x)->shape;
    if (dt == TCRT_I32)
        for (int d = 0; d < s->rank; d++)
            if (s->dims[d] > INT32_MAX) {
                tf_errorf(c, "dimension %d (%lld) does not fit out_type int32", d, (long long)s->dims[d]);
                return (IrValue){NULL, 0};
            }
    return ir_const_i64s(c->g, dt, s->dims, s->rank, c->st);
}

static bool lower_shape(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    tcrt_dtype dt;
    if (!need_inputs(c, n_in, 1) || !out_int_type(c, &dt))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (s->has_dyn) { /* the extent known at run time as an expression (ir/dyn.c) */
        IrAff e[IR_MAX_RANK];
        for (int d = 0; d < s->rank; d++)
            e[d] = ir_shape_extent(s, d);
        IrShape vs = {1, {s->rank}};
        out[0] = ir_sv_value(c->g, dt, &vs, e, c->st);
        *n_out = 1;
        return ok(out[0]);
    }
    out[0] = shape_const(c, in[0], dt);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_shape_n(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    tcrt_dtype dt;
    if (!out_int_type(c, &dt))
        return false;
    if (n_in > TF_MAX_OUTPUTS)
        return tf_errorf(c, "%d inputs, more than the %d outputs supported", n_in, TF_MAX_OUTPUTS);
    for (int i = 0; i < n_in; i++)
        if (!ok(out[i] = shape_const(c, in[i], dt)))
            return false;
    *n_out = n_in;
    return true;
}

static bool lower_size(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    tcrt_dtype dt;
    if (!need_inputs(c, n_in, 1) || !out_int_type(c, &dt))
        return false;
    int64_t n = ir_shape_count(&ir_value_type(in[0])->shape);
    if (dt == TCRT_I32 && n > INT32_MAX)
        return tf_errorf(c, "size %lld does not fit out_type int32", (long long)n);
    out[0] = ir_const_scalar_f(c->g, dt, (double)n, c->st);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_rank(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 1))
        return false;
    out[0] = ir_const_scalar_f(c->g, TCRT_I32, ir_value_type(in[0])->shape.rank, c->st);
    *n_out = 1;
    return ok(out[0]);
}

/* ---- fills -------------------------------------------------------------- */

/* Broadcasts x to shape s (x's dtype); x itself when already that shape. */
static IrValue broadcast_to(TfCtx *c, IrValue x, const IrShape *s)
{
    if (ir_shape_eq(&ir_value_type(x)->shape, s))
        return x;
    IrType t = type_of(ir_value_type(x)->dtype, s);
    return ir_emit1(c->g, OP_BROADCAST, &x, 1, NULL, &t, c->st);
}

/* ---- sizes known only at run time (ir/dyn.c) ---- */

static bool int_dtype(tcrt_dtype dt)
{
    return dt == TCRT_I8 || dt == TCRT_I16 || dt == TCRT_I32 || dt == TCRT_I64 || dt == TCRT_U8 ||
           dt == TCRT_U16 || dt == TCRT_U32 || dt == TCRT_U64;
}

/* Element i of integer value v as an expression (a constant, a known
 * run-time size, or a new one). */
static bool dyn_elem(TfCtx *c, IrValue v, int64_t i, IrAff *e)
{
    return ir_value_elem(c->g, v, i, e, c->st);
}

static bool dyn_extent(TfCtx *c, IrShape *s, int d, const IrAff *e)
{
    char why[300];
    if (!ir_shape_set_extent(c->g, s, d, e, why, sizeof why))
        return tf_errorf(c, "%s (data-dependent size)", why);
    return true;
}

/* The elements (row-major) of an integer value of at most max entries. */
static bool dyn_vector(TfCtx *c, IrValue v, const char *what, IrAff *e, int max, int *n)
{
    const IrType *t = ir_value_type(v);
    if (!int_dtype(t->dtype) || t->shape.has_dyn)
        return tf_errorf(c, "%s must be a static-size integer tensor, got %s", what, tcrt_dtype_name(t->dtype));
    int64_t cnt = ir_shape_count(&t->shape);
    if (cnt > max)
        return tf_errorf(c, "%s has %lld entries, more than %d", what, (long long)cnt, max);
    for (int64_t i = 0; i < cnt; i++)
        if (!dyn_elem(c, v, i, &e[i]))
            return false;
    *n = (int)cnt;
    return true;
}

/* A scalar int64 value holding expression e. */
static IrValue aff_value(TfCtx *c, const IrAff *e)
{
    IrShape scalar = {0, {0}};
    return ir_sv_value(c->g, TCRT_I64, &scalar, e, c->st);
}

static bool fill_dyn(TfCtx *c, const IrValue *in, IrValue *out)
{
    IrAff e[IR_MAX_RANK];
    int n = 0;
    if (!dyn_vector(c, in[0], "dims", e, IR_MAX_RANK, &n))
        return false;
    IrShape s = {0};
    s.rank = n;
    for (int d = 0; d < n; d++)
        if (!dyn_extent(c, &s, d, &e[d]))
            return false;
    IrShape scalar = {0, {0}};
    if (ir_shape_count(&ir_value_type(in[1])->shape) != 1)
        return tf_errorf(c, "value must be a scalar");
    IrValue v = reshape_to(c, in[1], &scalar);
    out[0] = ok(v) ? broadcast_to(c, v, &s) : v;
    return ok(out[0]);
}

static bool lower_fill(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 2))
        return false;
    if (!ir_is_const(in[0])) {
        *n_out = 1;
        return fill_dyn(c, in, out);
    }
    int64_t dims[IR_MAX_RANK + 1];
    int n = 0;
    char a[128];
    if (!tf_const_ints(c, in[0], "dims", dims, IR_MAX_RANK + 1, &n))
        return false;
    if (n > IR_MAX_RANK)
        return tf_errorf(c, "dims has rank %d, more than %d", n, IR_MAX_RANK);
    IrShape s = {0};
    s.rank = n;
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0)
            return tf_errorf(c, "dims %s has a negative dimension", dims_str(dims, n, a, sizeof a));
        s.dims[i] = dims[i];
    }
    int64_t count;
    if (!ir_shape_count_checked(&s, &count))
        return tf_errorf(c, "dims %s has too many elements", dims_str(dims, n, a, sizeof a));
    if (ir_shape_count(&ir_value_type(in[1])->shape) != 1)
        return tf_errorf(c, "value must be a scalar, got shape %s", shp(&ir_value_type(in[1])->shape, a, sizeof a));
    IrShape scalar = {0, {0}};
    IrValue v = reshape_to(c, in[1], &scalar);
    out[0] = ok(v) ? broadcast_to(c, v, &s) : v;
    *n_out = 1;
    return ok(out[0]);
}

static bool like(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, double v)
{
    if (!need_inputs(c, n_in, 1))
        return false;
    const IrType *t = ir_value_type(in[0]);
    IrValue k = ir_const_scalar_f(c->g, t->dtype, v, c->st);
    out[0] = ok(k) ? broadcast_to(c, k, &t->shape) : k;
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_zeros_like(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return like(c, in, n_in, out, n_out, 0);
}

static bool lower_ones_like(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return like(c, in, n_in, out, n_out, 1);
}

/* Range(start, limit, delta) with integer start and delta +-1 and a limit
 * computed at run time: |limit - start| elements. */
static bool range_dyn(TfCtx *c, const IrValue *in, IrValue *out)
{
    tcrt_dtype dt;
    int64_t start, delta;
    if (!tf_attr_type(c, "Tidx", &dt) || !const_int1(c, in[0], "start", &start) ||
        !const_int1(c, in[2], "delta", &delta))
        return false;
    if (!int_dtype(dt) || (delta != 1 && delta != -1))
        return tf_errorf(c, "a Range whose limit is computed at run time needs integer values and delta 1 or -1 "
                            "(data-dependent size)");
    IrAff lim, n;
    IrAff st0 = ir_aff_const(start);
    if (!dyn_elem(c, in[1], 0, &lim))
        return false;
    if (!ir_aff_add(delta > 0 ? &lim : &st0, delta > 0 ? &st0 : &lim, -1, &n))
        return tf_errorf(c, "the element count |limit - start| is too complex (data-dependent size)");
    IrShape s = {1, {0}};
    if (!dyn_extent(c, &s, 0, &n))
        return false;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.f[TCRT_RANGE_START] = (double)start;
    p.f[TCRT_RANGE_DELTA] = (double)delta;
    IrType t = type_of(dt, &s);
    out[0] = ir_emit1(c->g, OP_RANGE, NULL, 0, &p, &t, c->st);
    return ok(out[0]);
}

static bool lower_range(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    double start, limit, delta;
    tcrt_dtype dt;
    if (n_in == 3 && !ir_is_const(in[1]) && ir_is_const(in[0]) && ir_is_const(in[2])) {
        *n_out = 1;
        return range_dyn(c, in, out);
    }
    if (!need_inputs(c, n_in, 3) || !const_num1(c, in[0], "start", &start) ||
        !const_num1(c, in[1], "limit", &limit) || !const_num1(c, in[2], "delta", &delta) ||
        !tf_attr_type(c, "Tidx", &dt))
        return false;
    if (delta == 0)
        return tf_errorf(c, "delta must be non-zero");
    if (delta > 0 && start > limit)
        return tf_errorf(c, "start %g > limit %g with delta %g > 0", start, limit, delta);
    if (delta < 0 && start < limit)
        return tf_errorf(c, "start %g < limit %g with delta %g < 0", start, limit, delta);
    double len;
    if (dt == TCRT_F32) {
        /* TF computes the length in T's precision */
        len = ceilf(fabsf(((float)limit - (float)start) / (float)delta));
    } else if (is_float(dt)) {
        len = ceil(fabs((limit - start) / delta));
    } else {
        /* TF's integer formula: (|limit-start| + |delta| - 1) / |delta| */
        double span = fabs(limit - start), ad = fabs(delta);
        len = floor((span + ad - 1) / ad);
    }
    if (!(len <= (double)IR_MAX_ELEMENTS))
        return tf_errorf(c, "range of %g elements is too large", len);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.f[TCRT_RANGE_START] = start;
    p.f[TCRT_RANGE_DELTA] = delta;
    IrShape s = {1, {(int64_t)len}};
    IrType t = type_of(dt, &s);
    out[0] = ir_emit1(c->g, OP_RANGE, NULL, 0, &p, &t, c->st);
    *n_out = 1;
    return ok(out[0]);
}

/* ---- pack / unpack / concat / split ------------------------------------- */

/* Concatenates xs along axis (already normalized); a single input passes through. */
static IrValue concat(TfCtx *c, const IrValue *xs, int n, int axis)
{
    IrValue *keep = arena_alloc(&c->g->arena, sizeof(IrValue) * (size_t)(n > 0 ? n : 1));
    int k = 0;
    if (!keep) {
        st_errorf(c->st, ST_NOMEM, "out of memory");
        return (IrValue){NULL, 0};
    }
    for (int i = 0; i < n; i++) /* empty inputs add nothing */
        if (ir_shape_count(&ir_value_type(xs[i])->shape) != 0)
            keep[k++] = xs[i];
    if (k == 0)
        keep[k++] = xs[0];
    if (k == 1 && ir_value_type(keep[0])->shape.dims[axis] != 0) {
        /* only one non-empty input: the result is that input */
        return keep[0];
    }
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CAT_AXIS] = axis;
    if (k == 1) {
        /* all inputs empty: build the (empty) result shape by hand */
        IrShape s = ir_value_type(xs[0])->shape;
        s.dims[axis] = 0;
        for (int i = 0; i < n; i++)
            s.dims[axis] += ir_value_type(xs[i])->shape.dims[axis];
        return reshape_to(c, keep[0], &s);
    }
    return ir_emit1(c->g, OP_CONCAT, keep, k, &p, NULL, c->st);
}

/* Checks that xs[0..n) share a dtype, a rank and every dim except `axis` (-1: all). */
static bool check_same(TfCtx *c, const IrValue *xs, int n, int axis, const char *what)
{
    const IrType *t0 = ir_value_type(xs[0]);
    char a[128], b[128];
    for (int i = 1; i < n; i++) {
        const IrType *t = ir_value_type(xs[i]);
        if (t->dtype != t0->dtype)
            return tf_errorf(c, "%s: input %d is %s, input 0 is %s", what, i, tcrt_dtype_name(t->dtype),
                             tcrt_dtype_name(t0->dtype));
        bool same = t->shape.rank == t0->shape.rank;
        for (int d = 0; same && d < t->shape.rank; d++)
            same = d == axis || t->shape.dims[d] == t0->shape.dims[d];
        if (!same)
            return tf_errorf(c, "%s: input %d has shape %s, input 0 has %s", what, i,
                             shp(&t->shape, a, sizeof a), shp(&t0->shape, b, sizeof b));
    }
    return true;
}

static bool lower_pack(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t axis64;
    int axis;
    if (!need_inputs(c, n_in, 1) || !tf_attr_int(c, "axis", &axis64))
        return false;
    if (!check_same(c, in, n_in, -1, "cannot pack"))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (s->rank >= IR_MAX_RANK)
        return tf_errorf(c, "rank %d is already the maximum", s->rank);
    if (!norm_axis(c, "axis", axis64, s->rank + 1, &axis))
        return false;
    IrShape e = {0};
    e.rank = s->rank + 1;
    for (int i = 0, j = 0; i < e.rank; i++)
        e.dims[i] = i == axis ? 1 : s->dims[j++];
    IrValue *xs = arena_alloc(&c->g->arena, sizeof(IrValue) * (size_t)n_in);
    if (!xs)
        return st_errorf(c->st, ST_NOMEM, "out of memory");
    for (int i = 0; i < n_in; i++)
        if (!ok(xs[i] = reshape_to(c, in[i], &e)))
            return false;
    out[0] = concat(c, xs, n_in, axis);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_unpack(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t num, axis64;
    int axis;
    char a[128];
    if (!need_inputs(c, n_in, 1) || !tf_attr_int(c, "num", &num) || !tf_attr_int(c, "axis", &axis64))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (!norm_axis(c, "axis", axis64, s->rank, &axis))
        return false;
    if (num != s->dims[axis] || num > TF_MAX_OUTPUTS)
        return tf_errorf(c, "num %lld does not match dim %d of shape %s", (long long)num, axis,
                         shp(s, a, sizeof a));
    IrShape r = {0, {0}};
    for (int d = 0; d < s->rank; d++)
        if (d != axis)
            r.dims[r.rank++] = s->dims[d];
    for (int64_t i = 0; i < num; i++) {
        IrValue v = slice_axis(c, in[0], axis, i, 1);
        if (!ok(v) || !ok(out[i] = reshape_to(c, v, &r)))
            return false;
    }
    *n_out = (int)num;
    return true;
}

static bool concat_common(TfCtx *c, const IrValue *xs, int n, IrValue axis_v, IrValue *out, int *n_out)
{
    int64_t axis64;
    int axis;
    if (n < 1)
        return tf_errorf(c, "needs at least one value to concatenate");
    if (!const_int1(c, axis_v, "axis", &axis64))
        return false;
    const IrShape *s = &ir_value_type(xs[0])->shape;
    if (s->rank == 0)
        return tf_errorf(c, "cannot concatenate scalars");
    if (!norm_axis(c, "axis", axis64, s->rank, &axis))
        return false;
    if (!check_same(c, xs, n, axis, "cannot concatenate"))
        return false;
    out[0] = concat(c, xs, n, axis);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_concat(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 2))
        return false;
    return concat_common(c, in + 1, n_in - 1, in[0], out, n_out);
}

static bool lower_concat_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 2))
        return false;
    return concat_common(c, in, n_in - 1, in[n_in - 1], out, n_out);
}

/* Splits x along axis into pieces of the given sizes (summing to the dim). */
static bool split_sizes(TfCtx *c, IrValue x, int axis, const int64_t *sizes, int n, IrValue *out, int *n_out)
{
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        if (!ok(out[i] = slice_axis(c, x, axis, start, sizes[i])))
            return false;
        start += sizes[i];
    }
    *n_out = n;
    return true;
}

static bool lower_split(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t axis64, num;
    int axis;
    char a[128];
    if (!need_inputs(c, n_in, 2) || !const_int1(c, in[0], "split_dim", &axis64) ||
        !tf_attr_int(c, "num_split", &num))
        return false;
    const IrShape *s = &ir_value_type(in[1])->shape;
    if (!norm_axis(c, "split_dim", axis64, s->rank, &axis))
        return false;
    if (num < 1 || num > TF_MAX_OUTPUTS || s->dims[axis] % num != 0)
        return tf_errorf(c, "num_split %lld does not divide dim %d of shape %s", (long long)num, axis,
                         shp(s, a, sizeof a));
    int64_t sizes[TF_MAX_OUTPUTS];
    for (int i = 0; i < num; i++)
        sizes[i] = s->dims[axis] / num;
    return split_sizes(c, in[1], axis, sizes, (int)num, out, n_out);
}

static bool lower_split_v(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t axis64, num;
    int axis, n = 0;
    char a[128], b[256];
    int64_t sizes[TF_MAX_OUTPUTS];
    if (!need_inputs(c, n_in, 3) || !const_int1(c, in[2], "split_dim", &axis64) ||
        !tf_attr_int(c, "num_split", &num))
        return false;
    if (!tf_const_ints(c, in[1], "size_splits", sizes, TF_MAX_OUTPUTS, &n))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (!norm_axis(c, "split_dim", axis64, s->rank, &axis))
        return false;
    if (n != num)
        return tf_errorf(c, "size_splits has %d entries, num_split is %lld", n, (long long)num);
    int64_t sum = 0;
    int unknown = -1;
    for (int i = 0; i < n; i++) {
        if (sizes[i] == -1 && unknown < 0)
            unknown = i;
        else if (sizes[i] < 0)
            return tf_errorf(c, "size_splits %s: bad size %lld", dims_str(sizes, n, b, sizeof b),
                             (long long)sizes[i]);
        else
            sum += sizes[i];
    }
    int64_t dim = s->dims[axis];
    if (unknown >= 0) {
        if (sum > dim)
            return tf_errorf(c, "size_splits %s exceed dim %d of shape %s", dims_str(sizes, n, b, sizeof b),
                             axis, shp(s, a, sizeof a));
        sizes[unknown] = dim - sum;
    } else if (sum != dim) {
        return tf_errorf(c, "size_splits %s do not sum to dim %d of shape %s", dims_str(sizes, n, b, sizeof b),
                         axis, shp(s, a, sizeof a));
    }
    return split_sizes(c, in[0], axis, sizes, n, out, n_out);
}

/* ---- slicing ------------------------------------------------------------ */

/* Slice with sizes computed at run time or of an input with a run-time
 * extent: begin constant; a size that may be -1 at run time ("to the
 * end") becomes Select(size < 0, extent - begin, size). */
static bool slice_dyn(TfCtx *c, const IrValue *in, IrValue *out)
{
    int64_t begin[IR_MAX_RANK + 1], stride[IR_MAX_RANK];
    int nb = 0, ns = 0;
    IrAff size[IR_MAX_RANK + 1];
    if (!ir_is_const(in[1]))
        return tf_errorf(c, "begin computed at run time is not supported (data-dependent size)");
    if (!tf_const_ints(c, in[1], "begin", begin, IR_MAX_RANK + 1, &nb) ||
        !dyn_vector(c, in[2], "size", size, IR_MAX_RANK + 1, &ns))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (nb != s->rank || ns != s->rank)
        return tf_errorf(c, "begin and size must have one entry per dim of the input (rank %d)", s->rank);
    IrShape to = {0};
    to.rank = s->rank;
    for (int d = 0; d < s->rank; d++) {
        stride[d] = 1;
        IrAff ext = ir_shape_extent(s, d), rest, e;
        IrAff b = ir_aff_const(begin[d]);
        if (begin[d] < 0 || begin[d] > s->dims[d] || !ir_aff_add(&ext, &b, -1, &rest))
            return tf_errorf(c, "begin %lld out of bounds for dim %d", (long long)begin[d], d);
        int64_t lo, hi;
        ir_aff_range(c->g, &size[d], &lo, &hi);
        if (ir_aff_is_const(&size[d]) && size[d].c == -1) {
            e = rest;
        } else if (lo >= 0) {
            e = size[d];
        } else if (ir_aff_is_const(&size[d])) {
            return tf_errorf(c, "size %lld of dim %d is negative", (long long)size[d].c, d);
        } else {
            IrAff zero = ir_aff_const(0);
            IrValue sz = aff_value(c, &size[d]), r = aff_value(c, &rest), z = aff_value(c, &zero);
            IrValue neg = ok(sz) && ok(z) ? ir_binary(c->g, OP_LT, sz, z, c->st) : sz;
            IrValue sel = (IrValue){NULL, 0};
            if (ok(neg) && ok(r))
                sel = ir_emit1(c->g, OP_SELECT, (IrValue[]){neg, r, sz}, 3, NULL, NULL, c->st);
            if (!ok(sel) || !ir_sym_of(c->g, sel, &e, c->st))
                return false;
        }
        if (!dyn_extent(c, &to, d, &e))
            return false;
    }
    out[0] = slice_of(c, in[0], begin, stride, &to);
    return ok(out[0]);
}

static bool lower_slice(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t begin[IR_MAX_RANK + 1], size[IR_MAX_RANK + 1], stride[IR_MAX_RANK];
    int nb = 0, ns = 0;
    char a[128], b[128], d2[128];
    if (n_in == 3 && (!ir_is_const(in[2]) || ir_value_type(in[0])->shape.has_dyn)) {
        *n_out = 1;
        return slice_dyn(c, in, out);
    }
    if (!need_inputs(c, n_in, 3) || !tf_const_ints(c, in[1], "begin", begin, IR_MAX_RANK + 1, &nb) ||
        !tf_const_ints(c, in[2], "size", size, IR_MAX_RANK + 1, &ns))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (nb != s->rank || ns != s->rank)
        return tf_errorf(c, "begin %s and size %s must have one entry per dim of shape %s",
                         dims_str(begin, nb, b, sizeof b), dims_str(size, ns, d2, sizeof d2), shp(s, a, sizeof a));
    IrShape to = *s;
    bool whole = true;
    for (int d = 0; d < s->rank; d++) {
        int64_t sz = size[d] == -1 ? s->dims[d] - begin[d] : size[d];
        if (begin[d] < 0 || begin[d] > s->dims[d] || sz < 0 || sz > s->dims[d] - begin[d])
            return tf_errorf(c, "begin %s, size %s out of bounds for shape %s", dims_str(begin, nb, b, sizeof b),
                             dims_str(size, ns, d2, sizeof d2), shp(s, a, sizeof a));
        to.dims[d] = sz;
        stride[d] = 1;
        if (sz == 0)
            begin[d] = 0;
        whole &= begin[d] == 0 && sz == s->dims[d];
    }
    out[0] = whole ? in[0] : slice_of(c, in[0], begin, stride, &to);
    *n_out = 1;
    return ok(out[0]);
}

enum { GATHER_SHRINK = -1, GATHER_NEW = -2 };

/* TensorFlow's StridedSlice semantics, resolved at compile time (see the
 * file comment).  Field names in messages are TF's. */
static bool lower_strided_slice(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t sb[MAX_SPEC], se[MAX_SPEC], ss[MAX_SPEC];
    int nb = 0, ne = 0, ns = 0;
    int64_t m_begin, m_end, m_ell, m_new, m_shrink;
    if (!need_inputs(c, n_in, 4) || !tf_const_ints(c, in[1], "begin", sb, MAX_SPEC, &nb) ||
        !tf_const_ints(c, in[2], "end", se, MAX_SPEC, &ne) ||
        !tf_const_ints(c, in[3], "strides", ss, MAX_SPEC, &ns) || !tf_attr_int(c, "begin_mask", &m_begin) ||
        !tf_attr_int(c, "end_mask", &m_end) || !tf_attr_int(c, "ellipsis_mask", &m_ell) ||
        !tf_attr_int(c, "new_axis_mask", &m_new) || !tf_attr_int(c, "shrink_axis_mask", &m_shrink))
        return false;
    if (nb != ns || ne != ns || ns >= MAX_SPEC)
        return tf_errorf(c, "begin, end and strides must have one equal length below %d, got %d, %d, %d",
                         MAX_SPEC, nb, ne, ns);
    if (m_ell & (m_ell - 1))
        return tf_errorf(c, "ellipsis_mask %lld has more than one ellipsis", (long long)m_ell);
    const IrShape *s = &ir_value_type(in[0])->shape;
    const int rank = s->rank;

    /* Step 1: the sparse spec; an implicit ellipsis ends a spec without one. */
    int sparse_dims = ns, add_after_ell = 0;
    bool seen_ell = false;
    for (int i = 0; i < ns; i++) {
        if (seen_ell && (m_new >> i & 1))
            add_after_ell++;
        if (m_ell >> i & 1)
            seen_ell = true;
    }
    if (!seen_ell)
        m_ell |= (int64_t)1 << sparse_dims++;

    /* Step 2: dense spec, one entry per input dim. */
    int64_t begin[IR_MAX_RANK] = {0}, end[IR_MAX_RANK] = {0}, stride[IR_MAX_RANK] = {0};
    bool bmask[IR_MAX_RANK] = {false}, emask[IR_MAX_RANK] = {false}, shrink[IR_MAX_RANK] = {false};
    int gather[MAX_SPEC + IR_MAX_RANK + 1], n_gather = 0, full = 0;
    for (int i = 0; i < sparse_dims; i++) {
        if (m_ell >> i & 1) {
            int next = rank - (sparse_dims - i) + 1 + add_after_ell;
            if (next > rank)
                next = rank;
            for (; full < next; full++) {
                begin[full] = end[full] = 0;
                stride[full] = 1;
                bmask[full] = emask[full] = true;
                shrink[full] = false;
                gather[n_gather++] = full;
            }
        } else if (m_new >> i & 1) {
            gather[n_gather++] = GATHER_NEW;
        } else {
            if (full == rank)
                return tf_errorf(c, "index %d of the slice spec is out of range: input has only %d dims", i, rank);
            begin[full] = sb[i];
            end[full] = se[i];
            stride[full] = ss[i];
            bmask[full] = m_begin >> i & 1;
            emask[full] = m_end >> i & 1;
            shrink[full] = m_shrink >> i & 1;
            gather[n_gather++] = shrink[full] ? GATHER_SHRINK : full;
            full++;
        }
    }
    /* (the ellipsis always reaches `rank`, so every dim is covered) */

    /* Step 3: canonical begin/end, counts (the processing shape). */
    IrShape proc = *s;
    bool whole = true;
    for (int d = 0; d < rank; d++) {
        int64_t dim = s->dims[d], st = stride[d];
        if (st == 0)
            return tf_errorf(c, "strides[%d] must be non-zero", d);
        if (shrink[d] && st < 0)
            return tf_errorf(c, "strides[%d] must be positive on an indexed (shrunk) dim", d);
        int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? dim : dim - 1;
        int64_t b, e;
        if (shrink[d]) {
            b = begin[d] < 0 ? dim + begin[d] : begin[d];
            if (b < 0 || b >= dim)
                return tf_errorf(c, "begin index %lld of dim %d out of bounds for size %lld", (long long)begin[d],
                                 d, (long long)dim);
            e = b + 1;
            st = 1;
        } else {
            if (bmask[d]) {
                b = st > 0 ? lo : hi;
            } else {
                b = begin[d] < 0 ? dim + begin[d] : begin[d];
                b = b < lo ? lo : b > hi ? hi : b;
            }
            if (emask[d]) {
                e = st > 0 ? hi : lo;
            } else {
                e = end[d] < 0 ? dim + end[d] : end[d];
                e = e < lo ? lo : e > hi ? hi : e;
            }
        }
        int64_t len = e - b, count;
        if (len == 0 || (len < 0) != (st < 0))
            count = 0;
        else
            count = len / st + (len % st != 0);
        proc.dims[d] = count;
        begin[d] = count == 0 ? 0 : b;
        stride[d] = st;
        whole &= st == 1 && b == 0 && count == dim;
    }

    /* Step 4: final shape. */
    IrShape fin = {0, {0}};
    for (int i = 0; i < n_gather; i++) {
        if (gather[i] == GATHER_SHRINK)
            continue;
        if (fin.rank == IR_MAX_RANK)
            return tf_errorf(c, "result has more than %d dims", IR_MAX_RANK);
        fin.dims[fin.rank++] = gather[i] == GATHER_NEW ? 1 : proc.dims[gather[i]];
    }

    IrValue v = whole ? in[0] : slice_of(c, in[0], begin, stride, &proc);
    out[0] = ok(v) ? reshape_to(c, v, &fin) : v;
    *n_out = 1;
    return ok(out[0]);
}

/* ---- transpose, pad, tile, broadcast ----------------------------------- */

static bool lower_transpose(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t perm[IR_MAX_RANK + 1];
    int n = 0, p[IR_MAX_RANK];
    char a[128], b[128];
    if (!need_inputs(c, n_in, 2) || !tf_const_ints(c, in[1], "perm", perm, IR_MAX_RANK + 1, &n))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    bool used[IR_MAX_RANK] = {false};
    bool good = n == s->rank;
    for (int i = 0; good && i < n; i++) {
        good = perm[i] >= 0 && perm[i] < n && !used[perm[i]];
        if (good) {
            used[perm[i]] = true;
            p[i] = (int)perm[i];
        }
    }
    if (!good)
        return tf_errorf(c, "perm %s is not a permutation of the dims of shape %s", dims_str(perm, n, b, sizeof b),
                         shp(s, a, sizeof a));
    out[0] = transpose(c, in[0], p, n);
    *n_out = 1;
    return ok(out[0]);
}

/* mode: 0 constant, 1 reflect, 2 symmetric (TCRT_PAD_MODE). */
/* Pad with paddings computed at run time or of an input with a run-time
 * extent: before-paddings constant, after-paddings any expression. */
static bool pad_dyn(TfCtx *c, const IrValue *in, int mode, double value, IrValue *out)
{
    IrAff pads[2 * IR_MAX_RANK + 1];
    int n = 0;
    if (!dyn_vector(c, in[1], "paddings", pads, 2 * IR_MAX_RANK + 1, &n))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (n != 2 * s->rank)
        return tf_errorf(c, "paddings must have shape [%d,2]", s->rank);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrShape to = {0};
    to.rank = s->rank;
    for (int d = 0; d < s->rank; d++) {
        const IrAff *b = &pads[2 * d], *a = &pads[2 * d + 1];
        if (!ir_aff_is_const(b) || b->c < 0)
            return tf_errorf(c, "a before-padding computed at run time is not supported (data-dependent size)");
        p.i[2 * d] = b->c;
        p.i[2 * d + 1] = ir_aff_is_const(a) ? a->c : IR_PAD_RUNTIME;
        if (ir_aff_is_const(a) && a->c < 0)
            return tf_errorf(c, "paddings of dim %d are negative", d);
        IrAff ext = ir_shape_extent(s, d), e;
        if (!ir_aff_add(&ext, b, 1, &e) || !ir_aff_add(&e, a, 1, &e))
            return tf_errorf(c, "paddings of dim %d: extent too complex (data-dependent size)", d);
        if (!dyn_extent(c, &to, d, &e))
            return false;
    }
    p.i[TCRT_PAD_MODE] = mode;
    p.f[0] = value;
    IrType t = type_of(ir_value_type(in[0])->dtype, &to);
    out[0] = ir_emit1(c->g, OP_PAD, in, 1, &p, &t, c->st);
    return ok(out[0]);
}

static bool pad_common(TfCtx *c, const IrValue *in, int mode, double value, IrValue *out, int *n_out)
{
    int64_t pads[2 * IR_MAX_RANK + 1];
    int n = 0;
    char a[128], b[256];
    if (!ir_is_const(in[1]) || ir_value_type(in[0])->shape.has_dyn) {
        *n_out = 1;
        return pad_dyn(c, in, mode, value, out);
    }
    if (!tf_const_ints(c, in[1], "paddings", pads, 2 * IR_MAX_RANK + 1, &n))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (n != 2 * s->rank)
        return tf_errorf(c, "paddings %s must have shape [%d,2] for input shape %s",
                         dims_str(pads, n, b, sizeof b), s->rank, shp(s, a, sizeof a));
    IrParams p;
    memset(&p, 0, sizeof p);
    bool zero = true;
    for (int d = 0; d < s->rank; d++) {
        for (int k = 0; k < 2; k++) {
            int64_t v = pads[2 * d + k];
            int64_t lim = mode == 1 ? s->dims[d] - 1 : mode == 2 ? s->dims[d] : INT64_MAX / 4;
            if (v < 0 || v > lim || v > IR_MAX_ELEMENTS)
                return tf_errorf(c, "paddings %s invalid for dim %d of shape %s", dims_str(pads, n, b, sizeof b), d,
                                 shp(s, a, sizeof a));
            p.i[2 * d + k] = v;
            zero &= v == 0;
        }
    }
    p.i[TCRT_PAD_MODE] = mode;
    p.f[0] = value;
    out[0] = zero ? in[0] : ir_emit1(c->g, OP_PAD, in, 1, &p, NULL, c->st);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_pad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 2))
        return false;
    return pad_common(c, in, 0, 0, out, n_out);
}

static bool lower_pad_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    double v;
    if (!need_inputs(c, n_in, 3) || !const_num1(c, in[2], "constant_values", &v))
        return false;
    return pad_common(c, in, 0, v, out, n_out);
}

static bool lower_mirror_pad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    const char *mode;
    if (!need_inputs(c, n_in, 2) || !tf_attr_str(c, "mode", &mode))
        return false;
    int m;
    if (strcmp(mode, "REFLECT") == 0)
        m = 1;
    else if (strcmp(mode, "SYMMETRIC") == 0)
        m = 2;
    else
        return tf_errorf(c, "mode '%s' is not REFLECT or SYMMETRIC", mode);
    return pad_common(c, in, m, 0, out, n_out);
}

static bool lower_tile(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t mult[IR_MAX_RANK + 1];
    int n = 0;
    char a[128], b[128];
    if (!need_inputs(c, n_in, 2) || !tf_const_ints(c, in[1], "multiples", mult, IR_MAX_RANK + 1, &n))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (n != s->rank)
        return tf_errorf(c, "multiples %s must have one entry per dim of shape %s", dims_str(mult, n, b, sizeof b),
                         shp(s, a, sizeof a));
    IrShape to = *s;
    bool same = true;
    for (int d = 0; d < n; d++) {
        if (mult[d] < 0 || (mult[d] > 0 && s->dims[d] > IR_MAX_ELEMENTS / mult[d]))
            return tf_errorf(c, "multiples %s invalid for shape %s", dims_str(mult, n, b, sizeof b), shp(s, a, sizeof a));
        to.dims[d] = s->dims[d] * mult[d];
        same &= mult[d] == 1;
    }
    int64_t count;
    if (!ir_shape_count_checked(&to, &count))
        return tf_errorf(c, "tiling shape %s by %s gives too many elements", shp(s, a, sizeof a),
                         dims_str(mult, n, b, sizeof b));
    IrType t = type_of(ir_value_type(in[0])->dtype, &to);
    out[0] = same ? in[0] : ir_emit1(c->g, OP_TILE, in, 1, NULL, &t, c->st);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_broadcast_to(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t dims[IR_MAX_RANK + 1];
    int n = 0;
    char a[128], b[128];
    if (!need_inputs(c, n_in, 2) || !tf_const_ints(c, in[1], "shape", dims, IR_MAX_RANK + 1, &n))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (n > IR_MAX_RANK)
        return tf_errorf(c, "shape has rank %d, more than %d", n, IR_MAX_RANK);
    IrShape to = {0}, got = {0};
    to.rank = n;
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0)
            return tf_errorf(c, "shape %s has a negative dimension", dims_str(dims, n, b, sizeof b));
        to.dims[i] = dims[i];
    }
    int64_t count;
    if (!ir_shape_count_checked(&to, &count) || !ir_broadcast_shapes(s, &to, &got) || !ir_shape_eq(&got, &to))
        return tf_errorf(c, "cannot broadcast %s to %s", shp(s, a, sizeof a), dims_str(dims, n, b, sizeof b));
    out[0] = broadcast_to(c, in[0], &to);
    *n_out = 1;
    return ok(out[0]);
}

/* ---- gathers ------------------------------------------------------------ */

static bool gather_common(TfCtx *c, IrValue params, IrValue idx, int64_t axis64, int64_t batch64, IrValue *out,
                          int *n_out)
{
    const IrShape *ps = &ir_value_type(params)->shape, *is = &ir_value_type(idx)->shape;
    tcrt_dtype it = ir_value_type(idx)->dtype;
    char a[128], b[128];
    int axis;
    if (it != TCRT_I32 && it != TCRT_I64)
        return tf_errorf(c, "indices must be int32 or int64, got %s", tcrt_dtype_name(it));
    if (ps->rank == 0)
        return tf_errorf(c, "params must have rank >= 1");
    if (batch64 < 0)
        batch64 += is->rank;
    if (batch64 < 0 || batch64 > is->rank)
        return tf_errorf(c, "batch_dims out of range for indices shape %s", shp(is, a, sizeof a));
    if (!norm_axis(c, "axis", axis64, ps->rank, &axis))
        return false;
    if (batch64 > axis)
        return tf_errorf(c, "batch_dims %lld must be <= axis %d", (long long)batch64, axis);
    for (int d = 0; d < batch64; d++)
        if (ps->dims[d] != is->dims[d])
            return tf_errorf(c, "params shape %s and indices shape %s differ in batch dim %d", shp(ps, a, sizeof a),
                             shp(is, b, sizeof b), d);
    if (ps->rank - 1 + is->rank - batch64 > IR_MAX_RANK)
        return tf_errorf(c, "result has more than %d dims", IR_MAX_RANK);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_GA_AXIS] = axis;
    p.i[TCRT_GA_BATCH] = batch64;
    IrValue ins[2] = {params, idx};
    out[0] = ir_emit1(c->g, OP_GATHER, ins, 2, &p, NULL, c->st);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_gather_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t axis, batch;
    if (!need_inputs(c, n_in, 3) || !const_int1(c, in[2], "axis", &axis) || !tf_attr_int(c, "batch_dims", &batch))
        return false;
    return gather_common(c, in[0], in[1], axis, batch, out, n_out);
}

static bool lower_gather(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 2))
        return false;
    return gather_common(c, in[0], in[1], 0, 0, out, n_out);
}

static bool lower_gather_nd(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    char a[128], b[128];
    if (!need_inputs(c, n_in, 2))
        return false;
    const IrShape *ps = &ir_value_type(in[0])->shape, *is = &ir_value_type(in[1])->shape;
    tcrt_dtype it = ir_value_type(in[1])->dtype;
    if (it != TCRT_I32 && it != TCRT_I64)
        return tf_errorf(c, "indices must be int32 or int64, got %s", tcrt_dtype_name(it));
    if (is->rank < 1 || is->dims[is->rank - 1] > ps->rank)
        return tf_errorf(c, "indices shape %s does not index params shape %s", shp(is, a, sizeof a),
                         shp(ps, b, sizeof b));
    out[0] = ir_emit1(c->g, OP_GATHER_ND, in, 2, NULL, NULL, c->st);
    *n_out = 1;
    return ok(out[0]);
}

/* ---- reductions --------------------------------------------------------- */

/* Reads reduction_indices into an axis bitmask of x; *count = elements reduced per output. */
static bool reduce_mask(TfCtx *c, IrValue x, IrValue axes_v, int64_t *mask, int64_t *count)
{
    int64_t axes[64];
    int n = 0;
    const IrShape *s = &ir_value_type(x)->shape;
    if (!tf_const_ints(c, axes_v, "reduction_indices", axes, 64, &n))
        return false;
    *mask = 0;
    for (int i = 0; i < n; i++) {
        int d;
        if (!norm_axis(c, "reduction_indices", axes[i], s->rank, &d))
            return false;
        *mask |= (int64_t)1 << d;
    }
    *count = 1;
    for (int d = 0; d < s->rank; d++)
        if (*mask >> d & 1)
            *count *= s->dims[d];
    return true;
}

static IrValue reduce(TfCtx *c, Op op, IrValue x, int64_t mask, bool keep)
{
    if (mask == 0)
        return x;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_RED_MASK] = mask;
    p.i[1] = keep;
    return ir_emit1(c->g, op, &x, 1, &p, NULL, c->st);
}

static bool reduce_common(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, Op op, bool mean)
{
    int64_t mask, count;
    bool keep;
    if (!need_inputs(c, n_in, 2) || !tf_attr_bool(c, "keep_dims", &keep) ||
        !reduce_mask(c, in[0], in[1], &mask, &count))
        return false;
    tcrt_dtype dt = ir_value_type(in[0])->dtype;
    if (dt == TCRT_BOOL || dt == TCRT_STRING)
        return tf_errorf(c, "cannot reduce %s values", tcrt_dtype_name(dt));
    IrValue v = reduce(c, op, in[0], mask, keep);
    if (ok(v) && mean && mask != 0) {
        /* TF divides the sum by the count (integer division for ints). */
        IrValue k = ir_const_scalar_f(c->g, dt, (double)count, c->st);
        v = ok(k) ? ir_binary(c->g, OP_DIV, v, k, c->st) : k;
    }
    out[0] = v;
    *n_out = 1;
    return ok(v);
}

static bool lower_sum(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return reduce_common(c, in, n_in, out, n_out, OP_REDUCE_SUM, false);
}
static bool lower_mean(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return reduce_common(c, in, n_in, out, n_out, OP_REDUCE_SUM, true);
}
static bool lower_max(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return reduce_common(c, in, n_in, out, n_out, OP_REDUCE_MAX, false);
}
static bool lower_min(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return reduce_common(c, in, n_in, out, n_out, OP_REDUCE_MIN, false);
}
static bool lower_prod(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return reduce_common(c, in, n_in, out, n_out, OP_REDUCE_PROD, false);
}

/* All = min over a 0/1 int32 copy, Any = max, cast back to bool.  A reduction
 * over an empty dim gives the identity of and/or (true/false), as TF; it is
 * built directly instead of trusting the kernels' empty-min/max values. */
static bool bool_reduce(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, bool is_all)
{
    int64_t mask, count;
    bool keep;
    if (!need_inputs(c, n_in, 2) || !tf_attr_bool(c, "keep_dims", &keep) ||
        !reduce_mask(c, in[0], in[1], &mask, &count))
        return false;
    if (ir_value_type(in[0])->dtype != TCRT_BOOL)
        return tf_errorf(c, "input must be bool, got %s", tcrt_dtype_name(ir_value_type(in[0])->dtype));
    *n_out = 1;
    if (mask == 0) {
        out[0] = in[0];
        return true;
    }
    if (count == 0) {
        /* reduced over an empty dim: the identity of and/or */
        IrShape s = ir_value_type(in[0])->shape, r = {0, {0}};
        for (int d = 0; d < s.rank; d++) {
            if (!(mask >> d & 1))
                r.dims[r.rank++] = s.dims[d];
            else if (keep)
                r.dims[r.rank++] = 1;
        }
        IrValue k = ir_const_scalar_f(c->g, TCRT_BOOL, is_all ? 1 : 0, c->st);
        out[0] = ok(k) ? broadcast_to(c, k, &r) : k;
        return ok(out[0]);
    }
    IrValue v = ir_cast(c->g, in[0], TCRT_I32, c->st);
    if (ok(v))
        v = reduce(c, is_all ? OP_REDUCE_MIN : OP_REDUCE_MAX, v, mask, keep);
    if (ok(v))
        v = ir_cast(c->g, v, TCRT_BOOL, c->st);
    out[0] = v;
    return ok(v);
}

static bool lower_all(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return bool_reduce(c, in, n_in, out, n_out, true);
}
static bool lower_any(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return bool_reduce(c, in, n_in, out, n_out, false);
}

static bool arg_common(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, Op op)
{
    int64_t axis64;
    int axis;
    tcrt_dtype ot;
    char a[128];
    if (!need_inputs(c, n_in, 2) || !const_int1(c, in[1], "dimension", &axis64) ||
        !tf_attr_type(c, "output_type", &ot))
        return false;
    if (ot != TCRT_I32 && ot != TCRT_I64)
        return tf_errorf(c, "output_type must be int32 or int64, got %s", tcrt_dtype_name(ot));
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (!norm_axis(c, "dimension", axis64, s->rank, &axis))
        return false;
    if (s->dims[axis] == 0)
        return tf_errorf(c, "dimension %d of shape %s is empty", axis, shp(s, a, sizeof a));
    IrShape r = {0, {0}};
    for (int d = 0; d < s->rank; d++)
        if (d != axis)
            r.dims[r.rank++] = s->dims[d];
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_ARG_AXIS] = axis;
    IrType t = type_of(ot, &r);
    out[0] = ir_emit1(c->g, op, in, 1, &p, &t, c->st);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_argmax(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return arg_common(c, in, n_in, out, n_out, OP_ARGMAX);
}
static bool lower_argmin(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return arg_common(c, in, n_in, out, n_out, OP_ARGMIN);
}

/* ---- images ------------------------------------------------------------- */

/* mode 0 bilinear (output float32, as TF), 1 nearest (output keeps T). */
static bool resize_common(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, int mode)
{
    int64_t size[3];
    int n = 0;
    bool align, half;
    char a[128];
    if (!need_inputs(c, n_in, 2) || !tf_const_ints(c, in[1], "size", size, 3, &n) ||
        !tf_attr_bool(c, "align_corners", &align) || !tf_attr_bool(c, "half_pixel_centers", &half))
        return false;
    const IrType *t = ir_value_type(in[0]);
    if (t->shape.rank != 4)
        return tf_errorf(c, "images must be 4-D NHWC, got shape %s", shp(&t->shape, a, sizeof a));
    if (n != 2 || size[0] <= 0 || size[1] <= 0 || size[0] > IR_MAX_ELEMENTS || size[1] > IR_MAX_ELEMENTS)
        return tf_errorf(c, "size must hold two positive values");
    if (align && half)
        return tf_errorf(c, "align_corners and half_pixel_centers cannot both be true");
    IrShape to = t->shape;
    to.dims[1] = size[0];
    to.dims[2] = size[1];
    int64_t count;
    if (!ir_shape_count_checked(&to, &count))
        return tf_errorf(c, "result shape %s has too many elements", shp(&to, a, sizeof a));
    IrValue x = in[0];
    tcrt_dtype orig = t->dtype;
    if (orig != TCRT_F32 && !(mode == 1 && orig == TCRT_F64))
        x = ir_cast(c->g, x, TCRT_F32, c->st);
    if (!ok(x))
        return false;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_RS_MODE] = mode;
    p.i[TCRT_RS_ALIGN] = align;
    p.i[TCRT_RS_HALF] = half;
    IrType ot = type_of(ir_value_type(x)->dtype, &to);
    IrValue v = ir_emit1(c->g, OP_RESIZE, &x, 1, &p, &ot, c->st);
    if (ok(v) && mode == 1 && ir_value_type(v)->dtype != orig)
        v = ir_cast(c->g, v, orig, c->st);
    out[0] = v;
    *n_out = 1;
    return ok(v);
}

static bool lower_resize_bilinear(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return resize_common(c, in, n_in, out, n_out, 0);
}
static bool lower_resize_nearest(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return resize_common(c, in, n_in, out, n_out, 1);
}

static bool block_common(TfCtx *c, const IrValue *in, int n_in, int64_t *bs, const IrShape **s)
{
    const char *fmt;
    char a[128];
    if (!need_inputs(c, n_in, 1) || !tf_attr_int(c, "block_size", bs) || !tf_attr_str(c, "data_format", &fmt))
        return false;
    if (strcmp(fmt, "NHWC") != 0)
        return tf_errorf(c, "data_format '%s' is not supported (only NHWC)", fmt);
    *s = &ir_value_type(in[0])->shape;
    if ((*s)->rank != 4)
        return tf_errorf(c, "input must be 4-D NHWC, got shape %s", shp(*s, a, sizeof a));
    if (*bs < 2 || *bs > 65536)
        return tf_errorf(c, "block_size %lld must be >= 2", (long long)*bs);
    return true;
}

/* [N,H,W,C] -> [N,H,W,b,b,C/b^2] -> transpose(0,1,3,2,4,5) -> [N,H*b,W*b,C/b^2] */
static bool lower_depth_to_space(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t b;
    const IrShape *s;
    char a[128];
    if (!block_common(c, in, n_in, &b, &s))
        return false;
    int64_t N = s->dims[0], H = s->dims[1], W = s->dims[2], C = s->dims[3];
    if (C % (b * b) != 0)
        return tf_errorf(c, "depth of shape %s is not divisible by block_size^2 = %lld", shp(s, a, sizeof a),
                         (long long)(b * b));
    IrShape s6 = {6, {N, H, W, b, b, C / (b * b)}};
    IrShape s4 = {4, {N, H * b, W * b, C / (b * b)}};
    static const int perm[6] = {0, 1, 3, 2, 4, 5};
    IrValue v = reshape_to(c, in[0], &s6);
    if (ok(v))
        v = transpose(c, v, perm, 6);
    if (ok(v))
        v = reshape_to(c, v, &s4);
    out[0] = v;
    *n_out = 1;
    return ok(v);
}

/* [N,H,W,C] -> [N,H/b,b,W/b,b,C] -> transpose(0,1,3,2,4,5) -> [N,H/b,W/b,b*b*C] */
static bool lower_space_to_depth(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t b;
    const IrShape *s;
    char a[128];
    if (!block_common(c, in, n_in, &b, &s))
        return false;
    int64_t N = s->dims[0], H = s->dims[1], W = s->dims[2], C = s->dims[3];
    if (H % b != 0 || W % b != 0)
        return tf_errorf(c, "height and width of shape %s are not divisible by block_size %lld", shp(s, a, sizeof a),
                         (long long)b);
    IrShape s6 = {6, {N, H / b, b, W / b, b, C}};
    IrShape s4 = {4, {N, H / b, W / b, b * b * C}};
    static const int perm[6] = {0, 1, 3, 2, 4, 5};
    IrValue v = reshape_to(c, in[0], &s6);
    if (ok(v))
        v = transpose(c, v, perm, 6);
    if (ok(v))
        v = reshape_to(c, v, &s4);
    out[0] = v;
    *n_out = 1;
    return ok(v);
}

/* ---- space <-> batch ---------------------------------------------------- */

/* Reads block_shape [M] and a [M,2] pads/crops input for an input of shape s. */
static bool block_spec(TfCtx *c, IrValue bv, IrValue pv, const char *pname, const IrShape *s, int64_t *block,
                       int64_t *pads, int *m)
{
    int nb = 0, np = 0;
    char a[128], b[128];
    if (!tf_const_ints(c, bv, "block_shape", block, IR_MAX_RANK, &nb) ||
        !tf_const_ints(c, pv, pname, pads, 2 * IR_MAX_RANK, &np))
        return false;
    if (nb < 1 || nb > 3 || nb + 1 > s->rank)
        return tf_errorf(c, "block_shape %s: need 1 to 3 block dims below the rank of shape %s",
                         dims_str(block, nb, b, sizeof b), shp(s, a, sizeof a));
    if (np != 2 * nb)
        return tf_errorf(c, "%s must have shape [%d,2]", pname, nb);
    for (int i = 0; i < nb; i++) {
        if (block[i] < 1 || block[i] > IR_MAX_ELEMENTS)
            return tf_errorf(c, "block_shape %s must be positive", dims_str(block, nb, b, sizeof b));
        if (pads[2 * i] < 0 || pads[2 * i + 1] < 0 || pads[2 * i] > IR_MAX_ELEMENTS ||
            pads[2 * i + 1] > IR_MAX_ELEMENTS)
            return tf_errorf(c, "%s %s must be non-negative", pname, dims_str(pads, np, b, sizeof b));
    }
    *m = nb;
    return true;
}

/* Pads the M spatial dims, then [B,P1/b1,b1,...,PM/bM,bM,R] -> block dims first
 * -> [B*prod(b), P1/b1, ..., PM/bM, rest...]. */
static bool lower_space_to_batch_nd(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t block[IR_MAX_RANK], pads[2 * IR_MAX_RANK];
    int m;
    char a[128];
    if (!need_inputs(c, n_in, 3))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (!block_spec(c, in[1], in[2], "paddings", s, block, pads, &m))
        return false;
    IrParams p;
    memset(&p, 0, sizeof p);
    IrShape padded = *s;
    bool any = false;
    for (int i = 0; i < m; i++) {
        p.i[2 * (i + 1)] = pads[2 * i];
        p.i[2 * (i + 1) + 1] = pads[2 * i + 1];
        any |= pads[2 * i] || pads[2 * i + 1];
        padded.dims[i + 1] += pads[2 * i] + pads[2 * i + 1];
        if (padded.dims[i + 1] % block[i] != 0)
            return tf_errorf(c, "padded dim %d of shape %s (%lld) is not divisible by block %lld", i + 1,
                             shp(s, a, sizeof a), (long long)padded.dims[i + 1], (long long)block[i]);
    }
    IrValue v = any ? ir_emit1(c->g, OP_PAD, in, 1, &p, NULL, c->st) : in[0];
    int64_t rest = 1, nblock = 1;
    for (int d = m + 1; d < s->rank; d++)
        rest *= s->dims[d];
    IrShape split = {2 * m + 2, {0}}, fin = padded;
    int perm[IR_MAX_RANK];
    split.dims[0] = s->dims[0];
    for (int i = 0; i < m; i++) {
        split.dims[1 + 2 * i] = padded.dims[i + 1] / block[i];
        split.dims[2 + 2 * i] = block[i];
        fin.dims[i + 1] = padded.dims[i + 1] / block[i];
        nblock *= block[i];
        perm[i] = 2 + 2 * i;          /* block offsets first */
        perm[m + 1 + i] = 1 + 2 * i;  /* then the reduced spatial dims */
    }
    perm[m] = 0;
    split.dims[2 * m + 1] = rest;
    perm[2 * m + 1] = 2 * m + 1;
    fin.dims[0] = s->dims[0] * nblock;
    if (ok(v))
        v = reshape_to(c, v, &split);
    if (ok(v))
        v = transpose(c, v, perm, 2 * m + 2);
    if (ok(v))
        v = reshape_to(c, v, &fin);
    out[0] = v;
    *n_out = 1;
    return ok(v);
}

/* [b1..bM, B, D1..DM, R] -> [B, D1, b1, ..., DM, bM, R] -> [B, D1*b1, ..., R] -> crop. */
static bool lower_batch_to_space_nd(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t block[IR_MAX_RANK], crops[2 * IR_MAX_RANK];
    int m;
    char a[128], b[128];
    if (!need_inputs(c, n_in, 3))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (!block_spec(c, in[1], in[2], "crops", s, block, crops, &m))
        return false;
    int64_t nblock = 1, rest = 1;
    for (int i = 0; i < m && nblock <= s->dims[0]; i++)
        nblock *= block[i]; /* each block <= IR_MAX_ELEMENTS: no overflow before the check */
    if (nblock > s->dims[0] || s->dims[0] % nblock != 0)
        return tf_errorf(c, "batch %lld of shape %s is not divisible by the block size %lld", (long long)s->dims[0],
                         shp(s, a, sizeof a), (long long)nblock);
    for (int d = m + 1; d < s->rank; d++)
        rest *= s->dims[d];
    IrShape split = {2 * m + 2, {0}}, full = *s, fin = *s;
    int perm[IR_MAX_RANK];
    int64_t begin[IR_MAX_RANK] = {0}, stride[IR_MAX_RANK];
    for (int i = 0; i < m; i++)
        split.dims[i] = block[i];
    split.dims[m] = s->dims[0] / nblock;
    perm[0] = m;
    for (int i = 0; i < m; i++) {
        split.dims[m + 1 + i] = s->dims[i + 1];
        perm[1 + 2 * i] = m + 1 + i;
        perm[2 + 2 * i] = i;
    }
    split.dims[2 * m + 1] = rest;
    perm[2 * m + 1] = 2 * m + 1;
    full.dims[0] = fin.dims[0] = s->dims[0] / nblock;
    bool crop = false;
    for (int d = 0; d < s->rank; d++)
        stride[d] = 1;
    for (int i = 0; i < m; i++) {
        int64_t len = s->dims[i + 1] * block[i];
        full.dims[i + 1] = len;
        if (crops[2 * i] + crops[2 * i + 1] > len)
            return tf_errorf(c, "crops %s exceed dim %d of the result (%lld)", dims_str(crops, 2 * m, b, sizeof b),
                             i + 1, (long long)len);
        fin.dims[i + 1] = len - crops[2 * i] - crops[2 * i + 1];
        begin[i + 1] = fin.dims[i + 1] ? crops[2 * i] : 0;
        crop |= crops[2 * i] || crops[2 * i + 1];
    }
    IrValue v = reshape_to(c, in[0], &split);
    if (ok(v))
        v = transpose(c, v, perm, 2 * m + 2);
    if (ok(v))
        v = reshape_to(c, v, &full);
    if (ok(v) && crop)
        v = slice_of(c, v, begin, stride, &fin);
    out[0] = v;
    *n_out = 1;
    return ok(v);
}

/* ---- one-hot, reverse, invert_permutation -------------------------------- */

/* OneHot = select(indices (expanded at axis) == range(depth) (along axis), on, off). */
static bool lower_one_hot(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t depth, axis64;
    char a[128];
    if (!need_inputs(c, n_in, 4) || !const_int1(c, in[1], "depth", &depth) || !tf_attr_int(c, "axis", &axis64))
        return false;
    const IrType *it = ir_value_type(in[0]);
    const IrShape *s = &it->shape;
    if (depth < 0 || depth > IR_MAX_ELEMENTS)
        return tf_errorf(c, "depth %lld must be non-negative", (long long)depth);
    if (s->rank >= IR_MAX_RANK)
        return tf_errorf(c, "indices shape %s has the maximum rank already", shp(s, a, sizeof a));
    if (axis64 < -1 || axis64 > s->rank)
        return tf_errorf(c, "axis %lld out of range for indices of rank %d", (long long)axis64, s->rank);
    int axis = axis64 == -1 ? s->rank : (int)axis64;
    if (ir_shape_count(&ir_value_type(in[2])->shape) != 1 || ir_shape_count(&ir_value_type(in[3])->shape) != 1)
        return tf_errorf(c, "on_value and off_value must be scalars");
    IrShape e = {0}, r = {0};
    e.rank = r.rank = s->rank + 1;
    for (int i = 0, j = 0; i < e.rank; i++) {
        e.dims[i] = i == axis ? 1 : s->dims[j++];
        r.dims[i] = i == axis ? depth : 1;
    }
    int64_t count;
    IrShape o = *s;
    o.rank = e.rank;
    for (int i = 0, j = 0; i < e.rank; i++)
        o.dims[i] = i == axis ? depth : s->dims[j++];
    if (!ir_shape_count_checked(&o, &count))
        return tf_errorf(c, "result shape %s has too many elements", shp(&o, a, sizeof a));
    if (it->dtype != TCRT_I32 && it->dtype != TCRT_I64 && it->dtype != TCRT_U8)
        return tf_errorf(c, "indices must be int32, int64 or uint8, got %s", tcrt_dtype_name(it->dtype));
    void *buf = arena_alloc(&c->g->arena, (size_t)(depth ? depth : 1) * tcrt_dtype_size(it->dtype));
    if (!buf)
        return st_errorf(c->st, ST_NOMEM, "out of memory");
    for (int64_t k = 0; k < depth; k++) { /* 0..depth-1 in the indices' dtype */
        if (it->dtype == TCRT_I32)
            ((int32_t *)buf)[k] = (int32_t)k;
        else if (it->dtype == TCRT_I64)
            ((int64_t *)buf)[k] = k;
        else
            ((uint8_t *)buf)[k] = (uint8_t)k;
    }
    IrValue range = ir_const(c->g, it->dtype, &r, buf, c->st);
    if (!ok(range))
        return false;
    IrShape scalar = {0, {0}};
    IrValue idx = reshape_to(c, in[0], &e);
    IrValue eq = ok(idx) ? ir_binary(c->g, OP_EQ, idx, range, c->st) : idx;
    IrValue on = reshape_to(c, in[2], &scalar), off = reshape_to(c, in[3], &scalar);
    if (!ok(eq) || !ok(on) || !ok(off))
        return false;
    IrValue sel[3] = {eq, on, off};
    out[0] = ir_emit1(c->g, OP_SELECT, sel, 3, NULL, NULL, c->st);
    *n_out = 1;
    return ok(out[0]);
}

/* ReverseSequence(input, seq_lengths): per batch entry, the first
 * seq_lengths[b] elements along seq_dim reversed (the lengths are read at
 * run time). */
static bool lower_reverse_sequence(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t sd, bd;
    if (!need_inputs(c, n_in, 2) || !tf_attr_int(c, "seq_dim", &sd) || !tf_attr_int(c, "batch_dim", &bd))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (sd < 0 || sd >= s->rank || bd < 0 || bd >= s->rank || sd == bd)
        return tf_errorf(c, "seq_dim %lld and batch_dim %lld must be distinct dims of an input of rank %d",
                         (long long)sd, (long long)bd, s->rank);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = sd;
    p.i[1] = bd;
    out[0] = ir_emit1(c->g, OP_REVERSE_SEQ, in, 2, &p, NULL, c->st);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_reverse_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t axes[IR_MAX_RANK + 1];
    int n = 0;
    if (!need_inputs(c, n_in, 2) || !tf_const_ints(c, in[1], "axis", axes, IR_MAX_RANK + 1, &n))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    int64_t begin[IR_MAX_RANK] = {0}, stride[IR_MAX_RANK];
    bool any = false, seen[IR_MAX_RANK] = {false};
    for (int d = 0; d < s->rank; d++)
        stride[d] = 1;
    for (int i = 0; i < n; i++) {
        int d;
        if (!norm_axis(c, "axis", axes[i], s->rank, &d))
            return false;
        if (seen[d])
            return tf_errorf(c, "axis %d is reversed twice", d);
        seen[d] = true;
        if (s->dims[d] > 1) {
            begin[d] = s->dims[d] - 1;
            stride[d] = -1;
            any = true;
        }
    }
    out[0] = any ? slice_of(c, in[0], begin, stride, s) : in[0];
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_invert_permutation(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    enum { MAXP = 4096 };
    int64_t x[MAXP], y[MAXP];
    int n = 0;
    if (!need_inputs(c, n_in, 1) || !tf_const_ints(c, in[0], "x", x, MAXP, &n))
        return false;
    for (int i = 0; i < n; i++)
        y[i] = -1;
    for (int i = 0; i < n; i++) {
        if (x[i] < 0 || x[i] >= n || y[x[i]] != -1)
            return tf_errorf(c, "x is not a permutation of 0..%d", n - 1);
        y[x[i]] = i;
    }
    out[0] = ir_const_i64s(c->g, ir_value_type(in[0])->dtype, y, n, c->st);
    *n_out = 1;
    return ok(out[0]);
}

/* ---- top-k -------------------------------------------------------------- */

static bool lower_topk_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t k;
    bool sorted;
    tcrt_dtype it;
    char a[128];
    IrAff ke = ir_aff_const(0);
    if (!need_inputs(c, n_in, 2) || !tf_attr_bool(c, "sorted", &sorted) || !tf_attr_type(c, "index_type", &it))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (s->rank < 1)
        return tf_errorf(c, "input must have rank >= 1");
    if (!ir_is_const(in[1])) { /* k known at run time (ir/dyn.c) */
        if (!dyn_elem(c, in[1], 0, &ke))
            return false;
    } else if (!const_int1(c, in[1], "k", &k)) {
        return false;
    }
    IrType given = {ir_value_type(in[0])->dtype, *s};
    bool dyn_k = !ir_is_const(in[1]) && !ir_aff_is_const(&ke);
    if (!ir_is_const(in[1]) && ir_aff_is_const(&ke))
        k = ke.c;
    if (dyn_k) {
        int64_t lo, hi;
        ir_aff_range(c->g, &ke, &lo, &hi);
        k = hi < s->dims[s->rank - 1] ? hi : s->dims[s->rank - 1];
        if (!dyn_extent(c, &given.shape, s->rank - 1, &ke))
            return false;
    }
    if (k < 0 || k > s->dims[s->rank - 1])
        return tf_errorf(c, "k %lld out of range for last dim of shape %s", (long long)k, shp(s, a, sizeof a));
    if (it != TCRT_I32 && it != TCRT_I64)
        return tf_errorf(c, "index_type must be int32 or int64, got %s", tcrt_dtype_name(it));
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_TOPK_K] = k;
    p.i[TCRT_TOPK_SORTED] = sorted;
    IrNode *n = ir_emit(c->g, OP_TOPK, in, 1, &p, dyn_k ? &given : NULL, c->st);
    if (!n)
        return false;
    out[0] = (IrValue){n, 0};
    out[1] = (IrValue){n, 1};
    if (it == TCRT_I64 && !ok(out[1] = ir_cast(c->g, out[1], TCRT_I64, c->st)))
        return false;
    *n_out = 2;
    return true;
}

/* ---- the table ---------------------------------------------------------- */

const TfOpRow tf_ops_array[] = {
    {"Identity", lower_identity, "", "(none)"},
    {"IdentityN", lower_identity_n, "", "(none)"},
    {"StopGradient", lower_stop_gradient, "", "copy (a gradient stop)"},
    {"Snapshot", lower_identity, "", "(none)"},
    {"PreventGradient", lower_stop_gradient, "", "copy (a gradient stop)"},
    {"NoOp", lower_noop, "", "(none)"},
    {"Reshape", lower_reshape, "Tshape=DT_INT32", "copy"},
    {"Squeeze", lower_squeeze, "squeeze_dims=[]", "copy"},
    {"ExpandDims", lower_expand_dims, "Tdim=DT_INT32", "copy"},
    {"Shape", lower_shape, "out_type=DT_INT32", "const"},
    {"ShapeN", lower_shape_n, "out_type=DT_INT32", "const"},
    {"Size", lower_size, "out_type=DT_INT32", "const"},
    {"Rank", lower_rank, "", "const"},
    {"Fill", lower_fill, "index_type=DT_INT32", "broadcast"},
    {"ZerosLike", lower_zeros_like, "", "const + broadcast"},
    {"OnesLike", lower_ones_like, "", "const + broadcast"},
    {"Range", lower_range, "Tidx=DT_INT32", "range"},
    {"Pack", lower_pack, "axis=0", "copy + concat"},
    {"Unpack", lower_unpack, "axis=0", "slice + copy"},
    {"Concat", lower_concat, "", "concat"},
    {"ConcatV2", lower_concat_v2, "Tidx=DT_INT32", "concat"},
    {"Split", lower_split, "", "slice"},
    {"SplitV", lower_split_v, "Tlen=DT_INT64", "slice"},
    {"Slice", lower_slice, "", "slice"},
    {"StridedSlice", lower_strided_slice,
     "begin_mask=0;end_mask=0;ellipsis_mask=0;new_axis_mask=0;shrink_axis_mask=0", "slice + copy"},
    {"Transpose", lower_transpose, "Tperm=DT_INT32", "transpose"},
    {"Pad", lower_pad, "Tpaddings=DT_INT32", "pad"},
    {"PadV2", lower_pad_v2, "Tpaddings=DT_INT32", "pad"},
    {"MirrorPad", lower_mirror_pad, "Tpaddings=DT_INT32", "pad"},
    {"Tile", lower_tile, "Tmultiples=DT_INT32", "tile"},
    {"BroadcastTo", lower_broadcast_to, "Tidx=DT_INT32", "broadcast"},
    {"GatherV2", lower_gather_v2, "batch_dims=0", "gather"},
    {"Gather", lower_gather, "validate_indices=true", "gather"},
    {"GatherNd", lower_gather_nd, "", "gather_nd"},
    {"Sum", lower_sum, "keep_dims=false;Tidx=DT_INT32", "reduce_sum"},
    {"Mean", lower_mean, "keep_dims=false;Tidx=DT_INT32", "reduce_sum + div"},
    {"Max", lower_max, "keep_dims=false;Tidx=DT_INT32", "reduce_max"},
    {"Min", lower_min, "keep_dims=false;Tidx=DT_INT32", "reduce_min"},
    {"Prod", lower_prod, "keep_dims=false;Tidx=DT_INT32", "reduce_prod"},
    {"All", lower_all, "keep_dims=false;Tidx=DT_INT32", "cast + reduce_min + cast"},
    {"Any", lower_any, "keep_dims=false;Tidx=DT_INT32", "cast + reduce_max + cast"},
    {"ArgMax", lower_argmax, "Tidx=DT_INT32;output_type=DT_INT64", "argmax"},
    {"ArgMin", lower_argmin, "Tidx=DT_INT32;output_type=DT_INT64", "argmin"},
    {"ResizeBilinear", lower_resize_bilinear, "align_corners=false;half_pixel_centers=false", "resize"},
    {"ResizeNearestNeighbor", lower_resize_nearest, "align_corners=false;half_pixel_centers=false", "resize"},
    {"DepthToSpace", lower_depth_to_space, "data_format=NHWC", "copy + transpose + copy"},
    {"SpaceToDepth", lower_space_to_depth, "data_format=NHWC", "copy + transpose + copy"},
    {"SpaceToBatchND", lower_space_to_batch_nd, "Tblock_shape=DT_INT32;Tpaddings=DT_INT32", "pad + copy + transpose + copy"},
    {"BatchToSpaceND", lower_batch_to_space_nd, "Tblock_shape=DT_INT32;Tcrops=DT_INT32", "copy + transpose + copy + slice"},
    {"OneHot", lower_one_hot, "axis=-1;TI=DT_INT64", "eq + select"},
    {"ReverseV2", lower_reverse_v2, "Tidx=DT_INT32", "slice"},
    {"ReverseSequence", lower_reverse_sequence, "batch_dim=0;Tlen=DT_INT64", "reverse_seq"},
    {"InvertPermutation", lower_invert_permutation, "T=DT_INT32", "const"},
    {"TopKV2", lower_topk_v2, "sorted=true;Tk=DT_INT32;index_type=DT_INT32", "topk"},
    {NULL, NULL, NULL, NULL},
};
