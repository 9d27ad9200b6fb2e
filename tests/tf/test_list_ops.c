/* tests/tf/test_list_ops.c - Check suite for compiler/tf/tf_ops_list.c:
 * TensorArray and TensorList ops as buffers, NonMaxSuppression, Where.
 *
 * Each test builds a small GraphDef in C (tf_build.h), imports it and checks
 * the fetched values against values derived by hand in the comments.  With
 * constant inputs the importer folds everything to constants.  Inputs fed at
 * run time (a Placeholder index, boxes) leave real nodes (gather,
 * update_slice, nms); the tests first check that the fetch is NOT constant,
 * then evaluate the graph here with eval_feeds: every ARG becomes a constant
 * holding the test's value and every node is folded in order through the
 * runtime's reference kernels, which are what generated code calls.
 * test_compile_run_nms_ta compiles one graph (NMS feeding a TensorArray)
 * with the driver and runs the executable, so the nms kernel call and the
 * array rows also go through memory planning and C code generation.
 * Error tests pin the message text.  Loops are not built from GraphDefs
 * here (that is the control-flow lowering's business); test_ta_in_region
 * calls the rows directly on a region graph, as that lowering will.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/driver.h"
#include "compiler/tf/tf.h"
#include "compiler/tf/tf_int.h"
#include "tf_build.h"

/* TF DataType numbers */
#define DT_FLOAT 1
#define DT_INT32 3
#define DT_BOOL 10

#include "tf_check.h"
#include "tests/tfcc_inproc.h"

#define KF(g, name, dims, ...) konst(g, name, DT_FLOAT, NDIMS dims, DIMS dims, F32S(__VA_ARGS__), NULL, NULL)
#define KI(g, name, dims, ...) konst(g, name, DT_INT32, NDIMS dims, DIMS dims, NULL, I32S(__VA_ARGS__), NULL)
#define KS(g, name, v) konst(g, name, DT_INT32, 0, NULL, NULL, I32S(v), NULL)
#define KSF(g, name, v) konst(g, name, DT_FLOAT, 0, NULL, F32S(v), NULL, NULL)

/* Binds each feed (by name, in the order given) to data and evaluates the
 * whole graph by folding node after node; afterwards every fetch is a
 * constant.  Asserts that every node could be evaluated. */
static void eval_feeds(int n, ...)
{
    const char *names[8];
    const void *datas[8];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        names[i] = va_arg(ap, const char *);
        datas[i] = va_arg(ap, const void *);
    }
    va_end(ap);
    Status es = ST_INIT;
    for (int i = 0; i < gr->n_nodes; i++) {
        IrNode *nd = gr->nodes[i];
        if (!nd || nd->dead || nd->op == OP_CONST)
            continue;
        if (nd->op == OP_ARG) {
            const char *fname = gr->feeds[nd->p.i[0]].name;
            const void *data = NULL;
            for (int k = 0; k < n; k++)
                if (strcmp(names[k], fname) == 0)
                    data = datas[k];
            ck_assert_msg(data != NULL, "no value for feed %s", fname);
            const IrType *t = &nd->out[0].type;
            IrValue cv = ir_const(gr, t->dtype, &t->shape, data, &es);
            ck_assert_msg(cv.node != NULL, "%s", es.msg);
            ir_replace_uses(gr, (IrValue){nd, 0}, cv);
            continue;
        }
        for (int k = 0; k < nd->n_inputs; k++)
            ck_assert_msg(nd->inputs[k].node->op == OP_CONST, "node %d (%s) has a non-constant input", nd->id,
                          ir_op_name(nd->op));
        IrValue outs[4];
        ck_assert_int_le(nd->n_outputs, 4);
        ck_assert_msg(ir_fold_node(gr, nd, outs, &es), "evaluating node %d (%s) failed: %s", nd->id,
                      ir_op_name(nd->op), es.msg);
        for (int k = 0; k < nd->n_outputs; k++)
            ir_replace_uses(gr, (IrValue){nd, k}, outs[k]);
    }
}

/* Does fetch i depend on run time (not a constant)? */
static bool fetch_is_runtime(int i)
{
    return !ir_is_const(gr->fetches[i].value);
}

/* Does the graph hold a live node of op? */
static bool has_op(Op op)
{
    for (int i = 0; i < gr->n_nodes; i++)
        if (gr->nodes[i] && !gr->nodes[i]->dead && gr->nodes[i]->op == op &&
            ir_use_count(gr, gr->nodes[i]) > 0)
            return true;
    return false;
}

/* ---- TensorArray graph pieces ------------------------------------------- */

/* ta = TensorArrayV3(size) of float; elem_rank -1: no element_shape attr. */
static Tensorflow__NodeDef *ta_new(G *g, const char *name, const char *size, int elem_rank,
                                   const int64_t *elem)
{
    Tensorflow__NodeDef *nd = tb_node(g, name, "TensorArrayV3", size, NULL);
    tb_attr_type(nd, "dtype", DT_FLOAT);
    if (elem_rank >= 0)
        tb_attr_shape(nd, "element_shape", elem_rank, elem);
    return nd;
}

static char *out_of(const char *node, int k)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s:%d", node, k);
    return tb_strdup(buf);
}

/* (handle, index, value, flow) -> flow */
static void ta_write(G *g, const char *name, const char *ta, const char *index, const char *value,
                     const char *flow)
{
    Tensorflow__NodeDef *nd = tb_node(g, name, "TensorArrayWriteV3", out_of(ta, 0), index, value, flow, NULL);
    tb_attr_type(nd, "T", DT_FLOAT);
}

static void ta_read(G *g, const char *name, const char *ta, const char *index, const char *flow)
{
    Tensorflow__NodeDef *nd = tb_node(g, name, "TensorArrayReadV3", out_of(ta, 0), index, flow, NULL);
    tb_attr_type(nd, "dtype", DT_FLOAT);
}

static void ta_gather(G *g, const char *name, const char *ta, const char *indices, const char *flow)
{
    Tensorflow__NodeDef *nd = tb_node(g, name, "TensorArrayGatherV3", out_of(ta, 0), indices, flow, NULL);
    tb_attr_type(nd, "dtype", DT_FLOAT);
}

