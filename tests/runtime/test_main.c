/* test_main.c - Check suite for main.c and the small helpers of tcrt.c.
 *
 * tcrt_output_filename cases; dtype names and sizes; tcrt_main driven with
 * a hand-written model descriptor (y = 2*x + 1 over an arena) to check the
 * exit codes (0 ok, 1 run/IO failure, 2 usage), that results are written
 * with the expected contents, that a failing run writes nothing, and that
 * --out-dir creates nested folders.  Training runs with a hand-written
 * stateful descriptor (loss = w + x[0] + x[1], w := w + 1): --steps with
 * exact and batched feeds (step i uses batch i mod k), the step=S log lines
 * with hand-derived losses, --save / --save-every / --restore (a resumed
 * run continues the global step and the batch sequence), "nothing to run",
 * a missing checkpoint, and the flag errors (exit 2).  --flush-denormals
 * with a fake model whose run multiplies by a subnormal on two pool threads:
 * zero on both threads with the flag, subnormals without (before and after).
 * tcrt_huge_pages on a read-only file mapping: the same bytes after the
 * move, the moved pieces still read-only, whole 2 MB pieces only, and
 * --huge-pages accepted (without a value) by tcrt_main.
 */
#include "tcrt.h"
#include "tcrt_ckpt.h"
#include "tcrt_pool.h"

#include <check.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* ---- --flush-denormals: a fake model whose run multiplies x by a subnormal
 * on two pool threads: arena [x f32[2,3] at 0][y f32[2,3] at 64]; task t
 * does row t, and each task waits (up to 10 s) for the other to start, so
 * that the two rows run on two threads (the caller and the worker; which
 * takes which is up to the pool) ---- */

static volatile float den_scale = 1e-39f; /* subnormal (FLT_MIN is 1.18e-38); volatile: not folded */
static _Atomic int den_started[2];
static int den_tid[2];

static void den_task(void *ctx, int64_t t, int tid)
{
    uint8_t *arena = ctx;
    atomic_store(&den_started[t], 1);
    for (int spin = 0; spin < 10000 && !atomic_load(&den_started[1 - t]); spin++)
        usleep(1000);
    const float *x = (const float *)arena;
    float *y = (float *)(arena + 64);
    for (int i = 3 * (int)t; i < 3 * (int)t + 3; i++)
        y[i] = x[i] * den_scale;
    den_tid[t] = tid;
}

static tcrt_status den_run(uint8_t *arena)
{
    atomic_store(&den_started[0], 0);
    atomic_store(&den_started[1], 0);
    den_tid[0] = den_tid[1] = -1;
    tcrt_parallel_tasks(2, den_task, arena);
    return TCRT_OK;
}

static const tcrt_model den = {"den", 1, fake_args, 1, fake_results, 128, 0, den_run, 0, NULL, NULL};

/* Runs den with argv a1, a2 (may be NULL) and the feed; returns the exit code
 * and y in out[6]. */
static int run_den(const char *a1, const char *a2, float out[6])
{
    char feed[128], feedarg[160], outarg[160], res[200];
    snprintf(feed, sizeof feed, "%s/x.npy", dir);
    write_feed(feed, TCRT_F32, 2, 2, 3);
    snprintf(feedarg, sizeof feedarg, "--feed=x=%s", feed);
    snprintf(outarg, sizeof outarg, "--out-dir=%s", dir);
    snprintf(res, sizeof res, "%s/out_y_0.npy", dir);
    unlink(res);
    char *argv[6] = {"den", feedarg, outarg, "--threads=2"};
    int argc = 4;
    if (a1)
        argv[argc++] = (char *)a1;
    if (a2)
        argv[argc++] = (char *)a2;
    int rc = tcrt_main(&den, argc, argv);
    if (rc == 0) {
        tcrt_tensor r;
        char err[256];
        ck_assert_int_eq(tcrt_npy_read(res, &r, err, sizeof err), TCRT_OK);
        memcpy(out, r.data, 6 * sizeof(float));
        free(r.data);
    }
    return rc;
}

