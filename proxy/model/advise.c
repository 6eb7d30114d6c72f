/* model_advise: waste of a size histogram under candidate ladders, the -f/-n
 * search, the fitted slab_sizes ladder and cliff detection. Pure. */
#include "model/advise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

void advise_hist_init(struct advise_hist *h)
{
    memset(h, 0, sizeof *h);
}

void advise_hist_free(struct advise_hist *h)
{
    free(h->ntotal);
    free(h->count);
    advise_hist_init(h);
}

int advise_hist_add(struct advise_hist *h, uint64_t ntotal, uint64_t count)
{
    /* two arrays of one capacity: both grow from h->cap alike */
    size_t cap = h->cap;
    if (!BUF_GROW(h->ntotal, cap, h->n + 1))
        return -1;
    cap = h->cap;
    if (!BUF_GROW(h->count, cap, h->n + 1))
        return -1;
    h->cap = cap;
    h->ntotal[h->n] = ntotal;
    h->count[h->n] = count;
    h->n++;
    return 0;
}

struct pair {
    uint64_t size, count;
};

static int pair_cmp(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    return x->size < y->size ? -1 : x->size > y->size;
}

void advise_hist_sort(struct advise_hist *h)
{
    struct pair *p = malloc((h->n ? h->n : 1) * sizeof *p);
    if (!p)
        return;
    for (size_t i = 0; i < h->n; i++)
        p[i] = (struct pair){ h->ntotal[i], h->count[i] };
    qsort(p, h->n, sizeof *p, pair_cmp);
    size_t m = 0;
    for (size_t i = 0; i < h->n; i++) {
        if (m && p[m - 1].size == p[i].size)
            p[m - 1].count += p[i].count;
        else
            p[m++] = p[i];
    }
    for (size_t i = 0; i < m; i++) {
        h->ntotal[i] = p[i].size;
        h->count[i] = p[i].count;
    }
    h->n = m;
    free(p);
}

/* Bytes of chunks one item of size ntotal occupies under l; chunks
 * (may be NULL) gets count times the chunks it takes, by class. */
static uint64_t item_allocated(const struct slab_ladder *l, uint64_t ntotal, uint32_t *cls,
                               bool *chunked, uint64_t *chunks, uint64_t count)
{
    *chunked = ntotal > l->slab_chunk_max;
    if (!*chunked) {
        *cls = slab_ladder_class_for(l, ntotal);
        if (chunks && *cls)
            chunks[*cls] += count;
        return *cls ? l->cls[*cls].chunk_size : 0;
    }
    /* memcached's chunked layout: a header item of the key and suffix plus
     * two 48-byte headers, then the value (with its \r\n) in data chunks of
     * at most slab_chunk_max each carrying a 48-byte chunk header. Only
     * ntotal is known, so key + 1 + suffix + CAS is taken as 16 bytes, in
     * the header and in the value alike. */
    const uint64_t keypart = 16;
    uint64_t data = ntotal - SLAB_MODEL_ITEM_HEADER - keypart;
    uint64_t per = l->slab_chunk_max - SLAB_MODEL_CHUNK_HEADER;
    uint64_t full = data / per, rest = data % per;
    uint64_t bytes = (uint64_t)l->slab_chunk_max * full;
    uint32_t hdr =
        slab_ladder_class_for(l, SLAB_MODEL_ITEM_HEADER + SLAB_MODEL_CHUNK_HEADER + keypart);
    if (rest) {
        uint32_t tail = slab_ladder_class_for(l, rest + SLAB_MODEL_CHUNK_HEADER);
        bytes += l->cls[tail].chunk_size;
        if (chunks)
            chunks[tail] += count;
    }
    bytes += l->cls[hdr].chunk_size;
    *cls = l->n_classes;
    if (chunks) {
        chunks[hdr] += count;
        chunks[l->n_classes] += full * count;
    }
    return bytes;
}

