/* ir/dyn.c - bounded data-dependent sizes (the contract: ir.h, "dyn.c").
 *
 * Three parts:
 *   - affine expressions over symbols (IrAff) and their bounds: a symbol is
 *     the run-time value of an integer scalar (IrSym), bounded by interval
 *     analysis of the value's producers (ir_value_range);
 *   - element knowledge (IrOut.sv) of small integer values, evaluated when
 *     a node is built (ir_dyn_node): elementwise arithmetic directly, moves
 *     (reshape, slice, concat, gather with constant indices, pad, ...) by
 *     running the op's reference kernel on element ids; a value whose every
 *     element is known becomes a CONST or an OP_SYMVAL node;
 *   - the shape rules of nodes with a data-dependent input or given output
 *     (ir_dyn_infer): which ops accept one and where the extent goes.
 * Invariant: a data-dependent extent is in the outermost dim with more than
 * one element, so the valid elements are the first ones of the buffer
 * (planned at the bound) and a kernel given the run-time extent in its
 * descriptor reads and writes exactly TensorFlow's elements.
 */
#include "ir/ir_int.h"

#include <string.h>

#define SAT_MAX (INT64_C(1) << 62)
#define RANGE_DEPTH 32
#define MOVE_MAX_IN 4096       /* elements of a move's inputs evaluated by ids */

/* ---- affine expressions ---- */

static int64_t sat(__int128 v)
{
    return v > SAT_MAX ? SAT_MAX : v < -SAT_MAX ? -SAT_MAX : (int64_t)v;
}

IrAff ir_aff_const(int64_t c)
{
    IrAff a;
    memset(&a, 0, sizeof a);
    a.c = c;
    return a;
}

IrAff ir_aff_sym(int sym)
{
    IrAff a = ir_aff_const(0);
    a.n = 1;
    a.sym[0] = sym;
    a.k[0] = 1;
    return a;
}

static IrAff aff_unknown(void)
{
    IrAff a = ir_aff_const(0);
    a.n = IR_AFF_UNKNOWN;
    return a;
}

bool ir_aff_eq(const IrAff *a, const IrAff *b)
{
    if (a->n != b->n || a->c != b->c)
        return false;
    for (int t = 0; t < a->n; t++)
        if (a->sym[t] != b->sym[t] || a->k[t] != b->k[t])
            return false;
    return true;
}

bool ir_aff_add(const IrAff *a, const IrAff *b, int64_t k, IrAff *out)
{
    if (a->n < 0 || b->n < 0)
        return false;
    IrAff r = ir_aff_const(0);
    __int128 c = (__int128)a->c + (__int128)k * b->c;
    if (c > SAT_MAX || c < -SAT_MAX)
        return false;
    r.c = (int64_t)c;
    int i = 0, j = 0;
    while (i < a->n || j < b->n) {
        int s;
        __int128 coef;
        if (j >= b->n || (i < a->n && a->sym[i] < b->sym[j])) {
            s = a->sym[i];
            coef = a->k[i++];
        } else if (i >= a->n || b->sym[j] < a->sym[i]) {
            s = b->sym[j];
            coef = (__int128)k * b->k[j++];
        } else {
            s = a->sym[i];
            coef = a->k[i++] + (__int128)k * b->k[j++];
        }
        if (coef == 0)
            continue;
        if (coef > SAT_MAX || coef < -SAT_MAX || r.n == IR_AFF_TERMS)
            return false;
        r.sym[r.n] = s;
        r.k[r.n++] = (int64_t)coef;
    }
    *out = r;
    return true;
}

bool ir_aff_scale(const IrAff *a, int64_t k, IrAff *out)
{
    IrAff zero = ir_aff_const(0);
    return ir_aff_add(&zero, a, k, out);
}

void ir_aff_range(const IrGraph *g, const IrAff *a, int64_t *lo, int64_t *hi)
{
    const IrGraph *root = ir_graph_root((IrGraph *)g);
    __int128 l = a->c, h = a->c;
    for (int t = 0; t < a->n; t++) {
        const IrSym *s = a->sym[t] >= 0 && a->sym[t] < root->n_syms ? &root->syms[a->sym[t]] : NULL;
        int64_t slo = s ? s->lo : -SAT_MAX, shi = s ? s->hi : SAT_MAX;
        if (a->k[t] > 0) {
            l += (__int128)a->k[t] * slo;
            h += (__int128)a->k[t] * shi;
        } else {
            l += (__int128)a->k[t] * shi;
            h += (__int128)a->k[t] * slo;
        }
    }
    *lo = sat(l);
    *hi = sat(h);
}

const char *ir_aff_str(const IrAff *a, char *buf, size_t n)
{
    if (n == 0)
        return buf;
    buf[0] = '\0';
    if (a->n < 0) {
        snprintf(buf, n, "?");
        return buf;
    }
    if (a->n == 0) {
        snprintf(buf, n, "%lld", (long long)a->c);
        return buf;
    }
    size_t o = 0;
    bool paren = a->n > 1 || a->c != 0 || a->k[0] != 1;
    if (paren)
        o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "(");
    for (int t = 0; t < a->n && o < n; t++) {
        long long k = (long long)a->k[t];
        const char *sign = t == 0 ? (k < 0 ? "-" : "") : (k < 0 ? " - " : " + ");
        long long m = k < 0 ? -k : k;
        if (m == 1)
            o += (size_t)snprintf(buf + o, n - o, "%ssym[%d]", sign, a->sym[t]);
        else
            o += (size_t)snprintf(buf + o, n - o, "%s%lld * sym[%d]", sign, m, a->sym[t]);
    }
    if (a->c != 0 && o < n)
        o += (size_t)snprintf(buf + o, n - o, " %s %lld", a->c < 0 ? "-" : "+",
                              a->c < 0 ? -(long long)a->c : (long long)a->c);
    if (paren && o < n)
        snprintf(buf + o, n - o, ")");
    return buf;
}

/* ---- shapes ---- */

static void clear_dyn(IrShape *s)
{
    s->has_dyn = false;
    s->dyn_dim = 0;
    memset(&s->dyn, 0, sizeof s->dyn);
}

