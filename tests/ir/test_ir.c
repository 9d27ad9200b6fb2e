/* tests/ir/test_ir.c - Check suite for ir/.
 *
 * Hand-built graphs exercise the builder and shape rules (expected shapes
 * derived by hand in comments), error messages are pinned verbatim, folding
 * is checked against hand-computed values, the verifier against corrupted
 * graphs, the text form by print(parse(print(g))) == print(g), and the
 * arena by failing the Nth allocation for every N until a build succeeds.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ---- helpers ---- */

static IrType ty(tcrt_dtype dt, int rank, const int64_t *dims)
{
    IrType t = {dt, ir_shape_make(rank, dims)};
    return t;
}

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define TY(dt, ...) ty((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

static IrValue feed(IrGraph *g, const char *name, IrType t, Status *st)
{
    return ir_add_feed(g, name, &t, st);
}

static void assert_shape(IrValue v, int rank, const int64_t *dims)
{
    ck_assert_ptr_nonnull(v.node);
    const IrShape *s = &ir_value_type(v)->shape;
    char a[128], b[128];
    IrShape want = ir_shape_make(rank, dims);
    ck_assert_msg(ir_shape_eq(s, &want), "shape %s, expected %s", ir_shape_str(s, a, sizeof a),
                  ir_shape_str(&want, b, sizeof b));
}
#define ASSERT_SHAPE(v, ...) assert_shape((v), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

static char *print_to_string(const IrGraph *g, bool with_data)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ir_print(g, f, with_data);
    fclose(f);
    return buf;
}

static IrGraph *new_graph(Status *st)
{
    IrGraph *g = ir_graph_new(NULL, st);
    ck_assert_ptr_nonnull(g);
    return g;
}

/* ---- status ---- */

START_TEST(test_status)
{
    Status st = ST_INIT;
    ck_assert(st_ok(&st));
    ck_assert(!st_errorf(&st, ST_NOMEM, "first %d", 1));
    ck_assert(!st_errorf(&st, ST_ERROR, "second"));
    ck_assert_int_eq(st.code, ST_NOMEM);   /* first code wins */
    ck_assert_int_eq(st.n_errors, 2);
    ck_assert_str_eq(st.msg, "first 1\nsecond");
    st_prefix(&st, "model.pb");
    ck_assert_str_eq(st.msg, "model.pb: first 1\nmodel.pb: second");

    /* a huge message is cut, never overflows */
    Status big = ST_INIT;
    char line[1000];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = 0;
    for (int i = 0; i < 10; i++)
        st_errorf(&big, ST_ERROR, "%s", line);
    ck_assert_uint_lt(strlen(big.msg), sizeof big.msg);
    ck_assert_int_eq(big.n_errors, 10);
    st_prefix(&big, "a very long prefix to overflow the buffer:");
    ck_assert_uint_lt(strlen(big.msg), sizeof big.msg);
}
END_TEST

/* ---- arena ---- */

START_TEST(test_arena)
{
    Arena ar;
    arena_init(&ar, NULL);
    for (int i = 1; i < 300; i++) {
        uint8_t *p = arena_alloc(&ar, (size_t)i * 37);
        ck_assert_ptr_nonnull(p);
        size_t align = (size_t)i * 37 >= 4096 ? 64 : 16;
        ck_assert_uint_eq((uintptr_t)p % align, 0);
        int nonzero = 0;   /* one assertion per block: Check logs every passing assert */
        for (int k = 0; k < i * 37; k++)
            nonzero += p[k] != 0;
        ck_assert_int_eq(nonzero, 0);
        memset(p, 0xab, (size_t)i * 37);
    }
    void *big = arena_alloc(&ar, 1 << 20);  /* larger than a block */
    ck_assert_ptr_nonnull(big);
    ck_assert_uint_eq((uintptr_t)big % 64, 0);
    void *al = arena_alloc_align(&ar, 3, 256);
    ck_assert_uint_eq((uintptr_t)al % 256, 0);
    char *s = arena_strdup(&ar, "hello");
    ck_assert_str_eq(s, "hello");
    arena_reset(&ar);
    ck_assert_ptr_null(ar.head);

    xx_fail_alloc_set(2);
    void *a = xx_malloc(8);
    void *b = xx_malloc(8);   /* the second one fails */
    void *c = xx_malloc(8);
    xx_fail_alloc_set(0);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(c);
    xx_free(a);
    xx_free(c);
}
END_TEST

/* ---- op table ---- */

START_TEST(test_op_table)
{
    for (int i = 0; i < OP_COUNT; i++) {
        const OpInfo *info = ir_op_info((Op)i);
        ck_assert_ptr_nonnull(info->name);
        ck_assert_ptr_nonnull(info->shape_rule);
        Op back;
        ck_assert(ir_op_from_name(info->name, &back));
        ck_assert_int_eq(back, i);
        if (info->kind == K_ELEM) {
            ck_assert_ptr_nonnull(info->c_expr);
            ck_assert_ptr_null(info->ref_kernel);
        } else {
            ck_assert_ptr_null(info->c_expr);
        }
        ck_assert((info->ref_kernel == NULL) == (info->ref_kernel_name == NULL));
    }
    ck_assert_str_eq(ir_op_info(OP_ADD)->c_expr, "((A) + (B))");
    ck_assert_str_eq(ir_op_info(OP_MATMUL)->ref_kernel_name, "tcrt_ref_matmul");
    ck_assert(ir_op_info(OP_MATMUL)->ref_kernel == tcrt_ref_matmul);
    ck_assert_ptr_null(ir_op_info(OP_CONST)->ref_kernel_name);
    ck_assert_str_eq(ir_op_name(OP_CONV2D), "conv2d");
    Op o;
    ck_assert(!ir_op_from_name("nosuchop", &o));
    ck_assert_ptr_null(ir_op_info(OP_COUNT));
}
END_TEST

/* ---- builder and shape rules ---- */

START_TEST(test_broadcast)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    IrValue a = feed(g, "a", TY(TCRT_F32, 2, 1, 3), &st);
    IrValue b = feed(g, "b", TY(TCRT_F32, 4, 3), &st);
    /* [2,1,3] + [4,3]: align right -> [2,4,3] */
    IrValue c = ir_binary(g, OP_ADD, a, b, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ASSERT_SHAPE(c, 2, 4, 3);
    ck_assert_int_eq(ir_value_type(c)->dtype, TCRT_F32);
    /* comparisons give bool */
    IrValue d = ir_binary(g, OP_LT, a, b, &st);
    ck_assert_int_eq(ir_value_type(d)->dtype, TCRT_BOOL);
    /* select: cond bool [2,4,3], a [2,1,3], b [4,3] -> [2,4,3] */
    IrValue in3[3] = {d, a, b};
    IrValue e = ir_emit1(g, OP_SELECT, in3, 3, NULL, NULL, &st);
    ASSERT_SHAPE(e, 2, 4, 3);
    ck_assert_msg(st_ok(&st), "%s", st.msg);

    IrValue x = feed(g, "x", TY(TCRT_F32, 2), &st);
    IrValue y = feed(g, "y", TY(TCRT_F32, 3), &st);
    ir_graph_set_origin(g, "x_y_sum", "Add");
    IrValue s = ir_binary(g, OP_ADD, x, y, &st);
    ck_assert_ptr_null(s.node);
    ck_assert_int_eq(st.code, ST_ERROR);
    ck_assert_str_eq(st.msg, "node 'x_y_sum' (Add): shapes [2] and [3] do not broadcast");
    ir_graph_free(g);
}
END_TEST

START_TEST(test_dtype_errors)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    IrValue f = feed(g, "f", TY(TCRT_F32, 2), &st);
    IrValue i = feed(g, "i", TY(TCRT_I32, 2), &st);
    ir_graph_set_origin(g, "mix", "Mul");
    ck_assert_ptr_null(ir_binary(g, OP_MUL, f, i, &st).node);
    ck_assert_str_eq(st.msg, "node 'mix' (Mul): input dtypes float32 and int32 differ");

    Status st2 = ST_INIT;
    ir_graph_set_origin(g, "e", "Exp");
    ck_assert_ptr_null(ir_unary(g, OP_EXP, i, &st2).node);
    ck_assert_str_eq(st2.msg, "node 'e' (Exp): input 0 must be float32 or float64, got int32");

    Status st3 = ST_INIT;
    ir_graph_set_origin(g, "s", "Select");
    IrValue in3[3] = {i, f, f};
    ck_assert_ptr_null(ir_emit(g, OP_SELECT, in3, 3, NULL, NULL, &st3));
    ck_assert_str_eq(st3.msg, "node 's' (Select): select condition must be bool, got int32");

    Status st4 = ST_INIT;
    ir_graph_set_origin(g, "a", "AddN");
    ck_assert_ptr_null(ir_emit(g, OP_ADD, &f, 1, NULL, NULL, &st4));
    ck_assert_str_eq(st4.msg, "node 'a' (AddN): add takes 2 inputs, got 1");

    Status st5 = ST_INIT;
    ck_assert_ptr_null(ir_emit(g, OP_CONCAT, NULL, 0, NULL, NULL, &st5));
    ck_assert(!st_ok(&st5));

    /* argmax needs a given int dtype */
    Status st6 = ST_INIT;
    ck_assert_ptr_null(ir_emit(g, OP_ARGMAX, &f, 1, NULL, NULL, &st6));
    ck_assert(!st_ok(&st6));
    IrType t64 = TY(TCRT_I64, 0);
    Status st7 = ST_INIT;
    IrValue am = ir_emit1(g, OP_ARGMAX, &f, 1, NULL, &t64, &st7);
    ck_assert_msg(st_ok(&st7), "%s", st7.msg);
    ck_assert_int_eq(ir_value_type(am)->dtype, TCRT_I64);
    ck_assert_int_eq(ir_value_type(am)->shape.rank, 0);
    /* undefined inputs after an error: NULL, no crash, no extra message */
    ck_assert_ptr_null(ir_binary(g, OP_ADD, (IrValue){NULL, 0}, f, &st).node);
    ck_assert_int_eq(st.n_errors, 1);
    ir_graph_free(g);
}
END_TEST