void advise_evaluate(const struct slab_ladder *l, const struct advise_hist *h,
                     struct advise_eval *out)
{
    bool used[SLAB_MODEL_MAX_CLASSES + 1] = { false };
    uint64_t chunks[SLAB_MODEL_MAX_CLASSES + 1] = { 0 };
    memset(out, 0, sizeof *out);
    out->classes_in_ladder = l->n_classes;
    for (size_t i = 0; i < h->n; i++) {
        uint32_t cls;
        bool chunked;
        if (h->ntotal[i] > l->item_size_max) {
            out->refused_items += h->count[i];
            continue;
        }
        uint64_t a = item_allocated(l, h->ntotal[i], &cls, &chunked, chunks, h->count[i]);
        out->items += h->count[i];
        out->requested += h->ntotal[i] * h->count[i];
        out->allocated += a * h->count[i];
        out->chunked_items += chunked ? h->count[i] : 0;
        if (cls && !used[cls]) {
            used[cls] = true;
            out->classes_used++;
        }
    }
    for (uint32_t c = 1; c <= l->n_classes; c++)
        if (chunks[c])
            out->pages += (chunks[c] + l->cls[c].perslab - 1) / l->cls[c].perslab;
    out->waste = out->allocated - out->requested;
    out->waste_pct = out->allocated ? 100.0 * (double)out->waste / (double)out->allocated : 0;
}

static bool better(const struct advise_eval *a, const struct advise_eval *b)
{
    if (a->waste != b->waste)
        return a->waste < b->waste;
    return a->classes_in_ladder < b->classes_in_ladder;
}

/* Every -n/-f of the search grid (-n 8..512 by 8, -f 1.01..2.00) whose
 * ladder has at most max_classes classes, evaluated on h, in grid order. */
static void advise_grid(const struct slab_settings *base, const struct advise_hist *h,
                        uint32_t max_classes,
                        void (*fn)(void *ud, const struct slab_settings *s,
                                   const struct slab_ladder *l, const struct advise_eval *e),
                        void *ud)
{
    struct slab_ladder l;
    for (uint32_t n = 8; n <= 512; n += 8) {
        for (int f100 = 101; f100 <= 200; f100++) {
            struct slab_settings s = *base;
            struct advise_eval e;
            s.n_slab_sizes = 0;
            s.chunk_size_min = n;
            s.growth_factor = f100 / 100.0;
            if (slab_ladder_build(&s, &l, NULL, 0) != SLAB_OK || l.n_classes > max_classes)
                continue;
            advise_evaluate(&l, h, &e);
            fn(ud, &s, &l, &e);
        }
    }
}

struct best_ctx {
    struct slab_settings *best;
    struct advise_eval *eval;
    bool found;
};

static void keep_best(void *ud, const struct slab_settings *s, const struct slab_ladder *l,
                      const struct advise_eval *e)
{
    struct best_ctx *bc = ud;
    (void)l;
    if (!bc->found || better(e, bc->eval)) {
        *bc->best = *s;
        *bc->eval = *e;
        bc->found = true;
    }
}

int advise_search_factor(const struct slab_settings *base, const struct advise_hist *h,
                         struct slab_settings *best, struct advise_eval *best_eval)
{
    return advise_search_factor_max(base, h, SLAB_MODEL_MAX_CLASSES, best, best_eval);
}

int advise_search_factor_max(const struct slab_settings *base, const struct advise_hist *h,
                             uint32_t max_classes, struct slab_settings *best,
                             struct advise_eval *best_eval)
{
    struct slab_ladder l;
    bool found = false;
    /* the base itself, so the answer is never worse than what runs now */
    if (!base->n_slab_sizes && slab_ladder_build(base, &l, NULL, 0) == SLAB_OK &&
        l.n_classes <= max_classes) {
        *best = *base;
        advise_evaluate(&l, h, best_eval);
        found = true;
    }
    struct best_ctx bc = { best, best_eval, found };
    advise_grid(base, h, max_classes, keep_best, &bc);
    return bc.found ? 0 : -1;
}

