/* runtime/kernels/fast_gemm.c - fast float32 matmul and conv2d in portable
 * C (C11; GNU C vector types under gcc and clang, plain C elsewhere; no
 * intrinsics, no C++): the --emit c twin of fast_eigen.cc, with the same
 * symbols, semantics, workspace contract and threading; nothing here
 * allocates memory (edge panels use about 26 KB of stack per call).
 *
 * Which one is linked (never both: same symbol names):
 *  - the meson build's libtcrt uses fast_eigen.cc (Eigen's GEMM, the
 *    project's CPU contraction library);
 *  - the --emit c folder (targets/targets.c) copies this file and not the
 *    .cc, so the folder is pure C and needs no C++ compiler or Eigen;
 *  - its unit test (tests/runtime/test_fast_gemm.c) compiles it with
 *    -DTCRT_FAST_GEMM_RENAME, which renames the four exported functions to
 *    tcrt_cgemm_*, so the test links it next to libtcrt (Eigen) and checks
 *    both the results (against the reference kernels) and that the
 *    workspace sizes equal the Eigen version's.
 * Workspace contract: the compiler's memory planner sizes the workspace
 * with the libtcrt it runs (the Eigen version), so this file uses the same
 * blocking and per-thread split (block_caps, gemm_blocking, mm_plan,
 * conv_plan) and its packed blocks never exceed Eigen's packing buffers:
 * a packed block of op(B) holds kc x nb floats and one of op(A) kc x mb,
 * with no padding (edge panels are packed narrower).
 *
 * GEMM: C[M,N] (row-major, stride ldc) += op(A)[M,K] * op(B)[K,N], Goto /
 *   BLIS loop order: N blocks (nb <= mc) > K blocks (kc <= 288) > pack the
 *   op(B) block as 16-column panels [kc][16] > M blocks (mb <= nc) > pack the
 *   op(A) block as 6-row panels [kc][6] > a 6 x 16 register-blocked
 *   micro-kernel per (A panel, B panel) pair.  No intrinsics: with gcc and
 *   clang the kernel uses GNU C vector types (12 named 8-float accumulators,
 *   one AVX2 register each with the x86-64-v3 default, register pairs on
 *   128-bit SIMD), because both compilers left a plain-C accumulator array
 *   in memory (a load and store per FMA, 5x slower); other compilers get the
 *   plain-C loop.  Edge panels (fewer than 6 rows or 16 columns) run the
 *   same kernel on zero-padded stack copies into a local tile.  Transposes
 *   only change the packing loops.  C is first set to the bias (or 0), the
 *   GEMM accumulates, then the activation runs over the same tile.
 * Threads: the runtime's pool (tcrt_pool.h), split as in fast_eigen.cc: one
 *   tile per thread (whole batch entries, else row blocks, else column
 *   blocks), nt = tcrt_get_threads() tasks; a task's tile comes from its
 *   task index, its workspace slice from its tid.  Tiny problems run on the
 *   caller.
 * tcrt_fast_matmul: batch dims broadcast; M == 1 or N == 1 is a GEMV (dot
 *   form: two 8-wide partial sums; axpy form: four rows of X per sweep over
 *   y) and needs no workspace; a non-transposed A may take the
 *   packed SIMD GEMM of fast_conv.c (tcrt_kmm_*) when the CPU and the build
 *   have one (never in the --emit c build: TCRT_ISA_MAX=0 there).
 * tcrt_fast_conv2d: packed weights go to fast_conv.c, depthwise to
 *   fast_pool.c (as in fast_eigen.cc); 1x1 stride 1 unpadded is the matmul
 *   x[NHW,C] * w[C,O]; anything else is im2col by blocks of output pixels
 *   into the thread's workspace slice, times the HWIO weight [KH*KW*C, O];
 *   a residual input is added after the GEMM.
 * Fallbacks: other dtypes, grouped convolutions and a missing or too small
 * workspace go to the reference kernels.
 */
#ifdef TCRT_FAST_GEMM_RENAME
#define tcrt_fast_matmul tcrt_cgemm_matmul
#define tcrt_fast_matmul_workspace tcrt_cgemm_matmul_workspace
#define tcrt_fast_conv2d tcrt_cgemm_conv2d
#define tcrt_fast_conv2d_workspace tcrt_cgemm_conv2d_workspace
#endif

#include "tcrt_kernels.h"
#include "fast_conv_int.h"
#include "tcrt_pool.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Blocking constants: the same as fast_eigen.cc (workspace contract). */
#define ALIGN_FLOATS 16              /* 64 bytes: every slice starts aligned */
#define MAX_KC 288                   /* packed micro-panels stay in L1 */
#define RHS_BLOCK_BYTES (768 << 10)  /* kc x nb_m packed block of op(A) */
#define LHS_BLOCK_BYTES (512 << 10)  /* kc x mc packed block of op(B) */
#define MAX_MC 1536
#define IM2COL_BYTES (2 << 20)       /* per-thread patch block, at most */
#define IM2COL_TOTAL (8 << 20)       /* all threads' patch blocks, at most */
#define MIN_IM2COL_ROWS 128
#define SERIAL_WORK (1 << 16)        /* multiply-adds below which one thread runs */

/* Micro-kernel tile: MR rows of C by NR columns. */
enum { MR = 6, NR = 16 };

/* GNU C vector types (gcc, clang) for the hot loops; plain C elsewhere. */
#if defined(__GNUC__) || defined(__clang__)
#define FG_VECTOR 1
typedef float vf8 __attribute__((vector_size(32)));
/* Macros, not functions: a vf8 argument or return value without AVX
 * enabled draws -Wpsabi (an ABI note) from gcc and clang.  Loads and stores
 * go through memcpy (unaligned, no aliasing questions). */
