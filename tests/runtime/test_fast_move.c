/* test_fast_move.c - Check suite: tcrt_fast_pad, tcrt_fast_resize and
 * tcrt_fast_transpose (runtime/kernels/fast_move.c) against the reference
 * kernels (tcrt_ref_pad, tcrt_ref_resize, tcrt_ref_transpose), the oracle.
 *
 * Pad: random shapes of rank 1..5 (dims 0..7, odd sizes), random
 * before/after pads (0..3, a dim left unpadded now and then), constant 0,
 * -0.0 and 2.5; the result must be bit-identical to the reference
 * (the fast kernel only moves bytes).  Also: a big pad (split over 2
 * threads), reflect/symmetric and int32 (handed to the reference, same
 * result) and a bad shape (the reference's error).
 * Resize: bilinear and nearest with every align_corners / half_pixel
 * combination, up- and down-scaling, odd sizes, C 1/3/8/13/19, N = 2, a row
 * wider than the kernel's 512-column table, 1 and 2 threads.  Nearest must be
 * bit-identical; bilinear is computed in float by the fast kernel and in
 * double by the reference: |got - want| <= 4e-7 * (1 + max|x|) (a few
 * float roundings of values of at most max|x|).
 * Transpose: random permutations of random shapes of rank 1..6 (dims
 * 0..6, extents of 1 that the kernel drops, neighbours it merges), shapes big
 * enough to split over 2 threads (NCHW -> NHWC of 1x3x224x224, NHWC ->
 * NCHW, a 2-D matrix, a 5-D permutation), 1 and 2 threads: bit-identical to
 * the reference.  int32, a bad permutation and a rank mismatch go to the
 * reference (same result or error).
 * Every output buffer starts as NaN, so an element never written fails.
 */
#include "tcrt.h"
#include "tcrt_kernels.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint32_t urand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}

static float frand(void)
{
    return (float)(urand() % 2000001) / 1000000.0f - 1.0f;
}

static int64_t count(const int64_t *d, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= d[i];
    return n;
}

static float *nan_buf(int64_t n)
{
    float *b = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        b[i] = NAN;
    return b;
}

/* One pad case: x of rank r and dims xd, pads pb/pa, constant cval. */
static void pad_case(int rank, const int64_t *xd, const int64_t *pb, const int64_t *pa, float cval,
                     const char *what)
{
    tcrt_params p;
    memset(&p, 0, sizeof p);
    int64_t od[8];
    for (int d = 0; d < rank; d++) {
        p.i[2 * d] = pb[d], p.i[2 * d + 1] = pa[d];
        od[d] = xd[d] + pb[d] + pa[d];
    }
    p.f[0] = cval;
    int64_t nx = count(xd, rank), ny = count(od, rank);
    float *x = malloc((size_t)(nx ? nx : 1) * sizeof(float));
    for (int64_t i = 0; i < nx; i++)
        x[i] = frand();
    float *want = nan_buf(ny), *got = nan_buf(ny);
    tcrt_tensor in = {x, TCRT_F32, rank, {0}}, ow = {want, TCRT_F32, rank, {0}}, og = {got, TCRT_F32, rank, {0}};
    for (int d = 0; d < rank; d++)
        in.dims[d] = xd[d], ow.dims[d] = og.dims[d] = od[d];
    ck_assert_int_eq(tcrt_ref_pad(&in, 1, &ow, 1, &p), TCRT_OK);
    ck_assert_int_eq(tcrt_fast_pad(&in, 1, &og, 1, &p), TCRT_OK);
    ck_assert_msg(memcmp(want, got, (size_t)ny * sizeof(float)) == 0, "%s: differs from the reference", what);
    free(x), free(want), free(got);
}

START_TEST(pad_random)
{
    static const float cvals[] = {0.0f, -0.0f, 2.5f};
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        for (int k = 0; k < 300; k++) {
            int rank = 1 + (int)(urand() % 5);
            int64_t xd[8], pb[8], pa[8];
            for (int d = 0; d < rank; d++) {
                xd[d] = urand() % 8;
                bool padded = urand() % 3 != 0;
                pb[d] = padded ? urand() % 4 : 0;
                pa[d] = padded ? urand() % 4 : 0;
            }
            char what[96];
            snprintf(what, sizeof what, "pad case %d (rank %d, %d threads)", k, rank, t);
            pad_case(rank, xd, pb, pa, cvals[k % 3], what);
        }
    }
    tcrt_set_threads(1);
}
END_TEST

