/* retention_bench: what a recorded write costs on disk with its row kept
 * and with rows expired (the aggregates only), and how fast the writer
 * thread goes while retention deletes at the same time.
 *
 * Owns only its temporary database (removed at exit). Must never touch a
 * real database or a network: a store in a fresh temporary directory, the
 * recorder on its own loop, rows pushed straight into it with backpressure
 * (as bench/writer_bench.c).
 *
 *   retention_bench [ROWS] [--rate WRITES_PER_S] [--max-db-size BYTES]
 *
 * ROWS (default 2,000,000) `set`s of 50-3000 byte values under 100 key
 * prefixes, latencies of 100 us to 2 ms, stamped --rate a second (default
 * 10,000: the aggregates' rows per minute depend on the time the writes
 * span, not on their number). Prints one line of figures, `key=value`. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "core/clock.h"
#include "core/keyfmt.h"
#include "record/recorder.h"
#include "record/row.h"
#include "record/sink.h"

static void on_unblock(void *ud)
{
    (void)ud;
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static void gen_row(uint64_t seq, int64_t t0, uint64_t rate, struct rec_row *row)
{
    uint64_t h = mix(seq), read = (seq - 1) / 40;
    char key[64];
    int klen = snprintf(key, sizeof key, "p%u:%" PRIu64, (unsigned)(h % 100), (h >> 8) % 10000000);
    memset(row, 0, offsetof(struct rec_row, answer));
    row->kind = REC_ROW_WRITE;
    row->cmd = MC_CMD_SET;
    row->seq = seq;
    row->conn_id = (uint32_t)(read % 4 + 1);
    row->t_ns = t0 + (int64_t)(read * 40 * 1000000000ull / rate);
    row->key_hash = keyfmt_hash(key, (size_t)klen);
    row->key_len = (uint16_t)klen;
    row->key_text_len =
        (int16_t)keyfmt_text(KEYFMT_PREFIX, key, (size_t)klen, row->key_text, sizeof row->key_text);
    row->value_len = 50 + (int64_t)((h >> 20) % 2951);
    row->has_flags = true;
    row->has_exptime = true;
    row->latency_ns = 100000 + (int64_t)((h >> 40) % 1900) * 1000;
    row->class_id = 13;
    memcpy(row->answer, "STORED", 7);
}

static int64_t scalar(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int main(int argc, char **argv)
{
    uint64_t nrows = 2000000, rate = 10000, max_db = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rate") && i + 1 < argc)
            rate = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--max-db-size") && i + 1 < argc)
            max_db = strtoull(argv[++i], NULL, 10);
        else if (argv[i][0] != '-' && strtoull(argv[i], NULL, 10) > 0)
            nrows = strtoull(argv[i], NULL, 10);
        else {
            fprintf(stderr, "usage: retention_bench [ROWS] [--rate N] [--max-db-size BYTES]\n");
            return 2;
        }
    }
    if (!rate)
        rate = 10000;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[512], path[600], side[640];
    snprintf(dir, sizeof dir, "%s/retention_bench.XXXXXX", tmp);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "retention_bench: %s: %s\n", dir, strerror(errno));
        return 1;
    }
    snprintf(path, sizeof path, "%s/bench.db", dir);
    static struct sink sink;
    static struct recorder rec;
    char err[1536];
    uv_loop_t loop;
    uv_loop_init(&loop);
    sink_init(&sink, path);
    if (sink_open(&sink, path, err, sizeof err)) {
        fprintf(stderr, "retention_bench: %s\n", err);
        return 1;
    }
    struct rec_config cfg = { .cap = 65536,
                              .on_full = REC_BLOCK,
                              .retain = { 0, max_db },
                              .run = { "retention_bench", "-", "", "prefix", "" } };
    int64_t run = sink_run_begin(&sink, &cfg.run, err, sizeof err);
    if (run < 0 || rec_open(&rec, &loop, &sink, run, &cfg, on_unblock, NULL, err, sizeof err)) {
        fprintf(stderr, "retention_bench: %s\n", err);
        return 1;
    }
    int64_t t_base = clock_wall_ns();
    uint64_t stalls = 0, t0 = clock_mono_ns();
    for (uint64_t seq = 1; seq <= nrows; seq++) {
        struct rec_row row;
        gen_row(seq, t_base, rate, &row);
        rec_push(&rec, &row);
        if (rec_blocked(&rec)) {
            stalls++;
            while (rec_blocked(&rec))
                uv_run(&loop, UV_RUN_ONCE);
        }
    }
    struct retain_stats rs; /* the steps until the last push (not those of rec_close) */
    rec_retain_state(&rec, &rs, NULL, 0, NULL);
    int rc = rec_close(&rec, NULL, err, sizeof err);
    uint64_t t1 = clock_mono_ns();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    if (rc) {
        fprintf(stderr, "retention_bench: %s\n", err);
        return 1;
    }
    struct stat sb;
    stat(path, &sb);
    sqlite3 *db = NULL;
    int64_t kept = -1, agg = -1, pages = -1, freep = -1, psize = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        kept = scalar(db, "SELECT count(*) FROM writes");
        agg = scalar(db, "SELECT sum(pgsize) FROM dbstat WHERE name LIKE 'agg%'"
                         " OR name LIKE 'sqlite_autoindex_agg%'");
        pages = scalar(db, "PRAGMA page_count");
        freep = scalar(db, "PRAGMA freelist_count");
        psize = scalar(db, "PRAGMA page_size");
    }
    sqlite3_close(db);
    double secs = (double)(t1 - t0) / 1e9, span_h = (double)nrows / (double)rate / 3600.0;
    printf("rows=%" PRIu64 " max_db=%" PRIu64 " secs=%.2f rows_per_s=%.0f stalls=%" PRIu64
           " file_bytes=%lld in_use_bytes=%lld kept=%lld expired=%" PRIu64
           " bytes_per_write=%.2f agg_bytes=%lld agg_bytes_per_hour=%.0f steps=%" PRIu64
           " step_max_ms=%.1f retention_s=%.2f\n",
           nrows, max_db, secs, (double)nrows / secs, stalls, (long long)sb.st_size,
           (long long)((pages - freep) * psize), (long long)kept,
           kept >= 0 ? nrows - (uint64_t)kept : rs.rows_expired, (double)sb.st_size / (double)nrows,
           (long long)agg, (double)agg / span_h, rs.steps, (double)rs.step_max_us / 1000.0,
           (double)rs.step_total_us / 1e6);
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    rmdir(dir);
    return 0;
}
