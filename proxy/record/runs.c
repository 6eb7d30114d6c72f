/* runs: SQL over recorded runs, read-only, on SQLite or PostgreSQL. */
#include "record/runs.h"

#include <fcntl.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/sample.h"
#include "model/slab_model.h"
#include "record/dblock.h"
#include "record/pgstore.h"
#include "record/wagg.h"

struct runs_src {
    sqlite3 *db; /* SQLite, or NULL */
    bool own_db; /* opened here (closed by runs_src_close) */
    PGconn *pg;  /* PostgreSQL, or NULL */
    char name[PGSTORE_URI_MAX];
};

/* --- one query on either store ------------------------------------------
 * Each query is written twice, SQLite's and PostgreSQL's, with the same
 * columns in the same order; parameters are ?1.. / $1.. (int64 or text).
 * PostgreSQL rows come one at a time (single-row mode): a run's millions of
 * writes are never held at once. */
struct runs_param {
    bool is_text;
    int64_t i;
    const char *t;
};
#define RP_INT(v) ((struct runs_param){ false, (v), NULL })
#define RP_TEXT(v) ((struct runs_param){ true, 0, (v) })

struct runs_q {
    struct runs_src *s;
    sqlite3_stmt *st;
    PGresult *res; /* the current row's result */
    bool done, send_failed;
};

static int runs_q_start(struct runs_q *q, struct runs_src *s, const char *sql_lite,
                        const char *sql_pg, const struct runs_param *p, int np)
{
    memset(q, 0, sizeof *q);
    q->s = s;
    if (s->db) {
        if (sqlite3_prepare_v2(s->db, sql_lite, -1, &q->st, NULL) != SQLITE_OK)
            return -1;
        for (int i = 0; i < np; i++) {
            if (p[i].is_text && p[i].t)
                sqlite3_bind_text(q->st, i + 1, p[i].t, -1, SQLITE_STATIC);
            else if (!p[i].is_text)
                sqlite3_bind_int64(q->st, i + 1, p[i].i);
        }
        return 0;
    }
    char num[8][24];
    const char *vals[8];
    if (np > 8)
        return -1;
    for (int i = 0; i < np; i++) {
        if (p[i].is_text) {
            vals[i] = p[i].t;
        } else {
            snprintf(num[i], sizeof num[i], "%" PRId64, p[i].i);
            vals[i] = num[i];
        }
    }
    if (!PQsendQueryParams(s->pg, sql_pg, np, NULL, vals, NULL, NULL, 0) ||
        !PQsetSingleRowMode(s->pg)) {
        q->done = q->send_failed = true;
        while ((q->res = PQgetResult(s->pg)))
            PQclear(q->res);
        return -1;
    }
    return 0;
}

/* The next row: true, or false at the end (or on an error: runs_q_end
 * says which). */
static bool runs_q_next(struct runs_q *q)
{
    if (q->st)
        return sqlite3_step(q->st) == SQLITE_ROW;
    if (q->done || !q->s->pg)
        return false;
    PQclear(q->res);
    q->res = PQgetResult(q->s->pg);
    if (q->res && PQresultStatus(q->res) == PGRES_SINGLE_TUPLE)
        return true;
    q->done = true;
    return false;
}

static bool runs_q_null(const struct runs_q *q, int col)
{
    return q->st ? sqlite3_column_type(q->st, col) == SQLITE_NULL
                 : PQgetisnull(q->res, 0, col) != 0;
}

static int64_t runs_q_int(const struct runs_q *q, int col)
{
    if (q->st)
        return sqlite3_column_int64(q->st, col);
    if (PQgetisnull(q->res, 0, col))
        return 0;
    const char *v = PQgetvalue(q->res, 0, col);
    /* numeric results (sum, json numbers) may carry a fraction: truncate */
    return strchr(v, '.') || strchr(v, 'e') ? (int64_t)strtod(v, NULL) : strtoll(v, NULL, 10);
}

static const char *runs_q_text(const struct runs_q *q, int col)
{
    if (q->st)
        return (const char *)sqlite3_column_text(q->st, col);
    return PQgetisnull(q->res, 0, col) ? NULL : PQgetvalue(q->res, 0, col);
}

/* Ends the query: 0, or -1 when it failed (reason in err when err). */
static int runs_q_end(struct runs_q *q, char *err, size_t errlen)
{
    int rc = 0;
    if (q->st) {
        rc = sqlite3_finalize(q->st) == SQLITE_OK ? 0 : -1;
        if (rc && err)
            snprintf(err, errlen, "%s", sqlite3_errmsg(q->s->db));
        q->st = NULL;
        return rc;
    }
    if (!q->s->pg)
        return -1;
    if (q->send_failed) {
        rc = -1;
        if (err)
            snprintf(err, errlen, "%s", PQerrorMessage(q->s->pg));
    }
    if (q->res && PQresultStatus(q->res) != PGRES_SINGLE_TUPLE &&
        PQresultStatus(q->res) != PGRES_TUPLES_OK) {
        rc = -1;
        if (err)
            snprintf(err, errlen, "%s", PQresultErrorMessage(q->res));
    }
    PQclear(q->res);
    while ((q->res = PQgetResult(q->s->pg))) { /* the rest of an early stop */
        if (PQresultStatus(q->res) == PGRES_FATAL_ERROR && !rc) {
            rc = -1;
            if (err)
                snprintf(err, errlen, "%s", PQresultErrorMessage(q->res));
        }
        PQclear(q->res);
    }
    if (err && rc) { /* libpq's messages end in a newline */
        size_t n = strlen(err);
        while (n && (err[n - 1] == '\n' || err[n - 1] == ' '))
            err[--n] = 0;
    }
    return rc;
}

