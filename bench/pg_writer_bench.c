/* pg_writer_bench: how fast pgstore puts recorded writes into PostgreSQL --
 * the writer thread's side of a fleet sink: batches of rows (one binary
 * COPY each) committed one after the other, as the recorder's writer does.
 *
 * Owns only the run it creates in the database it is given. Must never
 * print the connection string's password (pgstore's messages do not hold
 * it, and the URI is shown through pgstore_redact).
 *
 *   pg_writer_bench URI [ROWS] [--node NAME] [--batch ROWS] [--check] [--jobs]
 *                   [--growth F] [--midnight] [--pause-ms MS]
 *
 * ROWS: 2,000,000 by default, in batches of 4,096 (the recorder's
 * REC_BATCH_MAX). The rows are writer_bench's: `set` of 945-byte values
 * under 100 key prefixes, STORED (one in 64 NOT_STORED), four connections
 * reading pipelines of 40. --check mixes in every kind of row the encoder
 * has a case for (incr answers, deletes, ms modes in and out of the
 * dictionary, flags and exptime, answers outside the dictionary with
 * quotes and control bytes, keys that are not UTF-8 or absent, lengths and
 * latencies past what the packed columns hold, no answer), pushes every
 * other read's rows last first, and then reads every row back through the
 * view `sets` and compares. --jobs adds what the poller sends: settings
 * (growth_factor F, default 1.25), a phase, a stats sample every 8 batches
 * and a final one, a read counter per batch. --midnight starts the rows
 * half their span before a UTC midnight, so they fill two day partitions.
 * --pause-ms sleeps between batches (a slow proxy, for tests that kill it). */
#include <inttypes.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/keyfmt.h"
#include "record/pgstore.h"
#include "record/row.h"

#define READ_ROWS 40
#define NS_PER_DAY INT64_C(86400000000000)
#define HUGE_LATENCY ((INT64_C(1) << 58) + 123)

static uint64_t mix(uint64_t x) /* splitmix64: row i's numbers, in any order */
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void set_answer(struct rec_row *row, const char *a)
{
    snprintf(row->answer, sizeof row->answer, "%s", a);
}

