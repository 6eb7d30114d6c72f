/* reader_sqlite: record/reader.h on a SQLite file -- its SQL, its cursor
 * (one prepared statement stepped), and what says why a file cannot be
 * read. */
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/dblock.h"
#include "record/reader_engine.h"

#define KEY_TEXT \
    "CASE typeof(i.key_ref) WHEN 'integer' THEN (SELECT p.prefix FROM key_prefixes p" \
    " WHERE p.prefix_id = i.key_ref) ELSE i.key_ref END"
#define W_COLS "cmd, key, key_hash, key_len, value_len, flags, exptime, answer, seq"

const struct reader_sql reader_sqlite_sql[RQ__COUNT] = {
    [RQ_RUN_FIND] = { "SELECT run_id FROM runs WHERE ?1 IS NULL OR CAST(run_id AS TEXT) = ?1"
                      " OR name = ?1 ORDER BY run_id DESC LIMIT 1",
                      NULL },
    [RQ_SETS_FIND] = { "SELECT run_id FROM sets WHERE CAST(run_id AS TEXT) = ?1 LIMIT 1", NULL },
    [RQ_SETS_LATEST] = { "SELECT max(run_id) FROM sets", NULL },
    [RQ_RUN] = { "SELECT run_id, name, coalesce((SELECT value FROM run_meta m"
                 " WHERE m.run_id = r.run_id AND m.key = 'node'), ''), started_ns, ended_ns,"
                 " rows_recorded, rows_dropped, kind FROM runs r WHERE run_id = ?1",
                 /* before runs.kind (schema v6) */
                 "SELECT run_id, name, coalesce((SELECT value FROM run_meta m"
                 " WHERE m.run_id = r.run_id AND m.key = 'node'), ''), started_ns, ended_ns,"
                 " rows_recorded, rows_dropped, 'proxy' FROM runs r WHERE run_id = ?1" },
    [RQ_SELECT] = { "SELECT r.run_id, coalesce((SELECT value FROM run_meta m"
                    " WHERE m.run_id = r.run_id AND m.key = 'node'), '') AS node FROM runs r"
                    " WHERE (?1 IS NULL OR node LIKE ?1)"
                    " AND (?2 <= 0 OR r.ended_ns IS NULL OR r.ended_ns >= ?2)"
                    " ORDER BY r.started_ns, r.run_id",
                    NULL },
    [RQ_SETTINGS_FIRST] = { "SELECT j.key, j.value, s.version, s.t_ns FROM settings s,"
                            " json_each(s.settings) j WHERE s.run_id = ?1 AND s.t_ns ="
                            " (SELECT min(t_ns) FROM settings WHERE run_id = ?1)",
                            NULL },
    [RQ_SETTINGS_LAST] = { "SELECT j.key, j.value, s.version, s.t_ns FROM settings s,"
                           " json_each(s.settings) j WHERE s.run_id = ?1 AND s.t_ns ="
                           " (SELECT max(t_ns) FROM settings WHERE run_id = ?1)",
                           NULL },
    [RQ_META] = { "SELECT value FROM run_meta WHERE run_id = ?1 AND key = ?2", NULL },
    [RQ_META_LADDER] = { "SELECT CAST(j.key AS INTEGER) + 1, j.value FROM run_meta m,"
                         " json_each(CASE WHEN json_valid(m.value) THEN m.value ELSE '{}' END,"
                         " '$.chunk_sizes') j WHERE m.run_id = ?1 AND m.key = 'ladder'",
                         NULL },
    [RQ_CHUNK_SIZES] = { "SELECT DISTINCT c.class_id, json_extract(c.fields, '$.chunk_size')"
                         " FROM samples s JOIN sample_classes c USING (sample_id)"
                         " WHERE s.run_id = ?1 AND s.t_ns >= ?2"
                         " AND json_extract(c.fields, '$.chunk_size') IS NOT NULL",
                         NULL },
    [RQ_SAMPLE_FIRST] = { "SELECT sample_id FROM samples WHERE run_id = ?1"
                          " ORDER BY t_ns ASC, sample_id ASC LIMIT 1",
                          NULL },
    [RQ_SAMPLE_LAST] = { "SELECT sample_id FROM samples WHERE run_id = ?1"
                         " ORDER BY t_ns DESC, sample_id DESC LIMIT 1",
                         NULL },
    [RQ_COUNTERS] = { "SELECT coalesce(json_extract(stats, '$.evictions'), 0),"
                      " coalesce(json_extract(stats, '$.slabs_moved'), 0),"
                      " coalesce(json_extract(stats, '$.reclaimed'), 0),"
                      " coalesce(json_extract(stats, '$.crawler_reclaimed'), 0),"
                      " coalesce(json_extract(stats, '$.get_expired'), 0),"
                      " coalesce(json_extract(stats, '$.cmd_flush'), 0),"
                      " coalesce(json_extract(stats, '$.curr_items'), 0),"
                      " coalesce(json_extract(stats, '$.pid'), 0),"
                      " coalesce(json_extract(stats, '$.uptime'), 0),"
                      " coalesce(json_extract(stats, '$.limit_maxbytes'), 0),"
                      " coalesce(json_extract(s.stats, '$.total_malloced'),"
                      " (SELECT sum(json_extract(c.fields, '$.total_pages')) FROM sample_classes c"
                      " WHERE c.sample_id = s.sample_id) * 1048576, 0)"
                      " FROM samples s WHERE sample_id = ?1",
                      NULL },
    [RQ_CLASSES] = { "SELECT class_id, chunk_size, used_chunks, mem_requested, total_pages,"
                     " number, evicted FROM class_stats WHERE sample_id = ?1",
                     NULL },
    /* a file from before schema v3 has no ms_mode (every ms was a set),
     * a sets table of another tool may have no class_id */
    [RQ_WRITES_SEQ] = { "SELECT " W_COLS ", ms_mode, class_id FROM sets WHERE run_id = ?1"
                        " ORDER BY seq",
                        "SELECT " W_COLS ", ms_mode, NULL FROM sets WHERE run_id = ?1 ORDER BY seq",
                        "SELECT " W_COLS ", NULL, NULL FROM sets WHERE run_id = ?1 ORDER BY seq" },
    /* the scan order is seq order unless a row says not: sorting costs 9/10
     * of a pass (3.2 s of 0.36 s for 700k rows) */
    [RQ_WRITES_SCAN] = { "SELECT " W_COLS ", ms_mode, class_id FROM sets WHERE run_id = ?1",
                         "SELECT " W_COLS ", ms_mode, NULL FROM sets WHERE run_id = ?1",
                         "SELECT " W_COLS ", NULL, NULL FROM sets WHERE run_id = ?1" },
    [RQ_WRITES_COUNTERS] = { "SELECT " W_COLS ", NULL, NULL FROM sets WHERE run_id = ?1"
                             " AND cmd IN ('incr', 'decr', 'ma')"
                             " AND answer NOT LIKE 'CLIENT_ERROR cannot incr%'",
                             NULL },
    [RQ_WRITES_COUNT] = { "SELECT count(*) FROM sets WHERE run_id = ?1", NULL },
    /* the next request for the key (writes kind 0, reads kind 1) in the
     * merged order, over both; then the reads alone, in order */
    [RQ_READS] = { "SELECT cmd, key, key_hash, key_len, hit, value_len, flags, exptime, seq,"
                   " after_write, next_kind FROM (SELECT m.*, LEAD(kind) OVER (PARTITION BY"
                   " key_hash ORDER BY w, kind, rs) AS next_kind FROM (SELECT 1 AS kind,"
                   " after_write AS w, seq AS rs, cmd, key, key_hash, key_len, hit, value_len,"
                   " flags, exptime, seq, after_write FROM reads WHERE run_id = ?1 UNION ALL"
                   " SELECT 0, seq, 0, NULL, NULL, key_hash, NULL, NULL, NULL, NULL, NULL, NULL,"
                   " NULL FROM sets WHERE run_id = ?1) AS m) AS x WHERE kind = 1"
                   " ORDER BY after_write, seq",
                   NULL },
    [RQ_READS_COUNT] = { "SELECT count(*) FROM reads WHERE run_id = ?1", NULL },
    [RQ_ROWS_PRESENT] = { "SELECT count(*) FROM write_runs r JOIN writes w"
                          " ON w.rowid >= r.lo AND w.rowid < r.hi WHERE r.run_id = ?1",
                          NULL },
    [RQ_HAS_AGGS] = { "SELECT 1 FROM agg_item_runs WHERE run_id = ?1", NULL },
    [RQ_AGG_ITEMS] = { "SELECT class_id, body, outcome, sum(writes), sum(body_bytes) FROM"
                       " agg_items WHERE run_id = ?1 GROUP BY class_id, body, outcome"
                       " ORDER BY body, class_id",
                       NULL },
    [RQ_AGG_ANSWERS] = { "SELECT coalesce(sum(a.writes), 0), coalesce(sum(CASE WHEN c.cmd IN"
                         " ('delete', 'md') AND n.answer IN ('DELETED', 'HD') THEN a.writes END),"
                         " 0) FROM agg_answers a LEFT JOIN cmds c ON c.cmd_id = a.cmd_id"
                         " LEFT JOIN answers n ON n.answer_id = a.answer_id WHERE a.run_id = ?1",
                         NULL },
    /* issue 22: the key as the view sets shows it; a snapshot's items in
     * rowid order (the dump's order: the writer inserts them as they come,
     * and the index (run_id, snap) gives them in rowid order, no sort) */
    [RQ_SNAPSHOTS] = { "SELECT snap, t_ns, ended_ns, items, bytes, complete FROM snapshots"
                       " WHERE run_id = ?1 ORDER BY snap",
                       NULL },
    [RQ_ITEMS] = { "SELECT seq, " KEY_TEXT ", key_hash, key_len, class_id, size, ttl_left,"
                   " idle_s, fetched, flags FROM snapshot_items i WHERE run_id = ?1"
                   " AND snap = ?2 ORDER BY rowid",
                   NULL },
    [RQ_ITEMS_COUNT] = { "SELECT count(*) FROM snapshot_items WHERE run_id = ?1 AND snap = ?2",
                         NULL },
    [RQ_EVENTS] = { "SELECT seq, t_ns, event, " KEY_TEXT ", key_hash, key_len, class_id, size,"
                    " fetched, idle_s, ttl_left, cmd FROM item_events i WHERE run_id = ?1"
                    " ORDER BY seq",
                    NULL },
    [RQ_EVENTS_COUNT] = { "SELECT count(*) FROM item_events WHERE run_id = ?1", NULL },
};
#undef W_COLS
#undef KEY_TEXT

