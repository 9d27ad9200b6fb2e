/* tests/passes/test_grad.c - gradient construction (passes/grad.c,
 * grad_rules.c) and the optimizers (passes/optim.c), Check suite "grad".
 *
 * Rules: each case builds y = op(inputs) on small random inputs (a fixed
 * LCG, values kept away from kinks and ties), the scalar
 * L = sum(float64(y) * r) with fixed random weights r, and compares
 * pass_grad_values' dL/dx (evaluated by folding the whole graph through
 * ir_fold_node, i.e. the reference kernels) with central finite differences
 * (L(x + h e_j) - L(x - h e_j)) / 2h computed by rebuilding the forward graph
 * with perturbed constants: an independent oracle.  float64 ops: h = 1e-5,
 * rtol 1e-6.  conv2d is float32-only in the IR, so its cases run in float32;
 * they are linear in each input, where central differences are exact up to
 * rounding (h = 1/8, rtol 1e-4).
 * Optimizers: one-parameter problems whose values after two steps are
 * derived by hand in the comments; a step is "executed" by folding, with each
 * variable read replaced by its current value.
 * While loops (unrolled before differentiation): a counter loop, an RNN
 * reading x_t by a gather on the counter, nested loops, a cond in the body
 * and zero trips; the folded loss and gradients are compared with the same
 * loss written in plain C and its central finite differences (h = 1e-5,
 * rtol 1e-6); a loop off the gradient path stays a loop.
 * Errors: messages pinned (missing rule, non-scalar loss, no gradient path,
 * unknown optimizer key, an already assigned variable, a while loop whose
 * trip count depends on run-time data or exceeds the unroll limits).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"

#define MAXIN 4
#define F64_ TCRT_F64

/* ---- deterministic random numbers ---- */

static uint64_t rng_state;
static double rnd(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* ---- graph helpers ---- */

static IrGraph *new_graph(bool fold)
{
    Status st = ST_INIT;
    IrGraph *g = ir_graph_new(NULL, &st);
    ck_assert_ptr_nonnull(g);
    g->fold_on_build = fold;
    return g;
}

static IrShape shp(int rank, const int64_t *d)
{
    return ir_shape_make(rank, d);
}
#define S(...) shp((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
#define S0 shp(0, NULL)

static IrValue cst_d(IrGraph *g, tcrt_dtype dt, IrShape s, const double *v, Status *st)
{
    int64_t n = ir_shape_count(&s);
    void *buf = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        if (dt == TCRT_F64)
            ((double *)buf)[i] = v[i];
        else if (dt == TCRT_F32)
            ((float *)buf)[i] = (float)v[i];
        else if (dt == TCRT_I32)
            ((int32_t *)buf)[i] = (int32_t)v[i];
        else if (dt == TCRT_BOOL)
            ((uint8_t *)buf)[i] = v[i] != 0;
    }
    IrValue c = ir_const(g, dt, &s, buf, st);
    free(buf);
    return c;
}

static double cval(IrValue v, int64_t i)
{
    ck_assert_ptr_nonnull(v.node);
    ck_assert_int_eq(v.node->op, OP_CONST);
    tcrt_dtype dt = ir_value_type(v)->dtype;
    if (dt == TCRT_F64)
        return ((const double *)v.node->data)[i];
    ck_assert_int_eq(dt, TCRT_F32);
    return ((const float *)v.node->data)[i];
}

/* Evaluates every node by constant folding (the reference kernels), in
 * order; ASSIGNs and VARIABLEs are left (their values are read elsewhere). */
static void fold_all(IrGraph *g)
{
    Status st = ST_INIT;
    for (int i = 0; i < g->n_nodes; i++) {
        IrNode *n = g->nodes[i];
        if (!n || n->dead || n->op == OP_CONST || n->op == OP_ASSIGN || n->op == OP_VARIABLE)
            continue;
        IrValue out[4];
        ck_assert_msg(ir_fold_node(g, n, out, &st), "cannot evaluate %s (node '%s'): %s", ir_op_name(n->op),
                      n->origin ? n->origin : "?", st.msg);
        for (int k = 0; k < n->n_outputs; k++)
            ir_replace_uses(g, (IrValue){n, k}, out[k]);
        n->dead = true;
    }
}

/* pass_fold: also inlines a COND whose selector is constant */
static void run_fold(IrGraph *g)
{
    Status st = ST_INIT;
    PassCtx cx;
    arena_init(&cx.scratch, NULL);
    cx.st = &st;
    PassResult r = pass_fold(g, &cx);
    arena_reset(&cx.scratch);
    ck_assert_msg(r != PASS_FAILED, "fold: %s", st.msg);
}

/* ---- rule checks against finite differences ---- */

typedef IrValue (*BuildFn)(IrGraph *g, const IrValue *x, Status *st);

typedef struct Case {
    const char *name;
    int n_in;
    tcrt_dtype dt[MAXIN];
    IrShape shape[MAXIN];
    double lo[MAXIN], hi[MAXIN]; /* values uniform in [lo, hi) */
    bool alt_sign[MAXIN];        /* every other element negated */
    BuildFn build;
} Case;

static IrValue build_loss(IrGraph *g, const Case *k, double *const *vals, IrValue *xs, Status *st)
{
    for (int i = 0; i < k->n_in; i++)
        xs[i] = cst_d(g, k->dt[i], k->shape[i], vals[i], st);
    IrValue y = k->build(g, xs, st);
    ck_assert_msg(st_ok(st) && y.node, "%s: build: %s", k->name, st->msg);
    const IrType *yt = ir_value_type(y);
    if (yt->dtype != TCRT_F64)
        y = ir_cast(g, y, TCRT_F64, st);
    int64_t n = ir_shape_count(&yt->shape);
    double *r = malloc(sizeof(double) * (size_t)(n ? n : 1));
    uint64_t saved = rng_state;
    rng_state = 12345;
    for (int64_t j = 0; j < n; j++)
        r[j] = 0.5 + rnd();
    rng_state = saved;
    IrValue w = cst_d(g, TCRT_F64, yt->shape, r, st);
    free(r);
    IrValue prod = ir_binary(g, OP_MUL, y, w, st);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = ((int64_t)1 << yt->shape.rank) - 1;
    if (p.i[0] == 0)
        return prod;
    return ir_emit1(g, OP_REDUCE_SUM, &prod, 1, &p, NULL, st);
}

static double loss_at(const Case *k, double *const *vals)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(true);
    IrValue xs[MAXIN];
    IrValue l = build_loss(g, k, vals, xs, &st);
    ck_assert_msg(st_ok(&st), "%s: %s", k->name, st.msg);
    if (l.node->op != OP_CONST) { /* a cond: inlined by the fold pass */
        ck_assert(ir_add_fetch(g, "L", l, &st));
        run_fold(g);
        l = g->fetches[0].value;
    }
    ck_assert_msg(l.node->op == OP_CONST, "%s: loss did not fold (%s)", k->name, ir_op_name(l.node->op));
    double v = cval(l, 0);
    ir_graph_free(g);
    return v;
}

static void check_case(const Case *k)
{
    rng_state = 0x9e3779b97f4a7c15ULL ^ (uint64_t)strlen(k->name) * 7919u;
    double *vals[MAXIN];
    int64_t cnt[MAXIN];
    for (int i = 0; i < k->n_in; i++) {
        cnt[i] = ir_shape_count(&k->shape[i]);
        vals[i] = malloc(sizeof(double) * (size_t)(cnt[i] ? cnt[i] : 1));
        for (int64_t j = 0; j < cnt[i]; j++) {
            double v = k->lo[i] + (k->hi[i] - k->lo[i]) * rnd();
            if (k->dt[i] == TCRT_F32) /* representable, so x +- h is exact */
                v = round(v * 64) / 64;
            vals[i][j] = k->alt_sign[i] && (j % 2) ? -v : v;
        }
    }
    /* analytic */
    Status st = ST_INIT;
    IrGraph *g = new_graph(false);
    IrValue xs[MAXIN], grads[MAXIN];
    bool has[MAXIN];
    IrValue l = build_loss(g, k, vals, xs, &st);
    bool diff[MAXIN];
    int n_wrt = 0;
    IrValue wrt[MAXIN];
    int which[MAXIN];
    for (int i = 0; i < k->n_in; i++) {
        diff[i] = k->dt[i] == TCRT_F32 || k->dt[i] == TCRT_F64;
        if (diff[i]) {
            which[n_wrt] = i;
            wrt[n_wrt++] = xs[i];
        }
    }
    ck_assert_msg(pass_grad_values(g, l, wrt, n_wrt, grads, has, &st), "%s: %s", k->name, st.msg);
    Status vst = ST_INIT;
    ck_assert_msg(ir_verify(g, &vst), "%s: verify: %s", k->name, vst.msg);
    if (!strncmp(k->name, "cond", 4)) { /* the forward cond and its gradient cond */
        int n_cond = 0;
        IR_FOR_EACH(g, q)
        {
            n_cond += q->op == OP_COND;
        }
        ck_assert_int_eq(n_cond, 2);
    }
    for (int i = 0; i < n_wrt; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "g%d", i);
        ck_assert(ir_add_fetch(g, nm, grads[i], &st));
    }
    run_fold(g);
    fold_all(g);
    /* numeric */
    for (int w = 0; w < n_wrt; w++) {
        int i = which[w];
        IrValue gv = g->fetches[w].value;
        ck_assert_int_eq(ir_value_type(gv)->dtype, k->dt[i]);
        ck_assert_msg(ir_shape_eq(&ir_value_type(gv)->shape, &k->shape[i]),
                      "%s: gradient %d has the wrong shape", k->name, i);
        bool f32 = k->dt[i] == TCRT_F32;
        double h = f32 ? 0.125 : 1e-5, rtol = f32 ? 1e-4 : 1e-6;
        for (int64_t j = 0; j < cnt[i]; j++) {
            double x0 = vals[i][j];
            vals[i][j] = x0 + h;
            double lp = loss_at(k, vals);
            vals[i][j] = x0 - h;
            double lm = loss_at(k, vals);
            vals[i][j] = x0;
            double fd = (lp - lm) / (2 * h), an = cval(gv, j);
            double tol = rtol * (fabs(fd) + fabs(an)) + (f32 ? 1e-4 : 1e-9);
            ck_assert_msg(fabs(fd - an) <= tol, "%s: d/dx%d[%lld]: analytic %.12g, finite differences %.12g",
                          k->name, i, (long long)j, an, fd);
        }
        ck_assert_msg(has[w], "%s: input %d has no gradient path", k->name, i);
    }
    ir_graph_free(g);
    for (int i = 0; i < k->n_in; i++)
        free(vals[i]);
}

