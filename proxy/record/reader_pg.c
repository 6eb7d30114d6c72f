/* reader_pg: record/reader.h on a fleet's PostgreSQL -- its SQL (the
 * columns of reader_sqlite.c's, in the same order) and its cursors: each
 * question a server-side cursor (DECLARE ... NO SCROLL CURSOR, FETCH
 * READER_FETCH_ROWS at a time) in a read-only transaction that lives while
 * any cursor is open, so a run's writes and its reads stream side by side
 * on one connection and neither is ever held whole. A question that fails
 * (a table this database does not have: the aggregates before they were
 * written here) is rolled back to its savepoint, leaving the others open. */
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/reader_engine.h"

/* READER_SQL_SAME: SQLite's query with $N for ?N (the write aggregates
 * too: schema.sql's agg_* tables, the same names in PostgreSQL). */
static const struct reader_sql pg_sql[RQ__COUNT] = {
    [RQ_RUN_FIND] = { "SELECT run_id FROM runs WHERE $1::text IS NULL OR run_id::text = $1"
                      " OR name = $1 ORDER BY run_id DESC LIMIT 1",
                      NULL },
    [RQ_RUN] = { "SELECT run_id, name, node, started_ns, ended_ns, rows_recorded, rows_dropped,"
                 " kind FROM runs WHERE run_id = $1",
                 /* before runs.kind (PostgreSQL schema v3) */
                 "SELECT run_id, name, node, started_ns, ended_ns, rows_recorded, rows_dropped,"
                 " 'proxy' FROM runs WHERE run_id = $1" },
    [RQ_SELECT] = { "SELECT run_id, node FROM runs WHERE ($1::text IS NULL OR node LIKE $1)"
                    " AND ($2::bigint <= 0 OR ended_ns IS NULL OR ended_ns >= $2)"
                    " ORDER BY started_ns, run_id",
                    NULL },
    [RQ_SETTINGS_FIRST] = { "SELECT j.key, j.value, s.version, s.t_ns FROM settings s,"
                            " jsonb_each_text(s.settings) j WHERE s.run_id = $1 AND s.t_ns ="
                            " (SELECT min(t_ns) FROM settings WHERE run_id = $1)",
                            NULL },
    [RQ_SETTINGS_LAST] = { "SELECT j.key, j.value, s.version, s.t_ns FROM settings s,"
                           " jsonb_each_text(s.settings) j WHERE s.run_id = $1 AND s.t_ns ="
                           " (SELECT max(t_ns) FROM settings WHERE run_id = $1)",
                           NULL },
    [RQ_META] = { READER_SQL_SAME },
    [RQ_META_LADDER] = { "SELECT j.n, j.v::numeric FROM run_meta m, jsonb_array_elements_text("
                         "CASE WHEN jsonb_typeof(slabtap_try_jsonb(m.value) -> 'chunk_sizes')"
                         " = 'array' THEN slabtap_try_jsonb(m.value) -> 'chunk_sizes'"
                         " ELSE '[]'::jsonb END) WITH ORDINALITY j(v, n)"
                         " WHERE m.run_id = $1 AND m.key = 'ladder'",
                         NULL },
    [RQ_CHUNK_SIZES] = { "SELECT DISTINCT c.class_id, (c.fields ->> 'chunk_size')::numeric"
                         " FROM samples s JOIN sample_classes c USING (sample_id)"
                         " WHERE s.run_id = $1 AND s.t_ns >= $2 AND c.fields ? 'chunk_size'",
                         NULL },
    [RQ_SAMPLE_FIRST] = { READER_SQL_SAME },
    [RQ_SAMPLE_LAST] = { READER_SQL_SAME },
    [RQ_COUNTERS] = { "SELECT coalesce((stats ->> 'evictions')::numeric, 0),"
                      " coalesce((stats ->> 'slabs_moved')::numeric, 0),"
                      " coalesce((stats ->> 'reclaimed')::numeric, 0),"
                      " coalesce((stats ->> 'crawler_reclaimed')::numeric, 0),"
                      " coalesce((stats ->> 'get_expired')::numeric, 0),"
                      " coalesce((stats ->> 'cmd_flush')::numeric, 0),"
                      " coalesce((stats ->> 'curr_items')::numeric, 0),"
                      " coalesce((stats ->> 'pid')::numeric, 0),"
                      " coalesce((stats ->> 'uptime')::numeric, 0),"
                      " coalesce((stats ->> 'limit_maxbytes')::numeric, 0),"
                      " coalesce((s.stats ->> 'total_malloced')::numeric,"
                      " (SELECT sum((c.fields ->> 'total_pages')::numeric) FROM sample_classes c"
                      " WHERE c.sample_id = s.sample_id) * 1048576, 0)"
                      " FROM samples s WHERE sample_id = $1",
                      NULL },
    [RQ_CLASSES] = { READER_SQL_SAME },
    [RQ_WRITES_SEQ] = { READER_SQL_SAME },
    /* no cheaper order to scan in: a partitioned table's rows come in
     * any order */
    [RQ_WRITES_SCAN] = { "SELECT cmd, key, key_hash, key_len, value_len, flags, exptime, answer,"
                         " seq, ms_mode, class_id FROM sets WHERE run_id = $1 ORDER BY seq",
                         NULL },
    [RQ_WRITES_COUNTERS] = { READER_SQL_SAME },
    [RQ_WRITES_COUNT] = { "SELECT count(*) FROM writes WHERE run_id = $1", NULL },
    [RQ_READS] = { READER_SQL_SAME },
    [RQ_READS_COUNT] = { READER_SQL_SAME },
    [RQ_ROWS_PRESENT] = { "SELECT count(*) FROM writes WHERE run_id = $1", NULL },
    [RQ_HAS_AGGS] = { READER_SQL_SAME },
    [RQ_AGG_ITEMS] = { READER_SQL_SAME },
    [RQ_AGG_ANSWERS] = { READER_SQL_SAME },
    /* issue 22: key_ref is the key's text here; the items in seq order
     * (the index (run_id, snap, seq) gives them without a sort) */
    [RQ_SNAPSHOTS] = { READER_SQL_SAME },
    [RQ_ITEMS] = { "SELECT seq, key_ref, key_hash, key_len, class_id, size, ttl_left, idle_s,"
                   " fetched, flags FROM snapshot_items WHERE run_id = $1 AND snap = $2"
                   " ORDER BY seq",
                   NULL },
    [RQ_ITEMS_COUNT] = { READER_SQL_SAME },
    [RQ_EVENTS] = { "SELECT seq, t_ns, event, key_ref, key_hash, key_len, class_id, size,"
                    " fetched, idle_s, ttl_left, cmd FROM item_events WHERE run_id = $1"
                    " ORDER BY seq",
                    NULL },
    [RQ_EVENTS_COUNT] = { READER_SQL_SAME },
};

