/* compiler/tf/tf_ops_state.c - TensorFlow variables, assignments and
 * optimizer updates lowered to the IR's state primitives (ir/ops.def
 * "state": VARIABLE and ASSIGN, snapshot semantics).
 *
 * Variables: VariableV2, Variable (legacy) and VarHandleOp lower to the
 * node's VARIABLE (tf_state_variable in tf_import.c makes it once per
 * import with its initial value).  A ref and a resource handle are the
 * same IR value: the VARIABLE's output, which is also the value a read sees
 * (the value at the start of the run).  An op taking a ref or a handle
 * finds its variable through the value's producer: a VARIABLE, or an
 * ASSIGN (a ref returned by an earlier assignment: the variable it wrote,
 * whose current value is then the ASSIGN's output).  Anything else (a
 * handle fed as a placeholder, passed through a loop) is an error naming
 * the node and the producer.
 *
 * Assignments: Assign(v, x) = ASSIGN(v, x); AssignAdd/AssignSub(v, d) =
 * ASSIGN(v, cur +- d).  The resource forms (AssignVariableOp, ...) have no
 * outputs.  The ref forms output the ASSIGN (the new value).  Every ASSIGN
 * goes through tf_state_assign, so that a read with a control dependency
 * on the assigning node sees the new value (tf_import.c, "read after
 * assign").
 *
 * Optimizers (TensorFlow's training_ops: ApplyGradientDescent,
 * ApplyMomentum, ApplyAdam, ApplyRMSProp, ApplyAdagrad and their
 * ResourceApply forms): the update formulas of TF's op docs written as
 * elementwise IR on the run-start values, then one ASSIGN per updated
 * variable (var and its accumulators).  Output 0 of the ref form is the
 * ASSIGN of var.  Scalars (lr, beta1, ...) broadcast.
 *
 * Random initializers (TruncatedNormal, RandomStandardNormal) lower to the
 * IR's random_uniform through the Box-Muller transform; truncation draws
 * up to four candidates per element and keeps the first within two
 * standard deviations (the last one clamped).  Deterministic for given
 * seeds, but not TensorFlow's random stream.
 */
#include <math.h>
#include <string.h>

#include "compiler/tf/tf_int.h"

static const IrType *type_of(IrValue v)
{
    return ir_value_type(v);
}

static bool want(TfCtx *c, int n_in, int n)
{
    if (n_in != n)
        return tf_errorf(c, "expected %d inputs, got %d", n, n_in);
    return true;
}

static const char *type_str(const IrType *t, char *buf, size_t n)
{
    char sb[160];
    snprintf(buf, n, "%s%s", tcrt_dtype_name(t->dtype), ir_shape_str(&t->shape, sb, sizeof sb));
    return buf;
}

/* The variable behind ref/handle input `pos` and its current value. */
static bool var_of(TfCtx *c, const IrValue *in, int pos, IrValue *var, IrValue *cur)
{
    IrValue h = in[pos];
    if (h.node && h.node->op == OP_VARIABLE) {
        *var = h;
        *cur = h;
        return true;
    }
    if (h.node && h.node->op == OP_ASSIGN) {
        *var = h.node->inputs[0];
        *cur = h;
        return true;
    }
    const char *op = h.node && h.node->origin_op ? h.node->origin_op : h.node ? ir_op_name(h.node->op) : "?";
    return tf_errorf(c,
                     "input %d does not come from a variable: '%s' (%s) is not a VariableV2 or VarHandleOp "
                     "(a variable reaches an assignment directly or through Identity, not through a feed, "
                     "a loop or a cond)",
                     pos, h.node && h.node->origin ? h.node->origin : "?", op);
}

/* An update of the variable var with value x (same dtype and shape). */
static bool assign(TfCtx *c, IrValue var, IrValue x, IrValue *out)
{
    const IrType *vt = type_of(var), *xt = type_of(x);
    if (vt->dtype != xt->dtype || !ir_shape_eq(&vt->shape, &xt->shape)) {
        char b1[200], b2[200];
        return tf_errorf(c, "assigns %s to variable '%s' of type %s (a variable keeps its dtype and shape)",
                         type_str(xt, b1, sizeof b1), var.node->origin ? var.node->origin : "?",
                         type_str(vt, b2, sizeof b2));
    }
    return tf_state_assign(c, var, x, out);
}

