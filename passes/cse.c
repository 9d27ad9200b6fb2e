/* passes/cse.c - common-subexpression elimination.
 * requires: topo order, shapes   preserves: shapes, node order, feeds   invalidates: memory plan
 *
 * Walks the nodes in order and hashes each on (op, params, input values,
 * control deps, device, output types, and for CONST the data bytes).  Inputs
 * of F_COMMUT ops are hashed and compared in a canonical order (sorted by
 * producer id, then output index), so add(a,b) and add(b,a) merge.  When a
 * node equals an earlier one, every use of its outputs (nodes, fetches,
 * control edges) is redirected to the earlier node and it is marked dead.
 * Since uses are redirected as the walk goes, later nodes compare equal on
 * the merged inputs, so whole duplicate chains merge in one pass.
 * F_EFFECT nodes (ARG, random) are never merged.
 * Invariants: the kept node is always the earlier one, so the order stays
 * topological; nothing from the scratch arena stays reachable.
 */
#include "passes/passes.h"

#include <string.h>

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, b + i, 8);
        h = mix(h, v);
    }
    uint64_t tail = 0;
    for (; i < n; i++)
        tail = (tail << 8) | b[i];
    return mix(h, tail ^ n);
}

/* Input k of n in canonical order (swapped for commutative binary ops). */
static IrValue canon_input(const IrNode *n, int k)
{
    if (n->n_inputs == 2 && (ir_op_info(n->op)->flags & F_COMMUT)) {
        IrValue a = n->inputs[0], b = n->inputs[1];
        bool swap = a.node->id > b.node->id || (a.node->id == b.node->id && a.index > b.index);
        if (swap)
            return n->inputs[1 - k];
    }
    return n->inputs[k];
}

static uint64_t hash_type(uint64_t h, const IrType *t)
{
    h = mix(h, (uint64_t)t->dtype);
    h = mix(h, (uint64_t)t->shape.rank);
    for (int d = 0; d < t->shape.rank; d++)
        h = mix(h, (uint64_t)t->shape.dims[d]);
    return h;
}

static uint64_t hash_node(const IrNode *n)
{
    uint64_t h = mix(0x243f6a8885a308d3ull, (uint64_t)n->op);
    h = hash_bytes(h, &n->p, sizeof n->p);
    h = mix(h, (uint64_t)n->n_inputs);
    for (int k = 0; k < n->n_inputs; k++) {
        IrValue v = canon_input(n, k);
        h = mix(h, (uint64_t)v.node->id);
        h = mix(h, (uint64_t)v.index);
    }
    h = mix(h, (uint64_t)n->n_outputs);
    for (int k = 0; k < n->n_outputs; k++)
        h = hash_type(h, &n->out[k].type);
    if (n->op == OP_CONST && n->data)
        h = hash_bytes(h, n->data, n->data_bytes);
    return h;
}

static bool same_type(const IrType *a, const IrType *b)
{
    return a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape);
}

static bool same_node(const IrNode *a, const IrNode *b)
{
    if (a->op != b->op || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs ||
        a->n_ctrl != b->n_ctrl)
        return false;
    if (memcmp(a->p.i, b->p.i, sizeof a->p.i) != 0 || memcmp(a->p.f, b->p.f, sizeof a->p.f) != 0)
        return false;
    for (int k = 0; k < a->n_inputs; k++) {
        IrValue x = canon_input(a, k), y = canon_input(b, k);
        if (x.node != y.node || x.index != y.index)
            return false;
    }
    for (int k = 0; k < a->n_ctrl; k++)
        if (a->ctrl[k] != b->ctrl[k])
            return false;
    for (int k = 0; k < a->n_outputs; k++)
        if (!same_type(&a->out[k].type, &b->out[k].type))
            return false;
    if ((a->device == NULL) != (b->device == NULL) ||
        (a->device && strcmp(a->device, b->device) != 0))
        return false;
    if (a->op == OP_CONST || a->op == OP_SYMVAL) {
        if (a->data_bytes != b->data_bytes)
            return false;
        if (a->data_bytes && (!a->data || !b->data || memcmp(a->data, b->data, a->data_bytes) != 0))
            return false;
    }
    return true;
}

static bool can_merge(const IrNode *n)
{
    const OpInfo *oi = ir_op_info(n->op);
    if (!oi || n->op == OP_ARG || (oi->flags & F_EFFECT))
        return false;
    for (int k = 0; k < n->n_inputs; k++)
        if (!n->inputs[k].node)
            return false;
    return true;
}

PassResult pass_cse(IrGraph *g, PassCtx *cx)
{
    size_t cap = 16;
    while (cap < (size_t)g->n_nodes * 2)
        cap *= 2;
    int n_ids = g->next_id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->id >= n_ids)
            n_ids = g->nodes[i]->id + 1;
    IrNode **table = arena_alloc(&cx->scratch, cap * sizeof *table);
    uint64_t *hashes = arena_alloc(&cx->scratch, cap * sizeof *hashes);
    IrNode **repl = arena_alloc(&cx->scratch, ((size_t)n_ids + 1) * sizeof *repl); /* by id */
    if (!table || !hashes || !repl) {
        st_errorf(cx->st, ST_NOMEM, "cse: out of memory");
        return PASS_FAILED;
    }
    bool changed = false;
    for (int i = 0; i < g->n_nodes; i++) {
        IrNode *n = g->nodes[i];
        if (!n || n->dead)
            continue;
        /* Control edges on merged duplicates move to the kept node. */
        for (int k = 0; k < n->n_ctrl; k++) {
            IrNode *c = n->ctrl[k];
            if (c && c->id >= 0 && c->id < n_ids && repl[c->id]) {
                n->ctrl[k] = repl[c->id];
                changed = true;
            }
        }
        if (!can_merge(n))
            continue;
        uint64_t h = hash_node(n);
        size_t slot = (size_t)h & (cap - 1);
        IrNode *prev = NULL;
        while (table[slot]) {
            if (hashes[slot] == h && same_node(table[slot], n)) {
                prev = table[slot];
                break;
            }
            slot = (slot + 1) & (cap - 1);
        }
        if (!prev) {
            table[slot] = n;
            hashes[slot] = h;
            continue;
        }
        for (int k = 0; k < n->n_outputs; k++)
            ir_replace_uses(g, (IrValue){n, k}, (IrValue){prev, k});
        if (n->id >= 0 && n->id < n_ids)
            repl[n->id] = prev;
        n->dead = true;
        changed = true;
    }
    return changed ? PASS_CHANGED : PASS_SAME;
}
