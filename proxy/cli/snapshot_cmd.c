/* cli_snapshot: `slabtap snapshot` -- flags, signals, and the loop around
 * the app in tap mode (server/app.h) and one metadump after another
 * (server/snapshot.h). Must never exit without app_finish once app_open
 * succeeded: that is what writes the last rows. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "cli/cli.h"
#include "core/addr.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/units.h"
#include "record/pgstore.h"
#include "record/sink.h"
#include "server/app.h"
#include "server/snapshot.h"

#define SNAPCMD_DEFAULT_QUEUE_ROWS 65536

struct snapcmd {
    uv_loop_t loop;
    uv_signal_t sigint, sigterm, sighup;
    uv_timer_t every_timer;
    struct app app;
    struct snapshot snap;
    struct snapshot_config scfg;
    uint64_t every_ns; /* 0: one snapshot (or --count of them back to back) */
    uint64_t count;    /* 0: until a signal (with --every) */
    uint32_t taken;    /* snapshots started */
    bool running;      /* a snapshot is open */
    bool stopping;     /* a signal came, or the last snapshot is done */
    bool signalled;
    int rc;
};

static void snapcmd_usage(FILE *out)
{
    fprintf(out,
            "usage: slabtap snapshot --memcached HOST:PORT --db FILE|postgresql://... [options]\n"
            "\n"
            "Lists every item memcached holds with `lru_crawler metadump all` -- key, slab\n"
            "class, size (ITEM_ntotal), TTL left, seconds since last access, fetched or\n"
            "not -- into a snapshot of a run (runs.kind 'snapshot'; tables snapshots,\n"
            "snapshot_items), with a stats sample (stats, slabs, items, settings) at\n"
            "each. No client is re-pointed and nothing but the metadump and the stats\n"
            "poll is sent. Memory stays bounded whatever the item count: when the\n"
            "queue is full slabtap stops reading and memcached's crawler waits.\n"
            "memcached started with -X (or -o no_lru_crawler) refuses: slabtap exits 1\n"
            "with memcached's words; BUSY (its crawler is running) is tried again.\n"
            "\n"
            "  --memcached ADDR     memcached to list: HOST:PORT, [IPv6]:PORT, unix:PATH\n"
            "  --db FILE|URI        SQLite database (created if missing), or a\n"
            "                       postgresql:// URI (the password from PGPASSWORD or\n"
            "                       ~/.pgpass, never shown in logs)\n"
            "  --keys MODE          full | prefix | hash: what of each key is kept\n"
            "                       (default prefix: text before the first : / . |,\n"
            "                       plus a 64-bit hash of the whole key)\n"
            "  --node NAME          this memcached in the fleet (default: the host name)\n"
            "  --run NAME           name of this run (default: snapshot)\n"
            "  --every DURATION     a snapshot this often (5m, 1h; a number: seconds),\n"
            "                       each in the same run (snapshot 1, 2, ...), until\n"
            "                       SIGINT/SIGTERM or --count (default: one snapshot)\n"
            "  --count N            stop after N snapshots (default 1 without --every)\n"
            "  --busy-retries N     tries again after BUSY (default %d, %d ms apart)\n"
            "  --queue ROWS         recorder queue bound (default %d)\n"
            "  --stats-interval MS  poll stats, stats slabs, stats items every MS\n"
            "                       (default %dms, at least %dms)\n"
            "  --http HOST:PORT|off admin endpoint: /health /metrics /api/runs (default off)\n"
            "  --http-token TOKEN   require \"Authorization: Bearer TOKEN\" on it\n"
            "  --memcached-flags \"FLAGS\"  memcached's command line (e.g. \"-f 1.125\"),\n"
            "                       for the ladder the model reads\n"
            "  -v, --verbose        debug log lines too\n"
            "  -q, --quiet          warnings and errors only\n"
            "  -h, --help           this text\n"
            "\n"
            "Exit status: 0 every snapshot complete (or cut short by a signal, what was\n"
            "read stored and marked incomplete), 1 memcached refused or a dump failed,\n"
            "2 usage.\n",
            SNAPSHOT_BUSY_RETRIES, SNAPSHOT_BUSY_WAIT_MS, SNAPCMD_DEFAULT_QUEUE_ROWS,
            APP_DEFAULT_STATS_MS, POLLER_INTERVAL_MIN_MS);
}

/* --- the snapshots ------------------------------------------------------------- */

static void snapcmd_on_app_closed(struct app *a)
{
    struct snapcmd *sc = (struct snapcmd *)((char *)a - offsetof(struct snapcmd, app));
    uv_close((uv_handle_t *)&sc->sigint, NULL);
    uv_close((uv_handle_t *)&sc->sigterm, NULL);
    uv_close((uv_handle_t *)&sc->sighup, NULL);
    uv_close((uv_handle_t *)&sc->every_timer, NULL);
    uv_stop(&sc->loop);
}

