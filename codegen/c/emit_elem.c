/* codegen/c/emit_elem.c - the C emitter for elementwise ops (kind K_ELEM).
 *
 * A kernel is one fused group (see passes/memplan.c: chains and trees of
 * elementwise nodes whose intermediates have a single consumer of the same
 * shape); a group of one node is the plain case.  The kernel is loops with
 * literal bounds over the output; each member becomes one statement per
 * element: its op's C expression from ir/ops.def with the identifier tokens
 * A, B, C replaced by the operand element expressions - a[...] for values
 * from outside the group, tN for members computed earlier in the same
 * iteration.  The last member writes y[...].
 * Indexing: every external operand gets NumPy broadcast strides against the
 * common output shape (right-aligned dims; stride 0 where its dim is 1 or
 * missing).  Output dims of size 1 are dropped, then adjacent dims are
 * merged while every operand stays affine across them (stride[d] ==
 * stride[d+1] * size[d+1]), so the common same-shape case is one flat loop
 * and a bias-like broadcast is two loops.  Arithmetic happens in the
 * operands' C type (tgmath picks expf for floats); CAST writes (T)(A), or
 * (A) != 0 for a bool result; POW by a constant 2 writes ((A) * (A)).
 * Vector math: a kernel whose float members call exp, log, tanh, ... (libmvec
 * has vector variants of them) gets TFCC_SIMD before its innermost loop
 * (tcrt_elem.h: "#pragma omp simd" where tfcc builds with libmvec, else
 * nothing; uses_vector_math).
 * Threads: a kernel of at least ELEM_PAR_MIN elements becomes kNNN_part
 * (the loops, the outermost over a range) and kNNN, which runs
 * ELEM_PAR_TASKS contiguous ranges through tcrt_parallel_tasks.
 * Invariants: every member has the root's output shape; operands broadcast
 * to it (checked, error if not); the output never aliases an operand (the
 * memory plan keeps operands live until the root runs).
 */
#include "codegen/cg_int.h"

#include <ctype.h>
#include <string.h>

/* Kernels of at least ELEM_PAR_MIN elements are split over the runtime's
 * thread pool in up to ELEM_PAR_TASKS contiguous ranges of the outermost
 * loop (below that, handing out the tasks costs more than the loop).  At
 * 2 threads a kernel left on one thread also reads the half of its input
 * that the other core wrote (its L2): facemesh's PReLUs at 24x24x64 took
 * 3.4 us at 1 thread and 7.5 at 2.  1 << 13 instead of 1 << 16 (measured, 2
 * threads, medians of 8 alternating runs of 50): facemesh 0.782 -> 0.746 ms,
 * meet 1.101 -> 1.048; facemesh-detection-short and blazeface (1 and 2
 * threads) and every model at 1 thread unchanged; 1 << 12 no faster. */
#define ELEM_PAR_MIN (1 << 13)
#define ELEM_PAR_TASKS 8

/* True when a float32 member's expression calls a libm function that glibc's
 * libmvec has a vector variant of (the declarations in tcrt_elem.h): the
 * kernel's innermost loop is then marked TFCC_SIMD, which vectorizes it with
 * those variants where tfcc builds with TFCC_VECTOR_MATH (docs/performance.md,
 * "Vector math") and is empty elsewhere. */
static bool uses_vector_math(const CgcElemGroup *grp)
{
    static const char *const fns[] = {"exp(",  "log(", "log1p(", "sin(",  "cos(",
                                      "tanh(", "erf(", "pow(",   "atan2("};
    for (int m = 0; m < grp->n_members; m++) {
        const IrNode *n = grp->members[m];
        const OpInfo *oi = ir_op_info(n->op);
        if (n->out[0].type.dtype != TCRT_F32 || !oi || !oi->c_expr)
            continue;
        for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++)
            for (const char *at = strstr(oi->c_expr, fns[f]); at; at = strstr(at + 1, fns[f]))
                if (at == oi->c_expr || !(isalnum((unsigned char)at[-1]) || at[-1] == '_'))
                    return true;
    }
    return false;
}

