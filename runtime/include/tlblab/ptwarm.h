/* ptwarm: a page-table warming helper thread for stock Linux (PT-Baker, seed 001).
 *
 * A helper thread keeps the page-table entries (PTEs) of registered regions in the cache hierarchy
 * that the application's core shares, so the application's hardware page walks after a TLB miss hit
 * in the cache instead of DRAM (seed 001 §4.1). Five ways to make the PTE lines come in:
 *
 *   PTWARM_MODE_TOUCH     one 1-byte load every `stride_pages` pages: the helper's own TLB misses walk
 *                         the page table (seed 001 §4.2, Algorithm 2). Also pulls in one data line per
 *                         access. The application MUST keep touch-registered regions mapped until
 *                         ptwarm_unregister() returns: a load from an unmapped page is a SIGSEGV.
 *   PTWARM_MODE_PREFETCH  `prefetcht0` every `stride_pages` pages (seed 001 §6.3.2). On Zen 3 a software
 *                         prefetch walks the page table (seed 001 §4.4.3.1). A prefetch never faults, so
 *                         unmapped pages are harmless.
 *   PTWARM_MODE_MINCORE   mincore(2) over the region: the kernel reads every PTE of the range and touches
 *                         no application data; the stock-kernel stand-in for the seed's new system call
 *                         (seed 001 §4.3). Unmapped holes (ENOMEM) are skipped by splitting the range at
 *                         the mappings listed in /proc/self/maps.
 *   PTWARM_MODE_PAGEMAP   the PAGEMAP_SCAN ioctl (Linux >= 6.7) on /proc/PID/pagemap, else pread() of the
 *                         pagemap; this also works for ANOTHER process (config.pid), the seed's "future
 *                         work" (seed 001 §8). Regions are then addresses in that process.
 *   PTWARM_MODE_WILLNEED  process_madvise(pidfd, MADV_WILLNEED) (Linux >= 5.10): on anonymous memory the
 *                         kernel walks every PTE of the range looking for swapped-out pages and touches
 *                         nothing else; measured here at 1.2 ns per page (mincore: 1.6-1.8, PAGEMAP_SCAN:
 *                         about 14). Works for this process or ANOTHER one (config.pid; needs
 *                         CAP_SYS_NICE and ptrace-read access to it). Register ANONYMOUS memory only:
 *                         on file-backed mappings WILLNEED starts read-ahead I/O, and on swapped-out
 *                         pages it starts swap-in.
 *
 * Measured on the 2-vCPU Zen 3 VM this was written on (docs/ptwarm.md, `tlblab host ptwarm`): mincore
 * over an 8 GiB region of 4 KiB pages speeds a dependent random chase by about 12 % (10-15 % per run,
 * paired rounds, controls at -2..+1 %) while the two cores share the L3, and costs about 5 % when they
 * do not; the notes' quiet-machine study saw 15-21 %. So the helper checks LLC sharing: the sysfs
 * topology, and (default) a timing probe that measures how fast the helper reads lines the
 * application's core has just read. When they do not share the LLC, the helper idles (measured: within
 * 1 % of no helper) and re-checks every `recheck_ns` (a VM's vCPUs can move between L3s at any time).
 *
 * Threading: every function except ptwarm_destroy() may be called from any thread at any time;
 * register/unregister may run concurrently with the helper. Functions of one handle are serialised by
 * an internal mutex held only briefly (never while the helper warms a batch). Errors are returned as
 * negative errno values.
 */
#ifndef TLBLAB_PTWARM_H
#define TLBLAB_PTWARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How the helper makes the PTE lines come into the cache (see the file comment). */
typedef enum {
    PTWARM_MODE_TOUCH = 0,
    PTWARM_MODE_PREFETCH = 1,
    PTWARM_MODE_MINCORE = 2,
    PTWARM_MODE_PAGEMAP = 3,
    PTWARM_MODE_WILLNEED = 4,
} ptwarm_mode;

/* Which CPU the helper runs on (seed 001 §4.4.5). */
typedef enum {
    PTWARM_PLACE_LLC = 0,  /* another CPU that shares the last-level cache with the application's CPU */
    PTWARM_PLACE_SMT = 1,  /* the application CPU's SMT sibling; falls back to PTWARM_PLACE_LLC if none */
    PTWARM_PLACE_CPU = 2,  /* exactly config.cpu */
    PTWARM_PLACE_ANY = 3,  /* not pinned; the scheduler decides (the LLC check still runs) */
} ptwarm_placement;

/* Whether the helper verifies that its CPU shares the LLC with the application's before warming. */
typedef enum {
    PTWARM_LLC_CHECK_PROBE = 0,    /* sysfs topology, then the timing probe decides (the host may move a
                                      VM's vCPUs between L3s behind sysfs's back) */
    PTWARM_LLC_CHECK_TOPOLOGY = 1, /* sysfs topology only */
    PTWARM_LLC_CHECK_OFF = 2,      /* always warm */
    PTWARM_LLC_CHECK_AUTO = 3,     /* the default: sysfs topology decides where it knows (the probe still
                                      runs, and where its timing says "not shared" against sysfs's
                                      "shared", sysfs wins: llc_probe_overruled); the probe decides where
                                      sysfs lists no LLC. The probe alone (PROBE) idled the helper in
                                      every round on an Intel VM where mincore warming measured +18.3 %
                                      (issue 90): its timing did not predict the gain. */
} ptwarm_llc_check;

