/* fast_pool_dw.h - the depthwise (multiplier 1) row kernel of fast_pool.c,
 * written once for any vector width: fast_pool.c includes it once per width
 * with
 *   DWV      lanes per vector (8: one ymm; 16: one zmm),
 *   DW_FN(x) the name of this width's copy of x (x##8, x##16),
 *   DW_ATTR  function attributes (target("avx512f") for 16; empty for 8),
 * and the Dw descriptor defined before the include.  Not a header of its
 * own: nothing outside fast_pool.c includes it.
 *
 * One call does the output row (n, oh) for channels [c, c1) in vectors of
 * DWV (c1 - c a multiple of DWV).  Per vector of channels the interior
 * output pixels (every tap inside the input) go in blocks of 8, 4, 2, 1:
 * one accumulator per pixel, each weight vector loaded once per tap for the
 * whole block, so 8 independent FMA chains keep both FMA ports busy (a 3x3
 * kernel, the common case, is unrolled at compile time); pixels at the left
 * and right borders go one at a time with their taps clipped.
 * y = act(bias + sum + residual) at the one store (see dw_store).
 */

typedef float DW_FN(dwv) __attribute__((vector_size(DWV * sizeof(float))));
typedef int32_t DW_FN(dwi) __attribute__((vector_size(DWV * sizeof(float))));

/* Unaligned loads and stores through a float-element vector type, not
 * memcpy: a memcpy store may alias anything, so the compiler reloaded the
 * Dw fields (act, res, y, strides) after every store; a float store
 * cannot alias them. */
typedef float DW_FN(dwu) __attribute__((vector_size(DWV * sizeof(float)), aligned(sizeof(float))));

static DW_ATTR inline DW_FN(dwv) DW_FN(dw_load)(const float *p)
{
    return *(const DW_FN(dwu) *)p;
}

static DW_ATTR inline DW_FN(dwv) DW_FN(dw_blend)(DW_FN(dwi) m, DW_FN(dwv) a, DW_FN(dwv) b)
{
    return (DW_FN(dwv))(((DW_FN(dwi))a & m) | ((DW_FN(dwi))b & ~m));
}

/* a > b ? a : b and a < b ? a : b lane by lane (b where either is NaN),
 * as the x86 max/min instructions define them: one instruction each where
 * the target has them, instead of a compare and a blend. */
static DW_ATTR inline DW_FN(dwv) DW_FN(dw_max)(DW_FN(dwv) a, DW_FN(dwv) b)
{
#if DWV == 8 && defined(__AVX__)
    return (DW_FN(dwv))_mm256_max_ps((__m256)a, (__m256)b);
#elif DWV == 16 /* only built where DW_HAVE_AVX512 (x86, fast_pool.c) */
    return (DW_FN(dwv))_mm512_max_ps((__m512)a, (__m512)b);
#else
    return DW_FN(dw_blend)(a > b, a, b);
#endif
}

static DW_ATTR inline DW_FN(dwv) DW_FN(dw_min)(DW_FN(dwv) a, DW_FN(dwv) b)
{
#if DWV == 8 && defined(__AVX__)
    return (DW_FN(dwv))_mm256_min_ps((__m256)a, (__m256)b);
#elif DWV == 16 /* only built where DW_HAVE_AVX512 (x86, fast_pool.c) */
    return (DW_FN(dwv))_mm512_min_ps((__m512)a, (__m512)b);
#else
    return DW_FN(dw_blend)(a < b, a, b);
#endif
}

/* Finishes DWV channels of one output at y[off]: + residual, act, store
 * (the residual is read just before the store: y may share its buffer). */
static DW_ATTR inline void DW_FN(dw_store)(const Dw *d, DW_FN(dwv) acc, int64_t off)
{
    const DW_FN(dwv) zero = {0};
    if (d->res)
        acc += DW_FN(dw_load)(d->res + off);
    switch (d->act) {
    case TCRT_ACT_RELU:
        acc = DW_FN(dw_max)(acc, zero);
        break;
    case TCRT_ACT_RELU6: {
        const DW_FN(dwv) six = zero + 6.0f;
        acc = DW_FN(dw_min)(six, DW_FN(dw_max)(zero, acc));
        break;
    }
    case TCRT_ACT_LEAKY:
        acc = DW_FN(dw_blend)(acc < zero, acc * d->alpha, acc);
        break;
    default:
        break;
    }
    *(DW_FN(dwu) *)(d->y + off) = acc;
}

/* NB interior pixels ow .. ow+NB-1 of row oh, channels [c, c+DWV), taps kh
 * in [k0, k1); KW is a literal 3 in the unrolled copy. */
