/* runs: the read side of a slabtap database -- which run a name or id
 * means, and a recorded run read back for the slab model -- from a SQLite
 * file or a fleet's PostgreSQL (a postgresql:// URI), the same rows and the
 * same samples from either.
 *
 * Owns every SQL query that reads runs for predict, advise and replay (in
 * both dialects, side by side), the runs_src reader that runs them on
 * either store, the fleet selection (runs of the nodes matching a LIKE
 * pattern, active within a time window), and the one rule for "the latest
 * run": the highest run_id in `runs` (a run exists from the moment the
 * proxy starts, before its first write).
 * Must never write to the database, nor print: failures return -1 (or
 * -1 ids) with the reason in err; a PostgreSQL password is never in it. */
#ifndef SLABTAP_RECORD_RUNS_H
#define SLABTAP_RECORD_RUNS_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/predict.h"

/* NAME_OR_ID (NULL: the latest run) to a run id; -1 when there is none. A
 * name used by several runs means the latest of them. The one resolver of
 * run names: `model --run`, `load --replay-run`. A SQLite file with a sets
 * table and no runs row for it (written by another tool) resolves an id
 * found in sets. */
int64_t runs_find(sqlite3 *db, const char *name_or_id);
/* The latest run id, or -1 when the file has no runs. A file with a sets
 * table but no runs (written by another tool, for replay) falls back to
 * the highest run_id in sets. */
int64_t runs_latest(sqlite3 *db);

/* Reads run run_id's recorded `stats settings` (the last one), the
 * memcached flags slabtap knew (run_meta 'memcached_flags') and every chunk
 * size its samples showed since those settings, picks the ladder with
 * ladder_choose (the proxy's rule for its class tags), replays its writes
 * through the model in recorded order, and sets what its last stats sample
 * observed and what changed memcached's memory between its first and last
 * sample (evictions, moves, expiries, flushes, a restart). 0, or -1 with a
 * message in err. Free with predict_free (also after a failure). */
int runs_read_prediction(sqlite3 *db, int64_t run_id, struct prediction *out, char *err,
                         size_t errlen);

/* Whether a SQLite file can be read as a slabtap database now, and if not
 * why, for every reader to say the same: locked (runs_locked_why), a file
 * cut short or damaged, not SQLite at all, or SQLite without slabtap's
 * tables. The reason into err (without the path). A recording proxy does
 * not lock readers out (WAL, normal locking: docs/live-sql.md). */
#define RUNS_DB_STATES(X) \
    X(RUNS_DB_OK, "a slabtap database") \
    X(RUNS_DB_LOCKED, "database is locked") \
    X(RUNS_DB_HALF_WRITTEN, "half-written or damaged") \
    X(RUNS_DB_NOT_SQLITE, "not a SQLite database") \
    X(RUNS_DB_NOT_SLABTAP, "not a slabtap database")

enum runs_db_state {
#define RUNS_DB_ENUM(name, label) name,
    RUNS_DB_STATES(RUNS_DB_ENUM)
#undef RUNS_DB_ENUM
        RUNS_DB__COUNT
};
const char *runs_db_state_label(enum runs_db_state st);
enum runs_db_state runs_sqlite_check(sqlite3 *db, const char *path, char *err, size_t errlen);
/* A reader's busy timeout (ms): what holds the file may be a transaction
 * of another program; the recording proxy never blocks readers. */
#define RUNS_BUSY_MS 5000
/* The message of a read that found path locked (SQLITE_BUSY/LOCKED; msg:
 * SQLite's words): "database is locked by WHO: msg", WHO the process
 * holding SQLite's lock bytes of the file (as its lock file describes it
 * when that is the recording proxy, record/dblock.h), or the recording
 * proxy, or "another process". Every reader says it the same way. */
void runs_locked_why(const char *path, const char *msg, char *err, size_t errlen);

/* --- either store ------------------------------------------------------ */

/* A read-only handle on a SQLite file or a PostgreSQL database. */
struct runs_src;

/* db: a file (opened read-only; runs_sqlite_check says why one cannot be
 * read) or a postgresql:// URI (libpq; the password from the environment
 * or a passfile). 0, or -1 with the reason in err (*out NULL). */
int runs_src_open(struct runs_src **out, const char *db, char *err, size_t errlen);
void runs_src_close(struct runs_src *s);
bool runs_src_is_pg(const struct runs_src *s);
/* The file, or the connection string without its password. */
const char *runs_src_name(const struct runs_src *s);
/* The SQLite handle (NULL on PostgreSQL), for what only reads SQLite files. */
sqlite3 *runs_src_sqlite(struct runs_src *s);

