/* ref_conv.c - reference 2-D convolution and its transpose (NHWC).
 *
 * conv2d: in[0] x [N,H,W,C], in[1] w [KH,KW,CI,O] (HWIO), optional in[2]
 * bias [O]; out [N,OH,OW,O] (shape given).  Input row of output row oh and
 * tap kh: ih = oh*SH - PT + kh*DH; taps outside [0,H) read zero (padding).
 * Grouped convolution when C = G*CI (output channel o uses input channels
 * of group o / (O/G)).  Depthwise (TCRT_CONV_DEPTHWISE): w [KH,KW,C,M],
 * output channel c*M+m = sum x[..,c] * w[..,c,m].  Optional in[3] residual
 * (output shape, needs the bias): y = act(conv + bias + residual).
 * Packed weights (TCRT_CONV_PACKED, non-depthwise, ungrouped): w is
 * [ceil(O/16),KH,KW,CI,16] from tcrt_pack_conv_weights and TCRT_CONV_COUT
 * is O; HWIO element (kh,kw,ci,o) is read at
 * (((o/16*KH + kh)*KW + kw)*CI + ci)*16 + o%16.  Winograd-packed weights
 * (TCRT_CONV_PACK_WINO/WINO4, w [ceil(O/16),a,a,CI,16], a = 4/6, holding
 * U = G g G^T of a 3x3 filter): HWIO is read back as g = L U L^T (wino_tap).
 * A depthwise conv with fused 1x1 convs (TCRT_CONV_PACK_DWBLOCK): see
 * ref_conv2d_dwblock; two 1x1 convs summed (TCRT_CONV_X2S): ref_conv2d_pair.
 *
 * conv2d_transpose (TF Conv2DBackpropInput): in[0] dy [N,OH,OW,Cdy], in[1]
 * w [KH,KW,Cr,Cdy], out [N,H,W,Cr] given; params are the forward conv's.
 * It is the adjoint of conv2d: out[n,ih,iw,c] = sum over taps (kh,kw) and
 * o of dy[n,oh,ow,o]*w[kh,kw,c,o] where ih = oh*SH - PT + kh*DH.  Computed as
 * a gather: for each output pixel and tap, oh = (ih + PT - kh*DH) / SH when
 * that division is exact and in range.  Depthwise variant: w [KH,KW,C,M],
 * dy channels C*M.
 * Accumulation is in double; f32 and f64 are supported.
 * Invariants: every index is bounds-checked against the given shapes; the
 * padding bottom/right values are implied by the output shape.
 */
#include "kern_int.h"

typedef struct ConvP {
    int64_t sh, sw, dh, dw, pt, pl;
    bool depthwise;
    int64_t act;
    double alpha;
} ConvP;

/* The packed layouts' sizes (tcrt_kernels.h).  They live with the
 * reference kernels, which define those layouts and are in every build of
 * the runtime, the compiler's (ir/shape.c, passes/pack.c) included. */
int64_t tcrt_conv_packed_floats(int64_t kh, int64_t kw, int64_t cin, int64_t cout)
{
    if (kh <= 0 || kw <= 0 || cin <= 0 || cout <= 0)
        return 0;
    int64_t blocks = (cout + TCRT_PACK_NR - 1) / TCRT_PACK_NR, n = blocks;
    int64_t f[4] = {kh, kw, cin, TCRT_PACK_NR};
    for (int i = 0; i < 4; i++) {
        if (n > INT64_MAX / f[i])
            return 0;
        n *= f[i];
    }
    return n;
}

