/* passes/grad.c - reverse-mode gradient construction over the IR.
 * Not a pipeline pass: the driver calls pass_grad_build (optim.c) after
 * import, before pass_run_pipeline; tests call pass_grad_values directly.
 *
 * Algorithm (grad_vjp; pass_grad_values is grad_vjp(loss, ones), and a
 * cond's rule runs it inside each branch with the outputs' adjoints):
 *   0. unroll every WHILE on a path (step 1's marks) whose trip count is
 *      known at compile time (unroll_loops): the condition may read only
 *      "counters", loop variables that are constants at the WHILE's
 *      operands and whose body update reads only constants and counters
 *      (i = i + 1, TF's iteration counter and max-iterations bound); they
 *      are run through the reference kernels (ir_fold_node) in a scratch
 *      graph until the condition is false, at most GRAD_MAX_TRIPS
 *      (100000) times.  The body is then inlined that many times
 *      (ir_inline_region, nested regions copied), iteration k's results
 *      binding iteration k+1's params, the final values replacing the
 *      WHILE's outputs; at most GRAD_MAX_UNROLL_NODES (200000) nodes in
 *      all.  Inner loops surface when an outer body is inlined and are
 *      unrolled in the next round.  The rules below then see straight-line
 *      code;
 *   1. mark the ancestors of the outputs (data inputs, backwards from the
 *      output nodes) and the nodes that depend on a differentiated value
 *      through floating-point values and differentiable ops (forwards from
 *      the wrt nodes; grad_nodiff ops and VARIABLE stop it).  A node in both
 *      sets is "on a path" and needs a rule;
 *   2. seed the outputs' adjoints (the loss's: ones);
 *   3. walk the nodes that existed before step 2 in reverse order; for each
 *      node on a path whose outputs received an adjoint, call its rule
 *      (grad_rules.c).  Each input adjoint is first summed back to the
 *      input's shape when the rule returned it broadcast (grad_unbroadcast:
 *      reduce_sum over the broadcast axes, then a reshape), then added to
 *      what earlier consumers gave that input (the sum over uses);
 *   4. read the adjoint of each wrt value; one that got none gets zeros.
 * New nodes are appended after every forward node, so the node list stays a
 * topological order; they carry the origin "gradients/<forward node>".
 * Errors name the TF node: "no gradient rule for 'topk' (node 'x')",
 * "the trip count of while loop 'w' depends on run-time data: ...".
 * A COND is differentiated branch by branch into a new COND (grad_rules.c).
 * Invariants: forward nodes are never modified, except that a WHILE on a
 * path is replaced by its unrolled body (same values); every adjoint has
 * exactly its value's dtype and shape.
 */
#include "passes/grad_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool is_float(tcrt_dtype dt)
{
    return dt == TCRT_F32 || dt == TCRT_F64;
}

static const char *origin_of(const IrNode *n)
{
    return n->origin ? n->origin : ir_op_name(n->op);
}

bool grad_fail(GradCtx *c, const IrNode *n, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st_errorf(c->st, ST_UNSUPPORTED, "no gradient for '%s' (node '%s'): %s", ir_op_name(n->op),
                     origin_of(n), msg);
}

/* ---- builders ---- */

IrValue grad_emit(GradCtx *c, Op op, const IrValue *in, int n_in, const IrParams *p, const IrType *given)
{
    for (int i = 0; i < n_in; i++)
        if (!in[i].node)
            return (IrValue){NULL, 0};
    if (!st_ok(c->st))
        return (IrValue){NULL, 0};
    return ir_emit1(c->g, op, in, n_in, p, given, c->st);
}

IrValue grad_scalar(GradCtx *c, tcrt_dtype dt, double v)
{
    if (!st_ok(c->st))
        return (IrValue){NULL, 0};
    return ir_const_scalar_f(c->g, dt, v, c->st);
}

IrValue grad_fill(GradCtx *c, const IrType *t, double v)
{
    return grad_broadcast_to(c, grad_scalar(c, t->dtype, v), &t->shape);
}

IrValue grad_un(GradCtx *c, Op op, IrValue a)
{
    return grad_emit(c, op, &a, 1, NULL, NULL);
}

IrValue grad_bin(GradCtx *c, Op op, IrValue a, IrValue b)
{
    IrValue in[2] = {a, b};
    return grad_emit(c, op, in, 2, NULL, NULL);
}

IrValue grad_select(GradCtx *c, IrValue cond, IrValue a, IrValue b)
{
    IrValue in[3] = {cond, a, b};
    return grad_emit(c, OP_SELECT, in, 3, NULL, NULL);
}