/* Without the flag the products x * 1e-39 are subnormal (x = 0..5, hand
 * values: 1e-39 ... 5e-39 rounded to float, nonzero); with it every product
 * is 0 on both threads (the worker follows the caller's mode); the next run
 * without the flag gets subnormals again (tcrt_main restores the mode).
 * Where the CPU ignores the mode (valgrind's emulation), the flushed pass
 * expects the subnormals and checks only that both threads ran. */
START_TEST(main_flush_denormals)
{
    /* a CPU (or emulator: valgrind) that ignores FTZ/DAZ cannot show it */
    ck_assert_int_eq(tcrt_flush_denormals(1), 0);
    volatile float one = 1.0f, probe = den_scale * one; /* volatile: not folded to den_scale */
    tcrt_flush_denormals(0);
    bool honoured = probe == 0.0f;
    if (!honoured)
        printf("main_flush_denormals: this CPU ignores FTZ/DAZ (valgrind?): the flushed pass checks the "
               "threads only\n");
    float y[6];
    for (int pass = 0; pass < 3; pass++) {
        bool flush = pass == 1 && honoured;
        ck_assert_int_eq(run_den(pass == 1 ? "--flush-denormals" : NULL, NULL, y), 0);
        ck_assert_msg(den_tid[0] + den_tid[1] == 1 && den_tid[0] * den_tid[1] == 0,
                      "rows ran on tids %d, %d (want 0 and 1)", den_tid[0], den_tid[1]);
        for (int i = 0; i < 6; i++) {
            float want = flush ? 0.0f : (float)i * den_scale;
            ck_assert_msg(y[i] == want, "pass %d y[%d] = %g, want %g", pass, i, (double)y[i], (double)want);
            if (!flush && i > 0)
                ck_assert(y[i] > 0 && y[i] < 1.18e-38f); /* a subnormal, not flushed */
        }
    }
    /* takes no value */
    ck_assert_int_eq(run_den("--flush-denormals=1", NULL, y), 2);
    tcrt_set_threads(1);
}
END_TEST

/* ---- a fake stateful model: arena [x f32[2] at 0][loss f32[] at 64]
 * [w f32[] state at 128][w + 1 at 192]; w starts at 0.5 (the weights) ---- */

static tcrt_status state_run(uint8_t *arena)
{
    const float *x = (const float *)arena;
    float w;
    memcpy(&w, arena + 128, sizeof w);
    float loss = w + x[0] + x[1], next = w + 1;
    memcpy(arena + 64, &loss, sizeof loss);
    memcpy(arena + 192, &next, sizeof next);
    return TCRT_OK;
}

static const float state_w0 = 0.5f;
static const tcrt_io state_args[] = {{"x:0", TCRT_F32, 1, {2}, 8, 0}};
static const tcrt_io state_results[] = {{"loss:0", TCRT_F32, 0, {0}, 4, 64}};
static const tcrt_var state_vars[] = {{"w", TCRT_F32, 0, {0}, 4, 128, 0, 192, 1}};
static const tcrt_model state_model = {"state",
                                       1,
                                       state_args,
                                       1,
                                       state_results,
                                       256,
                                       4,
                                       state_run,
                                       1,
                                       state_vars,
                                       (const unsigned char *)&state_w0};

/* Runs tcrt_main(m, argv) with stdout and stderr captured; returns the text. */
static char *capture(const tcrt_model *m, char **argv, int *rc)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    *rc = tcrt_main(m, argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "missing \"%s\" in:\n%s", (sub), (s))
#define HASNT(s, sub) ck_assert_msg(strstr((s), (sub)) == NULL, "unexpected \"%s\" in:\n%s", (sub), (s))

