/* recopts: the recording flags and the app loop `slabtap proxy` and
 * `slabtap watch` share (see recopts.h). */
#include "cli/recopts.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/addr.h"
#include "core/log.h"
#include "core/sample.h"
#include "core/units.h"
#include "record/pgstore.h"
#include "record/sink.h"
#include "record/spill.h"

void cli_rec_usage(FILE *out)
{
    fprintf(out,
            "  --db FILE|URI        SQLite database (created if missing), or a\n"
            "                       postgresql:// URI (libpq; the password from\n"
            "                       PGPASSWORD or ~/.pgpass, never shown in logs)\n"
            "  --node NAME          this memcached in the fleet (default: the host name;\n"
            "                       runs.node in PostgreSQL, run_meta 'node' in SQLite)\n"
            "  --spill FILE|off     PostgreSQL only: rows go to this local SQLite file\n"
            "                       while the server fails past --max-stall, shipped in\n"
            "                       order, exactly once, when it is back (default\n"
            "                       slabtap-spill-NODE.db in $STATE_DIRECTORY, else in\n"
            "                       the current directory; off: rows are shed as with\n"
            "                       SQLite)\n"
            "  --spill-max SIZE     bound of the spill (default %llum); past it rows are\n"
            "                       dropped and counted (spill_full)\n"
            "  --agg-interval DURATION\n"
            "                       PostgreSQL only: the aggregates counted on this node\n"
            "                       are written at most this often (default %dms; 10s for\n"
            "                       a big fleet: the upserts grow with the distinct cells\n"
            "                       per interval, not with the writes; docs/fleet.md)\n"
            "  --record-optional    a PostgreSQL that refuses us at start does not stop\n"
            "                       slabtap: every write is counted lost\n"
            "                       (store_unavailable) while it keeps trying to connect\n"
            "  --run NAME           name of this run (default: the command's name)\n"
            "  --keys MODE          full | prefix | hash: what of each key is kept\n"
            "                       (default prefix: text before the first : / . |,\n"
            "                       plus a 64-bit hash of the whole key)\n"
            "  --sample-keys 1/N|none\n"
            "                       record the rows of one key in N, chosen by key hash\n"
            "                       (each kept key's whole history; run_meta 'sample_keys');\n"
            "                       the aggregates (agg_*, SQLite and PostgreSQL) still\n"
            "                       count every write and read, and `model predict`\n"
            "                       scales by N and states its error. none: no rows at\n"
            "                       all, the aggregates only (a fleet node: docs/fleet.md)\n"
            "  --queue ROWS         recorder queue bound (default %d)\n"
            "  --on-full MODE       block | drop when the queue is full (default block:\n"
            "                       stop reading until it drains, lose nothing slabtap\n"
            "                       could keep)\n"
            "  --max-stall MS       a FAILING database (locked, full, I/O errors) may\n"
            "                       keep slabtap waiting this long; then rows that do not\n"
            "                       fit the queue are dropped and counted (default %d)\n"
            "  --stats-interval MS  poll stats, stats slabs, stats items every MS\n"
            "                       (default %dms, at least %dms)\n"
            "  --http HOST:PORT|off admin endpoint: /health /metrics /api/runs /api/slabs\n"
            "                       POST /api/phase?name=N (default %s)\n"
            "  --http-token TOKEN   require \"Authorization: Bearer TOKEN\" on the admin\n"
            "                       endpoint (/health excepted); needed beyond loopback\n"
            "  --slab-sizes A-B-C   memcached runs with -o slab_sizes=A-B-C (it does not\n"
            "                       say so in `stats settings`): tag writes with that ladder\n"
            "  --memcached-flags \"FLAGS\"  memcached's command line (e.g. \"-m 1024 -f 1.125\"):\n"
            "                       its -f, -o slab_sizes, ... decide the ladder with what\n"
            "                       memcached reports; a ladder that disagrees with the\n"
            "                       chunk sizes memcached shows is logged, never used silently\n"
            "  --retain DURATION    SQLite: recorded writes older than this (45s, 6h, 2d,\n"
            "                       1h30m; 3600: seconds) are deleted by the writer thread,\n"
            "                       oldest first; runs, samples, settings and the write\n"
            "                       aggregates stay\n"
            "  --max-db-size SIZE   SQLite: the oldest recorded writes are deleted to keep\n"
            "                       the file under SIZE (at least 1m: 500MB, 20g); the pages\n"
            "                       freed are reused. Reaching it is logged once, shown in\n"
            "                       /health and /metrics, and never a failure\n"
            "  --wal-max SIZE       SQLite: bound of the WAL (default %llum; 0: none). A\n"
            "                       reader holding one snapshot keeps it from starting\n"
            "                       over; past SIZE rows are counted lost (wal_full), not\n"
            "                       written, until that read ends; nobody waits\n"
            "  --db runs-%%Y%%m%%d.db  a strftime pattern (UTC): a new file whenever the\n"
            "                       name changes (a file per day); the run ends in one\n"
            "                       file and goes on, same name, in the next\n"
            "  -v, --verbose        debug log lines too\n"
            "  -q, --quiet          warnings and errors only\n"
            "  -h, --help           this text\n",
            SPILL_DEFAULT_MAX_BYTES / (1024 * 1024), PGSTORE_AGG_FLUSH_MS,
            CLI_REC_DEFAULT_QUEUE_ROWS, REC_DEFAULT_MAX_STALL_MS, APP_DEFAULT_STATS_MS,
            POLLER_INTERVAL_MIN_MS, CLI_REC_DEFAULT_HTTP,
            (unsigned long long)(REC_DEFAULT_WAL_MAX >> 20));
}

