/* Behaviour tests of the TLB-coloring allocator (tlblab/color.h): geometry and colors, placement
 * on the requested TLB set, limits, free/coalescing, calloc/realloc/aligned allocation,
 * diagnostics, the invariant check catching corruption, and bad geometries. Each test reads as
 * "given ..., when ..., then ...". Run by ctest as color_unit (and under ASan/UBSan, valgrind). */
#include "tlblab/color.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static tlb_arena_t *make(uint32_t sets, uint32_t ways, uint32_t reserved, uint32_t periods, uint32_t flags) {
    tlb_geometry_t g = {.sets = sets, .ways = ways, .page_shift = 12, .reserved_sets = reserved,
                        .periods = periods, .flags = flags};
    tlb_status_t st;
    char msg[256];
    tlb_arena_t *a = tlb_arena_create(&g, &st, msg, sizeof msg);
    if (a == NULL) {
        fprintf(stderr, "tlb_arena_create: %s\n", msg);
        exit(1);
    }
    return a;
}

static void check_ok(tlb_arena_t *a) {
    char msg[256];
    tlb_status_t s = tlb_arena_check(a, msg, sizeof msg);
    if (s != TLB_OK)
        fprintf(stderr, "invariant: %s\n", msg);
    CHECK(s == TLB_OK);
}

/* Every byte of [p, p+n) lies on a slot whose set is `set` (small color) — checked from the VA
 * alone with the Zen-3-style formula set = (va >> 12) mod sets. */
static int all_on_set(const void *p, size_t n, uint32_t sets, uint32_t set) {
    uintptr_t lo = (uintptr_t)p, hi = lo + n - 1;
    for (uintptr_t pg = lo >> 12; pg <= hi >> 12; pg++)
        if ((pg & (sets - 1)) != set)
            return 0;
    return 1;
}

static void given_geometry_when_created_then_colors_and_limits_follow_seed_equations(void) {
    tlb_arena_t *a = make(128, 16, 4, 0, 0);
    tlb_arena_info_t inf;
    tlb_arena_info(a, &inf);
    CHECK(inf.small_colors == 124);        /* M - R (seed eq. 3.2) */
    CHECK(inf.large_colors == 16);         /* one per period = N (seed Corollary 1) */
    CHECK(tlb_color_count(a) == 140);
    CHECK(inf.slot_size == 4096);
    CHECK(inf.size == (size_t)16 * 128 * 4096);
    CHECK(inf.base % (128u * 4096u) == 0); /* aligned to a period */
    CHECK(inf.handle_set == 127);
    CHECK(inf.huge_backing == 0);
    CHECK(inf.conflict_free == 1);
    CHECK(inf.small_max_alloc > 3000 && inf.small_max_alloc < 4096);
    CHECK(inf.large_max_alloc > 3 * 4096 && inf.large_max_alloc < 4 * 4096); /* page_size x R (eq. 3.1) */
    CHECK(tlb_max_alloc(a, 0) == inf.small_max_alloc);
    CHECK(tlb_max_alloc(a, 124) == inf.large_max_alloc);
    CHECK(tlb_max_alloc(a, 140) == 0);
    CHECK(tlb_arena_size(&(tlb_geometry_t){.sets = 128, .ways = 16, .page_shift = 12}) == (size_t)16 * 128 * 4096);
    check_ok(a);
    tlb_arena_destroy(a);
}

static void given_small_color_when_allocating_then_every_byte_is_on_its_set(void) {
    tlb_arena_t *a = make(64, 4, 2, 0, 0);
    for (uint32_t c = 0; c < 62; c++) {
        size_t sizes[] = {1, 16, 17, 100, 1000, 2000, tlb_max_alloc(a, c)};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            unsigned char *p = tlb_malloc(a, sizes[i], c);
            CHECK(p != NULL);
            if (p == NULL)
                continue;
            CHECK(((uintptr_t)p & 15) == 0);
            CHECK(all_on_set(p, sizes[i], 64, 2 + c));
            CHECK(tlb_color_of(a, p) == c);
            CHECK(tlb_color_of(a, p + sizes[i] - 1) == c);
            CHECK(tlb_set_of(a, p) == 2 + c);
            CHECK(tlb_usable_size(a, p) >= sizes[i]);
            memset(p, 0xab, sizes[i]);
        }
    }
    check_ok(a);
    tlb_arena_destroy(a);
}