bool ir_shape_set_extent(const IrGraph *g, IrShape *s, int d, const IrAff *e, char *why, size_t n_why)
{
    if (d < 0 || d >= s->rank)
        return snprintf(why, n_why, "dimension %d out of range", d), false;
    if (e->n < 0)
        return snprintf(why, n_why, "the extent of dimension %d is not known", d), false;
    if (ir_aff_is_const(e)) {
        if (e->c < 0)
            return snprintf(why, n_why, "negative extent %lld", (long long)e->c), false;
        s->dims[d] = e->c;
        if (s->has_dyn && s->dyn_dim == d)
            clear_dyn(s);
        return true;
    }
    int64_t lo, hi;
    ir_aff_range(g, e, &lo, &hi);
    char t[128];
    if (hi < 0)
        return snprintf(why, n_why, "the extent %s is always negative", ir_aff_str(e, t, sizeof t)), false;
    if (hi > IR_MAX_ELEMENTS)
        return snprintf(why, n_why, "the extent %s has no usable upper bound", ir_aff_str(e, t, sizeof t)), false;
    if (s->has_dyn && s->dyn_dim != d)
        return snprintf(why, n_why, "a second data-dependent dimension (only one per value is supported)"), false;
    for (int k = 0; k < d; k++)
        if (s->dims[k] != 1)
            return snprintf(why, n_why,
                            "a data-dependent size in dimension %d, which is not the outermost one with more "
                            "than one element (only that one is supported)",
                            d),
                   false;
    s->dims[d] = hi;
    s->has_dyn = true;
    s->dyn_dim = d;
    s->dyn = *e;
    return true;
}

IrAff ir_shape_extent(const IrShape *s, int d)
{
    if (s->has_dyn && s->dyn_dim == d)
        return s->dyn;
    return ir_aff_const(s->dims[d]);
}

bool ir_node_has_dyn(const IrNode *n)
{
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k].node && ir_value_type(n->inputs[k])->shape.has_dyn)
            return true;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->out[k].type.shape.has_dyn)
            return true;
    return false;
}

bool ir_dyn_involved(const IrNode *n)
{
    return ir_node_has_dyn(n);
}

/* ---- element knowledge ---- */

static bool int_like(tcrt_dtype dt)
{
    return ir_dtype_is_int(dt) || dt == TCRT_BOOL;
}

bool ir_value_sv(const IrGraph *g, IrValue v, IrAff *out, int max, int *n)
{
    (void)g;
    const IrType *t = ir_value_type(v);
    if (!int_like(t->dtype) || t->shape.has_dyn)
        return false;
    int64_t cnt = ir_shape_count(&t->shape);
    if (cnt > max)
        return false;
    if (v.node->op == OP_CONST) {
        if (!v.node->data && cnt > 0)
            return false;
        for (int64_t i = 0; i < cnt; i++)
            out[i] = ir_aff_const(ir_load_i64(v.node->data, t->dtype, i));
        *n = (int)cnt;
        return true;
    }
    const IrOut *o = &v.node->out[v.index];
    if (!o->sv || o->n_sv != cnt)
        return false;
    memcpy(out, o->sv, sizeof(IrAff) * (size_t)cnt);
    *n = (int)cnt;
    return true;
}

static int find_sym(const IrGraph *root, IrValue v)
{
    for (int i = 0; i < root->n_syms; i++)
        if (root->syms[i].src.node == v.node && root->syms[i].src.index == v.index)
            return i;
    return -1;
}

static void hull(int64_t *lo, int64_t *hi, int64_t l2, int64_t h2)
{
    *lo = *lo < l2 ? *lo : l2;
    *hi = *hi > h2 ? *hi : h2;
}

static bool range_rec(const IrGraph *g, IrValue v, int64_t *lo, int64_t *hi, int depth);

/* Hull of the ranges of inputs [from, to) of n. */
static bool inputs_hull(const IrGraph *g, const IrNode *n, int from, int to, int64_t *lo, int64_t *hi, int depth)
{
    bool any = false;
    for (int k = from; k < to; k++) {
        int64_t l, h;
        if (!range_rec(g, n->inputs[k], &l, &h, depth + 1))
            return false;
        if (!any) {
            *lo = l;
            *hi = h;
        } else {
            hull(lo, hi, l, h);
        }
        any = true;
    }
    return any;
}

