/* fast_conv_avx2.c - AVX2+FMA micro-kernel of the packed GEMM/convolution
 * (contract in fast_conv_int.h); compiled with -mavx2 -mfma in its own
 * translation unit and called only when the CPU has both (tcrt_kern_isa).
 *
 * Tile 6 x 16: 12 ymm accumulators (two 8-wide halves of a 16-wide panel
 * per row), two ymm for the B row and one broadcast: 15 of the 16 ymm
 * registers.  Per k: 2 loads of B, 6 broadcasts, 12 FMAs.  The conv kernel
 * also comes as 5 x 16 (tcrt_ukernel_avx2_r5: the same code with the sixth
 * row compiled out): per k 2 loads, 5 broadcasts, 10 FMAs, the same FMA
 * cycles per row, for the pixel counts that 6-row tiles round up the most
 * (fast_conv.c conv_kernel, mixed_tiles, tcrt_pconv_rows).  A panel of
 * 16 (or 8) live columns on every row of the tile, not loading C, with
 * activation none, relu or relu6 (nearly all of a model's) is one asm
 * statement, k loop and epilogue (asm_panel); the others (a partial tile, a K block
 * after the first, leaky relu) take the intrinsics path around the asm k
 * steps (KSTEP), which stores a partial row's nc columns through masks and
 * 4-, 2- and 1-lane stores.  The k loop is unrolled by 8 with one L2
 * prefetch of the caller's stream (TcrtKernEpi.pf, the next weights) per
 * 8 steps.
 * GEMM kernel (tcrt_gemm_avx2): the same tile on packed A [kc][6] and
 * B [kc][16]; C is prefetched at entry and added after the loop (load_c).
 */
#include "fast_conv_int.h"

#include <immintrin.h>
#include <stddef.h>

#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)

/* act is a constant at every call (STORE6 expands one copy per activation),
 * so the switch folds away. */
static inline __attribute__((always_inline)) __m256 apply_act(__m256 v, int act, float alpha)
{
    switch (act) {
    case TCRT_ACT_RELU:
        return _mm256_max_ps(v, _mm256_setzero_ps());
    case TCRT_ACT_RELU6:
        return _mm256_min_ps(_mm256_set1_ps(6.0f), _mm256_max_ps(_mm256_setzero_ps(), v));
    case TCRT_ACT_LEAKY: {
        __m256 neg = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ);
        return _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(alpha)), neg);
    }
    default:
        return v;
    }
}

/* Lanes [0, n) of a mask (n clamped to [0, 8]): maskload reads nothing
 * and maskstore writes nothing in the other lanes. */
static inline __m256i lane_mask(int64_t n)
{
    int v = n < 0 ? 0 : (n > 8 ? 8 : (int)n);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(v), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The first n (0 < n < 8) lanes of v at dst, nothing past them: 4-, 2- and
 * 1-lane stores (vmaskmovps stores are microcoded on AMD Zen: measured,
 * 1x1 24 -> 28 with a residual at 64x64, 0.42 ms against 0.27 ms for 24 ->
 * 24). */
static inline __attribute__((always_inline)) void store_part(float *dst, __m256 v, int64_t n)
{
    __m128 q = _mm256_castps256_ps128(v);
    if (n >= 4) {
        _mm_storeu_ps(dst, q);
        dst += 4, n -= 4;
        q = _mm256_extractf128_ps(v, 1);
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)dst, q);
        dst += 2, n -= 2;
        q = _mm_movehl_ps(q, q);
    }
    if (n >= 1)
        _mm_store_ss(dst, q);
}

/* The epilogue's inputs, copied out of the caller's TcrtKernEpi into
 * locals: the stores to C could alias the struct, which made the compiler
 * reload its fields after every row's stores. */
typedef struct Epi {
    const float *bias; /* NULL: none */
    const float *res;
    int64_t ldr;
    float alpha;
} Epi;

/* Epilogue of one row's 16 columns (lo, hi) into dst; a partial row (nc <
 * 16) loads through lane masks (m: lanes [0, nc) of lo, then of hi) and
 * stores by store_part, so nothing past column nc is read or written. */
