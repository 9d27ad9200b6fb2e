/* passes/fuse.c - epilogue fusion into contractions (conv2d, matmul).
 * requires: topo order, shapes   preserves: shapes, feeds, fetches   invalidates: memory plan
 *
 * For each f32 CONV2D or MATMUL c whose output v has exactly one consumer
 * node u and is not fetched, absorbs u into c when u is:
 *   add(v, k) / add(k, v) / sub(v, k), k a per-output-channel CONST ([Cout],
 *       [1,..,1,Cout] or one element): k is added to (or subtracted from)
 *       the bias input (created when missing);
 *   mul(v, k) / mul(k, v), k per-channel, c's weights CONST (unpacked): k is
 *       folded into the weights (output channel o scaled by k[o]) and the
 *       bias (BatchNorm lowered as mul + add after a conv);
 *   add(v, r) / add(r, v), r any value of v's type (conv2d only, no residual
 *       yet; depthwise or constant weights, the convolutions whose fast
 *       kernels take a residual once packed): r becomes the 4th input,
 *       y = act(conv + bias + r), with a zero bias created when c has none;
 *   an activation: relu(v) or max(v, 0) -> TCRT_ACT_RELU; min(v, 6) after a
 *       fused relu -> TCRT_ACT_RELU6 (TF Relu6 = min(relu(x), 6), ONNX Clip
 *       [0,6] = min(max(x, 0), 6)); the leaky-relu selects of the frontends,
 *       select(lt(v,0), mul(v,a), v) (ONNX) and select(gt(v,0), v, mul(v,a))
 *       (TF), whose three nodes are v's only consumers -> TCRT_ACT_LEAKY.
 * Also, for every f32 CONV2D c whose input x is pad(z) with constant 0
 * (mode constant, +0.0) on the H and W dims only (NHWC), and whose pads
 * added to c's stay below the kernel's extent (the windows a TF 'SAME'
 * conv has): c reads z with the pads added to its own (Keras
 * ZeroPadding2D + a VALID conv; the pad's copy of the whole tensor goes:
 * the pad dies with its last user).  Same device, no control
 * deps on the pad.
 * The bias and weight rewrites need act NONE (they come before the
 * activation) and no residual for mul.  Every rewrite builds a new
 * contraction node with ir_emit (origin and control deps of c kept; shape
 * rule rechecked), redirects u's uses to it and marks c and u dead; the
 * loop visits the new node too, so chains fuse one step at a time.
 * Constant arithmetic is in double, stored as f32.
 * Invariants: a value consumed elsewhere or fetched is never absorbed (its
 * users would lose it); rewritten constants are new CONST nodes, the old
 * ones stay for their other users (dce drops unused ones).
 */
#include "passes/passes.h"

#include <math.h>
#include <string.h>

/* Distinct live nodes using any output of n; *only gets the user when it is
 * one.  A fetched n counts as many users. */
static int users(const IrGraph *g, const IrNode *n, IrNode **only)
{
    int count = 0;
    *only = NULL;
    for (int i = 0; i < g->n_fetches; i++)
        if (g->fetches[i].value.node == n)
            return 1000;
    for (int k = 0; k < g->n_nodes; k++) {
        IrNode *u = g->nodes[k];
        if (u->dead)
            continue;
        bool used = false;
        for (int i = 0; i < u->n_inputs && !used; i++)
            used = u->inputs[i].node == n;
        for (int i = 0; i < u->n_ctrl && !used; i++)
            used = u->ctrl[i] == n;
        if (used) {
            count++;
            *only = u;
        }
    }
    if (count != 1)
        *only = NULL;
    return count;
}

static bool is_f32_const(IrValue v)
{
    return v.node->op == OP_CONST && v.node->data && ir_value_type(v)->dtype == TCRT_F32;
}

/* k holds one value per output channel (cout) along the last axis, or a
 * single value; rank at most out_rank. */
static bool per_channel(IrValue k, int64_t cout, int out_rank)
{
    if (!is_f32_const(k))
        return false;
    const IrShape *s = &ir_value_type(k)->shape;
    int64_t count = ir_shape_count(s);
    if (s->rank > out_rank)
        return false;
    if (count == 1)
        return true;
    if (count != cout || s->rank < 1 || s->dims[s->rank - 1] != cout)
        return false;
    return true;
}

