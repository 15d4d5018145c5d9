/* rt_tasks.c — seed 003's periodic tasks as a real program: the Mälardalen kernels of Table 6.1
 * (bubble sort, insertion sort, nth largest, statistics) as pthreads of one process that
 * allocate their pages with glibc malloc or with libtlblab's tlb_malloc, for tlblab to capture
 * under Valgrind (python/tlblab/seeds/s003_tlb_coloring/rt_capture.py) and replay under rate-monotonic scheduling.
 *
 *     rt_tasks malloc|tlb JOBS REPEAT ELEMS SEED TASK...   TASK = KERNEL:ALLOC:USED[:COLOR,COLOR...]
 *     rt_tasks malloc 8 2 4 1 stats:32:16 bubble:32:16
 *     rt_tasks tlb 8 2 4 1 stats:32:16:2,4,5,6 bubble:32:16:7,8,9,10
 *
 * KERNEL is bubble, insertion, nth or stats (§6.0.9), or pages: §6.0.8's synthetic task, one
 * write per page, on USED pages chosen at random (by SEED) among the ALLOC allocated.
 *
 * What follows the seed (§5 Alg. 4, §6.0.8, §6.0.9):
 *   - each task is a pthread created by main, in task order (Alg. 4 lines 5-7), with glibc's
 *     default attributes: an 8 MiB stack and, on its first malloc, a thread arena of its own;
 *   - t_init (Alg. 4 line 12) allocates ALLOC pages, with ALLOC calls of malloc(4096) or, with
 *     `tlb`, ALLOC page-sized regions of the task's colors from one tlb_malloc arena (16 sets x
 *     4 ways: the Xeon E5-2650's L1 DTLB, seed §4.0.4; only the USED pages), and writes each
 *     page once: the *warm up phase* (§6.0.8);
 *   - each job (Alg. 4 lines 14-18) runs the task's kernel REPEAT times over its first USED pages
 *     (the *repeated access phase*, "the loop bounds of the repeated access phase is varied to
 *     select an appropriate execution time", §6.0.9), then advances its release time with
 *     plus_time, reads the time with gettimeofday and sleeps with nanosleep, as Alg. 4 does;
 *   - the kernels work on a logical array of USED x ELEMS ints, element k on page k % USED at
 *     cache line (k / USED) % 16, so every job touches all its pages and different pages' data
 *     fall in different L1 data-cache sets (§6.0.8's modification).
 * What differs: the tasks do not run concurrently. They take turns (every task's t_init in task
 * order, then each task's JOBS jobs), so that a capture holds each job whole; tlblab's scheduler
 * interleaves them afterwards with Table 6.1's phases, periods and execution times. nanosleep is
 * given the remaining wait, which is zero here (the releases are in the past), so it returns at
 * once. No SCHED_FIFO (it needs privileges and changes no address).
 *
 * Job boundaries are marked with tlblab's region-of-interest marks (tlblab/roi.h): job 0 is the
 * warm-up (t_init and the wait for the first release), jobs 1..JOBS the periodic jobs, each one
 * region from BEGIN to END, so
 * `tlblab trace record --roi-only` traces the jobs and nothing else.
 *
 * At exit the program prints one `anchor NAME ADDRESS` line per mapping it touches in its jobs
 * (the executable's data, libc's data, each shared object loaded, each task's stack and heap), so that the addresses of a
 * capture under Valgrind (whose layout is fixed) can be moved to where a native run with ASLR
 * put each mapping (rt_capture.py), and `task NAME PAGE...` lines with the pages each task uses.
 */
enum kernel { K_BUBBLE, K_INSERTION, K_NTH, K_STATS, K_PAGES };
static const char *const kernel_names[] = {"bubble", "insertion", "nth", "stats", "pages"};
#define N_KERNELS 5

#include "rt_harness.h"

static void fill(struct task *t, unsigned n) {
    for (unsigned k = 0; k < n; k++) *elem(t, k) = (int)next_rand(t);
}

#include "rt_kernels_table6_1.h"

static void t_job(struct task *t) {
    if (t->kernel == K_PAGES) { /* §6.0.8: a write per page, each at its own L1D set */
        for (unsigned r = 0; r < nrepeat; r++)
            for (unsigned p = 0; p < t->used; p++) t->pages[p][(p % (PAGE / LINE)) * LINE] = (char)r;
        return;
    }
    unsigned n = t->used * nelems;
    for (unsigned r = 0; r < nrepeat; r++) {
        fill(t, n);
        switch (t->kernel) {
            TABLE6_1_KERNEL_CASES(t, n)
            case K_PAGES: break;
        }
    }
}

/* No argument of its own, nothing to open: empty hooks, which the compiler drops (rt_harness.h). */
#define RT_KERNEL_CHOICES "bubble, insertion, nth, stats or pages"
static void program_args(int *argc, char **argv) {
    (void)argc;
    (void)argv;
}

static void program_task_parsed(struct task *t) { (void)t; }

#include "rt_harness_run.h"
