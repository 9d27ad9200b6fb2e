/* test_kernels.c - Check suite for the reference kernels (runtime/kernels/ref_*.c).
 *
 * Every expected value is derived by hand in the comment next to it (small
 * inputs chosen so the arithmetic is easy to follow), or taken from an
 * independent reference (TF.js's own resizeBilinear test).  Error cases check
 * that bad values give TCRT_ERR_RUNTIME without writing out of bounds.
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

static void expect_f(const float *got, const float *want, int n, float tol)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabsf(got[i] - want[i]) <= tol, "[%d]: got %.7g want %.7g", i, got[i], want[i]);
}

static void expect_i32(const int32_t *got, const int32_t *want, int n)
{
    for (int i = 0; i < n; i++)
        ck_assert_msg(got[i] == want[i], "[%d]: got %d want %d", i, got[i], want[i]);
}

/* x = 1..9 as a 1x3x3x1 image:  1 2 3 / 4 5 6 / 7 8 9
 * w = 2x2x1x1:  w[0,0]=1 w[0,1]=2 / w[1,0]=3 w[1,1]=4 */
static float X9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static float W4[4] = {1, 2, 3, 4};

static tcrt_params conv_p(int s, int d, int pt, int pl, int pb, int pr)
{
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = s;
    p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = d;
    p.i[TCRT_CONV_PT] = pt;
    p.i[TCRT_CONV_PL] = pl;
    p.i[TCRT_CONV_PB] = pb;
    p.i[TCRT_CONV_PR] = pr;
    return p;
}

START_TEST(conv_valid_same)
{
    tcrt_tensor in[3] = {ten(TCRT_F32, X9, 4, 1, 3, 3, 1), ten(TCRT_F32, W4, 4, 2, 2, 1, 1)};
    /* VALID: (0,0)=1*1+2*2+4*3+5*4=37, (0,1)=2+6+15+24=47, (1,0)=4+10+21+32=67, (1,1)=5+12+24+36=77 */
    float y[9];
    tcrt_tensor out = ten(TCRT_F32, y, 4, 1, 2, 2, 1);
    tcrt_params p = conv_p(1, 1, 0, 0, 0, 0);
    ck_assert_int_eq(tcrt_ref_conv2d(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){37, 47, 67, 77}, 4, 0);
    /* SAME, stride 1: total pad 1 -> top/left 0, bottom/right 1.
     * (0,2)=3*1+6*3=21, (1,2)=6*1+9*3=33, (2,0)=7*1+8*2=23, (2,1)=8+18=26, (2,2)=9 */
    out = ten(TCRT_F32, y, 4, 1, 3, 3, 1);
    p = conv_p(1, 1, 0, 0, 1, 1);
    ck_assert_int_eq(tcrt_ref_conv2d(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){37, 47, 21, 67, 77, 33, 23, 26, 9}, 9, 0);
    /* stride 2 SAME: out 2x2, total pad (2-1)*2+2-3 = 1 -> bottom/right.
     * taps start at rows/cols 0 and 2: 37, 21, 23, 9 */
    out = ten(TCRT_F32, y, 4, 1, 2, 2, 1);
    p = conv_p(2, 1, 0, 0, 1, 1);
    ck_assert_int_eq(tcrt_ref_conv2d(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){37, 21, 23, 9}, 4, 0);
    /* stride 2 VALID: one output, 37 */
    out = ten(TCRT_F32, y, 4, 1, 1, 1, 1);
    p = conv_p(2, 1, 0, 0, 0, 0);
    ck_assert_int_eq(tcrt_ref_conv2d(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){37}, 1, 0);
    /* dilation 2 VALID: taps (0,0),(0,2),(2,0),(2,2): 1*1+3*2+7*3+9*4 = 64 */
    p = conv_p(1, 2, 0, 0, 0, 0);
    ck_assert_int_eq(tcrt_ref_conv2d(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){64}, 1, 0);
    /* bias -30 + relu6: VALID 37-30=7, 47-30=17, 67-30=37, 77-30=47: all clip to 6 */
    float b1[1] = {-30};
    in[2] = ten(TCRT_F32, b1, 1, 1);
    out = ten(TCRT_F32, y, 4, 1, 2, 2, 1);
    p = conv_p(1, 1, 0, 0, 0, 0);
    p.i[TCRT_CONV_ACT] = TCRT_ACT_RELU6;
    ck_assert_int_eq(tcrt_ref_conv2d(in, 3, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){6, 6, 6, 6}, 4, 0);
    /* leaky alpha 0.5 with bias -57: 37-57=-20 -> -10; 47-57=-10 -> -5; 67-57=10; 77-57=20 */
    b1[0] = -57;
    p.i[TCRT_CONV_ACT] = TCRT_ACT_LEAKY;
    p.f[0] = 0.5;
    ck_assert_int_eq(tcrt_ref_conv2d(in, 3, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){-10, -5, 10, 20}, 4, 0);
}
END_TEST

