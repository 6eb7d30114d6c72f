/* writer_bench: how fast the recorder's writer thread puts rows into
 * SQLite, end to end -- from the first rec_push on the loop thread to the
 * last commit (rec_close) -- and what a row costs on disk.
 *
 * Owns only its temporary database (removed at exit unless --keep). Must
 * never touch a real database or a network: it opens a store in a fresh
 * temporary directory, starts the recorder on its own loop and pushes
 * realistic write rows straight into it, respecting backpressure (while
 * rec_blocked, the loop runs until the writer has drained the queue).
 *
 *   writer_bench [ROWS] [--queue ROWS] [--keep] [--check] [--reads N]
 *
 * --reads N: N read rows (REC_ROW_READ, docs/recording-reads.md) after
 * each write, as a get-heavy load sends them: gets (one in eight an mg) of
 * 100,000 keys, nine in ten hits, from the write's connection and time;
 * rows/s then counts both, and the read tables' bytes per read are shown.
 *
 * ROWS: 2,000,000 by default. The rows: `set` of 945-byte values under 100
 * key prefixes (--keys prefix), answered STORED (one in 64 NOT_STORED),
 * latencies of 100 us to 2 ms, four client connections reading pipelines
 * of 40 requests. --check pushes them out of order (as answers come back)
 * with some requests of a fifth connection held back into later batches,
 * then reads every row back through the view `sets` and compares. */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

static uint64_t mix(uint64_t x) /* splitmix64: row i's numbers, in any order */
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

#define READ_ROWS 40 /* requests per read (one connection, one time) */

/* Write seq of the stream, a function of seq alone. Reads of READ_ROWS
 * requests, round robin over four connections; with odd, one request in
 * 97 comes from a fifth connection at its own time (a read of one inside
 * another's: what makes the writer split and restore arrivals). */
static void gen_row(uint64_t seq, int64_t t0, bool odd, struct rec_row *row)
{
    uint64_t h = mix(seq), read = (seq - 1) / READ_ROWS;
    char key[64];
    int klen = snprintf(key, sizeof key, "p%u:%" PRIu64, (unsigned)(h % 100), (h >> 8) % 10000000);
    memset(row, 0, offsetof(struct rec_row, answer));
    row->kind = REC_ROW_WRITE;
    row->cmd = MC_CMD_SET;
    row->seq = seq;
    row->conn_id = (uint32_t)(read % 4 + 1);
    row->t_ns = t0 + (int64_t)read * 50000 + (int64_t)(mix(read) % 20000);
    if (odd && seq % 97 == 0) {
        row->conn_id = 5;
        row->t_ns += 7;
    }
    row->key_hash = keyfmt_hash(key, (size_t)klen);
    row->key_len = (uint16_t)klen;
    row->key_text_len =
        (int16_t)keyfmt_text(KEYFMT_PREFIX, key, (size_t)klen, row->key_text, sizeof row->key_text);
    row->value_len = 945;
    row->has_flags = true;
    row->has_exptime = true;
    row->latency_ns = 100000 + (int64_t)((h >> 40) % 1900) * 1000; /* whole microseconds */
    row->class_id = 13;
    memcpy(row->answer, h % 64 ? "STORED" : "NOT_STORED", h % 64 ? 7 : 11);
}

/* Read rseq of the stream, after write aw (its connection and time). */
static void gen_read(uint64_t rseq, uint64_t aw, int64_t t0, struct rec_row *row)
{
    struct rec_row w;
    uint64_t h = mix(rseq ^ 0x5eed);
    char key[64];
    gen_row(aw, t0, false, &w);
    uint64_t k = (h >> 8) % 100000; /* 100,000 keys, as p<k mod 100>:<k> */
    int klen = snprintf(key, sizeof key, "p%u:%" PRIu64, (unsigned)(k % 100), k);
    memset(row, 0, offsetof(struct rec_row, answer));
    row->kind = REC_ROW_READ;
    row->cmd = h % 8 ? MC_CMD_GET : MC_CMD_MG;
    row->seq = rseq;
    row->after_write = aw;
    row->conn_id = w.conn_id;
    row->t_ns = w.t_ns;
    row->key_hash = keyfmt_hash(key, (size_t)klen);
    row->key_len = (uint16_t)klen;
    row->key_text_len =
        (int16_t)keyfmt_text(KEYFMT_PREFIX, key, (size_t)klen, row->key_text, sizeof row->key_text);
    row->hit = (h >> 32) % 10 != 0;
    row->value_len = row->hit ? 945 : -1;
    row->has_flags = row->hit && row->cmd == MC_CMD_GET;
    row->class_id = row->hit ? 13 : 0;
}

struct push {
    struct recorder *r;
    uv_loop_t *loop;
    int64_t t0;
    bool odd;
    uint64_t pushed, stalls;
    unsigned reads; /* --reads N: after each write */
    uint64_t rseq;
};

/* One row into the recorder, as the proxy does it; while the queue is
 * full (rec_blocked), the loop runs until the writer has made room. */
