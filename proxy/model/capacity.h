/* capacity: what memcached 1.6 holds in a memory limit, and what it
 * answers -- a request sequence (writes AND reads) run request by request
 * through a slab ladder with whole pages, a page budget, memcached's LRUs,
 * lazy expiry and slab page moves, so the hit ratio of any setting can be
 * predicted (docs/cache-model.md: the rules, the accuracy measured).
 *
 * Owns: the request sequence as the model needs it (dense key indices so an
 * overwrite replaces, item sizes, times, TTLs, the demand-fill bit), and the
 * page/chunk/LRU simulation with its per-class result (pages, used chunks,
 * items, bytes held, evictions, out-of-memory refusals, hits, misses,
 * fills), the three parts memory divides into (bytes held, chunk waste: a
 * chunk's bytes beyond its item, page slack: pages' bytes not in a used
 * chunk), the miss-ratio curve and the SHARDS scaling of a key sample.
 * Must never: do I/O, know about SQLite or libuv, allocate per request
 * (state is per key and per class), or claim more than the rules below,
 * each read in memcached 1.6.18's sources (file / function named):
 *
 * Memory (slabs.c):
 *   - pages are slab_page_size (1 MiB) whatever the class: slab_reassign
 *     is on by default, so do_slabs_newslab takes len = slab_page_size;
 *     total_malloced counts every page handed out (memory_allocate);
 *   - a class asks for a page only when its free list is empty
 *     (do_slabs_alloc), and gets one unless mem_limit is set, the page
 *     would take total_malloced over it, the class has a page already and
 *     the global pool is empty: a class's FIRST page is granted even past
 *     -m, so total_malloced can end above limit_maxbytes. The global pool
 *     fills only from slab_automove=1 reclaims (below);
 *   - a chunked item takes its header in the header's class, then its
 *     data chunks one by one (items.c do_item_alloc_chunk); a tail chunk
 *     whose class gets no memory falls back to a slab_chunk_max chunk; a
 *     chunk that cannot be had fails the whole set (SERVER_ERROR out of
 *     memory) and frees what it took;
 *   - the new item is allocated before the store decides (proto_text.c
 *     process_update_command, memcached.c do_store_item): a refused
 *     add/replace, and the piece of an append/prepend, take a chunk (and a
 *     page) and give the chunk back; a set that fails (too large, out of
 *     memory) unlinks the key's old item.
 *
 * Allocation and eviction (items.c do_item_alloc_pull, lru_pull_tail):
 *   - up to 10 tries (CAPACITY_PULL_TRIES); plain LRU first reclaims
 *     expired items at its tail (lru_pull_tail(COLD, no flags)); then
 *     slabs_alloc; on no chunk, lru_pull_tail(COLD, LRU_PULL_EVICT) looks
 *     at up to 5 items from COLD's tail: expired ones (exptime <
 *     current_time) are reclaimed (counted in `reclaimed`, not evicted)
 *     and the walk goes on; the first live one is evicted, ACTIVE or not;
 *     an item-locked one (the key an append/prepend is storing) is
 *     skipped. When that pull removed nothing, the segmented LRU moves
 *     HOT's tail (lru_pull_tail(HOT, 0 bytes, age 0): to WARM if ACTIVE,
 *     else to COLD) and tries again; the plain LRU gives up (out of
 *     memory);
 *   - slab_automove=2: every eviction asks slabs_reassign(-1, class)
 *     (lru_pull_tail): slabs.c slabs_reassign_pick_any takes, round robin
 *     from a cursor kept across calls, the next class other than the
 *     evicting one with at least 2 pages, and its oldest page
 *     (slab_list[0]) moves to the evicting class; while a move runs every
 *     other reassign is refused. APPROXIMATED: a move takes
 *     capacity_config.move_busy_reqs requests (CAPACITY_MOVE_BUSY_REQS).
 *
 * The segmented LRU, memcached 1.6's default (items.c do_item_alloc,
 * do_item_bump, do_item_update, lru_maintainer_juggle; memcached.c
 * defaults hot_lru_pct 20, warm_lru_pct 40, hot_max_factor 0.2,
 * warm_max_factor 2.0):
 *   - a new item goes to HOT's head with time = now, not FETCHED/ACTIVE;
 *   - a fetch (get, gets, gat, touch; not a store's own lookup) of an item
 *     not ACTIVE: the first sets FETCHED; a later one sets ACTIVE and, in
 *     HOT or WARM, time = now; in COLD it is queued (lru_bump_async) for
 *     the maintainer, whose do_item_update moves it to WARM's head with
 *     time = now and ACTIVE cleared. APPROXIMATED: done at once here.
 *     An ACTIVE item's fetch changes nothing (its time stays);
 *   - an add finding the key calls do_item_update (time = now; COLD and
 *     ACTIVE: to WARM);
 *   - the LRU maintainer thread juggles each class: total = bytes (sum of
 *     ntotal) in HOT+WARM+COLD, cold_age = now - COLD tail's time,
 *     hot_age = cold_age * 0.2, warm_age = cold_age * 2; up to 500 rounds
 *     of pulling HOT's tail (then WARM's, only when HOT moved nothing),
 *     then COLD's: an ACTIVE HOT tail goes to WARM, an ACTIVE WARM tail to
 *     WARM's head (ACTIVE cleared); else a HOT tail goes to COLD when HOT
 *     holds more than 20 % of total bytes (integer: total * 20 / 100) or
 *     is older than hot_age (now - time > hot_age), a WARM tail when WARM
 *     holds more than 40 % or is older than warm_age; an ACTIVE COLD tail
 *     goes to WARM; expired tails (exptime < now) are reclaimed on the
 *     way. APPROXIMATED: memcached runs this in its own thread every 1 ms
 *     to 1 s; here it runs synchronously after every allocation in the
 *     class, and for every class when the clock moves to a new second (so
 *     HOT/WARM are never over their share between requests, items that
 *     expired are reclaimed at the tails within the second, and a burst
 *     that memcached's thread lags behind is not reproduced).
 *
 * The plain LRU (-o no_lru_maintainer; items.c do_item_alloc: "only COLD
 * in compat mode", do_item_update): one list per class; a fetch (and an
 * add finding the key) relinks the item at the head and sets time = now
 * only when time < now - ITEM_UPDATE_INTERVAL (60 s): strictly more than
 * 60 s since its last bump or store. No maintainer, so slab_automove=1
 * never runs (it lives in lru_maintainer_thread); automove=2 does.
 *
 * Time and expiry (memcached.c realtime, items.c do_item_get):
 *   - now = t + 62: memcached's clock starts at ITEM_UPDATE_INTERVAL + 2
 *     (process_started = time(0) - 62), one-second resolution;
 *   - exptime 0: never; negative: 1 (EXPTIME_TO_POSITIVE_TIME gives
 *     REALTIME_MAXDELTA + 1, realtime maps it to 1: expired at once);
 *     else now + exptime. Absolute times (> 30 days) are the caller's;
 *   - a lookup (get, touch, gat, and a store's own do_item_get) finds an
 *     item expired when exptime <= now: it is unlinked, counted in
 *     `expired` (memcached's get_expired) and the lookup misses; at an LRU
 *     tail the test is exptime < now (a second later): `reclaimed`;
 *   - touch/gat set exptime = now + the new exptime after the lookup
 *     (do_item_touch); both are a fetch for the LRU; memcached counts a
 *     gat in touch_hits/touch_misses, not get_hits (proto_text.c
 *     process_get_command), the hit ratio here counts get and gat.
 *
 * slab_automove=1 (slab_automove.c slab_automove_run, run by
 * lru_maintainer_thread at most once per second of current_time; window
 * 30 on 1.6.18, ratio 0.8): run here once per second of t that passes
 * (capped at window + 1 runs for a long idle gap). Per class a window of
 * (COLD tail age, dirty: evictions, outofmemory or new pages since the
 * last run, evicted share, evictions seen); a class with more than 2.5
 * pages of free chunks and a clean window gives a page to the global pool;
 * else once the window has filled, the class with the oldest average age
 * and more than 2 pages gives one to the youngest class that evicted in
 * more than half the window (or took > 25 % of evictions) and is evicting
 * now, when youngest age < oldest * 0.8.
 *
 * slab_automove=2 runs track pages (unless an item of the run is chunked
 * or appended to): each chunk's page is known (LIFO free lists, pages split
 * in order), a move takes the source's slab_list[0] and walks that page's
 * own items: an expired one is dropped, a live one is rescued into a free
 * chunk of its class outside the page (relinked: LRU head, time = now) or,
 * with none, lost (move_evictions); rescues in move_rescues. Otherwise:
 * A moved page (slabs.c slab_rebalance_move): its items are rescued into
 * free chunks of the same class when there are any outside the page, else
 * evicted (slab_reassign_evictions_nomem, not `evictions`). APPROXIMATED:
 * the page's items are not tracked, so the class keeps its items while
 * its free chunks cover the lost page and otherwise loses the missing
 * number from its LRU tails (COLD, then WARM, then HOT), counted in
 * move_evictions. (Drawing them at random from the class instead was
 * tried: 11 points of hit ratio too low, where the tails are 0 to 2.3
 * points too high.) A move whose source cannot give up a whole page of
 * chunks this way (its chunks belong to chunked items of other classes'
 * LRUs) is not made.
 *
 * Not modelled: the LRU crawler (it reclaims expired items in the
 * background: a run with short TTLs sees more memory free in memcached),
 * temp_lru, flush_all, incr/decr (CAPACITY_OTHER, counted in unmodelled),
 * -L preallocation, slab_reassign off, refcount-busy items (one client,
 * one request at a time), cas mismatches (a cas stores like a set), the
 * 1.6 meta protocol's own flags (mg maps to a get, ms to a set). */
