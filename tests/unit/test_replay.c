/* test_replay: the replay sources' pure parts -- key regeneration, the
 * recorded-command mapping, Twitter and CacheLib rows -- plus reading a
 * small CSV through replay_open/replay_next (errors name file:line), and
 * slab_settings_from_stats on a `stats settings` reply as memcached 1.6.18
 * sends it. Issue 11: counter keys found ahead (Twitter file, pipe,
 * recorded run) and their numeric values; CacheLib header errors naming
 * every bad column; keys of 250/251/256 bytes cut the same way by both
 * readers, counted and logged. Prints every failing case; exits 1 if any. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check.h"
#include "core/keyfmt.h"
#include "core/log.h"
#include "load/load.h"
#include "load/replay.h"
#include "protocol/stats_parse.h"
#include "record/rowseq.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_key_make(void)
{
    char key[WORKLOAD_KEY_MAX + 1], again[WORKLOAD_KEY_MAX + 1];
    int bad = 0;
    for (uint32_t len = 1; len <= WORKLOAD_KEY_MAX; len++) {
        rowseq_key_make(0x0123456789abcdefull * len, "ns", 2, len, key);
        rowseq_key_make(0x0123456789abcdefull * len, "ns", 2, len, again);
        if (strlen(key) != len || !rowseq_key_usable(key, len) || strcmp(key, again))
            bad++;
    }
    CHECK(bad == 0, "%d lengths gave a key of the wrong length, unusable or unstable", bad);
    rowseq_key_make(42, "user", 4, 20, key);
    CHECK(!strncmp(key, "user", 4) && strlen(key) == 20 && key[19] == '.', "prefix kept: %s", key);
    rowseq_key_make(42, "user", 4, 14, key);
    CHECK(strncmp(key, "user", 4) != 0 && strlen(key) == 14, "prefix dropped when short: %s", key);
    rowseq_key_make(42, "bad key", 7, 30, key);
    CHECK(strncmp(key, "bad", 3) != 0, "an unusable prefix is not kept: %s", key);

    /* distinct hashes stay distinct at 11 bytes and more */
    enum { N = 20000 };
    static char store[N][16];
    static char *ptrs[N];
    uint64_t x = 1;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        rowseq_key_make(x, "", 0, 11, store[i]);
        ptrs[i] = store[i];
    }
    qsort(ptrs, N, sizeof ptrs[0], cmp_str);
    int dup = 0;
    for (int i = 1; i < N; i++)
        dup += !strcmp(ptrs[i - 1], ptrs[i]);
    CHECK(dup == 0, "%d duplicate 11-byte keys from distinct hashes", dup);

    static const struct {
        const char *key;
        bool usable;
    } keys[] = { { "a", true },     { "user:1", true },       { "", false },     { "a b", false },
                 { "a\tb", false }, { "caf\xc3\xa9", false }, { "x\x7f", false } };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CHECK(rowseq_key_usable(keys[i].key, strlen(keys[i].key)) == keys[i].usable, "usable '%s'",
              keys[i].key);
}

