/* Linux primitives of the page-table warmer: clocks, CPU topology from sysfs, affinity, mincore,
 * /proc/self/maps, and /proc/PID/pagemap (PAGEMAP_SCAN ioctl or pread). Everything OS-specific that
 * ptwarm.c needs lives here, so the warmer's logic reads without syscalls in the way. */
#include "prim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* PAGEMAP_SCAN (Linux 6.7, include/uapi/linux/fs.h). Declared here because the C library's kernel
 * headers may predate it; the layout is part of the stable kernel ABI. */
struct ptwarm_page_region {
    uint64_t start, end, categories;
};
struct ptwarm_pm_scan_arg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
    uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PTWARM_PAGEMAP_SCAN _IOWR('f', 16, struct ptwarm_pm_scan_arg)
#define PTWARM_PAGE_IS_PRESENT (1u << 3)

uint64_t ptwarm_prim_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

size_t ptwarm_prim_page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096u;
}

int ptwarm_prim_ncpus(void) {
    long n = sysconf(_SC_NPROCESSORS_CONF);
    if (n < 1) return 1;
    return n > PTWARM_PRIM_MAX_CPUS ? PTWARM_PRIM_MAX_CPUS : (int)n;
}

int ptwarm_prim_cpu_online(int cpu) {
    if (cpu < 0 || cpu >= ptwarm_prim_ncpus()) return 0;
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/online", cpu);
    FILE *f = fopen(path, "r");
    if (!f) return 1; /* cpu0 often has no "online" file: it is always online */
    int c = fgetc(f);
    fclose(f);
    return c == '1';
}

int ptwarm_prim_current_cpu(void) {
    int c = sched_getcpu();
    return c < 0 ? -errno : c;
}

pid_t ptwarm_prim_gettid(void) { return (pid_t)syscall(SYS_gettid); }

int ptwarm_prim_thread_cpu(pid_t pid, pid_t tid, int *cpu) {
    char path[96], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int e = errno;
    close(fd);
    if (n <= 0) return n < 0 ? -e : -ESRCH;
    buf[n] = '\0';
    /* Field 2 (comm) may contain spaces and parentheses: count fields after the LAST ')'. */
    char *p = strrchr(buf, ')');
    if (!p) return -EIO;
    int field = 2;
    for (; *p; p++) {
        if (*p == ' ') {
            field++;
            if (field == 39) {
                int v = -1;
                if (sscanf(p + 1, "%d", &v) != 1 || v < 0) return -EIO;
                *cpu = v;
                return 0;
            }
        }
    }
    return -EIO;
}

int ptwarm_prim_pid_alive(pid_t pid) {
    if (kill(pid, 0) == 0) return 1;
    return errno == EPERM; /* exists, not ours to signal */
}

int ptwarm_prim_pin_self(int cpu) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) return -EINVAL;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -errno;
}

int ptwarm_prim_unpin_self(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    int n = ptwarm_prim_ncpus();
    for (int c = 0; c < n && c < CPU_SETSIZE; c++) CPU_SET(c, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -errno;
}

_Static_assert(sizeof(ptwarm_prim_affinity) >= sizeof(cpu_set_t), "affinity blob too small");

int ptwarm_prim_affinity_save(ptwarm_prim_affinity *a) {
    memset(a, 0, sizeof *a);
    return sched_getaffinity(0, sizeof(cpu_set_t), (cpu_set_t *)(void *)a) == 0 ? 0 : -errno;
}

void ptwarm_prim_affinity_restore(const ptwarm_prim_affinity *a) {
    (void)sched_setaffinity(0, sizeof(cpu_set_t), (const cpu_set_t *)(const void *)a);
}

pid_t ptwarm_prim_getpid(void) { return getpid(); }

int ptwarm_prim_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, int cpu, int detached) {
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc != 0) return -rc;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu >= 0 && cpu < CPU_SETSIZE) {
        CPU_SET(cpu, &set);
    } else {
        int n = ptwarm_prim_ncpus();
        for (int c = 0; c < n && c < CPU_SETSIZE; c++) CPU_SET(c, &set);
    }
    rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    if (rc == 0 && detached) rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (rc == 0) rc = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return -rc;
}

