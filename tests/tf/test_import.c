/* tests/tf/test_import.c - Check suite for compiler/tf/tf_import.c and
 * tf_attr.c: tensor names, feeds (shapes, dtypes, cutting the graph),
 * pruning to the fetches, Const tensors (typed lists, splat, halves,
 * tensor_content), the op table, and every import error message pinned.
 *
 * Graphs are built in C (tf_build.h).  Numbers are hand-derived next to
 * each expectation.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>

#include "tf_build.h"
#include "compiler/tf/tf_int.h"

static IrGraph *gr;
static Status st;

static void setup(void)
{
    gr = NULL;
    st = (Status)ST_INIT;
}

static void teardown(void)
{
    if (gr)
        ir_graph_free(gr);
    gr = NULL;
    tb_free_all();
}

static IrGraph *import_opts(Tb *b, const char *file, const TfFeedSpec *feeds, int n_feeds, const char *fetch)
{
    const char *fetches[1] = {fetch};
    TfImportOptions o = {file, feeds, n_feeds, fetches, 1, NULL, 0, NULL, NULL, false};
    gr = tf_import(&b->gd, &o, &st);
    return gr;
}

static void import_ok(Tb *b, const char *fetch)
{
    import_opts(b, NULL, NULL, 0, fetch);
    ck_assert_msg(gr != NULL, "import failed: %s", st.msg);
}

/* Import must fail with exactly `want` as its (first) message. */
static void import_err(Tb *b, const char *file, const TfFeedSpec *feeds, int n_feeds, const char *fetch,
                       const char *want)
{
    import_opts(b, file, feeds, n_feeds, fetch);
    ck_assert_ptr_null(gr);
    ck_assert(!st_ok(&st));
    char first[4096];
    snprintf(first, sizeof first, "%s", st.msg);
    char *nl = strchr(first, '\n');
    if (nl)
        *nl = 0;
    ck_assert_str_eq(first, want);
}

static const IrNode *fetched_const(int i, tcrt_dtype dt, int rank, const int64_t *dims)
{
    ck_assert_int_gt(gr->n_fetches, i);
    const IrNode *n = gr->fetches[i].value.node;
    ck_assert_int_eq(n->op, OP_CONST);
    const IrType *t = ir_value_type(gr->fetches[i].value);
    ck_assert_int_eq(t->dtype, dt);
    ck_assert_int_eq(t->shape.rank, rank);
    for (int d = 0; d < rank; d++)
        ck_assert_int_eq(t->shape.dims[d], dims[d]);
    return n;
}

static void expect_f32(int rank, const int64_t *dims, const float *want)
{
    const IrNode *n = fetched_const(0, TCRT_F32, rank, dims);
    int64_t cnt = 1;
    for (int d = 0; d < rank; d++)
        cnt *= dims[d];
    const float *got = n->data;
    for (int64_t j = 0; j < cnt; j++)
        ck_assert_msg(fabsf(got[j] - want[j]) <= 1e-6f, "element %lld: got %g want %g", (long long)j, got[j],
                      want[j]);
}

/* ---- tensor names ---- */

START_TEST(test_parse_tensor_name)
{
    char buf[64];
    int k = -1;
    ck_assert(tf_parse_tensor_name("conv/Relu", buf, sizeof buf, &k));
    ck_assert_str_eq(buf, "conv/Relu");
    ck_assert_int_eq(k, 0);
    ck_assert(tf_parse_tensor_name("split:12", buf, sizeof buf, &k));
    ck_assert_str_eq(buf, "split");
    ck_assert_int_eq(k, 12);
    ck_assert(!tf_parse_tensor_name("split:x", buf, sizeof buf, &k));
    ck_assert(!tf_parse_tensor_name("split:", buf, sizeof buf, &k));
    ck_assert(!tf_parse_tensor_name(":1", buf, sizeof buf, &k));
    ck_assert(!tf_parse_tensor_name("", buf, sizeof buf, &k));
    ck_assert(!tf_parse_tensor_name("a_rather_long_name", buf, 4, &k));
}
END_TEST