static IrValue bin(TfCtx *c, Op op, IrValue a, IrValue b)
{
    return ir_binary(c->g, op, a, b, c->st);
}

static IrValue scalar(TfCtx *c, IrValue like, double v)
{
    return ir_const_scalar_f(c->g, type_of(like)->dtype, v, c->st);
}

/* ---- variables ---- */

static bool lower_variable(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    (void)in;
    (void)n_in;
    *n_out = 1;
    return tf_state_variable(c, &out[0]);
}

static bool lower_read(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue var, cur;
    if (!want(c, n_in, 1) || !var_of(c, in, 0, &var, &cur))
        return false;
    tcrt_dtype dt;
    if (tf_attr_has(c, "dtype")) {
        if (!tf_attr_type(c, "dtype", &dt))
            return false;
        if (dt != type_of(var)->dtype)
            return tf_errorf(c, "reads %s from variable '%s' of dtype %s", tcrt_dtype_name(dt),
                             var.node->origin ? var.node->origin : "?", tcrt_dtype_name(type_of(var)->dtype));
    }
    out[0] = cur;
    *n_out = 1;
    return true;
}

/* ResourceGather(resource, indices): Gather of the variable's value along
 * axis 0 (through the Gather row; batch_dims 0 only). */
static bool lower_resource_gather(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue var, cur;
    int64_t batch;
    if (!want(c, n_in, 2) || !var_of(c, in, 0, &var, &cur) || !tf_attr_int(c, "batch_dims", &batch))
        return false;
    if (batch != 0)
        return tf_errorf(c, "batch_dims %lld is not supported (0 only)", (long long)batch);
    const TfOpRow *g = tf_find_row("Gather");
    if (!g)
        return tf_errorf(c, "internal: no Gather row");
    IrValue ins[2] = {cur, in[1]};
    return g->lower(c, ins, 2, out, n_out);
}

/* VarIsInitializedOp, IsVariableInitialized: variables start initialized. */
static bool lower_is_initialized(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    IrValue var, cur;
    if (!want(c, n_in, 1) || !var_of(c, in, 0, &var, &cur))
        return false;
    out[0] = ir_const_scalar_f(c->g, TCRT_BOOL, 1, c->st);
    *n_out = 1;
    return out[0].node != NULL;
}

/* ---- assignments ---- */

/* op: 0 Assign, OP_ADD AssignAdd, OP_SUB AssignSub; has_out: the ref form. */
static bool assign_op(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, int op, bool has_out)
{
    IrValue var, cur, x = n_in > 1 ? in[1] : (IrValue){NULL, 0};
    if (!want(c, n_in, 2) || !var_of(c, in, 0, &var, &cur))
        return false;
    /* validate_shape=false would let Assign change the variable's shape;
     * variables keep theirs here, so a different shape is an error either way */
    if (type_of(x)->dtype != type_of(var)->dtype) {
        char b1[200], b2[200];
        return tf_errorf(c, "assigns %s to variable '%s' of type %s (a variable keeps its dtype and shape)",
                         type_str(type_of(x), b1, sizeof b1), var.node->origin ? var.node->origin : "?",
                         type_str(type_of(var), b2, sizeof b2));
    }
    if (op != 0) {
        if (!ir_shape_eq(&type_of(x)->shape, &type_of(var)->shape)) {
            char b1[200], b2[200];
            return tf_errorf(c, "adds %s to variable '%s' of type %s (shapes must be equal)",
                             type_str(type_of(x), b1, sizeof b1), var.node->origin ? var.node->origin : "?",
                             type_str(type_of(var), b2, sizeof b2));
        }
        x = bin(c, (Op)op, cur, x);
        if (!x.node)
            return false;
    }
    IrValue a;
    if (!assign(c, var, x, &a))
        return false;
    *n_out = has_out ? 1 : 0;
    if (has_out)
        out[0] = a;
    return true;
}