#ifndef SLABTAP_MODEL_CAPACITY_H
#define SLABTAP_MODEL_CAPACITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/slab_model.h"

/* do_item_alloc_pull's retry bound */
#define CAPACITY_PULL_TRIES 10

/* X(name, text): the request kinds, one list for the enum and its text.
 * CAPACITY_OTHER keeps its value 6 (sequences made before the reads). */
#define CAPACITY_KINDS(X) \
    X(CAPACITY_SET, "set") /* set, cas and ms as a replay sends them */ \
    X(CAPACITY_ADD, "add") \
    X(CAPACITY_REPLACE, "replace") \
    X(CAPACITY_APPEND, "append") \
    X(CAPACITY_PREPEND, "prepend") \
    X(CAPACITY_DELETE, "delete") \
    X(CAPACITY_OTHER, "other") /* incr, decr: not modelled, counted */ \
    X(CAPACITY_GET, "get")     /* get, gets, mg */ \
    X(CAPACITY_TOUCH, "touch") \
    X(CAPACITY_GAT, "gat") /* gat, gats: a get that also sets a new exptime */

enum capacity_kind {
#define CAPACITY_KIND_ENUM_(name, text) name,
    CAPACITY_KINDS(CAPACITY_KIND_ENUM_)
#undef CAPACITY_KIND_ENUM_
        CAPACITY_KIND_COUNT
};

