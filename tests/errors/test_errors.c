/* tests/errors/test_errors.c - bad input: one test per error class.
 *
 * Each test runs the tfcc driver in process (or a compiled executable) on a
 * bad input and pins the message: it must name the file and, where there is
 * one, the node and the field; the exit code is non-zero and no output file
 * is left behind.  Fixtures are small hand-written files in data/; binary
 * ones (truncated/corrupt .pb, wrong .npy) are made at test time.
 *
 * Usage: test_errors DATA_DIR
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/driver.h"
#include "compiler/frontend/frontend.h"
#include "tcrt.h"
#include "tests/tfcc_inproc.h"

static const char *data_dir;
static char tmp_dir[] = "/tmp/tfcc-errors-XXXXXX";

static const char *data(const char *name)
{
    static char buf[8][1024];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 1024, "%s/%s", data_dir, name);
    return b;
}

static const char *tmp(const char *name)
{
    static char buf[8][1024];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 1024, "%s/%s", tmp_dir, name);
    return b;
}

static bool exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

#define ASSERT_HAS(r, s) ck_assert_msg(strstr((r).err, (s)) != NULL, "stderr lacks \"%s\":\n%s", (s), (r).err)

/* A failing compile: rc 1, message has every string given, no output file. */
static void expect_compile_error(const char *model, const char *const *feeds, const char *fetch,
                                 const char *const *want)
{
    const char *exe = tmp("should_not_exist");
    char *argv[32];
    int n = 0;
    argv[n++] = "tfcc";
    argv[n++] = "compile";
    argv[n++] = (char *)model;
    for (int i = 0; feeds && feeds[i]; i++) {
        argv[n++] = "--feed";
        argv[n++] = (char *)feeds[i];
    }
    argv[n++] = "--fetch";
    argv[n++] = (char *)fetch;
    argv[n++] = "-o";
    argv[n++] = (char *)exe;
    argv[n] = NULL;
    Result r = tfcc_argv(n, argv);
    ck_assert_msg(r.rc == 1, "rc %d, stderr:\n%s", r.rc, r.err);
    ck_assert_msg(strncmp(r.err, "error: ", 7) == 0, "message does not start with 'error: ': %s", r.err);
    for (int i = 0; want[i]; i++)
        ASSERT_HAS(r, want[i]);
    ck_assert_msg(!exists(exe), "an output file was left behind");
    result_free(&r);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

START_TEST(test_truncated_pb)
{
    /* The binary form of tiny.pbtxt, cut in the middle of a node. */
    Status st = ST_INIT;
    size_t n;
    uint8_t *text = fe_read_file(data("tiny.pbtxt"), 1 << 20, &n, &st);
    ck_assert_ptr_nonnull(text);
    ProtobufCMessage *m = fe_pbtxt_parse(&tensorflow__graph_def__descriptor, (const char *)text, n, "tiny", &st);
    ck_assert_msg(m != NULL, "%s", st.msg);
    size_t len = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(len);
    protobuf_c_message_pack(m, buf);
    write_bytes(tmp("truncated.pb"), buf, len * 2 / 3);
    const char *want[] = {tmp("truncated.pb"), "not a valid GraphDef", NULL};
    const char *feeds[] = {"x", NULL};
    expect_compile_error(tmp("truncated.pb"), feeds, "y", want);
    free(buf);
    free(text);
    protobuf_c_message_free_unpacked(m, NULL);
}
END_TEST

START_TEST(test_corrupt_pb)
{
    /* field 1 (node), wire type 2, with a length varint that never ends */
    const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00, 0x9c};
    write_bytes(tmp("corrupt.pb"), junk, sizeof junk);
    const char *want[] = {tmp("corrupt.pb"), "not a valid GraphDef", NULL};
    expect_compile_error(tmp("corrupt.pb"), NULL, "y", want);
}
END_TEST

START_TEST(test_pbtxt_syntax)
{
    const char *want[] = {"syntax_error.pbtxt:5:1", NULL};
    expect_compile_error(data("syntax_error.pbtxt"), NULL, "x", want);
}
END_TEST

START_TEST(test_cycle)
{
    const char *want[] = {"cycle.pbtxt", "graph has a cycle through node 'b' (Relu)", NULL};
    const char *feeds[] = {"x", NULL};
    expect_compile_error(data("cycle.pbtxt"), feeds, "b", want);
}
END_TEST

START_TEST(test_dangling)
{
    const char *want[] = {"dangling.pbtxt", "node 'sum' (Add)", "missing_node:0", NULL};
    const char *feeds[] = {"x", NULL};
    expect_compile_error(data("dangling.pbtxt"), feeds, "sum", want);
}
END_TEST

