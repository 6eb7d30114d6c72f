/* test_taps_store: issue 22's rows -- evictions and deletions
 * (REC_ROW_EVENT), a snapshot's resident items (REC_ROW_ITEM) and its
 * header (REC_JOB_SNAPSHOT) -- stored through the sink into a SQLite file
 * and read back through record/reader.h, every column: with each --keys
 * mode (full text, the key_prefixes dictionary, hash only), NULLs where a
 * deletion has no fetched/idle/TTL, sampled-out rows left out, a rolled
 * back batch leaving nothing, a snapshot header written twice (start, end)
 * kept once, record/itemrow's mapping table-tested, and retention
 * (record/retain.h, --retain) expiring the evictions and snapshots older
 * than its bound and keeping the others, and the spill (a PostgreSQL outage
 * while watching) carrying them whole. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/keyfmt.h"
#include "record/itemrow.h"
#include "record/reader.h"
#include "record/recorder.h"
#include "record/retain.h"
#include "record/row.h"
#include "record/sink.h"
#include "record/spill.h"

static void mk_row(struct rec_row *r, enum rec_row_kind kind, enum keyfmt_mode mode,
                   const char *key, uint64_t seq)
{
    memset(r, 0, sizeof *r);
    r->kind = (uint8_t)kind;
    r->seq = seq;
    r->key_len = (uint16_t)strlen(key);
    r->key_hash = keyfmt_hash(key, strlen(key));
    r->key_text_len = (int16_t)keyfmt_text(mode, key, strlen(key), r->key_text, sizeof r->key_text);
    r->latency_ns = -1;
}

/* The rows of one run: 3 events (an eviction never fetched with no TTL,
 * one fetched with a TTL, a deletion by md), one sampled out; 3 items of
 * snapshot 1 (one with flags), one sampled out. */
static size_t make_rows(struct rec_row *rows, enum keyfmt_mode mode)
{
    size_t n = 0;
    struct rec_row *r = &rows[n++];
    mk_row(r, REC_ROW_EVENT, mode, "user:1", 1);
    r->event = REC_EVENT_EVICTED;
    r->t_ns = 1764633600123456789;
    r->class_id = 5;
    r->value_len = 100;
    r->fetched = false;
    r->idle_s = 3600;
    r->exptime = -1;
    r = &rows[n++];
    mk_row(r, REC_ROW_EVENT, mode, "sess/abc", 2);
    r->event = REC_EVENT_EVICTED;
    r->t_ns = 1764633660000000000;
    r->class_id = 12;
    r->value_len = 2000;
    r->fetched = true;
    r->idle_s = 7;
    r->exptime = 86000;
    r = &rows[n++];
    mk_row(r, REC_ROW_EVENT, mode, "gone", 3);
    r->sampled_out = true;
    r->event = REC_EVENT_EVICTED;
    r = &rows[n++];
    mk_row(r, REC_ROW_EVENT, mode, "user:2", 4);
    r->event = REC_EVENT_DELETED;
    r->cmd = MC_CMD_MD;
    r->t_ns = 1764633661000000000;
    r->class_id = 6;
    r->value_len = -1; /* memcached logged no size: NULL */
    r->idle_s = 99;    /* a deletion's: not kept */
    r->fetched = true;
    r->exptime = 5;
    r = &rows[n++];
    mk_row(r, REC_ROW_ITEM, mode, "user:1", 1);
    r->snap = 1;
    r->class_id = 5;
    r->value_len = 160;
    r->exptime = -1;
    r->idle_s = 0;
    r->fetched = false;
    r = &rows[n++];
    mk_row(r, REC_ROW_ITEM, mode, "skip", 2);
    r->sampled_out = true;
    r->snap = 1;
    r = &rows[n++];
    mk_row(r, REC_ROW_ITEM, mode, "img.big", 3);
    r->snap = 1;
    r->class_id = 42;
    r->value_len = 1048600;
    r->exptime = 1234567;
    r->idle_s = 86400 * 30;
    r->fetched = true;
    r->has_flags = true;
    r->flags = 0xdeadbeef;
    r = &rows[n++];
    mk_row(r, REC_ROW_ITEM, mode, "x", 4);
    r->snap = 1;
    r->class_id = 1;
    r->value_len = 60;
    r->exptime = 0;
    r->idle_s = 12;
    return n;
}

static const char *want_key(enum keyfmt_mode mode, const char *key, char *out, size_t cap)
{
    return keyfmt_text(mode, key, strlen(key), out, cap) < 0 ? NULL : out;
}

