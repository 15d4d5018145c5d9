/* OS layer of the coloring allocator on Linux: reserving the arena (mmap, alignment, THP off,
 * pre-faulting, mlock) and the per-color mutex. Everything that makes a system call lives here so
 * that color.c is plain C11 and the fast path provably makes none. */
#include "color_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

_Static_assert(sizeof(pthread_mutex_t) <= sizeof(tlb_prim_mutex_t), "tlb_prim_mutex_t too small");
_Static_assert(_Alignof(pthread_mutex_t) <= 16, "tlb_prim_mutex_t under-aligned");

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif

#define HANDLE_PAGE 4096u

static void set_err(char *err, size_t len, const char *what, size_t bytes, int e) {
    if (err != NULL && len > 0)
        snprintf(err, len, "%s of %zu bytes failed: %s", what, bytes, strerror(e));
}

/* Fault every page in so that the fast path never faults. MADV_POPULATE_WRITE does it in one
 * call (and, unlike MAP_POPULATE, after MADV_NOHUGEPAGE has taken effect) and reports a shortage
 * as an error instead of a SIGBUS; kernels before 5.14 (EINVAL) get one write per page, which is
 * safe for 4 KiB pages only. Returns 0 or -1 with errno set. */
static int prefault(void *p, size_t len, size_t page) {
    if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
        return 0;
    if (errno != EINVAL || page != 4096)
        return -1;
    for (size_t off = 0; off < len; off += page)
        ((volatile unsigned char *)p)[off] = 0;
    return 0;
}

/* No MAP_NORESERVE: a hugetlbfs mapping must reserve its pages at mmap time, or a shortage would
 * surface later as SIGBUS on first touch. */
static void *map_anon(size_t len, int extra_flags) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Map len bytes aligned to align by over-reserving and trimming; `below` extra bytes stay mapped
 * right under the aligned start. Returns the aligned start or NULL. */
static void *map_aligned(size_t len, size_t align, size_t below, int extra_flags, void **map_start) {
    size_t total = len + align + below;
    unsigned char *raw = map_anon(total, extra_flags);
    if (raw == NULL)
        return NULL;
    uintptr_t start = (uintptr_t)raw + below;
    uintptr_t aligned = (start + align - 1) & ~(uintptr_t)(align - 1);
    uintptr_t keep_lo = aligned - below;
    uintptr_t keep_hi = aligned + len;
    if (keep_lo > (uintptr_t)raw)
        munmap(raw, keep_lo - (uintptr_t)raw);
    if ((uintptr_t)raw + total > keep_hi)
        munmap((void *)keep_hi, (uintptr_t)raw + total - keep_hi);
    *map_start = (void *)keep_lo;
    return (void *)aligned;
}

int tlb_prim_reserve(size_t size, size_t align, unsigned page_shift, int allow_thp, int do_mlock,
                     tlb_prim_region_t *region, uintptr_t *base, void **handle_page, int *backing,
                     char *err, size_t err_len) {
    memset(region, 0, sizeof *region);
    size_t page = (size_t)1 << page_shift;
    if (page_shift == 12) {
        void *start = NULL;
        void *p = map_aligned(size, align, HANDLE_PAGE, 0, &start);
        if (p == NULL) {
            set_err(err, err_len, "mmap", size, errno);
            return -1;
        }
        region->map = start;
        region->map_len = size + HANDLE_PAGE;
        /* THP would put 512 colored pages behind one 2 MiB translation in another TLB structure
         * (one translation, no colors): switch it off before the first touch. */
        if (madvise(p, size, MADV_NOHUGEPAGE) != 0) {
            set_err(err, err_len, "madvise(MADV_NOHUGEPAGE)", size, errno);
            tlb_prim_release(region);
            return -1;
        }
        if (prefault(start, size + HANDLE_PAGE, page) != 0) {
            set_err(err, err_len, "pre-faulting (MADV_POPULATE_WRITE)", size, errno);
            tlb_prim_release(region);
            return -1;
        }
        *base = (uintptr_t)p;
        *handle_page = (unsigned char *)p - HANDLE_PAGE;
        *backing = 0;
    } else {
        void *start = NULL;
        /* hugetlbfs first: a real huge translation with no khugepaged involvement. */
        void *p = map_aligned(size, align, 0, MAP_HUGETLB | (int)(page_shift << MAP_HUGE_SHIFT), &start);
        *backing = 1;
        if (p == NULL) {
            int e = errno;
            if (!allow_thp) {
                set_err(err, err_len, "mmap(MAP_HUGETLB) (no hugetlbfs pool? set TLB_ARENA_HUGE_THP to use THP)",
                        size, e);
                return -1;
            }
            p = map_aligned(size, align, 0, 0, &start);
            if (p == NULL || madvise(p, size, MADV_HUGEPAGE) != 0) {
                set_err(err, err_len, "mmap+madvise(MADV_HUGEPAGE)", size, errno);
                if (p != NULL)
                    munmap(start, size);
                return -1;
            }
            *backing = 2;
        }
        region->map = start;
        region->map_len = size;
        if (prefault(p, size, page) != 0) {
            set_err(err, err_len, "pre-faulting huge pages (MADV_POPULATE_WRITE)", size, errno);
            tlb_prim_release(region);
            return -1;
        }
        void *h = map_anon(HANDLE_PAGE, 0);
        if (h == NULL) {
            set_err(err, err_len, "mmap (handle page)", HANDLE_PAGE, errno);
            tlb_prim_release(region);
            return -1;
        }
        madvise(h, HANDLE_PAGE, MADV_NOHUGEPAGE);
        ((volatile unsigned char *)h)[0] = 0;
        region->handle_map = h;
        region->handle_len = HANDLE_PAGE;
        *base = (uintptr_t)p;
        *handle_page = h;
    }
    if (do_mlock) {
        if (mlock(region->map, region->map_len) != 0 ||
            (region->handle_map != NULL && mlock(region->handle_map, region->handle_len) != 0)) {
            set_err(err, err_len, "mlock (raise RLIMIT_MEMLOCK or drop TLB_ARENA_MLOCK)", region->map_len, errno);
            tlb_prim_release(region);
            return -1;
        }
    }
    return 0;
}

void tlb_prim_release(tlb_prim_region_t *region) {
    if (region->map != NULL)
        munmap(region->map, region->map_len);
    if (region->handle_map != NULL)
        munmap(region->handle_map, region->handle_len);
    memset(region, 0, sizeof *region);
}

int tlb_prim_mutex_init(tlb_prim_mutex_t *m) { return pthread_mutex_init((pthread_mutex_t *)(void *)m->bytes, NULL); }
void tlb_prim_mutex_destroy(tlb_prim_mutex_t *m) { pthread_mutex_destroy((pthread_mutex_t *)(void *)m->bytes); }
void tlb_prim_mutex_lock(tlb_prim_mutex_t *m) { pthread_mutex_lock((pthread_mutex_t *)(void *)m->bytes); }
void tlb_prim_mutex_unlock(tlb_prim_mutex_t *m) { pthread_mutex_unlock((pthread_mutex_t *)(void *)m->bytes); }
