/* tests/passes/test_rewrites.c - unit tests for the layout, fuse and pack
 * passes (Check suite "rewrites").
 *
 * Graphs are written as IR text (ir_parse), constants as hex of f32 data
 * made by a helper.  Structure is asserted (transposes left, conv inputs and
 * params); values of fused and packed convolutions are checked by running
 * the runtime's reference conv kernel on the rewritten node and comparing
 * with numbers derived by hand in the comments (1x2x2x1 input, 1x1 conv)
 * or, for packing, with the same kernel on the unpacked weights.  The
 * whole pipeline runs the passes inside COND branches and honours
 * --disable-pass for each of them.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

/* "hex:..." for n floats (little-endian bytes, as ir_print writes them). */
static const char *hexf(char *buf, const float *v, int n)
{
    const unsigned char *b = (const unsigned char *)v;
    char *p = buf + sprintf(buf, "hex:");
    for (int i = 0; i < n * 4; i++)
        p += sprintf(p, "%02x", b[i]);
    return buf;
}

static IrGraph *parse(const char *text)
{
    Status st = ST_INIT;
    IrGraph *g = ir_parse(text, "test.ir", &st);
    ck_assert_msg(g != NULL, "%s\n%s", st.msg, text);
    return g;
}

static PassResult run_pass(IrGraph *g, PassResult (*fn)(IrGraph *, PassCtx *))
{
    Status st = ST_INIT;
    PassCtx cx;
    arena_init(&cx.scratch, NULL);
    cx.st = &st;
    PassResult r = fn(g, &cx);
    arena_reset(&cx.scratch);
    ck_assert_msg(r != PASS_FAILED && st_ok(&st), "pass failed: %s", st.msg);
    Status vst = ST_INIT;
    ck_assert_msg(ir_verify(g, &vst), "verify: %s", vst.msg);
    return r;
}

static int count_op(const IrGraph *g, Op op)
{
    int c = 0;
    IR_FOR_EACH(g, n) {
        c += n->op == op;
    }
    return c;
}

static IrNode *find_op(const IrGraph *g, Op op)
{
    IR_FOR_EACH(g, n) {
        if (n->op == op)
            return n;
    }
    return NULL;
}

static IrNode *fetched(const IrGraph *g, int i)
{
    ck_assert_int_lt(i, g->n_fetches);
    return g->fetches[i].value.node;
}

static tcrt_tensor tensor_of(const IrType *t, void *data)
{
    tcrt_tensor x;
    memset(&x, 0, sizeof x);
    x.dtype = t->dtype;
    x.rank = t->shape.rank;
    for (int d = 0; d < t->shape.rank; d++)
        x.dims[d] = t->shape.dims[d];
    x.data = data;
    return x;
}

/* n's params as a kernel reads them. */
static tcrt_params params_of(const IrNode *n)
{
    tcrt_params p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < IR_MAX_IPARAM; i++)
        p.i[i] = n->p.i[i];
    for (int i = 0; i < IR_MAX_FPARAM; i++)
        p.f[i] = n->p.f[i];
    return p;
}

/* Runs conv node c with the reference kernel: input 0 is x_data, a
 * non-CONST input 3 is res_data, every other input its CONST data. */
static void run_conv(const IrNode *c, const float *x_data, const float *res_data, float *y)
{
    tcrt_tensor in[4], out;
    for (int k = 0; k < c->n_inputs; k++) {
        IrValue v = c->inputs[k];
        void *d = v.node->op == OP_CONST ? v.node->data : k == 0 ? (void *)x_data : (void *)res_data;
        in[k] = tensor_of(ir_value_type(v), d);
    }
    out = tensor_of(&c->out[0].type, y);
    tcrt_params p = params_of(c);
    ck_assert_int_eq(tcrt_ref_conv2d(in, c->n_inputs, &out, 1, &p), TCRT_OK);
}

static void assert_floats(const float *got, const float *want, int n, double tol)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabs((double)got[i] - (double)want[i]) <= tol, "element %d: got %g, want %g", i,
                      (double)got[i], (double)want[i]);
}

/* ---- layout ---- */

START_TEST(test_layout_pair_cancelled)
{
    IrGraph *g = parse("graph \"m\"\nfeed \"x\" %0\nfetch \"y\" %3\n"
                       "%0 = arg() : f32[1,2,3,4]\n"
                       "%1 = transpose(%0) {i=[0,2,3,1]} : f32[1,3,4,2]  # to_nhwc (Conv)\n"
                       "%2 = transpose(%1) {i=[0,3,1,2]} : f32[1,2,3,4]  # to_nchw (Conv)\n"
                       "%3 = neg(%2) : f32[1,2,3,4]  # n (Neg)\n");
    ck_assert_int_eq(run_pass(g, pass_layout), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_TRANSPOSE), 0);
    IrNode *neg = fetched(g, 0);
    ck_assert_int_eq(neg->op, OP_NEG);
    ck_assert_int_eq(neg->inputs[0].node->op, OP_ARG);
    ir_graph_free(g);

    /* two perms that do not cancel compose into one */
    g = parse("graph \"m\"\nfeed \"x\" %0\nfetch \"y\" %2\n"
              "%0 = arg() : f32[2,3,4]\n"
              "%1 = transpose(%0) {i=[1,0,2]} : f32[3,2,4]\n"
              "%2 = transpose(%1) {i=[0,2,1]} : f32[3,4,2]\n");
    ck_assert_int_eq(run_pass(g, pass_layout), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_TRANSPOSE), 1);
    IrNode *t = fetched(g, 0);
    ck_assert_int_eq(t->op, OP_TRANSPOSE);
    ck_assert_int_eq(t->inputs[0].node->op, OP_ARG);
    /* y[i,j,k] = x'[i,k,j] where x'[a,b,c] = x[b,a,c]: y = transpose(x, [1,2,0]) */
    ck_assert_int_eq(t->p.i[0], 1);
    ck_assert_int_eq(t->p.i[1], 2);
    ck_assert_int_eq(t->p.i[2], 0);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_layout_sinks_through_relu_add)
{
    /* NHWC a, b -> NCHW -> relu(a') + b' + per-channel c[3,1,1] -> NHWC:
     * everything cancels; c becomes [1,1,1,3] with the same values. */
    char h[64];
    float c[3] = {1, 2, 3};
    char text[2048];
    snprintf(text, sizeof text,
             "graph \"m\"\nfeed \"a\" %%0\nfeed \"b\" %%1\nfetch \"y\" %%8\n"
             "%%0 = arg() : f32[1,2,2,3]\n"
             "%%1 = arg() {i=[1]} : f32[1,2,2,3]\n"
             "%%2 = transpose(%%0) {i=[0,3,1,2]} : f32[1,3,2,2]  # conv_a (Conv)\n"
             "%%3 = transpose(%%1) {i=[0,3,1,2]} : f32[1,3,2,2]  # conv_b (Conv)\n"
             "%%4 = relu(%%2) : f32[1,3,2,2]  # r (Relu)\n"
             "%%5 = add(%%4, %%3) : f32[1,3,2,2]  # s (Add)\n"
             "%%6 = const() : f32[3,1,1] = %s\n"
             "%%7 = add(%%5, %%6) : f32[1,3,2,2]  # bias (Add)\n"
             "%%8 = transpose(%%7) {i=[0,2,3,1]} : f32[1,2,2,3]  # next (Conv)\n",
             hexf(h, c, 3));
    IrGraph *g = parse(text);
    ck_assert_int_eq(run_pass(g, pass_layout), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_TRANSPOSE), 0);
    IrNode *y = fetched(g, 0);
    ck_assert_int_eq(y->op, OP_ADD);
    ck_assert_str_eq(y->origin, "bias");
    IrNode *k = y->inputs[1].node, *s = y->inputs[0].node;
    ck_assert_int_eq(k->op, OP_CONST);
    ck_assert_int_eq(k->out[0].type.shape.rank, 4);
    ck_assert_int_eq(k->out[0].type.shape.dims[3], 3);
    assert_floats(k->data, c, 3, 0);
    ck_assert_int_eq(s->op, OP_ADD);
    ck_assert_str_eq(s->origin, "s");
    ck_assert_int_eq(s->inputs[0].node->op, OP_RELU);
    ck_assert_int_eq(s->inputs[0].node->inputs[0].node->op, OP_ARG);
    ck_assert_int_eq(s->inputs[1].node->op, OP_ARG);
    ck_assert_int_eq(y->out[0].type.shape.dims[3], 3);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_layout_reduce_and_copy)
{
    /* global average pool in NCHW after a NHWC producer: the transpose sinks
     * below the reduction, where [1,1,1,C] -> [1,C,1,1] moves no data. */
    IrGraph *g = parse("graph \"m\"\nfeed \"x\" %0\nfetch \"y\" %3\n"
                       "%0 = arg() : f32[1,2,2,3]\n"
                       "%1 = transpose(%0) {i=[0,3,1,2]} : f32[1,3,2,2]\n"
                       "%2 = reduce_sum(%1) {i=[12,1]} : f32[1,3,1,1]\n"
                       "%3 = copy(%2) : f32[1,3]\n");
    ck_assert_int_eq(run_pass(g, pass_layout), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_TRANSPOSE), 0);
    IrNode *r = find_op(g, OP_REDUCE_SUM);
    ck_assert_int_eq(r->p.i[0], 6); /* axes 1, 2 of NHWC */
    ck_assert_int_eq(r->inputs[0].node->op, OP_ARG);
    ck_assert_int_eq(fetched(g, 0)->out[0].type.shape.dims[1], 3);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_layout_no_extra_transposes)
{
    /* the transpose is fetched too: sinking it below relu would add one */
    IrGraph *g = parse("graph \"m\"\nfeed \"x\" %0\nfetch \"t\" %1\nfetch \"y\" %2\n"
                       "%0 = arg() : f32[1,2,2,3]\n"
                       "%1 = transpose(%0) {i=[0,3,1,2]} : f32[1,3,2,2]\n"
                       "%2 = relu(%1) : f32[1,3,2,2]\n");
    ck_assert_int_eq(run_pass(g, pass_layout), PASS_SAME);
    ck_assert_int_eq(count_op(g, OP_TRANSPOSE), 1);
    ir_graph_free(g);

    /* two users (relu, neg): sinking through relu alone would run it twice */
    g = parse("graph \"m\"\nfeed \"x\" %0\nfetch \"y\" %2\nfetch \"z\" %3\n"
              "%0 = arg() : f32[1,2,2,3]\n"
              "%1 = transpose(%0) {i=[0,3,1,2]} : f32[1,3,2,2]\n"
              "%2 = relu(%1) : f32[1,3,2,2]\n"
              "%3 = neg(%1) : f32[1,3,2,2]\n");
    ck_assert_int_eq(run_pass(g, pass_layout), PASS_SAME);
    ir_graph_free(g);

    /* add of a transpose and a plain value: would need a second transpose */
    g = parse("graph \"m\"\nfeed \"x\" %0\nfeed \"b\" %1\nfetch \"y\" %3\n"
              "%0 = arg() : f32[1,2,2,3]\n"
              "%1 = arg() {i=[1]} : f32[1,3,2,2]\n"
              "%2 = transpose(%0) {i=[0,3,1,2]} : f32[1,3,2,2]\n"
              "%3 = add(%2, %1) : f32[1,3,2,2]\n");
    ck_assert_int_eq(run_pass(g, pass_layout), PASS_SAME);
    ck_assert_int_eq(count_op(g, OP_TRANSPOSE), 1);
    ir_graph_free(g);
}
END_TEST

