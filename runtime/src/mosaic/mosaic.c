/* mosaic.c: the mosaic allocator (tlblab/mosaic.h): the layout parser, the pools and their page
 * sizes, the heap and anon allocators, and the smaps check of what the kernel gave.
 * Mosalloc's method (Agbarya et al., MICRO 2020, §4): pools reserved up front, page sizes per window
 * of pool offsets, by THP madvise or, as Mosalloc's, by hugetlb mappings of the kernel's reserved
 * pages. */
#include "tlblab/mosaic.h"

#include "prim.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define KIB 1024ull
#define MIB (1024ull * KIB)
#define GIB (1024ull * MIB)
#define PAGE_4K (4 * KIB)
#define PAGE_2M (2 * MIB)
#define PAGE_1G GIB
#define POOL_ALIGN GIB
#define REFUSAL_LEN 320 /* one refusal's line */

/* Where the pools are asked to be: far from the program's own heap and libraries, 1 GiB-aligned.
 * Only a hint: the offsets, not the addresses, carry the layout. */
static const uintptr_t POOL_HINT[TLB_MOSAIC_POOLS] = {0x200000000000ull, 0x280000000000ull};
static const char *const POOL_NAME[TLB_MOSAIC_POOLS] = {"heap", "anon"};

/* Block header, 16 bytes before every pointer handed out (keeps 16-byte alignment). */
#define MAGIC_SMALL 0x534d4c31u   /* a class block: `aux` is its class */
#define MAGIC_LARGE 0x4c524731u   /* a large block: `cap` bytes */
#define MAGIC_ALIGNED 0x414c4e31u /* inside another block: `aux` bytes after its pointer */
#define MIN_CLASS 4               /* 16 B */
#define MAX_CLASS 20              /* 1 MiB */
#define HDR 16u

typedef struct {
    uint64_t cap;
    uint32_t magic;
    uint32_t aux;
} header;

typedef struct free_block {
    struct free_block *next;
} free_block;

struct tlb_mosaic {
    atomic_flag lock;
    tlb_mosaic_layout layout;
    uintptr_t base[TLB_MOSAIC_POOLS];
    uintptr_t top[TLB_MOSAIC_POOLS]; /* bump pointers */
    free_block *classes[MAX_CLASS + 1];
    free_block *large; /* freed large blocks, first fit */
    tlb_mosaic_diag diag;
    /* Per window: 1 when a hugetlb window is mapped in hugetlb pages; else its refusal ("" if none). */
    uint8_t hugetlb_mapped[TLB_MOSAIC_MAX_WINDOWS];
    char refusal[TLB_MOSAIC_MAX_WINDOWS][REFUSAL_LEN];
};

static void lock(const tlb_mosaic *m) {
    while (atomic_flag_test_and_set_explicit(&((tlb_mosaic *)m)->lock, memory_order_acquire)) {
    }
}
static void unlock(const tlb_mosaic *m) {
    atomic_flag_clear_explicit(&((tlb_mosaic *)m)->lock, memory_order_release);
}

/* ---------------------------------------------------------------- the layout file */

