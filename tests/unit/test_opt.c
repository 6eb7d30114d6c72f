/* test_opt: the option-table parser, as a table of command lines. Every
 * kind (flag, set, string, unsigned, signed, size, duration, double, enum,
 * callback),
 * its bounds, trailing garbage, signs, overflow, missing values, the =
 * form, short forms, unknown options, help, `--` and positionals. Sizes and
 * durations: the messages and bounds opt prints around core/units.h (whose
 * grammar tests/unit/test_units.c tables). Each case
 * gives the exact message on OPT_ERROR, else tokens the parsed state must
 * contain. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/opt.h"
#include "core/units.h"

struct state {
    bool flag, count_seen;
    int level, color;
    const char *name;
    uint64_t count, any, size, wait, retain, mem;
    const char *retain_text;
    int64_t offset, wide;
    double factor, ratio;
    long even;
};

static const struct opt_word colors[] = { { "red", 1 }, { "green", 2 }, { NULL, 0 } };

/* Accepts even numbers; says why for odd ones, nothing for the rest. */
static int call_even(void *dest, const char *value, char *err, size_t errlen)
{
    char *end;
    long v = strtol(value, &end, 10);
    if (*end || end == value)
        return -1;
    if (v % 2) {
        snprintf(err, errlen, "%ld is odd", v);
        return -1;
    }
    *(long *)dest = v;
    return 0;
}

#define MAX_ARGS 8

struct opt_case {
    const char *args[MAX_ARGS]; /* after the command's name; NULL ends them */
    bool positionals;           /* first_positional given (else NULL) */
    enum opt_result want;
    const char *expect; /* OPT_ERROR: the message; else state tokens */
};

