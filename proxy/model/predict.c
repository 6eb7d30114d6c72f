/* predict: recorded writes through the slab model, beside memcached's own
 * last sample. Pure: the rows come from the caller (record/runs.c reads
 * them from a database). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/predict.h"

/* Live items by key hash: open addressing, grown at 50 % load. */
struct live_item {
    uint64_t hash;
    uint32_t key_len, flags;
    uint64_t value_len;
    bool used;
};

struct live_map {
    struct live_item *slots;
    size_t cap, count;
};

static struct live_item *live_find(struct live_map *m, uint64_t hash, bool create)
{
    if (create && (m->count + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 1024;
        struct live_item *n = calloc(ncap, sizeof *n);
        if (!n)
            return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].used)
                continue;
            size_t j = m->slots[i].hash & (ncap - 1);
            while (n[j].used)
                j = (j + 1) & (ncap - 1);
            n[j] = m->slots[i];
        }
        free(m->slots);
        m->slots = n;
        m->cap = ncap;
    }
    if (!m->cap)
        return NULL;
    size_t i = hash & (m->cap - 1);
    while (m->slots[i].used) {
        if (m->slots[i].hash == hash)
            return &m->slots[i];
        i = (i + 1) & (m->cap - 1);
    }
    if (!create)
        return NULL;
    m->slots[i] = (struct live_item){ .hash = hash, .used = false };
    return &m->slots[i];
}

/* Deleting from linear probing: re-insert the rest of the cluster. */
static void live_remove(struct live_map *m, struct live_item *it)
{
    size_t i = (size_t)(it - m->slots);
    m->slots[i].used = false;
    m->count--;
    for (size_t j = (i + 1) & (m->cap - 1); m->slots[j].used; j = (j + 1) & (m->cap - 1)) {
        struct live_item tmp = m->slots[j];
        m->slots[j].used = false;
        m->count--;
        struct live_item *dst = live_find(m, tmp.hash, true);
        *dst = tmp;
        m->count++;
    }
}

static bool answer_is(const char *a, const char *w)
{
    return a && !strncmp(a, w, strlen(w));
}

/* The key's old item leaves memcached (delete, refused set). */
static void unlink_old(struct prediction *r, struct live_map *m, struct live_item *old)
{
    struct slab_item_layout ol;
    if (slab_item_layout(&r->ladder, old->key_len, old->flags, old->value_len, &ol) == SLAB_OK)
        slab_counters_remove(&r->predicted, &r->ladder, &ol);
    live_remove(m, old);
}

/* One recorded row applied to the model. */
/* ms with a mode is the text command of that mode; unlinking on refusal
 * stays ms's own rule (any mode). */
static const char *ms_as(const char *cmd, char mode)
{
    if (strcmp(cmd, "ms"))
        return cmd;
    switch (mode) {
    case 'E': return "add";
    case 'A': return "append";
    case 'P': return "prepend";
    case 'R': return "replace";
    default: return "ms";
    }
}

