/* top_fetch: the blocking reads of `slabtap top` -- memcached's `stats`,
 * `stats slabs` and `stats items` over its text protocol, and one
 * HTTP/1.1 GET from a running slabtap's admin endpoint.
 *
 * Owns: one TCP connection per call (opened, used, closed), a deadline for
 * the whole exchange, and reads bounded by TOP_FETCH_STATS_MAX (stats) or
 * the caller's buffer (HTTP, at most TOP_FETCH_HEAD_MAX of it head).
 * Must never: wait past the deadline, read past its bound, print or log
 * (a failure is one line in err; the caller says it), or touch the
 * terminal. A signal interrupts a wait: when *cancel is set by then, the
 * call gives up at once ("interrupted").
 */
#ifndef SLABTAP_CLI_TOP_FETCH_H
#define SLABTAP_CLI_TOP_FETCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "core/addr.h"
#include "protocol/stats_parse.h"

/* A 1.6 memcached's three replies are ~30 KiB with every class in use;
 * this leaves room for a much bigger server and still stops a stream
 * that never ends. */
#define TOP_FETCH_STATS_MAX (8u << 20)
/* The head of an HTTP response (status line and headers). */
#define TOP_FETCH_HEAD_MAX 8192
/* Bytes of one response, head and body: /api/slabs with 63 classes is
 * ~60 KiB. */
#define TOP_FETCH_HTTP_MAX (4u << 20)
/* A bearer token longer than this is refused before anything is sent. */
#define TOP_FETCH_TOKEN_MAX 512

struct top_fetch_ctl {
    unsigned timeout_ms;                 /* the whole exchange, connect included */
    const volatile sig_atomic_t *cancel; /* may be NULL */
};

/* Both fetches connect to the addresses of addr in turn (a name's next
 * address when one refuses), all within ctl->timeout_ms. */

/* `stats`, `stats slabs`, `stats items` into s (initialised by the
 * caller; its replies are cleared first). 0, or -1 with err. */
int top_fetch_stats(const struct addr_list *addr, const struct top_fetch_ctl *ctl,
                    struct stats_sample *s, char *err, size_t errlen);

struct top_http_reply {
    int status;
    size_t body_off, body_len; /* the body is buf[body_off .. body_off + body_len) */
};

/* Pure: the response in buf[0..len), eof when the peer has closed. 1: the
 * whole response is there (Content-Length bytes of body, or everything up
 * to eof without one); 0: more is needed; -1: not an HTTP/1.x response,
 * or a head longer than TOP_FETCH_HEAD_MAX. */
int top_fetch_http_parse(const char *buf, size_t len, bool eof, struct top_http_reply *r);

/* GET path from addr with "Host: host" and, when token is not NULL,
 * "Authorization: Bearer token". The response goes into buf (cap bytes,
 * at most TOP_FETCH_HTTP_MAX used; one byte is kept for a NUL after the
 * body). 0 with *r filled whatever the status, or -1 with err. */
int top_fetch_http_get(const struct addr_list *addr, const char *host, const char *path,
                       const char *token, const struct top_fetch_ctl *ctl, char *buf, size_t cap,
                       struct top_http_reply *r, char *err, size_t errlen);

#endif