/* Row seq of the stream, a function of seq alone. */
static void gen_row(uint64_t seq, int64_t t0, bool mixed, struct rec_row *row)
{
    uint64_t h = mix(seq), read = (seq - 1) / READ_ROWS;
    char key[64];
    int klen = snprintf(key, sizeof key, "p%u:%" PRIu64, (unsigned)(h % 100), (h >> 8) % 10000000);
    memset(row, 0, sizeof *row);
    row->kind = REC_ROW_WRITE;
    row->cmd = MC_CMD_SET;
    row->seq = seq;
    row->conn_id = (uint32_t)(read % 4 + 1);
    row->t_ns = t0 + (int64_t)read * 50000 + (int64_t)(mix(read) % 20000);
    row->key_hash = keyfmt_hash(key, (size_t)klen);
    row->key_len = (uint16_t)klen;
    row->key_text_len =
        (int16_t)keyfmt_text(KEYFMT_PREFIX, key, (size_t)klen, row->key_text, sizeof row->key_text);
    row->value_len = 945;
    row->has_flags = true;
    row->has_exptime = true;
    row->latency_ns = 100000 + (int64_t)((h >> 40) % 1900) * 1000; /* whole microseconds */
    row->class_id = 13;
    set_answer(row, h % 64 ? "STORED" : "NOT_STORED");
    if (!mixed)
        return;
    if (seq % 97 == 0) { /* a fifth connection's read inside another's */
        row->conn_id = 5;
        row->t_ns += 7;
    }
    if (seq % 101 == 0) {
        row->cmd = MC_CMD_INCR;
        set_answer(row, "12345");
        row->has_flags = row->has_exptime = false;
        row->value_len = -1;
    } else if (seq % 103 == 0) {
        row->cmd = MC_CMD_DELETE;
        set_answer(row, "DELETED");
        row->has_flags = row->has_exptime = false;
        row->value_len = -1;
    } else if (seq % 107 == 0) {
        row->cmd = MC_CMD_MS;
        row->ms_mode = 'E';
        set_answer(row, "HD");
    } else if (seq % 109 == 0) {
        row->flags = 0xdeadbeefu;
        row->exptime = -1;
    } else if (seq % 113 == 0) {
        set_answer(row, "SERVER_ERROR weird \"quoted\" \\ thing");
    } else if (seq % 127 == 0) {
        memcpy(row->key_text, "p\xff\xfe", 4);
        row->key_text_len = 3;
    } else if (seq % 131 == 0) {
        row->key_text_len = -1;
    } else if (seq % 137 == 0) {
        row->latency_ns = -1;
        set_answer(row, "noreply");
    } else if (seq % 139 == 0) {
        row->latency_ns = HUGE_LATENCY;
    } else if (seq % 149 == 0) {
        row->class_id = 70;
    } else if (seq % 151 == 0) {
        row->key_len = 300;
    } else if (seq % 157 == 0) {
        row->value_len = INT64_C(5000000000);
    } else if (seq % 163 == 0) {
        row->cmd = MC_CMD_TOUCH;
        row->has_flags = false;
        row->exptime = 3600;
        row->value_len = -1;
        set_answer(row, "TOUCHED");
    } else if (seq % 167 == 0) {
        row->cmd = MC_CMD_MS;
        row->ms_mode = 'Z';
        set_answer(row, "HD");
    } else if (seq % 173 == 0) {
        row->flags = 7;
    } else if (seq % 179 == 0) {
        set_answer(row, "EX\x01");
    }
}

/* --- reading back ------------------------------------------------------------------ */

static void put_num(char *buf, size_t n, bool has, int64_t v, const char **out)
{
    snprintf(buf, n, "%" PRId64, v);
    *out = has ? buf : NULL;
}

/* What the view `sets` must say for row (14 columns, NULL: SQL NULL). */
static void expected(const struct rec_row *r, char bufs[14][128], const char *want[14])
{
    put_num(bufs[0], 128, true, (int64_t)r->seq, &want[0]);
    put_num(bufs[1], 128, true, r->conn_id, &want[1]);
    put_num(bufs[2], 128, true, r->t_ns, &want[2]);
    want[3] = mc_cmd_name((enum mc_cmd)r->cmd);
    if (r->key_text_len < 0)
        want[4] = NULL;
    else if (!strcmp(r->key_text, "p\xff\xfe"))
        want[4] = "p\xef\xbf\xbd\xef\xbf\xbd";
    else
        want[4] = r->key_text;
    put_num(bufs[5], 128, true, (int64_t)r->key_hash, &want[5]);
    put_num(bufs[6], 128, true, r->key_len, &want[6]);
    put_num(bufs[7], 128, r->value_len >= 0, r->value_len, &want[7]);
    put_num(bufs[8], 128, r->has_flags, r->flags, &want[8]);
    put_num(bufs[9], 128, r->has_exptime, r->exptime, &want[9]);
    want[10] = r->answer;
    int64_t lat =
        r->latency_ns == HUGE_LATENCY ? r->latency_ns : (r->latency_ns + 500) / 1000 * 1000;
    put_num(bufs[11], 128, r->latency_ns >= 0, lat, &want[11]);
    put_num(bufs[12], 128, r->class_id > 0, r->class_id, &want[12]);
    bufs[13][0] = r->ms_mode;
    bufs[13][1] = '\0';
    want[13] = r->ms_mode ? bufs[13] : NULL;
}

/* Every row of the run through the view `sets`, compared with what was
 * written: the number that differ (-1 when unreadable). */
