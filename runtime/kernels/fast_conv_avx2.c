/* fast_conv_avx2.c - AVX2+FMA micro-kernel of the packed GEMM/convolution
 * (contract in fast_conv_int.h); compiled with -mavx2 -mfma in its own
 * translation unit and called only when the CPU has both (tcrt_kern_isa).
 *
 * Tile 6 x 16: 12 ymm accumulators (two 8-wide halves of a 16-wide panel
 * per row), two ymm for the B row and one broadcast: 15 of the 16 ymm
 * registers.  Per k: 2 loads of B, 6 broadcasts, 12 FMAs.  Full 16-column
 * tiles run the epilogue on registers; a partial tile (nc < 16) spills the
 * row to a 16-float stack buffer and stores nc columns from it.  The k loop
 * is unrolled by 8 with one L2 prefetch of the caller's stream
 * (TcrtKernEpi.pf, the next weights) per 8 steps.
 * GEMM kernel (tcrt_gemm_avx2): the same tile on packed A [kc][6] and
 * B [kc][16]; C is prefetched at entry and added after the loop (load_c).
 */
#include "fast_conv_int.h"

#include <immintrin.h>

#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)

static inline __m256 apply_act(__m256 v, const TcrtKernEpi *e)
{
    switch (e->act) {
    case TCRT_ACT_RELU:
        return _mm256_max_ps(v, _mm256_setzero_ps());
    case TCRT_ACT_RELU6:
        return _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(6.0f));
    case TCRT_ACT_LEAKY: {
        __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
        return _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(e->alpha)), neg);
    }
    default:
        return v;
    }
}

/* Epilogue of one row's 16 columns (lo, hi) into dst; nc < 16 goes through
 * a stack buffer so that nothing past column nc is read or written. */
static inline void store_row(__m256 lo, __m256 hi, float *dst, const float *res, int64_t nc,
                             const TcrtKernEpi *e)
{
    if (nc >= 16) {
        if (e->bias) {
            lo = _mm256_add_ps(lo, _mm256_loadu_ps(e->bias));
            hi = _mm256_add_ps(hi, _mm256_loadu_ps(e->bias + 8));
        }
        if (res) {
            lo = _mm256_add_ps(lo, _mm256_loadu_ps(res));
            hi = _mm256_add_ps(hi, _mm256_loadu_ps(res + 8));
        }
        _mm256_storeu_ps(dst, apply_act(lo, e));
        _mm256_storeu_ps(dst + 8, apply_act(hi, e));
        return;
    }
    float tmp[16];
    _mm256_storeu_ps(tmp, lo);
    _mm256_storeu_ps(tmp + 8, hi);
    for (int64_t j = 0; j < nc; j++) {
        float v = tmp[j] + (e->bias ? e->bias[j] : 0.0f) + (res ? res[j] : 0.0f);
        switch (e->act) {
        case TCRT_ACT_RELU:
            v = v > 0 ? v : 0;
            break;
        case TCRT_ACT_RELU6:
            v = v < 0 ? 0 : (v > 6 ? 6 : v);
            break;
        case TCRT_ACT_LEAKY:
            v = v < 0 ? v * e->alpha : v;
            break;
        default:
            break;
        }
        dst[j] = v;
    }
}

