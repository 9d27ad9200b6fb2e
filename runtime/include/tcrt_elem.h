/* tcrt_elem.h - helpers used by the elementwise C expressions of ir/ops.def.
 *
 * Generated code and the compiler's constant folder both include this, so an
 * expression means the same thing at compile time and at run time.  Math
 * functions come from <tgmath.h>: on float operands they pick the float
 * variant (expf, tanhf), on doubles the double one.  Integer helpers are
 * selected with _Generic on the operand type.
 */
#ifndef TCRT_ELEM_H
#define TCRT_ELEM_H

#include <stdint.h>
#ifndef __cplusplus
#include <tgmath.h>
#endif

/* Vector math (docs/performance.md, "Vector math"): where tfcc links an
 * executable against glibc's libmvec (x86-64; targets/targets.c) it compiles
 * the model with TFCC_VECTOR_MATH and -fopenmp-simd.  The float functions of
 * ir/ops.def's expressions are then declared SIMD-callable, and the generated
 * elementwise loops that call them are marked TFCC_SIMD, so GCC vectorizes
 * them with calls to libmvec's variants (8 floats per call with AVX2, 16 with
 * AVX-512) instead of one libm call per element.  Elsewhere (the constant
 * folder, --emit c|lib|obj, other compilers and targets) TFCC_SIMD is empty and
 * the loops call libm as before. */
#if defined(TFCC_VECTOR_MATH) && defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&          \
    !defined(__cplusplus)
#define TCRT_VEC_DECL __attribute__((simd("notinbranch")))
float expf(float) TCRT_VEC_DECL;
float logf(float) TCRT_VEC_DECL;
float log1pf(float) TCRT_VEC_DECL;
float sinf(float) TCRT_VEC_DECL;
float cosf(float) TCRT_VEC_DECL;
float tanhf(float) TCRT_VEC_DECL;
float erff(float) TCRT_VEC_DECL;
float powf(float, float) TCRT_VEC_DECL;
float atan2f(float, float) TCRT_VEC_DECL;
#undef TCRT_VEC_DECL
#define TFCC_SIMD _Pragma("omp simd")
#else
#define TFCC_SIMD
#endif

/* Integer division and modulo never trap: b == 0 gives 0 (TF raises), and
 * b == -1 is done without the hardware divide, whose INT64_MIN / -1 raises
 * SIGFPE on x86 (the quotient wraps to INT64_MIN, the remainder is 0). */
static inline int64_t tcrt_neg_wrap_i(int64_t a)
{
    return (int64_t)(0 - (uint64_t)a); /* -a, wrapping at INT64_MIN */
}
static inline int64_t tcrt_div_i(int64_t a, int64_t b)
{
    return b == 0 ? 0 : b == -1 ? tcrt_neg_wrap_i(a) : a / b;
}
static inline uint64_t tcrt_div_u(uint64_t a, uint64_t b)
{
    return b == 0 ? 0 : a / b;
}
static inline float tcrt_div_f(float a, float b) { return a / b; }
static inline double tcrt_div_d(double a, double b) { return a / b; }
static inline int64_t tcrt_floordiv_i(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;               /* TF errors; generated code must not trap */
    if (b == -1)
        return tcrt_neg_wrap_i(a);
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}
static inline int64_t tcrt_floormod_i(int64_t a, int64_t b)
{
    if (b == 0 || b == -1)
        return 0;
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
        r += b;
    return r;
}
static inline float tcrt_floordiv_f(float a, float b) { return floorf(a / b); }
static inline double tcrt_floordiv_d(double a, double b) { return floor(a / b); }
static inline float tcrt_floormod_f(float a, float b)
{
    float r = fmodf(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline double tcrt_floormod_d(double a, double b)
{
    double r = fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

#define TCRT_FLOORDIV(a, b)                                                                        \
    _Generic((a) + (b), float: tcrt_floordiv_f, double: tcrt_floordiv_d, default: tcrt_floordiv_i)(\
        (a), (b))
#define TCRT_FLOORMOD(a, b)                                                                        \
    _Generic((a) + (b), float: tcrt_floormod_f, double: tcrt_floormod_d, default: tcrt_floormod_i)(\
        (a), (b))
/* Division; on integers it does not trap (b == 0: 0, TF raises; b == -1:
 * wrapping negation).  Operands narrower than int promote to int; unsigned
 * int and wider unsigned types divide as uint64_t, the rest as int64_t, and
 * the result converts back to the element type where it is stored. */
#define TCRT_DIV(a, b)                                                                             \
    _Generic((a) + (b), float: tcrt_div_f, double: tcrt_div_d, unsigned int: tcrt_div_u,           \
             unsigned long: tcrt_div_u, unsigned long long: tcrt_div_u, default: tcrt_div_i)((a), (b))
#define TCRT_SIGN(a) (((a) > 0) - ((a) < 0))

#endif