/* ---- builders ---- */

#define UNARY_BUILD(fn, OPC)                                                                                 \
    static IrValue fn(IrGraph *g, const IrValue *x, Status *st)                                              \
    {                                                                                                        \
        return ir_unary(g, OPC, x[0], st);                                                                   \
    }
#define BINARY_BUILD(fn, OPC)                                                                                \
    static IrValue fn(IrGraph *g, const IrValue *x, Status *st)                                              \
    {                                                                                                        \
        return ir_binary(g, OPC, x[0], x[1], st);                                                            \
    }
UNARY_BUILD(b_neg, OP_NEG)
UNARY_BUILD(b_abs, OP_ABS)
UNARY_BUILD(b_exp, OP_EXP)
UNARY_BUILD(b_log, OP_LOG)
UNARY_BUILD(b_log1p, OP_LOG1P)
UNARY_BUILD(b_sqrt, OP_SQRT)
UNARY_BUILD(b_rsqrt, OP_RSQRT)
UNARY_BUILD(b_recip, OP_RECIP)
UNARY_BUILD(b_square, OP_SQUARE)
UNARY_BUILD(b_sin, OP_SIN)
UNARY_BUILD(b_cos, OP_COS)
UNARY_BUILD(b_tan, OP_TAN)
UNARY_BUILD(b_tanh, OP_TANH)
UNARY_BUILD(b_sigmoid, OP_SIGMOID)
UNARY_BUILD(b_relu, OP_RELU)
UNARY_BUILD(b_erf, OP_ERF)
BINARY_BUILD(b_add, OP_ADD)
BINARY_BUILD(b_sub, OP_SUB)
BINARY_BUILD(b_mul, OP_MUL)
BINARY_BUILD(b_div, OP_DIV)
BINARY_BUILD(b_pow, OP_POW)
BINARY_BUILD(b_max, OP_MAX)
BINARY_BUILD(b_min, OP_MIN)
BINARY_BUILD(b_atan2, OP_ATAN2)
BINARY_BUILD(b_floormod, OP_FLOORMOD)

static IrValue b_cast(IrGraph *g, const IrValue *x, Status *st)
{
    /* f32 -> f64 -> f32: both directions of a float cast */
    return ir_cast(
        g, ir_binary(g, OP_MUL, ir_cast(g, x[0], TCRT_F64, st), ir_const_scalar_f(g, TCRT_F64, 3, st), st),
        TCRT_F32, st);
}

static IrValue b_select(IrGraph *g, const IrValue *x, Status *st)
{
    double c[6] = {1, 0, 0, 1, 1, 0};
    IrValue cond = cst_d(g, TCRT_BOOL, S(2, 3), c, st);
    IrValue in[3] = {cond, x[0], x[1]};
    return ir_emit1(g, OP_SELECT, in, 3, NULL, NULL, st);
}

static IrValue reduce(IrGraph *g, Op op, IrValue x, int64_t mask, bool keep, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = mask;
    p.i[1] = keep;
    return ir_emit1(g, op, &x, 1, &p, NULL, st);
}

static IrValue b_rsum(IrGraph *g, const IrValue *x, Status *st)
{
    return ir_binary(g, OP_ADD, reduce(g, OP_REDUCE_SUM, x[0], 5, true, st),
                     reduce(g, OP_REDUCE_SUM, x[0], 1, false, st), st);
}
static IrValue b_rmax(IrGraph *g, const IrValue *x, Status *st)
{
    return reduce(g, OP_REDUCE_MAX, x[0], 2, false, st);
}
static IrValue b_rmin(IrGraph *g, const IrValue *x, Status *st)
{
    return reduce(g, OP_REDUCE_MIN, x[0], 6, true, st);
}
static IrValue b_rprod(IrGraph *g, const IrValue *x, Status *st)
{
    return reduce(g, OP_REDUCE_PROD, x[0], 1, false, st);
}

/* x masked to exact zeros: row 0 none, row 1 one, row 2 two (of 3) */
static IrValue b_rprod_zero(IrGraph *g, const IrValue *x, Status *st)
{
    double m[9] = {1, 1, 1, 1, 0, 1, 0, 1, 0};
    IrValue z = ir_binary(g, OP_MUL, x[0], cst_d(g, TCRT_F64, S(3, 3), m, st), st);
    return reduce(g, OP_REDUCE_PROD, z, 2, false, st);
}

/* mean = sum * (1/n): the frontends' composition */
static IrValue b_mean(IrGraph *g, const IrValue *x, Status *st)
{
    return ir_binary(g, OP_MUL, reduce(g, OP_REDUCE_SUM, x[0], 3, false, st),
                     ir_const_scalar_f(g, TCRT_F64, 1.0 / 6, st), st);
}

static IrValue matmul(IrGraph *g, const IrValue *x, int n, bool ta, bool tb, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_MM_TA] = ta;
    p.i[TCRT_MM_TB] = tb;
    return ir_emit1(g, OP_MATMUL, x, n, &p, NULL, st);
}
static IrValue b_mm(IrGraph *g, const IrValue *x, Status *st)
{
    return matmul(g, x, 2, false, false, st);
}
static IrValue b_mm_ta(IrGraph *g, const IrValue *x, Status *st)
{
    return matmul(g, x, 2, true, false, st);
}
static IrValue b_mm_tb(IrGraph *g, const IrValue *x, Status *st)
{
    return matmul(g, x, 2, false, true, st);
}
static IrValue b_mm_tab(IrGraph *g, const IrValue *x, Status *st)
{
    return matmul(g, x, 2, true, true, st);
}
static IrValue b_mm_bias(IrGraph *g, const IrValue *x, Status *st)
{
    return matmul(g, x, 3, false, false, st);
}
/* fused activations (imported _FusedMatMul): relu6 and leaky relu undone from the output */
static IrValue mm_act(IrGraph *g, const IrValue *x, int64_t act, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_MM_ACT] = act;
    p.f[0] = 0.25;
    return ir_emit1(g, OP_MATMUL, x, 3, &p, NULL, st);
}
static IrValue b_mm_relu6(IrGraph *g, const IrValue *x, Status *st)
{
    return mm_act(g, x, TCRT_ACT_RELU6, st);
}
static IrValue b_mm_leaky(IrGraph *g, const IrValue *x, Status *st)
{
    return mm_act(g, x, TCRT_ACT_LEAKY, st);
}

static IrValue conv(IrGraph *g, const IrValue *x, int n, int64_t s, int64_t d, int64_t pad, bool dw,
                    int64_t act, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = s;
    p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = d;
    p.i[TCRT_CONV_PT] = p.i[TCRT_CONV_PL] = p.i[TCRT_CONV_PB] = p.i[TCRT_CONV_PR] = pad;
    p.i[TCRT_CONV_DEPTHWISE] = dw;
    p.i[TCRT_CONV_ACT] = act;
    return ir_emit1(g, OP_CONV2D, x, n, &p, NULL, st);
}
static IrValue b_conv(IrGraph *g, const IrValue *x, Status *st)
{
    return conv(g, x, 2, 1, 1, 1, false, 0, st);
}
static IrValue b_conv_s2(IrGraph *g, const IrValue *x, Status *st)
{
    return conv(g, x, 3, 2, 1, 0, false, 0, st);
}
static IrValue b_conv_dil(IrGraph *g, const IrValue *x, Status *st)
{
    return conv(g, x, 2, 1, 2, 1, false, 0, st);
}
static IrValue b_dwconv(IrGraph *g, const IrValue *x, Status *st)
{
    return conv(g, x, 2, 1, 1, 1, true, 0, st);
}
static IrValue b_conv_res(IrGraph *g, const IrValue *x, Status *st)
{
    return conv(g, x, 4, 1, 1, 0, false, 0, st);
}

static IrValue pool(IrGraph *g, Op op, IrValue x, int64_t k, int64_t s, int64_t pad, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_POOL_KH] = p.i[TCRT_POOL_KW] = k;
    p.i[TCRT_POOL_SH] = p.i[TCRT_POOL_SW] = s;
    p.i[TCRT_POOL_PT] = p.i[TCRT_POOL_PL] = p.i[TCRT_POOL_PB] = p.i[TCRT_POOL_PR] = pad;
    return ir_emit1(g, op, &x, 1, &p, NULL, st);
}
static IrValue b_maxpool(IrGraph *g, const IrValue *x, Status *st)
{
    return pool(g, OP_MAXPOOL, x[0], 2, 2, 0, st);
}
static IrValue b_avgpool(IrGraph *g, const IrValue *x, Status *st)
{
    return pool(g, OP_AVGPOOL, x[0], 3, 2, 1, st);
}

static IrValue b_copy(IrGraph *g, const IrValue *x, Status *st)
{
    IrShape s = S(3, 2);
    return ir_reshape(g, x[0], &s, st);
}

static IrValue b_transpose(IrGraph *g, const IrValue *x, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 2, p.i[1] = 0, p.i[2] = 1;
    return ir_emit1(g, OP_TRANSPOSE, &x[0], 1, &p, NULL, st);
}

/* x [3,4] (batch 3 along dim 0, sequences along dim 1), lengths 4, 0, 2 */
static IrValue b_reverse_seq(IrGraph *g, const IrValue *x, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1, p.i[1] = 0;
    IrValue in[2] = {x[0], ir_const_i64s(g, TCRT_I32, (const int64_t[]){4, 0, 2}, 3, st)};
    return ir_emit1(g, OP_REVERSE_SEQ, in, 2, &p, NULL, st);
}

/* x [5,4]: dim 0 from 4 down by -2 (3 rows), dim 1 from 1 by 2 (2 cols) */
static IrValue b_slice(IrGraph *g, const IrValue *x, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_SL_BEGIN] = 4, p.i[TCRT_SL_STRIDE] = -2;
    p.i[TCRT_SL_BEGIN + 1] = 1, p.i[TCRT_SL_STRIDE + 1] = 2;
    IrType t = {TCRT_F64, S(3, 2)};
    IrValue a = ir_emit1(g, OP_SLICE, &x[0], 1, &p, &t, st);
    /* and a plain one: rows 1..3, cols 0..2 */
    memset(&p, 0, sizeof p);
    p.i[TCRT_SL_BEGIN] = 1, p.i[TCRT_SL_STRIDE] = 1, p.i[TCRT_SL_STRIDE + 1] = 1;
    IrValue b = ir_emit1(g, OP_SLICE, &x[0], 1, &p, &t, st);
    return ir_binary(g, OP_MUL, a, b, st);
}

