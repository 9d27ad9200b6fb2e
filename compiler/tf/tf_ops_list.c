/* compiler/tf/tf_ops_list.c - TensorArray (V3, and the V2 names) and
 * TensorList ops lowered to plain buffer tensors, NonMaxSuppression (V1-V5)
 * to the nms primitive, and Where.
 *
 * Arrays as buffers.  A TensorArray or TensorList of n elements of shape E
 * and dtype T is one IR value of type T[n, E...]: the "buffer".  Every op
 * that changes an array returns a new buffer (functional updates), so
 * arrays need no state and flow through loops as ordinary loop variables:
 *   - TensorArrayV3 returns the buffer as its flow output; its handle
 *     output is a zero-byte constant T[n, 0] that only tells dtype and size
 *     (so passing it into a loop costs nothing).  The reading and writing
 *     ops take their data from the FLOW input (TensorArrayV2 has no flow
 *     output: its handle is the buffer, and V2 graphs start the flow from a
 *     scalar Const, which means "the handle's data"), and return the
 *     updated buffer as their flow output.  TF v1 graphs thread the flow
 *     through Enter/Merge/NextIteration like any tensor, so the v1
 *     control-flow lowering makes it a loop variable.  Note that the flow's
 *     IR dtype is the element dtype (TF calls it a float scalar) and that
 *     handles and lists are DT_RESOURCE/DT_VARIANT in TF: control-flow
 *     lowerings pass them on as the IR values they are.
 *   - A TensorList value (TF's variant handle) is the buffer itself.
 *   - write / SetItem = UPDATE_SLICE at start [index, 0, ...] (the index may
 *     be a run-time scalar: reshaped to [1] and concatenated with zeros);
 *     read / GetItem = GATHER on axis 0 with the scalar index; gather =
 *     GATHER with the index vector; scatter with constant indices = one
 *     GATHER from concat(buffer, value) with a constant row map (the value
 *     itself for indices 0..n-1 in order; run-time indices: one update per
 *     row); size / length / element shape = constants; concat = reshape to
 *     [n*d0, ...] plus a constant lengths vector; split (equal lengths) =
 *     reshape to [n, len, ...].
 *   - Sizes must be compile-time constants (TensorArray size, TensorList
 *     num_elements); dynamic_size=true arrays and lists that grow or shrink
 *     (EmptyTensorList, PushBack, PopBack, Resize) are errors naming the
 *     node: static shapes cannot express them.
 *
 * The pending convention.  When the element shape is not known where the
 * array is created (no element_shape attr; a -1 element_shape input), the
 * creating op returns a PENDING marker instead of a buffer: a zero-element
 * CONST of type T[n, 0] whose IrNode has origin_op = the creating TF op
 * ("TensorArrayV3", "TensorListReserve", ...) and p.i[0] == PENDING_MAGIC
 * (no other CONST has a nonzero p).  The first op that writes the whole
 * element shape into it (TensorArrayWriteV3 / ScatterV3 / SplitV3,
 * TensorListSetItem / ScatterIntoExistingList) materializes the buffer
 * zeros T[n, shape of the written element] and writes into that.  Ops that
 * only read it use their own element_shape attr/input when it is known
 * (zeros, as TensorFlow returns for unwritten list items), else fail.
 * Inside a loop or conditional the marker enters the region as a parameter
 * of type T[n, 0] (a region parameter's type is fixed at entry), marked
 * TF_PENDING_ARRAY with the creating node's name (tf_mark_pending_param): a
 * write there records the element shape (tf_state_elem_learn) and fails,
 * and tf_import imports again, array_new then making zeros of the learnt
 * shape (tf_state_elem_hint).  A write into an unmarked [n, 0] parameter
 * stays an error naming the node.
 *
 * NonMaxSuppression: max_output_size, iou_threshold, score_threshold and
 * soft_nms_sigma must be compile-time constants; soft NMS (sigma > 0) is
 * not supported.  With pad_to_max_output_size=true (V4/V5) the outputs
 * have the static size max_output_size.  Otherwise (V1-V3, or pad=false)
 * their size depends on the data: folded when boxes and scores are
 * constants, else an error naming the node.  Where (one input) likewise
 * folds a constant input and rejects a run-time one; Where with three
 * inputs is SelectV2.
 *
 * Invariants: a lowering writes every output and returns true, or records
 * one error (tf_errorf or the IR builder's) and returns false; a pending
 * marker is never written into (only replaced by a materialized buffer).
 */
#include <float.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compiler/tf/tf_int.h"

#define PENDING_MAGIC TF_PENDING_MAGIC /* "pend": p.i[0] of a pending marker (tf_int.h) */
#define ZERO_CONST_MAX ((int64_t)65536) /* bigger zero buffers are broadcast at run time */
#define MAX_RUNTIME_SCATTER 4096        /* rows of a scatter with run-time indices */

static const IrValue NONE = {NULL, 0};

/* ---- small helpers ------------------------------------------------------ */

static bool ok(IrValue v)
{
    return v.node != NULL;
}

/* tf_errorf for functions returning a value: records and returns NONE. */
static IrValue fail(TfCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static IrValue fail(TfCtx *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tf_errorf(c, "%s", msg);
    return NONE;
}

static const char *shp(const IrShape *s, char *buf, size_t n)
{
    return ir_shape_str(s, buf, n);
}

static bool need_inputs(TfCtx *c, int n_in, int want)
{
    if (n_in < want)
        return tf_errorf(c, "expected %d inputs, got %d", want, n_in);
    return true;
}

static bool is_int(tcrt_dtype dt)
{
    return dt == TCRT_I32 || dt == TCRT_I64 || dt == TCRT_I16 || dt == TCRT_I8 || dt == TCRT_U8 ||
           dt == TCRT_U16;
}

/* A constant integer scalar (or one-element) input; `what` names it. */
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
    if (!v.node || !ir_is_const(v))
        return tf_errorf(c, "%s must be a compile-time constant", what);
    if (ir_shape_count(&ir_value_type(v)->shape) != 1 || !ir_const_scalar(v, out))
        return tf_errorf(c, "%s must be a scalar", what);
    return true;
}

static IrShape shape1(int64_t d)
{
    IrShape s = {1, {d}};
    return s;
}

static IrValue reshape_to(TfCtx *c, IrValue x, const IrShape *to)
{
    if (!ok(x) || ir_shape_eq(&ir_value_type(x)->shape, to))
        return x;
    return ir_reshape(c->g, x, to, c->st);
}

static IrValue gather0(TfCtx *c, IrValue params, IrValue indices)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_GA_AXIS] = 0;
    IrValue ins[2] = {params, indices};
    return ir_emit1(c->g, OP_GATHER, ins, 2, &p, NULL, c->st);
}

static IrValue concat0(TfCtx *c, IrValue a, IrValue b)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CAT_AXIS] = 0;
    IrValue ins[2] = {a, b};
    return ir_emit1(c->g, OP_CONCAT, ins, 2, &p, NULL, c->st);
}

/* Zeros of dtype dt and shape s: a constant when small, else a scalar zero
 * broadcast at run time (not folded: a big zero constant would only bloat
 * the weights). */