static inline __attribute__((always_inline)) void store_row(__m256 lo, __m256 hi, float *dst,
                                                            const float *res, int64_t nc, const __m256i m[2],
                                                            const Epi *e, int act)
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
        _mm256_storeu_ps(dst, apply_act(lo, act, e->alpha));
        _mm256_storeu_ps(dst + 8, apply_act(hi, act, e->alpha));
        return;
    }
    if (e->bias)
        lo = _mm256_add_ps(lo, _mm256_maskload_ps(e->bias, m[0]));
    if (res)
        lo = _mm256_add_ps(lo, _mm256_maskload_ps(res, m[0]));
    /* a full low half (nc 8: Cout 24, 40, 1000) takes a plain store, a
     * partial half store_part: the masked store is microcoded on AMD Zen
     * (measured, 1x1 24 -> 24 at 128x128: 0.72 ms with it, 0.50 ms
     * without) */
    if (nc >= 8)
        _mm256_storeu_ps(dst, apply_act(lo, act, e->alpha));
    else
        store_part(dst, apply_act(lo, act, e->alpha), nc);
    if (nc > 8) {
        if (e->bias)
            hi = _mm256_add_ps(hi, _mm256_maskload_ps(e->bias + 8, m[1]));
        if (res)
            hi = _mm256_add_ps(hi, _mm256_maskload_ps(res + 8, m[1]));
        store_part(dst + 8, apply_act(hi, act, e->alpha), nc - 8);
    }
}

/* The stores of all six rows, one copy per activation so that apply_act's
 * switch is resolved at compile time (act read once, not per row). */
#define STORE(r, ACT)                                                                                        \
    if (r < mr)                                                                                              \
        store_row(c##r##l, c##r##h, c + r * ldc, ev.res ? ev.res + r * ev.ldr : NULL, nc, m, &ev, ACT);
#define STORE6(ACT) STORE(0, ACT) STORE(1, ACT) STORE(2, ACT) STORE(3, ACT) STORE(4, ACT) STORE(5, ACT)
#define STORE_ALL(act)                                                                                       \
    switch (act) {                                                                                           \
    case TCRT_ACT_RELU:                                                                                      \
        STORE6(TCRT_ACT_RELU) break;                                                                         \
    case TCRT_ACT_RELU6:                                                                                     \
        STORE6(TCRT_ACT_RELU6) break;                                                                        \
    case TCRT_ACT_LEAKY:                                                                                     \
        STORE6(TCRT_ACT_LEAKY) break;                                                                        \
    default:                                                                                                 \
        STORE6(TCRT_ACT_NONE) break;                                                                         \
    }

/* Row r of C into (dstl, dsth) (load_c): a partial row through the masks. */
#define LOAD_ROW(r, dstl, dsth)                                                                              \
    if (r < mr) {                                                                                            \
        const float *src = c + r * ldc;                                                                      \
        dstl = nc >= 8 ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, m[0]);                               \
        dsth = nc >= 16 ? _mm256_loadu_ps(src + 8) : _mm256_maskload_ps(src + 8, m[1]);                      \
    }

/* The k loop of the conv kernel in inline assembly.  Written with
 * intrinsics, GCC kept one or two of the 12 accumulators on the stack
 * across the unrolled k steps (a store and a reload on their FMA chains
 * every step; perf showed 11% of the kernel's samples on one FMA after such
 * a reload), and the allocation moved with unrelated edits.  Here the
 * accumulators, the B row (b0, b1) and the row pointers are register
 * operands, the broadcast ymm15.  One k step u (of a block of 8) is two
 * statements, as an asm takes at most 30 operands ("+x" counts twice): the
 * first loads B's row u (16 floats, or 8 where only the low half is live,
 * H = 1) and does rows 0-2, the second rows 3 to R-1 (R = 6 or 5); per row r
 * the broadcast of a_r[k + u] and one FMA per live half. */
#define KS_B2(u) "vmovups " #u "*64(%[bp]), %[b0]\n\tvmovups " #u "*64+32(%[bp]), %[b1]\n\t"
#define KS_B1(u) "vmovups " #u "*64(%[bp]), %[b0]\n\t"
#define KS_R2(u, r)                                                                                          \
    "vbroadcastss " #u "*4(%[a" #r "],%[k],4), %%ymm15\n\t"                                                  \
    "vfmadd231ps %[b0], %%ymm15, %[c" #r "l]\n\t"                                                            \
    "vfmadd231ps %[b1], %%ymm15, %[c" #r "h]\n\t"
#define KS_R1(u, r)                                                                                          \
    "vbroadcastss " #u "*4(%[a" #r "],%[k],4), %%ymm15\n\t"                                                  \
    "vfmadd231ps %[b0], %%ymm15, %[c" #r "l]\n\t"
#define KS_ACC(r) [c##r##l] "+x"(c##r##l), [c##r##h] "+x"(c##r##h)
#define KS_CLOB "xmm15", "memory"
/* step u with H live halves on R rows (R and H constants where it expands:
 * one branch remains) */
