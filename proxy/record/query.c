/* query: the web API's SQL, run by the writer thread between batches. */
#include "record/query.h"

#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/jsonb.h"
#include "model/advise.h"
#include "model/ladder_source.h"
#include "model/predict.h"
#include "record/advice.h"
#include "record/pgstore.h"
#include "record/query_targets.h"
#include "record/rowseq.h"
#include "record/runs.h"

#define QUERY_PROGRESS_OPS 10000 /* VM steps between looks at the clock */
#define QUERY_PAGE 1048576       /* a slab page, when the settings do not say */
#define QUERY_SLICE_MIN 2000     /* a step over budget is tried again with half the rows */

/* ---- SQL: every text the web API runs ----------------------------------- *
 *
 * One text per question, SQLite's; PostgreSQL runs the text the dialect
 * rule derives from it (record/qsql.h) unless the pair names its own: only
 * where the stores differ in shape (SQLite's packed `writes` and rowid
 * ranges; PostgreSQL's plain columns), here and nowhere else. */
struct query_sql {
    const char *lite;
    const char *pg; /* NULL: qsql_dialect_pg(lite) */
};

/* The columns of one row of `writes` (schema/schema.sql.in gives the format;
 * the view `sets` decodes the same way, but per row through subqueries:
 * these read the packed columns directly). */
#define W_KEY_LEN \
    "(CASE WHEN typeof(w.extra) = 'text' AND json_type(w.extra, '$.key_len') IS NOT NULL" \
    " THEN json_extract(w.extra, '$.key_len') ELSE w.op & 255 END)"
#define W_VALUE_LEN \
    "(CASE WHEN typeof(w.extra) = 'text' AND json_type(w.extra, '$.value_len') IS NOT NULL" \
    " THEN json_extract(w.extra, '$.value_len')" \
    " ELSE nullif((w.sizes >> 6) & ((1 << (w.sizes & 31)) - 1), 0) - 1 END)"
#define W_FLAGS \
    "(CASE typeof(w.extra) WHEN 'integer' THEN (w.extra >> 32) & 4294967295" \
    " WHEN 'text' THEN coalesce(json_extract(w.extra, '$.flags'), 0) ELSE 0 END)"
/* in microseconds; NULL: no answer */
#define W_LATENCY_US \
    "(CASE WHEN typeof(w.extra) = 'text' AND json_type(w.extra, '$.latency_ns') IS NOT NULL" \
    " THEN json_extract(w.extra, '$.latency_ns') / 1000" \
    " ELSE (nullif(w.sizes >> (6 + (w.sizes & 31)), 0) - 1)" \
    " / CASE WHEN w.sizes & 32 THEN 1000 ELSE 1 END END)"
/* writes that store a whole item: set add replace cas, ms (not E/A/P mode
 * pieces: cmds 1 2 3 6 7 8 11 12) */
#define W_STORES \
    "(((w.op >> 14) & 63) IN (1, 2, 3, 6, 7, 8, 11, 12) OR (((w.op >> 14) & 63) = 0" \
    " AND json_extract(w.extra, '$.cmd') IN ('set', 'add', 'replace', 'cas')))"

/* The run, and (SQLite) the rowid range of its writes: PostgreSQL keeps
 * no rowids (its scans read the run whole in one step): lo 0, hi its
 * writes so far (the aggregates count every one) */
static const struct query_sql SQL_RUN = {
    "SELECT r.started_ns, r.ended_ns, r.crashed, wr.lo, wr.hi, wr.t0,"
    " (SELECT max(rowid) FROM writes) FROM runs r LEFT JOIN write_runs wr USING (run_id)"
    " WHERE r.run_id = ?1",
    "SELECT r.started_ns, r.ended_ns, r.crashed, 0, w.n, r.started_ns, w.n FROM runs r,"
    " (SELECT coalesce(sum(writes), 0) AS n FROM agg_latency WHERE run_id = $1) w"
    " WHERE r.run_id = $1"
};

static const struct query_sql SQL_SIZES_SLICE = {
    "SELECT nt, count(*), sum(nt) FROM (SELECT 51 + ?3 + " W_KEY_LEN " + " W_VALUE_LEN
    " + CASE WHEN " W_FLAGS " != 0 THEN 4 ELSE 0 END AS nt"
    " FROM writes w WHERE w.rowid >= ?1 AND w.rowid < ?2 AND " W_STORES ")"
    " WHERE nt IS NOT NULL GROUP BY nt",
    NULL
};
static const struct query_sql SQL_LADDER = {
    "SELECT class_id, chunk_size FROM run_ladder WHERE run_id = ?1 ORDER BY class_id", NULL
};
static const struct query_sql SQL_CAS = {
    "SELECT CASE WHEN CAST(cas_enabled AS TEXT) IN ('no', 'false', '0') THEN 0 ELSE 8 END,"
    " coalesce(json_extract(settings, '$.slab_page_size'), 1048576)"
    " FROM run_settings WHERE run_id = ?1",
    NULL
};

/* traffic: writes per time bucket and latency (us, two significant
 * digits) from the arrivals of a slice of rowids; ?1 ?2 the slice, ?3 the
 * run's first rowid, ?4 t0, ?5 from, ?6 buckets, ?7 span (ns) */
static const struct query_sql SQL_TRAFFIC_SLICE = {
    "WITH ar AS (SELECT x.rowid AS lo, lead(x.rowid, 1, ?2) OVER (ORDER BY x.rowid) AS hi,"
    " x.dt AS dt FROM arrivals x WHERE x.rowid >= coalesce((SELECT max(y.rowid) FROM arrivals y"
    " WHERE y.rowid <= ?1 AND y.rowid >= ?3), ?1) AND x.rowid < ?2),"
    " lat AS (SELECT (?4 + ar.dt - ?5) * ?6 / ?7 AS k, " W_LATENCY_US " AS l"
    " FROM ar CROSS JOIN writes w ON w.rowid >= max(ar.lo, ?1) AND w.rowid < ar.hi)"
    " SELECT k, CASE WHEN l IS NULL THEN -1 WHEN l < 100 THEN l WHEN l < 1000 THEN l / 10 * 10"
    " WHEN l < 10000 THEN l / 100 * 100 WHEN l < 100000 THEN l / 1000 * 1000"
    " ELSE l / 10000 * 10000 END AS q, count(*) FROM lat GROUP BY k, q",
    NULL
};
static const struct query_sql SQL_PREFIX_SLICE = {
    "SELECT w.key_ref, count(*), sum(coalesce(" W_VALUE_LEN ", 0)) FROM writes w"
    " WHERE w.rowid >= ?1 AND w.rowid < ?2 AND typeof(w.key_ref) = 'integer' GROUP BY w.key_ref",
    NULL
};
/* the same, from the write aggregates the writer keeps (record/wagg.h):
 * a few rows per minute instead of every write */
static const struct query_sql SQL_HAS_AGG = { "SELECT 1 FROM agg_runs WHERE run_id = ?1", NULL };
#define SIZES_AGG \
    "SELECT 51 + ?2 + body, sum(writes), sum(writes * (51 + ?2 + body)) FROM agg_sizes" \
    " WHERE run_id = ?1 GROUP BY body"
#define TRAFFIC_AGG \
    "SELECT max(0, (second * 1000000000 - ?2) * ?3 / ?4) AS k, band_us, sum(writes)" \
    " FROM agg_latency WHERE run_id = ?1 AND second * 1000000000 + 1000000000 > ?2" \
    " AND second * 1000000000 < ?2 + ?4 GROUP BY k, band_us"
/* prefixes by name (key_prefixes holds the names of the ids) */
#define PREFIX_AGG \
    "SELECT p.prefix, sum(a.writes), sum(a.value_bytes) FROM agg_prefixes a" \
    " JOIN key_prefixes p ON p.prefix_id = a.prefix_id WHERE a.run_id = ?1 GROUP BY p.prefix" \
    " ORDER BY p.prefix COLLATE BINARY"
static const struct query_sql SQL_SIZES_AGG = { SIZES_AGG, NULL };
static const struct query_sql SQL_TRAFFIC_AGG = { TRAFFIC_AGG, NULL };
/* PostgreSQL keeps no prefix dictionary (its key_ref is the key's text, no
 * prefix ids in agg_prefixes): its prefixes are always counted from `sets` */
#define PREFIX_SETS \
    "WITH agg_prefixes AS (SELECT run_id, key AS prefix_id, count(*) AS writes," \
    " sum(CASE WHEN value_len > 0 THEN value_len ELSE 0 END) AS value_bytes FROM sets" \
    " WHERE run_id = ?1 AND key IS NOT NULL" \
    " AND (SELECT key_mode FROM runs WHERE run_id = ?1) = 'prefix' GROUP BY run_id, key)," \
    " key_prefixes AS (SELECT prefix_id, prefix_id AS prefix FROM agg_prefixes) " PREFIX_AGG
static const struct query_sql SQL_PREFIX_AGG = { PREFIX_AGG, PREFIX_SETS };
static const struct query_sql SQL_PREFIX_NAME = {
    "SELECT prefix FROM key_prefixes WHERE prefix_id = ?1", NULL
};
/* A run without write aggregates on a store without rowids (PostgreSQL):
 * the same queries over the aggregates computed from the view `sets` (the
 * columns both stores have) as record/wagg.c counts them -- body and the
 * item-storing writes (wagg_stores), the latency band (wagg_latency_band),
 * prefixes of --keys prefix runs (PREFIX_SETS, above) -- in one statement
 * over the run. */
#define SETS_STORES \
    "value_len >= 0 AND (cmd IN ('set', 'add', 'replace', 'cas')" \
    " OR (cmd = 'ms' AND coalesce(ms_mode, '') NOT IN ('A', 'a', 'P', 'p')))"
static const struct query_sql SQL_SIZES_SETS = {
    "WITH agg_sizes AS (SELECT run_id, key_len + value_len"
    " + CASE WHEN coalesce(flags, 0) != 0 THEN 4 ELSE 0 END AS body, count(*) AS writes"
    " FROM sets WHERE run_id = ?1 AND " SETS_STORES " GROUP BY run_id, body) " SIZES_AGG,
    NULL
};
static const struct query_sql SQL_TRAFFIC_SETS = {
    "WITH us AS (SELECT run_id, t_ns / 1000000000 AS second, (latency_ns + 500) / 1000 AS u"
    " FROM sets WHERE run_id = ?1),"
    " agg_latency AS (SELECT run_id, second, CASE WHEN u IS NULL OR u < 0 THEN -1"
    " WHEN u < 100 THEN u WHEN u < 1000 THEN u / 10 * 10 WHEN u < 10000 THEN u / 100 * 100"
    " WHEN u < 100000 THEN u / 1000 * 1000 ELSE u / 10000 * 10000 END AS band_us,"
    " count(*) AS writes FROM us GROUP BY run_id, second, band_us) " TRAFFIC_AGG,
    NULL
};
static const struct query_sql SQL_READS = {
    "SELECT max(0, (second * 1000000000 - ?2) * ?3 / ?4) AS k, sum(keys), sum(hits),"
    " sum(misses) FROM get_counts WHERE run_id = ?1 AND second * 1000000000 + 1000000000 > ?2"
    " AND second * 1000000000 < ?2 + ?4 GROUP BY k",
    NULL
};

/* classes: the run's last two samples, then the last one's classes */
static const struct query_sql SQL_LAST_SAMPLES = {
    "SELECT s.sample_id, s.t_ns, coalesce(json_extract(s.stats, '$.total_malloced'),"
    " (SELECT sum(json_extract(c.fields, '$.total_pages')) FROM sample_classes c"
    " WHERE c.sample_id = s.sample_id) * ?2, 0),"
    " coalesce(json_extract(s.stats, '$.limit_maxbytes'), 0)"
    " FROM samples s WHERE s.run_id = ?1 ORDER BY s.t_ns DESC, s.sample_id DESC LIMIT 2",
    NULL
};
static const struct query_sql SQL_CLASSES = {
    "SELECT class_id, coalesce(chunk_size, 0), coalesce(total_pages, 0),"
    " coalesce(total_chunks, 0), coalesce(used_chunks, 0), coalesce(mem_requested, 0),"
    " coalesce(evicted, 0) FROM class_stats WHERE sample_id = ?1 ORDER BY class_id",
    NULL
};

/* series: the last sample of each of ?4 time buckets in [?2, ?3] */
#define SERIES_PICK \
    "WITH b AS (SELECT t_ns, sample_id, row_number() OVER (PARTITION BY" \
    " (t_ns - ?2) * ?4 / (?3 - ?2 + 1) ORDER BY t_ns DESC, sample_id DESC) AS rn FROM samples" \
    " WHERE run_id = ?1 AND t_ns >= ?2 AND t_ns <= ?3)," \
    " pick AS (SELECT t_ns AS t, sample_id AS sid FROM b WHERE rn = 1) "
static const struct query_sql SQL_SERIES = {
    SERIES_PICK
    "SELECT p.t, coalesce(json_extract(s.stats, '$.total_malloced'),"
    " (SELECT sum(json_extract(c.fields, '$.total_pages')) FROM sample_classes c"
    " WHERE c.sample_id = p.sid) * ?5, 0), coalesce(json_extract(s.stats, '$.limit_maxbytes'), 0)"
    " FROM pick p JOIN samples s ON s.sample_id = p.sid ORDER BY p.t",
    NULL
};
static const struct query_sql SQL_SERIES_CLASSES = {
    SERIES_PICK
    "SELECT c.class_id, p.t, coalesce(json_extract(c.fields, '$.chunk_size'), 0),"
    " coalesce(json_extract(c.fields, '$.total_pages'), 0),"
    " coalesce(json_extract(c.fields, '$.evicted'), 0)"
    " FROM pick p JOIN sample_classes c ON c.sample_id = p.sid ORDER BY c.class_id, p.t",
    NULL
};

