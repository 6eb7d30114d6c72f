/* app: one recording proxy, assembled -- store, recorder, proxy, stats
 * poller and admin HTTP endpoint -- with the order they start and stop in.
 * Used by `slabtap proxy` and by the experiment runner.
 *
 * Tap mode (cfg.tap_mode: `slabtap watch`, `slabtap snapshot`): the same
 * app without a client listener -- no proxy is opened, a->px stays zero
 * (its metrics read 0) -- with the same sink, recorder, stats poller (its
 * side connection to cfg.proxy.upstream_addrs), admin HTTP and retention.
 * The rows come from the caller's source, pushed to a->rec on the loop
 * thread; the caller stops that source before app_close (or passes
 * cfg.tap_unblock to pause it while the recorder is full), and app_close
 * then takes the final sample at once. cfg.proxy.key_mode and
 * cfg.proxy.sample_keys still say what of each key is kept.
 *
 * A watcher (cfg.watch, server/tap.h), in either mode: the app opens it
 * after the poller, hands it every stats sample, marks a phase when it
 * says memcached restarted, and closes it right after the final sample
 * (so that sample's drop counters are counted). `slabtap watch` is tap
 * mode with a watcher of mutations, evictions and deletions; `slabtap
 * proxy --watch-evictions` a proxy with one of evictions and deletions.
 *
 * Shadows (cfg.shadows, server/shadow.h; a proxy only): opened after the
 * primary's first stats sample (its limit_maxbytes is a shadow's default
 * -m, its classes with pages decide whether a sample is too small); a
 * refusal (too small, no binary, a memcached that exits before it ever
 * answered) is logged as one line and told to cfg.on_shadow_refused (the
 * proxy exits 2). Their samples, per-second counts and events go to the
 * store through server/jobs.h; at close each gets a final sample once what
 * was mirrored to it is answered (bounded by APP_FINAL_SAMPLE_WAIT_MS),
 * then they are stopped before the poller closes.
 *
 * Owns the run: its row, its phase ids, the last stats sample (and when the
 * final one has settled), the order components start and stop in, and
 * logging what its components return as errors. What a sample becomes in
 * the store and the ladder writes are tagged with are server/jobs.h's.
 * Must never touch the store from the loop thread once the recorder runs, and
 * never stop without a final sample and every row. */
#ifndef SLABTAP_APP_H
#define SLABTAP_APP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "protocol/stats_parse.h"
#include "record/recorder.h"
#include "record/sink.h"
#include "record/spill.h"
#include "server/admin_http.h"
#include "server/jobs.h"
#include "server/poller.h"
#include "server/proxy.h"
#include "server/shadow.h"
#include "server/tap.h"
#include "server/webapi.h"

#define APP_DEFAULT_STATS_MS 1000
#define APP_FINAL_SAMPLE_WAIT_MS 3000
#define APP_PHASE_NAME_MAX 128
/* the final sample: taken again until two agree, this far apart */
#define APP_FINAL_TRIES 10
#define APP_FINAL_SETTLE_MS 50
/* /health says "degraded" when no stats sample came for this many poll
 * intervals (an upstream that accepts connections but never answers) */
#define APP_STALE_INTERVALS 3
#define APP_STALE_MIN_MS 3000

