/* wagg: the write aggregates -- bands, which rows count where, and the two
 * generations (a rolled-back batch is never counted, a committed one once). */
#include <string.h>

#include "check.h"
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
    wagg_note(&g, &a, 0);
    wagg_note(&g, &b, 4);
    wagg_note(&g, &d, 4);
    /* a rolled-back batch leaves nothing counted */
    wagg_batch_done(&g, false);
    const struct wagg_ent *e = find(&g, WAGG_SIZE, 5, 110);
    CHECK(e && e->n == 0 && e->batch_n == 0, "rolled back: size");
    /* the same rows again, committed: counted once */
    wagg_note(&g, &a, 0);
    wagg_note(&g, &b, 4);
    wagg_note(&g, &d, 4);
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
    wagg_note(&g, &a, 0);
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
    for (int64_t i = 0; i < WAGG_CAP + 10; i++) {
        struct rec_row r = row(MC_CMD_SET, 0, 0, 1, i, 0, -1);
        r.latency_ns = -1;
        wagg_note(&g, &r, 0);
    }
    CHECK(g.used == WAGG_CAP - 1, "used %zu", g.used);
    CHECK(g.overflow && g.lost == (uint64_t)(WAGG_CAP + 10) - (WAGG_CAP - 2),
          "lost %llu (one slot went to the latency band)", (unsigned long long)g.lost);
    CHECK(wagg_should_flush(&g), "asks to be written");
    wagg_free(&g);
}

int main(void)
{
    test_bands();
    test_stores();
    test_generations();
    test_full_table();
    return check_done("wagg");
}