/* ---- feeds ---- */

/* Graph-as-function GraphDefs: an _Arg (dtype in T) is fed like a
 * placeholder and fetching a _Retval gives its input. */
START_TEST(test_arg_retval)
{
    Tb *b = tb_new();
    Tensorflow__NodeDef *a = tb_node(b, "a", "_Arg", NULL);
    tb_attr_type(a, "T", 1);
    tb_attr_i(a, "index", 0);
    tb_node(b, "n", "Neg", "a", NULL);
    Tensorflow__NodeDef *r = tb_node(b, "ret", "_Retval", "n", NULL);
    tb_attr_i(r, "index", 0);
    TfFeedSpec f = {"a", true, {1, {3}}, TCRT_INVALID, NULL};
    import_opts(b, NULL, &f, 1, "ret");
    ck_assert_msg(gr != NULL, "%s", st.msg);
    ck_assert_int_eq(gr->feeds[0].arg->out[0].type.dtype, TCRT_F32);
    ck_assert_int_eq(gr->fetches[0].value.node->op, OP_NEG);
    ck_assert_int_eq(gr->fetches[0].value.node->inputs[0].node->op, OP_ARG);
}
END_TEST

START_TEST(test_feed_placeholder_structure)
{
    Tb *b = tb_new();
    tb_placeholder(b, "x", 1, 2, TB_DIMS(2, 3));
    tb_node(b, "y", "Relu", "x", NULL);
    tb_node(b, "z", "Neg", "y", NULL);
    TfFeedSpec f = {"x", false, {0, {0}}, TCRT_INVALID, NULL};
    import_opts(b, NULL, &f, 1, "z");
    ck_assert_msg(gr != NULL, "%s", st.msg);
    ck_assert(!gr->fold_on_build);
    ck_assert_int_eq(gr->n_feeds, 1);
    ck_assert_str_eq(gr->feeds[0].name, "x");
    ck_assert_int_eq(gr->feeds[0].arg->op, OP_ARG);
    const IrType *t = &gr->feeds[0].arg->out[0].type;
    ck_assert_int_eq(t->dtype, TCRT_F32);
    ck_assert_int_eq(t->shape.rank, 2);
    ck_assert_int_eq(t->shape.dims[0], 2);
    ck_assert_int_eq(t->shape.dims[1], 3);
    /* arg, relu, neg: nothing folded */
    ck_assert_int_eq(ir_graph_live_count(gr), 3);
    ck_assert_int_eq(gr->n_fetches, 1);
    ck_assert_str_eq(gr->fetches[0].name, "z");
    const IrNode *z = gr->fetches[0].value.node;
    ck_assert_int_eq(z->op, OP_NEG);
    ck_assert_str_eq(z->origin, "z");
    ck_assert_str_eq(z->origin_op, "Neg");
    ck_assert_int_eq(z->inputs[0].node->op, OP_RELU);
    ck_assert_ptr_eq(z->inputs[0].node->inputs[0].node, gr->feeds[0].arg);
}
END_TEST