IrValue grad_reshape(GradCtx *c, IrValue a, const IrShape *s)
{
    if (!a.node || ir_shape_eq(&ir_value_type(a)->shape, s))
        return a;
    IrType t = {ir_value_type(a)->dtype, *s};
    return grad_emit(c, OP_COPY, &a, 1, NULL, &t);
}

IrValue grad_broadcast_to(GradCtx *c, IrValue a, const IrShape *s)
{
    if (!a.node || ir_shape_eq(&ir_value_type(a)->shape, s))
        return a;
    IrType t = {ir_value_type(a)->dtype, *s};
    return grad_emit(c, OP_BROADCAST, &a, 1, NULL, &t);
}

IrValue grad_reduce_sum(GradCtx *c, IrValue a, int64_t mask, bool keepdims)
{
    if (!a.node || mask == 0)
        return a;
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_RED_MASK] = mask;
    p.i[1] = keepdims;
    return grad_emit(c, OP_REDUCE_SUM, &a, 1, &p, NULL);
}

IrValue grad_transpose(GradCtx *c, IrValue a, const int64_t *perm)
{
    if (!a.node)
        return a;
    int r = ir_value_type(a)->shape.rank;
    bool ident = true;
    IrParams p;
    memset(&p, 0, sizeof p);
    for (int d = 0; d < r; d++) {
        p.i[TCRT_TR_PERM + d] = perm[d];
        ident &= perm[d] == d;
    }
    return ident ? a : grad_emit(c, OP_TRANSPOSE, &a, 1, &p, NULL);
}

IrValue grad_slice(GradCtx *c, IrValue a, const int64_t *begin, const int64_t *count)
{
    if (!a.node)
        return a;
    const IrType *at = ir_value_type(a);
    IrType t = *at;
    IrParams p;
    memset(&p, 0, sizeof p);
    bool whole = true;
    for (int d = 0; d < at->shape.rank; d++) {
        p.i[TCRT_SL_BEGIN + d] = begin[d];
        p.i[TCRT_SL_STRIDE + d] = 1;
        t.shape.dims[d] = count[d];
        whole &= begin[d] == 0 && count[d] == at->shape.dims[d];
    }
    return whole ? a : grad_emit(c, OP_SLICE, &a, 1, &p, &t);
}

IrValue grad_unbroadcast(GradCtx *c, IrValue a, const IrShape *to)
{
    if (!a.node)
        return a;
    const IrShape *from = &ir_value_type(a)->shape;
    if (ir_shape_eq(from, to))
        return a;
    int r = from->rank, t = to->rank;
    int64_t mask = 0;
    bool ok = t <= r;
    for (int d = 0; d < r && ok; d++) {
        int td = d - (r - t);
        if (td < 0 || (to->dims[td] == 1 && from->dims[d] != 1))
            mask |= (int64_t)1 << d;
        else
            ok = to->dims[td] == from->dims[d];
    }
    if (!ok) {
        char b1[160], b2[160];
        st_errorf(c->st, ST_ERROR, "gradient: internal error: %s does not broadcast to %s",
                  ir_shape_str(to, b1, sizeof b1), ir_shape_str(from, b2, sizeof b2));
        return (IrValue){NULL, 0};
    }
    return grad_reshape(c, grad_reduce_sum(c, a, mask, false), to);
}

/* ---- the reverse sweep ---- */

typedef struct Sweep {
    Arena ar;
    int n_ids;
    unsigned char *to_loss;  /* ancestor of the loss (or the loss) */
    unsigned char *from_wrt; /* depends on a wrt value through differentiable ops */
    IrValue **adj;           /* per node id: adjoint per output, or NULL */
} Sweep;

static bool valid_id(const Sweep *s, const IrNode *n)
{
    return n && n->id >= 0 && n->id < s->n_ids;
}

static bool accumulate(GradCtx *c, Sweep *s, IrValue at, IrValue d)
{
    IrNode *n = at.node;
    if (!valid_id(s, n))
        return true;
    if (!s->adj[n->id]) {
        s->adj[n->id] = arena_alloc(&s->ar, sizeof(IrValue) * (size_t)(n->n_outputs > 0 ? n->n_outputs : 1));
        if (!s->adj[n->id])
            return st_errorf(c->st, ST_NOMEM, "gradient: out of memory");
    }
    IrValue *slot = &s->adj[n->id][at.index];
    if (slot->node) { /* the sum of the consumers' adjoints runs where the value is made */
        const char *sd = c->g->cur_device;
        c->g->cur_device = n->device;
        *slot = grad_bin(c, OP_ADD, *slot, d);
        c->g->cur_device = sd;
    } else {
        *slot = d;
    }
    return slot->node != NULL;
}

/* ---- while loops: unrolled when the trip count is known ---- */

