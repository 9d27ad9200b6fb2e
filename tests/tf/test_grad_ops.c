/* tests/tf/test_grad_ops.c - Check suite for compiler/tf/tf_ops_grad.c, the
 * gradient ops of TensorFlow training graphs.
 *
 * Each test builds a small GraphDef whose inputs are all Const, imports it
 * (fold_on_build folds every lowered node through the runtime's reference
 * kernels) and compares the fetched constants with values derived by hand
 * in the comment beside them.  Errors pin their messages.
 * One end-to-end case (needs ../shared/models; passes with a note when it is
 * absent) compiles the gradient TensorFlow built into a corpus training
 * graph and checks it against central differences of the compiled loss.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/tfcc_inproc.h"
#include "tf_build.h"

static const char *models_dir; /* argv[1]: ../shared/models */

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

static void reset(void)
{
    if (gr)
        ir_graph_free(gr);
    gr = NULL;
    st = (Status)ST_INIT;
}

static void import_n(Tb *b, int n, const char *const *fetches)
{
    TfImportOptions o = {.fetches = fetches, .n_fetches = n};
    gr = tf_import(&b->gd, &o, &st);
    ck_assert_msg(gr != NULL, "import failed: %s", st.msg);
}

static void import_ok(Tb *b, const char *fetch)
{
    import_n(b, 1, (const char *[]){fetch});
}

/* Import that must fail with want in the message; feed (or NULL) names a
 * Placeholder fed as a run-time argument. */
static void import_err_fed(Tb *b, const char *feed, const char *fetch, const char *want)
{
    const char *fetches[1] = {fetch};
    TfFeedSpec f = {.name = feed, .dtype = TCRT_INVALID};
    TfImportOptions o = {
        .feeds = feed ? &f : NULL, .n_feeds = feed ? 1 : 0, .fetches = fetches, .n_fetches = 1};
    gr = tf_import(&b->gd, &o, &st);
    ck_assert_ptr_null(gr);
    ck_assert_msg(strstr(st.msg, want) != NULL, "got: %s\nwant: %s", st.msg, want);
}

static void import_err(Tb *b, const char *fetch, const char *want)
{
    import_err_fed(b, NULL, fetch, want);
}

/* Fetch k must be a constant of type dt and the given shape. */
static const IrNode *fetched(int k, tcrt_dtype dt, int rank, const int64_t *dims)
{
    ck_assert_int_lt(k, gr->n_fetches);
    const IrNode *n = gr->fetches[k].value.node;
    ck_assert_msg(n->op == OP_CONST, "fetch %d is %s, not const", k, ir_op_name(n->op));
    const IrType *t = ir_value_type(gr->fetches[k].value);
    ck_assert_int_eq(t->dtype, dt);
    ck_assert_int_eq(t->shape.rank, rank);
    for (int d = 0; d < rank; d++)
        ck_assert_int_eq(t->shape.dims[d], dims[d]);
    return n;
}

static void expect_f32_at(int k, int rank, const int64_t *dims, const float *want)
{
    const IrNode *n = fetched(k, TCRT_F32, rank, dims);
    int64_t cnt = 1;
    for (int d = 0; d < rank; d++)
        cnt *= dims[d];
    const float *got = n->data;
    for (int64_t j = 0; j < cnt; j++)
        ck_assert_msg(fabsf(got[j] - want[j]) <= 1e-5f * (1 + fabsf(want[j])),
                      "fetch %d element %lld: got %.7g want %.7g", k, (long long)j, got[j], want[j]);
}

static void expect_f32(int rank, const int64_t *dims, const float *want)
{
    expect_f32_at(0, rank, dims, want);
}

static void expect_i32_at(int k, int n, const int32_t *want)
{
    const IrNode *node = fetched(k, TCRT_I32, 1, TB_DIMS(n));
    const int32_t *got = node->data;
    for (int j = 0; j < n; j++)
        ck_assert_msg(got[j] == want[j], "fetch %d element %d: got %d want %d", k, j, got[j], want[j]);
}

/* A binary gradient op a, b -> name. */
static void grad2(Tb *b, const char *op, int n, const float *a, const float *bv)
{
    tb_const_f(b, "a", 1, TB_DIMS(n), n, a);
    tb_const_f(b, "b", 1, TB_DIMS(n), n, bv);
    tb_node(b, "g", op, "a", "b", NULL);
}

/* ---- activation gradients ---- */

START_TEST(test_activation_grads)
{
    /* ReluGrad(g, f): g where f > 0: f = -1, 0, 2, 5 -> 0, 0, 3, 4 */
    Tb *b = tb_new();
    grad2(b, "ReluGrad", 4, TB_F(1, 2, 3, 4), TB_F(-1, 0, 2, 5));
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(4), TB_F(0, 0, 3, 4));
    reset();
    /* Relu6Grad: g where 0 < f < 6: f = -1, 3, 6, 7 -> 0, 2, 0, 0 */
    b = tb_new();
    grad2(b, "Relu6Grad", 4, TB_F(1, 2, 3, 4), TB_F(-1, 3, 6, 7));
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(4), TB_F(0, 2, 0, 0));
    reset();
    /* EluGrad(g, y): y < 0: g * (y + 1): 2 * 0.5 = 1; else g = 2 */
    b = tb_new();
    grad2(b, "EluGrad", 2, TB_F(2, 2), TB_F(-0.5f, 1));
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(2), TB_F(1, 2));
    reset();
    /* SeluGrad(g, y): y < 0: g * (y + scale*alpha) = -0.5 + 1.7580993408
     * = 1.2580993408; else g * scale = 1.0507009874 */
    b = tb_new();
    grad2(b, "SeluGrad", 2, TB_F(1, 1), TB_F(-0.5f, 1));
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(2), TB_F(1.2580993408f, 1.0507009874f));
    reset();
    /* LeakyReluGrad alpha 0.1: f = -1 -> 10 * 0.1 = 1; f = 2 -> 10 */
    b = tb_new();
    grad2(b, "LeakyReluGrad", 2, TB_F(10, 10), TB_F(-1, 2));
    tb_attr_f(b->gd.node[2], "alpha", 0.1f);
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(2), TB_F(1, 10));
    reset();
    /* SigmoidGrad(y, dy) = dy y (1-y): 4*0.5*0.5 = 1, 8*0.25*0.75 = 1.5 */
    b = tb_new();
    grad2(b, "SigmoidGrad", 2, TB_F(0.5f, 0.25f), TB_F(4, 8));
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(2), TB_F(1, 1.5f));
    reset();
    /* TanhGrad(y, dy) = dy (1 - y^2): 2*0.75 = 1.5, 3*0 = 0 */
    b = tb_new();
    grad2(b, "TanhGrad", 2, TB_F(0.5f, -1), TB_F(2, 3));
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(2), TB_F(1.5f, 0));
    reset();
    /* RsqrtGrad(y, dy) = -0.5 dy y^3: -0.5*0.125 = -0.0625, -0.5*8 = -4 */
    b = tb_new();
    grad2(b, "RsqrtGrad", 2, TB_F(0.5f, 2), TB_F(1, 1));
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(2), TB_F(-0.0625f, -4));
    reset();
    /* SqrtGrad(y, dy) = 0.5 dy / y: 0.5/2 = 0.25, 4/4 = 1 */
    b = tb_new();
    grad2(b, "SqrtGrad", 2, TB_F(2, 4), TB_F(1, 8));
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(2), TB_F(0.25f, 1));
    reset();
    /* ReciprocalGrad / InvGrad(y, dy) = -dy y^2: -1*4 = -4, -2*9 = -18 */
    const char *recips[2] = {"ReciprocalGrad", "InvGrad"};
    for (int i = 0; i < 2; i++) {
        b = tb_new();
        grad2(b, recips[i], 2, TB_F(2, -3), TB_F(1, 2));
        import_ok(b, "g");
        expect_f32(1, TB_DIMS(2), TB_F(-4, -18));
        reset();
    }
    /* SoftplusGrad(g, f) = g sigmoid(f): 2*0.5 = 1; f = ln 3: sigmoid 3/4 -> 1.5 */
    b = tb_new();
    grad2(b, "SoftplusGrad", 2, TB_F(2, 2), TB_F(0, 1.0986122887f));
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(2), TB_F(1, 1.5f));
    reset();
    /* SoftsignGrad(g, f) = g / (1+|f|)^2: 4/4 = 1, 9/9 = 1 */
    b = tb_new();
    grad2(b, "SoftsignGrad", 2, TB_F(4, 9), TB_F(1, -2));
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(2), TB_F(1, 1));
}
END_TEST

