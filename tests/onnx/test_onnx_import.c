/* tests/onnx/test_onnx_import.c - the ONNX frontend on hand-built
 * ModelProtos (protobuf-c structs packed to bytes, then loaded through
 * fe_load_buffer's content detection and onnx_import).  The input is bound
 * as a constant (TfFeedSpec.value), so the whole net folds at build time
 * and the fetch is a constant whose values are checked against hand
 * arithmetic. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/frontend.h"
#include "compiler/onnx/onnx.h"

/* ---- model builder ---- */

typedef struct Net {
    Onnx__ModelProto m;
    Onnx__GraphProto g;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto nodes[8], *pnodes[8];
    Onnx__AttributeProto attrs[8], *pattrs[8];
    Onnx__TensorProto inits[8], *pinits[8];
    Onnx__ValueInfoProto vin, vout, *pin[1], *pout[1];
    Onnx__TypeProto tin, tout;
    Onnx__TypeProto__Tensor ttin, ttout;
    Onnx__TensorShapeProto sin;
    Onnx__TensorShapeProto__Dimension d[4], *pd[4];
    Onnx__StringStringEntryProto ext, *pext[1];
} Net;

static char *ins_conv[] = {"x", "W", "B"}, *outs_conv[] = {"c"};
static char *ins_relu[] = {"c"}, *outs_relu[] = {"r"};
static char *ins_flat[] = {"r"}, *outs_flat[] = {"f"};
static char *ins_gemm[] = {"f", "W2", "C2"}, *outs_gemm[] = {"y"};
static int64_t dims_w[] = {1, 1, 2, 2}, dims_b[] = {1}, dims_w2[] = {4, 2}, dims_c2[] = {2};
static float w[] = {1, 0, 0, 0}, b[] = {-3}, w2[] = {1, 0, 1, 0, 1, 1, 1, 2}, c2[] = {0.5f, -1};

static void node(Net *n, int i, const char *op, char **in, size_t nin, char **out)
{
    onnx__node_proto__init(&n->nodes[i]);
    n->nodes[i].op_type = (char *)op;
    n->nodes[i].name = (char *)op;
    n->nodes[i].input = in;
    n->nodes[i].n_input = nin;
    n->nodes[i].output = out;
    n->nodes[i].n_output = 1;
    n->pnodes[i] = &n->nodes[i];
}

static void init(Net *n, int i, const char *name, int64_t *dims, size_t nd, float *v, size_t nv)
{
    onnx__tensor_proto__init(&n->inits[i]);
    n->inits[i].name = (char *)name;
    n->inits[i].dims = dims;
    n->inits[i].n_dims = nd;
    n->inits[i].has_data_type = 1;
    n->inits[i].data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    if (i % 2) { /* odd ones as raw_data, even ones as float_data: both paths */
        n->inits[i].has_raw_data = 1;
        n->inits[i].raw_data.data = (uint8_t *)v;
        n->inits[i].raw_data.len = nv * sizeof(float);
    } else {
        n->inits[i].float_data = v;
        n->inits[i].n_float_data = nv;
    }
    n->pinits[i] = &n->inits[i];
}

static void vinfo(Onnx__ValueInfoProto *vi, Onnx__TypeProto *t, Onnx__TypeProto__Tensor *tt, const char *name)
{
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(t);
    onnx__type_proto__tensor__init(tt);
    vi->name = (char *)name;
    vi->type = t;
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    tt->has_elem_type = 1;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
}

/* x[1,1,3,3] -> Conv(W 2x2, B) -> Relu -> Flatten -> Gemm(W2[4,2], C2) -> y[1,2] */
static void build(Net *n)
{
    memset(n, 0, sizeof *n);
    onnx__model_proto__init(&n->m);
    onnx__graph_proto__init(&n->g);
    onnx__operator_set_id_proto__init(&n->opset);
    n->opset.has_version = 1;
    n->opset.version = 13;
    n->opsets[0] = &n->opset;
    n->m.has_ir_version = 1;
    n->m.ir_version = 7;
    n->m.opset_import = n->opsets;
    n->m.n_opset_import = 1;
    n->m.graph = &n->g;
    node(n, 0, "Conv", ins_conv, 3, outs_conv);
    node(n, 1, "Relu", ins_relu, 1, outs_relu);
    node(n, 2, "Flatten", ins_flat, 1, outs_flat);
    node(n, 3, "Gemm", ins_gemm, 3, outs_gemm);
    n->g.node = n->pnodes;
    n->g.n_node = 4;
    init(n, 0, "W", dims_w, 4, w, 4);
    init(n, 1, "B", dims_b, 1, b, 1);
    init(n, 2, "W2", dims_w2, 2, w2, 8);
    init(n, 3, "C2", dims_c2, 1, c2, 2);
    n->g.initializer = n->pinits;
    n->g.n_initializer = 4;
    vinfo(&n->vin, &n->tin, &n->ttin, "x");
    onnx__tensor_shape_proto__init(&n->sin);
    int64_t xd[4] = {1, 1, 3, 3};
    for (int i = 0; i < 4; i++) {
        onnx__tensor_shape_proto__dimension__init(&n->d[i]);
        n->d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        n->d[i].dim_value = xd[i];
        n->pd[i] = &n->d[i];
    }
    n->sin.dim = n->pd;
    n->sin.n_dim = 4;
    n->ttin.shape = &n->sin;
    vinfo(&n->vout, &n->tout, &n->ttout, "y");
    n->pin[0] = &n->vin;
    n->pout[0] = &n->vout;
    n->g.input = n->pin;
    n->g.n_input = 1;
    n->g.output = n->pout;
    n->g.n_output = 1;
}

