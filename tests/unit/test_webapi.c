/* test_webapi: the web API's parameter parser (webapi_parse) as a table --
 * every parameter of every route, its defaults, its bounds, garbage,
 * duplicates, unknown names and missing values. Owns nothing else; the
 * routes themselves run in tests/integration/test_webapi.py. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "server/webapi.h"

#include "check.h"

struct parse_case {
    enum webapi_route route;
    const char *query;
    int ok;
    /* when ok: what the parser must give */
    int64_t run, from, to;
    int points, buckets, top;
    const char *err; /* when not ok: a piece of the message */
};

#define OK(r, q, run, from, to, points, buckets, top) \
    { \
        r, q, 1, run, from, to, points, buckets, top, NULL \
    }
#define BAD(r, q, err) \
    { \
        r, q, 0, 0, 0, 0, 0, 0, 0, err \
    }

static const struct parse_case cases[] = {
    /* defaults: run 0 is the current run */
    OK(WEBAPI_SIZES, "", 0, 0, 0, 0, 128, 0),
    OK(WEBAPI_CLASSES, "", 0, 0, 0, 0, 0, 0),
    OK(WEBAPI_SERIES, "", 0, 0, 0, 300, 0, 0),
    OK(WEBAPI_TRAFFIC, "", 0, 0, 0, 300, 0, 10),
    OK(WEBAPI_ADVICE, "", 0, 0, 0, 0, 0, 0),
    OK(WEBAPI_READS, "", 0, 0, 0, 300, 0, 7),
    OK(WEBAPI_REPORTS, "", 0, 0, 0, 0, 0, 0),
    OK(WEBAPI_SIZES, NULL, 0, 0, 0, 0, 128, 0),
    /* every parameter, in and at its bounds */
    OK(WEBAPI_SIZES, "run=7&buckets=8", 7, 0, 0, 0, 8, 0),
    OK(WEBAPI_SIZES, "buckets=512&run=9223372036854775807", INT64_MAX, 0, 0, 0, 512, 0),
    OK(WEBAPI_CLASSES, "run=1", 1, 0, 0, 0, 0, 0),
    OK(WEBAPI_ADVICE, "run=42", 42, 0, 0, 0, 0, 0),
    OK(WEBAPI_SERIES, "run=3&from=0&to=1&points=10", 3, 0, 1, 10, 0, 0),
    OK(WEBAPI_SERIES, "from=1700000000000000000&to=1700000001000000000&points=2000", 0,
       1700000000000000000LL, 1700000001000000000LL, 2000, 0, 0),
    OK(WEBAPI_SERIES, "from=5", 0, 5, 0, 300, 0, 0),
    OK(WEBAPI_SERIES, "to=5", 0, 0, 5, 300, 0, 0),
    OK(WEBAPI_TRAFFIC, "points=10&top=1", 0, 0, 0, 10, 0, 1),
    OK(WEBAPI_TRAFFIC, "top=50&points=2000&run=2", 2, 0, 0, 2000, 0, 50),
    OK(WEBAPI_TRAFFIC, "top=05", 0, 0, 0, 300, 0, 5), /* leading zeros are digits */
    OK(WEBAPI_READS, "run=4&points=10&top=1", 4, 0, 0, 10, 0, 1),
    OK(WEBAPI_READS, "top=50&points=2000", 0, 0, 0, 2000, 0, 50),
    OK(WEBAPI_REPORTS, "run=12", 12, 0, 0, 0, 0, 0),
    OK(WEBAPI_SIZES, "run=1&&buckets=9&", 1, 0, 0, 0, 9, 0), /* empty pieces skipped */
    /* out of range */
    /* issue 23: the primary and its shadows, run only */
    OK(WEBAPI_TARGETS, "", 0, 0, 0, 0, 0, 0),
    OK(WEBAPI_TARGETS, "run=4", 4, 0, 0, 0, 0, 0),
    BAD(WEBAPI_TARGETS, "points=300", "unknown parameter 'points'"),
    BAD(WEBAPI_SIZES, "run=0", "'run' must be an integer from 1"),
    BAD(WEBAPI_SIZES, "buckets=7", "'buckets' must be an integer from 8 to 512"),
    BAD(WEBAPI_SIZES, "buckets=513", "'buckets'"),
    BAD(WEBAPI_SERIES, "points=9", "'points' must be an integer from 10 to 2000"),
    BAD(WEBAPI_SERIES, "points=2001", "'points'"),
    BAD(WEBAPI_SERIES, "to=0", "'to' must be an integer from 1"),
    BAD(WEBAPI_SERIES, "from=10&to=10", "'to' must be after 'from'"),
    BAD(WEBAPI_SERIES, "from=11&to=10", "'to' must be after 'from'"),
    BAD(WEBAPI_TRAFFIC, "top=0", "'top' must be an integer from 1 to 50"),
    BAD(WEBAPI_TRAFFIC, "top=51", "'top'"),
    BAD(WEBAPI_TRAFFIC, "points=1", "'points'"),
    BAD(WEBAPI_READS, "top=0", "'top' must be an integer from 1 to 50"),
    BAD(WEBAPI_READS, "points=9", "'points' must be an integer from 10 to 2000"),
    BAD(WEBAPI_REPORTS, "run=0", "'run' must be an integer from 1"),
    BAD(WEBAPI_SIZES, "run=9223372036854775808", "'run'"),
    BAD(WEBAPI_SIZES, "run=99999999999999999999", "'run'"),
    /* garbage */
    BAD(WEBAPI_SIZES, "run=abc", "'run' must be an integer"),
    BAD(WEBAPI_SIZES, "run=-1", "'run'"),
    BAD(WEBAPI_SIZES, "run=+1", "'run'"),
    BAD(WEBAPI_SIZES, "run=1.0", "'run'"),
    BAD(WEBAPI_SIZES, "run=1e3", "'run'"),
    BAD(WEBAPI_SIZES, "run=%31", "'run'"), /* no escapes: digits only */
    BAD(WEBAPI_SIZES, "run= 1", "'run'"),
    BAD(WEBAPI_SIZES, "run=1;DROP TABLE runs", "'run'"),
    BAD(WEBAPI_SERIES, "from=0x10", "'from'"),
    BAD(WEBAPI_TRAFFIC, "top=ten", "'top'"),
    /* missing values */
    BAD(WEBAPI_SIZES, "run=", "'run'"),
    BAD(WEBAPI_SIZES, "run", "'run'"),
    BAD(WEBAPI_SERIES, "points=&run=1", "'points'"),
    /* duplicates */
    BAD(WEBAPI_SIZES, "run=1&run=1", "parameter 'run' given twice"),
    BAD(WEBAPI_TRAFFIC, "top=3&points=10&top=4", "parameter 'top' given twice"),
    /* parameters of another route, or of none */
    BAD(WEBAPI_CLASSES, "buckets=10", "unknown parameter 'buckets'"),
    BAD(WEBAPI_SIZES, "points=10", "unknown parameter 'points'"),
    BAD(WEBAPI_ADVICE, "top=1", "unknown parameter 'top'"),
    BAD(WEBAPI_SERIES, "top=1", "unknown parameter 'top'"),
    BAD(WEBAPI_READS, "buckets=10", "unknown parameter 'buckets'"),
    BAD(WEBAPI_READS, "from=1", "unknown parameter 'from'"),
    BAD(WEBAPI_REPORTS, "points=10", "unknown parameter 'points'"),
    BAD(WEBAPI_REPORTS, "key=hits_advice", "unknown parameter 'key'"),
    BAD(WEBAPI_SIZES, "Run=1", "unknown parameter 'Run'"),
    BAD(WEBAPI_SIZES, "=1", "unknown parameter ''"),
    BAD(WEBAPI_SIZES, "sql=SELECT", "unknown parameter 'sql'"),
};

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct parse_case *c = &cases[i];
        struct query_params p;
        char err[WEBAPI_ERR_MAX] = "";
        int rc = webapi_parse(c->route, c->query, &p, err, sizeof err);
        const char *q = c->query ? c->query : "(null)";
        if (c->ok) {
            CHECK(rc == 0, "case %zu '%s': refused: %s", i, q, err);
            if (rc)
                continue;
            CHECK(p.kind == (enum query_kind)c->route, "case %zu: kind %d", i, (int)p.kind);
            CHECK(p.run_id == c->run && p.from_ns == c->from && p.to_ns == c->to &&
                      p.points == c->points && p.buckets == c->buckets && p.top == c->top,
                  "case %zu '%s': run %lld from %lld to %lld points %d buckets %d top %d", i, q,
                  (long long)p.run_id, (long long)p.from_ns, (long long)p.to_ns, p.points,
                  p.buckets, p.top);
        } else {
            CHECK(rc == -1, "case %zu '%s': accepted", i, q);
            CHECK(strstr(err, c->err) != NULL, "case %zu '%s': message '%s', want '%s'", i, q, err,
                  c->err);
        }
    }
    /* a message always fits the buffer, even a small one */
    {
        struct query_params p;
        char small[8];
        CHECK(webapi_parse(WEBAPI_SIZES, "averyveryverylongunknownname=1", &p, small,
                           sizeof small) == -1 &&
                  strlen(small) == sizeof small - 1,
              "small buffer: '%s'", small);
    }
    return check_done("test_webapi");
}
