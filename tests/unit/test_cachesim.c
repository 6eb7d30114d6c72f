/* test_cachesim: the request-by-request cache simulator (model/capacity.h
 * capacity_run) on small sequences whose outcome was MEASURED on a real
 * memcached 1.6.18 (Debian's, x86-64): each case below was sent on one
 * connection, one request at a time, to a memcached started with the
 * flags in its comment, its t honoured (the client slept until t seconds
 * after memcached started), and `stats` / `stats slabs` read after; the
 * numbers in the table are memcached's, and "gets" is the hit (H) or miss
 * (M) of each get and gat in order. Keys are 8 bytes, no client flags,
 * CAS on; 1000-byte values take the 1184-byte class 12, 885 a page.
 *
 * Also: capacity_hit_ratio over a measured window, capacity_mrc, the
 * SHARDS refusal, capacity_kind_str/parse, argument checks, and
 * slab_automove=2 moving a page on eviction.
 * Prints every failing case; exits 1 if any. */
#include <stdio.h>
#include <string.h>

#include "model/capacity.h"
#include "model/slab_model.h"

#include "check.h"

#define MB (1024ull * 1024ull)
#define PLAIN CAPACITY_LRU_PLAIN
#define SEGMENTED CAPACITY_LRU_SEGMENTED

/* keys [from, to) with one request each */
struct span {
    uint32_t t;
    enum capacity_kind kind;
    uint32_t from, to;
    uint32_t vlen;
    int32_t exptime;
    uint8_t fill;
};

struct want {
    uint64_t hits, misses, expired, evictions, reclaimed, items, malloced, touches, touch_hits,
        fills;
    const char *gets; /* per get/gat: H or M; NULL: not checked */
};

struct tcase {
    const char *name;
    uint64_t mem_mb;
    enum capacity_lru lru;
    struct span ops[16];
    struct want w;
};

#define END \
    { \
        0, CAPACITY_KIND_COUNT, 0, 0, 0, 0, 0 \
    }