static bool fewer_pages(const struct advise_eval *a, const struct advise_eval *b)
{
    if (a->pages != b->pages)
        return a->pages < b->pages;
    return better(a, b);
}

/* The k ladders that need the fewest pages, distinct in their classes. */
struct shortlist_ctx {
    struct advise_eval ev[ADVISE_MAX_CANDIDATES];
    struct slab_ladder lad[ADVISE_MAX_CANDIDATES];
    struct slab_settings *out;
    size_t n, k;
};

static void keep_fewest_pages(void *ud, const struct slab_settings *s, const struct slab_ladder *l,
                              const struct advise_eval *e)
{
    struct shortlist_ctx *c = ud;
    if (c->n == c->k && !fewer_pages(e, &c->ev[c->n - 1]))
        return;
    for (size_t i = 0; i < c->n; i++)
        if (slab_ladder_same(&c->lad[i], l))
            return;
    size_t at = c->n < c->k ? c->n++ : c->n - 1;
    while (at > 0 && fewer_pages(e, &c->ev[at - 1])) {
        c->ev[at] = c->ev[at - 1];
        c->lad[at] = c->lad[at - 1];
        c->out[at] = c->out[at - 1];
        at--;
    }
    c->ev[at] = *e;
    c->lad[at] = *l;
    c->out[at] = *s;
}

size_t advise_factor_shortlist(const struct slab_settings *base, const struct advise_hist *h,
                               uint32_t max_classes, size_t k, struct slab_settings *out)
{
    struct shortlist_ctx *c = malloc(sizeof *c);
    size_t n = 0;
    if (k > ADVISE_MAX_CANDIDATES)
        k = ADVISE_MAX_CANDIDATES;
    if (!c || !k) {
        free(c);
        return 0;
    }
    c->out = out;
    c->n = 0;
    c->k = k;
    advise_grid(base, h, max_classes, keep_fewest_pages, c);
    n = c->n;
    free(c);
    return n;
}

/* --- fitted ladder ----------------------------------------------------------- */

struct bucket {
    uint64_t top;   /* chunk size if this bucket ends a class (8-aligned) */
    uint64_t count; /* items */
    uint64_t bytes; /* sum of their ntotal */
};

static uint64_t align8(uint64_t v)
{
    return (v + SLAB_MODEL_CHUNK_ALIGN - 1) & ~(uint64_t)(SLAB_MODEL_CHUNK_ALIGN - 1);
}

/* 8-byte buckets of the items that fit a chunk, merged down to at most
 * ADVISE_FIT_BUCKETS by item count so the DP stays quadratic in a bound. */
static size_t fit_buckets(const struct advise_hist *h, uint64_t max_size, uint64_t min_size,
                          struct bucket *b)
{
    size_t m = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < h->n; i++) {
        if (h->ntotal[i] > max_size)
            break;
        uint64_t top = align8(h->ntotal[i] < min_size ? min_size : h->ntotal[i]);
        if (m && b[m - 1].top == top) {
            b[m - 1].count += h->count[i];
            b[m - 1].bytes += h->ntotal[i] * h->count[i];
        } else if (m < h->n) {
            b[m++] = (struct bucket){ top, h->count[i], h->ntotal[i] * h->count[i] };
        }
        total += h->count[i];
    }
    if (m <= ADVISE_FIT_BUCKETS)
        return m;
    /* merge neighbours so each group holds about total/ADVISE_FIT_BUCKETS items */
    uint64_t per = total / ADVISE_FIT_BUCKETS + 1, acc = 0;
    size_t out = 0;
    for (size_t i = 0; i < m; i++) {
        if (out && acc < per) {
            b[out - 1].top = b[i].top;
            b[out - 1].count += b[i].count;
            b[out - 1].bytes += b[i].bytes;
            acc += b[i].count;
        } else {
            b[out++] = b[i];
            acc = b[i].count;
        }
    }
    return out;
}