static IrValue conv(IrGraph *g, IrValue x, IrValue w, const int64_t *p10, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    for (int k = 0; k < 10; k++)
        p.i[k] = p10[k];
    IrValue in[2] = {x, w};
    return ir_emit1(g, OP_CONV2D, in, 2, &p, NULL, st);
}

START_TEST(test_conv2d_shapes)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    IrValue x = feed(g, "x", TY(TCRT_F32, 1, 224, 224, 3), &st);
    IrValue w = feed(g, "w", TY(TCRT_F32, 3, 3, 3, 32), &st);
    /* SAME, stride 2: out = ceil(224/2) = 112; total pad = max((112-1)*2+3-224, 0) = 1,
     * so top/left 0, bottom/right 1: (224+0+1-3)/2+1 = 112 */
    IrValue same = conv(g, x, w, DIMS(2, 2, 1, 1, 0, 0, 1, 1, 0, 0), &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ASSERT_SHAPE(same, 1, 112, 112, 32);
    /* VALID, stride 2: ceil((224-3+1)/2) = 111 */
    IrValue valid = conv(g, x, w, DIMS(2, 2, 1, 1, 0, 0, 0, 0, 0, 0), &st);
    ASSERT_SHAPE(valid, 1, 111, 111, 32);
    /* dilation 2, VALID, stride 1 on 10x10 with 3x3: effective 5x5 -> 10-5+1 = 6 */
    IrValue x2 = feed(g, "x2", TY(TCRT_F32, 1, 10, 10, 1), &st);
    IrValue w2 = feed(g, "w2", TY(TCRT_F32, 3, 3, 1, 1), &st);
    IrValue dil = conv(g, x2, w2, DIMS(1, 1, 2, 2, 0, 0, 0, 0, 0, 0), &st);
    ASSERT_SHAPE(dil, 1, 6, 6, 1);
    /* depthwise [3,3,4,2] on 4 channels: 4*2 = 8 out channels; SAME stride 1, pads 1 */
    IrValue x3 = feed(g, "x3", TY(TCRT_F32, 2, 8, 8, 4), &st);
    IrValue w3 = feed(g, "w3", TY(TCRT_F32, 3, 3, 4, 2), &st);
    IrValue dw = conv(g, x3, w3, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 1, 0), &st);
    ASSERT_SHAPE(dw, 2, 8, 8, 8);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    /* channel mismatch */
    ir_graph_set_origin(g, "c", "Conv2D");
    ck_assert_ptr_null(conv(g, x3, w, DIMS(1, 1, 1, 1, 0, 0, 0, 0, 0, 0), &st).node);
    ck_assert_str_eq(st.msg, "node 'c' (Conv2D): filter [3,3,3,32] expects 3 input channels, "
                             "input [2,8,8,4] has 4");
    /* a zero stride is an error, not a division by zero */
    Status st2 = ST_INIT;
    ck_assert_ptr_null(conv(g, x, w, DIMS(0, 1, 1, 1, 0, 0, 0, 0, 0, 0), &st2).node);
    ck_assert(!st_ok(&st2));
    /* pooling 3x3 stride 2 VALID on 112: (112-3)/2+1 = 55 */
    IrParams pp;
    memset(&pp, 0, sizeof pp);
    pp.i[TCRT_POOL_KH] = pp.i[TCRT_POOL_KW] = 3;
    pp.i[TCRT_POOL_SH] = pp.i[TCRT_POOL_SW] = 2;
    IrValue pool = ir_emit1(g, OP_MAXPOOL, &same, 1, &pp, NULL, &st2);
    ASSERT_SHAPE(pool, 1, 55, 55, 32);
    ir_graph_free(g);
}
END_TEST