static double channel_value(IrValue k, int64_t o)
{
    const float *d = k.node->data;
    return ir_shape_count(&ir_value_type(k)->shape) == 1 ? d[0] : d[o];
}

static bool scalar_is(IrValue v, double want)
{
    double x;
    return v.node->op == OP_CONST && ir_shape_count(&ir_value_type(v)->shape) == 1 &&
           ir_const_scalar(v, &x) && x == want;
}

static bool is_value(IrValue a, const IrNode *n)
{
    return a.node == n && a.index == 0;
}

/* Geometry of a contraction. */
typedef struct Contr {
    IrNode *c;
    int64_t cout; /* output channels (last output dim) */
    int act_idx;  /* TCRT_CONV_ACT or TCRT_MM_ACT */
    bool has_bias, has_res;
} Contr;

static bool contraction(IrNode *n, Contr *k)
{
    if ((n->op != OP_CONV2D && n->op != OP_MATMUL) || n->n_outputs != 1 || n->out[0].type.dtype != TCRT_F32)
        return false;
    const IrShape *o = &n->out[0].type.shape;
    if (o->rank < 1)
        return false;
    k->c = n;
    k->cout = o->dims[o->rank - 1];
    k->act_idx = n->op == OP_CONV2D ? TCRT_CONV_ACT : TCRT_MM_ACT;
    k->has_bias = n->n_inputs >= 3;
    k->has_res = n->n_inputs == 4;
    return true;
}

/* Emits a copy of k->c with new inputs/params (origin and control deps
 * kept), redirects the uses of `replaces` to it and kills the old nodes. */
static IrNode *rebuild(IrGraph *g, const Contr *k, const IrValue *in, int n_in, const IrParams *p,
                       IrNode *replaces, Status *st)
{
    IrNode *c = k->c;
    IrOrigin saved = ir_origin_like(g, c);
    IrNode *n = ir_emit(g, c->op, in, n_in, p, NULL, st);
    ir_origin_restore(g, saved);
    if (!n)
        return NULL;
    n->device = c->device;
    n->ctrl = c->ctrl;
    n->n_ctrl = c->n_ctrl;
    ir_replace_uses(g, (IrValue){replaces, 0}, (IrValue){n, 0});
    replaces->dead = true;
    c->dead = true;
    return n;
}

static IrValue new_const(IrGraph *g, const IrNode *like, const IrShape *s, const float *data, Status *st)
{
    IrOrigin saved = ir_origin_like(g, like);
    IrValue v = ir_const(g, TCRT_F32, s, data, st);
    ir_origin_restore(g, saved);
    return v;
}

/* New bias b[o] = old[o] * scale[o] + shift[o] (missing old: 0; missing
 * scale: 1; sign applies to shift). */
static IrValue make_bias(IrGraph *g, PassCtx *cx, const Contr *k, const IrValue *scale, const IrValue *shift,
                         double sign)
{
    IrValue none = {NULL, 0};
    float *b = arena_alloc(&cx->scratch, sizeof(float) * (size_t)k->cout);
    if (!b) {
        st_errorf(cx->st, ST_NOMEM, "fuse: out of memory");
        return none;
    }
    const float *old = k->has_bias ? k->c->inputs[2].node->data : NULL;
    for (int64_t o = 0; o < k->cout; o++) {
        double v = old ? old[o] : 0.0;
        if (scale)
            v *= channel_value(*scale, o);
        if (shift)
            v += sign * channel_value(*shift, o);
        b[o] = (float)v;
    }
    IrShape s = ir_shape_make(1, &k->cout);
    return new_const(g, k->c, &s, b, cx->st);
}

static void copy_inputs(const IrNode *c, IrValue *in)
{
    memcpy(in, c->inputs, sizeof(IrValue) * (size_t)c->n_inputs);
}

