/* ir/ir.h - tfcc's intermediate representation: the one public header of ir/.
 *
 * An IrGraph is a list of IrNodes in creation order (which is a topological
 * order: a node is created after its inputs).  Each node applies one
 * primitive from ir/ops.def to typed inputs (node + output index) and has
 * typed, statically shaped outputs.  Nodes remember the TensorFlow node they
 * came from (origin) for messages and kernel comments.  Everything lives in
 * the graph's arena and dies with it.
 *
 * Sections: status.c, arena.c, ops.c, graph.c (builder), shape.c (shape
 * rules), fold.c (evaluation through the runtime's reference kernels),
 * device.c (TensorFlow device names), verify.c, print.c (text and DOT),
 * parse.c (text back to a graph).
 */
#ifndef IR_IR_H
#define IR_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tcrt.h"
#include "tcrt_kernels.h"

#define IR_MAX_RANK TCRT_MAX_RANK
#define IR_MAX_IPARAM TCRT_MAX_IPARAM
#define IR_MAX_FPARAM TCRT_MAX_FPARAM
/* Limits on what a model file may ask for (checked, documented in docs/limits.md). */
#define IR_MAX_ELEMENTS ((int64_t)1 << 34)     /* elements in one tensor */
#define IR_MAX_FOLD_BYTES ((size_t)64 << 20)    /* largest constant folding result */
/* All folding results of one graph together (IrGraph.fold_bytes); past it
 * only results of at most IR_FOLD_SMALL_BYTES (shape arithmetic) still fold. */
#define IR_MAX_FOLD_TOTAL_BYTES ((size_t)256 << 20)
#define IR_FOLD_SMALL_BYTES ((size_t)256)
/* Nodes in one graph (about 550 bytes each): one TF node can lower to a
 * thousand (Split), so a small file could otherwise ask for gigabytes. */
#define IR_MAX_NODES (1 << 21)
/* Regions nested inside regions (a loop in a cond in a loop is depth 3). */
#define IR_MAX_REGION_DEPTH 64

/* ---- status.c ---------------------------------------------------------- */

enum { ST_OK = 0, ST_ERROR = 1, ST_NOMEM = 2, ST_UNSUPPORTED = 3, ST_IO = 4 };

/* A sticky error record: the first code wins, messages accumulate (one per
 * line, at most sizeof msg bytes). */
typedef struct Status {
    int code;
    int n_errors;
    char msg[4096];
} Status;

#define ST_INIT {0, 0, {0}}
/* Records an error; always returns false so callers can `return st_errorf(...)`. */
bool st_errorf(Status *st, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool st_verrorf(Status *st, int code, const char *fmt, va_list ap);
static inline bool st_ok(const Status *st) { return st->code == ST_OK; }
/* Prefixes every message recorded so far with `prefix` (e.g. the file name). */
void st_prefix(Status *st, const char *prefix);

/* ALWAYS(x): x must hold for input-derived data; asserts in debug builds,
 * records an error in release. */
#ifdef NDEBUG
#define ALWAYS(st, x) ((x) ? true : st_errorf((st), ST_ERROR, "internal check failed: %s (%s:%d)", #x, __FILE__, __LINE__))
#else
#include <assert.h>
#define ALWAYS(st, x) ((x) ? true : (assert(!#x), false))
#endif

/* ---- arena.c ----------------------------------------------------------- */

/* Injected allocator (Lua style). NULL means malloc/realloc/free. */
typedef struct XxAlloc {
    void *(*alloc)(void *ud, size_t n);
    void (*free)(void *ud, void *p);
    void *ud;
} XxAlloc;

typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
    const XxAlloc *a;
    ArenaBlock *head;
    size_t used;                  /* bytes handed out, for stats */
} Arena;

