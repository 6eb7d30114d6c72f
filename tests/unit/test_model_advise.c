/* test_model_advise: model_advise's arithmetic against hand-computed
 * numbers and brute force.
 *
 *   - advise_evaluate on histograms whose waste is computed by hand from
 *     memcached 1.6.18's default ladder (96, 120, ..., 944, 1184, ...,
 *     524288; see test_slab_model.c), refused (> -I) and chunked
 *     (> slab_chunk_max) items included;
 *   - advise_fit_sizes against an exhaustive search over every valid
 *     `-o slab_sizes` choice (raw sizes, which memcached validates before
 *     it rounds them up to 8 bytes) for small histograms and 1..3 sizes:
 *     the fit must reach the minimum and be accepted by
 *     slab_settings_validate;
 *   - advise_search_factor: a valid ladder, never worse than the settings
 *     it starts from;
 *   - advise_cliffs: the -f 1.08 cliff (class 63 = 524288 takes items of
 *     13,801..524,288 bytes);
 *   - advise_search_factor_max keeps to its class count; advise_eval.pages
 *     by hand; advise_hist_from_seq follows overwrites, deletes, appends;
 *   - advise_capacity: on a bimodal write sequence, for both objectives and
 *     several memory limits, the recommendation never loses to the current
 *     settings, is never over_limit, and is the current settings when
 *     nothing beats them (a single size the default ladder fits).
 * Prints every failing case; exits 1 if any.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/advise.h"
#include "model/slab_model.h"

#include "check.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* A histogram from (size, count) pairs. */
static void hist_of(struct advise_hist *h, const uint64_t (*items)[2], size_t n)
{
    advise_hist_init(h);
    for (size_t i = 0; i < n; i++)
        advise_hist_add(h, items[i][0], items[i][1]);
    advise_hist_sort(h);
}

static void build(struct slab_ladder *l, const struct slab_settings *s)
{
    if (slab_ladder_build(s, l, NULL, 0) != SLAB_OK) {
        printf("FATAL: ladder does not build\n");
        memset(l, 0, sizeof *l);
    }
}

/* ---- advise_evaluate: hand-computed against the default ladder ---- */

static void test_evaluate(struct tally *t)
{
    struct slab_settings s;
    struct slab_ladder l;
    struct advise_hist h;
    struct advise_eval e;
    slab_settings_default(&s);
    build(&l, &s);

    /* experiment 2's worst case: 945 = one byte over the 944 chunk */
    static const uint64_t worst[][2] = { { 945, 10 } };
    hist_of(&h, worst, N(worst));
    advise_evaluate(&l, &h, &e);
    TALLY_CHECK(t, e.items == 10 && e.requested == 9450 && e.allocated == 11840 && e.waste == 2390,
                "10 x 945: items %" PRIu64 " requested %" PRIu64 " allocated %" PRIu64
                " waste %" PRIu64,
                e.items, e.requested, e.allocated, e.waste);
    TALLY_CHECK(t, e.waste_pct > 20.185 && e.waste_pct < 20.186,
                "10 x 945: waste %.4f %% (2390/11840)", e.waste_pct);
    TALLY_CHECK(t,
                e.classes_in_ladder == 39 && e.classes_used == 1 && e.chunked_items == 0 &&
                    e.refused_items == 0,
                "10 x 945: classes %u/%u chunked %" PRIu64 " refused %" PRIu64, e.classes_in_ladder,
                e.classes_used, e.chunked_items, e.refused_items);
    advise_hist_free(&h);

    /* exact fits waste nothing */
    static const uint64_t exact[][2] = { { 96, 3 }, { 944, 2 }, { 524288, 1 } };
    hist_of(&h, exact, N(exact));
    advise_evaluate(&l, &h, &e);
    TALLY_CHECK(t, e.allocated == 3 * 96 + 2 * 944 + 524288 && e.waste == 0 && e.classes_used == 3,
                "exact fits: allocated %" PRIu64 " waste %" PRIu64 " used %u", e.allocated, e.waste,
                e.classes_used);
    advise_hist_free(&h);

    /* a mix, given in no order and with a size repeated:
     *   1 x 10 -> 96 (86), 5 x 96 -> 96 (0), 3 x 97 -> 120 (69),
     *   7 x 600 -> 600 (0), 2 x 601 -> 752 (302), 4 x 394841 -> 524288 (517788)
     * plus 2 items over -I (refused, not counted). */
    static const uint64_t mix[][2] = { { 601, 2 }, { 97, 1 }, { 96, 5 },     { 600, 7 },
                                       { 10, 1 },  { 97, 2 }, { 394841, 4 }, { 1048576 + 1, 2 } };
    hist_of(&h, mix, N(mix));
    advise_evaluate(&l, &h, &e);
    uint64_t req = 10 + 5 * 96 + 3 * 97 + 7 * 600 + 2 * 601 + 4 * 394841ull;
    uint64_t alloc = 96 + 5 * 96 + 3 * 120 + 7 * 600 + 2 * 752 + 4 * 524288ull;
    TALLY_CHECK(t,
                e.items == 22 && e.requested == req && e.allocated == alloc &&
                    e.waste == alloc - req && e.refused_items == 2 && e.classes_used == 5,
                "mix: items %" PRIu64 " requested %" PRIu64 "/%" PRIu64 " allocated %" PRIu64
                "/%" PRIu64 " refused %" PRIu64 " used %u",
                e.items, e.requested, req, e.allocated, alloc, e.refused_items, e.classes_used);
    TALLY_CHECK(t, h.n == 7 && h.ntotal[0] == 10 && h.ntotal[2] == 97 && h.count[2] == 3,
                "sorted histogram: n %zu, [2] = %" PRIu64 " x %" PRIu64, h.n, h.ntotal[2],
                h.count[2]);
    advise_hist_free(&h);

    /* an empty histogram */
    advise_hist_init(&h);
    advise_evaluate(&l, &h, &e);
    TALLY_CHECK(t, e.items == 0 && e.allocated == 0 && e.waste_pct == 0, "empty histogram");
    advise_hist_free(&h);
}

