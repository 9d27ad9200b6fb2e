/* tests/tf/test_nn.c - Check suite for compiler/tf/tf_ops_nn.c.
 *
 * Each test builds a small GraphDef whose inputs are all Const, imports it
 * (fold_on_build folds every lowered node through the runtime's reference
 * kernels) and compares the fetched constant with values derived by hand in
 * the comment beside them (or, for exp-based ops, computed with libm here).
 * A few tests feed a Placeholder to check the structure of what is emitted
 * (fused bias/activation parameters on the contraction node).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>

#include "tf_build.h"

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

static void import_feeds(Tb *b, const TfFeedSpec *feeds, int n_feeds, const char *fetch)
{
    const char *fetches[1] = {fetch};
    TfImportOptions o = {NULL, feeds, n_feeds, fetches, 1, NULL, 0, NULL, NULL, false};
    gr = tf_import(&b->gd, &o, &st);
    ck_assert_msg(gr != NULL, "import failed: %s", st.msg);
}

static void import_ok(Tb *b, const char *fetch)
{
    import_feeds(b, NULL, 0, fetch);
}

static void import_err(Tb *b, const char *fetch, const char *want)
{
    const char *fetches[1] = {fetch};
    TfImportOptions o = {NULL, NULL, 0, fetches, 1, NULL, 0, NULL, NULL, false};
    gr = tf_import(&b->gd, &o, &st);
    ck_assert_ptr_null(gr);
    ck_assert_msg(strstr(st.msg, want) != NULL, "got: %s\nwant: %s", st.msg, want);
}

static const IrNode *fetched_const(tcrt_dtype dt, int rank, const int64_t *dims)
{
    const IrNode *n = gr->fetches[0].value.node;
    ck_assert_msg(n->op == OP_CONST, "fetch is %s, not const", ir_op_name(n->op));
    const IrType *t = ir_value_type(gr->fetches[0].value);
    ck_assert_int_eq(t->dtype, dt);
    ck_assert_int_eq(t->shape.rank, rank);
    for (int d = 0; d < rank; d++)
        ck_assert_int_eq(t->shape.dims[d], dims[d]);
    return n;
}

static void expect_f32_tol(int rank, const int64_t *dims, const float *want, float tol)
{
    const IrNode *n = fetched_const(TCRT_F32, rank, dims);
    int64_t cnt = 1;
    for (int d = 0; d < rank; d++)
        cnt *= dims[d];
    const float *got = n->data;
    for (int64_t j = 0; j < cnt; j++)
        ck_assert_msg(fabsf(got[j] - want[j]) <= tol, "element %lld: got %.7g want %.7g", (long long)j,
                      got[j], want[j]);
}

static void expect_f32(int rank, const int64_t *dims, const float *want)
{
    expect_f32_tol(rank, dims, want, 1e-5f);
}

/* 1x4x4x1 ramp 1..16, row-major:
 *    1  2  3  4
 *    5  6  7  8
 *    9 10 11 12
 *   13 14 15 16 */
static void ramp4(Tb *b)
{
    tb_const_f(b, "x", 4, TB_DIMS(1, 4, 4, 1), 16,
               TB_F(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));
}

static Tensorflow__NodeDef *conv(Tb *b, const char *op, const char *padding, int64_t s, const char *w)
{
    Tensorflow__NodeDef *c = tb_node(b, "conv", op, "x", w, NULL);
    tb_attr_type(c, "T", 1);
    tb_attr_s(c, "padding", padding);
    tb_attr_ints(c, "strides", 4, TB_DIMS(1, s, s, 1));
    return c;
}

/* ---- convolutions ---- */

/* 2x2 ones kernel, stride 2, SAME on 4x4: out = 2, total pad =
 * max((2-1)*2 + 2 - 4, 0) = 0, so the windows are the four 2x2 blocks:
 * 1+2+5+6 = 14, 3+4+7+8 = 22, 9+10+13+14 = 46, 11+12+15+16 = 54.
 * No dilations/data_format attrs: the registry defaults apply. */
START_TEST(test_conv2d_same_stride2)
{
    Tb *b = tb_new();
    ramp4(b);
    tb_const_f(b, "w", 4, TB_DIMS(2, 2, 1, 1), 1, TB_F(1));
    conv(b, "Conv2D", "SAME", 2, "w");
    import_ok(b, "conv");
    expect_f32(4, TB_DIMS(1, 2, 2, 1), TB_F(14, 22, 46, 54));
}
END_TEST

/* 3x3 ones kernel, stride 2, SAME on 4x4: out = 2, total = (2-1)*2+3-4 = 1,
 * top/left = 0, bottom/right = 1.  Windows (rows, cols):
 *   (0-2, 0-2): 1+2+3+5+6+7+9+10+11 = 54
 *   (0-2, 2-3): 3+4+7+8+11+12       = 45
 *   (2-3, 0-2): 9+10+11+13+14+15    = 72
 *   (2-3, 2-3): 11+12+15+16         = 54 */
