/* compiler/tf/tf_int.h - internal interface between tf_import.c and the
 * op tables (tf_ops_nn.c, tf_ops_array.c).
 *
 * A lowering function receives the node's data inputs already lowered to IR
 * values and writes one IR value per TF output.  Attributes are read through
 * tf_attr_* which fall back to the row's registry defaults (TensorFlow's op
 * registry defaults, kept here as data for the ops we support), so 2017
 * graphs without `dilations` still load.
 */
#ifndef COMPILER_TF_INT_H
#define COMPILER_TF_INT_H

#include "compiler/tf/tf.h"

#define TF_MAX_OUTPUTS 1024

typedef struct TfOpRow TfOpRow;
typedef struct TfState TfState; /* tf_import.c: the variables of one import */

typedef struct TfCtx {
    IrGraph *g;
    const char *file;
    const Tensorflow__NodeDef *nd;
    const TfOpRow *row;
    Status *st;
    /* The graph's function library (If/While/Case/PartitionedCall bodies),
     * or NULL. */
    const Tensorflow__FunctionDefLibrary *lib;
    /* The importer's variables (tf_state_variable), or NULL outside an
     * import (function bodies lowered on their own). */
    TfState *state;
} TfCtx;

/* in: data inputs (control inputs removed); out: at least TF_MAX_OUTPUTS slots;
 * *n_out: number of outputs written.  Return false with an error recorded
 * (tf_errorf) on failure. */
typedef bool (*TfLowerFn)(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out);

struct TfOpRow {
    const char *tf_op;            /* "Conv2D" */
    TfLowerFn lower;
    const char *defaults;         /* registry defaults: "data_format=NHWC;dilations=[1,1,1,1]" */
    const char *lowers_to;        /* for docs/ops.md */
};

extern const TfOpRow tf_ops_nn[];     /* terminated by a row with tf_op == NULL */
extern const TfOpRow tf_ops_array[];
extern const TfOpRow tf_ops_func[];   /* tf_ops_func.c: If, While, Case, PartitionedCall (v2) */
extern const TfOpRow tf_ops_list[];   /* tf_ops_list.c: TensorArray, TensorList, NMS, Where */
extern const TfOpRow tf_ops_state[];  /* tf_ops_state.c: variables, assignments, optimizers */
extern const TfOpRow tf_ops_grad[];   /* tf_ops_grad.c: gradient ops of training graphs (ReluGrad, ...) */

/* tf_import.c: the VARIABLE node of the variable op c->nd (VariableV2,
 * Variable, VarHandleOp), made once per import with its initial value
 * (checkpoint, else initializer) as its CONST input. */
bool tf_state_variable(TfCtx *c, IrValue *out);
/* tf_import.c: ASSIGN(var, value) made by c->nd, remembered so that a node
 * with a control dependency on c->nd reads the new value. */
bool tf_state_assign(TfCtx *c, IrValue var, IrValue value, IrValue *out);
/* Arrays created without an element shape (tf_ops_list.c "the pending
 * convention") and written inside a loop or conditional: the region
 * parameter carrying one is marked (origin = the creating TF node,
 * origin_op = TF_PENDING_ARRAY, by tf_mark_pending_param); a write there
 * records the element shape it needs (tf_state_elem_learn) and fails, and
 * tf_import imports again, the creating op then making a buffer of the
 * learnt element shape (tf_state_elem_hint).  Both are no-ops (false)
 * outside an import. */
#define TF_PENDING_ARRAY "(pending array)"
#define TF_PENDING_MAGIC 0x70656e64 /* "pend": p.i[0] of tf_ops_list.c's pending marker */
void tf_mark_pending_param(IrValue param, IrValue outer);
bool tf_state_elem_hint(const TfCtx *c, const char *creator, IrShape *elem);
void tf_state_elem_learn(const TfCtx *c, const char *creator, const IrShape *elem);
/* tf_import.c: whether the import is for --data-parallel (optimizer ops
 * average their gradient input over the replicas). */
bool tf_state_data_parallel(const TfCtx *c);
/* Is op an assignment (Assign*, Apply*, ResourceApply*: it writes a
 * variable, and a node with a control dependency on it reads the new value)? */
bool tf_op_is_assign(const char *op);
/* Is op a variable op (VariableV2, Variable, VarHandleOp)? */
bool tf_op_is_variable(const char *op);

/* The row for a TF op type (core, nn, array, control-flow tables), or NULL. */
const TfOpRow *tf_find_row(const char *tf_op);
/* tf_ops_func.c: the row for a node whose op type names a function of lib
 * (TensorFlow calls library functions that way; the body is inlined), or NULL. */
const TfOpRow *tf_func_call_row(const Tensorflow__FunctionDefLibrary *lib, const char *tf_op);

/* Records "FILE: node 'NAME' (OP): <message>" and returns false. */
bool tf_errorf(TfCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Attribute access.  Missing attrs take the row's default; if there is none
 * either, the getter records "missing attribute 'x'" and returns false.
 * tf_attr_has tells whether the node (or the defaults) has it. */
bool tf_attr_has(TfCtx *c, const char *name);
bool tf_attr_int(TfCtx *c, const char *name, int64_t *v);
bool tf_attr_float(TfCtx *c, const char *name, double *v);
bool tf_attr_bool(TfCtx *c, const char *name, bool *v);
bool tf_attr_type(TfCtx *c, const char *name, tcrt_dtype *v);
/* Returns a pointer valid while the GraphDef lives (or a static default). */
bool tf_attr_str(TfCtx *c, const char *name, const char **v);
bool tf_attr_ints(TfCtx *c, const char *name, int64_t *v, int max, int *n);
bool tf_attr_floats(TfCtx *c, const char *name, double *v, int max, int *n);
/* list(string) attrs, e.g. _FusedConv2D fused_ops. */
bool tf_attr_strs(TfCtx *c, const char *name, const char **v, int max, int *n);
/* A TensorProto attr ("value" of Const) converted to an IR constant. */
bool tf_attr_tensor(TfCtx *c, const char *name, IrValue *v);

/* A TensorProto converted to an IR constant (half/bfloat16 widened to
 * float32; fewer values than elements repeat the last one). */
bool tf_tensor_to_const(TfCtx *c, const Tensorflow__TensorProto *tp, IrValue *v);

/* TF DataType -> tcrt dtype; false (with error) for unsupported types. */
bool tf_dtype(TfCtx *c, int tf_type, tcrt_dtype *out);

/* Integer constant input helper: error names the input index when the value
 * is not a compile-time constant ("input 1 (axis) must be a constant"). */
bool tf_const_ints(TfCtx *c, IrValue v, const char *what, int64_t *out, int max, int *n);

#endif
