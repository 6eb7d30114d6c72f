/* predict: recorded writes through the slab model, beside memcached's own
 * last sample. Pure: the rows come from the caller (record/runs.c reads
 * them from a database). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/predict.h"

#include <math.h>

#include "core/sample.h"

/* Live items by key hash: open addressing, grown at 50 % load. */
struct live_item {
    uint64_t hash;
    uint32_t key_len, flags;
    uint64_t value_len;
    bool used;
    bool flags_assumed; /* flags unknown, taken as 0 */
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

/* An incr/decr result: digits only. */
static bool answer_number(const char *a)
{
    if (!a || !*a)
        return false;
    for (; *a; a++)
        if (*a < '0' || *a > '9')
            return false;
    return true;
}

static void layout_remove(struct prediction *r, const struct live_item *it)
{
    struct slab_item_layout l;
    if (slab_item_layout(&r->ladder, it->key_len, it->flags, it->value_len, &l) == SLAB_OK)
        slab_counters_remove(&r->predicted, &r->ladder, &l);
}

/* The key's old item leaves memcached (delete, refused set). */
static void unlink_old(struct prediction *r, struct live_map *m, struct live_item *old)
{
    layout_remove(r, old);
    live_remove(m, old);
}

/* memcached allocated an item and freed it again (process_update_command
 * allocates before store_item decides): its chunks count towards the
 * class's pages, which stay. */
static void throwaway(struct prediction *r, const struct slab_item_layout *l)
{
    if (slab_counters_add(&r->predicted, &r->ladder, l) == SLAB_OK)
        slab_counters_remove(&r->predicted, &r->ladder, l);
    r->throwaway++;
}

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

/* The live item of hash, created when it is new; NULL out of memory. */
static struct live_item *live_put(struct live_map *m, struct live_item *old, uint64_t hash)
{
    if (old)
        return old;
    old = live_find(m, hash, true);
    if (old) {
        old->used = true;
        m->count++;
    }
    return old;
}

/* incr/decr (memcached.c do_add_delta): a result that fits the old value
 * (res + 2 <= nbytes) is written in place, padded with spaces; a longer
 * one is a new item of the result's length, allocated while the old one
 * is linked. Failures (NOT_FOUND, non-numeric) allocate nothing. */
static void apply_arith(struct prediction *r, struct live_map *m, const char *cmd,
                        const char *answer, bool silent, uint64_t hash)
{
    struct live_item *old = live_find(m, hash, false);
    uint64_t res;
    bool meta = !strcmp(cmd, "ma");
    if (silent) {
        /* no answer: a decr never lengthens the number, and an incr cannot
         * outgrow 20 digits; otherwise the new size is unknown */
        if (!old)
            return; /* NOT_FOUND as far as the model knows */
        if (!meta && (!strcmp(cmd, "decr") || old->value_len >= 20))
            r->arith_applied++;
        else
            r->arith_unknown++;
        return;
    }
    if (!meta && answer_number(answer))
        res = strlen(answer);
    else if (meta && answer_is(answer, "VA ") && answer_number(answer + 3))
        res = strtoull(answer + 3, NULL, 10);
    else if (meta && (answer_is(answer, "HD") || answer_is(answer, "OK")))
        res = UINT64_MAX; /* succeeded, size not said */
    else
        return; /* NOT_FOUND, NF, NS, EX, CLIENT_ERROR: nothing allocated */
    if (!old || res == UINT64_MAX) {
        if (old)
            r->arith_unknown++;
        else
            r->unknown_items++;
        return;
    }
    if (res > old->value_len) {
        struct slab_item_layout nl;
        if (slab_item_layout(&r->ladder, old->key_len, old->flags, res, &nl) == SLAB_OK) {
            slab_counters_add(&r->predicted, &r->ladder, &nl);
            layout_remove(r, old);
            old->value_len = res;
        }
    }
    r->arith_applied++;
}

/* What memcached did with a storage command that got no answer (noreply,
 * meta quiet): what the model knows of the key decides add, replace,
 * append and prepend exactly; a too-large item is refused; a cas is
 * assumed stored. Returns "STORED", "NOT_STORED" or "SERVER_ERROR". */
static const char *silent_outcome(const char *as, bool have_old, bool fits, bool whole_fits)
{
    if (!fits)
        return "SERVER_ERROR";
    if (!whole_fits) /* an append whose result memcached cannot allocate */
        return "NOT_STORED";
    if (!strcmp(as, "add"))
        return have_old ? "NOT_STORED" : "STORED";
    if (!strcmp(as, "replace") || !strcmp(as, "append") || !strcmp(as, "prepend"))
        return have_old ? "STORED" : "NOT_STORED";
    return "STORED";
}

/* One recorded row applied to the model. */
static void apply_row(struct prediction *r, struct live_map *m, const struct predict_write *w)
{
    const char *cmd = w->cmd, *answer = w->answer;
    uint64_t hash = w->key_hash;
    uint32_t key_len = w->key_len, flags = w->flags;
    int64_t value_len = w->value_len;
    struct slab_item_layout nl, pl, cl;
    struct live_item *old = live_find(m, hash, false);
    bool silent = answer_is(answer, "noreply") || answer_is(answer, "quiet");
    r->rows++;
    if (!strcmp(cmd, "delete") || !strcmp(cmd, "md")) {
        if ((answer_is(answer, "DELETED") || answer_is(answer, "HD") || silent) && old) {
            unlink_old(r, m, old);
            r->deletes++;
        }
        return;
    }
    if (!strcmp(cmd, "incr") || !strcmp(cmd, "decr") || !strcmp(cmd, "ma")) {
        apply_arith(r, m, cmd, answer, silent, hash);
        return;
    }
    if (value_len < 0) /* touch, and anything else without a value */
        return;
    if (!answer || answer_is(answer, "upstream_error") || answer_is(answer, "no_answer")) {
        r->unanswered++; /* memcached may or may not have seen it */
        r->failed++;
        return;
    }
    const char *as = ms_as(cmd, w->ms_mode);
    bool append = !strcmp(as, "append") || !strcmp(as, "prepend");
    /* a refused set also unlinks the key's old item (process_update_command);
     * so does a refused ms, whatever its mode (process_mset_command) */
    bool unlinks = !strcmp(cmd, "set") || !strcmp(cmd, "ms");
    /* the incoming item (for append/prepend: the piece, with the command's
     * own flags), allocated before memcached looks at the key */
    bool fits = slab_item_layout(&r->ladder, key_len, flags, (uint64_t)value_len, &nl) == SLAB_OK;
    if (fits && w->flags_unknown && w->class_id) {
        /* memcached's own class: with flags the item is 4 bytes larger */
        struct slab_item_layout fl;
        if (w->class_id == nl.lru_class) {
            r->class_same++;
        } else if (slab_item_layout(&r->ladder, key_len, 1, (uint64_t)value_len, &fl) == SLAB_OK &&
                   fl.lru_class == w->class_id) {
            r->flags_inferred++;
            flags = 1; /* any non-zero value: the header's flags word */
            nl = fl;
        } else {
            r->class_differs++;
        }
    } else if (fits && w->class_id && w->class_id != nl.lru_class) {
        r->mistagged++;
    }
    if (silent) {
        bool whole = !append || !old ||
                     slab_item_layout(&r->ladder, key_len, old->flags,
                                      old->value_len + (uint64_t)value_len, &cl) == SLAB_OK;
        r->assumed++;
        answer = silent_outcome(as, old != NULL, fits, whole);
    }
    bool stored = answer_is(answer, "STORED") || answer_is(answer, "HD");
    if (answer_is(answer, "SERVER_ERROR")) {
        /* too large (item_alloc failed: nothing allocated) or out of memory */
        r->failed++;
        if (old && unlinks)
            unlink_old(r, m, old);
        return;
    }
    if (!stored) {
        r->failed++;
        /* NOT_STORED, EXISTS, NOT_FOUND (NS, EX, NF) and a bad data chunk
         * came after the allocation; other errors (bad command line) before */
        bool allocated = answer_is(answer, "NOT_") || answer_is(answer, "EXISTS") ||
                         answer_is(answer, "NS") || answer_is(answer, "EX") ||
                         answer_is(answer, "NF") || answer_is(answer, "CLIENT_ERROR bad data");
        if (allocated && fits)
            throwaway(r, &nl);
        return;
    }
    if (!fits) { /* memcached stored what the model thinks it cannot */
        r->failed++;
        r->unknown_items++;
        return;
    }
    if (append) {
        if (!old) {
            r->failed++;
            r->unknown_items++; /* stored onto an item the model did not have */
            return;
        }
        /* memcached.c do_store_item: the piece (nl) is held while the whole
         * new item is allocated with the old one's flags; then the new one
         * replaces the old and the piece is freed */
        uint64_t nvalue = old->value_len + (uint64_t)value_len;
        if (slab_item_layout(&r->ladder, key_len, old->flags, nvalue, &cl) != SLAB_OK) {
            r->failed++;
            r->unknown_items++;
            return;
        }
        /* when the result or the piece is chunked memcached builds it piece
         * by piece: not modelled (slab_model.h) */
        if (cl.chunked || nl.chunked)
            r->chunked_appends++;
        pl = nl;
        slab_counters_add(&r->predicted, &r->ladder, &pl);
        slab_counters_add(&r->predicted, &r->ladder, &cl);
        layout_remove(r, old);
        slab_counters_remove(&r->predicted, &r->ladder, &pl);
        r->throwaway++;
        old->value_len = nvalue;
        r->applied++;
        return;
    }
    slab_counters_add(&r->predicted, &r->ladder, &nl); /* new before old, as memcached */
    if (old)
        layout_remove(r, old);
    if (!(old = live_put(m, old, hash)))
        return;
    old->key_len = key_len;
    old->flags = flags;
    old->flags_assumed = w->flags_unknown && !flags;
    old->value_len = (uint64_t)value_len;
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

bool predict_sampled(const struct prediction *r)
{
    return r->sample_keys > 1;
}

void predict_estimate(const struct prediction *r, uint32_t c, struct predict_estimate *e)
{
    const struct slab_class_counters *p = &r->predicted.cls[c];
    uint32_t n = r->sample_keys > 1 ? r->sample_keys : 1;
    double chunk = c <= r->ladder.n_classes ? r->ladder.cls[c].chunk_size : 0;
    double perslab =
        c <= r->ladder.n_classes && r->ladder.cls[c].perslab ? r->ladder.cls[c].perslab : 1;
    memset(e, 0, sizeof *e);
    e->used_chunks = sample_scale((double)p->used_chunks, n);
    e->mem_requested = sample_scale((double)p->mem_requested, n);
    e->total_pages = (double)p->total_pages;
    if (n <= 1)
        return;
    /* an item is one chunk: the count's x is 1; its bytes' x is its ntotal */
    e->used_err = sample_error((double)p->used_chunks, 1, n);
    e->mem_err = sample_error(c <= SLAB_MODEL_MAX_CLASSES ? r->live_sq_bytes[c] : 0, chunk, n);
    /* pages: the high-water mark of chunks scaled, in whole pages (memcached
     * never gives one back) */
    double peak = sample_scale((double)p->peak_used_chunks, n);
    e->total_pages = ceil(peak / perslab);
    e->pages_err = ceil(sample_error((double)p->peak_used_chunks, 1, n) / perslab) + 1;
}

static bool within(double est, double err, int64_t obs)
{
    return fabs(est - (double)obs) <= err;
}

static bool class_matches(const struct prediction *r, uint32_t c);

/* A watch run's class: items and pages exact, mem_requested over the
 * prediction by 4 bytes for some of its items (their flags); the number
 * of such items, or -1 when it is not that. */
static int64_t flag_items(const struct prediction *r, uint32_t c)
{
    const struct slab_class_counters *p = &r->predicted.cls[c];
    const struct predict_observed *o = &r->observed[c];
    if (!r->watch || predict_sampled(r) || !o->present || class_matches(r, c))
        return -1;
    int64_t d = o->mem_requested - (int64_t)p->mem_requested;
    if ((int64_t)p->used_chunks != o->used_chunks || (int64_t)p->total_pages != o->total_pages ||
        d <= 0 || d % 4 || d / 4 > o->used_chunks)
        return -1;
    return d / 4;
}

int predict_flag_classes(const struct prediction *r, uint64_t *items)
{
    int n = 0;
    *items = 0;
    for (uint32_t c = 1; c <= r->ladder.n_classes; c++) {
        int64_t k = flag_items(r, c);
        if (k > 0) {
            n++;
            *items += (uint64_t)k;
        }
    }
    return n;
}

static bool class_matches(const struct prediction *r, uint32_t c)
{
    const struct slab_class_counters *p = &r->predicted.cls[c];
    const struct predict_observed *o = &r->observed[c];
    if (predict_sampled(r)) {
        struct predict_estimate e;
        predict_estimate(r, c, &e);
        int64_t zero = 0;
        return within(e.used_chunks, e.used_err, o->present ? o->used_chunks : zero) &&
               within(e.mem_requested, e.mem_err, o->present ? o->mem_requested : zero) &&
               within(e.total_pages, e.pages_err, o->present ? o->total_pages : zero);
    }
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
        n += !class_matches(r, c) && flag_items(r, c) < 0;
    return n;
}

/* The ladder: what it is, where it came from, and what the proxy used. */
static void print_ladder(const struct prediction *r, FILE *out)
{
    char flags[1024];
    ladder_choice_flags(&r->choice, flags, sizeof flags);
    fprintf(out, "ladder: %s (%u classes), from %s%s\n", flags, r->ladder.n_classes,
            ladder_origin_str(r->choice.origin), r->choice.trusted ? "" : " -- NOT SURE");
    if (r->choice.note[0])
        fprintf(out, "ladder note: %s\n", r->choice.note);
    if (r->recorded_ladder < 0)
        fprintf(out, "ladder note: the proxy recorded another ladder for this run (run_meta "
                     "'ladder'; view run_ladder)\n");
    if (r->mistagged)
        fprintf(out,
                "ladder note: %llu writes are tagged (sets.class_id) with another class than "
                "this ladder gives: the proxy tagged them before memcached had shown enough "
                "chunk sizes (give it --slab-sizes or --memcached-flags)\n",
                (unsigned long long)r->mistagged);
}

/* A sampled run: every kept key's counters times N, each with its stated
 * error, beside memcached's own. */
static void print_sampled(const struct prediction *r, FILE *out)
{
    uint32_t n = r->sample_keys;
    fprintf(out,
            "sampled: --sample-keys 1/%u -- the rows are one key in %u (by key hash); "
            "predictions are the kept keys' x %u, +- %.0f standard deviations of that "
            "estimate (binomial per class)\n",
            n, n, n, SAMPLE_Z);
    fprintf(out, "%5s %9s | %19s %10s | %25s %12s | %11s %6s | %s\n", "class", "chunk",
            "used est +- err", "used obs", "requested est +- err", "requested obs", "pages est",
            "obs", "");
    for (uint32_t c = 1; c <= r->ladder.n_classes; c++) {
        const struct slab_class_counters *p = &r->predicted.cls[c];
        const struct predict_observed *o = &r->observed[c];
        struct predict_estimate e;
        if (!p->used_chunks && !p->total_pages && !o->present)
            continue;
        predict_estimate(r, c, &e);
        fprintf(out,
                "%5u %9u | %10.0f +- %-5.0f %10lld | %13.0f +- %-9.0f %12lld | %5.0f +- %-2.0f "
                "%6lld | %s\n",
                c, r->ladder.cls[c].chunk_size, e.used_chunks, e.used_err,
                (long long)o->used_chunks, e.mem_requested, e.mem_err, (long long)o->mem_requested,
                e.total_pages, e.pages_err, (long long)o->total_pages,
                class_matches(r, c) ? "within" : "OUTSIDE");
    }
    fprintf(out,
            "writes: %llu rows of kept keys, %llu applied, %llu failed, %llu deletes; "
            "%llu live items kept, ~%.0f +- %.0f in all\n",
            (unsigned long long)r->rows, (unsigned long long)r->applied,
            (unsigned long long)r->failed, (unsigned long long)r->deletes,
            (unsigned long long)r->live_items, sample_scale((double)r->live_items, n),
            sample_error((double)r->live_items, 1, n));
    int diff = predict_mismatches(r);
    if (!r->have_sample)
        fprintf(out, "verdict: NO SAMPLE -- the run has no stats sample to compare with\n");
    else if (!r->exact_expected)
        fprintf(out, "verdict: SAMPLED 1/%u, NOT COMPARABLE -- %s; %d classes outside the error\n",
                n, r->why_not, diff);
    else if (diff == 0)
        fprintf(out,
                "verdict: SAMPLED 1/%u -- every class within the stated error of memcached's own "
                "counters\n",
                n);
    else
        fprintf(out,
                "verdict: SAMPLED 1/%u, MISMATCH -- %d classes outside the stated error of "
                "memcached's counters\n",
                n, diff);
}

/* A watch run: what its writes could not say, and what the classes
 * memcached logged say about it. */
static void print_watch(const struct prediction *r, FILE *out)
{
    uint64_t logged = r->class_same + r->flags_inferred + r->class_differs;
    fprintf(out,
            "watch run: the writes are memcached's own log lines (watch mutations): latency, "
            "connection peer and client flags are not in them. Flags are taken as 0; an item "
            "with non-zero flags is 4 bytes larger (the flags word of its header), so each "
            "class's mem_requested may be up to 4 bytes x items over the prediction (%llu "
            "live items taken as flags 0)\n",
            (unsigned long long)r->flags_assumed);
    fprintf(out,
            "watch run: class from the size (flags 0) against memcached's clsid, %llu stores "
            "logged: %llu the same, %llu one class up only with 4 bytes of flags (taken as "
            "carrying flags, sized so), %llu %s\n",
            (unsigned long long)logged, (unsigned long long)r->class_same,
            (unsigned long long)r->flags_inferred, (unsigned long long)r->class_differs,
            r->class_differs ? "in a class neither gives: DIFFER (another ladder than this one?)"
                             : "differ");
    if (r->not_seen > 0)
        fprintf(out,
                "watch run: %lld writes not seen -- memcached dropped their log lines "
                "(skipped=N on the watcher, log_worker_dropped/log_watcher_skipped in stats); "
                "raise -o worker_logbuf_size / watcher_logbuf_size\n",
                (long long)r->not_seen);
    else
        fprintf(out, "watch run: 0 writes not seen (memcached dropped no log line)\n");
}

void predict_print(const struct prediction *r, FILE *out)
{
    char f[32];
    slab_factor_text(r->settings.growth_factor, f, sizeof f);
    fprintf(out, "run %lld '%s', memcached %s, -n %u -f %s -I %u, slab_chunk_max %u, CAS %s\n",
            (long long)r->run_id, r->run_name, r->version[0] ? r->version : "?",
            r->settings.chunk_size_min, f, r->settings.item_size_max, r->settings.slab_chunk_max,
            r->settings.use_cas ? "on" : "off");
    print_ladder(r, out);
    if (predict_sampled(r)) {
        print_sampled(r, out);
        return;
    }
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
                (long long)o->total_pages,
                class_matches(r, c)     ? "="
                : flag_items(r, c) >= 0 ? "= items; +4 B flags"
                                        : "DIFFERS");
    }
    fprintf(out,
            "writes: %llu rows, %llu applied (%llu assumed stored: noreply/quiet), %llu failed, "
            "%llu deletes, %llu live items\n",
            (unsigned long long)r->rows, (unsigned long long)r->applied,
            (unsigned long long)r->assumed, (unsigned long long)r->failed,
            (unsigned long long)r->deletes, (unsigned long long)r->live_items);
    fprintf(out,
            "also: %llu items allocated and freed at once (refused add/replace/cas/append, "
            "append pieces), %llu incr/decr applied, %llu writes with a TTL\n",
            (unsigned long long)r->throwaway, (unsigned long long)r->arith_applied,
            (unsigned long long)r->ttl_writes);
    if (r->watch)
        print_watch(r, out);
    int diff = predict_mismatches(r);
    uint64_t flagged = 0;
    int fclasses = predict_flag_classes(r, &flagged);
    if (!r->have_sample) {
        fprintf(out, "verdict: NO SAMPLE -- the run has no stats sample to compare with\n");
    } else if (r->exact_expected && diff == 0 && fclasses) {
        fprintf(out,
                "verdict: EXACT CLASSES, SIZES WITHIN THE FLAGS' BOUND -- every class's items "
                "and pages match memcached's own; mem_requested of %d classes is 4 bytes over "
                "the prediction for each of %llu items: they carry client flags, which "
                "memcached's log does not print (taken as 0)\n",
                fclasses, (unsigned long long)flagged);
    } else if (!r->exact_expected) {
        fprintf(out, "verdict: NOT COMPARABLE EXACTLY -- %s; %d classes differ\n", r->why_not,
                diff);
    } else if (diff == 0) {
        fprintf(out, "verdict: EXACT -- every class matches memcached's own counters\n");
    } else {
        fprintf(out, "verdict: MISMATCH -- %d classes differ from memcached's counters%s\n", diff,
                r->choice.origin == LADDER_SETTINGS
                    ? " (the ladder is stats settings' own, known to two decimals of -f and "
                      "without -o slab_sizes: if memcached was started with either, give its "
                      "flags to the proxy: --memcached-flags)"
                    : "");
    }
}