#define CHECK_KEY(got, got_len, mode, key) \
    do { \
        char w_[64]; \
        const char *wk_ = want_key((mode), (key), w_, sizeof w_); \
        if (!wk_) \
            CHECK((got) == NULL, "key of %s: want NULL", (key)); \
        else \
            CHECK((got) && (got_len) == strlen(wk_) && !memcmp((got), wk_, (got_len)), \
                  "key of %s: got %.*s, want %s", (key), (int)(got_len), (got) ? (got) : "", wk_); \
        CHECK_INT(*(got_hash), (int64_t)keyfmt_hash((key), strlen(key))); \
    } while (0)

struct snaps {
    int n;
    struct reader_snapshot s[4];
};

static int on_snap(void *ud, const struct reader_snapshot *s)
{
    struct snaps *x = ud;
    if (x->n < 4)
        x->s[x->n] = *s;
    x->n++;
    return 0;
}

static void test_mode(enum keyfmt_mode mode)
{
    char path[] = "/tmp/test_taps_store_XXXXXX", err[1536];
    int fd = mkstemp(path);
    CHECK_TRUE(fd >= 0);
    close(fd);
    unlink(path);
    struct sink k;
    sink_init(&k, path);
    CHECK(sink_open(&k, path, err, sizeof err) == 0, "open: %s", err);
    struct sink_run run = { "taps", "-", "", keyfmt_mode_name(mode), "", "snapshot" };
    int64_t id = sink_run_begin(&k, &run, err, sizeof err);
    CHECK(id > 0, "run: %s", err);
    struct rec_row rows[16];
    size_t n = make_rows(rows, mode);
    char start[] = "{\"items\":0,\"bytes\":0,\"complete\":false}";
    char end[] = "{\"ended_ns\":1764633700000000000,\"items\":3,\"bytes\":1048820,"
                 "\"complete\":true}";
    struct rec_job j1 = {
        .kind = REC_JOB_SNAPSHOT, .t_ns = 1764633690000000000, .phase_id = 1, .text = start
    };
    struct rec_job j2 = j1;
    j2.text = end;
    /* a batch rolled back leaves nothing */
    CHECK_INT(sink_begin(&k, err, sizeof err), 0);
    for (size_t i = 0; i < n; i++)
        CHECK_INT(sink_put_row(&k, id, &rows[i], err, sizeof err), 0);
    CHECK_INT(sink_put_job(&k, id, &j1, err, sizeof err), 0);
    sink_commit(&k, id, 1, 1, err, sizeof err);
    /* the header at the start, the rows, the header at the end */
    CHECK_INT(sink_begin(&k, err, sizeof err), 0);
    CHECK_INT(sink_put_job(&k, id, &j1, err, sizeof err), 0);
    for (size_t i = 0; i < n; i++)
        CHECK(sink_put_row(&k, id, &rows[i], err, sizeof err) == 0, "row %zu: %s", i, err);
    CHECK(sink_commit(&k, id, 1, 0, err, sizeof err) == 0, "commit: %s", err);
    CHECK_INT(sink_begin(&k, err, sizeof err), 0);
    CHECK_INT(sink_put_job(&k, id, &j2, err, sizeof err), 0);
    CHECK(sink_commit(&k, id, 2, 0, err, sizeof err) == 0, "commit: %s", err);
    CHECK_INT(sink_run_end(&k, id, 0, 0, err, sizeof err), 0);
    sink_close(&k);

    struct reader *r;
    struct reader_cursor *c;
    CHECK(reader_open(&r, path, err, sizeof err) == 0, "reader: %s", err);
    if (!r)
        return;
    struct snaps sn = { 0 };
    CHECK_INT(reader_snapshots(r, id, on_snap, &sn, err, sizeof err), 0);
    CHECK_INT(sn.n, 1);
    CHECK_INT(sn.s[0].snap, 1);
    CHECK_INT(sn.s[0].t_ns, 1764633690000000000);
    CHECK_INT(sn.s[0].ended_ns, 1764633700000000000);
    CHECK_INT(sn.s[0].items, 3);
    CHECK_INT(sn.s[0].bytes, 1048820);
    CHECK_INT(sn.s[0].complete, 1);

    CHECK_INT(reader_events_count(r, id), 3);
    CHECK_INT(reader_events_open(r, id, &c, err, sizeof err), 0);
    struct reader_event ev;
    const struct rec_row *want_ev[] = { &rows[0], &rows[1], &rows[3] };
    for (size_t i = 0; i < 3; i++) {
        const struct rec_row *w = want_ev[i];
        CHECK_INT(reader_next_event(c, &ev, err, sizeof err), 1);
        CHECK_INT(ev.seq, w->seq);
        CHECK_INT(ev.t_ns, w->t_ns);
        CHECK_INT(ev.event, w->event);
        const uint64_t *got_hash = &ev.key_hash;
        const char *kt = i == 0 ? "user:1" : i == 1 ? "sess/abc" : "user:2";
        CHECK_KEY(ev.key, ev.key_text_len, mode, kt);
        CHECK_INT(ev.key_len, w->key_len);
        CHECK_INT(ev.class_id, w->class_id);
        CHECK_INT(ev.size, w->value_len);
        if (w->event == REC_EVENT_DELETED) {
            CHECK_INT(ev.fetched, -1);
            CHECK_INT(ev.idle_s, -1);
            CHECK_INT(ev.ttl_left, -2);
            CHECK_STR(ev.cmd, "md");
        } else {
            CHECK_INT(ev.fetched, w->fetched);
            CHECK_INT(ev.idle_s, w->idle_s);
            CHECK_INT(ev.ttl_left, w->exptime);
            CHECK_TRUE(ev.cmd == NULL);
        }
    }
    CHECK_INT(reader_next_event(c, &ev, err, sizeof err), 0);
    reader_cursor_close(c);

    CHECK_INT(reader_items_count(r, id, 1), 3);
    CHECK_INT(reader_items_count(r, id, 2), 0);
    CHECK_INT(reader_items_open(r, id, 1, &c, err, sizeof err), 0);
    struct reader_item it;
    const struct rec_row *want_it[] = { &rows[4], &rows[6], &rows[7] };
    const char *it_keys[] = { "user:1", "img.big", "x" };
    for (size_t i = 0; i < 3; i++) {
        const struct rec_row *w = want_it[i];
        CHECK_INT(reader_next_item(c, &it, err, sizeof err), 1);
        CHECK_INT(it.seq, w->seq);
        const uint64_t *got_hash = &it.key_hash;
        CHECK_KEY(it.key, it.key_text_len, mode, it_keys[i]);
        CHECK_INT(it.key_len, w->key_len);
        CHECK_INT(it.class_id, w->class_id);
        CHECK_INT(it.size, w->value_len);
        CHECK_INT(it.ttl_left, w->exptime);
        CHECK_INT(it.idle_s, w->idle_s);
        CHECK_INT(it.fetched, w->fetched);
        CHECK_INT(it.flags, w->has_flags ? (int64_t)w->flags : -1);
    }
    CHECK_INT(reader_next_item(c, &it, err, sizeof err), 0);
    reader_cursor_close(c);
    /* writes are not mixed with them */
    CHECK_INT(reader_writes_count(r, id), 0);
    reader_close(r);
    unlink(path);
    char side[64];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* record/itemrow's mapping, row by row. */
static void test_itemrow(void)
{
    static const struct {
        uint8_t event, cmd;
        bool fetched;
        int64_t idle, exptime, value_len;
        bool null;
        const char *want_cmd;
        int64_t want_ttl, want_size;
    } t[] = {
        { REC_EVENT_EVICTED, 0, true, 5, -1, 10, false, NULL, -1, 10 },
        { REC_EVENT_EVICTED, 0, false, 0, 300, 0, false, NULL, 300, 0 },
        { REC_EVENT_EVICTED, 0, false, 0, -7, -1, false, NULL, -1, 0 },
        { REC_EVENT_DELETED, MC_CMD_DELETE, true, 5, 9, 3, true, "delete", 0, 3 },
        { REC_EVENT_DELETED, MC_CMD_MD, false, 5, 9, 3, true, "md", 0, 3 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct rec_row r;
        struct itemrow_event e;
        mk_row(&r, REC_ROW_EVENT, KEYFMT_HASH, "k", 7);
        r.event = t[i].event;
        r.cmd = t[i].cmd;
        r.fetched = t[i].fetched;
        r.idle_s = t[i].idle;
        r.exptime = t[i].exptime;
        r.value_len = t[i].value_len;
        itemrow_event(&r, &e);
        CHECK(e.fetched.null == t[i].null && e.idle_s.null == t[i].null &&
                  e.ttl_left.null == t[i].null,
              "row %zu: NULLs", i);
        CHECK(t[i].want_cmd ? e.cmd && !strcmp(e.cmd, t[i].want_cmd) : !e.cmd, "row %zu: cmd", i);
        if (!t[i].null) {
            CHECK_INT(e.ttl_left.v, t[i].want_ttl);
            CHECK_INT(e.fetched.v, t[i].fetched);
        }
        CHECK_INT(e.size.null, t[i].value_len < 0);
        if (!e.size.null)
            CHECK_INT(e.size.v, t[i].want_size);
        CHECK_INT(e.seq, 7);
    }
    static const struct {
        const char *text;
        bool ended_null;
        int64_t ended, items, bytes, complete;
    } s[] = {
        { "{\"ended_ns\":5,\"items\":2,\"bytes\":300,\"complete\":true}", false, 5, 2, 300, 1 },
        { "{\"items\":7,\"complete\":false}", true, 0, 7, 0, 0 },
        { "{\"ended_ns\":0,\"items\":1,\"bytes\":1,\"complete\":false}", true, 0, 1, 1, 0 },
        { "{ \"complete\": true, \"bytes\": 9, \"items\": 1, \"ended_ns\": 12 }", false, 12, 1, 9,
          1 },
        { NULL, true, 0, 0, 0, 0 },
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        struct rec_job j = {
            .kind = REC_JOB_SNAPSHOT, .t_ns = 4, .phase_id = 3, .text = (char *)s[i].text
        };
        struct itemrow_snapshot o;
        itemrow_snapshot(&j, &o);
        CHECK_INT(o.snap, 3);
        CHECK_INT(o.t_ns, 4);
        CHECK(o.ended_ns.null == s[i].ended_null, "snapshot %zu: ended NULL", i);
        if (!s[i].ended_null)
            CHECK_INT(o.ended_ns.v, s[i].ended);
        CHECK_INT(o.items, s[i].items);
        CHECK_INT(o.bytes, s[i].bytes);
        CHECK_INT(o.complete, s[i].complete);
    }
}

/* --retain 50 s over 100 events one a second and two snapshots (at 10 s
 * and at 90 s, 50 items each), no write: the events before the cutoff and
 * the first snapshot with its items go, the rest stays. */
static void test_retention(void)
{
    const int64_t t0 = 1764633600000000000, s = 1000000000;
    char path[] = "/tmp/test_taps_retain_XXXXXX", err[1536];
    int fd = mkstemp(path);
    CHECK_TRUE(fd >= 0);
    close(fd);
    unlink(path);
    struct sink k;
    sink_init(&k, path);
    CHECK(sink_open(&k, path, err, sizeof err) == 0, "open: %s", err);
    struct sink_run run = { "retain", "-", "", "hash", "", "watch" };
    int64_t id = sink_run_begin(&k, &run, err, sizeof err);
    struct rec_row row;
    CHECK_INT(sink_begin(&k, err, sizeof err), 0);
    for (int i = 1; i <= 100; i++) {
        mk_row(&row, REC_ROW_EVENT, KEYFMT_HASH, "k", (uint64_t)i);
        row.event = REC_EVENT_EVICTED;
        row.t_ns = t0 + i * s;
        CHECK_INT(sink_put_row(&k, id, &row, err, sizeof err), 0);
    }
    for (int snap = 1; snap <= 2; snap++) {
        for (int i = 1; i <= 50; i++) {
            mk_row(&row, REC_ROW_ITEM, KEYFMT_HASH, "k", (uint64_t)i);
            row.snap = (uint32_t)snap;
            CHECK_INT(sink_put_row(&k, id, &row, err, sizeof err), 0);
        }
        char text[] = "{\"items\":50,\"complete\":true}";
        struct rec_job j = { .kind = REC_JOB_SNAPSHOT,
                             .t_ns = t0 + (snap == 1 ? 10 : 90) * s,
                             .phase_id = snap,
                             .text = text };
        CHECK_INT(sink_put_job(&k, id, &j, err, sizeof err), 0);
    }
    CHECK(sink_commit(&k, id, 1, 0, err, sizeof err) == 0, "commit: %s", err);
    CHECK_INT(sink_run_end(&k, id, 0, 0, err, sizeof err), 0);
    sink_close(&k);

    sqlite3 *db;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    struct retain_cfg cfg = { .retain_ns = 50 * s };
    struct retain rt;
    retain_init(&rt, &cfg);
    int steps = 0, rc;
    do { /* small steps: RETAIN_STEP_MIN rows at most each */
        rt.next_age_check_ns = 0;
        rt.plan.step_rows = 10;
        rc = retain_step(&rt, db, t0 + 100 * s, 0, err, sizeof err);
        CHECK(rc >= 0, "retain_step: %s", err);
    } while (rc == 1 && ++steps < 1000);
    CHECK_TRUE(steps > 1);
    sqlite3_close(db);
    printf("retention: %d steps, %llu rows expired\n", steps,
           (unsigned long long)rt.st.rows_expired);
    CHECK_INT(rt.st.rows_expired, 49 + 50 + 1);

    struct reader *r;
    CHECK(reader_open(&r, path, err, sizeof err) == 0, "reader: %s", err);
    if (!r)
        return;
    CHECK_INT(reader_events_count(r, id), 51);
    struct reader_cursor *c;
    struct reader_event ev;
    CHECK_INT(reader_events_open(r, id, &c, err, sizeof err), 0);
    CHECK_INT(reader_next_event(c, &ev, err, sizeof err), 1);
    CHECK_INT(ev.t_ns, t0 + 50 * s); /* the first at the cutoff is kept */
    reader_cursor_close(c);
    struct snaps sn = { 0 };
    CHECK_INT(reader_snapshots(r, id, on_snap, &sn, err, sizeof err), 0);
    CHECK_INT(sn.n, 1);
    CHECK_INT(sn.s[0].snap, 2);
    CHECK_INT(reader_items_count(r, id, 1), 0);
    CHECK_INT(reader_items_count(r, id, 2), 50);
    reader_close(r);
    unlink(path);
    char side[64];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* The spill keeps events, items and snapshot headers as they were. */
static void test_spill(void)
{
    char path[] = "/tmp/test_taps_spill_XXXXXX", err[1024];
    int fd = mkstemp(path);
    CHECK_TRUE(fd >= 0);
    close(fd);
    unlink(path);
    struct spill sp;
    CHECK(spill_open(&sp, path, SPILL_DEFAULT_MAX_BYTES, err, sizeof err) == 0, "%s", err);
    struct rec_row rows[16], back[16];
    size_t n = make_rows(rows, KEYFMT_FULL);
    char text[] = "{\"ended_ns\":9,\"items\":3,\"bytes\":7,\"complete\":true}";
    struct rec_job j = { .kind = REC_JOB_SNAPSHOT, .t_ns = 5, .phase_id = 2, .text = text };
    CHECK_INT(spill_put(&sp, 7, 1, rows, n, &j, err, sizeof err), SPILL_OK);
    CHECK_INT(sp.writes, 0); /* none of them is a write */
    struct spill_batch b;
    CHECK_INT(spill_first(&sp, &b, back, 16, err, sizeof err), 1);
    CHECK_INT(b.n, n);
    for (size_t i = 0; i < n && i < b.n; i++) {
        struct itemrow_event e1, e2;
        struct itemrow_item i1, i2;
        size_t l1, l2;
        const char *k1 = itemrow_key(&rows[i], &l1), *k2 = itemrow_key(&back[i], &l2);
        CHECK_INT(back[i].kind, rows[i].kind);
        CHECK_INT(back[i].sampled_out, rows[i].sampled_out);
        CHECK(l1 == l2 && (!k1 || !memcmp(k1, k2, l1)), "row %zu: key", i);
        if (rows[i].kind == REC_ROW_EVENT) {
            itemrow_event(&rows[i], &e1);
            itemrow_event(&back[i], &e2);
            CHECK(!memcmp(&e1, &e2, sizeof e1), "row %zu: the event", i);
        } else {
            itemrow_item(&rows[i], &i1);
            itemrow_item(&back[i], &i2);
            CHECK(!memcmp(&i1, &i2, sizeof i1), "row %zu: the item", i);
        }
    }
    CHECK(b.jobs && b.jobs->kind == REC_JOB_SNAPSHOT && b.jobs->phase_id == 2 &&
              b.jobs->t_ns == 5 && b.jobs->text && !strcmp(b.jobs->text, text),
          "the snapshot header");
    while (b.jobs) {
        struct rec_job *next = b.jobs->next;
        rec_job_free(b.jobs);
        b.jobs = next;
    }
    spill_close(&sp);
    unlink(path);
}

int main(void)
{
    test_spill();
    test_retention();
    test_itemrow();
    test_mode(KEYFMT_FULL);
    test_mode(KEYFMT_PREFIX);
    test_mode(KEYFMT_HASH);
    return check_done("test_taps_store");
}