/* What the helper is doing, as decided at its last check. */
typedef enum {
    PTWARM_STATE_STOPPED = 0, /* not started, or stopped by ptwarm_stop: never while the helper runs */
    PTWARM_STATE_WARMING = 1,
    PTWARM_STATE_IDLE_NO_REGIONS = 2,
    PTWARM_STATE_IDLE_LLC_NOT_SHARED = 3, /* the timing probe says the cores do not share an LLC */
    PTWARM_STATE_IDLE_TOPOLOGY = 4,       /* sysfs says the helper's CPU does not share the LLC */
    PTWARM_STATE_IDLE_SAME_CPU = 5,       /* no CPU other than the application's is available */
    PTWARM_STATE_TARGET_GONE = 6,         /* PAGEMAP/WILLNEED: the target process exited; the helper ended */
    PTWARM_STATE_FAILED = 7,              /* an unexpected OS error ended the helper (see last_errno) */
    PTWARM_STATE_CHECKING = 8,            /* started, its first placement check (the timing probe: up to
                                             0.5 s on a busy CPU) not decided yet */
} ptwarm_state;

typedef struct {
    ptwarm_mode mode;
    size_t stride_pages;       /* TOUCH/PREFETCH: one access every S pages (seed 001 §4.4.1); default 8 */
    size_t batch_pages;        /* pages per batch: the unit between stop checks, and per syscall in
                                  MINCORE/PAGEMAP; default 16384 (64 MiB of 4 KiB pages) */
    unsigned nops;             /* throttle: `pause` instructions after every access (TOUCH/PREFETCH) or
                                  every batch (MINCORE/PAGEMAP) (seed 001 §4.4.4, "NOP"); default 0 */
    uint64_t sleep_ns;         /* throttle: sleep between sweeps (seed 001 §4.4.4, "sleep"); default 0 */
    ptwarm_placement placement;
    int cpu;                   /* PTWARM_PLACE_CPU: the CPU; otherwise ignored */
    int app_cpu;               /* the application's CPU; -1 (default) = follow the thread app_tid */
    pid_t pid;                 /* PAGEMAP/WILLNEED: the process to warm; 0 (default) = this process */
    pid_t app_tid;             /* the application thread whose CPU is followed; 0 (default) = the thread
                                  calling ptwarm_start(), or `pid` itself in PAGEMAP mode for another pid */
    ptwarm_llc_check llc_check;
    uint64_t recheck_ns;       /* period of the LLC check, warming or idle; default 2 s */
    double probe_threshold_ns; /* probe: ns per line at or above which the LLC counts as not shared;
                                  default 40 (measured here: 16-24 shared, 56-115 apart) */
    bool pagemap_read;         /* PAGEMAP: use pread() even if PAGEMAP_SCAN exists (for comparisons) */
} ptwarm_config;

typedef uint64_t ptwarm_region_id; /* never 0 for a registered region */

/* Diagnostics, a consistent snapshot (o1heap's O1HeapDiagnostics in spirit). */
typedef struct {
    ptwarm_state state;
    int helper_cpu;            /* -1 when unknown/unpinned */
    int app_cpu;               /* -1 when unknown */
    size_t regions;            /* registered now */
    uint64_t sweeps;           /* completed passes over all registered regions */
    uint64_t pages;            /* pages covered (a region's pages count once per sweep, whatever the stride) */
    uint64_t accesses;         /* loads/prefetches issued, or syscalls made */
    uint64_t last_sweep_ns;    /* wall time of the last completed sweep */
    uint64_t warm_ns;          /* total time spent warming */
    uint64_t idle_ns;          /* total time idle (no regions, or LLC not shared, or sleeping) */
    uint64_t unmapped_skips;   /* batches with unmapped parts (mincore/madvise ENOMEM; the rest is warmed) */
    uint64_t errors;           /* other failed syscalls (the helper carries on) */
    int last_errno;
    uint64_t llc_checks;       /* LLC checks made */
    uint64_t llc_shared;       /* ... that found the LLC shared */
    uint64_t llc_not_shared;   /* ... that found it not shared (the helper then idled) */
    double last_probe_ns;      /* last probe result, ns per line; < 0 if no probe ran */
    bool pagemap_scan;         /* PAGEMAP mode: true = PAGEMAP_SCAN ioctl, false = pread() */
    uint64_t llc_probe_overruled; /* AUTO: checks whose probe said "not shared" where sysfs says shared
                                     (counted in llc_shared: sysfs decided) */
} ptwarm_stats;

typedef struct ptwarm ptwarm_t;

