/* compiler/tf/tf_attr.c - attribute access, dtypes and error messages for
 * the TensorFlow lowering tables.
 *
 * Attributes are looked up on the NodeDef first (a linear scan: nodes carry a
 * handful).  When the node lacks one, the op row's registry defaults are
 * used: a small string "name=value;name=[1,2];padding=VALID;T=DT_FLOAT"
 * parsed on demand by find_default (values: ints, floats, true/false, bare
 * strings, DT_* names and [..] int/float lists).  These are TensorFlow's
 * op-registry defaults kept as our own data, so graphs written before an
 * attr existed (2017 graphs without `dilations`) still load.
 *
 * tf_attr_tensor turns a TensorProto into an IR constant: tensor_content
 * (raw little-endian bytes) or the typed *_val lists, where fewer values than
 * elements repeat the last one (TensorFlow's splat rule) and none means
 * zeros.  Halves and bfloat16 are widened to float32.  A repeated value that
 * would expand past IR_MAX_FOLD_BYTES becomes scalar + broadcast instead.
 *
 * Invariants: every failure records a message naming the node and op through
 * tf_errorf and returns false; strings returned point into the GraphDef or
 * the graph's arena.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/tf/tf_int.h"

bool tf_errorf(TfCtx *c, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *name = c->nd && c->nd->name ? c->nd->name : "?";
    const char *op = c->nd && c->nd->op ? c->nd->op : "?";
    if (c->file)
        return st_errorf(c->st, ST_ERROR, "%s: node '%s' (%s): %s", c->file, name, op, msg);
    return st_errorf(c->st, ST_ERROR, "node '%s' (%s): %s", name, op, msg);
}

/* ---- dtypes ---- */

static const struct {
    int tf;
    const char *name;
} dtype_names[] = {
    {1, "DT_FLOAT"},    {2, "DT_DOUBLE"},  {3, "DT_INT32"},       {4, "DT_UINT8"},     {5, "DT_INT16"},
    {6, "DT_INT8"},     {7, "DT_STRING"},  {8, "DT_COMPLEX64"},   {9, "DT_INT64"},     {10, "DT_BOOL"},
    {11, "DT_QINT8"},   {12, "DT_QUINT8"}, {13, "DT_QINT32"},     {14, "DT_BFLOAT16"}, {15, "DT_QINT16"},
    {16, "DT_QUINT16"}, {17, "DT_UINT16"}, {18, "DT_COMPLEX128"}, {19, "DT_HALF"},     {20, "DT_RESOURCE"},
    {21, "DT_VARIANT"}, {22, "DT_UINT32"}, {23, "DT_UINT64"},
};

static const char *dtype_name(int tf_type, char *buf, size_t n)
{
    int base = tf_type > 100 ? tf_type - 100 : tf_type;
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (dtype_names[i].tf == base) {
            snprintf(buf, n, "%s%s", dtype_names[i].name, tf_type > 100 ? "_REF" : "");
            return buf;
        }
    snprintf(buf, n, "DataType %d", tf_type);
    return buf;
}

static bool dtype_from_name(const char *s, size_t len, int *out)
{
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (strlen(dtype_names[i].name) == len && memcmp(dtype_names[i].name, s, len) == 0) {
            *out = dtype_names[i].tf;
            return true;
        }
    return false;
}

/* Maps a TF DataType to what tfcc computes in.  Reference types (x_REF,
 * +100) are their base type; half and bfloat16 are widened to float32, as
 * their constants are on import. */
