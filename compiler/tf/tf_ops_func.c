/* compiler/tf/tf_ops_func.c - TF v2 functional control flow: If/StatelessIf, While/StatelessWhile,
 * Case/StatelessCase, PartitionedCall/StatefulPartitionedCall (bodies from
 * the graph's function library become regions or are inlined), and calls of
 * a library function by its name used as an op type.
 *
 * Function bodies (lower_fn):
 *   1. Check the signature against the operands: one tensor per arg (list
 *      args are rejected), a resource arg takes the caller's variable (its
 *      VARIABLE value, tf_ops_state.c; resource loop variables and branch
 *      operands are rejected), dtypes equal to the operands' (a `type_attr` arg takes
 *      its type from the caller's attrs when it binds it; a DT_VARIANT arg,
 *      a TensorList, is the buffer tensor tf_ops_list.c made of it and
 *      takes the operand's type).
 *   2. Index the body's node_defs by name (open addressing) and walk back
 *      from the ret values with an explicit stack, three-colour DFS: the
 *      post-order is a topological order of exactly the nodes the results
 *      and the assigning control rets (a TF2 train function's updates) need
 *      (a grey node met again is a cycle, an error); control inputs
 *      ("^x") must name a body node but are not followed, as in tf_import.c.
 *   3. Every needed op must have a row (tf_find_row) or be a library
 *      function itself; each unsupported op type is reported once.
 *   4. Lower in that order through the rows into the target graph (the
 *      caller's graph when inlining, a region graph for If/Case/While).
 *      Each body node is lowered as a shallow copy of its NodeDef named
 *      "<caller>/<node>" (so messages and kernel comments say where it came
 *      from) whose attr placeholders ("T": placeholder "T") are replaced by
 *      the caller's attr values.  Rows of this file are called with the
 *      current FnEnv so that nesting is bounded and recursion through the
 *      library is an error, not a stack overflow.
 *   5. The results are the ret values of the signature's output args in
 *      order.
 *
 * Tensor references inside a FunctionDef: "arg" (an input arg), "node:out:k"
 * (output k of node's output arg list `out`) and "^node" (control).  The
 * flat output index of "node:out:k" is k for ops with one output arg list;
 * the ops with several lists we know are in multi_out[] (an unknown arg name
 * of one of them is an error), a called library function uses its
 * signature, and for any other op two different arg names on one node are an
 * error (we would not know how its lists are laid out).
 *
 * Control flow: If/Case whose selector is a compile-time constant inline the
 * chosen branch (no COND left); otherwise each branch becomes a region
 * (ir.h "regions") whose params are the op's data inputs.  The If condition
 * follows TensorFlow's ToBool: a rank-0 tensor is true when non-zero, a
 * tensor of rank >= 1 is true when it has elements (a compile-time fact).
 * While: regions[0] = the cond function (its result made bool the same
 * way), regions[1] = the body; loop variables keep their types (the IR's
 * shape rule reports a change, naming the While node).
 *
 * Invariants: every failure records a message naming the calling node (and
 * the function, arg or body node) and returns false; scratch memory lives in
 * the FnEnv arena of the outermost row call, freed when it returns; region
 * graphs are built with fold_on_build as their parent and left with it off
 * once complete (as the importer leaves the root graph).
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/tf/tf_int.h"

#define FN_MAX_DEPTH 32 /* function bodies nested in one another (calls, branches, loops) */

typedef struct FnEnv {
    Arena scratch;                   /* maps, NodeDef copies, names; freed by the outermost row */
    const char *stack[FN_MAX_DEPTH]; /* functions being lowered, outermost first */
    int depth;
    int64_t n_lowered; /* body nodes lowered so far: bounds a library that calls
                        * functions from functions to an exponential size */
} FnEnv;

/* A caller's attr binding for a function's attr placeholders. */
typedef struct Bind {
    const char *key;
    const Tensorflow__AttrValue *value;
} Bind;

typedef bool (*FnLower)(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out, int *n_out);

static bool nomem(TfCtx *c)
{
    return st_errorf(c->st, ST_NOMEM, "out of memory");
}

/* ---- attrs ---- */

static const Tensorflow__AttrValue *node_attr(const Tensorflow__NodeDef *nd, const char *name)
{
    const Tensorflow__AttrValue *v = NULL;
    for (size_t i = 0; nd && i < nd->n_attr; i++)
        if (nd->attr[i] && nd->attr[i]->key && strcmp(nd->attr[i]->key, name) == 0)
            v = nd->attr[i]->value; /* last duplicate wins, as protobuf */
    return v;
}

/* The function named by attr `name` (a NameAttrList). */
static bool func_attr(TfCtx *c, const char *name, const Tensorflow__NameAttrList **fa)
{
    const Tensorflow__AttrValue *v = node_attr(c->nd, name);
    if (!v)
        return tf_errorf(c, "missing attribute '%s'", name);
    if (v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_FUNC || !v->func || !v->func->name || !*v->func->name)
        return tf_errorf(c, "attribute '%s' is not a function", name);
    *fa = v->func;
    return true;
}

/* A list(type) attr (Tin, Tout, T); *present false when the node lacks it. */
static bool type_list_attr(TfCtx *c, const char *name, const int **types, int *n, bool *present)
{
    const Tensorflow__AttrValue *v = node_attr(c->nd, name);
    *present = v != NULL;
    *n = 0;
    *types = NULL;
    if (!v)
        return true;
    if (v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || !v->list)
        return tf_errorf(c, "attribute '%s' is not a list of types", name);
    *n = (int)v->list->n_type;
    *types = (const int *)v->list->type;
    return true;
}

static const char *tf_type_name(int t, char *buf, size_t n)
{
    static const char *const names[] = {
        NULL,          "DT_FLOAT",     "DT_DOUBLE",  "DT_INT32",  "DT_UINT8",      "DT_INT16",  "DT_INT8",
        "DT_STRING",   "DT_COMPLEX64", "DT_INT64",   "DT_BOOL",   "DT_QINT8",      "DT_QUINT8", "DT_QINT32",
        "DT_BFLOAT16", "DT_QINT16",    "DT_QUINT16", "DT_UINT16", "DT_COMPLEX128", "DT_HALF",   "DT_RESOURCE",
        "DT_VARIANT",  "DT_UINT32",    "DT_UINT64",
    };
    int base = t > 100 ? t - 100 : t;
    if (base > 0 && base < (int)(sizeof names / sizeof names[0]))
        snprintf(buf, n, "%s%s", names[base], t > 100 ? "_REF" : "");
    else
        snprintf(buf, n, "DataType %d", t);
    return buf;
}