static const struct opt_case cases[] = {
    /* nothing; flags and set */
    { { NULL }, false, OPT_OK, "flag=0 level=0 count=7 argv=test pos=-" },
    { { "--flag" }, false, OPT_OK, "flag=1" },
    { { "-x" }, false, OPT_OK, "flag=1" },
    { { "--flag=1" }, false, OPT_ERROR, "slabtap test: --flag takes no value" },
    { { "-xy" }, false, OPT_ERROR, "slabtap test: unknown option -xy" },
    { { "-v" }, false, OPT_OK, "level=3" },
    { { "-v", "-q" }, false, OPT_OK, "level=1" },
    { { "--quiet", "--verbose" }, false, OPT_OK, "level=3" },
    /* strings: the four spellings, empty and missing values */
    { { "--name", "abc" }, false, OPT_OK, "name=abc" },
    { { "--name=abc" }, false, OPT_OK, "name=abc" },
    { { "--name=a=b" }, false, OPT_OK, "name=a=b" },
    { { "-N", "abc" }, false, OPT_OK, "name=abc" },
    { { "-Nabc" }, false, OPT_OK, "name=abc" },
    { { "--name", "-x" }, false, OPT_OK, "name=-x flag=0" },
    { { "--name" }, false, OPT_ERROR, "slabtap test: --name needs a value" },
    { { "-N" }, false, OPT_ERROR, "slabtap test: -N needs a value" },
    { { "--name=" }, false, OPT_ERROR, "slabtap test: --name needs a value" },
    { { "--name", "" }, false, OPT_ERROR, "slabtap test: --name needs a value" },
    { { "--name", "--flag" }, false, OPT_ERROR, "slabtap test: --name needs a value" },
    /* unsigned with bounds [1, 100] */
    { { "--count", "5" }, false, OPT_OK, "count=5 seen=1" },
    { { "--count=100" }, false, OPT_OK, "count=100" },
    { { "-c1" }, false, OPT_OK, "count=1" },
    { { "--count", "0" }, false, OPT_ERROR, "slabtap test: --count: 0 is below the minimum 1" },
    { { "--count", "101" },
      false,
      OPT_ERROR,
      "slabtap test: --count: 101 is above the maximum 100" },
    { { "--count", "300abc" },
      false,
      OPT_ERROR,
      "slabtap test: --count: \"300abc\" is not a number" },
    { { "--count", "-5" },
      false,
      OPT_ERROR,
      "slabtap test: --count: \"-5\" must be a number without a sign" },
    { { "--count", "+5" },
      false,
      OPT_ERROR,
      "slabtap test: --count: \"+5\" must be a number without a sign" },
    { { "--count", " 5" }, false, OPT_ERROR, "slabtap test: --count: \" 5\" is not a number" },
    { { "--count", "5 " }, false, OPT_ERROR, "slabtap test: --count: \"5 \" is not a number" },
    { { "--count", "5.0" }, false, OPT_ERROR, "slabtap test: --count: \"5.0\" is not a number" },
    { { "--count", "0x10" }, false, OPT_ERROR, "slabtap test: --count: \"0x10\" is not a number" },
    { { "--count", "99999999999999999999" },
      false,
      OPT_ERROR,
      "slabtap test: --count: 99999999999999999999 is above the maximum 100" },
    { { "--count" }, false, OPT_ERROR, "slabtap test: --count needs a value" },
    /* unsigned without bounds: the whole uint64 range */
    { { "--any", "0" }, false, OPT_OK, "any=0" },
    { { "--any", "18446744073709551615" }, false, OPT_OK, "any=18446744073709551615" },
    { { "--any", "18446744073709551616" },
      false,
      OPT_ERROR,
      "slabtap test: --any: 18446744073709551616 is above the maximum 18446744073709551615" },
    /* signed with bounds [-10, 10], and without */
    { { "--offset", "-10" }, false, OPT_OK, "offset=-10" },
    { { "--offset=+3" }, false, OPT_OK, "offset=3" },
    { { "--offset", "-11" },
      false,
      OPT_ERROR,
      "slabtap test: --offset: -11 is below the minimum -10" },
    { { "--offset", "11" },
      false,
      OPT_ERROR,
      "slabtap test: --offset: 11 is above the maximum 10" },
    { { "--offset", "-" }, false, OPT_ERROR, "slabtap test: --offset: \"-\" is not a number" },
    { { "--offset", "1-" }, false, OPT_ERROR, "slabtap test: --offset: \"1-\" is not a number" },
    { { "--offset", "--1" }, false, OPT_ERROR, "slabtap test: --offset needs a value" },
    { { "--wide", "-9223372036854775808" }, false, OPT_OK, "wide=-9223372036854775808" },
    { { "--wide", "9223372036854775807" }, false, OPT_OK, "wide=9223372036854775807" },
    { { "--wide", "-9223372036854775809" },
      false,
      OPT_ERROR,
      "slabtap test: --wide: -9223372036854775809 is below the minimum -9223372036854775808" },
    { { "--wide", "9223372036854775808" },
      false,
      OPT_ERROR,
      "slabtap test: --wide: 9223372036854775808 is above the maximum 9223372036854775807" },
    /* size in bytes, bounds [1024, 1 GiB] */
    { { "-I", "1k" }, false, OPT_OK, "size=1024" },
    { { "-I", "2M" }, false, OPT_OK, "size=2097152" },
    { { "-I1024m" }, false, OPT_OK, "size=1073741824" },
    { { "-I", "4096" }, false, OPT_OK, "size=4096" },
    { { "-I", "8MB" }, false, OPT_OK, "size=8388608" },
    { { "-I", "8MiB" }, false, OPT_OK, "size=8388608" },
    { { "-I", "8mb" }, false, OPT_OK, "size=8388608" },
    { { "-I", "1.5m" }, false, OPT_OK, "size=1572864" },
    { { "-I", "64 KB" }, false, OPT_OK, "size=65536" },
    { { "-I", "1023" }, false, OPT_ERROR, "slabtap test: -I: 1023 is below the minimum 1KiB" },
    { { "-I", "0" }, false, OPT_ERROR, "slabtap test: -I: 0 is below the minimum 1KiB" },
    { { "-I", "1025m" }, false, OPT_ERROR, "slabtap test: -I: 1025m is above the maximum 1GiB" },
    { { "-I", "2g" }, false, OPT_ERROR, "slabtap test: -I: 2g is above the maximum 1GiB" },
    { { "-I", "99999999999999999999k" },
      false,
      OPT_ERROR,
      "slabtap test: -I: 99999999999999999999k is above the maximum 1GiB" },
    { { "-I", "18014398509481984k" },
      false,
      OPT_ERROR,
      "slabtap test: -I: 18014398509481984k is above the maximum 1GiB" },
    { { "-I", "0.3k" },
      false,
      OPT_ERROR,
      "slabtap test: -I: \"0.3k\" is not a whole number of bytes" },
    { { "-I", "8XB" },
      false,
      OPT_ERROR,
      "slabtap test: -I: \"8XB\" is not a size (examples: 512k, 8MB, 1.5GiB)" },
    { { "-I", "k" },
      false,
      OPT_ERROR,
      "slabtap test: -I: \"k\" is not a size (examples: 512k, 8MB, 1.5GiB)" },
    { { "-I", "1kk" },
      false,
      OPT_ERROR,
      "slabtap test: -I: \"1kk\" is not a size (examples: 512k, 8MB, 1.5GiB)" },
    { { "-I", "-1k" },
      false,
      OPT_ERROR,
      "slabtap test: -I: \"-1k\" is not a size (examples: 512k, 8MB, 1.5GiB)" },
    /* size in megabytes (memcached's -m), bounds [1, 2^30] MB */
    { { "-m", "64" }, false, OPT_OK, "mem=64" },
    { { "-m", "1G" }, false, OPT_OK, "mem=1024" },
    { { "-m", "1.5GiB" }, false, OPT_OK, "mem=1536" },
    { { "-m", "0" }, false, OPT_ERROR, "slabtap test: -m: 0 is below the minimum 1MiB" },
    { { "-m", "1073741825" },
      false,
      OPT_ERROR,
      "slabtap test: -m: 1073741825 is above the maximum 1024TiB" },
    { { "-m", "512k" },
      false,
      OPT_ERROR,
      "slabtap test: -m: \"512k\" is not a whole number of megabytes" },
    { { "-m", "8XB" },
      false,
      OPT_ERROR,
      "slabtap test: -m: \"8XB\" is not a size (examples: 512k, 8MB, 1.5GiB; a number alone is "
      "in megabytes)" },
    /* duration in milliseconds, bounds [50 ms, 1 h] */
    { { "--wait", "250" }, false, OPT_OK, "wait=250" },
    { { "--wait", "1s" }, false, OPT_OK, "wait=1000" },
    { { "--wait=1h" }, false, OPT_OK, "wait=3600000" },
    { { "--wait", "2 seconds" }, false, OPT_OK, "wait=2000" },
    { { "--wait", "1.5s" }, false, OPT_OK, "wait=1500" },
    { { "--wait", "49" }, false, OPT_ERROR, "slabtap test: --wait: 49 is below the minimum 50ms" },
    { { "--wait", "2h" }, false, OPT_ERROR, "slabtap test: --wait: 2h is above the maximum 1h" },
    { { "--wait", "0.5" },
      false,
      OPT_ERROR,
      "slabtap test: --wait: \"0.5\" is not a whole number of milliseconds" },
    { { "--wait", "300abc" },
      false,
      OPT_ERROR,
      "slabtap test: --wait: \"300abc\" is not a duration (examples: 250ms, 1s, 1h30m, '2 days'; "
      "a number alone is in milliseconds)" },
    { { "--wait", "-300" },
      false,
      OPT_ERROR,
      "slabtap test: --wait: \"-300\" is not a duration (examples: 250ms, 1s, 1h30m, '2 days'; "
      "a number alone is in milliseconds)" },
    /* duration in seconds, at least 1 s, no maximum; the text as given */
    { { "--retain", "3600" }, false, OPT_OK, "retain=3600 rtext=3600" },
    { { "--retain", "1h30m" }, false, OPT_OK, "retain=5400 rtext=1h30m" },
    { { "--retain=1 hour" }, false, OPT_OK, "retain=3600 rtext=1_hour" },
    { { "--retain", "1500ms" },
      false,
      OPT_ERROR,
      "slabtap test: --retain: \"1500ms\" is not a whole number of seconds" },
    { { "--retain", "0" }, false, OPT_ERROR, "slabtap test: --retain: 0 is below the minimum 1s" },
    { { "--retain", "99999999999999999999" },
      false,
      OPT_ERROR,
      "slabtap test: --retain: 99999999999999999999 is above the maximum 18446744073709551615s" },
    /* double with bounds [1, 4], and without */
    { { "-f", "1.25" }, false, OPT_OK, "factor=1.25" },
    { { "--factor=2e0" }, false, OPT_OK, "factor=2" },
    { { "-f", "0.5" }, false, OPT_ERROR, "slabtap test: -f: 0.5 is below the minimum 1" },
    { { "-f", "5" }, false, OPT_ERROR, "slabtap test: -f: 5 is above the maximum 4" },
    { { "-f", "abc" }, false, OPT_ERROR, "slabtap test: -f: \"abc\" is not a number" },
    { { "-f", "1.2x" }, false, OPT_ERROR, "slabtap test: -f: \"1.2x\" is not a number" },
    { { "-f", "1e" }, false, OPT_ERROR, "slabtap test: -f: \"1e\" is not a number" },
    { { "-f", "nan" }, false, OPT_ERROR, "slabtap test: -f: \"nan\" is not a number" },
    { { "-f", "inf" }, false, OPT_ERROR, "slabtap test: -f: \"inf\" is not a number" },
    { { "-f", "0x2p0" }, false, OPT_ERROR, "slabtap test: -f: \"0x2p0\" is not a number" },
    { { "--ratio", "-3.5" }, false, OPT_OK, "ratio=-3.5" },
    { { "--ratio", "1e999" }, false, OPT_ERROR, "slabtap test: --ratio: 1e999 is out of range" },
    { { "--ratio", "." }, false, OPT_ERROR, "slabtap test: --ratio: \".\" is not a number" },
    /* enum */
    { { "--color", "green" }, false, OPT_OK, "color=2" },
    { { "--color=red" }, false, OPT_OK, "color=1" },
    { { "--color", "blue" },
      false,
      OPT_ERROR,
      "slabtap test: --color: \"blue\" is not one of red, green" },
    { { "--color", "Red" },
      false,
      OPT_ERROR,
      "slabtap test: --color: \"Red\" is not one of red, green" },
    /* callback: its own message, or a generic one */
    { { "--even", "4" }, false, OPT_OK, "even=4" },
    { { "--even", "3" }, false, OPT_ERROR, "slabtap test: --even: 3 is odd" },
    { { "--even", "x" }, false, OPT_ERROR, "slabtap test: --even: bad value \"x\"" },
    /* unknown options: no abbreviations */
    { { "--bogus" }, false, OPT_ERROR, "slabtap test: unknown option --bogus" },
    { { "--bogus=1" }, false, OPT_ERROR, "slabtap test: unknown option --bogus" },
    { { "--fla" }, false, OPT_ERROR, "slabtap test: unknown option --fla" },
    { { "-z" }, false, OPT_ERROR, "slabtap test: unknown option -z" },
    /* help: the first of help or a mistake decides */
    { { "-h" }, false, OPT_HELP, "" },
    { { "--help" }, false, OPT_HELP, "" },
    { { "--flag", "--help", "--bogus" }, false, OPT_HELP, "" },
    { { "--count", "0", "--help" },
      false,
      OPT_ERROR,
      "slabtap test: --count: 0 is below the minimum 1" },
    { { "--help=1" }, false, OPT_ERROR, "slabtap test: unknown option --help" },
    /* positionals: moved behind the options, both in order */
    { { "a", "--flag", "b" }, true, OPT_OK, "flag=1 pos=a,b argv=test,--flag,a,b" },
    { { "a", "--name", "x", "b", "-c", "3" },
      true,
      OPT_OK,
      "name=x count=3 pos=a,b argv=test,--name,x,-c,3,a,b" },
    { { "a", "--", "--flag", "-x" }, true, OPT_OK, "flag=0 pos=a,--flag,-x" },
    { { "-" }, true, OPT_OK, "pos=-" },
    { { "--flag" }, true, OPT_OK, "pos=-" },
    { { "--" }, true, OPT_OK, "pos=-" },
    { { "a" }, false, OPT_ERROR, "slabtap test: unexpected argument 'a'" },
    { { "--flag", "a", "--bogus" }, false, OPT_ERROR, "slabtap test: unexpected argument 'a'" },
    { { "--flag", "--", "a" }, false, OPT_ERROR, "slabtap test: unexpected argument 'a'" },
    { { "--" }, false, OPT_OK, "flag=0" },
};