/* --sample-keys 1/N (core/sample.h) */
static int parse_sample_keys(void *dest, const char *value, char *err, size_t errlen)
{
    if (sample_parse(value, dest)) {
        snprintf(err, errlen, "\"%s\" is not 1/N with N from 1 to %u, or none", value,
                 SAMPLE_MAX_N);
        return -1;
    }
    return 0;
}

void cli_rec_defaults(struct cli_rec_args *a, struct app_config *cfg, const char *run_name)
{
    cfg->run_name = run_name;
    cfg->wal_max = REC_DEFAULT_WAL_MAX;
    *a = (struct cli_rec_args){ .http = CLI_REC_DEFAULT_HTTP,
                                .queue = CLI_REC_DEFAULT_QUEUE_ROWS,
                                .keys = (int)cfg->proxy.key_mode,
                                .on_full = REC_BLOCK,
                                .level = (int)log_get_level(),
                                .interval = APP_DEFAULT_STATS_MS,
                                .max_stall = REC_DEFAULT_MAX_STALL_MS,
                                .spill_max = SPILL_DEFAULT_MAX_BYTES };
}

void cli_rec_opts(struct opt_spec *table, struct cli_rec_args *a, struct app_config *cfg)
{
    static const struct opt_word keys[] = {
        { "full", KEYFMT_FULL }, { "prefix", KEYFMT_PREFIX }, { "hash", KEYFMT_HASH }, { NULL, 0 }
    };
    static const struct opt_word on_full[] = { { "block", REC_BLOCK },
                                               { "drop", REC_DROP },
                                               { NULL, 0 } };
    const struct opt_spec rows[CLI_REC_OPTS] = {
        { "db", 0, OPT_STRING, .dest = &cfg->db_path },
        { "run", 0, OPT_STRING, .dest = &cfg->run_name },
        { "keys", 0, OPT_ENUM, .dest = &a->keys, .words = keys },
        { "queue", 0, OPT_UINT, .dest = &a->queue, .min = 1, .max = SIZE_MAX },
        { "on-full", 0, OPT_ENUM, .dest = &a->on_full, .words = on_full },
        { "stats-interval", 0, OPT_DURATION, .dest = &a->interval, .unit = UNITS_MS,
          .min = POLLER_INTERVAL_MIN_MS, .max = UINT_MAX },
        { "http", 0, OPT_STRING, .dest = &a->http },
        { "http-token", 0, OPT_STRING, .dest = &cfg->http_token },
        { "max-stall", 0, OPT_DURATION, .dest = &a->max_stall, .unit = UNITS_MS, .min = 1,
          .max = UINT_MAX },
        { "agg-interval", 0, OPT_DURATION, .dest = &a->agg_interval, .unit = UNITS_MS, .min = 1,
          .max = 3600000 },
        { "sample-keys", 0, OPT_CALL, .dest = &cfg->proxy.sample_keys, .call = parse_sample_keys },
        { "slab-sizes", 0, OPT_STRING, .dest = &a->slab_sizes },
        { "memcached-flags", 0, OPT_STRING, .dest = &a->mc_flags },
        { "node", 0, OPT_STRING, .dest = &cfg->node },
        { "spill", 0, OPT_STRING, .dest = &a->spill },
        /* a batch of 2048 rows takes about 300 KB in the spill: a smaller
         * bound could never hold one */
        { "spill-max", 0, OPT_SIZE, .dest = &a->spill_max, .min = 512 * 1024, .max = UINT64_MAX },
        { "record-optional", 0, OPT_FLAG, .dest = &a->record_optional },
        { "retain", 0, OPT_DURATION, .dest = &a->retain_s, .unit = UNITS_S, .min = 1,
          .max = INT64_MAX / UNITS_S },
        { "max-db-size", 0, OPT_SIZE, .dest = &cfg->max_db_bytes, .min = 1024 * 1024 },
        { "wal-max", 0, OPT_SIZE, .dest = &cfg->wal_max, .min = 0, .max = UINT64_MAX },
        CLI_OPTS_VERBOSITY(&a->level, NULL),
    };
    _Static_assert(sizeof rows / sizeof rows[0] == CLI_REC_OPTS, "CLI_REC_OPTS");
    memcpy(table, rows, sizeof rows);
}

