/* ir/parse.c - reads the text form written by ir_print(g, f, true).
 *
 * Line by line, by recursive descent on each line: header lines (graph,
 * memory, feed, fetch) and node lines "%id = op(inputs) {params} : types
 * [extras] [= hex:DATA]  # origin (op)".  Nodes are rebuilt through the
 * builder (ir_emit / ir_const / ir_emit_region), so every shape rule and
 * dtype check runs again, and the printed types must equal the rebuilt
 * ones.  Inputs must name earlier nodes (the text is in topological order).
 * Ids are kept as printed; next_id becomes max id + 1.  Blank lines and
 * lines starting with '#' or "//" are ignored; indentation is not
 * significant.  Errors read "FILE:LINE: message".
 *
 * Regions: a while/cond line is held as pending; the "region K {" blocks
 * after it each open a frame (a new region graph from ir_region_new with
 * its own ids, feed lines and a closing "yield" line) on an explicit stack,
 * so nesting costs no C recursion and stops at IR_MAX_REGION_DEPTH.  The
 * first line after the last region that is not "region" (or the end of the
 * enclosing region, or of the text) builds the op from its regions.
 * Invariants: the result passes ir_verify; print(parse(print(g))) == print(g).
 */
#include "ir/ir.h"
#include "ir/ir_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ID (1 << 24)
#define MAX_OUTPUTS (1 << 16)     /* types on one node line (region ops) */
#define MAX_REGIONS (1 << 16)     /* regions of one op (as ir_emit_region) */

typedef struct Pending {
    const char *name;
    int id, index, line;
} Pending;

/* One node line, parsed; built at once, or (region ops) after its regions. */
typedef struct NodeLine {
    int64_t id;
    Op op;
    int line;                     /* where it was read, for errors */
    IrValue *in;
    IrNode **ctrl;
    int n_in, n_ctrl;
    IrParams prm;
    IrType *types;                /* printed output types */
    int64_t *offsets;
    int n_types;
    const char *device;
    const char *key;              /* SEND/RECV rendezvous key */
    int64_t ws, ws_off;
    const char *hex, *hex_end;    /* CONST data (in the text) */
    const char *origin, *origin_op;
} NodeLine;

/* A graph being read: frames[0] the top level, frames[k] a region k deep. */
typedef struct Frame {
    IrGraph *g;
    IrNode **by_id;
    int cap_ids;
    int max_id;
    Pending *feeds, *fetches;
    int n_feeds, cap_feeds, n_fetches, cap_fetches;
    int open_line;                /* regions: the "region K {" line */
    int index;                    /* regions: K */
    int n_results;                /* regions: values the yield must give */
    bool has_yield;
    bool has_pend;                /* pend is a region op whose regions are being read */
    NodeLine pend;
    IrGraph **regions;            /* pend's regions read so far */
    int n_regions, cap_regions;
} Frame;

typedef struct Parser {
    const char *s;                /* cursor in the current line */
    const char *end;              /* end of the current line */
    const char *bol;              /* start of the current line */
    const char *file;
    int line;
    Status *st;
    Frame *frames;                /* in the top graph's arena */
    int depth, cap_frames;        /* frames[depth] is the current graph */
} Parser;

static Frame *cur(Parser *p) { return &p->frames[p->depth]; }

__attribute__((format(printf, 2, 3))) static bool perr(Parser *p, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st_errorf(p->st, ST_ERROR, "%s:%d: %s", p->file, p->line, msg);
}

static bool nomem(Parser *p) { return st_errorf(p->st, ST_NOMEM, "out of memory"); }

/* Grows an arena array of elem-size items to hold at least need. */
static bool grow(Parser *p, Arena *ar, void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return true;
    int nc = *cap ? *cap : 8;
    while (nc < need)
        nc *= 2;
    void *a = arena_alloc(ar, elem * (size_t)nc);
    if (!a)
        return nomem(p);
    if (*cap)
        memcpy(a, *arr, elem * (size_t)*cap);
    *arr = a;
    *cap = nc;
    return true;
}

static void skip_ws(Parser *p)
{
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\r'))
        p->s++;
}