/* A query's first row's first column as an integer (def when none). */
static int64_t runs_q_scalar(struct runs_src *s, const char *lite, const char *pg,
                             const struct runs_param *p, int np, int64_t def)
{
    struct runs_q q;
    int64_t v = def;
    if (runs_q_start(&q, s, lite, pg, p, np))
        return def;
    if (runs_q_next(&q) && !runs_q_null(&q, 0))
        v = runs_q_int(&q, 0);
    runs_q_end(&q, NULL, 0);
    return v;
}

/* --- opening ------------------------------------------------------------- */

int runs_src_open(struct runs_src **out, const char *db, char *err, size_t errlen)
{
    struct runs_src *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (pgstore_is_uri(db)) {
        pgstore_redact(db, s->name, sizeof s->name);
        s->pg = PQconnectdb(db);
        if (!s->pg || PQstatus(s->pg) != CONNECTION_OK) {
            snprintf(err, errlen, "%s", s->pg ? PQerrorMessage(s->pg) : "out of memory");
            size_t n = strlen(err);
            while (n && err[n - 1] == '\n')
                err[--n] = 0;
            PQfinish(s->pg);
            free(s);
            return -1;
        }
        /* read-only, whatever the role may do; UTC for any time text */
        PGresult *r = PQexec(s->pg, "SET default_transaction_read_only = on; SET TIME ZONE 'UTC'");
        PQclear(r);
    } else {
        snprintf(s->name, sizeof s->name, "%s", db);
        s->own_db = true;
        if (sqlite3_open_v2(db, &s->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
            snprintf(err, errlen, "%s", sqlite3_errmsg(s->db));
            sqlite3_close(s->db);
            free(s);
            return -1;
        }
        /* a live run's writer never blocks a reader (WAL); anything else
         * holding the file gets a few seconds */
        sqlite3_busy_timeout(s->db, RUNS_BUSY_MS);
        if (runs_sqlite_check(s->db, db, err, errlen) != RUNS_DB_OK) {
            sqlite3_close(s->db);
            free(s);
            return -1;
        }
    }
    *out = s;
    return 0;
}

static const char *const runs_db_labels[] = {
#define RUNS_DB_LABEL(name, label) label,
    RUNS_DB_STATES(RUNS_DB_LABEL)
#undef RUNS_DB_LABEL
};

const char *runs_db_state_label(enum runs_db_state st)
{
    return (unsigned)st < RUNS_DB__COUNT ? runs_db_labels[st] : "?";
}

/* The process holding SQLite's lock bytes of path (a program holding the
 * file exclusively, or in a write it has not committed), or 0 when none is
 * seen. */
static long runs_lock_holder(const char *path)
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

void runs_locked_why(const char *path, const char *msg, char *err, size_t errlen)
{
    char who[DBLOCK_TEXT_MAX], rec[DBLOCK_TEXT_MAX];
    long pid = runs_lock_holder(path);
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

enum runs_db_state runs_sqlite_check(sqlite3 *db, const char *path, char *err, size_t errlen)
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
            return RUNS_DB_OK;
    }
    int code = rc & 0xff;
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
        runs_locked_why(path, sqlite3_errstr(rc), err, errlen);
        return RUNS_DB_LOCKED;
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
        return sqlite || code == SQLITE_CORRUPT ? RUNS_DB_HALF_WRITTEN : RUNS_DB_NOT_SQLITE;
    }
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot read it: %s", sqlite3_errmsg(db));
        return RUNS_DB_HALF_WRITTEN;
    }
    /* a sets table written by another tool (runs_latest reads those) */
    rc = sqlite3_prepare_v2(db, "SELECT 1 FROM sets LIMIT 0", -1, &st, NULL);
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        return RUNS_DB_OK;
    snprintf(err, errlen, "not a slabtap database (%s: no runs table)",
             objects ? "a SQLite database of something else" : "an empty SQLite database");
    return RUNS_DB_NOT_SLABTAP;
}

void runs_src_close(struct runs_src *s)
{
    if (!s)
        return;
    if (s->own_db)
        sqlite3_close(s->db);
    if (s->pg)
        PQfinish(s->pg);
    free(s);
}

bool runs_src_is_pg(const struct runs_src *s)
{
    return s->pg != NULL;
}

const char *runs_src_name(const struct runs_src *s)
{
    return s->name;
}

sqlite3 *runs_src_sqlite(struct runs_src *s)
{
    return s->db;
}

/* A SQLite handle as a source (not owned). */
static void runs_src_wrap(struct runs_src *s, sqlite3 *db)
{
    memset(s, 0, sizeof *s);
    s->db = db;
}

int64_t runs_latest(sqlite3 *db)
{
    struct runs_src s;
    runs_src_wrap(&s, db);
    int64_t id = runs_src_find(&s, NULL);
    /* a sets table written by another tool, with no runs beside it */
    return id >= 0 ? id : runs_q_scalar(&s, "SELECT max(run_id) FROM sets", NULL, NULL, 0, -1);
}