struct sqlite_reader {
    sqlite3 *db;
    bool own; /* opened here (closed by reader_close) */
};

/* SQLite's error on r as a reader says it: locked by whom, or its words. */
static void sqlite_why(struct reader *r, char *err, size_t errlen)
{
    struct sqlite_reader *s = r->impl;
    int code = sqlite3_errcode(s->db) & 0xff;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
        reader_locked_why(r->name, sqlite3_errmsg(s->db), err, errlen);
    else
        snprintf(err, errlen, "%s", sqlite3_errmsg(s->db));
}

static int sqlite_start(struct reader_cursor *c, const char *sql, const struct reader_param *p,
                        int np, char *err, size_t errlen)
{
    struct sqlite_reader *s = c->r->impl;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite_why(c->r, err, errlen);
        sqlite3_finalize(st);
        return -1;
    }
    for (int i = 0; i < np; i++) {
        if (p[i].is_text && p[i].t)
            sqlite3_bind_text(st, i + 1, p[i].t, -1, SQLITE_STATIC);
        else if (!p[i].is_text)
            sqlite3_bind_int64(st, i + 1, p[i].i);
    }
    c->impl = st;
    return 0;
}

static int sqlite_step(struct reader_cursor *c, char *err, size_t errlen)
{
    int rc = sqlite3_step(c->impl);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    sqlite_why(c->r, err, errlen);
    return -1;
}