static void test_db_cmd(void)
{
    static const struct {
        const char *recorded;
        bool ok;
        enum workload_cmd sent;
    } cases[] = {
        { "set", true, WORKLOAD_CMD_SET },
        { "add", true, WORKLOAD_CMD_ADD },
        { "replace", true, WORKLOAD_CMD_REPLACE },
        { "append", true, WORKLOAD_CMD_APPEND },
        { "prepend", true, WORKLOAD_CMD_PREPEND },
        { "cas", true, WORKLOAD_CMD_SET },
        { "ms", true, WORKLOAD_CMD_SET },
        { "md", true, WORKLOAD_CMD_DELETE },
        { "delete", true, WORKLOAD_CMD_DELETE },
        { "touch", true, WORKLOAD_CMD_TOUCH },
        { "incr", true, WORKLOAD_CMD_INCR },
        { "decr", true, WORKLOAD_CMD_DECR },
        { "ma", true, WORKLOAD_CMD_INCR },
        { "get", false, 0 },
        { "mg", false, 0 },
        { "gat", false, 0 },
        { "", false, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum workload_cmd c = WORKLOAD_CMD_COUNT;
        bool ok = replay_db_cmd(cases[i].recorded, &c);
        CHECK(ok == cases[i].ok && (!ok || c == cases[i].sent), "'%s' -> %d %s", cases[i].recorded,
              ok, ok ? workload_cmd_name(c) : "-");
    }
}

static void test_twitter_rows(void)
{
    static const struct {
        const char *row;
        enum replay_status st;
        const char *cmd;
        int key_len;
        uint64_t value_len;
        int64_t ttl;
        const char *key; /* NULL: regenerated (checked by length) */
        const char *why;
    } cases[] = {
        { "1584921600,nz:u:abc,8,945,3,set,3600", REPLAY_OK, "set", 8, 945, 3600, "nz:u:abc", "" },
        { "1584921600,nz:u:abc,20,945,3,set,0", REPLAY_OK, "set", 20, 945, 0, NULL, "" },
        { "1,k,1,10,1,cas,5184000", REPLAY_OK, "set", 1, 10, 2592000, "k", "" },
        { "1,k,1,10,1,get,0", REPLAY_OK, "get", 1, 0, 0, "k", "" },
        { "1,k,1,10,1,incr,0", REPLAY_OK, "incr", 1, 1, 0, "k", "" },
        { "1,a,b,3,10,1,append,-1", REPLAY_OK, "append", 3, 10, 0, "a,b", "" }, /* comma in key */
        { "timestamp,key,key size,value size,client id,operation,TTL", REPLAY_SKIP, "", 0, 0, 0,
          NULL, "" },
        { "", REPLAY_SKIP, "", 0, 0, 0, NULL, "" },
        { "1,k,1,10,1,frob,0", REPLAY_E_FORMAT, "", 0, 0, 0, NULL, "unknown operation 'frob'" },
        { "1,k,0,10,1,get,0", REPLAY_E_FORMAT, "", 0, 0, 0, NULL, "bad key size '0' (1..65535)" },
        { "1,k,1,x,1,set,0", REPLAY_E_FORMAT, "", 0, 0, 0, NULL, "bad value size 'x'" },
        { "1,k,1,10,get", REPLAY_E_FORMAT, "", 0, 0, 0, NULL,
          "want 7 fields: timestamp,key,key size,value size,client id,operation,TTL" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[256], why[REPLAY_ERR_MAX] = "";
        struct workload_op op;
        memset(&op, 0, sizeof op);
        snprintf(line, sizeof line, "%s", cases[i].row);
        enum replay_status st = replay_twitter_parse(line, &op, NULL, why, sizeof why);
        CHECK(st == cases[i].st, "row %zu: %s (%s)", i, replay_status_str(st), why);
        if (st != REPLAY_OK) {
            CHECK(!strcmp(why, cases[i].why), "row %zu: why '%s' want '%s'", i, why, cases[i].why);
            continue;
        }
        CHECK(!strcmp(workload_cmd_name(op.cmd), cases[i].cmd) && op.key_len == cases[i].key_len &&
                  strlen(op.key) == op.key_len && op.value_len == cases[i].value_len &&
                  op.ttl == cases[i].ttl,
              "row %zu: %s %s(%u) %" PRIu64 " %lld", i, workload_cmd_name(op.cmd), op.key,
              op.key_len, op.value_len, (long long)op.ttl);
        if (cases[i].key)
            CHECK(!strcmp(op.key, cases[i].key), "row %zu: key %s", i, op.key);
    }
    /* the same anonymized key always maps to the same regenerated key */
    char a[64] = "1,nz:u:abc,20,1,1,set,0", b[64] = "9,nz:u:abc,20,7,2,get,0";
    struct workload_op oa, ob;
    replay_twitter_parse(a, &oa, NULL, NULL, 0);
    replay_twitter_parse(b, &ob, NULL, NULL, 0);
    CHECK(!strcmp(oa.key, ob.key) && !strncmp(oa.key, "nz", 2), "regenerated keys %s %s", oa.key,
          ob.key);
}

static void test_cachelib_rows(void)
{
    struct replay_cachelib_cols cols;
    char why[REPLAY_ERR_MAX] = "";
    char hdr[] = "op_time,key,key_size,op,op_count,size,cache_hits,ttl";
    CHECK(replay_cachelib_header(hdr, &cols, why, sizeof why) == REPLAY_OK && cols.key == 1 &&
              cols.key_size == 2 && cols.op == 3 && cols.op_count == 4 && cols.size == 5 &&
              cols.ttl == 7 && cols.n_fields == 8,
          "header: %s", why);
    char hdr2[] = "size,op,key";
    CHECK(replay_cachelib_header(hdr2, &cols, why, sizeof why) == REPLAY_OK && cols.size == 0 &&
              cols.op == 1 && cols.key == 2 && cols.ttl == -1 && cols.op_count == -1,
          "reordered header");
    char hdr3[] = "op_time,key,size";
    CHECK(replay_cachelib_header(hdr3, &cols, why, sizeof why) == REPLAY_E_FORMAT,
          "header without op");
    char hdr4[] = "op_time,key,key_size,op,op_count,size,cache_hits,ttl";
    replay_cachelib_header(hdr4, &cols, why, sizeof why);
    static const struct {
        const char *row;
        enum replay_status st;
        const char *cmd;
        uint64_t count, value_len;
        int key_len;
        int64_t ttl;
        const char *why;
    } cases[] = {
        { "1,123456789,9,SET,2,500,0,3600", REPLAY_OK, "set", 2, 500, 9, 3600, "" },
        { "1,123456789,20,GET_LEASE,1,0,1,", REPLAY_OK, "get", 1, 0, 20, 0, "" },
        { "1,123456789,300,set_lease,1,7,0,", REPLAY_OK, "set", 1, 7, 250, 0, "" },
        { "1,123456789,9,DELETE,1,,0,", REPLAY_OK, "delete", 1, 0, 9, 0, "" },
        { "1,123456789,9,SAT,1,5,0,", REPLAY_E_FORMAT, "", 0, 0, 0, 0, "unknown op 'SAT'" },
        { "1,123456789,9,GET,0,5,0,", REPLAY_E_FORMAT, "", 0, 0, 0, 0,
          "bad op_count '0' (1..1000000)" },
        { "1,123456789,9,GET,1", REPLAY_E_FORMAT, "", 0, 0, 0, 0,
          "want 8 fields as in the header" },
        { "1,123456789,9,SET,1,,0,", REPLAY_E_FORMAT, "", 0, 0, 0, 0, "bad size ''" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[128];
        struct workload_op op;
        uint64_t count = 0;
        why[0] = '\0';
        snprintf(line, sizeof line, "%s", cases[i].row);
        enum replay_status st =
            replay_cachelib_parse(line, &cols, &op, &count, NULL, why, sizeof why);
        CHECK(st == cases[i].st, "row %zu: %s (%s)", i, replay_status_str(st), why);
        if (st != REPLAY_OK) {
            CHECK(!strcmp(why, cases[i].why), "row %zu: why '%s' want '%s'", i, why, cases[i].why);
            continue;
        }
        CHECK(!strcmp(workload_cmd_name(op.cmd), cases[i].cmd) && count == cases[i].count &&
                  op.value_len == cases[i].value_len && op.key_len == cases[i].key_len &&
                  strlen(op.key) == op.key_len && op.ttl == cases[i].ttl,
              "row %zu: %s x%" PRIu64 " %s(%u) %" PRIu64, i, workload_cmd_name(op.cmd), count,
              op.key, op.key_len, op.value_len);
    }
}

/* replay_open/next over a file: op_count expands, errors name file:line. */
static void test_csv_file(void)
{
    char path[] = "/tmp/test_replay_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        CHECK(0, "mkstemp");
        return;
    }
    const char *text = "op_time,key,key_size,op,op_count,size,cache_hits,ttl\r\n"
                       "1,111,3,SET,3,10,0,\r\n\r\n2,111,3,GET,1,10,1,\n3,111,3,GRAB,1,1,0,\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text), "write");
    close(fd);
    struct replay *r = NULL;
    char err[REPLAY_ERR_MAX] = "";
    CHECK(replay_open(&r, REPLAY_CACHELIB, path, 0, err, sizeof err) == REPLAY_OK, "open: %s", err);
    struct workload_item it;
    char got[256] = "";
    size_t len = 0;
    enum workload_next nx;
    while (r && (nx = replay_next(r, &it, err, sizeof err)) == WORKLOAD_NEXT_ITEM)
        len += (size_t)snprintf(got + len, sizeof got - len, "%s %s;", workload_cmd_name(it.op.cmd),
                                it.op.key);
    CHECK(!strcmp(got, "set 111;set 111;set 111;get 111;"), "ops: %s", got);
    char want[128];
    snprintf(want, sizeof want, "%s:5: unknown op 'GRAB'", path);
    CHECK(r && nx == WORKLOAD_NEXT_ERROR && !strcmp(err, want), "error '%s' want '%s'", err, want);
    replay_close(r);
    /* a NUL byte in a line is named as such, not as a line too long */
    fd = open(path, O_WRONLY | O_TRUNC);
    static const char nul_text[] =
        "op_time,key,key_size,op,op_count,size,cache_hits,ttl\n"
        "1,111,3,SET,3,10,0,\n2,1\0001,3,GET,1,10,1,\n3,111,3,GET,1,1,0,\n";
    CHECK(fd >= 0 && write(fd, nul_text, sizeof nul_text - 1) == (ssize_t)(sizeof nul_text - 1),
          "write nul");
    close(fd);
    r = NULL;
    CHECK(replay_open(&r, REPLAY_CACHELIB, path, 0, err, sizeof err) == REPLAY_OK, "open: %s", err);
    while (r && (nx = replay_next(r, &it, err, sizeof err)) == WORKLOAD_NEXT_ITEM)
        ;
    snprintf(want, sizeof want, "%s:3: a NUL byte at column 4", path);
    CHECK(r && nx == WORKLOAD_NEXT_ERROR && !strcmp(err, want), "error '%s' want '%s'", err, want);
    replay_close(r);
    CHECK(replay_open(&r, REPLAY_TWITTER, "/nonexistent/trace.csv", 0, err, sizeof err) ==
                  REPLAY_E_OPEN &&
              !strcmp(err, "/nonexistent/trace.csv: cannot open"),
          "missing file: %s", err);
    unlink(path);
}

static void test_settings_from_stats(void)
{
    static const char reply[] =
        "STAT maxbytes 67108864\r\nSTAT growth_factor 1.08\r\nSTAT chunk_size 32\r\n"
        "STAT cas_enabled no\r\nSTAT item_size_max 2097152\r\nSTAT slab_chunk_max 524288\r\n"
        "END\r\nVERSION 1.6.18\r\n";
    struct stats_sample *s = malloc(sizeof *s);
    struct stats_parse_batch b;
    struct slab_settings set;
    char err[128] = "";
    if (!s)
        return;
    stats_sample_init(s);
    stats_parse_batch_begin(&b, s, STATS_R_SETTINGS | STATS_R_VERSION);
    size_t used = 0;
    CHECK(stats_parse_batch_feed(&b, reply, sizeof reply - 1, &used) == STATS_PARSE_OK, "feed");
    CHECK(slab_settings_from_stats(&set, stats_sample_setting_lookup, s, err, sizeof err) ==
              SLAB_OK,
          "settings: %s", err);
    CHECK(set.growth_factor == 1.08 && set.chunk_size_min == 32 && !set.use_cas &&
              set.item_size_max == 2097152 && set.slab_chunk_max == 524288 &&
              set.mem_limit == 67108864,
          "settings %g %u %d %u %u", set.growth_factor, set.chunk_size_min, set.use_cas,
          set.item_size_max, set.slab_chunk_max);
    struct slab_ladder l;
    CHECK(slab_ladder_build(&set, &l, err, sizeof err) == SLAB_OK && l.cls[1].chunk_size == 80,
          "ladder: %s", err);
    /* without `stats settings` there is no ladder to build */
    stats_parse_batch_begin(&b, s, STATS_R_SETTINGS);
    static const char refused[] = "ERROR\r\n";
    stats_parse_batch_feed(&b, refused, sizeof refused - 1, &used);
    CHECK(slab_settings_from_stats(&set, stats_sample_setting_lookup, s, err, sizeof err) ==
                  SLAB_ERR_SETTINGS &&
              !strcmp(err, "`stats settings` lacks growth_factor"),
          "refused settings: %s", err);
    stats_sample_fini(s);
    free(s);
}

/* ---- issue 11 -------------------------------------------------------------------- */

/* text into a new temporary file; its path into path[32] */
static bool temp_file(char *path, const char *text)
{
    snprintf(path, 32, "/tmp/test_replay_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return false;
    bool ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    close(fd);
    return ok;
}

/* The log goes to a temporary file while a test reads what it says. */
struct log_capture {
    char path[32];
    int fd;
};

static void log_capture_start(struct log_capture *c)
{
    c->fd = -1;
    if (temp_file(c->path, "") && (c->fd = open(c->path, O_RDWR)) >= 0)
        log_set_fd(c->fd);
}

/* What was logged since log_capture_start, into out[n]; ends the capture. */
static void log_capture_end(struct log_capture *c, char *out, size_t n)
{
    out[0] = '\0';
    log_set_fd(-1);
    if (c->fd < 0)
        return;
    ssize_t got = pread(c->fd, out, n - 1, 0);
    out[got > 0 ? got : 0] = '\0';
    close(c->fd);
    unlink(c->path);
}

static void test_value_digits(void)
{
    static const uint64_t lens[] = { 1, 2, 3, 19, 20, 21, 64, 250, 4096 };
    static const struct {
        enum workload_cmd cmd;
        char fill, last;
    } forms[] = {
        { WORKLOAD_CMD_SET, '0', '1' },     { WORKLOAD_CMD_ADD, '0', '1' },
        { WORKLOAD_CMD_REPLACE, '0', '1' }, { WORKLOAD_CMD_PREPEND, '0', '0' },
        { WORKLOAD_CMD_APPEND, ' ', ' ' },
    };
    static char buf[4097], longest[4096];
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        replay_value_digits(forms[f].cmd, longest, sizeof longest);
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            uint64_t n = lens[i];
            const char *name = workload_cmd_name(forms[f].cmd);
            memset(buf, 'x', sizeof buf);
            replay_value_digits(forms[f].cmd, buf, n);
            size_t same = 0;
            while (same < n - 1 && buf[same] == forms[f].fill)
                same++;
            CHECK(same == n - 1 && buf[n - 1] == forms[f].last && buf[n] == 'x',
                  "%s of %" PRIu64 ": '%.24s'", name, n, buf);
            /* the sender cuts long values from the end of a short buffer */
            CHECK(!memcmp(buf, longest + sizeof longest - n, n), "%s of %" PRIu64 " is a tail",
                  name, n);
            if (forms[f].last != '1')
                continue;
            /* what memcached's safe_strtoull makes of it: the number 1,
             * however many digits (leading zeros never overflow) */
            buf[n] = '\0';
            char *end;
            errno = 0;
            unsigned long long v = strtoull(buf, &end, 10);
            CHECK(v == 1 && errno == 0 && *end == '\0', "%s of %" PRIu64 " reads as %llu", name, n,
                  v);
        }
    }
    memset(buf, 'x', 4);
    replay_value_digits(WORKLOAD_CMD_SET, buf, 0);
    CHECK(buf[0] == 'x', "length 0 writes nothing");
    /* a counter after a prepend and an append still reads as 1 */
    char v[16];
    replay_value_digits(WORKLOAD_CMD_PREPEND, v, 3);
    replay_value_digits(WORKLOAD_CMD_SET, v + 3, 4);
    replay_value_digits(WORKLOAD_CMD_APPEND, v + 7, 5);
    v[12] = '\0';
    char *end;
    CHECK(!strcmp(v, "0000001     ") && strtoull(v, &end, 10) == 1 && *end == ' ',
          "prepend + set + append: '%s'", v);
}

static void test_counter_rows(void)
{
    static const struct {
        const char *row;
        bool counts;
    } cases[] = {
        { "1,k,1,1,1,incr,0", true },
        { "1,k,1,1,1,decr,", true },
        { "1,k,1,1,1,set,0", false },
        { "1,k,1,1,1,incr", false },         /* no TTL: incr is the last field */
        { "1,a,incr,b,3,1,1,get,0", false }, /* incr inside a key */
        { "1,k,1,1,1,incre,0", false },
        { "1,k,1,1,1,INCR,0", false }, /* the trace's names are lower case */
        { ",incr,", true },            /* a counter row to parse (which fails) */
        { "incr,0", false },
        { "", false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(replay_twitter_is_counter_row(cases[i].row, strlen(cases[i].row)) == cases[i].counts,
              "'%s'", cases[i].row);
}

/* Reads r to its end or error: each op as "cmd key-length numeric;" */
static enum workload_next read_all(struct replay *r, char *got, size_t n, char *err, size_t errlen)
{
    struct workload_item it;
    enum workload_next nx;
    size_t len = 0;
    got[0] = '\0';
    while ((nx = replay_next(r, &it, err, errlen)) == WORKLOAD_NEXT_ITEM && len < n)
        len += (size_t)snprintf(got + len, n - len, "%s %u %c;", workload_cmd_name(it.op.cmd),
                                it.op.key_len, replay_value_numeric(r, &it.op) ? 'N' : '-');
    return nx;
}

static void test_twitter_counters(void)
{
    /* which writes get digits: every one to a key that some row (before or
     * after it) increments or decrements, as sent -- the same text with
     * another key size is another key */
    const char *text = "1,cnt:a,5,3,1,set,0\n"    /* N: incr on line 3 */
                       "2,plain,5,10,1,set,0\n"   /* -: never counted */
                       "3,cnt:a,5,3,1,incr,0\n"   /* (not a write) */
                       "4,late,4,2,1,set,0\n"     /* N: decr on line 7 */
                       "5,anon,20,6,1,set,0\n"    /* N: regenerated, incr on line 6 */
                       "6,anon,20,6,1,incr,0\n"   /*  */
                       "7,late,4,2,1,decr,0\n"    /*  */
                       "8,anon,21,6,1,set,0\n"    /* -: another length, another key */
                       "9,cnt:a,5,3,1,append,0\n" /* N: an append to a counter */
                       "10,cnt:a,5,3,1,get,0\n"   /* (not a write) */
                       "11,long,300,1,1,incr,0\n" /* cut to 250 */
                       "12,long,300,1,1,set,0\n"  /* N: the same cut key */
                       "13,zero,4,0,1,set,0\n"    /* N: empty, as recorded */
                       "14,zero,4,0,1,incr,0\n"   /*  */
                       "15,bad,3,1,1,frob,0\n";   /* the error still names line 15 */
    char path[32], err[REPLAY_ERR_MAX + 64] = "", got[512], logged[2048], want[256];
    struct log_capture lc;
    struct replay *r = NULL;
    if (!temp_file(path, text)) {
        CHECK(0, "temp file");
        return;
    }
    log_capture_start(&lc);
    CHECK(replay_open(&r, REPLAY_TWITTER, path, 0, err, sizeof err) == REPLAY_OK, "open: %s", err);
    if (!r) {
        log_capture_end(&lc, logged, sizeof logged);
        unlink(path);
        return;
    }
    CHECK(replay_counter_ops(r) == 5 && replay_counter_keys(r) == 5 && replay_has_counters(r),
          "found ahead: %" PRIu64 " ops on %" PRIu64 " keys", replay_counter_ops(r),
          replay_counter_keys(r));
    enum workload_next nx = read_all(r, got, sizeof got, err, sizeof err);
    CHECK(!strcmp(got, "set 5 N;set 5 -;incr 5 -;set 4 N;set 20 N;incr 20 -;decr 4 -;set 21 -;"
                       "append 5 N;get 5 -;incr 250 -;set 250 N;set 4 N;incr 4 -;"),
          "ops: %s", got);
    snprintf(want, sizeof want, "%s:15: unknown operation 'frob'", path);
    CHECK(nx == WORKLOAD_NEXT_ERROR && !strcmp(err, want), "error '%s' want '%s'", err, want);
    CHECK(replay_keys_cut(r) == 2, "keys cut: %" PRIu64, replay_keys_cut(r));
    replay_close(r);
    log_capture_end(&lc, logged, sizeof logged);
    /* the counters are the caller's to say (once, however many replays) */
    CHECK(strstr(logged, "incr/decr on") == NULL, "replay logged the counters:\n%s", logged);
    snprintf(want, sizeof want, "%s:11: key of 300 bytes cut to memcached's 250", path);
    CHECK(strstr(logged, want) != NULL, "log lacks '%s':\n%s", want, logged);
    snprintf(want, sizeof want,
             "%s: 2 rows had a key over memcached's 250 bytes, cut to 250 (the first at line 11)",
             path);
    CHECK(strstr(logged, want) != NULL, "log lacks '%s':\n%s", want, logged);
    unlink(path);

    /* without a single counter row there is no filter and no digit value */
    char plain[32];
    if (temp_file(plain, "1,a,1,5,1,set,0\n2,a,1,5,1,get,0\n")) {
        CHECK(replay_open(&r, REPLAY_TWITTER, plain, 0, err, sizeof err) == REPLAY_OK, "%s", err);
        CHECK(r && !replay_has_counters(r) && replay_counter_ops(r) == 0, "counters without incr");
        read_all(r, got, sizeof got, err, sizeof err);
        CHECK(!strcmp(got, "set 1 -;get 1 -;"), "ops: %s", got);
        replay_close(r);
        unlink(plain);
    }

    /* a pipe cannot be read twice: every write gets digits, with a warning */
    int fds[2];
    if (pipe(fds) == 0) {
        char fdpath[64];
        const char *ptext = "1,p,1,5,1,set,0\n2,p,1,5,1,get,0\n3,q,1,2,1,set,0\n";
        CHECK(write(fds[1], ptext, strlen(ptext)) == (ssize_t)strlen(ptext), "pipe write");
        close(fds[1]);
        snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fds[0]);
        log_capture_start(&lc);
        CHECK(replay_open(&r, REPLAY_TWITTER, fdpath, 0, err, sizeof err) == REPLAY_OK, "%s", err);
        if (r)
            read_all(r, got, sizeof got, err, sizeof err);
        replay_close(r);
        log_capture_end(&lc, logged, sizeof logged);
        CHECK(!strcmp(got, "set 1 N;get 1 -;set 1 N;"), "pipe ops: %s", got);
        snprintf(want, sizeof want, "%s: not a regular file", fdpath);
        CHECK(strstr(logged, want) && strstr(logged, "every value is sent as digits"),
              "log lacks '%s':\n%s", want, logged);
        close(fds[0]);
    }
}

static void db_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    CHECK(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql, msg ? msg : "");
    sqlite3_free(msg);
}

static void test_db_counters(void)
{
    static const char ddl[] =
        "CREATE TABLE sets (run_id INTEGER NOT NULL, seq INTEGER NOT NULL, conn_id INTEGER NOT "
        "NULL, t_ns INTEGER NOT NULL, cmd TEXT NOT NULL, key TEXT, key_hash INTEGER NOT NULL, "
        "key_len INTEGER NOT NULL, value_len INTEGER, flags INTEGER, exptime INTEGER, answer TEXT "
        "NOT NULL, latency_ns INTEGER, class_id INTEGER, PRIMARY KEY (run_id, seq))";
    static const char refused[] = "CLIENT_ERROR cannot increment or decrement non-"; /* as cut */
    static const struct {
        const char *cmd, *key; /* key NULL: recorded as a hash only (hash of hkey) */
        const char *hkey;
        int value_len; /* -1: none */
        const char *answer;
        char numeric; /* writes: 'N' digits, '-' letters; others ' ' */
    } rows[] = {
        { "set", "c1", "c1", 3, "STORED", 'N' },
        { "incr", "c1", "c1", -1, "4", ' ' },
        { "set", "c2", "c2", 5, "STORED", '-' }, /* every incr refused as non-numeric */
        { "incr", "c2", "c2", -1, refused, ' ' },
        { "set", NULL, "user:0001:hits:total!", 4, "STORED", 'N' },
        { "ma", NULL, "user:0001:hits:total!", -1, "HD", ' ' },
        { "set", "c4", "c4", 2, "noreply", 'N' },
        { "decr", "c4", "c4", -1, "noreply", ' ' }, /* answer unknown: counted */
        { "set", "other", "other", 9, "STORED", '-' },
        { "incr", "c2", "c2", -1, refused, ' ' },
        { "set", "c5", "c5", 2, "STORED", 'N' }, /* refused once, counted once */
        { "incr", "c5", "c5", -1, refused, ' ' },
        { "incr", "c5", "c5", -1, "3", ' ' },
    };
    char path[32], err[REPLAY_ERR_MAX + 64] = "", want[256] = "", got[512];
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    size_t wl = 0;
    if (!temp_file(path, "") || sqlite3_open(path, &db) != SQLITE_OK) {
        CHECK(0, "database");
        sqlite3_close(db);
        return;
    }
    db_exec(db, ddl);
    CHECK(sqlite3_prepare_v2(db,
                             "INSERT INTO sets (run_id, seq, conn_id, t_ns, cmd, key, key_hash, "
                             "key_len, value_len, flags, exptime, answer) "
                             "VALUES (1, ?1, 1, 0, ?2, ?3, ?4, ?5, ?6, 0, 0, ?7)",
                             -1, &st, NULL) == SQLITE_OK,
          "prepare: %s", sqlite3_errmsg(db));
    for (size_t i = 0; st && i < sizeof rows / sizeof rows[0]; i++) {
        sqlite3_bind_int64(st, 1, (int64_t)i);
        sqlite3_bind_text(st, 2, rows[i].cmd, -1, SQLITE_STATIC);
        if (rows[i].key)
            sqlite3_bind_text(st, 3, rows[i].key, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 3);
        sqlite3_bind_int64(st, 4, (int64_t)keyfmt_hash(rows[i].hkey, strlen(rows[i].hkey)));
        sqlite3_bind_int64(st, 5, (int64_t)strlen(rows[i].hkey));
        if (rows[i].value_len >= 0)
            sqlite3_bind_int64(st, 6, rows[i].value_len);
        else
            sqlite3_bind_null(st, 6);
        sqlite3_bind_text(st, 7, rows[i].answer, -1, SQLITE_STATIC);
        CHECK(sqlite3_step(st) == SQLITE_DONE, "insert %zu: %s", i, sqlite3_errmsg(db));
        sqlite3_reset(st);
        const char *sent = !strcmp(rows[i].cmd, "ma") ? "incr" : rows[i].cmd;
        wl +=
            (size_t)snprintf(want + wl, sizeof want - wl, "%s %zu %c;", sent, strlen(rows[i].hkey),
                             rows[i].numeric == ' ' ? '-' : rows[i].numeric);
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    struct replay *r = NULL;
    struct log_capture lc;
    char logged[1024];
    log_capture_start(&lc);
    CHECK(replay_open(&r, REPLAY_DB, path, 1, err, sizeof err) == REPLAY_OK, "open: %s", err);
    if (r) {
        /* c1, the hash-only key, c4, c5: 4 keys, 4 rows not refused */
        CHECK(replay_counter_ops(r) == 4 && replay_counter_keys(r) == 4,
              "found ahead: %" PRIu64 " ops on %" PRIu64 " keys", replay_counter_ops(r),
              replay_counter_keys(r));
        CHECK(read_all(r, got, sizeof got, err, sizeof err) == WORKLOAD_NEXT_END, "%s", err);
        CHECK(!strcmp(got, want), "ops: %s\nwant: %s", got, want);
    }
    replay_close(r);
    log_capture_end(&lc, logged, sizeof logged);
    unlink(path);
}

static void test_cachelib_header_errors(void)
{
#define TAIL " (key, op and size are required, key_size, op_count and ttl used, once each): "
    static const struct {
        const char *header;
        const char *why; /* NULL: accepted */
    } cases[] = {
        { "op_time,key,key_size,op,op_count,size,cache_hits,ttl", NULL },
        { "size,op,key", NULL },
        { "key,op,size,", NULL }, /* an unnamed column is ignored, as any unknown one */
        { "op_time,key,size", "bad header: no column 'op'" TAIL "'op_time,key,size'" },
        { "op_time,key_size,op_count",
          "bad header: no column 'key'; no column 'op'; no column 'size'" TAIL
          "'op_time,key_size,op_count'" },
        { "key,op,size,key",
          "bad header: column 'key' more than once (columns 1 4)" TAIL "'key,op,size,key'" },
        { "ttl,key,op,ttl,size,ttl", "bad header: column 'ttl' more than once (columns 1 4 6)" TAIL
                                     "'ttl,key,op,ttl,size,ttl'" },
        { "op_time,key,key,op_count,op_count",
          "bad header: no column 'op'; no column 'size'; column 'key' more than once (columns 2 "
          "3); column 'op_count' more than once (columns 4 5)" TAIL
          "'op_time,key,key,op_count,op_count'" },
        { "Key,OP,Size",
          "bad header: no column 'key'; no column 'op'; no column 'size'" TAIL "'Key,OP,Size'" },
        /* a data row where the header should be */
        { "1,123456789,9,SET,2,500,0,3600",
          "bad header: no column 'key'; no column 'op'; no column 'size'" TAIL
          "'1,123456789,9,SET,2,500,0,3600'" },
    };
#undef TAIL
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct replay_cachelib_cols cols;
        char line[256], why[REPLAY_ERR_MAX] = "";
        snprintf(line, sizeof line, "%s", cases[i].header);
        enum replay_status st = replay_cachelib_header(line, &cols, why, sizeof why);
        if (!cases[i].why) {
            CHECK(st == REPLAY_OK && cols.n_fields > 0, "'%s': %s", cases[i].header, why);
            continue;
        }
        CHECK(st == REPLAY_E_FORMAT && !strcmp(why, cases[i].why) && cols.n_fields == 0 &&
                  cols.key < 0 && cols.op < 0 && cols.size < 0,
              "'%s':\n   why '%s'\n  want '%s'", cases[i].header, why, cases[i].why);
    }
    /* a long header is quoted cut, and the message still fits */
    char line[REPLAY_LINE_MAX], why[REPLAY_ERR_MAX];
    size_t n = 0;
    for (int i = 0; i < 30; i++)
        n += (size_t)snprintf(line + n, sizeof line - n, "%scolumn_%02d", i ? "," : "", i);
    CHECK(replay_cachelib_header(line, &(struct replay_cachelib_cols){ 0 }, why, sizeof why) ==
                  REPLAY_E_FORMAT &&
              strstr(why, "no column 'key'; no column 'op'; no column 'size'") &&
              strstr(why, "...'") && strlen(why) < sizeof why - 1,
          "long header: %s", why);
    /* through a file: file and line named */
    char path[32], err[REPLAY_ERR_MAX + 64] = "", want[REPLAY_ERR_MAX + 64];
    if (temp_file(path, "\nop_time,key,key_size,op_count\n1,2,3,4\n")) {
        struct replay *r = NULL;
        struct workload_item it;
        CHECK(replay_open(&r, REPLAY_CACHELIB, path, 0, err, sizeof err) == REPLAY_OK, "%s", err);
        CHECK(r && replay_next(r, &it, err, sizeof err) == WORKLOAD_NEXT_ERROR, "bad header read");
        snprintf(want, sizeof want,
                 "%s:2: bad header: no column 'op'; no column 'size' (key, op and size are "
                 "required, key_size, op_count and ttl used, once each): "
                 "'op_time,key,key_size,op_count'",
                 path);
        CHECK(!strcmp(err, want), "error '%s'\n   want '%s'", err, want);
        replay_close(r);
        unlink(path);
    }
}

/* Key sizes 250, 251 and 256 (and the bounds) the same way in both readers:
 * up to 250 as is; over 250 cut to 250 and reported through cut_from; 0 and
 * over REPLAY_KEY_SIZE_MAX malformed. */
static void test_key_sizes(void)
{
    static const struct {
        uint64_t size;
        enum replay_status st;
        uint32_t cut_from;
    } cases[] = {
        { 1, REPLAY_OK, 0 },           { 250, REPLAY_OK, 0 },     { 251, REPLAY_OK, 251 },
        { 255, REPLAY_OK, 255 },       { 256, REPLAY_OK, 256 },   { 65535, REPLAY_OK, 65535 },
        { 65536, REPLAY_E_FORMAT, 0 }, { 0, REPLAY_E_FORMAT, 0 },
    };
    struct replay_cachelib_cols cols, bare;
    char hdr[] = "op_time,key,key_size,op,op_count,size,cache_hits,ttl", hdr2[] = "key,op,size";
    char why[REPLAY_ERR_MAX];
    CHECK(replay_cachelib_header(hdr, &cols, why, sizeof why) == REPLAY_OK, "%s", why);
    CHECK(replay_cachelib_header(hdr2, &bare, why, sizeof why) == REPLAY_OK, "%s", why);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char tw[128], cl[128], want_why[96];
        struct workload_op a, b;
        uint32_t cut_a = 7, cut_b = 7;
        uint64_t count;
        snprintf(tw, sizeof tw, "1,nz:u:abc,%" PRIu64 ",10,1,set,0", cases[i].size);
        snprintf(cl, sizeof cl, "1,123456789,%" PRIu64 ",SET,1,10,0,", cases[i].size);
        enum replay_status sa = replay_twitter_parse(tw, &a, &cut_a, why, sizeof why);
        CHECK(sa == cases[i].st, "twitter key size %" PRIu64 ": %s (%s)", cases[i].size,
              replay_status_str(sa), why);
        if (sa != REPLAY_OK) {
            snprintf(want_why, sizeof want_why, "bad key size '%" PRIu64 "' (1..65535)",
                     cases[i].size);
            CHECK(!strcmp(why, want_why), "twitter why '%s'", why);
        }
        enum replay_status sb =
            replay_cachelib_parse(cl, &cols, &b, &count, &cut_b, why, sizeof why);
        CHECK(sb == cases[i].st, "cachelib key_size %" PRIu64 ": %s (%s)", cases[i].size,
              replay_status_str(sb), why);
        if (sb != REPLAY_OK) {
            snprintf(want_why, sizeof want_why, "bad key_size '%" PRIu64 "' (1..65535)",
                     cases[i].size);
            CHECK(!strcmp(why, want_why), "cachelib why '%s'", why);
            continue;
        }
        uint32_t want_len = cases[i].size > 250 ? 250 : (uint32_t)cases[i].size;
        CHECK(a.key_len == want_len && strlen(a.key) == want_len && cut_a == cases[i].cut_from,
              "twitter key size %" PRIu64 ": key of %u, cut_from %u", cases[i].size, a.key_len,
              cut_a);
        CHECK(b.key_len == want_len && strlen(b.key) == want_len && cut_b == cases[i].cut_from,
              "cachelib key_size %" PRIu64 ": key of %u, cut_from %u", cases[i].size, b.key_len,
              cut_b);
    }
    /* CacheLib without key_size: the key's own length; two 256-byte keys
     * alike in their first 250 bytes stay two keys */
    static const size_t lens[] = { 250, 251, 256 };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char row[2][400], keys[2][WORKLOAD_KEY_MAX + 1];
        for (int v = 0; v < 2; v++) {
            struct workload_op op;
            uint64_t count;
            uint32_t cut = 7;
            int n =
                snprintf(row[v], sizeof row[v], "%.*s%c,GET,", (int)lens[i] - 1,
                         "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
                         "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
                         "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
                         "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
                         'A' + v);
            CHECK(n > 0 && replay_cachelib_parse(row[v], &bare, &op, &count, &cut, why,
                                                 sizeof why) == REPLAY_OK,
                  "key of %zu: %s", lens[i], why);
            CHECK(op.key_len == 250 && strlen(op.key) == 250 &&
                      cut == (lens[i] > 250 ? lens[i] : 0),
                  "key of %zu: sent %u, cut_from %u", lens[i], op.key_len, cut);
            memcpy(keys[v], op.key, sizeof keys[v]);
        }
        CHECK(strcmp(keys[0], keys[1]) != 0, "keys of %zu bytes that differ stay distinct",
              lens[i]);
    }
    /* through files: both readers count the rows cut and log the first */
    static const struct {
        enum replay_kind kind;
        const char *text;
        unsigned line;
    } files[] = {
        { REPLAY_TWITTER, "1,a,250,1,1,set,0\n2,b,251,1,1,set,0\n3,c,256,1,1,get,0\n", 2 },
        { REPLAY_CACHELIB,
          "op_time,key,key_size,op,op_count,size\n1,1,250,SET,1,5\n1,2,256,GET,3,0\n"
          "1,3,251,SET,1,5\n",
          3 },
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[32], err[REPLAY_ERR_MAX + 64] = "", got[256], logged[2048], want[160];
        struct replay *r = NULL;
        struct log_capture lc;
        if (!temp_file(path, files[i].text))
            continue;
        log_capture_start(&lc);
        CHECK(replay_open(&r, files[i].kind, path, 0, err, sizeof err) == REPLAY_OK, "%s", err);
        if (r) {
            CHECK(read_all(r, got, sizeof got, err, sizeof err) == WORKLOAD_NEXT_END, "%s", err);
            CHECK(replay_keys_cut(r) == 2, "file %zu: %" PRIu64 " cut", i, replay_keys_cut(r));
        }
        replay_close(r);
        log_capture_end(&lc, logged, sizeof logged);
        snprintf(want, sizeof want, "%s:%u: key of %s bytes cut to memcached's 250", path,
                 files[i].line, i ? "256" : "251");
        CHECK(strstr(logged, want) != NULL, "log lacks '%s':\n%s", want, logged);
        snprintf(want, sizeof want, "%s: 2 rows had a key over memcached's 250 bytes", path);
        CHECK(strstr(logged, want) != NULL, "log lacks '%s':\n%s", want, logged);
        unlink(path);
    }
}

