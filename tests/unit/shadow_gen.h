/* shadow_gen: one run's shadow memcacheds (issue 23) as the proxy records
 * them, into a sink (SQLite or PostgreSQL) -- for test_shadow_store and
 * sink_twin --shadows. A function of nothing but SHADOW_T0:
 *
 *   primary: settings (-m 64), run_meta memcached_flags "-m 64", a sample
 *     a second for 11 s (get_hits 100 i, get_misses 50 i, evictions 5 i,
 *     bytes 1000 i; classes 1..3 of chunk 96 120 152, used 10 c chunks,
 *     mem_requested 80 x 10 c, evicted c), the last final; read counts
 *     (get_counts) 150 keys, 100 hits, 50 misses a second.
 *   "-f 1.08": started at 0.5 s ({"kind":"started",...,"sample":1,
 *     "memory_mb":64}), connected; settings; samples at 1..10 s (get_hits
 *     120 (i-1), get_misses 30 (i-1), evictions 2 (i-1); classes 1..5 of
 *     chunk 96 104 112 120 128, used 8 c, mem_requested 90 x 8 c); counts a
 *     second (150 reads, 120 hits, 30 misses, 30 fills, 30 writes stored).
 *   "1/4 -f 1.08": started at 0.5 s (sample 4, memory 16), samples at
 *     1..10 s, killed and "restarted" at 5.5 s: from 6 s its counters start
 *     again (get_hits 40 (i-6), get_misses 10 (i-6)); classes 1..2; one
 *     "lost" event whose detail is not JSON; counts with drops.
 *   "127.0.0.1:1": an upstream, started (kind upstream), never sampled.
 * Each batch in a transaction of its own, numbered from batch_no. */
#ifndef SLABTAP_TEST_SHADOW_GEN_H
#define SLABTAP_TEST_SHADOW_GEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/row.h"
#include "record/sink.h"

#define SHADOW_T0 INT64_C(1764633600000000000) /* 2025-12-02 00:00 UTC */
#define SHADOW_S INT64_C(1000000000)

static int shadow_gen_put(struct sink *k, int64_t id, struct rec_job *j, char *err, size_t errlen)
{
    return sink_put_job(k, id, j, err, errlen);
}

/* A sample of target (NULL: the primary) at t_ns: stats with the counters
 * given, classes 1..nclasses of chunk[c-1], used used_per*c chunks,
 * mem_requested req_per * used. */
static int shadow_gen_sample(struct sink *k, int64_t id, const char *target, int64_t t_ns,
                             bool final, int64_t hits, int64_t misses, int64_t evictions,
                             int64_t bytes, unsigned nclasses, const int *chunk, int used_per,
                             int req_per, char *err, size_t errlen)
{
    char stats[512], cj[8][160], *cjp[8];
    unsigned ids[8];
    snprintf(stats, sizeof stats,
             "{\"get_hits\":%lld,\"get_misses\":%lld,\"evictions\":%lld,\"bytes\":%lld,"
             "\"curr_items\":%lld,\"total_malloced\":%u,\"limit_maxbytes\":%lld,"
             "\"version\":\"1.6.18\"}",
             (long long)hits, (long long)misses, (long long)evictions, (long long)bytes,
             (long long)(bytes / 100), nclasses * 1048576u,
             (long long)(target && !strncmp(target, "1/4", 3) ? 16 : 64) * 1048576);
    for (unsigned c = 1; c <= nclasses && c <= 8; c++) {
        int used = used_per * (int)c;
        snprintf(cj[c - 1], sizeof cj[c - 1],
                 "{\"chunk_size\":%d,\"total_pages\":1,\"total_chunks\":%d,\"used_chunks\":%d,"
                 "\"mem_requested\":%d,\"evicted\":%u,\"get_hits\":%lld}",
                 chunk[c - 1], 1048576 / chunk[c - 1], used, req_per * used, c,
                 (long long)(hits / (c + 1)));
        cjp[c - 1] = cj[c - 1];
        ids[c - 1] = c;
    }
    struct rec_job j = { .kind = REC_JOB_SAMPLE,
                         .t_ns = t_ns,
                         .final = final,
                         .text = stats,
                         .nclasses = nclasses,
                         .class_ids = ids,
                         .class_json = cjp,
                         .target = (char *)target };
    return shadow_gen_put(k, id, &j, err, errlen);
}

static int shadow_gen_event(struct sink *k, int64_t id, const char *target, int64_t t_ns,
                            const char *event, const char *detail, char *err, size_t errlen)
{
    struct rec_job j = { .kind = REC_JOB_SHADOW_EVENT,
                         .t_ns = t_ns,
                         .text = (char *)event,
                         .version = (char *)detail,
                         .target = (char *)target };
    return shadow_gen_put(k, id, &j, err, errlen);
}

static int shadow_gen_counts(struct sink *k, int64_t id, const char *target, int64_t second,
                             int64_t reads, int64_t hits, int64_t dropped, char *err, size_t errlen)
{
    struct rec_job j = { .kind = REC_JOB_SHADOW_COUNTS,
                         .t_ns = second * SHADOW_S,
                         .target = (char *)target };
    j.counts[REC_SC_READS] = reads;
    j.counts[REC_SC_HITS] = hits;
    j.counts[REC_SC_MISSES] = reads - hits;
    j.counts[REC_SC_FILLS] = reads - hits;
    j.counts[REC_SC_WRITES] = reads - hits + 1;
    j.counts[REC_SC_STORED] = reads - hits;
    j.counts[REC_SC_NOT_STORED] = 1;
    j.counts[REC_SC_OTHERS] = 2;
    j.counts[REC_SC_ERRORS] = 0;
    j.counts[REC_SC_DROPPED] = dropped;
    return shadow_gen_put(k, id, &j, err, errlen);
}