static void given_large_color_when_allocating_a_run_then_it_spans_only_reserved_sets(void) {
    tlb_arena_t *a = make(32, 4, 4, 0, 0);
    tlb_arena_info_t inf;
    tlb_arena_info(a, &inf);
    for (uint32_t l = 0; l < inf.large_colors; l++) {
        uint32_t color = inf.small_colors + l;
        size_t n = tlb_max_alloc(a, color);
        unsigned char *p = tlb_malloc(a, n, color);
        CHECK(p != NULL);
        if (p == NULL)
            continue;
        for (uintptr_t pg = (uintptr_t)p >> 12; pg <= ((uintptr_t)p + n - 1) >> 12; pg++) {
            CHECK((pg & 31) < 4);                                /* a reserved set */
            CHECK(((pg << 12) - inf.base) / (32u * 4096u) == l); /* inside period l */
        }
        CHECK(tlb_color_of(a, p) == color);
        memset(p, 1, n);
        /* The run is used up: nothing of that size fits again. */
        CHECK(tlb_malloc(a, n, color) == NULL);
    }
    tlb_color_diag_t d;
    CHECK(tlb_color_diagnostics(a, inf.small_colors, &d) == 0);
    CHECK(d.large == 1 && d.first_set == 0 && d.set_count == 4);
    CHECK(d.oom_count == 1);
    check_ok(a);
    tlb_arena_destroy(a);
}

static void given_a_full_color_when_allocating_then_null_and_oom_counted_and_other_colors_unaffected(void) {
    tlb_arena_t *a = make(16, 2, 0, 2, 0);
    void *ps[64];
    int n = 0;
    while (n < 64 && (ps[n] = tlb_malloc(a, 1000, 3)) != NULL)
        n++;
    CHECK(n >= 6 && n <= 8); /* two 4 KiB slots, ~3.9 KiB and ~3.5 KiB usable */
    CHECK(tlb_malloc(a, 1000, 3) == NULL);
    tlb_color_diag_t d;
    tlb_color_diagnostics(a, 3, &d);
    CHECK(d.oom_count == 2);
    CHECK(d.allocations == (uint64_t)n);
    CHECK(d.in_use == d.peak_in_use);
    CHECK(tlb_malloc(a, 1000, 4) != NULL);
    CHECK(tlb_malloc(a, 0, 4) == NULL);
    CHECK(tlb_malloc(a, 5000, 4) == NULL); /* larger than a slot */
    CHECK(tlb_malloc(a, 10, 16) == NULL);  /* no such color */
    for (int i = 0; i < n; i++)
        tlb_free(a, ps[i]);
    tlb_color_diagnostics(a, 3, &d);
    CHECK(d.in_use == 0);
    CHECK(d.free_blocks == 2); /* coalesced back to one block per slot */
    CHECK(d.largest_free + 16 + 16 == 4096); /* a whole slot minus header and sentinel */
    check_ok(a);
    tlb_arena_destroy(a);
}

static void given_freed_neighbours_when_freeing_the_middle_then_blocks_coalesce(void) {
    tlb_arena_t *a = make(16, 1, 0, 1, 0);
    void *x = tlb_malloc(a, 200, 5), *y = tlb_malloc(a, 200, 5), *z = tlb_malloc(a, 200, 5);
    CHECK(x && y && z);
    tlb_color_diag_t d0, d1;
    tlb_color_diagnostics(a, 5, &d0);
    tlb_free(a, x);
    tlb_free(a, z);
    tlb_color_diagnostics(a, 5, &d1);
    CHECK(d1.free_blocks == 2); /* x alone; z merged with the tail */
    tlb_free(a, y);
    tlb_color_diagnostics(a, 5, &d1);
    CHECK(d1.free_blocks == 1);
    CHECK(d1.in_use == 0);
    CHECK(d1.largest_free == tlb_max_alloc(a, 5) || d1.largest_free > tlb_max_alloc(a, 5));
    void *big = tlb_malloc(a, tlb_max_alloc(a, 5), 5);
    CHECK(big != NULL);
    check_ok(a);
    tlb_arena_destroy(a);
}