int64_t tcrt_conv_dwblock_floats(int64_t fuse, int64_t cin, int64_t ce, int64_t kh, int64_t kw, int64_t co,
                                 int64_t off[TCRT_DWB_PARTS])
{
    bool e = fuse & TCRT_FUSE_EXPAND, pr = fuse & TCRT_FUSE_PROJECT;
    if (fuse < 1 || fuse > 3 || ce <= 0 || kh <= 0 || kw <= 0 || (e && cin <= 0) || (pr && co <= 0) ||
        kh > INT64_MAX / kw || kh * kw > INT64_MAX / ce)
        return 0;
    int64_t size[TCRT_DWB_PARTS] = {e ? tcrt_conv_packed_floats(1, 1, cin, ce) : 0, e ? ce : 0, kh * kw * ce,
                                    pr ? tcrt_conv_packed_floats(1, 1, ce, co) : 0, pr ? co : 0};
    if ((e && size[TCRT_DWB_WE] <= 0) || (pr && size[TCRT_DWB_WP] <= 0))
        return 0;
    int64_t n = 0;
    for (int k = 0; k < TCRT_DWB_PARTS; k++) {
        if (off)
            off[k] = n;
        if (size[k] > INT64_MAX - n)
            return 0;
        n += size[k];
    }
    return n;
}

static bool conv_params(const tcrt_params *p, ConvP *c)
{
    c->sh = p->i[TCRT_CONV_SH];
    c->sw = p->i[TCRT_CONV_SW];
    c->dh = p->i[TCRT_CONV_DH];
    c->dw = p->i[TCRT_CONV_DW];
    c->pt = p->i[TCRT_CONV_PT];
    c->pl = p->i[TCRT_CONV_PL];
    c->depthwise = p->i[TCRT_CONV_DEPTHWISE] != 0;
    c->act = p->i[TCRT_CONV_ACT];
    c->alpha = p->f[0];
    return c->sh >= 1 && c->sw >= 1 && c->dh >= 1 && c->dw >= 1 && c->pt >= 0 && c->pl >= 0 &&
           p->i[TCRT_CONV_PB] >= 0 && p->i[TCRT_CONV_PR] >= 0 && k_act_ok(c->act);
}

/* Winograd-packed weights (TCRT_CONV_PACK_WINO, WINO4): HWIO element (kh, kw)
 * of one (Cin, Cout) pair from its U = G g G^T, g = L U L^T with L G = I
 * (tcrt_kernels.h); u points at U[0][0] of the pair, U[f] is f * cin *
 * TCRT_PACK_NR floats further, a = 4 or 6 points per side.  Row r of L:
 * coefficients WINO_LC[m4][r][] at U rows WINO_L[m4][r][] (-1: none). */
static const int WINO_L[2][3][2] = {{{0, -1}, {1, 2}, {3, -1}}, {{0, -1}, {1, 2}, {5, -1}}};
static const double WINO_LC[2][3][2] = {{{1, 0}, {1, -1}, {1, 0}}, {{4, 0}, {-3, 3}, {1, 0}}};

#define WINO_TAP(T)                                                                                          \
    static double wino_tap_##T(const T *u, int64_t cin, int a, int64_t kh, int64_t kw)                       \
    {                                                                                                        \
        int m4 = a == 6;                                                                                     \
        double v = 0;                                                                                        \
        for (int ia = 0; ia < 2; ia++)                                                                       \
            for (int ib = 0; ib < 2; ib++) {                                                                 \
                int r = WINO_L[m4][kh][ia], c = WINO_L[m4][kw][ib];                                          \
                if (r >= 0 && c >= 0)                                                                        \
                    v += WINO_LC[m4][kh][ia] * WINO_LC[m4][kw][ib] *                                         \
                         (double)u[(r * a + c) * cin * TCRT_PACK_NR];                                        \
            }                                                                                                \
        return v;                                                                                            \
    }
WINO_TAP(float)
WINO_TAP(double)
#define wino_tap(u, cin, a, kh, kw)                                                                          \
    _Generic((u), const float * : wino_tap_float, const double * : wino_tap_double)(u, cin, a, kh, kw)