START_TEST(test_unsupported)
{
    const char *want[] = {"unsupported.pbtxt", "unsupported TensorFlow op 'FrobnicateTensor' (node 'weird')",
                          "unsupported TensorFlow op 'UnfrobnicateTensor' (node 'weirder')", NULL};
    const char *feeds[] = {"x", NULL};
    expect_compile_error(data("unsupported.pbtxt"), feeds, "weirder", want);
}
END_TEST

START_TEST(test_shape_mismatch)
{
    const char *want[] = {"shape_mismatch.pbtxt", "node 'x_y_sum' (Add)", "[2] and [3] do not broadcast", NULL};
    const char *feeds[] = {"x", "y", NULL};
    expect_compile_error(data("shape_mismatch.pbtxt"), feeds, "x_y_sum", want);
}
END_TEST

START_TEST(test_overflow_dims)
{
    const char *want[] = {"overflow.pbtxt", "feed 'big': shape [4294967296,4294967296,16] has too many elements", NULL};
    const char *feeds[] = {"big", NULL};
    expect_compile_error(data("overflow.pbtxt"), feeds, "r", want);
}
END_TEST

START_TEST(test_missing_shard)
{
    const char *want[] = {"model.json", "group1-shard1of1", "not found", NULL};
    const char *feeds[] = {"x", NULL};
    expect_compile_error(data("tfjs_missing/model.json"), feeds, "y", want);
}
END_TEST

START_TEST(test_missing_file)
{
    const char *want[] = {"no_such_model.pb", NULL};
    expect_compile_error(data("no_such_model.pb"), NULL, "y", want);
}
END_TEST

START_TEST(test_unknown_fetch)
{
    const char *want[] = {"tiny.pbtxt", "'nope'", NULL};
    const char *feeds[] = {"x", NULL};
    expect_compile_error(data("tiny.pbtxt"), feeds, "nope", want);
}
END_TEST

START_TEST(test_placeholder_not_fed)
{
    const char *want[] = {"tiny.pbtxt", "placeholder 'x'", "not fed", NULL};
    expect_compile_error(data("tiny.pbtxt"), NULL, "y", want);
}
END_TEST

START_TEST(test_usage)
{
    Result r = tfcc("compile", data("tiny.pbtxt"), "--fetch", "y", NULL);
    ck_assert_int_eq(r.rc, 2);
    ASSERT_HAS(r, "compile needs -o OUTPUT");
    result_free(&r);
    r = tfcc("frobnicate", NULL);
    ck_assert_int_eq(r.rc, 2);
    ASSERT_HAS(r, "unknown command 'frobnicate'");
    result_free(&r);
    r = tfcc("compile", data("tiny.pbtxt"), "--feed", "x:0:2xx2", "--fetch", "y", "-o", tmp("e"), NULL);
    ck_assert_int_eq(r.rc, 1);
    ASSERT_HAS(r, "bad dims '2xx2'");
    result_free(&r);
}
END_TEST

/* Runs a compiled executable with args; returns rc and stderr. */
static Result run_exe(char **argv)
{
    Result r = {0};
    char errpath[1100];
    snprintf(errpath, sizeof errpath, "%s/exe.err", tmp_dir);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(errpath, "w", stderr) || !freopen("/dev/null", "w", stdout))
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    Status st = ST_INIT;
    size_t n;
    r.err = (char *)fe_read_file(errpath, 1 << 20, &n, &st);
    if (r.err) {
        r.err = realloc(r.err, n + 1);
        r.err[n] = 0;
    } else
        r.err = strdup("");
    return r;
}

