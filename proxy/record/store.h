/* store: the SQLite database -- schema, upgrades, prepared statements,
 * batched transactions, and the compact encoding of recorded writes
 * (table `writes`, read back through the view `sets`) and reads (tables
 * read_rows, read_keys, read_arrivals, read_extra, view `reads`, and
 * agg_reads; schema/schema.sql.in documents both formats).
 * Must never be called from the event loop thread once the recorder owns
 * it (only the writer thread touches the connection after rec_open), nor
 * print: a failure returns -1 with its reason in the caller's err buffer
 * (errlen bytes, NUL-terminated), for the caller to log. The file is in
 * WAL mode with normal locking: other processes read it while it is
 * written (sqlite3, slabtap model, load --replay-db; docs/live-sql.md),
 * and the one writer is kept one by PATH.lock (record/dblock.h), taken
 * before the file is opened and held to store_close. It also owns
 * PATH-reserve (256 KB of room, given back on a full disk so the run's
 * last row can be written; removed at store_close, reused after a crash)
 * and the WAL's checkpoints (a PASSIVE one when the WAL reaches its
 * autocheckpoint pages: never waits for a reader) and the count of frames
 * in it, which a reader's old snapshot keeps from being reset. */
#ifndef SLABTAP_STORE_H
#define SLABTAP_STORE_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record/dblock.h"

struct rec_row;

#define STORE_SCHEMA_VERSION 7

struct store_writes; /* the encoder's statements, dictionaries and run state */

struct store {
    sqlite3 *db;
    sqlite3_stmt *ins_gets;
    sqlite3_stmt *ins_sample, *ins_class, *ins_settings, *ins_phase, *end_phase;
    /* the shadows' (issue 23), prepared when first needed */
    sqlite3_stmt *shadow_sample, *shadow_class, *shadow_settings, *shadow_event, *shadow_counts;
    struct store_writes *w;
    char path[1024];
    /* the file and the WAL the connection writes (store_file_check) */
    dev_t dev, wal_dev;
    ino_t ino, wal_ino;
    bool last_full;     /* the last failed batch failed for a full disk */
    char reserve[1040]; /* PATH-reserve while it is held (store_reserve_take) */
    struct dblock lock; /* PATH.lock: the one writer */
    uint64_t page_size;
};

/* SQLite's autocheckpoint bound (pages), and what a WAL that grew past it
 * is cut back to when it starts over: this many times it */
#define STORE_WAL_AUTO_PAGES 1000
#define STORE_WAL_KEEP_FACTOR 4

/* Room kept for the run's last row on a full disk: a few WAL frames. */
#define STORE_RESERVE_BYTES (256 * 1024)
/* Takes PATH-reserve (STORE_RESERVE_BYTES, allocated) while there is room;
 * store_open does. store_reserve_release gives it back to the file system
 * (true when there was one); store_close does. */
void store_reserve_take(struct store *s);
bool store_reserve_release(struct store *s);

/* Opens (creating if needed) the database at path, applies schema.sql and
 * upgrades older files. Returns 0, or -1 with a message in err. */
int store_open(struct store *s, const char *path, char *err, size_t errlen);
void store_close(struct store *s);

/* Creates the run row (and where its writes go). key_mode: "prefix" keeps
 * recorded key texts in the key_prefixes dictionary. Returns the run id,
 * or -1. */
int64_t store_run_begin(struct store *s, const char *name, const char *upstream,
                        const char *options, const char *key_mode, const char *kind);
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
/* When the aggregates counted and not yet written are due (wall ns; 0:
 * none wait): the writer writes them while idle too, so a reader in
 * another process sees them at most STORE_AGG_FLUSH_MS late. */
int64_t store_aggregates_due_ns(const struct store *s);

/* Rows of `writes` and `arrivals` were deleted (record/retain.h) outside
 * the store's batches: what it cached about a run's last rows is looked up
 * again. */
void store_rows_expired(struct store *s);

/* Whether the path still names the file (and PATH-wal the WAL) the
 * connection writes: someone may delete or replace them while it runs, and
 * then every later row goes to a file nobody can read. Two stat() calls. */
#define STORE_FILE_STATES(X) \
    X(STORE_FILE_OK, "ok") \
    X(STORE_FILE_DELETED, "file_deleted") \
    X(STORE_FILE_REPLACED, "file_replaced") \
    X(STORE_FILE_WAL_DELETED, "wal_deleted")

enum store_file_state {
#define STORE_FILE_ENUM(name, label) name,
    STORE_FILE_STATES(STORE_FILE_ENUM)
#undef STORE_FILE_ENUM
        STORE_FILE__COUNT
};

const char *store_file_state_label(enum store_file_state st);
enum store_file_state store_file_check(struct store *s);
/* The WAL was deleted under the connection (the database file is still
 * there): its committed pages go into the database file (a checkpoint)
 * and a new PATH-wal is made (journal mode DELETE, then WAL again). 0, or
 * -1 with the reason in err. No transaction may be open. */
int store_wal_recreate(struct store *s, char *err, size_t errlen);
/* The file was deleted or replaced: store_close must not delete PATH-wal
 * when it is not this connection's WAL (SQLITE_FCNTL_PERSIST_WAL). */
void store_forsake(struct store *s);
/* The WAL's disk space back (wal_checkpoint(TRUNCATE)): 0, or -1. */
int store_wal_truncate(struct store *s, char *err, size_t errlen);
/* At most pages in the WAL before a checkpoint, and the WAL truncated to
 * that after one (PRAGMA journal_size_limit; the checkpoint is the
 * store's own WAL hook, PASSIVE). */
int store_wal_limit(struct store *s, unsigned pages, char *err, size_t errlen);
/* The WAL's frames in bytes (frames * (page size + 24)) after the last
 * commit: what a reader holding an old snapshot makes grow. */
uint64_t store_wal_bytes(const struct store *s);
/* A PASSIVE checkpoint now (never waits): true when every frame of the WAL
 * is in the database file afterwards, so the next commit starts the WAL
 * over unless a reader still reads it. */
bool store_wal_drained(struct store *s);
/* The pid of another process reading the WAL (holding one of SQLite's
 * read marks in PATH-shm; F_GETLK, nothing taken), 0 when none is seen. */
long store_wal_reader(const struct store *s);
/* The run row's counts, in the open batch's transaction: what the file
 * holds and what was counted lost so far, true even if the run never ends
 * cleanly (a full disk at exit). 0, or -1 with the reason in err. */
int store_put_counts(struct store *s, int64_t run_id, uint64_t recorded, uint64_t dropped,
                     char *err, size_t errlen);

/* Highest phase id in the file, so new phases continue from it. */
int64_t store_max_phase_id(struct store *s);

#endif
