/* passes/passes.h - graph passes and the pass manager (public header of passes/).
 *
 * Every pass is `PassResult pass_x(IrGraph *, PassCtx *)`, never prints and
 * never reads globals or the environment.  The pipeline is the visible table
 * in pipeline.c; the manager runs ir_verify after each change (always in
 * debug builds, with verify_each in release) and writes dumps.  It runs
 * each pass on every graph of the region tree (ir.h "regions"), a region
 * op's regions before the graph holding it, so a pass sees one graph at a
 * time and g->parent says whether it is a region.
 */
#ifndef PASSES_PASSES_H
#define PASSES_PASSES_H

#include "ir/ir.h"

typedef enum PassResult { PASS_SAME, PASS_CHANGED, PASS_FAILED } PassResult;

typedef struct PassCtx {
    Arena scratch;                /* reset after each pass */
    Status *st;
} PassCtx;

enum { REQ_NONE = 0, REQ_TOPO = 1, REQ_SHAPES = 2 };
enum { INV_NONE = 0, INV_PLAN = 1 };

typedef struct PassInfo {
    const char *name;
    PassResult (*fn)(IrGraph *g, PassCtx *cx);
    unsigned requires;
    unsigned invalidates;
} PassInfo;

/* state.c: variables (ir/ops.def "state"): checks that VARIABLE and ASSIGN
 * appear only at top level and that no variable is assigned twice in one
 * run; freezes every variable no ASSIGN writes into its initial value (a
 * CONST: inference from a model with variables); gives a fetched read of an
 * assigned variable its own COPY (the run-start value, as every read sees). */
PassResult pass_state(IrGraph *g, PassCtx *cx);
/* fold.c: replaces nodes whose inputs are all constant by constants, and a
 * COND on a constant selector by its chosen branch (inlined). */
PassResult pass_fold(IrGraph *g, PassCtx *cx);
/* cse.c: merges nodes with equal (op, params, inputs, types). */
PassResult pass_cse(IrGraph *g, PassCtx *cx);
/* dce.c: removes nodes no fetch depends on. */
PassResult pass_dce(IrGraph *g, PassCtx *cx);
/* layout.c: sinks transposes past elementwise ops and keepdims reductions
 * (constants re-laid out at compile time) and cancels transpose pairs, never
 * adding a transpose; a transpose that moves no data becomes a copy. */
PassResult pass_layout(IrGraph *g, PassCtx *cx);
/* fuse.c: folds a contraction's single-use epilogue into it: per-channel
 * add/sub (bias), per-channel mul (constant weights), relu/relu6/leaky
 * activations, and (conv2d) a same-shape add as the residual input. */
PassResult pass_fuse(IrGraph *g, PassCtx *cx);
/* pack.c: replaces the constant HWIO weights of f32 non-depthwise conv2d by
 * tcrt_pack_conv_weights' layout (TCRT_CONV_PACKED, TCRT_CONV_COUT). */
PassResult pass_pack(IrGraph *g, PassCtx *cx);
/* memplan.c: one arena; args and results pinned, intermediates reuse dead
 * buffers (greedy best fit in schedule order); CONST data gets offsets in the
 * weights blob; CONV2D workspaces sized by tcrt_fast_conv2d_workspace.
 * An elementwise node whose only consumer is an elementwise node of the same
 * output shape (and that is not fetched) is fused: it gets no buffer, its
 * out[0].offset is PASS_OFFSET_FUSED, and codegen computes it inside the
 * consumer's loop.
 * Regions must be planned before their parent (the pass manager's order):
 * a region's ARGs get no buffer (generated code reads them through args[i]),
 * its results are pinned buffers of its own arena (fetched CONSTs and ARGs
 * get a COPY, except a WHILE body's pass-through ARG i at result i), and
 * the region op's workspace is the largest of its regions' arenas.  Weights
 * of the whole tree are placed when planning the root. */
PassResult pass_memplan(IrGraph *g, PassCtx *cx);
#define PASS_OFFSET_FUSED ((int64_t)-2)

const PassInfo *pass_pipeline(int *n);
const PassInfo *pass_find(const char *name);

typedef struct PipelineOptions {
    const char *dump_after;       /* pass name, "all" or NULL */
    const char *dump_dir;         /* writes NN-<pass>.ir and .dot there */
    bool verify_each;
    const char *const *disabled;  /* pass names to skip */
    int n_disabled;
} PipelineOptions;

bool pass_run_pipeline(IrGraph *g, const PipelineOptions *o, Status *st);

#endif
