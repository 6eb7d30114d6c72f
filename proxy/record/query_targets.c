/* query_targets: the primary and its shadows side by side. See query_targets.h. */
#include "record/query_targets.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonb.h"

static const char SQL_TARGETS[] =
    "SELECT target, kind, flags, sample_n, memory_mb, started_ns, restarts, data_since_ns"
    " FROM targets WHERE run_id = ?1"
    " ORDER BY CASE WHEN kind = 'primary' THEN 0 ELSE 1 END, started_ns, target";
static const char SQL_TOTALS[] =
    "SELECT target, t_first_ns, t_last_ns, get_hits, get_misses, hit_ratio, total_malloced,"
    " limit_maxbytes, evictions, curr_items, pages, waste_bytes, classes"
    " FROM target_totals WHERE run_id = ?1";
static const char SQL_CLASSES[] =
    "SELECT target, class_id, chunk_size, total_pages, used_chunks, mem_requested, waste_bytes,"
    " evicted, get_hits FROM target_class_latest WHERE run_id = ?1 ORDER BY target, class_id";
/* Each target's samples, thinned to about ?2 a target (the first and the
 * latest always): the sample ids numbered over the indexed columns, the
 * stats read only for those kept. */
static const char SQL_SERIES_PRIMARY[] =
    "SELECT 'primary', s.t_ns, json_extract(s.stats, '$.get_hits'),"
    " json_extract(s.stats, '$.get_misses'), json_extract(s.stats, '$.evictions'),"
    " json_extract(s.stats, '$.bytes')"
    " FROM (SELECT sample_id, row_number() OVER (ORDER BY t_ns, sample_id) AS rn,"
    " count(*) OVER () AS n FROM samples WHERE run_id = ?1) AS k"
    " JOIN samples s ON s.sample_id = k.sample_id"
    " WHERE k.rn = 1 OR k.rn = k.n OR k.rn % ((k.n + ?2 - 1) / ?2) = 0 ORDER BY s.t_ns";
static const char SQL_SERIES_SHADOWS[] =
    "SELECT s.target, s.t_ns, json_extract(s.stats, '$.get_hits'),"
    " json_extract(s.stats, '$.get_misses'), json_extract(s.stats, '$.evictions'),"
    " json_extract(s.stats, '$.bytes')"
    " FROM (SELECT sample_id, row_number() OVER (PARTITION BY target ORDER BY t_ns, sample_id)"
    " AS rn, count(*) OVER (PARTITION BY target) AS n FROM shadow_samples WHERE run_id = ?1) AS k"
    " JOIN shadow_samples s ON s.sample_id = k.sample_id"
    " WHERE k.rn = 1 OR k.rn = k.n OR k.rn % ((k.n + ?2 - 1) / ?2) = 0"
    " ORDER BY s.target, s.t_ns";
/* The primary over [?2, ?3]: its latest sample at or before ?2 (else its
 * first), and its latest at or before ?3. */
static const char SQL_PRIMARY_OVER[] =
    "SELECT f.t_ns, l.t_ns,"
    " json_extract(l.stats, '$.get_hits') - json_extract(f.stats, '$.get_hits'),"
    " json_extract(l.stats, '$.get_misses') - json_extract(f.stats, '$.get_misses'),"
    " json_extract(l.stats, '$.evictions') - json_extract(f.stats, '$.evictions')"
    " FROM samples f, samples l"
    " WHERE f.sample_id = coalesce((SELECT sample_id FROM samples WHERE run_id = ?1"
    " AND t_ns <= ?2 ORDER BY t_ns DESC, sample_id DESC LIMIT 1),"
    " (SELECT sample_id FROM samples WHERE run_id = ?1 ORDER BY t_ns, sample_id LIMIT 1))"
    " AND l.sample_id = (SELECT sample_id FROM samples WHERE run_id = ?1 AND t_ns <= ?3"
    " ORDER BY t_ns DESC, sample_id DESC LIMIT 1)";