START_TEST(pad_shapes)
{
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        /* channel padding (facemesh), spatial zero padding (blazepose), big enough to split */
        pad_case(4, (int64_t[]){1, 64, 64, 24}, (int64_t[]){0, 0, 0, 0}, (int64_t[]){0, 0, 0, 4}, 0.0f, "channels");
        pad_case(4, (int64_t[]){1, 128, 128, 32}, (int64_t[]){0, 1, 1, 0}, (int64_t[]){0, 1, 1, 0}, 0.0f, "spatial");
        pad_case(4, (int64_t[]){2, 33, 47, 5}, (int64_t[]){1, 2, 0, 3}, (int64_t[]){0, 3, 5, 1}, -1.0f, "all dims");
        /* nothing padded: a copy; a scalar-like rank 1 */
        pad_case(3, (int64_t[]){3, 5, 7}, (int64_t[]){0, 0, 0}, (int64_t[]){0, 0, 0}, 0.0f, "no padding");
        pad_case(1, (int64_t[]){1}, (int64_t[]){3}, (int64_t[]){0}, 7.0f, "rank 1");
        /* an empty input padded to a non-empty output: all constant */
        pad_case(2, (int64_t[]){0, 4}, (int64_t[]){2, 0}, (int64_t[]){1, 0}, 1.5f, "empty input");
    }
    tcrt_set_threads(1);
}
END_TEST

/* What the fast kernel does not do itself goes to the reference: same result or error. */
START_TEST(pad_fallbacks)
{
    float x[12], want[40], got[40];
    for (int i = 0; i < 12; i++)
        x[i] = (float)i;
    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[2] = 2, p.i[3] = 1, p.i[1] = 1; /* dims: [3,4] -> [4,7] */
    for (int mode = 1; mode <= 2; mode++) {
        p.i[TCRT_PAD_MODE] = mode;
        tcrt_tensor in = {x, TCRT_F32, 2, {3, 4}}, ow = {want, TCRT_F32, 2, {4, 7}}, og = {got, TCRT_F32, 2, {4, 7}};
        ck_assert_int_eq(tcrt_ref_pad(&in, 1, &ow, 1, &p), TCRT_OK);
        ck_assert_int_eq(tcrt_fast_pad(&in, 1, &og, 1, &p), TCRT_OK);
        ck_assert(memcmp(want, got, 28 * sizeof(float)) == 0);
    }
    /* int32 */
    p.i[TCRT_PAD_MODE] = 0;
    p.f[0] = 9;
    int32_t xi[12], wi[28], gi[28];
    for (int i = 0; i < 12; i++)
        xi[i] = i * 3 - 5;
    tcrt_tensor in = {xi, TCRT_I32, 2, {3, 4}}, ow = {wi, TCRT_I32, 2, {4, 7}}, og = {gi, TCRT_I32, 2, {4, 7}};
    ck_assert_int_eq(tcrt_ref_pad(&in, 1, &ow, 1, &p), TCRT_OK);
    ck_assert_int_eq(tcrt_fast_pad(&in, 1, &og, 1, &p), TCRT_OK);
    ck_assert(memcmp(wi, gi, sizeof wi) == 0);
    ck_assert_int_eq(wi[0], 9);
    /* output shape that does not match the pads: the reference's error */
    tcrt_tensor fx = {x, TCRT_F32, 2, {3, 4}}, bad = {got, TCRT_F32, 2, {4, 6}};
    ck_assert_int_eq(tcrt_fast_pad(&fx, 1, &bad, 1, &p), tcrt_ref_pad(&fx, 1, &bad, 1, &p));
    ck_assert_int_ne(tcrt_fast_pad(&fx, 1, &bad, 1, &p), TCRT_OK);
}
END_TEST

typedef struct RsCase {
    int64_t n, h, w, c, oh, ow;
} RsCase;

static void resize_case(const RsCase *r, int mode, bool align, bool half, const char *name)
{
    int64_t nx = r->n * r->h * r->w * r->c, ny = r->n * r->oh * r->ow * r->c;
    float *x = malloc((size_t)nx * sizeof(float));
    float xmax = 0;
    for (int64_t i = 0; i < nx; i++) {
        x[i] = frand() * 3.0f;
        xmax = fmaxf(xmax, fabsf(x[i]));
    }
    float *want = nan_buf(ny), *got = nan_buf(ny);
    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_RS_MODE] = mode, p.i[TCRT_RS_ALIGN] = align, p.i[TCRT_RS_HALF] = half;
    tcrt_tensor in = {x, TCRT_F32, 4, {r->n, r->h, r->w, r->c}};
    tcrt_tensor ow = {want, TCRT_F32, 4, {r->n, r->oh, r->ow, r->c}}, og = {got, TCRT_F32, 4, {r->n, r->oh, r->ow, r->c}};
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &ow, 1, &p), TCRT_OK);
    ck_assert_int_eq(tcrt_fast_resize(&in, 1, &og, 1, &p), TCRT_OK);
    float tol = mode == 1 ? 0.0f : 4e-7f * (1 + xmax);
    for (int64_t i = 0; i < ny; i++)
        ck_assert_msg(fabsf(got[i] - want[i]) <= tol, "%s mode %d align %d half %d [%lld]: got %.9g want %.9g",
                      name, mode, align, half, (long long)i, got[i], want[i]);
    free(x), free(want), free(got);
}

