/* rowseq: a recorded run's writes in sequence order, as a replay sends them. */
#include "record/rowseq.h"

#include <stdio.h>
#include <string.h>

#include "core/keyfmt.h"
#include "record/reader.h"

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

/* One pass over the run's rows into out; ordered: in seq order, else in
 * the store's scan order (seq order for a run on SQLite), which is
 * checked: 1 when a row came out of order (out is then partly filled). 0,
 * or -1 with err. */
static int rowseq_pass(struct reader *rd, int64_t run_id, bool ordered, struct capacity_seq *out,
                       rowseq_progress_fn progress, void *ud, uint64_t n, char *err, size_t errlen)
{
    struct reader_cursor *c;
    struct reader_write w;
    uint64_t done = 0;
    int64_t last = INT64_MIN;
    char key[MC_KEY_MAX + 1];
    int rc = -1, step;
    if (reader_writes_open(rd, run_id, ordered ? READER_SEQ : READER_SCAN, &c, err, errlen))
        return -1;
    while ((step = reader_next_write(c, &w, err, errlen)) == 1) {
        enum mc_cmd cmd;
        if (!ordered && w.seq <= last) {
            rc = 1;
            goto out;
        }
        last = w.seq;
        if (++done % ROWSEQ_PROGRESS_ROWS == 0 && progress && !progress(ud, done, n)) {
            snprintf(err, errlen, "stopped");
            goto out;
        }
        if (!rowseq_write_cmd(w.cmd, w.ms_mode, &cmd))
            continue;
        int64_t value_len = w.value_len == -1 ? 0 : w.value_len; /* NULL: no value */
        if (w.key_len < 1 || w.key_len > MC_KEY_MAX || value_len < 0 ||
            (uint64_t)value_len > ROWSEQ_VALUE_MAX || w.flags < 0 || w.flags > UINT32_MAX) {
            snprintf(err, errlen, "run %lld seq %lld: bad key_len, value_len or flags",
                     (long long)run_id, (long long)w.seq);
            goto out;
        }
        rowseq_key(w.key, w.key_text_len, w.key_hash, (uint32_t)w.key_len, key);
        bool stores = rowseq_stores(cmd);
        /* memcached reads a text exptime as a 32-bit int */
        bool exp32 = w.exptime >= INT32_MIN && w.exptime <= INT32_MAX;
        struct capacity_req req = {
            .kind = rowseq_kind(cmd),
            .key_len = (uint32_t)w.key_len,
            .flags = stores ? (uint32_t)w.flags : 0,
            .value_len = stores ? (uint64_t)value_len : 0,
            .exptime = (stores || cmd == MC_CMD_TOUCH) && exp32 ? (int32_t)w.exptime : 0,
        };
        if (capacity_seq_add_req(out, keyfmt_hash(key, (size_t)w.key_len), &req)) {
            snprintf(err, errlen, "out of memory, or a write memcached never takes");
            goto out;
        }
    }
    if (step < 0)
        goto out;
    if (progress)
        progress(ud, done, n);
    rc = 0;
out:
    reader_cursor_close(c);
    return rc;
}

int rowseq_capacity(struct reader *rd, int64_t run_id, struct capacity_seq *out,
                    rowseq_progress_fn progress, void *ud, uint64_t *total, char *err,
                    size_t errlen)
{
    if (run_id == 0) /* the latest run, by the one rule (record/reader.h) */
        run_id = reader_run_find(rd, NULL);
    int64_t count = reader_writes_count(rd, run_id);
    uint64_t n = count > 0 ? (uint64_t)count : 0;
    if (total)
        *total = n;
    if (!n) {
        snprintf(err, errlen, "no recorded writes for run %lld", (long long)run_id);
        return -1;
    }
    int rc = rowseq_pass(rd, run_id, false, out, progress, ud, n, err, errlen);
    if (rc == 1) {
        capacity_seq_free(out);
        capacity_seq_init(out);
        rc = rowseq_pass(rd, run_id, true, out, progress, ud, n, err, errlen);
    }
    return rc ? -1 : 0;
}