START_TEST(test_feed_spec_shape_and_output_shapes)
{
    Tb *b = tb_new();
    tb_placeholder(b, "x", 1, 2, TB_DIMS(-1, 3));
    tb_node(b, "y", "Relu", "x:0", NULL);
    TfFeedSpec f = {"x:0", true, {2, {4, 3}}, TCRT_INVALID, NULL};
    import_opts(b, NULL, &f, 1, "y:0");
    ck_assert_msg(gr != NULL, "%s", st.msg);
    ck_assert_str_eq(gr->feeds[0].name, "x:0");
    ck_assert_int_eq(gr->feeds[0].arg->out[0].type.shape.dims[0], 4);
    ck_assert_str_eq(gr->fetches[0].name, "y:0");
    ir_graph_free(gr);
    gr = NULL;

    /* No spec shape: `_output_shapes` completes an unknown `shape`. */
    b = tb_new();
    Tensorflow__NodeDef *x = tb_node(b, "x", "Placeholder", NULL);
    tb_attr_type(x, "dtype", 3);
    tb_attr_shape(x, "shape", -1, NULL);
    Tensorflow__AttrValue__ListValue *l = tb_attr_list(x, "_output_shapes");
    l->n_shape = 1;
    l->shape = tb_alloc(sizeof *l->shape);
    l->shape[0] = tb_shape(1, TB_DIMS(5));
    tb_node(b, "y", "Neg", "x", NULL);
    TfFeedSpec f2 = {"x", false, {0, {0}}, TCRT_INVALID, NULL};
    import_opts(b, NULL, &f2, 1, "y");
    ck_assert_msg(gr != NULL, "%s", st.msg);
    ck_assert_int_eq(gr->feeds[0].arg->out[0].type.dtype, TCRT_I32);
    ck_assert_int_eq(gr->feeds[0].arg->out[0].type.shape.rank, 1);
    ck_assert_int_eq(gr->feeds[0].arg->out[0].type.shape.dims[0], 5);
}
END_TEST

START_TEST(test_feed_unknown_shape)
{
    Tb *b = tb_new();
    tb_placeholder(b, "input", 1, 4, TB_DIMS(-1, 224, 224, 3));
    tb_node(b, "y", "Relu", "input", NULL);
    TfFeedSpec f = {"input:0", false, {0, {0}}, TCRT_INVALID, NULL};
    import_err(b, NULL, &f, 1, "y",
               "feed 'input:0' has unknown shape [-1,224,224,3]; give it with --feed input:0:1x224x224x3");
}
END_TEST

START_TEST(test_feed_shape_mismatch)
{
    Tb *b = tb_new();
    tb_placeholder(b, "x", 1, 2, TB_DIMS(-1, 3));
    tb_node(b, "y", "Relu", "x", NULL);
    TfFeedSpec f = {"x", true, {2, {1, 4}}, TCRT_INVALID, NULL};
    import_err(b, NULL, &f, 1, "y", "feed 'x': shape [1,4] does not match the graph's [-1,3]");
}
END_TEST

/* Feeding an inner tensor (as the ML-KWS graphs are fed at Reshape:0) cuts
 * away everything upstream, unsupported audio ops included. */
START_TEST(test_feed_cuts_graph)
{
    Tb *b = tb_new();
    tb_node(b, "wav", "DecodeWav", NULL);
    Tensorflow__NodeDef *m = tb_node(b, "mfcc", "Relu", "wav", NULL);
    tb_attr_type(m, "T", 1);
    tb_node(b, "out", "Neg", "mfcc", NULL);
    TfFeedSpec f = {"mfcc", true, {2, {1, 4}}, TCRT_INVALID, NULL};
    import_opts(b, NULL, &f, 1, "out");
    ck_assert_msg(gr != NULL, "%s", st.msg);
    ck_assert_int_eq(gr->feeds[0].arg->out[0].type.dtype, TCRT_F32);
    ck_assert_int_eq(ir_graph_live_count(gr), 2); /* arg, neg */
}
END_TEST

START_TEST(test_feed_errors)
{
    Tb *b = tb_new();
    tb_placeholder(b, "x", 1, 1, TB_DIMS(2));
    tb_node(b, "y", "Relu", "x", NULL);
    TfFeedSpec f = {"nope:0", true, {1, {2}}, TCRT_F32, NULL};
    import_err(b, NULL, &f, 1, "y", "feed 'nope:0' names no node in the graph");
    TfFeedSpec two[2] = {{"x", false, {0, {0}}, TCRT_INVALID, NULL}, {"x:0", false, {0, {0}}, TCRT_INVALID, NULL}};
    st = (Status)ST_INIT;
    import_err(b, NULL, two, 2, "y", "feed 'x:0' is given twice");
}
END_TEST

