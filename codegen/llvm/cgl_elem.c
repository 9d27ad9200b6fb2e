/* codegen/llvm/cgl_elem.c - elementwise ops (kind K_ELEM) in LLVM IR.
 *
 * A fused group (see passes/memplan.c and codegen/c/emit_elem.c: members in
 * schedule order, the last one the root) becomes one internal function
 * `void k<NNN>_<ops>(ptr noalias ext..., ptr noalias y)`: a loop nest over
 * the root's shape with NumPy broadcast strides per operand (size-1 dims
 * dropped, adjacent dims merged while every operand stays affine, as the C
 * backend does), loading each operand element, computing the members in
 * order as SSA values and storing the root's value.
 * Each op has one builder in `rules`, keyed by op; it gets the operands in
 * their dtype and returns the result in the node's output dtype, with the
 * semantics of the op's C expression in ir/ops.def (and tcrt_elem.h):
 * integer division never traps (b == 0 gives 0, b == -1 negates with wrap),
 * float math calls the libm functions the C backend calls (through LLVM
 * intrinsics where LLVM has one), comparisons give bool bytes 0/1, CAST is
 * the C conversion; float POW by a constant 2 is x * x (as the C
 * backend).  An op without a builder is an error naming the node.
 * With CglCtx.vector_math (an x86-64 executable linked with libmvec), the
 * float32 calls of exp, log, log1p, sin, cos, tanh, erf, pow and atan2
 * (sigmoid's exp included; the C backend's TFCC_SIMD set) carry the
 * call-site attribute "vector-function-abi-variant" naming libmvec's 8-lane
 * AVX2 variant (_ZGVdN8v_expf, ...), so LLVM's loop vectorizer can call it
 * on 8 elements at once; their scalar libm declarations are then marked
 * memory(none) (errno is never read), which vectorizing needs.
 */
#include "codegen/llvm/cgl_int.h"

#include <string.h>

/* One op application: operands x[] of dtype `in` (SELECT: x[1], x[2]),
 * result wanted in dtype `out`. */
typedef struct ElemOp {
    LLVMValueRef x[3];
    tcrt_dtype in, out;
} ElemOp;

typedef LLVMValueRef (*ElemRule)(CglCtx *c, const ElemOp *e);

static bool is_float(tcrt_dtype dt)
{
    return dt == TCRT_F32 || dt == TCRT_F64;
}

static bool is_signed(tcrt_dtype dt)
{
    return dt == TCRT_I8 || dt == TCRT_I16 || dt == TCRT_I32 || dt == TCRT_I64;
}

static int int_bits(tcrt_dtype dt)
{
    switch (dt) {
    case TCRT_I8: case TCRT_U8: case TCRT_BOOL: return 8;
    case TCRT_I16: case TCRT_U16: case TCRT_F16: case TCRT_BF16: return 16;
    case TCRT_I32: case TCRT_U32: return 32;
    default: return 64;
    }
}

static LLVMValueRef zero_of(LLVMTypeRef t)
{
    return LLVMConstNull(t);
}

static LLVMValueRef bool_byte(CglCtx *c, LLVMValueRef i1)
{
    return LLVMBuildZExt(c->b, i1, c->i8, "");
}

/* libmvec's 8-lane AVX2 variants, by the scalar function LLVM calls */
static const struct {
    const char *scalar, *vec;
    unsigned nargs;
} vec_math[CGL_MAX_VEC_FNS] = {
    {"llvm.exp.f32", "_ZGVdN8v_expf", 1},  {"llvm.log.f32", "_ZGVdN8v_logf", 1},
    {"llvm.sin.f32", "_ZGVdN8v_sinf", 1},  {"llvm.cos.f32", "_ZGVdN8v_cosf", 1},
    {"llvm.pow.f32", "_ZGVdN8vv_powf", 2}, {"log1pf", "_ZGVdN8v_log1pf", 1},
    {"tanhf", "_ZGVdN8v_tanhf", 1},        {"erff", "_ZGVdN8v_erff", 1},
    {"atan2f", "_ZGVdN8vv_atan2f", 2},
};

/* The libmvec variant of call (of `scalar`), where c->vector_math and the
 * table has one: the attribute "_ZGVdN8<v...>_<scalar>(<variant>)". */