#define KSTEP(u, H)                                                                                          \
    {                                                                                                        \
        __m256 b0, b1;                                                                                       \
        __asm__(KS_B##H(u) KS_R##H(u, 0) KS_R##H(u, 1) KS_R##H(u, 2)                                         \
                : [b0] "=&x"(b0), [b1] "=&x"(b1), KS_ACC(0), KS_ACC(1), KS_ACC(2)                            \
                : [bp] "r"(bp), [k] "r"(k), [a0] "r"(a0), [a1] "r"(a1), [a2] "r"(a2)                         \
                : KS_CLOB);                                                                                  \
        if (rows == 6)                                                                                       \
            __asm__(KS_R##H(u, 3) KS_R##H(u, 4) KS_R##H(u, 5)                                                \
                    : KS_ACC(3), KS_ACC(4), KS_ACC(5)                                                        \
                    : [b0] "x"(b0), [b1] "x"(b1), [k] "r"(k), [a3] "r"(a3), [a4] "r"(a4), [a5] "r"(a5)       \
                    : KS_CLOB);                                                                              \
        else                                                                                                 \
            __asm__(KS_R##H(u, 3) KS_R##H(u, 4)                                                              \
                    : KS_ACC(3), KS_ACC(4)                                                                   \
                    : [b0] "x"(b0), [b1] "x"(b1), [k] "r"(k), [a3] "r"(a3), [a4] "r"(a4)                     \
                    : KS_CLOB);                                                                              \
    }

/* The k loop over taps of the conv kernel for H live halves: 2 both 8-wide
 * halves, 1 the low half only (a panel whose live columns fit it: nc <= 8
 * skips the FMAs of columns that are never stored). */
#define CONV_KLOOP(H)                                                                                        \
    for (int64_t t = 0; t < taps; t++, ind += rows) {                                                        \
        ROWS6(LOADP)                                                                                         \
        int64_t k = 0;                                                                                       \
        for (; k + 8 <= kc; k += 8, bp += 128) {                                                             \
            _mm_prefetch(pf, _MM_HINT_T1);                                                                   \
            pf = pf < pf_last ? pf + 64 : pf;                                                                \
            KSTEP(0, H) KSTEP(1, H) KSTEP(2, H) KSTEP(3, H) KSTEP(4, H) KSTEP(5, H) KSTEP(6, H) KSTEP(7, H)  \
        }                                                                                                    \
        for (; k < kc; k++, bp += 16)                                                                        \
            KSTEP(0, H)                                                                                      \
    }

/* The whole panel in one asm statement, for the common case: 16 (or 8)
 * live columns, every row of the tile stored, C not loaded, activation
 * none, relu or relu6.  Written with intrinsics around the asm k loop (conv_panel
 * below), GCC rotated the 12 accumulators between registers around the
 * loop (a dozen vmovaps on entry and exit), kept the loop state on the
 * stack and re-derived the masks per panel: on 1x1 16 -> 96 at 112x112 a
 * third of the kernel's samples fell outside the k loop.  Here the
 * registers are fixed: row r's accumulators ymm(2r) and ymm(2r+1), B's row
 * ymm12-13, broadcasts ymm14-15; row pointers r8-r13, B rsi, k rax, taps
 * rcx, the pointer array rdx, the prefetch stream r14; every other input is
 * read from the AsmPanel through one register.  The epilogue does what
 * store_row does, in the same order (bias, residual, then the activation),
 * so a 16-column panel's results are bit for bit those of the C path (the
 * 8-column one sums even and odd k apart: rounding differs).  Measured, 1 thread,
 * medians of 300: 1x1 16 -> 96 at 112x112 0.595 -> 0.568 ms, 24 -> 144 at
 * 56x56 0.282 -> 0.276, MobileNetV2's 112x112 16 -> 96 -> 24 block 0.875
 * -> 0.837; 1x1 convs with K 64 to 512 0-1% faster.  The 8-column panel
 * (AP_HALF: Cout 24, 40) then: 1x1 144 -> 24 at 56x56 0.287 -> 0.271 ms,
 * 96 -> 24 0.197 -> 0.188, 192 -> 40 at 28x28 0.141 -> 0.137. */
typedef struct AsmPanel {
    const float *const *ind; /*  0: row pointers, `rows` per tap */
    const float *b;          /*  8: the panel, [taps][kc][16] */
    int64_t taps;            /* 16: >= 1 */
    int64_t kc;              /* 24 */
    float *c;                /* 32 */
    int64_t ldc;             /* 40: bytes */
    const float *bias;       /* 48: NULL: none */
    const float *res;        /* 56: NULL: none */
    int64_t ldr;             /* 64: bytes */
    const char *pf;          /* 72: prefetch stream, one line per 8 k steps ... */
    const char *pf_last;     /* 80: ... up to this line */
    int64_t act;             /* 88: bit 0 max with 0, bit 1 min with 6 */
    float six;               /* 96 */
} AsmPanel;

