/* compiler/frontend/json.c - strict JSON, and JSON -> protobuf-c (proto3 mapping).
 *
 * Parser: recursive descent over RFC 8259 JSON into a malloc'd tree
 * (JsonValue).  Strict: no comments, trailing commas, leading zeros, NaN or
 * raw control characters; strings must be valid UTF-8; \uXXXX escapes with
 * surrogate pairs are decoded to UTF-8 (a lone surrogate is an error).
 * Numbers keep their literal text so 64-bit integers lose no precision.
 * Containers nest at most FE_MAX_DEPTH deep.
 *
 * Converter: walks a JSON object against a ProtobufCMessageDescriptor using
 * the proto3 JSON mapping: keys are the proto field name or its
 * lowerCamelCase JSON name; 64-bit integers may be strings or numbers; enums
 * are names or numbers; bytes are base64; maps are JSON objects; repeated
 * fields are arrays; null means "default"; unknown keys are skipped.
 * Errors read "NAME: PATH: problem" with PATH like modelTopology.node[3].op.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/frontend/fe_int.h"

/* ---- parser -------------------------------------------------------------- */

typedef struct JParser {
    const char *s;
    size_t n, pos;
    int line;
    size_t line_start;
    const char *name;
    Status *st;
    bool failed;
} JParser;

static int col_of(JParser *p)
{
    return (int)(p->pos - p->line_start) + 1;
}

static bool jerr(JParser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool jerr(JParser *p, const char *fmt, ...)
{
    if (p->failed)
        return false;
    p->failed = true;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st_errorf(p->st, ST_ERROR, "%s:%d:%d: invalid JSON: %s", p->name, p->line, col_of(p), msg);
}

static bool jnomem(JParser *p)
{
    if (!p->failed) {
        p->failed = true;
        st_errorf(p->st, ST_NOMEM, "%s: out of memory", p->name);
    }
    return false;
}

static void skip_ws(JParser *p)
{
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c == '\n') {
            p->line++;
            p->line_start = p->pos + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            break;
        }
        p->pos++;
    }
}

void fe_json_free(JsonValue *v)
{
    if (!v)
        return;
    if (v->type == JSON_ARRAY) {
        for (size_t i = 0; i < v->n; i++)
            fe_json_free(v->items[i]);
        free(v->items);
    } else if (v->type == JSON_OBJECT) {
        for (size_t i = 0; i < v->n; i++) {
            free(v->members[i].key);
            fe_json_free(v->members[i].value);
        }
        free(v->members);
    }
    free(v->str);
    free(v);
}

