/* Behaviour tests of the page-table warmer (tlblab/ptwarm.h): configuration checks, one sweep per mode
 * with exact counts, unmapped and shrinking regions, start/stop (and how long a stop takes), register/
 * unregister races against a running TOUCH helper (a broken "unregister, then munmap" guarantee would
 * crash here), the LLC check idling the helper, and PAGEMAP mode on another process that then exits.
 * `--quick` (used under valgrind) shortens the loops. `--case NAME` runs one case only: the cases
 * that need what a machine may lack (two CPUs, process_madvise) run only that way, as their own
 * ctest tests, and exit 77 (ctest's SKIP_RETURN_CODE) when they cannot run, so ctest reports them
 * "skipped", not passed. Exit status 0 = all passed, 1 = a check failed. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tlblab/ptwarm.h"

#include "check.h"

static int quick;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *map_pages(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    memset(p, 1, bytes); /* populate: present PTEs */
    return p;
}

static ptwarm_config cfg_for(ptwarm_mode m) {
    ptwarm_config c;
    ptwarm_config_default(&c);
    c.mode = m;
    c.placement = PTWARM_PLACE_ANY;
    c.llc_check = PTWARM_LLC_CHECK_OFF;
    return c;
}

/* Polls the stats until pred() holds or the timeout passes; returns the last snapshot. Tests wait for
 * conditions, never for fixed times: the machine is shared and valgrind is slow. */
typedef int (*stats_pred)(const ptwarm_stats *s, uint64_t arg);
static ptwarm_stats poll_until(ptwarm_t *w, stats_pred pred, uint64_t arg, unsigned timeout_ms) {
    ptwarm_stats s;
    uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
    do {
        ptwarm_get_stats(w, &s);
        if (pred(&s, arg)) break;
        sleep_ms(2);
    } while (now_ns() < end);
    return s;
}
static int state_is(const ptwarm_stats *s, uint64_t st) { return s->state == (ptwarm_state)st; }
static int checks_at_least(const ptwarm_stats *s, uint64_t n) { return s->llc_checks >= n; }
static int probed_shared(const ptwarm_stats *s, uint64_t n) { return s->llc_shared >= n && s->last_probe_ns > 0; }

/* Polls the stats until sweeps >= n or timeout; returns the last snapshot. */
static ptwarm_stats wait_sweeps(ptwarm_t *w, uint64_t n, unsigned timeout_ms) {
    ptwarm_stats s;
    uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;
    do {
        ptwarm_get_stats(w, &s);
        if (s.sweeps >= n) break;
        sleep_ms(2);
    } while (now_ns() < end);
    return s;
}

/* WILLNEED needs pidfd_open and process_madvise (Linux >= 5.10); valgrind 3.19 knows neither.
 * 0 if available, else the error. */
static int willneed_unavailable(void) {
    ptwarm_config c = cfg_for(PTWARM_MODE_WILLNEED);
    ptwarm_t *w = NULL;
    int rc = ptwarm_create(&c, &w);
    if (rc != 0) return rc;
    rc = ptwarm_sweep_once(w);
    ptwarm_destroy(w);
    return rc;
}

static void test_config_is_validated(void) {
    ptwarm_t *w = NULL;
    ptwarm_config c = cfg_for(PTWARM_MODE_TOUCH);
    c.stride_pages = 0;
    CHECK(ptwarm_create(&c, &w) == -EINVAL);
    c = cfg_for(PTWARM_MODE_MINCORE);
    c.pid = 1; /* another process only makes sense for PAGEMAP */
    CHECK(ptwarm_create(&c, &w) == -EINVAL);
    c = cfg_for(PTWARM_MODE_MINCORE);
    c.probe_threshold_ns = 0;
    CHECK(ptwarm_create(&c, &w) == -EINVAL);
    c = cfg_for((ptwarm_mode)9);
    CHECK(ptwarm_create(&c, &w) == -EINVAL);
    ptwarm_mode m;
    CHECK(ptwarm_mode_parse("mincore", &m) == 0 && m == PTWARM_MODE_MINCORE);
    CHECK(ptwarm_mode_parse("bogus", &m) == -EINVAL);
    CHECK(strcmp(ptwarm_state_name(PTWARM_STATE_IDLE_LLC_NOT_SHARED), "idle_llc_not_shared") == 0);
    c = cfg_for(PTWARM_MODE_MINCORE);
    c.placement = PTWARM_PLACE_CPU;
    c.cpu = 100000;
    CHECK(ptwarm_create(&c, &w) == 0);
    CHECK(ptwarm_start(w) == -EINVAL); /* a CPU that does not exist */
    CHECK(ptwarm_register(w, w, 0, NULL) == -EINVAL);
    CHECK(ptwarm_unregister(w, 12345) == -ENOENT);
    CHECK(ptwarm_stop(w) == -EALREADY);
    CHECK(ptwarm_invariants_hold(w));
    ptwarm_destroy(w);
}