static const struct tcase cases[] = {
    /* -m 2 -o no_lru_maintainer,no_lru_crawler,slab_automove=0: 2,000 sets
     * into 2 pages (1,770 held), keys 0..229 evicted first in, first out */
    { "plain hits/misses/evictions",
      2,
      PLAIN,
      { { 0, CAPACITY_SET, 0, 2000, 1000, 0, 0 }, { 0, CAPACITY_GET, 0, 300, 1000, 0, 0 }, END },
      { 70, 230, 0, 230, 0, 1770, 2 * MB, 0, 0, 0, NULL } },
    /* -m 2 -o slab_automove=0 (segmented): a page's worth fills COLD; key 0
     * fetched twice goes COLD -> WARM (ACTIVE) and survives the 100
     * evictions that take keys 1..100 */
    { "segmented second fetch to WARM",
      2,
      SEGMENTED,
      { { 0, CAPACITY_SET, 0, 1770, 1000, 0, 0 },
        { 0, CAPACITY_GET, 0, 1, 1000, 0, 0 },
        { 0, CAPACITY_GET, 0, 1, 1000, 0, 0 },
        { 0, CAPACITY_SET, 1770, 1870, 1000, 0, 0 },
        { 0, CAPACITY_GET, 0, 1, 1000, 0, 0 },
        { 0, CAPACITY_GET, 1, 2, 1000, 0, 0 },
        { 0, CAPACITY_GET, 100, 101, 1000, 0, 0 },
        { 0, CAPACITY_GET, 101, 102, 1000, 0, 0 },
        END },
      { 4, 2, 0, 100, 0, 1770, 2 * MB, 0, 0, 0, "HHHMMH" } },
    /* the same on the plain LRU (-o no_lru_maintainer,no_lru_crawler,
     * slab_automove=0): fetches within 60 s do not bump, key 0 goes */
    { "plain no bump within 60 s",
      2,
      PLAIN,
      { { 0, CAPACITY_SET, 0, 1770, 1000, 0, 0 },
        { 0, CAPACITY_GET, 0, 1, 1000, 0, 0 },
        { 0, CAPACITY_GET, 0, 1, 1000, 0, 0 },
        { 0, CAPACITY_SET, 1770, 1870, 1000, 0, 0 },
        { 0, CAPACITY_GET, 0, 1, 1000, 0, 0 },
        { 0, CAPACITY_GET, 1, 2, 1000, 0, 0 },
        { 0, CAPACITY_GET, 100, 101, 1000, 0, 0 },
        { 0, CAPACITY_GET, 101, 102, 1000, 0, 0 },
        END },
      { 4, 2, 0, 100, 0, 1770, 2 * MB, 0, 0, 0, "HHMMHH" } },
    /* -m 2 plain: the fetch at 30 s does not bump key 0, the one at 63 s
     * bumps key 1 (time < now - 60); two sets evict keys 0 and 2 */
    { "plain bump throttle",
      2,
      PLAIN,
      { { 0, CAPACITY_SET, 0, 1770, 1000, 0, 0 },
        { 30, CAPACITY_GET, 0, 1, 1000, 0, 0 },
        { 63, CAPACITY_GET, 1, 2, 1000, 0, 0 },
        { 63, CAPACITY_SET, 1770, 1772, 1000, 0, 0 },
        { 63, CAPACITY_GET, 0, 4, 1000, 0, 0 },
        END },
      { 4, 2, 0, 2, 0, 1770, 2 * MB, 0, 0, 0, "HHMHMH" } },
    /* -m 64 plain: key 1 exptime 2, key 2 exptime -1 (expired at once),
     * key 3 none; reads at 0, 1 and 4 s: two lazy expiries */
    { "expiry",
      64,
      PLAIN,
      { { 0, CAPACITY_SET, 1, 2, 100, 2, 0 },
        { 0, CAPACITY_SET, 2, 3, 100, -1, 0 },
        { 0, CAPACITY_SET, 3, 4, 100, 0, 0 },
        { 0, CAPACITY_GET, 2, 3, 100, 0, 0 },
        { 1, CAPACITY_GET, 1, 2, 100, 0, 0 },
        { 4, CAPACITY_GET, 1, 2, 100, 0, 0 },
        { 4, CAPACITY_GET, 3, 4, 100, 0, 0 },
        END },
      { 2, 2, 2, 0, 0, 1, 1 * MB, 0, 0, 0, "MHMH" } },
    /* -m 64 plain: touch at 1 s moves key 1's expiry from 2 to 11 s; a
     * touch of a missing key */
    { "touch",
      64,
      PLAIN,
      { { 0, CAPACITY_SET, 1, 2, 100, 2, 0 },
        { 1, CAPACITY_TOUCH, 1, 2, 0, 10, 0 },
        { 1, CAPACITY_TOUCH, 9, 10, 0, 10, 0 },
        { 4, CAPACITY_GET, 1, 2, 100, 0, 0 },
        END },
      { 1, 0, 0, 0, 0, 1, 1 * MB, 2, 1, 0, "H" } },
    /* -m 64 plain: gat 10 at 1 s; a gat of a missing key; memcached counts
     * gat in cmd_touch/touch_hits, not get_hits */
    { "gat",
      64,
      PLAIN,
      { { 0, CAPACITY_SET, 1, 2, 100, 2, 0 },
        { 1, CAPACITY_GAT, 1, 2, 100, 10, 0 },
        { 4, CAPACITY_GET, 1, 2, 100, 0, 0 },
        { 4, CAPACITY_GAT, 9, 10, 100, 0, 0 },
        END },
      { 1, 0, 0, 0, 0, 1, 1 * MB, 2, 1, 0, "HHM" } },
    /* -m 64 (defaults): get-or-set on keys 1 2 1 3 2 1, then gat-or-set
     * of key 4 and a get of it: four fills (memcached's cmd_set) */
    { "demand-fill",
      64,
      SEGMENTED,
      { { 0, CAPACITY_GET, 1, 3, 300, 0, 1 },
        { 0, CAPACITY_GET, 1, 2, 300, 0, 1 },
        { 0, CAPACITY_GET, 3, 4, 300, 0, 1 },
        { 0, CAPACITY_GET, 2, 3, 300, 0, 1 },
        { 0, CAPACITY_GET, 1, 2, 300, 0, 1 },
        { 0, CAPACITY_GAT, 4, 5, 300, 0, 1 },
        { 0, CAPACITY_GET, 4, 5, 300, 0, 1 },
        END },
      { 4, 3, 0, 0, 0, 4, 1 * MB, 1, 0, 4, "MMHMHHMH" } },
    /* -m 2 plain: 3,000 1000-byte sets (2 pages), then 10 10-byte sets:
     * class 1's first page past -m (total_malloced 3 MiB) */
    { "first page past -m",
      2,
      PLAIN,
      { { 0, CAPACITY_SET, 0, 3000, 1000, 0, 0 },
        { 0, CAPACITY_SET, 5000, 5010, 10, 0, 0 },
        { 0, CAPACITY_GET, 0, 1, 0, 0, 0 },
        { 0, CAPACITY_GET, 2999, 3000, 0, 0, 0 },
        { 0, CAPACITY_GET, 5000, 5001, 0, 0, 0 },
        END },
      { 2, 1, 0, 1230, 0, 1780, 3 * MB, 0, 0, 0, "MHH" } },
    /* -m 2 plain: keys 0..9 stored already expired (-1) at the tail; 10
     * more sets reclaim them (5 per pull), nothing evicted */
    { "tail reclaim",
      2,
      PLAIN,
      { { 0, CAPACITY_SET, 0, 10, 1000, -1, 0 }, { 0, CAPACITY_SET, 10, 1780, 1000, 0, 0 }, END },
      { 0, 0, 0, 0, 10, 1770, 2 * MB, 0, 0, 0, "" } },
};

