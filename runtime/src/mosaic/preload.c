/* preload.c: libtlblab_mosaic.so, the mosaic allocator as an LD_PRELOAD library (tlblab/mosaic.h).
 *
 *     TLBLAB_MOSAIC=layout.txt [TLBLAB_MOSAIC_REPORT=report.json] LD_PRELOAD=libtlblab_mosaic.so prog
 *
 * Replaces the malloc family (glibc supports replacing it: its own internal allocations then come
 * here too) with the heap pool, and the program's anonymous private mmaps (no address asked for)
 * with the anon pool when the layout has one. glibc's malloc cannot be steered instead: since
 * glibc 2.34 there is no __morecore hook, and its own mmap calls are internal, out of LD_PRELOAD's
 * reach. At exit the smaps check (tlb_mosaic_check) is written as JSON to $TLBLAB_MOSAIC_REPORT
 * (through a temporary file renamed over it: whole or not at all) or stderr.
 * Not in libtlblab.a: linking it would replace every tlblab user's malloc. */
#include "tlblab/mosaic.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static tlb_mosaic *g_mosaic;
static atomic_int g_state; /* 0 not started, 1 starting, 2 ready */

static void say(const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        long k = syscall(SYS_write, 2, s, n);
        if (k <= 0)
            break;
        s += k;
        n -= (size_t)k;
    }
}

/* Bad input: one line, exit status 2 (the program has not started: nothing to clean up). */
static void die(const char *line) {
    say("tlblab mosaic: ");
    say(line);
    say("\n");
    syscall(SYS_exit_group, 2);
    __builtin_unreachable();
}

static tlb_mosaic *mosaic(void) {
    if (atomic_load_explicit(&g_state, memory_order_acquire) == 2)
        return g_mosaic;
    int expect = 0;
    if (atomic_compare_exchange_strong(&g_state, &expect, 1)) {
        static char err[512];
        static tlb_mosaic_layout layout;
        const char *path = getenv("TLBLAB_MOSAIC");
        if (path == NULL || path[0] == '\0')
            die("TLBLAB_MOSAIC is not set: expected the path of a layout file (tlblab/mosaic.h)");
        if (tlb_mosaic_load(path, &layout, err, sizeof err) != 0)
            die(err);
        g_mosaic = tlb_mosaic_map(&layout, err, sizeof err);
        if (g_mosaic == NULL)
            die(err);
        /* A refused hugetlb window: the program runs on, its report not ok (mosaic.h); said now too. */
        for (uint32_t w = 0; w < layout.nwindows; w++) {
            const char *why = tlb_mosaic_refusal(g_mosaic, w);
            if (why != NULL) {
                say("tlblab mosaic: ");
                say(why);
                say(" (the report will say not ok)\n");
            }
        }
        atomic_store_explicit(&g_state, 2, memory_order_release);
        return g_mosaic;
    }
    while (atomic_load_explicit(&g_state, memory_order_acquire) != 2) {
    }
    return g_mosaic;
}

__attribute__((constructor)) static void mosaic_start(void) {
    (void)mosaic();
}

__attribute__((destructor)) static void mosaic_report(void) {
    if (atomic_load(&g_state) != 2)
        return;
    static tlb_mosaic_coverage cov;
    static char json[96 * 1024]; /* 128 windows, each with a refusal's line, fit */
    if (tlb_mosaic_check(g_mosaic, &cov) != 0) {
        say("tlblab mosaic: cannot read /proc/self/smaps: the mosaic is unchecked\n");
        return;
    }
    int n = tlb_mosaic_report_json(g_mosaic, &cov, json, sizeof json - 1);
    if (n < 0)
        return;
    json[n++] = '\n';
    const char *path = getenv("TLBLAB_MOSAIC_REPORT");
    if (path == NULL || path[0] == '\0') {
        json[n] = '\0';
        say(json);
        return;
    }
    static char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        say("tlblab mosaic: cannot write the report (TLBLAB_MOSAIC_REPORT)\n");
        return;
    }
    long w = syscall(SYS_write, fd, json, (size_t)n);
    syscall(SYS_close, fd);
    if (w != n || syscall(SYS_rename, tmp, path) != 0) {
        syscall(SYS_unlink, tmp);
        say("tlblab mosaic: cannot write the report (TLBLAB_MOSAIC_REPORT)\n");
    }
}

