/* migrate_bench: the seed 000 migration benchmark on real cores, with and without tlbmig re-warming.
 * Prints one JSON object on stdout; `tlblab host migrate` runs and reads it.
 *
 * Seed 000 (Landsberg 2018, §4.3, Tables A.3/A.4; §8.2, Table A.17) touches N pages at a 4 KiB or a
 * 68 KiB stride, migrates the thread, and times the re-touch with a cold TLB versus a restored one. Here,
 * per trial:
 *   1. on CPU B: evict the TLB and L1/L2 (touch --evict-pages other pages, default 4096, twice a
 *      2048-entry L2 DTLB; `tlblab host migrate` passes twice the machine's, and other lines: twice
 *      CPU B's L2 as sysfs lists it, ptwarm_private_cache_fill_bytes; 1 MiB if sysfs does not say;
 *      printed as "evict_bytes");
 *   2. on CPU A: chase the N pages 3 times (the last pass is the "hot" time);
 *   3. migrate to CPU B with sched_setaffinity (verified with sched_getcpu);
 *   4. time one variant: `dep` (dependent chase over the N pages), `rewarm+dep` (tlbmig_check(), which
 *      sees the CPU change and prefetches the N registered lines, then the chase; both timed), `indep`
 *      (independent loads of the same lines), `rewarm+indep`.
 * Variants rotate trial by trial; medians and quartiles over --trials trials per (stride, N, variant).
 * Then, per stride, the re-warm alone (`preload`: steps 1-3, then tlbmig_check() timed by itself) at 1
 * and 384 registered pages: the host's preload cost, which the model's prediction for this benchmark
 * takes as measured (python/tlblab/seeds/s000_tlb_migration/experiments.py, host_migrate_prediction).
 * Element i sits at page i*stride, line ((i + (i>>4)) & 63), in a random cyclic order.
 *
 * usage: migrate_bench [--strides 4096,69632] [--ns 1,2,4,...] [--trials T] [--cap C] [--evict-pages P] [--cpus A,B]
 *                      [--busy 0|1] [--seed N] [--boost 0|1]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tlblab/ptwarm.h"
#include "tlblab/tlbmig.h"
#include "bench_host.h"

enum { MAXN = 32, MAXT = 101, MAXS = 4, NVAR = 4 };
static const char *VAR[NVAR] = {"dep", "rewarm+dep", "indep", "rewarm+indep"};


/* Interval timer for sections of tens of ns. An unfenced clock read lets the out-of-order core start
 * the timed loads before the start stamp or take the end stamp before they complete, so on x86 the
 * start is lfence;rdtsc;lfence and the end rdtscp;lfence (rdtscp waits for every earlier instruction,
 * loads included). TSC ticks are converted with a rate calibrated against CLOCK_MONOTONIC. Elsewhere
 * clock_gettime is the best we have. */
