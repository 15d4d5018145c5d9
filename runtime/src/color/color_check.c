/* The TLB-coloring allocator's diagnostics and invariant check (tlb_color_diagnostics,
 * tlb_arena_check): a walk of every block of a color against its boundary tags, free lists and
 * bitmaps (o1heap's invariant-check function).
 *
 * Not a translation unit of its own: color.c includes this file at its end, so these functions see
 * the heap's static helpers (bsize, bnext, head, lock, ...) and the compiler builds the very same
 * code as when they stood in color.c (seed 003's captured task program compiles the allocator,
 * and its captures are keyed by the program's bytes). Build systems list color.c only. */
#ifndef TLBLAB_COLOR_C_PARTS
#error "color_check.c is part of color.c's translation unit: compile color.c, not this file"
#endif

/* ---- diagnostics and invariants --------------------------------------------------------------- */

typedef struct walk {
    size_t used, free_bytes, largest_free, free_blocks, blocks;
} walk_t;

/* Walk every block of a color, checking boundary tags. Returns 0, or -1 with a message. */
static int walk_color(const tlb_arena_t *a, uint32_t color, walk_t *w, char *msg, size_t len) {
    memset(w, 0, sizeof *w);
    uint32_t n = npools(a, color);
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t lo, hi;
        pool_bounds(a, color, i, &lo, &hi);
        blk_t *b = (blk_t *)lo;
        size_t prev_size = 0;
        int prev_free = 0;
        for (;;) {
            uintptr_t at = (uintptr_t)b;
            if (at + HDR > hi) {
                fmt(msg, len, "color %u pool %u: block at offset %#zx runs past the pool end", color, i,
                    (size_t)(at - a->base));
                return -1;
            }
            if (b->prev_size != prev_size) {
                fmt(msg, len, "color %u: block at offset %#zx has prev_size %zu, expected %zu", color,
                    (size_t)(at - a->base), b->prev_size, prev_size);
                return -1;
            }
            if (((b->size_flags & F_PREV_FREE) != 0) != prev_free) {
                fmt(msg, len, "color %u: block at offset %#zx has a wrong prev-free flag", color,
                    (size_t)(at - a->base));
                return -1;
            }
            size_t s = bsize(b);
            if (s == 0) {
                if (at + HDR != hi || (b->size_flags & F_FREE)) {
                    fmt(msg, len, "color %u pool %u: sentinel at offset %#zx, expected %#zx", color, i,
                        (size_t)(at - a->base), (size_t)(hi - HDR - a->base));
                    return -1;
                }
                break;
            }
            if (s < MIN_BLOCK || (s & (ALIGN - 1)) != 0 || at + s > hi - HDR) {
                fmt(msg, len, "color %u: block at offset %#zx has bad size %zu", color, (size_t)(at - a->base), s);
                return -1;
            }
            if (tlb_color_of(a, (void *)at) != color || tlb_color_of(a, (void *)(at + s - 1)) != color) {
                fmt(msg, len, "color %u: block at offset %#zx leaves the color", color, (size_t)(at - a->base));
                return -1;
            }
            int is_free = (b->size_flags & F_FREE) != 0;
            if (is_free && prev_free) {
                fmt(msg, len, "color %u: adjacent free blocks at offset %#zx", color, (size_t)(at - a->base));
                return -1;
            }
            w->blocks++;
            if (is_free) {
                w->free_bytes += s;
                w->free_blocks++;
                if (s - HDR > w->largest_free)
                    w->largest_free = s - HDR;
            } else {
                w->used += s;
            }
            prev_size = s;
            prev_free = is_free;
            b = bnext(b);
        }
    }
    return 0;
}

static size_t capacity_of(const tlb_arena_t *a, uint32_t color) {
    return color < a->small_colors ? (size_t)a->periods * a->slot : (size_t)a->reserved * a->slot;
}

int tlb_color_diagnostics(tlb_arena_t *a, uint32_t color, tlb_color_diag_t *out) {
    if (color >= a->small_colors + a->large_colors)
        return -1;
    ctl_t *c = ctl_of_color(a, color);
    lock(a, c);
    walk_t w;
    int bad = walk_color(a, color, &w, NULL, 0);
    memset(out, 0, sizeof *out);
    out->color = color;
    out->large = color >= a->small_colors;
    out->first_set = out->large ? 0 : a->reserved + color;
    out->set_count = out->large ? a->reserved : 1;
    out->capacity = capacity_of(a, color);
    out->in_use = c->in_use;
    out->peak_in_use = c->peak;
    out->allocations = c->allocations;
    out->oom_count = c->oom_count;
    if (bad == 0) {
        out->free_bytes = w.free_bytes;
        out->largest_free = w.largest_free;
        out->free_blocks = w.free_blocks;
    }
    unlock(a, c);
    return 0;
}

