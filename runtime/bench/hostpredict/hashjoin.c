/* hashjoin: the probe phase of a chained hash join (the no-partitioning join of Blanas et al.,
 * SIGMOD 2011; Balkesen et al., ICDE 2013), written in the project. Build: R tuples (key, payload)
 * into 2^b bucket heads and a next array. Each round probes P keys drawn from R's key range: one
 * random bucket head, then the chain's tuples, each a random line of a 16-byte tuple array.
 *     hashjoin [R=16M] [P=1M] [ROUNDS=20] */
#include "hp_common.h"

typedef struct {
    uint64_t key, payload;
} tuple;

int main(int argc, char **argv) {
    uint64_t r = hp_arg(argc, argv, 1, 16u << 20, "R tuples");
    uint64_t probes = hp_arg(argc, argv, 2, 1u << 20, "P probes a round");
    uint64_t rounds = hp_arg_max(argc, argv, 3, 20, "ROUNDS", HP_MAX_ROUNDS);
    uint64_t nb = 1;
    while (nb < r)
        nb <<= 1;
    tuple *rel = hp_alloc(r * sizeof *rel, "R");
    uint32_t *head = hp_alloc(nb * sizeof *head, "bucket heads");
    uint32_t *next = hp_alloc(r * sizeof *next, "chains");
    memset(head, 0xff, nb * sizeof *head);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (uint64_t i = 0; i < r; i++) {
        rel[i].key = hp_next(&s) % (2 * r);
        rel[i].payload = i;
        uint64_t b = (rel[i].key * 0x9E3779B97F4A7C15ull) >> 40 & (nb - 1);
        next[i] = head[b];
        head[b] = (uint32_t)i;
    }
    uint64_t sum = 0;
    hp_roi roi = hp_roi_begin();
    for (uint64_t round = 0; round < rounds; round++) {
        uint64_t q = 0x1234567ull + round; /* each round its own keys, the same number of them */
        for (uint64_t i = 0; i < probes; i++) {
            uint64_t key = hp_next(&q) % (2 * r);
            uint64_t b = (key * 0x9E3779B97F4A7C15ull) >> 40 & (nb - 1);
            for (uint32_t t = head[b]; t != UINT32_MAX; t = next[t])
                if (rel[t].key == key)
                    sum += rel[t].payload;
        }
        hp_round_done(&roi);
    }
    hp_roi_finish(&roi, rounds, sum);
    return 0; /* its arrays go with the process (the allocator reports at exit, after the region) */
}
