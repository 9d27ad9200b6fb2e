/* ref_grad.c - reference kernels for the gradient primitives (TF's backprop ops).
 *
 * conv2d_backprop_filter: x [N,H,W,C], dy [N,OH,OW,O] -> dw [KH,KW,WI,WO]
 * (shape given).  Grouped HWIO (C = G*WI, O = WO, group g = o / (O/G)) or
 * depthwise [KH,KW,C,M] (dy channel c*M+m).  Both are "for each group g and
 * filter row r: dw[kh,kw,r,cols] = sum over n,oh,ow of x[n,ih,iw,xc] *
 * dy[n,oh,ow,g*OG + j]" with ih = oh*SH - PT + kh*DH, iw likewise.  dw is
 * computed in RB x JB blocks accumulated in double on the stack (no
 * allocation): per output pixel, an outer product of RB x values and JB dy
 * values, so dy is read KH*KW*ceil(rows/RB) times, not once per row.
 * maxpool_grad: dx = 0; each dy goes to the first maximum of its window
 * (row-major window order, a later tap replaces only when strictly greater,
 * as TF's CPU MaxPoolGrad), so ties give the whole gradient to one tap.
 * avgpool_grad: dx = 0; each dy / (in-bounds taps of its window) is added
 * to every in-bounds tap, the adjoint of avgpool (padding not counted).
 * scatter_add: out = 0, then out[idx[i], :] += updates[i, :] in index
 * order.  All indices are checked before anything is written.
 * Invariants: every index is bounds-checked against the given shapes; pads
 * bottom/right are implied by the shapes (as in ref_conv.c/ref_pool.c).
 */
#include "kern_int.h"

#define RB 16 /* dw rows (input channels) per block */
#define JB 64 /* dw columns (output channels) per block: RB*JB stack doubles */

/* One (tap, group, row block, column block) of dw: acc[r][j] = sum over
 * the output pixels of x[pixel, xc0 + r] * dy[pixel, dc0 + j], written to
 * dw at wp0 + r*WO + j. */
#define BPF_LOOP(T)                                                                                          \
    do {                                                                                                     \
        const T *X = (const T *)x->data, *DY = (const T *)dy->data;                                          \
        T *DW = (T *)out->data;                                                                              \
        for (int64_t kh = 0; kh < KH; kh++)                                                                  \
            for (int64_t kw = 0; kw < KW; kw++)                                                              \
                for (int64_t g = 0; g < G; g++)                                                              \
                    for (int64_t r0 = 0; r0 < R; r0 += RB)                                                   \
                        for (int64_t j0 = 0; j0 < OG; j0 += JB) {                                            \
                            int64_t nr = R - r0 < RB ? R - r0 : RB, nj = OG - j0 < JB ? OG - j0 : JB;        \
                            int64_t xc0 = dwise ? g : g * WI + r0, dc0 = g * OG + j0;                        \
                            double acc[RB][JB], dv[JB];                                                      \
                            for (int64_t r = 0; r < nr; r++)                                                 \
                                for (int64_t j = 0; j < JB; j++)                                             \
                                    acc[r][j] = 0;                                                           \
                            for (int64_t n = 0; n < N; n++)                                                  \
                                for (int64_t oh = 0; oh < OH; oh++) {                                        \
                                    int64_t ih = oh * c_sh - c_pt + kh * c_dh;                               \
                                    if (ih < 0 || ih >= H)                                                   \
                                        continue;                                                            \
                                    for (int64_t ow = 0; ow < OW; ow++) {                                    \
                                        int64_t iw = ow * c_sw - c_pl + kw * c_dw;                           \
                                        if (iw < 0 || iw >= W)                                               \
                                            continue;                                                        \
                                        const T *xp = X + ((n * H + ih) * W + iw) * C + xc0;                 \
                                        const T *dp = DY + ((n * OH + oh) * OW + ow) * O + dc0;              \
                                        for (int64_t j = 0; j < nj; j++)                                     \
                                            dv[j] = (double)dp[j];                                           \
                                        for (int64_t r = 0; r < nr; r++) {                                   \
                                            double xv = (double)xp[r];                                       \
                                            if (nj == JB) /* fixed count: vectorized */                      \
                                                for (int64_t j = 0; j < JB; j++)                             \
                                                    acc[r][j] += xv * dv[j];                                 \
                                            else                                                             \
                                                for (int64_t j = 0; j < nj; j++)                             \
                                                    acc[r][j] += xv * dv[j];                                 \
                                        }                                                                    \
                                    }                                                                        \
                                }                                                                            \
                            T *wp0 = DW + ((kh * KW + kw) * WI + (dwise ? g : r0)) * WO +                    \
                                     (dwise ? 0 : g * OG) + j0;                                              \
                            for (int64_t r = 0; r < nr; r++)                                                 \
                                for (int64_t j = 0; j < nj; j++)                                             \
                                    wp0[r * WO + j] = (T)acc[r][j];                                          \
                        }                                                                                    \
    } while (0)

