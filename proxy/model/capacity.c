/* capacity: the write sequence and the page/chunk/LRU simulation (rules in
 * capacity.h). Pure; allocates per key. */
#include "model/capacity.h"

#include <stdlib.h>
#include <string.h>

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

int capacity_seq_add(struct capacity_seq *s, uint64_t key_hash, enum capacity_kind kind,
                     uint32_t key_len, uint32_t flags, uint64_t value_len)
{
    if (key_len == 0 || key_len > 250 || value_len > SLAB_MODEL_ITEM_SIZE_MAX_MAX ||
        kind > CAPACITY_OTHER)
        return -1;
    if (s->n == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 1024;
        struct capacity_op *o = realloc(s->ops, ncap * sizeof *o);
        if (!o)
            return -1;
        s->ops = o;
        s->cap = ncap;
    }
    int64_t k = seq_key(s, key_hash);
    if (k < 0)
        return -1;
    s->ops[s->n++] = (struct capacity_op){ .key = (uint32_t)k,
                                           .value_len = (uint32_t)value_len,
                                           .kind = (uint8_t)kind,
                                           .key_len = (uint8_t)key_len,
                                           .has_flags = flags != 0 };
    return 0;
}

/* --- the simulation ----------------------------------------------------- */

/* One live item per key: its size (the layout is recomputed from it) and
 * its place in its class's LRU (head: newest). */
struct sim_key {
    uint32_t prev, next; /* towards head / towards tail */
    uint32_t value_len;
    uint8_t key_len;
    uint8_t has_flags;
    uint8_t present;
    uint8_t tail_fallback; /* the tail chunk went to a slab_chunk_max chunk */
};

struct sim {
    const struct slab_ladder *l;
    uint64_t page_limit; /* pages that fit mem_limit; UINT64_MAX: none */
    struct sim_key *k;
    uint32_t head[SLAB_MODEL_MAX_CLASSES + 1], tail[SLAB_MODEL_MAX_CLASSES + 1];
    uint64_t free_chunks[SLAB_MODEL_MAX_CLASSES + 1];
    struct capacity_result *r;
};

static void lru_link(struct sim *m, uint32_t key, uint32_t cls)
{
    struct sim_key *k = &m->k[key];
    k->prev = NONE;
    k->next = m->head[cls];
    if (m->head[cls] != NONE)
        m->k[m->head[cls]].prev = key;
    m->head[cls] = key;
    if (m->tail[cls] == NONE)
        m->tail[cls] = key;
}

static void lru_unlink(struct sim *m, uint32_t key, uint32_t cls)
{
    struct sim_key *k = &m->k[key];
    if (k->prev != NONE)
        m->k[k->prev].next = k->next;
    else
        m->head[cls] = k->next;
    if (k->next != NONE)
        m->k[k->next].prev = k->prev;
    else
        m->tail[cls] = k->prev;
    k->prev = k->next = NONE;
}

/* do_slabs_newslab */
static bool new_page(struct sim *m, uint32_t cls)
{
    struct capacity_class *c = &m->r->cls[cls];
    if (m->r->pages + 1 > m->page_limit && c->pages > 0) {
        m->r->limit_reached = true;
        return false;
    }
    c->pages++;
    m->r->pages++;
    m->free_chunks[cls] += m->l->cls[cls].perslab;
    return true;
}

static void chunk_free(struct sim *m, uint32_t cls)
{
    m->r->cls[cls].used_chunks--;
    m->free_chunks[cls]++;
}

/* The chunks an item's layout holds, freed; fallback: its tail chunk is a
 * slab_chunk_max one. */
static void layout_free(struct sim *m, const struct slab_item_layout *it, bool fallback)
{
    if (!it->chunked) {
        chunk_free(m, it->lru_class);
        return;
    }
    chunk_free(m, it->hdr_class);
    for (uint64_t i = 0; i < it->full_chunks; i++)
        chunk_free(m, it->full_class);
    if (it->tail_class)
        chunk_free(m, fallback ? m->l->n_classes : it->tail_class);
}

static void key_layout(const struct sim *m, uint32_t key, struct slab_item_layout *it)
{
    const struct sim_key *k = &m->k[key];
    slab_item_layout(m->l, k->key_len, k->has_flags, k->value_len, it);
}

/* Unlinks a live item and frees its chunks (delete, overwrite, eviction). */
static void item_remove(struct sim *m, uint32_t key)
{
    struct slab_item_layout it;
    key_layout(m, key, &it);
    lru_unlink(m, key, it.lru_class);
    layout_free(m, &it, m->k[key].tail_fallback);
    m->r->cls[it.lru_class].items--;
    m->r->cls[it.lru_class].requested -= it.ntotal;
    m->k[key].present = 0;
}

/* do_item_alloc_pull: one chunk of class cls, evicting from the tail of
 * cls's LRU (never the item-locked key) while none is free. */
static bool chunk_alloc(struct sim *m, uint32_t cls, uint32_t locked)
{
    for (int i = 0; i < CAPACITY_PULL_TRIES; i++) {
        if (m->free_chunks[cls] == 0)
            new_page(m, cls);
        if (m->free_chunks[cls] > 0) {
            m->free_chunks[cls]--;
            m->r->cls[cls].used_chunks++;
            return true;
        }
        uint32_t victim = m->tail[cls];
        if (victim != NONE && victim == locked)
            victim = m->k[victim].prev;
        if (victim == NONE)
            return false;
        m->r->cls[cls].evictions++;
        m->r->evictions++;
        item_remove(m, victim);
    }
    return false;
}

/* A whole item: header and data chunks in memcached's order. false (and
 * nothing held) when a chunk cannot be had. */