START_TEST(test_feed_wrong_dtype_and_shape)
{
    char exe[1100]; /* tmp() returns rotating buffers: keep a copy */
    snprintf(exe, sizeof exe, "%s", tmp("tiny"));
    Result c = tfcc("compile", data("tiny.pbtxt"), "--feed", "x", "--fetch", "y", "-o", exe, NULL);
    ck_assert_msg(c.rc == 0, "%s", c.err);
    result_free(&c);

    /* int32[2,2] instead of float32[2,2] */
    int32_t iv[4] = {1, 2, 3, 4};
    tcrt_tensor t = {iv, TCRT_I32, 2, {2, 2}};
    char msg[256];
    ck_assert_int_eq(tcrt_npy_write(tmp("int.npy"), &t, msg, sizeof msg), TCRT_OK);
    char feed[1200], outdir[1100];
    snprintf(feed, sizeof feed, "x=%s", tmp("int.npy"));
    snprintf(outdir, sizeof outdir, "%s", tmp("out_dtype"));
    char *argv[] = {(char *)exe, "--feed", feed, "--out-dir", outdir, NULL};
    Result r = run_exe(argv);
    ck_assert_int_ne(r.rc, 0);
    ASSERT_HAS(r, "int.npy");
    ASSERT_HAS(r, "int32");
    ASSERT_HAS(r, "float32");
    ck_assert_msg(!exists(tmp("out_dtype/y.npy")), "output written despite the error");
    result_free(&r);

    /* float32[3] instead of float32[2,2] */
    float fv[3] = {1, 2, 3};
    tcrt_tensor t2 = {fv, TCRT_F32, 1, {3}};
    ck_assert_int_eq(tcrt_npy_write(tmp("short.npy"), &t2, msg, sizeof msg), TCRT_OK);
    snprintf(feed, sizeof feed, "x=%s", tmp("short.npy"));
    r = run_exe(argv);
    ck_assert_int_ne(r.rc, 0);
    ASSERT_HAS(r, "short.npy");
    ASSERT_HAS(r, "[2,2]");
    ASSERT_HAS(r, "[3]");
    result_free(&r);

    /* missing feed */
    char *argv2[] = {(char *)exe, "--out-dir", outdir, NULL};
    r = run_exe(argv2);
    ck_assert_int_ne(r.rc, 0);
    ASSERT_HAS(r, "missing feed 'x");
    result_free(&r);

    /* bad .npy header */
    write_bytes(tmp("bad.npy"), "\x93NUMPX\x01\x00garbage", 15);
    snprintf(feed, sizeof feed, "x=%s", tmp("bad.npy"));
    r = run_exe(argv);
    ck_assert_int_ne(r.rc, 0);
    ck_assert_msg(r.rc == 1, "rc %d", r.rc);
    ASSERT_HAS(r, "bad.npy");
    result_free(&r);

    /* and a good run, for contrast: x = [[1,2],[3,4]] -> y = x*x+1 (hand: 2 5 10 17) */
    float good[4] = {1, 2, 3, 4};
    tcrt_tensor t3 = {good, TCRT_F32, 2, {2, 2}};
    ck_assert_int_eq(tcrt_npy_write(tmp("good.npy"), &t3, msg, sizeof msg), TCRT_OK);
    snprintf(feed, sizeof feed, "x=%s", tmp("good.npy"));
    r = run_exe(argv);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    tcrt_tensor y;
    char ypath[1200];
    snprintf(ypath, sizeof ypath, "%s/y.npy", outdir);
    ck_assert_int_eq(tcrt_npy_read(ypath, &y, msg, sizeof msg), TCRT_OK);
    const float *yv = y.data;
    ck_assert(yv[0] == 2 && yv[1] == 5 && yv[2] == 10 && yv[3] == 17);
    free(y.data);
    result_free(&r);
}
END_TEST

/* ---- v2 functional control flow and calls (compiler/tf/tf_ops_func.c) ---- */

START_TEST(test_func_missing)
{
    const char *want[] = {
        "func_missing.pbtxt",
        "node 'call' (PartitionedCall): attribute 'f' names function 'nope', which is not in "
        "the graph's function library",
        NULL};
    const char *feeds[] = {"x", NULL};
    expect_compile_error(data("func_missing.pbtxt"), feeds, "call", want);
}
END_TEST

START_TEST(test_func_recursive)
{
    /* f -> g (PartitionedCall) -> f (called by name): the message names the
     * call path */
    const char *want[] = {"func_recursive.pbtxt",
                          "node 'call/again/back' (f): function 'f' calls itself through the library "
                          "(recursion is not supported)",
                          NULL};
    const char *feeds[] = {"x", NULL};
    expect_compile_error(data("func_recursive.pbtxt"), feeds, "call", want);
}
END_TEST

START_TEST(test_func_resource)
{
    const char *feeds[] = {"x", NULL};
    const char *want_loop[] = {
        "func_resource.pbtxt",
        "node 'loop' (While): loop variable 1 is DT_RESOURCE (attribute 'T'): resource "
        "values (variables) are not supported",
        NULL};
    expect_compile_error(data("func_resource.pbtxt"), feeds, "loop", want_loop);
    /* an inlined call takes resource handles (the caller's variables), so
     * the error is where the fed float is used as one (tf_ops_state.c) */
    const char *want_call[] = {"func_resource.pbtxt",
                               "node 'call/r' (ReadVariableOp): input 0 does not come from a variable: 'x' "
                               "(Placeholder) is not a VariableV2 or VarHandleOp",
                               NULL};
    expect_compile_error(data("func_resource.pbtxt"), feeds, "call", want_call);
}
END_TEST