static bool lower_assign(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return assign_op(c, in, n_in, out, n_out, 0, true);
}
static bool lower_assign_add(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return assign_op(c, in, n_in, out, n_out, OP_ADD, true);
}
static bool lower_assign_sub(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return assign_op(c, in, n_in, out, n_out, OP_SUB, true);
}
static bool lower_assign_var(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return assign_op(c, in, n_in, out, n_out, 0, false);
}
static bool lower_assign_add_var(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return assign_op(c, in, n_in, out, n_out, OP_ADD, false);
}
static bool lower_assign_sub_var(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return assign_op(c, in, n_in, out, n_out, OP_SUB, false);
}

/* ---- optimizers ---- */

/* The slots (var and accumulators, inputs 0..n_slots-1) of an Apply op:
 * their variables and run-start values; checks every other input is a
 * float of var's dtype and the gradient (input g) has var's shape. */
typedef struct Slots {
    IrValue var[3], cur[3];
    IrValue grad;                 /* the gradient input; under --data-parallel its replicas' mean */
} Slots;

static bool slots(TfCtx *c, const IrValue *in, int n_in, int want_in, int n_slots, int g, Slots *s)
{
    if (!want(c, n_in, want_in))
        return false;
    for (int i = 0; i < n_slots; i++) {
        if (!var_of(c, in, i, &s->var[i], &s->cur[i]))
            return false;
        if (i > 0 && (type_of(s->var[i])->dtype != type_of(s->var[0])->dtype ||
                      !ir_shape_eq(&type_of(s->var[i])->shape, &type_of(s->var[0])->shape))) {
            char b1[200], b2[200];
            return tf_errorf(c, "accumulator input %d (variable '%s', %s) does not match var '%s' (%s)", i,
                             s->var[i].node->origin ? s->var[i].node->origin : "?",
                             type_str(type_of(s->var[i]), b1, sizeof b1),
                             s->var[0].node->origin ? s->var[0].node->origin : "?",
                             type_str(type_of(s->var[0]), b2, sizeof b2));
        }
    }
    tcrt_dtype dt = type_of(s->var[0])->dtype;
    if (dt != TCRT_F32 && dt != TCRT_F64)
        return tf_errorf(c, "variable '%s' is %s; optimizer updates need float32 or float64",
                         s->var[0].node->origin ? s->var[0].node->origin : "?", tcrt_dtype_name(dt));
    for (int i = n_slots; i < n_in; i++) {
        if (type_of(in[i])->dtype != dt)
            return tf_errorf(c, "input %d is %s, the variable is %s", i,
                             tcrt_dtype_name(type_of(in[i])->dtype), tcrt_dtype_name(dt));
        if (i != g && ir_shape_count(&type_of(in[i])->shape) != 1) {
            char b[200];
            return tf_errorf(c, "input %d must be a scalar, got %s", i,
                             type_str(type_of(in[i]), b, sizeof b));
        }
    }
    if (!ir_shape_eq(&type_of(in[g])->shape, &type_of(s->var[0])->shape)) {
        char b1[200], b2[200];
        return tf_errorf(c, "gradient (input %d) is %s but variable '%s' is %s", g,
                         type_str(type_of(in[g]), b1, sizeof b1),
                         s->var[0].node->origin ? s->var[0].node->origin : "?",
                         type_str(type_of(s->var[0]), b2, sizeof b2));
    }
    s->grad = in[g];
    if (tf_state_data_parallel(c)) { /* docs/distributed.md: averaged over the replicas first */
        IrParams p;
        memset(&p, 0, sizeof p);
        s->grad = ir_emit1(c->g, OP_ALLREDUCE, &in[g], 1, &p, NULL, c->st);
    }
    return s->grad.node != NULL;
}

/* Scalar inputs are used as rank 0 (a [1] learning rate would broadcast
 * a rank-0 variable up to [1]). */
static IrValue sc(TfCtx *c, IrValue v)
{
    if (!v.node || type_of(v)->shape.rank == 0)
        return v;
    IrShape s0 = {0, {0}};
    return ir_reshape(c->g, v, &s0, c->st);
}