static void given_calloc_realloc_aligned_then_contents_alignment_and_color_hold(void) {
    tlb_arena_t *a = make(32, 4, 2, 0, 0);
    unsigned char *p = tlb_calloc(a, 10, 30, 7);
    CHECK(p != NULL);
    for (int i = 0; p && i < 300; i++)
        CHECK(p[i] == 0);
    CHECK(tlb_calloc(a, SIZE_MAX / 2, 4, 7) == NULL); /* overflow */
    for (int i = 0; p && i < 300; i++)
        p[i] = (unsigned char)i;
    unsigned char *q = tlb_realloc(a, p, 1200, 7); /* grows in place (free successor) */
    CHECK(q == p);
    unsigned char *r = tlb_malloc(a, 64, 7);       /* now block the successor */
    CHECK(r != NULL);
    unsigned char *s = tlb_realloc(a, q, 2500, 7); /* must move, within color 7 */
    CHECK(s != NULL && tlb_color_of(a, s) == 7);
    for (int i = 0; s && i < 300; i++)
        CHECK(s[i] == (unsigned char)i);
    s = tlb_realloc(a, s, 40, 99); /* shrink in place; the color argument is ignored */
    CHECK(s != NULL && tlb_color_of(a, s) == 7);
    for (int i = 0; s && i < 40; i++)
        CHECK(s[i] == (unsigned char)i);
    CHECK(tlb_realloc(a, s, 0, 7) == NULL); /* frees */
    void *t = tlb_realloc(a, NULL, 100, 9);
    CHECK(t != NULL && tlb_color_of(a, t) == 9);
    CHECK(tlb_realloc(a, t, 100000, 9) == NULL); /* too big: t stays valid */
    memset(t, 3, 100);
    for (size_t al = 32; al <= 2048; al *= 2) {
        unsigned char *u = tlb_aligned_alloc(a, al, 100, 11);
        CHECK(u != NULL && ((uintptr_t)u % al) == 0 && tlb_color_of(a, u) == 11);
        CHECK(u == NULL || all_on_set(u, 100, 32, 2 + 11));
    }
    CHECK(tlb_aligned_alloc(a, 48, 10, 11) == NULL);      /* not a power of two */
    CHECK(tlb_aligned_alloc(a, 8192, 10, 11) == NULL);    /* larger than a slot */
    CHECK(tlb_aligned_alloc(a, 8, 10, 11) != NULL);       /* raised to 16 */
    check_ok(a);
    tlb_arena_destroy(a);
}

static void given_corruption_when_checking_then_it_is_reported(void) {
    tlb_arena_t *a = make(16, 2, 0, 2, 0);
    unsigned char *p = tlb_malloc(a, 100, 1);
    unsigned char *q = tlb_malloc(a, 100, 1);
    CHECK(p && q);
    check_ok(a);
    size_t saved;
    memcpy(&saved, q - 8, sizeof saved);
    size_t bad = saved + 16; /* q's header claims a wrong size */
    memcpy(q - 8, &bad, sizeof bad);
    char msg[256];
    CHECK(tlb_arena_check(a, msg, sizeof msg) == TLB_ECORRUPT);
    CHECK(strstr(msg, "color 1") != NULL);
    memcpy(q - 8, &saved, sizeof saved);
    check_ok(a);
    tlb_arena_destroy(a);
}

