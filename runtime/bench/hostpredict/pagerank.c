/* pagerank: pull-direction PageRank on an R-MAT graph in CSR (GAPBS pr, Beamer et al. 2015),
 * written in the project: each vertex sums its in-neighbours' contributions (random reads of a
 * 2^SCALE array), damping 0.85. The graph as bfs.c draws it (Graph500's R-MAT, vertices permuted).
 * Each round: one iteration.
 *     pagerank [SCALE=21] [EDGEFACTOR=8] [ROUNDS=4] */
#include "hp_common.h"

int main(int argc, char **argv) {
    uint64_t scale, ef, rounds;
    hp_graph_args(argc, argv, 21, 8, &scale, &ef, &rounds);
    uint64_t n = 1ull << scale, m = ef * n;
    uint32_t *perm = hp_alloc(n * sizeof *perm, "permutation");
    uint64_t s = 0x13198A2E03707344ull;
    hp_permutation(perm, n, &s);
    uint32_t *src = hp_alloc(m * sizeof *src, "edge sources");
    uint32_t *dst = hp_alloc(m * sizeof *dst, "edge targets");
    hp_rmat_edges(src, dst, m, scale, perm, &s);
    uint64_t *off = hp_alloc((n + 1) * sizeof *off, "offsets");
    uint32_t *outdeg = hp_alloc(n * sizeof *outdeg, "out-degrees");
    memset(outdeg, 0, n * sizeof *outdeg);
    for (uint64_t e = 0; e < m; e++)
        outdeg[src[e]]++;
    uint32_t *in = hp_csr(off, n, dst, src, m, 0, "in-neighbours");
    free(src);
    free(dst);
    double *rank = hp_alloc(n * sizeof *rank, "ranks");
    double *contrib = hp_alloc(n * sizeof *contrib, "contributions");
    for (uint64_t v = 0; v < n; v++)
        rank[v] = 1.0 / (double)n;
    hp_roi roi = hp_roi_begin();
    for (uint64_t round = 0; round < rounds; round++) {
        for (uint64_t v = 0; v < n; v++)
            contrib[v] = outdeg[v] ? rank[v] / outdeg[v] : 0.0;
        for (uint64_t v = 0; v < n; v++) {
            double sum = 0;
            for (uint64_t i = off[v]; i < off[v + 1]; i++)
                sum += contrib[in[i]];
            rank[v] = 0.15 / (double)n + 0.85 * sum;
        }
        hp_round_done(&roi);
    }
    hp_roi_finish(&roi, rounds, (uint64_t)(rank[perm[0]] * 1e15));
    free(contrib);
    free(rank);
    free(in);
    free(outdeg);
    free(off);
    free(perm);
    return 0;
}
