/* verify: `slabtap model advise --verify` -- a recorded run replayed
 * against a memcached started with candidate settings, and the rounding
 * waste that memcached then reports, beside the model's prediction.
 *
 * Owns the memcached it starts for each check (stopped on every path), the
 * temporary trace a size distribution is replayed from (removed on every
 * path), and nothing else: the replay is the load engine's, the prediction the
 * model's. Must never print: the caller reports the verify_result. */
#ifndef SLABTAP_LOAD_VERIFY_H
#define SLABTAP_LOAD_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "model/advise.h"
#include "model/capacity.h"
#include "model/predict.h"
#include "model/slab_model.h"

/* A prediction and the measurement agree when they are this close. */
#define VERIFY_TOLERANCE_PP 0.1

struct verify_result {
    char flags[1024]; /* the memcached flags used, in the units of ... */
    char version[64]; /* ... the memcached started (`memcached -V`) */
    double measured_pct, predicted_pct;
    uint64_t waste, allocated;          /* measured, bytes */
    bool measured;                      /* false: error says why */
    bool ok;                            /* measured within VERIFY_TOLERANCE_PP */
    uint64_t counter_ops, counter_keys; /* the replay's (load_result): the caller says them */
    char error[512];
};

/* Starts memcached (binary memcached, NULL: on PATH) with s's flags --
 * in the units of that binary's version: -o slab_chunk_max is bytes
 * before 1.6.24 and kilobytes since -- and memory for every item twice
 * over, replays run r from db_path into it, measures. Returns 0 when
 * measured and within tolerance, else -1. */
int verify_settings(const char *db_path, const struct prediction *r, const struct slab_settings *s,
                    const struct advise_eval *pred, const char *memcached,
                    struct verify_result *out);

/* verify_settings for a size distribution instead of a run (a snapshot's
 * resident items, issue 22): h's items (ITEM_ntotal, use_cas as the
 * ladder's) written once each as sets into a memcached started with s's
 * flags -- each with a key and value whose item is exactly that ntotal (the
 * split does not change the class nor mem_requested) -- through a
 * Twitter-format trace in a temporary file (TMPDIR, removed), then
 * measured. 0 when measured and within tolerance, else -1. */
int verify_settings_hist(const struct advise_hist *h, bool use_cas, const struct slab_settings *s,
                         const struct advise_eval *pred, const char *memcached,
                         struct verify_result *out);

/* --- capacity: what a memcached with -m holds ---------------------------- */

/* The requests a replay of run run_id (0: the newest) would send, in
 * order, as a capacity sequence (keys as sent, hashed: keyfmt_hash);
 * with reads, the run's reads merged in as the replay sends them with demand-fill (each carries
 * fill and the length a fill would set, load/replay.h). The replay sends
 * as fast as it can, so every request is at t = 0: exptimes count from the
 * replay's start. The writes alone (capacity advice): record/rowseq.h's
 * rowseq_capacity, the page's reader too. 0, or -1 with err. */
int verify_read_sequence(const char *db_path, int64_t run_id, bool reads, struct capacity_seq *out,
                         char *err, size_t errlen);

struct verify_capacity_result {
    char flags[1024];
    char version[64];
    uint64_t items, evictions, malloced; /* curr_items, evictions, total_malloced */
    uint64_t outofmemory;                /* sum of the classes' outofmemory */
    bool measured;                       /* false: error says why */
    uint64_t counter_ops, counter_keys;  /* the replay's (load_result): the caller says them */
    char error[512];
};

/* Starts memcached with s's flags, -m mem_mb (0: room for the whole run,
 * mem_hint_bytes twice over plus 64 MB) and -o slab_automove=0 (the
 * capacity model moves no pages), replays run run_id on one connection
 * (the recorded order, so evictions hit the same items), measures. 0 when
 * measured, else -1. */
int verify_capacity(const char *db_path, int64_t run_id, const struct slab_settings *s,
                    uint64_t mem_mb, uint64_t mem_hint_bytes, const char *memcached,
                    struct verify_capacity_result *out);

/* --- hits: what a memcached with candidate settings serves ---------------- */

/* A predicted hit ratio and the measured one agree within this many
 * percentage points (issue 19's bar for the cache model). */
#define VERIFY_HITS_TOLERANCE_PP 2.0
/* Two measured hit ratios closer than this are a tie: replaying the same
 * run into the same settings twice differs by less (memcached's LRU
 * maintainer runs on its own thread). */
#define VERIFY_HITS_TIE 0.002

struct verify_hits_result {
    char flags[1024];
    char version[64];
    uint64_t gets, hits; /* memcached's get_hits + get_misses, get_hits over the window */
    uint64_t fills;      /* demand-fill sets the replay made */
    uint64_t malloced;   /* total_malloced at the end */
    uint64_t evictions;  /* stats evictions at the end */
    double hit_ratio;    /* hits / gets */
    bool measured;       /* false: error says why */
    uint64_t counter_ops, counter_keys; /* the replay's (load_result): the caller says them */
    char error[512];
};

/* Starts memcached with s's flags at -m mem_mb, -o slab_automove=automove
 * (and -o no_lru_maintainer,no_lru_crawler when plain_lru), replays run
 * run_id on one connection with demand-fill (load/replay.h: a read that
 * misses is followed by a set of the key's last known length unless the
 * recording writes it next), and measures memcached's get_hits and
 * get_misses from the measure_from-th operation sent to the end (0: the
 * whole run). 0 when measured, else -1. */
int verify_hits(const char *db_path, int64_t run_id, const struct slab_settings *s, uint64_t mem_mb,
                unsigned automove, bool plain_lru, uint64_t measure_from, const char *memcached,
                struct verify_hits_result *out);

#endif