/* Assigns new values nv[0..n) to the slots; out[0] = var's assignment. */
static bool finish(TfCtx *c, const Slots *s, const IrValue *nv, int n, IrValue *out, int *n_out, bool has_out)
{
    IrValue a0 = {NULL, 0};
    for (int i = 0; i < n; i++) {
        IrValue a;
        if (!nv[i].node || !assign(c, s->var[i], nv[i], &a))
            return false;
        if (i == 0)
            a0 = a;
    }
    *n_out = has_out ? 1 : 0;
    if (has_out)
        out[0] = a0;
    return true;
}

/* ApplyGradientDescent(var, alpha, delta): var -= alpha * delta. */
static bool gd(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, bool has_out)
{
    Slots s;
    if (!slots(c, in, n_in, 3, 1, 2, &s))
        return false;
    IrValue nv = bin(c, OP_SUB, s.cur[0], bin(c, OP_MUL, sc(c, in[1]), s.grad));
    return finish(c, &s, &nv, 1, out, n_out, has_out);
}

/* ApplyMomentum(var, accum, lr, grad, momentum):
 *   accum = accum * momentum + grad
 *   var -= lr * accum                                   (use_nesterov false)
 *   var -= grad * lr + accum * momentum * lr            (use_nesterov true) */
static bool momentum(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, bool has_out)
{
    Slots s;
    bool nesterov;
    if (!slots(c, in, n_in, 5, 2, 3, &s) || !tf_attr_bool(c, "use_nesterov", &nesterov))
        return false;
    IrValue lr = sc(c, in[2]), g = s.grad, mom = sc(c, in[4]);
    IrValue acc = bin(c, OP_ADD, bin(c, OP_MUL, s.cur[1], mom), g);
    IrValue step = nesterov
                       ? bin(c, OP_ADD, bin(c, OP_MUL, g, lr), bin(c, OP_MUL, bin(c, OP_MUL, acc, mom), lr))
                       : bin(c, OP_MUL, lr, acc);
    IrValue nv[2] = {bin(c, OP_SUB, s.cur[0], step), acc};
    return finish(c, &s, nv, 2, out, n_out, has_out);
}

/* ResourceApplyKerasMomentum(var, accum, lr, grad, momentum) (TF2's
 * keras SGD with momentum):
 *   accum = accum * momentum - grad * lr
 *   var += accum                                 (use_nesterov false)
 *   var += accum * momentum - grad * lr          (use_nesterov true) */
static bool keras_momentum(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, bool has_out)
{
    Slots s;
    bool nesterov;
    if (!slots(c, in, n_in, 5, 2, 3, &s) || !tf_attr_bool(c, "use_nesterov", &nesterov))
        return false;
    IrValue lr = sc(c, in[2]), g = s.grad, mom = sc(c, in[4]);
    IrValue glr = bin(c, OP_MUL, g, lr);
    IrValue acc = bin(c, OP_SUB, bin(c, OP_MUL, s.cur[1], mom), glr);
    IrValue step = nesterov ? bin(c, OP_SUB, bin(c, OP_MUL, acc, mom), glr) : acc;
    IrValue nv[2] = {bin(c, OP_ADD, s.cur[0], step), acc};
    return finish(c, &s, nv, 2, out, n_out, has_out);
}

/* ApplyAdam(var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
 *   lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
 *   m = m + (g - m) * (1 - beta1)
 *   v = v + (g*g - v) * (1 - beta2)
 *   var -= lr_t * m / (sqrt(v) + epsilon)                        (use_nesterov false)
 *   var -= lr_t * (m * beta1 + (1 - beta1) * g) / (sqrt(v) + epsilon)   (true) */
