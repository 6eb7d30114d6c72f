/* hitadvise: settings ranked by predicted hits at equal memory used (rules
 * in hitadvise.h). Pure. */
#include "model/hitadvise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/ladder_source.h"

static double ratio_of(const struct capacity_result *r)
{
    return r->measured_gets ? (double)r->measured_hits / (double)r->measured_gets : 0;
}

int hitadvise_hist_requests(const struct capacity_seq *s, size_t from, bool use_cas,
                            struct advise_hist *h)
{
    /* per key: value length + 1 of its last write (0: none), key length,
     * flags */
    uint64_t *vlen = calloc(s->n_keys ? s->n_keys : 1, sizeof *vlen);
    uint8_t *klen = calloc(s->n_keys ? s->n_keys : 1, 2);
    int rc = -1;
    if (!vlen || !klen)
        goto out;
    for (size_t i = 0; i < s->n; i++) {
        const struct capacity_op *op = &s->ops[i];
        switch ((enum capacity_kind)op->kind) {
        case CAPACITY_SET:
        case CAPACITY_ADD:
        case CAPACITY_REPLACE:
            vlen[op->key] = (uint64_t)op->value_len + 1;
            klen[2 * op->key] = op->key_len;
            klen[2 * op->key + 1] = op->has_flags;
            break;
        case CAPACITY_APPEND:
        case CAPACITY_PREPEND:
            if (vlen[op->key])
                vlen[op->key] += op->value_len;
            break;
        case CAPACITY_GET:
        case CAPACITY_GAT:
            if (!vlen[op->key] && op->fill && op->value_len) { /* known from a read */
                vlen[op->key] = (uint64_t)op->value_len + 1;
                klen[2 * op->key] = op->key_len;
                klen[2 * op->key + 1] = op->has_flags;
            }
            if (i >= from && vlen[op->key] &&
                advise_hist_add(h,
                                slab_item_ntotal(use_cas, klen[2 * op->key], klen[2 * op->key + 1],
                                                 vlen[op->key] - 1),
                                1))
                goto out;
            break;
        default: break;
        }
    }
    advise_hist_sort(h);
    rc = 0;
out:
    free(vlen);
    free(klen);
    return rc;
}

static int run_at(const struct hitadvise_input *in, const struct slab_ladder *l, unsigned automove,
                  uint64_t mem_mb, struct capacity_result *res)
{
    struct capacity_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.mem_limit = mem_mb * HITADVISE_MB;
    cfg.lru = in->lru;
    cfg.automove = automove;
    cfg.measure_from = in->measure_from;
    cfg.use_cas = l->use_cas;
    return capacity_run(l, &cfg, in->seq, 0, in->seq->n, res);
}

static void fill_candidate(struct hitadvise_candidate *c, const char *label,
                           const struct slab_settings *s, unsigned automove, uint64_t mem_mb,
                           const struct slab_ladder *l)
{
    snprintf(c->label, sizeof c->label, "%s", label);
    c->s = *s;
    c->s.mem_limit = mem_mb * HITADVISE_MB;
    c->automove = automove;
    c->mem_mb = mem_mb;
    c->classes = l->n_classes;
    c->hit_ratio = ratio_of(&c->res);
}

int hitadvise_fit(const struct hitadvise_input *in, const char *label,
                  const struct slab_settings *s, unsigned automove, uint64_t budget,
                  struct hitadvise_candidate *c)
{
    struct slab_ladder l;
    struct capacity_result *res = malloc(sizeof *res);
    uint64_t mb = budget / HITADVISE_MB, fit_mb = 0, tried_hi = 0;
    int rc = -1;
    if (!res || slab_ladder_build(s, &l, NULL, 0) != SLAB_OK)
        goto out;
    memset(c, 0, sizeof *c);
    if (mb < 1)
        mb = 1;
    for (int t = 0; t < HITADVISE_FIT_TRIES; t++) {
        if (run_at(in, &l, automove, mb, res))
            goto out;
        if (res->malloced <= budget) {
            if (mb > fit_mb) {
                fit_mb = mb;
                c->res = *res;
            }
            /* a step down may have overshot: one MB more may still fit */
            if (mb + 1 > budget / HITADVISE_MB || mb + 1 == tried_hi)
                break;
            mb++;
            continue;
        }
        tried_hi = mb;
        if (fit_mb) /* mb - 1 fitted already: that is the largest */
            break;
        uint64_t dec = (res->malloced - budget + HITADVISE_MB - 1) / HITADVISE_MB;
        if (mb == 1)
            break;
        mb = mb > dec + 1 ? mb - (dec ? dec : 1) : 1;
    }
    if (!fit_mb) { /* over whatever -m: keep the smallest tried, marked */
        c->res = *res;
        c->over_budget = true;
        fit_mb = mb;
    }
    fill_candidate(c, label, s, automove, fit_mb, &l);
    rc = 0;
out:
    free(res);
    return rc;
}