START_TEST(test_conv2d_same_pad_bottom_right)
{
    Tb *b = tb_new();
    ramp4(b);
    tb_const_f(b, "w", 4, TB_DIMS(3, 3, 1, 1), 1, TB_F(1));
    conv(b, "Conv2D", "SAME", 2, "w");
    import_ok(b, "conv");
    expect_f32(4, TB_DIMS(1, 2, 2, 1), TB_F(54, 45, 72, 54));
}
END_TEST

/* EXPLICIT padding: 1 row on top only, 2x2 ones, stride 2, VALID otherwise:
 * padded rows: 0,r0,r1,r2,r3 (5 rows) -> out rows 2 (rows {pad,r0}, {r1,r2}),
 * cols 2: {pad+1+2=3, 3+4=7}, {5+6+9+10=30, 7+8+11+12=38}. */
START_TEST(test_conv2d_explicit)
{
    Tb *b = tb_new();
    ramp4(b);
    tb_const_f(b, "w", 4, TB_DIMS(2, 2, 1, 1), 1, TB_F(1));
    Tensorflow__NodeDef *c = conv(b, "Conv2D", "EXPLICIT", 2, "w");
    tb_attr_ints(c, "explicit_paddings", 8, TB_DIMS(0, 0, 1, 0, 0, 0, 0, 0));
    import_ok(b, "conv");
    expect_f32(4, TB_DIMS(1, 2, 2, 1), TB_F(3, 7, 30, 38));
}
END_TEST

/* NCHW: x [1,2,1,1] = channels {1, 2}; 1x1 filter [1,1,2,1] = {3, 4}:
 * 1*3 + 2*4 = 11; output NCHW [1,1,1,1]. */
START_TEST(test_conv2d_nchw)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 1, 1), 2, TB_F(1, 2));
    tb_const_f(b, "w", 4, TB_DIMS(1, 1, 2, 1), 2, TB_F(3, 4));
    Tensorflow__NodeDef *c = tb_node(b, "conv", "Conv2D", "x", "w", NULL);
    tb_attr_s(c, "padding", "VALID");
    tb_attr_s(c, "data_format", "NCHW");
    tb_attr_ints(c, "strides", 4, TB_DIMS(1, 1, 1, 1));
    import_ok(b, "conv");
    expect_f32(4, TB_DIMS(1, 1, 1, 1), TB_F(11));
}
END_TEST

/* Depthwise, multiplier 2: x 1x2x2x1 = {1,2,3,4}; filter [2,2,1,2] with
 * m0 = ones and m1 = {1,0,0,-1} (filter element order h,w,c,m):
 *   m0: 1+2+3+4 = 10,  m1: 1 - 4 = -3. */
START_TEST(test_depthwise_multiplier2)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(1, 2, 3, 4));
    tb_const_f(b, "w", 4, TB_DIMS(2, 2, 1, 2), 8, TB_F(1, 1, 1, 0, 1, 0, 1, -1));
    conv(b, "DepthwiseConv2dNative", "VALID", 1, "w");
    import_ok(b, "conv");
    expect_f32(4, TB_DIMS(1, 1, 1, 2), TB_F(10, -3));
}
END_TEST

/* Depthwise with two channels, multiplier 2, 1x1: x {3, 5};
 * filter [1,1,2,2] = {1,2, 10,20}: out channel c*2+m = {3, 6, 50, 100}. */
START_TEST(test_depthwise_channels)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 1, 1, 2), 2, TB_F(3, 5));
    tb_const_f(b, "w", 4, TB_DIMS(1, 1, 2, 2), 4, TB_F(1, 2, 10, 20));
    conv(b, "DepthwiseConv2dNative", "SAME", 1, "w");
    import_ok(b, "conv");
    expect_f32(4, TB_DIMS(1, 1, 1, 4), TB_F(3, 6, 50, 100));
}
END_TEST

/* _FusedConv2D BiasAdd + Relu6, 1x1 kernel {2}, bias {-3}, x {1,2,3,5}:
 * 2x - 3 = {-1, 1, 3, 7} -> relu6 -> {0, 1, 3, 6}. */
START_TEST(test_fused_conv_bias_relu6)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(1, 2, 3, 5));
    tb_const_f(b, "w", 4, TB_DIMS(1, 1, 1, 1), 1, TB_F(2));
    tb_const_f(b, "bias", 1, TB_DIMS(1), 1, TB_F(-3));
    Tensorflow__NodeDef *c = tb_node(b, "conv", "_FusedConv2D", "x", "w", "bias", NULL);
    tb_attr_s(c, "padding", "VALID");
    tb_attr_ints(c, "strides", 4, TB_DIMS(1, 1, 1, 1));
    tb_attr_strs(c, "fused_ops", 2, (const char *[]){"BiasAdd", "Relu6"});
    tb_attr_i(c, "num_args", 1);
    import_ok(b, "conv");
    expect_f32(4, TB_DIMS(1, 2, 2, 1), TB_F(0, 1, 3, 6));
}
END_TEST

