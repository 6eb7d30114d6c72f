/* test_capacity: the capacity model (model/capacity.h) on write sequences
 * whose outcome is computed by hand from memcached 1.6.18's rules, and the
 * first two measured on a real 1.6.18 (tests/integration/
 * test_model_advise.py checks more against a live server):
 *
 *   - one class, -m 2: 3,000 items of ntotal 1,067 (8-byte key, 1,000-byte
 *     value, CAS) in 1,184-byte chunks, 885 a page: 2 pages, 1,770 held,
 *     1,230 evicted (measured: curr_items 1770, evictions 1230,
 *     total_malloced 2097152); -m 8, 20,000 of them: 7,080 held, 12,920
 *     evicted (measured the same);
 *   - a class's first page is granted past -m (total_malloced > limit);
 *   - an overwrite evicts its own old item when that is the LRU tail;
 *   - a refused add takes a page and gives back the chunk; an add whose
 *     allocation evicted the key it names stores;
 *   - an append's piece takes a page in its own class;
 *   - a set refused as too large unlinks the key's old item;
 *   - a delete frees a chunk that the next set reuses (no new page);
 *   - a chunked item's header, full chunks and tail;
 *   - the three parts of memory add up; capacity_compare's order.
 * Prints every failing case; exits 1 if any. */
#include <stdio.h>
#include <string.h>

#include "model/capacity.h"
#include "model/slab_model.h"

#include "check.h"

#define MB (1024ull * 1024ull)

static struct slab_ladder ladder_default(void)
{
    struct slab_settings s;
    struct slab_ladder l;
    slab_settings_default(&s);
    if (slab_ladder_build(&s, &l, NULL, 0) != SLAB_OK)
        memset(&l, 0, sizeof l);
    return l;
}

static void add(struct capacity_seq *s, enum capacity_kind k, uint64_t key, uint64_t vlen)
{
    CHECK(capacity_seq_add(s, key, k, 8, 0, vlen) == 0, "seq add key %llu",
          (unsigned long long)key);
}

static void run(const struct slab_ladder *l, uint64_t mem, const struct capacity_seq *s,
                struct capacity_result *r)
{
    CHECK(capacity_simulate(l, mem, s, 0, s->n, r) == 0, "simulate");
    /* memory divides into bytes held, chunk waste and page slack */
    CHECK(r->requested + r->chunk_waste + r->page_slack == r->malloced,
          "parts %llu + %llu + %llu != %llu", (unsigned long long)r->requested,
          (unsigned long long)r->chunk_waste, (unsigned long long)r->page_slack,
          (unsigned long long)r->malloced);
    CHECK(r->malloced == r->pages * MB, "malloced");
}

static void test_one_class(void)
{
    struct slab_ladder l = ladder_default();
    struct capacity_seq s;
    struct capacity_result r;
    capacity_seq_init(&s);
    for (uint64_t i = 0; i < 20000; i++)
        add(&s, CAPACITY_SET, i, 1000);
    CHECK_INT(s.n_keys, 20000);
    /* ntotal 48 + 8 + 1 + 1000 + 2 + 8 = 1067: class 12, 1184-byte chunks */
    CHECK_INT(l.cls[12].chunk_size, 1184);
    CHECK_INT(l.cls[12].perslab, 885);
    CHECK(capacity_simulate(&l, 2 * MB, &s, 0, 3000, &r) == 0, "simulate");
    CHECK_INT(r.pages, 2);
    CHECK_INT(r.items, 1770);
    CHECK_INT(r.evictions, 1230);
    CHECK_INT(r.cls[12].evictions, 1230);
    CHECK_INT(r.malloced, 2 * MB);
    CHECK_TRUE(r.limit_reached);
    CHECK_INT(r.requested, 1770ull * 1067);
    CHECK_INT(r.chunk_waste, 1770ull * (1184 - 1067));
    CHECK_INT(r.page_slack, 2 * MB - 1770ull * 1184);
    run(&l, 8 * MB, &s, &r);
    CHECK_INT(r.items, 7080);
    CHECK_INT(r.evictions, 12920);
    /* no limit: everything */
    run(&l, 0, &s, &r);
    CHECK_INT(r.items, 20000);
    CHECK_INT(r.pages, (20000 + 884) / 885);
    CHECK_INT(r.evictions, 0);
    CHECK_TRUE(!r.limit_reached);
    /* the second half alone, as a fresh server sees it */
    CHECK(capacity_simulate(&l, 0, &s, 10000, 20000, &r) == 0, "half");
    CHECK_INT(r.items, 10000);
    capacity_seq_free(&s);
}