static void apply_row(struct prediction *r, struct live_map *m, const char *cmd, char ms_mode,
                      uint64_t hash, uint32_t key_len, int64_t value_len, uint32_t flags,
                      const char *answer)
{
    struct slab_item_layout nl, ol;
    struct live_item *old = live_find(m, hash, false);
    bool stored = answer_is(answer, "STORED") || answer_is(answer, "HD");
    bool silent = answer_is(answer, "noreply") || answer_is(answer, "quiet");
    bool del = !strcmp(cmd, "delete") || !strcmp(cmd, "md");
    r->rows++;
    if (del) {
        if ((answer_is(answer, "DELETED") || answer_is(answer, "HD") || silent) && old) {
            unlink_old(r, m, old);
            r->deletes++;
        }
        return;
    }
    if (value_len < 0) { /* incr decr touch ma: sizes memcached keeps to itself */
        r->untracked += !strcmp(cmd, "incr") || !strcmp(cmd, "decr") || !strcmp(cmd, "ma");
        return;
    }
    if (silent) {
        r->assumed++;
        stored = true;
    }
    const char *as = ms_as(cmd, ms_mode);
    bool append = !strcmp(as, "append") || !strcmp(as, "prepend");
    /* a refused set also unlinks the key's old item (process_update_command);
     * so does a refused ms, whatever its mode (process_mset_command) */
    bool unlinks = !strcmp(cmd, "set") || !strcmp(cmd, "ms");
    if (!stored) {
        r->failed++;
        if (answer_is(answer, "SERVER_ERROR") && old && unlinks)
            unlink_old(r, m, old);
        return;
    }
    if (append && !old) {
        r->failed++;
        return;
    }
    uint64_t nvalue = append ? old->value_len + (uint64_t)value_len : (uint64_t)value_len;
    uint32_t nflags = append ? old->flags : flags;
    if (slab_item_layout(&r->ladder, key_len, nflags, nvalue, &nl) != SLAB_OK) {
        r->failed++;
        /* too large: memcached refused it without a word (noreply), and a
         * refused set still unlinks the old item */
        if (silent && !append && old && unlinks)
            unlink_old(r, m, old);
        return;
    }
    /* memcached builds an append piece by piece when the result (so also
     * the old item) or the appended data is chunked: not modelled
     * (slab_model.h), so such a run cannot be compared exactly */
    if (append && (nl.chunked || slab_item_ntotal(r->ladder.use_cas, key_len, flags,
                                                  (uint64_t)value_len) > r->ladder.slab_chunk_max))
        r->untracked++;
    slab_counters_add(&r->predicted, &r->ladder, &nl); /* new before old, as memcached */
    if (old &&
        slab_item_layout(&r->ladder, old->key_len, old->flags, old->value_len, &ol) == SLAB_OK)
        slab_counters_remove(&r->predicted, &r->ladder, &ol);
    if (!old) {
        old = live_find(m, hash, true);
        if (!old)
            return;
        old->used = true;
        m->count++;
    }
    old->key_len = key_len;
    old->flags = nflags;
    old->value_len = nvalue;
    r->applied++;
}

void predict_free(struct prediction *r)
{
    if (r->keys)
        free(r->keys->slots);
    free(r->keys);
    r->keys = NULL;
    advise_hist_free(&r->live);
}

static bool class_matches(const struct prediction *r, uint32_t c)
{
    const struct slab_class_counters *p = &r->predicted.cls[c];
    const struct predict_observed *o = &r->observed[c];
    if (!o->present)
        return p->used_chunks == 0 && p->mem_requested == 0 && p->total_pages == 0;
    return (int64_t)p->used_chunks == o->used_chunks &&
           (int64_t)p->mem_requested == o->mem_requested &&
           (int64_t)p->total_pages == o->total_pages;
}

int predict_mismatches(const struct prediction *r)
{
    int n = 0;
    for (uint32_t c = 1; c <= r->ladder.n_classes; c++)
        n += !class_matches(r, c);
    return n;
}

