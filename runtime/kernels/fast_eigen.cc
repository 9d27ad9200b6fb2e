/* fast_eigen.cc - fast float32 matmul and conv2d on Eigen's GEMM micro-kernels
 * (C shim); nothing here allocates memory.
 *
 * GEMM: C[M,N] (row-major, stride ldc) += op(A)[M,K] * op(B)[K,N] through
 *   Eigen::internal::general_matrix_matrix_product::run (the sequential
 *   Goto-style loop: pack a panel of each operand, run the gebp kernel) with
 *   a blocking object whose packing buffers point into the caller's
 *   workspace, so Eigen never allocates.  The block sizes (kc along K, mc
 *   along N, nc along M) are a fixed function of the shapes (gemm_blocking),
 *   not of the machine's caches, so the compiler and the executable compute
 *   the same workspace size.  C is first set to the bias (or 0), the GEMM
 *   accumulates, then the activation runs over the same tile.
 * Threads: the runtime's pool (tcrt_pool.h; never Eigen's parallelize_gemm):
 *   the output is cut into one tile per thread (whole batch entries when there
 *   are at least as many as threads, else row blocks, else column blocks),
 *   run as nt = tcrt_get_threads() tasks handed out dynamically; a task's
 *   tile comes from its task index, its workspace slice from the tid of the
 *   thread running it (< nt), so no two running tasks share a buffer and
 *   there are no barriers.  A tiny problem runs as one task on the caller.
 *   Workspaces are sized for the largest per-thread slice over every team
 *   size 1..TCRT_MAX_THREADS.
 * tcrt_fast_matmul: batch dims broadcast; M == 1 or N == 1 is a GEMV (dot
 *   or axpy form, Eigen vector maps) and needs no workspace; otherwise the
 *   workspace comes as out[1] (tcrt_fast_matmul_workspace bytes).
 * tcrt_fast_conv2d:
 *   - depthwise: direct loop, output channels innermost (w[kh,kw,c,m] is
 *     contiguous in c*M+m, matching the output layout), no workspace;
 *   - 1x1, stride 1, no padding: the matmul x[NHW,C] * w[C,O];
 *   - otherwise im2col: each thread owns a range of output pixels and turns
 *     them, a block of rows at a time, into a patch matrix (rows: pixels,
 *     columns: (kh,kw,c)) in its workspace slice, then multiplies it by the
 *     HWIO weight seen as [KH*KW*C, O].
 * Fallbacks: other dtypes, grouped convolutions and a missing or too small
 * workspace go to the reference kernels.
 * Invariant: a workspace size reported here covers every team size the run
 * can use (it clamps to TCRT_MAX_THREADS), and the kernel checks it.
 * Built with -fno-exceptions -fno-rtti (runtime/meson.build tcrt_cpp_flags):
 * the object then needs nothing of libstdc++, and artifacts link with cc
 * alone.  Eigen's allocating paths (a blocking object without buffers) are
 * never taken here, so its no-exceptions bad_alloc fallback is never reached.
 */
#include "tcrt_kernels.h"
#include "fast_conv_int.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "tcrt_pool.h"

#ifndef TCRT_ISA_MAX
#define TCRT_ISA_MAX TCRT_ISA_PORTABLE
#endif

