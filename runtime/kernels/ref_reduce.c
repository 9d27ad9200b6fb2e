/* ref_reduce.c - reference reductions (sum, max, min, prod) and argmax/argmin.
 *
 * Reductions: p->i[0] is a bitmask of reduced input axes.  The input dims
 * split into kept dims (in order: they give the output layout, with or
 * without keepdims the data order is the same) and reduced dims.  For each
 * output element an odometer over the kept dims gives the base offset, and
 * a second odometer over the reduced dims walks the reduced elements.
 * Accumulators: float32 sums and products in double (one rounding at the
 * end), float64 in double, integers in uint64 (wrapping like TF, no UB).
 * Empty reductions give the identity: 0, 1, lowest (max) or highest (min)
 * value of the dtype.  Dtypes f32, f64, i32, i64, u8 (and bool for max/min:
 * any/all).
 *
 * argmax/argmin: p->i[0] axis (removed); out int32 or int64; first index
 * wins ties (strict comparison); a NaN wins over numbers (as TF: NaN is the
 * max and the min) and the first NaN is kept.
 */
#include "kern_int.h"

typedef enum { RED_SUM, RED_MAX, RED_MIN, RED_PROD } RedKind;

typedef struct RedPlan {
    int nk, nr;
    int64_t kd[TCRT_MAX_RANK], ks[TCRT_MAX_RANK];
    int64_t rd[TCRT_MAX_RANK], rs[TCRT_MAX_RANK];
    int64_t n_out, n_red;
} RedPlan;

static bool red_plan(const tcrt_tensor *x, int64_t mask, RedPlan *pl)
{
    int64_t st[TCRT_MAX_RANK];
    k_strides(x, st);
    pl->nk = pl->nr = 0;
    pl->n_out = pl->n_red = 1;
    if (mask & ~(((int64_t)1 << x->rank) - 1))
        return false; /* axis beyond the rank */
    for (int d = 0; d < x->rank; d++) {
        if (mask & ((int64_t)1 << d)) {
            pl->rd[pl->nr] = x->dims[d];
            pl->rs[pl->nr++] = st[d];
            pl->n_red *= x->dims[d];
        } else {
            pl->kd[pl->nk] = x->dims[d];
            pl->ks[pl->nk++] = st[d];
            pl->n_out *= x->dims[d];
        }
    }
    return true;
}

#define RED_FLOAT(T)                                                                                         \
    do {                                                                                                     \
        const T *X = (const T *)x->data;                                                                     \
        T *Y = (T *)out->data;                                                                               \
        Odo ko;                                                                                              \
        odo_init(&ko, pl.nk, pl.kd, pl.ks);                                                                  \
        for (int64_t o = 0; o < pl.n_out; o++, odo_next(&ko)) {                                              \
            double acc = kind == RED_SUM    ? 0                                                              \
                         : kind == RED_PROD ? 1                                                              \
                         : kind == RED_MAX  ? -INFINITY                                                      \
                                            : INFINITY;                                                       \
            Odo ro;                                                                                          \
            odo_init(&ro, pl.nr, pl.rd, pl.rs);                                                              \
            for (int64_t r = 0; r < pl.n_red; r++, odo_next(&ro)) {                                          \
                double v = X[ko.off + ro.off];                                                               \
                switch (kind) {                                                                              \
                case RED_SUM:                                                                                \
                    acc += v;                                                                                \
                    break;                                                                                   \
                case RED_PROD:                                                                               \
                    acc *= v;                                                                                \
                    break;                                                                                   \
                case RED_MAX:                                                                                \
                    if (v > acc || isnan(v))                                                                 \
                        acc = isnan(acc) ? acc : v;                                                          \
                    break;                                                                                   \
                case RED_MIN:                                                                                \
                    if (v < acc || isnan(v))                                                                 \
                        acc = isnan(acc) ? acc : v;                                                          \
                    break;                                                                                   \
                }                                                                                            \
            }                                                                                                \
            Y[o] = (T)acc;                                                                                   \
        }                                                                                                    \
    } while (0)

#define RED_INT(T, LO, HI)                                                                                   \
    do {                                                                                                     \
        const T *X = (const T *)x->data;                                                                     \
        T *Y = (T *)out->data;                                                                               \
        Odo ko;                                                                                              \
        odo_init(&ko, pl.nk, pl.kd, pl.ks);                                                                  \
        for (int64_t o = 0; o < pl.n_out; o++, odo_next(&ko)) {                                              \
            uint64_t acc = kind == RED_SUM ? 0 : 1;                                                          \
            T m = kind == RED_MAX ? (LO) : (HI);                                                             \
            Odo ro;                                                                                          \
            odo_init(&ro, pl.nr, pl.rd, pl.rs);                                                              \
            for (int64_t r = 0; r < pl.n_red; r++, odo_next(&ro)) {                                          \
                T v = X[ko.off + ro.off];                                                                    \
                switch (kind) {                                                                              \
                case RED_SUM:                                                                                \
                    acc += (uint64_t)v;                                                                      \
                    break;                                                                                   \
                case RED_PROD:                                                                               \
                    acc *= (uint64_t)v;                                                                      \
                    break;                                                                                   \
                case RED_MAX:                                                                                \
                    if (v > m)                                                                               \
                        m = v;                                                                               \
                    break;                                                                                   \
                case RED_MIN:                                                                                \
                    if (v < m)                                                                               \
                        m = v;                                                                               \
                    break;                                                                                   \
                }                                                                                            \
            }                                                                                                \
            Y[o] = (kind == RED_SUM || kind == RED_PROD) ? (T)acc : m;                                       \
        }                                                                                                    \
    } while (0)