/* reads: the first and last minute of the run in agg_reads (each an
 * index lookup), then its rows, a slice of minutes [?2, ?3) at a time, in
 * the primary key's order (no sort) */
static const struct query_sql SQL_READS_SPAN = {
    "SELECT (SELECT min(minute) FROM agg_reads WHERE run_id = ?1),"
    " (SELECT max(minute) FROM agg_reads WHERE run_id = ?1)",
    NULL
};
static const struct query_sql SQL_READS_NEXT = {
    "SELECT min(minute) FROM agg_reads WHERE run_id = ?1 AND minute >= ?2", NULL
};
static const struct query_sql SQL_READS_SLICE = {
    "SELECT minute, class_id, reads, hits, misses FROM agg_reads"
    " WHERE run_id = ?1 AND minute >= ?2 AND minute < ?3",
    NULL
};

/* reports: the model's reports kept in run_meta (cli/model_hits.c --save) */
static const struct query_sql SQL_REPORTS = {
    "SELECT key, value FROM run_meta WHERE run_id = ?1 AND key IN ('hits_advice', 'hits_mrc')"
    " AND json_valid(value)",
    NULL
};

/* /api/runs: the runs of the store (the fleet's on PostgreSQL: its node
 * is a column there, run_meta 'node' in a SQLite file) */
#define RUNS_COLS(node) \
    "SELECT r.run_id, r.name, " node ", r.started_ns, r.ended_ns, r.rows_recorded," \
    " r.rows_dropped, r.crashed, r.upstream, st.run_id, st.growth_factor, st.chunk_size_min," \
    " st.item_size_max, coalesce(json_extract(st.settings, '$.slab_page_size'), 1048576)," \
    " r.kind FROM runs r LEFT JOIN run_settings st ON st.run_id = r.run_id" \
    " WHERE r.run_id != ?1 ORDER BY r.run_id DESC LIMIT ?2"
static const struct query_sql SQL_RUNS = {
    RUNS_COLS("coalesce((SELECT m.value FROM run_meta m WHERE m.run_id = r.run_id"
              " AND m.key = 'node'), '')"),
    RUNS_COLS("r.node")
};

/* ---- jobs, cache -------------------------------------------------------- */

/* (k1, k2) -> n, sum: what a slice's GROUP BY gives, merged across slices */
struct agg_ent {
    int64_t k1, k2, n, sum;
};
struct agg {
    struct agg_ent *e;
    size_t n, cap;
    bool failed;
};

struct reads_acc;

struct query_job {
    struct query_job *next;
    struct query_params p;
    query_done_fn done;
    void *ud;
    enum query_status st;
    char *text;
    /* writer thread: a scan in progress */
    bool started;
    bool finished_run; /* ended: its answers do not change */
    int64_t run_id, started_ns, ended_ns, lo, hi, cursor, t0, from, span;
    int points, cas, page;
    int64_t slice;   /* rows per step: halved when a step goes over the budget */
    bool from_agg;   /* read the write aggregates, no scan */
    bool agg_tables; /* the run has them kept (else computed from `sets`) */
    char **names;    /* from_agg: the prefixes' names (b's k1 indexes them) */
    size_t nnames, names_cap;
    struct agg a, b;      /* sizes: a; traffic: a (k, latency), b (prefixes) */
    struct reads_acc *ra; /* reads: the sums so far */
    /* evictions, snapshot: one table per step, into tap_out */
    int stage;
    int64_t snap;
    struct buf tap_out;
    bool tap_open;
};

struct query_cache_ent {
    bool used;
    struct query_params key; /* run_id resolved */
    char *text;
    enum query_status st;
    int64_t made_ns;
    uint64_t used_at;
};

/* the advice of one run (answer_advice), under the queue's mu */
struct query_advice_slot {
    int64_t run_id;                 /* 0: free */
    bool computing;                 /* a worker is on it */
    bool finished_run;              /* its answer never changes */
    int64_t writes;                 /* the writes the answer (or the computation) saw */
    int64_t started_ns;             /* of the computation */
    int64_t made_ns;                /* of the answer */
    size_t done, total;             /* candidates evaluated, at most */
    int phase;                      /* ADVICE_READING, ADVICE_REPLAYING, ADVICE_CANDIDATES */
    uint64_t rows_done, rows_total; /* ADVICE_REPLAYING: writes read of the run's */
    const char *basis;              /* "aggregates" or "rows" */
    char *text;                     /* the last answer (JSON), or NULL */
    uint64_t used_at;
};

static int agg_cmp(const void *x, const void *y)
{
    const struct agg_ent *a = x, *b = y;
    if (a->k1 != b->k1)
        return a->k1 < b->k1 ? -1 : 1;
    return a->k2 < b->k2 ? -1 : a->k2 > b->k2;
}

static void agg_add(struct agg *g, int64_t k1, int64_t k2, int64_t n, int64_t sum)
{
    if (!BUF_GROW(g->e, g->cap, g->n + 1)) {
        g->failed = true;
        return;
    }
    g->e[g->n++] = (struct agg_ent){ k1, k2, n, sum };
}

/* Sorts and merges equal keys. */
static void agg_merge(struct agg *g)
{
    size_t out = 0;
    if (!g->n)
        return;
    qsort(g->e, g->n, sizeof *g->e, agg_cmp);
    for (size_t i = 1; i < g->n; i++) {
        if (g->e[i].k1 == g->e[out].k1 && g->e[i].k2 == g->e[out].k2) {
            g->e[out].n += g->e[i].n;
            g->e[out].sum += g->e[i].sum;
        } else {
            g->e[++out] = g->e[i];
        }
    }
    g->n = out + 1;
}

static void reads_acc_free(struct reads_acc *ra);

static void job_free(struct query_job *j)
{
    if (j->tap_open)
        buf_free(&j->tap_out);
    for (size_t i = 0; i < j->nnames; i++)
        free(j->names[i]);
    free(j->names);
    reads_acc_free(j->ra);
    free(j->a.e);
    free(j->b.e);
    free(j->text);
    free(j);
}

static int64_t mono_ns(void)
{
    return (int64_t)clock_mono_ns();
}

static int query_progress(void *arg)
{
    struct query_queue *q = arg;
    if (mono_ns() > q->step_deadline_ns) {
        q->interrupted = true;
        return 1;
    }
    return 0;
}

/* SQLite: the progress handler interrupts a step over ms; PostgreSQL:
 * statement_timeout cancels each statement over ms. */
static void budget_start(struct query_queue *q, struct qsql_db *db, unsigned ms)
{
    q->interrupted = false;
    q->step_deadline_ns = mono_ns() + (int64_t)ms * 1000000;
    if (db->lite)
        sqlite3_progress_handler(db->lite, QUERY_PROGRESS_OPS, query_progress, q);
    else
        qsql_timeout(db, ms);
}

static void budget_end(struct qsql_db *db)
{
    if (db->lite)
        sqlite3_progress_handler(db->lite, 0, NULL, NULL);
}

static void set_error(struct query_job *j, enum query_status st, const char *msg)
{
    free(j->text);
    j->st = st;
    j->text = msg ? strdup(msg) : NULL;
}

static bool cache_key_eq(const struct query_params *a, const struct query_params *b)
{
    return a->kind == b->kind && a->run_id == b->run_id && a->from_ns == b->from_ns &&
           a->to_ns == b->to_ns && a->points == b->points && a->buckets == b->buckets &&
           a->top == b->top && a->snap == b->snap;
}

static struct query_cache_ent *cache_find(struct query_queue *q, const struct query_params *k)
{
    for (size_t i = 0; q->cache && i < QUERY_CACHE_MAX; i++)
        if (q->cache[i].used && cache_key_eq(&q->cache[i].key, k)) {
            q->cache[i].used_at = ++q->cache_clock;
            return &q->cache[i];
        }
    return NULL;
}

static void cache_put(struct query_queue *q, const struct query_params *k, enum query_status st,
                      const char *text)
{
    struct query_cache_ent *e = cache_find(q, k);
    char *copy = text ? strdup(text) : NULL;
    if (!q->cache || (text && !copy))
        return;
    for (size_t i = 0; !e && i < QUERY_CACHE_MAX; i++)
        if (!q->cache[i].used || !e || q->cache[i].used_at < e->used_at)
            e = &q->cache[i];
    free(e->text);
    e->used = true;
    e->key = *k;
    e->st = st;
    e->text = copy;
    e->made_ns = mono_ns();
    e->used_at = ++q->cache_clock;
}

/* ---- the queue ---------------------------------------------------------- */

static void query_on_done(uv_async_t *h)
{
    struct query_queue *q = h->data;
    pthread_mutex_lock(&q->mu);
    struct query_job *j = q->done_head;
    q->done_head = q->done_tail = NULL;
    pthread_mutex_unlock(&q->mu);
    while (j) {
        struct query_job *next = j->next;
        char *text = j->text;
        j->text = NULL;
        j->done(j->ud, j->st, text);
        job_free(j);
        j = next;
    }
}

int query_open(struct query_queue *q, uv_loop_t *loop, int64_t current_run, void (*wake)(void *),
               void *wake_ud, char *err, size_t errlen)
{
    memset(q, 0, sizeof *q);
    q->cache = calloc(QUERY_CACHE_MAX, sizeof *q->cache);
    q->advice = calloc(QUERY_ADVICE_RUNS, sizeof *q->advice);
    if (!q->cache || !q->advice) {
        free(q->cache);
        free(q->advice);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&q->mu, NULL);
    if (uv_async_init(loop, &q->done, query_on_done)) {
        snprintf(err, errlen, "cannot create the query answer handle");
        pthread_mutex_destroy(&q->mu);
        free(q->cache);
        free(q->advice);
        q->cache = NULL;
        q->advice = NULL;
        return -1;
    }
    q->done.data = q;
    q->wake = wake;
    q->wake_ud = wake_ud;
    q->current_run = current_run;
    q->budget_ms = QUERY_BUDGET_MS;
    q->open = true;
    return 0;
}

static bool params_ok(const struct query_params *p)
{
    bool pts = p->points >= QUERY_POINTS_MIN && p->points <= QUERY_POINTS_MAX;
    switch (p->kind) {
    case QUERY_SIZES: return p->buckets >= QUERY_BUCKETS_MIN && p->buckets <= QUERY_BUCKETS_MAX;
    case QUERY_SERIES:
        return pts && p->from_ns >= 0 && p->to_ns >= 0 && (!p->to_ns || p->to_ns > p->from_ns);
    case QUERY_TRAFFIC:
    case QUERY_READS:
    case QUERY_EVICTIONS: return pts && p->top >= 1 && p->top <= QUERY_TOP_MAX;
    case QUERY_SNAPSHOT: return p->top >= 1 && p->top <= QUERY_TOP_MAX && p->snap >= 0;
    case QUERY_CLASSES:
    case QUERY_ADVICE:
    case QUERY_REPORTS:
    case QUERY_TARGETS: return true;
    }
    return false;
}

enum query_status query_submit(struct query_queue *q, const struct query_params *p,
                               query_done_fn done, void *ud)
{
    if (!q->open || !done || p->run_id < 0 || !params_ok(p))
        return QUERY_BAD;
    struct query_job *j = calloc(1, sizeof *j);
    if (!j)
        return QUERY_FULL;
    j->p = *p;
    j->done = done;
    j->ud = ud;
    pthread_mutex_lock(&q->mu);
    bool room = q->queued < QUERY_QUEUE_MAX;
    if (room) {
        q->queued++;
        if (q->pending_tail)
            q->pending_tail->next = j;
        else
            q->pending_head = j;
        q->pending_tail = j;
    } else {
        q->full++;
    }
    pthread_mutex_unlock(&q->mu);
    if (!room) {
        free(j);
        return QUERY_FULL;
    }
    if (q->wake)
        q->wake(q->wake_ud);
    return QUERY_OK;
}

bool query_pending(struct query_queue *q)
{
    pthread_mutex_lock(&q->mu);
    bool any = q->pending_head != NULL;
    pthread_mutex_unlock(&q->mu);
    return any;
}

/* ---- the steps (writer thread) ------------------------------------------ */

static int sql_prepare(struct qsql_db *db, const struct query_sql *sql, struct qsql *st,
                       struct query_job *j)
{
    if (qsql_prepare(st, db, sql->lite, sql->pg) == 0)
        return 0;
    set_error(j, QUERY_FAILED, qsql_errmsg(db));
    return -1;
}

/* After a loop of qsql_step: 0 when it ran to the end. */
static int sql_done(struct query_queue *q, struct qsql_db *db, struct qsql *st, int rc,
                    struct query_job *j)
{
    if (rc == QSQL_DONE) {
        qsql_finalize(st);
        return 0;
    }
    if (q->interrupted || rc == QSQL_TIMEOUT)
        set_error(j, QUERY_BUSY, "the query went over its time budget");
    else
        set_error(j, QUERY_FAILED, qsql_errmsg(db));
    qsql_finalize(st);
    return -1;
}

