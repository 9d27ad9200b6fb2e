/* compiler/frontend/frontend.h - model file readers.
 *
 * Every supported format becomes one protobuf-c Tensorflow__GraphDef:
 *   - GraphDef binary (.pb, detected by content whatever the extension),
 *   - GraphDef text format (.pbtxt), parsed generically from protobuf-c's
 *     message descriptors (pbtxt.c),
 *   - TF.js graph models (model.json + weight shards): modelTopology is the
 *     GraphDef in protobuf's JSON mapping (parsed generically, json.c), the
 *     weights become Const tensors (dequantized to float32),
 *   - MetaGraphDef (.meta; binary or text): its graph_def, with its
 *     signature_def map as the default feeds/fetches (meta.c),
 *   - SavedModel (saved_model.pb / saved_model.pbtxt): the meta graph tagged
 *     "serve", else the first.
 * Binary files are told apart by their top-level fields (SavedModel: 1
 * varint + 2; MetaGraphDef: 1..7, all messages; GraphDef: node 1, library 2,
 * versions 4), text files by their first field name, the file name breaking
 * ties (saved_model.pb*, *.meta).
 * Errors name the file and, where there is one, the node and field.
 */
#ifndef COMPILER_FRONTEND_H
#define COMPILER_FRONTEND_H

#include "ir/ir.h"
#include "tensorflow/core/framework/graph.pb-c.h"
#include "tensorflow/compiler/tf2xla/tf2xla.pb-c.h"
#include "tensorflow/core/protobuf/saved_model.pb-c.h"
#include "onnx/onnx.pb-c.h"

typedef enum FeFormat {
    FE_GRAPHDEF_BINARY,
    FE_GRAPHDEF_TEXT,
    FE_TFJS,
    FE_METAGRAPH_BINARY,
    FE_METAGRAPH_TEXT,
    FE_SAVEDMODEL_BINARY,
    FE_SAVEDMODEL_TEXT,
    FE_ONNX, /* onnx.ModelProto (binary): `onnx` is set, `graph` is NULL */
} FeFormat;

typedef struct FeModel {
    Tensorflow__GraphDef *graph; /* the graph to compile; owned (inside root when set) */
    FeFormat format;
    char *path; /* owned copy */
    /* MetaGraphDef and SavedModel only (NULL otherwise), all inside root: */
    Tensorflow__MetaGraphDef *meta;      /* the meta graph `graph` is the graph_def of */
    Tensorflow__SavedModel *saved_model; /* SavedModel: the whole file */
    int meta_index;                      /* SavedModel: meta == saved_model->meta_graphs[meta_index] */
    ProtobufCMessage *root;              /* the decoded file when it is not `graph` itself */
    Onnx__ModelProto *onnx;              /* FE_ONNX only (also root) */
} FeModel;
/* Everything above is freed by fe_model_free.  Signature maps (meta's
 * signature_def, and each SignatureDef's inputs and outputs) are sorted by
 * key at load time, so listings and default feed/fetch orders are stable. */

const char *fe_format_name(FeFormat f);
/* Loads path; detects the format by content. */
bool fe_load(const char *path, FeModel *m, Status *st);
/* The same from memory: path names the file in messages, and its base name
 * is a hint for ambiguous content (TF.js shards are looked up next to it). */
bool fe_load_buffer(const char *path, const uint8_t *buf, size_t n, FeModel *m, Status *st);
void fe_model_free(FeModel *m);

/* ---- meta.c: MetaGraphDef / SavedModel -------------------------------- */

/* The meta graph fe_load compiles from a SavedModel: the first one tagged
 * "serve", else meta_graphs[0]; -1 when there is none. */
int fe_savedmodel_pick(const Tensorflow__SavedModel *sm);
/* The signature compiled when no fetches are given: "serving_default",
 * else the only one (keys starting "__", like "__saved_model_init_op", are
 * not candidates).  NULL with st untouched when the model has no candidate
 * signature (a GraphDef, or a meta graph without one); NULL + st naming the
 * candidates when there are several and none is "serving_default".  *key
 * (may be NULL) gets the chosen key.  The result is owned by m. */
const Tensorflow__SignatureDef *fe_default_signature(const FeModel *m, const char **key, Status *st);
/* The signature named key (--signature), owned by m; NULL + st listing
 * the model's keys when there is none. */
const Tensorflow__SignatureDef *fe_signature(const FeModel *m, const char *key, Status *st);
/* Sorts meta's signature maps by key (done by fe_load). */
void fe_metagraph_sort_signatures(Tensorflow__MetaGraphDef *meta);

/* Low level (tests, fuzzers): parse from memory. `name` is used in messages. */
Tensorflow__GraphDef *fe_graphdef_from_binary(const uint8_t *buf, size_t n, const char *name, Status *st);
Tensorflow__MetaGraphDef *fe_metagraph_from_binary(const uint8_t *buf, size_t n, const char *name,
                                                   Status *st);
Tensorflow__SavedModel *fe_savedmodel_from_binary(const uint8_t *buf, size_t n, const char *name, Status *st);
/* Generic text-format parser: fills a message of type desc (freed with
 * protobuf_c_message_free_unpacked(msg, NULL)).  Unknown field names are
 * skipped (with their value), so files from newer TensorFlow versions load. */
ProtobufCMessage *fe_pbtxt_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t n,
                                 const char *name, Status *st);
/* TF.js: dir is the folder of model.json (weight paths are relative to it). */
Tensorflow__GraphDef *fe_tfjs_load(const char *json_path, Status *st);

/* onnx_load.c: does the binary content look like an ONNX ModelProto
 * (ir_version varint 1, graph message 7, opset_import messages 8, nothing
 * that no ModelProto field has)?  Decoded with fe_onnx_from_binary. */
bool fe_onnx_sniff(const uint8_t *buf, size_t n);
Onnx__ModelProto *fe_onnx_from_binary(const uint8_t *buf, size_t n, const char *name, Status *st);

/* tfcompile config (--config x.config.pbtxt): tensorflow.tf2xla.Config, text or binary. */
Tensorflow__Tf2xla__Config *fe_config_load(const char *path, Status *st);

/* Whole-file read with a size limit; NULL + st on error. free() the result. */
uint8_t *fe_read_file(const char *path, size_t max_bytes, size_t *n, Status *st);
#define FE_MAX_FILE_BYTES ((size_t)2 << 30)

#endif