const char *capacity_kind_str(enum capacity_kind k);
/* "set", "get", ... into *k; 0, or -1 for a name not in the list. */
int capacity_kind_parse(const char *text, enum capacity_kind *k);

struct capacity_op {
    uint32_t key;       /* dense index, 0..n_keys-1 */
    uint32_t value_len; /* the data block without \r\n (<= 1 GiB, memcached's -I cap);
                           GET/GAT: the value a demand-fill stores */
    uint32_t t;         /* seconds since the sequence start */
    int32_t exptime;    /* relative seconds as sent; 0 never, < 0 already expired;
                           GET: the demand-fill's */
    uint8_t kind;       /* enum capacity_kind */
    uint8_t key_len;    /* 1..250 */
    uint8_t has_flags;  /* flags != 0: 4 bytes more per item */
    uint8_t fill;       /* GET/GAT: a miss is followed by a set of value_len bytes */
};

/* One request as capacity_seq_add_req takes it. */
struct capacity_req {
    enum capacity_kind kind;
    uint32_t key_len;   /* 1..250 */
    uint32_t flags;     /* only != 0 matters (4 bytes more per item) */
    uint64_t value_len; /* <= 1 GiB */
    uint32_t t;         /* seconds since the sequence start, not decreasing */
    int32_t exptime;    /* relative seconds; > 30 days absolute: convert first */
    uint8_t fill;       /* GET/GAT only: demand-fill on a miss */
};

/* A request sequence. Keys are told apart by a 64-bit hash (the recorder's
 * key_hash, or any hash of the key as sent). */
struct capacity_seq {
    struct capacity_op *ops;
    size_t n, cap;
    uint32_t n_keys;
    uint64_t *hkey; /* open addressing: hash -> index + 1 (0: empty) */
    uint32_t *hidx;
    size_t hcap;
};

void capacity_seq_init(struct capacity_seq *s);
void capacity_seq_free(struct capacity_seq *s);
/* Appends one request; 0, or -1 when out of memory or an argument is out
 * of range (key_len 0 or over 250, value_len over 1 GiB, a kind not in the
 * list, fill on a kind other than GET/GAT). */
int capacity_seq_add_req(struct capacity_seq *s, uint64_t key_hash, const struct capacity_req *r);
/* The ops of in from op `from` on whose key core/sample.h keeps at 1/n
 * (sample_keep on the key's hash: what a `--shadow "1/N ..."` memcached
 * and --sample-keys see; n <= 1: every key) appended to out. 0, or -1
 * when out of memory. */
