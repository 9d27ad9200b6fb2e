/* passes/optim.c - optimizers: the training step after the gradients.
 *
 * pass_grad_build differentiates the loss with respect to every trainable
 * VARIABLE it depends on (pass_grad_values, grad.c) and appends, per
 * variable, TensorFlow's update kernels written over primitives, ending in
 * exactly one ASSIGN per updated variable (ir/ops.def "state": every read
 * sees the value at the start of the step, so the formulas read the old
 * values and the ASSIGNs write the new ones):
 *   sgd       var' = var - lr * g                               (ApplyGradientDescent)
 *   momentum  accum' = accum * momentum + g                     (ApplyMomentum)
 *             var' = var - lr * accum'
 *             nesterov: var' = var - (g * lr + accum' * momentum * lr)
 *   adam      lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)   (ApplyAdam)
 *             m' = m + (g - m) * (1 - beta1)
 *             v' = v + (g * g - v) * (1 - beta2)
 *             var' = var - m' * lr_t / (sqrt(v') + epsilon)
 *             beta1_power' = beta1_power * beta1, beta2_power' likewise
 * Slot variables are new, non-trainable VARIABLEs with zero initial values
 * named as TF1's optimizers name them: "<var>/Momentum", "<var>/Adam",
 * "<var>/Adam_1", and the scalars "beta1_power"/"beta2_power" (float32,
 * initialized to beta1/beta2, so step t uses beta^t).
 * pass_grad_trainable turns float constants of a frozen graph into
 * trainable variables (--trainable).
 * --data-parallel (o->data_parallel, docs/distributed.md): every replica
 * runs this whole step on its own batch; each gradient g becomes
 * ALLREDUCE(g), the mean over the replicas, before the update reads it (so
 * every replica applies the same update and the variables stay equal), and
 * the fetches of the loss read ALLREDUCE(loss): the global mean loss.
 * Invariants: the loss stays a fetch (with --data-parallel its averaged
 * value); forward nodes are not modified except that --trainable redirects
 * a constant's uses to its new variable.
 */
#include "passes/grad_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- --optimizer ---- */

static bool parse_num(const char *spec, const char *key, const char *v, size_t n, double *out, Status *st)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return st_errorf(st, ST_ERROR, "optimizer '%s': %s needs a number", spec, key);
    memcpy(buf, v, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    double x = strtod(buf, &end);
    if (errno || *end || !isfinite(x))
        return st_errorf(st, ST_ERROR, "optimizer '%s': %s = '%s' is not a number", spec, key, buf);
    *out = x;
    return true;
}

