/* store: the SQLite database. schema/schema.sql, embedded at build time, is
 * the only definition of tables and views; this file applies it, upgrades
 * older files and writes batches with prepared statements.
 * Must never be used by two threads at once (the writer thread owns it),
 * nor print: every failure comes back as -1 with its reason in err. */
#include "record/store.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "protocol/mc_parse.h"
#include "record/row.h"

extern const char slabtap_schema_sql[];

static int exec(struct store *s, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", s->path, msg ? msg : "sqlite error");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int user_version(struct store *s)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Upgrade steps, one per schema version, for files written by older
 * slabtap builds. schema.sql itself only ever CREATEs IF NOT EXISTS, so a
 * step only has to change what already exists. */
static const char *const upgrade_steps[STORE_SCHEMA_VERSION] = {
    [0] = NULL, /* 0: a fresh file; schema.sql creates everything */
    /* 1 -> 2: writes are tagged with the slab class the model predicts */
    [1] = "ALTER TABLE sets ADD COLUMN class_id INTEGER;",
    /* 2 -> 3: ms keeps its mode (add, append, prepend, replace, set) */
    [2] = "ALTER TABLE sets ADD COLUMN ms_mode TEXT;",
};

static int store_upgrade(struct store *s, int from, char *err, size_t errlen)
{
    if (from > STORE_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: schema version %d is newer than this slabtap (%d)", s->path,
                 from, STORE_SCHEMA_VERSION);
        return -1;
    }
    if (from == 0)
        return 0;
    for (int v = from; v < STORE_SCHEMA_VERSION; v++)
        if (upgrade_steps[v] && exec(s, upgrade_steps[v], err, errlen))
            return -1;
    return 0;
}

