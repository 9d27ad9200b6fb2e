/* codegen/cuda/cgu_elem.c - CUDA kernels for elementwise groups and copies.
 *
 * A kernel is one fused group (cg_elem_group_build, the same groups as the
 * C and LLVM backends) written as a grid-stride loop over the root's output
 * elements: thread t of the grid handles elements t, t + gridDim*blockDim,
 * ...  The flat index i is the output's (row-major, contiguous); the loop
 * indices i0..iK of the merged loop nest (cg_elem_loops) are recovered from
 * i by division by literal sizes, and every outside operand is read at its
 * broadcast strides (0 along a broadcast dim), all computed at compile time.
 * Each member is one statement: its ir/ops.def C expression with A, B, C
 * replaced by the operand elements (x[...] or an earlier member tN); the
 * prelude (cgu_model.c) gives the math functions and tcrt_elem.h macros a
 * device-side meaning.  Differences from the C backend's statements: an
 * integer POW goes through double explicitly (C's tgmath does it
 * implicitly).  Copies (COPY, ASSIGN) are flat grid-stride loops, typed
 * when the dtypes agree, bytewise otherwise (a reshape between dtypes of one
 * size is not an IR copy, but cost nothing to allow).
 */
#include "codegen/cuda/cgu_int.h"

#include <string.h>


static int64_t grid_for(int64_t total)
{
    int64_t g = (total + CGU_BLOCK - 1) / CGU_BLOCK;
    return g < 1 ? 1 : g > CGU_MAX_GRID ? CGU_MAX_GRID : g;
}

/* "for (IDX i = ...; i < total; i += ...) {" */
static void open_grid_stride(CgOut *o, const char *ivar, int64_t total)
{
    cg_printf(o, "for (%s i = (%s)blockIdx.x * blockDim.x + threadIdx.x; i < %lld; i += (%s)blockDim.x * gridDim.x) {\n",
              ivar, ivar, (long long)total, ivar);
    o->indent++;
}