int capacity_seq_sample(const struct capacity_seq *in, size_t from, uint32_t n,
                        struct capacity_seq *out);
/* A write at t = 0 with no exptime (capacity_seq_add_req). */
int capacity_seq_add(struct capacity_seq *s, uint64_t key_hash, enum capacity_kind kind,
                     uint32_t key_len, uint32_t flags, uint64_t value_len);

struct capacity_class {
    uint64_t pages;
    uint64_t used_chunks;  /* chunks of live items (headers and data chunks included) */
    uint64_t items;        /* live items whose LRU is this class (stats items number) */
    uint64_t requested;    /* their ntotal (stats items mem_requested) */
    uint64_t evictions;    /* stats items evicted */
    uint64_t outofmemory;  /* stats items outofmemory */
    uint64_t hits;         /* gets and gats that found an item of this class */
    uint64_t misses;       /* gets and gats that missed, by the class of their fill size */
    uint64_t fills;        /* demand-fill sets into this class */
    uint64_t lru_items[3]; /* items in HOT, WARM, COLD at the end (stats items
                              number_hot/_warm/_cold; plain LRU: all COLD) */
};

struct capacity_result {
    struct capacity_class cls[SLAB_MODEL_MAX_CLASSES + 1]; /* [0] unused */
    uint64_t mem_limit;                                    /* bytes, 0: none */
    uint64_t pages;                                        /* pages handed out (never given back) */
    uint64_t malloced;     /* pages * slab_page_size: stats slabs total_malloced */
    uint64_t items;        /* live items: stats curr_items */
    uint64_t requested;    /* bytes held: sum of their ntotal */
    uint64_t chunk_bytes;  /* sum of used chunks' sizes */
    uint64_t chunk_waste;  /* chunk_bytes - requested */
    uint64_t page_slack;   /* malloced - chunk_bytes */
    uint64_t evictions;    /* stats evictions */
    uint64_t outofmemory;  /* sets refused: SERVER_ERROR out of memory */
    uint64_t too_large;    /* sets refused: object too large */
    uint64_t not_stored;   /* add/replace/append/prepend that did not store */
    uint64_t unmodelled;   /* CAPACITY_OTHER ops */
    uint32_t classes_used; /* classes with a page */
    bool limit_reached;    /* a class was refused a page */
    /* reads, counted as memcached does (proto_text.c process_get_command:
     * a gat counts as a touch, not as a get) over the whole run */
    uint64_t gets;       /* get, gets, mg: stats cmd_get */
    uint64_t hits;       /* stats get_hits */
    uint64_t misses;     /* stats get_misses */
    uint64_t touches;    /* touch + gat: stats cmd_touch */
    uint64_t touch_hits; /* stats touch_hits */
    /* reads that return the value (get AND gat) from
     * capacity_config.measure_from on: the hit ratio */
    uint64_t measured_gets;
    uint64_t measured_hits;
    uint64_t fills;          /* demand-fill sets made */
    uint64_t expired;        /* lookups that found the item expired: stats get_expired */
    uint64_t reclaimed;      /* expired items freed at an LRU tail: stats reclaimed */
    uint64_t moves;          /* pages moved by slab_automove: stats slabs_moved */
    uint64_t move_evictions; /* items lost with a moved page: slab_reassign_evictions_nomem */
    uint64_t
        move_rescues;    /* items of a moved page copied into a free chunk: slab_reassign_rescues */
    uint32_t pool_pages; /* pages in the global pool at the end */
};

enum capacity_lru {
    CAPACITY_LRU_SEGMENTED, /* memcached 1.6's default: HOT/WARM/COLD + maintainer */
    CAPACITY_LRU_PLAIN      /* -o no_lru_maintainer: one LRU per class */
};

/* memcached moves a page in its rebalancer thread, chunk by chunk, and
 * answers every slabs_reassign meanwhile with REASSIGN_RUNNING
 * (slabs.c do_slabs_reassign); the page reaches its class only when the
 * move ends (slab_rebalance_finish). How many requests that lasts depends
 * on the request rate: here a slab_automove=2 move is made
 * move_busy_reqs requests after the eviction that asked for it, and
 * reassigns are refused until then. The default was fitted on one
 * connection sending 30,000 to 60,000 requests/s to memcached 1.6.18: the
 * number of pages moved then came within 25 % of memcached's
 * (docs/cache-model.md); 0 moves at once. */
#define CAPACITY_MOVE_BUSY_REQS 40

