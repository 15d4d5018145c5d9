/* stream: does the hardware prefetcher stop at 4 KiB page boundaries on this host? (docs/host-predict.md,
 * "Prefetchers and page boundaries"), written in the project. Each round reads one 8-byte word of
 * every STRIDE-th 64-byte line of a BYTES region, 4 KiB piece by piece, the pieces in address order,
 * SWEEPS times; the loads are independent (summed), so the core and its prefetchers may run ahead.
 * A stream prefetcher that trains on physical addresses cannot follow a stream past the end of its
 * page without the next page's translation (the hypothesis of issue 90; AMD's software optimization
 * guide, 25112 rev. 3.06 §5.6 "Hardware Prefetching", describes the line-by-line stream detector,
 * not its page limit): in 4 KiB pages it would restart every 64 lines, in 2 MiB pages it could run
 * on. With BYTES inside the L2 DTLB's reach in 4 KiB pages (4096 entries on this host: 16 MiB) and
 * past the L2 cache, the TLB cannot tell 4 KiB from 2 MiB pages apart, while such a prefetcher
 * can: the all-2 MiB / all-4 KiB ratio then measures its page-boundary cost.
 * With SHUFFLE = 1 the 4 KiB pieces are visited in a random order (each still read line by line):
 * the same lines, pages and TLB misses, but no stream runs on from one 4 KiB piece into the next,
 * so in 2 MiB pages the in-order / shuffled ratio measures whether any prefetcher crosses a 4 KiB
 * boundary at all. Both orders read their pieces through the same order table.
 *     stream [BYTES=8M] [SWEEPS=16] [STRIDE=1] [SHUFFLE=0] [ROUNDS=8] */
#include "hp_common.h"

int main(int argc, char **argv) {
    uint64_t bytes = hp_arg_max(argc, argv, 1, 8u << 20, "BYTES", 1ull << 30);
    uint64_t sweeps = hp_arg(argc, argv, 2, 16, "SWEEPS a round");
    uint64_t stride = hp_arg_max(argc, argv, 3, 1, "STRIDE in lines", 64);
    int shuffle = argc > 4 && strcmp(argv[4], "1") == 0;
    if (argc > 4 && !shuffle && strcmp(argv[4], "0") != 0) {
        fprintf(stderr, "stream: argument 4 (SHUFFLE): expected 0 or 1, found '%s'\n", argv[4]);
        return 2;
    }
    uint64_t rounds = hp_arg_max(argc, argv, 5, 8, "ROUNDS", HP_MAX_ROUNDS);
    if (bytes < 4096 || bytes % 4096) {
        fprintf(stderr, "stream: BYTES: expected a multiple of 4096, found %llu\n", (unsigned long long)bytes);
        return 2;
    }
    uint64_t *region = hp_alloc(bytes, "region");
    uint64_t pieces = bytes / 4096, step = 8 * stride;
    uint32_t *order = hp_alloc(pieces * sizeof *order, "order");
    uint64_t s = 0x243F6A8885A308D3ull;
    for (uint64_t i = 0; i < bytes / 8; i++)
        region[i] = hp_next(&s);
    if (shuffle)
        hp_permutation(order, pieces, &s);
    else
        for (uint64_t p = 0; p < pieces; p++)
            order[p] = (uint32_t)p;
    uint64_t sum = 0;
    hp_roi roi = hp_roi_begin();
    for (uint64_t round = 0; round < rounds; round++) {
        for (uint64_t k = 0; k < sweeps; k++)
            for (uint64_t p = 0; p < pieces; p++) {
                const uint64_t *piece = region + (uint64_t)order[p] * 512;
                for (uint64_t i = 0; i < 512; i += step)
                    sum += piece[i];
            }
        hp_round_done(&roi);
    }
    hp_roi_finish(&roi, rounds, sum);
    free(order);
    free(region);
    return 0;
}
