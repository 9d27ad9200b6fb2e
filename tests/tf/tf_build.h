/* tests/tf/tf_build.h - building small GraphDefs in C for the tf tests.
 *
 * Every allocation goes through tb_alloc and is freed by tb_free_all (called
 * in the test teardown), so tests just build and import.  Node inputs are a
 * NULL-terminated list of "name", "name:1" or "^ctrl".
 */
#ifndef TESTS_TF_BUILD_H
#define TESTS_TF_BUILD_H

#include <check.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/tf/tf.h"

typedef struct TbAlloc {
    void **p;
    size_t n, cap;
} TbAlloc;
static TbAlloc tb_allocs;

static inline void *tb_alloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    ck_assert_ptr_nonnull(p);
    if (tb_allocs.n == tb_allocs.cap) {
        tb_allocs.cap = tb_allocs.cap ? tb_allocs.cap * 2 : 256;
        tb_allocs.p = realloc(tb_allocs.p, tb_allocs.cap * sizeof(void *));
        ck_assert_ptr_nonnull(tb_allocs.p);
    }
    tb_allocs.p[tb_allocs.n++] = p;
    return p;
}

static inline void tb_free_all(void)
{
    for (size_t i = 0; i < tb_allocs.n; i++)
        free(tb_allocs.p[i]);
    free(tb_allocs.p);
    memset(&tb_allocs, 0, sizeof tb_allocs);
}

static inline char *tb_strdup(const char *s)
{
    char *p = tb_alloc(strlen(s) + 1);
    strcpy(p, s);
    return p;
}

typedef struct Tb {
    Tensorflow__GraphDef gd;
    size_t cap;
} Tb;

static inline Tb *tb_new(void)
{
    Tb *b = tb_alloc(sizeof *b);
    tensorflow__graph_def__init(&b->gd);
    return b;
}

static inline Tensorflow__NodeDef *tb_nodev(Tb *b, const char *name, const char *op, va_list ap)
{
    Tensorflow__NodeDef *nd = tb_alloc(sizeof *nd);
    tensorflow__node_def__init(nd);
    nd->name = tb_strdup(name);
    nd->op = tb_strdup(op);
    va_list ap2;
    va_copy(ap2, ap);
    size_t n_in = 0;
    while (va_arg(ap2, const char *) != NULL)
        n_in++;
    va_end(ap2);
    nd->input = tb_alloc(sizeof(char *) * (n_in ? n_in : 1));
    nd->attr = tb_alloc(sizeof(Tensorflow__NodeDef__AttrEntry *) * 16);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;)
        nd->input[nd->n_input++] = tb_strdup(s);
    if (b->gd.n_node == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        Tensorflow__NodeDef **nn = tb_alloc(cap * sizeof *nn);
        if (b->gd.n_node)
            memcpy(nn, b->gd.node, b->gd.n_node * sizeof *nn);
        b->gd.node = nn;
        b->cap = cap;
    }
    b->gd.node[b->gd.n_node++] = nd;
    return nd;
}

/* tb_node(b, "name", "Op", "in0", "in1:1", "^ctrl", NULL) */
static inline Tensorflow__NodeDef *tb_node(Tb *b, const char *name, const char *op, ...)
{
    va_list ap;
    va_start(ap, op);
    Tensorflow__NodeDef *nd = tb_nodev(b, name, op, ap);
    va_end(ap);
    return nd;
}

static inline Tensorflow__AttrValue *tb_attr(Tensorflow__NodeDef *nd, const char *key)
{
    Tensorflow__NodeDef__AttrEntry *e = tb_alloc(sizeof *e);
    Tensorflow__AttrValue *v = tb_alloc(sizeof *v);
    tensorflow__node_def__attr_entry__init(e);
    tensorflow__attr_value__init(v);
    e->key = tb_strdup(key);
    e->value = v;
    ck_assert_uint_lt(nd->n_attr, 16);
    nd->attr[nd->n_attr++] = e;
    return v;
}

static inline void tb_attr_i(Tensorflow__NodeDef *nd, const char *key, int64_t i)
{
    Tensorflow__AttrValue *v = tb_attr(nd, key);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_I;
    v->i = i;
}

static inline void tb_attr_f(Tensorflow__NodeDef *nd, const char *key, float f)
{
    Tensorflow__AttrValue *v = tb_attr(nd, key);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_F;
    v->f = f;
}

static inline void tb_attr_b(Tensorflow__NodeDef *nd, const char *key, bool x)
{
    Tensorflow__AttrValue *v = tb_attr(nd, key);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_B;
    v->b = x;
}

static inline void tb_attr_type(Tensorflow__NodeDef *nd, const char *key, int type)
{
    Tensorflow__AttrValue *v = tb_attr(nd, key);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TYPE;
    v->type = (Tensorflow__DataType)type;
}

static inline void tb_attr_s(Tensorflow__NodeDef *nd, const char *key, const char *s)
{
    Tensorflow__AttrValue *v = tb_attr(nd, key);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_S;
    v->s.data = (uint8_t *)tb_strdup(s);
    v->s.len = strlen(s);
}

