/* load_cli: `slabtap load`, the command line face of the load engine.
 * Owns: flag parsing, reading the workload file, the --dry-run ladder from
 * memcached-style flags, SIGINT/SIGPIPE handling for this process, and the
 * summary printed at the end.
 * Must never: plan, send or count anything itself (load.c and workload.c
 * do), or exit with a status other than cli.h's 0 ok / 1 failure / 2 usage.
 */
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/addr.h"
#include "core/fileio.h"
#include "core/log.h"
#include "core/opt.h"
#include "load/load.h"
#include "load/workload.h"
#include "model/slab_model.h"
#include "record/pgstore.h"
#include "record/reader.h"

/* 4096 statements of at most 1 KiB each, with room for comments */

static atomic_bool load_cli_stop;

struct load_cli_args {
    const char *target, *workload, *replay_db, *twitter, *cachelib;
    const char *replay_run; /* a name or id, as `model --run` takes it */
    uint64_t connections, pipeline, seed;
    bool seed_set, dry_run, quiet, no_probe, demand_fill, no_demand_fill;
    double rate;
    int level;
    struct cli_ladder_flags ladder; /* --dry-run's ladder flags */
    struct slab_settings settings;  /* ... applied */
};

static void load_cli_usage(FILE *out)
{
    fprintf(out,
            "usage: slabtap load --target ADDR SOURCE [options]\n"
            "       slabtap load --dry-run SOURCE [ladder flags]\n"
            "\n"
            "Sends an operation plan to memcached (or to `slabtap proxy` in front of it)\n"
            "over pipelined text-protocol connections, counts the answers, and prints a\n"
            "summary with the plan's fingerprint (sha256 of every op, in order).\n"
            "\n"
            "SOURCE, exactly one of:\n"
            "  --workload FILE        a workload file (experiments/README.md, \"Workload files\")\n"
            "  --replay-db FILE|URI   the writes (and reads, when recorded) `slabtap proxy`\n"
            "                         recorded in FILE or a postgresql:// database, in\n"
            "                         their recorded order\n"
            "  --replay-run RUN       which run of --replay-db: its name (the newest run of\n"
            "                         that name) or its id, as `model --run` (default: the\n"
            "                         newest run)\n"
            "  --demand-fill          a replayed read that misses is followed by a set of\n"
            "                         the key's last known size, unless the recording's\n"
            "                         next request for the key is a write (default: on\n"
            "                         when the run has reads)\n"
            "  --no-demand-fill       replayed reads fill nothing\n"
            "  --twitter-trace FILE   a twitter/cache-trace CSV\n"
            "  --cachelib-trace FILE  a CacheLib kvcache trace CSV (with its header row)\n"
            "\n"
            "options:\n"
            "  --target ADDR          memcached or the proxy: HOST:PORT, [IPv6]:PORT or\n"
            "                         unix:PATH (memcached -s PATH)\n"
            "  --connections N        connections, 1..%d (default: the workload's, else %d)\n"
            "  --pipeline D           requests in flight per connection, 1..%d\n"
            "                         (default: the workload's, else %d)\n"
            "  --seed S               random seed (default: the workload's, else 0)\n"
            "  --rate OPS             open loop: OPS operations a second, each timed from\n"
            "                         when it was due (default: as fast as answers allow)\n"
            "  --no-probe             send no `stats settings` first unless the workload\n"
            "                         needs the ladder (for proxies that refuse `stats`)\n"
            "  --dry-run              print op count and fingerprint; connect to nothing\n"
            "  -v, --verbose          debug log lines too\n"
            "  -q, --quiet            no progress line on stderr; warnings and errors only\n"
            "  -h, --help             this text\n"
            "\n"
            "ladder flags, for --dry-run only (a live run reads `stats settings`):\n"
            "  -n BYTES  -f FACTOR  -I SIZE  -m MEGABYTES  --slab-chunk-max BYTES\n"
            "  --no-cas, -C           same meaning and defaults as memcached 1.6.18\n"
            "  (sizes: 512k 8MB 1.5GiB, binary x1024, any case; -m alone: megabytes)\n",
            LOAD_CONNECTIONS_MAX, LOAD_DEFAULT_CONNECTIONS, LOAD_PIPELINE_MAX,
            LOAD_DEFAULT_PIPELINE);
}

