/* admin_http: HTTP/1.1 admin server on libuv + http-parser.
 * Owns the admin connections from accept to close and every byte they carry.
 * Must never block the loop, hold a byte beyond the bounds in admin_http.h,
 * or free a connection anywhere but in its last close callback (write and
 * shutdown callbacks still run against it until then). */
#include "server/admin_http.h"

#include <http_parser.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/addr.h"
#include "core/buf.h"

#define ADMIN_HTTP_BACKLOG 64
/* status line + the headers we write; the longest is ~420 bytes with a
 * full Content-Type and Allow */
#define ADMIN_HTTP_RESPONSE_HEAD_MAX (512 + ADMIN_HTTP_EXTRA_HEADERS_MAX)
#define ADMIN_HTTP_ALLOW_MAX 128
#define ADMIN_HTTP_DEFAULT_CONTENT_TYPE "text/plain; charset=utf-8"
#define ADMIN_HTTP_NO_VALUE UINT16_MAX

/* Header offsets into conn->head are 16-bit. */
_Static_assert(ADMIN_HTTP_MAX_HEAD_BYTES < UINT16_MAX, "head offsets are uint16_t");
_Static_assert(ADMIN_HTTP_MAX_PENDING_WRITE_BYTES >
                   ADMIN_HTTP_MAX_RESPONSE_BYTES + ADMIN_HTTP_WRITE_HIGH_WATER,
               "one whole response must fit under the pending-write bound");

enum admin_http_phase {
    ADMIN_HTTP_PHASE_HEAD, /* between requests or inside a request's head */
    ADMIN_HTTP_PHASE_BODY,
    ADMIN_HTTP_PHASE_DONE, /* parser paused on a complete request */
};

/* Which http-parser data callback ran last: a run of one kind of callback
 * is one string split across reads. */
enum admin_http_last {
    ADMIN_HTTP_LAST_NONE,
    ADMIN_HTTP_LAST_URL,
    ADMIN_HTTP_LAST_FIELD,
    ADMIN_HTTP_LAST_VALUE
};

struct admin_http_header {
    uint16_t name;  /* offsets into conn->head, NUL-terminated strings */
    uint16_t value; /* ADMIN_HTTP_NO_VALUE: empty */
};

struct admin_http_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_shutdown_t shutdown;
    struct admin_http *server;
    struct admin_http_conn *prev, *next;
    http_parser parser;
    enum admin_http_phase phase;
    enum admin_http_last last;
    int reject;        /* status to answer when a callback stops the parser */
    size_t head_bytes; /* raw bytes of the current head so far */
    char head[ADMIN_HTTP_MAX_HEAD_BYTES + 1]; /* url, then names and values */
    size_t head_len;
    struct admin_http_header hdr[ADMIN_HTTP_MAX_HEADERS];
    size_t nhdr;
    struct buf body; /* grows to ADMIN_HTTP_MAX_BODY_BYTES (+ its NUL) */
    char rbuf[ADMIN_HTTP_READ_CHUNK];
    size_t roff, rlen;        /* rbuf[roff..rlen) not parsed yet (while paused) */
    char peer[ADDR_TEXT_MAX]; /* the client's address, formatted at accept */
    unsigned handles;         /* open libuv handles; the conn is freed at 0 */
    unsigned writes;          /* uv_write requests in flight */
    int reading, paused, finishing, closing, read_eof, shut;
    uint64_t later;                   /* admin_http_defer's token (0: none); paused till then */
    int later_keep_alive, later_head; /* how to send the answer given later */
};

struct admin_http_write {
    uv_write_t req;
    struct admin_http_conn *c;
    char *body; /* owned: freed when the write completes */
    char head[ADMIN_HTTP_RESPONSE_HEAD_MAX];
};

struct admin_http_response {
    int status;
    char content_type[ADMIN_HTTP_CONTENT_TYPE_MAX];
    char extra[ADMIN_HTTP_EXTRA_HEADERS_MAX]; /* admin_http_add_header's lines */
    size_t extra_len;
    int own_cache_control; /* extra holds a Cache-Control: no default */
    struct buf body;       /* up to ADMIN_HTTP_MAX_RESPONSE_BYTES (+ a NUL) */
    int answered;          /* the handler said something */
    int broken;            /* too large or invalid: the client gets a 500 */
    int deferred;          /* admin_http_defer: answered later */
    struct admin_http_conn *conn;
};

static const char *const admin_http_error_text[ADMIN_HTTP_ERR__COUNT] = {
#define ADMIN_HTTP_ERR_TEXT(name, text) [name] = text,
    ADMIN_HTTP_ERRORS(ADMIN_HTTP_ERR_TEXT)
#undef ADMIN_HTTP_ERR_TEXT
};

const char *admin_http_strerror(enum admin_http_err err)
{
    const char *text = "unknown admin_http error";

    if ((unsigned)err < ADMIN_HTTP_ERR__COUNT)
        text = admin_http_error_text[err];
    return text;
}

static void admin_http_conn_feed(struct admin_http_conn *c);
static void admin_http_accept_one(struct admin_http *s);

/* Once per accepted handle, so every line about it names the client. */
static void admin_http_peer_text(uv_tcp_t *h, char *out, size_t len)
{
    struct sockaddr_storage ss;
    int sl = sizeof ss;
    bool ok = uv_tcp_getpeername(h, (struct sockaddr *)&ss, &sl) == 0;
    addr_format(ok ? (const struct sockaddr *)&ss : NULL, out, len);
}

/* ---- lifecycle: server ---------------------------------------------------- */

