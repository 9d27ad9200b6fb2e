/* test_main.c - Check suite for main.c and the small helpers of tcrt.c.
 *
 * tcrt_output_filename cases; dtype names and sizes; tcrt_main driven with
 * a hand-written model descriptor (y = 2*x + 1 over an arena) to check the
 * exit codes (0 ok, 1 run/IO failure, 2 usage), that results are written
 * with the expected contents, that a failing run writes nothing, and that
 * --out-dir creates nested folders.
 */
#include "tcrt.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

START_TEST(output_filenames)
{
    char b[64];
    tcrt_output_filename("Softmax:0", b, sizeof b);
    ck_assert_str_eq(b, "Softmax_0.npy");
    tcrt_output_filename("model/dense_1/BiasAdd:1", b, sizeof b);
    ck_assert_str_eq(b, "model_dense_1_BiasAdd_1.npy");
    tcrt_output_filename("a.b-c_d", b, sizeof b);
    ck_assert_str_eq(b, "a.b-c_d.npy");
    tcrt_output_filename("x y\xc3\xa9", b, sizeof b);
    ck_assert_str_eq(b, "x_y__.npy");
    /* truncated to the buffer, always NUL-terminated */
    tcrt_output_filename("abcdefgh", b, 6);
    ck_assert_uint_eq(strlen(b), 5);
}
END_TEST

START_TEST(dtype_table)
{
    ck_assert_str_eq(tcrt_dtype_name(TCRT_F32), "float32");
    ck_assert_str_eq(tcrt_dtype_name(TCRT_I32), "int32");
    ck_assert_str_eq(tcrt_dtype_name(TCRT_I64), "int64");
    ck_assert_str_eq(tcrt_dtype_name(TCRT_U8), "uint8");
    ck_assert_str_eq(tcrt_dtype_name(TCRT_BOOL), "bool");
    ck_assert_uint_eq(tcrt_dtype_size(TCRT_F64), 8);
    ck_assert_uint_eq(tcrt_dtype_size(TCRT_BOOL), 1);
    ck_assert_uint_eq(tcrt_dtype_size(TCRT_STRING), 0);
    tcrt_tensor t = {.rank = 3, .dims = {2, 3, 4}};
    ck_assert_int_eq(tcrt_tensor_count(&t), 24);
    t.dims[1] = -1;
    ck_assert_int_eq(tcrt_tensor_count(&t), -1);
    tcrt_set_threads(0);
    ck_assert_int_eq(tcrt_get_threads(), 1);
    tcrt_set_threads(3);
    ck_assert_int_eq(tcrt_get_threads(), 3);
    tcrt_set_threads(1);
}
END_TEST

/* ---- a fake compiled model: arena [x: f32[2,3] at 0][y: f32[2,3] at 64] ---- */

static int fail_run;

static tcrt_status fake_run(uint8_t *arena)
{
    if (fail_run)
        return TCRT_ERR_RUNTIME;
    const float *x = (const float *)arena;
    float *y = (float *)(arena + 64);
    for (int i = 0; i < 6; i++)
        y[i] = 2 * x[i] + 1;
    return TCRT_OK;
}

static const tcrt_io fake_args[] = {{"x:0", TCRT_F32, 2, {2, 3}, 24, 0}};
static const tcrt_io fake_results[] = {{"out/y:0", TCRT_F32, 2, {2, 3}, 24, 64}};
static const tcrt_model fake = {"fake", 1, fake_args, 1, fake_results, 128, 0, fake_run, 0, NULL, NULL};

static char dir[64];

static void setup(void)
{
    strcpy(dir, "/tmp/tcrt_main_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    fail_run = 0;
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        /* best effort */
    }
}

static int run_main(const char *a1, const char *a2, const char *a3, const char *a4)
{
    char *argv[6] = {"fake"};
    int argc = 1;
    const char *as[4] = {a1, a2, a3, a4};
    for (int i = 0; i < 4 && as[i]; i++)
        argv[argc++] = (char *)as[i];
    return tcrt_main(&fake, argc, argv);
}