/* Parses a sysfs CPU list ("0-3,8,10-11") and reports whether `cpu` is in it. */
static int list_has(const char *s, int cpu) {
    while (*s) {
        int lo, hi, used = 0;
        if (sscanf(s, "%d%n", &lo, &used) != 1) return 0;
        s += used;
        hi = lo;
        if (*s == '-') {
            s++;
            if (sscanf(s, "%d%n", &hi, &used) != 1) return 0;
            s += used;
        }
        if (cpu >= lo && cpu <= hi) return 1;
        if (*s != ',') break;
        s++;
    }
    return 0;
}

static int read_line(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) return -errno;
    char *r = fgets(buf, (int)cap, f);
    fclose(f);
    return r ? 0 : -EIO;
}

/* The sysfs CPU directory the topology (caches, SMT siblings) is read from: TLBLAB_SYSFS_CPU when set,
 * else the kernel's. Tests set it to a made-up tree to reach every branch of the helper's placement
 * check on any host: e.g. the Intel VM whose sysfs calls the L3 shared while the timing probe says it
 * is not (issue 88; tests/test_ptwarm_cli.py). */
static const char *cpu_dir(void) {
    const char *d = getenv("TLBLAB_SYSFS_CPU");
    return d && *d ? d : "/sys/devices/system/cpu";
}

int ptwarm_prim_share_llc(int a, int b) {
    /* The highest cache level listed for `a` is its LLC (index3 = L3 on x86; index2 on some Arm). */
    char path[PATH_MAX], buf[512];
    int best_level = -1, best_index = -1;
    for (int idx = 0; idx < 8; idx++) {
        snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/level", cpu_dir(), a, idx);
        if (read_line(path, buf, sizeof buf) != 0) continue;
        int level = atoi(buf);
        if (level > best_level) {
            best_level = level;
            best_index = idx;
        }
    }
    if (best_index < 0) return -ENOENT;
    snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/shared_cpu_list", cpu_dir(), a,
             best_index);
    if (read_line(path, buf, sizeof buf) != 0) return -ENOENT;
    return list_has(buf, b);
}

/* A sysfs cache size ("1024K", "32M", "49152") in bytes; 0 if unparsable. */
static size_t parse_cache_size(const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return 0;
    if (*end == 'K' || *end == 'k') v <<= 10;
    else if (*end == 'M' || *end == 'm') v <<= 20;
    else if (*end == 'G' || *end == 'g') v <<= 30;
    return (size_t)v;
}

int ptwarm_prim_cache_sizes(int cpu, size_t *below_llc, size_t *llc) {
    char path[PATH_MAX], buf[64];
    int levels[8] = {0};
    size_t sizes[8] = {0};
    int top = -1;
    for (int idx = 0; idx < 8; idx++) {
        snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/level", cpu_dir(), cpu, idx);
        if (read_line(path, buf, sizeof buf) != 0) continue;
        int level = atoi(buf);
        snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/type", cpu_dir(), cpu, idx);
        if (read_line(path, buf, sizeof buf) != 0 || !strncmp(buf, "Instruction", 11)) continue;
        snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/size", cpu_dir(), cpu, idx);
        if (read_line(path, buf, sizeof buf) != 0) continue;
        levels[idx] = level;
        sizes[idx] = parse_cache_size(buf);
        if (sizes[idx] && level > top) top = level;
    }
    if (top < 0) return -ENOENT;
    size_t below = 0, last = 0;
    for (int idx = 0; idx < 8; idx++) {
        if (!sizes[idx]) continue;
        if (levels[idx] == top && sizes[idx] > last) last = sizes[idx];
        if (levels[idx] < top && sizes[idx] > below) below = sizes[idx];
    }
    *below_llc = below;
    *llc = last;
    return 0;
}

int ptwarm_prim_smt_sibling(int a, int b) {
    char path[PATH_MAX], buf[512];
    snprintf(path, sizeof path, "%s/cpu%d/topology/thread_siblings_list", cpu_dir(), a);
    if (read_line(path, buf, sizeof buf) != 0) return -ENOENT;
    return a != b && list_has(buf, b);
}

void ptwarm_prim_pause(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
#if defined(__x86_64__) || defined(__i386__)
        _mm_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#else
        __asm__ __volatile__("" ::: "memory");
#endif
    }
}

int ptwarm_prim_mincore(uintptr_t addr, size_t len, unsigned char *vec) {
    return mincore((void *)addr, len, vec) == 0 ? 0 : -errno;
}