/* Chunked items (ntotal > slab_chunk_max): counted with their header
 * chunk, their full slab_chunk_max chunks and the tail's chunk. */
static void test_evaluate_chunked(struct tally *t)
{
    struct slab_settings s;
    struct slab_ladder l;
    struct advise_hist h;
    struct advise_eval e;
    slab_settings_default(&s);
    build(&l, &s);

    /* Item with a 7-byte key, no flags, CAS on (key + 1 + suffix + CAS = 16
     * bytes, the size advise assumes) and a 600,000-byte value:
     *   ntotal = 48 + 7 + 1 + 600000 + 2 + 8 = 600066
     *   header chunk: 48 + 48 + 7 + 1 + 8 = 112 -> class 2 (120)
     *   data 600002 bytes: one full chunk of 524240 + 48 -> 524288,
     *   tail 75762 + 48 = 75810 -> class 31 (82792)
     *   allocated 120 + 524288 + 82792 = 607200 */
    static const uint64_t big[][2] = { { 600066, 3 }, { 945, 1 } };
    hist_of(&h, big, N(big));
    advise_evaluate(&l, &h, &e);
    TALLY_CHECK(t, e.items == 4 && e.chunked_items == 3,
                "chunked: items %" PRIu64 " chunked %" PRIu64, e.items, e.chunked_items);
    TALLY_CHECK(t, e.requested == 3 * 600066ull + 945 && e.allocated == 3 * 607200ull + 1184,
                "chunked: requested %" PRIu64 " allocated %" PRIu64 " (want %llu)", e.requested,
                e.allocated, 3 * 607200ull + 1184);
    advise_hist_free(&h);

    /* The same, against slab_model's layout of the item (which follows
     * memcached's do_item_alloc / do_item_alloc_chunk), for many value
     * lengths, under the default ladder and under slab_chunk_max 16384
     * (where the tails spread over many classes). */
    static const uint32_t scms[] = { 524288, 16384 };
    for (size_t k = 0; k < N(scms); k++) {
        slab_settings_default(&s);
        s.slab_chunk_max = scms[k];
        build(&l, &s);
        int bad = 0;
        for (uint64_t v = scms[k] - 200; v < 1048576 - 100 && bad < 3; v += 997) {
            struct slab_item_layout it;
            if (slab_item_layout(&l, 7, 0, v, &it) != SLAB_OK || !it.chunked)
                continue;
            uint64_t want = l.cls[it.hdr_class].chunk_size +
                            it.full_chunks * l.cls[it.full_class].chunk_size +
                            (it.tail_class ? l.cls[it.tail_class].chunk_size : 0);
            static const uint64_t dummy[][2] = { { 0, 1 } };
            hist_of(&h, dummy, N(dummy));
            h.ntotal[0] = it.ntotal;
            advise_evaluate(&l, &h, &e);
            if (e.allocated != want || e.chunked_items != 1) {
                bad++;
                TALLY_CHECK(
                    t, 0,
                    "scm %u, value %" PRIu64 " (ntotal %" PRIu64 "): advise allocates %" PRIu64
                    ", memcached %" PRIu64 " (hdr %u, %" PRIu64 " x %u, tail %u)",
                    scms[k], v, it.ntotal, e.allocated, want, l.cls[it.hdr_class].chunk_size,
                    it.full_chunks, scms[k], it.tail_class ? l.cls[it.tail_class].chunk_size : 0);
            }
            advise_hist_free(&h);
        }
        TALLY_CHECK(t, bad == 0, "scm %u: chunked allocations differ", scms[k]);
    }
}