#define LOAD8(v, p) memcpy(&(v), (p), sizeof(vf8))
#define STORE8(p, v) memcpy((p), &(v), sizeof(vf8))
#define SPLAT8(x) ((vf8){(x), (x), (x), (x), (x), (x), (x), (x)}) /* x: no side effects */
#define ADD_STORE8(p, v)                                                                                  \
    do {                                                                                                   \
        vf8 t_;                                                                                            \
        LOAD8(t_, p);                                                                                      \
        t_ += (v);                                                                                         \
        STORE8(p, t_);                                                                                     \
    } while (0)
#else
#define FG_VECTOR 0
#endif

static int64_t div_up(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t round_up(int64_t a, int64_t m)
{
    return div_up(a, m) * m;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* n if n <= cap, else the size of the fewest near-equal parts of at most cap
 * (rounded up to step; cap must be a multiple of step). */
static int64_t balanced(int64_t n, int64_t cap, int64_t step)
{
    if (n <= cap)
        return n;
    return min64(cap, round_up(div_up(n, div_up(n, cap)), step));
}

static int team_size(void)
{
    int n = tcrt_get_threads();
    return n < 1 ? 1 : (n > TCRT_MAX_THREADS ? TCRT_MAX_THREADS : n);
}

/* The activation over rows x cols of y (row stride ld): one loop per
 * activation, branch-free selects (tcrt_kern_act's switch inside the loop
 * would compile to unpredictable branches on random signs). */
static void act_rows(float *y, int64_t rows, int64_t cols, int64_t ld, int64_t a, float alpha)
{
    for (int64_t r = 0; r < rows; r++) {
        float *restrict yr = y + r * ld;
        switch (a) {
        case TCRT_ACT_RELU:
            for (int64_t j = 0; j < cols; j++)
                yr[j] = yr[j] > 0.0f ? yr[j] : 0.0f;
            break;
        case TCRT_ACT_RELU6:
            for (int64_t j = 0; j < cols; j++) {
                float v = yr[j] < 0.0f ? 0.0f : yr[j]; /* NaN stays NaN, as tcrt_kern_act */
                yr[j] = v > 6.0f ? 6.0f : v;
            }
            break;
        case TCRT_ACT_LEAKY:
            for (int64_t j = 0; j < cols; j++)
                yr[j] = yr[j] < 0.0f ? yr[j] * alpha : yr[j];
            break;
        default:
            return;
        }
    }
}

/* y[r, 0..cols) = bias[0..cols) (or 0) for every row. */
static void init_rows(float *y, int64_t rows, int64_t cols, int64_t ld, const float *bias)
{
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * ld;
        int64_t j = 0;
        for (; j + 8 <= cols; j += 8) { /* constant sizes: vector moves */
            if (bias)
                memcpy(yr + j, bias + j, 8 * sizeof(float));
            else
                memset(yr + j, 0, 8 * sizeof(float));
        }
        for (; j < cols; j++)
            yr[j] = bias ? bias[j] : 0.0f;
    }
}

/* ---- blocking (identical to fast_eigen.cc) ---- */

typedef struct Blocking {
    int64_t kc, mc, nc; /* along K, N (packed op(B) block), M (packed op(A) block) */
} Blocking;

/* The caps on mc and nc depend on kc only, i.e. on K. */
static Blocking block_caps(int64_t K)
{
    Blocking c;
    c.kc = balanced(K, MAX_KC, 8);
    int64_t kc = max64(c.kc, 1);
    c.nc = max64(4, (RHS_BLOCK_BYTES / (kc * 4)) / 4 * 4);
    c.mc = min64(MAX_MC, max64(24, (LHS_BLOCK_BYTES / (kc * 4)) / 24 * 24));
    return c;
}

static Blocking gemm_blocking(int64_t M, int64_t N, int64_t K)
{
    Blocking b = block_caps(K);
    b.nc = balanced(M, b.nc, 4);
    b.mc = balanced(N, b.mc, 24);
    return b;
}

/* Buffer floats for any tile of at most M x N (monotone in M and N). */
static int64_t gemm_ws_floats(int64_t M, int64_t N, int64_t K)
{
    if (M <= 0 || N <= 0 || K <= 0)
        return 0;
    Blocking c = block_caps(K);
    return round_up(c.kc * min64(N, c.mc), ALIGN_FLOATS) + round_up(c.kc * min64(M, c.nc), ALIGN_FLOATS);
}

/* ---- GEMM on caller memory ---- */

/* One GEMM's operands: op(A) element (i, k) and op(B) element (k, j). */
typedef struct Gemm {
    const float *A, *B;
    int64_t lda, ldb;
    bool ta, tb;
} Gemm;

/* op(B)[k0.., j0..) as panels of NR columns, [kc][w] each (w = NR but for
 * the last), panel p at p * kc * NR: kc * nb floats in all.  Full panels
 * copy rows with a constant-size memcpy (vector moves; a variable-size one
 * of 64 bytes becomes a slow `rep movs` with gcc, a plain loop stays
 * scalar at -O2 for fear of aliasing). */
static void pack_b(const Gemm *g, int64_t k0, int64_t kc, int64_t j0, int64_t nb, float *dst)
{
    for (int64_t p0 = 0; p0 < nb; p0 += NR, dst += kc * NR) {
        int64_t w = min64(NR, nb - p0);
        if (!g->tb) {
            const float *src = g->B + k0 * g->ldb + j0 + p0;
            if (w == NR)
                for (int64_t k = 0; k < kc; k++, src += g->ldb)
                    memcpy(dst + k * NR, src, NR * sizeof(float));
            else
                for (int64_t k = 0; k < kc; k++, src += g->ldb)
                    for (int64_t j = 0; j < w; j++)
                        dst[k * w + j] = src[j];
        } else {
            for (int64_t j = 0; j < w; j++) {
                const float *src = g->B + (j0 + p0 + j) * g->ldb + k0;
                for (int64_t k = 0; k < kc; k++)
                    dst[k * w + j] = src[k];
            }
        }
    }
}

/* op(A)[i0.., k0..) as panels of MR rows, [kc][h] each, panel q at
 * q * kc * MR: mb * kc floats in all. */
static void pack_a(const Gemm *g, int64_t i0, int64_t mb, int64_t k0, int64_t kc, float *dst)
{
    for (int64_t q0 = 0; q0 < mb; q0 += MR, dst += kc * MR) {
        int64_t h = min64(MR, mb - q0);
        if (g->ta) {
            const float *src = g->A + k0 * g->lda + i0 + q0;
            for (int64_t k = 0; k < kc; k++, src += g->lda)
                for (int64_t r = 0; r < h; r++)
                    dst[k * h + r] = src[r];
        } else if (h == MR) {
            const float *src = g->A + (i0 + q0) * g->lda + k0;
            for (int64_t k = 0; k < kc; k++)
                for (int r = 0; r < MR; r++)
                    dst[k * MR + r] = src[r * g->lda + k];
        } else {
            for (int64_t r = 0; r < h; r++) {
                const float *src = g->A + (i0 + q0 + r) * g->lda + k0;
                for (int64_t k = 0; k < kc; k++)
                    dst[k * h + r] = src[k];
            }
        }
    }
}

#if FG_VECTOR
/* C[MR x NR] += a[kc][MR] * b[kc][NR] on GNU C vector types (gcc, clang):
 * 12 named 8-float accumulators, which both compilers keep in registers
 * (one AVX register each; two 128-bit registers elsewhere). */
static void kern_full(int64_t kc, const float *restrict a, const float *restrict b, float *restrict c,
                      int64_t ldc)
{
    vf8 z = SPLAT8(0.0f);
    vf8 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z,
        c51 = z;
    for (int64_t k = 0; k < kc; k++, a += MR, b += NR) {
        vf8 b0, b1, av;
        LOAD8(b0, b);
        LOAD8(b1, b + 8);
        av = SPLAT8(a[0]), c00 += av * b0, c01 += av * b1;
        av = SPLAT8(a[1]), c10 += av * b0, c11 += av * b1;
        av = SPLAT8(a[2]), c20 += av * b0, c21 += av * b1;
        av = SPLAT8(a[3]), c30 += av * b0, c31 += av * b1;
        av = SPLAT8(a[4]), c40 += av * b0, c41 += av * b1;
        av = SPLAT8(a[5]), c50 += av * b0, c51 += av * b1;
    }
    ADD_STORE8(c, c00);
    ADD_STORE8(c + 8, c01);
    c += ldc;
    ADD_STORE8(c, c10);
    ADD_STORE8(c + 8, c11);
    c += ldc;
    ADD_STORE8(c, c20);
    ADD_STORE8(c + 8, c21);
    c += ldc;
    ADD_STORE8(c, c30);
    ADD_STORE8(c + 8, c31);
    c += ldc;
    ADD_STORE8(c, c40);
    ADD_STORE8(c + 8, c41);
    c += ldc;
    ADD_STORE8(c, c50);
    ADD_STORE8(c + 8, c51);
}
#else
/* C[MR x NR] += a[kc][MR] * b[kc][NR] in plain C (other compilers). */
static void kern_full(int64_t kc, const float *restrict a, const float *restrict b, float *restrict c,
                      int64_t ldc)
{
    float acc[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++)
            acc[r][j] = 0.0f;
    for (int64_t k = 0; k < kc; k++, a += MR, b += NR)
        for (int r = 0; r < MR; r++) {
            float av = a[r];
            for (int j = 0; j < NR; j++)
                acc[r][j] += av * b[j];
        }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++)
            c[r * ldc + j] += acc[r][j];
}
#endif

