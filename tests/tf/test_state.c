/* tests/tf/test_state.c - Check suite for TensorFlow variables, assignments
 * and optimizer ops (compiler/tf/tf_ops_state.c, the variable and target
 * handling of tf_import.c, --train-op and --signature in the driver).
 *
 * Structure tests import small graphs (data/state_*.pbtxt, or built in C)
 * and look at the IR: VARIABLE nodes with their initial values, ASSIGNs,
 * read-after-assign.  Numeric tests compile with the driver (in process)
 * and run the executable: one run is one step, and `--repeat N` runs it
 * N + 1 times in one process (the state carries over), so runs 1, 2, 3
 * are the results of no flag, --repeat 1 and --repeat 2.  Expected values
 * are derived by hand in the data files' header comments.  Corpus tests
 * (SavedModel inference, a training graph) use ../shared/models and are
 * skipped when it is absent.  Error tests pin the messages.
 *
 * Usage: test_tf_state DATA_DIR [MODELS_DIR]
 */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/driver.h"
#include "compiler/frontend/frontend.h"
#include "compiler/tf/tf.h"
#include "passes/passes.h"
#include "tests/tf/tf_build.h"
#include "tests/tfcc_inproc.h"
#include "tcrt_ckpt.h"

static const char *data_dir;
static const char *models_dir;
static char tmp_dir[] = "/tmp/tfcc-state-XXXXXX";

static const char *data(const char *name)
{
    static char buf[4][1024];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 1024, "%s/%s", data_dir, name);
    return b;
}

/* <tmp>/name in one of 8 rotating buffers (copy what must live longer). */
static const char *tmp(const char *name)
{
    static char buf[8][1200];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 1200, "%s/%s", tmp_dir, name);
    return b;
}

/* An executable's path, kept for the whole test. */
static const char *exe_path(const char *name)
{
    static char buf[4][1200];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 1200, "%s/%s", tmp_dir, name);
    return b;
}

/* ---- structure ---- */

static FeModel model;
static IrGraph *gr;
static Status st;

static void setup(void)
{
    memset(&model, 0, sizeof model);
    gr = NULL;
    st = (Status)ST_INIT;
}

static void teardown(void)
{
    if (gr)
        ir_graph_free(gr);
    gr = NULL;
    fe_model_free(&model);
    tb_free_all();
}

static IrGraph *import_gd(const Tensorflow__GraphDef *gd, const char *const *fetches,
                          const char *const *targets)
{
    int n_f = 0, n_t = 0;
    while (fetches && fetches[n_f])
        n_f++;
    while (targets && targets[n_t])
        n_t++;
    TfImportOptions o = {
        .file = "t.pbtxt", .fetches = fetches, .n_fetches = n_f, .targets = targets, .n_targets = n_t};
    return tf_import(gd, &o, &st);
}

static void import(const char *file, const char *const *fetches, const char *const *targets)
{
    ck_assert_msg(fe_load(data(file), &model, &st), "%s", st.msg);
    gr = import_gd(model.graph, fetches, targets);
    ck_assert_msg(gr != NULL, "import failed: %s", st.msg);
    ck_assert_msg(ir_verify(gr, &st), "%s", st.msg);
}

static int count_op(const IrGraph *g, Op op)
{
    int n = 0;
    IR_FOR_EACH(g, x) {
        if (x->op == op)
            n++;
    }
    return n;
}

static IrValue fetched(const char *name)
{
    for (int i = 0; i < gr->n_fetches; i++)
        if (!strcmp(gr->fetches[i].name, name))
            return gr->fetches[i].value;
    ck_abort_msg("no fetch %s", name);
    return (IrValue){NULL, 0};
}

START_TEST(test_counter_ir)
{
    import("state_counter.pbtxt", (const char *[]){"inc", "snap", "after", NULL}, NULL);
    ck_assert_int_eq(count_op(gr, OP_VARIABLE), 1);
    ck_assert_int_eq(count_op(gr, OP_ASSIGN), 1);
    IrValue inc = fetched("inc"), snap = fetched("snap"), after = fetched("after");
    /* AssignAdd's output is the ASSIGN: the new value */
    ck_assert_int_eq(inc.node->op, OP_ASSIGN);
    IrNode *var = inc.node->inputs[0].node;
    ck_assert_int_eq(var->op, OP_VARIABLE);
    ck_assert_str_eq(var->origin, "v");
    ck_assert_int_eq(var->p.i[0], 1); /* a float variable of a GraphDef is trainable */
    double init;
    ck_assert(ir_const_scalar(var->inputs[0], &init));
    ck_assert(init == 10.0); /* from the initializer v/Assign */
    /* no control dependency: the value at the start of the run */
    ck_assert_ptr_eq(snap.node, var);
    /* Identity(v) with ^inc reads the assigned value */
    ck_assert_ptr_eq(after.node, inc.node);
}
END_TEST

