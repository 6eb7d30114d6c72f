/* sink_twin: the same recorded rows into either store, for
 * tests/integration/test_pgstore.py to compare what each keeps of them (the
 * aggregates, row for row).
 *
 *   sink_twin DB ROWS [--sample 1/N|none] [--node NAME] [--keys full|prefix]
 *
 * DB: a SQLite file or a postgresql:// URI (record/sink.h). ROWS rows, a
 * function of their number alone, in batches of 1,000 committed with their
 * batch number as the recorder does: four writes in five (set mostly; add,
 * replace, cas, append, ms in several modes, delete, incr, touch; values
 * from empty to 300 KB, so item sizes fall in exact and in bucketed cells;
 * flags or none; slab classes; stored, refused, failed and numeric
 * answers; latencies or none), one read in five (get hits with their class,
 * misses on keys written before or never), over three minutes from a fixed
 * time. --sample keeps the rows of the keys core/sample.h keeps; the others
 * go as sampled_out, as the proxy sends them. --keys: what of a key is
 * recorded (default full; prefix: 50 prefixes, agg_prefixes). Prints
 * "sink_twin: run ID".
 *
 * --taps N (issue 22): then N evictions and deletions (REC_ROW_EVENT: one
 * in four a deletion by delete or md) and two snapshots (REC_JOB_SNAPSHOT
 * headers) of N resident items between them (REC_ROW_ITEM), after a stats
 * sample whose classes give their chunk sizes, keys as --keys says and
 * --sample keeps, in batches as above.
 *
 * --shadows (issue 23): then the shadows' run of tests/unit/shadow_gen.h
 * (the primary's samples, settings and read counts, three shadows' events,
 * samples, settings and counts), in batches as above.
 *
 *   sink_twin DB --targets RUN
 *
 * Prints record/query_targets.h's JSON of run RUN: the same from either
 * store.
 *
 *   sink_twin DB --dump RUN
 *
 * Prints what record/reader.h reads of run RUN's snapshots, snapshot items
 * and item events, one line each, every field: the same from either store. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonb.h"
#include "core/keyfmt.h"
#include "core/sample.h"
#include "record/qsql.h"
#include "record/query_targets.h"
#include "record/reader.h"
#include "record/row.h"
#include "record/sink.h"
#include "shadow_gen.h"

#define BATCH 1000
#define T0 INT64_C(1764633600000000000) /* 2025-12-02 00:00 UTC */

static uint64_t mix(uint64_t x) /* splitmix64 */
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

struct twin {
    uint64_t wseq, rseq;
    uint32_t sample;
    enum keyfmt_mode keys;
};