static const char SQL_EVENTS[] = "SELECT target, t_ns, event, detail FROM shadow_events"
                                 " WHERE run_id = ?1 ORDER BY t_ns, event";

enum { S_HITS, S_MISSES, S_EVICTIONS, S_BYTES, S_N };

struct qt_sample {
    int64_t t_ns;
    int64_t v[S_N];
};

struct qt_target {
    char *name, *kind, *flags;
    bool has_memory, has_started;
    int64_t sample_n, memory_mb, started_ns, restarts, data_since_ns;
    struct buf totals, classes, events;
    bool have_totals;
    int64_t waste_bytes, classes_n;
    int64_t t_first_ns, t_last_ns, hits, misses, evictions; /* of the totals */
    struct query_targets_side side;                         /* a shadow's verdict: its side */
    struct query_targets_side primary; /* ... and the primary's over its interval */
    struct qt_sample *s;
    size_t ns, cap;
    size_t nevents;
    char *too_small; /* the detail of a too_small event */
};

struct qt {
    struct qsql_db *db;
    int64_t run_id;
    struct qt_target t[QUERY_TARGETS_MAX];
    size_t n;
    char *err;
    size_t errlen;
};

static struct qt_target *qt_find(struct qt *q, const char *name)
{
    for (size_t i = 0; name && i < q->n; i++)
        if (!strcmp(q->t[i].name, name))
            return &q->t[i];
    return NULL;
}

static enum query_targets_rc qt_fail(struct qt *q, struct qsql *st, int rc)
{
    enum query_targets_rc r = rc == QSQL_TIMEOUT ? QT_TIMEOUT : QT_ERROR;
    snprintf(q->err, q->errlen, "%s", qsql_errmsg(q->db));
    if (st)
        qsql_finalize(st);
    return r;
}

typedef int (*qt_row_fn)(struct qt *q, struct qsql *st);

/* Runs sql with ?1 = the run (and ?2 = p2 when p2 > 0), row() for each
 * row. */
static enum query_targets_rc qt_each(struct qt *q, const char *sql, qt_row_fn row, int64_t p2)
{
    struct qsql st;
    int rc;
    if (qsql_prepare(&st, q->db, sql, NULL))
        return qt_fail(q, NULL, QSQL_ERROR);
    qsql_bind(&st, 1, q->run_id);
    if (p2 > 0)
        qsql_bind(&st, 2, p2);
    while ((rc = qsql_step(&st)) == QSQL_ROW)
        if (row(q, &st)) {
            qsql_finalize(&st);
            snprintf(q->err, q->errlen, "out of memory");
            return QT_ERROR;
        }
    if (rc != QSQL_DONE)
        return qt_fail(q, &st, rc);
    qsql_finalize(&st);
    return QT_OK;
}

static char *dup_col(struct qsql *st, int col)
{
    const char *v = qsql_text(st, col);
    return v ? strdup(v) : NULL;
}

static void put_int_or_null(struct buf *b, struct qsql *st, int col)
{
    if (qsql_null(st, col))
        buf_puts(b, "null");
    else
        buf_printf(b, "%lld", (long long)qsql_int(st, col));
}

static void put_str_or_null(struct buf *b, const char *s)
{
    if (s)
        jsonb_string(b, s, strlen(s));
    else
        buf_puts(b, "null");
}

