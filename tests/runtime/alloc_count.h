/* alloc_count.h - counts every heap allocation of a test executable, for the
 * runtime's "allocates nothing" tests (test_nomalloc.c, test_pool.c).
 *
 * Include it in exactly one translation unit of the test executable.  It
 * defines malloc, calloc, realloc, free, posix_memalign, aligned_alloc,
 * memalign, valloc and pvalloc themselves (forwarding to glibc's __libc_*
 * entry points), so every allocation in the process goes through them - ours,
 * Eigen's, libstdc++'s operator new and glibc's (shared libraries), in every
 * thread; `-Wl,--wrap` would only see the calls made from objects linked
 * statically into the test.  Between alloc_count_start() and
 * alloc_count_stop() (which returns the count) each call increments an atomic
 * counter.
 * Under AddressSanitizer the allocator belongs to ASan and cannot be
 * replaced: ALLOC_COUNT_AVAILABLE is then not defined and nothing is.
 */
#ifndef TESTS_RUNTIME_ALLOC_COUNT_H
#define TESTS_RUNTIME_ALLOC_COUNT_H

#if !defined(__SANITIZE_ADDRESS__)
#define ALLOC_COUNT_AVAILABLE 1

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t a, size_t b);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t al, size_t n);
extern void __libc_free(void *p);

static atomic_int alloc_counting;
static atomic_long alloc_n;

static void alloc_note(void)
{
    if (atomic_load(&alloc_counting))
        atomic_fetch_add(&alloc_n, 1);
}

static void alloc_count_start(void)
{
    atomic_store(&alloc_n, 0);
    atomic_store(&alloc_counting, 1);
}

static long alloc_count_stop(void)
{
    atomic_store(&alloc_counting, 0);
    return atomic_load(&alloc_n);
}

void *malloc(size_t n)
{
    alloc_note();
    return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
    alloc_note();
    return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
    alloc_note();
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

void *memalign(size_t al, size_t n)
{
    alloc_note();
    return __libc_memalign(al, n);
}

void *aligned_alloc(size_t al, size_t n)
{
    alloc_note();
    return __libc_memalign(al, n);
}

int posix_memalign(void **pp, size_t al, size_t n)
{
    alloc_note();
    void *p = __libc_memalign(al, n);
    if (!p)
        return ENOMEM;
    *pp = p;
    return 0;
}

void *valloc(size_t n)
{
    alloc_note();
    return __libc_memalign(4096, n);
}

void *pvalloc(size_t n)
{
    alloc_note();
    return __libc_memalign(4096, (n + 4095) / 4096 * 4096);
}

#endif /* !__SANITIZE_ADDRESS__ */
#endif