static void gen_row(struct twin *tw, uint64_t i, struct rec_row *row)
{
    static const struct {
        enum mc_cmd cmd;
        char mode;
    } cmds[] = { { MC_CMD_SET, 0 },    { MC_CMD_SET, 0 },    { MC_CMD_SET, 0 },
                 { MC_CMD_SET, 0 },    { MC_CMD_ADD, 0 },    { MC_CMD_REPLACE, 0 },
                 { MC_CMD_CAS, 0 },    { MC_CMD_APPEND, 0 }, { MC_CMD_MS, 0 },
                 { MC_CMD_MS, 'S' },   { MC_CMD_MS, 'A' },   { MC_CMD_MS, 'E' },
                 { MC_CMD_DELETE, 0 }, { MC_CMD_INCR, 0 },   { MC_CMD_TOUCH, 0 },
                 { MC_CMD_SET, 0 } };
    static const char *const answers[] = { "STORED",    "STORED",
                                           "STORED",    "noreply",
                                           "HD",        "NOT_STORED",
                                           "EXISTS",    "SERVER_ERROR out of memory storing object",
                                           "NOT_FOUND", "" };
    uint64_t h = mix(i);
    char key[64];
    int klen = snprintf(key, sizeof key, "k%u:%u", (unsigned)(h % 50), (unsigned)((h >> 8) % 3000));
    memset(row, 0, sizeof *row);
    row->key_hash = keyfmt_hash(key, (size_t)klen);
    row->key_len = (uint16_t)klen;
    row->key_text_len =
        (int16_t)keyfmt_text(tw->keys, key, (size_t)klen, row->key_text, sizeof row->key_text);
    row->conn_id = (uint32_t)(h >> 60) + 1;
    row->t_ns = T0 + (int64_t)i * 9000000; /* 9 ms apart */
    row->sampled_out = !sample_keep(row->key_hash, tw->sample);
    if (i % 5 == 0) { /* a read */
        row->kind = REC_ROW_READ;
        row->cmd = MC_CMD_GET;
        row->seq = ++tw->rseq;
        row->after_write = tw->wseq;
        row->hit = (h >> 13) % 3 != 0;
        row->value_len = row->hit ? (int64_t)((h >> 20) % 2000) : -1;
        row->has_flags = row->hit;
        row->class_id = row->hit ? (uint32_t)((h >> 30) % 30) + 1 : 0;
        row->latency_ns = -1;
        return;
    }
    unsigned c = (unsigned)((h >> 16) % (sizeof cmds / sizeof cmds[0]));
    row->kind = REC_ROW_WRITE;
    row->cmd = (uint8_t)cmds[c].cmd;
    row->ms_mode = cmds[c].mode;
    row->seq = ++tw->wseq;
    bool stores =
        cmds[c].cmd != MC_CMD_DELETE && cmds[c].cmd != MC_CMD_INCR && cmds[c].cmd != MC_CMD_TOUCH;
    row->value_len = -1;
    if (stores) {
        uint64_t v = (h >> 24) % 100;
        row->value_len = v < 3    ? 0
                         : v < 90 ? (int64_t)((h >> 32) % 3000)
                                  : (int64_t)((h >> 32) % 300000);
        row->has_flags = true;
        row->flags = (h >> 5) & 1 ? (uint32_t)((h >> 40) & 0xff) : 0;
        row->has_exptime = true;
        row->exptime = (int64_t)((h >> 48) % 3) * 60;
        row->class_id = (uint32_t)((h >> 30) % 40) + 1;
    }
    const char *a = answers[(h >> 52) % (sizeof answers / sizeof answers[0])];
    if (cmds[c].cmd == MC_CMD_INCR)
        a = (h >> 7) & 1 ? "42" : "NOT_FOUND";
    else if (cmds[c].cmd == MC_CMD_DELETE)
        a = (h >> 7) & 1 ? "DELETED" : "NOT_FOUND";
    else if (cmds[c].cmd == MC_CMD_TOUCH)
        a = "TOUCHED";
    snprintf(row->answer, sizeof row->answer, "%s", *a ? a : "no_answer");
    row->latency_ns = (h >> 9) % 17 ? (int64_t)((h >> 36) % 3000000) : -1;
}

/* --- issue 22: evictions, deletions, snapshots --------------------------------------- */

#define TAP_CLASSES 40

static int64_t tap_chunk(unsigned c) /* a -f 1.25 ladder from 96 bytes */
{
    double v = 96;
    for (unsigned i = 1; i < c; i++)
        v *= 1.25;
    return ((int64_t)v + 7) / 8 * 8;
}

