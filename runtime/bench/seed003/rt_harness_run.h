/* rt_harness_run.h — the second half of seed 003's task-program harness (see rt_harness.h):
 * t_init, the task thread, argument parsing and main. Included after the program's t_job and
 * these hooks:
 *   RT_KERNEL_CHOICES                      the kernels' names for the error message;
 *   static void program_args(int *argc, char **argv)
 *                                          takes the program's own arguments out of argv;
 *   static void program_task_parsed(struct task *t)
 *                                          opens what task t's kernel reads.
 * rt_tasks.c's hooks are empty (see rt_harness.h: its binary must not change).
 */
#ifndef RT_HARNESS_RUN_H
#define RT_HARNESS_RUN_H

static void t_init(struct task *t) {
    /* With tlb_malloc only the pages a job uses get colors: an allocated page that no job
     * touches holds no DTLB way after the warm-up, and 2 x 32 colored pages would take every
     * way of every set, the noisy ones included (§6.0.6). */
    if (use_tlb) t->alloc = t->used;
    for (unsigned p = 0; p < t->alloc; p++) {
        if (use_tlb) {
            /* A page of the task's p-th color (4 pages per color: the DTLB's ways): one
             * allocation in each of the color's 4 slots, the first after its control block. */
            unsigned color = t->colors[p / 4 % t->ncolors];
            size_t want = tlb_max_alloc(arena, color) / 2;
            char *x = NULL;
            for (;;) {
                x = tlb_malloc(arena, want, color);
                if (!x) die("tlb_malloc: the color is full");
                uintptr_t pg = (uintptr_t)x & ~(uintptr_t)(PAGE - 1);
                int fresh = 1;
                for (unsigned q = 0; q < p; q++)
                    if (((uintptr_t)t->pages[q] & ~(uintptr_t)(PAGE - 1)) == pg) fresh = 0;
                if (fresh) break;
            }
            t->pages[p] = x;
        } else {
            t->pages[p] = malloc(PAGE);
            if (!t->pages[p]) die("malloc failed");
        }
    }
    for (unsigned p = 0; p < t->alloc; p++) t->pages[p][0] = (char)p; /* the warm up phase */
    if (t->kernel == K_PAGES && t->used < t->alloc) {
        /* §6.0.8: "each task then randomly chooses 14 pages from the pool of 32": a seeded
         * Fisher-Yates shuffle puts the chosen ones first. */
        for (unsigned p = t->alloc - 1; p > 0; p--) {
            unsigned q = next_rand(t) % (p + 1);
            char *x = t->pages[p];
            t->pages[p] = t->pages[q];
            t->pages[q] = x;
        }
    }
}

static void plus_time(struct timeval *tv, const struct timeval *add) {
    tv->tv_sec += add->tv_sec;
    tv->tv_usec += add->tv_usec;
    if (tv->tv_usec >= 1000000) {
        tv->tv_sec++;
        tv->tv_usec -= 1000000;
    }
}

