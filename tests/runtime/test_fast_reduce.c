/* test_fast_reduce.c - Check suite: the float32 sum / max reductions of
 * runtime/kernels/fast_reduce.c against the reference (ref_reduce.c).
 *
 * Shapes: rank 1 to 4 with dims 1..21 (size-1 axes between reduced ones,
 * rows shorter and longer than the 16-float vector loop, odd tails), every
 * reduced-axes mask (adjacent runs take the fast path, the others fall back
 * to the reference; both must match it); also the layer-norm and global
 * pooling shapes, at 1 and 2 threads where the rows are enough to split
 * over the pool (RED_PAR_MIN elements: outer rows in ranges, an odd count
 * and fewer rows than ranges too).  Tolerance: sums |fast - ref| <= 1e-5 x (1 + sum |x|)
 * (float32 against the reference's double accumulator), max exact.  NaN: a
 * NaN anywhere in a max or sum row gives NaN, as the reference.
 */
#include "tcrt_kernels.h"
#include "tcrt_pool.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

/* Runs fast and reference on random x dims[rank] (one NaN if with_nan)
 * and mask; returns the first output that does not match, or -1. */
static int64_t compare(int rank, const int64_t *dims, int64_t mask, bool is_max, bool with_nan)
{
    tcrt_tensor x = {.dtype = TCRT_F32, .rank = rank}, o = {.dtype = TCRT_F32, .rank = rank};
    int64_t n = 1, n_out = 1;
    for (int d = 0; d < rank; d++) {
        x.dims[d] = dims[d];
        o.dims[d] = (mask >> d) & 1 ? 1 : dims[d];
        n *= dims[d];
        n_out *= o.dims[d];
    }
    float *xs = malloc((size_t)n * 4), *xa = malloc((size_t)n * 4), *yf = malloc((size_t)n_out * 4),
          *yr = malloc((size_t)n_out * 4), *ya = malloc((size_t)n_out * 4);
    ck_assert(xs && xa && yf && yr && ya);
    for (int64_t i = 0; i < n; i++) {
        xs[i] = (float)(urand() % 2000001) * 1e-6f - 1.0f;
        xa[i] = fabsf(xs[i]);
    }
    if (with_nan)
        xs[urand() % n] = NAN;
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_RED_MASK] = mask;
    x.data = xs, o.data = yr;
    ck_assert_int_eq((is_max ? tcrt_ref_reduce_max : tcrt_ref_reduce_sum)(&x, 1, &o, 1, &p), TCRT_OK);
    o.data = yf;
    ck_assert_int_eq((is_max ? tcrt_fast_reduce_max : tcrt_fast_reduce_sum)(&x, 1, &o, 1, &p), TCRT_OK);
    x.data = xa, o.data = ya;
    ck_assert_int_eq(tcrt_ref_reduce_sum(&x, 1, &o, 1, &p), TCRT_OK);
    int64_t bad = -1;
    for (int64_t i = 0; i < n_out && bad < 0; i++) {
        bool ok = isnan(yr[i]) ? isnan(yf[i])
                  : is_max     ? yf[i] == yr[i]
                               : fabsf(yf[i] - yr[i]) <= 1e-5f * (1 + ya[i]);
        if (!ok)
            bad = i;
    }
    free(xs);
    free(xa);
    free(yf);
    free(yr);
    free(ya);
    return bad;
}

START_TEST(fast_reduce_random)
{
    for (int iter = 0; iter < 400; iter++) {
        int rank = 1 + iter % 4;
        int64_t dims[4];
        for (int d = 0; d < rank; d++)
            dims[d] = urand() % 4 == 0 ? 1 : 1 + urand() % 21;
        for (int64_t mask = 1; mask < (1 << rank); mask++)
            for (int is_max = 0; is_max <= 1; is_max++) {
                int64_t bad = compare(rank, dims, mask, is_max, iter % 7 == 0);
                ck_assert_msg(bad < 0, "rank %d dims %lld,%lld,%lld,%lld mask %lld %s: output %lld", rank,
                              (long long)dims[0], (long long)(rank > 1 ? dims[1] : 0),
                              (long long)(rank > 2 ? dims[2] : 0), (long long)(rank > 3 ? dims[3] : 0),
                              (long long)mask, is_max ? "max" : "sum", (long long)bad);
            }
    }
}
END_TEST