/* Index expression "i0 * 12 + i1 * 3 + i2" for the given strides. */
static void index_expr(const CgLoop *loops, int n_loops, int which, char *buf, size_t cap)
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
        cg_append(buf, cap, &len, term);
    }
    if (len == 0)
        cg_append(buf, cap, &len, "0");
}

/* The kernel kname of a large group: its operands in a struct, ELEM_PAR_TASKS
 * tasks (fewer when the outermost loop is shorter) of contiguous ranges of
 * the outermost index, each running kname_part, handed to the runtime's
 * pool (with 1 thread they run in order on the caller). */
static void emit_parallel(CgOut *o, const CgcElemGroup *grp, const char *kname, char names[][16],
                          const char *out_ctype, int64_t outer)
{
    int64_t n_tasks = outer < ELEM_PAR_TASKS ? outer : ELEM_PAR_TASKS;
    int64_t chunk = (outer + n_tasks - 1) / n_tasks;
    n_tasks = (outer + chunk - 1) / chunk;
    cg_printf(o, "typedef struct %s_args {\n", kname);
    o->indent++;
    for (int k = 0; k < grp->n_ext; k++)
        cg_printf(o, "const %s *%s;\n", cg_c_type(ir_value_type(grp->ext[k])->dtype), names[k]);
    cg_printf(o, "%s *y;\n", out_ctype);
    o->indent--;
    cg_printf(o, "} %s_args;\n\n", kname);
    cg_printf(o, "/* Task t: outermost indices [t * %lld, t * %lld + %lld) within [0, %lld). */\n",
              (long long)chunk, (long long)chunk, (long long)chunk, (long long)outer);
    cg_printf(o, "static void %s_task(void *ctx, int64_t t, int tid)\n{\n", kname);
    o->indent++;
    cg_printf(o, "const %s_args *p = ctx;\n", kname);
    cg_printf(o, "int64_t end = t * %lld + %lld < %lld ? t * %lld + %lld : %lld;\n", (long long)chunk,
              (long long)chunk, (long long)outer, (long long)chunk, (long long)chunk, (long long)outer);
    cg_printf(o, "(void)tid;\n");
    cg_printf(o, "%s_part(", kname);
    for (int k = 0; k < grp->n_ext; k++)
        cg_printf(o, "p->%s, ", names[k]);
    cg_printf(o, "p->y, t * %lld, end);\n", (long long)chunk);
    o->indent--;
    cg_printf(o, "}\n\n");
    cg_printf(o, "static void %s(", kname);
    for (int k = 0; k < grp->n_ext; k++)
        cg_printf(o, "const %s *restrict %s, ", cg_c_type(ir_value_type(grp->ext[k])->dtype), names[k]);
    cg_printf(o, "%s *restrict y)\n{\n", out_ctype);
    o->indent++;
    cg_printf(o, "%s_args args = {", kname);
    for (int k = 0; k < grp->n_ext; k++)
        cg_printf(o, "%s, ", names[k]);
    cg_printf(o, "y};\n");
    cg_printf(o, "tcrt_parallel_tasks(%lld, %s_task, &args);\n", (long long)n_tasks, kname);
    o->indent--;
    cg_printf(o, "}\n\n");
}

