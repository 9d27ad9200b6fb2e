/* compiler/tf/tf.h - TensorFlow graphs to IR.
 *
 * tf_import prunes the GraphDef to what the fetches need (feeds cut
 * everything upstream of them, TensorFlow's partial execution), orders it
 * topologically (rejecting cycles and dangling inputs), and lowers each TF
 * node through one row of the op table (tf_ops_*.c) into IR primitives.
 * Variables become VARIABLE nodes with their initial values (checkpoint or
 * initializer) and assignments ASSIGN nodes (tf_ops_state.c; the state
 * contract is in ir/ops.def "state" and docs/training.md).
 */
#ifndef COMPILER_TF_H
#define COMPILER_TF_H

#include <stdio.h>

#include "ir/ir.h"
#include "tensorflow/core/framework/graph.pb-c.h"
#include "tensorflow/core/protobuf/meta_graph.pb-c.h"

typedef struct TfFeedSpec {
    const char *name;             /* "input" or "input:0" */
    bool has_shape;               /* shape given by the user (or the fed array) */
    IrShape shape;
    tcrt_dtype dtype;             /* TCRT_INVALID: take the graph's */
    /* Non-NULL: the tensor is bound to this value at compile time (--const):
     * it becomes a constant (cast to the graph's dtype), not an argument, so
     * shapes and conditions that depend on it are resolved when compiling. */
    const tcrt_tensor *value;
} TfFeedSpec;

typedef struct TfImportOptions {
    const char *file;             /* for messages */
    const TfFeedSpec *feeds;
    int n_feeds;
    const char *const *fetches;   /* "Softmax" or "Softmax:0" */
    int n_fetches;
    /* Run-only targets (TensorFlow's session.run targets, e.g. a training
     * op "train/GradientDescent"): their data and control-dependency
     * closure is lowered and every assignment in it stays live (one
     * training step per run).  Node names. */
    const char *const *targets;
    int n_targets;
    /* Variables' initial values: the TensorBundle checkpoint PREFIX
     * (PREFIX.index, PREFIX.data-*) first, else the variable's initializer
     * (evaluated when compiling), else an error.  NULL: no checkpoint. */
    const char *checkpoint;
    /* The meta graph the graph came from (its "variables" and
     * "trainable_variables" collections), or NULL for a plain GraphDef
     * (then every float variable is trainable). */
    const Tensorflow__MetaGraphDef *meta;
    /* TF_IMPORT_* bits. */
    unsigned flags;
} TfImportOptions;
/* A feed's given shape may differ from the graph's in dimension 0
 * (--replicas imports one replica's share of each batch). */
#define TF_IMPORT_BATCH_FREE 1u
/* --data-parallel: the gradient input of every optimizer op (Apply*,
 * ResourceApply*) is averaged over the replicas (ALLREDUCE) first. */
#define TF_IMPORT_DATA_PARALLEL 2u

/* Returns the lowered graph (free with ir_graph_free) or NULL with st set. */
IrGraph *tf_import(const Tensorflow__GraphDef *gd, const TfImportOptions *o, Status *st);

/* Splits "node:3" into node name and index (index 0 when absent). buf holds
 * the node name.  False when the index is not a number. */
bool tf_parse_tensor_name(const char *s, char *buf, size_t n, int *index);

/* The op table. */
typedef struct TfOpDoc {
    const char *tf_op;
    const char *lowers_to;        /* "conv2d + add + relu" */
} TfOpDoc;
bool tf_op_supported(const char *tf_op);
/* Also true for a function of gd's library used as an op type (a call). */
bool tf_op_supported_in(const Tensorflow__GraphDef *gd, const char *tf_op);
/* Calls fn for every supported TF op, sorted by name. */
void tf_ops_foreach(void (*fn)(const TfOpDoc *d, void *ud), void *ud);

#endif
