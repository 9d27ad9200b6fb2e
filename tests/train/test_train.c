/* tests/train/test_train.c - training end to end: `tfcc compile --loss
 * --optimizer --trainable` on frozen GraphDefs written here, the executable
 * run with --steps, and the loss it logs checked against a stated bound.
 *
 * Models (text GraphDefs with Const weights from a fixed-seed LCG, turned
 * into variables by --trainable all):
 *   mlp: x[64,2] -> MatMul 2x8 + BiasAdd -> Tanh -> MatMul 8x2 + BiasAdd ->
 *        softmax cross-entropy (-mean(sum(labels * LogSoftmax(z), 1)));
 *        data: 64 points uniform in [-1,1]^2, class x0 + 0.5 x1 > 0, points
 *        nearer the boundary than 0.1 resampled (linearly separable).
 *   cnn: x[16,6,6,1] -> Conv2D 3x3x1x4 SAME + BiasAdd -> Relu -> MaxPool 2x2
 *        -> Reshape [16,36] -> MatMul 36x2 + BiasAdd -> the same loss;
 *        data: a vertical (class 0) or horizontal (class 1) bar of ones at a
 *        random row/column plus uniform noise in [0, 0.2).
 *   mlp_cond: the mlp with p ? tanh : relu through a v1 tf.cond (fed bool
 *        p), trained with p true and with p false (the gradient of the cond
 *        region is a cond region).
 *   rnn: a TF1 tf.while_loop RNN over 4 time steps (h = tanh(x_t Wx + h Wh
 *        + b), x_t gathered by the loop counter, TF1 variables entered into
 *        the loop) -> MatMul 8x2 + BiasAdd -> the same loss; trained with
 *        --loss --optimizer (the gradient unrolls the loop); data: class 1
 *        when the first feature summed over the 4 steps is positive.
 * Bounds (hand-chosen, generous): the logged loss at the last step is below
 * 0.1 and below a tenth of the first step's.
 * Driver errors: an unknown optimizer key, --optimizer without --loss, a
 * loss that is not a scalar, a --trainable name that is not a constant
 * (messages pinned).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tcrt.h"
#include "tests/tfcc_inproc.h"

static char tmp_dir[] = "/tmp/tfcc-train-XXXXXX";

#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "missing \"%s\" in:\n%s", (sub), (s))

static uint64_t rng = 42;
static double rnd(void) /* [0, 1) */
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* ---- GraphDef text ---- */

static void ph(FILE *f, const char *name, const int64_t *dims, int rank)
{
    fprintf(f, "node { name: \"%s\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_FLOAT } }\n",
            name);
    fprintf(f, "  attr { key: \"shape\" value { shape {");
    for (int d = 0; d < rank; d++)
        fprintf(f, " dim { size: %lld }", (long long)dims[d]);
    fprintf(f, " } } } }\n");
}

/* float Const with values uniform in [-scale, scale) (scale 0: zeros) */
static void weights(FILE *f, const char *name, const int64_t *dims, int rank, double scale)
{
    int64_t n = 1;
    fprintf(f, "node { name: \"%s\" op: \"Const\" attr { key: \"dtype\" value { type: DT_FLOAT } }\n", name);
    fprintf(f, "  attr { key: \"value\" value { tensor { dtype: DT_FLOAT tensor_shape {");
    for (int d = 0; d < rank; d++) {
        fprintf(f, " dim { size: %lld }", (long long)dims[d]);
        n *= dims[d];
    }
    fprintf(f, " }");
    for (int64_t i = 0; i < n; i++)
        fprintf(f, " float_val: %.6f", scale * (2 * rnd() - 1));
    fprintf(f, " } } } }\n");
}

static void int_const(FILE *f, const char *name, const int *v, int n)
{
    fprintf(f, "node { name: \"%s\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } }\n", name);
    fprintf(f, "  attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: %d } }",
            n);
    for (int i = 0; i < n; i++)
        fprintf(f, " int_val: %d", v[i]);
    fprintf(f, " } } } }\n");
}

