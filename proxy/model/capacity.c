/* capacity: the request sequence and the page/chunk/LRU simulation (rules,
 * with their sources in memcached 1.6.18, in capacity.h). Pure; allocates
 * per key and per run, never per request. */
#include "model/capacity.h"

#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/sample.h"

#define NONE UINT32_MAX

void capacity_seq_init(struct capacity_seq *s)
{
    memset(s, 0, sizeof *s);
}

void capacity_seq_free(struct capacity_seq *s)
{
    free(s->ops);
    free(s->hkey);
    free(s->hidx);
    capacity_seq_init(s);
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static int seq_rehash(struct capacity_seq *s)
{
    size_t ncap = s->hcap ? s->hcap * 2 : 1024;
    uint64_t *hk = calloc(ncap, sizeof *hk);
    uint32_t *hi = calloc(ncap, sizeof *hi);
    if (!hk || !hi) {
        free(hk);
        free(hi);
        return -1;
    }
    for (size_t i = 0; i < s->hcap; i++) {
        if (!s->hidx[i])
            continue;
        size_t j = mix64(s->hkey[i]) & (ncap - 1);
        while (hi[j])
            j = (j + 1) & (ncap - 1);
        hk[j] = s->hkey[i];
        hi[j] = s->hidx[i];
    }
    free(s->hkey);
    free(s->hidx);
    s->hkey = hk;
    s->hidx = hi;
    s->hcap = ncap;
    return 0;
}

/* The dense index of key_hash, a new one for a new key; -1 when full. */
static int64_t seq_key(struct capacity_seq *s, uint64_t key_hash)
{
    if ((s->n_keys + 1) * 2 > s->hcap && seq_rehash(s))
        return -1;
    size_t j = mix64(key_hash) & (s->hcap - 1);
    while (s->hidx[j]) {
        if (s->hkey[j] == key_hash)
            return s->hidx[j] - 1;
        j = (j + 1) & (s->hcap - 1);
    }
    if (s->n_keys == NONE - 1)
        return -1;
    s->hkey[j] = key_hash;
    s->hidx[j] = ++s->n_keys;
    return s->n_keys - 1;
}

static const char *const kind_names[] = {
#define CAPACITY_KIND_TEXT_(name, text) text,
    CAPACITY_KINDS(CAPACITY_KIND_TEXT_)
#undef CAPACITY_KIND_TEXT_
};

const char *capacity_kind_str(enum capacity_kind k)
{
    return (unsigned)k < CAPACITY_KIND_COUNT ? kind_names[k] : "?";
}

int capacity_kind_parse(const char *text, enum capacity_kind *k)
{
    for (unsigned i = 0; i < CAPACITY_KIND_COUNT; i++)
        if (!strcmp(text, kind_names[i])) {
            *k = (enum capacity_kind)i;
            return 0;
        }
    return -1;
}

int capacity_seq_add_req(struct capacity_seq *s, uint64_t key_hash, const struct capacity_req *r)
{
    if (r->key_len == 0 || r->key_len > 250 || r->value_len > SLAB_MODEL_ITEM_SIZE_MAX_MAX ||
        (unsigned)r->kind >= CAPACITY_KIND_COUNT ||
        (r->fill && r->kind != CAPACITY_GET && r->kind != CAPACITY_GAT))
        return -1;
    if (!BUF_GROW(s->ops, s->cap, s->n + 1))
        return -1;
    int64_t k = seq_key(s, key_hash);
    if (k < 0)
        return -1;
    s->ops[s->n++] = (struct capacity_op){ .key = (uint32_t)k,
                                           .value_len = (uint32_t)r->value_len,
                                           .t = r->t,
                                           .exptime = r->exptime,
                                           .kind = (uint8_t)r->kind,
                                           .key_len = (uint8_t)r->key_len,
                                           .has_flags = r->flags != 0,
                                           .fill = r->fill != 0 };
    return 0;
}

int capacity_seq_add(struct capacity_seq *s, uint64_t key_hash, enum capacity_kind kind,
                     uint32_t key_len, uint32_t flags, uint64_t value_len)
{
    if (kind > CAPACITY_OTHER)
        return -1;
    struct capacity_req r = {
        .kind = kind, .key_len = key_len, .flags = flags, .value_len = value_len
    };
    return capacity_seq_add_req(s, key_hash, &r);
}

int capacity_seq_sample(const struct capacity_seq *in, size_t from, uint32_t n,
                        struct capacity_seq *out)
{
    bool *keep = calloc(in->n_keys ? in->n_keys : 1, sizeof *keep);
    int rc = 0;
    if (!keep)
        return -1;
    for (size_t j = 0; j < in->hcap; j++)
        if (in->hidx[j])
            keep[in->hidx[j] - 1] = n <= 1 || sample_keep(in->hkey[j], n);
    uint64_t *hash = calloc(in->n_keys ? in->n_keys : 1, sizeof *hash);
    if (!hash) {
        free(keep);
        return -1;
    }
    for (size_t j = 0; j < in->hcap; j++)
        if (in->hidx[j])
            hash[in->hidx[j] - 1] = in->hkey[j];
    for (size_t i = from; i < in->n && rc == 0; i++) {
        const struct capacity_op *op = &in->ops[i];
        if (!keep[op->key])
            continue;
        struct capacity_req r = { .kind = (enum capacity_kind)op->kind,
                                  .key_len = op->key_len,
                                  .flags = op->has_flags,
                                  .value_len = op->value_len,
                                  .t = op->t,
                                  .exptime = op->exptime,
                                  .fill = op->fill };
        rc = capacity_seq_add_req(out, hash[op->key], &r);
    }
    free(hash);
    free(keep);
    return rc;
}

/* --- the simulation ----------------------------------------------------- */

/* memcached.c: process_started = time(0) - ITEM_UPDATE_INTERVAL - 2, so
 * current_time starts at 62 */
#define REL_BASE 62u
/* memcached.h ITEM_UPDATE_INTERVAL */
#define UPDATE_INTERVAL 60u
/* items.c lru_pull_tail: tries */
#define PULL_TAIL_TRIES 5
/* items.c lru_maintainer_juggle: rounds */
#define JUGGLE_ROUNDS 500
/* memcached.c settings defaults */
#define HOT_LRU_PCT 20u
#define WARM_LRU_PCT 40u
#define HOT_MAX_FACTOR 0.2
#define WARM_MAX_FACTOR 2.0
#define AUTOMOVE_WINDOW 30u
#define AUTOMOVE_RATIO 0.8
/* slab_automove.c */
#define MIN_PAGES_FOR_SOURCE 2
#define MIN_PAGES_FOR_RECLAIM 2.5

enum { LRU_HOT, LRU_WARM, LRU_COLD, LRU_N };
/* items.c lru_pull_tail flags */
enum { PULL_EVICT = 1 };

enum {
    KB_PRESENT = 1,
    KB_FLAGS = 2,    /* flags != 0 */
    KB_FALLBACK = 4, /* the tail chunk went to a slab_chunk_max chunk */
    KB_CHUNKED = 8,
    KB_FETCHED = 16, /* ITEM_FETCHED */
    KB_ACTIVE = 32   /* ITEM_ACTIVE */
};

/* One item per key: its size, times, flags and its place in its class's
 * LRU (head: newest), and its page (tracked runs). 36 bytes. */
struct sim_key {
    uint32_t prev, next; /* towards head / towards tail */
    uint32_t value_len;
    uint32_t exptime; /* rel time, 0: never */
    uint32_t time;    /* it->time: last store or bump */
    uint8_t key_len;
    uint8_t bits;          /* KB_* */
    uint8_t lru;           /* LRU_HOT/WARM/COLD */
    uint8_t cls;           /* the LRU's class */
    uint32_t page;         /* the page its chunk is in (tracked runs; capacity.h) */
    uint32_t pprev, pnext; /* its page's item list */
};

/* A growable array of page ids: a class's slab_list, free list, the pool. */
struct u32vec {
    uint32_t *v;
    uint32_t n;
    size_t cap;
};

struct sim_list {
    uint32_t head, tail;
    uint64_t n;     /* sizes */
    uint64_t bytes; /* sizes_bytes: sum of ntotal */
};

/* slab_automove.c struct window_data */
struct am_window {
    uint64_t age;
    uint64_t dirty;
    float evicted_ratio;
    uint64_t evicted_seen;
};

struct am_state {
    struct am_window w[SLAB_MODEL_MAX_CLASSES + 1][AUTOMOVE_WINDOW];
    uint64_t evicted_before[SLAB_MODEL_MAX_CLASSES + 1];
    uint64_t oom_before[SLAB_MODEL_MAX_CLASSES + 1];
    uint64_t pages_before[SLAB_MODEL_MAX_CLASSES + 1];
    uint32_t window_cur;
    uint32_t last_check;
};

struct sim {
    const struct slab_ladder *l;
    const struct capacity_config *cfg;
    bool segmented;
    uint64_t page_limit;         /* pages that fit mem_limit; UINT64_MAX: none */
    uint32_t now;                /* current_time */
    uint32_t pool;               /* pages in the global page pool */
    uint32_t pick_cur;           /* slabs_reassign_pick_any's static cursor */
    uint32_t locked;             /* the item-locked key of the store in progress */
    uint64_t op;                 /* index of the request being run */
    uint64_t busy_until;         /* a page move "runs" until this request (capacity.h) */
    uint32_t pend_src, pend_dst; /* that move, made when it ends; src 0: none */
    struct sim_key *k;
    struct sim_list lru[SLAB_MODEL_MAX_CLASSES + 1][LRU_N];
    uint64_t free_chunks[SLAB_MODEL_MAX_CLASSES + 1];
    struct am_state *am;
    struct capacity_result *r;
    /* pages tracked (no chunked item, no append/prepend in the run): which
     * page each chunk is in, so a move takes slab_list[0] (capacity.h) */
    bool track;
    bool oom;            /* a page array could not grow: the run fails */
    uint32_t got_page;   /* the page of the chunk slabs_alloc gave last */
    uint32_t n_pages;    /* page ids handed out */
    struct u32vec items; /* per page id: the head of its item list */
    struct u32vec slabs[SLAB_MODEL_MAX_CLASSES + 1]; /* slab_list, oldest first */
    struct u32vec fl[SLAB_MODEL_MAX_CLASSES + 1];    /* free chunks (their pages), LIFO */
    struct u32vec poolv;                             /* the global pool's pages */
};

static bool vec_push(struct sim *m, struct u32vec *a, uint32_t x)
{
    if (!BUF_GROW(a->v, a->cap, (size_t)a->n + 1)) {
        m->oom = true;
        return false;
    }
    a->v[a->n++] = x;
    return true;
}

/* Links key into the item list of page pg (tracked runs). */
static void page_link(struct sim *m, uint32_t key, uint32_t pg)
{
    struct sim_key *k = &m->k[key];
    k->page = pg;
    k->pprev = NONE;
    k->pnext = m->items.v[pg];
    if (k->pnext != NONE)
        m->k[k->pnext].pprev = key;
    m->items.v[pg] = key;
}

static void page_unlink(struct sim *m, uint32_t key)
{
    struct sim_key *k = &m->k[key];
    if (k->pprev != NONE)
        m->k[k->pprev].pnext = k->pnext;
    else
        m->items.v[k->page] = k->pnext;
    if (k->pnext != NONE)
        m->k[k->pnext].pprev = k->pprev;
    k->pprev = k->pnext = NONE;
}

static inline uint64_t key_ntotal(const struct sim *m, const struct sim_key *k)
{
    return (uint64_t)SLAB_MODEL_ITEM_HEADER + k->key_len + 1 + (k->bits & KB_FLAGS ? 4 : 0) +
           k->value_len + 2 + (m->l->use_cas ? 8 : 0);
}

/* memcached.c realtime(EXPTIME_TO_POSITIVE_TIME(e)) for a relative e */
static inline uint32_t rel_exptime(const struct sim *m, int32_t e)
{
    if (e == 0)
        return 0;
    if (e < 0)
        return 1;
    return m->now + (uint32_t)e;
}

/* do_item_get's test */
static inline bool expired_lookup(const struct sim *m, const struct sim_key *k)
{
    return k->exptime != 0 && k->exptime <= m->now;
}

/* lru_pull_tail's test */
static inline bool expired_tail(const struct sim *m, const struct sim_key *k)
{
    return k->exptime != 0 && k->exptime < m->now;
}

static void lru_link(struct sim *m, uint32_t key, uint32_t lru)
{
    struct sim_key *k = &m->k[key];
    struct sim_list *li = &m->lru[k->cls][lru];
    k->lru = (uint8_t)lru;
    k->prev = NONE;
    k->next = li->head;
    if (li->head != NONE)
        m->k[li->head].prev = key;
    li->head = key;
    if (li->tail == NONE)
        li->tail = key;
    li->n++;
    li->bytes += key_ntotal(m, k);
}

static void lru_unlink(struct sim *m, uint32_t key)
{
    struct sim_key *k = &m->k[key];
    struct sim_list *li = &m->lru[k->cls][k->lru];
    if (k->prev != NONE)
        m->k[k->prev].next = k->next;
    else
        li->head = k->next;
    if (k->next != NONE)
        m->k[k->next].prev = k->prev;
    else
        li->tail = k->prev;
    k->prev = k->next = NONE;
    li->n--;
    li->bytes -= key_ntotal(m, k);
}

static void lru_move(struct sim *m, uint32_t key, uint32_t lru)
{
    lru_unlink(m, key);
    lru_link(m, key, lru);
}

/* do_slabs_newslab */
static bool new_page(struct sim *m, uint32_t cls)
{
    struct capacity_class *c = &m->r->cls[cls];
    if (m->r->pages + 1 > m->page_limit && c->pages > 0 && m->pool == 0) {
        m->r->limit_reached = true;
        return false;
    }
    uint32_t pg = NONE;
    if (m->pool > 0) {
        m->pool--;
        if (m->track)
            pg = m->poolv.v[--m->poolv.n];
    } else {
        m->r->pages++;
        if (m->track) {
            pg = m->n_pages++;
            if (!vec_push(m, &m->items, NONE))
                return false;
        }
    }
    c->pages++;
    m->free_chunks[cls] += m->l->cls[cls].perslab;
    if (m->track) {
        /* split_slab_page_into_freelist */
        if (!vec_push(m, &m->slabs[cls], pg))
            return false;
        for (uint64_t i = 0; i < m->l->cls[cls].perslab; i++)
            if (!vec_push(m, &m->fl[cls], pg))
                return false;
    }
    return true;
}

/* do_slabs_free: a chunk of page pg (tracked runs) back on the free list */
static void chunk_free(struct sim *m, uint32_t cls, uint32_t pg)
{
    m->r->cls[cls].used_chunks--;
    m->free_chunks[cls]++;
    if (m->track)
        vec_push(m, &m->fl[cls], pg);
}

/* The chunks an item's layout holds, freed; fallback: its tail chunk is a
 * slab_chunk_max one. */
static void layout_free(struct sim *m, const struct slab_item_layout *it, bool fallback,
                        uint32_t pg)
{
    if (!it->chunked) {
        chunk_free(m, it->lru_class, pg);
        return;
    }
    chunk_free(m, it->hdr_class, NONE);
    for (uint64_t i = 0; i < it->full_chunks; i++)
        chunk_free(m, it->full_class, NONE);
    if (it->tail_class)
        chunk_free(m, fallback ? m->l->n_classes : it->tail_class, NONE);
}

/* Unlinks a live item and frees its chunks (delete, overwrite, eviction,
 * expiry). */
static void item_remove(struct sim *m, uint32_t key)
{
    struct sim_key *k = &m->k[key];
    uint64_t ntotal = key_ntotal(m, k);
    lru_unlink(m, key);
    if (k->bits & KB_CHUNKED) {
        struct slab_item_layout it;
        slab_item_layout(m->l, k->key_len, k->bits & KB_FLAGS, k->value_len, &it);
        layout_free(m, &it, k->bits & KB_FALLBACK, NONE);
    } else {
        if (m->track)
            page_unlink(m, key);
        chunk_free(m, k->cls, k->page);
    }
    m->r->cls[k->cls].items--;
    m->r->cls[k->cls].requested -= ntotal;
    k->bits = 0;
}

/* A lookup (do_item_get): present and not expired; an expired item is
 * unlinked and counted. */
static bool item_lookup(struct sim *m, uint32_t key)
{
    struct sim_key *k = &m->k[key];
    if (!(k->bits & KB_PRESENT))
        return false;
    if (expired_lookup(m, k)) {
        item_remove(m, key);
        m->r->expired++;
        return false;
    }
    return true;
}

static void page_move(struct sim *m, uint32_t src, uint32_t dst);

/* slabs_reassign(-1, dst) for slab_automove=2: slabs_reassign_pick_any */
static void automove_on_eviction(struct sim *m, uint32_t dst)
{
    uint32_t n = m->l->n_classes;
    if (m->op < m->busy_until)
        return; /* REASSIGN_RUNNING */
    for (uint32_t tries = n; tries > 0; tries--) {
        m->pick_cur++;
        if (m->pick_cur > n)
            m->pick_cur = 1;
        if (m->pick_cur == dst)
            continue;
        if (m->r->cls[m->pick_cur].pages > 1) {
            if (m->cfg->move_busy_reqs == 0) {
                page_move(m, m->pick_cur, dst);
            } else {
                m->pend_src = m->pick_cur;
                m->pend_dst = dst;
                m->busy_until = m->op + m->cfg->move_busy_reqs;
            }
            return;
        }
    }
}

static void item_evict(struct sim *m, uint32_t key, uint32_t cls)
{
    m->r->cls[cls].evictions++;
    m->r->evictions++;
    item_remove(m, key);
}

/* items.c lru_pull_tail: the number of items removed or moved. */
static int pull_tail(struct sim *m, uint32_t cls, uint32_t lru, uint64_t total_bytes, int flags,
                     uint32_t max_age)
{
    int removed = 0;
    uint32_t search = m->lru[cls][lru].tail, next;
    for (int tries = PULL_TAIL_TRIES; tries > 0 && search != NONE; tries--, search = next) {
        struct sim_key *k = &m->k[search];
        next = k->prev;
        if (search == m->locked)
            continue; /* item_trylock fails */
        if (expired_tail(m, k)) {
            m->r->reclaimed++;
            item_remove(m, search);
            removed++;
            continue;
        }
        uint64_t limit = 0;
        switch (lru) {
        case LRU_HOT: limit = total_bytes * HOT_LRU_PCT / 100; /* fall through */
        case LRU_WARM:
            if (limit == 0)
                limit = total_bytes * WARM_LRU_PCT / 100;
            if (k->bits & KB_ACTIVE) {
                k->bits &= ~KB_ACTIVE;
                removed++;
                lru_move(m, search, LRU_WARM); /* WARM: to its head again */
            } else if (m->lru[cls][lru].bytes > limit || m->now - k->time > max_age) {
                lru_move(m, search, LRU_COLD);
                removed++;
            }
            return removed;
        default: /* COLD */
            if (flags & PULL_EVICT) {
                item_evict(m, search, cls);
                removed++;
                if (m->cfg->automove == 2)
                    automove_on_eviction(m, cls);
            } else if ((k->bits & KB_ACTIVE) && m->segmented) {
                k->bits &= ~KB_ACTIVE;
                lru_move(m, search, LRU_WARM);
                removed++;
            }
            return removed;
        }
    }
    return removed;
}

/* items.c lru_maintainer_juggle for one class, run at once (capacity.h). */
static void juggle(struct sim *m, uint32_t cls)
{
    struct sim_list *li = m->lru[cls];
    uint32_t cold_age = li[LRU_COLD].tail != NONE ? m->now - m->k[li[LRU_COLD].tail].time : 0;
    uint32_t hot_age = (uint32_t)(cold_age * HOT_MAX_FACTOR);
    uint32_t warm_age = (uint32_t)(cold_age * WARM_MAX_FACTOR);
    uint64_t total = li[LRU_HOT].bytes + li[LRU_WARM].bytes + li[LRU_COLD].bytes;
    for (int i = 0; i < JUGGLE_ROUNDS; i++) {
        int more = 0;
        if (pull_tail(m, cls, LRU_HOT, total, 0, hot_age) ||
            pull_tail(m, cls, LRU_WARM, total, 0, warm_age))
            more++;
        more += pull_tail(m, cls, LRU_COLD, total, 0, 0);
        if (!more)
            break;
    }
}

/* do_slabs_alloc */
static bool slabs_alloc(struct sim *m, uint32_t cls)
{
    if (m->free_chunks[cls] == 0)
        new_page(m, cls);
    if (m->free_chunks[cls] == 0)
        return false;
    m->free_chunks[cls]--;
    m->r->cls[cls].used_chunks++;
    if (m->track)
        m->got_page = m->fl[cls].v[--m->fl[cls].n];
    return true;
}

/* do_item_alloc_pull: one chunk of class cls. */
static bool chunk_alloc(struct sim *m, uint32_t cls)
{
    for (int i = 0; i < CAPACITY_PULL_TRIES; i++) {
        if (!m->segmented)
            pull_tail(m, cls, LRU_COLD, 0, 0, 0);
        if (slabs_alloc(m, cls))
            return true;
        if (pull_tail(m, cls, LRU_COLD, 0, PULL_EVICT, 0) <= 0) {
            if (m->segmented)
                pull_tail(m, cls, LRU_HOT, 0, 0, 0);
            else
                return false;
        }
    }
    return false;
}

/* A whole item: header and data chunks in memcached's order. false (and
 * nothing held) when a chunk cannot be had. */
static bool item_alloc(struct sim *m, const struct slab_item_layout *it, bool *fallback,
                       uint32_t *pg)
{
    *fallback = false;
    *pg = NONE;
    if (!it->chunked) {
        if (!chunk_alloc(m, it->lru_class))
            return false;
        *pg = m->got_page;
        return true;
    }
    if (!chunk_alloc(m, it->hdr_class))
        return false;
    uint64_t got = 0;
    for (; got < it->full_chunks; got++)
        if (!chunk_alloc(m, it->full_class))
            goto fail;
    if (it->tail_class && !chunk_alloc(m, it->tail_class)) {
        if (!chunk_alloc(m, m->l->n_classes))
            goto fail;
        *fallback = true;
    }
    return true;
fail:
    chunk_free(m, it->hdr_class, NONE);
    while (got--)
        chunk_free(m, it->full_class, NONE);
    return false;
}

/* do_item_link: key with the given size at the head of HOT (segmented) or
 * its one LRU (plain). */
static void item_link(struct sim *m, uint32_t key, uint8_t key_len, uint8_t has_flags,
                      uint32_t value_len, uint32_t exptime, bool fallback,
                      const struct slab_item_layout *it, uint32_t pg)
{
    struct sim_key *k = &m->k[key];
    k->key_len = key_len;
    k->value_len = value_len;
    k->bits = KB_PRESENT | (has_flags ? KB_FLAGS : 0) | (fallback ? KB_FALLBACK : 0) |
              (it->chunked ? KB_CHUNKED : 0);
    k->exptime = exptime;
    k->time = m->now;
    k->cls = (uint8_t)it->lru_class;
    lru_link(m, key, m->segmented ? LRU_HOT : LRU_COLD);
    if (m->track && !it->chunked)
        page_link(m, key, pg);
    m->r->cls[it->lru_class].items++;
    m->r->cls[it->lru_class].requested += it->ntotal;
}

/* do_item_update */
static void item_update(struct sim *m, uint32_t key)
{
    struct sim_key *k = &m->k[key];
    if (m->segmented) {
        if (k->lru == LRU_COLD && (k->bits & KB_ACTIVE)) {
            k->time = m->now;
            k->bits &= ~KB_ACTIVE;
            lru_move(m, key, LRU_WARM);
        } else {
            k->time = m->now;
        }
    } else if (k->time < m->now - UPDATE_INTERVAL) {
        k->time = m->now;
        lru_move(m, key, LRU_COLD);
    }
}

/* do_item_bump: a fetch (the COLD -> WARM bump done at once) */
static void item_bump(struct sim *m, uint32_t key)
{
    struct sim_key *k = &m->k[key];
    if (!m->segmented) {
        k->bits |= KB_FETCHED;
        item_update(m, key);
        return;
    }
    if (k->bits & KB_ACTIVE)
        return;
    if (!(k->bits & KB_FETCHED)) {
        k->bits |= KB_FETCHED;
        return;
    }
    k->bits |= KB_ACTIVE;
    if (k->lru != LRU_COLD)
        k->time = m->now;
    else
        item_update(m, key);
}

/* set, add, replace (and cas, ms); a demand-fill is a set */
static void apply_store(struct sim *m, uint32_t key, enum capacity_kind kind, uint8_t key_len,
                        uint8_t has_flags, uint32_t value_len, int32_t exptime)
{
    struct slab_item_layout it;
    bool fb;
    uint32_t pg;
    if (slab_item_layout(m->l, key_len, has_flags, value_len, &it) != SLAB_OK) {
        m->r->too_large++;
        if (kind == CAPACITY_SET && item_lookup(m, key))
            item_remove(m, key);
        return;
    }
    if (!item_alloc(m, &it, &fb, &pg)) {
        m->r->outofmemory++;
        m->r->cls[it.lru_class].outofmemory++;
        if (kind == CAPACITY_SET && item_lookup(m, key))
            item_remove(m, key);
        return;
    }
    /* do_store_item's lookup, after the evictions the allocation made */
    bool present = item_lookup(m, key);
    if ((kind == CAPACITY_ADD && present) || (kind == CAPACITY_REPLACE && !present)) {
        if (present)
            item_update(m, key); /* add: "promote to head of LRU" */
        layout_free(m, &it, fb, pg);
        m->r->not_stored++;
        return;
    }
    if (present)
        item_remove(m, key);
    item_link(m, key, key_len, has_flags, value_len, rel_exptime(m, exptime), fb, &it, pg);
    if (m->segmented)
        juggle(m, it.lru_class);
}

static void apply_append(struct sim *m, const struct capacity_op *op)
{
    struct slab_item_layout piece, whole;
    bool pfb, wfb;
    uint32_t ppg, wpg = NONE;
    if (slab_item_layout(m->l, op->key_len, op->has_flags, op->value_len, &piece) != SLAB_OK) {
        m->r->too_large++;
        return;
    }
    if (!item_alloc(m, &piece, &pfb, &ppg)) {
        m->r->outofmemory++;
        m->r->cls[piece.lru_class].outofmemory++;
        return;
    }
    struct sim_key *k = &m->k[op->key];
    bool present = item_lookup(m, op->key);
    uint64_t vlen = (uint64_t)k->value_len + op->value_len;
    bool stored = false;
    if (present && vlen <= UINT32_MAX &&
        slab_item_layout(m->l, k->key_len, k->bits & KB_FLAGS, vlen, &whole) == SLAB_OK) {
        m->locked = op->key; /* do_store_item holds the key's item lock */
        stored = item_alloc(m, &whole, &wfb, &wpg);
        m->locked = NONE;
    }
    layout_free(m, &piece, pfb, ppg);
    if (!stored) {
        m->r->not_stored++;
        return;
    }
    uint8_t kl = k->key_len, hf = (k->bits & KB_FLAGS) != 0;
    uint32_t exp = k->exptime; /* the new item keeps old_it->exptime */
    item_remove(m, op->key);
    item_link(m, op->key, kl, hf, (uint32_t)vlen, exp, wfb, &whole, wpg);
    if (m->segmented)
        juggle(m, whole.lru_class);
}

/* get/gets, gat and touch: a lookup with a bump. memcached counts a get in
 * get_hits/get_misses and a gat, like a touch, in touch_hits/touch_misses
 * (proto_text.c process_get_command); the measured window (the hit ratio)
 * counts both reads that return the value: get and gat. */
static void apply_read(struct sim *m, const struct capacity_op *op, bool measured)
{
    bool is_get = op->kind == CAPACITY_GET;
    bool reads = op->kind != CAPACITY_TOUCH;
    bool hit = item_lookup(m, op->key);
    struct capacity_result *r = m->r;
    if (is_get)
        r->gets++;
    else
        r->touches++;
    if (reads)
        r->measured_gets += measured;
    if (hit) {
        struct sim_key *k = &m->k[op->key];
        item_bump(m, op->key);
        if (is_get) {
            r->hits++;
        } else {
            k->exptime = rel_exptime(m, op->exptime);
            r->touch_hits++;
        }
        if (reads) {
            r->measured_hits += measured;
            r->cls[k->cls].hits++;
        }
        return;
    }
    if (!reads)
        return;
    if (is_get)
        r->misses++;
    uint32_t cls = slab_ladder_class_for(
        m->l, slab_item_ntotal(m->l->use_cas, op->key_len, op->has_flags, op->value_len));
    r->cls[cls].misses++; /* [0]: a fill memcached would refuse */
    if (!op->fill)
        return;
    r->fills++;
    r->cls[cls].fills++;
    apply_store(m, op->key, CAPACITY_SET, op->key_len, op->has_flags, op->value_len, op->exptime);
}

/* The LRU tail item of cls to give up with a moved page (COLD, WARM, HOT),
 * never the locked key; NONE when there is none. */
static uint32_t move_victim(struct sim *m, uint32_t cls)
{
    static const uint32_t order[LRU_N] = { LRU_COLD, LRU_WARM, LRU_HOT };
    for (int i = 0; i < LRU_N; i++) {
        uint32_t v = m->lru[cls][order[i]].tail;
        if (v != NONE && v == m->locked)
            v = m->k[v].prev;
        if (v != NONE)
            return v;
    }
    return NONE;
}

/* slab_rebalance_start .. _finish, at once: src's page to dst (0: the
 * global pool); the items it held are rescued into src's free chunks or
 * lost (capacity.h). */
/* slabs.c slab_rebalance_start .. _finish with the pages tracked:
 * slab_list[0] leaves src; each live item in it is rescued into a free
 * chunk of src outside the page (slab_rebalance_alloc; free chunks inside
 * it are cut), or, with none left, lost (evictions_nomem); an expired one
 * is dropped. A rescued item is relinked (do_item_replace): head of its
 * LRU, time = now. */
static void page_move_tracked(struct sim *m, uint32_t src, uint32_t dst)
{
    struct capacity_class *s = &m->r->cls[src];
    struct u32vec *fl = &m->fl[src];
    uint32_t pg = m->slabs[src].v[0];
    for (uint32_t key = m->items.v[pg], next; key != NONE; key = next) {
        struct sim_key *k = &m->k[key];
        next = k->pnext;
        if (expired_tail(m, k)) {
            item_remove(m, key); /* its chunk: on the free list, cut below */
            continue;
        }
        uint32_t to = NONE;
        while (fl->n > 0) {
            uint32_t f = fl->v[--fl->n];
            m->free_chunks[src]--;
            s->used_chunks++;
            if (f != pg) {
                to = f;
                break;
            }
            s->used_chunks--; /* inline_reclaim: a chunk of the page itself */
        }
        if (to == NONE) {
            m->r->move_evictions++;
            item_remove(m, key);
            continue;
        }
        /* the old chunk (in pg) goes with the page, not to the free list */
        s->used_chunks--;
        page_unlink(m, key);
        page_link(m, key, to);
        k->time = m->now;
        lru_move(m, key, k->lru);
        m->r->move_rescues++;
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < fl->n; i++)
        if (fl->v[i] != pg)
            fl->v[kept++] = fl->v[i];
    m->free_chunks[src] -= fl->n - kept;
    fl->n = kept;
    struct u32vec *sl = &m->slabs[src];
    memmove(sl->v, sl->v + 1, (size_t)(sl->n - 1) * sizeof *sl->v);
    sl->n--;
    s->pages--;
    if (dst == 0) {
        m->pool++;
        vec_push(m, &m->poolv, pg);
    } else {
        m->r->cls[dst].pages++;
        m->free_chunks[dst] += m->l->cls[dst].perslab;
        vec_push(m, &m->slabs[dst], pg);
        for (uint64_t i = 0; i < m->l->cls[dst].perslab; i++)
            vec_push(m, &m->fl[dst], pg);
    }
    m->r->moves++;
}

static void page_move(struct sim *m, uint32_t src, uint32_t dst)
{
    struct capacity_class *s = &m->r->cls[src];
    uint64_t per = m->l->cls[src].perslab;
    if (src == dst || s->pages < 2)
        return;
    if (m->track) {
        page_move_tracked(m, src, dst);
        return;
    }
    uint64_t keep = (s->pages - 1) * per;
    while (s->used_chunks > keep) {
        uint32_t v = move_victim(m, src);
        if (v == NONE)
            return; /* its chunks belong to other classes' items: not made */
        m->r->move_evictions++;
        item_remove(m, v);
    }
    s->pages--;
    m->free_chunks[src] -= per;
    if (dst == 0) {
        m->pool++;
    } else {
        m->r->cls[dst].pages++;
        m->free_chunks[dst] += m->l->cls[dst].perslab;
    }
    m->r->moves++;
}

/* slab_automove.c slab_automove_run, once; true when it gave a page to the
 * global pool (the maintainer then runs it again without waiting). */
static bool automove_window(struct sim *m)
{
    struct am_state *a = m->am;
    uint32_t n_cls = m->l->n_classes;
    int src = -1, dst = -1, oldest = -1, youngest = -1;
    uint64_t oldest_age = 0, youngest_age = UINT64_MAX;
    bool youngest_evicting = false;
    uint64_t evicted_total = 0;
    for (uint32_t n = 1; n <= n_cls; n++)
        evicted_total += m->r->cls[n].evictions - a->evicted_before[n];
    a->window_cur++;
    for (uint32_t n = 1; n <= n_cls; n++) {
        const struct capacity_class *c = &m->r->cls[n];
        struct am_window *wd = &a->w[n][a->window_cur % AUTOMOVE_WINDOW];
        memset(wd, 0, sizeof *wd);
        uint64_t evicted_delta = c->evictions - a->evicted_before[n];
        if (evicted_delta > 0) {
            wd->evicted_ratio = (float)evicted_delta / (float)evicted_total;
            wd->evicted_seen = 1;
            wd->dirty = 1;
        }
        if (c->outofmemory - a->oom_before[n] > 0)
            wd->dirty = 1;
        if (c->pages > a->pages_before[n])
            wd->dirty = 1;
        uint32_t tail = m->lru[n][LRU_COLD].tail;
        wd->age = tail != NONE ? m->now - m->k[tail].time : 0;
        struct am_window sum = { 0 };
        for (uint32_t x = 0; x < AUTOMOVE_WINDOW; x++) {
            sum.age += a->w[n][x].age;
            sum.dirty += a->w[n][x].dirty;
            sum.evicted_ratio += a->w[n][x].evicted_ratio;
            sum.evicted_seen += a->w[n][x].evicted_seen;
        }
        uint64_t age = sum.age / AUTOMOVE_WINDOW;
        if (m->free_chunks[n] > m->l->cls[n].perslab * MIN_PAGES_FOR_RECLAIM && sum.dirty == 0) {
            src = (int)n;
            dst = 0;
            youngest = oldest = -1;
            break;
        }
        if (age > oldest_age && c->pages > MIN_PAGES_FOR_SOURCE) {
            oldest = (int)n;
            oldest_age = age;
        }
        if (age < youngest_age && (sum.evicted_seen > AUTOMOVE_WINDOW / 2 ||
                                   sum.evicted_ratio / AUTOMOVE_WINDOW > 0.25)) {
            youngest = (int)n;
            youngest_age = age;
            youngest_evicting = wd->evicted_seen != 0;
        }
    }
    for (uint32_t n = 1; n <= n_cls; n++) {
        a->evicted_before[n] = m->r->cls[n].evictions;
        a->oom_before[n] = m->r->cls[n].outofmemory;
        a->pages_before[n] = m->r->cls[n].pages;
    }
    if (youngest != -1 && oldest != -1 && a->window_cur > AUTOMOVE_WINDOW &&
        youngest_age < (double)oldest_age * AUTOMOVE_RATIO && youngest_evicting) {
        src = oldest;
        dst = youngest;
    }
    if (src != -1 && dst != -1)
        page_move(m, (uint32_t)src, (uint32_t)dst);
    return src != -1 && dst == 0;
}

/* The maintainer's once-a-second automove check for the seconds up to
 * now (at most a window and one of them for an idle gap). */
static void automove_tick(struct sim *m)
{
    struct am_state *a = m->am;
    if (a->last_check == m->now)
        return;
    uint32_t runs = m->now - a->last_check;
    if (runs > AUTOMOVE_WINDOW + 1)
        runs = AUTOMOVE_WINDOW + 1;
    for (uint32_t i = 0; i < runs; i++) {
        /* a reclaim to the global pool is retried at once (dst == 0) */
        for (uint32_t j = 0; j <= m->l->n_classes && automove_window(m); j++)
            ;
    }
    a->last_check = m->now;
}

/* Pages are tracked when no item of the run is chunked and no
 * append/prepend can make one (capacity.h). */
static bool seq_trackable(const struct slab_ladder *l, const struct capacity_seq *s, size_t from,
                          size_t to)
{
    if (to > s->n)
        to = s->n;
    for (size_t i = from; i < to; i++) {
        const struct capacity_op *op = &s->ops[i];
        struct slab_item_layout it;
        switch ((enum capacity_kind)op->kind) {
        case CAPACITY_APPEND:
        case CAPACITY_PREPEND: return false;
        case CAPACITY_GET:
        case CAPACITY_GAT:
            if (!op->fill)
                break;
            /* fall through */
        case CAPACITY_SET:
        case CAPACITY_ADD:
        case CAPACITY_REPLACE:
            if (slab_item_layout(l, op->key_len, op->has_flags, op->value_len, &it) == SLAB_OK &&
                it.chunked)
                return false;
            break;
        default: break;
        }
    }
    return true;
}

void capacity_config_default(struct capacity_config *c, uint64_t mem_limit)
{
    memset(c, 0, sizeof *c);
    c->mem_limit = mem_limit;
    c->lru = CAPACITY_LRU_SEGMENTED;
    c->automove = 1;
    c->move_busy_reqs = CAPACITY_MOVE_BUSY_REQS;
    c->use_cas = true;
}

int capacity_run(const struct slab_ladder *l, const struct capacity_config *cfg,
                 const struct capacity_seq *s, size_t from, size_t to, struct capacity_result *out)
{
    if (cfg->automove > 2)
        return -1;
    struct sim m = { .l = l, .cfg = cfg, .r = out, .locked = NONE };
    memset(out, 0, sizeof *out);
    out->mem_limit = cfg->mem_limit;
    m.segmented = cfg->lru == CAPACITY_LRU_SEGMENTED;
    m.page_limit = cfg->mem_limit ? cfg->mem_limit / l->slab_page_size : UINT64_MAX;
    m.k = calloc(s->n_keys ? s->n_keys : 1, sizeof *m.k);
    if (!m.k)
        return -1;
    bool automove1 = cfg->automove == 1 && m.segmented;
    if (automove1 && !(m.am = calloc(1, sizeof *m.am))) {
        free(m.k);
        return -1;
    }
    for (uint32_t i = 0; i < s->n_keys; i++)
        m.k[i].prev = m.k[i].next = m.k[i].pprev = m.k[i].pnext = m.k[i].page = NONE;
    m.got_page = NONE;
    m.track = cfg->automove == 2 && seq_trackable(l, s, from, to);
    for (uint32_t c = 0; c <= SLAB_MODEL_MAX_CLASSES; c++)
        for (int j = 0; j < LRU_N; j++)
            m.lru[c][j].head = m.lru[c][j].tail = NONE;
    if (to > s->n)
        to = s->n;
    uint32_t t0 = from < to ? s->ops[from].t : 0;
    m.now = REL_BASE;
    if (m.am)
        m.am->last_check = m.now;
    for (size_t i = from; i < to; i++) {
        const struct capacity_op *op = &s->ops[i];
        m.op = i;
        if (m.pend_src && i >= m.busy_until) {
            page_move(&m, m.pend_src, m.pend_dst);
            m.pend_src = 0;
        }
        uint32_t now = REL_BASE + (op->t > t0 ? op->t - t0 : 0);
        if (now > m.now) {
            m.now = now;
            if (m.segmented)
                for (uint32_t c = 1; c <= l->n_classes; c++)
                    juggle(&m, c);
            if (m.am)
                automove_tick(&m);
        }
        switch ((enum capacity_kind)op->kind) {
        case CAPACITY_SET:
        case CAPACITY_ADD:
        case CAPACITY_REPLACE:
            apply_store(&m, op->key, (enum capacity_kind)op->kind, op->key_len, op->has_flags,
                        op->value_len, op->exptime);
            break;
        case CAPACITY_APPEND:
        case CAPACITY_PREPEND: apply_append(&m, op); break;
        case CAPACITY_DELETE:
            if (item_lookup(&m, op->key))
                item_remove(&m, op->key);
            break;
        case CAPACITY_GET:
        case CAPACITY_TOUCH:
        case CAPACITY_GAT: apply_read(&m, op, i >= cfg->measure_from); break;
        case CAPACITY_OTHER:
        case CAPACITY_KIND_COUNT: out->unmodelled++; break;
        }
    }
    for (uint32_t c = 1; c <= l->n_classes; c++) {
        const struct capacity_class *cc = &out->cls[c];
        out->items += cc->items;
        out->requested += cc->requested;
        out->chunk_bytes += cc->used_chunks * l->cls[c].chunk_size;
        out->classes_used += cc->pages > 0;
        for (int j = 0; j < LRU_N; j++)
            out->cls[c].lru_items[j] = m.lru[c][j].n;
    }
    out->pool_pages = m.pool;
    out->malloced = out->pages * l->slab_page_size;
    out->chunk_waste = out->chunk_bytes - out->requested;
    out->page_slack = out->malloced - out->chunk_bytes;
    free(m.k);
    free(m.am);
    free(m.items.v);
    free(m.poolv.v);
    for (uint32_t c = 0; c <= SLAB_MODEL_MAX_CLASSES; c++) {
        free(m.slabs[c].v);
        free(m.fl[c].v);
    }
    return m.oom ? -1 : 0;
}

int capacity_simulate(const struct slab_ladder *l, uint64_t mem_limit, const struct capacity_seq *s,
                      size_t from, size_t to, struct capacity_result *out)
{
    struct capacity_config c = { .mem_limit = mem_limit,
                                 .lru = CAPACITY_LRU_SEGMENTED,
                                 .automove = 0,
                                 .measure_from = from,
                                 .use_cas = l->use_cas };
    return capacity_run(l, &c, s, from, to, out);
}

double capacity_hit_ratio(const struct capacity_result *r)
{
    return r->measured_gets ? (double)r->measured_hits / (double)r->measured_gets : 0.0;
}

int capacity_mrc(const struct slab_ladder *l, const struct capacity_config *base,
                 const struct capacity_seq *s, size_t from, size_t to, const uint64_t *mem_limits,
                 size_t n, struct capacity_result *out)
{
    struct capacity_config c = *base;
    for (size_t i = 0; i < n; i++) {
        c.mem_limit = mem_limits[i];
        if (capacity_run(l, &c, s, from, to, &out[i]))
            return -1;
    }
    return 0;
}

/* Marks the classes an item of this size takes chunks in. */
static void mark_classes(const struct slab_ladder *l, uint32_t key_len, bool has_flags,
                         uint32_t value_len, bool *used)
{
    struct slab_item_layout it;
    if (slab_item_layout(l, key_len, has_flags, value_len, &it) != SLAB_OK)
        return;
    if (!it.chunked) {
        used[it.lru_class] = true;
        return;
    }
    used[it.hdr_class] = true;
    if (it.full_chunks)
        used[it.full_class] = true;
    if (it.tail_class)
        used[it.tail_class] = true;
}

enum capacity_shards_status capacity_shards_run(const struct slab_ladder *l,
                                                const struct capacity_config *cfg, uint32_t n,
                                                const struct capacity_seq *s, size_t from,
                                                size_t to, uint32_t *classes,
                                                struct capacity_result *out)
{
    if (n == 0 || cfg->mem_limit == 0)
        return CAPACITY_SHARDS_ERROR;
    bool used[SLAB_MODEL_MAX_CLASSES + 1] = { false };
    if (to > s->n)
        to = s->n;
    for (size_t i = from; i < to; i++) {
        const struct capacity_op *op = &s->ops[i];
        switch ((enum capacity_kind)op->kind) {
        case CAPACITY_SET:
        case CAPACITY_ADD:
        case CAPACITY_REPLACE:
        case CAPACITY_APPEND:
        case CAPACITY_PREPEND:
            mark_classes(l, op->key_len, op->has_flags, op->value_len, used);
            break;
        case CAPACITY_GET:
        case CAPACITY_GAT:
            if (op->fill)
                mark_classes(l, op->key_len, op->has_flags, op->value_len, used);
            break;
        default: break;
        }
    }
    uint32_t nc = 0;
    for (uint32_t c = 1; c <= l->n_classes; c++)
        nc += used[c];
    if (classes)
        *classes = nc;
    struct capacity_config c = *cfg;
    c.mem_limit = cfg->mem_limit / n;
    if (c.mem_limit / l->slab_page_size < (uint64_t)CAPACITY_SHARDS_MIN_PAGES * (nc ? nc : 1))
        return CAPACITY_SHARDS_TOO_SMALL;
    return capacity_run(l, &c, s, from, to, out) ? CAPACITY_SHARDS_ERROR : CAPACITY_SHARDS_OK;
}

const char *capacity_objective_str(enum capacity_objective o)
{
    return o == CAPACITY_OBJ_MEMORY ? "memory" : "items";
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

int capacity_compare(enum capacity_objective o, const struct capacity_result *a,
                     const struct capacity_result *b)
{
    int c;
    if (o == CAPACITY_OBJ_MEMORY) {
        if ((c = cmp_u64(a->items, b->items)) != 0)
            return c;
        return -cmp_u64(a->malloced, b->malloced);
    }
    if ((c = cmp_u64(a->items, b->items)) != 0)
        return c;
    if ((c = cmp_u64(a->requested, b->requested)) != 0)
        return c;
    return -cmp_u64(a->evictions, b->evictions);
}