static IrValue b_pad(IrGraph *g, const IrValue *x, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1, p.i[1] = 0, p.i[2] = 2, p.i[3] = 1;
    p.f[0] = 0.5;
    return ir_emit1(g, OP_PAD, &x[0], 1, &p, NULL, st);
}

static IrValue b_concat(IrGraph *g, const IrValue *x, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1;
    return ir_emit1(g, OP_CONCAT, x, 3, &p, NULL, st);
}

/* gather along axis 1 with repeated indices (sums in the gradient) */
static IrValue b_gather(IrGraph *g, const IrValue *x, Status *st)
{
    double ix[5] = {2, 0, 2, 3, 2};
    IrValue idx = cst_d(g, TCRT_I32, S(5), ix, st);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_GA_AXIS] = 1;
    IrValue in[2] = {x[0], idx};
    return ir_emit1(g, OP_GATHER, in, 2, &p, NULL, st);
}

static IrValue b_gather_scalar(IrGraph *g, const IrValue *x, Status *st)
{
    double ix[1] = {1};
    IrValue idx = cst_d(g, TCRT_I32, S0, ix, st);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrValue in[2] = {x[0], idx};
    return ir_emit1(g, OP_GATHER, in, 2, &p, NULL, st);
}

static IrValue b_gather_nd(IrGraph *g, const IrValue *x, Status *st)
{
    double ix[6] = {1, 0, 2, 1, 1, 0};
    IrValue idx = cst_d(g, TCRT_I32, S(3, 2), ix, st);
    IrValue in[2] = {x[0], idx};
    return ir_emit1(g, OP_GATHER_ND, in, 2, NULL, NULL, st);
}

static IrValue b_gather_nd1(IrGraph *g, const IrValue *x, Status *st)
{
    double ix[1] = {2};
    IrValue idx = cst_d(g, TCRT_I32, S(1), ix, st);
    IrValue in[2] = {x[0], idx};
    return ir_emit1(g, OP_GATHER_ND, in, 2, NULL, NULL, st);
}

static IrValue b_scatter(IrGraph *g, const IrValue *x, Status *st)
{
    double ix[3] = {1, 3, 1};
    IrValue idx = cst_d(g, TCRT_I32, S(3), ix, st);
    IrValue in[2] = {x[0], idx};
    IrType t = {TCRT_F64, S(4, 2)};
    return ir_emit1(g, OP_SCATTER_ADD, in, 2, NULL, &t, st);
}

static IrValue b_tile(IrGraph *g, const IrValue *x, Status *st)
{
    IrType t = {TCRT_F64, S(4, 3, 2)};
    return ir_emit1(g, OP_TILE, &x[0], 1, NULL, &t, st);
}

static IrValue b_broadcast(IrGraph *g, const IrValue *x, Status *st)
{
    IrType t = {TCRT_F64, S(2, 3, 3)};
    return ir_emit1(g, OP_BROADCAST, &x[0], 1, NULL, &t, st);
}

static IrValue b_update_slice(IrGraph *g, const IrValue *x, Status *st)
{
    double s[2] = {1, 0};
    IrValue start = cst_d(g, TCRT_I32, S(2), s, st);
    double u[2] = {7, 8};
    IrValue upd = cst_d(g, TCRT_F64, S(1, 2), u, st);
    IrValue in[3] = {x[0], upd, start};
    return ir_emit1(g, OP_UPDATE_SLICE, in, 3, NULL, NULL, st);
}

static IrValue b_conv_transpose(IrGraph *g, const IrValue *x, Status *st)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = 2;
    p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
    p.i[TCRT_CONV_PT] = p.i[TCRT_CONV_PL] = 1;
    p.i[TCRT_CONV_PB] = p.i[TCRT_CONV_PR] = 1;
    IrType t = {TCRT_F32, S(1, 5, 5, 2)};
    return ir_emit1(g, OP_CONV2D_TRANSPOSE, x, 2, &p, &t, st);
}

/* one value used three times: x*x + sin(x) + x (adjoints summed) */
static IrValue b_multi_use(IrGraph *g, const IrValue *x, Status *st)
{
    IrValue a = ir_binary(g, OP_MUL, x[0], x[0], st);
    return ir_binary(g, OP_ADD, ir_binary(g, OP_ADD, a, ir_unary(g, OP_SIN, x[0], st), st), x[0], st);
}

/* log-softmax cross-entropy as the frontends compose it */
static IrValue b_xent(IrGraph *g, const IrValue *x, Status *st)
{
    IrValue m = reduce(g, OP_REDUCE_MAX, x[0], 2, true, st);
    IrValue z = ir_binary(g, OP_SUB, x[0], m, st);
    IrValue lse = ir_unary(g, OP_LOG, reduce(g, OP_REDUCE_SUM, ir_unary(g, OP_EXP, z, st), 2, true, st), st);
    IrValue logp = ir_binary(g, OP_SUB, z, lse, st);
    double lab[6] = {0, 1, 0, 0.25, 0.25, 0.5};
    IrValue labels = cst_d(g, TCRT_F64, S(2, 3), lab, st);
    return ir_unary(g, OP_NEG, reduce(g, OP_REDUCE_SUM, ir_binary(g, OP_MUL, logp, labels, st), 3, false, st),
                    st);
}

/* cond(sel; x0, x1): branch 0 gives (x0 * x1, sin(x0)), branch 1
 * (x0 + 2, x1 * x1); y = y0 + y1 */
static IrValue cond_sel(IrGraph *g, const IrValue *x, bool sel, Status *st)
{
    IrGraph *br[2];
    for (int b = 0; b < 2; b++) {
        br[b] = ir_region_new(g, st);
        IrValue a = ir_add_feed(br[b], "a", ir_value_type(x[0]), st);
        IrValue c = ir_add_feed(br[b], "c", ir_value_type(x[1]), st);
        if (b == 0) {
            ir_add_fetch(br[b], "y0", ir_binary(br[b], OP_MUL, a, c, st), st);
            ir_add_fetch(br[b], "y1", ir_unary(br[b], OP_SIN, a, st), st);
        } else {
            ir_add_fetch(br[b], "y0", ir_binary(br[b], OP_ADD, a, ir_const_scalar_f(br[b], F64_, 2, st), st),
                         st);
            ir_add_fetch(br[b], "y1", ir_binary(br[b], OP_MUL, c, c, st), st);
        }
    }
    double sv = sel;
    IrValue in[3] = {cst_d(g, TCRT_BOOL, S0, &sv, st), x[0], x[1]};
    IrNode *cn = ir_emit_region(g, OP_COND, in, 3, br, 2, st);
    ck_assert_msg(cn, "%s", st->msg);
    return ir_binary(g, OP_ADD, (IrValue){cn, 0}, (IrValue){cn, 1}, st);
}
static IrValue b_cond_t(IrGraph *g, const IrValue *x, Status *st)
{
    return cond_sel(g, x, true, st);
}
static IrValue b_cond_f(IrGraph *g, const IrValue *x, Status *st)
{
    return cond_sel(g, x, false, st);
}

#define F64 TCRT_F64
#define F32 TCRT_F32
#define U1(nm, fn, lo_, hi_, alt)                                                                            \
    {                                                                                                        \
        nm, 1, {F64}, {S(2, 3)}, {lo_}, {hi_}, {alt}, fn                                                     \
    }
#define B2(nm, fn, s0, s1, lo0, hi0, lo1, hi1)                                                               \
    {                                                                                                        \
        nm, 2, {F64, F64}, {s0, s1}, {lo0, lo1}, {hi0, hi1}, {false, false}, fn                              \
    }