/* ---- BiasAddGrad ---- */

START_TEST(test_bias_add_grad)
{
    /* NHWC [2,2,3] = 1..12: channel sums 1+4+7+10 = 22, 26, 30 */
    Tb *b = tb_new();
    tb_const_f(b, "dy", 3, TB_DIMS(2, 2, 3), 12, TB_F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
    tb_node(b, "g", "BiasAddGrad", "dy", NULL);
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(3), TB_F(22, 26, 30));
    reset();
    /* NCHW [1,3,2,2] = 1..12: channel c holds 4c+1..4c+4: 10, 26, 42 */
    b = tb_new();
    tb_const_f(b, "dy", 4, TB_DIMS(1, 3, 2, 2), 12, TB_F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
    tb_attr_s(tb_node(b, "g", "BiasAddGrad", "dy", NULL), "data_format", "NCHW");
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(3), TB_F(10, 26, 42));
}
END_TEST

/* ---- convolution gradients ---- */

static Tensorflow__NodeDef *window_node(Tb *b, const char *name, const char *op, const char *padding,
                                        int64_t s, const char *in0, const char *in1, const char *in2)
{
    Tensorflow__NodeDef *n = tb_node(b, name, op, in0, in1, in2, NULL);
    tb_attr_s(n, "padding", padding);
    tb_attr_ints(n, "strides", 4, TB_DIMS(1, s, s, 1));
    return n;
}

START_TEST(test_conv2d_backprop_filter)
{
    /* x = 1..9 (1x3x3x1), dy = 1,2,3,4, 2x2 filter, VALID stride 1:
     * dw[kh,kw] = sum x[oh+kh, ow+kw] dy[oh,ow] = 37, 47, 67, 77
     * (e.g. (0,0) = 1*1 + 2*2 + 4*3 + 5*4 = 37) */
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 3, 3, 1), 9, TB_F(1, 2, 3, 4, 5, 6, 7, 8, 9));
    tb_const_i32(b, "fs", 1, TB_DIMS(4), 4, (const int32_t[]){2, 2, 1, 1});
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(1, 2, 3, 4));
    window_node(b, "dw", "Conv2DBackpropFilter", "VALID", 1, "x", "fs", "dy");
    import_ok(b, "dw");
    expect_f32(4, TB_DIMS(2, 2, 1, 1), TB_F(37, 47, 67, 77));
    reset();
    /* SAME stride 2 (pad bottom/right 1): windows at (0,0),(0,2),(2,0),(2,2):
     * dw(0,0) = 1 + 3*2 + 7*3 + 9*4 = 64, (0,1) = 2 + 8*3 = 26,
     * (1,0) = 4 + 6*2 = 16, (1,1) = 5 */
    b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 3, 3, 1), 9, TB_F(1, 2, 3, 4, 5, 6, 7, 8, 9));
    tb_const_i32(b, "fs", 1, TB_DIMS(4), 4, (const int32_t[]){2, 2, 1, 1});
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(1, 2, 3, 4));
    window_node(b, "dw", "Conv2DBackpropFilter", "SAME", 2, "x", "fs", "dy");
    import_ok(b, "dw");
    expect_f32(4, TB_DIMS(2, 2, 1, 1), TB_F(64, 26, 16, 5));
    reset();
    /* NCHW: x [1,2,1,2] (channel 0 = 1,2; channel 1 = 3,4), 1x1 filter
     * [1,1,2,1], dy [1,1,1,2] = 5,6: dw[ci] = sum_w x[ci,w] dy[w]:
     * 1*5 + 2*6 = 17, 3*5 + 4*6 = 39 */
    b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 1, 2), 4, TB_F(1, 2, 3, 4));
    tb_const_i32(b, "fs", 1, TB_DIMS(4), 4, (const int32_t[]){1, 1, 2, 1});
    tb_const_f(b, "dy", 4, TB_DIMS(1, 1, 1, 2), 2, TB_F(5, 6));
    Tensorflow__NodeDef *n = tb_node(b, "dw", "Conv2DBackpropFilter", "x", "fs", "dy", NULL);
    tb_attr_s(n, "padding", "VALID");
    tb_attr_s(n, "data_format", "NCHW");
    tb_attr_ints(n, "strides", 4, TB_DIMS(1, 1, 1, 1));
    import_ok(b, "dw");
    expect_f32(4, TB_DIMS(1, 1, 2, 1), TB_F(17, 39));
    reset();
    /* V2 forms take the filter / input tensors instead of their sizes: the
     * VALID case above again (37, 47, 67, 77), and the input gradient of
     * the 2x2 filter 1,2,3,4 for dy = 1 at every output of the 3x3 input:
     * dx[i,j] = sum of the filter taps that touch (i,j):
     * 1 3 2 / 4 10 6 / 3 7 4 */
    b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 3, 3, 1), 9, TB_F(1, 2, 3, 4, 5, 6, 7, 8, 9));
    tb_const_f(b, "w", 4, TB_DIMS(2, 2, 1, 1), 4, TB_F(1, 2, 3, 4));
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(1, 2, 3, 4));
    tb_const_f(b, "ones", 4, TB_DIMS(1, 2, 2, 1), 1, TB_F(1));
    window_node(b, "dw", "Conv2DBackpropFilterV2", "VALID", 1, "x", "w", "dy");
    window_node(b, "dx", "Conv2DBackpropInputV2", "VALID", 1, "x", "w", "ones");
    import_n(b, 2, (const char *[]){"dw", "dx"});
    expect_f32_at(0, 4, TB_DIMS(2, 2, 1, 1), TB_F(37, 47, 67, 77));
    expect_f32_at(1, 4, TB_DIMS(1, 3, 3, 1), TB_F(1, 3, 2, 4, 10, 6, 3, 7, 4));
}
END_TEST

