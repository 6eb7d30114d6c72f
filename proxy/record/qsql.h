/* qsql: one statement over either store the page's queries read (the
 * recorder's SQLite connection, or a PostgreSQL connection of the query
 * thread's own), and the dialect rule that derives a query's PostgreSQL
 * text from its SQLite text.
 *
 * The rule (qsql_dialect_pg): ?N -> $N; json_extract(X, '$.f') ->
 * ((X) ->> 'f')::numeric; json_valid(X) -> (slabtap_try_jsonb(X) IS NOT
 * NULL); max(A, B) / min(A, B) of two arguments -> greatest / least;
 * COLLATE BINARY -> COLLATE "C".
 * Texts with what only SQLite has (rowid, typeof, json_type, json_object,
 * json(...)) are refused: such a query names its PostgreSQL text beside
 * its SQLite one (qsql_prepare's pg argument), in one place.
 *
 * Owns: a statement's parameters (64-bit integers only), its PostgreSQL
 * result (one, whole: the page's queries aggregate in SQL), the
 * connection's statement_timeout (qsql_timeout), and the last error's text
 * (the password scrubbed out: record/pgstore.h's pgstore_say), and the
 * PostgreSQL connection qsql_open_pg makes.
 * Must never take text into SQL but the caller's own constant texts, run a
 * statement on a thread that does not own the connection, or print. */
#ifndef SLABTAP_RECORD_QSQL_H
#define SLABTAP_RECORD_QSQL_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QSQL_PARAMS_MAX 8
#define QSQL_ERR_MAX 512

#define QSQL_NAME_MAX 1024

struct pg_conn;
struct pg_result;

/* A connection: exactly one of lite (the caller's) and pg (qsql_open_pg's). */
struct qsql_db {
    sqlite3 *lite;
    struct pg_conn *pg;
    unsigned timeout_ms;       /* PostgreSQL: the statement_timeout set (0: never set) */
    char shown[QSQL_NAME_MAX]; /* PostgreSQL: the connection string without its password */
    char pw[256];              /* PostgreSQL: the password, only to scrub it from messages */
    char err[QSQL_ERR_MAX];
};

enum qsql_rc {
    QSQL_ROW,
    QSQL_DONE,
    QSQL_TIMEOUT, /* interrupted (SQLite's progress handler) or statement_timeout */
    QSQL_ERROR    /* qsql_errmsg says why */
};

struct qsql {
    struct qsql_db *db;
    sqlite3_stmt *st; /* SQLite */
    char *pg_sql;     /* PostgreSQL: the text sent */
    struct pg_result *res;
    int row, rows;
    int64_t param[QSQL_PARAMS_MAX];
    int nparams;
};

/* A read-only PostgreSQL connection to uri (record/pgstore.h's
 * pgstore_connect: the store's defaults). 0, or -1 with the reason in err
 * (no password in it); qsql_close_pg either way. */
int qsql_open_pg(struct qsql_db *db, const char *uri, char *err, size_t errlen);
void qsql_close_pg(struct qsql_db *db);

/* Prepares lite (the SQLite text) on db; on PostgreSQL the text
 * qsql_dialect_pg derives from pg, or from lite when pg is NULL. 0, or -1 (qsql_errmsg;
 * nothing to finalize). */
int qsql_prepare(struct qsql *q, struct qsql_db *db, const char *lite, const char *pg);
/* Parameter i (1-based) is v. */
void qsql_bind(struct qsql *q, int i, int64_t v);
/* The next row (the first call runs the statement). */
enum qsql_rc qsql_step(struct qsql *q);
bool qsql_null(const struct qsql *q, int col);
/* A column as an integer: a PostgreSQL numeric's fraction is cut. */
int64_t qsql_int(const struct qsql *q, int col);
/* A column as text (NULL for NULL); valid until the next step. */
const char *qsql_text(const struct qsql *q, int col);
int qsql_bytes(const struct qsql *q, int col);
/* Runs the statement again from the start, with the parameters bound since. */
void qsql_reset(struct qsql *q);
void qsql_finalize(struct qsql *q);

/* The last failure on db, in words. */
const char *qsql_errmsg(struct qsql_db *db);
/* PostgreSQL: every statement from now on is cancelled after ms (once
 * set, set again only when it changes). SQLite: nothing (the caller's
 * progress handler keeps its budget). */
void qsql_timeout(struct qsql_db *db, unsigned ms);
/* PostgreSQL: the statements between qsql_snapshot(db, true) and
 * qsql_snapshot(db, false) read one snapshot (a read-only REPEATABLE READ
 * transaction), as a step of SQLite's writer thread reads the file between
 * two batches. SQLite: nothing. */
void qsql_snapshot(struct qsql_db *db, bool begin);
/* The database's file, or the PostgreSQL connection without its password. */
const char *qsql_name(struct qsql_db *db);

/* The PostgreSQL text of SQLite text lite by the rule above (malloc'd), or
 * NULL (out of memory, or lite uses what the rule does not derive). */
char *qsql_dialect_pg(const char *lite);

#endif
