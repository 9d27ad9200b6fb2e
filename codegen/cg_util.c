/* codegen/cg_util.c - small helpers every code generator uses.
 *
 * cg_printf is chibicc's println with indentation: text is formatted, then
 * written with o->indent levels of four spaces at the start of each
 * non-empty line.  cg_template fills {{KEY}} holes (tfcompile's header
 * templates).  The rest spell dtypes, identifiers, strings and numbers as C.
 * Invariants: output depends only on the arguments (no pointers, no time),
 * so generated files are byte-for-byte reproducible.
 */
#include "codegen/cg_int.h"

#include <math.h>
#include <string.h>

static void put_text(CgOut *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!o->mid_line && c != '\n')
            for (int k = 0; k < o->indent; k++)
                fputs("    ", o->f);
        fputc(c, o->f);
        o->mid_line = c != '\n';
    }
}

void cg_printf(CgOut *o, const char *fmt, ...)
{
    char small[1024];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    if ((size_t)len < sizeof small) {
        put_text(o, small, (size_t)len);
        return;
    }
    char *big = xx_malloc((size_t)len + 1);
    if (!big)
        return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)len + 1, fmt, ap);
    va_end(ap);
    put_text(o, big, (size_t)len);
    xx_free(big);
}

void cg_template(CgOut *o, const char *tmpl, const CgHole *holes)
{
    const char *s = tmpl;
    while (*s) {
        const char *open = strstr(s, "{{");
        if (!open) {
            put_text(o, s, strlen(s));
            return;
        }
        put_text(o, s, (size_t)(open - s));
        const char *close = strstr(open + 2, "}}");
        if (!close) {
            put_text(o, open, strlen(open));
            return;
        }
        size_t klen = (size_t)(close - open - 2);
        const CgHole *h = holes;
        while (h && h->key && !(strlen(h->key) == klen && strncmp(h->key, open + 2, klen) == 0))
            h++;
        if (h && h->key)
            put_text(o, h->value, strlen(h->value));
        else
            put_text(o, open, (size_t)(close + 2 - open));
        s = close + 2;
    }
}

void cg_c_ident(const char *name, char *buf, size_t n)
{
    if (n == 0)
        return;
    size_t j = 0;
    if (!name || !name[0] || (name[0] >= '0' && name[0] <= '9')) {
        if (j + 1 < n)
            buf[j++] = '_';
    }
    for (const char *p = name; p && *p && j + 1 < n; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_';
        buf[j++] = ok ? c : '_';
    }
    buf[j] = '\0';
}

const char *cg_c_type(tcrt_dtype dt)
{
    switch (dt) {
    case TCRT_F32: return "float";
    case TCRT_F64: return "double";
    case TCRT_I32: return "int32_t";
    case TCRT_U8: return "uint8_t";
    case TCRT_I16: return "int16_t";
    case TCRT_I8: return "int8_t";
    case TCRT_I64: return "int64_t";
    case TCRT_BOOL: return "uint8_t";
    case TCRT_U16: return "uint16_t";
    case TCRT_F16: return "uint16_t";
    case TCRT_BF16: return "uint16_t";
    case TCRT_U32: return "uint32_t";
    case TCRT_U64: return "uint64_t";
    default: return NULL;
    }
}

const char *cg_dtype_enum(tcrt_dtype dt)
{
    switch (dt) {
    case TCRT_F32: return "TCRT_F32";
    case TCRT_F64: return "TCRT_F64";
    case TCRT_I32: return "TCRT_I32";
    case TCRT_U8: return "TCRT_U8";
    case TCRT_I16: return "TCRT_I16";
    case TCRT_I8: return "TCRT_I8";
    case TCRT_STRING: return "TCRT_STRING";
    case TCRT_I64: return "TCRT_I64";
    case TCRT_BOOL: return "TCRT_BOOL";
    case TCRT_U16: return "TCRT_U16";
    case TCRT_F16: return "TCRT_F16";
    case TCRT_BF16: return "TCRT_BF16";
    case TCRT_U32: return "TCRT_U32";
    case TCRT_U64: return "TCRT_U64";
    default: return "TCRT_INVALID";
    }
}

const char *cg_dtype_short(tcrt_dtype dt)
{
    switch (dt) {
    case TCRT_F32: return "f32";
    case TCRT_F64: return "f64";
    case TCRT_I32: return "i32";
    case TCRT_U8: return "u8";
    case TCRT_I16: return "i16";
    case TCRT_I8: return "i8";
    case TCRT_STRING: return "string";
    case TCRT_I64: return "i64";
    case TCRT_BOOL: return "bool";
    case TCRT_U16: return "u16";
    case TCRT_F16: return "f16";
    case TCRT_BF16: return "bf16";
    case TCRT_U32: return "u32";
    case TCRT_U64: return "u64";
    default: return "invalid";
    }
}