static IrValue zeros(TfCtx *c, tcrt_dtype dt, const IrShape *s)
{
    char a[128];
    int64_t count;
    if (!ir_shape_count_checked(s, &count))
        return fail(c, "array shape %s has too many elements", shp(s, a, sizeof a));
    if (count * (int64_t)tcrt_dtype_size(dt) <= ZERO_CONST_MAX)
        return ir_const(c->g, dt, s, NULL, c->st);
    IrValue z = ir_const_scalar_f(c->g, dt, 0, c->st);
    if (!ok(z))
        return z;
    IrType t = {dt, *s};
    bool fold = c->g->fold_on_build;
    c->g->fold_on_build = false;
    IrValue v = ir_emit1(c->g, OP_BROADCAST, &z, 1, NULL, &t, c->st);
    c->g->fold_on_build = fold;
    return v;
}

/* ---- element shapes from attrs and inputs ------------------------------- */

/* The shape attr `name` of the node: *known is false when it is absent, of
 * unknown rank or has a -1 dim (s then holds -1 for the unknown dims, or
 * rank -1 for an unknown rank). */
static bool shape_attr(TfCtx *c, const char *name, IrShape *s, bool *known)
{
    *known = false;
    s->rank = -1;
    const Tensorflow__NodeDef *nd = c->nd;
    for (size_t i = 0; nd && i < nd->n_attr; i++) {
        const Tensorflow__NodeDef__AttrEntry *e = nd->attr[i];
        if (!e || !e->key || strcmp(e->key, name) != 0 || !e->value)
            continue;
        if (e->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_SHAPE)
            return tf_errorf(c, "attribute '%s' must be a shape", name);
        const Tensorflow__TensorShapeProto *sp = e->value->shape;
        if (!sp || sp->unknown_rank)
            return true;
        if (sp->n_dim > IR_MAX_RANK - 1)
            return tf_errorf(c, "attribute '%s' has rank %zu; array elements may have at most %d dims", name,
                             sp->n_dim, IR_MAX_RANK - 1);
        s->rank = (int)sp->n_dim;
        *known = true;
        for (size_t d = 0; d < sp->n_dim; d++) {
            s->dims[d] = sp->dim[d] ? sp->dim[d]->size : -1;
            if (s->dims[d] < 0) {
                s->dims[d] = -1;
                *known = false;
            }
        }
        return true;
    }
    return true;
}

/* A TensorList element_shape input: a constant int vector (-1 = unknown
 * dim) or the scalar -1 (unknown rank).  A run-time value is unknown too. */
static bool shape_input(TfCtx *c, IrValue v, IrShape *s, bool *known)
{
    *known = false;
    s->rank = -1;
    if (!v.node || !ir_is_const(v))
        return true;
    const IrType *t = ir_value_type(v);
    char a[128];
    if (!is_int(t->dtype))
        return tf_errorf(c, "element_shape must be an integer tensor, not %s", tcrt_dtype_name(t->dtype));
    int64_t dims[IR_MAX_RANK];
    int n = 0;
    if (t->shape.rank == 0) {
        if (!ir_const_ints(v, dims, 1, &n) || dims[0] != -1)
            return tf_errorf(c, "element_shape is a scalar other than -1");
        return true;
    }
    if (t->shape.rank != 1 || t->shape.dims[0] > IR_MAX_RANK - 1)
        return tf_errorf(c, "element_shape has shape %s; array elements may have at most %d dims",
                         shp(&t->shape, a, sizeof a), IR_MAX_RANK - 1);
    if (!ir_const_ints(v, dims, IR_MAX_RANK, &n))
        return tf_errorf(c, "element_shape could not be read");
    s->rank = n;
    *known = true;
    for (int d = 0; d < n; d++) {
        s->dims[d] = dims[d] < 0 ? -1 : dims[d];
        if (dims[d] < 0)
            *known = false;
    }
    return true;
}

/* Does the (possibly partial) shape `want` admit `have`? */
static bool shape_admits(const IrShape *want, const IrShape *have)
{
    if (want->rank < 0)
        return true;
    if (want->rank != have->rank)
        return false;
    for (int d = 0; d < want->rank; d++)
        if (want->dims[d] >= 0 && want->dims[d] != have->dims[d])
            return false;
    return true;
}

/* Formats a partial shape ("[-1,3]", "<unknown>"). */
static const char *pshape(const IrShape *s, char *buf, size_t n)
{
    if (s->rank < 0) {
        snprintf(buf, n, "<unknown rank>");
        return buf;
    }
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < s->rank && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)s->dims[d]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

/* ---- buffers and the pending marker -------------------------------------- */

static IrValue pending_new(TfCtx *c, tcrt_dtype dt, int64_t size)
{
    IrShape s = {2, {size, 0}};
    IrValue v = ir_const(c->g, dt, &s, NULL, c->st);
    if (ok(v))
        v.node->p.i[0] = PENDING_MAGIC;
    return v;
}

static bool is_pending(IrValue v)
{
    const IrNode *n = v.node;
    if (!n || n->op != OP_CONST || n->p.i[0] != PENDING_MAGIC || !n->origin_op)
        return false;
    const IrShape *s = &n->out[0].type.shape;
    return s->rank == 2 && s->dims[1] == 0;
}

/* A new array of `size` elements: zeros when the element shape is known,
 * else the pending marker. */
static IrValue array_new(TfCtx *c, tcrt_dtype dt, int64_t size, const IrShape *elem, bool known)
{
    char a[128];
    if (size < 0)
        return fail(c, "array size %lld is negative", (long long)size);
    IrShape learnt = {0};
    if (!known && c->nd && c->nd->name && tf_state_elem_hint(c, c->nd->name, &learnt)) {
        elem = &learnt; /* written inside a loop or conditional (an earlier import attempt) */
        known = true;
    }
    if (!known)
        return pending_new(c, dt, size);
    IrShape s = {0};
    s.rank = elem->rank + 1;
    s.dims[0] = size;
    for (int d = 0; d < elem->rank; d++)
        s.dims[d + 1] = elem->dims[d];
    int64_t count;
    if (!ir_shape_count_checked(&s, &count))
        return fail(c, "array shape %s has too many elements", shp(&s, a, sizeof a));
    return zeros(c, dt, &s);
}

static int64_t array_size(IrValue buf)
{
    return ir_value_type(buf)->shape.dims[0];
}

static IrShape elem_of(IrValue buf)
{
    const IrShape *s = &ir_value_type(buf)->shape;
    IrShape e = {0};
    e.rank = s->rank - 1;
    for (int d = 1; d < s->rank; d++)
        e.dims[d - 1] = s->dims[d];
    return e;
}

/* The array a TensorArray op works on: its flow input, or (V2 graphs, whose
 * flow is a scalar Const) its handle. */
static bool ta_data(TfCtx *c, IrValue handle, IrValue flow, IrValue *buf)
{
    *buf = flow.node && ir_value_type(flow)->shape.rank >= 1 ? flow : handle;
    if (!buf->node || ir_value_type(*buf)->shape.rank < 1)
        return tf_errorf(c, "the TensorArray handle and flow are not an array made by TensorArrayV3 "
                            "(got a scalar)");
    return true;
}

