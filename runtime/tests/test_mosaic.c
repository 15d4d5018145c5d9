/* Tests of the mosaic allocator (tlblab/mosaic.h): the layout parser's errors, the heap and anon
 * allocators, and the smaps coverage check (case `coverage`: needs THP in madvise or always mode,
 * else it is skipped with 77); cases `hugetlb` and `hugetlb_1g`: hugetlb windows, as root, with the
 * pages they need reserved (and a shortage made) by writing the kernel's pool size, restored after,
 * else skipped with 77. */
#include "tlblab/mosaic.h"

#include "check.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

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
    int r = parse("# a mosaic\npool heap 4G\npool anon 64M  # mmaps\n\nwindow heap 0 512M 2M\n"
                  "window heap 0x20000000 1G 4K\nwindow anon 2M 4M 2MiB\nwindow anon 4M 8M 2M hugetlb\n"
                  "window heap 1G 1536M 2M thp\nwindow heap 2G 4G 1G hugetlb\n", &l, err, sizeof err);
    CHECK(r == 0);
    CHECK(l.pool_size[TLB_MOSAIC_HEAP] == 4096 * MIB && l.pool_size[TLB_MOSAIC_ANON] == 64 * MIB);
    CHECK(l.nwindows == 6);
    CHECK(l.windows[0].pool == TLB_MOSAIC_HEAP && l.windows[0].start == 0 && l.windows[0].end == 512 * MIB &&
          l.windows[0].page_shift == 21 && l.windows[0].backing == TLB_MOSAIC_THP);
    CHECK(l.windows[1].start == 512 * MIB && l.windows[1].end == 1024 * MIB && l.windows[1].page_shift == 12);
    CHECK(l.windows[2].pool == TLB_MOSAIC_ANON && l.windows[2].start == 2 * MIB && l.windows[2].page_shift == 21);
    CHECK(l.windows[3].pool == TLB_MOSAIC_ANON && l.windows[3].page_shift == 21 &&
          l.windows[3].backing == TLB_MOSAIC_HUGETLB);
    CHECK(l.windows[4].page_shift == 21 && l.windows[4].backing == TLB_MOSAIC_THP);
    CHECK(l.windows[5].start == 2048 * MIB && l.windows[5].end == 4096 * MIB && l.windows[5].page_shift == 30 &&
          l.windows[5].backing == TLB_MOSAIC_HUGETLB);
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
        {"pool heap 1G\nwindow heap 0 2M 8M\n", "t.layout:2: window page size: expected 4K, 2M or 1G, found '8M'"},
        {"pool heap 1G\nwindow heap 0 1G 1G\n",
         "t.layout:2: window page size 1G: expected `hugetlb` after it (transparent huge pages are 2M only), "
         "found nothing"},
        {"pool heap 1G\nwindow heap 0 1G 1G thp\n", "t.layout:2: window page size 1G: expected `hugetlb` after it"},
        {"pool heap 2G\nwindow heap 2M 1G 1G hugetlb\n",
         "t.layout:2: window 2M 1G: expected offsets that are multiples of 1G (its pages are 1G)"},
        {"pool heap 1G\n\nwindow heap 0 4M 2M hugetlbfs\n", "t.layout:3: window backing: expected thp or hugetlb, "
         "found 'hugetlbfs'"},
        {"pool heap 1G\nwindow heap 0 4M 4K hugetlb\n", "t.layout:2: window page size 4K: expected no backing"},
        {"pool heap 1G\nwindow heap 0 4M 2M hugetlb now\n",
         "t.layout:2: expected `window POOL START END PAGE [thp|hugetlb]`, found 7 words"},
        {"pool heap 1G\nwindow heap 0 4M\n", "t.layout:2: expected `window POOL START END PAGE [thp|hugetlb]`, "
         "found 4 words"},
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

/* ---------------------------------------------------------------- hugetlb windows */

/* The kernel's pool of hugetlb pages of `kb` kB (/sys/kernel/mm/hugepages/hugepages-<kb>kB). */
static long hugetlb_read(unsigned long kb, const char *file) {
    char path[128];
    snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%lukB/%s", kb, file);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1)
        v = -1;
    fclose(f);
    return v;
}

