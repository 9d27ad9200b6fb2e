/* fast_conv_int.h - internal interface of the packed-weight GEMM/convolution
 * kernels (fast_conv.c and its per-ISA micro-kernels fast_conv_avx2.c,
 * fast_conv_avx512.c); not installed, not part of the runtime's public API.
 *
 * One micro-kernel computes C[mr x nc] = epilogue(sum over taps t, k < kc of
 * A[t][r][k] * B[t*kc + k][0..nc)) with A given as row POINTERS (indirect
 * GEMM): ind[t*mr_max + r] is row r's vector for tap t (a conv input pixel's
 * Cin vector, or a shared zero vector when the tap falls into padding; a
 * matmul row with one tap).  B is 16-wide packed panels ([taps*kc][16] each,
 * panel j+1 pstride floats after panel j), the layout of
 * tcrt_pack_conv_weights.  The accumulators stay in registers over all taps
 * and kc; the epilogue (bias, residual, activation) runs at the one store.
 * A GEMM split along K calls the kernel once per K block on the same tile
 * with load_c (all but the first) and partial (all but the last).
 * Rows r >= mr must still hold readable pointers (the driver repeats a valid
 * row); columns >= nc are computed from the zero padding of the panel and
 * never stored.  A kernel reads panel 1 only when nc > 16.
 */
#ifndef TCRT_FAST_CONV_INT_H
#define TCRT_FAST_CONV_INT_H

#include "tcrt_kernels.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The fused activation of one float32 value (TCRT_ACT_*; alpha: leaky
 * slope), shared by every fast kernel's scalar epilogue. */
static inline float tcrt_kern_act(float v, int64_t act, float alpha)
{
    switch (act) {
    case TCRT_ACT_RELU:
        return v > 0 ? v : 0;
    case TCRT_ACT_RELU6:
        return v < 0 ? 0 : (v > 6 ? 6 : v);
    case TCRT_ACT_LEAKY:
        return v < 0 ? v * alpha : v;
    default:
        return v;
    }
}

/* Fused epilogue of one tile: bias at the tile's first column (or NULL),
 * residual rows (or NULL) with row stride ldr, activation code and alpha. */
typedef struct TcrtKernEpi {
    const float *bias;
    const float *res;
    int64_t ldr;
    int act;
    float alpha;
    bool load_c;  /* start from C's values instead of 0 (K blocks after the first) */
    bool partial; /* store the raw sums, no bias/residual/activation (K blocks before the last) */
    /* Prefetch hint: bytes [pf, pf + pf_bytes) (data the next calls will
     * stream, e.g. the next Cout block's weights) are prefetched into L2,
     * one line per k step, so that memory traffic overlaps the FMAs
     * (pf NULL: none; kernels may ignore it). */
    const char *pf;
    int64_t pf_bytes;
} TcrtKernEpi;

typedef void (*tcrt_ukernel_fn)(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                                const float *b, int64_t pstride, float *c, int64_t ldc,
                                const TcrtKernEpi *epi);

/* Packed GEMM kernel: C[mr x nc] = epilogue(sum over k < kc of a[k][r] *
 * b[k][0..nc)) with A packed [kc][MR] (rows >= mr zero) and B packed
 * [kc][NR] (columns >= nc zero), MR and NR the ISA's tile; load_c adds C's
 * values after the loop, partial as for the conv kernel. */
typedef void (*tcrt_gemm_fn)(int64_t mr, int64_t nc, int64_t kc, const float *a, const float *b, float *c,
                             int64_t ldc, const TcrtKernEpi *epi);

/* Tile shape of each ISA: MR rows, NR columns (a multiple of 16).  The
 * AVX2 conv kernel takes any number of columns per call (its 6 x 16
 * register tile once per 16-column panel); TCRT_AVX2_CONV_NR is the
 * conv driver's Cout block for it, TCRT_AVX2_NR its GEMM kernel's. */
