/* top_cmd: `slabtap top`, a live terminal view of a memcached's slab
 * classes, read directly (--memcached) or from a running slabtap's admin
 * endpoint (--proxy).
 * Owns: flag parsing, the refresh loop, the terminal (raw mode, alternate
 * screen, cursor; restored on q, SIGINT, SIGTERM, SIGHUP and around SIGTSTP;
 * SIGWINCH fits the width), keys, and this process's signal handlers.
 * Must never: format a row itself (top_view does), do network I/O itself
 * (top_fetch does), leave the terminal raw on any exit it controls, or
 * exit with a status other than cli.h's 0 ok / 1 failure / 2 usage.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/top_fetch.h"
#include "cli/top_view.h"
#include "core/addr.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/units.h"

#define TOP_INTERVAL_DEFAULT_MS 1000
#define TOP_INTERVAL_LIVE_MIN_MS 100
#define TOP_TIMEOUT_DEFAULT_MS 2000
/* Per line on a terminal: "\033[K" and "\n" around the renderer's text. */
#define TOP_SCREEN_MAX (TOP_VIEW_RENDER_MAX + 4 * (TOP_VIEW_HEAD_LINES + TOP_CLASSES_MAX) + 64)

#define TOP_ESC_ENTER "\033[?1049h\033[?25l"
#define TOP_ESC_LEAVE "\033[?25h\033[?1049l"

static volatile sig_atomic_t top_stop, top_resized, top_continued;

/* The terminal as it was, for the signal handlers to put back. */
static struct termios top_orig;
static volatile sig_atomic_t top_raw_on;

struct top_args {
    const char *memcached, *proxy, *token, *target;
    uint64_t interval, timeout, width;
    int sort, level;
    bool reverse, once, width_set;
};

struct top_source {
    bool proxy;
    const char *text, *token;
    struct addr_list addr;
    struct top_fetch_ctl ctl;
    struct stats_sample sample;
    char *http; /* TOP_FETCH_HTTP_MAX + 1 bytes, --proxy only */
    char name[TOP_SOURCE_MAX];
    bool run_known;              /* --proxy: the running slabtap's run said in name */
    char target[TOP_TARGET_MAX]; /* --proxy: the target asked for ("": the primary) */
};

static struct top_snapshot top_snaps[3];
static char top_screen[TOP_SCREEN_MAX];
static char top_text[TOP_VIEW_RENDER_MAX];

static void top_usage(FILE *out)
{
    fprintf(out,
            "usage: slabtap top --memcached HOST:PORT|unix:PATH [options]\n"
            "       slabtap top --proxy HOST:PORT [--http-token TOKEN] [options]\n"
            "\n"
            "The top of memcached memory: one row per slab class (chunk size, items,\n"
            "pages, used %%, waste %%, evictions/s, sets/s) under a header of totals\n"
            "(memory malloced vs limit, ops/s, hit ratio, uptime), refreshed every\n"
            "--interval. Rates are the difference of two samples.\n"
            "\n"
            "source, exactly one of:\n"
            "  --memcached HOST:PORT|unix:PATH\n"
            "                         read `stats`, `stats slabs`, `stats items` directly\n"
            "  --proxy HOST:PORT      a running slabtap's admin endpoint (its --http):\n"
            "                         GET /api/slabs, the proxy's last sample of the same\n"
            "                         three replies (taken every --stats-interval of the\n"
            "                         proxy; rates need two different samples)\n"
            "  --http-token TOKEN     the proxy's --http-token, when it has one\n"
            "  --target NAME          --proxy with shadows (its --shadow): the memcached\n"
            "                         shown, \"primary\" (default) or a shadow's name as\n"
            "                         /api/slabs' \"targets\" lists it (key t: the next)\n"
            "\n"
            "options (MS: a duration, 250ms 2s '1 minute'; a number alone: milliseconds):\n"
            "  --interval MS          refresh every MS (default %d, at least %d; with\n"
            "                         --once the gap between the two samples, 0: one\n"
            "                         sample, no rates)\n"
            "  --once                 print one snapshot to stdout and exit: no terminal\n"
            "                         codes, for scripts\n"
            "  --sort KEY             class (default, ascending), chunk, items, pages, used,\n"
            "                         waste, evict, sets (largest first)\n"
            "  -r, --reverse          the other way round (this sort only: a sort key\n"
            "                         pressed later starts that sort its own way round)\n"
            "  --width COLS           cut lines at COLS (default: the terminal's width;\n"
            "                         not on a terminal: no cut)\n"
            "  --timeout MS           give up on one refresh after MS (default %d)\n"
            "  -v, --verbose          debug log lines too\n"
            "  -q, --quiet            warnings and errors only\n"
            "  -h, --help             this text\n"
            "\n"
            "keys on a terminal: c class, k chunk, i items, p pages, u used%%, w waste%%,\n"
            "e evictions/s, s sets/s (each its own way round), r reverse the current\n"
            "sort, t the next target (--proxy with shadows), space refresh now, q quit.\n"
            "Without a terminal and without --once a snapshot is printed every interval.\n",
            TOP_INTERVAL_DEFAULT_MS, TOP_INTERVAL_LIVE_MIN_MS, TOP_TIMEOUT_DEFAULT_MS);
}

