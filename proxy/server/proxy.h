/* proxy: the memcached proxy on libuv -- client connections multiplexed onto
 * a small pool of upstream connections (or, with upstream_conns 0, one
 * memcached connection per client), forwarding bytes unchanged both ways,
 * pairing every answer with its request in order, and handing finished
 * writes to the recorder.
 *
 * Owns the listener, every client and upstream connection and the
 * read/write buffer pool. Must never put part of a request on a shared
 * upstream connection (requests split across reads are assembled first),
 * nor a request memcached would close the connection on.
 * Must never block the loop, copy a value, or answer in memcached's place
 * except with SERVER_ERROR when memcached cannot be reached. Every message
 * about a connection names its peer (the client, or memcached for upstream
 * trouble), and what a peer can repeat is throttled. */
#ifndef SLABTAP_PROXY_H
#define SLABTAP_PROXY_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/addr.h"
#include "core/dial.h"
#include "core/keyfmt.h"
#include "core/log.h"
#include "core/pbuf.h"
#include "model/slab_model.h"
#include "record/recorder.h"
#include "server/metrics.h"

struct conn;
struct upconn;
struct shadow_set;

struct proxy_config {
    struct addr_list listen_addrs;   /* the first that binds (an IPv6 wildcard
                                        first: dual-stack) */
    struct addr_list upstream_addrs; /* tried in turn (addr_resolve) */
    char upstream_text[256];
    enum keyfmt_mode key_mode;
    size_t max_pending;        /* requests in flight per connection before
                                  the proxy stops reading that client */
    size_t write_backlog_max;  /* bytes queued to one socket before the
                                  proxy stops reading its source */
    unsigned drain_timeout_ms; /* shutdown: wait this long for answers */
    unsigned backoff_min_ms, backoff_max_ms;
    unsigned upstream_conns; /* pooled upstream connections; 0: one per client */
    size_t max_request;      /* largest request assembled for a shared upstream
                                  (bigger ones move the client to its own) */
    size_t max_assembly;     /* bytes of partial requests held at once, all
                                  clients together (beyond: own connection) */
    size_t max_memory;       /* buffers of the whole process (0: unbounded);
                                  see proxy_memory_check */
    size_t big_answer;       /* a client on a shared upstream that gets an
                                answer this big moves to a private one for
                                its next requests (0: never) */
    uint64_t max_conns;      /* clients at once (0: what the fd limit allows);
                                  beyond, memcached's refusal line and a close */
    uint32_t sample_keys;    /* --sample-keys 1/N: rows of one key in N (core/sample.h);
                                0, 1: every key */
    bool record_reads;       /* --reads on: a row per key a read asks for
                                (server/readrec.h) */
    bool sample_aggregate;   /* the writes of keys not kept still go to the
                                writer (rec_row.sampled_out) for its aggregates */
};

/* 1024 requests keep memcached busy; more only adds what one client can
 * pin (a pending entry is ~420 bytes, its answer up to a value) and how
 * long the others on a shared connection wait behind it */
#define PROXY_DEFAULT_MAX_PENDING 1024
#define PROXY_DEFAULT_WRITE_BACKLOG (8u * 1024 * 1024)
#define PROXY_DEFAULT_DRAIN_MS 5000
#define PROXY_DEFAULT_UPSTREAM_CONNS 2
#define PROXY_UPSTREAM_CONNS_MAX 64
/* memcached's default -I (1 MiB) plus a request line */
#define PROXY_DEFAULT_MAX_REQUEST (1024u * 1024 + 4096)
#define PROXY_DEFAULT_MAX_ASSEMBLY (64u * 1024 * 1024)
/* a sidecar's share: room for 30 clients at their backlog bound */
#define PROXY_DEFAULT_MAX_MEMORY (256u * 1024 * 1024)
/* fds kept for all but clients: stdio, loop, listeners, the admin endpoint
 * and its connections, the database and its journal, the stats connection */
#define PROXY_FD_RESERVE 48
/* a client whose unread answers pass this many times write_backlog_max and
 * that has taken none of them for PROXY_STALL_MS is disconnected: on a
 * shared upstream nobody may wait for it. One that reads is never cut for
 * the size of its answers (the whole process is bounded by max_memory). */
#define PROXY_SLOW_CLIENT_FACTOR 4
#define PROXY_STALL_MS 1000
/* an answer this big keeps every other client of a shared upstream
 * waiting behind it for milliseconds: its client moves for the next ones */
#define PROXY_DEFAULT_BIG_ANSWER (4u * 1024 * 1024)