static int row_target(struct qt *q, struct qsql *st)
{
    if (q->n == QUERY_TARGETS_MAX)
        return 0;
    struct qt_target *t = &q->t[q->n];
    memset(t, 0, sizeof *t);
    t->name = dup_col(st, 0);
    t->kind = dup_col(st, 1);
    t->flags = dup_col(st, 2);
    t->sample_n = qsql_null(st, 3) ? 1 : qsql_int(st, 3);
    if (t->sample_n < 1)
        t->sample_n = 1;
    t->has_memory = !qsql_null(st, 4);
    t->memory_mb = qsql_int(st, 4);
    t->has_started = !qsql_null(st, 5);
    t->started_ns = qsql_int(st, 5);
    t->restarts = qsql_int(st, 6);
    t->data_since_ns = qsql_int(st, 7);
    buf_init(&t->totals, JSONB_MAX);
    buf_init(&t->classes, JSONB_MAX);
    buf_init(&t->events, JSONB_MAX);
    q->n++;
    if (!t->name || !t->kind || (!t->flags && !qsql_null(st, 2)))
        return -1;
    return 0;
}

static int row_totals(struct qt *q, struct qsql *st)
{
    static const char *const cols[] = { "t_first_ns",     "t_last_ns",   "get_hits",
                                        "get_misses",     "hit_ratio",   "total_malloced",
                                        "limit_maxbytes", "evictions",   "curr_items",
                                        "pages",          "waste_bytes", "classes" };
    struct qt_target *t = qt_find(q, qsql_text(st, 0));
    if (!t || t->have_totals)
        return 0;
    t->have_totals = true;
    buf_puts(&t->totals, "{");
    for (int i = 0; i < 12; i++) {
        buf_printf(&t->totals, "%s\"%s\":", i ? "," : "", cols[i]);
        if (i == 4) { /* hit_ratio: a fraction */
            const char *v = qsql_text(st, 1 + i);
            if (v)
                buf_printf(&t->totals, "%.6f", strtod(v, NULL));
            else
                buf_puts(&t->totals, "null");
        } else {
            put_int_or_null(&t->totals, st, 1 + i);
        }
    }
    buf_puts(&t->totals, "}");
    t->t_first_ns = qsql_int(st, 1);
    t->t_last_ns = qsql_int(st, 2);
    t->hits = qsql_int(st, 3);
    t->misses = qsql_int(st, 4);
    t->evictions = qsql_int(st, 8);
    t->waste_bytes = qsql_int(st, 11);
    t->classes_n = qsql_int(st, 12);
    return 0;
}

static int row_class(struct qt *q, struct qsql *st)
{
    static const char *const cols[] = { "class_id",    "chunk_size",    "total_pages",
                                        "used_chunks", "mem_requested", "waste_bytes",
                                        "evicted",     "get_hits" };
    struct qt_target *t = qt_find(q, qsql_text(st, 0));
    if (!t)
        return 0;
    buf_puts(&t->classes, t->classes.len ? ",{" : "{");
    for (int i = 0; i < 8; i++) {
        buf_printf(&t->classes, "%s\"%s\":", i ? "," : "", cols[i]);
        put_int_or_null(&t->classes, st, 1 + i);
    }
    buf_puts(&t->classes, "}");
    return 0;
}

static int row_sample(struct qt *q, struct qsql *st)
{
    struct qt_target *t = qt_find(q, qsql_text(st, 0));
    if (!t)
        return 0;
    if (!BUF_GROW(t->s, t->cap, t->ns + 1))
        return -1;
    struct qt_sample *s = &t->s[t->ns++];
    s->t_ns = qsql_int(st, 1);
    for (int i = 0; i < S_N; i++)
        s->v[i] = qsql_int(st, 2 + i);
    return 0;
}

static int row_event(struct qt *q, struct qsql *st)
{
    struct qt_target *t = qt_find(q, qsql_text(st, 0));
    if (!t)
        return 0;
    const char *ev = qsql_text(st, 2), *detail = qsql_text(st, 3);
    if (ev && !strcmp(ev, "too_small")) {
        free(t->too_small);
        if (!(t->too_small = strdup(detail ? detail : "")))
            return -1;
    }
    if (t->nevents++ >= QUERY_TARGETS_EVENTS)
        return 0;
    buf_puts(&t->events, t->events.len ? ",{" : "{");
    buf_puts(&t->events, "\"t_ns\":");
    put_int_or_null(&t->events, st, 1);
    buf_puts(&t->events, ",\"event\":");
    put_str_or_null(&t->events, ev);
    buf_puts(&t->events, ",\"detail\":");
    put_str_or_null(&t->events, detail);
    buf_puts(&t->events, "}");
    return 0;
}