/* ---- advise_fit_sizes against brute force ---- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(uint64_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state % n;
}

/* Allocated bytes of sizes[] x counts[] under raw slab sizes r[0..k-1]
 * (memcached rounds each up to 8) plus the slab_chunk_max class.
 * Written from memcached's rule, not from model_advise. */
static uint64_t brute_alloc(const uint64_t *sz, const uint64_t *cnt, size_t n, const uint32_t *r,
                            int k, uint32_t scm)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t chunk = scm;
        for (int c = 0; c < k; c++) {
            uint64_t a = (r[c] + 7u) / 8u * 8u;
            if (sz[i] <= a) {
                chunk = a;
                break;
            }
        }
        total += chunk * cnt[i];
    }
    return total;
}

struct brute {
    const struct slab_settings *base;
    const uint64_t *sz, *cnt;
    size_t n;
    uint32_t lo, hi;      /* raw sizes tried: lo..hi */
    const uint32_t *cand; /* or only these (NULL: lo..hi) */
    size_t ncand;
    uint64_t best;
    uint32_t best_r[3];
    int best_k;
    uint64_t tried;
};

/* Every increasing choice of 1..kmax raw sizes that memcached accepts. */
static void brute_rec(struct brute *b, uint32_t *r, int k, int kmax, uint32_t from)
{
    if (k > 0) {
        struct slab_settings s = *b->base;
        s.n_slab_sizes = (uint32_t)k;
        memcpy(s.slab_sizes, r, (size_t)k * sizeof *r);
        if (slab_settings_validate(&s, NULL, 0) != SLAB_OK)
            return; /* and so is every extension of it */
        b->tried++;
        uint64_t a = brute_alloc(b->sz, b->cnt, b->n, r, k, b->base->slab_chunk_max);
        if (a < b->best) {
            b->best = a;
            b->best_k = k;
            memcpy(b->best_r, r, (size_t)k * sizeof *r);
        }
    }
    if (k == kmax)
        return;
    if (b->cand) {
        for (size_t i = from; i < b->ncand; i++) {
            r[k] = b->cand[i];
            brute_rec(b, r, k + 1, kmax, (uint32_t)i + 1);
        }
    } else {
        for (uint32_t v = from; v <= b->hi; v++) {
            r[k] = v;
            brute_rec(b, r, k + 1, kmax, v + 1);
        }
    }
}

/* advise_fit_sizes must equal the brute force's minimum, give a ladder
 * memcached accepts with at most max_sizes sizes, and report its waste
 * truthfully. */