/* A WHILE on a gradient path becomes straight-line code before the sweep:
 * its trip count is evaluated at compile time, then the body is inlined
 * that many times, iteration k's results feeding iteration k+1's params.
 * The trip count is known when the condition reads only "counter" loop
 * variables: constants at the WHILE's operands whose body update reads
 * only constants and counters (a fixed point: a variable whose update
 * reads a non-counter is not one).  Those are evaluated through the
 * reference kernels (ir_fold_node) in a scratch graph, only the nodes the
 * condition needs. */
#define GRAD_MAX_TRIPS 100000
#define GRAD_MAX_UNROLL_NODES 200000
#define SCRATCH_ROTATE 4096 /* scratch graph nodes before it is replaced */

static bool is_opaque(const IrNode *n) /* not evaluable at compile time */
{
    const OpInfo *info = ir_op_info(n->op);
    return n->n_regions > 0 || !info || (n->op != OP_ARG && n->op != OP_CONST && (info->flags & F_EFFECT));
}

/* mark[id]: node is an ancestor of roots in region r.  Sets params[j] for
 * each parameter read and *opaque to the first node that cannot be folded. */
static void region_deps(const IrGraph *r, const IrValue *roots, int n_roots, unsigned char *mark,
                        unsigned char *params, int n_params, const IrNode **opaque)
{
    memset(mark, 0, (size_t)r->next_id + 1);
    for (int j = 0; j < n_roots; j++)
        if (roots[j].node && roots[j].node->id >= 0 && roots[j].node->id < r->next_id)
            mark[roots[j].node->id] = 1;
    for (int i = r->n_nodes - 1; i >= 0; i--) {
        const IrNode *n = r->nodes[i];
        if (!n || n->dead || n->id < 0 || n->id >= r->next_id || !mark[n->id])
            continue;
        if (n->op == OP_ARG) {
            if (n->p.i[0] >= 0 && n->p.i[0] < n_params)
                params[n->p.i[0]] = 1;
            continue;
        }
        if (is_opaque(n) && opaque && !*opaque)
            *opaque = n;
        for (int k = 0; k < n->n_inputs; k++) {
            const IrNode *in = n->inputs[k].node;
            if (in && in->id >= 0 && in->id < r->next_id)
                mark[in->id] = 1;
        }
    }
}

static const char *param_name(const IrGraph *r, int j)
{
    return j < r->n_feeds && r->feeds[j].name ? r->feeds[j].name : "?";
}

/* Copies the marked nodes of region r into the scratch graph sg with
 * params bound to vals[] and folds each; map[id * 4 + k] gets output k. */
static bool eval_region(IrGraph *sg, const IrGraph *r, const unsigned char *mark, const IrValue *vals,
                        IrValue *map, const IrNode *w, Status *st)
{
    IR_FOR_EACH(r, n)
    {
        if (n->id < 0 || n->id >= r->next_id || !mark[n->id])
            continue;
        IrValue *out = &map[(size_t)n->id * 4];
        if (n->op == OP_ARG) {
            if (n->p.i[0] < 0 || n->p.i[0] >= w->n_inputs || !vals[n->p.i[0]].node)
                return st_errorf(st, ST_ERROR, "while loop '%s': bad region parameter %%%d", origin_of(w),
                                 n->id);
            out[0] = vals[n->p.i[0]];
            continue;
        }
        if (n->n_outputs > 4 || n->n_inputs > 64)
            return st_errorf(st, ST_UNSUPPORTED,
                             "the trip count of while loop '%s' cannot be evaluated at compile time: node "
                             "'%s' (%s)",
                             origin_of(w), origin_of(n), ir_op_name(n->op));
        if (n->op == OP_CONST) {
            out[0] = ir_const(sg, n->out[0].type.dtype, &n->out[0].type.shape, n->data, st);
            if (!out[0].node)
                return false;
            continue;
        }
        IrValue in[64];
        for (int k = 0; k < n->n_inputs; k++)
            in[k] = map[(size_t)n->inputs[k].node->id * 4 + (size_t)n->inputs[k].index];
        sg->cur_origin = n->origin;
        sg->cur_origin_op = n->origin_op;
        IrNode *m = ir_emit(sg, n->op, in, n->n_inputs, &n->p, &n->out[0].type, st);
        if (!m)
            return false;
        if (m->op == OP_CONST) {
            out[0] = (IrValue){m, 0};
            continue;
        }
        if (!ir_fold_node(sg, m, out, st)) {
            if (st_ok(st))
                st_errorf(st, ST_UNSUPPORTED,
                          "the trip count of while loop '%s' cannot be evaluated at compile time: node '%s' "
                          "(%s) does not fold",
                          origin_of(w), origin_of(n), ir_op_name(n->op));
            return false;
        }
    }
    return st_ok(st);
}

