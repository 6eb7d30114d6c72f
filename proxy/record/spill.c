/* spill: batches as blobs in a local SQLite file, oldest first. A row is
 * its fixed fields as this build lays them out (up to `answer`), then the
 * answer and the key text at their lengths; a job is its fields one by one.
 * Every read is bounds-checked: a damaged file is an error, never a crash. */
#include "record/spill.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "record/recorder.h"
#include "record/row.h"

#define ROW_FIXED offsetof(struct rec_row, answer)
#define NO_TEXT UINT32_MAX

/* --- writing ------------------------------------------------------------------ */

static void w_u32(struct buf *b, uint32_t v)
{
    buf_append(b, &v, sizeof v);
}

static void w_i64(struct buf *b, int64_t v)
{
    buf_append(b, &v, sizeof v);
}

static void w_text(struct buf *b, const char *s)
{
    if (!s) {
        w_u32(b, NO_TEXT);
        return;
    }
    size_t n = strlen(s);
    w_u32(b, (uint32_t)n);
    buf_append(b, s, n);
}

static void w_row(struct buf *b, const struct rec_row *r)
{
    buf_append(b, r, ROW_FIXED);
    uint8_t alen = (uint8_t)strnlen(r->answer, sizeof r->answer - 1);
    buf_append(b, &alen, 1);
    buf_append(b, r->answer, alen);
    if (r->key_text_len > 0)
        buf_append(b, r->key_text, (size_t)r->key_text_len);
}

static void w_job(struct buf *b, const struct rec_job *j)
{
    w_u32(b, (uint32_t)j->kind);
    w_i64(b, j->t_ns);
    w_i64(b, j->phase_id);
    w_u32(b, j->final);
    w_text(b, j->text);
    w_text(b, j->version);
    w_u32(b, (uint32_t)j->nclasses);
    for (size_t i = 0; i < j->nclasses; i++) {
        w_u32(b, j->class_ids[i]);
        w_text(b, j->class_json[i]);
    }
    /* format 2: a shadow's target and counts (issue 23) */
    w_text(b, j->target);
    for (int i = 0; i < REC_SHADOW_NCOUNTS; i++)
        w_i64(b, j->counts[i]);
}

/* --- reading ------------------------------------------------------------------ */

struct rbuf {
    const unsigned char *p;
    size_t len, at;
    bool bad;
};

static bool r_get(struct rbuf *b, void *d, size_t n)
{
    if (b->bad || b->len - b->at < n) {
        b->bad = true;
        return false;
    }
    memcpy(d, b->p + b->at, n);
    b->at += n;
    return true;
}

static uint32_t r_u32(struct rbuf *b)
{
    uint32_t v = 0;
    r_get(b, &v, sizeof v);
    return v;
}

static int64_t r_i64(struct rbuf *b)
{
    int64_t v = 0;
    r_get(b, &v, sizeof v);
    return v;
}

/* A text (NULL for none, or on a damaged file: b->bad says which). */
static char *r_text(struct rbuf *b)
{
    uint32_t n = r_u32(b);
    if (b->bad || n == NO_TEXT)
        return NULL;
    if (b->len - b->at < n) {
        b->bad = true;
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s) {
        b->bad = true;
        return NULL;
    }
    memcpy(s, b->p + b->at, n);
    s[n] = '\0';
    b->at += n;
    return s;
}

static bool r_row(struct rbuf *b, struct rec_row *r)
{
    uint8_t alen = 0;
    memset(r, 0, sizeof *r);
    if (!r_get(b, r, ROW_FIXED) || !r_get(b, &alen, 1) || alen >= sizeof r->answer ||
        !r_get(b, r->answer, alen))
        return false;
    if (r->key_text_len > MC_KEY_MAX) {
        b->bad = true;
        return false;
    }
    return r->key_text_len <= 0 || r_get(b, r->key_text, (size_t)r->key_text_len);
}

