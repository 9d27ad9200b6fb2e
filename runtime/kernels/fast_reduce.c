/* runtime/kernels/fast_reduce.c - fast float32 sum and max reductions
 * (tcrt_kernels.h) for the shapes softmax, layer norm and global average
 * pooling produce; everything else goes to the reference (ref_reduce.c),
 * which defines the semantics.
 *
 * Handled: f32, the reduced axes (ignoring axes of size 1) one adjacent
 * run, so the input is [outer, red, inner] in row-major order and the
 * output [outer, inner]:
 *  - inner == 1 (the last axes: softmax, layer norm): each output is the
 *    reduction of red contiguous floats, in NV lanes of partial results
 *    combined at the end;
 *  - inner > 1 (NHWC global pooling over H, W): the output row of inner
 *    floats accumulates the red input rows, RB vectors of NV channels at a
 *    time (then one vector, then scalars).
 * Sums are float32 (the reference accumulates in double: results differ by
 * rounding only); max follows the reference's NaN rule (a NaN wins and
 * stays).  Empty reductions (red == 0) go to the reference.  No
 * allocation.
 * Threads: from RED_PAR_MIN input elements the outer rows go out in up to
 * RED_PAR_TASKS contiguous ranges through the pool, as the elementwise
 * kernels split their outermost loop (codegen/c/emit_elem.c), so at 2
 * threads each core reduces the rows the elementwise kernel before it
 * wrote (the caller the first ranges, the worker the last: tcrt_pool.h).
 * Single-threaded, a layer norm's mean at 2 threads read half its input
 * from the other core: a 4-layer encoder's [128, 256] means took 2.3x their
 * 1-thread time (docs/performance.md, "Threads").
 */
#include "tcrt_kernels.h"
#include "tcrt_pool.h"

#include <stdbool.h>
#include <string.h>

#define NV 8 /* fast_vec_int.h: 8-lane vectors, the build's ISA */
#include "fast_vec_int.h"

/* max with NaN winning and staying: a NaN in a is kept, a NaN in v taken. */
static inline nvf vmax_nan(nvf a, nvf v)
{
    nvi take = ((v > a) | (v != v)) & (a == a);
    return (nvf)(((nvi)v & take) | ((nvi)a & ~take));
}

static inline float max_nan(float a, float v)
{
    return a != a ? a : (v > a || v != v) ? v : a;
}

/* Sum of n contiguous floats (n >= 1). */
static float sum_row(const float *x, int64_t n)
{
    int64_t i = 0;
    float r = 0.0f;
    if (n >= 2 * NV) {
        nvf a0 = nv_load(x), a1 = nv_load(x + NV);
        for (i = 2 * NV; i + 2 * NV <= n; i += 2 * NV)
            a0 += nv_load(x + i), a1 += nv_load(x + i + NV);
        a0 += a1;
        for (int k = 0; k < NV; k++)
            r += a0[k];
    }
    for (; i < n; i++)
        r += x[i];
    return r;
}

/* Max of n contiguous floats (n >= 1), the reference's NaN rule: four
 * plain running maxima (nv_max, one instruction) and a NaN flag off the
 * dependency chains, then the lanes folded by halves; a row with a NaN in
 * its vector part is redone in order with max_nan (the first NaN wins, as
 * the reference's).  With vmax_nan on two chains (compares, logic and a
 * blend per step) and a scalar fold, a softmax's row max of [512, 128]
 * took 12.3 us against its row sum's 3.1. */
static float max_row(const float *x, int64_t n)
{
    int64_t i = 0;
    float r = x[0];
    if (n >= 4 * NV) {
        nvf a0 = nv_load(x), a1 = nv_load(x + NV), a2 = nv_load(x + 2 * NV), a3 = nv_load(x + 3 * NV);
        nvi bad = (a0 != a0) | (a1 != a1) | (a2 != a2) | (a3 != a3), none = {0};
        for (i = 4 * NV; i + 4 * NV <= n; i += 4 * NV) {
            nvf v0 = nv_load(x + i), v1 = nv_load(x + i + NV), v2 = nv_load(x + i + 2 * NV),
                v3 = nv_load(x + i + 3 * NV);
            bad |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3);
            a0 = nv_max(v0, a0), a1 = nv_max(v1, a1), a2 = nv_max(v2, a2), a3 = nv_max(v3, a3);
        }
        if (memcmp(&bad, &none, sizeof bad) != 0) {
            for (int64_t j = 1; j < n; j++)
                r = max_nan(r, x[j]);
            return r;
        }
        a0 = nv_max(nv_max(a0, a1), nv_max(a2, a3));
        float h[NV];
        memcpy(h, &a0, sizeof h);
        for (int w = NV / 2; w >= 1; w /= 2) /* fold the upper half of the lanes onto the lower */
            for (int k = 0; k < w; k++)
                h[k] = h[k + w] > h[k] ? h[k + w] : h[k];
        r = h[0];
    }
    for (; i < n; i++)
        r = max_nan(r, x[i]);
    return r;
}

/* y[inner] = reduction over red rows x[r * inner + i]: blocks of RB
 * vectors walk all rows with one accumulator each (RB independent chains,
 * and each row's block is whole cache lines), then single vectors, then
 * scalars; every output sums its rows in order.  One vector at a time over
 * all rows, as before, left a chain of dependent adds per vector and read
 * 32 bytes of each 64-byte line per pass: centernet's mean over 128x128x128
 * took 1.55 ms. */
