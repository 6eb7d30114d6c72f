/* top_fetch: blocking stats and HTTP reads with a deadline (see
 * top_fetch.h for the contract). */
#include "cli/top_fetch.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/clock.h"

/* A read at a time: what one recv may take. */
#define TOP_FETCH_CHUNK 65536

struct top_conn {
    int fd;
    uint64_t deadline_ns;
    const struct top_fetch_ctl *ctl;
    char peer[ADDR_TEXT_MAX];
};

/* Waits for events on the connection until the deadline. 1 ready, or -1
 * with err (timed out, interrupted). */
static int top_wait(struct top_conn *c, short events, const char *what, char *err, size_t errlen)
{
    for (;;) {
        uint64_t now = clock_mono_ns();
        if (c->ctl->cancel && *c->ctl->cancel) {
            snprintf(err, errlen, "%s: interrupted", c->peer);
            return -1;
        }
        if (now >= c->deadline_ns) {
            snprintf(err, errlen, "%s: timed out after %u ms %s", c->peer, c->ctl->timeout_ms,
                     what);
            return -1;
        }
        struct pollfd p = { .fd = c->fd, .events = events };
        int ms = (int)((c->deadline_ns - now + 999999) / 1000000);
        int n = poll(&p, 1, ms);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR) {
            snprintf(err, errlen, "%s: poll: %s", c->peer, strerror(errno));
            return -1;
        }
    }
}

static int top_connect_one(struct top_conn *c, const struct sockaddr_storage *addr, char *err,
                           size_t errlen)
{
    socklen_t len = addr_len((const struct sockaddr *)addr);
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    addr_format((const struct sockaddr *)addr, c->peer, sizeof c->peer);
    c->fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        snprintf(err, errlen, "%s: socket: %s", c->peer, strerror(errno));
        return -1;
    }
    if (connect(c->fd, (const struct sockaddr *)addr, len) == 0)
        return 0;
    if (errno != EINPROGRESS) {
        snprintf(err, errlen, "cannot connect to %s: %s", c->peer, strerror(errno));
        goto fail;
    }
    if (top_wait(c, POLLOUT, "connecting", err, errlen) < 0)
        goto fail;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        soerr = errno;
    if (soerr == 0)
        return 0;
    snprintf(err, errlen, "cannot connect to %s: %s", c->peer, strerror(soerr));
fail:
    close(c->fd);
    c->fd = -1;
    return -1;
}

/* Every address in turn until one connects, one deadline for them all. */
static int top_connect(struct top_conn *c, const struct addr_list *addr,
                       const struct top_fetch_ctl *ctl, char *err, size_t errlen)
{
    c->ctl = ctl;
    c->deadline_ns = clock_mono_ns() + (uint64_t)ctl->timeout_ms * 1000000u;
    for (size_t i = 0; i < addr->n; i++)
        if (top_connect_one(c, &addr->a[i], err, errlen) == 0)
            return 0;
    if (!addr->n)
        snprintf(err, errlen, "no address to connect to");
    return -1;
}

static int top_send_all(struct top_conn *c, const char *p, size_t n, char *err, size_t errlen)
{
    while (n > 0) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            snprintf(err, errlen, "%s: send: %s", c->peer, strerror(errno));
            return -1;
        }
        if (top_wait(c, POLLOUT, "sending", err, errlen) < 0)
            return -1;
    }
    return 0;
}

/* Up to n bytes: >0 read, 0 the peer closed, -1 with err. */
static ssize_t top_recv(struct top_conn *c, char *p, size_t n, char *err, size_t errlen)
{
    for (;;) {
        ssize_t r = recv(c->fd, p, n, 0);
        if (r >= 0)
            return r;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            snprintf(err, errlen, "%s: recv: %s", c->peer, strerror(errno));
            return -1;
        }
        if (top_wait(c, POLLIN, "waiting for the answer", err, errlen) < 0)
            return -1;
    }
}

int top_fetch_stats(const struct addr_list *addr, const struct top_fetch_ctl *ctl,
                    struct stats_sample *s, char *err, size_t errlen)
{
    char buf[TOP_FETCH_CHUNK];
    struct stats_parse_batch b;
    struct top_conn c;
    char cmd[STATS_BATCH_CMD_MAX];
    size_t cmd_len = stats_parse_batch_command(STATS_R_REQUIRED, cmd, sizeof cmd), total = 0;
    int rc = -1;
    if (top_connect(&c, addr, ctl, err, errlen))
        return -1;
    stats_parse_batch_begin(&b, s, STATS_R_REQUIRED);
    if (top_send_all(&c, cmd, cmd_len, err, errlen))
        goto out;
    for (;;) {
        ssize_t n = top_recv(&c, buf, sizeof buf, err, errlen);
        size_t used = 0;
        if (n < 0)
            goto out;
        if (n == 0) {
            snprintf(err, errlen, "%s closed the connection in the middle of the stats", c.peer);
            goto out;
        }
        total += (size_t)n;
        enum stats_parse_result r = stats_parse_batch_feed(&b, buf, (size_t)n, &used);
        if (r == STATS_PARSE_OK) {
            rc = 0;
            goto out;
        }
        if (r == STATS_PARSE_REFUSED) {
            snprintf(err, errlen, "%s refused the stats commands: %s (is it memcached?)", c.peer,
                     b.refusal);
            goto out;
        }
        if (r == STATS_PARSE_ERROR) {
            snprintf(err, errlen, "%s: not memcached's stats: %s", c.peer,
                     stats_parse_error_str(b.error));
            goto out;
        }
        if (total > TOP_FETCH_STATS_MAX) {
            snprintf(err, errlen, "%s: stats longer than %u bytes", c.peer, TOP_FETCH_STATS_MAX);
            goto out;
        }
    }
out:
    close(c.fd);
    return rc;
}