/* ---- fuse ---- */

/* x [1,2,2,1] -> 1x1 conv with w = [2, -1] (Cout 2), then `tail` lines. */
static IrGraph *conv_graph(const char *fetch_ids, const char *tail)
{
    char h[64], text[4096];
    float w[2] = {2, -1};
    snprintf(text, sizeof text,
             "graph \"m\"\nfeed \"x\" %%0\nfeed \"r\" %%9\n%s"
             "%%0 = arg() : f32[1,2,2,1]\n"
             "%%9 = arg() {i=[1]} : f32[1,2,2,2]\n"
             "%%1 = const() : f32[1,1,1,2] = %s  # conv (Conv2D)\n"
             "%%2 = conv2d(%%0, %%1) {i=[1,1,1,1,0,0,0,0,0,0]} : f32[1,2,2,2]  # conv (Conv2D)\n"
             "%s",
             fetch_ids, hexf(h, w, 2), tail);
    return parse(text);
}

static const float X4[4] = {1, -2, 3, -4};

START_TEST(test_fuse_bias)
{
    char h[64], tail[256];
    float b[2] = {1, 2};
    snprintf(tail, sizeof tail,
             "%%3 = const() : f32[2] = %s\n%%4 = add(%%3, %%2) : f32[1,2,2,2]  # bias (BiasAdd)\n",
             hexf(h, b, 2));
    IrGraph *g = conv_graph("fetch \"y\" %4\n", tail);
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_ADD), 0);
    IrNode *c = fetched(g, 0);
    ck_assert_int_eq(c->op, OP_CONV2D);
    ck_assert_int_eq(c->n_inputs, 3);
    ck_assert_str_eq(c->origin, "conv");
    /* y[p,0] = 2x+1, y[p,1] = -x+2 for x = 1,-2,3,-4 */
    float y[8], want[8] = {3, 1, -3, 4, 7, -1, -7, 6};
    run_conv(c, X4, NULL, y);
    assert_floats(y, want, 8, 1e-6);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_fuse_batchnorm_relu)
{
    /* mul by [3, 0.5], add [1,-1] (BatchNorm, laid out [1,1,1,2]), relu */
    char h1[64], h2[64], tail[512];
    float k[2] = {3, 0.5f}, b[2] = {1, -1};
    snprintf(tail, sizeof tail,
             "%%3 = const() : f32[1,1,1,2] = %s\n"
             "%%4 = mul(%%2, %%3) : f32[1,2,2,2]  # bn (FusedBatchNorm)\n"
             "%%5 = const() : f32[1,1,1,2] = %s\n"
             "%%6 = add(%%4, %%5) : f32[1,2,2,2]  # bn (FusedBatchNorm)\n"
             "%%7 = relu(%%6) : f32[1,2,2,2]  # act (Relu)\n",
             hexf(h1, k, 2), hexf(h2, b, 2));
    IrGraph *g = conv_graph("fetch \"y\" %7\n", tail);
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_MUL) + count_op(g, OP_ADD) + count_op(g, OP_RELU), 0);
    IrNode *c = fetched(g, 0);
    ck_assert_int_eq(c->op, OP_CONV2D);
    ck_assert_int_eq(c->p.i[TCRT_CONV_ACT], TCRT_ACT_RELU);
    const float *w = c->inputs[1].node->data, *bias = c->inputs[2].node->data;
    ck_assert(w[0] == 6 && w[1] == -0.5f && bias[0] == 1 && bias[1] == -1);
    /* relu(6x+1) = 7,0,19,0; relu(-0.5x-1) = 0,0,0,1 */
    float y[8], want[8] = {7, 0, 0, 0, 19, 0, 0, 1};
    run_conv(c, X4, NULL, y);
    assert_floats(y, want, 8, 1e-6);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_fuse_residual_relu)
{
    IrGraph *g = conv_graph("fetch \"y\" %4\n", "%3 = add(%2, %9) : f32[1,2,2,2]  # res (Add)\n"
                                                "%4 = relu(%3) : f32[1,2,2,2]  # act (Relu)\n");
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_CHANGED);
    IrNode *c = fetched(g, 0);
    ck_assert_int_eq(c->op, OP_CONV2D);
    ck_assert_int_eq(c->n_inputs, 4);
    ck_assert_int_eq(c->inputs[3].node->op, OP_ARG);
    ck_assert_int_eq(c->p.i[TCRT_CONV_ACT], TCRT_ACT_RELU);
    /* zero bias, r = 1: relu(2x+1) = 3,0,7,0; relu(-x+1) = 0,3,0,5 */
    float r[8] = {1, 1, 1, 1, 1, 1, 1, 1}, y[8], want[8] = {3, 0, 0, 3, 7, 0, 0, 5};
    run_conv(c, X4, r, y);
    assert_floats(y, want, 8, 1e-6);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_fuse_relu6_leaky)
{
    char h1[64], h2[64], tail[512];
    float zero = 0, six = 6;
    snprintf(tail, sizeof tail,
             "%%3 = const() : f32[] = %s\n%%4 = max(%%2, %%3) : f32[1,2,2,2]  # clip (Clip)\n"
             "%%5 = const() : f32[] = %s\n%%6 = min(%%4, %%5) : f32[1,2,2,2]  # clip (Clip)\n",
             hexf(h1, &zero, 1), hexf(h2, &six, 1));
    IrGraph *g = conv_graph("fetch \"y\" %6\n", tail);
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_CHANGED);
    IrNode *c = fetched(g, 0);
    ck_assert_int_eq(c->op, OP_CONV2D);
    ck_assert_int_eq(c->p.i[TCRT_CONV_ACT], TCRT_ACT_RELU6);
    /* clip(2x) = 2,0,6,0; clip(-x) = 0,2,0,4 */
    float y[8], want[8] = {2, 0, 0, 2, 6, 0, 0, 4};
    run_conv(c, X4, NULL, y);
    assert_floats(y, want, 8, 1e-6);
    ir_graph_free(g);

    /* ONNX LeakyRelu: select(lt(v, 0), mul(v, 0.1), v) */
    float alpha = 0.1f;
    snprintf(tail, sizeof tail,
             "%%3 = const() : f32[] = %s\n%%4 = lt(%%2, %%3) : bool[1,2,2,2]\n"
             "%%5 = const() : f32[] = %s\n%%6 = mul(%%2, %%5) : f32[1,2,2,2]\n"
             "%%7 = select(%%4, %%6, %%2) : f32[1,2,2,2]  # leaky (LeakyRelu)\n",
             hexf(h1, &zero, 1), hexf(h2, &alpha, 1));
    g = conv_graph("fetch \"y\" %7\n", tail);
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_CHANGED);
    c = fetched(g, 0);
    ck_assert_int_eq(c->op, OP_CONV2D);
    ck_assert_int_eq(c->p.i[TCRT_CONV_ACT], TCRT_ACT_LEAKY);
    ck_assert_int_eq(count_op(g, OP_SELECT) + count_op(g, OP_LT) + count_op(g, OP_MUL), 0);
    /* 2x = 2,-4,6,-8 -> 2,-0.4,6,-0.8; -x = -1,2,-3,4 -> -0.1,2,-0.3,4 */
    float want2[8] = {2, -0.1f, -0.4f, 2, 6, -0.3f, -0.8f, 4};
    run_conv(c, X4, NULL, y);
    assert_floats(y, want2, 8, 1e-6);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_fuse_respects_users)
{
    /* the conv output is fetched: relu must not absorb it */
    IrGraph *g = conv_graph("fetch \"c\" %2\nfetch \"y\" %3\n", "%3 = relu(%2) : f32[1,2,2,2]\n");
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_SAME);
    ck_assert_int_eq(count_op(g, OP_RELU), 1);
    ck_assert_int_eq(fetched(g, 0)->p.i[TCRT_CONV_ACT], TCRT_ACT_NONE);
    ir_graph_free(g);

    /* two consumers (relu and neg) */
    g = conv_graph("fetch \"y\" %3\nfetch \"z\" %4\n",
                   "%3 = relu(%2) : f32[1,2,2,2]\n%4 = neg(%2) : f32[1,2,2,2]\n");
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_SAME);
    ck_assert_int_eq(count_op(g, OP_RELU), 1);
    ir_graph_free(g);

    /* mul by a non-constant is not a scale */
    g = conv_graph("fetch \"y\" %3\n", "%3 = mul(%2, %9) : f32[1,2,2,2]\n");
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_SAME);
    ir_graph_free(g);

    /* a residual on weights that are not constant (never packed) stays an add */
    g = parse("graph \"m\"\nfeed \"x\" %0\nfeed \"w\" %1\nfeed \"r\" %2\nfetch \"y\" %4\n"
              "%0 = arg() : f32[1,2,2,1]\n"
              "%1 = arg() {i=[1]} : f32[1,1,1,2]\n"
              "%2 = arg() {i=[2]} : f32[1,2,2,2]\n"
              "%3 = conv2d(%0, %1) {i=[1,1,1,1,0,0,0,0,0,0]} : f32[1,2,2,2]\n"
              "%4 = add(%3, %2) : f32[1,2,2,2]\n");
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_SAME);
    ir_graph_free(g);
}
END_TEST

/* conv2d(pad(x)) with a zero spatial pad: x 3x3 (1..9), weights all ones. */
static IrGraph *pad_conv_graph(const char *pad_params, const char *pad_type, int k, const char *conv_params,
                               const char *fetches, int out_hw)
{
    char h[160], text[4096];
    float w[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    snprintf(text, sizeof text,
             "graph \"m\"\nfeed \"x\" %%0\n%s"
             "%%0 = arg() : f32[1,3,3,1]\n"
             "%%1 = pad(%%0) %s : %s  # zp (Pad)\n"
             "%%2 = const() : f32[%d,%d,1,1] = %s\n"
             "%%3 = conv2d(%%1, %%2) %s : f32[1,%d,%d,1]  # conv (Conv2D)\n",
             fetches, pad_params, pad_type, k, k, hexf(h, w, k * k), conv_params, out_hw, out_hw);
    return parse(text);
}

static const float X9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};