static void *task_main(void *arg) {
    struct task *t = arg;
    int local = 0;
    t->stack_anchor = (uintptr_t)&local;
    wait_turn(t->id);
    /* Job 0 is everything the task does before its first release: t_init (Alg. 4 line 12:
     * allocation and the warm up phase), then lines 14-16 of the first iteration, reading the
     * time and sleeping until the first release (the first task's first nanosleep also binds it
     * in the PLT, which the dynamic loader would otherwise do inside job 1; main bound
     * gettimeofday). */
    TLBLAB_ROI_BEGIN();
    t_init(t);
    struct timeval first_now;
    gettimeofday(&first_now, NULL); /* Alg. 4 line 14 of the first iteration; release = start_time */
    t->sink += first_now.tv_usec;
    struct timespec first = {0, 0};
    nanosleep(&first, NULL);
    TLBLAB_ROI_END();
    pass_turn();
    wait_turn(ntasks + t->id);
    for (unsigned j = 1; j <= njobs; j++) {
        TLBLAB_ROI_BEGIN();
        t_job(t);
        plus_time(&t->release, &t->period);
        struct timeval now;
        gettimeofday(&now, NULL);
        /* Alg. 4 lines 14-16: sleep until the next release (already past here: wait 0). */
        long wait_us = (t->release.tv_sec - now.tv_sec) * 1000000L + (t->release.tv_usec - now.tv_usec);
        t->sink += wait_us; /* minustime; the wait itself is not slept (see the banner) */
        struct timespec wait = {0, 0};
        while (nanosleep(&wait, &wait) != 0 && errno == EINTR) {
        }
        TLBLAB_ROI_END();
    }
    pass_turn();
    /* Exit only once every task's jobs are done: Valgrind runs one thread at a time but hands
     * over at any system call, and a thread's exit (or main's return from pthread_join) must
     * not run while another task is inside a job's region. */
    wait_turn(2 * ntasks);
    (void)local;
    return NULL;
}

/* `anchor lib.NAME ADDRESS` for each shared object with a name (libc, libm, the dynamic
 * loader): the start of its first loaded segment. */
static int print_object_anchor(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    const char *name = strrchr(info->dlpi_name, '/');
    name = name ? name + 1 : info->dlpi_name;
    for (int i = 0; i < info->dlpi_phnum && *name; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            printf("anchor lib.%s %#lx\n", name, (unsigned long)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr));
            break;
        }
    return 0;
}

static unsigned parse_uint(const char *s, const char *what, unsigned lo, unsigned hi) {
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == 0 || *end != 0 || v < lo || v > hi) {
        fprintf(stderr, "rt_tasks: %s: expected a number in %u..%u, found '%s'\n", what, lo, hi, s);
        exit(2);
    }
    return (unsigned)v;
}

