/* compiler/frontend/pbtxt.c - protobuf text format, for any message type.
 *
 * A hand-written lexer + recursive-descent parser driven by protobuf-c
 * descriptors (no generated parsing code):
 *   message := ( field [',' | ';'] )*
 *   field   := NAME [':'] value        (':' may be left out before '{', '<', '[')
 *   value   := scalar | '{' message '}' | '<' message '>' | '[' [value (',' value)*] ']'
 *   scalar  := STRING+ | ['-'] NUMBER | ['-'] IDENT
 * Strings take C escapes (\n \t \\ \" \' \ooo \xHH ...) and adjacent literals
 * concatenate.  Numbers: decimal, 0x hex, 0 octal, floats with an optional
 * f suffix, inf/nan.  Enums by name or number; bools true/false/True/False/
 * t/f/1/0.  Map fields are repeated entry messages (key/value).  '#'
 * starts a comment.  Unknown field names are skipped with their value.
 *
 * Invariants: the current token is always lexed (p->tok); errors are
 * recorded once as "NAME:LINE:COL: ..." and every function returns false
 * from then on; nesting is limited to FE_MAX_DEPTH; the partial message is
 * freed on error, so hostile input never leaks or crashes.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/fe_int.h"

typedef enum { T_EOF, T_IDENT, T_NUM, T_STR, T_PUNCT } TokKind;

typedef struct Tok {
    TokKind kind;
    const char *s; /* points into the source */
    size_t n;
    int line, col;
} Tok;

typedef struct Parser {
    const char *src;
    size_t n, pos;
    int line, col;
    const char *name;
    Status *st;
    bool failed;
    Tok tok;
    int depth;
} Parser;

static bool perr(Parser *p, const Tok *t, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool perr(Parser *p, const Tok *t, const char *fmt, ...)
{
    if (p->failed)
        return false;
    p->failed = true;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st_errorf(p->st, ST_ERROR, "%s:%d:%d: %s", p->name, t ? t->line : p->line, t ? t->col : p->col,
                     msg);
}

static bool nomem(Parser *p)
{
    if (!p->failed) {
        p->failed = true;
        st_errorf(p->st, ST_NOMEM, "%s: out of memory", p->name);
    }
    return false;
}

/* A printable description of a token for messages: 'abc' or end of input. */
static const char *describe(const Tok *t, char *buf, size_t cap)
{
    if (t->kind == T_EOF)
        return "end of input";
    size_t n = t->n > 24 ? 24 : t->n;
    size_t k = 0;
    buf[k++] = '\'';
    for (size_t i = 0; i < n && k + 5 < cap; i++) {
        unsigned char c = (unsigned char)t->s[i];
        buf[k++] = (c >= 32 && c < 127) ? (char)c : '?';
    }
    if (t->n > n && k + 5 < cap) {
        buf[k++] = '.';
        buf[k++] = '.';
        buf[k++] = '.';
    }
    buf[k++] = '\'';
    buf[k] = 0;
    return buf;
}

/* ---- lexer --------------------------------------------------------------- */

static int peekc(Parser *p, size_t ahead)
{
    return p->pos + ahead < p->n ? (unsigned char)p->src[p->pos + ahead] : -1;
}

static void advance_char(Parser *p)
{
    if (p->src[p->pos] == '\n') {
        p->line++;
        p->col = 1;
    } else {
        p->col++;
    }
    p->pos++;
}

static bool is_ident_start(int c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static bool is_ident_char(int c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}
static bool is_digit(int c)
{
    return c >= '0' && c <= '9';
}

/* Lexes the next token into p->tok. */
static bool next(Parser *p)
{
    for (;;) {
        int c = peekc(p, 0);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            advance_char(p);
        } else if (c == '#') {
            while (p->pos < p->n && p->src[p->pos] != '\n')
                advance_char(p);
        } else {
            break;
        }
    }
    Tok *t = &p->tok;
    t->line = p->line;
    t->col = p->col;
    t->s = p->src + p->pos;
    size_t start = p->pos;
    int c = peekc(p, 0);
    if (c < 0) {
        t->kind = T_EOF;
        t->n = 0;
        return true;
    }
    if (is_ident_start(c)) {
        while (is_ident_char(peekc(p, 0)))
            advance_char(p);
        t->kind = T_IDENT;
    } else if (is_digit(c) || (c == '.' && is_digit(peekc(p, 1)))) {
        bool hex = c == '0' && (peekc(p, 1) == 'x' || peekc(p, 1) == 'X');
        int prev = 0;
        for (;;) {
            int d = peekc(p, 0);
            bool exp_sign = (d == '+' || d == '-') && !hex && (prev == 'e' || prev == 'E');
            if (!(is_ident_char(d) || d == '.' || exp_sign))
                break;
            prev = d;
            advance_char(p);
        }
        t->kind = T_NUM;
    } else if (c == '"' || c == '\'') {
        advance_char(p);
        for (;;) {
            int d = peekc(p, 0);
            if (d < 0 || d == '\n') {
                t->n = p->pos - start;
                return perr(p, t, "unterminated string");
            }
            advance_char(p);
            if (d == c)
                break;
            if (d == '\\' && p->pos < p->n && p->src[p->pos] != '\n')
                advance_char(p);
        }
        t->kind = T_STR;
    } else if (strchr("{}<>[]:,;-/", c)) {
        advance_char(p);
        t->kind = T_PUNCT;
    } else {
        t->n = 1;
        if (c >= 32 && c < 127)
            return perr(p, t, "unexpected character '%c'", c);
        return perr(p, t, "unexpected byte 0x%02x", c);
    }
    t->n = p->pos - start;
    return true;
}

static bool is_punct(const Tok *t, char c)
{
    return t->kind == T_PUNCT && t->s[0] == c;
}

static bool tok_eq(const Tok *t, const char *s)
{
    return strlen(s) == t->n && memcmp(t->s, s, t->n) == 0;
}

/* ---- strings ------------------------------------------------------------- */

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 63));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 63));
        o[2] = (char)(0x80 | (cp & 63));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63));
    o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