/* ---- reads: the merge order and demand fill --------------------------------- */

static void test_merge_order(void)
{
    static const struct {
        bool has_w;
        int64_t w_seq;
        bool has_r;
        int64_t r_after;
        bool write;
    } cases[] = {
        { true, 1, true, 0, false }, /* after_write 0: before every write */
        { true, 1, true, 1, true },  /* the write a read follows goes first */
        { true, 2, true, 1, false }, /* ... and the next write after it */
        { true, 7, false, 0, true }, { false, 0, true, 3, false }, { false, 0, false, 0, false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(replay_merge_take_write(cases[i].has_w, cases[i].w_seq, cases[i].has_r,
                                      cases[i].r_after) == cases[i].write,
              "merge case %zu", i);
    enum workload_cmd c;
    CHECK(replay_db_read_cmd("gats", &c) && c == WORKLOAD_CMD_GAT, "gats");
    CHECK(replay_db_read_cmd("mg", &c) && c == WORKLOAD_CMD_GET, "mg");
    CHECK(replay_db_read_cmd("gets", &c) && c == WORKLOAD_CMD_GETS, "gets");
    CHECK(!replay_db_read_cmd("set", &c) && !replay_db_read_cmd(NULL, &c), "set is no read");
    CHECK(!replay_db_cmd("gat", &c) && !replay_db_cmd("get", &c), "a read is no write");
}

static void db_reads_fixture(const char *path)
{
    static const char ddl[] =
        "CREATE TABLE sets (run_id INTEGER NOT NULL, seq INTEGER NOT NULL, conn_id INTEGER NOT "
        "NULL, t_ns INTEGER NOT NULL, cmd TEXT NOT NULL, key TEXT, key_hash INTEGER NOT NULL, "
        "key_len INTEGER NOT NULL, value_len INTEGER, flags INTEGER, exptime INTEGER, answer TEXT "
        "NOT NULL, latency_ns INTEGER, class_id INTEGER, PRIMARY KEY (run_id, seq));"
        "CREATE TABLE reads (run_id INTEGER, seq INTEGER, after_write INTEGER, conn_id INTEGER, "
        "t_ns INTEGER, cmd TEXT, key TEXT, key_hash INTEGER, key_len INTEGER, hit INTEGER, "
        "value_len INTEGER, flags INTEGER, exptime INTEGER, class_id INTEGER)";
    static const struct {
        char table;            /* 'w' sets, 'r' reads */
        int seq, after;        /* after: reads only */
        const char *cmd, *key; /* */
        int hit, value_len;    /* value_len -1: NULL */
        int flags, exptime;
    } rows[] = {
        /* inserted out of order on purpose: the replay orders them */
        { 'r', 9, 4, "get", "c", 0, -1, 0, 0 },   { 'w', 1, 0, "set", "a", 0, 10, 3, 0 },
        { 'w', 2, 0, "set", "b", 0, 20, 0, 0 },   { 'w', 3, 0, "set", "c", 0, 30, 0, 0 },
        { 'w', 4, 0, "append", "c", 0, 5, 0, 0 }, { 'r', 1, 0, "get", "a", 0, -1, 0, 0 },
        { 'r', 2, 1, "get", "a", 1, 10, 3, 0 },   { 'r', 3, 1, "gets", "b", 0, -1, 0, 0 },
        { 'r', 4, 2, "gat", "a", 1, 10, 3, 100 }, { 'r', 6, 3, "get", "a", 0, -1, 0, 0 },
        { 'r', 5, 3, "mg", "d", 0, -1, 0, 0 },    { 'r', 7, 3, "frob", "e", 0, -1, 0, 0 },
        { 'r', 8, 3, "get", "c", 0, -1, 0, 0 },   { 'w', 1, 0, "set", "z", 0, 1, 0, 0 },
    };
    sqlite3 *db = NULL;
    sqlite3_stmt *w = NULL, *r = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        CHECK(0, "database");
        sqlite3_close(db);
        return;
    }
    db_exec(db, ddl);
    sqlite3_prepare_v2(db,
                       "INSERT INTO sets (run_id, seq, conn_id, t_ns, cmd, key, key_hash, "
                       "key_len, value_len, flags, exptime, answer) VALUES (?1, ?2, 1, 0, ?3, ?4, "
                       "?5, ?6, ?7, ?8, 0, 'STORED')",
                       -1, &w, NULL);
    sqlite3_prepare_v2(db,
                       "INSERT INTO reads VALUES (?1, ?2, ?9, 1, 0, ?3, ?4, ?5, ?6, ?10, ?7, ?8, "
                       "?11, NULL)",
                       -1, &r, NULL);
    for (size_t i = 0; w && r && i < sizeof rows / sizeof rows[0]; i++) {
        sqlite3_stmt *st = rows[i].table == 'w' ? w : r;
        /* the last row is another run's, which must not show */
        sqlite3_bind_int64(st, 1, i + 1 == sizeof rows / sizeof rows[0] ? 2 : 1);
        sqlite3_bind_int64(st, 2, rows[i].seq);
        sqlite3_bind_text(st, 3, rows[i].cmd, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, rows[i].key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, (int64_t)keyfmt_hash(rows[i].key, strlen(rows[i].key)));
        sqlite3_bind_int64(st, 6, (int64_t)strlen(rows[i].key));
        if (rows[i].value_len >= 0)
            sqlite3_bind_int64(st, 7, rows[i].value_len);
        else
            sqlite3_bind_null(st, 7);
        sqlite3_bind_int64(st, 8, rows[i].flags);
        if (st == r) {
            sqlite3_bind_int64(st, 9, rows[i].after);
            sqlite3_bind_int64(st, 10, rows[i].hit);
            if (!strncmp(rows[i].cmd, "gat", 3))
                sqlite3_bind_int64(st, 11, rows[i].exptime);
            else
                sqlite3_bind_null(st, 11);
        }
        CHECK(sqlite3_step(st) == SQLITE_DONE, "insert %zu: %s", i, sqlite3_errmsg(db));
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    sqlite3_finalize(w);
    sqlite3_finalize(r);
    sqlite3_close(db);
}

/* "cmd key [ttl] F<len>/<flags>|-;" per op; writes "cmd key len;" */
static enum workload_next read_merged(struct replay *r, char *got, size_t n, char *err,
                                      size_t errlen)
{
    struct workload_item it;
    enum workload_next nx;
    size_t len = 0;
    got[0] = '\0';
    while ((nx = replay_next(r, &it, err, errlen)) == WORKLOAD_NEXT_ITEM && len < n) {
        const struct workload_op *op = &it.op;
        if (workload_cmd_is_write(op->cmd))
            len += (size_t)snprintf(got + len, n - len, "%s %s %" PRIu64 ";",
                                    workload_cmd_name(op->cmd), op->key, op->value_len);
        else if (op->fill)
            len += (size_t)snprintf(got + len, n - len, "%s %s %lld F%" PRIu64 "/%u;",
                                    workload_cmd_name(op->cmd), op->key, (long long)op->ttl,
                                    op->value_len, op->flags);
        else
            len += (size_t)snprintf(got + len, n - len, "%s %s %lld -;", workload_cmd_name(op->cmd),
                                    op->key, (long long)op->ttl);
    }
    return nx;
}

static void test_db_reads(void)
{
    char path[32], err[REPLAY_ERR_MAX] = "", got[1024];
    if (!temp_file(path, ""))
        return;
    db_reads_fixture(path);
    static const struct {
        bool fill;
        const char *want;
        uint64_t next_write, unknown;
    } cases[] = {
        /* r1 before every write: a's next request is write 1 (no fill); r2
         * hit: its own length; r3: b's next is write 2; r4 gat keeps its
         * exptime, fills 10 (a's next is the read r6); r5 mg: d unknown; r7
         * 'frob' skipped; r8: c's next is the append; r9: 30 + 5 */
        { true,
          "get a 0 -;set a 10;get a 0 F10/3;gets b 0 -;set b 20;gat a 100 F10/3;set c 30;"
          "get d 0 -;get a 0 F10/3;get c 0 -;append c 5;get c 0 F35/0;",
          3, 1 },
        { false,
          "get a 0 -;set a 10;get a 0 -;gets b 0 -;set b 20;gat a 100 -;set c 30;get d 0 -;"
          "get a 0 -;get c 0 -;append c 5;get c 0 -;",
          0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct replay *r = NULL;
        CHECK(replay_open(&r, REPLAY_DB, path, 1, err, sizeof err) == REPLAY_OK, "open: %s", err);
        if (!r)
            continue;
        CHECK(replay_total(r) == 4, "writes only before replay_db_reads: %" PRIu64,
              replay_total(r));
        CHECK(replay_db_reads(r, cases[i].fill, err, sizeof err) == REPLAY_OK, "reads: %s", err);
        CHECK(replay_total(r) == 13 && replay_reads_total(r) == 9 &&
                  replay_can_fill(r) == cases[i].fill,
              "case %zu: total %" PRIu64 " reads %" PRIu64, i, replay_total(r),
              replay_reads_total(r));
        CHECK(read_merged(r, got, sizeof got, err, sizeof err) == WORKLOAD_NEXT_END, "%s", err);
        CHECK(!strcmp(got, cases[i].want), "case %zu:\n got %s\nwant %s", i, got, cases[i].want);
        CHECK(replay_fill_next_write(r) == cases[i].next_write &&
                  replay_fill_unknown(r) == cases[i].unknown && replay_skipped(r) == 1,
              "case %zu: next write %" PRIu64 ", unknown %" PRIu64 ", skipped %" PRIu64, i,
              replay_fill_next_write(r), replay_fill_unknown(r), replay_skipped(r));
        replay_close(r);
    }
    /* a file without reads: writes only, nothing to fill */
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) == SQLITE_OK)
        db_exec(db, "DROP TABLE reads");
    sqlite3_close(db);
    struct replay *r = NULL;
    CHECK(replay_open(&r, REPLAY_DB, path, 1, err, sizeof err) == REPLAY_OK, "open: %s", err);
    if (r) {
        CHECK(replay_db_reads(r, true, err, sizeof err) == REPLAY_OK && !replay_can_fill(r) &&
                  replay_total(r) == 4,
              "no reads: %s", err);
        CHECK(read_merged(r, got, sizeof got, err, sizeof err) == WORKLOAD_NEXT_END &&
                  !strcmp(got, "set a 10;set b 20;set c 30;append c 5;"),
              "no reads: %s", got);
    }
    replay_close(r);
    unlink(path);
}

/* The one rule for what a recorded write is sent as (record/rowseq.h),
 * and replay_db_cmd_mode in the load's words: the same, every case. */
static void test_write_cmd_table(void)
{
    static const struct {
        const char *cmd;
        char mode;
        bool ok;
        enum mc_cmd mc;
        enum workload_cmd wl;
    } cases[] = {
        { "set", 0, true, MC_CMD_SET, WORKLOAD_CMD_SET },
        { "cas", 0, true, MC_CMD_SET, WORKLOAD_CMD_SET },
        { "ms", 0, true, MC_CMD_SET, WORKLOAD_CMD_SET },
        { "ms", 'S', true, MC_CMD_SET, WORKLOAD_CMD_SET },
        { "ms", 'E', true, MC_CMD_ADD, WORKLOAD_CMD_ADD },
        { "ms", 'A', true, MC_CMD_APPEND, WORKLOAD_CMD_APPEND },
        { "ms", 'P', true, MC_CMD_PREPEND, WORKLOAD_CMD_PREPEND },
        { "ms", 'R', true, MC_CMD_REPLACE, WORKLOAD_CMD_REPLACE },
        { "set", 'E', true, MC_CMD_SET, WORKLOAD_CMD_SET },
        { "add", 0, true, MC_CMD_ADD, WORKLOAD_CMD_ADD },
        { "replace", 0, true, MC_CMD_REPLACE, WORKLOAD_CMD_REPLACE },
        { "append", 0, true, MC_CMD_APPEND, WORKLOAD_CMD_APPEND },
        { "prepend", 0, true, MC_CMD_PREPEND, WORKLOAD_CMD_PREPEND },
        { "delete", 0, true, MC_CMD_DELETE, WORKLOAD_CMD_DELETE },
        { "md", 0, true, MC_CMD_DELETE, WORKLOAD_CMD_DELETE },
        { "incr", 0, true, MC_CMD_INCR, WORKLOAD_CMD_INCR },
        { "ma", 0, true, MC_CMD_INCR, WORKLOAD_CMD_INCR },
        { "decr", 0, true, MC_CMD_DECR, WORKLOAD_CMD_DECR },
        { "touch", 0, true, MC_CMD_TOUCH, WORKLOAD_CMD_TOUCH },
        { "get", 0, false, MC_CMD_NONE, WORKLOAD_CMD_SET },
        { "gat", 0, false, MC_CMD_NONE, WORKLOAD_CMD_SET },
        { "mg", 0, false, MC_CMD_NONE, WORKLOAD_CMD_SET },
        { "flush_all", 0, false, MC_CMD_NONE, WORKLOAD_CMD_SET },
        { "SET", 0, false, MC_CMD_NONE, WORKLOAD_CMD_SET },
        { "", 0, false, MC_CMD_NONE, WORKLOAD_CMD_SET },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        enum mc_cmd mc = MC_CMD_NONE;
        enum workload_cmd wl = WORKLOAD_CMD_GET;
        bool ok = rowseq_write_cmd(cases[i].cmd, cases[i].mode, &mc);
        bool ok2 = replay_db_cmd_mode(cases[i].cmd, cases[i].mode, &wl);
        CHECK(ok == cases[i].ok && ok2 == cases[i].ok, "'%s' %c: %d %d", cases[i].cmd,
              cases[i].mode ? cases[i].mode : '-', ok, ok2);
        if (ok && ok2)
            CHECK(mc == cases[i].mc && wl == cases[i].wl, "'%s' %c: %s %s", cases[i].cmd,
                  cases[i].mode ? cases[i].mode : '-', mc_cmd_name(mc), workload_cmd_name(wl));
    }
    CHECK(!rowseq_write_cmd(NULL, 0, &(enum mc_cmd){ MC_CMD_NONE }), "NULL");
}

/* rowseq_capacity: the same sequence whatever order the rows are stored
 * in (the scan order is checked against seq; out of order, sorted). */
static void test_rowseq_order(void)
{
    static const struct {
        int seq;
        const char *cmd, *key, *mode;
        int value_len, exptime;
    } rows[] = {
        { 1, "set", "a", NULL, 100, 0 }, { 2, "set", "b", NULL, 300, 60 },
        { 3, "ms", "a", "A", 50, 0 },    { 4, "delete", "b", NULL, 0, 0 },
        { 5, "get", "a", NULL, 0, 0 },   { 6, "touch", "a", NULL, 0, 30 },
        { 7, "incr", "c", NULL, 1, 0 },  { 8, "ms", "b", "E", 70, 0 },
    };
    struct capacity_seq seq[2];
    size_t n = sizeof rows / sizeof rows[0];
    for (int pass = 0; pass < 2; pass++) {
        sqlite3 *db;
        char err[256] = "", sql[512];
        uint64_t total = 0;
        capacity_seq_init(&seq[pass]);
        CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK, "open");
        db_exec(db, "CREATE TABLE sets (run_id INTEGER, seq INTEGER, cmd TEXT, key TEXT, key_hash "
                    "INTEGER, key_len INTEGER, value_len INTEGER, flags INTEGER, exptime INTEGER, "
                    "answer TEXT, ms_mode TEXT)");
        for (size_t k = 0; k < n; k++) { /* pass 1: stored last row first */
            size_t i = pass ? n - 1 - k : k;
            snprintf(sql, sizeof sql,
                     "INSERT INTO sets VALUES (1, %d, '%s', '%s', %lld, %zu, %d, 0, %d, 'STORED', "
                     "%s%s%s)",
                     rows[i].seq, rows[i].cmd, rows[i].key,
                     (long long)keyfmt_hash(rows[i].key, strlen(rows[i].key)), strlen(rows[i].key),
                     rows[i].value_len, rows[i].exptime, rows[i].mode ? "'" : "",
                     rows[i].mode ? rows[i].mode : "NULL", rows[i].mode ? "'" : "");
            db_exec(db, sql);
        }
        struct reader *rd = NULL;
        CHECK(reader_open_sqlite(&rd, db, ":memory:", err, sizeof err) == 0, "reader: %s", err);
        CHECK(rowseq_capacity(rd, 1, &seq[pass], NULL, NULL, &total, err, sizeof err) == 0,
              "pass %d: %s", pass, err);
        reader_close(rd);
        CHECK(total == n, "pass %d: %llu rows", pass, (unsigned long long)total);
        sqlite3_close(db);
    }
    /* the get is no write: passed over */
    CHECK(seq[0].n == n - 1 && seq[1].n == seq[0].n && seq[0].n_keys == 3 &&
              seq[1].n_keys == seq[0].n_keys,
          "%zu %zu requests, %u %u keys", seq[0].n, seq[1].n, seq[0].n_keys, seq[1].n_keys);
    CHECK(seq[0].n == seq[1].n && !memcmp(seq[0].ops, seq[1].ops, seq[0].n * sizeof *seq[0].ops),
          "the same sequence from rows stored out of order");
    capacity_seq_free(&seq[0]);
    capacity_seq_free(&seq[1]);
}

int main(void)
{
    test_key_make();
    test_db_cmd();
    test_write_cmd_table();
    test_rowseq_order();
    test_twitter_rows();
    test_cachelib_rows();
    test_csv_file();
    test_settings_from_stats();
    test_value_digits();
    test_counter_rows();
    test_twitter_counters();
    test_db_counters();
    test_cachelib_header_errors();
    test_key_sizes();
    test_merge_order();
    test_db_reads();
    return check_done("test_replay");
}