/* v[k] gained from a to b: a counter that went down was reset (memcached
 * restarted), so b's value is what it gained. */
static int64_t gained(const struct qt_sample *a, const struct qt_sample *b, int k)
{
    return b->v[k] >= a->v[k] ? b->v[k] - a->v[k] : b->v[k];
}

static void put_series(struct buf *b, const struct qt_target *t)
{
    size_t step = t->ns > 1 ? (t->ns - 1 + QUERY_TARGETS_POINTS - 1) / QUERY_TARGETS_POINTS : 1;
    size_t prev = 0;
    int n = 0;
    for (size_t i = step; t->ns > 1 && prev < t->ns - 1; i += step) {
        if (i > t->ns - 1)
            i = t->ns - 1;
        /* the sum of every step's gain between the two points */
        int64_t g[S_N] = { 0 };
        for (size_t k = prev + 1; k <= i; k++)
            for (int f = 0; f < S_BYTES; f++)
                g[f] += gained(&t->s[k - 1], &t->s[k], f);
        buf_printf(b, "%s{\"t\":%lld,\"hit_ratio\":", n++ ? "," : "",
                   (long long)(t->s[i].t_ns / 1000000000));
        if (g[S_HITS] + g[S_MISSES] > 0)
            buf_printf(b, "%.6f", (double)g[S_HITS] / (double)(g[S_HITS] + g[S_MISSES]));
        else
            buf_puts(b, "null");
        buf_printf(b, ",\"hits\":%lld,\"misses\":%lld,\"evictions\":%lld,\"bytes\":%lld}",
                   (long long)g[S_HITS], (long long)g[S_MISSES], (long long)g[S_EVICTIONS],
                   (long long)t->s[i].v[S_BYTES]);
        prev = i;
    }
}

void query_targets_verdict(char *out, size_t outlen, const char *name, int64_t sample_n,
                           const struct query_targets_side *s, const struct query_targets_side *p)
{
    size_t n = 0;
    int parts = 0;
    int64_t N = sample_n > 1 ? sample_n : 1;
#define VPUT(...) \
    do { \
        if (n < outlen) \
            n += (size_t)snprintf(out + n, outlen - n, "%s", parts++ ? ", " : ": "); \
        if (n < outlen) \
            n += (size_t)snprintf(out + n, outlen - n, __VA_ARGS__); \
    } while (0)
    n = (size_t)snprintf(out, outlen, "%s", name);
    if (s->hit_ratio >= 0 && p->hit_ratio >= 0)
        VPUT("%+.1f points hit ratio", 100.0 * (s->hit_ratio - p->hit_ratio));
    else if (s->hit_ratio < 0)
        VPUT("no reads yet");
    else /* the primary's reads unknown over that interval */
        VPUT("hit ratio %.1f %%", 100.0 * s->hit_ratio);
    double waste = (double)(p->waste_bytes - s->waste_bytes * N) / 1048576.0;
    if (fabs(waste) < 0.05)
        VPUT("same waste");
    else
        VPUT("%.1f MB %s waste", fabs(waste), waste > 0 ? "less" : "more");
    int64_t dc = s->classes - p->classes;
    if (dc)
        VPUT("%lld %s classes", (long long)(dc > 0 ? dc : -dc), dc > 0 ? "more" : "fewer");
    else
        VPUT("same classes");
    if (s->evictions_per_s >= 0 && p->evictions_per_s >= 0 &&
        (s->evictions_per_s > 0 || p->evictions_per_s > 0)) {
        double de = s->evictions_per_s * (double)N - p->evictions_per_s;
        if (fabs(de) < 0.05)
            VPUT("same evictions/s");
        else
            VPUT("%.1f %s evictions/s", fabs(de), de < 0 ? "fewer" : "more");
    }
    if (N > 1 && n < outlen)
        n += (size_t)snprintf(out + n, outlen - n, " (1/%lld sample, memory \xc3\x97%lld)",
                              (long long)N, (long long)N);
#undef VPUT
}