/* The trip count of WHILE w into *trips, or false with the reason. */
static bool trip_count(IrGraph *g, IrNode *w, int64_t *trips, Status *st)
{
    const IrGraph *cr = w->regions[0], *br = w->regions[1];
    int nv = w->n_inputs;
    Arena ar;
    arena_init(&ar, g->arena.a);
    size_t ids = (size_t)(cr->next_id > br->next_id ? cr->next_id : br->next_id) + 1;
    unsigned char *bdep = arena_alloc(&ar, (size_t)nv * (size_t)nv + 1);
    unsigned char *known = arena_alloc(&ar, (size_t)nv + 1), *need = arena_alloc(&ar, (size_t)nv + 1);
    unsigned char *cdep = arena_alloc(&ar, (size_t)nv + 1), *tmp = arena_alloc(&ar, ids);
    unsigned char *cmark = arena_alloc(&ar, (size_t)cr->next_id + 1);
    unsigned char *bmark = arena_alloc(&ar, (size_t)br->next_id + 1);
    const IrNode **bopq = arena_alloc(&ar, sizeof(IrNode *) * ((size_t)nv + 1));
    IrValue *map = arena_alloc(&ar, sizeof(IrValue) * 4 * ids);
    IrValue *vals = arena_alloc(&ar, sizeof(IrValue) * ((size_t)nv + 1));
    IrValue *next = arena_alloc(&ar, sizeof(IrValue) * ((size_t)nv + 1));
    IrValue *roots = arena_alloc(&ar, sizeof(IrValue) * ((size_t)nv + 1));
    bool ok = bdep && known && need && cdep && tmp && cmark && bmark && bopq && map && vals && next && roots;
    if (!ok) {
        arena_reset(&ar);
        return st_errorf(st, ST_NOMEM, "gradient: out of memory");
    }
    /* counters: constant operands whose updates read only counters */
    for (int i = 0; i < nv; i++) {
        known[i] = ir_is_const(w->inputs[i]);
        region_deps(br, &br->fetches[i].value, 1, tmp, bdep + (size_t)i * (size_t)nv, nv, &bopq[i]);
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (int i = 0; i < nv; i++) {
            if (!known[i])
                continue;
            bool fine = !bopq[i];
            for (int j = 0; j < nv && fine; j++)
                fine = !bdep[(size_t)i * (size_t)nv + (size_t)j] || known[j];
            if (!fine) {
                known[i] = 0;
                changed = true;
            }
        }
    }
    const IrNode *copq = NULL;
    region_deps(cr, &cr->fetches[0].value, 1, cmark, cdep, nv, &copq);
    if (copq)
        ok = st_errorf(st, ST_UNSUPPORTED,
                       "the trip count of while loop '%s' depends on run-time data: its condition uses node "
                       "'%s' (%s), which is not evaluated at compile time",
                       origin_of(w), origin_of(copq), ir_op_name(copq->op));
    for (int j = 0; j < nv && ok; j++) {
        if (!cdep[j] || known[j])
            continue;
        if (!ir_is_const(w->inputs[j]))
            ok = st_errorf(st, ST_UNSUPPORTED,
                           "the trip count of while loop '%s' depends on run-time data: its condition reads "
                           "loop variable %d ('%s'), whose initial value (node '%s') is not a constant",
                           origin_of(w), j, param_name(cr, j), origin_of(w->inputs[j].node));
        else
            ok = st_errorf(st, ST_UNSUPPORTED,
                           "the trip count of while loop '%s' depends on run-time data: its condition reads "
                           "loop variable %d ('%s'), which the body updates from values that are not "
                           "compile-time constants",
                           origin_of(w), j, param_name(cr, j));
    }
    /* the counters the condition needs, transitively through the body */
    int n_need = 0;
    for (int j = 0; j < nv && ok; j++)
        need[j] = cdep[j];
    for (bool changed = ok; changed;) {
        changed = false;
        for (int i = 0; i < nv; i++)
            for (int j = 0; j < nv && need[i]; j++)
                if (bdep[(size_t)i * (size_t)nv + (size_t)j] && !need[j])
                    need[j] = changed = true;
    }
    for (int i = 0; i < nv && ok; i++)
        if (need[i])
            roots[n_need++] = br->fetches[i].value;
    if (ok)
        region_deps(br, roots, n_need, bmark, tmp, nv, NULL);
    /* run the counters */
    IrGraph *sg = ok ? ir_graph_new(g->arena.a, st) : NULL;
    ok = ok && sg;
    if (sg)
        sg->fold_on_build = true;
    for (int i = 0; i < nv && ok; i++) {
        vals[i] = (IrValue){NULL, 0};
        if (need[i]) {
            const IrNode *c = w->inputs[i].node;
            vals[i] = ir_const(sg, c->out[0].type.dtype, &c->out[0].type.shape, c->data, st);
            ok = vals[i].node != NULL;
        }
    }
    int64_t t = 0;
    while (ok) {
        if (!eval_region(sg, cr, cmark, vals, map, w, st)) {
            ok = false;
            break;
        }
        IrValue cv = map[(size_t)cr->fetches[0].value.node->id * 4 + (size_t)cr->fetches[0].value.index];
        double go = 0;
        if (ir_is_const(cv) && ir_value_type(cv)->dtype == TCRT_BOOL && cv.node->data &&
            ir_shape_count(&ir_value_type(cv)->shape) == 1)
            go = ((const unsigned char *)cv.node->data)[0];
        else if (!ir_const_scalar(cv, &go)) {
            ok = st_errorf(st, ST_ERROR, "while loop '%s': the condition is not a scalar", origin_of(w));
            break;
        }
        if (go == 0)
            break;
        if (t >= GRAD_MAX_TRIPS) {
            ok =
                st_errorf(st, ST_UNSUPPORTED,
                          "while loop '%s' runs more than %d iterations: too many to unroll for the gradient",
                          origin_of(w), GRAD_MAX_TRIPS);
            break;
        }
        t++;
        if (n_need == 0) /* the condition reads only constants: it stays true */
            continue;
        if (!eval_region(sg, br, bmark, vals, map, w, st)) {
            ok = false;
            break;
        }
        for (int i = 0; i < nv; i++) {
            IrValue v = br->fetches[i].value;
            next[i] = need[i] ? map[(size_t)v.node->id * 4 + (size_t)v.index] : (IrValue){NULL, 0};
        }
        if (sg->n_nodes > SCRATCH_ROTATE) { /* start a fresh scratch graph */
            IrGraph *ng = ir_graph_new(g->arena.a, st);
            ok = ng != NULL;
            if (ng)
                ng->fold_on_build = true;
            for (int i = 0; i < nv && ok; i++)
                if (need[i]) {
                    const IrNode *c = next[i].node;
                    next[i] = ir_const(ng, c->out[0].type.dtype, &c->out[0].type.shape, c->data, st);
                    ok = next[i].node != NULL;
                }
            ir_graph_free(sg);
            sg = ng;
        }
        memcpy(vals, next, sizeof(IrValue) * (size_t)nv);
    }
    ir_graph_free(sg);
    arena_reset(&ar);
    *trips = t;
    return ok && st_ok(st);
}

