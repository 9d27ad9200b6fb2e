/* compiler/onnx/onnx_import.c - ONNX ModelProto -> IR: the graph walk,
 * tensors, attributes and `tfcc info`.  The op rows are in onnx_ops.c.
 *
 * Order: ONNX requires the node list to be topologically sorted, so nodes
 * are lowered in file order; a node whose input is not yet defined is an
 * error naming the input.  Before lowering, every node's op type is looked
 * up, and all unsupported ones are reported together.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/onnx/onnx_int.h"

bool onnx_errorf(OnnxCtx *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const Onnx__NodeProto *nd = c->nd;
    if (nd)
        return st_errorf(c->st, ST_ERROR, "%s: node '%s' (%s): %s", c->file, nd->name ? nd->name : "",
                         nd->op_type ? nd->op_type : "", msg);
    return st_errorf(c->st, ST_ERROR, "%s: %s", c->file, msg);
}

/* ---- attributes ---------------------------------------------------------- */

const Onnx__AttributeProto *onnx_attr(const OnnxCtx *c, const char *name)
{
    for (size_t i = 0; i < c->nd->n_attribute; i++)
        if (c->nd->attribute[i]->name && !strcmp(c->nd->attribute[i]->name, name))
            return c->nd->attribute[i];
    return NULL;
}

bool onnx_attr_int(OnnxCtx *c, const char *name, int64_t def, int64_t *v)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *v = def;
    if (!a)
        return true;
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
        return onnx_errorf(c, "attribute '%s' must be an int", name);
    *v = a->i;
    return true;
}

bool onnx_attr_float(OnnxCtx *c, const char *name, double def, double *v)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *v = def;
    if (!a)
        return true;
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)
        return onnx_errorf(c, "attribute '%s' must be a float", name);
    *v = a->f;
    return true;
}

bool onnx_attr_ints(OnnxCtx *c, const char *name, int64_t *v, int max, int *n)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *n = 0;
    if (!a)
        return true;
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS)
        return onnx_errorf(c, "attribute '%s' must be a list of ints", name);
    if (a->n_ints > (size_t)max)
        return onnx_errorf(c, "attribute '%s' has %zu values, at most %d supported", name, a->n_ints, max);
    for (size_t i = 0; i < a->n_ints; i++)
        v[i] = a->ints[i];
    *n = (int)a->n_ints;
    return true;
}

bool onnx_attr_str(OnnxCtx *c, const char *name, const char *def, char *buf, size_t n)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    if (!a) {
        snprintf(buf, n, "%s", def);
        return true;
    }
    if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING)
        return onnx_errorf(c, "attribute '%s' must be a string", name);
    size_t len = a->s.len < n - 1 ? a->s.len : n - 1;
    if (len)
        memcpy(buf, a->s.data, len);
    buf[len] = 0;
    return true;
}

/* ---- tensors ------------------------------------------------------------- */

static const char *onnx_type_name(int t)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",  "INT16",
                                        "INT32",     "INT64",  "STRING",    "BOOL",       "FLOAT16", "DOUBLE",
                                        "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "?";
}

static bool map_dtype(int t, tcrt_dtype *out)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = TCRT_F32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *out = TCRT_F64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *out = TCRT_I32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *out = TCRT_I64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *out = TCRT_U8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *out = TCRT_I8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *out = TCRT_BOOL; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: *out = TCRT_I16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: *out = TCRT_U16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: *out = TCRT_U32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: *out = TCRT_U64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *out = TCRT_F16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *out = TCRT_BF16; return true;
    default: return false;
    }
}

bool onnx_dtype(OnnxCtx *c, int onnx_type, const char *what, tcrt_dtype *out)
{
    if (map_dtype(onnx_type, out))
        return true;
    return onnx_errorf(c, "%s: element type %s (%d) is not supported", what, onnx_type_name(onnx_type),
                       onnx_type);
}