namespace
{

using Index = Eigen::Index;
using VecMap = Eigen::Map<Eigen::VectorXf>;
using CVecMap = Eigen::Map<const Eigen::VectorXf>;

constexpr int64_t kAlignFloats = 16;         /* 64 bytes: every slice starts aligned */
constexpr int64_t kMaxKc = 288;              /* packed A and B micro-panels stay in L1 */
constexpr int64_t kRhsBlockBytes = 768 << 10; /* kc x nc packed block of A: half an L2 */
constexpr int64_t kLhsBlockBytes = 512 << 10; /* kc x mc packed block of B */
constexpr int64_t kMaxMc = 1536;
constexpr int64_t kIm2colBytes = 2 << 20;    /* per-thread patch block, at most */
constexpr int64_t kIm2colTotal = 8 << 20;    /* all threads' patch blocks, at most */
constexpr int64_t kMinIm2colRows = 128;
constexpr int64_t kSerialWork = 1 << 16;     /* multiply-adds below which one thread runs */
/* AVX-512 packed GEMM: smallest M, N, K and multiply-adds it takes; below
 * TCRT_GEMM_SERIAL_MACS it runs on one thread (fast_conv_int.h; measured
 * for it too, 2 threads / 1: 256x64x64 1.10, 128^3 1.10, 3.1 M
 * multiply-adds 0.79-1.01, 4.2 M 0.77) */
constexpr int64_t kSgemmMinM = 16, kSgemmMinN = 32, kSgemmMinK = 16, kSgemmMinWork = 1 << 18;

int64_t div_up(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

int64_t round_up(int64_t a, int64_t m)
{
    return div_up(a, m) * m;
}

/* n if n <= cap, else the size of the fewest near-equal parts of at most cap
 * (rounded up to step; cap must be a multiple of step). */
int64_t balanced(int64_t n, int64_t cap, int64_t step)
{
    if (n <= cap)
        return n;
    return std::min(cap, round_up(div_up(n, div_up(n, cap)), step));
}

int team_size()
{
    int n = tcrt_get_threads();
    return n < 1 ? 1 : (n > TCRT_MAX_THREADS ? TCRT_MAX_THREADS : n);
}

/* Runs f(task, tid, nth) for every task in [0, nth) on the pool; nth is 1 or
 * team_size(), so tid < nth: tiles are indexed by task, workspace slices by tid. */
template <class F> void run_team(int nth, const F &f)
{
    struct Call {
        const F *f;
        int nth;
        static void run(void *c, int64_t task, int tid)
        {
            const Call *k = static_cast<const Call *>(c);
            (*k->f)(task, tid, k->nth);
        }
    } call = {&f, nth};
    tcrt_parallel_tasks(nth, &Call::run, &call);
}

void act_rows(float *y, int64_t rows, int64_t cols, int64_t ld, int64_t a, float alpha)
{
    if (a == TCRT_ACT_NONE)
        return;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++)
            y[r * ld + j] = tcrt_kern_act(y[r * ld + j], a, alpha);
}

/* y[r, 0..cols) = bias[0..cols) (or 0) for every row. */
void init_rows(float *y, int64_t rows, int64_t cols, int64_t ld, const float *bias)
{
    for (int64_t r = 0; r < rows; r++) {
        if (bias)
            std::memcpy(y + r * ld, bias, (size_t)cols * sizeof(float));
        else
            std::memset(y + r * ld, 0, (size_t)cols * sizeof(float));
    }
}

/* ---- GEMM on caller memory ---- */

struct Blocking {
    int64_t kc, mc, nc; /* along K, N (packed B block), M (packed A block) */
};

/* The caps on mc and nc depend on kc only, i.e. on K. */
Blocking block_caps(int64_t K)
{
    Blocking c;
    c.kc = balanced(K, kMaxKc, 8);
    int64_t kc = std::max<int64_t>(c.kc, 1);
    c.nc = std::max<int64_t>(4, (kRhsBlockBytes / (kc * 4)) / 4 * 4);
    c.mc = std::min<int64_t>(kMaxMc, std::max<int64_t>(24, (kLhsBlockBytes / (kc * 4)) / 24 * 24));
    return c;
}

Blocking gemm_blocking(int64_t M, int64_t N, int64_t K)
{
    Blocking b = block_caps(K);
    b.nc = balanced(M, b.nc, 4);
    b.mc = balanced(N, b.mc, 24);
    return b;
}

/* Buffer floats for any tile of at most M x N (monotone in M and N: uses
 * min(dim, cap), which bounds the balanced block). */
int64_t gemm_ws_floats(int64_t M, int64_t N, int64_t K)
{
    if (M <= 0 || N <= 0 || K <= 0)
        return 0;
    Blocking c = block_caps(K);
    return round_up(c.kc * std::min(N, c.mc), kAlignFloats) + round_up(c.kc * std::min(M, c.nc), kAlignFloats);
}

/* Eigen's blocking interface over our buffers: blockA packs the left operand
 * of Eigen's column-major problem, which for a row-major C is op(B). */
class WsBlocking : public Eigen::internal::level3_blocking<float, float>
{
  public:
    WsBlocking(const Blocking &b, float *ws)
    {
        this->m_kc = b.kc;
        this->m_mc = b.mc;
        this->m_nc = b.nc;
        this->m_blockA = ws;
        this->m_blockB = ws + round_up(b.kc * b.mc, kAlignFloats);
        /* b.mc <= min(N, cap): blockB lies inside gemm_ws_floats(M, N, K) */
    }
};

template <int LO, int RO>
void gemm_acc(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B, int64_t ldb,
              float *C, int64_t ldc, float *ws)
{
    WsBlocking blk(gemm_blocking(m, n, k), ws);
    Eigen::internal::general_matrix_matrix_product<Index, float, LO, false, float, RO, false, Eigen::RowMajor,
                                                   1>::run(m, n, k, A, lda, B, ldb, C, 1, ldc, 1.0f, blk, nullptr);
}

/* One matmul problem, all batch entries alike: C = act(op(A) op(B) + bias). */
struct MM {
    int64_t M, N, K;
    bool ta, tb;
    const float *bias;
    int64_t act;
    float alpha;
};

/* C rows [r0,r1) x cols [c0,c1) of one batch entry; ws: gemm_ws_floats of the tile. */
void mm_tile(const MM &mm, const float *A, const float *B, float *C, int64_t r0, int64_t r1, int64_t c0,
             int64_t c1, float *ws)
{
    int64_t m = r1 - r0, n = c1 - c0;
    if (m <= 0 || n <= 0)
        return;
    float *Ct = C + r0 * mm.N + c0;
    init_rows(Ct, m, n, mm.N, mm.bias ? mm.bias + c0 : nullptr);
    if (mm.K > 0) {
        int64_t lda = mm.ta ? mm.M : mm.K, ldb = mm.tb ? mm.K : mm.N;
        const float *At = mm.ta ? A + r0 : A + r0 * lda;
        const float *Bt = mm.tb ? B + c0 * ldb : B + c0;
        if (!mm.ta && !mm.tb)
            gemm_acc<Eigen::RowMajor, Eigen::RowMajor>(m, n, mm.K, At, lda, Bt, ldb, Ct, mm.N, ws);
        else if (mm.ta && !mm.tb)
            gemm_acc<Eigen::ColMajor, Eigen::RowMajor>(m, n, mm.K, At, lda, Bt, ldb, Ct, mm.N, ws);
        else if (!mm.ta && mm.tb)
            gemm_acc<Eigen::RowMajor, Eigen::ColMajor>(m, n, mm.K, At, lda, Bt, ldb, Ct, mm.N, ws);
        else
            gemm_acc<Eigen::ColMajor, Eigen::ColMajor>(m, n, mm.K, At, lda, Bt, ldb, Ct, mm.N, ws);
    }
    act_rows(Ct, m, n, mm.N, mm.act, mm.alpha);
}

bool is_gemv(int64_t M, int64_t N)
{
    return M == 1 || N == 1;
}

/* How a team of nth threads shares a GEMM: whole batch entries, row blocks
 * or column blocks of `chunk`; per_thread: workspace floats of one slice. */
struct MMPlan {
    enum { BATCH, ROWS, COLS } split;
    int64_t chunk, per_thread;
};

MMPlan mm_plan(int64_t M, int64_t N, int64_t K, int64_t n_batch, int nth)
{
    MMPlan p;
    if (nth <= 1 || n_batch >= nth) {
        p.split = MMPlan::BATCH;
        p.chunk = 0;
        p.per_thread = gemm_ws_floats(M, N, K);
    } else if (M >= N || M >= 16 * (int64_t)nth) {
        p.split = MMPlan::ROWS;
        p.chunk = std::min(M, round_up(div_up(M, nth), 4));
        p.per_thread = gemm_ws_floats(p.chunk, N, K);
    } else {
        p.split = MMPlan::COLS;
        p.chunk = std::min(N, round_up(div_up(N, nth), 8));
        p.per_thread = gemm_ws_floats(M, p.chunk, K);
    }
    return p;
}

/* Largest total over every team size, in bytes, plus alignment slack. */
size_t mm_ws_bytes(int64_t M, int64_t N, int64_t K, int64_t n_batch)
{
    if (is_gemv(M, N) || M <= 0 || N <= 0 || K <= 0 || n_batch <= 0)
        return 0;
    int64_t most = 0;
    for (int t = 1; t <= TCRT_MAX_THREADS; t++)
        most = std::max(most, t * mm_plan(M, N, K, n_batch, t).per_thread);
    return (size_t)most * sizeof(float) + 64;
}

float *align64(void *p)
{
    return (float *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* Batch entry bi of a broadcast operand t (output o): element offset. */
int64_t batch_offset(const tcrt_tensor *t, const tcrt_tensor *o, int64_t b_idx)
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
struct Batches {
    const tcrt_tensor *a, *b, *o;
    const float *A, *B;
    float *C;
    int64_t n;
};

void entry(const Batches &bt, const MM &mm, int64_t bi, const float **A, const float **B, float **C)
{
    *A = bt.a ? bt.A + batch_offset(bt.a, bt.o, bi) : bt.A;
    *B = bt.b ? bt.B + batch_offset(bt.b, bt.o, bi) : bt.B;
    *C = bt.C + bi * mm.M * mm.N;
}

/* GEMV: y[L] = X v (dot form, X[j*K+k]) or v X (axpy form, X[k*L+j]), outputs
 * [j0,j1); bias has stride bs (0: one value for all). */
void gemv_range(int64_t L, int64_t K, const float *v, const float *X, bool dot_form, float *y, int64_t j0,
                int64_t j1, const float *bias, int64_t bs, int64_t a, float alpha)
{
    for (int64_t j = j0; j < j1; j++)
        y[j] = bias ? bias[j * bs] : 0.0f;
    if (dot_form) {
        tcrt_gemv_dot(X, K, v, y, j0, j1);
    } else {
        VecMap ym(y + j0, j1 - j0);
        for (int64_t k = 0; k < K; k++)
            ym += v[k] * CVecMap(X + k * L + j0, j1 - j0);
    }
    if (a != TCRT_ACT_NONE)
        for (int64_t j = j0; j < j1; j++)
            y[j] = tcrt_kern_act(y[j], a, alpha);
}

/* Runs every batch entry of mm on the team; ws: mm_ws_bytes, aligned base. */
void run_mm(const MM &mm, const Batches &bt, float *ws)
{
    int64_t work = mm.M * mm.N * std::max<int64_t>(mm.K, 1) * bt.n;
    int nth = work < kSerialWork ? 1 : team_size();
    if (is_gemv(mm.M, mm.N)) {
        /* M == 1: y = a op(B), dot form when B is transposed;
         * N == 1: y = op(A) b, dot form when A is not transposed. */
        bool row = mm.M == 1;
        int64_t L = row ? mm.N : mm.M;
        bool dot_form = row ? mm.tb : !mm.ta;
        run_team(nth, [&](int64_t task, int, int nt) {
            int64_t chunk = round_up(div_up(L, nt), 16);
            int64_t j0 = std::min(L, task * chunk), j1 = std::min(L, j0 + chunk);
            for (int64_t bi = 0; bi < bt.n && j0 < j1; bi++) {
                const float *A, *B;
                float *C;
                entry(bt, mm, bi, &A, &B, &C);
                gemv_range(L, mm.K, row ? A : B, row ? B : A, dot_form, C, j0, j1, mm.bias, row ? 1 : 0, mm.act,
                           mm.alpha);
            }
        });
        return;
    }
    run_team(nth, [&](int64_t task, int tid, int nt) {
        MMPlan p = mm_plan(mm.M, mm.N, mm.K, bt.n, nt);
        float *mine = ws + tid * p.per_thread;
        for (int64_t bi = p.split == MMPlan::BATCH ? task : 0; bi < bt.n;
             bi += p.split == MMPlan::BATCH ? nt : 1) {
            const float *A, *B;
            float *C;
            entry(bt, mm, bi, &A, &B, &C);
            if (p.split == MMPlan::BATCH)
                mm_tile(mm, A, B, C, 0, mm.M, 0, mm.N, mine);
            else if (p.split == MMPlan::ROWS)
                mm_tile(mm, A, B, C, std::min(mm.M, task * p.chunk), std::min(mm.M, (task + 1) * p.chunk), 0,
                        mm.N, mine);
            else
                mm_tile(mm, A, B, C, 0, mm.M, std::min(mm.N, task * p.chunk),
                        std::min(mm.N, (task + 1) * p.chunk), mine);
        }
    });
}

/* Usable workspace of out[1] in bytes (0 when absent). */
size_t given_ws(const tcrt_tensor *out, int n_out)
{
    if (n_out < 2 || !out[1].data)
        return 0;
    int64_t c = tcrt_tensor_count(&out[1]);
    return c > 0 ? (size_t)c * tcrt_dtype_size(out[1].dtype) : 0;
}

/* ---- matmul shapes ---- */

struct MMShape {
    MM mm;
    int64_t n_batch;
};

/* 1: fast path applies, 0: not f32 or unusual ranks (reference), -1: bad shapes. */
int mm_shape(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p, MMShape *s)
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
        for (const tcrt_tensor *t : {a, b}) {
            int td = d - (out->rank - t->rank);
            if (td >= 0 && t->dims[td] != 1 && t->dims[td] != out->dims[d])
                return -1;
        }
        n_batch *= out->dims[d];
    }
    if (M < 0 || N < 0 || K < 0 || n_batch < 0)
        return -1;
    /* a[batch..., M, K] x b[K, N] (b without batch, a not broadcast, not
     * transposed) is one [batch * M, K] x [K, N] product: rows are contiguous
     * either way, and the GEMM beats n_batch GEMVs (a [16,1,64] input). */
    bool a_full = !ta && a->rank == out->rank && tcrt_tensor_count(b) == br * bc;
    for (int d = 0; d < out->rank - 2 && a_full; d++)
        a_full = a->dims[d] == out->dims[d];
    if (a_full && n_batch > 1)
        M *= n_batch, n_batch = 1;
    s->mm = MM{M, N, K, ta, tb, n_in == 3 ? (const float *)in[2].data : nullptr, act_code, (float)p->f[0]};
    s->n_batch = n_batch;
    return 1;
}

/* Whether the AVX-512 packed GEMM (fast_sgemm_avx512.c) takes a problem
 * (measured against the paths below with benchmarks/sgemm-style timing):
 * always for transposed operands (the Eigen path and the 6 x 64 packing
 * of B^T are slower); otherwise when K is small, or when M wastes little of
 * its 14-row tiles (<= 1/16) and N fills a few 32-column panels: small M
 * or N with a long K runs faster on the 6 x 64 kernel of fast_conv.c. */
int sgemm_on = 1; /* tcrt_sgemm_enable */

[[maybe_unused]] bool sgemm_applies(const MM &mm) /* unused when runtime_isa caps AVX-512 off */
{
    if (mm.M < kSgemmMinM || mm.N < kSgemmMinN || mm.K < kSgemmMinK || mm.M * mm.N * mm.K < kSgemmMinWork)
        return false;
    if (mm.ta || mm.tb || mm.K <= 128)
        return true;
    int64_t pad = div_up(mm.M, 14) * 14 - mm.M;
    return mm.M >= 64 && mm.N >= 128 && pad * 16 <= mm.M;
}

/* ---- conv ---- */

struct ConvGeom {
    int64_t N, H, W, C, KH, KW, CI, O, OH, OW, sh, sw, dh, dw, pt, pl;
    bool depthwise;
};

/* Fills g; false when the fast path does not apply (the reference handles it). */
bool conv_geom(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p, ConvGeom *g)
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
    g->depthwise = p->i[TCRT_CONV_DEPTHWISE] != 0;
    int64_t a = p->i[TCRT_CONV_ACT];
    if (g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1 || g->pt < 0 || g->pl < 0 ||
        p->i[TCRT_CONV_PB] < 0 || p->i[TCRT_CONV_PR] < 0 || a < TCRT_ACT_NONE || a > TCRT_ACT_LEAKY)
        return false;
    if (out->dims[0] != g->N || g->CI != g->C)
        return false;
    if (g->depthwise ? (g->O != g->C * w->dims[3]) : (w->dims[3] != g->O))
        return false;
    return tcrt_tensor_count(out) > 0 && tcrt_tensor_count(x) > 0 && tcrt_tensor_count(w) > 0;
}