static IrValue matmul(IrGraph *g, IrValue a, IrValue b, int ta, int tb, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_MM_TA] = ta;
    p.i[TCRT_MM_TB] = tb;
    IrValue in[2] = {a, b};
    return ir_emit1(g, OP_MATMUL, in, 2, &p, NULL, st);
}

START_TEST(test_matmul_shapes)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    IrValue a = feed(g, "a", TY(TCRT_F32, 2, 3), &st);
    IrValue b = feed(g, "b", TY(TCRT_F32, 3, 4), &st);
    ASSERT_SHAPE(matmul(g, a, b, 0, 0, &st), 2, 4);
    /* a^T: [3,2]^T = [2,3] -> needs b [3,N]; use at [3,2] */
    IrValue at = feed(g, "at", TY(TCRT_F32, 3, 2), &st);
    IrValue bt = feed(g, "bt", TY(TCRT_F32, 4, 3), &st);
    ASSERT_SHAPE(matmul(g, at, b, 1, 0, &st), 2, 4);      /* [2,3] x [3,4] */
    ASSERT_SHAPE(matmul(g, a, bt, 0, 1, &st), 2, 4);      /* [2,3] x [4,3]^T */
    ASSERT_SHAPE(matmul(g, at, bt, 1, 1, &st), 2, 4);
    /* batch: [5,1,2,3] x [4,3,6] -> batch [5,1] with [4] -> [5,4], then [2,6] */
    IrValue ba = feed(g, "ba", TY(TCRT_F32, 5, 1, 2, 3), &st);
    IrValue bb = feed(g, "bb", TY(TCRT_F32, 4, 3, 6), &st);
    ASSERT_SHAPE(matmul(g, ba, bb, 0, 0, &st), 5, 4, 2, 6);
    /* bias [4] */
    IrValue bias = feed(g, "bias", TY(TCRT_F32, 4), &st);
    IrValue in3[3] = {a, b, bias};
    ASSERT_SHAPE(ir_emit1(g, OP_MATMUL, in3, 3, NULL, NULL, &st), 2, 4);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ir_graph_set_origin(g, "mm", "MatMul");
    ck_assert_ptr_null(matmul(g, a, a, 0, 0, &st).node);
    ck_assert_str_eq(st.msg, "node 'mm' (MatMul): matmul shapes [2,3] and [2,3] do not match "
                             "(transpose_a=0, transpose_b=0): 3 != 2");
    ir_graph_free(g);
}
END_TEST

