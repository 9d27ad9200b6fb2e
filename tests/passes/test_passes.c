/* tests/passes/test_passes.c - unit tests for passes/ (Check suite "passes").
 *
 * Small hand-built graphs, one pass at a time, asserting on structure:
 * cse merges duplicate and commuted adds (not commuted subs), dce removes an
 * unused branch, fold folds a constant subgraph (values derived by hand),
 * memplan reuses memory on a chain (arena size derived by hand) and, on
 * random DAGs, never lets two buffers with overlapping lifetimes overlap in
 * memory (lifetimes recomputed here independently of the planner), and the
 * pipeline honours disabled passes and writes dumps.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "passes/passes.h"

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
    IrType t = {TCRT_F32, ir_shape_make(1, &n)};
    IrValue v = ir_add_feed(g, name, &t, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    return v;
}

static IrValue bin(IrGraph *g, Op op, IrValue a, IrValue b)
{
    Status st = ST_INIT;
    IrValue v = ir_binary(g, op, a, b, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    return v;
}

static IrValue un(IrGraph *g, Op op, IrValue a)
{
    Status st = ST_INIT;
    IrValue v = ir_unary(g, op, a, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    return v;
}

static void fetch(IrGraph *g, const char *name, IrValue v)
{
    Status st = ST_INIT;
    ck_assert_msg(ir_add_fetch(g, name, v, &st), "%s", st.msg);
}

static PassResult run_pass(IrGraph *g, PassResult (*fn)(IrGraph *, PassCtx *))
{
    Status st = ST_INIT;
    PassCtx cx;
    arena_init(&cx.scratch, NULL);
    cx.st = &st;
    PassResult r = fn(g, &cx);
    arena_reset(&cx.scratch);
    ck_assert_msg(r != PASS_FAILED && st_ok(&st), "pass failed: %s", st.msg);
    Status vst = ST_INIT;
    ck_assert_msg(ir_verify(g, &vst), "verify: %s", vst.msg);
    return r;
}

static int count_op(const IrGraph *g, Op op)
{
    int c = 0;
    IR_FOR_EACH(g, n) {
        c += n->op == op;
    }
    return c;
}

/* ---- cse ---- */

START_TEST(test_cse_merges_duplicates)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x:0", 4), y = feed(g, "y:0", 4);
    IrValue a1 = bin(g, OP_ADD, x, y);
    IrValue a2 = bin(g, OP_ADD, x, y);   /* duplicate */
    IrValue a3 = bin(g, OP_ADD, y, x);   /* commuted duplicate */
    IrValue s1 = bin(g, OP_SUB, x, y);
    IrValue s2 = bin(g, OP_SUB, y, x);   /* not commutative: stays */
    IrValue m1 = bin(g, OP_MUL, a1, a2);
    IrValue m2 = bin(g, OP_MUL, m1, a3);
    IrValue m3 = bin(g, OP_MUL, s1, s2);
    IrValue r = bin(g, OP_ADD, m2, m3);
    fetch(g, "r:0", r);
    fetch(g, "a2:0", a2);

    ck_assert_int_eq(run_pass(g, pass_cse), PASS_CHANGED);
    ck_assert(a2.node->dead);
    ck_assert(a3.node->dead);
    ck_assert(!a1.node->dead);
    ck_assert(!s2.node->dead);
    ck_assert_ptr_eq(m1.node->inputs[0].node, a1.node);
    ck_assert_ptr_eq(m1.node->inputs[1].node, a1.node);
    ck_assert_ptr_eq(m2.node->inputs[1].node, a1.node);
    ck_assert_ptr_eq(g->fetches[1].value.node, a1.node);
    /* a second run finds nothing */
    ck_assert_int_eq(run_pass(g, pass_cse), PASS_SAME);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_cse_merges_chains_and_consts)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x:0", 3);
    Status st = ST_INIT;
    float data[3] = {1, 2, 3};
    IrShape s3 = ir_shape_make(1, (int64_t[]){3});
    IrValue c1 = ir_const(g, TCRT_F32, &s3, data, &st);
    IrValue c2 = ir_const(g, TCRT_F32, &s3, data, &st);   /* same bytes */
    float other[3] = {1, 2, 4};
    IrValue c3 = ir_const(g, TCRT_F32, &s3, other, &st);
    ck_assert(st_ok(&st));
    IrValue e1 = un(g, OP_EXP, bin(g, OP_MUL, x, c1));
    IrValue e2 = un(g, OP_EXP, bin(g, OP_MUL, c2, x)); /* same chain through c2 */
    IrValue e3 = un(g, OP_EXP, bin(g, OP_MUL, x, c3));
    fetch(g, "r:0", bin(g, OP_ADD, bin(g, OP_ADD, e1, e2), e3));
    ck_assert_int_eq(run_pass(g, pass_cse), PASS_CHANGED);
    ck_assert(c2.node->dead);
    ck_assert(!c3.node->dead);
    ck_assert(e2.node->dead);
    ck_assert(!e3.node->dead);
    run_pass(g, pass_dce);
    /* x, c1, c3, mul x2, exp x2, add x2 */
    ck_assert_int_eq(ir_graph_live_count(g), 9);
    ir_graph_free(g);
}
END_TEST