static bool range_rec(const IrGraph *g, IrValue v, int64_t *lo, int64_t *hi, int depth)
{
    if (depth > RANGE_DEPTH || !v.node)
        return false;
    const IrType *t = ir_value_type(v);
    const IrNode *n = v.node;
    const IrGraph *root = ir_graph_root((IrGraph *)g);
    int s = find_sym(root, v);
    if (s >= 0) {
        *lo = root->syms[s].lo;
        *hi = root->syms[s].hi;
        return true;
    }
    if (t->dtype == TCRT_BOOL) {
        *lo = 0;
        *hi = 1;
        return true;
    }
    if (!ir_dtype_is_int(t->dtype))
        return false;
    if (n->op == OP_CONST) {
        int64_t cnt = ir_shape_count(&t->shape);
        if (cnt == 0 || !n->data)
            return false;
        *lo = *hi = ir_load_i64(n->data, t->dtype, 0);
        for (int64_t i = 1; i < cnt; i++) {
            int64_t x = ir_load_i64(n->data, t->dtype, i);
            hull(lo, hi, x, x);
        }
        return true;
    }
    const IrOut *o = &n->out[v.index];
    if (o->sv && o->n_sv > 0) {
        bool all = true;
        for (int i = 0; i < o->n_sv && all; i++) {
            if (o->sv[i].n < 0) {
                all = false;
                break;
            }
            int64_t l, h;
            ir_aff_range(g, &o->sv[i], &l, &h);
            if (i == 0) {
                *lo = l;
                *hi = h;
            } else {
                hull(lo, hi, l, h);
            }
        }
        if (all)
            return true;
    }
    int64_t l1, h1, l2, h2;
    switch (n->op) {
    case OP_CAST: {
        tcrt_dtype src = ir_value_type(n->inputs[0])->dtype;
        if (src == TCRT_BOOL) {
            *lo = 0;
            *hi = 1;
            return true;
        }
        return ir_dtype_is_int(src) && range_rec(g, n->inputs[0], lo, hi, depth + 1);
    }
    case OP_SELECT:
        return inputs_hull(g, n, 1, 3, lo, hi, depth);
    case OP_MIN:
    case OP_MAX: {
        /* one bounded operand bounds a Minimum from above (a Maximum from below) */
        bool k1 = range_rec(g, n->inputs[0], &l1, &h1, depth + 1);
        bool k2 = range_rec(g, n->inputs[1], &l2, &h2, depth + 1);
        if (!k1 && !k2)
            return false;
        if (!k1) {
            l1 = -SAT_MAX;
            h1 = SAT_MAX;
        }
        if (!k2) {
            l2 = -SAT_MAX;
            h2 = SAT_MAX;
        }
    }
        if (n->op == OP_MIN) {
            *lo = l1 < l2 ? l1 : l2;
            *hi = h1 < h2 ? h1 : h2;
        } else {
            *lo = l1 > l2 ? l1 : l2;
            *hi = h1 > h2 ? h1 : h2;
        }
        return true;
    case OP_ADD:
    case OP_SUB:
        if (!range_rec(g, n->inputs[0], &l1, &h1, depth + 1) || !range_rec(g, n->inputs[1], &l2, &h2, depth + 1))
            return false;
        *lo = n->op == OP_ADD ? sat((__int128)l1 + l2) : sat((__int128)l1 - h2);
        *hi = n->op == OP_ADD ? sat((__int128)h1 + h2) : sat((__int128)h1 - l2);
        return true;
    case OP_NEG:
        if (!range_rec(g, n->inputs[0], &l1, &h1, depth + 1))
            return false;
        *lo = -h1;
        *hi = -l1;
        return true;
    case OP_MUL: {
        if (!range_rec(g, n->inputs[0], &l1, &h1, depth + 1) || !range_rec(g, n->inputs[1], &l2, &h2, depth + 1))
            return false;
        __int128 c[4] = {(__int128)l1 * l2, (__int128)l1 * h2, (__int128)h1 * l2, (__int128)h1 * h2};
        __int128 mn = c[0], mx = c[0];
        for (int i = 1; i < 4; i++) {
            mn = c[i] < mn ? c[i] : mn;
            mx = c[i] > mx ? c[i] : mx;
        }
        *lo = sat(mn);
        *hi = sat(mx);
        return true;
    }
    case OP_REDUCE_SUM: {
        if (!range_rec(g, n->inputs[0], &l1, &h1, depth + 1))
            return false;
        const IrShape *xs = &ir_value_type(n->inputs[0])->shape;
        int64_t out_cnt = ir_shape_count(&t->shape);
        int64_t c = out_cnt > 0 ? ir_shape_count(xs) / out_cnt : 0;
        __int128 a = (__int128)c * l1, b = (__int128)c * h1;
        if (xs->has_dyn) { /* fewer elements at run time: anywhere between 0 and c of them */
            a = a < 0 ? a : 0;
            b = b > 0 ? b : 0;
        }
        *lo = sat(a);
        *hi = sat(b);
        return true;
    }
    case OP_REDUCE_MAX:
    case OP_REDUCE_MIN:
    case OP_COPY:
    case OP_SLICE:
    case OP_TRANSPOSE:
    case OP_TILE:
    case OP_BROADCAST:
        return range_rec(g, n->inputs[0], lo, hi, depth + 1);
    case OP_GATHER:
        return range_rec(g, n->inputs[0], lo, hi, depth + 1);
    case OP_CONCAT:
        return inputs_hull(g, n, 0, n->n_inputs, lo, hi, depth);
    case OP_PAD:
        if (!range_rec(g, n->inputs[0], lo, hi, depth + 1))
            return false;
        hull(lo, hi, (int64_t)n->p.f[0], (int64_t)n->p.f[0]);
        return true;
    case OP_TOPK:
        if (v.index == 1) {
            *lo = 0;
            *hi = ir_value_type(n->inputs[0])->shape.dims[ir_value_type(n->inputs[0])->shape.rank - 1] - 1;
            return true;
        }
        return range_rec(g, n->inputs[0], lo, hi, depth + 1);
    case OP_NMS: {
        int64_t nb = ir_value_type(n->inputs[0])->shape.dims[0];
        if (v.index == 0 || v.index == 3) {
            *lo = v.index == 3 ? -1 : 0;
            *hi = nb - 1 > 0 ? nb - 1 : 0;
            return true;
        }
        if (v.index == 2) {
            int64_t m = n->p.i[TCRT_NMS_MAX_OUT];
            *lo = 0;
            *hi = m < nb ? m : nb;
            return true;
        }
        return false;
    }
    case OP_WHERE: {
        const IrShape *xs = &ir_value_type(n->inputs[0])->shape;
        if (v.index == 1) {
            *lo = 0;
            *hi = ir_shape_count(xs);
            return true;
        }
        int64_t m = 0;
        for (int d = 0; d < xs->rank; d++)
            m = xs->dims[d] > m ? xs->dims[d] : m;
        *lo = -1;
        *hi = m - 1;
        return true;
    }
    case OP_RANGE: {
        int64_t cnt = t->shape.dims[0];
        double a = n->p.f[TCRT_RANGE_START], b = a + (double)(cnt > 0 ? cnt - 1 : 0) * n->p.f[TCRT_RANGE_DELTA];
        *lo = (int64_t)(a < b ? a : b);
        *hi = (int64_t)(a < b ? b : a);
        return true;
    }
    default:
        return false;
    }
}

bool ir_value_range(const IrGraph *g, IrValue v, int64_t *lo, int64_t *hi)
{
    return range_rec(g, v, lo, hi, 0);
}

static bool set_sv(IrGraph *g, IrOut *o, const IrAff *e, int n, Status *st)
{
    IrAff *sv = arena_alloc(&g->arena, sizeof(IrAff) * (size_t)(n > 0 ? n : 1));
    if (!sv)
        return st_errorf(st, ST_NOMEM, "out of memory");
    memcpy(sv, e, sizeof(IrAff) * (size_t)n);
    o->sv = sv;
    o->n_sv = n;
    return true;
}

bool ir_sym_of(IrGraph *g, IrValue v, IrAff *out, Status *st)
{
    const IrType *t = ir_value_type(v);
    IrAff e[1];
    int n = 0;
    if (ir_shape_count(&t->shape) != 1 || !ir_dtype_is_int(t->dtype) || t->shape.has_dyn)
        return ir_node_errorf(st, v.node, "a size must be an integer scalar, got %s", tcrt_dtype_name(t->dtype));
    if (ir_value_sv(g, v, e, 1, &n) && e[0].n >= 0) {
        *out = e[0];
        return true;
    }
    IrGraph *root = ir_graph_root(g);
    int s = find_sym(root, v);
    if (s >= 0) {
        *out = ir_aff_sym(s);
        return true;
    }
    if (g != root)
        return ir_node_errorf(st, v.node,
                              "a data-dependent size inside a loop or conditional is not supported "
                              "(sizes inside regions must be static)");
    int64_t lo, hi;
    if (!ir_value_range(g, v, &lo, &hi) || hi >= SAT_MAX)
        return ir_node_errorf(st, v.node,
                              "a size computed at run time from this value has no upper bound that tfcc can "
                              "prove (data-dependent size); bound it (e.g. with Minimum) or make it constant");
    if (root->n_syms == root->cap_syms) {
        int cap = root->cap_syms ? root->cap_syms * 2 : 16;
        IrSym *ns = arena_alloc(&root->arena, sizeof(IrSym) * (size_t)cap);
        if (!ns)
            return st_errorf(st, ST_NOMEM, "out of memory");
        if (root->n_syms)
            memcpy(ns, root->syms, sizeof(IrSym) * (size_t)root->n_syms);
        root->syms = ns;
        root->cap_syms = cap;
    }
    s = root->n_syms++;
    root->syms[s] = (IrSym){v, lo, hi};
    *out = ir_aff_sym(s);
    return set_sv(g, &v.node->out[v.index], out, 1, st);
}