#define RB 8

/* nb (1..RB) vectors of channels, y[0 .. nb*NV) over red rows of x. */
static inline __attribute__((always_inline)) void reduce_vecs(const float *x, int64_t red, int64_t inner,
                                                              float *y, bool is_max, const int nb)
{
    nvf a[RB];
    for (int k = 0; k < nb; k++)
        a[k] = nv_load(x + k * NV);
    for (int64_t r = 1; r < red; r++) {
        const float *xr = x + r * inner;
        for (int k = 0; k < nb; k++)
            a[k] = is_max ? vmax_nan(a[k], nv_load(xr + k * NV)) : a[k] + nv_load(xr + k * NV);
    }
    memcpy(y, a, (size_t)nb * sizeof(nvf));
}

static void reduce_rows(const float *x, int64_t red, int64_t inner, float *y, bool is_max)
{
    int64_t i = 0;
    for (; i + RB * NV <= inner; i += RB * NV)
        reduce_vecs(x + i, red, inner, y + i, is_max, RB);
    for (; i + NV <= inner; i += NV)
        reduce_vecs(x + i, red, inner, y + i, is_max, 1);
    for (; i < inner; i++) {
        float a = x[i];
        for (int64_t r = 1; r < red; r++)
            a = is_max ? max_nan(a, x[r * inner + i]) : a + x[r * inner + i];
        y[i] = a;
    }
}

/* [outer, red, inner] of x for reduced-axes mask; false when the reduced
 * axes of size > 1 are not one adjacent run. */
static bool split3(const tcrt_tensor *x, int64_t mask, int64_t *outer, int64_t *red, int64_t *inner)
{
    int first = -1, last = -1;
    *outer = *red = *inner = 1;
    for (int d = 0; d < x->rank; d++) {
        if (!(mask & ((int64_t)1 << d)) || x->dims[d] == 1)
            continue;
        if (first < 0)
            first = d;
        else if (last != d - 1) {
            /* a kept axis of size > 1 between two reduced ones? */
            for (int k = last + 1; k < d; k++)
                if (x->dims[k] != 1)
                    return false;
        }
        last = d;
    }
    for (int d = 0; d < x->rank; d++) {
        if (first >= 0 && d >= first && d <= last)
            *red *= x->dims[d];
        else if (first >= 0 && d > last)
            *inner *= x->dims[d];
        else
            *outer *= x->dims[d];
    }
    return true;
}

enum { RED_PAR_MIN = 1 << 13, RED_PAR_TASKS = 8 };

/* One reduction job: [outer, red, inner] -> [outer, inner], the outer rows
 * in tasks of per_task. */
typedef struct Red {
    const float *x;
    float *y;
    int64_t outer, red, inner, per_task;
    bool is_max;
} Red;

static void red_task(void *ctx, int64_t task, int tid)
{
    (void)tid;
    const Red *r = ctx;
    int64_t o1 = (task + 1) * r->per_task < r->outer ? (task + 1) * r->per_task : r->outer;
    for (int64_t o = task * r->per_task; o < o1; o++) {
        if (r->inner == 1)
            r->y[o] = r->is_max ? max_row(r->x + o * r->red, r->red) : sum_row(r->x + o * r->red, r->red);
        else
            reduce_rows(r->x + o * r->red * r->inner, r->red, r->inner, r->y + o * r->inner, r->is_max);
    }
}

static tcrt_status fast_reduce(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                               const tcrt_params *p, bool is_max)
{
    tcrt_status (*ref)(const tcrt_tensor *, int, tcrt_tensor *, int, const tcrt_params *) =
        is_max ? tcrt_ref_reduce_max : tcrt_ref_reduce_sum;
    if (!in || !out || !p || n_in != 1 || n_out < 1)
        return ref(in, n_in, out, n_out, p);
    const tcrt_tensor *x = &in[0];
    int64_t mask = p->i[TCRT_RED_MASK], outer, red, inner;
    if (x->dtype != TCRT_F32 || out->dtype != TCRT_F32 || !x->data || !out->data || x->rank < 0 ||
        x->rank > TCRT_MAX_RANK || (mask & ~(((int64_t)1 << x->rank) - 1)) ||
        tcrt_tensor_count(x) <= 0 || !split3(x, mask, &outer, &red, &inner) ||
        tcrt_tensor_count(out) != outer * inner)
        return ref(in, n_in, out, n_out, p);
    Red r = {(const float *)x->data, (float *)out->data, outer, red, inner, outer, is_max};
    int64_t n_tasks = 1;
    if (tcrt_get_threads() > 1 && outer > 1 && tcrt_tensor_count(x) >= RED_PAR_MIN) {
        n_tasks = outer < RED_PAR_TASKS ? outer : RED_PAR_TASKS;
        r.per_task = (outer + n_tasks - 1) / n_tasks;
        n_tasks = (outer + r.per_task - 1) / r.per_task;
    }
    tcrt_parallel_tasks(n_tasks, red_task, &r);
    return TCRT_OK;
}

tcrt_status tcrt_fast_reduce_sum(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                 const tcrt_params *p)
{
    return fast_reduce(in, n_in, out, n_out, p, false);
}

tcrt_status tcrt_fast_reduce_max(const tcrt_tensor *in, int n_in, tcrt_tensor *out, int n_out,
                                 const tcrt_params *p)
{
    return fast_reduce(in, n_in, out, n_out, p, true);
}