static struct rec_job *r_job(struct rbuf *b)
{
    struct rec_job *j = calloc(1, sizeof *j);
    if (!j) {
        b->bad = true;
        return NULL;
    }
    j->kind = (enum rec_job_kind)r_u32(b);
    j->t_ns = r_i64(b);
    j->phase_id = r_i64(b);
    j->final = r_u32(b) != 0;
    j->text = r_text(b);
    j->version = r_text(b);
    uint32_t n = r_u32(b);
    if (!b->bad && n > 0 && n <= 4096) {
        j->class_ids = calloc(n, sizeof *j->class_ids);
        j->class_json = calloc(n, sizeof *j->class_json);
        if (!j->class_ids || !j->class_json)
            b->bad = true;
        for (uint32_t i = 0; i < n && !b->bad; i++) {
            j->class_ids[i] = r_u32(b);
            j->class_json[i] = r_text(b);
            j->nclasses = i + 1;
        }
    } else if (n) {
        b->bad = true;
    }
    j->target = r_text(b);
    for (int i = 0; i < REC_SHADOW_NCOUNTS; i++)
        j->counts[i] = r_i64(b);
    if (b->bad) {
        rec_job_free(j);
        return NULL;
    }
    return j;
}

/* --- the file ------------------------------------------------------------------- */

static int sp_fail(struct spill *sp, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "spill %s: %s: %s", sp->path, what,
             sp->db ? sqlite3_errmsg(sp->db) : "out of memory");
    return -1;
}

static int sp_exec(struct spill *sp, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(sp->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "spill %s: %s", sp->path, msg ? msg : "sqlite error");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* The file's layout matches this build's rows, or it was written by another. */
static int sp_check_layout(struct spill *sp, char *err, size_t errlen)
{
    char sql[256];
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql,
             "INSERT OR IGNORE INTO spill_layout (one, format, row_fixed, row_size)"
             " VALUES (1, %d, %zu, %zu)",
             SPILL_FORMAT, (size_t)ROW_FIXED, sizeof(struct rec_row));
    if (sp_exec(sp, sql, err, errlen))
        return -1;
    if (sqlite3_prepare_v2(sp->db, "SELECT format, row_fixed, row_size FROM spill_layout", -1, &st,
                           NULL) != SQLITE_OK)
        return sp_fail(sp, "reading its layout", err, errlen);
    int rc = -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == SPILL_FORMAT &&
        (size_t)sqlite3_column_int64(st, 1) == ROW_FIXED &&
        (size_t)sqlite3_column_int64(st, 2) == sizeof(struct rec_row))
        rc = 0;
    else
        snprintf(err, errlen,
                 "spill %s: written by another slabtap build (row layout differs): ship it with "
                 "that build, or move it away",
                 sp->path);
    sqlite3_finalize(st);
    return rc;
}

static int sp_read_backlog(struct spill *sp, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(sp->db,
                           "SELECT count(*), coalesce(sum(rows), 0), coalesce(sum(writes), 0),"
                           " coalesce(sum(bytes), 0) FROM spill",
                           -1, &st, NULL) != SQLITE_OK)
        return sp_fail(sp, "reading its backlog", err, errlen);
    if (sqlite3_step(st) == SQLITE_ROW) {
        sp->batches = (uint64_t)sqlite3_column_int64(st, 0);
        sp->rows = (uint64_t)sqlite3_column_int64(st, 1);
        sp->writes = (uint64_t)sqlite3_column_int64(st, 2);
        sp->bytes = (uint64_t)sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    return 0;
}

/* One try at opening; *damaged: it failed because the file is not a
 * SQLite database or is corrupt (not: locked, unwritable, another build). */
