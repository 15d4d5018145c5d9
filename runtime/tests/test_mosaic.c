/* Tests of the mosaic allocator (tlblab/mosaic.h): the layout parser's errors, the heap and anon
 * allocators, and the smaps coverage check (case `coverage`: needs THP in madvise or always mode,
 * else it is skipped with 77). */
#include "tlblab/mosaic.h"

#include "check.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MIB (1024ull * 1024)

static int parse(const char *text, tlb_mosaic_layout *l, char *err, size_t n) {
    return tlb_mosaic_parse(text, strlen(text), "t.layout", l, err, n);
}

/* The mosaic of layout `text` mapped (its checks counted), or NULL when either step failed. */
static tlb_mosaic *mapped(const char *text) {
    tlb_mosaic_layout l;
    char err[256] = "";
    CHECK(parse(text, &l, err, sizeof err) == 0);
    tlb_mosaic *m = tlb_mosaic_map(&l, err, sizeof err);
    CHECK(m != NULL);
    return m;
}

/* given a layout with pools, windows and comments, when parsed, then every window is as written */
static void layout_is_read_as_written(void) {
    tlb_mosaic_layout l;
    char err[256] = "";
    int r = parse("# a mosaic\npool heap 1G\npool anon 64M  # mmaps\n\nwindow heap 0 512M 2M\n"
                  "window heap 0x20000000 1G 4K\nwindow anon 2M 4M 2MiB\n", &l, err, sizeof err);
    CHECK(r == 0);
    CHECK(l.pool_size[TLB_MOSAIC_HEAP] == 1024 * MIB && l.pool_size[TLB_MOSAIC_ANON] == 64 * MIB);
    CHECK(l.nwindows == 3);
    CHECK(l.windows[0].pool == TLB_MOSAIC_HEAP && l.windows[0].start == 0 && l.windows[0].end == 512 * MIB &&
          l.windows[0].page_shift == 21);
    CHECK(l.windows[1].start == 512 * MIB && l.windows[1].end == 1024 * MIB && l.windows[1].page_shift == 12);
    CHECK(l.windows[2].pool == TLB_MOSAIC_ANON && l.windows[2].start == 2 * MIB && l.windows[2].page_shift == 21);
}

/* given bad layouts, when parsed, then each error names the file and line and what was expected */
static void bad_layouts_are_one_line_each(void) {
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"pool heap 1G\nwindow heap 0 3M 2M\n", "t.layout:2: window 0 3M: expected offsets that are multiples of 2M"},
        {"pool heap 1G\nwindow heap 0 4M 2M\nwindow heap 2M 8M 4K\n", "t.layout:3: window heap [0x200000, 0x800000) overlaps"},
        {"pool stack 1G\n", "t.layout:1: expected a pool named heap or anon, found 'stack'"},
        {"pool heap 1G\nwindow heap 0 2G 2M\n", "ends past its pool"},
        {"pool heap 1G\nwindow heap 0 2M 1G\n", "t.layout:2: window page size: expected 4K or 2M, found '1G'"},
        {"pool heap 1G\nwindow heap 4M 2M 2M\n", "expected the end after the start"},
        {"heap 1G\n", "t.layout:1: expected `pool` or `window`, found 'heap'"},
        {"pool heap 3M\n", "expected a size that is a multiple of 2M"},
        {"# nothing\n", "expected at least one `pool heap SIZE`"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tlb_mosaic_layout l;
        char err[256] = "";
        CHECK(parse(cases[i].text, &l, err, sizeof err) == -EINVAL);
        if (strstr(err, cases[i].want) == NULL) {
            fprintf(stderr, "case %zu: got '%s', want '%s'\n", i, err, cases[i].want);
            failures++;
        }
        CHECK(strchr(err, '\n') == NULL);
    }
}

/* given a heap pool, when blocks are allocated, freed and allocated again, then freed blocks are
 * reused, alignment holds, calloc zeroes reused memory, and the free lists stay consistent */
static void heap_reuses_and_aligns(void) {
    tlb_mosaic *m = mapped("pool heap 256M\n");
    if (m == NULL)
        return;
    CHECK((tlb_mosaic_pool_base(m, TLB_MOSAIC_HEAP) & ((1u << 30) - 1)) == 0);
    char *a = tlb_mosaic_malloc(m, 100);
    CHECK(a != NULL && ((uintptr_t)a & 15) == 0 && tlb_mosaic_usable(m, a) >= 100);
    memset(a, 0xab, 100);
    tlb_mosaic_free(m, a);
    char *b = tlb_mosaic_calloc(m, 25, 4);
    CHECK(b == a); /* the same class: the freed block */
    for (int i = 0; i < 100; i++)
        CHECK(b[i] == 0);
    void *big = tlb_mosaic_malloc(m, 40 * MIB);
    CHECK(big != NULL && tlb_mosaic_owns(m, TLB_MOSAIC_HEAP, big));
    tlb_mosaic_free(m, big);
    void *part = tlb_mosaic_malloc(m, 8 * MIB); /* first fit splits the freed 40 MiB */
    CHECK(part == big);
    void *rest = tlb_mosaic_malloc(m, 16 * MIB);
    CHECK(rest != NULL && (char *)rest > (char *)part && (char *)rest < (char *)big + 40 * MIB);
    for (size_t align = 32; align <= 2 * MIB; align *= 4) {
        void *p = tlb_mosaic_memalign(m, align, 1000);
        CHECK(p != NULL && ((uintptr_t)p & (align - 1)) == 0 && tlb_mosaic_usable(m, p) >= 1000);
        tlb_mosaic_free(m, p);
    }
    CHECK(tlb_mosaic_malloc(m, 300 * MIB) == NULL && errno == ENOMEM);
    CHECK(tlb_mosaic_invariants(m) == 0);
    tlb_mosaic_diag d;
    tlb_mosaic_diagnostics(m, &d);
    CHECK(d.live_blocks == 3); /* b, part, rest */
    tlb_mosaic_unmap(m);
}