/* Structure: with a fed input, bias and relu6 ride on the conv2d node. */
START_TEST(test_fused_conv_structure)
{
    Tb *b = tb_new();
    tb_placeholder(b, "x", 1, 4, TB_DIMS(1, 2, 2, 1));
    tb_const_f(b, "w", 4, TB_DIMS(1, 1, 1, 1), 1, TB_F(2));
    tb_const_f(b, "bias", 1, TB_DIMS(1), 1, TB_F(-3));
    Tensorflow__NodeDef *c = tb_node(b, "conv", "_FusedConv2D", "x", "w", "bias", NULL);
    tb_attr_s(c, "padding", "VALID");
    tb_attr_ints(c, "strides", 4, TB_DIMS(1, 1, 1, 1));
    tb_attr_strs(c, "fused_ops", 2, (const char *[]){"BiasAdd", "LeakyRelu"});
    tb_attr_f(c, "leakyrelu_alpha", 0.25f);
    TfFeedSpec f = {"x", false, {0, {0}}, TCRT_INVALID, NULL};
    import_feeds(b, &f, 1, "conv");
    const IrNode *n = gr->fetches[0].value.node;
    ck_assert_int_eq(n->op, OP_CONV2D);
    ck_assert_int_eq(n->n_inputs, 3);
    ck_assert_int_eq(n->p.i[TCRT_CONV_ACT], TCRT_ACT_LEAKY);
    ck_assert(fabs(n->p.f[0] - 0.25) < 1e-7);
    ck_assert_int_eq(n->p.i[TCRT_CONV_DEPTHWISE], 0);
}
END_TEST

/* _FusedConv2D with FusedBatchNorm + Relu, 1x1 kernel {1}, x {-1, 0, 1, 2}:
 * scale 2, offset 1, mean 1, variance 3, epsilon 1: s = 2/sqrt(4) = 1,
 * y = (x - 1) * 1 + 1 = x -> relu -> {0, 0, 1, 2}. */
START_TEST(test_fused_conv_batchnorm_relu)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(-1, 0, 1, 2));
    tb_const_f(b, "w", 4, TB_DIMS(1, 1, 1, 1), 1, TB_F(1));
    tb_const_f(b, "scale", 1, TB_DIMS(1), 1, TB_F(2));
    tb_const_f(b, "offset", 1, TB_DIMS(1), 1, TB_F(1));
    tb_const_f(b, "mean", 1, TB_DIMS(1), 1, TB_F(1));
    tb_const_f(b, "var", 1, TB_DIMS(1), 1, TB_F(3));
    Tensorflow__NodeDef *c =
        tb_node(b, "conv", "_FusedConv2D", "x", "w", "scale", "offset", "mean", "var", NULL);
    tb_attr_s(c, "padding", "SAME");
    tb_attr_ints(c, "strides", 4, TB_DIMS(1, 1, 1, 1));
    tb_attr_strs(c, "fused_ops", 2, (const char *[]){"FusedBatchNorm", "Relu"});
    tb_attr_i(c, "num_args", 4);
    tb_attr_f(c, "epsilon", 1.0f);
    import_ok(b, "conv");
    expect_f32(4, TB_DIMS(1, 2, 2, 1), TB_F(0, 0, 1, 2));
}
END_TEST

START_TEST(test_fused_conv_bad_ops)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 1), 1, TB_F(1));
    tb_const_f(b, "w", 4, TB_DIMS(1, 1, 1, 1), 1, TB_F(1));
    tb_const_f(b, "bias", 1, TB_DIMS(1), 1, TB_F(0));
    Tensorflow__NodeDef *c = tb_node(b, "conv", "_FusedConv2D", "x", "w", "bias", NULL);
    tb_attr_s(c, "padding", "VALID");
    tb_attr_ints(c, "strides", 4, TB_DIMS(1, 1, 1, 1));
    tb_attr_strs(c, "fused_ops", 2, (const char *[]){"BiasAdd", "Swish"});
    import_err(b, "conv", "node 'conv' (_FusedConv2D): unsupported fused_ops [\"BiasAdd\",\"Swish\"]");
}
END_TEST

/* Conv2DBackpropInput: dy 1x2x2x1 = {1,2,3,4}, 2x2 ones filter, stride 2,
 * VALID, input_sizes [1,4,4,1]: each dy value fills its own 2x2 block. */
START_TEST(test_conv2d_backprop_input)
{
    Tb *b = tb_new();
    tb_const_i32(b, "sizes", 1, TB_DIMS(4), 4, (const int32_t[]){1, 4, 4, 1});
    tb_const_f(b, "w", 4, TB_DIMS(2, 2, 1, 1), 1, TB_F(1));
    tb_const_f(b, "dy", 4, TB_DIMS(1, 2, 2, 1), 4, TB_F(1, 2, 3, 4));
    Tensorflow__NodeDef *c = tb_node(b, "dconv", "Conv2DBackpropInput", "sizes", "w", "dy", NULL);
    tb_attr_s(c, "padding", "VALID");
    tb_attr_ints(c, "strides", 4, TB_DIMS(1, 2, 2, 1));
    import_ok(b, "dconv");
    expect_f32(4, TB_DIMS(1, 4, 4, 1), TB_F(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4));
}
END_TEST

