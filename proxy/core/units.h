/* units: what a size and a duration are, for every flag, file and line of
 * slabtap -- the one parser of each and the one way to print them back.
 *
 * A size is a number of bytes: a decimal number, then optionally blanks and
 * a unit, case-insensitive: b byte bytes, k kb kib, m mb mib, g gb gib,
 * t tb tib. Every multiple is binary (k = 1024, m = 1024^2, g = 1024^3,
 * t = 1024^4; "MB" means MiB, as memcached's -m does). Examples: 0, 512k,
 * 8m, 8M, 8MB, 8MiB, 8mb, 1.5g, "64 MB".
 *
 * A duration is one or more terms, each a decimal number, optionally
 * blanks, and a unit, case-insensitive: ns, us, ms msec millisecond(s),
 * s sec secs second(s), m min mins minute(s), h hr hrs hour(s), d day(s),
 * w week(s); terms go from the largest unit to the smallest, each unit at
 * most once, blanks allowed between terms (1h30m, "1 hour 30 minutes").
 * Examples: 250ms, 1s, 90s, 5m, 1h30m, 2d, "1 hour", 3600s, 1.5h.
 *
 * A number alone (no unit, one term) is in the caller's bare unit: each
 * flag names its own (--stats-interval MS: milliseconds, --retain:
 * seconds, -m: megabytes). A bare unit of 0 means a unit is required.
 *
 * Numbers: digits, optionally a point and more digits (1.5; not .5, 1. or
 * 1e3), no sign, at most 19 significant digits. A fraction is allowed when
 * the result is a whole number of the caller's unit (1.5g, 0.5k, 1.5s for
 * milliseconds); nothing is ever rounded: 0.3k (307.2 bytes) or 1500ms for
 * a flag in seconds is refused (UNITS_INEXACT). No blanks before or after
 * the text, no other characters.
 *
 * Owns the two grammars, their exact arithmetic (no floating point) and
 * their canonical text (units_size_text, units_duration_text). Must never
 * print, allocate or keep state: pure functions over (text, len). */
#ifndef SLABTAP_CORE_UNITS_H
#define SLABTAP_CORE_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* bare units of sizes (bytes) */
#define UNITS_B 1ull
#define UNITS_KIB 1024ull
#define UNITS_MIB (1024ull * 1024)
/* bare units of durations (nanoseconds) */
#define UNITS_MS 1000000ull
#define UNITS_S 1000000000ull

enum units_status {
    UNITS_OK,
    UNITS_SYNTAX,  /* not a size / not a duration */
    UNITS_RANGE,   /* too large for 64 bits (of bytes, of nanoseconds) */
    UNITS_INEXACT, /* not a whole number of the caller's unit */
};

/* text[0..len) as a size, *out in units of `unit` bytes (UNITS_B, UNITS_MIB;
 * 0 or a value that is not a power of 1024 up to 1024^4: UNITS_SYNTAX for
 * a bare number). *out is written only on UNITS_OK. */
enum units_status units_size(const char *text, size_t len, uint64_t unit, uint64_t *out);

/* text[0..len) as a duration, *out in units of `unit` nanoseconds
 * (UNITS_MS, UNITS_S; 0: a unit is required). */
enum units_status units_duration(const char *text, size_t len, uint64_t unit, uint64_t *out);

/* value * unit bytes as the parser reads it back, in the largest unit that
 * holds it exactly: 1MiB, 512KiB, 1536MiB, 1000B, 1024TiB. Returns what
 * snprintf would. */
int units_size_text(uint64_t value, uint64_t unit, char *buf, size_t len);

/* value * unit nanoseconds likewise, in one unit: 250ms, 90s, 90m, 1h, 2d. */
int units_duration_text(uint64_t value, uint64_t unit, char *buf, size_t len);

/* The bare unit in words for messages: "bytes", "megabytes",
 * "milliseconds", "seconds"; "" for a unit it does not know. */
const char *units_size_name(uint64_t unit);
const char *units_duration_name(uint64_t unit);

#endif