/* No snapshot open: the final sample, then the loop stops. */
static void snapcmd_stop(struct snapcmd *sc)
{
    sc->stopping = true;
    uv_timer_stop(&sc->every_timer);
    app_close(&sc->app, snapcmd_on_app_closed);
}

static void snapcmd_start(struct snapcmd *sc);

static void snapcmd_on_every(uv_timer_t *t)
{
    struct snapcmd *sc = t->data;
    if (!sc->stopping && !sc->running)
        snapcmd_start(sc);
}

static void snapcmd_say(const struct snapshot *s)
{
    double secs = (double)(s->ended_ns - s->started_ns) / 1e9;
    fprintf(stderr,
            "slabtap: snapshot %u: %llu items, %llu bytes in %.3f s (%.0f items/s), %s%s%s; "
            "reading paused %llu times for the queue\n",
            s->snap, (unsigned long long)s->items, (unsigned long long)s->bytes, secs,
            secs > 0 ? (double)s->items / secs : 0.0,
            s->end == SNAPSHOT_END_COMPLETE ? "complete" : "INCOMPLETE: ",
            s->end == SNAPSHOT_END_COMPLETE ? "" : snapshot_end_text(s->end),
            s->bad_lines ? " (lines that did not parse: not stored)" : "",
            (unsigned long long)s->pauses);
}

static void snapcmd_on_done(struct snapshot *s)
{
    struct snapcmd *sc = s->data;
    sc->running = false;
    /* the stats as the dump ended: the per-class counts beside it */
    poller_sample_now(&sc->app.poller);
    switch (s->end) {
    case SNAPSHOT_END_REFUSED:
    case SNAPSHOT_END_BUSY:
        /* memcached's own words, one line */
        if (s->end == SNAPSHOT_END_REFUSED)
            fprintf(stderr, "slabtap snapshot: memcached %s refused lru_crawler metadump: %s\n",
                    s->peer, s->words);
        else
            fprintf(stderr,
                    "slabtap snapshot: memcached %s stayed busy (%llu tries, --busy-retries): "
                    "%s\n",
                    s->peer, (unsigned long long)s->busy_tries, s->words);
        sc->rc = 1;
        snapcmd_stop(sc);
        return;
    case SNAPSHOT_END_CONNECT:
    case SNAPSHOT_END_SETUP:
        fprintf(stderr, "slabtap snapshot: snapshot %u: %s %s: %s\n", s->snap,
                snapshot_end_text(s->end), s->peer, uv_strerror(s->uv_err));
        sc->rc = 1;
        break;
    case SNAPSHOT_END_STOPPED: snapcmd_say(s); break;
    case SNAPSHOT_END_COMPLETE: snapcmd_say(s); break;
    default:
        snapcmd_say(s);
        if (s->uv_err)
            fprintf(stderr, "slabtap snapshot: snapshot %u: %s\n", s->snap, uv_strerror(s->uv_err));
        sc->rc = 1;
        break;
    }
    if (sc->stopping || sc->signalled || (sc->count && sc->taken >= sc->count)) {
        snapcmd_stop(sc);
        return;
    }
    /* --every counts from one snapshot's start to the next one's */
    uint64_t since = (uint64_t)(clock_wall_ns() - s->started_ns);
    uint64_t wait_ms = since >= sc->every_ns ? 0 : (sc->every_ns - since + 999999) / 1000000;
    uv_timer_start(&sc->every_timer, snapcmd_on_every, wait_ms, 0);
}

static void snapcmd_start(struct snapcmd *sc)
{
    int rc;
    sc->taken++;
    poller_sample_now(&sc->app.poller); /* the stats as it starts */
    rc = snapshot_open(&sc->snap, &sc->loop, &sc->app.rec, &sc->scfg, sc->taken, snapcmd_on_done,
                       sc);
    if (rc) {
        fprintf(stderr, "slabtap snapshot: cannot start snapshot %u: %s\n", sc->taken,
                uv_strerror(rc));
        sc->rc = 1;
        snapcmd_stop(sc);
        return;
    }
    sc->running = true;
}

/* The recorder filled or drained (app's tap_unblock). */
static void snapcmd_unblock(void *ud)
{
    struct snapcmd *sc = ud;
    if (sc->running)
        snapshot_resume(&sc->snap);
}

static void snapcmd_on_signal(uv_signal_t *h, int signum)
{
    struct snapcmd *sc = h->data;
    if (sc->signalled) {
        fprintf(stderr,
                "slabtap: signal %d again: giving up on rows not yet written (counted as lost)\n",
                signum);
        app_force(&sc->app);
        return;
    }
    sc->signalled = true;
    fprintf(stderr, "slabtap: signal %d: stopping (what was read is stored)\n", signum);
    if (sc->running)
        snapshot_stop(&sc->snap); /* its on_done stops the app */
    else if (!sc->stopping)
        snapcmd_stop(sc);
}

