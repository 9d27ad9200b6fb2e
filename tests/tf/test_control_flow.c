/* tests/tf/test_control_flow.c - TensorFlow v1 control flow (Switch, Merge,
 * Enter, Exit, NextIteration, LoopCond) functionalized by tf_import into the
 * IR's WHILE and COND region ops.
 *
 * Each graph is built (tf_build.h) the way TensorFlow 1.x's tf.while_loop and
 * tf.cond write them: frames named by Enter, a Merge(Enter, NextIteration)
 * per loop variable, Switch(Merge, LoopCond), Identity(Switch:1) as the body's
 * value, constants placed in a frame or branch by a control input from a
 * pivot; tf.cond's Switch(pred, pred) pivots switch_t/switch_f, pred_id, and
 * Merge(false result, true result).  Two kinds of checks:
 *   - structure: tf_import directly; where WHILE/COND ops are, their operand
 *     counts, what a region returns;
 *   - numbers: the GraphDef is written as a .pb and compiled and run by the
 *     driver in process (`tfcc run`), values derived by hand in comments.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/driver.h"
#include "tf_build.h"
#include "tests/tfcc_inproc.h"

static IrGraph *gr;
static Status st;
static char tmp_dir[] = "/tmp/tfcc-cf-XXXXXX";

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

/* ---- building ---- */

/* A scalar Const, optionally with one control input ("^x" or NULL). */
static Tensorflow__TensorProto *cst(Tb *b, const char *name, int dtype, const char *ctl)
{
    Tensorflow__NodeDef *nd = tb_node(b, name, "Const", ctl, NULL);
    tb_attr_type(nd, "dtype", dtype);
    Tensorflow__AttrValue *v = tb_attr(nd, "value");
    Tensorflow__TensorProto *t = tb_alloc(sizeof *t);
    tensorflow__tensor_proto__init(t);
    t->dtype = (Tensorflow__DataType)dtype;
    t->tensor_shape = tb_shape(0, NULL);
    v->value_case = TENSORFLOW__ATTR_VALUE__VALUE_TENSOR;
    v->tensor = t;
    return t;
}

static void cst_i32(Tb *b, const char *name, int32_t x, const char *ctl)
{
    Tensorflow__TensorProto *t = cst(b, name, 3 /* DT_INT32 */, ctl);
    t->n_int_val = 1;
    t->int_val = tb_alloc(sizeof(int32_t));
    t->int_val[0] = x;
}

static void cst_f32(Tb *b, const char *name, float x, const char *ctl)
{
    Tensorflow__TensorProto *t = cst(b, name, 1 /* DT_FLOAT */, ctl);
    t->n_float_val = 1;
    t->float_val = tb_alloc(sizeof(float));
    t->float_val[0] = x;
}

static void cst_bool(Tb *b, const char *name, bool x)
{
    Tensorflow__TensorProto *t = cst(b, name, 10 /* DT_BOOL */, NULL);
    t->n_bool_val = 1;
    t->bool_val = tb_alloc(sizeof(protobuf_c_boolean));
    t->bool_val[0] = x;
}

static void enter(Tb *b, const char *name, const char *in, const char *frame, bool is_constant)
{
    Tensorflow__NodeDef *nd = tb_node(b, name, "Enter", in, NULL);
    tb_attr_s(nd, "frame_name", frame);
    tb_attr_b(nd, "is_constant", is_constant);
    tb_attr_i(nd, "parallel_iterations", 10);
}

/* The loop header of variable `v` of loop `p` ("while"): p/Enter<s>,
 * p/Merge<s>, p/Switch<s> (on p/LoopCond), p/Identity<s> (the body's
 * value), p/NextIteration<s> (of `next`), p/Exit<s>; s is "" or "_1"... */
static void loop_var(Tb *b, const char *p, const char *s, const char *init, const char *frame,
                     const char *next)
{
    char n[8][128];
    snprintf(n[0], 128, "%s/Enter%s", p, s);
    snprintf(n[1], 128, "%s/Merge%s", p, s);
    snprintf(n[2], 128, "%s/NextIteration%s", p, s);
    snprintf(n[3], 128, "%s/Switch%s", p, s);
    snprintf(n[4], 128, "%s/LoopCond", p);
    snprintf(n[5], 128, "%s/Identity%s", p, s);
    snprintf(n[6], 128, "%s/Switch%s:1", p, s);
    snprintf(n[7], 128, "%s/Exit%s", p, s);
    enter(b, n[0], init, frame, false);
    tb_node(b, n[1], "Merge", n[0], n[2], NULL);
    tb_node(b, n[3], "Switch", n[1], n[4], NULL);
    tb_node(b, n[5], "Identity", n[6], NULL);
    tb_node(b, n[2], "NextIteration", next, NULL);
    tb_node(b, n[7], "Exit", n[3], NULL);
}

/* A counter: i = 0; while i < limit: i += 1.  Exit: "while/Exit". */
static void build_counter(Tb *b, int limit)
{
    cst_i32(b, "i0", 0, NULL);
    loop_var(b, "while", "", "i0", "while/while_context", "while/add");
    cst_i32(b, "while/Less/y", limit, "^while/Merge");
    tb_node(b, "while/Less", "Less", "while/Merge", "while/Less/y", NULL);
    tb_node(b, "while/LoopCond", "LoopCond", "while/Less", NULL);
    cst_i32(b, "while/add/y", 1, "^while/Identity");
    tb_node(b, "while/add", "AddV2", "while/Identity", "while/add/y", NULL);
}

/* i = 0, s = [1, 1]; k fed f32[2] (a loop invariant, Enter is_constant);
 * while i < 4: i += 1; s = s * k.  So s = k^4 and i = 4. */
static void build_two_vars(Tb *b)
{
    cst_i32(b, "i0", 0, NULL);
    tb_const_f(b, "s0", 1, TB_DIMS(2), 1, TB_F(1));
    tb_placeholder(b, "k", 1 /* DT_FLOAT */, 1, TB_DIMS(2));
    loop_var(b, "while", "", "i0", "while/while_context", "while/add");
    loop_var(b, "while", "_1", "s0", "while/while_context", "while/mul");
    enter(b, "while/Enter_2", "k", "while/while_context", true);
    cst_i32(b, "while/Less/y", 4, "^while/Merge");
    tb_node(b, "while/Less", "Less", "while/Merge", "while/Less/y", NULL);
    tb_node(b, "while/LoopCond", "LoopCond", "while/Less", NULL);
    cst_i32(b, "while/add/y", 1, "^while/Identity");
    tb_node(b, "while/add", "AddV2", "while/Identity", "while/add/y", NULL);
    tb_node(b, "while/mul", "Mul", "while/Identity_1", "while/Enter_2", NULL);
}