static enum opt_result load_cli_parse_flags(int argc, char **argv, struct load_cli_args *a,
                                            char *err, size_t errlen)
{
    const struct opt_spec table[] = {
        { "target", 0, OPT_STRING, .dest = &a->target },
        { "workload", 0, OPT_STRING, .dest = &a->workload },
        { "replay-db", 0, OPT_STRING, .dest = &a->replay_db },
        { "replay-run", 0, OPT_STRING, .dest = &a->replay_run },
        { "twitter-trace", 0, OPT_STRING, .dest = &a->twitter },
        { "cachelib-trace", 0, OPT_STRING, .dest = &a->cachelib },
        { "connections", 0, OPT_UINT, .dest = &a->connections, .min = 1,
          .max = LOAD_CONNECTIONS_MAX },
        { "pipeline", 0, OPT_UINT, .dest = &a->pipeline, .min = 1, .max = LOAD_PIPELINE_MAX },
        { "seed", 0, OPT_UINT, .dest = &a->seed, .seen = &a->seed_set },
        { "dry-run", 0, OPT_FLAG, .dest = &a->dry_run },
        { "rate", 0, OPT_DOUBLE, .dest = &a->rate, .dmin = 0.001, .dmax = 1e9 },
        { "no-probe", 0, OPT_FLAG, .dest = &a->no_probe },
        { "demand-fill", 0, OPT_FLAG, .dest = &a->demand_fill },
        { "no-demand-fill", 0, OPT_FLAG, .dest = &a->no_demand_fill },
        CLI_OPTS_LADDER(&a->ladder),
        CLI_OPTS_VERBOSITY(&a->level, &a->quiet),
    };
    enum opt_result r =
        opt_parse("load", table, sizeof table / sizeof table[0], argc, argv, NULL, err, errlen);
    if (r != OPT_OK)
        return r;
    log_set_level((enum log_level)a->level);
    cli_ladder_flags_apply(&a->ladder, &a->settings);
    return OPT_OK;
}

/* Cross-flag rules: one source, a target unless dry, ladder flags only dry. */
static enum opt_result load_cli_check(const struct load_cli_args *a, struct load_config *cfg,
                                      char *err, size_t errlen)
{
    int sources = !!a->workload + !!a->replay_db + !!a->twitter + !!a->cachelib;
    if (sources != 1)
        return opt_error(err, errlen, "load",
                         "give exactly one of --workload, --replay-db, "
                         "--twitter-trace, --cachelib-trace");
    if (a->replay_run && !a->replay_db)
        return opt_error(err, errlen, "load", "--replay-run needs --replay-db");
    if ((a->demand_fill || a->no_demand_fill) && !a->replay_db)
        return opt_error(err, errlen, "load",
                         "--demand-fill and --no-demand-fill need --replay-db");
    if (a->demand_fill && a->no_demand_fill)
        return opt_error(err, errlen, "load", "give --demand-fill or --no-demand-fill, not both");
    if (a->ladder.given && !a->dry_run)
        return opt_error(err, errlen, "load",
                         "-n -f -I -m --slab-chunk-max --no-cas only "
                         "apply to --dry-run; a live run reads them from the server");
    if (!a->dry_run && !a->target)
        return opt_error(err, errlen, "load", "--target ADDR is required (or --dry-run)");
    struct addr_list l;
    char why[384];
    if (a->target && addr_resolve(a->target, &l, why, sizeof why))
        return opt_error(err, errlen, "load", "--target %s", why);
    if (a->target)
        cfg->target = l.a[0];
    return OPT_OK;
}

/* Defaults, the table, the cross-flag rules, --dry-run's ladder. */
static enum opt_result load_cli_args(int argc, char **argv, struct load_cli_args *a,
                                     struct load_config *cfg, struct slab_ladder *ladder, char *err,
                                     size_t errlen)
{
    char why[256] = "";
    memset(a, 0, sizeof *a);
    a->level = (int)log_get_level();
    cli_ladder_flags_init(&a->ladder);
    enum opt_result r = load_cli_parse_flags(argc, argv, a, err, errlen);
    if (r == OPT_OK)
        r = load_cli_check(a, cfg, err, errlen);
    if (r == OPT_OK && a->dry_run &&
        slab_ladder_build(&a->settings, ladder, why, sizeof why) != SLAB_OK)
        r = opt_error(err, errlen, "load", "memcached would refuse these settings: %s", why);
    return r;
}

