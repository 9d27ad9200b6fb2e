/* codegen/llvm/cgl_int.h - internals of the LLVM backend (codegen/llvm/).
 *
 * cgl_model.c: cgl_emit_object - the module, the weights global, the run
 * function, region functions (WHILE/COND), target machine, O3, object file.
 * cgl_elem.c: fused elementwise groups as loop nests, one IR builder per op.
 * cgl_call.c: runtime kernel calls (tcrt_tensor descriptors, tcrt_params)
 * and COPY.  cgl_api.c: the descriptor globals (NAME_model, args/results)
 * and the API functions of NAME.h (NAME_new, NAME_run, ...).
 * Everything goes through the LLVM C API (llvm-c/); LLVM 19, opaque pointers.
 */
#ifndef CODEGEN_LLVM_CGL_INT_H
#define CODEGEN_LLVM_CGL_INT_H

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen/cg_int.h"

#define CGL_MAX_REGIONS 4096

/* libmvec variants a module may name (cgl_elem.c's table) */
#define CGL_MAX_VEC_FNS 9

/* The module being built. */
typedef struct CglCtx {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTargetDataRef td;
    const IrGraph *g;
    const char *name;             /* model prefix */
    Status *st;
    LLVMTypeRef i1, i8, i16, i32, i64, f32, f64, ptr, void_t;
    LLVMTypeRef tensor_t;         /* tcrt_tensor {ptr, i32, i32, [8 x i64]} */
    LLVMTypeRef io_t;             /* tcrt_io {ptr, i32, i32, [8 x i64], i64, i64} */
    LLVMTypeRef model_t;          /* tcrt_model */
    LLVMTypeRef params_t;         /* tcrt_params {[32 x i64], [4 x double]} */
    LLVMTypeRef kernel_fn_t;      /* i32 (ptr, i32, ptr, i32, ptr) */
    LLVMValueRef weights;         /* @NAME_weights */
    LLVMValueRef run_arena;       /* internal NAME_run_arena(ptr) -> i32 */
    const IrGraph *regions[CGL_MAX_REGIONS]; /* every region of the tree, pre-order */
    LLVMValueRef region_fns[CGL_MAX_REGIONS]; /* NAME_r<i+1> */
    int n_regions;
    /* The top-level kernel calls of NAME_run_arena in order, timed by
     * tcrt_prof_begin/tcrt_prof_end and listed in NAME_kernels (--profile,
     * docs/profiling.md). */
    struct CglKernel {
        char name[96]; /* k<NNN>_<op>..., as the C backend names it */
        const IrNode *node;
    } * kernels;
    int n_kernels;
    /* CgLlvmTarget.vector_math: float32 calls of exp, log, ... name libmvec's
     * 8-lane variants (cgl_elem.c), whose declarations vec_fns lists for
     * llvm.compiler.used (cgl_keep_vector_math) */
    bool vector_math;
    LLVMValueRef vec_fns[CGL_MAX_VEC_FNS];
    int n_vec_fns;
} CglCtx;

/* The function being filled: the run function or a region function. */
typedef struct CglFn {
    const IrGraph *g;             /* the graph it runs */
    LLVMValueRef fn;
    LLVMValueRef a, w, args;      /* arena base, weights, region parameters (or NULL) */
    LLVMValueRef in_desc, out_desc; /* allocas: [max_in x tensor_t], [max_out x tensor_t] */
} CglFn;

/* Node name for messages. */
const char *cgl_who(const IrNode *n);
/* The LLVM type of one element of dt (bool and f16/bf16: integers), or NULL. */
LLVMTypeRef cgl_elem_type(CglCtx *c, tcrt_dtype dt);
/* Byte pointer to value v inside function f. */
LLVMValueRef cgl_value_ptr(CglCtx *c, CglFn *f, IrValue v);
/* i64 / i32 constants. */
LLVMValueRef cgl_i64(CglCtx *c, int64_t v);
LLVMValueRef cgl_i32(CglCtx *c, int v);
/* if (s != 0) return s; continues in a new block. */
void cgl_return_if_error(CglCtx *c, CglFn *f, LLVMValueRef s);
/* Adds attribute `name` to fn (idx: LLVMAttributeFunctionIndex or 1 + parameter). */
void cgl_add_attr(CglCtx *c, LLVMValueRef fn, unsigned idx, const char *name);

/* cgl_elem.c: the internal function `void name(ptr ext..., ptr y)` computing
 * the fused group grp, or NULL after an error. */
LLVMValueRef cgl_emit_elem(CglCtx *c, const CgcElemGroup *grp, const char *name);
/* C conversion (T)(v) from dtype `from` to `to` (to bool: v != 0). */
LLVMValueRef cgl_convert(CglCtx *c, LLVMValueRef v, tcrt_dtype from, tcrt_dtype to);
/* Whether op (K_ELEM) has a builder. */
bool cgl_elem_has_rule(Op op);
/* @llvm.compiler.used listing c->vec_fns (none: nothing), so that the
 * libmvec declarations live until the loop vectorizer has seen them. */
void cgl_keep_vector_math(CglCtx *c);

/* cgl_call.c: a call of n's runtime kernel (or a copy) at the builder's
 * position in f. */
bool cgl_emit_call(CglCtx *c, CglFn *f, const IrNode *n);

/* cgl_api.c: NAME_args/results/model and the API functions. */
bool cgl_emit_api(CglCtx *c);

#endif