static bool lite_column_null(const struct reader_cursor *c, int col)
{
    return sqlite3_column_type(c->impl, col) == SQLITE_NULL;
}

static int64_t lite_column_int(const struct reader_cursor *c, int col)
{
    return sqlite3_column_int64(c->impl, col);
}

static const char *lite_column_text(const struct reader_cursor *c, int col, size_t *len)
{
    const char *t = (const char *)sqlite3_column_text(c->impl, col);
    if (len)
        *len = t ? (size_t)sqlite3_column_bytes(c->impl, col) : 0;
    return t;
}

static void sqlite_finish(struct reader_cursor *c)
{
    sqlite3_finalize(c->impl);
    c->impl = NULL;
}

static void sqlite_close(struct reader *r)
{
    struct sqlite_reader *s = r->impl;
    if (s && s->own)
        sqlite3_close(s->db);
    free(s);
    r->impl = NULL;
}

static const struct reader_ops sqlite_ops = {
    .engine = READER_SQLITE,
    .sql = reader_sqlite_sql,
    .start = sqlite_start,
    .step = sqlite_step,
    .is_null = lite_column_null,
    .int64 = lite_column_int,
    .text = lite_column_text,
    .finish = sqlite_finish,
    .close = sqlite_close,
};

int reader_sqlite_open(struct reader *r, const char *path, struct sqlite3 *borrowed, char *err,
                       size_t errlen)
{
    struct sqlite_reader *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->ops = &sqlite_ops;
    r->impl = s;
    snprintf(r->name, sizeof r->name, "%s", path);
    if (borrowed) {
        s->db = borrowed;
        return 0;
    }
    s->own = true;
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s", s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sqlite_close(r);
        return -1;
    }
    /* a live run's writer never blocks a reader (WAL); anything else
     * holding the file gets a few seconds */
    sqlite3_busy_timeout(s->db, READER_BUSY_MS);
    if (reader_sqlite_check(s->db, path, err, errlen) != READER_DB_OK) {
        sqlite_close(r);
        return -1;
    }
    return 0;
}

