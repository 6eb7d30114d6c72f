/* test_predict: the ladder a run is modelled with (ladder_source) and what
 * each recorded write did to memcached's memory (predict), as tables.
 *
 * Expected counters were read from a running memcached 1.6.18 (Debian
 * 1.6.18-1+deb12u1, x86-64, `stats slabs` / `stats items` after the same
 * commands sent directly); expected ladders from `memcached -vv` with
 * -f 1.125 and -o slab_sizes=100-200-400-800-1600. None come from the model.
 * Prints every failing case; exits 1 if any.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/mcserver.h"
#include "model/ladder_source.h"
#include "model/predict.h"
#include "model/slab_model.h"

#include "check.h"

/* memcached -vv -f 1.125: classes 1..42 of 63 */
static const uint32_t ladder_f1125[] = {
    96,   112,  128,  144,  168,  192,  216,  248,  280,  320,  360,   408,   464,   528,
    600,  680,  768,  864,  976,  1104, 1248, 1408, 1584, 1784, 2008,  2264,  2552,  2872,
    3232, 3640, 4096, 4608, 5184, 5832, 6568, 7392, 8320, 9360, 10536, 11856, 13344, 15016,
};

/* memcached -vv -o slab_sizes=100-200-400-800-1600 */
static const uint32_t ladder_sizes5[] = { 104, 200, 400, 800, 1600, 524288 };

struct ladder_case {
    const char *what;
    double reported_f; /* what `stats settings` printed */
    const char *flags;
    const uint32_t *obs_ladder; /* observe these chunk sizes ... */
    uint32_t obs_from, obs_to;  /* ... for classes from..to (0: none) */
    uint32_t obs_extra;         /* and this class too (0: none) */
    enum ladder_origin origin;
    bool trusted, partial;
    double f;           /* the ladder's -f (0: do not check) */
    uint32_t n_classes; /* 0: do not check */
    uint32_t check_class, check_chunk;
    uint32_t mismatch; /* mismatch_class */
    const char *note;  /* a part of the note ("": empty note) */
};