bool pass_grad_parse_optimizer(const char *spec, GradOptions *o, Status *st)
{
    memset(o, 0, sizeof *o);
    o->momentum = 0.9;
    o->beta1 = 0.9;
    o->beta2 = 0.999;
    o->epsilon = 1e-8;
    bool has_lr = false;
    const char *colon = strchr(spec, ':');
    size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
    static const char *const keys[3][4] = {
        {"lr"}, {"lr", "momentum", "nesterov"}, {"lr", "beta1", "beta2", "epsilon"}};
    static const char *const lists[3] = {"lr", "lr, momentum, nesterov", "lr, beta1, beta2, epsilon"};
    static const char *const names[3] = {"sgd", "momentum", "adam"};
    int kind = -1;
    for (int k = 0; k < 3; k++)
        if (strlen(names[k]) == nl && !strncmp(spec, names[k], nl))
            kind = k;
    if (kind < 0)
        return st_errorf(st, ST_ERROR, "optimizer '%s': unknown optimizer '%.*s' (sgd, momentum or adam)",
                         spec, (int)nl, spec);
    o->kind = (GradOptimizerKind)kind;
    const char *p = colon ? colon + 1 : spec + nl;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq)
            return st_errorf(st, ST_ERROR, "optimizer '%s': expected KEY=VALUE, got '%.*s'", spec, (int)len,
                             p);
        size_t kl = (size_t)(eq - p);
        int which = -1;
        for (int k = 0; k < 4 && keys[kind][k]; k++)
            if (strlen(keys[kind][k]) == kl && !strncmp(p, keys[kind][k], kl))
                which = k;
        if (which < 0)
            return st_errorf(st, ST_ERROR, "optimizer '%s': unknown key '%.*s' for %s (%s)", spec, (int)kl, p,
                             names[kind], lists[kind]);
        const char *key = keys[kind][which];
        double x = 0;
        if (!parse_num(spec, key, eq + 1, len - kl - 1, &x, st))
            return false;
        if (!strcmp(key, "lr")) {
            o->lr = x;
            has_lr = true;
        } else if (!strcmp(key, "momentum"))
            o->momentum = x;
        else if (!strcmp(key, "nesterov")) {
            if (x != 0 && x != 1)
                return st_errorf(st, ST_ERROR, "optimizer '%s': nesterov must be 0 or 1", spec);
            o->nesterov = x == 1;
        } else if (!strcmp(key, "beta1"))
            o->beta1 = x;
        else if (!strcmp(key, "beta2"))
            o->beta2 = x;
        else
            o->epsilon = x;
        p += len + (comma ? 1 : 0);
        if (comma && !*p)
            return st_errorf(st, ST_ERROR, "optimizer '%s': trailing ','", spec);
    }
    if (!has_lr && kind == GRAD_ADAM)
        o->lr = 1e-3; /* TF's default */
    else if (!has_lr)
        return st_errorf(st, ST_ERROR, "optimizer '%s': %s needs lr=X (the learning rate, > 0)", spec,
                         names[kind]);
    if (!(o->lr > 0))
        return st_errorf(st, ST_ERROR, "optimizer '%s': lr must be > 0", spec);
    if (!(o->momentum >= 0))
        return st_errorf(st, ST_ERROR, "optimizer '%s': momentum must be >= 0", spec);
    if (!(o->beta1 >= 0 && o->beta1 < 1) || !(o->beta2 >= 0 && o->beta2 < 1))
        return st_errorf(st, ST_ERROR, "optimizer '%s': beta1 and beta2 must be in [0, 1)", spec);
    if (!(o->epsilon > 0))
        return st_errorf(st, ST_ERROR, "optimizer '%s': epsilon must be > 0", spec);
    return true;
}

/* ---- the update ---- */

static const char *name_of(const IrNode *n)
{
    return n->origin ? n->origin : "?";
}

static char *fmt_name(IrGraph *g, const char *a, const char *b)
{
    a = a ? a : "";
    b = b ? b : "";
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = arena_alloc(&g->arena, n);
    if (s)
        snprintf(s, n, "%s%s", a, b);
    return s;
}

/* A new non-trainable variable named `name`, every element `init`. */
static IrValue slot(GradCtx *c, const char *name, const IrType *t, double init)
{
    if (!st_ok(c->st))
        return (IrValue){NULL, 0};
    IrGraph *g = c->g;
    size_t bytes = ir_type_bytes(t);
    void *data = arena_alloc_align(&g->arena, bytes ? bytes : 1, 64);
    if (!data) {
        st_errorf(c->st, ST_NOMEM, "optimizer: out of memory");
        return (IrValue){NULL, 0};
    }
    int64_t cnt = ir_shape_count(&t->shape);
    for (int64_t i = 0; i < cnt && init != 0; i++) {
        if (t->dtype == TCRT_F64)
            ((double *)data)[i] = init;
        else
            ((float *)data)[i] = (float)init;
    }
    const char *so = g->cur_origin, *sop = g->cur_origin_op;
    g->cur_origin = name;
    g->cur_origin_op = "VariableV2";
    IrValue c0 = ir_const(g, t->dtype, &t->shape, data, c->st);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrValue v = c0.node ? ir_emit1(g, OP_VARIABLE, &c0, 1, &p, NULL, c->st) : c0;
    g->cur_origin = so;
    g->cur_origin_op = sop;
    return v;
}

static bool assign(GradCtx *c, IrValue var, IrValue value)
{
    IrValue in[2] = {var, value};
    return grad_emit(c, OP_ASSIGN, in, 2, NULL, NULL).node != NULL;
}

#define MUL(a, b) grad_bin(c, OP_MUL, (a), (b))
#define DIV(a, b) grad_bin(c, OP_DIV, (a), (b))
#define ADD(a, b) grad_bin(c, OP_ADD, (a), (b))
#define SUB(a, b) grad_bin(c, OP_SUB, (a), (b))