/* --- flags --------------------------------------------------------------------- */

struct snapcmd_args {
    const char *memcached, *http, *mc_flags;
    char node[256];
    uint64_t every_s, count, queue, interval, busy_retries;
    int keys, level;
    bool count_seen;
};

/* The command line as recorded in runs.options: a connection string's
 * password never (pgstore_redact). */
static void snapcmd_join_args(int argc, char **argv, char *out, size_t cap)
{
    size_t len = 0;
    char shown[PGSTORE_URI_MAX];
    out[0] = '\0';
    for (int i = 1; i < argc && len + 1 < cap; i++) {
        const char *arg = argv[i];
        if (!strncmp(arg, "--db=", 5) && sink_is_remote(arg + 5)) {
            memcpy(shown, "--db=", 5);
            pgstore_redact(arg + 5, shown + 5, sizeof shown - 5);
            arg = shown;
        } else if (i > 1 && !strcmp(argv[i - 1], "--db") && sink_is_remote(arg)) {
            pgstore_redact(arg, shown, sizeof shown);
            arg = shown;
        }
        int n = snprintf(out + len, cap - len, "%s%s", i > 1 ? " " : "", arg);
        len += n > 0 ? (size_t)n : 0;
    }
}

static enum opt_result snapcmd_check(struct snapcmd *sc, struct snapcmd_args *a,
                                     struct app_config *cfg, char *err, size_t errlen)
{
    char why[384];
    struct addr_list hl;
    if (!a->memcached || !cfg->db_path)
        return opt_error(err, errlen, "snapshot", "--memcached and --db are required");
    if (addr_resolve(a->memcached, &cfg->proxy.upstream_addrs, why, sizeof why))
        return opt_error(err, errlen, "snapshot", "--memcached %s", why);
    snprintf(cfg->proxy.upstream_text, sizeof cfg->proxy.upstream_text, "%s", a->memcached);
    if (!cfg->node) {
        if (gethostname(a->node, sizeof a->node - 1))
            snprintf(a->node, sizeof a->node, "unknown");
        a->node[sizeof a->node - 1] = '\0';
        cfg->node = a->node;
    }
    if (strlen(cfg->node) > 200 || strpbrk(cfg->node, "/\\"))
        return opt_error(err, errlen, "snapshot", "--node '%s': at most 200 bytes, no / or \\",
                         cfg->node);
    cfg->http_enabled = strcmp(a->http, "off") != 0;
    if (cfg->http_enabled && addr_resolve(a->http, &hl, why, sizeof why))
        return opt_error(err, errlen, "snapshot", "--http %s (or off)", why);
    if (cfg->http_enabled && hl.a[0].ss_family == AF_UNIX)
        return opt_error(err, errlen, "snapshot", "--http %s: HOST:PORT or off", a->http);
    if (cfg->http_enabled)
        cfg->http_addr = hl.a[0];
    if (a->count_seen && !a->count)
        return opt_error(err, errlen, "snapshot", "--count: at least 1");
    sc->every_ns = a->every_s * UNITS_S;
    /* without --every: --count snapshots back to back (default one) */
    sc->count = a->count_seen ? a->count : (sc->every_ns ? 0 : 1);
    return OPT_OK;
}

static enum opt_result snapcmd_parse(int argc, char **argv, struct snapcmd *sc,
                                     struct app_config *cfg, struct snapcmd_args *a, char *err,
                                     size_t errlen)
{
    static const struct opt_word keys[] = {
        { "full", KEYFMT_FULL }, { "prefix", KEYFMT_PREFIX }, { "hash", KEYFMT_HASH }, { NULL, 0 }
    };
    const struct opt_spec table[] = {
        { "memcached", 0, OPT_STRING, .dest = &a->memcached },
        { "db", 0, OPT_STRING, .dest = &cfg->db_path },
        { "keys", 0, OPT_ENUM, .dest = &a->keys, .words = keys },
        { "node", 0, OPT_STRING, .dest = &cfg->node },
        { "run", 0, OPT_STRING, .dest = &cfg->run_name },
        { "every", 0, OPT_DURATION, .dest = &a->every_s, .unit = UNITS_S, .min = 1,
          .max = 366ull * 86400 },
        { "count", 0, OPT_UINT, .dest = &a->count, .min = 1, .max = UINT32_MAX,
          .seen = &a->count_seen },
        { "busy-retries", 0, OPT_UINT, .dest = &a->busy_retries, .min = 0, .max = 1000 },
        { "queue", 0, OPT_UINT, .dest = &a->queue, .min = 16, .max = SIZE_MAX },
        { "stats-interval", 0, OPT_DURATION, .dest = &a->interval, .unit = UNITS_MS,
          .min = POLLER_INTERVAL_MIN_MS, .max = UINT_MAX },
        { "http", 0, OPT_STRING, .dest = &a->http },
        { "http-token", 0, OPT_STRING, .dest = &cfg->http_token },
        { "memcached-flags", 0, OPT_STRING, .dest = &a->mc_flags },
        CLI_OPTS_VERBOSITY(&a->level, NULL),
    };
    enum opt_result r =
        opt_parse("snapshot", table, sizeof table / sizeof table[0], argc, argv, NULL, err, errlen);
    if (r != OPT_OK)
        return r;
    log_set_level((enum log_level)a->level);
    cfg->proxy.key_mode = (enum keyfmt_mode)a->keys;
    cfg->queue_rows = (size_t)a->queue;
    cfg->stats_interval_ms = (unsigned)a->interval;
    cfg->memcached_flags = a->mc_flags;
    return snapcmd_check(sc, a, cfg, err, errlen);
}