static const Case *cases(int *n)
{
    static Case c[96];
    int k = 0;
    Case list[] = {
        U1("neg", b_neg, -2, 2, false),
        U1("abs", b_abs, 0.2, 2, true),
        U1("exp", b_exp, -1, 1, false),
        U1("log", b_log, 0.5, 2, false),
        U1("log1p", b_log1p, -0.5, 2, false),
        U1("sqrt", b_sqrt, 0.5, 2, false),
        U1("rsqrt", b_rsqrt, 0.5, 2, false),
        U1("recip", b_recip, 0.5, 2, true),
        U1("square", b_square, -2, 2, false),
        U1("sin", b_sin, -2, 2, false),
        U1("cos", b_cos, -2, 2, false),
        U1("tan", b_tan, -1, 1, false),
        U1("tanh", b_tanh, -2, 2, false),
        U1("sigmoid", b_sigmoid, -3, 3, false),
        U1("relu", b_relu, 0.1, 2, true),
        U1("erf", b_erf, -1.5, 1.5, false),
        {"cast", 1, {F32}, {S(2, 3)}, {-2}, {2}, {false}, b_cast},
        B2("add_bcast", b_add, S(2, 3), S(3), -2, 2, -2, 2),
        B2("sub_bcast", b_sub, S(2, 3), S(2, 1), -2, 2, -2, 2),
        B2("mul_bcast", b_mul, S(1, 3), S(2, 3), -2, 2, -2, 2),
        B2("div", b_div, S(2, 3), S(3), -2, 2, 0.5, 2),
        B2("pow", b_pow, S(2, 3), S(3), 0.5, 2, -1.5, 1.5),
        B2("max", b_max, S(2, 3), S(3), -2, 2, -2, 2),
        B2("min", b_min, S(2, 3), S(2, 3), -2, 2, -2, 2),
        B2("atan2", b_atan2, S(2, 3), S(2, 3), -2, 2, 0.5, 2),
        B2("floormod", b_floormod, S(2, 3), S(3), 2.2, 2.8, 1.0, 1.05),
        B2("select", b_select, S(2, 3), S(3), -2, 2, -2, 2),
        {"reduce_sum", 1, {F64}, {S(2, 3, 2)}, {-2}, {2}, {false}, b_rsum},
        {"reduce_max", 1, {F64}, {S(2, 4, 3)}, {-2}, {2}, {false}, b_rmax},
        {"reduce_min", 1, {F64}, {S(2, 4, 3)}, {-2}, {2}, {false}, b_rmin},
        {"reduce_prod_zero", 1, {F64}, {S(3, 3)}, {0.5}, {2}, {true}, b_rprod_zero},
        {"reduce_prod", 1, {F64}, {S(3, 2)}, {0.5}, {2}, {true}, b_rprod},
        U1("mean", b_mean, -2, 2, false),
        B2("matmul", b_mm, S(2, 3), S(3, 4), -1, 1, -1, 1),
        B2("matmul_ta", b_mm_ta, S(3, 2), S(3, 4), -1, 1, -1, 1),
        B2("matmul_tb", b_mm_tb, S(2, 3), S(4, 3), -1, 1, -1, 1),
        B2("matmul_tab", b_mm_tab, S(3, 2), S(4, 3), -1, 1, -1, 1),
        B2("matmul_batch", b_mm, S(2, 2, 3), S(3, 4), -1, 1, -1, 1),
        B2("matmul_batch_b", b_mm, S(3, 2), S(2, 2, 4), -1, 1, -1, 1),
        {"matmul_bias",
         3,
         {F64, F64, F64},
         {S(2, 3), S(3, 4), S(4)},
         {-1, -1, -1},
         {1, 1, 1},
         {0},
         b_mm_bias},
        {"matmul_relu6",
         3,
         {F64, F64, F64},
         {S(2, 3), S(3, 4), S(4)},
         {-2, -2, -2},
         {2, 2, 2},
         {0},
         b_mm_relu6},
        {"matmul_leaky",
         3,
         {F64, F64, F64},
         {S(2, 3), S(3, 4), S(4)},
         {-1, -1, -1},
         {1, 1, 1},
         {0},
         b_mm_leaky},
        {"conv2d", 2, {F32, F32}, {S(1, 5, 5, 2), S(3, 3, 2, 3)}, {-1, -1}, {1, 1}, {0}, b_conv},
        {"conv2d_stride_bias",
         3,
         {F32, F32, F32},
         {S(2, 5, 5, 2), S(2, 2, 2, 3), S(3)},
         {-1, -1, -1},
         {1, 1, 1},
         {0},
         b_conv_s2},
        {"conv2d_dilated", 2, {F32, F32}, {S(1, 6, 6, 1), S(2, 2, 1, 2)}, {-1, -1}, {1, 1}, {0}, b_conv_dil},
        {"conv2d_depthwise", 2, {F32, F32}, {S(1, 4, 4, 2), S(3, 3, 2, 2)}, {-1, -1}, {1, 1}, {0}, b_dwconv},
        {"conv2d_residual",
         4,
         {F32, F32, F32, F32},
         {S(1, 3, 3, 2), S(1, 1, 2, 2), S(2), S(1, 3, 3, 2)},
         {-1, -1, -1, -1},
         {1, 1, 1, 1},
         {0},
         b_conv_res},
        {"conv2d_transpose",
         2,
         {F32, F32},
         {S(1, 3, 3, 2), S(3, 3, 2, 2)},
         {-1, -1},
         {1, 1},
         {0},
         b_conv_transpose},
        {"maxpool", 1, {F64}, {S(1, 4, 4, 2)}, {-2}, {2}, {false}, b_maxpool},
        {"avgpool", 1, {F64}, {S(1, 5, 5, 2)}, {-2}, {2}, {false}, b_avgpool},
        U1("copy", b_copy, -2, 2, false),
        {"transpose", 1, {F64}, {S(2, 3, 2)}, {-2}, {2}, {false}, b_transpose},
        {"reverse_seq", 1, {F64}, {S(3, 4)}, {-2}, {2}, {false}, b_reverse_seq},
        {"slice", 1, {F64}, {S(5, 4)}, {-2}, {2}, {false}, b_slice},
        U1("pad", b_pad, -2, 2, false),
        {"concat", 3, {F64, F64, F64}, {S(2, 1), S(2, 3), S(2, 2)}, {-2, -2, -2}, {2, 2, 2}, {0}, b_concat},
        {"gather", 1, {F64}, {S(2, 4, 2)}, {-2}, {2}, {false}, b_gather},
        {"gather_scalar", 1, {F64}, {S(3, 2)}, {-2}, {2}, {false}, b_gather_scalar},
        {"gather_nd", 1, {F64}, {S(3, 2, 2)}, {-2}, {2}, {false}, b_gather_nd},
        {"gather_nd_one", 1, {F64}, {S(3, 2)}, {-2}, {2}, {false}, b_gather_nd1},
        {"scatter_add", 1, {F64}, {S(3, 2)}, {-2}, {2}, {false}, b_scatter},
        {"tile", 1, {F64}, {S(2, 1, 2)}, {-2}, {2}, {false}, b_tile},
        {"broadcast", 1, {F64}, {S(3, 1)}, {-2}, {2}, {false}, b_broadcast},
        {"update_slice", 1, {F64}, {S(3, 2)}, {-2}, {2}, {false}, b_update_slice},
        U1("multi_use", b_multi_use, -2, 2, false),
        B2("cond_true", b_cond_t, S(2, 3), S(2, 3), -2, 2, -2, 2),
        B2("cond_false", b_cond_f, S(2, 3), S(2, 3), -2, 2, -2, 2),
        U1("softmax_xent", b_xent, -2, 2, false),
    };
    k = (int)(sizeof list / sizeof list[0]);
    if (k > 96)
        abort();
    memcpy(c, list, sizeof list);
    *n = k;
    return c;
}

START_TEST(test_rule)
{
    int n;
    const Case *c = cases(&n);
    ck_assert_int_lt(_i, n);
    check_case(&c[_i]);
}
END_TEST

/* Every op is classified: a rule, no gradient (grad_nodiff), or on the
 * short list of ops that are an error on a gradient path. */
START_TEST(test_table_complete)
{
    static const Op missing[] = {OP_TOPK, OP_RESIZE, OP_CONV2D_BACKPROP_FILTER, OP_MAXPOOL_GRAD, OP_AVGPOOL_GRAD};
    for (int op = 0; op < OP_COUNT; op++) {
        bool nodiff, listed = false;
        for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
            listed |= missing[i] == (Op)op;
        bool has = pass_grad_has_rule((Op)op, &nodiff);
        if (!has && !listed && ir_op_name((Op)op) && strncmp(ir_op_name((Op)op), "send", 4) &&
            strncmp(ir_op_name((Op)op), "recv", 4))
            ck_abort_msg("op '%s' has no gradient rule and is not listed as unsupported", ir_op_name((Op)op));
    }
    bool nodiff;
    ck_assert(pass_grad_has_rule(OP_ARGMAX, &nodiff) && nodiff);
    ck_assert(pass_grad_has_rule(OP_EQ, &nodiff) && nodiff);
    ck_assert(pass_grad_has_rule(OP_MATMUL, &nodiff) && !nodiff);
    ck_assert(!pass_grad_has_rule(OP_TOPK, NULL));
    ck_assert(pass_grad_has_rule(OP_WHILE, &nodiff) && !nodiff); /* unrolled when its trip count is constant */
}
END_TEST

/* Values that reach the loss only through argmax and a comparison get zeros
 * and no path; the loss's own value has gradient 1. */
START_TEST(test_no_path_zero)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(false);
    double xv[4] = {1, 3, 2, 0};
    IrValue x = cst_d(g, F64, S(4), xv, &st);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrType it = {TCRT_I32, S0};
    IrValue am = ir_emit1(g, OP_ARGMAX, &x, 1, &p, &it, &st);
    IrValue l = ir_cast(g, am, F64, &st);
    IrValue wrt[2] = {x, l}, gr[2];
    bool has[2];
    ck_assert_msg(pass_grad_values(g, l, wrt, 2, gr, has, &st), "%s", st.msg);
    ck_assert(!has[0] && has[1]);
    ir_add_fetch(g, "g0", gr[0], &st);
    ir_add_fetch(g, "g1", gr[1], &st);
    fold_all(g);
    for (int i = 0; i < 4; i++)
        ck_assert(cval(g->fetches[0].value, i) == 0);
    ck_assert(cval(g->fetches[1].value, 0) == 1);
    ir_graph_free(g);
}
END_TEST

/* A gradient stop (TF StopGradient: a COPY with p.i[0] = 1): for
 * L = sum(stop(x) * x) the gradient is stop(x) = x, not 2x (hand-derived:
 * only the second factor is differentiated). */
START_TEST(test_stop_gradient)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(false);
    double xv[3] = {1.5, -2, 4};
    IrValue x = cst_d(g, F64, S(3), xv, &st);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1;
    IrValue sx = ir_emit1(g, OP_COPY, &x, 1, &p, ir_value_type(x), &st);
    IrValue l = reduce(g, OP_REDUCE_SUM, ir_binary(g, OP_MUL, sx, x, &st), 1, false, &st);
    IrValue gr[1];
    bool has[1];
    ck_assert_msg(pass_grad_values(g, l, &x, 1, gr, has, &st), "%s", st.msg);
    ck_assert(has[0]);
    ir_add_fetch(g, "g", gr[0], &st);
    fold_all(g);
    for (int i = 0; i < 3; i++)
        ck_assert(cval(g->fetches[0].value, i) == xv[i]);
    ir_graph_free(g);
}
END_TEST

/* ---- errors ---- */

#define HAS(s, sub) ck_assert_msg(strstr((s), (sub)) != NULL, "missing \"%s\" in:\n%s", (sub), (s))

/* ---- while loops (unrolled before differentiation) ---- */

/* Builds WHILE(init) named `name` with cond(p) -> out[0] and body(p) ->
 * out[0..n-1], in graph g (the top level or a region). */
typedef void (*RegionFn)(IrGraph *r, const IrValue *p, IrValue *out, Status *st);

static IrNode *mk_while(IrGraph *g, const char *name, const IrValue *init, int n, RegionFn cond,
                        RegionFn body, Status *st)
{
    IrGraph *cr = st_ok(st) ? ir_region_new(g, st) : NULL, *br = cr ? ir_region_new(g, st) : NULL;
    IrValue cp[8], bp[8], out[8];
    static const char *const names[8] = {"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"};
    ck_assert_int_le(n, 8);
    for (int i = 0; i < n && st_ok(st); i++) {
        cp[i] = ir_add_feed(cr, names[i], ir_value_type(init[i]), st);
        bp[i] = ir_add_feed(br, names[i], ir_value_type(init[i]), st);
    }
    if (!st_ok(st))
        return NULL;
    cond(cr, cp, out, st);
    if (st_ok(st))
        ir_add_fetch(cr, "go", out[0], st);
    body(br, bp, out, st);
    for (int i = 0; i < n && st_ok(st); i++)
        ir_add_fetch(br, names[i], out[i], st);
    if (!st_ok(st))
        return NULL;
    IrGraph *regs[2] = {cr, br};
    ir_graph_set_origin(g, name, "While");
    IrNode *w = ir_emit_region(g, OP_WHILE, init, n, regs, 2, st);
    ir_graph_set_origin(g, NULL, NULL);
    return w;
}