/* The run's row and rowid range; 0, or -1 with j's answer set. */
static int job_start(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    struct qsql st;
    int rc;
    j->run_id = j->p.run_id ? j->p.run_id : q->current_run;
    if (sql_prepare(db, &SQL_RUN, &st, j))
        return -1;
    qsql_bind(&st, 1, j->run_id);
    rc = qsql_step(&st);
    if (rc != QSQL_ROW) {
        qsql_finalize(&st);
        set_error(j, rc == QSQL_DONE ? QUERY_NOT_FOUND : QUERY_FAILED,
                  rc == QSQL_DONE ? "no such run" : qsql_errmsg(db));
        return -1;
    }
    j->started_ns = qsql_int(&st, 0);
    bool ended = !qsql_null(&st, 1);
    j->ended_ns = ended ? qsql_int(&st, 1) : 0;
    j->finished_run = j->run_id != q->current_run && (ended || qsql_int(&st, 2));
    bool has_writes = !qsql_null(&st, 3);
    j->lo = has_writes ? qsql_int(&st, 3) : 0;
    j->hi = has_writes ? qsql_int(&st, 4) : 0;
    j->t0 = has_writes ? qsql_int(&st, 5) : j->started_ns;
    int64_t maxrow = qsql_int(&st, 6);
    if (j->hi > maxrow + 1)
        j->hi = maxrow + 1;
    if (j->hi < j->lo)
        j->hi = j->lo;
    j->cursor = j->lo;
    j->slice = QUERY_SLICE_ROWS;
    qsql_finalize(&st);
    j->cas = 8;
    j->page = QUERY_PAGE;
    if (qsql_prepare(&st, db, SQL_CAS.lite, SQL_CAS.pg) == 0) {
        qsql_bind(&st, 1, j->run_id);
        if (qsql_step(&st) == QSQL_ROW) {
            j->cas = qsql_int(&st, 0);
            j->page = qsql_int(&st, 1) > 0 ? qsql_int(&st, 1) : QUERY_PAGE;
        }
        qsql_finalize(&st);
    }
    /* the time window: the run's span, or what was asked */
    int64_t end = j->ended_ns ? j->ended_ns : clock_wall_ns();
    j->from = j->p.from_ns ? j->p.from_ns : j->started_ns;
    int64_t to = j->p.to_ns ? j->p.to_ns : end;
    if (to <= j->from)
        to = j->from + 1;
    j->span = to - j->from + 1;
    j->points = j->p.points;
    if (j->p.kind == QUERY_TRAFFIC && j->span / 1000000000 < j->points) /* >= 1 s per point */
        j->points = j->span / 1000000000 > 1 ? (int)(j->span / 1000000000) : 1;
    if (qsql_prepare(&st, db, SQL_HAS_AGG.lite, SQL_HAS_AGG.pg) == 0) {
        qsql_bind(&st, 1, j->run_id);
        j->agg_tables = qsql_step(&st) == QSQL_ROW;
        qsql_finalize(&st);
    }
    /* no rowids to slice a scan by: the aggregates, kept or computed */
    j->from_agg = j->agg_tables || !db->lite;
    j->started = true;
    return 0;
}

/* Runs sql with the parameters p (?1..?np) and adds each row to g: (k1,
 * n, sum), or (k1, k2, n) when two_keys. 0, or -1 with j answered. */
static int agg_read(struct query_queue *q, struct qsql_db *db, const struct query_sql *sql,
                    const int64_t *p, int np, struct agg *g, bool two_keys, struct query_job *j)
{
    struct qsql st;
    int rc;
    if (sql_prepare(db, sql, &st, j))
        return -1;
    for (int i = 0; i < np; i++)
        qsql_bind(&st, i + 1, p[i]);
    while ((rc = qsql_step(&st)) == QSQL_ROW) {
        int64_t c1 = qsql_int(&st, 1), c2 = qsql_int(&st, 2);
        agg_add(g, qsql_int(&st, 0), two_keys ? c1 : 0, two_keys ? c2 : c1, two_keys ? 0 : c2);
    }
    return sql_done(q, db, &st, rc, j);
}

/* The scan's result from the write aggregates, in one step: what a scan of
 * every row would give, but for traffic's time buckets, which start at
 * whole seconds (a write counts in the bucket its second begins in). */
static void agg_fill(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    struct qsql st;
    int rc;
    if (j->p.kind == QUERY_SIZES) {
        if (agg_read(q, db, j->agg_tables ? &SQL_SIZES_AGG : &SQL_SIZES_SETS,
                     (int64_t[]){ j->run_id, j->cas }, 2, &j->a, false, j))
            return;
    } else {
        if (agg_read(q, db, j->agg_tables ? &SQL_TRAFFIC_AGG : &SQL_TRAFFIC_SETS,
                     (int64_t[]){ j->run_id, j->from, j->points, j->span }, 4, &j->a, true, j))
            return;
        if (sql_prepare(db, &SQL_PREFIX_AGG, &st, j))
            return;
        qsql_bind(&st, 1, j->run_id);
        while ((rc = qsql_step(&st)) == QSQL_ROW) { /* by name: k1 indexes j->names */
            const char *name = qsql_text(&st, 0);
            if (!BUF_GROW(j->names, j->names_cap, j->nnames + 1) ||
                !(j->names[j->nnames] = strdup(name ? name : ""))) {
                j->b.failed = true;
                break;
            }
            agg_add(&j->b, (int64_t)j->nnames++, 0, qsql_int(&st, 1), qsql_int(&st, 2));
        }
        if (sql_done(q, db, &st, rc, j))
            return;
    }
    agg_merge(&j->a);
    agg_merge(&j->b);
    if (j->a.failed || j->b.failed)
        set_error(j, QUERY_FAILED, "out of memory");
}

/* One slice of the scan: true when the scan is complete. */
static bool scan_slice(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    int64_t a = j->cursor, b = j->cursor + j->slice < j->hi ? j->cursor + j->slice : j->hi;
    size_t na = j->a.n, nb = j->b.n; /* merged so far: a step over budget is undone */
    if (j->from_agg) {
        agg_fill(q, db, j);
        return true;
    }
    if (a >= b)
        return true;
    if (j->p.kind == QUERY_SIZES) {
        if (agg_read(q, db, &SQL_SIZES_SLICE, (int64_t[]){ a, b, j->cas }, 3, &j->a, false, j))
            goto failed;
    } else {
        if (agg_read(q, db, &SQL_TRAFFIC_SLICE,
                     (int64_t[]){ a, b, j->lo, j->t0, j->from, j->points, j->span }, 7, &j->a, true,
                     j) ||
            agg_read(q, db, &SQL_PREFIX_SLICE, (int64_t[]){ a, b }, 2, &j->b, false, j))
            goto failed;
    }
    agg_merge(&j->a);
    agg_merge(&j->b);
    if (j->a.failed || j->b.failed) {
        set_error(j, QUERY_FAILED, "out of memory");
        return true;
    }
    j->cursor = b;
    return b >= j->hi;
failed:
    if (j->st != QUERY_BUSY || j->slice <= QUERY_SLICE_MIN)
        return true;
    /* over the budget: the same rows again, fewer at a time */
    j->a.n = na;
    j->b.n = nb;
    j->slice /= 2;
    free(j->text);
    j->text = NULL;
    j->st = QUERY_OK;
    return false;
}

static void json_finish(struct query_job *j, struct buf *b)
{
    if (b->failed) {
        buf_free(b);
        set_error(j, QUERY_FAILED, "out of memory or answer too large");
        return;
    }
    free(j->text);
    j->st = QUERY_OK;
    j->text = buf_take(b);
}

struct ladder_rows {
    int64_t id[64], chunk[64];
    int n;
};

static void read_ladder(struct qsql_db *db, int64_t run_id, struct ladder_rows *l)
{
    struct qsql st;
    l->n = 0;
    if (qsql_prepare(&st, db, SQL_LADDER.lite, SQL_LADDER.pg) != 0)
        return;
    qsql_bind(&st, 1, run_id);
    while (l->n < 64 && qsql_step(&st) == QSQL_ROW) {
        l->id[l->n] = qsql_int(&st, 0);
        l->chunk[l->n] = qsql_int(&st, 1);
        l->n++;
    }
    qsql_finalize(&st);
}

/* The ladder index an item of ntotal nt goes to (the largest for a chunked
 * item); -1 without a ladder. */
static int ladder_index(const struct ladder_rows *l, int64_t nt)
{
    for (int i = 0; i < l->n; i++)
        if (l->chunk[i] >= nt)
            return i;
    return l->n - 1;
}

static void answer_sizes(struct qsql_db *db, struct query_job *j)
{
    struct ladder_rows l;
    struct buf b;
    int nb = j->p.buckets;
    int64_t cw[64] = { 0 }, creq[64] = { 0 }, calloc_[64] = { 0 };
    read_ladder(db, j->run_id, &l);
    buf_init(&b, JSONB_MAX);
    buf_printf(&b, "{\"run_id\":%lld,\"ladder\":[", (long long)j->run_id);
    for (int i = 0; i < l.n; i++)
        buf_printf(&b, "%s{\"class_id\":%lld,\"chunk_size\":%lld}", i ? "," : "",
                   (long long)l.id[i], (long long)l.chunk[i]);
    buf_puts(&b, "],\"buckets\":[");
    if (j->a.n) {
        double mn = (double)j->a.e[0].k1, mx = (double)j->a.e[j->a.n - 1].k1;
        if (mx <= mn)
            nb = 1;
        double step = nb > 1 ? log(mx / mn) / nb : 1;
        int64_t *w = calloc((size_t)nb, sizeof *w), *by = calloc((size_t)nb, sizeof *by);
        if (!w || !by) {
            b.failed = true;
        } else {
            for (size_t i = 0; i < j->a.n; i++) {
                const struct agg_ent *e = &j->a.e[i];
                int k = nb > 1 ? (int)(log((double)e->k1 / mn) / step) : 0;
                k = k < 0 ? 0 : k >= nb ? nb - 1 : k;
                w[k] += e->n;
                by[k] += e->sum;
                int c = ladder_index(&l, e->k1);
                if (c >= 0) {
                    int64_t chunks = e->k1 > l.chunk[c] ? (e->k1 + l.chunk[c] - 1) / l.chunk[c] : 1;
                    cw[c] += e->n;
                    creq[c] += e->sum;
                    calloc_[c] += e->n * chunks * l.chunk[c];
                }
            }
            for (int k = 0; k < nb; k++) {
                int64_t lo = (int64_t)ceil(mn * exp(step * k) - 1e-9);
                int64_t hi =
                    k == nb - 1 ? (int64_t)mx + 1 : (int64_t)ceil(mn * exp(step * (k + 1)) - 1e-9);
                if (k == 0)
                    lo = (int64_t)mn;
                buf_printf(&b, "%s{\"lo\":%lld,\"hi\":%lld,\"writes\":%lld,\"bytes\":%lld}",
                           k ? "," : "", (long long)lo, (long long)hi, (long long)w[k],
                           (long long)by[k]);
            }
        }
        free(w);
        free(by);
    }
    buf_puts(&b, "],\"classes\":[");
    bool first = true;
    for (int c = 0; c < l.n; c++) {
        if (!cw[c])
            continue;
        double waste = calloc_[c] ? 100.0 * (double)(calloc_[c] - creq[c]) / (double)calloc_[c] : 0;
        buf_printf(&b,
                   "%s{\"class_id\":%lld,\"chunk_size\":%lld,\"writes\":%lld,"
                   "\"bytes_requested\":%lld,\"bytes_allocated\":%lld,\"waste_pct\":%.2f}",
                   first ? "" : ",", (long long)l.id[c], (long long)l.chunk[c], (long long)cw[c],
                   (long long)creq[c], (long long)calloc_[c], waste);
        first = false;
    }
    buf_puts(&b, "]}\n");
    json_finish(j, &b);
}

/* The latency (us) at quantile f of the (q, n) entries [from, to) of the
 * sorted aggregate, answered ones only (q >= 0); -1 when none. */
static int64_t quantile(const struct agg_ent *e, size_t from, size_t to, double f)
{
    int64_t total = 0, seen = 0;
    for (size_t i = from; i < to; i++)
        total += e[i].k2 >= 0 ? e[i].n : 0;
    if (!total)
        return -1;
    int64_t want = (int64_t)ceil(f * (double)total);
    for (size_t i = from; i < to; i++) {
        if (e[i].k2 < 0)
            continue;
        seen += e[i].n;
        if (seen >= want)
            return e[i].k2;
    }
    return e[to - 1].k2;
}

static int prefix_cmp(const void *x, const void *y)
{
    const struct agg_ent *a = x, *b = y;
    if (a->sum != b->sum)
        return a->sum < b->sum ? 1 : -1;
    if (a->n != b->n)
        return a->n < b->n ? 1 : -1;
    return (a->k1 > b->k1) - (a->k1 < b->k1); /* ties: by name (from_agg), by id */
}

