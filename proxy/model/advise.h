/* model_advise: given the item sizes a run left in memcached, how much
 * would other settings waste, and which settings hold the most of it in
 * the memory there is? Evaluates a ladder against a size histogram,
 * searches -f/-n, fits a custom slab_sizes ladder, finds cliffs, and ranks
 * candidate settings by an operator's objective with the capacity model
 * (model/capacity.h: whole pages, the memory limit, evictions).
 *
 * Owns only arithmetic over slab_model ladders and capacity results. Must
 * never do I/O, allocate per item in the waste arithmetic (it works on a
 * histogram of distinct item sizes), or recommend settings that lose to
 * the current ones on the objective (advise_capacity picks the current
 * settings then). */
#ifndef SLABTAP_MODEL_ADVISE_H
#define SLABTAP_MODEL_ADVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/capacity.h"
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
    /* whole pages the items need, ceil(chunks / perslab) per class: the
     * live set's memory with page slack, without the history's peaks */
    uint64_t pages;
};

/* Waste of the histogram's items under ladder l (chunked items count their
 * header and every chunk, as memcached allocates them). */
void advise_evaluate(const struct slab_ladder *l, const struct advise_hist *h,
                     struct advise_eval *out);

/* Best -f (1.01 .. 2.00 by 0.01) and -n (8 .. 512 by 8) for the histogram,
 * other settings as in base; ties go to fewer classes. */
int advise_search_factor(const struct slab_settings *base, const struct advise_hist *h,
                         struct slab_settings *best, struct advise_eval *best_eval);

/* The same with at most max_classes classes in the ladder (2..63). */
int advise_search_factor_max(const struct slab_settings *base, const struct advise_hist *h,
                             uint32_t max_classes, struct slab_settings *best,
                             struct advise_eval *best_eval);

/* Up to k distinct -f/-n ladders (same grid, at most max_classes classes)
 * whose items need the fewest whole pages (advise_eval.pages; ties: less
 * waste), best first, into out[k]. Returns how many. */
size_t advise_factor_shortlist(const struct slab_settings *base, const struct advise_hist *h,
                               uint32_t max_classes, size_t k, struct slab_settings *out);

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

/* --- capacity: settings ranked by an objective ------------------------- */

/* The live items at the end of ops [from, to) of s (no memory limit), as a
 * histogram of ntotal (use_cas: 8 bytes more each). 0 or -1 (memory). */
int advise_hist_from_seq(const struct capacity_seq *s, size_t from, size_t to, bool use_cas,
                         struct advise_hist *h);

#define ADVISE_LABEL_MAX 48
#define ADVISE_MAX_CANDIDATES 24

struct advise_candidate {
    char label[ADVISE_LABEL_MAX]; /* "the run's own settings", "-f/-n least waste", ... */
    struct slab_settings s;
    struct advise_eval waste;   /* chunk waste of the histogram's items */
    struct capacity_result cap; /* the write sequence at the objective's memory */
    int vs_current;             /* capacity_compare against candidate 0 */
    /* items objective: it ends with more pages than both -m and the current
     * settings take (each class's first page is granted past -m), so it
     * holds more only by using more memory: never recommended */
    bool over_limit;
};

/* Called by advise_capacity after each candidate it evaluated (done of
 * at most total; total is an upper bound, the run may end earlier); false
 * stops it (advise_capacity returns -1). */
typedef bool (*advise_progress_fn)(void *ud, size_t done, size_t total);

/* Candidates for the objective, evaluated on ops [from, to) of seq and on
 * histogram h: [0] the current settings, then the least-waste -f/-n, the
 * -f/-n ladders needing the fewest pages, and slab_sizes ladders fitted
 * with several class counts (the fit minimises chunk waste; fewer classes
 * leave fewer partly filled pages), every ladder with at most max_classes
 * classes. The memory objective runs the sequence without a limit, the
 * items objective in mem_limit bytes. Fills out[ADVISE_MAX_CANDIDATES] and
 * *n; returns the index of the recommendation: the best on the objective
 * among those not over_limit, 0 (the current settings) unless another
 * strictly beats them; -1 when out of memory or the current settings give
 * no ladder. */
int advise_capacity(const struct slab_settings *current, const struct advise_hist *h,
                    const struct capacity_seq *seq, size_t from, size_t to,
                    enum capacity_objective o, uint64_t mem_limit, uint32_t max_classes,
                    struct advise_candidate *out, size_t *n, advise_progress_fn progress,
                    void *progress_ud);

/* A working set as a write sequence, for the capacity model when only the
 * histogram h of the items left is known (the write aggregates): each item
 * a key of its own written once, in an order shuffled by a fixed seed (the
 * sizes arrive mixed, as a working set built over time does). Appends to
 * seq; 0, or -1 when out of memory. */
int advise_seq_from_hist(const struct advise_hist *h, bool use_cas, struct capacity_seq *seq);

/* Candidate c's settings run on another part of the sequence (hold-out):
 * 0 or -1. */
int advise_capacity_eval(const struct slab_settings *s, const struct capacity_seq *seq, size_t from,
                         size_t to, enum capacity_objective o, uint64_t mem_limit,
                         struct capacity_result *out);

#endif