/* A copy of region src owned by parent (nested regions copied too). */
static IrGraph *clone_region(IrGraph *parent, const IrGraph *src, Status *st);

static bool clone_nested(IrGraph *g, int from, Status *st)
{
    for (int i = from; i < g->n_nodes && st_ok(st); i++) {
        IrNode *n = g->nodes[i];
        if (!n || n->dead)
            continue;
        for (int k = 0; k < n->n_regions && st_ok(st); k++) {
            IrGraph *c = clone_region(g, n->regions[k], st);
            if (c)
                n->regions[k] = c;
        }
    }
    return st_ok(st);
}

static IrGraph *clone_region(IrGraph *parent, const IrGraph *src, Status *st)
{
    IrGraph *r = ir_region_new(parent, st);
    if (!r)
        return NULL;
    r->fold_on_build = src->fold_on_build;
    IrValue *args = arena_alloc(&r->arena, sizeof(IrValue) * ((size_t)src->n_feeds + 1));
    IrValue *res = arena_alloc(&r->arena, sizeof(IrValue) * ((size_t)src->n_fetches + 1));
    if (!args || !res) {
        st_errorf(st, ST_NOMEM, "gradient: out of memory");
        return NULL;
    }
    for (int i = 0; i < src->n_feeds && st_ok(st); i++)
        args[i] = ir_add_feed(r, src->feeds[i].name, ir_value_type((IrValue){src->feeds[i].arg, 0}), st);
    int n0 = r->n_nodes;
    if (!st_ok(st) || !ir_inline_region(r, src, args, res, st) || !clone_nested(r, n0, st))
        return NULL;
    for (int i = 0; i < src->n_fetches && st_ok(st); i++)
        ir_add_fetch(r, src->fetches[i].name, res[i], st);
    return st_ok(st) ? r : NULL;
}

/* Replaces WHILE w by its body inlined trip-count times; *budget counts
 * the nodes made so far; *final gets the loop's final values (owned by g). */