static int64_t check_rows(const char *uri, int64_t run, uint64_t n, int64_t t0)
{
    static const char *const cols[14] = { "seq",      "conn_id",  "t_ns",    "cmd",
                                          "key",      "key_hash", "key_len", "value_len",
                                          "flags",    "exptime",  "answer",  "latency_ns",
                                          "class_id", "ms_mode" };
    const char *keys[] = { "dbname", "client_encoding", NULL };
    const char *vals[] = { uri, "UTF8", NULL };
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    int64_t bad = 0;
    uint64_t seen = 0;
    char sql[320], runs[32];
    snprintf(runs, sizeof runs, "%" PRId64, run);
    const char *params[1] = { runs };
    snprintf(sql, sizeof sql,
             "SELECT seq, conn_id, t_ns, cmd, key, key_hash, key_len, value_len, flags, exptime,"
             " answer, latency_ns, class_id, ms_mode FROM sets WHERE run_id = $1 ORDER BY seq");
    if (PQstatus(c) != CONNECTION_OK ||
        !PQsendQueryParams(c, sql, 1, NULL, params, NULL, NULL, 0) || !PQsetSingleRowMode(c)) {
        fprintf(stderr, "pg_writer_bench: check: %s", PQerrorMessage(c));
        PQfinish(c);
        return -1;
    }
    PGresult *res;
    while ((res = PQgetResult(c))) {
        ExecStatusType stt = PQresultStatus(res);
        if (stt == PGRES_SINGLE_TUPLE) {
            uint64_t seq = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
            struct rec_row r;
            char bufs[14][128];
            const char *want[14];
            gen_row(seq, t0, true, &r);
            expected(&r, bufs, want);
            bool ok = seq == ++seen;
            for (int i = 0; i < 14; i++) {
                bool null = PQgetisnull(res, 0, i);
                bool same = want[i] ? !null && !strcmp(PQgetvalue(res, 0, i), want[i]) : null;
                if (!same && bad < 5)
                    fprintf(stderr, "pg_writer_bench: check: seq %" PRIu64 ": %s is %s, not %s\n",
                            seq, cols[i], null ? "NULL" : PQgetvalue(res, 0, i),
                            want[i] ? want[i] : "NULL");
                ok = ok && same;
            }
            if (!ok)
                bad++;
        } else if (stt != PGRES_TUPLES_OK) {
            fprintf(stderr, "pg_writer_bench: check: %s", PQresultErrorMessage(res));
            bad = -1;
        }
        PQclear(res);
    }
    PQfinish(c);
    if (bad >= 0 && seen != n) {
        fprintf(stderr, "pg_writer_bench: check: %" PRIu64 " of %" PRIu64 " rows read back\n", seen,
                n);
        bad += (int64_t)(seen > n ? seen - n : n - seen);
    }
    return bad;
}

/* --- jobs ------------------------------------------------------------------------- */

static struct rec_job *job_new(enum rec_job_kind kind, int64_t t_ns, const char *text)
{
    struct rec_job *j = calloc(1, sizeof *j);
    if (!j)
        abort();
    j->kind = kind;
    j->t_ns = t_ns;
    j->text = strdup(text);
    return j;
}

static void job_free(struct rec_job *j)
{
    for (size_t i = 0; i < j->nclasses; i++)
        free(j->class_json[i]);
    free(j->class_ids);
    free(j->class_json);
    free(j->text);
    free(j->version);
    free(j);
}