static int hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Parses a string at the opening quote into a malloc'd UTF-8 buffer. */
static bool parse_string(JParser *p, char **out, size_t *out_n)
{
    size_t quote = p->pos;
    p->pos++; /* opening quote */
    size_t start = p->pos;
    /* the decoded form is never longer than the source */
    size_t end = start;
    while (end < p->n && p->s[end] != '"') {
        if (p->s[end] == '\\')
            end++;
        end++;
    }
    if (end >= p->n) {
        p->pos = quote; /* report where the string starts */
        return jerr(p, "unterminated string");
    }
    char *buf = malloc(end - start + 1);
    if (!buf)
        return jnomem(p);
    size_t k = 0;
    while (p->s[p->pos] != '"') {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c < 0x20) {
            free(buf);
            return jerr(p, "control character in string");
        }
        if (c == '\\') {
            char e = p->s[p->pos + 1];
            p->pos += 2;
            switch (e) {
            case '"':
                buf[k++] = '"';
                break;
            case '\\':
                buf[k++] = '\\';
                break;
            case '/':
                buf[k++] = '/';
                break;
            case 'b':
                buf[k++] = '\b';
                break;
            case 'f':
                buf[k++] = '\f';
                break;
            case 'n':
                buf[k++] = '\n';
                break;
            case 'r':
                buf[k++] = '\r';
                break;
            case 't':
                buf[k++] = '\t';
                break;
            case 'u': {
                int u = p->pos + 4 <= end ? hex4(p->s + p->pos) : -1;
                if (u < 0) {
                    free(buf);
                    return jerr(p, "bad \\u escape");
                }
                p->pos += 4;
                uint32_t cp = (uint32_t)u;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    int lo = p->pos + 6 <= end && p->s[p->pos] == '\\' && p->s[p->pos + 1] == 'u'
                                 ? hex4(p->s + p->pos + 2)
                                 : -1;
                    if (lo < 0xDC00 || lo > 0xDFFF) {
                        free(buf);
                        return jerr(p, "unpaired UTF-16 surrogate in \\u escape");
                    }
                    p->pos += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    free(buf);
                    return jerr(p, "unpaired UTF-16 surrogate in \\u escape");
                }
                /* 6 or 12 source bytes -> at most 4 UTF-8 bytes */
                if (cp < 0x80) {
                    buf[k++] = (char)cp;
                } else if (cp < 0x800) {
                    buf[k++] = (char)(0xC0 | (cp >> 6));
                    buf[k++] = (char)(0x80 | (cp & 63));
                } else if (cp < 0x10000) {
                    buf[k++] = (char)(0xE0 | (cp >> 12));
                    buf[k++] = (char)(0x80 | ((cp >> 6) & 63));
                    buf[k++] = (char)(0x80 | (cp & 63));
                } else {
                    buf[k++] = (char)(0xF0 | (cp >> 18));
                    buf[k++] = (char)(0x80 | ((cp >> 12) & 63));
                    buf[k++] = (char)(0x80 | ((cp >> 6) & 63));
                    buf[k++] = (char)(0x80 | (cp & 63));
                }
                break;
            }
            default:
                free(buf);
                p->pos -= 1;
                return jerr(p, "invalid escape in string");
            }
            continue;
        }
        if (c < 0x80) {
            buf[k++] = (char)c;
            p->pos++;
            continue;
        }
        size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        bool ok = len != 0 && c != 0xC0 && c != 0xC1 && c <= 0xF4 && p->pos + len <= end;
        for (size_t i = 1; ok && i < len; i++)
            ok = ((unsigned char)p->s[p->pos + i] & 0xC0) == 0x80;
        if (!ok) {
            free(buf);
            return jerr(p, "invalid UTF-8 in string");
        }
        memcpy(buf + k, p->s + p->pos, len);
        k += len;
        p->pos += len;
    }
    p->pos++; /* closing quote */
    buf[k] = 0;
    *out = buf;
    *out_n = k;
    return true;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool parse_number(JParser *p, JsonValue *v)
{
    size_t start = p->pos;
    size_t i = p->pos;
    if (i < p->n && p->s[i] == '-')
        i++;
    if (i >= p->n || !is_digit(p->s[i]))
        return jerr(p, "bad number");
    if (p->s[i] == '0' && i + 1 < p->n && is_digit(p->s[i + 1]))
        return jerr(p, "leading zero in number");
    while (i < p->n && is_digit(p->s[i]))
        i++;
    if (i < p->n && p->s[i] == '.') {
        i++;
        if (i >= p->n || !is_digit(p->s[i]))
            return jerr(p, "bad number");
        while (i < p->n && is_digit(p->s[i]))
            i++;
    }
    if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        i++;
        if (i < p->n && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        if (i >= p->n || !is_digit(p->s[i]))
            return jerr(p, "bad number");
        while (i < p->n && is_digit(p->s[i]))
            i++;
    }
    size_t len = i - start;
    v->str = malloc(len + 1);
    if (!v->str)
        return jnomem(p);
    memcpy(v->str, p->s + start, len);
    v->str[len] = 0;
    v->len = len;
    v->num = strtod(v->str, NULL);
    v->type = JSON_NUMBER;
    p->pos = i;
    return true;
}

static bool match_word(JParser *p, const char *w)
{
    size_t l = strlen(w);
    if (p->n - p->pos >= l && memcmp(p->s + p->pos, w, l) == 0) {
        p->pos += l;
        return true;
    }
    return false;
}

static JsonValue *parse_value(JParser *p, int depth);

static bool grow(void **arr, size_t n, size_t es)
{
    if (n == 0 || (n & (n - 1)) == 0) {
        size_t cap = n == 0 ? 4 : n * 2;
        if (cap > SIZE_MAX / es)
            return false;
        void *na = realloc(*arr, cap * es);
        if (!na)
            return false;
        *arr = na;
    }
    return true;
}