bool is_pointwise(const ConvGeom &g)
{
    return !g.depthwise && g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 &&
           g.OH == g.H && g.OW == g.W;
}

/* im2col on a team of nth: pixel rows per thread, patch rows per block
 * (a block of 2 MB, or 8 MB over all threads, but at least 128 rows), and
 * workspace floats of one thread's slice (patch block + GEMM buffers). */
struct ConvPlan {
    int64_t chunk, rb, per_thread;
};

ConvPlan conv_plan(const ConvGeom &g, int nth)
{
    ConvPlan c;
    int64_t rows = g.N * g.OH * g.OW, K = g.KH * g.KW * g.C;
    c.chunk = round_up(div_up(rows, nth), 4);
    int64_t bytes = std::min(kIm2colBytes, kIm2colTotal / nth);
    c.rb = std::min(std::min(c.chunk, rows), std::max(kMinIm2colRows, bytes / (K * 4)));
    c.per_thread = round_up(c.rb * K, kAlignFloats) + gemm_ws_floats(c.rb, g.O, K);
    return c;
}

size_t conv_ws_bytes(const ConvGeom &g)
{
    if (g.depthwise)
        return 0;
    if (is_pointwise(g))
        return mm_ws_bytes(g.N * g.H * g.W, g.O, g.C, 1);
    int64_t most = 0;
    for (int t = 1; t <= TCRT_MAX_THREADS; t++)
        most = std::max(most, t * conv_plan(g, t).per_thread);
    return (size_t)most * sizeof(float) + 64;
}

