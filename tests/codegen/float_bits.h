/* tests/codegen/float_bits.h - helpers shared by the codegen tests
 * (test_codegen.c, test_llvm.c): float distance in ulps, and a byte search
 * in a built file. */
#ifndef TFCC_TESTS_FLOAT_BITS_H
#define TFCC_TESTS_FLOAT_BITS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Distance in units in the last place between two finite floats (as ordered
 * integers; +0 and -0 are 0 apart). */
static inline int64_t ulps_apart(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int64_t x = ia < 0 ? (int64_t)INT32_MIN - ia : ia, y = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return x > y ? x - y : y - x;
}

/* Whether the n bytes at buf hold the string s (a symbol name in a binary). */
static inline bool bytes_contain(const void *buf, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp((const char *)buf + i, s, k) == 0)
            return true;
    return false;
}

#endif
