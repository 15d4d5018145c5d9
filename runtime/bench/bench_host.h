/* What the host measurement programs in runtime/bench/ share: a cycle-granular clock (lfence+rdtsc
 * on x86, CLOCK_MONOTONIC elsewhere) with its ns per tick, a monotonic ns clock, and --boost's
 * priority raise, a seeded SplitMix64 generator, pinning to a CPU and spinner threads. Header-only (static inline): each program is one file built on its own. */
#ifndef TLBLAB_BENCH_HOST_H
#define TLBLAB_BENCH_HOST_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

static inline uint64_t ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;

#endif
}

/* ns per tick of `ticks`, over 50 ms of CLOCK_MONOTONIC. */
static inline double ns_per_tick(void) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t c0 = ticks();
    do
        clock_gettime(CLOCK_MONOTONIC, &t1);
    while ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec) < 50e6);
    uint64_t c1 = ticks();
    return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)(c1 - c0);
}

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --boost 1: run ahead of the builds that share the machine. With autogroup scheduling a plain nice
 * value only ranks threads within their session, so the program first moves into a session of its
 * own (a new autogroup), gives that group nice -20, then the thread too. Threads, spinners and
 * children inherit it. Not SCHED_FIFO: the LLC probe must still get a slice of the application CPU. */
static inline void boost_self(void) {
    setsid(); /* fails harmlessly if we already lead a process group: then the group nice is ours anyway */
    FILE *f = fopen("/proc/self/autogroup", "w");
    if (f) {
        fputs("-20", f);
        fclose(f);
    }
    if (setpriority(PRIO_PROCESS, 0, -20) != 0) {
        fprintf(stderr, "boost needs permission to renice to -20\n");
        exit(2);
    }
}

/* Option `name`'s value `val` as an integer in 0..max, or exit 2 naming the program, the option,
 * the range and what was found. */
static inline unsigned parse_uint_opt(const char *prog, const char *name, const char *val, unsigned long max) {
    char *end;
    errno = 0;
    unsigned long v = val ? strtoul(val, &end, 10) : 0;
    if (val == NULL || *val == '\0' || *end != '\0' || errno != 0 || v > max) {
        fprintf(stderr, "%s: option %s needs an integer in 0..%lu, found '%s'\n", prog, name, max, val ? val : "");
        exit(2);
    }
    return (unsigned)v;
}

/* SplitMix64 (Steele, Lea and Flood, OOPSLA 2014), seeded by setting sm_state: each program's
 * random orders, repeatable from its --seed. */
static uint64_t sm_state;
static inline uint64_t sm_next(void) {
    uint64_t z = (sm_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Marsaglia's xorshift64 (13, 7, 17; "Xorshift RNGs", J. Stat. Softw. 2003) on the state `*s`
 * (not 0): a cheap generator per stream, for the programs that keep several. */
static inline uint64_t xorshift64(uint64_t *s) {
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

/* Moves the calling thread to `cpu` alone; sched_setaffinity's result (0, or -1 with errno). */
static inline int pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return sched_setaffinity(0, sizeof s, &s);
}

/* A thread that spins on `cpu` until `stop` is set (start it with bench_spin_main). `idle`: at
 * SCHED_IDLE, to keep a vCPU from halting between trials without competing with the measured
 * thread (migrate_bench); otherwise at the caller's priority with a pause per turn, a CPU kept
 * busy as a helper would keep it (ptwarm_bench's `spin` variant). */
typedef struct {
    atomic_int stop;
    int cpu;
    int idle;
} bench_spinner;

static inline void *bench_spin_main(void *arg) {
    bench_spinner *s = arg;
    if (s->idle) {
        struct sched_param sp = {0};
        pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    }
    pin(s->cpu);
    while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
#if defined(__x86_64__)
        if (!s->idle) __builtin_ia32_pause();
#endif
    }
    return NULL;
}

#endif
