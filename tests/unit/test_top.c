/* test_top: `slabtap top`'s pure parts on fixed input -- snapshots from a
 * memcached stats reply and from /api/slabs JSON, rows byte for byte, rates
 * from two snapshots, every sort key both ways, what the keys do (r
 * reverses the current sort only), width and height cuts, a
 * class with 0 pages, a memcached with no classes yet, and the HTTP
 * response parser of top_fetch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cli/top_fetch.h"
#include "cli/top_view.h"

/* memcached 1.6's answers to `stats`, `stats slabs`, `stats items` with
 * four classes: 1 (a page, nothing in it: absent from `stats items`),
 * 5, 8 (full) and 12. %s are the counters that move between samples. */
static const char stats_fmt[] = "STAT pid 1\r\n"
                                "STAT uptime %d\r\n"
                                "STAT version 1.6.18\r\n"
                                "STAT curr_items 7368\r\n"
                                "STAT bytes 3890000\r\n"
                                "STAT get_hits %d\r\n"
                                "STAT get_misses 100\r\n"
                                "STAT cmd_get %d\r\n"
                                "STAT cmd_set %d\r\n"
                                "STAT cmd_touch 0\r\n"
                                "STAT delete_hits 10\r\n"
                                "STAT delete_misses 0\r\n"
                                "STAT evictions %d\r\n"
                                "STAT limit_maxbytes 67108864\r\n"
                                "END\r\n"
                                "STAT items:5:number 1000\r\n"
                                "STAT items:5:mem_requested 200000\r\n"
                                "STAT items:5:evicted 0\r\n"
                                "STAT items:8:number 4368\r\n"
                                "STAT items:8:mem_requested 1800000\r\n"
                                "STAT items:8:evicted %d\r\n"
                                "STAT items:12:number 2000\r\n"
                                "STAT items:12:mem_requested 1890000\r\n"
                                "STAT items:12:evicted %d\r\n"
                                "END\r\n"
                                "STAT 1:chunk_size 96\r\n"
                                "STAT 1:chunks_per_page 10922\r\n"
                                "STAT 1:total_pages 1\r\n"
                                "STAT 1:total_chunks 10922\r\n"
                                "STAT 1:used_chunks 0\r\n"
                                "STAT 1:cmd_set 0\r\n"
                                "STAT 5:chunk_size 240\r\n"
                                "STAT 5:total_pages 1\r\n"
                                "STAT 5:total_chunks 4369\r\n"
                                "STAT 5:used_chunks 1000\r\n"
                                "STAT 5:cmd_set %d\r\n"
                                "STAT 8:chunk_size 480\r\n"
                                "STAT 8:total_pages 2\r\n"
                                "STAT 8:total_chunks 4368\r\n"
                                "STAT 8:used_chunks 4368\r\n"
                                "STAT 8:cmd_set %d\r\n"
                                "STAT 12:chunk_size 1184\r\n"
                                "STAT 12:total_pages 3\r\n"
                                "STAT 12:total_chunks 2655\r\n"
                                "STAT 12:used_chunks 2000\r\n"
                                "STAT 12:cmd_set %d\r\n"
                                "STAT active_slabs 4\r\n"
                                "STAT total_malloced 7340032\r\n"
                                "END\r\n";

struct counters {
    int uptime, get_hits, cmd_get, cmd_set, evictions, set5, set8, set12, ev8, ev12;
};

static const struct counters first = { 93784, 900, 1000, 13500, 105, 1000, 10000, 2500, 100, 5 };
/* 2 s later: 400 gets all hits, 100 + 200 + 300 sets, 200 + 20 evictions */
static const struct counters second = { 93786, 1300, 1400, 14100, 325, 1100, 10200, 2800, 300, 25 };

static struct stats_sample sample;

static void snap_from(struct top_snapshot *s, const struct counters *c, uint64_t t_ns)
{
    static char text[8192];
    struct stats_parse_batch b;
    size_t used = 0;
    int n = snprintf(text, sizeof text, stats_fmt, c->uptime, c->get_hits, c->cmd_get, c->cmd_set,
                     c->evictions, c->ev8, c->ev12, c->set5, c->set8, c->set12);
    stats_parse_batch_begin(&b, &sample, STATS_R_REQUIRED);
    CHECK_INT(stats_parse_batch_feed(&b, text, (size_t)n, &used), STATS_PARSE_OK);
    top_snapshot_from_sample(s, &sample, t_ns, "127.0.0.1:11211");
}