static bool update(GradCtx *c, const GradOptions *o, IrNode *vn, IrValue gr, IrValue lr_t)
{
    IrGraph *g = c->g;
    IrValue var = {vn, 0};
    const IrType *t = ir_value_type(var);
    tcrt_dtype dt = t->dtype;
    IrValue lr = grad_scalar(c, dt, o->lr);
    switch (o->kind) {
    case GRAD_SGD:
        return assign(c, var, SUB(var, MUL(gr, lr)));
    case GRAD_MOMENTUM: {
        IrValue acc = slot(c, fmt_name(g, name_of(vn), "/Momentum"), t, 0);
        IrValue mom = grad_scalar(c, dt, o->momentum);
        IrValue acc1 = ADD(MUL(acc, mom), gr);
        IrValue step = o->nesterov ? ADD(MUL(gr, lr), MUL(MUL(acc1, mom), lr)) : MUL(acc1, lr);
        return assign(c, acc, acc1) && assign(c, var, SUB(var, step));
    }
    case GRAD_ADAM: {
        IrValue m = slot(c, fmt_name(g, name_of(vn), "/Adam"), t, 0);
        IrValue v = slot(c, fmt_name(g, name_of(vn), "/Adam_1"), t, 0);
        if (dt != TCRT_F32) {
            IrType st = {dt, {0, {0}}};
            lr_t = grad_emit(c, OP_CAST, &lr_t, 1, NULL, &st);
        }
        IrValue m1 = ADD(m, MUL(SUB(gr, m), grad_scalar(c, dt, 1 - o->beta1)));
        IrValue v1 = ADD(v, MUL(SUB(MUL(gr, gr), v), grad_scalar(c, dt, 1 - o->beta2)));
        IrValue den = ADD(grad_un(c, OP_SQRT, v1), grad_scalar(c, dt, o->epsilon));
        IrValue var1 = SUB(var, DIV(MUL(m1, lr_t), den));
        return assign(c, m, m1) && assign(c, v, v1) && assign(c, var, var1);
    }
    }
    return st_errorf(c->st, ST_ERROR, "optimizer: unknown kind %d", (int)o->kind);
}

