/* test_log: core/log's line format, level filter, cut at LOG_LINE_MAX,
 * control bytes, the throttle (on a fake monotonic clock: no sleeping) and
 * whole lines from two threads at once. Lines are written into a pipe or a
 * temporary file through log_set_fd and read back. Owns nothing but the
 * test; exits non-zero on any failed check. */
#define _GNU_SOURCE /* timegm */
#include <fcntl.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

#include "check.h"

static int rd = -1; /* the read end of the pipe every line goes to */

/* Everything written since the last call (the pipe is non-blocking). */
static size_t drain(char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(rd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    return n;
}

static size_t count_char(const char *s, size_t n, char ch)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == ch;
    return k;
}

static int matches(const char *text, const char *pattern)
{
    regex_t re;
    int ok;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB))
        return 0;
    ok = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* --- format ------------------------------------------------------------- */

/* The timestamp is UTC and now: parse it back with timegm. */
static void check_timestamp_is_now(const char *line)
{
    struct tm tm = { 0 };
    const char *end = strptime(line, "%Y-%m-%dT%H:%M:%S", &tm);
    time_t t = end ? timegm(&tm) : 0, now = time(NULL);
    CHECK(end != NULL, "no timestamp in '%s'", line);
    CHECK(t >= now - 5 && t <= now + 1, "timestamp %lld is not now (%lld, UTC)", (long long)t,
          (long long)now);
}

static void test_format(void)
{
    char buf[4096];
    size_t n;
    log_write(LOG_LEVEL_WARN, "127.0.0.1:50412", "hello %d", 42);
    n = drain(buf, sizeof buf);
    CHECK(matches(buf, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z "
                       "slabtap WARN \\[127\\.0\\.0\\.1:50412\\] hello 42\n$"),
          "line with a peer: '%s'", buf);
    CHECK(count_char(buf, n, '\n') == 1, "one line, got '%s'", buf);
    check_timestamp_is_now(buf);

    log_info("no peer here");
    drain(buf, sizeof buf);
    CHECK(matches(buf, "^[0-9T:.-]{23}Z slabtap INFO no peer here\n$"), "no peer: '%s'", buf);

    log_error("%s", "");
    drain(buf, sizeof buf);
    CHECK(matches(buf, "^[0-9T:.-]{23}Z slabtap ERROR \n$"), "empty message: '%s'", buf);

    /* a peer's bytes cannot forge a second line */
    log_write(LOG_LEVEL_WARN, "[::1]:7", "a\nb\rc\td\x1b[0m\x7f");
    n = drain(buf, sizeof buf);
    CHECK(matches(buf, " WARN \\[\\[::1\\]:7\\] a\\?b\\?c\td\\?\\[0m\\?\n$"), "controls: '%s'",
          buf);
    CHECK(count_char(buf, n, '\n') == 1, "controls make one line: '%s'", buf);
}

static void test_level_names(void)
{
    CHECK_STR(log_level_name(LOG_LEVEL_ERROR), "ERROR");
    CHECK_STR(log_level_name(LOG_LEVEL_WARN), "WARN");
    CHECK_STR(log_level_name(LOG_LEVEL_INFO), "INFO");
    CHECK_STR(log_level_name(LOG_LEVEL_DEBUG), "DEBUG");
    CHECK_STR(log_level_name(LOG_LEVEL__COUNT), "?");
    CHECK_STR(log_level_name((enum log_level) - 1), "?");
}

static void test_levels(void)
{
    char buf[4096];
    CHECK_INT(log_get_level(), LOG_LEVEL_INFO); /* the default */
    log_debug("hidden at INFO");
    CHECK_INT(drain(buf, sizeof buf), 0);

    log_set_level(LOG_LEVEL_WARN);
    CHECK_INT(log_get_level(), LOG_LEVEL_WARN);
    log_info("hidden at WARN");
    log_write(LOG_LEVEL_INFO, "1.2.3.4:5", "hidden too");
    CHECK_INT(drain(buf, sizeof buf), 0);
    log_warn("shown");
    log_error("shown");
    drain(buf, sizeof buf);
    CHECK(matches(buf, "^[^\n]* WARN shown\n[^\n]* ERROR shown\n$"), "WARN filter: '%s'", buf);

    log_set_level(LOG_LEVEL_DEBUG);
    log_debug("now shown");
    drain(buf, sizeof buf);
    CHECK(matches(buf, " DEBUG now shown\n$"), "DEBUG: '%s'", buf);
    log_set_level(LOG_LEVEL_INFO);
}