static void answer_traffic(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    struct buf b;
    int np = j->points;
    double bucket_s = (double)j->span / np / 1e9;
    int64_t *wr = calloc((size_t)np, sizeof *wr), *rd = calloc((size_t)np, sizeof *rd),
            *hit = calloc((size_t)np, sizeof *hit), *mis = calloc((size_t)np, sizeof *mis),
            *p50 = calloc((size_t)np, sizeof *p50), *p99 = calloc((size_t)np, sizeof *p99);
    struct qsql st;
    int rc;
    buf_init(&b, JSONB_MAX);
    if (!wr || !rd || !hit || !mis || !p50 || !p99) {
        set_error(j, QUERY_FAILED, "out of memory");
        goto out;
    }
    for (int k = 0; k < np; k++)
        p50[k] = p99[k] = -1;
    for (size_t i = 0; i < j->a.n;) {
        size_t e = i;
        while (e < j->a.n && j->a.e[e].k1 == j->a.e[i].k1)
            e++;
        int64_t k = j->a.e[i].k1;
        if (k >= 0 && k < np) {
            for (size_t x = i; x < e; x++)
                wr[k] += j->a.e[x].n;
            p50[k] = quantile(j->a.e, i, e, 0.50);
            p99[k] = quantile(j->a.e, i, e, 0.99);
        }
        i = e;
    }
    budget_start(q, db, q->budget_ms);
    if (sql_prepare(db, &SQL_READS, &st, j))
        goto out;
    qsql_bind(&st, 1, j->run_id);
    qsql_bind(&st, 2, j->from);
    qsql_bind(&st, 3, np);
    qsql_bind(&st, 4, j->span);
    while ((rc = qsql_step(&st)) == QSQL_ROW) {
        int64_t k = qsql_int(&st, 0);
        if (k >= 0 && k < np) {
            rd[k] += qsql_int(&st, 1);
            hit[k] += qsql_int(&st, 2);
            mis[k] += qsql_int(&st, 3);
        }
    }
    if (sql_done(q, db, &st, rc, j))
        goto out;
    buf_printf(&b, "{\"run_id\":%lld,\"bucket_ns\":%lld,\"t\":[", (long long)j->run_id,
               (long long)(j->span / np));
    for (int k = 0; k < np; k++)
        buf_printf(&b, "%s%lld", k ? "," : "",
                   (long long)(j->from + (int64_t)((double)j->span * k / np)));
    const char *names[] = { "writes", "reads", "hits", "misses" };
    int64_t *arrs[] = { wr, rd, hit, mis };
    for (int a = 0; a < 4; a++) {
        buf_printf(&b, "],\"%s\":[", names[a]);
        for (int k = 0; k < np; k++)
            buf_printf(&b, "%s%.3f", k ? "," : "", (double)arrs[a][k] / bucket_s);
    }
    const char *pn[] = { "write_p50_us", "write_p99_us" };
    int64_t *pa[] = { p50, p99 };
    for (int a = 0; a < 2; a++) {
        buf_printf(&b, "],\"%s\":[", pn[a]);
        for (int k = 0; k < np; k++) {
            if (pa[a][k] < 0)
                buf_printf(&b, "%snull", k ? "," : "");
            else
                buf_printf(&b, "%s%lld", k ? "," : "", (long long)pa[a][k]);
        }
    }
    buf_puts(&b, "],\"top_prefixes\":[");
    if (j->b.n)
        qsort(j->b.e, j->b.n, sizeof *j->b.e, prefix_cmp);
    if (!j->from_agg && sql_prepare(db, &SQL_PREFIX_NAME, &st, j))
        goto out;
    for (size_t i = 0; i < j->b.n && (int)i < j->p.top; i++) {
        const char *name = NULL;
        if (j->from_agg) { /* named already */
            name = (size_t)j->b.e[i].k1 < j->nnames ? j->names[j->b.e[i].k1] : NULL;
        } else {
            qsql_reset(&st);
            qsql_bind(&st, 1, j->b.e[i].k1);
            name = qsql_step(&st) == QSQL_ROW ? qsql_text(&st, 0) : NULL;
        }
        buf_puts(&b, i ? ",{\"prefix\":" : "{\"prefix\":");
        jsonb_string(&b, name ? name : "", name ? strlen(name) : 0);
        buf_printf(&b, ",\"writes\":%lld,\"bytes\":%lld}", (long long)j->b.e[i].n,
                   (long long)j->b.e[i].sum);
    }
    if (!j->from_agg)
        qsql_finalize(&st);
    buf_puts(&b, "]}\n");
    json_finish(j, &b);
out:
    budget_end(db);
    buf_free(&b);
    free(wr);
    free(rd);
    free(hit);
    free(mis);
    free(p50);
    free(p99);
}

static void answer_classes(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    struct qsql st;
    struct buf b;
    int64_t sid[2] = { -1, -1 }, t[2] = { 0, 0 }, malloced = 0, limit = 0;
    int64_t prev_ev[64] = { 0 };
    bool have_prev[64] = { false };
    int n = 0, rc;
    buf_init(&b, JSONB_MAX);
    if (sql_prepare(db, &SQL_LAST_SAMPLES, &st, j))
        return;
    qsql_bind(&st, 1, j->run_id);
    qsql_bind(&st, 2, j->page);
    while ((rc = qsql_step(&st)) == QSQL_ROW && n < 2) {
        sid[n] = qsql_int(&st, 0);
        t[n] = qsql_int(&st, 1);
        if (n == 0) {
            malloced = qsql_int(&st, 2);
            limit = qsql_int(&st, 3);
        }
        n++;
    }
    if (rc == QSQL_ROW)
        rc = QSQL_DONE;
    if (sql_done(q, db, &st, rc, j))
        return;
    if (n == 0) {
        buf_printf(&b,
                   "{\"run_id\":%lld,\"t_ns\":null,\"total_malloced\":0,\"limit_maxbytes\":0,"
                   "\"classes\":[]}\n",
                   (long long)j->run_id);
        json_finish(j, &b);
        return;
    }
    if (n == 2) {
        if (sql_prepare(db, &SQL_CLASSES, &st, j))
            return;
        qsql_bind(&st, 1, sid[1]);
        while ((rc = qsql_step(&st)) == QSQL_ROW) {
            int64_t c = qsql_int(&st, 0);
            if (c >= 0 && c < 64) {
                prev_ev[c] = qsql_int(&st, 6);
                have_prev[c] = true;
            }
        }
        if (sql_done(q, db, &st, rc, j))
            return;
    }
    buf_printf(&b,
               "{\"run_id\":%lld,\"t_ns\":%lld,\"total_malloced\":%lld,\"limit_maxbytes\":%lld,"
               "\"classes\":[",
               (long long)j->run_id, (long long)t[0], (long long)malloced, (long long)limit);
    if (sql_prepare(db, &SQL_CLASSES, &st, j)) {
        buf_free(&b);
        return;
    }
    qsql_bind(&st, 1, sid[0]);
    double dt = n == 2 && t[0] > t[1] ? (double)(t[0] - t[1]) / 1e9 : 0;
    for (int i = 0; (rc = qsql_step(&st)) == QSQL_ROW; i++) {
        int64_t c = qsql_int(&st, 0), chunk = qsql_int(&st, 1), used = qsql_int(&st, 4),
                reqd = qsql_int(&st, 5), ev = qsql_int(&st, 6);
        double rate = 0;
        if (dt > 0 && c >= 0 && c < 64 && have_prev[c] && ev > prev_ev[c])
            rate = (double)(ev - prev_ev[c]) / dt;
        double waste =
            used * chunk > 0 ? 100.0 * (double)(used * chunk - reqd) / (double)(used * chunk) : 0;
        buf_printf(&b,
                   "%s{\"class_id\":%lld,\"chunk_size\":%lld,\"pages\":%lld,\"total_chunks\":%lld,"
                   "\"used_chunks\":%lld,\"mem_requested\":%lld,\"evicted\":%lld,"
                   "\"evicted_per_s\":%.3f,\"waste_pct\":%.2f}",
                   i ? "," : "", (long long)c, (long long)chunk, (long long)qsql_int(&st, 2),
                   (long long)qsql_int(&st, 3), (long long)used, (long long)reqd, (long long)ev,
                   rate, waste);
    }
    if (sql_done(q, db, &st, rc, j)) {
        buf_free(&b);
        return;
    }
    buf_puts(&b, "]}\n");
    json_finish(j, &b);
}

