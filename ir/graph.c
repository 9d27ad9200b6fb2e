/* ir/graph.c - the IR builder: graphs, nodes, constants, feeds, fetches, uses.
 *
 * ir_emit is the one way nodes are made: it checks arity, derives and checks
 * dtypes (ir_infer_dtypes), runs the op's shape rule (ir_infer_node), and
 * with g->fold_on_build evaluates nodes whose inputs are all constant,
 * returning a CONST node instead.  A node joins g->nodes only once it is
 * valid, so a failed emit leaves the graph unchanged (apart from arena
 * bytes).  ir_graph_compact drops dead nodes and restores a topological
 * order (stable: an already ordered list is unchanged), since passes append
 * replacement nodes after their users.
 * Invariants: g->nodes is in topological order between passes; every
 * pointer reachable from g lives in g->arena; ids are unique, < next_id.
 */
#include "ir/ir.h"
#include "ir/ir_int.h"

#include <math.h>
#include <string.h>

/* ---- errors ---- */

bool ir_node_errorf(Status *st, const IrNode *n, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *op = n->origin_op ? n->origin_op : ir_op_name(n->op);
    if (n->origin)
        return st_errorf(st, ST_ERROR, "node '%s' (%s): %s", n->origin, op, msg);
    return st_errorf(st, ST_ERROR, "node (%s): %s", op, msg);
}

static bool nomem(Status *st)
{
    return st_errorf(st, ST_NOMEM, "out of memory");
}

/* ---- dtypes and elements ---- */

bool ir_dtype_is_float(tcrt_dtype dt)
{
    return dt == TCRT_F32 || dt == TCRT_F64;
}

bool ir_dtype_is_int(tcrt_dtype dt)
{
    switch (dt) {
    case TCRT_I8: case TCRT_I16: case TCRT_I32: case TCRT_I64:
    case TCRT_U8: case TCRT_U16: case TCRT_U32: case TCRT_U64:
        return true;
    default:
        return false;
    }
}

bool ir_dtype_is_numeric(tcrt_dtype dt)
{
    return ir_dtype_is_float(dt) || ir_dtype_is_int(dt) || dt == TCRT_BOOL;
}

double ir_load_f64(const void *base, tcrt_dtype dt, int64_t i)
{
    switch (dt) {
    case TCRT_F32: return ((const float *)base)[i];
    case TCRT_F64: return ((const double *)base)[i];
    case TCRT_U64: return (double)((const uint64_t *)base)[i];
    default: return (double)ir_load_i64(base, dt, i);
    }
}

int64_t ir_load_i64(const void *base, tcrt_dtype dt, int64_t i)
{
    switch (dt) {
    case TCRT_I8: return ((const int8_t *)base)[i];
    case TCRT_I16: return ((const int16_t *)base)[i];
    case TCRT_I32: return ((const int32_t *)base)[i];
    case TCRT_I64: return ((const int64_t *)base)[i];
    case TCRT_U8: return ((const uint8_t *)base)[i];
    case TCRT_U16: return ((const uint16_t *)base)[i];
    case TCRT_U32: return ((const uint32_t *)base)[i];
    case TCRT_U64: return (int64_t)((const uint64_t *)base)[i];
    case TCRT_BOOL: return ((const uint8_t *)base)[i] != 0;
    case TCRT_F32: case TCRT_F64: {
        double v = ir_load_f64(base, dt, i);
        if (isnan(v))
            return 0;
        if (v >= 9223372036854775807.0)
            return INT64_MAX;
        if (v <= -9223372036854775808.0)
            return INT64_MIN;
        return (int64_t)v;
    }
    default: return 0;
    }
}

void ir_store_i64(void *base, tcrt_dtype dt, int64_t i, int64_t v)
{
    switch (dt) {
    case TCRT_I8: ((int8_t *)base)[i] = (int8_t)v; break;
    case TCRT_I16: ((int16_t *)base)[i] = (int16_t)v; break;
    case TCRT_I32: ((int32_t *)base)[i] = (int32_t)v; break;
    case TCRT_I64: ((int64_t *)base)[i] = v; break;
    case TCRT_U8: ((uint8_t *)base)[i] = (uint8_t)v; break;
    case TCRT_U16: ((uint16_t *)base)[i] = (uint16_t)v; break;
    case TCRT_U32: ((uint32_t *)base)[i] = (uint32_t)v; break;
    case TCRT_U64: ((uint64_t *)base)[i] = (uint64_t)v; break;
    case TCRT_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    case TCRT_F32: ((float *)base)[i] = (float)v; break;
    case TCRT_F64: ((double *)base)[i] = (double)v; break;
    default: break;
    }
}