/* ---- dce ---- */

START_TEST(test_dce_removes_unused_branch)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x:0", 4);
    IrValue unused_feed = feed(g, "u:0", 4);
    IrValue a = un(g, OP_RELU, x);
    IrValue b = un(g, OP_NEG, x);        /* unused branch */
    IrValue c = un(g, OP_EXP, b);
    (void)c;
    fetch(g, "a:0", a);
    ck_assert_int_eq(run_pass(g, pass_dce), PASS_CHANGED);
    ck_assert_int_eq(count_op(g, OP_NEG), 0);
    ck_assert_int_eq(count_op(g, OP_EXP), 0);
    ck_assert_int_eq(count_op(g, OP_RELU), 1);
    /* feeds stay: they are the artifact's API */
    ck_assert(!unused_feed.node->dead);
    ck_assert_int_eq(ir_graph_live_count(g), 3);
    ck_assert_int_eq(g->n_nodes, 3);
    ck_assert_int_eq(run_pass(g, pass_dce), PASS_SAME);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_dce_keeps_control_deps)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x:0", 4);
    IrValue side = un(g, OP_NEG, x);     /* only a control dependency of a */
    IrValue a = un(g, OP_RELU, x);
    Status st = ST_INIT;
    ir_add_ctrl(g, a.node, side.node, &st);
    fetch(g, "a:0", a);
    run_pass(g, pass_dce);
    ck_assert_int_eq(count_op(g, OP_NEG), 1);
    ir_graph_free(g);
}
END_TEST

/* ---- fold ---- */

START_TEST(test_fold_const_subgraph)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x:0", 2);
    Status st = ST_INIT;
    IrShape s2 = ir_shape_make(1, (int64_t[]){2});
    IrValue c1 = ir_const(g, TCRT_F32, &s2, (float[]){1, 2}, &st);
    IrValue c2 = ir_const(g, TCRT_F32, &s2, (float[]){3, 4}, &st);
    ck_assert(st_ok(&st));
    IrValue s = bin(g, OP_ADD, c1, c2);      /* {4, 6} */
    IrValue sq = un(g, OP_SQUARE, s);        /* {16, 36} */
    IrValue m = bin(g, OP_MUL, sq, x);
    fetch(g, "m:0", m);
    fetch(g, "s:0", s);
    ck_assert_int_eq(run_pass(g, pass_fold), PASS_CHANGED);
    IrNode *k = m.node->inputs[0].node;
    ck_assert_int_eq(k->op, OP_CONST);
    const float *v = k->data;
    ck_assert_float_eq(v[0], 16.0f);   /* (1+3)^2 */
    ck_assert_float_eq(v[1], 36.0f);   /* (2+4)^2 */
    IrNode *f = g->fetches[1].value.node;
    ck_assert_int_eq(f->op, OP_CONST);
    ck_assert_float_eq(((const float *)f->data)[0], 4.0f);
    ck_assert_float_eq(((const float *)f->data)[1], 6.0f);
    /* the constant comes before its user */
    int pos_k = -1, pos_m = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i] == k)
            pos_k = i;
        if (g->nodes[i] == m.node)
            pos_m = i;
    }
    ck_assert_int_lt(pos_k, pos_m);
    run_pass(g, pass_dce);
    ck_assert_int_eq(count_op(g, OP_ADD), 0);
    ck_assert_int_eq(count_op(g, OP_SQUARE), 0);
    ck_assert_int_eq(count_op(g, OP_MUL), 1);
    ck_assert_int_eq(run_pass(g, pass_fold), PASS_SAME);
    ir_graph_free(g);
}
END_TEST