/* An edge panel (fewer than MR rows or NR columns, packed [kc][h] or
 * [kc][w]) copied into a zero-padded full panel [kc][MR] or [kc][NR]. */
static void pad_panel(const float *src, int64_t kc, int64_t width, int64_t full, float *dst)
{
    for (int64_t k = 0; k < kc; k++)
        for (int64_t j = 0; j < full; j++)
            dst[k * full + j] = j < width ? src[k * width + j] : 0.0f;
}

/* C[m x n] += op(A) op(B) (K = k) with the packing buffers in ws
 * (gemm_ws_floats(m, n, k)); A, B and C point at the tile's origin.  Edge
 * panels run the same micro-kernel on zero-padded copies on the stack (kc
 * <= MAX_KC), into a local tile whose h x w corner is added to C. */
static void gemm_acc(const Gemm *g, int64_t m, int64_t n, int64_t k, float *C, int64_t ldc, float *ws)
{
    float apad[MAX_KC * MR], bpad[MAX_KC * NR], tile[MR * NR];
    Blocking blk = gemm_blocking(m, n, k);
    float *bpack = ws, *apack = ws + round_up(blk.kc * blk.mc, ALIGN_FLOATS);
    for (int64_t j0 = 0; j0 < n; j0 += blk.mc) {
        int64_t nb = min64(blk.mc, n - j0);
        for (int64_t k0 = 0; k0 < k; k0 += blk.kc) {
            int64_t kc = min64(blk.kc, k - k0);
            pack_b(g, k0, kc, j0, nb, bpack);
            for (int64_t i0 = 0; i0 < m; i0 += blk.nc) {
                int64_t mb = min64(blk.nc, m - i0), h_last = mb % MR;
                pack_a(g, i0, mb, k0, kc, apack);
                if (h_last) /* the block's last A panel, padded once for every B panel */
                    pad_panel(apack + (mb / MR) * kc * MR, kc, h_last, MR, apad);
                for (int64_t p0 = 0; p0 < nb; p0 += NR) {
                    int64_t w = min64(NR, nb - p0);
                    const float *bp = bpack + (p0 / NR) * kc * NR;
                    if (w < NR) {
                        pad_panel(bp, kc, w, NR, bpad);
                        bp = bpad;
                    }
                    for (int64_t q0 = 0; q0 < mb; q0 += MR) {
                        int64_t h = min64(MR, mb - q0);
                        const float *ap = apack + (q0 / MR) * kc * MR;
                        float *c = C + (i0 + q0) * ldc + j0 + p0;
                        if (h == MR && w == NR) {
                            kern_full(kc, ap, bp, c, ldc);
                            continue;
                        }
                        if (h < MR)
                            ap = apad;
                        memset(tile, 0, sizeof tile);
                        kern_full(kc, ap, bp, tile, NR);
                        for (int64_t r = 0; r < h; r++)
                            for (int64_t j = 0; j < w; j++)
                                c[r * ldc + j] += tile[r * NR + j];
                    }
                }
            }
        }
    }
}

