/* ptwarm_bench: does the page-table warmer (tlblab/ptwarm.h, seed 001) speed up a TLB-miss-bound
 * program on this machine? Prints one JSON object on stdout; `tlblab host ptwarm` runs and reads it.
 *
 * Workloads (on the application CPU, default 0) over a region of 4 KiB pages (MADV_NOHUGEPAGE):
 *   dep    a dependent chase through a random cyclic permutation of ALL pages, one line per page at a
 *          rotating offset (latency-bound: every access is a TLB miss and a page walk);
 *   indep  8 independent xorshift streams loading a random line of a random page (throughput-bound).
 * Variants (the helper on another CPU, default 1), each run as a settle period plus a measured window:
 *   none, spin (a pause loop: "the other CPU is busy"), touch / prefetch (one access per 8 pages),
 *   mincore, willneed (process_madvise MADV_WILLNEED on ourselves), pagemap (PAGEMAP_SCAN on
 *   /proc/self/pagemap), mincore-auto (the library's default LLC
 *   check on), mincore-idle (LLC check forced to "not shared": the cost of an idling helper),
 *   mincore-other / prefetch-other (the same work on an unrelated region of the same size: isolates
 *   "warming the right PTEs" from "doing that much work"), warm-pid (the external warmer ptwarm_pid, as
 *   `tlblab warm --pid` runs it, from another process: process_madvise), warm-pid-scan (the same with
 *   PAGEMAP_SCAN, the mechanism for kernels or users without process_madvise rights).
 * Design: every round runs every variant once in a freshly shuffled order; the
 * result per variant is the PAIRED ratio to `none` of the same round: median, quartiles, rounds won.
 * The LLC-sharing probe runs before, after, and once per round.
 *
 * usage: ptwarm_bench [--size-mib N] [--other-mib N] [--rounds R] [--window-ms W] [--settle-ms S]
 *                     [--workloads dep,indep] [--variants a,b,...] [--app-cpu C] [--helper-cpu C]
 *                     [--warm-pid-exe PATH] [--seed N] [--boost 0|1] [--probe-only 1]
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tlblab/ptwarm.h"

extern char **environ;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#include "bench_host.h"

enum { PAGE = 4096, MAXV = 16, MAXR = 200 };

static const char *ALL_VARIANTS[] = {"none",          "spin",           "touch",        "prefetch",
                                     "mincore",       "willneed",       "pagemap",      "mincore-auto",
                                     "mincore-idle",  "mincore-other",  "prefetch-other", "warm-pid",
                                     "warm-pid-scan"};


static void die(const char *msg) {
    fprintf(stderr, "ptwarm_bench: %s\n", msg);
    exit(2);
}

/* Maps and populates `mib` MiB of 4 KiB pages; returns NULL with a message on failure. */
static char *map_region(size_t mib, double *secs) {
    size_t bytes = mib << 20;
    char *r = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) return NULL;
    madvise(r, bytes, MADV_NOHUGEPAGE); /* 4 KiB PTEs: the case PT-Baker is for (feasibility §2) */
    uint64_t t0 = now_ns();
    if (madvise(r, bytes, MADV_POPULATE_WRITE) != 0) {
        for (size_t o = 0; o < bytes; o += PAGE) r[o] = 1; /* pre-5.14 kernels */
    }
    *secs = (double)(now_ns() - t0) / 1e9;
    return r;
}

/* Links every page into one random cycle; element i sits at line ((i + (i >> 4)) & 63) of its page so
 * consecutive elements use different L1 sets (feasibility §1). Returns the start. */