#define TCRT_PORTABLE_MR 4
#define TCRT_PORTABLE_NR 16
#define TCRT_AVX2_MR 6
#define TCRT_AVX2_NR 16
#define TCRT_AVX2_CONV_NR 64
#define TCRT_AVX2_R5_MR 5
#define TCRT_AVX512_MR 6
#define TCRT_AVX512_NR 64
#define TCRT_AVX512_R7_MR 7
#define TCRT_AVX512_R7_NR 48
#define TCRT_KERN_MAX_MR 7

void tcrt_ukernel_avx2(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                       const float *b, int64_t pstride, float *c, int64_t ldc, const TcrtKernEpi *epi);
/* 5 x 16, otherwise the same (fast_conv.c conv_kernel and tcrt_pconv_rows
 * pick it where 5-row tiles waste fewer rows). */
void tcrt_ukernel_avx2_r5(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                          const float *b, int64_t pstride, float *c, int64_t ldc, const TcrtKernEpi *epi);
void tcrt_ukernel_avx512(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                         const float *b, int64_t pstride, float *c, int64_t ldc, const TcrtKernEpi *epi);
/* 7 x 48 (fast_conv.c conv_kernel picks it where 7-row tiles waste fewer
 * rows). */
void tcrt_ukernel_avx512_r7(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                            const float *b, int64_t pstride, float *c, int64_t ldc, const TcrtKernEpi *epi);

void tcrt_gemm_avx2(int64_t mr, int64_t nc, int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                    const TcrtKernEpi *epi);
void tcrt_gemm_avx512(int64_t mr, int64_t nc, int64_t kc, const float *a, const float *b, float *c,
                      int64_t ldc, const TcrtKernEpi *epi);
/* 6 rows of A (row stride lda), columns [0, kc), packed as [kc][6]
 * (writes exactly 6 * kc floats). */
void tcrt_pack_a6_avx512(const float *a, int64_t lda, int64_t kc, float *dst);
void tcrt_pack_a6_avx2(const float *a, int64_t lda, int64_t kc, float *dst);

/* The weights of the packed conv that ran after the one with weights w on
 * this thread (learned for the next-layer prefetch), NULL when none; for
 * tests. */
const float *tcrt_pconv_next_weights(const float *w);

/* The Winograd conv's transforms (fast_conv.c wino_run, written once in
 * fast_wino_int.h): the input x [N,H,W,C] with padding pt/pl in tiles of
 * m x m outputs (a x a patches, pts = a*a points, tw tiles per output row,
 * tpi per image), transformed into V [pts][tile][cpad] (point stride vs
 * floats); the GEMMs' sums M [pts][tile][TCRT_WINO_CC] (point stride ms)
 * transformed into y [N,OH,OW,O] with bias, residual and activation. */
#define TCRT_WINO_CC 64      /* Cout columns per chunk (M's tile stride) */
#define TCRT_WINO_MAX_PTS 36 /* points of the largest tile, F(4x4) */
typedef struct TcrtWino {
    const float *x;
    int64_t N, H, W, C, pt, pl;
    float *y;
    const float *bias, *res;
    int64_t O, OH, OW;
    int act;
    float alpha;
    int64_t m, a, pts, tw, tpi;
    int64_t vs, cpad, ms;
} TcrtWino;

/* The AVX-512 (16-lane) copies: tiles [t0, t0 + nt) into V; columns
 * [col0, col0 + ccw) of tiles [t0, t0 + nt) from M into y.  Callers take
 * them for C (input) or O (output) a multiple of 16. */
void tcrt_wino_input_avx512(const TcrtWino *w, int64_t t0, int64_t nt, float *V);
void tcrt_wino_output_avx512(const TcrtWino *w, int64_t t0, int64_t nt, int64_t col0, int64_t ccw,
                             const float *M);

/* Rows per tile of the packed direct conv over pixels output pixels on the
 * current ISA (7 where tcrt_ukernel_avx512_r7 is taken, 5 where
 * tcrt_ukernel_avx2_r5 is); for tests. */
int64_t tcrt_conv_tile_rows(int64_t pixels);