START_TEST(test_depthwise_backprop)
{
    /* filter: x [1,2,2,2] with channel 0 = 1,2,3,4 and channel 1 =
     * 10,20,30,40 over the pixels; 1x1 filter, multiplier 2; dy channel
     * c*2+m is 1 (m = 0) or q+1 (m = 1) at pixel q:
     * dw[c,m] = sum_q x[q,c] dy[q,c*2+m] = 10, 30, 100, 300 */
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 2), 8, TB_F(1, 10, 2, 20, 3, 30, 4, 40));
    tb_const_i32(b, "fs", 1, TB_DIMS(4), 4, (const int32_t[]){1, 1, 2, 2});
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 4), 16, TB_F(1, 1, 1, 1, 1, 2, 1, 2, 1, 3, 1, 3, 1, 4, 1, 4));
    window_node(b, "dw", "DepthwiseConv2dNativeBackpropFilter", "VALID", 1, "x", "fs", "dy");
    import_ok(b, "dw");
    expect_f32(4, TB_DIMS(1, 1, 2, 2), TB_F(10, 30, 100, 300));
    reset();
    /* input: w[c,m] = (1,2 | 3,4), dy = q+1 in every channel at pixel q:
     * dx[q,c] = sum_m dy[q,c*2+m] w[c,m] = (q+1)*3 and (q+1)*7 */
    b = tb_new();
    tb_const_i32(b, "is", 1, TB_DIMS(4), 4, (const int32_t[]){1, 2, 2, 2});
    tb_const_f(b, "w", 4, TB_DIMS(1, 1, 2, 2), 4, TB_F(1, 2, 3, 4));
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 4), 16, TB_F(1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4));
    window_node(b, "dx", "DepthwiseConv2dNativeBackpropInput", "VALID", 1, "is", "w", "dy");
    import_ok(b, "dx");
    expect_f32(4, TB_DIMS(1, 2, 2, 2), TB_F(3, 7, 6, 14, 9, 21, 12, 28));
}
END_TEST

/* ---- pooling gradients ---- */

START_TEST(test_pool_grads)
{
    /* MaxPoolGrad: x = 1..9, 2x2 stride 1 VALID: window maxima 5, 6, 8, 9
     * (indices 4, 5, 7, 8) receive dy = 1, 2, 3, 4 */
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 3, 3, 1), 9, TB_F(1, 2, 3, 4, 5, 6, 7, 8, 9));
    tb_const_f(b, "y", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(5, 6, 8, 9));
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(1, 2, 3, 4));
    Tensorflow__NodeDef *n = tb_node(b, "dx", "MaxPoolGrad", "x", "y", "dy", NULL);
    tb_attr_s(n, "padding", "VALID");
    tb_attr_ints(n, "ksize", 4, TB_DIMS(1, 2, 2, 1));
    tb_attr_ints(n, "strides", 4, TB_DIMS(1, 1, 1, 1));
    import_ok(b, "dx");
    expect_f32(4, TB_DIMS(1, 3, 3, 1), TB_F(0, 0, 0, 0, 1, 2, 0, 3, 4));
    reset();
    /* MaxPoolGradV2, same with constant ksize/strides; ties (x = 1 3 / 3 1,
     * one 2x2 window): the first maximum (index 1) gets dy = 7 */
    b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(1, 3, 3, 1));
    tb_const_f(b, "y", 4, TB_DIMS(1, 1, 1, 1), 1, TB_F(3));
    tb_const_f(b, "dy", 4, TB_DIMS(1, 1, 1, 1), 1, TB_F(7));
    tb_const_i32(b, "k", 1, TB_DIMS(4), 4, (const int32_t[]){1, 2, 2, 1});
    tb_const_i32(b, "s", 1, TB_DIMS(4), 4, (const int32_t[]){1, 1, 1, 1});
    tb_attr_s(tb_node(b, "dx", "MaxPoolGradV2", "x", "y", "dy", "k", "s", NULL), "padding", "VALID");
    import_ok(b, "dx");
    expect_f32(4, TB_DIMS(1, 2, 2, 1), TB_F(0, 7, 0, 0));
    reset();
    /* NCHW MaxPoolGrad, 2 channels of 2x2, one 2x2 window: channel 0 =
     * 1,4,3,2 (maximum at 1), channel 1 = 5,6,8,7 (maximum at 2); dy = 10, 20 */
    b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 2), 8, TB_F(1, 4, 3, 2, 5, 6, 8, 7));
    tb_const_f(b, "y", 4, TB_DIMS(1, 2, 1, 1), 2, TB_F(4, 8));
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 1, 1), 2, TB_F(10, 20));
    n = tb_node(b, "dx", "MaxPoolGrad", "x", "y", "dy", NULL);
    tb_attr_s(n, "padding", "VALID");
    tb_attr_s(n, "data_format", "NCHW");
    tb_attr_ints(n, "ksize", 4, TB_DIMS(1, 1, 2, 2));
    tb_attr_ints(n, "strides", 4, TB_DIMS(1, 1, 1, 1));
    import_ok(b, "dx");
    expect_f32(4, TB_DIMS(1, 2, 2, 2), TB_F(0, 10, 0, 0, 0, 0, 20, 0));
    reset();
    /* AvgPoolGrad: 3x3 input, 2x2 stride 2 SAME (pad bottom/right 1):
     * windows of 4, 2, 2, 1 in-bounds taps; dy = 4,2,6,5 -> 1 to the
     * top-left 2x2, 1 to (0,2),(1,2), 3 to (2,0),(2,1), 5 to (2,2) */
    b = tb_new();
    tb_const_i32(b, "shape", 1, TB_DIMS(4), 4, (const int32_t[]){1, 3, 3, 1});
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(4, 2, 6, 5));
    n = tb_node(b, "dx", "AvgPoolGrad", "shape", "dy", NULL);
    tb_attr_s(n, "padding", "SAME");
    tb_attr_ints(n, "ksize", 4, TB_DIMS(1, 2, 2, 1));
    tb_attr_ints(n, "strides", 4, TB_DIMS(1, 2, 2, 1));
    import_ok(b, "dx");
    expect_f32(4, TB_DIMS(1, 3, 3, 1), TB_F(1, 1, 1, 1, 1, 1, 3, 3, 5));
}
END_TEST

/* ---- FusedBatchNormGrad ---- */

static const char *const BN_FETCH[3] = {"bn", "bn:1", "bn:2"};

