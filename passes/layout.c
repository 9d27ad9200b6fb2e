/* passes/layout.c - transpose sinking and cancellation.
 * requires: topo order, shapes   preserves: shapes of fetches, feeds   invalidates: memory plan
 *
 * Frontends of NCHW formats wrap every NHWC primitive in transposes
 * (transpose(NCHW->NHWC) -> conv2d -> transpose(NHWC->NCHW)), so between
 * two convolutions sit a transpose back to NCHW, the elementwise ops of the
 * model, and a transpose forward again.  This pass moves transposes down
 * past layout-agnostic ops until they meet and cancel.  Rules, applied to a
 * fixed point over the graph (each sweep ends with ir_graph_compact):
 *   compose  transpose(transpose(x, P), Q) -> transpose(x, R), R[i] = P[Q[i]],
 *            or x itself when R is the identity (never adds a transpose;
 *            the inner one stays while it has other users);
 *   sink     an elementwise op whose operands are transpose(a_i, P) with
 *            one perm P and the op's output shape, constants, or values of
 *            one element, becomes transpose(op(a_i, c_i'), P): a constant
 *            c is padded to the output rank with leading 1s and transposed
 *            by the inverse of P at compile time (the reference transpose
 *            kernel, through constant folding); a one-element value passes
 *            unchanged;
 *   reduce   reduce_*(transpose(x, P), axes, keepdims) ->
 *            transpose(reduce_*(x, {P[a]}), P).
 * Sink and reduce apply only when they free at least as many transposes as
 * they add: a rewrite adds one transpose, and frees each operand transpose
 * whose only user is the rewritten node; with none freed it is skipped
 * (sinking a shared transpose would run it twice).  So the number of
 * transposes never grows, and each rewrite moves one further down, which
 * bounds the iteration.  Last, a transpose that keeps the order of the
 * dimensions larger than 1 moves no data and becomes a copy (reshape).
 * Rewritten nodes keep their origin (the rewritten op's; a sunk transpose
 * keeps the transpose's).  Nodes left without users are removed (not ARGs,
 * F_EFFECT or region ops).
 * Invariants: types of every value a fetch or a surviving user sees are
 * unchanged; constants made here are new nodes (old ones stay for their
 * other users).
 */
#include "passes/passes.h"

#include <string.h>

typedef struct Perm {
    int rank;
    int64_t p[IR_MAX_RANK];
} Perm;

static Perm perm_of(const IrNode *t)
{
    Perm r;
    r.rank = t->out[0].type.shape.rank;
    for (int i = 0; i < r.rank; i++)
        r.p[i] = t->p.i[TCRT_TR_PERM + i];
    return r;
}

static bool perm_eq(const Perm *a, const Perm *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->p[i] != b->p[i])
            return false;
    return true;
}

static bool perm_is_identity(const Perm *a)
{
    for (int i = 0; i < a->rank; i++)
        if (a->p[i] != i)
            return false;
    return true;
}

static IrParams perm_params(const Perm *a)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < a->rank; i++)
        p.i[TCRT_TR_PERM + i] = a->p[i];
    return p;
}

/* Distinct live users of n (control users included); fetched: many. */
static int count_users(const IrGraph *g, const IrNode *n)
{
    for (int i = 0; i < g->n_fetches; i++)
        if (g->fetches[i].value.node == n)
            return 1000;
    return ir_use_count(g, n);
}

/* User counts by node id, built once per sweep (a scan per query would make
 * the pass quadratic).  Rewrites add to the counts of nodes gaining users
 * and never subtract, so a count is never too low: a transpose is only
 * taken as freed when it really is; nodes made during the sweep (ids past
 * cap) are counted by a scan. */
typedef struct Uses {
    const IrGraph *g;
    int *n;
    int cap;
} Uses;

