/* codegen/llvm/cgl_model.c - the LLVM backend's driver: cgl_emit_object.
 *
 * Builds one LLVM module per graph holding what the C backend's NAME.c and
 * NAME_weights.S hold, with the same symbols and ABI (so NAME.h and
 * NAME_main.c from cgc_emit link against it unchanged):
 *   @NAME_weights      every used CONST at its planned offset, one constant
 *                      byte array, 64-byte aligned, global;
 *   NAME_run_arena     internal, i32 (ptr arena): the top-level kernels in
 *                      schedule order - fused elementwise groups as calls of
 *                      internal loop functions (cgl_elem.c), the other ops
 *                      as runtime kernel calls (cgl_call.c), WHILE/COND as
 *                      basic blocks calling region functions;
 *   NAME_r<R>          internal, i32 (ptr a, ptr w, ptr args): region R of
 *                      the tree (pre-order from 1, as the C backend numbers
 *                      them), its parameter i read through args[i];
 *   NAME_model, NAME_args/results/vars and the API functions (cgl_api.c);
 *                      a VARIABLE is a leaf whose value (the state) lives
 *                      at its arena offset, an ASSIGN a kernel call, and
 *                      the state is loaded and committed by the API.
 * A non-OK kernel status returns at once from any depth.  The module is
 * verified (LLVMVerifyModule), optimized with the new pass manager
 * ("default<O3>") for a target machine made from the triple/cpu/features
 * (PIC, as the system cc links PIE), and written as an object file.
 * Invariants: the module depends only on the graph, the options and the
 * target (node order, no pointers, no time), so two emits give the same
 * bytes; nothing is allocated at run time.
 */
#include "codegen/llvm/cgl_int.h"

#include <string.h>

bool cgl_available(void)
{
    return true;
}

const char *cgl_who(const IrNode *n)
{
    return n && n->origin ? n->origin : "?";
}

LLVMTypeRef cgl_elem_type(CglCtx *c, tcrt_dtype dt)
{
    switch (dt) {
    case TCRT_F32: return c->f32;
    case TCRT_F64: return c->f64;
    case TCRT_I32: case TCRT_U32: return c->i32;
    case TCRT_U8: case TCRT_I8: case TCRT_BOOL: return c->i8;
    case TCRT_I16: case TCRT_U16: case TCRT_F16: case TCRT_BF16: return c->i16;
    case TCRT_I64: case TCRT_U64: return c->i64;
    default: return NULL;
    }
}

LLVMValueRef cgl_i64(CglCtx *c, int64_t v)
{
    return LLVMConstInt(c->i64, (unsigned long long)v, true);
}

LLVMValueRef cgl_i32(CglCtx *c, int v)
{
    return LLVMConstInt(c->i32, (unsigned long long)(int64_t)v, true);
}

void cgl_add_attr(CglCtx *c, LLVMValueRef fn, unsigned idx, const char *name)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(c->ctx, kind, 0));
}

static LLVMValueRef byte_gep(CglCtx *c, LLVMValueRef base, int64_t off)
{
    if (off == 0)
        return base;
    LLVMValueRef i = cgl_i64(c, off);
    return LLVMBuildInBoundsGEP2(c->b, c->i8, base, &i, 1, "");
}

LLVMValueRef cgl_value_ptr(CglCtx *c, CglFn *f, IrValue v)
{
    if (cg_is_region_arg(f->g, v.node)) {
        LLVMValueRef i = cgl_i64(c, v.node->p.i[0]);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(c->b, c->ptr, f->args, &i, 1, "");
        return LLVMBuildLoad2(c->b, c->ptr, p, "");
    }
    return byte_gep(c, v.node->op == OP_CONST ? f->w : f->a, v.node->out[v.index].offset);
}

void cgl_return_if_error(CglCtx *c, CglFn *f, LLVMValueRef s)
{
    LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(c->ctx, f->fn, "fail");
    LLVMBasicBlockRef ok = LLVMAppendBasicBlockInContext(c->ctx, f->fn, "ok");
    LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntNE, s, cgl_i32(c, 0), ""), fail, ok);
    LLVMPositionBuilderAtEnd(c->b, fail);
    LLVMBuildRet(c->b, s);
    LLVMPositionBuilderAtEnd(c->b, ok);
}

