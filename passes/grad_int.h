/* passes/grad_int.h - internal interface between the gradient builder
 * (grad.c), its per-primitive rules (grad_rules.c) and the optimizers
 * (optim.c).  Not a public header: passes.h declares the entry points.
 *
 * A rule differentiates one forward node n.  It receives the adjoints of
 * n's outputs (dy[k], {NULL,0} for an output no gradient reaches; at least
 * one is set) and need[i] (input i is on a path from a differentiated value
 * to the loss and is floating point), and writes dx[i] for the inputs that
 * need one.  dx[i] may have the shape of n's output where the input was
 * broadcast (elementwise ops): the builder sums it back to the input's shape
 * (grad_unbroadcast).  Leaving dx[i] {NULL,0} means "no gradient" (zero).
 * Rules build their nodes with the grad_* helpers below, which append to the
 * graph (after every forward node, so the node list stays topological) and
 * record errors in c->st.
 */
#ifndef PASSES_GRAD_INT_H
#define PASSES_GRAD_INT_H

#include "passes/passes.h"

typedef struct GradCtx {
    IrGraph *g;
    Status *st;
} GradCtx;

typedef bool (*GradRule)(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx);

/* grad_rules.c: the rule of op, NULL when it has none (an error on a
 * gradient path), or grad_nodiff for ops that pass no gradient (integer or
 * boolean results, piecewise-constant functions, random numbers). */
GradRule grad_rule(Op op);
bool grad_nodiff(GradCtx *c, IrNode *n, const IrValue *dy, const bool *need, IrValue *dx);

/* Builders (grad.c).  All return {NULL,0} after an error. */
IrValue grad_fill(GradCtx *c, const IrType *t, double v); /* broadcast scalar constant */
IrValue grad_scalar(GradCtx *c, tcrt_dtype dt, double v); /* rank-0 constant */
IrValue grad_un(GradCtx *c, Op op, IrValue a);
IrValue grad_bin(GradCtx *c, Op op, IrValue a, IrValue b);
IrValue grad_select(GradCtx *c, IrValue cond, IrValue a, IrValue b);
IrValue grad_reshape(GradCtx *c, IrValue a, const IrShape *s);
IrValue grad_broadcast_to(GradCtx *c, IrValue a, const IrShape *s);
IrValue grad_reduce_sum(GradCtx *c, IrValue a, int64_t mask, bool keepdims);
IrValue grad_transpose(GradCtx *c, IrValue a, const int64_t *perm);
/* Stride-1 slice: count[d] elements from begin[d]. */
IrValue grad_slice(GradCtx *c, IrValue a, const int64_t *begin, const int64_t *count);
IrValue grad_emit(GradCtx *c, Op op, const IrValue *in, int n_in, const IrParams *p, const IrType *given);
/* Sums a (shape broadcast from `to`) back to shape `to`. */
IrValue grad_unbroadcast(GradCtx *c, IrValue a, const IrShape *to);
/* Vector-Jacobian product over g (grad.c): seeds the adjoints of ys[j]
 * with dys[j] ({NULL,0}: none) and writes grads[i] = the adjoint of wrt[i]
 * (zeros and has_path[i] = false where none arrives; has_path may be NULL).
 * pass_grad_values is grad_vjp(loss, ones).  A WHILE on a path from wrt to
 * ys is first replaced by its unrolled body (trip count known at compile
 * time, else an error; grad.c "unroll_loops"), so g's forward nodes may
 * change and ir_graph_compact reorders g->nodes. */
bool grad_vjp(IrGraph *g, const IrValue *ys, const IrValue *dys, int n_y, const IrValue *wrt, int n_wrt,
              IrValue *grads, bool *has_path, Status *st);
/* Records "no gradient ...: <why> (node 'origin')" and returns false. */
bool grad_fail(GradCtx *c, const IrNode *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
