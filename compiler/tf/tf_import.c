/* compiler/tf/tf_import.c - a TensorFlow GraphDef to an IrGraph.
 *
 * Algorithm:
 *   1. Index the nodes by name (open-addressing hash map; duplicate names are
 *      an error).
 *   2. Resolve the feeds: each fed tensor "node:k" becomes an OP_ARG
 *      (ir_add_feed) whose dtype comes from the spec or the node's dtype/T
 *      attr and whose shape comes from the spec, the Placeholder's `shape`
 *      attr or its `_output_shapes`.  Feeds cut the graph: nothing upstream
 *      of a fed tensor is visited (TensorFlow's partial execution).
 *   3. Walk back from the fetches with an explicit stack (no recursion:
 *      hostile graphs can be millions of nodes deep), three-colour DFS, so
 *      the post-order is a topological order of exactly the needed nodes and
 *      a grey node met again is a cycle.  A v1 loop's back edge (a Merge's
 *      NextIteration input) is not followed from the Merge: the
 *      NextIteration is walked afterwards as a root of its own, so the order
 *      stays topological with back edges removed.  Control inputs ("^x")
 *      must name a node but are not followed (an inference graph's control
 *      edges guard training-time side effects we never run), except on a
 *      node without data inputs whose control input is a control-flow pivot
 *      (a Switch/Merge/Enter..., or an Identity of one): that edge places a
 *      branch or loop constant in its cond branch or loop frame.  Targets
 *      (TfImportOptions.targets, --train-op) are walked first, and in their
 *      closure every control input is followed (TensorFlow runs them).  A
 *      control input that assigns a variable the node reads (directly, or
 *      a NoOp grouping such assignments) is followed too: the node reads
 *      the new value ("read after assign", see "variables").  Then the
 *      initializers of the needed variables the checkpoint lacks are
 *      walked as roots of their own.
 *   4. Look every needed op up in the tables (core rows here, then
 *      tf_ops_nn, tf_ops_array, tf_ops_func, tf_ops_list) and report every
 *      unsupported op type in one run before failing.
 *   5. Control-flow analysis (v1 Switch/Merge/Enter/Exit/NextIteration/
 *      LoopCond), one forward pass over the order: each node gets a frame
 *      (root, a loop frame named by its Enter, or "flex" for constants
 *      without inputs, which may be used anywhere) and a cond state, the
 *      stack of (Switch predicate, branch) pairs it lies under (a Switch on
 *      a predicate pushes, the Merge of that cond pops).  Malformed frames
 *      (Exit without Enter, mixed frames, a loop without LoopCond, ...) are
 *      reported here, naming the nodes.
 *   6. Lower, functionalizing control flow the way TensorFlow does before
 *      XLA.  Lowering happens in contexts: the top-level graph, and the
 *      region graphs of each WHILE (cond, body) and COND (two branches).
 *      Each context keeps its own map from TF node to IR values (one TF
 *      node may be lowered in several regions).  A context orders the nodes
 *      it needs with an iterative DFS from its results and lowers them in
 *      that post-order through the op rows:
 *        - a loop frame's Exit builds one WHILE per context: operands are
 *          the loop variables' initial values (the Merges' Enter inputs),
 *          then every value the regions capture (loop-invariant Enters,
 *          feeds); the cond region computes LoopCond's input, the body the
 *          NextIterations' inputs and returns the invariants unchanged.
 *          Inside the regions a loop variable's Merge (and its Switch:1 in
 *          the body) is parameter i; Exit i is output i.
 *        - a Switch whose predicate is constant (after folding) forwards its
 *          input on the taken output; the other output is dead, any node
 *          with a dead input is dead, and a Merge forwards its one live
 *          input (TensorFlow's dead-tensor propagation, done statically).
 *        - with a run-time predicate, the Switch's outputs exist only inside
 *          the branches; their Merge builds a COND on the predicate whose
 *          region k computes the Merge input of branch k, reading values
 *          from outside the cond (the Switches' inputs and others) as
 *          parameters.  Nested conds and loops recurse, bounded by
 *          IR_MAX_REGION_DEPTH; within a context everything is iterative.
 *      g->fold_on_build is set (regions inherit it) so shape subgraphs
 *      (Shape -> StridedSlice -> Pack -> Reshape) become constants as they
 *      are built; small constants are copied into regions, not passed.
 *   7. Register the fetches under the names the user wrote.
 * Variables (section "variables"): scan_state finds, before the walk, each
 * variable's checkpoint key (the saver's restore subgraph), initializer
 * and trainable flag; tf_state_variable makes its VARIABLE with the
 * initial value (checkpoint, else the initializer lowered in the root
 * context and evaluated by eval_init); tf_state_assign remembers each
 * ASSIGN and the TF node that made it, for read-after-assign.
 *
 * Invariants: in every context a node is lowered after all its data
 * producers; a region reads the enclosing graph only through its
 * parameters; outputs are stored per (context, node, index); a fed tensor's
 * value is its ARG.  Scratch memory lives in a private arena freed before
 * returning.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/tf/tf_int.h"
#include "tcrt_ckpt.h"

static const TfOpRow *find_row(const char *op);

/* ---- messages ---- */

static bool imp_errorf(const TfImportOptions *o, Status *st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool imp_errorf(const TfImportOptions *o, Status *st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (o->file)
        return st_errorf(st, ST_ERROR, "%s: %s", o->file, msg);
    return st_errorf(st, ST_ERROR, "%s", msg);
}

/* ---- tensor names ---- */

bool tf_parse_tensor_name(const char *s, char *buf, size_t n, int *index)
{
    if (!s || !*s)
        return false;
    const char *colon = strrchr(s, ':');
    size_t len = colon ? (size_t)(colon - s) : strlen(s);
    *index = 0;
    if (colon) {
        const char *p = colon + 1;
        if (!*p)
            return false;
        long v = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9' || v > 100000000)
                return false;
            v = v * 10 + (*p - '0');
        }
        *index = (int)v;
    }
    if (len == 0 || len >= n)
        return false;
    memcpy(buf, s, len);
    buf[len] = 0;
    return true;
}

/* ---- core rows: ops the importer handles itself ---- */

static bool lower_const(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    (void)in;
    (void)n_in;
    *n_out = 1;
    return tf_attr_tensor(c, "value", &out[0]);
}

/* Reached only for an unfed placeholder, which the importer rejects first. */
static bool lower_placeholder(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    (void)in;
    (void)n_in;
    (void)out;
    (void)n_out;
    return tf_errorf(c, "placeholder is not fed");
}

static bool lower_placeholder_default(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (n_in != 1)
        return tf_errorf(c, "expected 1 input, got %d", n_in);
    out[0] = in[0];
    *n_out = 1;
    return true;
}

/* v1 control flow is functionalized by the importer (see "lowering" below),
 * never through these functions; the rows make the ops known to check_ops
 * and `tfcc ops`. */
static bool lower_control_flow(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    (void)in;
    (void)n_in;
    (void)out;
    (void)n_out;
    return tf_errorf(c, "internal: control-flow op lowered as a plain op");
}

/* LoopCond marks the loop's predicate: its value is its input. */
static bool lower_loop_cond(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    if (n_in != 1)
        return tf_errorf(c, "expected 1 input, got %d", n_in);
    out[0] = in[0];
    *n_out = 1;
    return true;
}

/* ControlTrigger has no outputs: only control edges, which we do not run. */
static bool lower_control_trigger(TfCtx *c, const IrValue *in, int n_in, IrValue *out, int *n_out)
{
    (void)c;
    (void)in;
    (void)n_in;
    (void)out;
    *n_out = 0;
    return true;
}

static const TfOpRow core_ops[] = {
    {"Const", lower_const, "", "const"},
    {"Placeholder", lower_placeholder, "", "arg (a feed)"},
    {"PlaceholderV2", lower_placeholder, "", "arg (a feed)"},
    {"PlaceholderWithDefault", lower_placeholder_default, "", "its input, or arg when fed"},
    /* function-graph style GraphDefs (graph-as-function): _Arg is a feed,
     * fetching a _Retval gives its input */
    {"_Arg", lower_placeholder, "", "arg (a feed)"},
    {"_Retval", lower_placeholder_default, "", "its input (fetchable)"},
    {"Switch", lower_control_flow, "", "cond (v1: the taken input when the predicate is constant)"},
    {"RefSwitch", lower_control_flow, "", "cond (v1: the taken input when the predicate is constant)"},
    {"Merge", lower_control_flow, "", "cond output, or a while loop variable (v1)"},
    {"RefMerge", lower_control_flow, "", "cond output, or a while loop variable (v1)"},
    {"Enter", lower_control_flow, "", "while operand (v1)"},
    {"RefEnter", lower_control_flow, "", "while operand (v1)"},
    {"Exit", lower_control_flow, "", "while output (v1)"},
    {"RefExit", lower_control_flow, "", "while output (v1)"},
    {"NextIteration", lower_control_flow, "", "while body result (v1)"},
    {"RefNextIteration", lower_control_flow, "", "while body result (v1)"},
    {"LoopCond", lower_loop_cond, "", "while cond result (v1)"},
    {"ControlTrigger", lower_control_trigger, "", "(none)"},
    {NULL, NULL, NULL, NULL},
};

static const TfOpRow *find_in(const TfOpRow *t, const char *op)
{
    for (; t && t->tf_op; t++)
        if (strcmp(t->tf_op, op) == 0)
            return t;
    return NULL;
}

const TfOpRow *tf_find_row(const char *op)
{
    return find_row(op);
}

static const TfOpRow *find_row(const char *op)
{
    const TfOpRow *r = find_in(core_ops, op);
    if (!r)
        r = find_in(tf_ops_nn, op);
    if (!r)
        r = find_in(tf_ops_array, op);
    if (!r)
        r = find_in(tf_ops_func, op);
    if (!r)
        r = find_in(tf_ops_list, op);
    if (!r)
        r = find_in(tf_ops_state, op);
    if (!r)
        r = find_in(tf_ops_grad, op);
    return r;
}

bool tf_op_supported(const char *tf_op)
{
    return tf_op && find_row(tf_op) != NULL;
}

static int cmp_row(const void *a, const void *b)
{
    const TfOpRow *x = *(const TfOpRow *const *)a, *y = *(const TfOpRow *const *)b;
    return strcmp(x->tf_op, y->tf_op);
}

void tf_ops_foreach(void (*fn)(const TfOpDoc *d, void *ud), void *ud)
{
    const TfOpRow *tables[] = {core_ops,    tf_ops_nn,    tf_ops_array, tf_ops_func,
                               tf_ops_list, tf_ops_state, tf_ops_grad};
    const size_t n_tables = sizeof tables / sizeof tables[0];
    size_t n = 0;
    for (size_t t = 0; t < n_tables; t++)
        for (const TfOpRow *r = tables[t]; r->tf_op; r++)
            n++;
    const TfOpRow **rows = xx_malloc((n ? n : 1) * sizeof *rows);
    if (!rows)
        return;
    n = 0;
    for (size_t t = 0; t < n_tables; t++)
        for (const TfOpRow *r = tables[t]; r->tf_op; r++)
            rows[n++] = r;
    qsort(rows, n, sizeof *rows, cmp_row);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(rows[i]->tf_op, rows[i - 1]->tf_op) == 0)
            continue; /* first table wins, as in find_row */
        TfOpDoc d = {rows[i]->tf_op, rows[i]->lowers_to};
        fn(&d, ud);
    }
    xx_free(rows);
}

/* ---- the name index ---- */

typedef struct NameMap {
    int *slot; /* node index + 1, 0 = empty */
    size_t mask;
} NameMap;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static int map_find(const NameMap *m, const Tensorflow__GraphDef *gd, const char *name)
{
    for (size_t i = hash_str(name) & m->mask;; i = (i + 1) & m->mask) {
        int v = m->slot[i];
        if (v == 0)
            return -1;
        if (strcmp(gd->node[v - 1]->name, name) == 0)
            return v - 1;
    }
}

/* An integer-keyed map (open addressing, grows in the scratch arena). */
typedef struct IMap {
    uint64_t *key; /* key + 1, 0 = empty */
    int *val;
    size_t cap, n;
} IMap;

static size_t imap_slot(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static int imap_get(const IMap *m, uint64_t key)
{
    if (!m->cap)
        return -1;
    for (size_t i = imap_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->key[i] == 0)
            return -1;
        if (m->key[i] == key + 1)
            return m->val[i];
    }
}

static bool imap_put(Arena *ar, IMap *m, uint64_t key, int val)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        uint64_t *k2 = arena_alloc(ar, cap * sizeof *k2);
        int *v2 = arena_alloc(ar, cap * sizeof *v2);
        if (!k2 || !v2)
            return false;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->key[i])
                continue;
            size_t s = imap_slot(m->key[i] - 1, cap);
            while (k2[s])
                s = (s + 1) & (cap - 1);
            k2[s] = m->key[i];
            v2[s] = m->val[i];
        }
        m->key = k2;
        m->val = v2;
        m->cap = cap;
    }
    size_t i = imap_slot(key, m->cap);
    for (; m->key[i]; i = (i + 1) & (m->cap - 1))
        if (m->key[i] == key + 1) {
            m->val[i] = val;
            return true;
        }
    m->key[i] = key + 1;
    m->val[i] = val;
    m->n++;
    return true;
}

/* Grows an arena array to hold `need` elements (contents kept). */
static bool vgrow(Arena *ar, void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return true;
    if (need > (1 << 28))
        return false;
    int nc = *cap ? *cap : 8;
    while (nc < need)
        nc *= 2;
    void *q = arena_alloc(ar, (size_t)nc * elem);
    if (!q)
        return false;
    if (*cap)
        memcpy(q, *p, (size_t)*cap * elem);
    *p = q;
    *cap = nc;
    return true;
}

typedef struct IntVec {
    int *v;
    int n, cap;
} IntVec;

static bool ivec_push(Arena *ar, IntVec *a, int x)
{
    if (!vgrow(ar, (void **)&a->v, &a->cap, a->n + 1, sizeof(int)))
        return false;
    a->v[a->n++] = x;
    return true;
}

/* ---- import state ---- */

/* Control-flow op kinds. */
enum { CF_NONE, CF_SWITCH, CF_MERGE, CF_ENTER, CF_EXIT, CF_NEXT, CF_LOOPCOND, CF_TRIGGER };

/* What the analysis found a control-flow node to be. */
enum { ROLE_NONE, ROLE_LOOP_MERGE, ROLE_LOOP_SWITCH, ROLE_COND_SWITCH, ROLE_COND_MERGE };

#define FRAME_FLEX (-1) /* constants without inputs: usable in any frame */
#define FRAME_ROOT 0

/* A cond state: the (predicate, branch) pairs a value lies under, innermost
 * last; NULL is outside every cond.  Interned, so equal states are equal
 * pointers. */
typedef struct State State;
struct State {
    const State *up;
    int pred, pred_k; /* the Switch predicate tensor */
    int branch;       /* Switch output: 0 false, 1 true */
    int depth;
};
static const State state_bad = {NULL, -1, -1, -1, -1};
/* Conds nested in conds, resolved statically or not (bounds the cost of
 * comparing states). */
#define MAX_COND_DEPTH 1024
#define STATE_BAD (&state_bad) /* values from branches of different conds */

typedef struct NodeInfo {
    unsigned char state; /* walk: 0 unseen, 1 on the DFS stack, 2 done */
    unsigned char cf;    /* CF_* */
    unsigned char role;  /* ROLE_* */
    bool deferred;       /* a NextIteration queued as a walk root */
    bool run;            /* reached from a target: every control input is followed */
    const TfOpRow *row;
    int pos;    /* index in the order, -1 when not needed */
    int n_data; /* data inputs in the NodeDef */
    int n_in;   /* resolved data inputs: */
    int *in_node, *in_idx;
    int n_ctl; /* followed control inputs (pivots of input-less nodes) */
    int *ctl;
    int frame;              /* FRAME_FLEX, FRAME_ROOT or a loop frame */
    int var;                /* loop variable (loop Merge, loop Switch, Exit) */
    int pred, pred_k;       /* cond Merge: the predicate it merges on */
    const State *st;        /* the node's state (a cond Merge: outside its cond) */
    const State *out_st[2]; /* a cond Switch: its outputs' states */
    int canon, canon_k;     /* the tensor output 0 is an Identity chain of */
    const char *bad;        /* why st is STATE_BAD */
} NodeInfo;

typedef struct FrameInfo {
    const char *name;   /* frame_name; NULL for the root */
    int parent;         /* -1 until the first Enter */
    int enter0;         /* the first Enter seen */
    int loopcond;       /* LoopCond node, -1 none */
    int depth;          /* loops around it, itself included (root 0) */
    const State *outer; /* the loop's cond state in the parent frame */
    bool outer_set, exit_seen;
    IntVec enters; /* needed Enter nodes */
    IntVec merges; /* loop variables: Merge(Enter, NextIteration) */
} FrameInfo;

typedef struct FeedRec {
    int node, index;
    const char *name; /* as the user wrote it */
    IrValue value;
} FeedRec;