static struct top_snapshot s1, s2, sj, sk;
static char out[TOP_VIEW_RENDER_MAX];

#define CHECK_RENDER(cur, prev, opts, want) \
    do { \
        size_t n_ = top_view_render((cur), (prev), (opts), out, sizeof out); \
        CHECK_MEM(out, n_, (want), strlen(want), "render"); \
        CHECK_INT(out[n_], 0); \
    } while (0)

static void test_from_sample(void)
{
    snap_from(&s1, &first, 1000000000);
    CHECK_INT(s1.n_classes, 4);
    CHECK_STR(s1.version, "1.6.18");
    CHECK_INT(s1.uptime, 93784);
    CHECK_INT(s1.total_malloced, 7340032);
    CHECK_INT(s1.limit_maxbytes, 67108864);
    CHECK_INT(s1.ops, 1000 + 13500 + 10);
    CHECK_INT(s1.classes[0].id, 1);
    CHECK_INT(s1.classes[0].items, 0);         /* not in `stats items`: none */
    CHECK_INT(s1.classes[0].mem_requested, 0); /* ... */
    CHECK_INT(s1.classes[0].evicted, TOP_UNKNOWN);
    CHECK_INT(s1.classes[3].id, 12);
    CHECK_INT(s1.classes[3].chunk_size, 1184);
    CHECK_INT(s1.classes[3].pages, 3);
    CHECK_INT(s1.classes[3].items, 2000);
    CHECK_INT(s1.classes[3].cmd_set, 2500);
    CHECK_INT(s1.classes[3].evicted, 5);
    snap_from(&s2, &second, 3000000000);
}

static const char one_sample[] =
    "slabtap top: 127.0.0.1:11211  memcached 1.6.18  up 1d 02:03:04\n"
    "mem: malloced 7.0M / limit 64.0M (10.9%)  pages 7  classes 4  items 7368\n"
    "slabs: allocated 4.5M  requested 3.7M  waste 17.3%\n"
    "ops/s -  get/s -  set/s -  evict/s -  hit 90.0% (lifetime)\n"
    "sort: CLASS ascending\n"
    "\n"
    "CLASS   CHUNK      ITEMS  PAGES  USED%  WASTE%   EVICT/S    SETS/S\n"
    "    1      96          0      1    0.0       -         -         -\n"
    "    5     240       1000      1   22.9    16.7         -         -\n"
    "    8     480       4368      2  100.0    14.1         -         -\n"
    "   12    1184       2000      3   75.3    20.2         -         -\n";

static const char two_samples[] =
    "slabtap top: 127.0.0.1:11211  memcached 1.6.18  up 1d 02:03:06\n"
    "mem: malloced 7.0M / limit 64.0M (10.9%)  pages 7  classes 4  items 7368\n"
    "slabs: allocated 4.5M  requested 3.7M  waste 17.3%\n"
    "ops/s 500.0  get/s 200.0  set/s 300.0  evict/s 110.0  hit 100.0%\n"
    "sort: SETS/S descending   keys: c k i p u w e s sort  r reverse it  q quit\n"
    "\n"
    "CLASS   CHUNK      ITEMS  PAGES  USED%  WASTE%   EVICT/S    SETS/S\n"
    "   12    1184       2000      3   75.3    20.2      10.0     150.0\n"
    "    8     480       4368      2  100.0    14.1     100.0     100.0\n"
    "    5     240       1000      1   22.9    16.7       0.0      50.0\n"
    "    1      96          0      1    0.0       -         -       0.0\n";

static void test_render(void)
{
    struct top_view_opts o = { .sort = TOP_SORT_class };
    CHECK_RENDER(&s1, NULL, &o, one_sample);
    struct top_view_opts live = { .sort = TOP_SORT_sets, .keys_help = true };
    CHECK_RENDER(&s2, &s1, &live, two_samples);
    /* a note line under the header (a failed refresh) */
    struct top_view_opts noted = { .sort = TOP_SORT_class, .note = "refresh failed", .height = 6 };
    CHECK_RENDER(&s1, NULL, &noted,
                 "slabtap top: 127.0.0.1:11211  memcached 1.6.18  up 1d 02:03:04\n"
                 "mem: malloced 7.0M / limit 64.0M (10.9%)  pages 7  classes 4  items 7368\n"
                 "slabs: allocated 4.5M  requested 3.7M  waste 17.3%\n"
                 "ops/s -  get/s -  set/s -  evict/s -  hit 90.0% (lifetime)\n"
                 "sort: CLASS ascending\n"
                 "! refresh failed\n");
}