static IrValue i32c(IrGraph *g, double v, Status *st)
{
    return cst_d(g, TCRT_I32, S0, &v, st);
}

static IrValue inc(IrGraph *r, IrValue i, Status *st)
{
    return ir_binary(r, OP_ADD, i, i32c(r, 1, st), st);
}

static IrValue below(IrGraph *r, IrValue i, double n, Status *st)
{
    return ir_binary(r, OP_LT, i, i32c(r, n, st), st);
}

/* sum(y * c) with c = 0.5, -1.25, 0.75, ... (fixed weights) */
static const double LW[8] = {0.5, -1.25, 0.75, 1.5, -0.5, 1.0, -0.75, 0.25};
static IrValue weighted_sum(IrGraph *g, IrValue y, Status *st)
{
    if (!y.node)
        return y;
    const IrType *t = ir_value_type(y);
    int64_t n = ir_shape_count(&t->shape);
    ck_assert_int_le(n, 8);
    IrValue c = cst_d(g, F64, t->shape, LW, st);
    return reduce(g, OP_REDUCE_SUM, ir_binary(g, OP_MUL, y, c, st), ((int64_t)1 << t->shape.rank) - 1, false,
                  st);
}
static double weighted_sum_c(const double *y, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += y[i] * LW[i];
    return s;
}

/* (a) acc' = sin(acc) + x * w, five times (counter i < 5) */
static void acc_cond(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = below(r, p[0], 5, st);
}
static void acc_body(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = inc(r, p[0], st);
    out[1] = ir_binary(r, OP_ADD, ir_unary(r, OP_SIN, p[1], st), ir_binary(r, OP_MUL, p[2], p[3], st), st);
    out[2] = p[2];
    out[3] = p[3];
}
static IrValue l_acc(IrGraph *g, const IrValue *x, Status *st)
{
    double z[3] = {0, 0, 0};
    IrValue init[4] = {i32c(g, 0, st), cst_d(g, F64, S(3), z, st), x[0], x[1]};
    IrNode *w = mk_while(g, "acc_loop", init, 4, acc_cond, acc_body, st);
    return weighted_sum(g, (IrValue){w, 1}, st);
}
static double r_acc(double *const *v)
{
    double acc[3] = {0, 0, 0};
    for (int t = 0; t < 5; t++)
        for (int j = 0; j < 3; j++)
            acc[j] = sin(acc[j]) + v[0][j] * v[1][j];
    return weighted_sum_c(acc, 3);
}

/* (b) RNN: h' = tanh(h W + x_t U), x_t = gather(X, t) (X [4,1,2]), 4 steps;
 * inputs W [3,3], U [2,3], X, h0 [1,3] */
static void rnn_cond(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = below(r, p[0], 4, st);
}
static void rnn_body(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    IrParams gp;
    memset(&gp, 0, sizeof gp);
    IrValue gin[2] = {p[4], p[0]};
    IrValue xt = ir_emit1(r, OP_GATHER, gin, 2, &gp, NULL, st);
    IrValue a[2] = {p[1], p[2]}, b[2] = {xt, p[3]};
    IrValue pre =
        ir_binary(r, OP_ADD, matmul(r, a, 2, false, false, st), matmul(r, b, 2, false, false, st), st);
    out[0] = inc(r, p[0], st);
    out[1] = ir_unary(r, OP_TANH, pre, st);
    out[2] = p[2];
    out[3] = p[3];
    out[4] = p[4];
}
static IrValue l_rnn(IrGraph *g, const IrValue *x, Status *st)
{
    IrValue init[5] = {i32c(g, 0, st), x[3], x[0], x[1], x[2]};
    IrNode *w = mk_while(g, "rnn", init, 5, rnn_cond, rnn_body, st);
    return weighted_sum(g, (IrValue){w, 1}, st);
}
static double r_rnn(double *const *v)
{
    const double *W = v[0], *U = v[1], *X = v[2];
    double h[3] = {v[3][0], v[3][1], v[3][2]}, hn[3];
    for (int t = 0; t < 4; t++) {
        for (int j = 0; j < 3; j++) {
            double s = 0;
            for (int k = 0; k < 3; k++)
                s += h[k] * W[k * 3 + j];
            for (int m = 0; m < 2; m++)
                s += X[t * 2 + m] * U[m * 3 + j];
            hn[j] = tanh(s);
        }
        memcpy(h, hn, sizeof h);
    }
    return weighted_sum_c(h, 3);
}

/* nested: outer (i < 3): x' = inner(x) + w, inner (j < 2): x' = sin(x) * w */
static void nest_cond_o(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = below(r, p[0], 3, st);
}
static void nest_cond_i(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = below(r, p[0], 2, st);
}
static void nest_body_i(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = inc(r, p[0], st);
    out[1] = ir_binary(r, OP_MUL, ir_unary(r, OP_SIN, p[1], st), p[2], st);
    out[2] = p[2];
}
static void nest_body_o(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    IrValue init[3] = {i32c(r, 0, st), p[1], p[2]};
    IrNode *w = mk_while(r, "inner", init, 3, nest_cond_i, nest_body_i, st);
    out[0] = inc(r, p[0], st);
    out[1] = ir_binary(r, OP_ADD, (IrValue){w, 1}, p[2], st);
    out[2] = p[2];
}
static IrValue l_nest(IrGraph *g, const IrValue *x, Status *st)
{
    IrValue init[3] = {i32c(g, 0, st), x[0], x[1]};
    IrNode *w = mk_while(g, "outer", init, 3, nest_cond_o, nest_body_o, st);
    return weighted_sum(g, (IrValue){w, 1}, st);
}
static double r_nest(double *const *v)
{
    double x[2] = {v[0][0], v[0][1]};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++) {
            double y = x[j];
            for (int k = 0; k < 2; k++)
                y = sin(y) * v[1][j];
            x[j] = y + v[1][j];
        }
    return weighted_sum_c(x, 2);
}

/* a cond in the body on the counter: i < 2 ? x * w : sin(x) + w, 3 times */
static void cb_cond(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = below(r, p[0], 3, st);
}
static void cb_body(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    IrGraph *br[2];
    for (int b = 0; b < 2; b++) {
        br[b] = st_ok(st) ? ir_region_new(r, st) : NULL;
        if (!br[b])
            return;
        IrValue a = ir_add_feed(br[b], "x", ir_value_type(p[1]), st);
        IrValue c = ir_add_feed(br[b], "w", ir_value_type(p[2]), st);
        ir_add_fetch(br[b], "y",
                     b == 0 ? ir_binary(br[b], OP_MUL, a, c, st)
                            : ir_binary(br[b], OP_ADD, ir_unary(br[b], OP_SIN, a, st), c, st),
                     st);
    }
    IrValue in[3] = {below(r, p[0], 2, st), p[1], p[2]};
    IrNode *cn = st_ok(st) ? ir_emit_region(r, OP_COND, in, 3, br, 2, st) : NULL;
    out[0] = inc(r, p[0], st);
    out[1] = (IrValue){cn, 0};
    out[2] = p[2];
}
static IrValue l_cbody(IrGraph *g, const IrValue *x, Status *st)
{
    IrValue init[3] = {i32c(g, 0, st), x[0], x[1]};
    IrNode *w = mk_while(g, "cloop", init, 3, cb_cond, cb_body, st);
    return weighted_sum(g, (IrValue){w, 1}, st);
}
static double r_cbody(double *const *v)
{
    double x[2] = {v[0][0], v[0][1]};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            x[j] = i < 2 ? x[j] * v[1][j] : sin(x[j]) + v[1][j];
    return weighted_sum_c(x, 2);
}

/* zero trips (0 < 0 is false): the loop is the identity, dL/dw = 0 */
static void zero_cond(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = below(r, p[0], 0, st);
}
static IrValue l_zero(IrGraph *g, const IrValue *x, Status *st)
{
    IrValue init[3] = {i32c(g, 0, st), x[0], x[1]};
    IrNode *w = mk_while(g, "zloop", init, 3, zero_cond, nest_body_i, st);
    return weighted_sum(g, (IrValue){w, 1}, st);
}
static double r_zero(double *const *v)
{
    return weighted_sum_c(v[0], 2);
}

typedef struct LoopCase {
    const char *name;
    int n_in;
    IrShape shape[MAXIN];
    IrValue (*build)(IrGraph *g, const IrValue *x, Status *st); /* scalar float64 loss */
    double (*ref)(double *const *vals);                         /* the same loss in plain C */
    int n_while_after;                                          /* WHILEs left after differentiation */
} LoopCase;

#define N_LOOP_CASES 5
static LoopCase loop_case(int i)
{
    LoopCase list[N_LOOP_CASES] = {
        {"loop_acc", 2, {S(3), S(3)}, l_acc, r_acc, 0},
        {"loop_rnn", 4, {S(3, 3), S(2, 3), S(4, 1, 2), S(1, 3)}, l_rnn, r_rnn, 0},
        {"loop_nested", 2, {S(2), S(2)}, l_nest, r_nest, 0},
        {"loop_cond_body", 2, {S(2), S(2)}, l_cbody, r_cbody, 0},
        {"loop_zero_trips", 2, {S(2), S(2)}, l_zero, r_zero, 0},
    };
    return list[i];
}

/* The loss and dL/dx from the graph (folded after differentiation) against
 * the plain C loss and its central finite differences (h = 1e-5). */