/* Decodes the string literal t (quotes included) appending to out[*len]
 * (out has room for t->n bytes more: escapes never expand). */
static bool decode_string(Parser *p, const Tok *t, char *out, size_t *len)
{
    const char *s = t->s + 1;
    size_t n = t->n - 2;
    size_t k = *len;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != '\\') {
            out[k++] = c;
            continue;
        }
        if (++i >= n)
            return perr(p, t, "unterminated escape in string");
        c = s[i];
        switch (c) {
        case 'n':
            out[k++] = '\n';
            break;
        case 't':
            out[k++] = '\t';
            break;
        case 'r':
            out[k++] = '\r';
            break;
        case 'a':
            out[k++] = '\a';
            break;
        case 'b':
            out[k++] = '\b';
            break;
        case 'f':
            out[k++] = '\f';
            break;
        case 'v':
            out[k++] = '\v';
            break;
        case '\\':
        case '\'':
        case '"':
        case '?':
            out[k++] = c;
            break;
        case 'x':
        case 'X': {
            int v = 0, nd = 0;
            while (nd < 2 && i + 1 < n && hexval(s[i + 1]) >= 0) {
                v = v * 16 + hexval(s[++i]);
                nd++;
            }
            if (nd == 0)
                return perr(p, t, "invalid escape '\\x' in string (no hex digits)");
            out[k++] = (char)v;
            break;
        }
        case 'u':
        case 'U': {
            int want = c == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int d = 0; d < want; d++) {
                if (i + 1 >= n || hexval(s[i + 1]) < 0)
                    return perr(p, t, "invalid escape '\\%c' in string (needs %d hex digits)", c, want);
                cp = cp * 16 + (uint32_t)hexval(s[++i]);
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return perr(p, t, "invalid code point in '\\%c' escape", c);
            /* \uXXXX is at most 3 UTF-8 bytes from 6 source bytes, \U 4 from 10 */
            k += put_utf8(out + k, cp);
            break;
        }
        default:
            if (c >= '0' && c <= '7') {
                int v = c - '0', nd = 1;
                while (nd < 3 && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '7') {
                    v = v * 8 + (s[++i] - '0');
                    nd++;
                }
                if (v > 255)
                    return perr(p, t, "octal escape out of range in string");
                out[k++] = (char)v;
                break;
            }
            if ((unsigned char)c >= 32 && (unsigned char)c < 127)
                return perr(p, t, "invalid escape '\\%c' in string", c);
            return perr(p, t, "invalid escape in string");
        }
    }
    *len = k;
    return true;
}