static bool is_resource(int t)
{
    return t == 20 || t == 120; /* DT_RESOURCE(_REF) */
}

/* DT_VARIANT values that reach a function are TensorLists, which
 * tf_ops_list.c lowers to plain buffer tensors: they pass with the type of
 * the value the caller gives. */
static bool is_variant(int t)
{
    return t == 21 || t == 121;
}

/* Rejects resource types in a node's list(type) attr. */
static bool check_type_list(TfCtx *c, const char *attr, const char *what)
{
    const int *types;
    int n;
    bool present;
    if (!type_list_attr(c, attr, &types, &n, &present))
        return false;
    for (int i = 0; i < n; i++)
        if (is_resource(types[i])) {
            char b[40];
            return tf_errorf(c, "%s %d is %s (attribute '%s'): resource values (variables) are not supported",
                             what, i, tf_type_name(types[i], b, sizeof b), attr);
        }
    return true;
}

/* ---- the library ---- */

static const Tensorflow__FunctionDef *find_fn(const Tensorflow__FunctionDefLibrary *lib, const char *name)
{
    for (size_t i = 0; lib && name && i < lib->n_function; i++) {
        const Tensorflow__FunctionDef *fd = lib->function[i];
        if (fd && fd->signature && fd->signature->name && strcmp(fd->signature->name, name) == 0)
            return fd;
    }
    return NULL;
}

/* The FunctionDef named by attr `attr` of c's node (or by c's op when attr
 * is NULL). */
static bool get_fn(TfCtx *c, const char *name, const char *attr, const Tensorflow__FunctionDef **fd)
{
    *fd = find_fn(c->lib, name);
    if (*fd)
        return true;
    if (attr)
        return tf_errorf(c,
                         "attribute '%s' names function '%s', which is not in the graph's function library",
                         attr, name);
    return tf_errorf(c, "function '%s' is not in the graph's function library", name);
}

static const char *fn_name(const Tensorflow__FunctionDef *fd)
{
    return fd->signature->name;
}

/* ---- output arg lists ---- */

/* Ops with several output arg lists (every list here is one tensor).  Every
 * op a row supports that has several output lists must be here: for other
 * ops "node:name:k" is output k whatever the name. */
