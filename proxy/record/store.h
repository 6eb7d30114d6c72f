/* store: the SQLite database -- schema, upgrades, prepared statements,
 * batched transactions, and the compact encoding of recorded writes
 * (table `writes`, read back through the view `sets`; schema/schema.sql
 * documents the format).
 * Must never be called from the event loop thread once the recorder owns
 * it (only the writer thread touches the connection after rec_open), nor
 * print: a failure returns -1 with its reason in the caller's err buffer
 * (errlen bytes, NUL-terminated), for the caller to log. The connection
 * holds the file in exclusive locking mode from store_open to store_close:
 * no other process can read or write it meanwhile. */
#ifndef SLABTAP_STORE_H
#define SLABTAP_STORE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct rec_row;

#define STORE_SCHEMA_VERSION 5

struct store_writes; /* the encoder's statements, dictionaries and run state */

struct store {
    sqlite3 *db;
    sqlite3_stmt *ins_gets;
    sqlite3_stmt *ins_sample, *ins_class, *ins_settings, *ins_phase, *end_phase;
    struct store_writes *w;
    char path[1024];
};

/* Opens (creating if needed) the database at path, applies schema.sql and
 * upgrades older files. Returns 0, or -1 with a message in err. */
int store_open(struct store *s, const char *path, char *err, size_t errlen);
void store_close(struct store *s);

/* Creates the run row (and where its writes go). key_mode: "prefix" keeps
 * recorded key texts in the key_prefixes dictionary. Returns the run id,
 * or -1. */
int64_t store_run_begin(struct store *s, const char *name, const char *upstream,
                        const char *options, const char *key_mode);
/* Ends the run's last phase and writes its end time and row counts. 0, or
 * -1 with the reason in err. */
int store_run_end(struct store *s, int64_t run_id, uint64_t recorded, uint64_t dropped, char *err,
                  size_t errlen);
struct rec_job;
/* A batch: store_begin, any number of store_put_*, store_commit (which
 * rolls back instead when failed is non-zero, and then returns -1 with err
 * untouched unless the rollback itself failed). All return 0, or -1 with
 * the reason in err. A batch that is rolled back (or whose commit fails)
 * leaves nothing behind, dictionary entries included. Write rows are only
 * referenced by store_put_row and written by store_commit, sorted by seq
 * (so the table's pages fill in order): they must stay valid and unchanged
 * until store_commit returns; an error in one of them comes from there. */
int store_begin(struct store *s, char *err, size_t errlen);
int store_put_row(struct store *s, int64_t run_id, const struct rec_row *row, char *err,
                  size_t errlen);
int store_put_job(struct store *s, int64_t run_id, const struct rec_job *job, char *err,
                  size_t errlen);
int store_commit(struct store *s, int failed, char *err, size_t errlen);
/* The write aggregates (record/wagg.h) counted since they were last
 * written, in a transaction of their own: before a query reads them and at
 * the run's end (store_run_end calls it). Batches write them too, at most
 * every STORE_AGG_FLUSH_MS. 0, or -1 with the reason in err (they are kept
 * and written with a later batch). */
int store_write_aggregates(struct store *s, char *err, size_t errlen);
#define STORE_AGG_FLUSH_MS 250

/* Rows of `writes` and `arrivals` were deleted (record/retain.h) outside
 * the store's batches: what it cached about a run's last rows is looked up
 * again. */
void store_rows_expired(struct store *s);

/* Highest phase id in the file, so new phases continue from it. */
int64_t store_max_phase_id(struct store *s);

#endif