START_TEST(test_func_loop_shape)
{
    const char *want[] = {"func_shape_change.pbtxt",
                          "node 'grow' (StatelessWhile): loop variable 0 enters as float32[2] but the body "
                          "makes it float32[4] (loop variables keep their shape)",
                          NULL};
    const char *feeds[] = {"x", NULL};
    expect_compile_error(data("func_shape_change.pbtxt"), feeds, "grow", want);
}
END_TEST

START_TEST(test_func_bad_body)
{
    static const struct {
        const char *fetch;
        const char *want;
    } cases[] = {
        {"call_out", "node 'call_out' (PartitionedCall): function 'bad_out': 'top:largest:0': node 'top' "
                     "(TopKV2) has no output named 'largest'"},
        {"call_cycle", "node 'call_cycle' (PartitionedCall): function 'cycle': the body has a cycle through "
                       "node 'q' (Relu)"},
        {"call_ph", "node 'call_ph' (PartitionedCall): function 'generic': node 'n' (Neg): attribute 'T' is "
                    "the placeholder 'T', which the caller does not set"},
        {"call_ops",
         "node 'call_ops' (PartitionedCall): function 'odd_ops': SymbolicGradient (node 'grad') is "
         "not supported"},
        {"call_ops", "node 'call_ops' (PartitionedCall): function 'odd_ops': unsupported TensorFlow op "
                     "'Frobnicate' (node 'z')"},
        {"call_dtype",
         "node 'call_dtype' (PartitionedCall): function 'neg': input arg 'a' is float32 but the "
         "node passes int32 (input 0)"},
    };
    const char *feeds[] = {"x", NULL};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *want[] = {"func_bad_body.pbtxt", cases[i].want, NULL};
        expect_compile_error(data("func_bad_body.pbtxt"), feeds, cases[i].fetch, want);
    }
}
END_TEST

/* ---- v1 control flow: malformed loops (compiler/tf/tf_import.c) ---- */

START_TEST(test_exit_without_enter)
{
    const char *feeds[] = {"x", NULL};
    const char *want[] = {"exit_without_enter.pbtxt",
                          "node 'out' (Exit): input 'y' is not inside a loop frame (an Exit without an Enter)", NULL};
    expect_compile_error(data("exit_without_enter.pbtxt"), feeds, "out", want);
}
END_TEST

START_TEST(test_mismatched_frames)
{
    const char *want[] = {"mismatched_frames.pbtxt",
                          "node 'loop/add' (AddV2) has inputs from different frames: input 0 'loop/Identity' is in "
                          "frame 'loop' but input 1 'other/Enter' is in frame 'other'",
                          NULL};
    expect_compile_error(data("mismatched_frames.pbtxt"), NULL, "loop/Exit", want);
}
END_TEST

START_TEST(test_next_iteration_without_merge)
{
    const char *feeds[] = {"x", NULL};
    const char *want[] = {"next_iteration_without_merge.pbtxt",
                          "node 'y' (Relu): input 0 'next' is a NextIteration, which may only feed a Merge", NULL};
    expect_compile_error(data("next_iteration_without_merge.pbtxt"), feeds, "y", want);
}
END_TEST

START_TEST(test_no_loop_cond)
{
    const char *want[] = {"no_loop_cond.pbtxt",
                          "node 'loop/Exit' (Exit): leaves loop frame 'loop', which has no LoopCond", NULL};
    expect_compile_error(data("no_loop_cond.pbtxt"), NULL, "loop/Exit", want);
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
    Suite *s = suite_create("errors");
    TCase *tc = tcase_create("bad_input");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_truncated_pb);
    tcase_add_test(tc, test_corrupt_pb);
    tcase_add_test(tc, test_pbtxt_syntax);
    tcase_add_test(tc, test_cycle);
    tcase_add_test(tc, test_dangling);
    tcase_add_test(tc, test_unsupported);
    tcase_add_test(tc, test_shape_mismatch);
    tcase_add_test(tc, test_overflow_dims);
    tcase_add_test(tc, test_missing_shard);
    tcase_add_test(tc, test_missing_file);
    tcase_add_test(tc, test_unknown_fetch);
    tcase_add_test(tc, test_placeholder_not_fed);
    tcase_add_test(tc, test_usage);
    tcase_add_test(tc, test_feed_wrong_dtype_and_shape);
    tcase_add_test(tc, test_func_missing);
    tcase_add_test(tc, test_func_recursive);
    tcase_add_test(tc, test_func_resource);
    tcase_add_test(tc, test_func_loop_shape);
    tcase_add_test(tc, test_func_bad_body);
    tcase_add_test(tc, test_exit_without_enter);
    tcase_add_test(tc, test_mismatched_frames);
    tcase_add_test(tc, test_next_iteration_without_merge);
    tcase_add_test(tc, test_no_loop_cond);
    suite_add_tcase(s, tc);
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