static void admin_http_maybe_closed(struct admin_http *s)
{
    if (s->closing && !s->closed && !s->listener_open && s->nconns == 0 && s->rejecting == 0) {
        s->closed = 1;
        if (s->on_closed != NULL)
            s->on_closed(s);
    }
}

/* libuv stops polling the listener while it holds a connection we did not
 * uv_accept, so a deferred accept must be retried when resources free up. */
static void admin_http_retry_accept(struct admin_http *s)
{
    if (s->accept_pending && !s->closing) {
        s->accept_pending = 0;
        admin_http_accept_one(s);
    }
}

static void admin_http_on_reject_closed(uv_handle_t *h)
{
    struct admin_http *s = h->data;

    if (h == (uv_handle_t *)&s->spare)
        s->spare_busy = 0;
    else
        free(h);
    s->rejecting--;
    admin_http_retry_accept(s);
    admin_http_maybe_closed(s);
}

/* Accepts and closes at once: refusing by not accepting would leave the
 * connection in libuv's hands and stall the listener for everyone. */
static void admin_http_reject(struct admin_http *s)
{
    uv_tcp_t *h = malloc(sizeof *h);

    if (h == NULL && !s->spare_busy)
        h = &s->spare;
    if (h == NULL || uv_tcp_init(s->loop, h) != 0) {
        if (h != &s->spare)
            free(h);
        s->accept_pending = 1;
    } else {
        char peer[ADDR_TEXT_MAX] = "?";
        s->spare_busy |= h == &s->spare;
        h->data = s;
        s->rejecting++;
        s->stats.rejected++;
        if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)h) == 0)
            admin_http_peer_text(h, peer, sizeof peer);
        if (s->nconns >= s->max_connections)
            log_throttled(&s->throttle.rejected, LOG_LEVEL_WARN, peer,
                          "admin: %zu connections open (the limit); refusing this one", s->nconns);
        else
            log_throttled(&s->throttle.internal, LOG_LEVEL_ERROR, peer,
                          "admin: out of memory for a connection; refusing it");
        uv_close((uv_handle_t *)h, admin_http_on_reject_closed);
    }
}

static int admin_http_routes_valid(const struct admin_http_route *routes, size_t n)
{
    int ok = 1;

    for (size_t i = 0; ok && i < n; i++)
        ok = routes[i].method != NULL && routes[i].method[0] != '\0' && routes[i].path != NULL &&
             routes[i].path[0] == '/' && routes[i].handler != NULL;
    return ok;
}

static void admin_http_on_connection(uv_stream_t *listener, int status)
{
    struct admin_http *s = listener->data;

    if (status < 0) {
        s->stats.accept_errors++;
        log_throttled(&s->throttle.accept, LOG_LEVEL_ERROR, NULL, "admin: accept failed: %s",
                      uv_strerror(status));
    } else {
        admin_http_accept_one(s);
    }
}

int admin_http_open(struct admin_http *s, uv_loop_t *loop, const struct sockaddr *addr,
                    const struct admin_http_route *routes, size_t nroutes, void *ud)
{
    int err = ADMIN_HTTP_OK;

    memset(s, 0, sizeof *s);
    s->loop = loop;
    s->routes = routes;
    s->nroutes = nroutes;
    s->ud = ud;
    s->deadline_ms = ADMIN_HTTP_DEADLINE_MS;
    s->max_connections = ADMIN_HTTP_MAX_CONNECTIONS;
    if (loop == NULL || addr == NULL || (routes == NULL && nroutes > 0))
        err = ADMIN_HTTP_ERR_ARGS;
    else if (!admin_http_routes_valid(routes, nroutes))
        err = ADMIN_HTTP_ERR_ROUTE;
    else if ((s->uv_err = uv_tcp_init(loop, &s->listener)) != 0)
        err = ADMIN_HTTP_ERR_INIT;
    if (err == ADMIN_HTTP_OK) {
        s->listener_open = 1;
        s->listener.data = s;
        if ((s->uv_err = uv_tcp_bind(&s->listener, addr, 0)) != 0)
            err = ADMIN_HTTP_ERR_BIND;
        else if ((s->uv_err = uv_listen((uv_stream_t *)&s->listener, ADMIN_HTTP_BACKLOG,
                                        admin_http_on_connection)) != 0)
            err = ADMIN_HTTP_ERR_LISTEN;
    }
    return err;
}

static void admin_http_on_listener_closed(uv_handle_t *h)
{
    struct admin_http *s = h->data;

    s->listener_open = 0;
    admin_http_maybe_closed(s);
}

static void admin_http_conn_close(struct admin_http_conn *c);

void admin_http_close(struct admin_http *s, void (*on_closed)(struct admin_http *s))
{
    if (!s->closing) {
        s->closing = 1;
        s->on_closed = on_closed;
        if (s->listener_open)
            uv_close((uv_handle_t *)&s->listener, admin_http_on_listener_closed);
        /* conns unlink themselves only in their close callback */
        for (struct admin_http_conn *c = s->conns; c != NULL; c = c->next)
            admin_http_conn_close(c);
        admin_http_maybe_closed(s);
    }
}

/* ---- lifecycle: connection ------------------------------------------------ */

static void admin_http_conn_on_closed(uv_handle_t *h)
{
    struct admin_http_conn *c = h->data;
    struct admin_http *s = c->server;

    if (--c->handles == 0) {
        if (c->prev != NULL)
            c->prev->next = c->next;
        else
            s->conns = c->next;
        if (c->next != NULL)
            c->next->prev = c->prev;
        s->nconns--;
        buf_free(&c->body);
        free(c);
        admin_http_retry_accept(s);
        admin_http_maybe_closed(s);
    }
}