static DW_ATTR inline __attribute__((always_inline)) void
DW_FN(dw_block)(const Dw *d, const float *xn, int64_t oh, int64_t ow, int64_t c, int64_t k0, int64_t k1,
                int64_t ybase, const int NB, const int64_t KW)
{
    const int64_t C = d->C, xs = d->sw * C, ks = d->dw * C;
    DW_FN(dwv) b = {0}, acc[8];
    if (d->bias)
        b = DW_FN(dw_load)(d->bias + c);
#pragma GCC unroll 8
    for (int j = 0; j < NB; j++)
        acc[j] = b;
    for (int64_t kh = k0; kh < k1; kh++) {
        int64_t ih = oh * d->sh - d->pt + kh * d->dh;
        const float *xp = dw_xrow(d, xn, ih) + (ow * d->sw - d->pl) * C + c;
        const float *wp = d->w + kh * KW * C + c;
        for (int64_t kw = 0; kw < KW; kw++) {
            DW_FN(dwv) wv = DW_FN(dw_load)(wp + kw * C);
#pragma GCC unroll 8
            for (int j = 0; j < NB; j++)
                acc[j] += DW_FN(dw_load)(xp + j * xs + kw * ks) * wv;
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < NB; j++)
        DW_FN(dw_store)(d, acc[j], ybase + (ow + j) * C + c);
}

/* dw_block for KW == 3, dilation 1 and stride SW (a literal 1 or 2): per
 * kernel row, each input column in the block's window is loaded once and
 * feeds every output pixel whose window holds it (the loops unroll fully,
 * so which accumulator a column feeds with which weight is fixed at
 * compile time): (NB - 1) * SW + 3 loads instead of 3 * NB per row. */
static DW_ATTR inline __attribute__((always_inline)) void
DW_FN(dw_block3)(const Dw *d, const float *const *rows, const float *wrow, int64_t kn, int64_t ow, int64_t c,
                 int64_t ybase, const int NB, const int SW)
{
    const int64_t C = d->C, xoff = (ow * SW - d->pl) * C + c;
    DW_FN(dwv) b = {0}, acc[8];
    if (d->bias)
        b = DW_FN(dw_load)(d->bias + c);
#pragma GCC unroll 8
    for (int j = 0; j < NB; j++)
        acc[j] = b;
#pragma GCC unroll 3
    for (int64_t kk = 0; kk < kn; kk++) {
        const float *xp = rows[kk] + xoff;
        const float *wp = wrow + kk * 3 * C + c;
        DW_FN(dwv) w0 = DW_FN(dw_load)(wp), w1 = DW_FN(dw_load)(wp + C), w2 = DW_FN(dw_load)(wp + 2 * C);
        /* a pointer stepped by C per column: offsets i * C for the whole
         * unrolled window were kept in spilled registers, one stack load
         * per input load.  The empty asm makes each step opaque: without
         * it GCC still gave every column of the three kernel rows its own
         * pointer (30 for a block of 8 at stride 1), spilled to xmm and
         * stack slots and reloaded before each FMA; measured, 1 thread,
         * 3x3 stride 1: 64x64x24 42.6 -> 32.7 us, 112x112x32 178 -> 144,
         * stride 2 64x64x28 24.3 -> 17.7, and 2-5% slower at 28x28x192 and
         * 14x14x576 */
#pragma GCC unroll 24
        for (int i = 0; i < (NB - 1) * SW + 3; i++, xp += C) {
            DW_FN(dwv) xv = DW_FN(dw_load)(xp);
            __asm__("" : "+r"(xp));
            /* column i is tap kw of output j when i == j * SW + kw */
            if (i % SW == 0 && i / SW < NB)
                acc[i / SW] += xv * w0;
            if (i >= 1 && (i - 1) % SW == 0 && (i - 1) / SW < NB)
                acc[(i - 1) / SW] += xv * w1;
            if (i >= 2 && (i - 2) % SW == 0 && (i - 2) / SW < NB)
                acc[(i - 2) / SW] += xv * w2;
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < NB; j++)
        DW_FN(dw_store)(d, acc[j], ybase + (ow + j) * C + c);
}

/* Interior pixels [ow, ow1) of a 3x3, dilation 1, stride SW kernel over the
 * kn input rows rows[] (kernel rows k0 .. k0+kn-1, weights from wrow):
 * blocks of 8 pixels (then 4, 2, 1) over every vector of channels.  KN: kn
 * as a literal 3 (a row away from the top and bottom edges: the kernel-row
 * loop unrolls), 0 for any kn. */
static DW_ATTR inline __attribute__((always_inline)) void
DW_FN(dw_interior3_rows)(const Dw *d, const float *const *rows, const float *wrow, int64_t kn, int64_t ow,
                         int64_t ow1, int64_t c0, int64_t c1, int64_t ybase, const int SW, const int KN)
{
    if (KN)
        kn = KN;
    for (; ow + 8 <= ow1; ow += 8)
        for (int64_t c = c0; c + DWV <= c1; c += DWV)
            DW_FN(dw_block3)(d, rows, wrow, kn, ow, c, ybase, 8, SW);
    if (ow + 4 <= ow1) {
        for (int64_t c = c0; c + DWV <= c1; c += DWV)
            DW_FN(dw_block3)(d, rows, wrow, kn, ow, c, ybase, 4, SW);
        ow += 4;
    }
    if (ow + 2 <= ow1) {
        for (int64_t c = c0; c + DWV <= c1; c += DWV)
            DW_FN(dw_block3)(d, rows, wrow, kn, ow, c, ybase, 2, SW);
        ow += 2;
    }
    if (ow < ow1)
        for (int64_t c = c0; c + DWV <= c1; c += DWV)
            DW_FN(dw_block3)(d, rows, wrow, kn, ow, c, ybase, 1, SW);
}

/* Interior pixels [ow, ow1) of row oh of a 3x3, dilation 1, stride SW
 * kernel, taps kh in [k0, k1): the input rows' addresses found once for the
 * row, not per block and channel vector. */
static DW_ATTR inline __attribute__((always_inline)) void
DW_FN(dw_interior3)(const Dw *d, const float *xn, int64_t oh, int64_t ow, int64_t ow1, int64_t c0, int64_t c1,
                    int64_t k0, int64_t k1, int64_t ybase, const int SW)
{
    const float *rows[3] = {NULL, NULL, NULL};
    for (int64_t kh = k0; kh < k1; kh++)
        rows[kh - k0] = dw_xrow(d, xn, oh * d->sh - d->pt + kh);
    const float *wrow = d->w + k0 * 3 * d->C;
    if (k1 - k0 == 3)
        DW_FN(dw_interior3_rows)(d, rows, wrow, 3, ow, ow1, c0, c1, ybase, SW, 3);
    else
        DW_FN(dw_interior3_rows)(d, rows, wrow, k1 - k0, ow, ow1, c0, c1, ybase, SW, 0);
}

/* Interior pixels [ow, ow1), channels [c0, c1): blocks of 8 pixels (then
 * 4, 2, 1), each over every vector of channels before the next block, so
 * the block's input window (KH rows x ~8*sw pixels x C) stays in L1; KW as
 * dw_block. */
static DW_ATTR inline __attribute__((always_inline)) void
DW_FN(dw_interior)(const Dw *d, const float *xn, int64_t oh, int64_t ow, int64_t ow1, int64_t c0,
                   int64_t c1, int64_t k0, int64_t k1, int64_t ybase, const int64_t KW)
{
    for (; ow + 8 <= ow1; ow += 8)
        for (int64_t c = c0; c + DWV <= c1; c += DWV)
            DW_FN(dw_block)(d, xn, oh, ow, c, k0, k1, ybase, 8, KW);
    if (ow + 4 <= ow1) {
        for (int64_t c = c0; c + DWV <= c1; c += DWV)
            DW_FN(dw_block)(d, xn, oh, ow, c, k0, k1, ybase, 4, KW);
        ow += 4;
    }
    if (ow + 2 <= ow1) {
        for (int64_t c = c0; c + DWV <= c1; c += DWV)
            DW_FN(dw_block)(d, xn, oh, ow, c, k0, k1, ybase, 2, KW);
        ow += 2;
    }
    if (ow < ow1)
        for (int64_t c = c0; c + DWV <= c1; c += DWV)
            DW_FN(dw_block)(d, xn, oh, ow, c, k0, k1, ybase, 1, KW);
}

/* G channel vectors from c of one border pixel (dw_border): G independent
 * FMA chains over the taps kh in [k0, k1), kw in [kw0, kw1). */
static DW_ATTR inline __attribute__((always_inline)) void
DW_FN(dw_border_group)(const Dw *d, const float *xn, int64_t oh, int64_t ow, int64_t c, int64_t k0,
                       int64_t k1, int64_t kw0, int64_t kw1, int64_t xoff, int64_t ybase, const int G)
{
    const int64_t C = d->C, xs = d->dw * C;
    DW_FN(dwv) a[8];
#pragma GCC unroll 8
    for (int v = 0; v < G; v++)
        a[v] = d->bias ? DW_FN(dw_load)(d->bias + c + v * DWV) : (DW_FN(dwv)){0};
    for (int64_t kh = k0; kh < k1; kh++) {
        const float *xp = dw_xrow(d, xn, oh * d->sh - d->pt + kh * d->dh) + xoff + c;
        const float *wp = d->w + (kh * d->KW + kw0) * C + c;
        for (int64_t kw = kw0; kw < kw1; kw++, xp += xs, wp += C)
#pragma GCC unroll 8
            for (int v = 0; v < G; v++)
                a[v] += DW_FN(dw_load)(xp + v * DWV) * DW_FN(dw_load)(wp + v * DWV);
    }
#pragma GCC unroll 8
    for (int v = 0; v < G; v++)
        DW_FN(dw_store)(d, a[v], ybase + ow * C + c + v * DWV);
}

/* One border pixel, channels [c0, c1): the taps [kw0, kw1) inside the
 * input's columns, found once for the pixel (the per-tap column test
 * inside the channel loop made the two border pixels of a 7x7x960 map
 * cost as much as its five interior ones); channel vectors in groups of 8
 * and 4, independent FMA chains (one chain of 6 dependent FMAs per vector
 * left the border pixels of a 14x14x576 map at 28% of its time). */
static DW_ATTR void DW_FN(dw_border)(const Dw *d, const float *xn, int64_t oh, int64_t ow, int64_t c0,
                                     int64_t c1, int64_t k0, int64_t k1, int64_t ybase)
{
    const int64_t iw0 = ow * d->sw - d->pl;
    int64_t kw0 = 0, kw1 = d->KW;
    while (kw0 < kw1 && iw0 + kw0 * d->dw < 0)
        kw0++;
    while (kw1 > kw0 && iw0 + (kw1 - 1) * d->dw >= d->W)
        kw1--;
    /* no tap inside (a window wholly in the padding): no column offset is
     * formed past the row, and the pixel is act(bias + residual) */
    const int64_t xoff = kw0 < kw1 ? (iw0 + kw0 * d->dw) * d->C : 0;
    int64_t c = c0;
    for (; c + 8 * DWV <= c1; c += 8 * DWV)
        DW_FN(dw_border_group)(d, xn, oh, ow, c, k0, k1, kw0, kw1, xoff, ybase, 8);
    for (; c + 4 * DWV <= c1; c += 4 * DWV)
        DW_FN(dw_border_group)(d, xn, oh, ow, c, k0, k1, kw0, kw1, xoff, ybase, 4);
    for (; c + DWV <= c1; c += DWV)
        DW_FN(dw_border_group)(d, xn, oh, ow, c, k0, k1, kw0, kw1, xoff, ybase, 1);
}

/* Row (n, oh), channels [c0, c1) (a multiple of DWV wide). */
static DW_ATTR void DW_FN(dw_row_m1)(const Dw *d, int64_t n, int64_t oh, int64_t k0, int64_t k1, int64_t c0,
                                     int64_t c1)
{
    const float *xn = d->x + n * d->H * d->W * d->C;
    const int64_t ybase = d->yrow ? 0 : (n * d->OH + oh) * d->OW * d->C;
    /* interior [in0, in1) within [0, OW) */
    const int64_t in0 = d->ow_in0 < d->OW ? d->ow_in0 : d->OW;
    const int64_t in1 = d->ow_in1 < in0 ? in0 : d->ow_in1 > d->OW ? d->OW : d->ow_in1;
    for (int64_t ow = 0; ow < in0; ow++)
        DW_FN(dw_border)(d, xn, oh, ow, c0, c1, k0, k1, ybase);
    bool is_3x3 = d->KW == 3 && d->KH == 3 && d->dw == 1 && d->dh == 1;
    if (is_3x3 && d->sw == 1)
        DW_FN(dw_interior3)(d, xn, oh, in0, in1, c0, c1, k0, k1, ybase, 1);
    else if (is_3x3 && d->sw == 2)
        DW_FN(dw_interior3)(d, xn, oh, in0, in1, c0, c1, k0, k1, ybase, 2);
    else if (d->KW == 3)
        DW_FN(dw_interior)(d, xn, oh, in0, in1, c0, c1, k0, k1, ybase, 3);
    else
        DW_FN(dw_interior)(d, xn, oh, in0, in1, c0, c1, k0, k1, ybase, d->KW);
    for (int64_t ow = in1; ow < d->OW; ow++)
        DW_FN(dw_border)(d, xn, oh, ow, c0, c1, k0, k1, ybase);
}