int64_t runs_find(sqlite3 *db, const char *name_or_id)
{
    struct runs_src s;
    runs_src_wrap(&s, db);
    return runs_src_find(&s, name_or_id);
}

int64_t runs_src_find(struct runs_src *s, const char *name_or_id)
{
    struct runs_param p[] = { RP_TEXT(name_or_id) };
    int64_t id = runs_q_scalar(
        s,
        "SELECT run_id FROM runs WHERE ?1 IS NULL OR CAST(run_id AS TEXT) = ?1 OR name = ?1"
        " ORDER BY run_id DESC LIMIT 1",
        "SELECT run_id FROM runs WHERE $1::text IS NULL OR run_id::text = $1 OR name = $1"
        " ORDER BY run_id DESC LIMIT 1",
        p, 1, -1);
    if (id >= 0 || !name_or_id || s->pg)
        return id;
    /* an id of a sets table written by another tool, with no runs row
     * (runs_latest's rule for the latest) */
    return runs_q_scalar(s, "SELECT run_id FROM sets WHERE CAST(run_id AS TEXT) = ?1 LIMIT 1", NULL,
                         p, 1, -1);
}

/* `stats settings` of one recorded settings row, as name/value pairs. */
struct settings_pairs {
    char **names, **values;
    size_t n;
};

static const char *settings_pairs_lookup(void *ctx, const char *name)
{
    const struct settings_pairs *p = ctx;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->names[i], name))
            return p->values[i];
    return NULL;
}

static void settings_pairs_free(struct settings_pairs *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->names[i]);
        free(p->values[i]);
    }
    free(p->names);
    free(p->values);
}

static int settings_pairs_add(struct settings_pairs *p, const char *k, const char *v)
{
    char **nn = realloc(p->names, (p->n + 1) * sizeof *nn);
    if (nn)
        p->names = nn;
    char **nv = realloc(p->values, (p->n + 1) * sizeof *nv);
    if (nv)
        p->values = nv;
    if (!nn || !nv)
        return -1;
    p->names[p->n] = strdup(k);
    p->values[p->n] = strdup(v);
    p->n++;
    return p->names[p->n - 1] && p->values[p->n - 1] ? 0 : -1;
}

static int read_settings(struct runs_src *src, int64_t run_id, struct slab_settings *s,
                         char *version, size_t vlen, int64_t *t_ns, char *err, size_t errlen)
{
    struct runs_q q;
    struct settings_pairs p = { 0 };
    struct runs_param par[] = { RP_INT(run_id) };
    int rc = -1;
    if (runs_q_start(
            &q, src,
            "SELECT j.key, j.value, s.version, s.t_ns FROM settings s, json_each(s.settings) j"
            " WHERE s.run_id = ?1 AND s.t_ns = (SELECT max(t_ns) FROM settings WHERE run_id = ?1)",
            "SELECT j.key, j.value, s.version, s.t_ns FROM settings s,"
            " jsonb_each_text(s.settings) j"
            " WHERE s.run_id = $1 AND s.t_ns = (SELECT max(t_ns) FROM settings WHERE run_id = $1)",
            par, 1)) {
        runs_q_end(&q, err, errlen);
        return -1;
    }
    while (runs_q_next(&q)) {
        const char *k = runs_q_text(&q, 0);
        const char *v = runs_q_text(&q, 1);
        const char *ver = runs_q_text(&q, 2);
        if (k && v && settings_pairs_add(&p, k, v)) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        if (ver)
            snprintf(version, vlen, "%s", ver);
        *t_ns = runs_q_int(&q, 3);
    }
    if (runs_q_end(&q, err, errlen))
        goto out;
    if (!p.n) {
        snprintf(err, errlen, "run %lld has no recorded `stats settings`", (long long)run_id);
        goto out;
    }
    rc = slab_settings_from_stats(s, settings_pairs_lookup, &p, err, errlen) == SLAB_OK ? 0 : -1;
out:
    runs_q_end(&q, NULL, 0);
    settings_pairs_free(&p);
    return rc;
}

static int replay_writes(struct runs_src *s, struct prediction *r, char *err, size_t errlen)
{
    struct runs_q q;
    struct runs_param p[] = { RP_INT(r->run_id) };
    if (runs_q_start(&q, s,
                     "SELECT cmd, key_hash, key_len, value_len, coalesce(flags, 0), answer,"
                     " coalesce(exptime, 0), ms_mode, coalesce(class_id, 0) FROM sets"
                     " WHERE run_id = ?1 ORDER BY seq",
                     "SELECT cmd, key_hash, key_len, value_len, coalesce(flags, 0), answer,"
                     " coalesce(exptime, 0), ms_mode, coalesce(class_id, 0) FROM sets"
                     " WHERE run_id = $1 ORDER BY seq",
                     p, 1)) {
        if (!s->db) /* PostgreSQL: its schema always has ms_mode */
            return runs_q_end(&q, err, errlen) ? -1 : -1;
        runs_q_end(&q, NULL, 0);
        /* before schema v3 (SQLite) there is no ms_mode: every ms was a set */
        if (runs_q_start(&q, s,
                         "SELECT cmd, key_hash, key_len, value_len, coalesce(flags, 0), answer,"
                         " coalesce(exptime, 0), NULL, 0 FROM sets WHERE run_id = ?1 ORDER BY seq",
                         NULL, p, 1)) {
            runs_q_end(&q, err, errlen);
            return -1;
        }
    }
    while (runs_q_next(&q)) {
        const char *mode = runs_q_text(&q, 7);
        struct predict_write w = {
            .cmd = runs_q_text(&q, 0),
            .ms_mode = mode ? mode[0] : 0,
            .key_hash = (uint64_t)runs_q_int(&q, 1),
            .key_len = (uint32_t)runs_q_int(&q, 2),
            .value_len = runs_q_null(&q, 3) ? -1 : runs_q_int(&q, 3),
            .flags = (uint32_t)runs_q_int(&q, 4),
            .answer = runs_q_text(&q, 5),
            .has_ttl = runs_q_int(&q, 6) != 0,
            .class_id = (uint32_t)runs_q_int(&q, 8),
        };
        predict_apply(r, &w);
    }
    return runs_q_end(&q, err, errlen);
}