/* A TensorList input: a buffer of rank >= 1. */
static bool list_data(TfCtx *c, IrValue v, IrValue *buf)
{
    *buf = v;
    char a[128];
    if (!v.node || ir_value_type(v)->shape.rank < 1)
        return tf_errorf(c, "input 0 is not a TensorList made by TensorListReserve/FromTensor (got %s)",
                         v.node ? shp(&ir_value_type(v)->shape, a, sizeof a) : "nothing");
    return true;
}

/* The dtype attr `name` (when the node has it) must be the array's. */
static bool check_dtype_attr(TfCtx *c, const char *name, IrValue buf)
{
    if (!tf_attr_has(c, name))
        return true;
    tcrt_dtype dt;
    if (!tf_attr_type(c, name, &dt))
        return false;
    if (dt != ir_value_type(buf)->dtype)
        return tf_errorf(c, "%s is %s but the array holds %s", name, tcrt_dtype_name(dt),
                         tcrt_dtype_name(ir_value_type(buf)->dtype));
    return true;
}

/* buf, or when buf is the pending marker, zeros [n, elem] of its dtype. */
static IrValue materialize(TfCtx *c, IrValue buf, const IrShape *elem)
{
    if (!is_pending(buf))
        return buf;
    if (elem->rank > IR_MAX_RANK - 1)
        return fail(c, "array elements may have at most %d dims, got %d", IR_MAX_RANK - 1, elem->rank);
    return array_new(c, ir_value_type(buf)->dtype, array_size(buf), elem, true);
}

/* An element of shape vs and dtype dt may go into buf. */
static bool check_elem(TfCtx *c, IrValue buf, const IrShape *vs, tcrt_dtype dt)
{
    char a[128], b[128];
    const IrType *t = ir_value_type(buf);
    if (dt != t->dtype)
        return tf_errorf(c, "value dtype %s differs from the array's %s", tcrt_dtype_name(dt),
                         tcrt_dtype_name(t->dtype));
    IrShape e = elem_of(buf);
    if (ir_shape_eq(&e, vs))
        return true;
    if (e.rank == 1 && e.dims[0] == 0 && buf.node->op == OP_ARG && c->g->parent &&
        buf.node->origin_op && !strcmp(buf.node->origin_op, TF_PENDING_ARRAY))
        tf_state_elem_learn(c, buf.node->origin, vs); /* the next import attempt creates it so */
    if (e.rank == 1 && e.dims[0] == 0 && buf.node->op == OP_ARG && c->g->parent)
        return tf_errorf(c,
                         "cannot write a %s element here: the array's element shape was not known where it "
                         "was created (no static element_shape), and inside a loop or conditional the "
                         "array's type is fixed where the region starts; give the TensorArray/TensorList "
                         "a static element_shape",
                         shp(vs, a, sizeof a));
    return tf_errorf(c, "value element shape %s does not match the array's element shape %s",
                     shp(vs, a, sizeof a), shp(&e, b, sizeof b));
}

/* The array to read from: buf, which the requested (possibly partial)
 * element shape must admit; a pending buffer becomes zeros of the requested
 * shape when that is fully known, else it is an error. */
static IrValue readable(TfCtx *c, IrValue buf, const IrShape *elem, bool known)
{
    char a[128], b[128];
    if (!is_pending(buf)) {
        /* a region parameter of [n, 0] elements is (almost surely) a pending
         * array that entered a loop or branch: only an element_shape of
         * exactly [0] says otherwise */
        IrShape e = elem_of(buf);
        bool unresolved = e.rank == 1 && e.dims[0] == 0 && buf.node->op == OP_ARG && c->g->parent &&
                          !(known && ir_shape_eq(elem, &e));
        if (shape_admits(elem, &e) && !unresolved)
            return buf;
        if (unresolved)
            return fail(c, "the array's element shape was not known where it was created (no static "
                           "element_shape), so inside a loop or conditional it has no elements to read; give "
                           "the TensorArray/TensorList a static element_shape");
        return fail(c, "element_shape %s does not admit the array's element shape %s",
                    pshape(elem, a, sizeof a), shp(&e, b, sizeof b));
    }
    if (!known)
        return fail(c,
                    "the array is read before anything was written to it, and its element shape %s is "
                    "not known at compile time",
                    pshape(elem, a, sizeof a));
    return materialize(c, buf, elem);
}

/* ---- element access ------------------------------------------------------ */

/* An index input: an integer scalar, range-checked when constant. */
static bool check_index(TfCtx *c, IrValue index, int64_t n, const char *what)
{
    const IrType *t = ir_value_type(index);
    char a[128];
    if (!is_int(t->dtype) || ir_shape_count(&t->shape) != 1 || t->shape.rank > 1)
        return tf_errorf(c, "%s must be an integer scalar, got %s%s", what, tcrt_dtype_name(t->dtype),
                         shp(&t->shape, a, sizeof a));
    int64_t i;
    int cnt;
    if (ir_is_const(index) && ir_const_ints(index, &i, 1, &cnt) && (i < 0 || i >= n))
        return tf_errorf(c, "%s %lld out of range for an array of size %lld", what, (long long)i,
                         (long long)n);
    return true;
}

/* buf with element `index` (a run-time or constant scalar) set to value. */
static IrValue write_row(TfCtx *c, IrValue buf, IrValue index, IrValue value)
{
    if (!check_index(c, index, array_size(buf), "index"))
        return NONE;
    IrShape e = elem_of(buf);
    IrShape one = shape1(1);
    IrValue idx = reshape_to(c, index, &one);
    tcrt_dtype it = ir_value_type(index)->dtype;
    if (it != TCRT_I32 && it != TCRT_I64)
        idx = ir_cast(c->g, idx, TCRT_I32, c->st);
    IrValue start = idx;
    if (ok(idx) && e.rank > 0) {
        IrShape zs = shape1(e.rank);
        IrValue z = ir_const(c->g, ir_value_type(idx)->dtype, &zs, NULL, c->st);
        start = ok(z) ? concat0(c, idx, z) : z;
    }
    IrShape us = {0};
    us.rank = e.rank + 1;
    us.dims[0] = 1;
    for (int d = 0; d < e.rank; d++)
        us.dims[d + 1] = e.dims[d];
    IrValue upd = reshape_to(c, value, &us);
    if (!ok(start) || !ok(upd))
        return NONE;
    IrValue ins[3] = {buf, upd, start};
    return ir_emit1(c->g, OP_UPDATE_SLICE, ins, 3, NULL, NULL, c->st);
}

/* Element `index` of buf. */
static IrValue read_row(TfCtx *c, IrValue buf, IrValue index)
{
    if (!check_index(c, index, array_size(buf), "index"))
        return NONE;
    IrShape scalar = {0, {0}};
    IrValue idx = reshape_to(c, index, &scalar);
    tcrt_dtype it = ir_value_type(index)->dtype;
    if (it != TCRT_I32 && it != TCRT_I64)
        idx = ir_cast(c->g, idx, TCRT_I32, c->st);
    return ok(idx) ? gather0(c, buf, idx) : idx;
}

