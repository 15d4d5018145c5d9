/* rt_harness.h — the harness that seed 003's task programs share (rt_tasks.c: Table 6.1 and
 * §6.0.8; rt_tasks_fig6_13_14.c: Figs. 6.13-6.14): the task record, the globals, taking turns and
 * the logical array. rt_harness_run.h has the rest (t_init, the task thread, argument parsing and
 * main), rt_kernels_table6_1.h the Table 6.1 kernels; the banner of rt_tasks.c describes all.
 *
 * A program defines `enum kernel`, kernel_names[] and N_KERNELS, includes this header, defines
 * fill() and t_job() (its kernels), then the hooks rt_harness_run.h names, then includes it.
 *
 * Why two headers and this order: the programs' page layout is part of the findings (the task
 * pages' and code pages' DTLB sets decide the noisy sets, §6.0.6, and the misses). These
 * headers keep rt_tasks.c's functions in the order they had when its verdicts were measured
 * (globals, turns, elem, next_rand; its kernels; t_init, task_main, parsing, main), and its hooks
 * are empty static functions the compiler drops: its binary is the same, byte for byte, as before
 * the harness was shared (2026-11-27). Keep that order when editing.
 */
#ifndef RT_HARNESS_H
#define RT_HARNESS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "tlblab/color.h"
#include "tlblab/roi.h"

#define MAX_TASKS 8
#define MAX_PAGES 64
#define PAGE 4096u
#define LINE 64u

struct task {
    enum kernel kernel;
    unsigned alloc, used;
    unsigned colors[MAX_PAGES];
    unsigned ncolors;
    char *pages[MAX_PAGES];
    uintptr_t stack_anchor;
    unsigned id;
    struct timeval release; /* Alg. 4: the task's next release, and its period */
    struct timeval period;
    uint32_t rng;
    volatile int64_t sink;
};

/* Alg. 4 keeps a task's loop state (release, period, wait, now) in the thread's own frame and
 * reads no global inside the loop; here it is the task's entry of tasks[] and the stack. */
static struct task tasks[MAX_TASKS];
static unsigned ntasks, njobs, nrepeat, nelems, seed;
static int use_tlb;
static tlb_arena_t *arena;

/* Taking turns: every t_init in task order, then each task's jobs (see the banner). */
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond = PTHREAD_COND_INITIALIZER;
static unsigned turn;

static void wait_turn(unsigned want) {
    pthread_mutex_lock(&turn_lock);
    while (turn != want) pthread_cond_wait(&turn_cond, &turn_lock);
    pthread_mutex_unlock(&turn_lock);
}

static void pass_turn(void) {
    pthread_mutex_lock(&turn_lock);
    turn++;
    pthread_cond_broadcast(&turn_cond);
    pthread_mutex_unlock(&turn_lock);
}

static void die(const char *msg) {
    fprintf(stderr, "rt_tasks: %s\n", msg);
    exit(2);
}

/* Element k of task t's logical array. */
static inline int *elem(struct task *t, unsigned k) {
    unsigned page = k % t->used;
    unsigned line = (k / t->used) % (PAGE / LINE);
    return (int *)(t->pages[page] + line * LINE);
}

static uint32_t next_rand(struct task *t) {
    t->rng = t->rng * 1103515245u + 12345u; /* the Mälardalen programs' own generator */
    return (t->rng >> 16) & 0x7fff;
}
#endif
