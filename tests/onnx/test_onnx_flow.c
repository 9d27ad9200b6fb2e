/* tests/onnx/test_onnx_flow.c - ONNX If, Loop, Scan and LSTM (compiler/onnx/
 * onnx_ops_flow.c, onnx_ops_ctl.c) on hand-built ModelProtos.  Models with
 * run-time inputs are written to a temporary folder, compiled with the
 * driver (tfcc compile), run, and their .npy outputs compared with values
 * derived by hand in the comments; constant models are imported and their
 * folded fetch read directly.  Bad subgraphs must give errors naming the
 * file, the node and the attribute. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compiler/driver.h"
#include "compiler/frontend/frontend.h"
#include "compiler/onnx/onnx.h"
#include "runtime/include/tcrt.h"

/* ---- builder: everything from static pools, reset per test ---- */

#define POOL 64
static Onnx__NodeProto nodes[POOL];
static Onnx__AttributeProto attrs[POOL];
static Onnx__GraphProto graphs[8];
static Onnx__TensorProto tens[POOL];
static Onnx__ValueInfoProto vis[POOL];
static Onnx__TypeProto types[POOL];
static Onnx__TypeProto__Tensor ttypes[POOL];
static Onnx__TensorShapeProto shapes[POOL];
static Onnx__TensorShapeProto__Dimension dims[POOL], *pdims[POOL];
static void *ptrs[4 * POOL];
static int n_nodes, n_attrs, n_graphs, n_tens, n_vis, n_dims, n_ptrs;

static void reset(void)
{
    n_nodes = n_attrs = n_graphs = n_tens = n_vis = n_dims = n_ptrs = 0;
}

static void **plist(int n)
{
    void **p = &ptrs[n_ptrs];
    n_ptrs += n;
    return p;
}

/* A ValueInfo of elem type et and shape d[rank] (rank -1: no shape). */
static Onnx__ValueInfoProto *vi(const char *name, int et, int rank, const int64_t *d)
{
    Onnx__ValueInfoProto *v = &vis[n_vis];
    Onnx__TypeProto *t = &types[n_vis];
    Onnx__TypeProto__Tensor *tt = &ttypes[n_vis];
    Onnx__TensorShapeProto *s = &shapes[n_vis++];
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(t);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(s);
    v->name = (char *)name;
    v->type = t;
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = et;
    if (rank >= 0) {
        tt->shape = s;
        s->dim = &pdims[n_dims];
        s->n_dim = (size_t)rank;
        for (int i = 0; i < rank; i++) {
            onnx__tensor_shape_proto__dimension__init(&dims[n_dims]);
            dims[n_dims].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dims[n_dims].dim_value = d[i];
            pdims[n_dims] = &dims[n_dims];
            n_dims++;
        }
    }
    return v;
}

static Onnx__TensorProto *tensor_f(const char *name, int rank, int64_t *d, float *v, size_t n)
{
    Onnx__TensorProto *t = &tens[n_tens++];
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->dims = d;
    t->n_dims = (size_t)rank;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->float_data = v;
    t->n_float_data = n;
    return t;
}

static Onnx__TensorProto *tensor_i64(const char *name, int rank, int64_t *d, int64_t *v, size_t n)
{
    Onnx__TensorProto *t = &tens[n_tens++];
    onnx__tensor_proto__init(t);
    t->name = (char *)name;
    t->dims = d;
    t->n_dims = (size_t)rank;
    t->has_data_type = 1;
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->int64_data = v;
    t->n_int64_data = n;
    return t;
}

static Onnx__AttributeProto *attr_graph(const char *name, Onnx__GraphProto *g)
{
    Onnx__AttributeProto *a = &attrs[n_attrs++];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    a->g = g;
    return a;
}

static Onnx__AttributeProto *attr_int(const char *name, int64_t v)
{
    Onnx__AttributeProto *a = &attrs[n_attrs++];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = v;
    return a;
}

/* in/out: NULL-terminated name lists; attributes NULL-terminated too. */
static Onnx__NodeProto *nd(const char *op, char **in, char **out, Onnx__AttributeProto *a0,
                           Onnx__AttributeProto *a1)
{
    Onnx__NodeProto *n = &nodes[n_nodes++];
    onnx__node_proto__init(n);
    n->op_type = (char *)op;
    n->name = (char *)op;
    n->input = in;
    while (in[n->n_input])
        n->n_input++;
    n->output = out;
    while (out[n->n_output])
        n->n_output++;
    Onnx__AttributeProto **pa = (Onnx__AttributeProto **)plist(2);
    if (a0)
        pa[n->n_attribute++] = a0;
    if (a1)
        pa[n->n_attribute++] = a1;
    n->attribute = pa;
    return n;
}

static Onnx__GraphProto *graph(const char *name, Onnx__NodeProto **ns, int nn, Onnx__ValueInfoProto **in, int ni,
                               Onnx__ValueInfoProto **out, int no, Onnx__TensorProto **init, int nt)
{
    Onnx__GraphProto *g = &graphs[n_graphs++];
    onnx__graph_proto__init(g);
    g->name = (char *)name;
    g->node = ns;
    g->n_node = (size_t)nn;
    g->input = in;
    g->n_input = (size_t)ni;
    g->output = out;
    g->n_output = (size_t)no;
    g->initializer = init;
    g->n_initializer = (size_t)nt;
    return g;
}

static char tmpdir[] = "/tmp/tfcc-onnx-flow-XXXXXX";