/* Only the assignments in the fetches' and targets' closure are made:
 * fetching a read alone leaves the variable unassigned (it is frozen
 * later by passes/state.c). */
START_TEST(test_read_only)
{
    import("state_counter.pbtxt", (const char *[]){"snap", NULL}, NULL);
    ck_assert_int_eq(count_op(gr, OP_ASSIGN), 0);
    ck_assert_int_eq(fetched("snap").node->op, OP_VARIABLE);
}
END_TEST

/* A target's control closure: "train" (NoOp) reaches b1p_upd, whose Mul
 * has ^adam, so every optimizer update is made, one ASSIGN per variable:
 * sgd 1, mom 2, nest 2, adam 3, b1p 1, b2p 1, rgd 1, km 2, rms 3, ada 2. */
START_TEST(test_target_closure)
{
    import("state_optim.pbtxt", (const char *[]){"m_read", NULL}, (const char *[]){"train", NULL});
    ck_assert_int_eq(count_op(gr, OP_ASSIGN), 18);
    ck_assert_int_eq(count_op(gr, OP_VARIABLE), 18);
    /* m_read = Identity(m_adam) with ^adam: ApplyAdam's assignment of m */
    IrValue m = fetched("m_read");
    ck_assert_int_eq(m.node->op, OP_ASSIGN);
    ck_assert_str_eq(m.node->inputs[0].node->origin, "m_adam");
    ck_assert_str_eq(m.node->origin, "adam");
}
END_TEST

/* ResourceGather reads rows of a resource variable (VarIsInitializedOp of
 * it is the constant true); nothing assigns it,
 * so the pipeline freezes it and folds the gather: rows 2 and 0 of
 * [[1,2],[3,4],[5,6]] are [[5,6],[1,2]]. */
START_TEST(test_resource_gather)
{
    Tb *b = tb_new();
    Tensorflow__NodeDef *e = tb_node(b, "e", "VarHandleOp", NULL);
    tb_attr_type(e, "dtype", TENSORFLOW__DATA_TYPE__DT_FLOAT);
    tb_attr_shape(e, "shape", 2, (const int64_t[]){3, 2});
    tb_const_f(b, "init", 2, (const int64_t[]){3, 2}, 6, (const float[]){1, 2, 3, 4, 5, 6});
    tb_node(b, "e/Assign", "AssignVariableOp", "e", "init", NULL);
    tb_const_i32(b, "idx", 1, (const int64_t[]){2}, 2, (const int32_t[]){2, 0});
    Tensorflow__NodeDef *g = tb_node(b, "g", "ResourceGather", "e", "idx", NULL);
    tb_attr_type(g, "dtype", TENSORFLOW__DATA_TYPE__DT_FLOAT);
    tb_node(b, "ok", "VarIsInitializedOp", "e", NULL);
    gr = import_gd(&b->gd, (const char *[]){"g", "ok", NULL}, NULL);
    ck_assert_msg(gr != NULL, "%s", st.msg);
    double init_ok; /* variables are initialized before the first run */
    ck_assert(ir_const_scalar(fetched("ok"), &init_ok) && init_ok == 1);
    IrValue v = fetched("g");
    ck_assert_int_eq(v.node->op, OP_GATHER);
    ck_assert_int_eq(v.node->inputs[0].node->op, OP_VARIABLE);
    PipelineOptions po = {0};
    ck_assert_msg(pass_run_pipeline(gr, &po, &st), "%s", st.msg);
    /* frozen: the gather reads the initial value (a constant) */
    ck_assert_int_eq(count_op(gr, OP_VARIABLE), 0);
    v = fetched("g");
    if (v.node->op == OP_COPY) /* a fetched constant gets a copy into its result buffer */
        v = v.node->inputs[0];
    if (v.node->op == OP_CONST) {
        const float *d = v.node->data;
        ck_assert(d[0] == 5 && d[1] == 6 && d[2] == 1 && d[3] == 2);
    } else {
        ck_assert_msg(v.node->op == OP_GATHER && v.node->inputs[0].node->op == OP_CONST, "fetch is %s",
                      ir_op_name(v.node->op));
    }
}
END_TEST

/* ---- errors (messages pinned) ---- */