/* The asm text one instruction per line: */
/* clang-format off */
#define AP_STR(x) #x
/* k step u: B's row (16 floats), then per row the broadcast of a_r[k + u]
 * (row pointer ar, broadcast register bc) and one FMA per half (l, h) */
#define AP_B(u)                                                                                              \
    "vmovups " AP_STR(u) "*64(%%rsi), %%ymm12\n\t"                                                           \
    "vmovups " AP_STR(u) "*64+32(%%rsi), %%ymm13\n\t"
#define AP_R(u, ar, bc, l, h)                                                                                \
    "vbroadcastss " AP_STR(u) "*4(%%" ar ",%%rax,4), %%" bc "\n\t"                                           \
    "vfmadd231ps %%ymm12, %%" bc ", %%" l "\n\t"                                                             \
    "vfmadd231ps %%ymm13, %%" bc ", %%" h "\n\t"
#define AP_STEP5(u)                                                                                          \
    AP_B(u)                                                                                                  \
    AP_R(u, "r8", "ymm14", "ymm0", "ymm1")                                                                   \
    AP_R(u, "r9", "ymm15", "ymm2", "ymm3")                                                                   \
    AP_R(u, "r10", "ymm14", "ymm4", "ymm5")                                                                  \
    AP_R(u, "r11", "ymm15", "ymm6", "ymm7")                                                                  \
    AP_R(u, "r12", "ymm14", "ymm8", "ymm9")
#define AP_STEP6(u) AP_STEP5(u) AP_R(u, "r13", "ymm15", "ymm10", "ymm11")
/* The 8-column panel (nc 8: Cout 24, 40): B's low half only, and k steps
 * alternating between two accumulators per row (l even k, h odd k; summed
 * at the end): 12 FMA chains, where one per row left 6, fewer than two FMA
 * ports of 4-cycle latency need. */
#define AP_RH(u, ar, bc, b, acc)                                                                             \
    "vbroadcastss " AP_STR(u) "*4(%%" ar ",%%rax,4), %%" bc "\n\t"                                           \
    "vfmadd231ps %%" b ", %%" bc ", %%" acc "\n\t"
#define AP_HSTEP5(u, b, A0, A1, A2, A3, A4)                                                                  \
    "vmovups " AP_STR(u) "*64(%%rsi), %%" b "\n\t"                                                           \
    AP_RH(u, "r8", "ymm14", b, A0)                                                                           \
    AP_RH(u, "r9", "ymm15", b, A1)                                                                           \
    AP_RH(u, "r10", "ymm14", b, A2)                                                                          \
    AP_RH(u, "r11", "ymm15", b, A3)                                                                          \
    AP_RH(u, "r12", "ymm14", b, A4)
#define AP_HE5(u) AP_HSTEP5(u, "ymm12", "ymm0", "ymm2", "ymm4", "ymm6", "ymm8")
#define AP_HO5(u) AP_HSTEP5(u, "ymm13", "ymm1", "ymm3", "ymm5", "ymm7", "ymm9")
#define AP_HE6(u) AP_HE5(u) AP_RH(u, "r13", "ymm15", "ymm12", "ymm10")
#define AP_HO6(u) AP_HO5(u) AP_RH(u, "r13", "ymm15", "ymm13", "ymm11")
/* 8 k steps and one k step of each variant */
#define AP_FULL8(R) AP_STEP##R(0) AP_STEP##R(1) AP_STEP##R(2) AP_STEP##R(3)                                   \
                    AP_STEP##R(4) AP_STEP##R(5) AP_STEP##R(6) AP_STEP##R(7)
#define AP_FULL1(R) AP_STEP##R(0)
#define AP_HALF8(R) AP_HE##R(0) AP_HO##R(1) AP_HE##R(2) AP_HO##R(3)                                           \
                    AP_HE##R(4) AP_HO##R(5) AP_HE##R(6) AP_HO##R(7)
#define AP_HALF1(R) AP_HE##R(0)
/* X(row pointer register, low accumulator, high accumulator) per row */
#define AP_ROWS5(X)                                                                                          \
    X("r8", "ymm0", "ymm1") X("r9", "ymm2", "ymm3") X("r10", "ymm4", "ymm5") X("r11", "ymm6", "ymm7")         \
    X("r12", "ymm8", "ymm9")
