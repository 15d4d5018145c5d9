/* hp_common.h: what the host-prediction programs share (`tlblab host predict`, docs/host-predict.md).
 * Each program builds its data, then runs ROUNDS equal rounds of its TLB-sensitive phase between
 * TLBLAB_ROI_BEGIN/END (tlblab/roi.h), timed by CLOCK_MONOTONIC, and prints one line:
 *     roi_seconds=S rounds=R checksum=C
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

static inline void *hp_alloc(size_t bytes, const char *what) {
    void *p = malloc(bytes);
    if (p == NULL) {
        fprintf(stderr, "out of memory allocating %s (%zu bytes)\n", what, bytes);
        exit(1);
    }
    return p;
}

static inline void hp_report(double seconds, uint64_t rounds, uint64_t checksum) {
    printf("roi_seconds=%.6f rounds=%llu checksum=%llu\n", seconds, (unsigned long long)rounds,
           (unsigned long long)checksum);
}

#endif