/* Packs, loads (content detection) and imports with x bound to 1..9. */
static IrGraph *import(Net *n, Status *st, FeFormat *fmt)
{
    size_t len = onnx__model_proto__get_packed_size(&n->m);
    uint8_t *buf = malloc(len);
    onnx__model_proto__pack(&n->m, buf);
    FeModel fm;
    bool ok = fe_load_buffer("net.bin", buf, len, &fm, st);
    free(buf);
    if (!ok)
        return NULL;
    *fmt = fm.format;
    static float xv[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    tcrt_tensor xt = {xv, TCRT_F32, 4, {1, 1, 3, 3}};
    TfFeedSpec spec = {.name = "x", .has_shape = true, .shape = ir_shape_make(4, (int64_t[]){1, 1, 3, 3}),
                       .dtype = TCRT_INVALID, .value = &xt};
    OnnxImportOptions o = {.file = "net.onnx", .feeds = &spec, .n_feeds = 1};
    IrGraph *g = onnx_import(fm.onnx, &o, st);
    fe_model_free(&fm);
    return g;
}

START_TEST(test_conv_relu_gemm)
{
    Net n;
    build(&n);
    Status st = ST_INIT;
    FeFormat fmt = FE_GRAPHDEF_BINARY;
    IrGraph *g = import(&n, &st, &fmt);
    ck_assert_msg(g != NULL, "%s", st.msg);
    ck_assert_int_eq(fmt, FE_ONNX);
    ck_assert_int_eq(g->n_fetches, 1);
    IrValue y = g->fetches[0].value;
    ck_assert_msg(ir_is_const(y), "the net on a constant input must fold");
    const IrType *t = ir_value_type(y);
    ck_assert_int_eq(t->shape.rank, 2);
    ck_assert_int_eq(t->shape.dims[0], 1);
    ck_assert_int_eq(t->shape.dims[1], 2);
    /* Conv with W = [[1,0],[0,0]] picks x[i][j] for the 2x2 windows: 1 2 4 5;
     * + B (-3): -2 -1 1 2; Relu: 0 0 1 2; Flatten [1,4];
     * Gemm: [0,0,1,2] x [[1,0],[1,0],[1,1],[1,2]] = [3, 5]; + C2: [3.5, 4]. */
    const float *v = y.node->data;
    ck_assert_float_eq_tol(v[0], 3.5f, 1e-6f);
    ck_assert_float_eq_tol(v[1], 4.0f, 1e-6f);
    ir_graph_free(g);
}
END_TEST

/* OneHot(indices, depth, values) with every input an initializer (so it
 * folds): indices [0, 2, -1, 7], depth 3, values [off 0, on 5], axis -1.
 * By ONNX's definition a negative index counts from the end (-1 -> 2) and
 * one outside [-depth, depth-1] gives a row of off values:
 *   [[5,0,0], [0,0,5], [0,0,5], [0,0,0]]. */
static char *ins_oh[] = {"ix", "depth", "vals"}, *outs_oh[] = {"y"};
static int64_t dims_ix[] = {4}, dims_vals[] = {2};
static float ix[] = {0, 2, -1, 7}, depth[] = {3}, vals[] = {0, 5};

START_TEST(test_onehot)
{
    Net n;
    build(&n);
    node(&n, 0, "OneHot", ins_oh, 3, outs_oh);
    n.g.n_node = 1;
    init(&n, 0, "ix", dims_ix, 1, ix, 4);
    init(&n, 1, "depth", NULL, 0, depth, 1);
    init(&n, 2, "vals", dims_vals, 1, vals, 2);
    n.g.n_initializer = 3;
    Status st = ST_INIT;
    FeFormat fmt = FE_GRAPHDEF_BINARY;
    IrGraph *g = import(&n, &st, &fmt);
    ck_assert_msg(g != NULL, "%s", st.msg);
    IrValue y = g->fetches[0].value;
    ck_assert_msg(ir_is_const(y), "OneHot of constants must fold");
    const IrType *t = ir_value_type(y);
    ck_assert_int_eq(t->dtype, TCRT_F32);
    ck_assert_int_eq(t->shape.rank, 2);
    ck_assert_int_eq(t->shape.dims[0], 4);
    ck_assert_int_eq(t->shape.dims[1], 3);
    const float want[12] = {5, 0, 0, 0, 0, 5, 0, 0, 5, 0, 0, 0};
    const float *v = y.node->data;
    for (int k = 0; k < 12; k++)
        ck_assert_msg(v[k] == want[k], "y[%d] = %g, want %g", k, v[k], want[k]);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_missing_initializer)
{
    Net n;
    build(&n);
    n.g.n_initializer = 2; /* W2, C2 gone */
    Status st = ST_INIT;
    FeFormat fmt;
    ck_assert_ptr_null(import(&n, &st, &fmt));
    ck_assert_msg(strstr(st.msg, "node 'Gemm' (Gemm): input 1 'W2' is not defined") &&
                      strstr(st.msg, "missing initializer"), "%s", st.msg);
}
END_TEST

START_TEST(test_unknown_ops_all_reported)
{
    Net n;
    build(&n);
    n.nodes[1].op_type = "FancyRelu";
    n.nodes[2].op_type = "FancyFlatten";
    Status st = ST_INIT;
    FeFormat fmt;
    ck_assert_ptr_null(import(&n, &st, &fmt));
    ck_assert_msg(strstr(st.msg, "node 'Relu' (FancyRelu): unsupported op") &&
                      strstr(st.msg, "node 'Flatten' (FancyFlatten): unsupported op"), "%s", st.msg);
}
END_TEST

START_TEST(test_external_data)
{
    Net n;
    build(&n);
    onnx__string_string_entry_proto__init(&n.ext);
    n.ext.key = "location";
    n.ext.value = "weights.bin";
    n.pext[0] = &n.ext;
    n.inits[2].external_data = n.pext;
    n.inits[2].n_external_data = 1;
    n.inits[2].has_data_location = 1;
    n.inits[2].data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    n.inits[2].n_float_data = 0;
    Status st = ST_INIT;
    FeFormat fmt;
    ck_assert_ptr_null(import(&n, &st, &fmt));
    ck_assert_msg(strstr(st.msg, "initializer 'W2'") && strstr(st.msg, "external"), "%s", st.msg);
}
END_TEST

START_TEST(test_bad_opset)
{
    Net n;
    build(&n);
    n.opset.version = 99;
    Status st = ST_INIT;
    FeFormat fmt;
    ck_assert_ptr_null(import(&n, &st, &fmt));
    ck_assert_msg(strstr(st.msg, "opset 99"), "%s", st.msg);
}
END_TEST

START_TEST(test_corrupt_model)
{
    Net n;
    build(&n);
    size_t len = onnx__model_proto__get_packed_size(&n.m);
    uint8_t *buf = malloc(len);
    onnx__model_proto__pack(&n.m, buf);
    FeModel fm;
    Status st = ST_INIT;
    /* cut inside the graph message: not a valid ModelProto of any kind */
    ck_assert(!fe_load_buffer("net.onnx", buf, len - 7, &fm, &st));
    ck_assert_msg(st.msg[0] != 0, "an error must be recorded");
    free(buf);
}
END_TEST

START_TEST(test_info)
{
    Net n;
    build(&n);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    onnx_print_info(f, &n.m);
    fclose(f);
    ck_assert_msg(strstr(text, "opsets: ai.onnx=13") && strstr(text, "  x: FLOAT[1,1,3,3]") &&
                      strstr(text, "  y: FLOAT (shape unknown)") && strstr(text, "initializers: 4") &&
                      strstr(text, "Conv ") && strstr(text, "Gemm "),
                  "%s", text);
    ck_assert_msg(!strstr(text, "  W:"), "initializers are not listed as inputs: %s", text);
    free(text);
}
END_TEST

START_TEST(test_symbolic_dim_needs_feed)
{
    Net n;
    build(&n);
    n.d[0].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
    n.d[0].dim_param = "batch";
    size_t len = onnx__model_proto__get_packed_size(&n.m);
    uint8_t *buf = malloc(len);
    onnx__model_proto__pack(&n.m, buf);
    FeModel fm;
    Status st = ST_INIT;
    ck_assert_msg(fe_load_buffer("net.onnx", buf, len, &fm, &st), "%s", st.msg);
    free(buf);
    OnnxImportOptions o = {.file = "net.onnx"};
    ck_assert_ptr_null(onnx_import(fm.onnx, &o, &st));
    ck_assert_msg(strstr(st.msg, "graph input 'x' has a symbolic dim 0 ('batch')") && strstr(st.msg, "--feed x:DIMS"),
                  "%s", st.msg);
    /* with the shape given it imports (x stays a feed) */
    Status st2 = ST_INIT;
    TfFeedSpec spec = {.name = "x", .has_shape = true, .shape = ir_shape_make(4, (int64_t[]){2, 1, 3, 3})};
    o.feeds = &spec;
    o.n_feeds = 1;
    IrGraph *g = onnx_import(fm.onnx, &o, &st2);
    ck_assert_msg(g != NULL, "%s", st2.msg);
    ck_assert_int_eq(g->n_feeds, 1);
    ck_assert_int_eq(ir_value_type(g->fetches[0].value)->shape.dims[0], 2); /* y is [2,2] */
    ir_graph_free(g);
    fe_model_free(&fm);
}
END_TEST

/* ---- Resize, 16-bit floats, BitShift, MaxPool (values by hand) ---- */

/* An initializer of any type from raw little-endian bytes. */
static void init_raw(Net *n, int i, const char *name, int64_t *dims, size_t nd, int type, const void *v,
                     size_t bytes)
{
    onnx__tensor_proto__init(&n->inits[i]);
    n->inits[i].name = (char *)name;
    n->inits[i].dims = dims;
    n->inits[i].n_dims = nd;
    n->inits[i].has_data_type = 1;
    n->inits[i].data_type = type;
    n->inits[i].has_raw_data = 1;
    n->inits[i].raw_data.data = (uint8_t *)v;
    n->inits[i].raw_data.len = bytes;
    n->pinits[i] = &n->inits[i];
}

static void attr_s(Net *n, int a, int nodei, const char *name, const char *v)
{
    onnx__attribute_proto__init(&n->attrs[a]);
    n->attrs[a].name = (char *)name;
    n->attrs[a].has_type = 1;
    n->attrs[a].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    n->attrs[a].has_s = 1;
    n->attrs[a].s.data = (uint8_t *)v;
    n->attrs[a].s.len = strlen(v);
    n->pattrs[a] = &n->attrs[a];
    n->nodes[nodei].attribute = &n->pattrs[a - (int)n->nodes[nodei].n_attribute];
    n->nodes[nodei].n_attribute++;
}

static void attr_i(Net *n, int a, int nodei, const char *name, int64_t v)
{
    onnx__attribute_proto__init(&n->attrs[a]);
    n->attrs[a].name = (char *)name;
    n->attrs[a].has_type = 1;
    n->attrs[a].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    n->attrs[a].has_i = 1;
    n->attrs[a].i = v;
    n->pattrs[a] = &n->attrs[a];
    n->nodes[nodei].attribute = &n->pattrs[a - (int)n->nodes[nodei].n_attribute];
    n->nodes[nodei].n_attribute++;
}

static void attr_is(Net *n, int a, int nodei, const char *name, int64_t *v, size_t nv)
{
    onnx__attribute_proto__init(&n->attrs[a]);
    n->attrs[a].name = (char *)name;
    n->attrs[a].has_type = 1;
    n->attrs[a].type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    n->attrs[a].ints = v;
    n->attrs[a].n_ints = nv;
    n->pattrs[a] = &n->attrs[a];
    n->nodes[nodei].attribute = &n->pattrs[a - (int)n->nodes[nodei].n_attribute];
    n->nodes[nodei].n_attribute++;
}

/* The fetch as a folded constant of n values (float32). */
static const float *fetched_f32(IrGraph *g, int n)
{
    IrValue y = g->fetches[0].value;
    ck_assert_msg(ir_is_const(y), "the fetch must fold");
    ck_assert_int_eq(ir_value_type(y)->dtype, TCRT_F32);
    ck_assert_int_eq(ir_shape_count(&ir_value_type(y)->shape), n);
    return y.node->data;
}

static char *ins_rs[] = {"x", "", "scales"}, *outs_rs[] = {"y"};
static int64_t dims_sc[] = {4};

/* x = 1..9 as 1x1x3x3; linear, half_pixel (default), scales [1,1,1,2]:
 * columns 0..5 map to x = (j + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25,
 * 1.75, 2.25; taps floor(x), floor(x)+1 clamped to [0,2]; row [1,2,3]
 * gives 1, 0.75*1+0.25*2, 0.25*1+0.75*2, 0.75*2+0.25*3, 0.25*2+0.75*3, 3. */
START_TEST(test_resize_linear_half_pixel)
{
    static float sc[] = {1, 1, 1, 2};
    Net n;
    build(&n);
    node(&n, 0, "Resize", ins_rs, 3, outs_rs);
    attr_s(&n, 0, 0, "mode", "linear");
    n.g.n_node = 1;
    init(&n, 0, "scales", dims_sc, 1, sc, 4);
    n.g.n_initializer = 1;
    Status st = ST_INIT;
    FeFormat fmt;
    IrGraph *g = import(&n, &st, &fmt);
    ck_assert_msg(g != NULL, "%s", st.msg);
    const float *v = fetched_f32(g, 18);
    const float row[6] = {1, 1.25f, 1.75f, 2.25f, 2.75f, 3};
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 6; j++)
            ck_assert_msg(fabsf(v[r * 6 + j] - (row[j] + 3 * r)) < 1e-6f, "y[%d][%d] = %g", r, j, v[r * 6 + j]);
    ir_graph_free(g);
}
END_TEST