static bool adam(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, bool has_out)
{
    Slots s;
    bool nesterov;
    if (!slots(c, in, n_in, 10, 3, 9, &s) || !tf_attr_bool(c, "use_nesterov", &nesterov))
        return false;
    IrValue b1p = sc(c, in[3]), b2p = sc(c, in[4]), lr = sc(c, in[5]), b1 = sc(c, in[6]), b2 = sc(c, in[7]),
            eps = sc(c, in[8]), g = s.grad;
    IrValue one = scalar(c, s.var[0], 1.0);
    IrValue lr_t =
        bin(c, OP_DIV, bin(c, OP_MUL, lr, ir_unary(c->g, OP_SQRT, bin(c, OP_SUB, one, b2p), c->st)),
            bin(c, OP_SUB, one, b1p));
    IrValue m =
        bin(c, OP_ADD, s.cur[1], bin(c, OP_MUL, bin(c, OP_SUB, g, s.cur[1]), bin(c, OP_SUB, one, b1)));
    IrValue v = bin(c, OP_ADD, s.cur[2],
                    bin(c, OP_MUL, bin(c, OP_SUB, bin(c, OP_MUL, g, g), s.cur[2]), bin(c, OP_SUB, one, b2)));
    IrValue num =
        nesterov ? bin(c, OP_ADD, bin(c, OP_MUL, m, b1), bin(c, OP_MUL, bin(c, OP_SUB, one, b1), g)) : m;
    IrValue den = bin(c, OP_ADD, ir_unary(c->g, OP_SQRT, v, c->st), eps);
    IrValue nv[3] = {bin(c, OP_SUB, s.cur[0], bin(c, OP_DIV, bin(c, OP_MUL, lr_t, num), den)), m, v};
    return finish(c, &s, nv, 3, out, n_out, has_out);
}

/* ApplyRMSProp(var, ms, mom, lr, rho, momentum, epsilon, grad):
 *   ms = ms + (g*g - ms) * (1 - rho)
 *   mom = mom * momentum + lr * g / sqrt(ms + epsilon)
 *   var -= mom */
static bool rmsprop(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, bool has_out)
{
    Slots s;
    if (!slots(c, in, n_in, 8, 3, 7, &s))
        return false;
    IrValue lr = sc(c, in[3]), rho = sc(c, in[4]), mo = sc(c, in[5]), eps = sc(c, in[6]), g = s.grad;
    IrValue one = scalar(c, s.var[0], 1.0);
    IrValue ms =
        bin(c, OP_ADD, s.cur[1],
            bin(c, OP_MUL, bin(c, OP_SUB, bin(c, OP_MUL, g, g), s.cur[1]), bin(c, OP_SUB, one, rho)));
    IrValue mom =
        bin(c, OP_ADD, bin(c, OP_MUL, s.cur[2], mo),
            bin(c, OP_DIV, bin(c, OP_MUL, lr, g), ir_unary(c->g, OP_SQRT, bin(c, OP_ADD, ms, eps), c->st)));
    IrValue nv[3] = {bin(c, OP_SUB, s.cur[0], mom), ms, mom};
    return finish(c, &s, nv, 3, out, n_out, has_out);
}

/* ApplyAdagrad(var, accum, lr, grad):
 *   accum += g * g          (when update_slots, the default)
 *   var -= lr * g / sqrt(accum) */
static bool adagrad(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, bool has_out)
{
    Slots s;
    bool update;
    if (!slots(c, in, n_in, 4, 2, 3, &s) || !tf_attr_bool(c, "update_slots", &update))
        return false;
    IrValue lr = sc(c, in[2]), g = s.grad;
    IrValue acc = update ? bin(c, OP_ADD, s.cur[1], bin(c, OP_MUL, g, g)) : s.cur[1];
    IrValue nv[2] = {
        bin(c, OP_SUB, s.cur[0], bin(c, OP_DIV, bin(c, OP_MUL, lr, g), ir_unary(c->g, OP_SQRT, acc, c->st))),
        acc};
    return finish(c, &s, nv, update ? 2 : 1, out, n_out, has_out);
}

#define APPLY_ROWS(name, fn)                                                                                 \
    static bool lower_apply_##name(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)          \
    {                                                                                                        \
        return fn(c, in, n_in, out, n_out, true);                                                            \
    }                                                                                                        \
    static bool lower_res_apply_##name(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)      \
    {                                                                                                        \
        return fn(c, in, n_in, out, n_out, false);                                                           \
    }
