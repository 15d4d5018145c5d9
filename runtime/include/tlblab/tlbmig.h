/* tlbmig: re-warm the TLB after a thread migration, on stock Linux (seed 000, "TLB migration").
 *
 * Seed 000 (Landsberg 2018, §3.1, §4.3) saves a thread's TLB entries on the old core and restores them on
 * the new one with `pld`, which needs kernel support. On stock Linux a thread can do the restore half
 * itself: it registers the pages it is about to revisit, and at points it chooses calls tlbmig_check(),
 * which notices a change of CPU (one load of the rseq cpu_id that glibc registers, else sched_getcpu())
 * and issues one software prefetch per registered page, up to a cap. On x86 (Zen 3
 * measured) a prefetch walks the page table and fills the TLB, like the seed's `pld` (§4.2).
 *
 * When it pays (measured on this VM with `tlblab host migrate`, docs/ptwarm.md): right after a
 * migration, a DEPENDENT pass over N pages (pointer chasing) is 1.4-4.2x faster with the re-warm for N
 * from 8-16 to 1024 pages. Below that it loses: right after the migration the re-warm finds its own
 * handle and code cold on the new core (about 200 ns). At 2048 pages (the L2 DTLB's size) it breaks
 * even, at 4096 it loses: the prefetched entries evict each other. For INDEPENDENT loads the
 * out-of-order core already overlaps the walks: the re-warm costs 7-20 % up to 16-48 pages, is within
 * +-10 % from 64 to 1024 pages, and costs 36-72 % from 2048 pages. So use it for latency-bound phases,
 * and keep the cap (default 1024) below the L2 DTLB.
 *
 * A handle belongs to one thread: it is not thread-safe, and tlbmig_check() must be called by the thread
 * whose migrations it tracks. Registered addresses are only prefetched, never dereferenced, so a stale or
 * unmapped address is harmless (prefetches do not fault). Errors are negative errno values.
 */
#ifndef TLBLAB_TLBMIG_H
#define TLBLAB_TLBMIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    size_t cap_pages;  /* at most this many prefetches per detected migration; default 1024 */
    bool use_rseq;     /* read the CPU from glibc's rseq area when registered; default true */
} tlbmig_config;

typedef struct {
    uint64_t checks;          /* tlbmig_check() calls */
    uint64_t migrations;      /* CPU changes seen by tlbmig_check() */
    uint64_t rewarms;         /* re-warms done (migrations plus explicit tlbmig_rewarm() calls) */
    uint64_t pages_rewarmed;  /* prefetches issued */
    uint64_t capped;          /* re-warms cut short by cap_pages */
    size_t pages;             /* pages registered now (sum over regions) */
    size_t regions;           /* registered spans */
    int last_cpu;             /* CPU at the last check (-1 before the first) */
    bool rseq;                /* true if the CPU comes from rseq, false if from sched_getcpu() */
} tlbmig_stats;

typedef struct tlbmig tlbmig_t;
typedef uint64_t tlbmig_region_id; /* never 0 for a registered span */

/* Fills *cfg with the defaults. O(1). */
void tlbmig_config_default(tlbmig_config *cfg);

/* Creates a handle with no pages for the calling thread and records its current CPU. O(1).
 * Returns 0, -EINVAL (cap_pages 0), -ENOMEM. */
int tlbmig_create(const tlbmig_config *cfg, tlbmig_t **out);

/* Frees the handle. NULL is allowed. O(1). */
void tlbmig_destroy(tlbmig_t *t);

/* Registers one address; the re-warm prefetches exactly its cache line (so pass the address the code
 * will load). O(1) amortised. Returns 0 and *id (may be NULL), or -ENOMEM. */
int tlbmig_add_page(tlbmig_t *t, const void *addr, tlbmig_region_id *id);

/* Registers [addr, addr+len) to be prefetched every `stride` bytes, starting at addr (stride 0 = the
 * page size; the seed's 68 KiB benchmark stride, 69632, gives each page its own PTE line). Counts as
 * ceil(len/stride) pages. O(1) amortised. Returns 0 and *id (may be NULL), -EINVAL (len 0), -ENOMEM. */
int tlbmig_add_region(tlbmig_t *t, const void *addr, size_t len, size_t stride, tlbmig_region_id *id);

/* Removes a span. O(spans). Returns 0 or -ENOENT. */
int tlbmig_remove(tlbmig_t *t, tlbmig_region_id id);

/* Removes everything. O(1). */
void tlbmig_clear(tlbmig_t *t);

/* The cheap check: if the calling thread runs on a different CPU than at the last check (or than at
 * creation), re-warms (prefetches registered pages in registration order, up to cap_pages) and returns
 * the number of prefetches; otherwise returns 0. O(1) without a migration; O(min(pages, cap)) with one.
 * Cost without a migration, measured here (migrate_bench "check_ns"): 2.5 ns with rseq (a call and one
 * load of the cpu_id the handle cached at creation), 6.2 ns through sched_getcpu(). */
size_t tlbmig_check(tlbmig_t *t);

/* Re-warms unconditionally (for callers that know they migrated, e.g. right after sched_setaffinity).
 * Returns the number of prefetches. O(min(pages, cap)). */
size_t tlbmig_rewarm(tlbmig_t *t);

/* The CPU the calling thread runs on, by the same cheap mechanism tlbmig_check() uses; -1 on error. */
int tlbmig_current_cpu(const tlbmig_t *t);

/* Copies the statistics. O(1). */
void tlbmig_get_stats(const tlbmig_t *t, tlbmig_stats *out);

/* Checks internal consistency (ids unique, increasing, non-zero; page count matches). O(spans). */
bool tlbmig_invariants_hold(const tlbmig_t *t);

#ifdef __cplusplus
}
#endif
#endif /* TLBLAB_TLBMIG_H */