static int shadow_gen_settings(struct sink *k, int64_t id, const char *target, int64_t t_ns,
                               const char *settings, char *err, size_t errlen)
{
    char version[] = "1.6.18";
    struct rec_job j = { .kind = REC_JOB_SETTINGS,
                         .t_ns = t_ns,
                         .text = (char *)settings,
                         .version = version,
                         .target = (char *)target };
    return shadow_gen_put(k, id, &j, err, errlen);
}

/* One second's batch (second 0..10) of everything. */
static int shadow_gen_second(struct sink *k, int64_t id, int i, char *err, size_t errlen)
{
    static const int pchunk[] = { 96, 120, 152 }, achunk[] = { 96, 104, 112, 120, 128 };
    const int64_t t = SHADOW_T0 + i * SHADOW_S;
    const char *A = "-f 1.08", *B = "1/4 -f 1.08", *C = "127.0.0.1:1";
    int rc = 0;
    if (i == 0) {
        char meta[] = "-m 64", key[] = "memcached_flags";
        struct rec_job m = { .kind = REC_JOB_META, .t_ns = t, .text = meta, .version = key };
        rc = sink_put_job(k, id, &m, err, errlen) ||
             shadow_gen_settings(k, id, NULL, t, "{\"maxbytes\":67108864,\"growth_factor\":1.25}",
                                 err, errlen);
    }
    /* the primary */
    if (!rc)
        rc = shadow_gen_sample(k, id, NULL, t, i == 10, 100 * i, 50 * i, 5 * i, 1000 * i, 3, pchunk,
                               10, 80, err, errlen);
    if (!rc) {
        struct rec_row g = { .kind = REC_ROW_GETS, .cmd = MC_CMD_GET };
        g.second = t / SHADOW_S;
        g.requests = 100;
        g.keys = 150;
        g.hits = 100;
        g.misses = 50;
        g.bytes_returned = 1000;
        rc = sink_put_row(k, id, &g, err, errlen);
    }
    if (rc)
        return rc;
    if (i == 0) {
        const int64_t t5 = t + SHADOW_S / 2;
        rc = shadow_gen_event(k, id, A, t5, "started",
                              "{\"kind\":\"started\",\"flags\":\"-f 1.08\",\"sample\":1,"
                              "\"memory_mb\":64,\"command\":\"memcached -f 1.08 -m 64\"}",
                              err, errlen) ||
             shadow_gen_event(k, id, B, t5, "started",
                              "{\"kind\":\"started\",\"flags\":\"-f 1.08\",\"sample\":4,"
                              "\"memory_mb\":16,\"command\":\"memcached -f 1.08 -m 16\"}",
                              err, errlen) ||
             shadow_gen_event(k, id, C, t5, "started",
                              "{\"kind\":\"upstream\",\"flags\":\"\",\"sample\":1}", err, errlen) ||
             shadow_gen_event(k, id, A, t5 + 1000, "connected", NULL, err, errlen) ||
             shadow_gen_event(k, id, B, t5 + 1000, "connected", NULL, err, errlen);
        return rc;
    }
    /* the shadows, from 1 s */
    if (i == 1)
        rc = shadow_gen_settings(k, id, A, t, "{\"maxbytes\":67108864,\"growth_factor\":1.08}", err,
                                 errlen) ||
             shadow_gen_settings(k, id, B, t, "{\"maxbytes\":16777216,\"growth_factor\":1.08}", err,
                                 errlen);
    if (!rc)
        rc = shadow_gen_sample(k, id, A, t + 1000, i == 10, 120 * (i - 1), 30 * (i - 1),
                               2 * (i - 1), 900 * i, 5, achunk, 8, 90, err, errlen) ||
             shadow_gen_counts(k, id, A, t / SHADOW_S, 150, 120, 0, err, errlen);
    if (!rc && i == 5)
        rc = shadow_gen_event(k, id, B, t + SHADOW_S / 4, "lost", "connection reset by peer", err,
                              errlen) ||
             shadow_gen_event(k, id, B, t + SHADOW_S / 2, "restarted", "{\"exit\":\"signal 9\"}",
                              err, errlen);
    int64_t base = i >= 6 ? 6 : 1;
    if (!rc)
        rc = shadow_gen_sample(k, id, B, t + 2000, i == 10, 40 * (i - base), 10 * (i - base), 0,
                               200 * (i - base), 2, achunk, 3, 90, err, errlen) ||
             shadow_gen_counts(k, id, B, t / SHADOW_S, 50, i == 5 ? 0 : 40, i == 5 ? 50 : 0, err,
                               errlen);
    return rc;
}

/* The whole run, one batch a second, numbered from batch_no. */
static int shadow_gen_run(struct sink *k, int64_t id, int64_t batch_no, char *err, size_t errlen)
{
    for (int i = 0; i <= 10; i++) {
        int rc = sink_begin(k, err, errlen);
        if (!rc)
            rc = shadow_gen_second(k, id, i, err, errlen);
        if (sink_commit(k, id, batch_no + i, rc, err, errlen) || rc)
            return -1;
    }
    return 0;
}

#endif