/* One run_meta value (NULL: none, or no run_meta table); free it. */
static char *read_meta(struct runs_src *s, int64_t run_id, const char *key)
{
    struct runs_q q;
    struct runs_param p[] = { RP_INT(run_id), RP_TEXT(key) };
    char *v = NULL;
    if (!runs_q_start(&q, s, "SELECT value FROM run_meta WHERE run_id = ?1 AND key = ?2",
                      "SELECT value FROM run_meta WHERE run_id = $1 AND key = $2", p, 2) &&
        runs_q_next(&q) && runs_q_text(&q, 0))
        v = strdup(runs_q_text(&q, 0));
    runs_q_end(&q, NULL, 0);
    return v;
}

/* Every chunk size memcached showed since the run's settings were read
 * (a restart with other settings starts a new ladder). */
static void read_chunk_sizes(struct runs_src *s, int64_t run_id, int64_t since_ns,
                             struct ladder_observed *o)
{
    struct runs_q q;
    struct runs_param p[] = { RP_INT(run_id), RP_INT(since_ns) };
    ladder_observed_init(o);
    if (!runs_q_start(&q, s,
                      "SELECT DISTINCT c.class_id, json_extract(c.fields, '$.chunk_size')"
                      " FROM samples s JOIN sample_classes c USING (sample_id)"
                      " WHERE s.run_id = ?1 AND s.t_ns >= ?2"
                      " AND json_extract(c.fields, '$.chunk_size') IS NOT NULL",
                      "SELECT DISTINCT c.class_id, (c.fields ->> 'chunk_size')::numeric"
                      " FROM samples s JOIN sample_classes c USING (sample_id)"
                      " WHERE s.run_id = $1 AND s.t_ns >= $2"
                      " AND c.fields ? 'chunk_size'",
                      p, 2))
        while (runs_q_next(&q)) {
            int64_t id = runs_q_int(&q, 0), chunk = runs_q_int(&q, 1);
            if (id >= 1 && id <= SLAB_MODEL_MAX_CLASSES && chunk > 0)
                ladder_observed_add(o, (uint32_t)id, (uint64_t)chunk);
        }
    runs_q_end(&q, NULL, 0);
}

/* Whether the ladder the proxy recorded for the run (run_meta 'ladder',
 * its chunk_sizes) is the one predict chose: 0 none, 1 same, -1 not. */
static int recorded_ladder(struct runs_src *s, int64_t run_id, const struct slab_ladder *l)
{
    struct runs_q q;
    struct runs_param p[] = { RP_INT(run_id) };
    uint32_t n = 0;
    int rc = 1;
    if (runs_q_start(&q, s,
                     "SELECT CAST(j.key AS INTEGER) + 1, j.value FROM run_meta m,"
                     " json_each(CASE WHEN json_valid(m.value) THEN m.value ELSE '{}' END,"
                     " '$.chunk_sizes') j WHERE m.run_id = ?1 AND m.key = 'ladder'",
                     "SELECT j.n, j.v::numeric FROM run_meta m,"
                     " jsonb_array_elements_text(CASE WHEN jsonb_typeof(slabtap_try_jsonb(m.value)"
                     " -> 'chunk_sizes') = 'array' THEN slabtap_try_jsonb(m.value) -> 'chunk_sizes'"
                     " ELSE '[]'::jsonb END) WITH ORDINALITY j(v, n)"
                     " WHERE m.run_id = $1 AND m.key = 'ladder'",
                     p, 1)) {
        runs_q_end(&q, NULL, 0);
        return 0;
    }
    while (runs_q_next(&q)) {
        int64_t c = runs_q_int(&q, 0), chunk = runs_q_int(&q, 1);
        n++;
        if (c < 1 || c > (int64_t)l->n_classes || l->cls[c].chunk_size != chunk)
            rc = -1;
    }
    if (runs_q_end(&q, NULL, 0))
        return 0;
    return n == 0 ? 0 : n != l->n_classes ? -1 : rc;
}

/* memcached's global counters that change memory besides the writes. */
enum {
    K_EVICT,
    K_MOVED,
    K_RECLAIMED,
    K_CRAWLER,
    K_GET_EXPIRED,
    K_FLUSH,
    K_CURR,
    K_PID,
    K_UPTIME,
    K_COUNT
};