static void load_cli_on_phase(void *ud, const char *name)
{
    (void)ud;
    fprintf(stderr, "%sslabtap load: phase %s\n", isatty(STDERR_FILENO) ? "\r\033[K" : "", name);
}

static void load_cli_on_signal(int sig)
{
    (void)sig;
    atomic_store(&load_cli_stop, true);
}

static void load_cli_counts(const char *label, const uint64_t *v, unsigned n,
                            const char *(*name)(unsigned))
{
    printf("%-18s", label);
    bool any = false;
    for (unsigned i = 0; i < n; i++)
        if (v[i]) {
            printf("%s%s %" PRIu64, any ? ", " : "", name(i), v[i]);
            any = true;
        }
    printf("%s\n", any ? "" : "none");
}

static const char *load_cli_cmd_name(unsigned i)
{
    return workload_cmd_name((enum workload_cmd)i);
}

static const char *load_cli_answer_name(unsigned i)
{
    return load_answer_name((enum load_answer)i);
}

static void load_cli_us(const char *label, uint64_t ns)
{
    printf("  %s %.1f us", label, (double)ns / 1000.0);
}

/* p50 / p99 / p99.9 / max per command, from the answered ops. */
static void load_cli_latency(const struct load_result *r)
{
    for (unsigned i = 0; i < WORKLOAD_CMD_COUNT; i++) {
        const struct lhist *h = &r->latency[i];
        if (!h->count)
            continue;
        char label[32];
        snprintf(label, sizeof label, "latency %s:", workload_cmd_name((enum workload_cmd)i));
        printf("%-17s", label);
        load_cli_us("p50", lhist_quantile(h, 0.50));
        load_cli_us("p99", lhist_quantile(h, 0.99));
        load_cli_us("p99.9", lhist_quantile(h, 0.999));
        load_cli_us("max", h->max);
        printf("  (%" PRIu64 " answers)\n", h->count);
    }
}

static double load_cli_pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* gets, hits, misses, hit ratio, fills; then the server's deltas. */
static void load_cli_reads(const char *label, uint64_t gets, uint64_t hits, uint64_t misses,
                           uint64_t fills, uint64_t stored)
{
    printf("%-17s %" PRIu64 " gets, %" PRIu64 " hits, %" PRIu64
           " misses, hit ratio %.2f %%, %" PRIu64 " fills (%" PRIu64 " stored)\n",
           label, gets, hits, misses, load_cli_pct(hits, hits + misses), fills, stored);
}

static void load_cli_server(const char *label, const struct load_server_counts *s)
{
    printf("%-17s get_hits %" PRIu64 ", get_misses %" PRIu64 ", hit ratio %.2f %%, cmd_set %" PRIu64
           ", evictions %" PRIu64 "\n",
           label, s->get_hits, s->get_misses,
           load_cli_pct(s->get_hits, s->get_hits + s->get_misses), s->cmd_set, s->evictions);
}

/* What the reads did, whole run and per phase, as seen here and by the
 * target's own `stats`. */
static void load_cli_hits(const struct load_result *r)
{
    load_cli_reads("reads:", r->gets, r->hits, r->misses, r->fills, r->fills_stored);
    if (r->has_server)
        load_cli_server("server:", &r->server);
    else
        printf("%-18s%s\n", "server:", r->server_note[0] ? r->server_note : "no counts");
    if (r->replay_reads)
        printf("%-18s%" PRIu64 " reads replayed; no fill: %" PRIu64
               " (next request a write), %" PRIu64 " (size unknown)\n",
               "replayed reads:", r->replay_reads, r->fill_skipped_next_write,
               r->fill_skipped_unknown);
    for (unsigned i = 0; r->phases && i < r->n_phase_results; i++) {
        const struct load_phase_result *p = &r->phase_result[i];
        char label[WORKLOAD_NAME_MAX + 32];
        if (!p->ops && !p->gets)
            continue;
        snprintf(label, sizeof label, "phase %s%s:", p->name[0] ? p->name : "(start)",
                 p->merged ? "+" : "");
        load_cli_reads(label, p->gets, p->hits, p->misses, p->fills, p->fills_stored);
        if (p->has_server) {
            snprintf(label, sizeof label, "  server:");
            load_cli_server(label, &p->server);
        }
    }
}