/* --memcached-flags and --slab-sizes as one memcached command line for
 * the ladder, checked by the converter the ladder is read with. */
static enum opt_result cli_rec_ladder_flags(const char *command, struct cli_rec_args *a,
                                            struct app_config *cfg, char *err, size_t errlen)
{
    struct slab_settings s;
    char why[256] = "";
    if (!a->mc_flags && !a->slab_sizes)
        return OPT_OK;
    int n = snprintf(a->ladder_flags, sizeof a->ladder_flags, "%s%s%s%s",
                     a->mc_flags ? a->mc_flags : "", a->mc_flags && a->slab_sizes ? " " : "",
                     a->slab_sizes ? "-o slab_sizes=" : "", a->slab_sizes ? a->slab_sizes : "");
    if (n < 0 || (size_t)n >= sizeof a->ladder_flags)
        return opt_error(err, errlen, command, "--memcached-flags / --slab-sizes too long");
    if (slab_settings_from_flags(&s, NULL, a->ladder_flags, NULL, why, sizeof why) != SLAB_OK)
        return opt_error(err, errlen, command, "%s: %s",
                         a->slab_sizes && !a->mc_flags ? "--slab-sizes" : "--memcached-flags", why);
    cfg->memcached_flags = a->ladder_flags;
    return OPT_OK;
}

/* --node (default: the host name) and --spill (default: beside the
 * state: $STATE_DIRECTORY, systemd's, else the current directory). */