START_TEST(test_gather_and_movement)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    IrValue params = feed(g, "p", TY(TCRT_F32, 5, 6, 7), &st);
    IrValue idx = feed(g, "i", TY(TCRT_I32, 2, 3), &st);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_GA_AXIS] = 1;
    IrValue in[2] = {params, idx};
    /* params[:1] + indices + params[2:] = [5] + [2,3] + [7] */
    ASSERT_SHAPE(ir_emit1(g, OP_GATHER, in, 2, &p, NULL, &st), 5, 2, 3, 7);
    /* negative axis -1 -> 2: [5,6] + [2,3] */
    p.i[TCRT_GA_AXIS] = -1;
    IrNode *gn = ir_emit(g, OP_GATHER, in, 2, &p, NULL, &st);
    ASSERT_SHAPE(((IrValue){gn, 0}), 5, 6, 2, 3);
    ck_assert_int_eq(gn->p.i[TCRT_GA_AXIS], 2);    /* normalized for the kernel */
    /* batch_dims 1: params [2,6,7], indices [2,3], axis 1 -> [2] + [3] + [7] */
    IrValue p2 = feed(g, "p2", TY(TCRT_F32, 2, 6, 7), &st);
    IrValue in2[2] = {p2, idx};
    p.i[TCRT_GA_AXIS] = 1;
    p.i[TCRT_GA_BATCH] = 1;
    ASSERT_SHAPE(ir_emit1(g, OP_GATHER, in2, 2, &p, NULL, &st), 2, 3, 7);
    /* gather_nd: params [5,6,7], indices [4,2] -> [4] + [7] */
    IrValue ind = feed(g, "ind", TY(TCRT_I64, 4, 2), &st);
    IrValue in4[2] = {params, ind};
    ASSERT_SHAPE(ir_emit1(g, OP_GATHER_ND, in4, 2, NULL, NULL, &st), 4, 7);
    /* transpose perm [2,0,1] of [5,6,7] -> [7,5,6] */
    memset(&p, 0, sizeof p);
    p.i[0] = 2, p.i[1] = 0, p.i[2] = 1;
    ASSERT_SHAPE(ir_emit1(g, OP_TRANSPOSE, &params, 1, &p, NULL, &st), 7, 5, 6);
    /* pad [1,2] [0,0] [3,0] -> [5+3, 6, 7+3] */
    memset(&p, 0, sizeof p);
    p.i[0] = 1, p.i[1] = 2, p.i[4] = 3;
    ASSERT_SHAPE(ir_emit1(g, OP_PAD, &params, 1, &p, NULL, &st), 8, 6, 10);
    /* concat axis -2: [5,6,7] ++ [5,6,7] -> [5,12,7] */
    memset(&p, 0, sizeof p);
    p.i[0] = -2;
    IrValue cat[2] = {params, params};
    ASSERT_SHAPE(ir_emit1(g, OP_CONCAT, cat, 2, &p, NULL, &st), 5, 12, 7);
    /* reduce axes {0,2} keepdims -> [1,6,1]; without -> [6] */
    memset(&p, 0, sizeof p);
    p.i[0] = 5, p.i[1] = 1;
    ASSERT_SHAPE(ir_emit1(g, OP_REDUCE_SUM, &params, 1, &p, NULL, &st), 1, 6, 1);
    p.i[1] = 0;
    ASSERT_SHAPE(ir_emit1(g, OP_REDUCE_MAX, &params, 1, &p, NULL, &st), 6);
    /* slice: begin 1, stride 2, count 3 on dim 0 of 5 -> elements 1,3 ... 1+2*2 = 5 is out */
    memset(&p, 0, sizeof p);
    for (int d = 0; d < 3; d++)
        p.i[TCRT_SL_STRIDE + d] = 1;
    p.i[TCRT_SL_BEGIN] = 1;
    p.i[TCRT_SL_STRIDE] = 2;
    IrType good = TY(TCRT_F32, 2, 6, 7);   /* 1, 3 */
    ASSERT_SHAPE(ir_emit1(g, OP_SLICE, &params, 1, &p, &good, &st), 2, 6, 7);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    IrType bad = TY(TCRT_F32, 3, 6, 7);    /* 1, 3, 5: 5 is out of [0,5) */
    ck_assert_ptr_null(ir_emit(g, OP_SLICE, &params, 1, &p, &bad, &st));
    ck_assert(!st_ok(&st));
    /* tile [5,6,7] -> [10,6,21]; broadcast [6,1] -> [5,6,7] */
    Status st2 = ST_INIT;
    IrType tt = TY(TCRT_F32, 10, 6, 21);
    ASSERT_SHAPE(ir_emit1(g, OP_TILE, &params, 1, NULL, &tt, &st2), 10, 6, 21);
    IrValue col = feed(g, "col", TY(TCRT_F32, 6, 1), &st2);
    IrType bt = TY(TCRT_F32, 5, 6, 7);
    ASSERT_SHAPE(ir_emit1(g, OP_BROADCAST, &col, 1, NULL, &bt, &st2), 5, 6, 7);
    ck_assert_msg(st_ok(&st2), "%s", st2.msg);
    /* topk k=3 on [5,6,7] -> ([5,6,3] f32, [5,6,3] i32) */
    memset(&p, 0, sizeof p);
    p.i[0] = 3;
    IrNode *tk = ir_emit(g, OP_TOPK, &params, 1, &p, NULL, &st2);
    ck_assert_ptr_nonnull(tk);
    ck_assert_int_eq(tk->n_outputs, 2);
    ASSERT_SHAPE(((IrValue){tk, 1}), 5, 6, 3);
    ck_assert_int_eq(tk->out[1].type.dtype, TCRT_I32);
    ck_assert_int_eq(tk->out[0].type.dtype, TCRT_F32);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_reshape_error)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    IrValue x = feed(g, "x", TY(TCRT_F32, 2, 3), &st);
    IrShape ok = ir_shape_make(1, DIMS(6));
    ASSERT_SHAPE(ir_reshape(g, x, &ok, &st), 6);
    ir_graph_set_origin(g, "n", "Reshape");
    IrShape to = ir_shape_make(1, DIMS(4));
    ck_assert_ptr_null(ir_reshape(g, x, &to, &st).node);
    ck_assert_str_eq(st.msg, "node 'n' (Reshape): cannot reshape [2,3] (6 elements) to [4] (4 elements)");
    ir_graph_free(g);
}
END_TEST

START_TEST(test_overflow_dims)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    /* 2^40 * 2^40 overflows int64 arithmetic unless checked */
    ir_graph_set_origin(g, "huge", "Placeholder");
    IrType t = TY(TCRT_F32, (int64_t)1 << 40, (int64_t)1 << 40);
    ck_assert_ptr_null(ir_add_feed(g, "huge", &t, &st).node);
    ck_assert_str_eq(st.msg, "node 'huge' (Placeholder): output shape [1099511627776,1099511627776] "
                             "has too many elements");
    /* each dim below the limit, product 2^32 * 2^32 * 16 = 2^68 wraps int64 to 0
     * if multiplied unchecked (a bug found by the bad-input tests) */
    Status st1 = ST_INIT;
    IrType t1 = TY(TCRT_F32, (int64_t)1 << 32, (int64_t)1 << 32, 16);
    ck_assert_ptr_null(ir_add_feed(g, "wrap", &t1, &st1).node);
    ck_assert_str_eq(st1.msg, "node 'huge' (Placeholder): output shape [4294967296,4294967296,16] "
                              "has too many elements");
    /* broadcast product 2^16 * 2^19 = 2^35 > IR_MAX_ELEMENTS = 2^34 */
    Status st2 = ST_INIT;
    IrValue a = feed(g, "a", TY(TCRT_F32, 65536, 1), &st2);
    IrValue b = feed(g, "b", TY(TCRT_F32, 1, 524288), &st2);
    ck_assert_msg(st_ok(&st2), "%s", st2.msg);
    ir_graph_set_origin(g, "big", "Mul");
    ck_assert_ptr_null(ir_binary(g, OP_MUL, a, b, &st2).node);
    ck_assert_str_eq(st2.msg, "node 'big' (Mul): output shape [65536,524288] has too many elements");
    /* negative dims and rank > 8 */
    Status st3 = ST_INIT;
    IrType neg = TY(TCRT_F32, 2, -1);
    ck_assert_ptr_null(ir_add_feed(g, "neg", &neg, &st3).node);
    ck_assert(!st_ok(&st3));
    Status st4 = ST_INIT;
    IrShape s9 = ir_shape_make(8, DIMS(1, 1, 1, 1, 1, 1, 1, 1));
    s9.rank = 9;
    ck_assert_ptr_null(ir_const(g, TCRT_F32, &s9, NULL, &st4).node);
    ck_assert(!st_ok(&st4));
    ir_graph_free(g);
}
END_TEST

/* ---- folding ---- */

static IrValue cf32(IrGraph *g, int rank, const int64_t *dims, const float *v, Status *st)
{
    IrShape s = ir_shape_make(rank, dims);
    return ir_const(g, TCRT_F32, &s, v, st);
}

