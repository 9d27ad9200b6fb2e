/* fast_sgemm_avx512.c - packed, cache-blocked AVX-512 float32 GEMM for large
 * tcrt_fast_matmul problems (contract in fast_conv_int.h, tcrt_sgemm_*);
 * compiled with -mavx512f -mfma in its own translation unit and called only
 * when tcrt_kern_isa() is TCRT_ISA_AVX512 (CPU support and the runtime_isa
 * meson option), like fast_conv_avx512.c.
 *
 * C[M,N] (row stride N) = act(op(A)[M,K] op(B)[K,N] + bias), BLIS-style
 * with A as the broadcast operand (C is row-major, so B's rows are the
 * vectors):
 *   - micro-kernel SG_MR x SG_NR = 14 x 32: 28 zmm accumulators; per k two
 *     loads of B, 14 broadcasts of A and 28 FMAs (14 cycles at two FMA
 *     ports) for 128 bytes of B, half the L2 traffic per FMA of the 6 x 64
 *     tile of fast_conv_avx512.c (the B block streams from L2);
 *   - K blocks of kc <= SG_KC (512, balanced): a packed A micro-panel
 *     (14 x kc, 28 KB) is reused by every B micro-panel of the N block;
 *   - N blocks of nc columns (<= SG_NC_BYTES = 1 MB of packed B, balanced):
 *     the block (kc x nc) stays in L2 while all of M sweeps it;
 *   - packing, into the caller's workspace (nothing here allocates): each
 *     N block of B as [nc/32][kc][32] (zero columns past N) by parallel
 *     tasks, row by row of the source; A one micro-panel at a time as
 *     [kc/16][14][16] (16 k of a row together, so the copy of A is plain
 *     64-byte moves; zero rows past M) into a per-thread double buffer:
 *     call q of panel p copies row q of panel p + 1 along with its FMAs,
 *     one line per 16 k steps, prefetched 8 lines ahead, so the copy's
 *     cache misses overlap the arithmetic (measured: packing all of A per
 *     K block into one array up front cost 6-10%, every store missing);
 *   - the A store: when the workspace holds all of M's panels for one K
 *     block (sg_store_bytes; only with more than one N block), the first
 *     N block's riding copy writes each panel into its slot there instead
 *     and the later N blocks read it, each call prefetching a 1/14 of the
 *     next panel into L2: A is copied once per K block instead of once
 *     per (K block, N block); 2048^3 +1-4% (median 2%) at 1 and 2 threads;
 *   - C: the first K block stores raw sums, later ones add C's values
 *     (prefetched at kernel entry), the last applies bias and activation at
 *     the one store; edges use masked loads/stores (columns) and skip rows
 *     past M, so any M, N, K >= 1 works (K = 0 is the caller's: bias only).
 * Transposes change only the packing: B^T and A^T go through an
 * in-register 16 x 16 transpose (A^T panels between panels, not riding).
 * Threads: per (K block, N block) two tcrt_parallel_tasks runs, packing B
 * then computing; a compute task per thread claims A micro-panels one at a
 * time from a shared counter (sg_compute_task), every thread reading the
 * shared B block into its own L2; A buffers are indexed by tid.  With
 * nth 1 (the caller's choice for a small product) both runs stay on the
 * calling thread.
 * Invariant: tcrt_sgemm_workspace is plain arithmetic on the shapes (no
 * CPU query; buffers for TCRT_MAX_THREADS), so a planner and the
 * executable agree; a smaller workspace runs without the A store, then
 * narrower N blocks.
 */
#include "fast_avx512_int.h"
#include "fast_conv_int.h"
#include "tcrt_pool.h"

#include <immintrin.h>
#include <stdatomic.h>
#include <string.h>

#define SG_MR 14
#define SG_NR 32
enum { SG_KC = 512, SG_NC_BYTES = 1 << 20, SG_PF_GROUPS = 8 };

#define SG_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)