void depthwise_rows(const ConvGeom &g, const float *X, const float *Wt, const float *B, float *Y, int64_t r0,
                    int64_t r1, int64_t a, float alpha)
{
    const int64_t M = g.O / g.C, O = g.O;
    for (int64_t r = r0; r < r1; r++) {
        int64_t n = r / g.OH, oh = r % g.OH;
        for (int64_t ow = 0; ow < g.OW; ow++) {
            float *y = Y + ((n * g.OH + oh) * g.OW + ow) * O;
            if (B)
                std::memcpy(y, B, (size_t)O * sizeof(float));
            else
                std::memset(y, 0, (size_t)O * sizeof(float));
            for (int64_t kh = 0; kh < g.KH; kh++) {
                int64_t ih = oh * g.sh - g.pt + kh * g.dh;
                if (ih < 0 || ih >= g.H)
                    continue;
                for (int64_t kw = 0; kw < g.KW; kw++) {
                    int64_t iw = ow * g.sw - g.pl + kw * g.dw;
                    if (iw < 0 || iw >= g.W)
                        continue;
                    const float *xp = X + ((n * g.H + ih) * g.W + iw) * g.C;
                    const float *wp = Wt + (kh * g.KW + kw) * O;
                    if (M == 1) {
                        for (int64_t c = 0; c < g.C; c++)
                            y[c] += xp[c] * wp[c];
                    } else {
                        for (int64_t c = 0; c < g.C; c++) {
                            float xv = xp[c];
                            for (int64_t m = 0; m < M; m++)
                                y[c * M + m] += xv * wp[c * M + m];
                        }
                    }
                }
            }
            if (a != TCRT_ACT_NONE)
                for (int64_t o = 0; o < O; o++)
                    y[o] = tcrt_kern_act(y[o], a, alpha);
        }
    }
}

