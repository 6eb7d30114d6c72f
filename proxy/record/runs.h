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
 * name used by several runs means the latest of them. */
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

/* --- either store ------------------------------------------------------ */

/* A read-only handle on a SQLite file or a PostgreSQL database. */
struct runs_src;

/* db: a file (opened read-only) or a postgresql:// URI (libpq; the password
 * from the environment or a passfile). 0, or -1 with the reason in err
 * (*out NULL). */
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

/* The runs of the fleet: node LIKE node_like (NULL: any node; a SQLite
 * file keeps a run's node in run_meta 'node') and, when since_ns > 0, still
 * running or ended at or after since_ns (unix ns). Ids into *ids (malloc'd,
 * oldest first, each run whole), their nodes into *nodes (malloc'd, one
 * strdup'd string each; may be NULL). 0, or -1 with the reason in err. */
int runs_src_select(struct runs_src *s, const char *node_like, int64_t since_ns, int64_t **ids,
                    char ***nodes, size_t *n, char *err, size_t errlen);
void runs_select_free(int64_t *ids, char **nodes, size_t n);

/* "1 hour", "90 min", "30m", "2h", "1 day", "45s", "1h30m": nanoseconds, or -1. */
int64_t runs_parse_duration(const char *text);

#endif