static const struct ladder_case ladder_cases[] = {
    { "default, nothing seen", 1.25, NULL, NULL, 0, 0, 0, LADDER_SETTINGS, true, false, 1.25, 39,
      12, 1184, 0, "" },
    { "slab_sizes server, classes 1-5 seen", 1.25, NULL, ladder_sizes5, 1, 5, 0, LADDER_OBSERVED,
      true, true, 0, 6, 6, 524288, 1, "classes 1-5" },
    { "slab_sizes server, every class seen", 1.25, NULL, ladder_sizes5, 1, 6, 0, LADDER_OBSERVED,
      true, false, 0, 6, 5, 1600, 1, "read from the chunk sizes" },
    { "slab_sizes from --slab-sizes", 1.25, "-o slab_sizes=100-200-400-800-1600", ladder_sizes5, 1,
      5, 0, LADDER_FLAGS, true, false, 0, 6, 1, 104, 0, "" },
    { "slab_sizes flags, nothing seen yet", 1.25, "-m 1024 -o slab_sizes=100-200-400-800-1600",
      NULL, 0, 0, 0, LADDER_FLAGS, true, false, 0, 6, 3, 400, 0, "" },
    { "wrong --slab-sizes: what memcached shows wins", 1.25, "-o slab_sizes=100-300", ladder_sizes5,
      1, 2, 0, LADDER_OBSERVED, true, true, 0, 3, 2, 200, 2,
      "The ladder of the flags (-o slab_sizes=100-300) disagrees" },
    { "slab_sizes server, a gap below", 1.25, NULL, ladder_sizes5, 2, 3, 0, LADDER_CONFLICT, false,
      false, 0, 39, 2, 120, 2, "No ladder fits" },
    { "-f 1.125 printed 1.12, classes 1-33 seen", 1.12, NULL, ladder_f1125, 1, 33, 0,
      LADDER_RECOVERED, true, false, 1.125, 63, 33, 5184, 13, "-f 1.125 fits" },
    { "-f 1.125 printed 1.12, classes 1-8 seen (1.12 fits them)", 1.12, NULL, ladder_f1125, 1, 8, 0,
      LADDER_SETTINGS, true, false, 1.12, 0, 8, 248, 0, "" },
    { "-f 1.125 from the flags", 1.12, "-m 64 -f 1.125", NULL, 0, 0, 0, LADDER_FLAGS, true, false,
      1.125, 63, 13, 464, 0, "" },
    { "-f 1.125 from the flags, classes seen", 1.12, "--slab-growth-factor=1.125", ladder_f1125, 1,
      42, 0, LADDER_FLAGS, true, false, 1.125, 63, 42, 15016, 0, "" },
    { "flags with another -f than memcached reports", 1.25, "-f 1.3", NULL, 0, 0, 0,
      LADDER_SETTINGS, true, false, 1.25, 39, 0, 0, 0, "The flags say -f 1.30" },
    { "flags with another -n", 1.25, "-n 64", NULL, 0, 0, 0, LADDER_SETTINGS, true, false, 1.25, 39,
      1, 96, 0, "The flags say -n 64" },
    { "flags memcached would not take", 1.25, "-Q 3", NULL, 0, 0, 0, LADDER_SETTINGS, true, false,
      1.25, 39, 0, 0, 0, "not understood" },
    /* fitting -f values never differ below the largest class seen (searched
     * over -f 1.01 .. 2.00): a few classes settle the ladder */
    { "-f 1.125 printed 1.12, only classes 13 and 33 seen", 1.12, NULL, ladder_f1125, 13, 13, 33,
      LADDER_RECOVERED, true, false, 1.125, 63, 20, 1104, 13, "-f 1.125 fits" },
    { "-f 1.125 printed 1.12, classes 1-33 seen: classes above may differ", 1.12, NULL,
      ladder_f1125, 1, 33, 0, LADDER_RECOVERED, true, false, 1.125, 63, 13, 464, 13,
      "give other classes above class 33" },
};

