/* cli_proxy: `slabtap proxy` -- flags, signals, and the loop around app.
 * Must never exit without app_finish once app_open succeeded: that is what
 * writes the last rows. */
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "cli/cli.h"
#include "core/addr.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/sample.h"
#include "core/units.h"
#include "record/pgstore.h"
#include "record/sink.h"
#include "record/spill.h"
#include "server/app.h"
#include "server/proxy.h"

#define DEFAULT_QUEUE_ROWS 65536
#define DEFAULT_HTTP "127.0.0.1:11380"

struct proxy_app {
    uv_loop_t loop;
    uv_signal_t sigint, sigterm, sighup;
    struct app app;
    bool stopping;
};

static void proxy_usage(FILE *out)
{
    fprintf(
        out,
        "usage: slabtap proxy --upstream HOST:PORT --db FILE|postgresql://... [options]\n"
        "\n"
        "Forwards memcached's text and meta protocols byte for byte and records\n"
        "every write (set add replace append prepend cas ms), delete, touch and\n"
        "incr/decr into SQLite or PostgreSQL, and every key a read asks for\n"
        "(--reads); reads are also counted per second;\n"
        "memcached's stats are polled on a side connection and kept as a time series.\n"
        "\n"
        "SIZE: bytes, or a unit, any case, binary (x1024): 512k 8M 8MB 8MiB 1.5g 2t.\n"
        "MS, DURATION: 250ms 1s 90s 5m 1h30m 2d '1 hour'; a number alone is in the\n"
        "unit the flag names (MS: milliseconds; --retain: seconds).\n"
        "\n"
        "  --listen ADDR        address for clients (default 127.0.0.1:11311): HOST:PORT,\n"
        "                       :PORT (every address: [::] dual-stack, else 0.0.0.0),\n"
        "                       [IPv6]:PORT, unix:PATH (mode 0660, removed at exit);\n"
        "                       port 0: the kernel's choice, printed on the line\n"
        "                       `slabtap: listen ADDR` (and `slabtap: http ADDR`)\n"
        "  --upstream ADDR      memcached to forward to (required): HOST:PORT (every\n"
        "                       address of the name tried in turn), [IPv6]:PORT,\n"
        "                       unix:PATH (memcached -s PATH)\n"
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
        "                       the proxy: it forwards, counts every write as lost\n"
        "                       (store_unavailable) and keeps trying to connect\n"
        "  --run NAME           name of this run (default: proxy)\n"
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
        "  --reads on|off       a row per key every get gets gat gats mg asks for:\n"
        "                       hit or miss, value length, flags, and its place among\n"
        "                       the writes (view `reads`; docs/recording-reads.md).\n"
        "                       Default on: the hit ratio is what the model is for;\n"
        "                       about 16 bytes a read on disk and 1 us of CPU (5 %%\n"
        "                       of the proxy's on request/response loads, more on\n"
        "                       deep pipelines: --sample-keys). off: reads are\n"
        "                       only counted per second (get_counts)\n"
        "  --queue ROWS         recorder queue bound (default %d)\n"
        "  --on-full MODE       block | drop when the queue is full (default block:\n"
        "                       stop reading clients until it drains, lose nothing)\n"
        "  --max-stall MS       a FAILING database (locked, full, I/O errors) may\n"
        "                       keep clients waiting this long; then rows that do not\n"
        "                       fit the queue are dropped and counted (default %d)\n"
        "  --max-pending N      requests in flight per connection before reading\n"
        "                       that client pauses (default %d)\n"
        "  --drain-ms MS        on SIGINT/SIGTERM/SIGHUP, wait this long for answers (default %d)\n"
        "  --upstream-conns N|per-client\n"
        "                       memcached connections the clients share (default %d,\n"
        "                       at most %d); per-client: one for each client\n"
        "  --max-request SIZE   largest request assembled for a shared connection\n"
        "                       (default %uk; a bigger one moves its client to a\n"
        "                       connection of its own)\n"
        "  --max-assembly SIZE  bytes of partial requests held at once (default %um)\n"
        "  --max-conns N        clients at once (default: what the fd limit allows,\n"
        "                       raised to its hard limit); beyond, a new client reads\n"
        "                       ERROR Too many open connections and is closed\n"
        "  --max-memory SIZE    buffers of the whole proxy: past 7/8 of it the clients\n"
        "                       pinning most unread answers that took none for a\n"
        "                       second are closed, past it no client is read (nor\n"
        "                       memcached, when answers hold it) (default %um; 0: none)\n"
        "  --big-answer SIZE    a pooled client that gets an answer this big moves to a\n"
        "                       connection of its own for its next requests, so no one\n"
        "                       waits behind its answers (default %um; 0: never)\n"
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
        "                       written, until that read ends; clients never wait\n"
        "  --db runs-%%Y%%m%%d.db  a strftime pattern (UTC): a new file whenever the\n"
        "                       name changes (a file per day); the run ends in one\n"
        "                       file and goes on, same name, in the next\n"
        "  -v, --verbose        debug log lines too\n"
        "  -q, --quiet          warnings and errors only\n"
        "  -h, --help           this text\n",
        SPILL_DEFAULT_MAX_BYTES / (1024 * 1024), PGSTORE_AGG_FLUSH_MS, DEFAULT_QUEUE_ROWS,
        REC_DEFAULT_MAX_STALL_MS, PROXY_DEFAULT_MAX_PENDING, PROXY_DEFAULT_DRAIN_MS,
        PROXY_DEFAULT_UPSTREAM_CONNS, PROXY_UPSTREAM_CONNS_MAX, PROXY_DEFAULT_MAX_REQUEST / 1024,
        PROXY_DEFAULT_MAX_ASSEMBLY / (1024 * 1024), PROXY_DEFAULT_MAX_MEMORY / (1024 * 1024),
        PROXY_DEFAULT_BIG_ANSWER / (1024 * 1024), APP_DEFAULT_STATS_MS, POLLER_INTERVAL_MIN_MS,
        DEFAULT_HTTP, (unsigned long long)(REC_DEFAULT_WAL_MAX >> 20));
}

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