/* total = 0; for i < 3: (acc = total; for j < 4: acc += i * j); total = acc.
 * total = sum over i<3, j<4 of i*j = (0+1+2) * (0+1+2+3) = 3 * 6 = 18. */
static void build_nested(Tb *b)
{
    cst_i32(b, "i0", 0, NULL);
    cst_i32(b, "t0", 0, NULL);
    loop_var(b, "outer", "", "i0", "outer/ctx", "outer/add");
    loop_var(b, "outer", "_1", "t0", "outer/ctx", "inner/Exit_1");
    cst_i32(b, "outer/Less/y", 3, "^outer/Merge");
    tb_node(b, "outer/Less", "Less", "outer/Merge", "outer/Less/y", NULL);
    tb_node(b, "outer/LoopCond", "LoopCond", "outer/Less", NULL);
    /* the inner loop, in the outer body */
    cst_i32(b, "inner/j0", 0, "^outer/Identity");
    loop_var(b, "inner", "", "inner/j0", "outer/inner/ctx", "inner/add_1");
    loop_var(b, "inner", "_1", "outer/Identity_1", "outer/inner/ctx", "inner/add");
    enter(b, "inner/Enter_2", "outer/Identity", "outer/inner/ctx", true);
    cst_i32(b, "inner/Less/y", 4, "^inner/Merge");
    tb_node(b, "inner/Less", "Less", "inner/Merge", "inner/Less/y", NULL);
    tb_node(b, "inner/LoopCond", "LoopCond", "inner/Less", NULL);
    tb_node(b, "inner/mul", "Mul", "inner/Enter_2", "inner/Identity", NULL);
    tb_node(b, "inner/add", "AddV2", "inner/Identity_1", "inner/mul", NULL);
    cst_i32(b, "inner/add_1/y", 1, "^inner/Identity");
    tb_node(b, "inner/add_1", "AddV2", "inner/Identity", "inner/add_1/y", NULL);
    cst_i32(b, "outer/add/y", 1, "^outer/Identity");
    tb_node(b, "outer/add", "AddV2", "outer/Identity", "outer/add/y", NULL);
}

/* tf.cond(pred, true_fn, false_fn) v1 scaffolding under prefix p: p/Switch
 * (pred, pred), pivots p/switch_t and p/switch_f, p/pred_id. */
static void cond_pivots(Tb *b, const char *p, const char *pred)
{
    char n[4][128], t[2][128];
    snprintf(n[0], 128, "%s/Switch", p);
    snprintf(n[1], 128, "%s/switch_t", p);
    snprintf(n[2], 128, "%s/switch_f", p);
    snprintf(n[3], 128, "%s/pred_id", p);
    snprintf(t[0], 128, "%s/Switch:1", p);
    snprintf(t[1], 128, "%s/Switch", p);
    tb_node(b, n[0], "Switch", pred, pred, NULL);
    tb_node(b, n[1], "Identity", t[0], NULL);
    tb_node(b, n[2], "Identity", t[1], NULL);
    tb_node(b, n[3], "Identity", pred, NULL);
}

/* x = 0; for i < 6: x = (i % 2 == 0) ? x + i : x - 1 (a tf.cond in the body).
 * x after i = 0..5: 0, -1, 1, 0, 4, 3. */
static void build_cond_in_loop(Tb *b)
{
    cst_i32(b, "i0", 0, NULL);
    cst_i32(b, "x0", 0, NULL);
    loop_var(b, "while", "", "i0", "while/ctx", "while/add");
    loop_var(b, "while", "_1", "x0", "while/ctx", "while/cond/Merge");
    cst_i32(b, "while/Less/y", 6, "^while/Merge");
    tb_node(b, "while/Less", "Less", "while/Merge", "while/Less/y", NULL);
    tb_node(b, "while/LoopCond", "LoopCond", "while/Less", NULL);
    cst_i32(b, "while/FloorMod/y", 2, "^while/Identity");
    tb_node(b, "while/FloorMod", "FloorMod", "while/Identity", "while/FloorMod/y", NULL);
    cst_i32(b, "while/Equal/y", 0, "^while/Identity");
    tb_node(b, "while/Equal", "Equal", "while/FloorMod", "while/Equal/y", NULL);
    cond_pivots(b, "while/cond", "while/Equal");
    /* true: x + i */
    tb_node(b, "while/cond/add/Switch", "Switch", "while/Identity_1", "while/cond/pred_id", NULL);
    tb_node(b, "while/cond/add/Switch_1", "Switch", "while/Identity", "while/cond/pred_id", NULL);
    tb_node(b, "while/cond/add", "AddV2", "while/cond/add/Switch:1", "while/cond/add/Switch_1:1", NULL);
    /* false: x - 1 */
    tb_node(b, "while/cond/sub/Switch", "Switch", "while/Identity_1", "while/cond/pred_id", NULL);
    cst_i32(b, "while/cond/sub/y", 1, "^while/cond/switch_f");
    tb_node(b, "while/cond/sub", "Sub", "while/cond/sub/Switch", "while/cond/sub/y", NULL);
    tb_node(b, "while/cond/Merge", "Merge", "while/cond/sub", "while/cond/add", NULL);
    cst_i32(b, "while/add/y", 1, "^while/Identity");
    tb_node(b, "while/add", "AddV2", "while/Identity", "while/add/y", NULL);
}

/* n fed (int32 scalar, an invariant): i = 0, a = 0; while i < n: i += 1,
 * a += 2.  So a = 2 * max(n, 0). */
static void build_fed_trip_count(Tb *b)
{
    cst_i32(b, "i0", 0, NULL);
    cst_i32(b, "a0", 0, NULL);
    tb_placeholder(b, "n", 3 /* DT_INT32 */, 0, NULL);
    loop_var(b, "while", "", "i0", "while/ctx", "while/add");
    loop_var(b, "while", "_1", "a0", "while/ctx", "while/add_1");
    enter(b, "while/Enter_2", "n", "while/ctx", true);
    tb_node(b, "while/Less", "Less", "while/Merge", "while/Enter_2", NULL);
    tb_node(b, "while/LoopCond", "LoopCond", "while/Less", NULL);
    cst_i32(b, "while/add/y", 1, "^while/Identity");
    tb_node(b, "while/add", "AddV2", "while/Identity", "while/add/y", NULL);
    cst_i32(b, "while/add_1/y", 2, "^while/Identity");
    tb_node(b, "while/add_1", "AddV2", "while/Identity_1", "while/add_1/y", NULL);
}

