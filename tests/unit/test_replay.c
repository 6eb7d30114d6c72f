/* test_replay: the replay sources' pure parts -- key regeneration, the
 * recorded-command mapping, Twitter and CacheLib rows -- plus reading a
 * small CSV through replay_open/replay_next (errors name file:line), and
 * slab_settings_from_stats on a `stats settings` reply as memcached 1.6.18
 * sends it. Prints every failing case; exits 1 if any. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/keyfmt.h"
#include "load/load.h"
#include "load/replay.h"
#include "protocol/stats_parse.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_key_make(void)
{
    char key[WORKLOAD_KEY_MAX + 1], again[WORKLOAD_KEY_MAX + 1];
    int bad = 0;
    for (uint32_t len = 1; len <= WORKLOAD_KEY_MAX; len++) {
        replay_key_make(0x0123456789abcdefull * len, "ns", 2, len, key);
        replay_key_make(0x0123456789abcdefull * len, "ns", 2, len, again);
        if (strlen(key) != len || !replay_key_usable(key, len) || strcmp(key, again))
            bad++;
    }
    CHECK(bad == 0, "%d lengths gave a key of the wrong length, unusable or unstable", bad);
    replay_key_make(42, "user", 4, 20, key);
    CHECK(!strncmp(key, "user", 4) && strlen(key) == 20 && key[19] == '.', "prefix kept: %s", key);
    replay_key_make(42, "user", 4, 14, key);
    CHECK(strncmp(key, "user", 4) != 0 && strlen(key) == 14, "prefix dropped when short: %s", key);
    replay_key_make(42, "bad key", 7, 30, key);
    CHECK(strncmp(key, "bad", 3) != 0, "an unusable prefix is not kept: %s", key);

    /* distinct hashes stay distinct at 11 bytes and more */
    enum { N = 20000 };
    static char store[N][16];
    static char *ptrs[N];
    uint64_t x = 1;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        replay_key_make(x, "", 0, 11, store[i]);
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
        CHECK(replay_key_usable(keys[i].key, strlen(keys[i].key)) == keys[i].usable, "usable '%s'",
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
        { "1,k,0,10,1,get,0", REPLAY_E_FORMAT, "", 0, 0, 0, NULL, "bad key size '0' (1..250)" },
        { "1,k,1,x,1,set,0", REPLAY_E_FORMAT, "", 0, 0, 0, NULL, "bad value size 'x'" },
        { "1,k,1,10,get", REPLAY_E_FORMAT, "", 0, 0, 0, NULL,
          "want 7 fields: timestamp,key,key size,value size,client id,operation,TTL" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[256], why[REPLAY_ERR_MAX] = "";
        struct workload_op op;
        memset(&op, 0, sizeof op);
        snprintf(line, sizeof line, "%s", cases[i].row);
        enum replay_status st = replay_twitter_parse(line, &op, why, sizeof why);
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
    replay_twitter_parse(a, &oa, NULL, 0);
    replay_twitter_parse(b, &ob, NULL, 0);
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
        enum replay_status st = replay_cachelib_parse(line, &cols, &op, &count, why, sizeof why);
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

int main(void)
{
    test_key_make();
    test_db_cmd();
    test_twitter_rows();
    test_cachelib_rows();
    test_csv_file();
    test_settings_from_stats();
    return check_done("test_replay");
}