bool onnx_tensor_to_const(IrGraph *g, const Onnx__TensorProto *tp, const char *file, const char *what,
                          IrValue *v, Status *st)
{
    v->node = NULL;
    v->index = 0;
    if ((tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
        tp->n_external_data > 0)
        return st_errorf(st, ST_UNSUPPORTED,
                         "%s: %s: tensor data is stored in an external file (external_data), which is not "
                         "supported; save the model with its weights inside the .onnx file",
                         file, what);
    if (tp->segment)
        return st_errorf(st, ST_UNSUPPORTED, "%s: %s: segmented tensors are not supported", file, what);
    tcrt_dtype dt, dt_final;
    if (!map_dtype(tp->data_type, &dt_final))
        return st_errorf(st, ST_UNSUPPORTED, "%s: %s: element type %s (%d) is not supported", file, what,
                         onnx_type_name(tp->data_type), tp->data_type);
    /* 16-bit floats: a u16 constant of the bits, reinterpreted below */
    dt = dt_final == TCRT_F16 || dt_final == TCRT_BF16 ? TCRT_U16 : dt_final;
    if (tp->n_dims > IR_MAX_RANK)
        return st_errorf(st, ST_ERROR, "%s: %s: rank %zu is more than the supported %d", file, what,
                         tp->n_dims, IR_MAX_RANK);
    IrShape s = {0};
    memset(&s, 0, sizeof s);
    s.rank = (int)tp->n_dims;
    for (size_t i = 0; i < tp->n_dims; i++) {
        if (tp->dims[i] < 0)
            return st_errorf(st, ST_ERROR, "%s: %s: negative dimension %lld", file, what, (long long)tp->dims[i]);
        s.dims[i] = tp->dims[i];
    }
    int64_t count;
    if (!ir_shape_count_checked(&s, &count))
        return st_errorf(st, ST_ERROR, "%s: %s: too many elements", file, what);
    size_t esz = tcrt_dtype_size(dt);
    size_t bytes = (size_t)count * esz;
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf)
        return st_errorf(st, ST_NOMEM, "%s: %s: out of memory (%zu bytes)", file, what, bytes);
    bool ok = true;
    size_t have = 0;
    if (tp->has_raw_data && tp->raw_data.len > 0) {
        if (tp->raw_data.len != bytes)
            ok = st_errorf(st, ST_ERROR, "%s: %s: raw_data has %zu bytes, the shape %s of %s needs %zu", file,
                           what, tp->raw_data.len, ir_shape_str(&s, (char[200]){0}, 200),
                           onnx_type_name(tp->data_type), bytes);
        else
            memcpy(buf, tp->raw_data.data, bytes); /* little-endian hosts only, as the runtime */
        have = (size_t)count;
    } else {
        for (int64_t i = 0; i < count; i++) {
            switch (dt) {
            case TCRT_F32:
                if ((size_t)i < tp->n_float_data)
                    ((float *)buf)[i] = tp->float_data[i], have++;
                break;
            case TCRT_F64:
                if ((size_t)i < tp->n_double_data)
                    ((double *)buf)[i] = tp->double_data[i], have++;
                break;
            case TCRT_I64:
                if ((size_t)i < tp->n_int64_data)
                    ((int64_t *)buf)[i] = tp->int64_data[i], have++;
                break;
            case TCRT_I32:
                if ((size_t)i < tp->n_int32_data)
                    ((int32_t *)buf)[i] = tp->int32_data[i], have++;
                break;
            case TCRT_U8:
            case TCRT_BOOL:
                if ((size_t)i < tp->n_int32_data)
                    ((uint8_t *)buf)[i] = (uint8_t)tp->int32_data[i], have++;
                break;
            case TCRT_I8:
                if ((size_t)i < tp->n_int32_data)
                    ((int8_t *)buf)[i] = (int8_t)tp->int32_data[i], have++;
                break;
            case TCRT_I16:
                if ((size_t)i < tp->n_int32_data)
                    ((int16_t *)buf)[i] = (int16_t)tp->int32_data[i], have++;
                break;
            case TCRT_U16: /* also float16 / bfloat16 bits */
                if ((size_t)i < tp->n_int32_data)
                    ((uint16_t *)buf)[i] = (uint16_t)tp->int32_data[i], have++;
                break;
            case TCRT_U32:
                if ((size_t)i < tp->n_uint64_data)
                    ((uint32_t *)buf)[i] = (uint32_t)tp->uint64_data[i], have++;
                break;
            case TCRT_U64:
                if ((size_t)i < tp->n_uint64_data)
                    ((uint64_t *)buf)[i] = tp->uint64_data[i], have++;
                break;
            default:
                break;
            }
        }
        if (ok && have != (size_t)count)
            ok = st_errorf(st, ST_ERROR, "%s: %s: has %zu values, the shape %s needs %lld", file, what, have,
                           ir_shape_str(&s, (char[200]){0}, 200), (long long)count);
    }
    if (ok) {
        *v = ir_const(g, dt, &s, buf, st);
        if (v->node && dt != dt_final)
            *v = ir_cast(g, *v, dt_final, st);
        ok = v->node != NULL;
    }
    free(buf);
    return ok;
}

bool onnx_const_ints(OnnxCtx *c, IrValue v, const char *what, int64_t *out, int max, int *n)
{
    if (!v.node)
        return onnx_errorf(c, "%s is missing", what);
    if (!ir_const_ints(v, out, max, n))
        return onnx_errorf(c, "%s must be a compile-time constant with at most %d integers", what, max);
    return true;
}

/* ---- value table: ONNX value name -> IrValue ------------------------------ */

typedef struct VEntry {
    const char *name;
    IrValue v;
} VEntry;

typedef struct VTable {
    VEntry *e;
    size_t cap, n;
} VTable;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static VEntry *vt_slot(VTable *t, const char *name)
{
    size_t i = (size_t)hash_str(name) & (t->cap - 1);
    while (t->e[i].name && strcmp(t->e[i].name, name))
        i = (i + 1) & (t->cap - 1);
    return &t->e[i];
}