START_TEST(test_batch_norm_grad_training)
{
    /* one channel, x = 0,0,3,3: mean 1.5, biased var 2.25, eps 0 -> r = 2/3;
     * scale 3, dy = 1,0,0,0.  xc = -1.5,-1.5,1.5,1.5, mean(dy) = 0.25,
     * mean(dy xc) = -0.375, xc r^2 mean(dy xc) = xc * -1/6 = .25,.25,-.25,-.25;
     * dx = scale r (dy - 0.25 - that) = 2 * (0.5, -0.5, 0, 0) = 1, -1, 0, 0;
     * dscale = sum(dy xc) r = -1.5 * 2/3 = -1; doffset = 1.  The reserve
     * spaces are ignored in training mode (zeros here). */
    const char *ops[3] = {"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"};
    for (int v = 0; v < 3; v++) {
        Tb *b = tb_new();
        tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(1, 0, 0, 0));
        tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(0, 0, 3, 3));
        tb_const_f(b, "scale", 1, TB_DIMS(1), 1, TB_F(3));
        tb_const_f(b, "r", 1, TB_DIMS(1), 1, TB_F(0));
        Tensorflow__NodeDef *n = v == 2 ? tb_node(b, "bn", ops[v], "dy", "x", "scale", "r", "r", "r", NULL)
                                        : tb_node(b, "bn", ops[v], "dy", "x", "scale", "r", "r", NULL);
        tb_attr_f(n, "epsilon", 0);
        import_n(b, 3, BN_FETCH);
        expect_f32_at(0, 4, TB_DIMS(1, 2, 2, 1), TB_F(1, -1, 0, 0));
        expect_f32_at(1, 1, TB_DIMS(1), TB_F(-1));
        expect_f32_at(2, 1, TB_DIMS(1), TB_F(1));
        reset();
        tb_free_all();
    }
    /* NCHW, 2 channels of 3 values, eps 3: channel 0 = 0,3,6 (mean 3, var
     * 6, r = 1/3), dy 3,0,0: mean(dy) = 1, xc = -3,0,3, mean(dy xc) = -3,
     * xc r^2 (-3) = 1,0,-1; dx = (1/3) (2,-1,-1 - 1,0,-1) = 1/3,-1/3,0;
     * dscale = -9/3 = -3, doffset = 3.  Channel 1 = 1,1,1 with dy 0: all 0. */
    Tb *b = tb_new();
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 1, 3), 6, TB_F(3, 0, 0, 0, 0, 0));
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 1, 3), 6, TB_F(0, 3, 6, 1, 1, 1));
    tb_const_f(b, "scale", 1, TB_DIMS(2), 2, TB_F(1, 1));
    tb_const_f(b, "r", 1, TB_DIMS(2), 2, TB_F(0, 0));
    Tensorflow__NodeDef *n = tb_node(b, "bn", "FusedBatchNormGradV2", "dy", "x", "scale", "r", "r", NULL);
    tb_attr_f(n, "epsilon", 3);
    tb_attr_s(n, "data_format", "NCHW");
    import_n(b, 3, BN_FETCH);
    expect_f32_at(0, 4, TB_DIMS(1, 2, 1, 3), TB_F(1.0f / 3, -1.0f / 3, 0, 0, 0, 0));
    expect_f32_at(1, 1, TB_DIMS(2), TB_F(-3, 0));
    expect_f32_at(2, 1, TB_DIMS(2), TB_F(3, 0));
}
END_TEST

START_TEST(test_batch_norm_grad_inference)
{
    /* is_training false: mean 1, var 3 (reserve spaces), eps 1 -> r = 0.5;
     * scale 2, x = 0,0,3,3, dy = 1,0,0,2: dx = dy * 2 * 0.5 = dy;
     * dscale = sum(dy (x - 1)) r = (-1 + 4) * 0.5 = 1.5; doffset = 3;
     * outputs 3 and 4 are empty. */
    Tb *b = tb_new();
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(1, 0, 0, 2));
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(0, 0, 3, 3));
    tb_const_f(b, "scale", 1, TB_DIMS(1), 1, TB_F(2));
    tb_const_f(b, "mean", 1, TB_DIMS(1), 1, TB_F(1));
    tb_const_f(b, "var", 1, TB_DIMS(1), 1, TB_F(3));
    Tensorflow__NodeDef *n = tb_node(b, "bn", "FusedBatchNormGrad", "dy", "x", "scale", "mean", "var", NULL);
    tb_attr_f(n, "epsilon", 1);
    tb_attr_b(n, "is_training", false);
    import_n(b, 5, (const char *[]){"bn", "bn:1", "bn:2", "bn:3", "bn:4"});
    expect_f32_at(0, 4, TB_DIMS(1, 2, 2, 1), TB_F(1, 0, 0, 2));
    expect_f32_at(1, 1, TB_DIMS(1), TB_F(1.5f));
    expect_f32_at(2, 1, TB_DIMS(1), TB_F(3));
    ck_assert_int_eq(ir_value_type(gr->fetches[3].value)->shape.dims[0], 0);
    ck_assert_int_eq(ir_value_type(gr->fetches[4].value)->shape.dims[0], 0);
}
END_TEST

/* ---- cross-entropy losses ---- */

/* features: row 0 = 0,0 (softmax 1/2,1/2); row 1 = 0,ln 3 (1/4,3/4). */
static void logits(Tb *b)
{
    tb_const_f(b, "f", 2, TB_DIMS(2, 2), 4, TB_F(0, 0, 0, 1.0986122887f));
}

START_TEST(test_softmax_xent)
{
    /* labels row 0 = 1/2,1/2: loss = log 2, backprop 0,0;
     * row 1 = 1,0: loss = -log(1/4) = log 4, backprop 1/4-1, 3/4 */
    Tb *b = tb_new();
    logits(b);
    tb_const_f(b, "l", 2, TB_DIMS(2, 2), 4, TB_F(0.5f, 0.5f, 1, 0));
    tb_node(b, "x", "SoftmaxCrossEntropyWithLogits", "f", "l", NULL);
    import_n(b, 2, (const char *[]){"x", "x:1"});
    expect_f32_at(0, 1, TB_DIMS(2), TB_F(0.6931471806f, 1.3862943611f));
    expect_f32_at(1, 2, TB_DIMS(2, 2), TB_F(0, 0, -0.75f, 0.75f));
}
END_TEST

