/* model_advise: given the item sizes a run left in memcached, how much
 * would other settings waste? Evaluates a ladder against a size histogram,
 * searches -f/-n, fits a custom slab_sizes ladder, and finds cliffs.
 *
 * Owns only arithmetic over slab_model ladders. Must never do I/O or
 * allocate per item: it works on a histogram of distinct item sizes. */
#ifndef SLABTAP_MODEL_ADVISE_H
#define SLABTAP_MODEL_ADVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/slab_model.h"

/* Items by ntotal (the size memcached stores, header included), ascending. */
struct advise_hist {
    uint64_t *ntotal;
    uint64_t *count;
    size_t n, cap;
};

void advise_hist_init(struct advise_hist *h);
void advise_hist_free(struct advise_hist *h);
/* Adds count items of size ntotal (any order); call advise_hist_sort after. */
int advise_hist_add(struct advise_hist *h, uint64_t ntotal, uint64_t count);
void advise_hist_sort(struct advise_hist *h);

struct advise_eval {
    uint64_t items;
    uint64_t requested; /* sum of ntotal */
    uint64_t allocated; /* sum of the chunk sizes the items occupy */
    uint64_t waste;     /* allocated - requested */
    double waste_pct;
    uint32_t classes_in_ladder;
    uint32_t classes_used;
    uint64_t chunked_items; /* larger than slab_chunk_max: header + chunks */
    uint64_t refused_items; /* larger than -I */
};

/* Waste of the histogram's items under ladder l (chunked items count their
 * header and every chunk, as memcached allocates them). */
void advise_evaluate(const struct slab_ladder *l, const struct advise_hist *h,
                     struct advise_eval *out);

/* Best -f (1.01 .. 2.00 by 0.01) and -n (8 .. 512 by 8) for the histogram,
 * other settings as in base; ties go to fewer classes. */
int advise_search_factor(const struct slab_settings *base, const struct advise_hist *h,
                         struct slab_settings *best, struct advise_eval *best_eval);

/* A slab_sizes ladder with at most max_sizes custom classes (memcached adds
 * slab_chunk_max as the last), minimising waste for the histogram: dynamic
 * programming over 8-byte buckets, exact for up to ADVISE_FIT_BUCKETS
 * distinct buckets and over merged buckets beyond. */
#define ADVISE_FIT_BUCKETS 1500
int advise_fit_sizes(const struct slab_settings *base, const struct advise_hist *h,
                     uint32_t max_sizes, struct slab_settings *fitted,
                     struct advise_eval *fitted_eval);

/* A cliff: a class whose chunk is more than twice the smallest item the
 * histogram puts in it -- the 63-class cap of -f 1.08 sends every item from
 * 13,801 to 524,288 bytes into a 512 KB chunk. */
struct advise_cliff {
    uint32_t class_id;
    uint32_t chunk_size;
    uint64_t min_item, max_item; /* the item sizes that land in it */
    uint64_t lo, hi;             /* the whole range of sizes that would */
    uint64_t items;
};

size_t advise_cliffs(const struct slab_ladder *l, const struct advise_hist *h,
                     struct advise_cliff *out, size_t max);

#endif