/* A shadow's side of its verdict from its totals, and the primary's over
 * the same interval (SQL_PRIMARY_OVER). */
static enum query_targets_rc qt_sides(struct qt *q, struct qt_target *s, const struct qt_target *p)
{
    struct query_targets_side none = { -1, 0, 0, -1 };
    s->side = s->primary = none;
    if (!s->have_totals)
        return QT_OK;
    double secs = (double)(s->t_last_ns - s->t_first_ns) / 1e9;
    s->side.waste_bytes = s->waste_bytes;
    s->side.classes = s->classes_n;
    if (s->hits + s->misses > 0 && s->hits >= 0 && s->misses >= 0)
        s->side.hit_ratio = (double)s->hits / (double)(s->hits + s->misses);
    if (secs > 0 && s->evictions >= 0)
        s->side.evictions_per_s = (double)s->evictions / secs;
    if (!p || !p->have_totals)
        return QT_OK;
    s->primary.waste_bytes = p->waste_bytes;
    s->primary.classes = p->classes_n;
    struct qsql st;
    int rc;
    if (qsql_prepare(&st, q->db, SQL_PRIMARY_OVER, NULL))
        return qt_fail(q, NULL, QSQL_ERROR);
    qsql_bind(&st, 1, q->run_id);
    qsql_bind(&st, 2, s->t_first_ns);
    qsql_bind(&st, 3, s->t_last_ns);
    if ((rc = qsql_step(&st)) == QSQL_ROW) {
        double ps = (double)(qsql_int(&st, 1) - qsql_int(&st, 0)) / 1e9;
        int64_t h = qsql_int(&st, 2), m = qsql_int(&st, 3), e = qsql_int(&st, 4);
        /* a primary restarted in between (a counter went down): unknown */
        if (!qsql_null(&st, 2) && !qsql_null(&st, 3) && h >= 0 && m >= 0 && h + m > 0) {
            s->primary.hit_ratio = (double)h / (double)(h + m);
            /* a 1/N shadow: its raw ratio swings with whether the hottest
             * keys fell in its sample (up to 11 points measured); scaled
             * as SHARDS does, 1 - N x its misses / every read, it came
             * within 0.69 points of the full-size shadow (docs/shadow.md) */
            if (s->sample_n > 1 && s->misses >= 0) {
                double adj = 1.0 - (double)s->sample_n * (double)s->misses / (double)(h + m);
                s->side.hit_ratio = adj < 0 ? 0 : adj > 1 ? 1 : adj;
            }
        }
        if (!qsql_null(&st, 4) && e >= 0 && ps > 0)
            s->primary.evictions_per_s = (double)e / ps;
        rc = qsql_step(&st);
    }
    if (rc != QSQL_DONE)
        return qt_fail(q, &st, rc);
    qsql_finalize(&st);
    return QT_OK;
}

/* The verdict of shadow s (its sides from qt_sides). */
static void put_verdict(struct buf *b, const struct qt_target *s)
{
    char line[512];
    if (s->too_small && !s->ns)
        snprintf(line, sizeof line, "%s: too small%s%s", s->name, *s->too_small ? ": " : "",
                 s->too_small);
    else if (!s->ns || !s->have_totals)
        snprintf(line, sizeof line, "%s: no sample yet", s->name);
    else
        query_targets_verdict(line, sizeof line, s->name, s->sample_n, &s->side, &s->primary);
    jsonb_string(b, line, strlen(line));
}