/* ---- plan checks, regions ---- */

static bool check_graph(CglCtx *c, const IrGraph *g, int depth)
{
    if (depth > IR_MAX_REGION_DEPTH)
        return st_errorf(c->st, ST_ERROR, "control flow nested more than %d deep (the limit)", IR_MAX_REGION_DEPTH);
    IR_FOR_EACH(g, n) {
        if (cg_is_region_arg(g, n) || cg_is_fused(n))
            continue;
        for (int k = 0; k < n->n_outputs; k++) {
            int64_t limit = n->op == OP_CONST ? c->g->weights_bytes : g->arena_bytes;
            int64_t off = n->out[k].offset;
            if (n->op == OP_CONST && off < 0)
                continue; /* unused constant */
            if (off < 0 || off + (int64_t)ir_type_bytes(&n->out[k].type) > limit)
                return st_errorf(c->st, ST_ERROR,
                                 "node '%s' (%s) output %d: graph is not memory-planned (run the memplan pass "
                                 "before codegen)",
                                 cgl_who(n), ir_op_name(n->op), k);
        }
        for (int k = 0; k < n->n_regions; k++) {
            if (!n->regions[k])
                return st_errorf(c->st, ST_ERROR, "node '%s' (%s): region %d is missing", cgl_who(n),
                                 ir_op_name(n->op), k);
            bool seen = false;
            for (int i = 0; i < c->n_regions && !seen; i++)
                seen = c->regions[i] == n->regions[k];
            if (seen)
                continue;
            if (c->n_regions >= CGL_MAX_REGIONS)
                return st_errorf(c->st, ST_UNSUPPORTED, "more than %d control-flow regions", CGL_MAX_REGIONS);
            c->regions[c->n_regions++] = n->regions[k];
            if (!check_graph(c, n->regions[k], depth + 1))
                return false;
        }
    }
    return true;
}

static int region_number(const CglCtx *c, const IrGraph *r)
{
    for (int i = 0; i < c->n_regions; i++)
        if (c->regions[i] == r)
            return i;
    return -1;
}

/* ---- kernels of one graph ---- */

static bool emit_graph(CglCtx *c, CglFn *f, const char *prefix);

/* memcpy(dst, src, bytes) unless empty. */
static void copy_bytes(CglCtx *c, LLVMValueRef dst, LLVMValueRef src, size_t bytes)
{
    if (bytes > 0)
        LLVMBuildMemCpy(c->b, dst, 1, src, 1, cgl_i64(c, (int64_t)bytes));
}

/* Runs region `index` of region op n and copies its results into n's
 * outputs (a WHILE body's pass-through results stay). */
static void run_region(CglCtx *c, CglFn *f, const IrNode *n, int index, LLVMValueRef ra, LLVMValueRef rargs)
{
    const IrGraph *r = n->regions[index];
    LLVMValueRef fn = c->region_fns[region_number(c, r)];
    LLVMTypeRef ps[3] = {c->ptr, c->ptr, c->ptr};
    LLVMValueRef args[3] = {ra, f->w, rargs};
    LLVMValueRef s = LLVMBuildCall2(c->b, LLVMFunctionType(c->i32, ps, 3, false), fn, args, 3, "");
    cgl_return_if_error(c, f, s);
    if (n->op == OP_WHILE && index == 0)
        return;
    for (int i = 0; i < r->n_fetches; i++) {
        IrValue v = r->fetches[i].value;
        if (cg_is_passthrough(n, index, v, i))
            continue;
        copy_bytes(c, cgl_value_ptr(c, f, (IrValue){(IrNode *)n, i}), byte_gep(c, ra, v.node->out[v.index].offset),
                   ir_type_bytes(&n->out[i].type));
    }
}

