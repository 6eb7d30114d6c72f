/* capacity: what memcached 1.6 holds in a memory limit -- a write
 * sequence run through a slab ladder with whole pages, a page budget and
 * per-class LRU eviction.
 *
 * Owns: the write sequence as the capacity model needs it (dense key
 * indices so an overwrite replaces, item sizes, the command's rule for
 * storing), and the page/chunk/LRU simulation with its per-class result
 * (pages, used chunks, items, bytes held, evictions, out-of-memory
 * refusals) and the three parts memory divides into: bytes held, chunk
 * waste (a chunk's bytes beyond its item) and page slack (pages' bytes not
 * in a used chunk: free chunks and each page's tail).
 * Must never: do I/O, know about SQLite or libuv, or claim more than the
 * rules below, each read in memcached 1.6.18's slabs.c and items.c:
 *
 *   - pages are slab_page_size (1 MiB) whatever the class: slab_reassign
 *     is on by default, so do_slabs_newslab takes len = slab_page_size;
 *     total_malloced counts every page handed out (memory_allocate);
 *   - a class asks for a page only when its free list is empty
 *     (do_slabs_alloc), and gets one unless mem_limit is set, the page
 *     would take total_malloced over it, the class has a page already and
 *     the global pool is empty: a class's FIRST page is granted even past
 *     -m, so total_malloced can end above limit_maxbytes. The global pool
 *     only fills from slab page moves, which this model does not make;
 *   - an allocation that gets no chunk evicts from the tail of its own
 *     class's LRU and retries, at most 10 times (do_item_alloc_pull,
 *     lru_pull_tail with LRU_PULL_EVICT); with no reads recorded (a
 *     replay sends writes only) the segmented LRU is first in, first out
 *     by the time of the last write: a new item goes to HOT's head, HOT's
 *     tail flows to COLD, COLD's tail is evicted; the key being stored by
 *     append/prepend is item-locked (skipped), a plain set's old item is
 *     not (it can be evicted by its own replacement);
 *   - a chunked item takes its header in the header's class, then its
 *     data chunks one by one (do_item_alloc_chunk); a tail chunk whose
 *     class gets no memory falls back to a slab_chunk_max chunk; a chunk
 *     that cannot be had fails the whole set (SERVER_ERROR out of memory)
 *     and frees what it took;
 *   - the new item is allocated before the store decides: a refused
 *     add/replace, and the piece of an append/prepend, take a chunk (and a
 *     page) and give the chunk back; a set that fails (too large, out of
 *     memory) unlinks the key's old item (proto_text.c).
 *
 * Not modelled: slab_automove (1.6.18's default 1 decides over a 30-second
 * window, so a replay shorter than that moves nothing; 2 moves a page on
 * every eviction), reads (a get bumps an item to WARM), TTL expiry and the
 * LRU crawler, incr/decr and touch (counted in unmodelled), -L
 * preallocation, slab_reassign off (then pages of slab_chunk_max ==
 * page size classes are size * perslab bytes). */
#ifndef SLABTAP_MODEL_CAPACITY_H
#define SLABTAP_MODEL_CAPACITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/slab_model.h"

/* do_item_alloc_pull's retry bound */
#define CAPACITY_PULL_TRIES 10

enum capacity_kind {
    CAPACITY_SET, /* set, cas and ms as a replay sends them */
    CAPACITY_ADD,
    CAPACITY_REPLACE,
    CAPACITY_APPEND,
    CAPACITY_PREPEND,
    CAPACITY_DELETE,
    CAPACITY_OTHER /* incr, decr, touch: not modelled, counted */
};

struct capacity_op {
    uint32_t key;       /* dense index, 0..n_keys-1 */
    uint32_t value_len; /* the data block without \r\n (<= 1 GiB, memcached's -I cap) */
    uint8_t kind;       /* enum capacity_kind */
    uint8_t key_len;    /* 1..250 */
    uint8_t has_flags;  /* flags != 0: 4 bytes more per item */
};

/* A write sequence. Keys are told apart by a 64-bit hash (the recorder's
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
/* Appends one write; 0, or -1 when out of memory or an argument is out of
 * range (key_len 0 or over 250, value_len over 1 GiB). */
int capacity_seq_add(struct capacity_seq *s, uint64_t key_hash, enum capacity_kind kind,
                     uint32_t key_len, uint32_t flags, uint64_t value_len);

struct capacity_class {
    uint64_t pages;
    uint64_t used_chunks; /* chunks of live items (headers and data chunks included) */
    uint64_t items;       /* live items whose LRU is this class (stats items number) */
    uint64_t requested;   /* their ntotal (stats items mem_requested) */
    uint64_t evictions;   /* stats items evicted */
    uint64_t outofmemory; /* stats items outofmemory */
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
};

/* Runs ops [from, to) of s (a fresh memcached, empty) through ladder l
 * with memory limit mem_limit bytes (0: unlimited, memcached's -m 0).
 * 0, or -1 when out of memory. */
int capacity_simulate(const struct slab_ladder *l, uint64_t mem_limit, const struct capacity_seq *s,
                      size_t from, size_t to, struct capacity_result *out);

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