typedef struct Importer {
    const Tensorflow__GraphDef *gd;
    const TfImportOptions *o;
    Status *st;
    IrGraph *g;
    Arena scratch;
    NameMap map;
    NodeInfo *info;
    FeedRec *feeds;
    int n_feeds;
    int *order; /* needed nodes, topological (loop back edges removed) */
    int n_order;
    IntVec deferred;   /* NextIteration nodes still to walk */
    FrameInfo *frames; /* [0] is the root */
    int n_frames, cap_frames;
    int *frame_slot; /* name -> frame id + 1 */
    size_t frame_mask;
    const State **states; /* interned states */
    size_t states_cap, n_states;
    IrValue *in_buf; /* row lowering: inputs, outputs */
    int cap_in;
    IrValue *out_buf;
    /* variables (see "variables" below); arrays per GraphDef node */
    TfState *state;
    struct Ctx *root;         /* the top-level context */
    int cur_node;             /* the node lower_plain is lowering */
    IrValue *var_value;       /* a variable node's VARIABLE ({NULL,0} until made) */
    int *init_node, *init_k;  /* its initializer's value tensor (-1: none) */
    unsigned char *init_how;  /* 0 none, 1 an Assign, 2 "<var>/Assign", 3 the VariableDef, 4 ambiguous */
    const char **ckpt_key;    /* its key, from the saver's restore subgraph */
    unsigned char *trainable; /* listed in the trainable_variables collection */
    bool has_trainable;       /* the meta graph has that collection */
    unsigned char *making;    /* initial value being computed (cycle guard) */
    void *ckpt;               /* tcrt_ckpt of o->checkpoint, or NULL */
    const char *ckpt_err;     /* why o->checkpoint did not open (reported when a variable needs it) */
    struct ElemHints *hints;  /* element shapes learnt by earlier attempts (tf_state_elem_hint) */
    IMap assign_of;           /* VARIABLE node id -> assigns[] */
    IrNode **assigns;         /* the ASSIGN ... */
    int *assign_tf;           /* ... and the TF node that made it */
    int n_assigns, cap_assigns, cap_assign_tf;
} Importer;

struct TfState {
    Importer *im;
};

static const char *node_name(const Tensorflow__NodeDef *nd)
{
    return nd->name ? nd->name : "";
}
static const char *node_op(const Tensorflow__NodeDef *nd)
{
    return nd->op ? nd->op : "";
}

static int cf_kind(const char *op)
{
    static const struct {
        const char *op;
        int cf;
    } t[] = {
        {"Switch", CF_SWITCH},      {"RefSwitch", CF_SWITCH},
        {"Merge", CF_MERGE},        {"RefMerge", CF_MERGE},
        {"Enter", CF_ENTER},        {"RefEnter", CF_ENTER},
        {"Exit", CF_EXIT},          {"RefExit", CF_EXIT},
        {"NextIteration", CF_NEXT}, {"RefNextIteration", CF_NEXT},
        {"LoopCond", CF_LOOPCOND},  {"ControlTrigger", CF_TRIGGER},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(op, t[i].op) == 0)
            return t[i].cf;
    return CF_NONE;
}

static bool nomem(Importer *im)
{
    return st_errorf(im->st, ST_NOMEM, "out of memory");
}

static bool build_map(Importer *im)
{
    const Tensorflow__GraphDef *gd = im->gd;
    size_t cap = 16;
    while (cap < gd->n_node * 2 + 1)
        cap *= 2;
    im->map.slot = arena_alloc(&im->scratch, cap * sizeof(int));
    if (!im->map.slot)
        return nomem(im);
    im->map.mask = cap - 1;
    for (size_t n = 0; n < gd->n_node; n++) {
        const Tensorflow__NodeDef *nd = gd->node[n];
        if (!nd || !nd->name || !*nd->name)
            return imp_errorf(im->o, im->st, "node %zu has no name", n);
        if (!nd->op || !*nd->op)
            return imp_errorf(im->o, im->st, "node '%s' has no op", nd->name);
        size_t i = hash_str(nd->name) & im->map.mask;
        for (; im->map.slot[i]; i = (i + 1) & im->map.mask)
            if (strcmp(gd->node[im->map.slot[i] - 1]->name, nd->name) == 0)
                return imp_errorf(im->o, im->st, "duplicate node name '%s'", nd->name);
        im->map.slot[i] = (int)n + 1;
        im->info[n].cf = (unsigned char)cf_kind(nd->op);
        im->info[n].pos = -1;
    }
    return true;
}

/* Resolves "name:k" to (node, k); false with a message naming `what`. */
static bool resolve(Importer *im, const char *s, int *node, int *index)
{
    char small[256];
    size_t n = strlen(s) + 1;
    char *buf = n <= sizeof small ? small : arena_alloc(&im->scratch, n);
    if (!buf)
        return nomem(im);
    if (!tf_parse_tensor_name(s, buf, n, index))
        return false;
    *node = map_find(&im->map, im->gd, buf);
    return *node >= 0;
}

static const FeedRec *find_feed(const Importer *im, int node, int index)
{
    for (int i = 0; i < im->n_feeds; i++)
        if (im->feeds[i].node == node && im->feeds[i].index == index)
            return &im->feeds[i];
    return NULL;
}

/* ---- feeds ---- */

static const Tensorflow__AttrValue *node_attr(const Tensorflow__NodeDef *nd, const char *name)
{
    for (size_t i = 0; i < nd->n_attr; i++)
        if (nd->attr[i] && nd->attr[i]->key && strcmp(nd->attr[i]->key, name) == 0)
            return nd->attr[i]->value;
    return NULL;
}

static bool stamp_device(Importer *im, IrGraph *g, int from, const Tensorflow__NodeDef *nd);

/* Reads a TensorShapeProto; *known is false for unknown rank or a -1 dim. */
static bool read_shape(const Tensorflow__TensorShapeProto *sp, IrShape *s, bool *known)
{
    *known = false;
    s->rank = 0;
    if (!sp || sp->unknown_rank || sp->n_dim > IR_MAX_RANK)
        return false;
    s->rank = (int)sp->n_dim;
    *known = true;
    for (size_t i = 0; i < sp->n_dim; i++) {
        s->dims[i] = sp->dim[i] ? sp->dim[i]->size : -1;
        if (s->dims[i] < 0) {
            s->dims[i] = -1;
            *known = false;
        }
    }
    return true;
}

/* Formats a shape that may hold -1 dims ("[-1,224,224,3]"). */
static void shape_text(const IrShape *s, char *buf, size_t n, char sep, bool suggest)
{
    size_t at = 0;
    if (!suggest)
        at += (size_t)snprintf(buf + at, n - at, "[");
    for (int i = 0; i < s->rank && at < n; i++) {
        long long d = s->dims[i] < 0 && suggest ? 1 : (long long)s->dims[i];
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? (char[2]){sep, 0} : "", d);
    }
    if (!suggest && at < n)
        snprintf(buf + at, n - at, "]");
}

static bool add_feed(Importer *im, const TfFeedSpec *spec)
{
    const TfImportOptions *o = im->o;
    int node, index;
    if (!spec->name || !resolve(im, spec->name, &node, &index))
        return st_ok(im->st) ? imp_errorf(o, im->st, "feed '%s' names no node in the graph",
                                          spec->name ? spec->name : "(null)")
                             : false;
    if (find_feed(im, node, index))
        return imp_errorf(o, im->st, "feed '%s' is given twice", spec->name);
    const Tensorflow__NodeDef *nd = im->gd->node[node];

    /* dtype: the spec's, else the node's dtype or T attr. */
    IrType t = {0};
    t.dtype = spec->dtype;
    if (t.dtype == TCRT_INVALID) {
        TfCtx c = {im->g, o->file, nd, NULL, im->st, im->gd->library, im->state};
        const char *attr = tf_attr_has(&c, "dtype") ? "dtype" : tf_attr_has(&c, "T") ? "T" : NULL;
        if (!attr)
            return imp_errorf(o, im->st,
                              "feed '%s': node '%s' (%s) has no dtype or T attribute; give the dtype",
                              spec->name, node_name(nd), node_op(nd));
        if (!tf_attr_type(&c, attr, &t.dtype))
            return false;
    }

    /* shape: the spec's, else the `shape` attr, else `_output_shapes`[index]. */
    IrShape graph_shape = {0, {0}};
    bool have_graph_shape = false, graph_known = false;
    const Tensorflow__AttrValue *a = node_attr(nd, "shape");
    if (a && a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_SHAPE)
        have_graph_shape = read_shape(a->shape, &graph_shape, &graph_known);
    if (!graph_known) {
        a = node_attr(nd, "_output_shapes");
        if (a && a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST && a->list &&
            (size_t)index < a->list->n_shape) {
            IrShape s2 = {0};
            bool known2;
            if (read_shape(a->list->shape[index], &s2, &known2) && (known2 || !have_graph_shape)) {
                graph_shape = s2;
                graph_known = known2;
                have_graph_shape = true;
            }
        }
    }
    if (spec->has_shape) {
        if (spec->shape.rank < 0 || spec->shape.rank > IR_MAX_RANK)
            return imp_errorf(o, im->st, "feed '%s': bad rank %d", spec->name, spec->shape.rank);
        t.shape = spec->shape;
        if (have_graph_shape) {
            bool match = graph_shape.rank == t.shape.rank;
            for (int i = 0; match && i < t.shape.rank; i++)
                match = graph_shape.dims[i] < 0 || graph_shape.dims[i] == t.shape.dims[i] ||
                        (i == 0 && (o->flags & TF_IMPORT_BATCH_FREE));
            if (!match) {
                char b1[200], b2[200];
                shape_text(&t.shape, b1, sizeof b1, ',', false);
                shape_text(&graph_shape, b2, sizeof b2, ',', false);
                return imp_errorf(o, im->st, "%s '%s': shape %s does not match the graph's %s",
                                  spec->value ? "--const" : "feed", spec->name, b1, b2);
            }
        }
    } else if (graph_known) {
        t.shape = graph_shape;
    } else if (have_graph_shape) {
        char b1[200], b2[200];
        shape_text(&graph_shape, b1, sizeof b1, ',', false);
        shape_text(&graph_shape, b2, sizeof b2, 'x', true);
        return imp_errorf(o, im->st, "feed '%s' has unknown shape %s; give it with --feed %s:%s", spec->name,
                          b1, spec->name, b2);
    } else {
        return imp_errorf(
            o, im->st,
            "feed '%s' has unknown shape (unknown rank); give it with --feed %s:DIMS (e.g. 1x224x224x3)",
            spec->name, spec->name);
    }
    for (int i = 0; i < t.shape.rank; i++)
        if (t.shape.dims[i] < 0)
            return imp_errorf(o, im->st, "feed '%s': negative dimension", spec->name);
    int64_t count;
    if (!ir_shape_count_checked(&t.shape, &count)) {
        char sb[256];
        return imp_errorf(o, im->st, "feed '%s': shape %s has too many elements (limit %lld)", spec->name,
                          ir_shape_str(&t.shape, sb, sizeof sb), (long long)IR_MAX_ELEMENTS);
    }

    ir_graph_set_origin(im->g, node_name(nd), node_op(nd));
    IrValue v;
    if (spec->value) {
        /* --const: a compile-time value instead of an argument */
        const tcrt_tensor *x = spec->value;
        IrShape xs = ir_shape_make(x->rank, x->dims);
        if (x->rank < 0 || x->rank > IR_MAX_RANK || !ir_shape_eq(&xs, &t.shape)) {
            char b1[200], b2[200];
            return imp_errorf(o, im->st, "--const '%s': value of shape %s, the graph needs %s", spec->name,
                              ir_shape_str(&xs, b1, sizeof b1), ir_shape_str(&t.shape, b2, sizeof b2));
        }
        v = ir_const(im->g, x->dtype, &xs, x->data, im->st);
        if (v.node && x->dtype != t.dtype)
            v = ir_cast(im->g, v, t.dtype, im->st);
    } else {
        v = ir_add_feed(im->g, spec->name, &t, im->st);
        if (v.node && !stamp_device(im, im->g, im->g->n_nodes - 1, nd))
            return false;
    }
    if (!v.node)
        return false;
    FeedRec *f = &im->feeds[im->n_feeds++];
    f->node = node;
    f->index = index;
    f->name = spec->name;
    f->value = v;
    return true;
}

/* ---- the walk ---- */

static bool ctl_runs(Importer *im, int n, int j);
static bool in_checkpoint(Importer *im, int j);

typedef struct Frame {
    int node;
    size_t pos; /* next input to look at */
} Frame;

static bool dangling(Importer *im, const Tensorflow__NodeDef *nd, size_t pos, const char *in)
{
    if (!st_ok(im->st))
        return false;
    if (in[0] == '^')
        return imp_errorf(im->o, im->st, "node '%s' (%s): control input '%s' names no node in the graph",
                          node_name(nd), node_op(nd), in);
    return imp_errorf(im->o, im->st, "node '%s' (%s): input %zu '%s' names no node in the graph",
                      node_name(nd), node_op(nd), pos, in);
}

/* A control producer worth following from a node without data inputs: a
 * control-flow op, or an Identity of one (tf.cond's pivots switch_t and
 * switch_f, a loop's Identity(Switch:1)). */
static bool is_pivot(Importer *im, int j)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    int cf = im->info[j].cf;
    if (cf == CF_EXIT || cf == CF_NEXT)
        return false; /* never a pivot; following it would build a loop for nothing */
    if (cf != CF_NONE)
        return true;
    if (strcmp(node_op(nd), "Identity") != 0 && strcmp(node_op(nd), "RefIdentity") != 0)
        return false;
    for (size_t i = 0; i < nd->n_input; i++) {
        const char *in = nd->input[i] ? nd->input[i] : "";
        int p, k;
        if (in[0] == '^')
            continue;
        if (!resolve(im, in, &p, &k))
            return false;
        cf = im->info[p].cf;
        return cf == CF_SWITCH || cf == CF_MERGE || cf == CF_ENTER;
    }
    return false;
}

/* Sizes node j's input arrays (first visit). */
static bool expand(Importer *im, int j)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    NodeInfo *ni = &im->info[j];
    int n_data = 0, n_ctl = 0;
    for (size_t i = 0; i < nd->n_input; i++) {
        if (nd->input[i] && nd->input[i][0] == '^')
            n_ctl++;
        else
            n_data++;
    }
    ni->n_data = n_data;
    ni->in_node = arena_alloc(&im->scratch, (size_t)(n_data + 1) * sizeof(int));
    ni->in_idx = arena_alloc(&im->scratch, (size_t)(n_data + 1) * sizeof(int));
    ni->ctl = arena_alloc(&im->scratch, (size_t)(n_ctl + 1) * sizeof(int));
    if (!ni->in_node || !ni->in_idx || !ni->ctl)
        return nomem(im);
    return true;
}

static bool push_node(Importer *im, Frame *stack, int *sp, int j)
{
    if (!expand(im, j))
        return false;
    im->info[j].state = 1;
    stack[(*sp)++] = (Frame){j, 0};
    return true;
}

/* Depth-first from `root`, appending finished nodes to im->order. */
static bool walk_from(Importer *im, Frame *stack, int root)
{
    const Tensorflow__GraphDef *gd = im->gd;
    int sp = 0;
    if (!push_node(im, stack, &sp, root))
        return false;
    while (sp > 0) {
        Frame *fr = &stack[sp - 1];
        const Tensorflow__NodeDef *nd = gd->node[fr->node];
        NodeInfo *ni = &im->info[fr->node];
        if (fr->pos >= nd->n_input) {
            ni->state = 2;
            ni->pos = im->n_order;
            im->order[im->n_order++] = fr->node;
            sp--;
            continue;
        }
        size_t pos = fr->pos++;
        const char *in = nd->input[pos] ? nd->input[pos] : "";
        int j, k;
        if (in[0] == '^') {
            j = map_find(&im->map, gd, in + 1);
            if (j < 0)
                return dangling(im, nd, pos, in);
            /* followed: everything in a target's closure; an assignment
             * (or a group of them) the node must run after; a pivot */
            bool run = ni->run || ctl_runs(im, fr->node, j);
            if (im->info[j].state == 1 || (!run && (ni->n_data > 0 || !is_pivot(im, j))))
                continue;
            if (!st_ok(im->st))
                return false;
            ni->ctl[ni->n_ctl++] = j;
            if (im->info[j].state == 0) {
                im->info[j].run = run;
                if (!push_node(im, stack, &sp, j))
                    return false;
            }
            continue;
        }
        if (!resolve(im, in, &j, &k))
            return dangling(im, nd, pos, in);
        ni->in_node[ni->n_in] = j;
        ni->in_idx[ni->n_in++] = k;
        if (find_feed(im, j, k))
            continue;
        if (im->info[j].cf == CF_NEXT && ni->cf != CF_MERGE)
            return imp_errorf(
                im->o, im->st,
                "node '%s' (%s): input %zu '%s' is a NextIteration, which may only feed a Merge",
                node_name(nd), node_op(nd), pos, in);
        if (im->info[j].cf == CF_NEXT) {
            /* a loop's back edge: the NextIteration is walked later */
            if (im->info[j].state == 0 && !im->info[j].deferred) {
                im->info[j].deferred = true;
                if (!ivec_push(&im->scratch, &im->deferred, j))
                    return nomem(im);
            }
            continue;
        }
        if (im->info[j].state == 1)
            return imp_errorf(im->o, im->st, "graph has a cycle through node '%s' (%s)",
                              node_name(gd->node[j]), node_op(gd->node[j]));
        if (im->info[j].state == 0) {
            im->info[j].run = ni->run;
            if (!push_node(im, stack, &sp, j))
                return false;
        }
    }
    return true;
}

