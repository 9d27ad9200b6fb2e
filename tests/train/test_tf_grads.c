/* tests/train/test_tf_grads.c - tfcc's own gradients against the gradients
 * TensorFlow built into the corpus's training graphs (issue 6, item 3).
 *
 * A TF1 training graph carries its gradients as ops (tf.gradients wrote
 * MatMul_grad, ReluGrad, BroadcastGradientArgs, ... and fed the result to
 * ApplyGradientDescent / ApplyMomentum / ApplyAdam).  For each graph this
 * test
 *   1. finds every Apply* op in the GraphDef and its (variable, gradient)
 *      inputs,
 *   2. imports the graph with the batch bound at compile time (TfFeedSpec
 *      values), fetching the loss and every TF-built gradient tensor,
 *   3. builds tfcc's gradients of the same loss with respect to the same
 *      VARIABLE nodes (pass_grad_values: the per-primitive rules of
 *      passes/grad_rules.c, not TF's gradient ops),
 *   4. evaluates everything by the state pass (no assignment: the
 *      variables freeze into their initial values) and constant folding
 *      (the reference kernels),
 * and compares the two gradients of every variable elementwise
 * (|a - b| <= 1e-4 * max|a| + 1e-6: float32 sums in different orders).
 * The initial values are the models' checkpoints where they have one, else
 * their initializers (tfcc's deterministic random stream): the comparison
 * holds at whatever point the variables are.
 * test_lstm_loop checks gradients through a TF while loop (LSTM_S) against
 * finite differences: that graph has no TF-built gradients to compare with.
 * Argument: the ../shared/models folder (exit 77 when absent).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "compiler/frontend/frontend.h"
#include "compiler/tf/tf.h"
#include "passes/passes.h"

static const char *models_dir;

#define MAXV 32

/* A graph node's input with the control marker and output index removed. */
static void input_node(const char *in, char *buf, size_t n)
{
    snprintf(buf, n, "%s", in[0] == '^' ? in + 1 : in);
    char *colon = strrchr(buf, ':');
    if (colon)
        *colon = 0;
}

static const Tensorflow__NodeDef *find_node(const Tensorflow__GraphDef *gd, const char *name)
{
    for (size_t i = 0; i < gd->n_node; i++)
        if (!strcmp(gd->node[i]->name, name))
            return gd->node[i];
    return NULL;
}

/* The variable a ref input names, through Identity nodes. */
static void var_of(const Tensorflow__GraphDef *gd, const char *in, char *buf, size_t n)
{
    input_node(in, buf, n);
    for (int hops = 0; hops < 8; hops++) {
        const Tensorflow__NodeDef *d = find_node(gd, buf);
        if (!d || strcmp(d->op, "Identity") || d->n_input < 1)
            return;
        input_node(d->input[0], buf, n);
    }
}

/* Index of the gradient input of a TF optimizer op, -1 for other ops. */
static int grad_input(const char *op)
{
    if (!strcmp(op, "ApplyGradientDescent"))
        return 2; /* var, alpha, delta */
    if (!strcmp(op, "ApplyMomentum"))
        return 3; /* var, accum, lr, grad, momentum */
    if (!strcmp(op, "ApplyAdam"))
        return 9; /* var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad */
    return -1;
}

typedef struct Feed {
    const char *name;
    tcrt_dtype dtype;
    int rank;
    int64_t dims[4];
    void *data;
} Feed;