static bool map_dtype(int tf_type, tcrt_dtype *out)
{
    int t = tf_type > 100 ? tf_type - 100 : tf_type;
    switch (t) {
    case 1:
        *out = TCRT_F32;
        return true;
    case 2:
        *out = TCRT_F64;
        return true;
    case 3:
        *out = TCRT_I32;
        return true;
    case 4:
        *out = TCRT_U8;
        return true;
    case 5:
        *out = TCRT_I16;
        return true;
    case 6:
        *out = TCRT_I8;
        return true;
    case 9:
        *out = TCRT_I64;
        return true;
    case 10:
        *out = TCRT_BOOL;
        return true;
    case 17:
        *out = TCRT_U16;
        return true;
    case 14: /* DT_BFLOAT16 */
    case 19: /* DT_HALF */
        *out = TCRT_F32;
        return true;
    default:
        return false;
    }
}

bool tf_dtype(TfCtx *c, int tf_type, tcrt_dtype *out)
{
    if (map_dtype(tf_type, out))
        return true;
    char buf[40];
    return tf_errorf(c, "unsupported dtype %s", dtype_name(tf_type, buf, sizeof buf));
}

/* ---- lookup ---- */

static const Tensorflow__AttrValue *find_attr(TfCtx *c, const char *name)
{
    const Tensorflow__NodeDef *nd = c->nd;
    if (!nd)
        return NULL;
    for (size_t i = 0; i < nd->n_attr; i++) {
        const Tensorflow__NodeDef__AttrEntry *e = nd->attr[i];
        if (e && e->key && strcmp(e->key, name) == 0 && e->value)
            return e->value;
    }
    return NULL;
}

/* Finds "name=value" in the row's defaults; sets *v and *len to the value text. */
static bool find_default(TfCtx *c, const char *name, const char **v, size_t *len)
{
    const char *s = c->row ? c->row->defaults : NULL;
    size_t nlen = strlen(name);
    while (s && *s) {
        const char *end = strchr(s, ';');
        if (!end)
            end = s + strlen(s);
        const char *eq = memchr(s, '=', (size_t)(end - s));
        if (eq && (size_t)(eq - s) == nlen && memcmp(s, name, nlen) == 0) {
            *v = eq + 1;
            *len = (size_t)(end - eq - 1);
            return true;
        }
        s = *end ? end + 1 : end;
    }
    return false;
}

static bool missing(TfCtx *c, const char *name)
{
    return tf_errorf(c, "missing attribute '%s'", name);
}

static bool wrong_kind(TfCtx *c, const char *name, const char *kind)
{
    return tf_errorf(c, "attribute '%s' is not %s", name, kind);
}

bool tf_attr_has(TfCtx *c, const char *name)
{
    const char *v;
    size_t len;
    return find_attr(c, name) || find_default(c, name, &v, &len);
}

/* Parses a number from a default's text (which is not NUL-terminated). */
static bool parse_num(const char *s, size_t len, double *d, int64_t *i, bool want_int)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    if (want_int) {
        long long v = strtoll(buf, &end, 10);
        if (*end || errno)
            return false;
        *i = v;
    } else {
        double v = strtod(buf, &end);
        if (*end || errno)
            return false;
        *d = v;
    }
    return true;
}

/* Parses "[a,b,c]" (ints or floats) from a default. */
static bool parse_list(const char *s, size_t len, int64_t *iv, double *fv, int max, int *n)
{
    if (len < 2 || s[0] != '[' || s[len - 1] != ']')
        return false;
    *n = 0;
    const char *p = s + 1, *end = s + len - 1;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *item_end = comma ? comma : end;
        if (*n >= max)
            return false;
        double d = 0;
        int64_t i = 0;
        if (!parse_num(p, (size_t)(item_end - p), &d, &i, iv != NULL))
            return false;
        if (iv)
            iv[*n] = i;
        else
            fv[*n] = d;
        (*n)++;
        p = comma ? comma + 1 : end;
    }
    return true;
}

static bool bad_default(TfCtx *c, const char *name)
{
    return tf_errorf(c, "internal: bad registry default for attribute '%s'", name);
}