static bool item_alloc(struct sim *m, const struct slab_item_layout *it, uint32_t locked,
                       bool *fallback)
{
    *fallback = false;
    if (!it->chunked)
        return chunk_alloc(m, it->lru_class, locked);
    if (!chunk_alloc(m, it->hdr_class, locked))
        return false;
    uint64_t got = 0;
    for (; got < it->full_chunks; got++)
        if (!chunk_alloc(m, it->full_class, locked))
            goto fail;
    if (it->tail_class && !chunk_alloc(m, it->tail_class, locked)) {
        if (!chunk_alloc(m, m->l->n_classes, locked))
            goto fail;
        *fallback = true;
    }
    return true;
fail:
    chunk_free(m, it->hdr_class);
    while (got--)
        chunk_free(m, it->full_class);
    return false;
}

/* Links key with the given size at the head of its class's LRU. */
static void item_link(struct sim *m, uint32_t key, uint8_t key_len, uint8_t has_flags,
                      uint32_t value_len, bool fallback, const struct slab_item_layout *it)
{
    struct sim_key *k = &m->k[key];
    k->key_len = key_len;
    k->has_flags = has_flags;
    k->value_len = value_len;
    k->tail_fallback = fallback;
    k->present = 1;
    lru_link(m, key, it->lru_class);
    m->r->cls[it->lru_class].items++;
    m->r->cls[it->lru_class].requested += it->ntotal;
}

static void apply_store(struct sim *m, const struct capacity_op *op)
{
    struct slab_item_layout it;
    bool fb;
    if (slab_item_layout(m->l, op->key_len, op->has_flags, op->value_len, &it) != SLAB_OK) {
        m->r->too_large++;
        if (op->kind == CAPACITY_SET && m->k[op->key].present)
            item_remove(m, op->key);
        return;
    }
    if (!item_alloc(m, &it, NONE, &fb)) {
        m->r->outofmemory++;
        m->r->cls[it.lru_class].outofmemory++;
        if (op->kind == CAPACITY_SET && m->k[op->key].present)
            item_remove(m, op->key);
        return;
    }
    bool present = m->k[op->key].present; /* after the evictions the allocation made */
    if ((op->kind == CAPACITY_ADD && present) || (op->kind == CAPACITY_REPLACE && !present)) {
        layout_free(m, &it, fb);
        m->r->not_stored++;
        return;
    }
    if (present)
        item_remove(m, op->key);
    item_link(m, op->key, op->key_len, op->has_flags, op->value_len, fb, &it);
}

static void apply_append(struct sim *m, const struct capacity_op *op)
{
    struct slab_item_layout piece, whole;
    bool pfb, wfb;
    if (slab_item_layout(m->l, op->key_len, op->has_flags, op->value_len, &piece) != SLAB_OK) {
        m->r->too_large++;
        return;
    }
    if (!item_alloc(m, &piece, NONE, &pfb)) {
        m->r->outofmemory++;
        m->r->cls[piece.lru_class].outofmemory++;
        return;
    }
    struct sim_key *k = &m->k[op->key];
    uint64_t vlen = (uint64_t)k->value_len + op->value_len;
    if (!k->present || vlen > UINT32_MAX ||
        slab_item_layout(m->l, k->key_len, k->has_flags, vlen, &whole) != SLAB_OK ||
        !item_alloc(m, &whole, op->key, &wfb)) {
        layout_free(m, &piece, pfb);
        m->r->not_stored++;
        return;
    }
    layout_free(m, &piece, pfb);
    uint8_t kl = k->key_len, hf = k->has_flags;
    item_remove(m, op->key);
    item_link(m, op->key, kl, hf, (uint32_t)vlen, wfb, &whole);
}

int capacity_simulate(const struct slab_ladder *l, uint64_t mem_limit, const struct capacity_seq *s,
                      size_t from, size_t to, struct capacity_result *out)
{
    struct sim m = { .l = l, .r = out };
    memset(out, 0, sizeof *out);
    out->mem_limit = mem_limit;
    m.page_limit = mem_limit ? mem_limit / l->slab_page_size : UINT64_MAX;
    m.k = calloc(s->n_keys ? s->n_keys : 1, sizeof *m.k);
    if (!m.k)
        return -1;
    for (uint32_t i = 0; i < s->n_keys; i++)
        m.k[i].prev = m.k[i].next = NONE;
    for (uint32_t c = 0; c <= SLAB_MODEL_MAX_CLASSES; c++)
        m.head[c] = m.tail[c] = NONE;
    if (to > s->n)
        to = s->n;
    for (size_t i = from; i < to; i++) {
        const struct capacity_op *op = &s->ops[i];
        switch ((enum capacity_kind)op->kind) {
        case CAPACITY_SET:
        case CAPACITY_ADD:
        case CAPACITY_REPLACE: apply_store(&m, op); break;
        case CAPACITY_APPEND:
        case CAPACITY_PREPEND: apply_append(&m, op); break;
        case CAPACITY_DELETE:
            if (m.k[op->key].present)
                item_remove(&m, op->key);
            break;
        case CAPACITY_OTHER: out->unmodelled++; break;
        }
    }
    for (uint32_t c = 1; c <= l->n_classes; c++) {
        const struct capacity_class *cc = &out->cls[c];
        out->items += cc->items;
        out->requested += cc->requested;
        out->chunk_bytes += cc->used_chunks * l->cls[c].chunk_size;
        out->classes_used += cc->pages > 0;
    }
    out->malloced = out->pages * l->slab_page_size;
    out->chunk_waste = out->chunk_bytes - out->requested;
    out->page_slack = out->malloced - out->chunk_bytes;
    free(m.k);
    return 0;
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
