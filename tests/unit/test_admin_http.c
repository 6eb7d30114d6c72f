/* test_admin_http: a real admin_http server on 127.0.0.1 (port 0) on a uv
 * loop in the main thread, driven by a client thread with blocking sockets.
 * Owns only its dummy routes. Must never hang (a uv timer bounds the run and
 * every socket has SO_RCVTIMEO) or pass on a wrong status, header or byte:
 * every failed check is printed and the exit status is 1. */
#define _GNU_SOURCE /* memmem */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "server/admin_http.h"
#include "server/prom.h"

#include "check.h"

#define TEST_DEADLINE_MS 300     /* the server's per-connection deadline here */
#define TEST_RUN_LIMIT_MS 60000  /* the whole run, enforced by a uv timer */
#define TEST_RCV_TIMEOUT_MS 3000 /* any single client wait */
#define TEST_CLI_BUF (128 * 1024)
#define TEST_HEAD_MAX 4096
#define TEST_BODY_MAX (64 * 1024)
#define TEST_BIG_BYTES (1024 * 1024)
#define TEST_BIG_REQUESTS 64
#define TEST_CAP 2

/* ---- routes (run on the loop thread) ---------------------------------------- */

static const char test_metrics_body[] =
    "# HELP slabtap_test_requests_total Requests seen \\\\ counted\\nsecond line\n"
    "# TYPE slabtap_test_requests_total counter\n"
    "slabtap_test_requests_total{route=\"/health\",note=\"say \\\"hi\\\"\"} 7\n"
    "# HELP slabtap_test_open Things open\n"
    "# TYPE slabtap_test_open gauge\n"
    "slabtap_test_open 2\n";

static void route_health(const struct admin_http_request *req, struct admin_http_response *resp)
{
    (void)req;
    admin_http_respond(resp, 200, "application/json", "{\"status\":\"ok\"}", 15);
}

static void route_phase(const struct admin_http_request *req, struct admin_http_response *resp)
{
    char name[128], esc[512];
    int n = admin_http_query_param(req, "name", name, sizeof name);

    if (n < 0) {
        admin_http_set_status(resp, 400, "text/plain");
        admin_http_body_printf(resp, "bad name: %s\n", admin_http_strerror(-n));
    } else {
        json_escape(esc, sizeof esc, name, (size_t)n);
        admin_http_set_status(resp, 200, "application/json");
        admin_http_body_printf(resp, "{\"phase\":\"%s\"}", esc);
    }
}

static void route_metrics(const struct admin_http_request *req, struct admin_http_response *resp)
{
    static const struct prom_label labels[] = { { "route", "/health" }, { "note", "say \"hi\"" } };
    struct prom_writer w;

    (void)req;
    admin_http_set_status(resp, 200, PROM_CONTENT_TYPE);
    prom_writer_init(&w, admin_http_body_sink, resp);
    prom_declare(&w, "slabtap_test_requests_total", PROM_COUNTER,
                 "Requests seen \\ counted\nsecond line");
    prom_sample_u64(&w, labels, 2, 7);
    prom_declare(&w, "slabtap_test_open", PROM_GAUGE, "Things open");
    prom_sample_u64(&w, NULL, 0, 2);
    if (prom_writer_finish(&w) != PROM_OK)
        admin_http_respond(resp, 500, "text/plain", "prom\n", 5);
}

static void route_echo(const struct admin_http_request *req, struct admin_http_response *resp)
{
    admin_http_respond(resp, 200, "application/octet-stream", req->body, req->body_len);
}

static void route_hdr(const struct admin_http_request *req, struct admin_http_response *resp)
{
    const char *v = admin_http_header(req, "x-test");

    admin_http_body_printf(resp, "%s", v != NULL ? v : "(none)");
}

static void route_big(const struct admin_http_request *req, struct admin_http_response *resp)
{
    static char chunk[64 * 1024];

    (void)req;
    memset(chunk, 'x', sizeof chunk);
    for (size_t i = 0; i < TEST_BIG_BYTES / sizeof chunk; i++)
        admin_http_body_append(resp, chunk, sizeof chunk);
}

/* Fills the body to exactly the bound, then one byte more: the overflow
 * must be refused and the client must get a 500, not a cut body. */
