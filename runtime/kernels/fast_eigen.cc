/* fast_eigen.cc - fast float32 matmul and conv2d through Eigen (C shim).
 *
 * tcrt_fast_matmul: per output batch, Eigen::Map (row-major) views of a, b
 *   and c, transposes applied as views, one GEMM, then the bias + activation
 *   epilogue on the output rows.  Other dtypes go to tcrt_ref_matmul.
 * tcrt_fast_conv2d:
 *   - depthwise: direct loop, output channels innermost (w[kh,kw,c,m] is
 *     contiguous in c*M+m, matching the output layout), no workspace;
 *   - 1x1, stride 1, no padding, one group: out[NHW,O] = x[NHW,C] * w[C,O];
 *   - otherwise im2col: rows of the patch matrix are output pixels, columns
 *     (kh,kw,c) - the HWIO weight reshaped to [KH*KW*C, O] multiplies it.
 *     Rows are processed in blocks so that the patch block fits the
 *     workspace (out[1]); tcrt_fast_conv2d_workspace reports exactly the
 *     block size used here (at most ~8 MB unless one row is larger).
 *   Grouped convolutions, missing workspace and non-f32 go to tcrt_ref_conv2d.
 * Threads: Eigen::setNbThreads(tcrt_get_threads()) (OpenMP); the depthwise
 * loop uses an OpenMP parallel for with the same count.
 * Eigen's GEMM allocates its packing buffers internally; nothing else here
 * allocates.
 */
#include "tcrt_kernels.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>

namespace
{

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapC = Eigen::Map<const RowMat>;
using MapM = Eigen::Map<RowMat>;

constexpr size_t kWorkspaceCap = 8u << 20; // bytes of im2col block

inline float act(float v, int64_t a, float alpha)
{
    switch (a) {
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

/* bias + activation over rows x cols (row-major, contiguous) */
void epilogue(float *y, int64_t rows, int64_t cols, const float *bias, int64_t a, float alpha)
{
    if (!bias && a == TCRT_ACT_NONE)
        return;
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * cols;
        if (bias)
            for (int64_t j = 0; j < cols; j++)
                yr[j] += bias[j];
        if (a != TCRT_ACT_NONE)
            for (int64_t j = 0; j < cols; j++)
                yr[j] = act(yr[j], a, alpha);
    }
}

void set_threads()
{
    int n = tcrt_get_threads();
    if (Eigen::nbThreads() != n)
        Eigen::setNbThreads(n);
}

int64_t count(const tcrt_tensor *t)
{
    return tcrt_tensor_count(t);
}

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
    if (n_in == 3 && (in[2].dtype != TCRT_F32 || count(&in[2]) != out->dims[3]))
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
    return count(out) > 0 && count(x) > 0;
}

bool is_pointwise(const ConvGeom &g)
{
    return !g.depthwise && g.KH == 1 && g.KW == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 &&
           g.OH == g.H && g.OW == g.W;
}

/* Rows of the im2col block and its byte size. */
int64_t im2col_rows(const ConvGeom &g, size_t *bytes)
{
    int64_t K = g.KH * g.KW * g.C;
    int64_t rows = g.N * g.OH * g.OW;
    int64_t rb = (int64_t)(kWorkspaceCap / ((size_t)K * sizeof(float)));
    rb = std::max<int64_t>(1, std::min(rb, rows));
    *bytes = (size_t)rb * (size_t)K * sizeof(float);
    return rb;
}

void depthwise(const tcrt_tensor *in, int n_in, tcrt_tensor *out, const ConvGeom &g, int64_t a, float alpha)
{
    const float *X = (const float *)in[0].data, *Wt = (const float *)in[1].data;
    const float *B = n_in == 3 ? (const float *)in[2].data : nullptr;
    float *Y = (float *)out->data;
    const int64_t M = g.O / g.C, O = g.O;
    const int64_t rows = g.N * g.OH;
#pragma omp parallel for num_threads(tcrt_get_threads()) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
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
                    y[o] = act(y[o], a, alpha);
        }
    }
}

} // namespace