/* nearest, asymmetric, nearest_mode ceil, scales [1,1,2,1]: output rows
 * j = 0..5 read x = j / 2 = 0, 0.5, 1, 1.5, 2, 2.5 rounded up (an integer
 * stays) and clamped: input rows 0, 1, 1, 2, 2, 2. */
START_TEST(test_resize_nearest_ceil)
{
    static float sc[] = {1, 1, 2, 1};
    Net n;
    build(&n);
    node(&n, 0, "Resize", ins_rs, 3, outs_rs);
    attr_s(&n, 0, 0, "coordinate_transformation_mode", "asymmetric");
    attr_s(&n, 1, 0, "nearest_mode", "ceil");
    n.g.n_node = 1;
    init(&n, 0, "scales", dims_sc, 1, sc, 4);
    n.g.n_initializer = 1;
    Status st = ST_INIT;
    FeFormat fmt;
    IrGraph *g = import(&n, &st, &fmt);
    ck_assert_msg(g != NULL, "%s", st.msg);
    const float *v = fetched_f32(g, 18);
    const int src[6] = {0, 1, 1, 2, 2, 2};
    for (int r = 0; r < 6; r++)
        for (int j = 0; j < 3; j++)
            ck_assert_msg(v[r * 3 + j] == (float)(src[r] * 3 + j + 1), "y[%d][%d] = %g", r, j, v[r * 3 + j]);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_resize_bad_mode)
{
    static float sc[] = {1, 1, 2, 1};
    Net n;
    build(&n);
    node(&n, 0, "Resize", ins_rs, 3, outs_rs);
    attr_s(&n, 0, 0, "mode", "bicubic");
    n.g.n_node = 1;
    init(&n, 0, "scales", dims_sc, 1, sc, 4);
    n.g.n_initializer = 1;
    Status st = ST_INIT;
    FeFormat fmt;
    ck_assert_ptr_null(import(&n, &st, &fmt));
    ck_assert_msg(strstr(st.msg, "net.onnx: node 'Resize' (Resize): attribute 'mode': unknown mode 'bicubic'"),
                  "%s", st.msg);
    /* and an unknown nearest_mode */
    Net n2;
    build(&n2);
    node(&n2, 0, "Resize", ins_rs, 3, outs_rs);
    attr_s(&n2, 0, 0, "nearest_mode", "round_half_up");
    n2.g.n_node = 1;
    init(&n2, 0, "scales", dims_sc, 1, sc, 4);
    n2.g.n_initializer = 1;
    Status st2 = ST_INIT;
    ck_assert_ptr_null(import(&n2, &st2, &fmt));
    ck_assert_msg(strstr(st2.msg, "node 'Resize' (Resize): attribute 'nearest_mode': unknown mode 'round_half_up'"),
                  "%s", st2.msg);
}
END_TEST