START_TEST(test_fuse_pad_into_conv)
{
    /* pad 1 all round + 3x3 VALID = 3x3 SAME: y = sum of the 3x3 neighbourhood
     * (zeros outside): 1+2+4+5 = 12, 1+..+6 = 21, 2+3+5+6 = 16, ... */
    IrGraph *g = pad_conv_graph("{i=[0,0,1,1,1,1]}", "f32[1,5,5,1]", 3, "{i=[1,1,1,1,0,0,0,0,0,0]}",
                                "fetch \"y\" %3\n", 3);
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_PAD), 0);
    IrNode *c = fetched(g, 0);
    ck_assert_int_eq(c->op, OP_CONV2D);
    ck_assert_int_eq(c->inputs[0].node->op, OP_ARG);
    ck_assert_str_eq(c->origin, "conv");
    ck_assert(c->p.i[TCRT_CONV_PT] == 1 && c->p.i[TCRT_CONV_PL] == 1 && c->p.i[TCRT_CONV_PB] == 1 &&
              c->p.i[TCRT_CONV_PR] == 1);
    float y[9], want[9] = {12, 21, 16, 27, 45, 33, 24, 39, 28};
    run_conv(c, X9, NULL, y);
    assert_floats(y, want, 9, 0);
    ir_graph_free(g);

    /* asymmetric (H after 1, W before 1) on top of the conv's own pads (top 1,
     * right 1) with a 2x2 window: padded grid rows [0 x0 x1 x2 0] framed by a
     * zero row above and below; y[i][j] = sum of the 2x2 block at (i, j) */
    g = pad_conv_graph("{i=[0,0,0,1,1,0]}", "f32[1,4,4,1]", 2, "{i=[1,1,1,1,1,0,0,1,0,0]}", "fetch \"y\" %3\n",
                       4);
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_PAD), 0);
    c = fetched(g, 0);
    ck_assert(c->p.i[TCRT_CONV_PT] == 1 && c->p.i[TCRT_CONV_PL] == 1 && c->p.i[TCRT_CONV_PB] == 1 &&
              c->p.i[TCRT_CONV_PR] == 1);
    /* rows of the padded 5x5 grid: 0; 0 1 2 3 0; 0 4 5 6 0; 0 7 8 9 0; 0 */
    float want2[16] = {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9};
    float y2[16];
    ck_assert_int_eq(c->out[0].type.shape.dims[1], 4);
    run_conv(c, X9, NULL, y2);
    assert_floats(y2, want2, 16, 0);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_fuse_pad_kept)
{
    /* a non-zero constant, channel padding, a pad as wide as the window: no fold */
    IrGraph *g = pad_conv_graph("{i=[0,0,1,1,1,1], f=[1]}", "f32[1,5,5,1]", 3, "{i=[1,1,1,1,0,0,0,0,0,0]}",
                                "fetch \"y\" %3\n", 3);
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_SAME);
    ir_graph_free(g);
    g = parse("graph \"m\"\nfeed \"x\" %0\nfetch \"y\" %3\n"
              "%0 = arg() : f32[1,3,3,1]\n"
              "%1 = pad(%0) {i=[0,0,0,0,0,0,0,1]} : f32[1,3,3,2]\n"
              "%2 = const() : f32[1,1,2,1] = hex:0000803f0000803f\n"
              "%3 = conv2d(%1, %2) {i=[1,1,1,1,0,0,0,0,0,0]} : f32[1,3,3,1]\n");
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_SAME);
    ir_graph_free(g);
    g = pad_conv_graph("{i=[0,0,3,3,3,3]}", "f32[1,9,9,1]", 3, "{i=[3,3,1,1,0,0,0,0,0,0]}", "fetch \"y\" %3\n", 3);
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_SAME);
    ir_graph_free(g);
    /* the pad is fetched too: the conv reads x, the pad stays for its fetch */
    g = pad_conv_graph("{i=[0,0,1,1,1,1]}", "f32[1,5,5,1]", 3, "{i=[1,1,1,1,0,0,0,0,0,0]}",
                       "fetch \"y\" %3\nfetch \"p\" %1\n", 3);
    ck_assert_int_eq(run_pass(g, pass_fuse), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_PAD), 1);
    ck_assert_int_eq(fetched(g, 0)->inputs[0].node->op, OP_ARG);
    ck_assert_int_eq(fetched(g, 1)->op, OP_PAD);
    ir_graph_free(g);
}
END_TEST

/* ---- pack ---- */

/* pass_pack (wino: pass_winograd) on a kh x kh conv of an h x w x cin input
 * to cout channels with SAME-style pad: the packed conv computes what the
 * HWIO one did (the reference kernel reads both layouts). */
static void check_pack_hw(int h, int w, int kh, int cin, int cout, int pad, int wino)
{
    int nw = kh * kh * cin * cout, nx = h * w * cin;
    float *wd = malloc(sizeof(float) * (size_t)nw), *xd = malloc(sizeof(float) * (size_t)nx);
    for (int i = 0; i < nw; i++)
        wd[i] = (float)((i * 7) % 11) - 5.0f;
    for (int i = 0; i < nx; i++)
        xd[i] = (float)((i * 5) % 9) - 4.0f;
    size_t tn = (size_t)nw * 8 + 4096;
    char *hex = malloc((size_t)nw * 8 + 16), *text = malloc(tn);
    int oh = h + 2 * pad - kh + 1, ow = w + 2 * pad - kh + 1;
    snprintf(text, tn,
             "graph \"m\"\nfeed \"x\" %%0\nfetch \"y\" %%2\n"
             "%%0 = arg() : f32[1,%d,%d,%d]\n"
             "%%1 = const() : f32[%d,%d,%d,%d] = %s\n"
             "%%2 = conv2d(%%0, %%1) {i=[1,1,1,1,%d,%d,%d,%d,0,1]} : f32[1,%d,%d,%d]  # conv (Conv)\n",
             h, w, cin, kh, kh, cin, cout, hexf(hex, wd, nw), pad, pad, pad, pad, oh, ow, cout);
    IrGraph *g = parse(text);
    int ny = oh * ow * cout;
    float *y0 = malloc(sizeof(float) * (size_t)ny), *y1 = malloc(sizeof(float) * (size_t)ny);
    run_conv(fetched(g, 0), xd, NULL, y0);
    ck_assert_int_eq(run_pass(g, wino ? pass_winograd : pass_pack), PASS_CHANGED);
    IrNode *c = fetched(g, 0);
    ck_assert_int_eq(c->p.i[TCRT_CONV_PACKED], wino == 4   ? TCRT_CONV_PACK_WINO4
                                               : wino == 2 ? TCRT_CONV_PACK_WINO
                                                           : TCRT_CONV_PACK_DIRECT);
    ck_assert_int_eq(c->p.i[TCRT_CONV_COUT], cout);
    ck_assert_int_eq(c->p.i[TCRT_CONV_ACT], TCRT_ACT_RELU);
    ck_assert_str_eq(c->origin, "conv");
    const IrShape *ps = &ir_value_type(c->inputs[1])->shape;
    ck_assert_int_eq(ps->rank, 5);
    ck_assert_int_eq(ps->dims[0], (cout + 15) / 16);
    ck_assert_int_eq(ps->dims[1], wino ? wino + 2 : kh);
    ck_assert_int_eq(ps->dims[4], 16);
    ck_assert_int_eq(count_op(g, OP_CONST), 1); /* the HWIO weight is gone */
    run_conv(c, xd, NULL, y1);
    /* integer data: F(2x2)'s halves and quarters and their inverse are
     * exact; F(4x4)'s sixths are not (within 1e-5 of |y| <= 2880) */
    assert_floats(y1, y0, ny, wino == 4 ? 0.03 : 0);
    /* packing is done once: a second run of either pass changes nothing */
    ck_assert_int_eq(run_pass(g, pass_pack), PASS_SAME);
    ck_assert_int_eq(run_pass(g, pass_winograd), PASS_SAME);
    ir_graph_free(g);
    free(wd);
    free(xd);
    free(hex);
    free(text);
    free(y0);
    free(y1);
}

static void check_pack(int kh, int cin, int cout, int pad)
{
    check_pack_hw(3, 4, kh, cin, cout, pad, 0);
}

START_TEST(test_pack_matches_unpacked)
{
    check_pack(3, 2, 3, 1);
    check_pack(1, 3, 17, 0);
}
END_TEST

/* pass_winograd takes a 3x3 stride-1 conv with Cin, Cout >= 16: F(4x4) with
 * at least 17 output tiles of 4x4 (17x17 SAME: 25), else F(2x2) with at
 * least 32 tiles of 2x2 (12x12 SAME: 36, 9 of 4x4; 14x14: 49, 16 of 4x4),
 * and nothing else. */
START_TEST(test_winograd_pass)
{
    check_pack_hw(12, 12, 3, 16, 20, 1, 2);
    check_pack_hw(13, 11, 3, 17, 33, 1, 2); /* odd sizes: 7x6 tiles (4x3 of 4x4) */
    check_pack_hw(14, 14, 3, 16, 16, 1, 2);
    check_pack_hw(16, 16, 3, 16, 16, 1, 2); /* 16 tiles of 4x4: one short of F(4x4) */
    check_pack_hw(17, 17, 3, 16, 16, 1, 4);
    check_pack_hw(28, 28, 3, 16, 17, 1, 4);
    check_pack_hw(26, 30, 3, 16, 16, 1, 4); /* 7x8 tiles, the last cut */
    /* not taken: 16 tiles (10x10 VALID -> 8x8), Cin 8, a 1x1 conv, stride 2 */
    static const struct {
        int hw, cin, kh, s;
    } no[] = {{10, 16, 3, 1}, {14, 8, 3, 1}, {12, 16, 1, 1}, {26, 16, 3, 2}};
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++) {
        int nw = no[k].kh * no[k].kh * no[k].cin * 16, o = (no[k].hw - no[k].kh) / no[k].s + 1;
        float *wd = calloc((size_t)nw, sizeof(float));
        size_t tn = (size_t)nw * 8 + 4096;
        char *hex = malloc((size_t)nw * 8 + 16), *text = malloc(tn);
        snprintf(text, tn,
                 "graph \"m\"\nfeed \"x\" %%0\nfetch \"y\" %%2\n%%0 = arg() : f32[1,%d,%d,%d]\n"
                 "%%1 = const() : f32[%d,%d,%d,16] = %s\n"
                 "%%2 = conv2d(%%0, %%1) {i=[%d,%d,1,1,0,0,0,0,0,0]} : f32[1,%d,%d,16]\n",
                 no[k].hw, no[k].hw, no[k].cin, no[k].kh, no[k].kh, no[k].cin, hexf(hex, wd, nw), no[k].s,
                 no[k].s, o, o);
        IrGraph *g = parse(text);
        ck_assert_int_eq(run_pass(g, pass_winograd), PASS_SAME);
        ck_assert_int_eq(run_pass(g, pass_pack), PASS_CHANGED); /* the direct layout instead */
        ir_graph_free(g);
        free(wd);
        free(hex);
        free(text);
    }
}
END_TEST

START_TEST(test_pack_skips_depthwise)
{
    char h[64], text[1024];
    float w[4] = {1, 2, 3, 4};
    snprintf(text, sizeof text,
             "graph \"m\"\nfeed \"x\" %%0\nfetch \"y\" %%2\n"
             "%%0 = arg() : f32[1,2,2,4]\n"
             "%%1 = const() : f32[1,1,4,1] = %s\n"
             "%%2 = conv2d(%%0, %%1) {i=[1,1,1,1,0,0,0,0,1]} : f32[1,2,2,4]\n",
             hexf(h, w, 4));
    IrGraph *g = parse(text);
    ck_assert_int_eq(run_pass(g, pass_pack), PASS_SAME);
    ir_graph_free(g);
}
END_TEST

/* ---- pack: matmuls with a constant B as 1x1 convs ---- */

/* Runs matmul node m with the reference kernel: input 0 is a_data, the
 * others their CONST data. */
static void run_matmul(const IrNode *m, const float *a_data, float *y)
{
    tcrt_tensor in[3], out;
    for (int k = 0; k < m->n_inputs; k++) {
        IrValue v = m->inputs[k];
        in[k] = tensor_of(ir_value_type(v), k == 0 ? (void *)a_data : v.node->data);
    }
    out = tensor_of(&m->out[0].type, y);
    tcrt_params p = params_of(m);
    ck_assert_int_eq(tcrt_ref_matmul(in, m->n_inputs, &out, 1, &p), TCRT_OK);
}

