/* color_sweep: does TLB coloring isolate two tasks on this machine? (timing only; seed 003 §6.0.8)
 *
 * Two tasks alternate on one core, as jobs of a cyclic executive in one pinned thread (the seed's
 * App. A.2 shows scheduler noise swamping TLB effects when the tasks are separate threads): job of
 * B (sweep all of B's pages), then job of A (sweep all of A's pages, timed). A sweep is a dependent
 * pointer chase through one line of each of the task's pages in a fixed random order, so every
 * access pays its translation in full. More pages than the 64-entry fully associative L1 DTLB are
 * swept, so A's translations must come from the set-associative L2 DTLB, which is what the colors
 * partition.
 *
 * Placement variants (each task's pages are spread round-robin over its colors):
 *   same  - A and B allocate from overlapping colors: their pages share L2 DTLB sets, and when a
 *           set holds more pages than it has ways, B's job evicts A's translations;
 *   diff  - A and B allocate from disjoint colors: A's sets never see B's pages;
 *   glibc - A then B allocate their pages with malloc(4096), one per page, as the seed did.
 * Rounds interleave the variants (rotating their order) and each round reports, per variant, the
 * median over its jobs of A's ns per access; the JSON output gives per-variant medians and spread
 * over rounds, plus the placement facts (pages per set) computed from the addresses.
 *
 * With --threads 1 the tasks are two threads pinned to the same CPU instead, alternating through
 * a pair of semaphores (the seed's setup, §5 Alg. 4, minus the periodic release): every hand-over
 * is a context switch in the same address space, so no TLB flush, but kernel entries add their
 * own translations ("OS noise", seed §6.0.6).
 *
 * Usage: color_sweep [--machine HOST.toml] [--sets 128] [--ways 16] [--a-pages 96] [--a-colors 8] [--a-first 0] [--b-pages 96]
 *                    [--b-colors 8] [--b-first A_COLORS] [--rounds 15] [--jobs 201] [--cpu 0] [--seed 1] [--threads 0|1]
 * --machine takes sets and ways from a machine file (tlb_geometry_from_machine: the set-associative
 * data-TLB level with the most entries), as `tlblab host coloring` passes them.
 * --dump 1 prints, instead of measuring, each variant's A and B sweeps as the addresses they read in
 * order ({"same": {"a": [...], "b": [...]}, ...}): the trace `tlblab host coloring --predict`
 * simulates, so that the model sees the very placement the measurement runs.
 * Output: one JSON object on stdout. Errors: one line on stderr, exit status 2. */
#include "tlblab/color.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif
#include "bench_host.h"

typedef struct opts {
    unsigned sets, ways, a_pages, a_colors, a_first, b_pages, b_colors, b_first, rounds, jobs, cpu;
    unsigned threads; /* 1: each task is its own thread, handing over with semaphores */
    unsigned dump;    /* 1: print the sweeps' addresses and exit (--dump) */
    unsigned long long seed;
} opts_t;

/* A task: the addresses its sweep touches (one per page) linked into one random cycle. */
typedef struct task {
    unsigned n;
    void **elem;
} task_t;