/* Reads STRING+ (adjacent literals concatenate) into a malloc'd buffer. */
static bool read_strings(Parser *p, char **out, size_t *out_n)
{
    /* total source length bounds the decoded length */
    size_t cap = 1;
    Parser save = *p;
    while (p->tok.kind == T_STR) {
        cap += p->tok.n;
        if (!next(p))
            return false;
    }
    *p = save;
    char *buf = malloc(cap);
    if (!buf)
        return nomem(p);
    size_t len = 0;
    while (p->tok.kind == T_STR) {
        if (!decode_string(p, &p->tok, buf, &len) || !next(p)) {
            free(buf);
            return false;
        }
    }
    buf[len] = 0;
    *out = buf;
    *out_n = len;
    return true;
}

/* ---- values -------------------------------------------------------------- */

static bool ident_ieq(const Tok *t, const char *s)
{
    if (strlen(s) != t->n)
        return false;
    for (size_t i = 0; i < t->n; i++)
        if (tolower((unsigned char)t->s[i]) != s[i])
            return false;
    return true;
}

static bool set_err(Parser *p, const Tok *t, const ProtobufCFieldDescriptor *f, const char *err)
{
    if (!strcmp(err, "out of memory"))
        return nomem(p);
    return perr(p, t, "%s (field '%s')", err, f->name);
}

/* Parses one scalar value for field f and stores it in m. */
static bool parse_scalar(Parser *p, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    char buf[64];
    Tok at = p->tok;
    if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_BYTES) {
        if (p->tok.kind != T_STR)
            return perr(p, &at, "expected string for field '%s', found %s", f->name,
                        describe(&at, buf, sizeof buf));
        char *s;
        size_t n;
        if (!read_strings(p, &s, &n))
            return false;
        void *slot = fe_pb_slot(m, f);
        if (!slot) {
            free(s);
            return nomem(p);
        }
        const char *err;
        if (f->type == PROTOBUF_C_TYPE_STRING) {
            char **sp = slot;
            if (*sp && *sp != (const char *)f->default_value && *sp != protobuf_c_empty_string)
                free(*sp);
            *sp = s; /* take ownership: already NUL-terminated */
            err = NULL;
        } else {
            err = fe_pb_set_bytes(slot, f, (const uint8_t *)s, n);
            free(s);
        }
        return err ? set_err(p, &at, f, err) : true;
    }

    bool neg = false;
    if (is_punct(&p->tok, '-')) {
        neg = true;
        if (!next(p))
            return false;
    }
    Tok t = p->tok;
    if (f->type == PROTOBUF_C_TYPE_ENUM && t.kind == T_IDENT && !neg) {
        char name[256];
        if (t.n < sizeof name) {
            memcpy(name, t.s, t.n);
            name[t.n] = 0;
            const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, name);
            if (ev) {
                void *slot = fe_pb_slot(m, f);
                if (!slot)
                    return nomem(p);
                *(int32_t *)slot = ev->value;
                return next(p);
            }
        }
        return perr(p, &t, "unknown enum value '%.*s' for field '%s'", (int)(t.n > 100 ? 100 : t.n), t.s,
                    f->name);
    }
    if (f->type == PROTOBUF_C_TYPE_BOOL && t.kind == T_IDENT && !neg) {
        bool v;
        if (tok_eq(&t, "true") || tok_eq(&t, "True") || tok_eq(&t, "t"))
            v = true;
        else if (tok_eq(&t, "false") || tok_eq(&t, "False") || tok_eq(&t, "f"))
            v = false;
        else
            return perr(p, &t, "expected true or false for field '%s', found %s", f->name,
                        describe(&t, buf, sizeof buf));
        void *slot = fe_pb_slot(m, f);
        if (!slot)
            return nomem(p);
        fe_pb_set_bool(slot, f, v);
        return next(p);
    }
    if (fe_pb_is_float_type(f->type) && t.kind == T_IDENT) {
        double v;
        if (ident_ieq(&t, "inf") || ident_ieq(&t, "infinity"))
            v = INFINITY;
        else if (ident_ieq(&t, "nan"))
            v = NAN;
        else
            return perr(p, &t, "expected number for field '%s', found %s", f->name,
                        describe(&t, buf, sizeof buf));
        void *slot = fe_pb_slot(m, f);
        if (!slot)
            return nomem(p);
        fe_pb_set_double(slot, f, neg ? -v : v);
        return next(p);
    }
    if (t.kind != T_NUM) {
        const char *what = f->type == PROTOBUF_C_TYPE_BOOL   ? "true or false"
                           : fe_pb_is_float_type(f->type)    ? "number"
                           : f->type == PROTOBUF_C_TYPE_ENUM ? "enum value"
                                                             : "integer";
        return perr(p, &t, "expected %s for field '%s', found %s", what, f->name,
                    describe(&t, buf, sizeof buf));
    }
    if (t.n >= sizeof buf)
        return perr(p, &t, "number too long for field '%s'", f->name);
    uint64_t mag;
    if (fe_parse_uint(t.s, t.n, true, &mag)) {
        void *slot = fe_pb_slot(m, f);
        if (!slot)
            return nomem(p);
        const char *err = fe_pb_set_int(slot, f, neg, mag);
        if (err)
            return set_err(p, &t, f, err);
        return next(p);
    }
    if (!fe_pb_is_float_type(f->type)) {
        /* all-digit decimals that overflow 64 bits land here too */
        bool digits = true;
        for (size_t i = 0; i < t.n; i++)
            digits &= is_digit(t.s[i]) != 0;
        if (digits)
            return perr(p, &t, "integer out of range for field '%s'", f->name);
        return perr(p, &t, "expected %s for field '%s', found %s",
                    f->type == PROTOBUF_C_TYPE_BOOL ? "true or false" : "integer", f->name,
                    describe(&t, buf, sizeof buf));
    }
    memcpy(buf, t.s, t.n);
    size_t n = t.n;
    if (n > 1 && (buf[n - 1] == 'f' || buf[n - 1] == 'F') &&
        !(n > 2 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')))
        n--;
    buf[n] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + n || n == 0)
        return perr(p, &t, "expected number for field '%s', found %s", f->name,
                    describe(&t, buf, sizeof buf));
    void *slot = fe_pb_slot(m, f);
    if (!slot)
        return nomem(p);
    fe_pb_set_double(slot, f, neg ? -v : v);
    return next(p);
}