/* Given a 4 MiB populated region, one sweep in each mode from `first` to `last` covers 1024 pages
 * with the expected number of accesses: 1024/8 loads or prefetches, one mincore call per 256-page
 * batch. */
static void one_sweep_counts_exactly(int first, int last) {
    const size_t pages = 1024, bytes = pages * 4096;
    char *r = map_pages(bytes);
    for (int m = first; m <= last; m++) {
        ptwarm_config c = cfg_for((ptwarm_mode)m);
        c.batch_pages = 256;
        ptwarm_t *w = NULL;
        CHECK(ptwarm_create(&c, &w) == 0);
        ptwarm_region_id id = 0;
        CHECK(ptwarm_register(w, r + 100, bytes - 100, &id) == 0 && id != 0); /* rounded to pages */
        CHECK(ptwarm_sweep_once(w) == 0);
        ptwarm_stats s;
        ptwarm_get_stats(w, &s);
        CHECK(s.sweeps == 1);
        CHECK(s.pages == pages);
        CHECK(s.errors == 0);
        CHECK(s.unmapped_skips == 0);
        if (m == PTWARM_MODE_TOUCH || m == PTWARM_MODE_PREFETCH) CHECK(s.accesses == pages / 8);
        if (m == PTWARM_MODE_MINCORE || m == PTWARM_MODE_WILLNEED) CHECK(s.accesses == pages / 256);
        if (m == PTWARM_MODE_PAGEMAP) CHECK(s.accesses >= pages / 256);
        CHECK(s.last_sweep_ns > 0 && s.warm_ns >= s.last_sweep_ns);
        CHECK(s.regions == 1);
        CHECK(ptwarm_invariants_hold(w));
        CHECK(ptwarm_unregister(w, id) == 0);
        CHECK(ptwarm_sweep_once(w) == 0); /* nothing registered: an empty sweep */
        ptwarm_get_stats(w, &s);
        CHECK(s.pages == pages && s.regions == 0);
        ptwarm_destroy(w);
    }
    munmap(r, bytes);
}

static void test_one_sweep_per_mode_counts_exactly(void) {
    one_sweep_counts_exactly(PTWARM_MODE_TOUCH, PTWARM_MODE_PAGEMAP); /* WILLNEED: its own case */
}

/* Given a registered region with a hole punched in it (and one region unmapped entirely), mincore mode
 * skips the unmapped parts without error, prefetch never faults, pagemap reads zeros. */
static void unmapped_regions_are_skipped(int first, int last) {
    const size_t bytes = 2u << 20;
    char *r = map_pages(bytes);
    char *gone = map_pages(bytes);
    munmap(r + (512u << 10), 256u << 10); /* a hole */
    munmap(gone, bytes);                  /* the application forgot to unregister */
    for (int m = first; m <= last; m++) {
        ptwarm_config c = cfg_for((ptwarm_mode)m);
        c.batch_pages = 128;
        ptwarm_t *w = NULL;
        CHECK(ptwarm_create(&c, &w) == 0);
        CHECK(ptwarm_register(w, r, bytes, NULL) == 0);
        CHECK(ptwarm_register(w, gone, bytes, NULL) == 0);
        CHECK(ptwarm_sweep_once(w) == 0);
        ptwarm_stats s;
        ptwarm_get_stats(w, &s);
        CHECK(s.sweeps == 1);
        CHECK(s.errors == 0);
        if (m == PTWARM_MODE_MINCORE || m == PTWARM_MODE_WILLNEED) {
            /* 1 batch of the first region holds the hole; all 4 of the second region are unmapped */
            CHECK(s.unmapped_skips == 1 + 4);
        }
        ptwarm_destroy(w);
    }
    munmap(r, bytes);
}

