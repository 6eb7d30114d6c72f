/* pgstore: the PostgreSQL store -- the same shape as store.h (open, run,
 * batches of rows and jobs, run end, close) for a fleet of proxies writing
 * into one server: pg/schema.sql (derived from schema/schema.sql.in,
 * embedded), recorded writes sent
 * with one binary COPY per batch into `writes` (partitioned by day of t_ns,
 * partitions created on demand), jobs with prepared INSERTs in the same
 * transaction, and the write and read aggregates (record/wagg.h,
 * record/ragg.h: schema.sql's agg_* tables, counted from every row,
 * sampled-out ones too), carried across batches and upserted at most every
 * PGSTORE_AGG_FLUSH_MS (store.h's STORE_AGG_FLUSH_MS unless the build sets it) inside the
 * transaction of the batch then due, or of their own while the writer is
 * idle (pgstore_write_aggregates) and at the run's end. A transaction that
 * upserts or counts them also sets run_meta 'agg_flush' to a token: when
 * its COMMIT has no answer the next one reads it back before it begins, so
 * the carried counts are cleared only when they went in and a batch
 * committed once -- or shipped from the spill once (sink.h's
 * committed_batch) -- adds its rows' counts exactly once. kill -9 loses
 * the counts not upserted yet (at most one interval's).
 * Owns one libpq connection, its prepared statements, the batch's COPY
 * buffer (PGSTORE_COPY_BUF bytes, sent whenever it fills), the carried
 * aggregate counters and the set of day partitions it knows exist.
 * Must never be used by two threads at once (the writer thread owns it once
 * the recorder has it), nor print: failures return -1 with the reason in
 * the caller's err buffer, for the caller to log. Must never put a password
 * into a message: the connection string is shown through pgstore_redact
 * and libpq's texts are scrubbed of the password the connection used. */
#ifndef SLABTAP_PGSTORE_H
#define SLABTAP_PGSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/store.h"

struct rec_row;
struct rec_job;

#define PGSTORE_SCHEMA_VERSION 4

/* The COPY data of a batch is sent in pieces of at most this many bytes;
 * one encoded row takes at most PGSTORE_ROW_MAX. */
#define PGSTORE_COPY_BUF (256 * 1024)
#define PGSTORE_ROW_MAX 4096
/* Day partitions remembered as existing (older ones are looked up again). */
#define PGSTORE_DAYS_MAX 64
/* The carried aggregates are upserted at most this often by default
 * (SQLite's interval, store.h); --agg-interval sets another per proxy
 * (pgstore.agg_flush_ms), a build another default (-DPGSTORE_AGG_FLUSH_MS=N). */
#ifndef PGSTORE_AGG_FLUSH_MS
#define PGSTORE_AGG_FLUSH_MS STORE_AGG_FLUSH_MS
#endif
/* Runs whose liveness lock this connection holds (retaken after a reconnect). */
#define PGSTORE_RUNS_MAX 16
/* Connection strings longer than this are refused. */
#define PGSTORE_URI_MAX 1024

struct pgstore_state; /* statements, dictionaries, batch, partition cache */

struct pgstore {
    struct pg_conn *conn; /* libpq's PGconn */
    struct pgstore_state *st;
    char uri[PGSTORE_URI_MAX];   /* as given (may hold a password: never shown) */
    char shown[PGSTORE_URI_MAX]; /* pgstore_redact(uri): what messages show */
    unsigned agg_flush_ms;       /* --agg-interval (0: PGSTORE_AGG_FLUSH_MS); set after open */
};

/* Whether --db names a PostgreSQL database rather than a SQLite file: a
 * postgresql:// or postgres:// URI. */
bool pgstore_is_uri(const char *db);

/* The connection string without its password (URI user:password@, a
 * password= parameter, or a password= keyword), for messages and logs.
 * Always NUL-terminates out (cut to outlen). */
void pgstore_redact(const char *uri, char *out, size_t outlen);

/* A libpq connection (PGconn) to uri with slabtap's defaults -- connect_timeout
 * 10 s, application_name slabtap, server options (NULL: none) -- which the
 * string overrides, and UTF8, which it cannot. NULL only when out of
 * memory: check PQstatus. The reader's and the store's one way to connect. */