static void op2(FILE *f, const char *name, const char *op, const char *a, const char *b)
{
    fprintf(f,
            "node { name: \"%s\" op: \"%s\" input: \"%s\" input: \"%s\" attr { key: \"T\" value { type: "
            "DT_FLOAT } } }\n",
            name, op, a, b);
}

static void op1(FILE *f, const char *name, const char *op, const char *a)
{
    fprintf(f,
            "node { name: \"%s\" op: \"%s\" input: \"%s\" attr { key: \"T\" value { type: DT_FLOAT } } }\n",
            name, op, a);
}

/* loss = -mean(sum(labels * LogSoftmax(logits), 1)) */
static void xent(FILE *f, const char *logits)
{
    op1(f, "logp", "LogSoftmax", logits);
    op2(f, "lp", "Mul", "labels", "logp");
    int one[1] = {1}, zero[1] = {0};
    int_const(f, "axis1", one, 1);
    int_const(f, "axis0", zero, 1);
    fprintf(
        f,
        "node { name: \"rowsum\" op: \"Sum\" input: \"lp\" input: \"axis1\" attr { key: \"T\" value { type: "
        "DT_FLOAT } } attr { key: \"Tidx\" value { type: DT_INT32 } } }\n");
    fprintf(f, "node { name: \"mean\" op: \"Mean\" input: \"rowsum\" input: \"axis0\" attr { key: \"T\" "
               "value { type: "
               "DT_FLOAT } } attr { key: \"Tidx\" value { type: DT_INT32 } } }\n");
    op1(f, "loss", "Neg", "mean");
}

static void write_mlp(const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    rng = 7;
    ph(f, "x", (int64_t[]){64, 2}, 2);
    ph(f, "labels", (int64_t[]){64, 2}, 2);
    weights(f, "w1", (int64_t[]){2, 8}, 2, 0.8);
    weights(f, "b1", (int64_t[]){8}, 1, 0.1);
    weights(f, "w2", (int64_t[]){8, 2}, 2, 0.8);
    weights(f, "b2", (int64_t[]){2}, 1, 0.1);
    op2(f, "h", "MatMul", "x", "w1");
    op2(f, "hb", "BiasAdd", "h", "b1");
    op1(f, "a", "Tanh", "hb");
    op2(f, "z", "MatMul", "a", "w2");
    op2(f, "zb", "BiasAdd", "z", "b2");
    xent(f, "zb");
    fclose(f);
}

/* the mlp with its activation chosen by a fed bool through a v1 tf.cond:
 * p ? tanh(h) : relu(h) (Switch/Merge, functionalized into a cond region) */