/* --- the cut at LOG_LINE_MAX ------------------------------------------------ */

static void test_cut(void)
{
    char buf[8192], msg[4096];
    size_t prefix, n, fit;
    log_write(LOG_LEVEL_INFO, "10.0.0.1:1", "%s", "");
    prefix = drain(buf, sizeof buf) - 1; /* timestamp, level, peer */

    /* exactly LOG_LINE_MAX with the newline: nothing cut */
    fit = LOG_LINE_MAX - 1 - prefix;
    memset(msg, 'a', fit);
    msg[fit - 1] = 'z';
    msg[fit] = '\0';
    log_write(LOG_LEVEL_INFO, "10.0.0.1:1", "%s", msg);
    n = drain(buf, sizeof buf);
    CHECK_INT(n, LOG_LINE_MAX);
    CHECK(n >= 2 && buf[n - 2] == 'z' && buf[n - 1] == '\n', "a line that fits is whole");

    /* one byte more: cut, still LOG_LINE_MAX, still ending in \n */
    msg[fit - 1] = 'a';
    msg[fit] = 'z';
    msg[fit + 1] = '\0';
    log_write(LOG_LEVEL_INFO, "10.0.0.1:1", "%s", msg);
    n = drain(buf, sizeof buf);
    CHECK_INT(n, LOG_LINE_MAX);
    CHECK(n >= 2 && buf[n - 2] == 'a' && buf[n - 1] == '\n', "cut before the z, newline kept");

    /* far longer, and a throttle suffix that does not fit either */
    memset(msg, 'b', sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    log_error("%s", msg);
    n = drain(buf, sizeof buf);
    CHECK_INT(n, LOG_LINE_MAX);
    CHECK(buf[n - 1] == '\n' && count_char(buf, n, '\n') == 1, "long line: one, ends in \\n");
}

/* --- the throttle ----------------------------------------------------------- */

static uint64_t fake_ns = 5000000000000ull;

static uint64_t fake_clock(void)
{
    return fake_ns;
}

static void test_throttle(void)
{
    struct log_throttle t = { 0 }, other = { 0 };
    char buf[4096];
    int written;
    log_set_mono_clock(fake_clock);

    CHECK_INT(log_throttled(&t, LOG_LEVEL_WARN, "1.2.3.4:5", "bad request %d", 1), 1);
    drain(buf, sizeof buf);
    CHECK(matches(buf, " WARN \\[1\\.2\\.3\\.4:5\\] bad request 1\n$"), "first passes: '%s'", buf);

    /* the next seven within the second are held back and counted */
    written = 0;
    for (int i = 0; i < 7; i++) {
        fake_ns += 100000000; /* 0.1 s */
        written += log_throttled(&t, LOG_LEVEL_WARN, "1.2.3.4:5", "bad request %d", i + 2);
    }
    fake_ns += 299999999; /* 0.999999999 s after the first: still inside */
    written += log_throttled(&t, LOG_LEVEL_WARN, "1.2.3.4:5", "bad request 9");
    CHECK_INT(written, 0);
    CHECK_INT(drain(buf, sizeof buf), 0);
    CHECK_INT(t.suppressed, 8);

    /* another reason has its own throttle */
    CHECK_INT(log_throttled(&other, LOG_LEVEL_ERROR, NULL, "other reason"), 1);
    drain(buf, sizeof buf);
    CHECK(matches(buf, " ERROR other reason\n$"), "other throttle: '%s'", buf);

    /* a filtered level is neither written nor counted */
    CHECK_INT(log_throttled(&t, LOG_LEVEL_DEBUG, NULL, "debug"), 0);
    CHECK_INT(t.suppressed, 8);

    /* the window is over: the next line says how many were held back */
    fake_ns += 1;
    CHECK_INT(log_throttled(&t, LOG_LEVEL_WARN, "1.2.3.4:5", "bad request %d", 10), 1);
    drain(buf, sizeof buf);
    CHECK(matches(buf, " WARN \\[1\\.2\\.3\\.4:5\\] bad request 10 \\(8 more like this held "
                       "back in the last 1\\.0 s\\)\n$"),
          "report: '%s'", buf);
    CHECK_INT(t.suppressed, 0);

    /* held again at once; reported with the gap after a quiet spell */
    CHECK_INT(log_throttled(&t, LOG_LEVEL_WARN, NULL, "again"), 0);
    fake_ns += 2500000000ull;
    CHECK_INT(log_throttled(&t, LOG_LEVEL_WARN, NULL, "later"), 1);
    drain(buf, sizeof buf);
    CHECK(matches(buf, " WARN later \\(1 more like this held back in the last 2\\.5 s\\)\n$"),
          "after a quiet spell: '%s'", buf);

    /* nothing held back: no suffix */
    fake_ns += 1000000000ull;
    CHECK_INT(log_throttled(&t, LOG_LEVEL_WARN, NULL, "quiet"), 1);
    drain(buf, sizeof buf);
    CHECK(matches(buf, " WARN quiet\n$"), "no suffix: '%s'", buf);

    log_set_mono_clock(NULL); /* the real clock again: a fresh throttle passes */
    struct log_throttle fresh = { 0 };
    CHECK_INT(log_throttled(&fresh, LOG_LEVEL_WARN, NULL, "real clock"), 1);
    CHECK_INT(log_throttled(&fresh, LOG_LEVEL_WARN, NULL, "real clock"), 0);
    drain(buf, sizeof buf);
}

/* --- two threads ------------------------------------------------------------ */

#define THREAD_LINES 2000

static void *writer(void *arg)
{
    int id = (int)(intptr_t)arg;
    char pad[600];
    memset(pad, 'a' + id, sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    for (int i = 0; i < THREAD_LINES; i++)
        log_write(LOG_LEVEL_INFO, id ? "10.0.0.2:2" : NULL, "T%d %05d %s", id, i, pad);
    return NULL;
}

/* One line (without its newline) is whole: "... INFO [peer] T<id> <seq> <pad>"
 * with the pad intact. Returns the writer's id, -1 when broken. */
static int thread_line(const char *p, size_t len, int *seq)
{
    char line[LOG_LINE_MAX + 1];
    const char *t;
    int id;
    size_t padlen;
    if (len > LOG_LINE_MAX)
        return -1;
    memcpy(line, p, len);
    line[len] = '\0';
    t = strstr(line, " INFO ");
    if (!t || !(t = strstr(t, "T")) || sscanf(t, "T%d %d", &id, seq) != 2 || id < 0 || id > 1)
        return -1;
    padlen = strspn(line + len - 599, id ? "b" : "a");
    return padlen == 599 && (id == 0 || strstr(line, "[10.0.0.2:2] T1 ")) ? id : -1;
}

/* Every line is whole: one writer's, in its order. */
static void check_thread_lines(const char *data, size_t n)
{
    int next[2] = { 0, 0 }, bad = 0, id, seq;
    const char *p = data, *end = data + n, *nl;
    while (p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        id = thread_line(p, (size_t)(nl - p), &seq);
        if (id < 0 || seq != next[id])
            bad++;
        else
            next[id]++;
        p = nl + 1;
    }
    CHECK(bad == 0 && p == end, "%d broken or reordered lines", bad);
    CHECK(next[0] == THREAD_LINES && next[1] == THREAD_LINES, "lines: %d and %d", next[0], next[1]);
}

static void test_threads(void)
{
    char path[] = "/tmp/test_log_XXXXXX";
    int fd = mkstemp(path);
    pthread_t th[2];
    size_t cap = 2 * THREAD_LINES * LOG_LINE_MAX, n = 0;
    char *data = malloc(cap);
    ssize_t r;
    CHECK(fd >= 0 && data, "temp file");
    if (fd < 0 || !data)
        goto out;
    fcntl(fd, F_SETFL, O_APPEND); /* each write(2) lands whole at the end */
    log_set_fd(fd);
    for (intptr_t i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, writer, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    while (n < cap && (r = pread(fd, data + n, cap - n, (off_t)n)) > 0)
        n += (size_t)r;
    check_thread_lines(data, n);
out:
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    free(data);
}

int main(void)
{
    int fds[2];
    if (pipe(fds)) {
        perror("pipe");
        return 1;
    }
    rd = fds[0];
    fcntl(rd, F_SETFL, O_NONBLOCK);
    log_set_fd(fds[1]);
    test_format();
    test_level_names();
    test_levels();
    test_cut();
    test_throttle();
    test_threads();
    log_set_fd(-1);
    close(fds[0]);
    close(fds[1]);
    return check_done("test_log");
}