/* dp[k][j][s]: least allocated bytes covering buckets 0..j with k classes,
 * the last ending at j, whose raw slab size can be as low as top - s
 * (s = 0..7). memcached checks each raw size to be more than 8 above the
 * previous one and only then rounds it up to 8, so raw 97-112 gives chunks
 * 104 and 112: neighbouring 8-byte slots are allowed while that slack
 * lasts, wider steps always are. The buckets after the last class go to
 * the slab_chunk_max class memcached adds anyway. */
#define FIT_SLACK SLAB_MODEL_CHUNK_ALIGN

static int fit_dp(const struct bucket *b, size_t m, uint32_t kmax, uint64_t min_size,
                  uint64_t chunk_max, uint64_t *tops, uint32_t *nk)
{
    size_t cells = (size_t)(kmax + 1) * m * FIT_SLACK;
    uint64_t *cnt = calloc(m + 1, sizeof *cnt);
    uint64_t *dp = malloc(cells * sizeof *dp);
    uint32_t *from = malloc(cells * sizeof *from);
    uint8_t *from_s = malloc(cells * sizeof *from_s);
    int rc = -1;
    const uint64_t INF = UINT64_MAX;
#define AT(k, j, s) ((((size_t)(k)) * m + (j)) * FIT_SLACK + (s))
    if (!cnt || !dp || !from || !from_s)
        goto out;
    for (size_t i = 0; i < m; i++)
        cnt[i + 1] = cnt[i] + b[i].count;
    for (size_t i = 0; i < cells; i++)
        dp[i] = INF;
    for (size_t j = 0; j < m; j++) {
        /* the first raw size must not go below -n */
        uint64_t slack = b[j].top - min_size < FIT_SLACK - 1 ? b[j].top - min_size : FIT_SLACK - 1;
        for (uint64_t s = 0; s <= slack; s++)
            dp[AT(1, j, s)] = cnt[j + 1] * b[j].top;
    }
    for (uint32_t k = 2; k <= kmax; k++) {
        for (size_t j = k - 1; j < m; j++) {
            uint64_t best = INF;
            uint32_t arg = 0;
            /* a step of 16 bytes or more: full slack again */
            for (size_t i = k - 2; i < j; i++) {
                uint64_t prev = dp[AT(k - 1, i, 0)];
                if (prev == INF || b[j].top < b[i].top + 2 * SLAB_MODEL_CHUNK_ALIGN)
                    continue;
                uint64_t c = prev + (cnt[j + 1] - cnt[i + 1]) * b[j].top;
                if (c < best) {
                    best = c;
                    arg = (uint32_t)i;
                }
            }
            for (size_t s = 0; s < FIT_SLACK; s++) {
                dp[AT(k, j, s)] = best;
                from[AT(k, j, s)] = arg;
                from_s[AT(k, j, s)] = 0;
            }
            /* a step of 8 bytes from the slot just below uses one byte of slack */
            if (b[j].top != b[j - 1].top + SLAB_MODEL_CHUNK_ALIGN)
                continue;
            for (size_t s = 0; s + 1 < FIT_SLACK; s++) {
                uint64_t prev = dp[AT(k - 1, j - 1, s + 1)];
                if (prev == INF)
                    continue;
                uint64_t c = prev + b[j].count * b[j].top;
                if (c < dp[AT(k, j, s)]) {
                    dp[AT(k, j, s)] = c;
                    from[AT(k, j, s)] = (uint32_t)(j - 1);
                    from_s[AT(k, j, s)] = (uint8_t)(s + 1);
                }
            }
        }
    }
    uint64_t best = INF;
    uint32_t bestk = 0;
    size_t bestj = 0;
    for (uint32_t k = 1; k <= kmax; k++) {
        for (size_t j = k - 1; j < m; j++) {
            uint64_t d = dp[AT(k, j, 0)];
            if (d == INF)
                continue;
            uint64_t c = d + (cnt[m] - cnt[j + 1]) * chunk_max;
            if (c < best) {
                best = c;
                bestk = k;
                bestj = j;
            }
        }
    }
    if (!bestk)
        goto out;
    size_t j = bestj, s = 0;
    for (uint32_t k = bestk; k >= 1; k--) {
        tops[k - 1] = b[j].top;
        if (k > 1) {
            size_t nj = from[AT(k, j, s)];
            s = from_s[AT(k, j, s)];
            j = nj;
        }
    }
#undef AT
    *nk = bestk;
    rc = 0;
out:
    free(cnt);
    free(dp);
    free(from);
    free(from_s);
    return rc;
}