/* tcrt_kern_isa and the TCRT_ISA_* levels: tcrt_kernels.h. */
/* Tests: caps the ISA at isa (-1: no cap); returns the previous cap.  An ISA
 * the CPU or build lacks is never used (tcrt_kern_isa says what runs). */
int tcrt_kern_force_isa(int isa);
/* Whether the CPU and the build support isa. */
bool tcrt_kern_isa_supported(int isa);

/* Packed-weight conv2d (TCRT_CONV_PACKED): workspace bytes (0 when the call
 * is not one it handles) and the kernel, which falls back to tcrt_ref_conv2d
 * for what it does not handle or a too small workspace. */
size_t tcrt_pconv_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p);
tcrt_status tcrt_pconv_run(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                           const tcrt_params *p);

/* Output columns [*in0, *in1) of a window KW wide (dilation dw, stride sw,
 * left pad pl) over a row W wide whose taps all lie inside it: ow*sw - pl
 * >= 0 and ow*sw - pl + (KW-1)*dw <= W-1; *in1 is clamped to [*in0, OW].
 * The direct loops (fast_conv.c) and the depthwise kernels (fast_pool.c)
 * take the columns outside with clipped taps. */
static inline void tcrt_interior_cols(int64_t W, int64_t KW, int64_t sw, int64_t dw, int64_t pl, int64_t OW,
                                      int64_t *in0, int64_t *in1)
{
    int64_t last = W - 1 - (KW - 1) * dw + pl;
    *in0 = (pl + sw - 1) / sw;
    *in1 = last < 0 ? 0 : last / sw + 1;
    *in1 = *in1 > OW ? OW : *in1;
    *in1 = *in1 < *in0 ? *in0 : *in1;
}

/* One 1x1 packed conv over n pixels on the calling thread:
 * y[p][0..O) (row stride O) = act(x[p][0..C) . w + bias + res[p]), x's
 * pixels C floats apart, w packed as a [1,1,C,O] filter
 * (tcrt_pack_conv_weights), bias NULL or [O], res NULL or rows like y's;
 * the micro-kernel of tcrt_kern_isa(), tile-major; on AVX-512 the 7 x 48
 * tile where 7-row tiles cover n with at least 3% fewer rows (conv_kernel's
 * rule: rows of 56, 28, 14, 7 pixels; MobileNetV2's 56x56 fused block at 1
 * thread 0.456 -> 0.411-0.424 ms, the model 0.977x in 8 alternating runs,
 * even at 2 threads). */
void tcrt_pconv_rows(const float *x, int64_t n, int64_t C, const float *w, const float *bias, int64_t O,
                     int act, float alpha, const float *res, float *y);

/* The depthwise conv with fused 1x1 convs (TCRT_CONV_PACK_DWBLOCK,
 * fast_pool.c): workspace bytes and the kernel (reference fallback for what
 * it does not handle or a too small workspace). */
size_t tcrt_dwblock_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p);
tcrt_status tcrt_dwblock_run(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                             const tcrt_params *p);

/* GEMV, dot form: y[j] += X[j*K .. j*K+K) . v for j in [j0, j1), four rows
 * of X per pass over v with two accumulators each, so eight FMA chains
 * run at once (Eigen's one dot per row was latency-bound: with the weights
 * in cache, 1000 x 1280 0.091 -> 0.072 ms).  Shared by fast_eigen.cc and
 * its C twin fast_gemm.c. */
void tcrt_gemv_dot(const float *X, int64_t K, const float *v, float *y, int64_t j0, int64_t j1);

/* Multiply-adds below which a matmul that packs its operands on every call
 * (tcrt_kmm_run, tcrt_sgemm_avx512 through tcrt_fast_matmul) runs on one
 * thread: split, each thread reads the B panels the other core packed, and
 * every block takes two pool runs (measured in fast_conv.c's comment). */
enum { TCRT_GEMM_SERIAL_MACS = 3 << 20 };