static void admin_http_conn_close(struct admin_http_conn *c)
{
    if (!c->closing) {
        c->closing = 1;
        uv_close((uv_handle_t *)&c->timer, admin_http_conn_on_closed);
        uv_close((uv_handle_t *)&c->tcp, admin_http_conn_on_closed);
    }
}

/* What the deadline cut off: NULL for a keep-alive connection idle between
 * requests or one waiting for the client's FIN after its last answer --
 * both normal -- else what the client failed to do in time. */
static const char *admin_http_stuck(const struct admin_http_conn *c)
{
    if (c->writes > 0)
        return "did not take its response";
    if (c->finishing)
        return NULL;
    if (c->phase != ADMIN_HTTP_PHASE_HEAD || c->head_bytes > 0)
        return "did not send a whole request";
    return NULL;
}

static void admin_http_on_timer(uv_timer_t *t)
{
    struct admin_http_conn *c = t->data;
    struct admin_http *s = c->server;
    const char *stuck = admin_http_stuck(c);

    s->stats.timeouts++;
    if (stuck)
        log_throttled(&s->throttle.timeout, LOG_LEVEL_WARN, c->peer,
                      "admin: client %s within %llu ms; closing", stuck,
                      (unsigned long long)s->deadline_ms);
    else
        log_write(LOG_LEVEL_DEBUG, c->peer, "admin: connection idle for %llu ms; closing",
                  (unsigned long long)s->deadline_ms);
    admin_http_conn_close(c);
}

/* The deadline restarts only on progress that costs the client a whole
 * request or a whole taken response, never on single bytes (slowloris). */
static void admin_http_conn_arm(struct admin_http_conn *c)
{
    /* from now, not from the loop's cached time: a slow handler earlier in
     * this iteration must not eat the next request's window */
    uv_update_time(c->server->loop);
    uv_timer_start(&c->timer, admin_http_on_timer, c->server->deadline_ms, 0);
}

static void admin_http_on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct admin_http_conn *c = h->data;

    (void)hint;
    /* reading is stopped while rbuf holds unparsed bytes, so it is free */
    *buf = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void admin_http_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void admin_http_conn_read_start(struct admin_http_conn *c)
{
    if (!c->reading && !c->read_eof && !c->closing) {
        if (uv_read_start((uv_stream_t *)&c->tcp, admin_http_on_alloc, admin_http_on_read) == 0)
            c->reading = 1;
        else
            admin_http_conn_close(c);
    }
}

static void admin_http_conn_read_stop(struct admin_http_conn *c)
{
    if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = 0;
    }
}

static void admin_http_on_shutdown(uv_shutdown_t *req, int status)
{
    struct admin_http_conn *c = req->data;

    c->shut = 1;
    if (!c->closing && (status < 0 || c->read_eof))
        admin_http_conn_close(c);
}

/* Last answer queued: send FIN once it is out, and keep reading (and
 * dropping) until the client's FIN, because closing a socket with unread
 * input sends RST, which can destroy the answer before the client reads it.
 * The deadline bounds the wait. */
static void admin_http_conn_finish(struct admin_http_conn *c)
{
    if (!c->finishing && !c->closing) {
        c->finishing = 1;
        c->paused = 0;
        admin_http_conn_arm(c);
        c->shutdown.data = c;
        if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->tcp, admin_http_on_shutdown) != 0)
            admin_http_conn_close(c);
        else
            admin_http_conn_read_start(c);
    }
}

static void admin_http_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct admin_http_conn *c = stream->data;

    (void)buf;
    if (c->closing || nread == 0) {
        /* nothing: EAGAIN, or the close is already under way */
    } else if (nread == UV_EOF) {
        c->read_eof = 1;
        c->reading = 0; /* libuv stops reading at EOF */
        if ((c->finishing && c->shut) || (!c->finishing && c->writes == 0))
            admin_http_conn_close(c);
        else
            admin_http_conn_finish(c); /* answer what was asked, then close */
    } else if (nread < 0) {
        admin_http_conn_close(c);
    } else if (!c->finishing) {
        c->roff = 0;
        c->rlen = (size_t)nread;
        admin_http_conn_feed(c);
    }
}

static const http_parser_settings admin_http_settings;

/* At the cap, a new connection is taken in place of the oldest one that is
 * not sending an answer: slow or idle clients (slowloris) cannot hold every
 * slot, a probe of /health always gets in. The new one waits in libuv's
 * backlog until the victim's handles are closed. Returns whether one was
 * evicted. */
static int admin_http_evict(struct admin_http *s)
{
    struct admin_http_conn *victim = NULL;
    for (struct admin_http_conn *c = s->conns; c != NULL; c = c->next)
        if (!c->closing && c->writes == 0)
            victim = c; /* the list is newest first: the last one is the oldest */
    if (victim == NULL)
        return 0;
    s->stats.evicted++;
    log_throttled(&s->throttle.rejected, LOG_LEVEL_WARN, victim->peer,
                  "admin: %zu connections open (the limit); closing the oldest idle one",
                  s->nconns);
    admin_http_conn_close(victim);
    s->accept_pending = 1;
    return 1;
}

/* Takes a connection into service; over the cap it replaces the oldest
 * idle one, or without memory (or with every slot answering) it is refused
 * instead. */