static size_t make_table(struct state *s, struct opt_spec *t)
{
    const struct opt_spec rows[] = {
        { "flag", 'x', OPT_FLAG, .dest = &s->flag },
        { "verbose", 'v', OPT_SET, .dest = &s->level, .set_value = 3 },
        { "quiet", 'q', OPT_SET, .dest = &s->level, .set_value = 1 },
        { "name", 'N', OPT_STRING, .dest = &s->name },
        { "count", 'c', OPT_UINT, .dest = &s->count, .min = 1, .max = 100, .seen = &s->count_seen },
        { "any", 0, OPT_UINT, .dest = &s->any },
        { "offset", 0, OPT_INT, .dest = &s->offset, .smin = -10, .smax = 10 },
        { "wide", 0, OPT_INT, .dest = &s->wide },
        { NULL, 'I', OPT_SIZE, .dest = &s->size, .min = 1024, .max = 1u << 30 },
        { NULL, 'm', OPT_SIZE, .dest = &s->mem, .unit = UNITS_MIB, .min = 1, .max = 1u << 30 },
        { "wait", 0, OPT_DURATION, .dest = &s->wait, .unit = UNITS_MS, .min = 50, .max = 3600000 },
        { "retain", 0, OPT_DURATION, .dest = &s->retain, .unit = UNITS_S, .min = 1,
          .text = &s->retain_text },
        { "factor", 'f', OPT_DOUBLE, .dest = &s->factor, .dmin = 1, .dmax = 4 },
        { "ratio", 0, OPT_DOUBLE, .dest = &s->ratio },
        { "color", 0, OPT_ENUM, .dest = &s->color, .words = colors },
        { "even", 0, OPT_CALL, .dest = &s->even, .call = call_even },
    };
    memcpy(t, rows, sizeof rows);
    return sizeof rows / sizeof rows[0];
}