/* v: float32[2] variable with initializer v/Assign. */
static Tb *var_graph(void)
{
    Tb *b = tb_new();
    Tensorflow__NodeDef *v = tb_node(b, "v", "VariableV2", NULL);
    tb_attr_type(v, "dtype", TENSORFLOW__DATA_TYPE__DT_FLOAT);
    tb_attr_shape(v, "shape", 1, (const int64_t[]){2});
    tb_const_f(b, "init", 1, (const int64_t[]){2}, 2, (const float[]){1, 2});
    tb_node(b, "v/Assign", "Assign", "v", "init", NULL);
    tb_const_f(b, "c3", 1, (const int64_t[]){3}, 3, (const float[]){1, 2, 3});
    tb_const_f(b, "c2", 1, (const int64_t[]){2}, 2, (const float[]){5, 6});
    return b;
}

START_TEST(test_err_assign_shape)
{
    Tb *b = var_graph();
    tb_node(b, "bad", "Assign", "v", "c3", NULL);
    gr = import_gd(&b->gd, (const char *[]){"bad", NULL}, NULL);
    ck_assert_ptr_null(gr);
    ck_assert_str_eq(st.msg,
                     "t.pbtxt: node 'bad' (Assign): assigns float32[3] to variable 'v' of type float32[2] "
                     "(a variable keeps its dtype and shape)");
}
END_TEST

START_TEST(test_err_handle_not_variable)
{
    Tb *b = var_graph();
    Tensorflow__NodeDef *r = tb_node(b, "r", "ReadVariableOp", "c2", NULL);
    tb_attr_type(r, "dtype", TENSORFLOW__DATA_TYPE__DT_FLOAT);
    gr = import_gd(&b->gd, (const char *[]){"r", NULL}, NULL);
    ck_assert_ptr_null(gr);
    ck_assert_str_eq(st.msg,
                     "t.pbtxt: node 'r' (ReadVariableOp): input 0 does not come from a variable: 'c2' "
                     "(Const) is not a VariableV2 or VarHandleOp (a variable reaches an assignment "
                     "directly or through Identity, not through a feed, a loop or a cond)");
}
END_TEST

START_TEST(test_err_no_initial_value)
{
    Tb *b = tb_new();
    Tensorflow__NodeDef *w = tb_node(b, "w", "VariableV2", NULL);
    tb_attr_type(w, "dtype", TENSORFLOW__DATA_TYPE__DT_FLOAT);
    tb_attr_shape(w, "shape", 1, (const int64_t[]){2});
    tb_node(b, "w/read", "Identity", "w", NULL);
    gr = import_gd(&b->gd, (const char *[]){"w/read", NULL}, NULL);
    ck_assert_ptr_null(gr);
    ck_assert_str_eq(st.msg, "t.pbtxt: variable 'w' (VariableV2) has no initial value: not in the checkpoint "
                             "(none given) and no initializer (an Assign to it) in the graph");
}
END_TEST

/* Two Assigns to w, neither named "w/Assign" nor in a collection: which
 * one initializes it is not known. */
START_TEST(test_err_ambiguous_initializer)
{
    Tb *b = tb_new();
    Tensorflow__NodeDef *w = tb_node(b, "w", "VariableV2", NULL);
    tb_attr_type(w, "dtype", TENSORFLOW__DATA_TYPE__DT_FLOAT);
    tb_attr_shape(w, "shape", 1, (const int64_t[]){2});
    tb_const_f(b, "c2", 1, (const int64_t[]){2}, 2, (const float[]){5, 6});
    tb_node(b, "set1", "Assign", "w", "c2", NULL);
    tb_node(b, "set2", "Assign", "w", "c2", NULL);
    tb_node(b, "r", "Identity", "w", NULL);
    gr = import_gd(&b->gd, (const char *[]){"r", NULL}, NULL);
    ck_assert_ptr_null(gr);
    ck_assert_str_eq(st.msg,
                     "t.pbtxt: variable 'w' (VariableV2) has no initial value: not in the checkpoint (none "
                     "given), and several Assigns to it could be its initializer (name it 'w/Assign', or "
                     "list it in the meta graph's variables collection)");
}
END_TEST

/* Two assignments of v in one step: the import makes both, passes/state.c
 * rejects them, naming both nodes. */
START_TEST(test_err_two_assigns)
{
    Tb *b = var_graph();
    tb_node(b, "a1", "Assign", "v", "c2", NULL);
    tb_node(b, "a2", "AssignAdd", "v", "c2", NULL);
    gr = import_gd(&b->gd, NULL, (const char *[]){"a1", "a2", NULL});
    ck_assert_msg(gr != NULL, "%s", st.msg);
    ck_assert_int_eq(count_op(gr, OP_ASSIGN), 2);
    PipelineOptions po = {0};
    ck_assert(!pass_run_pipeline(gr, &po, &st));
    ck_assert_msg(strstr(st.msg, "variable 'v' is assigned twice in one run, by 'a1' (Assign) and 'a2' "
                                 "(AssignAdd)") != NULL,
                  "%s", st.msg);
}
END_TEST