static void write_mlp_cond(const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    rng = 7;
    ph(f, "x", (int64_t[]){64, 2}, 2);
    ph(f, "labels", (int64_t[]){64, 2}, 2);
    fprintf(f, "node { name: \"p\" op: \"Placeholder\" attr { key: \"dtype\" value { type: DT_BOOL } }\n"
               "  attr { key: \"shape\" value { shape { } } } }\n");
    weights(f, "w1", (int64_t[]){2, 8}, 2, 0.8);
    weights(f, "b1", (int64_t[]){8}, 1, 0.1);
    weights(f, "w2", (int64_t[]){8, 2}, 2, 0.8);
    weights(f, "b2", (int64_t[]){2}, 1, 0.1);
    op2(f, "h", "MatMul", "x", "w1");
    op2(f, "hb", "BiasAdd", "h", "b1");
    fprintf(
        f,
        "node { name: \"cond/Switch\" op: \"Switch\" input: \"p\" input: \"p\" attr { key: \"T\" value { "
        "type: DT_BOOL } } }\n"
        "node { name: \"cond/switch_t\" op: \"Identity\" input: \"cond/Switch:1\" attr { key: \"T\" value { "
        "type: DT_BOOL } } }\n"
        "node { name: \"cond/switch_f\" op: \"Identity\" input: \"cond/Switch\" attr { key: \"T\" value { "
        "type: DT_BOOL } } }\n"
        "node { name: \"cond/pred_id\" op: \"Identity\" input: \"p\" attr { key: \"T\" value { type: "
        "DT_BOOL } } }\n");
    op2(f, "cond/t/Switch", "Switch", "hb", "cond/pred_id");
    op1(f, "cond/t", "Tanh", "cond/t/Switch:1");
    op2(f, "cond/f/Switch", "Switch", "hb", "cond/pred_id");
    op1(f, "cond/f", "Relu", "cond/f/Switch");
    fprintf(f,
            "node { name: \"cond/Merge\" op: \"Merge\" input: \"cond/f\" input: \"cond/t\" attr { key: \"T\" "
            "value { type: DT_FLOAT } } attr { key: \"N\" value { i: 2 } } }\n");
    op2(f, "z", "MatMul", "cond/Merge", "w2");
    op2(f, "zb", "BiasAdd", "z", "b2");
    xent(f, "zb");
    fclose(f);
}

static void write_cnn(const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    rng = 11;
    ph(f, "x", (int64_t[]){16, 6, 6, 1}, 4);
    ph(f, "labels", (int64_t[]){16, 2}, 2);
    weights(f, "k", (int64_t[]){3, 3, 1, 4}, 4, 0.5);
    weights(f, "kb", (int64_t[]){4}, 1, 0.1);
    weights(f, "w", (int64_t[]){36, 2}, 2, 0.3);
    weights(f, "b", (int64_t[]){2}, 1, 0.1);
    fprintf(f,
            "node { name: \"conv\" op: \"Conv2D\" input: \"x\" input: \"k\" attr { key: \"T\" value { type: "
            "DT_FLOAT } }\n  attr { key: \"strides\" value { list { i: 1 i: 1 i: 1 i: 1 } } } attr { key: "
            "\"padding\" value { s: \"SAME\" } } }\n");
    op2(f, "convb", "BiasAdd", "conv", "kb");
    op1(f, "act", "Relu", "convb");
    fprintf(
        f,
        "node { name: \"pool\" op: \"MaxPool\" input: \"act\" attr { key: \"T\" value { type: DT_FLOAT } }\n"
        "  attr { key: \"ksize\" value { list { i: 1 i: 2 i: 2 i: 1 } } } attr { key: \"strides\" value { "
        "list { i: 1 i: 2 i: 2 i: 1 } } } attr { key: \"padding\" value { s: \"VALID\" } } }\n");
    int shape[2] = {16, 36};
    int_const(f, "flat_shape", shape, 2);
    fprintf(f, "node { name: \"flat\" op: \"Reshape\" input: \"pool\" input: \"flat_shape\" attr { key: "
               "\"T\" value { "
               "type: DT_FLOAT } } attr { key: \"Tshape\" value { type: DT_INT32 } } }\n");
    op2(f, "z", "MatMul", "flat", "w");
    op2(f, "zb", "BiasAdd", "z", "b");
    xent(f, "zb");
    fclose(f);
}

/* TF1 variable NAME (VariableV2, NAME/initial_value uniform in [-scale,
 * scale), NAME/Assign, read as NAME/read) */
static void tf_variable(FILE *f, const char *name, const int64_t *dims, int rank, double scale)
{
    char iv[128];
    fprintf(f, "node { name: \"%s\" op: \"VariableV2\" attr { key: \"dtype\" value { type: DT_FLOAT } }\n",
            name);
    fprintf(f, "  attr { key: \"shape\" value { shape {");
    for (int d = 0; d < rank; d++)
        fprintf(f, " dim { size: %lld }", (long long)dims[d]);
    fprintf(f, " } } } }\n");
    snprintf(iv, sizeof iv, "%s/initial_value", name);
    weights(f, iv, dims, rank, scale);
    fprintf(f,
            "node { name: \"%s/Assign\" op: \"Assign\" input: \"%s\" input: \"%s\" attr { key: \"T\" value { "
            "type: DT_FLOAT } } }\n",
            name, name, iv);
    fprintf(
        f,
        "node { name: \"%s/read\" op: \"Identity\" input: \"%s\" attr { key: \"T\" value { type: DT_FLOAT "
        "} } }\n",
        name, name);
}