bool pass_grad_build(IrGraph *g, IrValue loss, const GradOptions *o, Status *st)
{
    if (!st_ok(st))
        return false;
    const char *lname = o->loss_name ? o->loss_name : loss.node ? name_of(loss.node) : "?";
    if (!loss.node)
        return st_errorf(st, ST_ERROR, "loss '%s' is undefined", lname);
    const IrType *lt = ir_value_type(loss);
    if ((lt->dtype != TCRT_F32 && lt->dtype != TCRT_F64) || ir_shape_count(&lt->shape) != 1) {
        char b[160];
        return st_errorf(st, ST_ERROR, "loss '%s' is %s%s: it must be a float32 or float64 scalar", lname,
                         tcrt_dtype_name(lt->dtype), ir_shape_str(&lt->shape, b, sizeof b));
    }
    /* trainable variables the loss depends on, in node order */
    Arena ar;
    arena_init(&ar, g->arena.a);
    int n_ids = g->next_id + 1;
    unsigned char *up = arena_alloc(&ar, (size_t)n_ids);
    IrValue *wrt = arena_alloc(&ar, sizeof(IrValue) * (size_t)g->n_nodes + 1);
    IrValue *grads = arena_alloc(&ar, sizeof(IrValue) * (size_t)g->n_nodes + 1);
    bool *has = arena_alloc(&ar, sizeof(bool) * (size_t)g->n_nodes + 1);
    bool ok = up && wrt && grads && has;
    if (!ok)
        st_errorf(st, ST_NOMEM, "optimizer: out of memory");
    int n_vars = 0;
    if (ok) {
        up[loss.node->id] = 1;
        for (int i = g->n_nodes - 1; i >= 0; i--) {
            IrNode *n = g->nodes[i];
            if (!n || n->dead || !up[n->id])
                continue;
            for (int k = 0; k < n->n_inputs; k++)
                up[n->inputs[k].node->id] = 1;
        }
        for (int i = 0; i < g->n_nodes; i++) {
            IrNode *n = g->nodes[i];
            if (n && !n->dead && n->op == OP_VARIABLE && n->p.i[0] == 1 && up[n->id])
                wrt[n_vars++] = (IrValue){n, 0};
        }
        if (n_vars == 0)
            ok = st_errorf(st, ST_ERROR,
                           "loss '%s' depends on no trainable variable (a frozen graph's constants become "
                           "variables with --trainable)",
                           lname);
    }
    /* a variable the graph already assigns cannot get a second update */
    for (int i = 0; i < g->n_nodes && ok; i++) {
        IrNode *n = g->nodes[i];
        if (!n || n->dead || n->op != OP_ASSIGN)
            continue;
        for (int k = 0; k < n_vars && ok; k++)
            if (n->inputs[0].node == wrt[k].node)
                ok = st_errorf(
                    st, ST_ERROR,
                    "trainable variable '%s' is already assigned by node '%s'; the optimizer's update "
                    "would be a second assignment in one step",
                    name_of(wrt[k].node), name_of(n));
    }
    ok = ok && pass_grad_values(g, loss, wrt, n_vars, grads, has, st);
    for (int k = 0; k < n_vars && ok; k++)
        if (!has[k])
            ok = st_errorf(st, ST_ERROR, "trainable variable '%s' has no gradient path to the loss '%s'",
                           name_of(wrt[k].node), lname);
    GradCtx c = {g, st};
    const char *so = g->cur_origin, *sop = g->cur_origin_op;
    static const char *const opt_name[] = {"GradientDescent", "Momentum", "Adam"};
    static const char *const apply_op[] = {"ApplyGradientDescent", "ApplyMomentum", "ApplyAdam"};
    IrValue lr_t = {NULL, 0}, b1p = {NULL, 0}, b2p = {NULL, 0};
    if (ok && o->kind == GRAD_ADAM) {
        g->cur_origin = "Adam";
        g->cur_origin_op = "ApplyAdam";
        IrType sc = {TCRT_F32, {0, {0}}};
        b1p = slot(&c, "beta1_power", &sc, o->beta1);
        b2p = slot(&c, "beta2_power", &sc, o->beta2);
        IrValue one = grad_scalar(&c, TCRT_F32, 1);
        lr_t = grad_bin(&c, OP_DIV,
                        grad_bin(&c, OP_MUL, grad_scalar(&c, TCRT_F32, o->lr),
                                 grad_un(&c, OP_SQRT, grad_bin(&c, OP_SUB, one, b2p))),
                        grad_bin(&c, OP_SUB, one, b1p));
        ok = st_ok(st);
    }
    for (int k = 0; k < n_vars && ok; k++) {
        g->cur_origin = fmt_name(g, opt_name[o->kind], fmt_name(g, "/update_", name_of(wrt[k].node)));
        g->cur_origin_op = apply_op[o->kind];
        g->cur_device = wrt[k].node->device; /* the update runs where its variable lives */
        IrValue gr = grads[k];
        if (o->data_parallel) { /* the mean gradient over the replicas */
            gr = grad_emit(&c, OP_ALLREDUCE, &gr, 1, NULL, NULL);
            ok = gr.node != NULL;
        }
        ok = ok && update(&c, o, wrt[k].node, gr, lr_t);
        g->cur_device = NULL;
    }
    if (ok && o->data_parallel) { /* rank 0 reports the global mean loss */
        g->cur_origin = fmt_name(g, "allreduce/", lname);
        g->cur_origin_op = "AllReduce";
        IrValue mean = grad_emit(&c, OP_ALLREDUCE, &loss, 1, NULL, NULL);
        ok = mean.node != NULL;
        for (int i = 0; i < g->n_fetches && ok; i++)
            if (g->fetches[i].value.node == loss.node && g->fetches[i].value.index == loss.index)
                g->fetches[i].value = mean;
    }
    if (ok && o->kind == GRAD_ADAM) {
        g->cur_origin = "Adam";
        g->cur_origin_op = "ApplyAdam";
        ok = assign(&c, b1p, grad_bin(&c, OP_MUL, b1p, grad_scalar(&c, TCRT_F32, o->beta1))) &&
             assign(&c, b2p, grad_bin(&c, OP_MUL, b2p, grad_scalar(&c, TCRT_F32, o->beta2)));
    }
    g->cur_origin = so;
    g->cur_origin_op = sop;
    arena_reset(&ar);
    return ok && st_ok(st);
}

/* ---- --trainable ---- */

static bool is_float_const(const IrNode *n)
{
    return n->op == OP_CONST && (n->out[0].type.dtype == TCRT_F32 || n->out[0].type.dtype == TCRT_F64);
}

/* Operand k of a WHILE is loop-invariant: the body returns its parameter k
 * unchanged (weights captured by a loop, e.g. an RNN's kernel). */