/* ---- memplan ---- */

static IrValue transpose(IrGraph *g, IrValue x)
{
    Status st = ST_INIT;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1;
    p.i[1] = 0;
    IrValue v = ir_emit1(g, OP_TRANSPOSE, &x, 1, &p, NULL, &st);
    ck_assert_msg(st_ok(&st), "%s", st.msg);
    return v;
}

START_TEST(test_memplan_chain_reuses)
{
    IrGraph *g = new_graph();
    Status st = ST_INIT;
    IrType t = {TCRT_F32, ir_shape_make(2, (int64_t[]){32, 32})};
    IrValue x = ir_add_feed(g, "x:0", &t, &st);   /* 4096 bytes each */
    IrValue b = transpose(g, x);
    IrValue c = transpose(g, b);
    IrValue d = transpose(g, c);
    IrValue e = transpose(g, d);
    IrValue f = transpose(g, e);
    fetch(g, "f:0", f);
    run_pass(g, pass_memplan);
    /* x and f pinned; b [1,2], c [2,3], d [3,4], e [4,5]: b/d and c/e can
     * share, so 4 buffers of 4096 instead of 6. */
    ck_assert_int_eq(g->unplanned_bytes, 6 * 4096);
    ck_assert_int_eq(g->arena_bytes, 4 * 4096);
    ck_assert_int_lt(g->arena_bytes, g->unplanned_bytes);
    ck_assert_int_ne(b.node->out[0].offset, c.node->out[0].offset);
    ck_assert_int_ne(x.node->out[0].offset, f.node->out[0].offset);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_memplan_fuses_elementwise_chain)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x:0", 1024);
    IrValue b = un(g, OP_RELU, x);    /* -> c: fused */
    IrValue c = un(g, OP_NEG, b);     /* -> d: fused */
    IrValue d = un(g, OP_EXP, c);     /* fetched: keeps its buffer */
    IrValue e = bin(g, OP_ADD, d, x); /* -> f: fused */
    IrValue f = un(g, OP_SQRT, e);    /* -> s: fused */
    IrValue s = un(g, OP_SQUARE, f);  /* used twice, by one node: fused */
    IrValue r = bin(g, OP_MUL, s, s); /* -> abs: fused */
    Status st = ST_INIT;
    IrValue a = un(g, OP_ABS, r);     /* feeds a COPY: keeps its buffer */
    IrShape s2 = ir_shape_make(2, (int64_t[]){32, 32});
    IrValue q = ir_reshape(g, a, &s2, &st);
    IrValue u = un(g, OP_NEG, x);     /* two consumer nodes: keeps its buffer */
    IrValue v1 = bin(g, OP_ADD, u, x);
    IrValue v2 = bin(g, OP_MUL, u, x);
    IrValue w = bin(g, OP_SUB, v1, v2);
    IrShape s1 = ir_shape_make(1, (int64_t[]){1});
    IrValue one = ir_const(g, TCRT_F32, &s1, (float[]){1}, &st);
    IrValue bc = bin(g, OP_ADD, one, one); /* [1] into a [1024] consumer: other shape */
    IrValue z = bin(g, OP_ADD, w, bc);
    ck_assert(st_ok(&st));
    fetch(g, "d:0", d);
    fetch(g, "q:0", q);
    fetch(g, "z:0", z);
    run_pass(g, pass_memplan);
    ck_assert_int_eq(b.node->out[0].offset, PASS_OFFSET_FUSED);
    ck_assert_int_eq(c.node->out[0].offset, PASS_OFFSET_FUSED);
    ck_assert_int_ge(d.node->out[0].offset, 0);
    ck_assert_int_eq(e.node->out[0].offset, PASS_OFFSET_FUSED);
    ck_assert_int_eq(f.node->out[0].offset, PASS_OFFSET_FUSED);
    ck_assert_int_eq(s.node->out[0].offset, PASS_OFFSET_FUSED);
    ck_assert_int_eq(r.node->out[0].offset, PASS_OFFSET_FUSED);
    ck_assert_int_ge(a.node->out[0].offset, 0);
    ck_assert_int_ge(u.node->out[0].offset, 0);
    ck_assert_int_eq(v1.node->out[0].offset, PASS_OFFSET_FUSED);
    ck_assert_int_eq(v2.node->out[0].offset, PASS_OFFSET_FUSED);
    ck_assert_int_eq(w.node->out[0].offset, PASS_OFFSET_FUSED);
    ck_assert_int_ge(bc.node->out[0].offset, 0);
    ck_assert_int_ge(z.node->out[0].offset, 0);
    /* x is read by fused e at d..f's root (a's position): u's buffer and
     * a's never overlap x (pinned anyway); a (root of e,f,s,r) must not
     * overlap d, which it reads. */
    int64_t ao = a.node->out[0].offset, dof = d.node->out[0].offset;
    ck_assert(ao + 4096 <= dof || dof + 4096 <= ao);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_memplan_reshape_in_place)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x:0", 1024);
    IrValue b = un(g, OP_RELU, x);
    Status st = ST_INIT;
    IrShape s2 = ir_shape_make(2, (int64_t[]){32, 32});
    IrValue r = ir_reshape(g, b, &s2, &st);      /* b dies here: r shares its buffer */
    IrValue r2 = ir_reshape(g, x, &s2, &st);     /* x is pinned: needs its own buffer */
    ck_assert(st_ok(&st));
    IrValue y = bin(g, OP_ADD, un(g, OP_NEG, r), r2);
    fetch(g, "y:0", y);
    run_pass(g, pass_memplan);
    ck_assert_int_eq(r.node->out[0].offset, b.node->out[0].offset);
    ck_assert_int_ne(r2.node->out[0].offset, x.node->out[0].offset);
    ir_graph_free(g);
}
END_TEST