static bool walk(Importer *im)
{
    const Tensorflow__GraphDef *gd = im->gd;
    Frame *stack = arena_alloc(&im->scratch, (gd->n_node + 1) * sizeof *stack);
    im->order = arena_alloc(&im->scratch, (gd->n_node + 1) * sizeof *im->order);
    if (!stack || !im->order)
        return nomem(im);
    /* targets first, so that their closure follows control inputs */
    for (int t = 0; t < im->o->n_targets; t++) {
        int root, index;
        const char *tg = im->o->targets[t];
        if (!tg || !resolve(im, tg[0] == '^' ? tg + 1 : tg, &root, &index))
            return st_ok(im->st) ? imp_errorf(im->o, im->st, "target '%s' names no node in the graph",
                                              tg ? tg : "(null)")
                                 : false;
        if (im->info[root].state == 2)
            continue;
        im->info[root].run = true;
        if (!walk_from(im, stack, root))
            return false;
    }
    for (int f = 0; f < im->o->n_fetches; f++) {
        const char *fetch = im->o->fetches[f];
        int root, index;
        if (!fetch || !resolve(im, fetch, &root, &index))
            return st_ok(im->st) ? imp_errorf(im->o, im->st, "fetch '%s' names no node in the graph",
                                              fetch ? fetch : "(null)")
                                 : false;
        if (find_feed(im, root, index) || im->info[root].state == 2)
            continue;
        if (!walk_from(im, stack, root))
            return false;
    }
    for (int i = 0; i < im->deferred.n; i++) {
        int j = im->deferred.v[i];
        if (im->info[j].state == 0 && !walk_from(im, stack, j))
            return false;
    }
    /* the initializers of needed variables the checkpoint does not hold
     * (the order grows while this runs: an initializer may read another
     * variable) */
    for (int i = 0; i < im->n_order; i++) {
        int j = im->order[i];
        if (!tf_op_is_variable(node_op(gd->node[j])) || in_checkpoint(im, j) || im->init_node[j] < 0 ||
            im->init_how[j] == 4)
            continue;
        int p = im->init_node[j];
        if (im->info[p].state == 0 && !walk_from(im, stack, p))
            return false;
    }
    return true;
}

/* ---- variables: what each one is initialized from ----
 *
 * Before the walk, one pass over the whole GraphDef (scan_state) finds,
 * for every variable node (VariableV2, Variable, VarHandleOp):
 *   - its checkpoint key: the saver's restore subgraph assigns
 *     RestoreV2:i (through Identity) to it, and RestoreV2's tensor_names
 *     constant gives key i (TF2 object-based keys like
 *     "layer/kernel/.ATTRIBUTES/VARIABLE_VALUE"); without one, a
 *     VariableV2's key is its node name (tf.train.Saver's default);
 *   - its initializer's value tensor: the VariableDef's initial_value_name
 *     in the meta graph's "variables"/"trainable_variables" collections,
 *     else the value input of "<var>/Assign", else of the only other
 *     Assign/AssignVariableOp to it not fed by a RestoreV2;
 *   - whether it is trainable: listed in "trainable_variables" (a
 *     GraphDef without that collection: every float variable).
 * The initial value (tf_state_variable) is the checkpoint's tensor when
 * the checkpoint has the key, else the initializer evaluated when
 * compiling, else an error naming the variable. */

/* The checkpoint's entry for key, or NULL. */
static const void *state_ckpt_find(void *ck, const char *key)
{
    return tcrt_ckpt_find((const tcrt_ckpt *)ck, key);
}

/* The checkpoint tensor key as a CONST of type want (want's shape rank < 0:
 * any shape); the variable named in errors is key's. */
static bool state_ckpt_read(Importer *im, const char *key, const IrType *want, IrValue *out)
{
    const tcrt_ckpt_entry *e = tcrt_ckpt_find((const tcrt_ckpt *)im->ckpt, key);
    if (!e)
        return st_errorf(im->st, ST_ERROR, "checkpoint %s: no tensor '%s'", im->o->checkpoint, key);
    IrShape s = ir_shape_make(e->rank, e->dims);
    char b1[200], b2[200];
    if (e->rank < 0 || e->rank > IR_MAX_RANK || e->dtype != want->dtype ||
        (want->shape.rank >= 0 && !ir_shape_eq(&s, &want->shape))) {
        snprintf(b2, sizeof b2, "%s", tcrt_dtype_name(want->dtype));
        if (want->shape.rank >= 0)
            ir_shape_str(&want->shape, b2 + strlen(b2), sizeof b2 - strlen(b2));
        snprintf(b1, sizeof b1, "%s", tcrt_dtype_name(e->dtype));
        if (e->rank >= 0 && e->rank <= IR_MAX_RANK)
            ir_shape_str(&s, b1 + strlen(b1), sizeof b1 - strlen(b1));
        return st_errorf(im->st, ST_ERROR, "checkpoint %s: tensor '%s' is %s but the variable is %s",
                         im->o->checkpoint, key, b1, b2);
    }
    IrType t = {e->dtype, s};
    if (ir_type_bytes(&t) != e->bytes)
        return st_errorf(im->st, ST_ERROR, "checkpoint %s: tensor '%s' has %zu bytes, %s needs %zu",
                         im->o->checkpoint, key, e->bytes, tcrt_dtype_name(e->dtype), ir_type_bytes(&t));
    void *buf = arena_alloc_align(&im->scratch, e->bytes ? e->bytes : 1, 64);
    if (!buf)
        return nomem(im);
    char msg[512];
    if (tcrt_ckpt_read((const tcrt_ckpt *)im->ckpt, e, buf, e->bytes, msg, sizeof msg) != TCRT_OK)
        return st_errorf(im->st, ST_ERROR, "%s", msg);
    *out = ir_const(im->g, e->dtype, &s, buf, im->st);
    return out->node != NULL;
}

static bool is_saver_op(const char *op)
{
    static const char *const t[] = {"SaveV2",          "RestoreV2",  "MergeV2Checkpoints",
                                    "ShardedFilename", "StringJoin", "Save",
                                    "SaveSlices",      "Restore",    "RestoreSlice"};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(op, t[i]))
            return true;
    return false;
}

/* Data input i of node j (raw NodeDef), or -1. */
static int input_of(Importer *im, int j, int i, int *k)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    for (size_t p = 0; p < nd->n_input; p++) {
        const char *in = nd->input[p] ? nd->input[p] : "";
        if (in[0] == '^' || i-- > 0)
            continue;
        int n;
        return resolve(im, in, &n, k) ? n : -1;
    }
    return -1;
}

/* Follows Identity-like nodes back from tensor (j, k) (bounded). */
static int strip_identity(Importer *im, int j, int *k)
{
    for (int d = 0; d < 64 && j >= 0 && *k == 0; d++) {
        const char *op = node_op(im->gd->node[j]);
        if (strcmp(op, "Identity") && strcmp(op, "RefIdentity") && strcmp(op, "Snapshot"))
            break;
        j = input_of(im, j, 0, k);
    }
    return j;
}

/* Reads one VariableDef (serialized in a bytes_list collection): fields 1
 * variable_name, 2 initializer_name, 6 initial_value_name (strings). */
static void read_variable_def(const uint8_t *p, size_t n, const char *f[7], size_t len[7])
{
    size_t pos = 0;
    while (pos < n) {
        uint64_t key = 0, v = 0;
        for (int sh = 0; pos < n && sh < 64; sh += 7) {
            key |= (uint64_t)(p[pos] & 0x7f) << sh;
            if (!(p[pos++] & 0x80))
                break;
        }
        unsigned wt = (unsigned)(key & 7);
        uint64_t field = key >> 3;
        if (wt == 0 || wt == 2) {
            for (int sh = 0; pos < n && sh < 64; sh += 7) {
                v |= (uint64_t)(p[pos] & 0x7f) << sh;
                if (!(p[pos++] & 0x80))
                    break;
            }
            if (wt == 2) {
                if (v > n - pos)
                    return;
                if (field >= 1 && field <= 6) {
                    f[field] = (const char *)p + pos;
                    len[field] = (size_t)v;
                }
                pos += (size_t)v;
            }
        } else if (wt == 1 || wt == 5) {
            pos += wt == 1 ? 8 : 4;
        } else {
            return;
        }
    }
}

/* The node named by the first len bytes of s ("v:0" or "v"), or -1. */
static int node_of_text(Importer *im, const char *s, size_t len)
{
    char buf[512];
    if (!s || len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    int j, k;
    return resolve(im, buf, &j, &k) ? j : -1;
}

/* A FunctionDef body's node named like the reference "node:out:k" (or
 * "node"); *idx gets k (0 without one). */
static const Tensorflow__NodeDef *fn_node(const Tensorflow__FunctionDef *f, const char *ref, int *idx)
{
    const char *c1 = strchr(ref, ':');
    size_t len = c1 ? (size_t)(c1 - ref) : strlen(ref);
    *idx = 0;
    if (c1) {
        const char *c2 = strrchr(ref, ':');
        *idx = c2 > c1 ? atoi(c2 + 1) : 0;
    }
    for (size_t i = 0; i < f->n_node_def; i++) {
        const char *nm = f->node_def[i]->name;
        if (nm && strlen(nm) == len && !strncmp(nm, ref, len))
            return f->node_def[i];
    }
    return NULL;
}

/* TF2 SavedModels restore inside a library function (the saver's
 * restore_op_name, a StatefulPartitionedCall given every variable handle):
 * AssignVariableOp(handle arg, RestoreV2:tensors:i) in the body gives the
 * checkpoint key tensor_names[i] to the variable the caller passes. */
static bool scan_restore_call(Importer *im, int j)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    const Tensorflow__AttrValue *fa = node_attr(nd, "f");
    const Tensorflow__FunctionDefLibrary *lib = im->gd->library;
    if (!fa || fa->value_case != TENSORFLOW__ATTR_VALUE__VALUE_FUNC || !fa->func || !fa->func->name || !lib)
        return true;
    const Tensorflow__FunctionDef *f = NULL;
    for (size_t i = 0; i < lib->n_function && !f; i++)
        if (lib->function[i]->signature && lib->function[i]->signature->name &&
            !strcmp(lib->function[i]->signature->name, fa->func->name))
            f = lib->function[i];
    const Tensorflow__NodeDef *rs = NULL;
    for (size_t i = 0; f && i < f->n_node_def && !rs; i++)
        if (f->node_def[i]->op && !strcmp(f->node_def[i]->op, "RestoreV2"))
            rs = f->node_def[i];
    if (!rs || rs->n_input < 2)
        return true;
    int k;
    const Tensorflow__NodeDef *names = fn_node(f, rs->input[1], &k);
    const Tensorflow__AttrValue *a = names ? node_attr(names, "value") : NULL;
    const Tensorflow__TensorProto *tp =
        a && a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TENSOR ? a->tensor : NULL;
    if (!tp)
        return true;
    const Tensorflow__OpDef *sig = f->signature;
    for (size_t i = 0; i < f->n_node_def; i++) {
        const Tensorflow__NodeDef *an = f->node_def[i];
        if (!an->op || strcmp(an->op, "AssignVariableOp") || an->n_input < 2)
            continue;
        /* the value: RestoreV2:tensors:t through Identity */
        int t = 0;
        const Tensorflow__NodeDef *x = fn_node(f, an->input[1], &t);
        for (int d = 0; d < 16 && x && x->op && !strcmp(x->op, "Identity") && x->n_input > 0; d++)
            x = fn_node(f, x->input[0], &t);
        if (x != rs || t < 0 || (size_t)t >= tp->n_string_val)
            continue;
        /* the handle: input arg a of the function, input a of the caller */
        int arg = -1;
        for (size_t q = 0; q < sig->n_input_arg && arg < 0; q++)
            if (sig->input_arg[q]->name && !strcmp(sig->input_arg[q]->name, an->input[0]))
                arg = (int)q;
        int kv = 0, v = arg >= 0 ? input_of(im, j, arg, &kv) : -1;
        v = v >= 0 ? strip_identity(im, v, &kv) : -1;
        if (v < 0 || !tf_op_is_variable(node_op(im->gd->node[v])))
            continue;
        const ProtobufCBinaryData *b = &tp->string_val[t];
        char *key = arena_alloc(&im->scratch, b->len + 1);
        if (!key)
            return nomem(im);
        memcpy(key, b->data, b->len);
        key[b->len] = 0;
        im->ckpt_key[v] = key;
    }
    return true;
}

static bool scan_state(Importer *im)
{
    const Tensorflow__GraphDef *gd = im->gd;
    size_t n = gd->n_node + 1;
    im->var_value = arena_alloc(&im->scratch, n * sizeof *im->var_value);
    im->init_node = arena_alloc(&im->scratch, n * sizeof(int));
    im->init_k = arena_alloc(&im->scratch, n * sizeof(int));
    im->init_how = arena_alloc(&im->scratch, n);
    im->ckpt_key = arena_alloc(&im->scratch, n * sizeof(char *));
    im->trainable = arena_alloc(&im->scratch, n);
    im->making = arena_alloc(&im->scratch, n);
    if (!im->var_value || !im->init_node || !im->init_k || !im->init_how || !im->ckpt_key || !im->trainable ||
        !im->making)
        return nomem(im);
    for (size_t j = 0; j < n; j++)
        im->init_node[j] = -1;
    for (size_t j = 0; j < gd->n_node; j++) {
        const char *op = node_op(gd->node[j]);
        if (!strcmp(op, "StatefulPartitionedCall") || !strcmp(op, "PartitionedCall")) {
            if (!scan_restore_call(im, (int)j))
                return false;
            continue;
        }
        if (strcmp(op, "Assign") && strcmp(op, "AssignVariableOp"))
            continue;
        int k0 = 0, k1 = 0;
        int v = input_of(im, (int)j, 0, &k0), x = input_of(im, (int)j, 1, &k1);
        v = v >= 0 ? strip_identity(im, v, &k0) : -1;
        if (v < 0 || x < 0 || !tf_op_is_variable(node_op(gd->node[v])))
            continue;
        int kx = k1, xs = strip_identity(im, x, &kx);
        if (xs >= 0 && !strcmp(node_op(gd->node[xs]), "RestoreV2")) {
            int kn, names = input_of(im, xs, 1, &kn);
            const Tensorflow__AttrValue *a = names >= 0 ? node_attr(gd->node[names], "value") : NULL;
            const Tensorflow__TensorProto *tp =
                a && a->value_case == TENSORFLOW__ATTR_VALUE__VALUE_TENSOR ? a->tensor : NULL;
            if (tp && kx >= 0 && (size_t)kx < tp->n_string_val) {
                const ProtobufCBinaryData *b = &tp->string_val[kx];
                char *key = arena_alloc(&im->scratch, b->len + 1);
                if (!key)
                    return nomem(im);
                memcpy(key, b->data, b->len);
                key[b->len] = 0;
                im->ckpt_key[v] = key;
            }
            continue;
        }
        /* "<var>/Assign" is the initializer tf.Variable makes */
        const char *vn = node_name(gd->node[v]), *an = node_name(gd->node[j]);
        size_t lv = strlen(vn);
        int how = !strncmp(an, vn, lv) && !strcmp(an + lv, "/Assign") ? 2 : 1;
        if (how > im->init_how[v] || im->init_node[v] < 0) {
            im->init_node[v] = x;
            im->init_k[v] = k1;
            im->init_how[v] = (unsigned char)how;
        } else if (how == 1 && im->init_how[v] == 1) {
            im->init_how[v] = 4; /* several plain Assigns: none is known to be the initializer */
        }
    }
    const Tensorflow__MetaGraphDef *mg = im->o->meta;
    for (size_t c = 0; mg && c < mg->n_collection_def; c++) {
        const Tensorflow__MetaGraphDef__CollectionDefEntry *e = mg->collection_def[c];
        if (!e || !e->key || !e->value || e->value->kind_case != TENSORFLOW__COLLECTION_DEF__KIND_BYTES_LIST)
            continue;
        bool tr = !strcmp(e->key, "trainable_variables");
        if (!tr && strcmp(e->key, "variables"))
            continue;
        im->has_trainable |= tr;
        const Tensorflow__CollectionDef__BytesList *bl = e->value->bytes_list;
        for (size_t i = 0; bl && i < bl->n_value; i++) {
            const char *f[7] = {0};
            size_t len[7] = {0};
            read_variable_def(bl->value[i].data, bl->value[i].len, f, len);
            int v = node_of_text(im, f[1], len[1]);
            if (v < 0 || !tf_op_is_variable(node_op(gd->node[v])))
                continue;
            if (tr)
                im->trainable[v] = 1;
            char buf[512];
            int x, kx;
            if (f[6] && len[6] < sizeof buf) {
                memcpy(buf, f[6], len[6]);
                buf[len[6]] = 0;
                if (resolve(im, buf, &x, &kx)) {
                    im->init_node[v] = x;
                    im->init_k[v] = kx;
                    im->init_how[v] = 3;
                }
            }
        }
    }
    return st_ok(im->st);
}

/* The key of variable node j in the checkpoint (NULL: none given). */
static const char *ckpt_key(Importer *im, int j)
{
    return im->ckpt_key[j] ? im->ckpt_key[j] : node_name(im->gd->node[j]);
}

static bool in_checkpoint(Importer *im, int j)
{
    return im->ckpt && state_ckpt_find(im->ckpt, ckpt_key(im, j)) != NULL;
}

