/* ptwarm: the page-table warming helper thread (PT-Baker, seed 001), see tlblab/ptwarm.h.
 *
 * Shape of the helper (seed 001 §4.1, Algorithms 2-4, adapted to a stock kernel):
 *   loop { every recheck_ns: find the application's CPU, place the helper, check LLC sharing;
 *          if warming: sweep all regions batch by batch, then sleep sleep_ns; else idle }
 * The region table is guarded by `mu`, which the helper holds only to pick the next batch and to
 * publish statistics, never while it touches memory or sits in a syscall. The batch in progress is
 * advertised in `busy_id`; ptwarm_unregister() waits for it to change, which is what makes
 * "unregister, then munmap" safe in TOUCH mode. Stop requests are seen between batches and during
 * every wait, so ptwarm_stop() returns within one batch plus one probe.
 */
#include "tlblab/ptwarm.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prim.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

typedef struct {
    ptwarm_region_id id;
    uintptr_t addr;
    size_t len;
} region;

struct ptwarm {
    ptwarm_config cfg;
    size_t page;
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* to the helper: stop requested, region registered */
    pthread_cond_t busy_cv; /* from the helper: batch finished */
    region *regions;        /* sorted by id (ids only grow, appended at the end) */
    size_t n, cap;
    ptwarm_region_id next_id;
    ptwarm_region_id busy_id; /* region of the batch in progress, 0 if none */
    bool running, stop, sweeping;
    pthread_t thread;
    pid_t app_pid, app_tid; /* whose CPU is followed */
    int pagemap_fd;         /* PAGEMAP: /proc/PID/pagemap; WILLNEED: a pidfd */
    bool pagemap_scan;
    unsigned char *vec;     /* mincore output, batch_pages bytes */
    uint64_t *pmbuf;        /* pagemap read buffer, batch_pages entries */
    int pinned_cpu;
    uint64_t idle_since; /* start of the idle wait in progress, 0 if none (for live statistics) */
    ptwarm_stats st;
    volatile uint64_t sink; /* keeps TOUCH loads alive */
};

void ptwarm_config_default(ptwarm_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->mode = PTWARM_MODE_MINCORE;
    cfg->stride_pages = 8;
    cfg->batch_pages = 16384;
    cfg->nops = 0;
    cfg->sleep_ns = 0;
    cfg->placement = PTWARM_PLACE_LLC;
    cfg->cpu = -1;
    cfg->app_cpu = -1;
    cfg->pid = 0;
    cfg->app_tid = 0;
    cfg->llc_check = PTWARM_LLC_CHECK_AUTO;
    cfg->recheck_ns = 2000000000u;
    cfg->probe_threshold_ns = 40.0;
}

static const char *const MODE_NAMES[] = {"touch", "prefetch", "mincore", "pagemap", "willneed"};
static const char *const STATE_NAMES[] = {"stopped",         "warming",         "idle_no_regions",
                                          "idle_llc_not_shared", "idle_topology", "idle_same_cpu",
                                          "target_gone",     "failed",          "checking"};

const char *ptwarm_mode_name(ptwarm_mode m) {
    return (unsigned)m < 5 ? MODE_NAMES[m] : "?";
}

const char *ptwarm_state_name(ptwarm_state s) {
    return (unsigned)s < sizeof STATE_NAMES / sizeof STATE_NAMES[0] ? STATE_NAMES[s] : "?";
}

int ptwarm_mode_parse(const char *name, ptwarm_mode *m) {
    for (int i = 0; i < 5; i++)
        if (name && strcmp(name, MODE_NAMES[i]) == 0) {
            *m = (ptwarm_mode)i;
            return 0;
        }
    return -EINVAL;
}