int ptwarm_prim_for_each_mapping(uintptr_t addr, size_t len,
                                 void (*fn)(void *ctx, uintptr_t lo, uintptr_t hi), void *ctx) {
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f) return -errno;
    uintptr_t end = addr + len;
    unsigned long lo, hi;
    while (fscanf(f, "%lx-%lx", &lo, &hi) == 2) {
        int c;
        while ((c = getc(f)) != EOF && c != '\n') {
        }
        if (hi <= addr) continue;
        if (lo >= end) break; /* the file is sorted by address */
        uintptr_t a = lo > addr ? lo : addr, b = hi < end ? hi : end;
        if (a < b) fn(ctx, a, b);
    }
    fclose(f);
    return 0;
}

int ptwarm_prim_pagemap_open(pid_t pid) {
    char path[64];
    if (pid == 0)
        snprintf(path, sizeof path, "/proc/self/pagemap");
    else
        snprintf(path, sizeof path, "/proc/%d/pagemap", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

void ptwarm_prim_close(int fd) {
    if (fd >= 0) close(fd);
}

static long scan_call(int fd, uintptr_t start, uintptr_t end, uint64_t *walk_end) {
    struct ptwarm_page_region vec[32];
    struct ptwarm_pm_scan_arg arg;
    memset(&arg, 0, sizeof arg);
    arg.size = sizeof arg;
    arg.start = start;
    arg.end = end;
    arg.vec = (uint64_t)(uintptr_t)vec;
    arg.vec_len = sizeof vec / sizeof vec[0];
    arg.category_mask = PTWARM_PAGE_IS_PRESENT; /* present pages only: no struct page reads */
    arg.return_mask = PTWARM_PAGE_IS_PRESENT;
    long r = ioctl(fd, PTWARM_PAGEMAP_SCAN, &arg);
    if (r < 0) return -errno;
    *walk_end = arg.walk_end;
    return r;
}

int ptwarm_prim_pagemap_scan_supported(int fd) {
    uint64_t we = 0;
    size_t pg = ptwarm_prim_page_size();
    /* An empty-ish scan of the first page: ENOTTY/EINVAL mean the kernel has no PAGEMAP_SCAN. */
    long r = scan_call(fd, pg, 2 * pg, &we);
    return r >= 0;
}

long ptwarm_prim_pagemap_scan(int fd, uintptr_t addr, size_t len) {
    uintptr_t cur = addr, end = addr + len;
    long calls = 0, found = 0;
    while (cur < end) {
        uint64_t we = end;
        long r = scan_call(fd, cur, end, &we);
        calls++;
        if (r < 0) return r;
        found += r;
        if (we <= cur) break; /* no progress: avoid spinning */
        cur = (uintptr_t)we;
    }
    if (found == 0) {
        /* Nothing present: perhaps the target has exited. The PAGEMAP_SCAN ioctl does not say so
         * (on 6.x kernels it walks the exited process's empty address space and returns no
         * regions), but a read of the same pagemap does: 0 bytes once the mm is gone. One 8-byte
         * read, only when the scan found nothing to warm anyway. */
        uint64_t entry;
        off_t off = (off_t)(addr / ptwarm_prim_page_size() * sizeof entry);
        ssize_t n = pread(fd, &entry, sizeof entry, off);
        if (n < 0) return errno == ESRCH ? -ESRCH : -errno;
        if (n == 0) return -ESRCH;
    }
    return calls;
}

long ptwarm_prim_pagemap_read(int fd, uintptr_t addr, size_t len, uint64_t *buf) {
    size_t pg = ptwarm_prim_page_size();
    size_t bytes = len / pg * sizeof(uint64_t);
    off_t off = (off_t)(addr / pg * sizeof(uint64_t));
    ssize_t r = pread(fd, buf, bytes, off);
    if (r < 0) return errno == ESRCH ? -ESRCH : -errno;
    if (r == 0 && bytes > 0) return -ESRCH; /* the mm is gone: the process exited */
    return 1;
}

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif

int ptwarm_prim_pidfd_open(pid_t pid) {
    long fd = syscall(SYS_pidfd_open, pid ? pid : getpid(), 0);
    return fd < 0 ? -errno : (int)fd;
}

int ptwarm_prim_willneed(int pidfd, uintptr_t addr, size_t len) {
    /* One call advises at most MAX_RW_COUNT (2 GiB - 4 KiB) bytes; batches are far smaller. */
    struct iovec iov = {(void *)addr, len};
    long r = syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_WILLNEED, 0);
    return r < 0 ? -errno : 0;
}