/* Does assignment a write variable node v (a ref or handle input of a
 * comes straight from v)? */
static bool writes(Importer *im, int a, int v)
{
    const Tensorflow__NodeDef *nd = im->gd->node[a];
    if (!tf_op_is_assign(node_op(nd)))
        return false;
    for (int i = 0; i < (int)nd->n_input; i++) {
        int k, p = input_of(im, a, i, &k);
        if (p < 0)
            break;
        if (p == v)
            return true;
    }
    return false;
}

/* A control input j of node n worth following (read after assign): an
 * assignment, or a group (NoOp) of assignments, that writes a variable n
 * reads (a data input that is the variable, or an Identity/ReadVariableOp
 * of it).  Other control edges of an inference graph guard side effects
 * the fetches do not need. */
static bool ctl_runs(Importer *im, int n, int j)
{
    const Tensorflow__NodeDef *nd = im->gd->node[n], *cd = im->gd->node[j];
    bool group = !strcmp(node_op(cd), "NoOp");
    if (!group && !tf_op_is_assign(node_op(cd)))
        return false;
    for (int i = 0; i < (int)nd->n_input; i++) {
        int k, v = input_of(im, n, i, &k);
        if (v < 0)
            break;
        for (int d = 0; d < 64 && v >= 0 && !tf_op_is_variable(node_op(im->gd->node[v])); d++) {
            const char *op = node_op(im->gd->node[v]);
            if (strcmp(op, "Identity") && strcmp(op, "RefIdentity") && strcmp(op, "Snapshot") &&
                strcmp(op, "ReadVariableOp"))
                v = -1;
            else
                v = input_of(im, v, 0, &k);
        }
        if (v < 0)
            continue;
        if (!group && writes(im, j, v))
            return true;
        for (size_t c = 0; group && c < cd->n_input; c++) {
            const char *in = cd->input[c] ? cd->input[c] : "";
            int p = in[0] == '^' ? map_find(&im->map, im->gd, in + 1) : -1;
            if (p >= 0 && writes(im, p, v))
                return true;
        }
    }
    return false;
}

/* Every needed op must have a row; reports each unsupported op type once. */
static bool check_ops(Importer *im)
{
    const char **seen = arena_alloc(&im->scratch, (size_t)(im->n_order + 1) * sizeof *seen);
    if (!seen)
        return nomem(im);
    int n_seen = 0;
    bool ok = true;
    for (int i = 0; i < im->n_order; i++) {
        const Tensorflow__NodeDef *nd = im->gd->node[im->order[i]];
        const char *op = node_op(nd);
        if (is_saver_op(op)) {
            ok = imp_errorf(
                im->o, im->st,
                "node '%s' (%s) belongs to the saver's save/restore subgraph, which is not part of "
                "a training step or an inference: fetch or target other nodes (checkpoints are "
                "read when compiling and written with tcrt_model_save)",
                node_name(nd), op);
            continue;
        }
        if (strcmp(op, "Placeholder") == 0 || strcmp(op, "PlaceholderV2") == 0 || strcmp(op, "_Arg") == 0) {
            ok = imp_errorf(im->o, im->st, "placeholder '%s' (%s) is needed by the fetches but not fed",
                            node_name(nd), op);
            continue;
        }
        const TfOpRow *r = find_row(op);
        if (!r) /* a library function called by name (tf_ops_func.c) */
            r = tf_func_call_row(im->gd->library, op);
        im->info[im->order[i]].row = r;
        if (r)
            continue;
        bool dup = false;
        for (int s = 0; s < n_seen && !dup; s++)
            dup = strcmp(seen[s], op) == 0;
        if (dup)
            continue;
        seen[n_seen++] = op;
        ok = imp_errorf(im->o, im->st, "unsupported TensorFlow op '%s' (node '%s')", op, node_name(nd));
    }
    return ok;
}

static const char *plural(int n)
{
    return n == 1 ? "" : "s";
}

/* ---- control-flow analysis: frames and cond states ---- */

static int frame_find(const Importer *im, const char *name)
{
    if (!im->frame_slot)
        return -1;
    for (size_t i = hash_str(name) & im->frame_mask;; i = (i + 1) & im->frame_mask) {
        int v = im->frame_slot[i];
        if (v == 0)
            return -1;
        if (strcmp(im->frames[v - 1].name, name) == 0)
            return v - 1;
    }
}

static int frame_add(Importer *im, const char *name)
{
    if (!vgrow(&im->scratch, (void **)&im->frames, &im->cap_frames, im->n_frames + 1, sizeof(FrameInfo)))
        return -1;
    if ((size_t)im->n_frames * 2 + 2 > im->frame_mask) {
        size_t cap = (im->frame_mask + 1) * 2;
        if (cap < 16)
            cap = 16;
        int *slot = arena_alloc(&im->scratch, cap * sizeof *slot);
        if (!slot)
            return -1;
        for (int f = 1; f < im->n_frames; f++) {
            size_t i = hash_str(im->frames[f].name) & (cap - 1);
            while (slot[i])
                i = (i + 1) & (cap - 1);
            slot[i] = f + 1;
        }
        im->frame_slot = slot;
        im->frame_mask = cap - 1;
    }
    int id = im->n_frames++;
    FrameInfo *f = &im->frames[id];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->parent = -1;
    f->enter0 = -1;
    f->loopcond = -1;
    if (name) {
        size_t i = hash_str(name) & im->frame_mask;
        while (im->frame_slot[i])
            i = (i + 1) & im->frame_mask;
        im->frame_slot[i] = id + 1;
    }
    return id;
}

/* "frame 'while/while_context'" or "the root frame" */
static const char *frame_desc(const Importer *im, int f, char *buf, size_t n)
{
    if (f <= FRAME_ROOT)
        snprintf(buf, n, "the root frame");
    else
        snprintf(buf, n, "frame '%s'", im->frames[f].name);
    return buf;
}

static int state_depth(const State *s)
{
    return s ? s->depth : 0;
}

/* 1: s lies inside base (base is a prefix of s); 2: s is outside base (a
 * proper prefix of it); 0: neither (another branch). */
static int state_rel(const State *s, const State *base)
{
    int ds = state_depth(s), db = state_depth(base);
    const State *t;
    if (ds >= db) {
        for (t = s; state_depth(t) > db; t = t->up)
            ;
        return t == base ? 1 : 0;
    }
    for (t = base; state_depth(t) > ds; t = t->up)
        ;
    return t == s ? 2 : 0;
}

/* The deeper of two nested states; STATE_BAD when in different branches. */
static const State *state_join(const State *a, const State *b)
{
    if (a == STATE_BAD || b == STATE_BAD)
        return STATE_BAD;
    if (a == b)
        return a;
    int r = state_rel(a, b);
    return r == 1 ? a : r == 2 ? b : STATE_BAD;
}

static size_t state_hash(const State *up, int pred, int pred_k, int branch)
{
    uint64_t h = (uint64_t)(uintptr_t)up * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)(uint32_t)pred << 32 | (uint32_t)pred_k) * 0xC2B2AE3D27D4EB4Full;
    h ^= (uint64_t)branch + (h >> 29);
    return (size_t)(h ^ (h >> 31));
}

/* The interned state up + (pred, branch); NULL on OOM. */
static const State *state_push(Importer *im, const State *up, int pred, int pred_k, int branch)
{
    if (up == STATE_BAD)
        return STATE_BAD;
    if ((im->n_states + 1) * 2 > im->states_cap) {
        size_t cap = im->states_cap ? im->states_cap * 2 : 64;
        const State **t = arena_alloc(&im->scratch, cap * sizeof *t);
        if (!t)
            return NULL;
        for (size_t i = 0; i < im->states_cap; i++) {
            const State *s = im->states[i];
            if (!s)
                continue;
            size_t h = state_hash(s->up, s->pred, s->pred_k, s->branch) & (cap - 1);
            while (t[h])
                h = (h + 1) & (cap - 1);
            t[h] = s;
        }
        im->states = t;
        im->states_cap = cap;
    }
    size_t h = state_hash(up, pred, pred_k, branch) & (im->states_cap - 1);
    for (; im->states[h]; h = (h + 1) & (im->states_cap - 1)) {
        const State *s = im->states[h];
        if (s->up == up && s->pred == pred && s->pred_k == pred_k && s->branch == branch)
            return s;
    }
    State *s = arena_alloc(&im->scratch, sizeof *s);
    if (!s)
        return NULL;
    *s = (State){up, pred, pred_k, branch, state_depth(up) + 1};
    im->states[h] = s;
    im->n_states++;
    return s;
}

static int tensor_frame(const Importer *im, int j, int k)
{
    return find_feed(im, j, k) ? FRAME_ROOT : im->info[j].frame;
}

static const State *tensor_state(const Importer *im, int j, int k)
{
    if (k >= 0 && find_feed(im, j, k))
        return NULL;
    const NodeInfo *a = &im->info[j];
    if (a->role == ROLE_COND_SWITCH && k >= 0 && k < 2)
        return a->out_st[k];
    return a->st;
}

/* The text of node nd's data input i ("x:1"). */
static const char *data_input(const Tensorflow__NodeDef *nd, int i)
{
    for (size_t p = 0; p < nd->n_input; p++) {
        const char *s = nd->input[p] ? nd->input[p] : "";
        if (s[0] != '^' && i-- == 0)
            return s;
    }
    return "?";
}

static const char *tensor_text(const Importer *im, int j, int k, char *buf, size_t n)
{
    const char *name = node_name(im->gd->node[j]);
    if (k > 0)
        snprintf(buf, n, "%s:%d", name, k);
    else
        snprintf(buf, n, "%s", name);
    return buf;
}

static const char *arena_printf(Importer *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static const char *arena_printf(Importer *im, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const char *s = arena_strdup(&im->scratch, buf);
    return s ? s : "out of memory";
}

/* Frame and state of an ordinary node from its data inputs (or, with none,
 * from its followed control inputs); inputs of different frames are an
 * error, inputs from different cond branches give STATE_BAD. */
static bool join_inputs(Importer *im, int j)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    NodeInfo *a = &im->info[j];
    bool ctl = a->n_in == 0;
    int n = ctl ? a->n_ctl : a->n_in;
    int frame = FRAME_FLEX, from = -1;
    const State *s = NULL;
    int s_from = -1;
    for (int i = 0; i < n; i++) {
        int p = ctl ? a->ctl[i] : a->in_node[i], k = ctl ? -1 : a->in_idx[i];
        int f = ctl ? im->info[p].frame : tensor_frame(im, p, k);
        if (f == FRAME_FLEX)
            continue;
        if (frame == FRAME_FLEX) {
            frame = f;
            from = i;
        } else if (f != frame) {
            char b1[300], b2[300];
            if (ctl)
                return imp_errorf(im->o, im->st,
                                  "node '%s' (%s) has control inputs from different frames: '^%s' is in %s "
                                  "but '^%s' is in %s",
                                  node_name(nd), node_op(nd), node_name(im->gd->node[a->ctl[from]]),
                                  frame_desc(im, frame, b1, sizeof b1), node_name(im->gd->node[p]),
                                  frame_desc(im, f, b2, sizeof b2));
            return imp_errorf(im->o, im->st,
                              "node '%s' (%s) has inputs from different frames: input %d '%s' is in %s but "
                              "input %d '%s' is in %s",
                              node_name(nd), node_op(nd), from, data_input(nd, from),
                              frame_desc(im, frame, b1, sizeof b1), i, data_input(nd, i),
                              frame_desc(im, f, b2, sizeof b2));
        }
        const State *si = tensor_state(im, p, k);
        if (s_from < 0) {
            s = si;
            s_from = i;
            if (si == STATE_BAD)
                a->bad = im->info[p].bad;
            continue;
        }
        const State *t = state_join(s, si);
        if (t == STATE_BAD && !a->bad) {
            if (si == STATE_BAD)
                a->bad = im->info[p].bad;
            else
                a->bad = arena_printf(
                    im, "node '%s' (%s) reads '%s' and '%s', which lie in different cond branches",
                    node_name(nd), node_op(nd),
                    ctl ? node_name(im->gd->node[a->ctl[s_from]]) : data_input(nd, s_from),
                    ctl ? node_name(im->gd->node[p]) : data_input(nd, i));
        }
        s = t;
    }
    a->frame = frame;
    a->st = s;
    return true;
}

static bool an_enter(Importer *im, int j)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    NodeInfo *a = &im->info[j];
    TfCtx c = {im->g, im->o->file, nd, NULL, im->st, im->gd->library, im->state};
    const char *name;
    if (!tf_attr_str(&c, "frame_name", &name))
        return false;
    if (a->n_in != 1)
        return tf_errorf(&c, "expected 1 input, got %d", a->n_in);
    int p = a->in_node[0], k = a->in_idx[0];
    int pf = tensor_frame(im, p, k);
    const State *ps = tensor_state(im, p, k);
    bool flex = pf == FRAME_FLEX;
    if (flex)
        pf = FRAME_ROOT;
    int f = frame_find(im, name);
    if (f < 0 && (f = frame_add(im, name)) < 0)
        return nomem(im);
    FrameInfo *fi = &im->frames[f];
    for (int q = pf; q > FRAME_ROOT; q = im->frames[q].parent)
        if (q == f)
            return tf_errorf(&c, "enters frame '%s' from inside that frame", name);
    if (fi->parent < 0) {
        fi->parent = pf;
        fi->enter0 = j;
        fi->depth = im->frames[pf].depth + 1;
        if (fi->depth > IR_MAX_REGION_DEPTH)
            return tf_errorf(&c, "loops nested more than %d deep (the limit)", IR_MAX_REGION_DEPTH);
    } else if (fi->parent != pf) {
        char b1[300], b2[300];
        return tf_errorf(&c, "enters frame '%s' from %s, but node '%s' (%s) enters it from %s", name,
                         frame_desc(im, pf, b1, sizeof b1), node_name(im->gd->node[fi->enter0]),
                         node_op(im->gd->node[fi->enter0]), frame_desc(im, fi->parent, b2, sizeof b2));
    }
    if (!flex) {
        if (!fi->outer_set) {
            fi->outer = ps;
            fi->outer_set = true;
        } else {
            const State *t = state_join(fi->outer, ps);
            if (t != fi->outer && fi->exit_seen && t != STATE_BAD)
                return tf_errorf(
                    &c, "reads '%s' inside a cond branch that the rest of loop frame '%s' is outside of",
                    data_input(nd, 0), name);
            fi->outer = t;
        }
    }
    a->frame = f;
    a->st = NULL;
    if (!ivec_push(&im->scratch, &fi->enters, j))
        return nomem(im);
    return true;
}

static bool an_exit(Importer *im, int j)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    NodeInfo *a = &im->info[j];
    TfCtx c = {im->g, im->o->file, nd, NULL, im->st, im->gd->library, im->state};
    if (a->n_in != 1)
        return tf_errorf(&c, "expected 1 input, got %d", a->n_in);
    int p = a->in_node[0], k = a->in_idx[0];
    int f = tensor_frame(im, p, k);
    if (f <= FRAME_ROOT)
        return tf_errorf(&c, "input '%s' is not inside a loop frame (an Exit without an Enter)",
                         data_input(nd, 0));
    FrameInfo *fi = &im->frames[f];
    if (fi->loopcond < 0)
        return tf_errorf(&c, "leaves loop frame '%s', which has no LoopCond", fi->name);
    if (im->info[p].role != ROLE_LOOP_SWITCH || k != 0)
        return tf_errorf(&c, "input '%s' is not output 0 of a Switch on the loop condition '%s' (LoopCond)",
                         data_input(nd, 0), node_name(im->gd->node[fi->loopcond]));
    a->frame = fi->parent;
    a->st = fi->outer;
    if (fi->outer == STATE_BAD)
        a->bad = arena_printf(im, "loop frame '%s' is entered from different cond branches", fi->name);
    a->var = im->info[p].var;
    fi->exit_seen = true;
    return true;
}

static bool an_loop_cond(Importer *im, int j)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    NodeInfo *a = &im->info[j];
    TfCtx c = {im->g, im->o->file, nd, NULL, im->st, im->gd->library, im->state};
    if (a->n_in != 1)
        return tf_errorf(&c, "expected 1 input, got %d", a->n_in);
    if (!join_inputs(im, j))
        return false;
    if (a->frame <= FRAME_ROOT)
        return tf_errorf(&c, "is not inside a loop frame (its input '%s' comes from no Enter)",
                         data_input(nd, 0));
    FrameInfo *fi = &im->frames[a->frame];
    if (fi->loopcond >= 0)
        return tf_errorf(&c, "loop frame '%s' has a second LoopCond (the first is '%s')", fi->name,
                         node_name(im->gd->node[fi->loopcond]));
    fi->loopcond = j;
    return true;
}