START_TEST(conv_depthwise)
{
    /* 1x1 kernel, 2 channels, multiplier 2: x = [2, 3]; w[0,0,c,m] = c0: [1, 10], c1: [100, 1000].
     * output channel c*2+m: [2*1, 2*10, 3*100, 3*1000] = [2, 20, 300, 3000] */
    float x[2] = {2, 3}, w[4] = {1, 10, 100, 1000}, y[4];
    tcrt_tensor in[2] = {ten(TCRT_F32, x, 4, 1, 1, 1, 2), ten(TCRT_F32, w, 4, 1, 1, 2, 2)};
    tcrt_tensor out = ten(TCRT_F32, y, 4, 1, 1, 1, 4);
    tcrt_params p = conv_p(1, 1, 0, 0, 0, 0);
    p.i[TCRT_CONV_DEPTHWISE] = 1;
    ck_assert_int_eq(tcrt_ref_conv2d(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){2, 20, 300, 3000}, 4, 0);
    /* spatial: x 1x2x2x1 = [1,2,3,4], w 2x2x1x2: m0 all ones, m1 = [1,0,0,-1] (w[kh,kw,0,m]).
     * VALID: m0 = 1+2+3+4 = 10, m1 = 1*1 + 4*(-1) = -3 */
    float x2[4] = {1, 2, 3, 4}, w2[8] = {1, 1, 1, 0, 1, 0, 1, -1};
    in[0] = ten(TCRT_F32, x2, 4, 1, 2, 2, 1);
    in[1] = ten(TCRT_F32, w2, 4, 2, 2, 1, 2);
    out = ten(TCRT_F32, y, 4, 1, 1, 1, 2);
    ck_assert_int_eq(tcrt_ref_conv2d(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){10, -3}, 2, 0);
    /* grouped (not depthwise): x [2,3] (C=2), w 1x1x1x2 = [10,100] (CI=1 -> 2 groups, O=2):
     * out[0] = x[0]*10 = 20 (group 0), out[1] = x[1]*100 = 300 (group 1) */
    float w3[2] = {10, 100};
    in[0] = ten(TCRT_F32, x, 4, 1, 1, 1, 2);
    in[1] = ten(TCRT_F32, w3, 4, 1, 1, 1, 2);
    out = ten(TCRT_F32, y, 4, 1, 1, 1, 2);
    p.i[TCRT_CONV_DEPTHWISE] = 0;
    ck_assert_int_eq(tcrt_ref_conv2d(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){20, 300}, 2, 0);
}
END_TEST

START_TEST(conv_transpose)
{
    /* Forward conv: x 1x3x3x1, w 2x2, stride 2 SAME (pads bottom/right 1) -> dy 1x2x2x1.
     * dy = [1,2,3,4] scatters w*dy to (2*oh+kh, 2*ow+kw) inside 3x3:
     *   dy(0,0)=1: (0,0)+=1 (0,1)+=2 (1,0)+=3 (1,1)+=4
     *   dy(0,1)=2: (0,2)+=2 (1,2)+=6
     *   dy(1,0)=3: (2,0)+=3 (2,1)+=6
     *   dy(1,1)=4: (2,2)+=4
     * -> [[1,2,2],[3,4,6],[3,6,4]].  Adjoint check: conv(x)=[37,21,23,9] . dy = 184
     * and x . result = 1+4+6+12+20+36+21+48+36 = 184. */
    float dy[4] = {1, 2, 3, 4}, y[9];
    tcrt_tensor in[2] = {ten(TCRT_F32, dy, 4, 1, 2, 2, 1), ten(TCRT_F32, W4, 4, 2, 2, 1, 1)};
    tcrt_tensor out = ten(TCRT_F32, y, 4, 1, 3, 3, 1);
    tcrt_params p = conv_p(2, 1, 0, 0, 1, 1);
    ck_assert_int_eq(tcrt_ref_conv2d_transpose(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){1, 2, 2, 3, 4, 6, 3, 6, 4}, 9, 0);
    /* stride 1 VALID, dy 2x2 = [1,0,0,0] -> the kernel itself at the top-left: [1,2,0,3,4,0,0,0,0] */
    float dy1[4] = {1, 0, 0, 0};
    in[0].data = dy1;
    p = conv_p(1, 1, 0, 0, 0, 0);
    ck_assert_int_eq(tcrt_ref_conv2d_transpose(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){1, 2, 0, 3, 4, 0, 0, 0, 0}, 9, 0);
}
END_TEST