static int64_t div_up(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* n split into the fewest near-equal parts of at most cap: one part's size. */
static int64_t block_of(int64_t n, int64_t cap)
{
    return div_up(n, div_up(n, cap));
}

/* Block sizes of one problem: kc along K, nc (a multiple of SG_NR) along N. */
static void sg_blocks(int64_t N, int64_t K, int64_t *kc, int64_t *nc)
{
    *kc = block_of(K, SG_KC);
    int64_t panels = div_up(N, SG_NR), cap = SG_NC_BYTES / (int64_t)(sizeof(float) * SG_NR * *kc);
    *nc = block_of(panels, cap > 0 ? cap : 1) * SG_NR;
}

/* Threads whose panel buffers a run needs: every tid the pool may hand out. */
static int sg_slots(int nth)
{
    int n = tcrt_get_threads();
    n = n > nth ? n : nth;
    return n < 1 ? 1 : (n > TCRT_MAX_THREADS ? TCRT_MAX_THREADS : n);
}

/* Bytes of `slots` threads' two packed A panels of kc (plus alignment slack). */
static size_t sg_abuf_bytes(int64_t kc, int slots)
{
    return 128 + (size_t)(2 * slots) * (size_t)(SG_MR * div_up(kc, 16) * 16) * sizeof(float);
}

/* Bytes of the packed A store of one K block (all of M's panels), kept
 * across its N blocks; 0 when there is only one N block. */
static size_t sg_store_bytes(int64_t M, int64_t N, int64_t kc, int64_t nc)
{
    return N > nc ? (size_t)(div_up(M, SG_MR) * SG_MR * div_up(kc, 16) * 16) * sizeof(float) : 0;
}

/* Block sizes for a workspace of ws bytes, and whether the A store fits
 * (*store: its bytes, or 0): with the preferred N blocks and the store when
 * all of it fits, else nc shrinks (balanced) to what fits without the
 * store; false when not even one B micro-panel does. */
static bool sg_plan(int64_t M, int64_t N, int64_t K, int slots, size_t ws, int64_t *kc, int64_t *nc,
                    size_t *store)
{
    sg_blocks(N, K, kc, nc);
    size_t a = sg_abuf_bytes(*kc, slots), panel = (size_t)(*kc * SG_NR) * sizeof(float);
    *store = sg_store_bytes(M, N, *kc, *nc);
    if (*store > 0 && ws >= a + *store + (size_t)(*nc / SG_NR) * panel)
        return true;
    *store = 0;
    if (ws < a + panel)
        return false;
    int64_t fit = (int64_t)((ws - a) / panel);
    if (fit < *nc / SG_NR)
        *nc = block_of(div_up(N, SG_NR), fit) * SG_NR;
    return true;
}

size_t tcrt_sgemm_workspace(int64_t M, int64_t N, int64_t K)
{
    if (M <= 0 || N <= 0 || K <= 0 || M > (INT64_MAX >> 24) / K || N > (INT64_MAX >> 24) / K)
        return 0;
    int64_t kc, nc;
    sg_blocks(N, K, &kc, &nc);
    return sg_abuf_bytes(kc, TCRT_MAX_THREADS) + (size_t)(nc * kc) * sizeof(float) +
           sg_store_bytes(M, N, kc, nc);
}

/* What one kernel call does at its store. */
typedef struct SgEpi {
    const float *bias; /* at the tile's first column, or NULL */
    int act;
    float alpha;
    bool load_c; /* add C's values (K blocks after the first) */
    bool last;   /* bias and activation (the last K block) */
    /* Packing of one row of the next A panel, riding along (one 16-float
     * group per 16 k steps, so its loads overlap the FMAs): row values
     * nsrc[0, kc) (NULL: a zero row past M) into ndst[g * 14 * 16 + u]
     * (ndst NULL: none). */
    const float *nsrc;
    float *ndst;
    const float *npf; /* the next call's nsrc (NULL: none): prefetched into L2 along the way */
} SgEpi;

/* C[mr x nc] (row stride ldc) (+)= a * b[kc][32], a as [kc/16][14][16]
 * (the last group partly filled), epilogue e. */
static void sg_kernel(int64_t mr, int64_t nc, int64_t kc, const float *restrict a, const float *restrict b,
                      float *c, int64_t ldc, const SgEpi *e)
{
#define DECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps();
    SG_ROWS(DECL)
#undef DECL
    /* C's tile (written at the end, read too after the first K block):
     * its misses overlap the FMAs */
    for (int64_t r = 0; r < mr; r++) {
        __builtin_prefetch(c + r * ldc, 1, 3);
        __builtin_prefetch(c + r * ldc + SG_NR - 1, 1, 3);
    }
    /* a: groups of 16 k, row r's 16 values at r * 16 (file comment) */
#define STEP(r)                                                                                              \
    {                                                                                                        \
        __m512 av = _mm512_set1_ps(a[r * 16 + u]);                                                           \
        c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                                                          \
        c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1);                                                          \
    }
    for (int64_t k = 0; k < kc; k += 16, a += SG_MR * 16) {
        int64_t steps = kc - k < 16 ? kc - k : 16;
        /* the next call's row into L2, a line per group, so that its
         * whole row (not only the first lines) is near when that call
         * starts: 2048^3 +0.4-2% at 1 and 2 threads (alternating calls of
         * both builds, medians of 30, 4 runs); or a span of the next
         * stored A panel */
        if (e->npf)
            _mm_prefetch((const char *)(e->npf + k), _MM_HINT_T1);
        if (e->ndst) {
            /* the row's line SG_PF_GROUPS groups on, so that the load
             * below hits however far away the row was */
            if (e->nsrc && k + 16 * SG_PF_GROUPS < kc)
                _mm_prefetch((const char *)(e->nsrc + k + 16 * SG_PF_GROUPS), _MM_HINT_T0);
            _mm512_store_ps(e->ndst + k * SG_MR, e->nsrc ? _mm512_maskz_loadu_ps(zmm_mask(steps), e->nsrc + k)
                                                         : _mm512_setzero_ps());
        }
#pragma GCC unroll 4
        for (int64_t u = 0; u < steps; u++) {
            __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
            SG_ROWS(STEP)
            b += SG_NR;
        }
    }
#undef STEP
    __mmask16 m0 = zmm_mask(nc), m1 = zmm_mask(nc - 16);
    __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps(), alpha = _mm512_set1_ps(e->alpha);
    if (e->last && e->bias)
        bias0 = _mm512_maskz_loadu_ps(m0, e->bias), bias1 = _mm512_maskz_loadu_ps(m1, e->bias + 16);
#define STORE(r)                                                                                             \
    if (r < mr) {                                                                                            \
        float *cr = c + r * ldc;                                                                             \
        __m512 v0 = c##r##0, v1 = c##r##1;                                                                   \
        if (e->load_c)                                                                                       \
            v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, cr)),                                           \
            v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, cr + 16));                                      \
        if (e->last)                                                                                         \
            v0 = zmm_act(_mm512_add_ps(v0, bias0), e->act, alpha),                                           \
            v1 = zmm_act(_mm512_add_ps(v1, bias1), e->act, alpha);                                           \
        _mm512_mask_storeu_ps(cr, m0, v0);                                                                   \
        _mm512_mask_storeu_ps(cr + 16, m1, v1);                                                              \
    }
    SG_ROWS(STORE)