void arena_init(Arena *ar, const XxAlloc *a);
/* Zeroed, 16-byte aligned (64 for n >= 4096); NULL on OOM. */
void *arena_alloc(Arena *ar, size_t n);
char *arena_strdup(Arena *ar, const char *s);
/* Zeroed, aligned to `align` (a power of two, at least 16); NULL on OOM. */
void *arena_alloc_align(Arena *ar, size_t n, size_t align);
void arena_reset(Arena *ar);      /* frees every block */
/* Fails allocation number N (1-based) when XX_FAIL_ALLOC=N is set by tests
 * through xx_fail_alloc_set (never read from the environment by the library). */
void xx_fail_alloc_set(long n);
void *xx_malloc(size_t n);        /* the only malloc call sites go through here */
void xx_free(void *p);

/* ---- ops.c ------------------------------------------------------------- */

typedef enum Op {
#define X(e, name, arity, nout, kind, shape, ref, expr, flags) OP_##e,
#include "ir/ops.def"
#undef X
    OP_COUNT
} Op;

typedef enum OpKind { K_LEAF, K_ELEM, K_REDUCE, K_CONTRACT, K_WINDOW, K_MOVE, K_MISC } OpKind;

enum {
    F_NONE = 0,
    F_COMMUT = 1 << 0,        /* inputs may be swapped (CSE canonicalizes) */
    F_EFFECT = 1 << 1,        /* never folded, merged or removed as a duplicate */
    F_BOOLOUT = 1 << 2,       /* output dtype is bool */
    F_FLOAT = 1 << 3,         /* inputs must be floating point */
    F_DTYPE_GIVEN = 1 << 4,   /* output dtype set by the builder */
};

typedef struct IrGraph IrGraph;
typedef struct IrNode IrNode;
typedef bool (*IrShapeRule)(IrGraph *g, IrNode *n, Status *st);

typedef struct OpInfo {
    const char *name;
    int arity;                /* -1 = variadic */
    int n_outputs;
    OpKind kind;
    IrShapeRule shape_rule;
    tcrt_kernel_fn ref_kernel; /* NULL for leaf and elementwise */
    const char *ref_kernel_name; /* "tcrt_ref_matmul" or NULL */
    const char *c_expr;       /* elementwise expression over A, B, C, or NULL */
    unsigned flags;
} OpInfo;

const OpInfo *ir_op_info(Op op);
const char *ir_op_name(Op op);
bool ir_op_from_name(const char *name, Op *out);
const char *ir_kind_name(OpKind k);

/* ---- graph.c ----------------------------------------------------------- */

/* An affine expression c + sum k[t] * sym(sym[t]) over the graph's symbols
 * (ir/dyn.c: sizes known only at run time); n == 0: the constant c; n < 0
 * (IR_AFF_UNKNOWN): nothing is known (element knowledge only). */
#define IR_AFF_TERMS 4
#define IR_AFF_UNKNOWN (-1)
typedef struct IrAff {
    int64_t c;
    int n;
    int sym[IR_AFF_TERMS];
    int64_t k[IR_AFF_TERMS];
} IrAff;

/* dims[d] is the extent, except for a value with a data-dependent size
 * (has_dyn, ir/dyn.c): dims[dyn_dim] is then the extent's upper bound and
 * `dyn` the extent itself; every dim before dyn_dim is 1.  A zeroed tail
 * (has_dyn false) is the static shape every rule builds by default. */
typedef struct IrShape {
    int rank;
    int64_t dims[IR_MAX_RANK];
    bool has_dyn;
    int dyn_dim;
    IrAff dyn;
} IrShape;

typedef struct IrType {
    tcrt_dtype dtype;
    IrShape shape;
} IrType;

typedef struct IrValue {
    IrNode *node;
    int index;                    /* which output of node */
} IrValue;

typedef struct IrParams {
    int64_t i[IR_MAX_IPARAM];
    double f[IR_MAX_FPARAM];
} IrParams;