static void test_rates(void)
{
    CHECK(fabs(top_rate(300, 100, 2000000000) - 100.0) < 1e-9, "100 a second");
    CHECK(fabs(top_rate(5, 5, 1000) - 0.0) < 1e-9, "nothing moved");
    CHECK_TRUE(isnan(top_rate(4, 5, 1000000000)));           /* restarted */
    CHECK_TRUE(isnan(top_rate(5, TOP_UNKNOWN, 1000000000))); /* no earlier value */
    CHECK_TRUE(isnan(top_rate(TOP_UNKNOWN, 5, 1000000000)));
    CHECK_TRUE(isnan(top_rate(6, 5, 0))); /* same instant */
    /* the same snapshot twice: every rate unknown, the hit ratio lifetime */
    struct top_view_opts o = { .sort = TOP_SORT_class };
    size_t n = top_view_render(&s1, &s1, &o, out, sizeof out);
    CHECK(strstr(out, "ops/s -  get/s -") != NULL, "dt 0: %.*s", (int)n, out);
    CHECK(strstr(out, "hit 90.0% (lifetime)") != NULL, "lifetime ratio");
    /* counters that went backwards (memcached restarted): unknown, not negative */
    n = top_view_render(&s1, &s2, &o, out, sizeof out);
    CHECK(strstr(out, "ops/s -") != NULL && !strstr(out, "-1"), "backwards: %.*s", (int)n, out);
}

static void check_order(enum top_sort k, bool reverse, const unsigned *want_ids, unsigned n)
{
    unsigned order[TOP_CLASSES_MAX];
    unsigned got = top_view_order(&s2, &s1, k, reverse, order);
    char g[64] = "", w[64] = "";
    for (unsigned i = 0; i < got; i++)
        snprintf(g + strlen(g), sizeof g - strlen(g), " %u", s2.classes[order[i]].id);
    for (unsigned i = 0; i < n; i++)
        snprintf(w + strlen(w), sizeof w - strlen(w), " %u", want_ids[i]);
    CHECK(!strcmp(g, w), "sort %s%s:%s, want%s", top_sort_name(k), reverse ? " reversed" : "", g,
          w);
}

static void test_sort(void)
{
    static const struct {
        enum top_sort k;
        unsigned fwd[4], rev[4];
    } cases[] = {
        { TOP_SORT_class, { 1, 5, 8, 12 }, { 12, 8, 5, 1 } },
        { TOP_SORT_chunk, { 12, 8, 5, 1 }, { 1, 5, 8, 12 } },
        { TOP_SORT_items, { 8, 12, 5, 1 }, { 1, 5, 12, 8 } },
        /* ties (1 and 5 hold a page each) go to the lower id both ways */
        { TOP_SORT_pages, { 12, 8, 1, 5 }, { 1, 5, 8, 12 } },
        { TOP_SORT_used, { 8, 12, 5, 1 }, { 1, 5, 12, 8 } },
        /* class 1's waste and evictions are unknown: last both ways */
        { TOP_SORT_waste, { 12, 5, 8, 1 }, { 8, 5, 12, 1 } },
        { TOP_SORT_evict, { 8, 12, 5, 1 }, { 5, 12, 8, 1 } },
        { TOP_SORT_sets, { 12, 8, 5, 1 }, { 1, 5, 8, 12 } },
    };
    CHECK_INT(sizeof cases / sizeof cases[0], TOP_SORT__COUNT);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        check_order(cases[i].k, false, cases[i].fwd, 4);
        check_order(cases[i].k, true, cases[i].rev, 4);
    }
    /* without an earlier snapshot the rate keys are all unknown: class order */
    unsigned order[TOP_CLASSES_MAX];
    CHECK_INT(top_view_order(&s1, NULL, TOP_SORT_evict, false, order), 4);
    CHECK_TRUE(order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 3);
    /* the letters */
    CHECK_INT(top_sort_from_letter('c'), TOP_SORT_class);
    CHECK_INT(top_sort_from_letter('p'), TOP_SORT_pages);
    CHECK_INT(top_sort_from_letter('w'), TOP_SORT_waste);
    CHECK_INT(top_sort_from_letter('e'), TOP_SORT_evict);
    CHECK_INT(top_sort_from_letter('s'), TOP_SORT_sets);
    CHECK_INT(top_sort_from_letter('r'), -1); /* reverse: the caller's */
    CHECK_INT(top_sort_from_letter('q'), -1);
    CHECK_STR(top_sort_name(TOP_SORT_waste), "waste");
    /* the sorted view, reversed, in the sort line */
    struct top_view_opts o = { .sort = TOP_SORT_pages, .reverse = true };
    top_view_render(&s2, &s1, &o, out, sizeof out);
    CHECK(strstr(out, "\nsort: PAGES ascending\n") != NULL, "%s", out);
    o.sort = TOP_SORT_class;
    top_view_render(&s2, &s1, &o, out, sizeof out);
    CHECK(strstr(out, "\nsort: CLASS descending\n") != NULL, "%s", out);
}