int advise_fit_sizes(const struct slab_settings *base, const struct advise_hist *h,
                     uint32_t max_sizes, struct slab_settings *fitted,
                     struct advise_eval *fitted_eval)
{
    struct bucket *b = malloc((h->n ? h->n : 1) * sizeof *b);
    uint64_t tops[SLAB_MODEL_MAX_CUSTOM_SIZES];
    uint32_t nk = 0;
    struct slab_ladder l;
    int rc = -1;
    if (!b)
        return -1;
    if (max_sizes > SLAB_MODEL_MAX_CUSTOM_SIZES)
        max_sizes = SLAB_MODEL_MAX_CUSTOM_SIZES;
    size_t m = fit_buckets(h, base->slab_chunk_max, base->chunk_size_min, b);
    *fitted = *base;
    if (m == 0 || max_sizes == 0 ||
        fit_dp(b, m, max_sizes < m ? max_sizes : (uint32_t)m, base->chunk_size_min,
               base->slab_chunk_max, tops, &nk))
        goto out;
    fitted->n_slab_sizes = 0;
    for (uint32_t i = 0; i < nk; i++)
        if (tops[i] < base->slab_chunk_max)
            fitted->slab_sizes[fitted->n_slab_sizes++] = (uint32_t)tops[i];
    /* only slab_chunk_max-sized items: one class of -n, which none uses
     * (no sizes at all would mean the growth factor's ladder) */
    if (fitted->n_slab_sizes == 0)
        fitted->slab_sizes[fitted->n_slab_sizes++] = base->chunk_size_min;
    /* a chunk 8 above the previous: lower the previous raw size within its
     * 8-byte slot, as the DP allowed, so memcached's check passes */
    for (uint32_t i = fitted->n_slab_sizes - 1; i-- > 0;)
        if (fitted->slab_sizes[i] + SLAB_MODEL_CHUNK_ALIGN >= fitted->slab_sizes[i + 1])
            fitted->slab_sizes[i] = fitted->slab_sizes[i + 1] - SLAB_MODEL_CHUNK_ALIGN - 1;
    if (slab_ladder_build(fitted, &l, NULL, 0) != SLAB_OK)
        goto out;
    advise_evaluate(&l, h, fitted_eval);
    rc = 0;
out:
    free(b);
    return rc;
}

size_t advise_cliffs(const struct slab_ladder *l, const struct advise_hist *h,
                     struct advise_cliff *out, size_t max)
{
    size_t n = 0;
    for (uint32_t c = 1; c <= l->n_classes && n < max; c++) {
        uint64_t lo = c > 1 ? l->cls[c - 1].chunk_size + 1 : 1, hi = l->cls[c].chunk_size;
        struct advise_cliff cl = { c, l->cls[c].chunk_size, 0, 0, lo, hi, 0 };
        for (size_t i = 0; i < h->n; i++) {
            if (h->ntotal[i] < lo || h->ntotal[i] > hi)
                continue;
            if (!cl.items)
                cl.min_item = h->ntotal[i];
            cl.max_item = h->ntotal[i];
            cl.items += h->count[i];
        }
        if (cl.items && cl.chunk_size > 2 * cl.min_item)
            out[n++] = cl;
    }
    return n;
}