static bool uses_build(IrGraph *g, Uses *u, Arena *scratch)
{
    u->g = g;
    u->cap = g->next_id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i]->id >= u->cap)
            u->cap = g->nodes[i]->id + 1;
    u->n = arena_alloc(scratch, sizeof(int) * ((size_t)u->cap + 1));
    if (!u->n)
        return false;
    for (int k = 0; k < g->n_nodes; k++) {
        const IrNode *n = g->nodes[k];
        if (n->dead)
            continue;
        for (int i = 0; i < n->n_inputs + n->n_ctrl; i++) {
            const IrNode *d = i < n->n_inputs ? n->inputs[i].node : n->ctrl[i - n->n_inputs];
            bool seen = false;
            for (int j = 0; j < i && !seen; j++)
                seen = (j < n->n_inputs ? n->inputs[j].node : n->ctrl[j - n->n_inputs]) == d;
            if (d && !seen && d->id >= 0 && d->id < u->cap)
                u->n[d->id]++;
        }
    }
    for (int i = 0; i < g->n_fetches; i++) {
        const IrNode *d = g->fetches[i].value.node;
        if (d && d->id >= 0 && d->id < u->cap)
            u->n[d->id] += 1000;
    }
    return true;
}

static int users(const Uses *u, const IrNode *n)
{
    if (n->id >= 0 && n->id < u->cap)
        return u->n[n->id];
    return count_users(u->g, n);
}

static void uses_add(Uses *u, const IrNode *n, int k)
{
    if (n->id >= 0 && n->id < u->cap)
        u->n[n->id] += k;
}

static IrNode *emit_as(IrGraph *g, const IrNode *like, Op op, const IrValue *in, int n_in, const IrParams *p,
                       const IrType *given, Status *st)
{
    IrOrigin saved = ir_origin_like(g, like);
    IrNode *n = ir_emit(g, op, in, n_in, p, given, st);
    ir_origin_restore(g, saved);
    if (n)
        n->device = like->device;
    return n;
}

/* transpose(transpose(x, P), Q). */
static bool compose(IrGraph *g, IrNode *n, Uses *u)
{
    IrNode *t = n->inputs[0].node;
    if (t->op != OP_TRANSPOSE || n->n_ctrl)
        return false;
    Perm P = perm_of(t), Q = perm_of(n), R;
    R.rank = Q.rank;
    for (int i = 0; i < R.rank; i++)
        R.p[i] = P.p[Q.p[i]];
    IrValue x = t->inputs[0];
    if (perm_is_identity(&R)) {
        uses_add(u, x.node, users(u, n));
        ir_replace_uses(g, (IrValue){n, 0}, x);
        n->dead = true;
        return true;
    }
    /* in place: same output type, new input and perm */
    uses_add(u, x.node, 1);
    n->inputs[0] = x;
    IrParams p = perm_params(&R);
    memcpy(n->p.i, p.i, sizeof p.i);
    return true;
}

/* Constant c laid out for op(transpose(a, P), c) == transpose(op(a, c'), P):
 * c' = transpose(c padded to rank R, inverse P), folded at compile time. */
static IrValue relayout_const(IrGraph *g, IrValue c, const Perm *P, Status *st)
{
    IrValue none = {NULL, 0};
    const IrType *ct = ir_value_type(c);
    IrShape padded = ir_shape_make(P->rank, NULL);
    int lead = P->rank - ct->shape.rank;
    for (int i = 0; i < P->rank; i++)
        padded.dims[i] = i < lead ? 1 : ct->shape.dims[i - lead];
    IrOrigin saved = ir_origin_like(g, c.node);
    IrValue pc = ir_const(g, ct->dtype, &padded, c.node->data, st);
    ir_origin_restore(g, saved);
    if (!pc.node)
        return none;
    Perm inv;
    inv.rank = P->rank;
    for (int i = 0; i < P->rank; i++)
        inv.p[P->p[i]] = i;
    IrParams p = perm_params(&inv);
    bool fold = g->fold_on_build;
    g->fold_on_build = true;
    IrNode *t = emit_as(g, c.node, OP_TRANSPOSE, &pc, 1, &p, NULL, st);
    g->fold_on_build = fold;
    pc.node->dead = true;
    if (!t)
        return none;
    if (t->op != OP_CONST) { /* too large to fold: give up */
        t->dead = true;
        return none;
    }
    return (IrValue){t, 0};
}