static int sp_open_once(struct spill *sp, const char *path, uint64_t max_bytes, bool *damaged,
                        char *err, size_t errlen)
{
    *damaged = false;
    memset(sp, 0, sizeof *sp);
    snprintf(sp->path, sizeof sp->path, "%s", path);
    sp->max_bytes = max_bytes ? max_bytes : SPILL_DEFAULT_MAX_BYTES;
    if (sqlite3_open_v2(path, &sp->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        sp_fail(sp, "cannot open", err, errlen);
        spill_close(sp);
        return -1;
    }
    sqlite3_busy_timeout(sp->db, 2000);
    if (sp_exec(sp,
                "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL;"
                " PRAGMA synchronous = NORMAL;"
                " CREATE TABLE IF NOT EXISTS spill_layout (one INTEGER PRIMARY KEY CHECK (one = 1),"
                " format INTEGER NOT NULL, row_fixed INTEGER NOT NULL, row_size INTEGER NOT NULL);"
                " CREATE TABLE IF NOT EXISTS spill (batch_id INTEGER PRIMARY KEY AUTOINCREMENT,"
                " run_id INTEGER NOT NULL, batch_no INTEGER NOT NULL, rows INTEGER NOT NULL,"
                " writes INTEGER NOT NULL, bytes INTEGER NOT NULL, data BLOB NOT NULL);",
                err, errlen) ||
        sp_check_layout(sp, err, errlen) || sp_read_backlog(sp, err, errlen)) {
        int ec = sp->db ? sqlite3_errcode(sp->db) : SQLITE_OK;
        *damaged = ec == SQLITE_NOTADB || ec == SQLITE_CORRUPT;
        spill_close(sp);
        return -1;
    }
    if (sqlite3_prepare_v2(sp->db,
                           "INSERT INTO spill (run_id, batch_no, rows, writes, bytes, data)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                           -1, &sp->ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(sp->db,
                           "SELECT batch_id, run_id, batch_no, rows, writes, bytes, data"
                           " FROM spill ORDER BY batch_id LIMIT 1",
                           -1, &sp->first, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(sp->db, "DELETE FROM spill WHERE batch_id = ?1", -1, &sp->del, NULL) !=
            SQLITE_OK) {
        sp_fail(sp, "preparing statements", err, errlen);
        spill_close(sp);
        return -1;
    }
    return 0;
}

/* A damaged file (and its -wal, -shm) renamed to PATH.damaged-TIME, kept
 * for whoever wants to look: slabtap cannot read its rows, so they are
 * neither shipped nor dropped silently (sp->moved says where it went). */
int spill_open(struct spill *sp, const char *path, uint64_t max_bytes, char *err, size_t errlen)
{
    bool damaged;
    int rc = sp_open_once(sp, path, max_bytes, &damaged, err, errlen);
    if (rc == 0 || !damaged)
        return rc;
    char why[512], to[sizeof sp->moved], stamp[32];
    snprintf(why, sizeof why, "%s", err);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(to, sizeof to, "%s.damaged-%s", path, stamp);
    if (rename(path, to)) {
        snprintf(err, errlen, "%s; cannot move it aside to %s: %s", why, to, strerror(errno));
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        const char *sfx = i ? "-shm" : "-wal";
        char a[sizeof sp->moved + 8], b[sizeof sp->moved + 8];
        snprintf(a, sizeof a, "%s%s", path, sfx);
        snprintf(b, sizeof b, "%s%s", to, sfx);
        rename(a, b); /* absent: nothing to move */
    }
    if (sp_open_once(sp, path, max_bytes, &damaged, err, errlen))
        return -1;
    snprintf(sp->moved, sizeof sp->moved, "%s", to);
    snprintf(sp->moved_why, sizeof sp->moved_why, "%s", why);
    return 0;
}

void spill_close(struct spill *sp)
{
    sqlite3_finalize(sp->ins);
    sqlite3_finalize(sp->first);
    sqlite3_finalize(sp->del);
    sp->ins = sp->first = sp->del = NULL;
    if (sp->db)
        sqlite3_close(sp->db);
    sp->db = NULL;
}

enum spill_put_result spill_put(struct spill *sp, int64_t run_id, int64_t batch_no,
                                const struct rec_row *rows, size_t n, const struct rec_job *jobs,
                                char *err, size_t errlen)
{
    struct buf b;
    buf_init(&b, BUF_UNBOUNDED);
    buf_reserve(&b, 8 + n * (ROW_FIXED + 64)); /* one block for the usual batch */
    uint64_t writes = 0;
    uint32_t njobs = 0;
    for (const struct rec_job *j = jobs; j; j = j->next)
        njobs++;
    w_u32(&b, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        w_row(&b, &rows[i]);
        writes += rows[i].kind == REC_ROW_WRITE;
    }
    w_u32(&b, njobs);
    for (const struct rec_job *j = jobs; j; j = j->next)
        w_job(&b, j);
    if (b.failed) {
        buf_free(&b);
        snprintf(err, errlen, "spill %s: out of memory for a batch of %zu rows", sp->path, n);
        return SPILL_ERROR;
    }
    if (sp->bytes + b.len > sp->max_bytes) {
        buf_free(&b);
        return SPILL_FULL;
    }
    sqlite3_reset(sp->ins);
    sqlite3_bind_int64(sp->ins, 1, run_id);
    sqlite3_bind_int64(sp->ins, 2, batch_no);
    sqlite3_bind_int64(sp->ins, 3, (int64_t)n);
    sqlite3_bind_int64(sp->ins, 4, (int64_t)writes);
    sqlite3_bind_int64(sp->ins, 5, (int64_t)b.len);
    sqlite3_bind_blob64(sp->ins, 6, b.data, b.len, SQLITE_STATIC);
    int rc = sqlite3_step(sp->ins);
    sqlite3_reset(sp->ins);
    sqlite3_clear_bindings(sp->ins);
    size_t bytes = b.len;
    buf_free(&b);
    if (rc != SQLITE_DONE) {
        sp_fail(sp, "writing a batch", err, errlen);
        return SPILL_ERROR;
    }
    sp->batches++;
    sp->rows += n;
    sp->writes += writes;
    sp->bytes += bytes;
    return SPILL_OK;
}

int spill_first(struct spill *sp, struct spill_batch *out, struct rec_row *rows, size_t cap,
                char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    sqlite3_reset(sp->first);
    int rc = sqlite3_step(sp->first);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(sp->first);
        return 0;
    }
    if (rc != SQLITE_ROW) {
        sp_fail(sp, "reading a batch", err, errlen);
        sqlite3_reset(sp->first);
        return -1;
    }
    out->id = sqlite3_column_int64(sp->first, 0);
    out->run_id = sqlite3_column_int64(sp->first, 1);
    out->batch_no = sqlite3_column_int64(sp->first, 2);
    out->writes = (uint64_t)sqlite3_column_int64(sp->first, 4);
    out->bytes = (uint64_t)sqlite3_column_int64(sp->first, 5);
    struct rbuf b = { sqlite3_column_blob(sp->first, 6), (size_t)sqlite3_column_bytes(sp->first, 6),
                      0, false };
    uint32_t n = r_u32(&b);
    if (n > cap)
        b.bad = true;
    for (uint32_t i = 0; i < n && !b.bad; i++)
        r_row(&b, &rows[i]);
    uint32_t njobs = b.bad ? 0 : r_u32(&b);
    struct rec_job **tail = &out->jobs;
    for (uint32_t i = 0; i < njobs && !b.bad; i++) {
        struct rec_job *j = r_job(&b);
        if (j) {
            *tail = j;
            tail = &j->next;
        }
    }
    sqlite3_reset(sp->first);
    if (b.bad) {
        while (out->jobs) {
            struct rec_job *j = out->jobs;
            out->jobs = j->next;
            rec_job_free(j);
        }
        snprintf(err, errlen, "spill %s: batch %lld is damaged (or of another build)", sp->path,
                 (long long)out->id);
        out->n = n <= cap ? n : 0;
        return -2;
    }
    out->n = n;
    return 1;
}

int spill_drop(struct spill *sp, const struct spill_batch *b, char *err, size_t errlen)
{
    sqlite3_reset(sp->del);
    sqlite3_bind_int64(sp->del, 1, b->id);
    int rc = sqlite3_step(sp->del);
    sqlite3_reset(sp->del);
    if (rc != SQLITE_DONE)
        return sp_fail(sp, "removing a shipped batch", err, errlen);
    sp->batches--;
    sp->rows -= b->n;
    sp->writes -= b->writes;
    sp->bytes -= b->bytes;
    return 0;
}
