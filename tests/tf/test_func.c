/* tests/tf/test_func.c - Check suite for compiler/tf/tf_ops_func.c: TF v2
 * functional control flow and calls (PartitionedCall, If, Case, While, a
 * library function called by name) lowered to the IR's region ops.
 *
 * The graphs are hand-written .pbtxt files in data/ (func_*.pbtxt); each
 * file's header comment derives the expected values by hand.  Structure
 * tests import them (tf_import) and look at the IR: region ops, their
 * selectors, regions, params and results, and that constant selectors
 * leave no COND.  Numeric tests compile each graph once with the driver
 * (tfcc compile, in process) and run the executable on .npy feeds.
 *
 * Usage: test_tf_func DATA_DIR
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/driver.h"
#include "compiler/frontend/frontend.h"
#include "compiler/tf/tf.h"
#include "tests/tfcc_inproc.h"

static const char *data_dir;
static char tmp_dir[] = "/tmp/tfcc-func-XXXXXX";

static const char *data(const char *name)
{
    static char buf[4][1024];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 1024, "%s/%s", data_dir, name);
    return b;
}

/* ---- structure: import and look at the IR ---- */

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
}

/* Imports data/file with every name in feeds (NULL-terminated) fed at the
 * graph's shape and the given fetches. */
static void import(const char *file, const char *const *feeds, const char *const *fetches)
{
    ck_assert_msg(fe_load(data(file), &model, &st), "%s", st.msg);
    TfFeedSpec specs[8];
    int n_feeds = 0, n_fetches = 0;
    for (; feeds[n_feeds]; n_feeds++) {
        memset(&specs[n_feeds], 0, sizeof specs[n_feeds]);
        specs[n_feeds].name = feeds[n_feeds];
        specs[n_feeds].dtype = TCRT_INVALID;
    }
    while (fetches[n_fetches])
        n_fetches++;
    TfImportOptions o = {file, specs, n_feeds, fetches, n_fetches, NULL, 0, NULL, NULL, false};
    gr = tf_import(model.graph, &o, &st);
    ck_assert_msg(gr != NULL, "import failed: %s", st.msg);
    ck_assert_msg(ir_verify(gr, &st), "%s", st.msg);
}

static int count_op(const IrGraph *g, Op op)
{
    int n = 0;
    IR_FOR_EACH(g, x)
    {
        if (x->op == op)
            n++;
    }
    return n;
}

static const IrNode *fetched(const char *name)
{
    for (int i = 0; i < gr->n_fetches; i++)
        if (strcmp(gr->fetches[i].name, name) == 0)
            return gr->fetches[i].value.node;
    ck_abort_msg("no fetch '%s'", name);
    return NULL;
}

static void assert_type(const IrType *t, tcrt_dtype dt, int rank, int64_t d0)
{
    ck_assert_int_eq(t->dtype, dt);
    ck_assert_int_eq(t->shape.rank, rank);
    if (rank > 0)
        ck_assert_int_eq(t->shape.dims[0], d0);
}

/* A region: n_params params, n_results results, and op present. */
static void assert_region(const IrGraph *r, int n_params, int n_results, Op op)
{
    ck_assert_int_eq(r->n_feeds, n_params);
    ck_assert_int_eq(r->n_fetches, n_results);
    ck_assert_msg(count_op(r, op) >= 1, "region lacks a %s", ir_op_name(op));
    ck_assert_int_eq(count_op(r, OP_COND) + count_op(r, OP_WHILE), 0);
}

START_TEST(test_call_inlined)
{
    /* call = f(x) = x*2+1, call2 = g(x) = f(f(x)): bodies inlined, the
     * nodes named <caller>/<body node>, no region op. */
    import("func_call.pbtxt", (const char *[]){"x", NULL}, (const char *[]){"call", "call2", NULL});
    ck_assert_int_eq(count_op(gr, OP_COND) + count_op(gr, OP_WHILE), 0);
    const IrNode *y = fetched("call");
    ck_assert_int_eq(y->op, OP_ADD);
    ck_assert_str_eq(y->origin, "call/add");
    assert_type(&y->out[0].type, TCRT_F32, 1, 3);
    const IrNode *y2 = fetched("call2");
    ck_assert_int_eq(y2->op, OP_ADD);
    ck_assert_str_eq(y2->origin, "call2/outer/add"); /* g's node 'outer' calls f by name */
    /* f runs three times: 3 MUL (x*2) */
    ck_assert_int_eq(count_op(gr, OP_MUL), 3);
}
END_TEST