static int hugetlb_set(unsigned long kb, long pages) {
    char path[128];
    snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%lukB/nr_hugepages", kb);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    int ok = fprintf(f, "%ld\n", pages) > 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Pages of `kb` kB free for a new mapping: free ones not reserved by another mapping. */
static long hugetlb_available(unsigned long kb) {
    long free_pages = hugetlb_read(kb, "free_hugepages"), resv = hugetlb_read(kb, "resv_hugepages");
    return free_pages < 0 || resv < 0 ? -1 : free_pages - resv;
}

/* Sets the pool so that exactly `want` pages are available (as far as the kernel can); the
 * number available after. */
static long hugetlb_make_available(unsigned long kb, long want) {
    long nr = hugetlb_read(kb, "nr_hugepages"), avail = hugetlb_available(kb);
    if (nr < 0 || avail < 0 || nr + want - avail < 0 || hugetlb_set(kb, nr + want - avail) != 0)
        return -1;
    return hugetlb_available(kb);
}

/* Runs `body` in a child process, so that whatever it does (a failed check, a crash) the parent
 * gets back to restore the pool: its failures are the child's exit status. */
static void in_child(void (*body)(unsigned long), unsigned long kb) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        failures = 0;
        body(kb);
        fflush(NULL);
        _exit(failures ? 1 : 0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status))
        fprintf(stderr, "the hugetlb case died of signal %d\n", WTERMSIG(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#define HUGETLB_WINDOW_PAGES 16 /* the 2 MiB case's window: 32 MiB */

/* given 16 free 2 MiB hugetlb pages and a heap whose first 32 MiB are a hugetlb window, when 48 MiB
 * are allocated and touched, then the window's resident memory is all in 2 MiB hugetlb pages, the
 * rest in 4 KiB pages, and the check is ok */
static void hugetlb_as_asked(unsigned long kb) {
    tlb_mosaic *m = mapped("pool heap 128M\nwindow heap 0 32M 2M hugetlb\n");
    if (m == NULL)
        return;
    CHECK(tlb_mosaic_refusal(m, 0) == NULL);
    char *p = tlb_mosaic_malloc(m, 48 * MIB);
    CHECK(p != NULL);
    for (size_t i = 0; p != NULL && i < 48 * MIB; i += 4096)
        p[i] = 1;
    tlb_mosaic_coverage c;
    CHECK(tlb_mosaic_check(m, &c) == 0);
    const tlb_mosaic_pool_coverage *h = &c.pool[TLB_MOSAIC_HEAP];
    fprintf(stderr, "hugetlb (%lu pages free): window rss %llu kB, in hugetlb pages %llu kB, pool rss %llu kB\n",
            (unsigned long)HUGETLB_WINDOW_PAGES, (unsigned long long)c.window[0].rss_kb,
            (unsigned long long)c.window[0].hugetlb_kb, (unsigned long long)h->rss_kb);
    CHECK(c.window[0].rss_kb == 32 * 1024 && c.window[0].hugetlb_kb == 32 * 1024 && c.window[0].refused == NULL);
    CHECK(h->want_hugetlb_kb == 32 * 1024 && h->hugetlb_kb == 32 * 1024);
    CHECK(h->rss_kb >= 16 * 1024 && h->stray_huge_kb == 0 && h->want_huge_rss_kb == 0);
    CHECK(c.refused_windows == 0 && c.ok == 1);
    /* The pages are the kernel's reserved ones: the pool's free count fell by the window's pages. */
    CHECK(hugetlb_available(kb) == 0);
    char json[8192];
    int n = tlb_mosaic_report_json(m, &c, json, sizeof json);
    CHECK(n > 0 && strstr(json, "\"ok\": true") != NULL && strstr(json, "\"backing\": \"hugetlb\"") != NULL &&
          strstr(json, "\"hugetlb_kb\": 32768, \"refused\": null") != NULL);
    tlb_mosaic_unmap(m);
}

/* given 8 free 2 MiB hugetlb pages and the same 16-page window, when mapped, then the window is
 * refused with the pages asked and the free pages seen, the program's memory still works (4 KiB
 * pages), and the check is not ok */
static void hugetlb_short(unsigned long kb) {
    char seen[96]; /* what the refusal must quote, read as it is read (another mapping may hold some) */
    snprintf(seen, sizeof seen, "asked 16 pages of 2048 kB, the kernel showed %ld free, %ld of them reserved",
             hugetlb_read(kb, "free_hugepages"), hugetlb_read(kb, "resv_hugepages"));
    tlb_mosaic *m = mapped("pool heap 128M\nwindow heap 0 32M 2M hugetlb\n");
    if (m == NULL)
        return;
    const char *why = tlb_mosaic_refusal(m, 0);
    CHECK(why != NULL);
    if (why == NULL) {
        tlb_mosaic_unmap(m);
        return;
    }
    fprintf(stderr, "hugetlb (8 pages free): %s\n", why);
    CHECK(strstr(why, "window heap [0, 0x2000000) 2M hugetlb refused: mmap(MAP_HUGETLB): out of memory") == why);
    CHECK(strstr(why, seen) != NULL);
    char *p = tlb_mosaic_malloc(m, 48 * MIB);
    CHECK(p != NULL);
    for (size_t i = 0; p != NULL && i < 48 * MIB; i += 4096)
        p[i] = 1;
    tlb_mosaic_coverage c;
    CHECK(tlb_mosaic_check(m, &c) == 0);
    CHECK(c.window[0].rss_kb == 32 * 1024 && c.window[0].hugetlb_kb == 0 && c.window[0].refused == why);
    CHECK(c.refused_windows == 1 && c.ok == 0);
    char json[8192];
    int n = tlb_mosaic_report_json(m, &c, json, sizeof json);
    CHECK(n > 0 && strstr(json, "\"ok\": false, \"refused_windows\": 1") != NULL &&
          strstr(json, "\"refused\": \"window heap [0, 0x2000000) 2M hugetlb refused") != NULL);
    tlb_mosaic_unmap(m);
}

/* given a 2 MiB hugetlb window in the anon pool, when a mapping over part of a huge page and
 * whole ones is given back, then only the whole ones go (no EINVAL) */
static void hugetlb_anon_munmap(unsigned long kb) {
    (void)kb;
    tlb_mosaic *m = mapped("pool anon 64M\nwindow anon 0 8M 2M hugetlb\n");
    if (m == NULL)
        return;
    char *a = tlb_mosaic_mmap(m, 4096); /* in the window's first huge page */
    char *g = tlb_mosaic_mmap(m, 4 * MIB); /* 2 MiB-aligned: the window's second and third */
    CHECK(a != NULL && g != NULL);
    a[0] = 1;
    memset(g, 2, 4 * MIB);
    CHECK(tlb_mosaic_munmap(m, a, 4096) == 0 && a[0] == 1); /* part of a huge page: kept */
    CHECK(tlb_mosaic_munmap(m, g, 4 * MIB) == 0 && g[5] == 0);
    tlb_mosaic_unmap(m);
}

static void hugetlb(void) {
    const unsigned long kb = 2048;
    if (geteuid() != 0)
        SKIP("not root: cannot reserve hugetlb pages (/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages)");
    long old = hugetlb_read(kb, "nr_hugepages");
    if (old < 0)
        SKIP("this kernel has no 2 MiB hugetlb pages (no /sys/kernel/mm/hugepages/hugepages-2048kB)");
    long got = hugetlb_make_available(kb, HUGETLB_WINDOW_PAGES);
    if (got == HUGETLB_WINDOW_PAGES) {
        in_child(hugetlb_as_asked, kb);
        CHECK(hugetlb_make_available(kb, 8) == 8);
        in_child(hugetlb_short, kb);
        CHECK(hugetlb_make_available(kb, 4) == 4);
        in_child(hugetlb_anon_munmap, kb);
    }
    int restored = hugetlb_set(kb, old) == 0 && hugetlb_read(kb, "nr_hugepages") == old;
    CHECK(restored);
    if (!restored)
        fprintf(stderr, "could not restore nr_hugepages of 2048 kB to %ld (now %ld)\n", old,
                hugetlb_read(kb, "nr_hugepages"));
    if (got != HUGETLB_WINDOW_PAGES) {
        fprintf(stderr, "the kernel made %ld of %d pages of 2 MiB available\n", got, HUGETLB_WINDOW_PAGES);
        SKIP("the kernel could not reserve the 2 MiB pages the case needs (memory too fragmented?)");
    }
}

/* given one free 1 GiB hugetlb page and a heap whose first 1 GiB is a 1G hugetlb window, when part
 * of it is touched, then the touched memory is one 1 GiB hugetlb page and the check is ok */
static void hugetlb_1g_as_asked(unsigned long kb) {
    (void)kb;
    tlb_mosaic *m = mapped("pool heap 2G\nwindow heap 0 1G 1G hugetlb\n");
    if (m == NULL)
        return;
    CHECK(tlb_mosaic_refusal(m, 0) == NULL);
    char *p = tlb_mosaic_malloc(m, 8 * MIB);
    CHECK(p != NULL);
    if (p != NULL)
        memset(p, 1, 8 * MIB);
    tlb_mosaic_coverage c;
    CHECK(tlb_mosaic_check(m, &c) == 0);
    CHECK(c.window[0].rss_kb == 1024 * 1024 && c.window[0].hugetlb_kb == 1024 * 1024 && c.ok == 1);
    tlb_mosaic_unmap(m);
}

static void hugetlb_1g(void) {
    const unsigned long kb = 1024 * 1024;
    if (geteuid() != 0)
        SKIP("not root: cannot reserve hugetlb pages (/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages)");
    long old = hugetlb_read(kb, "nr_hugepages");
    if (old < 0)
        SKIP("this kernel has no 1 GiB hugetlb pages (no /sys/kernel/mm/hugepages/hugepages-1048576kB)");
    long got = hugetlb_make_available(kb, 1);
    if (got == 1)
        in_child(hugetlb_1g_as_asked, kb);
    int restored = hugetlb_set(kb, old) == 0 && hugetlb_read(kb, "nr_hugepages") == old;
    CHECK(restored);
    if (got != 1)
        SKIP("the kernel could not reserve a 1 GiB page (no 1 GiB of contiguous free memory)");
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
    } else if (strcmp(only, "hugetlb") == 0) {
        hugetlb();
    } else if (strcmp(only, "hugetlb_1g") == 0) {
        hugetlb_1g();
    } else {
        fprintf(stderr, "unknown case %s\n", only);
        return 2;
    }
    if (failures)
        return 1;
    return skipped ? SKIP_RETURN_CODE : 0;
}