/* A stats sample: 5 classes whose pages grow with k. */
static struct rec_job *sample_job(int64_t t_ns, uint64_t k, bool final)
{
    char stats[256];
    snprintf(stats, sizeof stats,
             "{\"evictions\":%" PRIu64 ",\"cmd_set\":%" PRIu64 ",\"curr_items\":%" PRIu64
             ",\"bytes\":%" PRIu64 ",\"slabs_moved\":0,\"version\":\"1.6.18\"}",
             k, k * 4096, k * 4000, k * 4000 * 945);
    struct rec_job *j = job_new(REC_JOB_SAMPLE, t_ns, stats);
    j->phase_id = 1;
    j->final = final;
    j->nclasses = 5;
    j->class_ids = calloc(5, sizeof *j->class_ids);
    j->class_json = calloc(5, sizeof *j->class_json);
    for (unsigned c = 0; c < 5; c++) {
        unsigned chunk = 96u << c;
        uint64_t used = (k + 1) * (c + 1) * 100;
        char f[256];
        snprintf(f, sizeof f,
                 "{\"chunk_size\":%u,\"chunks_per_page\":%u,\"total_pages\":%" PRIu64
                 ",\"used_chunks\":%" PRIu64 ",\"mem_requested\":%" PRIu64 ",\"evicted\":0}",
                 chunk, 1048576 / chunk, used * chunk / 1048576 + 1, used, used * chunk * 4 / 5);
        j->class_ids[c] = 10 + c;
        j->class_json[c] = strdup(f);
    }
    return j;
}

static int put_jobs(struct pgstore *s, int64_t run, uint64_t batch, bool last, int64_t t,
                    const char *growth, char *err, size_t errlen)
{
    struct rec_job *jobs[4];
    size_t n = 0;
    if (batch == 0) {
        char settings[256];
        snprintf(settings, sizeof settings,
                 "{\"growth_factor\":%s,\"chunk_size\":48,\"item_size_max\":1048576,"
                 "\"slab_chunk_max\":524288,\"maxbytes\":67108864,\"slab_automove\":1,"
                 "\"cas_enabled\":\"yes\"}",
                 growth);
        jobs[n] = job_new(REC_JOB_SETTINGS, t, settings);
        jobs[n++]->version = strdup("1.6.18");
        jobs[n] = job_new(REC_JOB_PHASE, t, "load");
        jobs[n++]->phase_id = 1;
        jobs[n] = job_new(REC_JOB_META, t, "{\"workload\": \"pg_writer_bench\"}");
        jobs[n++]->version = strdup("bench");
    }
    if (batch % 8 == 0 || last)
        jobs[n++] = sample_job(t + (int64_t)batch * 1000000, batch, last);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (!rc)
            rc = pgstore_put_job(s, run, jobs[i], err, errlen);
        job_free(jobs[i]);
    }
    if (!rc) {
        struct rec_row g = { .kind = REC_ROW_GETS, .cmd = MC_CMD_GET };
        g.second = t / 1000000000 + (int64_t)batch;
        g.requests = g.keys = 100;
        g.hits = 90;
        g.misses = 10;
        g.bytes_returned = 90 * 945;
        rc = pgstore_put_row(s, run, &g, err, errlen);
    }
    return rc;
}