/* ---- matmul ---- */

/* a = [[1,2]], b = [[3,4],[5,6]] -> [[1*3+2*5, 1*4+2*6]] = [[13, 16]];
 * transpose_b with b^T given: same result. */
START_TEST(test_matmul)
{
    Tb *b = tb_new();
    tb_const_f(b, "a", 2, TB_DIMS(1, 2), 2, TB_F(1, 2));
    tb_const_f(b, "b", 2, TB_DIMS(2, 2), 4, TB_F(3, 5, 4, 6)); /* b^T */
    Tensorflow__NodeDef *m = tb_node(b, "mm", "MatMul", "a", "b", NULL);
    tb_attr_b(m, "transpose_b", true);
    import_ok(b, "mm");
    expect_f32(2, TB_DIMS(1, 2), TB_F(13, 16));
}
END_TEST

/* _FusedMatMul BiasAdd + Relu: [[13, 16]] + {-20, 1} = {-7, 17} -> {0, 17}. */
START_TEST(test_fused_matmul)
{
    Tb *b = tb_new();
    tb_const_f(b, "a", 2, TB_DIMS(1, 2), 2, TB_F(1, 2));
    tb_const_f(b, "b", 2, TB_DIMS(2, 2), 4, TB_F(3, 4, 5, 6));
    tb_const_f(b, "bias", 1, TB_DIMS(2), 2, TB_F(-20, 1));
    Tensorflow__NodeDef *m = tb_node(b, "mm", "_FusedMatMul", "a", "b", "bias", NULL);
    tb_attr_strs(m, "fused_ops", 2, (const char *[]){"BiasAdd", "Relu"});
    tb_attr_i(m, "num_args", 1);
    import_ok(b, "mm");
    expect_f32(2, TB_DIMS(1, 2), TB_F(0, 17));
}
END_TEST

/* BatchMatMulV2 adj_x: x [1,2,1] holds x^T of [[1,2]]; y [2,2] broadcasts:
 * same product [[13, 16]]. */
START_TEST(test_batch_matmul_adj)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 3, TB_DIMS(1, 2, 1), 2, TB_F(1, 2));
    tb_const_f(b, "y", 2, TB_DIMS(2, 2), 4, TB_F(3, 4, 5, 6));
    Tensorflow__NodeDef *m = tb_node(b, "bmm", "BatchMatMulV2", "x", "y", NULL);
    tb_attr_b(m, "adj_x", true);
    import_ok(b, "bmm");
    expect_f32(3, TB_DIMS(1, 1, 2), TB_F(13, 16));
}
END_TEST

/* ---- batch norm, bias ---- */

/* FusedBatchNorm inference, x 1x1x2x2 (two pixels, C = 2) = {1,2, 3,4};
 * scale {2,1}, offset {1,0}, mean {1,2}, variance {3,0}, epsilon 1:
 *   c0: (x-1) * 2/sqrt(4) + 1 = x       -> 1, 3
 *   c1: (x-2) * 1/sqrt(1) + 0 = x - 2   -> 0, 2 */
START_TEST(test_fused_batch_norm_inference)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 1, 2, 2), 4, TB_F(1, 2, 3, 4));
    tb_const_f(b, "scale", 1, TB_DIMS(2), 2, TB_F(2, 1));
    tb_const_f(b, "offset", 1, TB_DIMS(2), 2, TB_F(1, 0));
    tb_const_f(b, "mean", 1, TB_DIMS(2), 2, TB_F(1, 2));
    tb_const_f(b, "var", 1, TB_DIMS(2), 2, TB_F(3, 0));
    Tensorflow__NodeDef *n =
        tb_node(b, "bn", "FusedBatchNormV3", "x", "scale", "offset", "mean", "var", NULL);
    tb_attr_f(n, "epsilon", 1.0f);
    tb_attr_b(n, "is_training", false);
    import_ok(b, "bn");
    expect_f32(4, TB_DIMS(1, 1, 2, 2), TB_F(1, 0, 3, 2));
}
END_TEST

/* is_training defaults to true (TensorFlow's registry): batch moments.
 * x 1x1x2x1 = {1, 3}: mean 2, biased variance 1, epsilon 0 ->
 * y = (x - 2) / 1 = {-1, 1}; the variance output is Bessel-corrected: 2. */