static void **build_chase(char *r, size_t pages, uint64_t seed) {
    uint32_t *perm = malloc(pages * sizeof *perm);
    if (!perm) die("out of memory building the chase");
    for (size_t i = 0; i < pages; i++) perm[i] = (uint32_t)i;
    uint64_t s = seed | 1;
    for (size_t i = pages - 1; i > 0; i--) {
        size_t j = xorshift64(&s) % (i + 1);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
#define SLOT(p) ((void **)(r + (size_t)(p) * PAGE + (size_t)((((p) + ((p) >> 4)) & 63) * 64)))
    for (size_t i = 0; i < pages; i++) *SLOT(perm[i]) = (void *)SLOT(perm[(i + 1) % pages]);
    void **start = SLOT(perm[0]);
#undef SLOT
    free(perm);
    return start;
}

typedef struct {
    char *region;
    size_t pages;
    void **cursor; /* dep: where the chase continues */
    uint64_t rng[8];
} workload;

/* Runs a workload for `ns` and returns accesses per second. */
static double run_window(workload *w, int dep, uint64_t ns) {
    uint64_t end = now_ns() + ns, n = 0, t0 = now_ns(), t;
    if (dep) {
        void **p = w->cursor;
        do {
            for (int k = 0; k < 1024; k++) p = (void **)*p;
            n += 1024;
        } while ((t = now_ns()) < end);
        w->cursor = p;
    } else {
        uint64_t sum = 0;
        uint64_t s[8];
        memcpy(s, w->rng, sizeof s);
        do {
            for (int k = 0; k < 128; k++)
                for (int j = 0; j < 8; j++) {
                    uint64_t x = xorshift64(&s[j]);
                    sum += *(volatile char *)(w->region + (x >> 20) % w->pages * PAGE + (x & 63) * 64);
                }
            n += 1024;
        } while ((t = now_ns()) < end);
        memcpy(w->rng, s, sizeof s);
        __asm__ __volatile__("" ::"r"(sum));
    }
    return (double)n / ((double)(t - t0) / 1e9);
}

/* A running helper of one variant. */
typedef struct {
    ptwarm_t *w;
    pthread_t spin_thread;
    bench_spinner spin;
    int spinning;
    pid_t child;
    uint64_t t0;
} helper;

static int parse_list(char *s, char **out, int max) {
    int n = 0;
    for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) out[n++] = tok;
    return n;
}

