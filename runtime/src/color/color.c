/* The TLB-coloring allocator (seed 003, Panchamukhi 2014): arena layout, the constant-time
 * segregated-fit heap of each color; its diagnostics and invariant check are color_check.c, which
 * this file includes at its end (one translation unit). The OS-facing code (mmap,
 * madvise, mlock, mutexes) is in prim_linux.c. The public contract is in tlblab/color.h and the
 * exact placement rule, which the simulator's port must follow address for address, is in
 * docs/color.md ("Placement algorithm"); keep the two in step.
 *
 * Layout (seed 003 Ch. 3, Fig. 3.2). The colored region starts at `base`, aligned to one period
 * (sets * slot bytes). Slot k covers [base + k*slot, base + (k+1)*slot) and maps to TLB set
 * k mod sets. Small color c owns the slots of set R + c (one per period); large color l owns the R
 * slots of sets 0..R-1 of period l, as one contiguous run.
 *
 * Heap of one color. Each color is a TLSF-style heap (Masmano et al., cited by seed 003 Ch. 7) whose
 * pools are that color's slots (or its run). Its control block (free-list heads, bitmaps, counters,
 * optional mutex) sits at the start of the color's first slot (or run), so the allocator's own
 * metadata never occupies another color's TLB set (the property of CAMA, Herter et al.,
 * "CAMA: A Predictable Cache-Aware Memory Allocator", ECRTS 2011). Blocks
 * never cross a pool's end: each pool ends with a 16-byte sentinel header. */
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
static void pool_bounds(const tlb_arena_t *a, uint32_t color, uint32_t i, uintptr_t *lo, uintptr_t *hi) {
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

uint32_t tlb_color_of(const tlb_arena_t *a, const void *ptr) {
    uintptr_t p = (uintptr_t)ptr;
    if (p < a->base || p - a->base >= a->size)
        return UINT32_MAX;
    size_t k = (p - a->base) >> a->index_shift;
    uint32_t set = (uint32_t)(k & a->set_mask);
    if (set >= a->reserved)
        return set - a->reserved;
    return a->small_colors + (uint32_t)(k >> a->sets_log2);
}

uint32_t tlb_set_of(const tlb_arena_t *a, const void *ptr) {
    return (uint32_t)(((uintptr_t)ptr >> a->index_shift) & a->set_mask);
}

/* ---- free lists ------------------------------------------------------------------------------- */

static inline blk_t **head(ctl_t *c, unsigned fl, unsigned sl) { return &c->heads[fl * SL_COUNT + sl]; }

static void list_insert(ctl_t *c, blk_t *b) {
    unsigned fl, sl;
    mapping(bsize(b), &fl, &sl);
    blk_t **h = head(c, fl, sl);
    b->prev_free = NULL;
    b->next_free = *h;
    if (*h != NULL)
        (*h)->prev_free = b;
    *h = b;
    c->fl_bitmap |= 1u << fl;
    c->sl_bitmap[fl] = (uint8_t)(c->sl_bitmap[fl] | (1u << sl));
}

static void list_remove(ctl_t *c, blk_t *b) {
    unsigned fl, sl;
    mapping(bsize(b), &fl, &sl);
    if (b->prev_free != NULL)
        b->prev_free->next_free = b->next_free;
    else
        *head(c, fl, sl) = b->next_free;
    if (b->next_free != NULL)
        b->next_free->prev_free = b->prev_free;
    if (*head(c, fl, sl) == NULL) {
        c->sl_bitmap[fl] = (uint8_t)(c->sl_bitmap[fl] & ~(1u << sl));
        if (c->sl_bitmap[fl] == 0)
            c->fl_bitmap &= ~(1u << fl);
    }
}

/* Find (and unlink) a free block of at least `need` bytes in O(1): the first non-empty list at or
 * above the one `need` rounds up to (every block there fits), else the head of `need`'s own list
 * if it happens to fit. Returns NULL if neither exists. */
static blk_t *find_block(ctl_t *c, unsigned fl_count, size_t need) {
    unsigned fl, sl;
    size_t rounded = need;
    if (need >= SMALL_BLOCK)
        rounded = need + ((size_t)1 << (msb_size(need) - SL_LOG2)) - 1;
    mapping(rounded, &fl, &sl);
    blk_t *b = NULL;
    if (fl < fl_count) {
        uint32_t sl_map = (uint32_t)c->sl_bitmap[fl] & (~0u << sl);
        if (sl_map == 0) {
            uint32_t fl_map = fl + 1 < 32 ? c->fl_bitmap & (~0u << (fl + 1)) : 0;
            if (fl_map != 0) {
                fl = lsb32(fl_map);
                sl_map = c->sl_bitmap[fl];
            }
        }
        if (sl_map != 0)
            b = *head(c, fl, lsb32(sl_map));
    }
    if (b == NULL) {
        mapping(need, &fl, &sl);
        if (fl < fl_count) {
            blk_t *h = *head(c, fl, sl);
            if (h != NULL && bsize(h) >= need)
                b = h;
        }
    }
    if (b != NULL)
        list_remove(c, b);
    return b;
}

/* Mark free block b (already unlinked) used with `need` bytes, returning any tail of at least
 * MIN_BLOCK bytes to the free lists. */
static void take(ctl_t *c, blk_t *b, size_t need) {
    size_t have = bsize(b);
    size_t prev_flag = b->size_flags & F_PREV_FREE;
    if (have - need >= MIN_BLOCK) {
        blk_t *rest = (blk_t *)(void *)((unsigned char *)b + need);
        rest->prev_size = need;
        rest->size_flags = (have - need) | F_FREE;
        bnext(rest)->prev_size = have - need;
        bnext(rest)->size_flags |= F_PREV_FREE;
        list_insert(c, rest);
        b->size_flags = need | prev_flag;
    } else {
        b->size_flags = have | prev_flag;
        bnext(b)->size_flags &= ~F_PREV_FREE;
    }
    c->in_use += bsize(b);
    if (c->in_use > c->peak)
        c->peak = c->in_use;
    c->allocations++;
}

/* Return used block b to the free lists, merging it with free neighbours. */
static void give_back(ctl_t *c, blk_t *b) {
    size_t size = bsize(b);
    c->in_use -= size;
    size_t prev_flag = b->size_flags & F_PREV_FREE;
    if (prev_flag) {
        blk_t *p = bprev(b);
        list_remove(c, p);
        size += bsize(p);
        prev_flag = p->size_flags & F_PREV_FREE;
        b = p;
    }
    blk_t *n = (blk_t *)(void *)((unsigned char *)b + size);
    if (n->size_flags & F_FREE) {
        list_remove(c, n);
        size += bsize(n);
    }
    b->size_flags = size | F_FREE | prev_flag;
    n = bnext(b);
    n->prev_size = size;
    n->size_flags |= F_PREV_FREE;
    list_insert(c, b);
}

static inline void lock(const tlb_arena_t *a, ctl_t *c) {
    if (a->locked)
        tlb_prim_mutex_lock(&c->lock);
}
static inline void unlock(const tlb_arena_t *a, ctl_t *c) {
    if (a->locked)
        tlb_prim_mutex_unlock(&c->lock);
}

/* ---- creation --------------------------------------------------------------------------------- */

static void fmt(char *buf, size_t len, const char *f, ...) {
    if (buf == NULL || len == 0)
        return;
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, len, f, ap);
    va_end(ap);
}