/* pass_pack on y = act(a[2,3,4] . B + bias) with B [4,5] (tb: B^T [5,4])
 * constant: y is a COPY of a packed 1x1 conv (Cout 5, the matmul's
 * activation and bias) over a [1,1,6,4] COPY of a, and computes what the
 * matmul did (both by the reference kernels: same values, the same
 * products summed in the same order). */
static void check_mm_as_conv(int tb, int act)
{
    float b[20], bias[5], a[24];
    for (int i = 0; i < 20; i++)
        b[i] = (float)((i * 7) % 11) - 5.0f;
    for (int i = 0; i < 5; i++)
        bias[i] = 0.5f * (float)i - 1.0f;
    for (int i = 0; i < 24; i++)
        a[i] = (float)((i * 5) % 9) - 4.0f;
    char hb[256], hc[64], text[2048];
    snprintf(text, sizeof text,
             "graph \"m\"\nfeed \"a\" %%0\nfetch \"y\" %%3\n"
             "%%0 = arg() : f32[2,3,4]\n"
             "%%1 = const() : f32[%s] = %s\n"
             "%%2 = const() : f32[5] = %s\n"
             "%%3 = matmul(%%0, %%1, %%2) {i=[0,%d,%d]} : f32[2,3,5]  # mm (MatMul)\n",
             tb ? "5,4" : "4,5", hexf(hb, b, 20), hexf(hc, bias, 5), tb, act);
    IrGraph *g = parse(text);
    float y0[30], y1[30];
    run_matmul(fetched(g, 0), a, y0);
    ck_assert_int_eq(run_pass(g, pass_pack), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_MATMUL), 0);
    IrNode *y = fetched(g, 0), *c = y->inputs[0].node, *x = c->inputs[0].node;
    ck_assert_int_eq(y->op, OP_COPY);
    ck_assert_int_eq(y->out[0].type.shape.rank, 3);
    ck_assert_int_eq(c->op, OP_CONV2D);
    ck_assert_int_eq(c->p.i[TCRT_CONV_PACKED], TCRT_CONV_PACK_DIRECT);
    ck_assert_int_eq(c->p.i[TCRT_CONV_COUT], 5);
    ck_assert_int_eq(c->p.i[TCRT_CONV_ACT], act);
    ck_assert_str_eq(c->origin, "mm");
    ck_assert_int_eq(c->n_inputs, 3);
    ck_assert_int_eq(x->op, OP_COPY);
    ck_assert_int_eq(x->inputs[0].node->op, OP_ARG);
    const IrShape *xs = &x->out[0].type.shape;
    ck_assert_int_eq(xs->rank, 4);
    ck_assert_int_eq(xs->dims[2], 6);
    ck_assert_int_eq(xs->dims[3], 4);
    ck_assert_int_eq(count_op(g, OP_CONST), 2); /* packed filter and bias: B and its HWIO copy are gone */
    run_conv(c, a, NULL, y1);                   /* the COPY is a view: a's bytes */
    assert_floats(y1, y0, 30, 0);
    ck_assert_int_eq(run_pass(g, pass_pack), PASS_SAME);
    ir_graph_free(g);
}

START_TEST(test_pack_matmul_as_conv)
{
    check_mm_as_conv(0, TCRT_ACT_NONE);
    check_mm_as_conv(1, TCRT_ACT_RELU);
    check_mm_as_conv(0, TCRT_ACT_RELU6);
}
END_TEST

/* Rows of A in the split tests: a result of SL_ROWS x 6 floats is above
 * pack's SPLIT_MIN_OUT (8192). */
enum { SL_ROWS = 2 * 1024 };

/* pass_pack on a[2,1024,4] . B + bias (B [4,6], or B^T [6,4] with tb) read
 * only by two slices of its last axis, columns [0,2) and [3,6) (column 2
 * unused): two matmuls over those columns, then two packed 1x1 convs
 * (Cout 2 and 3) over one view of a, and no slice; each computes what its
 * slice of the matmul held (reference kernels, the same products in the
 * same order). */
static void check_split_matmul(int tb)
{
    static float a[SL_ROWS * 4], y0[SL_ROWS * 6], y1[SL_ROWS * 3], want[SL_ROWS * 3];
    float b[24], bias[6];
    for (int i = 0; i < 24; i++)
        b[i] = (float)((i * 7) % 11) - 5.0f;
    for (int i = 0; i < SL_ROWS * 4; i++)
        a[i] = (float)((i * 5) % 9) - 4.0f;
    for (int i = 0; i < 6; i++)
        bias[i] = 0.5f * (float)i - 1.0f;
    char hb[256], hc[64], text[2048];
    snprintf(text, sizeof text,
             "graph \"m\"\nfeed \"a\" %%0\nfetch \"q\" %%4\nfetch \"v\" %%5\n"
             "%%0 = arg() : f32[2,1024,4]\n"
             "%%1 = const() : f32[%s] = %s\n"
             "%%2 = const() : f32[6] = %s\n"
             "%%3 = matmul(%%0, %%1, %%2) {i=[0,%d,1]} : f32[2,1024,6]  # qkv (MatMul)\n"
             "%%4 = slice(%%3) {i=[0,0,0,0,0,0,0,0,1,1,1]} : f32[2,1024,2]\n"
             "%%5 = slice(%%3) {i=[0,0,3,0,0,0,0,0,1,1,1]} : f32[2,1024,3]\n",
             tb ? "6,4" : "4,6", hexf(hb, b, 24), hexf(hc, bias, 6), tb);
    IrGraph *g = parse(text);
    run_matmul(fetched(g, 0)->inputs[0].node, a, y0);
    ck_assert_int_eq(run_pass(g, pass_pack), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_MATMUL), 0);
    ck_assert_int_eq(count_op(g, OP_SLICE), 0);
    ck_assert_int_eq(count_op(g, OP_CONV2D), 2);
    const int64_t begin[2] = {0, 3}, width[2] = {2, 3};
    IrNode *view = NULL;
    for (int f = 0; f < 2; f++) {
        IrNode *y = fetched(g, f), *c = y->inputs[0].node;
        ck_assert_int_eq(y->op, OP_COPY);
        ck_assert_int_eq(c->op, OP_CONV2D);
        ck_assert_int_eq(c->p.i[TCRT_CONV_COUT], width[f]);
        ck_assert_int_eq(c->p.i[TCRT_CONV_ACT], TCRT_ACT_RELU);
        ck_assert_str_eq(c->origin, "qkv");
        ck_assert(view == NULL || c->inputs[0].node == view); /* one view of a for both */
        view = c->inputs[0].node;
        run_conv(c, a, NULL, y1);
        for (int r = 0; r < SL_ROWS; r++)
            for (int j = 0; j < width[f]; j++)
                want[r * width[f] + j] = y0[r * 6 + begin[f] + j];
        assert_floats(y1, want, SL_ROWS * (int)width[f], 0);
    }
    ck_assert_int_eq(run_pass(g, pass_pack), PASS_SAME);
    ir_graph_free(g);
}

START_TEST(test_pack_split_sliced_matmul)
{
    check_split_matmul(0);
    check_split_matmul(1);
}
END_TEST

/* Sliced matmuls pack does not split (each still becomes one conv and
 * its slices stay): a slice of another axis, the matmul fetched as well,
 * slices wider than N together, a user that is not a slice, a result
 * below SPLIT_MIN_OUT (3 rows). */
START_TEST(test_pack_split_kept)
{
    const char *users[] = {
        "%%3 = slice(%%2) {i=[1,0,0,0,0,0,0,0,1,1,1]} : f32[1,%d,6]\nfetch \"s\" %%3\n",
        "%%3 = slice(%%2) {i=[0,0,0,0,0,0,0,0,1,1,1]} : f32[2,%d,2]\nfetch \"s\" %%3\nfetch \"y\" %%2\n",
        "%%3 = slice(%%2) {i=[0,0,0,0,0,0,0,0,1,1,1]} : f32[2,%d,4]\n"
        "%%4 = slice(%%2) {i=[0,0,2,0,0,0,0,0,1,1,1]} : f32[2,%d,4]\nfetch \"s\" %%3\nfetch \"t\" %%4\n",
        "%%3 = slice(%%2) {i=[0,0,0,0,0,0,0,0,1,1,1]} : f32[2,%d,2]\n"
        "%%4 = relu(%%2) : f32[2,%d,6]\nfetch \"s\" %%3\nfetch \"t\" %%4\n",
        "%%3 = slice(%%2) {i=[0,0,0,0,0,0,0,0,1,1,1]} : f32[2,%d,2]\n"
        "%%4 = slice(%%2) {i=[0,0,3,0,0,0,0,0,1,1,1]} : f32[2,%d,3]\nfetch \"s\" %%3\nfetch \"t\" %%4\n",
    };
    float b[24];
    for (int i = 0; i < 24; i++)
        b[i] = (float)i;
    for (int i = 0; i < 5; i++) {
        int rows = i == 4 ? 3 : SL_ROWS / 2;
        char h[512], body[1024], text[2048];
        snprintf(body, sizeof body, users[i], rows, rows);
        snprintf(text, sizeof text,
                 "graph \"m\"\nfeed \"a\" %%0\n%%0 = arg() : f32[2,%d,4]\n%%1 = const() : f32[4,6] = %s\n"
                 "%%2 = matmul(%%0, %%1) : f32[2,%d,6]\n%s",
                 rows, hexf(h, b, 24), rows, body);
        IrGraph *g = parse(text);
        ck_assert_msg(run_pass(g, pass_pack) == PASS_CHANGED, "case %d", i);
        ck_assert_msg(count_op(g, OP_CONV2D) == 1, "case %d", i);
        ck_assert_msg(count_op(g, OP_SLICE) >= 1, "case %d", i);
        ir_graph_free(g);
    }
}
END_TEST

/* Matmuls pack leaves alone: one row (a GEMV), A transposed, B not
 * constant, B with batch dims; and two matmuls of one A share its view. */
START_TEST(test_pack_matmul_kept)
{
    char h[256], text[2048];
    float b[12];
    for (int i = 0; i < 12; i++)
        b[i] = (float)i;
    const char *kept[] = {
        "%%0 = arg() : f32[1,4]\n%%1 = const() : f32[4,3] = %s\n"
        "%%2 = matmul(%%0, %%1) : f32[1,3]\n",
        "%%0 = arg() : f32[4,2]\n%%1 = const() : f32[4,3] = %s\n"
        "%%2 = matmul(%%0, %%1) {i=[1,0,0]} : f32[2,3]\n",
        "%%0 = arg() : f32[2,4]\n%%1 = arg() : f32[4,3]\n"
        "%%2 = matmul(%%0, %%1) : f32[2,3]\n",
        "%%0 = arg() : f32[1,2,4]\n%%1 = const() : f32[1,4,3] = %s\n"
        "%%2 = matmul(%%0, %%1) : f32[1,2,3]\n",
    };
    for (int i = 0; i < 4; i++) {
        char body[1024];
        snprintf(body, sizeof body, kept[i], hexf(h, b, 12));
        snprintf(text, sizeof text, "graph \"m\"\nfeed \"a\" %%0\nfetch \"y\" %%2\n%s", body);
        IrGraph *g = parse(text);
        ck_assert_msg(run_pass(g, pass_pack) == PASS_SAME, "case %d", i);
        ck_assert_int_eq(count_op(g, OP_MATMUL), 1);
        ir_graph_free(g);
    }
    snprintf(text, sizeof text,
             "graph \"m\"\nfeed \"a\" %%0\nfetch \"y\" %%2\nfetch \"z\" %%3\n"
             "%%0 = arg() : f32[2,4]\n%%1 = const() : f32[4,3] = %s\n"
             "%%2 = matmul(%%0, %%1) : f32[2,3]\n%%3 = matmul(%%0, %%1) {i=[0,0,1]} : f32[2,3]\n",
             hexf(h, b, 12));
    IrGraph *g = parse(text);
    ck_assert_int_eq(run_pass(g, pass_pack), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_CONV2D), 2);
    ck_assert_int_eq(count_op(g, OP_COPY), 3);  /* one view of a, one result copy each */
    ck_assert_int_eq(count_op(g, OP_CONST), 1); /* one packed filter for both */
    ck_assert_ptr_eq(fetched(g, 0)->inputs[0].node->inputs[0].node,
                     fetched(g, 1)->inputs[0].node->inputs[0].node);
    ir_graph_free(g);
}
END_TEST