static void read_counters(struct runs_src *s, int64_t sample_id, int64_t *v)
{
    struct runs_q q;
    struct runs_param p[] = { RP_INT(sample_id) };
    memset(v, 0, K_COUNT * sizeof *v);
#define PG_STAT(k) " coalesce((stats ->> '" k "')::numeric, 0)"
    if (!runs_q_start(
            &q, s,
            "SELECT coalesce(json_extract(stats, '$.evictions'), 0),"
            " coalesce(json_extract(stats, '$.slabs_moved'), 0),"
            " coalesce(json_extract(stats, '$.reclaimed'), 0),"
            " coalesce(json_extract(stats, '$.crawler_reclaimed'), 0),"
            " coalesce(json_extract(stats, '$.get_expired'), 0),"
            " coalesce(json_extract(stats, '$.cmd_flush'), 0),"
            " coalesce(json_extract(stats, '$.curr_items'), 0),"
            " coalesce(json_extract(stats, '$.pid'), 0),"
            " coalesce(json_extract(stats, '$.uptime'), 0)"
            " FROM samples WHERE sample_id = ?1",
            "SELECT" PG_STAT("evictions") "," PG_STAT("slabs_moved") "," PG_STAT("reclaimed") "," PG_STAT("crawler_reclaimed") "," PG_STAT(
                "get_expired") "," PG_STAT("cmd_flush") "," PG_STAT("curr_items") "," PG_STAT("pid") "," PG_STAT("uptime") " FROM samples WHERE sample_id = $1",
            p, 1) &&
        runs_q_next(&q))
        for (int i = 0; i < K_COUNT; i++)
            v[i] = runs_q_int(&q, i);
#undef PG_STAT
    runs_q_end(&q, NULL, 0);
}

/* The run's first or last sample id (-1: none). */
static int64_t edge_sample(struct runs_src *s, int64_t run_id, bool last)
{
    struct runs_param p[] = { RP_INT(run_id) };
    return last ? runs_q_scalar(s,
                                "SELECT sample_id FROM samples WHERE run_id = ?1"
                                " ORDER BY t_ns DESC, sample_id DESC LIMIT 1",
                                "SELECT sample_id FROM samples WHERE run_id = $1"
                                " ORDER BY t_ns DESC, sample_id DESC LIMIT 1",
                                p, 1, -1)
                : runs_q_scalar(s,
                                "SELECT sample_id FROM samples WHERE run_id = ?1"
                                " ORDER BY t_ns ASC, sample_id ASC LIMIT 1",
                                "SELECT sample_id FROM samples WHERE run_id = $1"
                                " ORDER BY t_ns ASC, sample_id ASC LIMIT 1",
                                p, 1, -1);
}

static void read_observed(struct runs_src *s, struct prediction *r)
{
    struct runs_q q;
    int64_t first_id = edge_sample(s, r->run_id, false), last_id = edge_sample(s, r->run_id, true);
    int64_t a[K_COUNT], b[K_COUNT];
    if (last_id < 0)
        return;
    struct runs_param p[] = { RP_INT(last_id) };
    if (!runs_q_start(
            &q, s,
            "SELECT class_id, chunk_size, used_chunks, mem_requested, total_pages, number, evicted"
            " FROM class_stats WHERE sample_id = ?1",
            "SELECT class_id, chunk_size, used_chunks, mem_requested, total_pages, number, evicted"
            " FROM class_stats WHERE sample_id = $1",
            p, 1))
        while (runs_q_next(&q)) {
            int64_t c = runs_q_int(&q, 0);
            struct predict_observed o = {
                .chunk_size = runs_q_int(&q, 1),
                .used_chunks = runs_q_int(&q, 2),
                .mem_requested = runs_q_int(&q, 3),
                .total_pages = runs_q_int(&q, 4),
                .number = runs_q_int(&q, 5),
                .evicted = runs_q_int(&q, 6),
            };
            if (c >= 1 && c <= SLAB_MODEL_MAX_CLASSES)
                predict_observe(r, (uint32_t)c, &o);
        }
    runs_q_end(&q, NULL, 0);
    /* what happened DURING the run: the last sample's counters less the
     * first's (memcached's are cumulative since it started) */
    read_counters(s, last_id, b);
    if (first_id != last_id)
        read_counters(s, first_id, a);
    else
        memset(a, 0, sizeof a);
    if (first_id != last_id && (a[K_PID] != b[K_PID] || b[K_UPTIME] < a[K_UPTIME])) {
        r->restarted = true;
        memset(a, 0, sizeof a); /* the counters started again */
    }
    r->evictions = b[K_EVICT] - a[K_EVICT];
    r->slabs_moved = b[K_MOVED] - a[K_MOVED];
    r->reclaimed = b[K_RECLAIMED] - a[K_RECLAIMED];
    r->crawler_reclaimed = b[K_CRAWLER] - a[K_CRAWLER];
    r->get_expired = b[K_GET_EXPIRED] - a[K_GET_EXPIRED];
    r->flushes = b[K_FLUSH] - a[K_FLUSH];
    r->observed_curr_items = b[K_CURR];
    struct runs_param rp[] = { RP_INT(r->run_id) };
    r->rows_dropped = runs_q_scalar(s, "SELECT rows_dropped FROM runs WHERE run_id = ?1",
                                    "SELECT rows_dropped FROM runs WHERE run_id = $1", rp, 1, 0);
}

int runs_read_prediction(sqlite3 *db, int64_t run_id, struct prediction *r, char *err,
                         size_t errlen)
{
    struct runs_src s;
    runs_src_wrap(&s, db);
    return runs_src_prediction(&s, run_id, r, err, errlen);
}

