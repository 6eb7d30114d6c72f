/* qsql: a statement on SQLite or PostgreSQL; the dialect rule. */
#include "record/qsql.h"

#include <ctype.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "record/pgstore.h"

#define INT8OID 20
#define SQLSTATE_QUERY_CANCELED "57014"

/* ---- the dialect rule ---------------------------------------------------- */

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* The index of the quote closing the literal opened at s[i] (n when none). */
static size_t literal_end(const char *s, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (s[i] != '\'')
            continue;
        if (i + 1 < n && s[i + 1] == '\'')
            i++; /* '' inside */
        else
            return i;
    }
    return n;
}

/* The index of the ')' closing the group opened at s[at] == '(' (n when
 * unbalanced); literals skipped. */
static size_t group_end(const char *s, size_t at, size_t n)
{
    int depth = 0;
    for (size_t i = at; i < n; i++) {
        if (s[i] == '\'')
            i = literal_end(s, i, n);
        else if (s[i] == '(')
            depth++;
        else if (s[i] == ')' && --depth == 0)
            return i;
    }
    return n;
}

/* The top-level commas of s[from, to): their indexes into at (at most
 * max); how many there are. */
static size_t top_commas(const char *s, size_t from, size_t to, size_t *at, size_t max)
{
    size_t k = 0;
    for (size_t i = from; i < to; i++) {
        if (s[i] == '(')
            i = group_end(s, i, to);
        else if (s[i] == '\'')
            i = literal_end(s, i, to);
        else if (s[i] == ',' && k++ < max)
            at[k - 1] = i;
    }
    return k;
}

static bool derive(struct buf *b, const char *s, size_t n);

/* name(args), each argument derived; false when one cannot be */
static bool derive_call(struct buf *b, const char *name, const char *s, size_t from, size_t to)
{
    size_t at[QSQL_PARAMS_MAX];
    size_t k = top_commas(s, from, to, at, QSQL_PARAMS_MAX);
    if (k > QSQL_PARAMS_MAX)
        return false;
    buf_puts(b, name);
    buf_puts(b, "(");
    for (size_t i = 0, start = from; i <= k; i++) {
        size_t end = i < k ? at[i] : to;
        if (i)
            buf_puts(b, ",");
        if (!derive(b, s + start, end - start))
            return false;
        start = end + 1;
    }
    buf_puts(b, ")");
    return true;
}

static bool derive(struct buf *b, const char *s, size_t n)
{
    static const char *const refused[] = { "rowid", "typeof",    "json_type",  "json_object",
                                           "json",  "json_each", "json_array", NULL };
    for (size_t i = 0; i < n;) {
        if (s[i] == '\'') { /* a literal, as is */
            size_t e = literal_end(s, i, n);
            e = e < n ? e + 1 : n;
            buf_append(b, s + i, e - i);
            i = e;
            continue;
        }
        if (s[i] == '?' && i + 1 < n && isdigit((unsigned char)s[i + 1])) {
            buf_puts(b, "$");
            i++;
            continue;
        }
        if (!ident_char(s[i]) || (i > 0 && ident_char(s[i - 1]))) {
            buf_append(b, s + i, 1);
            i++;
            continue;
        }
        size_t e = i;
        while (e < n && ident_char(s[e]))
            e++;
        size_t len = e - i, p = e;
        while (p < n && s[p] == ' ')
            p++;
        bool call = p < n && s[p] == '(';
        size_t close = call ? group_end(s, p, n) : 0;
        if (call && close >= n)
            return false;
        char word[32] = "";
        if (len < sizeof word)
            for (size_t x = 0; x < len; x++)
                word[x] = (char)tolower((unsigned char)s[i + x]);
        for (size_t r = 0; refused[r]; r++)
            if (!strcmp(word, refused[r]) && (call || !strcmp(word, "rowid")))
                return false;
        size_t at[2];
        if (call && !strcmp(word, "json_extract")) {
            /* json_extract(X, '$.f') -> ((X) ->> 'f')::numeric */
            if (top_commas(s, p + 1, close, at, 2) != 1)
                return false;
            const char *path = s + at[0] + 1;
            while (*path == ' ')
                path++;
            if (strncmp(path, "'$.", 3))
                return false;
            const char *pe = strchr(path + 3, '\'');
            if (!pe || pe > s + close)
                return false;
            buf_puts(b, "((");
            if (!derive(b, s + p + 1, at[0] - p - 1))
                return false;
            buf_puts(b, ") ->> '");
            buf_append(b, path + 3, (size_t)(pe - path - 3));
            buf_puts(b, "')::numeric");
            i = close + 1;
            continue;
        }
        if (call && !strcmp(word, "json_valid")) {
            buf_puts(b, "(slabtap_try_jsonb(");
            if (!derive(b, s + p + 1, close - p - 1))
                return false;
            buf_puts(b, ") IS NOT NULL)");
            i = close + 1;
            continue;
        }
        if (call && (!strcmp(word, "max") || !strcmp(word, "min")) &&
            top_commas(s, p + 1, close, at, 2) == 1) {
            if (!derive_call(b, word[1] == 'a' ? "greatest" : "least", s, p + 1, close))
                return false;
            i = close + 1;
            continue;
        }
        if (!strcmp(word, "collate") && !strncmp(s + p, "BINARY", 6) && !ident_char(s[p + 6])) {
            buf_puts(b, "COLLATE \"C\""); /* bytes' order */
            i = p + 6;
            continue;
        }
        buf_append(b, s + i, len);
        i = e;
    }
    return true;
}