START_TEST(test_memplan_consts_and_fetched_const)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x:0", 3);
    Status st = ST_INIT;
    IrShape s3 = ir_shape_make(1, (int64_t[]){3});
    IrValue c1 = ir_const(g, TCRT_F32, &s3, (float[]){1, 2, 3}, &st);  /* 12 bytes */
    IrValue c2 = ir_const(g, TCRT_F32, &s3, (float[]){4, 5, 6}, &st);
    IrValue unused = ir_const(g, TCRT_F32, &s3, (float[]){7, 8, 9}, &st);
    (void)unused;
    fetch(g, "y:0", bin(g, OP_ADD, x, c1));
    fetch(g, "c:0", c2);   /* a constant result must be copied into the arena */
    run_pass(g, pass_memplan);
    ck_assert_int_eq(c1.node->out[0].offset, 0);
    ck_assert_int_eq(c2.node->out[0].offset, 64);
    ck_assert_int_eq(unused.node->out[0].offset, -1);
    ck_assert_int_eq(g->weights_bytes, 128);
    IrNode *cp = g->fetches[1].value.node;
    ck_assert_int_eq(cp->op, OP_COPY);
    ck_assert_ptr_eq(cp->inputs[0].node, c2.node);
    ck_assert_int_ge(cp->out[0].offset, 0);
    ir_graph_free(g);
}
END_TEST

