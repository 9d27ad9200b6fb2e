/* ref_matmul.c - reference batched matrix multiply with bias and activation.
 *
 * in[0] a [..., M, K] (or [..., K, M] with TCRT_MM_TA), in[1] b [..., K, N]
 * (or [..., N, K] with TCRT_MM_TB), optional in[2] bias [N]; out [..., M, N].
 * The batch dims of a and b are right-aligned against out's and broadcast
 * (a dim of 1 repeats).  y = act(a @ b + bias).
 * Algorithm: for each output batch (odometer over out's leading dims) the
 * batch offsets of a and b are computed with stride 0 for broadcast dims,
 * then the triple loop runs.  float32 accumulates in double, float64 in
 * double, integers in uint64 (wrapping, no UB on overflow).
 * Invariants: dtypes of a, b, bias and out are equal; every dimension is
 * checked against out before any read.
 */
#include "kern_int.h"

typedef struct MMShape {
    int64_t M, N, K, n_batch;
    int out_rank;
    int64_t a_rs, a_cs, b_rs, b_cs; /* element strides for a[i,k] (row i, col k) and b[k,j] */
} MMShape;

static bool batch_dim_ok(const tcrt_tensor *t, const tcrt_tensor *o, int d)
{
    int td = d - (o->rank - t->rank);
    if (td < 0)
        return true;
    return t->dims[td] == 1 || t->dims[td] == o->dims[d];
}

/* Offset (elements) of batch b_idx of t, given out's batch dims. */
static int64_t batch_offset(const tcrt_tensor *t, const tcrt_tensor *o, int64_t b_idx)
{
    int64_t off = 0, tstride = t->dims[t->rank - 1] * t->dims[t->rank - 2];
    int nb = o->rank - 2;
    for (int d = nb - 1; d >= 0; d--) {
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

static tcrt_status mm_shape(const tcrt_tensor *in, int n_in, const tcrt_tensor *out, const tcrt_params *p,
                            MMShape *s)
{
    KCHECK(n_in == 2 || n_in == 3);
    const tcrt_tensor *a = &in[0], *b = &in[1], *o = out;
    KCHECK(k_valid(a) && k_valid(b) && k_valid(o));
    KCHECK(a->rank >= 2 && b->rank >= 2 && o->rank >= 2);
    KCHECK(o->rank >= a->rank && o->rank >= b->rank);
    KCHECK(a->dtype == o->dtype && b->dtype == o->dtype);
    KCHECK(k_act_ok(p->i[TCRT_MM_ACT]));
    bool ta = p->i[TCRT_MM_TA] != 0, tb = p->i[TCRT_MM_TB] != 0;
    int64_t am = a->dims[a->rank - 2], an = a->dims[a->rank - 1];
    int64_t bm = b->dims[b->rank - 2], bn = b->dims[b->rank - 1];
    s->M = ta ? an : am;
    s->K = ta ? am : an;
    int64_t kb = tb ? bn : bm;
    s->N = tb ? bm : bn;
    KCHECK(kb == s->K);
    KCHECK(o->dims[o->rank - 2] == s->M && o->dims[o->rank - 1] == s->N);
    s->a_rs = ta ? 1 : an;
    s->a_cs = ta ? an : 1;
    s->b_rs = tb ? 1 : bn;
    s->b_cs = tb ? bn : 1;
    s->out_rank = o->rank;
    s->n_batch = 1;
    for (int d = 0; d < o->rank - 2; d++) {
        KCHECK(batch_dim_ok(a, o, d) && batch_dim_ok(b, o, d));
        s->n_batch *= o->dims[d];
    }
    if (n_in == 3) {
        const tcrt_tensor *bias = &in[2];
        KCHECK(k_valid(bias) && bias->dtype == o->dtype && k_count(bias) == s->N);
    }
    return TCRT_OK;
}

#define MM_FLOAT(T)                                                                                          \
    do {                                                                                                     \
        const T *A = (const T *)a->data + aoff, *B = (const T *)b->data + boff;                              \
        const T *bias = n_in == 3 ? (const T *)in[2].data : NULL;                                            \
        T *C = (T *)out->data + coff;                                                                        \
        for (int64_t i = 0; i < s.M; i++)                                                                    \
            for (int64_t j = 0; j < s.N; j++) {                                                              \
                double acc = 0;                                                                              \
                for (int64_t k = 0; k < s.K; k++)                                                            \
                    acc += (double)A[i * s.a_rs + k * s.a_cs] * (double)B[k * s.b_rs + j * s.b_cs];          \
                if (bias)                                                                                    \
                    acc += bias[j];                                                                          \
                C[i * s.N + j] = (T)k_act(acc, act, alpha);                                                  \
            }                                                                                                \
    } while (0)

#define MM_INT(T)                                                                                            \
    do {                                                                                                     \
        const T *A = (const T *)a->data + aoff, *B = (const T *)b->data + boff;                              \
        const T *bias = n_in == 3 ? (const T *)in[2].data : NULL;                                            \
        T *C = (T *)out->data + coff;                                                                        \
        for (int64_t i = 0; i < s.M; i++)                                                                    \
            for (int64_t j = 0; j < s.N; j++) {                                                              \
                uint64_t acc = 0;                                                                            \
                for (int64_t k = 0; k < s.K; k++)                                                            \
                    acc += (uint64_t)(int64_t)A[i * s.a_rs + k * s.a_cs] *                                   \
                           (uint64_t)(int64_t)B[k * s.b_rs + j * s.b_cs];                                    \
                if (bias)                                                                                    \
                    acc += (uint64_t)(int64_t)bias[j];                                                       \
                T v = (T)acc;                                                                                \
                if (act == TCRT_ACT_RELU || act == TCRT_ACT_RELU6)                                           \
                    v = v < 0 ? 0 : v;                                                                       \
                if (act == TCRT_ACT_RELU6 && v > 6)                                                          \
                    v = 6;                                                                                   \
                if (act == TCRT_ACT_LEAKY && v < 0)                                                          \
                    v = (T)((double)v * alpha);                                                              \
                C[i * s.N + j] = v;                                                                          \
            }                                                                                                \
    } while (0)

tcrt_status tcrt_ref_matmul(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                            const tcrt_params *p)
{
    KCHECK(in && out && p && n_out >= 1);
    MMShape s;
    tcrt_status st = mm_shape(in, n_in, out, p, &s);
    if (st != TCRT_OK)
        return st;
    tcrt_dtype dt = out->dtype;
    KCHECK(dt == TCRT_F32 || dt == TCRT_F64 || dt == TCRT_I32 || dt == TCRT_I64);
    const tcrt_tensor *a = &in[0], *b = &in[1];
    int64_t act = p->i[TCRT_MM_ACT];
    double alpha = p->f[0];
    for (int64_t bi = 0; bi < s.n_batch; bi++) {
        int64_t aoff = batch_offset(a, out, bi), boff = batch_offset(b, out, bi);
        int64_t coff = bi * s.M * s.N;
        switch (dt) {
        case TCRT_F32:
            MM_FLOAT(float);
            break;
        case TCRT_F64:
            MM_FLOAT(double);
            break;
        case TCRT_I32:
            MM_INT(int32_t);
            break;
        case TCRT_I64:
            MM_INT(int64_t);
            break;
        default:
            return TCRT_ERR_RUNTIME;
        }
    }
    return TCRT_OK;
}
