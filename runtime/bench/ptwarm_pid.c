/* ptwarm_pid: warm ANOTHER process's page tables from outside (seed 001 §8, "future work"), the engine
 * of `tlblab warm --pid`. The leanest mechanism the kernel offers, tried in this order (--mechanism
 * auto): process_madvise(MADV_WILLNEED) through a pidfd (Linux >= 5.10, needs CAP_SYS_NICE; the kernel
 * walks the PTEs looking for swapped-out pages, 1.2 ns per page here), the PAGEMAP_SCAN ioctl on
 * /proc/PID/pagemap (Linux >= 6.7; reads the PTEs only, about 14 ns per page here), pread() of the
 * pagemap (also reads each page's struct page: about 10x more cache lines, 32 ns per page).
 * Warms the given --range(s), or else every anonymous private writable mapping of the target (heap,
 * anonymous mmaps, stacks; file-backed ones are skipped, since WILLNEED would start read-ahead there)
 * listed in /proc/PID/maps at start. Runs until --duration seconds pass, SIGINT/SIGTERM, or the target
 * exits; then prints the statistics as one JSON object (unless --quiet).
 *
 * usage: ptwarm_pid --pid PID [--range START-END]... [--duration S] [--sleep-ms MS] [--cpu C]
 *                   [--app-cpu C] [--llc-check auto|probe|topology|off] [--mechanism auto|willneed|scan|read]
 *                   [--quiet]
 * Exit status: 0 ran (target may have exited meanwhile), 2 bad usage / cannot open the target. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlblab/ptwarm.h"

static int usage(const char *msg, const char *arg) {
    fprintf(stderr, "ptwarm_pid: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    return 2;
}

/* Registers every private writable mapping of pid; returns the number registered or -errno. */
static int register_maps(ptwarm_t *w, int pid, uint64_t *bytes) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f) return -errno;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, inode = 0;
        char perms[8] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &lo, &hi, perms, &inode) != 4) continue;
        if (perms[1] != 'w' || perms[3] != 'p') continue;     /* private and writable: data, not code */
        if (inode != 0) continue;                             /* anonymous only */
        if (strstr(line, "[vsyscall]") || strstr(line, "[vvar]")) continue;
        if (ptwarm_register(w, (const void *)(uintptr_t)lo, hi - lo, NULL) == 0) {
            n++;
            *bytes += hi - lo;
        }
    }
    fclose(f);
    return n;
}