struct pg_reader {
    PGconn *conn;
    int open;      /* cursors open: the transaction lives while > 0 */
    unsigned next; /* cursor names: c1, c2, ... */
};

struct pg_cursor {
    char name[24];
    PGresult *res; /* the batch fetched */
    int row, rows;
    bool last; /* the batch was the last (fewer rows than asked) */
};

/* The reason into err, the password scrubbed out of it. -1. */
static int pg_why(struct reader *r, const char *what, const char *reason, char *err, size_t errlen)
{
    struct pg_reader *p = r->impl;
    return pgstore_say(r->name, PQpass(p->conn), what, reason, err, errlen);
}

/* One command without rows: 0, or -1 with err (err may be NULL). */
static int pg_exec(struct reader *r, const char *sql, char *err, size_t errlen)
{
    struct pg_reader *p = r->impl;
    PGresult *res = PQexec(p->conn, sql);
    int rc = res && PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -1;
    if (rc && err)
        pg_why(r, sql, res ? PQresultErrorMessage(res) : PQerrorMessage(p->conn), err, errlen);
    PQclear(res);
    return rc;
}

/* The transaction ends with its last cursor (rolled back: nothing was
 * written; a failed one must be). */
static void pg_txn_release(struct reader *r)
{
    struct pg_reader *p = r->impl;
    if (p->open == 0 && PQtransactionStatus(p->conn) != PQTRANS_IDLE)
        pg_exec(r, "ROLLBACK", NULL, 0);
}