APPLY_ROWS(gd, gd)
APPLY_ROWS(momentum, momentum)
APPLY_ROWS(adam, adam)
APPLY_ROWS(rmsprop, rmsprop)
APPLY_ROWS(adagrad, adagrad)
#undef APPLY_ROWS
static bool lower_res_apply_keras_momentum(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return keras_momentum(c, in, n_in, out, n_out, false); /* TF has only the resource form */
}

/* ---- random initializers ---- */

/* A [0,1) uniform tensor of type t from stream k of the node's seeds. */
static IrValue uniform(TfCtx *c, const IrType *t, int64_t seed, int64_t seed2, int k)
{
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_RND_SEED] = seed;
    p.i[TCRT_RND_SEED2] = seed2 + (int64_t)k * 0x9E3779B9ll;
    return ir_emit1(c->g, OP_RANDOM_UNIFORM, NULL, 0, &p, t, c->st);
}

/* Box-Muller: sqrt(-2 ln(1 - u1)) * cos(2 pi u2), a standard normal
 * (1 - u1 lies in (0, 1], so the log is finite). */
static IrValue normal(TfCtx *c, const IrType *t, int64_t seed, int64_t seed2, int k)
{
    IrValue u1 = uniform(c, t, seed, seed2, 2 * k), u2 = uniform(c, t, seed, seed2, 2 * k + 1);
    if (!u1.node || !u2.node)
        return (IrValue){NULL, 0};
    IrValue one = scalar(c, u1, 1.0);
    IrValue r = ir_unary(
        c->g, OP_SQRT,
        bin(c, OP_MUL, scalar(c, u1, -2.0), ir_unary(c->g, OP_LOG, bin(c, OP_SUB, one, u1), c->st)), c->st);
    IrValue th = ir_unary(c->g, OP_COS, bin(c, OP_MUL, scalar(c, u2, 2.0 * M_PI), u2), c->st);
    return bin(c, OP_MUL, r, th);
}

static bool random_normal(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out, bool truncated)
{
    int64_t dims[IR_MAX_RANK + 1], seed, seed2;
    int n;
    IrType t = {0};
    if (!want(c, n_in, 1) || !tf_const_ints(c, in[0], "input 0 (shape)", dims, IR_MAX_RANK + 1, &n) ||
        !tf_attr_type(c, "dtype", &t.dtype) || !tf_attr_int(c, "seed", &seed) ||
        !tf_attr_int(c, "seed2", &seed2))
        return false;
    if (n > IR_MAX_RANK)
        return tf_errorf(c, "shape has rank %d, at most %d supported", n, IR_MAX_RANK);
    if (t.dtype != TCRT_F32 && t.dtype != TCRT_F64)
        return tf_errorf(c, "dtype must be float32 or float64, not %s", tcrt_dtype_name(t.dtype));
    for (int i = 0; i < n; i++)
        if (dims[i] < 0)
            return tf_errorf(c, "shape has a negative dimension");
    t.shape = ir_shape_make(n, dims);
    int64_t count;
    if (!ir_shape_count_checked(&t.shape, &count))
        return tf_errorf(c, "shape is too large");
    IrValue z = normal(c, &t, seed, seed2, 0);
    if (truncated && z.node) {
        /* the first of four candidates within [-2, 2]; the last clamped */
        IrValue two = scalar(c, z, 2.0), m_two = scalar(c, z, -2.0);
        IrValue cand[4] = {z, normal(c, &t, seed, seed2, 1), normal(c, &t, seed, seed2, 2),
                           normal(c, &t, seed, seed2, 3)};
        IrValue acc = bin(c, OP_MAX, bin(c, OP_MIN, cand[3], two), m_two);
        for (int k = 2; k >= 0; k--) {
            IrValue ok = bin(c, OP_LE, ir_unary(c->g, OP_ABS, cand[k], c->st), two);
            IrValue sel[3] = {ok, cand[k], acc};
            acc = ok.node ? ir_emit1(c->g, OP_SELECT, sel, 3, NULL, NULL, c->st) : ok;
        }
        z = acc;
    }
    out[0] = z;
    *n_out = 1;
    return z.node != NULL;
}

