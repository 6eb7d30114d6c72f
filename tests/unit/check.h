/* check.h: the one assertion macro the unit tests share. CHECK counts and
 * prints a failure with file and line and goes on, so one run shows every
 * broken case. */
#ifndef SLABTAP_TEST_CHECK_H
#define SLABTAP_TEST_CHECK_H

#include <stdio.h>

static int tests_run, tests_failed;

#define CHECK(cond, ...)                                        \
    do {                                                        \
        tests_run++;                                            \
        if (!(cond)) {                                          \
            tests_failed++;                                     \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);         \
            printf(__VA_ARGS__);                                \
            printf("\n");                                       \
        }                                                       \
    } while (0)

#endif
