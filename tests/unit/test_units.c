/* test_units: core/units.h as tables -- every spelling of a size and of a
 * duration the docs promise, the ones refused (syntax, inexact fractions,
 * overflow), bare numbers in each bare unit, and the text bounds are
 * printed in (which must parse back to the same value). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "core/units.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define GIB (1024ull * 1024 * 1024)
#define TIB (1024ull * 1024 * 1024 * 1024)

struct units_case {
    const char *text;
    uint64_t unit; /* the bare unit */
    enum units_status want;
    uint64_t value; /* UNITS_OK: in units of unit */
};

static const struct units_case sizes[] = {
    /* the spellings of the issue, in bytes */
    { "8m", 1, UNITS_OK, 8 * MIB },
    { "8M", 1, UNITS_OK, 8 * MIB },
    { "8MB", 1, UNITS_OK, 8 * MIB },
    { "8MiB", 1, UNITS_OK, 8 * MIB },
    { "8mb", 1, UNITS_OK, 8 * MIB },
    { "8mib", 1, UNITS_OK, 8 * MIB },
    { "8Mb", 1, UNITS_OK, 8 * MIB },
    { "1.5g", 1, UNITS_OK, 3 * GIB / 2 },
    { "1.5GiB", 1, UNITS_OK, 3 * GIB / 2 },
    { "512k", 1, UNITS_OK, 512 * KIB },
    { "0", 1, UNITS_OK, 0 },
    { "0k", 1, UNITS_OK, 0 },
    { "0.0g", 1, UNITS_OK, 0 },
    /* every unit word */
    { "7", 1, UNITS_OK, 7 },
    { "7b", 1, UNITS_OK, 7 },
    { "7B", 1, UNITS_OK, 7 },
    { "7byte", 1, UNITS_OK, 7 },
    { "7 bytes", 1, UNITS_OK, 7 },
    { "1k", 1, UNITS_OK, KIB },
    { "1K", 1, UNITS_OK, KIB },
    { "1kb", 1, UNITS_OK, KIB },
    { "1KB", 1, UNITS_OK, KIB },
    { "1KiB", 1, UNITS_OK, KIB },
    { "2g", 1, UNITS_OK, 2 * GIB },
    { "2G", 1, UNITS_OK, 2 * GIB },
    { "2GB", 1, UNITS_OK, 2 * GIB },
    { "2GiB", 1, UNITS_OK, 2 * GIB },
    { "3t", 1, UNITS_OK, 3 * TIB },
    { "3TB", 1, UNITS_OK, 3 * TIB },
    { "3TiB", 1, UNITS_OK, 3 * TIB },
    /* blanks only between the number and its unit */
    { "64 MB", 1, UNITS_OK, 64 * MIB },
    { "64\tMB", 1, UNITS_OK, 64 * MIB },
    { "64  m", 1, UNITS_OK, 64 * MIB },
    { " 64m", 1, UNITS_SYNTAX, 0 },
    { "64m ", 1, UNITS_SYNTAX, 0 },
    { "6 4m", 1, UNITS_SYNTAX, 0 },
    { "64 ", 1, UNITS_SYNTAX, 0 },
    /* fractions: exact or refused, never rounded */
    { "0.5k", 1, UNITS_OK, 512 },
    { "1.25m", 1, UNITS_OK, 1310720 },
    { "1.50g", 1, UNITS_OK, 3 * GIB / 2 },
    { "0.0009765625k", 1, UNITS_OK, 1 },
    { "2.0", 1, UNITS_OK, 2 },
    { "0.3k", 1, UNITS_INEXACT, 0 },
    { "1.5", 1, UNITS_INEXACT, 0 },
    { "1.3b", 1, UNITS_INEXACT, 0 },
    { "0.1g", 1, UNITS_INEXACT, 0 },
    /* refused spellings */
    { "", 1, UNITS_SYNTAX, 0 },
    { "k", 1, UNITS_SYNTAX, 0 },
    { "8XB", 1, UNITS_SYNTAX, 0 },
    { "1kk", 1, UNITS_SYNTAX, 0 },
    { "1p", 1, UNITS_SYNTAX, 0 },
    { "1kbit", 1, UNITS_SYNTAX, 0 },
    { "-1k", 1, UNITS_SYNTAX, 0 },
    { "+1k", 1, UNITS_SYNTAX, 0 },
    { ".5g", 1, UNITS_SYNTAX, 0 },
    { "1.g", 1, UNITS_SYNTAX, 0 },
    { "1..5g", 1, UNITS_SYNTAX, 0 },
    { "1,5g", 1, UNITS_SYNTAX, 0 },
    { "1e3", 1, UNITS_SYNTAX, 0 },
    { "0x10", 1, UNITS_SYNTAX, 0 },
    { "1k1", 1, UNITS_SYNTAX, 0 },
    { "1m2k", 1, UNITS_SYNTAX, 0 },
    { "1 k b", 1, UNITS_SYNTAX, 0 },
    /* syntax is decided before range: an overflowing number with a bad unit */
    { "99999999999999999999XB", 1, UNITS_SYNTAX, 0 },
    /* overflow of 64 bits of bytes */
    { "18446744073709551615", 1, UNITS_OK, UINT64_MAX },
    { "18446744073709551616", 1, UNITS_RANGE, 0 },
    { "99999999999999999999k", 1, UNITS_RANGE, 0 },
    { "16777216t", 1, UNITS_RANGE, 0 },
    { "16777215t", 1, UNITS_OK, 16777215 * TIB },
    { "18014398509481984k", 1, UNITS_RANGE, 0 },
    /* a bare unit of megabytes (-m): numbers alone are MB, units are bytes */
    { "64", MIB, UNITS_OK, 64 },
    { "1G", MIB, UNITS_OK, 1024 },
    { "1.5GiB", MIB, UNITS_OK, 1536 },
    { "2048k", MIB, UNITS_OK, 2 },
    { "512k", MIB, UNITS_INEXACT, 0 },
    { "0.5", MIB, UNITS_INEXACT, 0 },
    { "0.5g", MIB, UNITS_OK, 512 },
    /* no bare unit: a unit is required */
    { "64", 0, UNITS_SYNTAX, 0 },
    { "64k", 0, UNITS_OK, 64 * KIB },
};