static void answer_series(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    struct qsql st;
    struct buf b;
    int np = j->p.points, n = 0, rc;
    int64_t to = j->from + j->span - 1, limit = 0;
    int64_t *t = calloc((size_t)np + 1, sizeof *t), *mal = calloc((size_t)np + 1, sizeof *mal);
    int64_t *pages = NULL, *ev = NULL;
    buf_init(&b, JSONB_MAX);
    if (!t || !mal) {
        set_error(j, QUERY_FAILED, "out of memory");
        goto out;
    }
    if (sql_prepare(db, &SQL_SERIES, &st, j))
        goto out;
    qsql_bind(&st, 1, j->run_id);
    qsql_bind(&st, 2, j->from);
    qsql_bind(&st, 3, to);
    qsql_bind(&st, 4, np);
    qsql_bind(&st, 5, j->page);
    while ((rc = qsql_step(&st)) == QSQL_ROW && n <= np) {
        t[n] = qsql_int(&st, 0);
        mal[n] = qsql_int(&st, 1);
        limit = qsql_int(&st, 2);
        n++;
    }
    if (rc == QSQL_ROW)
        rc = QSQL_DONE;
    if (sql_done(q, db, &st, rc, j))
        goto out;
    buf_printf(&b, "{\"run_id\":%lld,\"t\":[", (long long)j->run_id);
    jsonb_int64s(&b, t, (size_t)n);
    buf_puts(&b, "],\"total_malloced\":[");
    jsonb_int64s(&b, mal, (size_t)n);
    buf_printf(&b, "],\"limit_maxbytes\":%lld,\"classes\":[", (long long)limit);
    pages = calloc((size_t)n + 1, sizeof *pages);
    ev = calloc((size_t)n + 1, sizeof *ev);
    if (!pages || !ev) {
        set_error(j, QUERY_FAILED, "out of memory");
        goto out;
    }
    if (sql_prepare(db, &SQL_SERIES_CLASSES, &st, j))
        goto out;
    qsql_bind(&st, 1, j->run_id);
    qsql_bind(&st, 2, j->from);
    qsql_bind(&st, 3, to);
    qsql_bind(&st, 4, np);
    int64_t cur = -1, chunk = 0;
    bool first = true;
    for (;;) {
        rc = qsql_step(&st);
        int64_t c = rc == QSQL_ROW ? qsql_int(&st, 0) : -2;
        if (c != cur && cur != -1) { /* the class before is complete */
            buf_printf(&b, "%s{\"class_id\":%lld,\"chunk_size\":%lld,\"pages\":[", first ? "" : ",",
                       (long long)cur, (long long)chunk);
            jsonb_int64s(&b, pages, (size_t)n);
            buf_puts(&b, "],\"evicted\":[");
            jsonb_int64s(&b, ev, (size_t)n);
            buf_puts(&b, "]}");
            first = false;
            memset(pages, 0, (size_t)n * sizeof *pages);
            memset(ev, 0, (size_t)n * sizeof *ev);
            chunk = 0;
        }
        if (rc != QSQL_ROW)
            break;
        cur = c;
        int64_t tt = qsql_int(&st, 1);
        int lo = 0, hi = n - 1;
        while (lo < hi) { /* t is sorted: the point of this sample */
            int mid = (lo + hi) / 2;
            if (t[mid] < tt)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (n && t[lo] == tt) {
            if (qsql_int(&st, 2))
                chunk = qsql_int(&st, 2);
            pages[lo] = qsql_int(&st, 3);
            ev[lo] = qsql_int(&st, 4);
        }
    }
    if (sql_done(q, db, &st, rc, j))
        goto out;
    buf_puts(&b, "]}\n");
    json_finish(j, &b);
out:
    buf_free(&b);
    free(t);
    free(mal);
    free(pages);
    free(ev);
}

static char *shell_word(const char *s);

/* ---- advice: once per run state, in the background ----------------------
 *
 * The basis is advice_basis's (record/advice.h: the rule of `slabtap model
 * advise` too). From the aggregates, the inputs are read on the writer
 * thread in one budgeted step; from the rows, the advice thread reads them
 * on a read-only connection of its own (WAL: it never blocks the writer):
 * the run's prediction (runs_read_prediction) and its writes in sequence
 * (record/rowseq.h), with progress. The capacity model's candidates
 * (model/advise.h) are evaluated on that thread, one run at a time, with
 * progress; the answer is kept per run and reused until a live run has
 * grown by QUERY_ADVICE_REGROW_PCT. */

enum { ADVICE_READING, ADVICE_REPLAYING, ADVICE_CANDIDATES };

struct advice_work {
    struct query_queue *q;
    int64_t run_id, writes;
    struct prediction *r;
    struct runs_agg_info agg;
    struct reader_rows_status rows;
    bool from_agg;
    bool hits_default; /* `model advise` alone gives the hits advice: name the objective */
    char basis_why[200];
    struct advice_plan plan;
    char *path; /* the database file (rows: opened read-only by the thread) */
    char *file; /* the same, a shell word, for the command */
};

static struct query_advice_slot *advice_slot(struct query_queue *q, int64_t run_id, bool make)
{
    struct query_advice_slot *e = NULL;
    for (size_t i = 0; q->advice && i < QUERY_ADVICE_RUNS; i++)
        if (q->advice[i].run_id == run_id) {
            q->advice[i].used_at = ++q->advice_clock;
            return &q->advice[i];
        }
    if (!make || !q->advice)
        return NULL;
    for (size_t i = 0; i < QUERY_ADVICE_RUNS; i++) /* a free one, else the oldest idle */
        if (!q->advice[i].computing &&
            (!e || !q->advice[i].run_id || (e->run_id && q->advice[i].used_at < e->used_at)))
            e = &q->advice[i];
    if (!e)
        return NULL;
    free(e->text);
    memset(e, 0, sizeof *e);
    e->run_id = run_id;
    e->used_at = ++q->advice_clock;
    return e;
}

/* Under mu: what a request waits for, in words; seconds to wait. */
static int advice_progress_text(const struct query_advice_slot *e, char *out, size_t len)
{
    double el = (double)(mono_ns() - e->started_ns) / 1e9;
    int pct = e->total ? (int)(100 * e->done / e->total) : 0;
    if (e->phase == ADVICE_READING) {
        snprintf(out, len,
                 "computing advice: reading the items run %lld left from its %lld writes (%s), "
                 "%.1f s so far",
                 (long long)e->run_id, (long long)e->writes, e->basis, el);
        return 1;
    }
    if (e->phase == ADVICE_REPLAYING && !e->rows_done) {
        snprintf(out, len,
                 "computing advice: replaying 0 of %llu writes in sequence (%s): SQLite sorts "
                 "them by seq first, %.1f s so far",
                 (unsigned long long)e->rows_total, e->basis, el);
        return 1;
    }
    if (e->phase == ADVICE_REPLAYING) {
        snprintf(out, len,
                 "computing advice: replaying %llu of %llu writes in sequence (%s), %.1f s so far",
                 (unsigned long long)e->rows_done, (unsigned long long)e->rows_total, e->basis, el);
        return 1;
    }
    if (!e->done) {
        snprintf(out, len,
                 "computing advice: evaluating the first candidate on %lld writes (%s), "
                 "%.1f s so far",
                 (long long)e->writes, e->basis, el);
        return 1;
    }
    double left = el / (double)e->done * (double)(e->total - e->done);
    snprintf(out, len,
             "computing advice: %d %% (%zu of at most %zu candidates evaluated on %lld writes, "
             "%s), ~%.0f s left",
             pct, e->done, e->total, (long long)e->writes, e->basis, left < 1 ? 1 : left);
    /* asked again soon: the estimate is rough at first */
    return left < 1.5 ? 1 : 2;
}

static bool advice_on_progress(void *ud, size_t done, size_t total)
{
    struct advice_work *w = ud;
    struct query_queue *q = w->q;
    pthread_mutex_lock(&q->mu);
    struct query_advice_slot *e = advice_slot(q, w->run_id, false);
    if (e) {
        e->phase = ADVICE_CANDIDATES;
        e->done = done;
        e->total = total;
    }
    bool go = !q->advice_stop;
    pthread_mutex_unlock(&q->mu);
    return go;
}

/* Under mu, from the advice thread: the phase it is in. */
static void advice_phase(struct advice_work *w, int phase, uint64_t done, uint64_t total)
{
    pthread_mutex_lock(&w->q->mu);
    struct query_advice_slot *e = advice_slot(w->q, w->run_id, false);
    if (e) {
        e->phase = phase;
        e->rows_done = done;
        e->rows_total = total;
    }
    pthread_mutex_unlock(&w->q->mu);
}

static bool advice_stopped(struct query_queue *q)
{
    pthread_mutex_lock(&q->mu);
    bool stop = q->advice_stop;
    pthread_mutex_unlock(&q->mu);
    return stop;
}

static bool advice_on_rows(void *ud, uint64_t done, uint64_t total)
{
    struct advice_work *w = ud;
    advice_phase(w, ADVICE_REPLAYING, done, total);
    return !advice_stopped(w->q);
}

/* The advice thread's connection: interrupted when the queue closes. */
static int advice_sql_progress(void *ud)
{
    return advice_stopped(ud);
}

/* Rows basis (advice thread): the prediction, the plan and the sequence of
 * the run's writes, on a read-only connection of its own. 0, 1 when the
 * run left no items, or -1 with err. */
static int advice_read_rows(struct advice_work *w, struct capacity_seq *seq, char *err,
                            size_t errlen)
{
    sqlite3 *db = NULL;
    struct reader *rd = NULL;
    int rc = -1;
    if (pgstore_is_uri(w->path)) { /* a connection of its own (MVCC: never blocks) */
        if (reader_open(&rd, w->path, err, errlen))
            goto out;
    } else if (sqlite3_open_v2(w->path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot open %s: %s", w->path, db ? sqlite3_errmsg(db) : "no memory");
        goto out;
    }
    if (db) {
        sqlite3_busy_timeout(db, READER_BUSY_MS);
        sqlite3_progress_handler(db, QUERY_PROGRESS_OPS, advice_sql_progress, w->q);
        if (reader_open_sqlite(&rd, db, w->path, err, errlen))
            goto out;
    }
    advice_phase(w, ADVICE_READING, 0, 0);
    if (runs_read_prediction(rd, w->run_id, w->r, err, errlen))
        goto out;
    if (w->r->live.n == 0) {
        rc = 1;
        goto out;
    }
    advice_plan(rd, w->r, NULL, 0, &w->plan);
    advice_phase(w, ADVICE_REPLAYING, 0, (uint64_t)w->writes);
    if (rowseq_capacity(rd, w->run_id, seq, advice_on_rows, w, NULL, err, errlen))
        goto out;
    rc = 0;
out:
    reader_close(rd);
    sqlite3_close(db);
    return rc;
}

static void advice_candidate_json(struct buf *b, const struct advise_candidate *c,
                                  const struct advice_plan *plan, const char *version,
                                  bool recommended)
{
    char flags[1024];
    const struct capacity_result *k = &c->cap;
    advice_candidate_flags(c, plan, version, flags, sizeof flags);
    buf_puts(b, "{\"label\":");
    jsonb_string(b, c->label, strlen(c->label));
    buf_puts(b, ",\"flags\":");
    jsonb_string(b, flags, strlen(flags));
    buf_printf(b,
               ",\"chunk_waste_pct\":%.2f,\"chunk_waste_bytes\":%llu,\"page_slack_bytes\":%llu,"
               "\"memory_bytes\":%llu,\"items_held\":%llu,\"bytes_held\":%llu,"
               "\"evictions\":%llu,\"vs_current\":\"%s\",\"over_limit\":%s,\"recommended\":%s}",
               k->chunk_bytes ? 100.0 * (double)k->chunk_waste / (double)k->chunk_bytes : 0,
               (unsigned long long)k->chunk_waste, (unsigned long long)k->page_slack,
               (unsigned long long)k->malloced, (unsigned long long)k->items,
               (unsigned long long)k->requested, (unsigned long long)k->evictions,
               c->vs_current > 0   ? "better"
               : c->vs_current < 0 ? "worse"
                                   : "same",
               c->over_limit ? "true" : "false", recommended ? "true" : "false");
}

/* The answer for w, computed (worker thread); NULL when out of memory or
 * stopped. */
static char *advice_compute(struct advice_work *w, double *secs)
{
    struct prediction *r = w->r;
    struct capacity_seq seq;
    struct advise_candidate *c = calloc(ADVISE_MAX_CANDIDATES, sizeof *c);
    struct buf b;
    size_t n = 0;
    int64_t t0 = mono_ns();
    char why[PREDICT_WHY_MAX + 64], err[512];
    capacity_seq_init(&seq);
    buf_init(&b, JSONB_MAX);
    int rec = -1, rd = 0;
    if (c && !w->from_agg) {
        rd = advice_read_rows(w, &seq, err, sizeof err);
        if (rd) { /* the answer says why there is none */
            buf_printf(&b, "{\"run_id\":%lld,\"verdict\":\"%s\",\"why\":", (long long)w->run_id,
                       rd > 0 ? "NO DATA" : "NOT COMPUTED");
            if (rd > 0)
                snprintf(err, sizeof err, "the run left no items to size");
            jsonb_string(&b, err, strlen(err));
            buf_puts(&b, ",\"basis\":\"rows\",\"current\":null,\"candidates\":[]}\n");
            capacity_seq_free(&seq);
            free(c);
            *secs = (double)(mono_ns() - t0) / 1e9;
            return advice_stopped(w->q) ? (buf_free(&b), NULL) : buf_take(&b);
        }
    }
    if (c && (!w->from_agg || !advise_seq_from_hist(&r->live, r->settings.use_cas, &seq)))
        rec =
            advise_capacity(&r->settings, &r->live, &seq, 0, seq.n, w->plan.obj, w->plan.mem_limit,
                            SLAB_MODEL_MAX_CLASSES, c, &n, advice_on_progress, w);
    *secs = (double)(mono_ns() - t0) / 1e9;
    if (rec < 0) {
        buf_free(&b);
        capacity_seq_free(&seq);
        free(c);
        return NULL;
    }
    int diff = predict_mismatches(r);
    const char *verdict = !r->have_sample      ? "NO SAMPLE"
                          : !r->exact_expected ? "NOT COMPARABLE"
                          : diff               ? "MISMATCH"
                                               : "EXACT";
    if (!r->exact_expected)
        snprintf(why, sizeof why, "%s", r->why_not);
    else if (diff)
        snprintf(why, sizeof why, "%d classes differ from memcached's counters", diff);
    else
        snprintf(why, sizeof why, "every class matches memcached's own counters");
    buf_printf(&b, "{\"run_id\":%lld,\"verdict\":\"%s\",\"why\":", (long long)w->run_id, verdict);
    jsonb_string(&b, why, strlen(why));
    /* how it was obtained */
    buf_printf(&b, ",\"basis\":\"%s\",\"basis_why\":", w->from_agg ? "aggregates" : "rows");
    jsonb_string(&b, w->basis_why, strlen(w->basis_why));
    buf_printf(&b, ",\"writes_seen\":%lld,\"rows_used\":%lld,", (long long)w->writes,
               w->from_agg ? 0 : (long long)r->rows);
    if (w->from_agg)
        buf_printf(&b,
                   "\"aggregates\":{\"stored\":%llu,\"deletes\":%llu,\"live\":%llu,"
                   "\"exact\":%s,\"live_from\":\"%s\"},",
                   (unsigned long long)w->agg.stored, (unsigned long long)w->agg.deletes,
                   (unsigned long long)w->agg.live, w->agg.exact ? "true" : "false",
                   w->agg.live_by_class     ? "each class's stats items number"
                   : w->agg.from_curr_items ? "the last sample's curr_items"
                                            : "stores less deletes");
    buf_printf(&b, "\"live_items\":%llu,\"distinct_sizes\":%zu,\"sequence_writes\":%zu,",
               (unsigned long long)r->live_items, r->live.n, seq.n);
    buf_printf(&b, "\"objective\":\"%s\",\"objective_why\":",
               w->plan.obj == CAPACITY_OBJ_ITEMS ? "items" : "memory");
    jsonb_string(&b, w->plan.why, strlen(w->plan.why));
    buf_printf(&b, ",\"memory_limit_bytes\":%llu,\"max_classes\":%d,\"ladder_source\":",
               (unsigned long long)w->plan.mem_limit, SLAB_MODEL_MAX_CLASSES);
    const char *ls = ladder_origin_str(r->choice.origin);
    jsonb_string(&b, ls, strlen(ls));
    buf_puts(&b, ",\"ladder_note\":");
    jsonb_string(&b, r->choice.note, strlen(r->choice.note));
    char cmd[1024];
    /* the command that prints the same: its default basis is this one
     * (advice_basis); its default objective too, unless the run recorded
     * reads (then the hits advice: --objective names this one) */
    snprintf(cmd, sizeof cmd, "slabtap model advise --db %s --run %lld%s%s",
             w->file ? w->file : "FILE", (long long)w->run_id,
             w->hits_default ? " --objective " : "",
             !w->hits_default                    ? ""
             : w->plan.obj == CAPACITY_OBJ_ITEMS ? "items"
                                                 : "memory");
    buf_puts(&b, ",\"command\":");
    jsonb_string(&b, cmd, strlen(cmd));
    buf_printf(&b, ",\"computed_s\":%.3f,\"regrow_pct\":%d,\"current\":", *secs,
               QUERY_ADVICE_REGROW_PCT);
    advice_candidate_json(&b, &c[0], &w->plan, r->version, rec == 0);
    buf_puts(&b, ",\"recommended\":");
    advice_candidate_json(&b, &c[rec], &w->plan, r->version, true);
    buf_puts(&b, ",\"candidates\":[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_puts(&b, ",");
        advice_candidate_json(&b, &c[i], &w->plan, r->version, (int)i == rec);
    }
    buf_puts(&b, "]}\n");
    capacity_seq_free(&seq);
    free(c);
    return buf_take(&b);
}

static void advice_work_free(struct advice_work *w)
{
    if (!w)
        return;
    if (w->r)
        predict_free(w->r);
    free(w->r);
    free(w->path);
    free(w->file);
    free(w);
}

static void *advice_thread(void *arg)
{
    struct advice_work *w = arg;
    struct query_queue *q = w->q;
    double secs = 0;
    char *text = advice_compute(w, &secs);
    pthread_mutex_lock(&q->mu);
    struct query_advice_slot *e = advice_slot(q, w->run_id, false);
    if (e) {
        e->computing = false;
        if (text) {
            free(e->text);
            e->text = text;
            text = NULL;
            e->made_ns = mono_ns();
        }
    }
    pthread_mutex_unlock(&q->mu);
    free(text);
    advice_work_free(w);
    return NULL;
}

/* j's answer: no advice, the verdict and why. */
static void advice_none(struct query_job *j, const char *verdict, const char *why)
{
    struct buf b;
    buf_init(&b, JSONB_MAX);
    buf_printf(&b, "{\"run_id\":%lld,\"verdict\":\"%s\",\"why\":", (long long)j->run_id, verdict);
    jsonb_string(&b, why, strlen(why));
    buf_puts(&b, ",\"current\":null,\"candidates\":[]}\n");
    set_error(j, QUERY_OK, NULL);
    json_finish(j, &b);
    buf_free(&b);
}

/* Writer thread: the inputs of run j's advice, read in one budgeted step,
 * handed to a worker. 0 when it runs; -1 with j answered. */
static int advice_start(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    struct advice_work *w = calloc(1, sizeof *w);
    char err[512];
    int rc;
    if (!w || !(w->r = calloc(1, sizeof *w->r))) {
        advice_work_free(w);
        set_error(j, QUERY_FAILED, "out of memory");
        return -1;
    }
    w->q = q;
    w->run_id = j->run_id;
    w->writes = j->hi - j->lo;
    const char *path = db->lite ? qsql_name(db) : q->pg_uri;
    w->file = shell_word(*qsql_name(db) ? qsql_name(db) : "FILE"); /* no password */
    w->path = strdup(path && *path ? path : "");
    if (!w->path || !*w->path) {
        advice_work_free(w);
        set_error(j, QUERY_FAILED, "the database has no file to read the rows from");
        return -1;
    }
    budget_start(q, db, q->budget_ms > QUERY_ADVICE_READ_MS ? q->budget_ms : QUERY_ADVICE_READ_MS);
    struct reader *rd = NULL; /* the writer's connection, read through the reader */
    rc = db->lite ? reader_open_sqlite(&rd, db->lite, w->path, err, sizeof err)
                  : reader_open(&rd, w->path, err, sizeof err);
    if (!rc) {
        reader_rows_status(rd, j->run_id, &w->rows);
        w->from_agg = advice_basis(rd, j->run_id, &w->rows, true, w->basis_why,
                                   sizeof w->basis_why) == RUNS_BASIS_AGGREGATES;
        w->hits_default = advice_hits_default(rd, j->run_id, &w->rows);
    }
    if (!rc && w->from_agg) /* the rows: read by the advice thread, on its own connection */
        rc = runs_read_prediction_agg(rd, j->run_id, w->r, &w->agg, err, sizeof err);
    if (!rc && w->from_agg)
        advice_plan(rd, w->r, NULL, 0, &w->plan);
    reader_close(rd);
    budget_end(db);
    if (q->interrupted) {
        advice_work_free(w);
        set_error(j, QUERY_BUSY,
                  "computing advice: reading the run's write aggregates took longer than one step "
                  "of the writer may; started again on the next question");
        return -1;
    }
    if (rc || (w->from_agg && w->r->live.n == 0)) {
        advice_none(j, "NO DATA", rc ? err : "the run left no items to size");
        advice_work_free(w);
        return -1;
    }
    if (q->advice_thread_live) { /* the last one has finished (checked by the caller) */
        pthread_join(q->advice_thread, NULL);
        q->advice_thread_live = false;
    }
    pthread_mutex_lock(&q->mu);
    struct query_advice_slot *e = advice_slot(q, j->run_id, true);
    if (e) {
        e->computing = true;
        e->finished_run = j->finished_run;
        e->writes = w->writes;
        e->started_ns = mono_ns();
        e->done = 0;
        e->total = 0;
        e->phase = w->from_agg ? ADVICE_CANDIDATES : ADVICE_READING;
        e->basis = w->from_agg ? "aggregates" : "rows";
    }
    pthread_mutex_unlock(&q->mu);
    if (!e || pthread_create(&q->advice_thread, NULL, advice_thread, w)) {
        pthread_mutex_lock(&q->mu);
        if (e)
            e->computing = false;
        pthread_mutex_unlock(&q->mu);
        advice_work_free(w);
        set_error(j, QUERY_FAILED, "cannot start the advice thread");
        return -1;
    }
    q->advice_thread_live = true;
    return 0;
}

/* Writer thread: the cached answer, the progress, or a computation
 * started (then its progress). */
static void answer_advice(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    char msg[320];
    int64_t writes = j->hi - j->lo;
    pthread_mutex_lock(&q->mu);
    struct query_advice_slot *e = advice_slot(q, j->run_id, false);
    bool busy_other = false;
    for (size_t i = 0; q->advice && i < QUERY_ADVICE_RUNS; i++)
        busy_other = busy_other || (q->advice[i].computing && q->advice[i].run_id != j->run_id);
    if (e && e->computing) {
        advice_progress_text(e, msg, sizeof msg);
        pthread_mutex_unlock(&q->mu);
        set_error(j, QUERY_BUSY, msg);
        return;
    }
    /* fresh: the run has not grown by QUERY_ADVICE_REGROW_PCT since */
    bool fresh = e && e->text &&
                 (writes <= e->writes ||
                  (writes - e->writes) * 100 < e->writes * (int64_t)QUERY_ADVICE_REGROW_PCT);
    if (fresh || (e && e->text && busy_other)) {
        if (fresh)
            e->made_ns = mono_ns();
        set_error(j, QUERY_OK, e->text);
        pthread_mutex_unlock(&q->mu);
        return;
    }
    if (busy_other) {
        for (size_t i = 0; i < QUERY_ADVICE_RUNS; i++)
            if (q->advice[i].computing)
                snprintf(msg, sizeof msg, "waiting: the advice of run %lld is being computed first",
                         (long long)q->advice[i].run_id);
        pthread_mutex_unlock(&q->mu);
        set_error(j, QUERY_BUSY, msg);
        return;
    }
    pthread_mutex_unlock(&q->mu);
    if (advice_start(q, db, j))
        return;
    pthread_mutex_lock(&q->mu);
    e = advice_slot(q, j->run_id, false);
    if (e && e->text) { /* the last answer while the new one is computed */
        set_error(j, QUERY_OK, e->text);
    } else {
        snprintf(msg, sizeof msg, "computing advice: started on %lld writes (%s)",
                 (long long)writes, e && e->basis ? e->basis : "?");
        set_error(j, QUERY_BUSY, msg);
    }
    pthread_mutex_unlock(&q->mu);
}

int query_advice_peek(struct query_queue *q, int64_t run_id, char **text, int *retry_s)
{
    int st = -1;
    *text = NULL;
    *retry_s = 0;
    if (!q->open)
        return -1;
    pthread_mutex_lock(&q->mu);
    struct query_advice_slot *e = advice_slot(q, run_id ? run_id : q->current_run, false);
    if (e && e->computing && !e->text) {
        char msg[320];
        *retry_s = advice_progress_text(e, msg, sizeof msg);
        *text = strdup(msg);
        st = QUERY_BUSY;
    } else if (e && e->text &&
               (e->finished_run || e->computing ||
                mono_ns() - e->made_ns < (int64_t)QUERY_ADVICE_TTL_MS * 1000000)) {
        *text = strdup(e->text);
        st = QUERY_OK;
    }
    pthread_mutex_unlock(&q->mu);
    if (st >= 0 && !*text)
        return -1;
    return st;
}

/* ---- reads per class, the model's reports ------------------------------- */

#define READS_CLASSES 64            /* class ids 0 (unknown) .. 63 */
#define READS_MINUTE_NS 60000000000 /* agg_reads counts per minute */

static void json_ratio(struct buf *b, int64_t hits, int64_t reads)
{
    if (reads > 0)
        buf_printf(b, "%.6f", (double)hits / (double)reads);
    else
        buf_puts(b, "null");
}

static void json_chunk(struct buf *b, const struct ladder_rows *l, int64_t class_id)
{
    for (int i = 0; i < l->n; i++)
        if (l->id[i] == class_id) {
            buf_printf(b, "%lld", (long long)l->chunk[i]);
            return;
        }
    buf_puts(b, "null");
}

#define READS_SLICE_MINUTES 1440 /* minutes of agg_reads one step reads (a day) */
#define READS_SLICE_MIN 15

/* reads: per class and bucket of whole minutes, summed slice by slice */
struct reads_acc {
    int64_t lo, hi, width, cursor, slice; /* minutes */
    int nb;                               /* buckets */
    int64_t *rd, *ht;                     /* [class * nb + bucket]: reads, hits */
    int64_t tot[READS_CLASSES][3];        /* reads, hits, misses */
    bool seen[READS_CLASSES];
};

static void reads_acc_free(struct reads_acc *ra)
{
    if (!ra)
        return;
    free(ra->rd);
    free(ra->ht);
    free(ra);
}

/* The run's span of minutes and the buckets: 0, or -1 with j answered. */
static int reads_start(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    struct qsql st;
    struct reads_acc *ra = calloc(1, sizeof *ra);
    int rc;
    if (!ra) {
        set_error(j, QUERY_FAILED, "out of memory");
        return -1;
    }
    j->ra = ra;
    ra->hi = -1;
    ra->width = 1;
    ra->slice = READS_SLICE_MINUTES;
    if (sql_prepare(db, &SQL_READS_SPAN, &st, j))
        return -1;
    qsql_bind(&st, 1, j->run_id);
    rc = qsql_step(&st);
    if (rc == QSQL_ROW) {
        if (!qsql_null(&st, 0)) {
            ra->lo = qsql_int(&st, 0);
            ra->hi = qsql_int(&st, 1);
        }
        rc = QSQL_DONE;
    }
    if (sql_done(q, db, &st, rc, j))
        return -1;
    ra->cursor = ra->lo;
    if (ra->hi < ra->lo)
        return 0;
    int64_t span = ra->hi - ra->lo + 1;
    ra->width = (span + j->p.points - 1) / j->p.points;
    ra->nb = (int)((span + ra->width - 1) / ra->width);
    ra->rd = calloc((size_t)READS_CLASSES * (size_t)ra->nb, sizeof *ra->rd);
    ra->ht = calloc((size_t)READS_CLASSES * (size_t)ra->nb, sizeof *ra->ht);
    if (!ra->rd || !ra->ht) {
        set_error(j, QUERY_FAILED, "out of memory");
        return -1;
    }
    return 0;
}

/* One slice of minutes, kept in j->a (k1 = minute * 64 + class, k2 = reads,
 * n = hits, sum = misses) until it is read whole, then summed: a slice over
 * the budget is read again, half as long. True when the scan is done (or
 * j answered). */
static bool reads_slice(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    struct reads_acc *ra = j->ra;
    struct qsql st;
    int rc;
    if (ra->cursor > ra->hi)
        return true;
    int64_t to = ra->cursor + ra->slice;
    j->a.n = 0;
    if (sql_prepare(db, &SQL_READS_SLICE, &st, j))
        return true;
    qsql_bind(&st, 1, j->run_id);
    qsql_bind(&st, 2, ra->cursor);
    qsql_bind(&st, 3, to);
    while ((rc = qsql_step(&st)) == QSQL_ROW) {
        int64_t c = qsql_int(&st, 1);
        if (c >= 0 && c < READS_CLASSES)
            agg_add(&j->a, qsql_int(&st, 0) * READS_CLASSES + c, qsql_int(&st, 2), qsql_int(&st, 3),
                    qsql_int(&st, 4));
    }
    if (sql_done(q, db, &st, rc, j)) {
        if (j->st != QUERY_BUSY || ra->slice <= READS_SLICE_MIN)
            return true;
        ra->slice /= 2; /* the same minutes again, fewer at a time */
        free(j->text);
        j->text = NULL;
        j->st = QUERY_OK;
        return false;
    }
    if (j->a.failed) {
        set_error(j, QUERY_FAILED, "out of memory");
        return true;
    }
    for (size_t i = 0; i < j->a.n; i++) {
        const struct agg_ent *e = &j->a.e[i];
        int64_t c = e->k1 % READS_CLASSES, k = (e->k1 / READS_CLASSES - ra->lo) / ra->width;
        if (k < 0 || k >= ra->nb)
            continue;
        ra->rd[c * ra->nb + k] += e->k2;
        ra->ht[c * ra->nb + k] += e->n;
        ra->tot[c][0] += e->k2;
        ra->tot[c][1] += e->n;
        ra->tot[c][2] += e->sum;
        ra->seen[c] = true;
    }
    j->a.n = 0;
    ra->cursor = ra->hi + 1; /* on to the next minute with reads: idle days cost no step */
    if (to <= ra->hi && qsql_prepare(&st, db, SQL_READS_NEXT.lite, SQL_READS_NEXT.pg) == 0) {
        qsql_bind(&st, 1, j->run_id);
        qsql_bind(&st, 2, to);
        ra->cursor = qsql_step(&st) == QSQL_ROW && !qsql_null(&st, 0) ? qsql_int(&st, 0) : to;
        qsql_finalize(&st);
    }
    return ra->cursor > ra->hi;
}

/* agg_reads of the run, summed: every class's totals (class 0: misses of
 * keys of unknown class, never a line), a line per bucket of whole minutes
 * for the top classes by reads (then the lower class id), one for the
 * rest. */
static void answer_reads(struct qsql_db *db, struct query_job *j)
{
    const struct reads_acc *ra = j->ra;
    struct buf b;
    struct ladder_rows l;
    int64_t all[3] = { 0, 0, 0 };
    int64_t *ord = calloc((size_t)ra->nb + 1, sizeof *ord),
            *oth = calloc((size_t)ra->nb + 1, sizeof *oth);
    int order[READS_CLASSES], nl = 0, nb = ra->nb;
    buf_init(&b, JSONB_MAX);
    if (!ord || !oth) {
        set_error(j, QUERY_FAILED, "out of memory");
        goto out;
    }
    read_ladder(db, j->run_id, &l);
    for (int c = 0; c < READS_CLASSES; c++)
        for (int x = 0; x < 3; x++)
            all[x] += ra->tot[c][x];
    for (int c = 1; c < READS_CLASSES; c++) { /* most reads first, then the lower id */
        if (!ra->seen[c])
            continue;
        int i = nl++;
        while (i > 0 && ra->tot[order[i - 1]][0] < ra->tot[c][0])
            i--;
        memmove(&order[i + 1], &order[i], (size_t)(nl - 1 - i) * sizeof *order);
        order[i] = c;
    }
    int top = nl < j->p.top ? nl : j->p.top;
    buf_printf(&b, "{\"run_id\":%lld,\"bucket_ns\":%lld,\"t\":[", (long long)j->run_id,
               (long long)(ra->width * READS_MINUTE_NS));
    for (int k = 0; k < nb; k++)
        buf_printf(&b, "%s%lld", k ? "," : "",
                   (long long)((ra->lo + k * ra->width) * READS_MINUTE_NS));
    buf_printf(&b, "],\"total\":{\"reads\":%lld,\"hits\":%lld,\"misses\":%lld,\"hit_ratio\":",
               (long long)all[0], (long long)all[1], (long long)all[2]);
    json_ratio(&b, all[1], all[0]);
    buf_puts(&b, "},\"classes\":[");
    for (int c = 0, first = 1; c < READS_CLASSES; c++) {
        if (!ra->seen[c])
            continue;
        buf_printf(&b, "%s{\"class_id\":%d,\"chunk_size\":", first ? "" : ",", c);
        json_chunk(&b, &l, c);
        buf_printf(&b, ",\"reads\":%lld,\"hits\":%lld,\"misses\":%lld,\"hit_ratio\":",
                   (long long)ra->tot[c][0], (long long)ra->tot[c][1], (long long)ra->tot[c][2]);
        json_ratio(&b, ra->tot[c][1], ra->tot[c][0]);
        buf_puts(&b, "}");
        first = 0;
    }
    buf_puts(&b, "],\"lines\":[");
    for (int i = 0; i < top; i++) {
        int c = order[i];
        buf_printf(&b, "%s{\"class_id\":%d,\"chunk_size\":", i ? "," : "", c);
        json_chunk(&b, &l, c);
        buf_puts(&b, ",\"reads\":[");
        jsonb_int64s(&b, ra->rd + (size_t)c * nb, (size_t)nb);
        buf_puts(&b, "],\"hits\":[");
        jsonb_int64s(&b, ra->ht + (size_t)c * nb, (size_t)nb);
        buf_puts(&b, "]}");
    }
    if (nl > top) {
        buf_printf(&b, "%s{\"class_id\":null,\"chunk_size\":null,\"other_classes\":[",
                   top ? "," : "");
        for (int i = top; i < nl; i++) {
            buf_printf(&b, "%s%d", i > top ? "," : "", order[i]);
            for (int k = 0; k < nb; k++) {
                ord[k] += ra->rd[(size_t)order[i] * nb + k];
                oth[k] += ra->ht[(size_t)order[i] * nb + k];
            }
        }
        buf_puts(&b, "],\"reads\":[");
        jsonb_int64s(&b, ord, (size_t)nb);
        buf_puts(&b, "],\"hits\":[");
        jsonb_int64s(&b, oth, (size_t)nb);
        buf_puts(&b, "]}");
    }
    buf_puts(&b, "]}\n");
    json_finish(j, &b);
out:
    buf_free(&b);
    free(ord);
    free(oth);
}

/* s as one shell word: as is when it needs no quoting, else in single
 * quotes. NULL when out of memory. */
static char *shell_word(const char *s)
{
    size_t n = strlen(s);
    bool plain = n > 0;
    for (size_t i = 0; i < n && plain; i++)
        plain = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
                (s[i] >= '0' && s[i] <= '9') || strchr("_./-+:,@%=", s[i]);
    char *out = malloc(4 * n + 3), *o = out;
    if (!out || plain)
        return out ? strcpy(out, s) : NULL;
    *o++ = '\'';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = s[i];
        }
    }
    *o++ = '\'';
    *o = 0;
    return out;
}