static bool loop_invariant(const IrNode *w, int k)
{
    if (w->n_regions < 2 || k >= w->regions[1]->n_fetches)
        return false;
    IrValue r = w->regions[1]->fetches[k].value;
    return r.node && r.node->op == OP_ARG && r.index == 0 && r.node->p.i[0] == k;
}

/* c (possibly through one reshape) is a matmul operand, a conv2d filter or
 * bias, one operand of an add/sub whose other operand is not constant, a
 * loop-invariant operand of a while or a data operand of a cond (the
 * weights a loop body or branch reads; constants the importer copied into
 * a region stay constants: a region holds no variable). */
static bool feeds_weights(const IrGraph *g, const IrNode *c)
{
    IR_FOR_EACH(g, n)
    {
        for (int k = 0; k < n->n_inputs; k++) {
            const IrNode *in = n->inputs[k].node;
            if (in != c && !(in->op == OP_COPY && in->inputs[0].node == c))
                continue;
            if (n->op == OP_MATMUL || (n->op == OP_CONV2D && k >= 1 && k <= 2))
                return true;
            if ((n->op == OP_WHILE && loop_invariant(n, k)) || (n->op == OP_COND && k >= 1))
                return true;
            if ((n->op == OP_ADD || n->op == OP_SUB) && n->n_inputs == 2 &&
                n->inputs[1 - k].node->op != OP_CONST)
                return true;
        }
    }
    return false;
}

/* c is the initial value of a VARIABLE (already state) */
static bool is_var_init(const IrGraph *g, const IrNode *c)
{
    IR_FOR_EACH(g, n)
    {
        if (n->op == OP_VARIABLE && n->inputs[0].node == c)
            return true;
    }
    return false;
}

static bool make_variable(IrGraph *g, IrNode *c, Status *st)
{
    IrValue cv = {c, 0};
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = 1;
    const char *so = g->cur_origin, *sop = g->cur_origin_op;
    g->cur_origin = c->origin;
    g->cur_origin_op = "VariableV2";
    IrNode *v = ir_emit(g, OP_VARIABLE, &cv, 1, &p, NULL, st);
    g->cur_origin = so;
    g->cur_origin_op = sop;
    if (!v)
        return false;
    ir_replace_uses(g, cv, (IrValue){v, 0});
    v->inputs[0] = cv;
    return true;
}

bool pass_grad_trainable(IrGraph *g, const char *spec, Status *st)
{
    if (!st_ok(st))
        return false;
    int n0 = g->n_nodes, made = 0;
    if (!strcmp(spec, "all")) {
        for (int i = 0; i < n0; i++) {
            IrNode *n = g->nodes[i];
            if (!n || n->dead || !is_float_const(n) || !n->origin ||
                ir_shape_count(&n->out[0].type.shape) < 2 || !feeds_weights(g, n) || is_var_init(g, n))
                continue;
            if (!make_variable(g, n, st))
                return false;
            made++;
        }
        if (!made)
            return st_errorf(
                st, ST_ERROR,
                "--trainable all: no float constant with 2 or more elements feeds a matmul, conv2d or "
                "bias add");
    } else {
        const char *p = spec;
        while (*p) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            if (len == 0)
                return st_errorf(st, ST_ERROR, "--trainable '%s': empty name", spec);
            int found = 0;
            bool non_float = false;
            for (int i = 0; i < n0; i++) {
                IrNode *n = g->nodes[i];
                if (!n || n->dead || n->op != OP_CONST || !n->origin || strlen(n->origin) != len ||
                    strncmp(n->origin, p, len))
                    continue;
                if (!is_float_const(n)) {
                    non_float = true;
                    continue;
                }
                if (is_var_init(g, n))
                    continue; /* the initial value of a variable: it is state already */
                if (!make_variable(g, n, st))
                    return false;
                found++;
            }
            if (!found)
                return st_errorf(st, ST_ERROR,
                                 non_float
                                     ? "--trainable: constant '%.*s' is not float32 or float64"
                                     : "--trainable: no constant named '%.*s' in the compiled graph (a Const "
                                       "node the fetches depend on, not folded into another)",
                                 (int)len, p);
            made += found;
            p += len + (comma ? 1 : 0);
        }
    }
    ir_graph_compact(g);
    return true;
}
