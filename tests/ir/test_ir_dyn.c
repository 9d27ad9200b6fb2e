/* tests/ir/test_ir_dyn.c - Check suite for ir/dyn.c (sizes known only at
 * run time): affine expressions, bounds, element knowledge folding, and the
 * shape rules of ops given a data-dependent input.  Every expected value is
 * derived by hand in the comments.  The graphs start from a WHERE (count in
 * [0, 6] for a [6] input) or an NMS (count in [0, 4]), as the frontends do.
 */
#include <check.h>
#include <string.h>

#include "ir/ir.h"

static IrGraph *g;
static Status st;

static void setup(void)
{
    st = (Status)ST_INIT;
    g = ir_graph_new(NULL, &st);
    ck_assert_ptr_nonnull(g);
}

static void teardown(void)
{
    ir_graph_free(g);
    g = NULL;
}

static IrValue feed(const char *name, tcrt_dtype dt, int rank, const int64_t *dims)
{
    IrType t = {dt, ir_shape_make(rank, dims)};
    IrValue v = ir_add_feed(g, name, &t, &st);
    ck_assert_msg(v.node, "%s", st.msg);
    return v;
}

/* Where over a fed float [6]: coordinates [n, 1] with n = sym in [0, 6]. */
static IrValue where6(IrAff *n)
{
    IrValue x = feed("x", TCRT_F32, 1, (int64_t[]){6});
    IrNode *w = ir_emit(g, OP_WHERE, &x, 1, NULL, NULL, &st);
    ck_assert_msg(w, "%s", st.msg);
    ck_assert(ir_sym_of(g, (IrValue){w, 1}, n, &st));
    IrShape to = ir_value_type((IrValue){w, 0})->shape;
    char why[200];
    ck_assert_msg(ir_shape_set_extent(g, &to, 0, n, why, sizeof why), "%s", why);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_SL_STRIDE] = p.i[TCRT_SL_STRIDE + 1] = 1;
    IrType t = {TCRT_I64, to};
    IrValue v = ir_emit1(g, OP_SLICE, (IrValue[]){{w, 0}}, 1, &p, &t, &st);
    ck_assert_msg(v.node, "%s", st.msg);
    return v;
}

START_TEST(test_aff_algebra)
{
    /* (3 + 2 s0) + (-2) (s0 - s1) = 3 + 2 s1; minus itself = 0 (constant) */
    IrAff s0 = ir_aff_sym(0), s1 = ir_aff_sym(1), a, b, c, d;
    ck_assert(ir_aff_add(&(IrAff){3, 0, {0}, {0}}, &s0, 2, &a));
    ck_assert(ir_aff_add(&s0, &s1, -1, &b));
    ck_assert(ir_aff_add(&a, &b, -2, &c));
    ck_assert_int_eq(c.n, 1);
    ck_assert_int_eq(c.sym[0], 1);
    ck_assert_int_eq(c.k[0], 2);
    ck_assert_int_eq(c.c, 3);
    ck_assert(ir_aff_add(&c, &c, -1, &d));
    ck_assert(ir_aff_is_const(&d) && d.c == 0);
    char buf[64];
    ck_assert_str_eq(ir_aff_str(&c, buf, sizeof buf), "(2 * sym[1] + 3)");
    ck_assert_str_eq(ir_aff_str(&s0, buf, sizeof buf), "sym[0]");
    ck_assert_str_eq(ir_aff_str(&b, buf, sizeof buf), "(sym[0] - sym[1])");
}
END_TEST

START_TEST(test_sym_bounds_and_extent)
{
    /* Where's count of a [6] input is in [0, 6]; 6 - n in [0, 6]; n + 1 in [1, 7] */
    IrAff n;
    IrValue v = where6(&n);
    const IrShape *s = &ir_value_type(v)->shape;
    ck_assert(s->has_dyn);
    ck_assert_int_eq(s->dyn_dim, 0);
    ck_assert_int_eq(s->dims[0], 6);
    ck_assert_int_eq(s->dims[1], 1);
    int64_t lo, hi;
    ir_aff_range(g, &n, &lo, &hi);
    ck_assert(lo == 0 && hi == 6);
    IrAff six = ir_aff_const(6), r;
    ck_assert(ir_aff_add(&six, &n, -1, &r));
    ir_aff_range(g, &r, &lo, &hi);
    ck_assert(lo == 0 && hi == 6);
    /* an extent in dim 1 of a [2, x] shape is not the outermost one */
    IrShape bad = ir_shape_make(2, (int64_t[]){2, 1});
    char why[200];
    ck_assert(!ir_shape_set_extent(g, &bad, 1, &n, why, sizeof why));
    ck_assert_msg(strstr(why, "not the outermost one") != NULL, "%s", why);
    /* a constant extent makes the dim static again */
    IrShape ok = *s;
    IrAff three = ir_aff_const(3);
    ck_assert(ir_shape_set_extent(g, &ok, 0, &three, why, sizeof why));
    ck_assert(!ok.has_dyn && ok.dims[0] == 3);
}
END_TEST