START_TEST(test_call_generic)
{
    /* neg's body has attr T = placeholder "T"; the call binds T to float */
    import("func_call.pbtxt", (const char *[]){"x", NULL}, (const char *[]){"call3", NULL});
    const IrNode *y = fetched("call3");
    ck_assert_int_eq(y->op, OP_NEG);
    ck_assert_str_eq(y->origin, "call3/n");
    assert_type(&y->out[0].type, TCRT_F32, 1, 3);
}
END_TEST

START_TEST(test_if_regions)
{
    import("func_if.pbtxt", (const char *[]){"x", "y", "p", "k", NULL},
           (const char *[]){"if_fed", "if_int", NULL});
    ck_assert_int_eq(count_op(gr, OP_COND), 2);
    const IrNode *n = fetched("if_fed");
    ck_assert_int_eq(n->op, OP_COND);
    ck_assert_int_eq(n->n_regions, 2);
    ck_assert_int_eq(n->n_inputs, 3); /* selector, x, y */
    assert_type(ir_value_type(n->inputs[0]), TCRT_BOOL, 0, 0);
    ck_assert_int_eq(n->inputs[0].node->op, OP_ARG); /* p itself */
    assert_type(&n->out[0].type, TCRT_F32, 1, 2);
    assert_region(n->regions[0], 2, 1, OP_ADD); /* then: a + b */
    assert_region(n->regions[1], 2, 1, OP_SUB); /* else: a - b */
    ck_assert_str_eq(n->regions[0]->feeds[0].name, "a");
    ck_assert_str_eq(n->regions[0]->fetches[0].name, "sum");
    /* an int32 condition becomes k != 0 */
    const IrNode *m = fetched("if_int");
    ck_assert_int_eq(m->op, OP_COND);
    ck_assert_int_eq(m->inputs[0].node->op, OP_NE);
    assert_type(ir_value_type(m->inputs[0]), TCRT_BOOL, 0, 0);
}
END_TEST

START_TEST(test_if_constant_inlined)
{
    /* if_const (Const true) and if_rank1 (bool[1] {false}: has elements, so
     * true) both inline the then branch: no COND, the fetch is x + y. */
    import("func_if.pbtxt", (const char *[]){"x", "y", NULL}, (const char *[]){"if_const", "if_rank1", NULL});
    ck_assert_int_eq(count_op(gr, OP_COND), 0);
    ck_assert_int_eq(count_op(gr, OP_SUB), 0);
    const IrNode *a = fetched("if_const"), *b = fetched("if_rank1");
    ck_assert_int_eq(a->op, OP_ADD);
    ck_assert_str_eq(a->origin, "if_const/s");
    ck_assert_int_eq(b->op, OP_ADD);
    ck_assert_str_eq(b->origin, "if_rank1/s");
}
END_TEST

START_TEST(test_case_regions)
{
    import("func_case.pbtxt", (const char *[]){"x", "i", NULL},
           (const char *[]){"case_fed", "case_const", "case_oob", NULL});
    ck_assert_int_eq(count_op(gr, OP_COND), 1);
    const IrNode *n = fetched("case_fed");
    ck_assert_int_eq(n->op, OP_COND);
    ck_assert_int_eq(n->n_regions, 3);
    assert_type(ir_value_type(n->inputs[0]), TCRT_I32, 0, 0);
    assert_region(n->regions[0], 1, 1, OP_ADD);
    assert_region(n->regions[1], 1, 1, OP_MUL);
    assert_region(n->regions[2], 1, 1, OP_SUB);
    /* constant index 1: branch 1 (x * 2) inlined; 5: out of range, the
     * last branch (x - 1) */
    ck_assert_int_eq(fetched("case_const")->op, OP_MUL);
    ck_assert_int_eq(fetched("case_oob")->op, OP_SUB);
}
END_TEST