static enum opt_result top_parse(int argc, char **argv, struct top_args *a, char *err,
                                 size_t errlen)
{
    static const struct opt_word sorts[] = {
#define TOP_SORT_WORD(name, letter, title) { #name, TOP_SORT_##name },
        TOP_SORTS(TOP_SORT_WORD)
#undef TOP_SORT_WORD
            { NULL, 0 },
    };
    const char *interval_text = "";
    const struct opt_spec table[] = {
        { "memcached", 0, OPT_STRING, .dest = &a->memcached },
        { "proxy", 0, OPT_STRING, .dest = &a->proxy },
        { "http-token", 0, OPT_STRING, .dest = &a->token },
        { "target", 0, OPT_STRING, .dest = &a->target },
        { "interval", 0, OPT_DURATION, .dest = &a->interval, .unit = UNITS_MS, .min = 0,
          .max = 3600000, .text = &interval_text },
        { "timeout", 0, OPT_DURATION, .dest = &a->timeout, .unit = UNITS_MS, .min = 10,
          .max = 600000 },
        { "sort", 0, OPT_ENUM, .dest = &a->sort, .words = sorts },
        { "reverse", 'r', OPT_FLAG, .dest = &a->reverse },
        { "once", 0, OPT_FLAG, .dest = &a->once },
        { "width", 0, OPT_UINT, .dest = &a->width, .min = 1, .max = TOP_WIDTH_MAX,
          .seen = &a->width_set },
        CLI_OPTS_VERBOSITY(&a->level, NULL),
    };
    memset(a, 0, sizeof *a);
    a->interval = TOP_INTERVAL_DEFAULT_MS;
    a->timeout = TOP_TIMEOUT_DEFAULT_MS;
    a->sort = TOP_SORT_class;
    a->level = (int)log_get_level();
    enum opt_result r =
        opt_parse("top", table, sizeof table / sizeof table[0], argc, argv, NULL, err, errlen);
    if (r != OPT_OK)
        return r;
    log_set_level((enum log_level)a->level);
    if (!a->memcached == !a->proxy)
        return opt_error(err, errlen, "top", "give exactly one of --memcached and --proxy");
    if (a->token && !a->proxy)
        return opt_error(err, errlen, "top", "--http-token goes with --proxy");
    if (a->target && !a->proxy)
        return opt_error(err, errlen, "top", "--target goes with --proxy");
    if (a->target && (!*a->target || strlen(a->target) >= TOP_TARGET_MAX))
        return opt_error(err, errlen, "top", "--target: a name of 1 to %d bytes",
                         TOP_TARGET_MAX - 1);
    if (!a->once && a->interval < TOP_INTERVAL_LIVE_MIN_MS)
        return opt_error(err, errlen, "top",
                         "--interval: %s is below %dms (below only with --once)", interval_text,
                         TOP_INTERVAL_LIVE_MIN_MS);
    return OPT_OK;
}

