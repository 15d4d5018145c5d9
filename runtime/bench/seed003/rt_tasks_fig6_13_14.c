/* rt_tasks_fig6_13_14.c — seed 003's Figs. 6.13-6.14 task pairs as a real program: rt_tasks.c
 * (the Table 6.1 kernels: bubble sort, insertion sort, nth largest, statistics) with fft, adpcm,
 * fir and Mi's adpcm added. A program of its own, as each of the seed's experiments was (Alg. 4:
 * main creates that experiment's tasks): adding these kernels to rt_tasks.c moved that
 * executable's pages and changed its noisy sets. The tasks run as pthreads of one process that
 * allocate their pages with glibc malloc or with libtlblab's tlb_malloc, for tlblab to capture
 * under Valgrind (python/tlblab/seeds/s003_tlb_coloring/rt_capture.py) and replay under rate-monotonic scheduling.
 *
 *     rt_tasks_fig6_13_14 malloc|tlb JOBS REPEAT ELEMS SEED TASK...   TASK = KERNEL:ALLOC:USED[:COLOR,COLOR...]
 *     rt_tasks_fig6_13_14 malloc 8 2 4 1 stats:32:16 bubble:32:16
 *     rt_tasks_fig6_13_14 tlb 8 2 4 1 stats:32:16:2,4,5,6 bubble:32:16:7,8,9,10
 *
 * KERNEL is bubble, insertion, nth or stats (§6.0.9), or pages: §6.0.8's synthetic task, one
 * write per page, on USED pages chosen at random (by SEED) among the ALLOC allocated; or, for
 * Figs. 6.13 and 6.14, fft and adpcm (Mälardalen, random data, §6.0.9), fir (Mälardalen, §6.0.10)
 * and miadpcm (Mi's adpcm coder streaming a real audio file through block buffers, §6.0.10:
 * give its input as an argument `audio=PATH` among the tasks, raw 16-bit PCM).
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
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <unistd.h>

enum kernel { K_BUBBLE, K_INSERTION, K_NTH, K_STATS, K_PAGES, K_FFT, K_ADPCM, K_FIR, K_MIADPCM };
static const char *const kernel_names[] = {"bubble", "insertion", "nth",  "stats",  "pages",
                                           "fft",    "adpcm",     "fir", "miadpcm"};
#define N_KERNELS 9

#include "rt_harness.h"

/* miadpcm's input: raw 16-bit PCM (`audio=PATH`), read block by block; its output goes to
 * /dev/null, as Mi's rawcaudio writes its codes to stdout. */
static const char *audio_path;
static int audio_fd = -1, null_fd = -1;

/* Element k of a logical array of doubles on pages [first, first + npages) of task t, laid
 * out as elem() lays out ints (page k % npages, cache line (k / npages) % 16). */
static inline double *elemd(struct task *t, unsigned first, unsigned npages, unsigned k) {
    unsigned page = first + k % npages;
    unsigned line = (k / npages) % (PAGE / LINE);
    return (double *)(t->pages[page] + line * LINE);
}

static void fill(struct task *t, unsigned n) {
    if (t->kernel == K_FFT) { /* the real parts random, the imaginary parts zero (Mälardalen fft1) */
        unsigned half = t->used / 2 ? t->used / 2 : 1, im = t->used / 2 ? half : 0;
        for (unsigned k = 0; k < n; k++) {
            *elemd(t, 0, half, k) = (double)next_rand(t);
            if (im) *elemd(t, im, half, k) = 0;
        }
        return;
    }
    for (unsigned k = 0; k < n; k++) *elem(t, k) = (int)next_rand(t);
}

#include "rt_kernels_table6_1.h"

#define FFT_PI 3.14159265358979323846 /* Mälardalen fft1 uses its own PI too */

/* Mälardalen fft1's own sine (a Taylor series to 1e-5; its cosine is sin(pi/2 - x)): the
 * benchmark calls no libm, so its jobs touch no libm page (a first run with libm's sin and cos
 * put libm's pages in the task's full colors, 2026-11-27: see fig6_13_14_real). */
static double fft_sin(double rad) {
    while (rad > 2 * FFT_PI) rad -= 2 * FFT_PI;
    while (rad < -2 * FFT_PI) rad += 2 * FFT_PI;
    double app = rad, diff = rad;
    for (int inc = 1;; inc++) {
        diff = (diff * (-(rad * rad))) / ((2.0 * inc) * (2.0 * inc + 1.0));
        app += diff;
        if ((diff < 0 ? -diff : diff) < 0.00001) break;
    }
    return app;
}

/* Mälardalen fft1: an in-place radix-2 FFT of n points (a power of two), the real parts on the
 * task's first half of pages and the imaginary parts on the second ("its real and imaginary
 * halves"); then the inverse, so every job starts from the same data. */