static void test_first_page_past_limit(void)
{
    struct slab_ladder l = ladder_default();
    struct capacity_seq s;
    struct capacity_result r;
    capacity_seq_init(&s);
    for (uint64_t i = 0; i < 2000; i++)
        add(&s, CAPACITY_SET, i, 1000);
    add(&s, CAPACITY_SET, 5000, 10); /* class 1: its first page, past -m 1 */
    run(&l, 1 * MB, &s, &r);
    CHECK_INT(r.pages, 2);
    CHECK_INT(r.malloced, 2 * MB);
    CHECK_INT(r.cls[1].pages, 1);
    CHECK_INT(r.cls[12].pages, 1);
    CHECK_INT(r.items, 885 + 1);
    CHECK_INT(r.classes_used, 2);
    capacity_seq_free(&s);
}

static void test_overwrite_and_add(void)
{
    struct slab_ladder l = ladder_default();
    struct capacity_seq s;
    struct capacity_result r;
    capacity_seq_init(&s);
    for (uint64_t i = 0; i < 885; i++)
        add(&s, CAPACITY_SET, i, 1000); /* one full page */
    add(&s, CAPACITY_SET, 0, 1000);     /* key 0 is the tail: evicted by its own new item */
    run(&l, 1 * MB, &s, &r);
    CHECK_INT(r.items, 885);
    CHECK_INT(r.evictions, 1);
    add(&s, CAPACITY_SET, 885, 1000); /* evicts key 1 */
    add(&s, CAPACITY_ADD, 2, 1000);   /* evicts key 2 (tail), then the add stores */
    run(&l, 1 * MB, &s, &r);
    CHECK_INT(r.items, 885);
    CHECK_INT(r.evictions, 3);
    CHECK_INT(r.not_stored, 0);
    add(&s, CAPACITY_ADD, 885, 1000); /* evicts key 3, key 885 is there: NOT_STORED */
    run(&l, 1 * MB, &s, &r);
    CHECK_INT(r.items, 884);
    CHECK_INT(r.evictions, 4);
    CHECK_INT(r.not_stored, 1);
    add(&s, CAPACITY_REPLACE, 3, 1000); /* key 3 is gone: NOT_STORED, a free chunk taken back */
    add(&s, CAPACITY_SET, 4000, 1000);  /* into the free chunk: nothing evicted */
    run(&l, 1 * MB, &s, &r);
    CHECK_INT(r.items, 885);
    CHECK_INT(r.evictions, 4);
    CHECK_INT(r.not_stored, 2);
    capacity_seq_free(&s);
}

static void test_throwaway_pages(void)
{
    struct slab_ladder l = ladder_default();
    struct capacity_seq s;
    struct capacity_result r;
    capacity_seq_init(&s);
    add(&s, CAPACITY_SET, 1, 5000);
    add(&s, CAPACITY_PREPEND, 1, 10); /* the piece takes a page in class 1 */
    add(&s, CAPACITY_ADD, 1, 300);    /* refused, but its class got a page */
    add(&s, CAPACITY_APPEND, 9, 10);  /* no such key: NOT_STORED, the page stays */
    run(&l, 0, &s, &r);
    CHECK_INT(r.items, 1);
    CHECK_INT(r.cls[1].pages, 1);
    CHECK_INT(r.cls[1].used_chunks, 0);
    CHECK_INT(r.not_stored, 2);
    /* the prepended item: value 5010; the first one (5000) and the refused
     * add (300) left a page in their classes too */
    struct slab_item_layout it, first, refused;
    slab_item_layout(&l, 8, 0, 5010, &it);
    slab_item_layout(&l, 8, 0, 5000, &first);
    slab_item_layout(&l, 8, 0, 300, &refused);
    CHECK_INT(r.classes_used, 3 + (it.lru_class != first.lru_class)); /* and class 1 */
    CHECK_INT(r.cls[refused.lru_class].pages, 1);
    CHECK_INT(r.cls[first.lru_class].pages, 1);
    CHECK_INT(r.cls[it.lru_class].items, 1);
    CHECK_INT(r.requested, it.ntotal);
    capacity_seq_free(&s);
}