/* A WHILE or COND (docs/control-flow.md), as the C backend's block. */
static bool emit_region_op(CglCtx *c, CglFn *f, const IrNode *n)
{
    bool is_while = n->op == OP_WHILE;
    int first = is_while ? 0 : 1;
    int n_params = n->n_inputs - first;
    LLVMValueRef ra = byte_gep(c, f->a, n->workspace_offset);
    if (is_while)
        for (int i = 0; i < n->n_inputs; i++) {
            IrValue src = n->inputs[i];
            bool same = !cg_is_region_arg(f->g, src.node) && src.node->op != OP_CONST &&
                        src.node->out[src.index].offset == n->out[i].offset;
            if (!same)
                copy_bytes(c, cgl_value_ptr(c, f, (IrValue){(IrNode *)n, i}), cgl_value_ptr(c, f, src),
                           ir_type_bytes(&n->out[i].type));
        }
    LLVMValueRef rargs = LLVMConstNull(c->ptr);
    if (n_params > 0) {
        LLVMBasicBlockRef cur = LLVMGetInsertBlock(c->b);
        /* in the entry block, before its branch (emit_graph made it) */
        LLVMPositionBuilderBefore(c->b, LLVMGetBasicBlockTerminator(LLVMGetEntryBasicBlock(f->fn)));
        rargs = LLVMBuildAlloca(c->b, LLVMArrayType2(c->ptr, (uint64_t)n_params), "rargs");
        LLVMPositionBuilderAtEnd(c->b, cur);
        for (int i = 0; i < n_params; i++) {
            LLVMValueRef p = is_while ? cgl_value_ptr(c, f, (IrValue){(IrNode *)n, i})
                                      : cgl_value_ptr(c, f, n->inputs[first + i]);
            LLVMValueRef idx = cgl_i64(c, i);
            LLVMBuildStore(c->b, p, LLVMBuildInBoundsGEP2(c->b, c->ptr, rargs, &idx, 1, ""));
        }
    }
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, f->fn, "region.done");
    if (is_while) {
        LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(c->ctx, f->fn, "while");
        LLVMBuildBr(c->b, loop);
        LLVMPositionBuilderAtEnd(c->b, loop);
        run_region(c, f, n, 0, ra, rargs);
        IrValue cv = n->regions[0]->fetches[0].value;
        LLVMValueRef flag = LLVMBuildLoad2(c->b, c->i8, byte_gep(c, ra, cv.node->out[cv.index].offset), "");
        LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, f->fn, "while.body");
        LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntNE, flag, LLVMConstInt(c->i8, 0, false), ""), body, done);
        LLVMPositionBuilderAtEnd(c->b, body);
        run_region(c, f, n, 1, ra, rargs);
        LLVMBuildBr(c->b, loop);
    } else {
        const IrType *st = ir_value_type(n->inputs[0]);
        LLVMValueRef sp = cgl_value_ptr(c, f, n->inputs[0]);
        LLVMBasicBlockRef *bbs = xx_malloc(sizeof(LLVMBasicBlockRef) * (size_t)(n->n_regions + 1));
        if (!bbs)
            return st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
        for (int k = 0; k < n->n_regions; k++)
            bbs[k] = LLVMAppendBasicBlockInContext(c->ctx, f->fn, "branch");
        if (st->dtype == TCRT_BOOL) {
            LLVMValueRef v = LLVMBuildLoad2(c->b, c->i8, sp, "");
            LLVMBuildCondBr(c->b, LLVMBuildICmp(c->b, LLVMIntNE, v, LLVMConstInt(c->i8, 0, false), ""), bbs[0],
                            bbs[1 < n->n_regions ? 1 : 0]);
        } else {
            LLVMValueRef v = LLVMBuildLoad2(c->b, c->i32, sp, "");
            LLVMValueRef sw = LLVMBuildSwitch(c->b, v, bbs[n->n_regions - 1], (unsigned)n->n_regions);
            for (int k = 0; k + 1 < n->n_regions; k++)
                LLVMAddCase(sw, cgl_i32(c, k), bbs[k]);
        }
        for (int k = 0; k < n->n_regions; k++) {
            LLVMPositionBuilderAtEnd(c->b, bbs[k]);
            run_region(c, f, n, k, ra, rargs);
            LLVMBuildBr(c->b, done);
        }
        xx_free(bbs);
    }
    LLVMPositionBuilderAtEnd(c->b, done);
    return true;
}

/* Creates f->fn's entry block with the descriptor allocas, then emits the
 * calls of f->g's kernels and `ret 0`. */