static double fft(struct task *t, unsigned n, int inverse) {
    unsigned half = t->used / 2 ? t->used / 2 : 1, im = t->used / 2 ? half : 0;
    for (unsigned i = 1, j = 0; i < n; i++) { /* bit reversal */
        unsigned bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) {
            double x = *elemd(t, 0, half, i), y = *elemd(t, im, half, i);
            *elemd(t, 0, half, i) = *elemd(t, 0, half, j);
            *elemd(t, im, half, i) = *elemd(t, im, half, j);
            *elemd(t, 0, half, j) = x;
            *elemd(t, im, half, j) = y;
        }
    }
    for (unsigned len = 2; len <= n; len <<= 1) {
        double ang = (inverse ? 2 : -2) * FFT_PI / len;
        for (unsigned i = 0; i < n; i += len)
            for (unsigned k = 0; k < len / 2; k++) {
                double wr = fft_sin(FFT_PI / 2 - ang * k), wi = fft_sin(ang * k);
                double *ar = elemd(t, 0, half, i + k), *ai = elemd(t, im, half, i + k);
                double *br = elemd(t, 0, half, i + k + len / 2), *bi = elemd(t, im, half, i + k + len / 2);
                double xr = *br * wr - *bi * wi, xi = *br * wi + *bi * wr;
                *br = *ar - xr;
                *bi = *ai - xi;
                *ar += xr;
                *ai += xi;
            }
    }
    if (inverse)
        for (unsigned i = 0; i < n; i++) {
            *elemd(t, 0, half, i) /= n;
            *elemd(t, im, half, i) /= n;
        }
    return *elemd(t, 0, half, 0);
}

/* The IMA (Intel/DVI) ADPCM coder of Mi's adpcm (Jack Jansen's adpcm.c): its tables are the
 * executable's read-only data. */
static const int ima_index[16] = {-1, -1, -1, -1, 2, 4, 6, 8, -1, -1, -1, -1, 2, 4, 6, 8};
static const int ima_step[89] = {
    7,     8,     9,     10,    11,    12,    13,    14,    16,    17,    19,    21,    23,    25,    28,
    31,    34,    37,    41,    45,    50,    55,    60,    66,    73,    80,    88,    97,    107,   118,
    130,   143,   157,   173,   190,   209,   230,   253,   279,   307,   337,   371,   408,   449,   494,
    544,   598,   658,   724,   796,   876,   963,   1060,  1166,  1282,  1411,  1552,  1707,  1878,  2066,
    2272,  2499,  2749,  3024,  3327,  3660,  4026,  4428,  4871,  5358,  5894,  6484,  7132,  7845,  8630,
    9493,  10442, 11487, 12635, 13899, 15289, 16818, 18500, 20350, 22385, 24623, 27086, 29794, 32767};

struct ima_state {
    int valprev, index;
};

static int ima_encode_one(struct ima_state *s, int val) {
    int step = ima_step[s->index], diff = val - s->valprev, sign = diff < 0 ? 8 : 0;
    if (sign) diff = -diff;
    int delta = 0, vpdiff = step >> 3;
    if (diff >= step) { delta = 4; diff -= step; vpdiff += step; }
    step >>= 1;
    if (diff >= step) { delta |= 2; diff -= step; vpdiff += step; }
    step >>= 1;
    if (diff >= step) { delta |= 1; vpdiff += step; }
    s->valprev += sign ? -vpdiff : vpdiff;
    if (s->valprev > 32767) s->valprev = 32767;
    if (s->valprev < -32768) s->valprev = -32768;
    delta |= sign;
    s->index += ima_index[delta];
    if (s->index < 0) s->index = 0;
    if (s->index > 88) s->index = 88;
    return delta;
}

static int ima_decode_one(struct ima_state *s, int delta) {
    int step = ima_step[s->index], vpdiff = step >> 3;
    if (delta & 4) vpdiff += step;
    if (delta & 2) vpdiff += step >> 1;
    if (delta & 1) vpdiff += step >> 2;
    s->valprev += (delta & 8) ? -vpdiff : vpdiff;
    if (s->valprev > 32767) s->valprev = 32767;
    if (s->valprev < -32768) s->valprev = -32768;
    s->index += ima_index[delta];
    if (s->index < 0) s->index = 0;
    if (s->index > 88) s->index = 88;
    return s->valprev;
}

/* Mälardalen adpcm on randomly generated data (§6.0.10: "operates on randomly generated
 * data"): n samples, element k of the logical array, coded in place to their 4-bit codes and
 * decoded back. Mälardalen's adpcm is the G.722 sub-band coder; this is the IMA coder above,
 * whose access pattern (a pass over the samples with small tables) is the same shape. */
