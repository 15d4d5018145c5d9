/* Linux primitives of the mosaic allocator: raw system calls, so nothing here allocates or goes
 * through a symbol the preloaded library replaces (its `mmap` is the program's anon pool). */
#include "prim.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *raw_mmap(void *addr, size_t len, int prot, int flags) {
    long r = syscall(SYS_mmap, addr, len, prot, flags, -1, 0L);
    return (void *)r;
}

int mosaic_prim_reserve(uintptr_t hint, size_t size, size_t align, void **out) {
    /* Over-reserve by `align` and trim, so the pool's start is aligned wherever the kernel (or
     * Valgrind's address-space manager, which may ignore the hint) puts it. */
    size_t span = size + align;
    void *p = raw_mmap((void *)hint, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
    if (p == MAP_FAILED)
        return -errno;
    uintptr_t lo = (uintptr_t)p, start = (lo + align - 1) & ~(uintptr_t)(align - 1);
    if (start > lo)
        syscall(SYS_munmap, (void *)lo, start - lo);
    uintptr_t end = start + size, hi = lo + span;
    if (hi > end)
        syscall(SYS_munmap, (void *)end, hi - end);
    *out = (void *)start;
    return 0;
}

int mosaic_prim_release(void *p, size_t size) {
    return syscall(SYS_munmap, p, size) == 0 ? 0 : -errno;
}

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26 /* include/uapi/asm-generic/hugetlb_encode.h: log2 of the page size, here */
#endif

int mosaic_prim_map_hugetlb(void *at, size_t size, unsigned shift) {
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_HUGETLB | (int)(shift << MAP_HUGE_SHIFT);
    return raw_mmap(at, size, PROT_READ | PROT_WRITE, flags) == MAP_FAILED ? -errno : 0;
}

int mosaic_prim_map_plain(void *at, size_t size) {
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;
    if (raw_mmap(at, size, PROT_READ | PROT_WRITE, flags) != MAP_FAILED)
        return 0;
    return raw_mmap(at, size, PROT_READ | PROT_WRITE, flags | MAP_NORESERVE) == MAP_FAILED ? -errno : 0;
}

int mosaic_prim_page_size(void *p, size_t size, int huge) {
    return syscall(SYS_madvise, p, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) == 0 ? 0 : -errno;
}

int mosaic_prim_discard(void *p, size_t size) {
    return syscall(SYS_madvise, p, size, MADV_DONTNEED) == 0 ? 0 : -errno;
}

int mosaic_prim_protect(void *p, size_t size, int prot) {
    return syscall(SYS_mprotect, p, size, prot) == 0 ? 0 : -errno;
}

int mosaic_prim_open(const char *path) {
    long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

long mosaic_prim_read(int fd, char *buf, size_t cap) {
    long n;
    do {
        n = syscall(SYS_read, fd, buf, cap);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

void mosaic_prim_close(int fd) {
    syscall(SYS_close, fd);
}

long mosaic_prim_read_file(const char *path, char *buf, size_t cap) {
    int fd = mosaic_prim_open(path);
    if (fd < 0)
        return fd;
    size_t got = 0;
    for (;;) {
        if (got == cap) {
            char extra;
            long n = mosaic_prim_read(fd, &extra, 1);
            mosaic_prim_close(fd);
            return n > 0 ? -EFBIG : (long)got;
        }
        long n = mosaic_prim_read(fd, buf + got, cap - got);
        if (n < 0) {
            mosaic_prim_close(fd);
            return n;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    mosaic_prim_close(fd);
    return (long)got;
}

long mosaic_prim_pread(int fd, void *buf, size_t cap, uint64_t off) {
    long n;
    do
        n = syscall(SYS_pread64, fd, buf, cap, (long)off);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}