/* ---- dwfuse ---- */

/* x [1,h,w,16] -> 1x1 conv to ce channels (bias, relu6) -> 3x3 depthwise
 * (SAME, bias, relu6; stride s) -> with proj, 1x1 conv to 24 channels
 * (bias, no act); fetch_e: the expansion is fetched too.  y0: the result by
 * the reference kernel, conv after conv. */
static IrGraph *dw_block_graph(int h, int w, int ce, int s, bool proj, bool fetch_e, float *xd, float *y0)
{
    int nwe = 16 * ce, nwd = 9 * ce, nwp = ce * 24;
    float *we = malloc(sizeof(float) * (size_t)nwe), *wd = malloc(sizeof(float) * (size_t)nwd),
          *wp = malloc(sizeof(float) * (size_t)nwp), *b = malloc(sizeof(float) * (size_t)ce);
    for (int i = 0; i < nwe; i++)
        we[i] = (float)((i * 7) % 11 - 5) / 16.0f;
    for (int i = 0; i < nwd; i++)
        wd[i] = (float)((i * 5) % 9 - 4) / 8.0f;
    for (int i = 0; i < nwp; i++)
        wp[i] = (float)((i * 3) % 7 - 3) / 32.0f;
    for (int i = 0; i < ce; i++)
        b[i] = (float)(i % 5) / 4.0f;
    int oh = (h + s - 1) / s, ow = (w + s - 1) / s, pb = (oh - 1) * s + 3 - h - 1,
        pr = (ow - 1) * s + 3 - w - 1;
    size_t tn = (size_t)(nwe + nwd + nwp + 2 * ce) * 8 + 4096;
    char *text = malloc(tn), *h1 = malloc((size_t)nwe * 8 + 16), *h2 = malloc((size_t)nwd * 8 + 16),
         *h3 = malloc((size_t)ce * 8 + 16), *h4 = malloc((size_t)nwp * 8 + 16), tail[256] = "";
    if (proj)
        snprintf(
            tail, sizeof tail,
            "%%6 = const() : f32[1,1,%d,24] = %%s\n"
            "%%7 = const() : f32[24] = %%s\n"
            "%%8 = conv2d(%%5, %%6, %%7) {i=[1,1,1,1,0,0,0,0,0,0]} : f32[1,%d,%d,24]  # project (Conv)\n",
            ce, oh, ow);
    char *ptail = malloc(tn);
    snprintf(ptail, tn, tail, hexf(h4, wp, nwp), hexf(h3, b, 24));
    snprintf(text, tn,
             "graph \"m\"\nfeed \"x\" %%0\nfetch \"y\" %%%d\n%s"
             "%%0 = arg() : f32[1,%d,%d,16]\n"
             "%%1 = const() : f32[1,1,16,%d] = %s\n"
             "%%2 = const() : f32[%d] = %s\n"
             "%%3 = conv2d(%%0, %%1, %%2) {i=[1,1,1,1,0,0,0,0,0,2]} : f32[1,%d,%d,%d]  # expand (Conv)\n"
             "%%4 = const() : f32[3,3,%d,1] = %s\n"
             "%%5 = conv2d(%%3, %%4, %%2) {i=[%d,%d,1,1,1,1,%d,%d,1,2]} : f32[1,%d,%d,%d]  # dw (Conv)\n%s",
             proj ? 8 : 5, fetch_e ? "fetch \"e\" %3\n" : "", h, w, ce, hexf(h1, we, nwe), ce,
             hexf(h3, b, ce), h, w, ce, ce, hexf(h2, wd, nwd), s, s, pb, pr, oh, ow, ce, ptail);
    IrGraph *g = parse(text);
    for (int i = 0; i < h * w * 16; i++)
        xd[i] = (float)((i * 3) % 13 - 6) / 4.0f;
    float *e = malloc(sizeof(float) * (size_t)(h * w * ce)),
          *d = malloc(sizeof(float) * (size_t)(oh * ow * ce));
    IrNode *last = fetched(g, 0), *dw = proj ? last->inputs[0].node : last;
    run_conv(dw->inputs[0].node, xd, NULL, e);
    run_conv(dw, e, NULL, proj ? d : y0);
    if (proj)
        run_conv(last, d, NULL, y0);
    free(we), free(wd), free(wp), free(b), free(text), free(h1), free(h2), free(h3), free(h4), free(ptail);
    free(e), free(d);
    return g;
}

/* pass_dwfuse fuses the packed 1x1 expansion into its depthwise user where
 * the expanded tensor is at least 512 KB with rows at least 16 wide, and a
 * packed 1x1 projection into the depthwise conv it is the only user of
 * where the depthwise output is at least 512 KB; the fused reference
 * computes what the convs did; once. */
START_TEST(test_dwfuse_pass)
{
    static const struct {
        int hw, ce, s;
        bool proj;
        int fuse;
    } yes[] = {{32, 128, 1, false, TCRT_FUSE_EXPAND},
               {33, 128, 2, false, TCRT_FUSE_EXPAND},
               {32, 128, 1, true, TCRT_FUSE_EXPAND | TCRT_FUSE_PROJECT},
               {64, 128, 2, true, TCRT_FUSE_EXPAND | TCRT_FUSE_PROJECT}};
    for (size_t k = 0; k < sizeof yes / sizeof yes[0]; k++) {
        int hw = yes[k].hw, ce = yes[k].ce, o = (hw + yes[k].s - 1) / yes[k].s, co = yes[k].proj ? 24 : ce;
        float *xd = malloc(sizeof(float) * (size_t)(hw * hw * 16)),
              *y0 = malloc(sizeof(float) * (size_t)(o * o * co)),
              *y1 = malloc(sizeof(float) * (size_t)(o * o * co));
        IrGraph *g = dw_block_graph(hw, hw, ce, yes[k].s, yes[k].proj, false, xd, y0);
        ck_assert_int_eq(run_pass(g, pass_dwfuse), PASS_SAME); /* the 1x1 convs are not packed yet */
        ck_assert_int_eq(run_pass(g, pass_pack), PASS_CHANGED);
        ck_assert_int_eq(run_pass(g, pass_dwfuse), PASS_CHANGED);
        IrNode *c = fetched(g, 0);
        ck_assert_int_eq(count_op(g, OP_CONV2D), 1);
        ck_assert_int_eq(count_op(g, OP_CONST), 2); /* the fused filter and the depthwise bias */
        ck_assert_int_eq(c->p.i[TCRT_CONV_PACKED], TCRT_CONV_PACK_DWBLOCK);
        ck_assert_int_eq(c->p.i[TCRT_CONV_FUSE], yes[k].fuse);
        ck_assert(c->p.i[TCRT_CONV_COUT] == ce && c->p.i[TCRT_CONV_KH] == 3 && c->p.i[TCRT_CONV_KW] == 3 &&
                  c->p.i[TCRT_CONV_EACT] == TCRT_ACT_RELU6 && c->p.i[TCRT_CONV_ACT] == TCRT_ACT_RELU6 &&
                  c->p.i[TCRT_CONV_SH] == yes[k].s);
        if (yes[k].proj)
            ck_assert(c->p.i[TCRT_CONV_PCOUT] == 24 && c->p.i[TCRT_CONV_PACT] == TCRT_ACT_NONE);
        ck_assert_int_eq(c->inputs[0].node->op, OP_ARG);
        ck_assert_str_eq(c->origin, yes[k].proj ? "project" : "dw");
        run_conv(c, xd, NULL, y1);
        assert_floats(y1, y0, o * o * co, 1e-3);
        ck_assert_int_eq(run_pass(g, pass_dwfuse), PASS_SAME);
        ir_graph_free(g);
        free(xd), free(y0), free(y1);
    }
    /* not taken: the expansion fetched too (no projection); 8x8x128 with a
     * projection (256 KB expanded, 256 KB depthwise output); 100x12x128
     * (600 KB, but rows 12 wide) */
    static const struct {
        int h, w, ce;
        bool proj, fetch_e;
        int convs;
    } no[] = {{32, 32, 128, false, true, 2}, {8, 8, 128, true, false, 3}, {100, 12, 128, false, false, 2}};
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++) {
        float *xd = malloc(sizeof(float) * (size_t)(no[k].h * no[k].w * 16)),
              *y0 = malloc(sizeof(float) * (size_t)(no[k].h * no[k].w * no[k].ce));
        IrGraph *g = dw_block_graph(no[k].h, no[k].w, no[k].ce, 1, no[k].proj, no[k].fetch_e, xd, y0);
        ck_assert_int_eq(run_pass(g, pass_pack), PASS_CHANGED);
        ck_assert_int_eq(run_pass(g, pass_dwfuse), PASS_SAME);
        ck_assert_int_eq(count_op(g, OP_CONV2D), no[k].convs);
        ir_graph_free(g);
        free(xd), free(y0);
    }
    /* the expansion fetched, the projection after the plain depthwise conv
     * fused (32x32x128: 512 KB) */
    float *xd = malloc(sizeof(float) * 32 * 32 * 16), *y0 = malloc(sizeof(float) * 32 * 32 * 24),
          *y1 = malloc(sizeof(float) * 32 * 32 * 24);
    IrGraph *g = dw_block_graph(32, 32, 128, 1, true, true, xd, y0);
    ck_assert_int_eq(run_pass(g, pass_pack), PASS_CHANGED);
    ck_assert_int_eq(run_pass(g, pass_dwfuse), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_CONV2D), 2);
    IrNode *c = fetched(g, 0);
    ck_assert_int_eq(c->p.i[TCRT_CONV_FUSE], TCRT_FUSE_PROJECT);
    ck_assert_ptr_eq(c->inputs[0].node, fetched(g, 1));
    float *e = malloc(sizeof(float) * 32 * 32 * 128);
    run_conv(fetched(g, 1), xd, NULL, e);
    run_conv(c, e, NULL, y1);
    assert_floats(y1, y0, 32 * 32 * 24, 1e-3);
    ir_graph_free(g);
    free(xd), free(y0), free(y1), free(e);
}
END_TEST

/* A depthwise conv without a bias (TF's DepthwiseConv2dNative) before a
 * projection: fused with a zero bias made for it. */