static void test_unmapped_and_shrinking_regions_are_safe(void) {
    const size_t bytes = 2u << 20;
    unmapped_regions_are_skipped(PTWARM_MODE_PREFETCH, PTWARM_MODE_PAGEMAP); /* WILLNEED: own case */
    /* A region that shrinks while the helper runs (mremap to a quarter, in place). */
    ptwarm_config c = cfg_for(PTWARM_MODE_MINCORE);
    c.batch_pages = 64;
    ptwarm_t *w = NULL;
    CHECK(ptwarm_create(&c, &w) == 0);
    char *s2 = map_pages(bytes);
    CHECK(ptwarm_register(w, s2, bytes, NULL) == 0);
    CHECK(ptwarm_start(w) == 0);
    wait_sweeps(w, 2, 2000);
    CHECK(mremap(s2, bytes, bytes / 4, 0) == s2);
    ptwarm_stats before;
    ptwarm_get_stats(w, &before);
    ptwarm_stats st = wait_sweeps(w, before.sweeps + 3, 2000);
    CHECK(st.sweeps >= before.sweeps + 3);
    CHECK(st.unmapped_skips > 0);
    CHECK(st.errors == 0);
    CHECK(ptwarm_stop(w) == 0);
    ptwarm_destroy(w);
    munmap(s2, bytes / 4);
}

/* Start, sweep, stop, restart: statistics accumulate; a stop returns quickly even with a 16 GiB
 * reservation registered; stopping twice reports -EALREADY. */
static void test_start_stop_is_bounded_and_restartable(void) {
    ptwarm_config c = cfg_for(PTWARM_MODE_MINCORE);
    ptwarm_t *w = NULL;
    CHECK(ptwarm_create(&c, &w) == 0);
    const size_t big = (size_t)16 << 30;
    void *res = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(res != MAP_FAILED);
    char *r = map_pages(1u << 20);
    CHECK(ptwarm_register(w, r, 1u << 20, NULL) == 0);
    CHECK(ptwarm_register(w, res, big, NULL) == 0);
    /* The bound is on the best of the rounds: the property is that a stop does not wait for a
     * sweep of the 16 GiB, and one stop delayed by a busy machine does not say otherwise. */
    uint64_t best_stop_ns = UINT64_MAX;
    for (int round = 0; round < 3; round++) {
        ptwarm_stats s;
        ptwarm_get_stats(w, &s);
        uint64_t before = s.sweeps; /* statistics accumulate across restarts */
        CHECK(ptwarm_start(w) == 0);
        CHECK(ptwarm_start(w) == -EALREADY);
        CHECK(ptwarm_sweep_once(w) == -EBUSY);
        s = wait_sweeps(w, before + 2, 10000);
        s = poll_until(w, state_is, PTWARM_STATE_WARMING, 5000);
        CHECK(s.sweeps >= before + 2);
        CHECK(s.state == PTWARM_STATE_WARMING);
        uint64_t t0 = now_ns();
        CHECK(ptwarm_stop(w) == 0);
        uint64_t dt = now_ns() - t0;
        if (dt < best_stop_ns) best_stop_ns = dt;
        ptwarm_get_stats(w, &s);
        CHECK(s.state == PTWARM_STATE_STOPPED);
        CHECK(ptwarm_stop(w) == -EALREADY);
    }
    /* 100 ms (2 s under valgrind, which serialises the threads): one 64 MiB batch is ~25 us. */
    CHECK(best_stop_ns < (quick ? 2000000000u : 100000000u));
    CHECK(ptwarm_invariants_hold(w));
    ptwarm_destroy(w);
    munmap(res, big);
    munmap(r, 1u << 20);
}

/* With no regions, a started helper idles (state idle_no_regions) and wakes up for a registration. */
static void test_idle_without_regions_then_wakes(void) {
    ptwarm_config c = cfg_for(PTWARM_MODE_PREFETCH);
    ptwarm_t *w = NULL;
    CHECK(ptwarm_create(&c, &w) == 0);
    CHECK(ptwarm_start(w) == 0);
    ptwarm_stats s = poll_until(w, state_is, PTWARM_STATE_IDLE_NO_REGIONS, 5000);
    CHECK(s.state == PTWARM_STATE_IDLE_NO_REGIONS);
    sleep_ms(5);
    ptwarm_get_stats(w, &s);
    CHECK(s.sweeps == 0);
    CHECK(s.idle_ns > 0);
    char *r = map_pages(1u << 20);
    CHECK(ptwarm_register(w, r, 1u << 20, NULL) == 0);
    s = wait_sweeps(w, 1, 5000);
    CHECK(s.sweeps >= 1);
    ptwarm_destroy(w); /* destroy stops a running helper */
    munmap(r, 1u << 20);
}