/* Whether out[0..n) already has s's ladder with automove. */
static bool have(const struct hitadvise_candidate *out, size_t n, const struct slab_ladder *l,
                 unsigned automove)
{
    struct slab_ladder o;
    for (size_t i = 0; i < n; i++)
        if (out[i].automove == automove && slab_ladder_build(&out[i].s, &o, NULL, 0) == SLAB_OK &&
            slab_ladder_same(&o, l))
            return true;
    return false;
}

static int add(const struct hitadvise_input *in, const char *label, const struct slab_settings *s,
               unsigned automove, uint64_t budget, struct hitadvise_candidate *out, size_t *n)
{
    struct slab_ladder l;
    if (*n >= HITADVISE_MAX || slab_ladder_build(s, &l, NULL, 0) != SLAB_OK ||
        l.n_classes > in->max_classes || have(out, *n, &l, automove))
        return 0;
    if (hitadvise_fit(in, label, s, automove, budget, &out[*n]))
        return -1;
    (*n)++;
    return 0;
}

int hitadvise_run(const struct hitadvise_input *in, struct hitadvise_candidate *out, size_t *n,
                  uint64_t *budget)
{
    static const double factors[] = { 1.05, 1.08, 1.10, 1.15, 1.20, 1.25,
                                      1.30, 1.40, 1.50, 1.75, 2.00 };
    static const uint32_t fits[] = { 8, 16, 32, 62 };
    struct advise_hist items, reqs;
    struct slab_settings s;
    struct advise_eval e;
    struct slab_ladder l;
    char label[HITADVISE_LABEL_MAX];
    int rc = -1, best = 0;
    *n = 0;
    advise_hist_init(&items);
    advise_hist_init(&reqs);
    if (slab_ladder_build(in->current, &l, NULL, 0) != SLAB_OK)
        goto out;
    /* [0]: the current settings at the run's -m, or fitted to the budget */
    if (in->budget) {
        if (hitadvise_fit(in, "the run's own settings", in->current, in->current_automove,
                          in->budget, &out[0]))
            goto out;
        *budget = in->budget;
    } else {
        memset(&out[0], 0, sizeof out[0]);
        if (run_at(in, &l, in->current_automove, in->current_mem_mb, &out[0].res))
            goto out;
        fill_candidate(&out[0], "the run's own settings", in->current, in->current_automove,
                       in->current_mem_mb, &l);
        *budget = out[0].res.malloced;
    }
    *n = 1;
    for (size_t i = 0; i < sizeof factors / sizeof factors[0]; i++) {
        s = *in->current;
        s.n_slab_sizes = 0;
        s.growth_factor = factors[i];
        snprintf(label, sizeof label, "-f %.2f", factors[i]);
        if (add(in, label, &s, in->current_automove, *budget, out, n))
            goto out;
    }
    if (advise_hist_from_seq(in->seq, 0, in->seq->n, in->current->use_cas, &items) ||
        hitadvise_hist_requests(in->seq, in->measure_from, in->current->use_cas, &reqs))
        goto out;
    for (int w = 0; w < 2; w++) {
        const struct advise_hist *h = w ? &reqs : &items;
        if (!h->n)
            continue;
        for (size_t i = 0; i < sizeof fits / sizeof fits[0]; i++) {
            uint32_t k = fits[i] < in->max_classes - 1 ? fits[i] : in->max_classes - 1;
            if (advise_fit_sizes(in->current, h, k, &s, &e))
                continue;
            snprintf(label, sizeof label, "slab_sizes %u, %s", s.n_slab_sizes,
                     w ? "fit to reads" : "fit to items");
            if (add(in, label, &s, in->current_automove, *budget, out, n))
                goto out;
        }
    }
    if (in->try_automove) { /* the three best ladders with each automove */
        int top[3] = { -1, -1, -1 };
        size_t before = *n;
        for (size_t i = 0; i < before; i++) {
            if (out[i].over_budget)
                continue;
            for (int j = 0; j < 3; j++) {
                if (top[j] < 0 || out[i].hit_ratio > out[top[j]].hit_ratio) {
                    for (int m = 2; m > j; m--)
                        top[m] = top[m - 1];
                    top[j] = (int)i;
                    break;
                }
            }
        }
        for (int j = 0; j < 3; j++) {
            if (top[j] < 0)
                continue;
            for (unsigned a = 0; a <= 2; a++) {
                struct hitadvise_candidate *t = &out[top[j]];
                snprintf(label, sizeof label, "%.30s, automove %u", t->label, a);
                if (add(in, label, &t->s, a, *budget, out, n))
                    goto out;
            }
        }
    }
    for (size_t i = 1; i < *n; i++)
        if (!out[i].over_budget && out[i].hit_ratio > out[best].hit_ratio &&
            (best != 0 || out[i].hit_ratio >= out[0].hit_ratio + HITADVISE_MIN_GAIN))
            best = (int)i;
    rc = best;
out:
    advise_hist_free(&items);
    advise_hist_free(&reqs);
    return rc;
}