/* Elements `indices` (a vector) of buf. */
static IrValue gather_rows(TfCtx *c, IrValue buf, IrValue indices)
{
    const IrType *t = ir_value_type(indices);
    char a[128];
    if ((t->dtype != TCRT_I32 && t->dtype != TCRT_I64) || t->shape.rank != 1)
        return fail(c, "indices must be an int32/int64 vector, got %s%s", tcrt_dtype_name(t->dtype),
                    shp(&t->shape, a, sizeof a));
    if (ir_is_const(indices)) {
        int64_t n = array_size(buf), k = t->shape.dims[0];
        const void *d = indices.node->data;
        for (int64_t i = 0; i < k; i++) {
            int64_t v = t->dtype == TCRT_I32 ? ((const int32_t *)d)[i] : ((const int64_t *)d)[i];
            if (v < 0 || v >= n)
                return fail(c, "indices[%lld] = %lld out of range for an array of size %lld", (long long)i,
                            (long long)v, (long long)n);
        }
    }
    return gather0(c, buf, indices);
}

/* buf with rows indices[i] set to value[i].  Duplicate constant indices are
 * an error for TensorArrays (write-once) and last-wins for TensorLists. */
static IrValue scatter_rows(TfCtx *c, IrValue buf, IrValue indices, IrValue value, bool allow_dup)
{
    char a[128], b[128];
    const IrType *vt = ir_value_type(value), *it = ir_value_type(indices);
    if (vt->shape.rank < 1)
        return fail(c, "value must have rank >= 1 (one row per index), got %s", shp(&vt->shape, a, sizeof a));
    IrShape elem = {0};
    elem.rank = vt->shape.rank - 1;
    for (int d = 1; d < vt->shape.rank; d++)
        elem.dims[d - 1] = vt->shape.dims[d];
    buf = materialize(c, buf, &elem);
    if (!ok(buf) || !check_elem(c, buf, &elem, vt->dtype))
        return NONE;
    int64_t n = array_size(buf), k = vt->shape.dims[0];
    if ((it->dtype != TCRT_I32 && it->dtype != TCRT_I64) || it->shape.rank != 1 || it->shape.dims[0] != k)
        return fail(c, "indices must be an int32/int64 vector of %lld (the value's rows), got %s%s",
                    (long long)k, tcrt_dtype_name(it->dtype), shp(&it->shape, b, sizeof b));
    if (!ir_is_const(indices)) {
        /* run-time indices: one update per row, in order (the last write wins) */
        if (k > MAX_RUNTIME_SCATTER)
            return fail(c, "scatter of %lld rows with run-time indices (at most %d supported)", (long long)k,
                        MAX_RUNTIME_SCATTER);
        for (int64_t i = 0; i < k && ok(buf); i++) {
            IrValue ci = ir_const_scalar_f(c->g, TCRT_I32, (double)i, c->st);
            IrValue ii = ok(ci) ? gather0(c, indices, ci) : ci;
            IrValue row = ok(ci) ? gather0(c, value, ci) : ci;
            buf = ok(ii) && ok(row) ? write_row(c, buf, ii, row) : NONE;
        }
        return buf;
    }
    /* constant indices: out[j] = j untouched ? buf[j] : value[i] where indices[i] = j */
    int32_t *map = xx_malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    if (!map) {
        st_errorf(c->st, ST_NOMEM, "out of memory");
        return NONE;
    }
    for (int64_t j = 0; j < n; j++)
        map[j] = -1;
    bool in_order = k == n;
    const void *d = indices.node->data;
    for (int64_t i = 0; i < k; i++) {
        int64_t v = it->dtype == TCRT_I32 ? ((const int32_t *)d)[i] : ((const int64_t *)d)[i];
        if (v < 0 || v >= n) {
            xx_free(map);
            tf_errorf(c, "indices[%lld] = %lld out of range for an array of size %lld", (long long)i,
                      (long long)v, (long long)n);
            return NONE;
        }
        if (map[v] >= 0 && !allow_dup) {
            xx_free(map);
            tf_errorf(c,
                      "indices[%lld] = %lld writes element %lld a second time (TensorArray elements are "
                      "written once)",
                      (long long)i, (long long)v, (long long)v);
            return NONE;
        }
        map[v] = (int32_t)i;
        in_order &= v == i;
    }
    if (in_order) {
        xx_free(map);
        return value; /* every element written, in order */
    }
    bool all = true;
    for (int64_t j = 0; j < n; j++)
        all &= map[j] >= 0;
    int64_t *rows = xx_malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    if (!rows) {
        xx_free(map);
        st_errorf(c->st, ST_NOMEM, "out of memory");
        return NONE;
    }
    /* all rows from value: gather value; else gather concat(buf, value) */
    for (int64_t j = 0; j < n; j++)
        rows[j] = map[j] < 0 ? j : (all ? 0 : n) + map[j];
    xx_free(map);
    IrValue src = all ? value : concat0(c, buf, value);
    IrValue ix = ir_const_i64s(c->g, TCRT_I32, rows, (int)n, c->st);
    xx_free(rows);
    if (!ok(src) || !ok(ix))
        return NONE;
    return gather0(c, src, ix);
}

/* Concatenation of the elements along their first dim, and their lengths. */
static bool concat_out(TfCtx *c, IrValue buf, IrValue *out, int *n_out)
{
    char a[128];
    const IrShape *s = &ir_value_type(buf)->shape;
    if (s->rank < 2)
        return tf_errorf(c, "array elements are scalars (array %s); concatenation needs rank >= 1",
                         shp(s, a, sizeof a));
    int64_t n = s->dims[0], d0 = s->dims[1];
    IrShape to = *s;
    to.rank = s->rank - 1;
    to.dims[0] = n * d0;
    for (int d = 1; d < to.rank; d++)
        to.dims[d] = s->dims[d + 1];
    out[0] = reshape_to(c, buf, &to);
    IrShape ls = shape1(n);
    out[1] = ir_const(c->g, TCRT_I64, &ls, NULL, c->st);
    if (!ok(out[0]) || !ok(out[1]))
        return false;
    for (int64_t i = 0; i < n; i++)
        ((int64_t *)out[1].node->data)[i] = d0;
    *n_out = 2;
    return true;
}

/* value split along dim 0 into pieces of `lengths` (all equal): the buffer
 * [n, len, ...].  n_want >= 0: the array's size, which n must equal. */
static IrValue split_rows(TfCtx *c, IrValue value, IrValue lengths, int64_t n_want)
{
    char a[128];
    const IrShape *vs = &ir_value_type(value)->shape;
    if (vs->rank < 1 || vs->rank > IR_MAX_RANK - 1)
        return fail(c, "value of shape %s cannot be split into array elements", shp(vs, a, sizeof a));
    if (!ir_is_const(lengths))
        return fail(c, "lengths must be a compile-time constant (elements of different run-time sizes "
                       "are not supported)");
    const IrType *lt = ir_value_type(lengths);
    if ((lt->dtype != TCRT_I32 && lt->dtype != TCRT_I64) || lt->shape.rank != 1)
        return fail(c, "lengths must be an int32/int64 vector");
    int64_t n = lt->shape.dims[0];
    if (n_want >= 0 && n != n_want)
        return fail(c, "lengths has %lld entries but the array has %lld elements", (long long)n,
                    (long long)n_want);
    int64_t len = 0, total = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = lt->dtype == TCRT_I64 ? ((const int64_t *)lengths.node->data)[i]
                                          : (int64_t)((const int32_t *)lengths.node->data)[i];
        if (v < 0 || v > vs->dims[0])
            return fail(c, "lengths[%lld] = %lld out of range for a value of %lld rows", (long long)i,
                        (long long)v, (long long)vs->dims[0]);
        if (i > 0 && v != len)
            return fail(c, "lengths differ (%lld and %lld): elements of different sizes are not supported",
                        (long long)len, (long long)v);
        len = v;
        total += v;
        if (total > vs->dims[0])
            break;
    }
    if (total != vs->dims[0])
        return fail(c, "lengths sum to %lld but the value has %lld rows", (long long)total,
                    (long long)vs->dims[0]);
    IrShape to = {0};
    to.rank = vs->rank + 1;
    to.dims[0] = n;
    to.dims[1] = len;
    for (int d = 1; d < vs->rank; d++)
        to.dims[d + 1] = vs->dims[d];
    if (n == 0) /* no elements: an empty [0, 0, ...] buffer */
        return ir_const(c->g, ir_value_type(value)->dtype, &to, NULL, c->st);
    return reshape_to(c, value, &to);
}

