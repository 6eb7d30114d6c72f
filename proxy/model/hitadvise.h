/* hitadvise: which memcached settings serve the most hits from the memory
 * an operator has. Candidate ladders (the run's own, a -f grid, slab_sizes
 * ladders fitted to the item-weighted and to the request-weighted size
 * distribution) crossed with slab_automove 0/1/2, each run request by
 * request through the cache model (model/capacity.h: capacity_run) at
 * equal memory ACTUALLY USED -- total_malloced within one budget, never at
 * equal -m: memcached grants each class its first page past -m, so a
 * ladder of many classes at the same -m uses more memory and would win by
 * it.
 *
 * Owns: the candidate list, fitting each candidate's -m so that its
 * simulated total_malloced stays within the budget, the ranking by
 * predicted hit ratio over the measured window, the smallest memory that
 * keeps a hit ratio, and the miss-ratio curve points.
 * Must never: do I/O, recommend a candidate over the budget, or recommend
 * anything but the current settings unless it predicts strictly more hits
 * (by at least HITADVISE_MIN_GAIN of the gets measured).
 */
#ifndef SLABTAP_MODEL_HITADVISE_H
#define SLABTAP_MODEL_HITADVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/advise.h"
#include "model/capacity.h"
#include "model/slab_model.h"

#define HITADVISE_MAX 64
#define HITADVISE_LABEL_MAX 48
/* A candidate must beat the current settings by this share of the gets
 * measured to be recommended (0.1 point of hit ratio): the model's own
 * error is larger than that, so smaller gains are ties. */
#define HITADVISE_MIN_GAIN 0.001
/* -m fitting: at most this many simulations per candidate */
#define HITADVISE_FIT_TRIES 5
#define HITADVISE_MB (1024ull * 1024ull)

struct hitadvise_input {
    const struct slab_settings *current; /* the run's ladder and item sizes */
    unsigned current_automove;           /* the run's slab_automove (1.6.18 default: 1) */
    enum capacity_lru lru;               /* the run's LRU (segmented unless no_lru_maintainer) */
    const struct capacity_seq *seq;      /* the run's requests, reads included */
    size_t measure_from;                 /* hits counted from this op on */
    uint64_t current_mem_mb;             /* the run's -m */
    /* bytes of memory actually used that every candidate must stay within;
     * 0: what the current settings use at the run's -m */
    uint64_t budget;
    uint32_t max_classes; /* ladders with more classes are not tried (2..63) */
    bool try_automove;    /* cross the best ladders with slab_automove 0/1/2 */
};

struct hitadvise_candidate {
    char label[HITADVISE_LABEL_MAX];
    struct slab_settings s; /* s.mem_limit: the -m fitted to the budget */
    unsigned automove;
    uint64_t mem_mb; /* -m given to memcached */
    struct capacity_result res;
    double hit_ratio; /* over the measured window */
    bool over_budget; /* even the smallest -m tried uses more than the budget */
    uint32_t classes; /* classes in its ladder */
};

/* The request-weighted size distribution: each get of a key from op
 * measure_from on adds the key's current item size (its last write) once;
 * reads of keys never written add nothing. 0 or -1 (memory). */
int hitadvise_hist_requests(const struct capacity_seq *s, size_t from, bool use_cas,
                            struct advise_hist *h);

/* Runs s with automove at the largest -m (at most budget's MB) whose
 * simulated total_malloced is within budget; fills c. 0, or -1 when out
 * of memory or the settings give no ladder. */
int hitadvise_fit(const struct hitadvise_input *in, const char *label,
                  const struct slab_settings *s, unsigned automove, uint64_t budget,
                  struct hitadvise_candidate *c);

/* Every candidate into out[HITADVISE_MAX] (*n of them; [0] the current
 * settings at the run's -m), *budget the budget used. Returns the index of
 * the recommendation (0: keep the current settings), -1 on failure. */
int hitadvise_run(const struct hitadvise_input *in, struct hitadvise_candidate *out, size_t *n,
                  uint64_t *budget);

/* The smallest budget, in whole MB from 1 to hi_mb, at which settings s
 * (with automove) predict a hit ratio of at least target; *c the candidate
 * there. 0 when found, 1 when even hi_mb falls short, -1 on failure.
 * Bisection: assumes more memory never loses hits (true of LRU per class
 * up to the page granularity; a point off by one MB is possible). */
int hitadvise_min_memory(const struct hitadvise_input *in, const struct slab_settings *s,
                         unsigned automove, double target, uint64_t hi_mb,
                         struct hitadvise_candidate *c);

/* The miss-ratio curve: settings s run at budgets mem[0..n) (bytes used).
 * out[i] the candidate at mem[i]. 0 or -1. */
int hitadvise_mrc(const struct hitadvise_input *in, const struct slab_settings *s,
                  unsigned automove, const uint64_t *mem, size_t n,
                  struct hitadvise_candidate *out);

/* The same for a run recorded with --sample-keys 1/sample (every request
 * of one key in sample, model/capacity.h capacity_shards_run): each point
 * is the sample simulated at mem[i] / sample standing for the whole cache
 * at mem[i] (SHARDS), -m = mem[i] with no fitting to memory used; a point
 * whose scaled memory leaves fewer than CAPACITY_SHARDS_MIN_PAGES pages per
 * class the sample uses is marked over_budget and not run. 0 or -1. */
int hitadvise_mrc_sampled(const struct hitadvise_input *in, const struct slab_settings *s,
                          unsigned automove, uint32_t sample, const uint64_t *mem, size_t n,
                          struct hitadvise_candidate *out);

/* Settings s with automove at -m mem_mb, an empty cache from op `from`
 * on, hits counted from there: what a shadow memcached (issue 23) started
 * at op `from` with those flags would do with the requests; sample > 1:
 * the shadow of 1/sample of the keys (capacity_seq_sample: the same key
 * sampler) at mem_mb itself, its own counts (not scaled). 0, or -1 (out
 * of memory, or settings that give no ladder). */
int hitadvise_at(const struct hitadvise_input *in, const struct slab_settings *s, unsigned automove,
                 uint64_t mem_mb, uint32_t sample, size_t from, struct hitadvise_candidate *out);
/* n budgets spread geometrically from lo to hi bytes (whole MB, distinct,
 * ascending) into mem[n]; returns how many. */
size_t hitadvise_mrc_points(uint64_t lo, uint64_t hi, size_t n, uint64_t *mem);

#endif
