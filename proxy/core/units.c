/* units: see units.h. */
#include "core/units.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

struct units_word {
    const char *word;
    uint64_t mult; /* bytes, or nanoseconds */
};

#define KIB 1024ull
#define NS_S 1000000000ull

static const struct units_word units_sizes[] = {
    { "b", 1 },
    { "byte", 1 },
    { "bytes", 1 },
    { "k", KIB },
    { "kb", KIB },
    { "kib", KIB },
    { "m", KIB *KIB },
    { "mb", KIB *KIB },
    { "mib", KIB *KIB },
    { "g", KIB *KIB *KIB },
    { "gb", KIB *KIB *KIB },
    { "gib", KIB *KIB *KIB },
    { "t", KIB *KIB *KIB *KIB },
    { "tb", KIB *KIB *KIB *KIB },
    { "tib", KIB *KIB *KIB *KIB },
};

static const struct units_word units_durations[] = {
    { "ns", 1 },
    { "nsec", 1 },
    { "nanosecond", 1 },
    { "nanoseconds", 1 },
    { "us", 1000 },
    { "usec", 1000 },
    { "microsecond", 1000 },
    { "microseconds", 1000 },
    { "ms", 1000000 },
    { "msec", 1000000 },
    { "msecs", 1000000 },
    { "millisecond", 1000000 },
    { "milliseconds", 1000000 },
    { "s", NS_S },
    { "sec", NS_S },
    { "secs", NS_S },
    { "second", NS_S },
    { "seconds", NS_S },
    { "m", 60 * NS_S },
    { "min", 60 * NS_S },
    { "mins", 60 * NS_S },
    { "minute", 60 * NS_S },
    { "minutes", 60 * NS_S },
    { "h", 3600 * NS_S },
    { "hr", 3600 * NS_S },
    { "hrs", 3600 * NS_S },
    { "hour", 3600 * NS_S },
    { "hours", 3600 * NS_S },
    { "d", 86400 * NS_S },
    { "day", 86400 * NS_S },
    { "days", 86400 * NS_S },
    { "w", 604800 * NS_S },
    { "week", 604800 * NS_S },
    { "weeks", 604800 * NS_S },
};

/* What the text* functions print, largest first; the first that holds a
 * value exactly is the one used. */
static const struct units_word units_size_out[] = {
    { "TiB", KIB *KIB *KIB *KIB },
    { "GiB", KIB *KIB *KIB },
    { "MiB", KIB *KIB },
    { "KiB", KIB },
    { "B", 1 },
};
static const struct units_word units_duration_out[] = {
    { "d", 86400 * NS_S }, { "h", 3600 * NS_S }, { "m", 60 * NS_S }, { "s", NS_S },
    { "ms", 1000000 },     { "us", 1000 },       { "ns", 1 },
};