static void given_bad_geometry_when_creating_then_a_clear_error(void) {
    struct {
        tlb_geometry_t g;
        const char *word;
    } cases[] = {
        {{.sets = 100, .ways = 4, .page_shift = 12}, "power of two"},
        {{.sets = 64, .ways = 0, .page_shift = 12}, "ways"},
        {{.sets = 64, .ways = 4, .page_shift = 13}, "page_shift"},
        {{.sets = 64, .ways = 4, .page_shift = 12, .index_shift = 11}, "index_shift"},
        {{.sets = 64, .ways = 4, .page_shift = 12, .reserved_sets = 64}, "reserved_sets"},
        {{.sets = 64, .ways = 4, .page_shift = 12, .flags = 0x80}, "flags"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tlb_status_t st = TLB_OK;
        char msg[256] = "";
        CHECK(tlb_arena_create(&cases[i].g, &st, msg, sizeof msg) == NULL);
        CHECK(st == TLB_EINVAL);
        CHECK(strstr(msg, cases[i].word) != NULL);
        CHECK(tlb_arena_size(&cases[i].g) == 0);
    }
}

static void given_more_periods_than_ways_then_the_arena_says_it_is_not_conflict_free(void) {
    tlb_arena_t *a = make(16, 2, 0, 3, 0);
    tlb_arena_info_t inf;
    tlb_arena_info(a, &inf);
    CHECK(inf.conflict_free == 0);
    tlb_arena_destroy(a);
}

static void given_index_above_page_offset_when_allocating_then_slots_span_several_pages(void) {
    /* A TLB indexed by VA bits 14.. (a slot = 4 pages): colors still follow the set formula. */
    tlb_geometry_t g = {.sets = 8, .ways = 2, .page_shift = 12, .index_shift = 14};
    tlb_arena_t *a = tlb_arena_create(&g, NULL, NULL, 0);
    CHECK(a != NULL);
    if (a == NULL)
        return;
    for (uint32_t c = 0; c < 8; c++) {
        size_t n = tlb_max_alloc(a, c);
        CHECK(n > 3 * 4096);
        unsigned char *p = tlb_malloc(a, n, c);
        CHECK(p != NULL && ((uintptr_t)p >> 14) % 8 == c && (((uintptr_t)p + n - 1) >> 14) % 8 == c);
    }
    check_ok(a);
    tlb_arena_destroy(a);
}

static void given_many_operations_then_placement_is_deterministic_across_arenas(void) {
    tlb_arena_t *a = make(32, 4, 2, 0, 0), *b = make(32, 4, 2, 0, 0);
    tlb_arena_info_t ia, ib;
    tlb_arena_info(a, &ia);
    tlb_arena_info(b, &ib);
    void *pa[200], *pb[200];
    uint64_t x = 42;
    for (int i = 0; i < 200; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t sz = 1 + (size_t)((x >> 33) % 900);
        uint32_t c = (uint32_t)((x >> 20) % 8);
        pa[i] = tlb_malloc(a, sz, c);
        pb[i] = tlb_malloc(b, sz, c);
        CHECK((pa[i] == NULL) == (pb[i] == NULL));
        if (pa[i] && pb[i])
            CHECK((uintptr_t)pa[i] - ia.base == (uintptr_t)pb[i] - ib.base);
        if (i % 3 == 2) {
            tlb_free(a, pa[i - 1]);
            tlb_free(b, pb[i - 1]);
        }
    }
    tlb_arena_destroy(a);
    tlb_arena_destroy(b);
}

static void given_huge_page_slots_then_colors_follow_bits_21_up_or_a_clear_error(void) {
    /* Without a hugetlbfs pool and without TLB_ARENA_HUGE_THP: no silent fallback to 4 KiB. */
    tlb_geometry_t g = {.sets = 4, .ways = 1, .page_shift = 21, .periods = 1};
    tlb_status_t st = TLB_OK;
    char msg[256] = "";
    tlb_arena_t *a = tlb_arena_create(&g, &st, msg, sizeof msg);
    if (a == NULL) {
        CHECK(st == TLB_ENOMEM);
        CHECK(strstr(msg, "MAP_HUGETLB") != NULL && strstr(msg, "TLB_ARENA_HUGE_THP") != NULL);
        g.flags = TLB_ARENA_HUGE_THP;
        a = tlb_arena_create(&g, &st, msg, sizeof msg);
    }
    CHECK(a != NULL);
    if (a == NULL) {
        fprintf(stderr, "huge arena: %s\n", msg);
        return;
    }
    tlb_arena_info_t inf;
    tlb_arena_info(a, &inf);
    CHECK(inf.slot_size == ((size_t)2 << 20));
    CHECK(inf.base % ((size_t)8 << 20) == 0);
    CHECK(inf.huge_backing == 1 || inf.huge_backing == 2);
    CHECK(inf.handle_set == UINT32_MAX);
    for (uint32_t c = 0; c < 4; c++) {
        size_t n = tlb_max_alloc(a, c);
        CHECK(n > ((size_t)3 << 19)); /* most of a 2 MiB slot */
        unsigned char *p = tlb_malloc(a, n, c);
        CHECK(p != NULL && ((uintptr_t)p >> 21) % 4 == c && (((uintptr_t)p + n - 1) >> 21) % 4 == c);
    }
    check_ok(a);
    tlb_arena_destroy(a);
}

int main(void) {
    given_geometry_when_created_then_colors_and_limits_follow_seed_equations();
    given_small_color_when_allocating_then_every_byte_is_on_its_set();
    given_large_color_when_allocating_a_run_then_it_spans_only_reserved_sets();
    given_a_full_color_when_allocating_then_null_and_oom_counted_and_other_colors_unaffected();
    given_freed_neighbours_when_freeing_the_middle_then_blocks_coalesce();
    given_calloc_realloc_aligned_then_contents_alignment_and_color_hold();
    given_corruption_when_checking_then_it_is_reported();
    given_bad_geometry_when_creating_then_a_clear_error();
    given_index_above_page_offset_when_allocating_then_slots_span_several_pages();
    given_many_operations_then_placement_is_deterministic_across_arenas();
    given_huge_page_slots_then_colors_follow_bits_21_up_or_a_clear_error();
    given_more_periods_than_ways_then_the_arena_says_it_is_not_conflict_free();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("test_color_unit: all checks passed\n");
    return 0;
}