static void ta_scatter(G *g, const char *name, const char *ta, const char *indices, const char *value,
                       const char *flow)
{
    Tensorflow__NodeDef *nd =
        tb_node(g, name, "TensorArrayScatterV3", out_of(ta, 0), indices, value, flow, NULL);
    tb_attr_type(nd, "T", DT_FLOAT);
}

/* v = [[1,2],[3,4],[5,6]] scattered to rows [2,0,1] of a size-3 array:
 * buffer[2] = [1,2], buffer[0] = [3,4], buffer[1] = [5,6]. */
static void scattered(G *g, bool known_shape)
{
    KS(g, "n", 3);
    ta_new(g, "ta", "n", known_shape ? 1 : -1, DIMS(2));
    KF(g, "v", (3, 2), 1, 2, 3, 4, 5, 6);
    KI(g, "ix", (3), 2, 0, 1);
    ta_scatter(g, "sc", "ta", "ix", "v", "ta:1");
}

/* ---- TensorArray tests ---------------------------------------------------- */

START_TEST(test_ta_scatter_then_read)
{
    /* buffer = [[3,4],[5,6],[1,2]] (see scattered): read 0 -> [3,4],
     * read 2 -> [1,2]; gather [1,2] -> [[5,6],[1,2]]; size 3.  The
     * scatter is one gather of v by the row map [1,2,0]. */
    G *g = tb_new();
    scattered(g, true);
    KS(g, "i0", 0);
    KS(g, "i2", 2);
    ta_read(g, "r0", "ta", "i0", "sc");
    ta_read(g, "r2", "ta", "i2", "sc");
    KI(g, "gi", (2), 1, 2);
    ta_gather(g, "ga", "ta", "gi", "sc");
    tb_node(g, "size", "TensorArraySizeV3", "ta", "sc", NULL);
    import_ok(g, "r0", "r2", "ga", "size", "ta:0", NULL);
    EXPECT_F32(0, (2), 3, 4);
    EXPECT_F32(1, (2), 1, 2);
    EXPECT_F32(2, (2, 2), 5, 6, 1, 2);
    EXPECT_INT0(3, TCRT_I32, 3);
    /* the handle holds no data: f32[3,0] */
    fetched(4, TCRT_F32, 2, DIMS(3, 0));
}
END_TEST

START_TEST(test_ta_scatter_pending_and_in_order)
{
    /* no element_shape attr: the scatter materializes the buffer from the
     * value's rows ([2]); same buffer as above.  Then an in-order scatter
     * (indices 0,1,2) of a second array returns the value itself. */
    G *g = tb_new();
    scattered(g, false);
    KI(g, "all", (3), 0, 1, 2);
    ta_gather(g, "ga", "ta", "all", "sc");
    KS(g, "n2", 3);
    ta_new(g, "tb", "n2", -1, NULL);
    ta_scatter(g, "sc2", "tb", "all", "v", "tb:1");
    ta_gather(g, "gb", "tb", "all", "sc2");
    import_ok(g, "ga", "gb", "sc2", NULL);
    EXPECT_F32(0, (3, 2), 3, 4, 5, 6, 1, 2);
    EXPECT_F32(1, (3, 2), 1, 2, 3, 4, 5, 6);
    EXPECT_F32(2, (3, 2), 1, 2, 3, 4, 5, 6);
}
END_TEST

START_TEST(test_ta_read_fed_index)
{
    /* the index is fed: the read is a run-time gather.  At index 1 the
     * scattered buffer gives [5,6]; at 2, [1,2]. */
    G *g = tb_new();
    scattered(g, true);
    tb_placeholder(g, "i", DT_INT32, 0, NULL);
    ta_read(g, "r", "ta", "i", "sc");
    import_ok(g, "r", NULL);
    ck_assert(fetch_is_runtime(0));
    ck_assert(has_op(OP_GATHER));
    eval_feeds(1, "i", I32S(1));
    EXPECT_F32(0, (2), 5, 6);
    teardown();

    g = tb_new();
    scattered(g, true);
    tb_placeholder(g, "i", DT_INT32, 0, NULL);
    ta_read(g, "r", "ta", "i", "sc");
    import_ok(g, "r", NULL);
    eval_feeds(1, "i", I32S(2));
    EXPECT_F32(0, (2), 1, 2);
}
END_TEST

START_TEST(test_ta_write_then_stack)
{
    /* size 3, element shape unknown: write [7,8] at 1 (materializes
     * zeros [3,2]), then [9,10] at 0.  Gather 0..2 -> [[9,10],[7,8],[0,0]];
     * concat -> [9,10,7,8,0,0] with lengths [2,2,2]. */
    G *g = tb_new();
    KS(g, "n", 3);
    ta_new(g, "ta", "n", -1, NULL);
    KS(g, "i1", 1);
    KS(g, "i0", 0);
    KF(g, "a", (2), 7, 8);
    KF(g, "b", (2), 9, 10);
    ta_write(g, "w1", "ta", "i1", "a", "ta:1");
    ta_write(g, "w2", "ta", "i0", "b", "w1");
    KI(g, "all", (3), 0, 1, 2);
    ta_gather(g, "st", "ta", "all", "w2");
    Tensorflow__NodeDef *cc = tb_node(g, "cat", "TensorArrayConcatV3", "ta", "w2", NULL);
    tb_attr_type(cc, "dtype", DT_FLOAT);
    tb_node(g, "close", "TensorArrayCloseV3", "ta", NULL);
    import_ok(g, "st", "cat:0", "cat:1", NULL);
    EXPECT_F32(0, (3, 2), 9, 10, 7, 8, 0, 0);
    EXPECT_F32(1, (6), 9, 10, 7, 8, 0, 0);
    EXPECT_INT(2, TCRT_I64, (3), 2, 2, 2);
}
END_TEST

START_TEST(test_ta_write_fed_index)
{
    /* a run-time write: update_slice with start [i, 0] built from the fed
     * index.  Writing [7,8] at i = 2 of a known [3,2] array, then [9,10]
     * at constant 0 -> [[9,10],[0,0],[7,8]] */
    G *g = tb_new();
    KS(g, "n", 3);
    ta_new(g, "ta", "n", 1, DIMS(2));
    tb_placeholder(g, "i", DT_INT32, 0, NULL);
    KS(g, "i0", 0);
    KF(g, "a", (2), 7, 8);
    KF(g, "b", (2), 9, 10);
    ta_write(g, "w1", "ta", "i", "a", "ta:1");
    ta_write(g, "w2", "ta", "i0", "b", "w1");
    KI(g, "all", (3), 0, 1, 2);
    ta_gather(g, "st", "ta", "all", "w2");
    import_ok(g, "st", NULL);
    ck_assert(fetch_is_runtime(0));
    ck_assert(has_op(OP_UPDATE_SLICE));
    eval_feeds(1, "i", I32S(2));
    EXPECT_F32(0, (3, 2), 9, 10, 0, 0, 7, 8);
}
END_TEST

