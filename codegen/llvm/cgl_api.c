/* codegen/llvm/cgl_api.c - the LLVM backend's descriptor globals and the API
 * of NAME.h, with the C backend's symbols and ABI (codegen/c/emit_model.c):
 *   NAME_args, NAME_results   internal constant tcrt_io arrays (name, dtype,
 *                             rank, dims, bytes, arena offset);
 *   NAME_model                the global tcrt_model, run = NAME_run_arena;
 *   NAME_vars                 internal constant tcrt_var array (name, dtype,
 *                             rank, dims, bytes, state offset, initial value
 *                             in the weights, the ASSIGN's output or -1,
 *                             trainable), one row per VARIABLE in node order;
 *   NAME_size/new/free/init/run/signature/arg/result/set_arg and the typed
 *   accessors NAME_arg_<ident>, NAME_arg<i>, NAME_result_<ident>,
 *   NAME_result<i>; for a model with variables NAME_var(m, i) and
 *   NAME_var_<ident> (idents made as the C backend makes them).
 * struct NAME is { uint8_t *arena; int owns_arena; }; NAME_new uses malloc
 * and aligned_alloc(64, arena rounded up to 64), as the C code does.
 * State (docs/training.md): NAME_new and NAME_init load the initial values
 * (tcrt_vars_init), NAME_run commits the assigned ones after a successful
 * run (tcrt_vars_commit), as the C backend's code does.
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

/* The internal constant NAME_<what> initialized with init. */
static LLVMValueRef internal_table(CglCtx *c, LLVMValueRef init, const char *what)
{
    char nm[160];
    snprintf(nm, sizeof nm, "%s_%s", c->name, what);
    LLVMValueRef gv = LLVMAddGlobal(c->mod, LLVMTypeOf(init), nm);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, true);
    LLVMSetLinkage(gv, LLVMInternalLinkage);
    return gv;
}

/* NAME_kernels: tcrt_kernel_info {kernel, node, op, type, flops} per top-level
 * kernel (c->kernels), or a null pointer when there is none; NULL when out
 * of memory. */
static LLVMValueRef kernel_table(CglCtx *c)
{
    if (c->n_kernels == 0)
        return LLVMConstNull(c->ptr);
    LLVMTypeRef fields[5] = {c->ptr, c->ptr, c->ptr, c->ptr, c->f64};
    LLVMTypeRef kt = LLVMStructTypeInContext(c->ctx, fields, 5, false);
    LLVMValueRef *rows = xx_malloc(sizeof(LLVMValueRef) * (size_t)c->n_kernels);
    if (!rows)
        return NULL;
    for (int i = 0; i < c->n_kernels; i++) {
        const IrNode *n = c->kernels[i].node;
        char t[IR_MAX_RANK * 26 + 16];
        if (n->n_outputs > 0)
            cg_type_str(&n->out[0].type, t, sizeof t);
        else
            snprintf(t, sizeof t, "-");
        LLVMValueRef f[5] = {cstring(c, c->kernels[i].name), cstring(c, n->origin ? n->origin : "?"),
                             cstring(c, n->origin_op ? n->origin_op : "?"), cstring(c, t),
                             LLVMConstReal(c->f64, cg_kernel_flops(n))};
        rows[i] = LLVMConstStructInContext(c->ctx, f, 5, false);
    }
    LLVMValueRef init = LLVMConstArray2(kt, rows, (uint64_t)c->n_kernels);
    xx_free(rows);
    return internal_table(c, init, "kernels");
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
    return internal_table(c, init, what);
}

/* NAME_vars: the tcrt_var table (runtime/include/tcrt.h), as the C
 * backend's emit_var_table writes it; *row_t gets the row type. */
