/* fast_conv_avx512.c - AVX-512 micro-kernel of the packed GEMM/convolution
 * (contract in fast_conv_int.h); compiled with -mavx512f -mfma in its own
 * translation unit and called only when the CPU has AVX-512F
 * (tcrt_kern_isa), so the rest of the runtime keeps the build's ISA.
 *
 * Tile 6 x 64: 24 zmm accumulators (four 16-wide panels per row), four zmm
 * for the B row and one broadcast A value per row.  Per k: 4 loads of B,
 * 6 broadcasts, 24 FMAs (12 cycles at two FMA ports); measured against
 * 14 x 32 and 12 x 32 (fewer loads per FMA, no spilled row pointers) it is
 * the fastest here, also with the panel in L2.  One always-inlined body,
 * instantiated for 1..4 panels (np is a constant in each), so a block of
 * Cout with 16, 32 or 48 columns left runs a narrower kernel and never
 * reads a panel that does not exist.  Rows >= mr and columns >= nc are
 * computed but never stored (masked stores), so remainders need no scratch.
 * The k loop is unrolled by 16 (10-15% faster than the plain loop on 3x3
 * layers) and issues 2-8 L2 prefetches of the caller's stream
 * (TcrtKernEpi.pf, the next weights) per 16 k steps (PF_MAX_LINES).
 * The loops over panels are unrolled (GCC kept them as loops, so the
 * accumulator arrays lived on the stack around the k loop: 24 stores and
 * loads per call) and the epilogue reads TcrtKernEpi once, with one copy
 * per activation (EPILOGUE); measured, 1 thread, min of 7 interleaved
 * rounds: 1x1 64 -> 256 at 56x56 with the residual in place 0.770 ->
 * 0.747 ms, 64 -> 64 at 28x28 0.0487 -> 0.0442 ms (with the task loop's
 * fix in fast_conv.c), 1024 -> 256 at 14x14 unchanged.
 *
 * GEMM kernel (tcrt_gemm_avx512): the same 6 x 64 register tile on packed
 * operands, A [kc][6] and B [kc][64] (one stream each, no pointer per row),
 * unrolled by 4; the tile of C is prefetched at entry and, when resuming
 * (load_c), added after the loop, so its load latency overlaps the FMAs.
 */
#include "fast_avx512_int.h"
#include "fast_conv_int.h"

#include <immintrin.h>

#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ROWS7(X) ROWS6(X) X(6)

/* Prefetch lines of the caller's stream per 16 k steps: as many as cover
 * its bytes over the call (at least 2, at most PF_MAX_LINES).  With two per
 * 16 k steps a 7x7 layer's call covered about a quarter of its slice of the
 * next weights, and the first tile over each part read the rest from memory
 * (measured, 1 thread, caches flushed by reading 600 MB: 3x3 512 -> 512 at
 * 7x7 2.02 -> 1.72 ms, 1x1 2048 -> 512 0.92 -> 0.82 ms, 1x1 512 -> 2048
 * with residual 0.94 -> 0.87 ms; 16 lines no better than 8). */
#define PF_MAX_LINES 8

/* Epilogue of one row (panels acc[0..np)) into dst: + bias + residual,
 * activation, masked store. */
static inline __attribute__((always_inline)) void store_row(const __m512 *acc, int np, const __m512 *bias,
                                                            const __mmask16 *m, float *dst, const float *res,
                                                            int act, __m512 alpha)
{
#pragma GCC unroll 4
    for (int q = 0; q < np; q++) {
        __m512 v = _mm512_add_ps(acc[q], bias[q]);
        if (res)
            v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m[q], res + 16 * q));
        _mm512_mask_storeu_ps(dst + 16 * q, m[q], zmm_act(v, act, alpha));
    }
}

/* The epilogue of a kernel call: STORE(r) (defined by the kernel, using
 * res, ldr, alpha and the constant A_) for each row ROWS lists, in one copy
 * per activation.  The fields of e are read into locals first: the stores
 * to C may alias *e, and GCC reloaded them after every store. */
