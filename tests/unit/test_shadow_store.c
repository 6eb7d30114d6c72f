/* test_shadow_store: issue 23's jobs -- a shadow's stats sample and
 * settings (REC_JOB_SAMPLE / REC_JOB_SETTINGS with a target), its events
 * (REC_JOB_SHADOW_EVENT) and per-second counts (REC_JOB_SHADOW_COUNTS) --
 * stored through the sink into a SQLite file and read back: every table,
 * the views the page reads, and record/query_targets.h's JSON with its
 * verdicts (tests/unit/shadow_gen.h's run); the primary's jobs staying in
 * its own tables; a rolled back batch leaving nothing; a shadow job without
 * its target refused; the verdict's rule table-tested; and the spill (a
 * PostgreSQL outage) carrying target and counts whole. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/jsonb.h"
#include "record/qsql.h"
#include "record/query_targets.h"
#include "record/recorder.h"
#include "record/row.h"
#include "record/sink.h"
#include "record/spill.h"
#include "shadow_gen.h"

static int64_t scalar(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
        return -2;
    }
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void text_of(sqlite3 *db, const char *sql, char *out, size_t outlen)
{
    sqlite3_stmt *st;
    out[0] = '\0';
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

static void unlink_db(const char *path)
{
    char side[128];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    snprintf(side, sizeof side, "%s.lock", path);
    unlink(side);
}

static void test_store(void)
{
    char path[] = "/tmp/test_shadow_store_XXXXXX", err[1536];
    int fd = mkstemp(path);
    CHECK_TRUE(fd >= 0);
    close(fd);
    unlink(path);
    struct sink k;
    sink_init(&k, path);
    CHECK(sink_open(&k, path, err, sizeof err) == 0, "sink_open: %s", err);
    struct sink_run run = { "shadows", "-", "test", "full", "", NULL };
    int64_t id = sink_run_begin(&k, &run, err, sizeof err);
    CHECK(id > 0, "run_begin: %s", err);
    CHECK(shadow_gen_run(&k, id, 1, err, sizeof err) == 0, "shadow_gen_run: %s", err);

    /* a batch rolled back leaves nothing of its shadow jobs */
    CHECK_INT(sink_begin(&k, err, sizeof err), 0);
    CHECK_INT(shadow_gen_event(&k, id, "-f 1.08", SHADOW_T0 + 20 * SHADOW_S, "exited", "gone", err,
                               sizeof err),
              0);
    CHECK_INT(
        shadow_gen_counts(&k, id, "-f 1.08", SHADOW_T0 / SHADOW_S + 20, 7, 7, 0, err, sizeof err),
        0);
    sink_commit(&k, id, 100, 1, err, sizeof err);
    /* a shadow's job without its target is refused, the batch with it */
    CHECK_INT(sink_begin(&k, err, sizeof err), 0);
    struct rec_job bad = { .kind = REC_JOB_SHADOW_COUNTS, .t_ns = SHADOW_T0 };
    CHECK(sink_put_job(&k, id, &bad, err, sizeof err) != 0, "a job without its target");
    CHECK(strstr(err, "without its target") != NULL, "err: %s", err);
    sink_commit(&k, id, 101, 1, err, sizeof err);
    CHECK_INT(sink_run_end(&k, id, 0, 0, err, sizeof err), 0);
    sink_close(&k);

    sqlite3 *db;
    CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    /* the primary's in its own tables, the shadows' in theirs */
    CHECK_INT(scalar(db, "SELECT count(*) FROM samples"), 11);
    CHECK_INT(scalar(db, "SELECT count(*) FROM sample_classes"), 33);
    CHECK_INT(scalar(db, "SELECT count(*) FROM settings"), 1);
    CHECK_INT(scalar(db, "SELECT count(*) FROM shadow_samples"), 20);
    CHECK_INT(scalar(db, "SELECT count(*) FROM shadow_sample_classes"), 70);
    CHECK_INT(scalar(db, "SELECT count(*) FROM shadow_settings"), 2);
    CHECK_INT(scalar(db, "SELECT count(*) FROM shadow_events"), 7);
    CHECK_INT(scalar(db, "SELECT count(*) FROM shadow_counts"), 20);
    CHECK_INT(scalar(db, "SELECT count(*) FROM shadow_events WHERE event = 'exited'"), 0);
    /* every field of one of each */
    CHECK_INT(scalar(db, "SELECT sum(final) FROM shadow_samples WHERE target = '-f 1.08'"), 1);
    CHECK_INT(scalar(db, "SELECT json_extract(stats, '$.get_hits') FROM shadow_samples"
                         " WHERE target = '-f 1.08' AND final = 1"),
              1080);
    CHECK_INT(scalar(db, "SELECT json_extract(settings, '$.maxbytes') FROM shadow_settings"
                         " WHERE target = '1/4 -f 1.08'"),
              16777216);
    char text[512];
    text_of(db, "SELECT detail FROM shadow_events WHERE event = 'lost'", text, sizeof text);
    CHECK_STR(text, "connection reset by peer");
    text_of(db, "SELECT version FROM shadow_settings LIMIT 1", text, sizeof text);
    CHECK_STR(text, "1.6.18");
    CHECK_INT(scalar(db, "SELECT reads + 100 * hits + 10000 * misses + 1000000 * fills"
                         " FROM shadow_counts WHERE target = '1/4 -f 1.08' AND second = "
                         "1764633605"),
              50 + 0 + 10000 * 50 + 1000000 * 50);
    CHECK_INT(scalar(db, "SELECT writes * 1000000 + stored * 10000 + not_stored * 100 + others"
                         " + 10 * errors FROM shadow_counts WHERE target = '-f 1.08' AND"
                         " second = 1764633601"),
              31 * 1000000 + 30 * 10000 + 100 + 2);
    CHECK_INT(scalar(db, "SELECT sum(dropped) FROM shadow_counts"), 50);
    /* the views */
    CHECK_INT(scalar(db, "SELECT count(*) FROM targets"), 4);
    CHECK_INT(scalar(db, "SELECT restarts FROM targets WHERE target = '1/4 -f 1.08'"), 1);
    CHECK_INT(scalar(db, "SELECT data_since_ns FROM targets WHERE target = '1/4 -f 1.08'"),
              SHADOW_T0 + 5 * SHADOW_S + SHADOW_S / 2);
    CHECK_INT(scalar(db, "SELECT get_hits FROM target_totals WHERE target = '1/4 -f 1.08'"), 160);
    CHECK_INT(scalar(db, "SELECT classes FROM target_totals WHERE target = '-f 1.08'"), 5);
    CHECK_INT(scalar(db, "SELECT count(*) FROM target_compare"), 8);
    CHECK_INT(scalar(db, "SELECT sum(reads) FROM target_reads_per_second"
                         " WHERE target = 'primary'"),
              11 * 150);

    /* the page's JSON and its verdicts */
    struct qsql_db q = { .lite = db };
    struct buf b;
    buf_init(&b, JSONB_MAX);
    CHECK_INT(query_targets_json(&q, id, &b, err, sizeof err), QT_OK);
    CHECK_TRUE(!b.failed && b.data);
    if (b.data) {
        CHECK(strstr(b.data, "\"verdict\":\"-f 1.08: +13.3 points hit ratio, same waste, 2 more "
                             "classes, 3.0 fewer evictions/s\"") != NULL,
              "%s", b.data);
        CHECK(strstr(b.data, "(1/4 sample, memory \xc3\x97"
                             "4)\"") != NULL,
              "the sampled shadow's verdict says so");
        CHECK(strstr(b.data, "\"verdict\":\"127.0.0.1:1: no sample yet\"") != NULL,
              "the upstream never sampled");
        CHECK(!strncmp(b.data, "{\"run\":", 7), "%.40s", b.data);
        CHECK(strstr(b.data, "{\"target\":\"primary\",\"kind\":\"primary\",\"flags\":\"-m 64\","
                             "\"sample_n\":1,\"memory_mb\":64,") != NULL,
              "the primary first");
    }
    buf_free(&b);
    /* a run without shadows: no targets */
    buf_init(&b, JSONB_MAX);
    CHECK_INT(query_targets_json(&q, id + 100, &b, err, sizeof err), QT_OK);
    CHECK_STR(b.data, "{\"run\":101,\"targets\":[]}\n");
    buf_free(&b);
    sqlite3_close(db);
    unlink_db(path);
}