static char *ins_cast[] = {"v"}, *outs_cast[] = {"y"};
static int64_t dims_v9[] = {9};

/* Cast float -> FLOAT16: the result is the u16 bit pattern (folded) under
 * the reinterpreting cast.  Round to nearest even: 2049 is halfway between
 * 2048 and 2050 (spacing 2 there) -> 2048 (even mantissa) 0x6800; 2051 ->
 * 2052 0x6802; 65520 is halfway between 65504 (max, odd mantissa 0x3ff) and
 * 2^16 -> infinity 0x7c00; 65519 -> 65504 0x7bff; -1 -> 0xbc00; 2^-24 (the
 * smallest subnormal) 0x0001; 2^-25 halfway to 0 -> 0; 0.1 = 1.6 * 2^-4:
 * exponent 11, mantissa round(0.6 * 1024 = 614.4) = 614 = 0x266 -> 0x2e66;
 * NaN -> 0x7e00. */
START_TEST(test_cast_float16)
{
    static float v[9] = {2049, 2051, 65520, 65519, -1, 5.9604644775390625e-08f, 2.98023223876953125e-08f, 0.1f,
                         NAN};
    Net n;
    build(&n);
    node(&n, 0, "Cast", ins_cast, 1, outs_cast);
    attr_i(&n, 0, 0, "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16);
    n.g.n_node = 1;
    init(&n, 0, "v", dims_v9, 1, v, 9);
    n.g.n_initializer = 1;
    Status st = ST_INIT;
    FeFormat fmt;
    IrGraph *g = import(&n, &st, &fmt);
    ck_assert_msg(g != NULL, "%s", st.msg);
    IrValue y = g->fetches[0].value;
    ck_assert_int_eq(ir_value_type(y)->dtype, TCRT_F16);
    ck_assert_int_eq(y.node->op, OP_CAST);
    IrValue bits = y.node->inputs[0];
    ck_assert_msg(ir_is_const(bits) && ir_value_type(bits)->dtype == TCRT_U16, "the bits must fold to u16");
    const uint16_t want[9] = {0x6800, 0x6802, 0x7c00, 0x7bff, 0xbc00, 0x0001, 0x0000, 0x2e66, 0x7e00};
    const uint16_t *b = bits.node->data;
    for (int k = 0; k < 9; k++)
        ck_assert_msg(b[k] == want[k], "bits[%d] = 0x%04x, want 0x%04x", k, b[k], want[k]);
    ir_graph_free(g);
}
END_TEST

/* FLOAT16 / BFLOAT16 initializers cast to float (exact, folded). */
START_TEST(test_cast_from_16bit)
{
    /* f16: 1, -2, 65504 (max), 2^-24, 2^-14 (smallest normal), inf, -inf,
     * 0x3555 = (1 + 0x155/1024) * 2^-2 = 0.333251953125, -0 */
    static uint16_t h[9] = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x0400, 0x7c00, 0xfc00, 0x3555, 0x8000};
    /* bf16 = the high half of a float32: 0x3f80 = 1, 0xc049 = -3.140625,
     * 0x0080 = 2^-126, 0x7f7f = (2 - 2^-7) * 2^127 */
    static uint16_t bf[4] = {0x3f80, 0xc049, 0x0080, 0x7f7f};
    static int64_t dims_bf[] = {4};
    const float want[9] = {1, -2, 65504, 5.9604644775390625e-08f, 6.103515625e-05f, INFINITY, -INFINITY,
                           0.333251953125f, -0.0f};
    const float want_bf[4] = {1, -3.140625f, 1.1754943508222875e-38f, 3.3895313892515355e38f};
    for (int pass = 0; pass < 2; pass++) {
        Net n;
        build(&n);
        node(&n, 0, "Cast", ins_cast, 1, outs_cast);
        attr_i(&n, 0, 0, "to", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT);
        n.g.n_node = 1;
        if (pass == 0)
            init_raw(&n, 0, "v", dims_v9, 1, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16, h, sizeof h);
        else
            init_raw(&n, 0, "v", dims_bf, 1, ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16, bf, sizeof bf);
        n.g.n_initializer = 1;
        Status st = ST_INIT;
        FeFormat fmt;
        IrGraph *g = import(&n, &st, &fmt);
        ck_assert_msg(g != NULL, "%s", st.msg);
        const float *v = fetched_f32(g, pass ? 4 : 9);
        for (int k = 0; k < (pass ? 4 : 9); k++) {
            float w = pass ? want_bf[k] : want[k];
            ck_assert_msg(v[k] == w && signbit(v[k]) == signbit(w), "pass %d: y[%d] = %g, want %g", pass, k,
                          v[k], w);
        }
        ir_graph_free(g);
    }
}
END_TEST