START_TEST(resize_cases)
{
    static const struct {
        const char *name;
        RsCase r;
    } cases[] = {
        {"2x up c8", {1, 16, 16, 8, 32, 32}},
        {"odd up c3", {1, 5, 7, 3, 13, 11}},
        {"down c13", {2, 17, 9, 13, 6, 4}},
        {"c1 wide", {1, 3, 300, 1, 5, 601}},  /* more than 512 output columns */
        {"c19 mixed", {1, 9, 4, 19, 4, 10}},
        {"1x1 in", {1, 1, 1, 8, 3, 5}},
        {"1x1 out", {2, 6, 5, 8, 1, 1}},
        {"big (threads)", {1, 64, 64, 8, 128, 128}},
    };
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            for (int mode = 0; mode <= 1; mode++)
                for (int a = 0; a <= 1; a++)
                    for (int h = 0; h <= 1; h++)
                        resize_case(&cases[i].r, mode, a, h, cases[i].name);
    }
    tcrt_set_threads(1);
}
END_TEST

START_TEST(resize_random)
{
    for (int k = 0; k < 150; k++) {
        RsCase r = {1 + urand() % 2, 1 + urand() % 9, 1 + urand() % 9, 1 + urand() % 20, 1 + urand() % 12,
                    1 + urand() % 12};
        char name[48];
        snprintf(name, sizeof name, "random %d", k);
        resize_case(&r, (int)(urand() % 2), urand() % 2, urand() % 2, name);
    }
}
END_TEST

/* Not handled by the fast kernel: the reference's result or error. */
START_TEST(resize_fallbacks)
{
    double xd[2 * 3 * 2], want[4 * 5 * 2], got[4 * 5 * 2];
    for (int i = 0; i < 12; i++)
        xd[i] = i * 0.5;
    tcrt_params p;
    memset(&p, 0, sizeof p);
    tcrt_tensor in = {xd, TCRT_F64, 4, {1, 2, 3, 2}}, ow = {want, TCRT_F64, 4, {1, 4, 5, 2}},
                og = {got, TCRT_F64, 4, {1, 4, 5, 2}};
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &ow, 1, &p), TCRT_OK);
    ck_assert_int_eq(tcrt_fast_resize(&in, 1, &og, 1, &p), TCRT_OK);
    ck_assert(memcmp(want, got, sizeof want) == 0);
    float xf[12], yf[40];
    tcrt_tensor fi = {xf, TCRT_F32, 4, {1, 2, 3, 2}}, bad = {yf, TCRT_F32, 4, {1, 4, 5, 3}};
    ck_assert_int_ne(tcrt_fast_resize(&fi, 1, &bad, 1, &p), TCRT_OK);
    p.i[TCRT_RS_MODE] = 7;
    tcrt_tensor fo = {yf, TCRT_F32, 4, {1, 4, 5, 2}};
    ck_assert_int_ne(tcrt_fast_resize(&fi, 1, &fo, 1, &p), TCRT_OK);
}
END_TEST

/* ---- transpose ---- */

/* One transpose case: x of rank r and dims xd, output dim d = input dim perm[d]. */
static void tr_case(int rank, const int64_t *xd, const int *perm, const char *what)
{
    tcrt_params p;
    memset(&p, 0, sizeof p);
    int64_t od[8];
    for (int d = 0; d < rank; d++) {
        p.i[TCRT_TR_PERM + d] = perm[d];
        od[d] = xd[perm[d]];
    }
    int64_t n = count(xd, rank);
    float *x = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        x[i] = frand();
    float *want = nan_buf(n), *got = nan_buf(n);
    tcrt_tensor in = {x, TCRT_F32, rank, {0}}, ow = {want, TCRT_F32, rank, {0}}, og = {got, TCRT_F32, rank, {0}};
    for (int d = 0; d < rank; d++)
        in.dims[d] = xd[d], ow.dims[d] = og.dims[d] = od[d];
    ck_assert_int_eq(tcrt_ref_transpose(&in, 1, &ow, 1, &p), TCRT_OK);
    ck_assert_int_eq(tcrt_fast_transpose(&in, 1, &og, 1, &p), TCRT_OK);
    ck_assert_msg(memcmp(want, got, (size_t)n * sizeof(float)) == 0, "%s: differs from the reference", what);
    free(x), free(want), free(got);
}

