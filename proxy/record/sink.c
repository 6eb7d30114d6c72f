/* sink: store or pgstore behind one set of calls (a tagged struct: two
 * kinds, no vtable needed). */
#include "record/sink.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "record/reader.h"
#include "record/row.h"

bool sink_is_remote(const char *db)
{
    return pgstore_is_uri(db);
}

void sink_init(struct sink *k, const char *db)
{
    memset(k, 0, sizeof *k);
    k->kind = sink_is_remote(db) ? SINK_PG : SINK_SQLITE;
    if (k->kind == SINK_PG)
        pgstore_redact(db, k->name, sizeof k->name);
    else
        snprintf(k->name, sizeof k->name, "%s", db ? db : "");
}

int sink_open(struct sink *k, const char *db, char *err, size_t errlen)
{
    if (k->open)
        return 0;
    int rc = k->kind == SINK_PG ? pgstore_open(&k->pg, db, err, errlen)
                                : store_open(&k->sq, db, err, errlen);
    if (rc == 0 && k->kind == SINK_PG)
        k->pg.agg_flush_ms = k->agg_flush_ms;
    k->open = rc == 0;
    return rc;
}

void sink_close(struct sink *k)
{
    if (!k->open)
        return;
    if (k->kind == SINK_PG)
        pgstore_close(&k->pg);
    else
        store_close(&k->sq);
    k->open = false;
}

const char *sink_name(const struct sink *k)
{
    return k->name;
}

/* A run_meta entry in a transaction of its own (SQLite's node). */
static int sink_meta_now(struct sink *k, int64_t run_id, const char *key, const char *value,
                         char *err, size_t errlen)
{
    struct rec_job j = { .kind = REC_JOB_META, .t_ns = clock_wall_ns() };
    j.version = (char *)key;
    j.text = (char *)value;
    int rc = store_begin(&k->sq, err, errlen);
    if (!rc)
        rc = store_put_job(&k->sq, run_id, &j, err, errlen);
    return store_commit(&k->sq, rc, err, errlen) ? -1 : 0;
}

int64_t sink_run_begin(struct sink *k, const struct sink_run *run, char *err, size_t errlen)
{
    const char *node = run->node ? run->node : "";
    if (k->kind == SINK_PG)
        return pgstore_run_begin(&k->pg, run->name, run->upstream, run->options, run->key_mode,
                                 node, run->kind, err, errlen);
    int64_t id =
        store_run_begin(&k->sq, run->name, run->upstream, run->options, run->key_mode, run->kind);
    if (id < 0) {
        snprintf(err, errlen, "%s: cannot create the run row", k->name);
        return -1;
    }
    if (*node && sink_meta_now(k, id, "node", node, err, errlen))
        return -1;
    return id;
}

int sink_run_end(struct sink *k, int64_t run_id, uint64_t recorded, uint64_t dropped, char *err,
                 size_t errlen)
{
    return k->kind == SINK_PG ? pgstore_run_end(&k->pg, run_id, recorded, dropped, err, errlen)
                              : store_run_end(&k->sq, run_id, recorded, dropped, err, errlen);
}

int sink_begin(struct sink *k, char *err, size_t errlen)
{
    return k->kind == SINK_PG ? pgstore_begin(&k->pg, err, errlen)
                              : store_begin(&k->sq, err, errlen);
}

int sink_put_row(struct sink *k, int64_t run_id, const struct rec_row *row, char *err,
                 size_t errlen)
{
    return k->kind == SINK_PG ? pgstore_put_row(&k->pg, run_id, row, err, errlen)
                              : store_put_row(&k->sq, run_id, row, err, errlen);
}

int sink_put_job(struct sink *k, int64_t run_id, const struct rec_job *job, char *err,
                 size_t errlen)
{
    return k->kind == SINK_PG ? pgstore_put_job(&k->pg, run_id, job, err, errlen)
                              : store_put_job(&k->sq, run_id, job, err, errlen);
}

int sink_commit(struct sink *k, int64_t run_id, int64_t batch_no, int failed, char *err,
                size_t errlen)
{
    if (k->kind == SINK_SQLITE)
        return store_commit(&k->sq, failed, err, errlen);
    if (!failed && batch_no > 0) {
        char num[32];
        snprintf(num, sizeof num, "%lld", (long long)batch_no);
        struct rec_job j = { .kind = REC_JOB_META };
        j.version = (char *)SINK_BATCH_KEY;
        j.text = num;
        failed = pgstore_put_job(&k->pg, run_id, &j, err, errlen);
    }
    return pgstore_commit(&k->pg, failed, err, errlen);
}

int64_t sink_aggregates_due_ns(const struct sink *k)
{
    if (!k->open)
        return 0;
    return k->kind == SINK_PG ? pgstore_aggregates_due_ns(&k->pg) : store_aggregates_due_ns(&k->sq);
}

int sink_write_aggregates(struct sink *k, char *err, size_t errlen)
{
    return k->kind == SINK_PG ? pgstore_write_aggregates(&k->pg, err, errlen)
                              : store_write_aggregates(&k->sq, err, errlen);
}

int64_t sink_committed_batch(struct sink *k, int64_t run_id)
{
    if (k->kind == SINK_SQLITE || !k->open)
        return -1;
    return pgstore_meta_int(&k->pg, run_id, SINK_BATCH_KEY);
}

int64_t sink_max_phase_id(struct sink *k, int64_t run_id)
{
    return k->kind == SINK_PG ? pgstore_max_phase_id(&k->pg, run_id) : store_max_phase_id(&k->sq);
}

sqlite3 *sink_sqlite(struct sink *k)
{
    return k->kind == SINK_SQLITE && k->open ? k->sq.db : NULL;
}

/* SQLite's half of sink_save_meta: a read-write connection of its own. */
static int sink_save_meta_sqlite(const char *path, int64_t run_id, const char *key,
                                 const char *value, char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        sqlite3_busy_timeout(db, READER_BUSY_MS);
        if (sqlite3_prepare_v2(db,
                               "INSERT OR REPLACE INTO run_meta (run_id, key, value)"
                               " VALUES (?1, ?2, ?3)",
                               -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_int64(st, 1, run_id);
            sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 3, value, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_DONE)
                rc = 0;
        }
    }
    int code = db ? sqlite3_errcode(db) & 0xff : SQLITE_NOMEM;
    if (rc && (code == SQLITE_BUSY || code == SQLITE_LOCKED)) {
        char why[1024];
        reader_locked_why(path, sqlite3_errmsg(db), why, sizeof why);
        snprintf(err, errlen, "%s: %s", path, why);
    } else if (rc) {
        snprintf(err, errlen, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

int sink_save_meta(const char *db, int64_t run_id, const char *key, const char *value, char *err,
                   size_t errlen)
{
    return sink_is_remote(db) ? pgstore_save_meta(db, run_id, key, value, err, errlen)
                              : sink_save_meta_sqlite(db, run_id, key, value, err, errlen);
}
