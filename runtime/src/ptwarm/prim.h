/* OS primitives of the page-table warmer (ptwarm.c), implemented for Linux in prim_linux.c.
 * Internal: not installed, not part of the public API. All return 0 or a negative errno. */
#ifndef TLBLAB_PTWARM_PRIM_H
#define TLBLAB_PTWARM_PRIM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PTWARM_PRIM_MAX_CPUS 1024

uint64_t ptwarm_prim_now_ns(void);
size_t ptwarm_prim_page_size(void);
int ptwarm_prim_ncpus(void);          /* CPUs configured (highest id + 1) */
int ptwarm_prim_cpu_online(int cpu);  /* 1 if online and in our affinity mask's universe, else 0 */
int ptwarm_prim_current_cpu(void);
pid_t ptwarm_prim_gettid(void);
/* The CPU thread `tid` of process `pid` last ran on (field 39 of /proc/pid/task/tid/stat). */
int ptwarm_prim_thread_cpu(pid_t pid, pid_t tid, int *cpu);
int ptwarm_prim_pid_alive(pid_t pid); /* 1 alive, 0 gone */
int ptwarm_prim_pin_self(int cpu);
int ptwarm_prim_unpin_self(void);     /* allow every CPU again */
/* The calling thread's affinity mask, saved and restored as an opaque blob. */
typedef struct {
    unsigned long bits[PTWARM_PRIM_MAX_CPUS / (8 * sizeof(unsigned long))];
} ptwarm_prim_affinity;
int ptwarm_prim_affinity_save(ptwarm_prim_affinity *a);
void ptwarm_prim_affinity_restore(const ptwarm_prim_affinity *a);
pid_t ptwarm_prim_getpid(void);
/* pthread_create with the new thread's affinity set at creation: `cpu` alone, or every CPU if cpu < 0.
 * (A thread that inherits a busy CPU's mask and must first run there to move itself may never get to
 * run if that CPU's owner is a real-time thread.) Returns 0 or -errno. */
int ptwarm_prim_thread_create(pthread_t *t, void *(*fn)(void *), void *arg, int cpu, int detached);
/* Does `a` share its highest-level cache with `b` according to sysfs? 1 yes, 0 no, <0 unknown. */
int ptwarm_prim_share_llc(int a, int b);
/* The data or unified caches sysfs lists for `cpu` (/sys/devices/system/cpu/cpuN/cache/index*): the
 * largest one below the last level (the L2 on x86) in *below_llc (0 if there is none), the last
 * level's in *llc. 0, or -ENOENT if sysfs lists no sized cache. */
int ptwarm_prim_cache_sizes(int cpu, size_t *below_llc, size_t *llc);
/* Is `b` an SMT sibling of `a` according to sysfs? 1 yes, 0 no, <0 unknown. */
int ptwarm_prim_smt_sibling(int a, int b);
void ptwarm_prim_pause(unsigned n);
/* mincore over [addr,addr+len): 0, -ENOMEM (some of it unmapped), or another -errno. vec must hold
 * len/page bytes. */
int ptwarm_prim_mincore(uintptr_t addr, size_t len, unsigned char *vec);
/* Calls fn(ctx, lo, hi) for each mapping of this process that intersects [addr, addr+len), clipped.
 * Returns 0 or -errno (cannot read /proc/self/maps). */
int ptwarm_prim_for_each_mapping(uintptr_t addr, size_t len,
                                 void (*fn)(void *ctx, uintptr_t lo, uintptr_t hi), void *ctx);
/* Opens /proc/PID/pagemap (pid 0 = self). Returns an fd or -errno. */
int ptwarm_prim_pagemap_open(pid_t pid);
void ptwarm_prim_close(int fd);
/* 1 if the PAGEMAP_SCAN ioctl works on fd, 0 if the kernel lacks it. */
int ptwarm_prim_pagemap_scan_supported(int fd);
/* Walks [addr,addr+len) with PAGEMAP_SCAN (present pages only). Returns the number of ioctl calls (>0)
 * or -errno. */
long ptwarm_prim_pagemap_scan(int fd, uintptr_t addr, size_t len);
/* Reads the pagemap entries of [addr,addr+len) into buf (len/page * 8 bytes). Returns 1 (one syscall),
 * -ESRCH if the process is gone (short read of 0), or -errno. */
long ptwarm_prim_pagemap_read(int fd, uintptr_t addr, size_t len, uint64_t *buf);

/* pidfd of pid (0 = self), or -errno. */
int ptwarm_prim_pidfd_open(pid_t pid);
/* process_madvise(pidfd, [addr,addr+len), MADV_WILLNEED): 0, -ENOMEM if part of the range is unmapped
 * (the mapped parts were still advised), -ESRCH if the process is gone, or -errno. */
int ptwarm_prim_willneed(int pidfd, uintptr_t addr, size_t len);

#endif
