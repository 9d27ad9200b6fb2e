/* codegen/llvm/cgl_api.c - the LLVM backend's descriptor globals and the API
 * of NAME.h, with the C backend's symbols and ABI (codegen/c/emit_model.c):
 *   NAME_args, NAME_results   internal constant tcrt_io arrays (name, dtype,
 *                             rank, dims, bytes, arena offset);
 *   NAME_model                the global tcrt_model, run = NAME_run_arena;
 *   NAME_size/new/free/init/run/signature/arg/result/set_arg and the typed
 *   accessors NAME_arg_<ident>, NAME_arg<i>, NAME_result_<ident>,
 *   NAME_result<i> (idents made as the C backend makes them).
 * struct NAME is { uint8_t *arena; int owns_arena; }; NAME_new uses malloc
 * and aligned_alloc(64, arena rounded up to 64), as the C code does.
 */
#include "codegen/llvm/cgl_int.h"

#include <string.h>

static LLVMValueRef cstring(CglCtx *c, const char *s)
{
    LLVMValueRef init = LLVMConstStringInContext2(c->ctx, s, strlen(s), false);
    LLVMValueRef gv = LLVMAddGlobal(c->mod, LLVMTypeOf(init), "str");
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, true);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddr(gv, true);
    return gv;
}

static LLVMValueRef io_table(CglCtx *c, const char *what, const CgIo *io, int n)
{
    if (n == 0)
        return LLVMConstNull(c->ptr);
    LLVMValueRef *rows = xx_malloc(sizeof(LLVMValueRef) * (size_t)n);
    if (!rows)
        return NULL;
    for (int i = 0; i < n; i++) {
        const IrType *t = ir_value_type(io[i].value);
        LLVMValueRef dv[TCRT_MAX_RANK];
        for (int d = 0; d < TCRT_MAX_RANK; d++)
            dv[d] = cgl_i64(c, d < t->shape.rank ? t->shape.dims[d] : 0);
        LLVMValueRef f[6] = {cstring(c, io[i].name ? io[i].name : ""), cgl_i32(c, (int)t->dtype),
                             cgl_i32(c, t->shape.rank), LLVMConstArray2(c->i64, dv, TCRT_MAX_RANK),
                             cgl_i64(c, (int64_t)ir_type_bytes(t)),
                             cgl_i64(c, io[i].value.node->out[io[i].value.index].offset)};
        rows[i] = LLVMConstNamedStruct(c->io_t, f, 6);
    }
    LLVMValueRef init = LLVMConstArray2(c->io_t, rows, (uint64_t)n);
    xx_free(rows);
    char nm[160];
    snprintf(nm, sizeof nm, "%s_%s", c->name, what);
    LLVMValueRef gv = LLVMAddGlobal(c->mod, LLVMTypeOf(init), nm);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, true);
    LLVMSetLinkage(gv, LLVMInternalLinkage);
    return gv;
}

/* A new external function NAME_<suffix> with its entry block, builder at its end. */
static LLVMValueRef api_fn(CglCtx *c, const char *suffix, LLVMTypeRef ret, LLVMTypeRef *ps, unsigned n)
{
    char nm[300];
    snprintf(nm, sizeof nm, "%s_%s", c->name, suffix);
    LLVMValueRef fn = LLVMAddFunction(c->mod, nm, LLVMFunctionType(ret, ps, n, false));
    cgl_add_attr(c, fn, LLVMAttributeFunctionIndex, "nounwind");
    LLVMPositionBuilderAtEnd(c->b, LLVMAppendBasicBlockInContext(c->ctx, fn, "entry"));
    return fn;
}

static LLVMValueRef libc_fn(CglCtx *c, const char *name, LLVMTypeRef ret, LLVMTypeRef *ps, unsigned n)
{
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
    if (!fn)
        fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(ret, ps, n, false));
    return fn;
}

/* if (cond) return v; continues in a new block of fn. */
static void return_if(CglCtx *c, LLVMValueRef fn, LLVMValueRef cond, LLVMValueRef v)
{
    LLVMBasicBlockRef yes = LLVMAppendBasicBlockInContext(c->ctx, fn, "ret");
    LLVMBasicBlockRef no = LLVMAppendBasicBlockInContext(c->ctx, fn, "cont");
    LLVMBuildCondBr(c->b, cond, yes, no);
    LLVMPositionBuilderAtEnd(c->b, yes);
    if (v)
        LLVMBuildRet(c->b, v);
    else
        LLVMBuildRetVoid(c->b);
    LLVMPositionBuilderAtEnd(c->b, no);
}