struct app_config {
    struct proxy_config proxy;
    const char *db_path; /* a SQLite file, or a postgresql:// URI (record/sink.h) */
    const char *node;    /* --node: the fleet member (runs.node; SQLite: run_meta) */
    /* a remote store only: --spill FILE (NULL: none) of at most spill_max
     * bytes (0: SPILL_DEFAULT_MAX_BYTES) for rows while it fails, and
     * --record-optional: a store that cannot be reached at start does not
     * stop the proxy (rows are counted lost until it answers) */
    const char *spill_path;
    uint64_t spill_max;
    bool record_optional;
    const char *run_name;
    const char *run_kind;     /* runs.kind (NULL: "proxy"; record/sink.h) */
    const char *options_text; /* recorded in runs.options */
    size_t queue_rows;
    enum rec_on_full on_full;
    bool http_enabled;
    struct sockaddr_storage http_addr;
    const char *http_token; /* --http-token: required as "Authorization:
                                    Bearer TOKEN" (NULL: none; loopback only) */
    unsigned stats_interval_ms;
    unsigned max_stall_ms; /* --max-stall (0: REC_DEFAULT_MAX_STALL_MS) */
    unsigned agg_flush_ms; /* PostgreSQL: --agg-interval (0: PGSTORE_AGG_FLUSH_MS) */
    /* memcached's command line as far as slabtap knows it (the flags it
     * started memcached with, or --slab-sizes / --memcached-flags): with
     * `stats settings` and the chunk sizes memcached shows, it decides the
     * ladder writes are tagged with (model/ladder_source.h). NULL: none. */
    const char *memcached_flags;
    /* SQLite retention (record/retain.h): --retain (ns, 0: none) and
     * --max-db-size (bytes, 0: none); db_path may be a strftime pattern
     * (rotation, retain_path_rotates) */
    int64_t retain_ns;
    uint64_t max_db_bytes;
    uint64_t wal_max; /* SQLite: --wal-max (bytes, 0: none; rec_config.wal_max) */
    /* tap mode (see above): no listener, no proxy */
    bool tap_mode;
    /* tap mode: called on the loop thread when the recorder fills or
     * drains (rec_blocked() says which); NULL: nothing to pause */
    void (*tap_unblock)(void *ud);
    void *tap_ud;
    /* a watcher: TAP_WATCH_* (0: none); on_watch_stop (NULL: logged, the
     * app goes on without it) is told when memcached refuses it */
    unsigned watch;
    void (*on_watch_stop)(void *ud, enum tap_stop why, const char *words);
    void *watch_ud;
    /* shadows (server/shadow.h; proxy only): started after the primary's
     * first stats sample; on_shadow_refused (NULL: the app closes itself)
     * is told, with the one-line reason already logged, when they cannot
     * be (too small a sample): the caller exits 2 */
    struct shadow_spec shadows[SHADOW_MAX];
    unsigned n_shadows;
    const char *shadow_memcached; /* --memcached PATH (NULL: memcached on PATH) */
    size_t shadow_queue;          /* --shadow-queue (0: SHADOW_DEFAULT_QUEUE) */
    void (*on_shadow_refused)(void *ud, const char *why);
    void *shadow_ud;
};

struct app {
    uv_loop_t *loop;
    struct app_config cfg;
    struct sink sink;
    struct spill spill;
    struct recorder rec;
    struct proxy px;
    struct poller poller;
    struct admin_http http;
    uv_timer_t final_timer;
    uv_timer_t settle_timer;        /* the next try at a settled final sample */
    struct stats_sample final_prev; /* the try before it */
    unsigned final_tries;
    int64_t run_id;
    int64_t started_ns;
    _Atomic int64_t next_phase_id;
    _Atomic int64_t phase_id;      /* current phase, 0 before the first */
    struct stats_sample last;      /* the latest sample, for /api/slabs and /metrics */
    int64_t last_sample_ns;        /* when it came (0: none yet) */
    char http_host[ADDR_TEXT_MAX]; /* the admin address as a Host header names it */
    bool have_last;
    struct jobs jobs; /* samples, settings, phases, run_meta; the ladder writes are tagged with */
    char
        *runs_all; /* the runs but the current one (query_runs_json): /api/runs "runs", "earlier" */
    struct webapi web; /* /api/run/...: queries on the writer thread */
    struct tap tap;    /* cfg.watch: the watcher */
    bool closing, final_done, poller_open, http_open, tap_open;
    unsigned closing_handles;
    int teardown_pending; /* a failed start: components still closing */
    void (*on_closed)(struct app *a);
    char db_file[1024]; /* --db PATTERN expanded at start (rotation) */
    /* shadows: n == 0 until the primary's first sample started them (and
     * without --shadow); each one's latest sample: shadows.sh[i].last */
    struct shadow_set shadows;
    bool shadows_tried, shadows_open, shadows_refused;
    uv_timer_t shadow_timer; /* closing: asks each shadow's final sample once it is drained */
    bool shadow_timer_open;
    bool primary_final; /* the primary's final sample is in */
    bool shadow_final_asked[SHADOW_MAX], shadow_final_got[SHADOW_MAX];
};

/* Opens the database, starts the run and every component. 0, or -1 with
 * the reason logged (core/log.h) and nothing left running. */
int app_open(struct app *a, uv_loop_t *loop, const struct app_config *cfg);
/* Starts a phase now; safe from any thread (the load generator's). */
int64_t app_mark_phase(struct app *a, const char *name);
/* Drains the proxy, takes the final stats sample, closes the poller and the
 * HTTP endpoint, then calls on_closed on the loop thread. */
void app_close(struct app *a, void (*on_closed)(struct app *a));
/* A second SIGINT/SIGTERM: stop waiting (answers, a failing store); what
 * is given up is counted as lost. */
void app_force(struct app *a);
/* After the loop has stopped: writes every queued row, ends the run, closes
 * the database; totals (NULL: not wanted) gets the recorder's final counts
 * (rec_close). 0, or -1 if a row could not be written (logged). */
int app_finish(struct app *a, struct rec_totals *totals);

#endif