#define AP_ROWS6(X) AP_ROWS5(X) X("r13", "ymm10", "ymm11")
#define AP_ZERO(ar, l, h) "vxorps %%" l ", %%" l ", %%" l "\n\tvxorps %%" h ", %%" h ", %%" h "\n\t"
#define AP_PTR(ar, l, h) "mov (%%rdx), %%" ar "\n\tadd $8, %%rdx\n\t"
/* epilogue, 16 columns (FULL) or 8 (HALF: the two sums folded first) */
#define AP_FULL_FOLD(ar, l, h)
#define AP_HALF_FOLD(ar, l, h) "vaddps %%" h ", %%" l ", %%" l "\n\t"
#define AP_FULL_BIAS "vmovups (%%rax), %%ymm12\n\tvmovups 32(%%rax), %%ymm13\n\t"
#define AP_HALF_BIAS "vmovups (%%rax), %%ymm12\n\t"
#define AP_FULL_ADD(ar, l, h) "vaddps %%ymm12, %%" l ", %%" l "\n\tvaddps %%ymm13, %%" h ", %%" h "\n\t"
#define AP_HALF_ADD(ar, l, h) "vaddps %%ymm12, %%" l ", %%" l "\n\t"
#define AP_FULL_RES(ar, l, h)                                                                                \
    "vaddps (%%rax), %%" l ", %%" l "\n\tvaddps 32(%%rax), %%" h ", %%" h "\n\tadd %%rcx, %%rax\n\t"
#define AP_HALF_RES(ar, l, h) "vaddps (%%rax), %%" l ", %%" l "\n\tadd %%rcx, %%rax\n\t"
#define AP_FULL_MAX(ar, l, h) "vmaxps %%ymm12, %%" l ", %%" l "\n\tvmaxps %%ymm12, %%" h ", %%" h "\n\t"
#define AP_HALF_MAX(ar, l, h) "vmaxps %%ymm12, %%" l ", %%" l "\n\t"
#define AP_FULL_MIN(ar, l, h) "vminps %%ymm13, %%" l ", %%" l "\n\tvminps %%ymm13, %%" h ", %%" h "\n\t"
#define AP_HALF_MIN(ar, l, h) "vminps %%ymm13, %%" l ", %%" l "\n\t"
#define AP_FULL_ST(ar, l, h) "vmovups %%" l ", (%%rax)\n\tvmovups %%" h ", 32(%%rax)\n\tadd %%rcx, %%rax\n\t"
#define AP_HALF_ST(ar, l, h) "vmovups %%" l ", (%%rax)\n\tadd %%rcx, %%rax\n\t"
/* R rows (5 or 6), W FULL or HALF.  1: per tap, the row pointers; 2: 8 k
 * steps (and one prefetch); 4: one k step; then bias (6), residual (7),
 * activation, stores (8) */