/* One matmul problem, all batch entries alike: C = act(op(A) op(B) + bias). */
typedef struct MM {
    int64_t M, N, K;
    bool ta, tb;
    const float *bias;
    int64_t act;
    float alpha;
} MM;

/* C rows [r0,r1) x cols [c0,c1) of one batch entry; ws: gemm_ws_floats of the tile. */
static void mm_tile(const MM *mm, const float *A, const float *B, float *C, int64_t r0, int64_t r1, int64_t c0,
                    int64_t c1, float *ws)
{
    int64_t m = r1 - r0, n = c1 - c0;
    if (m <= 0 || n <= 0)
        return;
    float *Ct = C + r0 * mm->N + c0;
    init_rows(Ct, m, n, mm->N, mm->bias ? mm->bias + c0 : NULL);
    if (mm->K > 0) {
        Gemm g;
        g.lda = mm->ta ? mm->M : mm->K, g.ldb = mm->tb ? mm->K : mm->N;
        g.A = mm->ta ? A + r0 : A + r0 * g.lda;
        g.B = mm->tb ? B + c0 * g.ldb : B + c0;
        g.ta = mm->ta, g.tb = mm->tb;
        gemm_acc(&g, m, n, mm->K, Ct, mm->N, ws);
    }
    act_rows(Ct, m, n, mm->N, mm->act, mm->alpha);
}

static bool is_gemv(int64_t M, int64_t N)
{
    return M == 1 || N == 1;
}

/* How a team of nth threads shares a GEMM: whole batch entries, row blocks
 * or column blocks of `chunk`; per_thread: workspace floats of one slice. */
typedef enum { SPLIT_BATCH, SPLIT_ROWS, SPLIT_COLS } Split;

typedef struct MMPlan {
    Split split;
    int64_t chunk, per_thread;
} MMPlan;

static MMPlan mm_plan(int64_t M, int64_t N, int64_t K, int64_t n_batch, int nth)
{
    MMPlan p;
    if (nth <= 1 || n_batch >= nth) {
        p.split = SPLIT_BATCH;
        p.chunk = 0;
        p.per_thread = gemm_ws_floats(M, N, K);
    } else if (M >= N || M >= 16 * (int64_t)nth) {
        p.split = SPLIT_ROWS;
        p.chunk = min64(M, round_up(div_up(M, nth), 4));
        p.per_thread = gemm_ws_floats(p.chunk, N, K);
    } else {
        p.split = SPLIT_COLS;
        p.chunk = min64(N, round_up(div_up(N, nth), 8));
        p.per_thread = gemm_ws_floats(M, p.chunk, K);
    }
    return p;
}

/* Largest total over every team size, in bytes, plus alignment slack. */
static size_t mm_ws_bytes(int64_t M, int64_t N, int64_t K, int64_t n_batch)
{
    if (is_gemv(M, N) || M <= 0 || N <= 0 || K <= 0 || n_batch <= 0)
        return 0;
    int64_t most = 0;
    for (int t = 1; t <= TCRT_MAX_THREADS; t++)
        most = max64(most, t * mm_plan(M, N, K, n_batch, t).per_thread);
    return (size_t)most * sizeof(float) + 64;
}

