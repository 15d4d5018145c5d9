/* The runtime tests' checks. CHECK counts a failed condition and goes on, so one run reports every
 * failure (a test's main returns non-zero when any check failed). SKIP gives up on a case that
 * cannot run on this machine, saying why; main then exits SKIP_RETURN_CODE, which ctest reports as
 * skipped rather than passed (the tests set it as their SKIP_RETURN_CODE property). */
#ifndef TLBLAB_TESTS_CHECK_H
#define TLBLAB_TESTS_CHECK_H

#include <stdio.h>

/* Atomic: the ptwarm and tlbmig tests check from several threads. */
static _Atomic int failures;
static int skipped __attribute__((unused)); /* cases that could not run here */

#define SKIP_RETURN_CODE 77

#define CHECK(cond)                                                                                 \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__, __func__, #cond); \
            failures++;                                                                             \
        }                                                                                           \
    } while (0)

#define SKIP(why)                                                                                   \
    do {                                                                                            \
        fprintf(stderr, "%s: skipped (%s)\n", __func__, why);                                       \
        skipped++;                                                                                  \
        return;                                                                                     \
    } while (0)

/* What a test's main returns once its cases ran: 1 when a check failed (saying how many), else
 * SKIP_RETURN_CODE when a case was skipped, else 0 (saying that `test` passed). */
static inline int check_outcome(const char *test) {
    if (failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", test, (int)failures);
        return 1;
    }
    if (skipped) return SKIP_RETURN_CODE;
    printf("%s: all passed\n", test);
    return 0;
}

#endif