/* --- capacity: settings ranked by an objective --------------------------- */

int advise_hist_from_seq(const struct capacity_seq *s, size_t from, size_t to, bool use_cas,
                         struct advise_hist *h)
{
    /* per key: value length + 1 (0: absent), key length, flags */
    uint64_t *vlen = calloc(s->n_keys ? s->n_keys : 1, sizeof *vlen);
    uint8_t *klen = calloc(s->n_keys ? s->n_keys : 1, 2);
    int rc = -1;
    if (!vlen || !klen)
        goto out;
    if (to > s->n)
        to = s->n;
    for (size_t i = from; i < to; i++) {
        const struct capacity_op *op = &s->ops[i];
        bool present = vlen[op->key] != 0;
        switch ((enum capacity_kind)op->kind) {
        case CAPACITY_ADD:
            if (present)
                break;
            /* fall through */
        case CAPACITY_SET:
        case CAPACITY_REPLACE:
            if (op->kind == CAPACITY_REPLACE && !present)
                break;
            vlen[op->key] = (uint64_t)op->value_len + 1;
            klen[2 * op->key] = op->key_len;
            klen[2 * op->key + 1] = op->has_flags;
            break;
        case CAPACITY_APPEND:
        case CAPACITY_PREPEND:
            if (present)
                vlen[op->key] += op->value_len;
            break;
        case CAPACITY_DELETE: vlen[op->key] = 0; break;
        default: break; /* incr/decr and reads: no size of their own */
        }
    }
    for (uint32_t k = 0; k < s->n_keys; k++)
        if (vlen[k] &&
            advise_hist_add(h, slab_item_ntotal(use_cas, klen[2 * k], klen[2 * k + 1], vlen[k] - 1),
                            1))
            goto out;
    advise_hist_sort(h);
    rc = 0;
out:
    free(vlen);
    free(klen);
    return rc;
}

int advise_capacity_eval(const struct slab_settings *s, const struct capacity_seq *seq, size_t from,
                         size_t to, enum capacity_objective o, uint64_t mem_limit,
                         struct capacity_result *out)
{
    struct slab_ladder l;
    if (slab_ladder_build(s, &l, NULL, 0) != SLAB_OK)
        return -1;
    return capacity_simulate(&l, o == CAPACITY_OBJ_MEMORY ? 0 : mem_limit, seq, from, to, out);
}

/* Evaluates s as candidate *n unless its ladder is one already there. */
static int add_candidate(const char *label, const struct slab_settings *s,
                         const struct advise_hist *h, const struct capacity_seq *seq, size_t from,
                         size_t to, enum capacity_objective o, uint64_t mem_limit,
                         uint32_t max_classes, struct advise_candidate *out, size_t *n)
{
    struct slab_ladder l, other;
    if (*n >= ADVISE_MAX_CANDIDATES || slab_ladder_build(s, &l, NULL, 0) != SLAB_OK ||
        (*n > 0 && l.n_classes > max_classes))
        return 0;
    for (size_t i = 0; i < *n; i++)
        if (slab_ladder_build(&out[i].s, &other, NULL, 0) == SLAB_OK &&
            slab_ladder_same(&l, &other))
            return 0;
    struct advise_candidate *c = &out[*n];
    memset(c, 0, sizeof *c);
    snprintf(c->label, sizeof c->label, "%s", label);
    c->s = *s;
    advise_evaluate(&l, h, &c->waste);
    if (capacity_simulate(&l, o == CAPACITY_OBJ_MEMORY ? 0 : mem_limit, seq, from, to, &c->cap))
        return -1;
    c->vs_current = *n ? capacity_compare(o, &c->cap, &out[0].cap) : 0;
    (*n)++;
    return 0;
}