/* Throttling (seed 001 §4.4.4): with a 20 ms sleep between sweeps, 200 ms hold at most ~11 sweeps and
 * most of the time is idle; `nops` slows a sweep without changing what it covers. Placement on an
 * explicit CPU is honoured and reported. */
static void test_throttling_and_placement(void) {
    char *r = map_pages(1u << 20);
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    int cpu = -1;
    for (int k = CPU_SETSIZE - 1; k >= 0 && cpu < 0; k--)
        if (CPU_ISSET(k, &set)) cpu = k;
    ptwarm_config c = cfg_for(PTWARM_MODE_PREFETCH);
    c.sleep_ns = 20000000u;
    c.placement = PTWARM_PLACE_CPU;
    c.cpu = cpu;
    c.app_cpu = cpu == 0 ? 1 : 0; /* only used for the report here: the LLC check is off */
    ptwarm_t *w = NULL;
    CHECK(ptwarm_create(&c, &w) == 0);
    CHECK(ptwarm_register(w, r, 1u << 20, NULL) == 0);
    CHECK(ptwarm_start(w) == 0);
    ptwarm_stats s0 = wait_sweeps(w, 1, 5000), s;
    uint64_t t0 = now_ns();
    sleep_ms(200);
    ptwarm_get_stats(w, &s);
    uint64_t elapsed_ms = (now_ns() - t0) / 1000000u;
    CHECK(s.sweeps - s0.sweeps <= elapsed_ms / 20 + 1); /* at most one sweep per 20 ms sleep */
    CHECK(s.idle_ns > s.warm_ns);
    CHECK(s.helper_cpu == cpu);
    ptwarm_destroy(w);

    /* The best of 7 interleaved sweeps each: a preemption can only lengthen a sweep, so the
     * fastest of each kind is its cost, and one slow sweep without pauses cannot fail this. */
    uint64_t ns[2] = {UINT64_MAX, UINT64_MAX};
    for (int k = 0; k < 14; k++) {
        int i = k % 2;
        ptwarm_config t = cfg_for(PTWARM_MODE_PREFETCH);
        t.stride_pages = 1;
        t.nops = i ? 2000 : 0;
        CHECK(ptwarm_create(&t, &w) == 0);
        CHECK(ptwarm_register(w, r, 1u << 20, NULL) == 0);
        CHECK(ptwarm_sweep_once(w) == 0);
        ptwarm_get_stats(w, &s);
        CHECK(s.accesses == 256);
        if (s.last_sweep_ns < ns[i]) ns[i] = s.last_sweep_ns;
        ptwarm_destroy(w);
    }
    CHECK(ns[1] > 4 * ns[0]); /* 256 x 2000 pauses: at least ~50 us, against ~1-5 us without */
    munmap(r, 1u << 20);
}

typedef struct {
    ptwarm_t *w;
    int iters;
    unsigned seed;
} churn_arg;

/* mmap, register, let the helper run a little, unregister, munmap: if unregister returned while the
 * TOUCH helper was still inside the region, the helper's next load would SIGSEGV. */
static void *churn(void *arg) {
    churn_arg *a = arg;
    for (int i = 0; i < a->iters; i++) {
        size_t bytes = (size_t)(1 + rand_r(&a->seed) % 64) * 4096;
        char *p = map_pages(bytes);
        ptwarm_region_id id = 0;
        if (ptwarm_register(a->w, p, bytes, &id) != 0) failures++;
        if (rand_r(&a->seed) % 2) sched_yield();
        if (ptwarm_unregister(a->w, id) != 0) failures++;
        munmap(p, bytes);
    }
    return NULL;
}

static void test_register_unregister_races_with_touch_helper(void) {
    ptwarm_config c = cfg_for(PTWARM_MODE_TOUCH);
    c.stride_pages = 1;
    c.batch_pages = 4; /* many batches per region: many chances to be inside one */
    ptwarm_t *w = NULL;
    CHECK(ptwarm_create(&c, &w) == 0);
    char *stay = map_pages(64 * 4096);
    CHECK(ptwarm_register(w, stay, 64 * 4096, NULL) == 0);
    CHECK(ptwarm_start(w) == 0);
    enum { T = 3 };
    pthread_t th[T];
    churn_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (churn_arg){w, quick ? 50 : 400, 1234u + (unsigned)i};
        CHECK(pthread_create(&th[i], NULL, churn, &args[i]) == 0);
    }
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    ptwarm_stats s;
    ptwarm_get_stats(w, &s);
    CHECK(s.regions == 1);
    CHECK(s.sweeps > 0);
    CHECK(s.errors == 0);
    CHECK(ptwarm_invariants_hold(w));
    CHECK(ptwarm_stop(w) == 0);
    ptwarm_destroy(w);
    munmap(stay, 64 * 4096);
}

