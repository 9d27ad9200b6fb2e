/* codegen/c/emit_call.c - the C emitter for ops run by runtime kernels
 * (kinds K_REDUCE, K_CONTRACT, K_WINDOW, K_MOVE, K_MISC).
 *
 * A kernel builds tcrt_tensor descriptors with literal shapes around its
 * pointer arguments and a `static const tcrt_params` holding the node's
 * parameters, then returns the status of one runtime call: the kernel
 * cg_kernel_name picks (the op's reference kernel, or its fast f32 twin;
 * f32 MATMUL and CONV2D get the planned workspace as out[1]).  COPY
 * (reshape, identity) is a memcpy, skipped when source and destination are
 * the same address.
 * Also here: the kernel comment every emitter writes.
 * Invariants: descriptor shapes are the IR's static shapes; parameters are
 * copied verbatim (their layout is the kernel's, tcrt_kernels.h).
 */
#include "codegen/cg_int.h"

#include <math.h>
#include <string.h>

bool cgc_has_workspace(const IrNode *n)
{
    return (n->op == OP_CONV2D || n->op == OP_MATMUL) && n->out[0].type.dtype == TCRT_F32;
}

bool cgc_kernel_returns_status(const IrNode *n)
{
    const OpInfo *oi = ir_op_info(n->op);
    return oi && oi->kind != K_ELEM && n->op != OP_COPY && n->op != OP_SYMVAL;
}

void cgc_kernel_comment(CgOut *o, const IrNode *n, const char *kname, const char *const *in_names,
                        const char *const *out_names, const char *extra)
{
    char origin[256], origin_op[128], t[IR_MAX_RANK * 24 + 16];
    cg_comment_text(n->origin ? n->origin : "?", origin, sizeof origin);
    cg_comment_text(n->origin_op ? n->origin_op : "?", origin_op, sizeof origin_op);
    cg_printf(o, "/* %s  (TF node: %s (%s))\n", kname, origin, origin_op);
    cg_printf(o, " *   ");
    for (int k = 0; k < n->n_inputs; k++)
        cg_printf(o, "%s%s %s", k ? ", " : "", in_names[k],
                  cg_type_str(ir_value_type(n->inputs[k]), t, sizeof t));
    cg_printf(o, " -> ");
    for (int k = 0; k < n->n_outputs; k++)
        cg_printf(o, "%s%s %s", k ? ", " : "", out_names[k], cg_type_str(&n->out[k].type, t, sizeof t));
    if (extra && extra[0]) {
        char e[600];
        cg_comment_text(extra, e, sizeof e);
        cg_printf(o, "\n *   %s", e);
    }
    cg_printf(o, " */\n");
}

/* Parameter names after the op spec (onnx2c style). */
static void input_names(const IrNode *n, char names[][16])
{
    static const char *const mm[] = {"a", "b", "bias"};
    static const char *const conv[] = {"x", "w", "bias", "residual"};
    static const char *const convt[] = {"dy", "w"};
    static const char *const gather[] = {"params", "indices"};
    const char *const *fixed = NULL;
    int n_fixed = 0;
    switch (n->op) {
    case OP_MATMUL: fixed = mm; n_fixed = 3; break;
    case OP_CONV2D: fixed = conv; n_fixed = 4; break;
    case OP_CONV2D_TRANSPOSE: fixed = convt; n_fixed = 2; break;
    case OP_GATHER:
    case OP_GATHER_ND: fixed = gather; n_fixed = 2; break;
    default: break;
    }
    for (int k = 0; k < n->n_inputs; k++) {
        if (k < n_fixed)
            snprintf(names[k], 16, "%s", fixed[k]);
        else if (n->n_inputs == 1)
            snprintf(names[k], 16, "x");
        else
            snprintf(names[k], 16, "x%d", k);
    }
}

static void output_names(const IrNode *n, char names[][16])
{
    for (int k = 0; k < n->n_outputs; k++) {
        if (n->op == OP_TOPK)
            snprintf(names[k], 16, "%s", k == 0 ? "values" : "indices");
        else if (n->n_outputs == 1)
            snprintf(names[k], 16, "y");
        else
            snprintf(names[k], 16, "y%d", k);
    }
}

/* Dim d of t as C: the literal, or for a data-dependent extent (ir/dyn.c)
 * its expression over the run-time sizes sym[]. */