static inline Tensorflow__AttrValue__ListValue *tb_attr_list(Tensorflow__NodeDef *nd, const char *key)
{
    Tensorflow__AttrValue *v = tb_attr(nd, key);
    Tensorflow__AttrValue__ListValue *l = tb_alloc(sizeof *l);
    tensorflow__attr_value__list_value__init(l);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_LIST;
    v->list = l;
    return l;
}

/* tb_attr_ints(nd, "strides", 4, (int64_t[]){1, 2, 2, 1}) */
static inline void tb_attr_ints(Tensorflow__NodeDef *nd, const char *key, int n, const int64_t *vals)
{
    Tensorflow__AttrValue__ListValue *l = tb_attr_list(nd, key);
    l->n_i = (size_t)n;
    l->i = tb_alloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (n)
        memcpy(l->i, vals, sizeof(int64_t) * (size_t)n);
}

/* tb_attr_strs(nd, "fused_ops", 2, (const char *[]){"BiasAdd", "Relu"}) */
static inline void tb_attr_strs(Tensorflow__NodeDef *nd, const char *key, int n, const char *const *vals)
{
    Tensorflow__AttrValue__ListValue *l = tb_attr_list(nd, key);
    l->n_s = (size_t)n;
    l->s = tb_alloc(sizeof(ProtobufCBinaryData) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        l->s[i].data = (uint8_t *)tb_strdup(vals[i]);
        l->s[i].len = strlen(vals[i]);
    }
}

/* A TensorShapeProto; dims may hold -1; rank -1 = unknown rank. */
static inline Tensorflow__TensorShapeProto *tb_shape(int rank, const int64_t *dims)
{
    Tensorflow__TensorShapeProto *s = tb_alloc(sizeof *s);
    tensorflow__tensor_shape_proto__init(s);
    if (rank < 0) {
        s->unknown_rank = true;
        return s;
    }
    s->dim = tb_alloc(sizeof(Tensorflow__TensorShapeProto__Dim *) * (size_t)(rank ? rank : 1));
    for (int d = 0; d < rank; d++) {
        Tensorflow__TensorShapeProto__Dim *dim = tb_alloc(sizeof *dim);
        tensorflow__tensor_shape_proto__dim__init(dim);
        dim->size = dims[d];
        s->dim[s->n_dim++] = dim;
    }
    return s;
}

static inline void tb_attr_shape(Tensorflow__NodeDef *nd, const char *key, int rank, const int64_t *dims)
{
    Tensorflow__AttrValue *v = tb_attr(nd, key);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_SHAPE;
    v->shape = tb_shape(rank, dims);
}

/* A Const whose `value` tensor the caller fills in (returned). */
static inline Tensorflow__TensorProto *tb_const(Tb *b, const char *name, int dtype, int rank,
                                                const int64_t *dims)
{
    Tensorflow__NodeDef *nd = tb_node(b, name, "Const", NULL);
    tb_attr_type(nd, "dtype", dtype);
    Tensorflow__AttrValue *v = tb_attr(nd, "value");
    Tensorflow__TensorProto *t = tb_alloc(sizeof *t);
    tensorflow__tensor_proto__init(t);
    t->dtype = (Tensorflow__DataType)dtype;
    t->tensor_shape = tb_shape(rank, dims);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TENSOR;
    v->tensor = t;
    return t;
}

/* Float32 Const with n float_val entries (n may be < count: splat). */
static inline void tb_const_f(Tb *b, const char *name, int rank, const int64_t *dims, int n,
                              const float *vals)
{
    Tensorflow__TensorProto *t = tb_const(b, name, 1 /* DT_FLOAT */, rank, dims);
    t->n_float_val = (size_t)n;
    t->float_val = tb_alloc(sizeof(float) * (size_t)(n ? n : 1));
    if (n)
        memcpy(t->float_val, vals, sizeof(float) * (size_t)n);
}

static inline void tb_const_i32(Tb *b, const char *name, int rank, const int64_t *dims, int n,
                                const int32_t *vals)
{
    Tensorflow__TensorProto *t = tb_const(b, name, 3 /* DT_INT32 */, rank, dims);
    t->n_int_val = (size_t)n;
    t->int_val = tb_alloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (n)
        memcpy(t->int_val, vals, sizeof(int32_t) * (size_t)n);
}

/* Placeholder of dtype with a `shape` attr (rank -1: unknown rank). */
static inline Tensorflow__NodeDef *tb_placeholder(Tb *b, const char *name, int dtype, int rank,
                                                  const int64_t *dims)
{
    Tensorflow__NodeDef *nd = tb_node(b, name, "Placeholder", NULL);
    tb_attr_type(nd, "dtype", dtype);
    tb_attr_shape(nd, "shape", rank, dims);
    return nd;
}

#define TB_DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define TB_F(...) ((const float[]){__VA_ARGS__})
#define TB_N(...) (int)(sizeof((const float[]){__VA_ARGS__}) / sizeof(float))

#endif