static bool accept(Parser *p, const char *tok)
{
    skip_ws(p);
    size_t n = strlen(tok);
    if ((size_t)(p->end - p->s) >= n && memcmp(p->s, tok, n) == 0) {
        p->s += n;
        return true;
    }
    return false;
}

static bool expect(Parser *p, const char *tok)
{
    if (accept(p, tok))
        return true;
    return perr(p, "expected '%s' at column %d", tok, (int)(p->s - p->bol) + 1);
}

static bool parse_int(Parser *p, int64_t *v)
{
    skip_ws(p);
    const char *q = p->s;
    if (q < p->end && (*q == '-' || *q == '+'))
        q++;
    if (q >= p->end || !isdigit((unsigned char)*q))
        return perr(p, "expected an integer");
    char buf[32];
    size_t n = 0;
    const char *r = p->s;
    while (r < p->end && (isdigit((unsigned char)*r) || (r == p->s && (*r == '-' || *r == '+'))) &&
           n + 1 < sizeof buf)
        buf[n++] = *r++;
    buf[n] = 0;
    errno = 0;
    long long x = strtoll(buf, NULL, 10);
    if (errno)
        return perr(p, "integer %s out of range", buf);
    p->s = r;
    *v = x;
    return true;
}

static bool parse_double(Parser *p, double *v)
{
    skip_ws(p);
    char buf[64];
    size_t n = 0;
    const char *r = p->s;
    while (r < p->end && n + 1 < sizeof buf && (isalnum((unsigned char)*r) || strchr("+-.", *r)))
        buf[n++] = *r++;
    buf[n] = 0;
    char *e;
    *v = strtod(buf, &e);
    if (n == 0 || *e)
        return perr(p, "expected a number, got '%s'", buf);
    p->s = r;
    return true;
}

/* Quoted string with \\, \" and \xHH escapes; result in the graph's arena. */
static bool parse_str(Parser *p, const char **out)
{
    skip_ws(p);
    if (p->s >= p->end || *p->s != '"')
        return perr(p, "expected a string");
    p->s++;
    size_t cap = (size_t)(p->end - p->s) + 1, n = 0;
    char *buf = arena_alloc(&cur(p)->g->arena, cap);
    if (!buf)
        return st_errorf(p->st, ST_NOMEM, "out of memory");
    while (p->s < p->end && *p->s != '"') {
        char c = *p->s++;
        if (c == '\\') {
            if (p->s >= p->end)
                break;
            c = *p->s++;
            if (c == 'x') {
                if (p->end - p->s < 2 || !isxdigit((unsigned char)p->s[0]) ||
                    !isxdigit((unsigned char)p->s[1]))
                    return perr(p, "bad \\x escape");
                char hx[3] = {p->s[0], p->s[1], 0};
                c = (char)strtol(hx, NULL, 16);
                p->s += 2;
            }
        }
        buf[n++] = c;
    }
    if (p->s >= p->end)
        return perr(p, "unterminated string");
    p->s++;
    buf[n] = 0;
    *out = buf;
    return true;
}

static bool parse_ref(Parser *p, IrValue *v)
{
    if (!expect(p, "%"))
        return false;
    int64_t id, idx = 0;
    if (!parse_int(p, &id))
        return false;
    if (p->s < p->end && *p->s == ':') {
        p->s++;
        if (!parse_int(p, &idx))
            return false;
    }
    Frame *f = cur(p);
    if (id < 0 || id > f->max_id || !f->by_id[id]) {
        if (p->depth == 0)
            return perr(p, "%%%lld is not defined before its use", (long long)id);
        const NodeLine *op = &p->frames[p->depth - 1].pend;
        return perr(p, "%%%lld is not defined before its use in region %d of %s %%%lld (a region reads "
                    "outer values only through its parameters)",
                    (long long)id, f->index, ir_op_name(op->op), (long long)op->id);
    }
    IrNode *n = f->by_id[id];
    if (idx < 0 || idx >= n->n_outputs)
        return perr(p, "%%%lld has no output %lld", (long long)id, (long long)idx);
    v->node = n;
    v->index = (int)idx;
    return true;
}

