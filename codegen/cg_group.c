/* codegen/cg_group.c - what every backend reads off the memory plan: which
 * nodes are fused into a consumer's loop, which are region parameters or
 * WHILE pass-throughs, the fused elementwise group rooted at a node
 * (members in schedule order, outside operands in first-use order) and its
 * broadcast loop nest, the runtime kernel a node calls, and the API's
 * argument/result identifiers.  The C
 * and LLVM backends both build their kernels from these, so they agree on
 * kernel boundaries and parameter order.
 */
#include "codegen/cg_int.h"

#include <stdio.h>
#include <string.h>

bool cg_is_fused(const IrNode *n)
{
    return n->op != OP_CONST && n->out[0].offset == PASS_OFFSET_FUSED;
}

const char *cg_kernel_name(const IrNode *n)
{
    const OpInfo *oi = ir_op_info(n->op);
    const char *fn = oi ? oi->ref_kernel_name : NULL;
    if (n->out[0].type.dtype != TCRT_F32)
        return fn;
    switch (n->op) {
    case OP_MATMUL:
        return "tcrt_fast_matmul";
    case OP_CONV2D:
        return "tcrt_fast_conv2d";
    case OP_MAXPOOL:
        return "tcrt_fast_maxpool";
    case OP_AVGPOOL:
        return "tcrt_fast_avgpool";
    case OP_REDUCE_SUM:
        return "tcrt_fast_reduce_sum";
    case OP_REDUCE_MAX:
        return "tcrt_fast_reduce_max";
    case OP_PAD:
        return "tcrt_fast_pad";
    case OP_RESIZE:
        return "tcrt_fast_resize";
    case OP_TRANSPOSE:
        return "tcrt_fast_transpose";
    case OP_CONV2D_TRANSPOSE:
        return "tcrt_fast_conv2d_transpose";
    default:
        return fn;
    }
}

bool cg_is_region_arg(const IrGraph *g, const IrNode *n)
{
    return g->parent && n->op == OP_ARG;
}

bool cg_is_passthrough(const IrNode *owner, int region, IrValue v, int i)
{
    return owner && owner->op == OP_WHILE && region == 1 && v.node && v.node->op == OP_ARG && v.index == 0 &&
           v.node->p.i[0] == i;
}

int cg_elem_group_ext(const CgcElemGroup *grp, IrValue v)
{
    for (int k = 0; k < grp->n_ext; k++)
        if (grp->ext[k].node == v.node && grp->ext[k].index == v.index)
            return k;
    return -1;
}

int cg_elem_group_member(const CgcElemGroup *grp, const IrNode *n)
{
    for (int m = 0; m < grp->n_members; m++)
        if (grp->members[m] == n)
            return m;
    return -1;
}

static void add_ext(CgcElemGroup *grp, IrValue v)
{
    if (cg_elem_group_ext(grp, v) < 0)
        grp->ext[grp->n_ext++] = v;
}

bool cg_elem_group_build(const IrGraph *g, const IrNode *root, const int *pos, CgcElemGroup *grp, Status *st)
{
    int cap = g->n_nodes + 1;
    const IrNode **members = xx_malloc(sizeof(IrNode *) * (size_t)cap);
    const IrNode **stack = xx_malloc(sizeof(IrNode *) * (size_t)cap);
    if (!members || !stack) {
        xx_free((void *)members);
        xx_free((void *)stack);
        return st_errorf(st, ST_NOMEM, "codegen: out of memory");
    }
    int n_members = 0, sp = 0;
    stack[sp++] = root;
    while (sp > 0) {
        const IrNode *n = stack[--sp];
        members[n_members++] = n;
        for (int i = 0; i < n->n_inputs; i++) {
            const IrNode *p = n->inputs[i].node;
            if (!cg_is_fused(p))
                continue;
            bool seen = false;
            for (int j = 0; j < n_members && !seen; j++)
                seen = members[j] == p;
            for (int j = 0; j < sp && !seen; j++)
                seen = stack[j] == p;
            if (!seen && sp < cap)
                stack[sp++] = p;
        }
    }
    xx_free((void *)stack);
    /* insertion sort by schedule position (groups are small) */
    for (int i = 1; i < n_members; i++) {
        const IrNode *t = members[i];
        int j = i;
        while (j > 0 && pos[members[j - 1]->id] > pos[t->id]) {
            members[j] = members[j - 1];
            j--;
        }
        members[j] = t;
    }
    int n_ext_max = 0;
    for (int i = 0; i < n_members; i++)
        n_ext_max += members[i]->n_inputs;
    IrValue *ext = xx_malloc(sizeof(IrValue) * ((size_t)n_ext_max + 1));
    if (!ext) {
        xx_free((void *)members);
        return st_errorf(st, ST_NOMEM, "codegen: out of memory");
    }
    grp->members = members;
    grp->n_members = n_members;
    grp->ext = ext;
    grp->n_ext = 0;
    for (int i = 0; i < n_members; i++)
        for (int j = 0; j < members[i]->n_inputs; j++)
            if (!cg_is_fused(members[i]->inputs[j].node))
                add_ext(grp, members[i]->inputs[j]);
    return true;
}