/* Patch rows [r0, r0+nr) (output pixels) into P[nr, KH*KW*C]. */
void im2col(const ConvGeom &g, const float *X, float *P, int64_t r0, int64_t nr)
{
    for (int64_t r = 0; r < nr; r++) {
        int64_t pix = r0 + r;
        int64_t n = pix / (g.OH * g.OW), rem = pix % (g.OH * g.OW);
        int64_t oh = rem / g.OW, ow = rem % g.OW;
        float *dst = P + r * g.KH * g.KW * g.C;
        for (int64_t kh = 0; kh < g.KH; kh++) {
            int64_t ih = oh * g.sh - g.pt + kh * g.dh;
            for (int64_t kw = 0; kw < g.KW; kw++, dst += g.C) {
                int64_t iw = ow * g.sw - g.pl + kw * g.dw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W)
                    std::memset(dst, 0, (size_t)g.C * sizeof(float));
                else
                    std::memcpy(dst, X + ((n * g.H + ih) * g.W + iw) * g.C, (size_t)g.C * sizeof(float));
            }
        }
    }
}

} // namespace

extern "C" {

int tcrt_sgemm_enable(int on)
{
    int prev = sgemm_on;
    sgemm_on = on;
    return prev;
}

size_t tcrt_fast_matmul_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p)
{
    MMShape s;
    if (mm_shape(in, n_in, out, p, &s) != 1)
        return 0;
    size_t eigen = mm_ws_bytes(s.mm.M, s.mm.N, s.mm.K, s.n_batch);
    /* the packed micro-kernel path (fast_conv.c) may run instead: room for either */
    if (!s.mm.ta && !is_gemv(s.mm.M, s.mm.N))
        return std::max(eigen, tcrt_kmm_workspace(s.mm.M, s.mm.N, s.mm.K));
    return eigen;
}

