/* tests/mpi/test_cluster.c - --cluster specs and the task -> rank mapping
 * (Check suite "cluster"; docs/distributed.md), without MPI.
 *
 * passes/place.c: pass_cluster_parse accepts JOB=N lists and keeps the
 * order; every malformed spec fails with its message; pass_cluster_rank
 * numbers tasks in spec order (ps=1,worker=2: ps:0 -> 0, worker:0 -> 1,
 * worker:1 -> 2), the local task is rank 0, and tasks outside the cluster
 * are -1.  codegen: cgc_needs_mpi is false without a cluster and for a
 * graph without send/recv pairs.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen.h"
#include "passes/passes.h"

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

static Suite *suite(void)
{
    Suite *s = suite_create("cluster");
    TCase *tc = tcase_create("cluster");
    tcase_add_test(tc, test_parse_ok);
    tcase_add_test(tc, test_parse_errors);
    tcase_add_test(tc, test_rank);
    tcase_add_test(tc, test_needs_mpi);
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
