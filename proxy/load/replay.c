/* replay: recorded runs and public cache traces as operation sources.
 * Reads files (stdio) and recorded stores (record/reader.h: a SQLite file
 * or a PostgreSQL database, read-only); one row of each cursor in memory
 * at a time. */
#include "load/replay.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/keyfmt.h"
#include "core/log.h"
#include "record/pgstore.h"
#include "record/reader.h"
#include "record/rowseq.h"

static const char *const replay_status_text[REPLAY_STATUS_COUNT] = {
#define REPLAY_STATUS_ROW(id, text) text,
    REPLAY_STATUSES(REPLAY_STATUS_ROW)
#undef REPLAY_STATUS_ROW
};

const char *replay_status_str(enum replay_status st)
{
    return (unsigned)st < REPLAY_STATUS_COUNT ? replay_status_text[st] : "?";
}

struct replay {
    enum replay_kind kind;
    char path[WORKLOAD_FILE_MAX];
    FILE *f;
    uint64_t line; /* CSV line last read, 1-based */
    struct reader *rd;
    struct reader_cursor *cursor; /* the run's writes, ORDER BY seq */
    struct reader_write w;        /* the writes' pending row (w_ready) */
    int64_t run_id;
    struct replay_cachelib_cols cols;
    struct workload_op pending; /* a CacheLib row still repeating */
    uint64_t pending_left;
    uint64_t total, skipped;
    uint64_t keys_cut, first_cut_line; /* rows whose key was cut to 250 bytes */
    uint8_t *counters;                 /* Bloom filter of counter keys; NULL: none found */
    bool all_numeric;                  /* read ahead impossible: every value is digits */
    uint64_t counter_ops;              /* incr/decr found ahead */
    uint64_t counter_keys;             /* keys that set a bit of the filter */
    /* reads (replay_db_reads): their cursor, which cursor holds an unsent
     * row, and the last known value of each key for demand fill */
    struct reader_cursor *reads;
    struct reader_read rr; /* the reads' pending row (r_ready) */
    bool w_ready, r_ready, w_done, r_done;
    bool demand_fill;
    uint64_t reads_total;
    struct replay_known *known; /* REPLAY_FILL_SLOTS, on the first read */
    uint64_t fill_next_write, fill_unknown;
    char buf[REPLAY_LINE_MAX + 1];
};

/* One key's last known value (key_hash 0 and len_plus1 0: empty slot). */
struct replay_known {
    uint64_t key_hash;
    uint32_t len_plus1; /* value_len + 1, capped */
    uint32_t flags;
};

static enum replay_status replay_why(char *why, size_t n, enum replay_status st, const char *fmt,
                                     ...) __attribute__((format(printf, 4, 5)));