bool tf_attr_int(TfCtx *c, const char *name, int64_t *v)
{
    const Tensorflow__AttrValue *a = find_attr(c, name);
    if (a) {
        if (a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_I)
            return wrong_kind(c, name, "an int");
        *v = a->i;
        return true;
    }
    const char *s;
    size_t len;
    double d;
    if (!find_default(c, name, &s, &len))
        return missing(c, name);
    return parse_num(s, len, &d, v, true) || bad_default(c, name);
}

bool tf_attr_float(TfCtx *c, const char *name, double *v)
{
    const Tensorflow__AttrValue *a = find_attr(c, name);
    if (a) {
        if (a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_F)
            *v = a->f;
        else if (a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_I)
            *v = (double)a->i;
        else
            return wrong_kind(c, name, "a float");
        return true;
    }
    const char *s;
    size_t len;
    int64_t i;
    if (!find_default(c, name, &s, &len))
        return missing(c, name);
    return parse_num(s, len, v, &i, false) || bad_default(c, name);
}

bool tf_attr_bool(TfCtx *c, const char *name, bool *v)
{
    const Tensorflow__AttrValue *a = find_attr(c, name);
    if (a) {
        if (a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_B)
            return wrong_kind(c, name, "a bool");
        *v = a->b;
        return true;
    }
    const char *s;
    size_t len;
    if (!find_default(c, name, &s, &len))
        return missing(c, name);
    if (len == 4 && memcmp(s, "true", 4) == 0)
        *v = true;
    else if (len == 5 && memcmp(s, "false", 5) == 0)
        *v = false;
    else
        return bad_default(c, name);
    return true;
}

bool tf_attr_type(TfCtx *c, const char *name, tcrt_dtype *v)
{
    const Tensorflow__AttrValue *a = find_attr(c, name);
    if (a) {
        if (a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_TYPE)
            return wrong_kind(c, name, "a type");
        return tf_dtype(c, (int)a->type, v);
    }
    const char *s;
    size_t len;
    int t;
    if (!find_default(c, name, &s, &len))
        return missing(c, name);
    if (!dtype_from_name(s, len, &t))
        return bad_default(c, name);
    return tf_dtype(c, t, v);
}

/* Copies len bytes into the graph's arena as a C string; embedded NULs are
 * rejected (no attr we read can hold one). */
static bool arena_str(TfCtx *c, const char *name, const void *p, size_t len, const char **v)
{
    if (memchr(p, 0, len))
        return tf_errorf(c, "attribute '%s' holds a NUL byte", name);
    char *s = arena_alloc(&c->g->arena, len + 1);
    if (!s)
        return st_errorf(c->st, ST_NOMEM, "out of memory");
    memcpy(s, p, len);
    s[len] = 0;
    *v = s;
    return true;
}

bool tf_attr_str(TfCtx *c, const char *name, const char **v)
{
    const Tensorflow__AttrValue *a = find_attr(c, name);
    if (a) {
        if (a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_S)
            return wrong_kind(c, name, "a string");
        return arena_str(c, name, a->s.data ? (const void *)a->s.data : "", a->s.len, v);
    }
    const char *s;
    size_t len;
    if (!find_default(c, name, &s, &len))
        return missing(c, name);
    return arena_str(c, name, s, len, v);
}

/* An AttrValue that is a list, or one that is unset (protobuf's JSON and
 * text forms write an empty list as `list {}` or nothing at all). */
static const Tensorflow__AttrValue__ListValue *as_list(const Tensorflow__AttrValue *a, bool *empty)
{
    *empty = false;
    if (a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST)
        return a->list;
    if (a->value_case == TENSORFLOW__ATTR_VALUE__VALUE__NOT_SET)
        *empty = true;
    return NULL;
}

