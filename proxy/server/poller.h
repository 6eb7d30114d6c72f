/* poller: slabtap's side connection to memcached. Every interval it sends
 * `stats`, `stats items` and `stats slabs` pipelined, in that order (plus
 * `stats settings` and `version` when due), parses the replies with
 * stats_parse and hands each complete stats_sample to a callback. Every
 * class of a delivered sample has its `stats slabs` half (issue 18: see
 * "Why items before slabs" in stats_parse.h); one that memcached named in
 * `stats items` only is left out by the parser and counted in
 * classes_partial, with one warning per poller.
 *
 * Owns: its own stream, TCP or a unix socket (never a client's
 * connection), two timers, the read buffer and the sample being filled.
 * Must never: deliver a sample that is half of one (a sample in flight
 * when the connection dies is discarded), queue samples behind a slow
 * memcached (a tick with a sample outstanding is skipped and counted),
 * block the loop, free memory
 * anywhere but a close callback, or log a line per failed poll: it logs one
 * warning (with the reason) when polling starts failing and one info line
 * when a sample arrives again, saying how long it was down and how many
 * polls failed, both with memcached's address as the peer.
 *
 * Runs on one libuv loop thread; every function must be called from it.
 *
 * Settings and version are requested on the first sample of each
 * connection, on poller_sample_now, after a settings fetch that differed
 * from the previous one (to follow a change until it settles), and every
 * POLLER_SETTINGS_EVERY_MS otherwise (how a change is noticed at all).
 * Between fetches every sample carries the last fetched settings with
 * settings_fresh false.
 *
 * Reconnects: on any error or EOF the connection is closed, `connected`
 * goes false, the failure is counted, and a reconnect follows after a
 * backoff of POLLER_BACKOFF_MIN_MS doubling to POLLER_BACKOFF_MAX_MS; the
 * backoff resets after the first sample of a new connection. No samples
 * are produced while down, so the gap is visible in the samples' times and
 * in stats_sample.connection. */
#ifndef SLABTAP_POLLER_H
#define SLABTAP_POLLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "core/addr.h"
#include "core/dial.h"
#include "protocol/stats_parse.h"

#define POLLER_INTERVAL_MIN_MS 50
#define POLLER_BACKOFF_MIN_MS 50
#define POLLER_BACKOFF_MAX_MS 1000
/* A connect or a reply slower than this means memcached is wedged (or a
 * route is black-holed); a real stats batch takes well under 10 ms. */
#define POLLER_CONNECT_TIMEOUT_MS 5000
#define POLLER_REPLY_TIMEOUT_MS 10000
#define POLLER_SETTINGS_EVERY_MS 10000
/* One read's worth; the parser copies what it needs, so this never grows.
 * A 63-class batch is ~40 KiB and arrives in a few reads. */
#define POLLER_READ_BUF 16384

/* X(name, text): one list for the enum and its text table. */
#define POLLER_ERRORS(X) \
    X(POLLER_E_NONE, "no error") \
    X(POLLER_E_CONNECT, "connect to memcached failed") \
    X(POLLER_E_CONNECT_TIMEOUT, "connect to memcached timed out") \
    X(POLLER_E_EOF, "memcached closed the connection") \
    X(POLLER_E_READ, "read from memcached failed") \
    X(POLLER_E_WRITE, "write to memcached failed") \
    X(POLLER_E_PROTOCOL, "memcached's reply could not be parsed") \
    X(POLLER_E_UNSOLICITED, "memcached sent bytes no request asked for") \
    X(POLLER_E_REPLY_TIMEOUT, "memcached did not answer in time") \
    X(POLLER_E_REFUSED, "memcached answered a stats command with an error line") \
    X(POLLER_E_SETUP, "could not set up the socket or timer")

enum poller_error {
#define POLLER_ERROR_ENUM(name, text) name,
    POLLER_ERRORS(POLLER_ERROR_ENUM)
#undef POLLER_ERROR_ENUM
        POLLER_E_COUNT
};

const char *poller_error_str(enum poller_error e);

enum poller_state {
    POLLER_IDLE,       /* not opened, or fully closed */
    POLLER_CONNECTING, /* uv_tcp_connect outstanding */
    POLLER_CONNECTED,  /* connected; a batch may be in flight */
    POLLER_DRAINING,   /* the socket is closing after a failure */
    POLLER_BACKOFF,    /* waiting to reconnect */
    POLLER_CLOSING,    /* poller_close called; waiting for close callbacks */
};

struct poller;
/* The sample is the poller's and is reused: copy what is needed (e.g. with
 * stats_sample_copy) before returning. The callback may call
 * poller_sample_now or poller_close. */
