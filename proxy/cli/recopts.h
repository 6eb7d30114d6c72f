/* recopts: what `slabtap proxy` and `slabtap watch` (and any command that
 * records a run through server/app.h) share -- the recording flags (--db,
 * --node, --keys, --sample-keys, --http, --stats-interval, --retain, the
 * spill and the queue), their help lines, their checks, and the loop that
 * runs an app until a signal and writes its last rows.
 *
 * Owns: those option rows (one table, appended to each command's own),
 * their defaults and meaning, runs.options as recorded, the signals of a
 * running app and the counts printed at exit.
 * Must never: differ between the commands (a flag shared means the same
 * in each), or exit without app_finish once app_open succeeded. */
#ifndef SLABTAP_CLI_RECOPTS_H
#define SLABTAP_CLI_RECOPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "core/opt.h"
#include "server/app.h"

#define CLI_REC_DEFAULT_QUEUE_ROWS 65536
#define CLI_REC_DEFAULT_HTTP "127.0.0.1:11380"
/* rows cli_rec_opts adds to a table */
#define CLI_REC_OPTS 23

/* What the shared rows write before it goes into app_config. */
struct cli_rec_args {
    const char *http;
    const char *slab_sizes, *mc_flags; /* --slab-sizes, --memcached-flags */
    const char *spill;                 /* --spill FILE|off */
    char node[256];                    /* the host name, when --node is not given */
    char spill_path[1024];             /* the default spill file */
    char ladder_flags[2048];           /* both, as memcached flags */
    uint64_t spill_max, queue, interval, max_stall, retain_s, agg_interval;
    bool record_optional;
    int keys, on_full, level;
};

/* Defaults into a and cfg (cfg->proxy: proxy_config_defaults first). */
void cli_rec_defaults(struct cli_rec_args *a, struct app_config *cfg, const char *run_name);
/* Writes the shared rows at table[0..CLI_REC_OPTS). */
void cli_rec_opts(struct opt_spec *table, struct cli_rec_args *a, struct app_config *cfg);
/* After opt_parse: into cfg, and checked (err set on a mistake). */
enum opt_result cli_rec_finish(const char *command, struct cli_rec_args *a, struct app_config *cfg,
                               char *err, size_t errlen);
/* The shared flags' help lines. */
void cli_rec_usage(FILE *out);
/* Once the loop has stopped and the last rows are being written: a second
 * SIGINT/SIGTERM/SIGHUP gives up on them (rec_give_up, counted as lost)
 * instead of killing the process. Used by cli_app and `slabtap snapshot`. */
void cli_rec_finish_signals(struct recorder *r);
/* The command line as recorded in runs.options (a password never). */
void cli_rec_join_args(int argc, char **argv, char *out, size_t cap);

/* One app run from a command: the loop, its signals, the exit counts. */
struct cli_app {
    uv_loop_t loop;
    uv_signal_t sigint, sigterm, sighup;
    struct app app;
    bool stopping;
    int fail_rc; /* a stop for a reason (a refused watch): the exit status */
};
/* app_open with the signals set; 0, or 1 (logged) */
int cli_app_open(struct cli_app *ca, const struct app_config *cfg);
/* Stops as on SIGTERM, exiting rc (0: as the signal would) */
void cli_app_stop(struct cli_app *ca, int rc);
/* Runs until stopped, writes every row, prints the counts; the exit status. */
int cli_app_run(struct cli_app *ca);

#endif
