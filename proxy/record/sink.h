/* sink: where the recorder's rows go -- a SQLite file (record/store.h) or a
 * PostgreSQL database (record/pgstore.h), chosen by what --db names, behind
 * one set of calls, so the recorder and app never ask which.
 *
 * Owns the one store it opened and the run's node. Must never be used by
 * two threads at once (the writer thread owns it once the recorder has
 * it), nor print: failures return -1 with the reason in err (a PostgreSQL
 * password never in it: pgstore scrubs its texts, sink_name shows the
 * connection string through pgstore_redact). */
#ifndef SLABTAP_SINK_H
#define SLABTAP_SINK_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/pgstore.h"
#include "record/store.h"

struct rec_row;
struct rec_job;

enum sink_kind { SINK_SQLITE, SINK_PG };

/* The run a proxy records: the runs row's fields. node: the fleet member
 * (PostgreSQL: runs.node; SQLite: run_meta 'node', no schema change). */
struct sink_run {
    const char *name, *upstream, *options, *key_mode, *node;
    const char *kind; /* runs.kind: what recorded it (NULL: "proxy"; "watch",
                         "snapshot", "experiment") */
};

/* run_meta key of the last batch a run committed (PostgreSQL): written in
 * the batch's own transaction, so a batch whose COMMIT answer was lost is
 * known to be in or out before it is sent again (exactly once). */
#define SINK_BATCH_KEY "committed_batch"

struct sink {
    enum sink_kind kind;
    bool open;
    struct store sq;
    struct pgstore pg;
    char name[PGSTORE_URI_MAX]; /* the file, or the redacted connection string */
    unsigned
        agg_flush_ms; /* PostgreSQL: --agg-interval, given to the store it opens (0: default) */
};

/* Whether --db names a PostgreSQL database (a postgresql:// URI). */
bool sink_is_remote(const char *db);
/* Sets kind and name from db without opening anything (sink_open may
 * follow, now or later, on whatever thread owns the sink then). */
void sink_init(struct sink *k, const char *db);
/* Opens what sink_init named: 0, or -1 with the reason in err (the sink is
 * left closed and may be opened again). */
int sink_open(struct sink *k, const char *db, char *err, size_t errlen);
void sink_close(struct sink *k);
const char *sink_name(const struct sink *k);

int64_t sink_run_begin(struct sink *k, const struct sink_run *run, char *err, size_t errlen);
int sink_run_end(struct sink *k, int64_t run_id, uint64_t recorded, uint64_t dropped, char *err,
                 size_t errlen);
/* A batch, as store.h's. batch_no > 0: the batch's number in its run,
 * recorded with it where a commit can be ambiguous (PostgreSQL). */
int sink_begin(struct sink *k, char *err, size_t errlen);
int sink_put_row(struct sink *k, int64_t run_id, const struct rec_row *row, char *err,
                 size_t errlen);
int sink_put_job(struct sink *k, int64_t run_id, const struct rec_job *job, char *err,
                 size_t errlen);
int sink_commit(struct sink *k, int64_t run_id, int64_t batch_no, int failed, char *err,
                size_t errlen);
/* When the aggregates counted and not yet written are due (wall ns; 0:
 * none wait), and writing them in a transaction of their own (store.h's
 * and pgstore.h's). */
int64_t sink_aggregates_due_ns(const struct sink *k);
int sink_write_aggregates(struct sink *k, char *err, size_t errlen);
/* The highest batch number run_id committed (SINK_BATCH_KEY): >= 0, or -1
 * when unknown (SQLite: a local commit is never ambiguous; or the server
 * cannot be asked now). */
int64_t sink_committed_batch(struct sink *k, int64_t run_id);
/* Where new phases continue from (SQLite: the file's highest; PostgreSQL:
 * run_id's, 0 for a new run). */
int64_t sink_max_phase_id(struct sink *k, int64_t run_id);
/* The SQLite connection for the web API's queries; NULL for PostgreSQL. */
sqlite3 *sink_sqlite(struct sink *k);

/* run_meta's value of key for run_id set to value in db (a file or a
 * postgresql:// URI), on a connection of its own, outside any recorder:
 * what `slabtap model --save` keeps for the page. 0, or -1 with the reason
 * in err (a locked file says by whom; never a password). */
int sink_save_meta(const char *db, int64_t run_id, const char *key, const char *value, char *err,
                   size_t errlen);

#endif