void ir_store_f64(void *base, tcrt_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case TCRT_F32: ((float *)base)[i] = (float)v; break;
    case TCRT_F64: ((double *)base)[i] = v; break;
    case TCRT_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    default: {
        /* truncate toward zero, saturating (C leaves out-of-range undefined) */
        int64_t iv;
        if (isnan(v))
            iv = 0;
        else if (v >= 9223372036854775807.0)
            iv = INT64_MAX;
        else if (v <= -9223372036854775808.0)
            iv = INT64_MIN;
        else
            iv = (int64_t)v;
        ir_store_i64(base, dt, i, iv);
    }
    }
}

static const struct {
    tcrt_dtype dt;
    const char *s;
} short_names[] = {
    {TCRT_F32, "f32"}, {TCRT_F64, "f64"}, {TCRT_I32, "i32"}, {TCRT_U8, "u8"},
    {TCRT_I16, "i16"}, {TCRT_I8, "i8"}, {TCRT_STRING, "str"}, {TCRT_I64, "i64"},
    {TCRT_BOOL, "bool"}, {TCRT_U16, "u16"}, {TCRT_F16, "f16"}, {TCRT_U32, "u32"},
    {TCRT_U64, "u64"}, {TCRT_BF16, "bf16"},
};

const char *ir_dtype_short(tcrt_dtype dt)
{
    for (size_t i = 0; i < sizeof short_names / sizeof short_names[0]; i++)
        if (short_names[i].dt == dt)
            return short_names[i].s;
    return "invalid";
}

bool ir_dtype_from_short(const char *s, size_t len, tcrt_dtype *out)
{
    for (size_t i = 0; i < sizeof short_names / sizeof short_names[0]; i++) {
        if (strlen(short_names[i].s) == len && memcmp(short_names[i].s, s, len) == 0) {
            *out = short_names[i].dt;
            return true;
        }
    }
    return false;
}

/* ---- shapes ---- */

int64_t ir_shape_count(const IrShape *s)
{
    int64_t n = 1;
    for (int d = 0; d < s->rank; d++)
        n *= s->dims[d];
    return n;
}

bool ir_shape_count_checked(const IrShape *s, int64_t *out)
{
    if (s->rank < 0 || s->rank > IR_MAX_RANK)
        return false;
    int64_t n = 1;
    bool zero = false;
    for (int d = 0; d < s->rank; d++) {
        int64_t v = s->dims[d];
        if (v < 0 || v > IR_MAX_ELEMENTS)
            return false;
        if (v == 0)
            zero = true;
        else if (!zero) {
            if (n > IR_MAX_ELEMENTS / v) /* n * v would pass the limit (or overflow) */
                return false;
            n *= v;
        }
    }
    if (out)
        *out = zero ? 0 : n;
    return true;
}

bool ir_shape_eq(const IrShape *a, const IrShape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return false;
    if (a->has_dyn != b->has_dyn)
        return false;
    return !a->has_dyn || (a->dyn_dim == b->dyn_dim && ir_aff_eq(&a->dyn, &b->dyn));
}

size_t ir_type_bytes(const IrType *t)
{
    int64_t n;
    if (!ir_shape_count_checked(&t->shape, &n))
        return 0;
    return (size_t)n * tcrt_dtype_size(t->dtype);
}

const char *ir_shape_str(const IrShape *s, char *buf, size_t n)
{
    size_t o = 0;
    if (n == 0)
        return buf;
    buf[0] = 0;
    o += (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < s->rank && d < IR_MAX_RANK && o < n; d++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s%lld", d ? "," : "",
                              s->has_dyn && s->dyn_dim == d ? "<=" : "", (long long)s->dims[d]);
    if (o < n)
        snprintf(buf + o, n - o, "]");
    return buf;
}

IrShape ir_shape_make(int rank, const int64_t *dims)
{
    IrShape s = {0};
    memset(&s, 0, sizeof s);
    if (rank < 0)
        rank = 0;
    if (rank > IR_MAX_RANK)
        rank = IR_MAX_RANK;
    s.rank = rank;
    for (int d = 0; d < rank; d++)
        s.dims[d] = dims ? dims[d] : 0;
    return s;
}

/* ---- graphs ---- */

IrGraph *ir_graph_new(const XxAlloc *a, Status *st)
{
    Arena ar;
    arena_init(&ar, a);
    IrGraph *g = arena_alloc(&ar, sizeof *g);
    if (!g) {
        nomem(st);
        return NULL;
    }
    g->arena = ar;
    g->name = "model";
    return g;
}