#undef STORE
}

typedef struct SgJob {
    int64_t M, N, K, kc, nc;
    const float *A, *B, *bias;
    bool ta, tb;
    float *C, *abuf, *bpack; /* abuf: two packed A panels per thread; bpack [nc/32][kc][32] */
    float *astore;           /* all A panels of the K block (NULL: none; sg_store_bytes) */
    int act;
    float alpha;
    int64_t panels;                   /* A micro-panels, div_up(M, 14) */
    int64_t k0, kcur, n0, ncur;       /* current K block and N block */
    int64_t apanel;                   /* floats of a packed A panel: 14 x kc rounded up to 16 */
    int64_t bpanels, nth;
    _Atomic int64_t next_panel; /* the compute tasks' next A panel to claim */
} SgJob;

/* Prefetches the n bytes at p into L2, a line at a time. */
static inline void prefetch_span(const void *p, int64_t n)
{
    for (int64_t o = 0; o < n; o += 64)
        _mm_prefetch((const char *)p + o, _MM_HINT_T1);
    _mm_prefetch((const char *)p + n - 1, _MM_HINT_T1);
}

/* In-register transpose of a 16 x 16 block (v[i] lane l -> v[l] lane i):
 * four perfect shuffles (vectors i, i + 8 -> 2i, 2i + 1 interleaved), each
 * rotating the 8-bit (vector, lane) address by one bit. */