/* Per-output results of scheduling/planning (passes/memplan.c). */
typedef struct IrOut {
    IrType type;
    int64_t offset;               /* arena byte offset (or weights offset for CONST), -1 unplanned */
    IrAff *sv;                    /* small int values: what is known of each element (ir/dyn.c), or NULL */
    int n_sv;
} IrOut;

struct IrNode {
    int id;                       /* unique, stable within the graph */
    Op op;
    const char *origin;           /* TF node name it came from (owned by graph) */
    const char *origin_op;        /* TF op type ("Conv2D") */
    int n_inputs;
    IrValue *inputs;
    int n_ctrl;                   /* control dependencies */
    IrNode **ctrl;
    int n_outputs;
    IrOut *out;
    IrParams p;
    void *data;                   /* CONST: element data, owned by the graph */
    size_t data_bytes;
    const char *device;           /* requested device or NULL; after passes/place: the
                                   * assigned device, canonical (ir/device.c) */
    const char **coloc;           /* TF `_class` "loc:@name": nodes to colocate with (TF names) */
    int n_coloc;
    const char *key;              /* SEND, RECV: the rendezvous key (passes/partition.c) */
    int64_t workspace_bytes;      /* scratch the kernel needs during the call */
    int64_t workspace_offset;
    int n_regions;                /* WHILE, COND: nested graphs (see "regions") */
    IrGraph **regions;
    bool dead;                    /* removed; skipped by iteration, swept by ir_graph_compact */
};

typedef struct IrFeed {
    const char *name;             /* "input:0" */
    IrNode *arg;                  /* the OP_ARG node */
} IrFeed;

typedef struct IrFetch {
    const char *name;             /* "Softmax:0" */
    IrValue value;
} IrFetch;

struct IrGraph {
    Arena arena;
    IrNode **nodes;               /* creation order = topological order */
    int n_nodes, cap_nodes;
    int next_id;
    IrFeed *feeds;
    int n_feeds, cap_feeds;
    IrFetch *fetches;
    int n_fetches, cap_fetches;
    const char *name;             /* model name (C identifier) */
    const char *cur_origin;       /* origin stamped on new nodes */
    const char *cur_origin_op;
    const char *cur_device;       /* device request stamped on new nodes (NULL: none);
                                   * the gradient pass colocates adjoints with their
                                   * forward nodes through it */
    bool fold_on_build;           /* ir_emit folds nodes whose inputs are all constant */
    int64_t arena_bytes;          /* set by memory planning */
    int64_t weights_bytes;
    int64_t unplanned_bytes;      /* sum of every planned buffer, for stats */
    size_t fold_bytes;            /* bytes of constants made by ir_fold_node so far */
    /* Regions: a region's parent graph and nesting depth (0 = top level).
     * Every region graph of a tree is owned by its root (freed with it). */
    IrGraph *parent;
    int depth;
    IrGraph **owned;              /* root only: every region graph of the tree */
    int n_owned, cap_owned;
    struct IrSym *syms;           /* root only: run-time sizes (ir/dyn.c) */
    int n_syms, cap_syms;
};

/* Returns NULL (and st set) on OOM. Free with ir_graph_free. */
IrGraph *ir_graph_new(const XxAlloc *a, Status *st);
void ir_graph_free(IrGraph *g);
void ir_graph_set_origin(IrGraph *g, const char *tf_name, const char *tf_op);
/* The origin stamped on new nodes, saved and set to `like`'s by ir_origin_like,
 * put back by ir_origin_restore: a pass that rebuilds a node credits what it
 * emits to the node it stands for (errors and --profile name that node). */
typedef struct IrOrigin {
    const char *origin, *op;
} IrOrigin;
static inline IrOrigin ir_origin_like(IrGraph *g, const IrNode *like)
{
    IrOrigin saved = {g->cur_origin, g->cur_origin_op};
    g->cur_origin = like->origin;
    g->cur_origin_op = like->origin_op;
    return saved;
}
static inline void ir_origin_restore(IrGraph *g, IrOrigin saved)
{
    g->cur_origin = saved.origin;
    g->cur_origin_op = saved.op;
}

