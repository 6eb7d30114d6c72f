/* webapi: the JSON API of the live page -- GET /api/run/sizes, classes,
 * series, traffic, advice, reads, reports, evictions and snapshot (issue
 * 22), targets (issue 23: the primary and its shadow memcacheds) --
 * answered asynchronously from queries the recorder's writer thread runs
 * on SQLite, a query thread on PostgreSQL (record/query.h).
 *
 * Owns the query queue of the running proxy, the parameters of each route
 * (webapi_parse: pure, every parameter an integer in its range, no
 * duplicates, nothing unknown) and the mapping of query outcomes to HTTP:
 * 400 bad parameters, 404 unknown run, 503 no room in the queue or over
 * the time budget, 500 a failure. Advice: 202 {"computing": its progress
 * in words, "retry_after_s": N} while it is computed (a Retry-After
 * header when answered at once from what record/query keeps), then 200.
 * Must never: run SQL (only record/query's threads do), pass browser text
 * into a query, or answer a request twice. */
#ifndef SLABTAP_WEBAPI_H
#define SLABTAP_WEBAPI_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "record/query.h"
#include "record/recorder.h"
#include "server/admin_http.h"

#define WEBAPI_DEFAULT_BUCKETS 128
#define WEBAPI_DEFAULT_POINTS 300
#define WEBAPI_DEFAULT_TOP 10
#define WEBAPI_DEFAULT_READS_TOP 7 /* reads: lines for 7 classes, the rest summed */
#define WEBAPI_ERR_MAX 128

enum webapi_route {
    WEBAPI_SIZES = QUERY_SIZES,
    WEBAPI_CLASSES = QUERY_CLASSES,
    WEBAPI_SERIES = QUERY_SERIES,
    WEBAPI_TRAFFIC = QUERY_TRAFFIC,
    WEBAPI_ADVICE = QUERY_ADVICE,
    WEBAPI_READS = QUERY_READS,
    WEBAPI_REPORTS = QUERY_REPORTS,
    WEBAPI_EVICTIONS = QUERY_EVICTIONS, /* ?points=&top= */
    WEBAPI_SNAPSHOT = QUERY_SNAPSHOT,   /* ?snap=&top= */
    WEBAPI_TARGETS = QUERY_TARGETS      /* the primary and its shadows (issue 23) */
};

/* Pure: the raw query string of a request to route into *out (defaults
 * filled in; run 0 = the current run). 0, or -1 with what is wrong in err
 * (errlen bytes, for the 400 answer). */
int webapi_parse(enum webapi_route route, const char *query, struct query_params *out, char *err,
                 size_t errlen);

struct webapi {
    struct query_queue q;
    struct admin_http *http;
    uint64_t answered, rejected;
    int open;
};

/* Loop thread, after rec_open: queries of run current_run run on rec's
 * writer thread. 0, or -1 with err. */
int webapi_open(struct webapi *w, uv_loop_t *loop, struct admin_http *http, struct recorder *rec,
                int64_t current_run, char *err, size_t errlen);
/* Loop thread: the same for a store on PostgreSQL (uri): the queries run
 * on record/query.h's query thread; *runs: the store's other runs for
 * /api/runs (query_open_pg). 0, or -1 with err. */
int webapi_open_pg(struct webapi *w, uv_loop_t *loop, struct admin_http *http, const char *uri,
                   int64_t current_run, char **runs, char *err, size_t errlen);
/* A request for route (already admitted by the caller): answered now (400,
 * 503) or later, when its query is done. */
void webapi_handle(struct webapi *w, enum webapi_route route, const struct admin_http_request *req,
                   struct admin_http_response *resp);
/* After rec_close (the writer has stopped): queries still waiting are
 * dropped. */
void webapi_close(struct webapi *w);

#endif