void predict_print(const struct prediction *r, FILE *out)
{
    fprintf(out, "run %lld '%s', memcached %s, -n %u -f %.2f -I %u, slab_chunk_max %u, CAS %s\n",
            (long long)r->run_id, r->run_name, r->version[0] ? r->version : "?",
            r->settings.chunk_size_min, r->settings.growth_factor, r->settings.item_size_max,
            r->settings.slab_chunk_max, r->settings.use_cas ? "on" : "off");
    fprintf(out, "%5s %9s | %12s %12s | %14s %14s | %6s %6s | %s\n", "class", "chunk", "used pred",
            "used obs", "requested pred", "requested obs", "pages", "obs", "");
    for (uint32_t c = 1; c <= r->ladder.n_classes; c++) {
        const struct slab_class_counters *p = &r->predicted.cls[c];
        const struct predict_observed *o = &r->observed[c];
        if (!p->used_chunks && !p->total_pages && !o->present)
            continue;
        fprintf(out, "%5u %9u | %12llu %12lld | %14llu %14lld | %6llu %6lld | %s\n", c,
                r->ladder.cls[c].chunk_size, (unsigned long long)p->used_chunks,
                (long long)o->used_chunks, (unsigned long long)p->mem_requested,
                (long long)o->mem_requested, (unsigned long long)p->total_pages,
                (long long)o->total_pages, class_matches(r, c) ? "=" : "DIFFERS");
    }
    fprintf(out,
            "writes: %llu rows, %llu applied (%llu assumed stored: noreply/quiet), %llu failed, "
            "%llu deletes, %llu live items\n",
            (unsigned long long)r->rows, (unsigned long long)r->applied,
            (unsigned long long)r->assumed, (unsigned long long)r->failed,
            (unsigned long long)r->deletes, (unsigned long long)r->live_items);
    int diff = predict_mismatches(r);
    if (!r->have_sample) {
        fprintf(out, "verdict: NO SAMPLE -- the run has no stats sample to compare with\n");
    } else if (!r->exact_expected) {
        fprintf(out,
                "verdict: NOT COMPARABLE EXACTLY -- evictions %lld, slabs moved %lld, "
                "reclaimed/expired %lld, writes with TTL %llu, incr/decr or chunked appends %llu, "
                "rows dropped %lld, "
                "items memcached held that the run did not write %lld, items the run left "
                "that memcached did not hold %lld; %d classes differ\n",
                (long long)r->evictions, (long long)r->slabs_moved, (long long)r->reclaimed,
                (unsigned long long)r->ttl_writes, (unsigned long long)r->untracked,
                (long long)r->rows_dropped,
                (long long)(r->foreign_items > 0 ? r->foreign_items : 0),
                (long long)(r->foreign_items < 0 ? -r->foreign_items : 0), diff);
    } else if (diff == 0) {
        fprintf(out, "verdict: EXACT -- every class matches memcached's own counters\n");
    } else {
        fprintf(out, "verdict: MISMATCH -- %d classes differ from memcached's counters\n", diff);
    }
}

int predict_begin(struct prediction *r, int64_t run_id, const struct slab_settings *s, char *err,
                  size_t errlen)
{
    memset(r, 0, sizeof *r);
    advise_hist_init(&r->live);
    slab_counters_init(&r->predicted);
    r->run_id = run_id;
    r->settings = *s;
    r->keys = calloc(1, sizeof *r->keys);
    if (!r->keys) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return slab_ladder_build(&r->settings, &r->ladder, err, errlen) == SLAB_OK ? 0 : -1;
}

void predict_apply(struct prediction *r, const struct predict_write *w)
{
    if (w->has_ttl)
        r->ttl_writes++;
    apply_row(r, r->keys, w->cmd, w->ms_mode, w->key_hash, w->key_len, w->value_len, w->flags,
              w->answer);
}

void predict_observe(struct prediction *r, uint32_t class_id, const struct predict_observed *o)
{
    if (class_id < 1 || class_id > SLAB_MODEL_MAX_CLASSES)
        return;
    r->observed[class_id] = *o;
    r->observed[class_id].present = true;
    r->have_sample = true;
}

int predict_end(struct prediction *r)
{
    struct live_map *m = r->keys;
    for (size_t i = 0; m && i < m->cap; i++) {
        if (!m->slots[i].used)
            continue;
        r->live_items++;
        if (advise_hist_add(&r->live,
                            slab_item_ntotal(r->ladder.use_cas, m->slots[i].key_len,
                                             m->slots[i].flags, m->slots[i].value_len),
                            1))
            return -1;
    }
    advise_hist_sort(&r->live);
    r->foreign_items = r->observed_curr_items - (int64_t)r->live_items;
    r->exact_expected = r->have_sample && r->evictions == 0 && r->slabs_moved == 0 &&
                        r->reclaimed == 0 && r->ttl_writes == 0 && r->untracked == 0 &&
                        r->rows_dropped == 0 && r->foreign_items == 0;
    return 0;
}
