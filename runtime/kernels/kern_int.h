/* kern_int.h - helpers shared by the reference kernels (internal to runtime/kernels).
 *
 * Shape checks, strides, element load/store through a dtype switch, and the
 * activation epilogue.  All static inline: nothing here is exported.
 */
#ifndef TCRT_KERN_INT_H
#define TCRT_KERN_INT_H

#include "tcrt_kernels.h"

#include <math.h>
#include <string.h>

#define KCHECK(cond)                                                                                         \
    do {                                                                                                     \
        if (!(cond))                                                                                         \
            return TCRT_ERR_RUNTIME;                                                                         \
    } while (0)

static inline bool k_valid(const tcrt_tensor *t)
{
    if (!t || t->rank < 0 || t->rank > TCRT_MAX_RANK)
        return false;
    return tcrt_tensor_count(t) >= 0;
}

static inline int64_t k_count(const tcrt_tensor *t)
{
    return tcrt_tensor_count(t);
}

/* Row-major strides in elements. */
static inline void k_strides(const tcrt_tensor *t, int64_t *st)
{
    int64_t s = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= t->dims[d];
    }
}

static inline bool k_is_float(tcrt_dtype dt)
{
    return dt == TCRT_F32 || dt == TCRT_F64;
}

/* Element i of a numeric tensor as double (bool/u8 as 0..255). */
static inline double k_load(const void *p, tcrt_dtype dt, int64_t i)
{
    switch (dt) {
    case TCRT_F32:
        return ((const float *)p)[i];
    case TCRT_F64:
        return ((const double *)p)[i];
    case TCRT_I32:
        return ((const int32_t *)p)[i];
    case TCRT_I64:
        return (double)((const int64_t *)p)[i];
    case TCRT_U8:
    case TCRT_BOOL:
        return ((const uint8_t *)p)[i];
    case TCRT_I8:
        return ((const int8_t *)p)[i];
    case TCRT_I16:
        return ((const int16_t *)p)[i];
    case TCRT_U16:
        return ((const uint16_t *)p)[i];
    case TCRT_U32:
        return ((const uint32_t *)p)[i];
    case TCRT_U64:
        return (double)((const uint64_t *)p)[i];
    default:
        return 0;
    }
}

/* Stores v (already in range for integer types) as element i. */
static inline void k_store(void *p, tcrt_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case TCRT_F32:
        ((float *)p)[i] = (float)v;
        break;
    case TCRT_F64:
        ((double *)p)[i] = v;
        break;
    case TCRT_I32:
        ((int32_t *)p)[i] = (int32_t)v;
        break;
    case TCRT_I64:
        ((int64_t *)p)[i] = (int64_t)v;
        break;
    case TCRT_U8:
        ((uint8_t *)p)[i] = (uint8_t)v;
        break;
    case TCRT_BOOL:
        ((uint8_t *)p)[i] = v != 0;
        break;
    case TCRT_I8:
        ((int8_t *)p)[i] = (int8_t)v;
        break;
    case TCRT_I16:
        ((int16_t *)p)[i] = (int16_t)v;
        break;
    case TCRT_U16:
        ((uint16_t *)p)[i] = (uint16_t)v;
        break;
    case TCRT_U32:
        ((uint32_t *)p)[i] = (uint32_t)v;
        break;
    case TCRT_U64:
        ((uint64_t *)p)[i] = (uint64_t)v;
        break;
    default:
        break;
    }
}

static inline double k_act(double v, int64_t act, double alpha)
{
    switch (act) {
    case TCRT_ACT_RELU:
        return v > 0 ? v : 0;
    case TCRT_ACT_RELU6:
        return v < 0 ? 0 : v > 6 ? 6 : v;
    case TCRT_ACT_LEAKY:
        return v < 0 ? v * alpha : v;
    default:
        return v;
    }
}

static inline bool k_act_ok(int64_t act)
{
    return act >= TCRT_ACT_NONE && act <= TCRT_ACT_LEAKY;
}

/* Copies one element of esz bytes. */
static inline void k_copy_elem(void *dst, const void *src, size_t esz)
{
    switch (esz) {
    case 1:
        *(uint8_t *)dst = *(const uint8_t *)src;
        break;
    case 2:
        memcpy(dst, src, 2);
        break;
    case 4:
        memcpy(dst, src, 4);
        break;
    case 8:
        memcpy(dst, src, 8);
        break;
    default:
        memcpy(dst, src, esz);
        break;
    }
}

/* Odometer over a row-major index space with per-dim strides: off is the
 * strided offset of the current index.  odo_next steps to the next index. */
typedef struct Odo {
    int n;
    int64_t dims[TCRT_MAX_RANK], st[TCRT_MAX_RANK], idx[TCRT_MAX_RANK];
    int64_t off;
} Odo;

static inline void odo_init(Odo *o, int n, const int64_t *dims, const int64_t *st)
{
    o->n = n;
    o->off = 0;
    for (int d = 0; d < n; d++) {
        o->dims[d] = dims[d];
        o->st[d] = st[d];
        o->idx[d] = 0;
    }
}

static inline void odo_next(Odo *o)
{
    for (int d = o->n - 1; d >= 0; d--) {
        o->idx[d]++;
        o->off += o->st[d];
        if (o->idx[d] < o->dims[d])
            return;
        o->off -= o->st[d] * o->dims[d];
        o->idx[d] = 0;
    }
}

#endif
