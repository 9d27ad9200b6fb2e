/* tests/runtime/ws_alloc.h - kernel workspaces for the fast-kernel tests.
 *
 * ws_alloc(n): malloc(n) (at least 1 byte) filled with 0xff bytes, NaN as
 * floats.  The generated code places workspaces in an arena nobody zeroes,
 * where earlier kernels left their data; a kernel that reads workspace bytes
 * before writing them then turns its output into NaN, which the tests'
 * comparisons catch.  NULL when out of memory. */
#ifndef TFCC_TESTS_WS_ALLOC_H
#define TFCC_TESTS_WS_ALLOC_H

#include <stdlib.h>
#include <string.h>

static inline void *ws_alloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p)
        memset(p, 0xff, n ? n : 1);
    return p;
}

#endif