char *qsql_dialect_pg(const char *lite)
{
    struct buf b;
    buf_init(&b, BUF_UNBOUNDED);
    if (!derive(&b, lite, strlen(lite))) {
        buf_free(&b);
        return NULL;
    }
    return buf_take(&b);
}

/* ---- statements ------------------------------------------------------------ */

static void pg_error(struct qsql_db *db, const char *what, const char *reason)
{
    pgstore_say(db->shown, db->pw, what, reason, db->err, sizeof db->err);
}

int qsql_open_pg(struct qsql_db *db, const char *uri, char *err, size_t errlen)
{
    memset(db, 0, sizeof *db);
    pgstore_redact(uri, db->shown, sizeof db->shown);
    db->pg = pgstore_connect(uri, "-c default_transaction_read_only=on");
    if (!db->pg) {
        snprintf(err, errlen, "%s: out of memory", db->shown);
        return -1;
    }
    const char *pw = PQpass((PGconn *)db->pg);
    snprintf(db->pw, sizeof db->pw, "%s", pw ? pw : "");
    if (PQstatus((PGconn *)db->pg) != CONNECTION_OK)
        return pgstore_say(db->shown, db->pw, "cannot connect", PQerrorMessage((PGconn *)db->pg),
                           err, errlen);
    return 0;
}

void qsql_close_pg(struct qsql_db *db)
{
    if (db->pg)
        PQfinish((PGconn *)db->pg);
    db->pg = NULL;
    memset(db->pw, 0, sizeof db->pw);
}

int qsql_prepare(struct qsql *q, struct qsql_db *db, const char *lite, const char *pg)
{
    memset(q, 0, sizeof *q);
    q->db = db;
    if (db->lite) {
        if (sqlite3_prepare_v2(db->lite, lite, -1, &q->st, NULL) == SQLITE_OK)
            return 0;
        snprintf(db->err, sizeof db->err, "%s", sqlite3_errmsg(db->lite));
        return -1;
    }
    q->pg_sql = qsql_dialect_pg(pg ? pg : lite);
    if (!q->pg_sql) {
        snprintf(db->err, sizeof db->err, "a query the dialect rule cannot derive (or no memory)");
        return -1;
    }
    return 0;
}

void qsql_bind(struct qsql *q, int i, int64_t v)
{
    if (q->st) {
        sqlite3_bind_int64(q->st, i, v);
        return;
    }
    if (i >= 1 && i <= QSQL_PARAMS_MAX) {
        q->param[i - 1] = v;
        if (i > q->nparams)
            q->nparams = i;
    }
}