static float *align64(void *p)
{
    return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* Batch entry b_idx of a broadcast operand t (output o): element offset. */
static int64_t batch_offset(const tcrt_tensor *t, const tcrt_tensor *o, int64_t b_idx)
{
    int64_t off = 0, tstride = t->dims[t->rank - 1] * t->dims[t->rank - 2];
    for (int d = o->rank - 3; d >= 0; d--) {
        int64_t i = b_idx % o->dims[d];
        b_idx /= o->dims[d];
        int td = d - (o->rank - t->rank);
        if (td < 0)
            break;
        if (t->dims[td] != 1)
            off += i * tstride;
        tstride *= t->dims[td];
    }
    return off;
}

/* Operand pointers of batch entry bi; a/b/o null means one unbatched entry. */
typedef struct Batches {
    const tcrt_tensor *a, *b, *o;
    const float *A, *B;
    float *C;
    int64_t n;
} Batches;

static void entry(const Batches *bt, const MM *mm, int64_t bi, const float **A, const float **B, float **C)
{
    *A = bt->a ? bt->A + batch_offset(bt->a, bt->o, bi) : bt->A;
    *B = bt->b ? bt->B + batch_offset(bt->b, bt->o, bi) : bt->B;
    *C = bt->C + bi * mm->M * mm->N;
}

/* GEMV: y[L] = X v (dot form, X[j*K+k]) or v X (axpy form, X[k*L+j]), outputs
 * [j0,j1); bias has stride bs (0: one value for all). */
static void gemv_range(int64_t L, int64_t K, const float *v, const float *X, bool dot_form, float *y, int64_t j0,
                       int64_t j1, const float *bias, int64_t bs, int64_t a, float alpha)
{
    for (int64_t j = j0; j < j1; j++)
        y[j] = bias ? bias[j * bs] : 0.0f;
    if (dot_form) {
        tcrt_gemv_dot(X, K, v, y, j0, j1);
    } else {
        float *restrict yy = y + j0;
        int64_t n = j1 - j0, k = 0;
#if FG_VECTOR
        /* four rows of X per sweep over y (y stays in L1) */
        for (; k + 4 <= K; k += 4) {
            const float *x0 = X + k * L + j0, *x1 = x0 + L, *x2 = x1 + L, *x3 = x2 + L;
            vf8 v0 = SPLAT8(v[k]), v1 = SPLAT8(v[k + 1]), v2 = SPLAT8(v[k + 2]), v3 = SPLAT8(v[k + 3]);
            int64_t j = 0;
            for (; j + 8 <= n; j += 8) {
                vf8 acc, r0, r1, r2, r3;
                LOAD8(acc, yy + j), LOAD8(r0, x0 + j), LOAD8(r1, x1 + j), LOAD8(r2, x2 + j), LOAD8(r3, x3 + j);
                acc += v0 * r0 + v1 * r1;
                acc += v2 * r2 + v3 * r3;
                STORE8(yy + j, acc);
            }
            for (; j < n; j++)
                yy[j] += v[k] * x0[j] + v[k + 1] * x1[j] + v[k + 2] * x2[j] + v[k + 3] * x3[j];
        }
#endif
        for (; k < K; k++) {
            const float *restrict x = X + k * L + j0;
            float vk = v[k];
            for (int64_t j = 0; j < n; j++)
                yy[j] += vk * x[j];
        }
    }
    if (a != TCRT_ACT_NONE)
        for (int64_t j = j0; j < j1; j++)
            y[j] = tcrt_kern_act(y[j], a, alpha);
}

/* A run of one matmul on the team (the task contexts). */
typedef struct MMRun {
    const MM *mm;
    const Batches *bt;
    float *ws;
    int nth;
    /* GEMV */
    bool row, dot_form;
    int64_t L;
} MMRun;

static void gemv_task(void *ctx, int64_t task, int tid)
{
    const MMRun *r = ctx;
    const MM *mm = r->mm;
    (void)tid;
    int64_t chunk = round_up(div_up(r->L, r->nth), 16);
    int64_t j0 = min64(r->L, task * chunk), j1 = min64(r->L, j0 + chunk);
    for (int64_t bi = 0; bi < r->bt->n && j0 < j1; bi++) {
        const float *A, *B;
        float *C;
        entry(r->bt, mm, bi, &A, &B, &C);
        gemv_range(r->L, mm->K, r->row ? A : B, r->row ? B : A, r->dot_form, C, j0, j1, mm->bias, r->row ? 1 : 0,
                   mm->act, mm->alpha);
    }
}

static void gemm_task(void *ctx, int64_t task, int tid)
{
    const MMRun *r = ctx;
    const MM *mm = r->mm;
    int nt = r->nth;
    MMPlan p = mm_plan(mm->M, mm->N, mm->K, r->bt->n, nt);
    float *mine = r->ws + tid * p.per_thread;
    bool by_batch = p.split == SPLIT_BATCH;
    for (int64_t bi = by_batch ? task : 0; bi < r->bt->n; bi += by_batch ? nt : 1) {
        const float *A, *B;
        float *C;
        entry(r->bt, mm, bi, &A, &B, &C);
        if (by_batch)
            mm_tile(mm, A, B, C, 0, mm->M, 0, mm->N, mine);
        else if (p.split == SPLIT_ROWS)
            mm_tile(mm, A, B, C, min64(mm->M, task * p.chunk), min64(mm->M, (task + 1) * p.chunk), 0, mm->N,
                    mine);
        else
            mm_tile(mm, A, B, C, 0, mm->M, min64(mm->N, task * p.chunk), min64(mm->N, (task + 1) * p.chunk),
                    mine);
    }
}

/* Runs every batch entry of mm on the team; ws: mm_ws_bytes, aligned base. */
static void run_mm(const MM *mm, const Batches *bt, float *ws)
{
    int64_t work = mm->M * mm->N * max64(mm->K, 1) * bt->n;
    MMRun r = {mm, bt, ws, work < SERIAL_WORK ? 1 : team_size(), false, false, 0};
    if (is_gemv(mm->M, mm->N)) {
        /* M == 1: y = a op(B), dot form when B is transposed;
         * N == 1: y = op(A) b, dot form when A is not transposed. */
        r.row = mm->M == 1;
        r.L = r.row ? mm->N : mm->M;
        r.dot_form = r.row ? mm->tb : !mm->ta;
        tcrt_parallel_tasks(r.nth, gemv_task, &r);
        return;
    }
    tcrt_parallel_tasks(r.nth, gemm_task, &r);
}

/* Usable workspace of out[1] in bytes (0 when absent). */
static size_t given_ws(const tcrt_tensor *out, int n_out)
{
    if (n_out < 2 || !out[1].data)
        return 0;
    int64_t c = tcrt_tensor_count(&out[1]);
    return c > 0 ? (size_t)c * tcrt_dtype_size(out[1].dtype) : 0;
}

/* ---- matmul shapes ---- */

typedef struct MMShape {
    MM mm;
    int64_t n_batch;
} MMShape;

/* 1: fast path applies, 0: not f32 or unusual ranks (reference), -1: bad shapes. */
static int mm_shape(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p, MMShape *s)
{
    if (!in || !out || !p || (n_in != 2 && n_in != 3))
        return -1;
    const tcrt_tensor *a = &in[0], *b = &in[1];
    bool f32 = a->dtype == TCRT_F32 && b->dtype == TCRT_F32 && out->dtype == TCRT_F32 &&
               (n_in == 2 || in[2].dtype == TCRT_F32);
    if (!f32 || a->rank < 2 || b->rank < 2 || out->rank < 2 || out->rank < a->rank || out->rank < b->rank ||
        out->rank > TCRT_MAX_RANK)
        return 0;
    bool ta = p->i[TCRT_MM_TA] != 0, tb = p->i[TCRT_MM_TB] != 0;
    int64_t act_code = p->i[TCRT_MM_ACT];
    int64_t ar = a->dims[a->rank - 2], ac = a->dims[a->rank - 1];
    int64_t br = b->dims[b->rank - 2], bc = b->dims[b->rank - 1];
    int64_t M = ta ? ac : ar, K = ta ? ar : ac, N = tb ? br : bc;
    if ((tb ? bc : br) != K || out->dims[out->rank - 2] != M || out->dims[out->rank - 1] != N ||
        act_code < TCRT_ACT_NONE || act_code > TCRT_ACT_LEAKY || (n_in == 3 && tcrt_tensor_count(&in[2]) != N))
        return -1;
    int64_t n_batch = 1;
    for (int d = 0; d < out->rank - 2; d++) {
        const tcrt_tensor *ops[2] = {a, b};
        for (int o = 0; o < 2; o++) {
            int td = d - (out->rank - ops[o]->rank);
            if (td >= 0 && ops[o]->dims[td] != 1 && ops[o]->dims[td] != out->dims[d])
                return -1;
        }
        n_batch *= out->dims[d];
    }
    if (M < 0 || N < 0 || K < 0 || n_batch < 0)
        return -1;
    /* a[batch..., M, K] x b[K, N] (b without batch, a not broadcast, not
     * transposed) is one [batch * M, K] x [K, N] product. */
    bool a_full = !ta && a->rank == out->rank && tcrt_tensor_count(b) == br * bc;
    for (int d = 0; d < out->rank - 2 && a_full; d++)
        a_full = a->dims[d] == out->dims[d];
    if (a_full && n_batch > 1)
        M *= n_batch, n_batch = 1;
    s->mm = (MM){M, N, K, ta, tb, n_in == 3 ? (const float *)in[2].data : NULL, act_code, (float)p->f[0]};
    s->n_batch = n_batch;
    return 1;
}

/* ---- conv ---- */

typedef struct ConvGeom {
    int64_t N, H, W, C, KH, KW, CI, O, OH, OW, sh, sw, dh, dw, pt, pl;
} ConvGeom;

/* Fills g for a non-depthwise, unpacked conv; false when the fast path does
 * not apply (the reference handles it). */
static bool conv_geom(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p, ConvGeom *g)
{
    if (!in || !out || !p || (n_in != 2 && n_in != 3))
        return false;
    const tcrt_tensor *x = &in[0], *w = &in[1];
    if (x->rank != 4 || w->rank != 4 || out->rank != 4)
        return false;
    if (x->dtype != TCRT_F32 || w->dtype != TCRT_F32 || out->dtype != TCRT_F32)
        return false;
    if (n_in == 3 && (in[2].dtype != TCRT_F32 || tcrt_tensor_count(&in[2]) != out->dims[3]))
        return false;
    g->N = x->dims[0], g->H = x->dims[1], g->W = x->dims[2], g->C = x->dims[3];
    g->KH = w->dims[0], g->KW = w->dims[1], g->CI = w->dims[2];
    g->O = out->dims[3], g->OH = out->dims[1], g->OW = out->dims[2];
    g->sh = p->i[TCRT_CONV_SH], g->sw = p->i[TCRT_CONV_SW];
    g->dh = p->i[TCRT_CONV_DH], g->dw = p->i[TCRT_CONV_DW];
    g->pt = p->i[TCRT_CONV_PT], g->pl = p->i[TCRT_CONV_PL];
    int64_t a = p->i[TCRT_CONV_ACT];
    if (p->i[TCRT_CONV_DEPTHWISE] || g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1 || g->pt < 0 || g->pl < 0 ||
        p->i[TCRT_CONV_PB] < 0 || p->i[TCRT_CONV_PR] < 0 || a < TCRT_ACT_NONE || a > TCRT_ACT_LEAKY)
        return false;
    if (out->dims[0] != g->N || g->CI != g->C || w->dims[3] != g->O)
        return false;
    return tcrt_tensor_count(out) > 0 && tcrt_tensor_count(x) > 0 && tcrt_tensor_count(w) > 0;
}

static bool is_pointwise(const ConvGeom *g)
{
    return g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 && g->OH == g->H &&
           g->OW == g->W;
}

/* im2col on a team of nth: pixel rows per thread, patch rows per block
 * (a block of 2 MB, or 8 MB over all threads, but at least 128 rows), and
 * workspace floats of one thread's slice (patch block + GEMM buffers). */
typedef struct ConvPlan {
    int64_t chunk, rb, per_thread;
} ConvPlan;

static ConvPlan conv_plan(const ConvGeom *g, int nth)
{
    ConvPlan c;
    int64_t rows = g->N * g->OH * g->OW, K = g->KH * g->KW * g->C;
    c.chunk = round_up(div_up(rows, nth), 4);
    int64_t bytes = min64(IM2COL_BYTES, IM2COL_TOTAL / nth);
    c.rb = min64(min64(c.chunk, rows), max64(MIN_IM2COL_ROWS, bytes / (K * 4)));
    c.per_thread = round_up(c.rb * K, ALIGN_FLOATS) + gemm_ws_floats(c.rb, g->O, K);
    return c;
}

static size_t conv_ws_bytes(const ConvGeom *g)
{
    if (is_pointwise(g))
        return mm_ws_bytes(g->N * g->H * g->W, g->O, g->C, 1);
    int64_t most = 0;
    for (int t = 1; t <= TCRT_MAX_THREADS; t++)
        most = max64(most, t * conv_plan(g, t).per_thread);
    return (size_t)most * sizeof(float) + 64;
}

/* Patch rows [r0, r0+nr) (output pixels) into P[nr, KH*KW*C]. */
static void im2col(const ConvGeom *g, const float *X, float *P, int64_t r0, int64_t nr)
{
    for (int64_t r = 0; r < nr; r++) {
        int64_t pix = r0 + r;
        int64_t n = pix / (g->OH * g->OW), rem = pix % (g->OH * g->OW);
        int64_t oh = rem / g->OW, ow = rem % g->OW;
        float *dst = P + r * g->KH * g->KW * g->C;
        for (int64_t kh = 0; kh < g->KH; kh++) {
            int64_t ih = oh * g->sh - g->pt + kh * g->dh;
            for (int64_t kw = 0; kw < g->KW; kw++, dst += g->C) {
                int64_t iw = ow * g->sw - g->pl + kw * g->dw;
                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W)
                    memset(dst, 0, (size_t)g->C * sizeof(float));
                else
                    memcpy(dst, X + ((n * g->H + ih) * g->W + iw) * g->C, (size_t)g->C * sizeof(float));
            }
        }
    }
}

