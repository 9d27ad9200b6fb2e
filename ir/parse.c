/* ir/parse.c - reads the text form written by ir_print(g, f, true).
 *
 * Line by line, by recursive descent on each line: header lines (graph,
 * memory, feed, fetch) and node lines "%id = op(inputs) {params} : types
 * [extras] [= hex:DATA]  # origin (op)".  Nodes are rebuilt through the
 * builder (ir_emit / ir_const), so every shape rule and dtype check runs
 * again, and the printed types must equal the rebuilt ones.  Inputs must
 * name earlier nodes (the text is in topological order).  Ids are kept as
 * printed; next_id becomes max id + 1.  Blank lines and lines starting with
 * '#' or "//" are ignored.  Errors read "FILE:LINE: message".
 * Invariants: the result passes ir_verify; print(parse(print(g))) == print(g).
 */
#include "ir/ir.h"
#include "ir/ir_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ID (1 << 24)

typedef struct Pending {
    const char *name;
    int id, index, line;
} Pending;

typedef struct Parser {
    const char *s;                /* cursor in the current line */
    const char *end;              /* end of the current line */
    const char *bol;              /* start of the current line */
    const char *file;
    int line;
    Status *st;
    IrGraph *g;
    IrNode **by_id;
    int cap_ids;
    int max_id;
    Pending *feeds, *fetches;
    int n_feeds, cap_feeds, n_fetches, cap_fetches;
} Parser;