/* given an anon pool, when mappings are taken, then large ones start on 2 MiB boundaries, they read
 * as zeros, and an unmapped range reads as zeros again */
static void anon_pool_maps(void) {
    tlb_mosaic *m = mapped("pool anon 64M\n");
    if (m == NULL)
        return;
    char *s = tlb_mosaic_mmap(m, 5000);
    char *g = tlb_mosaic_mmap(m, 4 * MIB);
    CHECK(s != NULL && g != NULL && ((uintptr_t)g & (2 * MIB - 1)) == 0 && g >= s + 8192);
    g[123] = 7;
    CHECK(tlb_mosaic_munmap(m, g, 4 * MIB) == 0 && g[123] == 0);
    CHECK(tlb_mosaic_mmap(m, 64 * MIB) == NULL);
    CHECK(tlb_mosaic_malloc(m, 16) == NULL); /* no heap pool */
    tlb_mosaic_unmap(m);
}

static int thp_usable(void) {
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == NULL)
        return 0;
    char line[128] = "";
    int ok = fgets(line, sizeof line, f) != NULL && strstr(line, "[never]") == NULL;
    fclose(f);
    return ok;
}

/* given a heap with a 2 MiB window over its first 32 MiB, when 48 MiB are allocated and touched,
 * then the window's resident memory is in huge pages and the rest is not; and when the kernel is
 * told otherwise behind the allocator's back (MADV_NOHUGEPAGE on half the window), the check says the
 * mosaic did not happen */
static void coverage(void) {
    if (!thp_usable())
        SKIP("transparent huge pages are `never` or absent");
    for (int honest = 1; honest >= 0; honest--) {
        tlb_mosaic *m = mapped("pool heap 128M\nwindow heap 0 32M 2M\n");
        if (m == NULL)
            return;
        char *base = (char *)tlb_mosaic_pool_base(m, TLB_MOSAIC_HEAP);
        if (!honest) /* half the window refused */
            CHECK(madvise(base, 16 * MIB, MADV_NOHUGEPAGE) == 0);
        char *p = tlb_mosaic_malloc(m, 48 * MIB);
        CHECK(p != NULL);
        for (size_t i = 0; i < 48 * MIB; i += 4096)
            p[i] = 1;
        tlb_mosaic_coverage c;
        CHECK(tlb_mosaic_check(m, &c) == 0);
        const tlb_mosaic_pool_coverage *h = &c.pool[TLB_MOSAIC_HEAP];
        fprintf(stderr, "coverage (%s): rss %llu kB, in 2M windows %llu kB, huge %llu kB, stray %llu kB\n",
                honest ? "as asked" : "window refused", (unsigned long long)h->rss_kb,
                (unsigned long long)h->want_huge_rss_kb, (unsigned long long)h->huge_kb,
                (unsigned long long)h->stray_huge_kb);
        CHECK(h->rss_kb >= 48 * 1024 && h->want_huge_rss_kb == 32 * 1024);
        CHECK(h->stray_huge_kb == 0);
        if (honest) {
            if (h->huge_kb == 0) {
                tlb_mosaic_unmap(m);
                SKIP("the kernel gave no huge page at all (memory too fragmented?)");
            }
            CHECK(h->huge_kb == 32 * 1024 && c.ok == 1);
        } else {
            CHECK(h->huge_kb == 16 * 1024 && c.ok == 0);
        }
        char json[4096];
        int n = tlb_mosaic_report_json(m, &c, json, sizeof json);
        CHECK(n > 0 && strstr(json, honest ? "\"ok\": true" : "\"ok\": false") != NULL);
        CHECK(tlb_mosaic_report_json(m, &c, json, 10) == -ENOSPC);
        tlb_mosaic_unmap(m);
    }
}

int main(int argc, char **argv) {
    const char *only = NULL;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--case") == 0 && i + 1 < argc)
            only = argv[++i];
    if (only == NULL) {
        layout_is_read_as_written();
        bad_layouts_are_one_line_each();
        heap_reuses_and_aligns();
        anon_pool_maps();
    } else if (strcmp(only, "coverage") == 0) {
        coverage();
    } else {
        fprintf(stderr, "unknown case %s\n", only);
        return 2;
    }
    if (failures)
        return 1;
    return skipped ? SKIP_RETURN_CODE : 0;
}