static void check_graph(const char *rel, const char *ckpt_rel, const char *loss, const Feed *feeds, int n_feeds)
{
    char path[1200], ckpt[1200];
    snprintf(path, sizeof path, "%s/%s", models_dir, rel);
    snprintf(ckpt, sizeof ckpt, "%s/%s", models_dir, ckpt_rel ? ckpt_rel : "");
    Status st = ST_INIT;
    FeModel m;
    memset(&m, 0, sizeof m);
    ck_assert_msg(fe_load(path, &m, &st), "%s", st.msg);
    const Tensorflow__GraphDef *gd = m.graph;

    /* 1. the optimizer ops' (variable, gradient) pairs */
    char vars[MAXV][256], grads[MAXV][256];
    int nv = 0;
    for (size_t i = 0; i < gd->n_node && nv < MAXV; i++) {
        int gi = grad_input(gd->node[i]->op);
        if (gi < 0 || (size_t)gi >= gd->node[i]->n_input)
            continue;
        var_of(gd, gd->node[i]->input[0], vars[nv], sizeof vars[nv]);
        snprintf(grads[nv], sizeof grads[nv], "%s", gd->node[i]->input[gi]);
        nv++;
    }
    ck_assert_msg(nv > 0, "%s: no optimizer op found", rel);

    /* 2. import: the loss and the TF-built gradients, the batch bound */
    const char *fetches[MAXV + 1];
    fetches[0] = loss;
    for (int k = 0; k < nv; k++)
        fetches[k + 1] = grads[k];
    TfFeedSpec specs[8];
    tcrt_tensor values[8];
    memset(specs, 0, sizeof specs);
    for (int i = 0; i < n_feeds; i++) {
        values[i] = (tcrt_tensor){feeds[i].data, feeds[i].dtype, feeds[i].rank, {0}};
        memcpy(values[i].dims, feeds[i].dims, sizeof feeds[i].dims);
        specs[i].name = feeds[i].name;
        specs[i].has_shape = true;
        specs[i].shape = ir_shape_make(feeds[i].rank, feeds[i].dims);
        specs[i].dtype = feeds[i].dtype;
        specs[i].value = &values[i];
    }
    TfImportOptions io = {.file = path, .feeds = specs, .n_feeds = n_feeds, .fetches = fetches,
                          .n_fetches = nv + 1, .checkpoint = ckpt_rel ? ckpt : NULL, .meta = m.meta};
    IrGraph *g = tf_import(gd, &io, &st);
    ck_assert_msg(g, "%s: %s", rel, st.msg);

    /* 3. tfcc's gradients with respect to the same variables */
    IrValue wrt[MAXV], mine[MAXV];
    bool has[MAXV];
    for (int k = 0; k < nv; k++) {
        wrt[k] = (IrValue){NULL, 0};
        IR_FOR_EACH(g, n) {
            if (n->op == OP_VARIABLE && n->origin && !strcmp(n->origin, vars[k]))
                wrt[k] = (IrValue){n, 0};
        }
        ck_assert_msg(wrt[k].node, "%s: no variable '%s' in the imported graph", rel, vars[k]);
    }
    ck_assert_msg(pass_grad_values(g, g->fetches[0].value, wrt, nv, mine, has, &st), "%s: %s", rel, st.msg);
    for (int k = 0; k < nv; k++) {
        ck_assert_msg(has[k], "%s: no gradient path to '%s'", rel, vars[k]);
        ck_assert(ir_add_fetch(g, "tfcc_grad", mine[k], &st));
    }

    /* 4. evaluate: freeze the variables, fold everything */
    PassCtx cx;
    arena_init(&cx.scratch, NULL);
    cx.st = &st;
    ck_assert_msg(pass_state(g, &cx) != PASS_FAILED, "%s: %s", rel, st.msg);
    arena_reset(&cx.scratch);
    ck_assert_msg(pass_fold(g, &cx) != PASS_FAILED, "%s: %s", rel, st.msg);
    arena_reset(&cx.scratch);

    for (int k = 0; k < nv; k++) {
        IrValue a = g->fetches[1 + k].value, b = g->fetches[1 + nv + k].value;
        ck_assert_msg(a.node->op == OP_CONST && b.node->op == OP_CONST, "%s: '%s' did not evaluate (%s, %s)", rel,
                      vars[k], ir_op_name(a.node->op), ir_op_name(b.node->op));
        const IrType *ta = ir_value_type(a), *tb = ir_value_type(b);
        ck_assert_int_eq(ta->dtype, TCRT_F32);
        ck_assert_int_eq(tb->dtype, TCRT_F32);
        int64_t cnt = ir_shape_count(&ta->shape);
        ck_assert_msg(ir_shape_eq(&ta->shape, &tb->shape), "%s: '%s' gradient shapes differ", rel, vars[k]);
        const float *x = a.node->data, *y = b.node->data;
        double amax = 0, worst = 0;
        for (int64_t i = 0; i < cnt; i++)
            amax = fmax(amax, fabs(x[i]));
        for (int64_t i = 0; i < cnt; i++) {
            double d = fabs((double)x[i] - y[i]);
            worst = fmax(worst, d);
            ck_assert_msg(d <= 1e-4 * amax + 1e-6, "%s: d loss/d '%s'[%lld]: TF-built %.9g, tfcc %.9g", rel,
                          vars[k], (long long)i, x[i], y[i]);
        }
        printf("  %s: d %s/d %s (%lld values, max |g| %.3g): max difference %.3g\n", rel, loss, vars[k],
               (long long)cnt, amax, worst);
        ck_assert_msg(amax > 0, "%s: the gradient of '%s' is all zeros: a vacuous comparison", rel, vars[k]);
    }
    ir_graph_free(g);
    fe_model_free(&m);
}

