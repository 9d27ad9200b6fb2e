/* compiler/onnx/onnx_int.h - internal interface between onnx_import.c (graph
 * walk, tensors, attributes) and the op table (onnx_ops.c). */
#ifndef COMPILER_ONNX_INT_H
#define COMPILER_ONNX_INT_H

#include "compiler/onnx/onnx.h"

#define ONNX_MAX_OUTPUTS 64

struct OnnxScope;
struct OnnxSeqs;

typedef struct OnnxCtx {
    IrGraph *g;
    struct OnnxScope *scope;      /* names visible to the node (onnx_import.c) */
    struct OnnxSeqs *seqs;        /* import-time sequences and optionals (onnx_ops_seq.c) */
    const char *file;
    const Onnx__NodeProto *nd;
    int64_t opset;                /* default-domain opset of the model */
    Status *st;
} OnnxCtx;

/* in[i] is {NULL,0} for an omitted optional input (empty name).  Writes
 * out[0..nd->n_output); false with an error recorded on failure. */
typedef bool (*OnnxLowerFn)(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);

typedef struct OnnxOpRow {
    const char *op;               /* "Conv" */
    OnnxLowerFn lower;
    const char *lowers_to;        /* for docs */
} OnnxOpRow;

/* In a lowering: return false when building v failed (the error is recorded). */
#define TRY(v)                                                                                             \
    do {                                                                                                   \
        if (!(v).node)                                                                                     \
            return false;                                                                                  \
    } while (0)

static inline const IrShape *shape_of(IrValue v)
{
    return &ir_value_type(v)->shape;
}

/* A scalar constant of dtype dt holding v. */
static inline IrValue scalar(OnnxCtx *c, tcrt_dtype dt, double v)
{
    return ir_const_scalar_f(c->g, dt, v, c->st);
}

extern const OnnxOpRow onnx_ops[]; /* terminated by a row with op == NULL */
/* Control-flow, sequence and recurrent ops (onnx_ops_flow.c), same form;
 * onnx_find_row looks in onnx_ops first, then here. */
extern const OnnxOpRow onnx_ops_flow[];
const OnnxOpRow *onnx_find_row(const char *op);

/* Records "FILE: node 'NAME' (OP): <message>" and returns false. */
bool onnx_errorf(OnnxCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Attributes: the getters return the default when the attribute is absent
 * and record an error (returning false) when it has the wrong type. */
const Onnx__AttributeProto *onnx_attr(const OnnxCtx *c, const char *name);
bool onnx_attr_int(OnnxCtx *c, const char *name, int64_t def, int64_t *v);
bool onnx_attr_float(OnnxCtx *c, const char *name, double def, double *v);
/* *n = 0 when absent. */
bool onnx_attr_ints(OnnxCtx *c, const char *name, int64_t *v, int max, int *n);
bool onnx_attr_str(OnnxCtx *c, const char *name, const char *def, char *buf, size_t n);

/* ONNX TensorProto.DataType -> tcrt dtype; false (and error naming `what`) if unsupported. */
bool onnx_dtype(OnnxCtx *c, int onnx_type, const char *what, tcrt_dtype *out);
/* A TensorProto to an IR constant (raw_data or the typed fields). */
bool onnx_tensor_to_const(IrGraph *g, const Onnx__TensorProto *tp, const char *file, const char *what,
                          IrValue *v, Status *st);
/* float16 / bfloat16 (onnx_f16.c): the IR's storage-only dtypes.  onnx_cast
 * converts between any two dtypes, building the 16-bit float conversions
 * (round to nearest even) from integer and float ops. */
bool onnx_is_storage(tcrt_dtype dt);
IrValue onnx_cast(OnnxCtx *c, IrValue x, tcrt_dtype to);
/* Resize and Upsample (onnx_ops_resize.c). */
bool onnx_lower_resize(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
bool onnx_lower_upsample(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
/* A constant integer input (any int dtype). */
bool onnx_const_ints(OnnxCtx *c, IrValue v, const char *what, int64_t *out, int max, int *n);

/* ---- subgraphs (If, Loop, Scan bodies; onnx_import.c) ---- */

/* The value bound to `name` in c's scope or an enclosing one; NULL if none. */
const IrValue *onnx_lookup(const OnnxCtx *c, const char *name);
/* The names gp reads (directly or in nested subgraphs) that it does not
 * define, each once: malloc'ed array (free it; NULL when *n == 0 or on OOM,
 * with st set).  */
bool onnx_free_names(OnnxCtx *c, const Onnx__GraphProto *gp, const char ***names, int *n);
/* Lowers the nodes of subgraph gp (attribute `attr` of c's node) into g:
 * gp's inputs bound to args[n_args] (n_args must equal gp's input count),
 * names[i] bound to vals[i]; with see_outer, other names resolve in c's
 * scope chain (inlining), else they are errors (regions).  results gets
 * the gp->n_output outputs. */
bool onnx_lower_graph(OnnxCtx *c, const char *attr, const Onnx__GraphProto *gp, IrGraph *g, const IrValue *args,
                      int n_args, const char *const *names, const IrValue *vals, int n_vals, bool see_outer,
                      IrValue *results);
/* Lowerings of onnx_ops_ctl.c (rows in onnx_ops_flow[]). */
bool onnx_lower_if(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
bool onnx_lower_loop(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
bool onnx_lower_scan(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
bool onnx_lower_det(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
bool onnx_lower_compress(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
bool onnx_lower_unique(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
bool onnx_lower_nms(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
bool onnx_lower_nonzero(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
bool onnx_lower_maxunpool(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
/* Sequences and optionals (onnx_ops_seq.c) exist only at import time, as
 * lists of tensors.  In the value table one is IrValue {NULL, id}, id >= 1
 * (a NULL node with index 0 is an omitted input), so tensor rows see it as
 * a missing input. */
typedef struct OnnxSeq {
    int n;                        /* elements */
    bool is_optional;             /* an optional: n is 0 (None) or 1 */
    IrValue *v;                   /* malloc'ed; an element may itself be a sequence */
} OnnxSeq;
static inline bool onnx_is_seq(IrValue v)
{
    return !v.node && v.index > 0;
}
/* A new sequence of v[n] (copied); {NULL, 0} and an error on OOM. */
IrValue onnx_seq_new(OnnxCtx *c, const IrValue *v, int n, bool is_optional);
/* The sequence v stands for, or NULL if v is not one. */
const OnnxSeq *onnx_seq_get(const OnnxCtx *c, IrValue v);
/* The store of one import: NULL on OOM; free with onnx_seqs_free. */
struct OnnxSeqs *onnx_seqs_new(void);
void onnx_seqs_free(struct OnnxSeqs *s);
bool onnx_lower_seq_op(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
/* onnx_ops_grid.c */
bool onnx_lower_grid_sample(OnnxCtx *c, const IrValue *in, int n_in, IrValue *out);
/* Attribute `name` as a graph; error if absent or not a graph. */
bool onnx_attr_graph(OnnxCtx *c, const char *name, const Onnx__GraphProto **gp);

#endif
