/* mosaic: back a program's memory with a mosaic of 4 KiB, 2 MiB and 1 GiB pages, by address window.
 *
 * After Mosalloc (Agbarya et al., "Predicting Execution Times With Partial Simulations in Virtual
 * Memory Research: Why and How", MICRO 2020, §4): the program's memory comes from pools reserved at
 * start-up, and a layout file says, for windows of offsets inside each pool, which page size backs
 * them. Two pools here: `heap` (every malloc/calloc/realloc/memalign of the program) and `anon` (its
 * own anonymous private mmaps). A window's huge pages come one of two ways:
 *   - `thp` (the default): transparent huge pages, madvise(MADV_HUGEPAGE) on the 2 MiB windows and
 *     MADV_NOHUGEPAGE on the rest (THP mode `madvise` or `always`; with THP `never` no such window
 *     can happen, and the check below says so). 2 MiB only.
 *   - `hugetlb`: pages of the kernel's reserved pool (/sys/kernel/mm/hugepages/hugepages-*kB), the
 *     window mapped over its range with MAP_FIXED | MAP_HUGETLB | MAP_HUGE_2MB (or MAP_HUGE_1GB),
 *     anonymous and private, as Mosalloc maps its windows. The kernel reserves a private hugetlb
 *     mapping's pages when it is mapped (not MAP_NORESERVE: a shortage then is a failed mmap, ENOMEM,
 *     never a SIGBUS at a later fault); the pages themselves are faulted in lazily, on first touch,
 *     as everywhere else in the pools. Nothing is done to reserve pages here: the administrator (or
 *     `tlblab host predict --backing hugetlb`, as root) writes nr_hugepages first.
 *
 * A window the kernel refuses is never silently given other pages and passed off as asked: at
 * tlb_mosaic_map a hugetlb window whose mmap fails is mapped again as ordinary 4 KiB memory (a
 * failed MAP_FIXED mmap has already unmapped the range), recorded as refused with the reason (the
 * error, the pages asked, the free and reserved pages seen in sysfs: tlb_mosaic_refusal), and the
 * program goes on: its run is then reported not ok, and a harness drops it as it drops a THP window
 * the kernel did not fill (continuing rather than exiting keeps one contract for both backings; the
 * preloaded library also says so on stderr at start).
 *
 * A mosaic that did not happen must never be measured as if it had: tlb_mosaic_check() reads
 * /proc/self/smaps and counts, per pool, the resident memory of the THP windows that asked for 2 MiB
 * pages and how much of it is in huge pages (AnonHugePages), any huge page in a 4 KiB window, and,
 * per hugetlb window, its resident memory and how much of it is in hugetlb pages of the size it
 * asked (Private_Hugetlb + Shared_Hugetlb of its mappings, whose KernelPageSize must be that size).
 *
 * Layout file (text, one item a line, `#` starts a comment; sizes take K, M, G suffixes):
 *
 *     pool heap 8G                  # a pool and its size (reserved, not committed: MAP_NORESERVE)
 *     pool anon 1G
 *     window heap 0 512M 2M         # offsets [0, 512M) of the heap pool in 2 MiB pages (THP)
 *     window heap 1G 3G 2M hugetlb  # [1G, 3G) in 2 MiB pages of the hugetlb pool
 *     window heap 4G 6G 1G hugetlb  # [4G, 6G) in 1 GiB hugetlb pages
 *     window anon 0 64M 2M thp      # `thp` said outright
 *
 * Offsets are from the pool's start, so one layout means the same mosaic under Valgrind and natively
 * (the allocator is deterministic: the same calls give the same offsets). Memory outside every window
 * is in 4 KiB pages. A window's offsets must be multiples of 2 MiB (of 1 GiB for 1 GiB pages) and
 * inside its pool; windows of a pool must not overlap. 1 GiB pages are hugetlb only (THP has none);
 * a 4K window takes no backing word. Pools are aligned to 1 GiB. A hugetlb window's pages change
 * protection and are given back (tlb_mosaic_munmap) only in whole huge pages: an mprotect of part of
 * one fails (EINVAL).
 *
 * Two ways to use it:
 *   - linked: tlb_mosaic_map() then tlb_mosaic_malloc()/tlb_mosaic_mmap() on the handle;
 *   - preloaded: `TLBLAB_MOSAIC=layout.txt LD_PRELOAD=libtlblab_mosaic.so program ...` replaces the
 *     program's malloc family and anonymous mmaps with the pools (build/runtime/libtlblab_mosaic.so).
 *     At exit it writes the check as one JSON object to $TLBLAB_MOSAIC_REPORT (whole or not at all),
 *     or to stderr when that is unset. A bad layout is one line on stderr and exit status 2.
 *
 * Allocator: segregated free lists of power-of-two classes from 16 B to 1 MiB, larger blocks in
 * multiples of 4 KiB from a first-fit list of freed large blocks, else from the pool's bump pointer.
 * No memory is returned to the kernel (a freed block is reused by the next fitting request).
 * Threading: every function on a handle may be called from any thread; they are serialised by a
 * spin lock held for O(1) work, except the large list's first fit, O(freed large blocks).
 * Errors are returned as negative errno values (or NULL with errno set for the allocation calls).
 */