/* tf2onnx's regression checkpoint: pred = W*X + b, loss = sum((pred -
 * Y)^2) / (2n), GradientDescent; W and b from its checkpoint. */
START_TEST(test_regression)
{
    static float x[8], y[8];
    for (int i = 0; i < 8; i++) {
        x[i] = (float)i / 8;
        y[i] = 3 * x[i] + 2;
    }
    Feed f[2] = {{"X:0", TCRT_F32, 1, {8}, x}, {"Y:0", TCRT_F32, 1, {8}, y}};
    check_graph("github-tf2onnx/regression/checkpoint/model.meta", "github-tf2onnx/regression/checkpoint/model",
                "truediv", f, 2);
}
END_TEST

/* TensorFlow.NET's xor: Relu and Sigmoid layers, mean squared error
 * against the int32 labels cast to float (ReluGrad, SigmoidGrad, MatMul
 * gradients); initial weights from tfcc's TruncatedNormal stream. */
START_TEST(test_xor)
{
    static float x[8] = {0, 0, 0, 1, 1, 0, 1, 1};
    static int32_t y[4] = {0, 1, 1, 0};
    Feed f[2] = {{"Placeholder", TCRT_F32, 2, {4, 2}, x}, {"Placeholder_1", TCRT_I32, 1, {4}, y}};
    check_graph("github-tfnet/xor/xor.meta", NULL, "loss", f, 2);
}
END_TEST

/* ML.NET's mnist_lr_model: softmax regression, cross entropy (Softmax,
 * Log, Mean and their TF gradients), weights from its checkpoint; one-hot
 * "images" where class c lights pixels 70c..70c+69. */
START_TEST(test_mnist_lr)
{
    static float img[16 * 784], lab[16 * 10];
    for (int s = 0; s < 16; s++) {
        int c = s % 10;
        for (int k = 70 * c; k < 70 * c + 70; k++)
            img[s * 784 + k] = 1;
        lab[s * 10 + c] = 1;
    }
    Feed f[2] = {{"Features:0", TCRT_F32, 2, {16, 784}, img}, {"Label:0", TCRT_F32, 2, {16, 10}, lab}};
    check_graph("github-mlnet-testdata/mnist_lr_model/saved_model.pb",
                "github-mlnet-testdata/mnist_lr_model/variables/variables", "Loss", f, 2);
}
END_TEST

/* ML.NET's cifar_model (TF 1.10): conv2d + relu + dense layers, a hinge
 * loss on one-hot labels, Adam (Conv2DBackpropFilter/Input, ReluGrad,
 * BiasAdd and MatMul gradients); weights from its checkpoint.  Two images
 * with a smooth pattern, labels 3 and 7. */
START_TEST(test_cifar)
{
    static float img[2 * 32 * 32 * 3];
    for (int i = 0; i < 2 * 32 * 32 * 3; i++)
        img[i] = (float)((i * 37) % 101) / 101.0f;
    static int64_t lab[2] = {3, 7};
    Feed f[2] = {{"Input:0", TCRT_F32, 4, {2, 32, 32, 3}, img}, {"Placeholder:0", TCRT_I64, 1, {2}, lab}};
    check_graph("github-mlnet-testdata/cifar_model/model.ckpt.meta", "github-mlnet-testdata/cifar_model/model.ckpt",
                "hinge_loss/value", f, 2);
}
END_TEST