static LLVMValueRef is_null(CglCtx *c, LLVMValueRef p)
{
    return LLVMBuildICmp(c->b, LLVMIntEQ, p, LLVMConstNull(c->ptr), "");
}

/* NAME_arg / NAME_result: m->arena + table[i].offset, NULL when out of range. */
static LLVMValueRef io_getter(CglCtx *c, LLVMTypeRef st, const char *what, LLVMValueRef table, int n)
{
    LLVMTypeRef ps[2] = {c->ptr, c->i32};
    LLVMValueRef fn = api_fn(c, what, c->ptr, ps, 2);
    LLVMValueRef m = LLVMGetParam(fn, 0), i = LLVMGetParam(fn, 1), null = LLVMConstNull(c->ptr);
    return_if(c, fn, is_null(c, m), null);
    LLVMValueRef arena = LLVMBuildLoad2(c->b, c->ptr, LLVMBuildStructGEP2(c->b, st, m, 0, ""), "");
    return_if(c, fn, is_null(c, arena), null);
    LLVMValueRef bad = LLVMBuildOr(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, i, cgl_i32(c, 0), ""),
                                   LLVMBuildICmp(c->b, LLVMIntSGE, i, cgl_i32(c, n), ""), "");
    return_if(c, fn, bad, null);
    if (n == 0) {
        LLVMBuildRet(c->b, null);
        return fn;
    }
    LLVMValueRef idx[2] = {LLVMBuildSExt(c->b, i, c->i64, ""), cgl_i32(c, 5)};
    LLVMValueRef off = LLVMBuildLoad2(c->b, c->i64, LLVMBuildInBoundsGEP2(c->b, c->io_t, table, idx, 2, ""), "");
    LLVMBuildRet(c->b, LLVMBuildInBoundsGEP2(c->b, c->i8, arena, &off, 1, ""));
    return fn;
}

/* NAME_<prefix><suffix>(m) { return NAME_<getter>(m, i); } */
static void accessor(CglCtx *c, LLVMValueRef getter, const char *prefix, const char *suffix, int i)
{
    char nm[300];
    snprintf(nm, sizeof nm, "%s%s", prefix, suffix);
    LLVMValueRef fn = api_fn(c, nm, c->ptr, &c->ptr, 1);
    LLVMValueRef args[2] = {LLVMGetParam(fn, 0), cgl_i32(c, i)};
    LLVMBuildRet(c->b, LLVMBuildCall2(c->b, LLVMGlobalGetValueType(getter), getter, args, 2, ""));
}