/* GEMM for tcrt_fast_matmul: C[M,N] (row stride N) = act(A[M,K] (row stride
 * K) * op(B) + bias), B [K,N] or, when tb, [N,K]; B is packed into ws.
 * tcrt_kmm_applies: whether this path is worth taking (sizes, and an ISA
 * with a SIMD kernel); tcrt_kmm_workspace: bytes it needs (packed B, and
 * a copy of A when its row stride would thrash L1). */
bool tcrt_kmm_applies(int64_t M, int64_t N, int64_t K);
size_t tcrt_kmm_workspace(int64_t M, int64_t N, int64_t K);
void tcrt_kmm_run(int64_t M, int64_t N, int64_t K, const float *A, const float *B, bool tb, float *C,
                  const float *bias, int act, float alpha, void *ws);
/* A batch of n_batch such products whose entries are each too small to
 * split over the threads (tcrt_kmm_run keeps them on one thread): the
 * entries as tasks, one entry each, on up to as many threads as ws_bytes
 * holds tcrt_kmm_workspace slices, each thread packing into its own slice;
 * entry(ctx, bi, &A, &B, &C) gives entry bi's operands.  false (nothing
 * done) when that does not apply: fewer than 2 entries, threads or slices,
 * entries large enough to split, or tcrt_kmm_applies says no. */
typedef void (*tcrt_kmm_entry_fn)(void *ctx, int64_t bi, const float **A, const float **B, float **C);
bool tcrt_kmm_run_batch(int64_t n_batch, int64_t M, int64_t N, int64_t K, bool tb, const float *bias, int act,
                        float alpha, void *ws, size_t ws_bytes, tcrt_kmm_entry_fn entry, void *ctx);

/* Large float32 GEMM (fast_sgemm_avx512.c, built only when runtime_isa
 * allows AVX-512; call only when tcrt_kern_isa() is TCRT_ISA_AVX512):
 * C[M,N] (row stride N) = act(op(A) op(B) + bias) with A [M,K] or, when ta,
 * [K,M], B [K,N] or, when tb, [N,K]; nth: the team size whose pool runs it
 * (1: the caller alone).  ws (ws_bytes long) holds the packed operands:
 * tcrt_sgemm_workspace bytes run the preferred blocking (shapes only, no
 * CPU query; 0 when a size overflows), less runs without the A store kept
 * across N blocks, then narrower N blocks, and a
 * workspace too small for one micro-panel, or M, N or K < 1, returns false
 * without touching C. */
bool tcrt_sgemm_avx512(int64_t M, int64_t N, int64_t K, const float *A, bool ta, const float *B, bool tb,
                       float *C, const float *bias, int act, float alpha, void *ws, size_t ws_bytes, int nth);
size_t tcrt_sgemm_workspace(int64_t M, int64_t N, int64_t K);
/* Tests and benchmarks/sgemm: 0 keeps tcrt_fast_matmul off this GEMM (the
 * older Eigen / 6 x 64 paths run), 1 lets it run where it applies (the
 * default); returns the previous setting (fast_eigen.cc). */
int tcrt_sgemm_enable(int on);

/* Per-thread slots in a kernel's workspace: floats from one thread's slot
 * to the next, for slots slots of at least slot floats each from the
 * 64-byte aligned base on.  The workspace is the model's one kernel
 * scratch buffer (passes/memplan.c), at least as large as this kernel
 * asked for; spreading the slots over all of it puts thread t's slot at
 * the same place in every kernel that uses this (as long as each slot
 * fits a slots-th of the buffer), so it is still in that thread's cache
 * and no other core owns its lines: a slot that another thread wrote in
 * the kernel before costs every line a transfer between the cores. */
static inline int64_t tcrt_ws_slot_stride(const tcrt_tensor *ws, const void *base, int slots, int64_t slot)
{
    size_t bytes = (size_t)tcrt_tensor_count(ws) * tcrt_dtype_size(ws->dtype),
           skip = (size_t)((uintptr_t)base - (uintptr_t)ws->data);
    int64_t stride = bytes > skip ? (int64_t)((bytes - skip) / (size_t)slots / 64 * 16) : 0;
    return stride > slot ? stride : slot;
}

#ifdef __cplusplus
}
#endif
#endif
