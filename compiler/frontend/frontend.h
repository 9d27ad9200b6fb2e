/* compiler/frontend/frontend.h - model file readers.
 *
 * Every supported format becomes one protobuf-c Tensorflow__GraphDef:
 *   - GraphDef binary (.pb, detected by content whatever the extension),
 *   - GraphDef text format (.pbtxt), parsed generically from protobuf-c's
 *     message descriptors (pbtxt.c),
 *   - TF.js graph models (model.json + weight shards): modelTopology is the
 *     GraphDef in protobuf's JSON mapping (parsed generically, json.c), the
 *     weights become Const tensors (dequantized to float32).
 * Errors name the file and, where there is one, the node and field.
 */
#ifndef COMPILER_FRONTEND_H
#define COMPILER_FRONTEND_H

#include "ir/ir.h"
#include "tensorflow/core/framework/graph.pb-c.h"
#include "tensorflow/compiler/tf2xla/tf2xla.pb-c.h"

typedef enum FeFormat { FE_GRAPHDEF_BINARY, FE_GRAPHDEF_TEXT, FE_TFJS } FeFormat;

typedef struct FeModel {
    Tensorflow__GraphDef *graph;  /* owned; free with fe_model_free */
    FeFormat format;
    char *path;                   /* owned copy */
} FeModel;

const char *fe_format_name(FeFormat f);
/* Loads path; detects the format by content. */
bool fe_load(const char *path, FeModel *m, Status *st);
void fe_model_free(FeModel *m);

/* Low level (tests, fuzzers): parse from memory. `name` is used in messages. */
Tensorflow__GraphDef *fe_graphdef_from_binary(const uint8_t *buf, size_t n, const char *name, Status *st);
/* Generic text-format parser: fills a message of type desc (freed with
 * protobuf_c_message_free_unpacked(msg, NULL)).  Unknown field names are
 * skipped (with their value), so files from newer TensorFlow versions load. */
ProtobufCMessage *fe_pbtxt_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t n,
                                 const char *name, Status *st);
/* TF.js: dir is the folder of model.json (weight paths are relative to it). */
Tensorflow__GraphDef *fe_tfjs_load(const char *json_path, Status *st);

/* tfcompile config (--config x.config.pbtxt): tensorflow.tf2xla.Config, text or binary. */
Tensorflow__Tf2xla__Config *fe_config_load(const char *path, Status *st);

/* Whole-file read with a size limit; NULL + st on error. free() the result. */
uint8_t *fe_read_file(const char *path, size_t max_bytes, size_t *n, Status *st);
#define FE_MAX_FILE_BYTES ((size_t)2 << 30)

#endif