/* ---- TensorArray --------------------------------------------------------- */

static bool ta_new(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, int n_outputs)
{
    bool dynamic;
    tcrt_dtype dt;
    int64_t size;
    IrShape elem = {0};
    bool known;
    if (!need_inputs(c, n_in, 1) || !tf_attr_bool(c, "dynamic_size", &dynamic))
        return false;
    if (dynamic)
        return tf_errorf(c,
                         "dynamic_size=true is not supported: a TensorArray's size must be known at compile "
                         "time (static shapes)");
    if (!in[0].node || !ir_is_const(in[0]))
        return tf_errorf(c,
                         "TensorArray size must be known at compile time (input 0 'size' is computed at run "
                         "time)");
    if (!const_int1(c, in[0], "input 0 (size)", &size) || !tf_attr_type(c, "dtype", &dt) ||
        !shape_attr(c, "element_shape", &elem, &known))
        return false;
    IrValue buf = array_new(c, dt, size, &elem, known);
    if (!ok(buf))
        return false;
    out[0] = buf;
    if (n_outputs == 2) {
        /* V3: the data travels in the flow; the handle only needs to tell
         * dtype and size, so it is a zero-byte T[size, 0] (a loop variable
         * that costs nothing when the v1 lowering passes it into a loop) */
        IrShape hs = {2, {size, 0}};
        out[1] = buf;
        out[0] = ir_const(c->g, dt, &hs, NULL, c->st);
    }
    *n_out = n_outputs;
    return ok(out[0]);
}

static bool lower_ta_v3(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return ta_new(c, in, n_in, out, n_out, 2);
}

/* TensorArrayV2 has only the handle; its flow comes from a Const. */
static bool lower_ta_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return ta_new(c, in, n_in, out, n_out, 1);
}

/* (handle, index, value, flow_in) -> flow_out */
static bool lower_ta_write(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    if (!need_inputs(c, n_in, 4) || !ta_data(c, in[0], in[3], &buf))
        return false;
    const IrType *vt = ir_value_type(in[2]);
    if (vt->shape.rank > IR_MAX_RANK - 1)
        return tf_errorf(c, "array elements may have at most %d dims", IR_MAX_RANK - 1);
    buf = materialize(c, buf, &vt->shape);
    if (!ok(buf) || !check_elem(c, buf, &vt->shape, vt->dtype))
        return false;
    out[0] = write_row(c, buf, in[1], in[2]);
    *n_out = 1;
    return ok(out[0]);
}

/* (handle, index, flow_in) -> value */
static bool lower_ta_read(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    IrShape unknown = {-1, {0}};
    if (!need_inputs(c, n_in, 3) || !ta_data(c, in[0], in[2], &buf) ||
        !ok(buf = readable(c, buf, &unknown, false)) || !check_dtype_attr(c, "dtype", buf))
        return false;
    out[0] = read_row(c, buf, in[1]);
    *n_out = 1;
    return ok(out[0]);
}

/* (handle, indices, flow_in) -> value [k, elem] */
static bool lower_ta_gather(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    IrShape elem = {0};
    bool known;
    if (!need_inputs(c, n_in, 3) || !ta_data(c, in[0], in[2], &buf) ||
        !shape_attr(c, "element_shape", &elem, &known) || !ok(buf = readable(c, buf, &elem, known)) ||
        !check_dtype_attr(c, "dtype", buf))
        return false;
    out[0] = gather_rows(c, buf, in[1]);
    *n_out = 1;
    return ok(out[0]);
}

/* (handle, indices, value, flow_in) -> flow_out */
static bool lower_ta_scatter(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    if (!need_inputs(c, n_in, 4) || !ta_data(c, in[0], in[3], &buf))
        return false;
    out[0] = scatter_rows(c, buf, in[1], in[2], false);
    *n_out = 1;
    return ok(out[0]);
}

/* (handle, value, lengths, flow_in) -> flow_out */
static bool lower_ta_split(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    if (!need_inputs(c, n_in, 4) || !ta_data(c, in[0], in[3], &buf))
        return false;
    IrValue v = split_rows(c, in[1], in[2], array_size(buf));
    if (!ok(v))
        return false;
    IrShape elem = elem_of(v);
    buf = materialize(c, buf, &elem);
    if (!ok(buf) || !check_elem(c, buf, &elem, ir_value_type(v)->dtype))
        return false;
    out[0] = v;
    *n_out = 1;
    return true;
}

/* (handle, flow_in) -> value, lengths */
static bool lower_ta_concat(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    IrShape unknown = {-1, {0}};
    if (!need_inputs(c, n_in, 2) || !ta_data(c, in[0], in[1], &buf) ||
        !ok(buf = readable(c, buf, &unknown, false)) || !check_dtype_attr(c, "dtype", buf))
        return false;
    return concat_out(c, buf, out, n_out);
}