static enum opt_result cli_rec_store_args(const char *command, struct cli_rec_args *a,
                                          struct app_config *cfg, char *err, size_t errlen)
{
    if (!cfg->node) {
        if (gethostname(a->node, sizeof a->node - 1))
            snprintf(a->node, sizeof a->node, "unknown");
        a->node[sizeof a->node - 1] = '\0';
        cfg->node = a->node;
    }
    if (strlen(cfg->node) > 200 || strpbrk(cfg->node, "/\\"))
        return opt_error(err, errlen, command, "--node '%s': at most 200 bytes, no / or \\",
                         cfg->node);
    bool remote = cfg->db_path && sink_is_remote(cfg->db_path);
    if (a->spill && !remote)
        return opt_error(err, errlen, command, "--spill needs a postgresql:// --db");
    if (a->record_optional && !remote)
        return opt_error(err, errlen, command, "--record-optional needs a postgresql:// --db");
    if (cfg->agg_flush_ms && !remote)
        return opt_error(err, errlen, command,
                         "--agg-interval needs a postgresql:// --db (a SQLite file writes its "
                         "aggregates every %d ms, for live readers)",
                         STORE_AGG_FLUSH_MS);
    if (remote && (cfg->retain_ns || cfg->max_db_bytes))
        return opt_error(err, errlen, command,
                         "--retain and --max-db-size are for a SQLite --db (PostgreSQL: "
                         "partition or delete there)");
    if (!remote || (a->spill && !strcmp(a->spill, "off")))
        return OPT_OK;
    if (a->spill) {
        cfg->spill_path = a->spill;
        return OPT_OK;
    }
    const char *dir = getenv("STATE_DIRECTORY");
    int dlen = dir ? (int)strcspn(dir, ":") : 0; /* several: the first */
    snprintf(a->spill_path, sizeof a->spill_path, "%.*s%sslabtap-spill-%s.db", dlen, dir ? dir : "",
             dlen ? "/" : "", cfg->node);
    cfg->spill_path = a->spill_path;
    return OPT_OK;
}

enum opt_result cli_rec_finish(const char *command, struct cli_rec_args *a, struct app_config *cfg,
                               char *err, size_t errlen)
{
    struct addr_list hl;
    char why[384];
    log_set_level((enum log_level)a->level);
    cfg->proxy.key_mode = (enum keyfmt_mode)a->keys;
    cfg->on_full = (enum rec_on_full)a->on_full;
    cfg->queue_rows = (size_t)a->queue;
    cfg->stats_interval_ms = (unsigned)a->interval;
    cfg->max_stall_ms = (unsigned)a->max_stall;
    cfg->agg_flush_ms = (unsigned)a->agg_interval;
    cfg->retain_ns = (int64_t)(a->retain_s * UNITS_S);
    cfg->spill_max = a->spill_max;
    cfg->record_optional = a->record_optional;
    if (cli_rec_store_args(command, a, cfg, err, errlen) != OPT_OK)
        return OPT_ERROR;
    /* both stores keep the aggregates: keys not kept travel for them */
    cfg->proxy.sample_aggregate = true;
    if (cli_rec_ladder_flags(command, a, cfg, err, errlen) != OPT_OK)
        return OPT_ERROR;
    cfg->http_enabled = strcmp(a->http, "off") != 0;
    if (cfg->http_enabled && !strncmp(a->http, "unix:", 5))
        return opt_error(err, errlen, command,
                         "--http %s: the admin endpoint takes HOST:PORT or off", a->http);
    if (cfg->http_enabled && addr_resolve(a->http, &hl, why, sizeof why))
        return opt_error(err, errlen, command, "--http %s (or off)", why);
    if (cfg->http_enabled)
        cfg->http_addr = hl.a[0];
    return OPT_OK;
}

void cli_rec_join_args(int argc, char **argv, char *out, size_t cap)
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
        } else if (i > 1 && !strcmp(argv[i - 1], "--db")) {
            pgstore_redact(arg, shown, sizeof shown);
            arg = sink_is_remote(arg) ? shown : arg;
        }
        int n = snprintf(out + len, cap - len, "%s%s", i > 1 ? " " : "", arg);
        len += n > 0 ? (size_t)n : 0;
    }
}

/* --- the loop ------------------------------------------------------------------ */

/* While the last rows are written (the loop has stopped), a second
 * SIGINT/SIGTERM/SIGHUP stops waiting for the database. */
static struct recorder *finish_rec;

static void on_signal_while_finishing(int sig)
{
    static const char msg[] = "slabtap: signal again: giving up on rows not yet written "
                              "(counted as lost)\n";
    (void)sig;
    if (finish_rec)
        rec_give_up(finish_rec);
    ssize_t rc = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)rc;
}

