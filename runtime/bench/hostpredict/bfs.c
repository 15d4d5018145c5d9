/* bfs: top-down breadth-first search on an R-MAT graph in CSR (Graph500's kernel 2 and GAPBS's
 * bfs, Beamer et al. 2015, without direction optimisation), written in the project. The graph:
 * 2^SCALE vertices, EDGEFACTOR * 2^SCALE undirected edges drawn with Graph500's R-MAT
 * probabilities (0.57, 0.19, 0.19), vertices permuted. Each round: one BFS from the vertex of
 * highest degree (in the giant component), parents reset first: every round does the same work.
 *     bfs [SCALE=20] [EDGEFACTOR=16] [ROUNDS=4] */
#include "hp_common.h"

int main(int argc, char **argv) {
    uint64_t scale, ef, rounds;
    hp_graph_args(argc, argv, 20, 16, &scale, &ef, &rounds);
    uint64_t n = 1ull << scale, m = ef * n;
    uint32_t *src = hp_alloc(m * sizeof *src, "edge sources");
    uint32_t *dst = hp_alloc(m * sizeof *dst, "edge targets");
    uint32_t *perm = hp_alloc(n * sizeof *perm, "permutation");
    uint64_t s = 0x243F6A8885A308D3ull;
    hp_permutation(perm, n, &s);
    hp_rmat_edges(src, dst, m, scale, perm, &s);
    uint64_t *off = hp_alloc((n + 1) * sizeof *off, "offsets");
    uint32_t *adj = hp_csr(off, n, src, dst, m, 1, "adjacency");
    free(src);
    free(dst);
    int32_t *parent = hp_alloc(n * sizeof *parent, "parents");
    uint32_t *queue = hp_alloc(n * sizeof *queue, "queue");
    uint64_t sum = 0, root = 0;
    for (uint64_t v = 1; v < n; v++)
        if (off[v + 1] - off[v] > off[root + 1] - off[root])
            root = v;
    hp_roi roi = hp_roi_begin();
    for (uint64_t round = 0; round < rounds; round++) {
        memset(parent, 0xff, n * sizeof *parent);
        uint64_t qh = 0, qt = 0;
        parent[root] = (int32_t)root;
        queue[qt++] = (uint32_t)root;
        while (qh < qt) {
            uint32_t u = queue[qh++];
            for (uint64_t i = off[u]; i < off[u + 1]; i++) {
                uint32_t v = adj[i];
                if (parent[v] < 0) {
                    parent[v] = (int32_t)u;
                    queue[qt++] = v;
                }
            }
        }
        sum += qt;
        hp_round_done(&roi);
    }
    hp_roi_finish(&roi, rounds, sum);
    free(queue);
    free(parent);
    free(adj);
    free(off);
    free(perm);
    return 0;
}