START_TEST(test_dwfuse_no_bias)
{
    enum { HW = 32, CE = 128, CO = 24 };
    float *wd = malloc(sizeof(float) * 9 * CE), *wp = malloc(sizeof(float) * CE * CO), bp[CO];
    for (int i = 0; i < 9 * CE; i++)
        wd[i] = (float)((i * 5) % 9 - 4) / 8.0f;
    for (int i = 0; i < CE * CO; i++)
        wp[i] = (float)((i * 3) % 7 - 3) / 32.0f;
    for (int i = 0; i < CO; i++)
        bp[i] = (float)(i % 3) - 1.0f;
    size_t tn = (size_t)(9 * CE + CE * CO + CO) * 8 + 2048;
    char *text = malloc(tn), *h1 = malloc(9 * CE * 8 + 16), *h2 = malloc(CE * CO * 8 + 16), h3[CO * 8 + 16];
    snprintf(text, tn,
             "graph \"m\"\nfeed \"x\" %%0\nfetch \"y\" %%5\n%%0 = arg() : f32[1,%d,%d,%d]\n"
             "%%1 = const() : f32[3,3,%d,1] = %s\n"
             "%%2 = conv2d(%%0, %%1) {i=[1,1,1,1,1,1,1,1,1,0]} : f32[1,%d,%d,%d]\n"
             "%%3 = const() : f32[1,1,%d,%d] = %s\n%%4 = const() : f32[%d] = %s\n"
             "%%5 = conv2d(%%2, %%3, %%4) {i=[1,1,1,1,0,0,0,0,0,1]} : f32[1,%d,%d,%d]\n",
             HW, HW, CE, CE, hexf(h1, wd, 9 * CE), HW, HW, CE, CE, CO, hexf(h2, wp, CE * CO), CO,
             hexf(h3, bp, CO), HW, HW, CO);
    IrGraph *g = parse(text);
    float *xd = malloc(sizeof(float) * HW * HW * CE), *d = malloc(sizeof(float) * HW * HW * CE),
          *y0 = malloc(sizeof(float) * HW * HW * CO), *y1 = malloc(sizeof(float) * HW * HW * CO);
    for (int i = 0; i < HW * HW * CE; i++)
        xd[i] = (float)((i * 3) % 13 - 6) / 4.0f;
    run_conv(fetched(g, 0)->inputs[0].node, xd, NULL, d);
    run_conv(fetched(g, 0), d, NULL, y0);
    ck_assert_int_eq(run_pass(g, pass_pack), PASS_CHANGED);
    ck_assert_int_eq(run_pass(g, pass_dwfuse), PASS_CHANGED);
    IrNode *c = fetched(g, 0);
    ck_assert_int_eq(count_op(g, OP_CONV2D), 1);
    ck_assert(c->p.i[TCRT_CONV_FUSE] == TCRT_FUSE_PROJECT && c->p.i[TCRT_CONV_PCOUT] == CO &&
              c->p.i[TCRT_CONV_PACT] == TCRT_ACT_RELU && c->n_inputs == 3);
    const IrNode *b = c->inputs[2].node;
    ck_assert(b->op == OP_CONST && ir_value_type(c->inputs[2])->shape.dims[0] == CE);
    for (int i = 0; i < CE; i++)
        ck_assert(((const float *)b->data)[i] == 0.0f);
    run_conv(c, xd, NULL, y1);
    assert_floats(y1, y0, HW * HW * CO, 1e-3);
    ir_graph_free(g);
    free(wd), free(wp), free(text), free(h1), free(h2), free(xd), free(d), free(y0), free(y1);
}
END_TEST

/* ---- pair ---- */

/* x [1,2h,2w,c2] -> 1x1 stride-2 conv to 48 channels (bias; act dsact) =
 * r; h [1,h,w,c] -> 1x1 conv to 48 (bias, residual r, relu).  fetch_r: r
 * is fetched too.  y0: the result by the reference kernel, conv after
 * conv. */
static IrGraph *pair_graph(int hw, int c, int c2, int dsact, bool fetch_r, float *xd, float *hd, float *y0)
{
    enum { O = 48 };
    int nwd = c2 * O, nw3 = c * O;
    float *wd = malloc(sizeof(float) * (size_t)nwd), *w3 = malloc(sizeof(float) * (size_t)nw3), bd[O], b3[O];
    for (int i = 0; i < nwd; i++)
        wd[i] = (float)((i * 7) % 11 - 5) / 16.0f;
    for (int i = 0; i < nw3; i++)
        w3[i] = (float)((i * 5) % 9 - 4) / 8.0f;
    for (int i = 0; i < O; i++)
        bd[i] = (float)(i % 5) / 4.0f, b3[i] = (float)(i % 3) - 1.0f;
    size_t tn = (size_t)(nwd + nw3 + 2 * O) * 8 + 4096;
    char *text = malloc(tn), *h1 = malloc((size_t)nwd * 8 + 16), *h2 = malloc((size_t)nw3 * 8 + 16),
         h3[O * 8 + 16], h4[O * 8 + 16];
    snprintf(text, tn,
             "graph \"m\"\nfeed \"x\" %%0\nfeed \"h\" %%1\nfetch \"y\" %%7\n%s"
             "%%0 = arg() : f32[1,%d,%d,%d]\n%%1 = arg() : f32[1,%d,%d,%d]\n"
             "%%2 = const() : f32[1,1,%d,%d] = %s\n%%3 = const() : f32[%d] = %s\n"
             "%%4 = conv2d(%%0, %%2, %%3) {i=[2,2,1,1,0,0,0,0,0,%d]} : f32[1,%d,%d,%d]  # downsample (Conv)\n"
             "%%5 = const() : f32[1,1,%d,%d] = %s\n%%6 = const() : f32[%d] = %s\n"
             "%%7 = conv2d(%%1, %%5, %%6, %%4) {i=[1,1,1,1,0,0,0,0,0,1]} : f32[1,%d,%d,%d]  # conv3 (Conv)\n",
             fetch_r ? "fetch \"r\" %4\n" : "", 2 * hw, 2 * hw, c2, hw, hw, c, c2, O, hexf(h1, wd, nwd), O,
             hexf(h3, bd, O), dsact, hw, hw, O, c, O, hexf(h2, w3, nw3), O, hexf(h4, b3, O), hw, hw, O);
    IrGraph *g = parse(text);
    for (int i = 0; i < 4 * hw * hw * c2; i++)
        xd[i] = (float)((i * 3) % 13 - 6) / 4.0f;
    for (int i = 0; i < hw * hw * c; i++)
        hd[i] = (float)((i * 5) % 11 - 5) / 4.0f;
    float *r = malloc(sizeof(float) * (size_t)(hw * hw * O));
    IrNode *last = fetched(g, 0);
    run_conv(last->inputs[3].node, xd, NULL, r);
    run_conv(last, hd, r, y0);
    free(wd), free(w3), free(text), free(h1), free(h2), free(r);
    return g;
}

/* pass_pair joins a packed 1x1 conv and the packed 1x1 conv that makes its
 * residual (used only there, no activation) into one conv over both
 * inputs; the reference kernel on it computes what the two convs did. */
START_TEST(test_pair_pass)
{
    enum { HW = 4, O = 48 };
    float xd[4 * HW * HW * 64], hd[HW * HW * 32], y0[HW * HW * O], y1[HW * HW * O];
    IrGraph *g = pair_graph(HW, 32, 64, TCRT_ACT_NONE, false, xd, hd, y0);
    ck_assert_int_eq(run_pass(g, pass_pair), PASS_SAME); /* not packed yet */
    ck_assert_int_eq(run_pass(g, pass_pack), PASS_CHANGED);
    ck_assert_int_eq(run_pass(g, pass_pair), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_CONV2D), 1);
    ck_assert_int_eq(count_op(g, OP_CONST), 2); /* the joined filter and the summed bias */
    IrNode *c = fetched(g, 0);
    ck_assert(c->n_inputs == 4 && c->p.i[TCRT_CONV_X2S] == 2 && c->p.i[TCRT_CONV_SH] == 1 &&
              c->p.i[TCRT_CONV_PACKED] == TCRT_CONV_PACK_DIRECT && c->p.i[TCRT_CONV_ACT] == TCRT_ACT_RELU &&
              c->p.i[TCRT_CONV_COUT] == O);
    ck_assert_int_eq(ir_value_type(c->inputs[1])->shape.dims[3], 32 + 64);
    ck_assert(c->inputs[0].node->op == OP_ARG && ir_value_type(c->inputs[0])->shape.dims[3] == 32 &&
              c->inputs[3].node->op == OP_ARG && ir_value_type(c->inputs[3])->shape.dims[3] == 64);
    ck_assert_str_eq(c->origin, "conv3");
    run_conv(c, hd, xd, y1); /* input 3 is x */
    assert_floats(y1, y0, HW * HW * O, 1e-4);
    ck_assert_int_eq(run_pass(g, pass_pair), PASS_SAME);
    ir_graph_free(g);
    /* not joined: the shortcut fetched too, with an activation, or channel
     * counts whose gcd is below 16 (24 and 64: 8) */
    static const struct {
        int c, c2, act;
        bool fetch_r;
    } no[] = {{32, 64, TCRT_ACT_NONE, true}, {32, 64, TCRT_ACT_RELU, false}, {24, 64, TCRT_ACT_NONE, false}};
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++) {
        g = pair_graph(HW, no[k].c, no[k].c2, no[k].act, no[k].fetch_r, xd, hd, y0);
        ck_assert_int_eq(run_pass(g, pass_pack), PASS_CHANGED);
        ck_assert_int_eq(run_pass(g, pass_pair), PASS_SAME);
        ck_assert_int_eq(count_op(g, OP_CONV2D), 2);
        ir_graph_free(g);
    }
}
END_TEST

/* ---- the conv2d shape rule on packed weights and residuals ---- */

/* text must not parse, with an error message holding want. */
static void parse_fails(const char *text, const char *want)
{
    Status st = ST_INIT;
    ck_assert_ptr_null(ir_parse(text, "bad.ir", &st));
    ck_assert_msg(strstr(st.msg, want), "%s", st.msg);
}

/* text must parse (the shape rule accepts it). */
static void parse_ok(const char *text)
{
    Status st = ST_INIT;
    IrGraph *g = ir_parse(text, "ok.ir", &st);
    ck_assert_msg(g != NULL, "%s", st.msg);
    ir_graph_free(g);
}

