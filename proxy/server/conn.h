/* conn: the two kinds of connection inside the proxy, shared by
 * server/proxy.c (clients, requests) and server/upstream.c (memcached
 * connections, answers). Internal to server/: nothing outside includes it.
 *
 * A client (struct conn) sends every request to one upstream (struct
 * upconn): a pooled one it shares with other clients, or a private one
 * (per-client mode, and clients that asked for something that cannot be
 * shared: watch, lru_crawler metadump, stats detail dump, the binary
 * protocol, a request too big to assemble). An upstream keeps one FIFO of
 * the requests it forwarded, each naming its client, so answers go back to
 * the right client in each client's order.
 *
 * Owns nothing by itself. Must never let a pending entry point at a freed
 * client: a client that closes clears its entries first. */
#ifndef SLABTAP_SERVER_CONN_H
#define SLABTAP_SERVER_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/addr.h"
#include "core/pbuf.h"
#include "protocol/mc_parse.h"
#include "protocol/pending.h"
#include "server/proxy.h"

enum up_state { UP_CONNECTING, UP_READY, UP_DOWN };

/* the first line of an answer whose owner is not known yet is held back
 * (at most this many bytes) until it is whole */
#define UP_HELD_MAX (MC_LINE_MAX + 2)

struct upconn {
    struct proxy *px;
    struct upconn *prev, *next; /* px->ups */
    uint32_t id;
    bool shared;        /* in the pool; else private to owner */
    struct conn *owner; /* private: the client (NULL once it left) */
    union dial_stream sock;
    size_t addr_at, addr_tried; /* cfg.upstream_addrs: this attempt's, how many so far */
    uv_timer_t retry;
    uv_connect_t connect_req;
    uv_shutdown_t shutdown_req;
    enum up_state state;
    unsigned open_handles; /* sock (while open) + retry */
    bool sock_open, reading, closing, draining;
    bool backlogged; /* unsent bytes passed write_backlog_max */
    unsigned backoff_ms;
    size_t clients;      /* shared: clients assigned to it */
    struct pending pend; /* forwarded requests, oldest first */
    size_t loud;         /* entries that will get an answer */
    size_t barriers;     /* injected mn not yet answered */
    /* the answer being read */
    struct conn *cur;  /* its client; NULL: bytes are dropped */
    bool cur_resolved; /* its entry is at the head of pend */
    bool in_multi;
    bool stream;       /* watch / binary: bytes pass unparsed */
    bool probing;      /* memcached closed it: connecting again to learn
                          whether on purpose (it answers) or gone (not) */
    uint64_t ready_ms; /* uv_now when it last became ready */
    uint64_t line_t0, unit_t0;
    uint32_t unit_hits;
    uint64_t unit_bytes;
    size_t held_len;
    char held[UP_HELD_MAX];
    struct mc_resp_parser rs;
    /* requests batched this loop iteration */
    struct pwrite *out;
    struct upconn *dirty_next;
    bool dirty;
};

/* A request is assembled from at most this many slices; one that needs
 * more moves its client to a private upstream. Pieces shorter than
 * CONN_ASM_COPY_MAX are copied. */
#define CONN_ASM_SEGS 48
#define CONN_ASM_COPY_MAX 4096

struct asm_seg {
    struct pbuf *b;
    uint32_t off, len;
};

struct conn {
    struct proxy *px;
    struct conn *prev, *next; /* px->conns */
    uint32_t id;
    char peer[ADDR_TEXT_MAX]; /* the client's address, formatted at accept */
    union dial_stream client;
    uv_shutdown_t client_shutdown;
    struct upconn *up; /* where its requests go */
    unsigned open_handles;
    size_t inflight; /* its entries in up->pend */
    bool client_reading, client_eof, closing;
    bool quit;            /* quit (or watch) seen: read no more */
    bool raw;             /* binary protocol: unparsed both ways */
    struct binrec *bin;   /* binary protocol: its writes' recording */
    bool discard_current; /* the request in progress began on a lost upstream */
    bool moving;          /* waiting to move to a private upstream */
    bool stacked;         /* this read had a request whose answer memcached
                             would hold back (see conn_refusal) */
    size_t stack_n;       /* ... how many, since the last that flushes */
    bool data_spanned;    /* this read began inside a data block: memcached
                             reads the rest of it straight from the socket,
                             and sends what it holds once it is in */
    bool go_private;      /* had a big answer on a shared upstream: moves
                             to a private one at its next request */
    size_t answer_bytes;  /* bytes of the answer being sent to it so far */
    uint64_t drained_ms;  /* uv_now when the client last took answer bytes
                             (or connected) */
    struct mc_req_parser rq;
    /* shared upstream: a request split across reads, as slices of the
     * buffers it was read into (large pieces, no copy) or copied into a
     * buffer of its own (small pieces, so a trickle pins no read buffers) */
    struct asm_seg asm_segs[CONN_ASM_SEGS];
    unsigned asm_n;
    size_t asm_len;          /* bytes assembled so far */
    bool asm_tail_own;       /* the last slice's buffer is ours to append to */
    size_t asm_reserved;     /* its share of px->assembly_bytes */
    struct pbuf *deferred;   /* moving: bytes to replay once private;
                                held: whole requests past max_pending */
    bool held;               /* deferred waits for inflight < max_pending */
    bool held_dump;          /* ... and for a metadump's end (inflight 0) */
    struct pwrite *reply;    /* answers collected from one upstream read */
    struct conn *reply_next; /* px->replying */
    bool on_reply_list;
};

