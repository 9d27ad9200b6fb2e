/* fast_wino_int.h - the Winograd input and output transforms, written once
 * for a vector of NV floats (fast_vec_int.h); not installed, not part of
 * the runtime's public API.
 *
 * The includer defines NV (8 or 16) first.  fast_conv.c includes it with
 * NV 8 (the transforms on AVX2 and portable C, the build's ISA);
 * fast_conv_avx512.c with NV 16, compiled with -mavx512f, for
 * tcrt_wino_input_avx512 / tcrt_wino_output_avx512, which wino_run takes
 * on AVX-512 where the channel count is a multiple of 16.  The transforms
 * are loads, adds and stores, one vector of channels at a time: with 16
 * lanes a tile takes half the instructions (measured, ResNet-50 at 1
 * thread on a 2-vCPU AVX-512 EPYC: docs/performance.md, Winograd).  Only static functions: each translation
 * unit has its own copy.
 */
#ifndef TCRT_FAST_WINO_INT_H
#define TCRT_FAST_WINO_INT_H

#include "fast_conv_int.h"
#include "fast_vec_int.h"

#include <stdint.h>
#include <string.h>

/* V = B^T d B of one patch (NV channels), point f stored at out + f*fs. */
static inline void wino_in_tf2(nvf d[6][6], float *out, int64_t fs)
{
    nvf t[4][4];
    for (int b = 0; b < 4; b++) {
        t[0][b] = d[0][b] - d[2][b];
        t[1][b] = d[1][b] + d[2][b];
        t[2][b] = d[2][b] - d[1][b];
        t[3][b] = d[1][b] - d[3][b];
    }
    for (int a = 0; a < 4; a++) {
        nvf v[4] = {t[a][0] - t[a][2], t[a][1] + t[a][2], t[a][2] - t[a][1], t[a][1] - t[a][3]};
        for (int b = 0; b < 4; b++)
            memcpy(out + (a * 4 + b) * fs, &v[b], sizeof v[b]);
    }
}

/* The F(4x4) input transform of one 6-vector (rows of B^T). */
#define WINO_BT4(x0, x1, x2, x3, x4, x5, y)                                                                  \
    do {                                                                                                     \
        nvf f4_ = nv_splat(4), f5_ = nv_splat(5), f2_ = nv_splat(2);                                         \
        nvf p_ = x4 - f4_ * x2, q_ = x3 - f4_ * x1, r_ = x4 - x2, s_ = f2_ * (x3 - x1);                      \
        y[0] = f4_ * x0 - f5_ * x2 + x4;                                                                     \
        y[1] = p_ + q_;                                                                                      \
        y[2] = p_ - q_;                                                                                      \
        y[3] = r_ + s_;                                                                                      \
        y[4] = r_ - s_;                                                                                      \
        y[5] = f4_ * x1 - f5_ * x3 + x5;                                                                     \
    } while (0)

static inline void wino_in_tf4(nvf d[6][6], float *out, int64_t fs)
{
    nvf t[6][6];
    for (int b = 0; b < 6; b++) {
        nvf y[6];
        WINO_BT4(d[0][b], d[1][b], d[2][b], d[3][b], d[4][b], d[5][b], y);
        for (int a = 0; a < 6; a++)
            t[a][b] = y[a];
    }
    for (int a = 0; a < 6; a++) {
        nvf v[6];
        WINO_BT4(t[a][0], t[a][1], t[a][2], t[a][3], t[a][4], t[a][5], v);
        for (int b = 0; b < 6; b++)
            memcpy(out + (a * 6 + b) * fs, &v[b], sizeof v[b]);
    }
}

static inline void wino_in_tf(int64_t m, nvf d[6][6], float *out, int64_t fs)
{
    if (m == 2)
        wino_in_tf2(d, out, fs);
    else
        wino_in_tf4(d, out, fs);
}

/* The a x a input pixels of tile tt (NULL where a pixel is padding). */
static void wino_patch(const TcrtWino *w, int64_t tt, const float *src[6][6])
{
    int64_t n = tt / w->tpi, r = tt % w->tpi;
    int64_t ih0 = w->m * (r / w->tw) - w->pt, iw0 = w->m * (r % w->tw) - w->pl;
    for (int64_t y = 0; y < w->a; y++)
        for (int64_t x = 0; x < w->a; x++) {
            int64_t ih = ih0 + y, iw = iw0 + x;
            src[y][x] = ih >= 0 && ih < w->H && iw >= 0 && iw < w->W
                            ? w->x + ((n * w->H + ih) * w->W + iw) * w->C
                            : NULL;
        }
}

/* Input transform of tiles [t0, t0 + nt) into V [pts][tile][cpad] (point
 * stride w->vs).  Each tile prefetches the next one's patch: the input was
 * written by the previous kernel, on 2 threads half of it by the other
 * core, whose lines the patch loads (a few pixels of one row, then the
 * next row) met one at a time (measured, ResNet-50 at 2 threads on a
 * 2-vCPU EPYC, whose vCPUs are 220 ns apart: the input transform of the
 * 14x14 F(2x2) convs took 2.6x its 1-thread time per tile; whole model
 * -0.5 to -1.5%, 1 thread even). */