/* a node with attr T = type and up to three inputs (NULL ends) */
static void node_t(FILE *f, const char *name, const char *op, const char *type, const char *a, const char *b,
                   const char *extra)
{
    fprintf(f, "node { name: \"%s\" op: \"%s\"", name, op);
    if (a)
        fprintf(f, " input: \"%s\"", a);
    if (b)
        fprintf(f, " input: \"%s\"", b);
    fprintf(f, " attr { key: \"T\" value { type: %s } }%s }\n", type, extra ? extra : "");
}

static void enter(FILE *f, const char *name, const char *in, const char *type, bool is_constant)
{
    char ex[256];
    snprintf(ex, sizeof ex,
             " attr { key: \"frame_name\" value { s: \"rnn/while_context\" } } attr { key: \"is_constant\" "
             "value { b: %s } } attr { key: \"parallel_iterations\" value { i: 10 } }",
             is_constant ? "true" : "false");
    node_t(f, name, "Enter", type, in, NULL, ex);
}

/* loop variable rnn/<v>: Enter(init), Merge, Switch on rnn/LoopCond,
 * Identity (the body's value), NextIteration(next), Exit */
static void loop_var(FILE *f, const char *v, const char *init, const char *type, const char *next)
{
    char n[6][64], m[64], sw[64], sw1[80];
    snprintf(n[0], 64, "rnn/Enter_%.8s", v);
    snprintf(n[1], 64, "rnn/Merge_%.8s", v);
    snprintf(n[2], 64, "rnn/NextIteration_%.8s", v);
    snprintf(n[3], 64, "rnn/Switch_%.8s", v);
    snprintf(n[4], 64, "rnn/Identity_%.8s", v);
    snprintf(n[5], 64, "rnn/Exit_%.8s", v);
    snprintf(m, sizeof m, "%s", n[1]);
    snprintf(sw, sizeof sw, "%s", n[3]);
    snprintf(sw1, sizeof sw1, "%s:1", n[3]);
    enter(f, n[0], init, type, false);
    node_t(f, n[1], "Merge", type, n[0], n[2], " attr { key: \"N\" value { i: 2 } }");
    node_t(f, n[3], "Switch", type, m, "rnn/LoopCond", NULL);
    node_t(f, n[4], "Identity", type, sw1, NULL, NULL);
    node_t(f, n[2], "NextIteration", type, next, NULL, NULL);
    node_t(f, n[5], "Exit", type, sw, NULL, NULL);
}

/* rnn: a TF1 tf.while_loop over 4 time steps (Enter/Merge/Switch/LoopCond/
 * NextIteration/Exit, functionalized into a while region) with TF1
 * variables entered as loop invariants:
 *   h_0 = 0 [32,8]; t < 4: h = tanh(x_t Wx + h Wh + b), x_t = GatherV2(x, t)
 *   (x fed [4,32,2], time major); logits = h_4 Wo + bo; the same loss.
 *   The gradient unrolls the loop (trip count 4, from the counter t). */