/* The LLC check: with an impossible threshold the probe must find "not shared" and the helper must
 * idle (no sweeps, idle time grows, decision counted); with the real threshold the probe returns a
 * plausible latency. Needs two CPUs. */
/* The LLC probe's chain and migrate_bench's eviction are sized from the machine, never fixed: twice
 * the L2 (at least 1 MiB, at most half the L3), and 1 MiB when sysfs does not list the CPU. */
static void test_private_cache_fill_is_sized_from_the_machine(void) {
    int fs = -1;
    size_t b = ptwarm_private_cache_fill_bytes(1 << 20, &fs); /* no such CPU */
    CHECK(fs == 0 && b == (size_t)1 << 20);
    CHECK(ptwarm_private_cache_fill_bytes(1 << 20, NULL) == (size_t)1 << 20);
    b = ptwarm_private_cache_fill_bytes(0, &fs);
    CHECK(b % 64 == 0 && b >= (size_t)1 << 20);
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (fs == 1 && l2 > 0 && l3 > 0) /* glibc's view of the same caches, where it has one */
        CHECK(b >= 2 * (size_t)l2 || b == (size_t)l3 / 2);
}

static void test_llc_check_idles_the_helper(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) {
        SKIP("one CPU");
    }
    int a = -1, b = -1;
    for (int k = 0; k < CPU_SETSIZE && b < 0; k++)
        if (CPU_ISSET(k, &set)) {
            if (a < 0)
                a = k;
            else
                b = k;
        }
    double ns = -1;
    int prc = -ETIMEDOUT;
    /* The probe needs both CPUs running at once; under valgrind (threads serialised) or on a busy
     * machine it may time out, which is its contract. Repeated: one success is the measurement. */
    for (int t = 0; t < 5 && prc == -ETIMEDOUT; t++) prc = ptwarm_llc_probe(a, b, &ns);
    if (prc == -ETIMEDOUT) SKIP("the LLC probe timed out 5 times: the two CPUs never ran at once");
    CHECK(prc == 0);
    if (prc == 0) CHECK(ns > 0.1 && ns < 100000.0);
    CHECK(ptwarm_llc_probe(a, a, &ns) == -EINVAL);

    char *r = map_pages(1u << 20);
    ptwarm_config c = cfg_for(PTWARM_MODE_MINCORE);
    c.placement = PTWARM_PLACE_LLC;
    c.llc_check = PTWARM_LLC_CHECK_PROBE;
    c.app_cpu = a;
    c.probe_threshold_ns = 1e-6; /* every real latency is above this: "not shared" */
    c.recheck_ns = 20000000u;    /* 20 ms */
    ptwarm_t *w = NULL;
    CHECK(ptwarm_create(&c, &w) == 0);
    CHECK(ptwarm_register(w, r, 1u << 20, NULL) == 0);
    CHECK(ptwarm_start(w) == 0);
    /* Started, the helper is never "stopped": until its first probe decides, it is "checking" (a
     * snapshot taken then, on a guest whose probe waits long for the application's CPU, once read
     * "stopped"). */
    ptwarm_stats s0;
    ptwarm_get_stats(w, &s0);
    CHECK(s0.state != PTWARM_STATE_STOPPED);
    CHECK(strcmp(ptwarm_state_name(PTWARM_STATE_CHECKING), "checking") == 0);
    ptwarm_stats s = poll_until(w, checks_at_least, 2, 10000);
    CHECK(s.llc_checks >= 2); /* it re-checks periodically */
    if (s.errors == 0) {
        CHECK(s.state == PTWARM_STATE_IDLE_LLC_NOT_SHARED || s.state == PTWARM_STATE_IDLE_TOPOLOGY);
        CHECK(s.sweeps == 0);
        CHECK(s.llc_not_shared == s.llc_checks);
        CHECK(s.idle_ns > 0);
    } else {
        /* a probe that fails (timed out) leaves the decision to the topology: warming is allowed */
        fprintf(stderr, "test_llc_check_idles_the_helper: %llu probe(s) failed (errno %d); idling unchecked\n",
                (unsigned long long)s.errors, s.last_errno);
    }
    CHECK(s.app_cpu == a && s.helper_cpu != a && s.helper_cpu >= 0);
    CHECK(ptwarm_stop(w) == 0);
    ptwarm_destroy(w);

    c.probe_threshold_ns = 1e9; /* everything counts as shared */
    CHECK(ptwarm_create(&c, &w) == 0);
    CHECK(ptwarm_register(w, r, 1u << 20, NULL) == 0);
    CHECK(ptwarm_start(w) == 0);
    s = poll_until(w, probed_shared, 1, 10000);
    CHECK(s.llc_shared >= 1);
    CHECK(s.last_probe_ns > 0 || s.errors > 0); /* a timed-out probe: see above */
    s = wait_sweeps(w, 2, 10000);
    CHECK(s.sweeps >= 2);
    ptwarm_destroy(w);
    munmap(r, 1u << 20);
}