tcrt_status tcrt_ref_conv2d_backprop_filter(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                            const tcrt_params *p)
{
    KCHECK(in && out && p && n_in == 2 && n_out >= 1);
    const tcrt_tensor *x = &in[0], *dy = &in[1];
    int64_t c_sh = p->i[TCRT_CONV_SH], c_sw = p->i[TCRT_CONV_SW], c_dh = p->i[TCRT_CONV_DH],
            c_dw = p->i[TCRT_CONV_DW], c_pt = p->i[TCRT_CONV_PT], c_pl = p->i[TCRT_CONV_PL];
    KCHECK(c_sh >= 1 && c_sw >= 1 && c_dh >= 1 && c_dw >= 1 && c_pt >= 0 && c_pl >= 0 &&
           p->i[TCRT_CONV_PB] >= 0 && p->i[TCRT_CONV_PR] >= 0);
    KCHECK(p->i[TCRT_CONV_ACT] == TCRT_ACT_NONE && p->i[TCRT_CONV_PACKED] == 0);
    bool dwise = p->i[TCRT_CONV_DEPTHWISE] != 0;
    KCHECK(k_valid(x) && k_valid(dy) && k_valid(out) && x->rank == 4 && dy->rank == 4 && out->rank == 4);
    KCHECK(x->dtype == out->dtype && dy->dtype == out->dtype && k_is_float(out->dtype));
    int64_t N = x->dims[0], H = x->dims[1], W = x->dims[2], C = x->dims[3];
    int64_t OH = dy->dims[1], OW = dy->dims[2], O = dy->dims[3];
    int64_t KH = out->dims[0], KW = out->dims[1], WI = out->dims[2], WO = out->dims[3];
    KCHECK(dy->dims[0] == N);
    int64_t G, R, OG; /* groups, filter rows per group, dy channels per group */
    if (dwise) {
        KCHECK(WI == C && O == C * WO);
        G = C, R = 1, OG = WO;
    } else {
        KCHECK(WI > 0 && C % WI == 0 && WO == O);
        G = C / WI;
        KCHECK(G >= 1 && O % G == 0);
        R = WI, OG = O / G;
    }
    if (k_count(out) == 0)
        return TCRT_OK;
    if (out->dtype == TCRT_F32)
        BPF_LOOP(float);
    else
        BPF_LOOP(double);
    return TCRT_OK;
}

typedef struct PoolG {
    int64_t kh, kw, sh, sw, pt, pl;
} PoolG;

static bool pool_params(const tcrt_params *p, PoolG *q)
{
    *q = (PoolG){p->i[TCRT_POOL_KH], p->i[TCRT_POOL_KW], p->i[TCRT_POOL_SH],
                 p->i[TCRT_POOL_SW], p->i[TCRT_POOL_PT], p->i[TCRT_POOL_PL]};
    return q->kh >= 1 && q->kw >= 1 && q->sh >= 1 && q->sw >= 1 && q->pt >= 0 && q->pl >= 0;
}

/* In-bounds window [*lo, *hi) of output position o along a dim of size n. */
static void window(int64_t o, int64_t s, int64_t pad, int64_t k, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t a = o * s - pad, b = a + k;
    *lo = a < 0 ? 0 : a;
    *hi = b > n ? n : b;
}

tcrt_status tcrt_ref_maxpool_grad(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                  const tcrt_params *p)
{
    KCHECK(in && out && p && n_in == 2 && n_out >= 1);
    const tcrt_tensor *x = &in[0], *dy = &in[1];
    KCHECK(k_valid(x) && k_valid(dy) && k_valid(out) && x->rank == 4 && dy->rank == 4 && out->rank == 4);
    KCHECK(x->dtype == out->dtype && dy->dtype == out->dtype && k_is_float(out->dtype));
    PoolG q;
    KCHECK(pool_params(p, &q));
    int64_t N = x->dims[0], H = x->dims[1], W = x->dims[2], C = x->dims[3];
    int64_t OH = dy->dims[1], OW = dy->dims[2];
    for (int d = 0; d < 4; d++)
        KCHECK(out->dims[d] == x->dims[d]);
    KCHECK(dy->dims[0] == N && dy->dims[3] == C);
    tcrt_dtype dt = out->dtype;
    int64_t total = k_count(out);
    for (int64_t i = 0; i < total; i++)
        k_store(out->data, dt, i, 0);
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t h0, h1, w0, w1;
                window(oh, q.sh, q.pt, q.kh, H, &h0, &h1);
                window(ow, q.sw, q.pl, q.kw, W, &w0, &w1);
                for (int64_t c = 0; c < C; c++) {
                    int64_t best = -1;
                    double bv = 0;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) {
                            int64_t i = ((n * H + ih) * W + iw) * C + c;
                            double v = k_load(x->data, dt, i);
                            if (best < 0 || bv < v) {
                                best = i;
                                bv = v;
                            }
                        }
                    if (best < 0)
                        continue;
                    double g = k_load(dy->data, dt, ((n * OH + oh) * OW + ow) * C + c);
                    k_store(out->data, dt, best, k_load(out->data, dt, best) + g);
                }
            }
    return TCRT_OK;
}

