/* Randomized property test of the TLB-coloring allocator. For many random geometries and random
 * malloc / calloc / aligned / realloc / free sequences, after every operation:
 *   - every byte of every live allocation lies on slots of its requested color (checked from the
 *     virtual address alone, independently of the allocator's own tlb_color_of);
 *   - no two live allocations overlap (checked with a shadow byte map of the whole arena);
 *   - the contents written into a block survive other operations (catches overlap and bad copies);
 *   - the per-color in-use counter equals the sum of the live blocks' sizes (from the model);
 * and every few operations tlb_arena_check() (boundary tags, free lists, bitmaps) passes.
 * Usage: test_color_prop [geometries] [ops per geometry] [seed]. Deterministic for a given seed. */
#include "tlblab/color.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;
static uint64_t rnd(void) { /* SplitMix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }

#define FAIL(...)                                                       \
    do {                                                                \
        fprintf(stderr, "test_color_prop: geometry %d op %ld: ", gi, op); \
        fprintf(stderr, __VA_ARGS__);                                   \
        fputc('\n', stderr);                                            \
        exit(1);                                                        \
    } while (0)

typedef struct live {
    unsigned char *p;
    size_t n;
    uint32_t color;
    unsigned char tag;
} live_t;

static int gi;
static long op;

int main(int argc, char **argv) {
    int geometries = argc > 1 ? atoi(argv[1]) : 50;
    long ops = argc > 2 ? atol(argv[2]) : 5000;
    rng_state = argc > 3 ? strtoull(argv[3], NULL, 0) : 0x7ab1ab;
    long total_allocs = 0;
    for (gi = 0; gi < geometries; gi++) {
        op = -1;
        uint32_t sets = 1u << (1 + below(7));          /* 2..128 */
        uint32_t reserved = (uint32_t)below(sets < 8 ? 1 : 4);
        uint32_t periods = 1 + (uint32_t)below(4);
        uint32_t index_shift = 12 + (uint32_t)(below(4) == 0 ? 1 : 0);
        tlb_geometry_t g = {.sets = sets, .ways = periods, .page_shift = 12, .index_shift = index_shift,
                            .reserved_sets = reserved, .periods = periods};
        char msg[256];
        tlb_arena_t *a = tlb_arena_create(&g, NULL, msg, sizeof msg);
        if (a == NULL)
            FAIL("create(sets=%u R=%u periods=%u): %s", sets, reserved, periods, msg);
        tlb_arena_info_t inf;
        tlb_arena_info(a, &inf);
        uint32_t ncolors = tlb_color_count(a);
        /* Shadow map: which live allocation owns each byte of the arena (0 = none). */
        uint32_t *owner = calloc(inf.size / 16, sizeof *owner);
        size_t cap = 4096;
        live_t *lv = calloc(cap, sizeof *lv);
        size_t nlive = 0;
        size_t *model_in_use = calloc(ncolors, sizeof *model_in_use);
        if (!owner || !lv || !model_in_use)
            FAIL("out of host memory");
        /* Focus the workload on a few colors so they fill up and fragment. */
        uint32_t focus = 1 + (uint32_t)below(ncolors < 4 ? ncolors : 4);
        for (op = 0; op < ops; op++) {
            uint64_t r = below(100);
            if (r < 55 || nlive == 0) {
                uint32_t color = (uint32_t)below(focus) * (ncolors / focus);
                if (below(20) == 0)
                    color = (uint32_t)below(ncolors);
                size_t maxn = tlb_max_alloc(a, color);
                size_t n = below(4) == 0 ? 1 + below(maxn) : 1 + below(maxn / 8 + 1);
                unsigned char *p;
                int kind = (int)below(10);
                size_t al = 16;
                if (kind == 0) {
                    p = tlb_calloc(a, 1, n, color);
                } else if (kind == 1) {
                    al = (size_t)1 << (4 + below(8));
                    p = tlb_aligned_alloc(a, al, n, color);
                } else {
                    p = tlb_malloc(a, n, color);
                }
                if (p == NULL)
                    continue;
                total_allocs++;
                if ((uintptr_t)p % al != 0)
                    FAIL("misaligned %p for alignment %zu", (void *)p, al);
                if (kind == 0)
                    for (size_t i = 0; i < n; i++)
                        if (p[i] != 0)
                            FAIL("calloc byte %zu not zero", i);
                uintptr_t lo = (uintptr_t)p, hi = lo + n - 1;
                if (lo < inf.base || hi >= inf.base + inf.size)
                    FAIL("allocation outside the arena");
                for (uintptr_t k = (lo - inf.base) >> index_shift; k <= (hi - inf.base) >> index_shift; k++) {
                    uint32_t set = (uint32_t)(k % sets), period = (uint32_t)(k / sets);
                    uint32_t want = color < inf.small_colors ? set - reserved : inf.small_colors + period;
                    int ok = color < inf.small_colors ? (set >= reserved && set - reserved == color)
                                                      : (set < reserved && want == color);
                    if (!ok)
                        FAIL("color %u allocation of %zu bytes touches slot %zu (set %u)", color, n, (size_t)k, set);
                }
                if (nlive == cap) {
                    cap *= 2;
                    lv = realloc(lv, cap * sizeof *lv);
                    if (!lv)
                        FAIL("out of host memory");
                }
                size_t usable = tlb_usable_size(a, p);
                if (usable < n)
                    FAIL("usable size %zu < %zu", usable, n);
                for (size_t i = (lo - inf.base) / 16; i <= (lo + usable - 1 - inf.base) / 16; i++) {
                    if (owner[i] != 0)
                        FAIL("new block at %p overlaps a live block", (void *)p);
                    owner[i] = 1;
                }
                unsigned char tag = (unsigned char)(1 + below(250));
                memset(p, tag, n);
                lv[nlive++] = (live_t){p, n, color, tag};
                model_in_use[color] += usable + 16;
            } else {
                size_t i = below(nlive);
                live_t *l = &lv[i];
                for (size_t k = 0; k < l->n; k++)
                    if (l->p[k] != l->tag)
                        FAIL("block %p byte %zu was overwritten", (void *)l->p, k);
                size_t usable = tlb_usable_size(a, l->p);
                uintptr_t lo = (uintptr_t)l->p;
                if (below(4) == 0) {
                    size_t n2 = 1 + below(tlb_max_alloc(a, l->color));
                    unsigned char *q = tlb_realloc(a, l->p, n2, l->color);
                    if (q == NULL)
                        continue; /* l->p stays valid */
                    for (size_t k = (lo - inf.base) / 16; k <= (lo + usable - 1 - inf.base) / 16; k++)
                        owner[k] = 0;
                    model_in_use[l->color] -= usable + 16;
                    size_t keep = n2 < l->n ? n2 : l->n;
                    for (size_t k = 0; k < keep; k++)
                        if (q[k] != l->tag)
                            FAIL("realloc lost byte %zu", k);
                    if (tlb_color_of(a, q) != l->color)
                        FAIL("realloc changed the color");
                    size_t u2 = tlb_usable_size(a, q);
                    for (size_t k = ((uintptr_t)q - inf.base) / 16; k <= ((uintptr_t)q + u2 - 1 - inf.base) / 16; k++) {
                        if (owner[k] != 0)
                            FAIL("realloc'd block overlaps a live block");
                        owner[k] = 1;
                    }
                    memset(q, l->tag, n2);
                    l->p = q;
                    l->n = n2;
                    model_in_use[l->color] += u2 + 16;
                } else {
                    for (size_t k = (lo - inf.base) / 16; k <= (lo + usable - 1 - inf.base) / 16; k++)
                        owner[k] = 0;
                    model_in_use[l->color] -= usable + 16;
                    tlb_free(a, l->p);
                    lv[i] = lv[--nlive];
                }
            }
            if (op % 97 == 0 || op == ops - 1) {
                if (tlb_arena_check(a, msg, sizeof msg) != TLB_OK)
                    FAIL("invariant: %s", msg);
                for (uint32_t c = 0; c < ncolors; c++) {
                    tlb_color_diag_t d;
                    tlb_color_diagnostics(a, c, &d);
                    if (d.in_use != model_in_use[c])
                        FAIL("color %u: diagnostics in_use %zu, model %zu", c, d.in_use, model_in_use[c]);
                    if (d.in_use + d.free_bytes > d.capacity || d.peak_in_use < d.in_use)
                        FAIL("color %u: inconsistent diagnostics", c);
                }
            }
        }
        /* Free everything: every color returns to one free block per pool. */
        for (size_t i = 0; i < nlive; i++)
            tlb_free(a, lv[i].p);
        for (uint32_t c = 0; c < ncolors; c++) {
            tlb_color_diag_t d;
            tlb_color_diagnostics(a, c, &d);
            uint32_t pools = c < inf.small_colors ? periods : 1;
            if (d.in_use != 0 || d.free_blocks != pools)
                FAIL("color %u after freeing all: in_use %zu, %zu free blocks (want %u)", c, d.in_use,
                     d.free_blocks, pools);
        }
        if (tlb_arena_check(a, msg, sizeof msg) != TLB_OK)
            FAIL("invariant after freeing all: %s", msg);
        free(owner);
        free(lv);
        free(model_in_use);
        tlb_arena_destroy(a);
    }
    printf("test_color_prop: %d geometries, %ld ops each, %ld allocations: all properties held\n", geometries, ops,
           total_allocs);
    return 0;
}