static bool is_sv_move(Op op);
static bool eval_move(IrGraph *g, const IrNode *n, IrAff *const *ins, IrAff *out, int64_t cnt, bool *nomem,
                      int *src_k, int64_t *src_e);

bool ir_value_elem(IrGraph *g, IrValue v, int64_t i, IrAff *out, Status *st)
{
    const IrType *t = ir_value_type(v);
    int64_t cnt = ir_shape_count(&t->shape);
    if (i < 0 || i >= cnt || t->shape.has_dyn)
        return ir_node_errorf(st, v.node, "element %lld of a value of %lld elements", (long long)i, (long long)cnt);
    IrAff e[IR_SV_MAX];
    int n = 0;
    if (cnt <= IR_SV_MAX && ir_value_sv(g, v, e, IR_SV_MAX, &n) && e[i].n >= 0) {
        *out = e[i];
        return true;
    }
    /* through moves (Pack, reshapes, slices, concats) to the element's
     * source, whose knowledge may be newer than the move's */
    if (is_sv_move(v.node->op) && v.node->n_outputs == 1 && cnt <= MOVE_MAX_IN) {
        IrAff *tmp = ir_tmp_alloc(&g->arena, sizeof(IrAff) * (size_t)cnt);
        int *sk = ir_tmp_alloc(&g->arena, sizeof(int) * (size_t)cnt);
        int64_t *se = ir_tmp_alloc(&g->arena, sizeof(int64_t) * (size_t)cnt);
        IrAff *none[64] = {0};
        bool nomem = !tmp || !sk || !se;
        bool found = !nomem && eval_move(g, v.node, none, tmp, cnt, &nomem, sk, se) && sk[i] >= 0;
        int k = found ? sk[i] : 0;
        int64_t e = found ? se[i] : 0;
        if (tmp)
            ir_tmp_free(&g->arena, tmp);
        if (sk)
            ir_tmp_free(&g->arena, sk);
        if (se)
            ir_tmp_free(&g->arena, se);
        if (nomem)
            return st_errorf(st, ST_NOMEM, "out of memory");
        if (found)
            return ir_value_elem(g, v.node->inputs[k], e, out, st);
    }
    if (cnt == 1 && t->shape.rank == 0)
        return ir_sym_of(g, v, out, st);
    IrParams p;
    memset(&p, 0, sizeof p);
    IrType one = {t->dtype, {t->shape.rank, {0}}};
    int64_t rem = i;
    for (int d = t->shape.rank - 1; d >= 0; d--) {
        p.i[TCRT_SL_BEGIN + d] = rem % t->shape.dims[d];
        rem /= t->shape.dims[d];
        p.i[TCRT_SL_STRIDE + d] = 1;
        one.shape.dims[d] = 1;
    }
    IrValue sl = ir_emit1(g, OP_SLICE, &v, 1, &p, &one, st);
    if (!sl.node)
        return false;
    IrShape scalar = {0, {0}};
    IrValue sc = ir_reshape(g, sl, &scalar, st);
    if (!sc.node)
        return false;
    return ir_sym_of(g, sc, out, st);
}

/* Adds control inputs from n to the producers of the symbols in e. */
static void order_after_syms(IrGraph *g, IrNode *n, const IrAff *e, Status *st)
{
    IrGraph *root = ir_graph_root(g);
    for (int t = 0; t < e->n; t++)
        if (e->sym[t] >= 0 && e->sym[t] < root->n_syms && root->syms[e->sym[t]].src.node != n)
            ir_add_ctrl(g, n, root->syms[e->sym[t]].src.node, st);
}

IrValue ir_sv_value(IrGraph *g, tcrt_dtype dt, const IrShape *s, const IrAff *e, Status *st)
{
    int64_t cnt = ir_shape_count(s);
    bool all_const = true;
    for (int64_t i = 0; i < cnt; i++) {
        if (e[i].n < 0) {
            ir_node_errorf(st, NULL, "internal: an unknown element given to ir_sv_value");
            return (IrValue){NULL, 0};
        }
        all_const &= e[i].n == 0;
    }
    if (all_const) {
        size_t es = tcrt_dtype_size(dt);
        void *buf = ir_tmp_alloc(&g->arena, es * (size_t)(cnt > 0 ? cnt : 1));
        if (!buf) {
            st_errorf(st, ST_NOMEM, "out of memory");
            return (IrValue){NULL, 0};
        }
        for (int64_t i = 0; i < cnt; i++)
            ir_store_i64(buf, dt, i, e[i].c);
        IrValue v = ir_const(g, dt, s, buf, st);
        ir_tmp_free(&g->arena, buf);
        return v;
    }
    IrType t = {dt, *s};
    IrNode *n = ir_emit(g, OP_SYMVAL, NULL, 0, NULL, &t, st);
    if (!n)
        return (IrValue){NULL, 0};
    IrAff *data = arena_alloc(&g->arena, sizeof(IrAff) * (size_t)cnt);
    if (!data) {
        st_errorf(st, ST_NOMEM, "out of memory");
        return (IrValue){NULL, 0};
    }
    memcpy(data, e, sizeof(IrAff) * (size_t)cnt);
    n->data = data;
    n->data_bytes = sizeof(IrAff) * (size_t)cnt;
    n->out[0].sv = data;
    n->out[0].n_sv = (int)cnt;
    for (int64_t i = 0; i < cnt; i++)
        order_after_syms(g, n, &e[i], st);
    return (IrValue){n, 0};
}

/* ---- evaluation of element knowledge ---- */

/* Sign of a - b when the bounds decide it: -1, 0 (equal), 1; 2 = unknown;
 * also *ge / *le when a >= b / a <= b is certain. */
