/* tests/passes/test_place.c - device names, placement and partitioning
 * (Check suite "place"; docs/devices.md).
 *
 * ir/device.c: full, partial, legacy and local names parse to the fields
 * TensorFlow's DeviceNameUtils gives them; malformed ones fail; merging
 * and matching.  passes/place.c on small hand-built graphs: requests,
 * --device-map, colocation (`_class` and variable/assign), kernel
 * availability with soft placement, the cost model on a toy graph whose
 * costs are derived by hand, and every error with its text pinned.
 * passes/partition.c: SEND/RECV pairs, unique keys, one RECV per tensor
 * per device, RECVs as late as possible, peak memory by hand.
 * End to end (tfcc in process): a .pbtxt split over /cpu:0 and
 * /job:localhost/replica:0/task:0/device:CPU:1 compiles, runs and gives
 * the hand-derived numbers, the same as the unsplit compile; info
 * --placement prints each node's device and why; a GPU placement stops
 * with the no-CUDA-backend message.
 *
 * Usage: test_place DATA_DIR
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "passes/passes.h"
#include "tcrt.h"
#include "tests/tfcc_inproc.h"

static const char *data_dir;

#define CPU0 "/job:localhost/replica:0/task:0/device:CPU:0"
#define CPU1 "/job:localhost/replica:0/task:0/device:CPU:1"
#define GPU0 "/job:localhost/replica:0/task:0/device:GPU:0"
#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "missing \"%s\" in:\n%s", (sub), (s))

/* ---- device names ---- */

static const char *canon(const char *s)
{
    static char buf[IR_DEV_MAX_STR];
    IrDevName d;
    if (!ir_dev_parse(s, &d))
        return "MALFORMED";
    return ir_dev_str(&d, buf, sizeof buf);
}

START_TEST(test_dev_parse)
{
    ck_assert_str_eq(canon("/job:worker/replica:2/task:1/device:GPU:3"),
                     "/job:worker/replica:2/task:1/device:GPU:3");
    ck_assert_str_eq(canon("/device:GPU:1"), "/device:GPU:1");
    ck_assert_str_eq(canon("/gpu:0"), "/device:GPU:0");
    ck_assert_str_eq(canon("/cpu:0"), "/device:CPU:0");
    ck_assert_str_eq(canon("/CPU:2"), "/device:CPU:2");
    ck_assert_str_eq(canon("GPU:0"), "/device:GPU:0");
    ck_assert_str_eq(canon("cpu:1"), "/device:CPU:1");
    ck_assert_str_eq(canon("/job:ps/task:1"), "/job:ps/task:1");
    ck_assert_str_eq(canon("/job:localhost/replica:0/task:0/cpu:0"), CPU0);
    ck_assert_str_eq(canon("/device:cpu:0"), "/device:CPU:0");
    ck_assert_str_eq(canon("/device:GPU"), "/device:GPU:*");
    ck_assert_str_eq(canon("/device:GPU:*"), "/device:GPU:*");
    ck_assert_str_eq(canon("/job:*/replica:*/task:3"), "/task:3");
    ck_assert_str_eq(canon(""), "");
    ck_assert_str_eq(canon("/"), "");
    IrDevName d;
    ck_assert(ir_dev_parse("/job:w_1/task:12/device:TPU:4", &d));
    ck_assert(d.has_job && !d.has_replica && d.has_task && d.has_type && d.has_id);
    ck_assert_str_eq(d.job, "w_1");
    ck_assert_int_eq(d.task, 12);
    ck_assert_str_eq(d.type, "TPU");
    ck_assert_int_eq(d.id, 4);
    const char *bad[] = {"/job:",          "/job:1abc", "/device:GPU:x", "GPU",
                         "/foo:1",         "/gpu:",     "gpu:0/",        "/task:-1",
                         "/device:G-PU:0", "/job:a b",  "cpu:0:1",       "/replica:99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(!ir_dev_parse(bad[i], &d), "'%s' parsed", bad[i]);
    char buf[IR_DEV_MAX_STR];
    ck_assert(ir_dev_canonical("/gpu:1", buf, sizeof buf));
    ck_assert_str_eq(buf, "/job:localhost/replica:0/task:0/device:GPU:1");
    ck_assert(ir_dev_canonical("/job:ps/task:1", buf, sizeof buf));
    ck_assert_str_eq(buf, "/job:ps/replica:0/task:1");
}
END_TEST

START_TEST(test_dev_merge_match)
{
    IrDevName a, b, full;
    char why[512], buf[IR_DEV_MAX_STR];
    ck_assert(ir_dev_parse("/job:ps", &a) && ir_dev_parse("/device:CPU:1", &b));
    ck_assert(ir_dev_merge(&a, &b, why, sizeof why));
    ck_assert_str_eq(ir_dev_str(&a, buf, sizeof buf), "/job:ps/device:CPU:1");
    ck_assert(ir_dev_parse("/gpu:0", &a) && ir_dev_parse("/cpu:0", &b));
    ck_assert(!ir_dev_merge(&a, &b, why, sizeof why));
    ck_assert_str_eq(why, "incompatible types: '/device:GPU:0' and '/device:CPU:0'");
    ck_assert(ir_dev_parse("/job:a/task:0", &a) && ir_dev_parse("/task:1", &b));
    ck_assert(!ir_dev_merge(&a, &b, why, sizeof why));
    ck_assert_str_eq(why, "incompatible tasks: '/job:a/task:0' and '/task:1'");
    ck_assert(ir_dev_parse(CPU1, &full) && ir_dev_is_full(&full));
    ck_assert(ir_dev_parse("/device:CPU:*", &a) && ir_dev_matches(&a, &full));
    ck_assert(ir_dev_parse("/cpu:0", &a) && !ir_dev_matches(&a, &full));
    ck_assert(ir_dev_parse("/job:ps", &a) && !ir_dev_matches(&a, &full));
    ck_assert(ir_dev_parse("", &a) && ir_dev_is_empty(&a) && ir_dev_matches(&a, &full));
}
END_TEST

/* ---- hand-built graphs ---- */

static IrGraph *new_graph(void)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    ck_assert_ptr_nonnull(g);
    g->fold_on_build = false;
    return g;
}