static void test_too_large_and_delete(void)
{
    struct slab_ladder l = ladder_default();
    struct capacity_seq s;
    struct capacity_result r;
    capacity_seq_init(&s);
    add(&s, CAPACITY_SET, 1, 100);
    add(&s, CAPACITY_SET, 1, 2 * MB); /* over -I 1m: refused, and key 1 unlinked */
    run(&l, 0, &s, &r);
    CHECK_INT(r.items, 0);
    CHECK_INT(r.too_large, 1);
    for (uint64_t i = 0; i < 885; i++)
        add(&s, CAPACITY_SET, 10 + i, 1000);
    add(&s, CAPACITY_DELETE, 10, 0);
    add(&s, CAPACITY_SET, 2000, 1000); /* reuses key 10's chunk */
    run(&l, 0, &s, &r);
    CHECK_INT(r.cls[12].pages, 1);
    CHECK_INT(r.items, 885);
    capacity_seq_free(&s);
}

static void test_chunked(void)
{
    struct slab_ladder l = ladder_default();
    struct capacity_seq s;
    struct capacity_result r;
    struct slab_item_layout it;
    capacity_seq_init(&s);
    add(&s, CAPACITY_SET, 1, 600000);
    run(&l, 0, &s, &r);
    CHECK(slab_item_layout(&l, 8, 0, 600000, &it) == SLAB_OK && it.chunked, "chunked");
    CHECK_INT(r.items, 1);
    CHECK_INT(r.cls[l.n_classes].items, 1);
    CHECK_INT(r.cls[it.full_class].used_chunks, it.full_chunks);
    CHECK_INT(r.cls[it.hdr_class].used_chunks >= 1, 1);
    CHECK_INT(r.cls[it.tail_class].used_chunks >= 1, 1);
    uint64_t chunks = 1 + it.full_chunks + (it.tail_class ? 1 : 0);
    uint64_t used = 0;
    for (uint32_t c = 1; c <= l.n_classes; c++)
        used += r.cls[c].used_chunks;
    CHECK_INT(used, chunks);
    /* a second one at -m 1: the slab_chunk_max class (2 chunks a page)
     * has its page; the new item evicts the first */
    add(&s, CAPACITY_SET, 2, 600000);
    add(&s, CAPACITY_SET, 3, 600000);
    run(&l, 3 * MB, &s, &r);
    CHECK(r.evictions >= 1, "evictions %llu", (unsigned long long)r.evictions);
    CHECK(r.items >= 1 && r.items < 3, "items %llu", (unsigned long long)r.items);
    capacity_seq_free(&s);
}

static void test_compare(void)
{
    struct capacity_result a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.items = b.items = 10;
    a.malloced = 5 * MB;
    b.malloced = 6 * MB;
    CHECK_TRUE(capacity_compare(CAPACITY_OBJ_MEMORY, &a, &b) > 0);
    CHECK_TRUE(capacity_compare(CAPACITY_OBJ_MEMORY, &b, &a) < 0);
    CHECK_TRUE(capacity_compare(CAPACITY_OBJ_ITEMS, &a, &b) == 0);
    b.items = 11;
    CHECK_TRUE(capacity_compare(CAPACITY_OBJ_ITEMS, &a, &b) < 0);
    CHECK_TRUE(capacity_compare(CAPACITY_OBJ_MEMORY, &a, &b) < 0);
    a.items = 11;
    a.requested = 100;
    CHECK_TRUE(capacity_compare(CAPACITY_OBJ_ITEMS, &a, &b) > 0);
    CHECK_STR(capacity_objective_str(CAPACITY_OBJ_MEMORY), "memory");
    CHECK_STR(capacity_objective_str(CAPACITY_OBJ_ITEMS), "items");
}

static void test_seq(void)
{
    struct capacity_seq s;
    capacity_seq_init(&s);
    for (uint64_t i = 0; i < 5000; i++)
        CHECK_TRUE(capacity_seq_add(&s, i % 1234 * 0x9e3779b97f4a7c15ULL, CAPACITY_SET, 10, 0, 5) ==
                   0);
    CHECK_INT(s.n_keys, 1234);
    CHECK_INT(s.ops[1234].key, s.ops[0].key);
    CHECK_TRUE(capacity_seq_add(&s, 1, CAPACITY_SET, 0, 0, 5) == -1);
    CHECK_TRUE(capacity_seq_add(&s, 1, CAPACITY_SET, 251, 0, 5) == -1);
    capacity_seq_free(&s);
}

int main(void)
{
    test_one_class();
    test_first_page_past_limit();
    test_overwrite_and_add();
    test_throwaway_pages();
    test_too_large_and_delete();
    test_chunked();
    test_compare();
    test_seq();
    return check_done("test_capacity");
}
