/* runs: a recorded run read back for the slab model -- from a SQLite file
 * or a fleet's PostgreSQL alike, through record/reader.h: the same rows,
 * samples and aggregates give the same prediction.
 *
 * Owns the assembly of a run's prediction: its last `stats settings`, the
 * memcached flags slabtap knew and the chunk sizes its samples showed (the
 * ladder, by ladder_choose), its writes replayed through the model in
 * sequence order, what its first and last samples observed; or, when its
 * rows are gone, the same from its write aggregates (below).
 * Must never hold SQL (the engines' files do), write to the database, nor
 * print: failures return -1 with the reason in err. */
#ifndef SLABTAP_RECORD_RUNS_H
#define SLABTAP_RECORD_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/predict.h"
#include "record/reader.h"

/* Reads run run_id's recorded `stats settings` (the last one), the
 * memcached flags slabtap knew (run_meta 'memcached_flags') and every chunk
 * size its samples showed since those settings, picks the ladder with
 * ladder_choose (the proxy's rule for its class tags), replays its writes
 * through the model in recorded order, and sets what its last stats sample
 * observed and what changed memcached's memory between its first and last
 * sample (evictions, moves, expiries, flushes, a restart). 0, or -1 with a
 * message in err. Free with predict_free (also after a failure). */
/* A watch run's run_meta entry: the writes memcached did not log. */
#define RUNS_META_NOT_SEEN "memcached_dropped"

int runs_read_prediction(struct reader *rd, int64_t run_id, struct prediction *out, char *err,
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

/* runs_read_prediction from the aggregates: the same ladder and samples,
 * the live items estimated as above into out->predicted; out->live
 * (advise's histogram) the same, or with a sample each class's stored
 * sizes scaled to memcached's own count of the class (live_by_class),
 * exact_expected false unless info->exact (why_not says so). 0, or -1 with
 * a message in err (a run without aggregates says so). Free with
 * predict_free. */
int runs_read_prediction_agg(struct reader *rd, int64_t run_id, struct prediction *out,
                             struct runs_agg_info *info, char *err, size_t errlen);

/* --- from a snapshot (issue 22) -------------------------------------------
 * A snapshot (`slabtap snapshot`: one lru_crawler metadump) lists the items
 * memory holds at that moment, each with memcached's ITEM_ntotal: the
 * resident size distribution, advise's input as it is (no header
 * arithmetic, flags included). */

struct runs_snapshot_info {
    int64_t snap;           /* the snapshot read */
    int64_t t_ns, ended_ns; /* when it started and ended (0: cut short) */
    bool complete;          /* memcached said END */
    int64_t header_items;   /* the items its header counted */
    uint64_t items, bytes;  /* items read and their ITEM_ntotal */
    uint64_t class_differs; /* items memcached holds in another class than
                                 their size gives under the run's ladder */
    uint64_t too_large;     /* sizes the ladder has no class for */
    uint64_t never_fetched; /* fetch=no */
};

/* The run's snapshot snap (0: its latest) as a prediction: the run's
 * settings and ladder (runs_read_prediction's), out->live the items'
 * ITEM_ntotal, out->predicted their per-class counters (one chunk each,
 * or a chunked item's chunks), observed from the run's last sample. 0, or
 * -1 with err (a run without snapshots says so). Free with predict_free. */
int runs_read_snapshot(struct reader *rd, int64_t run_id, int64_t snap, struct prediction *out,
                       struct runs_snapshot_info *info, char *err, size_t errlen);

#endif