#define S_NS 1000000000ull
#define MIN_NS (60 * S_NS)
#define H_NS (3600 * S_NS)
#define D_NS (86400 * S_NS)

static const struct units_case durations[] = {
    /* the spellings of the issue, in seconds and milliseconds */
    { "250ms", UNITS_MS, UNITS_OK, 250 },
    { "1s", UNITS_MS, UNITS_OK, 1000 },
    { "1s", UNITS_S, UNITS_OK, 1 },
    { "90s", UNITS_S, UNITS_OK, 90 },
    { "5m", UNITS_S, UNITS_OK, 300 },
    { "1h30m", UNITS_S, UNITS_OK, 5400 },
    { "2d", UNITS_S, UNITS_OK, 172800 },
    { "1 hour", UNITS_S, UNITS_OK, 3600 },
    { "3600s", UNITS_S, UNITS_OK, 3600 },
    { "2 days", UNITS_S, UNITS_OK, 172800 },
    { "90 seconds", UNITS_S, UNITS_OK, 90 },
    /* a number alone is the bare unit */
    { "3600", UNITS_S, UNITS_OK, 3600 },
    { "250", UNITS_MS, UNITS_OK, 250 },
    { "0", UNITS_MS, UNITS_OK, 0 },
    { "250", 0, UNITS_SYNTAX, 0 },
    /* every unit word, any case */
    { "1500ns", 1, UNITS_OK, 1500 },
    { "3us", 1, UNITS_OK, 3000 },
    { "2 usec", 1, UNITS_OK, 2000 },
    { "1 microsecond", 1, UNITS_OK, 1000 },
    { "1nsec", 1, UNITS_OK, 1 },
    { "7 nanoseconds", 1, UNITS_OK, 7 },
    { "5msec", UNITS_MS, UNITS_OK, 5 },
    { "5 msecs", UNITS_MS, UNITS_OK, 5 },
    { "1 millisecond", UNITS_MS, UNITS_OK, 1 },
    { "2 milliseconds", UNITS_MS, UNITS_OK, 2 },
    { "2sec", UNITS_S, UNITS_OK, 2 },
    { "2 secs", UNITS_S, UNITS_OK, 2 },
    { "1 second", UNITS_S, UNITS_OK, 1 },
    { "3min", UNITS_S, UNITS_OK, 180 },
    { "3 mins", UNITS_S, UNITS_OK, 180 },
    { "1 minute", UNITS_S, UNITS_OK, 60 },
    { "2 minutes", UNITS_S, UNITS_OK, 120 },
    { "2hr", UNITS_S, UNITS_OK, 7200 },
    { "2 hrs", UNITS_S, UNITS_OK, 7200 },
    { "2 hours", UNITS_S, UNITS_OK, 7200 },
    { "1 day", UNITS_S, UNITS_OK, 86400 },
    { "1w", UNITS_S, UNITS_OK, 604800 },
    { "1 week", UNITS_S, UNITS_OK, 604800 },
    { "2 weeks", UNITS_S, UNITS_OK, 1209600 },
    { "1H30M", UNITS_S, UNITS_OK, 5400 },
    { "1 Hour", UNITS_S, UNITS_OK, 3600 },
    { "250MS", UNITS_MS, UNITS_OK, 250 },
    /* combinations: largest unit first, each once, blanks between terms */
    { "1h 30m", UNITS_S, UNITS_OK, 5400 },
    { "1 hour 30 minutes", UNITS_S, UNITS_OK, 5400 },
    { "1d2h3m4s", UNITS_S, UNITS_OK, 93784 },
    { "1s500ms", UNITS_MS, UNITS_OK, 1500 },
    { "1w1d", UNITS_S, UNITS_OK, 691200 },
    { "30m1h", UNITS_S, UNITS_SYNTAX, 0 },
    { "1m30m", UNITS_S, UNITS_SYNTAX, 0 },
    { "1m1min", UNITS_S, UNITS_SYNTAX, 0 },
    { "1h30", UNITS_S, UNITS_SYNTAX, 0 },
    { "30 1h", UNITS_S, UNITS_SYNTAX, 0 },
    { "1 30m", UNITS_S, UNITS_SYNTAX, 0 },
    /* fractions: exact or refused */
    { "1.5h", UNITS_S, UNITS_OK, 5400 },
    { "0.5s", UNITS_MS, UNITS_OK, 500 },
    { "1.5", UNITS_S, UNITS_INEXACT, 0 },
    { "2.5", UNITS_MS, UNITS_INEXACT, 0 },
    { "1500ms", UNITS_S, UNITS_INEXACT, 0 },
    { "1500ms", UNITS_MS, UNITS_OK, 1500 },
    { "1.0000000001s", UNITS_MS, UNITS_INEXACT, 0 },
    { "0.001s", UNITS_MS, UNITS_OK, 1 },
    { "1.5ns", 1, UNITS_INEXACT, 0 },
    { "0.00000000005m", 1, UNITS_OK, 3 }, /* 3 ns exactly */
    /* refused spellings */
    { "", UNITS_S, UNITS_SYNTAX, 0 },
    { "s", UNITS_S, UNITS_SYNTAX, 0 },
    { "1x", UNITS_S, UNITS_SYNTAX, 0 },
    { "1 fortnight", UNITS_S, UNITS_SYNTAX, 0 },
    { "-1s", UNITS_S, UNITS_SYNTAX, 0 },
    { "+1s", UNITS_S, UNITS_SYNTAX, 0 },
    { " 1s", UNITS_S, UNITS_SYNTAX, 0 },
    { "1s ", UNITS_S, UNITS_SYNTAX, 0 },
    { "1:30", UNITS_S, UNITS_SYNTAX, 0 },
    { "1e3s", UNITS_S, UNITS_SYNTAX, 0 },
    { ".5s", UNITS_S, UNITS_SYNTAX, 0 },
    { "300abc", UNITS_MS, UNITS_SYNTAX, 0 },
    /* overflow of 64 bits of nanoseconds (about 584 years) */
    { "18446744073709551615ns", 1, UNITS_OK, UINT64_MAX },
    { "18446744073709551616ns", 1, UNITS_RANGE, 0 },
    { "213503d", UNITS_S, UNITS_OK, 213503ull * 86400 },
    { "213504d", UNITS_S, UNITS_RANGE, 0 },
    { "213503d23h59m59s", UNITS_S, UNITS_RANGE, 0 },
    { "18446744073709551615", UNITS_S, UNITS_RANGE, 0 },
};