START_TEST(test_fused_batch_norm_training)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 1, 2, 1), 2, TB_F(1, 3));
    tb_const_f(b, "scale", 1, TB_DIMS(1), 1, TB_F(1));
    tb_const_f(b, "offset", 1, TB_DIMS(1), 1, TB_F(0));
    tb_const_f(b, "empty", 1, TB_DIMS(0), 0, NULL);
    Tensorflow__NodeDef *n =
        tb_node(b, "bn", "FusedBatchNorm", "x", "scale", "offset", "empty", "empty", NULL);
    tb_attr_f(n, "epsilon", 0.0f);
    import_ok(b, "bn");
    expect_f32(4, TB_DIMS(1, 1, 2, 1), TB_F(-1, 1));
    ir_graph_free(gr);
    gr = NULL;
    import_ok(b, "bn:2");
    expect_f32(1, TB_DIMS(1), TB_F(2));
}
END_TEST

/* BiasAdd NCHW: x [1,2,1,2] = {1,2 | 3,4}, bias {10, 20} -> {11,12, 23,24}. */
START_TEST(test_bias_add_nchw)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 1, 2), 4, TB_F(1, 2, 3, 4));
    tb_const_f(b, "bias", 1, TB_DIMS(2), 2, TB_F(10, 20));
    Tensorflow__NodeDef *n = tb_node(b, "y", "BiasAdd", "x", "bias", NULL);
    tb_attr_s(n, "data_format", "NCHW");
    import_ok(b, "y");
    expect_f32(4, TB_DIMS(1, 2, 1, 2), TB_F(11, 12, 23, 24));
}
END_TEST

/* ---- pooling ---- */

/* AvgPool 2x2 stride 1 SAME on the 3x3 ramp 1..9: total pad 1 at the
 * bottom/right; padding is not counted:
 *   (1+2+4+5)/4 = 3   (2+3+5+6)/4 = 4   (3+6)/2 = 4.5
 *   (4+5+7+8)/4 = 6   (5+6+8+9)/4 = 7   (6+9)/2 = 7.5
 *   (7+8)/2 = 7.5     (8+9)/2 = 8.5     9/1 = 9 */
START_TEST(test_avgpool_same_counts)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 3, 3, 1), 9, TB_F(1, 2, 3, 4, 5, 6, 7, 8, 9));
    Tensorflow__NodeDef *p = tb_node(b, "pool", "AvgPool", "x", NULL);
    tb_attr_s(p, "padding", "SAME");
    tb_attr_ints(p, "ksize", 4, TB_DIMS(1, 2, 2, 1));
    tb_attr_ints(p, "strides", 4, TB_DIMS(1, 1, 1, 1));
    import_ok(b, "pool");
    expect_f32(4, TB_DIMS(1, 3, 3, 1), TB_F(3, 4, 4.5f, 6, 7, 7.5f, 7.5f, 8.5f, 9));
}
END_TEST

/* MaxPool 2x2 stride 2 VALID on the 4x4 ramp: block maxima 6, 8, 14, 16. */
START_TEST(test_maxpool_valid)
{
    Tb *b = tb_new();
    ramp4(b);
    Tensorflow__NodeDef *p = tb_node(b, "pool", "MaxPool", "x", NULL);
    tb_attr_s(p, "padding", "VALID");
    tb_attr_ints(p, "ksize", 4, TB_DIMS(1, 2, 2, 1));
    tb_attr_ints(p, "strides", 4, TB_DIMS(1, 2, 2, 1));
    import_ok(b, "pool");
    expect_f32(4, TB_DIMS(1, 2, 2, 1), TB_F(6, 8, 14, 16));
}
END_TEST

/* ---- softmax ---- */

START_TEST(test_softmax)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 2, TB_DIMS(1, 3), 3, TB_F(1, 2, 3));
    tb_node(b, "sm", "Softmax", "x", NULL);
    import_ok(b, "sm");
    double s = exp(1.0) + exp(2.0) + exp(3.0);
    float want[3] = {(float)(exp(1.0) / s), (float)(exp(2.0) / s), (float)(exp(3.0) / s)};
    expect_f32_tol(2, TB_DIMS(1, 3), want, 1e-6f);
}
END_TEST

START_TEST(test_log_softmax)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 1, TB_DIMS(3), 3, TB_F(1, 2, 3));
    tb_node(b, "ls", "LogSoftmax", "x", NULL);
    import_ok(b, "ls");
    double l = log(exp(1.0) + exp(2.0) + exp(3.0));
    float want[3] = {(float)(1 - l), (float)(2 - l), (float)(3 - l)};
    expect_f32_tol(1, TB_DIMS(3), want, 1e-5f);
}
END_TEST

/* ---- activations and elementwise ---- */

static void unary_case(const char *op, int n, const float *x, const float *want, float tol)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 1, TB_DIMS(n), n, x);
    tb_node(b, "y", op, "x", NULL);
    import_ok(b, "y");
    expect_f32_tol(1, TB_DIMS(n), want, tol);
    ir_graph_free(gr);
    gr = NULL;
}

