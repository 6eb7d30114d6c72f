/* libFuzzer target: arbitrary bytes as what one client sends the admin
 * endpoint (server/admin_http.h), over a real loopback TCP connection to a
 * real admin_http server on a uv loop in this thread -- the module has no
 * other way in. The bytes go through http-parser and every callback behind
 * it (head and header bounds, 413, bodies, chunked, 100-continue,
 * keep-alive, pipelining, HEAD, 404/405), routing, and handlers that call
 * admin_http_query_param, admin_http_header and the response API with what
 * the request carried.
 *
 * Input: byte 0 picks how many pieces the rest is sent in (each piece is
 * read by the server on its own, so requests and heads are split across
 * reads) and bytes 1..3 where they are cut; the rest is the stream. The
 * client then half-closes and reads until the server closes.
 *
 * Checks: the answer is a well-formed sequence of HTTP/1.1 responses (each
 * head terminated, a Content-Length on every final answer, the body exactly
 * that long, nothing after a "Connection: close"), one final answer per
 * request the server counted; query parameters decode exactly as a
 * reference decoder says, and consistently for every buffer size; a body
 * is as long as its Content-Length and NUL-terminated; the exchange ends
 * (server closed, no connection left) within FZ_WALL_MS.
 * Build with -DSLABTAP_FUZZ=ON (clang); run: tests/fuzz/run.sh */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/escape.h"
#include "core/log.h"
#include "server/admin_http.h"

#define FZ_WALL_MS 5000              /* one input's whole exchange */
#define FZ_OUT_MAX (8 * 1024 * 1024) /* response bytes kept and checked */
#define FZ_BIG_MAX (1024 * 1024)     /* /big bytes per input: past the write high water */
#define FZ_VALUE_MAX (ADMIN_HTTP_MAX_HEAD_BYTES + 1)

#define FZ_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "fuzz_admin_http: check failed: %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
            abort(); \
        } \
    } while (0)

static uv_loop_t fz_loop;
static struct admin_http fz_srv;
static struct sockaddr_in fz_addr;
static size_t fz_big_left; /* /big bytes this input may still ask for */

/* ---- a reference for admin_http_query_param ------------------------------ */

static int fz_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* '+' is a blank, %XX a byte (not %00); -1 on a bad escape. Unbounded:
 * out must hold n bytes. */
static long fz_ref_decode(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            if (i + 2 >= n || fz_hex(s[i + 1]) < 0 || fz_hex(s[i + 2]) < 0)
                return -1;
            int v = fz_hex(s[i + 1]) * 16 + fz_hex(s[i + 2]);
            if (v == 0)
                return -1;
            out[o++] = (char)v;
            i += 2;
        } else {
            out[o++] = s[i] == '+' ? ' ' : s[i];
        }
    }
    return (long)o;
}

/* What admin_http_query_param must say with a buffer too big to overflow:
 * the first pair whose decoded key (names longer than the module's
 * ADMIN_HTTP_PARAM_NAME_MAX - 1 never match) is name. */
static int fz_ref_param(const char *q, const char *name, char *out)
{
    static char key[FZ_VALUE_MAX + 2];
    while (*q != '\0') {
        size_t len = strcspn(q, "&");
        const char *eq = memchr(q, '=', len);
        size_t klen = eq ? (size_t)(eq - q) : len;
        long kl = fz_ref_decode(q, klen, key);
        if (kl >= 0 && kl < ADMIN_HTTP_PARAM_NAME_MAX && (size_t)kl == strlen(name) &&
            memcmp(key, name, (size_t)kl) == 0) {
            long vl = eq ? fz_ref_decode(eq + 1, len - klen - 1, out) : 0;
            if (vl < 0)
                return -ADMIN_HTTP_ERR_PARAM_ESCAPE;
            out[vl] = '\0';
            return (int)vl;
        }
        q += len;
        q += *q == '&';
    }
    return -ADMIN_HTTP_ERR_NO_PARAM;
}

/* admin_http_query_param against the reference, then at every buffer size
 * that matters: the answer may only turn into "too long". */