void cli_rec_finish_signals(struct recorder *r)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    finish_rec = r;
    sa.sa_handler = on_signal_while_finishing;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* "slabtap: PREFIXN WHAT recorded, M lost (reason n, ...)" at exit. */
static void say_counts(const char *prefix, const char *what, uint64_t recorded,
                       const uint64_t lost[REC_LOST__COUNT], uint64_t lost_total)
{
    char why[512] = "";
    size_t n = 0;
    for (int i = 0; i < REC_LOST__COUNT && n < sizeof why; i++)
        if (lost[i])
            n += (size_t)snprintf(why + n, sizeof why - n, "%s%s %llu", n ? ", " : " (",
                                  rec_loss_label((enum rec_loss)i), (unsigned long long)lost[i]);
    fprintf(stderr, "slabtap: %s%llu %s recorded, %llu lost%s%s\n", prefix,
            (unsigned long long)recorded, what, (unsigned long long)lost_total, why, n ? ")" : "");
}

static void on_app_closed(struct app *a)
{
    struct cli_app *ca = (struct cli_app *)((char *)a - offsetof(struct cli_app, app));
    uv_close((uv_handle_t *)&ca->sigint, NULL);
    uv_close((uv_handle_t *)&ca->sigterm, NULL);
    uv_close((uv_handle_t *)&ca->sighup, NULL);
    uv_stop(&ca->loop);
}

void cli_app_stop(struct cli_app *ca, int rc)
{
    if (rc && !ca->fail_rc)
        ca->fail_rc = rc;
    if (ca->stopping)
        return;
    ca->stopping = true;
    app_close(&ca->app, on_app_closed);
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct cli_app *ca = h->data;
    if (ca->stopping) {
        fprintf(stderr,
                "slabtap: signal %d again: giving up on what still waits (counted as "
                "lost)\n",
                signum);
        app_force(&ca->app);
        return;
    }
    fprintf(stderr, "slabtap: signal %d: stopping (%s)\n", signum,
            ca->app.cfg.tap_mode ? "the final stats sample, then every row"
                                 : "finishing in-flight requests");
    cli_app_stop(ca, 0);
}

int cli_app_open(struct cli_app *ca, const struct app_config *cfg)
{
    uv_loop_init(&ca->loop);
    if (app_open(&ca->app, &ca->loop, cfg)) {
        uv_loop_close(&ca->loop);
        return 1;
    }
    uv_signal_init(&ca->loop, &ca->sigint);
    uv_signal_init(&ca->loop, &ca->sigterm);
    uv_signal_init(&ca->loop, &ca->sighup);
    ca->sigint.data = ca->sigterm.data = ca->sighup.data = ca;
    uv_signal_start(&ca->sigint, on_signal, SIGINT);
    uv_signal_start(&ca->sigterm, on_signal, SIGTERM);
    /* a closed terminal: nothing to reload, so stop as on SIGTERM, rows written */
    uv_signal_start(&ca->sighup, on_signal, SIGHUP);
    return 0;
}

int cli_app_run(struct cli_app *ca)
{
    uv_run(&ca->loop, UV_RUN_DEFAULT);
    /* the loop is idle: write every row, finish the run, close the file */
    if (ca->stopping) /* a signal stopped us: a second one must not wait */
        cli_rec_finish_signals(&ca->app.rec);
    struct rec_totals t; /* the counts are final here: the recorder is closed */
    int rc = app_finish(&ca->app, &t) ? 1 : 0;
    /* every lost write, by reason (what the runs row says too); read rows
     * apart (runs.rows_recorded counts writes) */
    say_counts("stopped; ", "rows", t.recorded, t.lost, t.lost_total);
    if (t.reads_recorded || t.reads_lost_total)
        say_counts("", "read rows", t.reads_recorded, t.reads_lost, t.reads_lost_total);
    if (uv_loop_close(&ca->loop))
        fprintf(stderr, "slabtap: warning: handles left open at exit\n");
    return ca->fail_rc ? ca->fail_rc : rc;
}