void cg_elem_group_free(CgcElemGroup *grp)
{
    xx_free((void *)grp->members);
    xx_free(grp->ext);
    grp->members = NULL;
    grp->ext = NULL;
    grp->n_members = grp->n_ext = 0;
}

bool cg_elem_loops(const CgcElemGroup *grp, const char *who, CgLoop *loops, int *n_out, Status *st)
{
    const IrType *ot = &grp->members[grp->n_members - 1]->out[0].type;
    if (grp->n_ext > CG_MAX_EXT)
        return st_errorf(st, ST_UNSUPPORTED, "node '%s': fused kernel with %d operands (max %d)", who, grp->n_ext,
                         CG_MAX_EXT);
    /* Broadcast strides per output dim, size-1 output dims dropped. */
    int r = ot->shape.rank, n_loops = 0;
    int64_t out_stride = 1, in_stride[CG_MAX_EXT];
    for (int k = 0; k < grp->n_ext; k++)
        in_stride[k] = 1;
    for (int d = r - 1; d >= 0; d--) {
        int64_t size = ot->shape.dims[d];
        CgLoop lp;
        memset(&lp, 0, sizeof lp);
        lp.size = size;
        lp.out_stride = out_stride;
        for (int k = 0; k < grp->n_ext; k++) {
            const IrShape *s = &ir_value_type(grp->ext[k])->shape;
            if (s->rank > r)
                return st_errorf(st, ST_ERROR, "node '%s': operand %d has rank %d > output rank %d", who, k,
                                 s->rank, r);
            int dk = d - (r - s->rank);
            if (dk < 0)
                continue;
            int64_t dim = s->dims[dk];
            if (dim != size && dim != 1)
                return st_errorf(st, ST_ERROR, "node '%s': operand %d dim %d is %lld, output has %lld", who, k, dk,
                                 (long long)dim, (long long)size);
            lp.in_stride[k] = dim == 1 ? 0 : in_stride[k];
            in_stride[k] *= dim;
        }
        out_stride *= size;
        if (size != 1)
            loops[n_loops++] = lp; /* innermost first for now */
    }
    for (int i = 0; i < n_loops / 2; i++) { /* outermost first */
        CgLoop t = loops[i];
        loops[i] = loops[n_loops - 1 - i];
        loops[n_loops - 1 - i] = t;
    }
    /* Merge loop l with l+1 when every operand is affine across both. */
    for (int l = n_loops - 2; l >= 0; l--) {
        bool ok = loops[l].out_stride == loops[l + 1].out_stride * loops[l + 1].size;
        for (int k = 0; k < grp->n_ext && ok; k++)
            ok = loops[l].in_stride[k] == loops[l + 1].in_stride[k] * loops[l + 1].size;
        if (!ok)
            continue;
        loops[l].size *= loops[l + 1].size;
        loops[l].out_stride = loops[l + 1].out_stride;
        for (int k = 0; k < grp->n_ext; k++)
            loops[l].in_stride[k] = loops[l + 1].in_stride[k];
        memmove(&loops[l + 1], &loops[l + 2], sizeof(CgLoop) * (size_t)(n_loops - l - 2));
        n_loops--;
    }
    *n_out = n_loops;
    return true;
}