START_TEST(test_ta_big_buffer)
{
    /* a 100 x 200 float array (80000 bytes, past the 64 KiB limit for zero
     * constants) starts as a run-time broadcast of 0, not a constant.
     * Write v = [0,1,...,199] at 7, read 7 -> v, read 8 -> zeros. */
    G *g = tb_new();
    KS(g, "n", 100);
    ta_new(g, "ta", "n", 1, DIMS(200));
    float v[200];
    for (int k = 0; k < 200; k++)
        v[k] = (float)k;
    konst(g, "v", DT_FLOAT, 1, DIMS(200), v, NULL, NULL);
    KS(g, "i7", 7);
    KS(g, "i8", 8);
    ta_write(g, "w", "ta", "i7", "v", "ta:1");
    ta_read(g, "r7", "ta", "i7", "w");
    ta_read(g, "r8", "ta", "i8", "w");
    import_ok(g, "r7", "r8", NULL);
    ck_assert(fetch_is_runtime(0));
    ck_assert(has_op(OP_BROADCAST));
    eval_feeds(0);
    const float *p7 = fetched(0, TCRT_F32, 1, DIMS(200)), *p8 = fetched(1, TCRT_F32, 1, DIMS(200));
    for (int k = 0; k < 200; k++) {
        ck_assert(p7[k] == (float)k);
        ck_assert(p8[k] == 0);
    }
}
END_TEST

START_TEST(test_ta_split_and_v2_names)
{
    /* split [1..6] with lengths [2,2,2] into a size-3 array: elements [1,2],
     * [3,4], [5,6]; read 1 -> [3,4].  The same through the V2 op names,
     * whose flow is a scalar Const (the handle holds the array). */
    G *g = tb_new();
    KS(g, "n", 3);
    ta_new(g, "ta", "n", -1, NULL);
    KF(g, "v", (6), 1, 2, 3, 4, 5, 6);
    KI(g, "len", (3), 2, 2, 2);
    Tensorflow__NodeDef *sp = tb_node(g, "sp", "TensorArraySplitV3", "ta", "v", "len", "ta:1", NULL);
    tb_attr_type(sp, "T", DT_FLOAT);
    KS(g, "i1", 1);
    ta_read(g, "r", "ta", "i1", "sp");
    /* V2: TensorArrayV2 (one output) + flow Const 0.0 */
    KS(g, "n2", 2);
    Tensorflow__NodeDef *t2 = tb_node(g, "t2", "TensorArrayV2", "n2", NULL);
    tb_attr_type(t2, "dtype", DT_FLOAT);
    tb_attr_shape(t2, "element_shape", 1, DIMS(2));
    KSF(g, "flow0", 0.0f);
    KF(g, "a", (2), 7, 8);
    Tensorflow__NodeDef *w = tb_node(g, "w", "TensorArrayWriteV2", "t2", "i1", "a", "flow0", NULL);
    tb_attr_type(w, "T", DT_FLOAT);
    KI(g, "two", (2), 0, 1);
    Tensorflow__NodeDef *ga = tb_node(g, "ga", "TensorArrayGatherV2", "t2", "two", "w", NULL);
    tb_attr_type(ga, "dtype", DT_FLOAT);
    tb_node(g, "sz", "TensorArraySizeV2", "t2", "flow0", NULL);
    import_ok(g, "r", "ga", "sz", NULL);
    EXPECT_F32(0, (2), 3, 4);
    EXPECT_F32(1, (2, 2), 0, 0, 7, 8);
    EXPECT_INT0(2, TCRT_I32, 2);
}
END_TEST

START_TEST(test_ta_errors)
{
    /* the size must be a constant */
    G *g = tb_new();
    tb_placeholder(g, "n", DT_INT32, 0, NULL);
    ta_new(g, "ta", "n", 1, DIMS(2));
    import_fails(g, "ta:1",
                 "test.pbtxt: node 'ta' (TensorArrayV3): TensorArray size must be known at compile time");
    teardown();

    /* dynamic_size=true */
    g = tb_new();
    KS(g, "n", 3);
    Tensorflow__NodeDef *ta = ta_new(g, "ta", "n", 1, DIMS(2));
    tb_attr_b(ta, "dynamic_size", true);
    import_fails(g, "ta:1", "node 'ta' (TensorArrayV3): dynamic_size=true is not supported");
    teardown();

    /* reading a never-written array of unknown element shape */
    g = tb_new();
    KS(g, "n", 3);
    ta_new(g, "ta", "n", -1, NULL);
    KS(g, "i0", 0);
    ta_read(g, "r", "ta", "i0", "ta:1");
    import_fails(g, "r", "node 'r' (TensorArrayReadV3): the array is read before anything was written to it");
    teardown();

    /* a constant index out of range */
    g = tb_new();
    KS(g, "n", 3);
    ta_new(g, "ta", "n", 1, DIMS(2));
    KS(g, "i5", 5);
    KF(g, "a", (2), 7, 8);
    ta_write(g, "w", "ta", "i5", "a", "ta:1");
    import_fails(g, "w", "node 'w' (TensorArrayWriteV3): index 5 out of range for an array of size 3");
    teardown();

    /* an element of the wrong shape */
    g = tb_new();
    KS(g, "n", 3);
    ta_new(g, "ta", "n", 1, DIMS(2));
    KS(g, "i0", 0);
    KF(g, "a", (3), 7, 8, 9);
    ta_write(g, "w", "ta", "i0", "a", "ta:1");
    import_fails(g, "w", "value element shape [3] does not match the array's element shape [2]");
    teardown();

    /* scatter writing one element twice */
    g = tb_new();
    KS(g, "n", 3);
    ta_new(g, "ta", "n", 1, DIMS(2));
    KF(g, "v", (2, 2), 1, 2, 3, 4);
    KI(g, "ix", (2), 1, 1);
    ta_scatter(g, "sc", "ta", "ix", "v", "ta:1");
    import_fails(g, "sc", "indices[1] = 1 writes element 1 a second time");
}
END_TEST