static void write_rnn(const char *path)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    rng = 13;
    ph(f, "x", (int64_t[]){4, 32, 2}, 3);
    ph(f, "labels", (int64_t[]){32, 2}, 2);
    tf_variable(f, "wx", (int64_t[]){2, 8}, 2, 0.8);
    tf_variable(f, "wh", (int64_t[]){8, 8}, 2, 0.3);
    tf_variable(f, "b", (int64_t[]){8}, 1, 0.1);
    tf_variable(f, "wo", (int64_t[]){8, 2}, 2, 0.8);
    tf_variable(f, "bo", (int64_t[]){2}, 1, 0.1);
    weights(f, "h0", (int64_t[]){32, 8}, 2, 0);
    fprintf(f,
            "node { name: \"t0\" op: \"Const\" attr { key: \"dtype\" value { type: DT_INT32 } }\n"
            "  attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 0 } } } }\n");
    loop_var(f, "t", "t0", "DT_INT32", "rnn/t_next");
    loop_var(f, "h", "h0", "DT_FLOAT", "rnn/h_next");
    fprintf(f,
            "node { name: \"rnn/steps\" op: \"Const\" input: \"^rnn/Merge_t\" attr { key: \"dtype\" value { "
            "type: DT_INT32 } }\n"
            "  attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 4 } } } }\n");
    node_t(f, "rnn/Less", "Less", "DT_INT32", "rnn/Merge_t", "rnn/steps", NULL);
    fprintf(f, "node { name: \"rnn/LoopCond\" op: \"LoopCond\" input: \"rnn/Less\" }\n");
    enter(f, "rnn/Enter_x", "x", "DT_FLOAT", true);
    enter(f, "rnn/Enter_wx", "wx/read", "DT_FLOAT", true);
    enter(f, "rnn/Enter_wh", "wh/read", "DT_FLOAT", true);
    enter(f, "rnn/Enter_b", "b/read", "DT_FLOAT", true);
    fprintf(
        f, "node { name: \"rnn/axis\" op: \"Const\" input: \"^rnn/Identity_t\" attr { key: \"dtype\" value { "
           "type: DT_INT32 } }\n"
           "  attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 0 } } } }\n");
    fprintf(
        f, "node { name: \"rnn/xt\" op: \"GatherV2\" input: \"rnn/Enter_x\" input: \"rnn/Identity_t\" input: "
           "\"rnn/axis\"\n  attr { key: \"Tparams\" value { type: DT_FLOAT } } attr { key: \"Tindices\" "
           "value { type: DT_INT32 } } attr { key: \"Taxis\" value { type: DT_INT32 } } }\n");
    op2(f, "rnn/xw", "MatMul", "rnn/xt", "rnn/Enter_wx");
    op2(f, "rnn/hw", "MatMul", "rnn/Identity_h", "rnn/Enter_wh");
    op2(f, "rnn/sum", "AddV2", "rnn/xw", "rnn/hw");
    op2(f, "rnn/pre", "BiasAdd", "rnn/sum", "rnn/Enter_b");
    op1(f, "rnn/h_next", "Tanh", "rnn/pre");
    fprintf(f,
            "node { name: \"rnn/one\" op: \"Const\" input: \"^rnn/Identity_t\" attr { key: \"dtype\" value { "
            "type: DT_INT32 } }\n"
            "  attr { key: \"value\" value { tensor { dtype: DT_INT32 tensor_shape { } int_val: 1 } } } }\n");
    node_t(f, "rnn/t_next", "AddV2", "DT_INT32", "rnn/Identity_t", "rnn/one", NULL);
    op2(f, "z", "MatMul", "rnn/Exit_h", "wo/read");
    op2(f, "zb", "BiasAdd", "z", "bo/read");
    xent(f, "zb");
    fclose(f);
}

/* ---- data ---- */

static void write_npy(const char *path, float *v, int rank, const int64_t *dims)
{
    tcrt_tensor t = {v, TCRT_F32, rank, {0}};
    for (int d = 0; d < rank; d++)
        t.dims[d] = dims[d];
    char msg[256];
    ck_assert_msg(tcrt_npy_write(path, &t, msg, sizeof msg) == TCRT_OK, "%s", msg);
}