typedef void (*poller_sample_cb)(void *ud, const struct stats_sample *s);

struct poller_counters {
    uint64_t samples;                /* delivered to the callback */
    uint64_t connects;               /* connections established */
    uint64_t reconnects;             /* connections established after a lost or failed one */
    uint64_t connect_failures;       /* attempts that failed or timed out */
    uint64_t disconnects;            /* established connections lost (error or EOF) */
    uint64_t samples_discarded;      /* in flight when the connection died */
    uint64_t samples_refused;        /* memcached answered an error line */
    uint64_t ticks_skipped;          /* tick fired while a sample was outstanding */
    uint64_t requested;              /* poller_sample_now calls */
    uint64_t classes_partial;        /* classes left out of delivered samples: in
                                        `stats items`, not in `stats slabs` */
    uint64_t errors[POLLER_E_COUNT]; /* failures by reason */
};

struct poller {
    /* public, read-only */
    bool connected;
    enum poller_state state;
    enum poller_error last_error;
    int last_uv_error; /* libuv code of the last failure, 0 if none; see uv_strerror */
    struct poller_counters counters; /* reconnects, disconnects, skips, ... */

    /* private */
    uv_loop_t *loop;
    union dial_stream tcp; /* TCP or a unix socket */
    uv_connect_t connect_req;
    uv_write_t write_req;
    uv_timer_t tick;                  /* every interval_ms, from open to close */
    uv_timer_t backoff;               /* one-shot: reconnect */
    const struct addr_list *upstream; /* the caller's: read at every connect */
    size_t upstream_at;               /* the address tried next */
    size_t addr_tried;                /* addresses failed in this round */
    bool next_addr_now;               /* closing to try the next address */
    unsigned interval_ms;
    unsigned backoff_ms;
    poller_sample_cb on_sample;
    void *ud;
    void (*on_closed)(struct poller *);
    unsigned open_handles; /* embedded handles still to be closed */
    bool tcp_open;         /* tcp initialised and not yet closed */
    bool in_flight;        /* a batch was sent and is not complete */
    bool write_pending;    /* write_req in use */
    bool want_now;         /* poller_sample_now pending */
    bool batch_requested;  /* the batch in flight answers poller_sample_now */
    bool want_settings;
    bool fresh_connection; /* no sample yet on this connection */
    uint64_t attempt_ns;   /* connect or batch start, for the timeouts */
    uint64_t settings_ns;  /* last settings fetch */
    uint64_t connection;   /* 1 for the first connection */
    unsigned batch_what;   /* STATS_R_* of the batch in flight */
    size_t cmd_len;
    char cmd[STATS_BATCH_CMD_MAX]; /* must outlive the write */
    struct stats_parse_batch batch;
    struct stats_sample sample;
    struct stats_kv_list prev_settings; /* last fetched, to detect a change */
    bool have_prev_settings;
    bool in_callback;         /* on_sample running: the sample must not be touched */
    char peer[ADDR_TEXT_MAX]; /* upstream as text, for log lines */
    bool failing;             /* polls fail since failing_since_ns (logged once) */
    uint64_t failing_since_ns;
    uint64_t failed_polls; /* failures since polling started failing */
    bool warned_partial;   /* the classes_partial warning was logged */
    char rbuf[POLLER_READ_BUF];
};

/* Starts connecting at once; a failed connect is not an error here, it is
 * retried with the backoff. interval_ms below POLLER_INTERVAL_MIN_MS is
 * raised to it. upstream (the caller's, never empty at open, kept and read at
 * every connect: a failed connect moves to its next address for the next
 * attempt; the proxy resolves a name again) must outlive p. Returns 0, or a
 * negative uv error code (UV_EINVAL for bad arguments) and then nothing is
 * open, except if the second uv_timer_init failed (libuv on Unix never
 * does): the first timer is then closing and p must outlive one loop run. */
int poller_open(struct poller *p, uv_loop_t *loop, const struct addr_list *upstream,
                unsigned interval_ms, poller_sample_cb cb, void *ud);
/* Asks for one extra sample as soon as possible: now if idle, right after
 * the outstanding one otherwise, after reconnecting if down. It includes
 * settings and version and has `requested` set. Several calls before it is
 * sent make one sample. */
void poller_sample_now(struct poller *p);
/* Stops everything; a sample in flight is discarded. on_closed (may be
 * NULL) runs once every handle is closed and the memory is freed; only then
 * may p be freed or reused. */
void poller_close(struct poller *p, void (*on_closed)(struct poller *));

#endif