bool cgu_emit_elem(CgOut *o, const CgcElemGroup *grp, const char *kname, int64_t *grid, Status *st)
{
    const IrNode *root = grp->members[grp->n_members - 1];
    const IrType *ot = &root->out[0].type;
    const char *who = root->origin ? root->origin : "?";
    for (int m = 0; m < grp->n_members; m++) {
        const IrNode *n = grp->members[m];
        const OpInfo *oi = ir_op_info(n->op);
        if (!oi || !oi->c_expr || n->n_inputs < 1 || n->n_inputs > 3 || n->n_outputs != 1)
            return st_errorf(st, ST_UNSUPPORTED, "node '%s' (%s): no elementwise expression for op %s",
                             n->origin ? n->origin : "?", n->origin_op ? n->origin_op : "?", ir_op_name(n->op));
        if (!cg_c_type(n->out[0].type.dtype))
            return st_errorf(st, ST_UNSUPPORTED, "node '%s': dtype %s not supported by the CUDA backend",
                             n->origin ? n->origin : "?", tcrt_dtype_name(n->out[0].type.dtype));
        if (!ir_shape_eq(&n->out[0].type.shape, &ot->shape))
            return st_errorf(st, ST_ERROR, "node '%s': fused with a node of another shape",
                             n->origin ? n->origin : "?");
    }
    for (int k = 0; k < grp->n_ext; k++)
        if (!cg_c_type(ir_value_type(grp->ext[k])->dtype))
            return st_errorf(st, ST_UNSUPPORTED, "node '%s': operand dtype %s not supported by the CUDA backend",
                             who, tcrt_dtype_name(ir_value_type(grp->ext[k])->dtype));
    CgLoop loops[IR_MAX_RANK];
    int n_loops = 0;
    if (!cg_elem_loops(grp, who, loops, &n_loops, st))
        return false;
    int64_t total = 1;
    for (int l = 0; l < n_loops; l++)
        total *= loops[l].size;
    const char *ivar = total > INT32_MAX / 2 ? "long long" : "int";

    char names[CG_MAX_EXT][16];
    char (*elems)[CG_ELEM_LEN] = xx_malloc(sizeof(char[CG_ELEM_LEN]) * ((size_t)grp->n_ext + 1));
    char (*syms)[CG_ELEM_LEN] = xx_malloc(sizeof(char[CG_ELEM_LEN]) * ((size_t)grp->n_ext + 1));
    char *e = xx_malloc(4096);
    if (!elems || !syms || !e) {
        xx_free(elems);
        xx_free(syms);
        xx_free(e);
        return st_errorf(st, ST_NOMEM, "cuda codegen: out of memory");
    }
    for (int k = 0; k < grp->n_ext; k++) {
        cg_elem_ext_name(k, names[k], sizeof names[k]);
        char idx[256];
        size_t len = 0;
        idx[0] = '\0';
        for (int l = 0; l < n_loops; l++) {
            int64_t s = loops[l].in_stride[k];
            if (s == 0)
                continue;
            char term[64];
            if (s == 1)
                snprintf(term, sizeof term, "%si%d", len ? " + " : "", l);
            else
                snprintf(term, sizeof term, "%si%d * %lld", len ? " + " : "", l, (long long)s);
            cg_append(idx, sizeof idx, &len, term);
        }
        if (!len)
            cg_append(idx, sizeof idx, &len, "0");
        snprintf(elems[k], CG_ELEM_LEN, "%.15s[%.255s]", names[k], idx);
        snprintf(syms[k], CG_ELEM_LEN, "%.15s", names[k]);
    }

    cgu_kernel_header(o, kname, grp->members, grp->n_members);
    char t[IR_MAX_RANK * 24 + 16];
    cg_printf(o, "/*   ");
    for (int k = 0; k < grp->n_ext; k++)
        cg_printf(o, "%s%s %s", k ? ", " : "", names[k], cg_type_str(ir_value_type(grp->ext[k]), t, sizeof t));
    cg_printf(o, " -> y %s", cg_type_str(ot, t, sizeof t));
    bool ok = true;
    for (int m = 0; ok && m < grp->n_members; m++) {
        char d[4200], c[4200];
        ok = cg_elem_member_expr(grp, m, syms, true, "cuda codegen", e, 4096, st);
        if (!ok)
            break;
        if (m < grp->n_members - 1)
            snprintf(d, sizeof d, "t%d = %s", m, e);
        else
            snprintf(d, sizeof d, "y = %s", e);
        cg_comment_text(d, c, sizeof c);
        cg_printf(o, "\n *   %s", c);
    }
    cg_printf(o, " */\n");
    cg_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) %s(", CGU_BLOCK, kname);
    for (int k = 0; k < grp->n_ext; k++)
        cg_printf(o, "const %s *__restrict__ %s, ", cg_c_type(ir_value_type(grp->ext[k])->dtype), names[k]);
    cg_printf(o, "%s *__restrict__ y)\n{\n", cg_c_type(ot->dtype));
    o->indent++;
    open_grid_stride(o, ivar, total);
    if (n_loops > 1)
        cg_printf(o, "%s r = i;\n", ivar);
    for (int l = n_loops - 1; l >= 0; l--) {
        if (n_loops == 1)
            cg_printf(o, "const %s i0 = i;\n", ivar);
        else if (l == 0)
            cg_printf(o, "const %s i0 = r;\n", ivar);
        else
            cg_printf(o, "const %s i%d = r %% %lld;\nr /= %lld;\n", ivar, l, (long long)loops[l].size,
                      (long long)loops[l].size);
    }
    for (int m = 0; ok && m < grp->n_members; m++) {
        ok = cg_elem_member_expr(grp, m, elems, true, "cuda codegen", e, 4096, st);
        if (!ok)
            break;
        if (m < grp->n_members - 1)
            cg_printf(o, "const %s t%d = %s;\n", cg_c_type(grp->members[m]->out[0].type.dtype), m, e);
        else
            cg_printf(o, "y[i] = %s;\n", e);
    }
    o->indent--;
    cg_printf(o, "}\n");
    o->indent--;
    cg_printf(o, "}\n\n");
    *grid = grid_for(total);
    xx_free(elems);
    xx_free(syms);
    xx_free(e);
    return ok;
}

bool cgu_emit_copy(CgOut *o, const IrNode *n, IrValue src, const char *kname, int64_t *grid, Status *st)
{
    const IrType *it = ir_value_type(src), *ot = &n->out[0].type;
    int64_t in_bytes = (int64_t)ir_type_bytes(it);
    int64_t out_bytes = (int64_t)ir_type_bytes(ot);
    if (in_bytes != out_bytes)
        return st_errorf(st, ST_ERROR, "node '%s' (%s): copy of %lld bytes into %lld", n->origin ? n->origin : "?",
                         n->origin_op ? n->origin_op : "?", (long long)in_bytes, (long long)out_bytes);
    bool typed = it->dtype == ot->dtype && cg_c_type(ot->dtype);
    const char *ct = typed ? cg_c_type(ot->dtype) : "uint8_t";
    int64_t total = typed ? ir_shape_count(&ot->shape) : out_bytes;
    const char *ivar = total > INT32_MAX / 2 ? "long long" : "int";
    const IrNode *nodes[1] = {n};
    cgu_kernel_header(o, kname, nodes, 1);
    char t1[IR_MAX_RANK * 24 + 16], t2[IR_MAX_RANK * 24 + 16];
    cg_printf(o, "/*   a %s -> y %s (%s copy) */\n", cg_type_str(it, t1, sizeof t1), cg_type_str(ot, t2, sizeof t2),
              typed ? "element" : "byte");
    cg_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const %s *__restrict__ a, %s *__restrict__ y)\n{\n",
              CGU_BLOCK, kname, ct, ct);
    o->indent++;
    open_grid_stride(o, ivar, total);
    cg_printf(o, "y[i] = a[i];\n");
    o->indent--;
    cg_printf(o, "}\n");
    o->indent--;
    cg_printf(o, "}\n\n");
    *grid = grid_for(total);
    return true;
}