#define AP_BODY(R, W)                                                                                        \
    AP_ROWS##R(AP_ZERO)                                                                                      \
    "mov (%[p]), %%rdx\n\t"                                                                                  \
    "mov 8(%[p]), %%rsi\n\t"                                                                                 \
    "mov 72(%[p]), %%r14\n\t"                                                                                \
    "mov 16(%[p]), %%rcx\n"                                                                                  \
    "1:\n\t"                                                                                                 \
    AP_ROWS##R(AP_PTR)                                                                                       \
    "xor %%eax, %%eax\n\t"                                                                                   \
    "jmp 3f\n"                                                                                               \
    "2:\n\t"                                                                                                 \
    "prefetcht1 (%%r14)\n\t"                                                                                 \
    "lea 64(%%r14), %%r15\n\t"                                                                               \
    "cmp 80(%[p]), %%r14\n\t"                                                                                \
    "cmovb %%r15, %%r14\n\t"                                                                                 \
    AP_##W##8(R)                                                                                             \
    "add $512, %%rsi\n\t"                                                                                    \
    "add $8, %%rax\n"                                                                                        \
    "3:\n\t"                                                                                                 \
    "lea 8(%%rax), %%r15\n\t"                                                                                \
    "cmp 24(%[p]), %%r15\n\t"                                                                                \
    "jle 2b\n\t"                                                                                             \
    "jmp 5f\n"                                                                                               \
    "4:\n\t"                                                                                                 \
    AP_##W##1(R)                                                                                             \
    "add $64, %%rsi\n\t"                                                                                     \
    "inc %%rax\n"                                                                                            \
    "5:\n\t"                                                                                                 \
    "cmp 24(%[p]), %%rax\n\t"                                                                                \
    "jl 4b\n\t"                                                                                              \
    "dec %%rcx\n\t"                                                                                          \
    "jnz 1b\n\t"                                                                                             \
    AP_ROWS##R(AP_##W##_FOLD)                                                                                \
    "mov 48(%[p]), %%rax\n\t"                                                                                \
    "test %%rax, %%rax\n\t"                                                                                  \
    "jz 6f\n\t"                                                                                              \
    AP_##W##_BIAS                                                                                            \
    AP_ROWS##R(AP_##W##_ADD)                                                                                 \
    "6:\n\t"                                                                                                 \
    "mov 56(%[p]), %%rax\n\t"                                                                                \
    "test %%rax, %%rax\n\t"                                                                                  \
    "jz 7f\n\t"                                                                                              \
    "mov 64(%[p]), %%rcx\n\t"                                                                                \
    AP_ROWS##R(AP_##W##_RES)                                                                                 \
    "7:\n\t"                                                                                                 \
    "mov 88(%[p]), %%rcx\n\t"                                                                                \
    "test $1, %%cl\n\t"                                                                                      \
    "jz 8f\n\t"                                                                                              \
    "vxorps %%xmm12, %%xmm12, %%xmm12\n\t"                                                                   \
    AP_ROWS##R(AP_##W##_MAX)                                                                                 \
    "test $2, %%cl\n\t"                                                                                      \
    "jz 8f\n\t"                                                                                              \
    "vbroadcastss 96(%[p]), %%ymm13\n\t"                                                                     \
    AP_ROWS##R(AP_##W##_MIN)                                                                                 \
    "8:\n\t"                                                                                                 \
    "mov 32(%[p]), %%rax\n\t"                                                                                \
    "mov 40(%[p]), %%rcx\n\t"                                                                                \
    AP_ROWS##R(AP_##W##_ST)
#define AP_CLOBBERS                                                                                          \
    "rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",                         \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",                                          \
    "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory"
/* clang-format on */

_Static_assert(offsetof(AsmPanel, ldc) == 40 && offsetof(AsmPanel, pf) == 72 && offsetof(AsmPanel, six) == 96,
               "AP_BODY reads AsmPanel at these offsets");

/* conv_panel's common case (AsmPanel) on a tile of `rows` rows, 6 or 5;
 * half: 8 columns, not 16. */
static inline __attribute__((always_inline)) void
asm_panel(const int rows, bool half, int64_t taps, int64_t kc, const float *const *ind, const float *b,
          float *c, int64_t ldc, const TcrtKernEpi *epi, int64_t col, const char *pf, const char *pf_last)
{
    const bool raw = epi->partial; /* a K block before the last: raw sums */
    const int act = raw ? TCRT_ACT_NONE : epi->act;
    const AsmPanel ap = {.ind = ind,
                         .b = b,
                         .taps = taps,
                         .kc = kc,
                         .c = c,
                         .ldc = ldc * (int64_t)sizeof(float),
                         .bias = raw || !epi->bias ? NULL : epi->bias + col,
                         .res = raw || !epi->res ? NULL : epi->res + col,
                         .ldr = epi->ldr * (int64_t)sizeof(float),
                         .pf = pf,
                         .pf_last = pf_last,
                         .act = act == TCRT_ACT_RELU    ? 1
                                : act == TCRT_ACT_RELU6 ? 3
                                                        : 0,
                         .six = 6.0f};
    if (rows == 6 && half)
        __asm__ volatile(AP_BODY(6, HALF) : : [p] "r"(&ap) : AP_CLOBBERS);
    else if (rows == 6)
        __asm__ volatile(AP_BODY(6, FULL) : : [p] "r"(&ap) : AP_CLOBBERS);
    else if (half)
        __asm__ volatile(AP_BODY(5, HALF) : : [p] "r"(&ap) : AP_CLOBBERS);
    else
        __asm__ volatile(AP_BODY(5, FULL) : : [p] "r"(&ap) : AP_CLOBBERS);
}

/* One 16-column panel of the conv kernel on a tile of `rows` rows (6 or 5,
 * a constant at each call: the rows past it are compiled out), the first mr
 * of them stored: columns [col, col + nc) of the caller's block (nc <= 16),
 * weights b (the panel), prefetch range [pf, pf_last]. */