static LLVMValueRef var_table(CglCtx *c, const CgIo *vars, int n, LLVMTypeRef *row_t)
{
    /* name, dtype, rank, dims, bytes, offset, init_offset, new_offset, trainable */
    LLVMTypeRef vf[9] = {c->ptr, c->i32, c->i32, LLVMArrayType2(c->i64, TCRT_MAX_RANK), c->i64, c->i64,
                         c->i64, c->i64, c->i32};
    *row_t = LLVMStructTypeInContext(c->ctx, vf, 9, false);
    if (n == 0)
        return LLVMConstNull(c->ptr);
    LLVMValueRef *rows = xx_malloc(sizeof(LLVMValueRef) * (size_t)n);
    if (!rows)
        return NULL;
    for (int i = 0; i < n; i++) {
        const IrNode *v = vars[i].value.node;
        const IrType *t = &v->out[0].type;
        int64_t assigned = -1;
        IR_FOR_EACH(c->g, a)
        {
            if (a->op == OP_ASSIGN && a->inputs[0].node == v)
                assigned = a->out[0].offset;
        }
        LLVMValueRef dv[TCRT_MAX_RANK];
        for (int d = 0; d < TCRT_MAX_RANK; d++)
            dv[d] = cgl_i64(c, d < t->shape.rank ? t->shape.dims[d] : 0);
        LLVMValueRef f[9] = {cstring(c, vars[i].name ? vars[i].name : ""),
                             cgl_i32(c, (int)t->dtype),
                             cgl_i32(c, t->shape.rank),
                             LLVMConstArray2(c->i64, dv, TCRT_MAX_RANK),
                             cgl_i64(c, (int64_t)ir_type_bytes(t)),
                             cgl_i64(c, v->out[0].offset),
                             cgl_i64(c, v->inputs[0].node->out[0].offset),
                             cgl_i64(c, assigned),
                             cgl_i32(c, v->p.i[0] ? 1 : 0)};
        rows[i] = LLVMConstNamedStruct(*row_t, f, 9);
    }
    LLVMValueRef init = LLVMConstArray2(*row_t, rows, (uint64_t)n);
    xx_free(rows);
    return internal_table(c, init, "vars");
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

/* NAME_arg / NAME_result / NAME_var: m->arena + table[i].offset (field 5
 * of a tcrt_io and of a tcrt_var row, of type row_t), NULL when out of range. */
static LLVMValueRef io_getter(CglCtx *c, LLVMTypeRef st, const char *what, LLVMTypeRef row_t,
                              LLVMValueRef table, int n)
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
    LLVMValueRef off =
        LLVMBuildLoad2(c->b, c->i64, LLVMBuildInBoundsGEP2(c->b, row_t, table, idx, 2, ""), "");
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
    int n_vars = 0;
    IR_FOR_EACH(g, n)
    {
        if (n->op == OP_VARIABLE)
            n_vars++;
    }
    CgIo *vars = xx_malloc(sizeof(CgIo) * ((size_t)n_vars + 1));
    if (!vars) {
        xx_free(args);
        xx_free(results);
        return st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
    }
    int n_v = 0;
    IR_FOR_EACH(g, n)
    {
        if (n->op == OP_VARIABLE)
            vars[n_v++] = (CgIo){n->origin ? n->origin : "var", {n, 0}, ""};
    }
    cg_io_idents(vars, n_vars);
    cg_io_idents(args, n_args);
    cg_io_idents(results, n_results);
    LLVMTypeRef var_t;
    LLVMValueRef targs = io_table(c, "args", args, n_args);
    LLVMValueRef tres = io_table(c, "results", results, n_results);
    LLVMValueRef tvars = var_table(c, vars, n_vars, &var_t);
    if (!targs || !tres || !tvars) {
        xx_free(args);
        xx_free(results);
        xx_free(vars);
        return st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
    }

    /* NAME_model */
    LLVMValueRef tkern = kernel_table(c);
    if (!tkern) {
        xx_free(args);
        xx_free(results);
        xx_free(vars);
        return st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
    }
    LLVMValueRef mf[13] = {cstring(c, c->name),
                           cgl_i32(c, n_args),
                           targs,
                           cgl_i32(c, n_results),
                           tres,
                           cgl_i64(c, g->arena_bytes),
                           cgl_i64(c, g->weights_bytes),
                           c->run_arena,
                           cgl_i32(c, n_vars),
                           tvars,
                           c->weights,
                           cgl_i32(c, c->n_kernels),
                           tkern};
    char nm[160];
    snprintf(nm, sizeof nm, "%s_model", c->name);
    LLVMValueRef model = LLVMAddGlobal(c->mod, c->model_t, nm);
    LLVMSetInitializer(model, LLVMConstNamedStruct(c->model_t, mf, 13));
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
    LLVMTypeRef pv[2] = {c->ptr, c->ptr};
    LLVMValueRef fvinit = n_vars ? libc_fn(c, "tcrt_vars_init", c->void_t, pv, 2) : NULL;
    LLVMValueRef fvcommit = n_vars ? libc_fn(c, "tcrt_vars_commit", c->void_t, pv, 2) : NULL;

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
    if (fvinit) {
        LLVMValueRef va[2] = {model, arena};
        LLVMBuildCall2(b, LLVMGlobalGetValueType(fvinit), fvinit, va, 2, "");
    }
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
        if (fvinit) {
            LLVMValueRef va[2] = {model, s};
            LLVMBuildCall2(b, LLVMGlobalGetValueType(fvinit), fvinit, va, 2, "");
        }
        LLVMBuildRet(b, cgl_i32(c, TCRT_OK));
    }

    fn = api_fn(c, "run", c->i32, &c->ptr, 1);
    {
        LLVMValueRef mm = LLVMGetParam(fn, 0);
        return_if(c, fn, is_null(c, mm), cgl_i32(c, TCRT_ERR_ARG));
        LLVMValueRef a = LLVMBuildLoad2(b, c->ptr, LLVMBuildStructGEP2(b, st, mm, 0, ""), "");
        return_if(c, fn, is_null(c, a), cgl_i32(c, TCRT_ERR_ARG));
        LLVMValueRef s = LLVMBuildCall2(b, LLVMGlobalGetValueType(c->run_arena), c->run_arena, &a, 1, "");
        if (fvcommit) {
            /* commit the assigned values only after a successful run */
            return_if(c, fn, LLVMBuildICmp(b, LLVMIntNE, s, cgl_i32(c, TCRT_OK), ""), s);
            LLVMValueRef va[2] = {model, a};
            LLVMBuildCall2(b, LLVMGlobalGetValueType(fvcommit), fvcommit, va, 2, "");
        }
        LLVMBuildRet(b, s);
    }

    fn = api_fn(c, "signature", c->ptr, NULL, 0);
    LLVMBuildRet(b, model);

    LLVMValueRef get_arg = io_getter(c, st, "arg", c->io_t, targs, n_args);
    LLVMValueRef get_result = io_getter(c, st, "result", c->io_t, tres, n_results);

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
    if (n_vars > 0) {
        LLVMValueRef get_var = io_getter(c, st, "var", var_t, tvars, n_vars);
        for (int i = 0; i < n_vars; i++)
            accessor(c, get_var, "var_", vars[i].ident, i);
    }
    xx_free(args);
    xx_free(results);
    xx_free(vars);
    return true;
}