START_TEST(test_activations)
{
    const float x[4] = {-2, -0.5f, 0.5f, 8};
    unary_case("Relu", 4, x, TB_F(0, 0, 0.5f, 8), 0);
    unary_case("Relu6", 4, x, TB_F(0, 0, 0.5f, 6), 0);
    float elu[4] = {(float)expm1(-2.0), (float)expm1(-0.5), 0.5f, 8};
    unary_case("Elu", 4, x, elu, 1e-6f);
    const double sa = 1.6732632423543772848170429916717, ss = 1.0507009873554804934193349852946;
    float selu[4] = {(float)(ss * sa * expm1(-2.0)), (float)(ss * sa * expm1(-0.5)), (float)(ss * 0.5),
                     (float)(ss * 8)};
    unary_case("Selu", 4, x, selu, 1e-5f);
    /* LeakyRelu default alpha 0.2: -0.4, -0.1 */
    unary_case("LeakyRelu", 4, x, TB_F(-0.4f, -0.1f, 0.5f, 8), 1e-7f);
    float sp[4], sg[4], th[4];
    for (int i = 0; i < 4; i++) {
        sp[i] = (float)log1p(exp((double)x[i]));
        sg[i] = (float)(1 / (1 + exp(-(double)x[i])));
        th[i] = (float)tanh((double)x[i]);
    }
    unary_case("Softplus", 4, x, sp, 1e-6f);
    unary_case("Sigmoid", 4, x, sg, 1e-6f);
    unary_case("Tanh", 4, x, th, 1e-6f);
    unary_case("Neg", 4, x, TB_F(2, 0.5f, -0.5f, -8), 0);
    unary_case("Abs", 4, x, TB_F(2, 0.5f, 0.5f, 8), 0);
    unary_case("Sign", 4, x, TB_F(-1, -1, 1, 1), 0);
    unary_case("Square", 4, x, TB_F(4, 0.25f, 0.25f, 64), 0);
    unary_case("Reciprocal", 4, x, TB_F(-0.5f, -2, 2, 0.125f), 1e-7f);
    /* Round is half to even: -2, -0 (-0.5), 0 (0.5), 8 */
    unary_case("Round", 4, x, TB_F(-2, 0, 0, 8), 0);
    unary_case("Floor", 4, x, TB_F(-2, -1, 0, 8), 0);
    unary_case("Ceil", 4, x, TB_F(-2, 0, 1, 8), 0);
}
END_TEST

START_TEST(test_prelu)
{
    /* max(x,0) + alpha*min(x,0), alpha per channel {0.5, 2}:
     * x {-2, 3, 4, -1} (two pixels x two channels) -> {-1, 3, 4, -2} */
    Tb *b = tb_new();
    tb_const_f(b, "x", 2, TB_DIMS(2, 2), 4, TB_F(-2, 3, 4, -1));
    tb_const_f(b, "alpha", 1, TB_DIMS(2), 2, TB_F(0.5f, 2));
    tb_node(b, "y", "Prelu", "x", "alpha", NULL);
    import_ok(b, "y");
    expect_f32(2, TB_DIMS(2, 2), TB_F(-1, 3, 4, -2));
}
END_TEST

static void binary_case(const char *op, const float *x, const float *y, const float *want)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 1, TB_DIMS(4), 4, x);
    tb_const_f(b, "y", 1, TB_DIMS(4), 4, y);
    tb_node(b, "z", op, "x", "y", NULL);
    import_ok(b, "z");
    expect_f32(1, TB_DIMS(4), want);
    ir_graph_free(gr);
    gr = NULL;
}

START_TEST(test_binary_math)
{
    const float x[4] = {-7, 7, 6, 1}, y[4] = {3, -3, 0, 4};
    binary_case("AddV2", x, y, TB_F(-4, 4, 6, 5));
    binary_case("Sub", x, y, TB_F(-10, 10, 6, -3));
    binary_case("Maximum", x, y, TB_F(3, 7, 6, 4));
    binary_case("SquaredDifference", x, y, TB_F(100, 100, 36, 9));
    /* DivNoNan: -7/3, 7/-3, 6/0 -> 0, 1/4 */
    binary_case("DivNoNan", x, y, TB_F(-7.f / 3, -7.f / 3, 0, 0.25f));
    /* FloorMod takes y's sign: -7 mod 3 = 2, 7 mod -3 = -2; Mod takes x's: -1, 1 */
    const float y2[4] = {3, -3, 4, 4};
    binary_case("FloorMod", x, y2, TB_F(2, -2, 2, 1));
    /* FloorDiv: floor(-7/3) = -3, floor(7/-3) = -3, floor(6/4) = 1, floor(1/4) = 0 */
    binary_case("Mod", x, y2, TB_F(-1, 1, 2, 1));
    binary_case("FloorDiv", x, y2, TB_F(-3, -3, 1, 0));
}
END_TEST