/* Calls the row of `op` on a region graph as the control-flow lowering
 * would (node name "w"); returns its result. */
static bool lower_in(IrGraph *g, const char *op, const IrValue *in, int n_in, IrValue *out, Status *s)
{
    Tensorflow__NodeDef nd;
    tensorflow__node_def__init(&nd);
    nd.name = "w";
    nd.op = (char *)op;
    const TfOpRow *row = tf_find_row(op);
    ck_assert_ptr_nonnull(row);
    TfCtx c = {g, "test.pbtxt", &nd, row, s, NULL, NULL};
    int n_out = 0;
    ir_graph_set_origin(g, "w", op);
    return row->lower(&c, in, n_in, out, &n_out) && st_ok(s);
}

START_TEST(test_ta_in_region)
{
    /* Inside a loop body the array is a region parameter.  With a known
     * element shape ([3,2]) a write at a run-time index is an update_slice
     * in the region.  A pending array enters as f32[3,0]: writing a [2]
     * element there cannot change the parameter's type, so it is an error
     * naming the node; so is reading one (no elements to read). */
    Status s = ST_INIT;
    IrGraph *root = ir_graph_new(NULL, &s);
    ck_assert_ptr_nonnull(root);
    IrGraph *body = ir_region_new(root, &s);
    ck_assert_ptr_nonnull(body);
    IrType known = {TCRT_F32, {2, {3, 2}}}, pend = {TCRT_F32, {2, {3, 0}}}, it = {TCRT_I32, {0, {0}}};
    IrValue flow = ir_add_feed(body, "flow", &known, &s);
    IrValue flow0 = ir_add_feed(body, "flow0", &pend, &s);
    IrValue idx = ir_add_feed(body, "i", &it, &s);
    IrShape vs = {1, {2}};
    IrValue val = ir_const(body, TCRT_F32, &vs, F32S(7, 8), &s);
    ck_assert_msg(st_ok(&s), "%s", s.msg);
    IrValue out[4];
    IrValue in[4] = {flow, idx, val, flow};
    ck_assert_msg(lower_in(body, "TensorArrayWriteV3", in, 4, out, &s), "%s", s.msg);
    ck_assert_int_eq(out[0].node->op, OP_UPDATE_SLICE);
    ck_assert(ir_shape_eq(&ir_value_type(out[0])->shape, &known.shape));

    IrValue in0[4] = {flow0, idx, val, flow0};
    ck_assert(!lower_in(body, "TensorArrayWriteV3", in0, 4, out, &s));
    ck_assert_msg(strstr(s.msg,
                         "test.pbtxt: node 'w' (TensorArrayWriteV3): cannot write a [2] element here: the "
                         "array's element shape was not known where it was created") != NULL,
                  "%s", s.msg);
    Status s2 = ST_INIT;
    IrValue in1[3] = {flow0, idx, flow0};
    ck_assert(!lower_in(body, "TensorArrayReadV3", in1, 3, out, &s2));
    ck_assert_msg(strstr(s2.msg,
                         "node 'w' (TensorArrayReadV3): the array's element shape was not known where it "
                         "was created") != NULL,
                  "%s", s2.msg);
    ir_graph_free(root);
}
END_TEST

/* ---- TensorList tests ----------------------------------------------------- */

static void tl_reserve(G *g, const char *name, const char *shape, const char *n)
{
    Tensorflow__NodeDef *nd = tb_node(g, name, "TensorListReserve", shape, n, NULL);
    tb_attr_type(nd, "element_dtype", DT_FLOAT);
    tb_attr_type(nd, "shape_type", DT_INT32);
}

static void tl_set(G *g, const char *name, const char *list, const char *index, const char *item)
{
    Tensorflow__NodeDef *nd = tb_node(g, name, "TensorListSetItem", list, index, item, NULL);
    tb_attr_type(nd, "element_dtype", DT_FLOAT);
}

static void tl_stack(G *g, const char *name, const char *list, const char *shape)
{
    Tensorflow__NodeDef *nd = tb_node(g, name, "TensorListStack", list, shape, NULL);
    tb_attr_type(nd, "element_dtype", DT_FLOAT);
}

static void tl_get(G *g, const char *name, const char *list, const char *index, const char *shape)
{
    Tensorflow__NodeDef *nd = tb_node(g, name, "TensorListGetItem", list, index, shape, NULL);
    tb_attr_type(nd, "element_dtype", DT_FLOAT);
}

START_TEST(test_tl_reserve_set_stack)
{
    /* Reserve 3 elements of shape [2] (known), set [1,2] at 2 and [3,4] at
     * 0, stack -> [[3,4],[0,0],[1,2]].  The same with element_shape -1
     * (unknown: the first SetItem materializes the buffer).  Length 3,
     * element shape [2]. */
    G *g = tb_new();
    KI(g, "es", (1), 2);
    KS(g, "unk", -1);
    KS(g, "n", 3);
    KS(g, "i2", 2);
    KS(g, "i0", 0);
    KF(g, "a", (2), 1, 2);
    KF(g, "b", (2), 3, 4);
    tl_reserve(g, "l", "es", "n");
    tl_set(g, "s1", "l", "i2", "a");
    tl_set(g, "s2", "s1", "i0", "b");
    tl_stack(g, "st", "s2", "es");
    tl_reserve(g, "m", "unk", "n");
    tl_set(g, "t1", "m", "i2", "a");
    tl_set(g, "t2", "t1", "i0", "b");
    tl_stack(g, "st2", "t2", "unk");
    tb_node(g, "len", "TensorListLength", "s2", NULL);
    Tensorflow__NodeDef *es = tb_node(g, "eshape", "TensorListElementShape", "t2", NULL);
    tb_attr_type(es, "shape_type", DT_INT32);
    import_ok(g, "st", "st2", "len", "eshape", NULL);
    EXPECT_F32(0, (3, 2), 3, 4, 0, 0, 1, 2);
    EXPECT_F32(1, (3, 2), 3, 4, 0, 0, 1, 2);
    EXPECT_INT0(2, TCRT_I32, 3);
    EXPECT_INT(3, TCRT_I32, (1), 2);
}
END_TEST