static bool an_merge(Importer *im, int j)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    NodeInfo *a = &im->info[j];
    TfCtx c = {im->g, im->o->file, nd, NULL, im->st, im->gd->library, im->state};
    if (a->n_in < 1)
        return tf_errorf(&c, "has no inputs");
    int n_next = 0, next = -1, enter = -1;
    for (int i = 0; i < a->n_in; i++) {
        int p = a->in_node[i];
        if (find_feed(im, p, a->in_idx[i]))
            continue;
        if (im->info[p].cf == CF_NEXT) {
            n_next++;
            next = i;
        } else if (im->info[p].cf == CF_ENTER) {
            enter = i;
        }
    }
    if (n_next > 0) {
        /* a loop variable: Merge(Enter, NextIteration) */
        if (enter < 0)
            return tf_errorf(&c, "has a NextIteration input ('%s') but no Enter input", data_input(nd, next));
        if (a->n_in != 2 || n_next != 1)
            return tf_errorf(&c, "a loop Merge takes one Enter and one NextIteration, got %d inputs",
                             a->n_in);
        int f = im->info[a->in_node[enter]].frame;
        FrameInfo *fi = &im->frames[f];
        a->role = ROLE_LOOP_MERGE;
        a->frame = f;
        a->st = NULL;
        a->var = fi->merges.n;
        if (!ivec_push(&im->scratch, &fi->merges, j))
            return nomem(im);
        return true;
    }
    if (!join_inputs(im, j))
        return false;
    a->bad = NULL; /* inputs from different branches are what a Merge joins */
    /* a cond Merge: every input one branch deeper than the Merge, on one
     * predicate, each branch once */
    const State *base = NULL;
    int pred = -1, pred_k = -1, seen[2] = {-1, -1};
    a->st = STATE_BAD;
    for (int i = 0; i < a->n_in; i++) {
        int p = a->in_node[i], k = a->in_idx[i];
        const State *s = tensor_frame(im, p, k) == FRAME_FLEX ? NULL : tensor_state(im, p, k);
        if (s == STATE_BAD) {
            a->bad = im->info[p].bad;
            return true;
        }
        if (!s) {
            a->bad = arena_printf(im, "node '%s' (%s): input %d '%s' does not come from a branch of a cond",
                                  node_name(nd), node_op(nd), i, data_input(nd, i));
            return true;
        }
        if (i == 0) {
            base = s->up;
            pred = s->pred;
            pred_k = s->pred_k;
        } else if (s->up != base || s->pred != pred || s->pred_k != pred_k) {
            a->bad = arena_printf(im, "node '%s' (%s): inputs 0 '%s' and %d '%s' come from different conds",
                                  node_name(nd), node_op(nd), data_input(nd, 0), i, data_input(nd, i));
            return true;
        }
        if (seen[s->branch] >= 0) {
            a->bad =
                arena_printf(im, "node '%s' (%s): inputs %d '%s' and %d '%s' both come from the %s branch",
                             node_name(nd), node_op(nd), seen[s->branch], data_input(nd, seen[s->branch]), i,
                             data_input(nd, i), s->branch ? "true" : "false");
            return true;
        }
        seen[s->branch] = i;
    }
    if (seen[0] < 0 || seen[1] < 0) {
        char b[300];
        a->bad = arena_printf(im, "node '%s' (%s) has no input from the %s branch of the cond on '%s'",
                              node_name(nd), node_op(nd), seen[0] < 0 ? "false" : "true",
                              tensor_text(im, pred, pred_k, b, sizeof b));
        return true;
    }
    a->role = ROLE_COND_MERGE;
    a->st = base;
    a->pred = pred;
    a->pred_k = pred_k;
    return true;
}

static bool an_switch(Importer *im, int j)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    NodeInfo *a = &im->info[j];
    TfCtx c = {im->g, im->o->file, nd, NULL, im->st, im->gd->library, im->state};
    if (a->n_in != 2)
        return tf_errorf(&c, "expected 2 inputs (data, pred), got %d", a->n_in);
    if (!join_inputs(im, j))
        return false;
    int d = a->in_node[0], p = a->in_node[1], pk = a->in_idx[1];
    bool fed = find_feed(im, p, pk) != NULL;
    if (a->frame > FRAME_ROOT && !fed && im->frames[a->frame].loopcond == p && pk == 0) {
        if (find_feed(im, d, a->in_idx[0]) || im->info[d].role != ROLE_LOOP_MERGE)
            return tf_errorf(&c,
                             "switches on the loop condition '%s' but its input '%s' is not a loop "
                             "variable's Merge",
                             node_name(im->gd->node[p]), data_input(nd, 0));
        a->role = ROLE_LOOP_SWITCH;
        a->var = im->info[d].var;
        a->out_st[0] = a->out_st[1] = a->st;
        return true;
    }
    /* one predicate however many Identities it went through (tf.cond
     * switches data on pred_id = Identity(pred), its pivots on pred) */
    if (!fed && pk == 0 && im->info[p].canon >= 0) {
        int p2 = im->info[p].canon;
        pk = im->info[p].canon_k;
        p = p2;
    }
    a->role = ROLE_COND_SWITCH;
    if (state_depth(a->st) >= MAX_COND_DEPTH) {
        a->out_st[0] = a->out_st[1] = STATE_BAD;
        a->bad = arena_printf(im, "node '%s' (%s) lies inside more than %d conds", node_name(nd), node_op(nd),
                              MAX_COND_DEPTH);
        return true;
    }
    for (int b = 0; b < 2; b++) {
        a->out_st[b] = state_push(im, a->st, p, pk, b);
        if (!a->out_st[b])
            return nomem(im);
    }
    return true;
}

static bool analyze(Importer *im)
{
    if (frame_add(im, NULL) != FRAME_ROOT)
        return nomem(im);
    for (int i = 0; i < im->n_order; i++) {
        int j = im->order[i];
        NodeInfo *a = &im->info[j];
        bool ok;
        switch (a->cf) {
        case CF_ENTER:
            ok = an_enter(im, j);
            break;
        case CF_EXIT:
            ok = an_exit(im, j);
            break;
        case CF_LOOPCOND:
            ok = an_loop_cond(im, j);
            break;
        case CF_MERGE:
            ok = an_merge(im, j);
            break;
        case CF_SWITCH:
            ok = an_switch(im, j);
            break;
        default:
            ok = join_inputs(im, j);
            break;
        }
        if (!ok)
            return false;
        /* Identity chains, for predicates */
        const char *op = node_op(im->gd->node[j]);
        a->canon = -1;
        if (a->n_in == 1 && (strcmp(op, "Identity") == 0 || strcmp(op, "RefIdentity") == 0)) {
            int p = a->in_node[0], k = a->in_idx[0];
            bool fed = find_feed(im, p, k) != NULL;
            a->canon = !fed && k == 0 && im->info[p].canon >= 0 ? im->info[p].canon : p;
            a->canon_k = !fed && k == 0 && im->info[p].canon >= 0 ? im->info[p].canon_k : k;
        }
    }
    /* a loop variable's NextIteration must be in the loop's frame */
    for (int f = 1; f < im->n_frames; f++) {
        const FrameInfo *fi = &im->frames[f];
        for (int v = 0; v < fi->merges.n; v++) {
            int m = fi->merges.v[v];
            const NodeInfo *a = &im->info[m];
            for (int i = 0; i < a->n_in; i++) {
                int p = a->in_node[i];
                if (im->info[p].cf != CF_NEXT || im->info[p].frame == FRAME_FLEX || im->info[p].frame == f)
                    continue;
                char b1[300], b2[300];
                return imp_errorf(
                    im->o, im->st, "node '%s' (NextIteration) is in %s but feeds loop Merge '%s' of %s",
                    node_name(im->gd->node[p]), frame_desc(im, im->info[p].frame, b1, sizeof b1),
                    node_name(im->gd->node[m]), frame_desc(im, f, b2, sizeof b2));
            }
        }
    }
    return true;
}

/* ---- lowering in contexts ---- */

/* What a tensor is in one context. */
enum {
    TV_NONE,      /* the row did not produce this output */
    TV_VALUE,     /* an IR value of the context's graph */
    TV_DEAD,      /* never computed: the untaken side of a constant Switch */
    TV_ELSEWHERE, /* computed only inside a cond branch (run-time predicate) */
};

typedef struct TVal {
    IrValue v;
    unsigned char kind;
} TVal;

/* A TF node lowered in one context. */
typedef struct Rec {
    unsigned char dfs;  /* 0 unseen, 1 on the stack, 2 lowered */
    unsigned char mark; /* the node as a whole: TV_VALUE, TV_DEAD or TV_ELSEWHERE */
    int n_outs;
    TVal *outs; /* mark TV_VALUE: one per output */
} Rec;

/* The operands of one WHILE or COND (after the selector), shared by its
 * regions: region parameter i is operand i. */
typedef struct Caps {
    IrValue *v;
    int n, cap;
    IMap index; /* captured value -> operand (loop variables excluded) */
} Caps;

enum { CTX_ROOT, CTX_LOOP_COND, CTX_LOOP_BODY, CTX_BRANCH };

typedef struct Ctx Ctx;
struct Ctx {
    Ctx *parent;
    int kind; /* CTX_* */
    IrGraph *g;
    int frame;         /* the frame whose nodes it lowers */
    const State *base; /* a branch: the cond state it lowers */
    Caps *caps;        /* regions: the region op's operands */
    IrValue *params;   /* regions: parameter i */
    int n_params, cap_params;
    IMap rec_index; /* TF node -> recs[] */
    Rec **recs;
    int n_recs, cap_recs;
    IMap cap_index; /* captured TF tensor -> capv[] */
    TVal *capv;
    int n_capv, cap_capv;
    IMap loop_index; /* loop frame -> loopv[]: the WHILE built here */
    TVal *loopv;
    int n_loopv, cap_loopv;
};

/* Constants up to this size are copied into a region rather than passed
 * as operands, so that shape arithmetic inside it still folds. */
#define CAPTURE_COPY_BYTES 4096

/* Who reads a tensor, for messages: data input `pos` of nd, or a fetch. */
typedef struct Use {
    const Tensorflow__NodeDef *nd; /* NULL: a fetch */
    int pos;                       /* data input index; -1: nd's predicate */
    const char *in;                /* the tensor as written; NULL: nd's data input pos */
} Use;

static const char *use_in(const Use *u)
{
    return u->in ? u->in : data_input(u->nd, u->pos);
}

enum { CL_OWN, CL_EXIT, CL_PARAM, CL_CAPTURE, CL_ENTER, CL_SWITCH_IN, CL_FEED, CL_ERROR };