static void load_cli_summary(const struct load_cli_args *a, const struct load_result *r)
{
    char shown[PGSTORE_URI_MAX]; /* a postgresql:// --replay-db without its password */
    pgstore_redact(a->replay_db, shown, sizeof shown);
    const char *src = a->workload    ? a->workload
                      : a->replay_db ? shown
                      : a->twitter   ? a->twitter
                                     : a->cachelib;
    if (!a->dry_run)
        printf("%-18s%s%s%s%s\n", "target:", a->target, r->server_version[0] ? " (memcached " : "",
               r->server_version, r->server_version[0] ? ")" : "");
    printf("%-18s%s", "source:", src);
    if (a->replay_db)
        printf(" run %" PRId64 " (%" PRIu64 " rows not replayable)", r->replay_run, r->skipped);
    printf(", seed %" PRIu64 "\n", r->seed);
    printf("%-18s%" PRIu64 "\n", "ops:", r->ops);
    load_cli_counts("ops by command:", r->ops_by_cmd, WORKLOAD_CMD_COUNT, load_cli_cmd_name);
    printf("%-18s%" PRIu64 "\n", "phases:", r->phases);
    if (!a->dry_run) {
        double secs = (double)r->elapsed_ns / 1e9;
        printf("%-18s%u x pipeline %u\n", "connections:", r->connections, r->pipeline);
        load_cli_counts("answers:", r->answers, LOAD_ANS_COUNT, load_cli_answer_name);
        printf("%-18s%" PRIu64 "\n", "writes answered:", r->writes_answered);
        printf("%-18s%" PRIu64 " confirmed (%" PRIu64 " mn fences)\n", "noreply:", r->silent,
               r->fences);
        printf("%-18s%" PRIu64 "\n", "errors:", r->errors);
        load_cli_hits(r);
        printf("%-18s%.3f s\n", "elapsed:", secs);
        printf("%-18s%.0f\n", "ops/s:", secs > 0 ? (double)r->ops / secs : 0.0);
        if (a->rate > 0)
            printf("%-18s%.0f ops/s asked, %" PRIu64 " ops sent over 1 ms late\n", "rate:", a->rate,
                   r->late);
        load_cli_latency(r);
    }
    printf("%-18s%s\n", "fingerprint:", r->fingerprint);
}

/* --replay-run's run, by name or id, with the one resolver `model --run`
 * uses (record/reader.h). 0, or -1 said on stderr. */
static int load_cli_find_run(const char *db, const char *name_or_id, int64_t *id)
{
    struct reader *rd;
    char err[512];
    if (reader_open(&rd, db, err, sizeof err)) {
        fprintf(stderr, "slabtap load: %s%s%s\n", pgstore_is_uri(db) ? "" : db,
                pgstore_is_uri(db) ? "" : ": ", err);
        return -1;
    }
    *id = reader_run_find(rd, name_or_id);
    if (*id < 0)
        fprintf(stderr,
                "slabtap load: %s: no run named '%s' and no run with that id (its runs: "
                "SELECT run_id, name FROM runs)\n",
                reader_name(rd), name_or_id);
    reader_close(rd);
    return *id < 0 ? -1 : 0;
}

/* The source half of the config; the workload (if any) goes to *w. */
static int load_cli_source(const struct load_cli_args *a, struct load_config *cfg,
                           struct workload **w)
{
    if (a->workload) {
        size_t len = 0;
        struct workload_error err;
        char ferr[128];
        char *text = fileio_read(a->workload, FILEIO_DEFAULT_MAX, &len, ferr, sizeof ferr);
        if (!text) {
            fprintf(stderr, "slabtap load: cannot read %s: %s\n", a->workload, ferr);
            return -1;
        }
        enum workload_status st = workload_parse(a->workload, text, len, w, &err);
        free(text);
        if (st != WORKLOAD_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return -1;
        }
        cfg->source = LOAD_SRC_WORKLOAD;
        cfg->workload = *w;
        return 0;
    }
    cfg->source = a->replay_db ? LOAD_SRC_REPLAY_DB
                  : a->twitter ? LOAD_SRC_TWITTER
                               : LOAD_SRC_CACHELIB;
    cfg->path = a->replay_db ? a->replay_db : a->twitter ? a->twitter : a->cachelib;
    cfg->replay_run = 0; /* the newest */
    if (a->replay_run && load_cli_find_run(a->replay_db, a->replay_run, &cfg->replay_run))
        return -1;
    cfg->replay_reads = true;
    cfg->demand_fill = !a->no_demand_fill;
    return 0;
}

