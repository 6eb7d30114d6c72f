/* opt: the one command line parser -- a table of options per subcommand,
 * every value checked the same way, one message format for every mistake.
 *
 * Owns the grammar every subcommand shares: --name VALUE, --name=VALUE,
 * -x VALUE, -xVALUE, -h/--help, `--` (everything after it is positional),
 * positionals anywhere (moved behind the options, in order), and what a
 * number is: the whole text, digits only (an optional sign only for
 * OPT_INT), no spaces, no trailing garbage, within [min, max]. Sizes and
 * durations are core/units.h's, the one grammar of each, with the bare
 * unit each row declares. Must never
 * print, exit, allocate or keep state between calls: a mistake is one
 * line in the caller's buffer, `slabtap COMMAND: MESSAGE`, and the caller
 * prints it with where the help is (cli/ does: cli_usage_error; exit 2).
 *
 * Messages, for example:
 *   slabtap proxy: unknown option --foo
 *   slabtap proxy: --db needs a value
 *   slabtap proxy: --queue: 0 is below the minimum 1
 *   slabtap experiment: --count: "300abc" is not a number
 *   slabtap proxy: --max-db-size: "8XB" is not a size (examples: 512k, 8MB, 1.5GiB)
 *   slabtap proxy: --max-db-size: 512k is below the minimum 1MiB
 *   slabtap proxy: --stats-interval: "1x" is not a duration (examples: 250ms,
 *     1s, 1h30m, '2 days'; a number alone is in milliseconds)
 *   slabtap proxy: --retain: "1500ms" is not a whole number of seconds
 */
#ifndef SLABTAP_CORE_OPT_H
#define SLABTAP_CORE_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum opt_kind {
    OPT_FLAG,     /* no value: *(bool *)dest = true */
    OPT_SET,      /* no value: *(int *)dest = set_value (the last one given wins) */
    OPT_STRING,   /* *(const char **)dest = the value, pointing into argv */
    OPT_UINT,     /* *(uint64_t *)dest: digits only, within [min, max] */
    OPT_INT,      /* *(int64_t *)dest: optional + or -, digits, within [smin, smax] */
    OPT_SIZE,     /* *(uint64_t *)dest: a size (core/units.h: 512k, 8MB, 1.5GiB)
                   * in units of `unit` bytes (0: bytes), within [min, max]
                   * of those units */
    OPT_DURATION, /* *(uint64_t *)dest: a duration (core/units.h: 250ms, 1h30m,
                   * '2 days') in units of `unit` nanoseconds (UNITS_MS,
                   * UNITS_S: what a number alone means; required), within
                   * [min, max] of those units */
    OPT_DOUBLE,   /* *(double *)dest: decimal (digits . e + -), finite, in [dmin, dmax] */
    OPT_ENUM,     /* *(int *)dest = the value of the word given, from words */
    OPT_CALL      /* call(dest, value, err, errlen): 0, or -1 with a message in err */
};

struct opt_word {
    const char *word;
    int value;
};

/* One row of a table. Bounds left at 0/0 mean the whole range of the
 * kind (a max of 0 alone means no upper bound). */
struct opt_spec {
    const char *long_name; /* without the dashes; NULL: short only */
    char short_name;       /* 0: long only */
    enum opt_kind kind;
    void *dest;
    uint64_t min, max;            /* OPT_UINT, OPT_SIZE, OPT_DURATION */
    uint64_t unit;                /* OPT_SIZE, OPT_DURATION: the bare unit */
    int64_t smin, smax;           /* OPT_INT */
    double dmin, dmax;            /* OPT_DOUBLE */
    const struct opt_word *words; /* OPT_ENUM; ends with {NULL, 0} */
    int set_value;                /* OPT_SET */
    /* OPT_CALL; err holds only the message (opt adds "slabtap CMD: --name: ") */
    int (*call)(void *dest, const char *value, char *err, size_t errlen);
    bool *seen;        /* optional: set true whenever the option is given */
    const char **text; /* optional: the value as given (into argv), likewise */
};

enum opt_result { OPT_OK, OPT_HELP, OPT_ERROR };

/* Parses argv[1..argc-1] (argv[0] is the command's name) against table,
 * left to right: the first of -h/--help or a mistake decides the result.
 * Positionals are moved, in order, to argv[*first_positional..argc-1]
 * (options keep their order before them); when first_positional is NULL a
 * positional is a mistake. -h and --help are reserved. command names the
 * subcommand in messages ("proxy", "model ladder"); err gets the line on
 * OPT_ERROR. */
enum opt_result opt_parse(const char *command, const struct opt_spec *table, size_t n, int argc,
                          char **argv, int *first_positional, char *err, size_t errlen);

/* The same line for a mistake the caller finds after parsing (a required
 * option missing, two that exclude each other): "slabtap COMMAND: " and
 * the formatted message into err. Returns OPT_ERROR. */
enum opt_result opt_error(char *err, size_t errlen, const char *command, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