static void vector_variant(CglCtx *c, LLVMValueRef call, const char *scalar)
{
    if (!c->vector_math)
        return;
    for (int i = 0; i < CGL_MAX_VEC_FNS; i++) {
        if (strcmp(vec_math[i].scalar, scalar))
            continue;
        if (!LLVMGetNamedFunction(c->mod, vec_math[i].vec)) {
            LLVMTypeRef v8 = LLVMVectorType(c->f32, 8), ps[2] = {v8, v8};
            LLVMValueRef fn =
                LLVMAddFunction(c->mod, vec_math[i].vec, LLVMFunctionType(v8, ps, vec_math[i].nargs, false));
            cgl_add_attr(c, fn, LLVMAttributeFunctionIndex, "nounwind");
            c->vec_fns[c->n_vec_fns++] = fn; /* at most once per table entry */
        }
        char v[96];
        snprintf(v, sizeof v, "_ZGVdN8%s_%s(%s)", vec_math[i].nargs == 2 ? "vv" : "v", scalar,
                 vec_math[i].vec);
        static const char key[] = "vector-function-abi-variant";
        LLVMAddCallSiteAttribute(
            call, LLVMAttributeFunctionIndex,
            LLVMCreateStringAttribute(c->ctx, key, sizeof key - 1, v, (unsigned)strlen(v)));
        return;
    }
}

void cgl_keep_vector_math(CglCtx *c)
{
    if (c->n_vec_fns == 0)
        return;
    LLVMValueRef g =
        LLVMAddGlobal(c->mod, LLVMArrayType2(c->ptr, (uint64_t)c->n_vec_fns), "llvm.compiler.used");
    LLVMSetLinkage(g, LLVMAppendingLinkage);
    LLVMSetSection(g, "llvm.metadata");
    LLVMSetInitializer(g, LLVMConstArray2(c->ptr, c->vec_fns, (uint64_t)c->n_vec_fns));
}

/* A call of intrinsic `name` overloaded on the type of x. */
static LLVMValueRef intrinsic(CglCtx *c, const char *name, LLVMValueRef *xs, unsigned n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef t = LLVMTypeOf(xs[0]);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, &t, 1);
    LLVMTypeRef ft = LLVMIntrinsicGetType(c->ctx, id, &t, 1);
    LLVMValueRef call = LLVMBuildCall2(c->b, ft, fn, xs, n, "");
    if (c->vector_math && t == c->f32) {
        char scalar[48];
        snprintf(scalar, sizeof scalar, "%s.f32", name);
        vector_variant(c, call, scalar);
    }
    return call;
}

/* A call of the libm function `name` (f64) or `name` "f" (f32). */
static LLVMValueRef libm(CglCtx *c, const char *name, tcrt_dtype dt, LLVMValueRef *xs, unsigned n)
{
    char fname[32];
    snprintf(fname, sizeof fname, "%s%s", name, dt == TCRT_F32 ? "f" : "");
    LLVMTypeRef t = dt == TCRT_F32 ? c->f32 : c->f64;
    LLVMTypeRef ps[2] = {t, t};
    LLVMTypeRef ft = LLVMFunctionType(t, ps, n, false);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, fname);
    if (!fn) {
        fn = LLVMAddFunction(c->mod, fname, ft);
        cgl_add_attr(c, fn, LLVMAttributeFunctionIndex, "nounwind");
        if (c->vector_math) { /* memory(none): the enum value 0 is "no memory effects" */
            cgl_add_attr(c, fn, LLVMAttributeFunctionIndex, "willreturn");
            cgl_add_attr(c, fn, LLVMAttributeFunctionIndex, "memory");
        }
    }
    LLVMValueRef call = LLVMBuildCall2(c->b, ft, fn, xs, n, "");
    if (dt == TCRT_F32)
        vector_variant(c, call, fname);
    return call;
}

static LLVMValueRef fconst(CglCtx *c, tcrt_dtype dt, double v)
{
    return LLVMConstReal(cgl_elem_type(c, dt), v);
}