static void route_huge(const struct admin_http_request *req, struct admin_http_response *resp)
{
    static char chunk[64 * 1024];
    int ok = 1;

    (void)req;
    for (size_t i = 0; i < ADMIN_HTTP_MAX_RESPONSE_BYTES / sizeof chunk; i++)
        ok &= admin_http_body_append(resp, chunk, sizeof chunk) == ADMIN_HTTP_OK;
    ok &= admin_http_body_printf(resp, "x") == ADMIN_HTTP_ERR_TOO_LARGE;
    if (!ok)
        admin_http_respond(resp, 200, "text/plain", "bound not enforced\n", 19);
}

/* Misbehaves on purpose (blocks the loop past the deadline): the next
 * request's window must start when this answer is queued, not before. */
static void route_slow(const struct admin_http_request *req, struct admin_http_response *resp)
{
    (void)req;
    usleep((TEST_DEADLINE_MS + 200) * 1000);
    admin_http_body_printf(resp, "slow");
}

static void route_silent(const struct admin_http_request *req, struct admin_http_response *resp)
{
    (void)req;
    (void)resp;
}

/* Answers later, from a timer (as webapi answers from the writer thread):
 * the request after it on the same connection must wait for it. */
static uv_timer_t test_later_timer;
static uint64_t test_later_token, test_later_stale;
static int test_later_stale_rc = -1;
static struct admin_http test_srv;

static void on_later(uv_timer_t *t)
{
    (void)t;
    admin_http_answer_later(&test_srv, test_later_token, 200, "text/plain", "later", 5);
    /* a token answered already, or never given: nothing happens */
    test_later_stale_rc =
        admin_http_answer_later(&test_srv, test_later_token, 200, "text/plain", "again", 5);
    test_later_stale = test_later_token;
}

static void route_later(const struct admin_http_request *req, struct admin_http_response *resp)
{
    (void)req;
    test_later_token = admin_http_defer(resp);
    uv_timer_start(&test_later_timer, on_later, 50, 0);
}

static const struct admin_http_route test_route_table[] = {
    { "GET", "/later", route_later },      { "GET", "/health", route_health },
    { "POST", "/api/phase", route_phase }, { "GET", "/metrics", route_metrics },
    { "POST", "/echo", route_echo },       { "GET", "/hdr", route_hdr },
    { "GET", "/big", route_big },          { "GET", "/huge", route_huge },
    { "GET", "/silent", route_silent },    { "GET", "/slow", route_slow },
};

/* ---- the loop thread and the bridge to it ----------------------------------- */

static uv_loop_t test_loop;
static uv_timer_t test_limit;
static int test_limit_hit, test_srv_closed;

/* Runs fn(arg) on the loop thread and waits for it: the only way the
 * client thread touches server state. */
static struct {
    uv_async_t async;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(void *);
    void *arg;
    int done;
} bridge = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static void bridge_on_async(uv_async_t *a)
{
    void (*fn)(void *);
    void *arg;

    (void)a;
    pthread_mutex_lock(&bridge.mu);
    fn = bridge.fn;
    arg = bridge.arg;
    pthread_mutex_unlock(&bridge.mu);
    if (fn != NULL)
        fn(arg);
    pthread_mutex_lock(&bridge.mu);
    bridge.fn = NULL;
    bridge.done = 1;
    pthread_cond_signal(&bridge.cv);
    pthread_mutex_unlock(&bridge.mu);
}

static void bridge_call(void (*fn)(void *), void *arg)
{
    pthread_mutex_lock(&bridge.mu);
    bridge.fn = fn;
    bridge.arg = arg;
    bridge.done = 0;
    pthread_mutex_unlock(&bridge.mu);
    uv_async_send(&bridge.async);
    pthread_mutex_lock(&bridge.mu);
    while (!bridge.done)
        pthread_cond_wait(&bridge.cv, &bridge.mu);
    pthread_mutex_unlock(&bridge.mu);
}

struct test_peek {
    size_t nconns;
    struct admin_http_stats stats;
    size_t set_max; /* 0: leave max_connections alone */
};

static void peek_on_loop(void *arg)
{
    struct test_peek *p = arg;

    p->nconns = test_srv.nconns;
    p->stats = test_srv.stats;
    if (p->set_max > 0)
        test_srv.max_connections = p->set_max;
}

static void on_srv_closed(struct admin_http *s)
{
    (void)s;
    test_srv_closed++;
}

