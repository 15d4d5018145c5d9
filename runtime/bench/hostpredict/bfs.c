/* bfs: top-down breadth-first search on an R-MAT graph in CSR (Graph500's kernel 2 and GAPBS's
 * bfs, Beamer et al. 2015, without direction optimisation), written in the project. The graph:
 * 2^SCALE vertices, EDGEFACTOR * 2^SCALE undirected edges drawn with Graph500's R-MAT
 * probabilities (0.57, 0.19, 0.19), vertices permuted. Each round: one BFS from the vertex of
 * highest degree (in the giant component), parents reset first: every round does the same work.
 *     bfs [SCALE=20] [EDGEFACTOR=16] [ROUNDS=4] */
#include "hp_common.h"

int main(int argc, char **argv) {
    uint64_t scale = hp_arg(argc, argv, 1, 20, "SCALE");
    uint64_t ef = hp_arg(argc, argv, 2, 16, "EDGEFACTOR");
    uint64_t rounds = hp_arg(argc, argv, 3, 4, "ROUNDS");
    if (scale > 28) {
        fprintf(stderr, "%s: SCALE: expected at most 28, found %llu\n", argv[0], (unsigned long long)scale);
        return 2;
    }
    uint64_t n = 1ull << scale, m = ef * n;
    uint32_t *src = hp_alloc(m * sizeof *src, "edge sources");
    uint32_t *dst = hp_alloc(m * sizeof *dst, "edge targets");
    uint32_t *perm = hp_alloc(n * sizeof *perm, "permutation");
    uint64_t s = 0x243F6A8885A308D3ull;
    for (uint64_t v = 0; v < n; v++)
        perm[v] = (uint32_t)v;
    for (uint64_t v = n - 1; v > 0; v--) {
        uint64_t j = hp_next(&s) % (v + 1);
        uint32_t t = perm[v];
        perm[v] = perm[j];
        perm[j] = t;
    }
    for (uint64_t e = 0; e < m; e++) {
        uint64_t u = 0, v = 0;
        for (uint64_t bit = 0; bit < scale; bit++) {
            uint64_t x = hp_next(&s) % 100; /* a = 57, b = 19, c = 19, d = 5 */
            uint64_t ub = x >= 76, vb = (x >= 57 && x < 76) || x >= 95;
            u = u << 1 | ub;
            v = v << 1 | vb;
        }
        src[e] = perm[u];
        dst[e] = perm[v];
    }
    uint64_t *off = hp_alloc((n + 1) * sizeof *off, "offsets");
    memset(off, 0, (n + 1) * sizeof *off);
    for (uint64_t e = 0; e < m; e++) {
        off[src[e] + 1]++;
        off[dst[e] + 1]++;
    }
    for (uint64_t v = 0; v < n; v++)
        off[v + 1] += off[v];
    uint32_t *adj = hp_alloc(2 * m * sizeof *adj, "adjacency");
    uint64_t *fill = hp_alloc(n * sizeof *fill, "fill");
    memcpy(fill, off, n * sizeof *fill);
    for (uint64_t e = 0; e < m; e++) {
        adj[fill[src[e]]++] = dst[e];
        adj[fill[dst[e]]++] = src[e];
    }
    free(fill);
    free(src);
    free(dst);
    int32_t *parent = hp_alloc(n * sizeof *parent, "parents");
    uint32_t *queue = hp_alloc(n * sizeof *queue, "queue");
    uint64_t sum = 0, root = 0;
    for (uint64_t v = 1; v < n; v++)
        if (off[v + 1] - off[v] > off[root + 1] - off[root])
            root = v;
    TLBLAB_ROI_BEGIN();
    double t0 = hp_now();
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
    }
    double t1 = hp_now();
    TLBLAB_ROI_END();
    hp_report(t1 - t0, rounds, sum);
    free(queue);
    free(parent);
    free(adj);
    free(off);
    free(perm);
    return 0;
}
