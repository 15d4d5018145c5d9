/* rt_kernels_table6_1.h — the Mälardalen kernels of seed 003's Table 6.1 (§6.0.9): bubble sort,
 * insertion sort, nth largest, statistics, on a task's logical array (elem(), rt_harness.h).
 * Both task programs run them (rt_tasks.c, rt_tasks_fig6_13_14.c); included right after each
 * program's fill(), where rt_tasks.c had them (rt_harness.h: its binary must not change). */
#ifndef RT_KERNELS_TABLE6_1_H
#define RT_KERNELS_TABLE6_1_H

static void bubble(struct task *t, unsigned n) { /* Mälardalen bsort100 */
    for (unsigned i = 0; i + 1 < n; i++) {
        int sorted = 1;
        for (unsigned j = 0; j + 1 < n - i; j++) {
            int *a = elem(t, j), *b = elem(t, j + 1);
            if (*a > *b) {
                int x = *a;
                *a = *b;
                *b = x;
                sorted = 0;
            }
        }
        if (sorted) break;
    }
}

static void insertion(struct task *t, unsigned n) { /* Mälardalen insertsort */
    for (unsigned i = 1; i < n; i++) {
        int x = *elem(t, i);
        unsigned j = i;
        while (j > 0 && *elem(t, j - 1) > x) {
            *elem(t, j) = *elem(t, j - 1);
            j--;
        }
        *elem(t, j) = x;
    }
}

static int nth_largest(struct task *t, unsigned n, unsigned nth) { /* Mälardalen select */
    unsigned lo = 0, hi = n - 1, want = n - 1 - nth;
    while (lo < hi) {
        int pivot = *elem(t, (lo + hi) / 2);
        unsigned i = lo, j = hi;
        while (i <= j) {
            while (*elem(t, i) < pivot) i++;
            while (*elem(t, j) > pivot) j--;
            if (i <= j) {
                int x = *elem(t, i);
                *elem(t, i) = *elem(t, j);
                *elem(t, j) = x;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else break;
    }
    return *elem(t, want);
}

static int64_t statistics(struct task *t, unsigned n) { /* Mälardalen st: sums, means, variances, correlation */
    unsigned half = n / 2;
    double sa = 0, sb = 0, va = 0, vb = 0, cov = 0;
    for (unsigned k = 0; k < half; k++) {
        sa += *elem(t, k);
        sb += *elem(t, half + k);
    }
    double ma = sa / half, mb = sb / half;
    for (unsigned k = 0; k < half; k++) {
        double da = *elem(t, k) - ma, db = *elem(t, half + k) - mb;
        va += da * da;
        vb += db * db;
        cov += da * db;
    }
    double corr = (va > 0 && vb > 0) ? cov / __builtin_sqrt(va * vb) : 0;
    return (int64_t)(corr * 1000) + (int64_t)ma;
}
/* t_job's switch cases that run these kernels once over n elements of task t's array. */
#define TABLE6_1_KERNEL_CASES(t, n)                                                                                     \
    case K_BUBBLE: bubble(t, n); (t)->sink += *elem(t, 0); break;                                                       \
    case K_INSERTION: insertion(t, n); (t)->sink += *elem(t, (n) - 1); break;                                           \
    case K_NTH: (t)->sink += nth_largest(t, n, (n) / 4); break;                                                         \
    case K_STATS: (t)->sink += statistics(t, n); break;

#endif