#if defined(__x86_64__)
static inline uint64_t stamp_begin(void) {
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t stamp_end(void) {
    uint32_t lo, hi, aux;
    __asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
    return ((uint64_t)hi << 32) | lo;
}
#else
static inline uint64_t stamp_begin(void) { return now_ns(); }
static inline uint64_t stamp_end(void) { return now_ns(); }
#endif

static double g_ns_per_tick = 1.0;

static void calibrate(void) {
#if defined(__x86_64__)
    uint64_t n0 = now_ns(), t0 = stamp_begin();
    while (now_ns() - n0 < 50000000u) {
    }
    uint64_t n1 = now_ns(), t1 = stamp_end();
    g_ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
#endif
}

static uint64_t ticks_to_ns(uint64_t t) { return (uint64_t)((double)t * g_ns_per_tick + 0.5); }

static void die(const char *m) {
    fprintf(stderr, "migrate_bench: %s\n", m);
    exit(2);
}

static int cmp_u(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t q_of(uint64_t *v, int n, double q) {
    qsort(v, (size_t)n, sizeof *v, cmp_u);
    return v[(int)(q * (n - 1) + 0.5)];
}

static void *map(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) die("cannot map memory");
    madvise(p, bytes, MADV_NOHUGEPAGE);
    memset(p, 0, bytes);
    return p;
}

static volatile uintptr_t g_sink;

int main(int argc, char **argv) {
    size_t strides[MAXS] = {4096, 69632};
    int nstr = 2;
    size_t ns[MAXN] = {1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 256, 512, 1024, 2048, 4096};
    int nn = 15, trials = 15, busy = 0, cpu_a = 0, cpu_b = 1;
    size_t cap = 4096;
    size_t evict_pages = 4096;
    uint64_t seed = 7;
    int boost = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--strides")) {
            nstr = 0;
            for (char *t = strtok((char *)v, ","); t && nstr < MAXS; t = strtok(NULL, ",")) strides[nstr++] = strtoull(t, NULL, 10);
        } else if (!strcmp(a, "--ns")) {
            nn = 0;
            for (char *t = strtok((char *)v, ","); t && nn < MAXN; t = strtok(NULL, ",")) ns[nn++] = strtoull(t, NULL, 10);
        } else if (!strcmp(a, "--trials")) trials = atoi(v);
        else if (!strcmp(a, "--cap")) cap = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--evict-pages")) evict_pages = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--busy")) busy = atoi(v);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--boost")) boost = atoi(v);
        else if (!strcmp(a, "--cpus")) {
            if (sscanf(v, "%d,%d", &cpu_a, &cpu_b) != 2 || cpu_a == cpu_b) die("--cpus expects A,B with A != B");
        } else {
            fprintf(stderr, "migrate_bench: unknown option '%s'\n", a);
            return 2;
        }
    }
    if ((argc - 1) % 2) die("every option takes a value");
    if (evict_pages < 1 || evict_pages > (1u << 20)) die("need 1 <= --evict-pages <= 1048576");
    if (trials < 1 || trials > MAXT || nn < 1 || nstr < 1 || cap < 1) die("need 1 <= --trials <= 101 and non-empty lists");
    size_t maxn = 0, maxs = 0;
    for (int i = 0; i < nn; i++) {
        if (ns[i] < 1 || ns[i] > 65536) die("--ns values must be 1..65536");
        if (ns[i] > maxn) maxn = ns[i];
    }
    for (int i = 0; i < nstr; i++) {
        if (strides[i] < 64 || strides[i] % 64) die("--strides must be multiples of 64 bytes");
        if (strides[i] > maxs) maxs = strides[i];
    }
    if (pin(cpu_a) != 0 || pin(cpu_b) != 0) die("cannot run on both --cpus");
    if (boost) boost_self();

    /* The re-warm's own cost (the "preload" object): tlbmig_check() alone after a migration, timed to
     * its retirement, at 1 and PRELOAD_PAGES registered pages per stride; PRELOAD_PAGES is in neither
     * page-count list, so the model's prediction takes it from a measurement apart from the sweep. */
    enum { PRELOAD_PAGES = 384 };
    if (maxn < PRELOAD_PAGES) maxn = PRELOAD_PAGES;
    char *data = map(maxn * maxs + 4096);
    int evict_sysfs = 0;
    const size_t evict_bytes = ptwarm_private_cache_fill_bytes(cpu_b, &evict_sysfs);
    char *evict = map((size_t)evict_pages * 4096 + evict_bytes);
    bench_spinner sp[2] = {{0, cpu_a, 1}, {0, cpu_b, 1}};
    pthread_t spt[2];
    if (busy)
        for (int i = 0; i < 2; i++) pthread_create(&spt[i], NULL, bench_spin_main, &sp[i]);

    /* Timer overhead: the smallest empty interval (in ticks). */
    calibrate();
    uint64_t ovh = UINT64_MAX;
    for (int i = 0; i < 1000; i++) {
        uint64_t a = stamp_begin(), b = stamp_end();
        if (b - a < ovh) ovh = b - a;
    }
    /* Cost of the cheap check without a migration, through rseq and through sched_getcpu(). */
    double check_ns[2] = {0, 0};
    int check_rseq[2] = {0, 0};
    for (int use = 1; use >= 0; use--) {
        tlbmig_config cc;
        tlbmig_config_default(&cc);
        cc.use_rseq = use;
        tlbmig_t *t = NULL;
        if (tlbmig_create(&cc, &t) != 0) die("tlbmig_create");
        tlbmig_add_page(t, data, NULL);
        pin(cpu_a);
        size_t got = 0;
        check_ns[use] = 1e9;
        for (int rep = 0; rep < 15; rep++) { /* the fastest of 15 runs: a fixed cost, preemption only adds */
            uint64_t c0 = now_ns();
            for (int i = 0; i < 200000; i++) got += tlbmig_check(t);
            double per = (double)(now_ns() - c0) / 200000.0;
            if (per < check_ns[use]) check_ns[use] = per;
        }
        tlbmig_stats st;
        tlbmig_get_stats(t, &st);
        check_rseq[use] = st.rseq;
        g_sink = got;
        tlbmig_destroy(t);
    }
    static uint64_t res[MAXS][MAXN][NVAR][MAXT], hot[MAXS][MAXN][MAXT * NVAR];
    static uint64_t mig_ns[MAXS * MAXN * MAXT * NVAR];
    size_t nmig = 0;
    uint64_t rs = seed | 1;
    uint32_t *perm = malloc(maxn * sizeof *perm);
    void **elems = malloc(maxn * sizeof *elems);
    if (!perm || !elems) die("out of memory");
    int mig_failures = 0;
    tlbmig_config mc;
    tlbmig_config_default(&mc);
    mc.cap_pages = cap;
    for (int si = 0; si < nstr; si++) {
        size_t st = strides[si];
        for (int ni = 0; ni < nn; ni++) {
            size_t n = ns[ni];
            for (size_t i = 0; i < n; i++) {
                perm[i] = (uint32_t)i;
                elems[i] = data + i * st + ((i + (i >> 4)) & 63) * 64;
            }
            for (size_t i = n - 1; i > 0; i--) {
                size_t j = xorshift64(&rs) % (i + 1);
                uint32_t t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
            for (size_t i = 0; i < n; i++) *(void **)elems[perm[i]] = elems[perm[(i + 1) % n]];
            void **start = elems[perm[0]];
            tlbmig_t *tm = NULL;
            if (tlbmig_create(&mc, &tm) != 0) die("tlbmig_create");
            for (size_t i = 0; i < n; i++) tlbmig_add_page(tm, elems[perm[i]], NULL);
            for (int t = 0; t < trials * NVAR; t++) {
                int var = t % NVAR, trial = t / NVAR;
                /* 1. evict on the destination */
                pin(cpu_b);
                uintptr_t s = 0;
                for (size_t p = 0; p < evict_pages; p++) s += (uintptr_t)evict[p * 4096 + (p & 63) * 64];
                for (size_t o = 0; o < evict_bytes; o += 64) s += (uintptr_t)evict[(size_t)evict_pages * 4096 + o];
                /* 2. hot on the source */
                pin(cpu_a);
                void **p = start;
                uint64_t h0 = 0, h1 = 0;
                for (int pass = 0; pass < 3; pass++) {
                    h0 = stamp_begin();
                    for (size_t k = 0; k < n; k++) p = (void **)*p;
                    h1 = stamp_end();
                }
                hot[si][ni][t] = ticks_to_ns(h1 - h0 > ovh ? h1 - h0 - ovh : 0);
                tlbmig_check(tm); /* record CPU A as the thread's CPU */
                /* 3. migrate */
                uint64_t m0 = now_ns();
                pin(cpu_b);
                uint64_t m1 = now_ns();
                mig_ns[nmig++] = m1 - m0;
                if (sched_getcpu() != cpu_b) mig_failures++;
                /* 4. the measured re-touch */
                uint64_t t0 = stamp_begin();
                if (var == 1 || var == 3) {
                    if (tlbmig_check(tm) == 0) mig_failures++;
                }
                if (var <= 1) {
                    for (size_t k = 0; k < n; k++) p = (void **)*p;
                } else {
                    for (size_t k = 0; k < n; k++) s += *(volatile uintptr_t *)elems[k];
                }
                uint64_t t1 = stamp_end();
                g_sink = s + (uintptr_t)p;
                res[si][ni][var][trial] = ticks_to_ns(t1 - t0 > ovh ? t1 - t0 - ovh : 0);
            }
            tlbmig_destroy(tm);
        }
    }
    static uint64_t pre[MAXS][2][MAXT];
    for (int si = 0; si < nstr; si++) {
        size_t st = strides[si];
        for (int pi = 0; pi < 2; pi++) {
            size_t n = pi ? PRELOAD_PAGES : 1;
            for (size_t i = 0; i < n; i++) elems[i] = data + i * st + ((i + (i >> 4)) & 63) * 64;
            tlbmig_t *tm = NULL;
            if (tlbmig_create(&mc, &tm) != 0) die("tlbmig_create");
            for (size_t i = 0; i < n; i++) tlbmig_add_page(tm, elems[i], NULL);
            for (int t = 0; t < trials; t++) {
                pin(cpu_b);
                uintptr_t s = 0;
                for (size_t p = 0; p < evict_pages; p++) s += (uintptr_t)evict[p * 4096 + (p & 63) * 64];
                for (size_t o = 0; o < evict_bytes; o += 64) s += (uintptr_t)evict[(size_t)evict_pages * 4096 + o];
                pin(cpu_a);
                for (int pass = 0; pass < 3; pass++)
                    for (size_t k = 0; k < n; k++) s += *(volatile uintptr_t *)elems[k];
                tlbmig_check(tm);
                pin(cpu_b);
                uint64_t t0 = stamp_begin();
                if (tlbmig_check(tm) == 0) mig_failures++;
                uint64_t t1 = stamp_end();
                g_sink = s;
                pre[si][pi][t] = ticks_to_ns(t1 - t0 > ovh ? t1 - t0 - ovh : 0);
            }
            tlbmig_destroy(tm);
        }
    }
    if (busy)
        for (int i = 0; i < 2; i++) {
            atomic_store(&sp[i].stop, 1);
            pthread_join(spt[i], NULL);
        }

    printf("{\n  \"cpus\": [%d, %d], \"trials\": %d, \"cap\": %zu, \"busy\": %d, \"boost\": %d, \"timer_overhead_ns\": %llu,\n",
           cpu_a, cpu_b, trials, cap, busy, boost, (unsigned long long)ticks_to_ns(ovh));
    printf("  \"evict_bytes\": %zu, \"evict_bytes_source\": \"%s\",\n", evict_bytes,
           evict_sysfs ? "sysfs" : "fallback");
    printf("  \"migration_us_median\": %.2f, \"migration_failures\": %d,\n",
           (double)q_of(mig_ns, (int)nmig, 0.5) / 1e3, mig_failures);
    printf("  \"check_ns\": {\"rseq\": %.2f, \"rseq_available\": %s, \"sched_getcpu\": %.2f},\n", check_ns[1],
           check_rseq[1] ? "true" : "false", check_ns[0]);
    printf("  \"preload\": {\"pages\": [1, %d], \"ns_median\": {", (int)PRELOAD_PAGES);
    for (int si = 0; si < nstr; si++)
        printf("\"%zu\": [%llu, %llu]%s", strides[si], (unsigned long long)q_of(pre[si][0], trials, .5),
               (unsigned long long)q_of(pre[si][1], trials, .5), si + 1 < nstr ? ", " : "");
    printf("}},\n");
    printf("  \"variants\": [\"dep\", \"rewarm+dep\", \"indep\", \"rewarm+indep\"],\n  \"strides\": {\n");
    for (int si = 0; si < nstr; si++) {
        printf("    \"%zu\": {\"rows\": [\n", strides[si]);
        for (int ni = 0; ni < nn; ni++) {
            printf("      {\"n\": %zu, \"hot_ns\": %llu", ns[ni],
                   (unsigned long long)q_of(hot[si][ni], trials * NVAR, 0.5));
            for (int v = 0; v < NVAR; v++) {
                uint64_t *r = res[si][ni][v];
                uint64_t q1 = q_of(r, trials, .25), md = q_of(r, trials, .5), q3 = q_of(r, trials, .75);
                printf(", \"%s\": [%llu, %llu, %llu]", VAR[v], (unsigned long long)q1, (unsigned long long)md,
                       (unsigned long long)q3);
            }
            printf("}%s\n", ni + 1 < nn ? "," : "");
        }
        printf("    ]}%s\n", si + 1 < nstr ? "," : "");
    }
    printf("  }\n}\n");
    free(perm);
    free(elems);
    return 0;
}