/* ---- through a TensorFlow while loop ----
 * ML-KWS LSTM_S (TF1 dynamic_rnn: a v1 while loop over 25 time steps with
 * TensorArrays) has no loss and no TF-built gradients, so tfcc's gradient
 * of L = sum(r * log(softmax)) (r fixed weights) with respect to the LSTM
 * kernel (the largest float constant, a loop operand) is checked against
 * central finite differences of the same compiled loss (float32: step
 * 1e-2, relative error below 5%), after checking that the forward values
 * the unrolled graph folds to match the TF.js reference output. */
typedef struct LstmCase {
    FeModel m;
    tcrt_tensor in, ref;
    const char *path;
} LstmCase;

/* Imports the graph with the reference input bound, adds element j += h to
 * the kernel, returns L (and with grad, d L / d kernel and the softmax). */
static double lstm_loss(LstmCase *lc, int64_t j, double h, float *grad, int64_t *count, float *probs)
{
    Status st = ST_INIT;
    TfFeedSpec spec;
    memset(&spec, 0, sizeof spec);
    spec.name = "Reshape:0";
    spec.has_shape = true;
    spec.shape = ir_shape_make(2, (int64_t[]){1, 250});
    spec.dtype = TCRT_F32;
    spec.value = &lc->in;
    const char *fetches[1] = {"labels_softmax"};
    TfImportOptions io = {.file = lc->path, .feeds = &spec, .n_feeds = 1, .fetches = fetches, .n_fetches = 1};
    IrGraph *g = tf_import(lc->m.graph, &io, &st);
    ck_assert_msg(g, "%s", st.msg);
    IrValue w = {NULL, 0};
    IR_FOR_EACH(g, n) {
        if (n->op == OP_CONST && n->out[0].type.dtype == TCRT_F32 &&
            (!w.node || ir_shape_count(&n->out[0].type.shape) > ir_shape_count(&w.node->out[0].type.shape)))
            w = (IrValue){n, 0};
    }
    ck_assert_ptr_nonnull(w.node);
    *count = ir_shape_count(&w.node->out[0].type.shape);
    ((float *)w.node->data)[j] += (float)h;
    float r[12];
    for (int i = 0; i < 12; i++)
        r[i] = 0.3f + 0.1f * (float)i;
    IrShape rs = ir_shape_make(2, (int64_t[]){1, 12});
    IrValue pr = ir_binary(g, OP_MUL, ir_unary(g, OP_LOG, g->fetches[0].value, &st), ir_const(g, TCRT_F32, &rs, r, &st),
                           &st);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 3;
    IrValue l = ir_emit1(g, OP_REDUCE_SUM, &pr, 1, &p, NULL, &st);
    ck_assert_msg(l.node && ir_add_fetch(g, "L", l, &st), "%s", st.msg);
    { /* also for the finite differences: building the gradient unrolls the loop, which folding needs */
        IrValue gr;
        bool has;
        ck_assert_msg(pass_grad_values(g, l, &w, 1, &gr, &has, &st), "%s", st.msg);
        ck_assert(has && ir_add_fetch(g, "G", gr, &st));
        int n_while = 0;
        IR_FOR_EACH(g, n) {
            n_while += n->op == OP_WHILE;
        }
        ck_assert_int_eq(n_while, 0); /* unrolled for the gradient */
    }
    /* evaluate node by node (pass_fold stops at its folding budget on a
     * graph this size; a dead node's constant is not kept) */
    for (int i = 0; i < g->n_nodes; i++) {
        IrNode *n = g->nodes[i];
        if (!n || n->dead || n->op == OP_CONST || n->op == OP_ARG)
            continue;
        IrValue o[4];
        ck_assert_msg(ir_fold_node(g, n, o, &st), "cannot evaluate %s (node '%s'): %s", ir_op_name(n->op),
                      n->origin ? n->origin : "?", st.msg);
        for (int q = 0; q < n->n_outputs; q++)
            ir_replace_uses(g, (IrValue){n, q}, o[q]);
        n->dead = true;
    }
    for (int i = 0; i < g->n_fetches; i++)
        ck_assert_msg(g->fetches[i].value.node->op == OP_CONST, "fetch %d did not fold (%s)", i,
                      ir_op_name(g->fetches[i].value.node->op));
    double L = ((const float *)g->fetches[1].value.node->data)[0];
    if (grad)
        memcpy(grad, g->fetches[2].value.node->data, sizeof(float) * (size_t)*count);
    if (probs)
        memcpy(probs, g->fetches[0].value.node->data, sizeof(float) * 12);
    ir_graph_free(g);
    return L;
}

