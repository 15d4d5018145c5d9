/* The usage examples of docs/ptwarm.md, compiled and run by ctest. tests/test_ptwarm_docs.py checks that
 * every C code block of the doc is, line for line, one of the BEGIN/END sections below. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tlblab/ptwarm.h"
#include "tlblab/tlbmig.h"

static int ptwarm_example(char *big, size_t bytes) {
    // BEGIN ptwarm
    ptwarm_config c;
    ptwarm_config_default(&c);            /* mincore mode, LLC placement, LLC probe every 2 s */
    ptwarm_t *w;
    if (ptwarm_create(&c, &w) != 0) return 1;
    ptwarm_region_id id;
    ptwarm_register(w, big, bytes, &id);  /* at any time, running or not */
    ptwarm_start(w);                      /* the helper follows the calling thread's CPU */
    /* ... the application's TLB-miss-bound phase ... */
    ptwarm_unregister(w, id);             /* on return the helper is out of the region: munmap is safe */
    ptwarm_stats s;
    ptwarm_get_stats(w, &s);
    printf("helper %s after %llu sweeps\n", ptwarm_state_name(s.state), (unsigned long long)s.sweeps);
    ptwarm_destroy(w);                    /* stops the helper; bounded time */
    // END
    return 0;
}

static int tlbmig_example(void *const *node, size_t n) {
    // BEGIN tlbmig
    tlbmig_config c;
    tlbmig_config_default(&c);                 /* cap 1024 pages */
    tlbmig_t *t;
    if (tlbmig_create(&c, &t) != 0) return 1;  /* one per thread */
    for (size_t i = 0; i < n; i++) tlbmig_add_page(t, node[i], NULL);  /* the lines the code will load */
    /* ... */
    size_t rewarmed = tlbmig_check(t);  /* 2.5 ns if the CPU is unchanged; else prefetch up to the cap */
    printf("re-warmed %zu pages\n", rewarmed);
    tlbmig_destroy(t);
    // END
    return 0;
}

int main(void) {
    size_t bytes = 64u << 20;
    char *big = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (big == MAP_FAILED) return 2;
    memset(big, 1, bytes);
    void *node[64];
    for (size_t i = 0; i < 64; i++) node[i] = big + i * 69632;
    int rc = ptwarm_example(big, bytes) || tlbmig_example(node, 64);
    munmap(big, bytes);
    return rc;
}