static char *ins_bs[] = {"a", "s"}, *outs_bs[] = {"y"};
static int64_t dims_4[] = {4};

/* uint8 BitShift: [1, 3, 255, 16] << [1, 2, 1, 9] = [2, 12, 510 mod 256 =
 * 254, 0 (shift past the width)]; >> gives [0, 0, 127, 0]. */
START_TEST(test_bitshift_uint8)
{
    static uint8_t a[4] = {1, 3, 255, 16}, sh[4] = {1, 2, 1, 9};
    const uint8_t want[2][4] = {{2, 12, 254, 0}, {0, 0, 127, 0}};
    for (int right = 0; right < 2; right++) {
        Net n;
        build(&n);
        node(&n, 0, "BitShift", ins_bs, 2, outs_bs);
        attr_s(&n, 0, 0, "direction", right ? "RIGHT" : "LEFT");
        n.g.n_node = 1;
        init_raw(&n, 0, "a", dims_4, 1, ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, a, 4);
        init_raw(&n, 1, "s", dims_4, 1, ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, sh, 4);
        n.g.n_initializer = 2;
        Status st = ST_INIT;
        FeFormat fmt;
        IrGraph *g = import(&n, &st, &fmt);
        ck_assert_msg(g != NULL, "%s", st.msg);
        IrValue y = g->fetches[0].value;
        ck_assert(ir_is_const(y) && ir_value_type(y)->dtype == TCRT_U8);
        const uint8_t *v = y.node->data;
        for (int k = 0; k < 4; k++)
            ck_assert_msg(v[k] == want[right][k], "%s: y[%d] = %d", right ? "RIGHT" : "LEFT", k, v[k]);
        ir_graph_free(g);
    }
    /* a direction that is neither */
    Net n;
    build(&n);
    node(&n, 0, "BitShift", ins_bs, 2, outs_bs);
    attr_s(&n, 0, 0, "direction", "UP");
    n.g.n_node = 1;
    init_raw(&n, 0, "a", dims_4, 1, ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, a, 4);
    init_raw(&n, 1, "s", dims_4, 1, ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, sh, 4);
    n.g.n_initializer = 2;
    Status st = ST_INIT;
    FeFormat fmt;
    ck_assert_ptr_null(import(&n, &st, &fmt));
    ck_assert_msg(strstr(st.msg, "node 'BitShift' (BitShift): attribute 'direction' must be \"LEFT\" or \"RIGHT\", "
                                 "got 'UP'"), "%s", st.msg);
}
END_TEST

