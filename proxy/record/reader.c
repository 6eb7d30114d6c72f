/* reader: the questions of record/reader.h over an engine's SQL and cursor
 * (record/reader_engine.h). No SQL here: each engine's file has its own. */
#include "record/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "model/slab_model.h"
#include "record/reader_engine.h"

int reader_open(struct reader **out, const char *db, char *err, size_t errlen)
{
    struct reader *r = calloc(1, sizeof *r);
    *out = NULL;
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (pgstore_is_uri(db) ? reader_pg_open(r, db, err, errlen)
                           : reader_sqlite_open(r, db, NULL, err, errlen)) {
        free(r);
        return -1;
    }
    *out = r;
    return 0;
}

int reader_open_sqlite(struct reader **out, struct sqlite3 *db, const char *name, char *err,
                       size_t errlen)
{
    struct reader *r = calloc(1, sizeof *r);
    *out = NULL;
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (reader_sqlite_open(r, name ? name : "", db, err, errlen)) {
        free(r);
        return -1;
    }
    *out = r;
    return 0;
}

void reader_close(struct reader *r)
{
    if (!r)
        return;
    r->ops->close(r);
    free(r);
}

const char *reader_name(const struct reader *r)
{
    return r->name;
}

enum reader_engine reader_engine(const struct reader *r)
{
    return r->ops->engine;
}

const char *reader_engine_name(enum reader_engine e)
{
    return e == READER_PG ? "postgresql" : "sqlite";
}

const char reader_sql_same[] = "";

/* --- one query ------------------------------------------------------------- */

/* Starts question q on c: its SQL, else the older form. 0, or -1 with err
 * (a question the engine has no SQL for says so). */
static int rq_start(struct reader *r, struct reader_cursor *c, enum reader_q q,
                    const struct reader_param *p, int np, char *err, size_t errlen)
{
    const struct reader_sql *s = &r->ops->sql[q];
    if (s->sql == READER_SQL_SAME)
        s = &reader_sqlite_sql[q];
    memset(c, 0, sizeof *c);
    c->r = r;
    if (!s->sql) {
        snprintf(err, errlen, "not in a %s store", reader_engine_name(r->ops->engine));
        return -1;
    }
    const char *forms[READER_SQL_FORMS] = { s->sql, s->older, s->oldest };
    for (int i = 0; i < READER_SQL_FORMS && forms[i]; i++) {
        memset(c, 0, sizeof *c);
        c->r = r;
        if (!r->ops->start(c, forms[i], p, np, err, errlen))
            return 0;
    }
    c->r = NULL;
    return -1;
}

static int rq_step(struct reader_cursor *c, char *err, size_t errlen)
{
    return c->r->ops->step(c, err, errlen);
}

static bool rq_null(const struct reader_cursor *c, int col)
{
    return c->r->ops->is_null(c, col);
}

static int64_t rq_int(const struct reader_cursor *c, int col)
{
    return c->r->ops->int64(c, col);
}

static const char *rq_text(const struct reader_cursor *c, int col)
{
    return c->r->ops->text(c, col, NULL);
}

static void rq_finish(struct reader_cursor *c)
{
    if (c->r)
        c->r->ops->finish(c);
    c->r = NULL;
}

/* A question's first row's first column (def when none, NULL or error). */
static int64_t rq_scalar(struct reader *r, enum reader_q q, const struct reader_param *p, int np,
                         int64_t def)
{
    struct reader_cursor c;
    char err[256];
    int64_t v = def;
    if (rq_start(r, &c, q, p, np, err, sizeof err))
        return def;
    if (rq_step(&c, err, sizeof err) == 1 && !rq_null(&c, 0))
        v = rq_int(&c, 0);
    rq_finish(&c);
    return v;
}

/* --- runs ------------------------------------------------------------------ */

int64_t reader_run_find(struct reader *r, const char *name_or_id)
{
    struct reader_param p[] = { READER_TEXT(name_or_id) };
    int64_t id = rq_scalar(r, RQ_RUN_FIND, p, 1, -1);
    if (id >= 0)
        return id;
    /* a sets table written by another tool, with no runs row */
    if (!r->ops->sql[RQ_SETS_FIND].sql)
        return -1;
    return name_or_id ? rq_scalar(r, RQ_SETS_FIND, p, 1, -1)
                      : rq_scalar(r, RQ_SETS_LATEST, NULL, 0, -1);
}

