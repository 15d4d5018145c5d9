/* pagechase: the host page size check of `tlblab host predict` (docs/host-predict.md, "The host
 * page size"), written in the project. A dependent chase through one line of each of PAGES 4 KiB
 * pages in a random cyclic order, the line's offset in its page varied (hashed) so the lines spread
 * over the cache's sets. With PAGES = 8192 (32 MiB) the 4 KiB translations outnumber the L2 DTLB's
 * entries while 16 translations of 2 MiB would fit the L1 DTLB, and the 512 KiB of lines stay in
 * the L2 cache: backed by 2 MiB pages all the way down (guest and host), the chase misses the TLB
 * almost never; backed by 2 MiB guest pages on 4 KiB host pages, the TLB holds 4 KiB pieces and
 * the chase still walks every step, only shorter walks (a TLB entry of a combined guest-and-host
 * translation covers the smaller of the two pages: Intel SDM vol. 3, "Caching Translation
 * Information", combined mappings; AMD's nested paging likewise). Each round: STEPS steps.
 * With CHAINS = K > 1 the same cycle is chased from K starting points PAGES/K apart, one step of
 * each in turn: K independent misses in flight, which an out-of-order core overlaps (memory-level
 * parallelism) and the model's in-order sum of latencies does not; the 2 MiB / 4 KiB ratio's change
 * with K measures how much less the page walks overlap than the data's own misses
 * (docs/host-predict.md, "Walks overlap less than data").
 *     pagechase [PAGES=8192] [STEPS=1M] [CHAINS=1] [ROUNDS=8] */
#include "hp_common.h"

/* The line of page `a` the chase reads: hashed, not a's low bits, so that in physically contiguous
 * 2 MiB pages (where a's low bits are also the cache index's bits 12 and up) the lines still spread
 * over every set of the L2 cache rather than over 64 of them. */
static uint64_t line(uint64_t a) {
    return (a * 0x9E3779B97F4A7C15ull) >> 58;
}

int main(int argc, char **argv) {
    uint64_t pages = hp_arg_max(argc, argv, 1, 8192, "PAGES", 1u << 24);
    uint64_t steps = hp_arg(argc, argv, 2, 1u << 20, "STEPS a round");
    uint64_t chains = hp_arg_max(argc, argv, 3, 1, "CHAINS", pages < 16 ? pages : 16);
    uint64_t rounds = hp_arg_max(argc, argv, 4, 8, "ROUNDS", HP_MAX_ROUNDS);
    char *region = hp_alloc(pages * 4096, "region");
    uint32_t *perm = hp_alloc(pages * sizeof *perm, "permutation");
    uint64_t s = 0x85A308D313198A2Eull;
    hp_permutation(perm, pages, &s);
    for (uint64_t i = 0; i < pages; i++) {
        uint64_t a = perm[i], b = perm[(i + 1) % pages];
        *(void **)(region + a * 4096 + line(a) * 64) = region + b * 4096 + line(b) * 64;
    }
    void **q[16];
    for (uint64_t c = 0; c < chains; c++) {
        uint64_t a = perm[c * (pages / chains)];
        q[c] = (void **)(region + a * 4096 + line(a) * 64);
    }
    free(perm);
    hp_roi roi = hp_roi_begin();
    for (uint64_t round = 0; round < rounds; round++) {
        if (chains == 1) {
            void **p = q[0];
            for (uint64_t i = 0; i < steps; i++)
                p = (void **)*p;
            q[0] = p;
        } else {
            for (uint64_t i = 0; i < steps; i += chains)
                for (uint64_t c = 0; c < chains; c++)
                    q[c] = (void **)*q[c];
        }
        hp_round_done(&roi);
    }
    hp_roi_finish(&roi, rounds, (uint64_t)((char *)q[0] - region));
    free(region);
    return 0;
}