/* Writes model (opset 13) to DIR/name.onnx; returns the path (static). */
static const char *write_model(Onnx__GraphProto *g, const char *name)
{
    static char path[600];
    Onnx__ModelProto m;
    Onnx__OperatorSetIdProto os, *pos[1] = {&os};
    onnx__model_proto__init(&m);
    onnx__operator_set_id_proto__init(&os);
    os.has_version = 1;
    os.version = 13;
    m.has_ir_version = 1;
    m.ir_version = 7;
    m.opset_import = pos;
    m.n_opset_import = 1;
    m.graph = g;
    size_t len = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(len);
    onnx__model_proto__pack(&m, buf);
    snprintf(path, sizeof path, "%s/%s.onnx", tmpdir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
    fclose(f);
    free(buf);
    return path;
}

/* tfcc compile MODEL [extra args] -o EXE; returns drv_main's status, the
 * error text in err. */
static int compile(const char *model, const char *exe, char **extra, int n_extra, char *err, size_t n_err)
{
    char *argv[32];
    int k = 0;
    argv[k++] = "tfcc";
    argv[k++] = "compile";
    argv[k++] = (char *)model;
    for (int i = 0; i < n_extra; i++)
        argv[k++] = extra[i];
    argv[k++] = "-o";
    argv[k++] = (char *)exe;
    argv[k] = NULL;
    FILE *out = fopen("/dev/null", "w"), *ef = tmpfile();
    int r = drv_main(k, argv, out, ef);
    rewind(ef);
    size_t got = fread(err, 1, n_err - 1, ef);
    err[got] = 0;
    fclose(out);
    fclose(ef);
    return r;
}

/* Runs exe with feeds "NAME=FILE.npy" and reads output `name` (float). */
static void run(const char *exe, char **feeds, int n_feeds, const char *name, tcrt_tensor *got)
{
    char *argv[32], outdir[700];
    int k = 0;
    snprintf(outdir, sizeof outdir, "%s/out", tmpdir);
    argv[k++] = (char *)exe;
    for (int i = 0; i < n_feeds; i++) {
        argv[k++] = "--feed";
        argv[k++] = feeds[i];
    }
    argv[k++] = "--out-dir";
    argv[k++] = outdir;
    argv[k] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed", exe);
    char fname[300], path[1100], err[256];
    tcrt_output_filename(name, fname, sizeof fname);
    snprintf(path, sizeof path, "%s/%s", outdir, fname);
    ck_assert_msg(tcrt_npy_read(path, got, err, sizeof err) == TCRT_OK, "%s", err);
}

static char *npy(const char *name, tcrt_dtype dt, int rank, const int64_t *d, void *data)
{
    static char buf[8][700];
    static int next;
    char *arg = buf[next++ % 8], path[600], err[256];
    tcrt_tensor t = {data, dt, rank, {0}};
    for (int i = 0; i < rank; i++)
        t.dims[i] = d[i];
    snprintf(path, sizeof path, "%s/%s.%d.npy", tmpdir, name, next);
    ck_assert(tcrt_npy_write(path, &t, err, sizeof err) == TCRT_OK);
    snprintf(arg, 700, "%s=%s", name, path);
    return arg;
}

/* ---- Loop ---- */

static char *b_in_mul[] = {"fi", "x", NULL}, *b_out_mul[] = {"u", NULL};
static char *b_in_cast[] = {"i", NULL}, *b_out_cast[] = {"i1", NULL};
static char *b_in_inc[] = {"i1", "one", NULL}, *b_out_inc[] = {"fi", NULL};
static char *b_in_acc[] = {"s", "u", NULL}, *b_out_acc[] = {"s2", NULL};
static char *b_in_id[] = {"c", NULL}, *b_out_id[] = {"c2", NULL};
static int64_t d1[] = {1}, d0[] = {0};
static float one_v[] = {1}, zero_v[] = {0};

/* Loop body (i, c, s) -> (c, s + (i+1)*x, scan: (i+1)*x); x is an outer
 * graph input (a run-time capture), "one" an outer initializer (a constant
 * capture).  with_scan adds the scan output; M is a graph input when
 * m_const < 0, else an initializer. */
static Onnx__GraphProto *loop_model(int64_t *m_const, bool with_scan, bool bad_arity)
{
    reset();
    Onnx__NodeProto **bn = (Onnx__NodeProto **)plist(5);
    Onnx__AttributeProto *to = attr_int("to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
    bn[0] = nd("Cast", b_in_cast, b_out_cast, to, NULL);
    bn[1] = nd("Add", b_in_inc, b_out_inc, NULL, NULL);
    bn[2] = nd("Mul", b_in_mul, b_out_mul, NULL, NULL);
    bn[3] = nd("Add", b_in_acc, b_out_acc, NULL, NULL);
    bn[4] = nd("Identity", b_in_id, b_out_id, NULL, NULL);
    Onnx__ValueInfoProto **bi = (Onnx__ValueInfoProto **)plist(3), **bo = (Onnx__ValueInfoProto **)plist(3);
    bi[0] = vi("i", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL);
    bi[1] = vi("c", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
    bi[2] = vi("s", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL);
    bo[0] = vi("c2", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
    bo[1] = vi("s2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL);
    bo[2] = vi("u", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL);
    Onnx__GraphProto *body = graph("body", bn, 5, bi, bad_arity ? 2 : 3, bo, with_scan ? 3 : 2, NULL, 0);
    static char *l_in[] = {"M", "", "s0", NULL}, *l_out2[] = {"s_final", "scan", NULL}, *l_out1[] = {"s_final", NULL};
    Onnx__NodeProto **mn = (Onnx__NodeProto **)plist(1);
    mn[0] = nd("Loop", l_in, with_scan ? l_out2 : l_out1, attr_graph("body", body), NULL);
    Onnx__TensorProto **init = (Onnx__TensorProto **)plist(3);
    int nt = 0;
    init[nt++] = tensor_f("one", 0, d0, one_v, 1);
    init[nt++] = tensor_f("s0", 1, d1, zero_v, 1);
    if (m_const)
        init[nt++] = tensor_i64("M", 0, d0, m_const, 1);
    Onnx__ValueInfoProto **gi = (Onnx__ValueInfoProto **)plist(2), **go = (Onnx__ValueInfoProto **)plist(2);
    int ni = 0;
    gi[ni++] = vi("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1);
    if (!m_const)
        gi[ni++] = vi("M", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL);
    go[0] = vi("s_final", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1);
    go[1] = vi("scan", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL);
    return graph("main", mn, 1, gi, ni, go, with_scan ? 2 : 1, init, nt);
}

/* M fed at run time: a while region.  sum_{i=0}^{M-1} (i+1)*x:
 * M=4, x=1: 1+2+3+4 = 10;  M=4, x=2: 20;  M=0: 0 (s0). */
START_TEST(test_loop_runtime_trip_count)
{
    const char *model = write_model(loop_model(NULL, false, false), "loop_rt");
    char exe[700], err[2000];
    snprintf(exe, sizeof exe, "%s/loop_rt", tmpdir);
    ck_assert_msg(compile(model, exe, NULL, 0, err, sizeof err) == 0, "%s", err);
    struct {
        int64_t m;
        float x, want;
    } cases[] = {{4, 1, 10}, {4, 2, 20}, {0, 3, 0}, {1, 5, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *feeds[2] = {npy("x", TCRT_F32, 1, d1, &cases[i].x), npy("M", TCRT_I64, 0, NULL, &cases[i].m)};
        tcrt_tensor got = {0};
        run(exe, feeds, 2, "s_final", &got);
        ck_assert_int_eq(got.dtype, TCRT_F32);
        ck_assert_float_eq_tol(((float *)got.data)[0], cases[i].want, 1e-6f);
        free(got.data);
    }
}
END_TEST

/* Constant M with a scan output: M=4 is unrolled, M=20 a while region with
 * a [20,1] buffer.  x=2: scan row i = 2(i+1); s = 2 * M(M+1)/2. */
START_TEST(test_loop_scan_output)
{
    int64_t ms[2] = {4, 20};
    for (int k = 0; k < 2; k++) {
        char name[32], exe[700], err[2000];
        snprintf(name, sizeof name, "loop_scan%d", k);
        const char *model = write_model(loop_model(&ms[k], true, false), name);
        snprintf(exe, sizeof exe, "%s/%s", tmpdir, name);
        ck_assert_msg(compile(model, exe, NULL, 0, err, sizeof err) == 0, "%s", err);
        float x = 2;
        char *feeds[1] = {npy("x", TCRT_F32, 1, d1, &x)};
        tcrt_tensor s = {0}, sc = {0};
        run(exe, feeds, 1, "s_final", &s);
        run(exe, feeds, 1, "scan", &sc);
        ck_assert_float_eq_tol(((float *)s.data)[0], (float)(ms[k] * (ms[k] + 1)), 1e-4f);
        ck_assert_int_eq(sc.rank, 2);
        ck_assert_int_eq(sc.dims[0], ms[k]);
        ck_assert_int_eq(sc.dims[1], 1);
        for (int64_t i = 0; i < ms[k]; i++)
            ck_assert_float_eq_tol(((float *)sc.data)[i], 2.0f * (float)(i + 1), 1e-6f);
        free(s.data);
        free(sc.data);
    }
}
END_TEST

START_TEST(test_loop_bad_body_arity)
{
    const char *model = write_model(loop_model(NULL, false, true), "loop_bad");
    char exe[700], err[2000];
    snprintf(exe, sizeof exe, "%s/loop_bad", tmpdir);
    ck_assert_int_ne(compile(model, exe, NULL, 0, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "loop_bad.onnx: node 'Loop' (Loop): attribute 'body': the graph has 2 inputs"), "%s",
                  err);
}
END_TEST

/* ---- If ---- */

static char *t_in[] = {"x", "one", NULL}, *t_out[] = {"t", NULL}, *e_out[] = {"e", NULL};

/* If(cond) then x + one else x - one; cond a graph input (bool) or, with
 * cond_const, an initializer; without the else branch when no_else. */
static Onnx__GraphProto *if_model(int64_t *cond_const, bool no_else)
{
    reset();
    Onnx__NodeProto **tn = (Onnx__NodeProto **)plist(1), **en = (Onnx__NodeProto **)plist(1);
    tn[0] = nd("Add", t_in, t_out, NULL, NULL);
    en[0] = nd("Sub", t_in, e_out, NULL, NULL);
    Onnx__ValueInfoProto **to = (Onnx__ValueInfoProto **)plist(1), **eo = (Onnx__ValueInfoProto **)plist(1);
    to[0] = vi("t", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL);
    eo[0] = vi("e", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL);
    Onnx__GraphProto *tg = graph("then", tn, 1, NULL, 0, to, 1, NULL, 0);
    Onnx__GraphProto *eg = graph("else", en, 1, NULL, 0, eo, 1, NULL, 0);
    static char *i_in[] = {"cond", NULL}, *i_out[] = {"y", NULL};
    Onnx__NodeProto **mn = (Onnx__NodeProto **)plist(1);
    mn[0] = nd("If", i_in, i_out, attr_graph("then_branch", tg), no_else ? NULL : attr_graph("else_branch", eg));
    Onnx__TensorProto **init = (Onnx__TensorProto **)plist(2);
    int nt = 0;
    init[nt++] = tensor_f("one", 0, d0, one_v, 1);
    if (cond_const) {
        init[nt] = tensor_i64("cond", 0, d0, cond_const, 1);
        init[nt]->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        nt++;
    }
    Onnx__ValueInfoProto **gi = (Onnx__ValueInfoProto **)plist(2), **go = (Onnx__ValueInfoProto **)plist(1);
    int ni = 0;
    gi[ni++] = vi("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1);
    if (!cond_const)
        gi[ni++] = vi("cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
    go[0] = vi("y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1);
    return graph("main", mn, 1, gi, ni, go, 1, init, nt);
}

/* cond fed: a cond op with two regions.  x=5: true -> 6, false -> 4. */
START_TEST(test_if_fed_bool)
{
    const char *model = write_model(if_model(NULL, false), "if_fed");
    char exe[700], err[2000];
    snprintf(exe, sizeof exe, "%s/if_fed", tmpdir);
    ck_assert_msg(compile(model, exe, NULL, 0, err, sizeof err) == 0, "%s", err);
    for (int b = 0; b < 2; b++) {
        float x = 5;
        uint8_t cv = (uint8_t)b;
        char *feeds[2] = {npy("x", TCRT_F32, 1, d1, &x), npy("cond", TCRT_BOOL, 0, NULL, &cv)};
        tcrt_tensor got = {0};
        run(exe, feeds, 2, "y", &got);
        ck_assert_float_eq_tol(((float *)got.data)[0], b ? 6.0f : 4.0f, 1e-6f);
        free(got.data);
    }
}
END_TEST

/* A constant condition (int64 0: false) is inlined: no cond op is made and
 * x=5 gives 5 - 1 = 4.  Checked on the imported graph. */
START_TEST(test_if_constant)
{
    int64_t cv = 0;
    Onnx__GraphProto *g = if_model(&cv, false);
    Onnx__ModelProto m;
    Onnx__OperatorSetIdProto os, *pos[1] = {&os};
    onnx__model_proto__init(&m);
    onnx__operator_set_id_proto__init(&os);
    os.has_version = 1;
    os.version = 13;
    m.opset_import = pos;
    m.n_opset_import = 1;
    m.graph = g;
    float xv = 5;
    tcrt_tensor xt = {&xv, TCRT_F32, 1, {1}};
    TfFeedSpec spec = {.name = "x", .has_shape = true, .shape = ir_shape_make(1, (int64_t[]){1}),
                       .dtype = TCRT_INVALID, .value = &xt};
    OnnxImportOptions o = {.file = "if.onnx", .feeds = &spec, .n_feeds = 1};
    Status st = ST_INIT;
    IrGraph *ig = onnx_import(&m, &o, &st);
    ck_assert_msg(ig != NULL, "%s", st.msg);
    IR_FOR_EACH(ig, n)
    ck_assert_int_ne(n->op, OP_COND);
    IrValue y = ig->fetches[0].value;
    ck_assert(ir_is_const(y));
    ck_assert_float_eq_tol(((float *)y.node->data)[0], 4.0f, 1e-6f);
    ir_graph_free(ig);
}
END_TEST

START_TEST(test_if_without_else)
{
    const char *model = write_model(if_model(NULL, true), "if_bad");
    char exe[700], err[2000];
    snprintf(exe, sizeof exe, "%s/if_bad", tmpdir);
    ck_assert_int_ne(compile(model, exe, NULL, 0, err, sizeof err), 0);
    ck_assert_msg(strstr(err, "if_bad.onnx: node 'If' (If): missing attribute 'else_branch'"), "%s", err);
}
END_TEST

/* ---- LSTM: one step, hidden size 1, input size 1, x = 1 ----
 * W (gates i, o, f, c) = [0, 0, 0, atanh(0.5)], R = 0, no bias, h0 = c0 = 0:
 *   i = o = f = sigmoid(0) = 0.5;  c~ = tanh(atanh(0.5)) = 0.5;
 *   C = f*0 + i*c~ = 0.25;  H = o * tanh(0.25) = 0.5 * 0.24491866 = 0.12245933. */
START_TEST(test_lstm_one_step)
{
    reset();
    static int64_t dx[] = {1, 1, 1}, dw[] = {1, 4, 1};
    static float xv[] = {1}, wv[] = {0, 0, 0, 0.54930614f}, rv[] = {0, 0, 0, 0};
    static char *l_in[] = {"X", "W", "R", NULL}, *l_out[] = {"Y", "Y_h", "Y_c", NULL};
    Onnx__NodeProto **mn = (Onnx__NodeProto **)plist(1);
    mn[0] = nd("LSTM", l_in, l_out, attr_int("hidden_size", 1), NULL);
    Onnx__TensorProto **init = (Onnx__TensorProto **)plist(3);
    init[0] = tensor_f("X", 3, dx, xv, 1);
    init[1] = tensor_f("W", 3, dw, wv, 4);
    init[2] = tensor_f("R", 3, dw, rv, 4);
    Onnx__ValueInfoProto **go = (Onnx__ValueInfoProto **)plist(3);
    go[0] = vi("Y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL);
    go[1] = vi("Y_h", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL);
    go[2] = vi("Y_c", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL);
    Onnx__GraphProto *g = graph("main", mn, 1, NULL, 0, go, 3, init, 3);
    Onnx__ModelProto m;
    Onnx__OperatorSetIdProto os, *pos[1] = {&os};
    onnx__model_proto__init(&m);
    onnx__operator_set_id_proto__init(&os);
    os.has_version = 1;
    os.version = 14;
    m.opset_import = pos;
    m.n_opset_import = 1;
    m.graph = g;
    OnnxImportOptions o = {.file = "lstm.onnx"};
    Status st = ST_INIT;
    IrGraph *ig = onnx_import(&m, &o, &st);
    ck_assert_msg(ig != NULL, "%s", st.msg);
    ck_assert_int_eq(ig->n_fetches, 3);
    const int want_rank[3] = {4, 3, 3};
    const float want[3] = {0.12245933f, 0.12245933f, 0.25f};
    for (int i = 0; i < 3; i++) {
        IrValue v = ig->fetches[i].value;
        ck_assert(ir_is_const(v));
        ck_assert_int_eq(ir_value_type(v)->shape.rank, want_rank[i]);
        ck_assert_int_eq(ir_shape_count(&ir_value_type(v)->shape), 1);
        ck_assert_float_eq_tol(((float *)v.node->data)[0], want[i], 1e-6f);
    }
    ir_graph_free(ig);
}
END_TEST

/* ---- import-time ops on constants: sequences, Unique, Compress, NMS ---- */

static IrGraph *import_graph(Onnx__GraphProto *g, int64_t opset, Status *st)
{
    Onnx__ModelProto m;
    Onnx__OperatorSetIdProto os, *pos[1] = {&os};
    onnx__model_proto__init(&m);
    onnx__operator_set_id_proto__init(&os);
    os.has_version = 1;
    os.version = opset;
    m.opset_import = pos;
    m.n_opset_import = 1;
    m.graph = g;
    OnnxImportOptions o = {.file = "seq.onnx"};
    return onnx_import(&m, &o, st);
}

static Onnx__GraphProto *outs_graph(Onnx__NodeProto **ns, int nn, Onnx__TensorProto **init, int nt, char **names,
                                    int no)
{
    Onnx__ValueInfoProto **go = (Onnx__ValueInfoProto **)plist(no);
    for (int i = 0; i < no; i++)
        go[i] = vi(names[i], ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, -1, NULL);
    return graph("main", ns, nn, NULL, 0, go, no, init, nt);
}

static void check_f(IrValue v, int rank, const int64_t *d, const float *want, int n)
{
    ck_assert(ir_is_const(v));
    const IrType *t = ir_value_type(v);
    ck_assert_int_eq(t->shape.rank, rank);
    for (int i = 0; i < rank; i++)
        ck_assert_int_eq(t->shape.dims[i], d[i]);
    for (int i = 0; i < n; i++)
        ck_assert_float_eq_tol(((float *)v.node->data)[i], want[i], 1e-6f);
}

static void check_i(IrValue v, const int64_t *want, int n)
{
    ck_assert(ir_is_const(v));
    ck_assert_int_eq(ir_shape_count(&ir_value_type(v)->shape), n);
    ck_assert_int_eq(ir_value_type(v)->dtype, TCRT_I64);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(((int64_t *)v.node->data)[i], want[i]);
}

/* x = [[1,2],[3,4],[5,6]] split on axis 0 into rows (keepdims 0): r0 r1 r2;
 * insert t = [9,9] at position 1 -> (r0, t, r1, r2); length 4; at(-1) = r2 =
 * [5,6]; concat with new_axis on axis 0 -> [[1,2],[9,9],[3,4],[5,6]]. */
START_TEST(test_sequence_ops)
{
    reset();
    static int64_t dx[] = {3, 2}, dt[] = {2};
    static float xv[] = {1, 2, 3, 4, 5, 6}, tv[] = {9, 9};
    static int64_t one_i[] = {1}, neg1[] = {-1};
    static char *s_in[] = {"x", NULL}, *s_out[] = {"seq", NULL};
    static char *i_in[] = {"seq", "t", "p1", NULL}, *i_out[] = {"seq2", NULL};
    static char *l_in[] = {"seq2", NULL}, *l_out[] = {"len", NULL};
    static char *a_in[] = {"seq2", "pm1", NULL}, *a_out[] = {"last", NULL};
    static char *c_in[] = {"seq2", NULL}, *c_out[] = {"stack", NULL};
    Onnx__NodeProto **ns = (Onnx__NodeProto **)plist(5);
    ns[0] = nd("SplitToSequence", s_in, s_out, attr_int("keepdims", 0), NULL);
    ns[1] = nd("SequenceInsert", i_in, i_out, NULL, NULL);
    ns[2] = nd("SequenceLength", l_in, l_out, NULL, NULL);
    ns[3] = nd("SequenceAt", a_in, a_out, NULL, NULL);
    ns[4] = nd("ConcatFromSequence", c_in, c_out, attr_int("axis", 0), attr_int("new_axis", 1));
    Onnx__TensorProto **init = (Onnx__TensorProto **)plist(4);
    init[0] = tensor_f("x", 2, dx, xv, 6);
    init[1] = tensor_f("t", 1, dt, tv, 2);
    init[2] = tensor_i64("p1", 0, d0, one_i, 1);
    init[3] = tensor_i64("pm1", 0, d0, neg1, 1);
    static char *names[] = {"len", "last", "stack"};
    Status st = ST_INIT;
    IrGraph *g = import_graph(outs_graph(ns, 5, init, 4, names, 3), 13, &st);
    ck_assert_msg(g != NULL, "%s", st.msg);
    check_i(g->fetches[0].value, (int64_t[]){4}, 1);
    check_f(g->fetches[1].value, 1, (int64_t[]){2}, (float[]){5, 6}, 2);
    check_f(g->fetches[2].value, 2, (int64_t[]){4, 2}, (float[]){1, 2, 9, 9, 3, 4, 5, 6}, 8);
    ir_graph_free(g);
}
END_TEST

/* SequenceAt past the end, and a sequence fetched as a graph output. */
START_TEST(test_sequence_errors)
{
    reset();
    static int64_t dx[] = {2};
    static float xv[] = {1, 2};
    static int64_t five[] = {5};
    static char *s_in[] = {"x", "x", NULL}, *s_out[] = {"seq", NULL};
    static char *a_in[] = {"seq", "p", NULL}, *a_out[] = {"y", NULL};
    Onnx__NodeProto **ns = (Onnx__NodeProto **)plist(2);
    ns[0] = nd("SequenceConstruct", s_in, s_out, NULL, NULL);
    ns[1] = nd("SequenceAt", a_in, a_out, NULL, NULL);
    Onnx__TensorProto **init = (Onnx__TensorProto **)plist(2);
    init[0] = tensor_f("x", 1, dx, xv, 2);
    init[1] = tensor_i64("p", 0, d0, five, 1);
    static char *names[] = {"y"}, *names2[] = {"seq"};
    Status st = ST_INIT;
    ck_assert_ptr_null(import_graph(outs_graph(ns, 2, init, 2, names, 1), 13, &st));
    ck_assert_msg(strstr(st.msg, "seq.onnx: node 'SequenceAt' (SequenceAt): position 5 is out of range for a "
                                 "sequence of 2"),
                  "%s", st.msg);
    /* a sequence output of length 2 is fetched as seq.0 and seq.1 (both x) */
    Status st2 = ST_INIT;
    IrGraph *g = import_graph(outs_graph(ns, 1, init, 1, names2, 1), 13, &st2);
    ck_assert_msg(g != NULL, "%s", st2.msg);
    ck_assert_int_eq(g->n_fetches, 2);
    ck_assert_str_eq(g->fetches[0].name, "seq.0");
    ck_assert_str_eq(g->fetches[1].name, "seq.1");
    check_f(g->fetches[0].value, 1, dx, xv, 2);
    check_f(g->fetches[1].value, 1, dx, xv, 2);
    ir_graph_free(g);
}
END_TEST

static Onnx__AttributeProto *attr_ints(const char *name, int64_t *v, size_t n)
{
    Onnx__AttributeProto *a = &attrs[n_attrs++];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    a->ints = v;
    a->n_ints = n;
    return a;
}

static Onnx__AttributeProto *attr_str(const char *name, const char *v)
{
    Onnx__AttributeProto *a = &attrs[n_attrs++];
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    a->has_s = 1;
    a->s.data = (uint8_t *)v;
    a->s.len = strlen(v);
    return a;
}

/* MaxUnpool, kernel 2x2 stride 2, X [1,1,2,2] = 1 2 3 4 at I = 0 3 12 15:
 * the natural output is 4x4 with 1, 2, 3, 4 at flat positions 0, 3, 12, 15
 * and zeros elsewhere.  With output_shape [1,1,5,5] the same coordinates
 * (0,0) (0,3) (3,0) (3,3) are positions 0, 3, 15, 18 of the 5x5.
 * NonZero of [[0,2,0],[5,0,7]]: rows [0,1,1], columns [1,0,2].
 * Einsum "...ii->...i" of x [2,2,2] = 0..7: diagonals [0,3] and [4,7]. */
START_TEST(test_unpool_nonzero_diagonal)
{
    reset();
    static int64_t dx[] = {1, 1, 2, 2}, k2[] = {2, 2}, d4[] = {4}, d23[] = {2, 3}, d222[] = {2, 2, 2};
    static float xv[] = {1, 2, 3, 4}, nzv[] = {0, 2, 0, 5, 0, 7}, ev[] = {0, 1, 2, 3, 4, 5, 6, 7};
    static int64_t iv[] = {0, 3, 12, 15}, osv[] = {1, 1, 5, 5};
    static char *u_in[] = {"x", "i", NULL}, *u_out[] = {"u", NULL};
    static char *u2_in[] = {"x", "i", "os", NULL}, *u2_out[] = {"u2", NULL};
    static char *n_in[] = {"nzx", NULL}, *n_out[] = {"nz", NULL};
    static char *e_in[] = {"ex", NULL}, *e_out[] = {"diag", NULL};
    Onnx__NodeProto **ns = (Onnx__NodeProto **)plist(4);
    ns[0] = nd("MaxUnpool", u_in, u_out, attr_ints("kernel_shape", k2, 2), attr_ints("strides", k2, 2));
    ns[1] = nd("MaxUnpool", u2_in, u2_out, attr_ints("kernel_shape", k2, 2), attr_ints("strides", k2, 2));
    ns[2] = nd("NonZero", n_in, n_out, NULL, NULL);
    ns[3] = nd("Einsum", e_in, e_out, attr_str("equation", "...ii->...i"), NULL);
    Onnx__TensorProto **init = (Onnx__TensorProto **)plist(5);
    init[0] = tensor_f("x", 4, dx, xv, 4);
    init[1] = tensor_i64("i", 4, dx, iv, 4);
    init[2] = tensor_i64("os", 1, d4, osv, 4);
    init[3] = tensor_f("nzx", 2, d23, nzv, 6);
    init[4] = tensor_f("ex", 3, d222, ev, 8);
    static char *names[] = {"u", "u2", "nz", "diag"};
    Status st = ST_INIT;
    IrGraph *g = import_graph(outs_graph(ns, 4, init, 5, names, 4), 13, &st);
    ck_assert_msg(g != NULL, "%s", st.msg);
    float u[16] = {0}, u2[25] = {0};
    u[0] = 1, u[3] = 2, u[12] = 3, u[15] = 4;
    u2[0] = 1, u2[3] = 2, u2[15] = 3, u2[18] = 4;
    check_f(g->fetches[0].value, 4, (int64_t[]){1, 1, 4, 4}, u, 16);
    check_f(g->fetches[1].value, 4, (int64_t[]){1, 1, 5, 5}, u2, 25);
    check_i(g->fetches[2].value, (int64_t[]){0, 1, 1, 1, 0, 2}, 6);
    check_f(g->fetches[3].value, 2, (int64_t[]){2, 2}, (float[]){0, 3, 4, 7}, 4);
    ir_graph_free(g);
}
END_TEST

/* ---- sequence and optional graph inputs and outputs (docs/onnx.md) ---- */

static Onnx__TypeProto__Sequence seqtypes[8];
static Onnx__TypeProto__Optional opttypes[8];
static Onnx__ValueInfoProto wrapvis[8];
static Onnx__TypeProto wraptypes[8];
static int n_wrap;

/* A ValueInfo `name` of a sequence (or optional, when opt) of the tensor
 * type of elem (a vi() whose name is unused). */
static Onnx__ValueInfoProto *vi_wrap(const char *name, Onnx__ValueInfoProto *elem, bool opt)
{
    int k = n_wrap++;
    Onnx__ValueInfoProto *v = &wrapvis[k];
    Onnx__TypeProto *t = &wraptypes[k];
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(t);
    v->name = (char *)name;
    v->type = t;
    if (opt) {
        onnx__type_proto__optional__init(&opttypes[k]);
        opttypes[k].elem_type = elem->type;
        t->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
        t->optional_type = &opttypes[k];
    } else {
        onnx__type_proto__sequence__init(&seqtypes[k]);
        seqtypes[k].elem_type = elem->type;
        t->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
        t->sequence_type = &seqtypes[k];
    }
    return v;
}

/* Graph: s (sequence of float [2]) -> y = SequenceAt(s, 1);
 * out = SequenceInsert(s, y) (at the back).  Outputs y, out. */
static Onnx__GraphProto *seqio_model(void)
{
    reset();
    n_wrap = 0;
    static int64_t d2[] = {2}, one_i[] = {1};
    static char *a_in[] = {"s", "p", NULL}, *a_out[] = {"y", NULL};
    static char *i_in[] = {"s", "y", NULL}, *i_out[] = {"out", NULL};
    Onnx__NodeProto **ns = (Onnx__NodeProto **)plist(2);
    ns[0] = nd("SequenceAt", a_in, a_out, NULL, NULL);
    ns[1] = nd("SequenceInsert", i_in, i_out, NULL, NULL);
    Onnx__TensorProto **init = (Onnx__TensorProto **)plist(1);
    init[0] = tensor_i64("p", 0, d0, one_i, 1);
    Onnx__ValueInfoProto **gi = (Onnx__ValueInfoProto **)plist(1), **go = (Onnx__ValueInfoProto **)plist(2);
    gi[0] = vi_wrap("s", vi("", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d2), false);
    go[0] = vi("y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d2);
    go[1] = vi_wrap("out", vi("", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d2), false);
    return graph("main", ns, 2, gi, 1, go, 2, init, 1);
}

/* s fed at run time as s.0 = [1,2], s.1 = [3,4]: y = s[1] = [3,4]; out is
 * (s.0, s.1, y) fetched as out.0 = [1,2], out.1 = [3,4], out.2 = [3,4]. */
START_TEST(test_sequence_graph_io)
{
    const char *model = write_model(seqio_model(), "seqio");
    char exe[700], err[2000];
    snprintf(exe, sizeof exe, "%s/seqio", tmpdir);
    char *extra[] = {"--feed", "s.0:0:2", "--feed", "s.1:0:2"};
    ck_assert_msg(compile(model, exe, extra, 4, err, sizeof err) == 0, "%s", err);
    float a[] = {1, 2}, b[] = {3, 4};
    static int64_t d2[] = {2};
    char *feeds[2] = {npy("s.0", TCRT_F32, 1, d2, a), npy("s.1", TCRT_F32, 1, d2, b)};
    const char *names[] = {"y", "out.0", "out.1", "out.2"};
    const float want[4][2] = {{3, 4}, {1, 2}, {3, 4}, {3, 4}};
    for (int i = 0; i < 4; i++) {
        tcrt_tensor got = {0};
        run(exe, feeds, 2, names[i], &got);
        ck_assert_int_eq(got.rank, 1);
        ck_assert_int_eq(got.dims[0], 2);
        ck_assert_float_eq_tol(((float *)got.data)[0], want[i][0], 1e-6f);
        ck_assert_float_eq_tol(((float *)got.data)[1], want[i][1], 1e-6f);
        free(got.data);
    }
}
END_TEST

/* If with a fed condition whose branches give sequences of 2: then
 * (x, x + 1), else (x, x - 1), each fetched as r.0, r.1.  x = 5:
 * true -> r.1 = 6, false -> r.1 = 4; r.0 = 5 either way. */
START_TEST(test_if_sequence_result)
{
    reset();
    n_wrap = 0;
    static char *sa_in[] = {"x", "one", NULL}, *sa_out[] = {"xa", NULL}, *ss_out[] = {"xs", NULL};
    static char *tc_in[] = {"x", "xa", NULL}, *tc_out[] = {"ts", NULL};
    static char *ec_in[] = {"x", "xs", NULL}, *ec_out[] = {"es", NULL};
    Onnx__NodeProto **tn = (Onnx__NodeProto **)plist(2), **en = (Onnx__NodeProto **)plist(2);
    tn[0] = nd("Add", sa_in, sa_out, NULL, NULL);
    tn[1] = nd("SequenceConstruct", tc_in, tc_out, NULL, NULL);
    en[0] = nd("Sub", sa_in, ss_out, NULL, NULL);
    en[1] = nd("SequenceConstruct", ec_in, ec_out, NULL, NULL);
    Onnx__ValueInfoProto **to = (Onnx__ValueInfoProto **)plist(1), **eo = (Onnx__ValueInfoProto **)plist(1);
    to[0] = vi_wrap("ts", vi("", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1), false);
    eo[0] = vi_wrap("es", vi("", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1), false);
    Onnx__GraphProto *tg = graph("then", tn, 2, NULL, 0, to, 1, NULL, 0);
    Onnx__GraphProto *eg = graph("else", en, 2, NULL, 0, eo, 1, NULL, 0);
    static char *i_in[] = {"cond", NULL}, *i_out[] = {"r", NULL};
    Onnx__NodeProto **mn = (Onnx__NodeProto **)plist(1);
    mn[0] = nd("If", i_in, i_out, attr_graph("then_branch", tg), attr_graph("else_branch", eg));
    Onnx__TensorProto **init = (Onnx__TensorProto **)plist(1);
    init[0] = tensor_f("one", 0, d0, one_v, 1);
    Onnx__ValueInfoProto **gi = (Onnx__ValueInfoProto **)plist(2), **go = (Onnx__ValueInfoProto **)plist(1);
    gi[0] = vi("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1);
    gi[1] = vi("cond", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
    go[0] = vi_wrap("r", vi("", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d1), false);
    const char *model = write_model(graph("main", mn, 1, gi, 2, go, 1, init, 1), "if_seq");
    char exe[700], err[2000];
    snprintf(exe, sizeof exe, "%s/if_seq", tmpdir);
    ck_assert_msg(compile(model, exe, NULL, 0, err, sizeof err) == 0, "%s", err);
    for (int b = 0; b < 2; b++) {
        float x = 5;
        uint8_t cv = (uint8_t)b;
        char *feeds[2] = {npy("x", TCRT_F32, 1, d1, &x), npy("cond", TCRT_BOOL, 0, NULL, &cv)};
        tcrt_tensor r0 = {0}, r1 = {0};
        run(exe, feeds, 2, "r.0", &r0);
        run(exe, feeds, 2, "r.1", &r1);
        ck_assert_float_eq_tol(((float *)r0.data)[0], 5.0f, 1e-6f);
        ck_assert_float_eq_tol(((float *)r1.data)[0], b ? 6.0f : 4.0f, 1e-6f);
        free(r0.data);
        free(r1.data);
    }
}
END_TEST

static IrGraph *import_feeds(Onnx__GraphProto *g, const TfFeedSpec *f, int nf, Status *st)
{
    Onnx__ModelProto m;
    Onnx__OperatorSetIdProto os, *pos[1] = {&os};
    onnx__model_proto__init(&m);
    onnx__operator_set_id_proto__init(&os);
    os.has_version = 1;
    os.version = 16;
    m.opset_import = pos;
    m.n_opset_import = 1;
    m.graph = g;
    OnnxImportOptions o = {.file = "seqio.onnx", .feeds = f, .n_feeds = nf};
    return onnx_import(&m, &o, st);
}

/* Feed specs that do not match the sequence input: a length of 1 with an
 * element s.1; a gap (s.0, s.2); nothing given at all. */
START_TEST(test_sequence_input_errors)
{
    TfFeedSpec len1 = {.name = "s:0", .has_shape = true, .shape = {.rank = 1, .dims = {1}}};
    TfFeedSpec e0 = {.name = "s.0"}, e1 = {.name = "s.1"}, e2 = {.name = "s.2"};
    TfFeedSpec a[] = {len1, e1}, b[] = {e0, e2};
    Status st = ST_INIT;
    ck_assert_ptr_null(import_feeds(seqio_model(), a, 2, &st));
    ck_assert_msg(strstr(st.msg, "seqio.onnx: feed 's.1': sequence input 's' has length 1"), "%s", st.msg);
    Status st2 = ST_INIT;
    ck_assert_ptr_null(import_feeds(seqio_model(), b, 2, &st2));
    ck_assert_msg(strstr(st2.msg, "feed 's.2': sequence input 's' has no element s.1"), "%s", st2.msg);
    Status st3 = ST_INIT;
    ck_assert_ptr_null(import_feeds(seqio_model(), NULL, 0, &st3));
    ck_assert_msg(strstr(st3.msg, "graph input 's' is a sequence: feed its elements as s.0, s.1"), "%s",
                  st3.msg);
    /* an empty sequence (s:0:0): SequenceAt(s, 1) is out of range */
    TfFeedSpec len0 = {.name = "s:0", .has_shape = true, .shape = {.rank = 1, .dims = {0}}};
    Status st4 = ST_INIT;
    ck_assert_ptr_null(import_feeds(seqio_model(), &len0, 1, &st4));
    ck_assert_msg(strstr(st4.msg, "position 1 is out of range for a sequence of 0"), "%s", st4.msg);
}
END_TEST

/* An optional float [2] input o: OptionalHasElement is false with
 * `o:none` and true otherwise (o then a feed); OptionalGetElement of a
 * present o is o itself. */
START_TEST(test_optional_graph_input)
{
    static int64_t d2[] = {2};
    static char *h_in[] = {"o", NULL}, *h_out[] = {"has", NULL};
    for (int present = 0; present < 2; present++) {
        reset();
        n_wrap = 0;
        Onnx__NodeProto **ns = (Onnx__NodeProto **)plist(1);
        ns[0] = nd("OptionalHasElement", h_in, h_out, NULL, NULL);
        Onnx__ValueInfoProto **gi = (Onnx__ValueInfoProto **)plist(1), **go = (Onnx__ValueInfoProto **)plist(1);
        gi[0] = vi_wrap("o", vi("", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, d2), true);
        go[0] = vi("has", ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
        TfFeedSpec none = {.name = "o:none"};
        Status st = ST_INIT;
        IrGraph *g = import_feeds(graph("main", ns, 1, gi, 1, go, 1, NULL, 0), &none, present ? 0 : 1, &st);
        ck_assert_msg(g != NULL, "%s", st.msg);
        ck_assert_int_eq(g->n_feeds, present);
        ck_assert(ir_is_const(g->fetches[0].value));
        ck_assert_int_eq(((uint8_t *)g->fetches[0].value.node->data)[0], present);
        ir_graph_free(g);
    }
}
END_TEST

/* Unique of [2,1,1,3,4,3] (sorted): Y [1,2,3,4], indices (first
 * occurrences) [1,0,3,4], inverse [1,0,0,2,3,2], counts [2,1,2,1].
 * Compress of the same with condition [1,0,0,1,1,0] (int64 here) on axis 0:
 * [2,3,4]. */
START_TEST(test_unique_compress)
{
    reset();
    static int64_t dx[] = {6};
    static float xv[] = {2, 1, 1, 3, 4, 3};
    static int64_t cv[] = {1, 0, 0, 1, 1, 0};
    static char *u_in[] = {"x", NULL}, *u_out[] = {"y", "idx", "inv", "cnt", NULL};
    static char *c_in[] = {"x", "cond", NULL}, *c_out[] = {"z", NULL};
    Onnx__NodeProto **ns = (Onnx__NodeProto **)plist(2);
    ns[0] = nd("Unique", u_in, u_out, NULL, NULL);
    ns[1] = nd("Compress", c_in, c_out, attr_int("axis", 0), NULL);
    Onnx__TensorProto **init = (Onnx__TensorProto **)plist(2);
    init[0] = tensor_f("x", 1, dx, xv, 6);
    init[1] = tensor_i64("cond", 1, dx, cv, 6);
    static char *names[] = {"y", "idx", "inv", "cnt", "z"};
    Status st = ST_INIT;
    IrGraph *g = import_graph(outs_graph(ns, 2, init, 2, names, 5), 13, &st);
    ck_assert_msg(g != NULL, "%s", st.msg);
    check_f(g->fetches[0].value, 1, (int64_t[]){4}, (float[]){1, 2, 3, 4}, 4);
    check_i(g->fetches[1].value, (int64_t[]){1, 0, 3, 4}, 4);
    check_i(g->fetches[2].value, (int64_t[]){1, 0, 0, 2, 3, 2}, 6);
    check_i(g->fetches[3].value, (int64_t[]){2, 1, 2, 1}, 4);
    check_f(g->fetches[4].value, 1, (int64_t[]){3}, (float[]){2, 3, 4}, 3);
    ir_graph_free(g);
}
END_TEST

/* NonMaxSuppression, one batch, one class, corner boxes:
 *   b0 [0,0,1,1] score .9, b1 [0,0.1,1,1.1] score .8 (IoU with b0: 0.9/1.1
 *   = .818 > .5: suppressed), b2 [0,2,1,3] score .7 (disjoint: kept).
 * Selected [[0,0,0],[0,0,2]].  A fed score input is an error. */
START_TEST(test_nms_constant)
{
    reset();
    static int64_t db[] = {1, 3, 4}, ds[] = {1, 1, 3};
    static float bv[] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3}, sv[] = {0.9f, 0.8f, 0.7f}, iou[] = {0.5f};
    static int64_t maxo[] = {10};
    static char *n_in[] = {"boxes", "scores", "max", "iou", NULL}, *n_out[] = {"sel", NULL};
    Onnx__NodeProto **ns = (Onnx__NodeProto **)plist(1);
    ns[0] = nd("NonMaxSuppression", n_in, n_out, NULL, NULL);
    Onnx__TensorProto **init = (Onnx__TensorProto **)plist(4);
    init[0] = tensor_f("boxes", 3, db, bv, 12);
    init[1] = tensor_f("scores", 3, ds, sv, 3);
    init[2] = tensor_i64("max", 1, d1, maxo, 1);
    init[3] = tensor_f("iou", 1, d1, iou, 1);
    static char *names[] = {"sel"};
    Status st = ST_INIT;
    IrGraph *g = import_graph(outs_graph(ns, 1, init, 4, names, 1), 13, &st);
    ck_assert_msg(g != NULL, "%s", st.msg);
    check_i(g->fetches[0].value, (int64_t[]){0, 0, 0, 0, 0, 2}, 6);
    ck_assert_int_eq(ir_value_type(g->fetches[0].value)->shape.dims[0], 2);
    ir_graph_free(g);
}
END_TEST

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    Suite *s = suite_create("onnx_flow");
    TCase *tc = tcase_create("flow");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_loop_runtime_trip_count);
    tcase_add_test(tc, test_loop_scan_output);
    tcase_add_test(tc, test_loop_bad_body_arity);
    tcase_add_test(tc, test_if_fed_bool);
    tcase_add_test(tc, test_if_constant);
    tcase_add_test(tc, test_if_without_else);
    tcase_add_test(tc, test_lstm_one_step);
    tcase_add_test(tc, test_sequence_ops);
    tcase_add_test(tc, test_sequence_errors);
    tcase_add_test(tc, test_sequence_graph_io);
    tcase_add_test(tc, test_sequence_input_errors);
    tcase_add_test(tc, test_optional_graph_input);
    tcase_add_test(tc, test_unpool_nonzero_diagonal);
    tcase_add_test(tc, test_if_sequence_result);
    tcase_add_test(tc, test_unique_compress);
    tcase_add_test(tc, test_nms_constant);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return failed ? 1 : 0;
}