__attribute__((format(printf, 2, 3))) static bool perr(Parser *p, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st_errorf(p->st, ST_ERROR, "%s:%d: %s", p->file, p->line, msg);
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
    char *buf = arena_alloc(&p->g->arena, cap);
    if (!buf)
        return st_errorf(p->st, ST_NOMEM, "out of memory");
    while (p->s < p->end && *p->s != '"') {
        char c = *p->s++;
        if (c == '\\') {
            if (p->s >= p->end)
                break;
            c = *p->s++;
            if (c == 'x') {
                if (p->end - p->s < 2 || !isxdigit((unsigned char)p->s[0]) || !isxdigit((unsigned char)p->s[1]))
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
    if (id < 0 || id > p->max_id || !p->by_id[id])
        return perr(p, "%%%lld is not defined before its use", (long long)id);
    IrNode *n = p->by_id[id];
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

static bool grow_ids(Parser *p, int64_t id)
{
    if (id < 0 || id >= MAX_ID)
        return perr(p, "node id %lld out of range", (long long)id);
    if (id < p->cap_ids)
        return true;
    int nc = p->cap_ids ? p->cap_ids : 256;
    while (nc <= id)
        nc *= 2;
    IrNode **a = arena_alloc(&p->g->arena, sizeof(IrNode *) * (size_t)nc);
    if (!a)
        return st_errorf(p->st, ST_NOMEM, "out of memory");
    if (p->cap_ids)
        memcpy(a, p->by_id, sizeof(IrNode *) * (size_t)p->cap_ids);
    p->by_id = a;
    p->cap_ids = nc;
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
    Arena *ar = &p->g->arena;
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

static bool parse_node(Parser *p)
{
    IrGraph *g = p->g;
    int64_t id;
    if (!expect(p, "%") || !parse_int(p, &id) || !grow_ids(p, id))
        return false;
    if (p->by_id[id])
        return perr(p, "%%%lld defined twice", (long long)id);
    if (!expect(p, "="))
        return false;
    skip_ws(p);
    char name[64];
    size_t nl = 0;
    while (p->s < p->end && (isalnum((unsigned char)*p->s) || *p->s == '_') && nl + 1 < sizeof name)
        name[nl++] = *p->s++;
    name[nl] = 0;
    Op op;
    if (!ir_op_from_name(name, &op))
        return perr(p, "unknown op '%s'", name);
    const OpInfo *info = ir_op_info(op);
    if (!expect(p, "("))
        return false;
    IrValue *in = NULL;
    IrNode **ctrl = NULL;
    int n_in = 0, cap_in = 0, n_ctrl = 0;
    while (!accept(p, ")")) {
        if ((n_in || n_ctrl) && !expect(p, ","))
            return false;
        bool is_ctrl = accept(p, "^");
        IrValue v;
        if (!parse_ref(p, &v))
            return false;
        if (n_in + n_ctrl >= cap_in) {
            int nc = cap_in ? cap_in * 2 : 8;
            IrValue *a = arena_alloc(&g->arena, sizeof(IrValue) * (size_t)nc);
            IrNode **c = arena_alloc(&g->arena, sizeof(IrNode *) * (size_t)nc);
            if (!a || !c)
                return st_errorf(p->st, ST_NOMEM, "out of memory");
            if (n_in)
                memcpy(a, in, sizeof(IrValue) * (size_t)n_in);
            if (n_ctrl)
                memcpy(c, ctrl, sizeof(IrNode *) * (size_t)n_ctrl);
            in = a;
            ctrl = c;
            cap_in = nc;
        }
        if (is_ctrl)
            ctrl[n_ctrl++] = v.node;
        else if (n_ctrl)
            return perr(p, "data inputs must come before control inputs");
        else
            in[n_in++] = v;
    }
    IrParams prm;
    if (!parse_params(p, &prm) || !expect(p, ":"))
        return false;
    IrType types[4];
    int n_types = 0;
    memset(types, 0, sizeof types);
    if (accept(p, "(")) {
        do {
            if (n_types >= 4)
                return perr(p, "too many output types");
            if (!parse_type(p, &types[n_types++]))
                return false;
        } while (accept(p, ","));
        if (!expect(p, ")"))
            return false;
    } else {
        if (!parse_type(p, &types[n_types++]))
            return false;
    }
    if (n_types != info->n_outputs)
        return perr(p, "%s has %d outputs, %d types given", info->name, info->n_outputs, n_types);
    const char *device = NULL;
    int64_t offsets[4] = {-1, -1, -1, -1}, ws = 0, ws_off = -1;
    const char *hex = NULL, *hex_end = NULL;
    for (;;) {
        if (accept(p, "device=")) {
            if (!parse_str(p, &device))
                return false;
        } else if (accept(p, "offset=[")) {
            for (int k = 0; k < n_types; k++) {
                if ((k && !expect(p, ",")) || !parse_int(p, &offsets[k]))
                    return false;
            }
            if (!expect(p, "]"))
                return false;
        } else if (accept(p, "workspace=")) {
            if (!parse_int(p, &ws) || !expect(p, "@") || !parse_int(p, &ws_off))
                return false;
        } else if (accept(p, "=")) {
            if (op != OP_CONST)
                return perr(p, "only constants carry data");
            if (!accept(p, "hex:"))
                return perr(p, "constant %%%lld has no data (printed without data?)", (long long)id);
            hex = p->s;
            while (p->s < p->end && hexval(*p->s) >= 0)
                p->s++;
            hex_end = p->s;
        } else {
            break;
        }
    }
    const char *origin, *origin_op;
    if (!parse_comment(p, &origin, &origin_op))
        return false;

    g->cur_origin = origin;
    g->cur_origin_op = origin_op;
    Status est = ST_INIT;
    IrNode *n = NULL;
    if (op == OP_CONST) {
        if (n_in)
            return perr(p, "constants take no inputs");
        if (!hex)
            return perr(p, "constant %%%lld has no data", (long long)id);
        int64_t count;
        if (!ir_shape_count_checked(&types[0].shape, &count) || !ir_dtype_is_numeric(types[0].dtype))
            return perr(p, "bad constant type");
        size_t bytes = ir_type_bytes(&types[0]);
        if ((size_t)(hex_end - hex) != 2 * bytes)
            return perr(p, "constant %%%lld has %zu hex digits, its type needs %zu", (long long)id,
                        (size_t)(hex_end - hex), 2 * bytes);
        uint8_t *data = arena_alloc_align(&g->arena, bytes, 64);
        if (!data)
            return st_errorf(p->st, ST_NOMEM, "out of memory");
        for (size_t k = 0; k < bytes; k++)
            data[k] = (uint8_t)(hexval(hex[2 * k]) << 4 | hexval(hex[2 * k + 1]));
        n = ir_const_node_take(g, &types[0], data, &est);
        if (n)
            n->p = prm;
    } else {
        n = ir_emit(g, op, in, n_in, &prm, &types[0], &est);
    }
    if (!n)
        return st_errorf(p->st, est.code, "%s:%d: %s", p->file, p->line, est.msg);
    for (int k = 0; k < n_types; k++) {
        if (n->out[k].type.dtype != types[k].dtype || !ir_shape_eq(&n->out[k].type.shape, &types[k].shape)) {
            char a[160], b[160];
            return perr(p, "%%%lld: output %d printed as %s%s, the shape rule gives %s%s", (long long)id, k,
                        ir_dtype_short(types[k].dtype), ir_shape_str(&types[k].shape, a, sizeof a),
                        ir_dtype_short(n->out[k].type.dtype), ir_shape_str(&n->out[k].type.shape, b, sizeof b));
        }
        n->out[k].offset = offsets[k];
    }
    for (int i = 0; i < n_ctrl; i++)
        ir_add_ctrl(g, n, ctrl[i], p->st);
    n->device = device;
    n->workspace_bytes = ws;
    n->workspace_offset = ws_off;
    n->id = (int)id;
    p->by_id[id] = n;
    if (id > p->max_id)
        p->max_id = (int)id;
    return st_ok(p->st);
}

static bool add_pending(Parser *p, bool is_feed)
{
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
    if (id < 0 || id >= MAX_ID || idx < 0 || idx > 64)
        return perr(p, "bad node reference");
    Pending **arr = is_feed ? &p->feeds : &p->fetches;
    int *n = is_feed ? &p->n_feeds : &p->n_fetches, *cap = is_feed ? &p->cap_feeds : &p->cap_fetches;
    if (*n >= *cap) {
        int nc = *cap ? *cap * 2 : 8;
        Pending *a = arena_alloc(&p->g->arena, sizeof(Pending) * (size_t)nc);
        if (!a)
            return st_errorf(p->st, ST_NOMEM, "out of memory");
        if (*n)
            memcpy(a, *arr, sizeof(Pending) * (size_t)*n);
        *arr = a;
        *cap = nc;
    }
    (*arr)[(*n)++] = (Pending){name, (int)id, (int)idx, p->line};
    skip_ws(p);
    if (p->s != p->end)
        return perr(p, "unexpected text after reference");
    return true;
}

static bool parse_line(Parser *p)
{
    skip_ws(p);
    if (p->s >= p->end || *p->s == '#' || (p->end - p->s >= 2 && p->s[0] == '/' && p->s[1] == '/'))
        return true;
    if (*p->s == '%')
        return parse_node(p);
    if (accept(p, "graph ")) {
        const char *name;
        if (!parse_str(p, &name))
            return false;
        p->g->name = name;
        return true;
    }
    if (accept(p, "memory ")) {
        int64_t a, w, u;
        if (!expect(p, "arena=") || !parse_int(p, &a) || !expect(p, "weights=") || !parse_int(p, &w) ||
            !expect(p, "unplanned=") || !parse_int(p, &u))
            return false;
        p->g->arena_bytes = a;
        p->g->weights_bytes = w;
        p->g->unplanned_bytes = u;
        return true;
    }
    if (accept(p, "feed "))
        return add_pending(p, true);
    if (accept(p, "fetch "))
        return add_pending(p, false);
    return perr(p, "unrecognized line");
}

static bool resolve(Parser *p)
{
    IrGraph *g = p->g;
    for (int i = 0; i < p->n_feeds; i++) {
        Pending *f = &p->feeds[i];
        p->line = f->line;
        IrNode *n = f->id <= p->max_id ? p->by_id[f->id] : NULL;
        if (!n || n->op != OP_ARG || f->index != 0)
            return perr(p, "feed '%s' does not name an arg node", f->name);
        IrFeed *a = arena_alloc(&g->arena, sizeof(IrFeed) * (size_t)(g->n_feeds + 1));
        if (!a)
            return st_errorf(p->st, ST_NOMEM, "out of memory");
        if (g->n_feeds)
            memcpy(a, g->feeds, sizeof(IrFeed) * (size_t)g->n_feeds);
        a[g->n_feeds] = (IrFeed){f->name, n};
        g->feeds = a;
        g->cap_feeds = ++g->n_feeds;
    }
    for (int i = 0; i < p->n_fetches; i++) {
        Pending *f = &p->fetches[i];
        p->line = f->line;
        IrNode *n = f->id <= p->max_id ? p->by_id[f->id] : NULL;
        if (!n || f->index >= n->n_outputs)
            return perr(p, "fetch '%s' does not name a node output", f->name);
        Status fs = ST_INIT;
        if (!ir_add_fetch(g, f->name, (IrValue){n, f->index}, &fs))
            return st_errorf(p->st, fs.code, "%s", fs.msg);
    }
    return true;
}

IrGraph *ir_parse(const char *text, const char *filename, Status *st)
{
    if (!text)
        text = "";
    Parser p;
    memset(&p, 0, sizeof p);
    p.file = filename ? filename : "<ir>";
    p.st = st;
    p.max_id = -1;
    p.g = ir_graph_new(NULL, st);
    if (!p.g)
        return NULL;
    p.g->fold_on_build = false;
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
    if (ok)
        ok = resolve(&p);
    if (ok) {
        p.g->next_id = p.max_id + 1;
        p.g->cur_origin = p.g->cur_origin_op = NULL;
        Status vs = ST_INIT;
        if (!ir_verify(p.g, &vs)) {
            st_errorf(st, vs.code, "%s: %s", p.file, vs.msg);
            ok = false;
        }
    }
    if (!ok) {
        ir_graph_free(p.g);
        return NULL;
    }
    return p.g;
}