static void check_fit(struct tally *t, const char *what, const uint64_t *sz, const uint64_t *cnt,
                      size_t n, uint32_t max_sizes, const uint32_t *cand, size_t ncand)
{
    struct slab_settings base, fitted;
    struct advise_eval fe, ce;
    struct advise_hist h;
    struct slab_ladder l;
    slab_settings_default(&base);
    advise_hist_init(&h);
    uint64_t maxsz = 0;
    for (size_t i = 0; i < n; i++) {
        advise_hist_add(&h, sz[i], cnt[i]);
        if (sz[i] > maxsz)
            maxsz = sz[i];
    }
    advise_hist_sort(&h);
    struct brute b = { &base,      sz,    cnt, n, base.chunk_size_min, 0, cand, ncand,
                       UINT64_MAX, { 0 }, 0,   0 };
    /* a raw size above the largest item's 8-byte slot only loosens a class */
    b.hi = (uint32_t)((maxsz + 7) / 8 * 8);
    if (b.hi < (b.lo + 7) / 8 * 8)
        b.hi = (b.lo + 7) / 8 * 8; /* every item below -n: the first slot */
    if (b.hi > base.slab_chunk_max)
        b.hi = base.slab_chunk_max;
    uint32_t r[3];
    brute_rec(&b, r, 0, (int)max_sizes, cand ? 0 : b.lo);

    int rc = advise_fit_sizes(&base, &h, max_sizes, &fitted, &fe);
    TALLY_CHECK(t, rc == 0, "%s, max %u: advise_fit_sizes failed", what, max_sizes);
    if (rc == 0) {
        char err[200] = "";
        TALLY_CHECK(t, slab_settings_validate(&fitted, err, sizeof err) == SLAB_OK,
                    "%s, max %u: fitted ladder refused: %s", what, max_sizes, err);
        TALLY_CHECK(t, fitted.n_slab_sizes >= 1 && fitted.n_slab_sizes <= max_sizes,
                    "%s, max %u: %u sizes", what, max_sizes, fitted.n_slab_sizes);
        uint64_t own = brute_alloc(sz, cnt, n, fitted.slab_sizes, (int)fitted.n_slab_sizes,
                                   base.slab_chunk_max);
        TALLY_CHECK(t, own == fe.allocated,
                    "%s, max %u: fit reports %" PRIu64 " allocated, its ladder "
                    "allocates %" PRIu64,
                    what, max_sizes, fe.allocated, own);
        if (slab_ladder_build(&fitted, &l, NULL, 0) == SLAB_OK) {
            advise_evaluate(&l, &h, &ce);
            TALLY_CHECK(t, ce.allocated == fe.allocated && ce.waste == fe.waste,
                        "%s: fitted_eval differs from advise_evaluate", what);
        }
        if (fe.allocated != b.best) {
            char fs[256] = "", bs[64] = "";
            size_t o = 0;
            for (uint32_t i = 0; i < fitted.n_slab_sizes && o < sizeof fs; i++)
                o += (size_t)snprintf(fs + o, sizeof fs - o, "%s%u", i ? "-" : "",
                                      fitted.slab_sizes[i]);
            o = 0;
            for (int i = 0; i < b.best_k; i++)
                o += (size_t)snprintf(bs + o, sizeof bs - o, "%s%u", i ? "-" : "", b.best_r[i]);
            TALLY_CHECK(t, 0,
                        "%s, max %u: fit allocates %" PRIu64
                        " (slab_sizes=%s), brute force %" PRIu64 " (slab_sizes=%s, %" PRIu64
                        " ladders tried)",
                        what, max_sizes, fe.allocated, fs, b.best, bs, b.tried);
        } else {
            t->run++;
        }
    }
    advise_hist_free(&h);
}

