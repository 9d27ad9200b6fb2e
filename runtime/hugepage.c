/* hugepage.c - the linked weights on transparent huge pages
 * (tcrt_huge_pages, tcrt.h).
 *
 * A model's weights are linked into the executable's read-only data and
 * mapped from the file in 4 KB pages.  Every run streams all of them (112
 * MB for ResNet-50), so every 4 KB costs a TLB miss, a page walk that in a
 * VM walks the host's tables too, and the hardware prefetchers stop at each
 * page.  Read alone on the 2-vCPU EPYC, 112 MB took 4.9 ms in 4 KB pages
 * and 3.8-4.0 ms in 2 MB ones; ResNet-50's kernels at 2 threads, per-kernel
 * --profile minima of 10 alternating runs, 23.3 -> 22.7 ms
 * (docs/performance.md, "Huge pages").
 *
 * Algorithm: for each 2 MB-aligned 2 MB piece inside [p, p + bytes): map a
 * fresh anonymous 2 MB-aligned piece, advise it MADV_HUGEPAGE, copy the
 * piece into it, make it read-only, and move it over the old piece with
 * mremap(MREMAP_FIXED), which replaces the old mapping in one step.  One
 * piece at a time, so at most 2 MB more is resident than before at any
 * moment (the old piece's file pages leave this process's mapping as the
 * new ones take their place).  The ends of the range that do not fill a
 * whole aligned 2 MB stay as they were.
 * Invariants: the bytes at every address are the same before and after; a
 * piece whose copy or move fails stays as it was (mremap does not touch
 * the target on failure) and its scratch mapping is unmapped; nothing runs
 * where transparent huge pages are off ("[never]") or unknown, or off Linux.
 */
#define _GNU_SOURCE /* mremap, MREMAP_FIXED */
#include "tcrt.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MREMAP_FIXED) && defined(MREMAP_MAYMOVE)
enum { HUGE_BYTES = 2 << 20 };

/* Whether the kernel gives transparent huge pages to MADV_HUGEPAGE ranges:
 * its setting is "always" or "madvise" (the bracketed word of the file). */
static int thp_on(void)
{
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return 0;
    char line[128] = {0};
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    return ok && (strstr(line, "[always]") || strstr(line, "[madvise]"));
}

/* A fresh anonymous read-write mapping of HUGE_BYTES at a HUGE_BYTES
 * boundary, or NULL. */
static void *aligned_piece(void)
{
    size_t span = 2 * (size_t)HUGE_BYTES;
    uint8_t *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)raw + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (p + HUGE_BYTES < raw + span)
        munmap(p + HUGE_BYTES, (size_t)(raw + span - (p + HUGE_BYTES)));
    return p;
}

size_t tcrt_huge_pages(const void *p, size_t bytes)
{
    if (!p || bytes < HUGE_BYTES || (uintptr_t)p + bytes < (uintptr_t)p /* wraps */ || !thp_on())
        return 0;
    /* both ends aligned: every c < e starts a whole piece */
    uintptr_t b = ((uintptr_t)p + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1);
    uintptr_t e = ((uintptr_t)p + bytes) & ~(uintptr_t)(HUGE_BYTES - 1);
    size_t moved = 0;
    for (uintptr_t c = b; c < e; c += HUGE_BYTES) {
        void *n = aligned_piece();
        if (!n)
            break;
        madvise(n, HUGE_BYTES, MADV_HUGEPAGE); /* a hint: 4 KB pages if refused */
        memcpy(n, (const void *)c, HUGE_BYTES);
        if (mprotect(n, HUGE_BYTES, PROT_READ) != 0 ||
            mremap(n, HUGE_BYTES, HUGE_BYTES, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)c) == MAP_FAILED) {
            munmap(n, HUGE_BYTES);
            break;
        }
        moved += HUGE_BYTES;
    }
    return moved;
}
#else
size_t tcrt_huge_pages(const void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
    return 0;
}
#endif