#define CONV_LOOP(T)                                                                                         \
    do {                                                                                                     \
        const T *X = (const T *)x->data, *Wt = (const T *)w->data;                                           \
        const T *B = bias ? (const T *)bias->data : NULL;                                                    \
        const T *R = res ? (const T *)res->data : NULL;                                                      \
        T *Y = (T *)out->data;                                                                               \
        for (int64_t n = 0; n < N; n++)                                                                      \
            for (int64_t oh = 0; oh < OH; oh++)                                                              \
                for (int64_t ow = 0; ow < OW; ow++)                                                          \
                    for (int64_t o = 0; o < O; o++) {                                                        \
                        double acc = 0;                                                                      \
                        for (int64_t kh = 0; kh < KH; kh++) {                                                \
                            int64_t ih = oh * c.sh - c.pt + kh * c.dh;                                       \
                            if (ih < 0 || ih >= H)                                                           \
                                continue;                                                                    \
                            for (int64_t kw = 0; kw < KW; kw++) {                                            \
                                int64_t iw = ow * c.sw - c.pl + kw * c.dw;                                   \
                                if (iw < 0 || iw >= W)                                                       \
                                    continue;                                                                \
                                const T *xp = X + ((n * H + ih) * W + iw) * C;                               \
                                const T *wp = Wt + (kh * KW + kw) * WI * WO;                                 \
                                if (wino) {                                                                  \
                                    const T *pp = Wt + (o / TCRT_PACK_NR) * wa * wa * WI * TCRT_PACK_NR +    \
                                                  o % TCRT_PACK_NR;                                          \
                                    for (int64_t ci = 0; ci < WI; ci++)                                      \
                                        acc += (double)xp[ci] *                                              \
                                               wino_tap(pp + ci * TCRT_PACK_NR, WI, wa, kh, kw);             \
                                } else if (packed) {                                                         \
                                    const T *pp =                                                            \
                                        Wt +                                                                 \
                                        (((o / TCRT_PACK_NR) * KH + kh) * KW + kw) * WI * TCRT_PACK_NR +     \
                                        o % TCRT_PACK_NR;                                                    \
                                    for (int64_t ci = 0; ci < WI; ci++)                                      \
                                        acc += (double)xp[ci] * (double)pp[ci * TCRT_PACK_NR];               \
                                } else if (c.depthwise) {                                                    \
                                    int64_t ch = o / M, m = o % M;                                           \
                                    acc += (double)xp[ch] * (double)wp[ch * M + m];                          \
                                } else {                                                                     \
                                    int64_t g = o / (O / G);                                                 \
                                    for (int64_t ci = 0; ci < WI; ci++)                                      \
                                        acc += (double)xp[g * WI + ci] * (double)wp[ci * WO + o];            \
                                }                                                                            \
                            }                                                                                \
                        }                                                                                    \
                        if (B)                                                                               \
                            acc += B[o];                                                                     \
                        int64_t yi = ((n * OH + oh) * OW + ow) * O + o;                                      \
                        if (R)                                                                               \
                            acc += R[yi];                                                                    \
                        Y[yi] = (T)k_act(acc, c.act, c.alpha);                                               \
                    }                                                                                        \
    } while (0)

/* TCRT_CONV_PACK_DWBLOCK (f32), all in double, intermediates never
 * rounded to f32 nor stored: the depthwise value d(n,oh,ow,c) = act(bias[c]
 * + sum over taps of wd * e(n,ih,iw,c)), e = eact(be[c] + sum_ci x * we(ci,c))
 * with an expansion (recomputed per tap), else x; with a projection y[o] =
 * pact(bp[o] + sum_c d(c) * wp(c,o) + res), else y[c] = act(dw + bias[c] +
 * res).  Packed 1x1 weights w(i,o) are read at (o/16*I + i)*16 + o%16. */
typedef struct DwbRef {
    const float *X, *WE, *BE, *WD, *B;
    int64_t H, W, CI, CE, KH, KW, fuse, eact, act;
    double ealpha, alpha;
    const ConvP *c;
} DwbRef;

