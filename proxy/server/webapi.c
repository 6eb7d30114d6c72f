/* webapi: routes of the live page's JSON API over record/query. */
#include "server/webapi.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonb.h"

/* ---- parameters (pure) -------------------------------------------------- */

#define WEBAPI_MAX_PARAMS 8

struct webapi_param {
    const char *name;
    int64_t min, max;
    bool seen;
    int64_t value;
};

/* A decimal integer, digits only, no sign, within [min, max]. */
static int webapi_number(const char *s, size_t n, int64_t min, int64_t max, int64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 19)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX || (int64_t)v < min || (int64_t)v > max)
        return -1;
    *out = (int64_t)v;
    return 0;
}

int webapi_parse(enum webapi_route route, const char *query, struct query_params *out, char *err,
                 size_t errlen)
{
    struct webapi_param ps[WEBAPI_MAX_PARAMS];
    size_t np = 0;
    memset(out, 0, sizeof *out);
    out->kind = (enum query_kind)route;
    ps[np++] = (struct webapi_param){ "run", 1, INT64_MAX, false, 0 };
    switch (route) {
    case WEBAPI_SIZES:
        ps[np++] = (struct webapi_param){ "buckets", QUERY_BUCKETS_MIN, QUERY_BUCKETS_MAX, false,
                                          WEBAPI_DEFAULT_BUCKETS };
        break;
    case WEBAPI_SERIES:
        ps[np++] = (struct webapi_param){ "from", 0, INT64_MAX, false, 0 };
        ps[np++] = (struct webapi_param){ "to", 1, INT64_MAX, false, 0 };
        ps[np++] = (struct webapi_param){ "points", QUERY_POINTS_MIN, QUERY_POINTS_MAX, false,
                                          WEBAPI_DEFAULT_POINTS };
        break;
    case WEBAPI_TRAFFIC:
        ps[np++] = (struct webapi_param){ "points", QUERY_POINTS_MIN, QUERY_POINTS_MAX, false,
                                          WEBAPI_DEFAULT_POINTS };
        ps[np++] = (struct webapi_param){ "top", 1, QUERY_TOP_MAX, false, WEBAPI_DEFAULT_TOP };
        break;
    case WEBAPI_READS:
        ps[np++] = (struct webapi_param){ "points", QUERY_POINTS_MIN, QUERY_POINTS_MAX, false,
                                          WEBAPI_DEFAULT_POINTS };
        ps[np++] =
            (struct webapi_param){ "top", 1, QUERY_TOP_MAX, false, WEBAPI_DEFAULT_READS_TOP };
        break;
    case WEBAPI_EVICTIONS:
        ps[np++] = (struct webapi_param){ "points", QUERY_POINTS_MIN, QUERY_POINTS_MAX, false,
                                          WEBAPI_DEFAULT_POINTS };
        ps[np++] = (struct webapi_param){ "top", 1, QUERY_TOP_MAX, false, WEBAPI_DEFAULT_TOP };
        break;
    case WEBAPI_SNAPSHOT:
        ps[np++] = (struct webapi_param){ "snap", 0, INT64_MAX, false, 0 };
        ps[np++] = (struct webapi_param){ "top", 1, QUERY_TOP_MAX, false, WEBAPI_DEFAULT_TOP };
        break;
    case WEBAPI_TARGETS:
    case WEBAPI_CLASSES:
    case WEBAPI_ADVICE:
    case WEBAPI_REPORTS: break;
    default: snprintf(err, errlen, "unknown route"); return -1;
    }
    for (const char *p = query ? query : ""; *p;) {
        size_t len = strcspn(p, "&");
        const char *eq = memchr(p, '=', len);
        size_t nlen = eq ? (size_t)(eq - p) : len;
        struct webapi_param *w = NULL;
        if (len == 0) { /* "a=1&&b=2", a trailing '&' */
            p++;
            continue;
        }
        for (size_t i = 0; i < np; i++)
            if (strlen(ps[i].name) == nlen && !memcmp(ps[i].name, p, nlen))
                w = &ps[i];
        if (!w) {
            snprintf(err, errlen, "unknown parameter '%.*s'", (int)(nlen > 32 ? 32 : nlen), p);
            return -1;
        }
        if (w->seen) {
            snprintf(err, errlen, "parameter '%s' given twice", w->name);
            return -1;
        }
        w->seen = true;
        if (!eq || webapi_number(eq + 1, len - nlen - 1, w->min, w->max, &w->value)) {
            if (w->max == INT64_MAX)
                snprintf(err, errlen, "'%s' must be an integer from %lld", w->name,
                         (long long)w->min);
            else
                snprintf(err, errlen, "'%s' must be an integer from %lld to %lld", w->name,
                         (long long)w->min, (long long)w->max);
            return -1;
        }
        p += len;
        if (*p == '&')
            p++;
    }
    for (size_t i = 0; i < np; i++) {
        int64_t v = ps[i].value;
        if (!strcmp(ps[i].name, "run"))
            out->run_id = v;
        else if (!strcmp(ps[i].name, "buckets"))
            out->buckets = (int)v;
        else if (!strcmp(ps[i].name, "from"))
            out->from_ns = v;
        else if (!strcmp(ps[i].name, "to"))
            out->to_ns = v;
        else if (!strcmp(ps[i].name, "points"))
            out->points = (int)v;
        else if (!strcmp(ps[i].name, "top"))
            out->top = (int)v;
        else if (!strcmp(ps[i].name, "snap"))
            out->snap = v;
    }
    if (out->to_ns && out->to_ns <= out->from_ns) {
        snprintf(err, errlen, "'to' must be after 'from'");
        return -1;
    }
    return 0;
}