void cg_io_idents(CgIo *io, int n)
{
    for (int i = 0; i < n; i++) {
        char base[128];
        snprintf(base, sizeof base, "%s", io[i].name ? io[i].name : "");
        size_t len = strlen(base);
        if (len > 2 && strcmp(base + len - 2, ":0") == 0)
            base[len - 2] = '\0';
        cg_c_ident(base, io[i].ident, sizeof io[i].ident);
    }
    for (int i = 0; i < n; i++) {
        bool dup = false;
        for (int j = 0; j < n; j++)
            if (j != i && strcmp(io[i].ident, io[j].ident) == 0)
                dup = true;
        if (dup) {
            char tmp[160];
            snprintf(tmp, sizeof tmp, "%s_%d", io[i].ident, i);
            snprintf(io[i].ident, sizeof io[i].ident, "%.127s", tmp);
        }
    }
}

/* ---- elementwise expressions ---- */

void cg_append(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > cap)
        n = *len + 1 < cap ? cap - *len - 1 : 0;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
}

static bool is_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9');
}

bool cg_expr_subst(const char *expr, const char *const *elems, int n_elems, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (const char *p = expr; *p;) {
        if (!is_ident_char(*p)) {
            char c[2] = {*p++, 0};
            cg_append(buf, cap, &len, c);
            continue;
        }
        const char *q = p;
        while (is_ident_char(*q))
            q++;
        int which = (q - p == 1 && *p >= 'A' && *p <= 'C') ? *p - 'A' : -1;
        if (which >= 0 && which < n_elems) {
            cg_append(buf, cap, &len, elems[which]);
        } else {
            char tok[256];
            size_t tl = (size_t)(q - p) < sizeof tok - 1 ? (size_t)(q - p) : sizeof tok - 1;
            memcpy(tok, p, tl);
            tok[tl] = '\0';
            cg_append(buf, cap, &len, tok);
        }
        p = q;
    }
    return len + 1 < cap;
}

void cg_elem_ext_name(int k, char *buf, size_t n)
{
    if (k < 26 && k != 24)
        snprintf(buf, n, "%c", 'a' + k);
    else
        snprintf(buf, n, "x%d", k);
}

bool cg_elem_member_expr(const CgcElemGroup *grp, int m, char ext[][CG_ELEM_LEN], bool pow_double, const char *who,
                         char *buf, size_t cap, Status *st)
{
    const IrNode *n = grp->members[m];
    char operands[3][CG_ELEM_LEN];
    const char *ptrs[3];
    for (int k = 0; k < n->n_inputs && k < 3; k++) {
        int mm = cg_elem_group_member(grp, n->inputs[k].node);
        int e = mm >= 0 ? -1 : cg_elem_group_ext(grp, n->inputs[k]);
        if (mm >= 0)
            snprintf(operands[k], sizeof operands[k], "t%d", mm);
        else if (e >= 0)
            snprintf(operands[k], sizeof operands[k], "%s", ext[e]);
        else
            return st_errorf(st, ST_ERROR, "%s: operand %d of node %%%d not in its kernel", who, k, n->id);
        ptrs[k] = operands[k];
    }
    tcrt_dtype dt = n->out[0].type.dtype;
    bool is_float = dt == TCRT_F32 || dt == TCRT_F64;
    if (n->op == OP_CAST) {
        if (dt == TCRT_BOOL)
            snprintf(buf, cap, "((%s) != 0)", ptrs[0]);
        else
            snprintf(buf, cap, "(%s)(%s)", cg_c_type(dt), ptrs[0]);
        return true;
    }
    double e;
    if (n->op == OP_POW && is_float && ir_const_scalar(n->inputs[1], &e) && e == 2.0) {
        snprintf(buf, cap, "((%s) * (%s))", ptrs[0], ptrs[0]);
        return true;
    }
    if (n->op == OP_POW && !is_float && pow_double) {
        snprintf(buf, cap, "pow((double)(%s), (double)(%s))", ptrs[0], ptrs[1]);
        return true;
    }
    if (!cg_expr_subst(ir_op_info(n->op)->c_expr, ptrs, n->n_inputs, buf, cap))
        return st_errorf(st, ST_UNSUPPORTED, "%s: expression of node %%%d too long", who, n->id);
    return true;
}