/* The depthwise conv's sum (before bias and act) at (n, oh, ow, ch). */
static double dwb_sum(const DwbRef *r, int64_t n, int64_t oh, int64_t ow, int64_t ch)
{
    double acc = 0;
    const float *we = r->WE + (ch / TCRT_PACK_NR) * r->CI * TCRT_PACK_NR + ch % TCRT_PACK_NR;
    for (int64_t kh = 0; kh < r->KH; kh++) {
        int64_t ih = oh * r->c->sh - r->c->pt + kh * r->c->dh;
        if (ih < 0 || ih >= r->H)
            continue;
        for (int64_t kw = 0; kw < r->KW; kw++) {
            int64_t iw = ow * r->c->sw - r->c->pl + kw * r->c->dw;
            if (iw < 0 || iw >= r->W)
                continue;
            const float *xp = r->X + ((n * r->H + ih) * r->W + iw) * r->CI;
            double e;
            if (r->fuse & TCRT_FUSE_EXPAND) {
                e = r->BE[ch];
                for (int64_t ci = 0; ci < r->CI; ci++)
                    e += (double)xp[ci] * (double)we[ci * TCRT_PACK_NR];
                e = k_act(e, r->eact, r->ealpha);
            } else {
                e = xp[ch];
            }
            acc += e * (double)r->WD[(kh * r->KW + kw) * r->CE + ch];
        }
    }
    return acc;
}

static tcrt_status ref_conv2d_dwblock(const tcrt_tensor *in, int n_in, tcrt_tensor *out, const tcrt_params *p,
                                      const ConvP *c)
{
    enum { OB = 64 }; /* projected channels per pass over the depthwise values */
    const tcrt_tensor *x = &in[0], *w = &in[1], *bias = n_in >= 3 ? &in[2] : NULL;
    const tcrt_tensor *res = n_in == 4 ? &in[3] : NULL;
    KCHECK(c->depthwise && k_valid(x) && k_valid(w) && k_valid(out) && x->rank == 4 && w->rank == 1 &&
           out->rank == 4 && x->dtype == TCRT_F32 && w->dtype == TCRT_F32 && out->dtype == TCRT_F32);
    DwbRef r = {.X = x->data, .H = x->dims[1], .W = x->dims[2], .CI = x->dims[3], .c = c};
    int64_t N = x->dims[0], off[TCRT_DWB_PARTS], CO = p->i[TCRT_CONV_PCOUT], pact = p->i[TCRT_CONV_PACT];
    r.CE = p->i[TCRT_CONV_COUT], r.KH = p->i[TCRT_CONV_KH], r.KW = p->i[TCRT_CONV_KW];
    r.fuse = p->i[TCRT_CONV_FUSE], r.eact = p->i[TCRT_CONV_EACT], r.act = c->act;
    r.ealpha = p->f[1], r.alpha = c->alpha;
    bool proj = r.fuse & TCRT_FUSE_PROJECT;
    KCHECK(k_act_ok(r.eact) && k_act_ok(pact) &&
           tcrt_conv_dwblock_floats(r.fuse, r.CI, r.CE, r.KH, r.KW, CO, off) == w->dims[0] &&
           ((r.fuse & TCRT_FUSE_EXPAND) || r.CI == r.CE));
    int64_t OH = out->dims[1], OW = out->dims[2], O = proj ? CO : r.CE;
    KCHECK(out->dims[0] == N && out->dims[3] == O);
    if (res)
        KCHECK(bias && k_valid(res) && res->dtype == TCRT_F32 && res->rank == 4 && res->dims[0] == N &&
               res->dims[1] == OH && res->dims[2] == OW && res->dims[3] == O);
    if (bias)
        KCHECK(k_valid(bias) && bias->dtype == TCRT_F32 && k_count(bias) == r.CE);
    const float *Wt = w->data, *R = res ? res->data : NULL, *WP = Wt + off[TCRT_DWB_WP],
                *BP = Wt + off[TCRT_DWB_BP];
    r.WE = Wt + off[TCRT_DWB_WE], r.BE = Wt + off[TCRT_DWB_BE], r.WD = Wt + off[TCRT_DWB_WD];
    r.B = bias ? bias->data : NULL;
    float *Y = out->data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t y0 = ((n * OH + oh) * OW + ow) * O;
                if (!proj) {
                    for (int64_t ch = 0; ch < r.CE; ch++) {
                        double v =
                            dwb_sum(&r, n, oh, ow, ch) + (r.B ? r.B[ch] : 0.0) + (R ? R[y0 + ch] : 0.0);
                        Y[y0 + ch] = (float)k_act(v, r.act, r.alpha);
                    }
                    continue;
                }
                for (int64_t o0 = 0; o0 < O; o0 += OB) {
                    double acc[OB];
                    int64_t nb = O - o0 < OB ? O - o0 : OB;
                    for (int64_t j = 0; j < nb; j++)
                        acc[j] = BP[o0 + j] + (R ? R[y0 + o0 + j] : 0.0);
                    for (int64_t ch = 0; ch < r.CE; ch++) {
                        double d = k_act(dwb_sum(&r, n, oh, ow, ch) + (r.B ? r.B[ch] : 0.0), r.act, r.alpha);
                        for (int64_t j = 0; j < nb; j++) {
                            int64_t o = o0 + j;
                            acc[j] +=
                                d *
                                (double)
                                    WP[((o / TCRT_PACK_NR) * r.CE + ch) * TCRT_PACK_NR + o % TCRT_PACK_NR];
                        }
                    }
                    for (int64_t j = 0; j < nb; j++)
                        Y[y0 + o0 + j] = (float)k_act(acc[j], pact, p->f[2]);
                }
            }
    return TCRT_OK;
}