/* run_meta 'hits_advice' and 'hits_mrc' as stored (trailing white space
 * cut), null when absent or not JSON; the commands that store them. */
static void answer_reports(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    static const char *const keys[2] = { "hits_advice", "hits_mrc" };
    struct qsql st;
    struct buf b, val[2];
    bool have[2] = { false, false };
    int rc;
    const char *path = qsql_name(db);
    char *file = shell_word(path && *path ? path : "FILE");
    buf_init(&b, JSONB_MAX);
    buf_init(&val[0], JSONB_MAX);
    buf_init(&val[1], JSONB_MAX);
    if (!file) {
        set_error(j, QUERY_FAILED, "out of memory");
        goto out;
    }
    if (sql_prepare(db, &SQL_REPORTS, &st, j))
        goto out;
    qsql_bind(&st, 1, j->run_id);
    while ((rc = qsql_step(&st)) == QSQL_ROW) {
        const char *k = qsql_text(&st, 0);
        const char *v = qsql_text(&st, 1);
        int n = qsql_bytes(&st, 1);
        int i = k && !strcmp(k, keys[0]) ? 0 : 1;
        while (n > 0 && v && strchr(" \t\r\n", v[n - 1]))
            n--;
        if (!v || n <= 0)
            continue;
        buf_append(&val[i], v, (size_t)n);
        have[i] = true;
    }
    if (sql_done(q, db, &st, rc, j))
        goto out;
    buf_printf(&b, "{\"run_id\":%lld", (long long)j->run_id);
    for (int i = 0; i < 2; i++) {
        buf_printf(&b, ",\"%s\":", keys[i]);
        if (have[i] && !val[i].failed)
            buf_append(&b, val[i].data, val[i].len);
        else
            buf_puts(&b, "null");
    }
    char cmd[2][512];
    snprintf(cmd[0], sizeof cmd[0], " --run %lld --objective hits --save", (long long)j->run_id);
    snprintf(cmd[1], sizeof cmd[1], " --run %lld --save", (long long)j->run_id);
    for (int i = 0; i < 2; i++) {
        buf_printf(&b, "%s\"%s\":", i ? "," : ",\"commands\":{", keys[i]);
        struct buf c;
        buf_init(&c, JSONB_MAX);
        buf_printf(&c, "slabtap model %s --db %s%s", i ? "mrc" : "advise", file, cmd[i]);
        if (c.failed)
            b.failed = true;
        else
            jsonb_string(&b, c.data, c.len);
        buf_free(&c);
    }
    buf_puts(&b, "}}\n");
    json_finish(j, &b);
out:
    buf_free(&b);
    buf_free(&val[0]);
    buf_free(&val[1]);
    free(file);
}

