/* passes/memplan.c - scheduling and static memory planning.
 * requires: topo order, shapes, no dead nodes   preserves: shapes   invalidates: nothing
 *
 * The schedule is the node order.  A buffer is every output of every live
 * non-CONST node, plus a workspace for each f32 CONV2D and MATMUL (sized
 * by tcrt_fast_{conv2d,matmul}_workspace, live only during the node).
 * ARG outputs, fetched values, VARIABLE outputs (the state) and ASSIGN
 * outputs (committed after the run) are pinned: live for the whole run.  Other
 * buffers live from their producer's position to their last consumer's
 * (inclusive, so a node's inputs and outputs never share memory).
 * A RECV between tasks (p.i[2], passes/partition.c) lives from its SEND's
 * position: the receiving process posts the receive there.
 * Placement (greedy by size, TFLite-style): buffers sorted by size
 * (largest first; ties by start, then node order), each placed at the
 * 64-byte aligned offset of the smallest gap between already-placed buffers
 * whose lifetimes overlap its own (best fit), or after the last of them.
 * Correctness by construction: a buffer never overlaps in memory any placed
 * buffer whose lifetime overlaps its own.
 * Scratch: the workspaces of the kernels with per-thread slots (Winograd
 * and fused depthwise CONV2Ds, has_slots) are one buffer, live for the
 * whole run and as large as the largest of them (each such node's
 * workspace_bytes is set to that size), which no other buffer overlaps.
 * The kernels place their slots in it with tcrt_ws_slot_stride, so a
 * thread finds its slot where it left it, in its own cache: when a
 * workspace shared memory with the activations, a slot's lines had last
 * been written by the other core as often as not, and each one cost a
 * transfer between the cores (measured on a 2-vCPU EPYC, interleaved runs
 * at 2 threads: ResNet-50 -2 to -4%, ResNet-18 -1 to -4%, MobileNetV2 -4
 * to -7%; the arena grew 4% for ResNet-50).  Other workspaces (direct convs' pointers and
 * patches, MATMUL packing) are planned like any buffer: with all of them
 * in the scratch, a small model's 57 KB stem patches (sized for
 * TCRT_MAX_THREADS) added their pages to the run's peak RSS for no speed.
 * A COPY whose input buffer is not pinned and dies at the COPY shares that
 * buffer (reshape in place; the emitted memcpy is skipped when the
 * addresses are equal).
 * Fusion: an elementwise node whose one consumer node is elementwise with
 * the same output shape, and that is not fetched, gets no buffer
 * (out[0].offset = PASS_OFFSET_FUSED): codegen computes it inside its
 * consumer's loop.  Its inputs are then read at the position of the chain's
 * last node (its fusion root), so their lifetimes extend to there.
 * A fetched CONST gets a COPY node (data must be in the arena, where
 * results live).  CONST nodes still used get 64-byte aligned offsets in the
 * weights blob (out[0].offset).  Sets g->arena_bytes (rounded up to 64),
 * g->weights_bytes and g->unplanned_bytes (sum of all buffer sizes, each
 * rounded up to 64: the arena a plan without reuse would need).
 * Regions (ir.h; the pass manager plans a region op's regions before the
 * graph holding it): a region graph is planned like any graph, into an
 * arena of its own (g->arena_bytes), except that its ARG nodes get no
 * buffer (offset -1): generated code reads parameter i through a pointer,
 * args[i] (a WHILE's own output buffers, the loop state; a COND's operand
 * buffers), and never writes it.  Its results are pinned region buffers:
 * before planning, a fetched CONST gets a COPY (as at top level) and so does
 * a fetched ARG, except in a WHILE body the ARG i fetched as result i (a
 * loop-invariant variable: the caller skips its copy-back).  So the caller
 * copies every other result out of the region's arena, and a body result
 * never is the state buffer another result is copied into.  The region op
 * itself gets a workspace of the largest of its regions' arenas (they run
 * one at a time: a WHILE reads its cond result before the body runs), live
 * only at the node like a CONV2D workspace; its inputs and outputs never
 * share memory, so a WHILE's state never overlaps its initial values.
 * Weights: CONST nodes of every graph of the tree get offsets in one blob,
 * assigned when planning the root (regions first, then in node order with
 * each region op's regions, depth first); root->weights_bytes covers them
 * all and a region's weights_bytes stays 0.
 * Invariants: every live non-CONST output has offset >= 0 and
 * offset + bytes <= arena_bytes (except region ARGs, offset -1); offsets
 * are multiples of 64.
 */
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