static void admin_http_accept_one(struct admin_http *s)
{
    struct admin_http_conn *c = NULL;

    if (s->nconns >= s->max_connections && admin_http_evict(s))
        return;
    if (s->nconns < s->max_connections)
        c = calloc(1, sizeof *c);
    if (c == NULL || uv_tcp_init(s->loop, &c->tcp) != 0) {
        free(c);
        admin_http_reject(s);
    } else {
        uv_timer_init(s->loop, &c->timer); /* cannot fail */
        buf_init(&c->body, ADMIN_HTTP_MAX_BODY_BYTES + 1);
        c->tcp.data = c;
        c->timer.data = c;
        c->handles = 2;
        c->server = s;
        c->next = s->conns;
        if (s->conns != NULL)
            s->conns->prev = c;
        s->conns = c;
        s->nconns++;
        http_parser_init(&c->parser, HTTP_REQUEST);
        c->parser.data = c;
        if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&c->tcp) != 0) {
            admin_http_conn_close(c);
        } else {
            admin_http_peer_text(&c->tcp, c->peer, sizeof c->peer);
            s->stats.accepted++;
            admin_http_conn_arm(c);
            admin_http_conn_read_start(c);
        }
    }
}

/* ---- responses ------------------------------------------------------------ */

static void admin_http_on_write(uv_write_t *req, int status)
{
    struct admin_http_write *w = (struct admin_http_write *)req;
    struct admin_http_conn *c = w->c;

    c->writes--;
    free(w->body);
    free(w);
    if (c->closing) {
        /* cancelled by the close */
    } else if (status < 0) {
        admin_http_conn_close(c);
    } else if (!c->finishing) {
        admin_http_conn_arm(c);
        if (c->paused && c->writes == 0 && !c->later) {
            c->paused = 0;
            admin_http_conn_feed(c); /* the requests that waited in rbuf */
            if (!c->paused && !c->finishing)
                admin_http_conn_read_start(c);
        }
    }
}

/* Queues head + body (body ownership moves to the write). Too many unsent
 * bytes means the client is not reading: stop reading it, and past the hard
 * bound close it. */
static void admin_http_conn_write(struct admin_http_conn *c, struct admin_http_write *w,
                                  size_t head_len, char *body, size_t body_len)
{
    uv_buf_t bufs[2];
    size_t queued;

    w->c = c;
    w->body = body;
    bufs[0] = uv_buf_init(w->head, (unsigned)head_len);
    bufs[1] = uv_buf_init(body, (unsigned)body_len);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, bufs, body_len > 0 ? 2 : 1,
                 admin_http_on_write) != 0) {
        free(body);
        free(w);
        admin_http_conn_close(c);
    } else {
        c->writes++;
        queued = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
        if (queued > ADMIN_HTTP_MAX_PENDING_WRITE_BYTES) {
            c->server->stats.write_overflows++;
            log_throttled(&c->server->throttle.overflow, LOG_LEVEL_WARN, c->peer,
                          "admin: %zu response bytes not taken (bound %d); closing", queued,
                          ADMIN_HTTP_MAX_PENDING_WRITE_BYTES);
            admin_http_conn_close(c);
        } else if (queued > ADMIN_HTTP_WRITE_HIGH_WATER && !c->finishing) {
            c->paused = 1;
            admin_http_conn_read_stop(c);
        }
    }
}

static const char *admin_http_reason(int status)
{
    const char *r = http_status_str((enum http_status)status);

    return r[0] == '<' ? "Unknown" : r; /* "<unknown>" for codes it lacks */
}

static void admin_http_conn_send(struct admin_http_conn *c, struct admin_http_response *resp,
                                 int keep_alive, int head_only, const char *allow)
{
    struct admin_http_write *w = malloc(sizeof *w);
    const char *conn_hdr = "";
    int n;

    if (!keep_alive)
        conn_hdr = "Connection: close\r\n";
    else if (c->parser.http_major == 1 && c->parser.http_minor == 0)
        conn_hdr = "Connection: keep-alive\r\n"; /* 1.0 closes unless told */
    if (w == NULL) {
        admin_http_conn_close(c);
    } else {
        char length[48] = ""; /* a 304 has no body: no length either */
        if (resp->status != 304)
            snprintf(length, sizeof length, "Content-Length: %zu\r\n", resp->body.len);
        else
            head_only = 1;
        n = snprintf(w->head, sizeof w->head,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n%s%s%.*s%s%s%s%s\r\n", resp->status,
                     admin_http_reason(resp->status), resp->content_type, length,
                     resp->own_cache_control ? "" : "Cache-Control: no-store\r\n",
                     (int)resp->extra_len, resp->extra, allow[0] != '\0' ? "Allow: " : "", allow,
                     allow[0] != '\0' ? "\r\n" : "", conn_hdr);
        /* every field is bounded so n always fits; clamp anyway */
        if (n < 0 || (size_t)n >= sizeof w->head)
            n = (int)sizeof w->head - 1;
        size_t len = resp->body.len;
        char *body = head_only ? NULL : buf_take(&resp->body); /* the write owns it */
        admin_http_conn_write(c, w, (size_t)n, body, body ? len : 0);
    }
}

static void admin_http_conn_send_continue(struct admin_http_conn *c)
{
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    struct admin_http_write *w = malloc(sizeof *w);

    if (w == NULL) {
        admin_http_conn_close(c);
    } else {
        memcpy(w->head, cont, sizeof cont - 1);
        admin_http_conn_write(c, w, sizeof cont - 1, NULL, 0);
    }
}

static void admin_http_response_init(struct admin_http_response *resp)
{
    memset(resp, 0, sizeof *resp);
    buf_init(&resp->body, ADMIN_HTTP_MAX_RESPONSE_BYTES + 1);
    resp->status = 200;
    memcpy(resp->content_type, ADMIN_HTTP_DEFAULT_CONTENT_TYPE,
           sizeof ADMIN_HTTP_DEFAULT_CONTENT_TYPE);
}