static void wino_input_tf(const TcrtWino *w, int64_t t0, int64_t nt, float *V)
{
    const int64_t C = w->C, cv = C - C % NV, fs = w->vs, a = w->a;
    const float *src[6][6], *next[6][6];
    if (nt > 0)
        wino_patch(w, t0, src);
    for (int64_t t = 0; t < nt; t++) {
        if (t + 1 < nt) { /* the next tile's patch */
            wino_patch(w, t0 + t + 1, next);
            for (int64_t y = 0; y < a; y++)
                for (int64_t x = 0; x < a; x++)
                    for (int64_t b = 0; next[y][x] && b < C * (int64_t)sizeof(float); b += 64)
                        __builtin_prefetch((const char *)next[y][x] + b);
        }
        float *vt = V + t * w->cpad;
        nvf d[6][6];
        for (int64_t c = 0; c < cv; c += NV) {
            for (int64_t y = 0; y < a; y++)
                for (int64_t x = 0; x < a; x++)
                    d[y][x] = src[y][x] ? nv_load(src[y][x] + c) : nv_splat(0);
            wino_in_tf(w->m, d, vt + c, fs);
        }
        if (cv < C) { /* the last C % NV channels, through zero-padded vectors */
            for (int64_t y = 0; y < a; y++)
                for (int64_t x = 0; x < a; x++)
                    d[y][x] = src[y][x] ? nv_load_n(src[y][x] + cv, C - cv) : nv_splat(0);
            float tail[TCRT_WINO_MAX_PTS][NV];
            wino_in_tf(w->m, d, tail[0], NV);
            for (int64_t f = 0; f < w->pts; f++)
                memcpy(vt + f * fs + cv, tail[f], (size_t)(C - cv) * sizeof(float));
        }
        if (t + 1 < nt)
            memcpy(src, next, sizeof src);
    }
}

/* Y = A^T m A of one tile (NV channels): y[i][jj], m x m. */
static inline void wino_out_tf(int64_t mm, const nvf *m, nvf y[4][4])
{
    if (mm == 2) {
        nvf s[2][4];
        for (int b = 0; b < 4; b++) {
            s[0][b] = m[b] + m[4 + b] + m[8 + b];
            s[1][b] = m[4 + b] - m[8 + b] - m[12 + b];
        }
        for (int i = 0; i < 2; i++) {
            y[i][0] = s[i][0] + s[i][1] + s[i][2];
            y[i][1] = s[i][1] - s[i][2] - s[i][3];
        }
        return;
    }
    nvf f2 = nv_splat(2), f4 = nv_splat(4), f8 = nv_splat(8);
    nvf s[4][6];
    for (int b = 0; b < 6; b++) {
        nvf m0 = m[b], m1 = m[6 + b], m2 = m[12 + b], m3 = m[18 + b], m4 = m[24 + b], m5 = m[30 + b];
        nvf p = m1 + m2, q = m1 - m2, r = m3 + m4, w = m3 - m4;
        s[0][b] = m0 + p + r;
        s[1][b] = q + f2 * w;
        s[2][b] = p + f4 * r;
        s[3][b] = q + f8 * w + m5;
    }
    for (int i = 0; i < 4; i++) {
        nvf p = s[i][1] + s[i][2], q = s[i][1] - s[i][2], r = s[i][3] + s[i][4], w = s[i][3] - s[i][4];
        y[i][0] = s[i][0] + p + r;
        y[i][1] = q + f2 * w;
        y[i][2] = p + f4 * r;
        y[i][3] = q + f8 * w + s[i][5];
    }
}

/* Output transform of tiles [t0, t0 + nt) of M [pts][tile][WINO_CC]
 * (point stride w->ms), columns [col0, col0 + ccw), with bias, residual
 * and activation; pixels past OH/OW are not stored. */
static void wino_output_tf(const TcrtWino *w, int64_t t0, int64_t nt, int64_t col0, int64_t ccw,
                           const float *M)
{
    const int64_t O = w->O, fs = w->ms, mm = w->m;
    for (int64_t t = 0; t < nt; t++) {
        int64_t tt = t0 + t, n = tt / w->tpi, r = tt % w->tpi;
        int64_t oh0 = mm * (r / w->tw), ow0 = mm * (r % w->tw);
        const float *mt = M + t * TCRT_WINO_CC;
        for (int64_t c = 0; c < ccw; c += NV) {
            int64_t cw = ccw - c < NV ? ccw - c : NV;
            nvf m[TCRT_WINO_MAX_PTS], y[4][4], bv = w->bias ? nv_load_n(w->bias + col0 + c, cw) : nv_splat(0);
            for (int64_t f = 0; f < w->pts; f++)
                m[f] = nv_load_n(mt + f * fs + c, cw);
            wino_out_tf(mm, m, y);
            for (int64_t i = 0; i < mm && oh0 + i < w->OH; i++)
                for (int64_t jj = 0; jj < mm && ow0 + jj < w->OW; jj++) {
                    int64_t off = ((n * w->OH + oh0 + i) * w->OW + ow0 + jj) * O + col0 + c;
                    nvf v = y[i][jj] + bv;
                    if (w->res)
                        v += nv_load_n(w->res + off, cw);
                    v = nv_act(v, w->act, w->alpha);
                    if (cw == NV) /* constant size: one vector store */
                        memcpy(w->y + off, &v, sizeof v);
                    else
                        memcpy(w->y + off, &v, (size_t)cw * sizeof(float));
                }
        }
    }
}

#endif