struct capacity_config {
    uint64_t mem_limit; /* bytes (-m), 0: none */
    enum capacity_lru lru;
    unsigned automove;   /* slab_automove 0, 1, 2 (1 runs only with the segmented LRU) */
    size_t measure_from; /* op index: measured_gets/hits count from here (warm-up excluded) */
    /* requests a page move keeps the rebalancer busy (reassigns refused
     * meanwhile); capacity_config_default: CAPACITY_MOVE_BUSY_REQS */
    uint32_t move_busy_reqs;
    bool use_cas; /* informational: the ladder's use_cas decides item sizes */
};

/* memcached 1.6.18's defaults for mem_limit bytes: segmented LRU,
 * slab_automove=1, CAS on, everything measured. */
void capacity_config_default(struct capacity_config *c, uint64_t mem_limit);

/* Runs ops [from, to) of s (a fresh memcached, empty, its clock at the
 * first op's t) through ladder l with cfg. 0, or -1 when out of memory or
 * cfg is out of range (automove > 2). */
int capacity_run(const struct slab_ladder *l, const struct capacity_config *cfg,
                 const struct capacity_seq *s, size_t from, size_t to, struct capacity_result *out);

/* capacity_run with the segmented LRU, no automove, measured from `from`:
 * the write-sequence model as it was (writes only: first in, first out). */
int capacity_simulate(const struct slab_ladder *l, uint64_t mem_limit, const struct capacity_seq *s,
                      size_t from, size_t to, struct capacity_result *out);

/* measured_hits / measured_gets; 0 when nothing was measured. */
double capacity_hit_ratio(const struct capacity_result *r);

/* The miss-ratio curve: one capacity_run per memory size mem_limits[i]
 * (cfg's mem_limit ignored) into out[i]. 0, or -1 (out of memory). */
int capacity_mrc(const struct slab_ladder *l, const struct capacity_config *base,
                 const struct capacity_seq *s, size_t from, size_t to, const uint64_t *mem_limits,
                 size_t n, struct capacity_result *out);

/* SHARDS for a key-sampled sequence (core/sample.h: keys kept at 1/N by
 * their hash, so every request of a kept key is in the sample): the sample
 * simulated at mem_limit / N stands for the whole cache at mem_limit; its
 * hit ratio estimates the whole cache's, its counts (items, evictions,
 * hits, ...) times N estimate the whole cache's.
 * The error page granularity adds: memcached hands out whole 1 MiB pages
 * per class and each class's first page even past -m, so the scaled run's
 * memory is off by up to (classes used) pages against mem_limit / N -- a
 * relative error of about classes_used MiB / (mem_limit / N) in the memory
 * the sample gets (e.g. 10 classes at 64 MiB / 8 = 8 MiB: up to ~125 %,
 * at 1 GiB / 8: ~8 %). capacity_shards_run therefore refuses when
 * mem_limit / N leaves fewer than CAPACITY_SHARDS_MIN_PAGES pages per
 * class the sample uses (the classes with an item at any time of the
 * sample), and reports the page budget.
 * Returns CAPACITY_SHARDS_OK, CAPACITY_SHARDS_TOO_SMALL (nothing run) or
 * CAPACITY_SHARDS_ERROR (out of memory, bad argument). */
#define CAPACITY_SHARDS_MIN_PAGES 2
enum capacity_shards_status {
    CAPACITY_SHARDS_OK = 0,
    CAPACITY_SHARDS_TOO_SMALL = 1,
    CAPACITY_SHARDS_ERROR = -1
};
/* classes: the classes the sample's items use (out, may be NULL) */
enum capacity_shards_status capacity_shards_run(const struct slab_ladder *l,
                                                const struct capacity_config *cfg, uint32_t n,
                                                const struct capacity_seq *s, size_t from,
                                                size_t to, uint32_t *classes,
                                                struct capacity_result *out);

/* The objective an operator asks for. */
enum capacity_objective {
    CAPACITY_OBJ_MEMORY, /* least memory for the whole working set (pages) */
    CAPACITY_OBJ_ITEMS   /* most items (then bytes) held in a memory limit */
};

const char *capacity_objective_str(enum capacity_objective o);

/* >0 when a is better than b on the objective, <0 when worse, 0 equal.
 * MEMORY compares items held first (a ladder that refuses items cannot
 * win by holding less), then less malloced (a run with no limit); ITEMS
 * compares items held, then bytes held, then fewer evictions. */
int capacity_compare(enum capacity_objective o, const struct capacity_result *a,
                     const struct capacity_result *b);

#endif