bool tf_attr_ints(TfCtx *c, const char *name, int64_t *v, int max, int *n)
{
    const Tensorflow__AttrValue *a = find_attr(c, name);
    if (a) {
        bool empty;
        const Tensorflow__AttrValue__ListValue *l = as_list(a, &empty);
        if (!l && !empty)
            return wrong_kind(c, name, "a list of ints");
        size_t cnt = l ? l->n_i : 0;
        if (cnt > (size_t)max)
            return tf_errorf(c, "attribute '%s' has %zu values, at most %d allowed", name, cnt, max);
        for (size_t i = 0; i < cnt; i++)
            v[i] = l->i[i];
        *n = (int)cnt;
        return true;
    }
    const char *s;
    size_t len;
    if (!find_default(c, name, &s, &len))
        return missing(c, name);
    return parse_list(s, len, v, NULL, max, n) || bad_default(c, name);
}

bool tf_attr_floats(TfCtx *c, const char *name, double *v, int max, int *n)
{
    const Tensorflow__AttrValue *a = find_attr(c, name);
    if (a) {
        bool empty;
        const Tensorflow__AttrValue__ListValue *l = as_list(a, &empty);
        if (!l && !empty)
            return wrong_kind(c, name, "a list of floats");
        size_t cnt = l ? l->n_f : 0;
        if (cnt > (size_t)max)
            return tf_errorf(c, "attribute '%s' has %zu values, at most %d allowed", name, cnt, max);
        for (size_t i = 0; i < cnt; i++)
            v[i] = l->f[i];
        *n = (int)cnt;
        return true;
    }
    const char *s;
    size_t len;
    if (!find_default(c, name, &s, &len))
        return missing(c, name);
    return parse_list(s, len, NULL, v, max, n) || bad_default(c, name);
}

bool tf_attr_strs(TfCtx *c, const char *name, const char **v, int max, int *n)
{
    const Tensorflow__AttrValue *a = find_attr(c, name);
    if (a) {
        bool empty;
        const Tensorflow__AttrValue__ListValue *l = as_list(a, &empty);
        if (!l && !empty)
            return wrong_kind(c, name, "a list of strings");
        size_t cnt = l ? l->n_s : 0;
        if (cnt > (size_t)max)
            return tf_errorf(c, "attribute '%s' has %zu values, at most %d allowed", name, cnt, max);
        for (size_t i = 0; i < cnt; i++)
            if (!arena_str(c, name, l->s[i].data ? (const void *)l->s[i].data : "", l->s[i].len, &v[i]))
                return false;
        *n = (int)cnt;
        return true;
    }
    const char *s;
    size_t len;
    if (!find_default(c, name, &s, &len))
        return missing(c, name);
    if (len == 2 && s[0] == '[' && s[1] == ']') { /* the only list(string) default we keep */
        *n = 0;
        return true;
    }
    return bad_default(c, name);
}

/* ---- tensors ---- */

/* IEEE half bits -> float. */
static float half_to_float(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24); /* zero or subnormal */
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

static float bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Stores value number i (a double or int64, whichever the list holds) into
 * element j of a buffer of dtype dt. */
static void store_elem(void *buf, tcrt_dtype dt, int64_t j, double d, int64_t iv, bool is_int)
{
    switch (dt) {
    case TCRT_F32:
        ((float *)buf)[j] = is_int ? (float)iv : (float)d;
        break;
    case TCRT_F64:
        ((double *)buf)[j] = is_int ? (double)iv : d;
        break;
    case TCRT_I32:
        ((int32_t *)buf)[j] = (int32_t)iv;
        break;
    case TCRT_I64:
        ((int64_t *)buf)[j] = iv;
        break;
    case TCRT_I16:
        ((int16_t *)buf)[j] = (int16_t)iv;
        break;
    case TCRT_I8:
        ((int8_t *)buf)[j] = (int8_t)iv;
        break;
    case TCRT_U8:
        ((uint8_t *)buf)[j] = (uint8_t)iv;
        break;
    case TCRT_U16:
        ((uint16_t *)buf)[j] = (uint16_t)iv;
        break;
    case TCRT_BOOL:
        ((uint8_t *)buf)[j] = iv != 0;
        break;
    default:
        break;
    }
}

