/* admin_http: a small HTTP/1.1 server on libuv and http-parser for the admin
 * endpoint (/health, /metrics, /api/...).
 *
 * Owns: the listening socket, its connections, request parsing and bounds,
 * routing by {method, path}, response framing, keep-alive and pipelining.
 * Knows nothing about memcached: what each path does is the caller's route
 * table.
 * Must never: block or stall the loop (every write is uv_write, handlers run
 * synchronously and must not block either), buffer without a bound, let one
 * client hold a connection slot forever, or free memory anywhere but in a
 * close (or write-completion) callback.
 *
 * Bounds, all per connection unless noted (why: the admin port is reachable
 * by any local process, and a hostile one must not grow us):
 *   - request line + headers: ADMIN_HTTP_MAX_HEAD_BYTES, else 413 and close;
 *   - headers: ADMIN_HTTP_MAX_HEADERS, else 413 and close;
 *   - body: ADMIN_HTTP_MAX_BODY_BYTES (Content-Length or chunked), else 413;
 *   - a response body: ADMIN_HTTP_MAX_RESPONSE_BYTES, else the handler's
 *     answer becomes 500;
 *   - unsent response bytes: above ADMIN_HTTP_WRITE_HIGH_WATER the server
 *     stops reading (and answering) that client's requests until its writes
 *     drain, so a client that does not read is held to one response and then
 *     closed by the deadline; ADMIN_HTTP_MAX_PENDING_WRITE_BYTES is the hard
 *     backstop (close at once) should that ever be exceeded;
 *   - time: every request must arrive whole, and every queued response must
 *     be taken, within deadline_ms of the previous progress, else close --
 *     trickling bytes does not extend the deadline (slowloris);
 *   - connections: max_connections at once (server-wide); a new one takes
 *     the place of the oldest connection not sending an answer (a slowloris
 *     cannot hold every slot), else it is accepted and closed at once, so
 *     the backlog never fills.
 * Worst case memory: max_connections * (~25 KiB + body + one response).
 *
 * Logs (core/log.h) what a client did wrong with its address as the peer --
 * 400, 413, a request or response stuck past the deadline, a refusal over
 * the cap, a response it would not take -- at most one line a second per
 * reason with the count held back; a keep-alive connection expiring idle
 * is only a debug line. open's failures are returned, not logged.
 */
#ifndef SLABTAP_ADMIN_HTTP_H
#define SLABTAP_ADMIN_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/log.h"

#define ADMIN_HTTP_MAX_HEAD_BYTES (8 * 1024)
#define ADMIN_HTTP_MAX_HEADERS 64
#define ADMIN_HTTP_MAX_BODY_BYTES (64 * 1024)
#define ADMIN_HTTP_MAX_RESPONSE_BYTES (4 * 1024 * 1024)
#define ADMIN_HTTP_WRITE_HIGH_WATER (64 * 1024)
/* Must exceed one whole response, or a big /metrics to a reader whose
 * socket buffer is smaller would be cut off. */
#define ADMIN_HTTP_MAX_PENDING_WRITE_BYTES (ADMIN_HTTP_MAX_RESPONSE_BYTES + 1024 * 1024)
#define ADMIN_HTTP_READ_CHUNK (16 * 1024)
#define ADMIN_HTTP_DEADLINE_MS 10000
#define ADMIN_HTTP_MAX_CONNECTIONS 16
#define ADMIN_HTTP_CONTENT_TYPE_MAX 128
#define ADMIN_HTTP_PARAM_NAME_MAX 64
/* headers a handler adds (admin_http_add_header), all together */
#define ADMIN_HTTP_EXTRA_HEADERS_MAX 512