/* Builds a node: checks arity and dtypes, runs the op's shape rule (and, with
 * g->fold_on_build, folds when every input is constant, returning the CONST
 * node instead; single-output ops only; a node whose kernel rejects the
 * values stays unfolded).  Not for OP_CONST (use ir_const).
 * An undefined input ({NULL,0} from an earlier failed emit) returns NULL and
 * records nothing new if st already holds an error.  Shape rules normalize
 * negative axes in the node's params (argmax, concat, gather).  `given` supplies output types for ops whose shape or dtype
 * cannot be derived (shape_given rules, F_DTYPE_GIVEN, COPY, SLICE, TILE,
 * BROADCAST, RESIZE, CONV2D_TRANSPOSE); it may be NULL otherwise.
 * Errors name the origin node: "node 'x' (Add): shapes [2] and [3] do not broadcast".
 * Returns the node (owned by g) or NULL. */
IrNode *ir_emit(IrGraph *g, Op op, const IrValue *inputs, int n_inputs, const IrParams *p,
                const IrType *given, Status *st);
/* ir_emit and return output 0 ({NULL,0} on error). */
IrValue ir_emit1(IrGraph *g, Op op, const IrValue *inputs, int n_inputs, const IrParams *p,
                 const IrType *given, Status *st);
/* Convenience forms. */
IrValue ir_unary(IrGraph *g, Op op, IrValue a, Status *st);
IrValue ir_binary(IrGraph *g, Op op, IrValue a, IrValue b, Status *st);
IrValue ir_cast(IrGraph *g, IrValue a, tcrt_dtype to, Status *st);
IrValue ir_reshape(IrGraph *g, IrValue a, const IrShape *to, Status *st);
/* Constants: data is copied into the graph. */
IrValue ir_const(IrGraph *g, tcrt_dtype dt, const IrShape *s, const void *data, Status *st);
IrValue ir_const_scalar_f(IrGraph *g, tcrt_dtype dt, double v, Status *st); /* rank 0 */
IrValue ir_const_i64s(IrGraph *g, tcrt_dtype dt, const int64_t *v, int n, Status *st); /* rank 1 */
/* Feeds: creates an OP_ARG node of the given type and registers it under name. */
IrValue ir_add_feed(IrGraph *g, const char *name, const IrType *t, Status *st);
bool ir_add_fetch(IrGraph *g, const char *name, IrValue v, Status *st);
void ir_add_ctrl(IrGraph *g, IrNode *n, IrNode *dep, Status *st);

/* Queries. */
static inline const IrType *ir_value_type(IrValue v) { return &v.node->out[v.index].type; }
bool ir_is_const(IrValue v);
/* Reads an integer constant (any int dtype, any rank) into out as int64;
 * false if v is not constant or has more than max elements. */
bool ir_const_ints(IrValue v, int64_t *out, int max, int *n);
/* Reads a scalar or single-element numeric constant as double. */
bool ir_const_scalar(IrValue v, double *out);
int64_t ir_shape_count(const IrShape *s);     /* product of dims (1 for rank 0) */
/* Product with overflow and IR_MAX_ELEMENTS checks; false when too big. */
bool ir_shape_count_checked(const IrShape *s, int64_t *out);
bool ir_shape_eq(const IrShape *a, const IrShape *b);
size_t ir_type_bytes(const IrType *t);
/* Formats "[1,224,224,3]" into buf (returns buf). */
const char *ir_shape_str(const IrShape *s, char *buf, size_t n);
IrShape ir_shape_make(int rank, const int64_t *dims);

