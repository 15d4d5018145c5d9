/* kvstore: an in-memory key-value store under a GET/PUT load (a memcached-like open-addressing
 * table, 90% GETs and 10% PUTs of existing keys, uniform keys as YCSB workload B's "uniform"
 * request distribution; Cooper et al., SoCC 2010), written in the project. The table: 2^LOGSLOTS
 * slots of (key, 48-byte value), filled to 75%. Each round: OPS requests from the round's seed.
 *     kvstore [LOGSLOTS=23] [OPS=1M] [ROUNDS=10] */
#include "hp_common.h"

typedef struct {
    uint64_t key;
    uint64_t value[7];
} slot;

static uint64_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

int main(int argc, char **argv) {
    uint64_t logslots = hp_arg_max(argc, argv, 1, 23, "LOGSLOTS", 30);
    uint64_t ops = hp_arg(argc, argv, 2, 1u << 20, "OPS a round");
    uint64_t rounds = hp_arg_max(argc, argv, 3, 10, "ROUNDS", HP_MAX_ROUNDS);
    uint64_t n = 1ull << logslots, keys = n / 4 * 3;
    slot *t = hp_alloc(n * sizeof *t, "table");
    memset(t, 0, n * sizeof *t);
    for (uint64_t k = 1; k <= keys; k++) {
        uint64_t i = hash(k) & (n - 1);
        while (t[i].key != 0)
            i = (i + 1) & (n - 1);
        t[i].key = k;
        t[i].value[0] = k * 3;
    }
    uint64_t sum = 0;
    hp_roi roi = hp_roi_begin();
    for (uint64_t round = 0; round < rounds; round++) {
        uint64_t s = 0xC0FFEEull + round;
        for (uint64_t o = 0; o < ops; o++) {
            uint64_t r = hp_next(&s);
            uint64_t k = 1 + (r >> 8) % keys;
            uint64_t i = hash(k) & (n - 1);
            while (t[i].key != k)
                i = (i + 1) & (n - 1);
            if ((r & 0xff) < 26) /* 10% PUTs */
                t[i].value[(r >> 4) % 7] = r;
            else
                sum += t[i].value[0];
        }
        hp_round_done(&roi);
    }
    hp_roi_finish(&roi, rounds, sum);
    free(t);
    return 0;
}