LLVMValueRef cgl_convert(CglCtx *c, LLVMValueRef v, tcrt_dtype from, tcrt_dtype to)
{
    LLVMTypeRef tt = cgl_elem_type(c, to);
    if (from == to)
        return v;
    if (to == TCRT_BOOL) {
        LLVMValueRef nz = is_float(from) ? LLVMBuildFCmp(c->b, LLVMRealUNE, v, zero_of(LLVMTypeOf(v)), "")
                                         : LLVMBuildICmp(c->b, LLVMIntNE, v, zero_of(LLVMTypeOf(v)), "");
        return bool_byte(c, nz);
    }
    if (is_float(from) && is_float(to))
        return to == TCRT_F64 ? LLVMBuildFPExt(c->b, v, tt, "") : LLVMBuildFPTrunc(c->b, v, tt, "");
    if (is_float(from)) {
        /* C leaves out-of-range conversions undefined; here they saturate
         * (never poison): to i32 for types of up to 32 bits but u32 (then
         * wrapped to 8 or 16 bits, as AArch64's fcvtzs w), to i64 for i64 and
         * u32, to u64 for u64.  In-range values convert exactly as in C. */
        LLVMValueRef x[1] = {v};
        bool is_u64 = to == TCRT_U64;
        LLVMTypeRef wide = int_bits(to) <= 32 && to != TCRT_U32 ? c->i32 : c->i64;
        const char *iname = is_u64 ? "llvm.fptoui.sat" : "llvm.fptosi.sat";
        unsigned id = LLVMLookupIntrinsicID(iname, strlen(iname));
        LLVMTypeRef ts[2] = {wide, LLVMTypeOf(v)};
        LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->mod, id, ts, 2);
        LLVMValueRef r = LLVMBuildCall2(c->b, LLVMIntrinsicGetType(c->ctx, id, ts, 2), fn, x, 1, "");
        return wide != tt ? LLVMBuildTrunc(c->b, r, tt, "") : r;
    }
    if (is_float(to))
        return is_signed(from) ? LLVMBuildSIToFP(c->b, v, tt, "") : LLVMBuildUIToFP(c->b, v, tt, "");
    int fb = int_bits(from), tb = int_bits(to);
    if (fb == tb)
        return v;
    if (fb > tb)
        return LLVMBuildTrunc(c->b, v, tt, "");
    return is_signed(from) ? LLVMBuildSExt(c->b, v, tt, "") : LLVMBuildZExt(c->b, v, tt, "");
}

/* ---- the builders, one per op ---- */

static LLVMValueRef r_neg(CglCtx *c, const ElemOp *e)
{
    return is_float(e->in) ? LLVMBuildFNeg(c->b, e->x[0], "") : LLVMBuildNeg(c->b, e->x[0], "");
}

static LLVMValueRef r_abs(CglCtx *c, const ElemOp *e)
{
    LLVMValueRef x = e->x[0], z = zero_of(LLVMTypeOf(x));
    if (is_float(e->in))
        return LLVMBuildSelect(c->b, LLVMBuildFCmp(c->b, LLVMRealOLT, x, z, ""), LLVMBuildFNeg(c->b, x, ""),
                               x, "");
    if (!is_signed(e->in))
        return x;
    return LLVMBuildSelect(c->b, LLVMBuildICmp(c->b, LLVMIntSLT, x, z, ""), LLVMBuildNeg(c->b, x, ""), x, "");
}

/* (x > 0) - (x < 0) as an i32, converted to the output type. */
static LLVMValueRef r_sign(CglCtx *c, const ElemOp *e)
{
    LLVMValueRef x = e->x[0], z = zero_of(LLVMTypeOf(x)), gt, lt;
    if (is_float(e->in)) {
        gt = LLVMBuildFCmp(c->b, LLVMRealOGT, x, z, "");
        lt = LLVMBuildFCmp(c->b, LLVMRealOLT, x, z, "");
    } else {
        gt = LLVMBuildICmp(c->b, is_signed(e->in) ? LLVMIntSGT : LLVMIntUGT, x, z, "");
        lt = LLVMBuildICmp(c->b, is_signed(e->in) ? LLVMIntSLT : LLVMIntULT, x, z, "");
    }
    LLVMValueRef s = LLVMBuildSub(c->b, LLVMBuildZExt(c->b, gt, c->i32, ""), LLVMBuildZExt(c->b, lt, c->i32, ""),
                                  "");
    return cgl_convert(c, s, TCRT_I32, e->out);
}

#define INTRINSIC1(fname, iname)                                                                   \
    static LLVMValueRef fname(CglCtx *c, const ElemOp *e)                                          \
    {                                                                                              \
        LLVMValueRef x[1] = {e->x[0]};                                                             \
        return intrinsic(c, iname, x, 1);                                                          \
    }
#define LIBM1(fname, lname)                                                                        \
    static LLVMValueRef fname(CglCtx *c, const ElemOp *e)                                          \
    {                                                                                              \
        LLVMValueRef x[1] = {e->x[0]};                                                             \
        return libm(c, lname, e->in, x, 1);                                                        \
    }