START_TEST(test_tl_set_fed_index)
{
    /* SetItem at a fed index i = 1: [[0,0],[1,2],[0,0]] */
    G *g = tb_new();
    KI(g, "es", (1), 2);
    KS(g, "n", 3);
    tb_placeholder(g, "i", DT_INT32, 0, NULL);
    KF(g, "a", (2), 1, 2);
    tl_reserve(g, "l", "es", "n");
    tl_set(g, "s1", "l", "i", "a");
    tl_stack(g, "st", "s1", "es");
    import_ok(g, "st", NULL);
    ck_assert(fetch_is_runtime(0));
    eval_feeds(1, "i", I32S(1));
    EXPECT_F32(0, (3, 2), 0, 0, 1, 2, 0, 0);
}
END_TEST

START_TEST(test_tl_from_tensor_get_item)
{
    /* list = rows of [[1,2],[3,4],[5,6]]: item 1 = [3,4]; item at fed
     * index 2 = [5,6]; gather [2,0] = [[5,6],[1,2]]; reading an unwritten
     * reserved item with a known element_shape gives zeros (as TF). */
    G *g = tb_new();
    KF(g, "x", (3, 2), 1, 2, 3, 4, 5, 6);
    KI(g, "es", (1), 2);
    KS(g, "i1", 1);
    Tensorflow__NodeDef *ft = tb_node(g, "l", "TensorListFromTensor", "x", "es", NULL);
    tb_attr_type(ft, "element_dtype", DT_FLOAT);
    tl_get(g, "g1", "l", "i1", "es");
    tb_placeholder(g, "i", DT_INT32, 0, NULL);
    tl_get(g, "gi", "l", "i", "es");
    KI(g, "ix", (2), 2, 0);
    Tensorflow__NodeDef *ga = tb_node(g, "ga", "TensorListGather", "l", "ix", "es", NULL);
    tb_attr_type(ga, "element_dtype", DT_FLOAT);
    KS(g, "n", 4);
    KS(g, "unk", -1);
    tl_reserve(g, "r", "unk", "n");
    tl_get(g, "g0", "r", "i1", "es");
    import_ok(g, "g1", "gi", "ga", "g0", NULL);
    EXPECT_F32(0, (2), 3, 4);
    EXPECT_F32(2, (2, 2), 5, 6, 1, 2);
    EXPECT_F32(3, (2), 0, 0);
    ck_assert(fetch_is_runtime(1));
    eval_feeds(1, "i", I32S(2));
    EXPECT_F32(1, (2), 5, 6);
}
END_TEST

START_TEST(test_tl_scatter_split_concat)
{
    /* TensorListScatterIntoExistingList of rows [[1,2],[3,4]] at [2,0] into
     * a reserved 3-list -> [[3,4],[0,0],[1,2]];
     * TensorListScatterV2 of the same at [2,0] with num_elements -1 -> size
     * 3, the same buffer; TensorListSplit of [1..6] with lengths [3,3] ->
     * [[1,2,3],[4,5,6]]; its concat -> [1..6], lengths [3,3]. */
    G *g = tb_new();
    KI(g, "es", (1), 2);
    KS(g, "unk", -1);
    KS(g, "n", 3);
    KF(g, "v", (2, 2), 1, 2, 3, 4);
    KI(g, "ix", (2), 2, 0);
    tl_reserve(g, "l", "es", "n");
    Tensorflow__NodeDef *se = tb_node(g, "se", "TensorListScatterIntoExistingList", "l", "v", "ix", NULL);
    tb_attr_type(se, "element_dtype", DT_FLOAT);
    tl_stack(g, "st", "se", "es");
    KS(g, "m1", -1);
    Tensorflow__NodeDef *s2 = tb_node(g, "s2", "TensorListScatterV2", "v", "ix", "es", "m1", NULL);
    tb_attr_type(s2, "element_dtype", DT_FLOAT);
    tl_stack(g, "st2", "s2", "es");
    KF(g, "x", (6), 1, 2, 3, 4, 5, 6);
    KI(g, "lens", (2), 3, 3);
    Tensorflow__NodeDef *sp = tb_node(g, "sp", "TensorListSplit", "x", "unk", "lens", NULL);
    tb_attr_type(sp, "element_dtype", DT_FLOAT);
    tl_stack(g, "st3", "sp", "unk");
    Tensorflow__NodeDef *cc = tb_node(g, "cc", "TensorListConcat", "sp", NULL);
    tb_attr_type(cc, "element_dtype", DT_FLOAT);
    import_ok(g, "st", "st2", "st3", "cc:0", "cc:1", NULL);
    EXPECT_F32(0, (3, 2), 3, 4, 0, 0, 1, 2);
    EXPECT_F32(1, (3, 2), 3, 4, 0, 0, 1, 2);
    EXPECT_F32(2, (2, 3), 1, 2, 3, 4, 5, 6);
    EXPECT_F32(3, (6), 1, 2, 3, 4, 5, 6);
    EXPECT_INT(4, TCRT_I64, (2), 3, 3);
}
END_TEST

START_TEST(test_tl_errors)
{
    /* num_elements must be a constant */
    G *g = tb_new();
    KI(g, "es", (1), 2);
    tb_placeholder(g, "n", DT_INT32, 0, NULL);
    tl_reserve(g, "l", "es", "n");
    tl_stack(g, "st", "l", "es");
    import_fails(g, "st",
                 "node 'l' (TensorListReserve): TensorList size (input 1, num_elements) must be known at "
                 "compile time");
    teardown();

    /* a list that grows */
    g = tb_new();
    KI(g, "es", (1), 2);
    KS(g, "n", 3);
    KF(g, "a", (2), 1, 2);
    tl_reserve(g, "l", "es", "n");
    Tensorflow__NodeDef *pb = tb_node(g, "pb", "TensorListPushBack", "l", "a", NULL);
    tb_attr_type(pb, "element_dtype", DT_FLOAT);
    import_fails(g, "pb",
                 "node 'pb' (TensorListPushBack): lists whose size changes at run time are not supported");
    teardown();

    /* stacking a never-written list of unknown element shape */
    g = tb_new();
    KS(g, "unk", -1);
    KS(g, "n", 3);
    tl_reserve(g, "l", "unk", "n");
    tl_stack(g, "st", "l", "unk");
    import_fails(g, "st",
                 "node 'st' (TensorListStack): the array is read before anything was written to it, and "
                 "its element shape <unknown rank> is not known at compile time");
}
END_TEST