static tlb_status_t check_color(const tlb_arena_t *a, uint32_t color, char *msg, size_t len) {
    ctl_t *c = ctl_of_color(a, color);
    walk_t w;
    if (walk_color(a, color, &w, msg, len) != 0)
        return TLB_ECORRUPT;
    if (c->color != color) {
        fmt(msg, len, "color %u: control block says color %u", color, c->color);
        return TLB_ECORRUPT;
    }
    if (w.used != c->in_use) {
        fmt(msg, len, "color %u: in-use counter %zu, blocks say %zu", color, c->in_use, w.used);
        return TLB_ECORRUPT;
    }
    size_t overhead = ctl_bytes_of(a, color) + (size_t)npools(a, color) * HDR;
    if (w.used + w.free_bytes + overhead != capacity_of(a, color)) {
        fmt(msg, len, "color %u: used %zu + free %zu + overhead %zu != capacity %zu", color, w.used, w.free_bytes,
            overhead, capacity_of(a, color));
        return TLB_ECORRUPT;
    }
    unsigned flc = fl_count_of(a, color);
    if (flc < 32 && (c->fl_bitmap >> flc) != 0) {
        fmt(msg, len, "color %u: first-level bitmap %#x has bits above level %u", color, c->fl_bitmap, flc - 1);
        return TLB_ECORRUPT;
    }
    size_t listed = 0;
    for (unsigned fl = 0; fl < flc; fl++) {
        if (((c->fl_bitmap >> fl) & 1u) != (c->sl_bitmap[fl] != 0)) {
            fmt(msg, len, "color %u: first-level bit %u disagrees with its second-level bitmap", color, fl);
            return TLB_ECORRUPT;
        }
        for (unsigned sl = 0; sl < SL_COUNT; sl++) {
            blk_t *h = *head(c, fl, sl);
            if (((c->sl_bitmap[fl] >> sl) & 1u) != (h != NULL)) {
                fmt(msg, len, "color %u: bitmap bit (%u,%u) disagrees with the list", color, fl, sl);
                return TLB_ECORRUPT;
            }
            blk_t *prev = NULL;
            for (blk_t *b = h; b != NULL; b = b->next_free) {
                if (++listed > w.free_blocks) {
                    fmt(msg, len, "color %u: free lists hold more entries than the %zu free blocks (cycle?)", color,
                        w.free_blocks);
                    return TLB_ECORRUPT;
                }
                uintptr_t at = (uintptr_t)b;
                if (tlb_color_of(a, b) != color || !(b->size_flags & F_FREE)) {
                    fmt(msg, len, "color %u: list (%u,%u) holds a foreign or used block at %#lx", color, fl, sl,
                        (unsigned long)at);
                    return TLB_ECORRUPT;
                }
                unsigned f2, s2;
                mapping(bsize(b), &f2, &s2);
                if (f2 != fl || s2 != sl || b->prev_free != prev) {
                    fmt(msg, len, "color %u: block at offset %#zx is on list (%u,%u), belongs on (%u,%u)", color,
                        (size_t)(at - a->base), fl, sl, f2, s2);
                    return TLB_ECORRUPT;
                }
                prev = b;
            }
        }
    }
    if (listed != w.free_blocks) {
        fmt(msg, len, "color %u: %zu free blocks but %zu on the free lists", color, w.free_blocks, listed);
        return TLB_ECORRUPT;
    }
    return TLB_OK;
}

tlb_status_t tlb_arena_check(tlb_arena_t *a, char *msg, size_t len) {
    uint32_t total = a->small_colors + a->large_colors;
    for (uint32_t col = 0; col < total; col++) {
        ctl_t *c = ctl_of_color(a, col);
        lock(a, c);
        tlb_status_t s = check_color(a, col, msg, len);
        unlock(a, c);
        if (s != TLB_OK)
            return s;
    }
    fmt(msg, len, "ok");
    return TLB_OK;
}
