/* passes/state.c - variables: checks, freezing, snapshots of fetched reads.
 * requires: topo order, shapes   preserves: node order of live nodes   invalidates: memory plan
 *
 * Semantics (ir/ops.def "state"): a read of a variable is a use of its
 * VARIABLE node and sees the value at the start of the run; an ASSIGN's
 * output is the next value, committed into the state after the run.
 * This pass
 *   - rejects VARIABLE and ASSIGN inside a region (a loop body or branch:
 *     the state is the top-level arena's), naming the node;
 *   - rejects two live ASSIGNs to one variable, naming both (which would
 *     win is not defined by the graph);
 *   - freezes a variable no live ASSIGN writes: its uses read its initial
 *     value, the CONST input, so fold, layout and pack treat it as any
 *     weight (inference from a SavedModel with variables);
 *   - drops gradient stops (a COPY with p.i[0] = 1 from TF StopGradient:
 *     gradients are built before the pipeline), so they cost nothing;
 *   - gives a fetch of an assigned variable's read its own COPY, so the
 *     fetched value is the run-start value even though the state buffer
 *     is overwritten by the commit after the run.
 * Invariants: afterwards every live VARIABLE has exactly one live ASSIGN.
 */
#include "passes/passes.h"

#include <string.h>

static bool no_state_in(const IrGraph *g, Status *st)
{
    IR_FOR_EACH(g, n) {
        if (g->parent && (n->op == OP_VARIABLE || n->op == OP_ASSIGN))
            return st_errorf(st, ST_UNSUPPORTED,
                             "node '%s' (%s): a variable %s inside a loop body or cond branch is not supported "
                             "(variables are read and assigned at the top level of the graph)",
                             n->origin ? n->origin : "?", n->origin_op ? n->origin_op : ir_op_name(n->op),
                             n->op == OP_VARIABLE ? "read" : "assignment");
        for (int k = 0; k < n->n_regions; k++)
            if (!no_state_in(n->regions[k], st))
                return false;
    }
    return true;
}

PassResult pass_state(IrGraph *g, PassCtx *cx)
{
    if (g->parent)
        return PASS_SAME; /* regions are checked from the root */
    if (!no_state_in(g, cx->st))
        return PASS_FAILED;
    int n_ids = g->next_id;
    IrNode **writer = arena_alloc(&cx->scratch, sizeof(IrNode *) * ((size_t)n_ids + 1));
    if (!writer) {
        st_errorf(cx->st, ST_NOMEM, "state: out of memory");
        return PASS_FAILED;
    }
    bool any = false;
    IR_FOR_EACH(g, n) {
        if (n->op != OP_ASSIGN)
            continue;
        IrNode *v = n->inputs[0].node;
        if (v->id < 0 || v->id >= n_ids)
            continue;
        if (writer[v->id]) {
            st_errorf(cx->st, ST_UNSUPPORTED,
                      "variable '%s' is assigned twice in one run, by '%s' (%s) and '%s' (%s); tfcc needs at "
                      "most one assignment per variable per step",
                      v->origin ? v->origin : "?", writer[v->id]->origin ? writer[v->id]->origin : "?",
                      writer[v->id]->origin_op ? writer[v->id]->origin_op : "assign", n->origin ? n->origin : "?",
                      n->origin_op ? n->origin_op : "assign");
            return PASS_FAILED;
        }
        writer[v->id] = n;
    }
    IR_FOR_EACH(g, n) {
        if (n->op == OP_COPY && n->p.i[0] == 1 &&
            ir_shape_eq(&n->out[0].type.shape, &ir_value_type(n->inputs[0])->shape)) {
            ir_replace_uses(g, (IrValue){n, 0}, n->inputs[0]);
            n->dead = true;
            any = true;
        }
    }
    IR_FOR_EACH(g, n) {
        if (n->op != OP_VARIABLE || n->id < 0 || n->id >= n_ids)
            continue;
        IrValue v = {n, 0};
        if (!writer[n->id]) {
            ir_replace_uses(g, v, n->inputs[0]);
            n->dead = true;
            any = true;
            continue;
        }
        for (int i = 0; i < g->n_fetches; i++) {
            if (g->fetches[i].value.node != n)
                continue;
            IrValue c = ir_emit1(g, OP_COPY, &v, 1, NULL, ir_value_type(v), cx->st);
            if (!c.node)
                return PASS_FAILED;
            c.node->origin = n->origin;
            c.node->origin_op = n->origin_op;
            g->fetches[i].value = c;
            any = true;
        }
    }
    if (any)
        ir_graph_compact(g);
    return any ? PASS_CHANGED : PASS_SAME;
}
