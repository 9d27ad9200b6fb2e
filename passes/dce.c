/* passes/dce.c - dead-node elimination.
 * requires: topo order   preserves: shapes, node order, feeds   invalidates: memory plan
 *
 * Marks live everything the fetches depend on, following data inputs and
 * control dependencies backwards (an explicit stack, no recursion), plus
 * every feed's ARG node (feeds are the artifact's API even when unused)
 * and every ASSIGN (a variable's update is an effect of the run).
 * Every other node is marked dead and ir_graph_compact drops them.
 * Region ops (WHILE, COND) are live when any output is used and then keep
 * all their operands (a loop variable feeds the next iteration even when
 * its final value is unused).  In a region graph (the pass manager runs dce
 * on every graph of the tree) the roots are the region's results and its
 * parameters, which stay: they are the region's signature.
 * Invariants: a live node's inputs and control deps are live.
 */
#include "passes/passes.h"

PassResult pass_dce(IrGraph *g, PassCtx *cx)
{
    int n_ids = g->next_id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->id >= n_ids)
            n_ids = g->nodes[i]->id + 1;
    bool *is_live = arena_alloc(&cx->scratch, (size_t)n_ids + 1);
    IrNode **stack = arena_alloc(&cx->scratch, sizeof(IrNode *) * ((size_t)g->n_nodes + 1));
    if (!is_live || !stack) {
        st_errorf(cx->st, ST_NOMEM, "dce: out of memory");
        return PASS_FAILED;
    }
    int sp = 0;
#define PUSH(node)                                                                                 \
    do {                                                                                           \
        IrNode *p_ = (node);                                                                       \
        if (p_ && !p_->dead && p_->id >= 0 && p_->id < n_ids && !is_live[p_->id] &&              \
            sp < g->n_nodes) {                                                                     \
            is_live[p_->id] = true;                                                                \
            stack[sp++] = p_;                                                                      \
        }                                                                                          \
    } while (0)
    for (int i = 0; i < g->n_fetches; i++)
        PUSH(g->fetches[i].value.node);
    for (int i = 0; i < g->n_feeds; i++)
        PUSH(g->feeds[i].arg);
    IR_FOR_EACH(g, n) {
        if (n->op == OP_ASSIGN)
            PUSH(n); /* state updates are the point of a training step */
    }
    while (sp > 0) {
        IrNode *n = stack[--sp];
        for (int k = 0; k < n->n_inputs; k++)
            PUSH(n->inputs[k].node);
        for (int k = 0; k < n->n_ctrl; k++)
            PUSH(n->ctrl[k]);
    }
#undef PUSH
    bool changed = false;
    IR_FOR_EACH(g, n) {
        if (n->id < 0 || n->id >= n_ids || !is_live[n->id]) {
            n->dead = true;
            changed = true;
        }
    }
    /* Sweep dead nodes left by earlier passes too. */
    for (int i = 0; i < g->n_nodes && !changed; i++)
        if (!g->nodes[i] || g->nodes[i]->dead)
            changed = true;
    if (changed)
        ir_graph_compact(g);
    return changed ? PASS_CHANGED : PASS_SAME;
}