START_TEST(test_err_saver_op)
{
    Tb *b = var_graph();
    tb_node(b, "save/SaveV2", "SaveV2", "c2", NULL);
    gr = import_gd(&b->gd, NULL, (const char *[]){"save/SaveV2", NULL});
    ck_assert_ptr_null(gr);
    ck_assert_str_eq(st.msg,
                     "t.pbtxt: node 'save/SaveV2' (SaveV2) belongs to the saver's save/restore subgraph, "
                     "which is not part of a training step or an inference: fetch or target other nodes "
                     "(checkpoints are read when compiling and written with tcrt_model_save)");
}
END_TEST

START_TEST(test_err_target_unknown)
{
    Tb *b = var_graph();
    gr = import_gd(&b->gd, (const char *[]){"v", NULL}, (const char *[]){"nope", NULL});
    ck_assert_ptr_null(gr);
    ck_assert_str_eq(st.msg, "t.pbtxt: target 'nope' names no node in the graph");
}
END_TEST

/* ---- numbers through the driver ---- */

static void compile(const char *model, const char *exe, const char *const *args)
{
    char *argv[40];
    int n = 0;
    argv[n++] = "tfcc";
    argv[n++] = "compile";
    argv[n++] = (char *)model;
    for (int i = 0; args[i]; i++)
        argv[n++] = (char *)args[i];
    argv[n++] = "-o";
    argv[n++] = (char *)exe;
    argv[n] = NULL;
    Result r = tfcc_argv(n, argv);
    ck_assert_msg(r.rc == 0, "compile %s: %s", model, r.err);
    result_free(&r);
}

/* Runs exe (1 + repeat times in one process) with "--feed" args. */
static void run(const char *exe, int repeat, const char *const *feeds)
{
    char *argv[40], rep[32];
    int n = 0;
    argv[n++] = (char *)exe;
    for (int i = 0; feeds && feeds[i]; i++) {
        argv[n++] = "--feed";
        argv[n++] = (char *)feeds[i];
    }
    if (repeat > 0) {
        snprintf(rep, sizeof rep, "%d", repeat);
        argv[n++] = "--repeat";
        argv[n++] = rep;
    }
    argv[n++] = "--out-dir";
    argv[n++] = (char *)tmp("out");
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(exe, argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed", exe);
}

/* out/FILE.npy as doubles (n values). */
static void result(const char *file, int n, double *got)
{
    char path[1300], msg[256];
    snprintf(path, sizeof path, "%s/%s.npy", tmp("out"), file);
    tcrt_tensor t;
    ck_assert_msg(tcrt_npy_read(path, &t, msg, sizeof msg) == TCRT_OK, "%s", msg);
    ck_assert_int_eq(tcrt_tensor_count(&t), n);
    for (int i = 0; i < n; i++)
        got[i] = t.dtype == TCRT_F32 ? ((const float *)t.data)[i] : ((const double *)t.data)[i];
    free(t.data);
}

static void expect(const char *file, int n, const double *want, double tol)
{
    double got[16];
    result(file, n, got);
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= tol, "%s[%d] = %.9g, want %.9g", file, i, got[i], want[i]);
}

static void write_f32(const char *name, int rank, const int64_t *dims, const float *v)
{
    char msg[256];
    tcrt_tensor t = {(void *)v, TCRT_F32, rank, {0}};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    ck_assert_int_eq(tcrt_npy_write(tmp(name), &t, msg, sizeof msg), TCRT_OK);
}

START_TEST(test_counter_runs)
{
    const char *e = exe_path("counter");
    compile(
        data("state_counter.pbtxt"), e,
        (const char *[]){"--fetch", "inc", "--fetch", "snap", "--fetch", "after", "--fetch", "twice", NULL});
    for (int k = 1; k <= 3; k++) {
        run(e, k - 1, NULL);
        expect("inc", 1, (const double[]){10 + k}, 0);
        expect("snap", 1, (const double[]){10 + k - 1}, 0); /* run-start value */
        expect("after", 1, (const double[]){10 + k}, 0);    /* read after assign */
        expect("twice", 1, (const double[]){2 * (10 + k)}, 0);
    }
}
END_TEST