/* --- sources ------------------------------------------------------------------ */

static int top_source_open(struct top_source *s, const struct top_args *a, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->proxy = a->proxy != NULL;
    s->text = s->proxy ? a->proxy : a->memcached;
    s->token = a->token;
    if (a->target)
        snprintf(s->target, sizeof s->target, "%s", a->target);
    s->ctl.timeout_ms = (unsigned)a->timeout;
    s->ctl.cancel = &top_stop;
    stats_sample_init(&s->sample);
    char why[384];
    if (s->proxy && !strncmp(s->text, "unix:", 5))
        return opt_error(err, errlen, "top", "--proxy %s: the admin endpoint is HOST:PORT",
                         s->text);
    if (addr_resolve(s->text, &s->addr, why, sizeof why))
        return opt_error(err, errlen, "top", "%s %s", s->proxy ? "--proxy" : "--memcached", why);
    if (s->proxy) {
        snprintf(s->name, sizeof s->name, "%s via slabtap /api/slabs", s->text);
        s->http = malloc(TOP_FETCH_HTTP_MAX + 1);
        if (!s->http)
            return opt_error(err, errlen, "top", "out of memory");
    } else {
        snprintf(s->name, sizeof s->name, "%s", s->text);
    }
    return OPT_OK;
}

static void top_source_close(struct top_source *s)
{
    stats_sample_fini(&s->sample);
    free(s->http);
    s->http = NULL;
}

/* The memory totals an older slabtap's /api/slabs does not carry
 * (memcached's total_malloced and limit_maxbytes of the last sample), from
 * /api/run/classes; a slabtap without that endpoint leaves them unknown. */
static void top_take_totals(struct top_source *s, struct top_snapshot *out)
{
    struct top_http_reply r;
    char err[256], why[256];
    struct top_snapshot *t = malloc(sizeof *t);
    if (!t)
        return;
    top_snapshot_init(t);
    if (!top_fetch_http_get(&s->addr, s->text, "/api/run/classes", s->token, &s->ctl, s->http,
                            TOP_FETCH_HTTP_MAX + 1, &r, err, sizeof err) &&
        r.status == 200 &&
        !top_snapshot_from_json(t, s->http + r.body_off, r.body_len, s->name, why, sizeof why)) {
        out->total_malloced = t->total_malloced;
        out->limit_maxbytes = t->limit_maxbytes;
    }
    free(t);
}

/* What the running slabtap records (a proxy, watch or snapshot run: issue
 * 22), once, into the source's name (GET /api/runs). */
static void top_take_run(struct top_source *s, struct top_snapshot *out)
{
    struct top_http_reply r;
    char err[256], kind[16];
    int64_t id;
    if (top_fetch_http_get(&s->addr, s->text, "/api/runs", s->token, &s->ctl, s->http,
                           TOP_FETCH_HTTP_MAX + 1, &r, err, sizeof err) ||
        r.status != 200)
        return;
    s->run_known = true;
    if (top_current_run(s->http + r.body_off, r.body_len, &id, kind, sizeof kind))
        return;
    snprintf(s->name, sizeof s->name, "%.100s via slabtap /api/slabs, %s run #%lld", s->text, kind,
             (long long)id);
    snprintf(out->source, sizeof out->source, "%s", s->name);
}