START_TEST(test_sparse_softmax_xent)
{
    /* labels 1, 0: row 0 loss log 2, backprop 1/2, -1/2; row 1 log 4,
     * backprop -3/4, 3/4 */
    Tb *b = tb_new();
    logits(b);
    tb_const_i32(b, "l", 1, TB_DIMS(2), 2, (const int32_t[]){1, 0});
    tb_node(b, "x", "SparseSoftmaxCrossEntropyWithLogits", "f", "l", NULL);
    import_n(b, 2, (const char *[]){"x", "x:1"});
    expect_f32_at(0, 1, TB_DIMS(2), TB_F(0.6931471806f, 1.3862943611f));
    expect_f32_at(1, 2, TB_DIMS(2, 2), TB_F(0.5f, -0.5f, -0.75f, 0.75f));
    reset();
    tb_free_all();
    /* label 2 is outside [0, 2): row 0 becomes NaN, row 1 is unchanged */
    b = tb_new();
    logits(b);
    tb_const_i32(b, "l", 1, TB_DIMS(2), 2, (const int32_t[]){2, 0});
    tb_node(b, "x", "SparseSoftmaxCrossEntropyWithLogits", "f", "l", NULL);
    import_n(b, 2, (const char *[]){"x", "x:1"});
    const float *loss = fetched(0, TCRT_F32, 1, TB_DIMS(2))->data;
    const float *bp = fetched(1, TCRT_F32, 2, TB_DIMS(2, 2))->data;
    ck_assert(isnan(loss[0]) && isnan(bp[0]) && isnan(bp[1]));
    ck_assert_float_eq_tol(loss[1], 1.3862943611f, 1e-5f);
    ck_assert_float_eq_tol(bp[2], -0.75f, 1e-6f);
}
END_TEST

/* ---- shape helpers ---- */

START_TEST(test_broadcast_gradient_args)
{
    /* [2,3,1] vs [3,4] (1-extended [1,3,4]): broadcast [2,3,4]; input 0 is
     * stretched along axis 2, input 1 along axis 0 */
    Tb *b = tb_new();
    tb_const_i32(b, "s0", 1, TB_DIMS(3), 3, (const int32_t[]){2, 3, 1});
    tb_const_i32(b, "s1", 1, TB_DIMS(2), 2, (const int32_t[]){3, 4});
    tb_node(b, "r", "BroadcastGradientArgs", "s0", "s1", NULL);
    import_n(b, 2, (const char *[]){"r", "r:1"});
    expect_i32_at(0, 1, (const int32_t[]){2});
    expect_i32_at(1, 1, (const int32_t[]){0});
    reset();
    /* scalar vs [2,1]: r0 = 0,1 (every axis), r1 = 1; [1] vs [1]: both 0 */
    b = tb_new();
    tb_const_i32(b, "s0", 1, TB_DIMS(0), 0, NULL);
    tb_const_i32(b, "s1", 1, TB_DIMS(2), 2, (const int32_t[]){2, 1});
    tb_const_i32(b, "o", 1, TB_DIMS(1), 1, (const int32_t[]){1});
    tb_node(b, "r", "BroadcastGradientArgs", "s0", "s1", NULL);
    tb_node(b, "q", "BroadcastGradientArgs", "o", "o", NULL);
    import_n(b, 4, (const char *[]){"r", "r:1", "q", "q:1"});
    expect_i32_at(0, 2, (const int32_t[]){0, 1});
    expect_i32_at(1, 1, (const int32_t[]){1});
    expect_i32_at(2, 1, (const int32_t[]){0});
    expect_i32_at(3, 1, (const int32_t[]){0});
    reset();
    b = tb_new();
    tb_const_i32(b, "s0", 1, TB_DIMS(1), 1, (const int32_t[]){2});
    tb_const_i32(b, "s1", 1, TB_DIMS(1), 1, (const int32_t[]){3});
    tb_node(b, "r", "BroadcastGradientArgs", "s0", "s1", NULL);
    import_err(b, "r", "node 'r' (BroadcastGradientArgs): incompatible shapes: dim 0 is 2 and 3");
    reset();
    b = tb_new();
    tb_placeholder(b, "s0", 3 /* DT_INT32 */, 1, TB_DIMS(2));
    tb_const_i32(b, "s1", 1, TB_DIMS(1), 1, (const int32_t[]){3});
    tb_node(b, "r", "BroadcastGradientArgs", "s0", "s1", NULL);
    import_err_fed(b, "s0", "r", "node 'r' (BroadcastGradientArgs): input 0 (s0) must be a constant");
}
END_TEST

START_TEST(test_concat_offset)
{
    /* axis 1 over [2,3,5], [2,4,5], [2,1,5]: offsets 0, 3, 3+4 = 7 at dim 1 */
    Tb *b = tb_new();
    tb_const_i32(b, "axis", 0, NULL, 1, (const int32_t[]){1});
    tb_const_i32(b, "a", 1, TB_DIMS(3), 3, (const int32_t[]){2, 3, 5});
    tb_const_i32(b, "b", 1, TB_DIMS(3), 3, (const int32_t[]){2, 4, 5});
    tb_const_i32(b, "c", 1, TB_DIMS(3), 3, (const int32_t[]){2, 1, 5});
    tb_node(b, "off", "ConcatOffset", "axis", "a", "b", "c", NULL);
    import_n(b, 3, (const char *[]){"off", "off:1", "off:2"});
    expect_i32_at(0, 3, (const int32_t[]){0, 0, 0});
    expect_i32_at(1, 3, (const int32_t[]){0, 3, 0});
    expect_i32_at(2, 3, (const int32_t[]){0, 7, 0});
}
END_TEST

/* ---- scatter-style gradients ---- */

START_TEST(test_unsorted_segment_sum)
{
    /* rows (1,2), (3,4), (5,6) to segments 1, -1 (dropped), 1 of 3:
     * segment 1 = (6, 8), the others 0 */
    Tb *b = tb_new();
    tb_const_f(b, "d", 2, TB_DIMS(3, 2), 6, TB_F(1, 2, 3, 4, 5, 6));
    tb_const_i32(b, "ids", 1, TB_DIMS(3), 3, (const int32_t[]){1, -1, 1});
    tb_const_i32(b, "n", 0, NULL, 1, (const int32_t[]){3});
    tb_node(b, "s", "UnsortedSegmentSum", "d", "ids", "n", NULL);
    import_ok(b, "s");
    expect_f32(2, TB_DIMS(3, 2), TB_F(0, 0, 6, 8, 0, 0));
}
END_TEST

START_TEST(test_scatter_nd)
{
    /* K = 2: (0,1) += 1, (2,0) += 2, (0,1) += 3 in a [3,2] of zeros */
    Tb *b = tb_new();
    tb_const_i32(b, "i", 2, TB_DIMS(3, 2), 6, (const int32_t[]){0, 1, 2, 0, 0, 1});
    tb_const_f(b, "u", 1, TB_DIMS(3), 3, TB_F(1, 2, 3));
    tb_const_i32(b, "s", 1, TB_DIMS(2), 2, (const int32_t[]){3, 2});
    tb_node(b, "sn", "ScatterNd", "i", "u", "s", NULL);
    import_ok(b, "sn");
    expect_f32(2, TB_DIMS(3, 2), TB_F(0, 4, 0, 0, 2, 0));
    reset();
    /* K = 1: whole rows, row 1 = (1,2), row 0 = (3,4) */
    b = tb_new();
    tb_const_i32(b, "i", 2, TB_DIMS(2, 1), 2, (const int32_t[]){1, 0});
    tb_const_f(b, "u", 2, TB_DIMS(2, 2), 4, TB_F(1, 2, 3, 4));
    tb_const_i32(b, "s", 1, TB_DIMS(2), 2, (const int32_t[]){2, 2});
    tb_node(b, "sn", "ScatterNd", "i", "u", "s", NULL);
    import_ok(b, "sn");
    expect_f32(2, TB_DIMS(2, 2), TB_F(3, 4, 1, 2));
    reset();
    /* (0,5) is outside [3,2] although its flat number 5 is not: the kernel
     * rejects it, so the node is not folded (a run-time error) */
    b = tb_new();
    tb_const_i32(b, "i", 2, TB_DIMS(1, 2), 2, (const int32_t[]){0, 5});
    tb_const_f(b, "u", 1, TB_DIMS(1), 1, TB_F(1));
    tb_const_i32(b, "s", 1, TB_DIMS(2), 2, (const int32_t[]){3, 2});
    tb_node(b, "sn", "ScatterNd", "i", "u", "s", NULL);
    import_ok(b, "sn");
    ck_assert_int_ne(gr->fetches[0].value.node->op, OP_CONST);
}
END_TEST