static void admin_http_response_text(struct admin_http_response *resp, int status, const char *text)
{
    resp->extra_len = 0; /* the server's own answer: no ETag of the handler's */
    resp->own_cache_control = 0;
    admin_http_respond(resp, status, ADMIN_HTTP_DEFAULT_CONTENT_TYPE, text, strlen(text));
}

/* One line per reason and second: a hostile local client can send bad
 * requests as fast as it likes. */
static void admin_http_log_fail(struct admin_http_conn *c, int status)
{
    struct admin_http *s = c->server;

    if (status == 413)
        log_throttled(&s->throttle.too_large, LOG_LEVEL_WARN, c->peer,
                      "admin: request over the bounds (head %d bytes, %d headers, body %d "
                      "bytes); answered 413, closing",
                      ADMIN_HTTP_MAX_HEAD_BYTES, ADMIN_HTTP_MAX_HEADERS, ADMIN_HTTP_MAX_BODY_BYTES);
    else if (status == 400)
        log_throttled(&s->throttle.bad_request, LOG_LEVEL_WARN, c->peer,
                      "admin: malformed request (%s); answered 400, closing",
                      http_errno_description(HTTP_PARSER_ERRNO(&c->parser)));
    else
        log_throttled(&s->throttle.internal, LOG_LEVEL_ERROR, c->peer,
                      "admin: out of memory for a request body; answered %d, closing", status);
}

/* Answers a request the parser refused, then closes: after a framing error
 * the rest of the stream cannot be trusted. */
static void admin_http_conn_fail(struct admin_http_conn *c, int status)
{
    struct admin_http_response resp;

    admin_http_log_fail(c, status);
    if (status == 413)
        c->server->stats.too_large++;
    else
        c->server->stats.bad_requests++;
    admin_http_response_init(&resp);
    admin_http_response_text(&resp, status,
                             status == 413 ? "request too large\n" : "bad request\n");
    admin_http_conn_send(c, &resp, 0, 0, "");
    buf_free(&resp.body);
    admin_http_conn_finish(c);
}

/* ---- routing -------------------------------------------------------------- */

static void admin_http_allow_add(char *allow, size_t cap, const char *method)
{
    size_t mlen = strlen(method), len = strlen(allow);
    const char *p = allow;
    int dup = 0;

    while (!dup && *p != '\0') {
        size_t tok = strcspn(p, ",");
        dup = tok == mlen && strncmp(p, method, mlen) == 0;
        p += tok;
        p += strspn(p, ", ");
    }
    if (!dup && len + mlen + 3 <= cap)
        snprintf(allow + len, cap - len, "%s%s", len > 0 ? ", " : "", method);
}

/* The route for method+path; fills allow with every method path accepts
 * (HEAD wherever GET is), so a miss can tell 404 from 405. */
static const struct admin_http_route *admin_http_route_find(const struct admin_http *s,
                                                            const char *method, const char *path,
                                                            char *allow, size_t cap)
{
    const struct admin_http_route *found = NULL, *get = NULL;

    for (size_t i = 0; i < s->nroutes; i++) {
        const struct admin_http_route *r = &s->routes[i];
        if (strcmp(r->path, path) != 0)
            continue;
        admin_http_allow_add(allow, cap, r->method);
        if (strcmp(r->method, "GET") == 0) {
            admin_http_allow_add(allow, cap, "HEAD");
            if (get == NULL)
                get = r;
        }
        if (found == NULL && strcmp(r->method, method) == 0)
            found = r;
    }
    if (found == NULL && strcmp(method, "HEAD") == 0)
        found = get;
    return found;
}

/* Splits the URL in place into NUL-terminated path and query. */
static int admin_http_request_init(struct admin_http_conn *c, struct admin_http_request *req)
{
    struct http_parser_url u;
    char *url = c->head;
    int rc = -1;

    memset(req, 0, sizeof *req);
    req->method = http_method_str((enum http_method)c->parser.method);
    req->path = "";
    req->query = "";
    req->body = c->body.data != NULL ? c->body.data : "";
    req->body_len = c->body.len;
    req->ud = c->server->ud;
    req->priv = c;
    http_parser_url_init(&u);
    if (http_parser_parse_url(url, strlen(url), c->parser.method == HTTP_CONNECT, &u) == 0) {
        size_t path_end = (size_t)u.field_data[UF_PATH].off + u.field_data[UF_PATH].len;
        size_t query_end = (size_t)u.field_data[UF_QUERY].off + u.field_data[UF_QUERY].len;
        if (u.field_set & (1 << UF_PATH))
            req->path = url + u.field_data[UF_PATH].off;
        if (u.field_set & (1 << UF_QUERY))
            req->query = url + u.field_data[UF_QUERY].off;
        if (u.field_set & (1 << UF_PATH))
            url[path_end] = '\0';
        if (u.field_set & (1 << UF_QUERY))
            url[query_end] = '\0';
        rc = 0;
    }
    return rc;
}

/* A handler that gives no answer, or a broken one, is slabtap's fault, not
 * the client's: the client gets a 500 and the log an error. */
static void admin_http_call(struct admin_http *s, const struct admin_http_conn *c,
                            const struct admin_http_route *route,
                            const struct admin_http_request *req, struct admin_http_response *resp)
{
    const char *why = NULL;
    char body[64];

    route->handler(req, resp);
    if (resp->deferred)
        return;
    if (!resp->answered)
        why = "handler gave no answer";
    else if (resp->broken)
        why = "handler answer too large or invalid";
    if (why) {
        log_throttled(&s->throttle.internal, LOG_LEVEL_ERROR, c->peer,
                      "admin: %s %s: %s; answered 500", route->method, route->path, why);
        snprintf(body, sizeof body, "%s\n", why);
        admin_http_response_text(resp, 500, body);
    }
}