/* ---- NonMaxSuppression ------------------------------------------------------ */

/* The five boxes of tests/runtime/test_nms.c (y1,x1,y2,x2):
 *   0: [0,0,1,1] 0.9   1: [0,0.1,1,1.1] 0.8   2: [0,2,1,3] 0.7
 *   3: [1,3.5,0,2.5] 0.6 (flipped corners)   4: [0,0,0.5,0.5] 0.95
 * IoUs: (0,1) = 0.9/1.1 = 0.818, (0,4) = 0.25, (1,4) = 0.2/1.05 = 0.19,
 * (2,3) = 0.5/1.5 = 0.333, all others 0.  Score order 4,0,1,2,3; at IoU
 * threshold 0.5: 4 kept, 0 kept (0.25), 1 dropped (0.818 with 0), 2 kept,
 * 3 kept (0.333) -> [4,0,2,3], 4 valid.  (TF.js nonMaxSuppressionPadded
 * gives the same.) */
static void five_boxes(G *g, bool fed)
{
    if (fed) {
        tb_placeholder(g, "boxes", DT_FLOAT, 2, DIMS(5, 4));
        tb_placeholder(g, "scores", DT_FLOAT, 1, DIMS(5));
    } else {
        KF(g, "boxes", (5, 4), 0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3, 1, 3.5f, 0, 2.5f, 0, 0, 0.5f, 0.5f);
        KF(g, "scores", (5), 0.9f, 0.8f, 0.7f, 0.6f, 0.95f);
    }
}
static const float FIVE[] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3, 1, 3.5f, 0, 2.5f, 0, 0, 0.5f, 0.5f};
static const float FIVE_S[] = {0.9f, 0.8f, 0.7f, 0.6f, 0.95f};

/* NonMaxSuppressionV<version>(boxes, scores, max, iou, thr[, sigma]) */
static Tensorflow__NodeDef *nms(G *g, int version, int max_out, float iou, float thr, int pad)
{
    KS(g, "max", max_out);
    KSF(g, "iou", iou);
    KSF(g, "thr", thr);
    Tensorflow__NodeDef *nd;
    if (version == 5) {
        KSF(g, "sigma", 0.0f);
        nd = tb_node(g, "nms", "NonMaxSuppressionV5", "boxes", "scores", "max", "iou", "thr", "sigma", NULL);
    } else {
        nd = tb_node(g, "nms", version == 4 ? "NonMaxSuppressionV4" : "NonMaxSuppressionV3", "boxes",
                     "scores", "max", "iou", "thr", NULL);
    }
    tb_attr_type(nd, "T", DT_FLOAT);
    if (pad >= 0)
        tb_attr_b(nd, "pad_to_max_output_size", pad);
    return nd;
}

START_TEST(test_nms_v5_padded_fed)
{
    /* fed boxes and scores, max 5, pad: indices [4,0,2,3,0], scores
     * [0.95,0.9,0.7,0.6,0], 4 valid */
    G *g = tb_new();
    five_boxes(g, true);
    nms(g, 5, 5, 0.5f, 0.0f, 1);
    import_ok(g, "nms:0", "nms:1", "nms:2", NULL);
    ck_assert(fetch_is_runtime(0));
    ck_assert(has_op(OP_NMS));
    eval_feeds(2, "boxes", FIVE, "scores", FIVE_S);
    EXPECT_INT(0, TCRT_I32, (5), 4, 0, 2, 3, 0);
    EXPECT_F32(1, (5), 0.95f, 0.9f, 0.7f, 0.6f, 0);
    EXPECT_INT0(2, TCRT_I32, 4);
}
END_TEST

START_TEST(test_nms_v4_const_threshold_ties)
{
    /* constant inputs fold.  Score threshold 0.65 drops box 3 (0.6):
     * [4,0,2,0,0], 3 valid (TF.js: the same). */
    G *g = tb_new();
    five_boxes(g, false);
    nms(g, 4, 5, 0.5f, 0.65f, 1);
    import_ok(g, "nms:0", "nms:1", NULL);
    EXPECT_INT(0, TCRT_I32, (5), 4, 0, 2, 0, 0);
    EXPECT_INT0(1, TCRT_I32, 3);
    teardown();

    /* ties: three boxes scoring 0.5, box 2 a copy of box 0.  The lower index
     * goes first: 0, then 1 (disjoint), and 2 is dropped (IoU 1 with 0) ->
     * [0,1,0], 2 valid.  Higher-index-first would give [2,1]. */
    g = tb_new();
    KF(g, "boxes", (3, 4), 0, 0, 1, 1, 0, 2, 1, 3, 0, 0, 1, 1);
    KF(g, "scores", (3), 0.5f, 0.5f, 0.5f);
    nms(g, 4, 3, 0.5f, -1.0f, 1);
    import_ok(g, "nms:0", "nms:1", NULL);
    EXPECT_INT(0, TCRT_I32, (3), 0, 1, 0);
    EXPECT_INT0(1, TCRT_I32, 2);
}
END_TEST

START_TEST(test_nms_v3_const_folds)
{
    /* V3 (no padding) with constant inputs: the data-dependent size is
     * known once folded -> [4,0,2,3] (4 of max 10) */
    G *g = tb_new();
    five_boxes(g, false);
    nms(g, 3, 10, 0.5f, 0.0f, -1);
    import_ok(g, "nms", NULL);
    EXPECT_INT(0, TCRT_I32, (4), 4, 0, 2, 3);
    teardown();

    /* V5 pad=false, constants: indices [4,0,2,3], scores, count 4 */
    g = tb_new();
    five_boxes(g, false);
    nms(g, 5, 3, 0.5f, 0.0f, 0);
    import_ok(g, "nms:0", "nms:1", "nms:2", NULL);
    EXPECT_INT(0, TCRT_I32, (3), 4, 0, 2);
    EXPECT_F32(1, (3), 0.95f, 0.9f, 0.7f);
    EXPECT_INT0(2, TCRT_I32, 3);
}
END_TEST

