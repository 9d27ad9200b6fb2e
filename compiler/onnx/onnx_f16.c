/* compiler/onnx/onnx_f16.c - float16 and bfloat16 for the ONNX frontend.
 *
 * The IR has f16 and bf16 only as storage types: a graph input, a graph
 * output or a constant may hold them, and the one op on them is a cast to or
 * from u16 that reinterprets the 16 bits (ir/shape.c).  The numeric
 * conversions are built here from integer and float64 ops, so every backend
 * and constant folding run them unchanged:
 *   decode (bits -> float64, exact): sign = bits / 2^15, exponent field e and
 *     mantissa m by div/mod; value = (m + 2^p) * 2^(e - bias - p), or
 *     m * 2^(1 - bias - p) when e = 0; inf / NaN when e is all ones.
 *   encode (float64 -> bits, round to nearest even): e = floor(log2 |x|),
 *     corrected by comparing with 2^e, clamped below at emin (subnormals
 *     share emin's spacing); q = rint(|x| / 2^(e - p)); bits = (e - emin) *
 *     2^p + q, which carries into the exponent when q reaches 2^(p+1) and
 *     gives the subnormal encoding when e = emin and q < 2^p; capped at the
 *     infinity pattern; sign bit from x < 0 or 1/x < 0 (-0); NaN -> quiet NaN.
 * p = 10, bias = 15 for float16; p = 7, bias = 127 for bfloat16.
 * Ops other than Cast/CastLike/Identity whose inputs are 16-bit floats run in
 * float32 (onnx_import.c converts around the lowering).
 */
#include <math.h>
#include <string.h>

#include "compiler/onnx/onnx_int.h"

typedef struct Fmt {
    int p;     /* mantissa bits */
    int ebits; /* exponent bits */
    int bias;
    double qnan; /* quiet NaN pattern */
} Fmt;

static const Fmt F16 = {10, 5, 15, 0x7E00}, BF16 = {7, 8, 127, 0x7FC0};

bool onnx_is_storage(tcrt_dtype dt)
{
    return dt == TCRT_F16 || dt == TCRT_BF16;
}

static IrValue k(OnnxCtx *c, double v)
{
    return ir_const_scalar_f(c->g, TCRT_F64, v, c->st);
}
static IrValue b2(OnnxCtx *c, Op op, IrValue a, IrValue b)
{
    return ir_binary(c->g, op, a, b, c->st);
}
static IrValue sel(OnnxCtx *c, IrValue cond, IrValue a, IrValue b)
{
    IrValue v[3] = {cond, a, b};
    if (!cond.node || !a.node || !b.node)
        return (IrValue){NULL, 0};
    return ir_emit1(c->g, OP_SELECT, v, 3, NULL, NULL, c->st);
}

/* A 16-bit float tensor to float64 (exact). */
static IrValue decode(OnnxCtx *c, IrValue x, const Fmt *f)
{
    /* a constant is a u16 constant + reinterpreting cast: decode the u16 so
     * that the whole conversion folds */
    IrValue h = x.node->op == OP_CAST && ir_value_type(x.node->inputs[0])->dtype == TCRT_U16
                    ? x.node->inputs[0]
                    : ir_cast(c->g, x, TCRT_U16, c->st);
    IrValue hd = ir_cast(c->g, h, TCRT_F64, c->st); /* 0..65535, exact */
    double two_p = ldexp(1, f->p), emax = ldexp(1, f->ebits) - 1;
    IrValue s = b2(c, OP_GE, hd, k(c, 32768));
    IrValue e =
        b2(c, OP_FLOORMOD, ir_unary(c->g, OP_FLOOR, b2(c, OP_DIV, hd, k(c, two_p)), c->st), k(c, emax + 1));
    IrValue m = b2(c, OP_FLOORMOD, hd, k(c, two_p));
    IrValue normal = b2(c, OP_MUL, b2(c, OP_ADD, m, k(c, two_p)),
                        b2(c, OP_POW, k(c, 2), b2(c, OP_SUB, e, k(c, f->bias + f->p))));
    IrValue sub = b2(c, OP_MUL, m, k(c, ldexp(1, 1 - f->bias - f->p)));
    IrValue special = sel(c, b2(c, OP_EQ, m, k(c, 0)), k(c, INFINITY), k(c, NAN));
    IrValue mag = sel(c, b2(c, OP_EQ, e, k(c, 0)), sub, sel(c, b2(c, OP_EQ, e, k(c, emax)), special, normal));
    return sel(c, s, ir_unary(c->g, OP_NEG, mag, c->st), mag);
}

/* Any numeric tensor to a 16-bit float (round to nearest even). */
static IrValue encode(OnnxCtx *c, IrValue x, const Fmt *f, tcrt_dtype to)
{
    IrValue xd = ir_cast(c->g, x, TCRT_F64, c->st);
    IrValue a = ir_unary(c->g, OP_ABS, xd, c->st);
    int emin = 1 - f->bias, emax = f->bias;
    IrValue e =
        ir_unary(c->g, OP_FLOOR, b2(c, OP_MUL, ir_unary(c->g, OP_LOG, a, c->st), k(c, 1 / log(2.0))), c->st);
    e = b2(c, OP_MIN, b2(c, OP_MAX, e, k(c, emin - 1)), k(c, emax + 1));
    /* log's rounding: move e so that 2^e <= |x| < 2^(e+1) */
    e = sel(c, b2(c, OP_GT, b2(c, OP_POW, k(c, 2), e), a), b2(c, OP_SUB, e, k(c, 1)), e);
    IrValue e1 = b2(c, OP_ADD, e, k(c, 1));
    e = sel(c, b2(c, OP_LE, b2(c, OP_POW, k(c, 2), e1), a), e1, e);
    e = b2(c, OP_MAX, e, k(c, emin));
    IrValue ulp = b2(c, OP_POW, k(c, 2), b2(c, OP_SUB, e, k(c, f->p)));
    IrValue q = ir_unary(c->g, OP_ROUND, b2(c, OP_DIV, a, ulp), c->st);
    double two_p = ldexp(1, f->p), inf_bits = (ldexp(1, f->ebits) - 1) * two_p;
    IrValue bits = b2(c, OP_ADD, b2(c, OP_MUL, b2(c, OP_SUB, e, k(c, emin)), k(c, two_p)), q);
    bits = b2(c, OP_MIN, bits, k(c, inf_bits));
    IrValue neg =
        b2(c, OP_OR, b2(c, OP_LT, xd, k(c, 0)), b2(c, OP_LT, ir_unary(c->g, OP_RECIP, xd, c->st), k(c, 0)));
    bits = sel(c, neg, b2(c, OP_ADD, bits, k(c, 32768)), bits);
    bits = sel(c, b2(c, OP_NE, xd, xd), k(c, f->qnan), bits);
    return ir_cast(c->g, ir_cast(c->g, bits, TCRT_U16, c->st), to, c->st);
}

IrValue onnx_cast(OnnxCtx *c, IrValue x, tcrt_dtype to)
{
    if (!x.node)
        return x;
    tcrt_dtype from = ir_value_type(x)->dtype;
    if (from == to)
        return x;
    if (onnx_is_storage(from)) {
        IrValue d = decode(c, x, from == TCRT_F16 ? &F16 : &BF16);
        return onnx_is_storage(to) ? encode(c, d, to == TCRT_F16 ? &F16 : &BF16, to)
                                   : ir_cast(c->g, d, to, c->st);
    }
    if (onnx_is_storage(to))
        return encode(c, x, to == TCRT_F16 ? &F16 : &BF16, to);
    return ir_cast(c->g, x, to, c->st);
}