START_TEST(test_placeholder_with_default)
{
    Tb *b = tb_new();
    tb_const_f(b, "c", 1, TB_DIMS(2), 2, TB_F(1, 2));
    tb_node(b, "p", "PlaceholderWithDefault", "c", NULL);
    tb_node(b, "y", "Neg", "p", NULL);
    import_ok(b, "y");
    expect_f32(1, TB_DIMS(2), TB_F(-1, -2));
    ir_graph_free(gr);
    gr = NULL;
    /* Fed, it is an argument and the default is dropped. */
    TfFeedSpec f = {"p", true, {1, {2}}, TCRT_F32, NULL};
    import_opts(b, NULL, &f, 1, "y");
    ck_assert_msg(gr != NULL, "%s", st.msg);
    ck_assert_int_eq(gr->fetches[0].value.node->op, OP_NEG);
    ck_assert_int_eq(ir_graph_live_count(gr), 2);
}
END_TEST

/* ---- constants ---- */

START_TEST(test_const_splat_and_zeros)
{
    Tb *b = tb_new();
    /* [2,3] with float_val {1, 2}: the last value repeats -> 1 2 2 2 2 2 */
    tb_const_f(b, "c", 2, TB_DIMS(2, 3), 2, TB_F(1, 2));
    import_ok(b, "c");
    expect_f32(2, TB_DIMS(2, 3), TB_F(1, 2, 2, 2, 2, 2));
    ir_graph_free(gr);
    gr = NULL;
    /* no values at all: zeros */
    b = tb_new();
    tb_const_f(b, "z", 1, TB_DIMS(3), 0, NULL);
    import_ok(b, "z");
    expect_f32(1, TB_DIMS(3), TB_F(0, 0, 0));
}
END_TEST

START_TEST(test_const_typed_lists)
{
    Tb *b = tb_new();
    tb_const_i32(b, "i", 1, TB_DIMS(3), 1, (const int32_t[]){7});
    Tensorflow__TensorProto *h = tb_const(b, "h", 19 /* DT_HALF */, 1, TB_DIMS(3));
    /* half bits: 0x3C00 = 1.0, 0xC000 = -2.0, 0x3800 = 0.5 */
    int32_t hv[3] = {0x3C00, 0xC000, 0x3800};
    h->n_half_val = 3;
    h->half_val = hv;
    Tensorflow__TensorProto *bo = tb_const(b, "bo", 10 /* DT_BOOL */, 1, TB_DIMS(2));
    protobuf_c_boolean bv[2] = {1, 0};
    bo->n_bool_val = 2;
    bo->bool_val = bv;
    Tensorflow__TensorProto *raw = tb_const(b, "raw", 1, 1, TB_DIMS(2));
    float rv[2] = {1.5f, -3.0f};
    raw->tensor_content.data = (uint8_t *)rv;
    raw->tensor_content.len = sizeof rv;
    Tensorflow__TensorProto *i64 = tb_const(b, "l", 9 /* DT_INT64 */, 0, NULL);
    int64_t lv = -5;
    i64->n_int64_val = 1;
    i64->int64_val = &lv;

    const char *fetches[5] = {"i", "h", "bo", "raw", "l"};
    TfImportOptions o = {NULL, NULL, 0, fetches, 5, NULL, 0, NULL, NULL, false};
    gr = tf_import(&b->gd, &o, &st);
    ck_assert_msg(gr != NULL, "%s", st.msg);
    const int32_t *iv = fetched_const(0, TCRT_I32, 1, TB_DIMS(3))->data;
    ck_assert_int_eq(iv[0], 7);
    ck_assert_int_eq(iv[2], 7);
    const float *hf = fetched_const(1, TCRT_F32, 1, TB_DIMS(3))->data;
    ck_assert(hf[0] == 1.0f && hf[1] == -2.0f && hf[2] == 0.5f);
    const uint8_t *bb = fetched_const(2, TCRT_BOOL, 1, TB_DIMS(2))->data;
    ck_assert(bb[0] == 1 && bb[1] == 0);
    const float *rf = fetched_const(3, TCRT_F32, 1, TB_DIMS(2))->data;
    ck_assert(rf[0] == 1.5f && rf[1] == -3.0f);
    const int64_t *lp = fetched_const(4, TCRT_I64, 0, NULL)->data;
    ck_assert_int_eq(lp[0], -5);
}
END_TEST