struct pg_conn *pgstore_connect(const char *uri, const char *options);
/* "<shown>: <what>: <reason>" into err, libpq's multi-line reason on one
 * line, every occurrence of the password pw (may be NULL) replaced by
 * "***". Returns -1. */
int pgstore_say(const char *shown, const char *pw, const char *what, const char *reason, char *err,
                size_t errlen);
/* The password pw replaced by "***" in msg (cap bytes). */
void pgstore_scrub(const char *pw, char *msg, size_t cap);

/* Connects (libpq connection string: URI or keyword/value; password from
 * the string, PGPASSWORD or ~/.pgpass; connect_timeout 10 s unless it says
 * otherwise; synchronous_commit off unless its `options` say otherwise),
 * applies pg/schema.sql when the database's schema is older or
 * differs (refusing a newer one), and marks runs whose proxy is gone as
 * crashed. 0, or -1 with the reason in err; pgstore_close either way. */
int pgstore_open(struct pgstore *s, const char *uri, char *err, size_t errlen);
void pgstore_close(struct pgstore *s);

/* Creates the run row for node (the fleet member; "" for none) and holds
 * its liveness lock until pgstore_close. Returns the run id (an identity:
 * unique across nodes, no lock any other node waits for), or -1 with the
 * reason in err. */
int64_t pgstore_run_begin(struct pgstore *s, const char *name, const char *upstream,
                          const char *options, const char *key_mode, const char *node,
                          const char *kind, char *err, size_t errlen);
/* Writes the carried aggregates, ends the run's last phase and writes its
 * end time and row counts. */
int pgstore_run_end(struct pgstore *s, int64_t run_id, uint64_t recorded, uint64_t dropped,
                    char *err, size_t errlen);

/* A batch, as store.h's: pgstore_begin, any number of pgstore_put_*,
 * pgstore_commit (rolls back instead when failed is non-zero, then returns
 * -1 with err untouched unless the rollback failed). Write rows are only
 * referenced by pgstore_put_row and sent by pgstore_commit in one COPY (reads
 * likewise, in another): they must stay valid and unchanged until it
 * returns. A row marked sampled_out (--sample-keys) is only counted in the
 * aggregates. A failed or rolled back
 * batch leaves nothing behind. pgstore_begin reconnects a connection that
 * was lost. All return 0, or -1 with the reason in err. */
int pgstore_begin(struct pgstore *s, char *err, size_t errlen);
int pgstore_put_row(struct pgstore *s, int64_t run_id, const struct rec_row *row, char *err,
                    size_t errlen);
int pgstore_put_job(struct pgstore *s, int64_t run_id, const struct rec_job *job, char *err,
                    size_t errlen);
int pgstore_commit(struct pgstore *s, int failed, char *err, size_t errlen);

/* When the carried aggregates are due (wall ns; 0: none wait): the writer
 * upserts them while idle too, so readers see them at most
 * PGSTORE_AGG_FLUSH_MS late. */
int64_t pgstore_aggregates_due_ns(const struct pgstore *s);
/* The carried aggregates now, in a transaction of their own (pgstore_run_end
 * calls it first). 0, or -1 with the reason in err (they are kept and
 * written with a later transaction). */
int pgstore_write_aggregates(struct pgstore *s, char *err, size_t errlen);

/* Phase ids are per run in PostgreSQL ((run_id, phase_id) is the key): the
 * highest of run_id's, 0 for a new run (or on error). */
int64_t pgstore_max_phase_id(struct pgstore *s, int64_t run_id);

/* run_meta's value of key for run_id as an integer (0 when absent), -1 when
 * the server cannot be asked (reconnects a lost connection first). */
int64_t pgstore_meta_int(struct pgstore *s, int64_t run_id, const char *key);

/* run_meta's value of key for run_id set to value, on a connection of its
 * own (uri's database, whose schema a proxy applied): what `slabtap model
 * --save` keeps for the page. 0, or -1 with the reason in err. */
int pgstore_save_meta(const char *uri, int64_t run_id, const char *key, const char *value,
                      char *err, size_t errlen);

#endif