static void compare(const IrGraph *g, const IrAff *a, const IrAff *b, bool *gt, bool *ge, bool *lt, bool *le,
                    bool *eq, bool *ne)
{
    *gt = *ge = *lt = *le = *eq = *ne = false;
    IrAff d;
    if (!ir_aff_add(a, b, -1, &d))
        return;
    int64_t lo, hi;
    ir_aff_range(g, &d, &lo, &hi);
    *gt = lo > 0;
    *ge = lo >= 0;
    *lt = hi < 0;
    *le = hi <= 0;
    *eq = lo == 0 && hi == 0;
    *ne = lo > 0 || hi < 0;
}

/* Element o of the elementwise node n: operands by NumPy broadcasting. */
static IrAff eval_elem_at(const IrGraph *g, const IrNode *n, IrAff *const *ins, const int64_t *o_idx)
{
    IrAff op[3];
    const IrShape *os = &n->out[0].type.shape;
    for (int k = 0; k < n->n_inputs && k < 3; k++) {
        const IrShape *s = &ir_value_type(n->inputs[k])->shape;
        int64_t e = 0;
        for (int d = 0; d < s->rank; d++) {
            int od = d + (os->rank - s->rank);
            e = e * s->dims[d] + (s->dims[d] == 1 ? 0 : o_idx[od]);
        }
        op[k] = ins[k] ? ins[k][e] : aff_unknown();
    }
    IrAff r = aff_unknown();
    bool gt, ge, lt, le, eq, ne;
    switch (n->op) {
    case OP_SELECT:
        if (op[0].n == 0)
            return op[0].c ? op[1] : op[2];
        if (op[1].n >= 0 && ir_aff_eq(&op[1], &op[2]))
            return op[1];
        return r;
    default:
        break;
    }
    for (int k = 0; k < n->n_inputs; k++)
        if (op[k].n < 0)
            return r;
    tcrt_dtype odt = n->out[0].type.dtype;
    switch (n->op) {
    case OP_NEG:
        if (!ir_aff_scale(&op[0], -1, &r))
            r = aff_unknown();
        return r;
    case OP_ADD:
    case OP_SUB:
        if (!ir_aff_add(&op[0], &op[1], n->op == OP_ADD ? 1 : -1, &r))
            r = aff_unknown();
        return r;
    case OP_MUL:
        if ((op[0].n == 0 && !ir_aff_scale(&op[1], op[0].c, &r)) ||
            (op[0].n != 0 && (op[1].n != 0 || !ir_aff_scale(&op[0], op[1].c, &r))))
            r = aff_unknown();
        return r;
    case OP_MIN:
    case OP_MAX:
        compare(g, &op[0], &op[1], &gt, &ge, &lt, &le, &eq, &ne);
        if (ge)
            return n->op == OP_MIN ? op[1] : op[0];
        if (le)
            return n->op == OP_MIN ? op[0] : op[1];
        return r;
    case OP_GT:
    case OP_GE:
    case OP_LT:
    case OP_LE:
    case OP_EQ:
    case OP_NE: {
        compare(g, &op[0], &op[1], &gt, &ge, &lt, &le, &eq, &ne);
        bool yes = false, no = false;
        switch (n->op) {
        case OP_GT: yes = gt; no = le; break;
        case OP_GE: yes = ge; no = lt; break;
        case OP_LT: yes = lt; no = ge; break;
        case OP_LE: yes = le; no = gt; break;
        case OP_EQ: yes = eq; no = ne; break;
        default: yes = ne; no = eq; break;
        }
        return yes ? ir_aff_const(1) : no ? ir_aff_const(0) : r;
    }
    case OP_CAST:
        if (odt == TCRT_BOOL) {
            if (op[0].n == 0)
                return ir_aff_const(op[0].c != 0);
            int64_t lo, hi;
            ir_aff_range(g, &op[0], &lo, &hi);
            return lo > 0 || hi < 0 ? ir_aff_const(1) : r;
        }
        if (op[0].n == 0) { /* exact conversion of a constant to the target width */
            int64_t buf[1];
            ir_store_i64(buf, odt, 0, op[0].c);
            return ir_aff_const(ir_load_i64(buf, odt, 0));
        }
        return op[0];
    default:
        return r;
    }
}

static bool is_sv_elem(Op op)
{
    switch (op) {
    case OP_NEG: case OP_ADD: case OP_SUB: case OP_MUL: case OP_MIN: case OP_MAX:
    case OP_GT: case OP_GE: case OP_LT: case OP_LE: case OP_EQ: case OP_NE:
    case OP_SELECT: case OP_CAST:
        return true;
    default:
        return false;
    }
}

static bool is_sv_move(Op op)
{
    switch (op) {
    case OP_COPY: case OP_SLICE: case OP_CONCAT: case OP_GATHER: case OP_PAD:
    case OP_TRANSPOSE: case OP_TILE: case OP_BROADCAST:
        return true;
    default:
        return false;
    }
}

/* Moves: run the op's reference kernel on element ids (input k's element e
 * is base[k] + e; a pad element is -1) and map the output ids back. */