static bool lower_truncated_normal(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return random_normal(c, in, n_in, out, n_out, true);
}
static bool lower_standard_normal(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    return random_normal(c, in, n_in, out, n_out, false);
}

/* ---- the table ---- */

const TfOpRow tf_ops_state[] = {
    {"VariableV2", lower_variable, "", "variable (initial value: checkpoint or initializer)"},
    {"Variable", lower_variable, "", "variable (initial value: checkpoint or initializer)"},
    {"VarHandleOp", lower_variable, "", "variable (the handle is the variable)"},
    {"ReadVariableOp", lower_read, "", "(none: the variable's value)"},
    {"ResourceGather", lower_resource_gather, "batch_dims=0;validate_indices=true",
     "gather (of the variable)"},
    {"VarIsInitializedOp", lower_is_initialized, "", "const true"},
    {"IsVariableInitialized", lower_is_initialized, "", "const true"},
    {"Assign", lower_assign, "validate_shape=true;use_locking=true", "assign"},
    {"AssignAdd", lower_assign_add, "use_locking=false", "add + assign"},
    {"AssignSub", lower_assign_sub, "use_locking=false", "sub + assign"},
    {"AssignVariableOp", lower_assign_var, "", "assign"},
    {"AssignAddVariableOp", lower_assign_add_var, "", "add + assign"},
    {"AssignSubVariableOp", lower_assign_sub_var, "", "sub + assign"},
    {"ApplyGradientDescent", lower_apply_gd, "use_locking=false", "mul + sub + assign"},
    {"ResourceApplyGradientDescent", lower_res_apply_gd, "use_locking=false", "mul + sub + assign"},
    {"ApplyMomentum", lower_apply_momentum, "use_locking=false;use_nesterov=false",
     "mul + add + sub + assign (var, accum)"},
    {"ResourceApplyMomentum", lower_res_apply_momentum, "use_locking=false;use_nesterov=false",
     "mul + add + sub + assign (var, accum)"},
    {"ResourceApplyKerasMomentum", lower_res_apply_keras_momentum, "use_locking=false;use_nesterov=false",
     "mul + sub + add + assign (var, accum)"},
    {"ApplyAdam", lower_apply_adam, "use_locking=false;use_nesterov=false",
     "elementwise (sqrt, div, ...) + assign (var, m, v)"},
    {"ResourceApplyAdam", lower_res_apply_adam, "use_locking=false;use_nesterov=false",
     "elementwise (sqrt, div, ...) + assign (var, m, v)"},
    {"ApplyRMSProp", lower_apply_rmsprop, "use_locking=false",
     "elementwise (sqrt, div, ...) + assign (var, ms, mom)"},
    {"ResourceApplyRMSProp", lower_res_apply_rmsprop, "use_locking=false",
     "elementwise (sqrt, div, ...) + assign (var, ms, mom)"},
    {"ApplyAdagrad", lower_apply_adagrad, "use_locking=false;update_slots=true",
     "elementwise (sqrt, div, ...) + assign (var, accum)"},
    {"ResourceApplyAdagrad", lower_res_apply_adagrad, "use_locking=false;update_slots=true",
     "elementwise (sqrt, div, ...) + assign (var, accum)"},
    {"TruncatedNormal", lower_truncated_normal, "seed=0;seed2=0",
     "random_uniform + Box-Muller (log, sqrt, cos) + select (not TF's stream)"},
    {"RandomStandardNormal", lower_standard_normal, "seed=0;seed2=0",
     "random_uniform + Box-Muller (log, sqrt, cos) (not TF's stream)"},
    {NULL, NULL, NULL, NULL},
};

bool tf_op_is_variable(const char *op)
{
    return op && (!strcmp(op, "VariableV2") || !strcmp(op, "Variable") || !strcmp(op, "VarHandleOp"));
}

bool tf_op_is_assign(const char *op)
{
    if (!op)
        return false;
    return !strncmp(op, "Assign", 6) || !strncmp(op, "Apply", 5) || !strncmp(op, "ResourceApply", 13);
}