START_TEST(transpose_random)
{
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        for (int k = 0; k < 400; k++) {
            int rank = 1 + (int)(urand() % 6), perm[8];
            int64_t xd[8];
            for (int d = 0; d < rank; d++) {
                xd[d] = urand() % 4 == 0 ? 1 : urand() % 7;
                perm[d] = d;
            }
            for (int d = rank - 1; d > 0; d--) { /* Fisher-Yates */
                int e = (int)(urand() % (unsigned)(d + 1)), tmp = perm[d];
                perm[d] = perm[e], perm[e] = tmp;
            }
            char what[96];
            snprintf(what, sizeof what, "transpose case %d (rank %d, %d threads)", k, rank, t);
            tr_case(rank, xd, perm, what);
        }
    }
    tcrt_set_threads(1);
}
END_TEST

START_TEST(transpose_shapes)
{
    for (int t = 1; t <= 2; t++) {
        tcrt_set_threads(t);
        tr_case(4, (int64_t[]){1, 3, 224, 224}, (int[]){0, 2, 3, 1}, "NCHW -> NHWC");
        /* 3 channels: whole 8-pixel groups and tails in each 64-pixel run,
         * two images; and 3 columns whose output rows are not 3 apart */
        tr_case(4, (int64_t[]){2, 3, 13, 11}, (int[]){0, 2, 3, 1}, "NCHW -> NHWC 13x11 N2");
        tr_case(4, (int64_t[]){1, 3, 1, 7}, (int[]){0, 2, 3, 1}, "NCHW -> NHWC 7 pixels");
        tr_case(3, (int64_t[]){3, 5, 70}, (int[]){2, 1, 0}, "3 columns, rows 15 apart");
        tr_case(4, (int64_t[]){2, 56, 56, 24}, (int[]){0, 3, 1, 2}, "NHWC -> NCHW");
        tr_case(2, (int64_t[]){300, 517}, (int[]){1, 0}, "matrix");
        /* 8 x 8 register tiles: an attention layer's K^T ([seq][heads][dh]
         * -> [heads][dh][seq]), whole tiles only and with row and column tails */
        tr_case(3, (int64_t[]){128, 4, 64}, (int[]){1, 2, 0}, "K^T 128x4x64");
        tr_case(2, (int64_t[]){8, 8}, (int[]){1, 0}, "one 8x8 tile");
        tr_case(2, (int64_t[]){23, 9}, (int[]){1, 0}, "23x9");
        tr_case(3, (int64_t[]){2, 70, 131}, (int[]){0, 2, 1}, "2 x 70x131");
        tr_case(5, (int64_t[]){3, 17, 1, 40, 33}, (int[]){4, 2, 0, 3, 1}, "rank 5");
        tr_case(3, (int64_t[]){64, 65, 66}, (int[]){0, 1, 2}, "identity");
        tr_case(3, (int64_t[]){1, 1, 1}, (int[]){2, 0, 1}, "one element");
    }
    tcrt_set_threads(1);
}
END_TEST

/* What the fast kernel does not do itself goes to the reference. */
START_TEST(transpose_fallbacks)
{
    int32_t xi[6] = {1, 2, 3, 4, 5, 6}, yi[6] = {0};
    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_TR_PERM] = 1, p.i[TCRT_TR_PERM + 1] = 0;
    tcrt_tensor in = {xi, TCRT_I32, 2, {2, 3}}, out = {yi, TCRT_I32, 2, {3, 2}};
    ck_assert_int_eq(tcrt_fast_transpose(&in, 1, &out, 1, &p), TCRT_OK);
    static const int32_t want[6] = {1, 4, 2, 5, 3, 6};
    ck_assert_int_eq(memcmp(yi, want, sizeof want), 0);
    float x[6] = {0}, y[6];
    tcrt_tensor fin = {x, TCRT_F32, 2, {2, 3}}, fout = {y, TCRT_F32, 2, {3, 2}};
    p.i[TCRT_TR_PERM + 1] = 1; /* perm {1, 1}: not a permutation */
    ck_assert_int_eq(tcrt_fast_transpose(&fin, 1, &fout, 1, &p), tcrt_ref_transpose(&fin, 1, &fout, 1, &p));
    ck_assert_int_ne(tcrt_fast_transpose(&fin, 1, &fout, 1, &p), TCRT_OK);
    p.i[TCRT_TR_PERM + 1] = 0;
    fout.rank = 3, fout.dims[2] = 1; /* rank mismatch */
    ck_assert_int_ne(tcrt_fast_transpose(&fin, 1, &fout, 1, &p), TCRT_OK);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("fast_move");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, pad_random);
    tcase_add_test(tc, pad_shapes);
    tcase_add_test(tc, pad_fallbacks);
    tcase_add_test(tc, resize_cases);
    tcase_add_test(tc, resize_random);
    tcase_add_test(tc, resize_fallbacks);
    tcase_add_test(tc, transpose_random);
    tcase_add_test(tc, transpose_shapes);
    tcase_add_test(tc, transpose_fallbacks);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