static bool vt_put(VTable *t, const char *name, IrValue v, Status *st)
{
    if ((t->n + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 256;
        VEntry *old = t->e;
        size_t ocap = t->cap;
        t->e = calloc(ncap, sizeof *t->e);
        if (!t->e) {
            t->e = old;
            return st_errorf(st, ST_NOMEM, "out of memory");
        }
        t->cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].name)
                *vt_slot(t, old[i].name) = old[i];
        free(old);
    }
    VEntry *e = vt_slot(t, name);
    if (!e->name)
        t->n++;
    e->name = name;
    e->v = v;
    return true;
}

static const IrValue *vt_get(const VTable *t, const char *name)
{
    if (!t->cap)
        return NULL;
    VEntry *e = vt_slot((VTable *)t, name);
    return e->name ? &e->v : NULL;
}

/* ---- scopes: a subgraph sees the names of the graphs around it ---------- */

typedef struct OnnxScope {
    VTable *vt;
    const struct OnnxScope *parent;
} OnnxScope;

static const IrValue *scope_get(const OnnxScope *sc, const char *name)
{
    for (; sc; sc = sc->parent) {
        const IrValue *v = vt_get(sc->vt, name);
        if (v)
            return v;
    }
    return NULL;
}

const IrValue *onnx_lookup(const OnnxCtx *c, const char *name)
{
    return scope_get(c->scope, name);
}

/* ---- import -------------------------------------------------------------- */

int64_t onnx_model_opset(const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain;
        if (!d || !d[0] || !strcmp(d, "ai.onnx"))
            return m->opset_import[i]->version;
    }
    return 0;
}

static const TfFeedSpec *find_spec(const OnnxImportOptions *o, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < o->n_feeds; i++) {
        const char *s = o->feeds[i].name;
        if (!strcmp(s, name) || (!strncmp(s, name, n) && !strcmp(s + n, ":0")))
            return &o->feeds[i];
    }
    return NULL;
}

static bool is_initializer(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name && !strcmp(gp->initializer[i]->name, name))
            return true;
    return false;
}

/* A tensor graph input, or a tensor inside a sequence or optional input
 * (named by the rule of add_input): its type from tt, dims from the spec
 * when given; a spec with a value (--const) makes it a constant. */
static bool tensor_input(IrGraph *g, const char *name, const Onnx__TypeProto__Tensor *tt,
                         const OnnxImportOptions *o, IrValue *out, Status *st)
{
    const TfFeedSpec *spec = find_spec(o, name);
    IrType t = {0};
    memset(&t, 0, sizeof t);
    if (!map_dtype(tt->elem_type, &t.dtype))
        return st_errorf(st, ST_UNSUPPORTED, "%s: graph input '%s': element type %s (%d) is not supported",
                         o->file, name, onnx_type_name(tt->elem_type), tt->elem_type);
    if (spec && spec->dtype != TCRT_INVALID)
        t.dtype = spec->dtype;
    if (spec && spec->has_shape) {
        t.shape = spec->shape;
        if (tt->shape && (int)tt->shape->n_dim != spec->shape.rank)
            return st_errorf(st, ST_ERROR, "%s: --feed %s: %d dims given, the model's input has rank %zu",
                             o->file, name, spec->shape.rank, tt->shape->n_dim);
        for (int i = 0; tt->shape && i < t.shape.rank; i++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value > 0 &&
                d->dim_value != t.shape.dims[i])
                return st_errorf(st, ST_ERROR,
                                 "%s: --feed %s: dim %d is %lld, the model's input has %lld there", o->file,
                                 name, i, (long long)t.shape.dims[i], (long long)d->dim_value);
        }
    } else {
        if (!tt->shape)
            return st_errorf(st, ST_ERROR, "%s: graph input '%s' has no shape: give it with --feed %s:DIMS",
                             o->file, name, name);
        if (tt->shape->n_dim > IR_MAX_RANK)
            return st_errorf(st, ST_ERROR, "%s: graph input '%s' has rank %zu, at most %d supported", o->file,
                             name, tt->shape->n_dim, IR_MAX_RANK);
        t.shape.rank = (int)tt->shape->n_dim;
        for (size_t i = 0; i < tt->shape->n_dim; i++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
            if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || d->dim_value < 0)
                return st_errorf(st, ST_ERROR,
                                 "%s: graph input '%s' has a symbolic dim %zu ('%s'): give the shape with "
                                 "--feed %s:DIMS",
                                 o->file, name, i,
                                 d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                                     ? d->dim_param
                                     : "?",
                                 name);
            t.shape.dims[i] = d->dim_value;
        }
    }
    IrValue v;
    if (spec && spec->value) {
        IrValue c = ir_const(g, spec->value->dtype, &t.shape, spec->value->data, st);
        v = c.node && spec->value->dtype != t.dtype ? ir_cast(g, c, t.dtype, st) : c;
    } else
        v = ir_add_feed(g, name, &t, st);
    *out = v;
    return v.node != NULL;
}

/* The length of sequence input `name`: `--feed NAME:0:L` (a rank-1 "shape"
 * [L]; L may be 0), else the number of element specs NAME.0, NAME.1, ...
 * Element specs past the length are errors naming the missing element or
 * the length. */
