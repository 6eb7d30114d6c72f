/* rowseq: a recorded run's writes in sequence order, as a replay sends them. */
#include "record/rowseq.h"

#include <stdio.h>
#include <string.h>

#include "core/keyfmt.h"
#include "record/runs.h"

#define ROWSEQ_VALUE_MAX (1024ull * 1024 * 1024) /* memcached's largest -I */

bool rowseq_key_usable(const char *key, size_t len)
{
    if (!key || len == 0 || len > MC_KEY_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)key[i] <= 0x20 || (unsigned char)key[i] >= 0x7f)
            return false;
    return true;
}

void rowseq_key_make(uint64_t hash, const char *prefix, size_t prefix_len, uint32_t key_len,
                     char *out)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    char enc[ROWSEQ_HASH_DIGITS];
    for (int i = 0; i < ROWSEQ_HASH_DIGITS; i++) {
        enc[i] = digits[hash & 63];
        hash >>= 6;
    }
    /* the prefix keeps keys groupable by namespace, but never at the cost
     * of hash digits: those are what keep distinct keys distinct */
    if (!rowseq_key_usable(prefix, prefix_len) || prefix_len + ROWSEQ_HASH_DIGITS > key_len)
        prefix_len = 0;
    uint32_t len = 0;
    memcpy(out, prefix, prefix_len);
    len += (uint32_t)prefix_len;
    for (int i = 0; i < ROWSEQ_HASH_DIGITS && len < key_len; i++)
        out[len++] = enc[i];
    while (len < key_len)
        out[len++] = '.';
    out[len] = '\0';
}

void rowseq_key(const char *key, size_t key_text_len, uint64_t hash, uint32_t key_len, char *out)
{
    if (key && key_text_len == key_len && keyfmt_hash(key, key_text_len) != hash)
        key_text_len = 0;
    if (key && key_text_len == key_len && rowseq_key_usable(key, key_text_len)) {
        memcpy(out, key, key_text_len);
        out[key_text_len] = '\0';
    } else {
        rowseq_key_make(hash, key ? key : "", key_text_len, key_len, out);
    }
}

bool rowseq_write_cmd(const char *cmd, char ms_mode, enum mc_cmd *out)
{
    static const struct {
        const char *name;
        enum mc_cmd cmd;
    } map[] = { { "set", MC_CMD_SET },         { "add", MC_CMD_ADD },
                { "replace", MC_CMD_REPLACE }, { "append", MC_CMD_APPEND },
                { "prepend", MC_CMD_PREPEND }, { "delete", MC_CMD_DELETE },
                { "incr", MC_CMD_INCR },       { "decr", MC_CMD_DECR },
                { "touch", MC_CMD_TOUCH },     { "cas", MC_CMD_SET },
                { "ms", MC_CMD_SET },          { "md", MC_CMD_DELETE },
                { "ma", MC_CMD_INCR } };
    static const char modes[] = "EAPR";
    static const enum mc_cmd as[] = { MC_CMD_ADD, MC_CMD_APPEND, MC_CMD_PREPEND, MC_CMD_REPLACE };
    if (!cmd)
        return false;
    const char *m = ms_mode ? strchr(modes, ms_mode) : NULL;
    if (!strcmp(cmd, "ms") && m) {
        *out = as[m - modes];
        return true;
    }
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
        if (!strcmp(cmd, map[k].name)) {
            *out = map[k].cmd;
            return true;
        }
    return false;
}

/* What a replayed write command is to the capacity model. */
static enum capacity_kind rowseq_kind(enum mc_cmd c)
{
    switch (c) {
    case MC_CMD_SET: return CAPACITY_SET;
    case MC_CMD_ADD: return CAPACITY_ADD;
    case MC_CMD_REPLACE: return CAPACITY_REPLACE;
    case MC_CMD_APPEND: return CAPACITY_APPEND;
    case MC_CMD_PREPEND: return CAPACITY_PREPEND;
    case MC_CMD_DELETE: return CAPACITY_DELETE;
    case MC_CMD_TOUCH: return CAPACITY_TOUCH;
    default: return CAPACITY_OTHER; /* incr, decr: not modelled */
    }
}

static bool rowseq_stores(enum mc_cmd c)
{
    return c == MC_CMD_SET || c == MC_CMD_ADD || c == MC_CMD_REPLACE || c == MC_CMD_APPEND ||
           c == MC_CMD_PREPEND;
}

static int rowseq_db_error(sqlite3 *db, char *err, size_t errlen)
{
    int code = sqlite3_errcode(db) & 0xff;
    const char *path = sqlite3_db_filename(db, "main");
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) {
        char why[1024];
        runs_locked_why(path ? path : "", sqlite3_errmsg(db), why, sizeof why);
        snprintf(err, errlen, "%s", why);
    } else {
        snprintf(err, errlen, "%s (is it a slabtap database?)", sqlite3_errmsg(db));
    }
    return -1;
}