/* op(transpose(a, P), ...) -> transpose(op(a, ...), P). */
static bool sink_elementwise(IrGraph *g, IrNode *n, Uses *u, Status *st)
{
    if (n->n_outputs != 1 || n->n_ctrl || n->n_inputs < 1 || n->n_inputs > 3)
        return false;
    const IrShape *os = &n->out[0].type.shape;
    Perm P;
    P.rank = -1;
    for (int i = 0; i < n->n_inputs; i++) {
        IrNode *t = n->inputs[i].node;
        if (t->op == OP_TRANSPOSE && ir_shape_eq(&t->out[0].type.shape, os)) {
            P = perm_of(t);
            break;
        }
    }
    if (P.rank < 1)
        return false;
    enum { TRANSPOSED, SCALAR, CONSTANT } kind[3];
    int freed = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        IrValue v = n->inputs[i];
        const IrType *vt = ir_value_type(v);
        if (v.node->op == OP_TRANSPOSE && ir_shape_eq(&vt->shape, os)) {
            Perm q = perm_of(v.node);
            if (!perm_eq(&q, &P))
                return false;
            kind[i] = TRANSPOSED;
            bool seen = false;
            for (int j = 0; j < i; j++)
                seen |= n->inputs[j].node == v.node;
            if (!seen && users(u, v.node) == 1)
                freed++;
        } else if (ir_shape_count(&vt->shape) == 1 && vt->shape.rank <= P.rank) {
            kind[i] = SCALAR;
        } else if (v.node->op == OP_CONST && v.node->data && vt->shape.rank <= P.rank &&
                   ir_type_bytes(vt) <= IR_MAX_FOLD_BYTES) {
            kind[i] = CONSTANT;
        } else {
            return false;
        }
    }
    if (freed < 1)
        return false;
    IrValue in[3];
    for (int i = 0; i < n->n_inputs; i++) {
        IrValue v = n->inputs[i];
        if (kind[i] == TRANSPOSED)
            uses_add(u, (in[i] = v.node->inputs[0]).node, 1);
        else if (kind[i] == SCALAR)
            in[i] = v;
        else if (!(in[i] = relayout_const(g, v, &P, st)).node)
            return false;
    }
    /* the un-transposed output shape: os[P[i]] is at position P[i] */
    IrType given = n->out[0].type;
    for (int i = 0; i < P.rank; i++)
        given.shape.dims[P.p[i]] = os->dims[i];
    const OpInfo *oi = ir_op_info(n->op);
    IrNode *e = emit_as(g, n, n->op, in, n->n_inputs, &n->p, (oi->flags & F_DTYPE_GIVEN) ? &given : NULL, st);
    if (!e)
        return false;
    IrNode *first = NULL;
    for (int i = 0; i < n->n_inputs && !first; i++)
        if (kind[i] == TRANSPOSED)
            first = n->inputs[i].node;
    IrParams p = perm_params(&P);
    IrValue ev = {e, 0};
    IrNode *t = emit_as(g, first, OP_TRANSPOSE, &ev, 1, &p, NULL, st);
    if (!t)
        return false;
    ir_replace_uses(g, (IrValue){n, 0}, (IrValue){t, 0});
    n->dead = true;
    return true;
}

/* reduce(transpose(x, P)) -> transpose(reduce(x), P), keepdims only. */
static bool sink_reduce(IrGraph *g, IrNode *n, Uses *u, Status *st)
{
    IrNode *t = n->inputs[0].node;
    if (t->op != OP_TRANSPOSE || n->n_ctrl || !n->p.i[1] || users(u, t) != 1)
        return false;
    uses_add(u, t->inputs[0].node, 1);
    Perm P = perm_of(t);
    int64_t mask = n->p.i[TCRT_RED_MASK], m2 = 0;
    for (int i = 0; i < P.rank; i++)
        if (mask & ((int64_t)1 << i))
            m2 |= (int64_t)1 << P.p[i];
    IrParams rp = n->p;
    rp.i[TCRT_RED_MASK] = m2;
    IrNode *e = emit_as(g, n, n->op, t->inputs, 1, &rp, NULL, st);
    if (!e)
        return false;
    IrParams p = perm_params(&P);
    IrValue ev = {e, 0};
    IrNode *nt = emit_as(g, t, OP_TRANSPOSE, &ev, 1, &p, NULL, st);
    if (!nt)
        return false;
    ir_replace_uses(g, (IrValue){n, 0}, (IrValue){nt, 0});
    n->dead = true;
    return true;
}