START_TEST(test_while_regions)
{
    import("func_while.pbtxt", (const char *[]){"n", "x", NULL}, (const char *[]){"loop:2", "loop2:1", NULL});
    ck_assert_int_eq(count_op(gr, OP_WHILE), 2);
    const IrNode *n = fetched("loop:2");
    ck_assert_int_eq(n->op, OP_WHILE);
    ck_assert_int_eq(n->n_inputs, 3);
    ck_assert_int_eq(n->n_outputs, 3);
    ck_assert_int_eq(n->n_regions, 2);
    assert_region(n->regions[0], 3, 1, OP_LT); /* cond: i < n */
    assert_type(ir_value_type(n->regions[0]->fetches[0].value), TCRT_BOOL, 0, 0);
    assert_region(n->regions[1], 3, 3, OP_ADD); /* body: i + 1, n, s + i */
    /* n passes through the body unchanged: its result is param 1 */
    ck_assert_ptr_eq(n->regions[1]->fetches[1].value.node, n->regions[1]->feeds[1].arg);
    for (int i = 0; i < 3; i++)
        assert_type(&n->out[i].type, TCRT_I32, 0, 0);
    /* loop2: the body's StatefulPartitionedCall of twice() is inlined in
     * the body region */
    const IrNode *m = fetched("loop2:1");
    ck_assert_int_eq(m->op, OP_WHILE);
    assert_region(m->regions[1], 2, 2, OP_MUL);
    assert_type(&m->out[1].type, TCRT_F32, 1, 2);
    bool found = false;
    IR_FOR_EACH(m->regions[1], b)
    {
        if (b->op == OP_MUL)
            found = strcmp(b->origin, "loop2/call/m") == 0;
    }
    ck_assert_msg(found, "the inlined Mul is not named loop2/call/m");
}
END_TEST

START_TEST(test_while_list)
{
    /* A DT_VARIANT loop variable (a TensorList) is the float32[3,2] buffer
     * tf_ops_list.c makes of it */
    import("func_while_list.pbtxt", (const char *[]){"x", NULL}, (const char *[]){"out", NULL});
    ck_assert_int_eq(count_op(gr, OP_WHILE), 1);
    const IrNode *w = NULL;
    IR_FOR_EACH(gr, n)
    {
        if (n->op == OP_WHILE)
            w = n;
    }
    ck_assert_int_eq(w->n_inputs, 3);
    ck_assert_int_eq(w->out[1].type.dtype, TCRT_F32);
    ck_assert_int_eq(w->out[1].type.shape.rank, 2);
    ck_assert_int_eq(w->out[1].type.shape.dims[0], 3);
    ck_assert_int_eq(w->out[1].type.shape.dims[1], 2);
    assert_region(w->regions[1], 3, 3, OP_UPDATE_SLICE); /* SetItem */
}
END_TEST

START_TEST(test_while_type_count)
{
    /* (The other error messages are pinned through the driver in
     * tests/errors.)  A While given fewer loop variables than its T attr
     * lists is caught before any region is built. */
    ck_assert_msg(fe_load(data("func_while.pbtxt"), &model, &st), "%s", st.msg);
    Tensorflow__NodeDef *loop = NULL;
    for (size_t i = 0; i < model.graph->n_node; i++)
        if (strcmp(model.graph->node[i]->name, "loop") == 0)
            loop = model.graph->node[i];
    ck_assert_ptr_nonnull(loop);
    loop->n_input = 2; /* drop the third loop variable */
    TfFeedSpec spec;
    memset(&spec, 0, sizeof spec);
    spec.name = "n";
    spec.dtype = TCRT_INVALID;
    const char *fetch = "loop";
    TfImportOptions o = {"w.pbtxt", &spec, 1, &fetch, 1, NULL, 0, NULL, NULL, false};
    gr = tf_import(model.graph, &o, &st);
    ck_assert_ptr_null(gr);
    ck_assert_str_eq(st.msg, "w.pbtxt: node 'loop' (While): attribute 'T' lists 3 types but the node has 2 "
                             "loop variables");
    loop->n_input = 3;
}
END_TEST

/* ---- numbers: compile once, run on .npy feeds ---- */

static void compile(const char *file, const char *exe, const char *const *feeds, const char *const *fetches)
{
    char *argv[40];
    int n = 0;
    argv[n++] = "tfcc";
    argv[n++] = "compile";
    argv[n++] = (char *)data(file);
    for (int i = 0; feeds[i]; i++) {
        argv[n++] = "--feed";
        argv[n++] = (char *)feeds[i];
    }
    for (int i = 0; fetches[i]; i++) {
        argv[n++] = "--fetch";
        argv[n++] = (char *)fetches[i];
    }
    argv[n++] = "-o";
    argv[n++] = (char *)exe;
    argv[n] = NULL;
    Result r = tfcc_argv(n, argv);
    ck_assert_msg(r.rc == 0, "compile %s: %s", file, r.err);
    result_free(&r);
}