static void link_cycle(task_t *t) {
    unsigned *perm = malloc(t->n * sizeof *perm);
    for (unsigned i = 0; i < t->n; i++)
        perm[i] = i;
    for (unsigned i = t->n - 1; i > 0; i--) {
        unsigned j = (unsigned)(sm_next() % (i + 1));
        unsigned x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    for (unsigned i = 0; i < t->n; i++)
        *(void **)t->elem[perm[i]] = t->elem[perm[(i + 1) % t->n]];
    free(perm);
}

static void *sweep(const task_t *t) {
    void *p = t->elem[0];
    for (unsigned i = 0; i < t->n; i++)
        p = *(void **)p;
    return p;
}

typedef struct variant {
    const char *name;
    task_t a, b;
    tlb_arena_t *arena;
    void **glibc_blocks;
    unsigned glibc_count;
    double *round_ns; /* A's median ns/access per round */
    double *round_ns_b;
    unsigned max_per_set, shared_sets, a_max_per_set;
} variant_t;

static void die(const char *msg) {
    fprintf(stderr, "color_sweep: %s\n", msg);
    exit(2);
}

/* Colored placement: page i of a task goes to color colors0 + (i mod ncolors). One 2048-byte,
 * 64-byte-aligned block per slot; the touched line rotates inside it to spread L1D sets. */
static void colored_task(tlb_arena_t *ar, task_t *t, unsigned n, unsigned color0, unsigned ncolors) {
    t->n = n;
    t->elem = malloc(n * sizeof *t->elem);
    for (unsigned i = 0; i < n; i++) {
        unsigned char *p = tlb_aligned_alloc(ar, 64, 2048, color0 + i % ncolors);
        if (p == NULL)
            die("the arena ran out of slots (raise --periods via fewer pages per color)");
        t->elem[i] = p + (size_t)((i + (i >> 4)) & 31) * 64;
    }
    link_cycle(t);
}

static void glibc_task(variant_t *v, task_t *t, unsigned n) {
    t->n = n;
    t->elem = malloc(n * sizeof *t->elem);
    for (unsigned i = 0; i < n; i++) {
        unsigned char *p = malloc(4096);
        if (p == NULL)
            die("malloc failed");
        memset(p, 0, 4096);
        v->glibc_blocks[v->glibc_count++] = p;
        /* The middle of each 4 KiB block: consecutive blocks' middles are 4112 B apart, so every
         * element is on its own page. */
        t->elem[i] = p + 2048;
    }
    link_cycle(t);
}

/* Placement facts from the addresses: the largest number of (A+B) pages in one set, how many of
 * A's sets B also uses, and the largest number of A's own pages in one set. */
static void placement_facts(variant_t *v, unsigned sets) {
    unsigned *ca = calloc(sets, sizeof *ca), *cb = calloc(sets, sizeof *cb);
    for (unsigned i = 0; i < v->a.n; i++)
        ca[((uintptr_t)v->a.elem[i] >> 12) & (sets - 1)]++;
    for (unsigned i = 0; i < v->b.n; i++)
        cb[((uintptr_t)v->b.elem[i] >> 12) & (sets - 1)]++;
    v->max_per_set = v->shared_sets = v->a_max_per_set = 0;
    for (unsigned s = 0; s < sets; s++) {
        if (ca[s] + cb[s] > v->max_per_set)
            v->max_per_set = ca[s] + cb[s];
        if (ca[s] > v->a_max_per_set)
            v->a_max_per_set = ca[s];
        if (ca[s] && cb[s])
            v->shared_sets++;
    }
    free(ca);
    free(cb);
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double quantile(double *v, unsigned n, double q) {
    qsort(v, n, sizeof *v, cmp_double);
    double pos = q * (n - 1);
    unsigned lo = (unsigned)pos;
    unsigned hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

static void print_stats(const char *key, double *vals, unsigned n) {
    double *c = malloc(n * sizeof *c);
    memcpy(c, vals, n * sizeof *c);
    qsort(c, n, sizeof *c, cmp_double); /* before the printf: argument order is unspecified */
    printf("\"%s\": {\"median\": %.3f, \"q1\": %.3f, \"q3\": %.3f, \"min\": %.3f, \"max\": %.3f, \"rounds\": [", key,
           quantile(c, n, 0.5), quantile(c, n, 0.25), quantile(c, n, 0.75), c[0], c[n - 1]);
    for (unsigned i = 0; i < n; i++)
        printf("%s%.3f", i ? ", " : "", vals[i]);
    printf("]}");
    free(c);
}

/* Two-thread mode: B's thread and A's thread take turns; job 0 of each is a warm-up. One side:
 * its task, its job times, the semaphore it waits on and the one it hands the turn to. */
typedef struct side {
    const task_t *task;
    unsigned jobs;
    uint64_t *times;
    sem_t *go, *next;
} side_t;

static void *side_main(void *arg) {
    side_t *me = arg;
    void *volatile sink = NULL;
    for (unsigned job = 0; job <= me->jobs; job++) {
        sem_wait(me->go);
        uint64_t t0 = ticks();
        sink = sweep(me->task);
        uint64_t t1 = ticks();
        if (job > 0)
            me->times[job - 1] = t1 - t0;
        sem_post(me->next);
    }
    (void)sink;
    return NULL;
}

/* Run the jobs as two threads (they inherit this thread's single-CPU affinity). */
static void run_threads(const variant_t *x, unsigned jobs, uint64_t *ta, uint64_t *tb) {
    sem_t go_a, go_b;
    sem_init(&go_a, 0, 0);
    sem_init(&go_b, 0, 0);
    side_t a = {.task = &x->a, .jobs = jobs, .times = ta, .go = &go_a, .next = &go_b};
    side_t b = {.task = &x->b, .jobs = jobs, .times = tb, .go = &go_b, .next = &go_a};
    pthread_t pa, pb;
    if (pthread_create(&pa, NULL, side_main, &a) != 0)
        die("pthread_create failed");
    if (pthread_create(&pb, NULL, side_main, &b) != 0)
        die("pthread_create failed");
    sem_post(&go_b);
    pthread_join(pa, NULL);
    pthread_join(pb, NULL);
    sem_destroy(&go_a);
    sem_destroy(&go_b);
}

static unsigned parse_opt(const char *name, const char *val) {
    return parse_uint_opt("color_sweep", name, val, 1000000);
}

int main(int argc, char **argv) {
    opts_t o = {.sets = 128, .ways = 16, .a_pages = 96, .a_colors = 8, .b_pages = 96, .b_colors = 8, .b_first = UINT32_MAX,
                .rounds = 15, .jobs = 201, .cpu = 0, .seed = 1};
    /* The options that set an unsigned field, and the field. */
    const struct {
        const char *name;
        unsigned *field;
    } numeric[] = {{"--sets", &o.sets},         {"--ways", &o.ways},       {"--a-pages", &o.a_pages},
                   {"--a-colors", &o.a_colors}, {"--b-pages", &o.b_pages}, {"--b-colors", &o.b_colors},
                   {"--b-first", &o.b_first},   {"--a-first", &o.a_first}, {"--rounds", &o.rounds},
                   {"--jobs", &o.jobs},         {"--cpu", &o.cpu},         {"--threads", &o.threads},
                   {"--dump", &o.dump}};
    enum { N_NUMERIC = sizeof numeric / sizeof numeric[0] };
    for (int i = 1; i < argc; i += 2) {
        const char *k = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(k, "--machine")) {
            /* The colored level from a machine file (`tlblab probe --out host.toml`); a later
             * --sets/--ways overrides it. */
            tlb_geometry_t mg = {0};
            char emsg[512];
            if (val == NULL || tlb_geometry_from_machine(val, &mg, emsg, sizeof emsg) != TLB_OK) {
                fprintf(stderr, "color_sweep: --machine: %s\n", val ? emsg : "needs a file name");
                return 2;
            }
            o.sets = mg.sets;
            o.ways = mg.ways;
            continue;
        }
        unsigned v = parse_opt(k, val);
        if (!strcmp(k, "--seed")) {
            o.seed = v;
            continue;
        }
        size_t at = 0;
        while (at < N_NUMERIC && strcmp(k, numeric[at].name) != 0)
            at++;
        if (at == N_NUMERIC) {
            fprintf(stderr, "color_sweep: unknown option %s\n", k);
            return 2;
        }
        *numeric[at].field = v;
    }
    if (o.a_pages < 1 || o.b_pages < 1 || o.a_colors < 1 || o.b_colors < 1 || o.rounds < 1 || o.jobs < 1)
        die("pages, colors, rounds and jobs must be at least 1");
    if (o.b_first == UINT32_MAX)
        o.b_first = (o.a_first + o.a_colors) % o.sets;
    if (o.a_first + o.a_colors > o.sets || o.b_first + o.b_colors > o.sets ||
        (o.b_first < o.a_first + o.a_colors && o.a_first < o.b_first + o.b_colors))
        die("the diff variant needs B's colors b-first..b-first+b-colors-1 disjoint from A's "
            "a-first..a-first+a-colors-1, both below sets");
    sm_state = o.seed;
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(o.cpu, &cs);
    if (sched_setaffinity(0, sizeof cs, &cs) != 0)
        die("sched_setaffinity failed (is --cpu online?)");

    /* Slots per color: enough for both tasks' pages on their most loaded shared color. */
    unsigned per_a = (o.a_pages + o.a_colors - 1) / o.a_colors, per_b = (o.b_pages + o.b_colors - 1) / o.b_colors;
    unsigned periods = per_a + per_b;
    tlb_geometry_t g = {.sets = o.sets, .ways = o.ways, .page_shift = 12, .periods = periods};
    variant_t v[3] = {{.name = "same"}, {.name = "diff"}, {.name = "glibc"}};
    char msg[256];
    for (int k = 0; k < 2; k++) {
        v[k].arena = tlb_arena_create(&g, NULL, msg, sizeof msg);
        if (v[k].arena == NULL) {
            fprintf(stderr, "color_sweep: %s\n", msg);
            return 2;
        }
    }
    colored_task(v[0].arena, &v[0].a, o.a_pages, o.a_first, o.a_colors);
    colored_task(v[0].arena, &v[0].b, o.b_pages, o.a_first, o.b_colors);
    colored_task(v[1].arena, &v[1].a, o.a_pages, o.a_first, o.a_colors);
    colored_task(v[1].arena, &v[1].b, o.b_pages, o.b_first, o.b_colors);
    v[2].glibc_blocks = malloc((o.a_pages + o.b_pages) * sizeof(void *));
    glibc_task(&v[2], &v[2].a, o.a_pages);
    glibc_task(&v[2], &v[2].b, o.b_pages);
    for (int k = 0; k < 3; k++) {
        placement_facts(&v[k], o.sets);
        v[k].round_ns = malloc(o.rounds * sizeof(double));
        v[k].round_ns_b = malloc(o.rounds * sizeof(double));
    }

    if (o.dump) {
        for (int k = 0; k < 3; k++) {
            printf("%s\"%s\": {", k ? ", " : "{", v[k].name);
            for (int s = 0; s < 2; s++) {
                const task_t *t = s ? &v[k].b : &v[k].a;
                void *p = t->elem[0];
                printf("%s\"%c\": [", s ? ", " : "", s ? 'b' : 'a');
                for (unsigned i = 0; i < t->n; i++, p = *(void **)p)
                    printf("%s%llu", i ? "," : "", (unsigned long long)(uintptr_t)p);
                printf("]");
            }
            printf("}");
        }
        printf("}\n");
        return 0;
    }
    double tick_ns = ns_per_tick();
    uint64_t *ta = malloc(o.jobs * sizeof *ta), *tb = malloc(o.jobs * sizeof *tb);
    double *tmp = malloc(o.jobs * sizeof *tmp);
    void *volatile sink = NULL;
    for (unsigned r = 0; r < o.rounds; r++) {
        for (unsigned j = 0; j < 3; j++) {
            variant_t *x = &v[(r + j) % 3];
            if (o.threads) {
                run_threads(x, o.jobs, ta, tb);
            } else {
                sink = sweep(&x->a); /* warm-up job pair */
                sink = sweep(&x->b);
                for (unsigned job = 0; job < o.jobs; job++) {
                    uint64_t t0 = ticks();
                    sink = sweep(&x->b);
                    uint64_t t1 = ticks();
                    sink = sweep(&x->a);
                    uint64_t t2 = ticks();
                    tb[job] = t1 - t0;
                    ta[job] = t2 - t1;
                }
            }
            for (unsigned job = 0; job < o.jobs; job++)
                tmp[job] = (double)ta[job] * tick_ns / x->a.n;
            x->round_ns[r] = quantile(tmp, o.jobs, 0.5);
            for (unsigned job = 0; job < o.jobs; job++)
                tmp[job] = (double)tb[job] * tick_ns / x->b.n;
            x->round_ns_b[r] = quantile(tmp, o.jobs, 0.5);
        }
    }
    (void)sink;

    printf("{\"sets\": %u, \"ways\": %u, \"a_pages\": %u, \"a_colors\": %u, \"b_pages\": %u, \"b_colors\": %u, "
           "\"a_first\": %u, \"b_first\": %u, \"mode\": \"%s\", \"periods\": %u, \"rounds\": %u, \"jobs\": %u, \"cpu\": %u, \"seed\": %llu, \"ns_per_tick\": %.5f, "
           "\"variants\": {",
           o.sets, o.ways, o.a_pages, o.a_colors, o.b_pages, o.b_colors, o.a_first, o.b_first, o.threads ? "threads" : "inline", periods, o.rounds, o.jobs, o.cpu, o.seed,
           tick_ns);
    for (int k = 0; k < 3; k++) {
        printf("%s\"%s\": {\"max_pages_per_set\": %u, \"a_max_pages_per_set\": %u, \"sets_shared\": %u, ",
               k ? ", " : "", v[k].name, v[k].max_per_set, v[k].a_max_per_set, v[k].shared_sets);
        print_stats("a_ns_per_access", v[k].round_ns, o.rounds);
        printf(", ");
        print_stats("b_ns_per_access", v[k].round_ns_b, o.rounds);
        printf("}");
    }
    printf("}}\n");
    for (int k = 0; k < 2; k++)
        tlb_arena_destroy(v[k].arena);
    for (unsigned i = 0; i < v[2].glibc_count; i++)
        free(v[2].glibc_blocks[i]);
    return 0;
}
