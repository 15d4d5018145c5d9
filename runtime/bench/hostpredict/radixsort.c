/* radixsort: least-significant-digit radix sort of 64-bit keys, 12 bits a pass (the scatter of
 * Satish et al., SIGMOD 2010, without its buffering), written in the project: every pass scatters
 * the keys to 4096 destinations far apart in a second array (as many pages as a last-level TLB
 * holds entries: the scatter is what the TLB pays for). Each round: the input copied, then
 * sorted (every round the same work).
 *     radixsort [N=4M] [PASSES=2] [ROUNDS=3] */
#include "hp_common.h"

int main(int argc, char **argv) {
    uint64_t n = hp_arg(argc, argv, 1, 4u << 20, "N keys");
    uint64_t passes = hp_arg_max(argc, argv, 2, 2, "PASSES of 12 bits", 5);
    uint64_t rounds = hp_arg_max(argc, argv, 3, 3, "ROUNDS", HP_MAX_ROUNDS);
    uint64_t *input = hp_alloc(n * sizeof *input, "input");
    uint64_t *a = hp_alloc(n * sizeof *a, "keys");
    uint64_t *b = hp_alloc(n * sizeof *b, "buffer");
    uint64_t s = 0xA4093822299F31D0ull;
    for (uint64_t i = 0; i < n; i++)
        input[i] = hp_next(&s);
    uint64_t sum = 0;
    hp_roi roi = hp_roi_begin();
    for (uint64_t round = 0; round < rounds; round++) {
        memcpy(a, input, n * sizeof *a);
        for (uint64_t p = 0; p < passes; p++) {
            static uint64_t count[4097];
            memset(count, 0, sizeof count);
            unsigned shift = (unsigned)(12 * p);
            for (uint64_t i = 0; i < n; i++)
                count[((a[i] >> shift) & 0xfff) + 1]++;
            for (int d = 0; d < 4096; d++)
                count[d + 1] += count[d];
            for (uint64_t i = 0; i < n; i++)
                b[count[(a[i] >> shift) & 0xfff]++] = a[i];
            uint64_t *t = a;
            a = b;
            b = t;
        }
        sum += a[n / 2];
        hp_round_done(&roi);
    }
    hp_roi_finish(&roi, rounds, sum);
    return 0; /* its arrays go with the process (the allocator reports at exit, after the region) */
}