static void test_verdict(void)
{
    static const struct {
        const char *name;
        int64_t n;
        struct query_targets_side s, p;
        const char *want;
    } cases[] = {
        { "-f 1.08",
          1,
          { 0.821, 1000000, 41, 0.5 },
          { 0.80, 4355000, 0, 1.0 },
          "-f 1.08: +2.1 points hit ratio, 3.2 MB less waste, 41 more classes, 0.5 fewer "
          "evictions/s" },
        { "1/64 -f 1.08",
          64,
          { 0.75, 100000, 20, 0.01 },
          { 0.80, 1048576, 30, 0 },
          "1/64 -f 1.08: -5.0 points hit ratio, 5.1 MB more waste, 10 fewer classes, 0.6 more "
          "evictions/s (1/64 sample, memory \xc3\x97"
          "64)" },
        { "-o slab_automove=2",
          1,
          { -1, 5000, 12, 0 },
          { 0.5, 5000, 12, 0 },
          "-o slab_automove=2: no reads yet, same waste, same classes" },
        { "h:1",
          1,
          { 0.5, 0, 1, -1 },
          { -1, 0, 1, 2 },
          "h:1: hit ratio 50.0 %, same waste, same "
          "classes" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[512];
        query_targets_verdict(line, sizeof line, cases[i].name, cases[i].n, &cases[i].s,
                              &cases[i].p);
        CHECK_STR(line, cases[i].want);
    }
    /* cut short, never overrun */
    char small[16];
    query_targets_verdict(small, sizeof small, cases[0].name, 1, &cases[0].s, &cases[0].p);
    CHECK_INT(strlen(small), sizeof small - 1);
}

/* The spill keeps a shadow's target and counts, and the rest of each job. */
static void test_spill(void)
{
    char path[] = "/tmp/test_shadow_spill_XXXXXX", err[1024];
    int fd = mkstemp(path);
    CHECK_TRUE(fd >= 0);
    close(fd);
    unlink(path);
    struct spill sp;
    CHECK(spill_open(&sp, path, SPILL_DEFAULT_MAX_BYTES, err, sizeof err) == 0, "%s", err);
    char stats[] = "{\"get_hits\":1}", cls[] = "{\"chunk_size\":96}", *cj[1] = { cls };
    unsigned ids[1] = { 3 };
    char t1[] = "1/64 -f 1.08", t2[] = "-o slab_automove=2", t3[] = "unix:/tmp/mc.sock";
    char ev[] = "restarted", detail[] = "{\"exit\":\"signal 9\"}", set[] = "{\"maxbytes\":1}";
    char ver[] = "1.6.18";
    struct rec_job jobs[5] = {
        { .kind = REC_JOB_SAMPLE,
          .t_ns = 11,
          .final = true,
          .text = stats,
          .nclasses = 1,
          .class_ids = ids,
          .class_json = cj,
          .target = t1 },
        { .kind = REC_JOB_SETTINGS, .t_ns = 12, .text = set, .version = ver, .target = t2 },
        { .kind = REC_JOB_SHADOW_EVENT, .t_ns = 13, .text = ev, .version = detail, .target = t3 },
        { .kind = REC_JOB_SHADOW_COUNTS, .t_ns = 14000000000, .target = t1 },
        { .kind = REC_JOB_SAMPLE, .t_ns = 15, .text = stats }, /* the primary's */
    };
    for (int i = 0; i < REC_SHADOW_NCOUNTS; i++)
        jobs[3].counts[i] = (int64_t)(i + 1) * 1000003 - (i == 9 ? INT64_C(1) << 40 : 0);
    for (int i = 0; i < 4; i++)
        jobs[i].next = &jobs[i + 1];
    CHECK_INT(spill_put(&sp, 7, 1, NULL, 0, jobs, err, sizeof err), SPILL_OK);
    struct spill_batch b;
    struct rec_row rows[1];
    CHECK_INT(spill_first(&sp, &b, rows, 1, err, sizeof err), 1);
    CHECK_INT(b.n, 0);
    const struct rec_job *j = b.jobs;
    for (int i = 0; i < 5; i++, j = j ? j->next : NULL) {
        CHECK(j != NULL, "job %d back", i);
        if (!j)
            break;
        CHECK_INT(j->kind, jobs[i].kind);
        CHECK_INT(j->t_ns, jobs[i].t_ns);
        CHECK_INT(j->final, jobs[i].final);
        if (jobs[i].target)
            CHECK_STR(j->target, jobs[i].target);
        else
            CHECK_TRUE(j->target == NULL);
        if (jobs[i].text)
            CHECK_STR(j->text, jobs[i].text);
        else
            CHECK_TRUE(j->text == NULL);
        if (jobs[i].version)
            CHECK_STR(j->version, jobs[i].version);
        else
            CHECK_TRUE(j->version == NULL);
        CHECK_INT(j->nclasses, jobs[i].nclasses);
        CHECK(!memcmp(j->counts, jobs[i].counts, sizeof j->counts), "job %d: counts", i);
    }
    CHECK_TRUE(j == NULL);
    CHECK(b.jobs && b.jobs->nclasses == 1 && b.jobs->class_ids[0] == 3 &&
              !strcmp(b.jobs->class_json[0], cls),
          "the sample's class");
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
    test_verdict();
    test_store();
    return check_done("test_shadow_store");
}