INTRINSIC1(r_exp, "llvm.exp")
INTRINSIC1(r_log, "llvm.log")
INTRINSIC1(r_sqrt, "llvm.sqrt")
INTRINSIC1(r_sin, "llvm.sin")
INTRINSIC1(r_cos, "llvm.cos")
INTRINSIC1(r_floor, "llvm.floor")
INTRINSIC1(r_ceil, "llvm.ceil")
INTRINSIC1(r_round, "llvm.rint")
LIBM1(r_log1p, "log1p")
LIBM1(r_tan, "tan")
LIBM1(r_tanh, "tanh")
LIBM1(r_erf, "erf")

static LLVMValueRef r_rsqrt(CglCtx *c, const ElemOp *e)
{
    return LLVMBuildFDiv(c->b, fconst(c, e->in, 1.0), r_sqrt(c, e), "");
}

static LLVMValueRef r_recip(CglCtx *c, const ElemOp *e)
{
    return LLVMBuildFDiv(c->b, fconst(c, e->in, 1.0), e->x[0], "");
}

static LLVMValueRef r_square(CglCtx *c, const ElemOp *e)
{
    return is_float(e->in) ? LLVMBuildFMul(c->b, e->x[0], e->x[0], "") : LLVMBuildMul(c->b, e->x[0], e->x[0], "");
}

static LLVMValueRef r_sigmoid(CglCtx *c, const ElemOp *e)
{
    ElemOp n = *e;
    n.x[0] = LLVMBuildFNeg(c->b, e->x[0], "");
    LLVMValueRef d = LLVMBuildFAdd(c->b, fconst(c, e->in, 1.0), r_exp(c, &n), "");
    return LLVMBuildFDiv(c->b, fconst(c, e->in, 1.0), d, "");
}

static LLVMValueRef r_relu(CglCtx *c, const ElemOp *e)
{
    LLVMValueRef x = e->x[0], z = zero_of(LLVMTypeOf(x));
    LLVMValueRef gt = is_float(e->in) ? LLVMBuildFCmp(c->b, LLVMRealOGT, x, z, "")
                                      : LLVMBuildICmp(c->b, is_signed(e->in) ? LLVMIntSGT : LLVMIntUGT, x, z, "");
    return LLVMBuildSelect(c->b, gt, x, z, "");
}

static LLVMValueRef r_not(CglCtx *c, const ElemOp *e)
{
    LLVMValueRef x = e->x[0];
    LLVMValueRef z = is_float(e->in) ? LLVMBuildFCmp(c->b, LLVMRealOEQ, x, zero_of(LLVMTypeOf(x)), "")
                                     : LLVMBuildICmp(c->b, LLVMIntEQ, x, zero_of(LLVMTypeOf(x)), "");
    return cgl_convert(c, bool_byte(c, z), TCRT_BOOL, e->out);
}

static LLVMValueRef r_cast(CglCtx *c, const ElemOp *e)
{
    return cgl_convert(c, e->x[0], e->in, e->out);
}

static LLVMValueRef r_add(CglCtx *c, const ElemOp *e)
{
    return is_float(e->in) ? LLVMBuildFAdd(c->b, e->x[0], e->x[1], "") : LLVMBuildAdd(c->b, e->x[0], e->x[1], "");
}

static LLVMValueRef r_sub(CglCtx *c, const ElemOp *e)
{
    return is_float(e->in) ? LLVMBuildFSub(c->b, e->x[0], e->x[1], "") : LLVMBuildSub(c->b, e->x[0], e->x[1], "");
}

static LLVMValueRef r_mul(CglCtx *c, const ElemOp *e)
{
    return is_float(e->in) ? LLVMBuildFMul(c->b, e->x[0], e->x[1], "") : LLVMBuildMul(c->b, e->x[0], e->x[1], "");
}

/* Integer a / b (mode 0), floor division (1) or floor modulo (2) without
 * traps: tcrt_div_i/u, tcrt_floordiv_i, tcrt_floormod_i. */