static bool lerr(Importer *im, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Errors while lowering carry no file name: it is added once at the end,
 * to the IR builder's and the rows' messages as well. */
static bool lerr(Importer *im, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st_verrorf(im->st, ST_ERROR, fmt, ap);
    va_end(ap);
    return false;
}

/* "node 'x' (Add): input 2" (the NodeDef position, control inputs counted) or "fetch" */
static const char *use_text(const Use *u, char *buf, size_t n)
{
    if (!u->nd) {
        snprintf(buf, n, "fetch");
        return buf;
    }
    if (u->pos < 0) {
        snprintf(buf, n, "node '%s' (%s): predicate", node_name(u->nd), node_op(u->nd));
        return buf;
    }
    size_t raw = 0;
    for (int i = u->pos; raw < u->nd->n_input; raw++) {
        const char *s = u->nd->input[raw] ? u->nd->input[raw] : "";
        if (s[0] != '^' && i-- == 0)
            break;
    }
    snprintf(buf, n, "node '%s' (%s): input %zu", node_name(u->nd), node_op(u->nd), raw);
    return buf;
}

static Ctx *ctx_new(Importer *im, Ctx *parent, int kind, int frame, const State *base, Caps *caps)
{
    Ctx *c = arena_alloc(&im->scratch, sizeof *c);
    if (!c) {
        nomem(im);
        return NULL;
    }
    c->parent = parent;
    c->kind = kind;
    c->frame = frame;
    c->base = base;
    c->caps = caps;
    c->g = parent ? ir_region_new(parent->g, im->st) : im->g;
    return c->g ? c : NULL;
}

static Rec *rec_find(const Ctx *c, int j)
{
    int m = imap_get(&c->rec_index, (uint64_t)j);
    return m < 0 ? NULL : c->recs[m];
}

static Rec *rec_get(Importer *im, Ctx *c, int j)
{
    Rec *r = rec_find(c, j);
    if (r)
        return r;
    r = arena_alloc(&im->scratch, sizeof *r);
    if (!r || !vgrow(&im->scratch, (void **)&c->recs, &c->cap_recs, c->n_recs + 1, sizeof *c->recs) ||
        !imap_put(&im->scratch, &c->rec_index, (uint64_t)j, c->n_recs)) {
        nomem(im);
        return NULL;
    }
    c->recs[c->n_recs++] = r;
    return r;
}

/* Region c's parameter idx (operand idx of its op), adding parameters up to
 * it: every region of one op has a parameter for every operand. */
static bool ctx_param(Importer *im, Ctx *c, int idx, IrValue *v)
{
    while (c->n_params <= idx) {
        char name[32];
        snprintf(name, sizeof name, "arg%d", c->n_params);
        IrValue a = ir_add_feed(c->g, name, ir_value_type(c->caps->v[c->n_params]), im->st);
        if (!a.node)
            return false;
        tf_mark_pending_param(a, c->caps->v[c->n_params]);
        if (!vgrow(&im->scratch, (void **)&c->params, &c->cap_params, c->n_params + 1, sizeof(IrValue)))
            return nomem(im);
        c->params[c->n_params++] = a;
    }
    if (v)
        *v = c->params[idx];
    return true;
}

static bool caps_add(Importer *im, Caps *caps, IrValue v, bool dedup, int *idx)
{
    uint64_t key = (uint64_t)(uint32_t)v.node->id << 32 | (uint32_t)v.index;
    int m = dedup ? imap_get(&caps->index, key) : -1;
    if (m >= 0) {
        *idx = m;
        return true;
    }
    if (!vgrow(&im->scratch, (void **)&caps->v, &caps->cap, caps->n + 1, sizeof(IrValue)) ||
        (dedup && !imap_put(&im->scratch, &caps->index, key, caps->n)))
        return nomem(im);
    caps->v[caps->n] = v;
    *idx = caps->n++;
    return true;
}

/* How context c obtains tensor (j, k) (k = -1: node j as a control input).
 * CL_ERROR explains itself in why. */
static int classify(Importer *im, const Ctx *c, int j, int k, int *aux, char *why, size_t n)
{
    if (k >= 0 && find_feed(im, j, k))
        return c->parent ? CL_CAPTURE : CL_FEED;
    const NodeInfo *a = &im->info[j];
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    if (a->frame == FRAME_FLEX)
        return CL_OWN;
    if (a->frame != c->frame) {
        char b1[300], b2[300];
        snprintf(why, n, "'%s' (%s) is in %s, not in %s", node_name(nd), node_op(nd),
                 frame_desc(im, a->frame, b1, sizeof b1), frame_desc(im, c->frame, b2, sizeof b2));
        return CL_ERROR;
    }
    const State *s = tensor_state(im, j, k);
    int rel = s == STATE_BAD ? 1 : state_rel(s, c->base);
    if (rel == 2)
        return CL_CAPTURE;
    if (rel == 0) {
        char b[300];
        snprintf(why, n, "'%s' (%s) lies in another branch of the cond on '%s' (or of a cond around it)",
                 node_name(nd), node_op(nd), tensor_text(im, c->base->pred, c->base->pred_k, b, sizeof b));
        return CL_ERROR;
    }
    if (c->kind == CTX_BRANCH && a->role == ROLE_COND_SWITCH && k >= 0 && s == c->base &&
        a->st == c->base->up)
        return CL_SWITCH_IN;
    if (a->cf == CF_EXIT)
        return CL_EXIT;
    if (a->cf == CF_ENTER)
        return CL_ENTER;
    if (a->cf == CF_NEXT) {
        snprintf(why, n, "'%s' (NextIteration) is read outside its loop Merge", node_name(nd));
        return CL_ERROR;
    }
    if (a->role == ROLE_LOOP_MERGE) {
        *aux = a->var;
        return CL_PARAM;
    }
    if (a->role == ROLE_LOOP_SWITCH && k >= 0) {
        if (k == 1 && c->kind == CTX_LOOP_BODY) {
            *aux = a->var;
            return CL_PARAM;
        }
        if (k == 1)
            snprintf(why, n, "'%s:1' (Switch) is the loop body's value, read by the loop condition",
                     node_name(nd));
        else
            snprintf(why, n, "'%s' (Switch) output %d leaves the loop; only an Exit may read it",
                     node_name(nd), k);
        return CL_ERROR;
    }
    return CL_OWN;
}

static bool capture(Importer *im, Ctx *c, int j, int k, const Use *u, TVal *out);

/* The value of tensor (j, k) in context c, read by u. */
static bool get_tensor(Importer *im, Ctx *c, int j, int k, const Use *u, TVal *out)
{
    char why[800], who[600];
    int aux = 0;
    int cl = classify(im, c, j, k, &aux, why, sizeof why);
    const NodeInfo *a = &im->info[j];
    const Tensorflow__NodeDef *pd = im->gd->node[j];
    switch (cl) {
    case CL_FEED:
        *out = (TVal){find_feed(im, j, k)->value, TV_VALUE};
        return true;
    case CL_OWN:
    case CL_EXIT: {
        const Rec *r = rec_find(c, j);
        if (!r || r->dfs != 2)
            return lerr(im, "%s '%s': internal: '%s' is read before it is lowered",
                        use_text(u, who, sizeof who), use_in(u), node_name(pd));
        if (r->mark != TV_VALUE) {
            *out = (TVal){{NULL, 0}, r->mark};
            return true;
        }
        if (k >= r->n_outs)
            return lerr(im, "%s '%s' but '%s' (%s) has %d output%s", use_text(u, who, sizeof who), use_in(u),
                        node_name(pd), node_op(pd), r->n_outs, plural(r->n_outs));
        if (r->outs[k].kind == TV_NONE)
            return lerr(im, "%s '%s': output %d of '%s' (%s) is not supported", use_text(u, who, sizeof who),
                        use_in(u), k, node_name(pd), node_op(pd));
        *out = r->outs[k];
        return true;
    }
    case CL_PARAM:
        *out = (TVal){c->params[aux], TV_VALUE};
        return true;
    case CL_CAPTURE:
        return capture(im, c, j, k, u, out);
    case CL_ENTER:
    case CL_SWITCH_IN: /* the Enter's or Switch's data input, from outside */
        return capture(im, c, a->in_node[0], a->in_idx[0], u, out);
    default:
        return lerr(im, "%s '%s': %s", use_text(u, who, sizeof who), use_in(u), why);
    }
}

/* Tensor (j, k) of c's parent context made available in region c: a small
 * constant is copied, anything else becomes an operand of the region op
 * and a parameter of every region of it. */
static bool capture(Importer *im, Ctx *c, int j, int k, const Use *u, TVal *out)
{
    uint64_t key = (uint64_t)(uint32_t)j << 32 | (uint32_t)k;
    int m = imap_get(&c->cap_index, key);
    if (m >= 0) {
        *out = c->capv[m];
        return true;
    }
    if (!c->parent)
        return lerr(im, "internal: capture in the top-level graph");
    TVal o;
    if (!get_tensor(im, c->parent, j, k, u, &o))
        return false;
    if (o.kind == TV_VALUE) {
        const IrType *t = ir_value_type(o.v);
        const char *so = c->g->cur_origin, *sop = c->g->cur_origin_op;
        ir_graph_set_origin(c->g, node_name(im->gd->node[j]), node_op(im->gd->node[j]));
        if (ir_is_const(o.v) && ir_type_bytes(t) <= CAPTURE_COPY_BYTES) {
            o.v = ir_const(c->g, t->dtype, &t->shape, o.v.node->data, im->st);
        } else {
            int idx;
            if (!caps_add(im, c->caps, o.v, true, &idx) || !ctx_param(im, c, idx, &o.v))
                return false;
        }
        c->g->cur_origin = so;
        c->g->cur_origin_op = sop;
        if (!o.v.node)
            return false;
    }
    if (!vgrow(&im->scratch, (void **)&c->capv, &c->cap_capv, c->n_capv + 1, sizeof(TVal)) ||
        !imap_put(&im->scratch, &c->cap_index, key, c->n_capv))
        return nomem(im);
    c->capv[c->n_capv++] = o;
    *out = o;
    return true;
}

/* Liveness of control input j of a node without data inputs. */
static int ctl_mark(Importer *im, const Ctx *c, int j)
{
    char why[8];
    int aux;
    int cl = classify(im, c, j, -1, &aux, why, sizeof why);
    if (cl != CL_OWN && cl != CL_EXIT)
        return TV_VALUE;
    const Rec *r = rec_find(c, j);
    return r ? r->mark : TV_VALUE;
}

static bool ctx_run(Importer *im, Ctx *c, const int *tn, const int *tk, int n_t);

/* Node j needs a run-time predicate but its cond structure has no WHILE or
 * COND form (why in a->bad). */
static bool bad_state(Importer *im, int j)
{
    const NodeInfo *a = &im->info[j];
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    char b[600];
    if (!a->bad)
        snprintf(b, sizeof b, "node '%s' (%s) joins values from different cond branches", node_name(nd),
                 node_op(nd));
    return lerr(im,
                "%s, and a predicate it depends on is known only at run time (bind it with --const to "
                "resolve the cond when compiling)",
                a->bad ? a->bad : b);
}

static bool set_mark(Importer *im, Rec *r, int j, int mark)
{
    if (mark == TV_ELSEWHERE && im->info[j].st == STATE_BAD)
        return bad_state(im, j);
    r->mark = (unsigned char)mark;
    r->n_outs = 0;
    return true;
}

static void read_after_assign(Importer *im, const NodeInfo *a, IrValue *in);

/* TensorFlow ops whose lowering keeps an input's run-time extent (ir/dyn.c)
 * right: elementwise math, moves along the other dims, shapes, sums.  Any
 * other op (Mean's divisor, Size, Unpack's count would be the bound's)
 * stops with an error naming it. */
static const char *const dyn_ops[] = {
    "Identity", "StopGradient", "Snapshot", "Cast", "Neg", "Abs", "Exp", "Log", "Sqrt", "Rsqrt", "Square",
    "Sigmoid", "Tanh", "Relu", "Relu6", "Floor", "Ceil", "Round", "Sign", "Reciprocal", "LogicalNot", "Add",
    "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "FloorDiv", "FloorMod", "Maximum", "Minimum", "Pow",
    "SquaredDifference", "Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual", "LogicalAnd",
    "LogicalOr", "Select", "SelectV2", "Where", "GatherV2", "Gather", "ConcatV2", "Concat", "Pack", "Reshape",
    "Squeeze", "ExpandDims", "Shape", "Slice", "StridedSlice", "Split", "Pad", "PadV2", "TopKV2", "Sum", "Max",
    "Min", "Prod", "ZerosLike", "OnesLike", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5",
    NULL};

static bool dyn_input_ok(Importer *im, const Tensorflow__NodeDef *nd, int n_in)
{
    for (int i = 0; i < n_in; i++) {
        const IrShape *s = im->in_buf[i].node ? &ir_value_type(im->in_buf[i])->shape : NULL;
        if (!s || !s->has_dyn)
            continue;
        for (int k = 0; dyn_ops[k]; k++)
            if (strcmp(node_op(nd), dyn_ops[k]) == 0)
                return true;
        char sh[200];
        return lerr(im,
                    "node '%s' (%s): input %d has a data-dependent size (%s, known only at run time: from "
                    "NonMaxSuppression, Where or a computed Range/Slice/Fill), which %s does not support yet",
                    node_name(nd), node_op(nd), i, ir_shape_str(s, sh, sizeof sh), node_op(nd));
    }
    return true;
}

/* An ordinary op: through its row, unless an input is dead or elsewhere. */
static bool lower_plain(Importer *im, Ctx *c, int j, Rec *r)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    const NodeInfo *a = &im->info[j];
    if (!vgrow(&im->scratch, (void **)&im->in_buf, &im->cap_in, a->n_in + 1, sizeof(IrValue)))
        return nomem(im);
    bool dead = false, elsewhere = false;
    for (int i = 0; i < a->n_in; i++) {
        Use u = {nd, i, NULL};
        TVal t;
        if (!get_tensor(im, c, a->in_node[i], a->in_idx[i], &u, &t))
            return false;
        dead |= t.kind == TV_DEAD;
        elsewhere |= t.kind == TV_ELSEWHERE;
        im->in_buf[i] = t.v;
    }
    for (int i = 0; i < a->n_ctl; i++) {
        int m = ctl_mark(im, c, a->ctl[i]);
        dead |= m == TV_DEAD;
        elsewhere |= m == TV_ELSEWHERE;
    }
    if (dead || elsewhere)
        return set_mark(im, r, j, dead ? TV_DEAD : TV_ELSEWHERE);
    if (a->n_ctl > 0 && a->n_in > 0)
        read_after_assign(im, a, im->in_buf);
    if (!dyn_input_ok(im, nd, a->n_in))
        return false;
    ir_graph_set_origin(c->g, node_name(nd), node_op(nd));
    im->cur_node = j;
    TfCtx tc = {c->g, NULL, nd, a->row, im->st, im->gd->library, im->state};
    int n_out = 0, first_new = c->g->n_nodes;
    for (int k = 0; k < TF_MAX_OUTPUTS; k++)
        im->out_buf[k] = (IrValue){NULL, 0};
    if (!a->row->lower(&tc, im->in_buf, a->n_in, im->out_buf, &n_out) || !st_ok(im->st)) {
        if (st_ok(im->st))
            tf_errorf(&tc, "lowering failed");
        return false;
    }
    if (!stamp_device(im, c->g, first_new, nd))
        return false;
    if (n_out < 0 || n_out > TF_MAX_OUTPUTS)
        return lerr(im, "node '%s' (%s): internal: bad output count %d", node_name(nd), node_op(nd), n_out);
    r->mark = TV_VALUE;
    r->n_outs = n_out;
    r->outs = arena_alloc(&im->scratch, ((size_t)n_out + 1) * sizeof(TVal));
    if (!r->outs)
        return nomem(im);
    for (int k = 0; k < n_out; k++)
        r->outs[k] = (TVal){im->out_buf[k], im->out_buf[k].node ? TV_VALUE : TV_NONE};
    return true;
}

/* Gives the IR nodes g->nodes[from..] made for TF node nd its requested
 * device (NodeDef.device, when set) and its colocation list (the `_class`
 * attr's "loc:@name" entries); placement (passes/place.c) reads both. */
static bool stamp_device(Importer *im, IrGraph *g, int from, const Tensorflow__NodeDef *nd)
{
    const char *dev = nd->device && nd->device[0] ? arena_strdup(&g->arena, nd->device) : NULL;
    const Tensorflow__AttrValue *cls = node_attr(nd, "_class");
    const Tensorflow__AttrValue__ListValue *l =
        cls && cls->value_case == TENSORFLOW__ATTR_VALUE__VALUE_LIST ? cls->list : NULL;
    int n_loc = 0;
    for (size_t i = 0; l && i < l->n_s; i++)
        n_loc += l->s[i].len > 5 && !memcmp(l->s[i].data, "loc:@", 5);
    const char **locs = NULL;
    if (n_loc) {
        locs = arena_alloc(&g->arena, sizeof(char *) * (size_t)n_loc);
        if (!locs)
            return nomem(im);
        n_loc = 0;
        for (size_t i = 0; i < l->n_s; i++) {
            if (l->s[i].len <= 5 || memcmp(l->s[i].data, "loc:@", 5))
                continue;
            char *nm = arena_alloc(&g->arena, l->s[i].len - 4);
            if (!nm)
                return nomem(im);
            memcpy(nm, l->s[i].data + 5, l->s[i].len - 5);
            locs[n_loc++] = nm;
        }
    }
    if (nd->device && nd->device[0] && !dev)
        return nomem(im);
    for (int i = from; i < g->n_nodes; i++) {
        IrNode *n = g->nodes[i];
        if (!n || n->dead || n->op == OP_CONST)
            continue;
        if (!n->device)
            n->device = dev;
        if (!n->n_coloc) {
            n->coloc = locs;
            n->n_coloc = n_loc;
        }
    }
    return true;
}

/* A cond Switch: with a constant predicate the taken output is the input
 * and the other is dead; with a run-time one both exist only in branches. */
static bool lower_switch(Importer *im, Ctx *c, int j, Rec *r)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    const NodeInfo *a = &im->info[j];
    TVal t[2];
    for (int i = 0; i < 2; i++) {
        Use u = {nd, i, NULL};
        if (!get_tensor(im, c, a->in_node[i], a->in_idx[i], &u, &t[i]))
            return false;
    }
    if (t[0].kind != TV_VALUE || t[1].kind != TV_VALUE) {
        bool dead = t[0].kind == TV_DEAD || t[1].kind == TV_DEAD;
        return set_mark(im, r, j, dead ? TV_DEAD : TV_ELSEWHERE);
    }
    r->mark = TV_VALUE;
    r->n_outs = 2;
    r->outs = arena_alloc(&im->scratch, 2 * sizeof(TVal));
    if (!r->outs)
        return nomem(im);
    double p;
    if (ir_is_const(t[1].v)) {
        if (!ir_const_scalar(t[1].v, &p)) {
            char sb[200];
            return lerr(im, "node '%s' (%s): predicate '%s' is %s, it must be a scalar", node_name(nd),
                        node_op(nd), data_input(nd, 1),
                        ir_shape_str(&ir_value_type(t[1].v)->shape, sb, sizeof sb));
        }
        int taken = p != 0;
        r->outs[taken] = t[0];
        r->outs[!taken] = (TVal){{NULL, 0}, TV_DEAD};
    } else {
        r->outs[0] = r->outs[1] = (TVal){{NULL, 0}, TV_ELSEWHERE};
    }
    return true;
}

static bool same_type(const IrType *a, const IrType *b)
{
    return a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape);
}

static const char *type_text(const IrType *t, char *buf, size_t n)
{
    char sb[200];
    snprintf(buf, n, "%s%s", tcrt_dtype_name(t->dtype), ir_shape_str(&t->shape, sb, sizeof sb));
    return buf;
}

/* A cond Merge with a run-time predicate pv: one COND, region 0 computing
 * the true branch's input, region 1 the false branch's. */
static bool build_cond(Importer *im, Ctx *c, int j, Rec *r, IrValue pv)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    const NodeInfo *a = &im->info[j];
    int idx_of[2] = {-1, -1};
    for (int i = 0; i < a->n_in; i++)
        idx_of[tensor_state(im, a->in_node[i], a->in_idx[i])->branch] = i;
    Caps *caps = arena_alloc(&im->scratch, sizeof *caps);
    if (!caps)
        return nomem(im);
    Ctx *br[2];
    IrValue res[2];
    for (int k = 0; k < 2; k++) {
        int b = 1 - k, i = idx_of[b];
        const State *base = state_push(im, a->st, a->pred, a->pred_k, b);
        if (!base)
            return nomem(im);
        br[k] = ctx_new(im, c, CTX_BRANCH, c->frame, base, caps);
        if (!br[k])
            return false;
        ir_graph_set_origin(br[k]->g, node_name(nd), node_op(nd));
        if (!ctx_run(im, br[k], &a->in_node[i], &a->in_idx[i], 1))
            return false;
        Use u = {nd, i, NULL};
        TVal t;
        if (!get_tensor(im, br[k], a->in_node[i], a->in_idx[i], &u, &t))
            return false;
        if (t.kind != TV_VALUE)
            return lerr(
                im, "node '%s' (%s): input %d '%s' (the %s branch) has no value: it is dead in that branch",
                node_name(nd), node_op(nd), i, use_in(&u), b ? "true" : "false");
        res[k] = t.v;
    }
    const IrType *t0 = ir_value_type(res[0]), *t1 = ir_value_type(res[1]);
    if (!same_type(t0, t1)) {
        char b1[240], b2[240];
        return lerr(
            im,
            "node '%s' (%s): the true branch gives %s ('%s') but the false branch %s ('%s'); a cond's "
            "branches must agree in dtype and shape",
            node_name(nd), node_op(nd), type_text(t0, b1, sizeof b1), data_input(nd, idx_of[1]),
            type_text(t1, b2, sizeof b2), data_input(nd, idx_of[0]));
    }
    IrValue *ops = arena_alloc(&im->scratch, (size_t)(caps->n + 1) * sizeof *ops);
    if (!ops)
        return nomem(im);
    ops[0] = pv;
    for (int k = 0; k < 2; k++) {
        if ((caps->n > 0 && !ctx_param(im, br[k], caps->n - 1, NULL)) ||
            !ir_add_fetch(br[k]->g, "r0", res[k], im->st))
            return false;
    }
    if (caps->n > 0)
        memcpy(ops + 1, caps->v, (size_t)caps->n * sizeof *ops);
    ir_graph_set_origin(c->g, node_name(nd), node_op(nd));
    IrGraph *regions[2] = {br[0]->g, br[1]->g};
    IrNode *cn = ir_emit_region(c->g, OP_COND, ops, caps->n + 1, regions, 2, im->st);
    if (!cn)
        return false;
    /* value_index: the index of the true input when pv holds, else the false one's */
    IrValue sel = pv;
    if (ir_value_type(pv)->shape.rank != 0) {
        IrShape scalar = {0, {0}};
        sel = ir_reshape(c->g, pv, &scalar, im->st);
    }
    IrValue vi = ir_emit1(c->g, OP_SELECT,
                          (IrValue[]){sel, ir_const_scalar_f(c->g, TCRT_I32, idx_of[1], im->st),
                                      ir_const_scalar_f(c->g, TCRT_I32, idx_of[0], im->st)},
                          3, NULL, NULL, im->st);
    if (!vi.node)
        return false;
    r->mark = TV_VALUE;
    r->n_outs = 2;
    r->outs = arena_alloc(&im->scratch, 2 * sizeof(TVal));
    if (!r->outs)
        return nomem(im);
    r->outs[0] = (TVal){{cn, 0}, TV_VALUE};
    r->outs[1] = (TVal){vi, TV_VALUE};
    return true;
}

/* A (non-loop) Merge: forwards its one live input when the conds it joins
 * are resolved at compile time, else builds a COND. */