static JsonValue *parse_value(JParser *p, int depth)
{
    skip_ws(p);
    if (p->pos >= p->n) {
        jerr(p, "unexpected end of input");
        return NULL;
    }
    JsonValue *v = calloc(1, sizeof *v);
    if (!v) {
        jnomem(p);
        return NULL;
    }
    v->line = p->line;
    v->col = col_of(p);
    char c = p->s[p->pos];
    bool ok = true;
    if (c == '{' || c == '[') {
        if (depth >= FE_MAX_DEPTH) {
            jerr(p, "nested deeper than %d levels", FE_MAX_DEPTH);
            free(v);
            return NULL;
        }
        bool obj = c == '{';
        char close = obj ? '}' : ']';
        v->type = obj ? JSON_OBJECT : JSON_ARRAY;
        p->pos++;
        skip_ws(p);
        if (p->pos < p->n && p->s[p->pos] == close) {
            p->pos++;
            return v;
        }
        for (;;) {
            skip_ws(p);
            char *key = NULL;
            size_t key_len = 0;
            if (obj) {
                if (p->pos >= p->n || p->s[p->pos] != '"') {
                    ok = jerr(p, "expected '\"' (object key)");
                    break;
                }
                if (!(ok = parse_string(p, &key, &key_len)))
                    break;
                skip_ws(p);
                if (p->pos >= p->n || p->s[p->pos] != ':') {
                    free(key);
                    ok = jerr(p, "expected ':' after object key");
                    break;
                }
                p->pos++;
            }
            JsonValue *item = parse_value(p, depth + 1);
            if (!item) {
                free(key);
                ok = false;
                break;
            }
            if (obj ? !grow((void **)&v->members, v->n, sizeof *v->members)
                    : !grow((void **)&v->items, v->n, sizeof *v->items)) {
                free(key);
                fe_json_free(item);
                ok = jnomem(p);
                break;
            }
            if (obj)
                v->members[v->n++] = (JsonMember){key, key_len, item};
            else
                v->items[v->n++] = item;
            skip_ws(p);
            if (p->pos < p->n && p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->pos < p->n && p->s[p->pos] == close) {
                p->pos++;
                break;
            }
            ok = jerr(p, "expected ',' or '%c'", close);
            break;
        }
    } else if (c == '"') {
        v->type = JSON_STRING;
        ok = parse_string(p, &v->str, &v->len);
    } else if (c == '-' || is_digit(c)) {
        ok = parse_number(p, v);
    } else if (match_word(p, "true")) {
        v->type = JSON_BOOL;
        v->b = true;
    } else if (match_word(p, "false")) {
        v->type = JSON_BOOL;
    } else if (match_word(p, "null")) {
        v->type = JSON_NULL;
    } else {
        ok = jerr(p,
                  (unsigned char)c >= 32 && (unsigned char)c < 127 ? "unexpected character '%c'"
                                                                   : "unexpected byte%c",
                  (unsigned char)c >= 32 && (unsigned char)c < 127 ? c : ' ');
    }
    if (!ok) {
        fe_json_free(v);
        return NULL;
    }
    return v;
}

JsonValue *fe_json_parse(const char *text, size_t n, const char *name, Status *st)
{
    JParser p = {.s = text, .n = text ? n : 0, .line = 1, .name = name ? name : "<json>", .st = st};
    /* a UTF-8 byte order mark is tolerated */
    if (p.n >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        p.pos = p.line_start = 3;
    JsonValue *v = parse_value(&p, 0);
    if (!v)
        return NULL;
    skip_ws(&p);
    if (p.pos < p.n) {
        jerr(&p, "trailing characters after the JSON value");
        fe_json_free(v);
        return NULL;
    }
    return v;
}

const JsonValue *fe_json_get(const JsonValue *v, const char *key)
{
    if (!v || v->type != JSON_OBJECT)
        return NULL;
    size_t l = strlen(key);
    for (size_t i = 0; i < v->n; i++)
        if (v->members[i].key_len == l && memcmp(v->members[i].key, key, l) == 0)
            return v->members[i].value;
    return NULL;
}

/* ---- base64 -------------------------------------------------------------- */

static int b64val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

uint8_t *fe_base64_decode(const char *s, size_t n, size_t *out_n)
{
    while (n > 0 && s[n - 1] == '=')
        n--;
    if (n % 4 == 1)
        return NULL;
    uint8_t *out = malloc(n / 4 * 3 + 3);
    if (!out)
        return NULL;
    size_t k = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int d = b64val((unsigned char)s[i]);
        if (d < 0) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)d;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[k++] = (uint8_t)(acc >> bits);
        }
    }
    *out_n = k;
    return out;
}

/* ---- JSON -> protobuf ---------------------------------------------------- */

typedef struct Conv {
    const char *name;
    Status *st;
    char path[512];
    size_t path_len;
} Conv;