static void free_one(IrGraph *g)
{
    Arena ar = g->arena;    /* g itself lives in the arena */
    arena_reset(&ar);
}

void ir_graph_free(IrGraph *g)
{
    if (!g)
        return;
    g = ir_graph_root(g);
    /* The owned list lives in the root's arena: free the regions first. */
    for (int i = 0; i < g->n_owned; i++)
        if (g->owned[i])
            free_one(g->owned[i]);
    free_one(g);
}

IrGraph *ir_graph_root(IrGraph *g)
{
    while (g && g->parent)
        g = g->parent;
    return g;
}

void ir_graph_set_origin(IrGraph *g, const char *tf_name, const char *tf_op)
{
    if (!tf_name || !g->cur_origin || strcmp(tf_name, g->cur_origin) != 0)
        g->cur_origin = tf_name ? arena_strdup(&g->arena, tf_name) : NULL;
    if (!tf_op || !g->cur_origin_op || strcmp(tf_op, g->cur_origin_op) != 0)
        g->cur_origin_op = tf_op ? arena_strdup(&g->arena, tf_op) : NULL;
}

/* Grows an arena array of elem-size items to hold at least need. */
static bool grow(Arena *ar, void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return true;
    if (need > (1 << 28))
        return false;
    int nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    void *p = arena_alloc(ar, (size_t)nc * elem);
    if (!p)
        return false;
    if (*arr && *cap)
        memcpy(p, *arr, (size_t)*cap * elem);
    *arr = p;
    *cap = nc;
    return true;
}

static bool append_node(IrGraph *g, IrNode *n, Status *st)
{
    if (!grow(&g->arena, (void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof(IrNode *)))
        return nomem(st);
    n->id = g->next_id++;
    g->nodes[g->n_nodes++] = n;
    return true;
}

/* Allocates an unlinked node with its arrays. */
static IrNode *new_node(IrGraph *g, Op op, int n_inputs, int n_outputs, Status *st)
{
    if (g->n_nodes >= IR_MAX_NODES) {
        st_errorf(st, ST_ERROR, "the graph needs more than %d IR nodes (the limit)", IR_MAX_NODES);
        return NULL;
    }
    IrNode *n = arena_alloc(&g->arena, sizeof *n);
    if (!n)
        goto oom;
    n->op = op;
    n->id = -1;
    n->origin = g->cur_origin;
    n->origin_op = g->cur_origin_op;
    n->device = g->cur_device;
    n->n_inputs = n_inputs;
    if (n_inputs > 0 && !(n->inputs = arena_alloc(&g->arena, sizeof(IrValue) * (size_t)n_inputs)))
        goto oom;
    n->n_outputs = n_outputs;
    if (!(n->out = arena_alloc(&g->arena, sizeof(IrOut) * (size_t)(n_outputs > 0 ? n_outputs : 1))))
        goto oom;
    for (int k = 0; k < n_outputs; k++)
        n->out[k].offset = -1;
    n->workspace_offset = -1;
    return n;
oom:
    nomem(st);
    return NULL;
}

IrNode *ir_const_node_take(IrGraph *g, const IrType *t, void *data, Status *st)
{
    IrNode *n = new_node(g, OP_CONST, 0, 1, st);
    if (!n)
        return NULL;
    n->out[0].type = *t;
    n->data = data;
    n->data_bytes = ir_type_bytes(t);
    if (!append_node(g, n, st))
        return NULL;
    return n;
}

static bool all_inputs_const(const IrNode *n)
{
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i].node->op != OP_CONST)
            return false;
    return true;
}