/* x fed f32[2]; out = tf.cond(p, lambda: x * 2, lambda: x + 10) and
 * c = tf.cond(p, lambda: 7.0, lambda: 5.0) (branch constants placed by their
 * control input from a pivot).  p is a fed bool, or a Const when const_pred
 * is 0 or 1.  "out_idx" is cond/Merge:1 (1 for true: Merge(false, true)). */
static void build_cond(Tb *b, int const_pred)
{
    tb_placeholder(b, "x", 1, 1, TB_DIMS(2));
    if (const_pred < 0)
        tb_placeholder(b, "p", 10 /* DT_BOOL */, 0, NULL);
    else
        cst_bool(b, "p", const_pred);
    cond_pivots(b, "cond", "p");
    tb_node(b, "cond/mul/Switch", "Switch", "x", "cond/pred_id", NULL);
    cst_f32(b, "cond/mul/y", 2, "^cond/switch_t");
    tb_node(b, "cond/mul", "Mul", "cond/mul/Switch:1", "cond/mul/y", NULL);
    tb_node(b, "cond/add/Switch", "Switch", "x", "cond/pred_id", NULL);
    cst_f32(b, "cond/add/y", 10, "^cond/switch_f");
    tb_node(b, "cond/add", "AddV2", "cond/add/Switch", "cond/add/y", NULL);
    tb_node(b, "cond/Merge", "Merge", "cond/add", "cond/mul", NULL);
    cst_f32(b, "cond/c_t", 7, "^cond/switch_t");
    cst_f32(b, "cond/c_f", 5, "^cond/switch_f");
    tb_node(b, "cond/Merge_1", "Merge", "cond/c_f", "cond/c_t", NULL);
    tb_node(b, "out", "Identity", "cond/Merge", NULL);
    tb_node(b, "out_idx", "Identity", "cond/Merge:1", NULL);
    tb_node(b, "c", "Identity", "cond/Merge_1", NULL);
}

/* Rewires input i of node `name` (to make a graph malformed). */
static void set_input(Tb *b, const char *name, int i, const char *in)
{
    for (size_t n = 0; n < b->gd.n_node; n++)
        if (strcmp(b->gd.node[n]->name, name) == 0) {
            b->gd.node[n]->input[i] = tb_strdup(in);
            return;
        }
    ck_abort_msg("no node '%s'", name);
}

/* x fed int32, p fed bool: tf.cond(p, lambda: while x < 10: x += 3,
 * lambda: x) (a loop inside a branch).  x = 2: true gives 2, 5, 8, 11 -> 11;
 * false gives 2. */
static void build_loop_in_cond(Tb *b)
{
    tb_placeholder(b, "x", 3 /* DT_INT32 */, 0, NULL);
    tb_placeholder(b, "p", 10 /* DT_BOOL */, 0, NULL);
    cond_pivots(b, "cond", "p");
    tb_node(b, "cond/Switch_1", "Switch", "x", "cond/pred_id", NULL);
    loop_var(b, "cond/while", "", "cond/Switch_1:1", "cond/while/ctx", "cond/while/add");
    cst_i32(b, "cond/while/Less/y", 10, "^cond/while/Merge");
    tb_node(b, "cond/while/Less", "Less", "cond/while/Merge", "cond/while/Less/y", NULL);
    tb_node(b, "cond/while/LoopCond", "LoopCond", "cond/while/Less", NULL);
    cst_i32(b, "cond/while/add/y", 3, "^cond/while/Identity");
    tb_node(b, "cond/while/add", "AddV2", "cond/while/Identity", "cond/while/add/y", NULL);
    tb_node(b, "cond/Identity_f", "Identity", "cond/Switch_1", NULL);
    tb_node(b, "cond/Merge", "Merge", "cond/Identity_f", "cond/while/Exit", NULL);
}

/* ---- importing and inspecting ---- */

static void import_spec(Tb *b, const TfFeedSpec *feeds, int n_feeds, const char *const *fetches,
                        int n_fetches)
{
    TfImportOptions o = {NULL, feeds, n_feeds, fetches, n_fetches, NULL, 0, NULL, NULL, false};
    gr = tf_import(&b->gd, &o, &st);
    ck_assert_msg(gr != NULL, "import failed: %s", st.msg);
}

static void import1(Tb *b, const TfFeedSpec *feeds, int n_feeds, const char *fetch)
{
    import_spec(b, feeds, n_feeds, &fetch, 1);
}

/* Import must fail; its first message must contain `want`. */
static void import_fails(Tb *b, const char *fetch, const char *want)
{
    const char *fetches[1] = {fetch};
    TfImportOptions o = {NULL, NULL, 0, fetches, 1, NULL, 0, NULL, NULL, false};
    gr = tf_import(&b->gd, &o, &st);
    ck_assert_ptr_null(gr);
    ck_assert_msg(strstr(st.msg, want) != NULL, "want \"%s\" in:\n%s", want, st.msg);
}

/* Live nodes of op in g and (deep) in its regions. */
static int count_op(const IrGraph *g, Op op, bool deep)
{
    int n = 0;
    IR_FOR_EACH(g, x)
    {
        n += x->op == op;
        for (int k = 0; deep && k < x->n_regions; k++)
            n += count_op(x->regions[k], op, true);
    }
    return n;
}

static IrNode *find_op(const IrGraph *g, Op op)
{
    IR_FOR_EACH(g, x)
    if (x->op == op)
        return x;
    ck_abort_msg("no %s node", ir_op_name(op));
    return NULL;
}

static int64_t const_int(IrValue v)
{
    int64_t x;
    int n;
    ck_assert_msg(ir_const_ints(v, &x, 1, &n) && n == 1, "not an integer scalar constant");
    return x;
}

/* ---- running (tfcc run, in process) ---- */

typedef struct Feed {
    const char *name;
    tcrt_dtype dtype;
    int rank;
    int64_t dims[2];
    const void *data;
} Feed;

/* Writes b as TAG.pb, runs `tfcc run` with the feeds, reads fetch k into out[k]
 * (free out[k].data). */