static bool seq_input_length(const char *name, const OnnxImportOptions *o, int *len, Status *st)
{
    const TfFeedSpec *spec = find_spec(o, name);
    size_t nl = strlen(name);
    bool explicit_len = spec && spec->has_shape;
    int n = 0;
    if (spec && spec->value)
        return st_errorf(st, ST_ERROR, "%s: --const %s: '%s' is a sequence input: bind its elements (%s.0, "
                         "%s.1, ...) one by one", o->file, name, name, name, name);
    if (explicit_len) {
        if (spec->shape.rank != 1 || spec->shape.dims[0] > 4096)
            return st_errorf(st, ST_ERROR, "%s: --feed %s: '%s' is a sequence input: give its length as "
                             "--feed %s:0:L (L <= 4096) and its elements as --feed %s.K:DIMS", o->file,
                             spec->name, name, name, name);
        n = (int)spec->shape.dims[0];
    } else {
        char en[600];
        while (n < 4096) {
            snprintf(en, sizeof en, "%s.%d", name, n);
            if (!find_spec(o, en))
                break;
            n++;
        }
    }
    for (int i = 0; i < o->n_feeds; i++) {
        const char *s = o->feeds[i].name;
        if (strncmp(s, name, nl) || s[nl] != '.' || s[nl + 1] < '0' || s[nl + 1] > '9')
            continue;
        long k = strtol(s + nl + 1, NULL, 10);
        if (k < n)
            continue;
        if (explicit_len)
            return st_errorf(st, ST_ERROR, "%s: feed '%s': sequence input '%s' has length %d (--feed %s:0:%d)",
                             o->file, s, name, n, name, n);
        return st_errorf(st, ST_ERROR, "%s: feed '%s': sequence input '%s' has no element %s.%d (its elements "
                         "are fed as %s.0, %s.1, ... with no gap)", o->file, s, name, name, n, name, name);
    }
    if (!explicit_len && n == 0)
        return st_errorf(st, ST_ERROR, "%s: graph input '%s' is a sequence: feed its elements as %s.0, %s.1, "
                         "... (--feed %s.K:DIMS, --const %s.K=FILE), or give its length with --feed %s:0:L "
                         "(0: empty)", o->file, name, name, name, name, name, name);
    *len = n;
    return true;
}

/* A graph input of type tp named `name`.  Tensors are feeds (or constants)
 * of that name.  A sequence of length L (seq_input_length) is the import-time
 * list of its elements, inputs named NAME.0 ... NAME.L-1 (nested sequences:
 * NAME.0.0 ...).  An optional is None when `--feed NAME:none` is given, else
 * it holds its element, an input named NAME.  See docs/onnx.md. */
static bool typed_input(OnnxCtx *c, const char *name, const Onnx__TypeProto *tp, const OnnxImportOptions *o,
                        int depth, IrValue *out)
{
    Status *st = c->st;
    if (!tp || depth > 8)
        return st_errorf(st, ST_UNSUPPORTED, "%s: graph input '%s' has no type (or nests too deeply)", o->file,
                         name);
    switch (tp->value_case) {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
        return tensor_input(c->g, name, tp->tensor_type, o, out, st);
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: {
        int n = 0;
        if (!seq_input_length(name, o, &n, st))
            return false;
        IrValue *el = calloc((size_t)n + 1, sizeof *el);
        if (!el)
            return st_errorf(st, ST_NOMEM, "out of memory");
        bool ok = true;
        for (int k = 0; k < n && ok; k++) {
            char en[600];
            snprintf(en, sizeof en, "%s.%d", name, k);
            ok = typed_input(c, en, tp->sequence_type->elem_type, o, depth + 1, &el[k]);
        }
        if (ok)
            *out = onnx_seq_new(c, el, n, false);
        free(el);
        return ok && st_ok(st);
    }
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: {
        char none[600];
        snprintf(none, sizeof none, "%s:none", name);
        bool is_none = false;
        for (int i = 0; i < o->n_feeds; i++)
            is_none |= !strcmp(o->feeds[i].name, none);
        IrValue el = {NULL, 0};
        if (!is_none && !typed_input(c, name, tp->optional_type->elem_type, o, depth + 1, &el))
            return false;
        *out = onnx_seq_new(c, &el, is_none ? 0 : 1, true);
        return st_ok(st);
    }
    default:
        return st_errorf(st, ST_UNSUPPORTED, "%s: graph input '%s' is not a tensor, sequence or optional (map "
                         "and sparse tensor inputs are not supported)", o->file, name);
    }
}

static bool add_input(OnnxCtx *c, const Onnx__ValueInfoProto *vi, const OnnxImportOptions *o, VTable *vt)
{
    IrValue v = {NULL, 0};
    return typed_input(c, vi->name, vi->type, o, 0, &v) && vt_put(vt, vi->name, v, c->st);
}

static bool check_ops(const Onnx__GraphProto *gp, const char *file, Status *st)
{
    bool ok = true;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *nd = gp->node[i];
        const char *dom = nd->domain ? nd->domain : "";
        if (!nd->op_type || !nd->op_type[0]) {
            ok = st_errorf(st, ST_ERROR, "%s: node %zu ('%s') has no op_type", file, i, nd->name ? nd->name : "");
            continue;
        }
        if ((dom[0] && strcmp(dom, "ai.onnx")) || !onnx_find_row(nd->op_type))
            ok = st_errorf(st, ST_UNSUPPORTED, "%s: node '%s' (%s%s%s): unsupported op", file,
                           nd->name ? nd->name : "", dom, dom[0] ? "::" : "", nd->op_type);
    }
    return ok;
}