IrNode *ir_emit(IrGraph *g, Op op, const IrValue *inputs, int n_inputs, const IrParams *p,
                const IrType *given, Status *st)
{
    const OpInfo *info = ir_op_info(op);
    if (!info) {
        st_errorf(st, ST_ERROR, "invalid op %d", (int)op);
        return NULL;
    }
    if (op == OP_CONST) {
        st_errorf(st, ST_ERROR, "constants are made with ir_const, not ir_emit");
        return NULL;
    }
    if (n_inputs < 0 || n_inputs > (1 << 20) || (n_inputs > 0 && !inputs)) {
        st_errorf(st, ST_ERROR, "op %s: bad input count %d", info->name, n_inputs);
        return NULL;
    }
    for (int i = 0; i < n_inputs; i++) {
        if (!inputs[i].node) {
            /* an earlier emit failed; its error is already recorded */
            if (st_ok(st))
                st_errorf(st, ST_ERROR, "op %s: input %d is undefined", info->name, i);
            return NULL;
        }
    }
    IrNode *n = new_node(g, op, n_inputs, info->n_outputs, st);
    if (!n)
        return NULL;
    if (n_inputs > 0)
        memcpy(n->inputs, inputs, sizeof(IrValue) * (size_t)n_inputs);
    if (p)
        memcpy(&n->p, p, sizeof n->p);
    if (info->arity >= 0 ? n_inputs != info->arity : n_inputs < 1) {
        ir_node_errorf(st, n, "%s takes %s%d input%s, got %d", info->name,
                       info->arity < 0 ? "at least " : "", info->arity < 0 ? 1 : info->arity,
                       info->arity == 1 || info->arity < 0 ? "" : "s", n_inputs);
        return NULL;
    }
    for (int i = 0; i < n_inputs; i++) {
        if (inputs[i].index < 0 || inputs[i].index >= inputs[i].node->n_outputs) {
            ir_node_errorf(st, n, "input %d refers to output %d of a node with %d output(s)", i,
                           inputs[i].index, inputs[i].node->n_outputs);
            return NULL;
        }
    }
    if (given) {
        n->out[0].type = *given;
    } else {
        n->out[0].type.dtype = TCRT_INVALID;
        n->out[0].type.shape.rank = -1;
    }
    if (!ir_infer_node(g, n, st))
        return NULL;
    IrNode *rep = NULL;
    if (!ir_dyn_node(g, n, given, &rep, st))
        return NULL;
    if (rep)
        return rep;

    if (g->fold_on_build && info->n_outputs == 1 && info->kind != K_LEAF &&
        !(info->flags & F_EFFECT) && all_inputs_const(n) && !ir_node_has_dyn(n) && op != OP_SYMVAL &&
        ir_type_bytes(&n->out[0].type) <= IR_MAX_FOLD_BYTES) {
        IrValue v;
        Status fst = ST_INIT;
        if (ir_fold_node(g, n, &v, &fst))
            return v.node;
        if (fst.code == ST_NOMEM) {
            st_errorf(st, fst.code, "%s", fst.msg);
            return NULL;
        }
        /* not foldable, or the kernel rejects the values (an out-of-range
         * gather index, say): keep the node; the same kernel reports it at
         * run time, and only if that branch really runs */
    }
    if (!append_node(g, n, st))
        return NULL;
    return n;
}

IrValue ir_emit1(IrGraph *g, Op op, const IrValue *inputs, int n_inputs, const IrParams *p,
                 const IrType *given, Status *st)
{
    IrNode *n = ir_emit(g, op, inputs, n_inputs, p, given, st);
    return (IrValue){n, 0};
}

IrValue ir_unary(IrGraph *g, Op op, IrValue a, Status *st)
{
    return ir_emit1(g, op, &a, 1, NULL, NULL, st);
}

IrValue ir_binary(IrGraph *g, Op op, IrValue a, IrValue b, Status *st)
{
    IrValue in[2] = {a, b};
    return ir_emit1(g, op, in, 2, NULL, NULL, st);
}

IrValue ir_cast(IrGraph *g, IrValue a, tcrt_dtype to, Status *st)
{
    if (!a.node) {
        if (st_ok(st))
            st_errorf(st, ST_ERROR, "op cast: input 0 is undefined");
        return (IrValue){NULL, 0};
    }
    if (ir_value_type(a)->dtype == to)
        return a;
    IrType t = {to, ir_value_type(a)->shape};
    return ir_emit1(g, OP_CAST, &a, 1, NULL, &t, st);
}

IrValue ir_reshape(IrGraph *g, IrValue a, const IrShape *to, Status *st)
{
    if (!a.node) {
        if (st_ok(st))
            st_errorf(st, ST_ERROR, "op copy: input 0 is undefined");
        return (IrValue){NULL, 0};
    }
    IrType t = {ir_value_type(a)->dtype, *to};
    return ir_emit1(g, OP_COPY, &a, 1, NULL, &t, st);
}