static bool tensor_shape(TfCtx *c, const Tensorflow__TensorShapeProto *sp, IrShape *s, int64_t *count)
{
    s->rank = 0;
    if (sp) {
        if (sp->unknown_rank)
            return tf_errorf(c, "constant tensor has unknown rank");
        if (sp->n_dim > IR_MAX_RANK)
            return tf_errorf(c, "constant tensor has rank %zu, at most %d supported", sp->n_dim, IR_MAX_RANK);
        s->rank = (int)sp->n_dim;
        for (size_t i = 0; i < sp->n_dim; i++) {
            int64_t d = sp->dim[i] ? sp->dim[i]->size : 0;
            if (d < 0)
                return tf_errorf(c, "constant tensor has negative dimension %lld", (long long)d);
            s->dims[i] = d;
        }
    }
    if (!ir_shape_count_checked(s, count)) {
        char buf[200];
        return tf_errorf(c, "constant tensor of shape %s is too large", ir_shape_str(s, buf, sizeof buf));
    }
    return true;
}

/* Length of the typed value list that holds tp's values as dtype dt. */
static size_t value_count(const Tensorflow__TensorProto *tp, tcrt_dtype dt, bool half_or_bf16)
{
    switch (dt) {
    case TCRT_F32:
        return half_or_bf16 ? tp->n_half_val : tp->n_float_val;
    case TCRT_F64:
        return tp->n_double_val;
    case TCRT_I64:
        return tp->n_int64_val;
    case TCRT_BOOL:
        return tp->n_bool_val;
    default:
        return tp->n_int_val;
    }
}