static void join(char **argv, int from, int to, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = from; i < to && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s%s", i > from ? "," : "", argv[i]);
    if (from >= to)
        snprintf(out, len, "-");
}

/* " flag=1 level=0 ... " with a space at each end, for token search. */
static void describe(const struct state *s, char **argv, int argc, int first, char *out, size_t len)
{
    char pos[256], all[256], rtext[64];
    /* blanks of the text as _, so that it stays one token */
    snprintf(rtext, sizeof rtext, "%s", s->retain_text ? s->retain_text : "(null)");
    for (char *p = rtext; *p; p++)
        *p = *p == ' ' ? '_' : *p;
    join(argv, first, argc, pos, sizeof pos);
    join(argv, 0, argc, all, sizeof all);
    snprintf(out, len,
             " flag=%d level=%d name=%s count=%llu seen=%d any=%llu offset=%lld wide=%lld"
             " size=%llu factor=%g ratio=%g color=%d even=%ld pos=%s argv=%s"
             " wait=%llu retain=%llu mem=%llu rtext=%s ",
             s->flag, s->level, s->name ? s->name : "(null)", (unsigned long long)s->count,
             s->count_seen, (unsigned long long)s->any, (long long)s->offset, (long long)s->wide,
             (unsigned long long)s->size, s->factor, s->ratio, s->color, s->even, pos, all,
             (unsigned long long)s->wait, (unsigned long long)s->retain, (unsigned long long)s->mem,
             rtext);
}