static void test_fit_brute(struct tally *t)
{
    /* two neighbouring 8-byte slots: raw 97-112 gives chunks 104 and 112
     * (memcached checks 112 > 97 + 8 before rounding 97 up to 104) */
    {
        static const uint64_t sz[] = { 104, 112 }, cnt[] = { 1000, 1000 };
        for (uint32_t k = 1; k <= 3; k++)
            check_fit(t, "104/112", sz, cnt, N(sz), k, NULL, 0);
    }
    /* a run of neighbouring slots */
    {
        static const uint64_t sz[] = { 100, 104, 112, 120, 128 }, cnt[] = { 50, 900, 800, 700, 10 };
        for (uint32_t k = 1; k <= 3; k++)
            check_fit(t, "100..128", sz, cnt, N(sz), k, NULL, 0);
    }
    /* below -n: everything lands in a class of at least 48 */
    {
        static const uint64_t sz[] = { 1, 20, 47, 49, 60 }, cnt[] = { 5, 5, 5, 100, 1 };
        for (uint32_t k = 1; k <= 3; k++)
            check_fit(t, "tiny", sz, cnt, N(sz), k, NULL, 0);
    }
    /* random small histograms: up to 8 sizes in 30..170, every raw choice */
    for (int iter = 0; iter < 24; iter++) {
        uint64_t sz[8], cnt[8];
        size_t n = 1 + (size_t)rnd(8);
        for (size_t i = 0; i < n; i++) {
            sz[i] = 30 + rnd(141);
            cnt[i] = rnd(4) ? 1 + rnd(1000) : 1 + rnd(5);
        }
        char what[32];
        snprintf(what, sizeof what, "random #%d", iter);
        for (uint32_t k = 1; k <= 3; k++)
            check_fit(t, what, sz, cnt, n, k, NULL, 0);
    }
    /* wide histograms up to slab_chunk_max, sizes at least 16 apart once
     * rounded to 8: then any ladder can be lowered, class by class, to the
     * slot of its largest item without becoming invalid or wasting more, so
     * trying the items' own slots is exhaustive. Items near slab_chunk_max
     * may do best left in the slab_chunk_max class. */
    static const uint64_t wide[][8] = {
        { 400000, 520000, 0 },
        { 300, 5000, 5100, 300000, 524000, 524288, 0 },
        { 200, 400, 800, 1600, 3200, 6400, 12800, 25600 },
        { 96, 200, 1000, 9000, 100000, 500000, 510000, 524200 },
    };
    static const uint64_t wide_cnt[][8] = {
        { 10, 10 },
        { 1000, 300, 300, 5, 2, 2 },
        { 1, 10, 100, 1000, 1000, 100, 10, 1 },
        { 7, 70, 700, 7000, 70, 7, 3, 1 },
    };
    for (size_t w = 0; w < N(wide); w++) {
        size_t n = 0;
        uint32_t cand[8];
        while (n < 8 && wide[w][n]) {
            cand[n] = (uint32_t)((wide[w][n] < 48 ? 48 : wide[w][n]) + 7) / 8 * 8;
            n++;
        }
        char what[32];
        snprintf(what, sizeof what, "wide #%zu", w);
        for (uint32_t k = 1; k <= 3; k++)
            check_fit(t, what, wide[w], wide_cnt[w], n, k, cand, n);
    }
}

/* A histogram larger than the exact DP handles: still a valid ladder, no
 * worse than memcached's default ladder with 62 sizes allowed. */
static void test_fit_large(struct tally *t)
{
    struct slab_settings base, fitted;
    struct slab_ladder l;
    struct advise_hist h;
    struct advise_eval fe, de;
    slab_settings_default(&base);
    build(&l, &base);
    advise_hist_init(&h);
    for (uint64_t s = 60; s < 40000; s += 7)
        advise_hist_add(&h, s, 1 + s % 13);
    advise_hist_sort(&h);
    advise_evaluate(&l, &h, &de);
    int rc = advise_fit_sizes(&base, &h, 62, &fitted, &fe);
    TALLY_CHECK(t, rc == 0 && slab_settings_validate(&fitted, NULL, 0) == SLAB_OK,
                "large histogram: fit failed or invalid");
    TALLY_CHECK(t, rc == 0 && fitted.n_slab_sizes <= 62 && fe.waste < de.waste,
                "large histogram: fitted waste %" PRIu64 " not below the default's %" PRIu64,
                fe.waste, de.waste);
    /* max_sizes caps the ladder */
    rc = advise_fit_sizes(&base, &h, 3, &fitted, &fe);
    TALLY_CHECK(t, rc == 0 && fitted.n_slab_sizes <= 3 && fitted.n_slab_sizes >= 1,
                "large histogram, max 3: %u sizes", fitted.n_slab_sizes);
    advise_hist_free(&h);
}

/* ---- advise_search_factor ---- */