START_TEST(test_const_errors)
{
    Tb *b = tb_new();
    tb_const_f(b, "c", 1, TB_DIMS(2), 3, TB_F(1, 2, 3));
    import_err(b, NULL, NULL, 0, "c", "node 'c' (Const): constant has 3 values but its shape holds 2");

    b = tb_new();
    Tensorflow__TensorProto *raw = tb_const(b, "r", 1, 1, TB_DIMS(3));
    float rv[2] = {1, 2};
    raw->tensor_content.data = (uint8_t *)rv;
    raw->tensor_content.len = sizeof rv;
    st = (Status)ST_INIT;
    import_err(b, NULL, NULL, 0, "r",
               "node 'r' (Const): tensor_content has 8 bytes, shape [3] of float32 needs 12");

    /* A string constant is an error only when it is needed. */
    b = tb_new();
    tb_const(b, "s", 7 /* DT_STRING */, 0, NULL);
    tb_const_f(b, "f", 0, NULL, 1, TB_F(2));
    st = (Status)ST_INIT;
    import_ok(b, "f");
    ir_graph_free(gr);
    gr = NULL;
    import_err(b, "m.pb", NULL, 0, "s", "m.pb: node 's' (Const): unsupported dtype DT_STRING");
}
END_TEST

/* ---- pruning and control inputs ---- */

START_TEST(test_prune_and_control_inputs)
{
    Tb *b = tb_new();
    tb_const_f(b, "c", 1, TB_DIMS(2), 2, TB_F(1, -1));
    tb_node(b, "save", "SaveV2", "c", NULL);   /* unsupported, not needed */
    tb_node(b, "assign", "Assign", "c", NULL); /* only a control input */
    tb_node(b, "y", "Relu", "c", "^assign", NULL);
    import_ok(b, "y");
    expect_f32(1, TB_DIMS(2), TB_F(1, 0));
    ck_assert_int_eq(ir_graph_live_count(gr), 2); /* c and the folded relu; DCE drops c later */
}
END_TEST

START_TEST(test_deep_chain_no_recursion)
{
    enum { DEPTH = 60000 };
    Tb *b = tb_new();
    tb_placeholder(b, "x", 1, 1, TB_DIMS(1));
    char prev[32] = "x", name[32];
    for (int i = 0; i < DEPTH; i++) {
        snprintf(name, sizeof name, "n%d", i);
        tb_node(b, name, "Neg", prev, NULL);
        strcpy(prev, name);
    }
    TfFeedSpec f = {"x", false, {0, {0}}, TCRT_INVALID, NULL};
    import_opts(b, NULL, &f, 1, prev);
    ck_assert_msg(gr != NULL, "%s", st.msg);
    ck_assert_int_eq(ir_graph_live_count(gr), DEPTH + 1);
}
END_TEST

/* ---- errors ---- */

START_TEST(test_err_cycle)
{
    Tb *b = tb_new();
    tb_node(b, "a", "Neg", "b", NULL);
    tb_node(b, "b", "Neg", "a", NULL);
    import_err(b, NULL, NULL, 0, "a", "graph has a cycle through node 'a' (Neg)");
    st = (Status)ST_INIT;
    import_err(b, "model.pb", NULL, 0, "b", "model.pb: graph has a cycle through node 'b' (Neg)");
}
END_TEST

/* A v1 while loop (Enter -> Merge -> ... -> NextIteration -> Merge) is no
 * cycle (the back edge is a loop); without a LoopCond it is a malformed
 * loop, reported as such (tests/tf/test_control_flow.c has the rest). */
