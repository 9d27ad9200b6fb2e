/* fast_avx512_int.h - zmm helpers shared by the AVX-512 translation units
 * (fast_conv_avx512.c, fast_sgemm_avx512.c; both compiled with -mavx512f);
 * not installed, not part of the runtime's public API.  Only static inline
 * functions: each translation unit has its own copy.
 */
#ifndef TCRT_FAST_AVX512_INT_H
#define TCRT_FAST_AVX512_INT_H

#include "fast_conv_int.h"

#include <immintrin.h>

#ifndef __AVX512F__
#error "fast_avx512_int.h is for translation units compiled with -mavx512f"
#endif

/* The epilogue's activation on 16 lanes, as tcrt_kern_act does for one
 * value: relu maps NaN to 0, relu6 and leaky keep it (x86's max and min
 * return their second operand when one is NaN, hence the operand order),
 * leaky scales the negative lanes by alpha.  act is a constant in each
 * inlined copy where the caller switches on it once per call. */
static inline __attribute__((always_inline)) __m512 zmm_act(__m512 v, int act, __m512 alpha)
{
    switch (act) {
    case TCRT_ACT_RELU:
        return _mm512_max_ps(v, _mm512_setzero_ps());
    case TCRT_ACT_RELU6:
        return _mm512_min_ps(_mm512_set1_ps(6.0f), _mm512_max_ps(_mm512_setzero_ps(), v));
    case TCRT_ACT_LEAKY: {
        __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
        return _mm512_mask_mul_ps(v, neg, v, alpha);
    }
    default:
        return v;
    }
}

/* Mask of the first n lanes of 16 (none for n <= 0, all for n >= 16). */
static inline __mmask16 zmm_mask(int64_t n)
{
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

#endif