int store_open(struct store *s, const char *path, char *err, size_t errlen)
{
    int rc = -1;
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    if (sqlite3_open(path, &s->db) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, s->db ? sqlite3_errmsg(s->db) : "cannot open");
        goto out;
    }
    sqlite3_busy_timeout(s->db, 5000);
    int from = user_version(s);
    if (from < 0) {
        snprintf(err, errlen, "%s: not a SQLite database (%s)", path, sqlite3_errmsg(s->db));
        goto out;
    }
    if (exec(s, "PRAGMA journal_mode = WAL", err, errlen) ||
        exec(s, "PRAGMA synchronous = NORMAL", err, errlen) ||
        exec(s, "BEGIN IMMEDIATE", err, errlen))
        goto out;
    /* upgrade and schema in one transaction: all of it or none */
    if (store_upgrade(s, from, err, errlen) || exec(s, slabtap_schema_sql, err, errlen)) {
        char ignored[1536];
        exec(s, "ROLLBACK", ignored, sizeof ignored);
        goto out;
    }
    if (exec(s, "COMMIT", err, errlen))
        goto out;
    if (sqlite3_prepare_v2(
            s->db,
            "INSERT INTO sets (run_id, seq, conn_id, t_ns, cmd, key, key_hash, key_len,"
            " value_len, flags, exptime, answer, latency_ns, class_id, ms_mode)"
            " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)",
            -1, &s->ins_set, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(
            s->db,
            "INSERT INTO samples (run_id, t_ns, phase_id, final, stats) VALUES (?1,?2,?3,?4,?5)",
            -1, &s->ins_sample, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(
            s->db, "INSERT INTO sample_classes (sample_id, class_id, fields) VALUES (?1,?2,?3)", -1,
            &s->ins_class, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "INSERT OR REPLACE INTO settings (run_id, t_ns, version, settings) "
                           "VALUES (?1,?2,?3,?4)",
                           -1, &s->ins_settings, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(
            s->db, "INSERT INTO phases (phase_id, run_id, name, started_ns) VALUES (?1,?2,?3,?4)",
            -1, &s->ins_phase, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db,
                           "UPDATE phases SET ended_ns = ?2 WHERE run_id = ?1 AND ended_ns IS NULL "
                           "AND phase_id != ?3",
                           -1, &s->end_phase, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(
            s->db,
            "INSERT INTO get_counts (run_id, second, cmd, requests, keys, hits, misses, "
            "bytes_returned)"
            " VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT (run_id, second, cmd) DO UPDATE SET"
            " requests = requests + excluded.requests, keys = keys + excluded.keys,"
            " hits = hits + excluded.hits, misses = misses + excluded.misses,"
            " bytes_returned = bytes_returned + excluded.bytes_returned",
            -1, &s->ins_gets, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(s->db));
        goto out;
    }
    rc = 0;
out:
    if (rc)
        store_close(s);
    return rc;
}

void store_close(struct store *s)
{
    sqlite3_stmt **stmts[] = { &s->ins_set,      &s->ins_gets,  &s->ins_sample, &s->ins_class,
                               &s->ins_settings, &s->ins_phase, &s->end_phase };
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
        sqlite3_finalize(*stmts[i]);
        *stmts[i] = NULL;
    }
    if (s->db)
        sqlite3_close(s->db);
    s->db = NULL;
}

int64_t store_run_begin(struct store *s, const char *name, const char *upstream,
                        const char *options, const char *key_mode)
{
    sqlite3_stmt *st;
    int64_t id = -1;
    if (sqlite3_prepare_v2(
            s->db,
            "INSERT INTO runs (name, started_ns, upstream, slabtap_version, options, key_mode)"
            " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, clock_wall_ns());
    sqlite3_bind_text(st, 3, upstream, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, SLABTAP_VERSION, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, options, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 6, key_mode, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_DONE)
        id = sqlite3_last_insert_rowid(s->db);
    sqlite3_finalize(st);
    return id;
}

/* SQLite's reason for the last failure on s, with the file it concerns. */
static int store_fail(struct store *s, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
    return -1;
}

int store_run_end(struct store *s, int64_t run_id, uint64_t recorded, uint64_t dropped, char *err,
                  size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    sqlite3_reset(s->end_phase);
    sqlite3_bind_int64(s->end_phase, 1, run_id);
    sqlite3_bind_int64(s->end_phase, 2, clock_wall_ns());
    sqlite3_bind_int64(s->end_phase, 3, -1);
    /* a phase left open must not keep the counts from the run row */
    if (sqlite3_step(s->end_phase) != SQLITE_DONE)
        rc = store_fail(s, "ending the last phase", err, errlen);
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE runs SET ended_ns = ?2, rows_recorded = ?3, rows_dropped = ?4 "
                           "WHERE run_id = ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_fail(s, "ending the run", err, errlen);
        goto out;
    }
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, clock_wall_ns());
    sqlite3_bind_int64(st, 3, (int64_t)recorded);
    sqlite3_bind_int64(st, 4, (int64_t)dropped);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = store_fail(s, "ending the run", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

static int bind_write(sqlite3_stmt *st, int64_t run_id, const struct rec_row *r)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, (int64_t)r->seq);
    sqlite3_bind_int64(st, 3, r->conn_id);
    sqlite3_bind_int64(st, 4, r->t_ns);
    sqlite3_bind_text(st, 5, mc_cmd_name((enum mc_cmd)r->cmd), -1, SQLITE_STATIC);
    if (r->key_text_len >= 0)
        sqlite3_bind_text(st, 6, r->key_text, r->key_text_len, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 6);
    sqlite3_bind_int64(st, 7, (int64_t)r->key_hash);
    sqlite3_bind_int64(st, 8, r->key_len);
    if (r->value_len >= 0)
        sqlite3_bind_int64(st, 9, r->value_len);
    else
        sqlite3_bind_null(st, 9);
    if (r->has_flags)
        sqlite3_bind_int64(st, 10, r->flags);
    else
        sqlite3_bind_null(st, 10);
    if (r->has_exptime)
        sqlite3_bind_int64(st, 11, r->exptime);
    else
        sqlite3_bind_null(st, 11);
    sqlite3_bind_text(st, 12, r->answer, -1, SQLITE_STATIC);
    if (r->latency_ns >= 0)
        sqlite3_bind_int64(st, 13, r->latency_ns);
    else
        sqlite3_bind_null(st, 13);
    if (r->class_id > 0)
        sqlite3_bind_int64(st, 14, r->class_id);
    else
        sqlite3_bind_null(st, 14);
    if (r->ms_mode)
        sqlite3_bind_text(st, 15, &r->ms_mode, 1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 15);
    return sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
}

static int bind_gets(sqlite3_stmt *st, int64_t run_id, const struct rec_row *r)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, r->second);
    sqlite3_bind_text(st, 3, mc_cmd_name((enum mc_cmd)r->cmd), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (int64_t)r->requests);
    sqlite3_bind_int64(st, 5, (int64_t)r->keys);
    sqlite3_bind_int64(st, 6, (int64_t)r->hits);
    sqlite3_bind_int64(st, 7, (int64_t)r->misses);
    sqlite3_bind_int64(st, 8, (int64_t)r->bytes_returned);
    return sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
}

