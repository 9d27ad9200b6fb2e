/* compiler/onnx/onnx_int.h - internal interface between onnx_import.c (graph
 * walk, tensors, attributes) and the op table (onnx_ops.c). */
#ifndef COMPILER_ONNX_INT_H
#define COMPILER_ONNX_INT_H

#include "compiler/onnx/onnx.h"

#define ONNX_MAX_OUTPUTS 64

typedef struct OnnxCtx {
    IrGraph *g;
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
/* A constant integer input (any int dtype). */
bool onnx_const_ints(OnnxCtx *c, IrValue v, const char *what, int64_t *out, int max, int *n);

#endif