START_TEST(test_loop)
{
    LoopCase kc = loop_case(_i);
    const LoopCase *k = &kc;
    rng_state = 0x51ed2701u + (uint64_t)_i * 977u;
    double *vals[MAXIN];
    int64_t cnt[MAXIN];
    Status st = ST_INIT;
    IrGraph *g = new_graph(false);
    IrValue xs[MAXIN], gr[MAXIN];
    for (int i = 0; i < k->n_in; i++) {
        cnt[i] = ir_shape_count(&k->shape[i]);
        vals[i] = malloc(sizeof(double) * (size_t)cnt[i]);
        for (int64_t j = 0; j < cnt[i]; j++)
            vals[i][j] = -1 + 2 * rnd();
        xs[i] = cst_d(g, F64, k->shape[i], vals[i], &st);
    }
    IrValue l = k->build(g, xs, &st);
    ck_assert_msg(st_ok(&st) && l.node, "%s: build: %s", k->name, st.msg);
    ck_assert(ir_add_fetch(g, "L", l, &st));
    ck_assert_msg(pass_grad_values(g, l, xs, k->n_in, gr, NULL, &st), "%s: %s", k->name, st.msg);
    Status vst = ST_INIT;
    ck_assert_msg(ir_verify(g, &vst), "%s: verify: %s", k->name, vst.msg);
    int n_while = 0;
    IR_FOR_EACH(g, q)
    {
        n_while += q->op == OP_WHILE;
    }
    ck_assert_int_eq(n_while, k->n_while_after);
    for (int i = 0; i < k->n_in; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "g%d", i);
        ck_assert(ir_add_fetch(g, nm, gr[i], &st));
    }
    run_fold(g);
    fold_all(g);
    double l0 = k->ref(vals), lg = cval(g->fetches[0].value, 0);
    ck_assert_msg(fabs(l0 - lg) <= 1e-12 * (1 + fabs(l0)), "%s: loss %.15g, plain C %.15g", k->name, lg, l0);
    for (int i = 0; i < k->n_in; i++) {
        IrValue gv = g->fetches[1 + i].value;
        ck_assert(ir_shape_eq(&ir_value_type(gv)->shape, &k->shape[i]));
        for (int64_t j = 0; j < cnt[i]; j++) {
            double x0 = vals[i][j], h = 1e-5;
            vals[i][j] = x0 + h;
            double lp = k->ref(vals);
            vals[i][j] = x0 - h;
            double lm = k->ref(vals);
            vals[i][j] = x0;
            double fd = (lp - lm) / (2 * h), an = cval(gv, j);
            ck_assert_msg(fabs(fd - an) <= 1e-6 * (fabs(fd) + fabs(an)) + 1e-9,
                          "%s: d/dx%d[%lld]: analytic %.12g, finite differences %.12g", k->name, i,
                          (long long)j, an, fd);
        }
    }
    ir_graph_free(g);
    for (int i = 0; i < k->n_in; i++)
        free(vals[i]);
}
END_TEST

/* A loop off the gradient path stays a loop, even with a run-time trip
 * count: L = sum(x * w) + loop(n)'s result, dL/dw = x (by hand). */
static void fed_cond(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = ir_binary(r, OP_LT, p[0], p[1], st);
}
static void fed_body(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = ir_binary(r, OP_ADD, p[0], ir_const_scalar_f(r, F64, 1, st), st);
    out[1] = p[1];
}
START_TEST(test_loop_off_path)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(false);
    IrType t = {F64, S0};
    IrValue n = ir_add_feed(g, "n", &t, &st);
    double xv[2] = {1.5, -2}, wv[2] = {0.25, 3};
    IrValue x = cst_d(g, F64, S(2), xv, &st), w = cst_d(g, F64, S(2), wv, &st);
    IrValue init[2] = {ir_const_scalar_f(g, F64, 0, &st), n};
    IrNode *lp = mk_while(g, "count", init, 2, fed_cond, fed_body, &st);
    ck_assert_msg(lp, "%s", st.msg);
    IrValue l = ir_binary(g, OP_ADD, reduce(g, OP_REDUCE_SUM, ir_binary(g, OP_MUL, x, w, &st), 1, false, &st),
                          (IrValue){lp, 0}, &st);
    IrValue gr;
    bool has;
    ck_assert_msg(pass_grad_values(g, l, &w, 1, &gr, &has, &st), "%s", st.msg);
    ck_assert(has && !lp->dead);
    ck_assert(ir_add_fetch(g, "g", gr, &st));
    run_fold(g);
    for (int i = 0; i < 2; i++)
        ck_assert(cval(g->fetches[0].value, i) == xv[i]);
    ir_graph_free(g);
}
END_TEST

/* The trip count must be known at compile time: a condition on fed data,
 * a counter the body updates from fed data, too many iterations, too many
 * nodes. */
static void err_cond(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = ir_binary(r, OP_LT, p[0], ir_const_scalar_f(r, F64, 10, st), st);
}
static void err_body(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = ir_binary(r, OP_ADD, p[0], p[1], st);
    out[1] = p[1];
}
static void big_cond(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = below(r, p[0], 2000000000, st);
}
static void wide_cond(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = below(r, p[0], 99999, st);
}
static void sq_body(IrGraph *r, const IrValue *p, IrValue *out, Status *st)
{
    out[0] = inc(r, p[0], st);
    out[1] = ir_binary(r, OP_MUL, p[1], p[1], st);
}

static const char *loop_error(int which)
{
    static char msg[sizeof(((Status *)0)->msg)];
    Status st = ST_INIT;
    IrGraph *g = new_graph(false);
    IrType t = {F64, S0};
    IrValue x = ir_add_feed(g, "x", &t, &st), init[2];
    IrNode *w;
    if (which == 0) { /* TF-style (i < 10 on a fed i), as before */
        IrGraph *cond = ir_region_new(g, &st), *body = ir_region_new(g, &st);
        IrValue cx = ir_add_feed(cond, "x", &t, &st);
        ir_add_fetch(cond, "c", ir_binary(cond, OP_LT, cx, ir_const_scalar_f(cond, F64, 10, &st), &st), &st);
        IrValue bx = ir_add_feed(body, "x", &t, &st);
        ir_add_fetch(body, "x", ir_binary(body, OP_MUL, bx, bx, &st), &st);
        IrGraph *regs[2] = {cond, body};
        ir_graph_set_origin(g, "loop", "While");
        w = ir_emit_region(g, OP_WHILE, &x, 1, regs, 2, &st);
        ck_assert_msg(w, "%s", st.msg);
    } else if (which == 1) { /* i = 0; i < 10: i += x */
        init[0] = ir_const_scalar_f(g, F64, 0, &st);
        init[1] = x;
        w = mk_while(g, "loop", init, 2, err_cond, err_body, &st);
    } else {
        init[0] = i32c(g, 0, &st);
        init[1] = x;
        w = mk_while(g, which == 2 ? "big" : "wide", init, 2, which == 2 ? big_cond : wide_cond, sq_body,
                     &st);
    }
    ck_assert_msg(w, "%s", st.msg);
    IrValue gr;
    ck_assert(!pass_grad_values(g, (IrValue){w, which == 0 ? 0 : 1}, &x, 1, &gr, NULL, &st));
    snprintf(msg, sizeof msg, "%s", st.msg);
    ir_graph_free(g);
    return msg;
}

START_TEST(test_while_error)
{
    HAS(loop_error(0),
        "the trip count of while loop 'loop' depends on run-time data: its condition reads loop "
        "variable 0 ('x'), whose initial value (node 'x') is not a constant");
    HAS(loop_error(1),
        "the trip count of while loop 'loop' depends on run-time data: its condition reads loop "
        "variable 0 ('v0'), which the body updates from values that are not compile-time "
        "constants");
    HAS(loop_error(2),
        "while loop 'big' runs more than 100000 iterations: too many to unroll for the gradient");
    HAS(loop_error(3),
        "unrolling while loop 'wide' for the gradient would make 499995 nodes (99999 iterations "
        "of 5), more than the limit of 200000");
}
END_TEST

START_TEST(test_missing_rule)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(false);
    double xv[4] = {1, 3, 2, 0};
    IrValue x = cst_d(g, F64, S(4), xv, &st);
    ir_graph_set_origin(g, "x", "TopKV2");
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 2;
    IrNode *tk = ir_emit(g, OP_TOPK, &x, 1, &p, NULL, &st);
    ck_assert_msg(tk, "%s", st.msg);
    IrValue l = reduce(g, OP_REDUCE_SUM, (IrValue){tk, 0}, 1, false, &st);
    IrValue gr;
    ck_assert(!pass_grad_values(g, l, &x, 1, &gr, NULL, &st));
    HAS(st.msg, "no gradient rule for 'topk' (node 'x')");
    ir_graph_free(g);
}
END_TEST

static IrValue variable(IrGraph *g, const char *name, IrShape s, const double *init, bool trainable,
                        Status *st)
{
    ir_graph_set_origin(g, name, "VariableV2");
    IrValue c = cst_d(g, F32, s, init, st);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = trainable;
    IrValue v = ir_emit1(g, OP_VARIABLE, &c, 1, &p, NULL, st);
    ir_graph_set_origin(g, NULL, NULL);
    return v;
}