static void test_ladder_choose(void)
{
    for (size_t i = 0; i < sizeof ladder_cases / sizeof ladder_cases[0]; i++) {
        const struct ladder_case *c = &ladder_cases[i];
        struct slab_settings rep;
        struct ladder_observed obs;
        struct ladder_choice ch;
        char err[200] = "";
        slab_settings_default(&rep);
        rep.growth_factor = c->reported_f;
        ladder_observed_init(&obs);
        for (uint32_t k = c->obs_from; c->obs_ladder && k && k <= c->obs_to; k++)
            ladder_observed_add(&obs, k, c->obs_ladder[k - 1]);
        if (c->obs_extra)
            ladder_observed_add(&obs, c->obs_extra, c->obs_ladder[c->obs_extra - 1]);
        enum slab_status st = ladder_choose(&rep, c->flags, "1.6.18", &obs, &ch, err, sizeof err);
        CHECK(st == SLAB_OK, "%s: %s", c->what, err);
        CHECK(ch.origin == c->origin, "%s: origin %s, want %s (%s)", c->what,
              ladder_origin_str(ch.origin), ladder_origin_str(c->origin), ch.note);
        CHECK(ch.trusted == c->trusted && ch.partial == c->partial,
              "%s: trusted %d partial %d, want %d %d (%s)", c->what, ch.trusted, ch.partial,
              c->trusted, c->partial, ch.note);
        if (c->f)
            CHECK(ch.settings.growth_factor == c->f, "%s: -f %.6g, want %.6g", c->what,
                  ch.settings.growth_factor, c->f);
        if (c->n_classes)
            CHECK_INT(ch.ladder.n_classes, c->n_classes);
        if (c->check_class)
            CHECK(ch.ladder.cls[c->check_class].chunk_size == c->check_chunk,
                  "%s: class %u chunk %u, want %u", c->what, c->check_class,
                  ch.ladder.cls[c->check_class].chunk_size, c->check_chunk);
        CHECK(ch.mismatch_class == c->mismatch, "%s: mismatch class %u, want %u", c->what,
              ch.mismatch_class, c->mismatch);
        if (c->note[0])
            CHECK(strstr(ch.note, c->note) != NULL, "%s: note \"%s\" lacks \"%s\"", c->what,
                  ch.note, c->note);
        else
            CHECK(ch.note[0] == '\0', "%s: note \"%s\", want none", c->what, ch.note);
        /* a trusted ladder agrees with everything seen */
        if (ch.trusted)
            CHECK(ladder_check(&ch.ladder, &obs) == 0, "%s: trusted but disagrees", c->what);
    }
    /* the recovered ladder is memcached's -f 1.125 ladder, class for class */
    struct slab_settings rep, f1125;
    struct ladder_observed obs;
    struct ladder_choice ch;
    struct slab_ladder want;
    slab_settings_default(&rep);
    rep.growth_factor = 1.12;
    f1125 = rep;
    f1125.growth_factor = 1.125;
    slab_ladder_build(&f1125, &want, NULL, 0);
    ladder_observed_init(&obs);
    for (uint32_t k = 1; k <= 42; k++)
        ladder_observed_add(&obs, k, ladder_f1125[k - 1]);
    ladder_choose(&rep, NULL, NULL, &obs, &ch, NULL, 0);
    CHECK(slab_ladder_same(&ch.ladder, &want), "recovered 1.125 ladder differs from -f 1.125's");
    char flags[256];
    ladder_choice_flags(&ch, flags, sizeof flags);
    CHECK_STR(flags, "-n 48 -f 1.125");
    /* observations: a class seen with two sizes */
    ladder_observed_init(&obs);
    CHECK_INT(ladder_observed_add(&obs, 3, 152), 1);
    CHECK_INT(ladder_observed_add(&obs, 3, 152), 0);
    CHECK_INT(ladder_observed_add(&obs, 3, 160), -1);
    CHECK_INT(obs.contradiction, 3);
    CHECK_INT(ladder_observed_add(&obs, 64, 100), -1);
    slab_settings_default(&rep);
    ladder_choose(&rep, NULL, NULL, &obs, &ch, NULL, 0);
    CHECK(!ch.trusted && ch.origin == LADDER_CONFLICT && strstr(ch.note, "two chunk sizes"),
          "contradiction: %s %s", ladder_origin_str(ch.origin), ch.note);
}

/* ---- what each recorded write did: predict_apply ---- */

struct w {
    const char *cmd;
    char ms_mode;
    uint64_t hash;
    uint32_t key_len;
    int64_t value_len;
    uint32_t flags;
    const char *answer;
};

/* Expected (class, pages, used_chunks, mem_requested) after the writes. */
struct cls_want {
    uint32_t id;
    uint64_t pages, used, requested;
};

struct apply_case {
    const char *what;
    struct w writes[12];
    struct cls_want want[8];
    uint64_t throwaway, live;
};