/* The im2col run on the team (task context). */
typedef struct ConvRun {
    const ConvGeom *g;
    const MM *mm;
    const float *X, *Wt;
    float *Y, *ws;
    int64_t rows;
    int nth;
} ConvRun;

static void conv_task(void *ctx, int64_t task, int tid)
{
    const ConvRun *r = ctx;
    const int64_t K = r->mm->K, O = r->g->O;
    ConvPlan c = conv_plan(r->g, r->nth);
    float *patch = r->ws + tid * c.per_thread;
    float *gws = patch + round_up(c.rb * K, ALIGN_FLOATS);
    int64_t r_end = min64(r->rows, (task + 1) * c.chunk);
    for (int64_t r0 = task * c.chunk; r0 < r_end; r0 += c.rb) {
        int64_t nr = min64(c.rb, r_end - r0);
        im2col(r->g, r->X, patch, r0, nr);
        MM blk = *r->mm;
        blk.M = nr;
        mm_tile(&blk, patch, r->Wt, r->Y + r0 * O, 0, nr, 0, O, gws);
    }
}

/* ---- entry points ---- */

size_t tcrt_fast_matmul_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p)
{
    MMShape s;
    if (mm_shape(in, n_in, out, p, &s) != 1)
        return 0;
    size_t own = mm_ws_bytes(s.mm.M, s.mm.N, s.mm.K, s.n_batch);
    /* the packed micro-kernel path (fast_conv.c) may run instead: room for either */
    if (!s.mm.ta && !is_gemv(s.mm.M, s.mm.N)) {
        size_t kmm = tcrt_kmm_workspace(s.mm.M, s.mm.N, s.mm.K);
        return kmm > own ? kmm : own;
    }
    return own;
}

