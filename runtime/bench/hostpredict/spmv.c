/* spmv: sparse matrix-vector product y = A x in CSR (the kernel of iterative sparse solvers; the
 * HPCG and SpMV literature, e.g. Williams et al., SC 2007), written in the project. A: N rows of
 * NNZ entries each at uniformly random columns (a matrix with no locality, the TLB's worst case).
 * Each round: one product, then x = y scaled (the power iteration's step).
 *     spmv [N=4M] [NNZ=8] [ROUNDS=6] */
#include "hp_common.h"

int main(int argc, char **argv) {
    uint64_t n = hp_arg(argc, argv, 1, 4u << 20, "N rows");
    uint64_t nnz = hp_arg(argc, argv, 2, 8, "NNZ a row");
    uint64_t rounds = hp_arg_max(argc, argv, 3, 6, "ROUNDS", HP_MAX_ROUNDS);
    uint32_t *col = hp_alloc(n * nnz * sizeof *col, "columns");
    double *val = hp_alloc(n * nnz * sizeof *val, "values");
    double *x = hp_alloc(n * sizeof *x, "x");
    double *y = hp_alloc(n * sizeof *y, "y");
    uint64_t s = 0xABCDEF12345ull;
    for (uint64_t i = 0; i < n * nnz; i++) {
        uint64_t r = hp_next(&s);
        col[i] = (uint32_t)(r % n);
        val[i] = (double)(r >> 11) * 0x1p-53;
    }
    for (uint64_t i = 0; i < n; i++)
        x[i] = 1.0;
    hp_roi roi = hp_roi_begin();
    for (uint64_t round = 0; round < rounds; round++) {
        double norm = 0;
        for (uint64_t i = 0; i < n; i++) {
            double acc = 0;
            for (uint64_t k = i * nnz; k < (i + 1) * nnz; k++)
                acc += val[k] * x[col[k]];
            y[i] = acc;
            norm += acc;
        }
        double scale = norm > 0 ? (double)n / norm : 1.0;
        for (uint64_t i = 0; i < n; i++)
            x[i] = y[i] * scale;
        hp_round_done(&roi);
    }
    hp_roi_finish(&roi, rounds, (uint64_t)(x[n / 2] * 1e6));
    free(y);
    free(x);
    free(val);
    free(col);
    return 0;
}