static bool eval_move(IrGraph *g, const IrNode *n, IrAff *const *ins, IrAff *out, int64_t cnt, bool *nomem,
                      int *src_k, int64_t *src_e)
{
    const OpInfo *oi = ir_op_info(n->op);
    if (!oi || !oi->ref_kernel || n->n_inputs > 64)
        return false;
    tcrt_tensor in[64], o;
    int64_t base[65];
    base[0] = 0;
    for (int k = 0; k < n->n_inputs; k++) {
        const IrShape *s = &ir_value_type(n->inputs[k])->shape;
        int64_t c = ir_shape_count(s);
        bool is_idx = n->op == OP_GATHER && k == 1;
        base[k + 1] = base[k] + (is_idx ? 0 : c);
        if (base[k + 1] > MOVE_MAX_IN || s->has_dyn)
            return false;
    }
    bool ok = true;
    void *bufs[65] = {0};
    for (int k = 0; k < n->n_inputs && ok; k++) {
        const IrType *t = ir_value_type(n->inputs[k]);
        int64_t c = ir_shape_count(&t->shape);
        bool is_idx = n->op == OP_GATHER && k == 1;
        if (is_idx && n->inputs[k].node->op != OP_CONST) {
            ok = false;
            break;
        }
        bufs[k] = ir_tmp_alloc(&g->arena, sizeof(int64_t) * (size_t)(c > 0 ? c : 1));
        if (!bufs[k]) {
            ok = false;
            *nomem = true;
            break;
        }
        int64_t *b = bufs[k];
        for (int64_t e = 0; e < c; e++)
            b[e] = is_idx ? ir_load_i64(n->inputs[k].node->data, t->dtype, e) : base[k] + e;
        in[k] = (tcrt_tensor){b, TCRT_I64, t->shape.rank, {0}};
        memcpy(in[k].dims, t->shape.dims, sizeof(int64_t) * IR_MAX_RANK);
    }
    int64_t *ob = ok ? ir_tmp_alloc(&g->arena, sizeof(int64_t) * (size_t)(cnt > 0 ? cnt : 1)) : NULL;
    if (ok && ob) {
        const IrShape *os = &n->out[0].type.shape;
        o = (tcrt_tensor){ob, TCRT_I64, os->rank, {0}};
        memcpy(o.dims, os->dims, sizeof(int64_t) * IR_MAX_RANK);
        tcrt_params p;
        memset(&p, 0, sizeof p);
        memcpy(p.i, n->p.i, sizeof p.i);
        memcpy(p.f, n->p.f, sizeof p.f);
        if (n->op == OP_PAD)
            p.f[0] = -1;
        ok = oi->ref_kernel(in, n->n_inputs, &o, 1, &p) == TCRT_OK;
        for (int64_t i = 0; ok && i < cnt; i++) {
            int64_t id = ob[i];
            if (src_k)
                src_k[i] = -1;
            if (id < 0) {
                out[i] = n->op == OP_PAD ? ir_aff_const((int64_t)n->p.f[0]) : aff_unknown();
                continue;
            }
            int k = 0;
            while (k < n->n_inputs && !(id >= base[k] && id < base[k + 1]))
                k++;
            out[i] = k < n->n_inputs && ins[k] ? ins[k][id - base[k]] : aff_unknown();
            if (src_k && k < n->n_inputs) {
                src_k[i] = k;
                src_e[i] = id - base[k];
            }
        }
    } else {
        *nomem |= ok;
        ok = false;
    }
    if (ob)
        ir_tmp_free(&g->arena, ob);
    for (int k = 0; k < n->n_inputs; k++)
        if (bufs[k])
            ir_tmp_free(&g->arena, bufs[k]);
    return ok;
}

bool ir_dyn_node(IrGraph *g, IrNode *n, const IrType *given, IrNode **replace, Status *st)
{
    (void)given;
    *replace = NULL;
    int errors = st->n_errors, code = st->code;
    for (int k = 0; k < n->n_outputs; k++)
        if (n->out[k].type.shape.has_dyn)
            order_after_syms(g, n, &n->out[k].type.shape.dyn, st);
    if (st->n_errors != errors || st->code != code)
        return false;
    if (n->n_outputs != 1 || n->op == OP_SYMVAL || !(is_sv_elem(n->op) || is_sv_move(n->op)))
        return true;
    const IrType *ot = &n->out[0].type;
    int64_t cnt = ir_shape_count(&ot->shape);
    if (!int_like(ot->dtype) || ot->shape.has_dyn || cnt > IR_SV_MAX || cnt < 1)
        return true;
    /* what is known of the inputs; nothing to do when none is partly symbolic */
    IrAff *ins[64] = {0};
    bool any_sv = false, all_const = true, ok = n->n_inputs <= 64;
    for (int k = 0; k < n->n_inputs && ok; k++)
        all_const &= n->inputs[k].node->op == OP_CONST;
    for (int k = 0; k < n->n_inputs && ok && !all_const; k++) {
        IrValue v = n->inputs[k];
        const IrType *t = ir_value_type(v);
        int64_t c = ir_shape_count(&t->shape);
        if (!int_like(t->dtype) || t->shape.has_dyn || c > MOVE_MAX_IN)
            continue;
        if (v.node->op != OP_CONST && !v.node->out[v.index].sv)
            continue;
        /* elementwise results need a partly known operand; a move of a
         * constant next to an unknown value (Pack) keeps the constant */
        any_sv |= v.node->op != OP_CONST || is_sv_move(n->op);
        ins[k] = ir_tmp_alloc(&g->arena, sizeof(IrAff) * (size_t)(c > 0 ? c : 1));
        if (!ins[k]) {
            ok = false;
            break;
        }
        int m = 0;
        if (!ir_value_sv(g, v, ins[k], (int)c, &m)) {
            ir_tmp_free(&g->arena, ins[k]);
            ins[k] = NULL;
        }
    }
    if (!ok && n->n_inputs <= 64) {
        for (int k = 0; k < n->n_inputs; k++)
            if (ins[k])
                ir_tmp_free(&g->arena, ins[k]);
        return st_errorf(st, ST_NOMEM, "out of memory");
    }
    IrAff out[IR_SV_MAX];
    bool have = false;
    if (ok && any_sv) {
        if (is_sv_elem(n->op)) {
            int64_t idx[IR_MAX_RANK] = {0};
            for (int64_t i = 0; i < cnt; i++) {
                int64_t rem = i;
                for (int d = ot->shape.rank - 1; d >= 0; d--) {
                    idx[d] = rem % ot->shape.dims[d];
                    rem /= ot->shape.dims[d];
                }
                out[i] = eval_elem_at(g, n, ins, idx);
            }
            have = true;
        } else {
            bool nomem = false;
            have = eval_move(g, n, ins, out, cnt, &nomem, NULL, NULL);
            if (nomem) {
                for (int k = 0; k < n->n_inputs && k < 64; k++)
                    if (ins[k])
                        ir_tmp_free(&g->arena, ins[k]);
                return st_errorf(st, ST_NOMEM, "out of memory");
            }
        }
    }
    for (int k = 0; k < n->n_inputs && k < 64; k++)
        if (ins[k])
            ir_tmp_free(&g->arena, ins[k]);
    if (!have)
        return true;
    bool all = true, some = false;
    for (int64_t i = 0; i < cnt; i++) {
        all &= out[i].n >= 0;
        some |= out[i].n >= 0;
    }
    if (all) {
        IrValue v = ir_sv_value(g, ot->dtype, &ot->shape, out, st);
        if (!v.node)
            return false;
        *replace = v.node;
        return true;
    }
    if (some)
        return set_sv(g, &n->out[0], out, (int)cnt, st);
    return true;
}

/* ---- shape rules with data-dependent sizes ---- */

static bool dyn_fail(Status *st, const IrNode *n, const char *why)
{
    return ir_node_errorf(st, n, "%s (data-dependent size)", why);
}

static bool set_ext(const IrGraph *g, const IrNode *n, IrShape *s, int d, const IrAff *e, Status *st)
{
    char why[300];
    if (!ir_shape_set_extent(g, s, d, e, why, sizeof why))
        return dyn_fail(st, n, why);
    return true;
}