/* AddN of three [2] vectors: {1,2} + {10,20} + {100,200} = {111, 222}. */
START_TEST(test_addn)
{
    Tb *b = tb_new();
    tb_const_f(b, "a", 1, TB_DIMS(2), 2, TB_F(1, 2));
    tb_const_f(b, "b", 1, TB_DIMS(2), 2, TB_F(10, 20));
    tb_const_f(b, "c", 1, TB_DIMS(2), 2, TB_F(100, 200));
    tb_node(b, "s", "AddN", "a", "b", "c", NULL);
    import_ok(b, "s");
    expect_f32(1, TB_DIMS(2), TB_F(111, 222));
}
END_TEST

/* Select with a rank-1 condition picks rows: cond {true, false},
 * x [[1,2],[3,4]], y [[5,6],[7,8]] -> [[1,2],[7,8]]. */
START_TEST(test_select_rows)
{
    Tb *b = tb_new();
    Tensorflow__TensorProto *c = tb_const(b, "c", 10, 1, TB_DIMS(2));
    static protobuf_c_boolean cv[2] = {1, 0};
    c->n_bool_val = 2;
    c->bool_val = cv;
    tb_const_f(b, "x", 2, TB_DIMS(2, 2), 4, TB_F(1, 2, 3, 4));
    tb_const_f(b, "y", 2, TB_DIMS(2, 2), 4, TB_F(5, 6, 7, 8));
    tb_node(b, "s", "Select", "c", "x", "y", NULL);
    import_ok(b, "s");
    expect_f32(2, TB_DIMS(2, 2), TB_F(1, 2, 7, 8));
}
END_TEST

/* Cast float -> int32 truncates: {2.7, -2.7} -> {2, -2}; Greater gives bools. */
START_TEST(test_cast_and_compare)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 1, TB_DIMS(2), 2, TB_F(2.7f, -2.7f));
    Tensorflow__NodeDef *c = tb_node(b, "c", "Cast", "x", NULL);
    tb_attr_type(c, "SrcT", 1);
    tb_attr_type(c, "DstT", 3);
    import_ok(b, "c");
    const int32_t *v = fetched_const(TCRT_I32, 1, TB_DIMS(2))->data;
    ck_assert_int_eq(v[0], 2);
    ck_assert_int_eq(v[1], -2);
    ir_graph_free(gr);
    gr = NULL;
    tb_const_f(b, "z", 0, NULL, 1, TB_F(0));
    tb_node(b, "gt", "Greater", "x", "z", NULL);
    import_ok(b, "gt");
    const uint8_t *g = fetched_const(TCRT_BOOL, 1, TB_DIMS(2))->data;
    ck_assert(g[0] == 1 && g[1] == 0);
}
END_TEST

/* RandomUniform is never folded: it stays a node of the given shape. */
START_TEST(test_random_uniform)
{
    Tb *b = tb_new();
    tb_const_i32(b, "shape", 1, TB_DIMS(2), 2, (const int32_t[]){2, 3});
    Tensorflow__NodeDef *r = tb_node(b, "r", "RandomUniform", "shape", NULL);
    tb_attr_type(r, "dtype", 1);
    tb_attr_i(r, "seed", 7);
    import_ok(b, "r");
    const IrNode *n = gr->fetches[0].value.node;
    ck_assert_int_eq(n->op, OP_RANDOM_UNIFORM);
    ck_assert_int_eq(n->p.i[TCRT_RND_SEED], 7);
    ck_assert_int_eq(n->out[0].type.shape.rank, 2);
    ck_assert_int_eq(n->out[0].type.shape.dims[1], 3);
}
END_TEST

/* IsNan / IsInf / IsFinite on {1, nan, inf, -inf}. */
START_TEST(test_is_nan_inf_finite)
{
    const char *ops[3] = {"IsNan", "IsInf", "IsFinite"};
    const uint8_t want[3][4] = {{0, 1, 0, 0}, {0, 0, 1, 1}, {1, 0, 0, 0}};
    for (int k = 0; k < 3; k++) {
        Tb *b = tb_new();
        tb_const_f(b, "x", 1, TB_DIMS(4), 4, TB_F(1, NAN, INFINITY, -INFINITY));
        tb_node(b, "y", ops[k], "x", NULL);
        import_ok(b, "y");
        const uint8_t *v = fetched_const(TCRT_BOOL, 1, TB_DIMS(4))->data;
        for (int i = 0; i < 4; i++)
            ck_assert_msg(v[i] == want[k][i], "%s[%d] = %d", ops[k], i, v[i]);
        ir_graph_free(gr);
        gr = NULL;
    }
}
END_TEST

/* L2Loss of [[1,2],[3,4]]: (1+4+9+16)/2 = 15, a scalar.
 * ClipByValue({-5, 0.5, 5}, -1, 1) = {-1, 0.5, 1}. */