static void check_search(struct tally *t, const char *what, const struct slab_settings *base,
                         const struct advise_hist *h)
{
    struct slab_settings best;
    struct slab_ladder l, bl;
    struct advise_eval be, e0, e1;
    build(&l, base);
    advise_evaluate(&l, h, &e0);
    int rc = advise_search_factor(base, h, &best, &be);
    TALLY_CHECK(t, rc == 0, "%s: search failed", what);
    if (rc)
        return;
    char err[200] = "";
    TALLY_CHECK(
        t, slab_settings_validate(&best, err, sizeof err) == SLAB_OK && best.n_slab_sizes == 0,
        "%s: best -n %u -f %.2f refused: %s", what, best.chunk_size_min, best.growth_factor, err);
    TALLY_CHECK(t,
                best.slab_chunk_max == base->slab_chunk_max &&
                    best.item_size_max == base->item_size_max && best.use_cas == base->use_cas,
                "%s: search changed settings it does not search", what);
    TALLY_CHECK(t, be.waste <= e0.waste,
                "%s: best -n %u -f %.2f wastes %" PRIu64 ", more than the base "
                "-n %u -f %.3f (%" PRIu64 ")",
                what, best.chunk_size_min, best.growth_factor, be.waste, base->chunk_size_min,
                base->growth_factor, e0.waste);
    if (slab_ladder_build(&best, &bl, NULL, 0) == SLAB_OK) {
        advise_evaluate(&bl, h, &e1);
        TALLY_CHECK(t, e1.allocated == be.allocated && e1.waste == be.waste,
                    "%s: best_eval differs from advise_evaluate", what);
    }
}

static void test_search_factor(struct tally *t)
{
    struct slab_settings base;
    struct slab_ladder l;
    struct advise_hist h;
    struct advise_eval be;
    slab_settings_default(&base);

    static const uint64_t worst[][2] = { { 945, 20000 } };
    hist_of(&h, worst, N(worst));
    check_search(t, "945", &base, &h);
    struct slab_settings best;
    advise_search_factor(&base, &h, &best, &be);
    TALLY_CHECK(t, be.waste < 2390 * 2000, "945: best wastes %" PRIu64, be.waste);
    advise_hist_free(&h);

    /* bimodal */
    advise_hist_init(&h);
    for (uint64_t s = 250; s <= 350; s++)
        advise_hist_add(&h, s, 30);
    for (uint64_t s = 4500; s <= 5500; s += 3)
        advise_hist_add(&h, s, 9);
    advise_hist_sort(&h);
    check_search(t, "bimodal", &base, &h);
    /* other bases: -f 1.08 -n 16, CAS off, slab_chunk_max 16384 */
    struct slab_settings b2 = base;
    b2.growth_factor = 1.08;
    b2.chunk_size_min = 16;
    check_search(t, "bimodal, -f 1.08 -n 16", &b2, &h);
    b2 = base;
    b2.slab_chunk_max = 16384;
    check_search(t, "bimodal, scm 16384", &b2, &h);
    advise_hist_free(&h);

    /* a base off the search grid (-f 1.125 -n 52): items that fill its
     * chunks exactly waste nothing there, so the best must not waste more */
    b2 = base;
    b2.growth_factor = 1.125;
    b2.chunk_size_min = 52;
    build(&l, &b2);
    advise_hist_init(&h);
    for (uint32_t c = 1; c < l.n_classes; c++)
        advise_hist_add(&h, l.cls[c].chunk_size, 100);
    advise_hist_sort(&h);
    check_search(t, "off-grid base -f 1.125 -n 52", &b2, &h);
    advise_hist_free(&h);
}

/* ---- advise_cliffs ---- */