static inline __attribute__((always_inline)) void conv_panel(const int rows, int64_t mr, int64_t nc,
                                                             int64_t taps, int64_t kc,
                                                             const float *const *ind, const float *b,
                                                             float *c, int64_t ldc, const TcrtKernEpi *epi,
                                                             int64_t col, const char *pf, const char *pf_last)
{
    mr = mr < rows ? mr : rows; /* rows past the tile's are never stored */
    if ((nc == 16 || nc == 8) && mr == rows && taps > 0 && !epi->load_c &&
        (epi->partial || epi->act <= TCRT_ACT_RELU6)) {
        asm_panel(rows, nc == 8, taps, kc, ind, b, c, ldc, epi, col, pf, pf_last);
        return;
    }
    const __m256i m[2] = {lane_mask(nc), lane_mask(nc - 8)};
    /* a partial K block stores raw sums.  The bias is added at the store,
     * after the sum, as the graph's separate BiasAdd does: starting the
     * accumulators from it measured 1-2% faster on 1x1 16 -> 96 but moved
     * centernet's wh output past the e2e tolerance (1.1e-3 -> 3.8e-3 from
     * TF.js), a deep chain that amplifies rounding differences. */
    const bool raw = epi->partial;
    const Epi ev = {raw || !epi->bias ? NULL : epi->bias + col, raw || !epi->res ? NULL : epi->res + col,
                    epi->ldr, epi->alpha};
    const int act = raw ? TCRT_ACT_NONE : epi->act;
#define DECL(r) __m256 c##r##l = _mm256_setzero_ps(), c##r##h = _mm256_setzero_ps();
    ROWS6(DECL)
#undef DECL
    if (epi->load_c) {
#define LOADC(r) LOAD_ROW(r, c##r##l, c##r##h)
        ROWS6(LOADC)
#undef LOADC
    }
    const float *bp = b;
#define LOADP(r) const float *a##r = ind[r < rows ? r : 0];
    if (nc > 8)
        CONV_KLOOP(2)
    else
        CONV_KLOOP(1)
#undef LOADP
    STORE_ALL(act)
}

/* The conv kernel: any nc columns as 16-column panels (pstride floats
 * apart), each with the same row pointers: one call per tile and Cout block
 * (TCRT_AVX2_CONV_NR columns, or all of them tile-major) instead of one
 * per panel (measured, 1x1 16 -> 96 at 16x16: the per-call setup and
 * epilogue were a third of the time). */
static inline __attribute__((always_inline)) void
conv_rows_kernel(const int rows, int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                 const float *b, int64_t pstride, float *c, int64_t ldc, const TcrtKernEpi *epi)
{
    int64_t panels = (nc + 15) / 16;
    /* the prefetch stream (TcrtKernEpi.pf: the weights the next calls read),
     * an equal share per panel: one line per 8 k steps until pf_last, then
     * the last line again (an L2 hit), so the loop has no branch for it.
     * Measured on the 7x7x512 3x3 conv (Cout-block-major, 9.4 MB of weights
     * from memory): see docs/performance.md. */
    int64_t share = epi->pf ? (epi->pf_bytes + panels * 64 - 1) / (panels * 64) * 64 : 0;
    for (int64_t q = 0; q < panels; q++) {
        const char *pf = (const char *)b, *pf_last = pf;
        if (epi->pf && q * share < epi->pf_bytes) {
            int64_t n = epi->pf_bytes - q * share < share ? epi->pf_bytes - q * share : share;
            pf = epi->pf + q * share;
            pf_last = pf + (n - 1) / 64 * 64;
        }
        conv_panel(rows, mr, nc - q * 16 < 16 ? nc - q * 16 : 16, taps, kc, ind, b + q * pstride, c + q * 16,
                   ldc, epi, q * 16, pf, pf_last);
    }
}

void tcrt_ukernel_avx2(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                       const float *b, int64_t pstride, float *c, int64_t ldc, const TcrtKernEpi *epi)
{
    conv_rows_kernel(TCRT_AVX2_MR, mr, nc, taps, kc, ind, b, pstride, c, ldc, epi);
}

void tcrt_ukernel_avx2_r5(int64_t mr, int64_t nc, int64_t taps, int64_t kc, const float *const *ind,
                          const float *b, int64_t pstride, float *c, int64_t ldc, const TcrtKernEpi *epi)
{
    conv_rows_kernel(TCRT_AVX2_R5_MR, mr, nc, taps, kc, ind, b, pstride, c, ldc, epi);
}