IrValue ir_const(IrGraph *g, tcrt_dtype dt, const IrShape *s, const void *data, Status *st)
{
    IrValue none = {NULL, 0};
    IrType t = {dt, {s->rank, {0}}}; /* constants are static: dims only */
    memcpy(t.shape.dims, s->dims, sizeof t.shape.dims);
    int64_t count;
    size_t es = tcrt_dtype_size(dt);
    char buf[128];
    if (!ir_dtype_is_numeric(dt)) {
        if (g->cur_origin)
            st_errorf(st, ST_ERROR, "node '%s' (%s): unsupported constant dtype %s", g->cur_origin,
                      g->cur_origin_op ? g->cur_origin_op : "const", tcrt_dtype_name(dt));
        else
            st_errorf(st, ST_ERROR, "unsupported constant dtype %s", tcrt_dtype_name(dt));
        return none;
    }
    if (!ir_shape_count_checked(s, &count) || (uint64_t)count > SIZE_MAX / 8) {
        if (s->rank < 0 || s->rank > IR_MAX_RANK)
            st_errorf(st, ST_ERROR, "node '%s' (%s): constant rank %d out of range [0,%d]",
                      g->cur_origin ? g->cur_origin : "?",
                      g->cur_origin_op ? g->cur_origin_op : "const", s->rank, IR_MAX_RANK);
        else
            st_errorf(st, ST_ERROR, "node '%s' (%s): constant shape %s has too many elements",
                      g->cur_origin ? g->cur_origin : "?",
                      g->cur_origin_op ? g->cur_origin_op : "const", ir_shape_str(s, buf, sizeof buf));
        return none;
    }
    size_t bytes = (size_t)count * es;
    void *p = arena_alloc_align(&g->arena, bytes, 64);
    if (!p) {
        nomem(st);
        return none;
    }
    if (data && bytes)
        memcpy(p, data, bytes);
    IrNode *n = ir_const_node_take(g, &t, p, st);
    return (IrValue){n, 0};
}

IrValue ir_const_scalar_f(IrGraph *g, tcrt_dtype dt, double v, Status *st)
{
    uint8_t buf[16] = {0};
    IrShape s = ir_shape_make(0, NULL);
    ir_store_f64(buf, dt, 0, v);
    return ir_const(g, dt, &s, buf, st);
}

IrValue ir_const_i64s(IrGraph *g, tcrt_dtype dt, const int64_t *v, int n, Status *st)
{
    IrShape s = ir_shape_make(1, NULL);
    s.dims[0] = n < 0 ? 0 : n;
    IrValue c = ir_const(g, dt, &s, NULL, st);
    if (!c.node)
        return c;
    for (int i = 0; i < n; i++)
        ir_store_i64(c.node->data, dt, i, v[i]);
    return c;
}

IrValue ir_add_feed(IrGraph *g, const char *name, const IrType *t, Status *st)
{
    IrValue none = {NULL, 0};
    if (!name || !t) {
        st_errorf(st, ST_ERROR, "feed without a name or type");
        return none;
    }
    for (int i = 0; i < g->n_feeds; i++) {
        if (strcmp(g->feeds[i].name, name) == 0) {
            st_errorf(st, ST_ERROR, "feed '%s' given twice", name);
            return none;
        }
    }
    if (!grow(&g->arena, (void **)&g->feeds, &g->cap_feeds, g->n_feeds + 1, sizeof(IrFeed))) {
        nomem(st);
        return none;
    }
    const char *nm = arena_strdup(&g->arena, name);
    if (!nm) {
        nomem(st);
        return none;
    }
    IrParams p;
    memset(&p, 0, sizeof p);
    p.i[0] = g->n_feeds;
    const char *so = g->cur_origin, *sop = g->cur_origin_op;
    if (!g->cur_origin) {
        g->cur_origin = nm;
        g->cur_origin_op = "Placeholder";
    }
    IrType ft = {t->dtype, {t->shape.rank, {0}}}; /* feeds are static: dims only */
    memcpy(ft.shape.dims, t->shape.dims, sizeof ft.shape.dims);
    IrNode *n = ir_emit(g, OP_ARG, NULL, 0, &p, &ft, st);
    g->cur_origin = so;
    g->cur_origin_op = sop;
    if (!n)
        return none;
    g->feeds[g->n_feeds].name = nm;
    g->feeds[g->n_feeds].arg = n;
    g->n_feeds++;
    return (IrValue){n, 0};
}

bool ir_add_fetch(IrGraph *g, const char *name, IrValue v, Status *st)
{
    if (!name)
        return st_errorf(st, ST_ERROR, "fetch without a name");
    if (!v.node || v.index < 0 || v.index >= v.node->n_outputs)
        return st_errorf(st, ST_ERROR, "fetch '%s' has no value", name);
    if (ir_value_type(v)->shape.has_dyn) {
        char sh[200];
        return st_errorf(st, ST_ERROR,
                         "fetch '%s' has a data-dependent size (%s, known only at run time); fetches and the "
                         "results of loops and conditionals need static shapes: pad it to a fixed size first",
                         name, ir_shape_str(&ir_value_type(v)->shape, sh, sizeof sh));
    }
    if (!grow(&g->arena, (void **)&g->fetches, &g->cap_fetches, g->n_fetches + 1, sizeof(IrFetch)))
        return nomem(st);
    const char *nm = arena_strdup(&g->arena, name);
    if (!nm)
        return nomem(st);
    g->fetches[g->n_fetches].name = nm;
    g->fetches[g->n_fetches].value = v;
    g->n_fetches++;
    return true;
}