/* ntotal = 48 + key + 1 + (flags ? 4 : 0) + value + 2 + 8 (CAS on) */
static const struct apply_case apply_cases[] = {
    /* issue 11: set 5000 bytes, prepend 10: the 70-byte piece opens class 1 */
    { "prepend piece",
      { { "set", 0, 1, 1, 5000, 0, "STORED" }, { "prepend", 0, 1, 1, 10, 0, "STORED" } },
      { { 1, 1, 0, 0 }, { 19, 1, 1, 5070 } },
      1,
      1 },
    { "append piece, append flags count in the piece",
      { { "set", 0, 1, 1, 300, 0, "STORED" }, { "append", 0, 1, 1, 3000, 99, "STORED" } },
      { { 7, 1, 0, 0 }, { 17, 1, 1, 3360 } },
      1,
      1 },
    { "refused add (NOT_STORED) on an existing key",
      { { "set", 0, 1, 1, 1, 0, "STORED" }, { "add", 0, 1, 1, 300, 0, "NOT_STORED" } },
      { { 1, 1, 1, 61 }, { 7, 1, 0, 0 } },
      1,
      1 },
    { "replace of a missing key",
      { { "replace", 0, 2, 5, 2000, 0, "NOT_STORED" } },
      { { 15, 1, 0, 0 } },
      1,
      0 },
    { "cas NOT_FOUND and EXISTS",
      { { "set", 0, 1, 1, 1, 0, "STORED" },
        { "cas", 0, 2, 5, 5000, 0, "NOT_FOUND" },
        { "cas", 0, 1, 1, 700, 0, "EXISTS" } },
      { { 1, 1, 1, 61 }, { 11, 1, 0, 0 }, { 19, 1, 0, 0 } },
      2,
      1 },
    { "append onto a missing key: the piece",
      { { "append", 0, 2, 5, 20000, 0, "NOT_STORED" } },
      { { 25, 1, 0, 0 } },
      1,
      0 },
    { "ms add refused (NS)",
      { { "set", 0, 1, 1, 1, 0, "STORED" }, { "ms", 'E', 1, 1, 3000, 0, "NS" } },
      { { 1, 1, 1, 61 }, { 17, 1, 0, 0 } },
      1,
      1 },
    { "refused chunked add: header, full chunk and tail",
      { { "set", 0, 1, 1, 1, 0, "STORED" }, { "add", 0, 1, 1, 600000, 0, "NOT_STORED" } },
      { { 1, 1, 1, 61 }, { 2, 1, 0, 0 }, { 31, 1, 0, 0 }, { 39, 1, 0, 0 } },
      1,
      1 },
    { "bad data chunk: allocated before the data was read",
      { { "set", 0, 3, 1, 9000, 0, "CLIENT_ERROR bad data chunk" } },
      { { 22, 1, 0, 0 } },
      1,
      0 },
    { "too large and bad command line: nothing allocated",
      { { "set", 0, 3, 1, 2000000, 0, "SERVER_ERROR object too large for cache" },
        { "set", 0, 3, 1, 300, 0, "CLIENT_ERROR bad command line format" } },
      { { 0, 0, 0, 0 } },
      0,
      0 },
    { "noreply add on an existing key: refused, allocated",
      { { "set", 0, 1, 1, 1, 0, "STORED" }, { "add", 0, 1, 1, 300, 0, "noreply" } },
      { { 1, 1, 1, 61 }, { 7, 1, 0, 0 } },
      1,
      1 },
    { "noreply replace of a missing key, noreply append onto one that exists",
      { { "replace", 0, 2, 5, 2000, 0, "noreply" },
        { "set", 0, 1, 1, 1, 0, "STORED" },
        { "append", 0, 1, 1, 5, 0, "noreply" } },
      { { 1, 1, 1, 66 }, { 15, 1, 0, 0 } },
      2,
      1 },
    /* incr/decr: 1 -> "10" does not fit "9" (new item, 2 bytes); "6" fits
     * "11" in place; noreply decr never grows */
    { "incr grows the value, decr in place",
      { { "set", 0, 5, 1, 1, 0, "STORED" },
        { "incr", 0, 5, 1, -1, 0, "10" },
        { "incr", 0, 5, 1, -1, 0, "11" },
        { "decr", 0, 5, 1, -1, 0, "6" },
        { "decr", 0, 5, 1, -1, 0, "noreply" },
        { "incr", 0, 6, 5, -1, 0, "NOT_FOUND" },
        { "incr", 0, 5, 1, -1, 0,
          "CLIENT_ERROR cannot increment or decrement non-numeric value" } },
      { { 1, 1, 1, 62 } },
      0,
      1 },
};

