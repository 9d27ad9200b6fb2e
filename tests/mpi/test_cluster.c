/* tests/mpi/test_cluster.c - --cluster specs and the task -> rank mapping
 * (Check suite "cluster"; docs/distributed.md), without MPI.
 *
 * passes/place.c: pass_cluster_parse accepts JOB=N lists and keeps the
 * order; every malformed spec fails with its message; pass_cluster_rank
 * numbers tasks in spec order (ps=1,worker=2: ps:0 -> 0, worker:0 -> 1,
 * worker:1 -> 2), the local task is rank 0, and tasks outside the cluster
 * are -1.  codegen: cgc_needs_mpi is false without a cluster and for a
 * graph without send/recv pairs.
 * --data-parallel (passes/optim.c): pass_grad_build puts an ALLREDUCE
 * between each gradient and its update and on the fetched loss; they
 * survive fold, cse and dce (even of a constant gradient); the reference
 * kernel is a float copy; the gradient rule is the identity.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "passes/passes.h"
#include "tcrt_kernels.h"

#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "missing \"%s\" in:\n%s", (sub), (s))

START_TEST(test_parse_ok)
{
    PassCluster c;
    Status st = ST_INIT;
    ck_assert(pass_cluster_parse("ps=1,worker=2", &c, &st));
    ck_assert_int_eq(c.n_jobs, 2);
    ck_assert_str_eq(c.job[0], "ps");
    ck_assert_str_eq(c.job[1], "worker");
    ck_assert_int_eq(c.count[0], 1);
    ck_assert_int_eq(c.count[1], 2);
    ck_assert_int_eq(c.n_ranks, 3);
    ck_assert(pass_cluster_parse("chief_0=1,w2=64", &c, &st) == false); /* 65 tasks in all */
    st = (Status)ST_INIT;
    ck_assert(pass_cluster_parse("chief_0=1,w2=63", &c, &st));
    ck_assert_int_eq(c.n_ranks, 64);
}
END_TEST