/* add/sub of a per-channel constant -> bias. */
static IrNode *fuse_bias(IrGraph *g, PassCtx *cx, const Contr *k, IrNode *u)
{
    IrNode *c = k->c;
    if (c->p.i[k->act_idx] != TCRT_ACT_NONE || (u->op != OP_ADD && u->op != OP_SUB))
        return NULL;
    int vi = is_value(u->inputs[0], c) ? 0 : 1;
    if (!is_value(u->inputs[vi], c) || (u->op == OP_SUB && vi != 0))
        return NULL;
    IrValue kv = u->inputs[1 - vi];
    if (!per_channel(kv, k->cout, c->out[0].type.shape.rank) ||
        !ir_shape_eq(&u->out[0].type.shape, &c->out[0].type.shape))
        return NULL;
    if (k->has_bias && !is_f32_const(c->inputs[2]))
        return NULL;
    IrValue b = make_bias(g, cx, k, NULL, &kv, u->op == OP_SUB ? -1.0 : 1.0);
    if (!b.node)
        return NULL;
    IrValue in[4];
    copy_inputs(c, in);
    in[2] = b;
    return rebuild(g, k, in, k->has_bias ? c->n_inputs : 3, &c->p, u, cx->st);
}

/* mul by a per-channel constant -> weights (and bias). */
static IrNode *fuse_scale(IrGraph *g, PassCtx *cx, const Contr *k, IrNode *u)
{
    IrNode *c = k->c;
    if (u->op != OP_MUL || c->p.i[k->act_idx] != TCRT_ACT_NONE || k->has_res)
        return NULL;
    int vi = is_value(u->inputs[0], c) ? 0 : 1;
    IrValue kv = u->inputs[1 - vi], w = c->inputs[1];
    if (!is_value(u->inputs[vi], c) || !per_channel(kv, k->cout, c->out[0].type.shape.rank) ||
        !ir_shape_eq(&u->out[0].type.shape, &c->out[0].type.shape) || !is_f32_const(w))
        return NULL;
    if (k->has_bias && !is_f32_const(c->inputs[2]))
        return NULL;
    const IrShape *ws = &ir_value_type(w)->shape;
    int64_t count = ir_shape_count(ws), inner = 1; /* o = (i / inner) % cout */
    if (c->op == OP_CONV2D) {
        if (c->p.i[TCRT_CONV_PACKED] || ws->rank != 4)
            return NULL;
    } else {
        if (ws->rank != 2)
            return NULL;
        if (c->p.i[TCRT_MM_TB])
            inner = ws->dims[1];
    }
    if (count % k->cout != 0)
        return NULL;
    float *wd = arena_alloc_align(&cx->scratch, sizeof(float) * (size_t)count, 64);
    if (!wd) {
        st_errorf(cx->st, ST_NOMEM, "fuse: out of memory");
        return NULL;
    }
    const float *src = w.node->data;
    for (int64_t i = 0; i < count; i++)
        wd[i] = (float)((double)src[i] * channel_value(kv, (i / inner) % k->cout));
    IrValue nw = new_const(g, w.node, ws, wd, cx->st);
    if (!nw.node)
        return NULL;
    IrValue in[4];
    copy_inputs(c, in);
    in[1] = nw;
    if (k->has_bias) {
        IrValue b = make_bias(g, cx, k, &kv, NULL, 1.0);
        if (!b.node)
            return NULL;
        in[2] = b;
    }
    return rebuild(g, k, in, c->n_inputs, &c->p, u, cx->st);
}

/* add(v, r) with r of v's type -> residual input (conv2d). */
static IrNode *fuse_residual(IrGraph *g, PassCtx *cx, const Contr *k, IrNode *u)
{
    IrNode *c = k->c;
    if (c->op != OP_CONV2D || u->op != OP_ADD || k->has_res || c->p.i[TCRT_CONV_ACT] != TCRT_ACT_NONE)
        return NULL;
    int vi = is_value(u->inputs[0], c) ? 0 : 1;
    IrValue r = u->inputs[1 - vi];
    const IrType *rt = ir_value_type(r), *vt = &c->out[0].type;
    if (!is_value(u->inputs[vi], c) || r.node == c || rt->dtype != vt->dtype ||
        !ir_shape_eq(&rt->shape, &vt->shape))
        return NULL;
    /* only where a fast kernel takes the residual: depthwise, or weights the
     * pack pass packs (a residual on plain HWIO weights runs the reference) */
    if (!c->p.i[TCRT_CONV_DEPTHWISE] && !c->p.i[TCRT_CONV_PACKED] && !is_f32_const(c->inputs[1]))
        return NULL;
    IrValue in[4];
    copy_inputs(c, in);
    if (!k->has_bias) {
        in[2] = make_bias(g, cx, k, NULL, NULL, 1.0);
        if (!in[2].node)
            return NULL;
    }
    in[3] = r;
    return rebuild(g, k, in, 4, &c->p, u, cx->st);
}