static unsigned fl_count_for(size_t pool) { return pool < SMALL_BLOCK ? 1u : msb_size(pool) - FL_SHIFT + 2u; }

static size_t ctl_size_for(unsigned fl_count) {
    size_t s = sizeof(ctl_t) + (size_t)fl_count * SL_COUNT * sizeof(blk_t *);
    return (s + ALIGN - 1) & ~(ALIGN - 1);
}

/* Guaranteed payload for a pool whose single free block has `block` bytes: the lower bound of
 * that block's list, since requests up to it round to a list at or below the block's. */
static size_t guaranteed(size_t block) { return block >= MIN_BLOCK ? list_floor(block) - HDR : 0; }

static int validate(const tlb_geometry_t *g, tlb_geometry_t *out, char *msg, size_t len) {
    *out = *g;
    if (out->index_shift == 0)
        out->index_shift = out->page_shift;
    if (out->periods == 0)
        out->periods = out->ways;
    if (g->sets < 2 || g->sets > 65536 || (g->sets & (g->sets - 1)) != 0) {
        fmt(msg, len, "sets must be a power of two in 2..65536, found %u", g->sets);
        return -1;
    }
    if (g->ways < 1) {
        fmt(msg, len, "ways must be at least 1, found %u", g->ways);
        return -1;
    }
    if (g->page_shift != 12 && g->page_shift != 21 && g->page_shift != 30) {
        fmt(msg, len, "page_shift must be 12 (4 KiB), 21 (2 MiB) or 30 (1 GiB), found %u", g->page_shift);
        return -1;
    }
    if (out->index_shift < out->page_shift || out->index_shift > 40) {
        fmt(msg, len, "index_shift must be in page_shift..40 (%u..40), found %u", out->page_shift, out->index_shift);
        return -1;
    }
    if (g->reserved_sets >= g->sets) {
        fmt(msg, len, "reserved_sets must be below sets (%u), found %u", g->sets, g->reserved_sets);
        return -1;
    }
    if (out->periods < 1 || out->periods > 4096) {
        fmt(msg, len, "periods must be in 1..4096, found %u", out->periods);
        return -1;
    }
    if (g->flags & ~(uint32_t)(TLB_ARENA_LOCKED | TLB_ARENA_MLOCK | TLB_ARENA_HUGE_THP)) {
        fmt(msg, len, "unknown flags 0x%x", g->flags);
        return -1;
    }
    unsigned sets_log2 = (unsigned)__builtin_ctz(g->sets);
    if (out->index_shift + sets_log2 + (unsigned)msb_size(out->periods) + 1u > 46u) {
        fmt(msg, len, "arena of %u periods x %u sets x 2^%u bytes exceeds 2^46 bytes", out->periods, g->sets,
            out->index_shift);
        return -1;
    }
    size_t slot = (size_t)1 << out->index_shift;
    size_t ctl_small = ctl_size_for(fl_count_for(slot));
    if (slot < ctl_small + HDR + MIN_BLOCK + 256) {
        fmt(msg, len, "a slot of %zu bytes cannot hold the %zu-byte control block and a useful pool", slot,
            ctl_small);
        return -1;
    }
    if (fl_count_for((size_t)g->reserved_sets * slot) > FL_MAX) {
        fmt(msg, len, "reserved run of %u slots is too large (pools must stay below 2^38 bytes)", g->reserved_sets);
        return -1;
    }
    return 0;
}