static bool unroll(IrGraph *g, IrNode *w, int64_t *budget, IrValue **final, Status *st)
{
    if (w->n_inputs < 1 || w->n_regions != 2)
        return st_errorf(st, ST_ERROR, "while loop '%s': malformed (%d operands, %d regions)", origin_of(w),
                         w->n_inputs, w->n_regions);
    int64_t trips = 0;
    if (!trip_count(g, w, &trips, st))
        return false;
    const IrGraph *br = w->regions[1];
    int64_t body = ir_graph_live_count(br);
    if (trips > 0 && body > (GRAD_MAX_UNROLL_NODES - *budget) / trips)
        return st_errorf(st, ST_UNSUPPORTED,
                         "unrolling while loop '%s' for the gradient would make %lld nodes (%lld iterations "
                         "of %lld), more than the limit of %d",
                         origin_of(w), (long long)(trips * body), (long long)trips, (long long)body,
                         GRAD_MAX_UNROLL_NODES);
    *budget += trips * body;
    int nv = w->n_inputs;
    IrValue *cur = arena_alloc(&g->arena, sizeof(IrValue) * 2 * ((size_t)nv + 1));
    if (!cur)
        return st_errorf(st, ST_NOMEM, "gradient: out of memory");
    IrValue *next = cur + nv + 1;
    memcpy(cur, w->inputs, sizeof(IrValue) * (size_t)nv);
    for (int64_t t = 0; t < trips; t++) {
        int n0 = g->n_nodes;
        if (!ir_inline_region(g, br, cur, next, st) || !clone_nested(g, n0, st))
            return false;
        IrValue *sw = cur;
        cur = next;
        next = sw;
    }
    for (int k = 0; k < w->n_outputs; k++)
        ir_replace_uses(g, (IrValue){w, k}, cur[k]);
    IR_FOR_EACH(g, n)
    {
        for (int i = 0; i < n->n_ctrl; i++)
            if (n->ctrl[i] == w) /* "after the loop": after its first result */
                n->ctrl[i] = cur[0].node;
    }
    w->dead = true;
    *final = cur;
    return true;
}

/* Marks the ancestors of ys (to_loss) and the nodes depending on wrt
 * through floating-point values and differentiable ops (from_wrt), over
 * g->nodes[0, n0). */
static void mark_paths(IrGraph *g, const Sweep *s, int n0, const IrValue *ys, int n_y, const IrValue *wrt,
                       int n_wrt)
{
    for (int j = 0; j < n_y; j++)
        if (valid_id(s, ys[j].node))
            s->to_loss[ys[j].node->id] = 1;
    for (int i = n0 - 1; i >= 0; i--) {
        IrNode *n = g->nodes[i];
        if (!n || n->dead || !valid_id(s, n) || !s->to_loss[n->id])
            continue;
        for (int k = 0; k < n->n_inputs; k++)
            if (valid_id(s, n->inputs[k].node))
                s->to_loss[n->inputs[k].node->id] = 1;
    }
    for (int i = 0; i < n_wrt; i++)
        if (valid_id(s, wrt[i].node) && is_float(ir_value_type(wrt[i])->dtype))
            s->from_wrt[wrt[i].node->id] = 1;
    for (int i = 0; i < n0; i++) {
        IrNode *n = g->nodes[i];
        if (!n || n->dead || !valid_id(s, n) || s->from_wrt[n->id] || n->op == OP_VARIABLE ||
            grad_rule(n->op) == grad_nodiff)
            continue;
        for (int k = 0; k < n->n_inputs; k++) {
            IrValue in = n->inputs[k];
            if (valid_id(s, in.node) && s->from_wrt[in.node->id] && is_float(ir_value_type(in)->dtype))
                s->from_wrt[n->id] = 1;
        }
    }
}

/* Unrolls every WHILE on a path from wrt to ys (nested loops: the inner
 * ones surface in g when the outer body is inlined and are unrolled in the
 * next round), then restores the topological order.  ys and wrt are
 * updated where they named a loop's output. */