tcrt_status tcrt_ref_avgpool_grad(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                  const tcrt_params *p)
{
    KCHECK(in && out && p && n_in == 1 && n_out >= 1);
    const tcrt_tensor *dy = &in[0];
    KCHECK(k_valid(dy) && k_valid(out) && dy->rank == 4 && out->rank == 4);
    KCHECK(dy->dtype == out->dtype && k_is_float(out->dtype));
    PoolG q;
    KCHECK(pool_params(p, &q));
    int64_t N = out->dims[0], H = out->dims[1], W = out->dims[2], C = out->dims[3];
    int64_t OH = dy->dims[1], OW = dy->dims[2];
    KCHECK(dy->dims[0] == N && dy->dims[3] == C);
    tcrt_dtype dt = out->dtype;
    int64_t total = k_count(out);
    for (int64_t i = 0; i < total; i++)
        k_store(out->data, dt, i, 0);
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t h0, h1, w0, w1;
                window(oh, q.sh, q.pt, q.kh, H, &h0, &h1);
                window(ow, q.sw, q.pl, q.kw, W, &w0, &w1);
                if (h1 <= h0 || w1 <= w0)
                    continue;
                double cnt = (double)((h1 - h0) * (w1 - w0));
                for (int64_t c = 0; c < C; c++) {
                    double g = k_load(dy->data, dt, ((n * OH + oh) * OW + ow) * C + c) / cnt;
                    for (int64_t ih = h0; ih < h1; ih++)
                        for (int64_t iw = w0; iw < w1; iw++) {
                            int64_t i = ((n * H + ih) * W + iw) * C + c;
                            k_store(out->data, dt, i, k_load(out->data, dt, i) + g);
                        }
                }
            }
    return TCRT_OK;
}

static int64_t index_of(const tcrt_tensor *ix, int64_t i)
{
    return ix->dtype == TCRT_I32 ? ((const int32_t *)ix->data)[i] : ((const int64_t *)ix->data)[i];
}

#define SCATTER_LOOP(T, UT)                                                                                  \
    do {                                                                                                     \
        const T *U = (const T *)upd->data;                                                                   \
        T *O = (T *)out->data;                                                                               \
        for (int64_t e = 0; e < S * row; e++)                                                                \
            O[e] = 0;                                                                                        \
        for (int64_t i = 0; i < n_idx; i++) {                                                                \
            int64_t v = index_of(ix, i);                                                                     \
            if (v < 0)                                                                                       \
                continue;                                                                                    \
            for (int64_t e = 0; e < row; e++)                                                                \
                O[v * row + e] = (T)((UT)O[v * row + e] + (UT)U[i * row + e]);                               \
        }                                                                                                    \
    } while (0)

tcrt_status tcrt_ref_scatter_add(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                 const tcrt_params *p)
{
    KCHECK(in && out && p && n_in == 2 && n_out >= 1);
    const tcrt_tensor *upd = &in[0], *ix = &in[1];
    KCHECK(k_valid(upd) && k_valid(ix) && k_valid(out) && upd->dtype == out->dtype);
    KCHECK(ix->dtype == TCRT_I32 || ix->dtype == TCRT_I64);
    KCHECK(out->rank >= 1 && upd->rank == ix->rank + out->rank - 1);
    for (int d = 0; d < ix->rank; d++)
        KCHECK(upd->dims[d] == ix->dims[d]);
    int64_t row = 1;
    for (int d = 1; d < out->rank; d++) {
        KCHECK(upd->dims[ix->rank + d - 1] == out->dims[d]);
        row *= out->dims[d];
    }
    int64_t S = out->dims[0], n_idx = k_count(ix);
    bool drop_neg = p->i[TCRT_SCAT_DROP_NEG] != 0;
    for (int64_t i = 0; i < n_idx; i++) {
        int64_t v = index_of(ix, i);
        if (v >= S || (v < 0 && !drop_neg))
            return TCRT_ERR_ARG;
    }
    switch (out->dtype) {
    case TCRT_F32:
        SCATTER_LOOP(float, float);
        break;
    case TCRT_F64:
        SCATTER_LOOP(double, double);
        break;
    case TCRT_I32:
        SCATTER_LOOP(int32_t, uint32_t);
        break; /* wraps, no UB */
    case TCRT_I64:
        SCATTER_LOOP(int64_t, uint64_t);
        break;
    default:
        return TCRT_ERR_RUNTIME;
    }
    return TCRT_OK;
}