static void check_case(const struct units_case *c, bool size)
{
    uint64_t v = 0xdeadbeef;
    enum units_status st = size ? units_size(c->text, strlen(c->text), c->unit, &v)
                                : units_duration(c->text, strlen(c->text), c->unit, &v);
    CHECK(st == c->want, "%s \"%s\" (unit %llu): status %d, want %d", size ? "size" : "duration",
          c->text, (unsigned long long)c->unit, st, c->want);
    if (st == UNITS_OK && c->want == UNITS_OK)
        CHECK(v == c->value, "%s \"%s\" (unit %llu): %llu, want %llu", size ? "size" : "duration",
              c->text, (unsigned long long)c->unit, (unsigned long long)v,
              (unsigned long long)c->value);
    if (st != UNITS_OK)
        CHECK(v == 0xdeadbeef, "\"%s\": out written on a refusal", c->text);
}

/* Only text[0..len) is read: a longer buffer's tail does not count. */
static void test_len_bounds(void)
{
    uint64_t v = 0;
    CHECK_INT(units_size("8MBxyz", 3, 1, &v), UNITS_OK);
    CHECK_INT(v, 8 * MIB);
    CHECK_INT(units_duration("1h30mjunk", 5, UNITS_S, &v), UNITS_OK);
    CHECK_INT(v, 5400);
    CHECK_INT(units_size(NULL, 0, 1, &v), UNITS_SYNTAX);
}