/* Lowers gp's nodes in order into c->g; names resolve in sc and its
 * parents, outputs go into sc.  False with st set on error. */
static bool lower_nodes(OnnxCtx *cp, const Onnx__GraphProto *gp, OnnxScope *sc)
{
    OnnxCtx c = *cp;
    Status *st = c.st;
    IrGraph *g = c.g;
    c.scope = sc;
    IrValue in[64], out[ONNX_MAX_OUTPUTS];
    for (size_t i = 0; i < gp->n_node && st_ok(st); i++) {
        const Onnx__NodeProto *nd = gp->node[i];
        c.nd = nd;
        ir_graph_set_origin(g, nd->name && nd->name[0] ? nd->name : (nd->n_output ? nd->output[0] : ""),
                            nd->op_type);
        if (nd->n_input > 64 || nd->n_output > ONNX_MAX_OUTPUTS) {
            onnx_errorf(&c, "too many inputs or outputs (%zu, %zu)", nd->n_input, nd->n_output);
            break;
        }
        bool ok = true;
        for (size_t k = 0; k < nd->n_input; k++) {
            in[k] = (IrValue){NULL, 0};
            if (!nd->input[k][0])
                continue;
            const IrValue *v = scope_get(sc, nd->input[k]);
            if (!v) {
                ok = onnx_errorf(&c, "input %zu '%s' is not defined by an earlier node, an initializer or a "
                                     "graph input (missing initializer?)",
                                 k, nd->input[k]);
                break;
            }
            in[k] = *v;
        }
        if (!ok)
            break;
        for (size_t k = 0; k < nd->n_output; k++)
            out[k] = (IrValue){NULL, 0};
        /* float16 / bfloat16 inputs: the op runs in float32 (exact widening)
         * and its float32 outputs are rounded back (onnx_f16.c) */
        tcrt_dtype narrow = TCRT_INVALID;
        if (strcmp(nd->op_type, "Cast") && strcmp(nd->op_type, "CastLike") && strcmp(nd->op_type, "Identity"))
            for (size_t k = 0; k < nd->n_input; k++)
                if (in[k].node && onnx_is_storage(ir_value_type(in[k])->dtype)) {
                    narrow = ir_value_type(in[k])->dtype;
                    in[k] = onnx_cast(&c, in[k], TCRT_F32);
                }
        const OnnxOpRow *row = onnx_find_row(nd->op_type);
        if (!row || (nd->domain && nd->domain[0] && strcmp(nd->domain, "ai.onnx"))) {
            /* in a subgraph (the main graph's ops are checked first) */
            onnx_errorf(&c, "unsupported op");
            break;
        }
        if (!st_ok(st) || !row->lower(&c, in, (int)nd->n_input, out)) {
            if (st_ok(st))
                onnx_errorf(&c, "lowering failed");
            break;
        }
        for (size_t k = 0; narrow != TCRT_INVALID && k < nd->n_output; k++)
            if (out[k].node && ir_value_type(out[k])->dtype == TCRT_F32)
                out[k] = onnx_cast(&c, out[k], narrow);
        for (size_t k = 0; k < nd->n_output; k++) {
            if (!nd->output[k][0])
                continue;
            if (!out[k].node && !onnx_is_seq(out[k])) {
                onnx_errorf(&c, "output %zu '%s' is not supported", k, nd->output[k]);
                break;
            }
            vt_put(sc->vt, nd->output[k], out[k], st);
        }
    }
    return st_ok(st);
}

/* ---- subgraphs ------------------------------------------------------------ */

bool onnx_attr_graph(OnnxCtx *c, const char *name, const Onnx__GraphProto **gp)
{
    const Onnx__AttributeProto *a = onnx_attr(c, name);
    *gp = NULL;
    if (!a)
        return onnx_errorf(c, "missing attribute '%s' (a graph)", name);
    if ((a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH) || !a->g)
        return onnx_errorf(c, "attribute '%s' must be a graph", name);
    *gp = a->g;
    return true;
}

/* Adds to out the names gp reads but does not define (nested graphs too);
 * `seen` holds the names already listed. */