static void test_cliffs(struct tally *t)
{
    struct slab_settings s;
    struct slab_ladder l;
    struct advise_hist h;
    struct advise_cliff c[8];
    slab_settings_default(&s);
    s.growth_factor = 1.08;
    build(&l, &s);
    TALLY_CHECK(
        t, l.n_classes == 63 && l.cls[62].chunk_size == 13800 && l.cls[63].chunk_size == 524288,
        "-f 1.08 ladder: %u classes", l.n_classes);
    static const uint64_t items[][2] = { { 20000, 500 }, { 945, 100 }, { 13800, 3 } };
    hist_of(&h, items, N(items));
    size_t n = advise_cliffs(&l, &h, c, N(c));
    TALLY_CHECK(t, n == 1, "-f 1.08, 20,000-byte items: %zu cliffs", n);
    if (n >= 1)
        TALLY_CHECK(t,
                    c[0].class_id == 63 && c[0].chunk_size == 524288 && c[0].lo == 13801 &&
                        c[0].hi == 524288 && c[0].min_item == 20000 && c[0].max_item == 20000 &&
                        c[0].items == 500,
                    "cliff: class %u chunk %u range %" PRIu64 "..%" PRIu64 " items %" PRIu64
                    "..%" PRIu64 " x %" PRIu64,
                    c[0].class_id, c[0].chunk_size, c[0].lo, c[0].hi, c[0].min_item, c[0].max_item,
                    c[0].items);
    advise_hist_free(&h);

    /* the same items under the default ladder: no cliff (17352 < 20000 <= 21696) */
    slab_settings_default(&s);
    build(&l, &s);
    hist_of(&h, items, N(items));
    n = advise_cliffs(&l, &h, c, N(c));
    TALLY_CHECK(t, n == 0, "default ladder, 20,000-byte items: %zu cliffs", n);
    advise_hist_free(&h);

    /* an item just above the 13,800 chunk of -f 1.08 is the worst case */
    s.growth_factor = 1.08;
    build(&l, &s);
    static const uint64_t edge[][2] = { { 13801, 1 }, { 524288, 1 } };
    hist_of(&h, edge, N(edge));
    n = advise_cliffs(&l, &h, c, N(c));
    TALLY_CHECK(t, n == 1 && c[0].min_item == 13801 && c[0].max_item == 524288 && c[0].items == 2,
                "13,801 and 524,288: %zu cliffs", n);
    advise_hist_free(&h);
}

/* advise_progress_fn: the last (done, total) seen */
static bool count_progress(void *ud, size_t done, size_t total)
{
    size_t *p = ud;
    p[0] = done;
    p[1] = total;
    return true;
}