static const char *dim_expr(const IrType *t, int d, char *buf, size_t n)
{
    if (t->shape.has_dyn && t->shape.dyn_dim == d)
        return ir_aff_str(&t->shape.dyn, buf, n);
    snprintf(buf, n, "%lld", (long long)t->shape.dims[d]);
    return buf;
}

static void emit_descriptor(CgOut *o, const char *ptr, const IrType *t, bool is_const)
{
    cg_printf(o, "{%s%s, %s, %d, {", is_const ? "(void *)" : "", ptr, cg_dtype_enum(t->dtype),
              t->shape.rank);
    if (t->shape.rank == 0)
        cg_printf(o, "0");
    for (int d = 0; d < t->shape.rank; d++) {
        char e[160];
        cg_printf(o, "%s%s", d ? ", " : "", dim_expr(t, d, e, sizeof e));
    }
    cg_printf(o, "}}");
}

bool cgc_needs_sym(const IrNode *n)
{
    return n->op == OP_SYMVAL || ir_node_has_dyn(n);
}

/* SYMVAL: y[i] = its expression over the run-time sizes. */
static void emit_symval(CgOut *o, const IrNode *n, const char *kname)
{
    const IrAff *e = n->data;
    const char *ct = cg_c_type(n->out[0].type.dtype);
    int64_t cnt = ir_shape_count(&n->out[0].type.shape);
    const char *none[1] = {""}, *outs[1] = {"y"};
    cgc_kernel_comment(o, n, kname, none, outs, "y = run-time sizes (ir/dyn.c)");
    cg_printf(o, "static void %s(%s *restrict y, const int64_t *sym)\n{\n", kname, ct);
    o->indent++;
    for (int64_t i = 0; i < cnt; i++) {
        char b[160];
        cg_printf(o, "y[%lld] = (%s)%s;\n", (long long)i, ct, ir_aff_str(&e[i], b, sizeof b));
    }
    o->indent--;
    cg_printf(o, "}\n\n");
}

/* Parameters that depend on run-time extents, patched after the static
 * initializer: topk's k, pad's after-padding. */
static void emit_dyn_params(CgOut *o, const IrNode *n)
{
    if (n->op == OP_TOPK) {
        char e[160];
        const IrType *t = &n->out[0].type;
        cg_printf(o, "p.i[%d] = %s;\n", TCRT_TOPK_K, dim_expr(t, t->shape.rank - 1, e, sizeof e));
    } else if (n->op == OP_PAD) {
        const IrType *x = ir_value_type(n->inputs[0]), *y = &n->out[0].type;
        for (int d = 0; d < y->shape.rank; d++) {
            if (!(x->shape.has_dyn && x->shape.dyn_dim == d) && !(y->shape.has_dyn && y->shape.dyn_dim == d))
                continue;
            char ey[160], ex[160];
            cg_printf(o, "p.i[%d] = %s - %s - %lld;\n", 2 * d + 1, dim_expr(y, d, ey, sizeof ey),
                      dim_expr(x, d, ex, sizeof ex), (long long)n->p.i[2 * d]);
        }
    }
}

static void emit_params(CgOut *o, const IrNode *n)
{
    bool any_i = false, any_f = false;
    const char *decl = ir_node_has_dyn(n) && (n->op == OP_TOPK || n->op == OP_PAD) ? "tcrt_params"
                                                                                 : "static const tcrt_params";
    for (int k = 0; k < IR_MAX_IPARAM; k++)
        any_i |= n->p.i[k] != 0;
    for (int k = 0; k < IR_MAX_FPARAM; k++)
        any_f |= n->p.f[k] != 0 || signbit(n->p.f[k]);
    if (!any_i && !any_f) {
        cg_printf(o, "%s p = {{0}, {0}};\n", decl);
        return;
    }
    cg_printf(o, "%s p = {", decl);
    if (any_i) {
        cg_printf(o, ".i = {");
        bool first = true;
        for (int k = 0; k < IR_MAX_IPARAM; k++) {
            if (n->p.i[k] == 0)
                continue;
            if (n->p.i[k] == INT64_MIN)
                cg_printf(o, "%s[%d] = INT64_MIN", first ? "" : ", ", k);
            else
                cg_printf(o, "%s[%d] = %lld", first ? "" : ", ", k, (long long)n->p.i[k]);
            first = false;
        }
        cg_printf(o, "}%s", any_f ? ", " : "");
    }
    if (any_f) {
        cg_printf(o, ".f = {");
        bool first = true;
        for (int k = 0; k < IR_MAX_FPARAM; k++) {
            if (n->p.f[k] == 0 && !signbit(n->p.f[k]))
                continue;
            char lit[64];
            cg_double_lit(n->p.f[k], lit, sizeof lit);
            cg_printf(o, "%s[%d] = %s", first ? "" : ", ", k, lit);
            first = false;
        }
        cg_printf(o, "}");
    }
    cg_printf(o, "};\n");
}