/* Answers one complete request; the parser is paused on it. */
static void admin_http_dispatch(struct admin_http_conn *c)
{
    struct admin_http *s = c->server;
    struct admin_http_request req;
    struct admin_http_response resp;
    const struct admin_http_route *route = NULL;
    char allow[ADMIN_HTTP_ALLOW_MAX] = "";
    int keep_alive = http_should_keep_alive(&c->parser) && !c->parser.upgrade;

    s->stats.requests++;
    admin_http_response_init(&resp);
    resp.conn = c;
    if (admin_http_request_init(c, &req) != 0) {
        s->stats.bad_requests++;
        log_throttled(&s->throttle.bad_request, LOG_LEVEL_WARN, c->peer,
                      "admin: request target is not a URL; answered 400, closing");
        admin_http_response_text(&resp, 400, "bad request target\n");
        keep_alive = 0;
    } else if ((route = admin_http_route_find(s, req.method, req.path, allow, sizeof allow)) !=
               NULL) {
        allow[0] = '\0';
        admin_http_call(s, c, route, &req, &resp);
        if (resp.deferred) {
            /* no further request is read or answered before this one's */
            buf_free(&resp.body);
            c->later_keep_alive = keep_alive;
            c->later_head = c->parser.method == HTTP_HEAD;
            c->paused = 1;
            admin_http_conn_read_stop(c);
            c->phase = ADMIN_HTTP_PHASE_HEAD;
            c->head_bytes = 0;
            admin_http_conn_arm(c); /* the answer is due within the deadline */
            return;
        }
    } else if (allow[0] != '\0') {
        admin_http_response_text(&resp, 405, "method not allowed\n");
    } else {
        admin_http_response_text(&resp, 404, "not found\n");
    }
    admin_http_conn_send(c, &resp, keep_alive, c->parser.method == HTTP_HEAD, allow);
    buf_free(&resp.body);
    c->phase = ADMIN_HTTP_PHASE_HEAD;
    c->head_bytes = 0;
    if (!keep_alive)
        admin_http_conn_finish(c);
    else if (!c->closing)
        admin_http_conn_arm(c); /* a new request window */
}

/* ---- parsing -------------------------------------------------------------- */

/* Parses rbuf[roff..rlen), answering each complete request in order, and
 * stops early when the connection finishes, closes, or must wait for its
 * writes to drain (the rest stays in rbuf). */
static void admin_http_conn_feed(struct admin_http_conn *c)
{
    while (c->roff < c->rlen && !c->finishing && !c->closing && !c->paused) {
        size_t len = c->rlen - c->roff, n;
        int in_head = c->phase == ADMIN_HTTP_PHASE_HEAD;
        enum http_errno err;

        /* never let the parser see more than one byte past the head bound */
        if (in_head && len > ADMIN_HTTP_MAX_HEAD_BYTES + 1 - c->head_bytes)
            len = ADMIN_HTTP_MAX_HEAD_BYTES + 1 - c->head_bytes;
        n = http_parser_execute(&c->parser, &admin_http_settings, c->rbuf + c->roff, len);
        c->roff += n;
        err = HTTP_PARSER_ERRNO(&c->parser);
        if (in_head && c->phase == ADMIN_HTTP_PHASE_HEAD)
            c->head_bytes += n;
        if (err == HPE_PAUSED) {
            http_parser_pause(&c->parser, 0);
            admin_http_dispatch(c);
        } else if (err != HPE_OK) {
            admin_http_conn_fail(c, c->reject != 0 ? c->reject : 400);
        } else if (c->phase == ADMIN_HTTP_PHASE_HEAD && c->head_bytes > ADMIN_HTTP_MAX_HEAD_BYTES) {
            admin_http_conn_fail(c, 413);
        }
    }
}

static int admin_http_head_put(struct admin_http_conn *c, const char *p, size_t n)
{
    int rc = 0;

    if (n > sizeof c->head - 1 - c->head_len) {
        c->reject = 413;
        rc = -1;
    } else {
        memcpy(c->head + c->head_len, p, n);
        c->head_len += n;
    }
    return rc;
}

/* Ends the string being collected (url, name or value). */
static int admin_http_head_end(struct admin_http_conn *c)
{
    return admin_http_head_put(c, "", 1);
}

static int admin_http_on_message_begin(http_parser *p)
{
    struct admin_http_conn *c = p->data;

    c->last = ADMIN_HTTP_LAST_NONE;
    c->reject = 0;
    c->head_len = 0;
    c->nhdr = 0;
    buf_reset(&c->body); /* a bodiless request must not see the last one's body */
    return 0;
}

static int admin_http_on_url(http_parser *p, const char *at, size_t n)
{
    struct admin_http_conn *c = p->data;

    c->last = ADMIN_HTTP_LAST_URL;
    return admin_http_head_put(c, at, n);
}

static int admin_http_on_header_field(http_parser *p, const char *at, size_t n)
{
    struct admin_http_conn *c = p->data;
    int rc = 0;

    if (c->last != ADMIN_HTTP_LAST_FIELD) {
        rc = admin_http_head_end(c);
        if (rc == 0 && c->nhdr == ADMIN_HTTP_MAX_HEADERS) {
            c->reject = 413;
            rc = -1;
        } else if (rc == 0) {
            c->hdr[c->nhdr].name = (uint16_t)c->head_len;
            c->hdr[c->nhdr].value = ADMIN_HTTP_NO_VALUE;
            c->nhdr++;
        }
    }
    c->last = ADMIN_HTTP_LAST_FIELD;
    return rc != 0 ? rc : admin_http_head_put(c, at, n);
}

