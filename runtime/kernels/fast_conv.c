/* runtime/kernels/fast_conv.c - packed-weight convolution (placeholder: the
 * kernel work fills this in). */
#include "tcrt_kernels.h"

#include <stdint.h>
#include <string.h>

int64_t tcrt_conv_packed_floats(int64_t kh, int64_t kw, int64_t cin, int64_t cout)
{
    if (kh <= 0 || kw <= 0 || cin <= 0 || cout <= 0)
        return 0;
    int64_t blocks = (cout + TCRT_PACK_NR - 1) / TCRT_PACK_NR, n = blocks;
    int64_t f[4] = {kh, kw, cin, TCRT_PACK_NR};
    for (int i = 0; i < 4; i++) {
        if (n > INT64_MAX / f[i])
            return 0;
        n *= f[i];
    }
    return n;
}

void tcrt_pack_conv_weights(const float *hwio, int64_t kh, int64_t kw, int64_t cin, int64_t cout,
                            float *packed)
{
    int64_t taps = kh * kw * cin, blocks = (cout + TCRT_PACK_NR - 1) / TCRT_PACK_NR;
    for (int64_t b = 0; b < blocks; b++)
        for (int64_t t = 0; t < taps; t++)
            for (int64_t j = 0; j < TCRT_PACK_NR; j++) {
                int64_t o = b * TCRT_PACK_NR + j;
                packed[(b * taps + t) * TCRT_PACK_NR + j] = o < cout ? hwio[t * cout + o] : 0.0f;
            }
}