/* --- main --------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *uri = NULL, *node = "", *growth = "1.25";
    uint64_t nrows = 2000000, batch = 4096;
    unsigned pause_ms = 0;
    bool check = false, jobs = false, midnight = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) {
            check = true;
        } else if (!strcmp(argv[i], "--jobs")) {
            jobs = true;
        } else if (!strcmp(argv[i], "--midnight")) {
            midnight = true;
        } else if (!strcmp(argv[i], "--node") && i + 1 < argc) {
            node = argv[++i];
        } else if (!strcmp(argv[i], "--growth") && i + 1 < argc) {
            growth = argv[++i];
        } else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            batch = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--pause-ms") && i + 1 < argc) {
            pause_ms = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (!uri && argv[i][0] != '-') {
            uri = argv[i];
        } else if (argv[i][0] != '-' && strtoull(argv[i], NULL, 10) > 0) {
            nrows = strtoull(argv[i], NULL, 10);
        } else {
            uri = NULL;
            break;
        }
    }
    if (!uri || !batch) {
        fprintf(stderr, "usage: pg_writer_bench URI [ROWS] [--node NAME] [--batch ROWS] [--check]"
                        " [--jobs] [--growth F] [--midnight] [--pause-ms MS]\n");
        return 2;
    }
    static struct pgstore store;
    char err[1536], shown[PGSTORE_URI_MAX];
    pgstore_redact(uri, shown, sizeof shown);
    if (pgstore_open(&store, uri, err, sizeof err)) {
        fprintf(stderr, "pg_writer_bench: %s\n", err);
        return 1;
    }
    int64_t run = pgstore_run_begin(&store, "pg_writer_bench", "-", "pg_writer_bench", "prefix",
                                    node, "bench", err, sizeof err);
    if (run < 0) {
        fprintf(stderr, "pg_writer_bench: %s\n", err);
        pgstore_close(&store);
        return 1;
    }
    printf("pg_writer_bench: run %" PRId64 " node '%s' into %s\n", run, node, shown);
    fflush(stdout);

    int64_t t_base = clock_wall_ns();
    if (midnight)
        t_base = (t_base / NS_PER_DAY + 1) * NS_PER_DAY -
                 (int64_t)(nrows / READ_ROWS) * 50000 / 2; /* half of the rows' span */
    struct rec_row *rows = malloc(batch * sizeof *rows);
    if (!rows) {
        fprintf(stderr, "pg_writer_bench: out of memory\n");
        return 1;
    }
    uint64_t t0 = clock_mono_ns(), written = 0, batches = 0;
    int rc = 0;
    for (uint64_t next = 1; next <= nrows && !rc; batches++) {
        uint64_t n = nrows - next + 1 < batch ? nrows - next + 1 : batch;
        for (uint64_t k = 0; k < n; k++) {
            /* --check: every other read's answers come back last first */
            uint64_t seq = next + k, read = (seq - 1) / READ_ROWS;
            if (check && read % 2) {
                uint64_t lo = read * READ_ROWS + 1, hi = lo + READ_ROWS - 1;
                uint64_t first = lo > next ? lo : next,
                         last = hi < next + n - 1 ? hi : next + n - 1;
                seq = last - (seq - first);
            }
            gen_row(seq, t_base, check, &rows[k]);
        }
        bool last = next + n > nrows;
        if (pgstore_begin(&store, err, sizeof err) ||
            (jobs && put_jobs(&store, run, batches, last, t_base, growth, err, sizeof err))) {
            rc = -1;
        }
        for (uint64_t k = 0; k < n && !rc; k++)
            rc = pgstore_put_row(&store, run, &rows[k], err, sizeof err);
        if (pgstore_commit(&store, rc, err, sizeof err))
            rc = -1;
        if (!rc)
            written += n;
        next += n;
        if (pause_ms && !rc)
            nanosleep(&(struct timespec){ pause_ms / 1000, (long)(pause_ms % 1000) * 1000000 },
                      NULL);
    }
    uint64_t t1 = clock_mono_ns();
    free(rows);
    if (rc) {
        fprintf(stderr, "pg_writer_bench: %s\n", err);
        pgstore_close(&store);
        return 1;
    }
    if (pgstore_run_end(&store, run, written, 0, err, sizeof err)) {
        fprintf(stderr, "pg_writer_bench: %s\n", err);
        pgstore_close(&store);
        return 1;
    }
    pgstore_close(&store);
    double secs = (double)(t1 - t0) / 1e9;
    printf("pg_writer_bench: %" PRIu64 " rows in %.2f s: %.0f rows/s (%" PRIu64
           " batches of up to %" PRIu64 " rows, one COPY each)\n",
           written, secs, (double)written / secs, batches, batch);
    if (check) {
        int64_t bad = check_rows(uri, run, nrows, t_base);
        printf("pg_writer_bench: check: %s\n", bad ? "rows differ (see above)"
                                                   : "every row reads back exactly through the "
                                                     "view sets");
        if (bad)
            return 1;
    }
    return 0;
}