static void load_cli_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = load_cli_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* a server that closes on us must be an error code, not a dead process */
    signal(SIGPIPE, SIG_IGN);
}

/* The progress line, from load's figures: redrawn in place on a terminal
 * (at most every LOAD_PROGRESS_TTY_MS), a plain line otherwise. */
struct load_cli_progress {
    bool tty, open_line; /* open_line: a terminal line not ended yet */
};

static void load_cli_progress(void *arg, const struct load_progress *p)
{
    struct load_cli_progress *lp = arg;
    double secs = (double)p->elapsed_ns / 1e9;
    double rate = secs > 0 ? (double)p->done / secs : 0;
    char eta[32] = "", total[32] = "";
    if (p->total && rate > 0 && p->total > p->done) {
        uint64_t left = (uint64_t)((double)(p->total - p->done) / rate);
        snprintf(eta, sizeof eta, "  ETA %" PRIu64 ":%02" PRIu64, left / 60, left % 60);
    }
    if (p->total)
        snprintf(total, sizeof total, "/%" PRIu64, p->total);
    fprintf(stderr, "%sslabtap load: %" PRIu64 "%s ops  %.0f ops/s%s%s", lp->tty ? "\r" : "",
            p->done, total, rate, eta, lp->tty ? "\033[K" : "\n");
    lp->open_line = lp->tty && !p->final;
    if (lp->tty && p->final)
        fputc('\n', stderr);
    fflush(stderr);
}

int cli_load_main(int argc, char **argv)
{
    struct load_cli_args a;
    struct load_config cfg;
    struct load_result res;
    struct workload *w = NULL;
    struct slab_ladder ladder;
    char err[512] = "";
    int rc = 1;
    memset(&cfg, 0, sizeof cfg);
    switch (load_cli_args(argc, argv, &a, &cfg, &ladder, err, sizeof err)) {
    case OPT_HELP: load_cli_usage(stdout); return 0;
    case OPT_ERROR: goto usage;
    case OPT_OK: break;
    }
    if (load_cli_source(&a, &cfg, &w))
        goto out;
    cfg.connections = (unsigned)a.connections;
    cfg.pipeline = (unsigned)a.pipeline;
    cfg.seed = a.seed;
    cfg.seed_set = a.seed_set;
    cfg.rate = a.rate;
    cfg.no_probe = a.no_probe;
    cfg.ladder = a.dry_run ? &ladder : NULL;
    cfg.on_phase = a.dry_run ? NULL : load_cli_on_phase;
    struct load_cli_progress prog = { .tty = isatty(STDERR_FILENO) };
    if (!a.quiet) {
        cfg.progress = load_cli_progress;
        cfg.progress_arg = &prog;
        cfg.progress_ms = prog.tty ? LOAD_PROGRESS_TTY_MS : LOAD_PROGRESS_PIPE_MS;
    }
    cfg.stop = &load_cli_stop;
    load_cli_signals();
    int ok = a.dry_run ? load_plan_digest(&cfg, &res) : load_run(&cfg, &res);
    if (prog.open_line) /* a failed load ends without the final call */
        fputc('\n', stderr);
    if (cfg.path) {
        cli_replay_counted(cfg.path, res.counter_ops, res.counter_keys);
        cli_replay_counters_say();
    }
    if (ok == 0 || res.status == LOAD_E_STOPPED)
        load_cli_summary(&a, &res);
    if (ok != 0)
        fprintf(stderr, "slabtap load: %s: %s\n", load_status_str(res.status), res.error);
    rc = ok == 0 ? 0 : 1;
    goto out;
usage:
    rc = cli_usage_error("load", err);
out:
    workload_free(w);
    return rc;
}