static int64_t adpcm(struct task *t, unsigned n) {
    struct ima_state enc = {0, 0}, dec = {0, 0};
    int64_t sum = 0;
    for (unsigned k = 0; k < n; k++) *elem(t, k) = ima_encode_one(&enc, *elem(t, k) - 16384);
    for (unsigned k = 0; k < n; k++) sum += ima_decode_one(&dec, *elem(t, k));
    return sum;
}

/* Mälardalen fir: a 35-tap FIR filter (coefficients in the executable's read-only data) over
 * the n samples of the logical array; the outputs overwrite the inputs from the end, so each
 * output reads only inputs not yet overwritten. */
static const int fir_coef[35] = {-6,  -13, -16, -8,  13,  40,  57,  46,  0,   -69, -128, -139, -69, 99,  338, 590, 783,
                                 858, 783, 590, 338, 99,  -69, -139, -128, -69, 0,   46,  57,  40,  13,  -8,  -16, -13,
                                 -6};
static void fir(struct task *t, unsigned n) {
    for (unsigned k = n; k-- > 0;) {
        int64_t acc = 0;
        for (unsigned i = 0; i < 35 && i <= k; i++) acc += (int64_t)fir_coef[i] * *elem(t, k - i);
        *elem(t, k) = (int)(acc >> 12);
    }
}

/* Mi adpcm (rawcaudio): read a block of 16-bit PCM from the audio file into the task's first
 * page (wrapping at the end of the file), code it to 4-bit codes on the second page, write
 * the codes out. The kernel's copy into the block is not a user reference (Valgrind sees
 * none), as on the seed's machine the copy ran in the kernel. */
static int64_t miadpcm(struct task *t, struct ima_state *s) {
    short *in = (short *)t->pages[0];
    unsigned char *out = (unsigned char *)t->pages[t->used > 1 ? 1 : 0];
    ssize_t got = read(audio_fd, in, PAGE);
    if (got < (ssize_t)sizeof(short)) {
        if (lseek(audio_fd, 0, SEEK_SET) < 0) die("seeking the audio file failed");
        got = read(audio_fd, in, PAGE);
        if (got < (ssize_t)sizeof(short)) die("the audio file holds no sample");
    }
    unsigned samples = (unsigned)got / sizeof(short);
    for (unsigned k = 0; k + 1 < samples; k += 2)
        out[k / 2] = (unsigned char)(ima_encode_one(s, in[k]) << 4 | ima_encode_one(s, in[k + 1]));
    if (write(null_fd, out, samples / 2) < 0) die("writing the codes failed");
    return samples;
}

static void t_job(struct task *t) {
    if (t->kernel == K_PAGES) { /* §6.0.8: a write per page, each at its own L1D set */
        for (unsigned r = 0; r < nrepeat; r++)
            for (unsigned p = 0; p < t->used; p++) t->pages[p][(p % (PAGE / LINE)) * LINE] = (char)r;
        return;
    }
    if (t->kernel == K_MIADPCM) {
        static struct ima_state coder; /* rawcaudio's coder state lives across blocks */
        for (unsigned r = 0; r < nrepeat; r++) t->sink += miadpcm(t, &coder);
        return;
    }
    unsigned n = t->used * nelems;
    if (t->kernel == K_FFT) {
        unsigned half = t->used / 2 ? t->used / 2 : 1;
        for (n = 1; n * 2 <= half * nelems; n *= 2) {
        }
    }
    for (unsigned r = 0; r < nrepeat; r++) {
        fill(t, n);
        switch (t->kernel) {
            TABLE6_1_KERNEL_CASES(t, n)
            case K_FFT: t->sink += (int64_t)fft(t, n, 0) + (int64_t)fft(t, n, 1); break;
            case K_ADPCM: t->sink += adpcm(t, n); break;
            case K_FIR: fir(t, n); t->sink += *elem(t, 0); break;
            case K_PAGES:
            case K_MIADPCM: break;
        }
    }
}

#define RT_KERNEL_CHOICES "bubble, insertion, nth, stats, pages, fft, adpcm, fir or miadpcm"

/* `audio=PATH` (anywhere among the tasks): miadpcm's input file, taken out of argv. */
static void program_args(int *argc, char **argv) {
    int kept = 6;
    for (int i = 6; i < *argc; i++) {
        if (strncmp(argv[i], "audio=", 6) == 0) audio_path = argv[i] + 6;
        else argv[kept++] = argv[i];
    }
    if (*argc > 6) *argc = kept;
}

static void program_task_parsed(struct task *t) {
    if (t->kernel != K_MIADPCM || audio_fd >= 0) return;
    if (!audio_path) die("miadpcm needs its input: audio=PATH");
    audio_fd = open(audio_path, O_RDONLY);
    null_fd = open("/dev/null", O_WRONLY);
    if (audio_fd < 0 || null_fd < 0) {
        fprintf(stderr, "rt_tasks: cannot open the audio file '%s': %s\n", audio_path, strerror(errno));
        exit(2);
    }
}

#include "rt_harness_run.h"