static void shutdown_on_loop(void *arg)
{
    (void)arg;
    admin_http_close(&test_srv, on_srv_closed);
    uv_close((uv_handle_t *)&test_limit, NULL);
    uv_close((uv_handle_t *)&test_later_timer, NULL);
    uv_close((uv_handle_t *)&bridge.async, NULL);
}

static void on_limit(uv_timer_t *t)
{
    (void)t;
    test_limit_hit = 1;
    uv_stop(&test_loop);
}

/* ---- a blocking client ------------------------------------------------------ */

struct cli {
    int fd;
    size_t len;
    char buf[TEST_CLI_BUF];
};

struct resp {
    int status;
    char head[TEST_HEAD_MAX];
    char body[TEST_BODY_MAX + 1];
    size_t body_len;
};

static long ms_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void cli_timeout(struct cli *k, int ms)
{
    struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

    setsockopt(k->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

static struct cli *cli_open(int port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    struct cli *k = calloc(1, sizeof *k);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    k->fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(k->fd >= 0 && connect(k->fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect: %s",
          strerror(errno));
    cli_timeout(k, TEST_RCV_TIMEOUT_MS);
    return k;
}

static void cli_close(struct cli *k)
{
    close(k->fd);
    free(k);
}

static int cli_send(struct cli *k, const char *data, size_t len)
{
    size_t off = 0;
    ssize_t n = 0;

    while (off < len && (n = send(k->fd, data + off, len - off, MSG_NOSIGNAL)) > 0)
        off += (size_t)n;
    return off == len ? 0 : -1;
}

static int cli_sends(struct cli *k, const char *s)
{
    return cli_send(k, s, strlen(s));
}

/* >0 bytes read, 0 EOF, -1 error or timeout */
static ssize_t cli_fill(struct cli *k)
{
    ssize_t n = -1;

    if (k->len < sizeof k->buf)
        n = recv(k->fd, k->buf + k->len, sizeof k->buf - k->len, 0);
    if (n > 0)
        k->len += (size_t)n;
    return n < 0 ? -1 : n;
}

/* Copies the value of header name (case-insensitive) from a response head. */
static int resp_header(const struct resp *r, const char *name, char *out, size_t cap)
{
    size_t nlen = strlen(name);
    const char *p = strstr(r->head, "\r\n");
    int found = 0;

    while (!found && p != NULL && p[2] != '\r') {
        p += 2;
        if (strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
            const char *v = p + nlen + 1 + strspn(p + nlen + 1, " ");
            size_t vlen = strcspn(v, "\r");
            snprintf(out, cap, "%.*s", (int)vlen, v);
            found = 1;
        }
        p = strstr(p, "\r\n");
    }
    return found;
}

/* Reads one response (no body when head_only); 0 ok, -1 EOF/timeout/junk. */
static int cli_read(struct cli *k, struct resp *r, int head_only)
{
    char *end = NULL;
    size_t hlen = 0, clen = 0;
    char cl[32];
    int rc = 0;

    memset(r, 0, sizeof *r);
    while (rc == 0 && (end = memmem(k->buf, k->len, "\r\n\r\n", 4)) == NULL)
        rc = cli_fill(k) > 0 ? 0 : -1;
    if (rc == 0) {
        hlen = (size_t)(end - k->buf) + 4;
        rc = hlen < sizeof r->head ? 0 : -1;
    }
    if (rc == 0) {
        memcpy(r->head, k->buf, hlen);
        rc = sscanf(r->head, "HTTP/1.1 %d ", &r->status) == 1 ? 0 : -1;
    }
    if (rc == 0 && !head_only && resp_header(r, "Content-Length", cl, sizeof cl))
        clen = strtoul(cl, NULL, 10);
    if (clen > TEST_BODY_MAX)
        rc = -1;
    while (rc == 0 && k->len < hlen + clen)
        rc = cli_fill(k) > 0 ? 0 : -1;
    if (rc == 0) {
        memcpy(r->body, k->buf + hlen, clen);
        r->body_len = clen;
        memmove(k->buf, k->buf + hlen + clen, k->len - hlen - clen);
        k->len -= hlen + clen;
    }
    return rc;
}

/* 1 if the server closed (EOF or reset) within ms; *extra counts bytes that
 * arrived first (beyond any already buffered). */
static int cli_closed_within(struct cli *k, int ms, size_t *extra)
{
    struct timespec t0;
    char sink[16384];
    ssize_t n = 1;

    *extra = k->len;
    cli_timeout(k, ms);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (n > 0 && ms_since(&t0) <= ms) {
        n = recv(k->fd, sink, sizeof sink, 0);
        if (n > 0)
            *extra += (size_t)n;
    }
    cli_timeout(k, TEST_RCV_TIMEOUT_MS);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

/* Sends req on k, reads the answer, checks status and (if non-NULL) body. */
static void expect(struct cli *k, const char *req, int status, const char *body, struct resp *r)
{
    int head_only = strncmp(req, "HEAD ", 5) == 0;

    CHECK(cli_sends(k, req) == 0, "send %.40s", req);
    if (cli_read(k, r, head_only) != 0) {
        CHECK(0, "no response to %.60s", req);
    } else {
        CHECK(r->status == status, "%.40s: status %d, want %d", req, r->status, status);
        CHECK(body == NULL ||
                  (r->body_len == strlen(body) && memcmp(r->body, body, r->body_len) == 0),
              "%.40s: body \"%.*s\", want \"%s\"", req, (int)r->body_len, r->body, body);
    }
}

static void expect_header(const struct resp *r, const char *name, const char *want)
{
    char v[256] = "";
    int found = resp_header(r, name, v, sizeof v);

    CHECK(want == NULL ? !found : (found && strcmp(v, want) == 0),
          "header %s: \"%s\" (found %d), want \"%s\"", name, v, found, want ? want : "(absent)");
}

static void expect_closed(struct cli *k, const char *what)
{
    size_t extra = 0;

    CHECK(cli_closed_within(k, 2000, &extra) && extra == 0,
          "%s: connection not closed cleanly (extra bytes %zu)", what, extra);
}

/* ---- the checks ---------------------------------------------------------------- */

static void test_routes(int port)
{
    struct cli *k = cli_open(port);
    static struct resp r;
    static const char echo_nul[] = "POST /echo HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello\0world";

    expect(k, "GET /health HTTP/1.1\r\nHost: t\r\n\r\n", 200, "{\"status\":\"ok\"}", &r);
    expect_header(&r, "Content-Type", "application/json");
    expect_header(&r, "Content-Length", "15");
    expect_header(&r, "Connection", NULL);
    expect(k, "POST /api/phase?name=warm%20up+x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 200,
           "{\"phase\":\"warm up x\"}", &r);
    expect(k, "POST /api/phase?x=1&name=a%22b%5C%e2%82%ac&name=second HTTP/1.1\r\n\r\n", 200,
           "{\"phase\":\"a\\\"b\\\\\xe2\x82\xac\"}", &r);
    expect(k, "POST /api/phase?name=%zz HTTP/1.1\r\n\r\n", 400,
           "bad name: query parameter has a bad or NUL %-escape\n", &r);
    expect(k, "POST /api/phase?name=a%00b HTTP/1.1\r\n\r\n", 400, NULL, &r);
    expect(k, "POST /api/phase?names=x HTTP/1.1\r\n\r\n", 400, "bad name: query parameter absent\n",
           &r);
    expect(k, "GET /metrics HTTP/1.1\r\n\r\n", 200, test_metrics_body, &r);
    expect_header(&r, "Content-Type", PROM_CONTENT_TYPE);
    expect(k, "GET /nope HTTP/1.1\r\n\r\n", 404, "not found\n", &r);
    expect(k, "GET /health/ HTTP/1.1\r\n\r\n", 404, NULL, &r);
    expect(k, "DELETE /health HTTP/1.1\r\n\r\n", 405, "method not allowed\n", &r);
    expect_header(&r, "Allow", "GET, HEAD");
    expect(k, "GET /api/phase?name=x HTTP/1.1\r\n\r\n", 405, NULL, &r);
    expect_header(&r, "Allow", "POST");
    expect(k, "HEAD /health HTTP/1.1\r\n\r\n", 200, "", &r);
    expect_header(&r, "Content-Length", "15");
    /* a stray HEAD body would show up as garbage before this answer */
    expect(k, "GET /hdr HTTP/1.1\r\nX-Test: hello there\r\n\r\n", 200, "hello there", &r);
    expect(k, "GET /hdr HTTP/1.1\r\nX-Empty:\r\n\r\n", 200, "(none)", &r);
    CHECK(cli_send(k, echo_nul, sizeof echo_nul - 1) == 0 && cli_read(k, &r, 0) == 0 &&
              r.status == 200 && r.body_len == 11 && memcmp(r.body, "hello\0world", 11) == 0,
          "echo with a NUL byte");
    expect(k,
           "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
           "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
           200, "hello world", &r);
    expect(k, "GET /silent HTTP/1.1\r\n\r\n", 500, "handler gave no answer\n", &r);
    expect(k, "GET /huge HTTP/1.1\r\n\r\n", 500, "handler answer too large or invalid\n", &r);
    expect(k, "GET /health?x=1 HTTP/1.1\r\n\r\n", 200, "{\"status\":\"ok\"}", &r);
    cli_close(k);
}

static void test_pipelined(int port)
{
    struct cli *k = cli_open(port);
    static struct resp r;

    CHECK(cli_sends(k, "GET /health HTTP/1.1\r\nHost: t\r\n\r\n"
                       "POST /api/phase?name=two HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
                       "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nthree"
                       "GET /nope HTTP/1.1\r\n\r\n") == 0,
          "pipelined send");
    CHECK(cli_read(k, &r, 0) == 0 && r.status == 200 && strcmp(r.body, "{\"status\":\"ok\"}") == 0,
          "pipelined 1: %d %s", r.status, r.body);
    CHECK(cli_read(k, &r, 0) == 0 && r.status == 200 && strcmp(r.body, "{\"phase\":\"two\"}") == 0,
          "pipelined 2: %d %s", r.status, r.body);
    CHECK(cli_read(k, &r, 0) == 0 && r.status == 200 && strcmp(r.body, "three") == 0,
          "pipelined 3: %d %s", r.status, r.body);
    CHECK(cli_read(k, &r, 0) == 0 && r.status == 404, "pipelined 4: %d", r.status);
    /* still open: keep-alive */
    expect(k, "GET /health HTTP/1.1\r\n\r\n", 200, "{\"status\":\"ok\"}", &r);
    cli_close(k);
}

static void bridge_nothing(void *arg)
{
    (void)arg;
}

static void test_later(int port)
{
    struct cli *k = cli_open(port);
    static struct resp r;

    /* pipelined: the deferred answer comes first, then the next request's */
    CHECK(cli_sends(k, "GET /later HTTP/1.1\r\n\r\nGET /health HTTP/1.1\r\n\r\n") == 0,
          "later send");
    CHECK(cli_read(k, &r, 0) == 0 && r.status == 200 && strcmp(r.body, "later") == 0,
          "later 1: %d %s", r.status, r.body);
    CHECK(cli_read(k, &r, 0) == 0 && r.status == 200 && strcmp(r.body, "{\"status\":\"ok\"}") == 0,
          "later 2: %d %s", r.status, r.body);
    /* on_later sets it after its answer went out: a call on the loop thread
     * returns once on_later has finished */
    bridge_call(bridge_nothing, NULL);
    CHECK(test_later_stale_rc == ADMIN_HTTP_ERR_ARGS, "a second answer to a token: %d",
          test_later_stale_rc);
    expect(k, "HEAD /later HTTP/1.1\r\n\r\n", 200, "", &r);
    expect_header(&r, "Content-Length", "5");
    expect(k, "GET /later HTTP/1.1\r\nConnection: close\r\n\r\n", 200, "later", &r);
    expect_closed(k, "later, Connection: close");
    cli_close(k);
    /* the client goes away before the answer: answering later is harmless */
    k = cli_open(port);
    CHECK(cli_sends(k, "GET /later HTTP/1.1\r\n\r\n") == 0, "later send");
    cli_close(k);
    usleep(150 * 1000);
}

static void test_slow_handler(int port)
{
    static struct resp r;
    struct cli *k = cli_open(port);

    expect(k, "GET /slow HTTP/1.1\r\n\r\n", 200, "slow", &r);
    expect(k, "GET /health HTTP/1.1\r\n\r\n", 200, "{\"status\":\"ok\"}", &r);
    cli_close(k);
}

static void test_connection_close(int port)
{
    static struct resp r;
    struct cli *k = cli_open(port);

    /* the second request must never be answered */
    expect(k, "GET /health HTTP/1.1\r\nConnection: close\r\n\r\nGET /health HTTP/1.1\r\n\r\n", 200,
           "{\"status\":\"ok\"}", &r);
    expect_header(&r, "Connection", "close");
    expect_closed(k, "Connection: close");
    cli_close(k);

    k = cli_open(port);
    expect(k, "GET /health HTTP/1.0\r\n\r\n", 200, "{\"status\":\"ok\"}", &r);
    expect_header(&r, "Connection", "close");
    expect_closed(k, "HTTP/1.0");
    cli_close(k);

    k = cli_open(port);
    expect(k, "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 200, NULL, &r);
    expect_header(&r, "Connection", "keep-alive");
    expect(k, "GET /health HTTP/1.1\r\n\r\n", 200, NULL, &r);
    cli_close(k);
}

static void test_bad_and_large(int port)
{
    static struct resp r;
    static char req[ADMIN_HTTP_MAX_BODY_BYTES + 16384];
    struct cli *k = cli_open(port);
    size_t n;

    expect(k, "\x01\x02 NOT HTTP\r\n\r\n", 400, "bad request\n", &r);
    expect_header(&r, "Connection", "close");
    expect_closed(k, "400");
    cli_close(k);

    /* a head just under the bound passes, one over it is refused */
    k = cli_open(port);
    n = (size_t)snprintf(req, sizeof req, "GET /health HTTP/1.1\r\nX-Pad: %0*d\r\n\r\n",
                         ADMIN_HTTP_MAX_HEAD_BYTES - 64, 0);
    expect(k, req, 200, NULL, &r);
    snprintf(req, sizeof req, "GET /health HTTP/1.1\r\nX-Pad: %0*d\r\n\r\n",
             ADMIN_HTTP_MAX_HEAD_BYTES + 1024, 0);
    expect(k, req, 413, "request too large\n", &r);
    expect_closed(k, "413 head");
    cli_close(k);
    (void)n;

    k = cli_open(port);
    n = (size_t)snprintf(req, sizeof req, "GET /health HTTP/1.1\r\n");
    for (int i = 0; i <= ADMIN_HTTP_MAX_HEADERS; i++)
        n += (size_t)snprintf(req + n, sizeof req - n, "X-%d: 1\r\n", i);
    snprintf(req + n, sizeof req - n, "\r\n");
    expect(k, req, 413, NULL, &r);
    expect_closed(k, "413 headers");
    cli_close(k);

    k = cli_open(port);
    expect(k, "POST /echo HTTP/1.1\r\nContent-Length: 100000\r\n\r\n", 413, NULL, &r);
    expect_closed(k, "413 Content-Length");
    cli_close(k);

    /* chunked announces nothing: the bound must hold while counting */
    k = cli_open(port);
    n = (size_t)snprintf(req, sizeof req,
                         "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                         "\r\n%x\r\n",
                         ADMIN_HTTP_MAX_BODY_BYTES + 1);
    memset(req + n, 'b', ADMIN_HTTP_MAX_BODY_BYTES + 1);
    n += ADMIN_HTTP_MAX_BODY_BYTES + 1;
    n += (size_t)snprintf(req + n, sizeof req - n, "\r\n0\r\n\r\n");
    CHECK(cli_send(k, req, n) == 0 && cli_read(k, &r, 0) == 0 && r.status == 413, "413 chunked: %d",
          r.status);
    expect_closed(k, "413 chunked");
    cli_close(k);
}

static void test_expect_continue(int port)
{
    static struct resp r;
    struct cli *k = cli_open(port);

    CHECK(cli_sends(
              k, "POST /echo HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n") == 0,
          "send");
    CHECK(cli_read(k, &r, 1) == 0 && r.status == 100, "100 Continue: %d", r.status);
    expect(k, "hello", 200, "hello", &r);
    cli_close(k);
}

/* A client that sends half a request and stalls, one that trickles a byte
 * at a time, and one served normally while both hang on. */
static void test_slowloris(int port)
{
    static struct resp r;
    struct cli *stall = cli_open(port), *trickle = cli_open(port), *good;
    struct timespec t0;
    size_t extra = 0;
    int closed = 0;
    long ms;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(cli_sends(stall, "GET /health HTTP/1.1\r\nHost:") == 0, "stall send");
    CHECK(cli_sends(trickle, "GET /health HTTP/1.1\r\nX-Slow: ") == 0, "trickle send");
    good = cli_open(port);
    expect(good, "GET /health HTTP/1.1\r\n\r\n", 200, "{\"status\":\"ok\"}", &r);
    /* the good client keeps being served (each request well inside its own
     * deadline) while the trickler keeps sending */
    while (!closed && ms_since(&t0) < 4 * TEST_DEADLINE_MS) {
        usleep(TEST_DEADLINE_MS * 1000 / 6);
        closed = cli_sends(trickle, "a") != 0 ||
                 (recv(trickle->fd, r.body, 1, MSG_DONTWAIT) <= 0 && errno != EAGAIN);
        expect(good, "GET /health HTTP/1.1\r\n\r\n", 200, "{\"status\":\"ok\"}", &r);
    }
    ms = ms_since(&t0);
    CHECK(closed && ms >= TEST_DEADLINE_MS - 50, "trickling client closed=%d after %ld ms", closed,
          ms);
    CHECK(cli_closed_within(stall, 2000, &extra) && extra == 0, "stalled client not closed");
    ms = ms_since(&t0);
    CHECK(ms >= TEST_DEADLINE_MS - 50 && ms < 2000, "stalled client closed after %ld ms", ms);
    cli_close(stall);
    cli_close(trickle);
    cli_close(good);
}

/* Asks for far more than the socket buffers hold and never reads: the
 * server must stop answering and close by the deadline, not queue 64 MiB. */
static void test_not_reading(int port)
{
    static char reqs[TEST_BIG_REQUESTS * 32];
    struct cli *k = cli_open(port);
    size_t n = 0, extra = 0;

    for (int i = 0; i < TEST_BIG_REQUESTS; i++)
        n += (size_t)snprintf(reqs + n, sizeof reqs - n, "GET /big HTTP/1.1\r\n\r\n");
    CHECK(cli_send(k, reqs, n) == 0, "send big requests");
    usleep(4 * TEST_DEADLINE_MS * 1000);
    CHECK(cli_closed_within(k, 5000, &extra), "non-reading client still open");
    CHECK(extra < (size_t)TEST_BIG_REQUESTS * TEST_BIG_BYTES / 2,
          "server queued %zu bytes for a client that does not read", extra);
    cli_close(k);
}

static void peek(struct test_peek *p, size_t set_max)
{
    memset(p, 0, sizeof *p);
    p->set_max = set_max;
    bridge_call(peek_on_loop, p);
}

/* Waits (bounded) until the server holds at most n connections. */
static void wait_conns(size_t n)
{
    struct test_peek p;
    struct timespec t0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        usleep(10000);
        peek(&p, 0);
    } while (p.nconns > n && ms_since(&t0) < 3000);
    CHECK(p.nconns <= n, "server still holds %zu connections, want <= %zu", p.nconns, n);
}

/* At the cap a new connection takes the place of the oldest one that is not
 * sending an answer: idle keep-alive clients and slowloris clients alike
 * cannot keep a probe out. */
static void test_cap(int port)
{
    static struct resp r;
    struct cli *k[TEST_CAP], *extra_k;
    struct test_peek p;
    size_t got = 0;

    wait_conns(0);
    peek(&p, TEST_CAP);
    for (int i = 0; i < TEST_CAP; i++) {
        k[i] = cli_open(port);
        expect(k[i], "GET /health HTTP/1.1\r\n\r\n", 200, NULL, &r);
    }
    extra_k = cli_open(port);
    expect(extra_k, "GET /health HTTP/1.1\r\n\r\n", 200, NULL, &r);
    CHECK(cli_closed_within(k[0], 2000, &got) && got == 0, "the oldest idle one not evicted");
    cli_close(extra_k);
    for (int i = 0; i < TEST_CAP; i++)
        cli_close(k[i]);
    wait_conns(0);
    /* every slot held by a client trickling its head: /health still answers */
    for (int i = 0; i < TEST_CAP; i++) {
        k[i] = cli_open(port);
        cli_sends(k[i], "GET /health HTTP/1.1\r\nX-Slow: ");
    }
    extra_k = cli_open(port);
    expect(extra_k, "GET /health HTTP/1.1\r\n\r\n", 200, NULL, &r);
    cli_close(extra_k);
    for (int i = 0; i < TEST_CAP; i++)
        cli_close(k[i]);
    peek(&p, ADMIN_HTTP_MAX_CONNECTIONS);
}

static void *client_main(void *arg)
{
    int port = *(int *)arg;
    struct test_peek p;

    test_routes(port);
    test_pipelined(port);
    test_later(port);
    test_slow_handler(port);
    test_connection_close(port);
    test_bad_and_large(port);
    test_expect_continue(port);
    test_slowloris(port);
    test_not_reading(port);
    test_cap(port);
    wait_conns(0);
    peek(&p, 0);
    CHECK(p.stats.timeouts >= 3, "timeouts %llu", (unsigned long long)p.stats.timeouts);
    CHECK(p.stats.too_large >= 4, "too_large %llu", (unsigned long long)p.stats.too_large);
    CHECK(p.stats.bad_requests >= 1, "bad_requests %llu", (unsigned long long)p.stats.bad_requests);
    CHECK(p.stats.rejected == 0, "rejected %llu", (unsigned long long)p.stats.rejected);
    CHECK(p.stats.evicted == 2, "evicted %llu", (unsigned long long)p.stats.evicted);
    CHECK(p.stats.write_overflows == 0, "write_overflows %llu",
          (unsigned long long)p.stats.write_overflows);
    bridge_call(shutdown_on_loop, NULL);
    return NULL;
}

/* ---- main: open errors, then the live run ----------------------------------- */

static int test_other_closed;

static void on_other_closed(struct admin_http *s)
{
    (void)s;
    test_other_closed++;
}

static void test_open_errors(int port)
{
    static struct admin_http other;
    static const struct admin_http_route bad[] = { { "GET", "health", route_health } };
    struct sockaddr_in addr;
    int rc;

    uv_ip4_addr("127.0.0.1", port, &addr);
    rc = admin_http_open(&other, &test_loop, (const struct sockaddr *)&addr, bad, 1, NULL);
    CHECK(rc == ADMIN_HTTP_ERR_ROUTE, "bad route: %d", rc);
    admin_http_close(&other, on_other_closed);
    CHECK(test_other_closed == 1, "close after an early failure calls back at once");

    rc = admin_http_open(&other, &test_loop, (const struct sockaddr *)&addr, test_route_table, 1,
                         NULL);
    CHECK((rc == ADMIN_HTTP_ERR_BIND || rc == ADMIN_HTTP_ERR_LISTEN) &&
              other.uv_err == UV_EADDRINUSE,
          "second bind: %d %s (%s)", rc, admin_http_strerror(rc), uv_strerror(other.uv_err));
    admin_http_close(&other, on_other_closed);
    CHECK(test_other_closed == 1, "a created listener calls back only from its close callback");
    uv_run(&test_loop, UV_RUN_NOWAIT);
    CHECK(test_other_closed == 2, "listener close callback");
    CHECK(strcmp(admin_http_strerror(ADMIN_HTTP_ERR__COUNT), "unknown admin_http error") == 0,
          "strerror fallback");
}

int main(void)
{
    struct sockaddr_in addr;
    struct sockaddr_storage bound;
    int blen = sizeof bound, port = 0, rc;
    pthread_t th;

    uv_loop_init(&test_loop);
    uv_ip4_addr("127.0.0.1", 0, &addr);
    rc = admin_http_open(&test_srv, &test_loop, (const struct sockaddr *)&addr, test_route_table,
                         sizeof test_route_table / sizeof test_route_table[0], NULL);
    CHECK(rc == ADMIN_HTTP_OK, "open: %s (%s)", admin_http_strerror(rc),
          uv_strerror(test_srv.uv_err));
    if (rc != ADMIN_HTTP_OK)
        return check_done("test_admin_http");
    test_srv.deadline_ms = TEST_DEADLINE_MS;
    uv_tcp_getsockname(&test_srv.listener, (struct sockaddr *)&bound, &blen);
    port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    test_open_errors(port);
    uv_async_init(&test_loop, &bridge.async, bridge_on_async);
    uv_timer_init(&test_loop, &test_later_timer);
    uv_timer_init(&test_loop, &test_limit);
    uv_timer_start(&test_limit, on_limit, TEST_RUN_LIMIT_MS, 0);
    pthread_create(&th, NULL, client_main, &port);
    uv_run(&test_loop, UV_RUN_DEFAULT);
    if (test_limit_hit) {
        fprintf(stderr, "FAIL: run exceeded %d ms\n", TEST_RUN_LIMIT_MS);
        _exit(1);
    }
    pthread_join(th, NULL);
    CHECK(test_srv_closed == 1, "on_closed ran %d times", test_srv_closed);
    CHECK(uv_loop_close(&test_loop) == 0, "handles left on the loop");
    return check_done("test_admin_http");
}