static void mlp_data(const char *xp, const char *lp)
{
    float x[64 * 2], l[64 * 2];
    rng = 99;
    for (int i = 0; i < 64; i++) {
        double a, b;
        do {
            a = 2 * rnd() - 1;
            b = 2 * rnd() - 1;
        } while (fabs(a + 0.5 * b) < 0.1 * sqrt(1.25));
        int c = a + 0.5 * b > 0;
        x[2 * i] = (float)a;
        x[2 * i + 1] = (float)b;
        l[2 * i] = (float)(c == 0);
        l[2 * i + 1] = (float)(c == 1);
    }
    write_npy(xp, x, 2, (int64_t[]){64, 2});
    write_npy(lp, l, 2, (int64_t[]){64, 2});
}

static void cnn_data(const char *xp, const char *lp)
{
    static float x[16 * 36];
    float l[16 * 2];
    rng = 5;
    for (int i = 0; i < 16; i++) {
        int c = i % 2, at = (int)(rnd() * 6);
        for (int r = 0; r < 6; r++)
            for (int q = 0; q < 6; q++)
                x[i * 36 + r * 6 + q] = (float)(0.2 * rnd() + ((c == 0 ? q : r) == at ? 1 : 0));
        l[2 * i] = (float)(c == 0);
        l[2 * i + 1] = (float)(c == 1);
    }
    write_npy(xp, x, 4, (int64_t[]){16, 6, 6, 1});
    write_npy(lp, l, 2, (int64_t[]){16, 2});
}

/* x [4,32,2] uniform in [-1,1]; class 1 when the first feature summed over
 * the 4 steps is positive (sums within 0.3 of 0 resampled) */
static void rnn_data(const char *xp, const char *lp)
{
    static float x[4 * 32 * 2];
    float l[32 * 2];
    rng = 17;
    for (int i = 0; i < 32; i++) {
        double s;
        do {
            s = 0;
            for (int t = 0; t < 4; t++) {
                x[(t * 32 + i) * 2] = (float)(2 * rnd() - 1);
                x[(t * 32 + i) * 2 + 1] = (float)(2 * rnd() - 1);
                s += x[(t * 32 + i) * 2];
            }
        } while (fabs(s) < 0.3);
        l[2 * i] = (float)(s <= 0);
        l[2 * i + 1] = (float)(s > 0);
    }
    write_npy(xp, x, 3, (int64_t[]){4, 32, 2});
    write_npy(lp, l, 2, (int64_t[]){32, 2});
}

/* ---- running ---- */

/* Runs the command, returns its stdout (malloc'ed); *rc its exit status. */
static char *run_cmd(const char *cmd, int *rc)
{
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t k;
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 >= cap)
            buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    int s = pclose(p);
    *rc = WIFEXITED(s) ? WEXITSTATUS(s) : -1;
    return buf;
}

/* "step=S ... loss=V" lines: the first and the last value */
static void losses(const char *out, double *first, double *last, int *n)
{
    *n = 0;
    for (const char *p = strstr(out, "step="); p; p = strstr(p + 1, "step=")) {
        const char *q = strstr(p, "loss");
        const char *eol = strchr(p, '\n');
        if (!q || (eol && q > eol))
            continue;
        q = strchr(q, '=');
        double v = strtod(q + 1, NULL);
        if ((*n)++ == 0)
            *first = v;
        *last = v;
    }
}