static bool cerr(Conv *c, const JsonValue *v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static bool cerr(Conv *c, const JsonValue *v, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (v)
        return st_errorf(c->st, ST_ERROR, "%s:%d:%d: %s: %s", c->name, v->line, v->col, c->path, msg);
    return st_errorf(c->st, ST_ERROR, "%s: %s: %s", c->name, c->path, msg);
}

static size_t path_push(Conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static size_t path_push(Conv *c, const char *fmt, ...)
{
    size_t old = c->path_len;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(c->path + old, sizeof c->path - old, fmt, ap);
    va_end(ap);
    if (k > 0)
        c->path_len = old + (size_t)k < sizeof c->path ? old + (size_t)k : sizeof c->path - 1;
    return old;
}

static void path_pop(Conv *c, size_t old)
{
    c->path_len = old;
    c->path[old] = 0;
}

static const char *type_name(JsonType t)
{
    static const char *names[] = {"null", "boolean", "number", "string", "array", "object"};
    return names[t];
}

static bool to_message(Conv *c, const JsonValue *v, ProtobufCMessage *m, int depth);

/* Integer from a JSON number or a numeric string. */
static bool json_int(const JsonValue *v, bool *neg, uint64_t *mag)
{
    if (v->type != JSON_NUMBER && v->type != JSON_STRING)
        return false;
    const char *s = v->str;
    size_t n = v->len;
    *neg = n > 0 && s[0] == '-';
    if (*neg) {
        s++;
        n--;
    }
    if (n > 0 && fe_parse_uint(s, n, false, mag))
        return true;
    /* 1e3, 2.0: accept when integral and in range */
    char *end;
    double d = strtod(v->str, &end);
    if (end != v->str + v->len || v->len == 0 || d != floor(d) || fabs(d) >= 18446744073709551616.0)
        return false;
    *neg = d < 0;
    *mag = (uint64_t)fabs(d);
    return true;
}

static bool set_value(Conv *c, const JsonValue *v, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                      int depth)
{
    const char *err = NULL;
    if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        if (v->type != JSON_OBJECT)
            return cerr(c, v, "expected object, found %s", type_name(v->type));
        if (depth >= FE_MAX_DEPTH)
            return cerr(c, v, "messages nested deeper than %d levels", FE_MAX_DEPTH);
        void *slot = fe_pb_slot(m, f);
        ProtobufCMessage *sub = slot ? fe_pb_slot_message(slot, f) : NULL;
        if (!sub)
            return st_errorf(c->st, ST_NOMEM, "%s: out of memory", c->name);
        return to_message(c, v, sub, depth + 1);
    }
    /* check the JSON type before making a slot so repeated fields get no
     * stray element on error */
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
        if (v->type != JSON_STRING)
            return cerr(c, v, "expected string, found %s", type_name(v->type));
        void *sslot = fe_pb_slot(m, f);
        err = sslot ? fe_pb_set_string(sslot, f, v->str, v->len) : "out of memory";
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        if (v->type != JSON_STRING)
            return cerr(c, v, "expected base64 string, found %s", type_name(v->type));
        size_t n;
        uint8_t *b = fe_base64_decode(v->str, v->len, &n);
        if (!b)
            return cerr(c, v, "invalid base64 data");
        void *slot = fe_pb_slot(m, f);
        err = slot ? fe_pb_set_bytes(slot, f, b, n) : "out of memory";
        free(b);
        break;
    }
    case PROTOBUF_C_TYPE_ENUM:
        if (v->type == JSON_STRING) {
            const ProtobufCEnumValue *ev =
                protobuf_c_enum_descriptor_get_value_by_name(f->descriptor, v->str);
            if (!ev)
                return cerr(c, v, "unknown enum value '%.100s' for field '%s'", v->str, f->name);
            void *slot = fe_pb_slot(m, f);
            if (!slot)
                err = "out of memory";
            else
                *(int32_t *)slot = ev->value;
            break;
        }
        /* numeric enum */
        /* fall through */
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64: {
        bool neg;
        uint64_t mag;
        if (!json_int(v, &neg, &mag))
            return cerr(c, v, "expected integer for field '%s'", f->name);
        void *slot = fe_pb_slot(m, f);
        err = slot ? fe_pb_set_int(slot, f, neg, mag) : "out of memory";
        break;
    }
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE: {
        double d;
        if (v->type == JSON_NUMBER) {
            d = v->num;
        } else if (v->type == JSON_STRING && !strcmp(v->str, "NaN")) {
            d = NAN;
        } else if (v->type == JSON_STRING && !strcmp(v->str, "Infinity")) {
            d = INFINITY;
        } else if (v->type == JSON_STRING && !strcmp(v->str, "-Infinity")) {
            d = -INFINITY;
        } else if (v->type == JSON_STRING) {
            char *end;
            d = strtod(v->str, &end);
            if (v->len == 0 || end != v->str + v->len)
                return cerr(c, v, "expected number for field '%s'", f->name);
        } else {
            return cerr(c, v, "expected number for field '%s', found %s", f->name, type_name(v->type));
        }
        void *slot = fe_pb_slot(m, f);
        err = slot ? fe_pb_set_double(slot, f, d) : "out of memory";
        break;
    }
    case PROTOBUF_C_TYPE_BOOL: {
        bool b;
        if (v->type == JSON_BOOL)
            b = v->b;
        else if (v->type == JSON_STRING && (!strcmp(v->str, "true") || !strcmp(v->str, "false")))
            b = v->str[0] == 't';
        else
            return cerr(c, v, "expected true or false for field '%s'", f->name);
        void *slot = fe_pb_slot(m, f);
        err = slot ? fe_pb_set_bool(slot, f, b) : "out of memory";
        break;
    }
    default:
        return cerr(c, v, "unsupported field type");
    }
    if (err) {
        if (!strcmp(err, "out of memory"))
            return st_errorf(c->st, ST_NOMEM, "%s: out of memory", c->name);
        return cerr(c, v, "%s (field '%s')", err, f->name);
    }
    return true;
}