static int admin_http_on_header_value(http_parser *p, const char *at, size_t n)
{
    struct admin_http_conn *c = p->data;
    int rc = 0;

    if (c->last != ADMIN_HTTP_LAST_VALUE) {
        rc = admin_http_head_end(c);
        if (rc == 0)
            c->hdr[c->nhdr - 1].value = (uint16_t)c->head_len;
    }
    c->last = ADMIN_HTTP_LAST_VALUE;
    return rc != 0 ? rc : admin_http_head_put(c, at, n);
}

static int admin_http_expects_continue(const struct admin_http_conn *c)
{
    int yes = 0;

    for (size_t i = 0; i < c->nhdr; i++)
        if (strcasecmp(c->head + c->hdr[i].name, "Expect") == 0 &&
            c->hdr[i].value != ADMIN_HTTP_NO_VALUE &&
            strcasecmp(c->head + c->hdr[i].value, "100-continue") == 0)
            yes = 1;
    return yes;
}

static int admin_http_on_headers_complete(http_parser *p)
{
    struct admin_http_conn *c = p->data;
    int rc = admin_http_head_end(c);

    /* refuse an announced oversize body before the client sends it */
    if (rc == 0 && (p->flags & F_CONTENTLENGTH) && p->content_length > ADMIN_HTTP_MAX_BODY_BYTES) {
        c->reject = 413;
        rc = -1;
    }
    if (rc == 0 && p->http_major == 1 && p->http_minor >= 1 && admin_http_expects_continue(c))
        admin_http_conn_send_continue(c);
    c->phase = ADMIN_HTTP_PHASE_BODY;
    return rc;
}

static int admin_http_on_body(http_parser *p, const char *at, size_t n)
{
    struct admin_http_conn *c = p->data;
    int rc = 0;

    if (n > ADMIN_HTTP_MAX_BODY_BYTES - c->body.len) {
        c->reject = 413; /* chunked bodies announce no length */
        rc = -1;
    } else if (buf_append(&c->body, at, n)) {
        c->reject = 500;
        rc = -1;
    }
    return rc;
}

static int admin_http_on_message_complete(http_parser *p)
{
    struct admin_http_conn *c = p->data;

    /* one request at a time: pausing hands control back to the feed loop,
     * which answers it before parsing the next pipelined one */
    c->phase = ADMIN_HTTP_PHASE_DONE;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings admin_http_settings = {
    .on_message_begin = admin_http_on_message_begin,
    .on_url = admin_http_on_url,
    .on_header_field = admin_http_on_header_field,
    .on_header_value = admin_http_on_header_value,
    .on_headers_complete = admin_http_on_headers_complete,
    .on_body = admin_http_on_body,
    .on_message_complete = admin_http_on_message_complete,
};

/* ---- handler API ---------------------------------------------------------- */

static int admin_http_hexval(char ch)
{
    int v = -1;

    if (ch >= '0' && ch <= '9')
        v = ch - '0';
    else if (ch >= 'a' && ch <= 'f')
        v = ch - 'a' + 10;
    else if (ch >= 'A' && ch <= 'F')
        v = ch - 'A' + 10;
    return v;
}

/* Decodes src[0..n) ('+' and %XX) into buf; length or -admin_http_err. */
static int admin_http_url_decode(char *buf, size_t buflen, const char *src, size_t n)
{
    size_t out = 0;
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < n; i++) {
        int ch = src[i] == '+' ? ' ' : (unsigned char)src[i];
        if (src[i] == '%') {
            int hi = i + 2 < n ? admin_http_hexval(src[i + 1]) : -1;
            int lo = i + 2 < n ? admin_http_hexval(src[i + 2]) : -1;
            /* %00 too: callers treat values as C strings */
            ch = hi >= 0 && lo >= 0 ? hi * 16 + lo : 0;
            rc = ch == 0 ? -ADMIN_HTTP_ERR_PARAM_ESCAPE : 0;
            i += 2;
        }
        if (rc == 0 && out + 1 >= buflen)
            rc = -ADMIN_HTTP_ERR_PARAM_TOO_LONG;
        else if (rc == 0)
            buf[out++] = (char)ch;
    }
    if (rc == 0 && buflen == 0)
        rc = -ADMIN_HTTP_ERR_PARAM_TOO_LONG;
    if (rc == 0)
        buf[out] = '\0';
    return rc == 0 ? (int)out : rc;
}

int admin_http_query_param(const struct admin_http_request *req, const char *name, char *buf,
                           size_t buflen)
{
    const char *q = req->query;
    int rc = -ADMIN_HTTP_ERR_NO_PARAM;

    while (rc == -ADMIN_HTTP_ERR_NO_PARAM && *q != '\0') {
        size_t len = strcspn(q, "&");
        const char *eq = memchr(q, '=', len);
        size_t klen = eq != NULL ? (size_t)(eq - q) : len;
        char key[ADMIN_HTTP_PARAM_NAME_MAX];

        if (admin_http_url_decode(key, sizeof key, q, klen) >= 0 && strcmp(key, name) == 0)
            rc = admin_http_url_decode(buf, buflen, eq != NULL ? eq + 1 : q + len,
                                       eq != NULL ? len - klen - 1 : 0);
        q += len;
        q += *q == '&';
    }
    return rc;
}

const char *admin_http_header(const struct admin_http_request *req, const char *name)
{
    const struct admin_http_conn *c = req->priv;
    const char *value = NULL;

    for (size_t i = 0; value == NULL && i < c->nhdr; i++)
        if (strcasecmp(c->head + c->hdr[i].name, name) == 0)
            value = c->hdr[i].value == ADMIN_HTTP_NO_VALUE ? "" : c->head + c->hdr[i].value;
    return value;
}