bool cgc_emit_elem(CgOut *o, const CgcElemGroup *grp, const char *kname, Status *st)
{
    const IrNode *root = grp->members[grp->n_members - 1];
    const IrType *ot = &root->out[0].type;
    const char *who = root->origin ? root->origin : "?";
    if (grp->n_ext > CG_MAX_EXT)
        return st_errorf(st, ST_UNSUPPORTED, "node '%s': fused kernel with %d operands (max %d)", who,
                         grp->n_ext, CG_MAX_EXT);
    for (int m = 0; m < grp->n_members; m++) {
        const IrNode *n = grp->members[m];
        const OpInfo *oi = ir_op_info(n->op);
        if (!oi || !oi->c_expr || n->n_inputs < 1 || n->n_inputs > 3 || n->n_outputs != 1)
            return st_errorf(st, ST_UNSUPPORTED, "node '%s' (%s): no elementwise expression for op %s",
                             n->origin ? n->origin : "?", n->origin_op ? n->origin_op : "?",
                             ir_op_name(n->op));
        if (!cg_c_type(n->out[0].type.dtype))
            return st_errorf(st, ST_UNSUPPORTED, "node '%s': dtype %s not supported by the C backend",
                             n->origin ? n->origin : "?", tcrt_dtype_name(n->out[0].type.dtype));
        if (!ir_shape_eq(&n->out[0].type.shape, &ot->shape))
            return st_errorf(st, ST_ERROR, "node '%s': fused with a node of another shape",
                             n->origin ? n->origin : "?");
    }
    for (int k = 0; k < grp->n_ext; k++)
        if (!cg_c_type(ir_value_type(grp->ext[k])->dtype))
            return st_errorf(st, ST_UNSUPPORTED, "node '%s': operand dtype %s not supported", who,
                             tcrt_dtype_name(ir_value_type(grp->ext[k])->dtype));

    CgLoop loops[IR_MAX_RANK];
    int n_loops = 0;
    if (!cg_elem_loops(grp, who, loops, &n_loops, st))
        return false;

    /* Operand element expressions. */
    char (*ext_elems)[CG_ELEM_LEN] = xx_malloc(sizeof(char[CG_ELEM_LEN]) * ((size_t)grp->n_ext + 1));
    char (*docs)[600] = xx_malloc(sizeof(char[600]) * (size_t)grp->n_members);
    if (!ext_elems || !docs) {
        xx_free(ext_elems);
        xx_free(docs);
        return st_errorf(st, ST_NOMEM, "codegen: out of memory");
    }
    char names[CG_MAX_EXT][16], (*sym)[CG_ELEM_LEN] = xx_malloc(sizeof(char[CG_ELEM_LEN]) * ((size_t)grp->n_ext + 1));
    bool ok = sym != NULL;
    if (!ok)
        st_errorf(st, ST_NOMEM, "codegen: out of memory");
    for (int k = 0; ok && k < grp->n_ext; k++) {
        char idx[256];
        cg_elem_ext_name(k, names[k], sizeof names[k]);
        index_expr(loops, n_loops, k, idx, sizeof idx);
        snprintf(ext_elems[k], sizeof ext_elems[k], "%.15s[%.255s]", names[k], idx);
        snprintf(sym[k], sizeof sym[k], "%.15s", names[k]);
    }
    /* The comment shows each member over parameter names, not indices. */
    for (int m = 0; ok && m < grp->n_members; m++) {
        char e[560];
        ok = cg_elem_member_expr(grp, m, sym, false, "codegen", e, sizeof e, st);
        if (ok)
            snprintf(docs[m], sizeof docs[m], "%s = %s", m == grp->n_members - 1 ? "y" : "", e);
        if (ok && m < grp->n_members - 1)
            snprintf(docs[m], sizeof docs[m], "t%d = %s", m, e);
    }
    if (!ok) {
        xx_free(ext_elems);
        xx_free(docs);
        xx_free(sym);
        return false;
    }

    /* Comment: TF nodes, operand and result types, the statements. */
    char t[IR_MAX_RANK * 24 + 16], text[256];
    cg_printf(o, "/* %s  (TF node%s: ", kname, grp->n_members > 1 ? "s" : "");
    for (int m = 0; m < grp->n_members; m++) {
        const IrNode *n = grp->members[m];
        bool seen = false;
        for (int j = 0; j < m && !seen; j++) /* one entry per TF node */
            seen = grp->members[j]->origin == n->origin ||
                   (grp->members[j]->origin && n->origin &&
                    strcmp(grp->members[j]->origin, n->origin) == 0);
        if (seen)
            continue;
        char origin_op[128];
        cg_comment_text(n->origin ? n->origin : "?", text, sizeof text);
        cg_comment_text(n->origin_op ? n->origin_op : "?", origin_op, sizeof origin_op);
        cg_printf(o, "%s%s (%s)", m ? ", " : "", text, origin_op);
    }
    cg_printf(o, ")\n *   ");
    for (int k = 0; k < grp->n_ext; k++)
        cg_printf(o, "%s%s %s", k ? ", " : "", names[k], cg_type_str(ir_value_type(grp->ext[k]), t, sizeof t));
    cg_printf(o, " -> y %s", cg_type_str(ot, t, sizeof t));
    for (int m = 0; m < grp->n_members; m++) {
        char d[600];
        cg_comment_text(docs[m], d, sizeof d);
        cg_printf(o, "\n *   %s", d);
    }
    cg_printf(o, " */\n");

    /* Signature and loops; a large kernel's loops go in kNNN_part over a
     * range of the outermost index (see emit_parallel). */
    int64_t total = 1;
    for (int l = 0; l < n_loops; l++)
        total *= loops[l].size;
    bool parallel = total >= ELEM_PAR_MIN && n_loops > 0 && loops[0].size > 1;
    cg_printf(o, "static void %s%s(", kname, parallel ? "_part" : "");
    for (int k = 0; k < grp->n_ext; k++)
        cg_printf(o, "const %s *restrict %s, ", cg_c_type(ir_value_type(grp->ext[k])->dtype), names[k]);
    cg_printf(o, "%s *restrict y%s)\n{\n", cg_c_type(ot->dtype),
              parallel ? ", int64_t i0_begin, int64_t i0_end" : "");
    o->indent++;
    const char *ivar = total > INT32_MAX ? "int64_t" : "int";
    bool vec_math = uses_vector_math(grp);
    for (int l = 0; l < n_loops; l++) {
        const char *open = l == n_loops - 1 && grp->n_members > 1 ? " {" : "";
        if (vec_math && l == n_loops - 1)
            cg_printf(o, "TFCC_SIMD\n");
        if (parallel && l == 0)
            cg_printf(o, "for (int64_t i0 = i0_begin; i0 < i0_end; i0++)%s\n", open);
        else
            cg_printf(o, "for (%s i%d = 0; i%d < %lld; i%d++)%s\n", ivar, l, l, (long long)loops[l].size, l,
                      open);
        o->indent++;
    }
    if (n_loops == 0 && grp->n_members > 1) {
        cg_printf(o, "{\n");
        o->indent++;
    }
    char out_idx[256];
    index_expr(loops, n_loops, -1, out_idx, sizeof out_idx);
    for (int m = 0; ok && m < grp->n_members; m++) {
        char e[4096];
        ok = cg_elem_member_expr(grp, m, ext_elems, false, "codegen", e, sizeof e, st);
        if (!ok)
            break;
        if (m < grp->n_members - 1)
            cg_printf(o, "const %s t%d = %s;\n", cg_c_type(grp->members[m]->out[0].type.dtype), m, e);
        else
            cg_printf(o, "y[%s] = %s;\n", out_idx, e);
    }
    if (grp->n_members > 1) {
        o->indent--;
        cg_printf(o, "}\n");
        o->indent -= n_loops > 0 ? n_loops - 1 : 0;
    } else {
        o->indent -= n_loops;
    }
    o->indent--;
    cg_printf(o, "}\n\n");
    if (ok && parallel)
        emit_parallel(o, grp, kname, names, cg_c_type(ot->dtype), loops[0].size);
    xx_free(ext_elems);
    xx_free(docs);
    xx_free(sym);
    return ok;
}
