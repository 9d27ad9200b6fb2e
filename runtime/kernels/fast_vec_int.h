/* fast_vec_int.h - float vectors of NV lanes (GCC vector extensions) and
 * their helpers, shared by the fast kernels' loops over channels; not
 * installed, not part of the runtime's public API.
 *
 * The includer defines NV first: 8 in the build's own code (fast_conv.c,
 * fast_pool.c, fast_reduce.c: one ymm with the x86-64-v3 build, two
 * 128-bit registers or plain loops elsewhere), 16 in fast_conv_avx512.c
 * (compiled with -mavx512f: one zmm).  Only static functions: each
 * translation unit has its own copy.
 */
#ifndef TCRT_FAST_VEC_INT_H
#define TCRT_FAST_VEC_INT_H

#include "fast_conv_int.h"

#include <stdint.h>
#include <string.h>
#if defined(__AVX__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#if !defined(NV) || (NV != 8 && NV != 16)
#error "define NV (8 or 16) before including fast_vec_int.h"
#endif

typedef float nvf __attribute__((vector_size(NV * sizeof(float))));
typedef int32_t nvi __attribute__((vector_size(NV * sizeof(int32_t))));

static inline nvf nv_load(const float *p)
{
    nvf v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The first n (< NV: the rest zero) floats at p; nothing past p + n is read. */
static inline nvf nv_load_n(const float *p, int64_t n)
{
    if (n >= NV)
        return nv_load(p);
    float t[NV] = {0};
    memcpy(t, p, (size_t)n * sizeof(float));
    return nv_load(t);
}

/* Every lane s.  Written as s - 0, which is s for every s (-0.0 and NaN
 * too), so the compiler broadcasts s as it is (from memory: one load);
 * {0} + s made it add 0.0 first (+0.0 + -0.0 is +0.0): a scalar add and a
 * register broadcast, both on FP ports, for every splat of the stem
 * loops' inner FMAs. */
static inline nvf nv_splat(float s)
{
    nvf z = {0};
    return s - z;
}

/* Lanes of a where m is set, else b. */
static inline nvf nv_blend(nvi m, nvf a, nvf b)
{
    return (nvf)(((nvi)a & m) | ((nvi)b & ~m));
}

/* a > b ? a : b and a < b ? a : b lane by lane (b where either is NaN),
 * as the x86 max/min instructions define them: one instruction each where
 * the vector is one register of the target, instead of a compare and a
 * blend (the depthwise rows' relu6 took two compares and two logic ops
 * per vector). */
static inline nvf nv_max(nvf a, nvf b)
{
#if NV == 8 && defined(__AVX__)
    return (nvf)_mm256_max_ps((__m256)a, (__m256)b);
#elif NV == 16 && defined(__AVX512F__)
    return (nvf)_mm512_max_ps((__m512)a, (__m512)b);
#else
    return nv_blend(a > b, a, b);
#endif
}

static inline nvf nv_min(nvf a, nvf b)
{
#if NV == 8 && defined(__AVX__)
    return (nvf)_mm256_min_ps((__m256)a, (__m256)b);
#elif NV == 16 && defined(__AVX512F__)
    return (nvf)_mm512_min_ps((__m512)a, (__m512)b);
#else
    return nv_blend(a < b, a, b);
#endif
}

/* tcrt_kern_act lane by lane, NaN too: relu max(v, 0) (0 for NaN, as v > 0
 * fails), relu6 min(6, max(0, v)) (NaN kept, as v < 0 and v > 6 fail). */
static inline nvf nv_act(nvf v, int act, float alpha)
{
    nvf z = nv_splat(0);
    switch (act) {
    case TCRT_ACT_RELU:
        return nv_max(v, z);
    case TCRT_ACT_RELU6:
        return nv_min(nv_splat(6), nv_max(z, v));
    case TCRT_ACT_LEAKY:
        return nv_blend(v < z, v * nv_splat(alpha), v);
    default:
        return v;
    }
}

#endif