int reader_run_get(struct reader *r, int64_t run_id, struct reader_run *out, char *err,
                   size_t errlen)
{
    struct reader_cursor c;
    struct reader_param p[] = { READER_INT(run_id) };
    int rc;
    memset(out, 0, sizeof *out);
    out->rows_recorded = -1;
    if (rq_start(r, &c, RQ_RUN, p, 1, err, errlen))
        return -1;
    rc = rq_step(&c, err, errlen);
    if (rc == 1) {
        const char *name = rq_text(&c, 1), *node = rq_text(&c, 2);
        out->run_id = rq_int(&c, 0);
        snprintf(out->name, sizeof out->name, "%s", name ? name : "");
        snprintf(out->node, sizeof out->node, "%s", node ? node : "");
        out->started_ns = rq_int(&c, 3);
        out->ended_ns = rq_null(&c, 4) ? 0 : rq_int(&c, 4);
        out->rows_recorded = rq_null(&c, 5) ? -1 : rq_int(&c, 5);
        out->rows_dropped = rq_int(&c, 6);
        const char *kind = rq_text(&c, 7);
        snprintf(out->kind, sizeof out->kind, "%s", kind && *kind ? kind : "proxy");
    } else if (rc == 0)
        snprintf(err, errlen, "no run %lld", (long long)run_id);
    rq_finish(&c);
    return rc == 1 ? 0 : -1;
}