/* GET /api/slabs, with ?target=NAME (percent-encoded) when one is asked. */
static void top_slabs_path(const char *target, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = (size_t)snprintf(out, cap, "/api/slabs%s", *target ? "?target=" : "");
    for (const unsigned char *p = (const unsigned char *)target; *p && n + 4 < cap; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    out[n] = '\0';
}

/* A snapshot now. 0, or -1 with err. */
static int top_take(struct top_source *s, struct top_snapshot *out, char *err, size_t errlen)
{
    struct top_http_reply r;
    char why[256];
    if (!s->proxy) {
        uint64_t t = clock_mono_ns();
        if (top_fetch_stats(&s->addr, &s->ctl, &s->sample, err, errlen))
            return -1;
        top_snapshot_from_sample(out, &s->sample, t, s->name);
        return 0;
    }
    char path[32 + 3 * TOP_TARGET_MAX];
    top_slabs_path(s->target, path, sizeof path);
    if (top_fetch_http_get(&s->addr, s->text, path, s->token, &s->ctl, s->http,
                           TOP_FETCH_HTTP_MAX + 1, &r, err, errlen))
        return -1;
    const char *body = s->http + r.body_off;
    if (r.status == 401) {
        snprintf(err, errlen, "%s: GET /api/slabs: 401, %s", s->text,
                 s->token ? "the --http-token was refused" : "it wants --http-token");
        return -1;
    }
    if (r.status != 200) {
        snprintf(err, errlen, "%.100s: GET %.120s: HTTP %d: %.160s", s->text, path, r.status, body);
        err[strcspn(err, "\r\n")] = '\0';
        return -1;
    }
    if (top_snapshot_from_json(out, body, r.body_len, s->name, why, sizeof why)) {
        snprintf(err, errlen, "%s: GET /api/slabs: %s", s->text, why);
        return -1;
    }
    if (out->total_malloced < 0 || out->limit_maxbytes < 0)
        top_take_totals(s, out);
    if (!s->run_known)
        top_take_run(s, out);
    return 0;
}

/* --- the terminal --------------------------------------------------------------- */

static void top_write(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

/* Async-signal-safe: tcsetattr and write only. */
static void top_term_restore(void)
{
    if (!top_raw_on)
        return;
    tcsetattr(STDIN_FILENO, TCSADRAIN, &top_orig);
    top_write(STDOUT_FILENO, TOP_ESC_LEAVE, sizeof TOP_ESC_LEAVE - 1);
    top_raw_on = 0;
}

static int top_term_raw(void)
{
    struct termios t = top_orig;
    /* keys one at a time, unechoed; ^C and ^Z still signal */
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t))
        return -1;
    top_raw_on = 1;
    top_write(STDOUT_FILENO, TOP_ESC_ENTER, sizeof TOP_ESC_ENTER - 1);
    return 0;
}

static void top_on_stop(int sig)
{
    (void)sig;
    top_stop = 1;
}

static void top_on_winch(int sig)
{
    (void)sig;
    top_resized = 1;
}

static void top_on_tstp(int sig)
{
    int saved = errno;
    struct sigaction dfl = { .sa_handler = SIG_DFL }, self = { .sa_handler = top_on_tstp };
    sigset_t set;
    (void)sig;
    top_term_restore();
    /* stop for real: the default action, unblocked; back here on SIGCONT */
    sigaction(SIGTSTP, &dfl, NULL);
    raise(SIGTSTP);
    sigemptyset(&set);
    sigaddset(&set, SIGTSTP);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    sigaction(SIGTSTP, &self, NULL);
    top_term_raw();
    top_continued = 1;
    errno = saved;
}

/* No SA_RESTART: a signal wakes poll() so that q-less exits are prompt. */
static void top_signals(bool terminal)
{
    struct sigaction sa = { .sa_handler = top_on_stop };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (!terminal)
        return;
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = top_on_winch;
    sigaction(SIGWINCH, &sa, NULL);
    sa.sa_handler = top_on_tstp;
    sigaction(SIGTSTP, &sa, NULL);
}

