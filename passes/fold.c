/* passes/fold.c - constant folding.
 * requires: topo order, shapes   preserves: shapes, feeds   invalidates: memory plan, node order
 *
 * Walks the nodes in order; a node whose inputs are all CONST (no F_EFFECT,
 * not a leaf, results at most IR_MAX_FOLD_BYTES) is evaluated by
 * ir_fold_node through the runtime's reference kernels, and every use of its
 * outputs (nodes and fetches) is redirected to the new CONST nodes.  Because
 * the walk is in topological order, chains of constant ops fold in one pass.
 * A node that the kernels reject (an out-of-range gather index, say) is left
 * alone: the same kernel reports it at run time.  Folded nodes no control
 * edge points at are marked dead (DCE sweeps the rest).
 * ir_fold_node appends its CONST nodes at the end of g->nodes, after their
 * users; the pass ends with a stable topological re-sort (depth-first,
 * inputs and control deps first, otherwise keeping the old order).
 * Region ops (WHILE, COND) are F_EFFECT and never evaluated, except a COND
 * whose selector is a constant: it is replaced by its chosen branch, copied
 * into g by ir_inline_region with the branch's parameters bound to the
 * COND's data operands (bool true -> branch 0, false -> branch 1; int32 i
 * -> branch i, out of range -> the last, as TensorFlow's Case).  The walk
 * reaches the copied nodes too, so a branch that becomes constant folds in
 * the same pass.  The pass manager runs fold inside regions before their
 * parent.
 * Invariants: g->nodes is a topological order again when the pass returns.
 */
#include "passes/passes.h"

#include <string.h>

static bool is_foldable(const IrNode *n)
{
    const OpInfo *oi = ir_op_info(n->op);
    if (!oi || oi->kind == K_LEAF || (oi->flags & F_EFFECT) || n->op == OP_SYMVAL || ir_node_has_dyn(n))
        return false;   /* run-time sizes (ir/dyn.c) are not known here */
    size_t bytes = 0;
    for (int k = 0; k < n->n_outputs; k++) {
        size_t b = ir_type_bytes(&n->out[k].type);
        if (b > IR_MAX_FOLD_BYTES - bytes)
            return false;
        bytes += b;
    }
    for (int k = 0; k < n->n_inputs; k++)
        if (!n->inputs[k].node || !ir_is_const(n->inputs[k]))
            return false;
    return true;
}

/* Stable topological re-sort of g->nodes (dead nodes included, NULL slots
 * dropped).  Iterative depth-first search in array order. */
static bool resort(IrGraph *g, PassCtx *cx)
{
    int n_ids = g->next_id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->id >= n_ids)
            n_ids = g->nodes[i]->id + 1;
    unsigned char *state = arena_alloc(&cx->scratch, (size_t)n_ids + 1); /* 0 absent, 1 todo, 2 open, 3 done */
    IrNode **order = arena_alloc(&cx->scratch, sizeof(IrNode *) * ((size_t)g->n_nodes + 1));
    IrNode **stack = arena_alloc(&cx->scratch, sizeof(IrNode *) * ((size_t)g->n_nodes + 1));
    int *next = arena_alloc(&cx->scratch, sizeof(int) * ((size_t)g->n_nodes + 1));
    if (!state || !order || !stack || !next)
        return st_errorf(cx->st, ST_NOMEM, "constant folding: out of memory");
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->id >= 0)
            state[g->nodes[i]->id] = 1;
    int n_order = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        IrNode *root = g->nodes[i];
        if (!root || root->id < 0 || state[root->id] != 1)
            continue;
        int sp = 0;
        stack[sp] = root;
        next[sp++] = 0;
        state[root->id] = 2;
        while (sp > 0) {
            IrNode *n = stack[sp - 1];
            int k = next[sp - 1]++;
            if (k < n->n_inputs + n->n_ctrl) {
                IrNode *d = k < n->n_inputs ? n->inputs[k].node : n->ctrl[k - n->n_inputs];
                if (d && d->id >= 0 && d->id < n_ids && state[d->id] == 1) {
                    state[d->id] = 2;
                    stack[sp] = d;
                    next[sp++] = 0;
                }
                continue;
            }
            state[n->id] = 3;
            order[n_order++] = n;
            sp--;
        }
    }
    memcpy(g->nodes, order, sizeof(IrNode *) * (size_t)n_order);
    g->n_nodes = n_order;
    return true;
}