START_TEST(test_conv_shape_rule_errors)
{
    /* residual of the wrong shape */
    parse_fails("%0 = arg() : f32[1,2,2,1]\n%1 = arg() {i=[1]} : f32[1,1,1,2]\n"
                "%2 = arg() {i=[2]} : f32[2]\n%3 = arg() {i=[3]} : f32[1,2,2,1]\n"
                "%4 = conv2d(%0, %1, %2, %3) {i=[1,1,1,1,0,0,0,0,0,0]} : f32[1,2,2,2]\n",
                "residual shape [1,2,2,1] does not match the output [1,2,2,2]");
    /* packed weights whose block count does not fit COUT */
    parse_fails("%0 = arg() : f32[1,2,2,1]\n%1 = arg() {i=[1]} : f32[2,1,1,1,16]\n"
                "%2 = conv2d(%0, %1) {i=[1,1,1,1,0,0,0,0,0,0,1,2]} : f32[1,2,2,2]\n",
                "packed filter [2,1,1,1,16] does not fit 2 output channels");
    /* Winograd weights of the wrong transform size, or with a stride */
    parse_fails("%0 = arg() : f32[1,4,4,1]\n%1 = arg() {i=[1]} : f32[1,6,6,1,16]\n"
                "%2 = conv2d(%0, %1) {i=[1,1,1,1,1,1,1,1,0,0,2,2]} : f32[1,4,4,2]\n",
                "Winograd filter [1,6,6,1,16] needs a 4x4 transform, strides and dilations 1");
    parse_fails("%0 = arg() : f32[1,4,4,1]\n%1 = arg() {i=[1]} : f32[1,6,6,1,16]\n"
                "%2 = conv2d(%0, %1) {i=[2,2,1,1,1,1,1,1,0,0,3,2]} : f32[1,2,2,2]\n",
                "needs a 6x6 transform, strides and dilations 1");
    /* a packed-weight kind the runtime does not know */
    parse_fails("%0 = arg() : f32[1,2,2,1]\n%1 = arg() {i=[1]} : f32[1,1,1,1,16]\n"
                "%2 = conv2d(%0, %1) {i=[1,1,1,1,0,0,0,0,0,0,5,2]} : f32[1,2,2,2]\n",
                "unknown packed filter kind 5");
    /* a fused depthwise filter (TCRT_CONV_PACK_DWBLOCK, expansion only) of
     * the wrong length: Cin 1 -> Ce 2 with a 3x3 window needs 16 + 2 + 18 =
     * 36 floats */
    parse_fails("%0 = arg() : f32[1,4,4,1]\n%1 = arg() {i=[1]} : f32[35]\n%2 = arg() {i=[2]} : f32[2]\n"
                "%3 = conv2d(%0, %1, %2) {i=[1,1,1,1,1,1,1,1,1,0,4,2,3,3,0,1]} : f32[1,4,4,2]\n",
                "fused depthwise filter [35] does not fit input [1,4,4,1] with fuse bits 1, "
                "2 depthwise channels, a 3x3 window and 0 projected channels");
    parse_ok("%0 = arg() : f32[1,4,4,1]\n%1 = arg() {i=[1]} : f32[36]\n%2 = arg() {i=[2]} : f32[2]\n"
             "%3 = conv2d(%0, %1, %2) {i=[2,2,1,1,1,1,0,0,1,0,4,2,3,3,2,1]} : f32[1,2,2,2]\n");
    /* its expansion activation is checked like the conv's */
    parse_fails("%0 = arg() : f32[1,4,4,1]\n%1 = arg() {i=[1]} : f32[36]\n%2 = arg() {i=[2]} : f32[2]\n"
                "%3 = conv2d(%0, %1, %2) {i=[1,1,1,1,1,1,1,1,1,0,4,2,3,3,9,1]} : f32[1,4,4,2]\n",
                "unknown fused activation 9");
    /* a projection only (fuse bits 2): Ce 2 -> Co 3 with a 3x3 window needs
     * 18 + 2*16 + 3 = 53 floats; the output has Co channels, and the input
     * Ce */
    parse_ok("%0 = arg() : f32[1,4,4,2]\n%1 = arg() {i=[1]} : f32[53]\n%2 = arg() {i=[2]} : f32[2]\n"
             "%3 = arg() {i=[3]} : f32[1,4,4,3]\n"
             "%4 = conv2d(%0, %1, %2, %3) {i=[1,1,1,1,1,1,1,1,1,0,4,2,3,3,0,2,3,1]} : f32[1,4,4,3]\n");
    parse_fails("%0 = arg() : f32[1,4,4,3]\n%1 = arg() {i=[1]} : f32[53]\n%2 = arg() {i=[2]} : f32[2]\n"
                "%3 = conv2d(%0, %1, %2) {i=[1,1,1,1,1,1,1,1,1,0,4,2,3,3,0,2,3,1]} : f32[1,4,4,3]\n",
                "fused depthwise filter [53] does not fit input [1,4,4,3] with fuse bits 2");
    /* conv pairs (TCRT_CONV_X2S = i[18]): x [1,2,2,16] and x2 [1,4,4,32] at
     * stride 2 with a [1,1,48,O] filter parse, plain and packed */
    parse_ok("%0 = arg() : f32[1,2,2,16]\n%1 = arg() {i=[1]} : f32[1,1,48,8]\n%2 = arg() {i=[2]} : f32[8]\n"
             "%3 = arg() {i=[3]} : f32[1,4,4,32]\n"
             "%4 = conv2d(%0, %1, %2, %3) {i=[1,1,1,1,0,0,0,0,0,1,0,0,0,0,0,0,0,0,2]} : f32[1,2,2,8]\n");
    parse_ok(
        "%0 = arg() : f32[1,2,2,16]\n%1 = arg() {i=[1]} : f32[1,1,1,48,16]\n%2 = arg() {i=[2]} : f32[8]\n"
        "%3 = arg() {i=[3]} : f32[1,3,3,32]\n"
        "%4 = conv2d(%0, %1, %2, %3) {i=[1,1,1,1,0,0,0,0,0,1,1,8,0,0,0,0,0,0,2]} : f32[1,2,2,8]\n");
    /* x2 too small or too large for the output at its stride */
    parse_fails(
        "%0 = arg() : f32[1,2,2,16]\n%1 = arg() {i=[1]} : f32[1,1,48,8]\n%2 = arg() {i=[2]} : f32[8]\n"
        "%3 = arg() {i=[3]} : f32[1,2,2,32]\n"
        "%4 = conv2d(%0, %1, %2, %3) {i=[1,1,1,1,0,0,0,0,0,1,0,0,0,0,0,0,0,0,2]} : f32[1,2,2,8]\n",
        "conv pair input [1,2,2,32] at stride 2 does not give the output [1,2,2,8]");
    parse_fails(
        "%0 = arg() : f32[1,2,2,16]\n%1 = arg() {i=[1]} : f32[1,1,48,8]\n%2 = arg() {i=[2]} : f32[8]\n"
        "%3 = arg() {i=[3]} : f32[1,5,4,32]\n"
        "%4 = conv2d(%0, %1, %2, %3) {i=[1,1,1,1,0,0,0,0,0,1,0,0,0,0,0,0,0,0,2]} : f32[1,2,2,8]\n",
        "conv pair input [1,5,4,32] at stride 2");
    /* a filter whose Cin is not both inputs' */
    parse_fails(
        "%0 = arg() : f32[1,2,2,16]\n%1 = arg() {i=[1]} : f32[1,1,40,8]\n%2 = arg() {i=[2]} : f32[8]\n"
        "%3 = arg() {i=[3]} : f32[1,4,4,32]\n"
        "%4 = conv2d(%0, %1, %2, %3) {i=[1,1,1,1,0,0,0,0,0,1,0,0,0,0,0,0,0,0,2]} : f32[1,2,2,8]\n",
        "conv pair filter [1,1,40,8] does not take inputs [1,2,2,16] and [1,4,4,32]");
    /* not 1x1, padded, or without the second input */
    parse_fails(
        "%0 = arg() : f32[1,2,2,16]\n%1 = arg() {i=[1]} : f32[3,3,48,8]\n%2 = arg() {i=[2]} : f32[8]\n"
        "%3 = arg() {i=[3]} : f32[1,4,4,32]\n"
        "%4 = conv2d(%0, %1, %2, %3) {i=[1,1,1,1,1,1,1,1,0,1,0,0,0,0,0,0,0,0,2]} : f32[1,2,2,8]\n",
        "conv pair needs a 1x1 filter without padding, got [3,3,48,8]");
    parse_fails(
        "%0 = arg() : f32[1,2,2,16]\n%1 = arg() {i=[1]} : f32[1,1,48,8]\n%2 = arg() {i=[2]} : f32[8]\n"
        "%3 = conv2d(%0, %1, %2) {i=[1,1,1,1,0,0,0,0,0,1,0,0,0,0,0,0,0,0,2]} : f32[1,2,2,8]\n",
        "conv pair (second-input stride 2) needs 4 inputs");
    /* a packed conv parses back (shape [1,2,2,17] from COUT) */
    parse_ok("%0 = arg() : f32[1,2,2,1]\n%1 = arg() {i=[1]} : f32[2,1,1,1,16]\n"
             "%2 = conv2d(%0, %1) {i=[1,1,1,1,0,0,0,0,0,0,1,17]} : f32[1,2,2,17]\n");
}
END_TEST

/* ---- the pipeline: regions and --disable-pass ---- */

/* p [1,2,2,1] -> NCHW -> relu -> NHWC -> 1x1 conv (w = [2,-1]) -> relu. */
static IrValue nchw_block(IrGraph *g, IrValue p)
{
    Status st = ST_INIT;
    IrParams to_nchw = {.i = {0, 3, 1, 2}}, to_nhwc = {.i = {0, 2, 3, 1}};
    IrValue t = ir_emit1(g, OP_TRANSPOSE, &p, 1, &to_nchw, NULL, &st);
    t = ir_unary(g, OP_RELU, t, &st);
    t = ir_emit1(g, OP_TRANSPOSE, &t, 1, &to_nhwc, NULL, &st);
    float w[2] = {2, -1};
    IrShape ws = ir_shape_make(4, (int64_t[]){1, 1, 1, 2});
    IrValue in[2] = {t, ir_const(g, TCRT_F32, &ws, w, &st)};
    IrParams cp = {.i = {1, 1, 1, 1, 0, 0, 0, 0, 0, 0}};
    IrValue c = ir_emit1(g, OP_CONV2D, in, 2, &cp, NULL, &st);
    IrValue y = ir_unary(g, OP_RELU, c, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    return y;
}

static void assert_fused_block(const IrGraph *g, bool packed)
{
    ck_assert_int_eq(count_op(g, OP_TRANSPOSE), 0);
    ck_assert_int_eq(count_op(g, OP_RELU), 1); /* the one before the conv */
    IrNode *c = find_op(g, OP_CONV2D);
    ck_assert_ptr_nonnull(c);
    ck_assert_int_eq(c->p.i[TCRT_CONV_ACT], TCRT_ACT_RELU);
    ck_assert_int_eq(c->p.i[TCRT_CONV_PACKED], packed);
}

START_TEST(test_pipeline_regions)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    ck_assert_ptr_nonnull(g);
    g->fold_on_build = false;
    IrType xt = {TCRT_F32, ir_shape_make(4, (int64_t[]){1, 2, 2, 1})};
    IrType bt = {TCRT_BOOL, ir_shape_make(0, NULL)};
    IrValue sel = ir_add_feed(g, "s", &bt, &st), x = ir_add_feed(g, "x", &xt, &st);
    IrGraph *br[2];
    for (int b = 0; b < 2; b++) {
        br[b] = ir_region_new(g, &st);
        ck_assert_ptr_nonnull(br[b]);
        IrValue p = ir_add_feed(br[b], "p", &xt, &st);
        ck_assert(ir_add_fetch(br[b], "y", nchw_block(br[b], p), &st));
    }
    IrValue cin[2] = {sel, x};
    IrNode *c = ir_emit_region(g, OP_COND, cin, 2, br, 2, &st);
    ck_assert_msg(c != NULL, "%s", st.msg);
    ck_assert(ir_add_fetch(g, "y", (IrValue){c, 0}, &st));
    PipelineOptions o = {.verify_each = true};
    ck_assert_msg(pass_run_pipeline(g, &o, &st), "%s", st.msg);
    IrNode *cond = find_op(g, OP_COND);
    ck_assert_ptr_nonnull(cond);
    for (int b = 0; b < 2; b++)
        assert_fused_block(cond->regions[b], true);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_pipeline_disable_new_passes)
{
    Status st = ST_INIT;
    IrType xt = {TCRT_F32, ir_shape_make(4, (int64_t[]){1, 2, 2, 1})};
    const char *all3[] = {"layout", "fuse", "pack"}, *pack[] = {"pack"};
    for (int k = 0; k < 3; k++) {
        IrGraph *g = ir_graph_new(NULL, &st);
        ck_assert_ptr_nonnull(g);
        g->fold_on_build = false;
        IrValue x = ir_add_feed(g, "x", &xt, &st);
        ck_assert(ir_add_fetch(g, "y", nchw_block(g, x), &st));
        PipelineOptions o = {.verify_each = true};
        if (k == 0) {
            o.disabled = all3;
            o.n_disabled = 3;
        } else if (k == 1) {
            o.disabled = pack;
            o.n_disabled = 1;
        }
        ck_assert_msg(pass_run_pipeline(g, &o, &st), "%s", st.msg);
        if (k == 0) { /* untouched: two transposes, two relus, a plain conv */
            ck_assert_int_eq(count_op(g, OP_TRANSPOSE), 2);
            ck_assert_int_eq(count_op(g, OP_RELU), 2);
            ck_assert_int_eq(find_op(g, OP_CONV2D)->p.i[TCRT_CONV_PACKED], 0);
        } else {
            assert_fused_block(g, k == 2);
        }
        ir_graph_free(g);
    }
}
END_TEST