START_TEST(test_fold_elementwise)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    g->fold_on_build = true;
    /* [1,2,3] + [10] = [11,12,13] (broadcast of a 1-element vector) */
    IrValue a = cf32(g, 1, DIMS(3), (const float[]){1, 2, 3}, &st);
    IrValue b = cf32(g, 1, DIMS(1), (const float[]){10}, &st);
    IrValue c = ir_binary(g, OP_ADD, a, b, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_is_const(c));
    const float *cv = c.node->data;
    ck_assert_float_eq(cv[0], 11);
    ck_assert_float_eq(cv[1], 12);
    ck_assert_float_eq(cv[2], 13);
    ck_assert_uint_eq((uintptr_t)c.node->data % 64, 0);

    /* column [2,1] * row [3]: [[1],[2]] * [1,2,3] = [[1,2,3],[2,4,6]] */
    IrValue col = cf32(g, 2, DIMS(2, 1), (const float[]){1, 2}, &st);
    IrValue m = ir_binary(g, OP_MUL, col, a, &st);
    ASSERT_SHAPE(m, 2, 3);
    const float *mv = m.node->data;
    const float want_m[6] = {1, 2, 3, 2, 4, 6};
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(mv[i], want_m[i]);

    /* integer floordiv / floormod of negatives (Python semantics):
     * -7//2 = -4, 7//-2 = -4, -7//-2 = 3, 7//2 = 3;
     * -7%2 = 1, 7%-2 = -1, -7%-2 = -1, 7%2 = 1 */
    int64_t xs[4] = {-7, 7, -7, 7}, ys[4] = {2, -2, -2, 2};
    IrValue x = ir_const_i64s(g, TCRT_I32, xs, 4, &st);
    IrValue y = ir_const_i64s(g, TCRT_I32, ys, 4, &st);
    IrValue fd = ir_binary(g, OP_FLOORDIV, x, y, &st);
    IrValue fm = ir_binary(g, OP_FLOORMOD, x, y, &st);
    IrValue dv = ir_binary(g, OP_DIV, x, y, &st);   /* truncating: -3, -3, 3, 3 */
    int64_t out[4];
    int n;
    ck_assert(ir_const_ints(fd, out, 4, &n));
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(out[0], -4);
    ck_assert_int_eq(out[1], -4);
    ck_assert_int_eq(out[2], 3);
    ck_assert_int_eq(out[3], 3);
    ck_assert(ir_const_ints(fm, out, 4, &n));
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(out[1], -1);
    ck_assert_int_eq(out[2], -1);
    ck_assert_int_eq(out[3], 1);
    ck_assert(ir_const_ints(dv, out, 4, &n));
    ck_assert_int_eq(out[0], -3);
    ck_assert_int_eq(out[1], -3);
    ck_assert_int_eq(out[2], 3);
    ck_assert_int_eq(out[3], 3);
    /* integer division by zero gives 0, not a trap */
    IrValue z = ir_const_i64s(g, TCRT_I32, (const int64_t[]){0}, 1, &st);
    ck_assert(ir_const_ints(ir_binary(g, OP_DIV, x, z, &st), out, 4, &n));
    ck_assert_int_eq(out[0], 0);

    /* float floormod: -7.5 mod 2 = 0.5 (sign of the divisor) */
    IrValue fa = cf32(g, 0, NULL, (const float[]){-7.5f}, &st);
    IrValue fb = cf32(g, 0, NULL, (const float[]){2}, &st);
    double dvl;
    ck_assert(ir_const_scalar(ir_binary(g, OP_FLOORMOD, fa, fb, &st), &dvl));
    ck_assert_double_eq(dvl, 0.5);

    /* casts: f32 [-1.7, 0, 2.9, 0.5] -> i32 truncates [-1, 0, 2, 0]; -> bool [1, 0, 1, 1] */
    IrValue f = cf32(g, 1, DIMS(4), (const float[]){-1.7f, 0.0f, 2.9f, 0.5f}, &st);
    ck_assert(ir_const_ints(ir_cast(g, f, TCRT_I32, &st), out, 4, &n));
    ck_assert_int_eq(out[0], -1);
    ck_assert_int_eq(out[1], 0);
    ck_assert_int_eq(out[2], 2);
    ck_assert_int_eq(out[3], 0);
    IrValue fbool = ir_cast(g, f, TCRT_BOOL, &st);
    ck_assert_int_eq(ir_value_type(fbool)->dtype, TCRT_BOOL);
    ck_assert(ir_const_ints(fbool, out, 4, &n));
    ck_assert_int_eq(out[0], 1);
    ck_assert_int_eq(out[1], 0);
    ck_assert_int_eq(out[2], 1);
    ck_assert_int_eq(out[3], 1);
    /* int -> bool: [-7,7,-7,7] all non-zero */
    ck_assert(ir_const_ints(ir_cast(g, x, TCRT_BOOL, &st), out, 4, &n));
    ck_assert_int_eq(out[0] + out[1] + out[2] + out[3], 4);

    /* comparisons in the integer domain: 2^53+1 > 2^53 (equal as doubles) */
    int64_t big = (int64_t)1 << 53;
    IrValue b1 = ir_const_i64s(g, TCRT_I64, (const int64_t[]){big + 1}, 1, &st);
    IrValue b0 = ir_const_i64s(g, TCRT_I64, (const int64_t[]){big}, 1, &st);
    ck_assert(ir_const_ints(ir_binary(g, OP_GT, b1, b0, &st), out, 1, &n));
    ck_assert_int_eq(out[0], 1);
    /* unary float: sqrt(4) = 2, neg */
    IrValue four = cf32(g, 0, NULL, (const float[]){4}, &st);
    ck_assert(ir_const_scalar(ir_unary(g, OP_SQRT, four, &st), &dvl));
    ck_assert_double_eq(dvl, 2);
    ck_assert(ir_const_scalar(ir_unary(g, OP_NEG, four, &st), &dvl));
    ck_assert_double_eq(dvl, -4);
    /* select(cond=[1,0,1], a=[1,2,3], b=10) = [1,10,3] */
    IrShape s3 = ir_shape_make(1, DIMS(3));
    IrValue cond = ir_const(g, TCRT_BOOL, &s3, (const uint8_t[]){1, 0, 1}, &st);
    IrValue sin3[3] = {cond, a, b};
    IrValue sel = ir_emit1(g, OP_SELECT, sin3, 3, NULL, NULL, &st);
    ck_assert(ir_is_const(sel));
    const float *sv = sel.node->data;
    ck_assert_float_eq(sv[0], 1);
    ck_assert_float_eq(sv[1], 10);
    ck_assert_float_eq(sv[2], 3);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_verify(g, &st));
    ir_graph_free(g);
}
END_TEST