void tcrt_gemm_avx2(int64_t mr, int64_t nc, int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                    const TcrtKernEpi *epi)
{
    for (int64_t r = 0; r < mr; r++)
        _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);
    const __m256i m[2] = {lane_mask(nc), lane_mask(nc - 8)};
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
#define ADDC(r)                                                                                              \
    {                                                                                                        \
        __m256 pl = _mm256_setzero_ps(), ph = _mm256_setzero_ps();                                           \
        LOAD_ROW(r, pl, ph)                                                                                  \
        c##r##l = _mm256_add_ps(c##r##l, pl);                                                                \
        c##r##h = _mm256_add_ps(c##r##h, ph);                                                                \
    }
        ROWS6(ADDC)
#undef ADDC
    }
    const bool raw = epi->partial;
    const Epi ev = {raw ? NULL : epi->bias, raw ? NULL : epi->res, epi->ldr, epi->alpha};
    STORE_ALL(raw ? TCRT_ACT_NONE : epi->act)
}

/* Packs 6 rows of A (row stride lda) x kc into [kc][6]: per 8 k, the six
 * rows' vectors (and two zero ones) through an 8 x 8 transpose (unpack,
 * shuffle, lane permute); each k's column is stored 8 wide, 6 floats after
 * the previous one, so the next store overwrites the two extra lanes, and
 * the group's last column stores only its 6 floats (nothing past dst + 6 kc
 * is written: the next tile's panel may be another task's).  The scalar
 * loop it replaces was 3% of a 2048^3 GEMM at 1 thread (perf). */
void tcrt_pack_a6_avx2(const float *a, int64_t lda, int64_t kc, float *dst)
{
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8, dst += 48) {
        __m256 r0 = _mm256_loadu_ps(a + k), r1 = _mm256_loadu_ps(a + lda + k);
        __m256 r2 = _mm256_loadu_ps(a + 2 * lda + k), r3 = _mm256_loadu_ps(a + 3 * lda + k);
        __m256 r4 = _mm256_loadu_ps(a + 4 * lda + k), r5 = _mm256_loadu_ps(a + 5 * lda + k);
        __m256 z = _mm256_setzero_ps();
        /* pairs of rows interleaved: u01 = r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5] */
        __m256 u01l = _mm256_unpacklo_ps(r0, r1), u01h = _mm256_unpackhi_ps(r0, r1);
        __m256 u23l = _mm256_unpacklo_ps(r2, r3), u23h = _mm256_unpackhi_ps(r2, r3);
        __m256 u45l = _mm256_unpacklo_ps(r4, r5), u45h = _mm256_unpackhi_ps(r4, r5);
        /* four rows of one k per 128-bit lane: q0 = k0 rows 0-3 | k4 rows 0-3 */
        __m256 q0 = _mm256_shuffle_ps(u01l, u23l, 0x44), q1 = _mm256_shuffle_ps(u01l, u23l, 0xEE);
        __m256 q2 = _mm256_shuffle_ps(u01h, u23h, 0x44), q3 = _mm256_shuffle_ps(u01h, u23h, 0xEE);
        __m256 p0 = _mm256_shuffle_ps(u45l, z, 0x44), p1 = _mm256_shuffle_ps(u45l, z, 0xEE);
        __m256 p2 = _mm256_shuffle_ps(u45h, z, 0x44), p3 = _mm256_shuffle_ps(u45h, z, 0xEE);
        /* column k: rows 0-3 from q, rows 4-5 (and two zeros) from p */
        __m256 c0 = _mm256_permute2f128_ps(q0, p0, 0x20), c4 = _mm256_permute2f128_ps(q0, p0, 0x31);
        __m256 c1 = _mm256_permute2f128_ps(q1, p1, 0x20), c5 = _mm256_permute2f128_ps(q1, p1, 0x31);
        __m256 c2 = _mm256_permute2f128_ps(q2, p2, 0x20), c6 = _mm256_permute2f128_ps(q2, p2, 0x31);
        __m256 c3 = _mm256_permute2f128_ps(q3, p3, 0x20), c7 = _mm256_permute2f128_ps(q3, p3, 0x31);
        _mm256_storeu_ps(dst, c0);
        _mm256_storeu_ps(dst + 6, c1);
        _mm256_storeu_ps(dst + 12, c2);
        _mm256_storeu_ps(dst + 18, c3);
        _mm256_storeu_ps(dst + 24, c4);
        _mm256_storeu_ps(dst + 30, c5);
        _mm256_storeu_ps(dst + 36, c6);
        _mm_storeu_ps(dst + 42, _mm256_castps256_ps128(c7));
        _mm_storel_pi((__m64 *)(dst + 46), _mm256_extractf128_ps(c7, 1));
    }
    for (; k < kc; k++, dst += 6)
        for (int r = 0; r < 6; r++)
            dst[r] = a[r * lda + k];
}