/* --- why a file cannot be read ------------------------------------------------ */

static const char *const reader_db_labels[] = {
#define READER_DB_LABEL(name, label) label,
    READER_DB_STATES(READER_DB_LABEL)
#undef READER_DB_LABEL
};

const char *reader_db_state_label(enum reader_db_state st)
{
    return (unsigned)st < READER_DB__COUNT ? reader_db_labels[st] : "?";
}

/* The process holding SQLite's lock bytes of path (a program holding the
 * file exclusively, or in a write it has not committed), or 0 when none is
 * seen. */
static long reader_lock_holder(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    /* SQLite's PENDING, RESERVED and SHARED bytes start at 1 GiB */
    struct flock fl = {
        .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0x40000000, .l_len = 512 + 2
    };
    long pid = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? (long)fl.l_pid : 0;
    close(fd);
    return pid;
}

void reader_locked_why(const char *path, const char *msg, char *err, size_t errlen)
{
    char who[DBLOCK_TEXT_MAX], rec[DBLOCK_TEXT_MAX];
    long pid = reader_lock_holder(path);
    bool recorder = dblock_holder(path, rec, sizeof rec);
    char pidtext[32];
    snprintf(pidtext, sizeof pidtext, "pid %ld ", pid);
    if (recorder && (pid <= 0 || strstr(rec, pidtext)))
        snprintf(who, sizeof who, "%s", rec);
    else if (pid > 0)
        dblock_process(pid, who, sizeof who);
    else
        snprintf(who, sizeof who, "another process");
    snprintf(err, errlen, "database is locked by %s: %s", who, msg);
}

enum reader_db_state reader_sqlite_check(struct sqlite3 *db, const char *path, char *err,
                                         size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT (SELECT count(*) FROM sqlite_master WHERE name = 'runs'"
                                " AND type = 'table'), (SELECT count(*) FROM sqlite_master)",
                                -1, &st, NULL);
    int64_t runs = 0, objects = 0;
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        runs = sqlite3_column_int64(st, 0);
        objects = sqlite3_column_int64(st, 1);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_OK && runs) { /* a slabtap database whose pages read back */
        rc = sqlite3_prepare_v2(db, "SELECT max(run_id) FROM runs", -1, &st, NULL);
        if (rc == SQLITE_OK)
            rc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK : sqlite3_errcode(db);
        sqlite3_finalize(st);
        if (rc == SQLITE_OK)
            return READER_DB_OK;
    }
    int code = rc & 0xff;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
        reader_locked_why(path, sqlite3_errstr(rc), err, errlen);
        return READER_DB_LOCKED;
    }
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT) {
        char head[16] = { 0 };
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t got = fd >= 0 ? read(fd, head, sizeof head) : -1;
        if (fd >= 0)
            close(fd);
        bool sqlite = got == (ssize_t)sizeof head && !memcmp(head, "SQLite format 3", 16);
        snprintf(err, errlen, "%s (%s)",
                 sqlite || code == SQLITE_CORRUPT
                     ? "half-written or damaged SQLite file: cut short (a copy taken while it "
                       "was written?) or corrupt, not a slabtap database that can be read"
                 : got == 0 ? "an empty file, not a slabtap database"
                            : "not a SQLite database, so not a slabtap database",
                 sqlite3_errstr(rc));
        return sqlite || code == SQLITE_CORRUPT ? READER_DB_HALF_WRITTEN : READER_DB_NOT_SQLITE;
    }
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot read it: %s", sqlite3_errmsg(db));
        return READER_DB_HALF_WRITTEN;
    }
    /* a sets table written by another tool (reader_run_find reads those) */
    rc = sqlite3_prepare_v2(db, "SELECT 1 FROM sets LIMIT 0", -1, &st, NULL);
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        return READER_DB_OK;
    snprintf(err, errlen, "not a slabtap database (%s: no runs table)",
             objects ? "a SQLite database of something else" : "an empty SQLite database");
    return READER_DB_NOT_SLABTAP;
}