int predict_begin_choice(struct prediction *r, int64_t run_id, const struct ladder_choice *c,
                         char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    advise_hist_init(&r->live);
    slab_counters_init(&r->predicted);
    r->run_id = run_id;
    r->choice = *c;
    r->settings = c->settings;
    r->ladder = c->ladder;
    r->keys = calloc(1, sizeof *r->keys);
    if (!r->keys || r->ladder.n_classes == 0) {
        snprintf(err, errlen, r->keys ? "the ladder has no classes" : "out of memory");
        return -1;
    }
    return 0;
}

int predict_begin(struct prediction *r, int64_t run_id, const struct slab_settings *s, char *err,
                  size_t errlen)
{
    struct ladder_choice c;
    memset(r, 0, sizeof *r);
    advise_hist_init(&r->live);
    if (ladder_choose(s, NULL, NULL, NULL, &c, err, errlen) != SLAB_OK)
        return -1;
    return predict_begin_choice(r, run_id, &c, err, errlen);
}

void predict_apply(struct prediction *r, const struct predict_write *w)
{
    if (w->has_ttl)
        r->ttl_writes++;
    apply_row(r, r->keys, w);
}

void predict_observe(struct prediction *r, uint32_t class_id, const struct predict_observed *o)
{
    if (class_id < 1 || class_id > SLAB_MODEL_MAX_CLASSES)
        return;
    r->observed[class_id] = *o;
    r->observed[class_id].present = true;
    r->have_sample = true;
}