START_TEST(test_shape_folds_and_pad_is_static)
{
    /* v = Where(...) [n,1]; Shape(v) = [n, 1] as a SYMVAL; 6 - Shape(v)[0]
     * folds to the expression 6 - n; Pad(reshape(v) [n], after = 6 - n)
     * has extent n + 6 - n = 6: a static [6]. */
    IrAff n;
    IrValue v = where6(&n);
    IrShape flat = {1, {6}};
    IrValue f = ir_reshape(g, v, &flat, &st);
    ck_assert_msg(f.node, "%s", st.msg);
    ck_assert(ir_value_type(f)->shape.has_dyn); /* [n] */
    IrAff e[2] = {ir_shape_extent(&ir_value_type(v)->shape, 0), ir_aff_const(1)};
    IrShape vs = {1, {2}};
    IrValue shp = ir_sv_value(g, TCRT_I32, &vs, e, &st);
    ck_assert_msg(shp.node && shp.node->op == OP_SYMVAL, "%s", st.msg);
    /* element 0 through a slice and a subtraction */
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_SL_STRIDE] = 1;
    IrType one = {TCRT_I32, {1, {1}}};
    IrValue e0 = ir_emit1(g, OP_SLICE, &shp, 1, &p, &one, &st);
    IrValue six = ir_const_i64s(g, TCRT_I32, (int64_t[]){6}, 1, &st);
    IrValue rest = ir_binary(g, OP_SUB, six, e0, &st);
    ck_assert_msg(rest.node, "%s", st.msg);
    IrAff k[1];
    int cnt = 0;
    ck_assert(ir_value_sv(g, rest, k, 1, &cnt));
    IrAff want;
    ck_assert(ir_aff_add(&(IrAff){6, 0, {0}, {0}}, &n, -1, &want));
    ck_assert(ir_aff_eq(&k[0], &want));
    /* the pad */
    IrParams pp;
    memset(&pp, 0, sizeof pp);
    pp.i[1] = IR_PAD_RUNTIME;
    IrShape ps = {1, {0}};
    IrAff ext;
    ck_assert(ir_aff_add(&n, &k[0], 1, &ext)); /* n + (6 - n) = 6 */
    ck_assert(ir_aff_is_const(&ext) && ext.c == 6);
    char why[200];
    ck_assert(ir_shape_set_extent(g, &ps, 0, &ext, why, sizeof why));
    IrValue fx = ir_cast(g, f, TCRT_F32, &st);
    IrType pt = {TCRT_F32, ps};
    IrValue padded = ir_emit1(g, OP_PAD, &fx, 1, &pp, &pt, &st);
    ck_assert_msg(padded.node, "%s", st.msg);
    ck_assert(!ir_value_type(padded)->shape.has_dyn);
    ck_assert_int_eq(ir_value_type(padded)->shape.dims[0], 6);
}
END_TEST

START_TEST(test_concat_gather_reduce)
{
    /* concat([n], [6 - n]) = static [6]; gather(params [6,4], idx [n]) =
     * [n, 4]; sum over axis 0 of [n, 4] = static [4]; sum over axis 1 =
     * [n]. */
    IrAff n;
    IrValue v = where6(&n);
    IrShape flat = {1, {6}};
    IrValue idx = ir_reshape(g, v, &flat, &st);
    IrAff six = ir_aff_const(6), r;
    ck_assert(ir_aff_add(&six, &n, -1, &r));
    IrShape rs = {1, {0}};
    char why[200];
    ck_assert(ir_shape_set_extent(g, &rs, 0, &r, why, sizeof why));
    IrValue zero = ir_const_scalar_f(g, TCRT_I64, 0, &st);
    IrType bt = {TCRT_I64, rs};
    IrValue fill = ir_emit1(g, OP_BROADCAST, &zero, 1, NULL, &bt, &st);
    ck_assert_msg(fill.node, "%s", st.msg);
    IrValue cat = ir_emit1(g, OP_CONCAT, (IrValue[]){idx, fill}, 2, NULL, NULL, &st);
    ck_assert_msg(cat.node, "%s", st.msg);
    ck_assert(!ir_value_type(cat)->shape.has_dyn);
    ck_assert_int_eq(ir_value_type(cat)->shape.dims[0], 6);

    IrValue params = feed("p", TCRT_F32, 2, (int64_t[]){6, 4});
    IrValue ga = ir_emit1(g, OP_GATHER, (IrValue[]){params, idx}, 2, NULL, NULL, &st);
    ck_assert_msg(ga.node, "%s", st.msg);
    const IrShape *gs = &ir_value_type(ga)->shape;
    ck_assert(gs->has_dyn && gs->dyn_dim == 0 && gs->dims[0] == 6 && gs->dims[1] == 4);
    ck_assert(ir_aff_eq(&gs->dyn, &n));
    IrParams p0, p1;
    memset(&p0, 0, sizeof p0);
    memset(&p1, 0, sizeof p1);
    p0.i[TCRT_RED_MASK] = 1;
    p1.i[TCRT_RED_MASK] = 2;
    IrType t0 = {TCRT_F32, {1, {4}}}, t1 = {TCRT_F32, {1, {6}}};
    IrValue s0 = ir_emit1(g, OP_REDUCE_SUM, &ga, 1, &p0, &t0, &st);
    IrValue s1 = ir_emit1(g, OP_REDUCE_SUM, &ga, 1, &p1, &t1, &st);
    ck_assert_msg(s0.node && s1.node, "%s", st.msg);
    ck_assert(!ir_value_type(s0)->shape.has_dyn);
    ck_assert(ir_value_type(s1)->shape.has_dyn && ir_aff_eq(&ir_value_type(s1)->shape.dyn, &n));
}
END_TEST

