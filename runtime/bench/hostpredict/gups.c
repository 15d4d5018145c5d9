/* gups: HPCC RandomAccess (Luszczek et al., "The HPC Challenge benchmark suite", 2006), written in
 * the project: a table of 2^LOGSIZE 64-bit words, each update XORs a pseudo-random word into the
 * entry it indexes. Each round: UPDATES updates from the round's own seed.
 *     gups [LOGSIZE=27] [UPDATES=2M] [ROUNDS=10] */
#include "hp_common.h"

int main(int argc, char **argv) {
    uint64_t logsize = hp_arg_max(argc, argv, 1, 27, "LOGSIZE", 34);
    uint64_t updates = hp_arg(argc, argv, 2, 2u << 20, "UPDATES a round");
    uint64_t rounds = hp_arg_max(argc, argv, 3, 10, "ROUNDS", HP_MAX_ROUNDS);
    uint64_t n = 1ull << logsize;
    uint64_t *table = hp_alloc(n * sizeof *table, "table");
    for (uint64_t i = 0; i < n; i++)
        table[i] = i;
    hp_roi roi = hp_roi_begin();
    for (uint64_t round = 0; round < rounds; round++) {
        uint64_t s = 0x5DEECE66Dull + round;
        for (uint64_t i = 0; i < updates; i++) {
            uint64_t r = hp_next(&s);
            table[r & (n - 1)] ^= r;
        }
        hp_round_done(&roi);
    }
    hp_roi_end(&roi);
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i += 4096)
        sum += table[i];
    hp_report(&roi, rounds, sum);
    free(table);
    return 0;
}