static void build(const struct tcase *c, struct capacity_seq *s)
{
    capacity_seq_init(s);
    for (const struct span *p = c->ops; p->kind != CAPACITY_KIND_COUNT; p++)
        for (uint32_t k = p->from; k < p->to; k++) {
            struct capacity_req r = { .kind = p->kind,
                                      .key_len = 8,
                                      .value_len = p->vlen,
                                      .t = p->t,
                                      .exptime = p->exptime,
                                      .fill = p->fill };
            CHECK(capacity_seq_add_req(s, k + 1, &r) == 0, "%s: add", c->name);
        }
}

static struct slab_ladder ladder_default(void)
{
    struct slab_settings s;
    struct slab_ladder l;
    slab_settings_default(&s);
    if (slab_ladder_build(&s, &l, NULL, 0) != SLAB_OK)
        memset(&l, 0, sizeof l);
    return l;
}

static void test_measured(void)
{
    struct slab_ladder l = ladder_default();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct tcase *c = &cases[i];
        struct capacity_seq s;
        struct capacity_result r;
        struct capacity_config cfg;
        build(c, &s);
        capacity_config_default(&cfg, c->mem_mb * MB);
        cfg.lru = c->lru;
        cfg.automove = 0;
        CHECK(capacity_run(&l, &cfg, &s, 0, s.n, &r) == 0, "%s: run", c->name);
        const struct want *w = &c->w;
#define FIELD(f) \
    CHECK(r.f == w->f, "%s: " #f " %llu, memcached %llu", c->name, (unsigned long long)r.f, \
          (unsigned long long)w->f)
        FIELD(hits);
        FIELD(misses);
        FIELD(expired);
        FIELD(evictions);
        FIELD(reclaimed);
        FIELD(items);
        FIELD(malloced);
        FIELD(touches);
        FIELD(touch_hits);
        FIELD(fills);
#undef FIELD
        CHECK(r.requested + r.chunk_waste + r.page_slack == r.malloced, "%s: parts", c->name);
        if (w->gets) {
            /* each read's outcome: the hit counters of the prefix up to it */
            char got[512] = "";
            size_t n = 0;
            struct capacity_result a, b;
            for (size_t j = 0; j < s.n && n + 1 < sizeof got; j++) {
                enum capacity_kind k = (enum capacity_kind)s.ops[j].kind;
                if (k != CAPACITY_GET && k != CAPACITY_GAT)
                    continue;
                capacity_run(&l, &cfg, &s, 0, j, &a);
                capacity_run(&l, &cfg, &s, 0, j + 1, &b);
                got[n++] = b.measured_hits > a.measured_hits ? 'H' : 'M';
                got[n] = '\0';
            }
            CHECK(!strcmp(got, w->gets), "%s: gets %s, memcached %s", c->name, got, w->gets);
        }
        capacity_seq_free(&s);
    }
}