/* Reads are counted per second and command; flushed as REC_ROW_GETS rows. */
struct proxy_get_counter {
    uint64_t requests, keys, hits, misses, bytes;
};

struct proxy {
    uv_loop_t *loop;
    union dial_stream listener;
    int listen_family;               /* AF_UNIX: clients are pipes */
    char listen_text[ADDR_TEXT_MAX]; /* the address bound ("[::]:40123") */
    uv_timer_t drain_timer;
    uv_timer_t check_timer; /* while a client may be stalling or memory is
                               over max_memory: looks again (proxy_check) */
    struct proxy_config cfg;
    struct metrics m;
    struct recorder *rec;
    struct pbuf_pool pool;
    struct conn *conns;       /* doubly linked list of live connections */
    struct upconn *ups;       /* every upstream connection, pooled and private */
    struct upconn **pool_ups; /* the pooled ones (cfg.upstream_conns) */
    struct upconn *dirty;     /* upstreams with requests batched this iteration */
    struct conn *replying;    /* clients with answers collected from one read */
    uv_check_t flusher;       /* sends the batches after the I/O callbacks */
    union dial_stream spare;  /* takes and closes a connection we have no memory for */
    bool spare_busy;
    struct pbuf *mn_buf;     /* "mn\r\n": the barrier's bytes */
    size_t assembly_bytes;   /* reserved by partial requests being assembled */
    size_t pending_bytes;    /* rings of requests waiting for their answers */
    unsigned upstreams_open; /* upstream handles not yet closed */
    uint32_t next_conn_id;
    uint64_t conn_limit; /* proxy_conn_limit: cfg.max_conns and the fd limit */
    uint64_t next_seq;
    uint64_t next_read_seq; /* the last read seq given (server/readrec.h) */
    bool stopping;
    bool stopped;
    bool drain_expired; /* drain_timeout_ms passed: close what still waits */
    bool listener_open;
    bool unix_bound; /* the socket file is ours to remove */
    void (*on_stopped)(struct proxy *px);
    int64_t get_second;
    struct proxy_get_counter gets[MC_CMD_COUNT];
    uint64_t requests_by_cmd[MC_CMD_COUNT];
    const struct slab_ladder *ladder;  /* tags writes with a class; NULL: untagged */
    struct shadow_set *shadows;        /* mirrors of the traffic (server/shadow.h); NULL: none */
    bool all_paused;                   /* paused everything for the recorder */
    bool memory_paused;                /* over cfg.max_memory: no client is read */
    bool answers_paused;               /* ... and answers pin most of it: no
                                          upstream is read either */
    bool shedding;                     /* proxy_memory_check is closing clients */
    bool upstream_up;                  /* at least one upstream answered lately */
    char upstream_peer[ADDR_TEXT_MAX]; /* the upstream address tried last, for logs */
    size_t upstream_at;                /* upstream_addrs: the one that answered last */
    uv_getaddrinfo_t resolve_req;      /* a name resolved again after every
                                          address of it failed */
    bool resolving;
    /* One per reason a peer can repeat at any rate: a line a second each,
     * with the count held back (loop thread only). */
    struct {
        struct log_throttle protocol_error, upstream_connect, upstream_lost, unpaired, malformed,
            nomem, accept, slow_client, memory;
    } throttle;
};

/* Binds and listens on cfg->listen_addrs (a unix socket: a stale file
 * nothing answers on is removed first, the socket is made 0660 and removed
 * at proxy_close). 0, or -1 with the reason in err
 * (the caller logs it; proxy_close still has to be called). */
int proxy_open(struct proxy *px, uv_loop_t *loop, const struct proxy_config *cfg,
               struct recorder *rec, char *err, size_t errlen);
/* Stops accepting, stops reading clients, waits (at most drain_timeout_ms)
 * for answers to what was forwarded, records every row, closes every
 * connection, then calls on_stopped. */
void proxy_close(struct proxy *px, void (*on_stopped)(struct proxy *px));
/* A second signal: what still waits for memcached is given up now. */
void proxy_force_stop(struct proxy *px);
/* Tags a write row built by the caller (fields up to ms_mode set, the rest
 * zero) with its slab class and answer, and hands it to the recorder. */
void proxy_record_row(struct proxy *px, struct rec_row *row, const char *answer, size_t answer_len);
/* Keeps the buffers under cfg.max_memory (closes the clients pinning the
 * most unsent answers, pauses reading); cheap when under it. */
void proxy_memory_check(struct proxy *px);
/* Re-evaluates every connection's reading (the recorder filled or drained). */
void proxy_update_reading(void *px);
void proxy_config_defaults(struct proxy_config *cfg);

#endif
