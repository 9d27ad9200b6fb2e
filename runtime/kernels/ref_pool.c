/* ref_pool.c - reference max and average pooling (NHWC).
 *
 * x [N,H,W,C] -> out [N,OH,OW,C] (shape given).  Window of output (oh,ow):
 * rows oh*SH - PT + [0,KH), columns ow*SW - PL + [0,KW), clipped to the
 * input.  Max ignores the padding (it never wins, as TF's -inf padding);
 * average divides by the number of in-bounds taps (TF SAME semantics).
 * A window with no in-bounds tap (only possible with pads >= kernel)
 * yields 0.  float32 and float64; the average accumulates in double.
 */
#include "kern_int.h"

typedef struct PoolP {
    int64_t kh, kw, sh, sw, pt, pl;
} PoolP;

static tcrt_status pool(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p,
                        bool is_max)
{
    KCHECK(in && out && p && n_in == 1 && n_out >= 1);
    const tcrt_tensor *x = &in[0];
    KCHECK(k_valid(x) && k_valid(out) && x->rank == 4 && out->rank == 4);
    KCHECK(x->dtype == out->dtype && k_is_float(x->dtype));
    PoolP q = {p->i[TCRT_POOL_KH], p->i[TCRT_POOL_KW], p->i[TCRT_POOL_SH],
               p->i[TCRT_POOL_SW], p->i[TCRT_POOL_PT], p->i[TCRT_POOL_PL]};
    KCHECK(q.kh >= 1 && q.kw >= 1 && q.sh >= 1 && q.sw >= 1 && q.pt >= 0 && q.pl >= 0);
    int64_t N = x->dims[0], H = x->dims[1], W = x->dims[2], C = x->dims[3];
    int64_t OH = out->dims[1], OW = out->dims[2];
    KCHECK(out->dims[0] == N && out->dims[3] == C);
    bool f32 = x->dtype == TCRT_F32;
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++)
                for (int64_t c = 0; c < C; c++) {
                    double acc = is_max ? -INFINITY : 0;
                    int64_t cnt = 0;
                    for (int64_t kh = 0; kh < q.kh; kh++) {
                        int64_t ih = oh * q.sh - q.pt + kh;
                        if (ih < 0 || ih >= H)
                            continue;
                        for (int64_t kw = 0; kw < q.kw; kw++) {
                            int64_t iw = ow * q.sw - q.pl + kw;
                            if (iw < 0 || iw >= W)
                                continue;
                            int64_t i = ((n * H + ih) * W + iw) * C + c;
                            double v = f32 ? ((const float *)x->data)[i] : ((const double *)x->data)[i];
                            if (is_max) {
                                if (v > acc || isnan(v))
                                    acc = v;
                            } else {
                                acc += v;
                            }
                            cnt++;
                        }
                    }
                    double r = cnt == 0 ? 0 : is_max ? acc : acc / (double)cnt;
                    int64_t o = ((n * OH + oh) * OW + ow) * C + c;
                    if (f32)
                        ((float *)out->data)[o] = (float)r;
                    else
                        ((double *)out->data)[o] = r;
                }
    return TCRT_OK;
}

tcrt_status tcrt_ref_maxpool(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                             const tcrt_params *p)
{
    return pool(in, n_in, out, n_out, p, true);
}

tcrt_status tcrt_ref_avgpool(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                             const tcrt_params *p)
{
    return pool(in, n_in, out, n_out, p, false);
}