static void parse_task(struct task *t, char *spec) {
    char *save = NULL;
    char *kname = strtok_r(spec, ":", &save), *a = strtok_r(NULL, ":", &save),
         *u = strtok_r(NULL, ":", &save), *c = strtok_r(NULL, ":", &save);
    if (!kname || !a || !u) die("a task is KERNEL:ALLOC:USED[:COLOR,...]");
    unsigned k;
    for (k = 0; k < N_KERNELS; k++)
        if (strcmp(kname, kernel_names[k]) == 0) break;
    if (k == N_KERNELS) {
        fprintf(stderr, "rt_tasks: unknown kernel '%s' (expected " RT_KERNEL_CHOICES ")\n", kname);
        exit(2);
    }
    t->kernel = (enum kernel)k;
    t->alloc = parse_uint(a, "ALLOC", 1, MAX_PAGES);
    t->used = parse_uint(u, "USED", 1, t->alloc);
    if (use_tlb) {
        if (!c) die("with tlb every task names its colors: KERNEL:ALLOC:USED:COLOR,...");
        for (char *s = strtok_r(c, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
            if (t->ncolors == MAX_PAGES) die("too many colors");
            t->colors[t->ncolors++] = parse_uint(s, "COLOR", 0, 15);
        }
        if (t->ncolors * 4 < t->used) die("fewer colors than USED/4 (4 pages per color)");
    }
}

int main(int argc, char **argv) {
    program_args(&argc, argv);
    if (argc < 7) {
        fprintf(stderr, "usage: rt_tasks malloc|tlb JOBS REPEAT ELEMS SEED KERNEL:ALLOC:USED[:COLOR,...]...\n");
        return 2;
    }
    if (strcmp(argv[1], "tlb") == 0) use_tlb = 1;
    else if (strcmp(argv[1], "malloc") != 0) die("the allocator is malloc or tlb");
    njobs = parse_uint(argv[2], "JOBS", 1, 100000);
    nrepeat = parse_uint(argv[3], "REPEAT", 1, 100000);
    nelems = parse_uint(argv[4], "ELEMS", 2, PAGE / LINE);
    seed = parse_uint(argv[5], "SEED", 0, 1000000);
    ntasks = (unsigned)(argc - 6);
    if (ntasks > MAX_TASKS) die("at most 8 tasks");
    if (use_tlb) {
        tlb_geometry_t g = {.sets = 16, .ways = 4, .page_shift = 12, .reserved_sets = 0, .periods = 4,
                            .flags = TLB_ARENA_LOCKED};
        char msg[256];
        arena = tlb_arena_create(&g, NULL, msg, sizeof msg);
        if (!arena) die(msg);
    }
    /* Alg. 4 lines 3-4: main reads the start time before creating the tasks (and so binds
     * gettimeofday in the PLT outside every task's region, as the seed's program did). */
    struct timeval start;
    gettimeofday(&start, NULL);
    /* The next whole second: plus_time's carry into tv_sec is a branch (and a load) in every
     * job, taken at the jobs whose release crosses a second, which with the clock's
     * microseconds as the start came at a different job from run to run, and the captured
     * references with it (two captures of one task set differed by that branch). From a whole
     * second the carries fall on the same jobs in every run; the releases are not slept on in
     * a capture (see the banner), so nothing else moves. */
    start.tv_sec += 1;
    start.tv_usec = 0;
    pthread_t th[MAX_TASKS];
    for (unsigned i = 0; i < ntasks; i++) {
        tasks[i].release = start;
        tasks[i].id = i;
        tasks[i].rng = 1 + i + 1000u * seed;
        tasks[i].period.tv_usec = 2000; /* not slept on in a capture (see the banner) */
        parse_task(&tasks[i], argv[6 + i]);
        program_task_parsed(&tasks[i]);
    }
    for (unsigned i = 0; i < ntasks; i++)
        if (pthread_create(&th[i], NULL, task_main, &tasks[i]) != 0) die("pthread_create failed");
    for (unsigned i = 0; i < ntasks; i++) pthread_join(th[i], NULL);
    /* The capture keeps the last /proc/PID/maps snapshot it read, polling every 50 ms: hold the
     * final layout (every task's arena and cached stack mapped) for several polls, or a short run
     * could end before a snapshot showed its last arena (its anchor then lay in no mapping). */
    struct timespec hold = {0, 300 * 1000 * 1000};
    while (nanosleep(&hold, &hold) != 0 && errno == EINTR) {
    }
    printf("anchor exe %#lx\n", (unsigned long)(uintptr_t)&tasks[0]);
    printf("anchor libc %#lx\n", (unsigned long)(uintptr_t)stdout);
    dl_iterate_phdr(print_object_anchor, NULL);
    /* The dynamic loader's own heap (an anonymous mapping of its minimal malloc): the link maps
     * of the shared objects, which every lazy binding's symbol lookup walks. libc's is there. */
    for (struct link_map *m = _r_debug.r_map; m; m = m->l_next)
        if (m->l_name && strstr(m->l_name, "libc.so")) {
            printf("anchor ldheap %#lx\n", (unsigned long)(uintptr_t)m);
            break;
        }
    for (unsigned i = 0; i < ntasks; i++) {
        printf("anchor stack.T%u %#lx\n", i + 1, (unsigned long)tasks[i].stack_anchor);
        printf("anchor heap.T%u %#lx\n", i + 1, (unsigned long)(uintptr_t)tasks[i].pages[0]);
    }
    for (unsigned i = 0; i < ntasks; i++) {
        printf("task T%u %s", i + 1, kernel_names[tasks[i].kernel]);
        for (unsigned p = 0; p < tasks[i].used; p++)
            printf(" %#lx", (unsigned long)((uintptr_t)tasks[i].pages[p] & ~(uintptr_t)(PAGE - 1)));
        printf("\n");
    }
    return 0;
}
#endif
