/* tap: a watcher connection to memcached -- `watch mutations evictions
 * deletions` (or a subset) on a connection of its own, memcached's log
 * lines parsed by protocol/mclog.h and turned into rows for the recorder:
 * a store becomes a REC_ROW_WRITE (memcached's clsid, its status as the
 * answer, no latency, no flags), an eviction or a deletion a REC_ROW_EVENT.
 * Used by `slabtap watch` (mutations, evictions, deletions) and by
 * `slabtap proxy --watch-evictions` (evictions, deletions). run_meta
 * 'watch' says what was asked and what the log cannot tell.
 *
 * Owns: its stream (TCP or a unix socket), two timers, the parser and a
 * fixed read buffer; the accounting of what memcached dropped (skipped=N
 * lines and the rises of `stats` log_worker_dropped / log_watcher_skipped,
 * counted as lost rows: memcached_dropped), reconnecting with a bounded
 * backoff, and telling a memcached restart from a network blip by the pid
 * and uptime of the stats samples the caller hands it (tap_sample).
 * Must never: send memcached anything but the one `watch` line per
 * connection (a second, without `deletions`, when memcached does not know
 * that word), block the loop, wait for the recorder (a full recorder stops
 * the reading: memcached then drops lines for this watcher and counts them,
 * and so does the tap), free memory outside a close callback, or print (it
 * logs through core/log.h, once per episode).
 *
 * What is counted as lost (reason memcached_dropped), exactly: the lines
 * memcached did not give this watcher -- max(sum of skipped=N received,
 * rise of log_watcher_skipped) -- plus the rise of log_worker_dropped (the
 * entries a worker thread could not log: per worker, summed by `stats`).
 * Both stats counters are memcached-wide: another watcher's skipped lines,
 * and worker drops of log types only another watcher asked for, count too
 * (log_watchers > 1 is logged). Every line counts as one row, whatever its
 * type. Lines memcached logged while no watcher was connected (a gap) are
 * not lines memcached dropped: the gap is recorded (run_meta watch_gaps),
 * not counted.
 *
 * Loop thread only. */
#ifndef SLABTAP_TAP_H
#define SLABTAP_TAP_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/addr.h"
#include "core/dial.h"
#include "core/keyfmt.h"
#include "protocol/mclog.h"
#include "protocol/stats_parse.h"
#include "record/recorder.h"
#include "server/metrics.h"

#define TAP_WATCH_MUTATIONS 1u
#define TAP_WATCH_EVICTIONS 2u
#define TAP_WATCH_DELETIONS 4u

#define TAP_READ_BUF 65536
#define TAP_BACKOFF_MIN_MS 50
#define TAP_BACKOFF_MAX_MS 2000
/* a connect, or memcached's answer to `watch`, slower than this: try again */
#define TAP_CONNECT_TIMEOUT_MS 5000
#define TAP_TICK_MS 250
/* the watch waits this long at most for the first stats sample (the
 * baseline of memcached's drop counters) */
#define TAP_FIRST_SAMPLE_WAIT_MS 2000

/* Why the tap stopped for good (it does not reconnect after these). */
#define TAP_STOPS(X) \
    X(NONE, "running") \
    X(REFUSED, "memcached refused the watch") \
    X(TOO_OLD, "memcached does not print size= on its watch lines (too old for slabtap watch)")

enum tap_stop {
#define TAP_STOP_ENUM(id, text) TAP_STOP_##id,
    TAP_STOPS(TAP_STOP_ENUM)
#undef TAP_STOP_ENUM
        TAP_STOP__COUNT
};
const char *tap_stop_text(enum tap_stop s);

enum tap_state {
    TAP_IDLE,       /* not opened, or closed */
    TAP_CONNECTING, /* connect outstanding */
    TAP_ASKING,     /* `watch ...` sent, waiting for OK */
    TAP_STREAMING,  /* lines arrive */
    TAP_DRAINING,   /* the socket closes after a failure */
    TAP_BACKOFF,    /* waiting to reconnect */
    TAP_STOPPED,    /* refused (stop says why): no reconnect */
    TAP_CLOSING,    /* tap_close called */
};

