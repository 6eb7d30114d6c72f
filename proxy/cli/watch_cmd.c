/* cli_watch: `slabtap watch` -- record a memcached from its own logger: the
 * app in tap mode (server/app.h) with a watcher (server/tap.h), the
 * recording flags of `slabtap proxy` (cli/recopts.h). Must never exit
 * without app_finish once app_open succeeded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/recopts.h"
#include "core/addr.h"
#include "core/opt.h"
#include "record/sink.h"
#include "server/app.h"
#include "server/tap.h"

static void watch_usage(FILE *out)
{
    fprintf(out,
            "usage: slabtap watch --memcached HOST:PORT --db FILE|postgresql://... [options]\n"
            "\n"
            "Records a memcached no client was re-pointed for, from memcached's own\n"
            "logger: one connection sends `watch mutations evictions deletions` and\n"
            "every line memcached logs becomes a row -- each store a write (command,\n"
            "key per --keys, key length, value length, TTL, memcached's status as the\n"
            "answer, the slab class memcached chose, memcached's time), each eviction\n"
            "and deletion a row of item_events (class, fetched or not, idle time, TTL\n"
            "left). A second connection polls stats, stats slabs and stats items as\n"
            "`slabtap proxy` does. Nothing else is ever sent. runs.kind is 'watch'.\n"
            "\n"
            "What the log does not say is not recorded, never guessed: the client's\n"
            "flags (an item with non-zero flags is 4 bytes bigger in memcached:\n"
            "rows have no flags: `model predict` counts them as 0), latency (NULL),\n"
            "the client's address (conn_id is memcached's fd of the client), reads\n"
            "(no read rows; stats get_hits/get_misses stay in the samples).\n"
            "memcached 1.6.18 knows no `watch deletions`: then deletions are not\n"
            "recorded (logged once).\n"
            "\n"
            "Lines memcached drops (its buffers full: skipped=N on the watcher, and\n"
            "stats log_worker_dropped / log_watcher_skipped) are counted lost\n"
            "(memcached_dropped: /metrics, runs.rows_dropped, run_meta\n"
            "memcached_dropped), logged once per episode with the memcached flag that\n"
            "would help (-o watcher_logbuf_size=, -o worker_logbuf_size=). The\n"
            "watcher reconnects (backoff to %d ms) when memcached goes away; the run\n"
            "goes on after a gap, marked by a phase when memcached restarted (run_meta\n"
            "watch_gaps). memcached started with -W refuses the watch: slabtap watch\n"
            "then exits 1 with memcached's own words. docs/watch.md says more.\n"
            "\n"
            "  --memcached ADDR     memcached to watch (required): HOST:PORT (every\n"
            "                       address of the name tried in turn), [IPv6]:PORT,\n"
            "                       unix:PATH (memcached -s PATH)\n"
            "\n"
            "Recording (the same flags as `slabtap proxy`):\n",
            TAP_BACKOFF_MAX_MS);
    cli_rec_usage(out);
}

struct watch_args {
    struct cli_rec_args rec;
    const char *memcached;
};

/* memcached refused the watch (or cannot serve it): its words, exit 1 */
static void watch_stopped(void *ud, enum tap_stop why, const char *words)
{
    struct cli_app *ca = ud;
    fprintf(stderr, "slabtap watch: %s%s%s\n", tap_stop_text(why), *words ? ": " : "", words);
    cli_app_stop(ca, 1);
}

static enum opt_result watch_read_args(int argc, char **argv, struct app_config *cfg,
                                       struct watch_args *a, char *options, size_t options_len,
                                       char *err, size_t errlen)
{
    struct opt_spec table[1 + CLI_REC_OPTS] = {
        { "memcached", 0, OPT_STRING, .dest = &a->memcached },
    };
    char why[384];
    proxy_config_defaults(&cfg->proxy);
    cli_rec_defaults(&a->rec, cfg, "watch");
    a->memcached = NULL;
    cli_rec_opts(table + 1, &a->rec, cfg);
    enum opt_result r =
        opt_parse("watch", table, sizeof table / sizeof table[0], argc, argv, NULL, err, errlen);
    if (r != OPT_OK)
        return r;
    if (cli_rec_finish("watch", &a->rec, cfg, err, errlen) != OPT_OK)
        return OPT_ERROR;
    if (!a->memcached || !cfg->db_path)
        return opt_error(err, errlen, "watch", "--memcached and --db are required");
    if (addr_resolve(a->memcached, &cfg->proxy.upstream_addrs, why, sizeof why))
        return opt_error(err, errlen, "watch", "--memcached %s", why);
    snprintf(cfg->proxy.upstream_text, sizeof cfg->proxy.upstream_text, "%s", a->memcached);
    cfg->tap_mode = true;
    cfg->run_kind = "watch";
    cfg->watch = TAP_WATCH_MUTATIONS | TAP_WATCH_EVICTIONS | TAP_WATCH_DELETIONS;
    cfg->proxy.record_reads = false;
    cli_rec_join_args(argc, argv, options, options_len);
    cfg->options_text = options;
    return OPT_OK;
}

int cli_watch_main(int argc, char **argv)
{
    struct cli_app *ca = calloc(1, sizeof *ca);
    struct app_config cfg = { 0 };
    struct watch_args a;
    char options[1024], err[512];
    int rc = 2;

    if (!ca)
        return 1;
    switch (watch_read_args(argc, argv, &cfg, &a, options, sizeof options, err, sizeof err)) {
    case OPT_HELP:
        watch_usage(stdout);
        rc = 0;
        goto out;
    case OPT_ERROR: goto usage;
    case OPT_OK: break;
    }
    cfg.on_watch_stop = watch_stopped;
    cfg.watch_ud = ca;
    rc = 1;
    if (cli_app_open(ca, &cfg))
        goto out;
    fprintf(stderr, "slabtap: http %s\n", cfg.http_enabled ? ca->app.http_host : "off");
    fprintf(stderr, "slabtap: watch %s, run %lld '%s' node '%s' into %s%s%s, admin %s\n",
            cfg.proxy.upstream_text, (long long)ca->app.run_id, cfg.run_name, cfg.node,
            sink_name(&ca->app.sink), cfg.spill_path ? ", spill " : "",
            cfg.spill_path ? cfg.spill_path : "", cfg.http_enabled ? ca->app.http_host : "off");
    rc = cli_app_run(ca);
    goto out;
usage:
    cli_usage_error("watch", err);
out:
    free(ca);
    return rc;
}