static bool collect_free(const Onnx__GraphProto *gp, VTable *seen, const char ***out, int *n, int *cap,
                         Status *st)
{
    VTable def = {0};
    bool ok = true;
    IrValue none = {NULL, 0};
    for (size_t i = 0; ok && i < gp->n_input; i++)
        if (gp->input[i]->name)
            ok = vt_put(&def, gp->input[i]->name, none, st);
    for (size_t i = 0; ok && i < gp->n_initializer; i++)
        if (gp->initializer[i]->name)
            ok = vt_put(&def, gp->initializer[i]->name, none, st);
    for (size_t i = 0; ok && i <= gp->n_node; i++) {
        const char **names = NULL;
        size_t nn = 0;
        const char **sub = NULL;
        int nsub = 0, capsub = 0;
        if (i < gp->n_node) {
            const Onnx__NodeProto *nd = gp->node[i];
            names = (const char **)nd->input;
            nn = nd->n_input;
            /* nested graphs' free names count as reads of this node */
            VTable subseen = {0};
            for (size_t a = 0; ok && a < nd->n_attribute; a++) {
                const Onnx__AttributeProto *at = nd->attribute[a];
                if (at->g)
                    ok = collect_free(at->g, &subseen, &sub, &nsub, &capsub, st);
                for (size_t k = 0; ok && k < at->n_graphs; k++)
                    ok = collect_free(at->graphs[k], &subseen, &sub, &nsub, &capsub, st);
            }
            free(subseen.e);
        } else {
            for (size_t k = 0; k < gp->n_output; k++) /* outputs may name outer values */
                if (gp->output[k]->name && !vt_get(&def, gp->output[k]->name) && !vt_get(seen, gp->output[k]->name)) {
                    if (*n == *cap) {
                        int nc = *cap ? *cap * 2 : 16;
                        const char **p = realloc(*out, (size_t)nc * sizeof *p);
                        if (!p) {
                            ok = st_errorf(st, ST_NOMEM, "out of memory");
                            break;
                        }
                        *out = p;
                        *cap = nc;
                    }
                    (*out)[(*n)++] = gp->output[k]->name;
                    ok = vt_put(seen, gp->output[k]->name, none, st);
                }
        }
        for (size_t k = 0; ok && k < nn + (size_t)nsub; k++) {
            const char *nm = k < nn ? names[k] : sub[k - nn];
            if (!nm || !nm[0] || vt_get(&def, nm) || vt_get(seen, nm))
                continue;
            if (*n == *cap) {
                int nc = *cap ? *cap * 2 : 16;
                const char **p = realloc(*out, (size_t)nc * sizeof *p);
                if (!p) {
                    ok = st_errorf(st, ST_NOMEM, "out of memory");
                    break;
                }
                *out = p;
                *cap = nc;
            }
            (*out)[(*n)++] = nm;
            ok = vt_put(seen, nm, none, st);
        }
        free(sub);
        if (i < gp->n_node)
            for (size_t k = 0; ok && k < gp->node[i]->n_output; k++)
                if (gp->node[i]->output[k][0])
                    ok = vt_put(&def, gp->node[i]->output[k], none, st);
    }
    free(def.e);
    return ok;
}

bool onnx_free_names(OnnxCtx *c, const Onnx__GraphProto *gp, const char ***names, int *n)
{
    VTable seen = {0};
    int cap = 0;
    *names = NULL;
    *n = 0;
    bool ok = collect_free(gp, &seen, names, n, &cap, c->st);
    free(seen.e);
    if (!ok) {
        free(*names);
        *names = NULL;
        *n = 0;
    }
    return ok;
}

bool onnx_lower_graph(OnnxCtx *c, const char *attr, const Onnx__GraphProto *gp, IrGraph *g, const IrValue *args,
                      int n_args, const char *const *names, const IrValue *vals, int n_vals, bool see_outer,
                      IrValue *results)
{
    if ((int)gp->n_input != n_args)
        return onnx_errorf(c, "attribute '%s': the graph has %zu inputs, %d expected", attr, gp->n_input, n_args);
    VTable vt = {0};
    OnnxScope sc = {&vt, see_outer ? c->scope : NULL};
    OnnxCtx sub = *c;
    sub.g = g;
    sub.nd = NULL;
    sub.scope = &sc;
    bool ok = true;
    for (int i = 0; ok && i < n_vals; i++)
        ok = vt_put(&vt, names[i], vals[i], c->st);
    for (size_t i = 0; ok && i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        char what[400];
        snprintf(what, sizeof what, "attribute '%s': initializer '%s'", attr, tp->name ? tp->name : "");
        IrValue v;
        ok = tp->name && onnx_tensor_to_const(g, tp, c->file, what, &v, c->st) && vt_put(&vt, tp->name, v, c->st);
    }
    for (int i = 0; ok && i < n_args; i++)
        ok = vt_put(&vt, gp->input[i]->name ? gp->input[i]->name : "", args[i], c->st);
    if (ok)
        ok = lower_nodes(&sub, gp, &sc);
    for (size_t i = 0; ok && i < gp->n_output; i++) {
        const IrValue *v = scope_get(&sc, gp->output[i]->name ? gp->output[i]->name : "");
        if (!v)
            ok = onnx_errorf(c, "attribute '%s': graph output '%s' is not defined", attr,
                             gp->output[i]->name ? gp->output[i]->name : "");
        else
            results[i] = *v;
    }
    free(vt.e);
    return ok && st_ok(c->st);
}

/* s without the suffix suf (a static buffer: use before the next call). */
static const char *strip_suffix(const char *s, const char *suf)
{
    static char buf[600];
    size_t n = strlen(s), k = strlen(suf);
    snprintf(buf, sizeof buf, "%s", s);
    if (n > k && n - k < sizeof buf && !strcmp(s + n - k, suf))
        buf[n - k] = 0;
    return buf;
}