int ptwarm_create(const ptwarm_config *cfg, ptwarm_t **out) {
    if (!cfg || !out) return -EINVAL;
    if ((unsigned)cfg->mode > PTWARM_MODE_WILLNEED || (unsigned)cfg->placement > PTWARM_PLACE_ANY ||
        (unsigned)cfg->llc_check > PTWARM_LLC_CHECK_AUTO || cfg->stride_pages == 0 ||
        cfg->batch_pages == 0 || cfg->batch_pages > (1u << 26) || !(cfg->probe_threshold_ns > 0) ||
        cfg->recheck_ns == 0 || cfg->pid < 0 || (cfg->pid != 0 && cfg->mode != PTWARM_MODE_PAGEMAP && cfg->mode != PTWARM_MODE_WILLNEED))
        return -EINVAL;
    ptwarm_t *w = calloc(1, sizeof *w);
    if (!w) return -ENOMEM;
    w->cfg = *cfg;
    w->page = ptwarm_prim_page_size();
    w->pagemap_fd = -1;
    w->pinned_cpu = -1;
    if (cfg->mode == PTWARM_MODE_MINCORE) w->vec = malloc(cfg->batch_pages);
    if (cfg->mode == PTWARM_MODE_PAGEMAP) w->pmbuf = malloc(cfg->batch_pages * sizeof(uint64_t));
    pthread_condattr_t ca;
    int ok = pthread_condattr_init(&ca) == 0;
    if (ok) {
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        ok = pthread_mutex_init(&w->mu, NULL) == 0;
        if (ok && pthread_cond_init(&w->wake, &ca) != 0) {
            pthread_mutex_destroy(&w->mu);
            ok = false;
        }
        if (ok && pthread_cond_init(&w->busy_cv, &ca) != 0) {
            pthread_cond_destroy(&w->wake);
            pthread_mutex_destroy(&w->mu);
            ok = false;
        }
        pthread_condattr_destroy(&ca);
    }
    if (!ok || (cfg->mode == PTWARM_MODE_MINCORE && !w->vec) ||
        (cfg->mode == PTWARM_MODE_PAGEMAP && !w->pmbuf)) {
        if (ok) {
            pthread_cond_destroy(&w->busy_cv);
            pthread_cond_destroy(&w->wake);
            pthread_mutex_destroy(&w->mu);
        }
        free(w->vec);
        free(w->pmbuf);
        free(w);
        return -ENOMEM;
    }
    w->st.state = PTWARM_STATE_STOPPED;
    w->st.helper_cpu = -1;
    w->st.app_cpu = cfg->app_cpu;
    w->st.last_probe_ns = -1.0;
    *out = w;
    return 0;
}

void ptwarm_destroy(ptwarm_t *w) {
    if (!w) return;
    ptwarm_stop(w);
    ptwarm_prim_close(w->pagemap_fd);
    pthread_cond_destroy(&w->busy_cv);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->mu);
    free(w->regions);
    free(w->vec);
    free(w->pmbuf);
    free(w);
}

int ptwarm_register(ptwarm_t *w, const void *addr, size_t len, ptwarm_region_id *id) {
    if (!w || len == 0) return -EINVAL;
    uintptr_t a = (uintptr_t)addr;
    if (a + len < a) return -EINVAL;
    uintptr_t lo = a & ~(uintptr_t)(w->page - 1);
    uintptr_t end = a + len;
    uintptr_t hi = (end + w->page - 1) & ~(uintptr_t)(w->page - 1);
    if (hi < end) return -EINVAL; /* rounding wrapped */
    pthread_mutex_lock(&w->mu);
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 8;
        region *r = realloc(w->regions, cap * sizeof *r);
        if (!r) {
            pthread_mutex_unlock(&w->mu);
            return -ENOMEM;
        }
        w->regions = r;
        w->cap = cap;
    }
    region *r = &w->regions[w->n++];
    r->id = ++w->next_id;
    r->addr = lo;
    r->len = hi - lo;
    if (id) *id = r->id;
    w->st.regions = w->n;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