static char *ins_mp[] = {"x"}, *outs_mp[] = {"pooled", "idx"};

/* MaxPool on x = 1..9 (3x3), kernel 2x2, dilations [1, 2]: windows cover
 * rows (r, r+1) and columns (0, 2), so H out 2, W out 1: maxima x[1][2] = 6
 * and x[2][2] = 9.  Indices with storage_order 1 (column-major spatial):
 * (1,2) -> 2*3 + 1 = 7, (2,2) -> 8; with storage_order 0: 5, 8. */
START_TEST(test_maxpool_dilated_indices)
{
    static int64_t k[] = {2, 2}, dil[] = {1, 2};
    for (int order = 0; order < 2; order++) {
        Net n;
        build(&n);
        node(&n, 0, "MaxPool", ins_mp, 1, outs_mp);
        n.nodes[0].n_output = 2;
        attr_is(&n, 0, 0, "kernel_shape", k, 2);
        attr_is(&n, 1, 0, "dilations", dil, 2);
        attr_i(&n, 2, 0, "storage_order", order);
        n.g.n_node = 1;
        n.g.n_initializer = 0;
        for (int out = 0; out < 2; out++) {
            n.vout.name = out ? "idx" : "pooled";
            Status st = ST_INIT;
            FeFormat fmt;
            IrGraph *g = import(&n, &st, &fmt);
            ck_assert_msg(g != NULL, "%s", st.msg);
            IrValue y = g->fetches[0].value;
            ck_assert(ir_is_const(y));
            ck_assert_int_eq(ir_shape_count(&ir_value_type(y)->shape), 2);
            if (out) {
                ck_assert_int_eq(ir_value_type(y)->dtype, TCRT_I64);
                const int64_t *v = y.node->data;
                ck_assert_int_eq(v[0], order ? 7 : 5);
                ck_assert_int_eq(v[1], 8);
            } else {
                const float *v = y.node->data;
                ck_assert(v[0] == 6 && v[1] == 9);
            }
            ir_graph_free(g);
        }
    }
}
END_TEST