static bool emit_graph(CglCtx *c, CglFn *f, const char *prefix)
{
    const IrGraph *g = f->g;
    int max_in = 1, max_out = 2, n_ids = g->next_id;
    IR_FOR_EACH(g, n) {
        if (n->id >= n_ids)
            n_ids = n->id + 1;
        if (ir_op_info(n->op)->kind != K_ELEM && ir_op_info(n->op)->kind != K_LEAF) {
            max_in = n->n_inputs > max_in ? n->n_inputs : max_in;
            max_out = n->n_outputs + 1 > max_out ? n->n_outputs + 1 : max_out;
        }
    }
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->ctx, f->fn, "entry");
    LLVMPositionBuilderAtEnd(c->b, entry);
    f->in_desc = LLVMBuildAlloca(c->b, LLVMArrayType2(c->tensor_t, (uint64_t)max_in), "in");
    f->out_desc = LLVMBuildAlloca(c->b, LLVMArrayType2(c->tensor_t, (uint64_t)max_out), "out");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(c->ctx, f->fn, "body");
    LLVMBuildBr(c->b, body);
    LLVMPositionBuilderAtEnd(c->b, body);
    int *pos = xx_malloc(sizeof(int) * ((size_t)n_ids + 1));
    if (!pos)
        return st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
    int p = 0;
    IR_FOR_EACH(g, n) {
        pos[n->id] = p++;
    }
    bool ok = true;
    /* --profile hooks around the top-level kernels (docs/profiling.md) */
    bool prof = f->fn == c->run_arena;
    LLVMTypeRef pb_t = LLVMFunctionType(c->i64, NULL, 0, false);
    LLVMTypeRef pe_args[2] = {c->i32, c->i64};
    LLVMTypeRef pe_t = LLVMFunctionType(c->void_t, pe_args, 2, false);
    LLVMValueRef pb = NULL, pe = NULL;
    if (prof) {
        pb = LLVMGetNamedFunction(c->mod, "tcrt_prof_begin");
        pb = pb ? pb : LLVMAddFunction(c->mod, "tcrt_prof_begin", pb_t);
        pe = LLVMGetNamedFunction(c->mod, "tcrt_prof_end");
        pe = pe ? pe : LLVMAddFunction(c->mod, "tcrt_prof_end", pe_t);
        xx_free(c->kernels);
        c->n_kernels = 0;
        c->kernels = xx_malloc(sizeof *c->kernels * ((size_t)g->n_nodes + 1));
        if (!c->kernels) {
            xx_free(pos);
            return st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
        }
    }
    IR_FOR_EACH(g, n) {
        const OpInfo *oi = ir_op_info(n->op);
        if (!ok || oi->kind == K_LEAF || cg_is_fused(n))
            continue;
        LLVMValueRef t0 = NULL;
        int ki = -1;
        if (prof) { /* its name: an elementwise group's function name (below), else k<NNN>_<op> */
            ki = c->n_kernels++;
            c->kernels[ki].node = n;
            snprintf(c->kernels[ki].name, sizeof c->kernels[ki].name, "k%03d_%s", pos[n->id], oi->name);
            t0 = LLVMBuildCall2(c->b, pb_t, pb, NULL, 0, "prof.t0");
        }
        if (n->n_regions > 0) {
            ok = emit_region_op(c, f, n);
        } else if (oi->kind == K_ELEM) {
            CgcElemGroup grp;
            memset(&grp, 0, sizeof grp);
            ok = cg_elem_group_build(g, n, pos, &grp, c->st);
            if (!ok)
                break;
            char name[96];
            size_t len = (size_t)snprintf(name, sizeof name, "%sk%03d", prefix, pos[n->id]);
            for (int i = 0; i < grp.n_members && len + 16 < sizeof name; i++)
                len += (size_t)snprintf(name + len, sizeof name - len, "_%s", ir_op_name(grp.members[i]->op));
            if (prof)
                snprintf(c->kernels[ki].name, sizeof c->kernels[ki].name, "%s", name);
            LLVMBasicBlockRef cur = LLVMGetInsertBlock(c->b);
            LLVMValueRef kfn = cgl_emit_elem(c, &grp, name);
            LLVMPositionBuilderAtEnd(c->b, cur);
            if (kfn) {
                LLVMValueRef *args = xx_malloc(sizeof(LLVMValueRef) * ((size_t)grp.n_ext + 1));
                if (!args) {
                    ok = st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
                } else {
                    for (int k = 0; k < grp.n_ext; k++)
                        args[k] = cgl_value_ptr(c, f, grp.ext[k]);
                    args[grp.n_ext] = cgl_value_ptr(c, f, (IrValue){(IrNode *)n, 0});
                    LLVMBuildCall2(c->b, LLVMGlobalGetValueType(kfn), kfn, args, (unsigned)grp.n_ext + 1, "");
                    xx_free(args);
                }
            } else {
                ok = false;
            }
            cg_elem_group_free(&grp);
        } else {
            ok = cgl_emit_call(c, f, n);
        }
        if (ok && prof) {
            LLVMValueRef pa[2] = {cgl_i32(c, ki), t0};
            LLVMBuildCall2(c->b, pe_t, pe, pa, 2, "");
        }
    }
    xx_free(pos);
    if (ok)
        LLVMBuildRet(c->b, cgl_i32(c, 0));
    return ok;
}