/* hit ratio over a measured window; capacity_mrc; write-only == simulate */
static void test_window_and_mrc(void)
{
    struct slab_ladder l = ladder_default();
    struct capacity_seq s;
    capacity_seq_init(&s);
    /* 3,000 keys of 1000 bytes read-or-filled twice in a row: the first
     * pass all misses (warm-up), the second hits what memory holds */
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t k = 0; k < 3000; k++) {
            struct capacity_req r = {
                .kind = CAPACITY_GET, .key_len = 8, .value_len = 1000, .fill = 1
            };
            CHECK_INT(capacity_seq_add_req(&s, k + 1, &r), 0);
        }
    struct capacity_config cfg;
    capacity_config_default(&cfg, 0);
    cfg.measure_from = 3000;
    struct capacity_result r;
    CHECK_INT(capacity_run(&l, &cfg, &s, 0, s.n, &r), 0);
    CHECK_INT(r.gets, 6000);
    CHECK_INT(r.misses, 3000);
    CHECK_INT(r.fills, 3000);
    CHECK_INT(r.measured_gets, 3000);
    CHECK_INT(r.measured_hits, 3000);
    CHECK(capacity_hit_ratio(&r) == 1.0, "unlimited: ratio 1");
    /* 2 MiB hold 1,770; a scan of 3,000 in order through FIFO-like
     * eviction hits nothing; 4 MiB hold all 3,000 */
    uint64_t sizes[3] = { 2 * MB, 3 * MB, 4 * MB };
    struct capacity_result mrc[3];
    CHECK_INT(capacity_mrc(&l, &cfg, &s, 0, s.n, sizes, 3, mrc), 0);
    CHECK_INT(mrc[0].measured_hits, 0);
    CHECK_INT(mrc[0].items, 1770);
    CHECK_INT(mrc[2].measured_hits, 3000);
    CHECK(capacity_hit_ratio(&mrc[0]) <= capacity_hit_ratio(&mrc[1]) &&
              capacity_hit_ratio(&mrc[1]) <= capacity_hit_ratio(&mrc[2]),
          "the curve does not fall with memory");
    struct capacity_result empty = { 0 };
    CHECK(capacity_hit_ratio(&empty) == 0.0, "nothing measured: 0");
    capacity_seq_free(&s);
}

static void test_shards_and_args(void)
{
    struct slab_ladder l = ladder_default();
    struct capacity_seq s;
    capacity_seq_init(&s);
    struct capacity_req r = { .kind = CAPACITY_SET, .key_len = 8, .value_len = 1000 };
    for (uint32_t k = 0; k < 100; k++)
        CHECK_INT(capacity_seq_add_req(&s, k + 1, &r), 0);
    r.value_len = 10;
    CHECK_INT(capacity_seq_add_req(&s, 5000, &r), 0); /* a second class */
    struct capacity_config cfg;
    capacity_config_default(&cfg, 64 * MB);
    struct capacity_result out;
    uint32_t classes = 0;
    /* 64 MiB / 8 = 8 pages for 2 classes: run */
    CHECK_INT(capacity_shards_run(&l, &cfg, 8, &s, 0, s.n, &classes, &out), CAPACITY_SHARDS_OK);
    CHECK_INT(classes, 2);
    CHECK_INT(out.mem_limit, 8 * MB);
    /* 64 MiB / 32 = 2 pages for 2 classes: fewer than 2 a class, refused */
    CHECK_INT(capacity_shards_run(&l, &cfg, 32, &s, 0, s.n, &classes, &out),
              CAPACITY_SHARDS_TOO_SMALL);
    CHECK_INT(capacity_shards_run(&l, &cfg, 0, &s, 0, s.n, NULL, &out), CAPACITY_SHARDS_ERROR);
    /* argument checks */
    struct capacity_req bad = { .kind = CAPACITY_SET, .key_len = 8, .value_len = 10, .fill = 1 };
    CHECK_INT(capacity_seq_add_req(&s, 1, &bad), -1); /* fill on a set */
    bad.fill = 0;
    bad.key_len = 251;
    CHECK_INT(capacity_seq_add_req(&s, 1, &bad), -1);
    bad.key_len = 8;
    bad.kind = CAPACITY_KIND_COUNT;
    CHECK_INT(capacity_seq_add_req(&s, 1, &bad), -1);
    CHECK_INT(capacity_seq_add(&s, 1, CAPACITY_GET, 8, 0, 10), -1); /* writes only */
    cfg.automove = 3;
    CHECK_INT(capacity_run(&l, &cfg, &s, 0, s.n, &out), -1);
    /* the kinds' text */
    enum capacity_kind k;
    CHECK_STR(capacity_kind_str(CAPACITY_GAT), "gat");
    CHECK_STR(capacity_kind_str(CAPACITY_OTHER), "other");
    CHECK_INT(CAPACITY_OTHER, 6);
    CHECK_INT(capacity_kind_parse("touch", &k), 0);
    CHECK_INT(k, CAPACITY_TOUCH);
    CHECK_INT(capacity_kind_parse("nope", &k), -1);
    capacity_seq_free(&s);
}

/* slab_automove=2: a class that evicts takes a page from another class
 * with 2 or more; those pages' items go (no free chunks to rescue into) */