static void top_term_size(unsigned *cols, unsigned *rows)
{
    struct winsize ws;
    *cols = 80;
    *rows = 24;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    }
    if (*cols > TOP_WIDTH_MAX)
        *cols = TOP_WIDTH_MAX;
}

/* The rendered lines from the top left, each clearing the rest of its
 * line, no newline after the last (no scroll), the rest cleared. */
static void top_draw(const char *text, size_t len)
{
    size_t n = 0;
    memcpy(top_screen, "\033[H", 3);
    n = 3;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t l = nl ? (size_t)(nl - (text + i)) : len - i;
        if (n + l + 8 > sizeof top_screen)
            break;
        memcpy(top_screen + n, text + i, l);
        n += l;
        memcpy(top_screen + n, "\033[K", 3);
        n += 3;
        i += l + 1;
        if (i < len)
            top_screen[n++] = '\n';
    }
    memcpy(top_screen + n, "\033[J", 3);
    n += 3;
    top_write(STDOUT_FILENO, top_screen, n);
}

/* --- the modes ----------------------------------------------------------------- */

static void top_sleep_ms(uint64_t ms)
{
    uint64_t end = clock_mono_ns() + ms * 1000000u;
    while (!top_stop) {
        uint64_t now = clock_mono_ns();
        if (now >= end)
            return;
        struct timespec ts = { .tv_sec = (time_t)((end - now) / 1000000000u),
                               .tv_nsec = (long)((end - now) % 1000000000u) };
        nanosleep(&ts, NULL);
    }
}

static int top_once(struct top_source *src, const struct top_args *a, struct top_view_opts *opts)
{
    char err[512];
    struct top_snapshot *prev = &top_snaps[0], *cur = &top_snaps[1];
    if (top_take(src, prev, err, sizeof err))
        goto fail;
    if (a->interval > 0) {
        top_sleep_ms(a->interval);
        if (top_stop)
            return 1;
        if (top_take(src, cur, err, sizeof err))
            goto fail;
    } else {
        cur = prev;
        prev = NULL;
    }
    size_t n = top_view_render(cur, prev, opts, top_text, sizeof top_text);
    fwrite(top_text, 1, n, stdout);
    return fflush(stdout) ? 1 : 0;
fail:
    fprintf(stderr, "slabtap top: %s\n", err);
    return 1;
}

/* Which of top_snaps is free: neither cur nor prev (-1 for either: none yet). */
static int top_spare(int cur, int prev)
{
    int i = 0;
    while (i == cur || i == prev)
        i++;
    return i;
}

/* Not a terminal: a snapshot every interval, a blank line between. */
static int top_batch(struct top_source *src, const struct top_args *a, struct top_view_opts *opts)
{
    char err[512];
    int cur = -1, prev = -1;
    while (!top_stop) {
        int next = top_spare(cur, prev);
        if (top_take(src, &top_snaps[next], err, sizeof err)) {
            if (top_stop)
                break;
            fprintf(stderr, "slabtap top: %s\n", err);
            if (cur < 0)
                return 1;
        } else {
            prev = cur;
            cur = next;
            size_t n = top_view_render(&top_snaps[cur], prev < 0 ? NULL : &top_snaps[prev], opts,
                                       top_text, sizeof top_text);
            printf("%s%.*s", prev < 0 ? "" : "\n", (int)n, top_text);
            fflush(stdout);
        }
        top_sleep_ms(a->interval);
    }
    return 0;
}