/* Two 1x1 convs summed (TCRT_CONV_X2S, tcrt_kernels.h): y = act(x * w[:C]
 * + x2 (stride s) * w[C:] + bias), w HWIO [1,1,C+C2,O] or packed as such;
 * f32. */
static tcrt_status ref_conv2d_pair(const tcrt_tensor *in, int n_in, tcrt_tensor *out, const tcrt_params *p,
                                   const ConvP *c)
{
    KCHECK(n_in == 4 && !c->depthwise && !p->i[TCRT_CONV_PT] && !p->i[TCRT_CONV_PL] && !p->i[TCRT_CONV_PB] &&
           !p->i[TCRT_CONV_PR]);
    const tcrt_tensor *x = &in[0], *w = &in[1], *bias = &in[2], *x2 = &in[3];
    int64_t pk = p->i[TCRT_CONV_PACKED], s = p->i[TCRT_CONV_X2S];
    KCHECK(pk == 0 || pk == TCRT_CONV_PACK_DIRECT);
    KCHECK(k_valid(x) && k_valid(w) && k_valid(bias) && k_valid(x2) && k_valid(out) && x->rank == 4 &&
           x2->rank == 4 && out->rank == 4 && w->rank == (pk ? 5 : 4) && x->dtype == TCRT_F32 &&
           w->dtype == TCRT_F32 && bias->dtype == TCRT_F32 && x2->dtype == TCRT_F32 &&
           out->dtype == TCRT_F32);
    int64_t N = x->dims[0], H = x->dims[1], W = x->dims[2], C = x->dims[3];
    int64_t H2 = x2->dims[1], W2 = x2->dims[2], C2 = x2->dims[3];
    int64_t OH = out->dims[1], OW = out->dims[2], O = out->dims[3], K = C + C2;
    if (pk)
        KCHECK(w->dims[0] == (O + TCRT_PACK_NR - 1) / TCRT_PACK_NR && w->dims[1] == 1 && w->dims[2] == 1 &&
               w->dims[3] == K && w->dims[4] == TCRT_PACK_NR && p->i[TCRT_CONV_COUT] == O);
    else
        KCHECK(w->dims[0] == 1 && w->dims[1] == 1 && w->dims[2] == K && w->dims[3] == O);
    KCHECK(s >= 1 && x2->dims[0] == N && out->dims[0] == N && k_count(bias) == O && OH >= 1 && OW >= 1 &&
           (OH - 1) * c->sh < H && (OW - 1) * c->sw < W && (OH - 1) * s < H2 && (OW - 1) * s < W2);
    const float *X = x->data, *X2 = x2->data, *Wt = w->data, *B = bias->data;
    float *Y = out->data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                const float *xp = X + ((n * H + oh * c->sh) * W + ow * c->sw) * C;
                const float *x2p = X2 + ((n * H2 + oh * s) * W2 + ow * s) * C2;
                for (int64_t o = 0; o < O; o++) {
                    double acc = B[o];
                    for (int64_t k = 0; k < K; k++) {
                        double v = k < C ? xp[k] : x2p[k - C];
                        double wv = pk ? Wt[((o / TCRT_PACK_NR) * K + k) * TCRT_PACK_NR + o % TCRT_PACK_NR]
                                       : Wt[k * O + o];
                        acc += v * wv;
                    }
                    Y[((n * OH + oh) * OW + ow) * O + o] = (float)k_act(acc, c->act, c->alpha);
                }
            }
    return TCRT_OK;
}