static void write_npy(const char *name, tcrt_dtype dt, int rank, int64_t d0, const void *v)
{
    char path[1200], msg[256];
    snprintf(path, sizeof path, "%s/%s.npy", tmp_dir, name);
    tcrt_tensor t = {(void *)v, dt, rank, {d0}};
    ck_assert_int_eq(tcrt_npy_write(path, &t, msg, sizeof msg), TCRT_OK);
}

static void write_npy2(const char *name, int64_t d0, int64_t d1, const float *v)
{
    char path[1200], msg[256];
    snprintf(path, sizeof path, "%s/%s.npy", tmp_dir, name);
    tcrt_tensor t = {(void *)v, TCRT_F32, 2, {d0, d1}};
    ck_assert_int_eq(tcrt_npy_write(path, &t, msg, sizeof msg), TCRT_OK);
}

/* Runs exe with --feed NAME=<tmp>/NAME.npy for each name; results go to
 * <tmp>/out. */
static void run(const char *exe, const char *const *feeds)
{
    char *argv[40];
    char bufs[8][1200];
    int n = 0;
    argv[n++] = (char *)exe;
    for (int i = 0; feeds[i]; i++) {
        snprintf(bufs[i], sizeof bufs[i], "%s=%s/%s.npy", feeds[i], tmp_dir, feeds[i]);
        argv[n++] = "--feed";
        argv[n++] = bufs[i];
    }
    char out[1200];
    snprintf(out, sizeof out, "%s/out", tmp_dir);
    argv[n++] = "--out-dir";
    argv[n++] = out;
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, 1);
        execv(exe, argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed", exe);
}

/* The fetched tensor <tmp>/out/FILE.npy as doubles. */
static void result(const char *file, int n, const double *want)
{
    char path[1200], msg[256];
    snprintf(path, sizeof path, "%s/out/%s.npy", tmp_dir, file);
    tcrt_tensor t;
    ck_assert_msg(tcrt_npy_read(path, &t, msg, sizeof msg) == TCRT_OK, "%s", msg);
    ck_assert_int_eq(tcrt_tensor_count(&t), n);
    for (int i = 0; i < n; i++) {
        double got = t.dtype == TCRT_F32 ? ((const float *)t.data)[i] : ((const int32_t *)t.data)[i];
        ck_assert_msg(got == want[i], "%s[%d] = %g, want %g", file, i, got, want[i]);
    }
    free(t.data);
}

static const char *exe(const char *name)
{
    static char buf[4][1200];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 1200, "%s/%s", tmp_dir, name);
    return b;
}

START_TEST(test_call_run)
{
    const char *e = exe("fn_call");
    compile("func_call.pbtxt", e, (const char *[]){"x", NULL},
            (const char *[]){"call", "call2", "call3", NULL});
    write_npy("x", TCRT_F32, 1, 3, (const float[]){1, 2, 3});
    run(e, (const char *[]){"x", NULL});
    result("call", 3, (const double[]){3, 5, 7});    /* 2x + 1 */
    result("call2", 3, (const double[]){7, 11, 15}); /* 4x + 3 */
    result("call3", 3, (const double[]){-1, -2, -3});
}
END_TEST

START_TEST(test_if_run)
{
    const char *e = exe("fn_if");
    compile("func_if.pbtxt", e, (const char *[]){"x", "y", "p", "k", NULL},
            (const char *[]){"if_fed", "if_int", "if_const", NULL});
    write_npy("x", TCRT_F32, 1, 2, (const float[]){1, 2});
    write_npy("y", TCRT_F32, 1, 2, (const float[]){10, 20});
    const char *feeds[] = {"x", "y", "p", "k", NULL};
    write_npy("p", TCRT_BOOL, 0, 0, (const uint8_t[]){1});
    write_npy("k", TCRT_I32, 0, 0, (const int32_t[]){3});
    run(e, feeds);
    result("if_fed", 2, (const double[]){11, 22}); /* x + y */
    result("if_int", 2, (const double[]){11, 22}); /* 3 != 0 */
    result("if_const", 2, (const double[]){11, 22});
    write_npy("p", TCRT_BOOL, 0, 0, (const uint8_t[]){0});
    write_npy("k", TCRT_I32, 0, 0, (const int32_t[]){0});
    run(e, feeds);
    result("if_fed", 2, (const double[]){-9, -18}); /* x - y */
    result("if_int", 2, (const double[]){-9, -18});
    result("if_const", 2, (const double[]){11, 22});
}
END_TEST