/* --- HTTP ------------------------------------------------------------------ */

int top_fetch_http_parse(const char *buf, size_t len, bool eof, struct top_http_reply *r)
{
    size_t head = 0, content_length = 0;
    bool have_length = false;
    const char *p, *end;
    r->status = 0;
    r->body_off = r->body_len = 0;
    /* memcached answers ERROR lines to a request and never ends a head */
    if (memcmp(buf, "HTTP/", len < 5 ? len : 5))
        return -1;
    for (size_t i = 0; i + 3 < len && i < TOP_FETCH_HEAD_MAX; i++)
        if (!memcmp(buf + i, "\r\n\r\n", 4)) {
            head = i + 4;
            break;
        }
    if (!head)
        return len >= TOP_FETCH_HEAD_MAX || eof ? -1 : 0;
    if (head < 16 || memcmp(buf, "HTTP/1.", 7) || buf[8] != ' ' || buf[12] != ' ' || buf[9] < '1' ||
        buf[9] > '5' || buf[10] < '0' || buf[10] > '9' || buf[11] < '0' || buf[11] > '9')
        return -1;
    r->status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
    /* header lines after the status line */
    for (p = (const char *)memchr(buf, '\n', head) + 1; p < buf + head - 2; p = end + 1) {
        end = (const char *)memchr(p, '\n', (size_t)(buf + head - p));
        if (!end)
            return -1;
        static const char cl[] = "content-length:";
        if ((size_t)(end - p) > sizeof cl - 1 && !strncasecmp(p, cl, sizeof cl - 1)) {
            const char *q = p + sizeof cl - 1;
            while (*q == ' ' || *q == '\t')
                q++;
            if (*q < '0' || *q > '9')
                return -1;
            for (content_length = 0; *q >= '0' && *q <= '9'; q++) {
                if (content_length > TOP_FETCH_HTTP_MAX)
                    return -1;
                content_length = content_length * 10 + (size_t)(*q - '0');
            }
            have_length = true;
        }
    }
    r->body_off = head;
    if (have_length) {
        if (len - head < content_length)
            return eof ? -1 : 0;
        r->body_len = content_length;
        return 1;
    }
    if (!eof)
        return 0;
    r->body_len = len - head;
    return 1;
}

int top_fetch_http_get(const struct addr_list *addr, const char *host, const char *path,
                       const char *token, const struct top_fetch_ctl *ctl, char *buf, size_t cap,
                       struct top_http_reply *r, char *err, size_t errlen)
{
    char req[1024 + TOP_FETCH_TOKEN_MAX];
    struct top_conn c;
    size_t len = 0;
    int rc = -1, n;
    if (token && strlen(token) > TOP_FETCH_TOKEN_MAX) {
        snprintf(err, errlen, "the token is longer than %d bytes", TOP_FETCH_TOKEN_MAX);
        return -1;
    }
    n = snprintf(req, sizeof req,
                 "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: slabtap-top/%s\r\n"
                 "Accept: application/json\r\nConnection: close\r\n%s%s%s\r\n",
                 path, host, SLABTAP_VERSION, token ? "Authorization: Bearer " : "",
                 token ? token : "", token ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof req) {
        snprintf(err, errlen, "the request for %s is too long", path);
        return -1;
    }
    if (cap > TOP_FETCH_HTTP_MAX + 1)
        cap = TOP_FETCH_HTTP_MAX + 1;
    if (cap < 2) {
        snprintf(err, errlen, "no room for the response");
        return -1;
    }
    if (top_connect(&c, addr, ctl, err, errlen))
        return -1;
    if (top_send_all(&c, req, (size_t)n, err, errlen))
        goto out;
    for (;;) {
        bool eof = false;
        if (len == cap - 1) {
            snprintf(err, errlen, "%s: the response is longer than %zu bytes", c.peer, cap - 1);
            goto out;
        }
        ssize_t got = top_recv(&c, buf + len, cap - 1 - len, err, errlen);
        if (got < 0)
            goto out;
        if (got == 0)
            eof = true;
        len += (size_t)got;
        int p = top_fetch_http_parse(buf, len, eof, r);
        if (p < 0) {
            snprintf(err, errlen, "%s: not an HTTP response (is it slabtap's --http address?)",
                     c.peer);
            goto out;
        }
        if (p > 0) {
            buf[r->body_off + r->body_len] = '\0';
            rc = 0;
            goto out;
        }
    }
out:
    close(c.fd);
    return rc;
}