static void write_f32(const char *path, const float *v, int rank, int64_t d0, int64_t d1)
{
    tcrt_tensor t = {.data = (void *)v, .dtype = TCRT_F32, .rank = rank, .dims = {d0, d1}};
    char err[256];
    ck_assert_int_eq(tcrt_npy_write(path, &t, err, sizeof err), TCRT_OK);
}

START_TEST(main_steps_and_batches)
{
    char feed[128], feedarg[160], outarg[160];
    snprintf(feed, sizeof feed, "%s/x.npy", dir);
    snprintf(feedarg, sizeof feedarg, "x=%s", feed);
    snprintf(outarg, sizeof outarg, "--out-dir=%s/out", dir);
    int rc;
    /* exact feed {1, 2} every step: loss = w + 3 with w = 0.5, 1.5, 2.5 */
    static const float x2[2] = {1, 2};
    write_f32(feed, x2, 1, 2, 0);
    char *o =
        capture(&state_model, (char *[]){"state", "--feed", feedarg, outarg, "--steps", "3", NULL}, &rc);
    ck_assert_msg(rc == 0, "%s", o);
    HAS(o, "step=1 loss:0=3.5\nstep=2 loss:0=4.5\nstep=3 loss:0=5.5\n");
    HAS(o, "trained step=3 steps_run=3 ms_per_step=");
    /* the result file holds the last step's loss */
    char res[200];
    snprintf(res, sizeof res, "%s/out/loss_0.npy", dir);
    tcrt_tensor r;
    char err[256];
    ck_assert_int_eq(tcrt_npy_read(res, &r, err, sizeof err), TCRT_OK);
    ck_assert(((float *)r.data)[0] == 5.5f);
    free(r.data);
    /* three batches {0,1} {2,3} {4,5} (sums 1, 5, 9), five steps: batches
     * 0 1 2 0 1, w = 0.5 .. 4.5 -> losses 1.5 6.5 11.5 4.5 9.5 */
    static const float x6[6] = {0, 1, 2, 3, 4, 5};
    write_f32(feed, x6, 1, 6, 0);
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, outarg, "--steps=5", NULL}, &rc);
    ck_assert_msg(rc == 0, "%s", o);
    HAS(o,
        "step=1 loss:0=1.5\nstep=2 loss:0=6.5\nstep=3 loss:0=11.5\nstep=4 loss:0=4.5\nstep=5 loss:0=9.5\n");
    /* --log-every 2: steps 2, 4 and the last */
    o = capture(&state_model,
                (char *[]){"state", "--feed", feedarg, outarg, "--steps", "5", "--log-every", "2", NULL},
                &rc);
    ck_assert_msg(rc == 0, "%s", o);
    HAS(o, "step=2 loss:0=6.5\nstep=4 loss:0=4.5\nstep=5 loss:0=9.5\n");
    HASNT(o, "step=1 ");
    /* default for N > 20: every N/10 steps (25 steps: 2, 4, ..., 24 and 25) */
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, outarg, "--steps", "25", NULL}, &rc);
    ck_assert_msg(rc == 0, "%s", o);
    HAS(o, "step=2 ");
    HAS(o, "step=24 ");
    HAS(o, "step=25 ");
    HASNT(o, "step=3 ");
    /* without --steps a batched file is the old shape error */
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, outarg, NULL}, &rc);
    ck_assert_int_eq(rc, 2);
    HAS(o, "x.npy: wrong shape: expected float32[2], got float32[6]");
    HASNT(o, "batches");
    /* with --steps: a first dimension that is not a multiple, or another rank */
    write_f32(feed, x6, 1, 5, 0);
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, outarg, "--steps", "2", NULL}, &rc);
    ck_assert_int_eq(rc, 2);
    HAS(o, "error: feed 'x:0': ");
    HAS(o,
        "x.npy: wrong shape: expected float32[2], or float32[k*2] for k batches (--steps), got float32[5]");
    write_f32(feed, x6, 2, 3, 2);
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, outarg, "--steps", "2", NULL}, &rc);
    ck_assert_int_eq(rc, 2);
    HAS(o, "got float32[3,2]");
    /* flag errors */
    write_f32(feed, x2, 1, 2, 0);
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, "--steps", "0", NULL}, &rc);
    ck_assert_int_eq(rc, 2);
    HAS(o, "--steps expects an integer >= 1, got '0'");
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, "--steps", "3", "--repeat", "2", NULL},
                &rc);
    ck_assert_int_eq(rc, 2);
    HAS(o, "--repeat (timed inference runs) and --steps (training) cannot be combined");
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, "--log-every", "2", NULL}, &rc);
    ck_assert_int_eq(rc, 2);
    HAS(o, "--log-every needs --steps");
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, "--save-every", "2", NULL}, &rc);
    ck_assert_int_eq(rc, 2);
    HAS(o, "--save-every needs --save");
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, "--save", "ck/", NULL}, &rc);
    ck_assert_int_eq(rc, 2);
    HAS(o, "--save expects a checkpoint prefix");
    o = capture(&fake, (char *[]){"fake", "--save", "ck", NULL}, &rc);
    ck_assert_int_eq(rc, 2);
    HAS(o, "--save: model 'fake' has no variables to checkpoint");
    /* --help lists the variables and the training flags */
    o = capture(&state_model, (char *[]){"state", "--help", NULL}, &rc);
    ck_assert_int_eq(rc, 0);
    HAS(o, "variables:\n  w float32[] (assigned)\n");
    HAS(o, "--restore PREFIX");
}
END_TEST