static bool unroll_loops(IrGraph *g, IrValue *ys, int n_y, IrValue *wrt, int n_wrt, Status *st)
{
    int64_t budget = 0;
    for (int round = 0; round <= IR_MAX_REGION_DEPTH; round++) {
        bool any = false;
        IR_FOR_EACH(g, n)
        {
            any |= n->op == OP_WHILE;
        }
        if (!any)
            return true;
        Sweep s;
        memset(&s, 0, sizeof s);
        arena_init(&s.ar, g->arena.a);
        s.n_ids = g->next_id;
        s.to_loss = arena_alloc(&s.ar, (size_t)s.n_ids + 1);
        s.from_wrt = arena_alloc(&s.ar, (size_t)s.n_ids + 1);
        IrNode **loops = arena_alloc(&s.ar, sizeof(IrNode *) * ((size_t)g->n_nodes + 1));
        if (!s.to_loss || !s.from_wrt || !loops) {
            arena_reset(&s.ar);
            return st_errorf(st, ST_NOMEM, "gradient: out of memory");
        }
        int n0 = g->n_nodes, n_loops = 0;
        mark_paths(g, &s, n0, ys, n_y, wrt, n_wrt);
        for (int i = 0; i < n0; i++) {
            IrNode *n = g->nodes[i];
            if (n && !n->dead && n->op == OP_WHILE && valid_id(&s, n) && s.to_loss[n->id] &&
                s.from_wrt[n->id])
                loops[n_loops++] = n;
        }
        for (int l = 0; l < n_loops; l++) {
            IrNode *w = loops[l];
            IrValue *fin = NULL;
            if (!unroll(g, w, &budget, &fin, st)) {
                arena_reset(&s.ar);
                return false;
            }
            for (int j = 0; j < n_y; j++)
                if (ys[j].node == w)
                    ys[j] = fin[ys[j].index];
            for (int j = 0; j < n_wrt; j++)
                if (wrt[j].node == w)
                    wrt[j] = fin[wrt[j].index];
        }
        arena_reset(&s.ar);
        if (n_loops == 0)
            return true;
        ir_graph_compact(g);
    }
    return st_errorf(st, ST_UNSUPPORTED, "gradient: while loops nested deeper than %d", IR_MAX_REGION_DEPTH);
}

static bool differentiate(GradCtx *c, Sweep *s, IrNode *n)
{
    if (n->op == OP_WHILE) /* unroll_loops replaced every loop on a path */
        return st_errorf(c->st, ST_ERROR, "gradient: internal error: while loop '%s' was not unrolled",
                         origin_of(n));
    GradRule rule = grad_rule(n->op);
    if (!rule)
        return st_errorf(c->st, ST_UNSUPPORTED, "no gradient rule for '%s' (node '%s')", ir_op_name(n->op),
                         origin_of(n));
    if (rule == grad_nodiff)
        return true;
    bool need_buf[8], *need = need_buf;
    IrValue dx_buf[8], *dx = dx_buf, dy_buf[4], *dy = dy_buf;
    if (n->n_inputs > 8 || n->n_outputs > 4) {
        need = arena_alloc(&s->ar, sizeof(bool) * (size_t)n->n_inputs);
        dx = arena_alloc(&s->ar, sizeof(IrValue) * (size_t)n->n_inputs);
        dy = arena_alloc(&s->ar, sizeof(IrValue) * (size_t)n->n_outputs);
        if (!need || !dx || !dy)
            return st_errorf(c->st, ST_NOMEM, "gradient: out of memory");
    }
    bool any = false;
    for (int i = 0; i < n->n_inputs; i++) {
        IrValue in = n->inputs[i];
        need[i] = valid_id(s, in.node) && s->from_wrt[in.node->id] && is_float(ir_value_type(in)->dtype);
        any |= need[i];
        dx[i] = (IrValue){NULL, 0};
    }
    if (!any)
        return true;
    for (int k = 0; k < n->n_outputs; k++)
        dy[k] = s->adj[n->id][k];
    /* origin of the new nodes: "gradients/<node>" */
    const char *o = origin_of(n);
    size_t len = strlen(o) + 11;
    char *go = arena_alloc(&c->g->arena, len);
    if (!go)
        return st_errorf(c->st, ST_NOMEM, "gradient: out of memory");
    snprintf(go, len, "gradients/%s", o);
    c->g->cur_origin = go;
    c->g->cur_origin_op = n->origin_op ? n->origin_op : ir_op_name(n->op);
    c->g->cur_device = n->device; /* adjoints run on their forward node's device */
    if (!rule(c, n, dy, need, dx))
        return false;
    for (int i = 0; i < n->n_inputs && st_ok(c->st); i++) {
        if (!need[i] || !dx[i].node)
            continue;
        const IrType *want = ir_value_type(n->inputs[i]);
        if (ir_value_type(dx[i])->dtype != want->dtype)
            return st_errorf(c->st, ST_ERROR,
                             "gradient: internal error: rule for '%s' (node '%s') gave %s for a %s "
                             "input",
                             ir_op_name(n->op), origin_of(n), tcrt_dtype_name(ir_value_type(dx[i])->dtype),
                             tcrt_dtype_name(want->dtype));
        IrValue d = grad_unbroadcast(c, dx[i], &want->shape);
        if (!d.node || !accumulate(c, s, n->inputs[i], d))
            return false;
    }
    return st_ok(c->st);
}