static bool parse_message(Parser *p, ProtobufCMessage *m, char close);

/* '{' message '}' or '<' message '>' into a new/merged submessage of f. */
static bool parse_message_value(Parser *p, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    char buf[64];
    char close;
    if (is_punct(&p->tok, '{'))
        close = '}';
    else if (is_punct(&p->tok, '<'))
        close = '>';
    else
        return perr(p, &p->tok, "expected '{' for field '%s', found %s", f->name,
                    describe(&p->tok, buf, sizeof buf));
    if (p->depth >= FE_MAX_DEPTH)
        return perr(p, &p->tok, "messages nested deeper than %d levels", FE_MAX_DEPTH);
    void *slot = fe_pb_slot(m, f);
    if (!slot)
        return nomem(p);
    ProtobufCMessage *sub = fe_pb_slot_message(slot, f);
    if (!sub)
        return nomem(p);
    if (!next(p))
        return false;
    p->depth++;
    bool ok = parse_message(p, sub, close);
    p->depth--;
    return ok;
}

/* Skips a bracketed block starting at the current '{', '<' or '['. */
static bool skip_block(Parser *p)
{
    char stack[FE_MAX_DEPTH + 1];
    int depth = 0;
    do {
        Tok t = p->tok;
        if (t.kind == T_EOF)
            return perr(p, &t, "unexpected end of input (unclosed '%c')", depth ? stack[depth - 1] : '{');
        if (t.kind == T_PUNCT && strchr("{<[", t.s[0])) {
            if (depth + p->depth >= FE_MAX_DEPTH)
                return perr(p, &t, "messages nested deeper than %d levels", FE_MAX_DEPTH);
            stack[depth++] = t.s[0];
        } else if (t.kind == T_PUNCT && strchr("}>]", t.s[0])) {
            char open = t.s[0] == '}' ? '{' : t.s[0] == '>' ? '<' : '[';
            if (depth == 0 || stack[depth - 1] != open)
                return perr(p, &t, "unbalanced '%c'", t.s[0]);
            depth--;
        }
        if (!next(p))
            return false;
    } while (depth > 0);
    return true;
}

/* Skips the value of an unknown field (after its name and optional ':'). */
static bool skip_value(Parser *p, bool had_colon, const Tok *name)
{
    char buf[64];
    if (is_punct(&p->tok, '{') || is_punct(&p->tok, '<') || is_punct(&p->tok, '['))
        return skip_block(p);
    if (!had_colon)
        return perr(p, &p->tok, "expected ':' or '{' after field '%.*s', found %s",
                    (int)(name->n > 100 ? 100 : name->n), name->s, describe(&p->tok, buf, sizeof buf));
    if (is_punct(&p->tok, '-') && !next(p))
        return false;
    if (p->tok.kind == T_STR) {
        while (p->tok.kind == T_STR)
            if (!next(p))
                return false;
        return true;
    }
    if (p->tok.kind == T_IDENT || p->tok.kind == T_NUM)
        return next(p);
    return perr(p, &p->tok, "expected value, found %s", describe(&p->tok, buf, sizeof buf));
}