START_TEST(main_checkpoints)
{
    char feed[128], feedarg[160], outarg[160], prefix[160];
    snprintf(feed, sizeof feed, "%s/x.npy", dir);
    snprintf(feedarg, sizeof feedarg, "x=%s", feed);
    snprintf(outarg, sizeof outarg, "--out-dir=%s/out", dir);
    snprintf(prefix, sizeof prefix, "%s/ck/sub/model", dir); /* folders are created */
    static const float x6[6] = {0, 1, 2, 3, 4, 5};
    write_f32(feed, x6, 1, 6, 0);
    int rc;
    /* 4 steps, saved at 2 and 4 */
    char *o = capture(&state_model,
                      (char *[]){"state", "--feed", feedarg, outarg, "--steps", "4", "--save", prefix,
                                 "--save-every", "2", NULL},
                      &rc);
    ck_assert_msg(rc == 0, "%s", o);
    char want[300];
    snprintf(want, sizeof want, "step=2 loss:0=6.5\nsaved step=2 %s-2\n", prefix);
    HAS(o, want);
    snprintf(want, sizeof want, "step=4 loss:0=4.5\nsaved step=4 %s-4\n", prefix);
    HAS(o, want);
    /* PREFIX.latest names the newest checkpoint of the series, PREFIX-4 */
    char err[512], latest[300], ck4[200];
    ck_assert_int_eq(tcrt_ckpt_resolve(prefix, latest, sizeof latest, err, sizeof err), TCRT_OK);
    snprintf(ck4, sizeof ck4, "%s-4", prefix);
    ck_assert_str_eq(latest, ck4);
    /* the checkpoint holds w = 4.5 and the global step 4 */
    tcrt_ckpt *ck = NULL;
    ck_assert_msg(tcrt_ckpt_open(latest, &ck, err, sizeof err) == TCRT_OK, "%s", err);
    const tcrt_ckpt_entry *e = tcrt_ckpt_find(ck, "w");
    ck_assert_ptr_nonnull(e);
    float w = 0;
    ck_assert_int_eq(tcrt_ckpt_read(ck, e, &w, sizeof w, err, sizeof err), TCRT_OK);
    ck_assert(w == 4.5f);
    e = tcrt_ckpt_find(ck, "tfcc/global_step");
    ck_assert_ptr_nonnull(e);
    int64_t gs = 0;
    ck_assert_int_eq(e->dtype, TCRT_I64);
    ck_assert_int_eq(tcrt_ckpt_read(ck, e, &gs, sizeof gs, err, sizeof err), TCRT_OK);
    ck_assert_int_eq(gs, 4);
    tcrt_ckpt_close(ck);
    /* resumed to 6: steps 5 and 6 use batches 4 mod 3 = 1 and 5 mod 3 = 2,
     * w = 4.5, 5.5 -> losses 9.5, 14.5; saved only at the end */
    o = capture(&state_model,
                (char *[]){"state", "--feed", feedarg, outarg, "--steps", "6", "--restore", prefix, "--save",
                           prefix, NULL},
                &rc);
    ck_assert_msg(rc == 0, "%s", o);
    HAS(o, "step=5 loss:0=9.5\nstep=6 loss:0=14.5\n");
    HASNT(o, "step=4 ");
    snprintf(want, sizeof want, "saved step=6 %s-6\n", prefix);
    HAS(o, want);
    /* two checkpoints are kept (4 and 6); 2 is gone */
    char old[220];
    snprintf(old, sizeof old, "%s-2.index", prefix);
    ck_assert_int_ne(access(old, F_OK), 0);
    snprintf(old, sizeof old, "%s-4.index", prefix);
    ck_assert_int_eq(access(old, F_OK), 0);
    HAS(o, "trained step=6 steps_run=2 ");
    /* already there: nothing runs, exit 0 */
    o = capture(&state_model,
                (char *[]){"state", "--feed", feedarg, outarg, "--steps", "6", "--restore", prefix, NULL},
                &rc);
    ck_assert_msg(rc == 0, "%s", o);
    HAS(o, "step=6: the restored state is already at --steps 6; nothing to run");
    HASNT(o, "loss:0=");
    /* without --steps: one run from the restored state (w = 6.5 after 6
     * steps), the result is its loss 6.5 + 1 + 2 */
    static const float x2[2] = {1, 2};
    write_f32(feed, x2, 1, 2, 0);
    o = capture(&state_model, (char *[]){"state", "--feed", feedarg, outarg, "--restore", prefix, NULL}, &rc);
    ck_assert_msg(rc == 0, "%s", o);
    char res[200];
    snprintf(res, sizeof res, "%s/out/loss_0.npy", dir);
    tcrt_tensor r;
    ck_assert_int_eq(tcrt_npy_read(res, &r, err, sizeof err), TCRT_OK);
    ck_assert(((float *)r.data)[0] == 9.5f);
    free(r.data);
    /* a missing checkpoint: exit 1, naming it */
    char missing[200];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    o = capture(&state_model,
                (char *[]){"state", "--feed", feedarg, "--steps", "2", "--restore", missing, NULL}, &rc);
    ck_assert_int_eq(rc, 1);
    snprintf(want, sizeof want, "error: --restore %s: ", missing);
    HAS(o, want);
    HAS(o, "nope.index");
    HASNT(o, "step=1");
    /* a corrupt checkpoint (a data byte flipped: its CRC fails): exit 1,
     * naming it, nothing runs */
    char data[200];
    snprintf(data, sizeof data, "%s-6.data-00000-of-00001", prefix);
    FILE *f = fopen(data, "r+b");
    ck_assert_ptr_nonnull(f);
    int c0 = fgetc(f);
    ck_assert_int_ne(c0, EOF);
    ck_assert_int_eq(fseek(f, 0, SEEK_SET), 0);
    fputc(c0 ^ 0x40, f);
    fclose(f);
    o = capture(&state_model,
                (char *[]){"state", "--feed", feedarg, "--steps", "8", "--restore", prefix, NULL}, &rc);
    ck_assert_int_eq(rc, 1);
    snprintf(want, sizeof want, "error: --restore %s-6: ", prefix);
    HAS(o, want);
    HAS(o, "model-6.data-00000-of-00001: ");
    HASNT(o, "step=7");
    /* a pointer file that names nothing sensible: exit 1, naming it */
    char ptr[220];
    snprintf(ptr, sizeof ptr, "%s.latest", prefix);
    f = fopen(ptr, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("../../etc/passwd\n", f);
    fclose(f);
    o = capture(&state_model,
                (char *[]){"state", "--feed", feedarg, "--steps", "8", "--restore", prefix, NULL}, &rc);
    ck_assert_int_eq(rc, 1);
    HAS(o, "model.latest: not a checkpoint pointer (one line 'model-STEP' expected)");
}
END_TEST

/* ---- tcrt_huge_pages ---- */

/* Byte i of the test file: a pattern no two nearby pages share. */
static unsigned char hp_byte(size_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13);
}