static Tensorflow__NodeDef *ssg(Tb *b, int rank, const int32_t *shape, int n, const int32_t *begin,
                                const int32_t *end, const int32_t *strides)
{
    tb_const_i32(b, "shape", 1, TB_DIMS(rank), rank, shape);
    tb_const_i32(b, "b", 1, TB_DIMS(n), n, begin);
    tb_const_i32(b, "e", 1, TB_DIMS(n), n, end);
    tb_const_i32(b, "s", 1, TB_DIMS(n), n, strides);
    return tb_node(b, "g", "StridedSliceGrad", "shape", "b", "e", "s", "dy", NULL);
}

START_TEST(test_strided_slice_grad)
{
    /* x [3,4][0:3:2, 1:4:2] picks rows 0,2 and columns 1,3: dy 1,2,3,4
     * lands at (0,1), (0,3), (2,1), (2,3) */
    Tb *b = tb_new();
    tb_const_f(b, "dy", 2, TB_DIMS(2, 2), 4, TB_F(1, 2, 3, 4));
    ssg(b, 2, (const int32_t[]){3, 4}, 2, (const int32_t[]){0, 1}, (const int32_t[]){3, 4},
        (const int32_t[]){2, 2});
    import_ok(b, "g");
    expect_f32(2, TB_DIMS(3, 4), TB_F(0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4));
    reset();
    /* shrink axis 0: x [2,3][1] -> dy [3] fills row 1 */
    b = tb_new();
    tb_const_f(b, "dy", 1, TB_DIMS(3), 3, TB_F(7, 8, 9));
    Tensorflow__NodeDef *n = ssg(b, 2, (const int32_t[]){2, 3}, 2, (const int32_t[]){1, 0},
                                 (const int32_t[]){2, 3}, (const int32_t[]){1, 1});
    tb_attr_i(n, "shrink_axis_mask", 1);
    import_ok(b, "g");
    expect_f32(2, TB_DIMS(2, 3), TB_F(0, 0, 0, 7, 8, 9));
    reset();
    /* negative stride: x [4][-1:0:-2] picks indices 3, 1: dy 10, 20 */
    b = tb_new();
    tb_const_f(b, "dy", 1, TB_DIMS(2), 2, TB_F(10, 20));
    ssg(b, 1, (const int32_t[]){4}, 1, (const int32_t[]){-1}, (const int32_t[]){0}, (const int32_t[]){-2});
    import_ok(b, "g");
    expect_f32(1, TB_DIMS(4), TB_F(0, 20, 0, 10));
    reset();
    /* dy of the wrong size */
    b = tb_new();
    tb_const_f(b, "dy", 1, TB_DIMS(3), 3, TB_F(1, 2, 3));
    ssg(b, 1, (const int32_t[]){4}, 1, (const int32_t[]){-1}, (const int32_t[]){0}, (const int32_t[]){-2});
    import_err(b, "g", "node 'g' (StridedSliceGrad): dy shape [3] does not match the slice shape [2]");
}
END_TEST

START_TEST(test_dynamic_stitch)
{
    /* TF's documented example: indices [6], [4,1], [[5,2],[0,3]] with rows
     * 61 62 | 41 42, 11 12 | 51 52, 21 22, 1 2, 31 32 -> row k = (10k+1, 10k+2)
     * (row 0 = 1 2) */
    Tb *b = tb_new();
    tb_const_i32(b, "i0", 1, TB_DIMS(1), 1, (const int32_t[]){6});
    tb_const_i32(b, "i1", 1, TB_DIMS(2), 2, (const int32_t[]){4, 1});
    tb_const_i32(b, "i2", 2, TB_DIMS(2, 2), 4, (const int32_t[]){5, 2, 0, 3});
    tb_const_f(b, "d0", 2, TB_DIMS(1, 2), 2, TB_F(61, 62));
    tb_const_f(b, "d1", 2, TB_DIMS(2, 2), 4, TB_F(41, 42, 11, 12));
    tb_const_f(b, "d2", 3, TB_DIMS(2, 2, 2), 8, TB_F(51, 52, 21, 22, 1, 2, 31, 32));
    tb_attr_i(tb_node(b, "st", "DynamicStitch", "i0", "i1", "i2", "d0", "d1", "d2", NULL), "N", 3);
    import_ok(b, "st");
    expect_f32(2, TB_DIMS(7, 2), TB_F(1, 2, 11, 12, 21, 22, 31, 32, 41, 42, 51, 52, 61, 62));
    reset();
    /* duplicates: the later wins (index 1 from the second list: 9);
     * row 2 is named by nobody: 0 */
    b = tb_new();
    tb_const_i32(b, "i0", 1, TB_DIMS(2), 2, (const int32_t[]){0, 1});
    tb_const_i32(b, "i1", 1, TB_DIMS(2), 2, (const int32_t[]){1, 3});
    tb_const_f(b, "d0", 1, TB_DIMS(2), 2, TB_F(1, 2));
    tb_const_f(b, "d1", 1, TB_DIMS(2), 2, TB_F(9, 4));
    tb_node(b, "st", "DynamicStitch", "i0", "i1", "d0", "d1", NULL);
    import_ok(b, "st");
    expect_f32(1, TB_DIMS(4), TB_F(1, 9, 0, 4));
}
END_TEST

/* ---- errors ---- */