/* Columns as the members of a JSON object: "name":value for each, comma
 * first but for the first; kind 'i' an integer, 'g' a real, 's' a string
 * ("" for NULL), 'b' a boolean; NULL as null but for strings. */
struct json_col {
    const char *name;
    int col;
    char kind;
};

static void json_cols(struct buf *b, const struct qsql *st, const struct json_col *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = qsql_text(st, f[i].col);
        buf_printf(b, "%s\"%s\":", i ? "," : "", f[i].name);
        if (f[i].kind == 's')
            jsonb_string(b, v ? v : "", v ? strlen(v) : 0);
        else if (f[i].kind == 'b')
            buf_puts(b, qsql_int(st, f[i].col) ? "true" : "false");
        else if (!v)
            buf_puts(b, "null");
        else if (f[i].kind == 'g')
            buf_printf(b, "%g", strtod(v, NULL));
        else
            buf_printf(b, "%lld", (long long)qsql_int(st, f[i].col));
    }
}

/* ---- taps (issue 22): evictions and snapshots ---------------------------- */

/* What a stage binds, in order: ?1, ?2, ... */
enum tap_bind { TB_RUN, TB_SNAP, TB_FROM, TB_WIDTH, TB_TOP };

struct tap_stage {
    const char *member; /* the answer's JSON member */
    bool object;        /* one row, as an object (else an array of them) */
    struct query_sql sql;
    enum tap_bind bind[4];
    int nbind;
    struct json_col cols[8];
    size_t ncols;
};

/* the evictions: totals, per class, per time bucket and class, by prefix */
static const struct tap_stage TAP_EVICTIONS[] = {
    { "totals",
      true,
      { "SELECT coalesce(sum(CASE WHEN event = 1 THEN 1 ELSE 0 END), 0),"
        " coalesce(sum(CASE WHEN event = 1 AND fetched = 0 THEN 1 ELSE 0 END), 0),"
        " coalesce(sum(CASE WHEN event = 2 THEN 1 ELSE 0 END), 0), min(t_ns), max(t_ns)"
        " FROM item_events WHERE run_id = ?1",
        NULL },
      { TB_RUN },
      1,
      { { "evictions", 0, 'i' },
        { "never_fetched", 1, 'i' },
        { "deletions", 2, 'i' },
        { "first_ns", 3, 'i' },
        { "last_ns", 4, 'i' } },
      5 },
    { "classes",
      false,
      { "SELECT class_id, sum(evictions), sum(never_fetched) FROM evictions_per_class_minute"
        " WHERE run_id = ?1 GROUP BY class_id ORDER BY class_id",
        NULL },
      { TB_RUN },
      1,
      { { "class_id", 0, 'i' }, { "evictions", 1, 'i' }, { "never_fetched", 2, 'i' } },
      3 },
    { "series",
      false,
      { "SELECT ?2 + ((minute * 60000000000 - ?2) / ?3) * ?3 AS t, class_id, sum(evictions),"
        " sum(never_fetched) FROM evictions_per_class_minute WHERE run_id = ?1"
        " GROUP BY 1, 2 ORDER BY 1, 2",
        NULL },
      { TB_RUN, TB_FROM, TB_WIDTH },
      3,
      { { "t_ns", 0, 'i' },
        { "class_id", 1, 'i' },
        { "evictions", 2, 'i' },
        { "never_fetched", 3, 'i' } },
      4 },
    { "prefixes",
      false,
      { "SELECT prefix, class_id, evictions, never_fetched FROM evictions_by_prefix"
        " WHERE run_id = ?1 AND prefix IS NOT NULL ORDER BY evictions DESC, prefix, class_id"
        " LIMIT ?2",
        NULL },
      { TB_RUN, TB_TOP },
      2,
      { { "prefix", 0, 's' },
        { "class_id", 1, 'i' },
        { "evictions", 2, 'i' },
        { "never_fetched", 3, 'i' } },
      4 },
};

/* a snapshot: the run's snapshots (newest first; picks the snap), then the
 * picked one's classes, idle and age histograms and top prefixes */
static const struct tap_stage TAP_SNAPSHOT[] = {
    { "snapshots",
      false,
      { "SELECT snap, t_ns, ended_ns, items, bytes, complete FROM snapshots WHERE run_id = ?1"
        " ORDER BY snap DESC LIMIT 100",
        NULL },
      { TB_RUN },
      1,
      { { "snap", 0, 'i' },
        { "t_ns", 1, 'i' },
        { "ended_ns", 2, 'i' },
        { "items", 3, 'i' },
        { "bytes", 4, 'i' },
        { "complete", 5, 'b' } },
      6 },
    { "classes",
      false,
      { "SELECT class_id, items, bytes, min_size, max_size, chunk_size, waste_bytes"
        " FROM snapshot_class_sizes WHERE run_id = ?1 AND snap = ?2 ORDER BY class_id",
        NULL },
      { TB_RUN, TB_SNAP },
      2,
      { { "class_id", 0, 'i' },
        { "items", 1, 'i' },
        { "bytes", 2, 'i' },
        { "min_size", 3, 'i' },
        { "max_size", 4, 'i' },
        { "chunk_size", 5, 'i' },
        { "waste_bytes", 6, 'i' } },
      7 },
    { "idle",
      false,
      { "SELECT class_id, bucket, items, never_fetched FROM snapshot_idle_histogram"
        " WHERE run_id = ?1 AND snap = ?2 ORDER BY class_id, bucket",
        NULL },
      { TB_RUN, TB_SNAP },
      2,
      { { "class_id", 0, 'i' },
        { "bucket_s", 1, 'i' },
        { "items", 2, 'i' },
        { "never_fetched", 3, 'i' } },
      4 },
    { "age",
      false,
      { "SELECT class_id, bucket, items, never_fetched FROM snapshot_age_histogram"
        " WHERE run_id = ?1 AND snap = ?2 ORDER BY class_id, bucket",
        NULL },
      { TB_RUN, TB_SNAP },
      2,
      { { "class_id", 0, 'i' },
        { "bucket_s", 1, 'i' },
        { "items", 2, 'i' },
        { "never_fetched", 3, 'i' } },
      4 },
    { "prefixes",
      false,
      { "SELECT prefix, sum(items), sum(bytes) FROM snapshot_prefixes"
        " WHERE run_id = ?1 AND snap = ?2 AND prefix IS NOT NULL GROUP BY prefix"
        " ORDER BY 3 DESC, prefix LIMIT ?3",
        NULL },
      { TB_RUN, TB_SNAP, TB_TOP },
      3,
      { { "prefix", 0, 's' }, { "items", 1, 'i' }, { "bytes", 2, 'i' } },
      3 },
};