static enum qsql_rc pg_run(struct qsql *q)
{
    char num[QSQL_PARAMS_MAX][24];
    const char *vals[QSQL_PARAMS_MAX];
    unsigned int types[QSQL_PARAMS_MAX];
    PGconn *c = (PGconn *)q->db->pg;
    for (int i = 0; i < q->nparams; i++) {
        snprintf(num[i], sizeof num[i], "%" PRId64, q->param[i]);
        vals[i] = num[i];
        types[i] = INT8OID;
    }
    PGresult *r = PQexecParams(c, q->pg_sql, q->nparams, types, vals, NULL, NULL, 0);
    q->res = (struct pg_result *)r;
    q->row = -1;
    if (!r) {
        pg_error(q->db, "query", PQerrorMessage(c));
        return QSQL_ERROR;
    }
    if (PQresultStatus(r) == PGRES_TUPLES_OK || PQresultStatus(r) == PGRES_COMMAND_OK) {
        q->rows = PQntuples(r);
        return QSQL_ROW;
    }
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    bool timeout = state && !strcmp(state, SQLSTATE_QUERY_CANCELED);
    pg_error(q->db, "query", PQresultErrorMessage(r));
    return timeout ? QSQL_TIMEOUT : QSQL_ERROR;
}

enum qsql_rc qsql_step(struct qsql *q)
{
    if (q->st) {
        int rc = sqlite3_step(q->st);
        if (rc == SQLITE_ROW)
            return QSQL_ROW;
        if (rc == SQLITE_DONE)
            return QSQL_DONE;
        snprintf(q->db->err, sizeof q->db->err, "%s", sqlite3_errmsg(q->db->lite));
        return rc == SQLITE_INTERRUPT ? QSQL_TIMEOUT : QSQL_ERROR;
    }
    if (!q->pg_sql)
        return QSQL_ERROR;
    if (!q->res) {
        enum qsql_rc rc = pg_run(q);
        if (rc != QSQL_ROW)
            return rc;
    }
    return ++q->row < q->rows ? QSQL_ROW : QSQL_DONE;
}

bool qsql_null(const struct qsql *q, int col)
{
    if (q->st)
        return sqlite3_column_type(q->st, col) == SQLITE_NULL;
    return !q->res || PQgetisnull((PGresult *)q->res, q->row, col);
}

int64_t qsql_int(const struct qsql *q, int col)
{
    if (q->st)
        return sqlite3_column_int64(q->st, col);
    if (qsql_null(q, col))
        return 0;
    const char *v = PQgetvalue((PGresult *)q->res, q->row, col);
    if (!strcmp(v, "t") || !strcmp(v, "f")) /* booleans */
        return *v == 't';
    /* numeric results (sum, json numbers) may carry a fraction: cut it */
    return strchr(v, '.') || strchr(v, 'e') ? (int64_t)strtod(v, NULL) : strtoll(v, NULL, 10);
}

const char *qsql_text(const struct qsql *q, int col)
{
    if (q->st)
        return (const char *)sqlite3_column_text(q->st, col);
    return qsql_null(q, col) ? NULL : PQgetvalue((PGresult *)q->res, q->row, col);
}

int qsql_bytes(const struct qsql *q, int col)
{
    if (q->st)
        return sqlite3_column_bytes(q->st, col);
    return qsql_null(q, col) ? 0 : PQgetlength((PGresult *)q->res, q->row, col);
}

void qsql_reset(struct qsql *q)
{
    if (q->st) {
        sqlite3_reset(q->st);
        return;
    }
    PQclear((PGresult *)q->res);
    q->res = NULL;
    q->row = q->rows = 0;
}

void qsql_finalize(struct qsql *q)
{
    if (q->st)
        sqlite3_finalize(q->st);
    PQclear((PGresult *)q->res);
    free(q->pg_sql);
    memset(q, 0, sizeof *q);
}

const char *qsql_errmsg(struct qsql_db *db)
{
    return db->err[0] ? db->err : "unknown error";
}

void qsql_timeout(struct qsql_db *db, unsigned ms)
{
    if (!db->pg || ms == db->timeout_ms)
        return;
    char sql[64];
    snprintf(sql, sizeof sql, "SET statement_timeout = %u", ms);
    PGresult *r = PQexec((PGconn *)db->pg, sql);
    if (r && PQresultStatus(r) == PGRES_COMMAND_OK)
        db->timeout_ms = ms;
    PQclear(r);
}

void qsql_snapshot(struct qsql_db *db, bool begin)
{
    if (!db->pg)
        return;
    PGresult *r = PQexec((PGconn *)db->pg, begin ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
                                                 : "COMMIT"); /* a failed one: rolled back */
    PQclear(r);
}

const char *qsql_name(struct qsql_db *db)
{
    if (db->pg)
        return db->shown;
    const char *p = sqlite3_db_filename(db->lite, "main");
    return p ? p : "";
}
