/* check.h: the one assertion macro the unit tests share. CHECK counts and
 * prints a failure with file and line and goes on, so one run shows every
 * broken case. */
#ifndef SLABTAP_TEST_CHECK_H
#define SLABTAP_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int tests_run __attribute__((unused)), tests_failed __attribute__((unused));

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

/* The same counters, for tests that name what they compare. */
#define CHECK_TRUE(cond)                                                               \
    do {                                                                               \
        tests_run++;                                                                   \
        if (!(cond)) {                                                                 \
            tests_failed++;                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
        }                                                                              \
    } while (0)

#define CHECK_INT(got, want)                                                           \
    do {                                                                               \
        long long g_ = (long long)(got), w_ = (long long)(want);                       \
        tests_run++;                                                                   \
        if (g_ != w_) {                                                                \
            tests_failed++;                                                            \
            fprintf(stderr, "%s:%d: %s = %lld, want %lld\n", __FILE__, __LINE__, #got, \
                    g_, w_);                                                           \
        }                                                                              \
    } while (0)

#define CHECK_STR(got, want)                                                           \
    do {                                                                               \
        const char *g_ = (got), *w_ = (want);                                          \
        tests_run++;                                                                   \
        if (!g_ || strcmp(g_, w_)) {                                                   \
            tests_failed++;                                                            \
            fprintf(stderr, "%s:%d: %s = \"%s\", want \"%s\"\n", __FILE__, __LINE__,   \
                    #got, g_ ? g_ : "(null)", w_);                                     \
        }                                                                              \
    } while (0)

/* A tally passed around, for tests whose helpers count into their own. */
struct tally {
    int run;
    int failed;
};

#define TALLY_CHECK(t, cond, ...)                                                 \
    do {                                                                          \
        (t)->run++;                                                               \
        if (!(cond)) {                                                            \
            (t)->failed++;                                                        \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                           \
            printf(__VA_ARGS__);                                                  \
            printf("\n");                                                         \
        }                                                                         \
    } while (0)

#endif
