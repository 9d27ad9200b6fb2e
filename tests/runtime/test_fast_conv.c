/* test_fast_conv.c - Check suite: the packed-weight micro-kernels
 * (runtime/kernels/fast_conv*.c) against the reference kernels.
 *
 * Convolution: random x and HWIO w in [-1, 1] from a fixed-seed generator;
 * the oracle is tcrt_ref_conv2d on the HWIO weights (no residual, no
 * activation), to which the test itself adds the residual and applies the
 * activation; the kernel under test gets the same weights packed with
 * tcrt_pack_conv_weights (TCRT_CONV_PACKED) and does the epilogue itself.
 * Matmul: tcrt_fast_matmul against tcrt_ref_matmul on odd sizes, B plain and
 * transposed, with bias and activations, K split into blocks (K 1030, 2100),
 * several N blocks (N 530) and A packed by several tasks (M 600).  Tolerance: |got - want| <= 1e-4 *
 * (1 + sum |x*w|) per output, the sum taken over the same products.  Every
 * case runs with 1 and 2 threads and for each ISA the CPU and build support
 * (tcrt_kern_force_isa); the shapes cover 1x1, 3x3, 7x7 stride 2, dilation
 * 2, asymmetric pads, Cin 1/3/17/64/300/1024, Cout 1/5/16/17/33/100/200,
 * N = 2, a 1x1 input, tiles that cross output rows and images, Cout blocks
 * with 1, 2 and 3 panels left, both sweep orders (tile-major for weights
 * under 1 MB, Cout-block-major above) and the tap groups of deep layers.  Also: a too small workspace falls
 * back to the reference, and the workspace reported fits TCRT_MAX_THREADS.
 */
#include "fast_conv_int.h"
#include "tcrt_kernels.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ws_alloc.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float frand(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static float *rand_buf(int64_t n)
{
    float *b = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        b[i] = frand();
    return b;
}

static float act_ref(float v, int act, float alpha)
{
    switch (act) {
    case TCRT_ACT_RELU:
        return v > 0 ? v : 0;
    case TCRT_ACT_RELU6:
        return v < 0 ? 0 : (v > 6 ? 6 : v);
    case TCRT_ACT_LEAKY:
        return v < 0 ? v * alpha : v;
    default:
        return v;
    }
}

static const char *isa_name(int isa)
{
    return isa == TCRT_ISA_AVX512 ? "avx512" : isa == TCRT_ISA_AVX2 ? "avx2" : "portable";
}

typedef struct ConvCase {
    int64_t n, h, w, cin, kh, kw, cout;
    int64_t sh, sw, dh, dw, pt, pl, pb, pr;
    bool bias, res;
    int act;
} ConvCase;

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1)
{
    return (in + p0 + p1 - (k - 1) * d - 1) / s + 1;
}

/* When set, run_conv passes the HWIO weights unpacked (TCRT_CONV_PACKED = 0): the
 * Eigen path of tcrt_fast_conv2d, which adds a residual after its GEMM. */
static bool unpacked_mode;
/* When 2 or 4, run_conv packs the 3x3 weights for Winograd F(m x m,3x3)
 * (tcrt_pack_conv_wino, TCRT_CONV_PACK_WINO or WINO4); the oracle stays the
 * reference conv on the HWIO weights. */
static int wino_mode;
/* When set, a case with a residual passes the output buffer as the
 * residual too, filled with the residual's values (the memory planner's
 * in-place residual, passes/memplan.c). */
static bool inplace_mode;

/* Every output of got against the oracle ref within the tolerance of its
 * magnitude mag; part names the run in the message after what. */
static void check_out(const float *got, const float *ref, const float *mag, int64_t ny, const char *what,
                      const char *part)
{
    for (int64_t i = 0; i < ny; i++)
        ck_assert_msg(fabsf(got[i] - ref[i]) <= 1e-4f * (1 + mag[i]), "%s%s [%lld]: got %.7g want %.7g", what,
                      part, (long long)i, got[i], ref[i]);
}

/* Runs case c with the current ISA cap and thread count; checks every output. */
static void run_conv(const ConvCase *c, const char *what)
{
    int64_t oh = out_size(c->h, c->kh, c->sh, c->dh, c->pt, c->pb);
    int64_t ow = out_size(c->w, c->kw, c->sw, c->dw, c->pl, c->pr);
    ck_assert(oh > 0 && ow > 0);
    int64_t nx = c->n * c->h * c->w * c->cin, nw = c->kh * c->kw * c->cin * c->cout,
            ny = c->n * oh * ow * c->cout;
    float *x = rand_buf(nx), *w = rand_buf(nw), *bias = rand_buf(c->cout), *res = rand_buf(ny);
    float *ref = malloc((size_t)ny * sizeof(float)), *got = malloc((size_t)ny * sizeof(float));
    float *mag = malloc((size_t)ny * sizeof(float));
    int64_t pk = wino_mode ? wino_mode + 2 : c->kh, pkw = wino_mode ? wino_mode + 2 : c->kw;
    int64_t np = tcrt_conv_packed_floats(pk, pkw, c->cin, c->cout);
    ck_assert(np > 0);
    float *pw = malloc((size_t)np * sizeof(float));
    if (wino_mode) {
        ck_assert(c->kh == 3 && c->kw == 3 && c->sh == 1 && c->sw == 1 && c->dh == 1 && c->dw == 1);
        tcrt_pack_conv_wino(w, wino_mode, c->cin, c->cout, pw);
    } else {
        tcrt_pack_conv_weights(w, c->kh, c->kw, c->cin, c->cout, pw);
    }

    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = c->sh, p.i[TCRT_CONV_SW] = c->sw, p.i[TCRT_CONV_DH] = c->dh,
    p.i[TCRT_CONV_DW] = c->dw;
    p.i[TCRT_CONV_PT] = c->pt, p.i[TCRT_CONV_PL] = c->pl, p.i[TCRT_CONV_PB] = c->pb,
    p.i[TCRT_CONV_PR] = c->pr;
    p.f[0] = 0.125;

    /* oracle: plain reference conv on HWIO, then + bias + residual, act here */
    tcrt_tensor rin[2] = {{x, TCRT_F32, 4, {c->n, c->h, c->w, c->cin}},
                          {w, TCRT_F32, 4, {c->kh, c->kw, c->cin, c->cout}}};
    tcrt_tensor rout = {ref, TCRT_F32, 4, {c->n, oh, ow, c->cout}};
    ck_assert_int_eq(tcrt_ref_conv2d(rin, 2, &rout, 1, &p), TCRT_OK);
    /* magnitudes: the same conv on |x| and |w| */
    float *ax = malloc((size_t)nx * sizeof(float)), *aw = malloc((size_t)nw * sizeof(float));
    for (int64_t i = 0; i < nx; i++)
        ax[i] = fabsf(x[i]);
    for (int64_t i = 0; i < nw; i++)
        aw[i] = fabsf(w[i]);
    tcrt_tensor ain[2] = {{ax, TCRT_F32, 4, {c->n, c->h, c->w, c->cin}},
                          {aw, TCRT_F32, 4, {c->kh, c->kw, c->cin, c->cout}}};
    tcrt_tensor aout = {mag, TCRT_F32, 4, {c->n, oh, ow, c->cout}};
    ck_assert_int_eq(tcrt_ref_conv2d(ain, 2, &aout, 1, &p), TCRT_OK);
    for (int64_t i = 0; i < ny; i++) {
        float v = ref[i] + (c->bias ? bias[i % c->cout] : 0.0f) + (c->res ? res[i] : 0.0f);
        ref[i] = act_ref(v, c->act, 0.125f);
    }

    p.i[TCRT_CONV_ACT] = c->act;
    p.i[TCRT_CONV_PACKED] = wino_mode == 4   ? TCRT_CONV_PACK_WINO4
                            : wino_mode == 2 ? TCRT_CONV_PACK_WINO
                                             : TCRT_CONV_PACK_DIRECT;
    p.i[TCRT_CONV_COUT] = c->cout;
    int n_in = c->res ? 4 : c->bias ? 3 : 2;
    tcrt_tensor in[4] = {{x, TCRT_F32, 4, {c->n, c->h, c->w, c->cin}},
                         {pw, TCRT_F32, 5, {(c->cout + 15) / 16, pk, pkw, c->cin, 16}},
                         {bias, TCRT_F32, 1, {c->cout}},
                         {res, TCRT_F32, 4, {c->n, oh, ow, c->cout}}};
    tcrt_tensor out[2] = {{got, TCRT_F32, 4, {c->n, oh, ow, c->cout}}, {NULL, TCRT_U8, 1, {0}}};
    if (unpacked_mode) {
        p.i[TCRT_CONV_PACKED] = 0;
        in[1] = (tcrt_tensor){w, TCRT_F32, 4, {c->kh, c->kw, c->cin, c->cout}};
    }
    size_t ws = tcrt_fast_conv2d_workspace(in, n_in, out, &p);
    ck_assert_msg(ws > 0 || unpacked_mode, "%s: no workspace reported", what);
    out[1].data = ws_alloc(ws);
    out[1].dims[0] = (int64_t)ws;
    for (int64_t i = 0; i < ny; i++)
        got[i] = NAN;
    if (inplace_mode && c->res) {
        memcpy(got, res, (size_t)ny * sizeof(float));
        in[3].data = got;
    }
    ck_assert_int_eq(tcrt_fast_conv2d(in, n_in, out, 2, &p), TCRT_OK);
    check_out(got, ref, mag, ny, what, "");
    if (inplace_mode && c->res) {
        if (c->cin * c->cout * ny <= 200000) {
            /* the reference kernel (every fallback) in place too */
            memcpy(got, res, (size_t)ny * sizeof(float));
            ck_assert_int_eq(tcrt_ref_conv2d(in, n_in, out, 1, &p), TCRT_OK);
            check_out(got, ref, mag, ny, what, ", reference in place");
        }
        in[3].data = res;
    }
    if (wino_mode && c->cin * c->cout * ny <= 200000) {
        /* the reference kernel reads Winograd-packed weights too (the
         * fallback of a missing workspace) */
        for (int64_t i = 0; i < ny; i++)
            got[i] = NAN;
        ck_assert_int_eq(tcrt_ref_conv2d(in, n_in, out, 1, &p), TCRT_OK);
        check_out(got, ref, mag, ny, what, ", reference on U");
    }
    free(out[1].data), free(x), free(w), free(bias), free(res), free(ref), free(got), free(mag), free(pw);
    free(ax), free(aw);
}

/* Every ISA the CPU has, then 1 and 2 threads. */
static void run_conv_all(const ConvCase *c, const char *name)
{
    for (int isa = TCRT_ISA_PORTABLE; isa <= TCRT_ISA_AVX512; isa++) {
        if (!tcrt_kern_isa_supported(isa))
            continue;
        int prev = tcrt_kern_force_isa(isa);
        ck_assert_int_eq(tcrt_kern_isa(), isa);
        for (int t = 1; t <= 2; t++) {
            tcrt_set_threads(t);
            char what[160];
            snprintf(what, sizeof what, "%s (%s, %d threads)", name, isa_name(isa), t);
            run_conv(c, what);
        }
        tcrt_kern_force_isa(prev);
    }
    tcrt_set_threads(1);
}