START_TEST(test_nms_errors)
{
    /* pad=false with run-time boxes: a size known only at run time
     * (ir/dyn.c), which a fetch cannot have (tests/tf/test_dyn.c pads it) */
    G *g = tb_new();
    five_boxes(g, true);
    nms(g, 4, 5, 0.5f, 0.0f, 0);
    import_fails(g, "nms:0",
                 "test.pbtxt: fetch 'nms:0' has a data-dependent size ([<=5], known only at run time)");
    teardown();

    /* V3 with run-time boxes */
    g = tb_new();
    five_boxes(g, true);
    nms(g, 3, 5, 0.5f, 0.0f, -1);
    import_fails(g, "nms", "fetch 'nms' has a data-dependent size ([<=5]");
    teardown();

    /* soft NMS */
    g = tb_new();
    five_boxes(g, true);
    KS(g, "max", 5);
    KSF(g, "iou", 0.5f);
    KSF(g, "thr", 0.0f);
    KSF(g, "sigma", 0.5f);
    Tensorflow__NodeDef *nd =
        tb_node(g, "nms", "NonMaxSuppressionV5", "boxes", "scores", "max", "iou", "thr", "sigma", NULL);
    tb_attr_b(nd, "pad_to_max_output_size", true);
    import_fails(g, "nms:0",
                 "node 'nms' (NonMaxSuppressionV5): soft_nms_sigma = 0.5 (soft NMS) is not supported");
    teardown();

    /* a run-time max_output_size */
    g = tb_new();
    five_boxes(g, true);
    tb_placeholder(g, "max", DT_INT32, 0, NULL);
    KSF(g, "iou", 0.5f);
    KSF(g, "thr", 0.0f);
    nd = tb_node(g, "nms", "NonMaxSuppressionV4", "boxes", "scores", "max", "iou", "thr", NULL);
    tb_attr_b(nd, "pad_to_max_output_size", true);
    import_fails(g, "nms:0",
                 "node 'nms' (NonMaxSuppressionV4): max_output_size (input 2) must be a compile-time "
                 "constant");
    teardown();

    /* IoU threshold out of range */
    g = tb_new();
    five_boxes(g, true);
    nms(g, 4, 5, 1.5f, 0.0f, 1);
    import_fails(g, "nms:0", "iou_threshold must be in [0, 1], got 1.5");
}
END_TEST

/* ---- compiled and run ------------------------------------------------------- */

/* nms = NonMaxSuppressionV5(boxes, scores, 5, 0.5, 0, 0, pad=true);
 * ta = TensorArrayV3(5) with no element_shape; sc = scatter boxes to the
 * rows nms:0 (run-time indices); rd = read(i); wr = write(i, rd). */
static const char NMS_TA_PBTXT[] =
    "node { name: 'boxes' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "  attr { key: 'shape' value { shape { dim { size: 5 } dim { size: 4 } } } } }\n"
    "node { name: 'scores' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "  attr { key: 'shape' value { shape { dim { size: 5 } } } } }\n"
    "node { name: 'i' op: 'Placeholder' attr { key: 'dtype' value { type: DT_INT32 } }\n"
    "  attr { key: 'shape' value { shape { } } } }\n"
    "node { name: 'max' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 5 } } } }\n"
    "node { name: 'iou' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 0.5 } } } }\n"
    "node { name: 'zero' op: 'Const' attr { key: 'dtype' value { type: DT_FLOAT } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_FLOAT tensor_shape { } float_val: 0 } } } }\n"
    "node { name: 'nms' op: 'NonMaxSuppressionV5' input: 'boxes' input: 'scores' input: 'max'\n"
    "  input: 'iou' input: 'zero' input: 'zero'\n"
    "  attr { key: 'T' value { type: DT_FLOAT } } attr { key: 'pad_to_max_output_size' value { b: true } } "
    "}\n"
    "node { name: 'n' op: 'Const' attr { key: 'dtype' value { type: DT_INT32 } }\n"
    "  attr { key: 'value' value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 5 } } } }\n"
    "node { name: 'ta' op: 'TensorArrayV3' input: 'n' attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
    "node { name: 'sc' op: 'TensorArrayScatterV3' input: 'ta' input: 'nms:0' input: 'boxes' input: 'ta:1'\n"
    "  attr { key: 'T' value { type: DT_FLOAT } } }\n"
    "node { name: 'rd' op: 'TensorArrayReadV3' input: 'ta' input: 'i' input: 'sc'\n"
    "  attr { key: 'dtype' value { type: DT_FLOAT } } }\n"
    "node { name: 'wr' op: 'TensorArrayWriteV3' input: 'ta' input: 'i' input: 'rd' input: 'sc'\n"
    "  attr { key: 'T' value { type: DT_FLOAT } } }\n";

static char run_dir[64];

static const char *in_dir(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", run_dir, name);
    return buf[k];
}

/* The fetched tensor written by `tfcc run` (freed by the caller). */
static tcrt_tensor run_result(const char *fetch)
{
    char file[128], msg[256];
    tcrt_output_filename(fetch, file, sizeof file);
    tcrt_tensor t;
    ck_assert_msg(tcrt_npy_read(in_dir(file), &t, msg, sizeof msg) == TCRT_OK, "%s", msg);
    unlink(in_dir(file));
    return t;
}