/* What a client gets for a request memcached cannot be asked. */
#define PROXY_UPSTREAM_ERROR_LINE "SERVER_ERROR slabtap: upstream memcached unavailable\r\n"

/* --- server/upstream.c ----------------------------------------------------- */

/* A new upstream connection (connecting at once); NULL when out of memory. */
struct upconn *upconn_open(struct proxy *px, bool shared, struct conn *owner);
/* Drops the connection and reconnects (memcached broke the protocol, or
 * the stream cannot be kept in step): what waits gets SERVER_ERROR. */
void upconn_fail(struct upconn *up, const char *why);
/* Closes it; what it still waits for is failed with "no_answer". */
void upconn_close(struct upconn *up);
/* Queues len bytes of b at off for this iteration's batch. false: no memory. */
bool upconn_send(struct upconn *up, struct pbuf *b, size_t off, size_t len);
/* A slot for a forwarded request at the tail of the FIFO (NULL: no memory). */
struct pending_entry *upconn_push(struct upconn *up, struct conn *c);
/* An answer of slabtap's own for c, after every answer queued before it. */
void upconn_push_local(struct upconn *up, struct conn *c, const char *answer);
/* The answers to c's last n requests waiting here are read and dropped
 * (memcached drops them direct); their rows stay. */
void upconn_mute_tail(struct upconn *up, struct conn *c, size_t n);
/* Sends slabtap's own `mn` here (the caller is at a request boundary). */
void upconn_push_barrier(struct upconn *up);
/* A meta-quiet request without O/k is the last thing sent and next (NULL:
 * a request not parsed yet) is not an mn: a barrier must come between. */
bool upconn_needs_split(struct upconn *up, const struct mc_request *next);
/* Sends every batched write (the flusher, and before a private upstream
 * shuts its write side). */
void upconn_flush(struct upconn *up);
void upconn_flush_all(struct proxy *px);
/* Starts or stops reading memcached as the recorder and the clients allow. */
void upconn_update_reading(struct upconn *up);
/* The client leaves: its entries stay (memcached will answer them; the rows
 * are still written) but its answers are dropped. */
void upconn_forget_client(struct upconn *up, struct conn *c);
/* Private upstream of a client that half-closed: finish, then close. */
void upconn_shutdown_write(struct upconn *up);

/* --- server/proxy.c, called by upstream.c ------------------------------------ */

/* The upstream of c connected, reconnected or went down (it retries). */
void conn_upstream_ready(struct conn *c);
/* memcached answered c's watch: streaming (OK) or refused (an error). */
void conn_watch_answered(struct conn *c, bool streaming);
/* The private upstream of c went away for good (quit, EOF, shutdown). */
void conn_upstream_gone(struct conn *c);
/* len bytes of b at off are part of an answer to c. */
void conn_reply(struct conn *c, struct pbuf *b, size_t off, size_t len);
/* Inline bytes for c (SERVER_ERROR lines, held lines). */
void conn_reply_copy(struct conn *c, const char *data, size_t len);
/* Sends what conn_reply collected for every client since the last call. */
void conn_reply_flush_all(struct proxy *px);
/* One of c's entries left the FIFO. */
void conn_entry_done(struct conn *c);
void conn_update_reading(struct conn *c);
void conn_close(struct conn *c, bool graceful);
/* Recording, for entries whose client may be gone. */
void proxy_record(struct proxy *px, const struct pending_entry *e, const char *answer,
                  size_t answer_len, int64_t latency_ns);
void proxy_count_read(struct proxy *px, const struct pending_entry *e, const struct mc_line *l,
                      uint32_t hits, uint64_t bytes);
bool proxy_cmd_is_read(enum mc_cmd cmd);
void proxy_maybe_stopped(struct proxy *px);
/* After any read: hands staged rows to the recorder, pauses everything if
 * its queue is full. */
void proxy_after_read(struct proxy *px);

#endif
