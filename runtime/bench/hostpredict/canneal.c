/* canneal: simulated annealing of a netlist's placement (PARSEC's canneal, Bienia et al., PACT
 * 2008; seed 001 §5.2), written in the project after its algorithm: N elements on a grid, each with
 * FANIN random neighbours; a step picks two elements, computes the change of the wire length of
 * both elements' nets (Manhattan distances to their neighbours' locations, random reads), and
 * swaps their locations when it shortens the wire or by the temperature's chance. Each round:
 * SWAPS steps at one temperature (the annealer's steps are alike, not identical).
 *     canneal [N=4M] [SWAPS=400k] [ROUNDS=6] */
#include "hp_common.h"

#define FANIN 5

typedef struct {
    uint32_t loc;          /* grid position, x * side + y */
    uint32_t fan[FANIN];   /* neighbours */
    uint32_t pad[2];
} element;

static int64_t dist(uint32_t a, uint32_t b, uint32_t side) {
    int64_t ax = a / side, ay = a % side, bx = b / side, by = b % side;
    return (ax > bx ? ax - bx : bx - ax) + (ay > by ? ay - by : by - ay);
}

static int64_t cost(const element *e, uint32_t i, uint32_t at, uint32_t side) {
    int64_t c = 0;
    for (int k = 0; k < FANIN; k++)
        c += dist(at, e[e[i].fan[k]].loc, side);
    return c;
}

int main(int argc, char **argv) {
    uint64_t n = hp_arg(argc, argv, 1, 4u << 20, "N elements");
    uint64_t swaps = hp_arg(argc, argv, 2, 400u << 10, "SWAPS a round");
    uint64_t rounds = hp_arg_max(argc, argv, 3, 6, "ROUNDS", HP_MAX_ROUNDS);
    uint32_t side = 1;
    while ((uint64_t)side * side < n)
        side++;
    element *e = hp_alloc(n * sizeof *e, "elements");
    uint64_t s = 0x082EFA98EC4E6C89ull;
    for (uint64_t i = 0; i < n; i++) {
        e[i].loc = (uint32_t)i;
        for (int k = 0; k < FANIN; k++)
            e[i].fan[k] = (uint32_t)(hp_next(&s) % n);
    }
    uint64_t accepted = 0;
    hp_roi roi = hp_roi_begin();
    for (uint64_t round = 0; round < rounds; round++) {
        uint64_t q = 0x452821E638D01377ull + round;
        uint64_t temp = 64 >> (round < 6 ? round : 6);
        for (uint64_t k = 0; k < swaps; k++) {
            uint32_t a = (uint32_t)(hp_next(&q) % n), b = (uint32_t)(hp_next(&q) % n);
            uint32_t la = e[a].loc, lb = e[b].loc;
            int64_t delta = cost(e, a, lb, side) - cost(e, a, la, side) + cost(e, b, la, side) - cost(e, b, lb, side);
            if (delta < 0 || (uint64_t)delta < (hp_next(&q) % 128) * temp / 64) {
                e[a].loc = lb;
                e[b].loc = la;
                accepted++;
            }
        }
        hp_round_done(&roi);
    }
    hp_roi_finish(&roi, rounds, accepted);
    free(e);
    return 0;
}