START_TEST(test_optimizers_run)
{
    const char *e = exe_path("optim");
    compile(data("state_optim.pbtxt"), e,
            (const char *[]){"--train-op", "train", "--fetch", "sgd", "--fetch", "mom", "--fetch", "nest",
                             "--fetch", "adam", "--fetch", "m_read", "--fetch", "rgd_read", "--fetch",
                             "km_read", "--fetch", "rms", "--fetch", "ada", NULL});
    run(e, 0, NULL); /* one step */
    expect("sgd", 2, (const double[]){0.95, 2.1}, 1e-6);
    expect("mom", 2, (const double[]){0.95, 2.1}, 1e-6);
    expect("nest", 2, (const double[]){0.905, 2.19}, 1e-6);
    expect("adam", 2, (const double[]){0.9, 2.1}, 1e-5);
    expect("m_read", 2, (const double[]){0.05, -0.1}, 1e-7);
    expect("rgd_read", 2, (const double[]){0.95, 2.1}, 1e-6);
    expect("km_read", 2, (const double[]){0.95, 2.1}, 1e-6);
    expect("rms", 2, (const double[]){0.6837722, 2.3162278}, 1e-5);
    expect("ada", 2, (const double[]){0.9154846, 2.0953463}, 1e-6);
    run(e, 1, NULL); /* two steps */
    expect("sgd", 2, (const double[]){0.9, 2.2}, 1e-6);
    expect("mom", 2, (const double[]){0.855, 2.29}, 1e-6);
    expect("nest", 2, (const double[]){0.7695, 2.461}, 1e-6);
    expect("adam", 2, (const double[]){0.8, 2.2}, 1e-5);
    expect("m_read", 2, (const double[]){0.095, -0.19}, 1e-7);
    expect("rgd_read", 2, (const double[]){0.9, 2.2}, 1e-6);
    expect("km_read", 2, (const double[]){0.855, 2.29}, 1e-6);
    expect("rms", 2, (const double[]){0.2962427, 2.7037574}, 1e-5);
    expect("ada", 2, (const double[]){0.8509349, 2.1643528}, 1e-6);
}
END_TEST

/* Copies data/state_ckpt.meta.pbtxt to <tmp>/model.meta and writes the
 * checkpoint <tmp>/model with counter_value = 100 (the key the graph's
 * save/RestoreV2 restores v from).  Returns the .meta path. */
static const char *ckpt_model(void)
{
    static char meta[1200];
    snprintf(meta, sizeof meta, "%s", tmp("model.meta"));
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", data("state_ckpt.meta.pbtxt"), meta);
    ck_assert_int_eq(system(cmd), 0);
    float x = 100;
    tcrt_ckpt_entry e = {"counter_value", TCRT_F32, 0, {0}, sizeof x, &x};
    char err[256];
    ck_assert_msg(tcrt_ckpt_write(tmp("model"), &e, 1, err, sizeof err) == TCRT_OK, "%s", err);
    return meta;
}

/* The checkpoint beside X.meta wins over the initializer, found under the
 * key the restore subgraph gives. */
START_TEST(test_checkpoint_runs)
{
    const char *meta = ckpt_model();
    const char *e = exe_path("ckpt");
    compile(meta, e, (const char *[]){"--fetch", "inc", NULL});
    run(e, 0, NULL);
    expect("inc", 1, (const double[]){101}, 0);
    run(e, 1, NULL);
    expect("inc", 1, (const double[]){102}, 0);
}
END_TEST

/* The meta graph's collections: v is in "variables" but not in
 * "trainable_variables"; the checkpoint gives its initial value. */
START_TEST(test_collections)
{
    const char *meta = ckpt_model();
    ck_assert_msg(fe_load(meta, &model, &st), "%s", st.msg);
    const char *fetches[] = {"inc"};
    char prefix[1200];
    snprintf(prefix, sizeof prefix, "%s", tmp("model"));
    TfImportOptions o = {
        .file = "model.meta", .fetches = fetches, .n_fetches = 1, .checkpoint = prefix, .meta = model.meta};
    gr = tf_import(model.graph, &o, &st);
    ck_assert_msg(gr != NULL, "%s", st.msg);
    IrNode *var = fetched("inc").node->inputs[0].node;
    ck_assert_int_eq(var->op, OP_VARIABLE);
    ck_assert_int_eq(var->p.i[0], 0); /* not trainable */
    double init;
    ck_assert(ir_const_scalar(var->inputs[0], &init));
    ck_assert(init == 100.0);
}
END_TEST

/* ---- the corpus (SKIP when ../shared/models is absent) ---- */

static bool have_model(const char *rel, char *path, size_t n)
{
    struct stat sb;
    snprintf(path, n, "%s/%s", models_dir ? models_dir : "", rel);
    return models_dir && stat(path, &sb) == 0;
}