int reader_runs_select(struct reader *r, const char *node_like, int64_t since_ns, int64_t **ids,
                       char ***nodes, size_t *n, char *err, size_t errlen)
{
    struct reader_cursor c;
    struct reader_param p[] = { READER_TEXT(node_like), READER_INT(since_ns) };
    size_t cap_i = 0, cap_n = 0;
    int rc;
    *ids = NULL;
    *nodes = NULL;
    *n = 0;
    if (rq_start(r, &c, RQ_SELECT, p, 2, err, errlen))
        return -1;
    while ((rc = rq_step(&c, err, errlen)) == 1) {
        const char *node = rq_text(&c, 1);
        if (!BUF_GROW(*ids, cap_i, *n + 1) || !BUF_GROW(*nodes, cap_n, *n + 1) ||
            !((*nodes)[*n] = strdup(node ? node : ""))) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        (*ids)[(*n)++] = rq_int(&c, 0);
    }
    rq_finish(&c);
    if (rc) {
        reader_runs_select_free(*ids, *nodes, *n);
        *ids = NULL;
        *nodes = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

void reader_runs_select_free(int64_t *ids, char **nodes, size_t n)
{
    for (size_t i = 0; nodes && i < n; i++)
        free(nodes[i]);
    free(nodes);
    free(ids);
}

int reader_settings(struct reader *r, int64_t run_id, enum reader_which which, reader_pair_fn fn,
                    void *ud, char *version, size_t vlen, int64_t *t_ns, char *err, size_t errlen)
{
    struct reader_cursor c;
    struct reader_param p[] = { READER_INT(run_id) };
    int rc, stop = 0;
    if (t_ns)
        *t_ns = 0;
    if (rq_start(r, &c, which == READER_FIRST ? RQ_SETTINGS_FIRST : RQ_SETTINGS_LAST, p, 1, err,
                 errlen))
        return -1;
    while (!stop && (rc = rq_step(&c, err, errlen)) == 1) {
        const char *k = rq_text(&c, 0), *ver = rq_text(&c, 2);
        if (ver && version)
            snprintf(version, vlen, "%s", ver);
        if (t_ns)
            *t_ns = rq_int(&c, 3);
        if (k) {
            const char *v = rq_text(&c, 1);
            stop = fn(ud, k, v ? v : "");
        }
    }
    rq_finish(&c);
    return stop ? stop : rc < 0 ? -1 : 0;
}

char *reader_meta(struct reader *r, int64_t run_id, const char *key)
{
    struct reader_cursor c;
    struct reader_param p[] = { READER_INT(run_id), READER_TEXT(key) };
    char err[256], *v = NULL;
    if (rq_start(r, &c, RQ_META, p, 2, err, sizeof err))
        return NULL;
    if (rq_step(&c, err, sizeof err) == 1 && rq_text(&c, 0))
        v = strdup(rq_text(&c, 0));
    rq_finish(&c);
    return v;
}

/* Each (class, chunk) row of question q to fn: the count, or -1. */
static int rq_chunks(struct reader *r, enum reader_q q, const struct reader_param *p, int np,
                     reader_chunk_fn fn, void *ud)
{
    struct reader_cursor c;
    char err[256];
    int rc, n = 0;
    if (rq_start(r, &c, q, p, np, err, sizeof err))
        return -1;
    while ((rc = rq_step(&c, err, sizeof err)) == 1) {
        int64_t id = rq_int(&c, 0), chunk = rq_int(&c, 1);
        n++;
        if (fn(ud, id >= 0 && id <= UINT32_MAX ? (uint32_t)id : 0, chunk))
            break;
    }
    rq_finish(&c);
    return rc < 0 ? -1 : n;
}

int reader_meta_ladder(struct reader *r, int64_t run_id, reader_chunk_fn fn, void *ud)
{
    struct reader_param p[] = { READER_INT(run_id) };
    return rq_chunks(r, RQ_META_LADDER, p, 1, fn, ud);
}

int reader_chunk_sizes(struct reader *r, int64_t run_id, int64_t since_ns, reader_chunk_fn fn,
                       void *ud)
{
    struct reader_param p[] = { READER_INT(run_id), READER_INT(since_ns) };
    return rq_chunks(r, RQ_CHUNK_SIZES, p, 2, fn, ud) < 0 ? -1 : 0;
}

/* --- samples ----------------------------------------------------------------- */

int64_t reader_sample_edge(struct reader *r, int64_t run_id, enum reader_which which)
{
    struct reader_param p[] = { READER_INT(run_id) };
    return rq_scalar(r, which == READER_FIRST ? RQ_SAMPLE_FIRST : RQ_SAMPLE_LAST, p, 1, -1);
}

int reader_sample_counters(struct reader *r, int64_t sample_id, struct reader_counters *out,
                           char *err, size_t errlen)
{
    struct reader_cursor c;
    struct reader_param p[] = { READER_INT(sample_id) };
    int64_t *f[] = { &out->evictions,         &out->slabs_moved,   &out->reclaimed,
                     &out->crawler_reclaimed, &out->get_expired,   &out->cmd_flush,
                     &out->curr_items,        &out->pid,           &out->uptime,
                     &out->limit_maxbytes,    &out->total_malloced };
    int rc;
    memset(out, 0, sizeof *out);
    if (rq_start(r, &c, RQ_COUNTERS, p, 1, err, errlen))
        return -1;
    rc = rq_step(&c, err, errlen);
    for (size_t i = 0; rc == 1 && i < sizeof f / sizeof f[0]; i++)
        *f[i] = rq_int(&c, (int)i);
    rq_finish(&c);
    return rc < 0 ? -1 : 0;
}

int reader_sample_classes(struct reader *r, int64_t sample_id, reader_class_fn fn, void *ud,
                          char *err, size_t errlen)
{
    struct reader_cursor c;
    struct reader_param p[] = { READER_INT(sample_id) };
    int rc;
    if (rq_start(r, &c, RQ_CLASSES, p, 1, err, errlen))
        return -1;
    while ((rc = rq_step(&c, err, errlen)) == 1) {
        int64_t id = rq_int(&c, 0);
        struct predict_observed o = {
            .chunk_size = rq_int(&c, 1),
            .used_chunks = rq_int(&c, 2),
            .mem_requested = rq_int(&c, 3),
            .total_pages = rq_int(&c, 4),
            .number = rq_int(&c, 5),
            .evicted = rq_int(&c, 6),
        };
        if (id >= 1 && id <= SLAB_MODEL_MAX_CLASSES && fn(ud, (uint32_t)id, &o))
            break;
    }
    rq_finish(&c);
    return rc < 0 ? -1 : 0;
}

/* --- writes and reads ---------------------------------------------------------- */

static int stream_open(struct reader *r, enum reader_q q, int64_t run_id,
                       struct reader_cursor **out, char *err, size_t errlen)
{
    struct reader_param p[] = { READER_INT(run_id) };
    struct reader_cursor *c = malloc(sizeof *c);
    *out = NULL;
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (rq_start(r, c, q, p, 1, err, errlen)) {
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

int reader_writes_open(struct reader *r, int64_t run_id, enum reader_writes_order order,
                       struct reader_cursor **out, char *err, size_t errlen)
{
    enum reader_q q = order == READER_SCAN       ? RQ_WRITES_SCAN
                      : order == READER_COUNTERS ? RQ_WRITES_COUNTERS
                                                 : RQ_WRITES_SEQ;
    return stream_open(r, q, run_id, out, err, errlen);
}

int reader_reads_open(struct reader *r, int64_t run_id, struct reader_cursor **out, char *err,
                      size_t errlen)
{
    if (reader_reads_count(r, run_id) < 0) { /* no reads in this store */
        *out = NULL;
        return 0;
    }
    return stream_open(r, RQ_READS, run_id, out, err, errlen);
}

/* The key columns (text, hash, length) at col, col + 1, col + 2. */
static void row_key(const struct reader_cursor *c, int col, const char **key, size_t *len,
                    uint64_t *hash, int64_t *key_len)
{
    *len = 0;
    *key = c->r->ops->text(c, col, len);
    if (!*key)
        *len = 0;
    *hash = (uint64_t)rq_int(c, col + 1);
    *key_len = rq_int(c, col + 2);
}

int reader_next_write(struct reader_cursor *c, struct reader_write *w, char *err, size_t errlen)
{
    int rc = rq_step(c, err, errlen);
    if (rc != 1)
        return rc;
    const char *mode = rq_text(c, 9);
    memset(w, 0, sizeof *w);
    w->cmd = rq_text(c, 0);
    row_key(c, 1, &w->key, &w->key_text_len, &w->key_hash, &w->key_len);
    w->value_len = rq_null(c, 4) ? -1 : rq_int(c, 4);
    w->flags = rq_int(c, 5);
    w->exptime = rq_int(c, 6);
    w->answer = rq_text(c, 7);
    w->seq = rq_int(c, 8);
    w->ms_mode = mode ? mode[0] : 0;
    w->class_id = (uint32_t)rq_int(c, 10);
    return 1;
}

int reader_next_read(struct reader_cursor *c, struct reader_read *rd, char *err, size_t errlen)
{
    int rc = rq_step(c, err, errlen);
    if (rc != 1)
        return rc;
    memset(rd, 0, sizeof *rd);
    rd->cmd = rq_text(c, 0);
    row_key(c, 1, &rd->key, &rd->key_text_len, &rd->key_hash, &rd->key_len);
    rd->hit = rq_int(c, 4) != 0;
    rd->value_len = rq_null(c, 5) ? -1 : rq_int(c, 5);
    rd->flags = rq_int(c, 6);
    rd->exptime = rq_int(c, 7);
    rd->seq = rq_int(c, 8);
    rd->after_write = rq_int(c, 9);
    rd->next_kind = rq_null(c, 10) ? -1 : (int)rq_int(c, 10);
    return 1;
}

void reader_cursor_close(struct reader_cursor *c)
{
    if (!c)
        return;
    rq_finish(c);
    free(c);
}

int64_t reader_writes_count(struct reader *r, int64_t run_id)
{
    struct reader_param p[] = { READER_INT(run_id) };
    return rq_scalar(r, RQ_WRITES_COUNT, p, 1, -1);
}

int64_t reader_reads_count(struct reader *r, int64_t run_id)
{
    struct reader_param p[] = { READER_INT(run_id) };
    return rq_scalar(r, RQ_READS_COUNT, p, 1, -1);
}

/* --- rows status and aggregates -------------------------------------------------- */

int reader_rows_status(struct reader *r, int64_t run_id, struct reader_rows_status *out)
{
    struct reader_param p[] = { READER_INT(run_id) };
    struct reader_run run;
    char err[256];
    memset(out, 0, sizeof *out);
    out->recorded = reader_run_get(r, run_id, &run, err, sizeof err) ? -1 : run.rows_recorded;
    out->present = rq_scalar(r, RQ_ROWS_PRESENT, p, 1, -1);
    out->have_aggs = rq_scalar(r, RQ_HAS_AGGS, p, 1, 0) == 1;
    out->complete = out->recorded < 0 || out->present < 0 || out->present >= out->recorded;
    return 0;
}

int reader_agg_items(struct reader *r, int64_t run_id, reader_agg_fn fn, void *ud, char *err,
                     size_t errlen)
{
    struct reader_cursor c;
    struct reader_param p[] = { READER_INT(run_id) };
    int rc, stop = 0;
    if (rq_start(r, &c, RQ_AGG_ITEMS, p, 1, err, errlen))
        return -1;
    while (!stop && (rc = rq_step(&c, err, errlen)) == 1)
        if ((stop = fn(ud, (uint32_t)rq_int(&c, 0), rq_int(&c, 1), rq_int(&c, 2), rq_int(&c, 3),
                       rq_int(&c, 4))))
            snprintf(err, errlen, "out of memory");
    rq_finish(&c);
    return stop || rc < 0 ? -1 : 0;
}

int reader_agg_answers(struct reader *r, int64_t run_id, uint64_t *writes, uint64_t *deletes,
                       char *err, size_t errlen)
{
    struct reader_cursor c;
    struct reader_param p[] = { READER_INT(run_id) };
    int rc;
    *writes = *deletes = 0;
    if (rq_start(r, &c, RQ_AGG_ANSWERS, p, 1, err, errlen))
        return -1;
    rc = rq_step(&c, err, errlen);
    if (rc == 1) {
        *writes = (uint64_t)rq_int(&c, 0);
        *deletes = (uint64_t)rq_int(&c, 1);
    }
    rq_finish(&c);
    return rc < 0 ? -1 : 0;
}

/* --- snapshots and item events (issue 22) ---------------------------------------- */

int reader_snapshots(struct reader *r, int64_t run_id, reader_snapshot_fn fn, void *ud, char *err,
                     size_t errlen)
{
    struct reader_cursor c;
    struct reader_param p[] = { READER_INT(run_id) };
    int rc, stop = 0;
    if (rq_start(r, &c, RQ_SNAPSHOTS, p, 1, err, errlen))
        return -1;
    while (!stop && (rc = rq_step(&c, err, errlen)) == 1) {
        struct reader_snapshot s = {
            .snap = rq_int(&c, 0),
            .t_ns = rq_int(&c, 1),
            .ended_ns = rq_null(&c, 2) ? 0 : rq_int(&c, 2),
            .items = rq_int(&c, 3),
            .bytes = rq_int(&c, 4),
            .complete = rq_int(&c, 5) != 0,
        };
        stop = fn(ud, &s);
    }
    rq_finish(&c);
    return stop ? stop : rc < 0 ? -1 : 0;
}

int reader_items_open(struct reader *r, int64_t run_id, int64_t snap, struct reader_cursor **out,
                      char *err, size_t errlen)
{
    struct reader_param p[] = { READER_INT(run_id), READER_INT(snap) };
    struct reader_cursor *c = malloc(sizeof *c);
    *out = NULL;
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (rq_start(r, c, RQ_ITEMS, p, 2, err, errlen)) {
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

int reader_next_item(struct reader_cursor *c, struct reader_item *it, char *err, size_t errlen)
{
    int rc = rq_step(c, err, errlen);
    if (rc != 1)
        return rc;
    memset(it, 0, sizeof *it);
    it->seq = rq_int(c, 0);
    row_key(c, 1, &it->key, &it->key_text_len, &it->key_hash, &it->key_len);
    it->class_id = (uint32_t)rq_int(c, 4);
    it->size = rq_int(c, 5);
    it->ttl_left = rq_null(c, 6) ? -1 : rq_int(c, 6);
    it->idle_s = rq_int(c, 7);
    it->fetched = rq_int(c, 8) != 0;
    it->flags = rq_null(c, 9) ? -1 : rq_int(c, 9);
    return 1;
}

int64_t reader_items_count(struct reader *r, int64_t run_id, int64_t snap)
{
    struct reader_param p[] = { READER_INT(run_id), READER_INT(snap) };
    return rq_scalar(r, RQ_ITEMS_COUNT, p, 2, -1);
}

int reader_events_open(struct reader *r, int64_t run_id, struct reader_cursor **out, char *err,
                       size_t errlen)
{
    return stream_open(r, RQ_EVENTS, run_id, out, err, errlen);
}

int reader_next_event(struct reader_cursor *c, struct reader_event *ev, char *err, size_t errlen)
{
    int rc = rq_step(c, err, errlen);
    if (rc != 1)
        return rc;
    memset(ev, 0, sizeof *ev);
    ev->seq = rq_int(c, 0);
    ev->t_ns = rq_int(c, 1);
    ev->event = (int)rq_int(c, 2);
    row_key(c, 3, &ev->key, &ev->key_text_len, &ev->key_hash, &ev->key_len);
    ev->class_id = (uint32_t)rq_int(c, 6);
    ev->size = rq_null(c, 7) ? -1 : rq_int(c, 7);
    ev->fetched = rq_null(c, 8) ? -1 : (int)rq_int(c, 8);
    ev->idle_s = rq_null(c, 9) ? -1 : rq_int(c, 9);
    ev->ttl_left = rq_null(c, 10) ? -2 : rq_int(c, 10);
    ev->cmd = rq_text(c, 11);
    return 1;
}

int64_t reader_events_count(struct reader *r, int64_t run_id)
{
    struct reader_param p[] = { READER_INT(run_id) };
    return rq_scalar(r, RQ_EVENTS_COUNT, p, 1, -1);
}