/* Entry bi of a batched product for tcrt_kmm_run_batch (ctx: BatchEntries). */
struct BatchEntries {
    const Batches *bt;
    const MM *mm;
};

static void batch_entry(void *ctx, int64_t bi, const float **A, const float **B, float **C)
{
    const BatchEntries *e = static_cast<const BatchEntries *>(ctx);
    entry(*e->bt, *e->mm, bi, A, B, C);
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
    Batches bt = {
        &in[0],   &in[1], out, (const float *)in[0].data, (const float *)in[1].data, (float *)out->data,
        s.n_batch};
    if (!s.mm.ta && s.n_batch > 1) {
        /* entries too small to split over the threads: one per thread at a time */
        BatchEntries be = {&bt, &s.mm};
        if (tcrt_kmm_run_batch(s.n_batch, s.mm.M, s.mm.N, s.mm.K, s.mm.tb, s.mm.bias, (int)s.mm.act,
                               s.mm.alpha, n_out >= 2 ? out[1].data : nullptr, given_ws(out, n_out),
                               batch_entry, &be))
            return TCRT_OK;
    }
#if TCRT_ISA_MAX >= TCRT_ISA_AVX512
    if (sgemm_on && sgemm_applies(s.mm) && tcrt_kern_isa() == TCRT_ISA_AVX512) {
        /* the workspace (sized for the paths below) sets its N blocks;
         * the first entry says whether it fits (every entry is alike) */
        int nth = s.mm.M * s.mm.N * s.mm.K < TCRT_GEMM_SERIAL_MACS ? 1 : team_size();
        bool done = true;
        for (int64_t bi = 0; bi < s.n_batch && done; bi++) {
            const float *A, *B;
            float *C;
            entry(bt, s.mm, bi, &A, &B, &C);
            done = tcrt_sgemm_avx512(s.mm.M, s.mm.N, s.mm.K, A, s.mm.ta, B, s.mm.tb, C, s.mm.bias, (int)s.mm.act,
                                     s.mm.alpha, n_out >= 2 ? out[1].data : nullptr, given_ws(out, n_out), nth);
        }
        if (done)
            return TCRT_OK;
    }
#endif
    size_t kmm_need = tcrt_kmm_workspace(s.mm.M, s.mm.N, s.mm.K);
    if (!s.mm.ta && kmm_need > 0 && tcrt_kmm_applies(s.mm.M, s.mm.N, s.mm.K) &&
        given_ws(out, n_out) >= kmm_need) {
        for (int64_t bi = 0; bi < s.n_batch; bi++) {
            const float *A, *B;
            float *C;
            entry(bt, s.mm, bi, &A, &B, &C);
            tcrt_kmm_run(s.mm.M, s.mm.N, s.mm.K, A, B, s.mm.tb, C, s.mm.bias, (int)s.mm.act, s.mm.alpha,
                         out[1].data);
        }
        return TCRT_OK;
    }
    size_t need = mm_ws_bytes(s.mm.M, s.mm.N, s.mm.K, s.n_batch);
    if (need > 0 && given_ws(out, n_out) < need)
        return tcrt_ref_matmul(in, n_in, out, 1, p);
    run_mm(s.mm, bt, need > 0 ? align64(out[1].data) : nullptr);
    return TCRT_OK;
}

