/* tests/tf/tf_check.h - import-and-check helpers shared by the TF op test
 * programs (test_array.c, test_list_ops.c); each includes it once.
 *
 * konst builds Const nodes, import_ok / import_fails run tf_import on the
 * GraphDef with every Placeholder fed (shape and dtype from its attrs), and
 * fetched / expect_* check a fetch that folded to a constant against values
 * derived by hand in the tests.  The imported graph is `gr` (freed by
 * teardown, which also frees the GraphDef builder's memory).
 */
#ifndef TESTS_TF_TF_CHECK_H
#define TESTS_TF_TF_CHECK_H

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "compiler/tf/tf.h"
#include "tf_build.h"

typedef Tb G;

/* A Const node of dtype (TF DataType = tcrt_dtype number) and shape. Exactly
 * one of f / i / b supplies the count(shape) values. */
static Tensorflow__NodeDef *konst(G *g, const char *name, int dtype, int rank, const int64_t *dims,
                                  const float *f, const int32_t *i, const bool *b)
{
    Tensorflow__NodeDef *nd = tb_node(g, name, "Const", NULL);
    tb_attr_type(nd, "dtype", dtype);
    Tensorflow__TensorProto *t = tb_alloc(sizeof *t);
    tensorflow__tensor_proto__init(t);
    t->dtype = (Tensorflow__DataType)dtype;
    t->tensor_shape = tb_shape(rank, dims);
    size_t count = 1;
    for (int d = 0; d < rank; d++)
        count *= (size_t)dims[d];
    if (f) {
        t->n_float_val = count;
        t->float_val = tb_alloc(sizeof(float) * (count ? count : 1));
        memcpy(t->float_val, f, sizeof(float) * count);
    } else if (i) {
        t->n_int_val = count;
        t->int_val = tb_alloc(sizeof(int32_t) * (count ? count : 1));
        memcpy(t->int_val, i, sizeof(int32_t) * count);
    } else if (b) {
        t->n_bool_val = count;
        t->bool_val = tb_alloc(sizeof(protobuf_c_boolean) * (count ? count : 1));
        for (size_t k = 0; k < count; k++)
            t->bool_val[k] = b[k];
    }
    Tensorflow__AttrValue *v = tb_attr(nd, "value");
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TENSOR;
    v->tensor = t;
    return nd;
}


#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define F32S(...) ((const float[]){__VA_ARGS__})
#define I32S(...) ((const int32_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

static IrGraph *gr;
static Status st;

static void teardown(void)
{
    if (gr)
        ir_graph_free(gr);
    gr = NULL;
    tb_free_all();
}

/* Every Placeholder of g becomes a feed (shape and dtype from its attrs). */
static TfFeedSpec feed_specs[16];
static int placeholder_feeds(G *g)
{
    int n = 0;
    for (size_t i = 0; i < g->gd.n_node && n < 16; i++)
        if (strcmp(g->gd.node[i]->op, "Placeholder") == 0) {
            memset(&feed_specs[n], 0, sizeof feed_specs[n]);
            feed_specs[n].name = g->gd.node[i]->name;
            feed_specs[n].dtype = TCRT_INVALID;
            n++;
        }
    return n;
}

/* Imports g fetching the NULL-terminated tensor names; asserts success and
 * a graph that verifies. */
static void import_ok(G *g, ...)
{
    const char *fetches[16];
    int n = 0;
    va_list ap;
    va_start(ap, g);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL;)
        fetches[n++] = s;
    va_end(ap);
    TfImportOptions o = {"test.pbtxt", feed_specs, placeholder_feeds(g), fetches, n, NULL, 0, NULL, NULL, false};
    Status s0 = ST_INIT;
    st = s0;
    gr = tf_import(&g->gd, &o, &st);
    ck_assert_msg(gr != NULL, "import failed: %s", st.msg);
    ck_assert_int_eq(gr->n_fetches, n);
    ck_assert_msg(ir_verify(gr, &st), "verify: %s", st.msg);
}

/* Imports g fetching one tensor; asserts failure and that the message holds want. */
static void import_fails(G *g, const char *fetch, const char *want)
{
    TfImportOptions o = {"test.pbtxt", feed_specs, placeholder_feeds(g), &fetch, 1, NULL, 0, NULL, NULL, false};
    Status s0 = ST_INIT;
    st = s0;
    gr = tf_import(&g->gd, &o, &st);
    ck_assert_msg(gr == NULL, "import of %s should fail", fetch);
    ck_assert_msg(strstr(st.msg, want) != NULL, "message '%s' lacks '%s'", st.msg, want);
}

/* The fetched constant i: checks dtype and shape, returns its data. */

static const void *fetched(int i, tcrt_dtype dt, int rank, const int64_t *dims)
{
    IrValue v = gr->fetches[i].value;
    if (!ir_is_const(v) && v.node->n_outputs > 1) {
        /* the builder folds single-output nodes only; fold multi-output ones (TopK) here */
        IrValue outs[4];
        Status fs = ST_INIT;
        ck_assert_int_le(v.node->n_outputs, 4);
        ck_assert_msg(ir_fold_node(gr, v.node, outs, &fs), "fold failed: %s", fs.msg);
        v = outs[v.index];
    }
    ck_assert_msg(ir_is_const(v), "fetch %d is not folded to a constant (op %s)", i, ir_op_name(v.node->op));
    const IrType *t = ir_value_type(v);
    char a[128];
    ck_assert_msg(t->dtype == dt, "fetch %d dtype %s, want %s", i, tcrt_dtype_name(t->dtype), tcrt_dtype_name(dt));
    ck_assert_msg(t->shape.rank == rank, "fetch %d shape %s, want rank %d", i, ir_shape_str(&t->shape, a, sizeof a),
                  rank);
    for (int d = 0; d < rank; d++)
        ck_assert_msg(t->shape.dims[d] == dims[d], "fetch %d shape %s, dim %d want %lld", i,
                      ir_shape_str(&t->shape, a, sizeof a), d, (long long)dims[d]);
    return v.node->data;
}

static void expect_f32(int i, int rank, const int64_t *dims, const float *want)
{
    const float *p = fetched(i, TCRT_F32, rank, dims);
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    for (int64_t k = 0; k < n; k++)
        ck_assert_msg(fabsf(p[k] - want[k]) <= 1e-6f, "fetch %d [%lld] = %g, want %g", i, (long long)k, p[k],
                      want[k]);
}

static void expect_ints(int i, tcrt_dtype dt, int rank, const int64_t *dims, const int64_t *want)
{
    const void *p = fetched(i, dt, rank, dims);
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    for (int64_t k = 0; k < n; k++) {
        int64_t got = dt == TCRT_I32 ? ((const int32_t *)p)[k]
                      : dt == TCRT_I64 ? ((const int64_t *)p)[k]
                                       : ((const uint8_t *)p)[k];
        ck_assert_msg(got == want[k], "fetch %d [%lld] = %lld, want %lld", i, (long long)k, (long long)got,
                      (long long)want[k]);
    }
}

#define EXPECT_F32(i, dims, ...) expect_f32(i, NDIMS dims, DIMS dims, F32S(__VA_ARGS__))
#define EXPECT_INT(i, dt, dims, ...) expect_ints(i, dt, NDIMS dims, DIMS dims, DIMS(__VA_ARGS__))
#define EXPECT_INT0(i, dt, v) expect_ints(i, dt, 0, NULL, DIMS(v))

#endif