static IrValue feed(IrGraph *g, const char *name, int64_t n)
{
    Status st = ST_INIT;
    ir_graph_set_origin(g, name, "Placeholder");
    IrType t = {TCRT_F32, ir_shape_make(1, &n)};
    IrValue v = ir_add_feed(g, name, &t, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    return v;
}

static IrValue op1(IrGraph *g, const char *name, Op op, IrValue a, const char *dev)
{
    Status st = ST_INIT;
    ir_graph_set_origin(g, name, "Op");
    IrValue v = ir_unary(g, op, a, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    v.node->device = dev;
    return v;
}

static IrValue op2(IrGraph *g, const char *name, Op op, IrValue a, IrValue b, const char *dev)
{
    Status st = ST_INIT;
    ir_graph_set_origin(g, name, "Op");
    IrValue v = ir_binary(g, op, a, b, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    v.node->device = dev;
    return v;
}

static IrValue matmul(IrGraph *g, const char *name, IrValue a, IrValue b)
{
    Status st = ST_INIT;
    ir_graph_set_origin(g, name, "MatMul");
    IrValue in[2] = {a, b};
    IrParams p;
    memset(&p, 0, sizeof p);
    IrValue v = ir_emit1(g, OP_MATMUL, in, 2, &p, NULL, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    return v;
}

static IrValue cmat(IrGraph *g, int64_t r, int64_t c)
{
    Status st = ST_INIT;
    int64_t dims[2] = {r, c};
    IrShape s = ir_shape_make(2, dims);
    float *z = calloc((size_t)(r * c), sizeof(float));
    IrValue v = ir_const(g, TCRT_F32, &s, z, &st);
    free(z);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    return v;
}

static void fetch(IrGraph *g, const char *name, IrValue v)
{
    Status st = ST_INIT;
    ck_assert(ir_add_fetch(g, name, v, &st));
}

typedef struct Run {
    Status st;
    PassPlaceReport rep;
    bool ok;
} Run;

/* Runs place (and partition) with o; the report goes into r. */
static void run_passes(IrGraph *g, PassPlaceOptions *o, bool partition, Run *r)
{
    memset(r, 0, sizeof *r);
    o->report = &r->rep;
    PassCtx cx;
    arena_init(&cx.scratch, NULL);
    cx.st = &r->st;
    cx.place = o;
    r->ok = pass_place(g, &cx) != PASS_FAILED;
    arena_reset(&cx.scratch);
    if (r->ok && partition) {
        arena_init(&cx.scratch, NULL);
        r->ok = pass_partition(g, &cx) != PASS_FAILED;
        arena_reset(&cx.scratch);
    }
    if (r->ok) {
        Status vst = ST_INIT;
        ck_assert_msg(ir_verify(g, &vst), "%s", vst.msg);
    }
}

static const PassPlaceEntry *entry(const Run *r, const IrNode *n)
{
    for (int i = 0; i < r->rep.n_entries; i++)
        if (r->rep.entries[i].node == n)
            return &r->rep.entries[i];
    ck_abort_msg("node %d not in the report", n->id);
    return NULL;
}

START_TEST(test_place_requests)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x", 4);
    IrValue a = op1(g, "a", OP_NEG, x, "/cpu:1");
    IrValue b = op1(g, "b", OP_EXP, a, "/device:CPU:1");
    IrValue c = op1(g, "c", OP_ABS, b, NULL);
    IrValue d = op1(g, "dense/d", OP_RELU, c, NULL);
    fetch(g, "d", d);
    PassDeviceMap map[] = {{"dense/*", "cpu:2"}, {"nomatch*", "gpu:7"}};
    PassPlaceOptions o = {.default_device = "/cpu:0", .map = map, .n_map = 2};
    Run r;
    run_passes(g, &o, false, &r);
    ck_assert_msg(r.ok, "%s", r.st.msg);
    ck_assert_str_eq(x.node->device, CPU0);
    ck_assert_str_eq(a.node->device, CPU1);
    ck_assert_str_eq(b.node->device, CPU1);
    ck_assert_str_eq(c.node->device, CPU0);
    ck_assert_str_eq(d.node->device, "/job:localhost/replica:0/task:0/device:CPU:2");
    ck_assert_int_eq(entry(&r, a.node)->why, PLACE_REQUESTED);
    ck_assert_str_eq(entry(&r, a.node)->detail, "'/cpu:1'");
    ck_assert_int_eq(entry(&r, c.node)->why, PLACE_DEFAULT);
    ck_assert_int_eq(entry(&r, d.node)->why, PLACE_MAPPED);
    ck_assert_str_eq(entry(&r, d.node)->detail, "--device-map 'dense/*'");
    ck_assert_int_eq(entry(&r, x.node)->why, PLACE_DEFAULT);
    /* the cluster: host CPU:0, the map's CPU:2 and GPU:7 (named by a flag), the requested CPU:1 */
    ck_assert_int_eq(r.rep.n_devices, 4);
    ck_assert_int_eq(r.rep.n_soft, 0);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_place_colocation)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x", 4);
    IrValue a = op1(g, "a", OP_NEG, x, "/cpu:1");
    IrValue b = op1(g, "b", OP_EXP, x, NULL);
    static const char *loc_a[] = {"a"};
    b.node->coloc = loc_a;
    b.node->n_coloc = 1;
    /* a variable on CPU:1 (requested by its assign) */
    Status st = ST_INIT;
    ir_graph_set_origin(g, "v", "VariableV2");
    IrValue init = ir_const_scalar_f(g, TCRT_F32, 0, &st);
    IrParams vp;
    memset(&vp, 0, sizeof vp);
    IrValue var = ir_emit1(g, OP_VARIABLE, &init, 1, &vp, NULL, &st);
    IrValue upd = op2(g, "v/add", OP_ADD, var, var, NULL);
    ir_graph_set_origin(g, "v/Assign", "Assign");
    IrValue as_in[2] = {var, upd};
    IrValue asg = ir_emit1(g, OP_ASSIGN, as_in, 2, &vp, NULL, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    asg.node->device = "/device:CPU:1";
    fetch(g, "a", a);
    fetch(g, "b", b);
    PassPlaceOptions o = {.default_device = "cpu:0"};
    Run r;
    run_passes(g, &o, false, &r);
    ck_assert_msg(r.ok, "%s", r.st.msg);
    ck_assert_str_eq(b.node->device, CPU1);
    ck_assert_int_eq(entry(&r, b.node)->why, PLACE_COLOCATED);
    ck_assert_str_eq(entry(&r, b.node)->detail, "colocated with 'a'");
    ck_assert_str_eq(var.node->device, CPU1);
    ck_assert_str_eq(entry(&r, var.node)->detail, "colocated with 'v/Assign'");
    ck_assert_str_eq(upd.node->device, CPU0); /* a reader: not colocated */
    ck_assert_ptr_null(init.node->device);    /* constants are not placed */
    ir_graph_free(g);
}
END_TEST

START_TEST(test_place_errors)
{
    /* colocated nodes requesting different devices */
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x", 4);
    op1(g, "a", OP_NEG, x, "/cpu:1");
    IrValue b = op1(g, "b", OP_EXP, x, "/cpu:0");
    static const char *loc_a[] = {"a"};
    b.node->coloc = loc_a;
    b.node->n_coloc = 1;
    fetch(g, "b", b);
    PassPlaceOptions o = {0};
    Run r;
    run_passes(g, &o, false, &r);
    ck_assert(!r.ok);
    ck_assert_str_eq(r.st.msg, "nodes 'a' (Op) and 'b' (Op) are colocated but request different devices: "
                               "incompatible ids: '" CPU1 "' and '" CPU0 "'");
    ir_graph_free(g);

    /* a device not in the cluster */
    g = new_graph();
    x = feed(g, "x", 4);
    fetch(g, "y", op1(g, "y", OP_NEG, x, "/device:GPU:0"));
    memset(&o, 0, sizeof o);
    run_passes(g, &o, false, &r);
    ck_assert(!r.ok);
    ck_assert_str_eq(r.st.msg, "node 'y' (Op) requests device '" GPU0 "', which is not in the cluster (" CPU0
                               "); add it with --devices, or move the node with --device-map 'y=cpu:0'");
    ir_graph_free(g);

    /* malformed requests and flags */
    g = new_graph();
    x = feed(g, "x", 4);
    fetch(g, "y", op1(g, "y", OP_NEG, x, "/device:GPU:zero"));
    run_passes(g, &o, false, &r);
    ck_assert(!r.ok);
    ck_assert_str_eq(r.st.msg, "node 'y' (Op): malformed device '/device:GPU:zero' (expected e.g. "
                               "/job:localhost/replica:0/task:0/device:CPU:0, /device:GPU:1, /cpu:0)");
    ir_graph_free(g);
    const char *flags[][2] = {
        {"gpu", "--default-device 'gpu': malformed device (expected e.g. cpu:0, gpu:1, /device:GPU:0, "
                "/job:localhost/replica:0/task:0/device:CPU:1)"},
        {"/job:ps", "--default-device '/job:ps': name a device type and index (e.g. gpu:0), not "
                    "'/job:ps/replica:0/task:0'"},
        {"tpu:0", "--default-device 'tpu:0': unknown device type 'tpu' in "
                  "'/job:localhost/replica:0/task:0/device:tpu:0' (CPU or GPU)"},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        g = new_graph();
        x = feed(g, "x", 4);
        fetch(g, "y", op1(g, "y", OP_NEG, x, NULL));
        PassPlaceOptions of = {.default_device = flags[i][0]};
        run_passes(g, &of, false, &r);
        ck_assert(!r.ok);
        ck_assert_str_eq(r.st.msg, flags[i][1]);
        ir_graph_free(g);
    }
    g = new_graph();
    x = feed(g, "x", 4);
    fetch(g, "y", op1(g, "y", OP_NEG, x, NULL));
    PassDeviceMap bad_map[] = {{"y", "/gpu:x"}};
    PassPlaceOptions om = {.map = bad_map, .n_map = 1};
    run_passes(g, &om, false, &r);
    ck_assert(!r.ok);
    ck_assert_str_eq(r.st.msg, "--device-map 'y=/gpu:x': malformed device '/gpu:x'");
    ir_graph_free(g);
}
END_TEST

START_TEST(test_place_soft)
{
    /* topk has no GPU kernel: with --default-device gpu:0 it falls back to CPU:0 */
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x", 8);
    IrValue a = op1(g, "a", OP_NEG, x, NULL);
    Status st = ST_INIT;
    ir_graph_set_origin(g, "top", "TopKV2");
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 2;
    IrNode *tk = ir_emit(g, OP_TOPK, &a, 1, &p, NULL, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    IrValue s = op1(g, "s", OP_EXP, (IrValue){tk, 0}, "/gpu:0");
    fetch(g, "s", s);
    PassPlaceOptions o = {.default_device = "gpu:0"};
    Run r;
    run_passes(g, &o, false, &r);
    ck_assert_msg(r.ok, "%s", r.st.msg);
    ck_assert_str_eq(x.node->device, GPU0); /* the default device: a feed read on the GPU */
    ck_assert_str_eq(a.node->device, GPU0);
    ck_assert_str_eq(tk->device, CPU0);
    ck_assert_str_eq(s.node->device, GPU0);
    ck_assert_int_eq(r.rep.n_soft, 1);
    ck_assert_int_eq(entry(&r, tk)->why, PLACE_SOFT);
    ck_assert_str_eq(entry(&r, tk)->detail, "no GPU kernel for op topk; wanted " GPU0);
    /* the GPU runs what the CUDA backend has (codegen/cuda): elementwise,
     * reductions, matmul, conv2d, copies; pools and movement ops do not
     * have kernels there yet */
    ck_assert(pass_place_supports(OP_MATMUL, "GPU") && pass_place_supports(OP_CONV2D, "GPU") &&
              pass_place_supports(OP_REDUCE_SUM, "GPU") && pass_place_supports(OP_ADD, "GPU") &&
              pass_place_supports(OP_COPY, "GPU"));
    ck_assert(!pass_place_supports(OP_TRANSPOSE, "GPU") && !pass_place_supports(OP_MAXPOOL, "GPU") &&
              pass_place_supports(OP_TRANSPOSE, "CPU"));
    ck_assert(!pass_place_supports(OP_NMS, "GPU") && !pass_place_supports(OP_RANDOM_UNIFORM, "GPU") &&
              !pass_place_supports(OP_WHILE, "GPU") && pass_place_supports(OP_NMS, "CPU"));

    /* partition for codegen: no CUDA runtime in this build */
    PassCtx cx;
    arena_init(&cx.scratch, NULL);
    Status pst = ST_INIT;
    cx.st = &pst;
    o.for_codegen = true;
    cx.place = &o;
    ck_assert_int_eq(pass_partition(g, &cx), PASS_FAILED);
    arena_reset(&cx.scratch);
    ck_assert_str_eq(pst.msg,
                     "node 'x' (Placeholder) is placed on " GPU0
                     " but this tfcc has no CUDA runtime yet (--emit cuda writes the GPU code only); use "
                     "--default-device cpu:0 or --device-map");
    ir_graph_free(g);
}
END_TEST

START_TEST(test_cost_model)
{
    /* Costs (place.c): CPU 50e9 FLOP/s, 20e9 B/s, 1e-6 s per kernel; GPU
     * 10e12 FLOP/s, 500e9 B/s, 10e-6 s; CPU<->GPU 10e-6 s + bytes / 10e9.
     * matmul 512x512x512: 2*512^3 = 268435456 FLOPs, 3 MiB = 3145728 bytes.
     *   CPU: max(5.36870912e-3, 1.572864e-4) + 1e-6 = 5.36970912e-3 s
     *   GPU: max(2.68435456e-5, 6.291456e-6) + 1e-5 = 3.68435456e-5 s */
    IrGraph *g = new_graph();
    int64_t dims[2] = {512, 512};
    Status st = ST_INIT;
    ir_graph_set_origin(g, "x", "Placeholder");
    IrType t = {TCRT_F32, ir_shape_make(2, dims)};
    IrValue x = ir_add_feed(g, "x", &t, &st);
    IrValue mm = matmul(g, "mm", x, cmat(g, 512, 512));
    ck_assert(fabs(pass_place_node_seconds(mm.node, "CPU") - 5.36970912e-3) < 1e-12);
    ck_assert(fabs(pass_place_node_seconds(mm.node, "GPU") - 3.68435456e-5) < 1e-12);
    ck_assert(fabs(pass_place_transfer_seconds(1048576, CPU0, GPU0) - (10e-6 + 1048576 / 10e9)) < 1e-15);
    ck_assert(fabs(pass_place_transfer_seconds(1000, CPU0, CPU1) - (1e-6 + 1000 / 10e9)) < 1e-15);
    ck_assert(fabs(pass_place_transfer_seconds(1000, CPU0, "/job:ps/replica:0/task:1/device:CPU:0") -
                   (100e-6 + 1000 / 1e9)) < 1e-15);
    ck_assert(pass_place_transfer_seconds(1000, CPU0, CPU0) == 0);
    /* x (1 MiB) is fed on the host CPU:0 (time 0).  mm: on CPU it finishes at
     * 5.3697e-3; on the GPU after x's transfer 10e-6 + 1048576/10e9 =
     * 1.148576e-4, at 1.148576e-4 + 3.68435456e-5 = 1.517011e-4: GPU. */
    IrValue r = op1(g, "r", OP_RELU, mm, NULL);
    /* r on the GPU: 262144 FLOPs, 2 MiB: max(2.62e-8, 4.194304e-6) + 1e-5 =
     * 1.4194304e-5 after mm; on the CPU it waits for the transfer back
     * (1.148576e-4) and takes max(5.24288e-6, 1.048576e-4) + 1e-6: GPU. */
    int64_t two = 2;
    ir_graph_set_origin(g, "small", "Placeholder");
    IrType ts = {TCRT_F32, ir_shape_make(1, &two)};
    IrValue small = ir_add_feed(g, "small", &ts, &st);
    IrValue s = op2(g, "s", OP_ADD, small, small, NULL);
    /* s reads 8 bytes on the host: CPU finishes at 1e-6 + 24/20e9, the GPU
     * no earlier than 10e-6 (transfer) + 10e-6: CPU. */
    fetch(g, "r", r);
    fetch(g, "s", s);
    PassPlaceOptions o = {.devices = (const char *const[]){"gpu:0"}, .n_devices = 1};
    Run run;
    run_passes(g, &o, true, &run);
    ck_assert_msg(run.ok, "%s", run.st.msg);
    ck_assert_str_eq(x.node->device, CPU0);
    ck_assert_int_eq(entry(&run, x.node)->why, PLACE_HOST);
    ck_assert_str_eq(mm.node->device, GPU0);
    ck_assert_int_eq(entry(&run, mm.node)->why, PLACE_COST);
    ck_assert_str_eq(r.node->device, GPU0);
    ck_assert_str_eq(s.node->device, CPU0);
    /* the simulated makespan: r's finish, 1.517011e-4 + 1.4194304e-5 */
    ck_assert(fabs(run.rep.est_seconds - (1.148576e-4 + 3.68435456e-5 + 1.4194304e-5)) < 1e-12);
    /* partition: x to the GPU, r back to the host for the fetch */
    ck_assert_int_eq(run.rep.n_pairs, 2);
    ck_assert_str_eq(run.rep.keys[0], CPU0 ";" GPU0 ";edge_0_x:0");
    ir_graph_free(g);
}
END_TEST

/* Counts SEND/RECV nodes and checks the partition invariants. */
static void check_partition(const IrGraph *g, int want_pairs)
{
    int n_send = 0, n_recv = 0;
    IR_FOR_EACH(g, n) {
        if (n->op == OP_SEND)
            n_send++;
        if (n->op == OP_RECV) {
            n_recv++;
            const IrNode *s = n->inputs[0].node;
            ck_assert_int_eq(s->op, OP_SEND);
            ck_assert_str_eq(s->key, n->key);
            ck_assert_str_ne(s->device, n->device);
        }
        for (int k = 0; k < n->n_inputs; k++) {
            const IrNode *p = n->inputs[k].node;
            if (p->op == OP_CONST || p->op == OP_ARG || !strcmp(p->device, n->device))
                continue; /* weights and feeds (host memory) are read by every CPU */
            ck_assert_msg(p->op == OP_SEND && n->op == OP_RECV, "edge %%%d -> %%%d crosses devices", p->id,
                          n->id);
        }
    }
    ck_assert_int_eq(n_send, want_pairs);
    ck_assert_int_eq(n_recv, want_pairs);
    /* keys unique; one RECV per (tensor, destination device) */
    IR_FOR_EACH(g, a) {
        IR_FOR_EACH(g, b) {
            if (a == b || a->op != OP_RECV || b->op != OP_RECV)
                continue;
            ck_assert_str_ne(a->key, b->key);
            const IrNode *ta = a->inputs[0].node->inputs[0].node, *tb = b->inputs[0].node->inputs[0].node;
            ck_assert(!(ta == tb && !strcmp(a->device, b->device)));
        }
    }
}

START_TEST(test_partition_structure)
{
    /* x (host) -> a = neg(x) on CPU:1 -> b = add(a, x), c = mul(a, a) on
     * CPU:0; fetch a, b, c.  One pair: a -> CPU:0 shared by b, c and the
     * fetch of a (one RECV per tensor per device); CPU:1 reads the feed x
     * in host memory, without a pair. */
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x", 4);
    IrValue a = op1(g, "a", OP_NEG, x, "/cpu:1");
    IrValue b = op2(g, "b", OP_ADD, a, x, NULL);
    IrValue c = op2(g, "c", OP_MUL, a, a, NULL);
    fetch(g, "a", a);
    fetch(g, "b", b);
    fetch(g, "c", c);
    PassPlaceOptions o = {.default_device = "cpu:0", .for_codegen = true};
    Run r;
    run_passes(g, &o, true, &r);
    ck_assert_msg(r.ok, "%s", r.st.msg);
    check_partition(g, 1);
    ck_assert_int_eq(r.rep.n_pairs, 1);
    ck_assert_str_eq(r.rep.keys[0], CPU1 ";" CPU0 ";edge_1_a:0");
    ck_assert_ptr_eq(a.node->inputs[0].node, x.node);
    ck_assert_int_eq(g->fetches[0].value.node->op, OP_RECV); /* a arrives on the host */
    ck_assert_ptr_eq(b.node->inputs[0].node, g->fetches[0].value.node);
    ck_assert_ptr_eq(c.node->inputs[0].node, g->fetches[0].value.node);
    ck_assert_ptr_eq(c.node->inputs[1].node, g->fetches[0].value.node);
    /* order: x, a, send, recv (before b, its first consumer), b, c */
    const Op want[] = {OP_ARG, OP_NEG, OP_SEND, OP_RECV, OP_ADD, OP_MUL};
    ck_assert_int_eq(ir_graph_live_count(g), 6);
    int i = 0;
    IR_FOR_EACH(g, n) {
        ck_assert_msg(n->op == want[i], "position %d: %s", i, ir_op_name(n->op));
        i++;
    }
    ir_graph_free(g);
}
END_TEST

START_TEST(test_partition_alap_memory)
{
    /* x f32[1000] (4000 bytes) on the host; a = neg(x) on CPU:1; on CPU:0
     * b = exp(x), c = exp(b), d = exp(c), e = add(d, a); fetch e.
     * a reads the feed x in host memory (no pair).
     * ALAP order: x a sa b c d ra e (positions 0..7).
     *   CPU:0: x, e pinned; b [3,4], c [4,5], d [5,7], ra [6,7]: peak 4 buffers.
     *   CPU:1: a [1,6] (held until ra): peak 1.  Total 5 x 4000.
     * ASAP order: x a sa ra b c d e: on CPU:0 ra [3,7] overlaps b, c
     *   and c, d: peak 5; CPU:1 still 1.  Total 6 x 4000. */
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x", 1000);
    IrValue a = op1(g, "a", OP_NEG, x, "/cpu:1");
    IrValue b = op1(g, "b", OP_EXP, x, NULL);
    IrValue c = op1(g, "c", OP_EXP, b, NULL);
    IrValue d = op1(g, "d", OP_EXP, c, NULL);
    IrValue e = op2(g, "e", OP_ADD, d, a, NULL);
    fetch(g, "e", e);
    PassPlaceOptions o = {.default_device = "cpu:0"};
    Run r;
    run_passes(g, &o, true, &r);
    ck_assert_msg(r.ok, "%s", r.st.msg);
    check_partition(g, 1);
    const Op want[] = {OP_ARG, OP_NEG, OP_SEND, OP_EXP, OP_EXP, OP_EXP, OP_RECV, OP_ADD};
    int i = 0;
    IR_FOR_EACH(g, n) {
        ck_assert_msg(n->op == want[i], "position %d: %s", i, ir_op_name(n->op));
        i++;
    }
    ck_assert_int_eq(r.rep.peak_alap, 5 * 4000);
    ck_assert_int_eq(r.rep.peak_asap, 6 * 4000);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_partition_dump_and_remote)
{
    /* the partitioned graph prints, parses back to the same text (keys
     * included) and colours its DOT nodes by device */
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x", 4);
    IrValue a = op1(g, "a", OP_NEG, x, "/cpu:1");
    fetch(g, "b", op2(g, "b", OP_ADD, a, x, NULL));
    PassPlaceOptions o = {.default_device = "cpu:0", .for_codegen = true};
    Run r;
    run_passes(g, &o, true, &r);
    ck_assert_msg(r.ok, "%s", r.st.msg);
    char *t1 = NULL, *t2 = NULL, *dot = NULL;
    size_t n1, n2, nd;
    FILE *f = open_memstream(&t1, &n1);
    ir_print(g, f, true);
    fclose(f);
    HAS(t1, "key=\"" CPU1 ";" CPU0 ";edge_1_a:0\"");
    Status st = ST_INIT;
    IrGraph *back = ir_parse(t1, "partitioned.ir", &st);
    ck_assert_msg(back, "%s", st.msg);
    f = open_memstream(&t2, &n2);
    ir_print(back, f, true);
    fclose(f);
    ck_assert_str_eq(t1, t2);
    f = open_memstream(&dot, &nd);
    ir_print_dot(g, f);
    fclose(f);
    HAS(dot, "fillcolor=lightblue, tooltip=\"" CPU0 "\"");
    HAS(dot, "fillcolor=lightsalmon, tooltip=\"" CPU1 "\"");
    free(t1);
    free(t2);
    free(dot);
    ir_graph_free(back);
    ir_graph_free(g);

    /* another task: info may place there, compiling may not */
    g = new_graph();
    x = feed(g, "x", 4);
    IrValue v = op1(g, "v", OP_NEG, x, "/job:ps/task:0");
    fetch(g, "v", v);
    PassPlaceOptions oi = {.devices = (const char *const[]){"/job:ps/task:0/cpu:0"}, .n_devices = 1};
    run_passes(g, &oi, true, &r);
    ck_assert_msg(r.ok, "%s", r.st.msg);
    ck_assert_str_eq(v.node->device, "/job:ps/replica:0/task:0/device:CPU:0");
    ck_assert_int_eq(r.rep.n_pairs, 1); /* v to the host; ps:0's CPU reads the feed x itself */
    /* the neg's time only: ps:0's CPU reads the feed x without a transfer */
    ck_assert(fabs(r.rep.est_seconds - (1e-6 + 32 / 20e9)) < 1e-12);
    ir_graph_free(g);
    g = new_graph();
    x = feed(g, "x", 4);
    fetch(g, "v", op1(g, "v", OP_NEG, x, "/job:ps/task:0"));
    run_passes(g, &oi, false, &r);
    ck_assert_msg(r.ok, "%s", r.st.msg);
    PassCtx cx;
    arena_init(&cx.scratch, NULL);
    Status pst = ST_INIT;
    cx.st = &pst;
    oi.for_codegen = true;
    cx.place = &oi;
    ck_assert_int_eq(pass_partition(g, &cx), PASS_FAILED);
    arena_reset(&cx.scratch);
    ck_assert_str_eq(pst.msg,
                     "node 'v' (Op) is placed on /job:ps/replica:0/task:0/device:CPU:0, another task: "
                     "this tfcc compiles one process (/job:localhost/replica:0/task:0) and has no "
                     "distributed runtime; use --default-device cpu:0 or --device-map");
    ir_graph_free(g);
}
END_TEST

static bool file_nonempty(const char *dir, const char *name)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f)
        return false;
    bool any = fgetc(f) != EOF;
    fclose(f);
    return any;
}

START_TEST(test_pipeline_placement)
{
    /* with PipelineOptions.place, place and partition run after dce
     * (dumps 05 and 06) and memplan plans the SEND/RECV buffers; without it
     * the graph keeps no SEND/RECV and dump numbers are unchanged */
    char dir[] = "/tmp/tfcc-place-dump-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    for (int with = 0; with < 2; with++) {
        IrGraph *g = new_graph();
        IrValue x = feed(g, "x", 4);
        IrValue a = op1(g, "a", OP_NEG, x, "/cpu:1");
        fetch(g, "b", op2(g, "b", OP_ADD, a, x, NULL));
        PassPlaceReport rep;
        memset(&rep, 0, sizeof rep);
        PassPlaceOptions o = {.for_codegen = true, .report = &rep};
        PipelineOptions po = {.dump_after = "all", .dump_dir = dir, .place = with ? &o : NULL};
        Status st = ST_INIT;
        ck_assert_msg(pass_run_pipeline(g, &po, &st), "%s", st.msg);
        int n_comm = 0;
        IR_FOR_EACH(g, n) {
            n_comm += n->op == OP_SEND || n->op == OP_RECV;
            ck_assert(n->op == OP_CONST || n->out[0].offset != -1); /* planned (or fused) */
        }
        /* one pair, a -> b: x is a feed, in host memory, which CPU:1 reads without a transfer */
        ck_assert_int_eq(n_comm, with ? 2 : 0);
        ck_assert_int_eq(rep.n_pairs, with ? 1 : 0);
        ck_assert(file_nonempty(dir, with ? "06-partition.ir" : "05-layout.ir"));
        ck_assert(file_nonempty(dir, with ? "13-memplan.ir" : "11-memplan.ir"));
        ir_graph_free(g);
    }
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- end to end through the driver ---- */

static void data(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", data_dir, name);
}

static void read_f32(const char *dir, const char *file, float *v, int n)
{
    char p[1200], msg[256];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    tcrt_tensor t;
    ck_assert_msg(tcrt_npy_read(p, &t, msg, sizeof msg) == TCRT_OK, "%s", msg);
    ck_assert_int_eq(t.dtype, TCRT_F32);
    ck_assert_int_eq((int)(t.rank == 2 ? t.dims[0] * t.dims[1] : -1), n);
    memcpy(v, t.data, sizeof(float) * (size_t)n);
    free(t.data);
}

START_TEST(test_e2e_cpu_split)
{
    /* split.pbtxt: x [[1,2,3],[4,5,6]] on /cpu:0; mm = x.w on CPU:1 with
     * w = [[1,0],[0,1],[1,1]] -> [[4,5],[10,11]]; d = mm - 7 (colocated
     * with mm) -> [[-3,-2],[3,4]]; r = relu(d) on /device:CPU:1 ->
     * [[0,0],[3,4]]; y = r + mm on /cpu:0 -> [[4,5],[13,15]]. */
    char tmp[] = "/tmp/tfcc-place-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    char model[1024], in[1100], feed_arg[1200], out1[1100], out2[1100];
    data(model, sizeof model, "split.pbtxt");
    snprintf(in, sizeof in, "%s/x.npy", tmp);
    snprintf(out1, sizeof out1, "%s/split", tmp);
    snprintf(out2, sizeof out2, "%s/plain", tmp);
    float xv[6] = {1, 2, 3, 4, 5, 6};
    tcrt_tensor x = {xv, TCRT_F32, 2, {2, 3}};
    char msg[256];
    ck_assert_int_eq(tcrt_npy_write(in, &x, msg, sizeof msg), TCRT_OK);
    snprintf(feed_arg, sizeof feed_arg, "x:0=%s", in);

    Result r = tfcc("info", model, "--placement", "--feed", "x:0", "--fetch", "y:0,r:0", NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    HAS(r.out, "devices (2):\n  [0] " CPU0 "\n  [1] " CPU1 "\n");
    HAS(r.out, "  mm (MatMul) %");
    HAS(r.out, " matmul -> [1] requested: '/job:localhost/replica:0/task:0/device:CPU:1'\n");
    HAS(r.out, "  d (Sub) %");
    HAS(r.out, " sub -> [1] colocated: colocated with 'mm'\n");
    HAS(r.out, " add -> [0] requested: '/cpu:0'\n");
    HAS(r.out, "partition: 2 send/recv pairs\n"); /* mm and r to CPU:0; CPU:1 reads the feed x itself */
    HAS(r.out, "  " CPU1 ";" CPU0 ";edge_2_mm:0\n");
    HAS(r.out, "peak live bytes: ");
    result_free(&r);

    r = tfcc("run", model, "--placement", "--feed", feed_arg, "--fetch", "y:0,r:0", "--out-dir", out1, NULL);
    ck_assert_msg(r.rc == 0, "%s\n%s", r.out, r.err);
    result_free(&r);
    r = tfcc("run", model, "--feed", feed_arg, "--fetch", "y:0,r:0", "--out-dir", out2, NULL);
    ck_assert_msg(r.rc == 0, "%s\n%s", r.out, r.err);
    result_free(&r);
    const float want_y[4] = {4, 5, 13, 15}, want_r[4] = {0, 0, 3, 4};
    float y1[4], y2[4], r1[4], r2[4];
    read_f32(out1, "y_0.npy", y1, 4);
    read_f32(out2, "y_0.npy", y2, 4);
    read_f32(out1, "r_0.npy", r1, 4);
    read_f32(out2, "r_0.npy", r2, 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_float_eq(y1[i], want_y[i]);
        ck_assert_float_eq(y2[i], want_y[i]);
        ck_assert_float_eq(r1[i], want_r[i]);
        ck_assert_float_eq(r2[i], want_r[i]);
    }

    /* a GPU placement stops compile; info still reports it */
    r = tfcc("compile", model, "--device-map", "y=gpu:0", "--feed", "x:0", "--fetch", "y:0", "-o", out1,
             NULL);
    ck_assert_int_eq(r.rc, 1);
    ck_assert_str_eq(r.err,
                     "error: node 'y' (AddV2) is placed on " GPU0
                     " but this tfcc has no CUDA runtime yet (--emit cuda writes the GPU code only); use "
                     "--default-device cpu:0 or --device-map\n");
    result_free(&r);
    r = tfcc("info", model, "--device-map", "y=gpu:0", "--feed", "x:0", "--fetch", "y:0", NULL);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    HAS(r.out, "  y (AddV2) %");
    HAS(r.out, " add -> [1] mapped: --device-map 'y'\n");
    result_free(&r);
    r = tfcc("info", model, "--device-map", "y", "--fetch", "y:0", NULL);
    ck_assert_int_eq(r.rc, 2);
    ck_assert_str_eq(r.err, "error: --device-map 'y': expected PATTERN=DEVICE\n");
    result_free(&r);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("place");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_dev_parse);
    tcase_add_test(tc, test_dev_merge_match);
    tcase_add_test(tc, test_place_requests);
    tcase_add_test(tc, test_place_colocation);
    tcase_add_test(tc, test_place_errors);
    tcase_add_test(tc, test_place_soft);
    tcase_add_test(tc, test_cost_model);
    tcase_add_test(tc, test_partition_structure);
    tcase_add_test(tc, test_partition_alap_memory);
    tcase_add_test(tc, test_partition_dump_and_remote);
    tcase_add_test(tc, test_pipeline_placement);
    tcase_add_test(tc, test_e2e_cpu_split);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    data_dir = argc > 1 ? argv[1] : "tests/passes/data";
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
