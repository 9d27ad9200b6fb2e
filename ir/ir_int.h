/* ir/ir_int.h - internal helpers shared by the files of ir/ (not public).
 *
 * Shape rules (one per distinct shape_rule column of ops.def, prefixed ir_),
 * node error formatting, element load/store across dtypes and the temporary
 * allocator used by read-only algorithms (verify, toposort).
 */
#ifndef IR_IR_INT_H
#define IR_IR_INT_H

#include "ir/ir.h"

/* Shape rules (shape.c), referenced by the op table in ops.c. */
#define IR_SHAPE_RULES(X)                                                                          \
    X(shape_given) X(shape_same) X(shape_broadcast) X(shape_reduce) X(shape_argreduce)             \
    X(shape_matmul) X(shape_conv2d) X(shape_conv2d_transpose) X(shape_pool) X(shape_copy)          \
    X(shape_transpose) X(shape_slice) X(shape_pad) X(shape_concat) X(shape_gather)                 \
    X(shape_gather_nd) X(shape_tile) X(shape_broadcast_to) X(shape_resize) X(shape_topk)   \
    X(shape_region) X(shape_update_slice) X(shape_nms) X(shape_where) X(shape_reverse_seq) X(shape_state)                                  \
    X(shape_conv2d_backprop_filter) X(shape_maxpool_grad) X(shape_avgpool_grad) X(shape_scatter_add)     \
    X(shape_comm)
#define IR_DECLARE_RULE(r) bool ir_##r(IrGraph *g, IrNode *n, Status *st);
IR_SHAPE_RULES(IR_DECLARE_RULE)
#undef IR_DECLARE_RULE

/* Records "node 'origin' (OriginOp): <message>" (origin falls back to the
 * IR op name) and returns false. */
bool ir_node_errorf(Status *st, const IrNode *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Element access for any numeric dtype (false/0 for string, f16, invalid). */
bool ir_dtype_is_float(tcrt_dtype dt);
bool ir_dtype_is_int(tcrt_dtype dt);      /* integer types, bool excluded */
bool ir_dtype_is_numeric(tcrt_dtype dt);  /* float, int or bool; not f16/string */
double ir_load_f64(const void *base, tcrt_dtype dt, int64_t i);
int64_t ir_load_i64(const void *base, tcrt_dtype dt, int64_t i);
void ir_store_f64(void *base, tcrt_dtype dt, int64_t i, double v);   /* float->int truncates */
void ir_store_i64(void *base, tcrt_dtype dt, int64_t i, int64_t v);

/* Short dtype names used by the text IR ("f32"), and back. */
const char *ir_dtype_short(tcrt_dtype dt);
bool ir_dtype_from_short(const char *s, size_t len, tcrt_dtype *out);

/* Temporary memory outside the arena, through the graph's allocator. */
void *ir_tmp_alloc(const Arena *ar, size_t n);
void ir_tmp_free(const Arena *ar, void *p);

/* Creates a CONST node over data already in g's arena (64-byte aligned). */
IrNode *ir_const_node_take(IrGraph *g, const IrType *t, void *data, Status *st);

/* ir/dyn.c: the shape rule of a node with a data-dependent input or given
 * output (ir_infer_node dispatches to it). */
bool ir_dyn_infer(IrGraph *g, IrNode *n, Status *st);
bool ir_dyn_involved(const IrNode *n);

/* Validates input dtypes and sets the output dtypes of n.  `given` is the
 * builder's requested type (may have dtype TCRT_INVALID). */
bool ir_infer_dtypes(IrNode *n, const IrType *given, Status *st);

#endif
