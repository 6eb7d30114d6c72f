/* test_sample: --sample-keys -- which keys are kept (core/sample.h, pinned
 * to values computed independently in Python, which the integration test
 * uses too), the scaling and its stated error, and a sampled prediction
 * (model/predict.h) checked against the full population's counters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/keyfmt.h"
#include "core/sample.h"
#include "model/predict.h"

#include "check.h"

static void test_parse(void)
{
    static const struct {
        const char *text;
        int rc;
        uint32_t n;
    } cases[] = {
        { "1/10", 0, 10 },
        { "1/100", 0, 100 },
        { "10", 0, 10 },
        { "1/1", 0, 1 },
        { "off", 0, 1 },
        { "all", 0, 1 },
        { "1/0", -1, 0 },
        { "0", -1, 0 },
        { "1/", -1, 0 },
        { "", -1, 0 },
        { "1/10x", -1, 0 },
        { "2/10", -1, 0 },
        { "1/-3", -1, 0 },
        { "1/1000001", -1, 0 },
        { "1/1000000", 0, 1000000 },
        { "none", 0, SAMPLE_NONE },
        { "None", -1, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t n = 0;
        int rc = sample_parse(cases[i].text, &n);
        CHECK(rc == cases[i].rc, "sample_parse(\"%s\") = %d, want %d", cases[i].text, rc,
              cases[i].rc);
        if (!rc && !cases[i].rc)
            CHECK_INT(n, cases[i].n);
    }
}

static void test_keep(void)
{
    /* mix(fnv1a(key)) % N, computed in Python (tests/integration/test_sampling.py) */
    static const struct {
        const char *key;
        unsigned mod10, mod100;
    } pinned[] = { { "a", 6, 36 }, { "key:1", 7, 37 }, { "e1w:000001", 9, 49 } };
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
        uint64_t h = keyfmt_hash(pinned[i].key, strlen(pinned[i].key));
        CHECK(sample_keep(h, 10) == (pinned[i].mod10 == 0), "%s under 1/10", pinned[i].key);
        CHECK(sample_keep(h, 100) == (pinned[i].mod100 == 0), "%s under 1/100", pinned[i].key);
    }
    CHECK_TRUE(sample_keep(0, 0) && sample_keep(12345, 1));
    /* none: not even a key every 1/N would keep */
    CHECK_TRUE(!sample_keep(0, SAMPLE_NONE) && !sample_keep(12345, SAMPLE_NONE));
    /* sequential keys: 10,037 of 100,000 kept under 1/10 (Python, the same keys) */
    char key[32];
    unsigned kept = 0;
    for (int i = 0; i < 100000; i++) {
        int len = snprintf(key, sizeof key, "k:%d", i);
        kept += sample_keep(keyfmt_hash(key, (size_t)len), 10);
    }
    CHECK_INT(kept, 10037);
}

static void test_error(void)
{
    CHECK(sample_scale(17, 10) == 170, "scale");
    CHECK(sample_scale(17, 1) == 17, "scale 1/1");
    CHECK(sample_error(100, 1, 1) == 0, "no error unsampled");
    /* 3 sqrt(10 * 9 * 100) = 284.6 */
    CHECK(fabs(sample_error(100, 1, 10) - 3 * sqrt(9000.0)) < 1e-9, "count error");
    /* nothing kept: still one key's worth, 3 sqrt(N(N-1)) x_floor */
    CHECK(fabs(sample_error(0, 96, 100) - 3 * sqrt(9900.0) * 96) < 1e-6, "floor");
    /* coverage: 40 disjoint populations of 20,000 keys; each estimate of the
     * count is within its stated error in (nearly) every population */
    char key[32];
    for (uint32_t n = 10; n <= 100; n *= 10) {
        int inside = 0;
        for (int pop = 0; pop < 40; pop++) {
            unsigned kept = 0;
            for (int i = 0; i < 20000; i++) {
                int len = snprintf(key, sizeof key, "p%d:%d", pop, i);
                kept += sample_keep(keyfmt_hash(key, (size_t)len), n);
            }
            inside += fabs(sample_scale(kept, n) - 20000) <= sample_error(kept, 1, n);
        }
        CHECK(inside >= 39, "1/%u: %d of 40 estimates within the stated error", n, inside);
    }
}

/* A run of 30,000 keys of sizes 100..1100: the kept keys' writes replayed
 * with sample_keys 10, the full run's counters as memcached's: every class
 * within the stated error, and a corrupted observation outside it. */
static void test_predict_sampled(void)
{
    struct prediction *full = calloc(1, sizeof *full), *s = calloc(1, sizeof *s);
    struct slab_settings set;
    char err[200], key[32];
    slab_settings_default(&set);
    if (!full || !s || predict_begin(full, 1, &set, err, sizeof err) ||
        predict_begin(s, 2, &set, err, sizeof err)) {
        CHECK(0, "predict_begin");
        goto out;
    }
    for (int i = 0; i < 30000; i++) {
        int len = snprintf(key, sizeof key, "item:%d", i);
        struct predict_write w = { .cmd = "set",
                                   .key_hash = keyfmt_hash(key, (size_t)len),
                                   .key_len = (uint32_t)len,
                                   .value_len = 100 + (i * 7919) % 1000,
                                   .answer = "STORED" };
        predict_apply(full, &w);
        if (sample_keep(w.key_hash, 10))
            predict_apply(s, &w);
    }
    s->sample_keys = 10;
    for (uint32_t c = 1; c <= full->ladder.n_classes; c++) {
        const struct slab_class_counters *p = &full->predicted.cls[c];
        if (!p->total_pages)
            continue;
        struct predict_observed o = { .chunk_size = full->ladder.cls[c].chunk_size,
                                      .used_chunks = (int64_t)p->used_chunks,
                                      .mem_requested = (int64_t)p->mem_requested,
                                      .total_pages = (int64_t)p->total_pages,
                                      .number = (int64_t)p->used_chunks };
        predict_observe(s, c, &o);
    }
    s->observed_curr_items = 30000;
    CHECK_TRUE(predict_end(s) == 0);
    CHECK(s->exact_expected, "comparable: %s", s->why_not);
    CHECK_INT(predict_mismatches(s), 0);
    /* advise's sizes: every kept item counted 10 times */
    uint64_t total = 0;
    for (size_t k = 0; k < s->live.n; k++)
        total += s->live.count[k];
    CHECK_INT(total, 10 * s->live_items);
    struct predict_estimate e;
    predict_estimate(s, 12, &e);
    CHECK(e.used_err > 0 && e.mem_err > 0 && e.pages_err >= 1, "class 12 has an error");
    s->observed[12].used_chunks = (int64_t)(e.used_chunks + e.used_err) + 2;
    CHECK_INT(predict_mismatches(s), 1);
    predict_print(s, stdout);
out:
    if (full)
        predict_free(full);
    if (s)
        predict_free(s);
    free(full);
    free(s);
}

int main(void)
{
    test_parse();
    test_keep();
    test_error();
    test_predict_sampled();
    return check_done("test_sample");
}