static const struct {
    const char *op;
    const char *outs[7];
} multi_out[] = {
    {"Switch", {"output_false", "output_true"}},
    {"RefSwitch", {"output_false", "output_true"}},
    {"Merge", {"output", "value_index"}},
    {"RefMerge", {"output", "value_index"}},
    {"FusedBatchNorm", {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"}},
    {"FusedBatchNormV2", {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"}},
    {"FusedBatchNormV3",
     {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3"}},
    {"_FusedBatchNormEx",
     {"y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3"}},
    {"TopK", {"values", "indices"}},
    {"TopKV2", {"values", "indices"}},
    {"Unique", {"y", "idx"}},
    {"UniqueV2", {"y", "idx"}},
    {"UniqueWithCounts", {"y", "idx", "count"}},
    {"NonMaxSuppressionV4", {"selected_indices", "valid_outputs"}},
    {"NonMaxSuppressionV5", {"selected_indices", "selected_scores", "valid_outputs"}},
    {"CombinedNonMaxSuppression", {"nmsed_boxes", "nmsed_scores", "nmsed_classes", "valid_detections"}},
    {"BroadcastGradientArgs", {"r0", "r1"}},
    {"MaxPoolWithArgmax", {"output", "argmax"}},
    {"QuantizeV2", {"output", "output_min", "output_max"}},
    {"TensorArrayV3", {"handle", "flow"}},
    {"TensorArrayGradV3", {"grad_handle", "flow_out"}},
    {"TensorArrayConcatV3", {"value", "lengths"}},
    {"TensorListPopBack", {"output_handle", "tensor"}},
};

/* ---- one function body ---- */

typedef struct Fn {
    TfCtx *c; /* the calling node */
    FnEnv *env;
    const Tensorflow__FunctionDef *fd;
    const Bind *binds;
    int n_binds;
    const IrValue *args;
    int n_args;
    int *slot; /* node index + 1 by name hash, 0 = empty */
    size_t mask;
    unsigned char *state;  /* per node: 0 unseen, 1 on the DFS stack, 2 done */
    const char **out_name; /* per node: first output arg name used (ops outside multi_out) */
    IrValue **outs;
    int *n_outs;
} Fn;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static const char *nd_name(const Tensorflow__NodeDef *nd)
{
    return nd && nd->name ? nd->name : "";
}

static const char *nd_op(const Tensorflow__NodeDef *nd)
{
    return nd && nd->op ? nd->op : "";
}

static int find_node(const Fn *f, const char *name)
{
    for (size_t i = hash_str(name) & f->mask;; i = (i + 1) & f->mask) {
        int v = f->slot[i];
        if (v == 0)
            return -1;
        if (strcmp(nd_name(f->fd->node_def[v - 1]), name) == 0)
            return v - 1;
    }
}

static int find_arg(const Fn *f, const char *name)
{
    const Tensorflow__OpDef *sig = f->fd->signature;
    for (size_t i = 0; i < sig->n_input_arg; i++)
        if (sig->input_arg[i]->name && strcmp(sig->input_arg[i]->name, name) == 0)
            return (int)i;
    return -1;
}

static bool fn_errorf(Fn *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "node 'caller' (Op): function 'f': <message>" */
static bool fn_errorf(Fn *f, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tf_errorf(f->c, "function '%s': %s", fn_name(f->fd), msg);
}

static bool build_index(Fn *f)
{
    size_t n = f->fd->n_node_def;
    size_t cap = 16;
    while (cap < n * 2 + 1)
        cap *= 2;
    Arena *ar = &f->env->scratch;
    f->slot = arena_alloc(ar, cap * sizeof(int));
    f->state = arena_alloc(ar, n + 1);
    f->out_name = arena_alloc(ar, (n + 1) * sizeof *f->out_name);
    f->outs = arena_alloc(ar, (n + 1) * sizeof *f->outs);
    f->n_outs = arena_alloc(ar, (n + 1) * sizeof *f->n_outs);
    if (!f->slot || !f->state || !f->out_name || !f->outs || !f->n_outs)
        return nomem(f->c);
    f->mask = cap - 1;
    for (size_t k = 0; k < n; k++) {
        const Tensorflow__NodeDef *nd = f->fd->node_def[k];
        if (!nd || !nd->name || !*nd->name)
            return fn_errorf(f, "node_def %zu has no name", k);
        if (!nd->op || !*nd->op)
            return fn_errorf(f, "node '%s' has no op", nd->name);
        size_t i = hash_str(nd->name) & f->mask;
        for (; f->slot[i]; i = (i + 1) & f->mask)
            if (strcmp(nd_name(f->fd->node_def[f->slot[i] - 1]), nd->name) == 0)
                return fn_errorf(f, "duplicate node name '%s'", nd->name);
        f->slot[i] = (int)k + 1;
    }
    return true;
}

/* The flat output index of "node:arg:k". */
static bool out_position(Fn *f, int node, const char *arg, int k, const char *ref, int *index)
{
    const Tensorflow__NodeDef *nd = f->fd->node_def[node];
    const char *op = nd_op(nd);
    if (!tf_find_row(op)) {
        const Tensorflow__FunctionDef *callee = find_fn(f->c->lib, op);
        if (callee) {
            const Tensorflow__OpDef *sig = callee->signature;
            for (size_t p = 0; p < sig->n_output_arg; p++)
                if (sig->output_arg[p]->name && strcmp(sig->output_arg[p]->name, arg) == 0) {
                    if (k != 0)
                        return fn_errorf(f, "'%s': output '%s' of function '%s' is one tensor, not a list",
                                         ref, arg, op);
                    *index = (int)p;
                    return true;
                }
            return fn_errorf(f, "'%s': function '%s' (node '%s') has no output '%s'", ref, op, nd_name(nd),
                             arg);
        }
    }
    for (size_t t = 0; t < sizeof multi_out / sizeof multi_out[0]; t++) {
        if (strcmp(multi_out[t].op, op) != 0)
            continue;
        for (int p = 0; p < 7 && multi_out[t].outs[p]; p++)
            if (strcmp(multi_out[t].outs[p], arg) == 0) {
                if (k != 0)
                    return fn_errorf(f, "'%s': output '%s' of %s is one tensor, index %d is out of range",
                                     ref, arg, op, k);
                *index = p;
                return true;
            }
        return fn_errorf(f, "'%s': node '%s' (%s) has no output named '%s'", ref, nd_name(nd), op, arg);
    }
    /* One output arg list (most ops): index k.  Two names on one node mean
     * several lists we do not know the layout of. */
    if (!f->out_name[node])
        f->out_name[node] = arg;
    else if (strcmp(f->out_name[node], arg) != 0)
        return fn_errorf(f,
                         "'%s': node '%s' (%s) is used through outputs '%s' and '%s'; tfcc does not know "
                         "how %s lays out its output lists",
                         ref, nd_name(nd), op, f->out_name[node], arg, op);
    *index = k;
    return true;
}

static bool parse_index(const char *s, int *k)
{
    long v = 0;
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100000000)
            return false;
        v = v * 10 + (*s - '0');
    }
    *k = (int)v;
    return true;
}

/* Resolves a reference: *node = -1 for input arg *k, else output *k of
 * body node *node.  `who` describes the user for messages. */
static bool fn_ref(Fn *f, const char *s, const char *who, int *node, int *k)
{
    char small[256];
    size_t len = strlen(s);
    char *buf = len < sizeof small ? small : arena_alloc(&f->env->scratch, len + 1);
    if (!buf)
        return nomem(f->c);
    memcpy(buf, s, len + 1);
    char *c1 = strchr(buf, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c1) {
        int a = find_arg(f, buf);
        if (a >= 0) {
            *node = -1;
            *k = a;
            return true;
        }
        *node = find_node(f, buf); /* GraphDef style "node" = output 0 */
        *k = 0;
        if (*node >= 0)
            return true;
        return fn_errorf(f, "%s '%s' names no input arg or node", who, s);
    }
    *c1 = 0;
    if (c2)
        *c2 = 0;
    if (!*buf || (c2 && strchr(c2 + 1, ':')))
        return fn_errorf(f, "%s '%s' is not 'arg', 'node:output:index' or '^node'", who, s);
    *node = find_node(f, buf);
    if (*node < 0)
        return fn_errorf(f, "%s '%s' names no node in the function", who, s);
    int idx;
    if (!parse_index(c2 ? c2 + 1 : c1 + 1, &idx))
        return fn_errorf(f, "%s '%s': bad output index", who, s);
    if (!c2) { /* GraphDef style "node:k" */
        *k = idx;
        return true;
    }
    return out_position(f, *node, c1 + 1, idx, s, k);
}

/* The value of a resolved reference. */
static bool ref_value(Fn *f, int node, int k, const char *s, const char *who, IrValue *v)
{
    if (node < 0) {
        *v = f->args[k];
        return true;
    }
    const Tensorflow__NodeDef *nd = f->fd->node_def[node];
    if (k >= f->n_outs[node])
        return fn_errorf(f, "%s '%s' but node '%s' (%s) has %d output%s", who, s, nd_name(nd), nd_op(nd),
                         f->n_outs[node], f->n_outs[node] == 1 ? "" : "s");
    if (!f->outs[node][k].node)
        return fn_errorf(f, "%s '%s': output %d of node '%s' (%s) is not supported", who, s, k, nd_name(nd),
                         nd_op(nd));
    *v = f->outs[node][k];
    return true;
}

/* The ret value string of output arg i. */
static bool ret_of(Fn *f, size_t i, const char **s)
{
    const Tensorflow__OpDef__ArgDef *oa = f->fd->signature->output_arg[i];
    for (size_t r = 0; r < f->fd->n_ret; r++) {
        const Tensorflow__FunctionDef__RetEntry *e = f->fd->ret[r];
        if (e && e->key && oa->name && strcmp(e->key, oa->name) == 0 && e->value) {
            *s = e->value;
            return true;
        }
    }
    return fn_errorf(f, "output '%s' has no ret value", oa->name ? oa->name : "");
}

/* Topological order of the nodes the results need (iterative DFS). */
static bool fn_order(Fn *f, int **order_out, int *n_order)
{
    size_t n = f->fd->n_node_def;
    typedef struct Frame {
        int node;
        size_t pos;
    } Frame;
    Frame *stack = arena_alloc(&f->env->scratch, (n + 1) * sizeof *stack);
    int *order = arena_alloc(&f->env->scratch, (n + 1) * sizeof *order);
    if (!stack || !order)
        return nomem(f->c);
    *n_order = 0;
    const Tensorflow__OpDef *sig = f->fd->signature;
    /* roots: the ret values, then the control rets that assign variables
     * (a TF2 training function's updates; tf_ops_state.c) */
    size_t n_roots = sig->n_output_arg + f->fd->n_control_ret;
    for (size_t r = 0; r < n_roots; r++) {
        const char *s;
        int root, k;
        if (r >= sig->n_output_arg) {
            const Tensorflow__FunctionDef__ControlRetEntry *e = f->fd->control_ret[r - sig->n_output_arg];
            root = e && e->value ? find_node(f, e->value) : -1;
            if (root < 0 || !tf_op_is_assign(nd_op(f->fd->node_def[root])) || f->state[root] == 2)
                continue;
        } else if (!ret_of(f, r, &s) || !fn_ref(f, s, "ret value", &root, &k)) {
            return false;
        }
        if (root < 0 || f->state[root] == 2)
            continue;
        int sp = 0;
        f->state[root] = 1;
        stack[sp++] = (Frame){root, 0};
        while (sp > 0) {
            Frame *fr = &stack[sp - 1];
            const Tensorflow__NodeDef *nd = f->fd->node_def[fr->node];
            if (fr->pos >= nd->n_input) {
                f->state[fr->node] = 2;
                order[(*n_order)++] = fr->node;
                sp--;
                continue;
            }
            const char *in = nd->input[fr->pos] ? nd->input[fr->pos] : "";
            char who[400];
            snprintf(who, sizeof who, "node '%s' (%s): input %zu", nd_name(nd), nd_op(nd), fr->pos);
            fr->pos++;
            int j;
            if (in[0] == '^') {
                if (find_node(f, in + 1) < 0)
                    return fn_errorf(f, "%s '%s' names no node in the function", who, in);
                continue;
            }
            if (!fn_ref(f, in, who, &j, &k))
                return false;
            if (j < 0)
                continue;
            if (f->state[j] == 1)
                return fn_errorf(f, "the body has a cycle through node '%s' (%s)",
                                 nd_name(f->fd->node_def[j]), nd_op(f->fd->node_def[j]));
            if (f->state[j] == 0) {
                f->state[j] = 1;
                stack[sp++] = (Frame){j, 0};
            }
        }
    }
    *order_out = order;
    return true;
}

/* Every needed op has a row or is a library function; each unsupported op
 * type is reported once. */
static bool fn_check_ops(Fn *f, const int *order, int n_order)
{
    const char **seen = arena_alloc(&f->env->scratch, ((size_t)n_order + 1) * sizeof *seen);
    if (!seen)
        return nomem(f->c);
    int n_seen = 0;
    bool ok = true;
    for (int i = 0; i < n_order; i++) {
        const Tensorflow__NodeDef *nd = f->fd->node_def[order[i]];
        const char *op = nd_op(nd);
        if (tf_find_row(op) || find_fn(f->c->lib, op))
            continue;
        bool dup = false;
        for (int j = 0; j < n_seen && !dup; j++)
            dup = strcmp(seen[j], op) == 0;
        if (dup)
            continue;
        seen[n_seen++] = op;
        if (strcmp(op, "SymbolicGradient") == 0)
            ok = fn_errorf(f,
                           "SymbolicGradient (node '%s') is not supported: tfcc does not differentiate "
                           "functions",
                           nd_name(nd));
        else
            ok = fn_errorf(f, "unsupported TensorFlow op '%s' (node '%s')", op, nd_name(nd));
    }
    return ok;
}

static const Tensorflow__AttrValue *bound(const Fn *f, const char *name)
{
    if (name[0] == '$') /* some writers spell placeholders "$T" */
        name++;
    for (int i = f->n_binds - 1; i >= 0; i--)
        if (f->binds[i].key && strcmp(f->binds[i].key, name) == 0)
            return f->binds[i].value;
    const Tensorflow__OpDef *sig = f->fd->signature;
    for (size_t i = 0; i < sig->n_attr; i++)
        if (sig->attr[i] && sig->attr[i]->name && strcmp(sig->attr[i]->name, name) == 0)
            return sig->attr[i]->default_value;
    return NULL;
}

/* A shallow copy of body node nd named "<caller>/<node>", its attr
 * placeholders replaced by the caller's values. */
static bool instantiate(Fn *f, const Tensorflow__NodeDef *nd, Tensorflow__NodeDef **out)
{
    Arena *ar = &f->env->scratch;
    Tensorflow__NodeDef *cp = arena_alloc(ar, sizeof *cp);
    const char *caller = nd_name(f->c->nd);
    size_t len = strlen(caller) + strlen(nd->name) + 2;
    char *name = arena_alloc(ar, len);
    if (!cp || !name)
        return nomem(f->c);
    *cp = *nd;
    snprintf(name, len, "%s/%s", caller, nd->name);
    cp->name = name;
    bool any = false;
    for (size_t i = 0; i < nd->n_attr && !any; i++)
        any = nd->attr[i] && nd->attr[i]->value &&
              nd->attr[i]->value->value_case == TENSORFLOW__ATTR_VALUE__VALUE_PLACEHOLDER;
    if (any) {
        cp->attr = arena_alloc(ar, (nd->n_attr + 1) * sizeof *cp->attr);
        if (!cp->attr)
            return nomem(f->c);
        for (size_t i = 0; i < nd->n_attr; i++) {
            Tensorflow__NodeDef__AttrEntry *e = nd->attr[i];
            cp->attr[i] = e;
            if (!e || !e->value || e->value->value_case != TENSORFLOW__ATTR_VALUE__VALUE_PLACEHOLDER)
                continue;
            const char *ph = e->value->placeholder ? e->value->placeholder : "";
            const Tensorflow__AttrValue *v = bound(f, ph);
            if (!v)
                return fn_errorf(f,
                                 "node '%s' (%s): attribute '%s' is the placeholder '%s', which the caller "
                                 "does not set",
                                 nd->name, nd_op(nd), e->key ? e->key : "", ph);
            Tensorflow__NodeDef__AttrEntry *ne = arena_alloc(ar, sizeof *ne);
            if (!ne)
                return nomem(f->c);
            *ne = *e;
            ne->value = (Tensorflow__AttrValue *)v;
            cp->attr[i] = ne;
        }
    }
    *out = cp;
    return true;
}

/* Checks one signature arg; *dt is its type when concrete (TCRT_INVALID for
 * a type_attr the caller does not bind). */
static bool check_arg(Fn *f, const Tensorflow__OpDef__ArgDef *a, const char *kind, tcrt_dtype *dt)
{
    const char *name = a->name ? a->name : "";
    *dt = TCRT_INVALID;
    if ((a->number_attr && *a->number_attr) || (a->type_list_attr && *a->type_list_attr))
        return fn_errorf(f,
                         "%s arg '%s' is a list of tensors (attribute '%s'); only single-tensor args are "
                         "supported",
                         kind, name, a->number_attr && *a->number_attr ? a->number_attr : a->type_list_attr);
    int t = (int)a->type;
    if (t == 0 && a->type_attr && *a->type_attr) {
        const Tensorflow__AttrValue *v = bound(f, a->type_attr);
        if (!v)
            return true;
        if (v->value_case != TENSORFLOW__ATTR_VALUE__VALUE_TYPE)
            return fn_errorf(f, "%s arg '%s': attribute '%s' is not a type", kind, name, a->type_attr);
        t = (int)v->type;
    }
    char b[40];
    if (is_variant(t) || is_resource(t))
        return true; /* a resource handle is the variable's value (tf_ops_state.c) */
    if (t == 0)
        return fn_errorf(f, "%s arg '%s' has no type", kind, name);
    Status tmp = ST_INIT;
    TfCtx c2 = *f->c;
    c2.st = &tmp;
    if (!tf_dtype(&c2, t, dt))
        return fn_errorf(f, "%s arg '%s' has unsupported dtype %s", kind, name, tf_type_name(t, b, sizeof b));
    return true;
}

static bool lower_partitioned_call(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out,
                                   int *n_out);
static bool lower_call_in(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out, int *n_out);
static bool lower_if(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out, int *n_out);
static bool lower_case(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out, int *n_out);
static bool lower_while(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out, int *n_out);

/* This file's rows as called from a function body (with the FnEnv). */
static const struct {
    const char *op;
    FnLower fn;
} fn_rows[] = {
    {"PartitionedCall", lower_partitioned_call},
    {"StatefulPartitionedCall", lower_partitioned_call},
    {"If", lower_if},
    {"StatelessIf", lower_if},
    {"Case", lower_case},
    {"StatelessCase", lower_case},
    {"While", lower_while},
    {"StatelessWhile", lower_while},
};
#define N_FN_ROWS ((int)(sizeof fn_rows / sizeof fn_rows[0]))

/* Lowers function fd into g with its input args bound to args[n_args];
 * writes one value per output arg to rets (at least TF_MAX_OUTPUTS slots)
 * and their count to *n_rets.  c is the calling node. */
static bool lower_fn(TfCtx *c, FnEnv *env, const Tensorflow__FunctionDef *fd, const Bind *binds, int n_binds,
                     IrGraph *g, const IrValue *args, int n_args, IrValue *rets, int *n_rets)
{
    const char *name = fn_name(fd);
    for (int i = 0; i < env->depth; i++)
        if (strcmp(env->stack[i], name) == 0)
            return tf_errorf(c, "function '%s' calls itself through the library (recursion is not supported)",
                             name);
    if (env->depth >= FN_MAX_DEPTH)
        return tf_errorf(c, "functions nested more than %d deep (the limit) at function '%s'", FN_MAX_DEPTH,
                         name);
    Fn f = {c, env, fd, binds, n_binds, args, n_args, NULL, 0, NULL, NULL, NULL, NULL};
    const Tensorflow__OpDef *sig = fd->signature;

    /* 1. the signature */
    if ((int)sig->n_input_arg != n_args)
        return fn_errorf(&f, "takes %zu input%s, the node passes %d", sig->n_input_arg,
                         sig->n_input_arg == 1 ? "" : "s", n_args);
    if (sig->n_output_arg > TF_MAX_OUTPUTS)
        return fn_errorf(&f, "has %zu outputs (the limit is %d)", sig->n_output_arg, TF_MAX_OUTPUTS);
    for (size_t i = 0; i < sig->n_input_arg; i++) {
        const Tensorflow__OpDef__ArgDef *a = sig->input_arg[i];
        tcrt_dtype dt;
        if (!a || !check_arg(&f, a, "input", &dt))
            return a ? false : fn_errorf(&f, "input arg %zu is empty", i);
        for (size_t j = 0; j < i; j++)
            if (a->name && sig->input_arg[j]->name && strcmp(a->name, sig->input_arg[j]->name) == 0)
                return fn_errorf(&f, "input arg name '%s' appears twice", a->name);
        const IrType *t = ir_value_type(args[i]);
        if (dt != TCRT_INVALID && dt != t->dtype)
            return fn_errorf(&f, "input arg '%s' is %s but the node passes %s (input %zu)", a->name,
                             tcrt_dtype_name(dt), tcrt_dtype_name(t->dtype), i);
    }
    for (size_t i = 0; i < sig->n_output_arg; i++) {
        tcrt_dtype dt;
        if (!sig->output_arg[i])
            return fn_errorf(&f, "output arg %zu is empty", i);
        if (!check_arg(&f, sig->output_arg[i], "output", &dt))
            return false;
    }

    /* 2., 3. order and rows */
    int *order = NULL, n_order = 0;
    if (!build_index(&f) || !fn_order(&f, &order, &n_order) || !fn_check_ops(&f, order, n_order))
        return false;

    /* 4. lower */
    if (env->n_lowered + n_order > IR_MAX_NODES)
        return fn_errorf(&f, "the functions called expand to more than %d nodes (the limit)", IR_MAX_NODES);
    env->n_lowered += n_order;
    env->stack[env->depth++] = name;
    IrValue *buf = arena_alloc(&env->scratch, TF_MAX_OUTPUTS * sizeof *buf);
    bool ok = buf != NULL || nomem(c);
    const char *so = g->cur_origin, *sop = g->cur_origin_op;
    for (int i = 0; ok && i < n_order; i++) {
        int idx = order[i];
        const Tensorflow__NodeDef *nd = fd->node_def[idx];
        IrValue *in = arena_alloc(&env->scratch, (nd->n_input + 1) * sizeof *in);
        Tensorflow__NodeDef *cp = NULL;
        if (!in) {
            ok = nomem(c);
            break;
        }
        int n_in = 0;
        for (size_t pos = 0; ok && pos < nd->n_input; pos++) {
            const char *s = nd->input[pos] ? nd->input[pos] : "";
            if (s[0] == '^')
                continue;
            char who[400];
            snprintf(who, sizeof who, "node '%s' (%s): input %zu", nd_name(nd), nd_op(nd), pos);
            int j, k;
            ok = fn_ref(&f, s, who, &j, &k) && ref_value(&f, j, k, s, who, &in[n_in++]);
        }
        if (!ok || !(ok = instantiate(&f, nd, &cp)))
            break;
        const TfOpRow *row = tf_find_row(nd_op(nd));
        TfCtx bc = {g, c->file, cp, row, c->st, c->lib, c->state};
        ir_graph_set_origin(g, cp->name, nd_op(nd));
        for (int k = 0; k < TF_MAX_OUTPUTS; k++)
            buf[k] = (IrValue){NULL, 0};
        int n_out = 0;
        FnLower inner = NULL;
        if (!row)
            inner = lower_call_in; /* a library function called by name */
        for (int r = 0; row && r < N_FN_ROWS; r++)
            if (strcmp(fn_rows[r].op, row->tf_op) == 0)
                inner = fn_rows[r].fn;
        ok = inner ? inner(&bc, env, in, n_in, buf, &n_out) : row->lower(&bc, in, n_in, buf, &n_out);
        if (!ok || !st_ok(c->st)) {
            if (st_ok(c->st))
                tf_errorf(&bc, "lowering failed");
            ok = false;
            break;
        }
        if (n_out < 0 || n_out > TF_MAX_OUTPUTS) {
            ok = tf_errorf(&bc, "internal: bad output count %d", n_out);
            break;
        }
        f.n_outs[idx] = n_out;
        f.outs[idx] = arena_alloc(&env->scratch, ((size_t)n_out + 1) * sizeof(IrValue));
        if (!f.outs[idx]) {
            ok = nomem(c);
            break;
        }
        memcpy(f.outs[idx], buf, (size_t)n_out * sizeof(IrValue));
    }
    g->cur_origin = so;
    g->cur_origin_op = sop;
    env->depth--;

    /* 5. results */
    for (size_t r = 0; ok && r < sig->n_output_arg; r++) {
        const char *s;
        int j, k;
        tcrt_dtype dt;
        ok = ret_of(&f, r, &s) && fn_ref(&f, s, "ret value", &j, &k) &&
             ref_value(&f, j, k, s, "ret value", &rets[r]) &&
             check_arg(&f, sig->output_arg[r], "output", &dt);
        if (ok && dt != TCRT_INVALID && dt != ir_value_type(rets[r])->dtype)
            ok = fn_errorf(&f, "output '%s' is %s but its ret value '%s' is %s", sig->output_arg[r]->name,
                           tcrt_dtype_name(dt), s, tcrt_dtype_name(ir_value_type(rets[r])->dtype));
    }
    *n_rets = ok ? (int)sig->n_output_arg : 0;
    return ok;
}

/* Binds from a NameAttrList (f: {name, attr}). */
static bool binds_of(TfCtx *c, FnEnv *env, const Tensorflow__NameAttrList *fa, Bind **b, int *n)
{
    *n = (int)fa->n_attr;
    *b = arena_alloc(&env->scratch, (fa->n_attr + 1) * sizeof **b);
    if (!*b)
        return nomem(c);
    for (size_t i = 0; i < fa->n_attr; i++)
        (*b)[i] = (Bind){fa->attr[i] ? fa->attr[i]->key : NULL, fa->attr[i] ? fa->attr[i]->value : NULL};
    return true;
}

/* Lowers the function named by attr `attr` of c's node into g. */
static bool lower_named(TfCtx *c, FnEnv *env, const char *attr, IrGraph *g, const IrValue *args, int n_args,
                        IrValue *rets, int *n_rets)
{
    const Tensorflow__NameAttrList *fa;
    const Tensorflow__FunctionDef *fd;
    Bind *b;
    int nb;
    return func_attr(c, attr, &fa) && get_fn(c, fa->name, attr, &fd) && binds_of(c, env, fa, &b, &nb) &&
           lower_fn(c, env, fd, b, nb, g, args, n_args, rets, n_rets);
}

/* ---- truth values ---- */

/* TensorFlow's ToBool, as If and While apply it to a condition: a rank-0
 * tensor is true when non-zero; a tensor of rank >= 1 is true when it has
 * elements (whatever they are), which the static shape decides. */
static IrValue truth(TfCtx *c, IrGraph *g, IrValue v)
{
    const IrType *t = ir_value_type(v);
    if (t->shape.rank > 0)
        return ir_const_scalar_f(g, TCRT_BOOL, ir_shape_count(&t->shape) > 0, c->st);
    if (t->dtype == TCRT_BOOL)
        return v;
    IrValue zero = ir_const_scalar_f(g, t->dtype, 0, c->st);
    if (!zero.node)
        return zero;
    return ir_binary(g, OP_NE, v, zero, c->st);
}

/* ---- regions ---- */

/* A region of g running the function named by `fa` (the value of attr
 * `attr`): one param per operand (named after the function's input args),
 * its results as fetches; with as_cond, the single result made a bool
 * (While's cond). */
static bool build_region(TfCtx *c, FnEnv *env, const Tensorflow__NameAttrList *fa, const char *attr,
                         const IrValue *ops, int n_ops, bool as_cond, IrGraph **out)
{
    const Tensorflow__FunctionDef *fd;
    Bind *b;
    int nb;
    if (!get_fn(c, fa->name, attr, &fd) || !binds_of(c, env, fa, &b, &nb))
        return false;
    const Tensorflow__OpDef *sig = fd->signature;
    if ((int)sig->n_input_arg != n_ops)
        return tf_errorf(c, "function '%s' (attribute '%s') takes %zu input%s, the node passes %d",
                         fd->signature->name, attr, sig->n_input_arg, sig->n_input_arg == 1 ? "" : "s",
                         n_ops);
    IrGraph *r = ir_region_new(c->g, c->st);
    IrValue *params = arena_alloc(&env->scratch, ((size_t)n_ops + 1) * sizeof *params);
    IrValue *rets = arena_alloc(&env->scratch, TF_MAX_OUTPUTS * sizeof *rets);
    if (!r)
        return false;
    if (!params || !rets)
        return nomem(c);
    for (int i = 0; i < n_ops; i++) {
        const char *pn = sig->input_arg[i] && sig->input_arg[i]->name && *sig->input_arg[i]->name
                             ? sig->input_arg[i]->name
                             : "arg";
        for (int j = 0; j < i; j++)
            if (strcmp(r->feeds[j].name, pn) == 0)
                return tf_errorf(c, "function '%s': input arg name '%s' appears twice", fd->signature->name,
                                 pn);
        params[i] = ir_add_feed(r, pn, ir_value_type(ops[i]), c->st);
        if (!params[i].node)
            return false;
        tf_mark_pending_param(params[i], ops[i]);
    }
    int n_rets;
    if (!lower_fn(c, env, fd, b, nb, r, params, n_ops, rets, &n_rets))
        return false;
    if (as_cond) {
        if (n_rets != 1)
            return tf_errorf(c, "the cond function '%s' has %d outputs, needs 1", fd->signature->name,
                             n_rets);
        rets[0] = truth(c, r, rets[0]);
        if (!rets[0].node || !ir_add_fetch(r, "cond", rets[0], c->st))
            return false;
    } else {
        for (int i = 0; i < n_rets; i++)
            if (!ir_add_fetch(r, sig->output_arg[i]->name ? sig->output_arg[i]->name : "out", rets[i], c->st))
                return false;
    }
    r->fold_on_build = false; /* complete: later passes build into it as into the root */
    *out = r;
    return true;
}

static bool check_count(TfCtx *c, const char *attr, int n, const char *what)
{
    const int *types;
    int m;
    bool present;
    if (!type_list_attr(c, attr, &types, &m, &present))
        return false;
    if (present && m != n)
        return tf_errorf(c, "attribute '%s' lists %d type%s but the node has %d %s", attr, m,
                         m == 1 ? "" : "s", n, what);
    return true;
}

/* ---- rows ---- */

/* PartitionedCall / StatefulPartitionedCall: f inlined into the current graph. */
static bool lower_partitioned_call(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out,
                                   int *n_out)
{
    /* resource inputs are allowed: inlined, a handle is the caller's
     * variable (tf_ops_state.c); as a loop or branch operand it is not */
    if (!check_type_list(c, "Tout", "output") ||
        !check_count(c, "Tin", n_in, "inputs"))
        return false;
    return lower_named(c, env, "f", c->g, in, n_in, out, n_out) && check_count(c, "Tout", *n_out, "outputs");
}

/* A node whose op is a library function: called with the node's attrs. */
static bool lower_call_in(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    const Tensorflow__FunctionDef *fd;
    if (!get_fn(c, nd_op(c->nd), NULL, &fd))
        return false;
    int nb = (int)c->nd->n_attr;
    Bind *b = arena_alloc(&env->scratch, ((size_t)nb + 1) * sizeof *b);
    if (!b)
        return nomem(c);
    for (int i = 0; i < nb; i++)
        b[i] = (Bind){c->nd->attr[i] ? c->nd->attr[i]->key : NULL,
                      c->nd->attr[i] ? c->nd->attr[i]->value : NULL};
    return lower_fn(c, env, fd, b, nb, c->g, in, n_in, out, n_out);
}

/* Inlines the function of fa (the chosen branch of a constant selector). */
static bool inline_branch(TfCtx *c, FnEnv *env, const Tensorflow__NameAttrList *fa, const char *attr,
                          const IrValue *args, int n_args, IrValue *out, int *n_out)
{
    const Tensorflow__FunctionDef *fd;
    Bind *b;
    int nb;
    return get_fn(c, fa->name, attr, &fd) && binds_of(c, env, fa, &b, &nb) &&
           lower_fn(c, env, fd, b, nb, c->g, args, n_args, out, n_out);
}

/* COND over the branch regions; out[] gets its outputs. */
static bool emit_cond(TfCtx *c, IrValue sel, const IrValue *args, int n_args, IrGraph **regions,
                      int n_regions, FnEnv *env, IrValue *out, int *n_out)
{
    IrValue *ops = arena_alloc(&env->scratch, ((size_t)n_args + 2) * sizeof *ops);
    if (!ops)
        return nomem(c);
    ops[0] = sel;
    memcpy(ops + 1, args, (size_t)n_args * sizeof *ops);
    IrNode *n = ir_emit_region(c->g, OP_COND, ops, n_args + 1, regions, n_regions, c->st);
    if (!n)
        return false;
    if (n->n_outputs > TF_MAX_OUTPUTS)
        return tf_errorf(c, "too many outputs (%d)", n->n_outputs);
    for (int i = 0; i < n->n_outputs; i++)
        out[i] = (IrValue){n, i};
    *n_out = n->n_outputs;
    return true;
}

/* If / StatelessIf: input 0 the condition, inputs 1.. the branches' args. */
static bool lower_if(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (n_in < 1)
        return tf_errorf(c, "needs a condition input");
    if (!check_type_list(c, "Tin", "input") || !check_type_list(c, "Tout", "output") ||
        !check_count(c, "Tin", n_in - 1, "inputs after the condition"))
        return false;
    const Tensorflow__NameAttrList *then_fa, *else_fa;
    if (!func_attr(c, "then_branch", &then_fa) || !func_attr(c, "else_branch", &else_fa))
        return false;
    IrValue sel = truth(c, c->g, in[0]);
    if (!sel.node)
        return false;
    double v;
    if (ir_const_scalar(sel, &v)) {
        bool ok = v != 0 ? inline_branch(c, env, then_fa, "then_branch", in + 1, n_in - 1, out, n_out)
                         : inline_branch(c, env, else_fa, "else_branch", in + 1, n_in - 1, out, n_out);
        return ok && check_count(c, "Tout", *n_out, "outputs");
    }
    IrGraph *regions[2];
    if (!build_region(c, env, then_fa, "then_branch", in + 1, n_in - 1, false, &regions[0]) ||
        !build_region(c, env, else_fa, "else_branch", in + 1, n_in - 1, false, &regions[1]))
        return false;
    return emit_cond(c, sel, in + 1, n_in - 1, regions, 2, env, out, n_out) &&
           check_count(c, "Tout", *n_out, "outputs");
}

/* Case / StatelessCase: input 0 the branch index (int32), inputs 1.. the
 * branches' args; an index out of range runs the last branch. */
static bool lower_case(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (n_in < 1)
        return tf_errorf(c, "needs a branch_index input");
    if (!check_type_list(c, "Tin", "input") || !check_type_list(c, "Tout", "output") ||
        !check_count(c, "Tin", n_in - 1, "inputs after the branch index"))
        return false;
    const Tensorflow__AttrValue *bv = node_attr(c->nd, "branches");
    if (!bv)
        return tf_errorf(c, "missing attribute 'branches'");
    if (bv->value_case != TENSORFLOW__ATTR_VALUE__VALUE_LIST || !bv->list)
        return tf_errorf(c, "attribute 'branches' is not a list of functions");
    int n_br = (int)bv->list->n_func;
    if (n_br < 1)
        return tf_errorf(c, "attribute 'branches' lists no function");
    if (n_br > (1 << 16))
        return tf_errorf(c, "attribute 'branches' lists %d functions (too many)", n_br);
    for (int i = 0; i < n_br; i++)
        if (!bv->list->func[i] || !bv->list->func[i]->name || !*bv->list->func[i]->name)
            return tf_errorf(c, "attribute 'branches': entry %d names no function", i);
    IrValue sel = in[0];
    const IrType *st = ir_value_type(sel);
    if (ir_shape_count(&st->shape) != 1)
        return tf_errorf(c, "branch_index must be a scalar, got %d elements",
                         (int)ir_shape_count(&st->shape));
    if (st->dtype != TCRT_I32) {
        if (st->dtype != TCRT_I64 && st->dtype != TCRT_I16 && st->dtype != TCRT_I8 && st->dtype != TCRT_U8 &&
            st->dtype != TCRT_U16)
            return tf_errorf(c, "branch_index is %s, needs an integer", tcrt_dtype_name(st->dtype));
        sel = ir_cast(c->g, sel, TCRT_I32, c->st);
        if (!sel.node)
            return false;
    }
    double v;
    if (ir_const_scalar(sel, &v) || n_br == 1) {
        int b = n_br == 1 || v < 0 || v >= n_br ? n_br - 1 : (int)v;
        return inline_branch(c, env, bv->list->func[b], "branches", in + 1, n_in - 1, out, n_out) &&
               check_count(c, "Tout", *n_out, "outputs");
    }
    IrGraph **regions = arena_alloc(&env->scratch, (size_t)n_br * sizeof *regions);
    if (!regions)
        return nomem(c);
    for (int i = 0; i < n_br; i++)
        if (!build_region(c, env, bv->list->func[i], "branches", in + 1, n_in - 1, false, &regions[i]))
            return false;
    return emit_cond(c, sel, in + 1, n_in - 1, regions, n_br, env, out, n_out) &&
           check_count(c, "Tout", *n_out, "outputs");
}

/* While / StatelessWhile: the inputs are the loop variables. */
static bool lower_while(TfCtx *c, FnEnv *env, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (!check_type_list(c, "T", "loop variable") || !check_count(c, "T", n_in, "loop variables"))
        return false;
    const Tensorflow__NameAttrList *cond_fa, *body_fa;
    if (!func_attr(c, "cond", &cond_fa) || !func_attr(c, "body", &body_fa))
        return false;
    IrGraph *regions[2];
    if (!build_region(c, env, cond_fa, "cond", in, n_in, true, &regions[0]) ||
        !build_region(c, env, body_fa, "body", in, n_in, false, &regions[1]))
        return false;
    IrNode *n = ir_emit_region(c->g, OP_WHILE, in, n_in, regions, 2, c->st);
    if (!n)
        return false;
    for (int i = 0; i < n->n_outputs; i++)
        out[i] = (IrValue){n, i};
    *n_out = n->n_outputs;
    return true;
}

/* The outermost call of a row: a fresh FnEnv, freed afterwards. */
static bool with_env(TfCtx *c, FnLower fn, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    FnEnv env;
    memset(&env, 0, sizeof env);
    arena_init(&env.scratch, NULL);
    bool ok = fn(c, &env, in, n_in, out, n_out);
    arena_reset(&env.scratch);
    return ok;
}

#define ROW_ENTRY(name, fn)                                                                                  \
    static bool name(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)                        \
    {                                                                                                        \
        return with_env(c, fn, in, n_in, out, n_out);                                                        \
    }
ROW_ENTRY(row_call, lower_partitioned_call)
ROW_ENTRY(row_if, lower_if)
ROW_ENTRY(row_case, lower_case)
ROW_ENTRY(row_while, lower_while)
ROW_ENTRY(row_lib_call, lower_call_in)

/* The row for a node whose op names a function of lib (TensorFlow calls a
 * library function by using its name as the op type), or NULL. */
const TfOpRow *tf_func_call_row(const Tensorflow__FunctionDefLibrary *lib, const char *op)
{
    static const TfOpRow call_row = {"(library function)", row_lib_call, "", "the function inlined"};
    return find_fn(lib, op) ? &call_row : NULL;
}

const TfOpRow tf_ops_func[] = {
    {"Case", row_case, "", "cond (int32 selector) over the branch regions; inlined when constant"},
    {"If", row_if, "", "cond over then/else regions; inlined when the condition is constant"},
    {"PartitionedCall", row_call, "", "the function inlined"},
    {"StatefulPartitionedCall", row_call, "", "the function inlined"},
    {"StatelessCase", row_case, "", "cond (int32 selector) over the branch regions; inlined when constant"},
    {"StatelessIf", row_if, "", "cond over then/else regions; inlined when the condition is constant"},
    {"StatelessWhile", row_while, "", "while (cond and body regions)"},
    {"While", row_while, "", "while (cond and body regions)"},
    {NULL, NULL, NULL, NULL},
};

bool tf_op_supported_in(const Tensorflow__GraphDef *gd, const char *tf_op)
{
    return tf_op_supported(tf_op) || (gd && tf_func_call_row(gd->library, tf_op) != NULL);
}
