/* libFuzzer target: arbitrary bytes as a Twitter cache trace or a CacheLib
 * kvcache trace (load/replay.h), both ways the code reads them: each line
 * through replay_twitter_parse / replay_cachelib_header + _parse, and the
 * whole text as a file through replay_open + replay_next (a memfd, so no
 * file is written). Byte 0 picks the format; the rest is the file.
 *
 * Checks: every operation is one memcached accepts (a known command --
 * never touch from a Twitter trace --, a 1..250-byte key without blanks or
 * control bytes, a value within WORKLOAD_VALUE_MAX, a TTL in 0..30 days on
 * writes only); a CacheLib row repeats 1..REPLAY_OP_COUNT_MAX times; an
 * error names the file and a line that exists in the input; and the file
 * reader yields exactly the operations, in order, that the line parsers
 * give for the same lines (for input without NUL bytes, whose lines all
 * fit REPLAY_LINE_MAX). At most FZ_ITEMS operations are read per input.
 * Build with -DSLABTAP_FUZZ=ON (clang); run: tests/fuzz/run.sh */
#define _GNU_SOURCE /* memfd_create */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/log.h"
#include "load/replay.h"
#include "record/rowseq.h"

#define FZ_ITEMS 4096 /* operations read per input */
#define FZ_ROWS 1024  /* rows remembered for the comparison */

#define FZ_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "fuzz_trace: check failed: %s: ", #cond); \
            fprintf(stderr, __VA_ARGS__); \
            fputc('\n', stderr); \
            abort(); \
        } \
    } while (0)

struct fz_row {
    struct workload_op op;
    uint64_t count;
};

static void fz_check_op(const struct workload_op *op, enum replay_kind kind)
{
    bool write = workload_cmd_is_write(op->cmd);

    FZ_CHECK((unsigned)op->cmd < WORKLOAD_CMD_COUNT, "cmd %d", (int)op->cmd);
    FZ_CHECK(kind != REPLAY_TWITTER || op->cmd != WORKLOAD_CMD_TOUCH, "touch from a trace");
    FZ_CHECK(op->key_len >= 1 && op->key_len <= WORKLOAD_KEY_MAX && op->key[op->key_len] == '\0' &&
                 strlen(op->key) == op->key_len,
             "key of %u bytes", op->key_len);
    FZ_CHECK(rowseq_key_usable(op->key, op->key_len), "unusable key '%s'", op->key);
    FZ_CHECK(!write || op->value_len <= WORKLOAD_VALUE_MAX, "value of %llu bytes",
             (unsigned long long)op->value_len);
    FZ_CHECK(op->ttl >= 0 && op->ttl <= REPLAY_TTL_MAX && (write || op->ttl == 0), "ttl %lld on %s",
             (long long)op->ttl, workload_cmd_name(op->cmd));
    FZ_CHECK(op->flags == 0 && !op->noreply, "flags/noreply from a trace");
}

static bool fz_same_op(const struct workload_op *a, const struct workload_op *b)
{
    return a->cmd == b->cmd && a->noreply == b->noreply && a->key_len == b->key_len &&
           a->flags == b->flags && a->ttl == b->ttl && a->value_len == b->value_len &&
           memcmp(a->key, b->key, a->key_len) == 0;
}

/* The line parsers over text's lines (split like the file reader: '\n',
 * then one trailing '\r' dropped). Returns the rows, up to FZ_ROWS; *end
 * is 1 when every line was seen, *err_line the 1-based line of the first
 * error (0: none). */
static size_t fz_parse_lines(enum replay_kind kind, const char *text, size_t len,
                             struct fz_row *rows, int *end, uint64_t *err_line)
{
    static char line[REPLAY_LINE_MAX + 1];
    struct replay_cachelib_cols cols = { .n_fields = 0 };
    char why[REPLAY_ERR_MAX];
    size_t pos = 0, nrows = 0, ops = 0;
    uint64_t lineno = 0;