int hitadvise_min_memory(const struct hitadvise_input *in, const struct slab_settings *s,
                         unsigned automove, double target, uint64_t hi_mb,
                         struct hitadvise_candidate *c)
{
    struct hitadvise_candidate *t = malloc(sizeof *t);
    uint64_t lo = 1, hi = hi_mb;
    int rc = -1;
    if (!t)
        return -1;
    if (hitadvise_fit(in, "smallest memory", s, automove, hi * HITADVISE_MB, t))
        goto out;
    if (t->over_budget || t->hit_ratio < target) {
        *c = *t;
        rc = 1;
        goto out;
    }
    *c = *t;
    while (lo < hi) { /* invariant: hi reaches target */
        uint64_t mid = lo + (hi - lo) / 2;
        if (hitadvise_fit(in, "smallest memory", s, automove, mid * HITADVISE_MB, t))
            goto out;
        if (!t->over_budget && t->hit_ratio >= target) {
            hi = mid;
            *c = *t;
        } else {
            lo = mid + 1;
        }
    }
    rc = 0;
out:
    free(t);
    return rc;
}

int hitadvise_mrc(const struct hitadvise_input *in, const struct slab_settings *s,
                  unsigned automove, const uint64_t *mem, size_t n, struct hitadvise_candidate *out)
{
    for (size_t i = 0; i < n; i++)
        if (hitadvise_fit(in, "mrc", s, automove, mem[i], &out[i]))
            return -1;
    return 0;
}

int hitadvise_mrc_sampled(const struct hitadvise_input *in, const struct slab_settings *s,
                          unsigned automove, uint32_t sample, const uint64_t *mem, size_t n,
                          struct hitadvise_candidate *out)
{
    struct slab_ladder l;
    struct capacity_config cfg;
    if (slab_ladder_build(s, &l, NULL, 0) != SLAB_OK)
        return -1;
    for (size_t i = 0; i < n; i++) {
        struct hitadvise_candidate *c = &out[i];
        memset(c, 0, sizeof *c);
        memset(&cfg, 0, sizeof cfg);
        cfg.mem_limit = mem[i];
        cfg.lru = in->lru;
        cfg.automove = automove;
        cfg.measure_from = in->measure_from;
        cfg.use_cas = l.use_cas;
        enum capacity_shards_status st =
            capacity_shards_run(&l, &cfg, sample, in->seq, 0, in->seq->n, NULL, &c->res);
        if (st == CAPACITY_SHARDS_ERROR)
            return -1;
        fill_candidate(c, "mrc, sampled", s, automove, mem[i] / HITADVISE_MB, &l);
        c->over_budget = st == CAPACITY_SHARDS_TOO_SMALL;
        if (!c->over_budget)
            c->res.malloced *= sample; /* the whole cache's, estimated */
    }
    return 0;
}

int hitadvise_at(const struct hitadvise_input *in, const struct slab_settings *s, unsigned automove,
                 uint64_t mem_mb, uint32_t sample, size_t from, struct hitadvise_candidate *out)
{
    struct slab_ladder l;
    struct capacity_config cfg;
    struct capacity_seq sub;
    const struct capacity_seq *seq = in->seq;
    int rc = -1;
    memset(out, 0, sizeof *out);
    if (slab_ladder_build(s, &l, NULL, 0) != SLAB_OK)
        return -1;
    capacity_seq_init(&sub);
    if (sample > 1) { /* the shadow's keys only, from its start */
        if (capacity_seq_sample(in->seq, from, sample, &sub))
            goto out;
        seq = &sub;
        from = 0;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.mem_limit = mem_mb * HITADVISE_MB;
    cfg.lru = in->lru;
    cfg.automove = automove;
    cfg.measure_from = from;
    cfg.use_cas = l.use_cas;
    if (capacity_run(&l, &cfg, seq, from, seq->n, &out->res))
        goto out;
    fill_candidate(out, sample > 1 ? "shadow, sampled" : "shadow", s, automove, mem_mb, &l);
    rc = 0;
out:
    capacity_seq_free(&sub);
    return rc;
}

size_t hitadvise_mrc_points(uint64_t lo, uint64_t hi, size_t n, uint64_t *mem)
{
    size_t k = 0;
    uint64_t lo_mb = lo / HITADVISE_MB ? lo / HITADVISE_MB : 1, hi_mb = hi / HITADVISE_MB;
    if (hi_mb < lo_mb || n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        double f = n > 1 ? (double)i / (double)(n - 1) : 1;
        uint64_t v = (uint64_t)(exp(log((double)lo_mb) * (1 - f) + log((double)hi_mb) * f) + 0.5);
        if (v < lo_mb)
            v = lo_mb;
        if (v > hi_mb)
            v = hi_mb;
        v *= HITADVISE_MB;
        if (k && v <= mem[k - 1])
            continue;
        mem[k++] = v;
    }
    return k;
}
