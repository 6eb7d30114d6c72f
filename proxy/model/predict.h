/* predict: a recorded run's writes replayed through the slab model --
 * what memcached's per-class counters should be -- next to what its last
 * stats sample says they were.
 *
 * Owns the rules for what each recorded answer did to memcached's memory
 * and the verdict. Must never do I/O (record/runs.c reads the rows from a
 * database and feeds them in), and never call a prediction exact when
 * evictions, page moves, TTLs or unknown outcomes make it not. */
#ifndef SLABTAP_MODEL_PREDICT_H
#define SLABTAP_MODEL_PREDICT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/advise.h"
#include "model/slab_model.h"

struct predict_observed {
    bool present;
    int64_t chunk_size, used_chunks, mem_requested, total_pages, number, evicted;
};

struct prediction {
    int64_t run_id;
    char run_name[128];
    char version[64];
    struct slab_settings settings;
    struct slab_ladder ladder;
    struct slab_counters predicted;
    struct predict_observed observed[SLAB_MODEL_MAX_CLASSES + 1];
    bool have_sample;
    /* what the writes did */
    uint64_t rows, applied, failed, assumed, deletes, untracked;
    uint64_t live_items;
    /* why the prediction cannot be exact (0 when it can) */
    int64_t evictions, slabs_moved, reclaimed, foreign_items, rows_dropped;
    uint64_t ttl_writes;
    int64_t observed_curr_items; /* curr_items of the last sample */
    bool exact_expected;
    struct advise_hist live; /* ntotal of the items left at the end */
    struct live_map *keys;   /* live items by key hash, while rows are applied */
};

/* One recorded write, delete, touch or incr/decr as predict needs it. */
struct predict_write {
    const char *cmd; /* "set", "ms", "delete", ... */
    char ms_mode;    /* ms M<mode>, 0: none */
    uint64_t key_hash;
    uint32_t key_len;
    int64_t value_len; /* -1: none (incr, touch, delete) */
    uint32_t flags;
    const char *answer; /* memcached's answer, "noreply"/"quiet" when none */
    bool has_ttl;       /* exptime != 0 */
};

struct live_map;

/* The run's writes in order: predict_begin, predict_apply for each row,
 * predict_observe for each class of the run's last sample (and the
 * sample's global counters set in r: evictions, slabs_moved, reclaimed,
 * observed_curr_items, rows_dropped), then predict_end. Any order of
 * predict_observe relative to the rows. 0, or -1 with a message in err. */
int predict_begin(struct prediction *r, int64_t run_id, const struct slab_settings *s, char *err,
                  size_t errlen);
void predict_apply(struct prediction *r, const struct predict_write *w);
void predict_observe(struct prediction *r, uint32_t class_id, const struct predict_observed *o);
/* Sizes what is left and decides whether an exact match is to be expected.
 * 0, or -1 when out of memory. */
int predict_end(struct prediction *r);
void predict_free(struct prediction *r);
/* Per-class comparison; returns the number of classes that differ. */
int predict_mismatches(const struct prediction *r);
/* Prints the predicted-vs-observed table and the verdict. */
void predict_print(const struct prediction *r, FILE *out);
#endif