START_TEST(test_grad_errors)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 3, 3, 1), 1, TB_F(1));
    tb_placeholder(b, "fs", 3 /* DT_INT32 */, 1, TB_DIMS(4));
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 1), 1, TB_F(1));
    window_node(b, "dw", "Conv2DBackpropFilter", "VALID", 1, "x", "fs", "dy");
    import_err_fed(b, "fs", "dw",
                   "node 'dw' (Conv2DBackpropFilter): input 1 (filter_sizes) must be a constant");
    reset();
    /* a gradient that does not fit the forward window */
    b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 3, 3, 1), 1, TB_F(1));
    tb_const_i32(b, "fs", 1, TB_DIMS(4), 4, (const int32_t[]){2, 2, 1, 1});
    tb_const_f(b, "dy", 4, TB_DIMS(1, 3, 3, 1), 1, TB_F(1));
    window_node(b, "dw", "Conv2DBackpropFilter", "VALID", 1, "x", "fs", "dy");
    import_err(b, "dw",
               "node 'dw' (Conv2DBackpropFilter): gradient [1,3,3,1] is inconsistent with input [1,3,3,1] "
               "for filter [2,2,1,1]");
    reset();
    b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 3, 3, 1), 1, TB_F(1));
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 1), 1, TB_F(1));
    Tensorflow__NodeDef *n = tb_node(b, "dx", "MaxPoolGrad", "x", "x", "dy", NULL);
    tb_attr_s(n, "padding", "FULL");
    tb_attr_ints(n, "ksize", 4, TB_DIMS(1, 2, 2, 1));
    tb_attr_ints(n, "strides", 4, TB_DIMS(1, 1, 1, 1));
    import_err(b, "dx", "node 'dx' (MaxPoolGrad): unsupported padding 'FULL'");
    reset();
    b = tb_new();
    tb_const_i32(b, "a", 1, TB_DIMS(1), 1, (const int32_t[]){1});
    tb_node(b, "g", "ReluGrad", "a", "a", NULL);
    import_err(b, "g", "node 'g' (ReluGrad): input 0 must be float32 or float64, got int32");
    reset();
    b = tb_new();
    tb_const_f(b, "d", 1, TB_DIMS(3), 1, TB_F(1));
    tb_const_i32(b, "ids", 1, TB_DIMS(2), 2, (const int32_t[]){0, 0});
    tb_const_i32(b, "n", 0, NULL, 1, (const int32_t[]){1});
    tb_node(b, "s", "UnsortedSegmentSum", "d", "ids", "n", NULL);
    import_err(b, "s",
               "node 's' (UnsortedSegmentSum): segment_ids shape [2] is not a prefix of data shape [3]");
}
END_TEST

/* ---- the primitives' shape rules (ir/shape.c), through the IR builder ---- */

static IrValue feed(IrGraph *g, const char *name, tcrt_dtype dt, int rank, const int64_t *dims, Status *s)
{
    IrType t = {dt, ir_shape_make(rank, dims)};
    return ir_add_feed(g, name, &t, s);
}

/* Emits op on ins with params p and output type out (or NULL); expects the
 * error text want (or success when want is NULL). */
static void emit_expect(IrGraph *g, Op op, IrValue *ins, int n, const IrParams *p, const IrType *out,
                        const char *want)
{
    Status s = ST_INIT;
    IrNode *node = ir_emit(g, op, ins, n, p, out, &s);
    if (!want) {
        ck_assert_msg(node != NULL, "unexpected error: %s", s.msg);
        return;
    }
    ck_assert_ptr_null(node);
    ck_assert_msg(strstr(s.msg, want) != NULL, "got: %s\nwant: %s", s.msg, want);
}

START_TEST(test_grad_shape_rules)
{
    Status s = ST_INIT;
    gr = ir_graph_new(NULL, &s);
    ck_assert_ptr_nonnull(gr);
    IrValue x = feed(gr, "x", TCRT_F32, 4, TB_DIMS(1, 5, 5, 2), &s);
    IrValue dy = feed(gr, "dy", TCRT_F32, 4, TB_DIMS(1, 2, 2, 2), &s);
    IrValue idx = feed(gr, "i", TCRT_I32, 1, TB_DIMS(3), &s);
    IrValue u = feed(gr, "u", TCRT_F32, 2, TB_DIMS(3, 4), &s);
    IrValue b = feed(gr, "b", TCRT_BOOL, 2, TB_DIMS(3, 4), &s);
    ck_assert_msg(st_ok(&s), "%s", s.msg);
    IrParams pool;
    memset(&pool, 0, sizeof pool);
    pool.i[TCRT_POOL_KH] = pool.i[TCRT_POOL_KW] = 2;
    pool.i[TCRT_POOL_SH] = pool.i[TCRT_POOL_SW] = 2; /* 5x5 -> 2x2 */
    IrValue in2[2] = {x, dy};
    emit_expect(gr, OP_MAXPOOL_GRAD, in2, 2, &pool, NULL, NULL);
    pool.i[TCRT_POOL_SH] = 1; /* 5x5 -> 4x2 */
    emit_expect(gr, OP_MAXPOOL_GRAD, in2, 2, &pool, NULL,
                "gradient [1,2,2,2] does not match the pooled shape of [1,5,5,2] ([1,4,2,2])");
    IrType xt = {TCRT_F32, ir_shape_make(4, TB_DIMS(1, 5, 5, 2))};
    emit_expect(gr, OP_AVGPOOL_GRAD, &dy, 1, &pool, &xt,
                "gradient [1,2,2,2] does not match the pooled shape of [1,5,5,2] ([1,4,2,2])");
    pool.i[TCRT_POOL_SH] = 2;
    emit_expect(gr, OP_AVGPOOL_GRAD, &dy, 1, &pool, &xt, NULL);
    /* conv2d_backprop_filter: 3x3 stride 2 VALID on 5x5 gives 2x2 */
    IrParams cp;
    memset(&cp, 0, sizeof cp);
    cp.i[TCRT_CONV_SH] = cp.i[TCRT_CONV_SW] = 2;
    cp.i[TCRT_CONV_DH] = cp.i[TCRT_CONV_DW] = 1;
    IrType wt = {TCRT_F32, ir_shape_make(4, TB_DIMS(3, 3, 2, 2))};
    emit_expect(gr, OP_CONV2D_BACKPROP_FILTER, in2, 2, &cp, &wt, NULL);
    cp.i[TCRT_CONV_DEPTHWISE] = 1; /* [3,3,2,2] depthwise needs 4 dy channels */
    emit_expect(gr, OP_CONV2D_BACKPROP_FILTER, in2, 2, &cp, &wt,
                "filter [3,3,2,2] does not connect input [1,5,5,2] to gradient [1,2,2,2] (depthwise)");
    cp.i[TCRT_CONV_DEPTHWISE] = 0;
    cp.i[TCRT_CONV_ACT] = TCRT_ACT_RELU;
    emit_expect(gr, OP_CONV2D_BACKPROP_FILTER, in2, 2, &cp, &wt,
                "conv2d_backprop_filter takes no activation or packed filter");
    /* scatter_add: updates [3,4], indices [3] -> [S,4] */
    IrValue sin[2] = {u, idx};
    IrType ot = {TCRT_F32, ir_shape_make(2, TB_DIMS(7, 4))};
    emit_expect(gr, OP_SCATTER_ADD, sin, 2, NULL, &ot, NULL);
    ot.shape = ir_shape_make(2, TB_DIMS(7, 5));
    emit_expect(gr, OP_SCATTER_ADD, sin, 2, NULL, &ot,
                "scatter_add updates [3,4] do not match indices [3] and output [7,5]");
    IrValue bin[2] = {b, idx};
    ot = (IrType){TCRT_BOOL, ir_shape_make(2, TB_DIMS(7, 4))};
    emit_expect(gr, OP_SCATTER_ADD, bin, 2, NULL, &ot,
                "scatter_add supports f32, f64, i32 and i64, got bool");
    IrValue uin[2] = {u, u};
    ot = (IrType){TCRT_F32, ir_shape_make(2, TB_DIMS(7, 4))};
    emit_expect(gr, OP_SCATTER_ADD, uin, 2, NULL, &ot, "indices must be int32 or int64, got float32");
}
END_TEST