struct text_case {
    uint64_t value, unit;
    const char *want;
};

/* Each value printed as want, and what is printed reads back as the value
 * (when it fits 64 bits of bytes or nanoseconds). */
static void check_text(const struct text_case *cases, size_t n, bool size)
{
    char buf[64];
    for (size_t i = 0; i < n; i++) {
        const struct text_case *c = &cases[i];
        uint64_t back = 0;
        enum units_status st;
        if (size)
            units_size_text(c->value, c->unit, buf, sizeof buf);
        else
            units_duration_text(c->value, c->unit, buf, sizeof buf);
        CHECK_STR(buf, c->want);
        st = size ? units_size(buf, strlen(buf), c->unit, &back)
                  : units_duration(buf, strlen(buf), c->unit, &back);
        if (st == UNITS_OK)
            CHECK(back == c->value, "\"%s\" reads back as %llu", buf, (unsigned long long)back);
    }
}

static void test_text(void)
{
    static const struct text_case sizes_out[] = {
        { MIB, 1, "1MiB" },
        { 1024, 1, "1KiB" },
        { 1536 * KIB, 1, "1536KiB" },
        { 1000, 1, "1000B" },
        { 0, 1, "0B" },
        { UINT64_MAX, 1, "18446744073709551615B" },
        { 1, MIB, "1MiB" },
        { 1u << 30, MIB, "1024TiB" },
        { 1536, MIB, "1536MiB" },
        { 4 * GIB, 1, "4GiB" },
    };
    static const struct text_case durations_out[] = {
        { 50, UNITS_MS, "50ms" },
        { 1000, UNITS_MS, "1s" },
        { 3600000, UNITS_MS, "1h" },
        { 600000, UNITS_MS, "10m" },
        { 4294967295u, UNITS_MS, "4294967295ms" },
        { 0, UNITS_MS, "0ms" },
        { 5400, UNITS_S, "90m" },
        { 172800, UNITS_S, "2d" },
        { 1, UNITS_S, "1s" },
        { UINT64_MAX, UNITS_S, "18446744073709551615s" },
    };
    check_text(sizes_out, sizeof sizes_out / sizeof sizes_out[0], true);
    check_text(durations_out, sizeof durations_out / sizeof durations_out[0], false);
    CHECK_STR(units_size_name(1), "bytes");
    CHECK_STR(units_size_name(MIB), "megabytes");
    CHECK_STR(units_duration_name(UNITS_MS), "milliseconds");
    CHECK_STR(units_duration_name(UNITS_S), "seconds");
}

int main(void)
{
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        check_case(&sizes[i], true);
    for (size_t i = 0; i < sizeof durations / sizeof durations[0]; i++)
        check_case(&durations[i], false);
    test_len_bounds();
    test_text();
    return check_done("test_units");
}
