/* passes/grad.c - reverse-mode gradient construction over the IR.
 * Not a pipeline pass: the driver calls pass_grad_build (optim.c) after
 * import, before pass_run_pipeline; tests call pass_grad_values directly.
 *
 * Algorithm (grad_vjp; pass_grad_values is grad_vjp(loss, ones), and a
 * cond's rule runs it inside each branch with the outputs' adjoints):
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
 * "gradient through a while loop is not supported yet: node 'w'".
 * A COND is differentiated branch by branch into a new COND (grad_rules.c);
 * a WHILE is an error.
 * Invariants: forward nodes are never modified; every adjoint has exactly
 * its value's dtype and shape.
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
    *slot = slot->node ? grad_bin(c, OP_ADD, *slot, d) : d;
    return slot->node != NULL;
}

static bool differentiate(GradCtx *c, Sweep *s, IrNode *n)
{
    if (n->op == OP_WHILE)
        return st_errorf(c->st, ST_UNSUPPORTED,
                         "gradient through a while loop is not supported yet: node '%s'", origin_of(n));
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

bool grad_vjp(IrGraph *g, const IrValue *ys, const IrValue *dys, int n_y, const IrValue *wrt, int n_wrt,
              IrValue *grads, bool *has_path, Status *st)
{
    if (!st_ok(st))
        return false;
    GradCtx c = {g, st};
    Sweep s;
    memset(&s, 0, sizeof s);
    arena_init(&s.ar, g->arena.a);
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
    const char *saved_origin = g->cur_origin, *saved_op = g->cur_origin_op;
    int n0 = g->n_nodes;
    if (ok) {
        /* 1. ancestors of the outputs, then the nodes reached from wrt */
        for (int j = 0; j < n_y; j++)
            if (valid_id(&s, ys[j].node))
                s.to_loss[ys[j].node->id] = 1;
        for (int i = n0 - 1; i >= 0; i--) {
            IrNode *n = g->nodes[i];
            if (!n || n->dead || !valid_id(&s, n) || !s.to_loss[n->id])
                continue;
            for (int k = 0; k < n->n_inputs; k++)
                if (valid_id(&s, n->inputs[k].node))
                    s.to_loss[n->inputs[k].node->id] = 1;
        }
        for (int i = 0; i < n_wrt; i++)
            if (valid_id(&s, wrt[i].node) && is_float(ir_value_type(wrt[i])->dtype))
                s.from_wrt[wrt[i].node->id] = 1;
        for (int i = 0; i < n0; i++) {
            IrNode *n = g->nodes[i];
            if (!n || n->dead || !valid_id(&s, n) || s.from_wrt[n->id] || n->op == OP_VARIABLE ||
                grad_rule(n->op) == grad_nodiff)
                continue;
            for (int k = 0; k < n->n_inputs; k++) {
                IrValue in = n->inputs[k];
                if (valid_id(&s, in.node) && s.from_wrt[in.node->id] && is_float(ir_value_type(in)->dtype))
                    s.from_wrt[n->id] = 1;
            }
        }
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