/* extra: NULL, or "p" to feed the bool p (true, then false: one run each) */
static void train_ex(const char *name, void (*model)(const char *), void (*data)(const char *, const char *),
                     const char *optimizer, int steps, const char *extra)
{
    char m[512], exe[512], xp[512], lp[512], cmd[4096];
    snprintf(m, sizeof m, "%s/%s.pbtxt", tmp_dir, name);
    snprintf(exe, sizeof exe, "%s/%s", tmp_dir, name);
    snprintf(xp, sizeof xp, "%s/%s_x.npy", tmp_dir, name);
    snprintf(lp, sizeof lp, "%s/%s_labels.npy", tmp_dir, name);
    model(m);
    data(xp, lp);
    Result r = extra ? tfcc("compile", m, "--feed", "x", "--feed", "labels", "--feed", "p", "--loss", "loss",
                            "--optimizer", optimizer, "--trainable", "all", "-o", exe, NULL)
                     : tfcc("compile", m, "--feed", "x", "--feed", "labels", "--loss", "loss", "--optimizer",
                            optimizer, "--trainable", "all", "-o", exe, NULL);
    ck_assert_msg(r.rc == 0, "compile %s: %s", name, r.err);
    result_free(&r);
    for (int run = 0; run < (extra ? 2 : 1); run++) {
        char pf[600] = "";
        if (extra) {
            char pp[512];
            snprintf(pp, sizeof pp, "%s/%s_p%d.npy", tmp_dir, name, run);
            uint8_t v = run == 0;
            tcrt_tensor t = {&v, TCRT_BOOL, 0, {0}};
            char msg[256];
            ck_assert_msg(tcrt_npy_write(pp, &t, msg, sizeof msg) == TCRT_OK, "%s", msg);
            snprintf(pf, sizeof pf, "--feed p=%s", pp);
        }
        snprintf(cmd, sizeof cmd,
                 "%s --feed x=%s --feed labels=%s %s --steps %d --log-every 1 --out-dir %s/%s_out 2>&1", exe,
                 xp, lp, pf, steps, tmp_dir, name);
        int rc;
        char *out = run_cmd(cmd, &rc);
        ck_assert_msg(rc == 0, "%s: %s", cmd, out);
        double first = 0, last = 0;
        int n;
        losses(out, &first, &last, &n);
        ck_assert_msg(n == steps, "%s: %d loss lines in:\n%.2000s", name, n, out);
        fprintf(stderr, "%s (%s%s): loss %.4f at step 1, %.5f at step %d\n", name, optimizer,
                extra ? (run == 0 ? ", p=true" : ", p=false") : "", first, last, steps);
        ck_assert_msg(last < 0.1 && last < first / 10, "%s: loss %g at step 1, %g at step %d", name, first,
                      last, steps);
        free(out);
    }
}

static void train(const char *name, void (*model)(const char *), void (*data)(const char *, const char *),
                  const char *optimizer, int steps)
{
    train_ex(name, model, data, optimizer, steps, NULL);
}

START_TEST(test_mlp_adam)
{
    train("mlp", write_mlp, mlp_data, "adam:lr=0.05", 200);
}
END_TEST

START_TEST(test_mlp_momentum)
{
    train("mlp_mom", write_mlp, mlp_data, "momentum:lr=0.2,momentum=0.9", 200);
}
END_TEST

/* the gradient of a cond is a cond: trained through each branch */
START_TEST(test_mlp_cond)
{
    train_ex("mlp_cond", write_mlp_cond, mlp_data, "adam:lr=0.05", 200, "p");
}
END_TEST

START_TEST(test_cnn_adam)
{
    train("cnn", write_cnn, cnn_data, "adam:lr=0.02", 150);
}
END_TEST

/* an RNN through a TF1 while loop: the gradient unrolls it (its variables
 * are TF1 variables, trainable without --trainable) */