/* X(name, text): one list, so the enum and its text table cannot drift. */
#define ADMIN_HTTP_ERRORS(X) \
    X(ADMIN_HTTP_OK, "no error") \
    X(ADMIN_HTTP_ERR_ARGS, "invalid argument") \
    X(ADMIN_HTTP_ERR_ROUTE, "invalid route (needs a method, a path starting with '/', a handler)") \
    X(ADMIN_HTTP_ERR_INIT, "could not create the listening socket") \
    X(ADMIN_HTTP_ERR_BIND, "could not bind the admin address") \
    X(ADMIN_HTTP_ERR_LISTEN, "could not listen on the admin address") \
    X(ADMIN_HTTP_ERR_NO_PARAM, "query parameter absent") \
    X(ADMIN_HTTP_ERR_PARAM_TOO_LONG, "query parameter does not fit the buffer") \
    X(ADMIN_HTTP_ERR_PARAM_ESCAPE, "query parameter has a bad or NUL %-escape") \
    X(ADMIN_HTTP_ERR_TOO_LARGE, "response body over ADMIN_HTTP_MAX_RESPONSE_BYTES") \
    X(ADMIN_HTTP_ERR_CONTENT_TYPE, "content type empty, too long or not one header line") \
    X(ADMIN_HTTP_ERR_HEADER, "header: name not a token, value not one line, or no room") \
    X(ADMIN_HTTP_ERR_NOMEM, "out of memory")

enum admin_http_err {
#define ADMIN_HTTP_ERR_ENUM(name, text) name,
    ADMIN_HTTP_ERRORS(ADMIN_HTTP_ERR_ENUM)
#undef ADMIN_HTTP_ERR_ENUM
        ADMIN_HTTP_ERR__COUNT
};

const char *admin_http_strerror(enum admin_http_err err);

/* A parsed request, valid only during the handler call. Strings are
 * NUL-terminated. */
struct admin_http_request {
    const char *method; /* "GET", "POST", ... (HEAD runs the GET handler) */
    const char *path;   /* without query or fragment, not percent-decoded */
    const char *query;  /* raw, without '?'; "" if none */
    const char *body;   /* NUL-terminated for convenience; may hold NULs */
    size_t body_len;
    void *ud;         /* the ud given to admin_http_open */
    const void *priv; /* the connection; for admin_http_header only */
};

/* Opaque: a handler answers only through the functions below. */
struct admin_http_response;

typedef void (*admin_http_handler)(const struct admin_http_request *req,
                                   struct admin_http_response *resp);

struct admin_http_route {
    const char *method; /* "GET", "POST", ... */
    const char *path;   /* exact match, e.g. "/api/phase" */
    admin_http_handler handler;
};

struct admin_http_stats {
    uint64_t accepted; /* connections taken into service */
    uint64_t rejected; /* accepted and closed at once: over max_connections */
    uint64_t evicted;  /* idle or slow connections closed for a new one */
    uint64_t accept_errors;
    uint64_t requests;        /* requests routed (any status) */
    uint64_t bad_requests;    /* 400: http-parser refused the bytes */
    uint64_t too_large;       /* 413: head or body over its bound */
    uint64_t timeouts;        /* connections closed by the deadline */
    uint64_t write_overflows; /* connections closed over the unsent-bytes bound */
};

struct admin_http_conn;

struct admin_http {
    uv_tcp_t listener;
    uv_tcp_t spare; /* closes a refused connection when malloc fails */
    uv_loop_t *loop;
    const struct admin_http_route *routes; /* borrowed: must outlive the server */
    size_t nroutes;
    void *ud;
    /* Settable after admin_http_open; read each time a deadline is armed
     * and each time a connection arrives. */
    uint64_t deadline_ms;   /* default ADMIN_HTTP_DEADLINE_MS */
    size_t max_connections; /* default ADMIN_HTTP_MAX_CONNECTIONS */
    struct admin_http_stats stats;
    int uv_err; /* libuv code behind the last open failure */
    /* private */
    struct admin_http_conn *conns;
    size_t nconns;
    unsigned rejecting; /* refused handles still closing */
    int spare_busy;
    int accept_pending; /* libuv holds a connection we could not take yet */
    int listener_open;
    int closing;
    int closed;
    uint64_t next_later; /* the last admin_http_defer token */
    void (*on_closed)(struct admin_http *s);
    struct {
        struct log_throttle accept, rejected, bad_request, too_large, timeout, overflow, internal;
    } throttle;
};