/* ---- module ---- */

static void init_types(CglCtx *c)
{
    LLVMContextRef x = c->ctx;
    c->i1 = LLVMInt1TypeInContext(x);
    c->i8 = LLVMInt8TypeInContext(x);
    c->i16 = LLVMInt16TypeInContext(x);
    c->i32 = LLVMInt32TypeInContext(x);
    c->i64 = LLVMInt64TypeInContext(x);
    c->f32 = LLVMFloatTypeInContext(x);
    c->f64 = LLVMDoubleTypeInContext(x);
    c->ptr = LLVMPointerTypeInContext(x, 0);
    c->void_t = LLVMVoidTypeInContext(x);
    LLVMTypeRef dims = LLVMArrayType2(c->i64, TCRT_MAX_RANK);
    c->tensor_t = LLVMStructCreateNamed(x, "tcrt_tensor");
    LLVMTypeRef tf[4] = {c->ptr, c->i32, c->i32, dims};
    LLVMStructSetBody(c->tensor_t, tf, 4, false);
    c->io_t = LLVMStructCreateNamed(x, "tcrt_io");
    LLVMTypeRef iof[6] = {c->ptr, c->i32, c->i32, dims, c->i64, c->i64};
    LLVMStructSetBody(c->io_t, iof, 6, false);
    c->model_t = LLVMStructCreateNamed(x, "tcrt_model");
    /* name, n_args, args, n_results, results, arena_bytes, weights_bytes,
     * run, n_vars, vars, weights, n_kernels, kernels (runtime/include/tcrt.h) */
    LLVMTypeRef mf[13] = {c->ptr, c->i32, c->ptr, c->i32, c->ptr, c->i64, c->i64,
                          c->ptr, c->i32, c->ptr, c->ptr, c->i32, c->ptr};
    LLVMStructSetBody(c->model_t, mf, 13, false);
    c->params_t = LLVMStructCreateNamed(x, "tcrt_params");
    LLVMTypeRef pf[2] = {LLVMArrayType2(c->i64, TCRT_MAX_IPARAM), LLVMArrayType2(c->f64, TCRT_MAX_FPARAM)};
    LLVMStructSetBody(c->params_t, pf, 2, false);
    LLVMTypeRef kp[5] = {c->ptr, c->i32, c->ptr, c->i32, c->ptr};
    c->kernel_fn_t = LLVMFunctionType(c->i32, kp, 5, false);
}