int runs_read_rows_status(sqlite3 *db, int64_t run_id, struct runs_rows_status *out)
{
    struct runs_src s;
    runs_src_wrap(&s, db);
    return runs_src_rows_status(&s, run_id, out);
}

int runs_read_prediction_agg(sqlite3 *db, int64_t run_id, struct prediction *r,
                             struct runs_agg_info *info, char *err, size_t errlen)
{
    struct runs_src s;
    runs_src_wrap(&s, db);
    return runs_src_prediction_agg(&s, run_id, r, info, err, errlen);
}

/* What every prediction of a run starts from: its name, its settings, the
 * ladder chosen by the same three witnesses and the same rule as the
 * proxy's tags, and the ladder its writes were tagged with. 0, or -1 with
 * err. */
static int prediction_start(struct runs_src *src, int64_t run_id, struct prediction *r, char *err,
                            size_t errlen)
{
    struct slab_settings s;
    struct ladder_observed *obs = malloc(sizeof *obs);
    struct ladder_choice *choice = malloc(sizeof *choice);
    char version[64] = "", name[128] = "", *flags = NULL;
    int64_t settings_ns = 0;
    struct runs_q q;
    struct runs_param p[] = { RP_INT(run_id) };
    int rc = -1;
    if (!obs || !choice) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (!runs_q_start(&q, src, "SELECT name FROM runs WHERE run_id = ?1",
                      "SELECT name FROM runs WHERE run_id = $1", p, 1) &&
        runs_q_next(&q) && runs_q_text(&q, 0))
        snprintf(name, sizeof name, "%s", runs_q_text(&q, 0));
    runs_q_end(&q, NULL, 0);
    if (read_settings(src, run_id, &s, version, sizeof version, &settings_ns, err, errlen))
        goto out;
    flags = read_meta(src, run_id, "memcached_flags");
    read_chunk_sizes(src, run_id, settings_ns, obs);
    if (ladder_choose(&s, flags, version, obs, choice, err, errlen) != SLAB_OK ||
        predict_begin_choice(r, run_id, choice, err, errlen))
        goto out;
    r->recorded_ladder = recorded_ladder(src, run_id, &r->ladder);
    snprintf(r->run_name, sizeof r->run_name, "%s", name);
    snprintf(r->version, sizeof r->version, "%s", version);
    rc = 0;
out:
    free(obs);
    free(choice);
    free(flags);
    return rc;
}

int runs_src_prediction(struct runs_src *src, int64_t run_id, struct prediction *r, char *err,
                        size_t errlen)
{
    int rc = -1;
    memset(r, 0, sizeof *r);
    if (run_id < 0) {
        snprintf(err, errlen, "no such run");
        goto out;
    }
    if (prediction_start(src, run_id, r, err, errlen))
        goto out;
    if (replay_writes(src, r, err, errlen))
        goto out;
    read_observed(src, r);
    char *sample = read_meta(src, run_id, "sample_keys"); /* --sample-keys 1/N */
    if (sample && sample_parse(sample, &r->sample_keys))
        r->sample_keys = 0;
    free(sample);
    if (predict_end(r)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rc = 0;
out:
    return rc;
}

/* --- the fleet ----------------------------------------------------------- */

int runs_src_select(struct runs_src *s, const char *node_like, int64_t since_ns, int64_t **ids,
                    char ***nodes, size_t *n, char *err, size_t errlen)
{
    struct runs_q q;
    struct runs_param p[] = { RP_TEXT(node_like), RP_INT(since_ns) };
    size_t cap = 0;
    *ids = NULL;
    *nodes = NULL;
    *n = 0;
    if (runs_q_start(&q, s,
                     "SELECT r.run_id, coalesce((SELECT value FROM run_meta m"
                     " WHERE m.run_id = r.run_id AND m.key = 'node'), '') AS node FROM runs r"
                     " WHERE (?1 IS NULL OR node LIKE ?1)"
                     " AND (?2 <= 0 OR r.ended_ns IS NULL OR r.ended_ns >= ?2)"
                     " ORDER BY r.started_ns, r.run_id",
                     "SELECT run_id, node FROM runs"
                     " WHERE ($1::text IS NULL OR node LIKE $1)"
                     " AND ($2::bigint <= 0 OR ended_ns IS NULL OR ended_ns >= $2)"
                     " ORDER BY started_ns, run_id",
                     p, 2)) {
        runs_q_end(&q, err, errlen);
        return -1;
    }
    while (runs_q_next(&q)) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *ni = realloc(*ids, cap * sizeof *ni);
            if (ni)
                *ids = ni;
            char **nn = realloc(*nodes, cap * sizeof *nn);
            if (nn)
                *nodes = nn;
            if (!ni || !nn) {
                snprintf(err, errlen, "out of memory");
                runs_q_end(&q, NULL, 0);
                return -1;
            }
        }
        const char *node = runs_q_text(&q, 1);
        (*ids)[*n] = runs_q_int(&q, 0);
        (*nodes)[*n] = strdup(node ? node : "");
        (*n)++;
    }
    return runs_q_end(&q, err, errlen);
}

void runs_select_free(int64_t *ids, char **nodes, size_t n)
{
    for (size_t i = 0; nodes && i < n; i++)
        free(nodes[i]);
    free(nodes);
    free(ids);
}

/* --- from the aggregates (issue 14) --------------------------------------- */