/* ---------------------------------------------------------------- the malloc family */

void *malloc(size_t size) {
    return tlb_mosaic_malloc(mosaic(), size);
}

void free(void *p) {
    tlb_mosaic *m = mosaic();
    /* Blocks from before we were the malloc (the dynamic loader's own) are left alone. */
    if (p != NULL && tlb_mosaic_owns(m, TLB_MOSAIC_HEAP, p))
        tlb_mosaic_free(m, p);
}

void *calloc(size_t n, size_t size) {
    return tlb_mosaic_calloc(mosaic(), n, size);
}

void *realloc(void *p, size_t size) {
    tlb_mosaic *m = mosaic();
    if (p == NULL)
        return tlb_mosaic_malloc(m, size);
    if (size == 0) {
        free(p);
        return NULL;
    }
    if (!tlb_mosaic_owns(m, TLB_MOSAIC_HEAP, p)) {
        errno = ENOMEM; /* not ours and of unknown size: cannot be grown */
        return NULL;
    }
    size_t have = tlb_mosaic_usable(m, p);
    if (size <= have)
        return p;
    void *q = tlb_mosaic_malloc(m, size);
    if (q == NULL)
        return NULL;
    memcpy(q, p, have);
    tlb_mosaic_free(m, p);
    return q;
}

void *memalign(size_t align, size_t size) {
    return tlb_mosaic_memalign(mosaic(), align, size);
}

void *aligned_alloc(size_t align, size_t size) {
    return tlb_mosaic_memalign(mosaic(), align, size);
}

int posix_memalign(void **out, size_t align, size_t size) {
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    void *p = tlb_mosaic_memalign(mosaic(), align, size);
    if (p == NULL)
        return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t size) {
    return tlb_mosaic_memalign(mosaic(), 4096, size);
}

void *pvalloc(size_t size) {
    return tlb_mosaic_memalign(mosaic(), 4096, (size + 4095) & ~(size_t)4095);
}

size_t malloc_usable_size(void *p) {
    tlb_mosaic *m = mosaic();
    return p != NULL && tlb_mosaic_owns(m, TLB_MOSAIC_HEAP, p) ? tlb_mosaic_usable(m, p) : 0;
}

/* ---------------------------------------------------------------- anonymous mmaps */

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    tlb_mosaic *m = mosaic();
    if (addr == NULL && fd == -1 && (flags & MAP_ANONYMOUS) && (flags & MAP_PRIVATE) &&
        !(flags & (MAP_FIXED | MAP_HUGETLB | MAP_GROWSDOWN | MAP_STACK)) &&
        tlb_mosaic_pool_base(m, TLB_MOSAIC_ANON) != 0) {
        void *p = tlb_mosaic_mmap(m, len);
        if (p == NULL)
            return MAP_FAILED;
        if (prot != (PROT_READ | PROT_WRITE) && syscall(SYS_mprotect, p, len, prot) != 0)
            return MAP_FAILED;
        return p;
    }
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
    return (void *)r;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap(addr, len, prot, flags, fd, off);
}

int munmap(void *addr, size_t len) {
    tlb_mosaic *m = mosaic();
    if (tlb_mosaic_owns(m, TLB_MOSAIC_ANON, addr)) {
        int r = tlb_mosaic_munmap(m, addr, len);
        if (r != 0) {
            errno = -r;
            return -1;
        }
        return 0;
    }
    return (int)syscall(SYS_munmap, addr, len);
}