static int top_live(struct top_source *src, const struct top_args *a, struct top_view_opts *opts)
{
    char err[512], note[600];
    int cur = 0, prev = -1;
    unsigned cols, rows;
    if (top_take(src, &top_snaps[cur], err, sizeof err)) {
        fprintf(stderr, "slabtap top: %s\n", err);
        return 1;
    }
    if (tcgetattr(STDIN_FILENO, &top_orig) || top_term_raw()) {
        fprintf(stderr, "slabtap top: cannot set up the terminal: %s\n", strerror(errno));
        return 1;
    }
    opts->keys_help = true;
    opts->note = NULL;
    uint64_t due = clock_mono_ns() + a->interval * 1000000u;
    bool redraw = true;
    while (!top_stop) {
        if (redraw || top_resized || top_continued) {
            top_resized = top_continued = 0;
            top_term_size(&cols, &rows);
            opts->width = a->width_set ? (unsigned)a->width : cols;
            opts->height = rows;
            top_draw(top_text, top_view_render(&top_snaps[cur], prev < 0 ? NULL : &top_snaps[prev],
                                               opts, top_text, sizeof top_text));
            redraw = false;
        }
        uint64_t now = clock_mono_ns();
        if (now < due) {
            struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
            int ms = (int)((due - now + 999999) / 1000000);
            if (poll(&p, 1, ms) > 0 && !(p.revents & POLLIN)) {
                top_stop = 1; /* POLLHUP, POLLERR: the terminal went away */
            } else if (p.revents & POLLIN) {
                char keys[32];
                ssize_t n = read(STDIN_FILENO, keys, sizeof keys);
                for (ssize_t i = 0; i < n; i++) {
                    if (keys[i] == ' ')
                        due = clock_mono_ns();
                    int r = top_view_key(opts, (unsigned char)keys[i]);
                    if (r < 0)
                        top_stop = 1;
                    /* t: the next target, fetched now; rates start again
                     * (another memcached's counters) */
                    const char *nt =
                        r == TOP_KEY_TARGET && src->proxy ? top_next_target(&top_snaps[cur]) : NULL;
                    if (nt) {
                        snprintf(src->target, sizeof src->target, "%s", nt);
                        prev = -1;
                        due = clock_mono_ns();
                    }
                    redraw |= r == 1;
                }
                if (n == 0) /* the terminal went away */
                    top_stop = 1;
            }
            continue;
        }
        due = clock_mono_ns() + a->interval * 1000000u;
        int next = top_spare(cur, prev);
        if (top_take(src, &top_snaps[next], err, sizeof err)) {
            if (top_stop)
                break;
            snprintf(note, sizeof note, "refresh failed, showing the last snapshot: %s", err);
            opts->note = note;
            redraw = true;
            continue;
        }
        opts->note = NULL;
        /* the proxy samples on its own clock: the same t_ns is the same
         * sample, and would make every rate unknown */
        if (strcmp(top_snaps[next].target, top_snaps[cur].target)) {
            prev = -1; /* another target: no rate against the last one's */
            cur = next;
        } else if (!(src->proxy && top_snaps[next].t_ns == top_snaps[cur].t_ns)) {
            prev = cur;
            cur = next;
        }
        redraw = true;
    }
    top_term_restore();
    return 0;
}

int cli_top_main(int argc, char **argv)
{
    struct top_args a;
    struct top_source src;
    char err[512] = "";
    int rc;
    memset(&src, 0, sizeof src);
    switch (top_parse(argc, argv, &a, err, sizeof err)) {
    case OPT_HELP: top_usage(stdout); return 0;
    case OPT_ERROR: goto usage;
    case OPT_OK: break;
    }
    if (top_source_open(&src, &a, err, sizeof err) != OPT_OK) {
        top_source_close(&src);
        goto usage;
    }
    bool terminal = !a.once && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    struct top_view_opts opts = { .sort = (enum top_sort)a.sort, .reverse = a.reverse };
    if (a.width_set) {
        opts.width = (unsigned)a.width;
    } else if (isatty(STDOUT_FILENO)) {
        unsigned rows;
        top_term_size(&opts.width, &rows);
    }
    top_signals(terminal);
    if (a.once)
        rc = top_once(&src, &a, &opts);
    else if (terminal)
        rc = top_live(&src, &a, &opts);
    else
        rc = top_batch(&src, &a, &opts);
    top_source_close(&src);
    return rc;
usage:
    return cli_usage_error("top", err);
}