extern "C" {

tcrt_status tcrt_fast_matmul(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                             const tcrt_params *p)
{
    if (!in || !out || !p || n_out < 1 || (n_in != 2 && n_in != 3))
        return TCRT_ERR_RUNTIME;
    const tcrt_tensor *a = &in[0], *b = &in[1];
    bool f32 = a->dtype == TCRT_F32 && b->dtype == TCRT_F32 && out->dtype == TCRT_F32 &&
               (n_in == 2 || in[2].dtype == TCRT_F32);
    if (!f32 || a->rank < 2 || b->rank < 2 || out->rank < 2 || out->rank < a->rank || out->rank < b->rank ||
        out->rank > TCRT_MAX_RANK)
        return tcrt_ref_matmul(in, n_in, out, n_out, p);
    bool ta = p->i[TCRT_MM_TA] != 0, tb = p->i[TCRT_MM_TB] != 0;
    int64_t act_code = p->i[TCRT_MM_ACT];
    int64_t ar = a->dims[a->rank - 2], ac = a->dims[a->rank - 1];
    int64_t br = b->dims[b->rank - 2], bc = b->dims[b->rank - 1];
    int64_t M = ta ? ac : ar, K = ta ? ar : ac, N = tb ? br : bc;
    if ((tb ? bc : br) != K || out->dims[out->rank - 2] != M || out->dims[out->rank - 1] != N ||
        act_code < TCRT_ACT_NONE || act_code > TCRT_ACT_LEAKY || (n_in == 3 && count(&in[2]) != N))
        return TCRT_ERR_RUNTIME;
    int64_t n_batch = 1;
    for (int d = 0; d < out->rank - 2; d++) {
        for (const tcrt_tensor *t : {a, b}) {
            int td = d - (out->rank - t->rank);
            if (td >= 0 && t->dims[td] != 1 && t->dims[td] != out->dims[d])
                return TCRT_ERR_RUNTIME;
        }
        n_batch *= out->dims[d];
    }
    if (count(out) == 0)
        return TCRT_OK;
    set_threads();
    const float *bias = n_in == 3 ? (const float *)in[2].data : nullptr;
    for (int64_t bi = 0; bi < n_batch; bi++) {
        const float *A = (const float *)a->data + batch_offset(a, out, bi);
        const float *B = (const float *)b->data + batch_offset(b, out, bi);
        float *Cp = (float *)out->data + bi * M * N;
        MapC Am(A, ar, ac), Bm(B, br, bc);
        MapM Cm(Cp, M, N);
        if (K == 0)
            Cm.setZero();
        else if (!ta && !tb)
            Cm.noalias() = Am * Bm;
        else if (ta && !tb)
            Cm.noalias() = Am.transpose() * Bm;
        else if (!ta && tb)
            Cm.noalias() = Am * Bm.transpose();
        else
            Cm.noalias() = Am.transpose() * Bm.transpose();
        epilogue(Cp, M, N, bias, act_code, (float)p->f[0]);
    }
    return TCRT_OK;
}

size_t tcrt_fast_conv2d_workspace(const tcrt_tensor *in, int n_in, const tcrt_tensor *out,
                                  const tcrt_params *p)
{
    ConvGeom g;
    if (!conv_geom(in, n_in, out, p, &g) || g.depthwise || is_pointwise(g))
        return 0;
    size_t bytes;
    im2col_rows(g, &bytes);
    return bytes;
}

tcrt_status tcrt_fast_conv2d(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                             const tcrt_params *p)
{
    ConvGeom g;
    if (n_out < 1 || !conv_geom(in, n_in, out, p, &g))
        return tcrt_ref_conv2d(in, n_in, out, n_out, p);
    int64_t a = p->i[TCRT_CONV_ACT];
    float alpha = (float)p->f[0];
    const float *bias = n_in == 3 ? (const float *)in[2].data : nullptr;
    if (g.depthwise) {
        depthwise(in, n_in, out, g, a, alpha);
        return TCRT_OK;
    }
    set_threads();
    const float *X = (const float *)in[0].data, *Wt = (const float *)in[1].data;
    float *Y = (float *)out->data;
    int64_t rows = g.N * g.OH * g.OW;
    if (is_pointwise(g)) {
        MapC Xm(X, rows, g.C), Wm(Wt, g.C, g.O);
        MapM Ym(Y, rows, g.O);
        Ym.noalias() = Xm * Wm;
        epilogue(Y, rows, g.O, bias, a, alpha);
        return TCRT_OK;
    }
    size_t need;
    int64_t rb = im2col_rows(g, &need);
    if (n_out < 2 || !out[1].data || (size_t)count(&out[1]) * tcrt_dtype_size(out[1].dtype) < need)
        return tcrt_ref_conv2d(in, n_in, out, 1, p);
    float *ws = (float *)out[1].data;
    const int64_t K = g.KH * g.KW * g.C;
    MapC Wm(Wt, K, g.O);
    const int n_threads = tcrt_get_threads();
    for (int64_t r0 = 0; r0 < rows; r0 += rb) {
        int64_t nr = std::min(rb, rows - r0);
#pragma omp parallel for num_threads(n_threads) schedule(static) if (n_threads > 1 && nr * K >= 65536)
        for (int64_t r = 0; r < nr; r++) {
            int64_t pix = r0 + r;
            int64_t n = pix / (g.OH * g.OW), rem = pix % (g.OH * g.OW);
            int64_t oh = rem / g.OW, ow = rem % g.OW;
            float *dst = ws + r * K;
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
        MapC Pm(ws, nr, K);
        MapM Ym(Y + r0 * g.O, nr, g.O);
        Ym.noalias() = Pm * Wm;
        epilogue(Y + r0 * g.O, nr, g.O, bias, a, alpha);
    }
    return TCRT_OK;
}

} // extern "C"