size_t tcrt_fast_conv2d_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p)
{
    if (p && p->i[TCRT_CONV_PACKED])
        return tcrt_pconv_workspace(in, n_in, out, p); /* packed weights: fast_conv.c */
    if (p && (p->i[TCRT_CONV_DEPTHWISE] || p->i[TCRT_CONV_X2S]))
        return 0; /* depthwise: fast_pool.c, none; a conv pair unpacked: the reference */
    ConvGeom g; /* a residual (n_in == 4) is added after the GEMM: same workspace */
    if (!conv_geom(in, n_in == 4 ? 3 : n_in, out, p, &g))
        return 0;
    return conv_ws_bytes(g);
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
        /* Residual with unpacked weights (the pack pass was disabled): the GEMM
         * without activation, then y = act(y + residual) in one sweep.  A
         * residual sharing the output's buffer would be overwritten first: the
         * reference kernel takes that case. */
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
    int64_t a = p->i[TCRT_CONV_ACT];
    float alpha = (float)p->f[0];
    const float *bias = n_in == 3 ? (const float *)in[2].data : nullptr;
    const float *X = (const float *)in[0].data, *Wt = (const float *)in[1].data;
    float *Y = (float *)out->data;
    if (g.depthwise) {
        int64_t rows = g.N * g.OH;
        int nth = rows * g.OW * g.O * g.KH * g.KW < kSerialWork ? 1 : team_size();
        run_team(nth, [&](int64_t task, int, int nt) {
            int64_t chunk = div_up(rows, nt);
            int64_t r0 = std::min(rows, task * chunk), r1 = std::min(rows, r0 + chunk);
            depthwise_rows(g, X, Wt, bias, Y, r0, r1, a, alpha);
        });
        return TCRT_OK;
    }
    size_t need = conv_ws_bytes(g);
    if (given_ws(out, n_out) < need)
        return tcrt_ref_conv2d(in, n_in, out, 1, p);
    float *ws = align64(out[1].data);
    int64_t rows = g.N * g.OH * g.OW;
    MM mm = {rows, g.O, g.KH * g.KW * g.C, false, false, bias, a, alpha};
    if (is_pointwise(g)) {
        Batches bt = {nullptr, nullptr, nullptr, X, Wt, Y, 1};
        run_mm(mm, bt, ws);
        return TCRT_OK;
    }
    const int64_t K = mm.K;
    int nth = rows * g.O * K < kSerialWork ? 1 : team_size();
    run_team(nth, [&](int64_t task, int tid, int nt) {
        ConvPlan c = conv_plan(g, nt);
        float *patch = ws + tid * c.per_thread;
        float *gws = patch + round_up(c.rb * K, kAlignFloats);
        int64_t r_end = std::min(rows, (task + 1) * c.chunk);
        for (int64_t r0 = task * c.chunk; r0 < r_end; r0 += c.rb) {
            int64_t nr = std::min(c.rb, r_end - r0);
            im2col(g, X, patch, r0, nr);
            MM blk = mm;
            blk.M = nr;
            mm_tile(blk, patch, Wt, Y + r0 * g.O, 0, nr, 0, g.O, gws);
        }
    });
    return TCRT_OK;
}

} // extern "C"