static void test_automove2(void)
{
    struct slab_ladder l = ladder_default();
    struct capacity_seq s;
    capacity_seq_init(&s);
    struct capacity_req r = { .kind = CAPACITY_SET, .key_len = 8, .value_len = 1000 };
    for (uint32_t k = 0; k < 885 * 4; k++) /* 4 pages of class 12 */
        CHECK_INT(capacity_seq_add_req(&s, k + 1, &r), 0);
    r.value_len = 3000; /* class 17 */
    for (uint32_t k = 0; k < 2000; k++)
        CHECK_INT(capacity_seq_add_req(&s, 100000 + k, &r), 0);
    struct capacity_config cfg;
    capacity_config_default(&cfg, 5 * MB);
    cfg.automove = 0;
    struct capacity_result a0, a2;
    CHECK_INT(capacity_run(&l, &cfg, &s, 0, s.n, &a0), 0);
    cfg.automove = 2;
    CHECK_INT(capacity_run(&l, &cfg, &s, 0, s.n, &a2), 0);
    uint32_t big = slab_ladder_class_for(&l, slab_item_ntotal(true, 8, 0, 3000));
    CHECK_INT(a0.cls[big].pages, 1);
    CHECK_INT(a0.moves, 0);
    CHECK(a2.moves >= 2, "automove=2 moved %llu pages", (unsigned long long)a2.moves);
    CHECK_INT(a2.cls[12].pages, 1); /* every class keeps one page */
    CHECK_INT(a2.cls[big].pages, 4);
    CHECK(a2.cls[big].evictions < a0.cls[big].evictions, "fewer evictions in the big class");
    CHECK_INT(a2.move_evictions, 3 * 885);
    CHECK_INT(a2.malloced, a0.malloced);
    /* moved at once (no rebalancer time): the same pages, and a move is
     * asked by the very first eviction in the big class */
    struct capacity_result now;
    cfg.move_busy_reqs = 0;
    CHECK_INT(capacity_run(&l, &cfg, &s, 0, s.n, &now), 0);
    CHECK_INT(now.cls[big].pages, 4);
    CHECK_INT(now.moves, 3);
    CHECK(now.cls[big].evictions <= a2.cls[big].evictions, "a deferred move evicts more");
    capacity_seq_free(&s);
}

/* slab_automove=2 moves the source's slab_list[0] (slabs.c
 * slab_rebalance_start), whatever the LRU order: its items go, even the
 * ones fetched since (WARM), and the second page's stay. */
static void test_automove2_oldest_page(void)
{
    struct slab_ladder l = ladder_default();
    struct capacity_seq s;
    capacity_seq_init(&s);
    struct capacity_req r = { .kind = CAPACITY_SET, .key_len = 8, .value_len = 1000 };
    for (uint32_t k = 0; k < 885 * 2; k++) /* 2 pages of class 12: keys 0..884 in the first */
        CHECK_INT(capacity_seq_add_req(&s, k + 1, &r), 0);
    r.kind = CAPACITY_GET;
    for (int round = 0; round < 2; round++) /* the first page's items: ACTIVE, to WARM */
        for (uint32_t k = 0; k < 885; k++)
            CHECK_INT(capacity_seq_add_req(&s, k + 1, &r), 0);
    r.kind = CAPACITY_SET;
    r.value_len = 3000; /* class 17: its page fills, then it evicts */
    for (uint32_t k = 0; k < 400; k++)
        CHECK_INT(capacity_seq_add_req(&s, 100000 + k, &r), 0);
    size_t from = s.n;
    r.kind = CAPACITY_GET;
    r.value_len = 1000;
    for (uint32_t k = 0; k < 885 * 2; k++)
        CHECK_INT(capacity_seq_add_req(&s, k + 1, &r), 0);
    struct capacity_config cfg;
    capacity_config_default(&cfg, 3 * MB);
    cfg.automove = 2;
    cfg.move_busy_reqs = 0;
    cfg.measure_from = from;
    struct capacity_result a;
    CHECK_INT(capacity_run(&l, &cfg, &s, 0, s.n, &a), 0);
    CHECK_INT(a.moves, 1);
    CHECK_INT(a.cls[12].pages, 1);
    CHECK_INT(a.move_evictions, 885);
    CHECK_INT(a.move_rescues, 0);
    CHECK_INT(a.measured_hits, 885); /* the second page's keys only */
    CHECK_INT(a.cls[12].items, 885);
    capacity_seq_free(&s);
}

int main(void)
{
    test_measured();
    test_window_and_mrc();
    test_shards_and_args();
    test_automove2();
    test_automove2_oldest_page();
    return check_done("test_cachesim");
}