/* One stage of an evictions or snapshot answer per step (each a query of
 * its own within the budget); true when j is answered. */
static bool tap_step(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    bool ev = j->p.kind == QUERY_EVICTIONS;
    const struct tap_stage *stages = ev ? TAP_EVICTIONS : TAP_SNAPSHOT;
    int nstages = ev ? (int)(sizeof TAP_EVICTIONS / sizeof *TAP_EVICTIONS)
                     : (int)(sizeof TAP_SNAPSHOT / sizeof *TAP_SNAPSHOT);
    struct buf *b = &j->tap_out;
    /* whole minutes per point over the run's span */
    int64_t minute = 60000000000LL;
    int64_t width = j->span / (j->points > 0 ? j->points : 1);
    width = (width + minute - 1) / minute * minute;
    if (width < minute)
        width = minute;
    if (!j->tap_open) {
        buf_init(b, JSONB_MAX);
        j->tap_open = true;
        j->snap = j->p.snap;
        buf_printf(b, "{\"run_id\":%lld", (long long)j->run_id);
        if (ev)
            buf_printf(b, ",\"from_ns\":%lld,\"bucket_ns\":%lld", (long long)j->from,
                       (long long)width);
    }
    const struct tap_stage *sg = &stages[j->stage];
    struct qsql st;
    int rc, rows = 0;
    bool picked = false;
    if (sql_prepare(db, &sg->sql, &st, j))
        return true;
    for (int i = 0; i < sg->nbind; i++) {
        int64_t v = 0;
        switch (sg->bind[i]) {
        case TB_RUN: v = j->run_id; break;
        case TB_SNAP: v = j->snap; break;
        case TB_FROM: v = j->from; break;
        case TB_WIDTH: v = width; break;
        case TB_TOP: v = j->p.top; break;
        }
        qsql_bind(&st, i + 1, v);
    }
    buf_printf(b, ",\"%s\":%s", sg->member, sg->object ? "" : "[");
    while ((rc = qsql_step(&st)) == QSQL_ROW) {
        if (sg->object && rows)
            continue;
        buf_puts(b, rows++ ? ",{" : "{");
        json_cols(b, &st, sg->cols, sg->ncols);
        buf_puts(b, "}");
        /* the snapshots, newest first: the one asked for, else the latest */
        if (!ev && j->stage == 0 && (j->p.snap ? qsql_int(&st, 0) == j->p.snap : !picked)) {
            j->snap = qsql_int(&st, 0);
            picked = true;
        }
    }
    if (sql_done(q, db, &st, rc, j))
        return true;
    if (sg->object && !rows)
        buf_puts(b, "null");
    if (!sg->object)
        buf_puts(b, "]");
    j->stage++;
    if (!ev && j->stage == 1) {
        if (!picked) {
            j->snap = 0;
            j->stage = nstages; /* no such snapshot: the list alone */
        }
        buf_printf(b, ",\"snap\":");
        if (picked)
            buf_printf(b, "%lld", (long long)j->snap);
        else
            buf_puts(b, "null");
    }
    if (j->stage < nstages)
        return false;
    buf_puts(b, "}\n");
    j->tap_open = false;
    json_finish(j, b);
    return true;
}

/* One step of j; true when j is answered. */
static bool job_step(struct query_queue *q, struct qsql_db *db, struct query_job *j)
{
    if (!j->started) {
        budget_start(q, db, q->budget_ms);
        int rc = job_start(q, db, j);
        budget_end(db);
        if (rc)
            return true;
        struct query_params key = j->p;
        key.run_id = j->run_id;
        key.from_ns = j->from;
        key.to_ns = j->from + j->span - 1;
        /* advice keeps its own answers (answer_advice) */
        struct query_cache_ent *e = j->p.kind == QUERY_ADVICE ? NULL : cache_find(q, &key);
        if (e && j->finished_run) {
            set_error(j, e->st, e->text);
            return true;
        }
    }
    switch (j->p.kind) {
    case QUERY_SIZES:
    case QUERY_TRAFFIC: {
        budget_start(q, db, q->budget_ms);
        bool done = scan_slice(q, db, j);
        budget_end(db);
        if (!done)
            return false;
        if (j->text) /* failed: answered */
            return true;
        if (j->p.kind == QUERY_SIZES) {
            budget_start(q, db, q->budget_ms);
            answer_sizes(db, j);
            budget_end(db);
        } else {
            answer_traffic(q, db, j);
        }
        break;
    }
    case QUERY_CLASSES:
        budget_start(q, db, q->budget_ms);
        answer_classes(q, db, j);
        budget_end(db);
        break;
    case QUERY_SERIES:
        budget_start(q, db, q->budget_ms);
        answer_series(q, db, j);
        budget_end(db);
        break;
    case QUERY_ADVICE: answer_advice(q, db, j); break;
    case QUERY_READS: {
        budget_start(q, db, q->budget_ms);
        bool done = (!j->ra && reads_start(q, db, j)) || reads_slice(q, db, j);
        budget_end(db);
        if (!done)
            return false;
        if (j->text) /* failed: answered */
            return true;
        budget_start(q, db, q->budget_ms);
        answer_reads(db, j);
        budget_end(db);
        break;
    }
    case QUERY_REPORTS:
        budget_start(q, db, q->budget_ms);
        answer_reports(q, db, j);
        budget_end(db);
        break;
    case QUERY_EVICTIONS:
    case QUERY_SNAPSHOT: {
        budget_start(q, db, q->budget_ms);
        bool done = tap_step(q, db, j);
        budget_end(db);
        if (!done)
            return false;
        break;
    }
    case QUERY_TARGETS: {
        struct buf b;
        char err[QSQL_ERR_MAX];
        buf_init(&b, JSONB_MAX);
        budget_start(q, db, q->budget_ms);
        enum query_targets_rc rc = query_targets_json(db, j->run_id, &b, err, sizeof err);
        budget_end(db);
        if (rc == QT_OK) {
            json_finish(j, &b);
        } else {
            buf_free(&b);
            if (rc == QT_TIMEOUT || q->interrupted)
                set_error(j, QUERY_BUSY, "the query went over its time budget");
            else
                set_error(j, QUERY_FAILED, err);
        }
        break;
    }
    }
    if (j->st == QUERY_OK && j->finished_run && j->p.kind != QUERY_ADVICE) {
        struct query_params key = j->p;
        key.run_id = j->run_id;
        key.from_ns = j->from;
        key.to_ns = j->from + j->span - 1;
        cache_put(q, &key, j->st, j->text);
    }
    return true;
}

static void query_step_db(struct query_queue *q, struct qsql_db *db)
{
    pthread_mutex_lock(&q->mu);
    struct query_job *j = q->pending_head;
    if (j) {
        q->pending_head = j->next;
        if (!q->pending_head)
            q->pending_tail = NULL;
        j->next = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    if (!j)
        return;
    qsql_snapshot(db, true); /* PostgreSQL: the step reads one state of the store */
    bool answered = job_step(q, db, j);
    qsql_snapshot(db, false);
    pthread_mutex_lock(&q->mu);
    if (answered) {
        q->queued--;
        q->answered++;
        q->busy += j->st == QUERY_BUSY;
        if (q->done_tail)
            q->done_tail->next = j;
        else
            q->done_head = j;
        q->done_tail = j;
    } else { /* a scan goes on after the next batch */
        if (q->pending_tail)
            q->pending_tail->next = j;
        else
            q->pending_head = j;
        q->pending_tail = j;
    }
    pthread_mutex_unlock(&q->mu);
    if (answered)
        uv_async_send(&q->done);
}

void query_step(struct query_queue *q, sqlite3 *db)
{
    struct qsql_db d = { .lite = db };
    query_step_db(q, &d);
}

/* ---- PostgreSQL: the query thread ------------------------------------------
 * MVCC: a reader never blocks the writer, so the queries run on a thread
 * of their own, on a connection of their own, one step at a time as the
 * writer would, each statement within the budget (statement_timeout). */

static void query_pg_wake(void *ud)
{
    struct query_queue *q = ud;
    pthread_mutex_lock(&q->mu);
    pthread_cond_signal(&q->pg_cv);
    pthread_mutex_unlock(&q->mu);
}

static void *query_pg_thread(void *arg)
{
    struct query_queue *q = arg;
    pthread_mutex_lock(&q->mu);
    while (!q->pg_stop) {
        if (!q->pending_head) {
            pthread_cond_wait(&q->pg_cv, &q->mu);
            continue;
        }
        pthread_mutex_unlock(&q->mu);
        query_step_db(q, &q->pgdb);
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static char *runs_json(struct qsql_db *db, int64_t skip, size_t max);

int query_open_pg(struct query_queue *q, uv_loop_t *loop, int64_t current_run, const char *uri,
                  char **runs, char *err, size_t errlen)
{
    struct qsql_db pgdb;
    if (qsql_open_pg(&pgdb, uri, err, errlen)) {
        qsql_close_pg(&pgdb);
        return -1;
    }
    if (query_open(q, loop, current_run, query_pg_wake, q, err, errlen)) {
        qsql_close_pg(&pgdb);
        return -1;
    }
    q->pgdb = pgdb;
    q->pg_uri = strdup(uri); /* the advice thread's reader connects with it */
    if (runs)                /* before the thread owns the connection */
        *runs = runs_json(&q->pgdb, current_run, QUERY_RUNS_MAX - 1);
    pthread_cond_init(&q->pg_cv, NULL);
    if (!q->pg_uri || pthread_create(&q->pg_thread, NULL, query_pg_thread, q)) {
        snprintf(err, errlen, "cannot start the query thread");
        pthread_cond_destroy(&q->pg_cv);
        query_close(q);
        return -1;
    }
    q->pg_thread_live = true;
    return 0;
}

void query_close(struct query_queue *q)
{
    if (!q->open)
        return;
    q->open = false;
    if (q->pg_thread_live) { /* the query in progress ends within its budget */
        pthread_mutex_lock(&q->mu);
        q->pg_stop = true;
        pthread_cond_signal(&q->pg_cv);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->pg_thread, NULL);
        q->pg_thread_live = false;
        pthread_cond_destroy(&q->pg_cv);
    }
    qsql_close_pg(&q->pgdb);
    free(q->pg_uri);
    q->pg_uri = NULL;
    /* the writer has stopped: the advice thread is the only one left */
    pthread_mutex_lock(&q->mu);
    q->advice_stop = true;
    pthread_mutex_unlock(&q->mu);
    if (q->advice_thread_live)
        pthread_join(q->advice_thread, NULL);
    q->advice_thread_live = false;
    for (size_t i = 0; q->advice && i < QUERY_ADVICE_RUNS; i++)
        free(q->advice[i].text);
    free(q->advice);
    q->advice = NULL;
    pthread_mutex_lock(&q->mu);
    struct query_job *lists[2] = { q->done_head, q->pending_head };
    q->done_head = q->done_tail = q->pending_head = q->pending_tail = NULL;
    q->queued = 0;
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < 2; i++)
        for (struct query_job *j = lists[i], *next; j; j = next) {
            next = j->next;
            j->done(j->ud, QUERY_CANCELLED, NULL);
            job_free(j);
        }
    for (size_t i = 0; q->cache && i < QUERY_CACHE_MAX; i++)
        free(q->cache[i].text);
    free(q->cache);
    q->cache = NULL;
    uv_close((uv_handle_t *)&q->done, NULL);
    pthread_mutex_destroy(&q->mu);
}

static char *runs_json(struct qsql_db *db, int64_t skip, size_t max)
{
    static const struct json_col run[] = {
        { "run_id", 0, 'i' },       { "name", 1, 's' },     { "node", 2, 's' },
        { "started_ns", 3, 'i' },   { "ended_ns", 4, 'i' }, { "rows_recorded", 5, 'i' },
        { "rows_dropped", 6, 'i' }, { "crashed", 7, 'b' },  { "upstream", 8, 's' },
        { "kind", 14, 's' },
    };
    static const struct json_col settings[] = {
        { "growth_factor", 10, 'g' },
        { "chunk_size", 11, 'i' },
        { "item_size_max", 12, 'i' },
        { "slab_page_size", 13, 'i' },
    };
    struct qsql st;
    struct buf b;
    buf_init(&b, JSONB_MAX);
    if (qsql_prepare(&st, db, SQL_RUNS.lite, SQL_RUNS.pg) == 0) {
        qsql_bind(&st, 1, skip);
        qsql_bind(&st, 2, (int64_t)max);
        for (int i = 0; qsql_step(&st) == QSQL_ROW; i++) {
            buf_puts(&b, i ? ",{" : "{");
            json_cols(&b, &st, run, sizeof run / sizeof *run);
            if (qsql_null(&st, 9)) { /* no settings recorded */
                buf_puts(&b, ",\"settings\":null}");
                continue;
            }
            buf_puts(&b, ",\"settings\":{");
            json_cols(&b, &st, settings, sizeof settings / sizeof *settings);
            buf_puts(&b, "}}");
        }
        qsql_finalize(&st);
    }
    return buf_take(&b);
}

char *query_runs_json(sqlite3 *db, int64_t skip, size_t max)
{
    struct qsql_db d = { .lite = db };
    return runs_json(&d, skip, max);
}