static int fz_param(const struct admin_http_request *req, const char *name, char *buf)
{
    static char ref[FZ_VALUE_MAX + 2], small[FZ_VALUE_MAX + 2];
    int want = fz_ref_param(req->query, name, ref);
    int got = admin_http_query_param(req, name, buf, FZ_VALUE_MAX);

    FZ_CHECK(got == want, "query '%s' name '%s': got %d, reference %d", req->query, name, got,
             want);
    if (got >= 0)
        FZ_CHECK(memcmp(buf, ref, (size_t)got + 1) == 0, "query '%s' name '%s': value differs",
                 req->query, name);
    size_t sizes[] = { 0, 1, 2, 7, 64, got >= 0 ? (size_t)got : 3, got >= 0 ? (size_t)got + 1 : 5 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t len = sizes[i];
        int rc;
        memset(small, 0x55, len + 1);
        rc = admin_http_query_param(req, name, small, len);
        FZ_CHECK(small[len] == 0x55, "query_param wrote past a %zu-byte buffer", len);
        if (want == -ADMIN_HTTP_ERR_NO_PARAM)
            FZ_CHECK(rc == want, "name '%s' found only with a %zu-byte buffer", name, len);
        else if (want == -ADMIN_HTTP_ERR_PARAM_ESCAPE)
            FZ_CHECK(rc == want || rc == -ADMIN_HTTP_ERR_PARAM_TOO_LONG, "bad escape: %d at %zu",
                     rc, len);
        else if ((size_t)want < len)
            FZ_CHECK(rc == want && memcmp(small, ref, (size_t)want + 1) == 0,
                     "%d-byte value differs with a %zu-byte buffer (rc %d)", want, len, rc);
        else
            FZ_CHECK(rc == -ADMIN_HTTP_ERR_PARAM_TOO_LONG, "%d-byte value in %zu bytes: rc %d",
                     want, len, rc);
    }
    return got;
}

/* ---- routes ------------------------------------------------------------------ */

static void fz_check_request(const struct admin_http_request *req)
{
    FZ_CHECK(req->method && req->path && req->query && req->body, "NULL field in a request");
    FZ_CHECK(req->body_len <= ADMIN_HTTP_MAX_BODY_BYTES, "body of %zu bytes", req->body_len);
    FZ_CHECK(req->body[req->body_len] == '\0', "body not NUL-terminated");
    FZ_CHECK(strlen(req->path) + strlen(req->query) <= ADMIN_HTTP_MAX_HEAD_BYTES,
             "path + query over the head bound");
    FZ_CHECK(req->ud == &fz_srv, "ud");
}

static void rt_health(const struct admin_http_request *req, struct admin_http_response *resp)
{
    fz_check_request(req);
    FZ_CHECK(admin_http_respond(resp, 200, "application/json", "{\"status\":\"ok\"}", 15) ==
                 ADMIN_HTTP_OK,
             "respond");
}

/* Like /api/phase: parameters decoded, echoed as JSON. */
static void rt_query(const struct admin_http_request *req, struct admin_http_response *resp)
{
    static const char *const names[] = { "name", "a", "k y", "%", "" };
    static char buf[FZ_VALUE_MAX], esc[6 * FZ_VALUE_MAX + 1];
    const char *own = admin_http_header(req, "X-Name");

    fz_check_request(req);
    admin_http_set_status(resp, 200, "application/json");
    admin_http_body_printf(resp, "q {");
    for (size_t i = 0; i <= sizeof names / sizeof names[0]; i++) {
        const char *name = i < sizeof names / sizeof names[0] ? names[i] : own;
        if (name == NULL)
            continue;
        int n = fz_param(req, name, buf);
        if (n >= 0) {
            size_t e = json_escape(esc, sizeof esc, buf, (size_t)n);
            FZ_CHECK(e < sizeof esc && strlen(esc) == e, "json_escape length");
            admin_http_body_printf(resp, "\"%zu\":\"%s\",", i, esc);
        } else {
            admin_http_body_printf(resp, "\"%zu\":\"%s\",", i, admin_http_strerror(-n));
        }
    }
    admin_http_body_append(resp, "}\n", 2);
}