/* relu, max(v, 0), min(v, 6) after relu. */
static IrNode *fuse_act(IrGraph *g, PassCtx *cx, const Contr *k, IrNode *u)
{
    IrNode *c = k->c;
    int64_t act = c->p.i[k->act_idx], want;
    if (u->op == OP_RELU && act == TCRT_ACT_NONE) {
        want = TCRT_ACT_RELU;
    } else if ((u->op == OP_MAX || u->op == OP_MIN) && u->n_inputs == 2) {
        int vi = is_value(u->inputs[0], c) ? 0 : 1;
        IrValue other = u->inputs[1 - vi];
        if (!is_value(u->inputs[vi], c) || !ir_shape_eq(&u->out[0].type.shape, &c->out[0].type.shape))
            return NULL;
        if (u->op == OP_MAX && act == TCRT_ACT_NONE && scalar_is(other, 0))
            want = TCRT_ACT_RELU;
        else if (u->op == OP_MIN && act == TCRT_ACT_RELU && scalar_is(other, 6))
            want = TCRT_ACT_RELU6;
        else
            return NULL;
    } else {
        return NULL;
    }
    IrParams p = c->p;
    p.i[k->act_idx] = want;
    return rebuild(g, k, c->inputs, c->n_inputs, &p, u, cx->st);
}

/* The leaky-relu selects; v's users are exactly cmp, mul and sel. */
static IrNode *fuse_leaky(IrGraph *g, PassCtx *cx, const Contr *k)
{
    IrNode *c = k->c;
    if (c->p.i[k->act_idx] != TCRT_ACT_NONE)
        return NULL;
    IrNode *sel = NULL, *cmp = NULL, *mul = NULL;
    int n = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        IrNode *u = g->nodes[i];
        if (u->dead)
            continue;
        bool used = false;
        for (int j = 0; j < u->n_inputs; j++)
            used |= u->inputs[j].node == c;
        for (int j = 0; j < u->n_ctrl; j++)
            used |= u->ctrl[j] == c;
        if (!used)
            continue;
        if (++n > 3)
            return NULL;
        if (u->op == OP_SELECT)
            sel = u;
        else if (u->op == OP_LT || u->op == OP_GT)
            cmp = u;
        else if (u->op == OP_MUL)
            mul = u;
    }
    if (n != 3 || !sel || !cmp || !mul)
        return NULL;
    IrNode *only;
    if (users(g, cmp, &only) != 1 || only != sel || users(g, mul, &only) != 1 || only != sel)
        return NULL;
    int vi = is_value(mul->inputs[0], c) ? 0 : 1;
    double alpha;
    IrValue av = mul->inputs[1 - vi];
    if (!is_value(mul->inputs[vi], c) || av.node->op != OP_CONST ||
        ir_shape_count(&ir_value_type(av)->shape) != 1 || !ir_const_scalar(av, &alpha) ||
        !is_value(cmp->inputs[0], c) || !scalar_is(cmp->inputs[1], 0) ||
        !ir_shape_eq(&sel->out[0].type.shape, &c->out[0].type.shape) || sel->inputs[0].node != cmp)
        return NULL;
    IrValue a = sel->inputs[1], b = sel->inputs[2];
    bool onnx = cmp->op == OP_LT && a.node == mul && is_value(b, c); /* v < 0 ? a*v : v */
    bool tf = cmp->op == OP_GT && is_value(a, c) && b.node == mul;   /* v > 0 ? v : a*v */
    if (!onnx && !tf)
        return NULL;
    IrParams p = c->p;
    p.i[k->act_idx] = TCRT_ACT_LEAKY;
    p.f[0] = alpha;
    IrNode *r = rebuild(g, k, c->inputs, c->n_inputs, &p, sel, cx->st);
    if (r) {
        cmp->dead = true;
        mul->dead = true;
    }
    return r;
}

/* conv2d(pad(z), w, ...) with a zero spatial pad -> conv2d(z, w, ...) with
 * the pad's amounts added to the conv's (see the file comment). */
