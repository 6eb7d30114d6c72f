/* predict: a recorded run's writes replayed through the slab model --
 * what memcached's per-class counters should be -- next to what its last
 * stats sample says they were.
 *
 * Owns the rules for what each recorded answer did to memcached's memory
 * (stored items, items memcached allocated and freed again, incr/decr
 * that grow a value) and the verdict with its reasons. The ladder comes
 * from ladder_source (the same choice the proxy tags writes with). Must
 * never open, read or write anything of its own (record/runs.c reads the
 * rows from a database and feeds them in; predict_print writes the table
 * only to the stream its caller passes), and never call a prediction exact
 * when evictions, page moves, expiries, flushes, unknown outcomes or an
 * unsure ladder make it not -- nor refuse to when none of those happened. */
#ifndef SLABTAP_MODEL_PREDICT_H
#define SLABTAP_MODEL_PREDICT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/advise.h"
#include "model/ladder_source.h"
#include "model/slab_model.h"

struct predict_observed {
    bool present;
    int64_t chunk_size, used_chunks, mem_requested, total_pages, number, evicted;
};

/* Why an exact comparison is not possible; empty when it is. */
#define PREDICT_WHY_MAX 1536

struct prediction {
    int64_t run_id;
    char run_name[128];
    char version[64];
    struct slab_settings settings; /* = choice.settings */
    struct slab_ladder ladder;     /* = choice.ladder */
    struct ladder_choice choice;   /* where the ladder came from, and how sure */
    /* the ladder the proxy recorded for the run (run_meta 'ladder'):
     * 0 none recorded, 1 the same as choice, -1 another one */
    int recorded_ladder;
    struct slab_counters predicted;
    struct predict_observed observed[SLAB_MODEL_MAX_CLASSES + 1];
    bool have_sample;
    /* what the writes did */
    uint64_t rows, applied, failed, assumed, deletes, untracked;
    uint64_t throwaway;       /* allocated and freed at once: refused add/replace/
                                 cas/append/prepend, append pieces, bad data chunks */
    uint64_t arith_applied;   /* incr/decr whose size change is known */
    uint64_t arith_unknown;   /* incr/decr/ma whose new size is not */
    uint64_t chunked_appends; /* append/prepend onto or of chunked data: not modelled */
    uint64_t unanswered;      /* writes memcached never answered: outcome unknown */
    uint64_t unknown_items;   /* memcached changed an item the model did not have */
    uint64_t mistagged;       /* tagged (sets.class_id) with another class than
                                 this ladder gives: the proxy knew less then */
    uint64_t live_items;
    /* a watch run (runs.kind 'watch', issue 22): its writes are memcached's
     * own log lines -- class_id is memcached's clsid, not a tag, and the
     * client flags are unknown (the log does not print them), taken as 0.
     * An item whose flags are non-zero is 4 bytes larger (the flags word
     * of its header), which moves it one class up when it lies within 4
     * bytes of a chunk boundary: */
    bool watch;
    uint64_t class_same;     /* clsid = the class of the size with flags 0 */
    uint64_t flags_inferred; /* clsid = the class only with 4 bytes of flags:
                                taken as carrying flags, sized so */
    uint64_t class_differs;  /* clsid neither (another ladder, or a bug) */
    uint64_t flags_assumed;  /* live items with flags taken as 0: each may be 4
                                bytes larger than predicted */
    int64_t not_seen;        /* writes memcached did not log (dropped lines) */
    /* set by the caller from the run's first and last stats samples: what
     * changed memcached's memory besides the writes, during the run */
    int64_t evictions, slabs_moved, reclaimed, foreign_items, rows_dropped;
    int64_t crawler_reclaimed, get_expired, flushes;
    bool restarted;              /* memcached's pid or uptime went back between them */
    uint64_t ttl_writes;         /* writes with an exptime (fine unless something expired) */
    int64_t observed_curr_items; /* curr_items of the last sample */
    bool exact_expected;
    char why_not[PREDICT_WHY_MAX]; /* the reasons exact_expected is false */
    /* --sample-keys 1/N (run_meta 'sample_keys', set by the caller before
     * predict_end; 0, 1: every key's rows): predicted counters are the kept
     * keys', predict_estimate scales them by N with a stated error, and
     * live counts every kept item N times (sizes are unbiased under hash
     * sampling) */
    uint32_t sample_keys;
    double live_sq_bytes[SLAB_MODEL_MAX_CLASSES + 1]; /* kept items' sum of ntotal^2 */
    struct advise_hist live;                          /* ntotal of the items left at the end */
    struct live_map *keys; /* live items by key hash, while rows are applied */
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
    uint32_t class_id;  /* the class the proxy tagged it with (sets.class_id), 0: none;
                           flags_unknown: memcached's own class (its log's clsid) */
    bool flags_unknown; /* flags not recorded (a watch run): taken as 0, or as
                           non-zero when class_id says so */
};

struct live_map;

/* The run's writes in order: predict_begin (or predict_begin_choice),
 * predict_apply for each row, predict_observe for each class of the run's
 * last sample (and the counters above set in r), then predict_end. Any
 * order of predict_observe relative to the rows. 0, or -1 with a message
 * in err. predict_begin takes the settings' own ladder. */
int predict_begin(struct prediction *r, int64_t run_id, const struct slab_settings *s, char *err,
                  size_t errlen);
int predict_begin_choice(struct prediction *r, int64_t run_id, const struct ladder_choice *c,
                         char *err, size_t errlen);
void predict_apply(struct prediction *r, const struct predict_write *w);
void predict_observe(struct prediction *r, uint32_t class_id, const struct predict_observed *o);
/* Sizes what is left and decides whether an exact match is to be expected
 * (why_not says why not). 0, or -1 when out of memory. */
int predict_end(struct prediction *r);
void predict_free(struct prediction *r);
/* One class's counters over all keys, from a sampled run (core/sample.h:
 * the kept keys' counters times N, each with its stated error); for a run
 * that is not sampled, the predicted counters with no error. */
struct predict_estimate {
    double used_chunks, used_err, mem_requested, mem_err, total_pages, pages_err;
};
void predict_estimate(const struct prediction *r, uint32_t class_id, struct predict_estimate *e);
bool predict_sampled(const struct prediction *r);

/* Per-class comparison (a sampled run: within the stated error); returns
 * the number of classes that differ. A watch run's class whose items and
 * pages are exact and whose mem_requested exceeds the prediction by 4
 * bytes for at most each of its items (flags the log did not show) is
 * within the flags' bound, not a difference. */
int predict_mismatches(const struct prediction *r);
/* The classes within the flags' bound (a watch run), and how many items of
 * them memcached's mem_requested says carry flags (into *items). */
int predict_flag_classes(const struct prediction *r, uint64_t *items);
/* Prints the predicted-vs-observed table and the verdict. */
void predict_print(const struct prediction *r, FILE *out);
#endif