static void test_width(void)
{
    struct top_view_opts o = { .sort = TOP_SORT_class, .width = 30 };
    CHECK_RENDER(&s1, NULL, &o,
                 "slabtap top: 127.0.0.1:11211  \n"
                 "mem: malloced 7.0M / limit 64.\n"
                 "slabs: allocated 4.5M  request\n"
                 "ops/s -  get/s -  set/s -  evi\n"
                 "sort: CLASS ascending\n"
                 "\n"
                 "CLASS   CHUNK      ITEMS  PAGE\n"
                 "    1      96          0      \n"
                 "    5     240       1000      \n"
                 "    8     480       4368      \n"
                 "   12    1184       2000      \n");
    /* height: the header, the titles and as many rows as fit */
    struct top_view_opts h = { .sort = TOP_SORT_chunk, .width = 12, .height = 8 };
    CHECK_RENDER(&s1, NULL, &h,
                 "slabtap top:\n"
                 "mem: malloce\n"
                 "slabs: alloc\n"
                 "ops/s -  get\n"
                 "sort: CHUNK \n"
                 "\n"
                 "CLASS   CHUN\n"
                 "   12    118\n");
    /* a buffer too small for everything: whole lines only, NUL-terminated */
    char small[100];
    size_t n = top_view_render(&s1, NULL, &o, small, sizeof small);
    CHECK_INT(n, 31 + 31 + 31);
    CHECK_INT(small[n], 0);
    CHECK_INT(small[n - 1], '\n');
    CHECK_INT(top_view_render(&s1, NULL, &o, small, 0), 0);
}

/* The body GET /api/slabs answers (server/routes.c routes_slabs), classes out
 * of order, one that has lost all its pages, a field that is not a number. */
static const char slabs_json[] =
    "{\"run_id\":3,\"t_ns\":1700000000000000000,\"classes\":["
    "{\"class_id\":12,\"allocated\":2368000,\"waste_bytes\":478000,\"fields\":{"
    "\"chunk_size\":1184,\"chunks_per_page\":885,\"total_pages\":3,\"total_chunks\":2655,"
    "\"used_chunks\":2000,\"free_chunks\":655,\"get_hits\":5,\"cmd_set\":2500,\"number\":2000,"
    "\"number_hot\":0,\"age\":12,\"mem_requested\":1890000,\"evicted\":5,"
    "\"odd\":\"text \\\"quoted\\\" \\u00e9\",\"ratio\":1.25e0,\"big\":-3}},"
    "{\"class_id\":2,\"fields\":{\"chunk_size\":120,\"total_pages\":0,\"total_chunks\":0,"
    "\"used_chunks\":0,\"number\":0,\"mem_requested\":0,\"evicted\":7,\"cmd_set\":40}},"
    "{\"class_id\":5,\"allocated\":240000,\"waste_bytes\":40000,\"fields\":{\"chunk_size\":240,"
    "\"total_pages\":1,\"total_chunks\":4369,\"used_chunks\":1000,\"cmd_set\":1000,"
    "\"number\":1000,\"mem_requested\":200000,\"evicted\":0,\"nested\":{\"a\":[1,{\"b\":null}]},"
    "\"flag\":true}}]}\n";

/* The same sample as stats_fmt, as a slabtap of this version answers
 * GET /api/slabs: the classes' fields, memcached's `stats` under "stats"
 * and the unprefixed `stats slabs` fields under "slab_globals". */