START_TEST(test_l2loss_clip)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 2, TB_DIMS(2, 2), 4, TB_F(1, 2, 3, 4));
    tb_node(b, "l2", "L2Loss", "x", NULL);
    import_ok(b, "l2");
    expect_f32(0, NULL, TB_F(15));
    ir_graph_free(gr);
    gr = NULL;
    tb_const_f(b, "v", 1, TB_DIMS(3), 3, TB_F(-5, 0.5f, 5));
    tb_const_f(b, "lo", 0, NULL, 1, TB_F(-1));
    tb_const_f(b, "hi", 0, NULL, 1, TB_F(1));
    tb_node(b, "clip", "ClipByValue", "v", "lo", "hi", NULL);
    import_ok(b, "clip");
    expect_f32(1, TB_DIMS(3), TB_F(-1, 0.5f, 1));
}
END_TEST

/* BatchNormWithGlobalNormalization, x [1,1,1,2] = {3, 5}, m {1, 1},
 * v {3, 0}, beta {0, 1}, gamma {2, 2}, eps 1, scale_after_normalization:
 *   (3-1)/sqrt(4)*2 + 0 = 2,   (5-1)/sqrt(1)*2 + 1 = 9 */
START_TEST(test_batch_norm_global)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 1, 1, 2), 2, TB_F(3, 5));
    tb_const_f(b, "m", 1, TB_DIMS(2), 1, TB_F(1));
    tb_const_f(b, "v", 1, TB_DIMS(2), 2, TB_F(3, 0));
    tb_const_f(b, "beta", 1, TB_DIMS(2), 2, TB_F(0, 1));
    tb_const_f(b, "gamma", 1, TB_DIMS(2), 1, TB_F(2));
    Tensorflow__NodeDef *n =
        tb_node(b, "bn", "BatchNormWithGlobalNormalization", "x", "m", "v", "beta", "gamma", NULL);
    tb_attr_f(n, "variance_epsilon", 1.0f);
    tb_attr_b(n, "scale_after_normalization", true);
    import_ok(b, "bn");
    expect_f32(4, TB_DIMS(1, 1, 1, 2), TB_F(2, 9));
}
END_TEST

START_TEST(test_nn_errors)
{
    Tb *b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 2), 1, TB_F(1));
    tb_const_f(b, "w", 4, TB_DIMS(1, 1, 1, 1), 1, TB_F(1));
    conv(b, "Conv2D", "VALID", 1, "w");
    import_err(b, "conv",
               "node 'conv' (Conv2D): filter expects 1 input channels but the input has 2 "
               "(grouped convolution is not supported)");
    ir_graph_free(gr);
    gr = NULL;
    st = (Status)ST_INIT;
    b = tb_new();
    tb_const_f(b, "x", 4, TB_DIMS(1, 2, 2, 1), 1, TB_F(1));
    Tensorflow__NodeDef *p = tb_node(b, "pool", "MaxPool", "x", NULL);
    tb_attr_s(p, "padding", "FULL");
    tb_attr_ints(p, "ksize", 4, TB_DIMS(1, 2, 2, 1));
    tb_attr_ints(p, "strides", 4, TB_DIMS(1, 1, 1, 1));
    import_err(b, "pool", "node 'pool' (MaxPool): unsupported padding 'FULL'");
}
END_TEST

static Suite *nn_suite(void)
{
    Suite *s = suite_create("tf_nn");
    TCase *tc = tcase_create("nn");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_conv2d_same_stride2);
    tcase_add_test(tc, test_conv2d_same_pad_bottom_right);
    tcase_add_test(tc, test_conv2d_explicit);
    tcase_add_test(tc, test_conv2d_nchw);
    tcase_add_test(tc, test_depthwise_multiplier2);
    tcase_add_test(tc, test_depthwise_channels);
    tcase_add_test(tc, test_fused_conv_bias_relu6);
    tcase_add_test(tc, test_fused_conv_structure);
    tcase_add_test(tc, test_fused_conv_batchnorm_relu);
    tcase_add_test(tc, test_fused_conv_bad_ops);
    tcase_add_test(tc, test_conv2d_backprop_input);
    tcase_add_test(tc, test_matmul);
    tcase_add_test(tc, test_fused_matmul);
    tcase_add_test(tc, test_batch_matmul_adj);
    tcase_add_test(tc, test_fused_batch_norm_inference);
    tcase_add_test(tc, test_fused_batch_norm_training);
    tcase_add_test(tc, test_bias_add_nchw);
    tcase_add_test(tc, test_avgpool_same_counts);
    tcase_add_test(tc, test_maxpool_valid);
    tcase_add_test(tc, test_softmax);
    tcase_add_test(tc, test_log_softmax);
    tcase_add_test(tc, test_activations);
    tcase_add_test(tc, test_prelu);
    tcase_add_test(tc, test_binary_math);
    tcase_add_test(tc, test_addn);
    tcase_add_test(tc, test_select_rows);
    tcase_add_test(tc, test_cast_and_compare);
    tcase_add_test(tc, test_random_uniform);
    tcase_add_test(tc, test_is_nan_inf_finite);
    tcase_add_test(tc, test_l2loss_clip);
    tcase_add_test(tc, test_batch_norm_global);
    tcase_add_test(tc, test_nn_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(nn_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