int cli_snapshot_main(int argc, char **argv)
{
    struct snapcmd *sc = calloc(1, sizeof *sc);
    struct app_config cfg = { 0 };
    struct snapcmd_args a = { .http = "off",
                              .queue = SNAPCMD_DEFAULT_QUEUE_ROWS,
                              .interval = APP_DEFAULT_STATS_MS,
                              .busy_retries = SNAPSHOT_BUSY_RETRIES,
                              .keys = KEYFMT_PREFIX,
                              .level = (int)log_get_level() };
    char options[1024], err[512];
    int rc = 2;

    if (!sc)
        return 1;
    proxy_config_defaults(&cfg.proxy);
    a.keys = (int)cfg.proxy.key_mode;
    cfg.run_name = "snapshot";
    cfg.run_kind = "snapshot";
    cfg.on_full = REC_BLOCK; /* never drop an item: memcached's crawler waits instead */
    cfg.wal_max = REC_DEFAULT_WAL_MAX;
    cfg.tap_mode = true;
    cfg.tap_unblock = snapcmd_unblock;
    cfg.tap_ud = sc;
    switch (snapcmd_parse(argc, argv, sc, &cfg, &a, err, sizeof err)) {
    case OPT_HELP:
        snapcmd_usage(stdout);
        rc = 0;
        goto out;
    case OPT_ERROR: cli_usage_error("snapshot", err); goto out;
    case OPT_OK: break;
    }
    snapcmd_join_args(argc, argv, options, sizeof options);
    cfg.options_text = options;
    sc->scfg = (struct snapshot_config){ .memcached = &sc->app.px.cfg.upstream_addrs,
                                         .key_mode = cfg.proxy.key_mode,
                                         .busy_retries = (unsigned)a.busy_retries };
    rc = 1;
    uv_loop_init(&sc->loop);
    if (app_open(&sc->app, &sc->loop, &cfg))
        goto out_loop;
    uv_signal_init(&sc->loop, &sc->sigint);
    uv_signal_init(&sc->loop, &sc->sigterm);
    uv_signal_init(&sc->loop, &sc->sighup);
    uv_timer_init(&sc->loop, &sc->every_timer);
    sc->sigint.data = sc->sigterm.data = sc->sighup.data = sc->every_timer.data = sc;
    uv_signal_start(&sc->sigint, snapcmd_on_signal, SIGINT);
    uv_signal_start(&sc->sigterm, snapcmd_on_signal, SIGTERM);
    uv_signal_start(&sc->sighup, snapcmd_on_signal, SIGHUP);
    fprintf(stderr, "slabtap: http %s\n", cfg.http_enabled ? sc->app.http_host : "off");
    fprintf(stderr, "slabtap: snapshot of %s, run %lld '%s' node '%s' into %s, keys %s\n",
            cfg.proxy.upstream_text, (long long)sc->app.run_id, cfg.run_name, cfg.node,
            sink_name(&sc->app.sink), keyfmt_mode_name(cfg.proxy.key_mode));
    snapcmd_start(sc);
    uv_run(&sc->loop, UV_RUN_DEFAULT);

    struct rec_totals t;
    int frc = app_finish(&sc->app, &t);
    rc = frc ? 1 : sc->rc;
    fprintf(stderr, "slabtap: stopped; %u snapshot%s, %llu rows lost\n", sc->taken,
            sc->taken == 1 ? "" : "s", (unsigned long long)t.lost_total);
out_loop:
    if (uv_loop_close(&sc->loop))
        fprintf(stderr, "slabtap: warning: handles left open at exit\n");
out:
    free(sc);
    return rc;
}