void ir_add_ctrl(IrGraph *g, IrNode *n, IrNode *dep, Status *st)
{
    if (!n || !dep || n == dep)
        return;
    for (int i = 0; i < n->n_ctrl; i++)
        if (n->ctrl[i] == dep)
            return;
    IrNode **c = arena_alloc(&g->arena, sizeof(IrNode *) * (size_t)(n->n_ctrl + 1));
    if (!c) {
        nomem(st);
        return;
    }
    if (n->n_ctrl)
        memcpy(c, n->ctrl, sizeof(IrNode *) * (size_t)n->n_ctrl);
    c[n->n_ctrl] = dep;
    n->ctrl = c;
    n->n_ctrl++;
}

/* ---- queries ---- */

bool ir_is_const(IrValue v)
{
    return v.node && v.node->op == OP_CONST && !v.node->dead;
}

bool ir_const_ints(IrValue v, int64_t *out, int max, int *n)
{
    if (!ir_is_const(v))
        return false;
    const IrType *t = ir_value_type(v);
    if (!ir_dtype_is_int(t->dtype) && t->dtype != TCRT_BOOL)
        return false;
    int64_t count;
    if (!ir_shape_count_checked(&t->shape, &count) || count > max)
        return false;
    if (count > 0 && !v.node->data)
        return false;
    for (int64_t i = 0; i < count; i++)
        out[i] = ir_load_i64(v.node->data, t->dtype, i);
    if (n)
        *n = (int)count;
    return true;
}

bool ir_const_scalar(IrValue v, double *out)
{
    if (!ir_is_const(v))
        return false;
    const IrType *t = ir_value_type(v);
    int64_t count;
    if (!ir_dtype_is_numeric(t->dtype) || !ir_shape_count_checked(&t->shape, &count) ||
        count != 1 || !v.node->data)
        return false;
    *out = ir_load_f64(v.node->data, t->dtype, 0);
    return true;
}

/* ---- uses ---- */

static bool same_value(IrValue a, IrValue b)
{
    return a.node == b.node && a.index == b.index;
}

void ir_replace_uses(IrGraph *g, IrValue from, IrValue to)
{
    if (!from.node || !to.node || same_value(from, to))
        return;
    bool whole = from.node->n_outputs == 1;
    for (int k = 0; k < g->n_nodes; k++) {
        IrNode *n = g->nodes[k];
        if (n == to.node)
            continue;   /* never make a node use itself */
        for (int i = 0; i < n->n_inputs; i++)
            if (same_value(n->inputs[i], from))
                n->inputs[i] = to;
        if (whole) {
            for (int i = 0; i < n->n_ctrl; i++)
                if (n->ctrl[i] == from.node)
                    n->ctrl[i] = to.node;
        }
    }
    for (int i = 0; i < g->n_fetches; i++)
        if (same_value(g->fetches[i].value, from))
            g->fetches[i].value = to;
    IrGraph *root = ir_graph_root(g);
    for (int i = 0; i < root->n_syms; i++)
        if (same_value(root->syms[i].src, from))
            root->syms[i].src = to;
}

int ir_use_count(const IrGraph *g, const IrNode *n)
{
    int uses = 0;
    for (int k = 0; k < g->n_nodes; k++) {
        const IrNode *u = g->nodes[k];
        if (u->dead)
            continue;
        bool used = false;
        for (int i = 0; i < u->n_inputs && !used; i++)
            used = u->inputs[i].node == n;
        for (int i = 0; i < u->n_ctrl && !used; i++)
            used = u->ctrl[i] == n;
        uses += used;
    }
    for (int i = 0; i < g->n_fetches; i++)
        uses += g->fetches[i].value.node == n;
    return uses;
}

int ir_graph_live_count(const IrGraph *g)
{
    int c = 0;
    for (int k = 0; k < g->n_nodes; k++)
        c += !g->nodes[k]->dead;
    return c;
}

/* Stable topological sort by iterative DFS over inputs and control inputs,
 * visiting roots in the current order.  Returns false (order unchanged) on a
 * cycle or when memory is short. */