void tcrt_ukernel_avx2(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                       const float *b, int64_t pstride, float *c, int64_t ldc, const TcrtKernEpi *epi)
{
    (void)pstride;
#define DECL(r) __m256 c##r##l = _mm256_setzero_ps(), c##r##h = _mm256_setzero_ps();
    ROWS6(DECL)
#undef DECL
    if (epi->load_c) {
        float tmp[16] = {0};
#define LOADC(r)                                                                                             \
    if (r < mr) {                                                                                            \
        const float *src = c + r * ldc;                                                                      \
        if (nc < 16) {                                                                                       \
            for (int64_t j = 0; j < nc; j++)                                                                 \
                tmp[j] = src[j];                                                                             \
            src = tmp;                                                                                       \
        }                                                                                                    \
        c##r##l = _mm256_loadu_ps(src);                                                                      \
        c##r##h = _mm256_loadu_ps(src + 8);                                                                  \
    }
        ROWS6(LOADC)
#undef LOADC
    }
    const float *bp = b;
    /* the prefetch stream (TcrtKernEpi.pf: the weights the next calls read):
     * one line per 8 k steps until pf_last, then the last line again (an L2
     * hit), so the loop has no branch for it.  Measured on the 7x7x512 3x3
     * conv (Cout-block-major, 9.4 MB of weights from memory): see
     * docs/performance.md. */
    const char *pf = epi->pf ? epi->pf : (const char *)b, *pf_last = pf;
    if (epi->pf && epi->pf_bytes > 64)
        pf_last = pf + (epi->pf_bytes - 1) / 64 * 64;
#define FMA(r)                                                                                               \
    {                                                                                                        \
        __m256 av = _mm256_broadcast_ss(a##r + k);                                                           \
        c##r##l = _mm256_fmadd_ps(av, b0, c##r##l);                                                          \
        c##r##h = _mm256_fmadd_ps(av, b1, c##r##h);                                                          \
    }
    for (int64_t t = 0; t < taps; t++, ind += TCRT_AVX2_MR) {
#define LOADP(r) const float *a##r = ind[r];
        ROWS6(LOADP)
#undef LOADP
        int64_t k = 0;
        for (; k + 8 <= kc;) {
            _mm_prefetch(pf, _MM_HINT_T1);
            pf = pf < pf_last ? pf + 64 : pf;
#pragma GCC unroll 8
            for (int u = 0; u < 8; u++, k++, bp += 16) {
                __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
                ROWS6(FMA)
            }
        }
        for (; k < kc; k++, bp += 16) {
            __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
            ROWS6(FMA)
        }
    }
#undef FMA
    const TcrtKernEpi raw = {0}, *e = epi->partial ? &raw : epi;
#define STORE(r)                                                                                             \
    if (r < mr)                                                                                              \
        store_row(c##r##l, c##r##h, c + r * ldc, e->res ? e->res + r * e->ldr : NULL, nc, e);
    ROWS6(STORE)
#undef STORE
}

void tcrt_gemm_avx2(int64_t mr, int64_t nc, int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                    const TcrtKernEpi *epi)
{
    for (int64_t r = 0; r < mr; r++)
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
#define DECL(r) __m256 c##r##l = _mm256_setzero_ps(), c##r##h = _mm256_setzero_ps();
    ROWS6(DECL)
#undef DECL
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++, a += 6, b += 16) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#define FMA(r)                                                                                               \
    {                                                                                                        \
        __m256 av = _mm256_broadcast_ss(a + r);                                                              \
        c##r##l = _mm256_fmadd_ps(av, b0, c##r##l);                                                          \
        c##r##h = _mm256_fmadd_ps(av, b1, c##r##h);                                                          \
    }
        ROWS6(FMA)
#undef FMA
    }
    if (epi->load_c) {
        float tmp[16] = {0};
#define ADDC(r)                                                                                              \
    if (r < mr) {                                                                                            \
        const float *src = c + r * ldc;                                                                      \
        if (nc < 16) {                                                                                       \
            for (int64_t j = 0; j < nc; j++)                                                                 \
                tmp[j] = src[j];                                                                             \
            src = tmp;                                                                                       \
        }                                                                                                    \
        c##r##l = _mm256_add_ps(c##r##l, _mm256_loadu_ps(src));                                              \
        c##r##h = _mm256_add_ps(c##r##h, _mm256_loadu_ps(src + 8));                                          \
    }
        ROWS6(ADDC)
#undef ADDC
    }
    const TcrtKernEpi raw = {0}, *e = epi->partial ? &raw : epi;
#define STORE(r)                                                                                             \
    if (r < mr)                                                                                              \
        store_row(c##r##l, c##r##h, c + r * ldc, e->res ? e->res + r * e->ldr : NULL, nc, e);
    ROWS6(STORE)
#undef STORE
}
