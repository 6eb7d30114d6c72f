#include "core/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"

static const char *const log_level_text[] = {
#define LOG_LEVEL_TEXT(name, text) text,
    LOG_LEVELS(LOG_LEVEL_TEXT)
#undef LOG_LEVEL_TEXT
};

static atomic_int log_level = LOG_LEVEL_INFO;
static atomic_int log_fd = -1;

typedef uint64_t (*log_clock_fn)(void);
static _Atomic log_clock_fn log_mono_clock; /* NULL: the real clock */

const char *log_level_name(enum log_level level)
{
    return (unsigned)level < LOG_LEVEL__COUNT ? log_level_text[level] : "?";
}

void log_set_level(enum log_level level)
{
    atomic_store(&log_level, (int)level);
}

enum log_level log_get_level(void)
{
    return (enum log_level)atomic_load(&log_level);
}

void log_set_fd(int fd)
{
    atomic_store(&log_fd, fd);
}

void log_set_mono_clock(uint64_t (*now_ns)(void))
{
    atomic_store(&log_mono_clock, now_ns);
}

static uint64_t log_mono_now(void)
{
    log_clock_fn fn = atomic_load(&log_mono_clock);
    return fn ? fn() : clock_mono_ns();
}

/* "2026-11-30T16:40:01.123Z slabtap WARN [peer] "; returns its length
 * (which may exceed cap, as snprintf's would). */
static size_t log_prefix(char *line, size_t cap, enum log_level level, const char *peer)
{
    struct tm tm;
    int64_t now = clock_wall_ns();
    time_t sec = (time_t)(now / 1000000000);
    size_t n;
    gmtime_r(&sec, &tm);
    n = strftime(line, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(line + n, cap - n, ".%03dZ slabtap %s ", (int)(now / 1000000 % 1000),
                          log_level_name(level));
    if (peer && n < cap)
        n += (size_t)snprintf(line + n, cap - n, "[%s] ", peer);
    return n;
}

/* A peer's bytes quoted in a message must not start a line of their own
 * (a forged log line) or move the cursor: every control byte but tab
 * becomes '?'. */
static void log_sanitize(char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
            s[i] = '?';
}

static void log_vwrite(enum log_level level, const char *peer, const char *suffix, const char *fmt,
                       va_list ap)
{
    char line[LOG_LINE_MAX];
    size_t n = log_prefix(line, sizeof line, level, peer);
    if (n < sizeof line) {
        int w = vsnprintf(line + n, sizeof line - n, fmt, ap);
        n += w > 0 ? (size_t)w : 0;
    }
    if (suffix && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, "%s", suffix);
    if (n > sizeof line - 1) /* cut: the last byte stays for the newline */
        n = sizeof line - 1;
    log_sanitize(line, n);
    line[n++] = '\n';
    int fd = atomic_load(&log_fd);
    ssize_t rc = write(fd >= 0 ? fd : STDERR_FILENO, line, n);
    (void)rc; /* nowhere left to report a failed diagnostic */
}

void log_write(enum log_level level, const char *peer, const char *fmt, ...)
{
    va_list ap;
    if ((int)level > atomic_load(&log_level))
        return;
    va_start(ap, fmt);
    log_vwrite(level, peer, NULL, fmt, ap);
    va_end(ap);
}

int log_throttled(struct log_throttle *t, enum log_level level, const char *peer, const char *fmt,
                  ...)
{
    char suffix[96] = "";
    va_list ap;
    uint64_t now;
    if ((int)level > atomic_load(&log_level))
        return 0;
    now = log_mono_now();
    if (t->last_ns && now - t->last_ns < LOG_THROTTLE_NS) {
        t->suppressed++;
        return 0;
    }
    if (t->suppressed)
        snprintf(suffix, sizeof suffix, " (%llu more like this held back in the last %.1f s)",
                 (unsigned long long)t->suppressed, (double)(now - t->last_ns) / 1e9);
    t->last_ns = now;
    t->suppressed = 0;
    va_start(ap, fmt);
    log_vwrite(level, peer, suffix[0] ? suffix : NULL, fmt, ap);
    va_end(ap);
    return 1;
}