static bool toposort(IrGraph *g)
{
    int n = g->n_nodes, ids = g->next_id;
    if (n <= 1)
        return true;
    size_t need = sizeof(int) * (size_t)ids + (sizeof(IrNode *) + sizeof(int)) * (size_t)n +
                  sizeof(IrNode *) * (size_t)n;
    char *mem = ir_tmp_alloc(&g->arena, need);
    if (!mem)
        return false;
    IrNode **stack = (IrNode **)mem;                 /* pointers first: aligned */
    IrNode **order = stack + n;
    int *edge = (int *)(order + n);
    int *state = edge + n;                           /* by id: -1 absent, 0 new, 1 open, 2 done */
    bool ok = true;
    for (int i = 0; i < ids; i++)
        state[i] = -1;
    for (int k = 0; k < n; k++) {
        int id = g->nodes[k]->id;
        if (id < 0 || id >= ids || state[id] != -1) {
            ok = false;
            goto out;
        }
        state[id] = 0;
    }
    int n_order = 0;
    for (int k = 0; k < n && ok; k++) {
        if (state[g->nodes[k]->id] != 0)
            continue;
        int sp = 0;
        stack[sp] = g->nodes[k];
        edge[sp++] = 0;
        state[g->nodes[k]->id] = 1;
        while (sp > 0) {
            IrNode *t = stack[sp - 1];
            int e = edge[sp - 1]++;
            int n_edges = t->n_inputs + t->n_ctrl;
            if (e >= n_edges) {
                state[t->id] = 2;
                order[n_order++] = t;
                sp--;
                continue;
            }
            IrNode *d = e < t->n_inputs ? t->inputs[e].node : t->ctrl[e - t->n_inputs];
            if (!d || d->id < 0 || d->id >= ids || state[d->id] == -1 || state[d->id] == 2)
                continue;
            if (state[d->id] == 1 || sp >= n) {   /* cycle */
                ok = false;
                break;
            }
            state[d->id] = 1;
            stack[sp] = d;
            edge[sp++] = 0;
        }
    }
    if (ok && n_order == n)
        memcpy(g->nodes, order, sizeof(IrNode *) * (size_t)n);
out:
    ir_tmp_free(&g->arena, mem);
    return ok;
}

void ir_graph_compact(IrGraph *g)
{
    int j = 0;
    for (int k = 0; k < g->n_nodes; k++)
        if (!g->nodes[k]->dead)
            g->nodes[j++] = g->nodes[k];
    g->n_nodes = j;
    toposort(g);
}

/* ---- regions ---- */

IrGraph *ir_region_new(IrGraph *parent, Status *st)
{
    if (!parent) {
        st_errorf(st, ST_ERROR, "region without a parent graph");
        return NULL;
    }
    if (parent->depth + 1 > IR_MAX_REGION_DEPTH) {
        st_errorf(st, ST_ERROR, "control flow nested more than %d deep (the limit)", IR_MAX_REGION_DEPTH);
        return NULL;
    }
    IrGraph *root = ir_graph_root(parent);
    if (!grow(&root->arena, (void **)&root->owned, &root->cap_owned, root->n_owned + 1, sizeof(IrGraph *))) {
        nomem(st);
        return NULL;
    }
    IrGraph *r = ir_graph_new(root->arena.a, st);
    if (!r)
        return NULL;
    root->owned[root->n_owned++] = r;
    r->parent = parent;
    r->depth = parent->depth + 1;
    r->name = parent->name;
    r->fold_on_build = parent->fold_on_build;
    r->cur_origin = parent->cur_origin ? arena_strdup(&r->arena, parent->cur_origin) : NULL;
    r->cur_origin_op = parent->cur_origin_op ? arena_strdup(&r->arena, parent->cur_origin_op) : NULL;
    return r;
}

IrNode *ir_emit_region(IrGraph *g, Op op, const IrValue *inputs, int n_inputs, IrGraph **regions,
                       int n_regions, Status *st)
{
    if (op != OP_WHILE && op != OP_COND) {
        st_errorf(st, ST_ERROR, "op %s has no regions", ir_op_name(op));
        return NULL;
    }
    if (n_inputs < (op == OP_COND ? 1 : 0) || n_inputs > (1 << 16) || (n_inputs > 0 && !inputs) ||
        n_regions < 1 || n_regions > (1 << 16) || !regions) {
        st_errorf(st, ST_ERROR, "op %s: bad operand or region count", ir_op_name(op));
        return NULL;
    }
    for (int i = 0; i < n_inputs; i++)
        if (!inputs[i].node || inputs[i].index < 0 || inputs[i].index >= inputs[i].node->n_outputs) {
            if (st_ok(st))
                st_errorf(st, ST_ERROR, "op %s: input %d is undefined", ir_op_name(op), i);
            return NULL;
        }
    for (int r = 0; r < n_regions; r++)
        if (!regions[r]) {
            st_errorf(st, ST_ERROR, "op %s: region %d is missing", ir_op_name(op), r);
            return NULL;
        }
    int n_out = op == OP_WHILE ? n_inputs : regions[0]->n_fetches;
    IrNode *n = new_node(g, op, n_inputs, n_out, st);
    if (!n)
        return NULL;
    if (n_inputs > 0)
        memcpy(n->inputs, inputs, sizeof(IrValue) * (size_t)n_inputs);
    n->regions = arena_alloc(&g->arena, sizeof(IrGraph *) * (size_t)n_regions);
    if (!n->regions) {
        nomem(st);
        return NULL;
    }
    memcpy(n->regions, regions, sizeof(IrGraph *) * (size_t)n_regions);
    n->n_regions = n_regions;
    if (!ir_infer_node(g, n, st))
        return NULL;
    if (!append_node(g, n, st))
        return NULL;
    return n;
}