/* True when s names a part of a sequence or optional graph input: NAME.K
 * (an element; NAME.K.J nested) or NAME:none (an absent optional). */
static bool seq_part_of(const OnnxCtx *c, const VTable *vt, const char *s)
{
    char base[600];
    snprintf(base, sizeof base, "%s", strip_suffix(s, ":0"));
    char *cut = strstr(base, ":none");
    if (cut && !cut[5]) {
        *cut = 0;
        const IrValue *v = vt_get(vt, base);
        return v && onnx_seq_get(c, *v) && onnx_seq_get(c, *v)->is_optional;
    }
    for (char *dot = strrchr(base, '.'); dot; dot = strrchr(base, '.')) {
        *dot = 0;
        const IrValue *v = vt_get(vt, base);
        if (v)
            return onnx_seq_get(c, *v) != NULL;
    }
    return false;
}

/* The value a fetch names: a value of the graph, or an element NAME.K of a
 * sequence (an optional's element is reached through it: NAME.K of an
 * optional sequence). */
static bool resolve_fetch(const OnnxCtx *c, const VTable *vt, const char *name, int depth, IrValue *v)
{
    const IrValue *p = vt_get(vt, name);
    if (!p)
        p = vt_get(vt, strip_suffix(name, ":0"));
    if (p) {
        *v = *p;
        return true;
    }
    const char *dot = strrchr(name, '.');
    if (!dot || depth > 8 || dot[1] < '0' || dot[1] > '9' || strspn(dot + 1, "0123456789") != strlen(dot + 1))
        return false;
    char base[600];
    snprintf(base, sizeof base, "%.*s", (int)(dot - name), name);
    IrValue b;
    if (!resolve_fetch(c, vt, base, depth + 1, &b))
        return false;
    const OnnxSeq *s = onnx_seq_get(c, b);
    if (s && s->is_optional && s->n == 1)
        s = onnx_seq_get(c, s->v[0]);
    long k = strtol(dot + 1, NULL, 10);
    if (!s || s->is_optional || k >= s->n)
        return false;
    *v = s->v[k];
    return true;
}

/* Fetches v as `name`: a tensor as itself, a sequence of length L as its
 * elements NAME.0 ... NAME.L-1 (nested: NAME.0.0 ...), an optional as its
 * element under NAME, or nothing when it is None. */
static bool add_fetch(OnnxCtx *c, const char *name, IrValue v, int depth)
{
    if (v.node)
        return ir_add_fetch(c->g, name, v, c->st);
    const OnnxSeq *s = onnx_seq_get(c, v);
    if (!s || depth > 8)
        return st_errorf(c->st, ST_ERROR, "%s: fetch '%s' has no value", c->file, name);
    if (s->is_optional)
        return s->n == 0 || add_fetch(c, name, s->v[0], depth + 1);
    for (int k = 0; k < s->n; k++) {
        char en[600];
        snprintf(en, sizeof en, "%s.%d", name, k);
        if (!add_fetch(c, en, s->v[k], depth + 1))
            return false;
    }
    return true;
}