/* ---- answering ---------------------------------------------------------- */

struct webapi_pending {
    struct webapi *w;
    uint64_t token;
    enum webapi_route route;
};

static void webapi_error(struct buf *b, const char *msg)
{
    buf_puts(b, "{\"error\":");
    jsonb_string(b, msg, strlen(msg));
    buf_puts(b, "}\n");
}

static void webapi_reply(struct admin_http_response *resp, int status, const char *msg)
{
    struct buf b;
    buf_init(&b, JSONB_MAX);
    webapi_error(&b, msg);
    if (b.failed) {
        admin_http_respond(resp, 500, "text/plain", "out of memory\n", 14);
    } else {
        if (status == 503) /* every 503 is worth asking again */
            admin_http_add_header(resp, "Retry-After", "1");
        admin_http_respond(resp, status, "application/json", b.data, b.len);
    }
    buf_free(&b);
}

/* The advice kept for the run, answered now without the writer: true when
 * answered. */
static bool webapi_advice_now(struct webapi *w, const struct query_params *p,
                              struct admin_http_response *resp)
{
    char *text = NULL, ra[16];
    int retry = 0;
    int st = query_advice_peek(&w->q, p->run_id, &text, &retry);
    if (st == QUERY_OK) {
        admin_http_respond(resp, 200, "application/json", text, strlen(text));
    } else if (st == QUERY_BUSY) { /* 202: accepted, being computed */
        struct buf b;
        buf_init(&b, JSONB_MAX);
        buf_puts(&b, "{\"computing\":");
        jsonb_string(&b, text, strlen(text));
        buf_printf(&b, ",\"retry_after_s\":%d}\n", retry);
        snprintf(ra, sizeof ra, "%d", retry);
        if (b.failed) {
            admin_http_respond(resp, 500, "text/plain", "out of memory\n", 14);
        } else {
            admin_http_add_header(resp, "Retry-After", ra);
            admin_http_respond(resp, 202, "application/json", b.data, b.len);
        }
        buf_free(&b);
    }
    free(text);
    return st == QUERY_OK || st == QUERY_BUSY;
}