/* Every space-separated token of want appears as a token of got. */
static bool has_tokens(const char *got, const char *want)
{
    char tok[128];
    while (*want) {
        size_t n = strcspn(want, " ");
        snprintf(tok, sizeof tok, " %.*s ", (int)n, want);
        if (n && !strstr(got, tok))
            return false;
        want += n + (want[n] == ' ');
    }
    return true;
}

static void run_case(const struct opt_case *c)
{
    struct state s = { .count = 7 };
    struct opt_spec table[24];
    size_t n = make_table(&s, table);
    char *argv[MAX_ARGS + 1] = { "test" }, err[256] = "", got[1024], label[256];
    int argc = 1, first = -1;
    while (argc <= MAX_ARGS && c->args[argc - 1])
        argv[argc] = (char *)c->args[argc - 1], argc++;
    join(argv, 1, argc, label, sizeof label);
    enum opt_result r =
        opt_parse("test", table, n, argc, argv, c->positionals ? &first : NULL, err, sizeof err);
    CHECK(r == c->want, "[%s]: result %d, want %d (%s)", label, r, c->want, err);
    if (r != c->want)
        return;
    if (r == OPT_ERROR) {
        CHECK(!strcmp(err, c->expect), "[%s]: message \"%s\", want \"%s\"", label, err, c->expect);
        return;
    }
    describe(&s, argv, argc, c->positionals ? first : argc, got, sizeof got);
    CHECK(has_tokens(got, c->expect), "[%s]: state%s, want %s", label, got, c->expect);
}