int advise_capacity(const struct slab_settings *current, const struct advise_hist *h,
                    const struct capacity_seq *seq, size_t from, size_t to,
                    enum capacity_objective o, uint64_t mem_limit, uint32_t max_classes,
                    struct advise_candidate *out, size_t *n, advise_progress_fn progress,
                    void *progress_ud)
{
    static const uint32_t fit_sizes[] = { 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 62 };
    /* at most: the current, least waste, 4 fewest pages, 1 + 11 fits */
    const size_t total = 2 + 4 + 1 + sizeof fit_sizes / sizeof fit_sizes[0];
#define ADVISE_PROGRESS() \
    do { \
        if (progress && !progress(progress_ud, *n, total)) \
            return -1; \
    } while (0)
    struct slab_settings s, list[6];
    struct advise_eval e;
    char label[ADVISE_LABEL_MAX];
    *n = 0;
    if (max_classes < 2)
        max_classes = 2;
    if (max_classes > SLAB_MODEL_MAX_CLASSES)
        max_classes = SLAB_MODEL_MAX_CLASSES;
    if (add_candidate("the run's own settings", current, h, seq, from, to, o, mem_limit,
                      max_classes, out, n) ||
        *n != 1)
        return -1;
    ADVISE_PROGRESS();
    if (advise_search_factor_max(current, h, max_classes, &s, &e) == 0 &&
        add_candidate("-f/-n least waste", &s, h, seq, from, to, o, mem_limit, max_classes, out, n))
        return -1;
    ADVISE_PROGRESS();
    size_t k = advise_factor_shortlist(current, h, max_classes, 4, list);
    for (size_t i = 0; i < k; i++)
        if (add_candidate("-f/-n fewest pages", &list[i], h, seq, from, to, o, mem_limit,
                          max_classes, out, n))
            return -1;
    ADVISE_PROGRESS();
    for (size_t i = 0; i <= sizeof fit_sizes / sizeof fit_sizes[0]; i++) {
        /* the fit with all the classes allowed, then fewer */
        uint32_t sizes = i == 0 ? max_classes - 1 : fit_sizes[i - 1];
        if (i > 0 && sizes >= max_classes - 1)
            continue;
        if (advise_fit_sizes(current, h, sizes, &s, &e))
            continue;
        snprintf(label, sizeof label, "slab_sizes, %u sizes", s.n_slab_sizes);
        if (add_candidate(label, &s, h, seq, from, to, o, mem_limit, max_classes, out, n))
            return -1;
        ADVISE_PROGRESS();
    }
#undef ADVISE_PROGRESS
    /* memcached grants each class its first page past -m: a ladder of many
     * classes can end far above the limit, and holding more that way is
     * not holding more in M */
    uint64_t cap = out[0].cap.malloced > mem_limit ? out[0].cap.malloced : mem_limit;
    int best = 0;
    for (size_t i = 1; i < *n; i++) {
        out[i].over_limit = o == CAPACITY_OBJ_ITEMS && out[i].cap.malloced > cap;
        if (!out[i].over_limit && capacity_compare(o, &out[i].cap, &out[best].cap) > 0)
            best = (int)i;
    }
    return best;
}

int advise_seq_from_hist(const struct advise_hist *h, bool use_cas, struct capacity_seq *seq)
{
    uint64_t n = 0, head = 51 + (use_cas ? 8 : 0), x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < h->n; i++)
        n += h->count[i];
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order || n > UINT32_MAX) {
        free(order);
        return -1;
    }
    for (size_t i = 0, k = 0; i < h->n; i++)
        for (uint64_t j = 0; j < h->count[i]; j++)
            order[k++] = (uint32_t)i;
    for (uint64_t i = n; i > 1; i--) { /* Fisher-Yates, xorshift */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t j = x % i;
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint64_t body = h->ntotal[order[i]] > head ? h->ntotal[order[i]] - head : 1;
        if (capacity_seq_add(seq, i * 0x9E3779B97F4A7C15ull + 1, CAPACITY_SET, 1, 0, body - 1)) {
            free(order);
            return -1;
        }
    }
    free(order);
    return 0;
}