size_t tlb_arena_size(const tlb_geometry_t *g) {
    tlb_geometry_t v;
    if (g == NULL || validate(g, &v, NULL, 0) != 0)
        return 0;
    return (size_t)v.periods * v.sets * ((size_t)1 << v.index_shift);
}

/* Build the heap of one color: control block, then every pool as one free block + sentinel.
 * Pools are inserted in the order 0, periods-1, periods-2, ..., 1 (each at its list's head), so
 * among equal full slots the one of period 1 is at the head (docs/color.md). */
static int init_color(tlb_arena_t *a, uint32_t color) {
    ctl_t *c = ctl_of_color(a, color);
    size_t cb = ctl_bytes_of(a, color);
    memset(c, 0, cb);
    c->color = color;
    if (a->locked && tlb_prim_mutex_init(&c->lock) != 0)
        return -1;
    uint32_t n = npools(a, color);
    for (uint32_t j = 0; j < n; j++) {
        uint32_t i = j == 0 ? 0 : n - j;
        uintptr_t lo, hi;
        pool_bounds(a, color, i, &lo, &hi);
        blk_t *b = (blk_t *)lo;
        blk_t *s = (blk_t *)(hi - HDR);
        b->prev_size = 0;
        b->size_flags = ((size_t)(hi - lo) - HDR) | F_FREE;
        s->prev_size = (size_t)(hi - lo) - HDR;
        s->size_flags = F_PREV_FREE; /* size 0, used: the pool's end */
        list_insert(c, b);
    }
    return 0;
}