static void test_apply(void)
{
    for (size_t i = 0; i < sizeof apply_cases / sizeof apply_cases[0]; i++) {
        const struct apply_case *c = &apply_cases[i];
        struct prediction *r = calloc(1, sizeof *r);
        struct slab_settings s;
        char err[200];
        slab_settings_default(&s);
        if (!r || predict_begin(r, 1, &s, err, sizeof err)) {
            CHECK(0, "%s: predict_begin", c->what);
            free(r);
            continue;
        }
        for (size_t k = 0; k < sizeof c->writes / sizeof c->writes[0] && c->writes[k].cmd; k++) {
            const struct w *x = &c->writes[k];
            struct predict_write pw = { .cmd = x->cmd,
                                        .ms_mode = x->ms_mode,
                                        .key_hash = x->hash,
                                        .key_len = x->key_len,
                                        .value_len = x->value_len,
                                        .flags = x->flags,
                                        .answer = x->answer };
            predict_apply(r, &pw);
        }
        predict_end(r);
        uint64_t pages = 0, want_pages = 0;
        for (size_t k = 0; k < sizeof c->want / sizeof c->want[0]; k++) {
            const struct cls_want *x = &c->want[k];
            want_pages += x->pages;
            if (!x->id)
                continue;
            const struct slab_class_counters *p = &r->predicted.cls[x->id];
            CHECK(p->total_pages == x->pages && p->used_chunks == x->used &&
                      p->mem_requested == x->requested,
                  "%s: class %u pages %llu used %llu requested %llu, want %llu %llu %llu", c->what,
                  x->id, (unsigned long long)p->total_pages, (unsigned long long)p->used_chunks,
                  (unsigned long long)p->mem_requested, (unsigned long long)x->pages,
                  (unsigned long long)x->used, (unsigned long long)x->requested);
        }
        for (uint32_t k = 1; k <= r->ladder.n_classes; k++)
            pages += r->predicted.cls[k].total_pages;
        CHECK(pages == want_pages, "%s: %llu pages in all, want %llu", c->what,
              (unsigned long long)pages, (unsigned long long)want_pages);
        CHECK(r->throwaway == c->throwaway && r->live_items == c->live,
              "%s: throwaway %llu live %llu, want %llu %llu", c->what,
              (unsigned long long)r->throwaway, (unsigned long long)r->live_items,
              (unsigned long long)c->throwaway, (unsigned long long)c->live);
        predict_free(r);
        free(r);
    }
}

/* ---- the verdict: exact unless something besides the writes changed memory ---- */

struct verdict_case {
    const char *what;
    const char *cmd2, *answer2; /* a second write after "set k 10 bytes" */
    bool ttl;
    int64_t evictions, slabs_moved, reclaimed, crawler, get_expired, flushes, curr_items;
    bool restarted;
    bool exact;
    const char *why; /* a part of why_not */
};

static const struct verdict_case verdict_cases[] = {
    { "TTL writes, nothing expired", NULL, NULL, true, 0, 0, 0, 0, 0, 0, 1, false, true, "" },
    { "a failed incr", "incr", "NOT_FOUND", false, 0, 0, 0, 0, 0, 0, 1, false, true, "" },
    { "a non-numeric incr", "incr", "CLIENT_ERROR cannot increment or decrement non-numeric value",
      false, 0, 0, 0, 0, 0, 0, 1, false, true, "" },
    { "evictions", NULL, NULL, false, 5, 0, 0, 0, 0, 0, 1, false, false, "evictions 5" },
    { "slabs moved", NULL, NULL, false, 0, 2, 0, 0, 0, 0, 1, false, false, "slabs moved 2" },
    { "reclaimed", NULL, NULL, true, 0, 0, 3, 0, 0, 0, 1, false, false, "reclaimed 3" },
    { "crawler", NULL, NULL, true, 0, 0, 0, 4, 0, 0, 1, false, false, "crawler_reclaimed 4" },
    { "expired on read", NULL, NULL, true, 0, 0, 0, 0, 1, 0, 0, false, false, "get_expired 1" },
    { "flush_all", NULL, NULL, false, 0, 0, 0, 0, 0, 1, 1, false, false, "flush_all 1" },
    { "restart", NULL, NULL, false, 0, 0, 0, 0, 0, 0, 1, true, false, "restarted" },
    { "foreign items", NULL, NULL, false, 0, 0, 0, 0, 0, 0, 3, false, false,
      "holds 2 items the run did not write" },
    { "noreply incr on a 10-byte value", "incr", "noreply", false, 0, 0, 0, 0, 0, 0, 1, false,
      false, "1 incr/decr/ma whose new size is unknown" },
    { "no answer", "set", "upstream_error", false, 0, 0, 0, 0, 0, 0, 1, false, false,
      "never answered" },
};