/* ---- memplan: a packed conv's output over its residual ---- */

/* x [1,2,2,16] (a feed), r = relu(x), then a conv 16 -> 16 (packed 1x1,
 * Winograd 3x3 or unpacked 1x1 as `packed` says; zero weights: memplan
 * reads no values) of `cx` with bias and residual
 * `cr`, y = neg(conv) fetched, then `tail`.  Returns the
 * planned graph; %4 is the conv, %1 the residual. */
static IrGraph *inplace_graph(const char *cx, const char *cr, int packed, const char *fetches,
                              const char *tail)
{
    static char hw[4 * 36 * 256 * 2 + 16], hb[4 * 16 * 2 + 16], text[80000];
    static float w[36 * 256], b[16];
    /* the filter's layout: HWIO, packed 1x1, or a 3x3 (pad 1) as Winograd's
     * 4x4 or 6x6 transform */
    int a = packed == TCRT_CONV_PACK_WINO ? 4 : packed == TCRT_CONV_PACK_WINO4 ? 6 : 1, pad = a > 1;
    char wt[32];
    if (packed)
        snprintf(wt, sizeof wt, "f32[1,%d,%d,16,16]", a, a);
    else
        snprintf(wt, sizeof wt, "f32[1,1,16,16]");
    snprintf(text, sizeof text,
             "graph \"m\"\nfeed \"x\" %%0\nfetch \"y\" %%5\n%s"
             "%%0 = arg() : f32[1,2,2,16]\n"
             "%%1 = relu(%%0) : f32[1,2,2,16]\n"
             "%%2 = const() : %s = %s\n"
             "%%3 = const() : f32[16] = %s\n"
             "%%4 = conv2d(%s, %%2, %%3, %s) {i=[1,1,1,1,%d,%d,%d,%d,0,0,%d,16]} : f32[1,2,2,16]\n"
             "%%5 = neg(%%4) : f32[1,2,2,16]\n%s",
             fetches, wt, hexf(hw, w, a * a * 256), hexf(hb, b, 16), cx, cr, pad, pad, pad, pad, packed,
             tail);
    IrGraph *g = parse(text);
    run_pass(g, pass_memplan);
    return g;
}

static int64_t offset_of(const IrGraph *g, int id)
{
    IR_FOR_EACH(g, n)
    {
        if (n->id == id)
            return n->out[0].offset;
    }
    ck_abort_msg("no node %%%d", id);
    return -1;
}

START_TEST(test_memplan_residual_in_place)
{
    /* r dies at the packed conv: the output takes its buffer (direct and
     * Winograd layouts alike) */
    for (int pk = TCRT_CONV_PACK_DIRECT; pk <= TCRT_CONV_PACK_WINO4; pk++) {
        IrGraph *g = inplace_graph("%0", "%1", pk, "", "");
        ck_assert_int_eq(offset_of(g, 4), offset_of(g, 1));
        ir_graph_free(g);
    }
    /* not when r is fetched, read after the conv, also the conv's input,
     * or the conv is not packed (the unpacked path adds the residual after
     * its GEMM has written the output) */
    IrGraph *g = inplace_graph("%0", "%1", TCRT_CONV_PACK_DIRECT, "fetch \"r\" %1\n", "");
    ck_assert_int_ne(offset_of(g, 4), offset_of(g, 1));
    ir_graph_free(g);
    g = inplace_graph("%0", "%1", TCRT_CONV_PACK_DIRECT, "fetch \"z\" %6\n",
                      "%6 = add(%5, %1) : f32[1,2,2,16]\n");
    ck_assert_int_ne(offset_of(g, 4), offset_of(g, 1));
    ir_graph_free(g);
    g = inplace_graph("%1", "%1", TCRT_CONV_PACK_DIRECT, "", "");
    ck_assert_int_ne(offset_of(g, 4), offset_of(g, 1));
    ir_graph_free(g);
    g = inplace_graph("%0", "%1", 0, "", "");
    ck_assert_int_ne(offset_of(g, 4), offset_of(g, 1));
    ir_graph_free(g);
}
END_TEST

/* Kernel scratch (memplan): the workspaces of the Winograd convs (per-
 * thread slots) are one buffer at one offset, as large as the larger of
 * their own sizes (the runtime's tcrt_fast_conv2d_workspace on each), that
 * no activation overlaps; the direct 1x1 conv's workspace keeps its own
 * size and is planned like any buffer. */
static size_t own_workspace(const IrNode *n)
{
    tcrt_tensor in[4], out = tensor_of(&n->out[0].type, NULL);
    for (int k = 0; k < n->n_inputs; k++)
        in[k] = tensor_of(ir_value_type(n->inputs[k]), NULL);
    tcrt_params p;
    memcpy(p.i, n->p.i, sizeof p.i);
    memcpy(p.f, n->p.f, sizeof p.f);
    return tcrt_fast_conv2d_workspace(in, n->n_inputs, &out, &p);
}

START_TEST(test_memplan_kernel_scratch)
{
    enum { NA = 3 * 3 * 32 * 48, NB = 3 * 3 * 48 * 48, NC = 48 * 16 };
    static float w[NB];
    for (int i = 0; i < NB; i++)
        w[i] = (float)((i * 7) % 11) - 5.0f;
    size_t tn = (size_t)(NA + NB + NC) * 8 + 4096;
    char *text = malloc(tn), *ha = malloc((size_t)NA * 8 + 16), *hb = malloc((size_t)NB * 8 + 16),
         *hc = malloc((size_t)NC * 8 + 16);
    snprintf(text, tn,
             "graph \"m\"\nfeed \"x\" %%0\nfetch \"y\" %%6\n"
             "%%0 = arg() : f32[1,16,16,32]\n"
             "%%1 = const() : f32[3,3,32,48] = %s\n"
             "%%2 = conv2d(%%0, %%1) {i=[1,1,1,1,1,1,1,1,0,1]} : f32[1,16,16,48]  # a (Conv)\n"
             "%%3 = const() : f32[3,3,48,48] = %s\n"
             "%%4 = conv2d(%%2, %%3) {i=[1,1,1,1,1,1,1,1,0,1]} : f32[1,16,16,48]  # b (Conv)\n"
             "%%5 = const() : f32[1,1,48,16] = %s\n"
             "%%6 = conv2d(%%4, %%5) {i=[1,1,1,1,0,0,0,0,0,0]} : f32[1,16,16,16]  # c (Conv)\n",
             hexf(ha, w, NA), hexf(hb, w, NB), hexf(hc, w, NC));
    IrGraph *g = parse(text);
    run_pass(g, pass_winograd);
    run_pass(g, pass_pack);
    run_pass(g, pass_memplan);
    const IrNode *c = fetched(g, 0), *b = c->inputs[0].node, *a = b->inputs[0].node;
    ck_assert_int_eq(a->p.i[TCRT_CONV_PACKED], TCRT_CONV_PACK_WINO);
    ck_assert_int_eq(b->p.i[TCRT_CONV_PACKED], TCRT_CONV_PACK_WINO);
    ck_assert_int_eq(c->p.i[TCRT_CONV_PACKED], TCRT_CONV_PACK_DIRECT);
    size_t wa = own_workspace(a), wb = own_workspace(b), wc = own_workspace(c);
    ck_assert_uint_gt(wa, 0);
    ck_assert_uint_gt(wc, 0);
    ck_assert_uint_ne(wa, wb);
    int64_t want = (int64_t)(wa > wb ? wa : wb), w0 = a->workspace_offset, w1 = w0 + want;
    ck_assert_int_eq(a->workspace_bytes, want);
    ck_assert_int_eq(b->workspace_bytes, want);
    ck_assert_int_eq(b->workspace_offset, w0);
    ck_assert_int_eq(c->workspace_bytes, (int64_t)wc);
    ck_assert_int_ge(w0, 0);
    ck_assert_int_le(w1, g->arena_bytes);
    int checked = 0;
    IR_FOR_EACH(g, n)
    {
        if (n->op == OP_CONST)
            continue;
        int64_t o = n->out[0].offset, e = o + (int64_t)ir_type_bytes(&n->out[0].type);
        ck_assert_msg(e <= w0 || o >= w1, "%%%d [%lld, %lld) overlaps the scratch [%lld, %lld)", n->id,
                      (long long)o, (long long)e, (long long)w0, (long long)w1);
        checked++;
    }
    ck_assert_int_eq(checked, 4);
    int64_t c0 = c->workspace_offset, c1 = c0 + (int64_t)wc;
    ck_assert(c1 <= w0 || c0 >= w1);
    free(text), free(ha), free(hb), free(hc);
    ir_graph_free(g);
}
END_TEST

static Suite *rewrites_suite(void)
{
    Suite *s = suite_create("rewrites");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_layout_pair_cancelled);
    tcase_add_test(tc, test_layout_sinks_through_relu_add);
    tcase_add_test(tc, test_layout_reduce_and_copy);
    tcase_add_test(tc, test_layout_no_extra_transposes);
    tcase_add_test(tc, test_fuse_bias);
    tcase_add_test(tc, test_fuse_batchnorm_relu);
    tcase_add_test(tc, test_fuse_residual_relu);
    tcase_add_test(tc, test_fuse_relu6_leaky);
    tcase_add_test(tc, test_fuse_respects_users);
    tcase_add_test(tc, test_fuse_pad_into_conv);
    tcase_add_test(tc, test_fuse_pad_kept);
    tcase_add_test(tc, test_pack_matches_unpacked);
    tcase_add_test(tc, test_pack_skips_depthwise);
    tcase_add_test(tc, test_pack_matmul_as_conv);
    tcase_add_test(tc, test_pack_matmul_kept);
    tcase_add_test(tc, test_pack_split_sliced_matmul);
    tcase_add_test(tc, test_pack_split_kept);
    tcase_add_test(tc, test_winograd_pass);
    tcase_add_test(tc, test_dwfuse_pass);
    tcase_add_test(tc, test_dwfuse_no_bias);
    tcase_add_test(tc, test_pair_pass);
    tcase_add_test(tc, test_memplan_residual_in_place);
    tcase_add_test(tc, test_memplan_kernel_scratch);
    tcase_add_test(tc, test_conv_shape_rule_errors);
    tcase_add_test(tc, test_pipeline_regions);
    tcase_add_test(tc, test_pipeline_disable_new_passes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(rewrites_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