static int webapi_status(enum query_status st)
{
    switch (st) {
    case QUERY_OK: return 200;
    case QUERY_NOT_FOUND: return 404;
    case QUERY_BAD: return 400;
    case QUERY_FULL:
    case QUERY_BUSY: return 503;
    case QUERY_FAILED:
    case QUERY_CANCELLED: break;
    }
    return 500;
}

static void webapi_done(void *ud, enum query_status st, char *text)
{
    struct webapi_pending *p = ud;
    if (st != QUERY_CANCELLED) {
        int status = webapi_status(st);
        if (st == QUERY_OK && text) {
            admin_http_answer_later(p->w->http, p->token, 200, "application/json", text,
                                    strlen(text));
        } else if (st == QUERY_BUSY && p->route == WEBAPI_ADVICE) {
            /* advice being computed: 202, what it does in words */
            struct buf b;
            buf_init(&b, JSONB_MAX);
            buf_puts(&b, "{\"computing\":");
            jsonb_string(&b, text ? text : "computing advice",
                         strlen(text ? text : "computing advice"));
            buf_puts(&b, ",\"retry_after_s\":1}\n");
            if (!b.failed)
                admin_http_answer_later(p->w->http, p->token, 202, "application/json", b.data,
                                        b.len);
            buf_free(&b);
        } else {
            struct buf b;
            buf_init(&b, JSONB_MAX);
            webapi_error(&b, text ? text : "query failed");
            if (!b.failed)
                admin_http_answer_later(p->w->http, p->token, status, "application/json", b.data,
                                        b.len);
            buf_free(&b);
        }
        p->w->answered++;
    }
    free(text);
    free(p);
}

int webapi_open(struct webapi *w, uv_loop_t *loop, struct admin_http *http, struct recorder *rec,
                int64_t current_run, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->http = http;
    if (query_open(&w->q, loop, current_run, rec_wake_writer, rec, err, errlen))
        return -1;
    rec_set_queries(rec, &w->q);
    w->open = 1;
    return 0;
}

int webapi_open_pg(struct webapi *w, uv_loop_t *loop, struct admin_http *http, const char *uri,
                   int64_t current_run, char **runs, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->http = http;
    if (query_open_pg(&w->q, loop, current_run, uri, runs, err, errlen))
        return -1;
    w->open = 1;
    return 0;
}

void webapi_handle(struct webapi *w, enum webapi_route route, const struct admin_http_request *req,
                   struct admin_http_response *resp)
{
    struct query_params p;
    char err[WEBAPI_ERR_MAX];
    if (webapi_parse(route, req->query, &p, err, sizeof err)) {
        w->rejected++;
        webapi_reply(resp, 400, err);
        return;
    }
    if (!w->open) {
        webapi_reply(resp, 503, "no database");
        return;
    }
    if (route == WEBAPI_ADVICE && webapi_advice_now(w, &p, resp)) {
        w->answered++;
        return;
    }
    struct webapi_pending *pd = malloc(sizeof *pd);
    if (!pd) {
        webapi_reply(resp, 503, "out of memory");
        return;
    }
    pd->w = w;
    pd->token = 0;
    pd->route = route;
    /* answers come through the loop (uv_async), never during this call:
     * the token is set before the query can be answered */
    enum query_status st = query_submit(&w->q, &p, webapi_done, pd);
    if (st != QUERY_OK) {
        free(pd);
        w->rejected++;
        webapi_reply(resp, webapi_status(st),
                     st == QUERY_FULL ? "busy: too many queries waiting; retry" : "bad parameters");
        return;
    }
    pd->token = admin_http_defer(resp);
    if (!pd->token) /* cannot happen for a request being handled */
        webapi_reply(resp, 500, "cannot answer later");
}

void webapi_close(struct webapi *w)
{
    if (!w->open)
        return;
    w->open = 0;
    query_close(&w->q);
}