static void set_depth(IrGraph *r, IrGraph *parent)
{
    r->parent = parent;
    r->depth = parent->depth + 1;
    IR_FOR_EACH(r, n) {
        for (int k = 0; k < n->n_regions; k++)
            set_depth(n->regions[k], r);
    }
}

bool ir_inline_region(IrGraph *g, const IrGraph *region, const IrValue *args, IrValue *results,
                      Status *st)
{
    int n_ids = region->next_id;
    IrValue **map = ir_tmp_alloc(&g->arena, sizeof(IrValue *) * ((size_t)n_ids + 1));
    if (!map)
        return nomem(st);
    memset(map, 0, sizeof(IrValue *) * ((size_t)n_ids + 1));
    bool ok = true;
    const char *so = g->cur_origin, *sop = g->cur_origin_op;
    IR_FOR_EACH(region, n) {
        if (!ok)
            break;
        if (n->id < 0 || n->id >= n_ids) {
            ok = st_errorf(st, ST_ERROR, "inlining: node id %d out of range", n->id);
            break;
        }
        IrValue *outs = arena_alloc(&g->arena, sizeof(IrValue) * (size_t)(n->n_outputs + 1));
        if (!outs) {
            ok = nomem(st);
            break;
        }
        map[n->id] = outs;
        if (n->op == OP_ARG) {
            if (n->p.i[0] < 0 || n->p.i[0] >= region->n_feeds) {   /* an arg that is not a parameter */
                ok = st_errorf(st, ST_ERROR, "inlining: arg %%%d is not one of the region's %d parameters",
                               n->id, region->n_feeds);
                break;
            }
            outs[0] = args[n->p.i[0]];
            continue;
        }
        g->cur_origin = n->origin ? arena_strdup(&g->arena, n->origin) : NULL;
        g->cur_origin_op = n->origin_op ? arena_strdup(&g->arena, n->origin_op) : NULL;
        if (n->op == OP_CONST) {
            outs[0] = ir_const(g, n->out[0].type.dtype, &n->out[0].type.shape, n->data, st);
            ok = outs[0].node != NULL;
            continue;
        }
        IrValue in[64], *inp = in;
        if (n->n_inputs > 64 && !(inp = arena_alloc(&g->arena, sizeof(IrValue) * (size_t)n->n_inputs))) {
            ok = nomem(st);
            break;
        }
        for (int i = 0; i < n->n_inputs; i++) {
            IrValue v = n->inputs[i];
            if (!v.node || v.node->id < 0 || v.node->id >= n_ids || !map[v.node->id]) {
                ok = st_errorf(st, ST_ERROR, "inlining: node %%%d reads a value outside its region", n->id);
                break;
            }
            inp[i] = map[v.node->id][v.index];
        }
        if (!ok)
            break;
        IrNode *m;
        if (n->n_regions > 0) {
            for (int k = 0; k < n->n_regions; k++)
                set_depth(n->regions[k], g);
            m = ir_emit_region(g, n->op, inp, n->n_inputs, n->regions, n->n_regions, st);
        } else {
            m = ir_emit(g, n->op, inp, n->n_inputs, &n->p, &n->out[0].type, st);
        }
        if (!m) {
            ok = false;
            break;
        }
        for (int k = 0; k < n->n_outputs; k++)
            outs[k] = (IrValue){m, m->op == OP_CONST ? 0 : k};
    }
    for (int i = 0; ok && i < region->n_fetches; i++) {
        IrValue v = region->fetches[i].value;
        if (!v.node || v.node->id < 0 || v.node->id >= n_ids || !map[v.node->id])
            ok = st_errorf(st, ST_ERROR, "inlining: result %d is undefined", i);
        else
            results[i] = map[v.node->id][v.index];
    }
    g->cur_origin = so;
    g->cur_origin_op = sop;
    ir_tmp_free(&g->arena, map);
    return ok;
}