START_TEST(test_fold_eval_direct)
{
    /* ir_eval_elementwise on raw tensors: u8 [250] + [10] wraps to 4 (260 - 256) */
    uint8_t a[1] = {250}, b[1] = {10}, y[1] = {0};
    tcrt_tensor in[2] = {{a, TCRT_U8, 1, {1}}, {b, TCRT_U8, 1, {1}}};
    tcrt_tensor out = {y, TCRT_U8, 1, {1}};
    Status st = ST_INIT;
    ck_assert(ir_eval_elementwise(OP_ADD, in, 2, &out, &st));
    ck_assert_int_eq(y[0], 4);
    /* not an elementwise op */
    ck_assert(!ir_eval_elementwise(OP_MATMUL, in, 2, &out, &st));
}
END_TEST

START_TEST(test_fold_copy_and_kernel)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    g->fold_on_build = true;
    IrValue a = cf32(g, 2, DIMS(2, 3), (const float[]){1, 2, 3, 4, 5, 6}, &st);
    /* reshape folds by copying the bytes */
    IrShape s = ir_shape_make(1, DIMS(6));
    IrValue r = ir_reshape(g, a, &s, &st);
    ck_assert(ir_is_const(r));
    ck_assert_ptr_ne(r.node, a.node);
    ck_assert_int_eq(memcmp(r.node->data, a.node->data, 24), 0);
    /* transpose through tcrt_ref_transpose: [[1,2,3],[4,5,6]]^T = [[1,4],[2,5],[3,6]] */
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1;
    p.i[1] = 0;
    IrValue t = ir_emit1(g, OP_TRANSPOSE, &a, 1, &p, NULL, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ASSERT_SHAPE(t, 3, 2);
    ck_assert(ir_is_const(t));
    const float *tv = t.node->data;
    const float want[6] = {1, 4, 2, 5, 3, 6};
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(tv[i], want[i]);
    /* reduce_sum over axis 1: [6, 15] */
    memset(&p, 0, sizeof p);
    p.i[0] = 2;
    IrValue rs = ir_emit1(g, OP_REDUCE_SUM, &a, 1, &p, NULL, &st);
    ck_assert(ir_is_const(rs));
    ck_assert_float_eq(((const float *)rs.node->data)[0], 6);
    ck_assert_float_eq(((const float *)rs.node->data)[1], 15);
    /* effects never fold */
    IrParams rp;
    memset(&rp, 0, sizeof rp);
    IrType rt = TY(TCRT_F32, 4);
    IrValue rnd = ir_emit1(g, OP_RANDOM_UNIFORM, NULL, 0, &rp, &rt, &st);
    ck_assert_int_eq(rnd.node->op, OP_RANDOM_UNIFORM);
    IrValue out;
    ck_assert(!ir_fold_node(g, rnd.node, &out, &st));
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_fold_kernels_more)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    /* topk k=2 of [3,1,4,1,5]: values [5,4] at indices [4,2] (two outputs) */
    IrValue x = cf32(g, 1, DIMS(5), (const float[]){3, 1, 4, 1, 5}, &st);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_TOPK_K] = 2;
    p.i[TCRT_TOPK_SORTED] = 1;
    g->fold_on_build = true;
    IrNode *tk = ir_emit(g, OP_TOPK, &x, 1, &p, NULL, &st);
    ck_assert_int_eq(tk->op, OP_TOPK);     /* multi-output ops stay unfolded on build */
    IrValue outv[2];
    ck_assert_msg(ir_fold_node(g, tk, outv, &st), "%s", st.msg);
    ck_assert_float_eq(((const float *)outv[0].node->data)[0], 5);
    ck_assert_float_eq(((const float *)outv[0].node->data)[1], 4);
    ck_assert_int_eq(ir_value_type(outv[1])->dtype, TCRT_I32);
    ck_assert_int_eq(((const int32_t *)outv[1].node->data)[0], 4);
    ck_assert_int_eq(((const int32_t *)outv[1].node->data)[1], 2);
    /* conv2d of a 3x3 image of ones with a 2x2 filter of ones, VALID:
     * every output sums 4 ones -> [1,2,2,1] of 4 */
    float ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    IrValue img = cf32(g, 4, DIMS(1, 3, 3, 1), ones, &st);
    IrValue w = cf32(g, 4, DIMS(2, 2, 1, 1), ones, &st);
    IrValue c = conv(g, img, w, DIMS(1, 1, 1, 1, 0, 0, 0, 0, 0, 0), &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(ir_is_const(c));
    ASSERT_SHAPE(c, 1, 2, 2, 1);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(((const float *)c.node->data)[i], 4);
    /* gather with index 7 out of [0,5): the kernel refuses; the builder keeps
     * the node (it may sit in a branch that never runs), ir_fold_node reports it */
    IrValue bad = ir_const_i64s(g, TCRT_I32, (const int64_t[]){7}, 1, &st);
    IrValue gin[2] = {x, bad};
    memset(&p, 0, sizeof p);
    ir_graph_set_origin(g, "g", "GatherV2");
    IrNode *gn = ir_emit(g, OP_GATHER, gin, 2, &p, NULL, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert_int_eq(gn->op, OP_GATHER);
    ck_assert(!ir_fold_node(g, gn, outv, &st));
    ck_assert_str_eq(st.msg, "node 'g' (GatherV2): constant folding failed: runtime error (tcrt_ref_gather)");
    ir_graph_free(g);
}
END_TEST

/* ---- verifier ---- */

START_TEST(test_verify)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    IrValue a = feed(g, "a", TY(TCRT_F32, 2, 3), &st);
    IrValue b = feed(g, "b", TY(TCRT_F32, 3), &st);
    ir_graph_set_origin(g, "sum", "Add");
    IrValue c = ir_binary(g, OP_ADD, a, b, &st);
    ck_assert(ir_add_fetch(g, "sum:0", c, &st));
    ck_assert_msg(ir_verify(g, &st), "%s", st.msg);

    /* a wrong stored shape */
    c.node->out[0].type.shape.dims[1] = 4;
    Status s1 = ST_INIT;
    ck_assert(!ir_verify(g, &s1));
    ck_assert_str_eq(s1.msg, "node %2 'sum' (add): output 0 is f32[2,4], shape rule gives f32[2,3]");
    c.node->out[0].type.shape.dims[1] = 3;

    /* an input that comes later: swap the order of %1 and %2 */
    IrNode *t = g->nodes[1];
    g->nodes[1] = g->nodes[2];
    g->nodes[2] = t;
    Status s2 = ST_INIT;
    ck_assert(!ir_verify(g, &s2));
    ck_assert_str_eq(s2.msg, "node %2 'sum' (add): input 1 refers to node %1, which comes later");
    /* compact restores a topological order */
    ir_graph_compact(g);
    Status s3 = ST_INIT;
    ck_assert_msg(ir_verify(g, &s3), "%s", s3.msg);

    /* a dead input and a dead fetch */
    b.node->dead = true;
    Status s4 = ST_INIT;
    ck_assert(!ir_verify(g, &s4));
    ck_assert_ptr_nonnull(strstr(s4.msg, "input 1 refers to dead node %1"));
    b.node->dead = false;

    /* duplicate ids */
    int old = a.node->id;
    a.node->id = c.node->id;
    Status s5 = ST_INIT;
    ck_assert(!ir_verify(g, &s5));
    ck_assert_ptr_nonnull(strstr(s5.msg, "id is used twice"));
    a.node->id = old;
    ck_assert(ir_verify(g, &st));
    ir_graph_free(g);
}
END_TEST