START_TEST(test_build_errors)
{
    Status st = ST_INIT;
    GradOptions o;
    ck_assert(pass_grad_parse_optimizer("sgd:lr=0.1", &o, &st));
    /* a loss that is not a scalar */
    IrGraph *g = new_graph(false);
    double w0[2] = {1, 2};
    IrValue w = variable(g, "w", S(2), w0, true, &st);
    IrValue y = ir_unary(g, OP_SQUARE, w, &st);
    o.loss_name = "y:0";
    ck_assert(!pass_grad_build(g, y, &o, &st));
    HAS(st.msg, "loss 'y:0' is float32[2]: it must be a float32 or float64 scalar");
    ir_graph_free(g);
    /* a trainable variable whose only way to the loss is argmax */
    st = (Status)ST_INIT;
    g = new_graph(false);
    w = variable(g, "w", S(2), w0, true, &st);
    IrValue v = variable(g, "v", S(2), w0, true, &st);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrType it = {TCRT_I32, S0};
    IrValue am = ir_cast(g, ir_emit1(g, OP_ARGMAX, &w, 1, &p, &it, &st), F32, &st);
    IrValue l = ir_binary(g, OP_ADD, am, reduce(g, OP_REDUCE_SUM, v, 1, false, &st), &st);
    o.loss_name = "loss";
    ck_assert(!pass_grad_build(g, l, &o, &st));
    HAS(st.msg, "trainable variable 'w' has no gradient path to the loss 'loss'");
    ir_graph_free(g);
    /* no trainable variable at all */
    st = (Status)ST_INIT;
    g = new_graph(false);
    w = variable(g, "w", S(2), w0, false, &st);
    l = reduce(g, OP_REDUCE_SUM, w, 1, false, &st);
    ck_assert(!pass_grad_build(g, l, &o, &st));
    HAS(st.msg, "loss 'loss' depends on no trainable variable");
    ir_graph_free(g);
    /* a variable the graph already assigns */
    st = (Status)ST_INIT;
    g = new_graph(false);
    w = variable(g, "w", S(2), w0, true, &st);
    ir_graph_set_origin(g, "w/Assign", "Assign");
    IrValue in[2] = {w, ir_unary(g, OP_NEG, w, &st)};
    ir_emit1(g, OP_ASSIGN, in, 2, NULL, NULL, &st);
    l = reduce(g, OP_REDUCE_SUM, w, 1, false, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ck_assert(!pass_grad_build(g, l, &o, &st));
    HAS(st.msg, "trainable variable 'w' is already assigned by node 'w/Assign'");
    ir_graph_free(g);
}
END_TEST

START_TEST(test_parse_optimizer)
{
    GradOptions o;
    Status st = ST_INIT;
    ck_assert(pass_grad_parse_optimizer("momentum:lr=0.5,momentum=0.8,nesterov=1", &o, &st));
    ck_assert(o.kind == GRAD_MOMENTUM && o.lr == 0.5 && o.momentum == 0.8 && o.nesterov);
    ck_assert(pass_grad_parse_optimizer("adam", &o, &st));
    ck_assert(o.kind == GRAD_ADAM && o.lr == 1e-3 && o.beta1 == 0.9 && o.beta2 == 0.999 && o.epsilon == 1e-8);
    ck_assert(pass_grad_parse_optimizer("adam:lr=0.01,beta1=0.5,beta2=0.75,epsilon=1e-4", &o, &st));
    ck_assert(o.lr == 0.01 && o.beta1 == 0.5 && o.beta2 == 0.75 && o.epsilon == 1e-4);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    static const char *const bad[][2] = {
        {"adam:lr=1e-3,foo=2",
         "optimizer 'adam:lr=1e-3,foo=2': unknown key 'foo' for adam (lr, beta1, beta2, epsilon)"},
        {"rmsprop:lr=1", "unknown optimizer 'rmsprop' (sgd, momentum or adam)"},
        {"sgd", "sgd needs lr=X"},
        {"sgd:lr=abc", "lr = 'abc' is not a number"},
        {"sgd:lr=-1", "lr must be > 0"},
        {"sgd:momentum=0.9,lr=1", "unknown key 'momentum' for sgd (lr)"},
        {"momentum:lr=1,nesterov=2", "nesterov must be 0 or 1"},
        {"adam:beta1=1", "beta1 and beta2 must be in [0, 1)"},
        {"sgd:lr", "expected KEY=VALUE, got 'lr'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        st = (Status)ST_INIT;
        ck_assert_msg(!pass_grad_parse_optimizer(bad[i][0], &o, &st), "%s accepted", bad[i][0]);
        HAS(st.msg, bad[i][1]);
    }
}
END_TEST

/* ---- optimizer steps, executed by folding ---- */

typedef struct VarState {
    char name[64];
    double v[4];
} VarState;

/* One training step of loss(w) = build(w) with the given optimizer: the
 * graph is rebuilt with w's current value, every variable (slots too) is
 * given its value from `vars` (when present), the step is evaluated by
 * folding, and `vars` gets every assigned value.  Returns the loss. */
typedef IrValue (*LossFn)(IrGraph *g, IrValue w, Status *st);

static double step(LossFn fn, const char *opt, VarState *vars, int *n_vars, int *n_assign)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(false);
    IrValue w = variable(g, "w", S(1), vars[0].v, true, &st);
    IrValue l = fn(g, w, &st);
    ck_assert(ir_add_fetch(g, "loss", l, &st));
    GradOptions o;
    ck_assert(pass_grad_parse_optimizer(opt, &o, &st));
    ck_assert_msg(pass_grad_build(g, l, &o, &st), "%s", st.msg);
    Status vst = ST_INIT;
    ck_assert_msg(ir_verify(g, &vst), "verify: %s", vst.msg);
    /* variable values, then reads replaced by them */
    *n_assign = 0;
    IrNode *assigns[16];
    IR_FOR_EACH(g, n)
    {
        if (n->op == OP_ASSIGN)
            assigns[(*n_assign)++] = n;
        if (n->op != OP_VARIABLE)
            continue;
        IrNode *init = n->inputs[0].node;
        for (int i = 0; i < *n_vars; i++)
            if (!strcmp(vars[i].name, n->origin))
                for (int64_t j = 0; j < ir_shape_count(&init->out[0].type.shape); j++)
                    ((float *)init->data)[j] = (float)vars[i].v[j];
        ir_replace_uses(g, (IrValue){n, 0}, n->inputs[0]);
    }
    for (int i = 0; i < *n_assign; i++)
        ck_assert(ir_add_fetch(g, assigns[i]->inputs[0].node->origin, assigns[i]->inputs[1], &st));
    fold_all(g);
    double loss = cval(g->fetches[0].value, 0);
    for (int i = 1; i < g->n_fetches; i++) {
        int k = 0;
        while (k < *n_vars && strcmp(vars[k].name, g->fetches[i].name))
            k++;
        if (k == *n_vars) {
            snprintf(vars[k].name, sizeof vars[k].name, "%s", g->fetches[i].name);
            (*n_vars)++;
        }
        vars[k].v[0] = cval(g->fetches[i].value, 0);
    }
    ir_graph_free(g);
    return loss;
}

/* (2w - 1)^2 */
static IrValue loss_lin(IrGraph *g, IrValue w, Status *st)
{
    IrValue e = ir_binary(g, OP_SUB, ir_binary(g, OP_MUL, w, ir_const_scalar_f(g, F32, 2, st), st),
                          ir_const_scalar_f(g, F32, 1, st), st);
    return reduce(g, OP_REDUCE_SUM, ir_unary(g, OP_SQUARE, e, st), 1, false, st);
}

/* w^2 */
static IrValue loss_sq(IrGraph *g, IrValue w, Status *st)
{
    return reduce(g, OP_REDUCE_SUM, ir_unary(g, OP_SQUARE, w, st), 1, false, st);
}

START_TEST(test_sgd_by_hand)
{
    /* L = (2w - 1)^2, dL/dw = 4(2w - 1), lr = 0.1, w0 = 3:
     *   step 1: L = 25, g = 4*5 = 20, w1 = 3 - 0.1*20 = 1
     *   step 2: L = 1,  g = 4*1 = 4,  w2 = 1 - 0.1*4 = 0.6 */
    VarState vars[8] = {{"w", {3}}};
    int n_vars = 1, n_assign;
    ck_assert_double_eq_tol(step(loss_lin, "sgd:lr=0.1", vars, &n_vars, &n_assign), 25, 1e-6);
    ck_assert_int_eq(n_assign, 1);
    ck_assert_double_eq_tol(vars[0].v[0], 1, 1e-6);
    ck_assert_double_eq_tol(step(loss_lin, "sgd:lr=0.1", vars, &n_vars, &n_assign), 1, 1e-6);
    ck_assert_double_eq_tol(vars[0].v[0], 0.6, 1e-6);
    ck_assert_int_eq(n_vars, 1);
}
END_TEST

START_TEST(test_momentum_by_hand)
{
    /* L = w^2, g = 2w, lr = 0.1, momentum = 0.5, w0 = 1, accum0 = 0:
     *   step 1: g = 2,   accum1 = 0*0.5 + 2 = 2,      w1 = 1 - 0.1*2 = 0.8
     *   step 2: g = 1.6, accum2 = 2*0.5 + 1.6 = 2.6,  w2 = 0.8 - 0.26 = 0.54
     * nesterov, same start:
     *   step 1: accum1 = 2, w1 = 1 - (2*0.1 + 2*0.5*0.1) = 0.7
     *   step 2: g = 1.4, accum2 = 1 + 1.4 = 2.4, w2 = 0.7 - (0.14 + 0.12) = 0.44 */
    VarState vars[8] = {{"w", {1}}};
    int n_vars = 1, n_assign;
    step(loss_sq, "momentum:lr=0.1,momentum=0.5", vars, &n_vars, &n_assign);
    ck_assert_int_eq(n_assign, 2);
    ck_assert_int_eq(n_vars, 2);
    ck_assert_str_eq(vars[1].name, "w/Momentum");
    ck_assert_double_eq_tol(vars[0].v[0], 0.8, 1e-6);
    ck_assert_double_eq_tol(vars[1].v[0], 2, 1e-6);
    step(loss_sq, "momentum:lr=0.1,momentum=0.5", vars, &n_vars, &n_assign);
    ck_assert_double_eq_tol(vars[0].v[0], 0.54, 1e-6);
    ck_assert_double_eq_tol(vars[1].v[0], 2.6, 1e-6);
    VarState nv[8] = {{"w", {1}}};
    n_vars = 1;
    step(loss_sq, "momentum:lr=0.1,momentum=0.5,nesterov=1", nv, &n_vars, &n_assign);
    ck_assert_double_eq_tol(nv[0].v[0], 0.7, 1e-6);
    step(loss_sq, "momentum:lr=0.1,momentum=0.5,nesterov=1", nv, &n_vars, &n_assign);
    ck_assert_double_eq_tol(nv[0].v[0], 0.44, 1e-6);
    ck_assert_double_eq_tol(nv[1].v[0], 2.4, 1e-6);
}
END_TEST

START_TEST(test_adam_by_hand)
{
    /* L = w^2, g = 2w, lr = 0.1, beta1 = 0.5, beta2 = 0.75, epsilon = 0.01,
     * w0 = 1, m0 = v0 = 0, beta1_power0 = 0.5, beta2_power0 = 0.75:
     * step 1: g = 2
     *   lr_t = 0.1 * sqrt(1 - 0.75) / (1 - 0.5) = 0.1 * 0.5 / 0.5 = 0.1
     *   m1 = 0 + (2 - 0) * 0.5 = 1
     *   v1 = 0 + (4 - 0) * 0.25 = 1
     *   w1 = 1 - 1 * 0.1 / (sqrt(1) + 0.01) = 1 - 0.1/1.01 = 0.900990099...
     *   beta1_power1 = 0.25, beta2_power1 = 0.5625
     * step 2: g = 2 * w1 = 1.801980198...
     *   lr_t = 0.1 * sqrt(1 - 0.5625) / (1 - 0.25) = 0.1 * 0.661437828 / 0.75 = 0.0881917104
     *   m2 = 1 + (1.801980198 - 1) * 0.5 = 1.400990099
     *   v2 = 1 + (3.247132634 - 1) * 0.25 = 1.561783158
     *   w2 = 0.900990099 - 1.400990099 * 0.0881917104 / (1.249713230 + 0.01)
     *      = 0.900990099 - 0.123555727 / 1.259713230 = 0.900990099 - 0.098083... = 0.802906... */
    const char *opt = "adam:lr=0.1,beta1=0.5,beta2=0.75,epsilon=0.01";
    VarState vars[8] = {{"w", {1}}};
    int n_vars = 1, n_assign;
    step(loss_sq, opt, vars, &n_vars, &n_assign);
    ck_assert_int_eq(n_assign, 5); /* w, w/Adam, w/Adam_1, beta1_power, beta2_power */
    ck_assert_int_eq(n_vars, 5);
    double m = 0, v = 0, b1 = 0, b2 = 0;
    for (int i = 1; i < n_vars; i++) {
        if (!strcmp(vars[i].name, "w/Adam"))
            m = vars[i].v[0];
        else if (!strcmp(vars[i].name, "w/Adam_1"))
            v = vars[i].v[0];
        else if (!strcmp(vars[i].name, "beta1_power"))
            b1 = vars[i].v[0];
        else if (!strcmp(vars[i].name, "beta2_power"))
            b2 = vars[i].v[0];
        else
            ck_abort_msg("unexpected variable '%s'", vars[i].name);
    }
    ck_assert_double_eq_tol(m, 1, 1e-6);
    ck_assert_double_eq_tol(v, 1, 1e-6);
    ck_assert_double_eq_tol(b1, 0.25, 1e-7);
    ck_assert_double_eq_tol(b2, 0.5625, 1e-7);
    ck_assert_double_eq_tol(vars[0].v[0], 0.900990099, 1e-6);
    step(loss_sq, opt, vars, &n_vars, &n_assign);
    ck_assert_double_eq_tol(vars[0].v[0], 0.802907686, 1e-6);
}
END_TEST

/* --trainable on a built graph: the named constant becomes a trainable
 * variable (the others stay constants); "all" picks matmul operands and
 * biases only. */
START_TEST(test_trainable)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(false);
    IrType t = {F32, S(1, 2)};
    IrValue x = ir_add_feed(g, "x", &t, &st);
    double wv[4] = {1, 2, 3, 4}, bv[2] = {0.5, -0.5}, sv[2] = {2, 2};
    ir_graph_set_origin(g, "w", "Const");
    IrValue w = cst_d(g, F32, S(2, 2), wv, &st);
    ir_graph_set_origin(g, "b", "Const");
    IrValue b = cst_d(g, F32, S(2), bv, &st);
    ir_graph_set_origin(g, "s", "Const");
    IrValue s = cst_d(g, F32, S(2), sv, &st);
    ir_graph_set_origin(g, NULL, NULL);
    IrValue mmv[2] = {x, w};
    IrValue y =
        ir_binary(g, OP_MUL, ir_binary(g, OP_ADD, matmul(g, mmv, 2, false, false, &st), b, &st), s, &st);
    ir_add_fetch(g, "y", y, &st);
    ck_assert_msg(pass_grad_trainable(g, "all", &st), "%s", st.msg);
    int nv = 0;
    IR_FOR_EACH(g, n)
    {
        if (n->op == OP_VARIABLE) {
            ck_assert(!strcmp(n->origin, "w") || !strcmp(n->origin, "b"));
            ck_assert_int_eq(n->p.i[0], 1);
            nv++;
        }
    }
    ck_assert_int_eq(nv, 2);
    Status vst = ST_INIT;
    ck_assert_msg(ir_verify(g, &vst), "%s", vst.msg);
    ck_assert(!pass_grad_trainable(g, "nope", &st));
    HAS(st.msg, "--trainable: no constant named 'nope' in the compiled graph");
    ir_graph_free(g);
}
END_TEST