START_TEST(test_compile_run_nms_ta)
{
    /* NMS of the five boxes: [4,0,2,3,0], scores [0.95,0.9,0.7,0.6,0],
     * 4 valid (see five_boxes).  The scatter writes box r to row nms[r] in
     * order, so row 4 = box 0, row 0 = box 1, row 2 = box 2, row 3 = box 3,
     * then row 0 = box 4 again (the last write wins): rows
     * [box4, 0, box2, box3, box0].  i = 3 reads box 3 = [1,3.5,0,2.5], and
     * writing it back leaves the array as it was. */
    snprintf(run_dir, sizeof run_dir, "/tmp/tfcc-list-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(run_dir));
    FILE *f = fopen(in_dir("m.pbtxt"), "w");
    ck_assert_ptr_nonnull(f);
    fputs(NMS_TA_PBTXT, f);
    fclose(f);
    char msg[256];
    tcrt_tensor b = {(void *)FIVE, TCRT_F32, 2, {5, 4}}, sc = {(void *)FIVE_S, TCRT_F32, 1, {5}};
    int32_t three = 3;
    tcrt_tensor i = {&three, TCRT_I32, 0, {0}};
    ck_assert_int_eq(tcrt_npy_write(in_dir("b.npy"), &b, msg, sizeof msg), TCRT_OK);
    ck_assert_int_eq(tcrt_npy_write(in_dir("s.npy"), &sc, msg, sizeof msg), TCRT_OK);
    ck_assert_int_eq(tcrt_npy_write(in_dir("i.npy"), &i, msg, sizeof msg), TCRT_OK);
    char fb[300], fs[300], fi[300];
    snprintf(fb, sizeof fb, "boxes=%s", in_dir("b.npy"));
    snprintf(fs, sizeof fs, "scores=%s", in_dir("s.npy"));
    snprintf(fi, sizeof fi, "i=%s", in_dir("i.npy"));
    char *argv[] = {"tfcc",    "run",       (char *)in_dir("m.pbtxt"),
                    "--feed",  fb,          "--feed",
                    fs,        "--feed",    fi,
                    "--fetch", "nms:0",     "--fetch",
                    "nms:1",   "--fetch",   "nms:2",
                    "--fetch", "rd",        "--fetch",
                    "wr",      "--out-dir", run_dir,
                    NULL};
    Result r = tfcc_argv((int)(sizeof argv / sizeof argv[0]) - 1, argv);
    ck_assert_msg(r.rc == 0, "tfcc run: %s", r.err);
    result_free(&r);

    tcrt_tensor t = run_result("nms:0");
    ck_assert(t.dtype == TCRT_I32 && t.rank == 1 && t.dims[0] == 5);
    for (int k = 0; k < 5; k++)
        ck_assert_int_eq(((int32_t *)t.data)[k], I32S(4, 0, 2, 3, 0)[k]);
    free(t.data);
    t = run_result("nms:1");
    ck_assert(t.dtype == TCRT_F32 && t.dims[0] == 5);
    for (int k = 0; k < 5; k++)
        ck_assert(((float *)t.data)[k] == F32S(0.95f, 0.9f, 0.7f, 0.6f, 0)[k]);
    free(t.data);
    t = run_result("nms:2");
    ck_assert(t.dtype == TCRT_I32 && t.rank == 0 && *(int32_t *)t.data == 4);
    free(t.data);
    t = run_result("rd");
    ck_assert(t.dtype == TCRT_F32 && t.rank == 1 && t.dims[0] == 4);
    for (int k = 0; k < 4; k++)
        ck_assert(((float *)t.data)[k] == F32S(1, 3.5f, 0, 2.5f)[k]);
    free(t.data);
    t = run_result("wr");
    ck_assert(t.dtype == TCRT_F32 && t.rank == 2 && t.dims[0] == 5 && t.dims[1] == 4);
    const float want[20] = {0, 0, 0.5f, 0.5f, 0, 0, 0, 0, 0, 2, 1, 3, 1, 3.5f, 0, 2.5f, 0, 0, 1, 1};
    for (int k = 0; k < 20; k++)
        ck_assert_msg(((float *)t.data)[k] == want[k], "wr[%d] = %g, want %g", k, ((float *)t.data)[k],
                      want[k]);
    free(t.data);
    unlink(in_dir("m.pbtxt"));
    unlink(in_dir("b.npy"));
    unlink(in_dir("s.npy"));
    unlink(in_dir("i.npy"));
    ck_assert_int_eq(rmdir(run_dir), 0);
}
END_TEST

/* ---- Where ------------------------------------------------------------------ */

START_TEST(test_where)
{
    /* constant [[true,false],[false,true]] -> coordinates [[0,0],[1,1]];
     * constant float [0,3,0,-1] -> [[1],[3]] */
    G *g = tb_new();
    konst(g, "b", DT_BOOL, 2, DIMS(2, 2), NULL, NULL, (const bool[]){true, false, false, true});
    tb_node(g, "w", "Where", "b", NULL);
    KF(g, "f", (4), 0, 3, 0, -1);
    tb_node(g, "wf", "Where", "f", NULL);
    /* three inputs: select -> [1, 20, 30, 4] */
    konst(g, "c", DT_BOOL, 1, DIMS(4), NULL, NULL, (const bool[]){true, false, false, true});
    KF(g, "x", (4), 1, 2, 3, 4);
    KF(g, "y", (4), 10, 20, 30, 40);
    tb_node(g, "w3", "Where", "c", "x", "y", NULL);
    import_ok(g, "w", "wf", "w3", NULL);
    EXPECT_INT(0, TCRT_I64, (2, 2), 0, 0, 1, 1);
    EXPECT_INT(1, TCRT_I64, (2, 1), 1, 3);
    EXPECT_F32(2, (4), 1, 20, 30, 4);
    teardown();

    g = tb_new();
    tb_placeholder(g, "p", DT_BOOL, 1, DIMS(4));
    tb_node(g, "w", "Where", "p", NULL);
    import_fails(g, "w", "fetch 'w' has a data-dependent size ([<=4,1], known only at run time)");
}
END_TEST

static Suite *list_suite(void)
{
    Suite *s = suite_create("tf_list_ops");
    TCase *tc = tcase_create("list");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_test(tc, test_ta_scatter_then_read);
    tcase_add_test(tc, test_ta_scatter_pending_and_in_order);
    tcase_add_test(tc, test_ta_read_fed_index);
    tcase_add_test(tc, test_ta_write_then_stack);
    tcase_add_test(tc, test_ta_write_fed_index);
    tcase_add_test(tc, test_ta_big_buffer);
    tcase_add_test(tc, test_ta_split_and_v2_names);
    tcase_add_test(tc, test_ta_errors);
    tcase_add_test(tc, test_ta_in_region);
    tcase_add_test(tc, test_tl_reserve_set_stack);
    tcase_add_test(tc, test_tl_set_fed_index);
    tcase_add_test(tc, test_tl_from_tensor_get_item);
    tcase_add_test(tc, test_tl_scatter_split_concat);
    tcase_add_test(tc, test_tl_errors);
    tcase_add_test(tc, test_nms_v5_padded_fed);
    tcase_add_test(tc, test_nms_v4_const_threshold_ties);
    tcase_add_test(tc, test_nms_v3_const_folds);
    tcase_add_test(tc, test_nms_errors);
    tcase_add_test(tc, test_where);
    tcase_add_test(tc, test_compile_run_nms_ta);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(list_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