static bool unsupported(const IrNode *n, Status *st)
{
    for (int k = 0; k < n->n_inputs; k++) {
        const IrShape *s = &ir_value_type(n->inputs[k])->shape;
        if (s->has_dyn) {
            char sh[200], e[100];
            return ir_node_errorf(st, n, "input %d has a data-dependent size (%s, extent %s), which %s does not support",
                                  k, ir_shape_str(s, sh, sizeof sh), ir_aff_str(&s->dyn, e, sizeof e),
                                  ir_op_name(n->op));
        }
    }
    return ir_node_errorf(st, n, "a data-dependent output size is not supported by %s", ir_op_name(n->op));
}

/* A given output shape's extent is trusted only when set by
 * ir_shape_set_extent (its bound is the extent's upper bound); a shape
 * copied from an input and then resized is not. */
static void check_given(const IrGraph *g, IrShape *s)
{
    if (!s->has_dyn)
        return;
    int64_t lo, hi;
    ir_aff_range(g, &s->dyn, &lo, &hi);
    if (s->dyn_dim < 0 || s->dyn_dim >= s->rank || s->dims[s->dyn_dim] != hi)
        clear_dyn(s);
}

static bool need_given_rank(const IrNode *n, const IrShape *given, int rank, Status *st)
{
    if (given->rank < 0)
        return ir_node_errorf(st, n, "%s needs its output shape given", ir_op_name(n->op));
    if (rank >= 0 && given->rank != rank)
        return ir_node_errorf(st, n, "%s output rank %d differs from the input's %d", ir_op_name(n->op),
                              given->rank, rank);
    return true;
}

static int64_t prod_after(const IrShape *s, int d)
{
    int64_t p = 1;
    for (int k = d + 1; k < s->rank; k++)
        p *= s->dims[k];
    return p;
}

static bool dyn_copy(IrGraph *g, IrNode *n, Status *st)
{
    const IrShape *x = &ir_value_type(n->inputs[0])->shape;
    IrShape o = n->out[0].type.shape;
    if (!need_given_rank(n, &o, -1, st))
        return false;
    if (!x->has_dyn)
        return o.has_dyn ? unsupported(n, st) : ir_shape_copy(g, n, st);
    int64_t rest_in = prod_after(x, x->dyn_dim);
    IrAff e;
    /* the output's extent is always derived: frontends build reshape
     * targets from the input's dims (its bound), so only where the
     * outermost non-1 dim lands matters */
    clear_dyn(&o);
    {
        int d = 0;
        while (d < o.rank && o.dims[d] == 1)
            d++;
        if (d == o.rank)
            d = o.rank - 1;
        if (d < 0)
            return dyn_fail(st, n, "reshape of a data-dependent size to a scalar");
        int64_t rest_out = prod_after(&o, d);
        if (rest_out == 0 || rest_in % rest_out != 0 || o.dims[d] != x->dims[x->dyn_dim] * (rest_in / rest_out))
            return dyn_fail(st, n, "the reshape moves the data-dependent extent off the outermost dimension");
        if (!ir_aff_scale(&x->dyn, rest_in / rest_out, &e))
            return dyn_fail(st, n, "extent overflow");
        clear_dyn(&o);
        if (!set_ext(g, n, &o, d, &e, st))
            return false;
    }
    if (ir_shape_count(&o) != ir_shape_count(x))
        return dyn_fail(st, n, "reshape changes the element count");
    n->out[0].type.shape = o;
    return true;
}

static bool dyn_slice(IrGraph *g, IrNode *n, Status *st)
{
    const IrShape *x = &ir_value_type(n->inputs[0])->shape;
    IrShape o = n->out[0].type.shape;
    if (!need_given_rank(n, &o, x->rank, st))
        return false;
    check_given(g, &o);
    for (int d = 0; d < x->rank; d++) {
        int64_t b = n->p.i[TCRT_SL_BEGIN + d], s = n->p.i[TCRT_SL_STRIDE + d];
        bool in_dyn = x->has_dyn && x->dyn_dim == d, out_dyn = o.has_dyn && o.dyn_dim == d;
        if (out_dyn) {
            if (s != 1 || b < 0 || b + o.dims[d] > x->dims[d])
                return dyn_fail(st, n, "a slice of computed size needs stride 1 and must fit the input's bound");
            continue;
        }
        if (in_dyn) {
            if (b != 0 || s != 1 || o.dims[d] != x->dims[d])
                return dyn_fail(st, n, "slices part of a dimension whose extent is known only at run time");
            IrAff e = x->dyn;
            if (!set_ext(g, n, &o, d, &e, st))
                return false;
            continue;
        }
        if (s == 0 || o.dims[d] < 0)
            return ir_node_errorf(st, n, "bad slice of dim %d", d);
        if (o.dims[d] > 0) {
            int64_t last = b + (o.dims[d] - 1) * s;
            if (b < 0 || b >= x->dims[d] || last < 0 || last >= x->dims[d])
                return ir_node_errorf(st, n, "slice of dim %d out of range", d);
        }
    }
    n->out[0].type.shape = o;
    return true;
}

/* PAD: a dim whose after-padding param is IR_PAD_RUNTIME has its output
 * extent given by the frontend (a padding computed from run-time sizes);
 * the others get extent + before + after. */
static bool dyn_pad(IrGraph *g, IrNode *n, Status *st)
{
    const IrShape *x = &ir_value_type(n->inputs[0])->shape;
    IrShape given = n->out[0].type.shape;
    check_given(g, &given);
    IrShape o = *x;
    clear_dyn(&o);
    for (int d = 0; d < x->rank; d++) {
        int64_t b = n->p.i[2 * d], a = n->p.i[2 * d + 1];
        if (b < 0)
            return ir_node_errorf(st, n, "negative padding before dim %d", d);
        IrAff e;
        if (a == IR_PAD_RUNTIME) {
            if (given.rank != x->rank)
                return ir_node_errorf(st, n, "a padding computed at run time needs the output shape given");
            e = ir_shape_extent(&given, d);
        } else {
            IrAff xe = ir_shape_extent(x, d), ba = ir_aff_const(b + a);
            if (a < 0 || !ir_aff_add(&xe, &ba, 1, &e))
                return ir_node_errorf(st, n, "bad padding of dim %d", d);
        }
        if (!set_ext(g, n, &o, d, &e, st))
            return false;
    }
    n->out[0].type.shape = o;
    return true;
}

