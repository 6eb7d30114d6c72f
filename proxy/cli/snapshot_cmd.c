/* cli_snapshot: `slabtap snapshot` -- flags (the recording ones are
 * cli/recopts.h's, shared with proxy and watch), signals, and the loop
 * around the app in tap mode (server/app.h) and one metadump after another
 * (server/snapshot.h). Its loop is its own, not cli_app's: a signal must
 * end the open snapshot (its header, incomplete) before app_close. Must
 * never exit without app_finish once app_open succeeded: that is what
 * writes the last rows. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "cli/cli.h"
#include "cli/recopts.h"
#include "core/addr.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/units.h"
#include "record/sink.h"
#include "server/app.h"
#include "server/snapshot.h"

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
            "snapshot_items), with a stats sample (stats, slabs, items, settings) as\n"
            "each starts and ends. No client is re-pointed and nothing but the metadump\n"
            "and the stats poll is sent. Memory stays bounded whatever the item count:\n"
            "when the queue is full slabtap stops reading and memcached's crawler waits\n"
            "(--on-full is always block). A dump cut short (a signal, the connection\n"
            "lost, %d s of silence) is recorded incomplete with every item read.\n"
            "memcached started with -X (or -o no_lru_crawler) refuses: slabtap exits 1\n"
            "with memcached's words; BUSY (its crawler is running) is tried again.\n"
            "A metadump is not atomic: an item memcached moves between its LRUs while\n"
            "the crawler walks them can be missed or listed twice (docs/snapshot.md).\n"
            "Exit status: 0 every snapshot complete, or cut short by a signal; 1\n"
            "memcached refused, or a dump failed; 2 usage.\n"
            "\n"
            "  --memcached ADDR     memcached to list (required): HOST:PORT (every\n"
            "                       address of the name tried in turn), [IPv6]:PORT,\n"
            "                       unix:PATH (memcached -s PATH)\n"
            "  --every DURATION     a snapshot this often (5m, 1h; a number: seconds),\n"
            "                       from one start to the next, each in the same run\n"
            "                       (snapshot 1, 2, ...), until SIGINT/SIGTERM or --count\n"
            "                       (default: one snapshot)\n"
            "  --count N            stop after N snapshots (without --every: back to back)\n"
            "  --busy-retries N     tries again after BUSY (default %d, %d ms apart)\n"
            "\n"
            "Recording (the same flags as `slabtap proxy`):\n",
            SNAPSHOT_IDLE_TIMEOUT_MS / 1000, SNAPSHOT_BUSY_RETRIES, SNAPSHOT_BUSY_WAIT_MS);
    cli_rec_usage(out);
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
                    "slabtap snapshot: memcached %s answered BUSY %llu time%s (--busy-retries): "
                    "%s\n",
                    s->peer, (unsigned long long)s->busy_tries, s->busy_tries == 1 ? "" : "s",
                    s->words);
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
    /* --every counts from one snapshot's start to the next one's (the
     * loop's clock brought up to now: the timer counts from it) */
    uv_update_time(&sc->loop);
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
    struct cli_rec_args rec;
    const char *memcached;
    uint64_t every_s, count, busy_retries;
    bool count_seen;
};

static enum opt_result snapcmd_parse(int argc, char **argv, struct snapcmd *sc,
                                     struct app_config *cfg, struct snapcmd_args *a, char *options,
                                     size_t options_len, char *err, size_t errlen)
{
    struct opt_spec table[4 + CLI_REC_OPTS] = {
        { "memcached", 0, OPT_STRING, .dest = &a->memcached },
        { "every", 0, OPT_DURATION, .dest = &a->every_s, .unit = UNITS_S, .min = 1,
          .max = 366ull * 86400 },
        { "count", 0, OPT_UINT, .dest = &a->count, .min = 1, .max = UINT32_MAX,
          .seen = &a->count_seen },
        { "busy-retries", 0, OPT_UINT, .dest = &a->busy_retries, .min = 0, .max = 1000 },
    };
    char why[384];
    proxy_config_defaults(&cfg->proxy);
    cli_rec_defaults(&a->rec, cfg, "snapshot");
    a->busy_retries = SNAPSHOT_BUSY_RETRIES;
    cli_rec_opts(table + 4, &a->rec, cfg);
    enum opt_result r =
        opt_parse("snapshot", table, sizeof table / sizeof table[0], argc, argv, NULL, err, errlen);
    if (r != OPT_OK)
        return r;
    if (cli_rec_finish("snapshot", &a->rec, cfg, err, errlen) != OPT_OK)
        return OPT_ERROR;
    if (!a->memcached || !cfg->db_path)
        return opt_error(err, errlen, "snapshot", "--memcached and --db are required");
    if (cfg->on_full != REC_BLOCK)
        return opt_error(err, errlen, "snapshot",
                         "--on-full drop: a snapshot never drops an item (memcached's crawler "
                         "waits instead)");
    if (addr_resolve(a->memcached, &cfg->proxy.upstream_addrs, why, sizeof why))
        return opt_error(err, errlen, "snapshot", "--memcached %s", why);
    snprintf(cfg->proxy.upstream_text, sizeof cfg->proxy.upstream_text, "%s", a->memcached);
    cfg->tap_mode = true;
    cfg->run_kind = "snapshot";
    cfg->proxy.record_reads = false;
    sc->every_ns = a->every_s * UNITS_S;
    /* without --every: --count snapshots back to back (default one) */
    sc->count = a->count_seen ? a->count : (sc->every_ns ? 0 : 1);
    cli_rec_join_args(argc, argv, options, options_len);
    cfg->options_text = options;
    return OPT_OK;
}

int cli_snapshot_main(int argc, char **argv)
{
    struct snapcmd *sc = calloc(1, sizeof *sc);
    struct app_config cfg = { 0 };
    struct snapcmd_args a = { 0 };
    char options[1024], err[512];
    int rc = 2;

    if (!sc)
        return 1;
    switch (snapcmd_parse(argc, argv, sc, &cfg, &a, options, sizeof options, err, sizeof err)) {
    case OPT_HELP:
        snapcmd_usage(stdout);
        rc = 0;
        goto out;
    case OPT_ERROR: cli_usage_error("snapshot", err); goto out;
    case OPT_OK: break;
    }
    cfg.tap_unblock = snapcmd_unblock;
    cfg.tap_ud = sc;
    sc->scfg = (struct snapshot_config){ .memcached = &sc->app.px.cfg.upstream_addrs,
                                         .key_mode = cfg.proxy.key_mode,
                                         .sample_keys = cfg.proxy.sample_keys,
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
    fprintf(stderr, "slabtap: snapshot of %s, run %lld '%s' node '%s' into %s%s%s, keys %s\n",
            cfg.proxy.upstream_text, (long long)sc->app.run_id, cfg.run_name, cfg.node,
            sink_name(&sc->app.sink), cfg.spill_path ? ", spill " : "",
            cfg.spill_path ? cfg.spill_path : "", keyfmt_mode_name(cfg.proxy.key_mode));
    snapcmd_start(sc);
    uv_run(&sc->loop, UV_RUN_DEFAULT);

    cli_rec_finish_signals(&sc->app.rec);
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