int store_begin(struct store *s, char *err, size_t errlen)
{
    return exec(s, "BEGIN", err, errlen);
}

int store_commit(struct store *s, int failed, char *err, size_t errlen)
{
    if (exec(s, failed ? "ROLLBACK" : "COMMIT", err, errlen))
        return -1;
    return failed ? -1 : 0;
}

int store_put_row(struct store *s, int64_t run_id, const struct rec_row *row, char *err,
                  size_t errlen)
{
    bool gets = row->kind == REC_ROW_GETS;
    if (gets ? bind_gets(s->ins_gets, run_id, row) : bind_write(s->ins_set, run_id, row))
        return store_fail(s, gets ? "inserting read counts" : "inserting a write", err, errlen);
    return 0;
}

static int step_done(struct store *s, sqlite3_stmt *st, const char *what, char *err, size_t errlen)
{
    if (sqlite3_step(st) == SQLITE_DONE)
        return 0;
    return store_fail(s, what, err, errlen);
}

static int put_sample(struct store *s, int64_t run_id, const struct rec_job *j, char *err,
                      size_t errlen)
{
    sqlite3_stmt *st = s->ins_sample;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, j->t_ns);
    if (j->phase_id > 0)
        sqlite3_bind_int64(st, 3, j->phase_id);
    else
        sqlite3_bind_null(st, 3);
    sqlite3_bind_int(st, 4, j->final);
    sqlite3_bind_text(st, 5, j->text, -1, SQLITE_STATIC);
    if (step_done(s, st, "inserting a stats sample", err, errlen))
        return -1;
    int64_t sample_id = sqlite3_last_insert_rowid(s->db);
    for (size_t i = 0; i < j->nclasses; i++) {
        st = s->ins_class;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, sample_id);
        sqlite3_bind_int64(st, 2, j->class_ids[i]);
        sqlite3_bind_text(st, 3, j->class_json[i], -1, SQLITE_STATIC);
        if (step_done(s, st, "inserting a sample's class", err, errlen))
            return -1;
    }
    return 0;
}

int store_put_job(struct store *s, int64_t run_id, const struct rec_job *j, char *err,
                  size_t errlen)
{
    sqlite3_stmt *st;
    switch (j->kind) {
    case REC_JOB_SAMPLE: return put_sample(s, run_id, j, err, errlen);
    case REC_JOB_SETTINGS:
        st = s->ins_settings;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, j->t_ns);
        sqlite3_bind_text(st, 3, j->version, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, j->text, -1, SQLITE_STATIC);
        return step_done(s, st, "inserting settings", err, errlen);
    case REC_JOB_PHASE:
        st = s->end_phase;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, j->t_ns);
        sqlite3_bind_int64(st, 3, j->phase_id);
        if (step_done(s, st, "ending a phase", err, errlen))
            return -1;
        st = s->ins_phase;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, j->phase_id);
        sqlite3_bind_int64(st, 2, run_id);
        sqlite3_bind_text(st, 3, j->text, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, j->t_ns);
        return step_done(s, st, "inserting a phase", err, errlen);
    }
    snprintf(err, errlen, "%s: unknown job kind %d", s->path, (int)j->kind);
    return -1;
}

int64_t store_max_phase_id(struct store *s)
{
    sqlite3_stmt *st;
    int64_t id = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT coalesce(max(phase_id), 0) FROM phases", -1, &st, NULL) !=
        SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}