START_TEST(test_lstm_loop)
{
    static LstmCase lc;
    char path[1200], in[1200], ref[1200], err[256];
    snprintf(path, sizeof path, "%s/github-ml-kws/LSTM_S/LSTM_S.pb", models_dir);
    snprintf(in, sizeof in, "%s/github-ml-kws/LSTM_S/reference/LSTM_S/input_0.npy", models_dir);
    snprintf(ref, sizeof ref, "%s/github-ml-kws/LSTM_S/reference/LSTM_S/output_0.npy", models_dir);
    Status st = ST_INIT;
    lc.path = path;
    ck_assert_msg(fe_load(path, &lc.m, &st), "%s", st.msg);
    ck_assert_msg(tcrt_npy_read(in, &lc.in, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_msg(tcrt_npy_read(ref, &lc.ref, err, sizeof err) == TCRT_OK, "%s", err);
    ck_assert_int_eq(tcrt_tensor_count(&lc.in), 250);
    lc.in.rank = 2;
    lc.in.dims[0] = 1;
    lc.in.dims[1] = 250;
    static float grad[1 << 17];
    float probs[12];
    int64_t count;
    lstm_loss(&lc, 0, 0, grad, &count, probs);
    ck_assert_int_le(count, 1 << 17);
    double fwd = 0;
    for (int i = 0; i < 12; i++)
        fwd = fmax(fwd, fabs(probs[i] - ((const float *)lc.ref.data)[i]));
    ck_assert_msg(fwd < 1e-5, "unrolled forward differs from the TF.js reference by %g", fwd);
    double worst = 0;
    bool nonzero = false;
    for (int t = 0; t < 4; t++) {
        int64_t j = (t * 7919 + 13) % count;
        double h = 1e-2, lp = lstm_loss(&lc, j, h, NULL, &count, NULL), lm = lstm_loss(&lc, j, -h, NULL, &count, NULL);
        double fd = (lp - lm) / (2 * h), e = fabs(fd - grad[j]) / (fabs(fd) + fabs(grad[j]) + 1e-3);
        worst = fmax(worst, e);
        nonzero |= fabs(grad[j]) > 1e-4;
        ck_assert_msg(e < 0.05, "d L / d kernel[%lld]: tfcc %.6g, finite difference %.6g", (long long)j, grad[j], fd);
    }
    ck_assert_msg(nonzero, "every checked gradient is ~0: a vacuous comparison");
    printf("  LSTM_S: forward vs reference %.3g; d L/d kernel (%lld values) vs finite differences: worst "
           "relative error %.3g\n",
           fwd, (long long)count, worst);
    free(lc.in.data);
    free(lc.ref.data);
    fe_model_free(&lc.m);
}
END_TEST

int main(int argc, char **argv)
{
    struct stat sb;
    models_dir = argc > 1 ? argv[1] : NULL;
    if (!models_dir || stat(models_dir, &sb) != 0) {
        printf("tf_grads: %s not found; skipped\n", models_dir ? models_dir : "(no models folder given)");
        return 77;
    }
    Suite *s = suite_create("tf_grads");
    TCase *tc = tcase_create("corpus");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_regression);
    tcase_add_test(tc, test_xor);
    tcase_add_test(tc, test_mnist_lr);
    tcase_add_test(tc, test_cifar);
    tcase_add_test(tc, test_lstm_loop);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