int runs_src_rows_status(struct runs_src *s, int64_t run_id, struct runs_rows_status *out)
{
    struct runs_param p[] = { RP_INT(run_id) };
    memset(out, 0, sizeof *out);
    out->recorded = out->present = -1;
    out->complete = true;
    if (!s->db) /* PostgreSQL: rows only */
        return 0;
    out->recorded =
        runs_q_scalar(s, "SELECT rows_recorded FROM runs WHERE run_id = ?1", NULL, p, 1, -1);
    out->present = runs_q_scalar(s,
                                 "SELECT count(*) FROM write_runs r JOIN writes w"
                                 " ON w.rowid >= r.lo AND w.rowid < r.hi WHERE r.run_id = ?1",
                                 NULL, p, 1, -1);
    out->have_aggs =
        runs_q_scalar(s, "SELECT 1 FROM agg_item_runs WHERE run_id = ?1", NULL, p, 1, 0) == 1;
    out->complete = out->recorded < 0 || out->present < 0 || out->present >= out->recorded;
    return 0;
}

/* One agg_items cell summed over the run, stored writes only. */
struct agg_cells {
    struct wagg_cell *c;
    int64_t *writes;
    uint64_t *live;
    size_t n, cap;
};

static int agg_cells_push(struct agg_cells *a, const struct wagg_cell *c)
{
    if (a->n == a->cap) {
        size_t ncap = a->cap ? a->cap * 2 : 1024;
        struct wagg_cell *nc = realloc(a->c, ncap * sizeof *nc);
        if (!nc)
            return -1;
        a->c = nc;
        a->cap = ncap;
    }
    a->c[a->n++] = *c;
    return 0;
}

/* What wagg_cell_spread hands out, applied to the prediction. */
struct agg_apply {
    struct prediction *r;
    struct runs_agg_info *info;
    bool live; /* false: count the written items per class only */
};

static int agg_apply_item(void *ctx, int64_t body, uint64_t n)
{
    struct agg_apply *a = ctx;
    struct slab_item_layout l;
    /* the key's length is not kept: one byte of key, the rest value (the
     * same ntotal; only a chunked item's header chunk could differ) */
    uint32_t key_len = body >= 1 ? 1 : 0;
    if (!key_len)
        return 0;
    if (slab_item_layout(&a->r->ladder, key_len, 0, (uint64_t)(body - key_len), &l) != SLAB_OK)
        return 0; /* too large: memcached refused it, nothing live */
    if (!a->live) {
        a->info->written[l.lru_class] += n;
        return 0;
    }
    a->info->est[l.lru_class] += n;
    if (body >= WAGG_EXACT_BELOW)
        a->info->wide_items += n;
    for (uint64_t i = 0; i < n; i++)
        if (slab_counters_add(&a->r->predicted, &a->r->ladder, &l) != SLAB_OK)
            return -1;
    a->r->live_items += n;
    return advise_hist_add(&a->r->live, l.ntotal, n);
}

static int agg_hist_item(void *ctx, int64_t body, uint64_t n)
{
    struct agg_apply *a = ctx;
    struct slab_item_layout l;
    if (body < 1 || slab_item_layout(&a->r->ladder, 1, 0, (uint64_t)(body - 1), &l) != SLAB_OK)
        return 0;
    return advise_hist_add(&a->r->live, l.ntotal, n);
}

/* r->live again, each class's cells scaled to the last sample's number. */
static int per_class_live(struct prediction *r, struct agg_cells *cells, struct runs_agg_info *info)
{
    uint32_t *cls = malloc(cells->n * sizeof *cls);
    size_t *idx = malloc(cells->n * sizeof *idx);
    int64_t *w = malloc(cells->n * sizeof *w);
    uint64_t *out = malloc(cells->n * sizeof *out);
    struct agg_apply a = { r, info, true };
    int rc = -1;
    if (!cls || !idx || !w || !out)
        goto done;
    for (size_t i = 0; i < cells->n; i++) {
        struct slab_item_layout l;
        int64_t mean = cells->c[i].body_bytes / (cells->c[i].writes ? cells->c[i].writes : 1);
        cls[i] =
            mean >= 1 && slab_item_layout(&r->ladder, 1, 0, (uint64_t)(mean - 1), &l) == SLAB_OK
                ? l.lru_class
                : 0;
    }
    advise_hist_free(&r->live);
    advise_hist_init(&r->live);
    info->per_class_live = 0;
    for (uint32_t c = 1; c <= r->ladder.n_classes; c++) {
        size_t k = 0;
        uint64_t written = 0;
        for (size_t i = 0; i < cells->n; i++)
            if (cls[i] == c) {
                idx[k] = i;
                w[k++] = cells->c[i].writes;
                written += (uint64_t)cells->c[i].writes;
            }
        uint64_t target = r->observed[c].present && r->observed[c].number > 0
                              ? (uint64_t)r->observed[c].number
                              : 0;
        if (target > written)
            target = written;
        info->per_class_live += target;
        wagg_scale_counts(w, k, target, out);
        for (size_t j = 0; j < k; j++)
            if (wagg_cell_spread(&cells->c[idx[j]], out[j], agg_hist_item, &a))
                goto done;
    }
    advise_hist_sort(&r->live);
    info->live_by_class = true;
    rc = 0;
done:
    free(cls);
    free(idx);
    free(w);
    free(out);
    return rc;
}