/* Fills *cfg with the defaults listed above (MINCORE, LLC placement, probe check). O(1). */
void ptwarm_config_default(ptwarm_config *cfg);

/* Creates a stopped warmer. O(1). Returns 0, -EINVAL (bad mode/placement/stride/batch/threshold, or a
 * pid in a mode other than PAGEMAP/WILLNEED), -ENOMEM. The configuration is copied. */
int ptwarm_create(const ptwarm_config *cfg, ptwarm_t **out);

/* Stops the helper if running and frees everything. NULL is allowed. Bounded like ptwarm_stop(). */
void ptwarm_destroy(ptwarm_t *w);

/* Starts the helper thread. Returns 0, -EALREADY if running, -ENOENT/-EACCES/-ESRCH if PAGEMAP mode
 * cannot open /proc/PID/pagemap or WILLNEED mode cannot open a pidfd, -ENOSYS/-EPERM if WILLNEED mode
 * finds no process_madvise or no permission, -EINVAL if PTWARM_PLACE_CPU names a CPU that does not
 * exist, or the error of pthread_create. Placement and the first LLC check happen on the helper. */
int ptwarm_start(ptwarm_t *w);

/* Stops and joins the helper. Returns within one batch plus one probe: a few ms with the defaults
 * (a 64 MiB mincore batch takes about 25 us, a probe about 2 ms), at worst 500 ms if a probe waits for
 * an application CPU owned by a real-time thread. Returns 0, or -EALREADY if not running. Statistics
 * survive and accumulate. Not concurrently with ptwarm_destroy(). */
int ptwarm_stop(ptwarm_t *w);

/* Registers [addr, addr+len), rounded outwards to whole pages, running or not. O(regions) amortised.
 * Returns 0 and *id, -EINVAL (len 0 or wraps), -ENOMEM. Overlapping regions are allowed (warmed twice).
 * TOUCH mode: the range must stay mapped and readable until ptwarm_unregister() returns. */
int ptwarm_register(ptwarm_t *w, const void *addr, size_t len, ptwarm_region_id *id);

/* Unregisters a region. When it returns, the helper is not inside the region and never will be again,
 * so the caller may unmap it. Waits at most for the batch in progress. Returns 0 or -ENOENT. */
int ptwarm_unregister(ptwarm_t *w, ptwarm_region_id id);

/* Runs exactly one sweep over the registered regions on the calling thread, with no placement or LLC
 * check (for tests, one-shot warming and measuring the cost of a sweep). Returns 0, -EBUSY if the
 * helper is running, or -ESRCH if the PAGEMAP target is gone. Counts in the statistics. */
int ptwarm_sweep_once(ptwarm_t *w);

/* Copies the statistics. O(1). */
void ptwarm_get_stats(ptwarm_t *w, ptwarm_stats *out);

/* Checks internal consistency (region table sorted by id, ids unique and non-zero, no empty region,
 * counters coherent). O(regions). Returns true if all hold. */
bool ptwarm_invariants_hold(ptwarm_t *w);

/* The bytes of other lines that fill `cpu`'s private caches without filling its last level: twice the
 * largest data or unified cache below the last level that sysfs lists for the CPU
 * (/sys/devices/system/cpu/cpuN/cache/index*: the L2 on x86, 2 MiB for a 1 MiB Zen 5 L2), at least
 * 1 MiB and at most half the last level (never below that cache's own size). If sysfs lists no such cache: 1 MiB, and *from_sysfs (if
 * not NULL) is set to 0 (else 1). The LLC probe's chain and migrate_bench's eviction use it. */
size_t ptwarm_private_cache_fill_bytes(int cpu, int *from_sysfs);

/* The LLC-sharing timing probe, usable on its own: a thread pinned on cpu_app reads a random chain of
 * ptwarm_private_cache_fill_bytes(cpu_app) bytes, one pointer per line, twice, then the calling thread, pinned on cpu_helper for the duration, chases it and reports the
 * ns per line in *ns_per_line (about 17-24 ns when the cores share the L3 here, 56-115 ns when not).
 * Restores the caller's affinity. Takes about 2 ms per MiB of chain, three quarters of it on cpu_app. Returns 0,
 * -EINVAL (same or bad CPU), -ENOMEM, -ETIMEDOUT if the thread on cpu_app did not get to run within
 * 500 ms (a real-time application owning that CPU), or a pthread/sched error. */
int ptwarm_llc_probe(int cpu_app, int cpu_helper, double *ns_per_line);

/* Names, for reports: "touch", "prefetch", "mincore", "pagemap", "willneed"; states as in the enum,
 * lower case. */
const char *ptwarm_mode_name(ptwarm_mode m);
const char *ptwarm_state_name(ptwarm_state s);
/* Parses a mode name; returns 0 and *m, or -EINVAL. */
int ptwarm_mode_parse(const char *name, ptwarm_mode *m);

#ifdef __cplusplus
}
#endif
#endif /* TLBLAB_PTWARM_H */