bool tf_tensor_to_const(TfCtx *c, const Tensorflow__TensorProto *tp, IrValue *v)
{
    IrShape shape = {0};
    int64_t count;
    if (!tensor_shape(c, tp->tensor_shape, &shape, &count))
        return false;
    int tft = (int)tp->dtype;
    bool is_half = tft == 19, is_bf16 = tft == 14;
    tcrt_dtype dt;
    if (!tf_dtype(c, tft, &dt))
        return false;
    size_t esz = tcrt_dtype_size(dt);
    size_t bytes = (size_t)count * esz;
    if (bytes > ((size_t)1 << 34))
        return tf_errorf(c, "constant tensor is too large");

    /* A value list shorter than the shape repeats its last value: a few
     * bytes of file can ask for 2^34 elements.  Past IR_MAX_FOLD_BYTES a
     * single repeated value becomes a scalar constant broadcast at run time
     * (nothing that size is allocated here); a longer list is refused. */
    if (tp->tensor_content.len == 0 && bytes > IR_MAX_FOLD_BYTES) {
        size_t nv = value_count(tp, dt, is_half || is_bf16);
        if (nv > 1)
            return tf_errorf(c, "constant tensor of shape %s lists %zu values; repeating the last one to fill it "
                                "needs %zu bytes, more than the limit of %zu",
                             ir_shape_str(&shape, (char[200]){0}, 200), nv, bytes, IR_MAX_FOLD_BYTES);
        Tensorflow__TensorProto scalar_tp = *tp;
        scalar_tp.tensor_shape = NULL; /* rank 0: the one value (or zero) */
        IrValue scalar;
        if (!tf_tensor_to_const(c, &scalar_tp, &scalar))
            return false;
        IrType t = {.dtype = dt, .shape = shape};
        *v = ir_emit1(c->g, OP_BROADCAST, &scalar, 1, NULL, &t, c->st);
        return v->node != NULL;
    }

    /* Raw bytes in the right layout: hand them to ir_const directly. */
    if (tp->tensor_content.len > 0 && !is_half && !is_bf16 && dt != TCRT_BOOL) {
        if (tp->tensor_content.len != bytes)
            return tf_errorf(c, "tensor_content has %zu bytes, shape %s of %s needs %zu",
                             tp->tensor_content.len, ir_shape_str(&shape, (char[200]){0}, 200),
                             tcrt_dtype_name(dt), bytes);
        *v = ir_const(c->g, dt, &shape, tp->tensor_content.data, c->st);
        return v->node != NULL;
    }

    void *buf = xx_malloc(bytes ? bytes : 1);
    if (!buf)
        return st_errorf(c->st, ST_NOMEM, "out of memory");
    memset(buf, 0, bytes ? bytes : 1);
    bool ok = true;
    if (tp->tensor_content.len > 0) {
        size_t src_sz = (is_half || is_bf16) ? 2 : 1;
        if (tp->tensor_content.len != (size_t)count * src_sz) {
            ok = tf_errorf(c, "tensor_content has %zu bytes, expected %zu", tp->tensor_content.len,
                           (size_t)count * src_sz);
        } else {
            for (int64_t j = 0; j < count; j++) {
                const uint8_t *p = tp->tensor_content.data + j * (int64_t)src_sz;
                if (is_half || is_bf16) {
                    uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
                    ((float *)buf)[j] = is_half ? half_to_float(h) : bf16_to_float(h);
                } else {
                    ((uint8_t *)buf)[j] = p[0] != 0; /* bool */
                }
            }
        }
    } else {
        /* Typed value lists. */
        size_t n = value_count(tp, dt, is_half || is_bf16);
        if (n > (size_t)count) {
            ok = tf_errorf(c, "constant has %zu values but its shape holds %lld", n, (long long)count);
        } else if (n > 0) {
            for (int64_t j = 0; j < count; j++) {
                size_t k = (size_t)j < n ? (size_t)j : n - 1; /* splat: repeat the last value */
                double d = 0;
                int64_t iv = 0;
                bool is_int = true;
                switch (dt) {
                case TCRT_F32:
                    is_int = false;
                    if (is_half)
                        d = half_to_float((uint16_t)tp->half_val[k]);
                    else if (is_bf16)
                        d = bf16_to_float((uint16_t)tp->half_val[k]);
                    else
                        d = tp->float_val[k];
                    break;
                case TCRT_F64:
                    is_int = false;
                    d = tp->double_val[k];
                    break;
                case TCRT_I64:
                    iv = tp->int64_val[k];
                    break;
                case TCRT_BOOL:
                    iv = tp->bool_val[k] != 0;
                    break;
                default:
                    iv = tp->int_val[k];
                    break;
                }
                store_elem(buf, dt, j, d, iv, is_int);
            }
        }
    }
    if (ok) {
        *v = ir_const(c->g, dt, &shape, buf, c->st);
        ok = v->node != NULL;
    }
    xx_free(buf);
    return ok;
}

bool tf_attr_tensor(TfCtx *c, const char *name, IrValue *v)
{
    const Tensorflow__AttrValue *a = find_attr(c, name);
    if (!a)
        return missing(c, name);
    if (a->value_case != TENSORFLOW__ATTR_VALUE__VALUE_TENSOR || !a->tensor)
        return wrong_kind(c, name, "a tensor");
    return tf_tensor_to_const(c, a->tensor, v);
}

bool tf_const_ints(TfCtx *c, IrValue v, const char *what, int64_t *out, int max, int *n)
{
    if (!v.node || !ir_is_const(v))
        return tf_errorf(c, "%s must be a constant", what);
    tcrt_dtype dt = ir_value_type(v)->dtype;
    if (dt != TCRT_I32 && dt != TCRT_I64 && dt != TCRT_I16 && dt != TCRT_I8 && dt != TCRT_U8 &&
        dt != TCRT_U16)
        return tf_errorf(c, "%s must be an integer tensor, not %s", what, tcrt_dtype_name(dt));
    if (ir_shape_count(&ir_value_type(v)->shape) > max)
        return tf_errorf(c, "%s has more than %d elements", what, max);
    if (!ir_const_ints(v, out, max, n))
        return tf_errorf(c, "%s must be a constant", what);
    return true;
}