static const char slabs_stats_fmt[] =
    "{\"run_id\":1,\"t_ns\":%llu,\"classes\":["
    "{\"class_id\":1,\"fields\":{\"chunk_size\":96,\"chunks_per_page\":10922,"
    "\"total_pages\":1,\"total_chunks\":10922,\"used_chunks\":0,\"cmd_set\":0}},"
    "{\"class_id\":5,\"fields\":{\"number\":1000,\"mem_requested\":200000,\"evicted\":0,"
    "\"chunk_size\":240,\"total_pages\":1,\"total_chunks\":4369,\"used_chunks\":1000,"
    "\"cmd_set\":%d}},"
    "{\"class_id\":8,\"fields\":{\"number\":4368,\"mem_requested\":1800000,\"evicted\":%d,"
    "\"chunk_size\":480,\"total_pages\":2,\"total_chunks\":4368,\"used_chunks\":4368,"
    "\"cmd_set\":%d}},"
    "{\"class_id\":12,\"fields\":{\"number\":2000,\"mem_requested\":1890000,\"evicted\":%d,"
    "\"chunk_size\":1184,\"total_pages\":3,\"total_chunks\":2655,\"used_chunks\":2000,"
    "\"cmd_set\":%d}}],"
    "\"stats\":{\"pid\":1,\"uptime\":%d,\"version\":\"1.6.18\",\"curr_items\":7368,"
    "\"bytes\":3890000,\"get_hits\":%d,\"get_misses\":100,\"cmd_get\":%d,\"cmd_set\":%d,"
    "\"cmd_touch\":0,\"delete_hits\":10,\"delete_misses\":0,\"evictions\":%d,"
    "\"limit_maxbytes\":67108864,\"rusage_user\":0.5},"
    "\"slab_globals\":{\"active_slabs\":4,\"total_malloced\":7340032}}\n";

static void json_from(struct top_snapshot *s, const struct counters *c, uint64_t t_ns)
{
    static char text[8192];
    char err[256] = "";
    int n = snprintf(text, sizeof text, slabs_stats_fmt, (unsigned long long)t_ns, c->set5, c->ev8,
                     c->set8, c->ev12, c->set12, c->uptime, c->get_hits, c->cmd_get, c->cmd_set,
                     c->evictions);
    CHECK_INT(top_snapshot_from_json(s, text, (size_t)n, "127.0.0.1:11211", err, sizeof err), 0);
    CHECK_STR(err, "");
}

/* --proxy shows what --memcached shows: the same header from "stats". */
static void test_json_stats(void)
{
    static struct top_snapshot j1, j2;
    json_from(&j1, &first, 1000000000ull);
    json_from(&j2, &second, 3000000000ull);
    CHECK_INT(j2.get_hits, 1300);
    CHECK_INT(j2.get_misses, 100);
    CHECK_INT(j2.cmd_get, 1400);
    CHECK_INT(j2.cmd_set, 14100); /* memcached's, not the classes' sum */
    CHECK_INT(j2.ops, 1400 + 14100 + 10);
    CHECK_INT(j2.total_malloced, 7340032);
    CHECK_STR(j2.version, "1.6.18");
    struct top_view_opts o = { .sort = TOP_SORT_class };
    CHECK_RENDER(&j1, NULL, &o, one_sample);
    struct top_view_opts live = { .sort = TOP_SORT_sets, .keys_help = true };
    CHECK_RENDER(&j2, &j1, &live, two_samples);
}

/* Keys: r reverses the current sort only; a sort key chosen after it
 * starts its own way round (largest first). */
static void test_keys(void)
{
    struct top_view_opts o = { .sort = TOP_SORT_class };
    CHECK_INT(top_view_key(&o, 'w'), 1);
    CHECK_INT(o.sort, TOP_SORT_waste);
    CHECK_TRUE(!o.reverse);
    CHECK_INT(top_view_key(&o, 'r'), 1);
    CHECK_TRUE(o.reverse);
    top_view_render(&s2, &s1, &o, out, sizeof out);
    CHECK(strstr(out, "\nsort: WASTE% ascending\n") != NULL, "%s", out);
    /* then another key: items, largest first again */
    CHECK_INT(top_view_key(&o, 'i'), 1);
    CHECK_INT(o.sort, TOP_SORT_items);
    CHECK_TRUE(!o.reverse);
    top_view_render(&s2, &s1, &o, out, sizeof out);
    CHECK(strstr(out, "\nsort: ITEMS descending\n") != NULL, "%s", out);
    unsigned order[TOP_CLASSES_MAX];
    top_view_order(&s2, &s1, o.sort, o.reverse, order);
    CHECK_INT(s2.classes[order[0]].id, 8); /* 4368 items */
    /* class after r: ascending again; R works as r */
    CHECK_INT(top_view_key(&o, 'R'), 1);
    CHECK_INT(top_view_key(&o, 'c'), 1);
    CHECK_TRUE(o.sort == TOP_SORT_class && !o.reverse);
    CHECK_INT(top_view_key(&o, 'x'), 0);
    CHECK_INT(top_view_key(&o, ' '), 0);
    CHECK_INT(top_view_key(&o, 'q'), -1);
    CHECK_INT(top_view_key(&o, 3), -1);
}