static tcrt_status reduce(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out, const tcrt_params *p,
                          RedKind kind)
{
    KCHECK(in && out && p && n_in == 1 && n_out >= 1);
    const tcrt_tensor *x = &in[0];
    KCHECK(k_valid(x) && k_valid(out) && x->dtype == out->dtype);
    RedPlan pl;
    KCHECK(red_plan(x, p->i[TCRT_RED_MASK], &pl));
    KCHECK(k_count(out) == pl.n_out);
    switch (x->dtype) {
    case TCRT_F32:
        RED_FLOAT(float);
        break;
    case TCRT_F64:
        RED_FLOAT(double);
        break;
    case TCRT_I32:
        RED_INT(int32_t, INT32_MIN, INT32_MAX);
        break;
    case TCRT_I64:
        RED_INT(int64_t, INT64_MIN, INT64_MAX);
        break;
    case TCRT_U8:
        RED_INT(uint8_t, 0, UINT8_MAX);
        break;
    case TCRT_BOOL:
        KCHECK(kind == RED_MAX || kind == RED_MIN);
        RED_INT(uint8_t, 0, 1);
        break;
    default:
        return TCRT_ERR_RUNTIME;
    }
    return TCRT_OK;
}

tcrt_status tcrt_ref_reduce_sum(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                const tcrt_params *p)
{
    return reduce(in, n_in, out, n_out, p, RED_SUM);
}

tcrt_status tcrt_ref_reduce_max(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                const tcrt_params *p)
{
    return reduce(in, n_in, out, n_out, p, RED_MAX);
}

tcrt_status tcrt_ref_reduce_min(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                const tcrt_params *p)
{
    return reduce(in, n_in, out, n_out, p, RED_MIN);
}

tcrt_status tcrt_ref_reduce_prod(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                 const tcrt_params *p)
{
    return reduce(in, n_in, out, n_out, p, RED_PROD);
}

/* ---- argmax / argmin ---- */

static tcrt_status arg_reduce(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                              const tcrt_params *p, bool is_max)
{
    KCHECK(in && out && p && n_in == 1 && n_out >= 1);
    const tcrt_tensor *x = &in[0];
    KCHECK(k_valid(x) && k_valid(out) && x->rank >= 1);
    KCHECK(out->dtype == TCRT_I32 || out->dtype == TCRT_I64);
    int64_t axis = p->i[TCRT_ARG_AXIS];
    if (axis < 0)
        axis += x->rank;
    KCHECK(axis >= 0 && axis < x->rank);
    int64_t outer = 1, inner = 1, n = x->dims[axis];
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = (int)axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    KCHECK(k_count(out) == outer * inner);
    tcrt_dtype dt = x->dtype;
    KCHECK(dt == TCRT_F32 || dt == TCRT_F64 || dt == TCRT_I32 || dt == TCRT_I64 || dt == TCRT_U8 ||
           dt == TCRT_I8 || dt == TCRT_I16 || dt == TCRT_U16 || dt == TCRT_BOOL);
    bool is_float = k_is_float(dt);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t best = 0;
            int64_t base = o * n * inner + i;
            if (is_float) {
                double bv = n ? k_load(x->data, dt, base) : 0;
                for (int64_t k = 1; k < n && !isnan(bv); k++) {
                    double v = k_load(x->data, dt, base + k * inner);
                    if (isnan(v) || (is_max ? v > bv : v < bv)) {
                        bv = v;
                        best = k;
                    }
                }
            } else if (dt == TCRT_I64) {
                const int64_t *X = (const int64_t *)x->data;
                int64_t bv = n ? X[base] : 0;
                for (int64_t k = 1; k < n; k++) {
                    int64_t v = X[base + k * inner];
                    if (is_max ? v > bv : v < bv) {
                        bv = v;
                        best = k;
                    }
                }
            } else {
                /* every other integer type is exact in double */
                double bv = n ? k_load(x->data, dt, base) : 0;
                for (int64_t k = 1; k < n; k++) {
                    double v = k_load(x->data, dt, base + k * inner);
                    if (is_max ? v > bv : v < bv) {
                        bv = v;
                        best = k;
                    }
                }
            }
            if (out->dtype == TCRT_I32)
                ((int32_t *)out->data)[o * inner + i] = (int32_t)best;
            else
                ((int64_t *)out->data)[o * inner + i] = best;
        }
    return TCRT_OK;
}

tcrt_status tcrt_ref_argmax(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                            const tcrt_params *p)
{
    return arg_reduce(in, n_in, out, n_out, p, true);
}

tcrt_status tcrt_ref_argmin(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                            const tcrt_params *p)
{
    return arg_reduce(in, n_in, out, n_out, p, false);
}