tlb_arena_t *tlb_arena_create(const tlb_geometry_t *g, tlb_status_t *err, char *errbuf, size_t errbuf_len) {
    tlb_status_t dummy;
    if (err == NULL)
        err = &dummy;
    tlb_geometry_t v;
    if (g == NULL) {
        fmt(errbuf, errbuf_len, "geometry is NULL");
        *err = TLB_EINVAL;
        return NULL;
    }
    if (validate(g, &v, errbuf, errbuf_len) != 0) {
        *err = TLB_EINVAL;
        return NULL;
    }
    size_t slot = (size_t)1 << v.index_shift;
    size_t period_bytes = (size_t)v.sets * slot;
    size_t size = (size_t)v.periods * period_bytes;

    tlb_prim_region_t region;
    uintptr_t base;
    void *hp;
    int backing;
    char perr[256];
    if (tlb_prim_reserve(size, period_bytes, v.page_shift, (v.flags & TLB_ARENA_HUGE_THP) != 0,
                         (v.flags & TLB_ARENA_MLOCK) != 0, &region, &base, &hp, &backing, perr, sizeof perr) != 0) {
        fmt(errbuf, errbuf_len, "%s", perr);
        *err = TLB_ENOMEM;
        return NULL;
    }
    tlb_arena_t *a = hp;
    memset(a, 0, sizeof *a);
    a->base = base;
    a->size = size;
    a->slot = slot;
    a->period_bytes = period_bytes;
    a->sets = v.sets;
    a->ways = v.ways;
    a->page_shift = v.page_shift;
    a->index_shift = v.index_shift;
    a->reserved = v.reserved_sets;
    a->periods = v.periods;
    a->flags = v.flags;
    a->set_mask = v.sets - 1;
    a->sets_log2 = (uint32_t)__builtin_ctz(v.sets);
    a->small_colors = v.sets - v.reserved_sets;
    a->large_colors = v.reserved_sets > 0 ? v.periods : 0;
    a->fl_count_small = fl_count_for(slot);
    a->ctl_small = ctl_size_for(a->fl_count_small);
    a->small_max = guaranteed(v.periods > 1 ? slot - HDR : slot - a->ctl_small - HDR);
    if (a->large_colors > 0) {
        size_t run = (size_t)v.reserved_sets * slot;
        a->fl_count_large = fl_count_for(run);
        a->ctl_large = ctl_size_for(a->fl_count_large);
        a->large_max = run > a->ctl_large + HDR + MIN_BLOCK ? guaranteed(run - a->ctl_large - HDR) : 0;
    }
    a->backing = backing;
    a->locked = (v.flags & TLB_ARENA_LOCKED) != 0;
    a->region = region;
    uint32_t total = a->small_colors + a->large_colors;
    for (uint32_t col = 0; col < total; col++) {
        if (init_color(a, col) != 0) {
            fmt(errbuf, errbuf_len, "pthread_mutex_init failed for color %u", col);
            tlb_prim_region_t r = a->region;
            tlb_prim_release(&r);
            *err = TLB_ENOMEM;
            return NULL;
        }
    }
    *err = TLB_OK;
    return a;
}

void tlb_arena_destroy(tlb_arena_t *a) {
    if (a == NULL)
        return;
    if (a->locked) {
        uint32_t total = a->small_colors + a->large_colors;
        for (uint32_t col = 0; col < total; col++)
            tlb_prim_mutex_destroy(&ctl_of_color(a, col)->lock);
    }
    tlb_prim_region_t r = a->region; /* the handle lives inside the region: copy first */
    tlb_prim_release(&r);
}

void tlb_arena_info(const tlb_arena_t *a, tlb_arena_info_t *out) {
    memset(out, 0, sizeof *out);
    out->base = a->base;
    out->size = a->size;
    out->slot_size = a->slot;
    out->small_colors = a->small_colors;
    out->large_colors = a->large_colors;
    out->small_max_alloc = a->small_max;
    out->large_max_alloc = a->large_max;
    out->handle_set = a->page_shift == 12 ? tlb_set_of(a, (const void *)(a->base - 4096)) : UINT32_MAX;
    out->huge_backing = a->backing;
    out->locked = a->locked;
    out->conflict_free = a->periods <= a->ways;
}

uint32_t tlb_color_count(const tlb_arena_t *a) { return a->small_colors + a->large_colors; }

size_t tlb_max_alloc(const tlb_arena_t *a, uint32_t color) {
    if (color < a->small_colors)
        return a->small_max;
    if (color < a->small_colors + a->large_colors)
        return a->large_max;
    return 0;
}

/* ---- allocation ------------------------------------------------------------------------------- */

static void *alloc_locked(tlb_arena_t *a, ctl_t *c, uint32_t color, size_t need) {
    blk_t *b = find_block(c, fl_count_of(a, color), need);
    if (b == NULL) {
        c->oom_count++;
        return NULL;
    }
    take(c, b, need);
    return payload(b);
}

void *tlb_malloc(tlb_arena_t *a, size_t size, uint32_t color) {
    if (color >= a->small_colors + a->large_colors)
        return NULL;
    size_t need = adjust(size);
    if (need == 0)
        return NULL;
    ctl_t *c = ctl_of_color(a, color);
    lock(a, c);
    void *p = alloc_locked(a, c, color, need);
    unlock(a, c);
    return p;
}

void *tlb_calloc(tlb_arena_t *a, size_t nmemb, size_t size, uint32_t color) {
    if (size != 0 && nmemb > SIZE_MAX / size)
        return NULL;
    void *p = tlb_malloc(a, nmemb * size, color);
    if (p != NULL)
        memset(p, 0, nmemb * size);
    return p;
}