#define ALIGN 64

typedef struct Buf {
    int64_t size;
    int start, end;               /* schedule positions, inclusive */
    int64_t offset;
    IrNode *node;
    int out;                      /* output index, -1 for the workspace */
    int seq;                      /* creation order, for a stable sort */
    bool is_pinned;               /* ARG or fetched: live the whole run */
    struct Buf *alias;            /* shares this buffer's memory (COPY), or NULL */
} Buf;

static int64_t align_up(int64_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

static int cmp_place_order(const void *pa, const void *pb)
{
    const Buf *a = *(Buf *const *)pa, *b = *(Buf *const *)pb;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_offset(const void *pa, const void *pb)
{
    const Buf *a = *(Buf *const *)pa, *b = *(Buf *const *)pb;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The region op node of g's parent that owns region g, and the region's
 * index in it; NULL for a top-level graph. */
static IrNode *region_owner(const IrGraph *g, int *index)
{
    if (!g->parent)
        return NULL;
    IR_FOR_EACH(g->parent, n) {
        for (int k = 0; k < n->n_regions; k++)
            if (n->regions[k] == g) {
                *index = k;
                return n;
            }
    }
    return NULL;
}

/* A WHILE body's result i that is its parameter i, unchanged: the loop
 * state keeps it, no copy.  is_body says g is a WHILE body. */
static bool is_passthrough(bool is_body, IrValue v, int i)
{
    return is_body && v.node && v.node->op == OP_ARG && v.index == 0 && v.node->p.i[0] == i;
}

/* Does fetch i of g need a COPY node (see the file comment)? */
static bool needs_copy(const IrGraph *g, bool is_body, int i)
{
    IrValue v = g->fetches[i].value;
    if (!v.node)
        return false;
    if (v.node->op == OP_CONST)
        return true;
    return g->parent && v.node->op == OP_ARG && !is_passthrough(is_body, v, i);
}

/* Gives every fetched CONST value (and in a region every fetched ARG but a
 * WHILE body's pass-through) a COPY node so that results live in the
 * graph's arena.  Returns false on error. */
static bool copy_fetched(IrGraph *g, Status *st)
{
    int index = -1;
    IrNode *owner = region_owner(g, &index);
    bool is_body = owner && owner->op == OP_WHILE && index == 1;
    bool fold = g->fold_on_build;
    const char *origin = g->cur_origin, *origin_op = g->cur_origin_op;
    g->fold_on_build = false;
    bool ok = true;
    for (int i = 0; i < g->n_fetches && ok; i++) {
        IrValue v = g->fetches[i].value;
        if (!needs_copy(g, is_body, i))
            continue;
        /* Two fetches of one value share the copy. */
        IrValue copy = {NULL, 0};
        for (int j = 0; j < i; j++) {
            IrValue w = g->fetches[j].value;
            if (w.node && w.node->op == OP_COPY && w.node->inputs[0].node == v.node &&
                w.node->inputs[0].index == v.index)
                copy = w;
        }
        if (!copy.node) {
            g->cur_origin = v.node->origin;
            g->cur_origin_op = v.node->origin_op;
            IrType t = *ir_value_type(v);
            copy = ir_emit1(g, OP_COPY, &v, 1, NULL, &t, st);
            if (!copy.node) {
                ok = false;
                break;
            }
        }
        g->fetches[i].value = copy;
    }
    g->fold_on_build = fold;
    g->cur_origin = origin;
    g->cur_origin_op = origin_op;
    return ok;
}

static void to_tensor(const IrType *t, tcrt_tensor *x)
{
    memset(x, 0, sizeof *x);
    x->dtype = t->dtype;
    x->rank = t->shape.rank;
    for (int d = 0; d < t->shape.rank && d < TCRT_MAX_RANK; d++)
        x->dims[d] = t->shape.dims[d];
}

static int64_t conv_workspace(const IrNode *n)
{
    if ((n->op != OP_CONV2D && n->op != OP_MATMUL) || n->out[0].type.dtype != TCRT_F32 || n->n_inputs > 8)
        return 0;
    tcrt_tensor in[8], out;
    for (int k = 0; k < n->n_inputs; k++)
        to_tensor(ir_value_type(n->inputs[k]), &in[k]);
    to_tensor(&n->out[0].type, &out);
    tcrt_params p;
    memcpy(p.i, n->p.i, sizeof p.i);
    memcpy(p.f, n->p.f, sizeof p.f);
    if (n->op == OP_MATMUL)
        return (int64_t)tcrt_fast_matmul_workspace(in, n->n_inputs, &out, &p);
    return (int64_t)tcrt_fast_conv2d_workspace(in, n->n_inputs, &out, &p);
}

/* Nodes whose outputs get no arena buffer: CONST (weights) and, in a
 * region, ARG (read through args[i]). */
static bool has_no_buffer(const IrGraph *g, const IrNode *n)
{
    return n->op == OP_CONST || (g->parent && n->op == OP_ARG);
}

/* Makes out share the buffer of in (through in's aliases: their root) when
 * that root is not pinned, has out's size and dies at position at (its last
 * reader is out's producer): the root's lifetime then extends to out's end.
 * Returns the root, or NULL when they do not share. */
static Buf *share_dying(Buf *out, Buf *in, int at)
{
    while (in->alias)
        in = in->alias;
    if (in->is_pinned || in->end != at || in->size != out->size)
        return NULL;
    out->alias = in;
    if (out->end > in->end)
        in->end = out->end;
    return in;
}

/* Whether conv n may write its output over its residual (input 3): a
 * packed direct or Winograd f32 CONV2D (the CPU kernels of TCRT_CONV_PACKED,
 * passes/pack.c) whose residual has a buffer of its own and is not also one
 * of its other inputs (a conv reading x around a pixel must not see outputs
 * stored over x). */
static bool residual_in_place(const IrGraph *g, const IrNode *n, const bool *is_fused)
{
    if (n->op != OP_CONV2D || n->n_inputs != 4 || n->n_outputs != 1 || n->out[0].type.dtype != TCRT_F32)
        return false;
    int64_t pk = n->p.i[TCRT_CONV_PACKED];
    if ((pk != TCRT_CONV_PACK_DIRECT && pk != TCRT_CONV_PACK_WINO && pk != TCRT_CONV_PACK_WINO4) ||
        n->p.i[TCRT_CONV_X2S]) /* a conv pair's input 3 is its second input */
        return false;
    IrValue r = n->inputs[3];
    if (!r.node || has_no_buffer(g, r.node) || is_fused[r.node->id] || ir_value_type(r)->dtype != TCRT_F32)
        return false;
    for (int k = 0; k < 3; k++)
        if (n->inputs[k].node == r.node)
            return false;
    return true;
}

/* Kernels whose workspace holds per-thread slots placed by
 * tcrt_ws_slot_stride: Winograd and fused depthwise convs (file comment:
 * Scratch). */
static bool has_slots(const IrNode *n)
{
    int64_t pk = n->p.i[TCRT_CONV_PACKED];
    return n->op == OP_CONV2D &&
           (pk == TCRT_CONV_PACK_WINO || pk == TCRT_CONV_PACK_WINO4 || pk == TCRT_CONV_PACK_DWBLOCK);
}

/* Nodes with a workspace buffer: fast f32 CONV2D/MATMUL, region ops. */
static bool has_workspace(const IrNode *n)
{
    return n->op == OP_CONV2D || n->op == OP_MATMUL || n->n_regions > 0;
}

/* A region op's workspace: the largest arena of its regions, which must
 * be planned already (every result has a buffer, or is a pass-through). */
static bool region_workspace(const IrNode *n, int64_t *bytes, Status *st)
{
    *bytes = 0;
    for (int k = 0; k < n->n_regions; k++) {
        const IrGraph *r = n->regions[k];
        bool is_body = n->op == OP_WHILE && k == 1;
        for (int i = 0; r && i < r->n_fetches; i++) {
            IrValue v = r->fetches[i].value;
            if (!v.node || (!is_passthrough(is_body, v, i) && v.node->out[v.index].offset < 0))
                r = NULL;
        }
        if (!r)
            return st_errorf(st, ST_ERROR,
                             "memory planning: node '%s' (%s): region %d is not planned "
                             "(memplan plans regions before their parent)",
                             n->origin ? n->origin : "?", ir_op_name(n->op), k);
        if (r->arena_bytes > *bytes)
            *bytes = r->arena_bytes;
    }
    return true;
}

/* Gives every used CONST of g, then of its regions (depth first, in node
 * order), a 64-byte aligned weights offset from *cur on; checks the data. */
static bool place_weights(IrGraph *g, int64_t *cur, int depth, PassCtx *cx)
{
    Status *st = cx->st;
    if (depth > IR_MAX_REGION_DEPTH)
        return st_errorf(st, ST_ERROR, "control flow nested more than %d deep (the limit)",
                         IR_MAX_REGION_DEPTH);
    int n_ids = g->next_id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->id >= n_ids)
            n_ids = g->nodes[i]->id + 1;
    bool *is_used = arena_alloc(&cx->scratch, (size_t)n_ids + 1);
    if (!is_used)
        return st_errorf(st, ST_NOMEM, "memory planning: out of memory");
    IR_FOR_EACH(g, n) {
        if (n->op == OP_CONST)
            n->out[0].offset = -1;
        for (int k = 0; k < n->n_inputs; k++) {
            IrNode *p = n->inputs[k].node;
            if (p && p->id >= 0 && p->id < n_ids)
                is_used[p->id] = true;
        }
    }
    IR_FOR_EACH(g, n) {
        if (n->op != OP_CONST || n->id < 0 || n->id >= n_ids || !is_used[n->id])
            continue;
        int64_t bytes = (int64_t)ir_type_bytes(&n->out[0].type);
        if (bytes > 0 && (!n->data || (int64_t)n->data_bytes < bytes))
            return st_errorf(st, ST_ERROR, "node '%s' (%s): constant has %zu bytes of data, needs %lld",
                             n->origin ? n->origin : "?", n->origin_op ? n->origin_op : "Const",
                             n->data_bytes, (long long)bytes);
        *cur = align_up(*cur);
        n->out[0].offset = *cur;
        *cur += bytes;
    }
    IR_FOR_EACH(g, n) {
        for (int k = 0; k < n->n_regions; k++)
            if (n->regions[k] && !place_weights(n->regions[k], cur, depth + 1, cx))
                return false;
    }
    return true;
}

static bool is_elem(const IrNode *n)
{
    return ir_op_info(n->op)->kind == K_ELEM && n->n_outputs == 1;
}

/* Marks elementwise nodes that run inside their consumer's loop (see the
 * file comment) in is_fused, and sets eff[id], the position at which node
 * id's inputs are read: its own, or its fusion root's. */
static bool plan_fusion(IrGraph *g, const int *pos, int n_ids, bool *is_fused, int *eff,
                        PassCtx *cx)
{
    IrNode **consumer = arena_alloc(&cx->scratch, sizeof(IrNode *) * ((size_t)n_ids + 1));
    bool *is_shared = arena_alloc(&cx->scratch, (size_t)n_ids + 1); /* fetched or 2+ consumers */
    if (!consumer || !is_shared)
        return false;
    IR_FOR_EACH(g, n) {
        for (int k = 0; k < n->n_inputs; k++) {
            int id = n->inputs[k].node->id;
            if (consumer[id] && consumer[id] != n)
                is_shared[id] = true;
            consumer[id] = n;
        }
    }
    for (int i = 0; i < g->n_fetches; i++)
        if (g->fetches[i].value.node)
            is_shared[g->fetches[i].value.node->id] = true;
    /* a run-time size (ir/dyn.c) is read from its producer's buffer */
    for (int i = 0; !g->parent && i < g->n_syms; i++)
        if (g->syms[i].src.node && g->syms[i].src.node->id <= n_ids)
            is_shared[g->syms[i].src.node->id] = true;
    /* Reverse order: a consumer's eff is known before its producers'. */
    for (int i = g->n_nodes - 1; i >= 0; i--) {
        IrNode *n = g->nodes[i];
        if (n->dead)
            continue;
        IrNode *c = consumer[n->id];
        is_fused[n->id] = is_elem(n) && c && !is_shared[n->id] && is_elem(c) &&
                          ir_shape_eq(&n->out[0].type.shape, &c->out[0].type.shape);
        eff[n->id] = is_fused[n->id] ? eff[c->id] : pos[n->id];
    }
    return true;
}

PassResult pass_memplan(IrGraph *g, PassCtx *cx)
{
    Status *st = cx->st;
    if (!copy_fetched(g, st))
        return PASS_FAILED;

    int n_ids = g->next_id;
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] && g->nodes[i]->id >= n_ids)
            n_ids = g->nodes[i]->id + 1;
    int *pos = arena_alloc(&cx->scratch, sizeof(int) * ((size_t)n_ids + 1));
    int *base = arena_alloc(&cx->scratch, sizeof(int) * ((size_t)n_ids + 1));
    bool *is_fused = arena_alloc(&cx->scratch, (size_t)n_ids + 1);
    int *eff = arena_alloc(&cx->scratch, sizeof(int) * ((size_t)n_ids + 1));
    if (!pos || !base || !is_fused || !eff)
        goto nomem;

    /* Schedule positions and buffer count. */
    int n_sched = 0, n_bufs = 0;
    IR_FOR_EACH(g, n) {
        if (n->id < 0 || n->id >= n_ids) {
            st_errorf(st, ST_ERROR, "memory planning: node id %d out of range", n->id);
            return PASS_FAILED;
        }
        pos[n->id] = n_sched++;
        base[n->id] = n_bufs;
        for (int k = 0; k < n->n_outputs; k++)
            n->out[k].offset = -1;
        n->workspace_bytes = 0;
        n->workspace_offset = -1;
        if (!has_no_buffer(g, n))
            n_bufs += n->n_outputs + has_workspace(n);
    }
    if (!plan_fusion(g, pos, n_ids, is_fused, eff, cx))
        goto nomem;
    Buf *bufs = arena_alloc(&cx->scratch, sizeof(Buf) * ((size_t)n_bufs + 1));
    Buf **order = arena_alloc(&cx->scratch, sizeof(Buf *) * ((size_t)n_bufs + 1));
    Buf **overlap = arena_alloc(&cx->scratch, sizeof(Buf *) * ((size_t)n_bufs + 1));
    if (!bufs || !order || !overlap)
        goto nomem;

    /* Lifetimes: from the producer to the last consumer. */
    IR_FOR_EACH(g, n) {
        if (has_no_buffer(g, n) || is_fused[n->id])
            continue; /* no buffer */
        int b = base[n->id];
        for (int k = 0; k < n->n_outputs; k++) {
            Buf *x = &bufs[b + k];
            x->size = (int64_t)ir_type_bytes(&n->out[k].type);
            x->start = x->end = pos[n->id];
            x->node = n;
            x->out = k;
            x->seq = b + k;
            if (n->op == OP_ARG || n->op == OP_VARIABLE || n->op == OP_ASSIGN) {
                x->start = 0;
                x->end = n_sched;
                x->is_pinned = true;
            }
            if (n->op == OP_RECV && n->p.i[2] && n->inputs[0].node->op == OP_SEND &&
                n->inputs[0].node->id >= 0 && n->inputs[0].node->id < n_ids &&
                pos[n->inputs[0].node->id] < x->start) /* received between tasks: posted at the SEND */
                x->start = pos[n->inputs[0].node->id];
        }
        if (has_workspace(n)) {
            Buf *x = &bufs[b + n->n_outputs];
            x->size = conv_workspace(n);
            if (n->n_regions > 0 && !region_workspace(n, &x->size, st))
                return PASS_FAILED;
            x->start = x->end = pos[n->id];
            x->node = n;
            x->out = -1;
            x->seq = b + n->n_outputs;
            n->workspace_bytes = x->size;
        }
    }
    IR_FOR_EACH(g, n) {
        for (int k = 0; k < n->n_inputs; k++) {
            IrNode *p = n->inputs[k].node;
            if (!p || p->dead || p->id < 0 || p->id >= n_ids) {
                st_errorf(st, ST_ERROR, "memory planning: node %%%d has a dangling input", n->id);
                return PASS_FAILED;
            }
            if (has_no_buffer(g, p) || is_fused[p->id])
                continue;
            Buf *x = &bufs[base[p->id] + n->inputs[k].index];
            if (eff[n->id] > x->end)
                x->end = eff[n->id];
        }
    }
    for (int i = 0; i < g->n_fetches; i++) {
        IrValue v = g->fetches[i].value;
        if (!v.node || v.node->dead || has_no_buffer(g, v.node))
            continue; /* a WHILE body's pass-through parameter */
        Buf *x = &bufs[base[v.node->id] + v.index];
        x->start = 0;
        x->end = n_sched;
        x->is_pinned = true;
    }

    /* Aliasing: a COPY (reshape) whose input is not pinned and is last read
     * by this COPY writes in place; the two become one buffer with the
     * union of their lifetimes (contiguous: the input dies where the output
     * is born). */
    IR_FOR_EACH(g, n) {
        if (n->op != OP_COPY || has_no_buffer(g, n->inputs[0].node) || is_fused[n->inputs[0].node->id])
            continue;
        Buf *out = &bufs[base[n->id]];
        Buf *in = share_dying(out, &bufs[base[n->inputs[0].node->id] + n->inputs[0].index], pos[n->id]);
        if (in && out->is_pinned) {
            in->is_pinned = true;
            in->start = 0;
            in->end = n_sched;
        }
    }

    /* In-place residual: a packed conv (direct or Winograd, on the CPU)
     * whose residual input is not pinned, is last read by this conv and is
     * no other input of it writes its output over the residual.  Its
     * kernels read each residual element just before they store the output
     * element in its place (fast_conv.c, ref_conv.c); a 1x1 conv at the
     * end of a ResNet bottleneck then skips the write-allocate of a fresh
     * output (docs/performance.md). */
    IR_FOR_EACH(g, n)
    {
        if (!residual_in_place(g, n, is_fused))
            continue;
        Buf *out = &bufs[base[n->id]];
        if (!out->is_pinned)
            share_dying(out, &bufs[base[n->inputs[3].node->id] + n->inputs[3].index], pos[n->id]);
    }

    /* Kernel scratch: the workspaces of the kernels with per-thread slots
     * share one buffer, live for the whole run, as large as the largest of
     * them and overlapping no other buffer (file comment: Scratch). */
    Buf *scratch = NULL;
    int64_t scratch_own = 0; /* the first workspace's own size (unplanned_bytes) */
    for (int i = 0; i < n_bufs; i++) {
        Buf *b = &bufs[i];
        if (!b->node || b->out >= 0 || b->size <= 0 || !has_slots(b->node))
            continue;
        if (!scratch) {
            scratch = b;
            scratch_own = b->size;
            b->start = 0;
            b->end = n_sched;
            b->is_pinned = true;
        } else {
            if (b->size > scratch->size)
                scratch->size = b->size;
            b->alias = scratch;
        }
    }

    /* Placement: largest first, best-fit gap among time-overlapping buffers. */
    int n_order = 0;
    int64_t total = 0;
    for (int i = 0; i < n_bufs; i++) {
        if (!bufs[i].node)
            continue;
        total += align_up(&bufs[i] == scratch ? scratch_own : bufs[i].size);
        bufs[i].offset = 0;
        if (bufs[i].size > 0 && !bufs[i].alias)
            order[n_order++] = &bufs[i];
    }
    qsort(order, (size_t)n_order, sizeof *order, cmp_place_order);
    int64_t arena_end = 0;
    for (int i = 0; i < n_order; i++) {
        Buf *b = order[i];
        int n_ov = 0;
        for (int j = 0; j < i; j++)
            if (order[j]->start <= b->end && b->start <= order[j]->end)
                overlap[n_ov++] = order[j];
        qsort(overlap, (size_t)n_ov, sizeof *overlap, cmp_offset);
        int64_t cursor = 0, best = -1, best_gap = 0;
        for (int j = 0; j < n_ov; j++) {
            int64_t gap = overlap[j]->offset - cursor;
            if (gap >= b->size && (best < 0 || gap < best_gap)) {
                best = cursor;
                best_gap = gap;
            }
            int64_t next = align_up(overlap[j]->offset + overlap[j]->size);
            if (next > cursor)
                cursor = next;
        }
        b->offset = best >= 0 ? best : cursor;
        if (b->offset + b->size > arena_end)
            arena_end = b->offset + b->size;
    }
    for (int i = 0; i < n_bufs; i++) {
        Buf *b = &bufs[i];
        if (!b->node)
            continue;
        for (Buf *r = b->alias; r; r = r->alias)
            b->offset = r->offset;
        if (b->out >= 0) {
            b->node->out[b->out].offset = b->offset;
        } else {
            b->node->workspace_offset = b->offset;
            if (scratch && (b == scratch || b->alias == scratch))
                b->node->workspace_bytes = scratch->size;
        }
    }
    IR_FOR_EACH(g, n) {
        if (is_fused[n->id])
            n->out[0].offset = PASS_OFFSET_FUSED;
    }

    /* Weights: every used CONST of the tree at a 64-byte aligned offset, in
     * node order, when planning the root (regions are planned first). */
    int64_t wcur = 0;
    if (!g->parent && !place_weights(g, &wcur, 0, cx))
        return PASS_FAILED;
    g->weights_bytes = align_up(wcur);
    g->arena_bytes = align_up(arena_end);
    g->unplanned_bytes = total;
    return PASS_CHANGED;

nomem:
    st_errorf(st, ST_NOMEM, "memory planning: out of memory");
    return PASS_FAILED;
}