/* The branch a COND with a constant selector runs, or -1 when the selector
 * is not constant. */
static int chosen_branch(const IrNode *n)
{
    if (n->op != OP_COND || n->n_inputs < 1 || !n->inputs[0].node || !ir_is_const(n->inputs[0]))
        return -1;
    double sel;
    if (!ir_const_scalar(n->inputs[0], &sel))
        return -1;
    if (ir_value_type(n->inputs[0])->dtype == TCRT_BOOL)
        return sel != 0 ? 0 : 1;
    if (sel < 0 || sel >= n->n_regions)
        return n->n_regions - 1;
    return (int)sel;
}

/* Replaces COND n (branch k chosen) by a copy of branch k's nodes. */
static bool inline_cond(IrGraph *g, IrNode *n, int k, PassCtx *cx)
{
    Status *st = cx->st;
    const IrGraph *r = n->regions[k];
    if (r->n_fetches != n->n_outputs)
        return st_errorf(st, ST_ERROR, "node '%s' (cond): branch %d has %d results for %d outputs",
                         n->origin ? n->origin : "?", k, r->n_fetches, n->n_outputs);
    IrValue *res = arena_alloc(&cx->scratch, sizeof(IrValue) * ((size_t)n->n_outputs + 1));
    if (!res)
        return st_errorf(st, ST_NOMEM, "constant folding: out of memory");
    if (!ir_inline_region(g, r, n->inputs + 1, res, st))
        return false;
    for (int i = 0; i < n->n_outputs; i++)
        ir_replace_uses(g, (IrValue){n, i}, res[i]);
    return true;
}

PassResult pass_fold(IrGraph *g, PassCtx *cx)
{
    int n_ids = g->next_id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->id >= n_ids)
            n_ids = g->nodes[i]->id + 1;
    /* Nodes some control edge points at stay alive for DCE to judge. */
    bool *is_ctrl_target = arena_alloc(&cx->scratch, (size_t)n_ids + 1);
    if (!is_ctrl_target) {
        st_errorf(cx->st, ST_NOMEM, "constant folding: out of memory");
        return PASS_FAILED;
    }
    IR_FOR_EACH(g, n) {
        for (int k = 0; k < n->n_ctrl; k++)
            if (n->ctrl[k] && n->ctrl[k]->id >= 0 && n->ctrl[k]->id < n_ids)
                is_ctrl_target[n->ctrl[k]->id] = true;
    }

    bool changed = false;
    /* g->n_nodes is re-read: folding and inlining append nodes (inlined
     * ones may fold in turn; the CONSTs folding appends are leaves). */
    for (int i = 0; i < g->n_nodes; i++) {
        IrNode *n = g->nodes[i]; /* re-read: folding may grow g->nodes */
        if (!n || n->dead)
            continue;
        int branch = chosen_branch(n);
        if (branch >= 0) {
            if (!inline_cond(g, n, branch, cx))
                return PASS_FAILED;
            if (n->id < 0 || n->id >= n_ids || !is_ctrl_target[n->id])
                n->dead = true;
            changed = true;
            continue;
        }
        if (!is_foldable(n))
            continue;
        IrValue outv[8];
        if (n->n_outputs > 8)
            continue;
        Status fst = ST_INIT;
        if (!ir_fold_node(g, n, outv, &fst)) {
            if (fst.code == ST_NOMEM) {
                st_errorf(cx->st, ST_NOMEM, "%s", fst.msg);
                return PASS_FAILED;
            }
            continue; /* not foldable or rejected by the kernel: left to run time */
        }
        for (int k = 0; k < n->n_outputs; k++)
            ir_replace_uses(g, (IrValue){n, k}, outv[k]);
        if (n->id < 0 || n->id >= n_ids || !is_ctrl_target[n->id])
            n->dead = true;
        changed = true;
    }
    if (!changed)
        return PASS_SAME;
    if (!resort(g, cx))
        return PASS_FAILED;
    return PASS_CHANGED;
}