static void other_process_case(ptwarm_mode mode) {
    const size_t bytes = 1u << 20;
    char *r = map_pages(bytes); /* inherited by the child at the same address */
    pid_t child = fork();
    if (child == 0) {
        for (;;) pause();
    }
    CHECK(child > 0);
    ptwarm_config c = cfg_for(mode);
    c.pid = child;
    c.recheck_ns = 10000000u;
    ptwarm_t *w = NULL;
    CHECK(ptwarm_create(&c, &w) == 0);
    CHECK(ptwarm_register(w, r, bytes, NULL) == 0);
    CHECK(ptwarm_sweep_once(w) == 0);
    ptwarm_stats s;
    ptwarm_get_stats(w, &s);
    CHECK(s.sweeps == 1 && s.errors == 0 && s.accesses >= 1);
    CHECK(ptwarm_start(w) == 0);
    wait_sweeps(w, 3, 2000);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    uint64_t end = now_ns() + 2000000000u;
    do {
        ptwarm_get_stats(w, &s);
        if (s.state == PTWARM_STATE_TARGET_GONE) break;
        sleep_ms(5);
    } while (now_ns() < end);
    CHECK(s.state == PTWARM_STATE_TARGET_GONE);
    CHECK(ptwarm_stop(w) == 0);
    CHECK(ptwarm_sweep_once(w) == -ESRCH);
    ptwarm_destroy(w);
    munmap(r, bytes);
}

/* PAGEMAP and WILLNEED modes on another process: warming works while it lives; once it has exited, a
 * sweep reports -ESRCH and a running helper ends in state target_gone. */
static void test_other_process_until_it_exits(void) {
    other_process_case(PTWARM_MODE_PAGEMAP);
}

static void test_willneed_on_another_process_until_it_exits(void) {
    int rc = willneed_unavailable();
    if (rc != 0) {
        char why[160];
        snprintf(why, sizeof why, "WILLNEED mode unavailable here: %s", strerror(-rc));
        SKIP(why);
    }
    one_sweep_counts_exactly(PTWARM_MODE_WILLNEED, PTWARM_MODE_WILLNEED);
    unmapped_regions_are_skipped(PTWARM_MODE_WILLNEED, PTWARM_MODE_WILLNEED);
    other_process_case(PTWARM_MODE_WILLNEED);
}

/* Whether sysfs lists CPUs a and b under a's highest cache level: 1 yes, 0 no, -1 it lists no cache. */
static int sysfs_share_llc(int a, int b) {
    char path[128], buf[512];
    int best = -1, best_idx = -1;
    for (int idx = 0; idx < 8; idx++) {
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", a, idx);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        int level = 0;
        if (fscanf(f, "%d", &level) == 1 && level > best) best = level, best_idx = idx;
        fclose(f);
    }
    if (best_idx < 0) return -1;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", a, best_idx);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    for (char *p = buf; *p;) { /* "0-3,8,10-11" */
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p) break;
        if (*end == '-') hi = strtol(end + 1, &end, 10);
        if (b >= lo && b <= hi) return 1;
        p = *end == ',' ? end + 1 : end;
        if (*p == '\n') break;
    }
    return 0;
}

