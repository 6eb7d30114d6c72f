/* runs: the read side of a slabtap database -- which run a name or id
 * means, and a recorded run read back for the slab model.
 *
 * Owns every SQL query that reads runs for predict, advise and replay, and
 * the one rule for "the latest run": the highest run_id in `runs` (a run
 * exists from the moment the proxy starts, before its first write).
 * Must never write to the database. */
#ifndef SLABTAP_RECORD_RUNS_H
#define SLABTAP_RECORD_RUNS_H

#include <sqlite3.h>
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

#endif