/* Tap row i of n (1..n: events; n+1..2n: items of snapshot 1 then 2). */
static void gen_tap(struct twin *tw, uint64_t i, uint64_t n, struct rec_row *row)
{
    uint64_t h = mix(i ^ 0x5eed);
    char key[64];
    int klen = snprintf(key, sizeof key, (h >> 3) % 7 ? "e%u:%u" : "nodelim%u_%u",
                        (unsigned)(h % 20), (unsigned)((h >> 8) % 5000));
    memset(row, 0, sizeof *row);
    row->key_hash = keyfmt_hash(key, (size_t)klen);
    row->key_len = (uint16_t)klen;
    row->key_text_len =
        (int16_t)keyfmt_text(tw->keys, key, (size_t)klen, row->key_text, sizeof row->key_text);
    row->sampled_out = !sample_keep(row->key_hash, tw->sample);
    row->class_id = (uint32_t)((h >> 16) % TAP_CLASSES) + 1;
    row->t_ns = T0 + (int64_t)i * 7000000;
    row->latency_ns = -1;
    row->value_len = tap_chunk(row->class_id) - 60 - (int64_t)((h >> 24) % 16);
    if (row->value_len < 0)
        row->value_len = 0;
    row->exptime = (h >> 32) % 3 ? (int64_t)((h >> 34) % 100000) : -1;
    row->idle_s = (int64_t)((h >> 40) % 200000);
    row->fetched = (h >> 58) & 1;
    if (i <= n) {
        row->kind = REC_ROW_EVENT;
        row->seq = i;
        row->event = (h >> 60) % 4 ? REC_EVENT_EVICTED : REC_EVENT_DELETED;
        if (row->event == REC_EVENT_DELETED) {
            row->cmd = (uint8_t)((h >> 62) & 1 ? MC_CMD_MD : MC_CMD_DELETE);
            if ((h >> 57) & 1)
                row->value_len = -1; /* memcached logged no size */
        }
        return;
    }
    uint64_t k = i - n; /* 1..n */
    row->kind = REC_ROW_ITEM;
    row->snap = k <= n / 2 ? 1 : 2;
    row->seq = k <= n / 2 ? k : k - n / 2;
    row->value_len = tap_chunk(row->class_id) - (int64_t)((h >> 24) % 20);
    row->has_flags = (h >> 7) % 5 == 0; /* metadump says none; a source may */
    row->flags = row->has_flags ? (uint32_t)(h >> 44) & 0xffff : 0;
}

/* A stats sample with every class's chunk size, and the two snapshot headers. */
static int put_tap_jobs(struct sink *k, int64_t id, uint64_t n, int when, char *err, size_t errlen)
{
    struct rec_job j = { .kind = REC_JOB_SNAPSHOT };
    char text[256];
    if (when == 0) {
        char *json[TAP_CLASSES];
        unsigned ids[TAP_CLASSES];
        char stats[] = "{\"curr_items\":1,\"evictions\":2}";
        struct rec_job s = { .kind = REC_JOB_SAMPLE, .t_ns = T0, .text = stats };
        char buf[TAP_CLASSES][96];
        for (unsigned c = 1; c <= TAP_CLASSES; c++) {
            snprintf(buf[c - 1], sizeof buf[c - 1],
                     "{\"chunk_size\":%lld,\"used_chunks\":%u,\"total_pages\":1}",
                     (long long)tap_chunk(c), c);
            json[c - 1] = buf[c - 1];
            ids[c - 1] = c;
        }
        s.nclasses = TAP_CLASSES;
        s.class_ids = ids;
        s.class_json = json;
        return sink_put_job(k, id, &s, err, errlen);
    }
    /* snapshot 1 ends complete, snapshot 2 cut short (no END) */
    j.phase_id = when;
    j.t_ns = T0 + (int64_t)(n + (when == 1 ? 1 : n / 2)) * 7000000;
    snprintf(text, sizeof text,
             "{\"ended_ns\":%lld,\"items\":%llu,\"bytes\":%llu,"
             "\"complete\":%s}",
             (long long)(j.t_ns + 5000000000), (unsigned long long)(n / 2),
             (unsigned long long)(n * 100), when == 1 ? "true" : "false");
    j.text = text;
    return sink_put_job(k, id, &j, err, errlen);
}