START_TEST(test_rnn_while)
{
    char m[512], exe[512], xp[512], lp[512], cmd[4096];
    snprintf(m, sizeof m, "%s/rnn.pbtxt", tmp_dir);
    snprintf(exe, sizeof exe, "%s/rnn", tmp_dir);
    snprintf(xp, sizeof xp, "%s/rnn_x.npy", tmp_dir);
    snprintf(lp, sizeof lp, "%s/rnn_labels.npy", tmp_dir);
    write_rnn(m);
    rnn_data(xp, lp);
    Result r = tfcc("compile", m, "--feed", "x", "--feed", "labels", "--loss", "loss", "--optimizer",
                    "adam:lr=0.05", "-o", exe, NULL);
    ck_assert_msg(r.rc == 0, "compile rnn: %s", r.err);
    result_free(&r);
    int steps = 200;
    snprintf(cmd, sizeof cmd,
             "%s --feed x=%s --feed labels=%s --steps %d --log-every 1 --out-dir %s/rnn_out 2>&1", exe, xp,
             lp, steps, tmp_dir);
    int rc;
    char *out = run_cmd(cmd, &rc);
    ck_assert_msg(rc == 0, "%s: %s", cmd, out);
    double first = 0, last = 0;
    int n;
    losses(out, &first, &last, &n);
    ck_assert_msg(n == steps, "rnn: %d loss lines in:\n%.2000s", n, out);
    fprintf(stderr, "rnn (adam:lr=0.05): loss %.4f at step 1, %.5f at step %d\n", first, last, steps);
    ck_assert_msg(last < 0.1 && last < first / 10, "rnn: loss %g at step 1, %g at step %d", first, last,
                  steps);
    free(out);
}
END_TEST

START_TEST(test_driver_errors)
{
    char m[512], exe[512];
    snprintf(m, sizeof m, "%s/err_mlp.pbtxt", tmp_dir);
    snprintf(exe, sizeof exe, "%s/err_exe", tmp_dir);
    write_mlp(m);
    Result r = tfcc("compile", m, "--feed", "x", "--feed", "labels", "--loss", "loss", "--optimizer",
                    "adam:lr=1e-3,foo=2", "-o", exe, NULL);
    ck_assert_int_eq(r.rc, 2);
    HAS(r.err,
        "error: --optimizer: optimizer 'adam:lr=1e-3,foo=2': unknown key 'foo' for adam (lr, beta1, beta2, "
        "epsilon)");
    result_free(&r);
    r = tfcc("compile", m, "--feed", "x", "--feed", "labels", "--optimizer", "sgd:lr=1", "-o", exe, NULL);
    ck_assert_int_eq(r.rc, 2);
    HAS(r.err, "error: --optimizer needs --loss TENSOR");
    result_free(&r);
    r = tfcc("compile", m, "--feed", "x", "--feed", "labels", "--loss", "loss", "-o", exe, NULL);
    ck_assert_int_eq(r.rc, 2);
    HAS(r.err, "error: --loss needs --optimizer");
    result_free(&r);
    r = tfcc("compile", m, "--feed", "x", "--feed", "labels", "--loss", "rowsum", "--optimizer", "sgd:lr=1",
             "--trainable", "all", "-o", exe, NULL);
    ck_assert_int_eq(r.rc, 1);
    HAS(r.err, "loss 'rowsum' is float32[64]: it must be a float32 or float64 scalar");
    result_free(&r);
    r = tfcc("compile", m, "--feed", "x", "--feed", "labels", "--loss", "loss", "--optimizer", "sgd:lr=1",
             "--trainable", "w1,nope", "-o", exe, NULL);
    ck_assert_int_eq(r.rc, 1);
    HAS(r.err, "--trainable: no constant named 'nope' in the compiled graph");
    result_free(&r);
    r = tfcc("compile", m, "--feed", "x", "--feed", "labels", "--loss", "loss", "--optimizer", "sgd:lr=1",
             "-o", exe, NULL);
    ck_assert_int_eq(r.rc, 1);
    HAS(r.err, "loss 'loss' depends on no trainable variable");
    result_free(&r);
}
END_TEST

static Suite *train_suite(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("train");
    tcase_add_test(tc, test_mlp_adam);
    tcase_add_test(tc, test_mlp_momentum);
    tcase_add_test(tc, test_mlp_cond);
    tcase_add_test(tc, test_cnn_adam);
    tcase_add_test(tc, test_rnn_while);
    tcase_add_test(tc, test_driver_errors);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(train_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