/* ---- regions ----
 * WHILE and COND own nested graphs, "regions" (MLIR's isolated-from-above
 * regions): a region is an IrGraph whose feeds are its parameters (OP_ARG,
 * p.i[0] = parameter index) and whose fetches are its results; it reads
 * nothing of the enclosing graph except through its parameters, so every
 * pass runs on it as on any graph.  Values enter as the region op's
 * operands; loop-invariant values are loop variables the body returns
 * unchanged.
 *   WHILE(x0..xn-1) -> n outputs, the final x.  regions[0] cond: n params,
 *     one result (bool scalar); regions[1] body: n params, n results of
 *     the params' types.
 *   COND(sel, x0..xm-1) -> the chosen branch's results.  regions[k], k >= 1
 *     branches: m params of x's types, results of equal types in every
 *     branch.  sel is a bool scalar (true: branch 0, false: branch 1, so
 *     exactly 2 branches) or an int32 scalar (branch sel; out of range: the
 *     last branch, as TensorFlow's Case).
 * Region graphs are created with ir_region_new(parent) and filled like any
 * graph (ir_add_feed for each parameter in order, ir_add_fetch for each
 * result); ir_emit_region checks them against the operands and sets the
 * output types. */
IrGraph *ir_region_new(IrGraph *parent, Status *st);
IrNode *ir_emit_region(IrGraph *g, Op op, const IrValue *inputs, int n_inputs, IrGraph **regions,
                       int n_regions, Status *st);
/* The root of g's region tree. */
IrGraph *ir_graph_root(IrGraph *g);
/* Copies region's nodes into g (which must be region's parent or an
 * ancestor's copy target), with region's params bound to args[] and writes
 * its results to results[region->n_fetches].  Nested regions are shared,
 * not copied.  Used to inline a COND whose selector is constant. */
bool ir_inline_region(IrGraph *g, const IrGraph *region, const IrValue *args, IrValue *results,
                      Status *st);

/* Uses: ir_replace_uses redirects every use of `from` to `to` (node inputs,
 * fetches, and control inputs when `from` has a single output).  It does not
 * reorder: if `to` was created after a user, call ir_graph_compact. */
void ir_replace_uses(IrGraph *g, IrValue from, IrValue to);
/* Number of live nodes using any output of n (fetches count too). */
int ir_use_count(const IrGraph *g, const IrNode *n);
/* Drops dead nodes from g->nodes (ids unchanged) and restores a topological
 * order (stable: an ordered list stays as it is).  Call it after a pass that
 * appends nodes used by earlier ones (folding appends its CONSTs at the end). */
void ir_graph_compact(IrGraph *g);
int ir_graph_live_count(const IrGraph *g);