#ifndef TLBLAB_MOSAIC_H
#define TLBLAB_MOSAIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TLB_MOSAIC_MAX_WINDOWS 128
#define TLB_MOSAIC_POOLS 2 /* heap, anon */
#define TLB_MOSAIC_HEAP 0
#define TLB_MOSAIC_ANON 1

/* A window's backing: how its huge pages are asked for. */
#define TLB_MOSAIC_THP 0     /* transparent huge pages (madvise); the default */
#define TLB_MOSAIC_HUGETLB 1 /* the kernel's reserved hugetlb pages (MAP_HUGETLB) */

typedef struct {
    uint32_t pool;       /* TLB_MOSAIC_HEAP or TLB_MOSAIC_ANON */
    uint32_t page_shift; /* 12 (4 KiB), 21 (2 MiB) or 30 (1 GiB, hugetlb only) */
    uint64_t start, end; /* offsets in the pool, [start, end) */
    uint32_t backing;    /* TLB_MOSAIC_THP or TLB_MOSAIC_HUGETLB (4 KiB windows: TLB_MOSAIC_THP) */
} tlb_mosaic_window;

typedef struct {
    uint64_t pool_size[TLB_MOSAIC_POOLS]; /* bytes; 0: the pool is not used */
    uint32_t nwindows;
    tlb_mosaic_window windows[TLB_MOSAIC_MAX_WINDOWS];
} tlb_mosaic_layout;

/* Parses a layout's text (`len` bytes, not necessarily NUL-terminated). `name` names the file in
 * errors. On error returns -EINVAL and writes one line to `err`: "NAME:LINE: what was expected, what
 * was found". O(len + windows^2). Allocates nothing. */
int tlb_mosaic_parse(const char *text, size_t len, const char *name, tlb_mosaic_layout *out, char *err,
                     size_t errlen);

/* Reads and parses the layout file `path` (at most 64 KiB). -errno or -EINVAL with `err` written. */
int tlb_mosaic_load(const char *path, tlb_mosaic_layout *out, char *err, size_t errlen);

typedef struct tlb_mosaic tlb_mosaic;

/* Reserves the pools of `layout` and applies its windows' page sizes: THP windows by madvise,
 * hugetlb windows by an mmap each (O(windows) system calls). Allocates with mmap only (the
 * preloaded library calls it before any malloc works). NULL on failure with `err` written (a failed
 * mmap or madvise: e.g. EINVAL from madvise(MADV_HUGEPAGE) for a THP window on a kernel without THP;
 * such a kernel still maps a layout of 4 KiB and hugetlb windows). A hugetlb
 * window the kernel refuses (too few free pages: ENOMEM; no pages of that size: EINVAL) is not a
 * failure: the handle is returned with the window on 4 KiB pages and the refusal recorded
 * (tlb_mosaic_refusal), and every check of it is not ok. */
tlb_mosaic *tlb_mosaic_map(const tlb_mosaic_layout *layout, char *err, size_t errlen);

/* NULL when window `w` (an index into the layout's windows) got the backing it asked for at
 * tlb_mosaic_map, else one line saying why not: the mmap's error, the pages asked and the free and
 * reserved pages of that size the kernel showed right after (sysfs). Valid as long as the handle. */
const char *tlb_mosaic_refusal(const tlb_mosaic *m, uint32_t w);
/* Unmaps the pools and the handle; every pointer from it becomes invalid. */
void tlb_mosaic_unmap(tlb_mosaic *m);

/* Where pool `pool` starts (0 when the layout gives it no size). */
uintptr_t tlb_mosaic_pool_base(const tlb_mosaic *m, int pool);

/* Heap pool: like malloc/free/memalign; NULL and errno ENOMEM when the pool is full. O(1) for
 * classes up to 1 MiB; larger: O(freed large blocks). `align` a power of two. */
void *tlb_mosaic_malloc(tlb_mosaic *m, size_t size);
void *tlb_mosaic_memalign(tlb_mosaic *m, size_t align, size_t size);
/* Zeroed; memory fresh from the pool is not written again (it is the kernel's zero pages). */
void *tlb_mosaic_calloc(tlb_mosaic *m, size_t n, size_t size);
void tlb_mosaic_free(tlb_mosaic *m, void *p);
/* The usable size of a block from the heap pool (>= what was asked). */
size_t tlb_mosaic_usable(const tlb_mosaic *m, const void *p);
/* 1 if `p` lies in pool `pool`. */
int tlb_mosaic_owns(const tlb_mosaic *m, int pool, const void *p);