    *end = 0;
    *err_line = 0;
    while (pos < len && nrows < FZ_ROWS && ops < FZ_ITEMS) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = (nl ? (size_t)(nl - text) : len) - pos;
        enum replay_status st;
        memcpy(line, text + pos, n);
        if (n && line[n - 1] == '\r')
            n--;
        line[n] = '\0';
        pos = nl ? (size_t)(nl - text) + 1 : len;
        lineno++;
        why[0] = '\0';
        struct fz_row *r = &rows[nrows];
        r->count = 1;
        if (kind == REPLAY_TWITTER) {
            st = replay_twitter_parse(line, &r->op, NULL, why, sizeof why);
        } else if (cols.n_fields == 0) {
            st = line[0] ? replay_cachelib_header(line, &cols, why, sizeof why) : REPLAY_SKIP;
            if (st == REPLAY_OK) {
                FZ_CHECK(cols.key >= 0 && cols.op >= 0 && cols.size >= 0 &&
                             cols.key < cols.n_fields && cols.op < cols.n_fields &&
                             cols.size < cols.n_fields && cols.key_size < cols.n_fields &&
                             cols.op_count < cols.n_fields && cols.ttl < cols.n_fields &&
                             cols.n_fields <= REPLAY_FIELDS_MAX,
                         "header columns");
                continue;
            }
        } else {
            st = replay_cachelib_parse(line, &cols, &r->op, &r->count, NULL, why, sizeof why);
        }
        FZ_CHECK((unsigned)st < REPLAY_STATUS_COUNT, "status %d", (int)st);
        if (st == REPLAY_SKIP)
            continue;
        if (st != REPLAY_OK) {
            FZ_CHECK(why[0] != '\0' && memchr(why, '\0', sizeof why), "error without a reason");
            *err_line = lineno;
            return nrows;
        }
        fz_check_op(&r->op, kind);
        FZ_CHECK(r->count >= 1 && r->count <= REPLAY_OP_COUNT_MAX, "op_count %llu",
                 (unsigned long long)r->count);
        ops += r->count;
        nrows++;
    }
    *end = pos >= len;
    return nrows;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    static struct fz_row rows[FZ_ROWS];
    char err[REPLAY_ERR_MAX + 128];
    struct replay *r = NULL;
    struct workload_item it;
    enum workload_next nx = WORKLOAD_NEXT_ITEM;
    size_t nrows = 0, row = 0, items = 0;
    uint64_t left = 0, lines = 1, err_line = 0, err_file = 0;
    int clean = 1, end = 0; /* end: the line parsers saw every line */

    if (fd < 0) {
        log_set_level(LOG_LEVEL_ERROR); /* no line per input with a key cut to 250 */
        fd = memfd_create("fuzz_trace", MFD_CLOEXEC);
        FZ_CHECK(fd >= 0, "memfd_create");
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (size < 1)
        return 0;
    enum replay_kind kind = data[0] & 1 ? REPLAY_CACHELIB : REPLAY_TWITTER;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    /* the file reader's view of clean input is the line parsers' view */
    for (size_t i = 0, start = 0; i <= len; i++) {
        if (i < len && text[i] == '\0')
            clean = 0;
        if (i == len || text[i] == '\n') {
            lines += i < len;
            clean &= i - start < REPLAY_LINE_MAX; /* fgets' buffer holds 4095 + '\n' */
            start = i + 1;
        }
    }
    if (clean)
        nrows = fz_parse_lines(kind, text, len, rows, &end, &err_line);

    FZ_CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, text, len, 0) == (ssize_t)len, "memfd write");
    FZ_CHECK(replay_open(&r, kind, path, 0, err, sizeof err) == REPLAY_OK, "replay_open: %s", err);
    while (items < FZ_ITEMS) {
        err[0] = '\0';
        nx = replay_next(r, &it, err, sizeof err);
        if (nx != WORKLOAD_NEXT_ITEM)
            break;
        items++;
        FZ_CHECK(it.kind == WORKLOAD_ITEM_OP, "item kind %d", (int)it.kind);
        fz_check_op(&it.op, kind);
        if (!clean)
            continue;
        if (row >= nrows) {
            FZ_CHECK(!end && !err_line, "op %zu: the file reader gives more than the line parsers",
                     items);
            continue;
        }
        /* a row with op_count N comes out N times */
        if (left == 0)
            left = rows[row].count;
        FZ_CHECK(fz_same_op(&it.op, &rows[row].op),
                 "op %zu: file gives %s '%s' %llu, line parser %s '%s' %llu", items,
                 workload_cmd_name(it.op.cmd), it.op.key, (unsigned long long)it.op.value_len,
                 workload_cmd_name(rows[row].op.cmd), rows[row].op.key,
                 (unsigned long long)rows[row].op.value_len);
        if (--left == 0)
            row++;
    }
    if (nx == WORKLOAD_NEXT_ERROR) {
        /* "path:L: why", L a line of the input */
        size_t plen = strlen(path);
        char *colon;
        FZ_CHECK(strncmp(err, path, plen) == 0 && err[plen] == ':', "error '%s'", err);
        unsigned long long l = strtoull(err + plen + 1, &colon, 10);
        FZ_CHECK(*colon == ':' && l >= 1 && l <= lines, "error line %llu of %llu: '%s'", l,
                 (unsigned long long)lines, err);
        err_file = l;
    }
    if (clean && (end || err_line) && nx != WORKLOAD_NEXT_ITEM)
        FZ_CHECK(row == nrows && left == 0 && err_file == err_line,
                 "file reader: %zu rows, error at line %llu; line parsers: %zu rows, error at "
                 "line %llu",
                 row, (unsigned long long)err_file, nrows, (unsigned long long)err_line);
    replay_close(r);
    return 0;
}