static bool lower_merge(Importer *im, Ctx *c, int j, Rec *r)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    const NodeInfo *a = &im->info[j];
    TVal *in = arena_alloc(&im->scratch, (size_t)(a->n_in + 1) * sizeof *in);
    if (!in)
        return nomem(im);
    int n_value = 0, n_else = 0, first = -1, second = -1, first_else = -1;
    for (int i = 0; i < a->n_in; i++) {
        Use u = {nd, i, NULL};
        if (!get_tensor(im, c, a->in_node[i], a->in_idx[i], &u, &in[i]))
            return false;
        if (in[i].kind == TV_VALUE) {
            if (n_value++ == 0)
                first = i;
            else if (second < 0)
                second = i;
        } else if (in[i].kind == TV_ELSEWHERE && n_else++ == 0) {
            first_else = i;
        }
    }
    if (n_value > 0) {
        if (n_value > 1)
            return lerr(
                im, "node '%s' (%s): inputs %d '%s' and %d '%s' are both live; a Merge forwards exactly one",
                node_name(nd), node_op(nd), first, data_input(nd, first), second, data_input(nd, second));
        if (n_else > 0)
            return lerr(
                im,
                "node '%s' (%s): input %d '%s' is always live but input %d '%s' depends on a run-time "
                "predicate",
                node_name(nd), node_op(nd), first, data_input(nd, first), first_else,
                data_input(nd, first_else));
        ir_graph_set_origin(c->g, node_name(nd), node_op(nd));
        IrValue vi = ir_const_scalar_f(c->g, TCRT_I32, first, im->st);
        r->mark = TV_VALUE;
        r->n_outs = 2;
        r->outs = arena_alloc(&im->scratch, 2 * sizeof(TVal));
        if (!vi.node || !r->outs)
            return vi.node ? nomem(im) : false;
        r->outs[0] = in[first];
        r->outs[1] = (TVal){vi, TV_VALUE};
        return true;
    }
    if (n_else == 0)
        return set_mark(im, r, j, TV_DEAD);
    if (a->role != ROLE_COND_MERGE)
        return bad_state(im, j);
    /* the conds around this one, up to the context's, must be resolved here */
    Use u = {nd, -1, ""};
    char b[300];
    for (const State *s = a->st; state_depth(s) > state_depth(c->base); s = s->up) {
        TVal q;
        u.in = tensor_text(im, s->pred, s->pred_k, b, sizeof b);
        if (!get_tensor(im, c, s->pred, s->pred_k, &u, &q))
            return false;
        if (q.kind != TV_VALUE || !ir_is_const(q.v))
            return set_mark(im, r, j, q.kind == TV_DEAD ? TV_DEAD : TV_ELSEWHERE);
    }
    TVal pv;
    u.in = tensor_text(im, a->pred, a->pred_k, b, sizeof b);
    if (!get_tensor(im, c, a->pred, a->pred_k, &u, &pv))
        return false;
    if (pv.kind != TV_VALUE)
        return set_mark(im, r, j, pv.kind);
    if (ir_is_const(pv.v))
        return lerr(
            im, "node '%s' (%s): internal: constant predicate '%s' with inputs that depend on a run-time one",
            node_name(nd), node_op(nd), u.in);
    return build_cond(im, c, j, r, pv.v);
}

/* The WHILE of loop frame f, built in context c (once per context). */
static bool build_loop(Importer *im, Ctx *c, int f, TVal *lp)
{
    const Tensorflow__GraphDef *gd = im->gd;
    const FrameInfo *fi = &im->frames[f];
    int n = fi->merges.n, lc = fi->loopcond;
    if (n == 0)
        return lerr(im, "loop frame '%s' has no loop variable (a Merge of an Enter and a NextIteration)",
                    fi->name);
    /* every Enter's input, lowered here: dead or elsewhere makes the loop so */
    int mark = TV_VALUE;
    for (int i = 0; i < fi->enters.n; i++) {
        int e = fi->enters.v[i];
        const NodeInfo *ea = &im->info[e];
        Use u = {gd->node[e], 0, NULL};
        TVal t;
        if (!get_tensor(im, c, ea->in_node[0], ea->in_idx[0], &u, &t))
            return false;
        if (t.kind == TV_DEAD || (t.kind == TV_ELSEWHERE && mark == TV_VALUE))
            mark = t.kind;
    }
    if (mark != TV_VALUE) {
        *lp = (TVal){{NULL, 0}, (unsigned char)mark};
        return true;
    }
    Caps *caps = arena_alloc(&im->scratch, sizeof *caps);
    int *enter_of = arena_alloc(&im->scratch, (size_t)n * sizeof(int));
    int *next_of = arena_alloc(&im->scratch, (size_t)n * sizeof(int));
    if (!caps || !enter_of || !next_of)
        return nomem(im);
    for (int v = 0; v < n; v++) {
        const NodeInfo *ma = &im->info[fi->merges.v[v]];
        for (int i = 0; i < ma->n_in; i++) {
            if (im->info[ma->in_node[i]].cf == CF_NEXT)
                next_of[v] = ma->in_node[i];
            else
                enter_of[v] = ma->in_node[i];
        }
        const NodeInfo *ea = &im->info[enter_of[v]];
        Use u = {gd->node[enter_of[v]], 0, NULL};
        TVal t;
        int idx;
        if (!get_tensor(im, c, ea->in_node[0], ea->in_idx[0], &u, &t) ||
            !caps_add(im, caps, t.v, false, &idx))
            return false;
    }
    const char *lc_name = node_name(gd->node[lc]);
    Ctx *cond = ctx_new(im, c, CTX_LOOP_COND, f, NULL, caps);
    Ctx *body = cond ? ctx_new(im, c, CTX_LOOP_BODY, f, NULL, caps) : NULL;
    if (!body)
        return false;
    ir_graph_set_origin(cond->g, lc_name, "LoopCond");
    ir_graph_set_origin(body->g, lc_name, "LoopCond");
    if (!ctx_param(im, cond, n - 1, NULL) || !ctx_param(im, body, n - 1, NULL))
        return false;

    /* cond: LoopCond's value */
    int zero = 0;
    TVal pred;
    Use ul = {gd->node[lc], -1, lc_name};
    if (!ctx_run(im, cond, &lc, &zero, 1) || !get_tensor(im, cond, lc, 0, &ul, &pred))
        return false;
    if (pred.kind != TV_VALUE)
        return lerr(im, "node '%s' (LoopCond): the loop condition has no value (it is dead)", lc_name);
    const IrType *pt = ir_value_type(pred.v);
    if (pt->dtype != TCRT_BOOL || ir_shape_count(&pt->shape) != 1) {
        char b[240];
        return lerr(im, "node '%s' (LoopCond): the loop condition is %s, it must be a bool scalar", lc_name,
                    type_text(pt, b, sizeof b));
    }

    /* body: the NextIterations' inputs */
    int *tn = arena_alloc(&im->scratch, (size_t)n * sizeof(int));
    int *tk = arena_alloc(&im->scratch, (size_t)n * sizeof(int));
    IrValue *res = arena_alloc(&im->scratch, (size_t)n * sizeof(IrValue));
    if (!tn || !tk || !res)
        return nomem(im);
    for (int v = 0; v < n; v++) {
        tn[v] = im->info[next_of[v]].in_node[0];
        tk[v] = im->info[next_of[v]].in_idx[0];
    }
    if (!ctx_run(im, body, tn, tk, n))
        return false;
    for (int v = 0; v < n; v++) {
        const Tensorflow__NodeDef *nx = gd->node[next_of[v]];
        Use u = {nx, 0, NULL};
        TVal t;
        if (!get_tensor(im, body, tn[v], tk[v], &u, &t))
            return false;
        if (t.kind != TV_VALUE)
            return lerr(im, "node '%s' (%s): input '%s' has no value in the loop body (%s)", node_name(nx),
                        node_op(nx), use_in(&u),
                        t.kind == TV_DEAD ? "it is dead"
                                          : "it lies inside a cond branch that no Merge joins");
        const IrType *want = ir_value_type(caps->v[v]), *got = ir_value_type(t.v);
        if (!same_type(want, got)) {
            char b1[240], b2[240];
            return lerr(im,
                        "loop variable '%s' (Merge) enters the loop as %s but '%s' (%s) gives it %s; loop "
                        "variables must keep their dtype and shape",
                        node_name(gd->node[fi->merges.v[v]]), type_text(want, b1, sizeof b1), node_name(nx),
                        node_op(nx), type_text(got, b2, sizeof b2));
        }
        res[v] = t.v;
    }

    /* every region takes every operand; the body returns the invariants */
    if (!ctx_param(im, cond, caps->n - 1, NULL) || !ctx_param(im, body, caps->n - 1, NULL) ||
        !ir_add_fetch(cond->g, "r0", pred.v, im->st))
        return false;
    for (int i = 0; i < caps->n; i++) {
        char name[32];
        snprintf(name, sizeof name, "r%d", i);
        if (!ir_add_fetch(body->g, name, i < n ? res[i] : body->params[i], im->st))
            return false;
    }
    ir_graph_set_origin(c->g, lc_name, "LoopCond");
    IrGraph *regions[2] = {cond->g, body->g};
    IrNode *w = ir_emit_region(c->g, OP_WHILE, caps->v, caps->n, regions, 2, im->st);
    if (!w)
        return false;
    *lp = (TVal){{w, 0}, TV_VALUE};
    return true;
}

static bool lower_exit(Importer *im, Ctx *c, int j, Rec *r)
{
    const NodeInfo *a = &im->info[j];
    int f = im->info[a->in_node[0]].frame;
    int m = imap_get(&c->loop_index, (uint64_t)f);
    TVal lp;
    if (m >= 0) {
        lp = c->loopv[m];
    } else {
        if (!build_loop(im, c, f, &lp))
            return false;
        if (!vgrow(&im->scratch, (void **)&c->loopv, &c->cap_loopv, c->n_loopv + 1, sizeof(TVal)) ||
            !imap_put(&im->scratch, &c->loop_index, (uint64_t)f, c->n_loopv))
            return nomem(im);
        c->loopv[c->n_loopv++] = lp;
    }
    if (lp.kind != TV_VALUE)
        return set_mark(im, r, j, lp.kind);
    r->mark = TV_VALUE;
    r->n_outs = 1;
    r->outs = arena_alloc(&im->scratch, sizeof(TVal));
    if (!r->outs)
        return nomem(im);
    r->outs[0] = (TVal){{lp.v.node, a->var}, TV_VALUE};
    return true;
}

static bool lower_node(Importer *im, Ctx *c, int j, bool is_exit)
{
    Rec *r = rec_find(c, j);
    const NodeInfo *a = &im->info[j];
    bool ok;
    if (is_exit)
        ok = lower_exit(im, c, j, r);
    else if (a->cf == CF_MERGE)
        ok = lower_merge(im, c, j, r);
    else if (a->role == ROLE_COND_SWITCH)
        ok = lower_switch(im, c, j, r);
    else if (a->role == ROLE_LOOP_SWITCH || a->cf == CF_TRIGGER)
        ok = (r->mark = TV_VALUE, true); /* read only as a control input here */
    else
        ok = lower_plain(im, c, j, r);
    r->dfs = 2;
    return ok;
}

typedef struct CFrame {
    int node;
    int pos;
    bool is_exit; /* deps: the Enters of the loop it leaves */
} CFrame;

/* The dependency `pos` of the node on the stack (false past the end). */
static bool dep_at(const Importer *im, const CFrame *fr, int *p, int *k)
{
    const NodeInfo *a = &im->info[fr->node];
    int i = fr->pos;
    if (fr->is_exit) {
        const FrameInfo *fi = &im->frames[im->info[a->in_node[0]].frame];
        if (i >= fi->enters.n)
            return false;
        const NodeInfo *ea = &im->info[fi->enters.v[i]];
        *p = ea->in_node[0];
        *k = ea->in_idx[0];
        return true;
    }
    if (i < a->n_in) {
        *p = a->in_node[i];
        *k = a->in_idx[i];
        return true;
    }
    if (i - a->n_in < a->n_ctl) {
        *p = a->ctl[i - a->n_in];
        *k = -1;
        return true;
    }
    return false;
}

/* Lowers into c everything the target tensors need, in DFS post-order. */
static bool ctx_run(Importer *im, Ctx *c, const int *tn, const int *tk, int n_t)
{
    CFrame *stack = NULL;
    int sp = 0, cap = 0;
    char why[8];
    for (int t = 0; t < n_t; t++) {
        int aux;
        int cl = classify(im, c, tn[t], tk[t], &aux, why, sizeof why);
        if (cl != CL_OWN && cl != CL_EXIT)
            continue;
        Rec *r = rec_get(im, c, tn[t]);
        if (!r)
            return false;
        if (r->dfs != 0)
            continue;
        if (!vgrow(&im->scratch, (void **)&stack, &cap, sp + 1, sizeof *stack))
            return nomem(im);
        r->dfs = 1;
        stack[sp++] = (CFrame){tn[t], 0, cl == CL_EXIT};
        while (sp > 0) {
            CFrame *fr = &stack[sp - 1];
            int p, k;
            if (!dep_at(im, fr, &p, &k)) {
                CFrame done = *fr;
                sp--;
                if (!lower_node(im, c, done.node, done.is_exit))
                    return false;
                continue;
            }
            fr->pos++;
            cl = classify(im, c, p, k, &aux, why, sizeof why);
            if (cl != CL_OWN && cl != CL_EXIT)
                continue; /* a parameter, a capture, a feed; errors show when read */
            if (!(r = rec_get(im, c, p)))
                return false;
            if (r->dfs == 1)
                return lerr(im, "graph has a cycle through node '%s' (%s)", node_name(im->gd->node[p]),
                            node_op(im->gd->node[p]));
            if (r->dfs == 2)
                continue;
            if (!vgrow(&im->scratch, (void **)&stack, &cap, sp + 1, sizeof *stack))
                return nomem(im);
            r->dfs = 1;
            stack[sp++] = (CFrame){p, 0, cl == CL_EXIT};
        }
    }
    return true;
}

/* ---- variables: VARIABLE and ASSIGN nodes ---- */

/* Read after assign: a node with a (followed) control dependency on an
 * assignment of variable X, or on a group (NoOp) of assignments, reads
 * X's new value: its data inputs that are X's VARIABLE become the ASSIGN's
 * output.  Other reads see the value at the start of the run. */
static void read_after_assign(Importer *im, const NodeInfo *a, IrValue *in)
{
    for (int i = 0; i < a->n_in; i++) {
        if (!in[i].node || in[i].node->op != OP_VARIABLE)
            continue;
        int m = imap_get(&im->assign_of, (uint64_t)in[i].node->id);
        if (m < 0)
            continue;
        int q = im->assign_tf[m];
        bool after = false;
        for (int c = 0; c < a->n_ctl && !after; c++) {
            int p = a->ctl[c];
            after = p == q;
            const NodeInfo *pa = &im->info[p];
            if (!after && !strcmp(node_op(im->gd->node[p]), "NoOp"))
                for (int d = 0; d < pa->n_ctl && !after; d++)
                    after = pa->ctl[d] == q;
        }
        if (after)
            in[i] = (IrValue){im->assigns[m], 0};
    }
}

/* ---- element shapes learnt for pending arrays (tf_int.h) ---- */

#define TF_MAX_ELEM_HINTS 64
typedef struct ElemHints {
    int n;
    bool grew;                    /* learnt something during the current attempt */
    char name[TF_MAX_ELEM_HINTS][256];
    IrShape elem[TF_MAX_ELEM_HINTS];
} ElemHints;

void tf_mark_pending_param(IrValue param, IrValue outer)
{
    const IrNode *o = outer.node;
    if (!param.node || !o || !o->origin)
        return;
    bool pending = (o->op == OP_CONST && o->p.i[0] == TF_PENDING_MAGIC) ||
                   (o->op == OP_ARG && o->origin_op && !strcmp(o->origin_op, TF_PENDING_ARRAY));
    if (pending) {
        param.node->origin = o->origin;
        param.node->origin_op = TF_PENDING_ARRAY;
    }
}

bool tf_state_elem_hint(const TfCtx *c, const char *creator, IrShape *elem)
{
    const ElemHints *h = c->state && c->state->im ? c->state->im->hints : NULL;
    for (int i = 0; h && creator && i < h->n; i++)
        if (!strcmp(h->name[i], creator)) {
            *elem = h->elem[i];
            return true;
        }
    return false;
}

void tf_state_elem_learn(const TfCtx *c, const char *creator, const IrShape *elem)
{
    ElemHints *h = c->state && c->state->im ? c->state->im->hints : NULL;
    IrShape known = {0};
    if (!h || !creator || strlen(creator) >= sizeof h->name[0] || h->n >= TF_MAX_ELEM_HINTS ||
        tf_state_elem_hint(c, creator, &known))
        return;
    snprintf(h->name[h->n], sizeof h->name[h->n], "%s", creator);
    h->elem[h->n++] = *elem;
    h->grew = true;
}

bool tf_state_data_parallel(const TfCtx *c)
{
    return c->state && c->state->im && (c->state->im->o->flags & TF_IMPORT_DATA_PARALLEL);
}

bool tf_state_assign(TfCtx *c, IrValue var, IrValue value, IrValue *out)
{
    *out = ir_emit1(c->g, OP_ASSIGN, (IrValue[]){var, value}, 2, NULL, NULL, c->st);
    if (!out->node)
        return false;
    Importer *im = c->state ? c->state->im : NULL;
    if (!im || c->g != im->g || imap_get(&im->assign_of, (uint64_t)var.node->id) >= 0)
        return true; /* a second assignment: passes/state.c reports it, naming both */
    if (!vgrow(&im->scratch, (void **)&im->assigns, &im->cap_assigns, im->n_assigns + 1, sizeof(IrNode *)) ||
        !vgrow(&im->scratch, (void **)&im->assign_tf, &im->cap_assign_tf, im->n_assigns + 1, sizeof(int)) ||
        !imap_put(&im->scratch, &im->assign_of, (uint64_t)var.node->id, im->n_assigns))
        return nomem(im);
    im->assigns[im->n_assigns] = out->node;
    im->assign_tf[im->n_assigns++] = im->cur_node;
    return true;
}