int runs_src_prediction_agg(struct runs_src *src, int64_t run_id, struct prediction *r,
                            struct runs_agg_info *info, char *err, size_t errlen)
{
    struct runs_q q;
    struct agg_cells cells = { 0 };
    int rc = -1;
    memset(r, 0, sizeof *r);
    memset(info, 0, sizeof *info);
    if (!src->db) {
        snprintf(err, errlen, "the write aggregates are read from a SQLite file");
        goto out;
    }
    struct runs_param p[] = { RP_INT(run_id) };
    if (runs_q_scalar(src, "SELECT 1 FROM agg_item_runs WHERE run_id = ?1", NULL, p, 1, 0) != 1) {
        snprintf(err, errlen,
                 "run %lld has no write histograms (agg_items: recorded by an older slabtap)",
                 (long long)run_id);
        goto out;
    }
    if (prediction_start(src, run_id, r, err, errlen))
        goto out;
    read_observed(src, r);

    /* the histogram, over the whole run */
    if (runs_q_start(&q, src,
                     "SELECT class_id, body, outcome, sum(writes), sum(body_bytes) FROM agg_items"
                     " WHERE run_id = ?1 GROUP BY class_id, body, outcome ORDER BY body, class_id",
                     NULL, p, 1)) {
        runs_q_end(&q, err, errlen);
        goto out;
    }
    while (runs_q_next(&q)) {
        int64_t outcome = runs_q_int(&q, 2), n = runs_q_int(&q, 3);
        struct wagg_cell c = { (uint32_t)runs_q_int(&q, 0), runs_q_int(&q, 1), n,
                               runs_q_int(&q, 4) };
        if (outcome == WAGG_REFUSED)
            info->refused += (uint64_t)n;
        else if (outcome != WAGG_STORED)
            info->failed += (uint64_t)n;
        else if (agg_cells_push(&cells, &c)) {
            snprintf(err, errlen, "out of memory");
            runs_q_end(&q, NULL, 0);
            goto out;
        } else
            info->stored += (uint64_t)n;
    }
    if (runs_q_end(&q, err, errlen))
        goto out;
    info->deletes = (uint64_t)runs_q_scalar(
        src,
        "SELECT sum(a.writes) FROM agg_answers a JOIN cmds c ON c.cmd_id = a.cmd_id"
        " JOIN answers n ON n.answer_id = a.answer_id WHERE a.run_id = ?1"
        " AND c.cmd IN ('delete', 'md') AND n.answer IN ('DELETED', 'HD')",
        NULL, p, 1, 0);
    info->writes = (uint64_t)runs_q_scalar(
        src, "SELECT sum(writes) FROM agg_answers WHERE run_id = ?1", NULL, p, 1, 0);

    /* N: memcached's own count of what is left, never more than was stored */
    info->from_curr_items = r->have_sample;
    uint64_t n_live = r->have_sample && r->observed_curr_items >= 0
                          ? (uint64_t)r->observed_curr_items
                          : (info->stored > info->deletes ? info->stored - info->deletes : 0);
    if (n_live > info->stored)
        n_live = info->stored;
    info->live = n_live;
    info->exact =
        info->stored == n_live && info->deletes == 0 && info->refused == 0 && info->failed == 0;
    for (size_t i = 0; i < cells.n; i++)
        if (cells.c[i].bucket >= WAGG_EXACT_BELOW)
            info->exact = false; /* sizes known within a bucket only */

    cells.writes = malloc((cells.n ? cells.n : 1) * sizeof *cells.writes);
    cells.live = malloc((cells.n ? cells.n : 1) * sizeof *cells.live);
    if (!cells.writes || !cells.live) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < cells.n; i++)
        cells.writes[i] = cells.c[i].writes;
    wagg_scale_counts(cells.writes, cells.n, n_live, cells.live);
    struct agg_apply written = { r, info, false }, live = { r, info, true };
    for (size_t i = 0; i < cells.n; i++)
        if (wagg_cell_spread(&cells.c[i], (uint64_t)cells.c[i].writes, agg_apply_item, &written) ||
            wagg_cell_spread(&cells.c[i], cells.live[i], agg_apply_item, &live)) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
    for (uint32_t c = 1; c <= SLAB_MODEL_MAX_CLASSES; c++) {
        uint64_t w = info->written[c], rest = info->stored - w;
        info->lo[c] = n_live > rest ? n_live - rest : 0;
        info->hi[c] = w < n_live ? w : n_live;
    }
    /* advise's histogram: with a sample, each class's stored sizes scaled
     * to memcached's own count of the class (stats items number), which
     * follows evictions and overwrites class by class */
    if (r->have_sample && cells.n && per_class_live(r, &cells, info)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    r->rows = 0;
    r->applied = info->stored;
    r->failed = info->failed;
    r->deletes = info->deletes;
    r->throwaway = info->refused;
    if (predict_end(r)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* never EXACT from an estimate; said whichever way */
    if (!info->exact) {
        size_t len = strlen(r->why_not);
        snprintf(r->why_not + len, sizeof r->why_not - len,
                 "%sfrom aggregates: %llu stored writes, %llu deletes, %llu live: the sizes of "
                 "what is left are the stored sizes scaled, not followed per key",
                 len ? "; " : "", (unsigned long long)info->stored,
                 (unsigned long long)info->deletes, (unsigned long long)n_live);
        r->exact_expected = false;
    }
    rc = 0;
out:
    free(cells.c);
    free(cells.writes);
    free(cells.live);
    return rc;
}