#define IR_FOR_EACH(g, n)                                                                          \
    for (int n##_i_ = 0; n##_i_ < (g)->n_nodes; n##_i_++)                                          \
        for (IrNode *n = (g)->nodes[n##_i_]; n && !n->dead; n = NULL)

/* ---- shape.c ----------------------------------------------------------- */

/* Runs n's shape rule again (used by the verifier and after rewrites). */
bool ir_infer_node(IrGraph *g, IrNode *n, Status *st);
/* NumPy broadcast of two shapes; false if they do not broadcast. */
bool ir_broadcast_shapes(const IrShape *a, const IrShape *b, IrShape *out);

/* ---- dyn.c: bounded data-dependent sizes ---------------------------------
 * A size known only at run time (NonMaxSuppressionV5's count without
 * padding, Where's count, a Range whose limit is computed) is a symbol: the
 * run-time value of an integer scalar the graph computes (IrSym.src), read
 * right after its producer runs (codegen: sym[k]) and checked against the
 * bounds [lo, hi] that interval analysis proved at compile time.
 * A value may have one data-dependent extent, in its outermost dimension
 * with more than one element (IrShape.has_dyn): buffers are planned at the
 * bound and the valid elements are the first ones, so elementwise kernels
 * run over the bound unchanged and every other kernel gets the run-time
 * extent in its descriptor.  Small integer values (shapes, sizes, paddings;
 * at most IR_SV_MAX elements) carry what is known of each element
 * (IrOut.sv), so shape arithmetic such as Shape -> StridedSlice -> Sub ->
 * Pack -> Pad simplifies symbolically: padding a size-n tensor to 100 rows
 * gives a static [100] again.  Only the ops whose rules know about it
 * accept a data-dependent input; the others stop with "node 'x' (Op):
 * input 0 has a data-dependent size (...), which <op> does not support".
 * Regions (loops, conds) and fetches need static shapes (errors say so). */
#define IR_SV_MAX 16
/* PAD's after-padding param (p.i[2d+1]) when the padding is computed at
 * run time: the given output shape holds the extent, the emitter the
 * arithmetic. */
#define IR_PAD_RUNTIME (-1)
typedef struct IrSym {
    IrValue src;                  /* int32/int64 scalar whose run-time value this is */
    int64_t lo, hi;               /* proved bounds, checked at run time */
} IrSym;

IrAff ir_aff_const(int64_t c);
IrAff ir_aff_sym(int sym);
static inline bool ir_aff_is_const(const IrAff *a) { return a->n == 0; }
bool ir_aff_eq(const IrAff *a, const IrAff *b);
/* out = a + k * b, simplified (terms that cancel vanish); false when it
 * needs more than IR_AFF_TERMS terms or overflows. */
bool ir_aff_add(const IrAff *a, const IrAff *b, int64_t k, IrAff *out);
bool ir_aff_scale(const IrAff *a, int64_t k, IrAff *out);
/* Bounds of a over its symbols' bounds (g: any graph of the tree). */
void ir_aff_range(const IrGraph *g, const IrAff *a, int64_t *lo, int64_t *hi);
/* "(3 + s1 - s2)" / "sym[1]" forms: text for messages and the IR printer;
 * C for the emitter (symbols as sym[k]). */
const char *ir_aff_str(const IrAff *a, char *buf, size_t n);

/* Sets dim d of s to extent e: static when e is constant, else data-dependent
 * with bound hi(e); false with a message when d is not the outermost dim
 * with more than one element, another dim is already dynamic, or e's upper
 * bound is negative or over IR_MAX_ELEMENTS. */
bool ir_shape_set_extent(const IrGraph *g, IrShape *s, int d, const IrAff *e, char *why, size_t n_why);
/* The extent of dim d as an expression (constant unless dynamic). */
IrAff ir_shape_extent(const IrShape *s, int d);
static inline bool ir_type_has_dyn(const IrType *t) { return t->shape.has_dyn; }
bool ir_node_has_dyn(const IrNode *n);  /* any input or output data-dependent */

/* What is known of the elements of integer value v (at most max): from a
 * CONST's data, or v's sv; unknown elements have n == IR_AFF_UNKNOWN.
 * False when v is not an integer value of at most max elements or nothing
 * at all is known. */
bool ir_value_sv(const IrGraph *g, IrValue v, IrAff *out, int max, int *n);
/* Whole-value interval of an integer (or bool) value by interval analysis;
 * false when unbounded or unknown. */
bool ir_value_range(const IrGraph *g, IrValue v, int64_t *lo, int64_t *hi);
/* The symbol for scalar int value v (the same one on every call), as an
 * expression; v's bounds come from ir_value_range and must be finite (else
 * an error naming v's node: "size depends on data with no known bound"). */
bool ir_sym_of(IrGraph *g, IrValue v, IrAff *out, Status *st);
/* Element i of v as an expression: known from sv, else a symbol for the
 * element (a SLICE of v when it has more than one). */
bool ir_value_elem(IrGraph *g, IrValue v, int64_t i, IrAff *out, Status *st);
/* A value of dtype dt and shape s holding the expressions e[count(s)]:
 * a CONST when all are constant, else an OP_SYMVAL node. */
IrValue ir_sv_value(IrGraph *g, tcrt_dtype dt, const IrShape *s, const IrAff *e, Status *st);

/* Called by ir_emit after n's shape rule: propagates and checks
 * data-dependent extents (errors for ops that do not support them) and
 * computes n's element knowledge; when every element of n's output is known
 * it sets *replace to the CONST or SYMVAL standing for it (n is not added). */
bool ir_dyn_node(IrGraph *g, IrNode *n, const IrType *given, IrNode **replace, Status *st);

/* ---- fold.c ------------------------------------------------------------ */

/* Evaluates n (all inputs CONST) and returns a new CONST value per output in
 * outv[n->n_outputs]. False with st set on kernel error; false with st clean
 * when n cannot be folded (effects, too large). */
bool ir_fold_node(IrGraph *g, IrNode *n, IrValue *outv, Status *st);
/* Evaluates one elementwise op over concrete tensors (used by fold and tests):
 * inputs already broadcast-compatible; out preallocated. */
bool ir_eval_elementwise(Op op, const tcrt_tensor *in, int n_in, tcrt_tensor *out, Status *st);

/* ---- device.c ---------------------------------------------------------- */

/* A TensorFlow device name, field by field (DeviceNameUtils::ParsedName):
 * /job:J/replica:R/task:T/device:TYPE:ID, each field optional. */
#define IR_DEV_MAX_NAME 64
#define IR_DEV_MAX_STR 256        /* canonical text of any parsed name fits */
typedef struct IrDevName {
    bool has_job, has_replica, has_task, has_type, has_id;
    char job[IR_DEV_MAX_NAME];
    int replica, task;
    char type[IR_DEV_MAX_NAME];   /* "CPU", "GPU" (cpu/gpu upper-cased), ... */
    int id;
} IrDevName;

/* Parses a full, partial or legacy name ("/job:w/task:1/device:GPU:0",
 * "/device:GPU:1", "/gpu:0", "/cpu:0", "GPU:0", "/job:ps/task:1"; "" and
 * NULL: nothing); false when malformed. */
bool ir_dev_parse(const char *s, IrDevName *d);
bool ir_dev_is_full(const IrDevName *d);
bool ir_dev_is_empty(const IrDevName *d);
/* Fills d's missing fields from base. */
void ir_dev_complete(IrDevName *d, const IrDevName *base);
/* Merges other into target (fields set on both must agree); false with a
 * reason in why ("incompatible types: '/device:GPU:0' and '/device:CPU:0'"). */
bool ir_dev_merge(IrDevName *target, const IrDevName *other, char *why, size_t n);
/* Whether every field set in pattern has the same value in name. */
bool ir_dev_matches(const IrDevName *pattern, const IrDevName *name);
/* Same job, replica and task (one address space). */
bool ir_dev_same_task(const IrDevName *a, const IrDevName *b);
/* Canonical text of the fields present (writes buf, returns it). */
const char *ir_dev_str(const IrDevName *d, char *buf, size_t n);
/* This process's task: /job:localhost/replica:0/task:0. */
const IrDevName *ir_dev_local_task(void);
/* Parses s, completes it with the local task, writes the canonical text. */
bool ir_dev_canonical(const char *s, char *buf, size_t n);

/* ---- verify.c ---------------------------------------------------------- */

/* Read-only checks: input references live and earlier in order, arity, dtypes
 * and shapes agree with the shape rules, fetches live.  Messages read
 * "node %12 'origin' (op): ...". */
bool ir_verify(const IrGraph *g, Status *st);

/* ---- print.c / parse.c ------------------------------------------------- */

/* Stable text form: one node per line, "%<id> = <op>(<inputs>) {params} : <dtype>[dims]  # origin".
 * CONST data is summarized unless with_data. */
void ir_print(const IrGraph *g, FILE *f, bool with_data);
void ir_print_dot(const IrGraph *g, FILE *f);
/* Parses ir_print(..., true) output back into a graph (NULL on error). */
IrGraph *ir_parse(const char *text, const char *filename, Status *st);

#endif