/* ---- end to end: a TF-built gradient against finite differences ---- */

static void write_npy(const char *path, tcrt_dtype dt, int rank, const int64_t *dims, void *data)
{
    tcrt_tensor t = {.data = data, .dtype = dt, .rank = rank};
    for (int d = 0; d < rank; d++)
        t.dims[d] = dims[d];
    char err[256];
    ck_assert_msg(tcrt_npy_write(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
}

/* Runs the compiled model on features x; returns the loss and (when g is
 * not NULL) copies the input gradient into g. */
static float run_model(const char *dir, const float *x, float *g)
{
    char path[600], cmd[2400];
    snprintf(path, sizeof path, "%s/feat.npy", dir);
    write_npy(path, TCRT_F32, 4, TB_DIMS(2, 28, 28, 1), (void *)x);
    snprintf(cmd, sizeof cmd,
             "'%s/mc' --feed Features='%s/feat.npy' --feed Label='%s/lab.npy' --out-dir '%s' > /dev/null",
             dir, dir, dir, dir);
    ck_assert_int_eq(system(cmd), 0);
    tcrt_tensor t;
    char err[256];
    snprintf(path, sizeof path, "%s/Loss.npy", dir);
    ck_assert_msg(tcrt_npy_read(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(t.dtype, TCRT_F32);
    float loss = *(float *)t.data;
    free(t.data);
    if (g) {
        snprintf(path, sizeof path, "%s/gradients_Conv2D_grad_Conv2DBackpropInput.npy", dir);
        ck_assert_msg(tcrt_npy_read(path, &t, err, sizeof err) == TCRT_OK, "%s", err);
        ck_assert_int_eq(tcrt_tensor_count(&t), 2 * 784);
        memcpy(g, t.data, sizeof(float) * 2 * 784);
        free(t.data);
    }
    return loss;
}

/* mnist_conv_model (ML.NET test data, TF 1.9): three convolutions, dense
 * layers, dropout and SparseSoftmaxCrossEntropyWithLogits; TF's gradient
 * graph (SparseSoftmaxCrossEntropyWithLogits' backprop, BroadcastGradientArgs,
 * ReluGrad, ShapeN, Conv2DBackpropInput, ...) gives dLoss/dFeatures.  For the
 * six largest components, (L(x + h e_i) - L(x - h e_i)) / 2h of the compiled
 * forward loss must agree.  Loss ~12 in float32 (ulp ~1e-6) and h = 1e-4
 * bound the difference quotient's rounding error by ~1e-2; with curvature
 * (ReLU kinks are far from these inputs) 0.05 absolute on gradients of size
 * ~7 (0.7%) is the tolerance. */
START_TEST(test_mnist_conv_gradient_fd)
{
    char model[512];
    snprintf(model, sizeof model, "%s/github-mlnet-testdata/mnist_conv_model/saved_model.pb",
             models_dir ? models_dir : "");
    struct stat sb;
    if (!models_dir || stat(model, &sb) != 0) {
        printf("note: %s absent, mnist_conv gradient check skipped\n", model);
        return;
    }
    char dir[] = "/tmp/tfcc_grad_XXXXXX", exe[600], path[600];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(exe, sizeof exe, "%s/mc", dir);
    Result r = tfcc("compile", model, "--feed", "Features:2x28x28x1", "--feed", "Label:0:2", "--fetch",
                    "Loss", "--fetch", "gradients/Conv2D_grad/Conv2DBackpropInput", "-o", exe, NULL);
    ck_assert_msg(r.rc == 0, "compile failed: %s", r.err);
    result_free(&r);
    int64_t lab[2] = {3, 7};
    snprintf(path, sizeof path, "%s/lab.npy", dir);
    write_npy(path, TCRT_I64, 1, TB_DIMS(2), lab);
    static float x[2 * 784], g[2 * 784];
    uint32_t seed = 12345;
    for (int i = 0; i < 2 * 784; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / (float)(1u << 24) * 0.01f;
    }
    run_model(dir, x, g);
    bool used[2 * 784] = {false};
    const float h = 1e-4f;
    for (int k = 0; k < 6; k++) {
        int best = -1;
        for (int i = 0; i < 2 * 784; i++)
            if (!used[i] && (best < 0 || fabsf(g[i]) > fabsf(g[best])))
                best = i;
        used[best] = true;
        float x0 = x[best];
        x[best] = x0 + h;
        float lp = run_model(dir, x, NULL);
        x[best] = x0 - h;
        float lm = run_model(dir, x, NULL);
        x[best] = x0;
        double fd = ((double)lp - (double)lm) / (2.0 * (double)h);
        ck_assert_msg(fabs(g[best]) > 0.5, "gradient [%d] = %g is too small to check", best, g[best]);
        ck_assert_msg(fabs(fd - g[best]) <= 0.05, "dLoss/dx[%d]: graph %.6g, difference quotient %.6g", best,
                      g[best], fd);
    }
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(path), 0);
}
END_TEST

static Suite *grad_suite(void)
{
    Suite *s = suite_create("tf_grad_ops");
    TCase *tc = tcase_create("grad");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_activation_grads);
    tcase_add_test(tc, test_bias_add_grad);
    tcase_add_test(tc, test_conv2d_backprop_filter);
    tcase_add_test(tc, test_depthwise_backprop);
    tcase_add_test(tc, test_pool_grads);
    tcase_add_test(tc, test_batch_norm_grad_training);
    tcase_add_test(tc, test_batch_norm_grad_inference);
    tcase_add_test(tc, test_softmax_xent);
    tcase_add_test(tc, test_sparse_softmax_xent);
    tcase_add_test(tc, test_broadcast_gradient_args);
    tcase_add_test(tc, test_concat_offset);
    tcase_add_test(tc, test_unsorted_segment_sum);
    tcase_add_test(tc, test_scatter_nd);
    tcase_add_test(tc, test_strided_slice_grad);
    tcase_add_test(tc, test_dynamic_stitch);
    tcase_add_test(tc, test_grad_errors);
    tcase_add_test(tc, test_grad_shape_rules);
    suite_add_tcase(s, tc);
    TCase *e2e = tcase_create("e2e");
    tcase_set_timeout(e2e, 120);
    tcase_add_test(e2e, test_mnist_conv_gradient_fd);
    suite_add_tcase(s, e2e);
    return s;
}

int main(int argc, char **argv)
{
    models_dir = argc > 1 ? argv[1] : NULL;
    SRunner *sr = srunner_create(grad_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