#define EPILOGUE(ROWS, e)                                                                                    \
    const float *res = (e)->res;                                                                             \
    const int64_t ldr = (e)->ldr;                                                                            \
    const __m512 alpha = _mm512_set1_ps((e)->alpha);                                                         \
    switch ((e)->act) {                                                                                      \
    case TCRT_ACT_RELU: {                                                                                    \
        const int A_ = TCRT_ACT_RELU;                                                                        \
        ROWS(STORE) break;                                                                                   \
    }                                                                                                        \
    case TCRT_ACT_RELU6: {                                                                                   \
        const int A_ = TCRT_ACT_RELU6;                                                                       \
        ROWS(STORE) break;                                                                                   \
    }                                                                                                        \
    case TCRT_ACT_LEAKY: {                                                                                   \
        const int A_ = TCRT_ACT_LEAKY;                                                                       \
        ROWS(STORE) break;                                                                                   \
    }                                                                                                        \
    default: {                                                                                               \
        const int A_ = TCRT_ACT_NONE;                                                                        \
        ROWS(STORE) break;                                                                                   \
    }                                                                                                        \
    }

/* The conv kernel: MR rows (6 or 7) x np 16-column panels (MR 6: up to 4,
 * MR 7: up to 3; 28 accumulators would leave no register for the B row
 * and the broadcast). */