START_TEST(pools)
{
    tcrt_tensor in = ten(TCRT_F32, X9, 4, 1, 3, 3, 1);
    float y[9];
    tcrt_tensor out = ten(TCRT_F32, y, 4, 1, 2, 2, 1);
    tcrt_params p = {{0}, {0}};
    /* 2x2 stride 2 SAME (pads bottom/right 1): windows {1,2,4,5} {3,6} {7,8} {9} */
    p.i[TCRT_POOL_KH] = p.i[TCRT_POOL_KW] = 2;
    p.i[TCRT_POOL_SH] = p.i[TCRT_POOL_SW] = 2;
    p.i[TCRT_POOL_PB] = p.i[TCRT_POOL_PR] = 1;
    ck_assert_int_eq(tcrt_ref_maxpool(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){5, 6, 8, 9}, 4, 0);
    /* average excludes padding: 12/4=3, 9/2=4.5, 15/2=7.5, 9/1=9 */
    ck_assert_int_eq(tcrt_ref_avgpool(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){3, 4.5f, 7.5f, 9}, 4, 0);
    /* 3x3 stride 1 SAME (pads 1 all round): corner (0,0) = avg{1,2,4,5} = 3, centre = 45/9 = 5,
     * edge (0,1) = avg{1,2,3,4,5,6} = 3.5 */
    p.i[TCRT_POOL_KH] = p.i[TCRT_POOL_KW] = 3;
    p.i[TCRT_POOL_SH] = p.i[TCRT_POOL_SW] = 1;
    p.i[TCRT_POOL_PT] = p.i[TCRT_POOL_PL] = 1;
    out = ten(TCRT_F32, y, 4, 1, 3, 3, 1);
    ck_assert_int_eq(tcrt_ref_avgpool(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert_float_eq(y[0], 3);
    ck_assert_float_eq(y[1], 3.5f);
    ck_assert_float_eq(y[4], 5);
    ck_assert_int_eq(tcrt_ref_maxpool(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){5, 6, 6, 8, 9, 9, 8, 9, 9}, 9, 0);
}
END_TEST

START_TEST(reductions)
{
    /* x[i,j,k] = 12i + 4j + k, shape 2x3x4 */
    int32_t x[24];
    for (int i = 0; i < 24; i++)
        x[i] = i;
    tcrt_tensor in = ten(TCRT_I32, x, 3, 2, 3, 4);
    int32_t y[8];
    tcrt_params p = {{0}, {0}};
    /* sum over axes {0,2} (mask 5): sum_i sum_k (12i+4j+k) = 8*4j + 4*12 + 2*6 = 32j + 60 */
    p.i[0] = 5;
    tcrt_tensor out = ten(TCRT_I32, y, 1, 3);
    ck_assert_int_eq(tcrt_ref_reduce_sum(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){60, 92, 124}, 3);
    /* keepdims layout [1,3,1] gives the same data */
    out = ten(TCRT_I32, y, 3, 1, 3, 1);
    ck_assert_int_eq(tcrt_ref_reduce_sum(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){60, 92, 124}, 3);
    /* max over axis 1 (mask 2): 12i + 8 + k */
    p.i[0] = 2;
    out = ten(TCRT_I32, y, 2, 2, 4);
    ck_assert_int_eq(tcrt_ref_reduce_max(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){8, 9, 10, 11, 20, 21, 22, 23}, 8);
    /* min over all axes = 0 */
    p.i[0] = 7;
    out = ten(TCRT_I32, y, 0);
    ck_assert_int_eq(tcrt_ref_reduce_min(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert_int_eq(y[0], 0);
    /* prod over axis 1 of [[1,2,3],[4,5,6]] = [6, 120] (float) */
    float fx[6] = {1, 2, 3, 4, 5, 6}, fy[2];
    in = ten(TCRT_F32, fx, 2, 2, 3);
    out = ten(TCRT_F32, fy, 1, 2);
    p.i[0] = 2;
    ck_assert_int_eq(tcrt_ref_reduce_prod(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(fy, (float[]){6, 120}, 2, 0);
    /* float32 sum accumulates in double: 1e8 + 1 - 1e8 = 1 (a float accumulator gives 0,
     * float spacing at 1e8 is 8) */
    float big[3] = {1e8f, 1, -1e8f};
    in = ten(TCRT_F32, big, 1, 3);
    out = ten(TCRT_F32, fy, 0);
    p.i[0] = 1;
    ck_assert_int_eq(tcrt_ref_reduce_sum(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert_float_eq(fy[0], 1);
    /* uint8 sum wraps like TF: 200 + 100 = 300 mod 256 = 44 */
    uint8_t u[2] = {200, 100}, uy;
    in = ten(TCRT_U8, u, 1, 2);
    out = ten(TCRT_U8, &uy, 0);
    ck_assert_int_eq(tcrt_ref_reduce_sum(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert_int_eq(uy, 44);
    /* int64 max */
    int64_t l[3] = {-5, 1LL << 50, 7}, ly;
    in = ten(TCRT_I64, l, 1, 3);
    out = ten(TCRT_I64, &ly, 0);
    ck_assert_int_eq(tcrt_ref_reduce_max(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert(ly == 1LL << 50);
    /* axis bit beyond the rank -> runtime error; dtype mismatch -> runtime error */
    p.i[0] = 2;
    ck_assert_int_eq(tcrt_ref_reduce_max(&in, 1, &out, 1, &p), TCRT_ERR_RUNTIME);
    p.i[0] = 1;
    out.dtype = TCRT_I32;
    ck_assert_int_eq(tcrt_ref_reduce_max(&in, 1, &out, 1, &p), TCRT_ERR_RUNTIME);
}
END_TEST

START_TEST(argmax_argmin)
{
    /* ties: [1,3,3,2] argmax -> first 3 at index 1; [2,1,1,5] argmin -> index 1 */
    float a[4] = {1, 3, 3, 2}, b[4] = {2, 1, 1, 5};
    int32_t r;
    tcrt_tensor in = ten(TCRT_F32, a, 1, 4), out = ten(TCRT_I32, &r, 0);
    tcrt_params p = {{0}, {0}};
    ck_assert_int_eq(tcrt_ref_argmax(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert_int_eq(r, 1);
    in.data = b;
    ck_assert_int_eq(tcrt_ref_argmin(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert_int_eq(r, 1);
    /* axis 0 of [[1,5],[3,2]]: column maxima at rows [1, 0]; int64 output */
    int32_t m[4] = {1, 5, 3, 2};
    int64_t r2[2];
    in = ten(TCRT_I32, m, 2, 2, 2);
    out = ten(TCRT_I64, r2, 1, 2);
    ck_assert_int_eq(tcrt_ref_argmax(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert(r2[0] == 1 && r2[1] == 0);
    /* axis 1: row maxima at columns [1, 0] */
    p.i[0] = 1;
    ck_assert_int_eq(tcrt_ref_argmax(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert(r2[0] == 1 && r2[1] == 0);
    /* float output is rejected */
    out.dtype = TCRT_F32;
    ck_assert_int_eq(tcrt_ref_argmax(&in, 1, &out, 1, &p), TCRT_ERR_RUNTIME);
}
END_TEST

START_TEST(matmul_cases)
{
    /* [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]] = [[58,64],[139,154]]
     * (1*7+2*9+3*11=58, 1*8+2*10+3*12=64, 4*7+5*9+6*11=139, 4*8+5*10+6*12=154) */
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12}, y[4];
    float at[6] = {1, 4, 2, 5, 3, 6}, bt[6] = {7, 9, 11, 8, 10, 12};
    tcrt_tensor in[3] = {ten(TCRT_F32, a, 2, 2, 3), ten(TCRT_F32, b, 2, 3, 2)};
    tcrt_tensor out = ten(TCRT_F32, y, 2, 2, 2);
    tcrt_params p = {{0}, {0}};
    ck_assert_int_eq(tcrt_ref_matmul(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){58, 64, 139, 154}, 4, 0);
    /* same product from a^T (3x2) and b^T (2x3) stored transposed */
    in[0] = ten(TCRT_F32, at, 2, 3, 2);
    in[1] = ten(TCRT_F32, bt, 2, 2, 3);
    p.i[TCRT_MM_TA] = p.i[TCRT_MM_TB] = 1;
    memset(y, 0, sizeof y);
    ck_assert_int_eq(tcrt_ref_matmul(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){58, 64, 139, 154}, 4, 0);
    /* bias [-60, 0] + relu: [58-60, 64, 139-60, 154] -> [0, 64, 79, 154] */
    float bias[2] = {-60, 0};
    in[2] = ten(TCRT_F32, bias, 1, 2);
    p.i[TCRT_MM_ACT] = TCRT_ACT_RELU;
    ck_assert_int_eq(tcrt_ref_matmul(in, 3, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){0, 64, 79, 154}, 4, 0);
    /* batch broadcast: a [1,1,2] = [1,2]; b [2,2,1] = [[5],[6]], [[7],[8]]
     * -> out [2,1,1] = [1*5+2*6, 1*7+2*8] = [17, 23] */
    float a2[2] = {1, 2}, b2[4] = {5, 6, 7, 8};
    tcrt_tensor in2[2] = {ten(TCRT_F32, a2, 3, 1, 1, 2), ten(TCRT_F32, b2, 3, 2, 2, 1)};
    out = ten(TCRT_F32, y, 3, 2, 1, 1);
    tcrt_params p0 = {{0}, {0}};
    ck_assert_int_eq(tcrt_ref_matmul(in2, 2, &out, 1, &p0), TCRT_OK);
    expect_f(y, (float[]){17, 23}, 2, 0);
    /* rank-2 b broadcast over a's batch: a [2,1,2] = [1,2],[3,4]; b [2,1] = [5,6] -> [17, 39] */
    float a3[4] = {1, 2, 3, 4};
    in2[0] = ten(TCRT_F32, a3, 3, 2, 1, 2);
    in2[1] = ten(TCRT_F32, b2, 2, 2, 1);
    ck_assert_int_eq(tcrt_ref_matmul(in2, 2, &out, 1, &p0), TCRT_OK);
    expect_f(y, (float[]){17, 39}, 2, 0);
    /* int32 */
    int32_t ia[6] = {1, 2, 3, 4, 5, 6}, ib[6] = {7, 8, 9, 10, 11, 12}, iy[4];
    tcrt_tensor in3[2] = {ten(TCRT_I32, ia, 2, 2, 3), ten(TCRT_I32, ib, 2, 3, 2)};
    out = ten(TCRT_I32, iy, 2, 2, 2);
    ck_assert_int_eq(tcrt_ref_matmul(in3, 2, &out, 1, &p0), TCRT_OK);
    expect_i32(iy, (int32_t[]){58, 64, 139, 154}, 4);
    /* mismatched K and mixed dtypes are rejected */
    in3[1].dims[0] = 2;
    ck_assert_int_eq(tcrt_ref_matmul(in3, 2, &out, 1, &p0), TCRT_ERR_RUNTIME);
    in3[1].dims[0] = 3;
    in3[1].dtype = TCRT_F32;
    ck_assert_int_eq(tcrt_ref_matmul(in3, 2, &out, 1, &p0), TCRT_ERR_RUNTIME);
}
END_TEST

START_TEST(copy_transpose_slice)
{
    int32_t x[12], y[12];
    for (int i = 0; i < 12; i++)
        x[i] = i;
    tcrt_params p = {{0}, {0}};
    /* copy 2x6 -> 3x4: same bytes */
    tcrt_tensor in = ten(TCRT_I32, x, 2, 2, 6), out = ten(TCRT_I32, y, 2, 3, 4);
    ck_assert_int_eq(tcrt_ref_copy(&in, 1, &out, 1, &p), TCRT_OK);
    ck_assert_mem_eq(x, y, sizeof x);
    out = ten(TCRT_I32, y, 2, 3, 3);
    ck_assert_int_eq(tcrt_ref_copy(&in, 1, &out, 1, &p), TCRT_ERR_RUNTIME);
    /* transpose [[0,1,2],[3,4,5]] perm [1,0] -> [[0,3],[1,4],[2,5]] */
    in = ten(TCRT_I32, x, 2, 2, 3);
    out = ten(TCRT_I32, y, 2, 3, 2);
    p.i[0] = 1;
    p.i[1] = 0;
    ck_assert_int_eq(tcrt_ref_transpose(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){0, 3, 1, 4, 2, 5}, 6);
    /* 3-D transpose of 2x2x3 with perm [2,0,1]: out[c,a,b] = x[a,b,c] = 6a+3b+c
     * out 3x2x2: c=0: 0,3,6,9; c=1: 1,4,7,10; c=2: 2,5,8,11 */
    in = ten(TCRT_I32, x, 3, 2, 2, 3);
    out = ten(TCRT_I32, y, 3, 3, 2, 2);
    p.i[0] = 2;
    p.i[1] = 0;
    p.i[2] = 1;
    ck_assert_int_eq(tcrt_ref_transpose(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}, 12);
    /* slice 1-D negative stride: [0..5], begin 5, stride -2, count 3 -> [5,3,1] */
    memset(&p, 0, sizeof p);
    in = ten(TCRT_I32, x, 1, 6);
    out = ten(TCRT_I32, y, 1, 3);
    p.i[TCRT_SL_BEGIN] = 5;
    p.i[TCRT_SL_STRIDE] = -2;
    ck_assert_int_eq(tcrt_ref_slice(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){5, 3, 1}, 3);
    /* 2-D: x 3x4 = 0..11, begin [2,3], stride [-1,-2], out 3x2: rows 2,1,0 x cols 3,1
     * -> [11,9, 7,5, 3,1] */
    in = ten(TCRT_I32, x, 2, 3, 4);
    out = ten(TCRT_I32, y, 2, 3, 2);
    p.i[TCRT_SL_BEGIN] = 2;
    p.i[TCRT_SL_BEGIN + 1] = 3;
    p.i[TCRT_SL_STRIDE] = -1;
    p.i[TCRT_SL_STRIDE + 1] = -2;
    ck_assert_int_eq(tcrt_ref_slice(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){11, 9, 7, 5, 3, 1}, 6);
    /* positive: begin [1,1], stride [1,2], out 2x2 -> x[1,1],x[1,3],x[2,1],x[2,3] = 5,7,9,11 */
    p.i[TCRT_SL_BEGIN] = 1;
    p.i[TCRT_SL_BEGIN + 1] = 1;
    p.i[TCRT_SL_STRIDE] = 1;
    p.i[TCRT_SL_STRIDE + 1] = 2;
    out = ten(TCRT_I32, y, 2, 2, 2);
    ck_assert_int_eq(tcrt_ref_slice(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){5, 7, 9, 11}, 4);
    /* running past the end (cols 1,3,5) is rejected */
    out = ten(TCRT_I32, y, 2, 2, 3);
    ck_assert_int_eq(tcrt_ref_slice(&in, 1, &out, 1, &p), TCRT_ERR_RUNTIME);
}
END_TEST

START_TEST(pad_modes)
{
    int32_t x[3] = {1, 2, 3}, y[7];
    tcrt_tensor in = ten(TCRT_I32, x, 1, 3), out = ten(TCRT_I32, y, 1, 7);
    tcrt_params p = {{0}, {0}};
    p.i[0] = 2;
    p.i[1] = 2;
    /* constant 9: [9,9,1,2,3,9,9] */
    p.f[0] = 9;
    ck_assert_int_eq(tcrt_ref_pad(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){9, 9, 1, 2, 3, 9, 9}, 7);
    /* reflect (edge not repeated): 3 2 [1 2 3] 2 1 */
    p.i[TCRT_PAD_MODE] = 1;
    ck_assert_int_eq(tcrt_ref_pad(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){3, 2, 1, 2, 3, 2, 1}, 7);
    /* symmetric (edge repeated): 2 1 [1 2 3] 3 2 */
    p.i[TCRT_PAD_MODE] = 2;
    ck_assert_int_eq(tcrt_ref_pad(&in, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){2, 1, 1, 2, 3, 3, 2}, 7);
    /* 2-D float constant: [[1,2]] padded (1,0),(0,1) with 0.5 -> [[.5,.5,.5],[1,2,.5]] */
    float fx[2] = {1, 2}, fy[6];
    tcrt_params q = {{0}, {0}};
    q.i[0] = 1;
    q.i[3] = 1;
    q.f[0] = 0.5;
    in = ten(TCRT_F32, fx, 2, 1, 2);
    out = ten(TCRT_F32, fy, 2, 2, 3);
    ck_assert_int_eq(tcrt_ref_pad(&in, 1, &out, 1, &q), TCRT_OK);
    expect_f(fy, (float[]){.5f, .5f, .5f, 1, 2, .5f}, 6, 0);
    /* output shape inconsistent with the pads -> error */
    out = ten(TCRT_F32, fy, 2, 2, 2);
    ck_assert_int_eq(tcrt_ref_pad(&in, 1, &out, 1, &q), TCRT_ERR_RUNTIME);
}
END_TEST

START_TEST(concat_tile_broadcast)
{
    /* concat axis 1: [[1],[2]] ++ [[3,4],[5,6]] -> [[1,3,4],[2,5,6]] */
    int32_t a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, y[8];
    tcrt_tensor in[2] = {ten(TCRT_I32, a, 2, 2, 1), ten(TCRT_I32, b, 2, 2, 2)};
    tcrt_tensor out = ten(TCRT_I32, y, 2, 2, 3);
    tcrt_params p = {{0}, {0}};
    p.i[0] = 1;
    ck_assert_int_eq(tcrt_ref_concat(in, 2, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){1, 3, 4, 2, 5, 6}, 6);
    /* axis 0: [1,2] ++ [3,4,5,6] (as 1-D) */
    in[0] = ten(TCRT_I32, a, 1, 2);
    in[1] = ten(TCRT_I32, b, 1, 4);
    out = ten(TCRT_I32, y, 1, 6);
    p.i[0] = 0;
    ck_assert_int_eq(tcrt_ref_concat(in, 2, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){1, 2, 3, 4, 5, 6}, 6);
    /* tile [1,2] x3 -> [1,2,1,2,1,2] */
    tcrt_tensor x = ten(TCRT_I32, a, 1, 2);
    out = ten(TCRT_I32, y, 1, 6);
    ck_assert_int_eq(tcrt_ref_tile(&x, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){1, 2, 1, 2, 1, 2}, 6);
    /* tile [[1],[2]] (2x1) to 4x2 (multiples 2,2) -> [1,1,2,2,1,1,2,2] */
    x = ten(TCRT_I32, a, 2, 2, 1);
    out = ten(TCRT_I32, y, 2, 4, 2);
    ck_assert_int_eq(tcrt_ref_tile(&x, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){1, 1, 2, 2, 1, 1, 2, 2}, 8);
    /* broadcast [[1],[2]] to 2x3 -> [1,1,1,2,2,2]; [3,4,5,6]... [1,2] to 3x2 -> [1,2,1,2,1,2] */
    out = ten(TCRT_I32, y, 2, 2, 3);
    ck_assert_int_eq(tcrt_ref_broadcast(&x, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){1, 1, 1, 2, 2, 2}, 6);
    x = ten(TCRT_I32, a, 1, 2);
    out = ten(TCRT_I32, y, 2, 3, 2);
    ck_assert_int_eq(tcrt_ref_broadcast(&x, 1, &out, 1, &p), TCRT_OK);
    expect_i32(y, (int32_t[]){1, 2, 1, 2, 1, 2}, 6);
    /* incompatible: [1,2] to 2x3 */
    out = ten(TCRT_I32, y, 2, 2, 3);
    ck_assert_int_eq(tcrt_ref_broadcast(&x, 1, &out, 1, &p), TCRT_ERR_RUNTIME);
}
END_TEST

START_TEST(gather_cases)
{
    /* params [[1,2],[3,4],[5,6]]; indices [2,0] axis 0 -> [[5,6],[1,2]] */
    float prm[6] = {1, 2, 3, 4, 5, 6}, y[8];
    int32_t idx[2] = {2, 0};
    tcrt_tensor in[2] = {ten(TCRT_F32, prm, 2, 3, 2), ten(TCRT_I32, idx, 1, 2)};
    tcrt_tensor out = ten(TCRT_F32, y, 2, 2, 2);
    tcrt_params p = {{0}, {0}};
    ck_assert_int_eq(tcrt_ref_gather(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){5, 6, 1, 2}, 4, 0);
    /* axis 1, int64 indices [1] -> [[2],[4],[6]] */
    int64_t idx1[1] = {1};
    in[1] = ten(TCRT_I64, idx1, 1, 1);
    out = ten(TCRT_F32, y, 2, 3, 1);
    p.i[TCRT_GA_AXIS] = 1;
    ck_assert_int_eq(tcrt_ref_gather(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){2, 4, 6}, 3, 0);
    /* batch_dims 1: params [[1,2,3],[4,5,6]], indices [[2,0],[1,1]] axis 1 -> [[3,1],[5,5]] */
    int32_t idx2[4] = {2, 0, 1, 1};
    in[0] = ten(TCRT_F32, prm, 2, 2, 3);
    in[1] = ten(TCRT_I32, idx2, 2, 2, 2);
    out = ten(TCRT_F32, y, 2, 2, 2);
    p.i[TCRT_GA_BATCH] = 1;
    ck_assert_int_eq(tcrt_ref_gather(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){3, 1, 5, 5}, 4, 0);
    /* out of range (3 >= 3) and negative indices fail without writing */
    int32_t bad[2] = {0, 3}, neg[2] = {-1, 0};
    in[0] = ten(TCRT_F32, prm, 2, 3, 2);
    in[1] = ten(TCRT_I32, bad, 1, 2);
    out = ten(TCRT_F32, y, 2, 2, 2);
    p.i[TCRT_GA_AXIS] = 0;
    p.i[TCRT_GA_BATCH] = 0;
    for (int i = 0; i < 8; i++)
        y[i] = -7;
    ck_assert_int_eq(tcrt_ref_gather(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
    in[1].data = neg;
    ck_assert_int_eq(tcrt_ref_gather(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
    ck_assert_float_eq(y[0], -7);
    /* gather_nd: params [[1,2],[3,4]], indices [[1,0],[0,1]] -> [3, 2] */
    int32_t nd[4] = {1, 0, 0, 1};
    in[0] = ten(TCRT_F32, prm, 2, 2, 2);
    in[1] = ten(TCRT_I32, nd, 2, 2, 2);
    out = ten(TCRT_F32, y, 1, 2);
    ck_assert_int_eq(tcrt_ref_gather_nd(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){3, 2}, 2, 0);
    /* indices [[1]] (k = 1) -> rows: [[3,4]] */
    int32_t nd1[1] = {1};
    in[1] = ten(TCRT_I32, nd1, 2, 1, 1);
    out = ten(TCRT_F32, y, 2, 1, 2);
    ck_assert_int_eq(tcrt_ref_gather_nd(in, 2, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){3, 4}, 2, 0);
    nd1[0] = 2;
    ck_assert_int_eq(tcrt_ref_gather_nd(in, 2, &out, 1, &p), TCRT_ERR_RUNTIME);
}
END_TEST

START_TEST(resize_bilinear)
{
    /* input 1x2x2x1 [[1,2],[3,4]] = 1 + col + 2*row is linear, so bilinear output is
     * 1 + sx + 2*sy at the effective (clamped) source coordinates. */
    float x[4] = {1, 2, 3, 4}, y[16];
    tcrt_tensor in = ten(TCRT_F32, x, 4, 1, 2, 2, 1);
    tcrt_tensor out = ten(TCRT_F32, y, 4, 1, 3, 3, 1);
    tcrt_params p = {{0}, {0}};
    /* align_corners, 3x3: ratio (2-1)/(3-1) = 0.5: coords 0, .5, 1 */
    p.i[TCRT_RS_ALIGN] = 1;
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4}, 9, 1e-6f);
    /* no flags, 3x3: ratio 2/3: coords 0, 2/3, 4/3 -> clamped to 1 (floor 1 = ceil) */
    p.i[TCRT_RS_ALIGN] = 0;
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){1, 5.f / 3, 2, 7.f / 3, 3, 10.f / 3, 3, 11.f / 3, 4}, 9, 1e-6f);
    /* half_pixel, 4x4: ratio .5, src = .5*(o+.5)-.5 = -.25, .25, .75, 1.25 -> 0, .25, .75, 1 */
    p.i[TCRT_RS_HALF] = 1;
    out = ten(TCRT_F32, y, 4, 1, 4, 4, 1);
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(
        y,
        (float[]){1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4},
        16, 1e-6f);
    /* TF.js's own test (resize_bilinear_test.ts 'simple alignCorners=false'):
     * [2,2,4,4] as 2x2x1 -> 3x3 gives [2,2,2,10/3,10/3,10/3,4,4,4] */
    float x2[4] = {2, 2, 4, 4};
    in = ten(TCRT_F32, x2, 4, 1, 2, 2, 1);
    out = ten(TCRT_F32, y, 4, 1, 3, 3, 1);
    p.i[TCRT_RS_HALF] = 0;
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){2, 2, 2, 10.f / 3, 10.f / 3, 10.f / 3, 4, 4, 4}, 9, 1e-6f);
    /* same test with alignCorners=true: [2,2,2,3,3,3,4,4,4] */
    p.i[TCRT_RS_ALIGN] = 1;
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){2, 2, 2, 3, 3, 3, 4, 4, 4}, 9, 1e-6f);
}
END_TEST

START_TEST(resize_nearest)
{
    float x[4] = {1, 2, 3, 4}, y[16];
    tcrt_tensor in = ten(TCRT_F32, x, 4, 1, 2, 2, 1);
    tcrt_tensor out = ten(TCRT_F32, y, 4, 1, 4, 4, 1);
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_RS_MODE] = 1;
    /* 4x4, no flags: src = floor(.5*o) = 0,0,1,1 */
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 16, 0);
    /* 3x3, no flags: floor(2/3*o) = 0, 0, 1 */
    out = ten(TCRT_F32, y, 4, 1, 3, 3, 1);
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){1, 1, 2, 1, 1, 2, 3, 3, 4}, 9, 0);
    /* 3x3 align_corners: ratio .5, round-half-up(0, .5, 1) = 0, 1, 1 */
    p.i[TCRT_RS_ALIGN] = 1;
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){1, 2, 2, 3, 4, 4, 3, 4, 4}, 9, 0);
    /* 3x3 half_pixel: floor(2/3*(o+.5)) = floor(1/3, 1, 5/3) = 0, 1, 1 */
    p.i[TCRT_RS_ALIGN] = 0;
    p.i[TCRT_RS_HALF] = 1;
    ck_assert_int_eq(tcrt_ref_resize(&in, 1, &out, 1, &p), TCRT_OK);
    expect_f(y, (float[]){1, 2, 2, 3, 4, 4, 3, 4, 4}, 9, 0);
}
END_TEST

START_TEST(topk_ties)
{
    /* [3,1,3,2,5], k=3 -> values [5,3,3], indices [4,0,2] (lower index first on the tie) */
    float x[5] = {3, 1, 3, 2, 5}, v[3];
    int32_t ix[3];
    tcrt_tensor in = ten(TCRT_F32, x, 1, 5);
    tcrt_tensor out[2] = {ten(TCRT_F32, v, 1, 3), ten(TCRT_I32, ix, 1, 3)};
    tcrt_params p = {{0}, {0}};
    p.i[TCRT_TOPK_K] = 3;
    p.i[TCRT_TOPK_SORTED] = 1;
    ck_assert_int_eq(tcrt_ref_topk(&in, 1, out, 2, &p), TCRT_OK);
    expect_f(v, (float[]){5, 3, 3}, 3, 0);
    expect_i32(ix, (int32_t[]){4, 0, 2}, 3);
    /* two rows, k=2: [[1,2,3],[3,2,1]] -> values [[3,2],[3,2]], indices [[2,1],[0,1]] */
    int32_t xi[6] = {1, 2, 3, 3, 2, 1}, vi[4], ii[4];
    in = ten(TCRT_I32, xi, 2, 2, 3);
    out[0] = ten(TCRT_I32, vi, 2, 2, 2);
    out[1] = ten(TCRT_I32, ii, 2, 2, 2);
    p.i[TCRT_TOPK_K] = 2;
    ck_assert_int_eq(tcrt_ref_topk(&in, 1, out, 2, &p), TCRT_OK);
    expect_i32(vi, (int32_t[]){3, 2, 3, 2}, 4);
    expect_i32(ii, (int32_t[]){2, 1, 0, 1}, 4);
    /* all equal: indices in order */
    int32_t same[3] = {7, 7, 7};
    in = ten(TCRT_I32, same, 1, 3);
    out[0] = ten(TCRT_I32, vi, 1, 2);
    out[1] = ten(TCRT_I32, ii, 1, 2);
    ck_assert_int_eq(tcrt_ref_topk(&in, 1, out, 2, &p), TCRT_OK);
    expect_i32(ii, (int32_t[]){0, 1}, 2);
    /* k > n rejected */
    p.i[TCRT_TOPK_K] = 4;
    out[0].dims[0] = out[1].dims[0] = 4;
    ck_assert_int_eq(tcrt_ref_topk(&in, 1, out, 2, &p), TCRT_ERR_RUNTIME);
}
END_TEST

START_TEST(range_and_random)
{
    tcrt_params p = {{0}, {0}};
    /* int32: start 1, delta 2, 4 values -> 1,3,5,7 */
    int32_t iy[4];
    tcrt_tensor out = ten(TCRT_I32, iy, 1, 4);
    p.f[0] = 1;
    p.f[1] = 2;
    ck_assert_int_eq(tcrt_ref_range(NULL, 0, &out, 1, &p), TCRT_OK);
    expect_i32(iy, (int32_t[]){1, 3, 5, 7}, 4);
    /* int64 descending: 5, 3, 1 */
    int64_t ly[3];
    out = ten(TCRT_I64, ly, 1, 3);
    p.f[0] = 5;
    p.f[1] = -2;
    ck_assert_int_eq(tcrt_ref_range(NULL, 0, &out, 1, &p), TCRT_OK);
    ck_assert(ly[0] == 5 && ly[1] == 3 && ly[2] == 1);
    /* float32: 0, .5, 1 */
    float fy[3];
    out = ten(TCRT_F32, fy, 1, 3);
    p.f[0] = 0;
    p.f[1] = 0.5;
    ck_assert_int_eq(tcrt_ref_range(NULL, 0, &out, 1, &p), TCRT_OK);
    expect_f(fy, (float[]){0, .5f, 1}, 3, 0);
    /* random_uniform: deterministic per seed, in [0,1), mean near 1/2 */
    static float r1[4096], r2[4096];
    tcrt_params q = {{0}, {0}};
    q.i[0] = 42;
    q.i[1] = 7;
    tcrt_tensor a = ten(TCRT_F32, r1, 1, 4096), b = ten(TCRT_F32, r2, 1, 4096);
    ck_assert_int_eq(tcrt_ref_random_uniform(NULL, 0, &a, 1, &q), TCRT_OK);
    ck_assert_int_eq(tcrt_ref_random_uniform(NULL, 0, &b, 1, &q), TCRT_OK);
    ck_assert_mem_eq(r1, r2, sizeof r1);
    double sum = 0;
    for (int i = 0; i < 4096; i++) {
        ck_assert(r1[i] >= 0 && r1[i] < 1);
        sum += r1[i];
    }
    /* standard error of the mean is sqrt(1/12/4096) ~ 0.0045; allow 0.03 */
    ck_assert(fabs(sum / 4096 - 0.5) < 0.03);
    q.i[1] = 8;
    ck_assert_int_eq(tcrt_ref_random_uniform(NULL, 0, &b, 1, &q), TCRT_OK);
    ck_assert(memcmp(r1, r2, sizeof r1) != 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime_kernels");
    TCase *tc = tcase_create("ref");
    tcase_add_test(tc, conv_valid_same);
    tcase_add_test(tc, conv_depthwise);
    tcase_add_test(tc, conv_transpose);
    tcase_add_test(tc, pools);
    tcase_add_test(tc, reductions);
    tcase_add_test(tc, argmax_argmin);
    tcase_add_test(tc, matmul_cases);
    tcase_add_test(tc, copy_transpose_slice);
    tcase_add_test(tc, pad_modes);
    tcase_add_test(tc, concat_tile_broadcast);
    tcase_add_test(tc, gather_cases);
    tcase_add_test(tc, resize_bilinear);
    tcase_add_test(tc, resize_nearest);
    tcase_add_test(tc, topk_ties);
    tcase_add_test(tc, range_and_random);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