/* TensorFlow's half_plus_two test SavedModels (tensorflow/cc/saved_model/
 * testdata, generated by saved_model_half_plus_two.py: y = a*x + b with
 * variables a = 0.5, b = 2; TF Serving's half_plus_three: b = 3), compiled
 * for the signature serving_default (x:0 -> y:0). */
START_TEST(test_half_plus_two)
{
    static const struct {
        const char *rel;
        double b;
    } m[] = {
        {"github-tensorflow/cc_saved_model_half_plus_two/saved_model.pb", 2},
        {"github-tensorflow/cc_saved_model_half_plus_two_pbtxt/saved_model.pbtxt", 2},
        {"github-tfserving/saved_model_half_plus_three/saved_model.pb", 3},
    };
    char path[1200];
    write_f32("x.npy", 2, (const int64_t[]){4, 1}, (const float[]){0, 1, 2, -4});
    char feed[1300];
    snprintf(feed, sizeof feed, "x:0=%s", tmp("x.npy"));
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        if (!have_model(m[i].rel, path, sizeof path))
            continue;
        const char *e = exe_path("half");
        compile(path, e, (const char *[]){"--signature", "serving_default", "--feed", "x:0:4x1", NULL});
        run(e, 0, (const char *[]){feed, NULL});
        double b = m[i].b;
        expect("y_0", 4, (const double[]){b, 0.5 + b, 1 + b, -2 + b}, 0);
    }
    /* TF2 (saved_model_half_plus_two_tf2_cpu): VarHandleOps without
     * initializers in the graph, so a = 0.5, b = 2 can only come from the
     * checkpoint, under the object-based keys "a/.ATTRIBUTES/VARIABLE_VALUE"
     * that the restore function's RestoreV2 gives them; the serving
     * function reads them through resource arguments of a
     * StatefulPartitionedCall.  Default signature: serving_default_x:0
     * float32[1] -> StatefulPartitionedCall_5:0. */
    if (have_model("github-tfserving/saved_model_half_plus_two_tf2_cpu/saved_model.pb", path, sizeof path)) {
        const char *e = exe_path("half2");
        compile(path, e, (const char *[]){NULL});
        write_f32("x1.npy", 1, (const int64_t[]){1}, (const float[]){3});
        snprintf(feed, sizeof feed, "serving_default_x:0=%s", tmp("x1.npy"));
        run(e, 0, (const char *[]){feed, NULL});
        expect("StatefulPartitionedCall_5_0", 1, (const double[]){3.5}, 0);
    }
}
END_TEST

START_TEST(test_signature_unknown)
{
    char path[1200];
    if (!have_model("github-tensorflow/cc_saved_model_half_plus_two/saved_model.pb", path, sizeof path))
        return;
    Result r = tfcc("compile", path, "--signature", "nope", "-o", tmp("x"), NULL);
    ck_assert_int_eq(r.rc, 1);
    char want[1600];
    snprintf(want, sizeof want,
             "error: %s: no signature 'nope' (the model has 'classify_x2_to_y3', 'classify_x_to_y', "
             "'regress_x2_to_y3', 'regress_x_to_y', 'regress_x_to_y2', 'serving_default')\n",
             path);
    ck_assert_str_eq(r.err, want);
    result_free(&r);
}
END_TEST

/* TensorFlow.NET's xor.meta: a 2-layer MLP (TruncatedNormal initializers,
 * Relu, Sigmoid, mean squared error, ApplyGradientDescent; train_op is the
 * AssignAdd of global_step with control dependencies on the updates),
 * trained as it is on the XOR truth table.  Its initial weights come from
 * tfcc's deterministic random stream, not TensorFlow's, so the bound is
 * loose: after 1000 steps the loss is below half its first value
 * (measured: 0.2998 at step 1, 0.066 at step 1001). */
START_TEST(test_xor_trains)
{
    char path[1200];
    if (!have_model("github-tfnet/xor/xor.meta", path, sizeof path))
        return;
    const char *e = exe_path("xor");
    compile(path, e,
            (const char *[]){"--train-op", "train_op", "--fetch", "loss", "--feed", "Placeholder", "--feed",
                             "Placeholder_1", NULL});
    write_f32("xx.npy", 2, (const int64_t[]){4, 2}, (const float[]){0, 0, 0, 1, 1, 0, 1, 1});
    char msg[256];
    tcrt_tensor ty = {(void *)(const int32_t[]){0, 1, 1, 0}, TCRT_I32, 1, {4}};
    ck_assert_int_eq(tcrt_npy_write(tmp("xy.npy"), &ty, msg, sizeof msg), TCRT_OK);
    char f1[1300], f2[1300];
    snprintf(f1, sizeof f1, "Placeholder=%s", tmp("xx.npy"));
    snprintf(f2, sizeof f2, "Placeholder_1=%s", tmp("xy.npy"));
    double first, last;
    run(e, 0, (const char *[]){f1, f2, NULL});
    result("loss", 1, &first);
    run(e, 1000, (const char *[]){f1, f2, NULL});
    result("loss", 1, &last);
    ck_assert_msg(last < 0.5 * first, "loss %g after 1001 steps, %g after 1", last, first);
}
END_TEST