int ptwarm_unregister(ptwarm_t *w, ptwarm_region_id id) {
    if (!w || id == 0) return -ENOENT;
    pthread_mutex_lock(&w->mu);
    size_t i = 0;
    while (i < w->n && w->regions[i].id != id) i++;
    if (i == w->n) {
        pthread_mutex_unlock(&w->mu);
        return -ENOENT;
    }
    memmove(&w->regions[i], &w->regions[i + 1], (w->n - i - 1) * sizeof(region));
    w->n--;
    w->st.regions = w->n;
    while (w->busy_id == id) pthread_cond_wait(&w->busy_cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

/* ---- warming one batch (called without the lock) ---- */

typedef struct {
    uint64_t accesses, unmapped, errors;
    int last_errno;
    ptwarm_t *w;
} batch_result;

static void note_err(batch_result *b, long rc) {
    b->errors++;
    b->last_errno = (int)-rc;
}

static void mincore_piece(void *ctx, uintptr_t lo, uintptr_t hi) {
    batch_result *b = ctx;
    int rc = ptwarm_prim_mincore(lo, hi - lo, b->w->vec);
    b->accesses++;
    if (rc == -ENOMEM)
        b->unmapped++; /* unmapped between reading the maps and the call: skip it */
    else if (rc != 0)
        note_err(b, rc);
}

/* Warms [a, a+len), a region-relative page offset `first_page` into a region, so that TOUCH/PREFETCH
 * keep one stride phase across batches. Returns 0 or -ESRCH (PAGEMAP target gone). */
static int warm_batch(ptwarm_t *w, uintptr_t a, size_t len, size_t first_page, batch_result *b) {
    const ptwarm_config *c = &w->cfg;
    b->w = w;
    switch (c->mode) {
    case PTWARM_MODE_TOUCH:
    case PTWARM_MODE_PREFETCH: {
        size_t s = c->stride_pages;
        size_t skip = (s - first_page % s) % s; /* first page in this batch on the stride grid */
        size_t step = s * w->page;
        uint64_t acc = 0, sum = 0;
        for (uintptr_t p = a + skip * w->page; p < a + len; p += step) {
            if (c->mode == PTWARM_MODE_TOUCH)
                sum += *(const volatile unsigned char *)p;
            else
                __builtin_prefetch((const void *)p, 0, 3); /* prefetcht0 on x86 */
            acc++;
            if (c->nops) ptwarm_prim_pause(c->nops);
        }
        w->sink += sum;
        b->accesses += acc;
        return 0;
    }
    case PTWARM_MODE_MINCORE: {
        int rc = ptwarm_prim_mincore(a, len, w->vec);
        b->accesses++;
        if (rc == -ENOMEM) {
            /* Part of the batch is not mapped (seed 001 assumed a stable region; a real application
             * may munmap or shrink at any time). Warm exactly the mapped pieces. */
            b->unmapped++;
            int mr = ptwarm_prim_for_each_mapping(a, len, mincore_piece, b);
            if (mr != 0) note_err(b, mr);
        } else if (rc != 0) {
            note_err(b, rc);
        }
        break;
    }
    case PTWARM_MODE_PAGEMAP: {
        long rc = w->pagemap_scan ? ptwarm_prim_pagemap_scan(w->pagemap_fd, a, len)
                                  : ptwarm_prim_pagemap_read(w->pagemap_fd, a, len, w->pmbuf);
        if (rc == -ESRCH) return -ESRCH;
        if (rc < 0)
            note_err(b, rc);
        else
            b->accesses += (uint64_t)rc;
        break;
    }
    case PTWARM_MODE_WILLNEED: {
        int rc = ptwarm_prim_willneed(w->pagemap_fd, a, len);
        b->accesses++;
        if (rc == -ESRCH) return -ESRCH;
        if (rc == -ENOMEM)
            b->unmapped++; /* holes: the kernel still advised the mapped parts */
        else if (rc != 0)
            note_err(b, rc);
        break;
    }
    }
    if (c->nops) ptwarm_prim_pause(c->nops);
    return 0;
}

/* One pass over all regions. Called and returns with w->mu held. Returns 0 when complete, -EINTR if
 * stopped, -ESRCH if the PAGEMAP target is gone. */
static int sweep_locked(ptwarm_t *w, bool helper) {
    ptwarm_region_id cur = 0;
    size_t off = 0;
    size_t batch = w->cfg.batch_pages * w->page;
    for (;;) {
        if (helper && w->stop) return -EINTR;
        size_t i = 0;
        while (i < w->n && (w->regions[i].id < cur || (w->regions[i].id == cur && off >= w->regions[i].len)))
            i++;
        if (i == w->n) return 0;
        region r = w->regions[i];
        if (r.id != cur) {
            cur = r.id;
            off = 0;
        }
        size_t len = r.len - off < batch ? r.len - off : batch;
        w->busy_id = r.id;
        pthread_mutex_unlock(&w->mu);
        batch_result b = {0};
        int rc = warm_batch(w, r.addr + off, len, off / w->page, &b);
        pthread_mutex_lock(&w->mu);
        w->busy_id = 0;
        pthread_cond_broadcast(&w->busy_cv);
        w->st.pages += len / w->page;
        w->st.accesses += b.accesses;
        w->st.unmapped_skips += b.unmapped;
        w->st.errors += b.errors;
        if (b.errors) w->st.last_errno = b.last_errno;
        off += len;
        if (rc == -ESRCH) return -ESRCH;
    }
}

/* PAGEMAP/WILLNEED: opens the target once (kept until destroy). Called with the lock held. */
static int open_target(ptwarm_t *w) {
    if (w->pagemap_fd >= 0) return 0;
    if (w->cfg.mode == PTWARM_MODE_PAGEMAP) {
        int fd = ptwarm_prim_pagemap_open(w->cfg.pid);
        if (fd < 0) return fd;
        w->pagemap_fd = fd;
        w->pagemap_scan = !w->cfg.pagemap_read && ptwarm_prim_pagemap_scan_supported(fd) == 1;
        w->st.pagemap_scan = w->pagemap_scan;
    } else if (w->cfg.mode == PTWARM_MODE_WILLNEED) {
        int fd = ptwarm_prim_pidfd_open(w->cfg.pid);
        if (fd < 0) return fd;
        /* An empty advice checks that process_madvise exists and that we may use it on the target. */
        int rc = ptwarm_prim_willneed(fd, 0, 0);
        if (rc != 0 && rc != -ENOMEM) {
            ptwarm_prim_close(fd);
            return rc;
        }
        w->pagemap_fd = fd;
    }
    return 0;
}

/* Takes `w->mu` for a sweep or a start: `busy` (the mutex released) while a helper runs or a
 * sweep is under way, open_target's error (released) when the target cannot be opened, else 0
 * with the mutex held. */
static int lock_idle_target(ptwarm_t *w, int busy) {
    pthread_mutex_lock(&w->mu);
    int rc = (w->running || w->sweeping) ? busy : open_target(w);
    if (rc != 0) pthread_mutex_unlock(&w->mu);
    return rc;
}

int ptwarm_sweep_once(ptwarm_t *w) {
    if (!w) return -EINVAL;
    int rc = lock_idle_target(w, -EBUSY);
    if (rc != 0) return rc;
    w->sweeping = true;
    uint64_t t0 = ptwarm_prim_now_ns();
    rc = sweep_locked(w, false);
    uint64_t dt = ptwarm_prim_now_ns() - t0;
    w->st.warm_ns += dt;
    if (rc == 0) {
        w->st.sweeps++;
        w->st.last_sweep_ns = dt;
    }
    w->sweeping = false;
    pthread_mutex_unlock(&w->mu);
    return rc;
}

/* ---- placement and the LLC check ---- */

static int choose_cpu(ptwarm_t *w, int app) {
    const ptwarm_config *c = &w->cfg;
    int n = ptwarm_prim_ncpus();
    if (c->placement == PTWARM_PLACE_CPU) return c->cpu == app ? -1 : c->cpu;
    if (c->placement == PTWARM_PLACE_SMT) {
        for (int k = 0; k < n; k++)
            if (k != app && ptwarm_prim_cpu_online(k) && ptwarm_prim_smt_sibling(app, k) == 1) return k;
    }
    /* Prefer another core in the LLC domain (the seed's "same CCX", §4.4.5); then a sibling; then any
     * other CPU (which the topology check will then refuse). Keep the current CPU if it qualifies, so
     * re-checks do not bounce the helper around. */
    int best = -1, best_rank = 99;
    for (int k = 0; k < n; k++) {
        if (k == app || !ptwarm_prim_cpu_online(k)) continue;
        int share = ptwarm_prim_share_llc(app, k);
        int sib = ptwarm_prim_smt_sibling(app, k) == 1;
        int rank = (share != 0 && !sib) ? 0 : (share != 0 ? 1 : 2);
        if (rank < best_rank || (rank == best_rank && k == w->pinned_cpu)) {
            best = k;
            best_rank = rank;
        }
    }
    return best;
}

/* Decides the helper's state. Called with w->mu held; drops it during the probe. */
static void check_placement(ptwarm_t *w) {
    const ptwarm_config *c = &w->cfg;
    if (c->pid != 0 && !ptwarm_prim_pid_alive(c->pid)) {
        w->st.state = PTWARM_STATE_TARGET_GONE;
        return;
    }
    int app = c->app_cpu;
    if (app < 0) {
        int cpu = -1;
        if (ptwarm_prim_thread_cpu(w->app_pid, w->app_tid, &cpu) == 0)
            app = cpu;
        else
            app = w->st.app_cpu; /* the thread exited: keep the last known CPU */
    }
    w->st.app_cpu = app;
    int helper;
    if (c->placement == PTWARM_PLACE_ANY) {
        helper = ptwarm_prim_current_cpu();
    } else {
        helper = app < 0 ? -1 : choose_cpu(w, app);
        if (helper < 0) {
            w->st.state = PTWARM_STATE_IDLE_SAME_CPU;
            return;
        }
        if (helper != w->pinned_cpu) {
            int rc = ptwarm_prim_pin_self(helper);
            if (rc != 0) {
                w->st.errors++;
                w->st.last_errno = -rc;
                w->st.state = PTWARM_STATE_IDLE_SAME_CPU;
                return;
            }
            w->pinned_cpu = helper;
        }
    }
    w->st.helper_cpu = helper;
    if (c->llc_check == PTWARM_LLC_CHECK_OFF || app < 0 || helper < 0) {
        w->st.state = PTWARM_STATE_WARMING;
        return;
    }
    if (helper == app) { /* PLACE_ANY and the scheduler put us on the application's CPU */
        w->st.state = PTWARM_STATE_IDLE_SAME_CPU;
        return;
    }
    /* llc_checks is counted together with the verdict, so a snapshot taken during the probe (the lock is
     * dropped there) never shows a check without its outcome. */
    int topology = ptwarm_prim_share_llc(app, helper); /* 1 shared, 0 not, < 0 sysfs does not say */
    if (topology == 0) {
        w->st.llc_checks++;
        w->st.llc_not_shared++;
        w->st.state = PTWARM_STATE_IDLE_TOPOLOGY;
        return;
    }
    bool shared = true;
    if (c->llc_check == PTWARM_LLC_CHECK_PROBE || c->llc_check == PTWARM_LLC_CHECK_AUTO) {
        double ns = -1;
        pthread_mutex_unlock(&w->mu);
        int rc = ptwarm_llc_probe(app, helper, &ns);
        pthread_mutex_lock(&w->mu);
        if (rc == 0) {
            w->st.last_probe_ns = ns;
            shared = ns < c->probe_threshold_ns;
            if (!shared && topology == 1 && c->llc_check == PTWARM_LLC_CHECK_AUTO) {
                /* The timing disagrees with sysfs: sysfs wins (ptwarm.h, PTWARM_LLC_CHECK_AUTO). */
                w->st.llc_probe_overruled++;
                shared = true;
            }
        } else {
            w->st.errors++; /* cannot tell: trust the topology */
            w->st.last_errno = -rc;
        }
    }
    w->st.llc_checks++;
    if (shared) {
        w->st.llc_shared++;
        w->st.state = PTWARM_STATE_WARMING;
    } else {
        w->st.llc_not_shared++;
        w->st.state = PTWARM_STATE_IDLE_LLC_NOT_SHARED;
    }
}

/* Waits on `wake` until deadline, a stop, or (if wake_on_register) a change in the region count.
 * Called with the lock held; accounts the time as idle. */
static void idle_until(ptwarm_t *w, uint64_t deadline, bool wake_on_register) {
    uint64_t t0 = ptwarm_prim_now_ns();
    size_t n0 = w->n;
    w->idle_since = t0;
    while (!w->stop && !(wake_on_register && w->n != n0)) {
        uint64_t now = ptwarm_prim_now_ns();
        if (now >= deadline) break;
        uint64_t wait = deadline - now;
        if (wait > 1000000000u) wait = 1000000000u; /* "forever" waits in 1 s slices: no overflow */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t abs_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + wait;
        ts.tv_sec = (time_t)(abs_ns / 1000000000u);
        ts.tv_nsec = (long)(abs_ns % 1000000000u);
        pthread_cond_timedwait(&w->wake, &w->mu, &ts);
    }
    w->st.idle_ns += ptwarm_prim_now_ns() - t0;
    w->idle_since = 0;
}

static void *helper_main(void *arg) {
    ptwarm_t *w = arg;
    pthread_mutex_lock(&w->mu);
    uint64_t next_check = 0;
    while (!w->stop) {
        if (w->n == 0) {
            /* Nothing to warm: no placement or probe either (the probe costs the application's CPU
             * about 1.5 ms); check as soon as a region arrives. */
            w->st.state = PTWARM_STATE_IDLE_NO_REGIONS;
            idle_until(w, UINT64_MAX, true);
            next_check = 0;
            continue;
        }
        uint64_t now = ptwarm_prim_now_ns();
        if (now >= next_check) {
            check_placement(w);
            next_check = ptwarm_prim_now_ns() + w->cfg.recheck_ns;
            if (w->st.state == PTWARM_STATE_TARGET_GONE) break;
            if (w->stop) break;
        }
        if (w->st.state != PTWARM_STATE_WARMING) {
            idle_until(w, next_check, false);
            continue;
        }
        uint64_t t0 = ptwarm_prim_now_ns();
        int rc = sweep_locked(w, true);
        uint64_t dt = ptwarm_prim_now_ns() - t0;
        w->st.warm_ns += dt;
        if (rc == 0) {
            w->st.sweeps++;
            w->st.last_sweep_ns = dt;
        } else if (rc == -ESRCH) {
            w->st.state = PTWARM_STATE_TARGET_GONE;
            break;
        }
        if (w->cfg.sleep_ns && !w->stop) idle_until(w, ptwarm_prim_now_ns() + w->cfg.sleep_ns, false);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int ptwarm_start(ptwarm_t *w) {
    if (!w) return -EINVAL;
    const ptwarm_config *c = &w->cfg;
    if (c->placement == PTWARM_PLACE_CPU &&
        (c->cpu < 0 || c->cpu >= ptwarm_prim_ncpus() || !ptwarm_prim_cpu_online(c->cpu)))
        return -EINVAL;
    int orc = lock_idle_target(w, -EALREADY);
    if (orc != 0) return orc;
    if (c->pid != 0) {
        w->app_pid = c->pid;
        w->app_tid = c->app_tid ? c->app_tid : c->pid;
    } else {
        w->app_pid = ptwarm_prim_getpid();
        w->app_tid = c->app_tid ? c->app_tid : ptwarm_prim_gettid();
    }
    w->stop = false;
    w->pinned_cpu = -1;
    int rc = ptwarm_prim_thread_create(&w->thread, helper_main, w,
                                       c->placement == PTWARM_PLACE_CPU ? c->cpu : -1, 0);
    if (rc != 0) {
        pthread_mutex_unlock(&w->mu);
        return rc;
    }
    w->running = true;
    /* Running but undecided until the helper's first check (the probe may wait up to PROBE_TIMEOUT_NS
     * for the application's CPU): a snapshot taken meanwhile must not read "stopped". The helper holds
     * no lock yet (it waits for w->mu), so this is set before any verdict of its own. */
    w->st.state = PTWARM_STATE_CHECKING;
    pthread_mutex_unlock(&w->mu);
    return 0;
}

int ptwarm_stop(ptwarm_t *w) {
    if (!w) return -EINVAL;
    pthread_mutex_lock(&w->mu);
    if (!w->running) {
        pthread_mutex_unlock(&w->mu);
        return -EALREADY;
    }
    w->stop = true;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_lock(&w->mu);
    w->running = false;
    if (w->st.state != PTWARM_STATE_TARGET_GONE && w->st.state != PTWARM_STATE_FAILED)
        w->st.state = PTWARM_STATE_STOPPED;
    pthread_mutex_unlock(&w->mu);
    return 0;
}

void ptwarm_get_stats(ptwarm_t *w, ptwarm_stats *out) {
    if (!w || !out) return;
    pthread_mutex_lock(&w->mu);
    *out = w->st;
    if (w->idle_since) out->idle_ns += ptwarm_prim_now_ns() - w->idle_since;
    pthread_mutex_unlock(&w->mu);
}

bool ptwarm_invariants_hold(ptwarm_t *w) {
    if (!w) return false;
    pthread_mutex_lock(&w->mu);
    bool ok = w->n <= w->cap && w->st.regions == w->n;
    for (size_t i = 0; ok && i < w->n; i++) {
        const region *r = &w->regions[i];
        ok = r->id != 0 && r->id <= w->next_id && r->len != 0 && r->len % w->page == 0 &&
             r->addr % w->page == 0 && (i == 0 || w->regions[i - 1].id < r->id);
    }
    ok = ok && w->st.llc_shared + w->st.llc_not_shared == w->st.llc_checks;
    ok = ok && (w->running || w->busy_id == 0 || w->sweeping);
    ok = ok && (w->cfg.mode != PTWARM_MODE_MINCORE || w->vec != NULL);
    pthread_mutex_unlock(&w->mu);
    return ok;
}

/* ---- the LLC-sharing probe ---- */

/* Never a fixed size: a 1 MiB chain fits the 1 MiB L2 of a Zen 5 (where the reads leave the lines in
 * the application CPU's L2 and the helper's chase times cross-core probes, not the L3). */
#define FILL_FALLBACK_BYTES ((size_t)1 << 20)

size_t ptwarm_private_cache_fill_bytes(int cpu, int *from_sysfs) {
    size_t below = 0, llc = 0;
    int ok = ptwarm_prim_cache_sizes(cpu, &below, &llc) == 0 && below > 0;
    if (from_sysfs) *from_sysfs = ok;
    if (!ok) return FILL_FALLBACK_BYTES;
    size_t b = 2 * below;
    if (b < FILL_FALLBACK_BYTES) b = FILL_FALLBACK_BYTES;
    if (llc > 0 && b > llc / 2) b = llc / 2 > below ? llc / 2 : below;
    return b & ~(size_t)63;
}
#define PROBE_TIMEOUT_NS 500000000u /* the application side must get 2 ms of its CPU within 500 ms */

/* Shared by the caller and the application-side thread; whoever drops the last reference frees it, so
 * a caller that gives up waiting (a real-time application owns its CPU) can return at once. */
typedef struct {
    void **buf;
    uint32_t lines;
    int done;
    atomic_int refs;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uintptr_t sink;
} probe_arg;

static void probe_release(probe_arg *p) {
    if (atomic_fetch_sub(&p->refs, 1) == 1) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p->buf);
        free(p);
    }
}

static void *probe_app_side(void *arg) {
    probe_arg *p = arg;
    /* Build a random cyclic chain, one pointer per 64-byte line (random order defeats the hardware
     * prefetchers), on the application's CPU (this thread was created pinned there). */
    const size_t stride = 64 / sizeof(void *);
    const uint32_t lines = p->lines;
    uint32_t *order = malloc(lines * sizeof *order);
    if (order) {
        for (uint32_t i = 0; i < lines; i++) order[i] = i;
        uint64_t x = 0x9E3779B97F4A7C15u;
        for (uint32_t i = lines - 1; i > 0; i--) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint32_t j = (uint32_t)(x % (i + 1));
            uint32_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (uint32_t i = 0; i < lines; i++)
            p->buf[order[i] * stride] = &p->buf[order[(i + 1) % lines] * stride];
        free(order);
#if defined(__x86_64__) || defined(__i386__)
        /* Write the lines back so the reads below leave clean copies: the helper then measures a plain
         * read of lines another core has read, as the page walker would see them. */
        for (uint32_t i = 0; i < lines; i++) _mm_clflush(&p->buf[i * stride]);
        _mm_mfence();
#endif
        void **q = p->buf;
        for (uint32_t k = 0; k < 2 * lines; k++) q = (void **)*q;
        p->sink = (uintptr_t)q;
    }
    pthread_mutex_lock(&p->mu);
    p->done = order ? 1 : -1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    probe_release(p);
    return NULL;
}

int ptwarm_llc_probe(int cpu_app, int cpu_helper, double *ns_per_line) {
    int n = ptwarm_prim_ncpus();
    if (!ns_per_line || cpu_app == cpu_helper || cpu_app < 0 || cpu_helper < 0 || cpu_app >= n ||
        cpu_helper >= n)
        return -EINVAL;
    ptwarm_prim_affinity saved;
    int rc = ptwarm_prim_affinity_save(&saved);
    if (rc != 0) return rc;
    probe_arg *p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    p->lines = (uint32_t)(ptwarm_private_cache_fill_bytes(cpu_app, NULL) / 64);
    p->buf = aligned_alloc(64, (size_t)p->lines * 64);
    pthread_condattr_t ca;
    if (!p->buf || pthread_condattr_init(&ca) != 0) {
        free(p->buf);
        free(p);
        return -ENOMEM;
    }
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&p->refs, 2);
    rc = ptwarm_prim_pin_self(cpu_helper);
    pthread_t t;
    if (rc == 0) {
        rc = ptwarm_prim_thread_create(&t, probe_app_side, p, cpu_app, 1);
        if (rc != 0) atomic_fetch_sub(&p->refs, 1); /* the thread will never release its reference */
    }
    if (rc == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t abs_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + PROBE_TIMEOUT_NS;
        ts.tv_sec = (time_t)(abs_ns / 1000000000u);
        ts.tv_nsec = (long)(abs_ns % 1000000000u);
        pthread_mutex_lock(&p->mu);
        while (!p->done)
            if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT) break;
        int done = p->done;
        pthread_mutex_unlock(&p->mu);
        if (done == 1) {
            void **q = p->buf;
            uint64_t t0 = ptwarm_prim_now_ns();
            for (uint32_t k = 0; k < p->lines; k++) q = (void **)*q;
            uint64_t t1 = ptwarm_prim_now_ns();
            __asm__ __volatile__("" ::"r"(q));
            *ns_per_line = (double)(t1 - t0) / p->lines;
        } else {
            rc = done < 0 ? -ENOMEM : -ETIMEDOUT;
        }
    }
    ptwarm_prim_affinity_restore(&saved);
    probe_release(p);
    return rc;
}