START_TEST(test_uses_and_compact)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(&st);
    IrValue a = feed(g, "a", TY(TCRT_F32, 3), &st);
    IrValue e = ir_unary(g, OP_EXP, a, &st);
    IrValue s = ir_binary(g, OP_ADD, e, e, &st);
    ck_assert(ir_add_fetch(g, "s", s, &st));
    ck_assert_int_eq(ir_use_count(g, a.node), 1);
    ck_assert_int_eq(ir_use_count(g, e.node), 1);   /* one node, two uses */
    ck_assert_int_eq(ir_use_count(g, s.node), 1);   /* the fetch */
    /* replace exp(a) by a constant appended at the end: order breaks until compact */
    IrValue k = cf32(g, 1, DIMS(3), (const float[]){1, 2, 3}, &st);
    ir_replace_uses(g, e, k);
    e.node->dead = true;
    ck_assert_int_eq(ir_use_count(g, e.node), 0);
    ck_assert_int_eq(ir_use_count(g, k.node), 1);
    Status s1 = ST_INIT;
    ck_assert(!ir_verify(g, &s1));
    ir_graph_compact(g);
    ck_assert_int_eq(g->n_nodes, 3);
    ck_assert_int_eq(ir_graph_live_count(g), 3);
    ck_assert_msg(ir_verify(g, &st), "%s", st.msg);
    /* ids are unchanged */
    ck_assert_int_eq(s.node->id, 2);
    ck_assert_int_eq(k.node->id, 3);
    ir_graph_free(g);
}
END_TEST

/* ---- print / parse ---- */

static IrGraph *sample_graph(Status *st)
{
    IrGraph *g = new_graph(st);
    g->name = "sample";
    IrValue x = feed(g, "input:0", TY(TCRT_F32, 1, 224, 224, 3), st);
    ir_graph_set_origin(g, "MobilenetV2/Conv/weights", "Const");
    float wdata[3 * 3 * 3 * 32];
    for (int i = 0; i < 3 * 3 * 3 * 32; i++)
        wdata[i] = (float)i * 0.25f - 7.0f;
    IrValue w = cf32(g, 4, DIMS(3, 3, 3, 32), wdata, st);
    float bdata[32];
    for (int i = 0; i < 32; i++)
        bdata[i] = (float)i;
    IrValue b = cf32(g, 1, DIMS(32), bdata, st);
    ir_graph_set_origin(g, "MobilenetV2/Conv/Conv2D", "Conv2D");
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = 2;
    p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
    p.i[TCRT_CONV_PB] = p.i[TCRT_CONV_PR] = 1;
    p.i[TCRT_CONV_ACT] = TCRT_ACT_RELU6;
    IrValue in[3] = {x, w, b};
    IrValue c = ir_emit1(g, OP_CONV2D, in, 3, &p, NULL, st);
    ir_graph_set_origin(g, "leaky", "LeakyRelu");
    IrValue alpha = ir_const_scalar_f(g, TCRT_F32, 0.1, st);
    IrValue m = ir_binary(g, OP_MUL, c, alpha, st);
    IrValue mx = ir_binary(g, OP_MAX, c, m, st);
    ir_add_ctrl(g, mx.node, alpha.node, st);
    mx.node->device = "/device:CPU:0";
    ir_graph_set_origin(g, "top", "TopKV2");
    IrShape flat = ir_shape_make(2, DIMS(1, 112 * 112 * 32));
    IrValue r = ir_reshape(g, mx, &flat, st);
    IrParams tp;
    memset(&tp, 0, sizeof tp);
    tp.i[0] = 5;
    tp.i[1] = 1;
    tp.f[1] = 0.5;   /* not used by topk, but it must print and parse */
    IrNode *tk = ir_emit(g, OP_TOPK, &r, 1, &tp, NULL, st);
    ir_graph_set_origin(g, NULL, NULL);
    IrValue idx = ir_cast(g, (IrValue){tk, 1}, TCRT_I64, st);
    ir_add_fetch(g, "top:0", (IrValue){tk, 0}, st);
    ir_add_fetch(g, "top:1", idx, st);
    return g;
}