/* runs_find and runs_read_prediction on either store. */
int64_t runs_src_find(struct runs_src *s, const char *name_or_id);
int runs_src_prediction(struct runs_src *s, int64_t run_id, struct prediction *out, char *err,
                        size_t errlen);

/* --- from the aggregates (issue 14) -------------------------------------
 * When retention has deleted a run's rows, its write aggregates (agg_items,
 * agg_answers: record/wagg.h) are still there. They give the sizes of the
 * items the run stored, per class -- not which key each was, so the
 * overwrites and deletes that decide what is left cannot be followed. The
 * live set is estimated as the stored sizes scaled to the run's last
 * curr_items (memcached's own count; without a sample, the stores less
 * the deletes): exact when every stored item is still live, and otherwise
 * each class's live items lie within [max(0, N - (W - W_c)), min(W_c, N)]
 * (N live, W stored, W_c stored in the class). */

enum runs_basis { RUNS_BASIS_ROWS, RUNS_BASIS_AGGREGATES };

/* Whether a run's rows are all there, and what else it has. */
struct runs_rows_status {
    int64_t recorded; /* runs.rows_recorded (-1: unknown) */
    int64_t present;  /* rows of the run in `writes` (-1: unknown) */
    bool complete;    /* present >= recorded, or nothing to tell */
    bool have_aggs;   /* the run is in agg_item_runs */
};

struct runs_agg_info {
    uint64_t stored, refused, failed; /* item-storing writes by outcome (agg_items) */
    uint64_t deletes;                 /* delete/md that deleted (agg_answers) */
    uint64_t writes;                  /* every write (agg_answers) */
    uint64_t live;                    /* the live items the estimate holds (N) */
    bool from_curr_items;             /* N is the last sample's curr_items */
    bool exact; /* every stored item is still live: the written sizes are the live ones */
    /* per class (the class that counts the item, `stats items`): stored
     * writes, the estimate, and the bound above */
    uint64_t written[SLAB_MODEL_MAX_CLASSES + 1], est[SLAB_MODEL_MAX_CLASSES + 1];
    uint64_t lo[SLAB_MODEL_MAX_CLASSES + 1], hi[SLAB_MODEL_MAX_CLASSES + 1];
    uint64_t wide_items; /* live estimate in buckets >= 16 KB (sizes within 1/128) */
    /* out->live (advise's histogram) scaled class by class to the last
     * sample's `stats items` number instead (per_class_live items) */
    bool live_by_class;
    uint64_t per_class_live;
};

/* SQLite only (PostgreSQL keeps no aggregates: complete, no aggs). 0 or -1. */
int runs_src_rows_status(struct runs_src *s, int64_t run_id, struct runs_rows_status *out);
/* runs_src_prediction from the aggregates: the same ladder and samples,
 * the live items estimated as above into out->predicted; out->live
 * (advise's histogram) the same, or with a sample each class's stored
 * sizes scaled to memcached's own count of the class (live_by_class), exact_expected false unless info->exact (why_not
 * says so). 0, or -1 with a message in err. Free with predict_free. */
int runs_src_prediction_agg(struct runs_src *s, int64_t run_id, struct prediction *out,
                            struct runs_agg_info *info, char *err, size_t errlen);

/* The two above on a SQLite handle already open (the writer's: the
 * page's advice). */
int runs_read_rows_status(sqlite3 *db, int64_t run_id, struct runs_rows_status *out);
int runs_read_prediction_agg(sqlite3 *db, int64_t run_id, struct prediction *out,
                             struct runs_agg_info *info, char *err, size_t errlen);

/* The runs of the fleet: node LIKE node_like (NULL: any node; a SQLite
 * file keeps a run's node in run_meta 'node') and, when since_ns > 0, still
 * running or ended at or after since_ns (unix ns). Ids into *ids (malloc'd,
 * oldest first, each run whole), their nodes into *nodes (malloc'd, one
 * strdup'd string each; may be NULL). 0, or -1 with the reason in err. */
int runs_src_select(struct runs_src *s, const char *node_like, int64_t since_ns, int64_t **ids,
                    char ***nodes, size_t *n, char *err, size_t errlen);
void runs_select_free(int64_t *ids, char **nodes, size_t n);

#endif