static inline __attribute__((always_inline)) void transpose16(__m512 v[16])
{
    const __m512i ilo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i ihi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    for (int round = 0; round < 4; round++) {
        __m512 t[16];
        for (int i = 0; i < 8; i++) {
            t[2 * i] = _mm512_permutex2var_ps(v[i], ilo, v[i + 8]);
            t[2 * i + 1] = _mm512_permutex2var_ps(v[i], ihi, v[i + 8]);
        }
        for (int i = 0; i < 16; i++)
            v[i] = t[i];
    }
}

/* Rows [k1, k2) of the current B block (B not transposed): each source row
 * is read once, left to right, into the block's micro-panels (row k of
 * panel q at q * kcur * 32 + k * 32; zero columns past N), so a task
 * touches one source page per row. */
static void pack_b_rows(const SgJob *j, int64_t k1, int64_t k2)
{
    int64_t full = j->ncur / SG_NR, w = j->ncur - full * SG_NR;
    __mmask16 m0 = zmm_mask(w), m1 = zmm_mask(w - 16);
    for (int64_t k = k1; k < k2; k++) {
        const float *src = j->B + (j->k0 + k) * j->N + j->n0;
        if (k + 4 < j->kcur) /* as in pack_a */
            prefetch_span(src + 4 * j->N, j->ncur * (int64_t)sizeof(float));
        float *dst = j->bpack + k * SG_NR;
        for (int64_t q = 0; q < full; q++, src += SG_NR, dst += j->kcur * SG_NR) {
            _mm512_store_ps(dst, _mm512_loadu_ps(src));
            _mm512_store_ps(dst + 16, _mm512_loadu_ps(src + 16));
        }
        if (w > 0) {
            _mm512_store_ps(dst, _mm512_maskz_loadu_ps(m0, src));
            _mm512_store_ps(dst + 16, _mm512_maskz_loadu_ps(m1, src + 16));
        }
    }
}

/* One B micro-panel of B^T: columns [n0, n0 + w) of op(B), rows [k0, k0 + kc), as [kc][32]. */
static void pack_bt(const SgJob *j, int64_t n0, float *dst)
{
    int64_t w = j->N - n0 < SG_NR ? j->N - n0 : SG_NR, kc = j->kcur;
    /* B^T [N, K]: column jj of the panel is row n0 + jj, contiguous in k;
     * 16 k x 16 columns at a time through an in-register transpose */
    for (int64_t k = 0; k < kc; k += 16) {
        int64_t steps = kc - k < 16 ? kc - k : 16;
        __mmask16 km = zmm_mask(steps);
        for (int h = 0; h < 2; h++) {
            __m512 v[16];
            for (int jj = 0; jj < 16; jj++) {
                int64_t col = h * 16 + jj;
                v[jj] = col < w ? _mm512_maskz_loadu_ps(km, j->B + (n0 + col) * j->K + j->k0 + k)
                                : _mm512_setzero_ps();
            }
            transpose16(v);
            for (int64_t u = 0; u < steps; u++)
                _mm512_store_ps(dst + (k + u) * SG_NR + h * 16, v[u]);
        }
    }
}

/* One A micro-panel: rows [m0, m0 + 14) of op(A), columns [k0, k0 + kc),
 * as groups of 16 k: dst[g][r][u] = op(A)[m0 + r][k0 + 16 g + u] (zero
 * for rows past M; the last group's lanes past kc are never read). */