/* Entry bi of a batched product for tcrt_kmm_run_batch (ctx: BatchEntries). */
typedef struct BatchEntries {
    const Batches *bt;
    const MM *mm;
} BatchEntries;

static void batch_entry(void *ctx, int64_t bi, const float **A, const float **B, float **C)
{
    const BatchEntries *e = ctx;
    entry(e->bt, e->mm, bi, A, B, C);
}

tcrt_status tcrt_fast_matmul(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    if (n_out < 1)
        return TCRT_ERR_RUNTIME;
    MMShape s;
    int ok = mm_shape(in, n_in, out, p, &s);
    if (ok < 0)
        return TCRT_ERR_RUNTIME;
    if (ok == 0)
        return tcrt_ref_matmul(in, n_in, out, n_out, p);
    if (tcrt_tensor_count(out) == 0)
        return TCRT_OK;
    Batches bt = {&in[0], &in[1], out, (const float *)in[0].data, (const float *)in[1].data, (float *)out->data,
                  s.n_batch};
    /* entries too small to split over the threads: one per thread at a time */
    BatchEntries be = {&bt, &s.mm};
    if (!s.mm.ta && s.n_batch > 1 &&
        tcrt_kmm_run_batch(s.n_batch, s.mm.M, s.mm.N, s.mm.K, s.mm.tb, s.mm.bias, (int)s.mm.act, s.mm.alpha,
                           n_out >= 2 ? out[1].data : NULL, given_ws(out, n_out), batch_entry, &be))
        return TCRT_OK;
    size_t kmm_need = tcrt_kmm_workspace(s.mm.M, s.mm.N, s.mm.K);
    if (!s.mm.ta && kmm_need > 0 && tcrt_kmm_applies(s.mm.M, s.mm.N, s.mm.K) && given_ws(out, n_out) >= kmm_need) {
        for (int64_t bi = 0; bi < s.n_batch; bi++) {
            const float *A, *B;
            float *C;
            entry(&bt, &s.mm, bi, &A, &B, &C);
            tcrt_kmm_run(s.mm.M, s.mm.N, s.mm.K, A, B, s.mm.tb, C, s.mm.bias, (int)s.mm.act, s.mm.alpha,
                         out[1].data);
        }
        return TCRT_OK;
    }
    size_t need = mm_ws_bytes(s.mm.M, s.mm.N, s.mm.K, s.n_batch);
    if (need > 0 && given_ws(out, n_out) < need)
        return tcrt_ref_matmul(in, n_in, out, 1, p);
    run_mm(&s.mm, &bt, need > 0 ? align64(out[1].data) : NULL);
    return TCRT_OK;
}