/* Evaluates the initializer value v (in the top-level graph) to a CONST.
 * Constant subgraphs were folded as they were built; what is left (random
 * ops, which never fold, and what depends on them) is evaluated here in
 * topological order with the reference kernels (elementwise ops through
 * ir_eval_elementwise, a random_uniform through its kernel, deterministic
 * for its seeds) into temporary buffers, each freed after its last use, so
 * a large initializer costs its result plus the live intermediates, not a
 * constant per node.  A VARIABLE read by an initializer is its initial
 * value. */
typedef struct EvalBuf {
    tcrt_tensor t[4];
    bool owned; /* t[k].data from xx_malloc */
    int uses;
} EvalBuf;

static tcrt_tensor wrap_type(const IrType *ty, void *data)
{
    tcrt_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = ty->dtype;
    t.rank = ty->shape.rank;
    for (int d = 0; d < t.rank; d++)
        t.dims[d] = ty->shape.dims[d];
    return t;
}

static bool eval_init(Importer *im, int var, IrValue v, IrValue *out)
{
    IrGraph *g = im->g;
    const char *vn = node_name(im->gd->node[var]);
    if (ir_is_const(v)) {
        *out = v;
        return true;
    }
    int n_ids = g->next_id + 1;
    unsigned char *need = arena_alloc(&im->scratch, (size_t)n_ids);
    EvalBuf *buf = arena_alloc(&im->scratch, (size_t)n_ids * sizeof *buf);
    IrNode **stack = arena_alloc(&im->scratch, (size_t)n_ids * sizeof(IrNode *));
    if (!need || !buf || !stack)
        return nomem(im);
    int sp = 0;
    stack[sp++] = v.node;
    need[v.node->id] = 1;
    while (sp > 0) {
        IrNode *n = stack[--sp];
        if (n->op == OP_CONST || n->op == OP_VARIABLE)
            continue;
        for (int i = 0; i < n->n_inputs; i++) {
            IrNode *p = n->inputs[i].node;
            if (p->id < 0 || p->id >= n_ids)
                continue;
            buf[p->id].uses++;
            if (!need[p->id]) {
                need[p->id] = 1;
                stack[sp++] = p;
            }
        }
    }
    buf[v.node->id].uses++; /* the result */
    bool ok = true;
    for (int x = 0; x < g->n_nodes && ok; x++) {
        IrNode *n = g->nodes[x];
        if (!n || n->dead || n->id >= n_ids || !need[n->id])
            continue;
        EvalBuf *b = &buf[n->id];
        const char *who = n->origin ? n->origin : "?", *wop = n->origin_op ? n->origin_op : ir_op_name(n->op);
        const OpInfo *info = ir_op_info(n->op);
        if (n->op == OP_CONST) {
            b->t[0] = wrap_type(&n->out[0].type, n->data);
            continue;
        }
        if (n->op == OP_VARIABLE) {
            IrNode *c = n->inputs[0].node;
            b->t[0] = wrap_type(&c->out[0].type, c->data);
            continue;
        }
        if (n->op == OP_ARG) {
            ok = lerr(
                im,
                "variable '%s': its initializer depends on the fed tensor '%s'; an initial value must be "
                "known when compiling",
                vn, who);
            break;
        }
        if (n->n_regions > 0 || n->n_outputs > 4 || n->n_inputs > 8 ||
            (info->kind != K_ELEM && n->op != OP_COPY && !info->ref_kernel)) {
            ok = lerr(im,
                      "variable '%s': its initializer uses node '%s' (%s), which cannot be evaluated when "
                      "compiling",
                      vn, who, wop);
            break;
        }
        tcrt_tensor in[8];
        for (int i = 0; i < n->n_inputs; i++)
            in[i] = buf[n->inputs[i].node->id].t[n->inputs[i].index];
        b->owned = true;
        for (int k = 0; k < n->n_outputs && ok; k++) {
            int64_t cnt;
            if (!ir_shape_count_checked(&n->out[k].type.shape, &cnt) ||
                ir_type_bytes(&n->out[k].type) > IR_MAX_FOLD_BYTES * 4) {
                ok = lerr(im,
                          "variable '%s': its initializer's node '%s' (%s) is too large to evaluate when "
                          "compiling",
                          vn, who, wop);
                break;
            }
            size_t bytes = ir_type_bytes(&n->out[k].type);
            void *d = xx_malloc(bytes ? bytes : 1);
            if (!d) {
                ok = nomem(im);
                break;
            }
            b->t[k] = wrap_type(&n->out[k].type, d);
        }
        if (!ok)
            break;
        tcrt_status ts = TCRT_OK;
        Status est = ST_INIT;
        if (info->kind == K_ELEM) {
            if (!ir_eval_elementwise(n->op, in, n->n_inputs, &b->t[0], &est))
                ts = TCRT_ERR_ARG;
        } else if (n->op == OP_COPY) {
            memcpy(b->t[0].data, in[0].data, ir_type_bytes(&n->out[0].type));
        } else {
            tcrt_params p;
            memset(&p, 0, sizeof p);
            memcpy(p.i, n->p.i, sizeof p.i);
            memcpy(p.f, n->p.f, sizeof p.f);
            ts = info->ref_kernel(in, n->n_inputs, b->t, n->n_outputs, &p);
        }
        if (ts != TCRT_OK) {
            ok = lerr(im,
                      "variable '%s': its initializer's node '%s' (%s) failed to evaluate when compiling%s%s",
                      vn, who, wop, est.msg[0] ? ": " : "", est.msg);
            break;
        }
        /* inputs used for the last time */
        for (int i = 0; i < n->n_inputs; i++) {
            EvalBuf *ib = &buf[n->inputs[i].node->id];
            if (--ib->uses == 0 && ib->owned) {
                for (int k = 0; k < 4; k++)
                    xx_free(ib->t[k].data);
                memset(ib->t, 0, sizeof ib->t);
            }
        }
    }
    EvalBuf *rb = &buf[v.node->id];
    if (ok) {
        const IrType *t = &v.node->out[v.index].type;
        ir_graph_set_origin(g, vn, node_op(im->gd->node[var]));
        *out = ir_const(g, t->dtype, &t->shape, rb->t[v.index].data, im->st);
        ok = out->node != NULL;
    }
    /* free whatever is left (the result, or everything after an error) */
    for (int x = 0; x < g->n_nodes; x++) {
        IrNode *n = g->nodes[x];
        if (!n || n->id >= n_ids || !need[n->id] || !buf[n->id].owned)
            continue;
        for (int k = 0; k < 4; k++)
            xx_free(buf[n->id].t[k].data);
        memset(buf[n->id].t, 0, sizeof buf[n->id].t);
    }
    return ok;
}

/* The initial value of variable node j: checkpoint, else initializer. */
static bool initial_value(Importer *im, int j, const IrType *want, IrValue *out)
{
    const Tensorflow__NodeDef *nd = im->gd->node[j];
    char b1[200], b2[200];
    if (im->ckpt_err)
        return lerr(im, "variable '%s' (%s): the variables' checkpoint does not open: %s", node_name(nd),
                    node_op(nd), im->ckpt_err);
    if (in_checkpoint(im, j)) {
        if (!state_ckpt_read(im, ckpt_key(im, j), want, out))
            return false;
        return true;
    }
    if (im->init_how[j] == 4)
        return lerr(im,
                    "variable '%s' (%s) has no initial value: not in the checkpoint%s, and several Assigns "
                    "to it could be its initializer (name it '%s/Assign', or list it in the meta graph's "
                    "variables collection)",
                    node_name(nd), node_op(nd), im->ckpt ? "" : " (none given)", node_name(nd));
    if (im->init_node[j] < 0)
        return lerr(im,
                    "variable '%s' (%s) has no initial value: not in the checkpoint%s and no initializer (an "
                    "Assign to it) in the graph",
                    node_name(nd), node_op(nd), im->ckpt ? "" : " (none given)");
    int p = im->init_node[j], k = im->init_k[j];
    Use u = {NULL, 0, node_name(im->gd->node[p])};
    TVal t;
    if (!ctx_run(im, im->root, &p, &k, 1) || !get_tensor(im, im->root, p, k, &u, &t))
        return false;
    if (t.kind != TV_VALUE)
        return lerr(im, "variable '%s': its initializer '%s' has no value (it depends on a cond)",
                    node_name(nd), node_name(im->gd->node[p]));
    if (!eval_init(im, j, t.v, out))
        return false;
    const IrType *got = ir_value_type(*out);
    if (got->dtype != want->dtype || (want->shape.rank >= 0 && !ir_shape_eq(&got->shape, &want->shape))) {
        snprintf(b1, sizeof b1, "%s", tcrt_dtype_name(got->dtype));
        ir_shape_str(&got->shape, b1 + strlen(b1), sizeof b1 - strlen(b1));
        snprintf(b2, sizeof b2, "%s", tcrt_dtype_name(want->dtype));
        if (want->shape.rank >= 0)
            ir_shape_str(&want->shape, b2 + strlen(b2), sizeof b2 - strlen(b2));
        return lerr(im, "variable '%s' (%s) is %s but its initializer '%s' gives %s", node_name(nd),
                    node_op(nd), b2, node_name(im->gd->node[p]), b1);
    }
    return true;
}

bool tf_state_variable(TfCtx *c, IrValue *out)
{
    Importer *im = c->state ? c->state->im : NULL;
    int j = im ? map_find(&im->map, im->gd, c->nd->name ? c->nd->name : "") : -1;
    if (!im || j < 0 || im->gd->node[j] != c->nd)
        return tf_errorf(
            c, "a variable inside a function body is not supported (pass its handle as an argument)");
    if (im->var_value[j].node) {
        if (c->g != im->g)
            return tf_errorf(c, "variable read inside a loop body or cond branch is not supported (read it "
                                "outside and pass the value in)");
        *out = im->var_value[j];
        return true;
    }
    if (c->g != im->g)
        return tf_errorf(c,
                         "variable read inside a loop body or cond branch is not supported (read it outside "
                         "and pass the value in)");
    IrType t = {0};
    const Tensorflow__AttrValue *sa = node_attr(c->nd, "shape");
    bool known = false;
    if (!tf_attr_type(c, "dtype", &t.dtype))
        return false;
    if (sa && sa->value_case == TENSORFLOW__ATTR_VALUE__VALUE_SHAPE)
        read_shape(sa->shape, &t.shape, &known);
    if (!known)
        t.shape.rank = -1; /* no static shape: the checkpoint's or the initializer's decides */
    if (im->making[j])
        return tf_errorf(c, "the initial value of the variable depends on the variable itself");
    im->making[j] = 1;
    IrValue init;
    bool ok = initial_value(im, j, &t, &init);
    im->making[j] = 0;
    if (!ok)
        return false;
    if (ir_value_type(init)->dtype != t.dtype)
        return tf_errorf(c, "initial value is %s, the variable is %s",
                         tcrt_dtype_name(ir_value_type(init)->dtype), tcrt_dtype_name(t.dtype));
    ir_graph_set_origin(c->g, node_name(c->nd), node_op(c->nd));
    int64_t trainable = im->has_trainable
                            ? im->trainable[j]
                            : (t.dtype == TCRT_F32 || t.dtype == TCRT_F64 || t.dtype == TCRT_F16);
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = trainable;
    *out = ir_emit1(c->g, OP_VARIABLE, &init, 1, &p, NULL, c->st);
    if (!out->node)
        return false;
    im->var_value[j] = *out;
    return true;
}

/* The top-level context: the fetches. */
static bool lower_graph(Importer *im)
{
    const TfImportOptions *o = im->o;
    im->out_buf = arena_alloc(&im->scratch, TF_MAX_OUTPUTS * sizeof *im->out_buf);
    int *tn = arena_alloc(&im->scratch, (size_t)(o->n_fetches + 1) * sizeof(int));
    int *tk = arena_alloc(&im->scratch, (size_t)(o->n_fetches + 1) * sizeof(int));
    if (!im->out_buf || !tn || !tk)
        return nomem(im);
    Ctx *root = ctx_new(im, NULL, CTX_ROOT, FRAME_ROOT, NULL, NULL);
    if (!root)
        return false;
    im->root = root;
    /* targets: run for their effects (assignments), nothing fetched */
    for (int t = 0; t < o->n_targets; t++) {
        int tn1, tk1;
        const char *tg = o->targets[t];
        if (!resolve(im, tg[0] == '^' ? tg + 1 : tg, &tn1, &tk1))
            return st_ok(im->st) ? lerr(im, "target '%s' names no node in the graph", tg) : false;
        tk1 = -1;
        if (!ctx_run(im, root, &tn1, &tk1, 1))
            return false;
        const Rec *r = rec_find(root, tn1);
        if (r && r->mark == TV_DEAD)
            return lerr(im, "target '%s' never runs: it depends on the untaken output of a Switch whose "
                            "predicate is a constant",
                        tg);
    }
    for (int f = 0; f < o->n_fetches; f++)
        if (!resolve(im, o->fetches[f], &tn[f], &tk[f]))
            return st_ok(im->st) ? lerr(im, "fetch '%s' names no node in the graph", o->fetches[f]) : false;
    if (!ctx_run(im, root, tn, tk, o->n_fetches))
        return false;
    for (int f = 0; f < o->n_fetches; f++) {
        Use u = {NULL, 0, o->fetches[f]};
        TVal t;
        if (!get_tensor(im, root, tn[f], tk[f], &u, &t))
            return false;
        if (t.kind == TV_DEAD)
            return lerr(
                im,
                "fetch '%s' has no value: it depends on the untaken output of a Switch whose predicate "
                "is a constant",
                o->fetches[f]);
        if (t.kind == TV_ELSEWHERE)
            return lerr(
                im,
                "fetch '%s' lies inside a cond branch whose predicate is known only at run time; fetch "
                "the cond's Merge instead",
                o->fetches[f]);
        if (!ir_add_fetch(im->g, o->fetches[f], t.v, im->st))
            return false;
    }
    return true;
}

static IrGraph *import_once(const Tensorflow__GraphDef *gd, const TfImportOptions *o, ElemHints *hints,
                            Status *st);

/* Imports again while an attempt learnt an element shape for an array that
 * a loop or conditional writes (tf_int.h, TF_PENDING_ARRAY): each attempt
 * resolves at least one more array, so this ends. */
IrGraph *tf_import(const Tensorflow__GraphDef *gd, const TfImportOptions *o, Status *st)
{
    ElemHints *hints = calloc(1, sizeof *hints);
    if (!hints) {
        st_errorf(st, ST_NOMEM, "out of memory");
        return NULL;
    }
    IrGraph *g = NULL;
    Status first = *st;
    for (int attempt = 0; attempt <= TF_MAX_ELEM_HINTS; attempt++) {
        hints->grew = false;
        *st = first;
        g = import_once(gd, o, hints, st);
        if (g || !hints->grew)
            break;
    }
    free(hints);
    return g;
}

static IrGraph *import_once(const Tensorflow__GraphDef *gd, const TfImportOptions *o, ElemHints *hints,
                            Status *st)
{
    if (!st_ok(st))
        return NULL;
    if (!gd) {
        imp_errorf(o, st, "no graph");
        return NULL;
    }
    if (o->n_fetches <= 0 && o->n_targets <= 0) {
        imp_errorf(o, st, "no fetches given: name at least one output tensor");
        return NULL;
    }
    Importer im;
    memset(&im, 0, sizeof im);
    im.gd = gd;
    im.o = o;
    im.st = st;
    im.hints = hints;
    im.g = ir_graph_new(NULL, st);
    if (!im.g)
        return NULL;
    arena_init(&im.scratch, NULL);
    im.info = arena_alloc(&im.scratch, (gd->n_node + 1) * sizeof *im.info);
    im.feeds = arena_alloc(&im.scratch, ((size_t)(o->n_feeds > 0 ? o->n_feeds : 0) + 1) * sizeof *im.feeds);
    bool ok = im.info && im.feeds;
    if (!ok)
        st_errorf(st, ST_NOMEM, "out of memory");
    im.g->fold_on_build = true;
    TfState state = {&im};
    im.state = &state;
    if (ok && o->checkpoint) {
        char msg[512];
        tcrt_ckpt *ck = NULL;
        if (tcrt_ckpt_open(o->checkpoint, &ck, msg, sizeof msg) != TCRT_OK) {
            im.ckpt_err = arena_strdup(&im.scratch, msg);
            ok = im.ckpt_err != NULL;
            if (!ok)
                st_errorf(st, ST_NOMEM, "out of memory");
        }
        im.ckpt = ck;
    }
    ok = ok && build_map(&im) && scan_state(&im);
    for (int i = 0; ok && i < o->n_feeds; i++)
        ok = add_feed(&im, &o->feeds[i]);
    ok = ok && walk(&im) && check_ops(&im) && analyze(&im);
    if (ok && !lower_graph(&im)) {
        ok = false;
        if (o->file)
            st_prefix(st, o->file);
    }
    arena_reset(&im.scratch);
    if (im.ckpt)
        tcrt_ckpt_close((tcrt_ckpt *)im.ckpt);
    if (!ok || !st_ok(st)) {
        if (st_ok(st))
            imp_errorf(o, st, "import failed");
        ir_graph_free(im.g);
        return NULL;
    }
    im.g->fold_on_build = false;
    for (int i = 0; i < im.g->n_owned; i++)
        im.g->owned[i]->fold_on_build = false;
    return im.g;
}