bool cgc_emit_call(CgOut *o, const IrNode *n, const char *kname, Status *st)
{
    const char *who = n->origin ? n->origin : "?";
    const char *who_op = n->origin_op ? n->origin_op : "?";
    if (n->n_outputs > 4 || n->n_inputs > 100000)
        return st_errorf(st, ST_UNSUPPORTED, "node '%s' (%s): too many operands", who, who_op);
    /* Variadic concat can have many inputs: names "x%d" fit 16 bytes. */
    char (*in_names)[16] = xx_malloc(((size_t)n->n_inputs + 1) * 16);
    char out_names[4][16];
    const char **in_ptrs = xx_malloc(((size_t)n->n_inputs + 1) * sizeof *in_ptrs);
    if (!in_names || !in_ptrs) {
        xx_free(in_names);
        xx_free(in_ptrs);
        return st_errorf(st, ST_NOMEM, "codegen: out of memory");
    }
    input_names(n, in_names);
    output_names(n, out_names);
    for (int k = 0; k < n->n_inputs; k++)
        in_ptrs[k] = in_names[k];
    const char *out_ptrs[4] = {out_names[0], out_names[1], out_names[2], out_names[3]};
    bool ok = true;

    const char *fn = cg_kernel_name(n);
    bool ws = cgc_has_workspace(n);
    for (int k = 0; k < n->n_inputs && ok; k++)
        if (!cg_c_type(ir_value_type(n->inputs[k])->dtype))
            ok = st_errorf(st, ST_UNSUPPORTED, "node '%s' (%s): dtype %s not supported", who, who_op,
                           tcrt_dtype_name(ir_value_type(n->inputs[k])->dtype));
    for (int k = 0; k < n->n_outputs && ok; k++)
        if (!cg_c_type(n->out[k].type.dtype))
            ok = st_errorf(st, ST_UNSUPPORTED, "node '%s' (%s): dtype %s not supported", who, who_op,
                           tcrt_dtype_name(n->out[k].type.dtype));
    if (ok && n->op != OP_COPY && n->op != OP_SYMVAL && !fn)
        ok = st_errorf(st, ST_UNSUPPORTED, "node '%s' (%s): no runtime kernel for op %s", who, who_op,
                       ir_op_name(n->op));
    if (!ok) {
        xx_free(in_names);
        xx_free(in_ptrs);
        return false;
    }

    if (n->op == OP_SYMVAL) {
        emit_symval(o, n, kname);
        xx_free(in_names);
        xx_free(in_ptrs);
        return true;
    }
    if (n->op == OP_COPY) {
        size_t bytes = ir_type_bytes(&n->out[0].type);
        const IrType *yt = &n->out[0].type;
        cgc_kernel_comment(o, n, kname, in_ptrs, out_ptrs, "y = x (same bytes, new shape)");
        cg_printf(o, "static void %s(const void *x, void *y%s)\n{\n", kname,
                  cgc_needs_sym(n) ? ", const int64_t *sym" : "");
        o->indent++;
        if (yt->shape.has_dyn) { /* the valid rows only: the extent times the rest */
            char e[160];
            size_t row = bytes / (size_t)(yt->shape.dims[yt->shape.dyn_dim] ? yt->shape.dims[yt->shape.dyn_dim] : 1);
            /* the producer checked the extent; clamped all the same */
            int64_t bound = yt->shape.dims[yt->shape.dyn_dim];
            cg_printf(o, "int64_t e = %s;\n", dim_expr(yt, yt->shape.dyn_dim, e, sizeof e));
            cg_printf(o, "e = e < 0 ? 0 : e > %lld ? %lld : e;\n", (long long)bound, (long long)bound);
            cg_printf(o, "if (x != y)\n");
            cg_printf(o, "    memcpy(y, x, (size_t)e * %zu);\n", row);
            cg_printf(o, "memset((uint8_t *)y + (size_t)e * %zu, 0, %zu - (size_t)e * %zu);\n", row, bytes, row);
        } else {
            cg_printf(o, "if (x != y)\n");
            cg_printf(o, "    memcpy(y, x, %zu);\n", bytes);
        }
        o->indent--;
        cg_printf(o, "}\n\n");
        xx_free(in_names);
        xx_free(in_ptrs);
        return true;
    }

    char extra[300];
    snprintf(extra, sizeof extra, "%s%s", fn, ws ? " (workspace planned by memplan)" : "");
    cgc_kernel_comment(o, n, kname, in_ptrs, out_ptrs, extra);
    cg_printf(o, "static tcrt_status %s(", kname);
    for (int k = 0; k < n->n_inputs; k++)
        cg_printf(o, "const %s *restrict %s, ", cg_c_type(ir_value_type(n->inputs[k])->dtype),
                  in_names[k]);
    for (int k = 0; k < n->n_outputs; k++)
        cg_printf(o, "%s%s *restrict %s", k ? ", " : "", cg_c_type(n->out[k].type.dtype),
                  out_names[k]);
    if (ws)
        cg_printf(o, ", uint8_t *restrict ws");
    if (cgc_needs_sym(n))
        cg_printf(o, ", const int64_t *sym");
    cg_printf(o, ")\n{\n");
    o->indent++;
    emit_params(o, n);
    if (ir_node_has_dyn(n))
        emit_dyn_params(o, n);
    if (n->n_inputs > 0) {
        cg_printf(o, "tcrt_tensor in[%d] = {\n", n->n_inputs);
        o->indent++;
        for (int k = 0; k < n->n_inputs; k++) {
            emit_descriptor(o, in_names[k], ir_value_type(n->inputs[k]), true);
            cg_printf(o, ",\n");
        }
        o->indent--;
        cg_printf(o, "};\n");
    }
    int n_out = n->n_outputs + (ws ? 1 : 0);
    cg_printf(o, "tcrt_tensor out[%d] = {\n", n_out);
    o->indent++;
    for (int k = 0; k < n->n_outputs; k++) {
        emit_descriptor(o, out_names[k], &n->out[k].type, false);
        cg_printf(o, ",\n");
    }
    if (ws)
        cg_printf(o, "{ws, TCRT_U8, 1, {%lld}},\n", (long long)n->workspace_bytes);
    o->indent--;
    cg_printf(o, "};\n");
    bool tails = false;
    for (int k = 0; k < n->n_outputs; k++)
        tails |= n->out[k].type.shape.has_dyn;
    if (!tails) {
        cg_printf(o, "return %s(%s, %d, out, %d, &p);\n", fn, n->n_inputs > 0 ? "in" : "NULL",
                  n->n_inputs, n_out);
    } else {
        /* past a run-time extent the buffer holds no result: zero it so
         * that elementwise kernels, which run over the bound, read defined
         * values (ir/dyn.c) */
        cg_printf(o, "tcrt_status s = %s(%s, %d, out, %d, &p);\n", fn, n->n_inputs > 0 ? "in" : "NULL",
                  n->n_inputs, n_out);
        cg_printf(o, "if (s != TCRT_OK)\n    return s;\n");
        for (int k = 0; k < n->n_outputs; k++) {
            const IrType *t = &n->out[k].type;
            if (!t->shape.has_dyn)
                continue;
            char e[160];
            size_t bytes = ir_type_bytes(t);
            int64_t bound = t->shape.dims[t->shape.dyn_dim];
            size_t row = bound > 0 ? bytes / (size_t)bound : 0;
            cg_printf(o, "int64_t e%d = %s;\n", k, dim_expr(t, t->shape.dyn_dim, e, sizeof e));
            cg_printf(o, "if (e%d < 0 || e%d > %lld)\n    return TCRT_ERR_RUNTIME;\n", k, k, (long long)bound);
            cg_printf(o, "memset((uint8_t *)%s + (size_t)e%d * %zu, 0, %zu - (size_t)e%d * %zu);\n", out_names[k], k,
                      row, bytes, k, row);
        }
        cg_printf(o, "return TCRT_OK;\n");
    }
    o->indent--;
    cg_printf(o, "}\n\n");
    xx_free(in_names);
    xx_free(in_ptrs);
    return true;
}