/* (handle, flow_in) -> int32 size */
static bool lower_ta_size(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    if (!need_inputs(c, n_in, 2) || !ta_data(c, in[0], in[1], &buf))
        return false;
    out[0] = ir_const_scalar_f(c->g, TCRT_I32, (double)array_size(buf), c->st);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_ta_close(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    (void)c, (void)in, (void)n_in, (void)out;
    *n_out = 0;
    return true;
}

/* ---- TensorList ---------------------------------------------------------- */

/* (element_shape, num_elements) -> list */
static bool lower_tl_reserve(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    int64_t n;
    tcrt_dtype dt;
    IrShape elem = {0};
    bool known;
    if (!need_inputs(c, n_in, 2))
        return false;
    if (!in[1].node || !ir_is_const(in[1]))
        return tf_errorf(c, "TensorList size (input 1, num_elements) must be known at compile time");
    if (!const_int1(c, in[1], "input 1 (num_elements)", &n) || !tf_attr_type(c, "element_dtype", &dt) ||
        !shape_input(c, in[0], &elem, &known))
        return false;
    out[0] = array_new(c, dt, n, &elem, known);
    *n_out = 1;
    return ok(out[0]);
}

/* (tensor, element_shape) -> list */
static bool lower_tl_from_tensor(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrShape want = {0};
    bool known;
    char a[128], b[128];
    if (!need_inputs(c, n_in, 2) || !shape_input(c, in[1], &want, &known))
        return false;
    const IrShape *s = &ir_value_type(in[0])->shape;
    if (s->rank < 1)
        return tf_errorf(c, "tensor must have rank >= 1 (one element per row), got %s", shp(s, a, sizeof a));
    IrValue buf = in[0];
    IrShape e = elem_of(buf);
    if (!shape_admits(&want, &e))
        return tf_errorf(c, "element_shape %s does not admit the tensor's element shape %s",
                         pshape(&want, a, sizeof a), shp(&e, b, sizeof b));
    out[0] = buf;
    *n_out = 1;
    return true;
}

/* (list, index, item) -> list */
static bool lower_tl_set_item(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    bool resize;
    if (!need_inputs(c, n_in, 3) || !list_data(c, in[0], &buf) ||
        !tf_attr_bool(c, "resize_if_index_out_of_bounds", &resize))
        return false;
    if (resize) {
        int64_t i;
        int cnt;
        if (!ir_is_const(in[1]) || !ir_const_ints(in[1], &i, 1, &cnt) || i < 0 || i >= array_size(buf))
            return tf_errorf(
                c, "resize_if_index_out_of_bounds=true (a TensorArray with dynamic_size=True) may grow "
                   "the list at run time; tfcc needs every list's size at compile time");
    }
    const IrType *vt = ir_value_type(in[2]);
    buf = materialize(c, buf, &vt->shape);
    if (!ok(buf) || !check_elem(c, buf, &vt->shape, vt->dtype))
        return false;
    out[0] = write_row(c, buf, in[1], in[2]);
    *n_out = 1;
    return ok(out[0]);
}

/* A TensorList to read from: its buffer, made readable for the requested
 * element_shape input (shape_in), with the element_dtype attr checked. */
static bool list_to_read(TfCtx *c, IrValue list, IrValue shape_in, IrValue *buf, IrShape *elem)
{
    bool known;
    return list_data(c, list, buf) && shape_input(c, shape_in, elem, &known) &&
           ok(*buf = readable(c, *buf, elem, known)) && check_dtype_attr(c, "element_dtype", *buf);
}

/* (list, index, element_shape) -> item */
static bool lower_tl_get_item(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    IrShape elem = {0};
    if (!need_inputs(c, n_in, 3) || !list_to_read(c, in[0], in[2], &buf, &elem))
        return false;
    out[0] = read_row(c, buf, in[1]);
    *n_out = 1;
    return ok(out[0]);
}

/* (list, element_shape) -> tensor [n, elem] */
static bool lower_tl_stack(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    IrShape elem = {0};
    int64_t num;
    char a[128], b[128];
    if (!need_inputs(c, n_in, 2) || !list_to_read(c, in[0], in[1], &buf, &elem) ||
        !tf_attr_int(c, "num_elements", &num))
        return false;
    if (num >= 0 && num != array_size(buf))
        return tf_errorf(c, "num_elements is %lld but the list has %lld elements", (long long)num,
                         (long long)array_size(buf));
    IrShape e = elem_of(buf);
    if (!shape_admits(&elem, &e))
        return tf_errorf(c, "element_shape %s does not admit the list's element shape %s",
                         pshape(&elem, a, sizeof a), shp(&e, b, sizeof b));
    out[0] = buf;
    *n_out = 1;
    return true;
}

/* (list) -> int32 length */
static bool lower_tl_length(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    if (!need_inputs(c, n_in, 1) || !list_data(c, in[0], &buf))
        return false;
    out[0] = ir_const_scalar_f(c->g, TCRT_I32, (double)array_size(buf), c->st);
    *n_out = 1;
    return ok(out[0]);
}

/* (list) -> element shape (shape_type) */
static bool lower_tl_element_shape(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    tcrt_dtype dt;
    if (!need_inputs(c, n_in, 1) || !list_data(c, in[0], &buf) || !tf_attr_type(c, "shape_type", &dt))
        return false;
    if (dt != TCRT_I32 && dt != TCRT_I64)
        return tf_errorf(c, "shape_type must be int32 or int64, got %s", tcrt_dtype_name(dt));
    if (is_pending(buf))
        return tf_errorf(c, "the list's element shape is not known at compile time");
    IrShape e = elem_of(buf);
    out[0] = ir_const_i64s(c->g, dt, e.dims, e.rank, c->st);
    *n_out = 1;
    return ok(out[0]);
}

/* (list, indices, element_shape) -> tensor [k, elem] */
static bool lower_tl_gather(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    IrShape elem = {0};
    if (!need_inputs(c, n_in, 3) || !list_to_read(c, in[0], in[2], &buf, &elem))
        return false;
    out[0] = gather_rows(c, buf, in[1]);
    *n_out = 1;
    return ok(out[0]);
}

/* (list, tensor, indices) -> list */
static bool lower_tl_scatter_existing(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    if (!need_inputs(c, n_in, 3) || !list_data(c, in[0], &buf))
        return false;
    out[0] = scatter_rows(c, buf, in[2], in[1], true);
    *n_out = 1;
    return ok(out[0]);
}

/* TensorListScatter (tensor, indices, element_shape) and TensorListScatterV2
 * (..., num_elements): a new list of num_elements (or max index + 1). */
static bool tl_scatter_new(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, bool v2)
{
    int64_t n = -1;
    if (!need_inputs(c, n_in, v2 ? 4 : 3))
        return false;
    if (v2 && (!in[3].node || !ir_is_const(in[3])))
        return tf_errorf(c, "TensorList size (input 3, num_elements) must be known at compile time");
    if (v2 && !const_int1(c, in[3], "input 3 (num_elements)", &n))
        return false;
    if (n < 0) {
        /* the size is max(indices) + 1: the indices must be constants */
        const IrType *it = ir_value_type(in[1]);
        if (!ir_is_const(in[1]) || (it->dtype != TCRT_I32 && it->dtype != TCRT_I64) || it->shape.rank != 1)
            return tf_errorf(c,
                             "the list's size is max(indices) + 1, so indices (input 1) must be a constant "
                             "int32/int64 vector");
        n = 0;
        for (int64_t i = 0; i < it->shape.dims[0]; i++) {
            int64_t v = it->dtype == TCRT_I32 ? ((const int32_t *)in[1].node->data)[i]
                                              : ((const int64_t *)in[1].node->data)[i];
            if (v + 1 > n)
                n = v + 1;
        }
    }
    IrValue buf = pending_new(c, ir_value_type(in[0])->dtype, n);
    if (!ok(buf))
        return false;
    out[0] = scatter_rows(c, buf, in[1], in[0], true);
    *n_out = 1;
    return ok(out[0]);
}

static bool lower_tl_scatter(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return tl_scatter_new(c, in, n_in, out, n_out, false);
}

static bool lower_tl_scatter_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return tl_scatter_new(c, in, n_in, out, n_out, true);
}

/* (tensor, element_shape, lengths) -> list */
static bool lower_tl_split(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!need_inputs(c, n_in, 3))
        return false;
    out[0] = split_rows(c, in[0], in[2], -1);
    *n_out = 1;
    return ok(out[0]);
}

/* TensorListConcat (list) and TensorListConcatV2 (list, element_shape,
 * leading_dims) -> tensor, lengths */
