/* hp_common.h: what the host-prediction programs share (`tlblab host predict`, docs/host-predict.md).
 * Each program builds its data, then runs ROUNDS equal rounds of its TLB-sensitive phase between
 * TLBLAB_ROI_BEGIN/END (tlblab/roi.h), timed by two clocks (hp_roi below), and prints one line:
 *     roi_seconds=S roi_cpu_seconds=C rounds=R checksum=X round_cpu_seconds=S1,S2,...
 * Equal rounds let a capture of two rounds stand for the measured run: the model simulates the
 * second (the first is its warm-up) and scales by the rounds measured. Inputs are drawn from a
 * fixed seed, so every run allocates, and touches, the same. */
#ifndef TLBLAB_HP_COMMON_H
#define TLBLAB_HP_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tlblab/roi.h"

static inline double hp_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* xorshift64*: the programs' one generator (Vigna 2016). */
static inline uint64_t hp_next(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* argv[i] as a count (k/M/G binary suffixes), or `dflt` when absent; one line and exit 2 when bad. */
static inline uint64_t hp_arg(int argc, char **argv, int i, uint64_t dflt, const char *what) {
    if (i >= argc)
        return dflt;
    char *end;
    unsigned long long v = strtoull(argv[i], &end, 0);
    if (*end == 'k' || *end == 'K')
        v <<= 10, end++;
    else if (*end == 'M')
        v <<= 20, end++;
    else if (*end == 'G')
        v <<= 30, end++;
    if (end == argv[i] || *end != '\0' || v == 0) {
        fprintf(stderr, "%s: argument %d (%s): expected a positive count, found '%s'\n", argv[0], i, what, argv[i]);
        exit(2);
    }
    return v;
}

/* hp_arg, bounded: one line and exit 2 above `max` (a size that would not fit the pool). */
static inline uint64_t hp_arg_max(int argc, char **argv, int i, uint64_t dflt, const char *what, uint64_t max) {
    uint64_t v = hp_arg(argc, argv, i, dflt, what);
    if (v > max) {
        fprintf(stderr, "%s: %s: expected at most %llu, found %llu\n", argv[0], what, (unsigned long long)max,
                (unsigned long long)v);
        exit(2);
    }
    return v;
}

static inline void *hp_alloc(size_t bytes, const char *what) {
    void *p = malloc(bytes);
    if (p == NULL) {
        fprintf(stderr, "out of memory allocating %s (%zu bytes)\n", what, bytes);
        exit(1);
    }
    return p;
}

/* The region of interest, timed by two clocks: the wall (CLOCK_MONOTONIC) and the process's CPU time
 * (CLOCK_PROCESS_CPUTIME_ID, the programs are single-threaded). On a shared machine the second leaves
 * out the time the run waited for the CPU: under SCHED_FIFO the kernel's fair server still hands the
 * CPU's normal tasks up to 50 ms a second, and without it the neighbours' builds take far more
 * (docs/host-predict.md, "Isolation"); under paravirtual steal-time accounting it also leaves out the
 * time the hypervisor ran something else. */
#define HP_MAX_ROUNDS 64

typedef struct {
    double wall, cpu;
    unsigned rounds;                /* rounds marked by hp_round_done */
    double round_end[HP_MAX_ROUNDS]; /* CPU time at each round's end */
} hp_roi;

static inline double hp_cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Begins the region: the capture's mark outside the clocks' readings, so a capture holds the same
 * references as the timed part of a native run. */
static inline hp_roi hp_roi_begin(void) {
    TLBLAB_ROI_BEGIN();
    hp_roi r = {hp_now(), hp_cpu_now(), 0, {0}};
    return r;
}

/* Marks the end of a round: the rounds' own CPU times let `tlblab host predict` leave out the first
 * (the model's warm-up: it simulates the second of two captured rounds) and take the median of the
 * others, which a burst of the other CPU's work in one round does not move. */
static inline void hp_round_done(hp_roi *r) {
    if (r->rounds < HP_MAX_ROUNDS)
        r->round_end[r->rounds++] = hp_cpu_now();
}

/* Ends the region begun as *r: *r becomes its lengths in seconds (round_end: each round's). */
static inline void hp_roi_end(hp_roi *r) {
    double cpu = hp_cpu_now(), wall = hp_now();
    TLBLAB_ROI_END();
    for (unsigned i = r->rounds; i-- > 1;)
        r->round_end[i] -= r->round_end[i - 1];
    if (r->rounds > 0)
        r->round_end[0] -= r->cpu;
    r->wall = wall - r->wall;
    r->cpu = cpu - r->cpu;
}

/* The one line `tlblab host predict` reads. */
static inline void hp_report(const hp_roi *r, uint64_t rounds, uint64_t checksum) {
    printf("roi_seconds=%.6f roi_cpu_seconds=%.6f rounds=%llu checksum=%llu round_cpu_seconds=", r->wall, r->cpu,
           (unsigned long long)rounds, (unsigned long long)checksum);
    for (unsigned i = 0; i < r->rounds; i++)
        printf("%s%.6f", i ? "," : "", r->round_end[i]);
    printf("\n");
}

/* Ends the region and prints its line: what every program does after its last round. */
static inline void hp_roi_finish(hp_roi *r, uint64_t rounds, uint64_t checksum) {
    hp_roi_end(r);
    hp_report(r, rounds, checksum);
}

/* The graph programs' arguments (bfs.c, pagerank.c): SCALE (2^SCALE vertices, at most 2^28),
 * EDGEFACTOR (edges per vertex) and ROUNDS, with their defaults. */
static inline void hp_graph_args(int argc, char **argv, uint64_t scale_dflt, uint64_t ef_dflt, uint64_t *scale,
                                 uint64_t *ef, uint64_t *rounds) {
    *scale = hp_arg_max(argc, argv, 1, scale_dflt, "SCALE", 28);
    *ef = hp_arg(argc, argv, 2, ef_dflt, "EDGEFACTOR");
    *rounds = hp_arg_max(argc, argv, 3, 4, "ROUNDS", HP_MAX_ROUNDS);
}

/* perm = a uniformly random permutation of [0, n) (Fisher-Yates, drawn from *s). */
static inline void hp_permutation(uint32_t *perm, uint64_t n, uint64_t *s) {
    for (uint64_t v = 0; v < n; v++)
        perm[v] = (uint32_t)v;
    for (uint64_t v = n - 1; v > 0; v--) {
        uint64_t j = hp_next(s) % (v + 1);
        uint32_t t = perm[v];
        perm[v] = perm[j];
        perm[j] = t;
    }
}

/* m R-MAT edges on 2^scale vertices (Graph500's probabilities a = 0.57, b = 0.19, c = 0.19,
 * d = 0.05, one quadrant a bit), the vertices renamed by perm: the graph bfs.c and pagerank.c share. */
static inline void hp_rmat_edges(uint32_t *src, uint32_t *dst, uint64_t m, uint64_t scale, const uint32_t *perm,
                                 uint64_t *s) {
    for (uint64_t e = 0; e < m; e++) {
        uint64_t u = 0, v = 0;
        for (uint64_t bit = 0; bit < scale; bit++) {
            uint64_t x = hp_next(s) % 100;
            u = u << 1 | (x >= 76);
            v = v << 1 | ((x >= 57 && x < 76) || x >= 95);
        }
        src[e] = perm[u];
        dst[e] = perm[v];
    }
}

/* Compressed sparse rows of the m edges key[e] -> val[e] (and val[e] -> key[e] too when `both`: an
 * undirected graph), the rows by key: off (n + 1 entries, allocated by the caller) counts each
 * row's edges and is prefix-summed; the row's targets are then written, in edge order, to a new
 * array named `what`, which is returned. bfs.c's adjacency and pagerank.c's in-neighbours. */
static inline uint32_t *hp_csr(uint64_t *off, uint64_t n, const uint32_t *key, const uint32_t *val, uint64_t m,
                               int both, const char *what) {
    memset(off, 0, (n + 1) * sizeof *off);
    for (uint64_t e = 0; e < m; e++) {
        off[key[e] + 1]++;
        if (both)
            off[val[e] + 1]++;
    }
    for (uint64_t v = 0; v < n; v++)
        off[v + 1] += off[v];
    uint32_t *adj = hp_alloc((both ? 2 : 1) * m * sizeof *adj, what);
    uint64_t *fill = hp_alloc(n * sizeof *fill, "fill");
    memcpy(fill, off, n * sizeof *fill);
    for (uint64_t e = 0; e < m; e++) {
        adj[fill[key[e]]++] = val[e];
        if (both)
            adj[fill[val[e]]++] = key[e];
    }
    free(fill);
    return adj;
}

#endif