static inline __attribute__((always_inline)) void kern(int MR, int np, int64_t mr, int64_t nc, int64_t taps,
                                                       int64_t kc, const float *const *ind, const float *b,
                                                       int64_t pstride, float *c, int64_t ldc,
                                                       const TcrtKernEpi *epi)
{
    __mmask16 m[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
        m[q] = zmm_mask(nc - 16 * q);
        /* cR[q]: row R, panel q; arrays indexed only by constants after inlining */
#define DECL(r)                                                                                              \
    __m512 c##r[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    ROWS7(DECL)
#undef DECL
    if (epi->load_c) {
#define LOADC(r)                                                                                             \
    if (r < MR && r < mr)                                                                                    \
        _Pragma("GCC unroll 4") for (int q = 0; q < np; q++) c##r[q] =                                       \
            _mm512_maskz_loadu_ps(m[q], c + r * ldc + 16 * q);
        ROWS7(LOADC)
#undef LOADC
    }
    const float *bp = b;
    /* the prefetch stream: npf lines per 16 k steps until pf_last, then
     * the last line again (an L2 hit), so the loop has no branch for it */
    const char *pf = epi->pf ? epi->pf : (const char *)b, *pf_last = pf;
    int npf = 2;
    if (epi->pf && epi->pf_bytes > 128) {
        pf_last = pf + (epi->pf_bytes - 65) / 64 * 64;
        int64_t iters = taps * (kc / 16),
                want = iters > 0 ? ((epi->pf_bytes + 63) / 64 + iters - 1) / iters : 2;
        npf = want < 2 ? 2 : want > PF_MAX_LINES ? PF_MAX_LINES : (int)want;
    }
/* one k step: B row kk of the np panels, A column kk of the MR rows */
#define STEP(kk)                                                                                             \
    {                                                                                                        \
        int64_t kk_ = (kk);                                                                                  \
        __m512 b0 = _mm512_loadu_ps(bp);                                                                     \
        __m512 b1 = np > 1 ? _mm512_loadu_ps(bp + pstride) : b0;                                             \
        __m512 b2 = np > 2 ? _mm512_loadu_ps(bp + 2 * pstride) : b0;                                         \
        __m512 b3 = np > 3 ? _mm512_loadu_ps(bp + 3 * pstride) : b0;                                         \
        ROWS7(FMA_ROW)                                                                                       \
    }
#define FMA_ROW(r)                                                                                           \
    if (r < MR) {                                                                                            \
        __m512 av = _mm512_set1_ps(a##r[kk_]);                                                               \
        c##r[0] = _mm512_fmadd_ps(av, b0, c##r[0]);                                                          \
        if (np > 1)                                                                                          \
            c##r[1] = _mm512_fmadd_ps(av, b1, c##r[1]);                                                      \
        if (np > 2)                                                                                          \
            c##r[2] = _mm512_fmadd_ps(av, b2, c##r[2]);                                                      \
        if (np > 3)                                                                                          \
            c##r[3] = _mm512_fmadd_ps(av, b3, c##r[3]);                                                      \
    }
    for (int64_t t = 0; t < taps; t++, ind += MR) {
#define LOADP(r) const float *a##r = r < MR ? ind[r] : NULL;
        ROWS7(LOADP)
#undef LOADP
        int64_t k = 0;
        /* unrolled by 16 (measured 10-15% faster than the plain loop) */
        for (; k + 16 <= kc; k += 16) {
            for (int i = 0; i < npf; i++) {
                _mm_prefetch(pf, _MM_HINT_T1);
                pf = pf < pf_last ? pf + 64 : pf;
            }
#pragma GCC unroll 16
            for (int64_t u = k; u < k + 16; u++, bp += 16)
                STEP(u)
        }
        for (; k < kc; k++, bp += 16)
            STEP(k)
    }
#undef FMA_ROW
#undef STEP
    const TcrtKernEpi raw = {0}, *e = epi->partial ? &raw : epi;
    __m512 bias[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
        bias[q] = e->bias && q < np ? _mm512_maskz_loadu_ps(m[q], e->bias + 16 * q) : _mm512_setzero_ps();
#define STORE(r)                                                                                             \
    if (r < MR && r < mr)                                                                                    \
        store_row(c##r, np, bias, m, c + r * ldc, res ? res + r * ldr : NULL, A_, alpha);
    EPILOGUE(ROWS7, e)
#undef STORE
}

#define KERN(MR, np)                                                                                         \
    static void kern##MR##x##np(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,   \
                                const float *b, int64_t pstride, float *c, int64_t ldc,                      \
                                const TcrtKernEpi *epi)                                                      \
    {                                                                                                        \
        kern(MR, np, mr, nc, taps, kc, ind, b, pstride, c, ldc, epi);                                        \
    }
KERN(6, 1)
KERN(6, 2)
KERN(6, 3)
KERN(6, 4)
KERN(7, 1)
KERN(7, 2)
KERN(7, 3)
#undef KERN

void tcrt_ukernel_avx512(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                         const float *b, int64_t pstride, float *c, int64_t ldc, const TcrtKernEpi *epi)
{
    if (nc > 48)
        kern6x4(mr, nc, taps, kc, ind, b, pstride, c, ldc, epi);
    else if (nc > 32)
        kern6x3(mr, nc, taps, kc, ind, b, pstride, c, ldc, epi);
    else if (nc > 16)
        kern6x2(mr, nc, taps, kc, ind, b, pstride, c, ldc, epi);
    else
        kern6x1(mr, nc, taps, kc, ind, b, pstride, c, ldc, epi);
}

void tcrt_ukernel_avx512_r7(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                            const float *b, int64_t pstride, float *c, int64_t ldc, const TcrtKernEpi *epi)
{
    if (nc > 32)
        kern7x3(mr, nc, taps, kc, ind, b, pstride, c, ldc, epi);
    else if (nc > 16)
        kern7x2(mr, nc, taps, kc, ind, b, pstride, c, ldc, epi);
    else
        kern7x1(mr, nc, taps, kc, ind, b, pstride, c, ldc, epi);
}

/* ---- packed GEMM ---- */

static inline __attribute__((always_inline)) void gemm6(int np, int64_t mr, int64_t nc, int64_t kc,
                                                        const float *a, const float *b, float *c, int64_t ldc,
                                                        const TcrtKernEpi *epi)
{
    __mmask16 m[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
        m[q] = zmm_mask(nc - 16 * q);
    for (int64_t r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (int q = 0; q < np; q++)
            _mm_prefetch((const char *)(c + r * ldc + 16 * q), _MM_HINT_T0);
#define DECL(r)                                                                                              \
    __m512 c##r[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    ROWS6(DECL)
#undef DECL
#pragma GCC unroll 4
    for (int64_t k = 0; k < kc; k++, a += 6, b += 64) {
        __m512 b0 = _mm512_loadu_ps(b);
        __m512 b1 = np > 1 ? _mm512_loadu_ps(b + 16) : b0;
        __m512 b2 = np > 2 ? _mm512_loadu_ps(b + 32) : b0;
        __m512 b3 = np > 3 ? _mm512_loadu_ps(b + 48) : b0;
#define FMA(r)                                                                                               \
    {                                                                                                        \
        __m512 av = _mm512_set1_ps(a[r]);                                                                    \
        c##r[0] = _mm512_fmadd_ps(av, b0, c##r[0]);                                                          \
        if (np > 1)                                                                                          \
            c##r[1] = _mm512_fmadd_ps(av, b1, c##r[1]);                                                      \
        if (np > 2)                                                                                          \
            c##r[2] = _mm512_fmadd_ps(av, b2, c##r[2]);                                                      \
        if (np > 3)                                                                                          \
            c##r[3] = _mm512_fmadd_ps(av, b3, c##r[3]);                                                      \
    }
        ROWS6(FMA)
#undef FMA
    }
    if (epi->load_c) {
#define ADDC(r)                                                                                              \
    if (r < mr)                                                                                              \
        _Pragma("GCC unroll 4") for (int q = 0; q < np; q++) c##r[q] =                                       \
            _mm512_add_ps(c##r[q], _mm512_maskz_loadu_ps(m[q], c + r * ldc + 16 * q));
        ROWS6(ADDC)
#undef ADDC
    }
    const TcrtKernEpi raw = {0}, *e = epi->partial ? &raw : epi;
    __m512 bias[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++)
        bias[q] = e->bias && q < np ? _mm512_maskz_loadu_ps(m[q], e->bias + 16 * q) : _mm512_setzero_ps();
#define STORE(r)                                                                                             \
    if (r < mr)                                                                                              \
        store_row(c##r, np, bias, m, c + r * ldc, res ? res + r * ldr : NULL, A_, alpha);
    EPILOGUE(ROWS6, e)
#undef STORE
}

#define GEMM_NP(np)                                                                                          \
    static void gemm6x##np(int64_t mr, int64_t nc, int64_t kc, const float *a, const float *b, float *c,     \
                           int64_t ldc, const TcrtKernEpi *epi)                                              \
    {                                                                                                        \
        gemm6(np, mr, nc, kc, a, b, c, ldc, epi);                                                            \
    }
GEMM_NP(1)
GEMM_NP(2)
GEMM_NP(3)
GEMM_NP(4)
#undef GEMM_NP

void tcrt_gemm_avx512(int64_t mr, int64_t nc, int64_t kc, const float *a, const float *b, float *c,
                      int64_t ldc, const TcrtKernEpi *epi)
{
    if (nc > 48)
        gemm6x4(mr, nc, kc, a, b, c, ldc, epi);
    else if (nc > 32)
        gemm6x3(mr, nc, kc, a, b, c, ldc, epi);
    else if (nc > 16)
        gemm6x2(mr, nc, kc, a, b, c, ldc, epi);
    else
        gemm6x1(mr, nc, kc, a, b, c, ldc, epi);
}

/* Packs 6 rows of A (row stride lda) x kc into [kc][6]: per 16 k, the six
 * rows' vectors interleaved by three two-source permutes (rows 0/1, 2/3,
 * 4/5, same index) and two blends per output vector. */
void tcrt_pack_a6_avx512(const float *a, int64_t lda, int64_t kc, float *dst)
{
    int32_t idx[6][16];
    __mmask16 m23[6], m45[6];
    for (int j = 0; j < 6; j++) {
        unsigned b23 = 0, b45 = 0;
        for (int i = 0; i < 16; i++) {
            int p = 16 * j + i, r = p % 6;
            idx[j][i] = (r & 1) * 16 + p / 6;
            b23 |= (unsigned)(r == 2 || r == 3) << i;
            b45 |= (unsigned)(r >= 4) << i;
        }
        m23[j] = (__mmask16)b23, m45[j] = (__mmask16)b45;
    }
    int64_t k = 0;
    for (; k + 16 <= kc; k += 16, dst += 96) {
        __m512 r0 = _mm512_loadu_ps(a + k), r1 = _mm512_loadu_ps(a + lda + k);
        __m512 r2 = _mm512_loadu_ps(a + 2 * lda + k), r3 = _mm512_loadu_ps(a + 3 * lda + k);
        __m512 r4 = _mm512_loadu_ps(a + 4 * lda + k), r5 = _mm512_loadu_ps(a + 5 * lda + k);
        for (int j = 0; j < 6; j++) {
            __m512i ix = _mm512_loadu_si512(idx[j]);
            __m512 o = _mm512_permutex2var_ps(r0, ix, r1);
            o = _mm512_mask_blend_ps(m23[j], o, _mm512_permutex2var_ps(r2, ix, r3));
            o = _mm512_mask_blend_ps(m45[j], o, _mm512_permutex2var_ps(r4, ix, r5));
            _mm512_storeu_ps(dst + 16 * j, o);
        }
    }
    for (; k < kc; k++, dst += 6)
        for (int r = 0; r < 6; r++)
            dst[r] = a[r * lda + k];
}

/* ---- Winograd transforms at 16 lanes (fast_wino_int.h) ---- */

#define NV 16
#include "fast_wino_int.h"

void tcrt_wino_input_avx512(const TcrtWino *w, int64_t t0, int64_t nt, float *V)
{
    wino_input_tf(w, t0, nt, V);
}

void tcrt_wino_output_avx512(const TcrtWino *w, int64_t t0, int64_t nt, int64_t col0, int64_t ccw,
                             const float *M)
{
    wino_output_tf(w, t0, nt, col0, ccw, M);
}