START_TEST(fast_reduce_model_shapes)
{
    /* layer norm / softmax rows, NHWC global average pooling, a long row */
    static const int64_t ln[3] = {1, 16, 64}, sm[3] = {4, 16, 16}, gap[4] = {1, 7, 7, 1280},
                         row[2] = {3, 1000}, mix[4] = {2, 5, 3, 83};
    for (int is_max = 0; is_max <= 1; is_max++) {
        ck_assert_int_eq(compare(3, ln, 4, is_max, false), -1);
        ck_assert_int_eq(compare(3, sm, 4, is_max, false), -1);
        ck_assert_int_eq(compare(4, gap, 6, is_max, false), -1);
        ck_assert_int_eq(compare(2, row, 2, is_max, true), -1);
        /* 83 channels: a block of 64, two single vectors, 3 scalars; with NaN */
        ck_assert_int_eq(compare(4, mix, 6, is_max, false), -1);
        ck_assert_int_eq(compare(4, mix, 6, is_max, true), -1);
    }
    /* a reduced axis of size 0: the identity, through the reference */
    tcrt_tensor x = {.data = (float[1]){0}, .dtype = TCRT_F32, .rank = 2, .dims = {3, 0}};
    float y[3] = {5, 5, 5};
    tcrt_tensor o = {.data = y, .dtype = TCRT_F32, .rank = 2, .dims = {3, 1}};
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_RED_MASK] = 2;
    ck_assert_int_eq(tcrt_fast_reduce_sum(&x, 1, &o, 1, &p), TCRT_OK);
    ck_assert(y[0] == 0 && y[1] == 0 && y[2] == 0);
}
END_TEST

/* Row max (inner 1) with NaNs where the fast kernel's vector part and its
 * scalar tail meet them: the reference's rule, bit for bit (the first NaN
 * of the row wins, with its payload). */
START_TEST(fast_reduce_max_nan_rows)
{
    enum { R = 6, C = 70 }; /* 64 floats of vectors, a 6-float tail */
    static float x[R * C], want[R], got[R];
    for (int i = 0; i < R * C; i++)
        x[i] = (float)(urand() % 2001) * 1e-3f - 1.0f;
    uint32_t q1 = 0x7fc00001u, q2 = 0x7fc00002u;
    float n1, n2;
    memcpy(&n1, &q1, 4), memcpy(&n2, &q2, 4);
    x[0 * C + 3] = n1;                      /* row 0: in the vectors */
    x[1 * C + 66] = n1;                     /* row 1: in the tail */
    x[2 * C + 40] = n2, x[2 * C + 50] = n1; /* row 2: two in the vectors, n2 first */
    x[3 * C + 10] = n1, x[3 * C + 68] = n2; /* row 3: vectors, then tail */
    x[4 * C + 0] = n2;                      /* row 4: the first element */
    x[5 * C + 33] = 5.0f;                   /* row 5: no NaN, a clear max */
    tcrt_tensor in = {.data = x, .dtype = TCRT_F32, .rank = 2, .dims = {R, C}};
    tcrt_tensor o = {.data = want, .dtype = TCRT_F32, .rank = 2, .dims = {R, 1}};
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_RED_MASK] = 2;
    ck_assert_int_eq(tcrt_ref_reduce_max(&in, 1, &o, 1, &p), TCRT_OK);
    o.data = got;
    ck_assert_int_eq(tcrt_fast_reduce_max(&in, 1, &o, 1, &p), TCRT_OK);
    ck_assert(memcmp(want, got, sizeof want) == 0);
    uint32_t b[R];
    memcpy(b, got, sizeof b);
    ck_assert_uint_eq(b[0], q1);
    ck_assert_uint_eq(b[1], q1);
    ck_assert_uint_eq(b[2], q2);
    ck_assert_uint_eq(b[3], q1);
    ck_assert_uint_eq(b[4], q2);
    ck_assert(got[5] == 5.0f);
}
END_TEST

START_TEST(fast_reduce_threads)
{
    /* a 4-layer encoder's layer norm and attention softmax rows, an odd row
     * count, fewer rows than the pool's ranges, NHWC pooling per image */
    static const int64_t ln[3] = {1, 128, 256}, sm[3] = {4, 128, 128}, odd[2] = {37, 301}, few[2] = {3, 4000},
                         gap[4] = {5, 7, 7, 320};
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        for (int is_max = 0; is_max <= 1; is_max++) {
            ck_assert_int_eq(compare(3, ln, 4, is_max, false), -1);
            ck_assert_int_eq(compare(3, sm, 4, is_max, false), -1);
            ck_assert_int_eq(compare(2, odd, 2, is_max, true), -1);
            ck_assert_int_eq(compare(2, few, 2, is_max, false), -1);
            ck_assert_int_eq(compare(4, gap, 6, is_max, false), -1);
        }
    }
    tcrt_set_threads(1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_fast_reduce");
    TCase *tc = tcase_create("fast_reduce");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fast_reduce_random);
    tcase_add_test(tc, fast_reduce_model_shapes);
    tcase_add_test(tc, fast_reduce_max_nan_rows);
    tcase_add_test(tc, fast_reduce_threads);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
