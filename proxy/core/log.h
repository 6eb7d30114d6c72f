/* log: the one logger -- levels, a UTC timestamp on every line, the peer's
 * address on every connection message, and throttling for errors that a
 * misbehaving peer could repeat thousands of times a second.
 *
 * Owns stderr for diagnostics (results and usage go to stdout/stderr from
 * cli/, and the experiment runner's report from experiment/experiment.c).
 * Must never block for longer than one write(2) of one line,
 * allocate, or interleave two lines: each line is formatted into a stack
 * buffer and written with a single call, so the writer thread and the loop
 * thread can both log.
 *
 * Line format:
 *   2026-11-30T16:40:01.123Z slabtap WARN [127.0.0.1:50412] message
 * (the bracketed peer only when there is one). A line is at most
 * LOG_LINE_MAX bytes, newline included: a longer one is cut and still ends
 * in \n. Control bytes in the text (a peer's bytes quoted in a message)
 * are written as '?', so one line is always one message. */
#ifndef SLABTAP_CORE_LOG_H
#define SLABTAP_CORE_LOG_H

#include <stdint.h>

/* X(name, text): one list, so the enum and its text table cannot drift. */
#define LOG_LEVELS(X) \
    X(LOG_LEVEL_ERROR, "ERROR") \
    X(LOG_LEVEL_WARN, "WARN") \
    X(LOG_LEVEL_INFO, "INFO") \
    X(LOG_LEVEL_DEBUG, "DEBUG")

enum log_level {
#define LOG_LEVEL_ENUM(name, text) name,
    LOG_LEVELS(LOG_LEVEL_ENUM)
#undef LOG_LEVEL_ENUM
        LOG_LEVEL__COUNT
};

#define LOG_LINE_MAX 1024

const char *log_level_name(enum log_level level);
/* Lines above level are not written (default LOG_LEVEL_INFO; -q gives
 * WARN, -v DEBUG). */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Writes to this file descriptor instead of stderr (tests); -1 restores. */
void log_set_fd(int fd);

/* One line. peer may be NULL (no bracketed address). */
void log_write(enum log_level level, const char *peer, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(...) log_write(LOG_LEVEL_ERROR, NULL, __VA_ARGS__)
#define log_warn(...) log_write(LOG_LEVEL_WARN, NULL, __VA_ARGS__)
#define log_info(...) log_write(LOG_LEVEL_INFO, NULL, __VA_ARGS__)
#define log_debug(...) log_write(LOG_LEVEL_DEBUG, NULL, __VA_ARGS__)

/* A throttle for one reason: at most one line per LOG_THROTTLE_NS; the
 * lines held back are counted and reported ("... (37 more like this held
 * back in the last 1.3 s)") with the next line that passes. One per reason,
 * owned by whoever logs it, zero-initialised; not thread-safe (use one per
 * thread). */
#define LOG_THROTTLE_NS 1000000000ull

struct log_throttle {
    uint64_t last_ns;    /* monotonic time of the last line written */
    uint64_t suppressed; /* lines held back since */
};

/* Returns 1 when the line was written, 0 when it was held back (or its
 * level is filtered out; such lines are not counted either). */
int log_throttled(struct log_throttle *t, enum log_level level, const char *peer, const char *fmt,
                  ...) __attribute__((format(printf, 4, 5)));

/* Tests only: the monotonic clock the throttle reads, so a test can step
 * time instead of sleeping; NULL restores clock_mono_ns. Set it before any
 * other thread logs. */
void log_set_mono_clock(uint64_t (*now_ns)(void));

#endif