static void write_feed(const char *path, tcrt_dtype dt, int rank, int64_t d0, int64_t d1)
{
    float v[6] = {0, 1, 2, 3, 4, 5};
    tcrt_tensor t = {.data = v, .dtype = dt, .rank = rank, .dims = {d0, d1}};
    char err[256];
    ck_assert_int_eq(tcrt_npy_write(path, &t, err, sizeof err), TCRT_OK);
}

START_TEST(main_ok_and_errors)
{
    char feed[128], feedarg[160], outdir[128], outarg[160], res[200];
    snprintf(feed, sizeof feed, "%s/x.npy", dir);
    write_feed(feed, TCRT_F32, 2, 2, 3);
    snprintf(outdir, sizeof outdir, "%s/a/b", dir);
    snprintf(outarg, sizeof outarg, "--out-dir=%s", outdir);
    snprintf(res, sizeof res, "%s/out_y_0.npy", outdir);
    /* "x" matches the arg "x:0" */
    snprintf(feedarg, sizeof feedarg, "x=%s", feed);
    ck_assert_int_eq(run_main("--feed", feedarg, outarg, NULL), 0);
    tcrt_tensor r;
    char err[256];
    ck_assert_int_eq(tcrt_npy_read(res, &r, err, sizeof err), TCRT_OK);
    /* y = 2x + 1 over x = 0..5 */
    const float want[6] = {1, 3, 5, 7, 9, 11};
    ck_assert_mem_eq(r.data, want, sizeof want);
    free(r.data);
    unlink(res);
    /* --repeat works and still writes */
    ck_assert_int_eq(run_main("--feed", feedarg, outarg, "--repeat=3"), 0);
    ck_assert_int_eq(access(res, F_OK), 0);
    unlink(res);
    /* usage errors: missing feed, unknown feed, duplicate feed, bad flag, bad repeat */
    ck_assert_int_eq(run_main(outarg, NULL, NULL, NULL), 2);
    snprintf(feedarg, sizeof feedarg, "--feed=nope=%s", feed);
    ck_assert_int_eq(run_main(feedarg, outarg, NULL, NULL), 2);
    snprintf(feedarg, sizeof feedarg, "--feed=x:0=%s", feed);
    ck_assert_int_eq(run_main(feedarg, feedarg, outarg, NULL), 2);
    ck_assert_int_eq(run_main("--bogus", NULL, NULL, NULL), 2);
    ck_assert_int_eq(run_main(feedarg, "--repeat", "0", NULL), 2);
    /* wrong shape and wrong dtype: usage error, nothing written */
    write_feed(feed, TCRT_F32, 2, 3, 2);
    ck_assert_int_eq(run_main(feedarg, outarg, NULL, NULL), 2);
    write_feed(feed, TCRT_I32, 2, 2, 3);
    ck_assert_int_eq(run_main(feedarg, outarg, NULL, NULL), 2);
    ck_assert_int_ne(access(res, F_OK), 0);
    /* unreadable feed file: exit 1 */
    unlink(feed);
    ck_assert_int_eq(run_main(feedarg, outarg, NULL, NULL), 1);
    /* a failing run writes nothing and exits 1 */
    write_feed(feed, TCRT_F32, 2, 2, 3);
    fail_run = 1;
    ck_assert_int_eq(run_main(feedarg, outarg, NULL, NULL), 1);
    ck_assert_int_ne(access(res, F_OK), 0);
    /* --help exits 0 */
    ck_assert_int_eq(run_main("--help", NULL, NULL, NULL), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_main");
    TCase *tc = tcase_create("main");
    tcase_add_test(tc, output_filenames);
    tcase_add_test(tc, dtype_table);
    TCase *tm = tcase_create("tcrt_main");
    tcase_add_checked_fixture(tm, setup, teardown);
    tcase_add_test(tm, main_ok_and_errors);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, tm);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