static LLVMValueRef int_div(CglCtx *c, const ElemOp *e, int mode)
{
    LLVMBuilderRef b = c->b;
    LLVMValueRef a = e->x[0], d = e->x[1];
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef z = zero_of(t), one = LLVMConstInt(t, 1, false), m1 = LLVMConstAllOnes(t);
    LLVMValueRef is_zero = LLVMBuildICmp(b, LLVMIntEQ, d, z, "");
    if (!is_signed(e->in)) {
        LLVMValueRef safe = LLVMBuildSelect(b, is_zero, one, d, "");
        LLVMValueRef r = mode == 2 ? LLVMBuildURem(b, a, safe, "") : LLVMBuildUDiv(b, a, safe, "");
        return LLVMBuildSelect(b, is_zero, z, r, "");
    }
    LLVMValueRef is_m1 = LLVMBuildICmp(b, LLVMIntEQ, d, m1, "");
    LLVMValueRef bad = LLVMBuildOr(b, is_zero, is_m1, "");
    LLVMValueRef safe = LLVMBuildSelect(b, bad, one, d, "");
    LLVMValueRef q = LLVMBuildSDiv(b, a, safe, "");
    LLVMValueRef rem = LLVMBuildSRem(b, a, safe, "");
    LLVMValueRef r;
    /* (rem != 0) && ((rem < 0) != (d < 0)), for floor division and modulo */
    LLVMValueRef adjust = LLVMBuildAnd(
        b, LLVMBuildICmp(b, LLVMIntNE, rem, z, ""),
        LLVMBuildXor(b, LLVMBuildICmp(b, LLVMIntSLT, rem, z, ""), LLVMBuildICmp(b, LLVMIntSLT, d, z, ""), ""), "");
    if (mode == 0)
        r = q;
    else if (mode == 1)
        r = LLVMBuildSelect(b, adjust, LLVMBuildSub(b, q, one, ""), q, "");
    else
        r = LLVMBuildSelect(b, adjust, LLVMBuildAdd(b, rem, d, ""), rem, "");
    LLVMValueRef neg = mode == 2 ? z : LLVMBuildNeg(b, a, "");
    return LLVMBuildSelect(b, is_zero, z, LLVMBuildSelect(b, is_m1, neg, r, ""), "");
}

static LLVMValueRef r_div(CglCtx *c, const ElemOp *e)
{
    return is_float(e->in) ? LLVMBuildFDiv(c->b, e->x[0], e->x[1], "") : int_div(c, e, 0);
}

static LLVMValueRef r_floordiv(CglCtx *c, const ElemOp *e)
{
    if (!is_float(e->in))
        return int_div(c, e, 1);
    ElemOp q = *e;
    q.x[0] = LLVMBuildFDiv(c->b, e->x[0], e->x[1], "");
    return r_floor(c, &q);
}

/* r = fmod(a, b); (r != 0 && (r < 0) != (b < 0)) ? r + b : r */
static LLVMValueRef r_floormod(CglCtx *c, const ElemOp *e)
{
    if (!is_float(e->in))
        return int_div(c, e, 2);
    LLVMBuilderRef b = c->b;
    LLVMValueRef z = zero_of(LLVMTypeOf(e->x[0]));
    LLVMValueRef r = LLVMBuildFRem(b, e->x[0], e->x[1], "");
    LLVMValueRef adjust = LLVMBuildAnd(
        b, LLVMBuildFCmp(b, LLVMRealUNE, r, z, ""),
        LLVMBuildXor(b, LLVMBuildFCmp(b, LLVMRealOLT, r, z, ""), LLVMBuildFCmp(b, LLVMRealOLT, e->x[1], z, ""), ""),
        "");
    return LLVMBuildSelect(b, adjust, LLVMBuildFAdd(b, r, e->x[1], ""), r, "");
}

/* pow: <tgmath.h> takes integers to double pow, and the result converts back. */
static LLVMValueRef r_pow(CglCtx *c, const ElemOp *e)
{
    if (is_float(e->in)) {
        LLVMValueRef x[2] = {e->x[0], e->x[1]};
        return intrinsic(c, "llvm.pow", x, 2);
    }
    LLVMValueRef x[2] = {cgl_convert(c, e->x[0], e->in, TCRT_F64), cgl_convert(c, e->x[1], e->in, TCRT_F64)};
    return cgl_convert(c, intrinsic(c, "llvm.pow", x, 2), TCRT_F64, e->out);
}

static LLVMValueRef cmp(CglCtx *c, const ElemOp *e, LLVMRealPredicate fp, LLVMIntPredicate sp,
                        LLVMIntPredicate up)
{
    if (is_float(e->in))
        return LLVMBuildFCmp(c->b, fp, e->x[0], e->x[1], "");
    return LLVMBuildICmp(c->b, is_signed(e->in) ? sp : up, e->x[0], e->x[1], "");
}

static LLVMValueRef r_max(CglCtx *c, const ElemOp *e)
{
    return LLVMBuildSelect(c->b, cmp(c, e, LLVMRealOGT, LLVMIntSGT, LLVMIntUGT), e->x[0], e->x[1], "");
}