static bool lower_tl_concat(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue buf;
    IrShape unknown = {-1, {0}};
    if (!need_inputs(c, n_in, 1) || !list_data(c, in[0], &buf) ||
        !ok(buf = readable(c, buf, &unknown, false)) || !check_dtype_attr(c, "element_dtype", buf))
        return false;
    return concat_out(c, buf, out, n_out);
}

/* EmptyTensorList, TensorListPushBack, PopBack, Resize: the size changes. */
static bool lower_tl_growing(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    (void)in, (void)n_in, (void)out, (void)n_out;
    return tf_errorf(c,
                     "lists whose size changes at run time are not supported: tfcc needs every TensorList's "
                     "size at compile time (use TensorListReserve, or a TensorArray with a fixed size and "
                     "dynamic_size=False)");
}

/* ---- NonMaxSuppression ---------------------------------------------------- */

/* version 1: (boxes, scores, max_output_size) + iou_threshold attr;
 * 2: + iou_threshold; 3: + score_threshold; 4: + pad attr (outputs
 * indices, valid); 5: + soft_nms_sigma (outputs indices, scores, valid). */
static bool nms_common(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, int version)
{
    static const int n_inputs[] = {0, 3, 4, 5, 5, 6};
    int64_t max_out;
    double iou, score_thr = -FLT_MAX, sigma = 0;
    bool pad = false;
    if (!need_inputs(c, n_in, n_inputs[version]))
        return false;
    if (!in[2].node || !ir_is_const(in[2]))
        return tf_errorf(c, "max_output_size (input 2) must be a compile-time constant");
    if (!const_int1(c, in[2], "max_output_size (input 2)", &max_out))
        return false;
    if (version == 1 ? !tf_attr_float(c, "iou_threshold", &iou)
                     : !const_num1(c, in[3], "iou_threshold (input 3)", &iou))
        return false;
    if (version >= 3 && !const_num1(c, in[4], "score_threshold (input 4)", &score_thr))
        return false;
    if (version == 5 && !const_num1(c, in[5], "soft_nms_sigma (input 5)", &sigma))
        return false;
    if (version >= 4 && !tf_attr_bool(c, "pad_to_max_output_size", &pad))
        return false;
    if (max_out < 0)
        return tf_errorf(c, "max_output_size must be non-negative, got %lld", (long long)max_out);
    if (!((float)iou >= 0 && (float)iou <= 1))
        return tf_errorf(c, "iou_threshold must be in [0, 1], got %g", iou);
    if (sigma < 0)
        return tf_errorf(c, "soft_nms_sigma must be >= 0, got %g", sigma);
    if (sigma > 0)
        return tf_errorf(
            c, "soft_nms_sigma = %g (soft NMS) is not supported; only hard NMS (soft_nms_sigma = 0)", sigma);
    IrValue boxes = in[0], scores = in[1];
    bool folds = ir_is_const(boxes) && ir_is_const(scores);
    const IrShape *bs = &ir_value_type(boxes)->shape;
    int64_t n_boxes = bs->rank >= 1 ? bs->dims[0] : 0;
    IrParams p;
    memset(&p, 0, sizeof p);
    /* unpadded results are at most min(max_output_size, N) long */
    p.i[TCRT_NMS_MAX_OUT] = pad || max_out < n_boxes ? max_out : n_boxes;
    p.f[TCRT_NMS_IOU] = (float)iou; /* TensorFlow compares in the boxes' float type */
    /* as float (TensorFlow's T); out-of-range thresholds become +-inf */
    p.f[TCRT_NMS_SCORE] =
        fabs(score_thr) > FLT_MAX ? copysign(INFINITY, score_thr) : (double)(float)score_thr;
    IrValue ins[2] = {boxes, scores};
    IrNode *n = ir_emit(c->g, OP_NMS, ins, 2, &p, NULL, c->st);
    if (!n)
        return false;
    IrValue r[4] = {{n, 0}, {n, 1}, {n, 2}, {n, 3}};
    if (folds) {
        IrValue f[4];
        Status fst = ST_INIT;
        if (ir_fold_node(c->g, n, f, &fst)) {
            memcpy(r, f, sizeof r);
        } else if (!pad) {
            if (fst.code == ST_NOMEM)
                return st_errorf(c->st, ST_NOMEM, "out of memory");
            return tf_errorf(
                c,
                "output size depends on the data, and the constant inputs could not be evaluated "
                "at compile time%s%s",
                fst.n_errors ? ": " : "", fst.n_errors ? fst.msg : "");
        }
    }
    if (!pad) {
        /* cut the padded results to the valid count: a constant when
         * folded, else a size known at run time (ir/dyn.c) */
        IrAff valid;
        if (!ir_sym_of(c->g, r[2], &valid, c->st))
            return false;
        IrShape to = shape1(0);
        char why[300];
        if (!ir_shape_set_extent(c->g, &to, 0, &valid, why, sizeof why))
            return tf_errorf(c, "%s", why);
        for (int k = 0; k < 2; k++) {
            if (ir_aff_is_const(&valid) && ir_value_type(r[k])->shape.dims[0] == valid.c)
                continue;
            IrParams sp;
            memset(&sp, 0, sizeof sp);
            sp.i[TCRT_SL_STRIDE] = 1;
            IrType t = {ir_value_type(r[k])->dtype, to};
            r[k] = ir_emit1(c->g, OP_SLICE, &r[k], 1, &sp, &t, c->st);
            if (!ok(r[k]))
                return false;
        }
    }
    switch (version) {
    case 4:
        out[0] = r[0];
        out[1] = r[2];
        *n_out = 2;
        break;
    case 5:
        out[0] = r[0];
        out[1] = r[1];
        out[2] = r[2];
        *n_out = 3;
        break;
    default:
        out[0] = r[0];
        *n_out = 1;
        break;
    }
    return true;
}

static bool lower_nms_v1(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return nms_common(c, in, n_in, out, n_out, 1);
}
static bool lower_nms_v2(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return nms_common(c, in, n_in, out, n_out, 2);
}
static bool lower_nms_v3(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return nms_common(c, in, n_in, out, n_out, 3);
}
static bool lower_nms_v4(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return nms_common(c, in, n_in, out, n_out, 4);
}
static bool lower_nms_v5(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return nms_common(c, in, n_in, out, n_out, 5);
}

/* ---- Where --------------------------------------------------------------- */

/* Is element i of a constant nonzero (true)? */
static bool nonzero_at(const void *d, tcrt_dtype dt, int64_t i)
{
    switch (dt) {
    case TCRT_F32:
        return ((const float *)d)[i] != 0;
    case TCRT_F64:
        return ((const double *)d)[i] != 0;
    case TCRT_I32:
        return ((const int32_t *)d)[i] != 0;
    case TCRT_I64:
        return ((const int64_t *)d)[i] != 0;
    case TCRT_I16:
        return ((const int16_t *)d)[i] != 0;
    case TCRT_U16:
        return ((const uint16_t *)d)[i] != 0;
    case TCRT_U32:
        return ((const uint32_t *)d)[i] != 0;
    case TCRT_U64:
        return ((const uint64_t *)d)[i] != 0;
    case TCRT_I8:
        return ((const int8_t *)d)[i] != 0;
    case TCRT_U8:
    case TCRT_BOOL:
        return ((const uint8_t *)d)[i] != 0;
    default:
        return false;
    }
}

