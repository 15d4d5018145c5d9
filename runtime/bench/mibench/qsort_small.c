/* MiBench qsort_small's algorithm (seed 004 Table 1: "Sort array of string"), for tracing under
 * Valgrind Lackey: read words, sort them with libc qsort and strcmp, print them.
 * MiBench's input (input_small.dat, a word list) is not redistributed here: with no file argument
 * the program generates N words (default 10000) of 3..12 lowercase letters from a fixed LCG, so
 * every run sorts the same input. `qsort_small FILE` sorts the words of FILE instead.
 * The output goes to stdout (MiBench prints the sorted list); `-q` prints only a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXWORD 64

static int compare(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static unsigned long long lcg(unsigned long long *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL; /* 64-bit on ILP32 too */
    return *s >> 33;
}

int main(int argc, char **argv) {
    int quiet = 0;
    const char *file = NULL;
    long n = 10000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-q") == 0) quiet = 1;
        else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) n = atol(argv[++i]);
        else file = argv[i];
    }
    char **words = NULL;
    long count = 0, cap = 0;
    if (file) {
        FILE *f = fopen(file, "r");
        if (!f) { fprintf(stderr, "qsort_small: cannot open %s\n", file); return 2; }
        char buf[MAXWORD];
        while (fscanf(f, "%63s", buf) == 1) {
            if (count == cap) { cap = cap ? cap * 2 : 1024; words = realloc(words, cap * sizeof *words); }
            size_t len = strlen(buf) + 1; /* strdup is POSIX, not C11 */
            words[count] = malloc(len);
            memcpy(words[count++], buf, len);
        }
        fclose(f);
    } else {
        unsigned long long s = 4;
        words = malloc(n * sizeof *words);
        for (count = 0; count < n; count++) {
            int len = 3 + (int)(lcg(&s) % 10);
            char *w = malloc(len + 1);
            for (int k = 0; k < len; k++) w[k] = (char)('a' + lcg(&s) % 26);
            w[len] = 0;
            words[count] = w;
        }
    }
    qsort(words, count, sizeof *words, compare);
    unsigned long sum = 0;
    for (long i = 0; i < count; i++) {
        if (!quiet) puts(words[i]);
        sum = sum * 31 + (unsigned char)words[i][0] + (unsigned long)i;
        free(words[i]);
    }
    free(words);
    if (quiet) printf("%ld words, checksum %lu\n", count, sum);
    return 0;
}