static LLVMValueRef r_min(CglCtx *c, const ElemOp *e)
{
    return LLVMBuildSelect(c->b, cmp(c, e, LLVMRealOLT, LLVMIntSLT, LLVMIntULT), e->x[0], e->x[1], "");
}

static LLVMValueRef r_atan2(CglCtx *c, const ElemOp *e)
{
    LLVMValueRef x[2] = {e->x[0], e->x[1]};
    return libm(c, "atan2", e->in, x, 2);
}

#define CMP_RULE(fname, fp, sp, up)                                                                \
    static LLVMValueRef fname(CglCtx *c, const ElemOp *e)                                          \
    {                                                                                              \
        return cgl_convert(c, bool_byte(c, cmp(c, e, fp, sp, up)), TCRT_BOOL, e->out);             \
    }
/* C's == is ordered-equal, != unordered-not-equal (NaN != NaN) */
CMP_RULE(r_eq, LLVMRealOEQ, LLVMIntEQ, LLVMIntEQ)
CMP_RULE(r_ne, LLVMRealUNE, LLVMIntNE, LLVMIntNE)
CMP_RULE(r_lt, LLVMRealOLT, LLVMIntSLT, LLVMIntULT)
CMP_RULE(r_le, LLVMRealOLE, LLVMIntSLE, LLVMIntULE)
CMP_RULE(r_gt, LLVMRealOGT, LLVMIntSGT, LLVMIntUGT)
CMP_RULE(r_ge, LLVMRealOGE, LLVMIntSGE, LLVMIntUGE)

static LLVMValueRef truth(CglCtx *c, LLVMValueRef x, tcrt_dtype dt)
{
    return is_float(dt) ? LLVMBuildFCmp(c->b, LLVMRealUNE, x, zero_of(LLVMTypeOf(x)), "")
                        : LLVMBuildICmp(c->b, LLVMIntNE, x, zero_of(LLVMTypeOf(x)), "");
}

static LLVMValueRef r_and(CglCtx *c, const ElemOp *e)
{
    LLVMValueRef v = LLVMBuildAnd(c->b, truth(c, e->x[0], e->in), truth(c, e->x[1], e->in), "");
    return cgl_convert(c, bool_byte(c, v), TCRT_BOOL, e->out);
}

static LLVMValueRef r_or(CglCtx *c, const ElemOp *e)
{
    LLVMValueRef v = LLVMBuildOr(c->b, truth(c, e->x[0], e->in), truth(c, e->x[1], e->in), "");
    return cgl_convert(c, bool_byte(c, v), TCRT_BOOL, e->out);
}

/* SELECT: x[0] is the bool condition, x[1] and x[2] have dtype `in`. */
static LLVMValueRef r_select(CglCtx *c, const ElemOp *e)
{
    LLVMValueRef cond = LLVMBuildICmp(c->b, LLVMIntNE, e->x[0], zero_of(LLVMTypeOf(e->x[0])), "");
    return LLVMBuildSelect(c->b, cond, e->x[1], e->x[2], "");
}

/* The table: one builder per elementwise op of ir/ops.def. */
static const ElemRule rules[OP_COUNT] = {
    [OP_NEG] = r_neg,         [OP_ABS] = r_abs,       [OP_SIGN] = r_sign,   [OP_EXP] = r_exp,
    [OP_LOG] = r_log,         [OP_LOG1P] = r_log1p,   [OP_SQRT] = r_sqrt,   [OP_RSQRT] = r_rsqrt,
    [OP_RECIP] = r_recip,     [OP_SQUARE] = r_square, [OP_SIN] = r_sin,     [OP_COS] = r_cos,
    [OP_TAN] = r_tan,         [OP_TANH] = r_tanh,     [OP_SIGMOID] = r_sigmoid, [OP_RELU] = r_relu,
    [OP_FLOOR] = r_floor,     [OP_CEIL] = r_ceil,     [OP_ROUND] = r_round, [OP_ERF] = r_erf,
    [OP_NOT] = r_not,         [OP_CAST] = r_cast,     [OP_ADD] = r_add,     [OP_SUB] = r_sub,
    [OP_MUL] = r_mul,         [OP_DIV] = r_div,       [OP_FLOORDIV] = r_floordiv,
    [OP_FLOORMOD] = r_floormod, [OP_POW] = r_pow,     [OP_MAX] = r_max,     [OP_MIN] = r_min,
    [OP_ATAN2] = r_atan2,     [OP_EQ] = r_eq,         [OP_NE] = r_ne,       [OP_LT] = r_lt,
    [OP_LE] = r_le,           [OP_GT] = r_gt,         [OP_GE] = r_ge,       [OP_AND] = r_and,
    [OP_OR] = r_or,           [OP_SELECT] = r_select,
};