/* Deterministic LCG so failures reproduce. */
static uint32_t rng_state;
static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (rng_state >> 8) % n;
}

START_TEST(test_memplan_random_dags_no_overlap)
{
    static const int64_t sizes[3] = {16, 100, 1000};
    int total_fused = 0;
    for (int trial = 0; trial < 60; trial++) {
        rng_state = 12345u + (uint32_t)trial * 7919u;
        IrGraph *g = new_graph();
        IrValue vals[200];
        int cls[200], n_vals = 0;
        for (int c = 0; c < 3; c++) {
            char name[16];
            snprintf(name, sizeof name, "in%d:0", c);
            vals[n_vals] = feed(g, name, sizes[c]);
            cls[n_vals++] = c;
        }
        int n_nodes = 10 + (int)rnd(60);
        for (int i = 0; i < n_nodes; i++) {
            int a = (int)rnd((uint32_t)n_vals);
            IrValue v;
            uint32_t kind = rnd(5);
            if (kind == 4) {
                Status st = ST_INIT;
                IrShape same = ir_value_type(vals[a])->shape;
                v = ir_reshape(g, vals[a], &same, &st); /* a COPY: may share its input's buffer */
                ck_assert(st_ok(&st));
            } else if (kind >= 2) {
                static const Op un_ops[4] = {OP_RELU, OP_NEG, OP_ABS, OP_SQUARE};
                v = un(g, un_ops[rnd(4)], vals[a]);
            } else {
                int b = a;
                for (int t = 0; t < 10; t++) {   /* an earlier value of the same size */
                    int cand = (int)rnd((uint32_t)n_vals);
                    if (cls[cand] == cls[a]) {
                        b = cand;
                        break;
                    }
                }
                v = bin(g, rnd(2) ? OP_ADD : OP_MUL, vals[a], vals[b]);
            }
            vals[n_vals] = v;
            cls[n_vals++] = cls[a];
        }
        int n_fetch = 1 + (int)rnd(3);
        fetch(g, "last:0", vals[n_vals - 1]);
        for (int k = 1; k < n_fetch; k++) {
            char name[16];
            snprintf(name, sizeof name, "f%d:0", k);
            fetch(g, name, vals[3 + rnd((uint32_t)(n_vals - 3))]);
        }
        run_pass(g, pass_memplan);

        /* Lifetimes recomputed here: producer position .. last read, whole
         * run for args and fetched values.  A fused node (no buffer) must be
         * elementwise with one consumer node, elementwise of the same shape,
         * and not fetched; its reads happen where its fusion root runs. */
        int n = g->n_nodes;
        int *start = calloc((size_t)n, sizeof(int)), *end = calloc((size_t)n, sizeof(int));
        int *eff = calloc((size_t)n, sizeof(int));
        for (int i = n - 1; i >= 0; i--) {
            IrNode *p = g->nodes[i];
            eff[i] = i;
            if (p->out[0].offset != PASS_OFFSET_FUSED)
                continue;
            int consumer = -1;
            for (int j = i + 1; j < n; j++)
                for (int k = 0; k < g->nodes[j]->n_inputs; k++)
                    if (g->nodes[j]->inputs[k].node == p) {
                        ck_assert(consumer == -1 || consumer == j);
                        consumer = j;
                    }
            ck_assert_int_ge(consumer, 0);
            ck_assert_int_eq(ir_op_info(p->op)->kind, K_ELEM);
            ck_assert_int_eq(ir_op_info(g->nodes[consumer]->op)->kind, K_ELEM);
            ck_assert(ir_shape_eq(&p->out[0].type.shape, &g->nodes[consumer]->out[0].type.shape));
            for (int f = 0; f < g->n_fetches; f++)
                ck_assert_ptr_ne(g->fetches[f].value.node, p);
            eff[i] = eff[consumer];
        }
        for (int i = 0; i < n; i++) {
            IrNode *p = g->nodes[i];
            start[i] = end[i] = i;
            if (p->op == OP_ARG) {
                start[i] = 0;
                end[i] = n;
            }
            for (int j = i + 1; j < n; j++)
                for (int k = 0; k < g->nodes[j]->n_inputs; k++)
                    if (g->nodes[j]->inputs[k].node == p && end[i] < eff[j])
                        end[i] = eff[j];
            for (int f = 0; f < g->n_fetches; f++)
                if (g->fetches[f].value.node == p) {
                    start[i] = 0;
                    end[i] = n;
                }
        }
        /* A COPY may share its input's memory (same bytes): such values have
         * the same alias root and may overlap. */
        int *root = calloc((size_t)n, sizeof(int));
        for (int i = 0; i < n; i++) {
            IrNode *p = g->nodes[i];
            root[i] = i;
            if (p->op == OP_COPY && p->out[0].offset == p->inputs[0].node->out[0].offset)
                for (int j = 0; j < i; j++)
                    if (g->nodes[j] == p->inputs[0].node)
                        root[i] = root[j];
        }
        int n_fused = 0;
        for (int i = 0; i < n; i++) {
            IrNode *p = g->nodes[i];
            int64_t off = p->out[0].offset, sz = (int64_t)ir_type_bytes(&p->out[0].type);
            if (off == PASS_OFFSET_FUSED) {
                n_fused++;
                continue;
            }
            ck_assert_int_ge(off, 0);
            ck_assert_int_eq(off % 64, 0);
            ck_assert_int_le(off + sz, g->arena_bytes);
            for (int j = i + 1; j < n; j++) {
                IrNode *q = g->nodes[j];
                if (q->out[0].offset == PASS_OFFSET_FUSED)
                    continue;
                bool live_together = start[i] <= end[j] && start[j] <= end[i];
                if (!live_together || root[i] == root[j])
                    continue;
                int64_t qo = q->out[0].offset, qs = (int64_t)ir_type_bytes(&q->out[0].type);
                bool disjoint = off + sz <= qo || qo + qs <= off;
                ck_assert_msg(disjoint, "trial %d: nodes %d and %d overlap", trial, i, j);
            }
        }
        ck_assert_int_le(g->arena_bytes, g->unplanned_bytes);
        total_fused += n_fused;
        free(start);
        free(end);
        free(eff);
        free(root);
        ir_graph_free(g);
    }
    ck_assert_int_gt(total_fused, 0); /* the fused path was exercised */
}
END_TEST