START_TEST(test_err_while_loop_ops)
{
    Tb *b = tb_new();
    tb_const_f(b, "c", 0, NULL, 1, TB_F(1));
    tb_attr_s(tb_node(b, "enter", "Enter", "c", NULL), "frame_name", "loop");
    tb_node(b, "merge", "Merge", "enter", "next", NULL);
    tb_node(b, "body", "Neg", "merge", NULL);
    tb_node(b, "next", "NextIteration", "body", NULL);
    tb_node(b, "exit", "Exit", "merge", NULL);
    import_err(b, NULL, NULL, 0, "exit", "node 'exit' (Exit): leaves loop frame 'loop', which has no LoopCond");
}
END_TEST

START_TEST(test_err_dangling)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 0, NULL, 1, TB_F(1));
    tb_node(b, "a", "Add", "x", "foo:0", NULL);
    import_err(b, NULL, NULL, 0, "a", "node 'a' (Add): input 1 'foo:0' names no node in the graph");
    b = tb_new();
    tb_const_f(b, "x", 0, NULL, 1, TB_F(1));
    tb_node(b, "a", "Neg", "x", "^gone", NULL);
    st = (Status)ST_INIT;
    import_err(b, NULL, NULL, 0, "a", "node 'a' (Neg): control input '^gone' names no node in the graph");
}
END_TEST

START_TEST(test_err_bad_output_index)
{
    Tb *b = tb_new();
    tb_const_f(b, "c", 0, NULL, 1, TB_F(1));
    tb_node(b, "x", "Relu", "c", NULL);
    tb_node(b, "a", "Add", "x:3", "c", NULL);
    import_err(b, NULL, NULL, 0, "a", "node 'a' (Add): input 0 'x:3' but 'x' (Relu) has 1 output");
    st = (Status)ST_INIT;
    import_err(b, NULL, NULL, 0, "x:2", "fetch 'x:2' but 'x' (Relu) has 1 output");
}
END_TEST

START_TEST(test_err_unsupported_all_reported)
{
    Tb *b = tb_new();
    tb_const_f(b, "c", 0, NULL, 1, TB_F(1));
    tb_node(b, "f1", "Foo", "c", NULL);
    tb_node(b, "b1", "Bar", "f1", NULL);
    tb_node(b, "f2", "Foo", "b1", NULL); /* same type: reported once */
    tb_node(b, "y", "Neg", "f2", NULL);
    import_opts(b, "g.pbtxt", NULL, 0, "y");
    ck_assert_ptr_null(gr);
    ck_assert_msg(strstr(st.msg, "g.pbtxt: unsupported TensorFlow op 'Foo' (node 'f1')") != NULL, "%s",
                  st.msg);
    ck_assert_msg(strstr(st.msg, "g.pbtxt: unsupported TensorFlow op 'Bar' (node 'b1')") != NULL, "%s",
                  st.msg);
    ck_assert_msg(strstr(st.msg, "'f2'") == NULL, "%s", st.msg);
    ck_assert_int_eq(st.n_errors, 2);
}
END_TEST

/* Errors raised by the IR builder during lowering get the file prefix too. */
START_TEST(test_err_ir_builder_prefixed)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 1, TB_DIMS(2), 2, TB_F(1, 2));
    tb_const_f(b, "y", 1, TB_DIMS(3), 3, TB_F(1, 2, 3));
    tb_node(b, "a", "Add", "x", "y", NULL);
    import_opts(b, "m.pb", NULL, 0, "a");
    ck_assert_ptr_null(gr);
    ck_assert_msg(strncmp(st.msg, "m.pb: node 'a' (Add): ", 22) == 0, "%s", st.msg);
}
END_TEST

START_TEST(test_err_placeholder_not_fed)
{
    Tb *b = tb_new();
    tb_placeholder(b, "x", 1, 1, TB_DIMS(2));
    tb_node(b, "y", "Relu", "x", NULL);
    import_err(b, NULL, NULL, 0, "y", "placeholder 'x' (Placeholder) is needed by the fetches but not fed");
}
END_TEST

START_TEST(test_err_names)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 0, NULL, 1, TB_F(1));
    tb_const_f(b, "x", 0, NULL, 1, TB_F(2));
    import_err(b, NULL, NULL, 0, "x", "duplicate node name 'x'");
    b = tb_new();
    tb_const_f(b, "x", 0, NULL, 1, TB_F(1));
    st = (Status)ST_INIT;
    import_err(b, NULL, NULL, 0, "nope:0", "fetch 'nope:0' names no node in the graph");
}
END_TEST

