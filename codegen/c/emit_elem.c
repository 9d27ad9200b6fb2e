/* codegen/c/emit_elem.c - the C emitter for elementwise ops (kind K_ELEM).
 *
 * A kernel is loops with literal bounds over the output; the body is the
 * op's C expression from ir/ops.def with the identifier tokens A, B, C
 * replaced by the input element expressions a[...], b[...], c[...].
 * Indexing: each input gets NumPy broadcast strides against the output
 * (right-aligned dims; stride 0 where the input's dim is 1 or missing).
 * Output dims of size 1 are dropped, then adjacent dims are merged while
 * every operand stays affine across them (stride[d] == stride[d+1] *
 * size[d+1]), so the common same-shape case is one flat loop and a
 * bias-like broadcast is two loops.  Arithmetic happens in the operands' C
 * type (tgmath picks expf for floats); CAST writes (T)(A), or (A) != 0 for a
 * bool result.
 * Invariants: inputs broadcast to the output shape (checked, error if not);
 * the output never aliases an input (the memory plan guarantees it).
 */
#include "codegen/cg_int.h"

#include <string.h>

#define MAX_IN 3

typedef struct Loop {
    int64_t size;
    int64_t in_stride[MAX_IN];
    int64_t out_stride;
} Loop;

/* Appends s to buf[*len], truncating safely. */
static void append(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > cap)
        n = *len + 1 < cap ? cap - *len - 1 : 0;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
}

/* Replaces identifier tokens A, B, C of expr by elems[0..2]. */
static void substitute(const char *expr, const char *const *elems, int n_elems, char *buf,
                       size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    const char *p = expr;
    while (*p) {
        bool ident_start = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                           (*p >= '0' && *p <= '9');
        if (!ident_start) {
            char c[2] = {*p++, 0};
            append(buf, cap, &len, c);
            continue;
        }
        const char *q = p;
        while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_' ||
               (*q >= '0' && *q <= '9'))
            q++;
        int which = -1;
        if (q - p == 1 && *p >= 'A' && *p <= 'C')
            which = *p - 'A';
        if (which >= 0 && which < n_elems) {
            append(buf, cap, &len, elems[which]);
        } else {
            char tok[256];
            size_t tl = (size_t)(q - p) < sizeof tok - 1 ? (size_t)(q - p) : sizeof tok - 1;
            memcpy(tok, p, tl);
            tok[tl] = '\0';
            append(buf, cap, &len, tok);
        }
        p = q;
    }
}

/* Index expression "i0 * 12 + i1 * 3 + i2" for the given strides. */
static void index_expr(const Loop *loops, int n_loops, int which, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int l = 0; l < n_loops; l++) {
        int64_t s = which < 0 ? loops[l].out_stride : loops[l].in_stride[which];
        if (s == 0)
            continue;
        char term[64];
        if (s == 1)
            snprintf(term, sizeof term, "%si%d", len ? " + " : "", l);
        else
            snprintf(term, sizeof term, "%si%d * %lld", len ? " + " : "", l, (long long)s);
        append(buf, cap, &len, term);
    }
    if (len == 0)
        append(buf, cap, &len, "0");
}

static const char *const elem_names[MAX_IN] = {"a", "b", "c"};