static void push(struct push *p, uint64_t seq)
{
    struct rec_row row;
    gen_row(seq, p->t0, p->odd, &row);
    for (unsigned i = 0; i <= p->reads; i++) {
        if (i)
            gen_read(++p->rseq, seq, p->t0, &row);
        rec_push(p->r, &row);
        p->pushed += !i;
        if (rec_blocked(p->r)) {
            p->stalls++;
            while (rec_blocked(p->r))
                uv_run(p->loop, UV_RUN_ONCE);
        }
    }
}

/* Reads back every row through the view `sets` and compares it with what
 * was pushed: the number of rows that differ (-1 when unreadable). */
static int64_t check_rows(const char *path, int64_t run, uint64_t n, int64_t t0)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t bad = -1;
    uint64_t seen = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT seq, conn_id, t_ns, cmd, key, key_hash, key_len, value_len,"
                           " flags, exptime, answer, latency_ns, class_id, ms_mode FROM sets"
                           " WHERE run_id = ?1 ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, run);
    bad = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct rec_row r;
        uint64_t seq = (uint64_t)sqlite3_column_int64(st, 0);
        gen_row(seq, t0, true, &r);
        const char *key = (const char *)sqlite3_column_text(st, 4);
        const char *answer = (const char *)sqlite3_column_text(st, 10);
        bool ok = seq == ++seen && sqlite3_column_int64(st, 1) == r.conn_id &&
                  sqlite3_column_int64(st, 2) == r.t_ns &&
                  !strcmp((const char *)sqlite3_column_text(st, 3), "set") && key &&
                  !strcmp(key, r.key_text) && (uint64_t)sqlite3_column_int64(st, 5) == r.key_hash &&
                  sqlite3_column_int64(st, 6) == r.key_len &&
                  sqlite3_column_int64(st, 7) == r.value_len &&
                  sqlite3_column_type(st, 8) == SQLITE_INTEGER && !sqlite3_column_int64(st, 8) &&
                  sqlite3_column_type(st, 9) == SQLITE_INTEGER && !sqlite3_column_int64(st, 9) &&
                  answer && !strcmp(answer, r.answer) &&
                  sqlite3_column_int64(st, 11) == r.latency_ns &&
                  sqlite3_column_int64(st, 12) == r.class_id &&
                  sqlite3_column_type(st, 13) == SQLITE_NULL;
        if (!ok && bad++ < 5)
            fprintf(stderr, "writer_bench: check: seq %" PRIu64 " reads back differently\n", seq);
    }
    if (seen != n) {
        fprintf(stderr, "writer_bench: check: %" PRIu64 " of %" PRIu64 " rows read back\n", seen,
                n);
        bad += (int64_t)(seen > n ? seen - n : n - seen);
    }
out:
    if (bad < 0)
        fprintf(stderr, "writer_bench: check: %s\n", db ? sqlite3_errmsg(db) : "cannot open");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return bad;
}