START_TEST(test_parse_errors)
{
    static const struct {
        const char *spec, *msg;
    } cases[] = {
        {"", "--cluster '': expected JOB=COUNT"},
        {"ps", "--cluster 'ps': expected JOB=COUNT[,JOB=COUNT...] (e.g. ps=1,worker=2)"},
        {"=1", "--cluster '=1': expected JOB=COUNT"},
        {"ps=", "--cluster 'ps=': job 'ps' has no task count"},
        {"ps=0", "--cluster 'ps=0': task count of job 'ps' is not a number from 1 to 64"},
        {"ps=-1", "task count of job 'ps' is not a number"},
        {"ps=65", "task count of job 'ps' is not a number from 1 to 64"},
        {"ps=99999999999999999999", "task count of job 'ps' is not a number"},
        {"ps=1,ps=1", "--cluster 'ps=1,ps=1': job 'ps' named twice"},
        {"9a=1", "bad job name '9a'"},
        {"a-b=1", "bad job name 'a-b'"},
        {"localhost=1", "bad job name 'localhost'"},
        {"ps=1,", "--cluster 'ps=1,': trailing ','"},
        {"a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1", "more than 8 jobs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        PassCluster c;
        Status st = ST_INIT;
        ck_assert_msg(!pass_cluster_parse(cases[i].spec, &c, &st), "'%s' accepted", cases[i].spec);
        HAS(st.msg, cases[i].msg);
    }
}
END_TEST

START_TEST(test_rank)
{
    PassCluster c;
    Status st = ST_INIT;
    ck_assert(pass_cluster_parse("ps=1,worker=2", &c, &st));
    ck_assert_int_eq(pass_cluster_rank(&c, "/job:ps/replica:0/task:0/device:CPU:0"), 0);
    ck_assert_int_eq(pass_cluster_rank(&c, "/job:worker/replica:0/task:0/device:CPU:0"), 1);
    ck_assert_int_eq(pass_cluster_rank(&c, "/job:worker/task:1"), 2);
    ck_assert_int_eq(pass_cluster_rank(&c, "/job:worker/replica:0/task:1/device:GPU:0"), 2);
    ck_assert_int_eq(pass_cluster_rank(&c, "/job:localhost/replica:0/task:0/device:CPU:0"), 0);
    ck_assert_int_eq(pass_cluster_rank(&c, "/cpu:1"), 0); /* the local task */
    ck_assert_int_eq(pass_cluster_rank(&c, "/job:worker/task:2"), -1);
    ck_assert_int_eq(pass_cluster_rank(&c, "/job:chief/task:0"), -1);
    ck_assert_int_eq(pass_cluster_rank(&c, "/job:ps/replica:1/task:0"), -1);
    ck_assert_int_eq(pass_cluster_rank(&c, "/device:GPU:x"), -1); /* malformed */
    ck_assert_int_eq(pass_cluster_rank(NULL, "/job:ps/task:0"), -1);
    /* the order of the spec decides */
    ck_assert(pass_cluster_parse("worker=2,ps=1", &c, &st));
    ck_assert_int_eq(pass_cluster_rank(&c, "/job:ps/task:0"), 2);
    ck_assert_int_eq(pass_cluster_rank(&c, "/job:worker/task:1"), 1);
}
END_TEST

START_TEST(test_needs_mpi)
{
    PassCluster c;
    Status st = ST_INIT;
    ck_assert(pass_cluster_parse("ps=1,worker=2", &c, &st));
    IrGraph *g = ir_graph_new(NULL, &st);
    ck_assert_ptr_nonnull(g);
    ck_assert(!cgc_needs_mpi(g, &c));
    ck_assert(!cgc_needs_mpi(g, NULL));
    ir_graph_free(g);
}
END_TEST

static int count_op(const IrGraph *g, Op op)
{
    int n_op = 0;
    IR_FOR_EACH(g, n)
    {
        n_op += n->op == op;
    }
    return n_op;
}

/* loss = sum(w * w) + sum(v): the gradient of v is a constant (ones) */
START_TEST(test_data_parallel_ir)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    ck_assert_ptr_nonnull(g);
    g->fold_on_build = true;
    float init[2] = {1, -2};
    IrShape s2 = ir_shape_make(1, (int64_t[]){2});
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1;
    IrValue var[2];
    const char *names[2] = {"w", "v"};
    for (int i = 0; i < 2; i++) {
        ir_graph_set_origin(g, names[i], "VariableV2");
        IrValue c = ir_const(g, TCRT_F32, &s2, init, &st);
        var[i] = ir_emit1(g, OP_VARIABLE, &c, 1, &p, NULL, &st);
    }
    ir_graph_set_origin(g, "loss", "Sum");
    IrParams rp;
    memset(&rp, 0, sizeof rp);
    rp.i[0] = 1; /* one axis: 0 */
    IrValue sq = ir_binary(g, OP_MUL, var[0], var[0], &st);
    IrValue l = ir_binary(g, OP_ADD, ir_emit1(g, OP_REDUCE_SUM, &sq, 1, &rp, NULL, &st),
                          ir_emit1(g, OP_REDUCE_SUM, &var[1], 1, &rp, NULL, &st), &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_add_fetch(g, "loss", l, &st));
    GradOptions o;
    ck_assert(pass_grad_parse_optimizer("sgd:lr=0.5", &o, &st));
    ck_assert(!o.data_parallel); /* off unless asked for */
    o.data_parallel = true;
    ck_assert_msg(pass_grad_build(g, l, &o, &st), "%s", st.msg);
    PassResult (*const passes[])(IrGraph *, PassCtx *) = {pass_state, pass_fold, pass_cse, pass_dce};
    for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
        PassCtx cx;
        arena_init(&cx.scratch, NULL);
        cx.st = &st;
        PassResult r = passes[i](g, &cx);
        arena_reset(&cx.scratch);
        ck_assert_msg(r != PASS_FAILED, "pass %zu: %s", i, st.msg);
    }
    ck_assert_int_eq(count_op(g, OP_ALLREDUCE), 3); /* w's and v's gradients, the loss */
    ck_assert_int_eq(g->fetches[0].value.node->op, OP_ALLREDUCE);
    ck_assert(g->fetches[0].value.node->inputs[0].node == l.node);
    int updates = 0;
    IR_FOR_EACH(g, n)
    {
        if (n->op != OP_ASSIGN)
            continue;
        /* assign(var, var - grad * lr): the gradient reaches the update through an allreduce */
        const IrNode *sub = n->inputs[1].node;
        ck_assert_int_eq(sub->op, OP_SUB);
        const IrNode *mul = sub->inputs[1].node;
        ck_assert_int_eq(mul->op, OP_MUL);
        ck_assert(mul->inputs[0].node->op == OP_ALLREDUCE || mul->inputs[1].node->op == OP_ALLREDUCE);
        updates++;
    }
    ck_assert_int_eq(updates, 2);
    ir_graph_free(g);
    bool nodiff = true;
    ck_assert(pass_grad_has_rule(OP_ALLREDUCE, &nodiff));
    ck_assert(!nodiff);
}
END_TEST

START_TEST(test_allreduce_ref_kernel)
{
    float x[3] = {1.5f, -2, 0.25f}, y[3] = {0};
    tcrt_tensor in = {.data = x, .dtype = TCRT_F32, .rank = 1, .dims = {3}};
    tcrt_tensor out = {.data = y, .dtype = TCRT_F32, .rank = 1, .dims = {3}};
    tcrt_params p;
    memset(&p, 0, sizeof p);
    ck_assert_int_eq(tcrt_ref_allreduce(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert(y[0] == 1.5f && y[1] == -2 && y[2] == 0.25f);
    p.i[0] = 1; /* not the mean */
    ck_assert_int_ne(tcrt_ref_allreduce(&in, 1, &out, 1, &p), TCRT_OK);
    p.i[0] = 0;
    int32_t xi[3] = {1, 2, 3}, yi[3] = {0};
    tcrt_tensor ini = {.data = xi, .dtype = TCRT_I32, .rank = 1, .dims = {3}};
    tcrt_tensor outi = {.data = yi, .dtype = TCRT_I32, .rank = 1, .dims = {3}};
    ck_assert_int_ne(tcrt_ref_allreduce(&ini, 1, &outi, 1, &p), TCRT_OK);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cluster");
    TCase *tc = tcase_create("cluster");
    tcase_add_test(tc, test_parse_ok);
    tcase_add_test(tc, test_parse_errors);
    tcase_add_test(tc, test_rank);
    tcase_add_test(tc, test_needs_mpi);
    tcase_add_test(tc, test_data_parallel_ir);
    tcase_add_test(tc, test_allreduce_ref_kernel);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