static void test_json(void)
{
    char err[256] = "";
    CHECK_INT(top_snapshot_from_json(&sj, slabs_json, strlen(slabs_json),
                                     "127.0.0.1:9000 via slabtap /api/slabs", err, sizeof err),
              0);
    CHECK_STR(err, "");
    CHECK_INT(sj.n_classes, 3);
    CHECK_INT(sj.classes[0].id, 2);
    CHECK_INT(sj.classes[1].id, 5);
    CHECK_INT(sj.classes[2].id, 12);
    CHECK_INT(sj.t_ns, 1700000000000000000ull);
    CHECK_INT(sj.classes[2].pages, 3);
    CHECK_INT(sj.classes[2].items, 2000);
    CHECK_INT(sj.cmd_set, 2500 + 40 + 1000);
    CHECK_INT(sj.evictions, 12);
    CHECK_INT(sj.curr_items, 3000);
    CHECK_INT(sj.uptime, TOP_UNKNOWN);
    struct top_view_opts o = { .sort = TOP_SORT_class };
    CHECK_RENDER(&sj, NULL, &o,
                 "slabtap top: 127.0.0.1:9000 via slabtap /api/slabs\n"
                 "mem: malloced - / limit -  pages 4  classes 3  items 3000\n"
                 "slabs: allocated 2.5M  requested 2.0M  waste 19.9%\n"
                 "ops/s -  get/s -  set/s -  evict/s -  hit -\n"
                 "sort: CLASS ascending\n"
                 "\n"
                 "CLASS   CHUNK      ITEMS  PAGES  USED%  WASTE%   EVICT/S    SETS/S\n"
                 "    2     120          0      0      -       -         -         -\n"
                 "    5     240       1000      1   22.9    16.7         -         -\n"
                 "   12    1184       2000      3   75.3    20.2         -         -\n");

    /* the flat shape of /api/run/classes, with the totals */
    static const char flat[] =
        "{\"run_id\":1,\"t_ns\":5,\"total_malloced\":1048576,\"limit_maxbytes\":67108864,"
        "\"classes\":[{\"class_id\":1,\"chunk_size\":96,\"pages\":1,\"total_chunks\":10922,"
        "\"used_chunks\":1,\"mem_requested\":60,\"evicted\":0,\"evicted_per_s\":0.5,"
        "\"waste_pct\":37.5}]}";
    CHECK_INT(top_snapshot_from_json(&sk, flat, strlen(flat), "x", err, sizeof err), 0);
    CHECK_INT(sk.n_classes, 1);
    CHECK_INT(sk.total_malloced, 1048576);
    CHECK_INT(sk.classes[0].pages, 1);
    CHECK_INT(sk.classes[0].used_chunks, 1);
    top_view_render(&sk, NULL, &o, out, sizeof out);
    CHECK(strstr(out, "mem: malloced 1.0M / limit 64.0M (1.6%)  pages 1  classes 1  items -\n"
                      "slabs: allocated 96B  requested 60B  waste 37.5%\n") != NULL,
          "%s", out);
    CHECK(strstr(out, "    1      96          -      1    0.0    37.5         -         -\n") !=
              NULL,
          "%s", out);

    /* a memcached that has stored nothing yet */
    static const char none[] = "{\"run_id\":1,\"t_ns\":5,\"classes\":[]}";
    CHECK_INT(top_snapshot_from_json(&sk, none, strlen(none), "x", err, sizeof err), 0);
    CHECK_INT(sk.n_classes, 0);
    CHECK_RENDER(&sk, NULL, &o,
                 "slabtap top: x\n"
                 "mem: malloced - / limit -  pages 0  classes 0  items -\n"
                 "slabs: allocated 0B  requested 0B  waste -\n"
                 "ops/s -  get/s -  set/s -  evict/s -  hit -\n"
                 "sort: CLASS ascending\n"
                 "\n"
                 "CLASS   CHUNK      ITEMS  PAGES  USED%  WASTE%   EVICT/S    SETS/S\n"
                 "(no slab classes yet: memcached has stored nothing)\n");

    /* what is refused, each with a message */
    static const struct {
        const char *json, *msg;
    } bad[] = {
        { "", "an object expected" },
        { "not json", "an object expected" },
        { "{\"error\":\"no stats sample yet\"}", "the endpoint answered: no stats sample yet" },
        { "{\"classes\":[{\"fields\":{}}]}", "a class without a class_id" },
        { "{\"classes\":[{\"class_id\":256}]}", "a class without a class_id in 0..255" },
        { "{\"classes\":[{\"class_id\":1.5}]}", "class_id is not a whole number" },
        { "{\"classes\":[{\"class_id\":3},{\"class_id\":3}]}", "a class listed twice" },
        { "{\"classes\":[{\"class_id\":3}", "',' or ']' expected" },
        { "{\"a\":\"unterminated", "a string without its end" },
        { "{\"a\":1} x", "bytes after the object" },
        { "{\"a\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}", "nested too deep" },
        { "{\"a\":tru}", "a value expected" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(top_snapshot_from_json(&sk, bad[i].json, strlen(bad[i].json), "x", err, sizeof err) ==
                      -1 &&
                  strstr(err, bad[i].msg) && sk.n_classes == 0,
              "json %zu %s: err \"%s\", want \"%s\"", i, bad[i].json, err, bad[i].msg);
    }
}

/* A class that lost its pages (slab_automove) and one only `stats items`
 * names: 0 pages, used and waste unknown, never a division by zero. */
static void test_zero_pages(void)
{
    static const char text[] = "STAT uptime 5\r\nEND\r\n"
                               "END\r\n"
                               "STAT 3:chunk_size 152\r\nSTAT 3:total_pages 0\r\n"
                               "STAT 3:total_chunks 0\r\nSTAT 3:used_chunks 0\r\n"
                               "STAT total_malloced 0\r\nEND\r\n";
    struct stats_parse_batch b;
    size_t used;
    stats_parse_batch_begin(&b, &sample, STATS_R_REQUIRED);
    CHECK_INT(stats_parse_batch_feed(&b, text, sizeof text - 1, &used), STATS_PARSE_OK);
    /* A batch leaves such a class out (issue 18), a sample built by hand
     * (or one read back from a file written before) may still hold it. */
    CHECK_TRUE(stats_sample_add(&sample, STATS_R_ITEMS, "items:4:number", 14, "0", 1));
    CHECK_TRUE(stats_sample_add(&sample, STATS_R_ITEMS, "items:4:evicted", 15, "9", 1));
    top_snapshot_from_sample(&sk, &sample, 1, "m");
    struct top_view_opts o = { .sort = TOP_SORT_waste };
    CHECK_RENDER(&sk, NULL, &o,
                 "slabtap top: m  up 0d 00:00:05\n"
                 "mem: malloced 0B / limit -  pages 0  classes 2  items -\n"
                 "slabs: allocated 0B  requested 0B  waste -\n"
                 "ops/s -  get/s -  set/s -  evict/s -  hit -\n"
                 "sort: WASTE% descending\n"
                 "\n"
                 "CLASS   CHUNK      ITEMS  PAGES  USED%  WASTE%   EVICT/S    SETS/S\n"
                 "    3     152          0      0      -       -         -         -\n"
                 "    4       -          0      0      -       -         -         -\n");
}

static void test_http_parse(void)
{
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             "content-length: 5\r\nConnection: close\r\n\r\n{\"a\"}";
    struct top_http_reply r;
    CHECK_INT(top_fetch_http_parse(ok, sizeof ok - 1, false, &r), 1);
    CHECK_INT(r.status, 200);
    CHECK_MEM(ok + r.body_off, r.body_len, "{\"a\"}", 5, "body");
    CHECK_INT(top_fetch_http_parse(ok, sizeof ok - 2, false, &r), 0); /* a byte short */
    CHECK_INT(top_fetch_http_parse(ok, sizeof ok - 2, true, &r), -1); /* ... and closed */
    CHECK_INT(top_fetch_http_parse(ok, 20, false, &r), 0);            /* head unfinished */
    static const char no_len[] = "HTTP/1.0 401 Unauthorized\r\n\r\ntoken required\n";
    CHECK_INT(top_fetch_http_parse(no_len, sizeof no_len - 1, false, &r), 0);
    CHECK_INT(top_fetch_http_parse(no_len, sizeof no_len - 1, true, &r), 1);
    CHECK_INT(r.status, 401);
    CHECK_INT(r.body_len, 15);
    CHECK_INT(top_fetch_http_parse("HTT", 3, false, &r), 0);
    static const char *const bad[] = {
        "ERROR\r\n", /* memcached's answer to a request line: at once */
        "VALUE x 0 1\r\n\r\n",
        "HTTP/1.1 2x0 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(top_fetch_http_parse(bad[i], strlen(bad[i]), false, &r) == -1, "bad %zu", i);
    /* memcached's answer to an HTTP request never ends a head: bounded */
    char *junk = malloc(TOP_FETCH_HEAD_MAX);
    memset(junk, 'E', TOP_FETCH_HEAD_MAX);
    CHECK_INT(top_fetch_http_parse(junk, TOP_FETCH_HEAD_MAX, false, &r), -1);
    CHECK_INT(top_fetch_http_parse(junk, 100, true, &r), -1);
    free(junk);
}

/* GET /api/runs: the running slabtap's run and kind (issue 22), at every
 * cut of the answer: a cut one never reads past its end. */
static void test_current_run(void)
{
    static const struct {
        const char *json;
        int rc;
        int64_t id;
        const char *kind;
    } t[] = {
        { "{\"current\":{\"run_id\":7,\"kind\":\"watch\",\"name\":\"w\"},\"runs\":[]}", 0, 7,
          "watch" },
        { "{\"current\":{\"run_id\":12,\"kind\":\"snapshot\"},\"runs\":[{\"kind\":\"proxy\"}]}", 0,
          12, "snapshot" },
        /* an older slabtap: no kind */
        { "{\"current\":{\"run_id\":3,\"name\":\"a\"},\"runs\":[{\"run_id\":2,\"kind\":\"watch\"}]"
          "}",
          0, 3, "proxy" },
        { "{\"runs\":[]}", -1, 0, "" },
        { "", -1, 0, "" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int64_t id = -1;
        char kind[16] = "";
        CHECK_INT(top_current_run(t[i].json, strlen(t[i].json), &id, kind, sizeof kind), t[i].rc);
        if (t[i].rc == 0) {
            CHECK_INT(id, t[i].id);
            CHECK_STR(kind, t[i].kind);
        }
        for (size_t cut = 0; cut < strlen(t[i].json); cut++) {
            char *p = malloc(cut ? cut : 1);
            memcpy(p, t[i].json, cut);
            top_current_run(p, cut, &id, kind, sizeof kind);
            free(p);
        }
    }
}

/* /api/slabs of a proxy with shadows (issue 23): "target" and "targets"
 * kept, the header names the target, t asks for the next one. */
static void test_targets(void)
{
    static struct top_snapshot s;
    static char out[TOP_VIEW_RENDER_MAX];
    static const char body[] =
        "{\"run_id\":1,\"t_ns\":5,\"target\":\"-f 1.08\",\"targets\":[\"primary\","
        "\"-f 1.08\",\"1/4 -o slab_automove=2\"],\"classes\":[],\"stats\":{},"
        "\"slab_globals\":{}}";
    char err[256] = "";
    struct top_view_opts o = { .sort = TOP_SORT_class, .keys_help = true };
    CHECK_INT(top_snapshot_from_json(&s, body, sizeof body - 1, "x", err, sizeof err), 0);
    CHECK_STR(s.target, "-f 1.08");
    CHECK_INT(s.n_targets, 3);
    CHECK_STR(top_next_target(&s), "1/4 -o slab_automove=2");
    top_view_render(&s, NULL, &o, out, sizeof out);
    CHECK_TRUE(strstr(out, "\ntarget: -f 1.08 (2 of 3)\n") != NULL);
    CHECK_TRUE(strstr(out, "t target  q quit") != NULL);
    CHECK_INT(top_view_key(&o, 't'), TOP_KEY_TARGET);
    snprintf(s.target, sizeof s.target, "1/4 -o slab_automove=2");
    CHECK_STR(top_next_target(&s), "primary");
    /* without shadows: no target line, no key */
    static const char plain[] = "{\"t_ns\":5,\"targets\":[\"primary\"],\"classes\":[]}";
    CHECK_INT(top_snapshot_from_json(&s, plain, sizeof plain - 1, "x", err, sizeof err), 0);
    CHECK_TRUE(top_next_target(&s) == NULL);
    top_view_render(&s, NULL, &o, out, sizeof out);
    CHECK_TRUE(strstr(out, "target:") == NULL);
    CHECK_TRUE(strstr(out, "t target") == NULL);
}

int main(void)
{
    stats_sample_init(&sample);
    test_from_sample();
    test_render();
    test_rates();
    test_sort();
    test_width();
    test_json();
    test_json_stats();
    test_keys();
    test_zero_pages();
    test_http_parse();
    test_current_run();
    test_targets();
    stats_sample_fini(&sample);
    return check_done("test_top");
}