/* The headers as the module keeps them; a Content-Length it let through
 * must match the body read. */
static void rt_echo(const struct admin_http_request *req, struct admin_http_response *resp)
{
    static const char *const names[] = { "Content-Length", "Transfer-Encoding", "Host", "X-Name",
                                         "Expect",         "content-type" };
    const char *cl = admin_http_header(req, "content-length");
    uint32_t sum = 0;

    fz_check_request(req);
    for (size_t i = 0; i < req->body_len; i++)
        sum = sum * 31 + (unsigned char)req->body[i];
    admin_http_body_printf(resp, "len=%zu sum=%u\n", req->body_len, sum);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = admin_http_header(req, names[i]);
        FZ_CHECK(v == NULL || strlen(v) <= ADMIN_HTTP_MAX_HEAD_BYTES, "header %s", names[i]);
        admin_http_body_printf(resp, "%s: %zu\n", names[i], v ? strlen(v) : 0);
    }
    if (cl != NULL && admin_http_header(req, "transfer-encoding") == NULL) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(cl, &end, 10);
        while (*end == ' ' || *end == '\t')
            end++;
        if (cl[0] >= '0' && cl[0] <= '9' && *end == '\0' && errno == 0)
            FZ_CHECK(v == req->body_len, "Content-Length %llu, body %zu", v, req->body_len);
    }
}

/* A body of n bytes (/big?n=N), built piece by piece: past the write high
 * water, so pipelined requests behind it wait for the client to read. */
static void rt_big(const struct admin_http_request *req, struct admin_http_response *resp)
{
    static char chunk[4096];
    static char buf[FZ_VALUE_MAX];
    unsigned long n = 0;

    fz_check_request(req);
    if (admin_http_query_param(req, "n", buf, sizeof buf) > 0)
        n = strtoul(buf, NULL, 10);
    n = n > fz_big_left ? fz_big_left : n;
    fz_big_left -= n;
    memset(chunk, 'x', sizeof chunk);
    FZ_CHECK(admin_http_set_status(resp, 200, "text/plain") == ADMIN_HTTP_OK, "set_status");
    while (n > 0) {
        size_t k = n < sizeof chunk ? n : sizeof chunk;
        FZ_CHECK(admin_http_body_append(resp, chunk, k) == ADMIN_HTTP_OK, "append");
        n -= k;
    }
}

/* No answer at all: the client must get a 500. */
static void rt_none(const struct admin_http_request *req, struct admin_http_response *resp)
{
    fz_check_request(req);
    (void)resp;
}

/* Status and content type from the query (/status?code=N&ct=...): the
 * module must refuse what would break the status line or inject headers,
 * and then answer 500. */
static void rt_status(const struct admin_http_request *req, struct admin_http_response *resp)
{
    static char code[FZ_VALUE_MAX], ct[FZ_VALUE_MAX];
    long status = 200;
    const char *type = "text/plain";

    fz_check_request(req);
    if (admin_http_query_param(req, "code", code, sizeof code) > 0)
        status = strtol(code, NULL, 10);
    if (admin_http_query_param(req, "ct", ct, sizeof ct) >= 0)
        type = ct;
    int ok = status >= 200 && status <= 599 && type[0] != '\0' &&
             strlen(type) < ADMIN_HTTP_CONTENT_TYPE_MAX && strpbrk(type, "\r\n") == NULL;
    int rc = admin_http_respond(resp, (int)status, type, "s\n", 2);
    FZ_CHECK((rc == ADMIN_HTTP_OK) == ok, "respond(%ld, '%s') = %d", status, type, rc);
}

static const struct admin_http_route fz_routes[] = {
    { "GET", "/health", rt_health },    { "GET", "/q", rt_query },
    { "POST", "/q", rt_query },         { "POST", "/echo", rt_echo },
    { "PUT", "/echo", rt_echo },        { "GET", "/big", rt_big },
    { "GET", "/none", rt_none },        { "GET", "/status", rt_status },
    { "DELETE", "/status", rt_status },
};

/* ---- the exchange ------------------------------------------------------------ */