bool grad_vjp(IrGraph *g, const IrValue *ys_in, const IrValue *dys, int n_y, const IrValue *wrt_in, int n_wrt,
              IrValue *grads, bool *has_path, Status *st)
{
    if (!st_ok(st))
        return false;
    GradCtx c = {g, st};
    Sweep s;
    memset(&s, 0, sizeof s);
    arena_init(&s.ar, g->arena.a);
    /* 0. loops on a path become straight-line code (ys, wrt may move) */
    IrValue *ys = arena_alloc(&s.ar, sizeof(IrValue) * ((size_t)n_y + 1));
    IrValue *wrt = arena_alloc(&s.ar, sizeof(IrValue) * ((size_t)n_wrt + 1));
    if (!ys || !wrt) {
        arena_reset(&s.ar);
        return st_errorf(st, ST_NOMEM, "gradient: out of memory");
    }
    if (n_y > 0)
        memcpy(ys, ys_in, sizeof(IrValue) * (size_t)n_y);
    if (n_wrt > 0)
        memcpy(wrt, wrt_in, sizeof(IrValue) * (size_t)n_wrt);
    if (!unroll_loops(g, ys, n_y, wrt, n_wrt, st)) {
        arena_reset(&s.ar);
        return false;
    }
    s.n_ids = g->next_id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->id >= s.n_ids)
            s.n_ids = g->nodes[i]->id + 1;
    s.to_loss = arena_alloc(&s.ar, (size_t)s.n_ids + 1);
    s.from_wrt = arena_alloc(&s.ar, (size_t)s.n_ids + 1);
    s.adj = arena_alloc(&s.ar, sizeof(IrValue *) * ((size_t)s.n_ids + 1));
    bool ok = s.to_loss && s.from_wrt && s.adj;
    if (!ok)
        st_errorf(st, ST_NOMEM, "gradient: out of memory");
    const char *saved_origin = g->cur_origin, *saved_op = g->cur_origin_op, *saved_dev = g->cur_device;
    int n0 = g->n_nodes;
    if (ok) {
        /* 1. ancestors of the outputs, then the nodes reached from wrt */
        mark_paths(g, &s, n0, ys, n_y, wrt, n_wrt);
        /* 2. seeds, 3. reverse sweep */
        for (int j = 0; j < n_y && ok; j++)
            if (dys[j].node)
                ok = accumulate(&c, &s, ys[j], dys[j]);
        for (int i = n0 - 1; i >= 0 && ok; i--) {
            IrNode *n = g->nodes[i];
            if (!n || n->dead || !valid_id(&s, n) || !s.to_loss[n->id] || !s.from_wrt[n->id] ||
                !s.adj[n->id] || n->n_inputs == 0 || n->op == OP_VARIABLE)
                continue;
            ok = differentiate(&c, &s, n);
        }
    }
    /* 4. results */
    g->cur_device = saved_dev;
    g->cur_origin = "gradients";
    g->cur_origin_op = "ZerosLike";
    for (int i = 0; i < n_wrt && ok; i++) {
        IrValue a = {NULL, 0};
        if (valid_id(&s, wrt[i].node) && s.adj[wrt[i].node->id])
            a = s.adj[wrt[i].node->id][wrt[i].index];
        if (has_path)
            has_path[i] = a.node != NULL;
        grads[i] = a.node ? a : grad_fill(&c, ir_value_type(wrt[i]), 0.0);
        ok = grads[i].node != NULL;
    }
    g->cur_origin = saved_origin;
    g->cur_origin_op = saved_op;
    g->cur_device = saved_dev;
    arena_reset(&s.ar);
    return ok && st_ok(st);
}

bool pass_grad_values(IrGraph *g, IrValue loss, const IrValue *wrt, int n_wrt, IrValue *grads, bool *has_path,
                      Status *st)
{
    if (!st_ok(st))
        return false;
    if (!loss.node || loss.node->dead)
        return st_errorf(st, ST_ERROR, "gradient: the loss is undefined");
    const IrType *lt = ir_value_type(loss);
    if (!is_float(lt->dtype) || ir_shape_count(&lt->shape) != 1) {
        char b[160];
        return st_errorf(st, ST_ERROR, "loss '%s' is %s%s: it must be a float32 or float64 scalar",
                         origin_of(loss.node), tcrt_dtype_name(lt->dtype),
                         ir_shape_str(&lt->shape, b, sizeof b));
    }
    GradCtx c = {g, st};
    const char *so = g->cur_origin, *sop = g->cur_origin_op;
    g->cur_origin = "gradients";
    g->cur_origin_op = "Fill";
    IrValue one = grad_fill(&c, lt, 1.0);
    g->cur_origin = so;
    g->cur_origin_op = sop;
    return one.node && grad_vjp(g, &loss, &one, 1, wrt, n_wrt, grads, has_path, st);
}