/* One map entry {key: k, value: v} appended to map field f. */
static bool set_map_entry(Conv *c, const JsonMember *mem, ProtobufCMessage *m,
                          const ProtobufCFieldDescriptor *f, int depth)
{
    void *slot = fe_pb_slot(m, f);
    ProtobufCMessage *e = slot ? fe_pb_slot_message(slot, f) : NULL;
    if (!e)
        return st_errorf(c->st, ST_NOMEM, "%s: out of memory", c->name);
    const ProtobufCMessageDescriptor *ed = f->descriptor;
    const ProtobufCFieldDescriptor *kf = &ed->fields[0], *vf = &ed->fields[1];
    /* keys are JSON strings; non-string key types parse from them */
    JsonValue key = {.type = JSON_STRING,
                     .str = mem->key,
                     .len = mem->key_len,
                     .line = mem->value->line,
                     .col = mem->value->col};
    if (kf->type == PROTOBUF_C_TYPE_BOOL) {
        if (strcmp(mem->key, "true") && strcmp(mem->key, "false"))
            return cerr(c, mem->value, "bad map key '%.100s'", mem->key);
    }
    if (!set_value(c, &key, e, kf, depth))
        return false;
    if (mem->value->type == JSON_NULL)
        return true;
    return set_value(c, mem->value, e, vf, depth);
}

static bool to_message(Conv *c, const JsonValue *v, ProtobufCMessage *m, int depth)
{
    if (v->type != JSON_OBJECT)
        return cerr(c, v, "expected object, found %s", type_name(v->type));
    for (size_t i = 0; i < v->n; i++) {
        const JsonMember *mem = &v->members[i];
        const ProtobufCFieldDescriptor *f = fe_pb_field(m->descriptor, mem->key, mem->key_len, true);
        if (!f || mem->value->type == JSON_NULL)
            continue;
        size_t old = path_push(c, "%s%.100s", c->path_len ? "." : "", mem->key);
        bool ok = true;
        if (fe_pb_is_map(f)) {
            if (mem->value->type != JSON_OBJECT) {
                ok = cerr(c, mem->value, "expected object (map), found %s", type_name(mem->value->type));
            } else {
                for (size_t k = 0; ok && k < mem->value->n; k++) {
                    size_t o2 = path_push(c, "[\"%.60s\"]", mem->value->members[k].key);
                    ok = set_map_entry(c, &mem->value->members[k], m, f, depth);
                    path_pop(c, o2);
                }
            }
        } else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            if (mem->value->type != JSON_ARRAY) {
                ok = cerr(c, mem->value, "expected array, found %s", type_name(mem->value->type));
            } else {
                for (size_t k = 0; ok && k < mem->value->n; k++) {
                    size_t o2 = path_push(c, "[%zu]", k);
                    ok = set_value(c, mem->value->items[k], m, f, depth);
                    path_pop(c, o2);
                }
            }
        } else {
            ok = set_value(c, mem->value, m, f, depth);
        }
        path_pop(c, old);
        if (!ok)
            return false;
    }
    return true;
}

bool fe_json_to_pb(const JsonValue *v, ProtobufCMessage *m, const char *name, const char *path, Status *st)
{
    Conv c = {.name = name ? name : "<json>", .st = st};
    path_push(&c, "%s", path ? path : "");
    return to_message(&c, v, m, 0);
}