int main(int argc, char **argv) {
    ptwarm_config c;
    ptwarm_config_default(&c);
    c.mode = PTWARM_MODE_PAGEMAP;
    c.placement = PTWARM_PLACE_LLC;
    double duration = 0;
    int quiet = 0, nranges = 0;
    const char *mech = "auto";
    unsigned long lo[64], hi[64];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--quiet")) {
            quiet = 1;
            continue;
        }
        if (i + 1 >= argc) return usage("option needs a value", a);
        const char *v = argv[++i];
        char *end = NULL;
        if (!strcmp(a, "--pid")) {
            long p = strtol(v, &end, 10);
            if (*end || p <= 0) return usage("--pid expects a process id", v);
            c.pid = (pid_t)p;
        } else if (!strcmp(a, "--range")) {
            if (nranges == 64) return usage("at most 64 --range options", NULL);
            if (sscanf(v, "%lx-%lx", &lo[nranges], &hi[nranges]) != 2 || hi[nranges] <= lo[nranges])
                return usage("--range expects START-END in hex, START < END", v);
            nranges++;
        } else if (!strcmp(a, "--duration")) {
            duration = strtod(v, &end);
            if (*end || duration < 0) return usage("--duration expects seconds >= 0", v);
        } else if (!strcmp(a, "--sleep-ms")) {
            double ms = strtod(v, &end);
            if (*end || ms < 0) return usage("--sleep-ms expects milliseconds >= 0", v);
            c.sleep_ns = (uint64_t)(ms * 1e6);
        } else if (!strcmp(a, "--cpu")) {
            c.cpu = atoi(v);
            c.placement = PTWARM_PLACE_CPU;
        } else if (!strcmp(a, "--app-cpu")) {
            c.app_cpu = atoi(v);
        } else if (!strcmp(a, "--mechanism")) {
            if (strcmp(v, "auto") && strcmp(v, "willneed") && strcmp(v, "scan") && strcmp(v, "read"))
                return usage("--mechanism expects auto, willneed, scan or read", v);
            mech = v;
        } else if (!strcmp(a, "--llc-check")) {
            if (!strcmp(v, "auto")) c.llc_check = PTWARM_LLC_CHECK_AUTO;
            else if (!strcmp(v, "probe")) c.llc_check = PTWARM_LLC_CHECK_PROBE;
            else if (!strcmp(v, "topology")) c.llc_check = PTWARM_LLC_CHECK_TOPOLOGY;
            else if (!strcmp(v, "off")) c.llc_check = PTWARM_LLC_CHECK_OFF;
            else return usage("--llc-check expects auto, probe, topology or off", v);
        } else {
            return usage("unknown option", a);
        }
    }
    if (c.pid == 0) return usage("--pid is required", NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* the helper inherits the mask; we take them with sigtimedwait */
    ptwarm_t *w = NULL;
    uint64_t bytes = 0;
    int regions = 0, rc = 0;
    /* auto: WILLNEED, then PAGEMAP (SCAN, else pread); each attempt registers the regions afresh. */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!strcmp(mech, "willneed") || (!strcmp(mech, "auto") && attempt == 0)) {
            c.mode = PTWARM_MODE_WILLNEED;
        } else {
            c.mode = PTWARM_MODE_PAGEMAP;
            c.pagemap_read = !strcmp(mech, "read");
        }
        if (ptwarm_create(&c, &w) != 0) return usage("invalid configuration", NULL);
        bytes = 0;
        regions = 0;
        if (nranges) {
            for (int i = 0; i < nranges; i++)
                if (ptwarm_register(w, (const void *)(uintptr_t)lo[i], hi[i] - lo[i], NULL) == 0) {
                    regions++;
                    bytes += hi[i] - lo[i];
                }
        } else {
            regions = register_maps(w, (int)c.pid, &bytes);
            if (regions < 0) {
                ptwarm_destroy(w);
                fprintf(stderr, "ptwarm_pid: cannot read /proc/%d/maps: %s\n", (int)c.pid, strerror(-regions));
                return 2;
            }
        }
        rc = ptwarm_start(w);
        if (rc == 0) break;
        ptwarm_destroy(w);
        w = NULL;
        if (strcmp(mech, "auto") || rc == -ESRCH || rc == -ENOENT) break;
    }
    if (rc != 0) {
        fprintf(stderr, "ptwarm_pid: cannot warm process %d: %s\n", (int)c.pid, strerror(-rc));
        return 2;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ptwarm_stats s;
    for (;;) {
        struct timespec tick = {0, 100000000L};
        if (sigtimedwait(&set, NULL, &tick) > 0) break;
        ptwarm_get_stats(w, &s);
        if (s.state == PTWARM_STATE_TARGET_GONE || s.state == PTWARM_STATE_FAILED) break;
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        double el = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9;
        if (duration > 0 && el >= duration) break;
    }
    ptwarm_get_stats(w, &s);
    ptwarm_stop(w);
    if (!quiet) {
        printf("{\"pid\": %d, \"regions\": %d, \"bytes\": %llu, \"mechanism\": \"%s\", \"state\": \"%s\", "
               "\"sweeps\": %llu, \"pages\": %llu, \"syscalls\": %llu, \"last_sweep_ms\": %.3f, "
               "\"mean_sweep_ms\": %.3f, \"warm_s\": %.3f, \"idle_s\": %.3f, \"helper_cpu\": %d, "
               "\"app_cpu\": %d, \"llc_checks\": %llu, \"llc_shared\": %llu, \"llc_not_shared\": %llu, "
               "\"last_probe_ns\": %.1f, \"errors\": %llu}\n",
               (int)c.pid, regions, (unsigned long long)bytes,
               c.mode == PTWARM_MODE_WILLNEED ? "process_madvise(WILLNEED)" : s.pagemap_scan ? "PAGEMAP_SCAN" : "pread",
               ptwarm_state_name(s.state), (unsigned long long)s.sweeps, (unsigned long long)s.pages,
               (unsigned long long)s.accesses, s.last_sweep_ns / 1e6,
               s.sweeps ? (double)s.warm_ns / (double)s.sweeps / 1e6 : 0.0, s.warm_ns / 1e9, s.idle_ns / 1e9,
               s.helper_cpu, s.app_cpu, (unsigned long long)s.llc_checks, (unsigned long long)s.llc_shared,
               (unsigned long long)s.llc_not_shared, s.last_probe_ns, (unsigned long long)s.errors);
    }
    ptwarm_destroy(w);
    return 0;
}
