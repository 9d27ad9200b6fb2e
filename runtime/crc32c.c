/* crc32c.c - CRC32C (Castagnoli, reflected polynomial 0x82f63b78), the
 * checksum of TensorFlow checkpoints (table blocks and tensor bytes).
 *
 * tcrt_crc32c(crc, data, n) extends a previous CRC value with n bytes
 * (start from 0), so tcrt_crc32c(tcrt_crc32c(0, a), b) is the CRC of a
 * followed by b; the usual pre- and post-inversion happen inside.
 * Portable path: slicing-by-8 (eight 256-entry tables built once through
 * pthread_once, then 8 bytes per step).  On x86-64 CPUs with SSE4.2 the
 * crc32 instruction computes the same polynomial, 8 bytes per instruction;
 * the choice is made once.  Both give the same value for every input
 * (tests/runtime/test_ckpt.c checks the known check values through both).
 */
#include "tcrt_ckpt.h"

#include <pthread.h>
#include <string.h>

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

/* c is the inverted running state. */
static uint32_t crc_sw(uint32_t c, const uint8_t *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    while (n >= 8) {
        uint32_t lo =
            c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        c = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^ crc_tab[5][(lo >> 16) & 0xff] ^
            crc_tab[4][lo >> 24] ^ crc_tab[3][hi & 0xff] ^ crc_tab[2][(hi >> 8) & 0xff] ^
            crc_tab[1][(hi >> 16) & 0xff] ^ crc_tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ crc_tab[0][(c ^ *p++) & 0xff];
    return c;
}

uint32_t tcrt_crc32c_portable(uint32_t crc, const void *data, size_t n)
{
    if (!data)
        return crc;
    return ~crc_sw(~crc, data, n);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        c = __builtin_ia32_crc32qi(c, *p++);
        n--;
    }
    uint64_t c64 = c;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    while (n--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}

static int has_hw = -1; /* -1: not asked yet; the answer never changes, so a race only repeats the question */

uint32_t tcrt_crc32c(uint32_t crc, const void *data, size_t n)
{
    if (!data)
        return crc;
    int hw = __atomic_load_n(&has_hw, __ATOMIC_RELAXED);
    if (hw < 0) {
        __builtin_cpu_init();
        hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&has_hw, hw, __ATOMIC_RELAXED);
    }
    return hw ? ~crc_hw(~crc, data, n) : ~crc_sw(~crc, data, n);
}
#else
uint32_t tcrt_crc32c(uint32_t crc, const void *data, size_t n)
{
    return tcrt_crc32c_portable(crc, data, n);
}
#endif