START_TEST(conv_cases)
{
    static const struct {
        const char *name;
        ConvCase c;
    } cases[] = {
        /* n  h   w  cin kh kw cout sh sw dh dw pt pl pb pr bias res act */
        {"1x1", {1, 7, 7, 64, 1, 1, 100, 1, 1, 1, 1, 0, 0, 0, 0, true, false, TCRT_ACT_NONE}},
        {"3x3 same relu", {1, 9, 11, 17, 3, 3, 33, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_RELU}},
        {"7x7 s2 cin3", {1, 20, 18, 3, 7, 7, 16, 2, 2, 1, 1, 3, 3, 3, 3, true, false, TCRT_ACT_RELU}},
        {"dilation 2", {1, 12, 10, 17, 3, 3, 17, 1, 1, 2, 2, 2, 2, 2, 2, false, false, TCRT_ACT_NONE}},
        {"asym pads", {1, 8, 9, 3, 3, 2, 5, 2, 1, 1, 1, 0, 1, 1, 0, true, false, TCRT_ACT_RELU6}},
        {"cin1 cout1", {2, 6, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_LEAKY}},
        {"N=2 residual", {2, 5, 7, 64, 3, 3, 64, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        {"1x1 input", {2, 1, 1, 17, 3, 3, 100, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_NONE}},
        {"1x1 s2 residual", {2, 8, 8, 64, 1, 1, 33, 2, 2, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_LEAKY}},
        {"cout 80 (48 left)", {1, 4, 5, 5, 2, 2, 80, 1, 1, 1, 1, 0, 0, 1, 1, true, false, TCRT_ACT_RELU6}},
        {"cout 96 (32 left)", {1, 3, 13, 3, 1, 3, 96, 1, 2, 1, 1, 0, 1, 0, 1, true, true, TCRT_ACT_NONE}},
        {"big pads", {1, 3, 3, 3, 3, 3, 5, 1, 1, 1, 1, 4, 3, 2, 5, false, false, TCRT_ACT_NONE}},
        /* patch mode (kernel rows of KW*Cin <= 64 floats) with pads wider
         * than the kernel: windows wholly in the left or right padding */
        {"patch big pads", {1, 6, 5, 3, 3, 3, 32, 2, 2, 1, 1, 4, 5, 3, 6, true, false, TCRT_ACT_RELU}},
        /* weights over 1 MB: Cout-block-major, taps split into groups (partial
         * sums in C; bias, residual, activation once at the last group) */
        {"deep taps split", {1, 4, 5, 1024, 3, 3, 80, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        {"cin 300 split", {2, 5, 4, 300, 3, 3, 100, 1, 1, 2, 1, 2, 1, 2, 1, true, false, TCRT_ACT_LEAKY}},
        /* the last Cout block 8 wide (the AVX2 kernel's 8-lane path, a plain
         * store of the low half) and 12 wide (masked high half), with and
         * without the taps split (partial sums reloaded through the masks) */
        {"cout 24 residual", {1, 9, 10, 24, 1, 1, 24, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_RELU6}},
        /* 1x1 stride 1 unpadded (pointers straight from the pixel index):
         * tiles cross rows and the two images */
        {"1x1 flat N=2", {2, 5, 7, 24, 1, 1, 40, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_RELU}},
        {"cout 28 residual", {1, 7, 8, 13, 3, 3, 28, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_LEAKY}},
        {"deep split cout 24", {1, 4, 5, 1100, 3, 3, 24, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        {"deep split cout 28", {1, 3, 5, 1024, 3, 3, 28, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_NONE}},
        /* taps split with 8 Cout blocks or more: whole blocks as tasks at 2
         * threads (2 tap groups of 176-channel taps) */
        {"split whole blocks", {1, 2, 2, 176, 3, 3, 460, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_RELU}},
        /* a 7x7 output on the 7-row AVX-512 kernel, Cout-block-major: at 2
         * threads 32-wide blocks (an odd count of 48-wide ones), also with
         * the taps split and whole blocks as tasks */
        {"7x7 even blocks", {1, 7, 7, 64, 3, 3, 512, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        {"7x7 even blocks split",
         {1, 7, 7, 384, 3, 3, 320, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_RELU6}},
        /* tile-major (weights under 1 MB) with several Cout blocks and many tiles */
        {"tile major", {2, 9, 10, 40, 3, 3, 200, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU6}},
        /* 2 threads on AVX2: 6- and 5-row tiles mixed (fast_conv.c
         * mixed_tiles; 196 pixels as 26 x 6 + 8 x 5), tile-major (1x1, 3x3
         * padded: per-tap and merged-row pointers) and Cout-block-major (one block) */
        {"mixed tiles 1x1", {1, 14, 14, 96, 1, 1, 144, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_RELU6}},
        {"mixed tiles 3x3", {1, 14, 14, 24, 3, 3, 40, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        {"mixed tiles one block",
         {1, 14, 14, 256, 3, 3, 64, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_NONE}},
        /* Cout-block-major at 2 threads on AVX2: blocks of 48 and 80 columns
         * (fast_conv.c: 64-wide ones would be 64 + 32, 64 + 64 + 32) */
        {"blocks of 48", {1, 7, 7, 160, 3, 3, 96, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU6}},
        {"blocks of 80", {1, 7, 7, 960, 1, 1, 160, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_NONE}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_conv_all(&cases[i].c, cases[i].name);
}
END_TEST

/* Every width of the last Cout block's partial store: Cout 3..31 (the AVX2
 * kernel's 1-7 lanes of the low half, a full low half, 1-7 lanes of the
 * high half); Cin 72 keeps Cout <= 8 off the direct loops. */
START_TEST(conv_cout_tails)
{
    for (int64_t cout = 3; cout <= 31; cout++) {
        ConvCase c = {1, 3, 5, 72, 1, 1, cout, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_RELU6};
        char name[32];
        snprintf(name, sizeof name, "cout %lld", (long long)cout);
        run_conv_all(&c, name);
    }
}
END_TEST

/* A last tile of 1-3 rows with Cout over one panel (every width of the
 * second, a third left over: Cout 40, 100), an odd number of pixels per
 * image (7x7: 8 tiles of 6 and one of 1), and the taps split (partial sums
 * reloaded, masked).  A residual needs the bias here: run_conv passes the
 * bias tensor whenever it passes the residual. */
START_TEST(conv_short_tiles)
{
    static const int64_t couts[] = {17, 23, 24, 31, 32, 40, 64, 100};
    static const int64_t widths[] = {1, 2, 3, 7};
    for (size_t i = 0; i < sizeof couts / sizeof couts[0]; i++)
        for (size_t j = 0; j < sizeof widths / sizeof widths[0]; j++) {
            int64_t w = widths[j];
            ConvCase c = {1,     w == 7 ? 7 : 1,    w, 40, 1, 1, couts[i], 1, 1, 1, 1, 0, 0, 0, 0, j != 3,
                          j < 2, (int)((i + j) % 4)};
            char name[48];
            snprintf(name, sizeof name, "short tile cout %lld w %lld", (long long)couts[i], (long long)w);
            run_conv_all(&c, name);
        }
    for (int64_t cout = 17; cout <= 40; cout += 23) {
        ConvCase c = {1, 1, 3, 1100, 3, 3, cout, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU};
        run_conv_all(&c, cout == 17 ? "short tile split cout 17" : "short tile split cout 40");
    }
}
END_TEST

/* The stem loop (Cin <= 4, Cout a multiple of 8, KH*KW*Cin <= 100): six,
 * then four interior pixels at a time (eight for a last half panel) and single
 * border pixels, every Cin from 1 to 4, one to three panels, strides 1-3,
 * dilations (kernel rows taken tap by tap), asymmetric padding, rows
 * narrower than four pixels, N = 2, residual (with the bias: run_conv
 * passes both) and each activation. */
START_TEST(conv_stem)
{
    static const struct {
        const char *name;
        ConvCase c;
    } cases[] = {
        /* n  h   w  cin kh kw cout sh sw dh dw pt pl pb pr bias res act */
        {"mobilenet stem", {1, 23, 21, 3, 3, 3, 32, 2, 2, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_RELU6}},
        {"cin 1 s1", {1, 9, 13, 1, 3, 3, 16, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        {"cin 2 5x5", {2, 11, 10, 2, 5, 5, 48, 1, 1, 1, 1, 2, 2, 2, 2, true, false, TCRT_ACT_LEAKY}},
        {"cin 4 s3 asym", {1, 14, 17, 4, 3, 4, 32, 3, 3, 1, 1, 0, 2, 1, 0, false, false, TCRT_ACT_NONE}},
        {"dilated", {1, 12, 15, 3, 3, 3, 16, 1, 1, 2, 2, 2, 2, 2, 2, true, true, TCRT_ACT_RELU6}},
        {"narrow rows", {2, 5, 3, 3, 3, 3, 32, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_NONE}},
        {"1x1 cin 3", {1, 6, 9, 3, 1, 1, 48, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_RELU}},
        /* Cout 24 and 40: a last half panel, eight pixels at a time */
        {"blazeface stem", {1, 26, 37, 3, 5, 5, 24, 2, 2, 1, 1, 1, 1, 2, 2, true, false, TCRT_ACT_RELU}},
        {"cout 40 residual", {2, 7, 21, 2, 3, 3, 40, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU6}},
        {"cout 24 dilated", {1, 9, 30, 3, 3, 3, 24, 1, 1, 2, 3, 2, 3, 2, 3, true, true, TCRT_ACT_LEAKY}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_conv_all(&cases[i].c, cases[i].name);
}
END_TEST

/* Unpacked weights with a residual (the pack pass disabled): bias + residual +
 * activation after the Eigen GEMM, 1 and 2 threads, 1x1 and 3x3. */
START_TEST(conv_unpacked_residual)
{
    static const ConvCase cases[] = {
        {1, 9, 7, 5, 3, 3, 17, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU},
        {2, 6, 6, 16, 1, 1, 33, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_LEAKY},
        {1, 8, 8, 3, 3, 3, 8, 2, 2, 1, 1, 0, 1, 1, 0, true, true, TCRT_ACT_RELU6},
    };
    unpacked_mode = true;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int t = 1; t <= 2; t++) {
            tcrt_set_threads(t);
            char what[96];
            snprintf(what, sizeof what, "unpacked residual case %zu (%d threads)", i, t);
            run_conv(&cases[i], what);
        }
    unpacked_mode = false;
    tcrt_set_threads(1);
}
END_TEST

/* The output in the residual's buffer (passes/memplan.c plans a packed
 * conv's output over a residual it reads last): every packed path reads a
 * residual element before it stores the output element in its place:
 * tile-major 1x1 and 3x3, Cout-block-major with the taps that would be
 * split into groups (partial sums would overwrite the residual: the kernel
 * does not split them then), the thin and narrow direct loops, the stem
 * loop, Winograd F(2x2) and F(4x4), short last tiles; each ISA, 1 and 2
 * threads, and the reference kernel. */
START_TEST(conv_residual_in_place)
{
    static const struct {
        const char *name;
        ConvCase c;
        int wino;
    } cases[] = {
        /* n  h   w  cin kh kw cout sh sw dh dw pt pl pb pr bias res act */
        {"1x1 bottleneck", {1, 14, 14, 64, 1, 1, 256, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_RELU}, 0},
        {"3x3 tile major", {2, 9, 10, 40, 3, 3, 200, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU6}, 0},
        {"deep taps split", {1, 4, 5, 1024, 3, 3, 80, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}, 0},
        {"deep split cout 24",
         {1, 4, 5, 1100, 3, 3, 24, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_NONE},
         0},
        {"short tile split", {1, 1, 3, 1100, 3, 3, 40, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}, 0},
        {"thin 1x1", {1, 16, 16, 8, 1, 1, 8, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_RELU}, 0},
        {"thin cout 5", {1, 9, 7, 3, 3, 3, 5, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_LEAKY}, 0},
        {"narrow cout 2", {1, 12, 9, 16, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_NONE}, 0},
        {"stem", {2, 7, 21, 2, 3, 3, 40, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU6}, 0},
        {"winograd F2", {2, 8, 8, 64, 3, 3, 64, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}, 2},
        {"winograd F4", {1, 14, 14, 64, 3, 3, 130, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}, 4},
        {"winograd F4 odd",
         {1, 11, 13, 33, 3, 3, 100, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU6},
         4},
    };
    inplace_mode = true;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wino_mode = cases[i].wino;
        run_conv_all(&cases[i].c, cases[i].name);
    }
    wino_mode = 0;
    inplace_mode = false;
}
END_TEST

/* The AVX-512 7 x 48 kernel and the AVX2 5 x 16 one, which the packed
 * direct conv takes where 7-row (5-row) tiles waste fewer rows than 6-row
 * ones (tcrt_conv_tile_rows): each column count of the last block (16, 32,
 * 48 and remainders of 4 and 8), last tiles of 4 and 6 rows (7 x 48), of 3
 * and 4 (5 x 16), tiles across images, tile-major and Cout-block-major
 * orders with the taps split, merged kernel rows of a 3-channel 7x7
 * stride-2 conv (patch mode), bias, residual (also in place) and each
 * activation; every ISA runs them (the portable one on its own tiles).
 * The rule itself: on AVX-512, 7x7 and 5x5 maps take 7 rows; on AVX2, 7x7
 * (49 pixels: 10 tiles of 5 instead of 9 of 6, 54 rows) and 5x5 take 5;
 * 56x56 and 14x14 keep 6 on both. */
START_TEST(conv_seven_rows)
{
    static const struct {
        const char *name;
        ConvCase c;
        int64_t pixels;
    } cases[] = {
        /* n  h   w  cin kh kw cout sh sw dh dw pt pl pb pr bias res act */
        {"7x7 cout 16", {1, 7, 7, 64, 1, 1, 16, 1, 1, 1, 1, 0, 0, 0, 0, true, false, TCRT_ACT_RELU}, 49},
        {"7x7 cout 32", {1, 7, 7, 40, 1, 1, 32, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_NONE}, 49},
        {"7x7 cout 48", {1, 7, 7, 33, 3, 3, 48, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU6}, 49},
        {"7x7 cout 100", {1, 7, 7, 64, 1, 1, 100, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_LEAKY}, 49},
        {"7x7 cout 200", {1, 7, 7, 70, 3, 3, 200, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}, 49},
        {"5x5 last tile 4", {1, 5, 5, 40, 3, 3, 64, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}, 25},
        {"1x13 last tile 6",
         {1, 1, 13, 24, 1, 3, 56, 1, 1, 1, 1, 0, 1, 0, 1, true, false, TCRT_ACT_NONE},
         13},
        {"N=2 7x7", {2, 7, 7, 48, 3, 3, 96, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}, 98},
        {"7x7 taps split", {1, 7, 7, 1100, 3, 3, 40, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_RELU}, 49},
        {"7x7 split residual",
         {1, 7, 7, 1024, 3, 3, 100, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU6},
         49},
        {"7x7 s2 cin 3", {1, 13, 13, 3, 7, 7, 64, 2, 2, 1, 1, 3, 3, 3, 3, true, false, TCRT_ACT_RELU}, 49},
    };
    static const int64_t six[] = {3136, 784, 196, 6, 12};
    if (tcrt_kern_isa_supported(TCRT_ISA_AVX512)) {
        int prev = tcrt_kern_force_isa(TCRT_ISA_AVX512);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            ck_assert_int_eq(tcrt_conv_tile_rows(cases[i].pixels), 7);
        for (size_t i = 0; i < sizeof six / sizeof six[0]; i++)
            ck_assert_int_eq(tcrt_conv_tile_rows(six[i]), 6);
        tcrt_kern_force_isa(prev);
    }
    if (tcrt_kern_isa_supported(TCRT_ISA_AVX2)) {
        static const int64_t five[] = {49, 25, 13, 10};
        int prev = tcrt_kern_force_isa(TCRT_ISA_AVX2);
        for (size_t i = 0; i < sizeof five / sizeof five[0]; i++)
            ck_assert_int_eq(tcrt_conv_tile_rows(five[i]), 5);
        for (size_t i = 0; i < sizeof six / sizeof six[0]; i++)
            ck_assert_int_eq(tcrt_conv_tile_rows(six[i]), 6);
        tcrt_kern_force_isa(prev);
    }
    for (int inplace = 0; inplace <= 1; inplace++) {
        inplace_mode = inplace;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (inplace && !cases[i].c.res)
                continue;
            char what[80];
            snprintf(what, sizeof what, "%s%s", cases[i].name, inplace ? " in place" : "");
            run_conv_all(&cases[i].c, what);
        }
    }
    inplace_mode = false;
}
END_TEST

/* Winograd F(2x2,3x3) and F(4x4,3x3) (TCRT_CONV_PACK_WINO, WINO4) against
 * the direct reference:
 * odd and even output sizes (tiles cut by the last row and column), SAME,
 * VALID, asymmetric and big pads (whole patches in the padding), Cin 1, 3,
 * 17 (8-lane tails), 64 and 130, Cout 1, 5, 17, 64, 100 and 130 (several
 * 64-column chunks and their remainders), N = 2, bias, residual and each
 * activation; blocks of many tiles (30x30) and fewer tiles than one
 * micro-kernel tile (a 1x1 output); one block in two chunk groups; the 16-lane
 * transforms of AVX-512 (Cin or Cout a multiple of 16). */
START_TEST(conv_winograd)
{
    static const struct {
        const char *name;
        ConvCase c;
    } cases[] = {
        /* n  h   w  cin kh kw cout sh sw dh dw pt pl pb pr bias res act */
        {"same 5x7", {1, 5, 7, 17, 3, 3, 33, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_RELU}},
        {"same 8x8 N2 res", {2, 8, 8, 64, 3, 3, 64, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        {"valid 9x6", {1, 9, 6, 3, 3, 3, 5, 1, 1, 1, 1, 0, 0, 0, 0, false, false, TCRT_ACT_NONE}},
        {"asym pads", {1, 7, 6, 5, 3, 3, 17, 1, 1, 1, 1, 0, 2, 2, 1, true, false, TCRT_ACT_RELU6}},
        {"big pads", {1, 3, 4, 3, 3, 3, 5, 1, 1, 1, 1, 3, 4, 2, 3, true, true, TCRT_ACT_LEAKY}},
        {"cin1 cout1", {2, 6, 5, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_LEAKY}},
        {"1x1 output", {1, 3, 3, 130, 3, 3, 130, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_NONE}},
        {"cout 100 chunks", {1, 11, 13, 33, 3, 3, 100, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU6}},
        {"many tiles", {1, 30, 30, 64, 3, 3, 64, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        {"deep", {1, 7, 7, 520, 3, 3, 130, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_NONE}},
        /* 49 tiles (F(4x4) at 28x28, F(2x2) at 14x14): the 7-row kernel's
         * GEMMs on AVX-512 (two 32-column calls per 64-column chunk, a
         * last chunk of 6 or 2 columns) */
        {"49 tiles F4", {1, 28, 28, 24, 3, 3, 70, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        {"49 tiles F2", {1, 14, 14, 40, 3, 3, 130, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU6}},
        /* one block, two 64-column chunks: at 2 threads a task per chunk,
         * each transforming the whole input (tiles of images 0 and 1) */
        {"two groups N2", {2, 10, 9, 20, 3, 3, 128, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        /* the 16-lane transforms on AVX-512 (Cin, Cout multiples of 16),
         * a last chunk of 16 columns; 16 lanes in and 8 out */
        {"16 lanes", {1, 9, 10, 32, 3, 3, 80, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_LEAKY}},
        {"16 lanes in", {1, 6, 11, 48, 3, 3, 40, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_RELU6}},
    };
    for (wino_mode = 2; wino_mode <= 4; wino_mode += 2) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_conv_all(&cases[i].c, cases[i].name);
        for (int it = 0; it < 12; it++) { /* random shapes */
            static const int64_t cins[] = {1, 8, 19, 64}, couts[] = {3, 16, 40, 65};
            frand();
            uint64_t r = rng >> 20;
            ConvCase c = {.n = 1 + (int64_t)(r % 2),
                          .h = 1 + (int64_t)((r >> 2) % 12),
                          .w = 1 + (int64_t)((r >> 6) % 12),
                          .cin = cins[(r >> 10) % 4],
                          .kh = 3,
                          .kw = 3,
                          .cout = couts[(r >> 12) % 4],
                          .sh = 1,
                          .sw = 1,
                          .dh = 1,
                          .dw = 1,
                          .pt = (int64_t)((r >> 14) % 3),
                          .pl = (int64_t)((r >> 16) % 3),
                          .pb = (int64_t)((r >> 18) % 3),
                          .pr = (int64_t)((r >> 20) % 3),
                          .bias = (r >> 22) & 1,
                          .act = (int)((r >> 24) % 4)};
            c.res = c.bias && ((r >> 23) & 1);
            if (c.h + c.pt + c.pb < 3)
                c.pb += 3 - (c.h + c.pt + c.pb);
            if (c.w + c.pl + c.pr < 3)
                c.pr += 3 - (c.w + c.pl + c.pr);
            char name[64];
            snprintf(name, sizeof name, "winograd F(%d) random #%d", wino_mode, it);
            run_conv_all(&c, name);
        }
    }
    wino_mode = 0;
}
END_TEST

/* ---- depthwise conv with fused 1x1 convs (TCRT_CONV_PACK_DWBLOCK) ---- */

typedef struct DwbCase {
    int64_t n, h, w, ci, ce, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    int fuse, eact, act;
    int64_t co;
    int pact;
    bool res;
} DwbCase;

/* y = act(ref conv) of in[0..n_in) with params p (the oracle's steps). */
static void ref_step(const tcrt_tensor *in, int n_in, tcrt_tensor *out, const tcrt_params *p)
{
    ck_assert_int_eq(tcrt_ref_conv2d(in, n_in, out, 1, p), TCRT_OK);
}

/* The oracle is the plain reference convs one after the other, each result
 * stored as f32: the 1x1 expansion on HWIO weights (bias, eact), the
 * depthwise conv (bias, act, and the residual when it is last), the 1x1
 * projection on HWIO weights (bias, residual, pact), all by
 * tcrt_ref_conv2d's unpacked paths.  Under test: tcrt_fast_conv2d on the
 * one fused filter vector (each ISA, threads 1..3: 1..3 bands, more without
 * an expansion), the reference kernel on that vector (the fallback), and
 * the fast kernel with a workspace one byte short (falls back to it). */
static void run_dwb(const DwbCase *c, const char *name)
{
    bool ex = c->fuse & TCRT_FUSE_EXPAND, pr = c->fuse & TCRT_FUSE_PROJECT;
    ck_assert(ex || c->ci == c->ce);
    int64_t oh = out_size(c->h, c->kh, c->sh, c->dh, c->pt, c->pb);
    int64_t ow = out_size(c->w, c->kw, c->sw, c->dw, c->pl, c->pr);
    ck_assert(oh > 0 && ow > 0);
    int64_t co = pr ? c->co : c->ce, nx = c->n * c->h * c->w * c->ci, ne = c->n * c->h * c->w * c->ce,
            nd = c->n * oh * ow * c->ce, ny = c->n * oh * ow * co;
    float *x = rand_buf(nx), *we = rand_buf(c->ci * c->ce), *be = rand_buf(c->ce),
          *wd = rand_buf(c->kh * c->kw * c->ce), *bd = rand_buf(c->ce), *wp = rand_buf(c->ce * co),
          *bp = rand_buf(co), *res = rand_buf(ny);
    float *e = malloc((size_t)ne * sizeof(float)), *dv = malloc((size_t)nd * sizeof(float)),
          *ref = malloc((size_t)ny * sizeof(float)), *got = malloc((size_t)ny * sizeof(float));
    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
    if (ex) {
        p.i[TCRT_CONV_ACT] = c->eact;
        p.f[0] = 0.25;
        tcrt_tensor in[3] = {{x, TCRT_F32, 4, {c->n, c->h, c->w, c->ci}},
                             {we, TCRT_F32, 4, {1, 1, c->ci, c->ce}},
                             {be, TCRT_F32, 1, {c->ce}}};
        tcrt_tensor out = {e, TCRT_F32, 4, {c->n, c->h, c->w, c->ce}};
        ref_step(in, 3, &out, &p);
    } else {
        memcpy(e, x, (size_t)ne * sizeof(float));
    }
    tcrt_params q = p;
    q.i[TCRT_CONV_SH] = c->sh, q.i[TCRT_CONV_SW] = c->sw, q.i[TCRT_CONV_DH] = c->dh,
    q.i[TCRT_CONV_DW] = c->dw;
    q.i[TCRT_CONV_PT] = c->pt, q.i[TCRT_CONV_PL] = c->pl, q.i[TCRT_CONV_PB] = c->pb,
    q.i[TCRT_CONV_PR] = c->pr;
    q.i[TCRT_CONV_DEPTHWISE] = 1;
    q.i[TCRT_CONV_ACT] = c->act;
    q.f[0] = 0.125;
    {
        tcrt_tensor in[4] = {{e, TCRT_F32, 4, {c->n, c->h, c->w, c->ce}},
                             {wd, TCRT_F32, 4, {c->kh, c->kw, c->ce, 1}},
                             {bd, TCRT_F32, 1, {c->ce}},
                             {res, TCRT_F32, 4, {c->n, oh, ow, c->ce}}};
        tcrt_tensor out = {pr ? dv : ref, TCRT_F32, 4, {c->n, oh, ow, c->ce}};
        ref_step(in, c->res && !pr ? 4 : 3, &out, &q);
    }
    if (pr) {
        p.i[TCRT_CONV_ACT] = c->pact;
        p.f[0] = 0.5;
        tcrt_tensor in[4] = {{dv, TCRT_F32, 4, {c->n, oh, ow, c->ce}},
                             {wp, TCRT_F32, 4, {1, 1, c->ce, co}},
                             {bp, TCRT_F32, 1, {co}},
                             {res, TCRT_F32, 4, {c->n, oh, ow, co}}};
        tcrt_tensor out = {ref, TCRT_F32, 4, {c->n, oh, ow, co}};
        ref_step(in, c->res ? 4 : 3, &out, &p);
    }

    /* the fused filter vector */
    int64_t off[TCRT_DWB_PARTS],
        nf = tcrt_conv_dwblock_floats(c->fuse, c->ci, c->ce, c->kh, c->kw, pr ? co : 0, off);
    ck_assert(nf > 0 && off[TCRT_DWB_BE] == (ex ? (c->ce + 15) / 16 * 16 * c->ci : 0) &&
              off[TCRT_DWB_WP] == off[TCRT_DWB_WD] + c->kh * c->kw * c->ce &&
              nf == off[TCRT_DWB_BP] + (pr ? co : 0));
    float *f = malloc((size_t)nf * sizeof(float));
    if (ex) {
        tcrt_pack_conv_weights(we, 1, 1, c->ci, c->ce, f + off[TCRT_DWB_WE]);
        memcpy(f + off[TCRT_DWB_BE], be, (size_t)c->ce * sizeof(float));
    }
    memcpy(f + off[TCRT_DWB_WD], wd, (size_t)(c->kh * c->kw * c->ce) * sizeof(float));
    if (pr) {
        tcrt_pack_conv_weights(wp, 1, 1, c->ce, co, f + off[TCRT_DWB_WP]);
        memcpy(f + off[TCRT_DWB_BP], bp, (size_t)co * sizeof(float));
    }
    q.i[TCRT_CONV_PACKED] = TCRT_CONV_PACK_DWBLOCK;
    q.i[TCRT_CONV_FUSE] = c->fuse;
    q.i[TCRT_CONV_COUT] = c->ce;
    q.i[TCRT_CONV_KH] = c->kh, q.i[TCRT_CONV_KW] = c->kw;
    q.i[TCRT_CONV_EACT] = c->eact;
    q.i[TCRT_CONV_PCOUT] = pr ? co : 0;
    q.i[TCRT_CONV_PACT] = c->pact;
    q.f[1] = 0.25;
    q.f[2] = 0.5;
    int n_in = c->res ? 4 : 3;
    tcrt_tensor in[4] = {{x, TCRT_F32, 4, {c->n, c->h, c->w, c->ci}},
                         {f, TCRT_F32, 1, {nf}},
                         {bd, TCRT_F32, 1, {c->ce}},
                         {res, TCRT_F32, 4, {c->n, oh, ow, co}}};
    tcrt_tensor out[2] = {{got, TCRT_F32, 4, {c->n, oh, ow, co}}, {NULL, TCRT_U8, 1, {0}}};
    size_t ws = tcrt_fast_conv2d_workspace(in, n_in, out, &q);
    ck_assert_msg(ws > 0, "%s: no workspace reported", name);
    out[1].data = ws_alloc(ws);
    /* tolerance: relative 2e-5 (ten times the largest error seen on these
     * cases, 1.9e-6: the f32 intermediates and sums; a wrong tap, row or
     * channel is off by about one product of [-1, 1] values) */
    const float tol = 2e-5f;
    for (int mode = 0; mode < 3; mode++)
        for (int isa = TCRT_ISA_PORTABLE; isa <= TCRT_ISA_AVX512; isa++) {
            if (!tcrt_kern_isa_supported(isa) || (mode > 0 && isa > TCRT_ISA_PORTABLE))
                continue;
            int prev = tcrt_kern_force_isa(isa);
            for (int t = 1; t <= (mode > 0 ? 1 : 3); t++) { /* the reference runs on one thread */
                tcrt_set_threads(t);
                out[1].dims[0] = (int64_t)ws - (mode == 2);
                for (int64_t i = 0; i < ny; i++)
                    got[i] = NAN;
                tcrt_status st = mode == 1 ? tcrt_ref_conv2d(in, n_in, out, 1, &q)
                                           : tcrt_fast_conv2d(in, n_in, out, 2, &q);
                ck_assert_int_eq(st, TCRT_OK);
                for (int64_t i = 0; i < ny; i++)
                    ck_assert_msg(fabsf(got[i] - ref[i]) <= tol * (1 + fabsf(ref[i])),
                                  "%s (%s, %s, %d threads) [%lld]: got %.7g want %.7g", name,
                                  mode == 1   ? "reference"
                                  : mode == 2 ? "short workspace"
                                              : "fast",
                                  isa_name(isa), t, (long long)i, got[i], ref[i]);
            }
            tcrt_kern_force_isa(prev);
        }
    tcrt_set_threads(1);
    free(out[1].data), free(f), free(x), free(we), free(be), free(wd), free(bd), free(wp), free(bp),
        free(res);
    free(e), free(dv), free(ref), free(got);
}

START_TEST(conv_dwblock)
{
    enum { E = TCRT_FUSE_EXPAND, P = TCRT_FUSE_PROJECT, EP = TCRT_FUSE_EXPAND | TCRT_FUSE_PROJECT };
    enum { NONE = TCRT_ACT_NONE, RELU = TCRT_ACT_RELU, R6 = TCRT_ACT_RELU6, LEAKY = TCRT_ACT_LEAKY };
    static const struct {
        const char *name;
        DwbCase c;
    } cases[] = {
        /* n  h   w  ci  ce kh kw sh sw dh dw pt pl pb pr fuse eact act co pact res */
        {"expand s1", {1, 9, 20, 16, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, E, R6, R6, 0, NONE, false}},
        {"expand s2 (TF SAME)", {1, 10, 17, 24, 40, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, E, R6, R6, 0, NONE, false}},
        {"expand 5x5 residual",
         {2, 7, 11, 17, 100, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, E, LEAKY, NONE, 0, NONE, true}},
        {"expand valid, cin 3",
         {1, 6, 9, 3, 20, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, E, NONE, RELU, 0, NONE, false}},
        {"expand dilation 2", {1, 8, 12, 8, 24, 3, 3, 1, 2, 2, 1, 2, 0, 1, 2, E, RELU, LEAKY, 0, NONE, true}},
        {"expand 1x3 stride 3", {1, 11, 5, 5, 33, 1, 3, 3, 1, 1, 1, 0, 1, 0, 1, E, R6, NONE, 0, NONE, false}},
        {"expand one row", {1, 1, 7, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, E, R6, R6, 0, NONE, true}},
        /* a projection after the depthwise conv (blazeface: 3x3 24 -> 1x1 24 + residual) */
        {"project residual",
         {1, 12, 18, 24, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, P, NONE, NONE, 24, RELU, true}},
        {"project 5x5 s2, 17 -> 40",
         {2, 9, 13, 17, 17, 5, 5, 2, 2, 1, 1, 1, 2, 2, 1, P, NONE, R6, 40, NONE, false}},
        {"project dilation 2, 8 -> 5",
         {1, 7, 9, 8, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, P, NONE, RELU, 5, LEAKY, true}},
        /* the whole inverted residual block (MobileNetV2) */
        {"expand + project residual",
         {1, 8, 19, 16, 96, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, EP, R6, R6, 16, NONE, true}},
        {"expand + project s2",
         {1, 11, 16, 24, 72, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, EP, R6, R6, 40, NONE, false}},
        /* tall enough for several bands per thread at 2 threads (4 at stride 2,
         * 4 at stride 1): a band that continues the thread's previous one
         * starts from the rows in its ring, the thread taking bands from the
         * back going down each band (fast_pool.c ring_fill); two images */
        {"expand + project s2, many bands",
         {1, 40, 9, 16, 48, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, EP, R6, R6, 24, NONE, false}},
        {"expand + project s2, many bands, N=2",
         {2, 40, 9, 16, 48, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, EP, R6, R6, 24, NONE, false}},
        {"expand + project s1 residual, many bands",
         {1, 70, 7, 8, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, EP, R6, R6, 8, NONE, true}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_dwb(&cases[i].c, cases[i].name);
}
END_TEST

/* tcrt_fast_conv2d_transpose against tcrt_ref_conv2d_transpose (which sums in
 * double): 2x2 stride-2 upsampling (meet's head), 3x3 stride 1 and 2 with
 * pads and odd output sizes (taps that miss), dilation 2, Cdy 1, 16, 19 (8-lane
 * tails), C 1, 2, 17, N = 2, each activation, 1 and 2 threads; tolerance
 * 1e-5 (1 + sum |dy*w|) from the same op on |dy| and |w|. */
START_TEST(conv_transpose_fast)
{
    static const struct {
        int64_t n, oh, ow, cdy, kh, kw, c, h, w, s, d, pt, pl;
        int act;
    } cases[] = {
        {1, 9, 16, 16, 2, 2, 2, 18, 32, 2, 1, 0, 0, TCRT_ACT_NONE},
        {2, 5, 6, 19, 3, 3, 17, 5, 6, 1, 1, 1, 1, TCRT_ACT_RELU},
        {1, 4, 5, 16, 3, 3, 3, 7, 9, 2, 1, 1, 1, TCRT_ACT_RELU6},
        {1, 4, 5, 16, 3, 3, 3, 8, 10, 2, 1, 1, 1, TCRT_ACT_LEAKY},
        {1, 6, 6, 1, 3, 3, 1, 10, 10, 1, 2, 0, 0, TCRT_ACT_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ndy = cases[i].n * cases[i].oh * cases[i].ow * cases[i].cdy,
                nw = cases[i].kh * cases[i].kw * cases[i].c * cases[i].cdy,
                ny = cases[i].n * cases[i].h * cases[i].w * cases[i].c;
        float *dy = rand_buf(ndy), *w = rand_buf(nw), *ref = malloc((size_t)ny * sizeof(float)),
              *got = malloc((size_t)ny * sizeof(float)), *mag = malloc((size_t)ny * sizeof(float));
        float *ady = malloc((size_t)ndy * sizeof(float)), *aw = malloc((size_t)nw * sizeof(float));
        for (int64_t k = 0; k < ndy; k++)
            ady[k] = fabsf(dy[k]);
        for (int64_t k = 0; k < nw; k++)
            aw[k] = fabsf(w[k]);
        tcrt_params p;
        memset(&p, 0, sizeof p);
        p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = cases[i].s;
        p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = cases[i].d;
        p.i[TCRT_CONV_PT] = cases[i].pt, p.i[TCRT_CONV_PL] = cases[i].pl;
        p.i[TCRT_CONV_ACT] = cases[i].act;
        p.f[0] = 0.125;
        tcrt_tensor in[2] = {{dy, TCRT_F32, 4, {cases[i].n, cases[i].oh, cases[i].ow, cases[i].cdy}},
                             {w, TCRT_F32, 4, {cases[i].kh, cases[i].kw, cases[i].c, cases[i].cdy}}};
        tcrt_tensor ain[2] = {in[0], in[1]};
        ain[0].data = ady, ain[1].data = aw;
        tcrt_tensor out = {ref, TCRT_F32, 4, {cases[i].n, cases[i].h, cases[i].w, cases[i].c}}, mout = out;
        mout.data = mag;
        ck_assert_int_eq(tcrt_ref_conv2d_transpose(in, 2, &out, 1, &p), TCRT_OK);
        tcrt_params pa = p;
        pa.i[TCRT_CONV_ACT] = TCRT_ACT_NONE;
        ck_assert_int_eq(tcrt_ref_conv2d_transpose(ain, 2, &mout, 1, &pa), TCRT_OK);
        for (int t = 1; t <= 2; t++) {
            tcrt_set_threads(t);
            out.data = got;
            for (int64_t k = 0; k < ny; k++)
                got[k] = NAN;
            ck_assert_int_eq(tcrt_fast_conv2d_transpose(in, 2, &out, 1, &p), TCRT_OK);
            for (int64_t k = 0; k < ny; k++)
                ck_assert_msg(fabsf(got[k] - ref[k]) <= 1e-5f * (1 + mag[k]),
                              "conv_transpose case %zu (%d threads) [%lld]: got %.7g want %.7g", i, t,
                              (long long)k, got[k], ref[k]);
        }
        tcrt_set_threads(1);
        free(dy), free(w), free(ref), free(got), free(mag), free(ady), free(aw);
    }
}
END_TEST

START_TEST(conv_random)
{
    static const int64_t cins[] = {1, 3, 17, 64}, couts[] = {1, 5, 16, 17, 33, 100};
    for (int it = 0; it < 24; it++) {
        ConvCase c;
        memset(&c, 0, sizeof c);
        frand();
        uint64_t r = rng >> 20;
        c.n = 1 + (int64_t)(r % 2);
        c.cin = cins[(r >> 3) % 4];
        c.cout = couts[(r >> 5) % 6];
        c.kh = 1 + (int64_t)((r >> 8) % 3) * 2;
        c.kw = 1 + (int64_t)((r >> 10) % 3);
        c.sh = 1 + (int64_t)((r >> 12) % 2), c.sw = 1 + (int64_t)((r >> 13) % 2);
        c.dh = 1 + (int64_t)((r >> 14) % 2), c.dw = 1;
        c.pt = (int64_t)((r >> 15) % 3), c.pl = (int64_t)((r >> 17) % 2);
        c.pb = (int64_t)((r >> 18) % 2), c.pr = (int64_t)((r >> 19) % 3);
        c.h = (c.kh - 1) * c.dh + 1 + (int64_t)((r >> 21) % 6);
        c.w = (c.kw - 1) * c.dw + 1 + (int64_t)((r >> 24) % 7);
        c.bias = (r >> 27) & 1;
        c.res = c.bias && ((r >> 28) & 1);
        c.act = (int)((r >> 29) % 4);
        char name[64];
        snprintf(name, sizeof name, "random #%d", it);
        run_conv_all(&c, name);
    }
}
END_TEST

/* fast_conv.c's direct loops (four pixels at a time inside the input, one
 * at a time at the borders): narrow (Cout <= 2, Cin >= 8, vectors over Cin)
 * and thin (Cout <= 8, taps*Cin <= 64, vectors over Cout); Cout 3 and 4
 * with Cin >= 8 also run (thin or the packed kernel).  Fixed cases
 * (a segmentation head 3x3 to Cout 1, 1x1 to Cout 2 with residual, strides,
 * dilations, asymmetric and big pads so that whole rows and columns have no
 * tap, outputs narrower than four pixels, Cin tails 9/17/33, a weight block
 * just under and just over the narrow path's 4096-float limit; thin: 1x1
 * 8 -> 8 with residual, Cout 8 / 7 / 5 / 3 (full and partial vectors, the
 * residual's last vector at a row end), Cin 1 and 3, taps*Cin 63, 64 and
 * 65 (the last on the packed kernel); Cout 9..16 (packed)), then random
 * shapes of both. */
START_TEST(conv_narrow)
{
    static const struct {
        const char *name;
        ConvCase c;
    } cases[] = {
        /* n  h   w  cin kh kw cout sh sw dh dw pt pl pb pr bias res act */
        {"head 3x3 cout1", {1, 17, 19, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, false, TCRT_ACT_NONE}},
        {"1x1 cout2 res", {2, 7, 9, 24, 1, 1, 2, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_RELU6}},
        {"1x1 cout4 (thin)", {1, 7, 9, 16, 1, 1, 4, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_NONE}},
        {"s2 cin9 cout2", {1, 11, 13, 9, 3, 3, 2, 2, 2, 1, 1, 0, 1, 1, 0, true, true, TCRT_ACT_LEAKY}},
        {"dil2 cin17 cout3", {1, 9, 12, 17, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, false, false, TCRT_ACT_RELU}},
        {"big pads", {1, 3, 4, 8, 3, 3, 1, 1, 1, 1, 1, 4, 3, 2, 5, true, false, TCRT_ACT_NONE}},
        {"narrow w", {2, 6, 3, 33, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_NONE}},
        {"5x5 s2 cout1", {1, 14, 15, 16, 5, 5, 1, 2, 2, 1, 1, 2, 2, 1, 1, true, false, TCRT_ACT_RELU}},
        {"limit 4096", {1, 5, 6, 512, 2, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, true, false, TCRT_ACT_NONE}},
        {"over limit", {1, 5, 6, 513, 2, 2, 2, 1, 1, 1, 1, 0, 0, 1, 1, true, true, TCRT_ACT_RELU}},
        {"thin 1x1 8->8 res", {2, 9, 13, 8, 1, 1, 8, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_RELU6}},
        {"thin cout7 3x3", {1, 10, 11, 7, 3, 3, 7, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_LEAKY}},
        {"thin cout5 s2", {1, 12, 9, 5, 3, 3, 5, 2, 2, 1, 1, 0, 1, 1, 0, true, true, TCRT_ACT_RELU}},
        {"thin cout3 dil", {2, 9, 10, 3, 3, 2, 3, 1, 1, 2, 2, 2, 1, 2, 1, false, false, TCRT_ACT_NONE}},
        {"packed cout12", {1, 12, 9, 5, 3, 3, 12, 2, 2, 1, 1, 0, 1, 1, 0, true, true, TCRT_ACT_RELU}},
        {"thin cin1 cout3", {1, 7, 6, 1, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true, TCRT_ACT_RELU}},
        {"thin cin3 big pads", {1, 3, 4, 3, 3, 3, 6, 1, 1, 1, 1, 4, 3, 2, 5, true, false, TCRT_ACT_NONE}},
        {"thin K 64", {1, 6, 7, 64, 1, 1, 8, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_NONE}},
        {"packed K 65", {1, 6, 7, 65, 1, 1, 8, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_NONE}},
        {"packed 16 -> 16", {1, 6, 7, 16, 1, 1, 16, 1, 1, 1, 1, 0, 0, 0, 0, true, true, TCRT_ACT_RELU}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_conv_all(&cases[i].c, cases[i].name);
    for (int it = 0; it < 24; it++) {
        ConvCase c;
        memset(&c, 0, sizeof c);
        frand();
        uint64_t r = rng >> 20;
        c.n = 1 + (int64_t)(r % 2);
        c.cin = 8 + (int64_t)((r >> 1) % 30);
        c.cout = 1 + (int64_t)((r >> 6) % 4);
        c.kh = 1 + (int64_t)((r >> 8) % 4);
        c.kw = 1 + (int64_t)((r >> 10) % 4);
        c.sh = 1 + (int64_t)((r >> 12) % 2), c.sw = 1 + (int64_t)((r >> 13) % 2);
        c.dh = 1 + (int64_t)((r >> 14) % 2), c.dw = 1 + (int64_t)((r >> 30) % 2);
        c.pt = (int64_t)((r >> 15) % 3), c.pl = (int64_t)((r >> 17) % 3);
        c.pb = (int64_t)((r >> 19) % 2), c.pr = (int64_t)((r >> 20) % 3);
        c.h = (c.kh - 1) * c.dh + 1 + (int64_t)((r >> 22) % 9);
        c.w = (c.kw - 1) * c.dw + 1 + (int64_t)((r >> 25) % 12);
        c.bias = (r >> 29) & 1;
        c.res = c.bias && ((r >> 31) & 1);
        c.act = (int)((r >> 32) % 4);
        char name[64];
        snprintf(name, sizeof name, "narrow random #%d", it);
        run_conv_all(&c, name);
    }
    for (int it = 0; it < 24; it++) {
        ConvCase c;
        memset(&c, 0, sizeof c);
        frand();
        uint64_t r = rng >> 20;
        c.n = 1 + (int64_t)(r % 2);
        c.kh = 1 + (int64_t)((r >> 1) % 3);
        c.kw = 1 + (int64_t)((r >> 3) % 3);
        c.cout = 1 + (int64_t)((r >> 11) % 8);
        c.cin = 1 + (int64_t)((r >> 5) % (64 / (c.kh * c.kw)));
        c.sh = 1 + (int64_t)((r >> 15) % 2), c.sw = 1 + (int64_t)((r >> 16) % 2);
        c.dh = 1 + (int64_t)((r >> 17) % 2), c.dw = 1 + (int64_t)((r >> 18) % 2);
        c.pt = (int64_t)((r >> 19) % 3), c.pl = (int64_t)((r >> 21) % 3);
        c.pb = (int64_t)((r >> 23) % 2), c.pr = (int64_t)((r >> 24) % 3);
        c.h = (c.kh - 1) * c.dh + 1 + (int64_t)((r >> 26) % 9);
        c.w = (c.kw - 1) * c.dw + 1 + (int64_t)((r >> 30) % 12);
        c.bias = (r >> 34) & 1;
        c.res = c.bias && ((r >> 35) & 1);
        c.act = (int)((r >> 36) % 4);
        char name[64];
        snprintf(name, sizeof name, "thin random #%d", it);
        run_conv_all(&c, name);
    }
}
END_TEST

START_TEST(conv_small_workspace)
{
    /* a workspace one byte short: the kernel falls back to the reference
     * (Cin 8, 3x3: taps*Cin 72 and Cout 5 are past the direct loops) */
    int64_t ny = 5 * 5 * 5;
    float *x = rand_buf(5 * 5 * 8), *w = rand_buf(3 * 3 * 8 * 5), *bias = rand_buf(5);
    float *pw = malloc((size_t)tcrt_conv_packed_floats(3, 3, 8, 5) * sizeof(float));
    float ref[125], got[125];
    tcrt_pack_conv_weights(w, 3, 3, 8, 5, pw);
    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
    p.i[TCRT_CONV_PT] = p.i[TCRT_CONV_PL] = p.i[TCRT_CONV_PB] = p.i[TCRT_CONV_PR] = 1;
    tcrt_tensor rin[3] = {
        {x, TCRT_F32, 4, {1, 5, 5, 8}}, {w, TCRT_F32, 4, {3, 3, 8, 5}}, {bias, TCRT_F32, 1, {5}}};
    tcrt_tensor rout = {ref, TCRT_F32, 4, {1, 5, 5, 5}};
    ck_assert_int_eq(tcrt_ref_conv2d(rin, 3, &rout, 1, &p), TCRT_OK);
    p.i[TCRT_CONV_PACKED] = 1;
    p.i[TCRT_CONV_COUT] = 5;
    tcrt_tensor in[3] = {rin[0], {pw, TCRT_F32, 5, {1, 3, 3, 8, 16}}, rin[2]};
    tcrt_tensor out[2] = {{got, TCRT_F32, 4, {1, 5, 5, 5}}, {NULL, TCRT_U8, 1, {0}}};
    size_t ws = tcrt_fast_conv2d_workspace(in, 3, out, &p);
    /* sized for every thread up to TCRT_MAX_THREADS: pointers of one tile each */
    ck_assert_uint_ge(ws, (size_t)TCRT_MAX_THREADS * TCRT_KERN_MAX_MR * 9 * sizeof(float *));
    out[1].data = ws_alloc(ws);
    out[1].dims[0] = (int64_t)ws - 1;
    ck_assert_int_eq(tcrt_fast_conv2d(in, 3, out, 2, &p), TCRT_OK);
    for (int64_t i = 0; i < ny; i++)
        ck_assert_msg(fabsf(got[i] - ref[i]) <= 1e-4f * (1 + fabsf(ref[i])), "[%lld] %g vs %g", (long long)i,
                      got[i], ref[i]);
    free(out[1].data), free(x), free(w), free(bias), free(pw);
}
END_TEST

/* tcrt_fast_matmul vs tcrt_ref_matmul on [b]xMxK * KxN (or NxK when tb). */
static void run_mm(int64_t batch, int64_t M, int64_t N, int64_t K, bool tb, bool bias, int act,
                   const char *what)
{
    int64_t na = batch * M * K, nb = K * N, nc = batch * M * N;
    float *a = rand_buf(na), *b = rand_buf(nb), *bs = rand_buf(N);
    float *ref = malloc((size_t)nc * sizeof(float)), *got = malloc((size_t)nc * sizeof(float));
    float *mag = malloc((size_t)nc * sizeof(float));
    float *aa = malloc((size_t)na * sizeof(float)), *ab = malloc((size_t)nb * sizeof(float));
    for (int64_t i = 0; i < na; i++)
        aa[i] = fabsf(a[i]);
    for (int64_t i = 0; i < nb; i++)
        ab[i] = fabsf(b[i]);
    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_MM_TB] = tb;
    p.i[TCRT_MM_ACT] = act;
    p.f[0] = 0.125;
    int n_in = bias ? 3 : 2;
    tcrt_tensor in[3] = {
        {a, TCRT_F32, 3, {batch, M, K}}, {b, TCRT_F32, 2, {tb ? N : K, tb ? K : N}}, {bs, TCRT_F32, 1, {N}}};
    tcrt_tensor rout = {ref, TCRT_F32, 3, {batch, M, N}};
    ck_assert_int_eq(tcrt_ref_matmul(in, n_in, &rout, 1, &p), TCRT_OK);
    tcrt_params pm = p;
    pm.i[TCRT_MM_ACT] = TCRT_ACT_NONE;
    tcrt_tensor ain[2] = {{aa, TCRT_F32, 3, {batch, M, K}}, {ab, TCRT_F32, 2, {tb ? N : K, tb ? K : N}}};
    tcrt_tensor aout = {mag, TCRT_F32, 3, {batch, M, N}};
    ck_assert_int_eq(tcrt_ref_matmul(ain, 2, &aout, 1, &pm), TCRT_OK);
    tcrt_tensor out[2] = {{got, TCRT_F32, 3, {batch, M, N}}, {NULL, TCRT_U8, 1, {0}}};
    size_t ws = tcrt_fast_matmul_workspace(in, n_in, out, &p);
    out[1].data = ws_alloc(ws);
    out[1].dims[0] = (int64_t)ws;
    ck_assert_int_eq(tcrt_fast_matmul(in, n_in, out, 2, &p), TCRT_OK);
    for (int64_t i = 0; i < nc; i++)
        ck_assert_msg(fabsf(got[i] - ref[i]) <= 1e-4f * (1 + mag[i] + (bias ? 1 : 0)),
                      "%s [%lld]: got %.7g want %.7g", what, (long long)i, got[i], ref[i]);
    free(out[1].data), free(a), free(b), free(bs), free(ref), free(got), free(mag), free(aa), free(ab);
}

START_TEST(matmul_cases)
{
    static const struct {
        int64_t batch, M, N, K;
        bool tb, bias;
        int act;
    } cases[] = {
        {1, 37, 53, 29, false, true, TCRT_ACT_RELU},
        {1, 64, 100, 130, true, false, TCRT_ACT_NONE},
        {2, 19, 17, 128, false, true, TCRT_ACT_LEAKY},
        {1, 13, 200, 1030, true, true, TCRT_ACT_RELU6},
        {1, 100, 33, 256, false, false, TCRT_ACT_NONE},
        {3, 9, 16, 64, true, true, TCRT_ACT_RELU},
        {1, 70, 80, 600, false, true, TCRT_ACT_NONE},
        /* GEMM blocking: 3 K blocks, 2 N blocks, M % 6 = 2 */
        {1, 50, 530, 2100, true, true, TCRT_ACT_RELU},
        /* the same with B's rows packed by row tasks (the last N block's
         * last panel partly filled); K blocks of 700: A's 8-k groups and a
         * 4-k rest */
        {1, 50, 530, 2100, false, true, TCRT_ACT_RELU},
        /* A packed by several tasks; K % 16 = 0 */
        {1, 600, 20, 64, false, true, TCRT_ACT_RELU6},
    };
    for (int isa = TCRT_ISA_PORTABLE; isa <= TCRT_ISA_AVX512; isa++) {
        if (!tcrt_kern_isa_supported(isa))
            continue;
        int prev = tcrt_kern_force_isa(isa);
        for (int t = 1; t <= 2; t++) {
            tcrt_set_threads(t);
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                char what[128];
                snprintf(what, sizeof what, "matmul #%zu (%s, %d threads)", i, isa_name(isa), t);
                run_mm(cases[i].batch, cases[i].M, cases[i].N, cases[i].K, cases[i].tb, cases[i].bias,
                       cases[i].act, what);
            }
        }
        tcrt_kern_force_isa(prev);
    }
    tcrt_set_threads(1);
}
END_TEST

/* The next-layer prefetch's memory (fast_conv.c): packed convs A, B, A, B
 * in a row teach the runtime that B follows A and A follows B; runs with
 * the hint give the same outputs as the first (it only prefetches). */
START_TEST(conv_next_weights)
{
    enum { H = 7, C = 64, OA = 96, OB = 160 };
    float *x = rand_buf(H * H * C), *wa = rand_buf(C * OA), *wb = rand_buf(C * OB);
    float *pa = malloc((size_t)tcrt_conv_packed_floats(1, 1, C, OA) * sizeof(float));
    float *pb = malloc((size_t)tcrt_conv_packed_floats(1, 1, C, OB) * sizeof(float));
    tcrt_pack_conv_weights(wa, 1, 1, C, OA, pa);
    tcrt_pack_conv_weights(wb, 1, 1, C, OB, pb);
    float *ya[2], *yb[2];
    for (int i = 0; i < 2; i++) {
        ya[i] = malloc(H * H * OA * sizeof(float));
        yb[i] = malloc(H * H * OB * sizeof(float));
    }
    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
    p.i[TCRT_CONV_PACKED] = TCRT_CONV_PACK_DIRECT;
    for (int round = 0; round < 2; round++)
        for (int which = 0; which < 2; which++) {
            int64_t o = which ? OB : OA;
            p.i[TCRT_CONV_COUT] = o;
            tcrt_tensor in[2] = {{x, TCRT_F32, 4, {1, H, H, C}},
                                 {which ? pb : pa, TCRT_F32, 5, {o / 16, 1, 1, C, 16}}};
            tcrt_tensor out[2] = {{which ? yb[round] : ya[round], TCRT_F32, 4, {1, H, H, o}},
                                  {NULL, TCRT_U8, 1, {0}}};
            size_t ws = tcrt_fast_conv2d_workspace(in, 2, out, &p);
            ck_assert_uint_gt(ws, 0);
            out[1].data = ws_alloc(ws);
            out[1].dims[0] = (int64_t)ws;
            ck_assert_int_eq(tcrt_fast_conv2d(in, 2, out, 2, &p), TCRT_OK);
            free(out[1].data);
        }
    ck_assert_ptr_eq(tcrt_pconv_next_weights(pa), pb);
    ck_assert_ptr_eq(tcrt_pconv_next_weights(pb), pa);
    float never[16]; /* never a conv's weights */
    ck_assert_ptr_null(tcrt_pconv_next_weights(never));
    ck_assert_mem_eq(ya[0], ya[1], H * H * OA * sizeof(float));
    ck_assert_mem_eq(yb[0], yb[1], H * H * OB * sizeof(float));
    for (int i = 0; i < 2; i++)
        free(ya[i]), free(yb[i]);
    free(x), free(wa), free(wb), free(pa), free(pb);
}
END_TEST

/* ---- conv pairs (TCRT_CONV_X2S) ---- */

typedef struct PairCase {
    int64_t n, h, w, c, sh, sw, h2, w2, c2, s, cout;
    int act;
} PairCase;

static float *abs_copy(const float *v, int64_t n)
{
    float *a = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        a[i] = fabsf(v[i]);
    return a;
}

/* The oracle of a pair case: x2's conv (stride s, bias bb) stored first,
 * then passed as the residual of x's (strides sh/sw, bias ba, act), each
 * by tcrt_ref_conv2d on HWIO weights. */
static void two_convs(const PairCase *c, float *x, float *x2, float *wa, float *wb, float *ba, float *bb,
                      int act, float *y)
{
    int64_t oh = (c->h - 1) / c->sh + 1, ow = (c->w - 1) / c->sw + 1;
    float *t = malloc((size_t)(c->n * oh * ow * c->cout) * sizeof(float));
    tcrt_params q;
    memset(&q, 0, sizeof q);
    q.i[TCRT_CONV_SH] = q.i[TCRT_CONV_SW] = c->s;
    q.i[TCRT_CONV_DH] = q.i[TCRT_CONV_DW] = 1;
    tcrt_tensor tin[3] = {{x2, TCRT_F32, 4, {c->n, c->h2, c->w2, c->c2}},
                          {wb, TCRT_F32, 4, {1, 1, c->c2, c->cout}},
                          {bb, TCRT_F32, 1, {c->cout}}};
    tcrt_tensor tout = {t, TCRT_F32, 4, {c->n, oh, ow, c->cout}};
    ck_assert_int_eq(tcrt_ref_conv2d(tin, 3, &tout, 1, &q), TCRT_OK);
    tcrt_params p = q;
    p.i[TCRT_CONV_SH] = c->sh, p.i[TCRT_CONV_SW] = c->sw, p.i[TCRT_CONV_ACT] = act;
    p.f[0] = 0.125;
    tcrt_tensor rin[4] = {{x, TCRT_F32, 4, {c->n, c->h, c->w, c->c}},
                          {wa, TCRT_F32, 4, {1, 1, c->c, c->cout}},
                          {ba, TCRT_F32, 1, {c->cout}},
                          {t, TCRT_F32, 4, {c->n, oh, ow, c->cout}}};
    tcrt_tensor rout = {y, TCRT_F32, 4, {c->n, oh, ow, c->cout}};
    ck_assert_int_eq(tcrt_ref_conv2d(rin, 4, &rout, 1, &p), TCRT_OK);
    free(t);
}

/* y = act(x * wa + x2 (stride s) * wb + ba + bb).  Oracle: two_convs, the
 * two convs one after the other.
 * Under test on the joined filter [1,1,C+C2,O] (wa's rows then wb's) and
 * the summed bias: tcrt_fast_conv2d packed (each ISA, 1 and 2 threads),
 * the reference kernel on the packed and on the HWIO joined filter, and the
 * fast kernel with a workspace one byte short (falls back). */
static void run_pair(const PairCase *c, const char *name)
{
    int64_t oh = (c->h - 1) / c->sh + 1, ow = (c->w - 1) / c->sw + 1, k = c->c + c->c2;
    ck_assert_int_eq((c->h2 - 1) / c->s + 1, oh);
    ck_assert_int_eq((c->w2 - 1) / c->s + 1, ow);
    int64_t nx = c->n * c->h * c->w * c->c, nx2 = c->n * c->h2 * c->w2 * c->c2, ny = c->n * oh * ow * c->cout;
    float *x = rand_buf(nx), *x2 = rand_buf(nx2), *wa = rand_buf(c->c * c->cout),
          *wb = rand_buf(c->c2 * c->cout);
    float *ba = rand_buf(c->cout), *bb = rand_buf(c->cout), *bsum = malloc((size_t)c->cout * sizeof(float));
    float *ref = malloc((size_t)ny * sizeof(float)), *got = malloc((size_t)ny * sizeof(float)),
          *mag = malloc((size_t)ny * sizeof(float));
    float *wcat = malloc((size_t)(k * c->cout) * sizeof(float));
    for (int64_t o = 0; o < c->cout; o++)
        bsum[o] = ba[o] + bb[o];
    memcpy(wcat, wa, (size_t)(c->c * c->cout) * sizeof(float));
    memcpy(wcat + c->c * c->cout, wb, (size_t)(c->c2 * c->cout) * sizeof(float));
    int64_t np = tcrt_conv_packed_floats(1, 1, k, c->cout);
    float *pw = malloc((size_t)np * sizeof(float));
    tcrt_pack_conv_weights(wcat, 1, 1, k, c->cout, pw);

    two_convs(c, x, x2, wa, wb, ba, bb, c->act, ref);
    /* magnitudes: the same two convs on |x|, |x2|, |wa|, |wb|, no bias */
    float *ax = abs_copy(x, nx), *ax2 = abs_copy(x2, nx2), *awa = abs_copy(wa, c->c * c->cout),
          *awb = abs_copy(wb, c->c2 * c->cout), *zero = calloc((size_t)c->cout, sizeof(float));
    two_convs(c, ax, ax2, awa, awb, zero, zero, TCRT_ACT_NONE, mag);
    free(ax), free(ax2), free(awa), free(awb), free(zero);

    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = c->sh, p.i[TCRT_CONV_SW] = c->sw, p.i[TCRT_CONV_ACT] = c->act;
    p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
    p.f[0] = 0.125;
    p.i[TCRT_CONV_X2S] = c->s;
    p.i[TCRT_CONV_PACKED] = TCRT_CONV_PACK_DIRECT;
    p.i[TCRT_CONV_COUT] = c->cout;
    tcrt_tensor in[4] = {{x, TCRT_F32, 4, {c->n, c->h, c->w, c->c}},
                         {pw, TCRT_F32, 5, {(c->cout + 15) / 16, 1, 1, k, 16}},
                         {bsum, TCRT_F32, 1, {c->cout}},
                         {x2, TCRT_F32, 4, {c->n, c->h2, c->w2, c->c2}}};
    tcrt_tensor out[2] = {{got, TCRT_F32, 4, {c->n, oh, ow, c->cout}}, {NULL, TCRT_U8, 1, {0}}};
    size_t ws = tcrt_fast_conv2d_workspace(in, 4, out, &p);
    ck_assert_msg(ws > 0, "%s: no workspace reported", name);
    out[1].data = ws_alloc(ws);
    char what[200];
    for (int isa = TCRT_ISA_PORTABLE; isa <= TCRT_ISA_AVX512; isa++) {
        if (!tcrt_kern_isa_supported(isa))
            continue;
        int prev = tcrt_kern_force_isa(isa);
        for (int th = 1; th <= 2; th++) {
            tcrt_set_threads(th);
            snprintf(what, sizeof what, "%s (%s, %d threads)", name, isa_name(isa), th);
            for (int64_t i = 0; i < ny; i++)
                got[i] = NAN;
            out[1].dims[0] = (int64_t)ws;
            ck_assert_int_eq(tcrt_fast_conv2d(in, 4, out, 2, &p), TCRT_OK);
            check_out(got, ref, mag, ny, what, "");
        }
        tcrt_kern_force_isa(prev);
    }
    tcrt_set_threads(1);
    /* fallbacks: a workspace one byte short, the reference on pw and on the
     * HWIO joined filter */
    for (int64_t i = 0; i < ny; i++)
        got[i] = NAN;
    out[1].dims[0] = (int64_t)ws - 1;
    ck_assert_int_eq(tcrt_fast_conv2d(in, 4, out, 2, &p), TCRT_OK);
    check_out(got, ref, mag, ny, name, ", short workspace");
    for (int64_t i = 0; i < ny; i++)
        got[i] = NAN;
    ck_assert_int_eq(tcrt_ref_conv2d(in, 4, out, 1, &p), TCRT_OK);
    check_out(got, ref, mag, ny, name, ", reference on the packed filter");
    tcrt_params u = p;
    u.i[TCRT_CONV_PACKED] = 0;
    in[1] = (tcrt_tensor){wcat, TCRT_F32, 4, {1, 1, k, c->cout}};
    for (int64_t i = 0; i < ny; i++)
        got[i] = NAN;
    ck_assert_int_eq(tcrt_fast_conv2d_workspace(in, 4, out, &u), 0);
    ck_assert_int_eq(tcrt_fast_conv2d(in, 4, out, 2, &u), TCRT_OK);
    check_out(got, ref, mag, ny, name, ", HWIO filter (reference)");
    free(out[1].data), free(x), free(x2), free(wa), free(wb), free(ba), free(bb), free(bsum), free(ref);
    free(got), free(mag), free(wcat), free(pw);
}

START_TEST(conv_pair)
{
    const PairCase cases[] = {
        /* a bottleneck's end at small scale: x2 at stride 2, kc 64 */
        {1, 8, 8, 64, 1, 1, 16, 16, 64, 2, 80, TCRT_ACT_RELU},
        /* 2 images, tiles across rows and images, x2 of odd size, kc 16 */
        {2, 5, 7, 48, 1, 1, 9, 13, 32, 2, 33, TCRT_ACT_NONE},
        /* x at stride 2, x2 at stride 1, kc 8 (24, 40) */
        {1, 9, 9, 24, 2, 2, 5, 5, 40, 1, 17, TCRT_ACT_LEAKY},
        /* x2 at stride 3, relu6 */
        {1, 4, 4, 32, 1, 1, 10, 10, 32, 3, 64, TCRT_ACT_RELU6},
        /* 7x7: 7-row tiles where the CPU has them */
        {1, 7, 7, 64, 1, 1, 13, 13, 128, 2, 96, TCRT_ACT_RELU},
        /* Cout block by block (1.5 MB of weights) */
        {1, 3, 3, 256, 1, 1, 6, 6, 512, 2, 512, TCRT_ACT_RELU},
        /* block by block with the taps in two groups (25 taps of 64) */
        {1, 3, 3, 64, 1, 1, 5, 5, 1536, 2, 176, TCRT_ACT_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "pair #%zu", i);
        run_pair(&cases[i], name);
    }
    /* bad geometry: x2 too small for the output; the fast kernel and the
     * reference refuse it (no read past x2) */
    PairCase c = cases[0];
    float *x = rand_buf(c.h * c.w * c.c), *x2 = rand_buf(4 * 4 * c.c2), *bias = rand_buf(c.cout);
    int64_t np = tcrt_conv_packed_floats(1, 1, c.c + c.c2, c.cout);
    float *pw = rand_buf(np), *y = malloc((size_t)(c.h * c.w * c.cout) * sizeof(float));
    tcrt_params p;
    memset(&p, 0, sizeof p);
    p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
    p.i[TCRT_CONV_X2S] = 2, p.i[TCRT_CONV_PACKED] = TCRT_CONV_PACK_DIRECT, p.i[TCRT_CONV_COUT] = c.cout;
    tcrt_tensor in[4] = {{x, TCRT_F32, 4, {1, c.h, c.w, c.c}},
                         {pw, TCRT_F32, 5, {(c.cout + 15) / 16, 1, 1, c.c + c.c2, 16}},
                         {bias, TCRT_F32, 1, {c.cout}},
                         {x2, TCRT_F32, 4, {1, 4, 4, c.c2}}};
    char ws[4096];
    tcrt_tensor out[2] = {{y, TCRT_F32, 4, {1, c.h, c.w, c.cout}}, {ws, TCRT_U8, 1, {sizeof ws}}};
    ck_assert_int_eq(tcrt_fast_conv2d_workspace(in, 4, out, &p), 0);
    ck_assert_int_ne(tcrt_fast_conv2d(in, 4, out, 2, &p), TCRT_OK);
    ck_assert_int_ne(tcrt_ref_conv2d(in, 4, out, 1, &p), TCRT_OK);
    free(x), free(x2), free(bias), free(pw), free(y);
}
END_TEST

START_TEST(isa_cap)
{
    /* the portable kernel is always there; a cap never picks an unsupported ISA */
    ck_assert(tcrt_kern_isa_supported(TCRT_ISA_PORTABLE));
    int prev = tcrt_kern_force_isa(TCRT_ISA_PORTABLE);
    ck_assert_int_eq(tcrt_kern_isa(), TCRT_ISA_PORTABLE);
    tcrt_kern_force_isa(TCRT_ISA_AVX512);
    ck_assert(tcrt_kern_isa_supported(tcrt_kern_isa()));
    tcrt_kern_force_isa(prev);
}
END_TEST

/* The activations on NaN and on values past the clip in the stem loop (3x3
 * stride 2, pad 1, 3 -> 32, all-ones weights, no bias), hand-derived: zeros
 * with a NaN at input pixel (7, 7) channel 0, +100 at (3, 3) channel 1 and
 * -100 at (11, 11) channel 2 of a 16x16 image; a pixel (i, i) lies in the
 * windows of outputs (o, o') with o, o' in {(i - 1) / 2, (i + 1) / 2}, and
 * every output channel sums the same taps.  As tcrt_kern_act: relu gives 0
 * for NaN, relu6 and leaky keep it; relu6 clips to [0, 6], leaky scales
 * -100 by 0.125.  On AVX-512 the packed kernel takes this conv (its
 * epilogue is checked the same way). */
START_TEST(conv_stem_act_nan)
{
    enum { H = 16, C = 3, O = 32, OH = 8 };
    static float x[H * H * C], w[9 * C * O], pw[2 * 9 * C * 16], y[OH * OH * O];
    memset(x, 0, sizeof x);
    for (int i = 0; i < 9 * C * O; i++)
        w[i] = 1.0f;
    tcrt_pack_conv_weights(w, 3, 3, C, O, pw);
    x[(7 * H + 7) * C + 0] = NAN;
    x[(3 * H + 3) * C + 1] = 100.0f;
    x[(11 * H + 11) * C + 2] = -100.0f;
    for (int isa = TCRT_ISA_PORTABLE; isa <= TCRT_ISA_AVX512; isa++) {
        if (!tcrt_kern_isa_supported(isa))
            continue;
        int prev = tcrt_kern_force_isa(isa);
        for (int act = TCRT_ACT_NONE; act <= TCRT_ACT_LEAKY; act++) {
            tcrt_params p;
            memset(&p, 0, sizeof p);
            p.i[TCRT_CONV_SH] = p.i[TCRT_CONV_SW] = 2;
            p.i[TCRT_CONV_DH] = p.i[TCRT_CONV_DW] = 1;
            p.i[TCRT_CONV_PT] = p.i[TCRT_CONV_PL] = p.i[TCRT_CONV_PB] = p.i[TCRT_CONV_PR] = 1;
            p.i[TCRT_CONV_ACT] = act;
            p.i[TCRT_CONV_PACKED] = TCRT_CONV_PACK_DIRECT;
            p.i[TCRT_CONV_COUT] = O;
            p.f[0] = 0.125;
            tcrt_tensor in[2] = {{x, TCRT_F32, 4, {1, H, H, C}}, {pw, TCRT_F32, 5, {2, 3, 3, C, 16}}};
            tcrt_tensor out[2] = {{y, TCRT_F32, 4, {1, OH, OH, O}}, {NULL, TCRT_U8, 1, {0}}};
            size_t ws = tcrt_fast_conv2d_workspace(in, 2, out, &p);
            out[1].data = ws_alloc(ws);
            out[1].dims[0] = (int64_t)ws;
            ck_assert_int_eq(tcrt_fast_conv2d(in, 2, out, 2, &p), TCRT_OK);
            free(out[1].data);
            float pos = act == TCRT_ACT_RELU6 ? 6.0f : 100.0f;
            float neg = act == TCRT_ACT_NONE ? -100.0f : act == TCRT_ACT_LEAKY ? -12.5f : 0.0f;
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OH; ow++)
                    for (int c = 0; c < O; c++) {
                        float v = y[(oh * OH + ow) * O + c];
                        bool in_nan = oh >= 3 && oh <= 4 && ow >= 3 && ow <= 4;
                        bool in_pos = oh >= 1 && oh <= 2 && ow >= 1 && ow <= 2;
                        bool in_neg = oh >= 5 && oh <= 6 && ow >= 5 && ow <= 6;
                        if (in_nan && act != TCRT_ACT_RELU)
                            ck_assert_msg(isnan(v), "isa %d act %d (%d,%d,%d): %g, want NaN", isa, act, oh,
                                          ow, c, v);
                        else
                            ck_assert_msg(v == (in_pos   ? pos
                                                : in_neg ? neg
                                                         : 0.0f),
                                          "isa %d act %d (%d,%d,%d): %g", isa, act, oh, ow, c, v);
                    }
        }
        tcrt_kern_force_isa(prev);
    }
}
END_TEST

/* Two test cases, run as two meson tests (tests/runtime/meson.build sets
 * CK_RUN_CASE): under valgrind (scripts/test_valgrind.sh) the whole file took
 * 636 s of the one test's 900 s budget; split, each half has its own. */
int main(void)
{
    Suite *s = suite_create("runtime_fast_conv");
    TCase *tc = tcase_create("direct");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, conv_cases);
    tcase_add_test(tc, conv_cout_tails);
    tcase_add_test(tc, conv_short_tiles);
    tcase_add_test(tc, conv_stem);
    tcase_add_test(tc, conv_stem_act_nan);
    tcase_add_test(tc, conv_random);
    tcase_add_test(tc, conv_residual_in_place);
    tcase_add_test(tc, conv_seven_rows);
    tcase_add_test(tc, conv_narrow);
    tcase_add_test(tc, conv_unpacked_residual);
    tcase_add_test(tc, conv_small_workspace);
    tcase_add_test(tc, conv_next_weights);
    suite_add_tcase(s, tc);
    TCase *tw = tcase_create("winograd_gemm");
    tcase_set_timeout(tw, 120);
    tcase_add_test(tw, conv_winograd);
    tcase_add_test(tw, matmul_cases);
    tcase_add_test(tw, conv_dwblock);
    tcase_add_test(tw, conv_transpose_fast);
    tcase_add_test(tw, conv_pair);
    tcase_add_test(tw, isa_cap);
    suite_add_tcase(s, tw);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int ran = srunner_ntests_run(sr), failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (ran == 0) { /* a CK_RUN_CASE naming no case would pass silently */
        fprintf(stderr, "test_runtime_fast_conv: no test ran (CK_RUN_CASE names no test case?)\n");
        return 1;
    }
    return failed ? 1 : 0;
}