/* ---- IrShape locals built field by field (pool slices, 1-D MatMul) ---- */

/* Fills a stretch of stack with nonzero bytes, so that a local the
 * lowering then leaves uninitialized (an IrShape's has_dyn) is garbage
 * rather than a lucky zero: UBSan reports the bool load, and without it the
 * value is taken for a data-dependent size. */
static __attribute__((noinline)) void dirty_stack(void)
{
    volatile unsigned char junk[65536];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = 0x65;
}

/* n imported on a dirtied stack (dirty_stack); the import must succeed. */
static IrGraph *import_dirty(Net *n)
{
    Status st = ST_INIT;
    FeFormat fmt;
    dirty_stack();
    IrGraph *g = import(n, &st, &fmt);
    ck_assert_msg(g != NULL, "%s", st.msg);
    return g;
}

/* The fetch folded to n floats with the given dims and a static shape. */
static const float *fetched_static(IrGraph *g, int rank, const int64_t *dims, int n)
{
    const float *v = fetched_f32(g, n);
    const IrShape *s = &ir_value_type(g->fetches[0].value)->shape;
    ck_assert(!s->has_dyn);
    ck_assert_int_eq(s->rank, rank);
    for (int d = 0; d < rank; d++)
        ck_assert_int_eq(s->dims[d], dims[d]);
    return v;
}