static void qt_free(struct qt *q)
{
    for (size_t i = 0; i < q->n; i++) {
        struct qt_target *t = &q->t[i];
        free(t->name);
        free(t->kind);
        free(t->flags);
        free(t->s);
        free(t->too_small);
        buf_free(&t->totals);
        buf_free(&t->classes);
        buf_free(&t->events);
    }
    q->n = 0;
}

enum query_targets_rc query_targets_json(struct qsql_db *db, int64_t run_id, struct buf *out,
                                         char *err, size_t errlen)
{
    struct qt *q = calloc(1, sizeof *q);
    enum query_targets_rc rc;
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return QT_ERROR;
    }
    q->db = db;
    q->run_id = run_id;
    q->err = err;
    q->errlen = errlen;
    const int64_t pts = QUERY_TARGETS_POINTS;
    if ((rc = qt_each(q, SQL_TARGETS, row_target, 0)) ||
        (q->n && ((rc = qt_each(q, SQL_TOTALS, row_totals, 0)) ||
                  (rc = qt_each(q, SQL_CLASSES, row_class, 0)) ||
                  (rc = qt_each(q, SQL_SERIES_PRIMARY, row_sample, pts)) ||
                  (rc = qt_each(q, SQL_SERIES_SHADOWS, row_sample, pts)) ||
                  (rc = qt_each(q, SQL_EVENTS, row_event, 0))))) {
        qt_free(q);
        free(q);
        return rc;
    }
    const struct qt_target *primary = NULL;
    for (size_t i = 0; i < q->n; i++)
        if (!strcmp(q->t[i].kind, "primary"))
            primary = &q->t[i];
    for (size_t i = 0; i < q->n; i++)
        if (&q->t[i] != primary && (rc = qt_sides(q, &q->t[i], primary))) {
            qt_free(q);
            free(q);
            return rc;
        }
    buf_printf(out, "{\"run\":%lld,\"targets\":[", (long long)run_id);
    for (size_t i = 0; i < q->n; i++) {
        const struct qt_target *t = &q->t[i];
        bool is_primary = t == primary;
        buf_puts(out, i ? ",{\"target\":" : "{\"target\":");
        jsonb_string(out, t->name, strlen(t->name));
        buf_puts(out, ",\"kind\":");
        jsonb_string(out, t->kind, strlen(t->kind));
        buf_puts(out, ",\"flags\":");
        put_str_or_null(out, t->flags);
        buf_printf(out, ",\"sample_n\":%lld,\"memory_mb\":", (long long)t->sample_n);
        if (t->has_memory)
            buf_printf(out, "%lld", (long long)t->memory_mb);
        else
            buf_puts(out, "null");
        buf_puts(out, ",\"started_ns\":");
        if (t->has_started)
            buf_printf(out, "%lld", (long long)t->started_ns);
        else
            buf_puts(out, "null");
        buf_printf(out,
                   ",\"restarts\":%lld,\"data_since_ns\":%lld,\"totals\":", (long long)t->restarts,
                   (long long)t->data_since_ns);
        if (t->have_totals && !t->totals.failed)
            buf_append(out, t->totals.data, t->totals.len);
        else
            buf_puts(out, "null");
        buf_puts(out, ",\"classes\":[");
        if (t->classes.len)
            buf_append(out, t->classes.data, t->classes.len);
        buf_puts(out, "],\"series\":[");
        put_series(out, t);
        buf_puts(out, "],\"events\":[");
        if (t->events.len)
            buf_append(out, t->events.data, t->events.len);
        buf_puts(out, "],\"verdict\":");
        if (is_primary)
            buf_puts(out, "null");
        else
            put_verdict(out, t);
        buf_puts(out, "}");
        out->failed |= t->totals.failed || t->classes.failed || t->events.failed;
    }
    buf_puts(out, "]}\n");
    qt_free(q);
    free(q);
    return QT_OK;
}