bool cgl_elem_has_rule(Op op)
{
    return (int)op >= 0 && op < OP_COUNT && rules[op] != NULL;
}

/* sum over loops of iv[l] * stride (which < 0: the output's strides). */
static LLVMValueRef index_of(CglCtx *c, const CgLoop *loops, int n_loops, LLVMValueRef *iv, int which)
{
    LLVMValueRef idx = NULL;
    for (int l = 0; l < n_loops; l++) {
        int64_t s = which < 0 ? loops[l].out_stride : loops[l].in_stride[which];
        if (s == 0)
            continue;
        LLVMValueRef t = s == 1 ? iv[l] : LLVMBuildNUWMul(c->b, iv[l], cgl_i64(c, s), "");
        idx = idx ? LLVMBuildNUWAdd(c->b, idx, t, "") : t;
    }
    return idx ? idx : cgl_i64(c, 0);
}

LLVMValueRef cgl_emit_elem(CglCtx *c, const CgcElemGroup *grp, const char *name)
{
    const IrNode *root = grp->members[grp->n_members - 1];
    const IrType *ot = &root->out[0].type;
    const char *who = cgl_who(root);
    if (grp->n_ext > CG_MAX_EXT) {
        st_errorf(c->st, ST_UNSUPPORTED, "node '%s': fused kernel with %d operands (max %d)", who, grp->n_ext,
                  CG_MAX_EXT);
        return NULL;
    }
    for (int m = 0; m < grp->n_members; m++) {
        const IrNode *n = grp->members[m];
        if (!cgl_elem_has_rule(n->op) || n->n_inputs < 1 || n->n_inputs > 3 || n->n_outputs != 1) {
            st_errorf(c->st, ST_UNSUPPORTED, "node '%s' (%s): the LLVM backend cannot lower op %s", cgl_who(n),
                      n->origin_op ? n->origin_op : "?", ir_op_name(n->op));
            return NULL;
        }
        if (!cgl_elem_type(c, n->out[0].type.dtype)) {
            st_errorf(c->st, ST_UNSUPPORTED, "node '%s': dtype %s not supported by the LLVM backend", cgl_who(n),
                      tcrt_dtype_name(n->out[0].type.dtype));
            return NULL;
        }
        if (!ir_shape_eq(&n->out[0].type.shape, &ot->shape)) {
            st_errorf(c->st, ST_ERROR, "node '%s': fused with a node of another shape", cgl_who(n));
            return NULL;
        }
    }
    for (int k = 0; k < grp->n_ext; k++)
        if (!cgl_elem_type(c, ir_value_type(grp->ext[k])->dtype)) {
            st_errorf(c->st, ST_UNSUPPORTED, "node '%s': operand dtype %s not supported", who,
                      tcrt_dtype_name(ir_value_type(grp->ext[k])->dtype));
            return NULL;
        }
    CgLoop loops[IR_MAX_RANK];
    int n_loops = 0;
    if (!cg_elem_loops(grp, who, loops, &n_loops, c->st))
        return NULL;

    LLVMTypeRef ps[CG_MAX_EXT + 1];
    for (int k = 0; k <= grp->n_ext; k++)
        ps[k] = c->ptr;
    LLVMValueRef fn = LLVMAddFunction(c->mod, name, LLVMFunctionType(c->void_t, ps, (unsigned)grp->n_ext + 1, false));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    cgl_add_attr(c, fn, LLVMAttributeFunctionIndex, "nounwind");
    for (int k = 0; k <= grp->n_ext; k++)
        cgl_add_attr(c, fn, (unsigned)k + 1, "noalias");
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(c->ctx, fn, "entry");
    LLVMPositionBuilderAtEnd(c->b, entry);
    int64_t total = ir_shape_count(&ot->shape);
    if (total == 0) {
        LLVMBuildRetVoid(c->b);
        return fn;
    }
    LLVMValueRef iv[IR_MAX_RANK];
    LLVMBasicBlockRef hdr[IR_MAX_RANK];
    for (int l = 0; l < n_loops; l++) {
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(c->b);
        hdr[l] = LLVMAppendBasicBlockInContext(c->ctx, fn, "loop");
        LLVMBuildBr(c->b, hdr[l]);
        LLVMPositionBuilderAtEnd(c->b, hdr[l]);
        iv[l] = LLVMBuildPhi(c->b, c->i64, "i");
        LLVMValueRef z = cgl_i64(c, 0);
        LLVMAddIncoming(iv[l], &z, &pre, 1);
    }
    /* the body: operand loads, members, the store */
    LLVMValueRef *ext_v = xx_malloc(sizeof(LLVMValueRef) * ((size_t)grp->n_ext + 1));
    LLVMValueRef *mem_v = xx_malloc(sizeof(LLVMValueRef) * ((size_t)grp->n_members + 1));
    if (!ext_v || !mem_v) {
        xx_free(ext_v);
        xx_free(mem_v);
        st_errorf(c->st, ST_NOMEM, "codegen: out of memory");
        return NULL;
    }
    for (int k = 0; k < grp->n_ext; k++) {
        LLVMTypeRef et = cgl_elem_type(c, ir_value_type(grp->ext[k])->dtype);
        LLVMValueRef idx = index_of(c, loops, n_loops, iv, k);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(c->b, et, LLVMGetParam(fn, (unsigned)k), &idx, 1, "");
        ext_v[k] = LLVMBuildLoad2(c->b, et, p, "");
    }
    bool ok = true;
    for (int m = 0; m < grp->n_members && ok; m++) {
        const IrNode *n = grp->members[m];
        ElemOp e;
        memset(&e, 0, sizeof e);
        for (int k = 0; k < n->n_inputs; k++) {
            int mm = cg_elem_group_member(grp, n->inputs[k].node);
            int x = mm >= 0 ? -1 : cg_elem_group_ext(grp, n->inputs[k]);
            if (mm < 0 && x < 0) {
                ok = st_errorf(c->st, ST_ERROR, "node '%s': operand %d not in its kernel", cgl_who(n), k);
                break;
            }
            e.x[k] = mm >= 0 ? mem_v[mm] : ext_v[x];
        }
        if (!ok)
            break;
        e.in = ir_value_type(n->inputs[n->op == OP_SELECT ? 1 : 0])->dtype;
        e.out = n->out[0].type.dtype;
        if (ir_op_info(n->op)->flags & F_FLOAT && !is_float(e.in)) {
            ok = st_errorf(c->st, ST_UNSUPPORTED, "node '%s' (%s): op %s needs float operands, got %s", cgl_who(n),
                           n->origin_op ? n->origin_op : "?", ir_op_name(n->op), tcrt_dtype_name(e.in));
            break;
        }
        /* x ** 2 with a constant 2 is one multiply, as the C backend writes it */
        double two;
        LLVMValueRef v = n->op == OP_POW && is_float(e.in) && ir_const_scalar(n->inputs[1], &two) && two == 2.0
                             ? LLVMBuildFMul(c->b, e.x[0], e.x[0], "")
                             : rules[n->op](c, &e);
        /* results of arithmetic ops come in the operand type; stored as the node's */
        LLVMTypeRef want = cgl_elem_type(c, e.out);
        if (LLVMTypeOf(v) != want)
            v = cgl_convert(c, v, e.in, e.out);
        mem_v[m] = v;
    }
    if (ok) {
        LLVMTypeRef et = cgl_elem_type(c, ot->dtype);
        LLVMValueRef idx = index_of(c, loops, n_loops, iv, -1);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(c->b, et, LLVMGetParam(fn, (unsigned)grp->n_ext), &idx, 1, "");
        LLVMBuildStore(c->b, mem_v[grp->n_members - 1], p);
        for (int l = n_loops - 1; l >= 0; l--) {
            LLVMValueRef next = LLVMBuildNUWAdd(c->b, iv[l], cgl_i64(c, 1), "");
            LLVMValueRef more = LLVMBuildICmp(c->b, LLVMIntULT, next, cgl_i64(c, loops[l].size), "");
            LLVMBasicBlockRef latch = LLVMGetInsertBlock(c->b);
            LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(c->ctx, fn, "done");
            LLVMBuildCondBr(c->b, more, hdr[l], done);
            LLVMAddIncoming(iv[l], &next, &latch, 1);
            LLVMPositionBuilderAtEnd(c->b, done);
        }
        LLVMBuildRetVoid(c->b);
    }
    xx_free(ext_v);
    xx_free(mem_v);
    return ok ? fn : NULL;
}