/* One reason into why_not. */
static void why(struct prediction *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void why(struct prediction *r, const char *fmt, ...)
{
    size_t n = strlen(r->why_not);
    va_list ap;
    if (n + 3 >= sizeof r->why_not)
        return;
    if (n) {
        memcpy(r->why_not + n, "; ", 3);
        n += 2;
    }
    va_start(ap, fmt);
    vsnprintf(r->why_not + n, sizeof r->why_not - n, fmt, ap);
    va_end(ap);
}

/* Everything besides the recorded writes that changed memcached's memory,
 * or that the model cannot follow, each with its count. */
static void decide(struct prediction *r)
{
    r->why_not[0] = '\0';
    if (!r->choice.trusted)
        why(r, "the ladder is not sure (%s)",
            r->choice.ambiguous ? "several growth factors fit"
                                : "it disagrees with memcached's chunk sizes");
    if (r->restarted)
        why(r, "memcached restarted during the run");
    if (r->evictions > 0)
        why(r, "evictions %lld during the run (memcached's memory was full)",
            (long long)r->evictions);
    if (r->slabs_moved > 0)
        why(r, "slabs moved %lld (pages moved between classes)", (long long)r->slabs_moved);
    if (r->reclaimed > 0)
        why(r, "reclaimed %lld (expired items freed by the LRU)", (long long)r->reclaimed);
    if (r->crawler_reclaimed > 0)
        why(r, "crawler_reclaimed %lld (expired items freed by the LRU crawler)",
            (long long)r->crawler_reclaimed);
    if (r->get_expired > 0)
        why(r, "get_expired %lld (expired items removed when read)", (long long)r->get_expired);
    if (r->flushes > 0)
        why(r, "flush_all %lld", (long long)r->flushes);
    if (r->chunked_appends)
        why(r,
            "%llu appends/prepends with chunked data (memcached builds those piece by piece; "
            "not modelled)",
            (unsigned long long)r->chunked_appends);
    if (r->arith_unknown)
        why(r, "%llu incr/decr/ma whose new size is unknown (no answer, or ma without a value)",
            (unsigned long long)r->arith_unknown);
    if (r->unknown_items)
        why(r, "%llu writes changed items the model did not know",
            (unsigned long long)r->unknown_items);
    if (r->unanswered)
        why(r, "%llu writes memcached never answered (upstream_error/no_answer)",
            (unsigned long long)r->unanswered);
    if (r->rows_dropped > 0)
        why(r, "rows dropped %lld (writes not recorded)", (long long)r->rows_dropped);
    if (r->not_seen > 0)
        why(r, "%lld writes not seen (memcached dropped their log lines)", (long long)r->not_seen);
    if (r->class_differs)
        why(r, "%llu writes in another class than memcached logged (clsid)",
            (unsigned long long)r->class_differs);
    if (r->foreign_items > 0)
        why(r, "memcached holds %lld items the run did not write%s", (long long)r->foreign_items,
            r->watch ? " (written before the watcher connected, or not logged: a snapshot "
                       "lists them)"
                     : "");
    if (r->foreign_items < 0)
        why(r, "the run left %lld items memcached does not hold", (long long)-r->foreign_items);
    r->exact_expected = r->have_sample && !r->why_not[0];
}

int predict_end(struct prediction *r)
{
    struct live_map *m = r->keys;
    for (size_t i = 0; m && i < m->cap; i++) {
        if (!m->slots[i].used)
            continue;
        r->live_items++;
        r->flags_assumed += m->slots[i].flags_assumed;
        uint64_t ntotal = slab_item_ntotal(r->ladder.use_cas, m->slots[i].key_len,
                                           m->slots[i].flags, m->slots[i].value_len);
        if (advise_hist_add(&r->live, ntotal, predict_sampled(r) ? r->sample_keys : 1))
            return -1;
        struct slab_item_layout it;
        if (predict_sampled(r) &&
            slab_item_layout(&r->ladder, m->slots[i].key_len, m->slots[i].flags,
                             m->slots[i].value_len, &it) == SLAB_OK &&
            it.lru_class <= SLAB_MODEL_MAX_CLASSES)
            r->live_sq_bytes[it.lru_class] += (double)ntotal * (double)ntotal;
    }
    advise_hist_sort(&r->live);
    r->untracked = r->chunked_appends + r->arith_unknown;
    r->foreign_items = r->observed_curr_items - (int64_t)r->live_items;
    if (predict_sampled(r)) { /* within the sample's error is none */
        double est = sample_scale((double)r->live_items, r->sample_keys);
        if (fabs((double)r->observed_curr_items - est) <=
            sample_error((double)r->live_items, 1, r->sample_keys))
            r->foreign_items = 0;
        else
            r->foreign_items = r->observed_curr_items - (int64_t)llround(est);
    }
    decide(r);
    return 0;
}