/* One pass over the run's rows into out; ordered: with ORDER BY seq, else
 * in the order SQLite scans the view (the writes' rowid order, seq order
 * for a run), which is checked: 1 when a row came out of order (out is
 * then partly filled). 0, or -1 with err. */
static int rowseq_pass(sqlite3 *db, int64_t run_id, bool ordered, struct capacity_seq *out,
                       rowseq_progress_fn progress, void *ud, uint64_t n, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    uint64_t done = 0;
    int64_t last = INT64_MIN;
    char key[MC_KEY_MAX + 1], sql[256];
    int rc = -1, step;
    /* a file from before schema v3 has no ms_mode: every ms was a set */
    for (int v3 = 1; v3 >= 0 && !st; v3--) {
        snprintf(sql, sizeof sql,
                 "SELECT cmd, key, key_hash, key_len, value_len, flags, exptime, seq, %s"
                 " FROM sets WHERE run_id = ?1%s",
                 v3 ? "ms_mode" : "NULL", ordered ? " ORDER BY seq" : "");
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
            st = NULL;
    }
    if (!st)
        return rowseq_db_error(db, err, errlen);
    sqlite3_bind_int64(st, 1, run_id);
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        enum mc_cmd cmd;
        const char *mode = (const char *)sqlite3_column_text(st, 8);
        int64_t seq = sqlite3_column_int64(st, 7);
        if (!ordered && seq <= last) {
            rc = 1;
            goto out;
        }
        last = seq;
        if (++done % ROWSEQ_PROGRESS_ROWS == 0 && progress && !progress(ud, done, n)) {
            snprintf(err, errlen, "stopped");
            goto out;
        }
        if (!rowseq_write_cmd((const char *)sqlite3_column_text(st, 0), mode ? mode[0] : 0, &cmd))
            continue;
        const char *k = (const char *)sqlite3_column_text(st, 1);
        size_t ktl = k ? (size_t)sqlite3_column_bytes(st, 1) : 0;
        int64_t key_len = sqlite3_column_int64(st, 3), value_len = sqlite3_column_int64(st, 4);
        int64_t flags = sqlite3_column_int64(st, 5), exptime = sqlite3_column_int64(st, 6);
        if (key_len < 1 || key_len > MC_KEY_MAX || value_len < 0 ||
            (uint64_t)value_len > ROWSEQ_VALUE_MAX || flags < 0 || flags > UINT32_MAX) {
            snprintf(err, errlen, "run %lld seq %lld: bad key_len, value_len or flags",
                     (long long)run_id, (long long)seq);
            goto out;
        }
        rowseq_key(k, ktl, (uint64_t)sqlite3_column_int64(st, 2), (uint32_t)key_len, key);
        bool stores = rowseq_stores(cmd);
        /* memcached reads a text exptime as a 32-bit int */
        bool exp32 = exptime >= INT32_MIN && exptime <= INT32_MAX;
        struct capacity_req req = {
            .kind = rowseq_kind(cmd),
            .key_len = (uint32_t)key_len,
            .flags = stores ? (uint32_t)flags : 0,
            .value_len = stores ? (uint64_t)value_len : 0,
            .exptime = (stores || cmd == MC_CMD_TOUCH) && exp32 ? (int32_t)exptime : 0,
        };
        if (capacity_seq_add_req(out, keyfmt_hash(key, (size_t)key_len), &req)) {
            snprintf(err, errlen, "out of memory, or a write memcached never takes");
            goto out;
        }
    }
    if (step != SQLITE_DONE) {
        rowseq_db_error(db, err, errlen);
        goto out;
    }
    if (progress)
        progress(ud, done, n);
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

int rowseq_capacity(sqlite3 *db, int64_t run_id, struct capacity_seq *out,
                    rowseq_progress_fn progress, void *ud, uint64_t *total, char *err,
                    size_t errlen)
{
    sqlite3_stmt *st = NULL;
    uint64_t n = 0;
    if (run_id == 0) /* the latest run, by the one rule (record/runs.h) */
        run_id = runs_latest(db);
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sets WHERE run_id = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        return rowseq_db_error(db, err, errlen);
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (total)
        *total = n;
    if (!n) {
        snprintf(err, errlen, "no recorded writes for run %lld", (long long)run_id);
        return -1;
    }
    /* sorting by seq costs 9/10 of a pass (3.2 s of 0.36 s unsorted for
     * 700k rows): the scan order is seq order unless a row says not */
    int rc = rowseq_pass(db, run_id, false, out, progress, ud, n, err, errlen);
    if (rc == 1) {
        capacity_seq_free(out);
        capacity_seq_init(out);
        rc = rowseq_pass(db, run_id, true, out, progress, ud, n, err, errlen);
    }
    return rc ? -1 : 0;
}
