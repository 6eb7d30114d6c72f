/* check.h: the assertion macros every unit test shares.
 *
 * Each macro counts one check; a failed one is counted too and printed to
 * stderr as "FAIL file:line: ..." and the test goes on, so one run shows
 * every broken case. main ends with `return check_done("test_NAME");`,
 * which prints the tally and gives the exit status: 1 when any check failed
 * or when none ran (a test that checked nothing must not pass).
 *
 *   CHECK(cond, fmt, ...)                      a condition, printf-style message
 *   CHECK_TRUE(cond)                           a condition, the message is its text
 *   CHECK_INT(got, want)                       integers (as long long), both printed
 *   CHECK_STR(got, want)                       C strings (got may be NULL)
 *   CHECK_MEM(got, got_len, want, want_len, fmt, ...)
 *                                              byte-exact buffers: same length, same
 *                                              bytes; on failure the first differing
 *                                              offset and a hex dump of both there
 *   TALLY_CHECK(t, cond, fmt, ...)             CHECK into a struct tally of the
 *                                              caller's; main ends with tally_done()
 *
 * check_dump() prints a hex dump of any buffer, for context beside a check.
 * The counters are atomic: checks may run on more than one thread. */
#ifndef SLABTAP_TEST_CHECK_H
#define SLABTAP_TEST_CHECK_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static _Atomic int tests_run __attribute__((unused)), tests_failed __attribute__((unused));

#define CHECK_FAIL_AT_(file, line) fprintf(stderr, "FAIL %s:%d: ", (file), (line))

#define CHECK(cond, ...) \
    do { \
        tests_run++; \
        if (!(cond)) { \
            tests_failed++; \
            CHECK_FAIL_AT_(__FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
        } \
    } while (0)

#define CHECK_TRUE(cond) CHECK(cond, "CHECK failed: %s", #cond)

#define CHECK_INT(got, want) \
    do { \
        long long g_ = (long long)(got), w_ = (long long)(want); \
        CHECK(g_ == w_, "%s = %lld, want %lld", #got, g_, w_); \
    } while (0)

#define CHECK_STR(got, want) \
    do { \
        const char *g_ = (got), *w_ = (want); \
        CHECK(g_ && !strcmp(g_, w_), "%s = \"%s\", want \"%s\"", #got, g_ ? g_ : "(null)", w_); \
    } while (0)

/* Bytes shown around the first difference (and from the start otherwise). */
#define CHECK_DUMP_MAX 256

/* Hex dump of n bytes at p, 16 a line with their printable characters:
 * CHECK_DUMP_MAX bytes from a little before offset at (0: from the start). */
static void __attribute__((unused))
check_dump(const char *label, const void *p, size_t n, size_t at)
{
    const unsigned char *b = p;
    size_t from = at > n ? n : at, to;

    from = from >= 32 ? (from - 32) & ~(size_t)15 : 0;
    to = n - from > CHECK_DUMP_MAX ? from + CHECK_DUMP_MAX : n;
    fprintf(stderr, "    %s (%zu bytes)%s\n", label, n, b == NULL && n ? ": NULL" : "");
    for (size_t off = from; b != NULL && off < to; off += 16) {
        fprintf(stderr, "    %08zx ", off);
        for (size_t i = off; i < off + 16; i++) {
            if (i < to)
                fprintf(stderr, " %02x", b[i]);
            else
                fputs("   ", stderr);
        }
        fputs("  |", stderr);
        for (size_t i = off; i < off + 16 && i < to; i++)
            fputc(b[i] >= 0x20 && b[i] < 0x7f ? b[i] : '.', stderr);
        fputs("|\n", stderr);
    }
    if (b != NULL && (from > 0 || to < n))
        fprintf(stderr, "    (bytes %zu..%zu of %zu shown)\n", from, to, n);
}

/* The offset of the first byte where got and want differ (the shorter
 * length when one is a prefix of the other); (size_t)-1 when equal. */
static size_t __attribute__((unused))
check_mem_diff_(const void *got, size_t got_len, const void *want, size_t want_len)
{
    const unsigned char *g = got, *w = want;
    size_t n = got_len < want_len ? got_len : want_len, i = 0;

    if (n > 0 && (g == NULL || w == NULL))
        return 0;
    while (i < n && g[i] == w[i])
        i++;
    return i == n && got_len == want_len ? (size_t)-1 : i;
}

#define CHECK_MEM(got, got_len, want, want_len, ...) \
    do { \
        const void *gm_ = (got), *wm_ = (want); \
        size_t gml_ = (got_len), wml_ = (want_len); \
        size_t at_ = check_mem_diff_(gm_, gml_, wm_, wml_); \
        tests_run++; \
        if (at_ != (size_t)-1) { \
            tests_failed++; \
            CHECK_FAIL_AT_(__FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, ": %zu bytes, want %zu; first difference at byte %zu\n", gml_, wml_, \
                    at_); \
            check_dump("want", wm_, wml_, at_); \
            check_dump("got ", gm_, gml_, at_); \
        } \
    } while (0)

/* A tally passed around, for tests whose helpers count into their own. */
struct tally {
    int run;
    int failed;
};

#define TALLY_CHECK(t, cond, ...) \
    do { \
        (t)->run++; \
        if (!(cond)) { \
            (t)->failed++; \
            CHECK_FAIL_AT_(__FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
        } \
    } while (0)

static int __attribute__((unused)) check_report_(const char *name, int run, int failed)
{
    fflush(stdout);
    fprintf(stderr, "%s: %d checks, %d failed%s\n", name, run, failed,
            run == 0 ? " (no check ran: that is a failure too)" : "");
    return failed > 0 || run == 0;
}

/* main's return value: prints "NAME: N checks, M failed"; 1 when a check
 * failed or none ran, else 0. */
static int __attribute__((unused)) check_done(const char *name)
{
    return check_report_(name, tests_run, tests_failed);
}

static int __attribute__((unused)) tally_done(const char *name, const struct tally *t)
{
    return check_report_(name, t->run, t->failed);
}

#endif
