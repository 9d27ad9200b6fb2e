/* test_grad_kernels.c - Check suite for the gradient reference kernels
 * (runtime/kernels/ref_grad.c: conv2d_backprop_filter, maxpool_grad,
 * avgpool_grad, scatter_add).
 *
 * Two kinds of checks.  Tiny cases whose expected values are derived by
 * hand in the comment next to them (ties, padding, groups, chunking).  And
 * gradient checks against the forward reference kernels (an independent
 * implementation): for a random cotangent r, L(v) = sum(r * forward(v)) has
 * dL/dv = the gradient kernel applied to r, and each component is compared
 * with the central difference (L(v + h e_i) - L(v - h e_i)) / 2h, in float64
 * (the forward kernels support it).  The forward maps are linear in the
 * varied operand (conv in w, avgpool, gather) or piecewise linear with
 * inputs spaced far wider than h (maxpool), so the difference quotient is
 * exact up to rounding: about 1e-16 * |L| / h ~ 1e-11 here; tolerance 1e-7.
 * Shapes are odd, with strides, SAME/VALID/explicit padding, dilation,
 * groups and depthwise multipliers.  Errors: bad shapes give
 * TCRT_ERR_RUNTIME; an out-of-range scatter index gives TCRT_ERR_ARG and
 * writes nothing.
 */
#include "tcrt_kernels.h"

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

static tcrt_tensor ten(tcrt_dtype dt, void *data, int rank, ...)
{
    tcrt_tensor t = {.data = data, .dtype = dt, .rank = rank};
    va_list ap;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        t.dims[i] = va_arg(ap, int);
    va_end(ap);
    return t;
}

static tcrt_tensor ten_dims(tcrt_dtype dt, void *data, int rank, const int64_t *dims)
{
    tcrt_tensor t = {.data = data, .dtype = dt, .rank = rank};
    for (int i = 0; i < rank; i++)
        t.dims[i] = dims[i];
    return t;
}

static void expect_f(const float *got, const float *want, int n, float tol)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabsf(got[i] - want[i]) <= tol, "[%d]: got %.7g want %.7g", i, got[i], want[i]);
}

static void expect_d(const double *got, const double *want, int n, double tol)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabs(got[i] - want[i]) <= tol, "[%d]: got %.12g want %.12g", i, got[i], want[i]);
}

/* Deterministic pseudo-random numbers in [-1, 1). */
static uint64_t rng_state = 88172645463325252ull;
static double rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}

static int64_t win_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pa, int64_t pb)
{
    return (in + pa + pb - ((k - 1) * d + 1)) / s + 1;
}

static tcrt_params conv_p(int sh, int sw, int dh, int dw, int pt, int pl, int pb, int pr, int depthwise)
{
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_CONV_SH] = sh;
    p.i[TCRT_CONV_SW] = sw;
    p.i[TCRT_CONV_DH] = dh;
    p.i[TCRT_CONV_DW] = dw;
    p.i[TCRT_CONV_PT] = pt;
    p.i[TCRT_CONV_PL] = pl;
    p.i[TCRT_CONV_PB] = pb;
    p.i[TCRT_CONV_PR] = pr;
    p.i[TCRT_CONV_DEPTHWISE] = depthwise;
    return p;
}

static tcrt_params pool_p(int kh, int kw, int sh, int sw, int pt, int pl, int pb, int pr)
{
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_POOL_KH] = kh;
    p.i[TCRT_POOL_KW] = kw;
    p.i[TCRT_POOL_SH] = sh;
    p.i[TCRT_POOL_SW] = sw;
    p.i[TCRT_POOL_PT] = pt;
    p.i[TCRT_POOL_PL] = pl;
    p.i[TCRT_POOL_PB] = pb;
    p.i[TCRT_POOL_PR] = pr;
    return p;
}

