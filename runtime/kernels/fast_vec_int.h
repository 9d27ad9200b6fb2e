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

/* tcrt_kern_act lane by lane (the same compares, so NaN too). */
static inline nvf nv_act(nvf v, int act, float alpha)
{
    nvf z = nv_splat(0);
    switch (act) {
    case TCRT_ACT_RELU:
        return nv_blend(v > z, v, z);
    case TCRT_ACT_RELU6: {
        nvf six = nv_splat(6);
        return nv_blend(v < z, z, nv_blend(v > six, six, v));
    }
    case TCRT_ACT_LEAKY:
        return nv_blend(v < z, v * nv_splat(alpha), v);
    default:
        return v;
    }
}

#endif
