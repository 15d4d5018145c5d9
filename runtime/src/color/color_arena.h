/* The coloring allocator's arena as its two sources see it (color.c: creation, the heaps,
 * allocation; check.c: diagnostics and the invariant check): the block and control-block
 * layout, the arena handle, and the small helpers both use. Not installed. */
#ifndef TLBLAB_COLOR_ARENA_H
#define TLBLAB_COLOR_ARENA_H

#include "tlblab/color.h"

#include "color_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- block layout --------------------------------------------------------------------------- */

#define ALIGN_LOG2 4u
#define ALIGN ((size_t)1 << ALIGN_LOG2)            /* 16 = TLB_ALIGNMENT */
#define SL_LOG2 3u                                  /* 8 second-level lists per power of two */
#define SL_COUNT (1u << SL_LOG2)
#define FL_SHIFT (SL_LOG2 + ALIGN_LOG2)             /* sizes below 128 B share first level 0 */
#define SMALL_BLOCK ((size_t)1 << FL_SHIFT)
#define FL_MAX 32u                                  /* fl_bitmap is 32 bits: pools below 2^38 B */

#define F_FREE ((size_t)1)       /* this block is free */
#define F_PREV_FREE ((size_t)2)  /* the physically previous block is free */
#define F_MASK ((size_t)15)

typedef struct blk {
    size_t prev_size;            /* size of the physically previous block (0 for a pool's first) */
    size_t size_flags;           /* total size including this header | F_* flags; 0 for sentinels */
    struct blk *next_free;       /* free blocks only: doubly linked free list */
    struct blk *prev_free;
} blk_t;

#define HDR ((size_t)16)         /* prev_size + size_flags; the payload starts here */
#define MIN_BLOCK ((size_t)32)   /* header + the two free-list links */

_Static_assert(TLB_ALIGNMENT == 16u, "TLB_ALIGNMENT must match ALIGN");
_Static_assert(sizeof(blk_t) == MIN_BLOCK, "unexpected blk_t layout");

/* Control block of one color's heap, followed by heads[fl_count * SL_COUNT]. */
typedef struct ctl {
    tlb_prim_mutex_t lock;       /* used only with TLB_ARENA_LOCKED */
    uint64_t allocations;
    uint64_t oom_count;
    size_t in_use;
    size_t peak;
    uint32_t fl_bitmap;
    uint32_t color;
    uint8_t sl_bitmap[FL_MAX];
    blk_t *heads[];
} ctl_t;

struct tlb_arena {
    uintptr_t base;
    size_t size;
    size_t slot;                 /* 2^index_shift */
    size_t period_bytes;         /* sets * slot */
    uint32_t sets, ways, page_shift, index_shift, reserved, periods, flags;
    uint32_t set_mask, sets_log2;
    uint32_t small_colors, large_colors;
    uint32_t fl_count_small, fl_count_large;
    size_t ctl_small, ctl_large; /* control block bytes (multiple of 16) */
    size_t small_max, large_max;
    int backing;
    int locked;
    tlb_prim_region_t region;
};

/* ---- bit helpers ------------------------------------------------------------------------------ */

static inline unsigned msb_size(size_t x) { return (unsigned)(sizeof(size_t) * 8u - 1u) - (unsigned)__builtin_clzl(x); }
static inline unsigned lsb32(uint32_t x) { return (unsigned)__builtin_ctz(x); }
static inline size_t bsize(const blk_t *b) { return b->size_flags & ~F_MASK; }
static inline blk_t *bnext(const blk_t *b) { return (blk_t *)(void *)((unsigned char *)b + bsize(b)); }
static inline blk_t *bprev(const blk_t *b) { return (blk_t *)(void *)((unsigned char *)b - b->prev_size); }
static inline void *payload(blk_t *b) { return (unsigned char *)b + HDR; }
static inline blk_t *from_payload(const void *p) { return (blk_t *)(void *)((unsigned char *)p - HDR); }

/* (fl, sl) of the list a free block of `size` bytes belongs to (TLSF mapping_insert). */
static inline void mapping(size_t size, unsigned *fl, unsigned *sl) {
    if (size < SMALL_BLOCK) {
        *fl = 0;
        *sl = (unsigned)(size >> ALIGN_LOG2);
    } else {
        unsigned m = msb_size(size);
        *sl = (unsigned)(size >> (m - SL_LOG2)) ^ SL_COUNT;
        *fl = m - FL_SHIFT + 1u;
    }
}

/* Smallest size that lies in the same list as `size` (the list's lower bound). */
static inline size_t list_floor(size_t size) {
    if (size < SMALL_BLOCK)
        return size & ~(ALIGN - 1);
    unsigned m = msb_size(size);
    return size & ~(((size_t)1 << (m - SL_LOG2)) - 1);
}

/* Total block size for a request of n payload bytes, or 0 when it cannot be represented. */
static inline size_t adjust(size_t n) {
    if (n == 0 || n > ((size_t)1 << 40))
        return 0;
    size_t s = (n + HDR + ALIGN - 1) & ~(ALIGN - 1);
    return s < MIN_BLOCK ? MIN_BLOCK : s;
}

/* ---- arena geometry --------------------------------------------------------------------------- */

static inline ctl_t *ctl_of_color(const tlb_arena_t *a, uint32_t color) {
    if (color < a->small_colors)
        return (ctl_t *)(a->base + (size_t)(a->reserved + color) * a->slot);
    return (ctl_t *)(a->base + (size_t)(color - a->small_colors) * a->period_bytes);
}

static inline unsigned fl_count_of(const tlb_arena_t *a, uint32_t color) {
    return color < a->small_colors ? a->fl_count_small : a->fl_count_large;
}

static inline size_t ctl_bytes_of(const tlb_arena_t *a, uint32_t color) {
    return color < a->small_colors ? a->ctl_small : a->ctl_large;
}

static inline uint32_t npools(const tlb_arena_t *a, uint32_t color) {
    return color < a->small_colors ? a->periods : 1u;
}

/* Bounds of pool i of a color (the first pool starts after the control block). */
static inline void pool_bounds(const tlb_arena_t *a, uint32_t color, uint32_t i, uintptr_t *lo, uintptr_t *hi) {
    uintptr_t start;
    size_t len;
    if (color < a->small_colors) {
        start = a->base + (size_t)i * a->period_bytes + (size_t)(a->reserved + color) * a->slot;
        len = a->slot;
    } else {
        start = a->base + (size_t)(color - a->small_colors) * a->period_bytes;
        len = (size_t)a->reserved * a->slot;
    }
    *lo = start + (i == 0 ? ctl_bytes_of(a, color) : 0);
    *hi = start + len;
}

static inline blk_t **head(ctl_t *c, unsigned fl, unsigned sl) { return &c->heads[fl * SL_COUNT + sl]; }

static inline void lock(const tlb_arena_t *a, ctl_t *c) {
    if (a->locked)
        tlb_prim_mutex_lock(&c->lock);
}
static inline void unlock(const tlb_arena_t *a, ctl_t *c) {
    if (a->locked)
        tlb_prim_mutex_unlock(&c->lock);
}

static inline void fmt(char *buf, size_t len, const char *f, ...) {
    if (buf == NULL || len == 0)
        return;
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, len, f, ap);
    va_end(ap);
}

#endif