static int put_taps(struct sink *k, struct twin *tw, int64_t id, uint64_t n, int64_t batch_no,
                    char *err, size_t errlen)
{
    struct rec_row *batch = calloc(BATCH, sizeof *batch);
    int rc = batch ? 0 : -1;
    if (!batch)
        snprintf(err, errlen, "out of memory");
    for (uint64_t i = 1, no = (uint64_t)batch_no; !rc && i <= 2 * n; no++) {
        size_t m = 0;
        bool first = i == 1, snap2 = false;
        for (; m < BATCH && i <= 2 * n; m++, i++) {
            gen_tap(tw, i, n, &batch[m]);
            snap2 |= i == n + n / 2 + 1;
        }
        rc = sink_begin(k, err, errlen);
        if (!rc && first)
            rc = put_tap_jobs(k, id, n, 0, err, errlen);
        for (size_t j = 0; j < m && !rc; j++)
            rc = sink_put_row(k, id, &batch[j], err, errlen);
        if (!rc && snap2)
            rc = put_tap_jobs(k, id, n, 1, err, errlen);
        if (!rc && i > 2 * n)
            rc = put_tap_jobs(k, id, n, 2, err, errlen);
        if (sink_commit(k, id, (int64_t)no, rc, err, errlen))
            rc = -1;
    }
    free(batch);
    return rc;
}

static int print_snapshot(void *ud, const struct reader_snapshot *s)
{
    (void)ud;
    printf("snapshot %lld t=%lld ended=%lld items=%lld bytes=%lld complete=%d\n",
           (long long)s->snap, (long long)s->t_ns, (long long)s->ended_ns, (long long)s->items,
           (long long)s->bytes, s->complete);
    return 0;
}

static int dump(const char *db, const char *run)
{
    struct reader *r;
    struct reader_cursor *c;
    char err[1024];
    int rc;
    if (reader_open(&r, db, err, sizeof err)) {
        fprintf(stderr, "sink_twin: %s\n", err);
        return 1;
    }
    int64_t id = reader_run_find(r, run);
    rc = reader_snapshots(r, id, print_snapshot, NULL, err, sizeof err);
    for (int64_t snap = 1; !rc && snap <= 2; snap++) {
        struct reader_item it;
        printf("items %lld: %lld\n", (long long)snap, (long long)reader_items_count(r, id, snap));
        if ((rc = reader_items_open(r, id, snap, &c, err, sizeof err)))
            break;
        while ((rc = reader_next_item(c, &it, err, sizeof err)) == 1)
            printf("item %lld %lld key=%.*s%s hash=%llu len=%lld class=%u size=%lld ttl=%lld "
                   "idle=%lld fetched=%d flags=%lld\n",
                   (long long)snap, (long long)it.seq, (int)it.key_text_len, it.key ? it.key : "",
                   it.key ? "" : "(null)", (unsigned long long)it.key_hash, (long long)it.key_len,
                   it.class_id, (long long)it.size, (long long)it.ttl_left, (long long)it.idle_s,
                   it.fetched, (long long)it.flags);
        reader_cursor_close(c);
    }
    printf("events: %lld\n", (long long)reader_events_count(r, id));
    if (!rc && !(rc = reader_events_open(r, id, &c, err, sizeof err))) {
        struct reader_event ev;
        while ((rc = reader_next_event(c, &ev, err, sizeof err)) == 1)
            printf("event %lld t=%lld %d key=%.*s%s hash=%llu len=%lld class=%u size=%lld "
                   "fetched=%d idle=%lld ttl=%lld cmd=%s\n",
                   (long long)ev.seq, (long long)ev.t_ns, ev.event, (int)ev.key_text_len,
                   ev.key ? ev.key : "", ev.key ? "" : "(null)", (unsigned long long)ev.key_hash,
                   (long long)ev.key_len, ev.class_id, (long long)ev.size, ev.fetched,
                   (long long)ev.idle_s, (long long)ev.ttl_left, ev.cmd ? ev.cmd : "(null)");
        reader_cursor_close(c);
    }
    if (rc)
        fprintf(stderr, "sink_twin: %s\n", err);
    reader_close(r);
    return rc ? 1 : 0;
}

