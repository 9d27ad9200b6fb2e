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

static inline int64_t tcrt_floordiv_i(int64_t a, int64_t b)
{
    if (b == 0)
        return 0;               /* TF errors; generated code must not trap */
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}
static inline int64_t tcrt_floormod_i(int64_t a, int64_t b)
{
    if (b == 0)
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
/* Integer division that does not trap on b == 0 (TF raises; we return 0). */
#define TCRT_DIV(a, b) _Generic((a) + (b), float: (a) / (b), double: (a) / (b), default: ((b) ? (a) / ((b) ? (b) : 1) : 0))
#define TCRT_SIGN(a) (((a) > 0) - ((a) < 0))

#endif