START_TEST(test_print_parse_roundtrip)
{
    Status st = ST_INIT;
    IrGraph *g = sample_graph(&st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert_msg(ir_verify(g, &st), "%s", st.msg);
    char *text = print_to_string(g, true);
    /* a pinned line: conv2d with its params and origin */
    ck_assert_msg(strstr(text, "%3 = conv2d(%0, %1, %2) {i=[2,2,1,1,0,0,1,1,0,2]} : f32[1,112,112,32]"
                               "  # MobilenetV2/Conv/Conv2D (Conv2D)\n"),
                  "%s", text);
    ck_assert_ptr_nonnull(strstr(text, "feed \"input:0\" %0\n"));
    ck_assert_ptr_nonnull(strstr(text, "fetch \"top:0\" %8\n"));
    ck_assert_ptr_nonnull(strstr(text, " = topk(%7) {i=[5,1], f=[0,0.5]} : (f32[1,5], i32[1,5])"));
    ck_assert_ptr_nonnull(strstr(text, "%6 = max(%3, %5, ^%4) : f32[1,112,112,32] device=\"/device:CPU:0\""));
    ck_assert_ptr_nonnull(strstr(text, "%4 = const() : f32[] = hex:cdcccc3d  # leaky (LeakyRelu)"));
    Status ps = ST_INIT;
    IrGraph *g2 = ir_parse(text, "sample.ir", &ps);
    ck_assert_msg(g2 != NULL, "%s", ps.msg);
    char *text2 = print_to_string(g2, true);
    ck_assert_str_eq(text, text2);
    ck_assert_int_eq(g2->next_id, g->next_id);
    ck_assert_int_eq(g2->n_feeds, 1);
    ck_assert_int_eq(g2->n_fetches, 2);
    ck_assert_str_eq(g2->name, "sample");
    /* the summary form names values */
    char *summary = print_to_string(g, false);
    ck_assert_ptr_nonnull(strstr(summary, "%4 = const() : f32[] = [0.1]"));
    ck_assert_ptr_nonnull(strstr(summary, "%2 = const() : f32[32] = [0, 1, 2, 3, 4, 5, ...] (32 elements)"));
    /* dot output mentions every node */
    char *dot = NULL;
    size_t dl = 0;
    FILE *df = open_memstream(&dot, &dl);
    ir_print_dot(g, df);
    fclose(df);
    ck_assert_ptr_nonnull(strstr(dot, "digraph \"sample\""));
    ck_assert_ptr_nonnull(strstr(dot, "n3 [label=\"%3 conv2d\\nf32[1,112,112,32]"));
    ck_assert_ptr_nonnull(strstr(dot, "n0 -> n3;"));
    free(dot);
    free(summary);
    free(text);
    free(text2);
    ir_graph_free(g2);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_parse_errors)
{
    Status st = ST_INIT;
    ck_assert_ptr_null(ir_parse("graph \"m\"\n%0 = frobnicate() : f32[2]\n", "bad.ir", &st));
    ck_assert_str_eq(st.msg, "bad.ir:2: unknown op 'frobnicate'");
    Status s2 = ST_INIT;
    ck_assert_ptr_null(ir_parse("%0 = arg() : f32[2]\n%1 = add(%0, %7) : f32[2]\n", "bad.ir", &s2));
    ck_assert_str_eq(s2.msg, "bad.ir:2: %7 is not defined before its use");
    Status s3 = ST_INIT;
    ck_assert_ptr_null(ir_parse("%0 = arg() : f32[2]\n%1 = arg() {i=[1]} : f32[3]\n"
                                "%2 = add(%0, %1) : f32[2]  # s (Add)\n", "bad.ir", &s3));
    ck_assert_str_eq(s3.msg, "bad.ir:3: node 's' (Add): shapes [2] and [3] do not broadcast");
    Status s4 = ST_INIT;
    ck_assert_ptr_null(ir_parse("%0 = arg() : f32[2]\n%1 = neg(%0) : f32[3]\n", "bad.ir", &s4));
    ck_assert_str_eq(s4.msg, "bad.ir:2: %1: output 0 printed as f32[3], the shape rule gives f32[2]");
    Status s5 = ST_INIT;
    ck_assert_ptr_null(ir_parse("%0 = const() : f32[2] = hex:00\n", "bad.ir", &s5));
    ck_assert(!st_ok(&s5));
    /* a minimal valid text with comments */
    Status s6 = ST_INIT;
    IrGraph *g = ir_parse("# a comment\n\ngraph \"m\"\nfeed \"x\" %0\nfetch \"y\" %1\n"
                          "%0 = arg() : f32[2]\n%1 = neg(%0) : f32[2]\n", "ok.ir", &s6);
    ck_assert_msg(g != NULL, "%s", s6.msg);
    ck_assert_int_eq(g->n_nodes, 2);
    ck_assert_ptr_eq(g->feeds[0].arg, g->nodes[0]);
    ir_graph_free(g);
}
END_TEST

/* ---- fault injection ---- */

static int build_small(Status *st)
{
    IrGraph *g = ir_graph_new(NULL, st);
    if (!g)
        return 0;
    g->fold_on_build = true;
    IrValue x = feed(g, "x", TY(TCRT_F32, 4, 4), st);
    /* enough constants to need several arena blocks */
    static float big[40000];
    IrValue k = cf32(g, 2, DIMS(200, 200), big, st);
    IrValue k2 = cf32(g, 2, DIMS(200, 200), big, st);
    IrValue kk = ir_binary(g, OP_ADD, k, k2, st);   /* folded: another block */
    (void)kk;
    IrValue y = ir_unary(g, OP_RELU, x, st);
    IrValue z = ir_binary(g, OP_ADD, y, x, st);
    ir_add_fetch(g, "z", z, st);
    if (st_ok(st)) {
        ir_graph_compact(g);      /* may skip sorting when memory is short: still ordered */
        ir_verify(g, st);         /* needs temporary memory too */
    }
    ir_graph_free(g);
    return 1;
}

START_TEST(test_fault_injection)
{
    int n;
    for (n = 1; n < 1000; n++) {
        Status st = ST_INIT;
        xx_fail_alloc_set(n);
        build_small(&st);
        xx_fail_alloc_set(0);
        if (st_ok(&st))
            break;
        ck_assert_msg(st.code == ST_NOMEM, "N=%d: code %d: %s", n, st.code, st.msg);
    }
    ck_assert_int_gt(n, 3);    /* several allocations were failed on the way */
    ck_assert_int_lt(n, 1000);
}
END_TEST

static Suite *ir_suite(void)
{
    Suite *s = suite_create("ir");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_status);
    tcase_add_test(tc, test_arena);
    tcase_add_test(tc, test_op_table);
    tcase_add_test(tc, test_broadcast);
    tcase_add_test(tc, test_dtype_errors);
    tcase_add_test(tc, test_conv2d_shapes);
    tcase_add_test(tc, test_matmul_shapes);
    tcase_add_test(tc, test_gather_and_movement);
    tcase_add_test(tc, test_reshape_error);
    tcase_add_test(tc, test_overflow_dims);
    tcase_add_test(tc, test_fold_elementwise);
    tcase_add_test(tc, test_fold_eval_direct);
    tcase_add_test(tc, test_fold_copy_and_kernel);
    tcase_add_test(tc, test_fold_kernels_more);
    tcase_add_test(tc, test_verify);
    tcase_add_test(tc, test_uses_and_compact);
    tcase_add_test(tc, test_print_parse_roundtrip);
    tcase_add_test(tc, test_parse_errors);
    tcase_add_test(tc, test_fault_injection);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ir_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