/* A corpus training graph compiled as it is (--train-op its minimize op,
 * fetching its loss) and run on a learnable batch made here: the loss
 * after 1 + steps steps must be below ratio times the loss of step 1. */
typedef struct Feed {
    const char *name; /* feed and .npy name */
    const char *dims; /* --feed NAME:DIMS, or NULL (the graph's shape) */
} Feed;

static void train_case(const char *rel, const char *train_op, const char *loss, const Feed *feeds,
                       int n_feeds, int steps, double ratio)
{
    char path[1200];
    if (!have_model(rel, path, sizeof path))
        return;
    const char *args[40];
    char fa[8][300], ra[8][1400];
    int n = 0;
    if (!strncmp(train_op, "sig=", 4)) { /* a TF2 training signature */
        args[n++] = "--signature";
        args[n++] = train_op + 4;
    } else {
        args[n++] = "--train-op";
        args[n++] = train_op;
        args[n++] = "--fetch";
        args[n++] = loss;
    }
    const char *run_feeds[9];
    for (int i = 0; i < n_feeds; i++) {
        snprintf(fa[i], sizeof fa[i], "%s%s%s", feeds[i].name, feeds[i].dims ? ":" : "",
                 feeds[i].dims ? feeds[i].dims : "");
        args[n++] = "--feed";
        args[n++] = fa[i];
        char file[300];
        snprintf(file, sizeof file, "%s.npy", feeds[i].name);
        for (char *c = file; *c; c++)
            if (*c == ':' || *c == '/')
                *c = '_';
        snprintf(ra[i], sizeof ra[i], "%s=%s", feeds[i].name, tmp(file));
        run_feeds[i] = ra[i];
    }
    args[n] = NULL;
    run_feeds[n_feeds] = NULL;
    const char *e = exe_path("train");
    compile(path, e, args);
    char out[300];
    snprintf(out, sizeof out, "%s", loss);
    for (char *c = out; *c; c++)
        if (*c == ':' || *c == '/')
            *c = '_';
    double first, last;
    run(e, 0, run_feeds);
    result(out, 1, &first);
    run(e, steps, run_feeds);
    result(out, 1, &last);
    ck_assert_msg(isfinite(first) && isfinite(last) && last < ratio * first,
                  "%s: loss %g after %d steps, %g after 1", rel, last, steps + 1, first);
}

static void write_npy_t(const char *file, tcrt_dtype dt, int rank, const int64_t *dims, const void *v)
{
    char msg[256];
    tcrt_tensor t = {(void *)v, dt, rank, {0}};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    ck_assert_int_eq(tcrt_npy_write(tmp(file), &t, msg, sizeof msg), TCRT_OK);
}

/* tf2onnx's regression checkpoint (MetaGraphDef + checkpoint beside it;
 * pred = W*X + b, loss = sum((pred - Y)^2) / (2n), GradientDescent) on
 * y = 3x + 2, x = 0, 1/8, ..., 7/8 (measured: 1.257 -> 0.184 after 101). */
START_TEST(test_train_regression)
{
    float x[8], y[8];
    for (int i = 0; i < 8; i++) {
        x[i] = (float)i / 8;
        y[i] = 3 * x[i] + 2;
    }
    write_npy_t("X_0.npy", TCRT_F32, 1, (const int64_t[]){8}, x);
    write_npy_t("Y_0.npy", TCRT_F32, 1, (const int64_t[]){8}, y);
    train_case("github-tf2onnx/regression/checkpoint/model.meta", "GradientDescent", "truediv",
               (const Feed[]){{"X:0", "8"}, {"Y:0", "8"}}, 2, 100, 0.5);
}
END_TEST

/* tensorflow/rust's regression_savedmodel (TF2: resource variables
 * restored from object-based checkpoint keys, the signature "train" calls
 * a tf.function whose ResourceApplyGradientDescent updates are control
 * outputs) compiled with --signature train on the same data (measured:
 * 2.35 -> 2e-4 after 101 steps). */