static uint64_t fz_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void fz_init(void)
{
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    struct sockaddr_in bound;
    int len = sizeof bound;

    log_set_fd(devnull); /* formatted and written, but not to the terminal */
    log_set_level(LOG_LEVEL_DEBUG);
    FZ_CHECK(uv_loop_init(&fz_loop) == 0, "uv_loop_init");
    uv_ip4_addr("127.0.0.1", 0, &fz_addr);
    int rc = admin_http_open(&fz_srv, &fz_loop, (const struct sockaddr *)&fz_addr, fz_routes,
                             sizeof fz_routes / sizeof fz_routes[0], &fz_srv);
    FZ_CHECK(rc == ADMIN_HTTP_OK, "admin_http_open: %s", admin_http_strerror(rc));
    FZ_CHECK(uv_tcp_getsockname(&fz_srv.listener, (struct sockaddr *)&bound, &len) == 0,
             "getsockname");
    fz_addr.sin_port = bound.sin_port;
}

/* What came back: HTTP/1.1 responses, back to back. Returns the number of
 * final (non-1xx) ones. A response to HEAD has a Content-Length but no
 * body; no body a route writes starts with "HTTP/", so one is told by what
 * follows its head. */
static size_t fz_check_responses(const char *b, size_t n)
{
    size_t pos = 0, finals = 0;
    int closed = 0;

    while (pos < n) {
        const char *head = b + pos, *end, *cl;
        size_t left = n - pos, head_len, body;
        FZ_CHECK(left >= 12 && memcmp(head, "HTTP/1.1 ", 9) == 0, "response %zu at byte %zu: %.*s",
                 finals, pos, (int)(left < 40 ? left : 40), head);
        end = memmem(head, left < 1024 ? left : 1024, "\r\n\r\n", 4);
        FZ_CHECK(end != NULL, "response %zu: head not terminated", finals);
        head_len = (size_t)(end - head) + 4;
        int status = (head[9] - '0') * 100 + (head[10] - '0') * 10 + (head[11] - '0');
        FZ_CHECK(status >= 100 && status <= 599 && head[12] == ' ', "status line %.*s", 16, head);
        FZ_CHECK(!closed, "a response after 'Connection: close'");
        pos += head_len;
        if (status < 200)
            continue; /* 100 Continue: no body, no Content-Length */
        finals++;
        closed = memmem(head, head_len, "\r\nConnection: close\r\n", 21) != NULL;
        if (status == 304)
            continue; /* no body, and admin_http sends no Content-Length for it */
        cl = memmem(head, head_len, "\r\nContent-Length: ", 18);
        FZ_CHECK(cl != NULL, "response %zu has no Content-Length", finals);
        body = strtoul(cl + 18, NULL, 10);
        if (pos == n || (n - pos >= 5 && memcmp(b + pos, "HTTP/", 5) == 0))
            continue; /* HEAD */
        FZ_CHECK(n - pos >= body, "response %zu: %zu body bytes of %zu", finals, n - pos, body);
        pos += body;
    }
    return finals;
}

struct fz_piece {
    const uint8_t *p;
    size_t len;
};

/* Sends the pieces one per loop turn once the server has the connection,
 * half-closes, and reads everything until the server closes. Returns the
 * response bytes (or sets *reset if the connection was reset). */