tcrt_status tcrt_ref_conv2d(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                            const tcrt_params *p)
{
    KCHECK(in && out && p && n_out >= 1 && n_in >= 2 && n_in <= 4);
    const tcrt_tensor *x = &in[0], *w = &in[1], *bias = n_in >= 3 ? &in[2] : NULL;
    const tcrt_tensor *res = n_in == 4 ? &in[3] : NULL;
    ConvP c;
    KCHECK(conv_params(p, &c));
    int64_t pk = p->i[TCRT_CONV_PACKED];
    if (pk == TCRT_CONV_PACK_DWBLOCK)
        return ref_conv2d_dwblock(in, n_in, out, p, &c);
    if (p->i[TCRT_CONV_X2S])
        return ref_conv2d_pair(in, n_in, out, p, &c);
    bool packed = pk != 0, wino = pk == TCRT_CONV_PACK_WINO || pk == TCRT_CONV_PACK_WINO4;
    int wa = pk == TCRT_CONV_PACK_WINO4 ? 6 : 4; /* points per side of a Winograd filter */
    KCHECK(!packed || pk == TCRT_CONV_PACK_DIRECT || wino);
    KCHECK(k_valid(x) && k_valid(w) && k_valid(out) && x->rank == 4 && w->rank == (packed ? 5 : 4) &&
           out->rank == 4);
    KCHECK(x->dtype == out->dtype && w->dtype == out->dtype && k_is_float(out->dtype));
    int64_t N = x->dims[0], H = x->dims[1], W = x->dims[2], C = x->dims[3];
    int64_t KH = w->dims[0], KW = w->dims[1], WI = w->dims[2], WO = w->dims[3];
    if (packed) {
        int64_t co = p->i[TCRT_CONV_COUT];
        KCHECK(!c.depthwise && co > 0 && w->dims[4] == TCRT_PACK_NR &&
               w->dims[0] == (co + TCRT_PACK_NR - 1) / TCRT_PACK_NR && w->dims[3] == C);
        KH = w->dims[1], KW = w->dims[2], WI = w->dims[3], WO = co;
        if (wino) { /* the 3x3 filter's a x a transform */
            KCHECK(KH == wa && KW == wa);
            KH = KW = 3;
        }
    }
    int64_t OH = out->dims[1], OW = out->dims[2], O = out->dims[3];
    int64_t M = 1, G = 1;
    KCHECK(out->dims[0] == N);
    if (res)
        KCHECK(bias && k_valid(res) && res->dtype == out->dtype && res->rank == 4 &&
               res->dims[0] == N && res->dims[1] == OH && res->dims[2] == OW && res->dims[3] == O);
    if (c.depthwise) {
        KCHECK(WI == C && O == C * WO);
        M = WO;
    } else {
        KCHECK(WI > 0 && C % WI == 0 && WO == O);
        G = C / WI;
        KCHECK(G >= 1 && O % G == 0);
    }
    if (bias)
        KCHECK(k_valid(bias) && bias->dtype == out->dtype && k_count(bias) == O);
    if (k_count(out) == 0)
        return TCRT_OK;
    if (out->dtype == TCRT_F32)
        CONV_LOOP(float);
    else
        CONV_LOOP(double);
    return TCRT_OK;
}