static bool units_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool units_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool units_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The number at t[*i..len): digits, optionally '.' and digits. *mant holds
 * its significant digits (the fraction's trailing zeros dropped), *dec how
 * many of them follow the point. UNITS_SYNTAX when there is no number;
 * UNITS_RANGE (whole part) or UNITS_INEXACT (fraction) when the digits do
 * not fit 64 bits -- the caller reports syntax after the whole text first. */
static enum units_status units_number(const char *t, size_t len, size_t *i, uint64_t *mant,
                                      unsigned *dec)
{
    size_t p = *i, whole_end, frac_end;
    enum units_status st = UNITS_OK;
    uint64_t v = 0;
    unsigned d = 0;
    if (p >= len || !units_digit(t[p]))
        return UNITS_SYNTAX;
    while (p < len && units_digit(t[p]))
        p++;
    whole_end = frac_end = p;
    if (p < len && t[p] == '.') {
        p++;
        if (p >= len || !units_digit(t[p]))
            return UNITS_SYNTAX;
        while (p < len && units_digit(t[p]))
            p++;
        frac_end = p;
        while (frac_end > whole_end + 1 && t[frac_end - 1] == '0')
            frac_end--;
        if (frac_end == whole_end + 1) /* ".0...": no fraction */
            frac_end = whole_end;
    }
    for (size_t k = *i; k < frac_end; k++) {
        if (k == whole_end)
            continue; /* the point */
        unsigned digit = (unsigned)(t[k] - '0');
        if (v > (UINT64_MAX - digit) / 10) {
            st = k < whole_end ? UNITS_RANGE : UNITS_INEXACT;
            break;
        }
        v = v * 10 + digit;
        d += k > whole_end;
    }
    *i = p;
    *mant = v;
    *dec = d;
    return st;
}

/* a * b / 10^dec exactly, or UNITS_INEXACT when that is no whole number. */
static enum units_status units_scale(uint64_t a, uint64_t b, unsigned dec, uint64_t *out)
{
    /* 10^dec = 2^dec * 5^dec: each factor comes out of a or b, or none is whole */
    for (unsigned k = 0; k < 2 * dec; k++) {
        uint64_t f = k % 2 ? 5 : 2;
        if (a % f == 0)
            a /= f;
        else if (b % f == 0)
            b /= f;
        else
            return UNITS_INEXACT;
    }
    if (a && b > UINT64_MAX / a)
        return UNITS_RANGE;
    *out = a * b;
    return UNITS_OK;
}

/* The unit word at t[i..i+n), from table; 0 when it is none of them. */
static uint64_t units_lookup(const struct units_word *table, size_t count, const char *t, size_t n)
{
    for (size_t k = 0; k < count; k++)
        if (strlen(table[k].word) == n && !strncasecmp(table[k].word, t, n))
            return table[k].mult;
    return 0;
}

/* The first arithmetic problem wins; syntax is decided before any of it. */
static void units_note(enum units_status *st, enum units_status now)
{
    if (*st == UNITS_OK)
        *st = now;
}

/* total (in nanoseconds or bytes) into units of unit. */
static enum units_status units_in(enum units_status st, uint64_t total, uint64_t unit,
                                  uint64_t *out)
{
    if (st != UNITS_OK)
        return st;
    if (total % unit)
        return UNITS_INEXACT;
    *out = total / unit;
    return UNITS_OK;
}

/* One term "NUMBER[blanks]UNIT" (or a bare NUMBER) at t[*i..len). *mult is
 * the unit's multiplier (0: no unit word), *val the term's value when the
 * arithmetic worked (reported through *st). */
static enum units_status units_term(const char *t, size_t len, size_t *i,
                                    const struct units_word *table, size_t count, uint64_t *mult,
                                    uint64_t bare, uint64_t *val, enum units_status *st)
{
    uint64_t mant = 0;
    unsigned dec = 0;
    enum units_status num = units_number(t, len, i, &mant, &dec);
    size_t p = *i, w;
    if (num == UNITS_SYNTAX)
        return UNITS_SYNTAX;
    while (p < len && units_blank(t[p]))
        p++;
    for (w = p; w < len && units_letter(t[w]); w++)
        ;
    *mult = w > p ? units_lookup(table, count, t + p, w - p) : 0;
    if (w > p && !*mult)
        return UNITS_SYNTAX;
    if (w == p) {
        if (!bare)
            return UNITS_SYNTAX;
        w = p = *i; /* blanks after a bare number are not part of it */
    }
    *i = w;
    units_note(st, num);
    if (num == UNITS_OK)
        units_note(st, units_scale(mant, *mult ? *mult : bare, dec, val));
    return UNITS_OK;
}

static bool units_edges_ok(const char *text, size_t len)
{
    return text && len && !units_blank(text[0]) && !units_blank(text[len - 1]);
}

enum units_status units_size(const char *text, size_t len, uint64_t unit, uint64_t *out)
{
    enum units_status st = UNITS_OK;
    uint64_t mult, bytes = 0;
    size_t i = 0;
    if (!units_edges_ok(text, len))
        return UNITS_SYNTAX;
    if (units_term(text, len, &i, units_sizes, sizeof units_sizes / sizeof units_sizes[0], &mult,
                   unit, &bytes, &st) != UNITS_OK ||
        i != len)
        return UNITS_SYNTAX;
    return units_in(st, bytes, unit ? unit : 1, out);
}

enum units_status units_duration(const char *text, size_t len, uint64_t unit, uint64_t *out)
{
    enum units_status st = UNITS_OK;
    uint64_t total = 0, prev = 0;
    size_t i = 0;
    if (!units_edges_ok(text, len))
        return UNITS_SYNTAX;
    while (i < len) {
        uint64_t mult, ns = 0;
        size_t start = i;
        if (units_term(text, len, &i, units_durations,
                       sizeof units_durations / sizeof units_durations[0], &mult, unit, &ns,
                       &st) != UNITS_OK)
            return UNITS_SYNTAX;
        /* a bare number is the whole text; units go largest first, once each */
        if ((!mult && (start || i != len)) || (mult && prev && mult >= prev))
            return UNITS_SYNTAX;
        prev = mult;
        if (st == UNITS_OK && ns > UINT64_MAX - total)
            st = UNITS_RANGE;
        total += st == UNITS_OK ? ns : 0;
        while (i < len && units_blank(text[i]))
            i++;
    }
    return units_in(st, total, unit ? unit : 1, out);
}

/* value units of `unit` in the largest of out[] that holds it exactly. */
static int units_text(uint64_t value, uint64_t unit, const struct units_word *out, size_t count,
                      char *buf, size_t len)
{
    for (size_t k = 0; value && k < count; k++) {
        if (out[k].mult < unit || out[k].mult % unit)
            continue;
        uint64_t per = out[k].mult / unit;
        if (value % per == 0)
            return snprintf(buf, len, "%llu%s", (unsigned long long)(value / per), out[k].word);
    }
    for (size_t k = 0; k < count; k++)
        if (out[k].mult == unit)
            return snprintf(buf, len, "%llu%s", (unsigned long long)value, out[k].word);
    return snprintf(buf, len, "%llu", (unsigned long long)value);
}

int units_size_text(uint64_t value, uint64_t unit, char *buf, size_t len)
{
    return units_text(value, unit ? unit : 1, units_size_out,
                      sizeof units_size_out / sizeof units_size_out[0], buf, len);
}

int units_duration_text(uint64_t value, uint64_t unit, char *buf, size_t len)
{
    return units_text(value, unit ? unit : 1, units_duration_out,
                      sizeof units_duration_out / sizeof units_duration_out[0], buf, len);
}

const char *units_size_name(uint64_t unit)
{
    switch (unit) {
    case 1: return "bytes";
    case KIB: return "kilobytes";
    case KIB *KIB: return "megabytes";
    default: return "";
    }
}

const char *units_duration_name(uint64_t unit)
{
    switch (unit) {
    case 1: return "nanoseconds";
    case 1000: return "microseconds";
    case 1000000: return "milliseconds";
    case NS_S: return "seconds";
    case 60 * NS_S: return "minutes";
    case 3600 * NS_S: return "hours";
    default: return "";
    }
}