START_TEST(test_errors)
{
    /* a partial slice of the run-time dim; an op without a rule (matmul);
     * an elementwise op between [n] and a static [6]; a fetch */
    IrAff n;
    IrValue v = where6(&n);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_SL_BEGIN] = 1;
    p.i[TCRT_SL_STRIDE] = p.i[TCRT_SL_STRIDE + 1] = 1;
    IrType t = {TCRT_I64, {2, {2, 1}}};
    ir_graph_set_origin(g, "s", "StridedSlice");
    ck_assert_ptr_null(ir_emit1(g, OP_SLICE, &v, 1, &p, &t, &st).node);
    ck_assert_msg(strstr(st.msg, "node 's' (StridedSlice): slices part of a dimension whose extent is known only "
                                 "at run time (data-dependent size)") != NULL,
                  "%s", st.msg);

    st = (Status)ST_INIT;
    IrShape flat = {1, {6}};
    IrValue f = ir_cast(g, ir_reshape(g, v, &flat, &st), TCRT_F32, &st);
    IrValue x6 = feed("y", TCRT_F32, 1, (int64_t[]){6});
    ir_graph_set_origin(g, "a", "AddV2");
    ck_assert_ptr_null(ir_binary(g, OP_ADD, f, x6, &st).node);
    ck_assert_msg(strstr(st.msg, "node 'a' (AddV2): shapes [<=6] and [6] do not broadcast") != NULL, "%s", st.msg);

    st = (Status)ST_INIT;
    IrShape row = {2, {1, 6}};
    IrValue fr = ir_reshape(g, f, &row, &st);
    ck_assert_msg(fr.node && ir_value_type(fr)->shape.dyn_dim == 1, "%s", st.msg); /* [1, n] */
    IrValue w = feed("w", TCRT_F32, 2, (int64_t[]){6, 2});
    ir_graph_set_origin(g, "m", "MatMul");
    ck_assert_ptr_null(ir_emit1(g, OP_MATMUL, (IrValue[]){fr, w}, 2, NULL, NULL, &st).node);
    ck_assert_msg(strstr(st.msg, "node 'm' (MatMul): input 0 has a data-dependent size ([1,<=6], extent sym[0]), "
                                 "which matmul does not support") != NULL,
                  "%s", st.msg);

    st = (Status)ST_INIT;
    ck_assert(!ir_add_fetch(g, "f:0", f, &st));
    ck_assert_msg(strstr(st.msg, "fetch 'f:0' has a data-dependent size ([<=6], known only at run time)") != NULL,
                  "%s", st.msg);
}
END_TEST

START_TEST(test_unbounded_size)
{
    /* a fed int scalar has no bound: no symbol; Minimum(fed, 9) is <= 9 */
    IrValue k = feed("k", TCRT_I32, 0, NULL);
    IrAff e;
    ck_assert(!ir_sym_of(g, k, &e, &st));
    ck_assert_msg(strstr(st.msg, "no upper bound that tfcc can prove") != NULL, "%s", st.msg);
    st = (Status)ST_INIT;
    IrValue nine = ir_const_scalar_f(g, TCRT_I32, 9, &st);
    IrValue m = ir_binary(g, OP_MIN, k, nine, &st);
    ck_assert(ir_sym_of(g, m, &e, &st));
    int64_t lo, hi;
    ir_aff_range(g, &e, &lo, &hi);
    ck_assert_int_eq(hi, 9);
}
END_TEST

static Suite *dyn_suite(void)
{
    Suite *s = suite_create("ir_dyn");
    TCase *tc = tcase_create("core");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_aff_algebra);
    tcase_add_test(tc, test_sym_bounds_and_extent);
    tcase_add_test(tc, test_shape_folds_and_pad_is_static);
    tcase_add_test(tc, test_concat_gather_reduce);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_unbounded_size);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(dyn_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