/* ---- pipeline ---- */

static IrGraph *dup_graph(void)
{
    IrGraph *g = new_graph();
    IrValue x = feed(g, "x:0", 4);
    IrValue a1 = bin(g, OP_ADD, x, x);
    IrValue a2 = bin(g, OP_ADD, x, x);
    fetch(g, "r:0", bin(g, OP_MUL, a1, a2));
    return g;
}

static bool file_nonempty(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

START_TEST(test_pipeline_table_and_disable)
{
    int n;
    const PassInfo *t = pass_pipeline(&n);
    ck_assert_int_eq(n, 11);
    ck_assert_str_eq(t[0].name, "state");
    ck_assert_str_eq(t[1].name, "fold");
    ck_assert_str_eq(t[2].name, "cse");
    ck_assert_str_eq(t[3].name, "dce");
    ck_assert_str_eq(t[4].name, "layout");
    ck_assert_str_eq(t[5].name, "fuse");
    ck_assert_str_eq(t[6].name, "winograd");
    ck_assert_str_eq(t[7].name, "pack");
    ck_assert_str_eq(t[8].name, "dwfuse");
    ck_assert_str_eq(t[9].name, "pair");
    ck_assert_str_eq(t[10].name, "memplan");
    ck_assert_ptr_eq(pass_find("dce"), &t[3]);
    ck_assert_ptr_null(pass_find("nope"));

    IrGraph *g = dup_graph();
    const char *disabled[] = {"cse"};
    PipelineOptions o = {.disabled = disabled, .n_disabled = 1};
    Status st = ST_INIT;
    ck_assert_msg(pass_run_pipeline(g, &o, &st), "%s", st.msg);
    ck_assert_int_eq(count_op(g, OP_ADD), 2);
    ck_assert_int_gt(g->arena_bytes, 0);
    ir_graph_free(g);

    g = dup_graph();
    ck_assert_msg(pass_run_pipeline(g, NULL, &st), "%s", st.msg);
    ck_assert_int_eq(count_op(g, OP_ADD), 1);
    ir_graph_free(g);

    /* unknown names are errors that list the passes */
    g = dup_graph();
    const char *bogus[] = {"fusion"};
    PipelineOptions bad = {.disabled = bogus, .n_disabled = 1};
    ck_assert(!pass_run_pipeline(g, &bad, &st));
    ck_assert_str_eq(
        st.msg,
        "--disable-pass: unknown pass 'fusion' (passes: state, fold, cse, dce, layout, fuse, winograd, pack, "
        "dwfuse, pair, memplan)");
    Status st2 = ST_INIT;
    PipelineOptions bad2 = {.dump_after = "csee", .dump_dir = "/tmp"};
    ck_assert(!pass_run_pipeline(g, &bad2, &st2));
    ck_assert_str_eq(
        st2.msg,
        "--dump-after: unknown pass 'csee' (passes: state, fold, cse, dce, layout, fuse, winograd, pack, "
        "dwfuse, pair, memplan, or all)");
    ir_graph_free(g);
}
END_TEST

START_TEST(test_pipeline_dumps)
{
    char tmpl[] = "/tmp/tfcc-passes-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    char dir[600];
    snprintf(dir, sizeof dir, "%s/dump/all", tmpl);
    IrGraph *g = dup_graph();
    PipelineOptions o = {.dump_after = "all", .dump_dir = dir, .verify_each = true};
    Status st = ST_INIT;
    ck_assert_msg(pass_run_pipeline(g, &o, &st), "%s", st.msg);
    const char *names[] = {"01-state",    "02-fold", "03-cse",    "04-dce",  "05-layout", "06-fuse",
                           "07-winograd", "08-pack", "09-dwfuse", "10-pair", "11-memplan"};
    for (int i = 0; i < 11; i++) {
        char f[64];
        snprintf(f, sizeof f, "%s.ir", names[i]);
        ck_assert_msg(file_nonempty(dir, f), "missing %s", f);
        snprintf(f, sizeof f, "%s.dot", names[i]);
        ck_assert_msg(file_nonempty(dir, f), "missing %s", f);
    }
    ir_graph_free(g);

    char dir2[600];
    snprintf(dir2, sizeof dir2, "%s/one", tmpl);
    g = dup_graph();
    PipelineOptions o2 = {.dump_after = "cse", .dump_dir = dir2};
    ck_assert_msg(pass_run_pipeline(g, &o2, &st), "%s", st.msg);
    ck_assert(file_nonempty(dir2, "03-cse.ir"));
    ck_assert(!file_nonempty(dir2, "02-fold.ir"));
    ck_assert(!file_nonempty(dir2, "10-memplan.ir"));
    ir_graph_free(g);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *passes_suite(void)
{
    Suite *s = suite_create("passes");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cse_merges_duplicates);
    tcase_add_test(tc, test_cse_merges_chains_and_consts);
    tcase_add_test(tc, test_dce_removes_unused_branch);
    tcase_add_test(tc, test_dce_keeps_control_deps);
    tcase_add_test(tc, test_fold_const_subgraph);
    tcase_add_test(tc, test_memplan_chain_reuses);
    tcase_add_test(tc, test_memplan_fuses_elementwise_chain);
    tcase_add_test(tc, test_memplan_reshape_in_place);
    tcase_add_test(tc, test_memplan_consts_and_fetched_const);
    tcase_add_test(tc, test_memplan_random_dags_no_overlap);
    tcase_add_test(tc, test_pipeline_table_and_disable);
    tcase_add_test(tc, test_pipeline_dumps);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(passes_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