/* --trainable all picks the weights a loop reads (loop-invariant float
 * operands: the RNN's W, U and inputs X) but not a loop variable the body
 * changes (h0) or the int counter. */
START_TEST(test_trainable_loop_weights)
{
    Status st = ST_INIT;
    IrGraph *g = new_graph(false);
    double wv[9] = {0.1, 0.2, 0.3, -0.1, 0.5, 0.2, 0.4, -0.3, 0.1}, uv[6] = {1, 0, -1, 0.5, 0.5, 0.5},
           xv[8] = {1, 2, 3, 4, 5, 6, 7, 8}, hv[3] = {0, 0, 0};
    const char *nm[4] = {"W", "U", "X", "h0"};
    IrValue x[4];
    IrShape sh[4] = {S(3, 3), S(2, 3), S(4, 1, 2), S(1, 3)};
    const double *vals[4] = {wv, uv, xv, hv};
    for (int i = 0; i < 4; i++) {
        ir_graph_set_origin(g, nm[i], "Const");
        x[i] = cst_d(g, F64, sh[i], vals[i], &st);
    }
    ir_graph_set_origin(g, NULL, NULL);
    IrValue l = l_rnn(g, x, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    ir_add_fetch(g, "loss", l, &st);
    ck_assert_msg(pass_grad_trainable(g, "all", &st), "%s", st.msg);
    bool seen[4] = {false};
    IR_FOR_EACH(g, n) {
        for (int i = 0; i < 4; i++)
            if (n->op == OP_VARIABLE && !strcmp(n->origin, nm[i]))
                seen[i] = true;
    }
    ck_assert(seen[0] && seen[1] && seen[2] && !seen[3]);
    Status vst = ST_INIT;
    ck_assert_msg(ir_verify(g, &vst), "%s", vst.msg);
    ir_graph_free(g);
}
END_TEST

/* Fault injection (STYLE rule 19): every allocation of building a graph
 * and its Adam training step fails in turn; each run ends with ST_NOMEM
 * (never a crash), until one succeeds. */
static void build_and_train(Status *st)
{
    IrGraph *g = ir_graph_new(NULL, st);
    if (!g)
        return;
    g->fold_on_build = false;
    IrType t = {F32, S(3, 2)};
    IrValue x = ir_add_feed(g, "x", &t, st);
    double w0[4] = {1, -1, 0.5, 2}, b0[2] = {0.1, 0.2};
    IrValue w = variable(g, "w", S(2, 2), w0, true, st);
    IrValue b = variable(g, "b", S(2), b0, true, st);
    IrValue mm[2] = {x, w};
    IrValue y = ir_unary(g, OP_TANH, ir_binary(g, OP_ADD, matmul(g, mm, 2, false, true, st), b, st), st);
    IrValue l = reduce(g, OP_REDUCE_SUM, ir_unary(g, OP_SQUARE, y, st), 3, false, st);
    GradOptions o;
    if (st_ok(st) && pass_grad_parse_optimizer("adam:lr=0.1", &o, st))
        pass_grad_build(g, l, &o, st);
    ir_graph_free(g);
}

/* nested loops with a cond in the body, differentiated (no checks: every
 * allocation may fail) */
static void build_loop_grad(Status *st)
{
    IrGraph *g = ir_graph_new(NULL, st);
    if (!g)
        return;
    g->fold_on_build = false;
    double xv[2] = {0.5, -1}, wv[2] = {0.25, 2};
    IrValue x[2] = {cst_d(g, F64, S(2), xv, st), cst_d(g, F64, S(2), wv, st)}, gr[2];
    IrValue l1 = st_ok(st) ? l_nest(g, x, st) : x[0];
    IrValue l2 = st_ok(st) ? l_cbody(g, x, st) : x[0];
    IrValue l = ir_binary(g, OP_ADD, l1, l2, st);
    if (st_ok(st))
        pass_grad_values(g, l, x, 2, gr, NULL, st);
    ir_graph_free(g);
}

START_TEST(test_fault_injection_loops)
{
    int n;
    for (n = 1; n < 20000; n++) {
        Status st = ST_INIT;
        xx_fail_alloc_set(n);
        build_loop_grad(&st);
        xx_fail_alloc_set(0);
        if (st_ok(&st))
            break;
        ck_assert_msg(st.code == ST_NOMEM, "N=%d: code %d: %s", n, st.code, st.msg);
    }
    ck_assert_int_gt(n, 3);
    ck_assert_int_lt(n, 20000);
}
END_TEST

START_TEST(test_fault_injection)
{
    int n;
    for (n = 1; n < 5000; n++) {
        Status st = ST_INIT;
        xx_fail_alloc_set(n);
        build_and_train(&st);
        xx_fail_alloc_set(0);
        if (st_ok(&st))
            break;
        ck_assert_msg(st.code == ST_NOMEM, "N=%d: code %d: %s", n, st.code, st.msg);
    }
    ck_assert_int_gt(n, 3);
    ck_assert_int_lt(n, 5000);
}
END_TEST

static Suite *grad_suite(void)
{
    Suite *s = suite_create("grad");
    TCase *tc = tcase_create("rules");
    int n;
    cases(&n);
    tcase_add_loop_test(tc, test_rule, 0, n);
    tcase_add_test(tc, test_table_complete);
    tcase_add_test(tc, test_no_path_zero);
    tcase_add_test(tc, test_stop_gradient);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    TCase *tl = tcase_create("loops");
    tcase_add_loop_test(tl, test_loop, 0, N_LOOP_CASES);
    tcase_add_test(tl, test_loop_off_path);
    tcase_set_timeout(tl, 60);
    suite_add_tcase(s, tl);
    TCase *te = tcase_create("errors");
    tcase_add_test(te, test_missing_rule);
    tcase_add_test(te, test_while_error);
    tcase_set_timeout(te, 60);
    tcase_add_test(te, test_build_errors);
    tcase_add_test(te, test_parse_optimizer);
    suite_add_tcase(s, te);
    TCase *to = tcase_create("optimizers");
    tcase_add_test(to, test_sgd_by_hand);
    tcase_add_test(to, test_momentum_by_hand);
    tcase_add_test(to, test_adam_by_hand);
    tcase_add_test(to, test_trainable);
    tcase_add_test(to, test_trainable_loop_weights);
    tcase_add_test(to, test_fault_injection);
    tcase_add_test(to, test_fault_injection_loops);
    suite_add_tcase(s, to);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(grad_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