IrGraph *onnx_import(const Onnx__ModelProto *m, const OnnxImportOptions *o, Status *st)
{
    const char *file = o->file ? o->file : "<model>";
    const Onnx__GraphProto *gp = m->graph;
    if (!gp) {
        st_errorf(st, ST_ERROR, "%s: the ModelProto has no graph (field 7)", file);
        return NULL;
    }
    int64_t opset = onnx_model_opset(m);
    if (opset == 0 && m->n_opset_import == 0 && m->has_ir_version && m->ir_version < 3)
        opset = 1; /* IR version 1 and 2 models had no opset_import */
    if (opset < ONNX_MIN_OPSET || opset > ONNX_MAX_OPSET) {
        st_errorf(st, ST_UNSUPPORTED, "%s: the model imports opset %lld of the default domain; tfcc supports %d to %d",
                  file, (long long)opset, ONNX_MIN_OPSET, ONNX_MAX_OPSET);
        return NULL;
    }
    if (!check_ops(gp, file, st))
        return NULL;
    IrGraph *g = ir_graph_new(NULL, st);
    if (!g)
        return NULL;
    g->fold_on_build = true;
    VTable vt = {0};
    OnnxCtx c = {.g = g, .file = file, .opset = opset, .st = st};
    for (size_t i = 0; i < gp->n_initializer && st_ok(st); i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        char what[300];
        snprintf(what, sizeof what, "initializer '%s'", tp->name ? tp->name : "");
        if (!tp->name || !tp->name[0]) {
            st_errorf(st, ST_ERROR, "%s: initializer %zu has no name", file, i);
            break;
        }
        if (find_spec(o, tp->name) && find_spec(o, tp->name)->value == NULL && find_spec(o, tp->name)->has_shape)
            continue; /* overridden by a feed: the graph input below */
        ir_graph_set_origin(g, tp->name, "initializer");
        IrValue v;
        if (onnx_tensor_to_const(g, tp, file, what, &v, st))
            vt_put(&vt, tp->name, v, st);
    }
    struct OnnxSeqs *seqs = onnx_seqs_new();
    c.seqs = seqs;
    if (!seqs)
        st_errorf(st, ST_NOMEM, "out of memory");
    for (size_t i = 0; i < gp->n_input && st_ok(st); i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi->name || (is_initializer(gp, vi->name) && vt_get(&vt, vi->name)))
            continue;
        ir_graph_set_origin(g, vi->name, "input");
        add_input(&c, vi, o, &vt);
    }
    for (int i = 0; i < o->n_feeds && st_ok(st); i++) {
        const char *s = o->feeds[i].name;
        if (!vt_get(&vt, s) && !vt_get(&vt, strip_suffix(s, ":0")) && !seq_part_of(&c, &vt, s))
            st_errorf(st, ST_ERROR, "%s: --feed %s: the graph has no input of that name", file, s);
    }
    OnnxScope sc = {&vt, NULL};
    c.scope = &sc;
    if (st_ok(st))
        lower_nodes(&c, gp, &sc);
    c.nd = NULL;
    if (st_ok(st)) {
        if (o->n_fetches == 0 && gp->n_output == 0)
            st_errorf(st, ST_ERROR, "%s: the graph has no outputs", file);
        int nf = o->n_fetches ? o->n_fetches : (int)gp->n_output;
        for (int i = 0; i < nf && st_ok(st); i++) {
            const char *name = o->n_fetches ? o->fetches[i] : gp->output[i]->name;
            IrValue v = {NULL, 0};
            if (!name || !resolve_fetch(&c, &vt, name, 0, &v))
                st_errorf(st, ST_ERROR, "%s: fetch '%s': no value of that name in the graph", file,
                          name ? name : "");
            else
                add_fetch(&c, name, v, 0);
        }
        if (st_ok(st) && g->n_fetches == 0)
            st_errorf(st, ST_UNSUPPORTED, "%s: every output is an empty sequence or a None optional: nothing to "
                      "fetch", file);
    }
    free(vt.e);
    onnx_seqs_free(seqs);
    if (!st_ok(st)) {
        ir_graph_free(g);
        return NULL;
    }
    return g;
}

/* ---- info ---------------------------------------------------------------- */

static void print_vi(FILE *out, const Onnx__ValueInfoProto *vi)
{
    fprintf(out, "  %s", vi->name ? vi->name : "");
    const Onnx__TypeProto__Tensor *tt =
        vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? vi->type->tensor_type : NULL;
    if (!tt) {
        fprintf(out, ": (not a tensor)\n");
        return;
    }
    fprintf(out, ": %s", onnx_type_name(tt->elem_type));
    if (tt->shape) {
        fprintf(out, "[");
        for (size_t i = 0; i < tt->shape->n_dim; i++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
            if (i)
                fprintf(out, ",");
            if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
                fprintf(out, "%lld", (long long)d->dim_value);
            else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
                fprintf(out, "%s", d->dim_param);
            else
                fprintf(out, "?");
        }
        fprintf(out, "]");
    } else
        fprintf(out, " (shape unknown)");
    fprintf(out, "\n");
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void onnx_print_info(FILE *out, const Onnx__ModelProto *m)
{
    const Onnx__GraphProto *gp = m->graph;
    fprintf(out, "ir_version: %lld\nproducer: %s %s\n", (long long)m->ir_version,
            m->producer_name ? m->producer_name : "", m->producer_version ? m->producer_version : "");
    fprintf(out, "opsets:");
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain;
        fprintf(out, " %s=%lld", d && d[0] ? d : "ai.onnx", (long long)m->opset_import[i]->version);
    }
    fprintf(out, "\nnodes: %zu\ninitializers: %zu\n", gp ? gp->n_node : 0, gp ? gp->n_initializer : 0);
    if (!gp)
        return;
    fprintf(out, "\ninputs:\n");
    for (size_t i = 0; i < gp->n_input; i++)
        if (gp->input[i]->name && !is_initializer(gp, gp->input[i]->name))
            print_vi(out, gp->input[i]);
    fprintf(out, "\noutputs:\n");
    for (size_t i = 0; i < gp->n_output; i++)
        print_vi(out, gp->output[i]);
    fprintf(out, "\nops:\n");
    const char **ops = malloc((gp->n_node ? gp->n_node : 1) * sizeof *ops);
    if (!ops)
        return;
    for (size_t i = 0; i < gp->n_node; i++)
        ops[i] = gp->node[i]->op_type ? gp->node[i]->op_type : "";
    qsort(ops, gp->n_node, sizeof *ops, cmp_str);
    for (size_t i = 0; i < gp->n_node;) {
        size_t j = i;
        while (j < gp->n_node && !strcmp(ops[j], ops[i]))
            j++;
        fprintf(out, "  %-24s %5zu%s\n", ops[i], j - i, onnx_op_supported(ops[i]) ? "" : "  (unsupported)");
        i = j;
    }
    free(ops);
}

bool onnx_op_supported(const char *op_type)
{
    return onnx_find_row(op_type) != NULL;
}