static void run_graph(Tb *b, const char *tag, const Feed *feeds, int n_feeds, const char *const *fetches,
                      int n_fetches, tcrt_tensor *out)
{
    char model[512], outdir[512], msg[256];
    snprintf(model, sizeof model, "%s/%s.pb", tmp_dir, tag);
    snprintf(outdir, sizeof outdir, "%s/%s.out", tmp_dir, tag);
    size_t n = tensorflow__graph_def__get_packed_size(&b->gd);
    uint8_t *buf = malloc(n + 1);
    ck_assert_ptr_nonnull(buf);
    tensorflow__graph_def__pack(&b->gd, buf);
    FILE *f = fopen(model, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    fclose(f);
    free(buf);

    char *argv[40], args[16][600];
    int argc = 0, na = 0;
    argv[argc++] = "tfcc";
    argv[argc++] = "run";
    argv[argc++] = model;
    for (int i = 0; i < n_feeds; i++) {
        char path[560];
        snprintf(path, sizeof path, "%s/%s_feed%d.npy", tmp_dir, tag, i);
        tcrt_tensor t = {(void *)feeds[i].data, feeds[i].dtype, feeds[i].rank, {0}};
        for (int d = 0; d < feeds[i].rank; d++)
            t.dims[d] = feeds[i].dims[d];
        ck_assert_int_eq(tcrt_npy_write(path, &t, msg, sizeof msg), TCRT_OK);
        snprintf(args[na], sizeof args[na], "%s=%s", feeds[i].name, path);
        argv[argc++] = "--feed";
        argv[argc++] = args[na++];
    }
    for (int i = 0; i < n_fetches; i++) {
        argv[argc++] = "--fetch";
        argv[argc++] = (char *)fetches[i];
    }
    argv[argc++] = "--out-dir";
    argv[argc++] = outdir;
    argv[argc] = NULL;
    Result r = tfcc_argv(argc, argv);
    ck_assert_msg(r.rc == 0, "tfcc run %s failed (rc %d):\n%s", tag, r.rc, r.err);
    result_free(&r);
    for (int i = 0; i < n_fetches; i++) {
        char name[256], path[800];
        tcrt_output_filename(fetches[i], name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", outdir, name);
        ck_assert_int_eq(tcrt_npy_read(path, &out[i], msg, sizeof msg), TCRT_OK);
    }
}

static int32_t run_i32(Tb *b, const char *tag, const Feed *feeds, int n_feeds, const char *fetch)
{
    tcrt_tensor t;
    run_graph(b, tag, feeds, n_feeds, &fetch, 1, &t);
    ck_assert_int_eq(t.dtype, TCRT_I32);
    ck_assert_int_eq(tcrt_tensor_count(&t), 1);
    int32_t v = *(const int32_t *)t.data;
    free(t.data);
    return v;
}

/* ---- loops ---- */

START_TEST(test_counter_structure)
{
    Tb *b = tb_new();
    build_counter(b, 10);
    import1(b, NULL, 0, "while/Exit");
    /* one WHILE over one loop variable, the fetch is its output 0 */
    ck_assert_int_eq(count_op(gr, OP_WHILE, true), 1);
    IrNode *w = find_op(gr, OP_WHILE);
    ck_assert_int_eq(w->n_inputs, 1);
    ck_assert_int_eq(const_int(w->inputs[0]), 0);
    ck_assert_ptr_eq(gr->fetches[0].value.node, w);
    ck_assert_int_eq(gr->fetches[0].value.index, 0);
    /* cond: arg0 < 10 (the Const placed in the frame by ^while/Merge) */
    const IrGraph *c = w->regions[0], *body = w->regions[1];
    ck_assert_int_eq(c->n_feeds, 1);
    ck_assert_int_eq(c->n_fetches, 1);
    const IrNode *lt = c->fetches[0].value.node;
    ck_assert_int_eq(lt->op, OP_LT);
    ck_assert_ptr_eq(lt->inputs[0].node, c->feeds[0].arg);
    ck_assert_int_eq(const_int(lt->inputs[1]), 10);
    /* body: arg0 + 1 */
    const IrNode *add = body->fetches[0].value.node;
    ck_assert_int_eq(add->op, OP_ADD);
    ck_assert_ptr_eq(add->inputs[0].node, body->feeds[0].arg);
    ck_assert_int_eq(const_int(add->inputs[1]), 1);
    ck_assert(ir_verify(gr, &st));
}
END_TEST

START_TEST(test_counter_runs)
{
    Tb *b = tb_new();
    build_counter(b, 10);
    /* i: 0, 1, ..., 10, then 10 < 10 fails */
    ck_assert_int_eq(run_i32(b, "counter", NULL, 0, "while/Exit"), 10);
}
END_TEST

/* A TensorArray accumulated in a loop, as tf.while_loop + TensorArray.write
 * builds it: ta = TensorArrayV3(size 5, element_shape []); i = 0,
 * flow = ta.flow; while i < 5: flow = ta.write(i, i * i + 1.0, flow);
 * i += 1; then stack = ta.gather([0..4], flow) = [1, 2, 5, 10, 17]
 * (by hand: i*i + 1 for i = 0..4) and size = 5.  The handle enters the loop
 * as a loop invariant (Enter is_constant), the flow as a loop variable. */
static void build_ta_accumulate(Tb *b)
{
    Tensorflow__NodeDef *nd;
    cst_i32(b, "size", 5, NULL);
    nd = tb_node(b, "ta", "TensorArrayV3", "size", NULL);
    tb_attr_type(nd, "dtype", 1 /* DT_FLOAT */);
    tb_attr_shape(nd, "element_shape", 0, NULL);
    tb_attr_b(nd, "dynamic_size", false);
    tb_attr_b(nd, "clear_after_read", true);
    tb_attr_b(nd, "identical_element_shapes", true);
    tb_attr_s(nd, "tensor_array_name", "");
    cst_i32(b, "i0", 0, NULL);
    loop_var(b, "while", "", "i0", "while/ctx", "while/add");
    loop_var(b, "while", "_1", "ta:1", "while/ctx", "while/write");
    enter(b, "while/Enter_2", "ta", "while/ctx", true);
    cst_i32(b, "while/Less/y", 5, "^while/Merge");
    tb_node(b, "while/Less", "Less", "while/Merge", "while/Less/y", NULL);
    tb_node(b, "while/LoopCond", "LoopCond", "while/Less", NULL);
    /* value = float(i * i) + 1 */
    tb_node(b, "while/sq", "Mul", "while/Identity", "while/Identity", NULL);
    nd = tb_node(b, "while/sqf", "Cast", "while/sq", NULL);
    tb_attr_type(nd, "SrcT", 3);
    tb_attr_type(nd, "DstT", 1);
    tb_attr_b(nd, "Truncate", false);
    cst_f32(b, "while/one", 1.0f, "^while/Identity");
    tb_node(b, "while/val", "AddV2", "while/sqf", "while/one", NULL);
    nd = tb_node(b, "while/write", "TensorArrayWriteV3", "while/Enter_2", "while/Identity", "while/val",
                 "while/Identity_1", NULL);
    tb_attr_type(nd, "T", 1);
    cst_i32(b, "while/add/y", 1, "^while/Identity");
    tb_node(b, "while/add", "AddV2", "while/Identity", "while/add/y", NULL);
    /* after the loop */
    Tensorflow__TensorProto *r = tb_const(b, "range", 3, 1, TB_DIMS(5));
    r->n_int_val = 5;
    r->int_val = tb_alloc(5 * sizeof *r->int_val);
    for (int k = 0; k < 5; k++)
        r->int_val[k] = k;
    nd = tb_node(b, "stack", "TensorArrayGatherV3", "ta", "range", "while/Exit_1", NULL);
    tb_attr_type(nd, "dtype", 1);
    tb_attr_shape(nd, "element_shape", 0, NULL);
    tb_node(b, "n", "TensorArraySizeV3", "ta", "while/Exit_1", NULL);
}

START_TEST(test_tensor_array_accumulate)
{
    Tb *b = tb_new();
    build_ta_accumulate(b);
    const char *fetches[] = {"stack", "n"};
    tcrt_tensor out[2];
    run_graph(b, "ta_acc", NULL, 0, fetches, 2, out);
    ck_assert_int_eq(out[0].dtype, TCRT_F32);
    ck_assert_int_eq(out[0].rank, 1);
    ck_assert_int_eq(out[0].dims[0], 5);
    const float *v = out[0].data;
    const float want[5] = {1, 2, 5, 10, 17};
    for (int k = 0; k < 5; k++)
        ck_assert_float_eq(v[k], want[k]);
    ck_assert_int_eq(tcrt_tensor_count(&out[1]), 1);
    ck_assert_int_eq(*(const int32_t *)out[1].data, 5);
    free(out[0].data);
    free(out[1].data);
}
END_TEST

START_TEST(test_two_vars_invariant)
{
    Tb *b = tb_new();
    build_two_vars(b);
    TfFeedSpec spec = {"k", false, {0, {0}}, TCRT_INVALID, NULL};
    const char *fetches[2] = {"while/Exit", "while/Exit_1"};
    import_spec(b, &spec, 1, fetches, 2);
    /* WHILE(i0, s0, k): two loop variables and the invariant k */
    IrNode *w = find_op(gr, OP_WHILE);
    ck_assert_int_eq(w->n_inputs, 3);
    ck_assert_int_eq(w->inputs[2].node->op, OP_ARG);
    const IrGraph *body = w->regions[1];
    ck_assert_int_eq(body->n_fetches, 3);
    ck_assert_int_eq(w->regions[0]->n_feeds, 3);
    /* the body returns the invariant unchanged and multiplies by it */
    ck_assert_ptr_eq(body->fetches[2].value.node, body->feeds[2].arg);
    const IrNode *mul = body->fetches[1].value.node;
    ck_assert_int_eq(mul->op, OP_MUL);
    ck_assert_ptr_eq(mul->inputs[1].node, body->feeds[2].arg);
    ck_assert_ptr_eq(gr->fetches[1].value.node, w);
    ck_assert_int_eq(gr->fetches[1].value.index, 1);

    /* k = [2, 3]: s = [2^4, 3^4] = [16, 81]; i = 4 */
    float k[2] = {2, 3};
    Feed feed = {"k", TCRT_F32, 1, {2}, k};
    tcrt_tensor out[2];
    run_graph(b, "two_vars", &feed, 1, fetches, 2, out);
    ck_assert_int_eq(*(const int32_t *)out[0].data, 4);
    ck_assert_int_eq(out[1].dtype, TCRT_F32);
    const float *s = out[1].data;
    ck_assert(s[0] == 16 && s[1] == 81);
    free(out[0].data);
    free(out[1].data);
}
END_TEST

START_TEST(test_nested_loops)
{
    Tb *b = tb_new();
    build_nested(b);
    import1(b, NULL, 0, "outer/Exit_1");
    /* the inner WHILE lives in the outer body, not at top level */
    ck_assert_int_eq(count_op(gr, OP_WHILE, false), 1);
    ck_assert_int_eq(count_op(gr, OP_WHILE, true), 2);
    IrNode *w = find_op(gr, OP_WHILE);
    IrNode *inner = find_op(w->regions[1], OP_WHILE);
    /* inner operands: j0 = 0 and acc = the outer total (loop variables, in
     * the order the walk meets their Merges), then the invariant i: both
     * outer values are parameters of the outer body */
    ck_assert_int_eq(inner->n_inputs, 3);
    int n_const = 0, n_arg = 0;
    for (int i = 0; i < 3; i++) {
        if (ir_is_const(inner->inputs[i]) && const_int(inner->inputs[i]) == 0)
            n_const++;
        else if (inner->inputs[i].node->op == OP_ARG)
            n_arg++;
    }
    ck_assert_int_eq(n_const, 1);
    ck_assert_int_eq(n_arg, 2);
    ck_assert_int_eq(inner->inputs[2].node->op, OP_ARG);
    ck_assert_ptr_ne(inner->inputs[0].node, inner->inputs[2].node);
    ck_assert(ir_verify(gr, &st));
    /* sum over i < 3, j < 4 of i*j = 3 * 6 = 18 */
    ck_assert_int_eq(run_i32(b, "nested", NULL, 0, "outer/Exit_1"), 18);
}
END_TEST

START_TEST(test_cond_in_loop)
{
    Tb *b = tb_new();
    build_cond_in_loop(b);
    import1(b, NULL, 0, "while/Exit_1");
    /* the cond's predicate changes every iteration: a COND in the body */
    ck_assert_int_eq(count_op(gr, OP_COND, false), 0);
    IrNode *w = find_op(gr, OP_WHILE);
    ck_assert_int_eq(count_op(w->regions[1], OP_COND, false), 1);
    ck_assert_int_eq(count_op(w->regions[0], OP_COND, true), 0);
    ck_assert(ir_verify(gr, &st));
    /* x after i = 0..5: 0, -1, 1, 0, 4, 3 */
    ck_assert_int_eq(run_i32(b, "cond_in_loop", NULL, 0, "while/Exit_1"), 3);
}
END_TEST

START_TEST(test_fed_trip_count)
{
    Tb *b = tb_new();
    build_fed_trip_count(b);
    TfFeedSpec spec = {"n", false, {0, {0}}, TCRT_INVALID, NULL};
    import1(b, &spec, 1, "while/Exit_1");
    IrNode *w = find_op(gr, OP_WHILE);
    ck_assert_int_eq(w->n_inputs, 3); /* i, a, n */
    /* the cond compares with the invariant n (parameter 2) */
    const IrNode *lt = w->regions[0]->fetches[0].value.node;
    ck_assert_int_eq(lt->op, OP_LT);
    ck_assert_ptr_eq(lt->inputs[1].node, w->regions[0]->feeds[2].arg);
    /* a = 2 * max(n, 0) */
    int32_t n = 7;
    Feed feed = {"n", TCRT_I32, 0, {0}, &n};
    ck_assert_int_eq(run_i32(b, "trip7", &feed, 1, "while/Exit_1"), 14);
    n = 0;
    ck_assert_int_eq(run_i32(b, "trip0", &feed, 1, "while/Exit_1"), 0);
    n = -3;
    ck_assert_int_eq(run_i32(b, "trip_neg", &feed, 1, "while/Exit_1"), 0);
}
END_TEST

/* ---- conds ---- */

START_TEST(test_cond_fed_predicate_structure)
{
    Tb *b = tb_new();
    build_cond(b, -1);
    TfFeedSpec specs[2] = {{"x", false, {0, {0}}, TCRT_INVALID, NULL},
                           {"p", false, {0, {0}}, TCRT_INVALID, NULL}};
    const char *fetches[3] = {"out", "out_idx", "c"};
    import_spec(b, specs, 2, fetches, 3);
    /* one COND per Merge, on the fed predicate */
    ck_assert_int_eq(count_op(gr, OP_COND, true), 2);
    const IrNode *cn = gr->fetches[0].value.node;
    ck_assert_int_eq(cn->op, OP_COND);
    ck_assert_int_eq(cn->inputs[0].node->op, OP_ARG); /* selector: p */
    /* region 0 is the true branch: x * 2; region 1: x + 10 */
    ck_assert_int_eq(cn->regions[0]->fetches[0].value.node->op, OP_MUL);
    ck_assert_int_eq(cn->regions[1]->fetches[0].value.node->op, OP_ADD);
    /* the branch-constant cond needs no operand beyond the selector */
    const IrNode *cc = gr->fetches[2].value.node;
    ck_assert_int_eq(cc->op, OP_COND);
    ck_assert(ir_is_const(cc->regions[0]->fetches[0].value));
    /* value_index: select(p, 1, 0) */
    ck_assert_int_eq(gr->fetches[1].value.node->op, OP_SELECT);
    ck_assert(ir_verify(gr, &st));
}
END_TEST

START_TEST(test_cond_fed_predicate_runs)
{
    Tb *b = tb_new();
    build_cond(b, -1);
    float x[2] = {1, 2};
    const char *fetches[3] = {"out", "out_idx", "c"};
    for (int p = 0; p < 2; p++) {
        uint8_t pv = (uint8_t)p;
        Feed feeds[2] = {{"x", TCRT_F32, 1, {2}, x}, {"p", TCRT_BOOL, 0, {0}, &pv}};
        tcrt_tensor out[3];
        run_graph(b, p ? "cond_true" : "cond_false", feeds, 2, fetches, 3, out);
        const float *o = out[0].data;
        if (p) /* x * 2 = [2, 4]; Merge(false, true) takes input 1; 7 */
            ck_assert(o[0] == 2 && o[1] == 4);
        else /* x + 10 = [11, 12]; input 0; 5 */
            ck_assert(o[0] == 11 && o[1] == 12);
        ck_assert_int_eq(out[1].dtype, TCRT_I32);
        ck_assert_int_eq(*(const int32_t *)out[1].data, p);
        ck_assert(*(const float *)out[2].data == (p ? 7 : 5));
        for (int i = 0; i < 3; i++)
            free(out[i].data);
    }
}
END_TEST

START_TEST(test_loop_in_cond)
{
    Tb *b = tb_new();
    build_loop_in_cond(b);
    TfFeedSpec specs[2] = {{"x", false, {0, {0}}, TCRT_INVALID, NULL},
                           {"p", false, {0, {0}}, TCRT_INVALID, NULL}};
    import1(b, specs, 2, "cond/Merge");
    /* the WHILE is built inside the true branch */
    ck_assert_int_eq(count_op(gr, OP_WHILE, false), 0);
    IrNode *cn = find_op(gr, OP_COND);
    ck_assert_int_eq(count_op(cn->regions[0], OP_WHILE, false), 1);
    ck_assert_int_eq(count_op(cn->regions[1], OP_WHILE, true), 0);
    ck_assert(ir_verify(gr, &st));
    for (int p = 0; p < 2; p++) {
        int32_t x = 2;
        uint8_t pv = (uint8_t)p;
        Feed feeds[2] = {{"x", TCRT_I32, 0, {0}, &x}, {"p", TCRT_BOOL, 0, {0}, &pv}};
        ck_assert_int_eq(run_i32(b, p ? "loop_in_cond_t" : "loop_in_cond_f", feeds, 2, "cond/Merge"),
                         p ? 11 : 2);
    }
}
END_TEST

/* ControlTrigger is a no-op; a constant placed after it still loads. */
START_TEST(test_control_trigger)
{
    Tb *b = tb_new();
    build_counter(b, 3);
    tb_node(b, "trigger", "ControlTrigger", "^while/Exit", NULL);
    cst_i32(b, "k", 4, "^trigger");
    tb_node(b, "sum", "AddV2", "while/Exit", "k", NULL);
    /* 3 + 4 */
    ck_assert_int_eq(run_i32(b, "trigger", NULL, 0, "sum"), 7);
}
END_TEST

/* A constant predicate is resolved while importing (dead-tensor
 * propagation): no COND, the untaken branch leaves no node. */
START_TEST(test_cond_const_predicate)
{
    for (int p = 0; p < 2; p++) {
        Tb *b = tb_new();
        build_cond(b, p);
        TfFeedSpec spec = {"x", false, {0, {0}}, TCRT_INVALID, NULL};
        const char *fetches[3] = {"out", "out_idx", "c"};
        import_spec(b, &spec, 1, fetches, 3);
        ck_assert_int_eq(count_op(gr, OP_COND, true), 0);
        ck_assert_int_eq(count_op(gr, OP_MUL, true), p);
        ck_assert_int_eq(count_op(gr, OP_ADD, true), !p);
        ck_assert_int_eq(const_int(gr->fetches[1].value), p); /* value_index */
        double c;
        ck_assert(ir_const_scalar(gr->fetches[2].value, &c));
        ck_assert(c == (p ? 7 : 5));
        ir_graph_free(gr);
        gr = NULL;
        if (p) {
            float x[2] = {1, 2};
            Feed feed = {"x", TCRT_F32, 1, {2}, x};
            tcrt_tensor out;
            run_graph(b, "cond_const", &feed, 1, fetches, 1, &out);
            const float *o = out.data;
            ck_assert(o[0] == 2 && o[1] == 4);
            free(out.data);
        }
        tb_free_all();
    }
}
END_TEST

/* --const binds the predicate's input at compile time (as for rvm's
 * downsample_ratio): the cond folds away. */
START_TEST(test_cond_bound_feed)
{
    Tb *b = tb_new();
    build_cond(b, -1);
    uint8_t one = 1;
    tcrt_tensor pv = {&one, TCRT_BOOL, 0, {0}};
    TfFeedSpec specs[2] = {{"x", false, {0, {0}}, TCRT_INVALID, NULL},
                           {"p", true, {0, {0}}, TCRT_INVALID, &pv}};
    import1(b, specs, 2, "out");
    ck_assert_int_eq(count_op(gr, OP_COND, true), 0);
    ck_assert_int_eq(gr->fetches[0].value.node->op, OP_MUL);
}
END_TEST

/* A fetch from the untaken side of a constant Switch has no value. */
START_TEST(test_dead_fetch)
{
    Tb *b = tb_new();
    build_cond(b, 1);
    TfFeedSpec spec = {"x", false, {0, {0}}, TCRT_INVALID, NULL};
    const char *fetches[1] = {"cond/add"};
    TfImportOptions o = {NULL, &spec, 1, fetches, 1, NULL, 0, NULL, NULL, false};
    gr = tf_import(&b->gd, &o, &st);
    ck_assert_ptr_null(gr);
    ck_assert_str_eq(st.msg,
                     "fetch 'cond/add' has no value: it depends on the untaken output of a Switch whose "
                     "predicate is a constant");
}
END_TEST

/* z = Switch(x, p):1 + Switch(x, q):1 lives under two unrelated conds:
 * fine when p and q are constants (both true: x + x), no WHILE/COND form
 * when they are known only at run time. */
START_TEST(test_two_conds_meet)
{
    for (int fed = 0; fed < 2; fed++) {
        Tb *b = tb_new();
        tb_placeholder(b, "x", 3 /* DT_INT32 */, 0, NULL);
        if (fed) {
            tb_placeholder(b, "p", 10, 0, NULL);
            tb_placeholder(b, "q", 10, 0, NULL);
        } else {
            cst_bool(b, "p", true);
            cst_bool(b, "q", true);
        }
        tb_node(b, "a", "Switch", "x", "p", NULL);
        tb_node(b, "b", "Switch", "x", "q", NULL);
        tb_node(b, "z", "AddV2", "a:1", "b:1", NULL);
        tb_node(b, "n", "Neg", "z", NULL);
        TfFeedSpec specs[3] = {{"x", false, {0, {0}}, TCRT_INVALID, NULL},
                               {"p", false, {0, {0}}, TCRT_INVALID, NULL},
                               {"q", false, {0, {0}}, TCRT_INVALID, NULL}};
        const char *fetches[1] = {"n"};
        TfImportOptions o = {NULL, specs, fed ? 3 : 1, fetches, 1, NULL, 0, NULL, NULL, false};
        gr = tf_import(&b->gd, &o, &st);
        if (!fed) {
            ck_assert_msg(gr != NULL, "%s", st.msg);
            ck_assert_int_eq(count_op(gr, OP_ADD, true), 1);
            ir_graph_free(gr);
            gr = NULL;
        } else {
            ck_assert_ptr_null(gr);
            ck_assert_str_eq(st.msg,
                             "node 'z' (AddV2) reads 'a:1' and 'b:1', which lie in different cond branches, "
                             "and a predicate it depends on is known only at run time (bind it with --const "
                             "to resolve the cond when compiling)");
        }
        tb_free_all();
    }
}
END_TEST

/* A value inside a branch of a run-time cond exists only in that branch. */
START_TEST(test_err_fetch_inside_branch)
{
    Tb *b = tb_new();
    build_cond(b, -1);
    TfFeedSpec specs[2] = {{"x", false, {0, {0}}, TCRT_INVALID, NULL},
                           {"p", false, {0, {0}}, TCRT_INVALID, NULL}};
    const char *fetches[1] = {"cond/mul"};
    TfImportOptions o = {"m.pb", specs, 2, fetches, 1, NULL, 0, NULL, NULL, false};
    gr = tf_import(&b->gd, &o, &st);
    ck_assert_ptr_null(gr);
    ck_assert_str_eq(st.msg,
                     "m.pb: fetch 'cond/mul' lies inside a cond branch whose predicate is known only at "
                     "run time; fetch the cond's Merge instead");
}
END_TEST

/* ---- malformed control flow ---- */

START_TEST(test_err_exit_without_enter)
{
    Tb *b = tb_new();
    cst_i32(b, "x", 1, NULL);
    tb_node(b, "exit", "Exit", "x", NULL);
    import_fails(b, "exit",
                 "node 'exit' (Exit): input 'x' is not inside a loop frame (an Exit without an Enter)");
}
END_TEST

START_TEST(test_err_mismatched_frames)
{
    Tb *b = tb_new();
    build_counter(b, 10);
    cst_i32(b, "k", 5, NULL);
    enter(b, "other/Enter", "k", "other/ctx", true);
    set_input(b, "while/add", 1, "other/Enter"); /* the body reads another frame's value */
    import_fails(b, "while/Exit",
                 "node 'while/add' (AddV2) has inputs from different frames: input 0 "
                 "'while/Identity' is in frame 'while/while_context' but input 1 'other/Enter' is "
                 "in frame 'other/ctx'");
}
END_TEST

START_TEST(test_err_next_iteration_without_merge)
{
    Tb *b = tb_new();
    cst_i32(b, "x", 1, NULL);
    tb_node(b, "next", "NextIteration", "x", NULL);
    tb_node(b, "y", "Neg", "next", NULL);
    import_fails(b, "y", "node 'y' (Neg): input 0 'next' is a NextIteration, which may only feed a Merge");
}
END_TEST

START_TEST(test_err_no_loop_cond)
{
    Tb *b = tb_new();
    build_counter(b, 10);
    set_input(b, "while/Switch", 1, "while/Less"); /* no LoopCond */
    import_fails(b, "while/Exit",
                 "node 'while/Exit' (Exit): leaves loop frame 'while/while_context', which has no LoopCond");
}
END_TEST

START_TEST(test_err_merge_without_enter)
{
    Tb *b = tb_new();
    build_counter(b, 10);
    set_input(b, "while/Merge", 0, "i0");
    import_fails(
        b, "while/Exit",
        "node 'while/Merge' (Merge): has a NextIteration input ('while/NextIteration') but no Enter input");
}
END_TEST

START_TEST(test_err_two_loop_conds)
{
    Tb *b = tb_new();
    build_counter(b, 10);
    tb_node(b, "while/LoopCond_1", "LoopCond", "while/Less", NULL);
    tb_node(b, "while/Exit_9", "Exit", "while/Switch", NULL);
    tb_node(b, "both", "AddN", "while/Exit", "while/Exit_9", "while/LoopCond_1", NULL);
    import_fails(b, "both",
                 "loop frame 'while/while_context' has a second LoopCond (the first is 'while/LoopCond')");
}
END_TEST

/* Every unsupported op in a loop body is reported in one run. */
START_TEST(test_err_unsupported_in_body)
{
    Tb *b = tb_new();
    build_counter(b, 10);
    tb_node(b, "while/weird", "FrobnicateTensor", "while/Identity", NULL);
    tb_node(b, "while/weirder", "DefrobnicateTensor", "while/weird", NULL);
    set_input(b, "while/add", 0, "while/weirder");
    import_fails(b, "while/Exit", "unsupported TensorFlow op 'FrobnicateTensor' (node 'while/weird')");
    ck_assert_msg(strstr(st.msg, "unsupported TensorFlow op 'DefrobnicateTensor' (node 'while/weirder')"),
                  "%s", st.msg);
}
END_TEST

/* A loop variable must keep its shape (static shapes). */
START_TEST(test_err_loop_var_changes_shape)
{
    Tb *b = tb_new();
    cst_i32(b, "i0", 0, NULL);
    tb_const_f(b, "s0", 1, TB_DIMS(2), 1, TB_F(1));
    loop_var(b, "while", "", "i0", "while/ctx", "while/add");
    loop_var(b, "while", "_1", "s0", "while/ctx", "while/concat");
    cst_i32(b, "while/Less/y", 3, "^while/Merge");
    tb_node(b, "while/Less", "Less", "while/Merge", "while/Less/y", NULL);
    tb_node(b, "while/LoopCond", "LoopCond", "while/Less", NULL);
    cst_i32(b, "while/add/y", 1, "^while/Identity");
    tb_node(b, "while/add", "AddV2", "while/Identity", "while/add/y", NULL);
    cst_i32(b, "while/concat/axis", 0, "^while/Identity");
    tb_attr_i(tb_node(b, "while/concat", "ConcatV2", "while/Identity_1", "while/Identity_1",
                      "while/concat/axis", NULL),
              "N", 2);
    import_fails(b, "while/Exit_1",
                 "loop variable 'while/Merge_1' (Merge) enters the loop as float32[2] but "
                 "'while/NextIteration_1' (NextIteration) gives it float32[4]");
}
END_TEST

/* Out of memory at every allocation of an import with loops and conds:
 * a clean ST_NOMEM, never a crash (run under the debug allocator). */
START_TEST(test_oom)
{
    Tb *b = tb_new();
    build_cond_in_loop(b);
    build_loop_in_cond(b);
    TfFeedSpec specs[2] = {{"x", false, {0, {0}}, TCRT_INVALID, NULL},
                           {"p", false, {0, {0}}, TCRT_INVALID, NULL}};
    const char *fetches[2] = {"while/Exit_1", "cond/Merge"};
    TfImportOptions o = {NULL, specs, 2, fetches, 2, NULL, 0, NULL, NULL, false};
    int n;
    for (n = 1; n < 20000; n++) {
        Status s2 = ST_INIT;
        xx_fail_alloc_set(n);
        IrGraph *g = tf_import(&b->gd, &o, &s2);
        xx_fail_alloc_set(0);
        if (g) {
            ck_assert(st_ok(&s2));
            ck_assert_int_eq(count_op(g, OP_WHILE, true), 2);
            ir_graph_free(g);
            break;
        }
        ck_assert_msg(s2.code == ST_NOMEM, "N=%d: code %d: %s", n, s2.code, s2.msg);
    }
    ck_assert_int_gt(n, 9); /* the top graph and 8 regions at least */
    ck_assert_int_lt(n, 20000);
}
END_TEST

static Suite *cf_suite(void)
{
    Suite *s = suite_create("tf_control_flow");
    TCase *tc = tcase_create("control_flow");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_counter_structure);
    tcase_add_test(tc, test_counter_runs);
    tcase_add_test(tc, test_tensor_array_accumulate);
    tcase_add_test(tc, test_two_vars_invariant);
    tcase_add_test(tc, test_nested_loops);
    tcase_add_test(tc, test_cond_in_loop);
    tcase_add_test(tc, test_fed_trip_count);
    tcase_add_test(tc, test_cond_fed_predicate_structure);
    tcase_add_test(tc, test_cond_fed_predicate_runs);
    tcase_add_test(tc, test_loop_in_cond);
    tcase_add_test(tc, test_control_trigger);
    tcase_add_test(tc, test_cond_const_predicate);
    tcase_add_test(tc, test_cond_bound_feed);
    tcase_add_test(tc, test_dead_fetch);
    tcase_add_test(tc, test_two_conds_meet);
    tcase_add_test(tc, test_err_fetch_inside_branch);
    tcase_add_test(tc, test_err_exit_without_enter);
    tcase_add_test(tc, test_err_mismatched_frames);
    tcase_add_test(tc, test_err_next_iteration_without_merge);
    tcase_add_test(tc, test_err_no_loop_cond);
    tcase_add_test(tc, test_err_merge_without_enter);
    tcase_add_test(tc, test_err_two_loop_conds);
    tcase_add_test(tc, test_err_unsupported_in_body);
    tcase_add_test(tc, test_err_loop_var_changes_shape);
    tcase_add_test(tc, test_oom);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    if (!mkdtemp(tmp_dir))
        return 1;
    SRunner *sr = srunner_create(cf_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", tmp_dir, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
    return failed ? 1 : 0;
}