void *tlb_aligned_alloc(tlb_arena_t *a, size_t alignment, size_t size, uint32_t color) {
    if (alignment <= ALIGN)
        return tlb_malloc(a, size, color);
    if ((alignment & (alignment - 1)) != 0 || alignment > a->slot || color >= a->small_colors + a->large_colors)
        return NULL;
    size_t need = adjust(size);
    if (need == 0 || need > SIZE_MAX - alignment - MIN_BLOCK)
        return NULL;
    ctl_t *c = ctl_of_color(a, color);
    lock(a, c);
    /* A block this large always contains an aligned payload whose leading gap is either 0 or at
     * least MIN_BLOCK (so the gap can become a free block of its own). */
    blk_t *b = find_block(c, fl_count_of(a, color), need + alignment + MIN_BLOCK);
    if (b == NULL) {
        c->oom_count++;
        unlock(a, c);
        return NULL;
    }
    uintptr_t pay = (uintptr_t)payload(b);
    uintptr_t al = (pay + alignment - 1) & ~(uintptr_t)(alignment - 1);
    if (al != pay && al - pay < MIN_BLOCK)
        al = (pay + MIN_BLOCK + alignment - 1) & ~(uintptr_t)(alignment - 1);
    size_t gap = al - pay;
    if (gap != 0) {
        /* Split off the gap as a free block; its predecessor is used (no two frees are adjacent). */
        size_t have = bsize(b);
        blk_t *nb = (blk_t *)(void *)((unsigned char *)b + gap);
        b->size_flags = gap | F_FREE | (b->size_flags & F_PREV_FREE);
        nb->prev_size = gap;
        nb->size_flags = (have - gap) | F_PREV_FREE;
        bnext(nb)->prev_size = have - gap;
        list_insert(c, b);
        b = nb;
    }
    take(c, b, need);
    unlock(a, c);
    return payload(b);
}

void tlb_free(tlb_arena_t *a, void *ptr) {
    if (ptr == NULL)
        return;
    ctl_t *c = ctl_of_color(a, tlb_color_of(a, ptr));
    lock(a, c);
    give_back(c, from_payload(ptr));
    unlock(a, c);
}

size_t tlb_usable_size(const tlb_arena_t *a, const void *ptr) {
    (void)a;
    return ptr == NULL ? 0 : bsize(from_payload(ptr)) - HDR;
}

void *tlb_realloc(tlb_arena_t *a, void *ptr, size_t size, uint32_t color) {
    if (ptr == NULL)
        return tlb_malloc(a, size, color);
    if (size == 0) {
        tlb_free(a, ptr);
        return NULL;
    }
    size_t need = adjust(size);
    if (need == 0)
        return NULL;
    uint32_t col = tlb_color_of(a, ptr);
    ctl_t *c = ctl_of_color(a, col);
    lock(a, c);
    blk_t *b = from_payload(ptr);
    size_t have = bsize(b);
    blk_t *n = bnext(b);
    if (need > have && (n->size_flags & F_FREE) && have + bsize(n) >= need) {
        /* Grow into the free successor. */
        list_remove(c, n);
        have += bsize(n);
        c->in_use += bsize(n);
        b->size_flags = have | (b->size_flags & F_PREV_FREE);
        bnext(b)->prev_size = have;
        bnext(b)->size_flags &= ~F_PREV_FREE;
    }
    if (need <= have) {
        if (have - need >= MIN_BLOCK) {
            /* Shrink: the tail becomes a free block, merged with a free successor. */
            blk_t *rest = (blk_t *)(void *)((unsigned char *)b + need);
            b->size_flags = need | (b->size_flags & F_PREV_FREE);
            rest->prev_size = need;
            rest->size_flags = have - need; /* used for a moment: give_back() frees it, merges it with
                                               a free successor and takes it off in_use */
            give_back(c, rest);
        }
        if (c->in_use > c->peak)
            c->peak = c->in_use;
        unlock(a, c);
        return ptr;
    }
    void *q = alloc_locked(a, c, col, need);
    if (q != NULL) {
        memcpy(q, ptr, have - HDR);
        give_back(c, b);
    }
    unlock(a, c);
    return q;
}

/* Diagnostics and the invariant check, in color.c's translation unit (see its banner). */
#define TLBLAB_COLOR_C_PARTS
#include "color_check.c"