static bool dyn_concat(IrGraph *g, IrNode *n, Status *st)
{
    if (!ir_shape_concat(g, n, st))
        return false;
    IrShape o = n->out[0].type.shape;
    clear_dyn(&o);
    int axis = (int)n->p.i[TCRT_CAT_AXIS];
    for (int d = 0; d < o.rank; d++) {
        IrAff e = ir_shape_extent(&ir_value_type(n->inputs[0])->shape, d);
        for (int k = 1; k < n->n_inputs; k++) {
            IrAff f = ir_shape_extent(&ir_value_type(n->inputs[k])->shape, d);
            if (d == axis) {
                if (!ir_aff_add(&e, &f, 1, &e))
                    return dyn_fail(st, n, "the concatenated extent has too many terms");
            } else if (!ir_aff_eq(&e, &f)) {
                return dyn_fail(st, n, "inputs whose extents are not provably equal");
            }
        }
        if (!set_ext(g, n, &o, d, &e, st))
            return false;
    }
    n->out[0].type.shape = o;
    return true;
}

static bool dyn_gather(IrGraph *g, IrNode *n, Status *st)
{
    if (!ir_shape_gather(g, n, st))
        return false;
    if (n->p.i[TCRT_GA_BATCH] != 0)
        return unsupported(n, st);
    const IrShape *ps = &ir_value_type(n->inputs[0])->shape, *is = &ir_value_type(n->inputs[1])->shape;
    int axis = (int)n->p.i[TCRT_GA_AXIS];
    IrShape o = n->out[0].type.shape;
    clear_dyn(&o);
    if (ps->has_dyn && ps->dyn_dim != axis) {
        int d = ps->dyn_dim < axis ? ps->dyn_dim : ps->dyn_dim + is->rank - 1;
        if (!set_ext(g, n, &o, d, &ps->dyn, st))
            return false;
    }
    if (is->has_dyn && !set_ext(g, n, &o, axis + is->dyn_dim, &is->dyn, st))
        return false;
    n->out[0].type.shape = o;
    return true;
}

static bool dyn_reduce(IrGraph *g, IrNode *n, Status *st)
{
    if (!ir_shape_reduce(g, n, st))
        return false;
    const IrShape *x = &ir_value_type(n->inputs[0])->shape;
    IrShape o = n->out[0].type.shape;
    clear_dyn(&o);
    int64_t mask = n->p.i[TCRT_RED_MASK];
    int d = x->dyn_dim;
    if (!(mask & ((int64_t)1 << d))) {
        int od = d;
        if (o.rank != x->rank)
            for (int k = 0; k < d; k++)
                od -= (int)((mask >> k) & 1);
        if (!set_ext(g, n, &o, od, &x->dyn, st))
            return false;
    }
    n->out[0].type.shape = o;
    return true;
}

static bool dyn_topk(IrGraph *g, IrNode *n, Status *st)
{
    IrShape given = n->out[0].type.shape;
    check_given(g, &given);
    if (!ir_shape_topk(g, n, st))
        return false;
    const IrShape *x = &ir_value_type(n->inputs[0])->shape;
    int last = x->rank - 1;
    for (int k = 0; k < 2; k++) {
        IrShape o = n->out[k].type.shape;
        clear_dyn(&o);
        if (x->has_dyn && x->dyn_dim < last && !set_ext(g, n, &o, x->dyn_dim, &x->dyn, st))
            return false;
        if (given.rank == x->rank && given.has_dyn && given.dyn_dim == last &&
            !set_ext(g, n, &o, last, &given.dyn, st))
            return false;
        n->out[k].type.shape = o;
    }
    return true;
}

static bool dyn_broadcast_to(IrGraph *g, IrNode *n, Status *st)
{
    const IrShape *x = &ir_value_type(n->inputs[0])->shape;
    IrShape o = n->out[0].type.shape;
    if (!need_given_rank(n, &o, -1, st))
        return false;
    check_given(g, &o);
    n->out[0].type.shape = o;
    if (x->rank > o.rank)
        return ir_node_errorf(st, n, "broadcast to a lower rank");
    for (int d = 0; d < x->rank; d++) {
        int od = d + o.rank - x->rank;
        IrAff xe = ir_shape_extent(x, d), oe = ir_shape_extent(&o, od);
        bool x_one = !(x->has_dyn && x->dyn_dim == d) && x->dims[d] == 1;
        if (!x_one && !ir_aff_eq(&xe, &oe))
            return dyn_fail(st, n, "broadcast between extents that are not provably equal");
    }
    return true;
}

bool ir_dyn_infer(IrGraph *g, IrNode *n, Status *st)
{
    const OpInfo *oi = ir_op_info(n->op);
    if (oi->kind == K_ELEM) {
        for (int k = 1; k < n->n_outputs; k++)
            if (n->out[k].type.shape.has_dyn)
                return unsupported(n, st);
        return oi->shape_rule(g, n, st);
    }
    switch (n->op) {
    case OP_COPY:
        return dyn_copy(g, n, st);
    case OP_SLICE:
        return dyn_slice(g, n, st);
    case OP_PAD:
        return dyn_pad(g, n, st);
    case OP_CONCAT:
        return dyn_concat(g, n, st);
    case OP_GATHER:
        return dyn_gather(g, n, st);
    case OP_REDUCE_SUM:
    case OP_REDUCE_MAX:
    case OP_REDUCE_MIN:
    case OP_REDUCE_PROD:
        return dyn_reduce(g, n, st);
    case OP_TOPK:
        return dyn_topk(g, n, st);
    case OP_BROADCAST:
        return dyn_broadcast_to(g, n, st);
    case OP_RANGE:
        check_given(g, &n->out[0].type.shape);
        return need_given_rank(n, &n->out[0].type.shape, 1, st);
    case OP_NMS:
    case OP_WHERE: {
        /* the kernels take the run-time extent; their outputs stay padded to the bound */
        if (n->op == OP_NMS) {
            const IrShape *b = &ir_value_type(n->inputs[0])->shape, *s = &ir_value_type(n->inputs[1])->shape;
            IrAff eb = ir_shape_extent(b, 0), es = ir_shape_extent(s, 0);
            if (!ir_aff_eq(&eb, &es))
                return dyn_fail(st, n, "boxes and scores whose counts are not provably equal");
        }
        if (!oi->shape_rule(g, n, st))
            return false;
        for (int k = 0; k < n->n_outputs; k++)
            clear_dyn(&n->out[k].type.shape);
        return true;
    }
    default:
        return unsupported(n, st);
    }
}
