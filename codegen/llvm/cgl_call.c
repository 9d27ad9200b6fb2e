/* codegen/llvm/cgl_call.c - ops run by runtime kernels (kinds K_REDUCE,
 * K_CONTRACT, K_WINDOW, K_MOVE, K_MISC) and COPY, in LLVM IR.
 *
 * As the C backend (codegen/c/emit_call.c): the kernel is the op's
 * reference kernel (OpInfo.ref_kernel_name), except f32 MATMUL ->
 * tcrt_fast_matmul and f32 CONV2D -> tcrt_fast_conv2d (with the planned
 * workspace as one more output descriptor {ws, U8, 1, {bytes}}) and f32
 * MAXPOOL/AVGPOOL/REDUCE_SUM/REDUCE_MAX/PAD/RESIZE/TRANSPOSE ->
 * tcrt_fast_maxpool/avgpool/reduce_sum/reduce_max/pad/resize/transpose
 * (cg_kernel_name).  A call fills the calling
 * function's descriptor allocas (in[], out[]: data pointer, dtype, rank,
 * all TCRT_MAX_RANK dims, unused ones 0) and passes a private constant
 * tcrt_params global holding the node's parameters verbatim; a non-OK
 * status returns at once.  COPY is a memmove of the bytes (nothing when
 * source and destination are the same buffer).
 */
#include "codegen/llvm/cgl_int.h"

#include <string.h>

/* The private constant holding n's parameters. */
static LLVMValueRef params_global(CglCtx *c, const IrNode *n)
{
    LLVMValueRef iv[IR_MAX_IPARAM], fv[IR_MAX_FPARAM];
    for (int k = 0; k < IR_MAX_IPARAM; k++)
        iv[k] = LLVMConstInt(c->i64, (unsigned long long)n->p.i[k], true);
    for (int k = 0; k < IR_MAX_FPARAM; k++)
        fv[k] = LLVMConstReal(c->f64, n->p.f[k]);
    LLVMValueRef fields[2] = {LLVMConstArray2(c->i64, iv, IR_MAX_IPARAM), LLVMConstArray2(c->f64, fv, IR_MAX_FPARAM)};
    LLVMValueRef init = LLVMConstNamedStruct(c->params_t, fields, 2);
    LLVMValueRef gv = LLVMAddGlobal(c->mod, c->params_t, "params");
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, true);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddr(gv, true);
    LLVMSetAlignment(gv, 8);
    return gv;
}

/* Stores descriptor {data, dt, rank, dims} into arr[k]. */
static void store_desc(CglCtx *c, LLVMValueRef arr, int k, LLVMValueRef data, tcrt_dtype dt, const IrShape *s)
{
    LLVMBuilderRef b = c->b;
    LLVMValueRef idx0[2] = {cgl_i64(c, 0), cgl_i64(c, k)};
    LLVMTypeRef at = LLVMArrayType2(c->tensor_t, (uint64_t)k + 1);
    LLVMValueRef d = LLVMBuildInBoundsGEP2(b, at, arr, idx0, 2, "");
    LLVMBuildStore(b, data, LLVMBuildStructGEP2(b, c->tensor_t, d, 0, ""));
    LLVMBuildStore(b, cgl_i32(c, (int)dt), LLVMBuildStructGEP2(b, c->tensor_t, d, 1, ""));
    LLVMBuildStore(b, cgl_i32(c, s->rank), LLVMBuildStructGEP2(b, c->tensor_t, d, 2, ""));
    LLVMValueRef dims = LLVMBuildStructGEP2(b, c->tensor_t, d, 3, "");
    LLVMValueRef dv[IR_MAX_RANK];
    for (int i = 0; i < IR_MAX_RANK; i++)
        dv[i] = cgl_i64(c, i < s->rank ? s->dims[i] : 0);
    LLVMBuildStore(b, LLVMConstArray2(c->i64, dv, IR_MAX_RANK), dims);
}

bool cgl_emit_call(CglCtx *c, CglFn *f, const IrNode *n)
{
    const char *who = cgl_who(n), *who_op = n->origin_op ? n->origin_op : "?";
    for (int k = 0; k < n->n_inputs; k++)
        if (!cgl_elem_type(c, ir_value_type(n->inputs[k])->dtype))
            return st_errorf(c->st, ST_UNSUPPORTED, "node '%s' (%s): dtype %s not supported", who, who_op,
                             tcrt_dtype_name(ir_value_type(n->inputs[k])->dtype));
    for (int k = 0; k < n->n_outputs; k++)
        if (!cgl_elem_type(c, n->out[k].type.dtype))
            return st_errorf(c->st, ST_UNSUPPORTED, "node '%s' (%s): dtype %s not supported", who, who_op,
                             tcrt_dtype_name(n->out[k].type.dtype));
    if (n->op == OP_COPY) {
        size_t bytes = ir_type_bytes(&n->out[0].type);
        if (bytes == 0)
            return true;
        LLVMValueRef src = cgl_value_ptr(c, f, n->inputs[0]);
        LLVMValueRef dst = cgl_value_ptr(c, f, (IrValue){(IrNode *)n, 0});
        LLVMBuildMemMove(c->b, dst, 1, src, 1, cgl_i64(c, (int64_t)bytes));
        return true;
    }
    const char *fname = cg_kernel_name(n);
    if (!fname)
        return st_errorf(c->st, ST_UNSUPPORTED, "node '%s' (%s): no runtime kernel for op %s", who, who_op,
                         ir_op_name(n->op));
    bool ws = cgc_has_workspace(n);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, fname);
    if (!fn) {
        fn = LLVMAddFunction(c->mod, fname, c->kernel_fn_t);
        cgl_add_attr(c, fn, LLVMAttributeFunctionIndex, "nounwind");
    }
    for (int k = 0; k < n->n_inputs; k++)
        store_desc(c, f->in_desc, k, cgl_value_ptr(c, f, n->inputs[k]), ir_value_type(n->inputs[k])->dtype,
                   &ir_value_type(n->inputs[k])->shape);
    for (int k = 0; k < n->n_outputs; k++)
        store_desc(c, f->out_desc, k, cgl_value_ptr(c, f, (IrValue){(IrNode *)n, k}), n->out[k].type.dtype,
                   &n->out[k].type.shape);
    if (ws) {
        IrShape s = {1, {n->workspace_bytes}};
        LLVMValueRef p = n->workspace_bytes > 0
                             ? LLVMBuildInBoundsGEP2(c->b, c->i8, f->a, (LLVMValueRef[]){cgl_i64(c, n->workspace_offset)},
                                                     1, "")
                             : LLVMConstNull(c->ptr);
        store_desc(c, f->out_desc, n->n_outputs, p, TCRT_U8, &s);
    }
    int n_out = n->n_outputs + (ws ? 1 : 0);
    LLVMValueRef args[5] = {n->n_inputs > 0 ? f->in_desc : LLVMConstNull(c->ptr), cgl_i32(c, n->n_inputs),
                            f->out_desc, cgl_i32(c, n_out), params_global(c, n)};
    LLVMValueRef s = LLVMBuildCall2(c->b, c->kernel_fn_t, fn, args, 5, "");
    cgl_return_if_error(c, f, s);
    return true;
}