/* @NAME_weights: every used CONST of the tree at its offset, zero padded. */
static bool emit_weights(CglCtx *c)
{
    int64_t size = c->g->weights_bytes;
    char *buf = xx_malloc((size_t)size + 1);
    if (!buf)
        return st_errorf(c->st, ST_NOMEM, "codegen: out of memory (%lld bytes of weights)", (long long)size);
    memset(buf, 0, (size_t)size + 1);
    for (int i = -1; i < c->n_regions; i++) {
        const IrGraph *g = i < 0 ? c->g : c->regions[i];
        IR_FOR_EACH(g, n) {
            if (n->op != OP_CONST || n->out[0].offset < 0)
                continue;
            int64_t bytes = (int64_t)ir_type_bytes(&n->out[0].type);
            if (n->out[0].offset + bytes > size || (bytes > 0 && (!n->data || (int64_t)n->data_bytes < bytes))) {
                xx_free(buf);
                return st_errorf(c->st, ST_ERROR, "constant '%s': bad weights offset %lld (%lld bytes)", cgl_who(n),
                                 (long long)n->out[0].offset, (long long)bytes);
            }
            if (bytes > 0)
                memcpy(buf + n->out[0].offset, n->data, (size_t)bytes);
        }
    }
    char sym[160];
    snprintf(sym, sizeof sym, "%s_weights", c->name);
    LLVMValueRef init = LLVMConstStringInContext2(c->ctx, buf, (size_t)size, true);
    xx_free(buf);
    c->weights = LLVMAddGlobal(c->mod, LLVMTypeOf(init), sym);
    LLVMSetInitializer(c->weights, init);
    LLVMSetGlobalConstant(c->weights, true);
    LLVMSetAlignment(c->weights, 64);
    return true;
}

static bool emit_functions(CglCtx *c)
{
    LLVMTypeRef rp[3] = {c->ptr, c->ptr, c->ptr};
    LLVMTypeRef rt = LLVMFunctionType(c->i32, rp, 3, false);
    for (int i = 0; i < c->n_regions; i++) {
        char nm[160];
        snprintf(nm, sizeof nm, "%s_r%d", c->name, i + 1);
        c->region_fns[i] = LLVMAddFunction(c->mod, nm, rt);
        LLVMSetLinkage(c->region_fns[i], LLVMInternalLinkage);
        cgl_add_attr(c, c->region_fns[i], LLVMAttributeFunctionIndex, "nounwind");
    }
    char nm[160];
    snprintf(nm, sizeof nm, "%s_run_arena", c->name);
    c->run_arena = LLVMAddFunction(c->mod, nm, LLVMFunctionType(c->i32, &c->ptr, 1, false));
    LLVMSetLinkage(c->run_arena, LLVMInternalLinkage);
    cgl_add_attr(c, c->run_arena, LLVMAttributeFunctionIndex, "nounwind");
    CglFn f = {.g = c->g, .fn = c->run_arena, .a = LLVMGetParam(c->run_arena, 0), .w = c->weights};
    if (!emit_graph(c, &f, ""))
        return false;
    for (int i = 0; i < c->n_regions; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "r%d_", i + 1);
        LLVMValueRef fn = c->region_fns[i];
        CglFn rf = {.g = c->regions[i], .fn = fn, .a = LLVMGetParam(fn, 0), .w = LLVMGetParam(fn, 1),
                    .args = LLVMGetParam(fn, 2)};
        if (!emit_graph(c, &rf, prefix))
            return false;
    }
    return true;
}

static void init_targets(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeAArch64TargetInfo();
    LLVMInitializeAArch64Target();
    LLVMInitializeAArch64TargetMC();
    LLVMInitializeAArch64AsmPrinter();
}