static void pack_a(const SgJob *j, int64_t m0, float *dst)
{
    int64_t rows = j->M - m0 < SG_MR ? j->M - m0 : SG_MR, kc = j->kcur;
    if (!j->ta) { /* row r's values are contiguous: 16 at a time */
        const float *src = j->A + m0 * j->K + j->k0;
        for (int64_t k = 0; k < kc; k += 16, dst += SG_MR * 16) {
            __mmask16 km = zmm_mask(kc - k);
            for (int64_t r = 0; r < SG_MR; r++)
                _mm512_store_ps(dst + r * 16, r < rows ? _mm512_maskz_loadu_ps(km, src + r * j->K + k)
                                                       : _mm512_setzero_ps());
        }
        return;
    }
    for (int64_t k = 0; k < kc; k += 16, dst += SG_MR * 16) {
        int64_t steps = kc - k < 16 ? kc - k : 16;
        /* A^T [K, M]: k's 14 values are contiguous; transpose 16 k x 14 rows */
        const float *src = j->A + (j->k0 + k) * j->M + m0;
        __mmask16 rm = zmm_mask(rows);
        __m512 v[16];
        for (int u = 0; u < 16; u++)
            v[u] = u < steps ? _mm512_maskz_loadu_ps(rm, src + u * j->M) : _mm512_setzero_ps();
        transpose16(v);
        for (int r = 0; r < SG_MR; r++)
            _mm512_store_ps(dst + r * 16, v[r]);
    }
}

/* Packing tasks for the current N block of B: micro-panel q (B^T) or the
 * q-th share of its rows (B). */
static void sg_pack_task(void *ctx, int64_t q, int tid)
{
    const SgJob *j = ctx;
    (void)tid;
    if (j->tb) {
        pack_bt(j, j->n0 + q * SG_NR, j->bpack + q * j->kcur * SG_NR);
    } else {
        int64_t per = div_up(j->kcur, j->bpanels), k1 = q * per, k2 = k1 + per < j->kcur ? k1 + per : j->kcur;
        pack_b_rows(j, k1, k2);
    }
}

/* Row r of A panel p (A not transposed) into its slots of dst (one panel
 * buffer), as pack_a does for all rows. */
static void pack_a_row(const SgJob *j, int64_t p, int64_t r, float *dst)
{
    int64_t m = p * SG_MR + r;
    const float *src = m < j->M ? j->A + m * j->K + j->k0 : NULL;
    for (int64_t k = 0; k < j->kcur; k += 16)
        _mm512_store_ps(dst + k * SG_MR + r * 16,
                        src ? _mm512_maskz_loadu_ps(zmm_mask(j->kcur - k), src + k) : _mm512_setzero_ps());
}

/* Compute task (one per thread of the team): A micro-panels claimed one
 * at a time from the job's shared counter, each against every B
 * micro-panel of the current N block, so that the threads end within a
 * panel or two of each other.  A thread claims its next panel when it
 * starts the current one: with A not transposed, call q of the current
 * panel packs row q of the next one along with its FMAs (rows left over
 * when the block has fewer than 14 micro-panels are packed after the
 * calls), so the copy's cache misses overlap the arithmetic; A^T panels go
 * through pack_a's transpose between panels; a thread's first panel is
 * packed up front.  Panels go into the thread's two panel buffers (small
 * and hot: packing into one big array up front made every store miss) or,
 * with the A store, into their slots there in the first N block, and the
 * later N blocks only read them, each call prefetching a 1/14 of the next
 * panel into L2. */