static bool parse_type(Parser *p, IrType *t)
{
    skip_ws(p);
    const char *q = p->s;
    while (p->s < p->end && isalnum((unsigned char)*p->s))
        p->s++;
    if (!ir_dtype_from_short(q, (size_t)(p->s - q), &t->dtype))
        return perr(p, "unknown dtype '%.*s'", (int)(p->s - q), q);
    if (!expect(p, "["))
        return false;
    memset(&t->shape, 0, sizeof t->shape);
    if (accept(p, "]"))
        return true;
    for (;;) {
        if (t->shape.rank >= IR_MAX_RANK)
            return perr(p, "rank above %d", IR_MAX_RANK);
        if (!parse_int(p, &t->shape.dims[t->shape.rank++]))
            return false;
        if (accept(p, "]"))
            return true;
        if (!expect(p, ","))
            return false;
    }
}

static bool parse_params(Parser *p, IrParams *pr)
{
    memset(pr, 0, sizeof *pr);
    if (!accept(p, "{"))
        return true;
    bool first = true;
    while (!accept(p, "}")) {
        if (!first && !expect(p, ","))
            return false;
        first = false;
        if (accept(p, "i=[")) {
            int k = 0;
            while (!accept(p, "]")) {
                if (k && !expect(p, ","))
                    return false;
                if (k >= IR_MAX_IPARAM)
                    return perr(p, "more than %d integer params", IR_MAX_IPARAM);
                if (!parse_int(p, &pr->i[k++]))
                    return false;
            }
        } else if (accept(p, "f=[")) {
            int k = 0;
            while (!accept(p, "]")) {
                if (k && !expect(p, ","))
                    return false;
                if (k >= IR_MAX_FPARAM)
                    return perr(p, "more than %d float params", IR_MAX_FPARAM);
                if (!parse_double(p, &pr->f[k++]))
                    return false;
            }
        } else {
            return perr(p, "expected i=[...] or f=[...] in params");
        }
    }
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* "# origin (Op)" comment at the end of a node line. */
static bool parse_comment(Parser *p, const char **origin, const char **origin_op)
{
    *origin = *origin_op = NULL;
    skip_ws(p);
    if (p->s >= p->end)
        return true;
    if (*p->s != '#')
        return perr(p, "unexpected text '%.*s'", (int)(p->end - p->s > 40 ? 40 : p->end - p->s), p->s);
    p->s++;
    skip_ws(p);
    const char *a = p->s, *b = p->end;
    while (b > a && (b[-1] == ' ' || b[-1] == '\r' || b[-1] == '\t'))
        b--;
    const char *op_a = NULL;
    if (b > a && b[-1] == ')') {
        for (const char *q = b - 1; q >= a; q--) {
            if (*q == '(' && (q == a || q[-1] == ' ')) {
                op_a = q;
                break;
            }
        }
    }
    Arena *ar = &cur(p)->g->arena;
    if (op_a) {
        size_t n = (size_t)(b - op_a - 2);
        char *s = arena_alloc(ar, n + 1);
        if (!s)
            return st_errorf(p->st, ST_NOMEM, "out of memory");
        memcpy(s, op_a + 1, n);
        *origin_op = s;
        b = op_a > a ? op_a - 1 : a;
    }
    if (b > a) {
        char *s = arena_alloc(ar, (size_t)(b - a) + 1);
        if (!s)
            return st_errorf(p->st, ST_NOMEM, "out of memory");
        memcpy(s, a, (size_t)(b - a));
        *origin = s;
    }
    p->s = p->end;
    return true;
}

static bool grow_ids(Parser *p, int64_t id)
{
    Frame *f = cur(p);
    if (id < 0 || id >= MAX_ID)
        return perr(p, "node id %lld out of range", (long long)id);
    if (id < f->cap_ids)
        return true;
    int nc = f->cap_ids ? f->cap_ids : 256;
    while (nc <= id)
        nc *= 2;
    return grow(p, &f->g->arena, (void **)&f->by_id, &f->cap_ids, nc, sizeof(IrNode *));
}

/* Checks a keyword followed by a space or the end of the line. */
static bool keyword(Parser *p, const char *kw)
{
    skip_ws(p);
    size_t n = strlen(kw);
    if ((size_t)(p->end - p->s) < n || memcmp(p->s, kw, n) != 0)
        return false;
    if (p->s + n < p->end && p->s[n] != ' ' && p->s[n] != '\t' && p->s[n] != '\r')
        return false;
    p->s += n;
    return true;
}

static bool at_eol(Parser *p)
{
    skip_ws(p);
    return p->s >= p->end;
}

/* "while %7" / "cond %7": the op a region belongs to, for messages. */
static const NodeLine *owner(const Parser *p)
{
    return &p->frames[p->depth - 1].pend;
}

/* Reads "%id = op(inputs) {params} : types extras  # origin" into nl. */
static bool parse_node_line(Parser *p, NodeLine *nl)
{
    Frame *f = cur(p);
    Arena *ar = &f->g->arena;
    memset(nl, 0, sizeof *nl);
    nl->line = p->line;
    nl->ws_off = -1;
    if (!expect(p, "%") || !parse_int(p, &nl->id) || !grow_ids(p, nl->id))
        return false;
    if (f->by_id[nl->id])
        return perr(p, "%%%lld defined twice", (long long)nl->id);
    if (!expect(p, "="))
        return false;
    skip_ws(p);
    char name[64];
    size_t len = 0;
    while (p->s < p->end && (isalnum((unsigned char)*p->s) || *p->s == '_') && len + 1 < sizeof name)
        name[len++] = *p->s++;
    name[len] = 0;
    if (!ir_op_from_name(name, &nl->op))
        return perr(p, "unknown op '%s'", name);
    const OpInfo *info = ir_op_info(nl->op);
    if (!expect(p, "("))
        return false;
    int cap_in = 0, cap_ctrl = 0;
    while (!accept(p, ")")) {
        if ((nl->n_in || nl->n_ctrl) && !expect(p, ","))
            return false;
        bool is_ctrl = accept(p, "^");
        IrValue v;
        if (!parse_ref(p, &v))
            return false;
        if (is_ctrl) {
            if (!grow(p, ar, (void **)&nl->ctrl, &cap_ctrl, nl->n_ctrl + 1, sizeof(IrNode *)))
                return false;
            nl->ctrl[nl->n_ctrl++] = v.node;
        } else if (nl->n_ctrl) {
            return perr(p, "data inputs must come before control inputs");
        } else {
            if (!grow(p, ar, (void **)&nl->in, &cap_in, nl->n_in + 1, sizeof(IrValue)))
                return false;
            nl->in[nl->n_in++] = v;
        }
    }
    if (!parse_params(p, &nl->prm) || !expect(p, ":"))
        return false;
    int cap_types = 0;
    bool tuple = accept(p, "(");
    if (!tuple || !accept(p, ")")) {
        do {
            if (nl->n_types >= MAX_OUTPUTS)
                return perr(p, "more than %d output types", MAX_OUTPUTS);
            if (!grow(p, ar, (void **)&nl->types, &cap_types, nl->n_types + 1, sizeof(IrType)))
                return false;
            if (!parse_type(p, &nl->types[nl->n_types++]))
                return false;
        } while (tuple && accept(p, ","));
        if (tuple && !expect(p, ")"))
            return false;
    }
    bool is_region_op = nl->op == OP_WHILE || nl->op == OP_COND;
    if (!is_region_op && nl->n_types != info->n_outputs)
        return perr(p, "%s has %d outputs, %d types given", info->name, info->n_outputs, nl->n_types);
    if (nl->op == OP_WHILE && nl->n_types != nl->n_in)
        return perr(p, "while %%%lld has %d output type%s for %d loop variable%s", (long long)nl->id,
                    nl->n_types, nl->n_types == 1 ? "" : "s", nl->n_in, nl->n_in == 1 ? "" : "s");
    if (nl->op == OP_COND && nl->n_in < 1)
        return perr(p, "cond %%%lld needs a selector input", (long long)nl->id);
    nl->offsets = arena_alloc(ar, sizeof(int64_t) * (size_t)(nl->n_types + 1));
    if (!nl->offsets)
        return nomem(p);
    for (int k = 0; k < nl->n_types; k++)
        nl->offsets[k] = -1;
    for (;;) {
        if (accept(p, "device=")) {
            if (!parse_str(p, &nl->device))
                return false;
        } else if (accept(p, "key=")) {
            if (!parse_str(p, &nl->key))
                return false;
        } else if (accept(p, "offset=[")) {
            for (int k = 0; k < nl->n_types; k++) {
                if ((k && !expect(p, ",")) || !parse_int(p, &nl->offsets[k]))
                    return false;
            }
            if (!expect(p, "]"))
                return false;
        } else if (accept(p, "workspace=")) {
            if (!parse_int(p, &nl->ws) || !expect(p, "@") || !parse_int(p, &nl->ws_off))
                return false;
        } else if (accept(p, "=")) {
            if (nl->op != OP_CONST)
                return perr(p, "only constants carry data");
            if (!accept(p, "hex:"))
                return perr(p, "constant %%%lld has no data (printed without data?)", (long long)nl->id);
            nl->hex = p->s;
            while (p->s < p->end && hexval(*p->s) >= 0)
                p->s++;
            nl->hex_end = p->s;
        } else {
            break;
        }
    }
    return parse_comment(p, &nl->origin, &nl->origin_op);
}

/* Checks the built node n against its line and gives it the printed id,
 * params, offsets, control inputs and extras. */
static bool finish_node(Parser *p, Frame *f, const NodeLine *nl, IrNode *n)
{
    if (n->n_outputs != nl->n_types)
        return perr(p, "%%%lld: %s has %d outputs, %d types given", (long long)nl->id, ir_op_name(nl->op),
                    n->n_outputs, nl->n_types);
    for (int k = 0; k < nl->n_types; k++) {
        const IrType *t = &nl->types[k];
        if (n->out[k].type.dtype != t->dtype || !ir_shape_eq(&n->out[k].type.shape, &t->shape)) {
            char a[160], b[160];
            return perr(p, "%%%lld: output %d printed as %s%s, the shape rule gives %s%s", (long long)nl->id,
                        k, ir_dtype_short(t->dtype), ir_shape_str(&t->shape, a, sizeof a),
                        ir_dtype_short(n->out[k].type.dtype),
                        ir_shape_str(&n->out[k].type.shape, b, sizeof b));
        }
        n->out[k].offset = nl->offsets[k];
    }
    for (int i = 0; i < nl->n_ctrl; i++)
        ir_add_ctrl(f->g, n, nl->ctrl[i], p->st);
    n->device = nl->device;
    n->key = nl->key;
    n->workspace_bytes = nl->ws;
    n->workspace_offset = nl->ws_off;
    n->id = (int)nl->id;
    f->by_id[nl->id] = n;
    if (nl->id > f->max_id)
        f->max_id = (int)nl->id;
    return st_ok(p->st);
}

/* Builds a node that owns no regions. */
static bool build_node(Parser *p, Frame *f, const NodeLine *nl)
{
    IrGraph *g = f->g;
    g->cur_origin = nl->origin;
    g->cur_origin_op = nl->origin_op;
    Status est = ST_INIT;
    IrNode *n = NULL;
    if (nl->op == OP_CONST) {
        if (nl->n_in)
            return perr(p, "constants take no inputs");
        if (!nl->hex)
            return perr(p, "constant %%%lld has no data", (long long)nl->id);
        int64_t count;
        const IrType *t = &nl->types[0];
        if (!ir_shape_count_checked(&t->shape, &count) || !ir_dtype_is_numeric(t->dtype))
            return perr(p, "bad constant type");
        size_t bytes = ir_type_bytes(t);
        if ((size_t)(nl->hex_end - nl->hex) != 2 * bytes)
            return perr(p, "constant %%%lld has %zu hex digits, its type needs %zu", (long long)nl->id,
                        (size_t)(nl->hex_end - nl->hex), 2 * bytes);
        uint8_t *data = arena_alloc_align(&g->arena, bytes, 64);
        if (!data)
            return nomem(p);
        for (size_t k = 0; k < bytes; k++)
            data[k] = (uint8_t)(hexval(nl->hex[2 * k]) << 4 | hexval(nl->hex[2 * k + 1]));
        n = ir_const_node_take(g, t, data, &est);
        if (n)
            n->p = nl->prm;
    } else {
        n = ir_emit(g, nl->op, nl->in, nl->n_in, &nl->prm, &nl->types[0], &est);
    }
    if (!n)
        return st_errorf(p->st, est.code, "%s:%d: %s", p->file, p->line, est.msg);
    return finish_node(p, f, nl, n);
}

/* Builds f's pending region op from the regions read after it; errors
 * point at the op's line. */
static bool build_pending(Parser *p, Frame *f)
{
    const NodeLine *nl = &f->pend;
    f->has_pend = false;
    int line = p->line;
    p->line = nl->line;
    bool ok;
    if (f->n_regions == 0) {
        ok = perr(p, "%s %%%lld has no regions (expected 'region 0 {' after it)", ir_op_name(nl->op),
                  (long long)nl->id);
    } else {
        IrGraph *g = f->g;
        g->cur_origin = nl->origin;
        g->cur_origin_op = nl->origin_op;
        Status est = ST_INIT;
        IrNode *n = ir_emit_region(g, nl->op, nl->in, nl->n_in, f->regions, f->n_regions, &est);
        if (!n) {
            ok = st_errorf(p->st, est.code, "%s:%d: %s", p->file, p->line, est.msg);
        } else {
            n->p = nl->prm;
            ok = finish_node(p, f, nl, n);
        }
    }
    p->line = line;
    f->n_regions = 0;
    return ok;
}

static bool parse_node(Parser *p)
{
    Frame *f = cur(p);
    NodeLine nl;
    if (!parse_node_line(p, &nl))
        return false;
    if (nl.op == OP_WHILE || nl.op == OP_COND) {
        f->pend = nl;
        f->has_pend = true;
        f->n_regions = 0;
        return true;
    }
    return build_node(p, f, &nl);
}

static bool add_pending(Parser *p, bool is_feed)
{
    Frame *f = cur(p);
    const char *name;
    if (!parse_str(p, &name))
        return false;
    if (!expect(p, "%"))
        return false;
    int64_t id, idx = 0;
    if (!parse_int(p, &id))
        return false;
    if (p->s < p->end && *p->s == ':') {
        p->s++;
        if (!parse_int(p, &idx))
            return false;
    }
    if (id < 0 || id >= MAX_ID || idx < 0 || idx >= MAX_OUTPUTS)
        return perr(p, "bad node reference");
    Pending **arr = is_feed ? &f->feeds : &f->fetches;
    int *n = is_feed ? &f->n_feeds : &f->n_fetches, *cap = is_feed ? &f->cap_feeds : &f->cap_fetches;
    if (!grow(p, &f->g->arena, (void **)arr, cap, *n + 1, sizeof(Pending)))
        return false;
    (*arr)[(*n)++] = (Pending){name, (int)id, (int)idx, p->line};
    if (!at_eol(p))
        return perr(p, "unexpected text after reference");
    return true;
}

/* Feeds and fetches name nodes defined after them: bound once f is read. */
static bool resolve(Parser *p, Frame *f)
{
    IrGraph *g = f->g;
    for (int i = 0; i < f->n_feeds; i++) {
        Pending *fd = &f->feeds[i];
        p->line = fd->line;
        IrNode *n = fd->id <= f->max_id ? f->by_id[fd->id] : NULL;
        if (!n || n->op != OP_ARG || fd->index != 0)
            return perr(p, "feed '%s' does not name an arg node", fd->name);
        if (!grow(p, &g->arena, (void **)&g->feeds, &g->cap_feeds, g->n_feeds + 1, sizeof(IrFeed)))
            return false;
        g->feeds[g->n_feeds++] = (IrFeed){fd->name, n};
    }
    for (int i = 0; i < f->n_fetches; i++) {
        Pending *fe = &f->fetches[i];
        p->line = fe->line;
        IrNode *n = fe->id <= f->max_id ? f->by_id[fe->id] : NULL;
        if (!n || fe->index >= n->n_outputs)
            return perr(p, "fetch '%s' does not name a node output", fe->name);
        Status fs = ST_INIT;
        if (!ir_add_fetch(g, fe->name, (IrValue){n, fe->index}, &fs))
            return st_errorf(p->st, fs.code, "%s", fs.msg);
    }
    return true;
}

/* "region K {": opens region K of the pending op. */
static bool open_region(Parser *p)
{
    Frame *f = cur(p);
    int64_t k;
    if (!parse_int(p, &k) || !expect(p, "{"))
        return false;
    if (!at_eol(p))
        return perr(p, "unexpected text after 'region %lld {'", (long long)k);
    if (!f->has_pend)
        return perr(p, "region %lld does not follow a while or cond line", (long long)k);
    const NodeLine *op = &f->pend;
    if (k != f->n_regions)
        return perr(p, "expected region %d of %s %%%lld, got region %lld", f->n_regions, ir_op_name(op->op),
                    (long long)op->id, (long long)k);
    if (op->op == OP_WHILE && k >= 2)
        return perr(p, "while %%%lld has 2 regions (cond, body), not %lld", (long long)op->id,
                    (long long)k + 1);
    if (k >= MAX_REGIONS)
        return perr(p, "more than %d regions", MAX_REGIONS);
    Status rs = ST_INIT;
    IrGraph *r = ir_region_new(f->g, &rs);
    if (!r)
        return st_errorf(p->st, rs.code, "%s:%d: %s", p->file, p->line, rs.msg);
    int n_results = op->op == OP_WHILE && k == 0 ? 1 : op->n_types;
    IrGraph *root = p->frames[0].g;
    if (!grow(p, &root->arena, (void **)&p->frames, &p->cap_frames, p->depth + 2, sizeof(Frame)))
        return false;
    Frame *nf = &p->frames[++p->depth];
    memset(nf, 0, sizeof *nf);
    nf->g = r;
    nf->max_id = -1;
    nf->open_line = p->line;
    nf->index = (int)k;
    nf->n_results = n_results;
    return true;
}

/* "}": closes the current region and hands it to the op it belongs to. */
static bool close_region(Parser *p)
{
    if (!at_eol(p))
        return perr(p, "unexpected text after '}'");
    if (p->depth == 0)
        return perr(p, "'}' without an open region");
    Frame *f = cur(p);
    const NodeLine *op = owner(p);
    if (!f->has_yield)
        return perr(p, "region %d of %s %%%lld ends without a yield", f->index, ir_op_name(op->op),
                    (long long)op->id);
    int line = p->line;
    if (!resolve(p, f))
        return false;
    p->line = line;
    f->g->next_id = f->max_id + 1;
    f->g->cur_origin = f->g->cur_origin_op = NULL;
    IrGraph *r = f->g;
    Frame *parent = &p->frames[--p->depth];
    if (!grow(p, &parent->g->arena, (void **)&parent->regions, &parent->cap_regions, parent->n_regions + 1,
              sizeof(IrGraph *)))
        return false;
    parent->regions[parent->n_regions++] = r;
    return true;
}

/* "yield "name" %ref, ...": the region's results, in order. */
static bool parse_yield(Parser *p)
{
    if (p->depth == 0)
        return perr(p, "yield outside a region");
    Frame *f = cur(p);
    const NodeLine *op = owner(p);
    if (f->has_yield)
        return perr(p, "region %d of %s %%%lld yields twice", f->index, ir_op_name(op->op),
                    (long long)op->id);
    int n = 0;
    if (!at_eol(p)) {
        do {
            const char *name;
            IrValue v;
            if (!parse_str(p, &name) || !parse_ref(p, &v))
                return false;
            Status fs = ST_INIT;
            if (!ir_add_fetch(f->g, name, v, &fs))
                return st_errorf(p->st, fs.code, "%s:%d: %s", p->file, p->line, fs.msg);
            n++;
        } while (accept(p, ","));
        if (!at_eol(p))
            return perr(p, "unexpected text '%.*s' in yield", (int)(p->end - p->s > 40 ? 40 : p->end - p->s),
                        p->s);
    }
    if (n != f->n_results)
        return perr(p, "yield gives %d value%s, region %d of %s %%%lld needs %d", n, n == 1 ? "" : "s",
                    f->index, ir_op_name(op->op), (long long)op->id, f->n_results);
    f->has_yield = true;
    return true;
}

static bool parse_line(Parser *p)
{
    skip_ws(p);
    if (p->s >= p->end || *p->s == '#' || (p->end - p->s >= 2 && p->s[0] == '/' && p->s[1] == '/'))
        return true;
    Frame *f = cur(p);
    if (keyword(p, "region"))
        return open_region(p);
    if (f->has_pend && !build_pending(p, f))
        return false;
    if (accept(p, "}"))
        return close_region(p);
    if (f->has_yield)
        return perr(p, "expected '}' after the yield of region %d", f->index);
    if (keyword(p, "yield"))
        return parse_yield(p);
    if (*p->s == '%')
        return parse_node(p);
    if (accept(p, "graph ")) {
        if (p->depth > 0)
            return perr(p, "'graph' line inside a region");
        const char *name;
        if (!parse_str(p, &name))
            return false;
        f->g->name = name;
        return true;
    }
    if (accept(p, "memory ")) {
        int64_t a, w, u;
        if (!expect(p, "arena=") || !parse_int(p, &a) || !expect(p, "weights=") || !parse_int(p, &w) ||
            !expect(p, "unplanned=") || !parse_int(p, &u))
            return false;
        f->g->arena_bytes = a;
        f->g->weights_bytes = w;
        f->g->unplanned_bytes = u;
        return true;
    }
    if (accept(p, "feed "))
        return add_pending(p, true);
    if (accept(p, "fetch ")) {
        if (p->depth > 0)
            return perr(p, "'fetch' line inside a region (its results are its yield)");
        return add_pending(p, false);
    }
    return perr(p, "unrecognized line");
}

IrGraph *ir_parse(const char *text, const char *filename, Status *st)
{
    if (!text)
        text = "";
    Parser p;
    memset(&p, 0, sizeof p);
    p.file = filename ? filename : "<ir>";
    p.st = st;
    IrGraph *g = ir_graph_new(NULL, st);
    if (!g)
        return NULL;
    g->fold_on_build = false;
    p.frames = arena_alloc(&g->arena, sizeof(Frame) * 4);
    if (!p.frames) {
        nomem(&p);
        ir_graph_free(g);
        return NULL;
    }
    p.cap_frames = 4;
    p.frames[0].g = g;
    p.frames[0].max_id = -1;
    const char *s = text;
    bool ok = true;
    while (*s && ok) {
        const char *e = strchr(s, '\n');
        if (!e)
            e = s + strlen(s);
        p.line++;
        p.s = p.bol = s;
        p.end = e;
        ok = parse_line(&p);
        s = *e ? e + 1 : e;
    }
    if (ok && p.depth > 0) {
        const Frame *f = cur(&p);
        const NodeLine *op = owner(&p);
        p.line = f->open_line;
        ok =
            perr(&p, "region %d of %s %%%lld is not closed", f->index, ir_op_name(op->op), (long long)op->id);
    }
    if (ok && p.frames[0].has_pend)
        ok = build_pending(&p, &p.frames[0]);
    if (ok)
        ok = resolve(&p, &p.frames[0]);
    if (ok) {
        g->next_id = p.frames[0].max_id + 1;
        g->cur_origin = g->cur_origin_op = NULL;
        for (int i = 0; i < g->n_owned; i++)   /* regions carry the model's name */
            if (g->owned[i])
                g->owned[i]->name = g->name;
        Status vs = ST_INIT;
        if (!ir_verify(g, &vs)) {
            st_errorf(st, vs.code, "%s: %s", p.file, vs.msg);
            ok = false;
        }
    }
    if (!ok) {
        ir_graph_free(g);
        return NULL;
    }
    return g;
}