bool cgc_emit_elem(CgOut *o, const IrNode *n, const char *kname, Status *st)
{
    const OpInfo *oi = ir_op_info(n->op);
    const IrType *ot = &n->out[0].type;
    const char *who = n->origin ? n->origin : "?";
    if (!oi || !oi->c_expr || n->n_inputs < 1 || n->n_inputs > MAX_IN || n->n_outputs != 1)
        return st_errorf(st, ST_UNSUPPORTED, "node '%s' (%s): no elementwise expression for op %s",
                         who, n->origin_op ? n->origin_op : "?", ir_op_name(n->op));
    const char *out_ctype = cg_c_type(ot->dtype);
    if (!out_ctype)
        return st_errorf(st, ST_UNSUPPORTED, "node '%s': dtype %s not supported by the C backend",
                         who, tcrt_dtype_name(ot->dtype));

    /* Broadcast strides per output dim, size-1 output dims dropped. */
    int r = ot->shape.rank;
    Loop loops[IR_MAX_RANK];
    int n_loops = 0;
    int64_t out_stride = 1;
    int64_t in_stride[MAX_IN];
    for (int k = 0; k < n->n_inputs; k++)
        in_stride[k] = 1;
    for (int d = r - 1; d >= 0; d--) {
        int64_t size = ot->shape.dims[d];
        Loop lp = {size, {0, 0, 0}, out_stride};
        for (int k = 0; k < n->n_inputs; k++) {
            const IrShape *s = &ir_value_type(n->inputs[k])->shape;
            int dk = d - (r - s->rank);
            if (s->rank > r)
                return st_errorf(st, ST_ERROR, "node '%s': input %d has rank %d > output rank %d",
                                 who, k, s->rank, r);
            if (dk < 0)
                continue;
            int64_t dim = s->dims[dk];
            if (dim != size && dim != 1)
                return st_errorf(st, ST_ERROR,
                                 "node '%s': input %d dim %d is %lld, output has %lld", who, k, dk,
                                 (long long)dim, (long long)size);
            lp.in_stride[k] = dim == 1 ? 0 : in_stride[k];
            in_stride[k] *= dim;
        }
        out_stride *= size;
        if (size != 1)
            loops[n_loops++] = lp; /* innermost first for now */
    }
    /* Reverse to outermost first. */
    for (int i = 0; i < n_loops / 2; i++) {
        Loop t = loops[i];
        loops[i] = loops[n_loops - 1 - i];
        loops[n_loops - 1 - i] = t;
    }
    /* Merge loop l with l+1 when every operand is affine across both. */
    for (int l = n_loops - 2; l >= 0; l--) {
        bool ok = loops[l].out_stride == loops[l + 1].out_stride * loops[l + 1].size;
        for (int k = 0; k < n->n_inputs && ok; k++)
            ok = loops[l].in_stride[k] == loops[l + 1].in_stride[k] * loops[l + 1].size;
        if (!ok)
            continue;
        loops[l].size *= loops[l + 1].size;
        loops[l].out_stride = loops[l + 1].out_stride;
        for (int k = 0; k < n->n_inputs; k++)
            loops[l].in_stride[k] = loops[l + 1].in_stride[k];
        memmove(&loops[l + 1], &loops[l + 2], sizeof(Loop) * (size_t)(n_loops - l - 2));
        n_loops--;
    }

    /* Element expressions and the body. */
    char idx[MAX_IN][256], elems[MAX_IN][300], out_idx[256];
    const char *elem_ptrs[MAX_IN];
    for (int k = 0; k < n->n_inputs; k++) {
        index_expr(loops, n_loops, k, idx[k], sizeof idx[k]);
        snprintf(elems[k], sizeof elems[k], "%s[%s]", elem_names[k], idx[k]);
        elem_ptrs[k] = elems[k];
    }
    index_expr(loops, n_loops, -1, out_idx, sizeof out_idx);
    char body[2048];
    if (n->op == OP_CAST) {
        if (ot->dtype == TCRT_BOOL)
            snprintf(body, sizeof body, "((%s) != 0)", elems[0]);
        else
            snprintf(body, sizeof body, "(%s)(%s)", out_ctype, elems[0]);
    } else {
        substitute(oi->c_expr, elem_ptrs, n->n_inputs, body, sizeof body);
    }

    /* Comment, signature. */
    char expr_doc[512];
    const char *sym[MAX_IN] = {"a", "b", "c"};
    if (n->op == OP_CAST)
        snprintf(expr_doc, sizeof expr_doc, "y = (%s)a", out_ctype);
    else {
        char e[400];
        substitute(oi->c_expr, sym, n->n_inputs, e, sizeof e);
        snprintf(expr_doc, sizeof expr_doc, "y = %s", e);
    }
    static const char *const out_names[1] = {"y"};
    cgc_kernel_comment(o, n, kname, elem_names, out_names, expr_doc);
    cg_printf(o, "static void %s(", kname);
    for (int k = 0; k < n->n_inputs; k++) {
        const char *ct = cg_c_type(ir_value_type(n->inputs[k])->dtype);
        if (!ct)
            return st_errorf(st, ST_UNSUPPORTED, "node '%s': input dtype %s not supported", who,
                             tcrt_dtype_name(ir_value_type(n->inputs[k])->dtype));
        cg_printf(o, "const %s *restrict %s, ", ct, elem_names[k]);
    }
    cg_printf(o, "%s *restrict y)\n{\n", out_ctype);
    o->indent++;
    int64_t total = 1;
    for (int l = 0; l < n_loops; l++)
        total *= loops[l].size;
    const char *ivar = total > INT32_MAX ? "int64_t" : "int";
    for (int l = 0; l < n_loops; l++) {
        cg_printf(o, "for (%s i%d = 0; i%d < %lld; i%d++)\n", ivar, l, l, (long long)loops[l].size,
                  l);
        o->indent++;
    }
    cg_printf(o, "y[%s] = %s;\n", out_idx, body);
    o->indent -= n_loops;
    o->indent--;
    cg_printf(o, "}\n\n");
    return true;
}