static char *ins_ap[] = {"x"}, *outs_ap[] = {"y"};

/* Dilated pooling (the slice-per-offset path) on x = 1..9 (3x3), kernel
 * 2x2, strides 1, dilations [1, 2], auto_pad SAME_LOWER: output 3x3; rows
 * span 2, total pad 1, at the begin; columns span 3, total pad 2, one each
 * side.  Window (i, j) reads rows {i-1, i} and columns {j-1, j+1} that lie
 * inside the input.  MaxPool: [2, 3, 2; 5, 6, 5; 8, 9, 8]; AveragePool
 * (pads not counted): row 0 [2, (1+3)/2, 2], row 1 [(2+5)/2, (1+3+4+6)/4,
 * (2+5)/2] = 3.5 each, row 2 [(5+8)/2, (4+6+7+9)/4, (5+8)/2] = 6.5 each. */
START_TEST(test_pool_dilated_same_lower)
{
    static int64_t k[] = {2, 2}, dil[] = {1, 2};
    const float want[2][9] = {{2, 3, 2, 5, 6, 5, 8, 9, 8}, {2, 2, 2, 3.5f, 3.5f, 3.5f, 6.5f, 6.5f, 6.5f}};
    for (int avg = 0; avg < 2; avg++) {
        Net n;
        build(&n);
        node(&n, 0, avg ? "AveragePool" : "MaxPool", ins_ap, 1, outs_ap);
        attr_is(&n, 0, 0, "kernel_shape", k, 2);
        attr_is(&n, 1, 0, "dilations", dil, 2);
        attr_s(&n, 2, 0, "auto_pad", "SAME_LOWER");
        n.g.n_node = 1;
        n.g.n_initializer = 0;
        IrGraph *g = import_dirty(&n);
        const float *v = fetched_static(g, 4, (int64_t[]){1, 1, 3, 3}, 9);
        for (int e = 0; e < 9; e++)
            ck_assert_msg(v[e] == want[avg][e], "%s: y[%d] = %g, want %g", avg ? "AveragePool" : "MaxPool", e,
                          v[e], want[avg][e]);
        ir_graph_free(g);
    }
}
END_TEST

static char *ins_mv[] = {"x", "v"}, *outs_mv[] = {"y"};
static int64_t dims_3[] = {3};

/* MatMul of x = 1..9 ([1,1,3,3]) by the vector v = [1, 2, 3]: the vector's
 * axis is dropped, [1,1,3]; rows 1+4+9 = 14, 4+10+18 = 32, 7+16+27 = 50. */
START_TEST(test_matmul_vector)
{
    static float vv[] = {1, 2, 3};
    Net n;
    build(&n);
    node(&n, 0, "MatMul", ins_mv, 2, outs_mv);
    n.g.n_node = 1;
    init(&n, 0, "v", dims_3, 1, vv, 3);
    n.g.n_initializer = 1;
    IrGraph *g = import_dirty(&n);
    const float *v = fetched_static(g, 3, (int64_t[]){1, 1, 3}, 3);
    ck_assert(v[0] == 14 && v[1] == 32 && v[2] == 50);
    ir_graph_free(g);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("onnx_import");
    TCase *tc = tcase_create("import");
    tcase_add_test(tc, test_conv_relu_gemm);
    tcase_add_test(tc, test_onehot);
    tcase_add_test(tc, test_missing_initializer);
    tcase_add_test(tc, test_unknown_ops_all_reported);
    tcase_add_test(tc, test_external_data);
    tcase_add_test(tc, test_bad_opset);
    tcase_add_test(tc, test_corrupt_model);
    tcase_add_test(tc, test_info);
    tcase_add_test(tc, test_symbolic_dim_needs_feed);
    tcase_add_test(tc, test_resize_linear_half_pixel);
    tcase_add_test(tc, test_resize_nearest_ceil);
    tcase_add_test(tc, test_resize_bad_mode);
    tcase_add_test(tc, test_cast_float16);
    tcase_add_test(tc, test_cast_from_16bit);
    tcase_add_test(tc, test_bitshift_uint8);
    tcase_add_test(tc, test_maxpool_dilated_indices);
    tcase_add_test(tc, test_pool_dilated_same_lower);
    tcase_add_test(tc, test_matmul_vector);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
