/* compiler/onnx/onnx_ops_flow.c - ONNX control-flow, sequence and recurrent
 * ops (rows looked up after onnx_ops[], onnx_int.h). */
#include "compiler/onnx/onnx_int.h"

const OnnxOpRow onnx_ops_flow[] = {
    {NULL, NULL, NULL},
};