START_TEST(test_train_regression_tf2)
{
    float x[8], y[8];
    for (int i = 0; i < 8; i++) {
        x[i] = (float)i / 8;
        y[i] = 3 * x[i] + 2;
    }
    write_npy_t("train_x_0.npy", TCRT_F32, 1, (const int64_t[]){8}, x);
    write_npy_t("train_y_0.npy", TCRT_F32, 1, (const int64_t[]){8}, y);
    train_case("github-tfrust/regression_savedmodel/saved_model.pb", "sig=train",
               "StatefulPartitionedCall_1:0", (const Feed[]){{"train_x:0", "8"}, {"train_y:0", "8"}}, 2, 100,
               0.1);
}
END_TEST

/* One-hot "images" of 784 pixels where class c lights pixels 70c..70c+69
 * (16 samples, class n % 10); labels as one-hot rows or class ids. */
static void mnist_batch(int n, float *img, float *onehot, int64_t *ids)
{
    memset(img, 0, sizeof(float) * 784 * (size_t)n);
    for (int s = 0; s < n; s++) {
        int c = s % 10;
        for (int k = 70 * c; k < 70 * c + 70; k++)
            img[s * 784 + k] = 1;
        for (int j = 0; onehot && j < 10; j++)
            onehot[s * 10 + j] = j == c;
        if (ids)
            ids[s] = c;
    }
}

/* ML.NET's mnist_lr_model (SavedModel: softmax regression, cross entropy,
 * SGDOptimizer; weights from its checkpoint) on the batch above
 * (measured: 2.303 -> 0.215 after 101 steps). */
START_TEST(test_train_mnist_lr)
{
    static float img[16 * 784], lab[16 * 10];
    mnist_batch(16, img, lab, NULL);
    write_npy_t("Features_0.npy", TCRT_F32, 2, (const int64_t[]){16, 784}, img);
    write_npy_t("Label_0.npy", TCRT_F32, 2, (const int64_t[]){16, 10}, lab);
    train_case("github-mlnet-testdata/mnist_lr_model/saved_model.pb", "SGDOptimizer", "Loss",
               (const Feed[]){{"Features:0", "16x784"}, {"Label:0", "16x10"}}, 2, 100, 0.5);
}
END_TEST

/* ML.NET's mnist_conv_model (SavedModel: two conv + pool layers, dropout,
 * sparse softmax cross entropy, MomentumOp; learning rate fed 0.01) on 8
 * images of the batch above (measured: 12.6 -> 1e-4 after 101 steps). */
START_TEST(test_train_mnist_conv)
{
    static float img[8 * 784];
    int64_t ids[8];
    mnist_batch(8, img, NULL, ids);
    write_npy_t("Features_0.npy", TCRT_F32, 4, (const int64_t[]){8, 28, 28, 1}, img);
    write_npy_t("Label_0.npy", TCRT_I64, 1, (const int64_t[]){8}, ids);
    write_npy_t("learning_rate_0.npy", TCRT_F32, 0, NULL, (const float[]){0.01f});
    train_case("github-mlnet-testdata/mnist_conv_model/saved_model.pb", "MomentumOp", "Loss",
               (const Feed[]){{"Features:0", "8x28x28x1"}, {"Label:0", "8"}, {"learning_rate:0", "scalar"}},
               3, 100, 0.1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("tf_state");
    TCase *t = tcase_create("ir");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_counter_ir);
    tcase_add_test(t, test_read_only);
    tcase_add_test(t, test_target_closure);
    tcase_add_test(t, test_collections);
    tcase_add_test(t, test_resource_gather);
    suite_add_tcase(s, t);
    t = tcase_create("errors");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_err_assign_shape);
    tcase_add_test(t, test_err_handle_not_variable);
    tcase_add_test(t, test_err_no_initial_value);
    tcase_add_test(t, test_err_two_assigns);
    tcase_add_test(t, test_err_ambiguous_initializer);
    tcase_add_test(t, test_err_saver_op);
    tcase_add_test(t, test_err_target_unknown);
    suite_add_tcase(s, t);
    t = tcase_create("run");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, test_counter_runs);
    tcase_add_test(t, test_optimizers_run);
    tcase_add_test(t, test_checkpoint_runs);
    tcase_add_test(t, test_half_plus_two);
    tcase_add_test(t, test_signature_unknown);
    tcase_add_test(t, test_xor_trains);
    tcase_add_test(t, test_train_regression);
    tcase_add_test(t, test_train_regression_tf2);
    tcase_add_test(t, test_train_mnist_lr);
    tcase_add_test(t, test_train_mnist_conv);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DATA_DIR [MODELS_DIR]\n", argv[0]);
        return 2;
    }
    data_dir = argv[1];
    struct stat sb;
    if (argc > 2 && stat(argv[2], &sb) == 0)
        models_dir = argv[2];
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp_dir);
    return failed ? 1 : 0;
}
