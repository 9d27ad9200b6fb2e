/* tests/tf/test_dyn.c - Check suite for bounded data-dependent sizes
 * (ir/dyn.c and the TF lowerings that produce and accept them): Where(x),
 * NonMaxSuppressionV5 without padding, Range / TopKV2 / Fill / Slice whose
 * size is computed at run time, and the Shape arithmetic that pads such a
 * tensor back to a static shape.
 *
 * The graphs are hand-written .pbtxt files in data/ (dyn_*.pbtxt); each
 * file's header comment derives the expected values by hand.  A structure
 * test imports them (tf_import) and checks that the padded fetches are
 * static while a value inside is data-dependent.  Numeric tests compile a
 * graph with the driver (tfcc compile, in process), run the executable on
 * .npy feeds and compare every fetched element (floats within 1e-6, ints
 * exactly).  Error tests pin the words "data-dependent size" and the node
 * or fetch the message names.
 *
 * Usage: test_tf_dyn DATA_DIR
 */
#include <check.h>
#include <fcntl.h>
#include <math.h>
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
static char tmp_dir[] = "/tmp/tfcc-dyn-XXXXXX";

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

static const IrType *fetch_type(const char *name)
{
    for (int i = 0; i < gr->n_fetches; i++)
        if (strcmp(gr->fetches[i].name, name) == 0)
            return ir_value_type(gr->fetches[i].value);
    ck_abort_msg("no fetch '%s'", name);
    return NULL;
}

/* Fetch `name` is static, of dtype dt and shape dims[rank]. */
static void assert_static(const char *name, tcrt_dtype dt, int rank, const int64_t *dims)
{
    const IrType *t = fetch_type(name);
    ck_assert_msg(!ir_type_has_dyn(t), "fetch '%s' has a data-dependent size", name);
    ck_assert_int_eq(t->dtype, dt);
    ck_assert_int_eq(t->shape.rank, rank);
    for (int d = 0; d < rank; d++)
        ck_assert_int_eq(t->shape.dims[d], dims[d]);
}

/* Some node's output has a data-dependent size whose bound is `bound` in
 * dim 0, and the graph has at least one run-time symbol. */
static void assert_dyn_inside(int64_t bound)
{
    ck_assert_int_ge(gr->n_syms, 1);
    bool found = false;
    IR_FOR_EACH(gr, n)
    {
        for (int i = 0; i < n->n_outputs; i++) {
            const IrShape *s = &n->out[i].type.shape;
            if (s->has_dyn && s->dyn_dim == 0 && s->dims[0] == bound)
                found = true;
        }
    }
    ck_assert_msg(found, "no value with a data-dependent dim 0 bounded by %lld", (long long)bound);
}

START_TEST(test_where_static_fetches)
{
    /* vals is [n] with n <= 6; out = Pad(vals, [[0, 6 - n]]) is static [6]
     * again, and count = n an int32 scalar */
    import("dyn_where.pbtxt", (const char *[]){"x", NULL}, (const char *[]){"out", "count", "total", NULL});
    assert_static("out", TCRT_F32, 1, (const int64_t[]){6});
    assert_static("count", TCRT_I32, 0, NULL);
    assert_static("total", TCRT_F32, 0, NULL);
    assert_dyn_inside(6);
}
END_TEST

START_TEST(test_nms_static_fetches)
{
    /* k <= max_output_size 4 (< the 5 boxes) */
    import("dyn_nms.pbtxt", (const char *[]){"boxes", "scores", NULL},
           (const char *[]){"out_boxes", "out_scores", "nms:2", NULL});
    assert_static("out_boxes", TCRT_F32, 2, (const int64_t[]){4, 4});
    assert_static("out_scores", TCRT_F32, 1, (const int64_t[]){4});
    assert_static("nms:2", TCRT_I32, 0, NULL);
    assert_dyn_inside(4);
}
END_TEST

START_TEST(test_range_static_fetches)
{
    /* m = min(c, 3) <= 3: the Range, the gather and the Concat with its
     * complement Fill [3 - m] */
    import("dyn_range.pbtxt", (const char *[]){"x", NULL}, (const char *[]){"out", "cat", NULL});
    assert_static("out", TCRT_F32, 1, (const int64_t[]){3});
    assert_static("cat", TCRT_F32, 1, (const int64_t[]){3});
    assert_dyn_inside(3);
}
END_TEST