/* Starts listening on addr. Returns ADMIN_HTTP_OK or an enum admin_http_err
 * value (uv_err holds libuv's reason). Whatever it returns, call
 * admin_http_close exactly once afterwards; s must stay valid until
 * on_closed runs. routes are borrowed, not copied. */
int admin_http_open(struct admin_http *s, uv_loop_t *loop, const struct sockaddr *addr,
                    const struct admin_http_route *routes, size_t nroutes, void *ud);
/* Stops listening, drops every connection (pending responses are lost) and
 * calls on_closed (may be NULL) from a close callback once every handle is
 * closed, except if admin_http_open failed before it created any handle:
 * then on_closed runs before admin_http_close returns. */
void admin_http_close(struct admin_http *s, void (*on_closed)(struct admin_http *s));

/* The first value of query parameter name, '+' and %XX decoded, into buf
 * (NUL-terminated). Returns its length, or -ADMIN_HTTP_ERR_NO_PARAM,
 * -ADMIN_HTTP_ERR_PARAM_TOO_LONG (needs more than buflen-1 bytes) or
 * -ADMIN_HTTP_ERR_PARAM_ESCAPE (bad %-escape, or %00). */
int admin_http_query_param(const struct admin_http_request *req, const char *name, char *buf,
                           size_t buflen);
/* Value of the first header called name (case-insensitive), or NULL. */
const char *admin_http_header(const struct admin_http_request *req, const char *name);

/* The whole answer at once: replaces status, content type and body.
 * Returns an enum admin_http_err value. */
int admin_http_respond(struct admin_http_response *resp, int status, const char *content_type,
                       const void *body, size_t len);
/* For a body built piece by piece: status and content type only (the
 * defaults are 200 and "text/plain; charset=utf-8"). */
int admin_http_set_status(struct admin_http_response *resp, int status, const char *content_type);
/* One more response header (ETag, Content-Security-Policy, ...), kept
 * whatever the handler answers next, dropped if the server answers 500 for
 * it. A Cache-Control replaces the default "no-store". Returns
 * ADMIN_HTTP_ERR_HEADER for a name that is not a token, a value with CR or
 * LF, or no room left; the response is unchanged then. A 304 is sent
 * without a body or Content-Length. */
int admin_http_add_header(struct admin_http_response *resp, const char *name, const char *value);
/* Append to the body. Past ADMIN_HTTP_MAX_RESPONSE_BYTES they return
 * ADMIN_HTTP_ERR_TOO_LARGE and the client gets a 500 instead. */
int admin_http_body_append(struct admin_http_response *resp, const void *data, size_t len);
int admin_http_body_printf(struct admin_http_response *resp, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* admin_http_body_append in the shape of prom_write_fn (ctx is the
 * response; 0 ok, -1 refused), so prom.c can write a body directly. */
int admin_http_body_sink(void *resp, const char *data, size_t len);

/* Answering later (an answer another thread computes): the handler calls
 * admin_http_defer and returns without answering; the connection then
 * reads and answers nothing else (pipelined requests wait, in order)
 * until admin_http_answer_later(token) on the loop thread. The deadline
 * still runs: a connection whose answer takes longer than deadline_ms is
 * closed, and so is one the client closes or that is evicted; answering
 * it later then finds nothing (ADMIN_HTTP_ERR_ARGS) and is harmless.
 * Returns the token, or 0 when the request cannot be deferred. */
uint64_t admin_http_defer(struct admin_http_response *resp);
/* The deferred request's whole answer, as admin_http_respond. */
int admin_http_answer_later(struct admin_http *s, uint64_t token, int status,
                            const char *content_type, const void *body, size_t len);

#endif