static bool is_c_ident(const char *s)
{
    if (!s || !s[0] || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

/* Whether an x86-64 cpu (features: "native"'s resolved ones, or the
 * caller's) has AVX2, which libmvec's 8-lane variants (vector_math) need;
 * by name only the x86-64-v3 and -v4 levels, so any other --cpu keeps
 * scalar libm calls. */
static bool has_avx2(const char *cpu, const char *features)
{
    if (strstr(features, "+avx2"))
        return true;
    if (strstr(features, "-avx2"))
        return false;
    return !strcmp(cpu, "x86-64-v3") || !strcmp(cpu, "x86-64-v4");
}

bool cgl_emit_object(const IrGraph *g, const CgOptions *o, const CgLlvmTarget *t, const char *obj_path,
                     Status *st)
{
    if (!st_ok(st))
        return false;
    if (!g || !o || !t || !t->triple || !obj_path)
        return st_errorf(st, ST_ERROR, "cgl_emit_object: missing graph, options, target or path");
    if (!is_c_ident(o->name) || strlen(o->name) > 64)
        return st_errorf(st, ST_ERROR, "model name '%s' is not a C identifier (at most 64 chars)",
                         o->name ? o->name : "");
    IR_FOR_EACH(g, n)
    { /* --data-parallel: MPI_Allreduce is linked only into the C backend's host executable */
        if (n->op == OP_ALLREDUCE)
            return st_errorf(st, ST_UNSUPPORTED,
                             "--backend llvm: node '%s' is an allreduce (--data-parallel); only --backend c "
                             "(host executable) links MPI",
                             n->origin ? n->origin : "?");
    }
    if (g->n_syms > 0)
        return st_errorf(st, ST_UNSUPPORTED,
                         "--backend llvm: the graph has data-dependent sizes (NonMaxSuppression, Where, ...: "
                         "ir/dyn.c), which only --backend c supports so far");
    init_targets();
    char *err = NULL;
    LLVMTargetRef target;
    if (LLVMGetTargetFromTriple(t->triple, &target, &err)) {
        st_errorf(st, ST_UNSUPPORTED, "--backend llvm: target '%s': %s", t->triple, err ? err : "unknown");
        LLVMDisposeMessage(err);
        return false;
    }
    const char *cpu = t->cpu && t->cpu[0] ? t->cpu : "generic";
    const char *features = t->features ? t->features : "";
    /* "native" (gcc's -march=native): this machine's CPU and features */
    char *host_cpu = NULL, *host_features = NULL;
    if (strcmp(cpu, "native") == 0) {
        host_cpu = LLVMGetHostCPUName();
        cpu = host_cpu;
        if (!features[0]) {
            host_features = LLVMGetHostCPUFeatures();
            features = host_features;
        }
    }
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, t->triple, cpu, features, LLVMCodeGenLevelAggressive,
                                                      LLVMRelocPIC, LLVMCodeModelDefault);
    bool vector_math = t->vector_math && !strncmp(t->triple, "x86_64", 6) && has_avx2(cpu, features);
    LLVMDisposeMessage(host_cpu);
    LLVMDisposeMessage(host_features);
    if (!tm)
        return st_errorf(st, ST_UNSUPPORTED, "--backend llvm: no target machine for '%s' cpu '%s'", t->triple,
                         t->cpu ? t->cpu : "generic");
    CglCtx *c = xx_malloc(sizeof *c);
    if (!c) {
        LLVMDisposeTargetMachine(tm);
        return st_errorf(st, ST_NOMEM, "codegen: out of memory");
    }
    memset(c, 0, sizeof *c);
    c->g = g;
    c->name = o->name;
    c->st = st;
    c->vector_math = vector_math;
    c->ctx = LLVMContextCreate();
    c->mod = LLVMModuleCreateWithNameInContext(o->name, c->ctx);
    c->b = LLVMCreateBuilderInContext(c->ctx);
    LLVMSetTarget(c->mod, t->triple);
    c->td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(c->mod, c->td);
    init_types(c);
    bool ok = check_graph(c, g, 1) && emit_weights(c) && emit_functions(c) && cgl_emit_api(c);
    if (ok)
        cgl_keep_vector_math(c);
    if (ok && LLVMVerifyModule(c->mod, LLVMReturnStatusAction, &err)) {
        ok = st_errorf(st, ST_ERROR, "--backend llvm: internal error, invalid LLVM module: %.400s",
                       err ? err : "?");
    }
    LLVMDisposeMessage(err);
    err = NULL;
    if (ok) {
        LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
        LLVMErrorRef e = LLVMRunPasses(c->mod, "default<O3>", tm, po);
        LLVMDisposePassBuilderOptions(po);
        if (e) {
            char *m = LLVMGetErrorMessage(e);
            ok = st_errorf(st, ST_ERROR, "--backend llvm: optimization failed: %s", m);
            LLVMDisposeErrorMessage(m);
        }
    }
    if (ok && LLVMTargetMachineEmitToFile(tm, c->mod, (char *)obj_path, LLVMObjectFile, &err)) {
        ok = st_errorf(st, ST_IO, "cannot write '%s': %s", obj_path, err ? err : "?");
    }
    LLVMDisposeMessage(err);
    LLVMDisposeBuilder(c->b);
    LLVMDisposeModule(c->mod);
    LLVMDisposeTargetData(c->td);
    LLVMContextDispose(c->ctx);
    LLVMDisposeTargetMachine(tm);
    xx_free(c->kernels);
    xx_free(c);
    return ok;
}