/* A buffer too small for the message: cut, terminated, nothing written past. */
static void test_small_buffers(void)
{
    struct state s = { 0 };
    struct opt_spec table[24];
    size_t n = make_table(&s, table);
    char *argv[] = { "test", "--a-very-long-unknown-option" };
    char err[12];
    memset(err, 'x', sizeof err);
    CHECK_INT(opt_parse("test", table, n, 2, argv, NULL, err, 10), OPT_ERROR);
    CHECK_STR(err, "slabtap t");
    CHECK_INT(err[10], 'x');
    CHECK_INT(opt_parse("test", table, n, 2, argv, NULL, NULL, 0), OPT_ERROR);
}

static void test_opt_error(void)
{
    char err[64];
    CHECK_INT(opt_error(err, sizeof err, "proxy", "--%s and --%s are required", "upstream", "db"),
              OPT_ERROR);
    CHECK_STR(err, "slabtap proxy: --upstream and --db are required");
    CHECK_INT(opt_error(err, 8, "proxy", "x"), OPT_ERROR);
    CHECK_STR(err, "slabtap");
}

/* An empty table still knows help, `--` and positionals. */
static void test_empty_table(void)
{
    char *argv[] = { "test", "one", "--", "-two" };
    char err[64] = "";
    int first = 0;
    CHECK_INT(opt_parse("test", NULL, 0, 4, argv, &first, err, sizeof err), OPT_OK);
    CHECK_INT(first, 2);
    CHECK_STR(argv[1], "--");
    CHECK_STR(argv[2], "one");
    CHECK_STR(argv[3], "-two");
    char *help[] = { "test", "--help" };
    CHECK_INT(opt_parse("test", NULL, 0, 2, help, NULL, err, sizeof err), OPT_HELP);
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
    test_small_buffers();
    test_opt_error();
    test_empty_table();
    return check_done("test_opt");
}