static int pg_start(struct reader_cursor *c, const char *sql, const struct reader_param *prm,
                    int np, char *err, size_t errlen)
{
    struct pg_reader *p = c->r->impl;
    struct pg_cursor *k = calloc(1, sizeof *k);
    char num[READER_PARAMS_MAX][24], *decl = NULL;
    const char *vals[READER_PARAMS_MAX];
    PGresult *res = NULL;
    if (!k || np > READER_PARAMS_MAX) {
        free(k);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < np; i++) {
        if (prm[i].is_text) {
            vals[i] = prm[i].t;
        } else {
            snprintf(num[i], sizeof num[i], "%" PRId64, prm[i].i);
            vals[i] = num[i];
        }
    }
    snprintf(k->name, sizeof k->name, "c%u", ++p->next);
    size_t len = strlen(sql) + 64;
    if (!(decl = malloc(len))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    snprintf(decl, len, "DECLARE %s NO SCROLL CURSOR FOR %s", k->name, sql);
    for (char *q = decl; (q = strchr(q, '?')); q++) /* SQLite's ?N: $N */
        if (q[1] >= '0' && q[1] <= '9')
            *q = '$';
    if (PQtransactionStatus(p->conn) == PQTRANS_IDLE &&
        pg_exec(c->r, "BEGIN READ ONLY", err, errlen))
        goto fail;
    if (pg_exec(c->r, "SAVEPOINT reader", err, errlen))
        goto fail;
    res = PQexecParams(p->conn, decl, np, NULL, vals, NULL, NULL, 0);
    if (!res || PQresultStatus(res) != PGRES_COMMAND_OK) {
        pg_why(c->r, "query", res ? PQresultErrorMessage(res) : PQerrorMessage(p->conn), err,
               errlen);
        pg_exec(c->r, "ROLLBACK TO SAVEPOINT reader", NULL, 0);
        goto fail;
    }
    pg_exec(c->r, "RELEASE SAVEPOINT reader", NULL, 0);
    PQclear(res);
    free(decl);
    p->open++;
    c->impl = k;
    return 0;
fail:
    PQclear(res);
    free(decl);
    free(k);
    pg_txn_release(c->r);
    return -1;
}

static int pg_step(struct reader_cursor *c, char *err, size_t errlen)
{
    struct pg_reader *p = c->r->impl;
    struct pg_cursor *k = c->impl;
    char sql[64];
    if (++k->row < k->rows)
        return 1;
    if (k->last)
        return 0;
    PQclear(k->res);
    snprintf(sql, sizeof sql, "FETCH %d FROM %s", READER_FETCH_ROWS, k->name);
    k->res = PQexec(p->conn, sql);
    k->row = 0;
    k->rows = 0;
    if (!k->res || PQresultStatus(k->res) != PGRES_TUPLES_OK) {
        k->last = true;
        return pg_why(c->r, "reading",
                      k->res ? PQresultErrorMessage(k->res) : PQerrorMessage(p->conn), err, errlen);
    }
    k->rows = PQntuples(k->res);
    k->last = k->rows < READER_FETCH_ROWS;
    return k->rows > 0 ? 1 : 0;
}

static bool pg_column_null(const struct reader_cursor *c, int col)
{
    const struct pg_cursor *k = c->impl;
    return PQgetisnull(k->res, k->row, col) != 0;
}

static int64_t pg_column_int(const struct reader_cursor *c, int col)
{
    const struct pg_cursor *k = c->impl;
    if (PQgetisnull(k->res, k->row, col))
        return 0;
    const char *v = PQgetvalue(k->res, k->row, col);
    /* numeric results (sum, json numbers) may carry a fraction: truncate */
    return strchr(v, '.') || strchr(v, 'e') ? (int64_t)strtod(v, NULL) : strtoll(v, NULL, 10);
}

static const char *pg_column_text(const struct reader_cursor *c, int col, size_t *len)
{
    const struct pg_cursor *k = c->impl;
    bool null = PQgetisnull(k->res, k->row, col) != 0;
    if (len)
        *len = null ? 0 : (size_t)PQgetlength(k->res, k->row, col);
    return null ? NULL : PQgetvalue(k->res, k->row, col);
}

static void pg_finish(struct reader_cursor *c)
{
    struct pg_reader *p = c->r->impl;
    struct pg_cursor *k = c->impl;
    char sql[48];
    if (!k)
        return;
    PQclear(k->res);
    if (PQtransactionStatus(p->conn) == PQTRANS_INTRANS) {
        snprintf(sql, sizeof sql, "CLOSE %s", k->name);
        pg_exec(c->r, sql, NULL, 0);
    }
    free(k);
    c->impl = NULL;
    p->open--;
    pg_txn_release(c->r);
}

static void pg_close(struct reader *r)
{
    struct pg_reader *p = r->impl;
    if (p)
        PQfinish(p->conn);
    free(p);
    r->impl = NULL;
}

static const struct reader_ops pg_ops = {
    .engine = READER_PG,
    .sql = pg_sql,
    .start = pg_start,
    .step = pg_step,
    .is_null = pg_column_null,
    .int64 = pg_column_int,
    .text = pg_column_text,
    .finish = pg_finish,
    .close = pg_close,
};

int reader_pg_open(struct reader *r, const char *uri, char *err, size_t errlen)
{
    struct pg_reader *p = calloc(1, sizeof *p);
    r->ops = &pg_ops;
    r->impl = p;
    pgstore_redact(uri, r->name, sizeof r->name);
    if (!p || !(p->conn = (PGconn *)pgstore_connect(
                    uri, "-c default_transaction_read_only=on -c TimeZone=UTC"))) {
        snprintf(err, errlen, "%s: out of memory", r->name);
        pg_close(r);
        return -1;
    }
    if (PQstatus(p->conn) != CONNECTION_OK) {
        pg_why(r, "cannot connect", PQerrorMessage(p->conn), err, errlen);
        pg_close(r);
        return -1;
    }
    return 0;
}