static double tv_secs(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static double mb(double bytes)
{
    return bytes / 1e6;
}

/* bytes of the named tables' pages, from dbstat when SQLite has it */
static int64_t table_bytes(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, "SELECT sum(pgsize) FROM dbstat WHERE name = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

int main(int argc, char **argv)
{
    uint64_t nrows = 2000000;
    size_t queue = 65536;
    bool keep = false, check = false;
    unsigned reads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--keep")) {
            keep = true;
        } else if (!strcmp(argv[i], "--check")) {
            check = true;
        } else if (!strcmp(argv[i], "--reads") && i + 1 < argc) {
            reads = (unsigned)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--queue") && i + 1 < argc) {
            queue = strtoull(argv[++i], NULL, 10);
        } else if (argv[i][0] != '-' && strtoull(argv[i], NULL, 10) > 0) {
            nrows = strtoull(argv[i], NULL, 10);
        } else {
            fprintf(stderr, "usage: writer_bench [ROWS] [--queue ROWS] [--keep] [--check] "
                            "[--reads N]\n");
            return 2;
        }
    }
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/writer_bench.XXXXXX", tmp);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "writer_bench: %s: %s\n", dir, strerror(errno));
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
        fprintf(stderr, "writer_bench: %s\n", err);
        return 1;
    }
    struct rec_config rc_cfg = { .cap = queue,
                                 .on_full = REC_BLOCK,
                                 .run = { "writer_bench", "-", "writer_bench", "prefix", "" } };
    int64_t run = sink_run_begin(&sink, &rc_cfg.run, err, sizeof err);
    if (run < 0 || rec_open(&rec, &loop, &sink, run, &rc_cfg, on_unblock, NULL, err, sizeof err)) {
        fprintf(stderr, "writer_bench: %s\n", err);
        return 1;
    }

    int64_t t_base = clock_wall_ns();
    struct push p = { .r = &rec, .loop = &loop, .t0 = t_base, .odd = check, .reads = reads };
    /* --check: held back rows, released 3,000 pushes later */
    struct late {
        uint64_t seq, due;
    } *late = check ? malloc((nrows / 97 + 1) * sizeof *late) : NULL;
    size_t late_head = 0, late_tail = 0;
    uint64_t t0 = clock_mono_ns();
    for (uint64_t read = 0; read * READ_ROWS < nrows; read++) {
        for (uint64_t k = 0; k < READ_ROWS; k++) {
            /* --check: every other read's answers come back last first */
            uint64_t seq = read * READ_ROWS + (check && read % 2 ? READ_ROWS - k : k + 1);
            if (seq > nrows)
                continue;
            if (check && seq % 97 == 0) {
                late[late_tail++] = (struct late){ seq, p.pushed + 3000 };
                continue;
            }
            push(&p, seq);
            while (late_head < late_tail && late[late_head].due <= p.pushed)
                push(&p, late[late_head++].seq);
        }
    }
    while (late_head < late_tail)
        push(&p, late[late_head++].seq);
    free(late);
    uint64_t t_pushed = clock_mono_ns();
    int rc = rec_close(&rec, NULL, err, sizeof err);
    uint64_t t1 = clock_mono_ns();
    uv_run(&loop, UV_RUN_DEFAULT); /* the recorder's close callbacks */
    uv_loop_close(&loop);
    if (rc) {
        fprintf(stderr, "writer_bench: %s\n", err);
        return 1;
    }

    double secs = (double)(t1 - t0) / 1e9;
    struct stat sb;
    stat(path, &sb);
    sqlite3 *db;
    int64_t writes = -1, arrivals = -1, rows_in_db = -1, read_bytes = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
        sqlite3_stmt *st;
        writes = table_bytes(db, "writes");
        arrivals = table_bytes(db, "arrivals");
        if (p.rseq) {
            const char *rt[] = { "read_rows", "read_arrivals", "read_keys", "read_extra" };
            read_bytes = 0;
            for (size_t i = 0; i < sizeof rt / sizeof rt[0]; i++) {
                int64_t b = table_bytes(db, rt[i]);
                read_bytes += b > 0 ? b : 0;
            }
        }
        if (sqlite3_prepare_v2(db, "SELECT count(*) FROM writes", -1, &st, NULL) == SQLITE_OK) {
            if (sqlite3_step(st) == SQLITE_ROW)
                rows_in_db = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
    }
    sqlite3_close(db);
    struct rusage ru, self;
    getrusage(RUSAGE_SELF, &ru);
    getrusage(RUSAGE_THREAD, &self);
    /* the writer thread has been joined: its CPU is the process's minus
     * this thread's (what other machines' load cannot inflate) */
    double cpu_all = tv_secs(ru.ru_utime) + tv_secs(ru.ru_stime);
    double cpu_loop = tv_secs(self.ru_utime) + tv_secs(self.ru_stime);

    printf("writer_bench: %" PRIu64 " rows in %.2f s: %.0f rows/s end to end (first push to last "
           "commit; pushing took %.2f s, %" PRIu64 " backpressure stalls)\n",
           nrows, secs, (double)nrows / secs, (double)(t_pushed - t0) / 1e9, p.stalls);
    printf("writer_bench: %" PRId64 " rows in the file: %.1f MB, %.2f bytes/row", rows_in_db,
           mb((double)sb.st_size), (double)sb.st_size / (double)nrows);
    if (writes >= 0)
        printf(" (table writes %.2f, arrivals %.2f)", (double)writes / (double)nrows,
               (double)(arrivals > 0 ? arrivals : 0) / (double)nrows);
    printf("\nwriter_bench: CPU: writer thread %.2f s (%.2f us/row), loop thread %.2f s; "
           "peak RSS %.1f MB\n",
           cpu_all - cpu_loop, (cpu_all - cpu_loop) * 1e6 / (double)nrows, cpu_loop,
           (double)ru.ru_maxrss / 1024.0);
    if (p.rseq)
        printf("writer_bench: with reads: %" PRIu64 " writes + %" PRIu64
               " reads = %.0f rows/s end to end; read tables %.2f bytes/read, file %.2f bytes "
               "per row (writes and reads), writer %.2f us/row\n",
               nrows, p.rseq, (double)(nrows + p.rseq) / secs, (double)read_bytes / (double)p.rseq,
               (double)sb.st_size / (double)(nrows + p.rseq),
               (cpu_all - cpu_loop) * 1e6 / (double)(nrows + p.rseq));
    int64_t bad = 0;
    if (check) {
        bad = check_rows(path, run, nrows, t_base);
        printf("writer_bench: check: %s\n", bad ? "rows differ (see above)"
                                                : "every row reads back "
                                                  "exactly through the view sets");
    }
    if (keep) {
        printf("writer_bench: kept %s\n", path);
    } else {
        char side[640];
        unlink(path);
        snprintf(side, sizeof side, "%s-wal", path);
        unlink(side);
        snprintf(side, sizeof side, "%s-shm", path);
        unlink(side);
        rmdir(dir);
    }
    return rows_in_db == (int64_t)nrows && !bad ? 0 : 1;
}