static int parse_size(const char *s, size_t n, uint64_t *out) {
    uint64_t v = 0;
    size_t i = 0;
    if (n == 0)
        return -1;
    int hex = n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex)
        i = 2;
    size_t digits = 0;
    for (; i < n; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (hex && c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (hex && c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            break;
        uint64_t base = hex ? 16 : 10;
        if (v > (UINT64_MAX - d) / base)
            return -1;
        v = v * base + d;
        digits++;
    }
    if (digits == 0)
        return -1;
    uint64_t mult = 1;
    if (i < n) {
        switch (s[i]) {
        case 'k': case 'K': mult = KIB; break;
        case 'm': case 'M': mult = MIB; break;
        case 'g': case 'G': mult = GIB; break;
        default: return -1;
        }
        i++;
        if (i < n && (s[i] == 'i' || s[i] == 'I') && i + 1 < n && (s[i + 1] == 'B' || s[i + 1] == 'b'))
            i += 2;
    }
    if (i != n || (mult > 1 && v > UINT64_MAX / mult))
        return -1;
    *out = v * mult;
    return 0;
}

static int pool_of(const char *s, size_t n) {
    for (int p = 0; p < TLB_MOSAIC_POOLS; p++)
        if (strlen(POOL_NAME[p]) == n && memcmp(POOL_NAME[p], s, n) == 0)
            return p;
    return -1;
}

#define MAX_TOKENS 7 /* one more than the longest item, `window POOL START END PAGE BACKING` */

int tlb_mosaic_parse(const char *text, size_t len, const char *name, tlb_mosaic_layout *out, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    size_t pos = 0;
    unsigned line = 0;
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        int k_ = snprintf(err, errlen, "%s:%u: ", name, line);                                     \
        if (k_ > 0 && (size_t)k_ < errlen)                                                         \
            snprintf(err + k_, errlen - (size_t)k_, __VA_ARGS__);                                  \
        return -EINVAL;                                                                            \
    } while (0)
    while (pos < len) {
        line++;
        size_t end = pos;
        while (end < len && text[end] != '\n')
            end++;
        size_t stop = end;
        for (size_t i = pos; i < end; i++)
            if (text[i] == '#') {
                stop = i;
                break;
            }
        const char *tok[MAX_TOKENS];
        size_t tlen[MAX_TOKENS];
        int nt = 0;
        size_t i = pos;
        while (i < stop) {
            while (i < stop && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r'))
                i++;
            if (i >= stop)
                break;
            size_t s = i;
            while (i < stop && text[i] != ' ' && text[i] != '\t' && text[i] != '\r')
                i++;
            if (nt == MAX_TOKENS)
                FAIL("expected at most %d words, found more", MAX_TOKENS - 1);
            tok[nt] = text + s;
            tlen[nt] = i - s;
            nt++;
        }
        pos = end + 1;
        if (nt == 0)
            continue;
        if (tlen[0] == 4 && memcmp(tok[0], "pool", 4) == 0) {
            if (nt != 3)
                FAIL("expected `pool NAME SIZE`, found %d words", nt);
            int p = pool_of(tok[1], tlen[1]);
            if (p < 0)
                FAIL("expected a pool named heap or anon, found '%.*s'", (int)tlen[1], tok[1]);
            uint64_t size;
            if (parse_size(tok[2], tlen[2], &size) != 0 || size == 0 || size % PAGE_2M != 0 || size > 64 * 1024 * GIB)
                FAIL("pool %s: expected a size that is a multiple of 2M (at most 64T), found '%.*s'",
                     POOL_NAME[p], (int)tlen[2], tok[2]);
            if (out->pool_size[p] != 0)
                FAIL("pool %s is given twice", POOL_NAME[p]);
            out->pool_size[p] = size;
        } else if (tlen[0] == 6 && memcmp(tok[0], "window", 6) == 0) {
            if (nt != 5 && nt != 6)
                FAIL("expected `window POOL START END PAGE [thp|hugetlb]`, found %d words", nt);
            int p = pool_of(tok[1], tlen[1]);
            if (p < 0)
                FAIL("expected a pool named heap or anon, found '%.*s'", (int)tlen[1], tok[1]);
            uint64_t s, e, page;
            if (parse_size(tok[2], tlen[2], &s) != 0)
                FAIL("window start: expected a size (like 512M), found '%.*s'", (int)tlen[2], tok[2]);
            if (parse_size(tok[3], tlen[3], &e) != 0)
                FAIL("window end: expected a size (like 1G), found '%.*s'", (int)tlen[3], tok[3]);
            if (parse_size(tok[4], tlen[4], &page) != 0 || (page != PAGE_4K && page != PAGE_2M && page != PAGE_1G))
                FAIL("window page size: expected 4K, 2M or 1G, found '%.*s'", (int)tlen[4], tok[4]);
            uint32_t backing = TLB_MOSAIC_THP;
            if (nt == 6) {
                if (tlen[5] == 7 && memcmp(tok[5], "hugetlb", 7) == 0)
                    backing = TLB_MOSAIC_HUGETLB;
                else if (!(tlen[5] == 3 && memcmp(tok[5], "thp", 3) == 0))
                    FAIL("window backing: expected thp or hugetlb, found '%.*s'", (int)tlen[5], tok[5]);
                if (page == PAGE_4K)
                    FAIL("window page size 4K: expected no backing after it (4 KiB pages are the pools' own), "
                         "found '%.*s'", (int)tlen[5], tok[5]);
            }
            if (page == PAGE_1G && backing != TLB_MOSAIC_HUGETLB)
                FAIL("window page size 1G: expected `hugetlb` after it (transparent huge pages are 2M only), "
                     "found %s", nt == 6 ? "'thp'" : "nothing");
            uint64_t align = page == PAGE_1G ? PAGE_1G : PAGE_2M;
            if (s % align != 0 || e % align != 0)
                FAIL("window %.*s %.*s: expected offsets that are multiples of %s", (int)tlen[2], tok[2],
                     (int)tlen[3], tok[3], page == PAGE_1G ? "1G (its pages are 1G)" : "2M");
            if (e <= s)
                FAIL("window %.*s %.*s: expected the end after the start", (int)tlen[2], tok[2], (int)tlen[3],
                     tok[3]);
            if (out->nwindows == TLB_MOSAIC_MAX_WINDOWS)
                FAIL("expected at most %d windows, found more", TLB_MOSAIC_MAX_WINDOWS);
            for (uint32_t w = 0; w < out->nwindows; w++) {
                const tlb_mosaic_window *o = &out->windows[w];
                if ((int)o->pool == p && s < o->end && o->start < e)
                    FAIL("window %s [%#llx, %#llx) overlaps an earlier window [%#llx, %#llx)", POOL_NAME[p],
                         (unsigned long long)s, (unsigned long long)e, (unsigned long long)o->start,
                         (unsigned long long)o->end);
            }
            tlb_mosaic_window *w = &out->windows[out->nwindows++];
            w->pool = (uint32_t)p;
            w->start = s;
            w->end = e;
            w->page_shift = page == PAGE_1G ? 30 : page == PAGE_2M ? 21 : 12;
            w->backing = backing;
        } else {
            FAIL("expected `pool` or `window`, found '%.*s'", (int)tlen[0], tok[0]);
        }
    }
    line = 0;
    for (uint32_t w = 0; w < out->nwindows; w++) {
        const tlb_mosaic_window *o = &out->windows[w];
        if (o->end > out->pool_size[o->pool])
            FAIL("window %s [%#llx, %#llx) ends past its pool (size %#llx): give `pool %s SIZE` large enough",
                 POOL_NAME[o->pool], (unsigned long long)o->start, (unsigned long long)o->end,
                 (unsigned long long)out->pool_size[o->pool], POOL_NAME[o->pool]);
    }
    if (out->pool_size[TLB_MOSAIC_HEAP] == 0 && out->pool_size[TLB_MOSAIC_ANON] == 0)
        FAIL("expected at least one `pool heap SIZE` or `pool anon SIZE`, found none");
#undef FAIL
    return 0;
}

/* strerror without its locale machinery, which may call malloc: the preloaded allocator reports
 * its errors before it can allocate. */
static const char *why(int e) {
    switch (e) {
    case ENOENT: return "no such file";
    case EACCES: return "permission denied";
    case ENOMEM: return "out of memory or address space";
    case EINVAL: return "invalid argument";
    case EISDIR: return "is a directory";
    default: return "system error";
    }
}

int tlb_mosaic_load(const char *path, tlb_mosaic_layout *out, char *err, size_t errlen) {
    static char buf[64 * 1024];
    long n = mosaic_prim_read_file(path, buf, sizeof buf);
    if (n == -EFBIG) {
        snprintf(err, errlen, "%s: expected a layout file of at most 64 KiB, found a larger file", path);
        return -EFBIG;
    }
    if (n < 0) {
        snprintf(err, errlen, "%s: cannot read the layout file: %s", path, why((int)-n));
        return (int)n;
    }
    return tlb_mosaic_parse(buf, (size_t)n, path, out, err, errlen);
}

/* ---------------------------------------------------------------- pools */

/* A decimal number from a sysfs file (no malloc); -1 when it cannot be read. */
static long long sysfs_number(const char *path) {
    char buf[32];
    long n = mosaic_prim_read_file(path, buf, sizeof buf);
    if (n <= 0)
        return -1;
    long long v = 0;
    long i = 0;
    for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
        v = v * 10 + (buf[i] - '0');
    return i == 0 ? -1 : v;
}

/* Why window `w` (hugetlb, its mmap failed with -`r`) has no hugetlb pages, into `out`: the error,
 * the pages asked, and what the kernel showed of that size's pool right after (free_hugepages
 * counts pages reserved by other mappings too; resv_hugepages says how many of them are). */
static void refusal_text(const tlb_mosaic_window *win, int r, char *out, size_t cap) {
    unsigned long long page_kb = (1ull << win->page_shift) / KIB;
    unsigned long long asked = (win->end - win->start) >> win->page_shift;
    char dir[96], path[128];
    snprintf(dir, sizeof dir, "/sys/kernel/mm/hugepages/hugepages-%llukB", page_kb);
    snprintf(path, sizeof path, "%s/free_hugepages", dir);
    long long free_pages = sysfs_number(path);
    snprintf(path, sizeof path, "%s/resv_hugepages", dir);
    long long resv_pages = sysfs_number(path);
    int k = snprintf(out, cap, "window %s [%#llx, %#llx) %s hugetlb refused: mmap(MAP_HUGETLB): %s; asked %llu "
                     "pages of %llu kB, ", POOL_NAME[win->pool], (unsigned long long)win->start,
                     (unsigned long long)win->end, win->page_shift == 30 ? "1G" : "2M", why(-r), asked, page_kb);
    if (k < 0 || (size_t)k >= cap)
        return;
    if (free_pages < 0)
        snprintf(out + k, cap - (size_t)k, "and this kernel has no pool of that size (no %s): on 4 KiB pages "
                 "instead", dir);
    else
        snprintf(out + k, cap - (size_t)k, "the kernel showed %lld free, %lld of them reserved by other mappings "
                 "(%s): on 4 KiB pages instead", free_pages, resv_pages < 0 ? 0 : resv_pages, dir);
}

static size_t handle_bytes(void) {
    return (sizeof(tlb_mosaic) + PAGE_4K - 1) & ~(size_t)(PAGE_4K - 1);
}

tlb_mosaic *tlb_mosaic_map(const tlb_mosaic_layout *layout, char *err, size_t errlen) {
    void *h;
    int r = mosaic_prim_reserve(0, handle_bytes(), PAGE_4K, &h);
    if (r != 0) {
        snprintf(err, errlen, "mosaic: cannot map its handle: %s", why(-r));
        return NULL;
    }
    tlb_mosaic *m = h; /* fresh anonymous memory: zeroed, so the lock is clear */
    m->layout = *layout;
    for (int p = 0; p < TLB_MOSAIC_POOLS; p++) {
        uint64_t size = layout->pool_size[p];
        if (size == 0)
            continue;
        void *base;
        r = mosaic_prim_reserve(POOL_HINT[p], size, POOL_ALIGN, &base);
        if (r != 0) {
            snprintf(err, errlen, "mosaic: cannot reserve the %s pool (%llu MiB): %s", POOL_NAME[p],
                     (unsigned long long)(size / MIB), why(-r));
            tlb_mosaic_unmap(m);
            return NULL;
        }
        m->base[p] = m->top[p] = (uintptr_t)base;
        /* 4 KiB everywhere first (so THP `always` cannot back a 4 KiB window), then each 2 MiB
         * window; the differing flags split the mapping at the windows' edges, which is also what
         * lets the smaps check see each window's pages. */
        r = mosaic_prim_page_size(base, size, 0);
        if (r == -EINVAL) /* a kernel without THP: no huge page can come to a 4 KiB window either */
            r = 0;
        for (uint32_t w = 0; r == 0 && w < layout->nwindows; w++) {
            const tlb_mosaic_window *win = &layout->windows[w];
            if ((int)win->pool == p && win->page_shift == 21 && win->backing == TLB_MOSAIC_THP)
                r = mosaic_prim_page_size((char *)base + win->start, win->end - win->start, 1);
        }
        if (r != 0) {
            snprintf(err, errlen, "mosaic: madvise on the %s pool failed: %s (is transparent huge page support "
                     "built into this kernel?)", POOL_NAME[p], why(-r));
            tlb_mosaic_unmap(m);
            return NULL;
        }
        /* Then each hugetlb window, mapped over its part of the pool (after the madvise calls, which
         * a hugetlb mapping does not take). A refusal is recorded, not returned (mosaic.h). */
        for (uint32_t w = 0; w < layout->nwindows; w++) {
            const tlb_mosaic_window *win = &layout->windows[w];
            if ((int)win->pool != p || win->backing != TLB_MOSAIC_HUGETLB)
                continue;
            void *at = (char *)base + win->start;
            size_t len = win->end - win->start;
            r = mosaic_prim_map_hugetlb(at, len, win->page_shift);
            if (r == 0) {
                m->hugetlb_mapped[w] = 1;
                continue;
            }
            refusal_text(win, r, m->refusal[w], REFUSAL_LEN);
            /* A failed MAP_FIXED mmap may have unmapped the range already (Linux 6.18 does): the
             * pool gets it back as 4 KiB memory, as the pool's own (MADV_NOHUGEPAGE). */
            r = mosaic_prim_map_plain(at, len);
            if (r == 0 && (r = mosaic_prim_page_size(at, len, 0)) == -EINVAL)
                r = 0; /* no THP in this kernel, as above */
            if (r != 0) {
                snprintf(err, errlen, "mosaic: %s; and mapping the range again failed: %s", m->refusal[w], why(-r));
                tlb_mosaic_unmap(m);
                return NULL;
            }
        }
    }
    return m;
}

const char *tlb_mosaic_refusal(const tlb_mosaic *m, uint32_t w) {
    return w < m->layout.nwindows && m->refusal[w][0] != '\0' ? m->refusal[w] : NULL;
}

void tlb_mosaic_unmap(tlb_mosaic *m) {
    if (m == NULL)
        return;
    for (int p = 0; p < TLB_MOSAIC_POOLS; p++)
        if (m->base[p] != 0)
            mosaic_prim_release((void *)m->base[p], m->layout.pool_size[p]);
    mosaic_prim_release(m, handle_bytes());
}

uintptr_t tlb_mosaic_pool_base(const tlb_mosaic *m, int pool) {
    return pool >= 0 && pool < TLB_MOSAIC_POOLS ? m->base[pool] : 0;
}

int tlb_mosaic_owns(const tlb_mosaic *m, int pool, const void *p) {
    uintptr_t a = (uintptr_t)p;
    return pool >= 0 && pool < TLB_MOSAIC_POOLS && m->base[pool] != 0 && a >= m->base[pool] &&
           a < m->base[pool] + m->layout.pool_size[pool];
}

/* ---------------------------------------------------------------- the heap pool */

static unsigned class_of(size_t size) {
    unsigned k = MIN_CLASS;
    while (((size_t)1 << k) < size)
        k++;
    return k;
}

static header *hdr(const void *p) {
    return (header *)((uintptr_t)p - HDR);
}

/* Bump `bytes` off the heap pool; NULL when full. Fresh memory reads as zeros. */
static void *bump(tlb_mosaic *m, uint64_t bytes) {
    uintptr_t end = m->base[TLB_MOSAIC_HEAP] + m->layout.pool_size[TLB_MOSAIC_HEAP];
    if (m->base[TLB_MOSAIC_HEAP] == 0 || bytes > end - m->top[TLB_MOSAIC_HEAP])
        return NULL;
    void *p = (void *)m->top[TLB_MOSAIC_HEAP];
    m->top[TLB_MOSAIC_HEAP] += bytes;
    return p;
}

/* The block for `size` bytes, its header written; *fresh says it came from the bump pointer. */
static void *alloc_locked(tlb_mosaic *m, size_t size, int *fresh) {
    *fresh = 0;
    if (size > m->layout.pool_size[TLB_MOSAIC_HEAP])
        return NULL;
    if (size <= ((size_t)1 << MAX_CLASS)) {
        unsigned k = class_of(size);
        free_block *b = m->classes[k];
        if (b != NULL) {
            m->classes[k] = b->next;
        } else {
            char *raw = bump(m, HDR + ((uint64_t)1 << k));
            if (raw == NULL)
                return NULL;
            b = (free_block *)(raw + HDR);
            *fresh = 1;
        }
        header *h = hdr(b);
        h->cap = (uint64_t)1 << k;
        h->magic = MAGIC_SMALL;
        h->aux = k;
        m->diag.live_bytes += h->cap;
        return b;
    }
    uint64_t need = ((uint64_t)size + HDR + PAGE_4K - 1) & ~(uint64_t)(PAGE_4K - 1);
    for (free_block **pp = &m->large; *pp != NULL; pp = &(*pp)->next) {
        free_block *b = *pp;
        header *h = hdr(b);
        if (h->cap + HDR < need)
            continue;
        *pp = b->next;
        m->diag.large_free_blocks--;
        uint64_t spare = h->cap + HDR - need;
        if (spare >= MIB) { /* split: the tail stays free */
            h->cap = need - HDR;
            free_block *tail = (free_block *)((char *)b + h->cap + HDR);
            header *th = hdr(tail);
            th->cap = spare - HDR;
            th->magic = MAGIC_LARGE;
            th->aux = 0;
            tail->next = m->large;
            m->large = tail;
            m->diag.large_free_blocks++;
        }
        m->diag.live_bytes += h->cap;
        return b;
    }
    char *raw = bump(m, need);
    if (raw == NULL)
        return NULL;
    *fresh = 1;
    header *h = (header *)raw;
    h->cap = need - HDR;
    h->magic = MAGIC_LARGE;
    h->aux = 0;
    m->diag.live_bytes += h->cap;
    return raw + HDR;
}

static void *malloc_flag(tlb_mosaic *m, size_t size, int *fresh) {
    lock(m);
    void *p = alloc_locked(m, size == 0 ? 1 : size, fresh);
    if (p != NULL) {
        m->diag.live_blocks++;
        m->diag.total_allocs++;
    }
    unlock(m);
    if (p == NULL)
        errno = ENOMEM;
    return p;
}

void *tlb_mosaic_malloc(tlb_mosaic *m, size_t size) {
    int fresh;
    return malloc_flag(m, size, &fresh);
}

void *tlb_mosaic_calloc(tlb_mosaic *m, size_t n, size_t size) {
    if (size != 0 && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    int fresh;
    void *p = malloc_flag(m, n * size, &fresh);
    if (p != NULL && !fresh)
        memset(p, 0, n * size);
    return p;
}

void *tlb_mosaic_memalign(tlb_mosaic *m, size_t align, size_t size) {
    if (align <= HDR)
        return tlb_mosaic_malloc(m, size);
    if ((align & (align - 1)) != 0 || size > SIZE_MAX - align) {
        errno = EINVAL;
        return NULL;
    }
    char *u = tlb_mosaic_malloc(m, size + align);
    if (u == NULL)
        return NULL;
    uintptr_t p = ((uintptr_t)u + align - 1) & ~(uintptr_t)(align - 1);
    if (p == (uintptr_t)u)
        return u;
    /* p - u is a positive multiple of 16, so its header lies inside u's block. */
    header *h = hdr((void *)p);
    h->cap = hdr(u)->cap - (p - (uintptr_t)u);
    h->magic = MAGIC_ALIGNED;
    h->aux = (uint32_t)(p - (uintptr_t)u);
    return (void *)p;
}

size_t tlb_mosaic_usable(const tlb_mosaic *m, const void *p) {
    (void)m;
    return p == NULL ? 0 : (size_t)hdr(p)->cap;
}

void tlb_mosaic_free(tlb_mosaic *m, void *p) {
    if (p == NULL)
        return;
    header *h = hdr(p);
    if (h->magic == MAGIC_ALIGNED) {
        p = (char *)p - h->aux;
        h = hdr(p);
    }
    lock(m);
    m->diag.live_blocks--;
    m->diag.live_bytes -= h->cap;
    free_block *b = p;
    if (h->magic == MAGIC_SMALL) {
        b->next = m->classes[h->aux];
        m->classes[h->aux] = b;
    } else {
        b->next = m->large;
        m->large = b;
        m->diag.large_free_blocks++;
    }
    unlock(m);
}

void tlb_mosaic_diagnostics(const tlb_mosaic *m, tlb_mosaic_diag *out) {
    lock(m);
    *out = m->diag;
    unlock(m);
}

int tlb_mosaic_invariants(const tlb_mosaic *m) {
    int bad = 0;
    lock(m);
    uintptr_t lo = m->base[TLB_MOSAIC_HEAP], hi = m->top[TLB_MOSAIC_HEAP];
    for (unsigned k = MIN_CLASS; k <= MAX_CLASS; k++)
        for (free_block *b = m->classes[k]; b != NULL; b = b->next) {
            const header *h = hdr(b);
            if ((uintptr_t)b < lo + HDR || (uintptr_t)b >= hi || h->magic != MAGIC_SMALL || h->aux != k ||
                h->cap != ((uint64_t)1 << k))
                bad = 1;
        }
    uint64_t n = 0;
    for (free_block *b = m->large; b != NULL; b = b->next, n++) {
        const header *h = hdr(b);
        if ((uintptr_t)b < lo + HDR || (uintptr_t)b + h->cap > hi || h->magic != MAGIC_LARGE)
            bad = 1;
    }
    if (n != m->diag.large_free_blocks)
        bad = 1;
    unlock(m);
    return bad ? -EFAULT : 0;
}

/* ---------------------------------------------------------------- the anon pool */

void *tlb_mosaic_mmap(tlb_mosaic *m, size_t len) {
    uint64_t bytes = ((uint64_t)len + PAGE_4K - 1) & ~(uint64_t)(PAGE_4K - 1);
    lock(m);
    uintptr_t base = m->base[TLB_MOSAIC_ANON], top = m->top[TLB_MOSAIC_ANON];
    if (bytes >= PAGE_2M) /* a large mapping starts on a 2 MiB boundary, as the kernel's THP placement */
        top = (top + PAGE_2M - 1) & ~(uintptr_t)(PAGE_2M - 1);
    void *p = NULL;
    if (base != 0 && len != 0 && top <= base + m->layout.pool_size[TLB_MOSAIC_ANON] &&
        bytes <= base + m->layout.pool_size[TLB_MOSAIC_ANON] - top) {
        p = (void *)top;
        m->top[TLB_MOSAIC_ANON] = top + bytes;
    }
    unlock(m);
    if (p == NULL)
        errno = ENOMEM;
    return p;
}

/* The hugetlb-mapped window of pool `pool` holding offset `off`, or the layout's count if none. */
static uint32_t hugetlb_window_at(const tlb_mosaic *m, int pool, uint64_t off) {
    for (uint32_t w = 0; w < m->layout.nwindows; w++) {
        const tlb_mosaic_window *win = &m->layout.windows[w];
        if (m->hugetlb_mapped[w] && (int)win->pool == pool && off >= win->start && off < win->end)
            return w;
    }
    return m->layout.nwindows;
}

int tlb_mosaic_munmap(tlb_mosaic *m, void *p, size_t len) {
    if (!tlb_mosaic_owns(m, TLB_MOSAIC_ANON, p) || ((uintptr_t)p & (PAGE_4K - 1)) != 0)
        return -EINVAL;
    uint64_t bytes = ((uint64_t)len + PAGE_4K - 1) & ~(uint64_t)(PAGE_4K - 1);
    uintptr_t base = m->base[TLB_MOSAIC_ANON];
    uint64_t off = (uintptr_t)p - base, end = off + bytes;
    /* Piece by piece: a hugetlb window's pages go back only whole (madvise on part of one is EINVAL);
     * the huge pages the range covers in part stay (the range is never reused). */
    while (off < end) {
        uint32_t w = hugetlb_window_at(m, TLB_MOSAIC_ANON, off);
        uint64_t stop = end;
        int r = 0;
        if (w < m->layout.nwindows) {
            const tlb_mosaic_window *win = &m->layout.windows[w];
            uint64_t page = 1ull << win->page_shift;
            stop = win->end < end ? win->end : end;
            uint64_t a = (off + page - 1) & ~(page - 1), b = stop & ~(page - 1);
            if (b > a)
                r = mosaic_prim_discard((void *)(base + a), b - a);
        } else {
            for (uint32_t k = 0; k < m->layout.nwindows; k++) {
                const tlb_mosaic_window *win = &m->layout.windows[k];
                if (m->hugetlb_mapped[k] && win->pool == TLB_MOSAIC_ANON && win->start > off && win->start < stop)
                    stop = win->start;
            }
            r = mosaic_prim_discard((void *)(base + off), stop - off);
        }
        if (r != 0)
            return r;
        off = stop;
    }
    return 0;
}

/* ---------------------------------------------------------------- what the kernel gave */

/* The window of pool `pool` holding offset `off`, or the layout's count if none. */
static uint32_t window_at(const tlb_mosaic *m, int pool, uint64_t off) {
    for (uint32_t w = 0; w < m->layout.nwindows; w++) {
        const tlb_mosaic_window *win = &m->layout.windows[w];
        if ((int)win->pool == pool && off >= win->start && off < win->end)
            return w;
    }
    return m->layout.nwindows;
}

static int window_shift(const tlb_mosaic *m, int pool, uint64_t off) {
    uint32_t w = window_at(m, pool, off);
    return w < m->layout.nwindows ? (int)m->layout.windows[w].page_shift : 12;
}

static uint64_t hex_at(const char *s, const char *end, const char **next) {
    uint64_t v = 0;
    for (; s < end; s++) {
        char c = *s;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uint64_t)(c - 'a' + 10);
        else
            break;
    }
    *next = s;
    return v;
}

static uint64_t kb_field(const char *s, const char *end) {
    uint64_t v = 0;
    while (s < end && (*s < '0' || *s > '9'))
        s++;
    for (; s < end && *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (uint64_t)(*s - '0');
    return v;
}

typedef struct {
    const tlb_mosaic *m;
    tlb_mosaic_coverage *out;
    int pool;        /* of the mapping being read, -1: not a pool's */
    uint32_t win;    /* the window its start lies in (the layout's count: none) */
    uint64_t kps_kb; /* its KernelPageSize */
} smaps_state;

static int starts_with(const char *s, size_t n, const char *key, size_t *klen) {
    *klen = strlen(key);
    return n > *klen && memcmp(s, key, *klen) == 0;
}

/* One line of /proc/self/smaps (Documentation/filesystems/proc.rst: a mapping's "lo-hi perms ..."
 * line, then its fields, KernelPageSize before Rss, AnonHugePages and the *_Hugetlb counts; a
 * hugetlb mapping's pages are in *_Hugetlb only, its Rss is 0). A mapping is counted in the window
 * its start lies in: the madvise calls split THP windows' mappings at their edges, and every
 * hugetlb window is a mapping of its own. */
static void smaps_line(smaps_state *st, const char *s, const char *end) {
    const char *p;
    const tlb_mosaic *m = st->m;
    uint64_t lo = hex_at(s, end, &p);
    if (p > s && p < end && *p == '-') {
        st->pool = -1;
        st->win = m->layout.nwindows;
        st->kps_kb = 4;
        for (int k = 0; k < TLB_MOSAIC_POOLS; k++)
            if (tlb_mosaic_owns(m, k, (void *)(uintptr_t)lo)) {
                st->pool = k;
                st->win = window_at(m, k, lo - m->base[k]);
            }
        return;
    }
    if (st->pool < 0)
        return;
    tlb_mosaic_pool_coverage *c = &st->out->pool[st->pool];
    const tlb_mosaic_window *win = st->win < m->layout.nwindows ? &m->layout.windows[st->win] : NULL;
    int thp = win != NULL && win->backing == TLB_MOSAIC_THP && win->page_shift == 21;
    int hugetlb = win != NULL && win->backing == TLB_MOSAIC_HUGETLB;
    tlb_mosaic_window_coverage *wc = hugetlb ? &st->out->window[st->win] : NULL;
    size_t n = (size_t)(end - s), k;
    if (starts_with(s, n, "KernelPageSize:", &k)) {
        st->kps_kb = kb_field(s + k, end);
    } else if (starts_with(s, n, "Rss:", &k)) {
        uint64_t kb = kb_field(s + k, end);
        c->rss_kb += kb;
        if (thp)
            c->want_huge_rss_kb += kb;
        if (hugetlb && st->kps_kb == 4) { /* a refused window's 4 KiB pages (a hugetlb page is not in Rss) */
            wc->rss_kb += kb;
            c->want_hugetlb_kb += kb;
        }
    } else if (starts_with(s, n, "AnonHugePages:", &k)) {
        uint64_t kb = kb_field(s + k, end);
        if (thp)
            c->huge_kb += kb;
        else if (!hugetlb) /* in a hugetlb window they are in its Rss already, and not what it asked */
            c->stray_huge_kb += kb;
    } else if (starts_with(s, n, "Shared_Hugetlb:", &k) || starts_with(s, n, "Private_Hugetlb:", &k)) {
        uint64_t kb = kb_field(s + k, end);
        if (!hugetlb) {
            c->stray_huge_kb += kb; /* hugetlb pages where no window asked for them */
            return;
        }
        wc->rss_kb += kb;
        c->want_hugetlb_kb += kb;
        if (st->kps_kb * KIB == 1ull << win->page_shift) {
            wc->hugetlb_kb += kb;
            c->hugetlb_kb += kb;
        }
    }
}

/* Where the kernel put pool k's 4 KiB pages (the pages outside 2 MiB windows of its used part), from
 * /proc/self/pagemap (Documentation/admin-guide/mm/pagemap.rst: bit 63 present, bits 0-54 the frame):
 * how many 2 MiB physical frames they take and how many virtual neighbours are physical neighbours,
 * the statistics a nested walk's host translations depend on (docs/host-predict.md, "A gap in the
 * model"). Caller holds the check's lock (static buffers: no malloc). */
static void pagemap_stats(const tlb_mosaic *m, int k, int fd, tlb_mosaic_pool_coverage *c) {
    static uint64_t ent[8192];
    static uint64_t seen[1u << 14]; /* a bit per 2 MiB frame below 2 TiB */
    memset(seen, 0, sizeof seen);
    uint64_t base = m->base[k], top = m->top[k], prev = 0;
    int have_prev = 0;
    for (uint64_t va = base; va < top;) {
        uint64_t n = (top - va) >> 12;
        if (n > sizeof ent / sizeof ent[0])
            n = sizeof ent / sizeof ent[0];
        long got = mosaic_prim_pread(fd, ent, (size_t)n * 8, (va >> 12) * 8);
        if (got < 8)
            return;
        n = (uint64_t)got / 8;
        for (uint64_t i = 0; i < n; i++, va += 4096) {
            uint64_t e = ent[i], pfn = e & ((1ull << 55) - 1);
            if (!(e >> 63) || window_shift(m, k, va - base) != 12) {
                have_prev = 0;
                continue;
            }
            c->present_pages++;
            if (pfn == 0) {
                have_prev = 0;
                continue;
            }
            c->pfn_pages++;
            uint64_t f = pfn >> 9;
            if (f >= sizeof seen * 8)
                c->frames_2m++; /* past the bitmap: counted as new (an over-count only past 2 TiB) */
            else if (!(seen[f / 64] >> (f % 64) & 1)) {
                seen[f / 64] |= 1ull << (f % 64);
                c->frames_2m++;
            }
            if (have_prev) {
                c->neighbour_pairs++;
                c->consecutive += pfn == prev + 1 || pfn + 1 == prev; /* a LIFO free list descends */
            }
            prev = pfn;
            have_prev = 1;
        }
    }
}

int tlb_mosaic_check(const tlb_mosaic *m, tlb_mosaic_coverage *out) {
    memset(out, 0, sizeof *out);
    int fd = mosaic_prim_open("/proc/self/smaps");
    if (fd < 0)
        return fd;
    static char buf[64 * 1024]; /* static: the preloaded check runs without malloc */
    static atomic_flag busy = ATOMIC_FLAG_INIT;
    while (atomic_flag_test_and_set(&busy)) {
    }
    smaps_state st = {m, out, -1, m->layout.nwindows, 4};
    size_t have = 0;
    long n;
    while ((n = mosaic_prim_read(fd, buf + have, sizeof buf - have)) > 0) {
        have += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < have; i++)
            if (buf[i] == '\n') {
                smaps_line(&st, buf + start, buf + i);
                start = i + 1;
            }
        memmove(buf, buf + start, have - start);
        have -= start;
        if (have == sizeof buf) /* no line is this long; drop it rather than stall */
            have = 0;
    }
    int pm = n < 0 ? -1 : mosaic_prim_open("/proc/self/pagemap");
    if (pm >= 0) {
        for (int k = 0; k < TLB_MOSAIC_POOLS; k++)
            if (m->base[k])
                pagemap_stats(m, k, pm, &out->pool[k]);
        mosaic_prim_close(pm);
    }
    atomic_flag_clear(&busy);
    mosaic_prim_close(fd);
    if (n < 0)
        return (int)n;
    out->ok = 1;
    for (int k = 0; k < TLB_MOSAIC_POOLS; k++) {
        tlb_mosaic_pool_coverage *c = &out->pool[k];
        c->used_bytes = m->base[k] ? m->top[k] - m->base[k] : 0;
        if (c->huge_kb * 100 < c->want_huge_rss_kb * 99 || c->stray_huge_kb != 0)
            out->ok = 0;
    }
    /* A hugetlb window has all of its resident memory in its pages or it did not happen: no
     * threshold (a mapped window cannot hold another page size; a refused one holds nothing else). */
    for (uint32_t w = 0; w < m->layout.nwindows; w++) {
        if (m->layout.windows[w].backing != TLB_MOSAIC_HUGETLB)
            continue;
        tlb_mosaic_window_coverage *wc = &out->window[w];
        wc->refused = tlb_mosaic_refusal(m, w);
        if (wc->refused != NULL)
            out->refused_windows++;
        if (wc->refused != NULL || wc->hugetlb_kb != wc->rss_kb)
            out->ok = 0;
    }
    return 0;
}

int tlb_mosaic_report_json(const tlb_mosaic *m, const tlb_mosaic_coverage *c, char *buf, size_t cap) {
    size_t at = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int k_ = snprintf(buf + at, cap - at, __VA_ARGS__);                                        \
        if (k_ < 0 || (size_t)k_ >= cap - at)                                                      \
            return -ENOSPC;                                                                        \
        at += (size_t)k_;                                                                          \
    } while (0)
    if (cap == 0)
        return -ENOSPC;
    PUT("{\"ok\": %s, \"refused_windows\": %u, \"pools\": {", c->ok ? "true" : "false", c->refused_windows);
    int first = 1;
    for (int k = 0; k < TLB_MOSAIC_POOLS; k++) {
        if (m->base[k] == 0)
            continue;
        const tlb_mosaic_pool_coverage *p = &c->pool[k];
        PUT("%s\"%s\": {\"base\": %llu, \"size\": %llu, \"used_bytes\": %llu, \"rss_kb\": %llu, "
            "\"want_huge_rss_kb\": %llu, \"huge_kb\": %llu, \"stray_huge_kb\": %llu, \"want_hugetlb_kb\": %llu, "
            "\"hugetlb_kb\": %llu, \"pagemap\": {\"present_pages\": "
            "%llu, \"pfn_pages\": %llu, \"frames_2m\": %llu, \"neighbour_pairs\": %llu, \"consecutive\": %llu}}",
            first ? "" : ", ", POOL_NAME[k], (unsigned long long)m->base[k],
            (unsigned long long)m->layout.pool_size[k], (unsigned long long)p->used_bytes,
            (unsigned long long)p->rss_kb, (unsigned long long)p->want_huge_rss_kb, (unsigned long long)p->huge_kb,
            (unsigned long long)p->stray_huge_kb, (unsigned long long)p->want_hugetlb_kb,
            (unsigned long long)p->hugetlb_kb, (unsigned long long)p->present_pages,
            (unsigned long long)p->pfn_pages, (unsigned long long)p->frames_2m,
            (unsigned long long)p->neighbour_pairs, (unsigned long long)p->consecutive);
        first = 0;
    }
    PUT("}, \"windows\": [");
    for (uint32_t w = 0; w < m->layout.nwindows; w++) {
        const tlb_mosaic_window *win = &m->layout.windows[w];
        PUT("%s{\"pool\": \"%s\", \"start\": %llu, \"end\": %llu, \"page_shift\": %u, \"backing\": \"%s\"",
            w ? ", " : "", POOL_NAME[win->pool], (unsigned long long)win->start, (unsigned long long)win->end,
            win->page_shift, win->backing == TLB_MOSAIC_HUGETLB ? "hugetlb" : "thp");
        if (win->backing == TLB_MOSAIC_HUGETLB) {
            const tlb_mosaic_window_coverage *wc = &c->window[w];
            PUT(", \"rss_kb\": %llu, \"hugetlb_kb\": %llu, \"refused\": ", (unsigned long long)wc->rss_kb,
                (unsigned long long)wc->hugetlb_kb);
            if (wc->refused == NULL) {
                PUT("null");
            } else {
                PUT("\"");
                for (const char *q = wc->refused; *q != '\0'; q++) /* JSON-escaped: quotes, backslashes */
                    PUT(*q == '"' || *q == '\\' ? "\\%c" : "%c", *q);
                PUT("\"");
            }
        }
        PUT("}");
    }
    PUT("]}");
#undef PUT
    return (int)at;
}