static void test_verdict(void)
{
    for (size_t i = 0; i < sizeof verdict_cases / sizeof verdict_cases[0]; i++) {
        const struct verdict_case *c = &verdict_cases[i];
        struct prediction *r = calloc(1, sizeof *r);
        struct slab_settings s;
        char err[200];
        slab_settings_default(&s);
        if (!r || predict_begin(r, 1, &s, err, sizeof err)) {
            CHECK(0, "%s: predict_begin", c->what);
            free(r);
            continue;
        }
        struct predict_write set = { .cmd = "set",
                                     .key_hash = 7,
                                     .key_len = 1,
                                     .value_len = 10,
                                     .answer = "STORED",
                                     .has_ttl = c->ttl };
        predict_apply(r, &set);
        if (c->cmd2) {
            struct predict_write w2 = { .cmd = c->cmd2,
                                        .key_hash = 7,
                                        .key_len = 1,
                                        .value_len = strcmp(c->cmd2, "set") ? -1 : 20,
                                        .answer = c->answer2 };
            predict_apply(r, &w2);
        }
        struct predict_observed o = {
            .chunk_size = 96, .used_chunks = 1, .mem_requested = 70, .total_pages = 1, .number = 1
        };
        predict_observe(r, 1, &o);
        r->evictions = c->evictions;
        r->slabs_moved = c->slabs_moved;
        r->reclaimed = c->reclaimed;
        r->crawler_reclaimed = c->crawler;
        r->get_expired = c->get_expired;
        r->flushes = c->flushes;
        r->restarted = c->restarted;
        r->observed_curr_items = c->curr_items;
        predict_end(r);
        CHECK(r->exact_expected == c->exact, "%s: exact_expected %d, want %d (%s)", c->what,
              r->exact_expected, c->exact, r->why_not);
        if (c->why[0])
            CHECK(strstr(r->why_not, c->why) != NULL, "%s: why_not \"%s\" lacks \"%s\"", c->what,
                  r->why_not, c->why);
        if (c->exact)
            CHECK(predict_mismatches(r) == 0, "%s: %d classes differ", c->what,
                  predict_mismatches(r));
        predict_free(r);
        free(r);
    }
}

/* ---- a -o slab_chunk_max in the other unit, before memcached starts ---- */