static void start_helper(helper *h, const char *v, char *region, char *other, size_t bytes, int app_cpu,
                         int helper_cpu, const char *warm_exe) {
    memset(h, 0, sizeof *h);
    h->t0 = now_ns();
    if (strcmp(v, "none") == 0) return;
    if (strcmp(v, "spin") == 0) {
        h->spin.cpu = helper_cpu;
        atomic_store(&h->spin.stop, 0);
        if (pthread_create(&h->spin_thread, NULL, bench_spin_main, &h->spin) != 0) die("pthread_create");
        h->spinning = 1;
        return;
    }
    if (strncmp(v, "warm-pid", 8) == 0) {
        char pidbuf[32], range[64], cpu[16], app[16];
        snprintf(pidbuf, sizeof pidbuf, "%d", (int)getpid());
        snprintf(range, sizeof range, "%lx-%lx", (unsigned long)(uintptr_t)region,
                 (unsigned long)((uintptr_t)region + bytes));
        snprintf(cpu, sizeof cpu, "%d", helper_cpu);
        snprintf(app, sizeof app, "%d", app_cpu);
        char *argv[] = {(char *)warm_exe, "--pid", pidbuf, "--range", range, "--cpu", cpu, "--app-cpu", app,
                        "--llc-check", "off", "--mechanism", strcmp(v, "warm-pid") ? "scan" : "auto",
                        "--quiet", NULL};
        if (posix_spawn(&h->child, warm_exe, NULL, NULL, argv, environ) != 0) die("cannot spawn ptwarm_pid");
        return;
    }
    ptwarm_config c;
    ptwarm_config_default(&c);
    c.placement = PTWARM_PLACE_CPU;
    c.cpu = helper_cpu;
    c.app_cpu = app_cpu;
    c.llc_check = PTWARM_LLC_CHECK_OFF;
    char *target = region;
    if (strncmp(v, "touch", 5) == 0) c.mode = PTWARM_MODE_TOUCH;
    else if (strncmp(v, "prefetch", 8) == 0) c.mode = PTWARM_MODE_PREFETCH;
    else if (strncmp(v, "pagemap", 7) == 0) c.mode = PTWARM_MODE_PAGEMAP;
    else if (strncmp(v, "willneed", 8) == 0) c.mode = PTWARM_MODE_WILLNEED;
    else c.mode = PTWARM_MODE_MINCORE;
    if (strstr(v, "-other")) target = other;
    if (strcmp(v, "mincore-auto") == 0) {
        c.placement = PTWARM_PLACE_LLC; /* the library's defaults, told only where the app runs */
        c.llc_check = PTWARM_LLC_CHECK_AUTO;
    }
    if (strcmp(v, "mincore-idle") == 0) {
        c.placement = PTWARM_PLACE_LLC;
        c.llc_check = PTWARM_LLC_CHECK_PROBE;
        c.probe_threshold_ns = 1e-6; /* every probe says "not shared": the helper idles */
    }
    if (ptwarm_create(&c, &h->w) != 0) die("ptwarm_create");
    if (ptwarm_register(h->w, target, bytes, NULL) != 0) die("ptwarm_register");
    if (ptwarm_start(h->w) != 0) die("ptwarm_start");
    /* Measure the helper the variant names, not one still deciding: with the LLC check on, the first
     * check runs the timing probe, whose application side waits for a turn on the busy application CPU
     * (milliseconds on bare metal, tens to hundreds on a loaded 2-vCPU guest; the library gives up after
     * 0.5 s). Waiting here keeps that time out of the settle and measured windows. */
    for (uint64_t t_end = now_ns() + 2000000000u; now_ns() < t_end;) {
        ptwarm_stats s;
        ptwarm_get_stats(h->w, &s);
        if (s.state != PTWARM_STATE_CHECKING) break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    h->t0 = now_ns();
}

typedef struct {
    double sweeps_per_s;
    const char *state;
    double probe_ns;
    unsigned long long overruled; /* LLC checks whose probe sysfs overruled (PTWARM_LLC_CHECK_AUTO) */
    unsigned long long errors; /* failed LLC probes: the verdict then fell back to the sysfs topology */
} helper_report;

static helper_report stop_helper(helper *h) {
    helper_report r = {0, "", -1, 0, 0};
    double secs = (double)(now_ns() - h->t0) / 1e9;
    if (h->spinning) {
        atomic_store(&h->spin.stop, 1);
        pthread_join(h->spin_thread, NULL);
    }
    if (h->child > 0) {
        kill(h->child, SIGTERM);
        int st;
        waitpid(h->child, &st, 0);
    }
    if (h->w) {
        ptwarm_stats s;
        ptwarm_get_stats(h->w, &s);
        ptwarm_stop(h->w);
        r.sweeps_per_s = (double)s.sweeps / secs;
        r.state = ptwarm_state_name(s.state);
        r.probe_ns = s.last_probe_ns;
        r.overruled = (unsigned long long)s.llc_probe_overruled;
        r.errors = (unsigned long long)s.errors;
        ptwarm_destroy(h->w);
    }
    return r;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Quantile by linear interpolation on a sorted copy. */
static double quant(const double *v, int n, double q) {
    double t[MAXR];
    memcpy(t, v, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, cmp_d);
    double pos = q * (n - 1);
    int i = (int)pos;
    return i + 1 < n ? t[i] + (t[i + 1] - t[i]) * (pos - i) : t[i];
}

static double probe3(int a, int b) {
    double v[3];
    for (int i = 0; i < 3; i++)
        if (ptwarm_llc_probe(a, b, &v[i]) != 0) return -1;
    return quant(v, 3, 0.5);
}

static void loadavg(char *buf, size_t n) {
    FILE *f = fopen("/proc/loadavg", "r");
    buf[0] = 0;
    if (f) {
        if (fgets(buf, (int)n, f)) buf[strcspn(buf, "\n")] = 0;
        fclose(f);
    }
}

int main(int argc, char **argv) {
    size_t size_mib = 8192, other_mib = (size_t)-1;
    int rounds = 15, window_ms = 200, settle_ms = 40, app_cpu = 0, helper_cpu = 1;
    uint64_t seed = 42;
    int boost = 0, probe_only = 0;
    char wl_buf[64] = "dep,indep", var_buf[512] = "";
    const char *warm_exe = NULL;
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) die("every option takes a value");
        if (!strcmp(a, "--size-mib")) size_mib = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--other-mib")) other_mib = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--rounds")) rounds = atoi(v);
        else if (!strcmp(a, "--window-ms")) window_ms = atoi(v);
        else if (!strcmp(a, "--settle-ms")) settle_ms = atoi(v);
        else if (!strcmp(a, "--workloads")) snprintf(wl_buf, sizeof wl_buf, "%s", v);
        else if (!strcmp(a, "--variants")) snprintf(var_buf, sizeof var_buf, "%s", v);
        else if (!strcmp(a, "--app-cpu")) app_cpu = atoi(v);
        else if (!strcmp(a, "--helper-cpu")) helper_cpu = atoi(v);
        else if (!strcmp(a, "--warm-pid-exe")) warm_exe = v;
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--boost")) boost = atoi(v);
        else if (!strcmp(a, "--probe-only")) probe_only = atoi(v);
        else {
            fprintf(stderr, "ptwarm_bench: unknown option '%s'\n", a);
            return 2;
        }
    }
    if (other_mib == (size_t)-1) other_mib = size_mib;
    if (size_mib < 16 || rounds < 1 || rounds > MAXR || window_ms < 1 || settle_ms < 0)
        die("need --size-mib >= 16, 1 <= --rounds <= 200, --window-ms >= 1");
    if (app_cpu == helper_cpu) die("--app-cpu and --helper-cpu must differ");
    if (probe_only) { /* just the LLC-sharing probe: `tlblab host ptwarm --wait-shared` polls this */
        int fs = 0;
        size_t pb = ptwarm_private_cache_fill_bytes(app_cpu, &fs);
        printf("{\"llc_probe_ns\": %.1f, \"llc_probe_bytes\": %zu, \"llc_probe_bytes_source\": \"%s\"}\n",
               probe3(app_cpu, helper_cpu), pb, fs ? "sysfs" : "fallback");
        return 0;
    }
    char *vars[MAXV];
    int nv;
    if (var_buf[0]) {
        nv = parse_list(var_buf, vars, MAXV);
    } else {
        nv = 0;
        for (size_t i = 0; i < sizeof ALL_VARIANTS / sizeof *ALL_VARIANTS; i++) {
            if (strstr(ALL_VARIANTS[i], "-other") && other_mib == 0) continue;
            if (!strncmp(ALL_VARIANTS[i], "warm-pid", 8) && !warm_exe) continue;
            vars[nv++] = (char *)ALL_VARIANTS[i];
        }
    }
    if (nv < 2 || strcmp(vars[0], "none") != 0) die("--variants must start with none and name another");
    for (int i = 0; i < nv; i++) {
        int known = 0;
        for (size_t k = 0; k < sizeof ALL_VARIANTS / sizeof *ALL_VARIANTS; k++) known |= !strcmp(vars[i], ALL_VARIANTS[k]);
        if (!known) {
            fprintf(stderr, "ptwarm_bench: unknown variant '%s'\n", vars[i]);
            return 2;
        }
        if (strstr(vars[i], "-other") && other_mib != size_mib) die("-other variants need --other-mib equal to --size-mib");
        if (!strncmp(vars[i], "warm-pid", 8) && !warm_exe) die("warm-pid needs --warm-pid-exe");
    }
    char *wls[4];
    int nw = parse_list(wl_buf, wls, 4);
    for (int i = 0; i < nw; i++)
        if (strcmp(wls[i], "dep") && strcmp(wls[i], "indep")) die("workloads are dep and indep");

    char load_before[128], load_after[128];
    loadavg(load_before, sizeof load_before);
    if (pin(app_cpu) != 0) die("cannot pin to --app-cpu");
    if (boost) boost_self();
    double pop_s = 0, pop_o = 0;
    char *region = map_region(size_mib, &pop_s);
    if (!region) die("cannot map the region (memory short? use a smaller --size-mib)");
    char *other = other_mib ? map_region(other_mib, &pop_o) : NULL;
    if (other_mib && !other) die("cannot map the unrelated region (use --other-mib 0)");
    size_t pages = (size_mib << 20) / PAGE;
    workload wk;
    memset(&wk, 0, sizeof wk);
    wk.region = region;
    wk.pages = pages;
    wk.cursor = build_chase(region, pages, seed);
    for (int j = 0; j < 8; j++) wk.rng[j] = seed * 0x9E3779B97F4A7C15u + (uint64_t)j * 7919u + 1;

    double probe_before = probe3(app_cpu, helper_cpu);
    static double rate[4][MAXV][MAXR];
    static helper_report rep[4][MAXV][MAXR];
    double round_probe[MAXR];
    uint64_t rs = seed ^ 0xABCDEFu;
    uint64_t t_start = now_ns();
    for (int r = 0; r < rounds; r++) {
        round_probe[r] = probe3(app_cpu, helper_cpu);
        for (int wi = 0; wi < nw; wi++) {
            int dep = !strcmp(wls[wi], "dep");
            int order[MAXV];
            for (int i = 0; i < nv; i++) order[i] = i;
            for (int i = nv - 1; i > 0; i--) {
                int j = (int)(xorshift64(&rs) % (uint64_t)(i + 1)), t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            for (int k = 0; k < nv; k++) {
                int v = order[k];
                helper h;
                start_helper(&h, vars[v], region, other, size_mib << 20, app_cpu, helper_cpu, warm_exe);
                run_window(&wk, dep, (uint64_t)settle_ms * 1000000u); /* settle: helper reaches steady state */
                rate[wi][v][r] = run_window(&wk, dep, (uint64_t)window_ms * 1000000u);
                rep[wi][v][r] = stop_helper(&h);
            }
        }
    }
    double run_s = (double)(now_ns() - t_start) / 1e9;
    double probe_after = probe3(app_cpu, helper_cpu);
    loadavg(load_after, sizeof load_after);

    printf("{\n  \"size_mib\": %zu, \"other_mib\": %zu, \"rounds\": %d, \"window_ms\": %d, \"settle_ms\": %d,\n",
           size_mib, other_mib, rounds, window_ms, settle_ms);
    printf("  \"app_cpu\": %d, \"helper_cpu\": %d, \"seed\": %llu, \"boost\": %d,\n", app_cpu, helper_cpu,
           (unsigned long long)seed, boost);
    printf("  \"populate_s\": %.2f, \"populate_other_s\": %.2f, \"run_s\": %.1f,\n", pop_s, pop_o, run_s);
    printf("  \"loadavg_before\": \"%s\", \"loadavg_after\": \"%s\",\n", load_before, load_after);
    printf("  \"llc_probe_ns_before\": %.1f, \"llc_probe_ns_after\": %.1f,\n", probe_before, probe_after);
    {
        int fs = 0;
        size_t pb = ptwarm_private_cache_fill_bytes(app_cpu, &fs);
        printf("  \"llc_probe_bytes\": %zu, \"llc_probe_bytes_source\": \"%s\",\n", pb, fs ? "sysfs" : "fallback");
    }
    printf("  \"llc_probe_ns_per_round\": [");
    for (int r = 0; r < rounds; r++) printf("%s%.1f", r ? ", " : "", round_probe[r]);
    printf("],\n  \"workloads\": {\n");
    for (int wi = 0; wi < nw; wi++) {
        printf("    \"%s\": {\n", wls[wi]);
        printf("      \"baseline_macc_s\": {\"median\": %.3f, \"q1\": %.3f, \"q3\": %.3f},\n",
               quant(rate[wi][0], rounds, .5) / 1e6, quant(rate[wi][0], rounds, .25) / 1e6,
               quant(rate[wi][0], rounds, .75) / 1e6);
        printf("      \"variants\": {\n");
        for (int v = 1; v < nv; v++) {
            double ch[MAXR], sw[MAXR];
            int wins = 0;
            unsigned long long overruled = 0;
            for (int r = 0; r < rounds; r++) {
                overruled += rep[wi][v][r].overruled;
                ch[r] = (rate[wi][v][r] / rate[wi][0][r] - 1.0) * 100.0;
                wins += ch[r] > 0;
                sw[r] = rep[wi][v][r].sweeps_per_s;
            }
            printf("        \"%s\": {\"change_pct_median\": %.2f, \"change_pct_q1\": %.2f, \"change_pct_q3\": %.2f, "
                   "\"wins\": %d, \"rounds\": %d, \"macc_s_median\": %.3f, \"helper_sweeps_per_s\": %.1f, "
                   "\"helper_state\": \"%s\", \"helper_errors\": %llu, \"probe_overruled\": %llu, \"changes\": [",
                   vars[v], quant(ch, rounds, .5), quant(ch, rounds, .25), quant(ch, rounds, .75), wins, rounds,
                   quant(rate[wi][v], rounds, .5) / 1e6, quant(sw, rounds, .5), rep[wi][v][rounds - 1].state, rep[wi][v][rounds - 1].errors, overruled);
            for (int r = 0; r < rounds; r++) printf("%s%.2f", r ? ", " : "", ch[r]);
            printf("]}%s\n", v + 1 < nv ? "," : "");
        }
        printf("      }\n    }%s\n", wi + 1 < nw ? "," : "");
    }
    printf("  }\n}\n");
    munmap(region, size_mib << 20);
    if (other) munmap(other, other_mib << 20);
    return 0;
}
