/* Behaviour tests of TLB re-warming after migration (tlblab/tlbmig.h): registration and statistics,
 * no re-warm without a migration, exactly one re-warm (capped) after a forced sched_setaffinity
 * migration, the rseq CPU read agreeing with sched_getcpu(), and harmless prefetches of unmapped pages.
 * `--quick` is accepted (valgrind) and changes nothing: the test already takes milliseconds.
 * `--case migration` runs the case that needs two CPUs, alone (its own ctest test); it exits 77
 * (ctest's SKIP_RETURN_CODE) on one CPU, so ctest reports it skipped, not passed. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tlblab/tlbmig.h"

#include "check.h"

static int pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return sched_setaffinity(0, sizeof s, &s);
}

/* Two CPUs we may run on, or -1. */
static int two_cpus(int *a, int *b) {
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) != 0) return -1;
    *a = *b = -1;
    for (int k = 0; k < CPU_SETSIZE; k++)
        if (CPU_ISSET(k, &s)) {
            if (*a < 0)
                *a = k;
            else if (*b < 0)
                *b = k;
        }
    return *b >= 0 ? 0 : -1;
}

static void test_registration_and_stats(void) {
    tlbmig_config c;
    tlbmig_config_default(&c);
    CHECK(c.cap_pages == 1024);
    tlbmig_t *t = NULL;
    c.cap_pages = 0;
    CHECK(tlbmig_create(&c, &t) == -EINVAL);
    tlbmig_config_default(&c);
    CHECK(tlbmig_create(&c, &t) == 0);
    static char buf[64 * 4096];
    tlbmig_region_id a = 0, b = 0, d = 0;
    CHECK(tlbmig_add_page(t, buf, &a) == 0);
    CHECK(tlbmig_add_region(t, buf, sizeof buf, 0, &b) == 0);        /* 64 pages */
    CHECK(tlbmig_add_region(t, buf, sizeof buf, 69632, &d) == 0);    /* ceil(262144/69632) = 4 */
    CHECK(tlbmig_add_region(t, buf, 0, 0, NULL) == -EINVAL);
    tlbmig_stats s;
    tlbmig_get_stats(t, &s);
    CHECK(s.pages == 1 + 64 + 4 && s.regions == 3);
    CHECK(a && b && d && a != b && b != d);
    CHECK(tlbmig_invariants_hold(t));
    CHECK(tlbmig_remove(t, b) == 0);
    CHECK(tlbmig_remove(t, b) == -ENOENT);
    tlbmig_get_stats(t, &s);
    CHECK(s.pages == 5 && s.regions == 2);
    CHECK(tlbmig_rewarm(t) == 5);
    tlbmig_clear(t);
    tlbmig_get_stats(t, &s);
    CHECK(s.pages == 0 && s.regions == 0 && s.rewarms == 1 && s.pages_rewarmed == 5);
    CHECK(tlbmig_invariants_hold(t));
    tlbmig_destroy(t);
    tlbmig_destroy(NULL);
}

static void test_cpu_read_matches_sched_getcpu(void) {
    for (int use = 0; use < 2; use++) {
        tlbmig_config c;
        tlbmig_config_default(&c);
        c.use_rseq = use;
        tlbmig_t *t = NULL;
        CHECK(tlbmig_create(&c, &t) == 0);
        tlbmig_stats s;
        tlbmig_get_stats(t, &s);
        if (!use) CHECK(!s.rseq);
        int a, b;
        if (two_cpus(&a, &b) == 0) {
            CHECK(pin(a) == 0);
            CHECK(tlbmig_current_cpu(t) == a && sched_getcpu() == a);
            CHECK(pin(b) == 0);
            CHECK(tlbmig_current_cpu(t) == b && sched_getcpu() == b);
        } else {
            CHECK(tlbmig_current_cpu(t) == sched_getcpu());
        }
        tlbmig_destroy(t);
    }
}

/* Given 3000 registered pages and a cap of 1024: no migration, no re-warm; after a forced migration the
 * first check re-warms exactly 1024 pages and counts a capped re-warm; the next check does nothing. */
static void test_migration_triggers_one_capped_rewarm(void) {
    int a, b;
    if (two_cpus(&a, &b) != 0) {
        fprintf(stderr, "test_migration_triggers_one_capped_rewarm: skipped (one CPU)\n");
        skipped++;
        return;
    }
    cpu_set_t saved;
    sched_getaffinity(0, sizeof saved, &saved);
    for (int use = 0; use < 2; use++) {
        CHECK(pin(a) == 0);
        size_t bytes = 3000u * 4096;
        char *r = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(r != MAP_FAILED);
        tlbmig_config c;
        tlbmig_config_default(&c);
        c.use_rseq = use;
        tlbmig_t *t = NULL;
        CHECK(tlbmig_create(&c, &t) == 0);
        CHECK(tlbmig_add_region(t, r, bytes, 4096, NULL) == 0);
        for (int i = 0; i < 100; i++) CHECK(tlbmig_check(t) == 0);
        CHECK(pin(b) == 0);
        CHECK(tlbmig_check(t) == 1024);
        CHECK(tlbmig_check(t) == 0);
        CHECK(pin(a) == 0);
        CHECK(tlbmig_check(t) == 1024);
        tlbmig_stats s;
        tlbmig_get_stats(t, &s);
        CHECK(s.checks == 103 && s.migrations == 2 && s.rewarms == 2 && s.capped == 2);
        CHECK(s.pages_rewarmed == 2048 && s.last_cpu == a);
        CHECK(tlbmig_invariants_hold(t));
        /* The pages were never touched, and now they are not even mapped: prefetching is harmless. */
        munmap(r, bytes);
        CHECK(tlbmig_rewarm(t) == 1024);
        tlbmig_destroy(t);
    }
    sched_setaffinity(0, sizeof saved, &saved);
}

int main(int argc, char **argv) {
    int migration_only = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--case") == 0 && i + 1 < argc && strcmp(argv[i + 1], "migration") == 0) {
            migration_only = 1;
            i++;
        } else if (strcmp(argv[i], "--quick") != 0) {
            fprintf(stderr, "usage: %s [--quick] [--case migration]\n", argv[0]);
            return 2;
        }
    }
    if (migration_only) {
        test_migration_triggers_one_capped_rewarm();
    } else {
        test_registration_and_stats();
        test_cpu_read_matches_sched_getcpu();
    }
    return check_outcome("test_tlbmig");
}