/* Anon pool: `len` bytes (rounded up to 4 KiB, 2 MiB-aligned when len >= 2 MiB so a window can back
 * it whole), zeroed, read-write. NULL and ENOMEM when full. O(1). tlb_mosaic_munmap gives the pages
 * back to the kernel (MADV_DONTNEED); the range is not reused. */
void *tlb_mosaic_mmap(tlb_mosaic *m, size_t len);
int tlb_mosaic_munmap(tlb_mosaic *m, void *p, size_t len);

/* What the kernel gave, per pool (from /proc/self/smaps, kB as the kernel counts them). */
typedef struct {
    uint64_t rss_kb;           /* resident memory of the pool (smaps' Rss: hugetlb pages are not in it) */
    uint64_t want_huge_rss_kb; /* resident memory in THP windows that asked for 2 MiB pages */
    uint64_t huge_kb;          /* of that, in huge pages (AnonHugePages) */
    uint64_t stray_huge_kb;    /* huge pages outside the 2 MiB windows (a 4 KiB window that is not) */
    uint64_t want_hugetlb_kb;  /* resident memory in hugetlb windows, in whatever pages */
    uint64_t hugetlb_kb;       /* of that, in hugetlb pages of the size each window asked */
    uint64_t used_bytes;       /* the allocator's high-water mark in the pool */
    /* Where the kernel put the pool's 4 KiB pages outside its 2 MiB windows (/proc/self/pagemap;
     * Linux shows frame numbers only to CAP_SYS_ADMIN: without it pfn_pages is 0): */
    uint64_t present_pages;   /* resident 4 KiB pages of the used part */
    uint64_t pfn_pages;       /* of them, with a frame number read */
    uint64_t frames_2m;       /* distinct 2 MiB physical frames they lie in */
    uint64_t neighbour_pairs; /* pairs of virtually neighbouring pages, both with a frame number */
    uint64_t consecutive;     /* of the pairs, those in consecutive frames (up or down) */
} tlb_mosaic_pool_coverage;

/* What the kernel gave one hugetlb window (THP windows are counted per pool above: the kernel
 * merges neighbouring THP windows into one mapping, so smaps cannot tell them apart). */
typedef struct {
    uint64_t rss_kb;     /* resident memory of the window, in whatever pages (Rss + *_Hugetlb) */
    uint64_t hugetlb_kb; /* of that, in hugetlb pages of the size asked (KernelPageSize checked) */
    const char *refused; /* NULL: mapped as asked; else tlb_mosaic_refusal's line */
} tlb_mosaic_window_coverage;

typedef struct {
    tlb_mosaic_pool_coverage pool[TLB_MOSAIC_POOLS];
    tlb_mosaic_window_coverage window[TLB_MOSAIC_MAX_WINDOWS]; /* by layout index; hugetlb windows only */
    uint32_t refused_windows; /* hugetlb windows the kernel refused at tlb_mosaic_map */
    int ok; /* 1: every window got what it asked: every resident byte of a THP window is in huge pages
               (at least 99%), no 4 KiB window holds one, no hugetlb window was refused and all of a
               hugetlb window's resident memory is in hugetlb pages of its size */
} tlb_mosaic_coverage;

/* Reads /proc/self/smaps (no malloc) and fills `out`. O(mappings). -errno if it cannot be read. */
int tlb_mosaic_check(const tlb_mosaic *m, tlb_mosaic_coverage *out);

/* The check as one JSON object (pools with base, size, coverage; the windows, each with its
 * backing, hugetlb ones with their coverage and refusal; "ok"). Returns the length written
 * (without the NUL), or -ENOSPC if `cap` is too small. */
int tlb_mosaic_report_json(const tlb_mosaic *m, const tlb_mosaic_coverage *c, char *buf, size_t cap);

/* Diagnostics: blocks allocated now and in total, bytes handed out now. */
typedef struct {
    uint64_t live_blocks, total_allocs, live_bytes, large_free_blocks;
} tlb_mosaic_diag;
void tlb_mosaic_diagnostics(const tlb_mosaic *m, tlb_mosaic_diag *out);

/* Walks the free lists and checks every block's header against the pool bounds and its class.
 * 0 if consistent, else -EFAULT. O(free blocks). For tests. */
int tlb_mosaic_invariants(const tlb_mosaic *m);

#ifdef __cplusplus
}
#endif

#endif