static double dot(const double *a, const double *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

#define FD_H 1e-3
#define FD_TOL 1e-7
#define BIG 4096

/* ---- conv2d_backprop_filter ---- */

START_TEST(bpf_hand)
{
    /* x = 1..9 (1x3x3x1), dy 1x2x2x1 = 1,2,3,4, 2x2 filter, VALID stride 1:
     * dw[kh,kw] = sum_oh,ow x[oh+kh, ow+kw] * dy[oh,ow]
     * (0,0) = 1*1 + 2*2 + 4*3 + 5*4 = 37, (0,1) = 2 + 6 + 15 + 24 = 47,
     * (1,0) = 4 + 10 + 21 + 32 = 67, (1,1) = 5 + 12 + 24 + 36 = 77. */
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, dy[4] = {1, 2, 3, 4}, dw[4];
    tcrt_tensor in[2] = {ten(TCRT_F32, x, 4, 1, 3, 3, 1), ten(TCRT_F32, dy, 4, 1, 2, 2, 1)};
    tcrt_tensor out = ten(TCRT_F32, dw, 4, 2, 2, 1, 1);
    tcrt_params p = conv_p(1, 1, 1, 1, 0, 0, 0, 0, 0);
    ck_assert_int_eq(tcrt_ref_conv2d_backprop_filter(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(dw, (float[]){37, 47, 67, 77}, 4, 0);
    /* stride 2, SAME (pad bottom/right 1): one dy per output 2x2 = 1,2,3,4,
     * windows start at (0,0),(0,2),(2,0),(2,2); taps at row/col 3 are
     * padding.  dw(0,0) = 1*1 + 3*2 + 7*3 + 9*4 = 64, dw(0,1) = 2*1 + 8*3
     * = 26, dw(1,0) = 4*1 + 6*2 = 16, dw(1,1) = 5*1 (the rest is padding). */
    out = ten(TCRT_F32, dw, 4, 2, 2, 1, 1);
    p = conv_p(2, 2, 1, 1, 0, 0, 1, 1, 0);
    ck_assert_int_eq(tcrt_ref_conv2d_backprop_filter(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(dw, (float[]){64, 26, 16, 5}, 4, 0);
}
END_TEST

START_TEST(bpf_depthwise_hand)
{
    /* x [1,2,2,2]: channel 0 = 1,2,3,4, channel 1 = 10,20,30,40 over the 4
     * pixels; 1x1 filter, M = 2; dy channel c*2+m at pixel q is 1 for m = 0
     * and q+1 for m = 1.  dw[0,0,c,m] = sum_q x[q,c] * dy[q,c*2+m]:
     * (0,0) = 1+2+3+4 = 10, (0,1) = 1+4+9+16 = 30, (1,0) = 100, (1,1) = 300. */
    float x[8] = {1, 10, 2, 20, 3, 30, 4, 40};
    float dy[16] = {1, 1, 1, 1, 1, 2, 1, 2, 1, 3, 1, 3, 1, 4, 1, 4}, dw[4];
    tcrt_tensor in[2] = {ten(TCRT_F32, x, 4, 1, 2, 2, 2), ten(TCRT_F32, dy, 4, 1, 2, 2, 4)};
    tcrt_tensor out = ten(TCRT_F32, dw, 4, 1, 1, 2, 2);
    tcrt_params p = conv_p(1, 1, 1, 1, 0, 0, 0, 0, 1);
    ck_assert_int_eq(tcrt_ref_conv2d_backprop_filter(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(dw, (float[]){10, 30, 100, 300}, 4, 0);
}
END_TEST

/* One conv filter-gradient check: forward conv2d f64 from ref_conv.c. */
static void conv_fd(int N, int H, int W, int C, int KH, int KW, int WI, int WO, tcrt_params p)
{
    bool dwise = p.i[TCRT_CONV_DEPTHWISE] != 0;
    int64_t OH = win_out(H, KH, p.i[TCRT_CONV_SH], p.i[TCRT_CONV_DH], p.i[TCRT_CONV_PT], p.i[TCRT_CONV_PB]);
    int64_t OW = win_out(W, KW, p.i[TCRT_CONV_SW], p.i[TCRT_CONV_DW], p.i[TCRT_CONV_PL], p.i[TCRT_CONV_PR]);
    int64_t O = dwise ? (int64_t)C * WO : WO;
    int64_t nx = (int64_t)N * H * W * C, nw = (int64_t)KH * KW * WI * WO, ny = N * OH * OW * O;
    ck_assert(nx <= BIG && nw <= BIG && ny <= BIG && OH > 0 && OW > 0);
    static double x[BIG], w[BIG], r[BIG], y[BIG], g[BIG];
    for (int64_t i = 0; i < nx; i++)
        x[i] = rnd();
    for (int64_t i = 0; i < nw; i++)
        w[i] = rnd();
    for (int64_t i = 0; i < ny; i++)
        r[i] = rnd();
    int64_t xd[4] = {N, H, W, C}, wd[4] = {KH, KW, WI, WO}, yd[4] = {N, OH, OW, O};
    tcrt_tensor bin[2] = {ten_dims(TCRT_F64, x, 4, xd), ten_dims(TCRT_F64, r, 4, yd)};
    tcrt_tensor gout = ten_dims(TCRT_F64, g, 4, wd);
    ck_assert_int_eq(tcrt_ref_conv2d_backprop_filter(bin, 2, &gout, 1, &p), TCRT_OK);
    tcrt_tensor fin[2] = {ten_dims(TCRT_F64, x, 4, xd), ten_dims(TCRT_F64, w, 4, wd)};
    tcrt_tensor fout = ten_dims(TCRT_F64, y, 4, yd);
    for (int64_t i = 0; i < nw; i++) {
        double w0 = w[i];
        w[i] = w0 + FD_H;
        ck_assert_int_eq(tcrt_ref_conv2d(fin, 2, &fout, 1, &p), TCRT_OK);
        double lp = dot(r, y, ny);
        w[i] = w0 - FD_H;
        ck_assert_int_eq(tcrt_ref_conv2d(fin, 2, &fout, 1, &p), TCRT_OK);
        double lm = dot(r, y, ny);
        w[i] = w0;
        double fd = (lp - lm) / (2 * FD_H);
        ck_assert_msg(fabs(fd - g[i]) <= FD_TOL * (1 + fabs(fd)), "dw[%lld]: kernel %.12g, difference %.12g",
                      (long long)i, g[i], fd);
    }
}

START_TEST(bpf_finite_differences)
{
    /* SAME, stride (2,1), odd sizes, batch 2: OH = 3 with pads 1/1, OW = 7 with 0/1 */
    conv_fd(2, 5, 7, 3, 3, 2, 3, 4, conv_p(2, 1, 1, 1, 1, 0, 1, 1, 0));
    /* VALID, dilation 2: effective 3x5 filter on 6x5 -> 4x1 */
    conv_fd(1, 6, 5, 2, 2, 3, 2, 3, conv_p(1, 1, 2, 2, 0, 0, 0, 0, 0));
    /* grouped: C = 4 = 2 groups of 2, 6 outputs (3 per group), stride 2, pads 1 */
    conv_fd(1, 5, 5, 4, 3, 3, 2, 6, conv_p(2, 2, 1, 1, 1, 1, 1, 1, 0));
    /* depthwise, M = 2, dilation 2, pads 2 */
    conv_fd(2, 4, 5, 3, 3, 3, 3, 2, conv_p(1, 1, 2, 2, 2, 2, 2, 2, 1));
    /* depthwise with asymmetric strides and padding */
    conv_fd(1, 7, 6, 2, 2, 3, 2, 1, conv_p(3, 2, 1, 1, 0, 1, 1, 1, 1));
    /* 70 output channels: more than one accumulation chunk */
    conv_fd(1, 3, 2, 2, 2, 1, 2, 70, conv_p(1, 1, 1, 1, 0, 0, 0, 0, 0));
}
END_TEST

START_TEST(bpf_errors)
{
    float x[9] = {0}, dy[4] = {0}, dw[4];
    tcrt_tensor in[2] = {ten(TCRT_F32, x, 4, 1, 3, 3, 1), ten(TCRT_F32, dy, 4, 1, 2, 2, 1)};
    tcrt_tensor out = ten(TCRT_F32, dw, 4, 2, 2, 2, 1); /* 2 input channels, x has 1 */
    tcrt_params p = conv_p(1, 1, 1, 1, 0, 0, 0, 0, 0);
    ck_assert_int_eq(tcrt_ref_conv2d_backprop_filter(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
    out = ten(TCRT_F32, dw, 4, 2, 2, 1, 1);
    p.i[TCRT_CONV_SH] = 0;
    ck_assert_int_eq(tcrt_ref_conv2d_backprop_filter(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
    p = conv_p(1, 1, 1, 1, 0, 0, 0, 0, 0);
    p.i[TCRT_CONV_ACT] = TCRT_ACT_RELU;
    ck_assert_int_eq(tcrt_ref_conv2d_backprop_filter(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
    p.i[TCRT_CONV_ACT] = 0;
    in[1].dtype = TCRT_F64;
    ck_assert_int_eq(tcrt_ref_conv2d_backprop_filter(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
}
END_TEST

/* ---- maxpool_grad ---- */

START_TEST(maxpool_grad_hand)
{
    /* x = 1..9 (3x3), 2x2 window stride 1 VALID: maxima at 5 (idx 4), 6 (5),
     * 8 (7), 9 (8); dy = 1,2,3,4 lands there. */
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, dy[4] = {1, 2, 3, 4}, dx[9];
    tcrt_tensor in[2] = {ten(TCRT_F32, x, 4, 1, 3, 3, 1), ten(TCRT_F32, dy, 4, 1, 2, 2, 1)};
    tcrt_tensor out = ten(TCRT_F32, dx, 4, 1, 3, 3, 1);
    tcrt_params p = pool_p(2, 2, 1, 1, 0, 0, 0, 0);
    ck_assert_int_eq(tcrt_ref_maxpool_grad(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(dx, (float[]){0, 0, 0, 0, 1, 2, 0, 3, 4}, 9, 0);
    /* ties: x = 1 3 / 3 1, one 2x2 window: the first maximum in row-major
     * order (index 1) takes all of dy = 7; an all-equal window: index 0. */
    float t[4] = {1, 3, 3, 1}, g[1] = {7}, dt[4];
    in[0] = ten(TCRT_F32, t, 4, 1, 2, 2, 1);
    in[1] = ten(TCRT_F32, g, 4, 1, 1, 1, 1);
    out = ten(TCRT_F32, dt, 4, 1, 2, 2, 1);
    ck_assert_int_eq(tcrt_ref_maxpool_grad(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(dt, (float[]){0, 7, 0, 0}, 4, 0);
    float e[4] = {5, 5, 5, 5};
    in[0].data = e;
    ck_assert_int_eq(tcrt_ref_maxpool_grad(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(dt, (float[]){7, 0, 0, 0}, 4, 0);
    /* negative values with SAME padding: x = -3 -1 (1x2), window 1x3 stride
     * 1, pads left/right 1: both windows' maximum is -1 (padding never
     * wins), so dx = 0, 2+5. */
    float n2[2] = {-3, -1}, g2[2] = {2, 5}, d2[2];
    in[0] = ten(TCRT_F32, n2, 4, 1, 1, 2, 1);
    in[1] = ten(TCRT_F32, g2, 4, 1, 1, 2, 1);
    out = ten(TCRT_F32, d2, 4, 1, 1, 2, 1);
    p = pool_p(1, 3, 1, 1, 0, 1, 0, 1);
    ck_assert_int_eq(tcrt_ref_maxpool_grad(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(d2, (float[]){0, 7}, 2, 0);
}
END_TEST

/* x: a random permutation of 0.01 * k, so maxima are 0.01 apart (>> h). */
static void pool_fd(bool is_max, int N, int H, int W, int C, tcrt_params p)
{
    int64_t OH = win_out(H, p.i[TCRT_POOL_KH], p.i[TCRT_POOL_SH], 1, p.i[TCRT_POOL_PT], p.i[TCRT_POOL_PB]);
    int64_t OW = win_out(W, p.i[TCRT_POOL_KW], p.i[TCRT_POOL_SW], 1, p.i[TCRT_POOL_PL], p.i[TCRT_POOL_PR]);
    int64_t nx = (int64_t)N * H * W * C, ny = N * OH * OW * C;
    ck_assert(nx <= BIG && ny <= BIG && OH > 0 && OW > 0);
    static double x[BIG], r[BIG], y[BIG], g[BIG];
    for (int64_t i = 0; i < nx; i++)
        x[i] = 0.01 * (double)i;
    for (int64_t i = nx - 1; i > 0; i--) {
        int64_t j = (int64_t)((rnd() + 1) / 2 * (double)(i + 1));
        j = j > i ? i : j;
        double t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
    for (int64_t i = 0; i < ny; i++)
        r[i] = rnd();
    int64_t xd[4] = {N, H, W, C}, yd[4] = {N, OH, OW, C};
    tcrt_tensor gout = ten_dims(TCRT_F64, g, 4, xd);
    if (is_max) {
        tcrt_tensor bin[2] = {ten_dims(TCRT_F64, x, 4, xd), ten_dims(TCRT_F64, r, 4, yd)};
        ck_assert_int_eq(tcrt_ref_maxpool_grad(bin, 2, &gout, 1, &p), TCRT_OK);
    } else {
        tcrt_tensor bin[1] = {ten_dims(TCRT_F64, r, 4, yd)};
        ck_assert_int_eq(tcrt_ref_avgpool_grad(bin, 1, &gout, 1, &p), TCRT_OK);
    }
    tcrt_tensor fin = ten_dims(TCRT_F64, x, 4, xd), fout = ten_dims(TCRT_F64, y, 4, yd);
    for (int64_t i = 0; i < nx; i++) {
        double x0 = x[i];
        x[i] = x0 + FD_H;
        ck_assert_int_eq((is_max ? tcrt_ref_maxpool : tcrt_ref_avgpool)(&fin, 1, &fout, 1, &p), TCRT_OK);
        double lp = dot(r, y, ny);
        x[i] = x0 - FD_H;
        ck_assert_int_eq((is_max ? tcrt_ref_maxpool : tcrt_ref_avgpool)(&fin, 1, &fout, 1, &p), TCRT_OK);
        double lm = dot(r, y, ny);
        x[i] = x0;
        double fd = (lp - lm) / (2 * FD_H);
        ck_assert_msg(fabs(fd - g[i]) <= FD_TOL * (1 + fabs(fd)),
                      "%s dx[%lld]: kernel %.12g, difference %.12g", is_max ? "max" : "avg", (long long)i,
                      g[i], fd);
    }
}

START_TEST(pool_grad_finite_differences)
{
    for (int m = 0; m < 2; m++) {
        /* 3x3 stride 2 SAME on 5x7: out 3x4, pads 1/1 and 1/1 */
        pool_fd(m, 2, 5, 7, 3, pool_p(3, 3, 2, 2, 1, 1, 1, 1));
        /* 2x2 stride 1 VALID on odd 3x5 */
        pool_fd(m, 1, 3, 5, 2, pool_p(2, 2, 1, 1, 0, 0, 0, 0));
        /* 3x2 window, strides (1,2), explicit asymmetric pads */
        pool_fd(m, 1, 4, 5, 1, pool_p(3, 2, 1, 2, 1, 0, 1, 1));
        /* overlapping 3x3 windows with stride 1 (each x in up to 9 windows) */
        pool_fd(m, 1, 5, 5, 2, pool_p(3, 3, 1, 1, 1, 1, 1, 1));
    }
}
END_TEST

/* ---- avgpool_grad ---- */

START_TEST(avgpool_grad_hand)
{
    /* 3x3 input, 2x2 window stride 2 SAME (pads bottom/right 1): windows
     * (0,0) 4 taps, (0,1) 2 taps (col 2), (1,0) 2 taps (row 2), (1,1) 1 tap.
     * dy = 4,2,6,5 -> 1 to rows/cols 0-1, 1 to (0,2),(1,2), 3 to (2,0),(2,1),
     * 5 to (2,2). */
    float dy[4] = {4, 2, 6, 5}, dx[9];
    tcrt_tensor in[1] = {ten(TCRT_F32, dy, 4, 1, 2, 2, 1)};
    tcrt_tensor out = ten(TCRT_F32, dx, 4, 1, 3, 3, 1);
    tcrt_params p = pool_p(2, 2, 2, 2, 0, 0, 1, 1);
    ck_assert_int_eq(tcrt_ref_avgpool_grad(in, 1, &out, 1, &p), TCRT_OK);
    expect_f(dx, (float[]){1, 1, 1, 1, 1, 1, 3, 3, 5}, 9, 0);
    /* overlapping: 1x3 input, window 1x2 stride 1 VALID: dy = 2,4 ->
     * dx = 1, 1+2, 2 */
    float d2[2] = {2, 4}, x2[3];
    in[0] = ten(TCRT_F32, d2, 4, 1, 1, 2, 1);
    out = ten(TCRT_F32, x2, 4, 1, 1, 3, 1);
    p = pool_p(1, 2, 1, 1, 0, 0, 0, 0);
    ck_assert_int_eq(tcrt_ref_avgpool_grad(in, 1, &out, 1, &p), TCRT_OK);
    expect_f(x2, (float[]){1, 3, 2}, 3, 0);
}
END_TEST

START_TEST(pool_grad_errors)
{
    float x[9] = {0}, dy[4] = {0}, dx[9];
    tcrt_tensor in[2] = {ten(TCRT_F32, x, 4, 1, 3, 3, 1), ten(TCRT_F32, dy, 4, 1, 2, 2, 2)};
    tcrt_tensor out = ten(TCRT_F32, dx, 4, 1, 3, 3, 1);
    tcrt_params p = pool_p(2, 2, 1, 1, 0, 0, 0, 0);
    /* dy has 2 channels, x 1 */
    ck_assert_int_eq(tcrt_ref_maxpool_grad(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
    ck_assert_int_eq(tcrt_ref_avgpool_grad(&in[1], 1, &out, 1, &p), TCRT_ERR_RUNTIME);
    in[1] = ten(TCRT_F32, dy, 4, 1, 2, 2, 1);
    out = ten(TCRT_F32, dx, 4, 1, 3, 2, 1); /* dx not x's shape */
    ck_assert_int_eq(tcrt_ref_maxpool_grad(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
    out = ten(TCRT_F32, dx, 4, 1, 3, 3, 1);
    p.i[TCRT_POOL_KW] = 0;
    ck_assert_int_eq(tcrt_ref_maxpool_grad(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
    ck_assert_int_eq(tcrt_ref_avgpool_grad(&in[1], 1, &out, 1, &p), TCRT_ERR_RUNTIME);
    p.i[TCRT_POOL_KW] = 2;
    in[1].dtype = TCRT_I32;
    ck_assert_int_eq(tcrt_ref_maxpool_grad(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
}
END_TEST

/* ---- scatter_add ---- */

START_TEST(scatter_add_hand)
{
    /* updates [[1,2],[3,4],[5,6],[7,8]], indices 2,0,2,1 -> out [3,2]:
     * row 0 = [3,4], row 1 = [7,8], row 2 = [1+5, 2+6] = [6,8]. */
    float u[8] = {1, 2, 3, 4, 5, 6, 7, 8}, o[6];
    int32_t ix[4] = {2, 0, 2, 1};
    tcrt_tensor in[2] = {ten(TCRT_F32, u, 2, 4, 2), ten(TCRT_I32, ix, 1, 4)};
    tcrt_tensor out = ten(TCRT_F32, o, 2, 3, 2);
    tcrt_params p = {{0}, {0}};
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(o, (float[]){3, 4, 7, 8, 6, 8}, 6, 0);
    /* int64 indices of rank 2 ([2,2]), int32 data, 4 rows (row 3 untouched
     * stays 0): same pairs -> same sums */
    int32_t ui[8] = {1, 2, 3, 4, 5, 6, 7, 8}, oi[8];
    int64_t ix64[4] = {2, 0, 2, 1};
    in[0] = ten(TCRT_I32, ui, 3, 2, 2, 2);
    in[1] = ten(TCRT_I64, ix64, 2, 2, 2);
    out = ten(TCRT_I32, oi, 2, 4, 2);
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_OK);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(oi[i], ((int32_t[]){3, 4, 7, 8, 6, 8, 0, 0})[i]);
    /* rank-1 output (scalar rows): 1-D segment sum of 1,2,3,4 into 2 */
    float s[4] = {1, 2, 3, 4}, so[2];
    int32_t sx[4] = {1, 1, 0, 1};
    in[0] = ten(TCRT_F32, s, 1, 4);
    in[1] = ten(TCRT_I32, sx, 1, 4);
    out = ten(TCRT_F32, so, 1, 2);
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(so, (float[]){3, 7}, 2, 0);
    /* negative index: dropped with TCRT_SCAT_DROP_NEG (1+4 = 5 in row 1) */
    sx[1] = -1;
    p.i[TCRT_SCAT_DROP_NEG] = 1;
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(so, (float[]){3, 5}, 2, 0);
}
END_TEST

START_TEST(scatter_add_errors)
{
    float u[4] = {1, 2, 3, 4}, o[2] = {-9, -9};
    int32_t ix[4] = {0, 1, 2, 0}; /* 2 is out of range for 2 rows */
    tcrt_tensor in[2] = {ten(TCRT_F32, u, 1, 4), ten(TCRT_I32, ix, 1, 4)};
    tcrt_tensor out = ten(TCRT_F32, o, 1, 2);
    tcrt_params p = {{0}, {0}};
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_ERR_ARG);
    expect_f(o, (float[]){-9, -9}, 2, 0); /* nothing written */
    ix[2] = -1;
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_ERR_ARG);
    expect_f(o, (float[]){-9, -9}, 2, 0);
    p.i[TCRT_SCAT_DROP_NEG] = 1;
    ix[0] = 2; /* too large is an error even when dropping negatives */
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_ERR_ARG);
    expect_f(o, (float[]){-9, -9}, 2, 0);
    /* shape mismatch and bad dtypes: TCRT_ERR_RUNTIME */
    ix[0] = 0;
    in[1] = ten(TCRT_I32, ix, 1, 3);
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
    in[1] = ten(TCRT_F32, u, 1, 4);
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
    uint8_t b[4], bo[2];
    int32_t ok[4] = {0, 0, 1, 1};
    in[0] = ten(TCRT_U8, b, 1, 4);
    in[1] = ten(TCRT_I32, ok, 1, 4);
    out = ten(TCRT_U8, bo, 1, 2);
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
}
END_TEST

/* scatter_add against gather (axis 0): L(params) = sum(r * gather(params, idx)). */
static void gather_fd(int rows, int rowlen, int n_idx, bool i64)
{
    static double prm[BIG], r[BIG], y[BIG], g[BIG];
    int32_t ix32[64];
    int64_t ix64[64];
    ck_assert(n_idx <= 64 && rows * rowlen <= BIG && n_idx * rowlen <= BIG);
    for (int i = 0; i < n_idx; i++) {
        int v = (int)((rnd() + 1) / 2 * rows);
        v = v >= rows ? rows - 1 : v;
        ix32[i] = v;
        ix64[i] = v;
    }
    for (int i = 0; i < rows * rowlen; i++)
        prm[i] = rnd();
    for (int i = 0; i < n_idx * rowlen; i++)
        r[i] = rnd();
    tcrt_tensor ixt = i64 ? ten(TCRT_I64, ix64, 1, n_idx) : ten(TCRT_I32, ix32, 1, n_idx);
    tcrt_tensor bin[2] = {ten(TCRT_F64, r, 2, n_idx, rowlen), ixt};
    tcrt_tensor gout = ten(TCRT_F64, g, 2, rows, rowlen);
    tcrt_params p = {{0}, {0}};
    ck_assert_int_eq(tcrt_ref_scatter_add(bin, 2, &gout, 1, &p), TCRT_OK);
    tcrt_tensor fin[2] = {ten(TCRT_F64, prm, 2, rows, rowlen), ixt};
    tcrt_tensor fout = ten(TCRT_F64, y, 2, n_idx, rowlen);
    tcrt_params gp = {{0}, {0}};
    for (int i = 0; i < rows * rowlen; i++) {
        double p0 = prm[i];
        prm[i] = p0 + FD_H;
        ck_assert_int_eq(tcrt_ref_gather(fin, 2, &fout, 1, &gp), TCRT_OK);
        double lp = dot(r, y, n_idx * rowlen);
        prm[i] = p0 - FD_H;
        ck_assert_int_eq(tcrt_ref_gather(fin, 2, &fout, 1, &gp), TCRT_OK);
        double lm = dot(r, y, n_idx * rowlen);
        prm[i] = p0;
        double fd = (lp - lm) / (2 * FD_H);
        ck_assert_msg(fabs(fd - g[i]) <= FD_TOL * (1 + fabs(fd)),
                      "d params[%d]: kernel %.12g, difference %.12g", i, g[i], fd);
    }
}

START_TEST(scatter_add_vs_gather)
{
    gather_fd(7, 3, 11, false); /* repeated indices, some rows never hit */
    gather_fd(5, 1, 5, true);
    gather_fd(3, 13, 40, false);
    /* f64 hand check: two hits on row 0 sum exactly */
    double u[2] = {0.25, 0.5}, o[1];
    int32_t ix[2] = {0, 0};
    tcrt_tensor in[2] = {ten(TCRT_F64, u, 1, 2), ten(TCRT_I32, ix, 1, 2)};
    tcrt_tensor out = ten(TCRT_F64, o, 1, 1);
    tcrt_params p = {{0}, {0}};
    ck_assert_int_eq(tcrt_ref_scatter_add(in, 2, &out, 1, &p), TCRT_OK);
    expect_d(o, (double[]){0.75}, 1, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_grad_kernels");
    TCase *tc = tcase_create("ref_grad");
    tcase_add_test(tc, bpf_hand);
    tcase_add_test(tc, bpf_depthwise_hand);
    tcase_add_test(tc, bpf_finite_differences);
    tcase_add_test(tc, bpf_errors);
    tcase_add_test(tc, maxpool_grad_hand);
    tcase_add_test(tc, avgpool_grad_hand);
    tcase_add_test(tc, pool_grad_finite_differences);
    tcase_add_test(tc, pool_grad_errors);
    tcase_add_test(tc, scatter_add_hand);
    tcase_add_test(tc, scatter_add_errors);
    tcase_add_test(tc, scatter_add_vs_gather);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