int admin_http_set_status(struct admin_http_response *resp, int status, const char *content_type)
{
    int err = ADMIN_HTTP_OK;
    size_t ctlen = content_type != NULL ? strlen(content_type) : 0;

    resp->answered = 1;
    if (status < 200 || status > 599)
        err = ADMIN_HTTP_ERR_ARGS;
    else if (ctlen == 0 || ctlen >= sizeof resp->content_type ||
             strpbrk(content_type, "\r\n") != NULL)
        err = ADMIN_HTTP_ERR_CONTENT_TYPE; /* would break or inject headers */
    if (err == ADMIN_HTTP_OK) {
        resp->status = status;
        memcpy(resp->content_type, content_type, ctlen + 1);
    } else {
        resp->broken = 1;
    }
    return err;
}

int admin_http_add_header(struct admin_http_response *resp, const char *name, const char *value)
{
    size_t nlen = name != NULL ? strlen(name) : 0, vlen = value != NULL ? strlen(value) : 0;
    static const char token[] = "!#$%&'*+-.^_`|~0123456789"
                                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

    if (nlen == 0 || strspn(name, token) != nlen || value == NULL ||
        strpbrk(value, "\r\n") != NULL || nlen + vlen + 4 > sizeof resp->extra - resp->extra_len)
        return ADMIN_HTTP_ERR_HEADER;
    memcpy(resp->extra + resp->extra_len, name, nlen);
    memcpy(resp->extra + resp->extra_len + nlen, ": ", 2);
    memcpy(resp->extra + resp->extra_len + nlen + 2, value, vlen);
    memcpy(resp->extra + resp->extra_len + nlen + 2 + vlen, "\r\n", 2);
    resp->extra_len += nlen + vlen + 4;
    if (strcasecmp(name, "Cache-Control") == 0)
        resp->own_cache_control = 1;
    return ADMIN_HTTP_OK;
}

/* Room for extra more bytes plus the NUL vsnprintf writes. */
static int admin_http_body_reserve(struct admin_http_response *resp, size_t extra)
{
    int err = ADMIN_HTTP_OK;

    resp->answered = 1;
    if (resp->broken || extra > ADMIN_HTTP_MAX_RESPONSE_BYTES - resp->body.len)
        err = ADMIN_HTTP_ERR_TOO_LARGE;
    else if (buf_reserve(&resp->body, extra))
        err = ADMIN_HTTP_ERR_NOMEM;
    resp->broken |= err != ADMIN_HTTP_OK;
    return err;
}

int admin_http_body_append(struct admin_http_response *resp, const void *data, size_t len)
{
    int err = admin_http_body_reserve(resp, len);

    if (err == ADMIN_HTTP_OK)
        buf_append(&resp->body, data, len); /* reserved: cannot fail */
    return err;
}

int admin_http_body_sink(void *resp, const char *data, size_t len)
{
    return admin_http_body_append(resp, data, len) == ADMIN_HTTP_OK ? 0 : -1;
}

int admin_http_body_printf(struct admin_http_response *resp, const char *fmt, ...)
{
    va_list ap;
    int n, err;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    err = n < 0 ? ADMIN_HTTP_ERR_ARGS : admin_http_body_reserve(resp, (size_t)n);
    if (err == ADMIN_HTTP_OK) {
        va_start(ap, fmt);
        buf_vprintf(&resp->body, fmt, ap); /* reserved: one pass, cannot fail */
        va_end(ap);
    }
    resp->broken |= err != ADMIN_HTTP_OK;
    return err;
}

int admin_http_respond(struct admin_http_response *resp, int status, const char *content_type,
                       const void *body, size_t len)
{
    int err;

    resp->broken = 0; /* a whole answer replaces a half-built one */
    buf_reset(&resp->body);
    err = admin_http_set_status(resp, status, content_type);
    if (err == ADMIN_HTTP_OK)
        err = admin_http_body_append(resp, body, len);
    return err;
}

uint64_t admin_http_defer(struct admin_http_response *resp)
{
    struct admin_http_conn *c = resp->conn;

    if (c == NULL || c->later != 0)
        return 0;
    c->later = ++c->server->next_later;
    resp->deferred = 1;
    resp->answered = 1;
    return c->later;
}

int admin_http_answer_later(struct admin_http *s, uint64_t token, int status,
                            const char *content_type, const void *body, size_t len)
{
    struct admin_http_conn *c = s->conns;
    struct admin_http_response resp;
    int rc;

    while (c != NULL && (c->later != token || token == 0 || c->closing))
        c = c->next;
    if (c == NULL)
        return ADMIN_HTTP_ERR_ARGS;
    c->later = 0;
    admin_http_response_init(&resp);
    rc = admin_http_respond(&resp, status, content_type, body, len);
    if (rc != ADMIN_HTTP_OK)
        admin_http_response_text(&resp, 500, "answer too large or invalid\n");
    admin_http_conn_send(c, &resp, c->later_keep_alive, c->later_head, "");
    buf_free(&resp.body);
    if (!c->later_keep_alive) {
        admin_http_conn_finish(c);
    } else if (!c->closing) {
        admin_http_conn_arm(c);
        if (uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) <= ADMIN_HTTP_WRITE_HIGH_WATER) {
            c->paused = 0;
            admin_http_conn_feed(c); /* requests that waited in rbuf */
            if (!c->paused && !c->finishing && !c->later)
                admin_http_conn_read_start(c);
        }
    }
    return rc;
}