START_TEST(test_case_run)
{
    const char *e = exe("fn_case");
    compile("func_case.pbtxt", e, (const char *[]){"x", "i", NULL},
            (const char *[]){"case_fed", "case_const", "case_oob", NULL});
    write_npy("x", TCRT_F32, 1, 2, (const float[]){3, 4});
    const char *feeds[] = {"x", "i", NULL};
    static const struct {
        int32_t i;
        double want[2];
    } cases[] = {
        {0, {4, 5}}, /* x + 1 */
        {1, {6, 8}}, /* x * 2 */
        {2, {2, 3}}, /* x - 1 */
        {7, {2, 3}}, /* out of range: the last branch */
        {-1, {2, 3}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        write_npy("i", TCRT_I32, 0, 0, &cases[c].i);
        run(e, feeds);
        result("case_fed", 2, cases[c].want);
    }
    result("case_const", 2, (const double[]){6, 8});
    result("case_oob", 2, (const double[]){2, 3});
}
END_TEST

START_TEST(test_while_run)
{
    const char *e = exe("fn_while");
    compile("func_while.pbtxt", e, (const char *[]){"n", "x", NULL},
            (const char *[]){"loop:0", "loop:2", "loop2:0", "loop2:1", NULL});
    const char *feeds[] = {"n", "x", NULL};
    write_npy("x", TCRT_F32, 1, 2, (const float[]){1, -2});
    write_npy("n", TCRT_I32, 0, 0, (const int32_t[]){5});
    run(e, feeds);
    result("loop_0", 1, (const double[]){5});       /* i ends at n */
    result("loop_2", 1, (const double[]){10});      /* 0+1+2+3+4 */
    result("loop2_0", 1, (const double[]){3});      /* three iterations */
    result("loop2_1", 2, (const double[]){8, -16}); /* x * 2^3 */
    write_npy("n", TCRT_I32, 0, 0, (const int32_t[]){0});
    run(e, feeds);
    result("loop_0", 1, (const double[]){0}); /* the body never runs */
    result("loop_2", 1, (const double[]){0});
    write_npy("n", TCRT_I32, 0, 0, (const int32_t[]){1});
    run(e, feeds);
    result("loop_0", 1, (const double[]){1});
    result("loop_2", 1, (const double[]){0}); /* s = 0 + i with i = 0 */
}
END_TEST

START_TEST(test_while_list_run)
{
    const char *e = exe("fn_list");
    compile("func_while_list.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"out", NULL});
    write_npy2("x", 3, 2, (const float[]){1, 2, 3, 4, 5, 6});
    run(e, (const char *[]){"x", NULL});
    result("out", 6, (const double[]){2, 4, 6, 8, 10, 12}); /* 2 x */
}
END_TEST

START_TEST(test_while_list_unknown_elem_run)
{
    /* the list's element shape is known only from the write in the loop body */
    const char *e = exe("fn_list_unk");
    compile("func_while_list_unk.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"out", NULL});
    write_npy2("x", 3, 2, (const float[]){1, 2, 3, 4, 5, 6});
    run(e, (const char *[]){"x", NULL});
    result("out", 6, (const double[]){2, 4, 6, 8, 10, 12}); /* 2 x */
}
END_TEST

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
        return 2;
    }
    data_dir = argv[1];
    if (!mkdtemp(tmp_dir))
        return 1;
    Suite *s = suite_create("tf_func");
    TCase *tc = tcase_create("structure");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_call_inlined);
    tcase_add_test(tc, test_call_generic);
    tcase_add_test(tc, test_if_regions);
    tcase_add_test(tc, test_if_constant_inlined);
    tcase_add_test(tc, test_case_regions);
    tcase_add_test(tc, test_while_regions);
    tcase_add_test(tc, test_while_list);
    tcase_add_test(tc, test_while_type_count);
    suite_add_tcase(s, tc);
    TCase *tn = tcase_create("numeric");
    tcase_set_timeout(tn, 60);
    tcase_add_test(tn, test_call_run);
    tcase_add_test(tn, test_if_run);
    tcase_add_test(tn, test_case_run);
    tcase_add_test(tn, test_while_run);
    tcase_add_test(tn, test_while_list_run);
    tcase_add_test(tn, test_while_list_unknown_elem_run);
    suite_add_tcase(s, tn);
    SRunner *sr = srunner_create(s);
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