bool cgl_emit_api(CglCtx *c)
{
    const IrGraph *g = c->g;
    int n_args = g->n_feeds, n_results = g->n_fetches;
    CgIo *args = xx_malloc(sizeof(CgIo) * ((size_t)n_args + 1));
    CgIo *results = xx_malloc(sizeof(CgIo) * ((size_t)n_results + 1));
    if (!args || !results) {
        xx_free(args);
        xx_free(results);
        return st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
    }
    for (int k = 0; k < n_args; k++)
        args[k] = (CgIo){g->feeds[k].name, {g->feeds[k].arg, 0}, ""};
    for (int k = 0; k < n_results; k++)
        results[k] = (CgIo){g->fetches[k].name, g->fetches[k].value, ""};
    cg_io_idents(args, n_args);
    cg_io_idents(results, n_results);
    LLVMValueRef targs = io_table(c, "args", args, n_args);
    LLVMValueRef tres = io_table(c, "results", results, n_results);
    if (!targs || !tres) {
        xx_free(args);
        xx_free(results);
        return st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
    }

    /* NAME_model */
    LLVMValueRef mf[11] = {cstring(c, c->name), cgl_i32(c, n_args), targs, cgl_i32(c, n_results), tres,
                           cgl_i64(c, g->arena_bytes), cgl_i64(c, g->weights_bytes), c->run_arena,
                           cgl_i32(c, 0), LLVMConstNull(c->ptr), c->weights};
    char nm[160];
    snprintf(nm, sizeof nm, "%s_model", c->name);
    LLVMValueRef model = LLVMAddGlobal(c->mod, c->model_t, nm);
    LLVMSetInitializer(model, LLVMConstNamedStruct(c->model_t, mf, 11));
    LLVMSetGlobalConstant(model, true);

    /* struct NAME { uint8_t *arena; int owns_arena; } */
    LLVMTypeRef sf[2] = {c->ptr, c->i32};
    LLVMTypeRef st = LLVMStructTypeInContext(c->ctx, sf, 2, false);
    LLVMBuilderRef b = c->b;
    LLVMTypeRef p1[1] = {c->ptr}, p2[2] = {c->i64, c->i64};
    LLVMValueRef fmalloc = libc_fn(c, "malloc", c->ptr, p2, 1);
    LLVMValueRef faligned = libc_fn(c, "aligned_alloc", c->ptr, p2, 2);
    LLVMValueRef ffree = libc_fn(c, "free", c->void_t, p1, 1);
    LLVMValueRef null = LLVMConstNull(c->ptr);

    LLVMValueRef fn = api_fn(c, "size", c->i64, NULL, 0);
    LLVMBuildRet(b, cgl_i64(c, (int64_t)LLVMABISizeOfType(c->td, st)));

    fn = api_fn(c, "new", c->ptr, NULL, 0);
    LLVMValueRef sz = cgl_i64(c, (int64_t)LLVMABISizeOfType(c->td, st));
    LLVMValueRef m = LLVMBuildCall2(b, LLVMGlobalGetValueType(fmalloc), fmalloc, &sz, 1, "");
    return_if(c, fn, is_null(c, m), null);
    int64_t ab = g->arena_bytes < 64 ? 64 : (g->arena_bytes + 63) / 64 * 64;
    LLVMValueRef aa[2] = {cgl_i64(c, 64), cgl_i64(c, ab)};
    LLVMValueRef arena = LLVMBuildCall2(b, LLVMGlobalGetValueType(faligned), faligned, aa, 2, "");
    {
        LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(c->ctx, fn, "nomem");
        LLVMBasicBlockRef good = LLVMAppendBasicBlockInContext(c->ctx, fn, "ok");
        LLVMBuildCondBr(b, is_null(c, arena), bad, good);
        LLVMPositionBuilderAtEnd(b, bad);
        LLVMBuildCall2(b, LLVMGlobalGetValueType(ffree), ffree, &m, 1, "");
        LLVMBuildRet(b, null);
        LLVMPositionBuilderAtEnd(b, good);
    }
    LLVMBuildStore(b, arena, LLVMBuildStructGEP2(b, st, m, 0, ""));
    LLVMBuildStore(b, cgl_i32(c, 1), LLVMBuildStructGEP2(b, st, m, 1, ""));
    LLVMBuildRet(b, m);

    fn = api_fn(c, "free", c->void_t, &c->ptr, 1);
    m = LLVMGetParam(fn, 0);
    return_if(c, fn, is_null(c, m), NULL);
    LLVMValueRef owns = LLVMBuildLoad2(b, c->i32, LLVMBuildStructGEP2(b, st, m, 1, ""), "");
    {
        LLVMBasicBlockRef fa = LLVMAppendBasicBlockInContext(c->ctx, fn, "free_arena");
        LLVMBasicBlockRef fm = LLVMAppendBasicBlockInContext(c->ctx, fn, "free_m");
        LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, owns, cgl_i32(c, 0), ""), fa, fm);
        LLVMPositionBuilderAtEnd(b, fa);
        LLVMValueRef a = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, st, m, 0, ""), "");
        LLVMBuildCall2(b, LLVMGlobalGetValueType(ffree), ffree, &a, 1, "");
        LLVMBuildBr(b, fm);
        LLVMPositionBuilderAtEnd(b, fm);
        LLVMBuildCall2(b, LLVMGlobalGetValueType(ffree), ffree, &m, 1, "");
        LLVMBuildRetVoid(b);
    }

    LLVMTypeRef pi[3] = {c->ptr, c->ptr, c->i64};
    fn = api_fn(c, "init", c->i32, pi, 3);
    {
        LLVMValueRef mm = LLVMGetParam(fn, 0), s = LLVMGetParam(fn, 1), n = LLVMGetParam(fn, 2);
        LLVMValueRef bad = LLVMBuildOr(b, is_null(c, mm), is_null(c, s), "");
        bad = LLVMBuildOr(b, bad, LLVMBuildICmp(b, LLVMIntULT, n, cgl_i64(c, g->arena_bytes), ""), "");
        LLVMValueRef lo = LLVMBuildAnd(b, LLVMBuildPtrToInt(b, s, c->i64, ""), cgl_i64(c, 7), "");
        bad = LLVMBuildOr(b, bad, LLVMBuildICmp(b, LLVMIntNE, lo, cgl_i64(c, 0), ""), "");
        return_if(c, fn, bad, cgl_i32(c, TCRT_ERR_ARG));
        LLVMBuildStore(b, s, LLVMBuildStructGEP2(b, st, mm, 0, ""));
        LLVMBuildStore(b, cgl_i32(c, 0), LLVMBuildStructGEP2(b, st, mm, 1, ""));
        LLVMBuildRet(b, cgl_i32(c, TCRT_OK));
    }

    fn = api_fn(c, "run", c->i32, &c->ptr, 1);
    {
        LLVMValueRef mm = LLVMGetParam(fn, 0);
        return_if(c, fn, is_null(c, mm), cgl_i32(c, TCRT_ERR_ARG));
        LLVMValueRef a = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, st, mm, 0, ""), "");
        return_if(c, fn, is_null(c, a), cgl_i32(c, TCRT_ERR_ARG));
        LLVMBuildRet(b, LLVMBuildCall2(b, LLVMGlobalGetValueType(c->run_arena), c->run_arena, &a, 1, ""));
    }

    fn = api_fn(c, "signature", c->ptr, NULL, 0);
    LLVMBuildRet(b, model);

    LLVMValueRef get_arg = io_getter(c, st, "arg", targs, n_args);
    LLVMValueRef get_result = io_getter(c, st, "result", tres, n_results);

    /* set_arg: tcrt_set_feed(&NAME_model, m ? m->arena : NULL, i, t, err, errlen) */
    LLVMTypeRef ps[5] = {c->ptr, c->i32, c->ptr, c->ptr, c->i64};
    fn = api_fn(c, "set_arg", c->i32, ps, 5);
    {
        LLVMValueRef mm = LLVMGetParam(fn, 0);
        LLVMBasicBlockRef entry = LLVMGetInsertBlock(b);
        LLVMBasicBlockRef load = LLVMAppendBasicBlockInContext(c->ctx, fn, "load");
        LLVMBasicBlockRef call = LLVMAppendBasicBlockInContext(c->ctx, fn, "call");
        LLVMBuildCondBr(b, is_null(c, mm), call, load);
        LLVMPositionBuilderAtEnd(b, load);
        LLVMValueRef a = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, st, mm, 0, ""), "");
        LLVMBuildBr(b, call);
        LLVMPositionBuilderAtEnd(b, call);
        LLVMValueRef phi = LLVMBuildPhi(b, c->ptr, "arena");
        LLVMValueRef vals[2] = {null, a};
        LLVMBasicBlockRef bbs[2] = {entry, load};
        LLVMAddIncoming(phi, vals, bbs, 2);
        LLVMTypeRef fp[6] = {c->ptr, c->ptr, c->i32, c->ptr, c->ptr, c->i64};
        LLVMValueRef feed = libc_fn(c, "tcrt_set_feed", c->i32, fp, 6);
        LLVMValueRef cargs[6] = {model, phi, LLVMGetParam(fn, 1), LLVMGetParam(fn, 2), LLVMGetParam(fn, 3),
                                 LLVMGetParam(fn, 4)};
        LLVMBuildRet(b, LLVMBuildCall2(b, LLVMGlobalGetValueType(feed), feed, cargs, 6, ""));
    }

    for (int i = 0; i < n_args; i++) {
        char num[16];
        snprintf(num, sizeof num, "%d", i);
        accessor(c, get_arg, "arg_", args[i].ident, i);
        accessor(c, get_arg, "arg", num, i);
    }
    for (int i = 0; i < n_results; i++) {
        char num[16];
        snprintf(num, sizeof num, "%d", i);
        accessor(c, get_result, "result_", results[i].ident, i);
        accessor(c, get_result, "result", num, i);
    }
    xx_free(args);
    xx_free(results);
    return true;
}