static IrNode *fuse_pad(IrGraph *g, PassCtx *cx, IrNode *c)
{
    if (c->op != OP_CONV2D || c->n_outputs != 1 || c->n_inputs < 2 || c->out[0].type.dtype != TCRT_F32)
        return NULL;
    IrNode *pd = c->inputs[0].node;
    if (!pd || pd->dead || pd->op != OP_PAD || c->inputs[0].index != 0 || pd->n_ctrl || pd->device != c->device ||
        pd->n_inputs != 1)
        return NULL;
    const IrType *zt = ir_value_type(pd->inputs[0]), *wt = ir_value_type(c->inputs[1]);
    if (zt->dtype != TCRT_F32 || zt->shape.rank != 4 || pd->out[0].type.shape.rank != 4)
        return NULL;
    if (pd->p.i[TCRT_PAD_MODE] != 0 || pd->p.f[0] != 0.0 || signbit(pd->p.f[0]))
        return NULL;
    if (pd->p.i[0] || pd->p.i[1] || pd->p.i[6] || pd->p.i[7])
        return NULL; /* batch or channels padded */
    /* kernel extent from the weights: HWIO / depthwise [KH,KW,C,M], or packed [B,KH,KW,Cin,16] */
    int kd = wt->shape.rank == 5 ? 1 : 0;
    if (wt->shape.rank < 4)
        return NULL;
    int64_t ext_h = (wt->shape.dims[kd] - 1) * c->p.i[TCRT_CONV_DH] + 1;
    int64_t ext_w = (wt->shape.dims[kd + 1] - 1) * c->p.i[TCRT_CONV_DW] + 1;
    IrParams p = c->p;
    p.i[TCRT_CONV_PT] += pd->p.i[2], p.i[TCRT_CONV_PB] += pd->p.i[3];
    p.i[TCRT_CONV_PL] += pd->p.i[4], p.i[TCRT_CONV_PR] += pd->p.i[5];
    if (p.i[TCRT_CONV_PT] >= ext_h || p.i[TCRT_CONV_PB] >= ext_h || p.i[TCRT_CONV_PL] >= ext_w ||
        p.i[TCRT_CONV_PR] >= ext_w)
        return NULL;
    Contr k;
    if (!contraction(c, &k))
        return NULL;
    IrNode *only;
    bool last_user = users(g, pd, &only) == 1 && only == c;
    IrValue in[4];
    copy_inputs(c, in);
    in[0] = pd->inputs[0];
    IrNode *r = rebuild(g, &k, in, c->n_inputs, &p, c, cx->st);
    if (r && last_user)
        pd->dead = true; /* no dce after this pass */
    return r;
}

static IrNode *fuse_one(IrGraph *g, PassCtx *cx, IrNode *n)
{
    Contr k;
    if (!contraction(n, &k))
        return NULL;
    IrNode *u;
    int n_users = users(g, n, &u);
    if (n_users == 3)
        return fuse_leaky(g, cx, &k);
    if (n_users != 1 || !u || u->n_ctrl || u->n_outputs != 1)
        return NULL;
    for (int i = 0; i < u->n_inputs; i++) /* used once: not add(v, v) */
        for (int j = i + 1; j < u->n_inputs; j++)
            if (u->inputs[i].node == n && u->inputs[j].node == n)
                return NULL;
    IrNode *r;
    if ((r = fuse_bias(g, cx, &k, u)) || !st_ok(cx->st))
        return r;
    if ((r = fuse_scale(g, cx, &k, u)) || !st_ok(cx->st))
        return r;
    if ((r = fuse_act(g, cx, &k, u)) || !st_ok(cx->st))
        return r;
    return fuse_residual(g, cx, &k, u);
}

PassResult pass_fuse(IrGraph *g, PassCtx *cx)
{
    bool changed = false, fold = g->fold_on_build;
    g->fold_on_build = false;
    /* g->n_nodes grows as rebuilt nodes are appended: they are visited too. */
    for (int i = 0; i < g->n_nodes && st_ok(cx->st); i++) {
        IrNode *n = g->nodes[i];
        if (!n->dead && (fuse_pad(g, cx, n) || fuse_one(g, cx, n)))
            changed = true;
    }
    return pass_finish_rewrite(g, cx, fold, changed);
}