static void sg_compute_task(void *ctx, int64_t task, int tid)
{
    SgJob *j = ctx;
    (void)task;
    SgEpi e = {NULL, j->act, j->alpha, j->k0 > 0, j->k0 + j->kcur >= j->K, NULL, NULL, NULL};
    bool packed = j->astore && j->n0 > 0;
    int64_t p = atomic_fetch_add_explicit(&j->next_panel, 1, memory_order_relaxed);
    if (p >= j->panels)
        return;
    float *a = j->astore ? j->astore + p * j->apanel : j->abuf + 2 * tid * j->apanel;
    float *other = j->abuf + (2 * tid + 1) * j->apanel;
    int64_t span = j->apanel / SG_MR; /* floats of one panel row's slot run */
    if (!packed)
        pack_a(j, p * SG_MR, a);
    while (p < j->panels) {
        int64_t np = atomic_fetch_add_explicit(&j->next_panel, 1, memory_order_relaxed);
        int64_t m0 = p * SG_MR, mr = j->M - m0 < SG_MR ? j->M - m0 : SG_MR, nm0 = np * SG_MR;
        bool more = np < j->panels, ride = more && !packed && !j->ta;
        float *next = !more ? NULL : j->astore ? j->astore + np * j->apanel : other;
        for (int64_t q = 0; q < j->bpanels; q++) {
            int64_t n0 = j->n0 + q * SG_NR, nc = j->N - n0 < SG_NR ? j->N - n0 : SG_NR;
            e.bias = j->bias ? j->bias + n0 : NULL;
            e.ndst = ride && q < SG_MR ? next + q * 16 : NULL;
            e.nsrc = e.ndst && nm0 + q < j->M ? j->A + (nm0 + q) * j->K + j->k0 : NULL;
            if (packed)
                e.npf = more && q < SG_MR ? next + q * span : NULL;
            else
                e.npf = e.nsrc && q + 1 < SG_MR && nm0 + q + 1 < j->M ? e.nsrc + j->K : NULL;
            sg_kernel(mr, nc, j->kcur, a, j->bpack + q * j->kcur * SG_NR, j->C + m0 * j->N + n0, j->N, &e);
        }
        if (more) {
            if (ride)
                for (int64_t r = j->bpanels; r < SG_MR; r++)
                    pack_a_row(j, np, r, next);
            else if (!packed)
                pack_a(j, nm0, next);
            if (!j->astore)
                other = a;
            a = next;
        }
        p = np;
    }
}

bool tcrt_sgemm_avx512(int64_t M, int64_t N, int64_t K, const float *A, bool ta, const float *B, bool tb,
                       float *C, const float *bias, int act, float alpha, void *ws, size_t ws_bytes, int nth)
{
    SgJob j;
    int slots = sg_slots(nth);
    size_t store;
    if (M <= 0 || N <= 0 || K <= 0 || !ws || !sg_plan(M, N, K, slots, ws_bytes, &j.kc, &j.nc, &store))
        return false;
    j.M = M, j.N = N, j.K = K, j.A = A, j.B = B, j.ta = ta, j.tb = tb, j.C = C, j.bias = bias, j.act = act,
    j.alpha = alpha;
    j.panels = div_up(M, SG_MR);
    j.apanel = SG_MR * div_up(j.kc, 16) * 16; /* a multiple of 16 floats: buffers stay aligned */
    j.abuf = (float *)(((uintptr_t)ws + 63) & ~(uintptr_t)63);
    j.bpack = j.abuf + 2 * slots * j.apanel;
    j.astore = store ? j.bpack + j.nc * j.kc : NULL;
    j.nth = nth;
    for (j.k0 = 0; j.k0 < K; j.k0 += j.kcur) {
        j.kcur = K - j.k0 < j.kc ? K - j.k0 : j.kc;
        for (j.n0 = 0; j.n0 < N; j.n0 += j.ncur) {
            j.ncur = N - j.n0 < j.nc ? N - j.n0 : j.nc;
            j.bpanels = div_up(j.ncur, SG_NR);
            /* nth 1 (a small product): packed on this thread too, or the
             * compute would read panels the other core wrote */
            tcrt_parallel_tasks_max(j.bpanels, (int)j.nth, sg_pack_task, &j);
            atomic_store_explicit(&j.next_panel, 0, memory_order_relaxed);
            tcrt_parallel_tasks(j.nth, sg_compute_task, &j);
        }
    }
    return true;
}