/* Whether this system's transparent huge pages are on for MADV_HUGEPAGE
 * ranges (read here, apart from hugepage.c). */
static bool hp_system_on(void)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    char line[128] = {0};
    bool on = f && fgets(line, sizeof line, f) && (strstr(line, "[always]") || strstr(line, "[madvise]"));
    if (f)
        fclose(f);
    return on;
}

/* A 9 MB file mapped read-only and private (as the executable's weights
 * are): after tcrt_huge_pages on all but its first 4113 and last 9000
 * bytes, every byte is still the file's; the count is whole 2 MB pieces of
 * the range (at least two of a 9 MB mapping when the system has huge
 * pages, else none); a write into a moved piece still faults (child
 * process); NULL, or a range under 2 MB, moves nothing. */
START_TEST(huge_pages_in_place)
{
    const size_t n = 9u << 20, lo = 4113, hi = 9000, H = 2u << 20;
    char fpath[160];
    snprintf(fpath, sizeof fpath, "%s/weights.bin", dir);
    FILE *f = fopen(fpath, "wb");
    ck_assert_ptr_nonnull(f);
    for (size_t i = 0; i < n; i++)
        fputc(hp_byte(i), f);
    ck_assert_int_eq(fclose(f), 0);
    int fd = open(fpath, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    const unsigned char *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    ck_assert(p != MAP_FAILED);
    close(fd);
    ck_assert_uint_eq(tcrt_huge_pages(NULL, n), 0);
    ck_assert_uint_eq(tcrt_huge_pages(p, H - 1), 0);
    size_t moved = tcrt_huge_pages(p + lo, n - lo - hi);
    ck_assert_uint_eq(moved % H, 0);
    ck_assert_uint_le(moved, n - lo - hi);
#ifdef __linux__
    if (hp_system_on())
        ck_assert_uint_ge(moved, 2 * H);
#endif
    for (size_t i = 0; i < n; i++)
        if (p[i] != hp_byte(i))
            ck_abort_msg("byte %zu is %u after tcrt_huge_pages, the file has %u", i, p[i], hp_byte(i));
    if (moved) {
        /* the first whole piece inside the range: still read-only */
        unsigned char *piece = (unsigned char *)(((uintptr_t)(p + lo) + H - 1) & ~(uintptr_t)(H - 1));
        pid_t pid = fork();
        if (pid == 0) {
            piece[123] = 1;
            _exit(0);
        }
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(!(WIFEXITED(status) && WEXITSTATUS(status) == 0), "a moved piece took a write");
    }
    munmap((void *)p, n);
    /* the flag, on a model without weights: accepted, no value */
    float y[6];
    ck_assert_int_eq(run_den("--huge-pages", NULL, y), 0);
    ck_assert_int_eq(run_den("--huge-pages=1", NULL, y), 2);
    tcrt_set_threads(1);
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
    tcase_add_test(tm, main_steps_and_batches);
    tcase_add_test(tm, main_checkpoints);
    tcase_add_test(tm, main_flush_denormals);
    tcase_add_test(tm, huge_pages_in_place);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, tm);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