static size_t fz_exchange(const struct fz_piece *pieces, size_t npieces, char *out, int *reset)
{
    uint64_t start = fz_now_ms(), accepted = fz_srv.stats.accepted;
    size_t got = 0, piece = 0, off = 0;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, eof = 0, shut = 0;

    FZ_CHECK(fd >= 0, "socket: %s", strerror(errno));
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (connect(fd, (struct sockaddr *)&fz_addr, sizeof fz_addr) != 0) {
        /* libFuzzer's timers interrupt blocking calls: wait with poll */
        struct pollfd pfd = { .fd = fd, .events = POLLOUT };
        int err = errno;
        socklen_t len = sizeof err;
        FZ_CHECK(err == EINPROGRESS || err == EINTR, "connect: %s", strerror(err));
        while (poll(&pfd, 1, FZ_WALL_MS) < 0 && errno == EINTR)
            FZ_CHECK(fz_now_ms() - start < FZ_WALL_MS, "connect did not finish");
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        FZ_CHECK(err == 0, "connect: %s", strerror(err));
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    while (fz_srv.stats.accepted == accepted) {
        uv_run(&fz_loop, UV_RUN_NOWAIT);
        FZ_CHECK(fz_now_ms() - start < FZ_WALL_MS, "server never accepted");
    }
    *reset = 0;
    while (!eof || !shut) { /* a server that closed first still reads till our FIN */
        FZ_CHECK(fz_now_ms() - start < FZ_WALL_MS,
                 "exchange not over after %d ms (sent %zu of %zu pieces, got %zu bytes)",
                 FZ_WALL_MS, piece, npieces, got);
        if (piece < npieces) {
            ssize_t n = pieces[piece].len == 0 ? 0
                                               : send(fd, pieces[piece].p + off,
                                                      pieces[piece].len - off, MSG_NOSIGNAL);
            if (n >= 0) {
                off += (size_t)n;
                if (off == pieces[piece].len) {
                    piece++;
                    off = 0;
                }
            } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                piece = npieces; /* the server closed: what it answered still counts */
            }
        } else if (!shut) {
            shutdown(fd, SHUT_WR);
            shut = 1;
        }
        while (!eof) {
            ssize_t n = recv(fd, out + got, got < FZ_OUT_MAX ? FZ_OUT_MAX - got : 0, 0);
            if (n > 0) {
                got += (size_t)n;
                FZ_CHECK(got < FZ_OUT_MAX, "over %d response bytes", FZ_OUT_MAX);
                continue;
            }
            if (n == 0)
                eof = 1;
            else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                eof = *reset = 1;
            break;
        }
        uv_run(&fz_loop, UV_RUN_NOWAIT);
    }
    /* the server closes its handles in callbacks: let them run */
    while (fz_srv.nconns > 0 || fz_srv.rejecting > 0) {
        FZ_CHECK(fz_now_ms() - start < FZ_WALL_MS, "%zu connections still open after EOF",
                 fz_srv.nconns);
        uv_run(&fz_loop, UV_RUN_NOWAIT);
    }
    close(fd);
    return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int ready;
    static char *out;
    struct fz_piece pieces[4];
    size_t npieces = 0, cuts[5], ncuts;
    int reset;

    if (!ready) {
        fz_init();
        out = malloc(FZ_OUT_MAX);
        ready = 1;
    }
    if (size < 4)
        return 0;
    const uint8_t *req = data + 4;
    size_t len = size - 4;
    /* cut points from bytes 1..3, sorted, so each piece is its own read */
    ncuts = data[0] % 4;
    cuts[0] = 0;
    for (size_t i = 0; i < ncuts; i++) {
        size_t c = len ? (size_t)data[1 + i] * len / 255 : 0, j = i + 1;
        while (j > 1 && cuts[j - 1] > c) {
            cuts[j] = cuts[j - 1];
            j--;
        }
        cuts[j] = c;
    }
    cuts[ncuts + 1] = len;
    for (size_t i = 0; i <= ncuts; i++)
        if (cuts[i + 1] > cuts[i])
            pieces[npieces++] = (struct fz_piece){ req + cuts[i], cuts[i + 1] - cuts[i] };

    fz_big_left = FZ_BIG_MAX;
    struct admin_http_stats before = fz_srv.stats;
    size_t got = fz_exchange(pieces, npieces, out, &reset);
    if (!reset) {
        size_t finals = fz_check_responses(out, got);
        uint64_t requests = fz_srv.stats.requests - before.requests;
        uint64_t refused = (fz_srv.stats.too_large - before.too_large) +
                           (fz_srv.stats.bad_requests - before.bad_requests);
        FZ_CHECK(finals >= requests && finals <= requests + refused,
                 "%zu answers for %llu requests routed and %llu refused", finals,
                 (unsigned long long)requests, (unsigned long long)refused);
    }
    FZ_CHECK(fz_srv.stats.timeouts == before.timeouts, "a deadline fired");
    return 0;
}