START_TEST(test_err_missing_attr_and_bad_format)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 1), 1, TB_F(1));
    tb_const_f(b, "w", 4, TB_DIMS(1, 1, 1, 1), 1, TB_F(1));
    Tensorflow__NodeDef *c = tb_node(b, "conv", "Conv2D", "x", "w", NULL);
    tb_attr_s(c, "padding", "VALID");
    import_err(b, NULL, NULL, 0, "conv", "node 'conv' (Conv2D): missing attribute 'strides'");
    tb_attr_ints(c, "strides", 4, TB_DIMS(1, 1, 1, 1));
    tb_attr_s(c, "data_format", "NCDHW");
    st = (Status)ST_INIT;
    import_err(b, NULL, NULL, 0, "conv", "node 'conv' (Conv2D): unsupported data_format 'NCDHW'");
}
END_TEST

/* ---- the op table ---- */

typedef struct Seen {
    int n;
    bool sorted, conv, cnst, relu;
    char last[64];
} Seen;

static void visit(const TfOpDoc *d, void *ud)
{
    Seen *s = ud;
    if (s->n > 0 && strcmp(s->last, d->tf_op) >= 0)
        s->sorted = false;
    snprintf(s->last, sizeof s->last, "%s", d->tf_op);
    s->conv |= strcmp(d->tf_op, "Conv2D") == 0;
    s->cnst |= strcmp(d->tf_op, "Const") == 0;
    s->relu |= strcmp(d->tf_op, "Relu") == 0;
    ck_assert_ptr_nonnull(d->lowers_to);
    s->n++;
}

START_TEST(test_op_table)
{
    ck_assert(tf_op_supported("Conv2D"));
    ck_assert(tf_op_supported("Const"));
    ck_assert(tf_op_supported("FusedBatchNormV3"));
    ck_assert(!tf_op_supported("DecodeWav"));
    ck_assert(!tf_op_supported(NULL));
    Seen s = {0, true, false, false, false, ""};
    tf_ops_foreach(visit, &s);
    ck_assert(s.sorted); /* strictly increasing: no duplicates */
    ck_assert(s.conv && s.cnst && s.relu);
    ck_assert_int_gt(s.n, 80);
}
END_TEST

static Suite *import_suite(void)
{
    Suite *s = suite_create("tf_import");
    TCase *tc = tcase_create("import");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_parse_tensor_name);
    tcase_add_test(tc, test_feed_placeholder_structure);
    tcase_add_test(tc, test_arg_retval);
    tcase_add_test(tc, test_feed_spec_shape_and_output_shapes);
    tcase_add_test(tc, test_feed_unknown_shape);
    tcase_add_test(tc, test_feed_shape_mismatch);
    tcase_add_test(tc, test_feed_cuts_graph);
    tcase_add_test(tc, test_feed_errors);
    tcase_add_test(tc, test_placeholder_with_default);
    tcase_add_test(tc, test_const_splat_and_zeros);
    tcase_add_test(tc, test_const_typed_lists);
    tcase_add_test(tc, test_const_errors);
    tcase_add_test(tc, test_prune_and_control_inputs);
    tcase_add_test(tc, test_deep_chain_no_recursion);
    tcase_add_test(tc, test_err_cycle);
    tcase_add_test(tc, test_err_while_loop_ops);
    tcase_add_test(tc, test_err_dangling);
    tcase_add_test(tc, test_err_bad_output_index);
    tcase_add_test(tc, test_err_unsupported_all_reported);
    tcase_add_test(tc, test_err_ir_builder_prefixed);
    tcase_add_test(tc, test_err_placeholder_not_fed);
    tcase_add_test(tc, test_err_names);
    tcase_add_test(tc, test_err_missing_attr_and_bad_format);
    tcase_add_test(tc, test_op_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(import_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
