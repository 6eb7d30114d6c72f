/* model_replay: a recorded run's writes replayed through the slab model --
 * what memcached's per-class counters should be -- next to what its last
 * stats sample says they were.
 *
 * Owns reading a run (settings, writes, last sample) from a slabtap
 * database and the rules for what each recorded answer did to memcached's
 * memory. Must never write to the database, and never call a prediction
 * exact when evictions, page moves, TTLs or unknown outcomes make it not. */
#ifndef SLABTAP_MODEL_REPLAY_H
#define SLABTAP_MODEL_REPLAY_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>

#include "model/advise.h"
#include "model/slab_model.h"

struct replay_observed {
    bool present;
    int64_t chunk_size, used_chunks, mem_requested, total_pages, number, evicted;
};

struct replay_result {
    int64_t run_id;
    char run_name[128];
    char version[64];
    struct slab_settings settings;
    struct slab_ladder ladder;
    struct slab_counters predicted;
    struct replay_observed observed[SLAB_MODEL_MAX_CLASSES + 1];
    bool have_sample;
    /* what the writes did */
    uint64_t rows, applied, failed, assumed, deletes, untracked;
    uint64_t live_items;
    /* why the prediction cannot be exact (0 when it can) */
    int64_t evictions, slabs_moved, reclaimed, foreign_items, rows_dropped;
    uint64_t ttl_writes;
    bool exact_expected;
    struct advise_hist live;   /* ntotal of the items left at the end */
};

/* run_id < 0: the latest run. settings NULL: the run's own (from its
 * recorded `stats settings`). 0, or -1 with a message in err. */
int model_replay_run(sqlite3 *db, int64_t run_id, struct replay_result *out, char *err,
                     size_t errlen);
void model_replay_free(struct replay_result *r);
/* Per-class comparison; returns the number of classes that differ. */
int model_replay_mismatches(const struct replay_result *r);
/* Prints the predicted-vs-observed table and the verdict. */
void model_replay_print(const struct replay_result *r, FILE *out);
/* Resolves NAME_OR_ID (NULL: latest) to a run id, or -1. */
int64_t model_replay_find_run(sqlite3 *db, const char *name_or_id);

#endif
