/* ir/arena.c - region allocator and the one malloc call site.
 *
 * An Arena is a list of blocks obtained from the injected XxAlloc (or
 * xx_malloc).  Allocations bump a pointer inside the newest block; a request
 * that does not fit opens a new block of max(64 KiB, request).  Memory is
 * zeroed, 16-byte aligned, 64-byte aligned for requests of 4096 bytes or
 * more; everything is freed at once by arena_reset.
 * Fault injection (tests only): xx_fail_alloc_set(N) makes the Nth call of
 * xx_malloc after it return NULL, the SQLite faultsim idea.
 * Invariants: block data starts 64-byte aligned; cur <= end in every block.
 */
#include "ir/ir.h"
#include "ir/ir_int.h"

#include <stdlib.h>
#include <string.h>

struct ArenaBlock {
    ArenaBlock *next;
    void *raw;                    /* what the allocator returned */
    uintptr_t cur, end;
};

#define BLOCK_MIN ((size_t)64 << 10)

static long fail_at;              /* 0: never fail */
static long n_allocs;

void xx_fail_alloc_set(long n)
{
    fail_at = n;
    n_allocs = 0;
}

void *xx_malloc(size_t n)
{
    if (fail_at > 0 && ++n_allocs == fail_at)
        return NULL;
    return malloc(n ? n : 1);
}

void xx_free(void *p)
{
    free(p);
}

static void *raw_alloc(const XxAlloc *a, size_t n)
{
    return a ? a->alloc(a->ud, n) : xx_malloc(n);
}

static void raw_free(const XxAlloc *a, void *p)
{
    if (!p)
        return;
    if (a)
        a->free(a->ud, p);
    else
        xx_free(p);
}

void *ir_tmp_alloc(const Arena *ar, size_t n)
{
    return raw_alloc(ar ? ar->a : NULL, n);
}

void ir_tmp_free(const Arena *ar, void *p)
{
    raw_free(ar ? ar->a : NULL, p);
}

void arena_init(Arena *ar, const XxAlloc *a)
{
    ar->a = a;
    ar->head = NULL;
    ar->used = 0;
}

static void *alloc_aligned(Arena *ar, size_t n, size_t align)
{
    if (n == 0)
        n = 1;
    if (n > SIZE_MAX / 2)
        return NULL;
    ArenaBlock *b = ar->head;
    if (b) {
        uintptr_t p = (b->cur + align - 1) & ~(uintptr_t)(align - 1);
        if (p <= b->end && b->end - p >= n) {
            b->cur = p + n;
            ar->used += n;
            memset((void *)p, 0, n);
            return (void *)p;
        }
    }
    size_t data = n > BLOCK_MIN ? n : BLOCK_MIN;
    size_t total = sizeof(ArenaBlock) + 64 + align + data;
    void *raw = raw_alloc(ar->a, total);
    if (!raw)
        return NULL;
    b = raw;
    b->raw = raw;
    b->cur = ((uintptr_t)raw + sizeof(ArenaBlock) + 63) & ~(uintptr_t)63;
    b->end = (uintptr_t)raw + total;
    b->next = ar->head;
    ar->head = b;
    uintptr_t p = (b->cur + align - 1) & ~(uintptr_t)(align - 1);
    b->cur = p + n;
    ar->used += n;
    memset((void *)p, 0, n);
    return (void *)p;
}

void *arena_alloc(Arena *ar, size_t n)
{
    return alloc_aligned(ar, n, n >= 4096 ? 64 : 16);
}

void *arena_alloc_align(Arena *ar, size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    if (align & (align - 1))
        return NULL;
    return alloc_aligned(ar, n, align);
}

char *arena_strdup(Arena *ar, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = alloc_aligned(ar, n, 16);
    if (p)
        memcpy(p, s, n);
    return p;
}

void arena_reset(Arena *ar)
{
    ArenaBlock *b = ar->head;
    while (b) {
        ArenaBlock *next = b->next;
        raw_free(ar->a, b->raw);
        b = next;
    }
    ar->head = NULL;
    ar->used = 0;
}
