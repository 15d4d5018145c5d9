/* tlbmig: TLB re-warming after a detected migration (seed 000), see tlblab/tlbmig.h.
 *
 * The registered pages are kept as spans {addr, count, stride}; a single page is a span of one. The
 * re-warm walks the spans in registration order issuing prefetcht0 (seed 000 §4.2 uses `pld`, the Arm
 * equivalent, for its "indirect" restore: touch the addresses and let the walker refill the TLB), and
 * stops at cap_pages: the L2 DTLB holds 2048 entries here, and beyond about 1000 pages the prefetched
 * entries start evicting each other (docs/ptwarm.md). */
#include "tlblab/tlbmig.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prim.h"

typedef struct {
    tlbmig_region_id id;
    const char *addr;
    size_t count;
    size_t stride;
} span;

struct tlbmig {
    tlbmig_config cfg;
    span *spans;
    size_t n, cap;
    tlbmig_region_id next_id;
    bool rseq;
    const volatile unsigned *rseq_cpu; /* the owning thread's rseq cpu_id: the check is one load */
    tlbmig_stats st;
};

void tlbmig_config_default(tlbmig_config *cfg) {
    cfg->cap_pages = 1024;
    cfg->use_rseq = true;
}

int tlbmig_current_cpu(const tlbmig_t *t) {
    return (t && t->rseq_cpu) ? (int)*t->rseq_cpu : tlbmig_prim_getcpu();
}

int tlbmig_create(const tlbmig_config *cfg, tlbmig_t **out) {
    if (!cfg || !out || cfg->cap_pages == 0) return -EINVAL;
    tlbmig_t *t = calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    t->cfg = *cfg;
    t->rseq = cfg->use_rseq && tlbmig_prim_rseq_ok();
    t->rseq_cpu = t->rseq ? tlbmig_prim_rseq_cpu_ptr() : NULL;
    t->st.rseq = t->rseq;
    t->st.last_cpu = tlbmig_current_cpu(t);
    *out = t;
    return 0;
}

void tlbmig_destroy(tlbmig_t *t) {
    if (!t) return;
    free(t->spans);
    free(t);
}

static int add_span(tlbmig_t *t, const void *addr, size_t count, size_t stride, tlbmig_region_id *id) {
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        span *s = realloc(t->spans, cap * sizeof *s);
        if (!s) return -ENOMEM;
        t->spans = s;
        t->cap = cap;
    }
    span *s = &t->spans[t->n++];
    s->id = ++t->next_id;
    s->addr = addr;
    s->count = count;
    s->stride = stride;
    t->st.pages += count;
    t->st.regions = t->n;
    if (id) *id = s->id;
    return 0;
}

int tlbmig_add_page(tlbmig_t *t, const void *addr, tlbmig_region_id *id) {
    if (!t) return -EINVAL;
    return add_span(t, addr, 1, 0, id);
}

int tlbmig_add_region(tlbmig_t *t, const void *addr, size_t len, size_t stride, tlbmig_region_id *id) {
    if (!t || len == 0) return -EINVAL;
    if (stride == 0) stride = tlbmig_prim_page_size();
    return add_span(t, addr, (len + stride - 1) / stride, stride, id);
}

int tlbmig_remove(tlbmig_t *t, tlbmig_region_id id) {
    if (!t) return -EINVAL;
    for (size_t i = 0; i < t->n; i++) {
        if (t->spans[i].id == id) {
            t->st.pages -= t->spans[i].count;
            memmove(&t->spans[i], &t->spans[i + 1], (t->n - i - 1) * sizeof(span));
            t->n--;
            t->st.regions = t->n;
            return 0;
        }
    }
    return -ENOENT;
}

void tlbmig_clear(tlbmig_t *t) {
    if (!t) return;
    t->n = 0;
    t->st.pages = 0;
    t->st.regions = 0;
}

size_t tlbmig_rewarm(tlbmig_t *t) {
    if (!t) return 0;
    size_t left = t->cfg.cap_pages, done = 0;
    for (size_t i = 0; i < t->n && left; i++) {
        const span *s = &t->spans[i];
        size_t k = s->count < left ? s->count : left;
        const char *p = s->addr;
        /* Address arithmetic on possibly-unmapped addresses: done in uintptr_t, only ever prefetched. */
        uintptr_t a = (uintptr_t)p;
        for (size_t j = 0; j < k; j++, a += s->stride) __builtin_prefetch((const void *)a, 0, 3);
        left -= k;
        done += k;
    }
    t->st.rewarms++;
    t->st.pages_rewarmed += done;
    if (done < t->st.pages) t->st.capped++;
    return done;
}

size_t tlbmig_check(tlbmig_t *t) {
    if (!t) return 0;
    int cpu = tlbmig_current_cpu(t);
    t->st.checks++;
    if (cpu == t->st.last_cpu) return 0;
    t->st.last_cpu = cpu;
    t->st.migrations++;
    return tlbmig_rewarm(t);
}

void tlbmig_get_stats(const tlbmig_t *t, tlbmig_stats *out) {
    if (t && out) *out = t->st;
}

bool tlbmig_invariants_hold(const tlbmig_t *t) {
    if (!t || t->n > t->cap || t->st.regions != t->n) return false;
    size_t pages = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->spans[i].id == 0 || t->spans[i].id > t->next_id || t->spans[i].count == 0) return false;
        if (i && t->spans[i - 1].id >= t->spans[i].id) return false;
        pages += t->spans[i].count;
    }
    return pages == t->st.pages && t->st.migrations <= t->st.checks &&
           t->st.capped <= t->st.rewarms;
}