static void test_capacity_advice(struct tally *t)
{
    struct slab_settings base, best;
    struct slab_ladder l;
    struct advise_eval be;
    struct advise_hist h;
    struct capacity_seq seq;
    slab_settings_default(&base);
    /* pages by hand: 1770 items of 1067 in 1184-byte chunks (885 a page) */
    static const uint64_t one[][2] = { { 1067, 1770 } };
    hist_of(&h, one, N(one));
    build(&l, &base);
    advise_evaluate(&l, &h, &be);
    TALLY_CHECK(t, be.pages == 2, "pages %llu, want 2", (unsigned long long)be.pages);
    for (uint32_t k = 16; k <= 63; k += 7) { /* -f 2.0 -n 512 still has 11 */
        TALLY_CHECK(t, advise_search_factor_max(&base, &h, k, &best, &be) == 0, "max %u", k);
        build(&l, &best);
        TALLY_CHECK(t, l.n_classes <= k, "max %u: %u classes", k, l.n_classes);
    }
    TALLY_CHECK(t, advise_search_factor_max(&base, &h, 4, &best, &be) == -1,
                "no -f/-n ladder has 4 classes");
    advise_hist_free(&h);

    /* a bimodal sequence: 6000 small keys (value 200..400), 2000 large
     * (4700..5300), a third of the small ones rewritten, 500 deleted, 100
     * appended to */
    capacity_seq_init(&seq);
    uint64_t x = 88172645463325252ULL;
#define RND() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
    for (uint64_t i = 0; i < 6000; i++)
        capacity_seq_add(&seq, i, CAPACITY_SET, 12, 0, 200 + RND() % 201);
    for (uint64_t i = 0; i < 2000; i++)
        capacity_seq_add(&seq, 100000 + i, CAPACITY_SET, 12, 0, 4700 + RND() % 601);
    for (uint64_t i = 0; i < 2000; i++)
        capacity_seq_add(&seq, i, CAPACITY_SET, 12, 0, 200 + RND() % 201);
    for (uint64_t i = 0; i < 500; i++)
        capacity_seq_add(&seq, 3000 + i, CAPACITY_DELETE, 12, 0, 0);
    for (uint64_t i = 0; i < 100; i++)
        capacity_seq_add(&seq, 4000 + i, CAPACITY_APPEND, 12, 0, 10);
#undef RND
    advise_hist_init(&h);
    TALLY_CHECK(t, advise_hist_from_seq(&seq, 0, seq.n, true, &h) == 0, "hist_from_seq");
    uint64_t items = 0;
    for (size_t i = 0; i < h.n; i++)
        items += h.count[i];
    TALLY_CHECK(t, items == 7500, "live items %llu, want 7500", (unsigned long long)items);
    struct advise_candidate *c = calloc(ADVISE_MAX_CANDIDATES, sizeof *c);
    static const uint64_t limits[] = { 2, 4, 8, 16, 64 };
    for (int obj = 0; obj < 2 && c; obj++) {
        for (size_t li = 0; li < N(limits); li++) {
            size_t n = 0;
            uint32_t maxc = li % 2 ? 20 : 63;
            size_t prog[2] = { 0, 0 };
            int rec = advise_capacity(&base, &h, &seq, 0, seq.n, (enum capacity_objective)obj,
                                      limits[li] << 20, maxc, c, &n, count_progress, prog);
            /* progress: called as candidates are added, the last call at n */
            TALLY_CHECK(t, rec < 0 || (prog[0] == n && prog[1] >= n),
                        "progress %zu of %zu, %zu candidates", prog[0], prog[1], n);
            TALLY_CHECK(t, rec >= 0 && n >= 3, "obj %d -m %llu: rec %d, %zu candidates", obj,
                        (unsigned long long)limits[li], rec, n);
            if (rec < 0)
                continue;
            TALLY_CHECK(
                t, capacity_compare((enum capacity_objective)obj, &c[rec].cap, &c[0].cap) >= 0,
                "obj %d -m %llu: recommendation loses", obj, (unsigned long long)limits[li]);
            TALLY_CHECK(t, rec == 0 || (c[rec].vs_current > 0 && !c[rec].over_limit),
                        "obj %d -m %llu: recommended %s ties or is over -m", obj,
                        (unsigned long long)limits[li], c[rec].label);
            TALLY_CHECK(t, !strcmp(c[0].label, "the run's own settings"), "label 0");
            for (size_t i = 1; i < n; i++) {
                build(&l, &c[i].s);
                TALLY_CHECK(t, l.n_classes <= maxc, "%s: %u classes over %u", c[i].label,
                            l.n_classes, maxc);
                if (obj == CAPACITY_OBJ_MEMORY)
                    TALLY_CHECK(t, c[i].cap.evictions == 0 && c[i].cap.items == 7500,
                                "memory objective runs without a limit");
            }
        }
    }
    advise_hist_free(&h);
    capacity_seq_free(&seq);

    /* one size that the default ladder fits snugly: nothing beats it on memory */
    capacity_seq_init(&seq);
    for (uint64_t i = 0; i < 3000; i++) /* 48 + 8 + 1 + 1117 + 2 + 8 = 1184 */
        capacity_seq_add(&seq, i, CAPACITY_SET, 8, 0, 1117);
    advise_hist_init(&h);
    advise_hist_from_seq(&seq, 0, seq.n, true, &h);
    size_t n = 0;
    int rec = c ? advise_capacity(&base, &h, &seq, 0, seq.n, CAPACITY_OBJ_MEMORY, 0, 63, c, &n,
                                  NULL, NULL)
                : -1;
    TALLY_CHECK(t, rec == 0, "snug fit: recommended %d (%s)", rec, rec > 0 ? c[rec].label : "-");
    if (rec == 0)
        TALLY_CHECK(t, c[0].cap.chunk_waste == 0 && c[0].cap.pages == 4,
                    "snug: waste %llu pages %llu", (unsigned long long)c[0].cap.chunk_waste,
                    (unsigned long long)c[0].cap.pages);
    advise_hist_free(&h);
    capacity_seq_free(&seq);
    free(c);
}

int main(void)
{
    struct tally t = { 0, 0 };
    test_capacity_advice(&t);
    test_evaluate(&t);
    test_evaluate_chunked(&t);
    test_fit_brute(&t);
    test_fit_large(&t);
    test_search_factor(&t);
    test_cliffs(&t);
    return tally_done("test_model_advise", &t);
}