#define CONVT_LOOP(T)                                                                                        \
    do {                                                                                                     \
        const T *DY = (const T *)dy->data, *Wt = (const T *)w->data;                                         \
        T *Y = (T *)out->data;                                                                               \
        for (int64_t n = 0; n < N; n++)                                                                      \
            for (int64_t ih = 0; ih < H; ih++)                                                               \
                for (int64_t iw = 0; iw < W; iw++)                                                           \
                    for (int64_t ch = 0; ch < C; ch++) {                                                     \
                        double acc = 0;                                                                      \
                        for (int64_t kh = 0; kh < KH; kh++) {                                                \
                            int64_t th = ih + c.pt - kh * c.dh;                                              \
                            if (th < 0 || th % c.sh)                                                         \
                                continue;                                                                    \
                            int64_t oh = th / c.sh;                                                          \
                            if (oh >= OH)                                                                    \
                                continue;                                                                    \
                            for (int64_t kw = 0; kw < KW; kw++) {                                            \
                                int64_t tw = iw + c.pl - kw * c.dw;                                          \
                                if (tw < 0 || tw % c.sw)                                                     \
                                    continue;                                                                \
                                int64_t ow = tw / c.sw;                                                      \
                                if (ow >= OW)                                                                \
                                    continue;                                                                \
                                const T *dp = DY + ((n * OH + oh) * OW + ow) * CO;                           \
                                const T *wp = Wt + (kh * KW + kw) * WI * WO;                                 \
                                if (c.depthwise) {                                                           \
                                    for (int64_t m = 0; m < WO; m++)                                         \
                                        acc += (double)dp[ch * WO + m] * (double)wp[ch * WO + m];            \
                                } else {                                                                     \
                                    for (int64_t o = 0; o < CO; o++)                                         \
                                        acc += (double)dp[o] * (double)wp[ch * WO + o];                      \
                                }                                                                            \
                            }                                                                                \
                        }                                                                                    \
                        Y[((n * H + ih) * W + iw) * C + ch] = (T)k_act(acc, c.act, c.alpha);                 \
                    }                                                                                        \
    } while (0)

tcrt_status tcrt_ref_conv2d_transpose(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                      const tcrt_params *p)
{
    KCHECK(in && out && p && n_out >= 1 && n_in == 2);
    const tcrt_tensor *dy = &in[0], *w = &in[1];
    ConvP c;
    KCHECK(conv_params(p, &c));
    KCHECK(k_valid(dy) && k_valid(w) && k_valid(out) && dy->rank == 4 && w->rank == 4 && out->rank == 4);
    KCHECK(dy->dtype == out->dtype && w->dtype == out->dtype && k_is_float(out->dtype));
    int64_t N = out->dims[0], H = out->dims[1], W = out->dims[2], C = out->dims[3];
    int64_t OH = dy->dims[1], OW = dy->dims[2], CO = dy->dims[3];
    int64_t KH = w->dims[0], KW = w->dims[1], WI = w->dims[2], WO = w->dims[3];
    KCHECK(dy->dims[0] == N && WI == C);
    if (c.depthwise)
        KCHECK(CO == C * WO);
    else
        KCHECK(CO == WO);
    if (k_count(out) == 0)
        return TCRT_OK;
    if (out->dtype == TCRT_F32)
        CONVT_LOOP(float);
    else
        CONVT_LOOP(double);
    return TCRT_OK;
}