static void test_unit_suspect(void)
{
    static const struct {
        const char *version, *args;
        bool suspect;
        const char *hint;
    } cases[] = {
        { "1.6.18", "-m 64 -o slab_chunk_max=16384", false, "" },
        { "1.6.18", "-m 64 -o slab_chunk_max=16", true, "slab_chunk_max=16384" },
        { "1.6.23", "-o modern,slab_chunk_max=512", true, "BYTES" },
        { "1.6.24", "-m 64 -o slab_chunk_max=16384", true, "slab_chunk_max=16)" },
        { "1.6.45", "-o slab_chunk_max=16", false, "" },
        { "1.6.45", "-o slab_chunk_max=1024", false, "" },
        { "1.6.45", "-m 64 -f 1.08", false, "" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char msg[256] = "";
        bool got =
            mcserver_chunk_max_unit_suspect(cases[i].version, cases[i].args, msg, sizeof msg);
        CHECK(got == cases[i].suspect && strstr(msg, cases[i].hint),
              "memcached %s \"%s\": suspect %d, want %d (\"%s\")", cases[i].version, cases[i].args,
              got, cases[i].suspect, msg);
    }
}

/* A watch run (issue 22): flags unknown, class_id memcached's clsid. Default
 * ladder: class 2 is 120 bytes; key 10, CAS on: ntotal = 69 + value. */
static void test_watch(void)
{
    static const struct {
        const char *what;
        int64_t value_len;
        uint32_t clsid;
        uint64_t same, inferred, differs, assumed;
        uint32_t cls;           /* the class the item is counted in */
        uint64_t mem_requested; /* of that class */
    } cases[] = {
        { "exactly the chunk, flags 0", 51, 2, 1, 0, 0, 1, 2, 120 },
        { "exactly the chunk, flags: one class up", 51, 3, 0, 1, 0, 0, 3, 124 },
        { "one under, flags: one class up", 50, 3, 0, 1, 0, 0, 3, 123 },
        { "one over: class 3 either way (flags unseen)", 52, 3, 1, 0, 0, 1, 3, 121 },
        { "a class no flags give", 51, 5, 0, 0, 1, 1, 2, 120 },
        { "no clsid logged", 51, 0, 0, 0, 0, 1, 2, 120 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct slab_settings s;
        struct prediction *r = calloc(1, sizeof *r);
        char err[256];
        slab_settings_default(&s);
        CHECK_INT(predict_begin(r, 1, &s, err, sizeof err), 0);
        r->watch = true;
        struct predict_write w = { .cmd = "set",
                                   .key_hash = 42,
                                   .key_len = 10,
                                   .value_len = cases[i].value_len,
                                   .answer = "STORED",
                                   .class_id = cases[i].clsid,
                                   .flags_unknown = true };
        predict_apply(r, &w);
        CHECK_INT(predict_end(r), 0);
        CHECK(r->class_same == cases[i].same && r->flags_inferred == cases[i].inferred &&
                  r->class_differs == cases[i].differs && r->flags_assumed == cases[i].assumed,
              "%s: same %llu inferred %llu differs %llu assumed %llu", cases[i].what,
              (unsigned long long)r->class_same, (unsigned long long)r->flags_inferred,
              (unsigned long long)r->class_differs, (unsigned long long)r->flags_assumed);
        CHECK(r->predicted.cls[cases[i].cls].used_chunks == 1 &&
                  r->predicted.cls[cases[i].cls].mem_requested == cases[i].mem_requested,
              "%s: class %u used %llu requested %llu", cases[i].what, cases[i].cls,
              (unsigned long long)r->predicted.cls[cases[i].cls].used_chunks,
              (unsigned long long)r->predicted.cls[cases[i].cls].mem_requested);
        /* memcached's own counters 4 bytes over: within the flags' bound
         * (the item may carry flags), 8 over: a difference */
        for (int over = 0; over <= 8; over += 4) {
            struct predict_observed o = { .chunk_size = 0,
                                          .used_chunks = 1,
                                          .mem_requested = (int64_t)cases[i].mem_requested + over,
                                          .total_pages = 1 };
            memset(r->observed, 0, sizeof r->observed);
            predict_observe(r, cases[i].cls, &o);
            uint64_t flagged = 0;
            int fc = predict_flag_classes(r, &flagged);
            CHECK(predict_mismatches(r) == (over == 8) && fc == (over == 4) &&
                      flagged == (over == 4),
                  "%s, observed +%d: mismatches %d, flag classes %d (%llu items)", cases[i].what,
                  over, predict_mismatches(r), fc, (unsigned long long)flagged);
        }
        predict_free(r);
        free(r);
    }
}

int main(void)
{
    test_watch();
    test_unit_suspect();
    test_ladder_choose();
    test_apply();
    test_verdict();
    return check_done("test_predict");
}