static enum replay_status replay_why(char *why, size_t n, enum replay_status st, const char *fmt,
                                     ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* ---- keys ----------------------------------------------------------------- */

/* op->key from a source key: as is when usable at the wanted length, else
 * regenerated from its hash. */
static void replay_set_key(struct workload_op *op, const char *key, size_t len, uint64_t hash,
                           uint32_t key_len)
{
    if (len == key_len && rowseq_key_usable(key, len)) {
        memcpy(op->key, key, len);
        op->key[len] = '\0';
    } else {
        char prefix[WORKLOAD_KEY_MAX + 1];
        int plen = keyfmt_text(KEYFMT_PREFIX, key, len, prefix, sizeof prefix);
        rowseq_key_make(hash, prefix, plen > 0 ? (size_t)plen : 0, key_len, op->key);
    }
    op->key_len = (uint16_t)key_len;
}

/* ---- counter keys ------------------------------------------------------------ */

void replay_value_digits(enum workload_cmd cmd, char *out, uint64_t len)
{
    if (!len)
        return;
    memset(out, cmd == WORKLOAD_CMD_APPEND ? ' ' : '0', (size_t)len);
    if (cmd != WORKLOAD_CMD_APPEND && cmd != WORKLOAD_CMD_PREPEND)
        out[len - 1] = '1';
}

/* The filter's probes for a key as sent: double hashing over a mixed FNV-1a
 * (splitmix64's finalizer, so that every bit of the hash counts). */
static uint32_t replay_probe(uint64_t h, unsigned i)
{
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    uint32_t a = (uint32_t)h, b = (uint32_t)(h >> 32) | 1;
    return (a + i * b) & (REPLAY_COUNTER_BITS - 1);
}

static enum replay_status replay_counter_mark(struct replay *r, const struct workload_op *op)
{
    if (!r->counters && !(r->counters = calloc(REPLAY_COUNTER_BITS / 8, 1)))
        return REPLAY_E_MEMORY;
    uint64_t h = keyfmt_hash(op->key, op->key_len);
    bool fresh = false;
    for (unsigned i = 0; i < REPLAY_COUNTER_PROBES; i++) {
        uint32_t b = replay_probe(h, i);
        fresh |= !(r->counters[b >> 3] & (1u << (b & 7)));
        r->counters[b >> 3] |= (uint8_t)(1u << (b & 7));
    }
    r->counter_keys += fresh;
    r->counter_ops++;
    return REPLAY_OK;
}

bool replay_value_numeric(const struct replay *r, const struct workload_op *op)
{
    if (!r || !workload_cmd_is_write(op->cmd))
        return false;
    if (r->all_numeric)
        return true;
    if (!r->counters)
        return false;
    uint64_t h = keyfmt_hash(op->key, op->key_len);
    for (unsigned i = 0; i < REPLAY_COUNTER_PROBES; i++) {
        uint32_t b = replay_probe(h, i);
        if (!(r->counters[b >> 3] & (1u << (b & 7))))
            return false;
    }
    return true;
}

bool replay_has_counters(const struct replay *r)
{
    return r && (r->all_numeric || r->counters);
}

/* ---- CSV fields ------------------------------------------------------------ */

struct replay_field {
    char *s;
    size_t len;
};

/* Splits at ',' (the traces never quote); false over REPLAY_FIELDS_MAX. */
static bool replay_split(char *line, struct replay_field *f, int *n)
{
    *n = 0;
    for (char *p = line;;) {
        char *comma = strchr(p, ',');
        if (*n == REPLAY_FIELDS_MAX)
            return false;
        f[*n].s = p;
        f[*n].len = comma ? (size_t)(comma - p) : strlen(p);
        (*n)++;
        if (!comma)
            return true;
        *comma = '\0';
        p = comma + 1;
    }
}

static bool replay_u64(const struct replay_field *f, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (f->len == 0 || f->len > 20)
        return false;
    for (size_t i = 0; i < f->len; i++) {
        if (f->s[i] < '0' || f->s[i] > '9' || v > (UINT64_MAX - (uint64_t)(f->s[i] - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(f->s[i] - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* A TTL field: empty or negative means none; above 30 days is capped. */
static bool replay_ttl(const struct replay_field *f, int64_t *out)
{
    uint64_t v = 0;
    *out = 0;
    if (f->len == 0 || (f->s[0] == '-' && f->len > 1))
        return true;
    if (!replay_u64(f, UINT64_MAX, &v))
        return false;
    *out = v > REPLAY_TTL_MAX ? REPLAY_TTL_MAX : (int64_t)v;
    return true;
}

/* ---- Twitter --------------------------------------------------------------- */

/* twitter/cache-trace's operation names -> what is sent; cas as set. */
static bool replay_twitter_cmd(const struct replay_field *f, enum workload_cmd *out)
{
    if (f->len == 3 && !memcmp(f->s, "cas", 3)) {
        *out = WORKLOAD_CMD_SET;
        return true;
    }
    return workload_cmd_parse(f->s, f->len, out) && *out != WORKLOAD_CMD_TOUCH;
}

/* The common tail of every trace row: sizes, TTL and the key, cut to
 * memcached's 250 bytes when longer (*cut_from: the size before, else 0). */
static enum replay_status replay_fill_op(struct workload_op *op, enum workload_cmd cmd,
                                         const struct replay_field *key, uint64_t key_size,
                                         uint64_t value_size, int64_t ttl, uint32_t *cut_from)
{
    if (cut_from)
        *cut_from = key_size > WORKLOAD_KEY_MAX ? (uint32_t)key_size : 0;
    if (key_size > WORKLOAD_KEY_MAX)
        key_size = WORKLOAD_KEY_MAX;
    memset(op, 0, sizeof *op);
    op->cmd = cmd;
    if (workload_cmd_is_write(cmd)) {
        op->value_len = value_size;
        op->ttl = ttl;
    } else if (cmd == WORKLOAD_CMD_INCR || cmd == WORKLOAD_CMD_DECR) {
        op->value_len = 1;
    }
    replay_set_key(op, key->s, key->len, keyfmt_hash(key->s, key->len), (uint32_t)key_size);
    return REPLAY_OK;
}

bool replay_twitter_is_counter_row(const char *line, size_t len)
{
    /* the operation is the second field from the end: ...,op,TTL */
    const char *end = line + len, *p = end;
    while (p > line && p[-1] != ',')
        p--;
    if (p == line)
        return false;
    const char *op_end = --p;
    while (p > line && p[-1] != ',')
        p--;
    return p > line && op_end - p == 4 && (!memcmp(p, "incr", 4) || !memcmp(p, "decr", 4));
}

enum replay_status replay_twitter_parse(char *line, struct workload_op *op, uint32_t *cut_from,
                                        char *why, size_t whylen)
{
    struct replay_field f[REPLAY_FIELDS_MAX];
    int n;
    if (line[0] == '\0' || line[0] == '#' || !strncmp(line, "timestamp,", 10))
        return REPLAY_SKIP;
    if (!replay_split(line, f, &n) || n < 7)
        return replay_why(
            why, whylen, REPLAY_E_FORMAT,
            "want 7 fields: timestamp,key,key size,value size,client id,operation,TTL");
    /* an anonymized key holding commas spans fields 1 .. n-6 */
    struct replay_field key = { f[1].s, (size_t)(f[n - 5].s - 1 - f[1].s) };
    for (char *p = key.s; p < key.s + key.len; p++)
        if (*p == '\0')
            *p = ',';
    const struct replay_field *ks = &f[n - 5], *vs = &f[n - 4], *opf = &f[n - 2], *ttlf = &f[n - 1];
    uint64_t key_size, value_size;
    int64_t ttl;
    enum workload_cmd cmd;
    if (!replay_u64(ks, REPLAY_KEY_SIZE_MAX, &key_size) || key_size == 0)
        return replay_why(why, whylen, REPLAY_E_FORMAT, "bad key size '%.*s' (1..%u)", (int)ks->len,
                          ks->s, REPLAY_KEY_SIZE_MAX);
    if (!replay_u64(vs, WORKLOAD_VALUE_MAX, &value_size))
        return replay_why(why, whylen, REPLAY_E_FORMAT, "bad value size '%.*s'", (int)vs->len,
                          vs->s);
    if (!replay_twitter_cmd(opf, &cmd))
        return replay_why(why, whylen, REPLAY_E_FORMAT, "unknown operation '%.*s'", (int)opf->len,
                          opf->s);
    if (!replay_ttl(ttlf, &ttl))
        return replay_why(why, whylen, REPLAY_E_FORMAT, "bad TTL '%.*s'", (int)ttlf->len, ttlf->s);
    return replay_fill_op(op, cmd, &key, key_size, value_size, ttl, cut_from);
}

/* ---- CacheLib ---------------------------------------------------------------- */

/* Appends to why[*at..n) (a message built in parts); cut at n. */
static void replay_why_add(char *why, size_t n, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void replay_why_add(char *why, size_t n, size_t *at, const char *fmt, ...)
{
    if (!why || *at + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(why + *at, n - *at, fmt, ap);
    va_end(ap);
    if (w > 0)
        *at = *at + (size_t)w < n ? *at + (size_t)w : n - 1;
}

#define REPLAY_HEADER_SHOWN 120 /* bytes of a bad header quoted back */

enum replay_status replay_cachelib_header(char *line, struct replay_cachelib_cols *cols, char *why,
                                          size_t whylen)
{
    struct replay_field f[REPLAY_FIELDS_MAX];
    int n;
    enum { NCOLS = 6 };
    static const char *const names[NCOLS] = { "key", "key_size", "op", "op_count", "size", "ttl" };
    static const bool required[NCOLS] = { true, false, true, false, true, false };
    int *slots[NCOLS] = { &cols->key,      &cols->key_size, &cols->op,
                          &cols->op_count, &cols->size,     &cols->ttl };
    char shown[REPLAY_HEADER_SHOWN + 4];
    size_t line_len = strlen(line);
    snprintf(shown, sizeof shown, "%.*s%s", REPLAY_HEADER_SHOWN, line,
             line_len > REPLAY_HEADER_SHOWN ? "..." : "");
    for (size_t k = 0; k < NCOLS; k++)
        *slots[k] = -1;
    cols->n_fields = 0;
    if (!replay_split(line, f, &n))
        return replay_why(why, whylen, REPLAY_E_FORMAT, "bad header: more than %d columns: '%s'",
                          REPLAY_FIELDS_MAX, shown);
    /* every bad column is named: each required one missing, each known
     * one given more than once (which of them would be meant?) */
    bool twice[NCOLS] = { false };
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < NCOLS; k++)
            if (strlen(names[k]) == f[i].len && !memcmp(names[k], f[i].s, f[i].len)) {
                if (*slots[k] >= 0)
                    twice[k] = true;
                else
                    *slots[k] = i;
            }
    size_t at = 0, bad = 0;
    if (why && whylen)
        why[0] = '\0';
    replay_why_add(why, whylen, &at, "bad header:");
    for (size_t k = 0; k < NCOLS; k++)
        if (required[k] && *slots[k] < 0)
            replay_why_add(why, whylen, &at, "%s no column '%s'", bad++ ? ";" : "", names[k]);
    for (size_t k = 0; k < NCOLS; k++) {
        if (!twice[k])
            continue;
        replay_why_add(why, whylen, &at, "%s column '%s' more than once (columns", bad++ ? ";" : "",
                       names[k]);
        for (int i = 0; i < n; i++)
            if (strlen(names[k]) == f[i].len && !memcmp(names[k], f[i].s, f[i].len))
                replay_why_add(why, whylen, &at, " %d", i + 1);
        replay_why_add(why, whylen, &at, ")");
    }
    if (bad) {
        replay_why_add(why, whylen, &at,
                       " (key, op and size are required, key_size, op_count and ttl used, once "
                       "each): '%s'",
                       shown);
        for (size_t k = 0; k < NCOLS; k++)
            *slots[k] = -1;
        return REPLAY_E_FORMAT;
    }
    if (why && whylen)
        why[0] = '\0';
    cols->n_fields = n;
    return REPLAY_OK;
}

/* CacheLib kvcache op names (any case) -> what is sent. */
static bool replay_cachelib_cmd(const struct replay_field *f, enum workload_cmd *out)
{
    static const struct {
        const char *name;
        enum workload_cmd cmd;
    } map[] = { { "get", WORKLOAD_CMD_GET },
                { "get_lease", WORKLOAD_CMD_GET },
                { "set", WORKLOAD_CMD_SET },
                { "set_lease", WORKLOAD_CMD_SET },
                { "delete", WORKLOAD_CMD_DELETE } };
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
        if (strlen(map[k].name) == f->len && !strncasecmp(map[k].name, f->s, f->len)) {
            *out = map[k].cmd;
            return true;
        }
    return false;
}

enum replay_status replay_cachelib_parse(char *line, const struct replay_cachelib_cols *cols,
                                         struct workload_op *op, uint64_t *count,
                                         uint32_t *cut_from, char *why, size_t whylen)
{
    struct replay_field f[REPLAY_FIELDS_MAX];
    int n;
    if (line[0] == '\0')
        return REPLAY_SKIP;
    if (!replay_split(line, f, &n) || n != cols->n_fields)
        return replay_why(why, whylen, REPLAY_E_FORMAT, "want %d fields as in the header",
                          cols->n_fields);
    const struct replay_field *key = &f[cols->key], *opf = &f[cols->op], *size = &f[cols->size];
    uint64_t key_size = key->len, value_size = 0;
    int64_t ttl = 0;
    enum workload_cmd cmd;
    *count = 1;
    if (!replay_cachelib_cmd(opf, &cmd))
        return replay_why(why, whylen, REPLAY_E_FORMAT, "unknown op '%.*s'", (int)opf->len, opf->s);
    if (cols->key_size >= 0 &&
        (!replay_u64(&f[cols->key_size], REPLAY_KEY_SIZE_MAX, &key_size) || key_size == 0))
        return replay_why(why, whylen, REPLAY_E_FORMAT, "bad key_size '%s' (1..%u)",
                          f[cols->key_size].s, REPLAY_KEY_SIZE_MAX);
    if ((size->len || cmd == WORKLOAD_CMD_SET) &&
        !replay_u64(size, WORKLOAD_VALUE_MAX, &value_size))
        return replay_why(why, whylen, REPLAY_E_FORMAT, "bad size '%.*s'", (int)size->len, size->s);
    if (cols->op_count >= 0 &&
        (!replay_u64(&f[cols->op_count], REPLAY_OP_COUNT_MAX, count) || *count == 0))
        return replay_why(why, whylen, REPLAY_E_FORMAT, "bad op_count '%s' (1..%u)",
                          f[cols->op_count].s, REPLAY_OP_COUNT_MAX);
    if (cols->ttl >= 0 && !replay_ttl(&f[cols->ttl], &ttl))
        return replay_why(why, whylen, REPLAY_E_FORMAT, "bad ttl '%s'", f[cols->ttl].s);
    if (key->len == 0)
        return replay_why(why, whylen, REPLAY_E_FORMAT, "empty key");
    return replay_fill_op(op, cmd, key, key_size, value_size, ttl, cut_from);
}

/* ---- recorded runs ------------------------------------------------------------ */

bool replay_db_cmd(const char *cmd, enum workload_cmd *out)
{
    return replay_db_cmd_mode(cmd, 0, out);
}

bool replay_db_read_cmd(const char *cmd, enum workload_cmd *out)
{
    static const struct {
        const char *name;
        enum workload_cmd cmd;
    } map[] = { { "get", WORKLOAD_CMD_GET },
                { "gets", WORKLOAD_CMD_GETS },
                { "gat", WORKLOAD_CMD_GAT },
                { "gats", WORKLOAD_CMD_GAT },
                { "mg", WORKLOAD_CMD_GET } };
    for (size_t k = 0; cmd && k < sizeof map / sizeof map[0]; k++)
        if (!strcmp(cmd, map[k].name)) {
            *out = map[k].cmd;
            return true;
        }
    return false;
}

bool replay_merge_take_write(bool has_write, int64_t w_seq, bool has_read, int64_t r_after)
{
    return has_write && (!has_read || w_seq <= r_after);
}

bool replay_db_cmd_mode(const char *cmd, char ms_mode, enum workload_cmd *out)
{
    enum mc_cmd c; /* the one rule (record/rowseq.h), in the load's words */
    if (!rowseq_write_cmd(cmd, ms_mode, &c))
        return false;
    const char *name = mc_cmd_name(c);
    return workload_cmd_parse(name, strlen(name), out);
}

static enum replay_status replay_db_prepare(struct replay *r, int64_t run_id, char *err,
                                            size_t errlen)
{
    char why[512];
    if (run_id == 0) /* the latest run, by the one rule (record/reader.h) */
        run_id = reader_run_find(r->rd, NULL);
    int64_t n = reader_writes_count(r->rd, run_id);
    if (n <= 0)
        return replay_why(err, errlen, REPLAY_E_FORMAT, "%s: no recorded writes for run %lld",
                          r->path, (long long)run_id);
    r->total = (uint64_t)n;
    r->run_id = run_id;
    if (reader_writes_open(r->rd, run_id, READER_SEQ, &r->cursor, why, sizeof why))
        return replay_why(err, errlen, REPLAY_E_DB, "%s: %s", r->path, why);
    return REPLAY_OK;
}

/* op->key of a recorded key (record/rowseq.h). */
static void replay_db_key(struct workload_op *op, const char *key, size_t key_text_len,
                          uint64_t hash, uint32_t key_len)
{
    rowseq_key(key, key_text_len, hash, key_len, op->key);
    op->key_len = (uint16_t)key_len;
}

/* The pending `sets` row into op; REPLAY_SKIP for a command with no replay. */
static enum replay_status replay_db_row(struct replay *r, struct workload_op *op, char *err,
                                        size_t errlen)
{
    const struct reader_write *w = &r->w;
    enum workload_cmd cmd;
    int64_t value_len = w->value_len == -1 ? 0 : w->value_len; /* NULL: no value */
    if (!replay_db_cmd_mode(w->cmd, w->ms_mode, &cmd))
        return REPLAY_SKIP;
    if (w->key_len < 1 || w->key_len > WORKLOAD_KEY_MAX || value_len < 0 ||
        (uint64_t)value_len > WORKLOAD_VALUE_MAX || w->flags < 0 || w->flags > UINT32_MAX)
        return replay_why(err, errlen, REPLAY_E_FORMAT,
                          "%s: run %lld seq %lld: bad key_len, "
                          "value_len or flags",
                          r->path, (long long)r->run_id, (long long)w->seq);
    memset(op, 0, sizeof *op);
    op->cmd = cmd;
    if (workload_cmd_is_write(cmd)) {
        op->value_len = (uint64_t)value_len;
        op->flags = (uint32_t)w->flags;
    }
    if (workload_cmd_is_write(cmd) || cmd == WORKLOAD_CMD_TOUCH)
        op->ttl = w->exptime < WORKLOAD_TTL_MIN || w->exptime > WORKLOAD_TTL_MAX ? 0 : w->exptime;
    if (cmd == WORKLOAD_CMD_INCR || cmd == WORKLOAD_CMD_DECR)
        op->value_len = 1;
    op->noreply = w->answer && (!strcmp(w->answer, "noreply") || !strcmp(w->answer, "quiet"));
    replay_db_key(op, w->key, w->key_text_len, w->key_hash, (uint32_t)w->key_len);
    return REPLAY_OK;
}

/* ---- reads and demand fill ------------------------------------------------------ */

static struct replay_known *replay_known_slot(struct replay *r, uint64_t key_hash)
{
    return &r->known[(key_hash ^ (key_hash >> 29)) & (REPLAY_FILL_SLOTS - 1)];
}

static void replay_known_set(struct replay *r, uint64_t key_hash, uint64_t value_len,
                             uint32_t flags)
{
    if (!r->known)
        return;
    struct replay_known *k = replay_known_slot(r, key_hash);
    k->key_hash = key_hash;
    k->len_plus1 = value_len >= UINT32_MAX - 1 ? UINT32_MAX : (uint32_t)value_len + 1;
    k->flags = flags;
}

static const struct replay_known *replay_known_get(struct replay *r, uint64_t key_hash)
{
    if (!r->known)
        return NULL;
    const struct replay_known *k = replay_known_slot(r, key_hash);
    return k->len_plus1 && k->key_hash == key_hash ? k : NULL;
}

/* A write just read: what the key holds after it, as far as is known. */
static void replay_known_write(struct replay *r, const struct workload_op *op, uint64_t key_hash)
{
    if (!r->known || !workload_cmd_is_write(op->cmd))
        return;
    if (op->cmd == WORKLOAD_CMD_APPEND || op->cmd == WORKLOAD_CMD_PREPEND) {
        const struct replay_known *k = replay_known_get(r, key_hash);
        if (k)
            replay_known_set(r, key_hash, (uint64_t)k->len_plus1 - 1 + op->value_len, k->flags);
        return;
    }
    replay_known_set(r, key_hash, op->value_len, op->flags);
}

enum replay_status replay_db_reads(struct replay *r, bool demand_fill, char *err, size_t errlen)
{
    char why[512];
    if (!r || r->kind != REPLAY_DB)
        return replay_why(err, errlen, REPLAY_E_ARG, "bad argument");
    int64_t n = reader_reads_count(r->rd, r->run_id);
    if (n <= 0)
        return REPLAY_OK; /* no reads in this store (or none recorded): writes only */
    r->reads_total = (uint64_t)n;
    if (reader_reads_open(r->rd, r->run_id, &r->reads, why, sizeof why))
        return replay_why(err, errlen, REPLAY_E_DB, "%s: reads: %s", r->path, why);
    r->total += r->reads_total;
    r->demand_fill = demand_fill;
    if (demand_fill && !(r->known = calloc(REPLAY_FILL_SLOTS, sizeof *r->known)))
        return replay_why(err, errlen, REPLAY_E_MEMORY, "%s: out of memory", r->path);
    return REPLAY_OK;
}

/* The reads cursor's pending row into op; REPLAY_SKIP for a command with
 * no replay. */
static enum replay_status replay_db_read_row(struct replay *r, struct workload_op *op, char *err,
                                             size_t errlen)
{
    const struct reader_read *rd = &r->rr;
    enum workload_cmd cmd;
    if (!replay_db_read_cmd(rd->cmd, &cmd))
        return REPLAY_SKIP;
    bool hit = rd->hit && rd->value_len >= 0;
    if (rd->key_len < 1 || rd->key_len > WORKLOAD_KEY_MAX ||
        (hit && (uint64_t)rd->value_len > WORKLOAD_VALUE_MAX) || rd->flags < 0 ||
        rd->flags > UINT32_MAX)
        return replay_why(err, errlen, REPLAY_E_FORMAT,
                          "%s: run %lld read seq %lld: bad key_len, value_len or flags", r->path,
                          (long long)r->run_id, (long long)rd->seq);
    memset(op, 0, sizeof *op);
    op->cmd = cmd;
    if (cmd == WORKLOAD_CMD_GAT)
        op->ttl =
            rd->exptime < WORKLOAD_TTL_MIN || rd->exptime > WORKLOAD_TTL_MAX ? 0 : rd->exptime;
    replay_db_key(op, rd->key, rd->key_text_len, rd->key_hash, (uint32_t)rd->key_len);
    if (!r->demand_fill)
        return REPLAY_OK;
    if (hit)
        replay_known_set(r, rd->key_hash, (uint64_t)rd->value_len, (uint32_t)rd->flags);
    const struct replay_known *k = replay_known_get(r, rd->key_hash);
    if (rd->next_kind == 0) {
        r->fill_next_write++; /* the recorded write that follows fills it */
    } else if (!k) {
        r->fill_unknown++;
    } else {
        op->fill = true;
        op->value_len = (uint64_t)k->len_plus1 - 1;
        op->flags = k->flags;
        op->ttl = cmd == WORKLOAD_CMD_GAT ? op->ttl : 0;
    }
    return REPLAY_OK;
}

uint64_t replay_reads_total(const struct replay *r)
{
    return r ? r->reads_total : 0;
}

bool replay_can_fill(const struct replay *r)
{
    return r && r->reads && r->demand_fill;
}

uint64_t replay_fill_next_write(const struct replay *r)
{
    return r ? r->fill_next_write : 0;
}

uint64_t replay_fill_unknown(const struct replay *r)
{
    return r ? r->fill_unknown : 0;
}

/* The counter keys of the run: every key an incr, decr or ma names, unless
 * each of them was refused as non-numeric. One pass of the store over the
 * run's rows, before the replay's own. */
static enum replay_status replay_db_counters(struct replay *r, char *err, size_t errlen)
{
    struct reader_cursor *c;
    struct reader_write w;
    enum replay_status rc = REPLAY_OK;
    char why[512];
    int step = 0;
    if (reader_writes_open(r->rd, r->run_id, READER_COUNTERS, &c, why, sizeof why))
        return replay_why(err, errlen, REPLAY_E_DB, "%s: %s", r->path, why);
    while (rc == REPLAY_OK && (step = reader_next_write(c, &w, why, sizeof why)) == 1) {
        struct workload_op op = { .cmd = WORKLOAD_CMD_INCR };
        if (w.key_len < 1 || w.key_len > WORKLOAD_KEY_MAX)
            continue; /* the replay stops at that row, naming it */
        replay_db_key(&op, w.key, w.key_text_len, w.key_hash, (uint32_t)w.key_len);
        if (replay_counter_mark(r, &op) != REPLAY_OK)
            rc = replay_why(err, errlen, REPLAY_E_MEMORY, "%s: out of memory", r->path);
    }
    if (rc == REPLAY_OK && step < 0)
        rc = replay_why(err, errlen, REPLAY_E_DB, "%s: %s", r->path, why);
    reader_cursor_close(c);
    return rc;
}

/* ---- the source --------------------------------------------------------------- */

static enum replay_status replay_open_csv(struct replay *r, char *err, size_t errlen)
{
    r->f = fopen(r->path, "r");
    if (!r->f)
        return replay_why(err, errlen, REPLAY_E_OPEN, "%s: cannot open", r->path);
    return REPLAY_OK;
}

/* The Twitter trace's counter keys: a first pass over the file, parsing
 * only its incr/decr rows, then back to the start. A row the first pass
 * cannot parse is passed over: the replay stops there, naming it. */
static enum replay_status replay_twitter_counters(struct replay *r, char *err, size_t errlen)
{
    struct stat sb;
    if (fstat(fileno(r->f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        r->all_numeric = true;
        log_warn("%s: not a regular file, so it cannot be read ahead for the keys incr/decr "
                 "count: every value is sent as digits (of the same lengths)",
                 r->path);
        return REPLAY_OK;
    }
    bool inside = false; /* in a line longer than the buffer */
    while (fgets(r->buf, sizeof r->buf, r->f)) {
        size_t len = strlen(r->buf);
        bool whole = len && r->buf[len - 1] == '\n', skip = inside;
        inside = !whole && !feof(r->f);
        if (skip || inside)
            continue;
        if (whole)
            r->buf[--len] = '\0';
        if (len && r->buf[len - 1] == '\r')
            r->buf[--len] = '\0';
        struct workload_op op;
        if (!replay_twitter_is_counter_row(r->buf, len) ||
            replay_twitter_parse(r->buf, &op, NULL, NULL, 0) != REPLAY_OK)
            continue;
        if (replay_counter_mark(r, &op) != REPLAY_OK)
            return replay_why(err, errlen, REPLAY_E_MEMORY, "%s: out of memory", r->path);
    }
    if (ferror(r->f) || fseek(r->f, 0, SEEK_SET) != 0)
        return replay_why(err, errlen, REPLAY_E_OPEN, "%s: read error", r->path);
    clearerr(r->f);
    return REPLAY_OK;
}

enum replay_status replay_open(struct replay **out, enum replay_kind kind, const char *path,
                               int64_t run_id, char *err, size_t errlen)
{
    enum replay_status rc;
    if (!out || !path || run_id < 0)
        return replay_why(err, errlen, REPLAY_E_ARG, "bad argument");
    *out = NULL;
    struct replay *r = calloc(1, sizeof *r);
    if (!r)
        return replay_why(err, errlen, REPLAY_E_MEMORY, "out of memory");
    r->kind = kind;
    snprintf(r->path, sizeof r->path, "%s", path);
    if (kind != REPLAY_DB) {
        rc = replay_open_csv(r, err, errlen);
        if (rc == REPLAY_OK && kind == REPLAY_TWITTER)
            rc = replay_twitter_counters(r, err, errlen);
    } else {
        char why[512];
        if (reader_open(&r->rd, path, why, sizeof why)) {
            /* the reader names a PostgreSQL database itself, password-free */
            snprintf(r->path, sizeof r->path, "%s", pgstore_is_uri(path) ? "" : path);
            rc = replay_why(err, errlen, REPLAY_E_OPEN, "%s%s%s", r->path, *r->path ? ": " : "",
                            why);
        } else {
            snprintf(r->path, sizeof r->path, "%s", reader_name(r->rd));
            rc = replay_db_prepare(r, run_id, err, errlen);
        }
        if (rc == REPLAY_OK)
            rc = replay_db_counters(r, err, errlen);
    }
    if (rc != REPLAY_OK) {
        replay_close(r);
        return rc;
    }
    *out = r;
    return REPLAY_OK;
}

void replay_close(struct replay *r)
{
    if (!r)
        return;
    if (r->keys_cut)
        log_warn("%s: %llu rows had a key over memcached's 250 bytes, cut to 250 (the first at "
                 "line %llu)",
                 r->path, (unsigned long long)r->keys_cut, (unsigned long long)r->first_cut_line);
    free(r->counters);
    free(r->known);
    reader_cursor_close(r->reads);
    reader_cursor_close(r->cursor);
    reader_close(r->rd);
    if (r->f)
        fclose(r->f);
    free(r);
}

uint64_t replay_total(const struct replay *r)
{
    return r ? r->total : 0;
}

uint64_t replay_skipped(const struct replay *r)
{
    return r ? r->skipped : 0;
}

int64_t replay_run_id(const struct replay *r)
{
    return r ? r->run_id : 0;
}

uint64_t replay_keys_cut(const struct replay *r)
{
    return r ? r->keys_cut : 0;
}

uint64_t replay_counter_ops(const struct replay *r)
{
    return r ? r->counter_ops : 0;
}

uint64_t replay_counter_keys(const struct replay *r)
{
    return r ? r->counter_keys : 0;
}

/* The next CSV line into r->buf without its line end; false at EOF. */
static enum workload_next replay_read_line(struct replay *r, char *err, size_t errlen)
{
    if (!fgets(r->buf, sizeof r->buf, r->f)) {
        if (ferror(r->f)) {
            replay_why(err, errlen, REPLAY_E_OPEN, "%s: read error", r->path);
            return WORKLOAD_NEXT_ERROR;
        }
        return WORKLOAD_NEXT_END;
    }
    r->line++;
    size_t len = strlen(r->buf);
    if (len && r->buf[len - 1] == '\n')
        r->buf[--len] = '\0';
    else if (!feof(r->f)) {
        /* fgets stops at a newline or a full buffer: a line that ends
         * short of both held a NUL byte, which strlen stopped at */
        if (len + 1 < sizeof r->buf)
            replay_why(err, errlen, REPLAY_E_FORMAT, "%s:%llu: a NUL byte at column %zu", r->path,
                       (unsigned long long)r->line, len + 1);
        else
            replay_why(err, errlen, REPLAY_E_FORMAT, "%s:%llu: line longer than %d bytes", r->path,
                       (unsigned long long)r->line, REPLAY_LINE_MAX - 1);
        return WORKLOAD_NEXT_ERROR;
    }
    if (len && r->buf[len - 1] == '\r')
        r->buf[--len] = '\0';
    return WORKLOAD_NEXT_ITEM;
}

/* One CSV row into *op (with its repeat count); SKIP rows are read past. */
static enum workload_next replay_next_csv(struct replay *r, struct workload_op *op, uint64_t *count,
                                          char *err, size_t errlen)
{
    char why[REPLAY_ERR_MAX] = "";
    for (;;) {
        enum workload_next nx = replay_read_line(r, err, errlen);
        if (nx != WORKLOAD_NEXT_ITEM)
            return nx;
        enum replay_status st;
        bool header = r->kind == REPLAY_CACHELIB && r->cols.n_fields == 0;
        uint32_t cut_from = 0;
        *count = 1;
        if (r->kind == REPLAY_TWITTER)
            st = replay_twitter_parse(r->buf, op, &cut_from, why, sizeof why);
        else if (header)
            st =
                r->buf[0] ? replay_cachelib_header(r->buf, &r->cols, why, sizeof why) : REPLAY_SKIP;
        else
            st = replay_cachelib_parse(r->buf, &r->cols, op, count, &cut_from, why, sizeof why);
        if (st == REPLAY_OK && cut_from && !r->keys_cut++) {
            r->first_cut_line = r->line;
            log_warn("%s:%llu: key of %u bytes cut to memcached's 250 (rows with longer keys are "
                     "cut and counted; the count comes at the end)",
                     r->path, (unsigned long long)r->line, cut_from);
        }
        if (st == REPLAY_OK && !header)
            return WORKLOAD_NEXT_ITEM;
        if (st != REPLAY_OK && st != REPLAY_SKIP) {
            replay_why(err, errlen, st, "%s:%llu: %s", r->path, (unsigned long long)r->line, why);
            return WORKLOAD_NEXT_ERROR;
        }
    }
}

/* Steps the writes (or reads) cursor unless it holds an unsent row or is
 * done; false on error. */
static bool replay_db_step(struct replay *r, bool reads, char *err, size_t errlen)
{
    bool *ready = reads ? &r->r_ready : &r->w_ready, *done = reads ? &r->r_done : &r->w_done;
    char why[512];
    if (*ready || *done)
        return true;
    int rc = reads ? reader_next_read(r->reads, &r->rr, why, sizeof why)
                   : reader_next_write(r->cursor, &r->w, why, sizeof why);
    if (rc == 1)
        *ready = true;
    else if (rc == 0)
        *done = true;
    else
        replay_why(err, errlen, REPLAY_E_DB, "%s: %s", r->path, why);
    return rc >= 0;
}

enum workload_next replay_next(struct replay *r, struct workload_item *it, char *err, size_t errlen)
{
    it->kind = WORKLOAD_ITEM_OP;
    if (r->pending_left) {
        r->pending_left--;
        it->op = r->pending;
        return WORKLOAD_NEXT_ITEM;
    }
    if (r->kind != REPLAY_DB) {
        uint64_t count = 1;
        memset(&it->op, 0, sizeof it->op);
        enum workload_next nx = replay_next_csv(r, &it->op, &count, err, errlen);
        if (nx == WORKLOAD_NEXT_ITEM && count > 1) {
            r->pending = it->op;
            r->pending_left = count - 1;
        }
        return nx;
    }
    for (;;) {
        if (!replay_db_step(r, false, err, errlen) ||
            (r->reads && !replay_db_step(r, true, err, errlen)))
            return WORKLOAD_NEXT_ERROR;
        if (!r->w_ready && !r->r_ready)
            return WORKLOAD_NEXT_END;
        bool write = replay_merge_take_write(r->w_ready, r->w.seq, r->r_ready,
                                             r->r_ready ? r->rr.after_write : 0);
        enum replay_status st;
        if (write) {
            r->w_ready = false;
            st = replay_db_row(r, &it->op, err, errlen);
            if (st == REPLAY_OK)
                replay_known_write(r, &it->op, r->w.key_hash);
        } else {
            r->r_ready = false;
            st = replay_db_read_row(r, &it->op, err, errlen);
        }
        if (st == REPLAY_OK)
            return WORKLOAD_NEXT_ITEM;
        if (st != REPLAY_SKIP)
            return WORKLOAD_NEXT_ERROR;
        r->skipped++;
    }
}