double cg_kernel_flops(const IrNode *n)
{
    if (!n || n->n_outputs < 1)
        return 0;
    double out = (double)ir_shape_count(&n->out[0].type.shape);
    const int64_t *p = n->p.i;
    if (n->op == OP_MAXPOOL || n->op == OP_AVGPOOL)
        return out * (double)(p[TCRT_POOL_KH] > 0 ? p[TCRT_POOL_KH] : 1) *
               (double)(p[TCRT_POOL_KW] > 0 ? p[TCRT_POOL_KW] : 1);
    if (n->n_inputs < 2 || !n->inputs[0].node || !n->inputs[1].node)
        return 0;
    const IrShape *a = &ir_value_type(n->inputs[0])->shape, *w = &ir_value_type(n->inputs[1])->shape;
    if (n->op == OP_MATMUL && a->rank >= 2) {
        int64_t k = p[TCRT_MM_TA] ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
        return 2.0 * out * (double)k;
    }
    if (n->op != OP_CONV2D || a->rank != 4)
        return 0;
    double cin = (double)a->dims[3];
    switch (p[TCRT_CONV_PACKED]) {
    case 0: /* HWIO, or HWCM for a depthwise conv: its multiplier is in the output channels */
        if (w->rank != 4)
            return 0;
        return 2.0 * out * (double)w->dims[0] * (double)w->dims[1] *
               (p[TCRT_CONV_DEPTHWISE] ? 1.0
                : p[TCRT_CONV_X2S]     ? (double)w->dims[2]
                                       : cin);
    case TCRT_CONV_PACK_DIRECT: /* [ceil(Cout/16), KH, KW, Cin, 16]; a pair's Cin is both inputs' */
        return w->rank == 5 ? 2.0 * out * (double)w->dims[1] * (double)w->dims[2] * (double)w->dims[3] : 0;
    case TCRT_CONV_PACK_WINO:
    case TCRT_CONV_PACK_WINO4:
        return 2.0 * out * 9.0 * cin;
    case TCRT_CONV_PACK_DWBLOCK: {
        /* expansion over every input pixel, depthwise over the output
         * pixels, projection into the output */
        double in_px = (double)a->dims[0] * (double)a->dims[1] * (double)a->dims[2];
        double ce = p[TCRT_CONV_FUSE] & TCRT_FUSE_EXPAND ? (double)p[TCRT_CONV_COUT] : cin;
        const IrShape *o = &n->out[0].type.shape;
        double out_px = o->rank == 4 ? (double)o->dims[0] * (double)o->dims[1] * (double)o->dims[2] : 0;
        double f = 2.0 * out_px * ce * (double)p[TCRT_CONV_KH] * (double)p[TCRT_CONV_KW];
        if (p[TCRT_CONV_FUSE] & TCRT_FUSE_EXPAND)
            f += 2.0 * in_px * cin * ce;
        if (p[TCRT_CONV_FUSE] & TCRT_FUSE_PROJECT)
            f += 2.0 * out * ce;
        return f;
    }
    default:
        return 0;
    }
}

const char *cg_type_str(const IrType *t, char *buf, size_t n)
{
    char dims[IR_MAX_RANK * 26 + 4];
    size_t j = 0;
    dims[j++] = '[';
    for (int d = 0; d < t->shape.rank && d < IR_MAX_RANK; d++) {
        int w = snprintf(dims + j, sizeof dims - j, "%s%s%lld", d ? "," : "",
                         t->shape.has_dyn && t->shape.dyn_dim == d ? "<=" : "", (long long)t->shape.dims[d]);
        if (w > 0)
            j += (size_t)w;
    }
    dims[j++] = ']';
    dims[j] = '\0';
    snprintf(buf, n, "%s%s", cg_dtype_short(t->dtype), dims);
    return buf;
}

void cg_c_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
        unsigned c = *p;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 32 || c >= 127 || c == '?') /* '?' avoids trigraphs */
            fprintf(f, "\\%03o", c);
        else
            fputc((int)c, f);
    }
    fputc('"', f);
}

void cg_comment_text(const char *s, char *buf, size_t n)
{
    if (n == 0)
        return;
    size_t j = 0;
    for (const char *p = s ? s : ""; *p && j + 1 < n; p++) {
        char c = *p;
        if (c == '\n' || c == '\r' || c == '\t')
            c = ' ';
        if (c == '/' && j > 0 && buf[j - 1] == '*')
            c = '|';
        if (c == '*' && p[1] == '/')
            c = '+';
        if ((unsigned char)c < 32)
            c = '?';
        buf[j++] = c;
    }
    buf[j] = '\0';
}

void cg_double_lit(double v, char *buf, size_t n)
{
    if (isnan(v)) {
        snprintf(buf, n, "NAN");
    } else if (isinf(v)) {
        snprintf(buf, n, v > 0 ? "INFINITY" : "-INFINITY");
    } else {
        snprintf(buf, n, "%.17g", v);
        /* make it a floating literal: "1" -> "1.0" */
        if (!strpbrk(buf, ".eE")) {
            size_t len = strlen(buf);
            if (len + 2 < n)
                memcpy(buf + len, ".0", 3);
        }
    }
}