static int targets(const char *db, const char *run)
{
    struct qsql_db q = { 0 };
    char err[1024];
    struct buf b;
    if (sink_is_remote(db)
            ? qsql_open_pg(&q, db, err, sizeof err)
            : sqlite3_open_v2(db, &q.lite, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "sink_twin: cannot open %s: %s\n", db,
                q.lite ? sqlite3_errmsg(q.lite) : err);
        return 1;
    }
    buf_init(&b, JSONB_MAX);
    enum query_targets_rc rc = query_targets_json(&q, strtoll(run, NULL, 10), &b, err, sizeof err);
    if (rc == QT_OK && !b.failed)
        fwrite(b.data, 1, b.len, stdout);
    else
        fprintf(stderr, "sink_twin: targets: %s\n", rc ? err : "too large");
    buf_free(&b);
    if (q.lite)
        sqlite3_close(q.lite);
    else
        qsql_close_pg(&q);
    return rc == QT_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct twin tw = { .sample = 1, .keys = KEYFMT_FULL };
    const char *node = "twin";
    char err[1536];
    if (argc < 3) {
        fprintf(stderr, "usage: sink_twin DB ROWS [--sample 1/N|none] [--node NAME]"
                        " [--keys full|prefix|hash] [--taps N] [--shadows]\n"
                        "       sink_twin DB --dump RUN\n       sink_twin DB --targets RUN\n");
        return 2;
    }
    if (argc == 4 && !strcmp(argv[2], "--dump"))
        return dump(argv[1], argv[3]);
    if (argc == 4 && !strcmp(argv[2], "--targets"))
        return targets(argv[1], argv[3]);
    uint64_t rows = strtoull(argv[2], NULL, 10), taps = 0;
    bool shadows = false;
    for (int i = 3; i < argc; i += 2) {
        if (!strcmp(argv[i], "--shadows")) {
            shadows = true;
            i--;
            continue;
        }
        if (i + 1 >= argc)
            break;
        if (!strcmp(argv[i], "--taps")) {
            taps = strtoull(argv[i + 1], NULL, 10);
            continue;
        }
        if (!strcmp(argv[i], "--sample") && !sample_parse(argv[i + 1], &tw.sample))
            continue;
        if (!strcmp(argv[i], "--node")) {
            node = argv[i + 1];
            continue;
        }
        if (!strcmp(argv[i], "--keys") && keyfmt_parse_mode(argv[i + 1], &tw.keys) == 0)
            continue;
        fprintf(stderr, "sink_twin: %s %s?\n", argv[i], argv[i + 1]);
        return 2;
    }
    struct sink k;
    sink_init(&k, argv[1]);
    if (sink_open(&k, argv[1], err, sizeof err)) {
        fprintf(stderr, "sink_twin: %s\n", err);
        return 1;
    }
    struct sink_run run = { "sink_twin", "-", "sink_twin", keyfmt_mode_name(tw.keys), node, NULL };
    int64_t id = sink_run_begin(&k, &run, err, sizeof err);
    struct rec_row *batch = calloc(BATCH, sizeof *batch);
    int rc = id < 0 || !batch;
    uint64_t recorded = 0, no = 1;
    for (uint64_t i = 1; !rc && i <= rows; no++) {
        size_t n = 0;
        for (; n < BATCH && i <= rows; n++, i++) {
            gen_row(&tw, i, &batch[n]);
            recorded += batch[n].kind == REC_ROW_WRITE && !batch[n].sampled_out;
        }
        rc = sink_begin(&k, err, sizeof err);
        for (size_t j = 0; j < n && !rc; j++)
            rc = sink_put_row(&k, id, &batch[j], err, sizeof err);
        if (sink_commit(&k, id, (int64_t)no, rc, err, sizeof err))
            rc = -1;
    }
    if (!rc && taps)
        rc = put_taps(&k, &tw, id, taps, (int64_t)no, err, sizeof err);
    if (!rc && shadows)
        rc = shadow_gen_run(&k, id, (int64_t)no + 1000000, err, sizeof err);
    if (!rc && sink_run_end(&k, id, recorded, 0, err, sizeof err))
        rc = -1;
    if (rc)
        fprintf(stderr, "sink_twin: %s\n", id < 0 || batch ? err : "out of memory");
    else
        printf("sink_twin: run %" PRId64 "\n", id);
    free(batch);
    sink_close(&k);
    return rc ? 1 : 0;
}