/* A transpose that keeps the order of the dims > 1 moves no data. */
static bool to_copy(IrGraph *g, IrNode *n, Status *st)
{
    Perm P = perm_of(n);
    const IrShape *xs = &ir_value_type(n->inputs[0])->shape;
    int64_t last = -1;
    for (int i = 0; i < P.rank; i++) {
        if (xs->dims[P.p[i]] == 1)
            continue;
        if (P.p[i] < last)
            return false;
        last = P.p[i];
    }
    if (n->n_ctrl)
        return false;
    IrType given = n->out[0].type;
    IrNode *c = emit_as(g, n, OP_COPY, n->inputs, 1, NULL, &given, st);
    if (!c)
        return false;
    ir_replace_uses(g, (IrValue){n, 0}, (IrValue){c, 0});
    n->dead = true;
    return true;
}

/* Removes nodes without users: g is in topological order, so walking it
 * backwards removes whole unused chains in one go. */
static bool sweep(IrGraph *g, Arena *scratch)
{
    Uses u;
    if (!uses_build(g, &u, scratch))
        return false;
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        IrNode *n = g->nodes[i];
        const OpInfo *oi = ir_op_info(n->op);
        if (n->dead || n->op == OP_ARG || (oi->flags & F_EFFECT) || n->n_regions || users(&u, n) != 0)
            continue;
        n->dead = true;
        for (int k = 0; k < n->n_inputs + n->n_ctrl; k++) {
            IrNode *d = k < n->n_inputs ? n->inputs[k].node : n->ctrl[k - n->n_inputs];
            bool seen = false;
            for (int j = 0; j < k && !seen; j++)
                seen = (j < n->n_inputs ? n->inputs[j].node : n->ctrl[j - n->n_inputs]) == d;
            if (d && !seen)
                uses_add(&u, d, -1);
        }
    }
    ir_graph_compact(g);
    return true;
}

PassResult pass_layout(IrGraph *g, PassCtx *cx)
{
    bool changed = false, fold = g->fold_on_build, ok = true;
    bool any = false;
    IR_FOR_EACH(g, n) {
        any |= n->op == OP_TRANSPOSE;
    }
    if (!any)
        return PASS_SAME;
    g->fold_on_build = false;
    for (int round = 0; round < 10000 && ok && st_ok(cx->st); round++) {
        Uses u;
        if (!(ok = uses_build(g, &u, &cx->scratch)))
            break;
        bool step = false;
        for (int i = 0; i < g->n_nodes && st_ok(cx->st); i++) {
            IrNode *n = g->nodes[i];
            if (n->dead || n->n_inputs < 1)
                continue;
            const OpInfo *oi = ir_op_info(n->op);
            if (n->op == OP_TRANSPOSE)
                step |= compose(g, n, &u);
            else if (oi->kind == K_ELEM)
                step |= sink_elementwise(g, n, &u, cx->st);
            else if (oi->kind == K_REDUCE && n->op != OP_ARGMAX && n->op != OP_ARGMIN)
                step |= sink_reduce(g, n, &u, cx->st);
        }
        if (!step)
            break;
        changed = true;
        ir_graph_compact(g);
        ok = sweep(g, &cx->scratch);
    }
    for (int i = 0; i < g->n_nodes && ok && st_ok(cx->st); i++) {
        IrNode *n = g->nodes[i];
        if (!n->dead && n->op == OP_TRANSPOSE && to_copy(g, n, cx->st))
            changed = true;
    }
    g->fold_on_build = fold;
    if (!ok)
        st_errorf(cx->st, ST_NOMEM, "layout: out of memory");
    if (!st_ok(cx->st))
        return PASS_FAILED;
    if (changed) {
        ir_graph_compact(g);
        if (!sweep(g, &cx->scratch)) {
            st_errorf(cx->st, ST_NOMEM, "layout: out of memory");
            return PASS_FAILED;
        }
    }
    return changed ? PASS_CHANGED : PASS_SAME;
}