START_TEST(test_clip_static_fetches)
{
    import("dyn_clip.pbtxt", (const char *[]){"x", NULL}, (const char *[]){"out", NULL});
    assert_static("out", TCRT_F32, 1, (const int64_t[]){2});
    assert_dyn_inside(6); /* vals: n <= 6 */
}
END_TEST

/* ---- numbers: compile, run on .npy feeds ---- */

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

/* <tmp>/NAME.npy: float32 of shape dims[rank]. */
static void write_f32(const char *name, int rank, const int64_t *dims, const float *v)
{
    char path[1200], msg[256];
    snprintf(path, sizeof path, "%s/%s.npy", tmp_dir, name);
    tcrt_tensor t = {(void *)v, TCRT_F32, rank, {0}};
    for (int d = 0; d < rank; d++)
        t.dims[d] = dims[d];
    ck_assert_int_eq(tcrt_npy_write(path, &t, msg, sizeof msg), TCRT_OK);
}

static void write_x6(const float *v)
{
    write_f32("x", 1, (const int64_t[]){6}, v);
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

/* Reads <tmp>/out/FILE.npy and checks its dtype and shape dims[rank]. */
static void read_out(const char *file, tcrt_tensor *t, tcrt_dtype dt, int rank, const int64_t *dims)
{
    char path[1200], msg[256];
    snprintf(path, sizeof path, "%s/out/%s.npy", tmp_dir, file);
    ck_assert_msg(tcrt_npy_read(path, t, msg, sizeof msg) == TCRT_OK, "%s", msg);
    ck_assert_msg(t->dtype == dt, "%s: dtype %d, want %d", file, (int)t->dtype, (int)dt);
    ck_assert_msg(t->rank == rank, "%s: rank %d, want %d", file, t->rank, rank);
    for (int d = 0; d < rank; d++)
        ck_assert_msg(t->dims[d] == dims[d], "%s: dim %d is %lld, want %lld", file, d, (long long)t->dims[d],
                      (long long)dims[d]);
}

/* The fetched float32 tensor <tmp>/out/FILE.npy is want (within 1e-6). */
static void result_f(const char *file, int rank, const int64_t *dims, const float *want)
{
    tcrt_tensor t;
    read_out(file, &t, TCRT_F32, rank, dims);
    int64_t n = tcrt_tensor_count(&t);
    for (int64_t i = 0; i < n; i++) {
        float got = ((const float *)t.data)[i];
        ck_assert_msg(fabsf(got - want[i]) <= 1e-6f, "%s[%lld] = %.9g, want %.9g", file, (long long)i, got,
                      want[i]);
    }
    free(t.data);
}

/* The fetched int32 tensor <tmp>/out/FILE.npy is exactly want. */
static void result_i(const char *file, int rank, const int64_t *dims, const int32_t *want)
{
    tcrt_tensor t;
    read_out(file, &t, TCRT_I32, rank, dims);
    int64_t n = tcrt_tensor_count(&t);
    for (int64_t i = 0; i < n; i++) {
        int32_t got = ((const int32_t *)t.data)[i];
        ck_assert_msg(got == want[i], "%s[%lld] = %d, want %d", file, (long long)i, got, want[i]);
    }
    free(t.data);
}

static const int64_t D2[] = {2}, D3[] = {3}, D4[] = {4}, D6[] = {6}, D44[] = {4, 4};

static const char *exe(const char *name)
{
    static char buf[4][1200];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 1200, "%s/%s", tmp_dir, name);
    return b;
}