/* Where(x): int64 [num_true, rank] coordinates of the nonzero elements, in
 * row-major order.  Where(cond, x, y) is SelectV2. */
static bool lower_where(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (n_in == 3) {
        const TfOpRow *sel = tf_find_row("SelectV2");
        if (!sel)
            return tf_errorf(c, "Where with 3 inputs needs SelectV2, which is not available");
        return sel->lower(c, in, n_in, out, n_out);
    }
    if (n_in != 1)
        return tf_errorf(c, "expected 1 input (or 3: condition, x, y), got %d", n_in);
    IrValue x = in[0];
    if (!ir_is_const(x)) {
        /* coordinates padded to every element, cut to the count: a size
         * known at run time (ir/dyn.c) */
        if (ir_value_type(x)->shape.rank < 1)
            return tf_errorf(c, "Where of a scalar is not supported");
        IrNode *w = ir_emit(c->g, OP_WHERE, &x, 1, NULL, NULL, c->st);
        if (!w)
            return false;
        IrAff cnt;
        if (!ir_sym_of(c->g, (IrValue){w, 1}, &cnt, c->st))
            return false;
        IrShape to = ir_value_type((IrValue){w, 0})->shape;
        char why[300];
        if (!ir_shape_set_extent(c->g, &to, 0, &cnt, why, sizeof why))
            return tf_errorf(c, "%s", why);
        IrParams sp;
        memset(&sp, 0, sizeof sp);
        sp.i[TCRT_SL_STRIDE] = sp.i[TCRT_SL_STRIDE + 1] = 1;
        IrType t = {TCRT_I64, to};
        out[0] = ir_emit1(c->g, OP_SLICE, (IrValue[]){{w, 0}}, 1, &sp, &t, c->st);
        *n_out = 1;
        return ok(out[0]);
    }
    const IrType *t = ir_value_type(x);
    int64_t count = ir_shape_count(&t->shape), n_true = 0;
    for (int64_t i = 0; i < count; i++)
        n_true += nonzero_at(x.node->data, t->dtype, i);
    IrShape os = {2, {n_true, t->shape.rank}};
    IrValue v = ir_const(c->g, TCRT_I64, &os, NULL, c->st);
    if (!ok(v))
        return false;
    int64_t *o = v.node->data, idx[IR_MAX_RANK] = {0};
    for (int64_t i = 0, k = 0; i < count; i++) {
        if (nonzero_at(x.node->data, t->dtype, i))
            for (int d = 0; d < t->shape.rank; d++)
                o[k++] = idx[d];
        for (int d = t->shape.rank - 1; d >= 0; d--) {
            if (++idx[d] < t->shape.dims[d])
                break;
            idx[d] = 0;
        }
    }
    out[0] = v;
    *n_out = 1;
    return true;
}

/* ---- the table ----------------------------------------------------------- */

#define TA_DEFAULTS "dynamic_size=false;clear_after_read=true;identical_element_shapes=false"

const TfOpRow tf_ops_list[] = {
    {"TensorArrayV3", lower_ta_v3, TA_DEFAULTS,
     "const zeros [size, element] (the flow; the handle holds no data)"},
    {"TensorArrayV2", lower_ta_v2, TA_DEFAULTS, "const zeros [size, element]"},
    {"TensorArrayWriteV3", lower_ta_write, "", "update_slice"},
    {"TensorArrayWriteV2", lower_ta_write, "", "update_slice"},
    {"TensorArrayReadV3", lower_ta_read, "", "gather"},
    {"TensorArrayReadV2", lower_ta_read, "", "gather"},
    {"TensorArrayGatherV3", lower_ta_gather, "", "gather"},
    {"TensorArrayGatherV2", lower_ta_gather, "", "gather"},
    {"TensorArrayScatterV3", lower_ta_scatter, "", "gather (+ concat), or update_slice per row"},
    {"TensorArrayScatterV2", lower_ta_scatter, "", "gather (+ concat), or update_slice per row"},
    {"TensorArraySplitV3", lower_ta_split, "", "copy"},
    {"TensorArraySplitV2", lower_ta_split, "", "copy"},
    {"TensorArrayConcatV3", lower_ta_concat, "", "copy + const lengths"},
    {"TensorArrayConcatV2", lower_ta_concat, "", "copy + const lengths"},
    {"TensorArraySizeV3", lower_ta_size, "", "const"},
    {"TensorArraySizeV2", lower_ta_size, "", "const"},
    {"TensorArrayCloseV3", lower_ta_close, "", "(none)"},
    {"TensorArrayCloseV2", lower_ta_close, "", "(none)"},
    {"TensorListReserve", lower_tl_reserve, "shape_type=DT_INT32", "const zeros [n, element]"},
    {"TensorListFromTensor", lower_tl_from_tensor, "shape_type=DT_INT32", "(none)"},
    {"TensorListSetItem", lower_tl_set_item, "resize_if_index_out_of_bounds=false", "update_slice"},
    {"TensorListGetItem", lower_tl_get_item, "", "gather"},
    {"TensorListStack", lower_tl_stack, "num_elements=-1", "(none)"},
    {"TensorListLength", lower_tl_length, "", "const"},
    {"TensorListElementShape", lower_tl_element_shape, "shape_type=DT_INT32", "const"},
    {"TensorListGather", lower_tl_gather, "", "gather"},
    {"TensorListScatterIntoExistingList", lower_tl_scatter_existing, "",
     "gather (+ concat), or update_slice per row"},
    {"TensorListScatter", lower_tl_scatter, "shape_type=DT_INT32", "gather (+ concat)"},
    {"TensorListScatterV2", lower_tl_scatter_v2, "shape_type=DT_INT32", "gather (+ concat)"},
    {"TensorListSplit", lower_tl_split, "shape_type=DT_INT32", "copy"},
    {"TensorListConcat", lower_tl_concat, "", "copy + const lengths"},
    {"TensorListConcatV2", lower_tl_concat, "shape_type=DT_INT32", "copy + const lengths"},
    {"EmptyTensorList", lower_tl_growing, "", "(error: the size changes at run time)"},
    {"TensorListPushBack", lower_tl_growing, "", "(error: the size changes at run time)"},
    {"TensorListPushBackBatch", lower_tl_growing, "", "(error: the size changes at run time)"},
    {"TensorListPopBack", lower_tl_growing, "", "(error: the size changes at run time)"},
    {"TensorListResize", lower_tl_growing, "", "(error: the size changes at run time)"},
    {"NonMaxSuppression", lower_nms_v1, "iou_threshold=0.5", "nms (constant inputs only: folded)"},
    {"NonMaxSuppressionV2", lower_nms_v2, "", "nms (constant inputs only: folded)"},
    {"NonMaxSuppressionV3", lower_nms_v3, "", "nms (constant inputs only: folded)"},
    {"NonMaxSuppressionV4", lower_nms_v4, "pad_to_max_output_size=false",
     "nms (unpadded: slice to the run-time count)"},
    {"NonMaxSuppressionV5", lower_nms_v5, "pad_to_max_output_size=false",
     "nms (unpadded: slice to the run-time count)"},
    {"Where", lower_where, "", "where + slice to the run-time count; 3 inputs: select"},
    {NULL, NULL, NULL, NULL},
};
