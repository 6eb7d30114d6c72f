/* wagg: the write aggregates -- bands, which rows count where, and the two
 * generations (a rolled-back batch is never counted, a committed one once). */
#include <string.h>

#include <stdlib.h>

#include "check.h"
#include "model/advise.h"
#include "model/slab_model.h"
#include "record/wagg.h"

static struct rec_row row(enum mc_cmd cmd, char mode, int64_t t_ns, uint16_t key_len,
                          int64_t value_len, uint32_t flags, int64_t latency_ns)
{
    struct rec_row r;
    memset(&r, 0, sizeof r);
    r.kind = REC_ROW_WRITE;
    r.cmd = (uint8_t)cmd;
    r.ms_mode = mode;
    r.t_ns = t_ns;
    r.key_len = key_len;
    r.value_len = value_len;
    r.flags = flags;
    r.latency_ns = latency_ns;
    return r;
}

static const struct wagg_ent *find(const struct wagg *g, enum wagg_kind kind, int64_t t, int64_t k)
{
    for (size_t i = 0; i < g->used; i++) {
        const struct wagg_ent *e = &g->e[g->slots[i]];
        if (e->kind == kind && e->t == t && e->k == k)
            return e;
    }
    return NULL;
}

static void test_bands(void)
{
    static const struct {
        int64_t ns, band;
    } cases[] = {
        { -1, -1 },
        { 0, 0 },
        { 499, 0 },
        { 500, 1 },
        { 99499, 99 },
        { 99500, 100 },
        { 123456, 120 },
        { 999999, 1000 },
        { 1234567, 1200 },
        { 12345678, 12000 },
        { 123456789, 120000 },
        { 2000000000, 2000000 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(wagg_latency_band(cases[i].ns) == cases[i].band, "band(%lld) = %lld, want %lld",
              (long long)cases[i].ns, (long long)wagg_latency_band(cases[i].ns),
              (long long)cases[i].band);
}

static void test_stores(void)
{
    static const struct {
        enum mc_cmd cmd;
        char mode;
        int64_t value_len;
        bool stores;
    } cases[] = {
        { MC_CMD_SET, 0, 10, true },     { MC_CMD_ADD, 0, 10, true },
        { MC_CMD_REPLACE, 0, 10, true }, { MC_CMD_CAS, 0, 10, true },
        { MC_CMD_APPEND, 0, 10, false }, { MC_CMD_PREPEND, 0, 10, false },
        { MC_CMD_MS, 0, 10, true },      { MC_CMD_MS, 'S', 10, true },
        { MC_CMD_MS, 'E', 10, true },    { MC_CMD_MS, 'R', 10, true },
        { MC_CMD_MS, 'A', 10, false },   { MC_CMD_MS, 'P', 10, false },
        { MC_CMD_MS, 'a', 10, false },   { MC_CMD_DELETE, 0, -1, false },
        { MC_CMD_INCR, 0, -1, false },   { MC_CMD_TOUCH, 0, -1, false },
        { MC_CMD_SET, 0, -1, false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rec_row r = row(cases[i].cmd, cases[i].mode, 0, 3, cases[i].value_len, 0, 0);
        CHECK(wagg_stores(&r) == cases[i].stores, "case %zu: %s mode %c", i,
              mc_cmd_name(cases[i].cmd), cases[i].mode ? cases[i].mode : '-');
    }
}

static void test_generations(void)
{
    struct wagg g;
    CHECK(wagg_init(&g) == 0, "init");
    const int64_t m = 60000000000ll, s = 1000000000ll;
    struct rec_row a = row(MC_CMD_SET, 0, 5 * m + 2 * s, 10, 100, 0, 150000); /* body 110 */
    struct rec_row b = row(MC_CMD_SET, 0, 5 * m + 3 * s, 10, 96, 7, 150400);  /* body 110 too */
    struct rec_row d = row(MC_CMD_DELETE, 0, 5 * m + 3 * s, 10, -1, 0, -1);
    wagg_note(&g, &a, 0, 1, 1);
    wagg_note(&g, &b, 4, 1, 1);
    wagg_note(&g, &d, 4, 13, 8);
    /* a rolled-back batch leaves nothing counted */
    wagg_batch_done(&g, false);
    const struct wagg_ent *e = find(&g, WAGG_SIZE, 5, 110);
    CHECK(e && e->n == 0 && e->batch_n == 0, "rolled back: size");
    /* the same rows again, committed: counted once */
    wagg_note(&g, &a, 0, 1, 1);
    wagg_note(&g, &b, 4, 1, 1);
    wagg_note(&g, &d, 4, 13, 8);
    wagg_batch_done(&g, true);
    e = find(&g, WAGG_SIZE, 5, 110);
    CHECK(e && e->n == 2 && e->bytes == 196 && e->batch_n == 0, "size 110: n %lld bytes %lld",
          e ? (long long)e->n : -1, e ? (long long)e->bytes : -1);
    e = find(&g, WAGG_LATENCY, 5 * 60 + 2, 150);
    CHECK(e && e->n == 1, "latency band 150 in second 302");
    e = find(&g, WAGG_LATENCY, 5 * 60 + 3, 150);
    CHECK(e && e->n == 1, "latency band 150 in second 303 (150.4 us)");
    e = find(&g, WAGG_LATENCY, 5 * 60 + 3, -1);
    CHECK(e && e->n == 1, "the delete without an answer time");
    e = find(&g, WAGG_PREFIX, 5, 4);
    CHECK(e && e->n == 2 && e->bytes == 96, "prefix 4: the set and the delete");
    CHECK(find(&g, WAGG_SIZE, 5, 10) == NULL, "a delete stores nothing");
    /* a batch in progress is in batch_n until it is done */
    wagg_note(&g, &a, 0, 1, 1);
    e = find(&g, WAGG_SIZE, 5, 110);
    CHECK(e && e->n == 2 && e->batch_n == 1, "batch in progress");
    wagg_clear(&g);
    CHECK(g.used == 0 && !find(&g, WAGG_SIZE, 5, 110), "cleared");
    wagg_free(&g);
}

static void test_full_table(void)
{
    struct wagg g;
    CHECK(wagg_init(&g) == 0, "init");
    /* every size its own entry: the table takes WAGG_CAP - 1, the rest is
     * counted as lost, never spread over wrong entries */
    int extra = 0;
    for (int64_t i = 0; i < WAGG_CAP + 10 && (!g.overflow || extra++ < 10); i++) {
        struct rec_row r = row(MC_CMD_SET, 0, 0, 1, i, 0, -1);
        r.latency_ns = -1;
        wagg_note(&g, &r, 0, 1, 1);
    }
    CHECK(g.used == WAGG_CAP - 1, "used %zu", g.used);
    CHECK(g.overflow && g.lost > 0, "lost %llu", (unsigned long long)g.lost);
    CHECK(wagg_should_flush(&g), "asks to be written");
    wagg_free(&g);
}

static void test_buckets(void)
{
    /* exact below 16 KB; from it on, 128 buckets per power of two */
    CHECK(wagg_size_bucket(0) == 0 && wagg_size_bucket(16383) == 16383, "exact below");
    CHECK(wagg_bucket_width(16383) == 1, "width 1 below");
    CHECK(wagg_size_bucket(16384) == 16384 && wagg_bucket_width(16384) == 128, "16 KB");
    CHECK(wagg_size_bucket(16384 + 127) == 16384 && wagg_size_bucket(16384 + 128) == 16512,
          "16 KB + 128");
    CHECK(wagg_size_bucket(32767) == 32768 - 128, "top of the first octave");
    CHECK(wagg_size_bucket(32768) == 32768 && wagg_bucket_width(32768) == 256, "32 KB");
    CHECK(wagg_bucket_width(1048576) == 8192, "1 MB: 8 KB wide");
    /* every body in its bucket, every bucket at most 1/128 of its size */
    for (int64_t b = 16000; b < 3000000; b += 997) {
        int64_t lo = wagg_size_bucket(b), w = wagg_bucket_width(lo);
        CHECK(lo <= b && b < lo + w, "%lld in [%lld, +%lld)", (long long)b, (long long)lo,
              (long long)w);
        CHECK(w == 1 || w * 128 <= lo, "%lld: width %lld", (long long)lo, (long long)w);
        CHECK(wagg_size_bucket(lo) == lo && wagg_size_bucket(lo + w - 1) == lo, "bucket %lld",
              (long long)lo);
    }
    /* at most a few thousand distinct buckets up to memcached's 1 GB cap */
    int64_t n = 0;
    for (int64_t b = 16384; b < ((int64_t)1 << 30); b += wagg_bucket_width(b))
        n++;
    CHECK(n == 16 * 128, "%lld buckets from 16 KB to 1 GB", (long long)n);
    int64_t bucket;
    uint32_t cls;
    enum wagg_outcome o;
    wagg_item_unkey(wagg_item_key(123456, 42, WAGG_REFUSED), &bucket, &cls, &o);
    CHECK(bucket == 123456 && cls == 42 && o == WAGG_REFUSED, "item key round trip");
}

static void test_outcomes(void)
{
    static const struct {
        const char *answer;
        enum wagg_outcome o;
    } cases[] = {
        { "STORED", WAGG_STORED },
        { "HD", WAGG_STORED },
        { "HD c1234", WAGG_STORED },
        { "noreply", WAGG_STORED },
        { "quiet", WAGG_STORED },
        { "NOT_STORED", WAGG_REFUSED },
        { "EXISTS", WAGG_REFUSED },
        { "NOT_FOUND", WAGG_REFUSED },
        { "NS", WAGG_REFUSED },
        { "EX", WAGG_REFUSED },
        { "NF", WAGG_REFUSED },
        { "CLIENT_ERROR bad data chunk", WAGG_REFUSED },
        { "SERVER_ERROR object too large for cache", WAGG_OTHER },
        { "SERVER_ERROR out of memory storing object", WAGG_OTHER },
        { "upstream_error", WAGG_OTHER },
        { "no_answer", WAGG_OTHER },
        { "HDX", WAGG_OTHER },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rec_row r = row(MC_CMD_SET, 0, 0, 3, 10, 0, 0);
        snprintf(r.answer, sizeof r.answer, "%s", cases[i].answer);
        CHECK(wagg_outcome_of(&r) == cases[i].o, "'%s' -> %d", cases[i].answer,
              (int)wagg_outcome_of(&r));
    }
}

static void test_histograms(void)
{
    struct wagg g;
    CHECK(wagg_init(&g) == 0, "init");
    const int64_t m = 60000000000ll;
    struct rec_row a = row(MC_CMD_SET, 0, 7 * m, 10, 100, 0, 1000);     /* body 110 */
    struct rec_row big = row(MC_CMD_SET, 0, 7 * m, 10, 40000, 1, 1000); /* 40014 */
    struct rec_row no = row(MC_CMD_ADD, 0, 7 * m, 10, 100, 0, 1000);
    struct rec_row d = row(MC_CMD_DELETE, 0, 7 * m, 10, -1, 0, 1000);
    a.class_id = 5;
    big.class_id = 30;
    no.class_id = 5;
    snprintf(a.answer, sizeof a.answer, "STORED");
    snprintf(big.answer, sizeof big.answer, "STORED");
    snprintf(no.answer, sizeof no.answer, "NOT_STORED");
    snprintf(d.answer, sizeof d.answer, "DELETED");
    wagg_note(&g, &a, 3, 1, 1);
    wagg_note(&g, &a, 3, 1, 1);
    wagg_note(&g, &big, 3, 1, 1);
    wagg_note(&g, &no, 3, 2, 5);
    wagg_note(&g, &d, 3, 13, 8);
    wagg_batch_done(&g, true);
    const struct wagg_ent *e = find(&g, WAGG_ITEM, 7, wagg_item_key(110, 5, WAGG_STORED));
    CHECK(e && e->n == 2 && e->bytes == 220, "two stored items of body 110 in class 5");
    e = find(&g, WAGG_ITEM, 7, wagg_item_key(110, 5, WAGG_REFUSED));
    CHECK(e && e->n == 1 && e->bytes == 110, "the refused add");
    e = find(&g, WAGG_ITEM, 7, wagg_item_key(wagg_size_bucket(40014), 30, WAGG_STORED));
    CHECK(e && e->n == 1 && e->bytes == 40014 && wagg_size_bucket(40014) == 39936,
          "the large one in its bucket with its exact body");
    e = find(&g, WAGG_ANSWER, 7, 1 | 1 << 8);
    CHECK(e && e->n == 3 && e->bytes == 40200, "set STORED: 3 writes");
    e = find(&g, WAGG_ANSWER, 7, 13 | 8 << 8);
    CHECK(e && e->n == 1, "delete DELETED");
    e = find(&g, WAGG_PREFIX_CLASS, 7, 3 | (int64_t)5 << 40);
    CHECK(e && e->n == 2 && e->bytes == 220, "prefix 3 class 5: the stored ones only");
    e = find(&g, WAGG_PREFIX_CLASS, 7, 3 | (int64_t)30 << 40);
    CHECK(e && e->n == 1, "prefix 3 class 30");
    /* each entry as its table's row: the columns after run_id */
    static const struct {
        enum wagg_kind kind;
        int64_t t, k;
        size_t n;
        int64_t cols[WAGG_COLS];
    } rows[] = {
        { WAGG_ITEM, 7, 0, 6, { 7, 30, 39936, WAGG_STORED, 1, 40014 } },
        { WAGG_ANSWER, 7, 13 | 8 << 8, 5, { 7, 13, 8, 1, 0 } },
        { WAGG_PREFIX_CLASS, 7, 3 | (int64_t)5 << 40, 5, { 7, 3, 5, 2, 220 } },
        { WAGG_SIZE, 7, 110, 4, { 7, 110, 3, 300 } },
        { WAGG_PREFIX, 7, 3, 4, { 7, 3, 5, 40300 } },
        { WAGG_LATENCY, 7 * 60, 1, 3, { 7 * 60, 1, 5 } },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int64_t cols[WAGG_COLS] = { 0 };
        e = find(&g, rows[i].kind, rows[i].t,
                 rows[i].kind == WAGG_ITEM ? wagg_item_key(39936, 30, WAGG_STORED) : rows[i].k);
        size_t n = e ? wagg_row(e, cols) : 0;
        CHECK(n == rows[i].n && !memcmp(cols, rows[i].cols, n * sizeof cols[0]),
              "row of kind %d: %zu columns %lld %lld %lld %lld %lld %lld", (int)rows[i].kind, n,
              (long long)cols[0], (long long)cols[1], (long long)cols[2], (long long)cols[3],
              (long long)cols[4], (long long)cols[5]);
    }
    wagg_free(&g);
}

static void test_scale(void)
{
    int64_t in[] = { 10, 0, 5, 5, 1 };
    uint64_t out[5];
    wagg_scale_counts(in, 5, 21, out);
    CHECK(out[0] == 10 && out[1] == 0 && out[2] == 5 && out[3] == 5 && out[4] == 1, "identity");
    wagg_scale_counts(in, 5, 10, out);
    uint64_t sum = out[0] + out[1] + out[2] + out[3] + out[4];
    CHECK(sum == 10 && out[1] == 0, "sums to the target: %llu", (unsigned long long)sum);
    /* 10 * 10/21 = 4.76 -> 5; 5 * 10/21 = 2.38 -> 2 twice; 1 -> 0.48 -> 1 */
    CHECK(out[0] == 5 && out[2] == 2 && out[3] == 2 && out[4] == 1,
          "largest remainders: %llu %llu %llu %llu", (unsigned long long)out[0],
          (unsigned long long)out[2], (unsigned long long)out[3], (unsigned long long)out[4]);
    wagg_scale_counts(in, 5, 0, out);
    CHECK(!out[0] && !out[2], "target 0");
    int64_t zero[] = { 0, 0 };
    wagg_scale_counts(zero, 2, 5, out);
    CHECK(!out[0] && !out[1], "nothing to scale");
}

struct spread_sink {
    struct advise_hist *h;
    int64_t lo, hi;
    uint64_t n, sum;
    bool cas;
};

static int spread_add(void *ctx, int64_t body, uint64_t n)
{
    struct spread_sink *s = ctx;
    if (body < s->lo || body > s->hi)
        s->lo = -1; /* out of its bucket */
    s->n += n;
    s->sum += (uint64_t)body * n;
    return s->h ? advise_hist_add(s->h, (uint64_t)(51 + (s->cas ? 8 : 0) + body), n) : 0;
}

static void test_spread(void)
{
    /* 100 items of one bucket whose bodies average near its top */
    struct wagg_cell c = { 7, 65536, 100, 100 * (65536 + 500) };
    struct spread_sink s = { NULL, 65536, 65536 + 511, 0, 0, true };
    CHECK(wagg_bucket_width(65536) == 512, "64 KB buckets are 512 wide");
    CHECK(wagg_cell_spread(&c, 100, spread_add, &s) == 0, "spread");
    CHECK(s.lo == 65536 && s.n == 100, "100 items in the bucket");
    double mean = (double)s.sum / 100;
    CHECK(mean > 65536 + 499.5 && mean < 65536 + 500.5, "mean %.1f: the cell's", mean);
    /* an exact size: one size, the count */
    struct wagg_cell e = { 3, 1000, 4, 4000 };
    struct spread_sink t = { NULL, 1000, 1000, 0, 0, true };
    CHECK(wagg_cell_spread(&e, 9, spread_add, &t) == 0 && t.lo == 1000 && t.n == 9 && t.sum == 9000,
          "exact bucket");
}

/* Re-binning: items bucketed and spread give every candidate ladder the
 * waste the exact sizes give, within the buckets' width. */
static void test_rebin(void)
{
    struct advise_hist exact, binned;
    static struct wagg_cell cells[4096];
    size_t nc = 0;
    uint64_t x = 88172645463325252ull;
    advise_hist_init(&exact);
    advise_hist_init(&binned);
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        int64_t body = 100 + (int64_t)(x % 400000); /* 100 B .. 400 KB */
        advise_hist_add(&exact, (uint64_t)(59 + body), 1);
        int64_t b = wagg_size_bucket(body);
        struct wagg_cell *cell = &cells[b / 128]; /* buckets are at least 128 apart */
        cell->bucket = b;
        cell->writes++;
        cell->body_bytes += body;
    }
    for (size_t j = 0; j < sizeof cells / sizeof cells[0]; j++)
        if (cells[j].writes)
            cells[nc++] = cells[j];
    for (size_t j = 0; j < nc; j++) {
        struct spread_sink s = { &binned,
                                 cells[j].bucket,
                                 cells[j].bucket + wagg_bucket_width(cells[j].bucket) - 1,
                                 0,
                                 0,
                                 true };
        CHECK(wagg_cell_spread(&cells[j], (uint64_t)cells[j].writes, spread_add, &s) == 0 &&
                  s.lo == cells[j].bucket,
              "cell %zu", j);
    }
    advise_hist_sort(&exact);
    advise_hist_sort(&binned);
    static const double factors[] = { 1.25, 1.08, 1.5, 2.0 };
    for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++) {
        struct slab_settings st;
        struct slab_ladder l;
        struct advise_eval a, b;
        slab_settings_default(&st);
        st.growth_factor = factors[f];
        CHECK(slab_ladder_build(&st, &l, NULL, 0) == SLAB_OK, "ladder -f %.2f", factors[f]);
        advise_evaluate(&l, &exact, &a);
        advise_evaluate(&l, &binned, &b);
        double req = 100.0 * ((double)b.requested - (double)a.requested) / (double)a.requested;
        double alloc = 100.0 * ((double)b.allocated - (double)a.allocated) / (double)a.allocated;
        CHECK(a.items == b.items, "-f %.2f: items", factors[f]);
        CHECK(req > -0.01 && req < 0.01, "-f %.2f: requested off by %.4f %%", factors[f], req);
        CHECK(alloc > -0.5 && alloc < 0.5, "-f %.2f: allocated off by %.4f %%", factors[f], alloc);
        CHECK(b.waste_pct - a.waste_pct < 0.5 && a.waste_pct - b.waste_pct < 0.5,
              "-f %.2f: waste %.3f %% vs %.3f %%", factors[f], b.waste_pct, a.waste_pct);
    }
    advise_hist_free(&exact);
    advise_hist_free(&binned);
}

int main(void)
{
    test_bands();
    test_buckets();
    test_outcomes();
    test_histograms();
    test_scale();
    test_spread();
    test_rebin();
    test_stores();
    test_generations();
    test_full_table();
    return check_done("wagg");
}