size_t tcrt_fast_conv2d_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p)
{
    if (p && p->i[TCRT_CONV_PACKED])
        return tcrt_pconv_workspace(in, n_in, out, p); /* packed weights: fast_conv.c */
    if (p && (p->i[TCRT_CONV_DEPTHWISE] || p->i[TCRT_CONV_X2S]))
        return 0; /* depthwise: fast_pool.c, none; a conv pair unpacked: the reference */
    ConvGeom g;   /* a residual (n_in == 4) is added after the GEMM: same workspace */
    if (!conv_geom(in, n_in == 4 ? 3 : n_in, out, p, &g))
        return 0;
    return conv_ws_bytes(&g);
}

tcrt_status tcrt_fast_conv2d(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p)
{
    if (p && p->i[TCRT_CONV_PACKED])
        return tcrt_pconv_run(in, n_in, out, n_out, p); /* packed weights: fast_conv.c */
    if (p && p->i[TCRT_CONV_DEPTHWISE])
        return tcrt_fast_depthwise_conv2d(in, n_in, out, n_out, p); /* fast_pool.c */
    if (p && p->i[TCRT_CONV_X2S])
        return tcrt_ref_conv2d(in, n_in, out, n_out, p); /* a conv pair unpacked (pack pass disabled) */
    if (n_in == 4) {
        /* Residual with unpacked weights: the GEMM without activation, then
         * y = act(y + residual) in one sweep; a residual sharing the
         * output's buffer goes to the reference kernel. */
        const tcrt_tensor *r = &in[3];
        if (!p || n_out < 1 || r->dtype != TCRT_F32 || out->dtype != TCRT_F32 || !r->data ||
            tcrt_tensor_count(r) != tcrt_tensor_count(out) || r->data == out->data)
            return tcrt_ref_conv2d(in, n_in, out, n_out, p);
        tcrt_params q = *p;
        q.i[TCRT_CONV_ACT] = TCRT_ACT_NONE;
        tcrt_status s = tcrt_fast_conv2d(in, 3, out, n_out, &q);
        if (s != TCRT_OK)
            return s;
        float *y = (float *)out->data;
        const float *res = (const float *)r->data;
        int64_t n = tcrt_tensor_count(out), a = p->i[TCRT_CONV_ACT];
        float alpha = (float)p->f[0];
        for (int64_t i = 0; i < n; i++)
            y[i] = tcrt_kern_act(y[i] + res[i], a, alpha);
        return TCRT_OK;
    }
    ConvGeom g;
    if (n_out < 1 || !conv_geom(in, n_in, out, p, &g))
        return tcrt_ref_conv2d(in, n_in, out, n_out, p);
    size_t need = conv_ws_bytes(&g);
    if (given_ws(out, n_out) < need)
        return tcrt_ref_conv2d(in, n_in, out, 1, p);
    float *ws = align64(out[1].data);
    int64_t rows = g.N * g.OH * g.OW;
    const float *bias = n_in == 3 ? (const float *)in[2].data : NULL;
    const float *X = (const float *)in[0].data, *Wt = (const float *)in[1].data;
    float *Y = (float *)out->data;
    MM mm = {rows, g.O, g.KH * g.KW * g.C, false, false, bias, p->i[TCRT_CONV_ACT], (float)p->f[0]};
    if (is_pointwise(&g)) {
        Batches bt = {NULL, NULL, NULL, X, Wt, Y, 1};
        run_mm(&mm, &bt, ws);
        return TCRT_OK;
    }
    ConvRun r = {&g, &mm, X, Wt, Y, ws, rows, rows * g.O * mm.K < SERIAL_WORK ? 1 : team_size()};
    tcrt_parallel_tasks(r.nth, conv_task, &r);
    return TCRT_OK;
}