static void finish_signals(struct recorder *r)
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
    struct proxy_app *pa = (struct proxy_app *)((char *)a - offsetof(struct proxy_app, app));
    uv_close((uv_handle_t *)&pa->sigint, NULL);
    uv_close((uv_handle_t *)&pa->sigterm, NULL);
    uv_close((uv_handle_t *)&pa->sighup, NULL);
    uv_stop(&pa->loop);
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct proxy_app *pa = h->data;
    if (pa->stopping) {
        fprintf(stderr,
                "slabtap: signal %d again: giving up on what still waits (counted as "
                "lost)\n",
                signum);
        app_force(&pa->app);
        return;
    }
    pa->stopping = true;
    fprintf(stderr, "slabtap: signal %d: stopping (finishing in-flight requests)\n", signum);
    app_close(&pa->app, on_app_closed);
}

/* The command line as recorded in runs.options: a connection string's
 * password never (pgstore_redact). */
static void join_args(int argc, char **argv, char *out, size_t cap)
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

/* --upstream-conns: a number of pooled connections, or per-client (0). */
static int parse_upstream_conns(void *dest, const char *value, char *err, size_t errlen)
{
    unsigned *out = dest;
    char *end;
    unsigned long n;
    if (!strcmp(value, "per-client")) {
        *out = 0;
        return 0;
    }
    n = value[0] >= '0' && value[0] <= '9' ? strtoul(value, &end, 10) : 0;
    if (!n || *end || n > PROXY_UPSTREAM_CONNS_MAX) {
        snprintf(err, errlen, "\"%s\" is not per-client or a number from 1 to %d", value,
                 PROXY_UPSTREAM_CONNS_MAX);
        return -1;
    }
    *out = (unsigned)n;
    return 0;
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

/* What the table writes before it goes into app_config. */
struct proxy_args {
    const char *listen, *upstream, *http;
    const char *slab_sizes, *mc_flags; /* --slab-sizes, --memcached-flags */
    const char *spill;                 /* --spill FILE|off */
    char node[256];                    /* the host name, when --node is not given */
    char spill_path[1024];             /* the default spill file */
    uint64_t spill_max;
    bool record_optional;
    char ladder_flags[2048]; /* both, as memcached flags */
    uint64_t queue, max_pending, drain, interval, max_request, max_assembly, max_stall, max_memory,
        big_answer, retain_s, agg_interval;
    int keys, on_full, level, reads;
};

/* --memcached-flags and --slab-sizes as one memcached command line for
 * the ladder, checked by the converter the ladder is read with. */
static enum opt_result proxy_ladder_flags(struct proxy_args *a, struct app_config *cfg, char *err,
                                          size_t errlen)
{
    struct slab_settings s;
    char why[256] = "";
    if (!a->mc_flags && !a->slab_sizes)
        return OPT_OK;
    int n = snprintf(a->ladder_flags, sizeof a->ladder_flags, "%s%s%s%s",
                     a->mc_flags ? a->mc_flags : "", a->mc_flags && a->slab_sizes ? " " : "",
                     a->slab_sizes ? "-o slab_sizes=" : "", a->slab_sizes ? a->slab_sizes : "");
    if (n < 0 || (size_t)n >= sizeof a->ladder_flags)
        return opt_error(err, errlen, "proxy", "--memcached-flags / --slab-sizes too long");
    if (slab_settings_from_flags(&s, NULL, a->ladder_flags, NULL, why, sizeof why) != SLAB_OK)
        return opt_error(err, errlen, "proxy", "%s: %s",
                         a->slab_sizes && !a->mc_flags ? "--slab-sizes" : "--memcached-flags", why);
    cfg->memcached_flags = a->ladder_flags;
    return OPT_OK;
}

/* --node (default: the host name) and --spill (default: beside the
 * state: $STATE_DIRECTORY, systemd's, else the current directory). */
static enum opt_result proxy_store_args(struct proxy_args *a, struct app_config *cfg, char *err,
                                        size_t errlen)
{
    if (!cfg->node) {
        if (gethostname(a->node, sizeof a->node - 1))
            snprintf(a->node, sizeof a->node, "unknown");
        a->node[sizeof a->node - 1] = '\0';
        cfg->node = a->node;
    }
    if (strlen(cfg->node) > 200 || strpbrk(cfg->node, "/\\"))
        return opt_error(err, errlen, "proxy", "--node '%s': at most 200 bytes, no / or \\",
                         cfg->node);
    bool remote = cfg->db_path && sink_is_remote(cfg->db_path);
    if (a->spill && !remote)
        return opt_error(err, errlen, "proxy", "--spill needs a postgresql:// --db");
    if (a->record_optional && !remote)
        return opt_error(err, errlen, "proxy", "--record-optional needs a postgresql:// --db");
    if (cfg->agg_flush_ms && !remote)
        return opt_error(err, errlen, "proxy",
                         "--agg-interval needs a postgresql:// --db (a SQLite file writes its "
                         "aggregates every %d ms, for live readers)",
                         STORE_AGG_FLUSH_MS);
    if (remote && (cfg->retain_ns || cfg->max_db_bytes))
        return opt_error(err, errlen, "proxy",
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

/* Required flags and addresses, after the table; err set on a mistake. */
static enum opt_result proxy_check_args(const struct proxy_args *a, struct app_config *cfg,
                                        char *err, size_t errlen)
{
    struct addr_list hl;
    if (!a->upstream || !cfg->db_path)
        return opt_error(err, errlen, "proxy", "--upstream and --db are required");
    char why[384];
    if (addr_resolve(a->listen, &cfg->proxy.listen_addrs, why, sizeof why))
        return opt_error(err, errlen, "proxy", "--listen %s", why);
    if (addr_resolve(a->upstream, &cfg->proxy.upstream_addrs, why, sizeof why))
        return opt_error(err, errlen, "proxy", "--upstream %s", why);
    cfg->http_enabled = strcmp(a->http, "off") != 0;
    if (cfg->http_enabled && !strncmp(a->http, "unix:", 5))
        return opt_error(err, errlen, "proxy",
                         "--http %s: the admin endpoint takes HOST:PORT or off", a->http);
    if (cfg->http_enabled && addr_resolve(a->http, &hl, why, sizeof why))
        return opt_error(err, errlen, "proxy", "--http %s (or off)", why);
    if (cfg->http_enabled)
        cfg->http_addr = hl.a[0];
    return OPT_OK;
}

/* Flags into cfg and a; the strings point into argv. */
static enum opt_result proxy_parse_args(int argc, char **argv, struct app_config *cfg,
                                        struct proxy_args *a, char *err, size_t errlen)
{
    static const struct opt_word keys[] = {
        { "full", KEYFMT_FULL }, { "prefix", KEYFMT_PREFIX }, { "hash", KEYFMT_HASH }, { NULL, 0 }
    };
    static const struct opt_word onoff[] = { { "on", 1 }, { "off", 0 }, { NULL, 0 } };
    static const struct opt_word on_full[] = { { "block", REC_BLOCK },
                                               { "drop", REC_DROP },
                                               { NULL, 0 } };
    const struct opt_spec table[] = {
        { "listen", 0, OPT_STRING, .dest = &a->listen },
        { "upstream", 0, OPT_STRING, .dest = &a->upstream },
        { "db", 0, OPT_STRING, .dest = &cfg->db_path },
        { "run", 0, OPT_STRING, .dest = &cfg->run_name },
        { "keys", 0, OPT_ENUM, .dest = &a->keys, .words = keys },
        { "queue", 0, OPT_UINT, .dest = &a->queue, .min = 1, .max = SIZE_MAX },
        { "on-full", 0, OPT_ENUM, .dest = &a->on_full, .words = on_full },
        { "reads", 0, OPT_ENUM, .dest = &a->reads, .words = onoff },
        { "max-pending", 0, OPT_UINT, .dest = &a->max_pending, .min = 1, .max = SIZE_MAX },
        { "drain-ms", 0, OPT_DURATION, .dest = &a->drain, .unit = UNITS_MS, .min = 1,
          .max = UINT_MAX },
        { "stats-interval", 0, OPT_DURATION, .dest = &a->interval, .unit = UNITS_MS,
          .min = POLLER_INTERVAL_MIN_MS, .max = UINT_MAX },
        { "http", 0, OPT_STRING, .dest = &a->http },
        { "http-token", 0, OPT_STRING, .dest = &cfg->http_token },
        { "max-stall", 0, OPT_DURATION, .dest = &a->max_stall, .unit = UNITS_MS, .min = 1,
          .max = UINT_MAX },
        { "agg-interval", 0, OPT_DURATION, .dest = &a->agg_interval, .unit = UNITS_MS, .min = 1,
          .max = 3600000 },
        { "upstream-conns", 0, OPT_CALL, .dest = &cfg->proxy.upstream_conns,
          .call = parse_upstream_conns },
        { "sample-keys", 0, OPT_CALL, .dest = &cfg->proxy.sample_keys, .call = parse_sample_keys },
        { "max-request", 0, OPT_SIZE, .dest = &a->max_request, .min = 1024, .max = 1u << 30 },
        { "max-assembly", 0, OPT_SIZE, .dest = &a->max_assembly, .min = 1024, .max = SIZE_MAX },
        { "slab-sizes", 0, OPT_STRING, .dest = &a->slab_sizes },
        { "memcached-flags", 0, OPT_STRING, .dest = &a->mc_flags },
        { "max-memory", 0, OPT_SIZE, .dest = &a->max_memory, .min = 0, .max = SIZE_MAX },
        { "big-answer", 0, OPT_SIZE, .dest = &a->big_answer, .min = 0, .max = SIZE_MAX },
        { "max-conns", 0, OPT_UINT, .dest = &cfg->proxy.max_conns, .min = 1, .max = UINT32_MAX },
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
    enum opt_result r =
        opt_parse("proxy", table, sizeof table / sizeof table[0], argc, argv, NULL, err, errlen);
    if (r != OPT_OK)
        return r;
    log_set_level((enum log_level)a->level);
    cfg->proxy.key_mode = (enum keyfmt_mode)a->keys;
    cfg->on_full = (enum rec_on_full)a->on_full;
    cfg->proxy.record_reads = a->reads != 0;
    cfg->queue_rows = (size_t)a->queue;
    cfg->proxy.max_pending = (size_t)a->max_pending;
    cfg->proxy.drain_timeout_ms = (unsigned)a->drain;
    cfg->stats_interval_ms = (unsigned)a->interval;
    cfg->max_stall_ms = (unsigned)a->max_stall;
    cfg->agg_flush_ms = (unsigned)a->agg_interval;
    cfg->retain_ns = (int64_t)(a->retain_s * UNITS_S);
    cfg->proxy.max_request = (size_t)a->max_request;
    cfg->proxy.max_assembly = (size_t)a->max_assembly;
    cfg->proxy.max_memory = (size_t)a->max_memory;
    cfg->proxy.big_answer = (size_t)a->big_answer;
    cfg->spill_max = a->spill_max;
    cfg->record_optional = a->record_optional;
    if (proxy_store_args(a, cfg, err, errlen) != OPT_OK)
        return OPT_ERROR;
    /* both stores keep the aggregates: keys not kept travel for them */
    cfg->proxy.sample_aggregate = true;
    if (proxy_ladder_flags(a, cfg, err, errlen) != OPT_OK)
        return OPT_ERROR;
    return proxy_check_args(a, cfg, err, errlen);
}

/* Defaults, the table, the checks; options is the command line as recorded. */
static enum opt_result proxy_read_args(int argc, char **argv, struct app_config *cfg,
                                       struct proxy_args *a, char *options, size_t options_len,
                                       char *err, size_t errlen)
{
    proxy_config_defaults(&cfg->proxy);
    cfg->run_name = "proxy";
    cfg->wal_max = REC_DEFAULT_WAL_MAX;
    *a = (struct proxy_args){ .listen = "127.0.0.1:11311",
                              .http = DEFAULT_HTTP,
                              .queue = DEFAULT_QUEUE_ROWS,
                              .keys = (int)cfg->proxy.key_mode,
                              .on_full = REC_BLOCK,
                              .reads = 1,
                              .level = (int)log_get_level(),
                              .max_pending = cfg->proxy.max_pending,
                              .drain = PROXY_DEFAULT_DRAIN_MS,
                              .interval = APP_DEFAULT_STATS_MS,
                              .max_request = cfg->proxy.max_request,
                              .max_stall = REC_DEFAULT_MAX_STALL_MS,
                              .spill_max = SPILL_DEFAULT_MAX_BYTES,
                              .max_assembly = cfg->proxy.max_assembly,
                              .max_memory = cfg->proxy.max_memory,
                              .big_answer = cfg->proxy.big_answer };
    enum opt_result r = proxy_parse_args(argc, argv, cfg, a, err, errlen);
    if (r != OPT_OK)
        return r;
    snprintf(cfg->proxy.upstream_text, sizeof cfg->proxy.upstream_text, "%s", a->upstream);
    join_args(argc, argv, options, options_len);
    cfg->options_text = options;
    return OPT_OK;
}

int cli_proxy_main(int argc, char **argv)
{
    struct proxy_app *pa = calloc(1, sizeof *pa);
    struct app_config cfg = { 0 };
    struct proxy_args a;
    char options[1024], err[512];
    int rc = 2;

    if (!pa)
        return 1;
    switch (proxy_read_args(argc, argv, &cfg, &a, options, sizeof options, err, sizeof err)) {
    case OPT_HELP:
        proxy_usage(stdout);
        rc = 0;
        goto out;
    case OPT_ERROR: goto usage;
    case OPT_OK: break;
    }
    rc = 1;
    uv_loop_init(&pa->loop);
    if (app_open(&pa->app, &pa->loop, &cfg))
        goto out_loop;
    uv_signal_init(&pa->loop, &pa->sigint);
    uv_signal_init(&pa->loop, &pa->sigterm);
    uv_signal_init(&pa->loop, &pa->sighup);
    pa->sigint.data = pa->sigterm.data = pa->sighup.data = pa;
    uv_signal_start(&pa->sigint, on_signal, SIGINT);
    uv_signal_start(&pa->sigterm, on_signal, SIGTERM);
    /* a closed terminal: nothing to reload, so stop as on SIGTERM, rows written */
    uv_signal_start(&pa->sighup, on_signal, SIGHUP);
    /* the addresses bound, for scripts: `--listen 127.0.0.1:0` gives the port here */
    fprintf(stderr, "slabtap: listen %s\nslabtap: http %s\n", pa->app.px.listen_text,
            cfg.http_enabled ? pa->app.http_host : "off");
    fprintf(stderr, "slabtap: proxy %s -> %s, run %lld '%s' node '%s' into %s%s%s, admin %s\n",
            pa->app.px.listen_text, cfg.proxy.upstream_text, (long long)pa->app.run_id,
            cfg.run_name, cfg.node, sink_name(&pa->app.sink), cfg.spill_path ? ", spill " : "",
            cfg.spill_path ? cfg.spill_path : "", cfg.http_enabled ? pa->app.http_host : "off");
    uv_run(&pa->loop, UV_RUN_DEFAULT);

    /* the loop is idle: write every row, finish the run, close the file */
    if (pa->stopping) /* a signal stopped us: a second one must not wait */
        finish_signals(&pa->app.rec);
    struct rec_totals t; /* the counts are final here: the recorder is closed */
    rc = app_finish(&pa->app, &t) ? 1 : 0;
    /* every lost write, by reason (what the runs row says too); read rows
     * apart (runs.rows_recorded counts writes) */
    say_counts("stopped; ", "rows", t.recorded, t.lost, t.lost_total);
    if (t.reads_recorded || t.reads_lost_total)
        say_counts("", "read rows", t.reads_recorded, t.reads_lost, t.reads_lost_total);
out_loop:
    if (uv_loop_close(&pa->loop))
        fprintf(stderr, "slabtap: warning: handles left open at exit\n");
    goto out;
usage:
    cli_usage_error("proxy", err);
out:
    free(pa);
    return rc;
}