/* The default check (AUTO) with a probe that always says "not shared" (threshold 1e-6 ns): sysfs
 * decides where it lists the LLC, and each disagreement is counted; the probe decides only where sysfs
 * lists none. The probe alone idled the helper on an Intel VM where mincore warming gained +18.3 %
 * while sysfs said the L3 was shared (issue 90). */
static void test_auto_check_lets_sysfs_overrule_the_probe(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) SKIP("one CPU");
    int a = -1;
    for (int k = 0; k < CPU_SETSIZE && a < 0; k++)
        if (CPU_ISSET(k, &set)) a = k;
    ptwarm_config c;
    ptwarm_config_default(&c);
    CHECK(c.llc_check == PTWARM_LLC_CHECK_AUTO); /* the library's default */
    char *r = map_pages(1u << 20);
    c.placement = PTWARM_PLACE_LLC;
    c.app_cpu = a;
    c.probe_threshold_ns = 1e-6;
    c.recheck_ns = 20000000u;
    ptwarm_t *w = NULL;
    CHECK(ptwarm_create(&c, &w) == 0);
    CHECK(ptwarm_register(w, r, 1u << 20, NULL) == 0);
    CHECK(ptwarm_start(w) == 0);
    ptwarm_stats s = poll_until(w, checks_at_least, 2, 10000);
    CHECK(s.llc_checks >= 2);
    int topo = sysfs_share_llc(a, s.helper_cpu);
    if (s.errors != 0) {
        fprintf(stderr, "test_auto_check: %llu probe(s) failed (errno %d): the topology decided unchecked\n",
                (unsigned long long)s.errors, s.last_errno);
    } else if (topo == 1) {
        CHECK(s.state == PTWARM_STATE_WARMING);
        CHECK(s.llc_probe_overruled == s.llc_checks && s.llc_shared == s.llc_checks);
    } else if (topo == 0) {
        CHECK(s.state == PTWARM_STATE_IDLE_TOPOLOGY && s.llc_probe_overruled == 0);
    } else {
        CHECK(s.state == PTWARM_STATE_IDLE_LLC_NOT_SHARED && s.llc_probe_overruled == 0);
    }
    CHECK(ptwarm_invariants_hold(w));
    CHECK(ptwarm_stop(w) == 0);
    ptwarm_destroy(w);
    /* PROBE keeps its meaning: the probe alone decides (mincore-idle's "not shared"). */
    c.llc_check = PTWARM_LLC_CHECK_PROBE;
    CHECK(ptwarm_create(&c, &w) == 0);
    CHECK(ptwarm_register(w, r, 1u << 20, NULL) == 0);
    CHECK(ptwarm_start(w) == 0);
    s = poll_until(w, checks_at_least, 1, 10000);
    CHECK(s.llc_probe_overruled == 0);
    if (s.errors == 0) CHECK(s.state != PTWARM_STATE_WARMING);
    CHECK(ptwarm_stop(w) == 0);
    ptwarm_destroy(w);
    munmap(r, 1u << 20);
}

/* The cases; `own` ones need what a machine may lack and run only when named (`--case`). */
static const struct {
    const char *name;
    void (*run)(void);
    int own;
} cases[] = {
    {"config", test_config_is_validated, 0},
    {"cache_fill", test_private_cache_fill_is_sized_from_the_machine, 0},
    {"one_sweep", test_one_sweep_per_mode_counts_exactly, 0},
    {"unmapped", test_unmapped_and_shrinking_regions_are_safe, 0},
    {"start_stop", test_start_stop_is_bounded_and_restartable, 0},
    {"idle", test_idle_without_regions_then_wakes, 0},
    {"throttling", test_throttling_and_placement, 0},
    {"races", test_register_unregister_races_with_touch_helper, 0},
    {"other_process", test_other_process_until_it_exits, 0},
    {"llc_check", test_llc_check_idles_the_helper, 1},
    {"llc_auto", test_auto_check_lets_sysfs_overrule_the_probe, 1},
    {"willneed", test_willneed_on_another_process_until_it_exits, 1},
};

int main(int argc, char **argv) {
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quick] [--case NAME]\n", argv[0]);
            return 2;
        }
    }
    int ran = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (only ? strcmp(only, cases[i].name) == 0 : !cases[i].own) {
            cases[i].run();
            ran++;
        }
    if (!ran) {
        fprintf(stderr, "test_ptwarm: no case named '%s'\n", only);
        return 2;
    }
    return check_outcome("test_ptwarm");
}
