/* color_wcet: worst-case timing harness of the coloring allocator against glibc malloc.
 *
 * One random workload (sizes 1..max, 8 colors, ~50% live blocks, a live set kept near `live`
 * blocks) is generated once from a seed and replayed on both allocators; every single
 * allocation and free is timed with lfence+rdtsc (TSC ticks; on this VM the TSC advances in steps of
 * about 24 ticks, so values below ~25 ticks are quantised). Replays alternate between the two
 * allocators `reps` times so that machine noise hits both alike. A "cold" pass repeats the replay
 * after each operation has had its caches (data and TLB) flushed by sweeping a 64 MiB buffer, every
 * `cold_every` operations.
 *
 * Usage: color_wcet [--ops 200000] [--reps 5] [--live 2000] [--max 2000] [--cold-every 0] [--seed 1]
 * Output: JSON with p50/p99/p99.9/max ticks per operation and allocator, plus ns_per_tick. */
#include "tlblab/color.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif
#include "bench_host.h"

typedef struct op {
    uint32_t slot;  /* index into the live table */
    uint32_t size;  /* 0 = free the block in slot */
    uint32_t color;
} op_t;

typedef struct samples {
    uint64_t *v;
    size_t n;
} samples_t;

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void print_stats(const char *name, samples_t *s, int last) {
    qsort(s->v, s->n, sizeof *s->v, cmp_u64);
#define Q(q) s->v[(size_t)((q) * (double)(s->n - 1))]
    printf("\"%s\": {\"count\": %zu, \"p50\": %llu, \"p99\": %llu, \"p999\": %llu, \"max\": %llu}%s", name, s->n,
           (unsigned long long)Q(0.5), (unsigned long long)Q(0.99), (unsigned long long)Q(0.999),
           (unsigned long long)s->v[s->n - 1], last ? "" : ", ");
#undef Q
}

static unsigned char *flush_buf;
static volatile unsigned char flush_sink;
static void flush_caches(void) {
    unsigned char acc = 0;
    for (size_t i = 0; i < ((size_t)64 << 20); i += 64)
        acc = (unsigned char)(acc + flush_buf[i]);
    flush_sink = acc;
}

static unsigned parse_opt(const char *name, const char *val) {
    return parse_uint_opt("color_wcet", name, val, 100000000);
}

int main(int argc, char **argv) {
    unsigned nops = 200000, reps = 5, live = 2000, maxsz = 2000, cold_every = 0, seed = 1;
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i];
        unsigned v = parse_opt(k, i + 1 < argc ? argv[i + 1] : NULL);
        if (!strcmp(k, "--ops")) nops = v;
        else if (!strcmp(k, "--reps")) reps = v;
        else if (!strcmp(k, "--live")) live = v;
        else if (!strcmp(k, "--max")) maxsz = v;
        else if (!strcmp(k, "--cold-every")) cold_every = v;
        else if (!strcmp(k, "--seed")) seed = v;
        else {
            fprintf(stderr, "color_wcet: unknown option %s\n", k);
            return 2;
        }
    }
    if (nops < 10 || reps < 1 || live < 1 || maxsz < 1 || maxsz > 3000) {
        fprintf(stderr, "color_wcet: need ops >= 10, reps >= 1, live >= 1, 1 <= max <= 3000\n");
        return 2;
    }
    /* Zen 3 L2 DTLB geometry (128 sets x 16 ways) with 4 reserved sets; 8 colors used. */
    tlb_geometry_t g = {.sets = 128, .ways = 16, .page_shift = 12, .reserved_sets = 4, .periods = 64};
    char msg[256];
    tlb_arena_t *a = tlb_arena_create(&g, NULL, msg, sizeof msg);
    if (a == NULL) {
        fprintf(stderr, "color_wcet: %s\n", msg);
        return 2;
    }
    /* Generate the workload: allocate into empty table slots, free occupied ones. */
    sm_state = seed;
    op_t *ops = malloc(nops * sizeof *ops);
    char *occupied = calloc(live, 1);
    for (unsigned i = 0; i < nops; i++) {
        uint32_t s = (uint32_t)(sm_next() % live);
        if (occupied[s]) {
            ops[i] = (op_t){s, 0, 0};
            occupied[s] = 0;
        } else {
            uint64_t r = sm_next();
            uint32_t size = (uint32_t)(1 + (r % 4 == 0 ? (r >> 8) % maxsz : (r >> 8) % 256));
            ops[i] = (op_t){s, size, (uint32_t)((r >> 40) % 8)};
            occupied[s] = 1;
        }
    }
    void **tab = calloc(live, sizeof *tab);
    size_t cap = (size_t)nops * reps;
    samples_t tm = {malloc(cap * 8), 0}, tf = {malloc(cap * 8), 0}, gm = {malloc(cap * 8), 0},
              gf = {malloc(cap * 8), 0};
    if (cold_every) {
        flush_buf = malloc((size_t)64 << 20);
        memset(flush_buf, 1, (size_t)64 << 20);
    }
    uint64_t tlb_fail = 0;
    for (unsigned r = 0; r < reps; r++) {
        for (int which = 0; which < 2; which++) {
            int use_tlb = (which + (int)r) % 2 == 0;
            for (unsigned i = 0; i < nops; i++) {
                op_t o = ops[i];
                if (cold_every && i % cold_every == 0)
                    flush_caches();
                if (o.size) {
                    uint64_t t0 = ticks();
                    void *p = use_tlb ? tlb_malloc(a, o.size, o.color) : malloc(o.size);
                    uint64_t t1 = ticks();
                    if (p == NULL)
                        tlb_fail++;
                    else
                        *(volatile unsigned char *)p = 1;
                    tab[o.slot] = p;
                    samples_t *s = use_tlb ? &tm : &gm;
                    s->v[s->n++] = t1 - t0;
                } else {
                    void *p = tab[o.slot];
                    uint64_t t0 = ticks();
                    if (use_tlb)
                        tlb_free(a, p);
                    else
                        free(p);
                    uint64_t t1 = ticks();
                    tab[o.slot] = NULL;
                    samples_t *s = use_tlb ? &tf : &gf;
                    s->v[s->n++] = t1 - t0;
                }
            }
            for (unsigned s = 0; s < live; s++) {
                if (tab[s] != NULL) {
                    if (use_tlb)
                        tlb_free(a, tab[s]);
                    else
                        free(tab[s]);
                    tab[s] = NULL;
                }
            }
        }
    }
    if (tlb_arena_check(a, msg, sizeof msg) != TLB_OK) {
        fprintf(stderr, "color_wcet: invariant failed: %s\n", msg);
        return 1;
    }
    /* Overhead of the timing itself (two back-to-back reads). */
    samples_t empty = {malloc(100000 * 8), 0};
    for (int i = 0; i < 100000; i++) {
        uint64_t t0 = ticks();
        uint64_t t1 = ticks();
        empty.v[empty.n++] = t1 - t0;
    }
    printf("{\"ops\": %u, \"reps\": %u, \"live\": %u, \"max_size\": %u, \"cold_every\": %u, \"seed\": %u, "
           "\"ns_per_tick\": %.5f, \"tlb_malloc_failures\": %llu, ",
           nops, reps, live, maxsz, cold_every, seed, ns_per_tick(), (unsigned long long)tlb_fail);
    print_stats("timer_overhead", &empty, 0);
    print_stats("tlb_malloc", &tm, 0);
    print_stats("tlb_free", &tf, 0);
    print_stats("glibc_malloc", &gm, 0);
    print_stats("glibc_free", &gf, 1);
    printf("}\n");
    tlb_arena_destroy(a);
    return 0;
}