/* dyn_where.pbtxt's feeds (its header derives the values) */
static const struct {
    float x[6];
    float out[6], dbl[6], total, vmax, vmin, pairs[12];
    int32_t count;
} where_cases[] = {
    {{0.5f, -1, 2, 0, 3, -2},
     {0.5f, 2, 3, 0, 0, 0},
     {1, 4, 6, 0, 0, 0},
     5.5f,
     3,
     0.5f,
     {0.5f, 1, 2, 4, 3, 6, 0, 0, 0, 0, 0, 0},
     3},
    {{-1, -2, -3, -4, -5, -6}, {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, 0, 0, 0, {0}, 0}, /* (no max/min) */
    {{1, 2, 3, 4, 5, 6},
     {1, 2, 3, 4, 5, 6},
     {2, 4, 6, 8, 10, 12},
     21,
     6,
     1,
     {1, 2, 2, 4, 3, 6, 4, 8, 5, 10, 6, 12},
     6},
    {{-1, 0, -3, 0, -5, 7},
     {7, 0, 0, 0, 0, 0},
     {14, 0, 0, 0, 0, 0},
     7,
     7,
     7,
     {7, 14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
     1},
};
#define N_WHERE ((int)(sizeof where_cases / sizeof where_cases[0]))

START_TEST(test_where_run)
{
    /* Where -> Reshape -> GatherV2 -> Pad with paddings from Shape */
    const char *e = exe("where");
    compile("dyn_where.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"out", "count", NULL});
    for (int c = 0; c < N_WHERE; c++) {
        write_x6(where_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("out", 1, D6, where_cases[c].out);
        result_i("count", 0, NULL, &where_cases[c].count);
    }
}
END_TEST

START_TEST(test_where_elementwise_run)
{
    /* vals * 2 over the size-n tensor, padded with vals' paddings */
    const char *e = exe("where_dbl");
    compile("dyn_where.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"dbl", NULL});
    for (int c = 0; c < N_WHERE; c++) {
        write_x6(where_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("dbl", 1, D6, where_cases[c].dbl);
    }
}
END_TEST

START_TEST(test_where_sum_run)
{
    /* Sum over the run-time extent only (an empty sum is 0) */
    const char *e = exe("where_sum");
    compile("dyn_where.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"total", NULL});
    for (int c = 0; c < N_WHERE; c++) {
        write_x6(where_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("total", 0, NULL, &where_cases[c].total);
    }
}
END_TEST

START_TEST(test_where_max_min_run)
{
    /* Max / Min over the run-time extent only (the padding is not in it);
     * the feeds with at least one positive element */
    const char *e = exe("where_maxmin");
    compile("dyn_where.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"vmax", "vmin", NULL});
    for (int c = 0; c < N_WHERE; c++) {
        if (where_cases[c].count == 0)
            continue;
        write_x6(where_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("vmax", 0, NULL, &where_cases[c].vmax);
        result_f("vmin", 0, NULL, &where_cases[c].vmin);
    }
}
END_TEST

START_TEST(test_where_concat_columns_run)
{
    /* ExpandDims to [n, 1], ConcatV2 along the static axis 1, Pad rows */
    const char *e = exe("where_pairs");
    compile("dyn_where.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"pairs", NULL});
    for (int c = 0; c < N_WHERE; c++) {
        write_x6(where_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("pairs", 2, (const int64_t[]){6, 2}, where_cases[c].pairs);
    }
}
END_TEST

/* dyn_where2d.pbtxt's feeds (its header derives the values) */
static const struct {
    float x[6];
    int32_t coords[12], coords_m1[12];
} where2d_cases[] = {
    {{1, -1, 2, 0, 3, -4}, {0, 0, 0, 2, 1, 1, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 2, 1, 1, -1, -1, -1, -1, -1, -1}},
    {{1, 2, 3, 4, 5, 6}, {0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2}, {0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2}},
    {{-1, -1, -1, -1, -1, -1}, {0}, {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}},
    {{-1, -1, -1, -1, -1, 9},
     {1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
     {1, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}},
};
#define N_WHERE2D ((int)(sizeof where2d_cases / sizeof where2d_cases[0]))

START_TEST(test_where2d_run)
{
    /* Where of a [2, 3] input: [n, 2] coordinates, Cast, Pad */
    const char *e = exe("where2d");
    compile("dyn_where2d.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"coords", NULL});
    for (int c = 0; c < N_WHERE2D; c++) {
        write_f32("x", 2, (const int64_t[]){2, 3}, where2d_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_i("coords", 2, (const int64_t[]){6, 2}, where2d_cases[c].coords);
    }
}
END_TEST

START_TEST(test_where2d_padv2_run)
{
    /* PadV2 with the constant -1 */
    const char *e = exe("where2d_m1");
    compile("dyn_where2d.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"coords_m1", NULL});
    for (int c = 0; c < N_WHERE2D; c++) {
        write_f32("x", 2, (const int64_t[]){2, 3}, where2d_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_i("coords_m1", 2, (const int64_t[]){6, 2}, where2d_cases[c].coords_m1);
    }
}
END_TEST

/* dyn_nms.pbtxt's feeds (its header derives the values) */
static const struct {
    float boxes[20], scores[5];
    float out_boxes[16], out_scores[4], out_areas[4];
    int32_t valid;
} nms_cases[] = {
    /* 1: D overlaps B (IoU 9/11): dropped; C under the threshold */
    {{20, 20, 30, 30, 0, 0, 10, 10, 50, 50, 60, 60, 10, 11, 0, 1, 35, 36, 20, 26},
     {0.7f, 0.9f, 0.05f, 0.8f, 0.6f},
     {0, 0, 10, 10, 20, 20, 30, 30, 35, 36, 20, 26, 0, 0, 0, 0},
     {0.9f, 0.7f, 0.6f, 0},
     {100, 100, 150, 0},
     3},
    /* 2: disjoint unit squares, max_output_size 4 cuts the fifth */
    {{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9},
     {0.3f, 0.5f, 0.2f, 0.9f, 0.4f},
     {6, 6, 7, 7, 2, 2, 3, 3, 8, 8, 9, 9, 0, 0, 1, 1},
     {0.9f, 0.5f, 0.4f, 0.3f},
     {1, 1, 1, 1},
     4},
    /* 3: no score > 0.1 (0.1 itself is not): nothing selected */
    {{0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9},
     {0.05f, 0.1f, 0, -1, 0.1f},
     {0},
     {0},
     {0},
     0},
    /* 4: T selected, P (IoU 1) and Q (2/3) dropped, R (3/7) and S kept */
    {{0, 0, 10, 10, 0, 2, 10, 12, 0, 4, 10, 14, 100, 100, 110, 110, 10, 10, 0, 0},
     {0.9f, 0.8f, 0.7f, 0.2f, 0.95f},
     {10, 10, 0, 0, 0, 4, 10, 14, 100, 100, 110, 110, 0, 0, 0, 0},
     {0.95f, 0.7f, 0.2f, 0},
     {100, 100, 100, 0},
     3},
};
#define N_NMS ((int)(sizeof nms_cases / sizeof nms_cases[0]))

static void write_nms_feeds(int c)
{
    write_f32("boxes", 2, (const int64_t[]){5, 4}, nms_cases[c].boxes);
    write_f32("scores", 1, (const int64_t[]){5}, nms_cases[c].scores);
}

START_TEST(test_nms_run)
{
    const char *e = exe("nms");
    compile("dyn_nms.pbtxt", e, (const char *[]){"boxes", "scores", NULL},
            (const char *[]){"out_boxes", "out_scores", "nms:2", NULL});
    for (int c = 0; c < N_NMS; c++) {
        write_nms_feeds(c);
        run(e, (const char *[]){"boxes", "scores", NULL});
        result_f("out_boxes", 2, D44, nms_cases[c].out_boxes);
        result_f("out_scores", 1, D4, nms_cases[c].out_scores);
        result_i("nms_2", 0, NULL, &nms_cases[c].valid);
    }
}
END_TEST

START_TEST(test_nms_areas_run)
{
    /* Split along the static dim 1 of [k, 4], Sub/Mul, Squeeze, padded
     * with the scores' paddings (the same run-time size k) */
    const char *e = exe("nms_areas");
    compile("dyn_nms.pbtxt", e, (const char *[]){"boxes", "scores", NULL},
            (const char *[]){"out_areas", NULL});
    for (int c = 0; c < N_NMS; c++) {
        write_nms_feeds(c);
        run(e, (const char *[]){"boxes", "scores", NULL});
        result_f("out_areas", 1, D4, nms_cases[c].out_areas);
    }
}
END_TEST

START_TEST(test_nms_flatten_run)
{
    /* Reshape [k, 4] -> [4k], padded to 16 with 16 - Shape(flat)[0]: the
     * padded boxes in row-major order */
    const char *e = exe("nms_flat");
    compile("dyn_nms.pbtxt", e, (const char *[]){"boxes", "scores", NULL},
            (const char *[]){"out_flat", NULL});
    for (int c = 0; c < N_NMS; c++) {
        write_nms_feeds(c);
        run(e, (const char *[]){"boxes", "scores", NULL});
        result_f("out_flat", 1, (const int64_t[]){16}, nms_cases[c].out_boxes);
    }
}
END_TEST

/* dyn_range.pbtxt's feeds (its header derives the values) */
static const struct {
    float x[6];
    float out[3], out_topk[3], out_ones[3], cat[3];
    int32_t out_topk_idx[3], lim;
} range_cases[] = {
    {{1, -2, 3, -4, -5, -6}, {3, 1, 0}, {3, 1, 0}, {1, 1, 0}, {3, 1, -1}, {2, 0, 0}, 2},
    {{0.5f, 4, -1, 2, 3, 1}, {4, 3, 2}, {4, 3, 2}, {1, 1, 1}, {4, 3, 2}, {1, 4, 3}, 3},
    {{-1, -2, -3, -4, -5, -6}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {-1, -1, -1}, {0, 0, 0}, 0},
    {{-0.5f, 2, -3, 5, 1, -7}, {5, 2, 1}, {5, 2, 1}, {1, 1, 1}, {5, 2, 1}, {3, 1, 4}, 3},
};
#define N_RANGE ((int)(sizeof range_cases / sizeof range_cases[0]))

START_TEST(test_range_run)
{
    /* Range(0, min(c, 3), 1) gathers the m largest values */
    const char *e = exe("range");
    compile("dyn_range.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"out", "lim", NULL});
    for (int c = 0; c < N_RANGE; c++) {
        write_x6(range_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("out", 1, D3, range_cases[c].out);
        result_i("lim", 0, NULL, &range_cases[c].lim);
    }
}
END_TEST

START_TEST(test_topk_dyn_k_run)
{
    /* TopKV2 with k = m, padded with [[0, 3 - lim]] */
    const char *e = exe("topk");
    compile("dyn_range.pbtxt", e, (const char *[]){"x", NULL},
            (const char *[]){"out_topk", "out_topk_idx", NULL});
    for (int c = 0; c < N_RANGE; c++) {
        write_x6(range_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("out_topk", 1, D3, range_cases[c].out_topk);
        result_i("out_topk_idx", 1, D3, range_cases[c].out_topk_idx);
    }
}
END_TEST

START_TEST(test_fill_run)
{
    /* Fill(Pack(lim), 1), padded with [[0, 3 - lim]]: Fill's extent is
     * Pack(lim)[0], i.e. lim, so the result is a static [3] */
    const char *e = exe("fill");
    compile("dyn_range.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"out_ones", NULL});
    for (int c = 0; c < N_RANGE; c++) {
        write_x6(range_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("out_ones", 1, D3, range_cases[c].out_ones);
    }
}
END_TEST

START_TEST(test_fill_shape_pad_run)
{
    /* Fill([m], 1), padded with [[0, 3 - Shape(ones)[0]]] */
    const char *e = exe("fill_s");
    compile("dyn_range.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"out_ones_s", NULL});
    for (int c = 0; c < N_RANGE; c++) {
        write_x6(range_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("out_ones_s", 1, D3, range_cases[c].out_ones);
    }
}
END_TEST

START_TEST(test_concat_run)
{
    /* ConcatV2([m], Fill([3 - m], -1)) is a static [3] */
    const char *e = exe("concat");
    compile("dyn_range.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"cat", NULL});
    for (int c = 0; c < N_RANGE; c++) {
        write_x6(range_cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("cat", 1, D3, range_cases[c].cat);
    }
}
END_TEST

START_TEST(test_clip_run)
{
    /* pad or clip to K = 2: Slice with size Select(n > 2, 2, -1) */
    static const struct {
        float x[6], out[2];
        int32_t cn;
    } cases[] = {
        {{-1, -1, 4, -1, -1, -1}, {4, 0}, 1},  /* n = 1 < K */
        {{-1, 2, -1, -1, 5, -1}, {2, 5}, 2},   /* n = K: size -1 */
        {{1, 2, 3, -1, 4, -1}, {1, 2}, 2},     /* n = 4 > K: clipped */
        {{-1, -2, -3, -4, -5, -6}, {0, 0}, 0}, /* n = 0 */
    };
    const char *e = exe("clip");
    compile("dyn_clip.pbtxt", e, (const char *[]){"x", NULL}, (const char *[]){"out", "cn", NULL});
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        write_x6(cases[c].x);
        run(e, (const char *[]){"x", NULL});
        result_f("out", 1, D2, cases[c].out);
        result_i("cn", 0, NULL, &cases[c].cn);
    }
}
END_TEST

/* ---- errors: the compile fails naming the node or fetch ---- */

/* Compiles data/file (feed x, the one fetch) and expects it to fail with a
 * message containing "data-dependent size" and every string in want. */
static void compile_fails(const char *file, const char *fetch, const char *const *want)
{
    Result r = tfcc("compile", data(file), "--feed", "x", "--fetch", fetch, "-o", exe("err"), NULL);
    ck_assert_msg(r.rc != 0, "compile %s --fetch %s succeeded", file, fetch);
    ck_assert_msg(strstr(r.err, "data-dependent size") != NULL, "message lacks 'data-dependent size': %s",
                  r.err);
    for (int i = 0; want[i]; i++)
        ck_assert_msg(strstr(r.err, want[i]) != NULL, "message lacks '%s': %s", want[i], r.err);
    result_free(&r);
}

START_TEST(test_err_fetch)
{
    compile_fails("dyn_err_fetch.pbtxt", "vals", (const char *[]){"fetch 'vals", NULL});
    /* the same through dyn_where.pbtxt's other consumers */
    compile_fails("dyn_where.pbtxt", "vals:0", (const char *[]){"fetch 'vals", NULL});
}
END_TEST

START_TEST(test_err_mean_scalar)
{
    compile_fails("dyn_err_mean.pbtxt", "m", (const char *[]){"node 'm' (Mean)", NULL});
}
END_TEST

START_TEST(test_err_mean_padded)
{
    /* padding the result does not help: Mean itself rejects the input */
    compile_fails("dyn_err_mean.pbtxt", "mp", (const char *[]){"node 'mrow' (Mean)", NULL});
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
    Suite *s = suite_create("tf_dyn");
    TCase *tc = tcase_create("structure");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_where_static_fetches);
    tcase_add_test(tc, test_nms_static_fetches);
    tcase_add_test(tc, test_range_static_fetches);
    tcase_add_test(tc, test_clip_static_fetches);
    suite_add_tcase(s, tc);
    TCase *tn = tcase_create("numeric");
    tcase_set_timeout(tn, 60);
    tcase_add_test(tn, test_where_run);
    tcase_add_test(tn, test_where_elementwise_run);
    tcase_add_test(tn, test_where_sum_run);
    tcase_add_test(tn, test_where_max_min_run);
    tcase_add_test(tn, test_where_concat_columns_run);
    tcase_add_test(tn, test_where2d_run);
    tcase_add_test(tn, test_where2d_padv2_run);
    tcase_add_test(tn, test_nms_run);
    tcase_add_test(tn, test_nms_areas_run);
    tcase_add_test(tn, test_nms_flatten_run);
    tcase_add_test(tn, test_range_run);
    tcase_add_test(tn, test_topk_dyn_k_run);
    tcase_add_test(tn, test_fill_run);
    tcase_add_test(tn, test_fill_shape_pad_run);
    tcase_add_test(tn, test_concat_run);
    tcase_add_test(tn, test_clip_run);
    suite_add_tcase(s, tn);
    TCase *te = tcase_create("errors");
    tcase_set_timeout(te, 60);
    tcase_add_test(te, test_err_fetch);
    tcase_add_test(te, test_err_mean_scalar);
    tcase_add_test(te, test_err_mean_padded);
    suite_add_tcase(s, te);
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