/* Fields until `close` ('}' or '>'), or until end of input when close is 0. */
static bool parse_message(Parser *p, ProtobufCMessage *m, char close)
{
    char buf[64];
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (;;) {
        Tok t = p->tok;
        if (t.kind == T_EOF) {
            if (close == 0)
                return true;
            return perr(p, &t, "unexpected end of input (expected '%c')", close);
        }
        if (close && is_punct(&t, close))
            return next(p);
        const ProtobufCFieldDescriptor *f = NULL;
        Tok name = t;
        if (is_punct(&t, '[')) {
            /* extension or Any type URL: [a.b.c] or [type.googleapis.com/x.Y]:
             * read raw up to ']' (the characters are no tokens of ours) */
            while (p->pos < p->n && p->src[p->pos] != ']' && p->src[p->pos] != '\n')
                advance_char(p);
            if (p->pos >= p->n || p->src[p->pos] != ']')
                return perr(p, &t, "unterminated '[' in field name");
            advance_char(p);
            name.n = (size_t)(p->src + p->pos - t.s);
        } else if (t.kind != T_IDENT) {
            return perr(p, &t, "expected field name, found %s", describe(&t, buf, sizeof buf));
        } else {
            f = fe_pb_field(d, t.s, t.n, false);
        }
        if (!next(p))
            return false;
        bool colon = is_punct(&p->tok, ':');
        if (colon && !next(p))
            return false;

        if (!f) {
            if (!skip_value(p, colon, &name))
                return false;
        } else if (is_punct(&p->tok, '[')) {
            /* list syntax: field: [v, v] or field [ {..}, {..} ] */
            if (f->label != PROTOBUF_C_LABEL_REPEATED)
                return perr(p, &p->tok, "list value for non-repeated field '%s'", f->name);
            if (f->type != PROTOBUF_C_TYPE_MESSAGE && !colon)
                return perr(p, &p->tok, "expected ':' after field '%s'", f->name);
            if (!next(p))
                return false;
            if (is_punct(&p->tok, ']')) {
                if (!next(p))
                    return false;
            } else {
                for (;;) {
                    bool ok = f->type == PROTOBUF_C_TYPE_MESSAGE ? parse_message_value(p, m, f)
                                                                 : parse_scalar(p, m, f);
                    if (!ok)
                        return false;
                    if (is_punct(&p->tok, ']')) {
                        if (!next(p))
                            return false;
                        break;
                    }
                    if (!is_punct(&p->tok, ','))
                        return perr(p, &p->tok, "expected ',' or ']' in list for field '%s', found %s",
                                    f->name, describe(&p->tok, buf, sizeof buf));
                    if (!next(p))
                        return false;
                }
            }
        } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
            if (!parse_message_value(p, m, f))
                return false;
        } else {
            if (!colon)
                return perr(p, &p->tok, "expected ':' after field '%s', found %s", f->name,
                            describe(&p->tok, buf, sizeof buf));
            if (!parse_scalar(p, m, f))
                return false;
        }
        if ((is_punct(&p->tok, ',') || is_punct(&p->tok, ';')) && !next(p))
            return false;
    }
}

ProtobufCMessage *fe_pbtxt_parse(const ProtobufCMessageDescriptor *desc, const char *text, size_t n,
                                 const char *name, Status *st)
{
    Parser p = {
        .src = text, .n = text ? n : 0, .line = 1, .col = 1, .name = name ? name : "<input>", .st = st};
    ProtobufCMessage *m = fe_pb_new(desc);
    if (!m) {
        st_errorf(st, ST_NOMEM, "%s: out of memory", p.name);
        return NULL;
    }
    if (p.n >= 3 && memcmp(p.src, "\xEF\xBB\xBF", 3) == 0)
        p.pos = 3; /* UTF-8 byte order mark */
    if (!next(&p) || !parse_message(&p, m, 0)) {
        if (!p.failed)
            st_errorf(st, ST_ERROR, "%s: text format parse failed", p.name);
        protobuf_c_message_free_unpacked(m, NULL);
        return NULL;
    }
    return m;
}