struct tap_config {
    const struct addr_list *upstream; /* the caller's, kept: read at every connect */
    unsigned watch;                   /* TAP_WATCH_* */
    enum keyfmt_mode key_mode;        /* --keys */
    uint32_t sample_keys;             /* --sample-keys 1/N (core/sample.h) */
    bool sample_aggregate;            /* a key not kept still goes to the writer's aggregates */
    struct recorder *rec;
    /* memcached refused (or cannot serve) the watch: why, and memcached's
     * own line when it sent one (else ""). Loop thread; may call tap_close. */
    void (*on_stop)(void *ud, enum tap_stop why, const char *words);
    /* the watcher is back after a gap (from_ns..to_ns, no watcher
     * connected): restart is true when memcached restarted meanwhile (its
     * pid changed or its uptime went back), false for a network blip.
     * NULL: nothing to do beyond the log line and run_meta watch_gaps. */
    void (*on_gap)(void *ud, bool restart, int64_t from_ns, int64_t to_ns);
    void *ud;
    struct metrics *m; /* writes_recorded is counted here (NULL: not counted) */
};

struct tap_counters {
    uint64_t lines; /* log lines (not memcached's OK / refusal to `watch`) */
    uint64_t writes, evictions, deletions, other, errors;
    uint64_t rows_sampled_out; /* --sample-keys: writes counted in the aggregates only */
    uint64_t skipped_reported; /* the sum of skipped=N lines */
    uint64_t lost_counted;     /* counted lost (memcached_dropped), all together */
    uint64_t connects, reconnects, disconnects, restarts, gaps;
    uint64_t paused; /* times reading stopped for a full recorder */
};

/* memcached's drop counters as last seen (a memcached restart resets them) */
struct tap_drops {
    int64_t pid;
    int64_t uptime;
    uint64_t worker_dropped, watcher_skipped, watchers;
    bool have;
};

struct tap {
    /* public, read-only */
    enum tap_state state;
    enum tap_stop stop;
    bool connected; /* streaming */
    bool deletions; /* memcached accepted `deletions` */
    struct tap_counters c;
    char peer[ADDR_TEXT_MAX];
    char version[STATS_VERSION_MAX]; /* memcached's, from the samples ("" until one) */

    /* private */
    struct tap_config cfg;
    uv_loop_t *loop;
    union dial_stream sock;
    uv_connect_t connect_req;
    uv_write_t write_req[2]; /* `watch ...`, and again without deletions */
    uv_timer_t tick, backoff_timer;
    unsigned open_handles;
    bool sock_open, reading, write_pending, asked_without_deletions;
    size_t upstream_at, addr_tried;
    unsigned backoff_ms;
    uint64_t attempt_ns;
    char req[64];
    struct mclog_parser parser;
    struct mclog_event ev;
    uint64_t seq;       /* writes: seq of the last write row */
    uint64_t event_seq; /* item_events: seq of the last event row */
    struct log_throttle bad_line;
    bool failing_logged; /* "cannot watch memcached yet", once */
    bool first_sample;   /* a stats sample came (the watch waits for one) */
    /* drops: the baseline (the sample when the watch began) and now */
    struct tap_drops base, last;
    bool base_set;
    uint64_t worker_rise, watcher_rise, skipped_since_base; /* this memcached process */
    uint64_t lost_before;    /* counted for earlier memcached processes */
    uint64_t lost_at_sample; /* lost_counted at the last sample (episodes) */
    bool in_episode;
    uint64_t episode_lost0;
    int64_t episode_from_ns;
    uint64_t episodes;
    bool worker_rose, watcher_rose;        /* in this episode */
    int64_t worker_logbuf, watcher_logbuf; /* from stats settings (0: unknown) */
    /* gaps: while no watcher was connected */
    bool in_gap;
    int64_t gap_from_ns, gap_to_ns;
    int64_t gap_pid, gap_uptime; /* memcached's, from the last sample before the gap */
    bool gap_pending;            /* reconnected; the next sample says restart or blip */
    char gaps_json[2048];
    size_t gaps_len;
    void (*on_closed)(struct tap *t);
    char rbuf[TAP_READ_BUF];
};

/* Starts connecting once the first stats sample came (tap_sample; at the
 * latest after TAP_FIRST_SAMPLE_WAIT_MS): the drop counters' baseline is
 * from before the watch. A memcached not there yet is retried with the
 * backoff. 0, or a libuv error (<0) and nothing is open. */
int tap_open(struct tap *t, uv_loop_t *loop, const struct tap_config *cfg);
/* Every stats sample (the app's poller): memcached's drop counters, its
 * pid and uptime (restart or blip), its version and logbuf settings. */
void tap_sample(struct tap *t, const struct stats_sample *s);
/* The recorder filled or drained: stop or resume reading. */
void tap_update_reading(struct tap *t);
/* Stops: the bytes read so far are rows already; records the drop and gap
 * run_meta entries; on_closed (may be NULL) once every handle is closed. */
void tap_close(struct tap *t, void (*on_closed)(struct tap *t));

#endif
