/* pgstore: the PostgreSQL store. pg/schema.sql (derived from
 * schema/schema.sql.in and embedded at build time) defines every table and view; this file applies it, encodes
 * recorded writes in the format of schema.sql's `writes` (op, sizes, extra:
 * record/rowcode.h, the encoder store.c uses too) plus run_id, seq, t_ns and conn_id,
 * and sends a batch's writes with one binary COPY.
 * Must never be used by two threads at once, nor print: every failure comes
 * back as -1 with its reason in err, the password scrubbed out. */
#include "record/pgstore.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/escape.h"
#include "core/keyfmt.h"
#include "core/sha256.h"
#include "protocol/mc_parse.h"
#include "record/itemrow.h"
#include "record/ragg.h"
#include "record/row.h"
#include "record/rowcode.h"
#include "record/wagg.h"

extern const char slabtap_pg_schema_sql[];

/* advisory lock keys: the schema (applied once at a time) and, at
 * PG_LOCK_RUN + run_id, each run's liveness (held by its proxy's session) */
#define PG_LOCK_SCHEMA INT64_C(0x5354000000000000)
#define PG_LOCK_RUN INT64_C(0x5354000000000000)
#define PG_RUN_ID_MAX (INT64_C(1) << 48)

#define NS_PER_DAY INT64_C(86400000000000)

/* what the packed column `op` has room for (schema.sql) */
#define OP_CMD_MAX ROWCODE_CMD_MAX
#define ANSWERS_MAX 256 /* dictionary rows read at open; more are ignored */
#define ANSWER_TEXT_MAX 96

#define JSON_MAX 2048 /* extra of one write: what a rec_row can need, escaped */
#define JOB_TEXT_MAX (16 * 1024 * 1024)

#define COPY_FIELDS 9

/* key_prefixes' ids this session knows are in the table (open addressing;
 * emptied when 3/4 full, or when a batch that added some rolls back) */
#define PREFIX_KNOWN_SLOTS 65536
/* a prefix's id: a 40-bit hash of its text (agg_prefix_classes packs it in
 * 40 bits), never 0 */
#define PREFIX_ID_MOD ((UINT64_C(1) << 40) - 1)

/* run_meta key of the last transaction that upserted aggregates */
#define AGG_TOKEN_KEY "agg_flush"

/* --- the state ------------------------------------------------------------------- */

struct pg_answer {
    int id;
    size_t len;
    char text[ANSWER_TEXT_MAX];
};

struct pending_ref {
    int64_t run, seq;
    const struct rec_row *row;
};

/* a prefix the batch names first: its id and the row whose key text it is */
struct new_prefix {
    int64_t id;
    const struct rec_row *row;
};

struct pgstore_state {
    /* dictionaries as the database has them (read at open, never added to) */
    int8_t cmd_plain[MC_CMD_COUNT]; /* -1: not in cmds */
    int8_t cmd_ms[256];             /* ms by mode byte; [0]: ms without a mode */
    uint8_t cmd_flags[OP_CMD_MAX + 1], cmd_exptime[OP_CMD_MAX + 1];
    struct pg_answer answers[ANSWERS_MAX];
    size_t nanswers;
    /* day partitions known to exist, and those created by the open batch */
    int64_t days[PGSTORE_DAYS_MAX];
    size_t ndays, days_next;
    int64_t new_days[PGSTORE_DAYS_MAX];
    size_t nnew_days;
    /* runs whose liveness lock this session holds, and whether each keeps
     * key prefixes (--keys prefix: agg_prefixes, agg_prefix_classes) */
    int64_t runs[PGSTORE_RUNS_MAX];
    bool runs_prefix[PGSTORE_RUNS_MAX];
    size_t nruns;
    bool in_batch;
    struct pending_ref *pending; /* the batch's writes (sampled-out ones too) */
    size_t npending, pending_cap;
    struct pending_ref *rpending; /* the batch's reads (sampled-out ones too) */
    size_t nrpending, rpending_cap;
    char *copy; /* PGSTORE_COPY_BUF bytes */
    size_t copy_len;
    struct buf reads; /* the batch's reads as COPY text lines */
    /* the aggregates (record/wagg.h, record/ragg.h): counted from every
     * batch, carried across batches, upserted at most every
     * PGSTORE_AGG_FLUSH_MS in the transaction of the batch then due (or in
     * one of their own while idle), cleared only once that committed */
    struct wagg agg;
    struct ragg ragg;
    int64_t agg_run;  /* the run the write aggregates are of; 0: none */
    bool agg_prefix;  /* ... and whether it keeps key prefixes */
    bool agg_carry;   /* agg holds committed counts not upserted yet */
    bool agg_counted; /* the open batch counted rows */
    bool agg_flush;   /* the open transaction upserts every carried count */
    int64_t agg_written_ns;
    struct buf agg_sql;
    struct buf carry_sql;  /* counts of a run no longer counted, until a flush commits */
    struct ragg ragg_keep; /* the read cells before the open batch (cells only) */
    /* a transaction that upserts counts also sets run_meta AGG_TOKEN_KEY of
     * token_run to token: when its COMMIT has no answer (unsure), the next
     * transaction first reads it back to learn whether it committed */
    bool unsure;
    int64_t token, token_run;
    uint64_t *prefix_known; /* PREFIX_KNOWN_SLOTS ids, 0: empty */
    size_t nprefix_known;
    struct new_prefix *new_prefixes; /* the batch's, for key_prefixes */
    size_t nnew_prefixes, new_prefixes_cap;
    struct buf job_text, job_classes; /* scratch for sanitized job texts */
    struct buf extra;                 /* a write's extra JSON (at most JSON_MAX bytes) */
    char password[256];               /* the connection's, only to scrub it out of messages */
    struct buf tap_events, tap_items; /* issue 22: the batch's rows as COPY text lines */
};

/* --- messages ----------------------------------------------------------------------- */

void pgstore_scrub(const char *pw, char *msg, size_t cap)
{
    size_t pl = pw ? strlen(pw) : 0, o = 0;
    char out[2048];
    if (!pl || !cap)
        return;
    for (const char *p = msg; *p && o + 4 < sizeof out;) {
        if (!strncmp(p, pw, pl)) {
            memcpy(out + o, "***", 3);
            o += 3;
            p += pl;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    snprintf(msg, cap, "%s", out);
}

int pgstore_say(const char *shown, const char *pw, const char *what, const char *reason, char *err,
                size_t errlen)
{
    char r[1024];
    snprintf(r, sizeof r, "%s", reason && *reason ? reason : "unknown error");
    size_t n = strlen(r);
    while (n && (r[n - 1] == '\n' || r[n - 1] == ' '))
        r[--n] = '\0';
    for (char *p = r; *p; p++) /* libpq's multi-line messages on one line */
        if (*p == '\n')
            *p = ' ';
    snprintf(err, errlen, "%s: %s: %s", shown, what, r);
    pgstore_scrub(pw, err, errlen);
    return -1;
}

/* "<shown uri>: <what>: <libpq's reason>" in err; -1. */
static int pg_fail(struct pgstore *s, const char *what, const char *reason, char *err,
                   size_t errlen)
{
    return pgstore_say(s->shown, s->st ? s->st->password : "", what, reason, err, errlen);
}

static int conn_fail(struct pgstore *s, const char *what, char *err, size_t errlen)
{
    return pg_fail(s, what, s->conn ? PQerrorMessage(s->conn) : "no connection", err, errlen);
}

/* Checks a result: 0 when it has the status wanted (it is cleared either
 * way), else -1 with its message. */
static int res_ok(struct pgstore *s, PGresult *res, ExecStatusType want, const char *what,
                  char *err, size_t errlen)
{
    int rc = 0;
    if (!res)
        rc = conn_fail(s, what, err, errlen);
    else if (PQresultStatus(res) != want)
        rc = pg_fail(s, what, PQresultErrorMessage(res), err, errlen);
    PQclear(res);
    return rc;
}

static int exec(struct pgstore *s, const char *sql, const char *what, char *err, size_t errlen)
{
    PGresult *res = PQexec(s->conn, sql);
    ExecStatusType want =
        res && PQresultStatus(res) == PGRES_TUPLES_OK ? PGRES_TUPLES_OK : PGRES_COMMAND_OK;
    return res_ok(s, res, want, what, err, errlen);
}

/* --- connection strings ----------------------------------------------------------- */

bool pgstore_is_uri(const char *db)
{
    return db && (!strncmp(db, "postgresql://", 13) || !strncmp(db, "postgres://", 11));
}

static void put_str(char *out, size_t outlen, size_t *at, const char *p, size_t n)
{
    while (n-- && *at + 1 < outlen)
        out[(*at)++] = *p++;
    out[*at < outlen ? *at : outlen - 1] = '\0';
}

/* URI form: scheme://[user[:password]@]host.../db[?k=v&...] */
static void redact_uri(const char *uri, char *out, size_t outlen)
{
    size_t at = 0;
    const char *p = strstr(uri, "://") + 3;
    put_str(out, outlen, &at, uri, (size_t)(p - uri));
    /* libpq: the user info ends at the first '@' before any '/' */
    const char *slash = p + strcspn(p, "/?"), *amp = memchr(p, '@', (size_t)(slash - p));
    if (amp) {
        const char *colon = memchr(p, ':', (size_t)(amp - p));
        put_str(out, outlen, &at, p, (size_t)((colon ? colon : amp) - p));
        put_str(out, outlen, &at, "@", 1);
        p = amp + 1;
    }
    const char *q = strchr(p, '?');
    if (!q) {
        put_str(out, outlen, &at, p, strlen(p));
        return;
    }
    put_str(out, outlen, &at, p, (size_t)(q - p));
    char sep = '?';
    for (q++; *q;) {
        size_t n = strcspn(q, "&");
        if (!(n >= 9 && !strncmp(q, "password=", 9)) && n) {
            put_str(out, outlen, &at, &sep, 1);
            put_str(out, outlen, &at, q, n);
            sep = '&';
        }
        q += n;
        if (*q == '&')
            q++;
    }
}

/* keyword = value form: every password keyword and its value dropped */
static void redact_kv(const char *s, char *out, size_t outlen)
{
    size_t at = 0;
    out[0] = '\0';
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == '\n')
            s++;
        if (!*s)
            break;
        const char *start = s;
        while (*s && *s != '=' && *s != ' ' && *s != '\t')
            s++;
        bool pw = (size_t)(s - start) == 8 && !strncmp(start, "password", 8);
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '=') {
            s++;
            while (*s == ' ' || *s == '\t')
                s++;
            if (*s == '\'') { /* quoted, with backslash escapes */
                for (s++; *s && *s != '\''; s++)
                    if (*s == '\\' && s[1])
                        s++;
                if (*s == '\'')
                    s++;
            } else {
                while (*s && *s != ' ' && *s != '\t' && *s != '\n')
                    s++;
            }
        }
        if (!pw) {
            if (at)
                put_str(out, outlen, &at, " ", 1);
            put_str(out, outlen, &at, start, (size_t)(s - start));
        }
    }
}

void pgstore_redact(const char *uri, char *out, size_t outlen)
{
    if (!outlen)
        return;
    out[0] = '\0';
    if (!uri)
        return;
    if (pgstore_is_uri(uri))
        redact_uri(uri, out, outlen);
    else
        redact_kv(uri, out, outlen);
}

/* --- text for PostgreSQL ------------------------------------------------------------ */

/* Copies n bytes as valid UTF-8 without NUL: each byte that is not part of
 * a valid sequence becomes U+FFFD. Writes at most 3 * n bytes; returns how
 * many. */
static size_t utf8_clean(char *dst, const char *src, size_t n)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = esc_utf8_len(p + i, n - i);
        if (k) {
            memcpy(dst + o, p + i, k);
            o += k;
            i += k;
        } else {
            memcpy(dst + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    return o;
}

/* Appends n bytes of text as valid UTF-8 (utf8_clean) to b. */
static void buf_put_clean(struct buf *b, const char *text, size_t n)
{
    if (buf_reserve(b, 3 * n))
        return;
    b->len += utf8_clean(b->data + b->len, text, n);
    b->data[b->len] = '\0';
}

/* JSON text as jsonb takes it: each \u0000 (refused) becomes \ufffd. */
static void json_unnul(char *p)
{
    for (; p && *p; p++) {
        if (*p != '\\')
            continue;
        if (p[1] == 'u' && !strncmp(p + 2, "0000", 4))
            memcpy(p + 2, "fffd", 4);
        if (p[1])
            p++; /* the escaped character is never an escape itself */
    }
}

/* A job's text as PostgreSQL takes it: valid UTF-8, and for JSON no \u0000
 * (jsonb refuses it; it becomes \ufffd). Into b; NULL when too large or
 * out of memory. */
static const char *job_clean(struct buf *b, const char *text, bool json)
{
    size_t n = strlen(text);
    buf_reset(b);
    if (n > JOB_TEXT_MAX)
        return NULL;
    buf_puts(b, ""); /* "" for an empty text */
    buf_put_clean(b, text, n);
    if (b->failed)
        return NULL;
    if (json)
        json_unnul(b->data);
    return b->data;
}

/* --- the encoder ------------------------------------------------------------------- */

static int cmd_id_of(const struct pgstore_state *st, const struct rec_row *r)
{
    int id = -1;
    if (r->cmd == MC_CMD_MS)
        id = st->cmd_ms[(unsigned char)r->ms_mode];
    else if (r->cmd < MC_CMD_COUNT && !r->ms_mode)
        id = st->cmd_plain[r->cmd];
    return id > 0 ? id : 0;
}

/* answers with a digit (incr results, opaques) stay inline, as in store.c */
static int answer_id_of(const struct pgstore_state *st, const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (text[i] >= '0' && text[i] <= '9')
            return 0;
    for (size_t i = 0; i < st->nanswers; i++)
        if (st->answers[i].len == len && !memcmp(st->answers[i].text, text, len))
            return st->answers[i].id;
    return 0;
}

static char *put_be16(char *p, uint16_t v)
{
    p[0] = (char)(v >> 8);
    p[1] = (char)v;
    return p + 2;
}

static char *put_be32(char *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        *p++ = (char)(v >> (8 * i));
    return p;
}

static char *put_i64(char *p, int64_t v) /* a field: length 8, then the value */
{
    p = put_be32(p, 8);
    uint64_t u = (uint64_t)v;
    for (int i = 7; i >= 0; i--)
        *p++ = (char)(u >> (8 * i));
    return p;
}

/* One write as a binary COPY tuple at p (PGSTORE_ROW_MAX bytes free):
 * the bytes written, or 0 when the row cannot be encoded. */
static size_t encode_row(struct pgstore_state *st, int64_t run_id, const struct rec_row *r,
                         char *p0)
{
    /* the bits and extra's JSON: record/rowcode.h, shared with store.c */
    int cmd_id = cmd_id_of(st, r);
    const char *name = mc_cmd_name((enum mc_cmd)r->cmd);
    struct rowcode_in in = {
        .cmd_id = cmd_id,
        .cmd_has_flags = cmd_id > 0 && st->cmd_flags[cmd_id],
        .cmd_has_exptime = cmd_id > 0 && st->cmd_exptime[cmd_id],
        .cmd = name,
        .cmd_len = strlen(name),
        .ms_mode = r->ms_mode ? &r->ms_mode : NULL,
        .ms_len = r->ms_mode ? 1 : 0,
        .answer = r->answer,
        .answer_len = strnlen(r->answer, sizeof r->answer),
        .key_len = { true, r->key_len },
        .value_len = { r->value_len >= 0, r->value_len },
        .flags = { r->has_flags, r->flags },
        .exptime = { r->has_exptime, r->exptime },
        .latency_ns = { r->latency_ns >= 0, r->latency_ns },
        .class_id = { r->class_id > 0, r->class_id },
    };
    in.answer_id = answer_id_of(st, r->answer, in.answer_len);
    struct rowcode_out enc;
    struct buf *j = &st->extra;
    if (rowcode_encode(&in, ROWCODE_TEXT_UTF8, j, &enc))
        return 0;
    bool json = enc.json;
    int64_t fe = enc.fe;
    char num[32];
    const char *jtext = j->data;
    size_t jlen = j->len;
    if (!json && fe) { /* flags and exptime as a jsonb number */
        jlen = (size_t)snprintf(num, sizeof num, "%lld", (long long)fe);
        jtext = num;
    }

    char *p = put_be16(p0, COPY_FIELDS);
    p = put_i64(p, run_id);
    p = put_i64(p, r->seq > INT64_MAX ? INT64_MAX : (int64_t)r->seq);
    p = put_i64(p, r->t_ns);
    p = put_i64(p, r->conn_id);
    p = put_i64(p, (int64_t)r->key_hash);
    if (r->key_text_len >= 0) {
        size_t kn = (size_t)r->key_text_len < sizeof r->key_text ? (size_t)r->key_text_len
                                                                 : sizeof r->key_text;
        size_t n = utf8_clean(p + 4, r->key_text, kn); /* <= 3 * MC_KEY_MAX */
        p = put_be32(p, (uint32_t)n) + n;
    } else {
        p = put_be32(p, UINT32_MAX); /* -1: NULL */
    }
    p = put_i64(p, enc.op);
    p = put_i64(p, enc.sizes);
    if (json || fe) {
        p = put_be32(p, (uint32_t)jlen + 1);
        *p++ = 1; /* jsonb's binary format: version 1, then the text */
        memcpy(p, jtext, jlen);
        p += jlen;
    } else {
        p = put_be32(p, UINT32_MAX);
    }
    return (size_t)(p - p0);
}

/* the bound PGSTORE_ROW_MAX holds: 2 + 8 fields of 12 + a key of 4 + 3 *
 * the key text + a jsonb of 4 + 1 + JSON_MAX */
_Static_assert(2 + 8 * 12 + 4 + 3 * (MC_KEY_MAX + 1) + 5 + JSON_MAX <= PGSTORE_ROW_MAX,
               "PGSTORE_ROW_MAX holds the largest encoded row");

/* --- schema --------------------------------------------------------------------------- */

/* Upgrade steps, one per schema version, run before schema.sql on an older
 * database (index v: from version v to v + 1). Version 1 is the first. */
static const char *const upgrade_steps[PGSTORE_SCHEMA_VERSION] = {
    [0] = NULL, /* 0: an empty database; schema.sql creates everything */
    /* 1 -> 2: the aggregates (issue 21): new tables and views only, which
     * schema.sql creates */
    [1] = NULL,
    /* 2 -> 3: what recorded the run (issue 22: watch, snapshot) */
    [2] = "ALTER TABLE runs ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'proxy';",
    /* 3 -> 4: the shadows (issue 23): new tables and views only */
    [3] = NULL,
};

static int apply_schema(struct pgstore *s, char *err, size_t errlen)
{
    uint8_t d[SHA256_DIGEST_LEN];
    char hex[SHA256_HEX_LEN + 1], sql[256];
    sha256(slabtap_pg_schema_sql, strlen(slabtap_pg_schema_sql), d);
    sha256_hex(d, hex);
    if (exec(s, "BEGIN", "starting the schema transaction", err, errlen))
        return -1;
    snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%lld)", (long long)PG_LOCK_SCHEMA);
    if (exec(s, sql, "waiting for the schema lock", err, errlen))
        goto rollback;
    int from = 0;
    bool same = false;
    PGresult *res = PQexec(s->conn, "SELECT to_regclass('schema_version') IS NOT NULL");
    bool have = PQresultStatus(res) == PGRES_TUPLES_OK && !strcmp(PQgetvalue(res, 0, 0), "t");
    if (res_ok(s, res, PGRES_TUPLES_OK, "reading the schema version", err, errlen))
        goto rollback;
    res = PQexec(s->conn, have ? "SELECT version, sha256 FROM schema_version" : "SELECT 0, ''");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        res_ok(s, res, PGRES_TUPLES_OK, "reading the schema version", err, errlen);
        goto rollback;
    }
    if (PQntuples(res) == 1) {
        from = atoi(PQgetvalue(res, 0, 0));
        same = !strcmp(PQgetvalue(res, 0, 1), hex);
    }
    PQclear(res);
    if (from > PGSTORE_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: schema version %d is newer than this slabtap (%d)", s->shown,
                 from, PGSTORE_SCHEMA_VERSION);
        goto rollback;
    }
    if (from == PGSTORE_SCHEMA_VERSION && same)
        return exec(s, "COMMIT", "committing the schema", err, errlen);
    for (int v = from; v > 0 && v < PGSTORE_SCHEMA_VERSION; v++)
        if (upgrade_steps[v] && exec(s, upgrade_steps[v], "upgrading the schema", err, errlen))
            goto rollback;
    /* the schema, quiet about what already exists */
    if (exec(s, "SET LOCAL client_min_messages = warning", "applying the schema", err, errlen) ||
        exec(s, slabtap_pg_schema_sql, "applying pg/schema.sql", err, errlen))
        goto rollback;
    const char *params[2] = { NULL, hex };
    char ver[16];
    snprintf(ver, sizeof ver, "%d", PGSTORE_SCHEMA_VERSION);
    params[0] = ver;
    res = PQexecParams(s->conn,
                       "INSERT INTO schema_version (one, version, sha256) VALUES (true, $1, $2)"
                       " ON CONFLICT (one) DO UPDATE SET version = $1, sha256 = $2",
                       2, NULL, params, NULL, NULL, 0);
    if (res_ok(s, res, PGRES_COMMAND_OK, "writing the schema version", err, errlen))
        goto rollback;
    return exec(s, "COMMIT", "committing the schema", err, errlen);
rollback:
    PQclear(PQexec(s->conn, "ROLLBACK"));
    return -1;
}

/* Runs that never ended and whose proxy's session is gone (nobody holds
 * their liveness lock): marked crashed with the rows they did record. */
static int mark_crashed(struct pgstore *s, char *err, size_t errlen)
{
    char sql[768];
    snprintf(sql, sizeof sql,
             "UPDATE runs SET crashed = 1,"
             " ended_ns = coalesce((SELECT max(t_ns) FROM writes w WHERE w.run_id = runs.run_id),"
             " started_ns),"
             " rows_recorded = (SELECT count(*) FROM writes w WHERE w.run_id = runs.run_id)"
             " WHERE ended_ns IS NULL AND crashed = 0 AND run_id > 0 AND run_id < %lld"
             " AND pg_try_advisory_xact_lock(%lld + run_id)",
             (long long)PG_RUN_ID_MAX, (long long)PG_LOCK_RUN);
    return exec(s, sql, "marking crashed runs", err, errlen);
}

/* --- statements ------------------------------------------------------------------------ */

static const struct {
    const char *name, *sql;
    int nparams;
} statements[] = {
    { "gets",
      "INSERT INTO get_counts (run_id, second, cmd, requests, keys, hits, misses, bytes_returned)"
      " VALUES ($1,$2,$3,$4,$5,$6,$7,$8) ON CONFLICT (run_id, second, cmd) DO UPDATE SET"
      " requests = get_counts.requests + excluded.requests,"
      " keys = get_counts.keys + excluded.keys, hits = get_counts.hits + excluded.hits,"
      " misses = get_counts.misses + excluded.misses,"
      " bytes_returned = get_counts.bytes_returned + excluded.bytes_returned",
      8 },
    /* a sample and its classes in one statement: $6 is {"<class_id>": fields, ...} */
    { "sample",
      "WITH s AS (INSERT INTO samples (run_id, t_ns, phase_id, final, stats)"
      " VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING sample_id)"
      " INSERT INTO sample_classes (sample_id, class_id, fields)"
      " SELECT s.sample_id, c.key::integer, c.value FROM s, jsonb_each($6::jsonb) c",
      6 },
    { "settings",
      "INSERT INTO settings (run_id, t_ns, version, settings) VALUES ($1, $2, $3, $4::jsonb)"
      " ON CONFLICT (run_id, t_ns) DO UPDATE SET version = excluded.version,"
      " settings = excluded.settings",
      4 },
    { "meta",
      "INSERT INTO run_meta (run_id, key, value) VALUES ($1, $2, $3)"
      " ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value",
      3 },
    { "end_phase",
      "UPDATE phases SET ended_ns = $2 WHERE run_id = $1 AND ended_ns IS NULL AND phase_id <> $3",
      3 },
    { "phase", "INSERT INTO phases (phase_id, run_id, name, started_ns) VALUES ($1, $2, $3, $4)",
      4 },
    { "partition", "SELECT slabtap_writes_partition($1)", 1 },
    /* issue 23: the shadows' samples (as "sample"), settings, events and counts */
    { "shadow_sample",
      "WITH s AS (INSERT INTO shadow_samples (run_id, target, t_ns, final, stats)"
      " VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING sample_id)"
      " INSERT INTO shadow_sample_classes (sample_id, class_id, fields)"
      " SELECT s.sample_id, c.key::integer, c.value FROM s, jsonb_each($6::jsonb) c",
      6 },
    { "shadow_settings",
      "INSERT INTO shadow_settings (run_id, target, t_ns, version, settings)"
      " VALUES ($1, $2, $3, $4, $5::jsonb) ON CONFLICT (run_id, target, t_ns) DO UPDATE SET"
      " version = excluded.version, settings = excluded.settings",
      5 },
    { "shadow_event",
      "INSERT INTO shadow_events (run_id, target, t_ns, event, detail) VALUES ($1, $2, $3, $4, $5)",
      5 },
    { "shadow_counts",
      "INSERT INTO shadow_counts (run_id, target, second, reads, hits, misses, fills, writes,"
      " stored, not_stored, others, errors, dropped)"
      " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
      " ON CONFLICT (run_id, target, second) DO UPDATE SET"
      " reads = shadow_counts.reads + excluded.reads, hits = shadow_counts.hits + excluded.hits,"
      " misses = shadow_counts.misses + excluded.misses,"
      " fills = shadow_counts.fills + excluded.fills,"
      " writes = shadow_counts.writes + excluded.writes,"
      " stored = shadow_counts.stored + excluded.stored,"
      " not_stored = shadow_counts.not_stored + excluded.not_stored,"
      " others = shadow_counts.others + excluded.others,"
      " errors = shadow_counts.errors + excluded.errors,"
      " dropped = shadow_counts.dropped + excluded.dropped",
      13 },
    /* issue 22: a snapshot's header, written when it starts and when it ends */
    { "snapshot",
      "INSERT INTO snapshots (run_id, snap, t_ns, ended_ns, items, bytes, complete, header)"
      " VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (run_id, snap) DO UPDATE SET"
      " t_ns = excluded.t_ns, ended_ns = excluded.ended_ns, items = excluded.items,"
      " bytes = excluded.bytes, complete = excluded.complete, header = excluded.header",
      8 },
};

static int prepare_all(struct pgstore *s, char *err, size_t errlen)
{
    PQclear(PQexec(s->conn, "DEALLOCATE ALL"));
    for (size_t i = 0; i < sizeof statements / sizeof statements[0]; i++) {
        PGresult *res =
            PQprepare(s->conn, statements[i].name, statements[i].sql, statements[i].nparams, NULL);
        if (res_ok(s, res, PGRES_COMMAND_OK, "preparing statements", err, errlen))
            return -1;
    }
    return 0;
}

/* A prepared statement with text parameters (NULL: SQL NULL). */
static int run_prepared(struct pgstore *s, const char *name, int n, const char *const *params,
                        const char *what, char *err, size_t errlen)
{
    PGresult *res = PQexecPrepared(s->conn, name, n, params, NULL, NULL, 0);
    ExecStatusType want =
        res && PQresultStatus(res) == PGRES_TUPLES_OK ? PGRES_TUPLES_OK : PGRES_COMMAND_OK;
    return res_ok(s, res, want, what, err, errlen);
}

/* Reads cmds and answers: what op may point at. */
static int load_dicts(struct pgstore *s, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    memset(st->cmd_plain, -1, sizeof st->cmd_plain);
    memset(st->cmd_ms, -1, sizeof st->cmd_ms);
    memset(st->cmd_flags, 0, sizeof st->cmd_flags);
    memset(st->cmd_exptime, 0, sizeof st->cmd_exptime);
    st->nanswers = 0;
    PGresult *res = PQexec(s->conn, "SELECT cmd_id, cmd, ms_mode, has_flags, has_exptime FROM cmds"
                                    " WHERE cmd_id BETWEEN 1 AND 63");
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return res_ok(s, res, PGRES_TUPLES_OK, "reading cmds", err, errlen);
    for (int i = 0; i < PQntuples(res); i++) {
        int id = atoi(PQgetvalue(res, i, 0));
        const char *cmd = PQgetvalue(res, i, 1), *mode = PQgetvalue(res, i, 2);
        st->cmd_flags[id] = atoi(PQgetvalue(res, i, 3)) != 0;
        st->cmd_exptime[id] = atoi(PQgetvalue(res, i, 4)) != 0;
        if (!strcmp(cmd, "ms") && strlen(mode) <= 1) {
            st->cmd_ms[(unsigned char)mode[0]] = (int8_t)id;
            continue;
        }
        if (*mode)
            continue;
        for (int c = 0; c < MC_CMD_COUNT; c++)
            if (c != MC_CMD_MS && !strcmp(mc_cmd_name((enum mc_cmd)c), cmd))
                st->cmd_plain[c] = (int8_t)id;
    }
    PQclear(res);
    res = PQexec(s->conn, "SELECT answer_id, answer FROM answers WHERE answer_id BETWEEN 1 AND "
                          "4398046511103 ORDER BY answer_id");
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        return res_ok(s, res, PGRES_TUPLES_OK, "reading answers", err, errlen);
    for (int i = 0; i < PQntuples(res) && st->nanswers < ANSWERS_MAX; i++) {
        size_t len = (size_t)PQgetlength(res, i, 1);
        if (len >= ANSWER_TEXT_MAX)
            continue;
        struct pg_answer *a = &st->answers[st->nanswers++];
        a->id = atoi(PQgetvalue(res, i, 0));
        a->len = len;
        memcpy(a->text, PQgetvalue(res, i, 1), len);
    }
    PQclear(res);
    return 0;
}

/* After a (re)connection: session settings, statements, dictionaries, the
 * runs' liveness locks. */
static int session_setup(struct pgstore *s, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    const char *pw = PQpass(s->conn);
    snprintf(st->password, sizeof st->password, "%s", pw ? pw : "");
    if (prepare_all(s, err, errlen) || load_dicts(s, err, errlen))
        return -1;
    for (size_t i = 0; i < st->nruns; i++) {
        char sql[96];
        snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(%lld)",
                 (long long)(PG_LOCK_RUN + st->runs[i]));
        if (exec(s, sql, "taking the run's lock again", err, errlen))
            return -1;
    }
    st->ndays = st->days_next = 0; /* partitions are looked up again */
    return 0;
}

/* --- open and close ----------------------------------------------------------------- */

struct pg_conn *pgstore_connect(const char *uri, const char *options)
{
    /* defaults first: what the connection string says overrides them,
     * except the encoding, which the encoder needs */
    const char *keys[] = { "connect_timeout", "application_name", "options",
                           "dbname",          "client_encoding",  NULL };
    const char *vals[] = { "10", "slabtap", options, uri, "UTF8", NULL };
    return (struct pg_conn *)PQconnectdbParams(keys, vals, 1);
}

int pgstore_open(struct pgstore *s, const char *uri, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    pgstore_redact(uri, s->shown, sizeof s->shown);
    if (strlen(uri) >= sizeof s->uri) {
        snprintf(err, errlen, "%.200s...: connection string longer than %d bytes", s->shown,
                 PGSTORE_URI_MAX - 1);
        return -1;
    }
    snprintf(s->uri, sizeof s->uri, "%s", uri);
    s->st = calloc(1, sizeof *s->st);
    if (s->st) {
        buf_init(&s->st->extra, JSON_MAX);
        s->st->copy = malloc(PGSTORE_COPY_BUF);
        buf_init(&s->st->reads, BUF_UNBOUNDED);
        buf_init(&s->st->tap_events, BUF_UNBOUNDED);
        buf_init(&s->st->tap_items, BUF_UNBOUNDED);
        buf_init(&s->st->agg_sql, BUF_UNBOUNDED);
        buf_init(&s->st->carry_sql, BUF_UNBOUNDED);
        buf_init(&s->st->job_text, 3 * JOB_TEXT_MAX + 2);
        buf_init(&s->st->job_classes, 3 * JOB_TEXT_MAX + 2);
    }
    if (s->st)
        s->st->prefix_known = calloc(PREFIX_KNOWN_SLOTS, sizeof *s->st->prefix_known);
    if (!s->st || !s->st->copy || !s->st->prefix_known || wagg_init(&s->st->agg)) {
        snprintf(err, errlen, "%s: out of memory", s->shown);
        pgstore_close(s);
        return -1;
    }
    s->conn = pgstore_connect(uri, "-c synchronous_commit=off");
    if (!s->conn) {
        snprintf(err, errlen, "%s: out of memory", s->shown);
        pgstore_close(s);
        return -1;
    }
    const char *pw = PQpass(s->conn);
    snprintf(s->st->password, sizeof s->st->password, "%s", pw ? pw : "");
    if (PQstatus(s->conn) != CONNECTION_OK) {
        conn_fail(s, "cannot connect", err, errlen);
        pgstore_close(s);
        return -1;
    }
    if (apply_schema(s, err, errlen) || session_setup(s, err, errlen) ||
        mark_crashed(s, err, errlen)) {
        pgstore_close(s);
        return -1;
    }
    return 0;
}

void pgstore_close(struct pgstore *s)
{
    if (s->conn)
        PQfinish(s->conn); /* the session's locks go with it */
    s->conn = NULL;
    if (s->st) {
        memset(s->st->password, 0, sizeof s->st->password);
        free(s->st->pending);
        free(s->st->rpending);
        free(s->st->copy);
        buf_free(&s->st->reads);
        buf_free(&s->st->tap_events);
        buf_free(&s->st->tap_items);
        buf_free(&s->st->agg_sql);
        buf_free(&s->st->carry_sql);
        wagg_free(&s->st->agg);
        free(s->st->prefix_known);
        free(s->st->new_prefixes);
        ragg_free(&s->st->ragg);
        buf_free(&s->st->job_text);
        buf_free(&s->st->job_classes);
        buf_free(&s->st->extra);
        free(s->st);
        s->st = NULL;
    }
}

/* --- runs ------------------------------------------------------------------------------ */

static int64_t floor_day(int64_t t_ns)
{
    return t_ns >= 0 ? t_ns / NS_PER_DAY : -((-(t_ns + 1)) / NS_PER_DAY) - 1;
}

static bool day_known(const struct pgstore_state *st, int64_t day)
{
    for (size_t i = 0; i < st->ndays; i++)
        if (st->days[i] == day)
            return true;
    for (size_t i = 0; i < st->nnew_days; i++)
        if (st->new_days[i] == day)
            return true;
    return false;
}

static void day_remember(struct pgstore_state *st, int64_t day)
{
    if (st->ndays < PGSTORE_DAYS_MAX) {
        st->days[st->ndays++] = day;
        return;
    }
    st->days[st->days_next] = day;
    st->days_next = (st->days_next + 1) % PGSTORE_DAYS_MAX;
}

/* The partition of day exists (made if missing, in the open transaction if
 * there is one: it is remembered once that commits). */
static int ensure_day(struct pgstore *s, int64_t day, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    if (day_known(st, day))
        return 0;
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)day);
    const char *params[1] = { num };
    if (run_prepared(s, "partition", 1, params, "creating a partition of writes", err, errlen))
        return -1;
    if (st->in_batch && st->nnew_days < PGSTORE_DAYS_MAX)
        st->new_days[st->nnew_days++] = day;
    else if (!st->in_batch)
        day_remember(st, day);
    return 0;
}

int64_t pgstore_run_begin(struct pgstore *s, const char *name, const char *upstream,
                          const char *options, const char *key_mode, const char *node,
                          const char *kind, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    char started[32], sql[96];
    int64_t now = clock_wall_ns(), id = -1;
    if (st->nruns >= PGSTORE_RUNS_MAX) {
        snprintf(err, errlen, "%s: more than %d runs on one connection", s->shown,
                 PGSTORE_RUNS_MAX);
        return -1;
    }
    snprintf(started, sizeof started, "%lld", (long long)now);
    const char *params[8] = { name,     node ? node : "",     started,
                              upstream, SLABTAP_VERSION,      options,
                              key_mode, kind ? kind : "proxy" };
    if (exec(s, "BEGIN", "starting a run", err, errlen))
        return -1;
    PGresult *res = PQexecParams(s->conn,
                                 "INSERT INTO runs (name, node, started_ns, upstream,"
                                 " slabtap_version, options, key_mode, kind)"
                                 " VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING run_id",
                                 8, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    if (id <= 0 || id >= PG_RUN_ID_MAX) {
        if (PQresultStatus(res) == PGRES_TUPLES_OK) {
            PQclear(res);
            pg_fail(s, "starting a run", "run id out of range", err, errlen);
        } else {
            res_ok(s, res, PGRES_TUPLES_OK, "starting a run", err, errlen);
        }
        PQclear(PQexec(s->conn, "ROLLBACK"));
        return -1;
    }
    PQclear(res);
    /* the lock before the row is visible: no one can take the run for crashed */
    snprintf(sql, sizeof sql, "SELECT pg_advisory_lock(%lld)", (long long)(PG_LOCK_RUN + id));
    if (exec(s, sql, "taking the run's lock", err, errlen) ||
        exec(s, "COMMIT", "starting a run", err, errlen)) {
        PQclear(PQexec(s->conn, "ROLLBACK"));
        snprintf(sql, sizeof sql, "SELECT pg_advisory_unlock(%lld)", (long long)(PG_LOCK_RUN + id));
        PQclear(PQexec(s->conn, sql));
        return -1;
    }
    st->runs_prefix[st->nruns] = key_mode && !strcmp(key_mode, "prefix");
    st->runs[st->nruns++] = id;
    /* today's and tomorrow's partitions now, off the path of the first batch */
    int64_t day = floor_day(now);
    if (ensure_day(s, day, err, errlen) || ensure_day(s, day + 1, err, errlen))
        return -1;
    return id;
}

int pgstore_run_end(struct pgstore *s, int64_t run_id, uint64_t recorded, uint64_t dropped,
                    char *err, size_t errlen)
{
    char id[32], now[32], rec[32], drop[32];
    snprintf(id, sizeof id, "%lld", (long long)run_id);
    snprintf(now, sizeof now, "%lld", (long long)clock_wall_ns());
    snprintf(rec, sizeof rec, "%llu", (unsigned long long)recorded);
    snprintf(drop, sizeof drop, "%llu", (unsigned long long)dropped);
    const char *ep[3] = { id, now, "-1" };
    if (pgstore_write_aggregates(s, err, errlen) || /* nothing counted is lost */
        run_prepared(s, "end_phase", 3, ep, "ending the last phase", err, errlen))
        return -1;
    const char *params[4] = { id, now, rec, drop };
    /* crashed = 0: it may have been taken for crashed while its connection was down */
    PGresult *res = PQexecParams(s->conn,
                                 "UPDATE runs SET ended_ns = $2, rows_recorded = $3,"
                                 " rows_dropped = $4, crashed = 0 WHERE run_id = $1",
                                 4, NULL, params, NULL, NULL, 0);
    return res_ok(s, res, PGRES_COMMAND_OK, "ending the run", err, errlen);
}

/* --- batches ----------------------------------------------------------------------------- */

static void batch_forget(struct pgstore_state *st)
{
    st->npending = 0;
    st->nrpending = 0;
    st->nnew_days = 0;
    st->in_batch = false;
    st->copy_len = 0;
    buf_reset(&st->reads);
    buf_reset(&st->tap_events);
    buf_reset(&st->tap_items);
    buf_reset(&st->agg_sql);
    if (st->nnew_prefixes && st->prefix_known) { /* not committed: looked up again */
        memset(st->prefix_known, 0, PREFIX_KNOWN_SLOTS * sizeof *st->prefix_known);
        st->nprefix_known = 0;
    }
    st->nnew_prefixes = 0;
}

/* A lost connection made again (session settings, statements, locks). */
static int ensure_conn(struct pgstore *s, char *err, size_t errlen)
{
    if (PQstatus(s->conn) == CONNECTION_OK)
        return 0;
    PQreset(s->conn);
    if (PQstatus(s->conn) != CONNECTION_OK)
        return conn_fail(s, "reconnecting", err, errlen);
    return session_setup(s, err, errlen);
}

/* A read as a line of COPY's text format (tab-separated, \\N for NULL), in
 * the batch's buffer until put_reads sends it. */
static void encode_read(struct pgstore_state *st, int64_t run_id, const struct rec_row *r)
{
    char key[3 * (MC_KEY_MAX + 1)], esc[6 * (MC_KEY_MAX + 1) + 4];
    if (r->key_text_len >= 0) {
        size_t kn = (size_t)r->key_text_len < sizeof r->key_text ? (size_t)r->key_text_len
                                                                 : sizeof r->key_text;
        size_t n = utf8_clean(key, r->key_text, kn), o = 0;
        for (size_t i = 0; i < n; i++) {
            char c = key[i];
            if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
                esc[o++] = '\\';
                c = c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : '\\';
            }
            esc[o++] = c;
        }
        esc[o] = '\0';
    } else {
        snprintf(esc, sizeof esc, "\\N");
    }
    char vl[24] = "\\N", fl[24] = "\\N", ex[24] = "\\N", cl[24] = "\\N";
    if (r->hit && r->value_len >= 0)
        snprintf(vl, sizeof vl, "%lld", (long long)r->value_len);
    if (r->has_flags)
        snprintf(fl, sizeof fl, "%lu", (unsigned long)r->flags);
    if (r->has_exptime)
        snprintf(ex, sizeof ex, "%lld", (long long)r->exptime);
    if (r->hit && r->class_id)
        snprintf(cl, sizeof cl, "%u", (unsigned)r->class_id);
    buf_printf(&st->reads, "%lld\t%llu\t%llu\t%u\t%lld\t%s\t%s\t%lld\t%u\t%d\t%s\t%s\t%s\t%s\n",
               (long long)run_id, (unsigned long long)r->seq, (unsigned long long)r->after_write,
               (unsigned)r->conn_id, (long long)r->t_ns, mc_cmd_name((enum mc_cmd)r->cmd), esc,
               (long long)r->key_hash, (unsigned)r->key_len, r->hit ? 1 : 0, vl, fl, ex, cl);
}

/* --- aggregates ---------------------------------------------------------------------- */

/* The tables of wagg's kinds (schema.sql's agg_*: the same columns), what
 * names a row and what a flush of it adds: many batches of one minute
 * add up. */
static const struct {
    const char *table, *cols, *key, *add;
} agg_tables[] = {
    [WAGG_SIZE] = { "agg_sizes", "run_id, minute, body, writes, value_bytes",
                    "run_id, minute, body",
                    "writes = agg_sizes.writes + excluded.writes,"
                    " value_bytes = agg_sizes.value_bytes + excluded.value_bytes" },
    [WAGG_LATENCY] = { "agg_latency", "run_id, second, band_us, writes", "run_id, second, band_us",
                       "writes = agg_latency.writes + excluded.writes" },
    [WAGG_PREFIX] = { "agg_prefixes", "run_id, minute, prefix_id, writes, value_bytes",
                      "run_id, minute, prefix_id",
                      "writes = agg_prefixes.writes + excluded.writes,"
                      " value_bytes = agg_prefixes.value_bytes + excluded.value_bytes" },
    [WAGG_ITEM] = { "agg_items", "run_id, minute, class_id, body, outcome, writes, body_bytes",
                    "run_id, minute, class_id, body, outcome",
                    "writes = agg_items.writes + excluded.writes,"
                    " body_bytes = agg_items.body_bytes + excluded.body_bytes" },
    [WAGG_ANSWER] = { "agg_answers", "run_id, minute, cmd_id, answer_id, writes, value_bytes",
                      "run_id, minute, cmd_id, answer_id",
                      "writes = agg_answers.writes + excluded.writes,"
                      " value_bytes = agg_answers.value_bytes + excluded.value_bytes" },
    [WAGG_PREFIX_CLASS] = { "agg_prefix_classes",
                            "run_id, minute, prefix_id, class_id, writes, body_bytes",
                            "run_id, minute, prefix_id, class_id",
                            "writes = agg_prefix_classes.writes + excluded.writes,"
                            " body_bytes = agg_prefix_classes.body_bytes + excluded.body_bytes" },
};

/* Whether run_id is one of this session's and keeps key prefixes (a run
 * shipped from an older process's spill counts none). */
static bool run_keeps_prefixes(const struct pgstore_state *st, int64_t run_id)
{
    for (size_t i = 0; i < st->nruns; i++)
        if (st->runs[i] == run_id)
            return st->runs_prefix[i];
    return false;
}

/* The row's key text as PostgreSQL keeps it (valid UTF-8) into t; its length. */
static size_t prefix_text(const struct rec_row *r, char t[3 * (MC_KEY_MAX + 1)])
{
    size_t kn =
        (size_t)r->key_text_len < sizeof r->key_text ? (size_t)r->key_text_len : sizeof r->key_text;
    return utf8_clean(t, r->key_text, kn);
}

/* key_prefixes.prefix_id of the row's key prefix: a hash of its text, the
 * same on every node, so no node waits on a dictionary another one writes
 * (two prefixes of one id: the second is counted as the first, about one
 * pair in 2^40). A prefix this session has not seen goes into the batch's
 * list for key_prefixes. 0: the row has no text; -1: out of memory. */
static int64_t prefix_id(struct pgstore_state *st, const struct rec_row *r)
{
    char t[3 * (MC_KEY_MAX + 1)];
    if (r->key_text_len < 0)
        return 0;
    size_t n = prefix_text(r, t);
    int64_t id = (int64_t)(keyfmt_hash(t, n) % PREFIX_ID_MOD) + 1;
    size_t mask = PREFIX_KNOWN_SLOTS - 1, i = (size_t)keyfmt_hash(t, n) & mask;
    for (; st->prefix_known[i]; i = (i + 1) & mask)
        if (st->prefix_known[i] == (uint64_t)id)
            return id;
    if (!BUF_GROW(st->new_prefixes, st->new_prefixes_cap, st->nnew_prefixes + 1))
        return -1;
    st->new_prefixes[st->nnew_prefixes++] = (struct new_prefix){ id, r };
    if ((st->nprefix_known + 1) * 4 > PREFIX_KNOWN_SLOTS * 3) { /* full: start over */
        memset(st->prefix_known, 0, PREFIX_KNOWN_SLOTS * sizeof *st->prefix_known);
        st->nprefix_known = 0;
        for (i = (size_t)keyfmt_hash(t, n) & mask; st->prefix_known[i]; i = (i + 1) & mask)
            ;
    }
    st->prefix_known[i] = (uint64_t)id;
    st->nprefix_known++;
    return id;
}

static int new_prefix_cmp(const void *a, const void *b)
{
    const struct new_prefix *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The batch's new prefixes into key_prefixes, in id order (two nodes adding
 * the same ones wait for each other in one order, never in a cycle). */
static int agg_sql_prefixes(struct pgstore *s)
{
    struct pgstore_state *st = s->st;
    char t[3 * (MC_KEY_MAX + 1)];
    if (!st->nnew_prefixes)
        return 0;
    qsort(st->new_prefixes, st->nnew_prefixes, sizeof *st->new_prefixes, new_prefix_cmp);
    buf_puts(&st->agg_sql, "INSERT INTO key_prefixes (prefix_id, prefix) VALUES ");
    for (size_t i = 0; i < st->nnew_prefixes; i++) {
        size_t n = prefix_text(st->new_prefixes[i].row, t);
        char *lit = PQescapeLiteral(s->conn, t, n);
        if (!lit)
            return -1;
        buf_printf(&st->agg_sql, "%s(%lld,%s)", i ? "," : "", (long long)st->new_prefixes[i].id,
                   lit);
        PQfreemem(lit);
    }
    buf_puts(&st->agg_sql, " ON CONFLICT DO NOTHING;\n");
    return 0;
}

/* One upsert of the write aggregates' entries of kind into b. */
static void agg_sql_kind(struct pgstore_state *st, struct buf *b, uint8_t kind)
{
    bool first = true;
    for (size_t i = 0; i < st->agg.used; i++) {
        const struct wagg_ent *e = &st->agg.e[st->agg.slots[i]];
        int64_t cols[WAGG_COLS];
        if (e->kind != kind || !(e->n + e->batch_n))
            continue;
        size_t n = wagg_row(e, cols);
        buf_printf(b, first ? "INSERT INTO %s (%s) VALUES " : ",", agg_tables[kind].table,
                   agg_tables[kind].cols);
        first = false;
        buf_printf(b, "(%lld", (long long)st->agg_run);
        for (size_t c = 0; c < n; c++)
            buf_printf(b, ",%lld", (long long)cols[c]);
        buf_puts(b, ")");
    }
    if (!first)
        buf_printf(b, " ON CONFLICT (%s) DO UPDATE SET %s;\n", agg_tables[kind].key,
                   agg_tables[kind].add);
}

/* The write aggregates (committed and the batch's) of agg_run into b. */
static void agg_sql_writes(struct pgstore_state *st, struct buf *b)
{
    if (!st->agg_run || !st->agg.used)
        return;
    buf_printf(b,
               "INSERT INTO agg_runs (run_id) VALUES (%lld) ON CONFLICT DO NOTHING;\n"
               "INSERT INTO agg_item_runs (run_id) VALUES (%lld) ON CONFLICT DO NOTHING;\n",
               (long long)st->agg_run, (long long)st->agg_run);
    for (uint8_t k = WAGG_SIZE; k <= WAGG_PREFIX_CLASS; k++)
        agg_sql_kind(st, b, k);
}

/* The write aggregates count run_id from now on. Committed counts of
 * another run go into carry_sql first (upserted with the next flush, kept
 * until one commits), so the transaction must flush. */
static void agg_start_run(struct pgstore_state *st, int64_t run_id)
{
    if (st->agg_run == run_id)
        return;
    if (st->agg_carry) {
        agg_sql_writes(st, &st->carry_sql);
        st->agg_flush = true;
    }
    if (st->agg.used)
        wagg_clear(&st->agg);
    st->agg_carry = false;
    st->agg_run = run_id;
    st->agg_prefix = run_keeps_prefixes(st, run_id);
}

/* The read aggregates' cells into the batch's aggregate SQL (they are
 * counted again from none). */
static void agg_sql_reads(struct pgstore_state *st)
{
    struct ragg *g = &st->ragg;
    struct buf *b = &st->agg_sql;
    for (size_t i = 0; i < g->ncells; i++) {
        const struct ragg_cell *c = &g->cell[i];
        buf_printf(
            b, "%s(%lld,%lld,%u,%llu,%llu,%llu)",
            i ? ","
              : "INSERT INTO agg_reads (run_id, minute, class_id, reads, hits, misses) VALUES ",
            (long long)g->run, (long long)c->minute, (unsigned)c->class_id,
            (unsigned long long)c->reads, (unsigned long long)c->hits,
            (unsigned long long)c->misses);
    }
    if (g->ncells)
        buf_puts(b,
                 " ON CONFLICT (run_id, minute, class_id) DO UPDATE SET"
                 " reads = agg_reads.reads + excluded.reads, hits = agg_reads.hits + excluded.hits,"
                 " misses = agg_reads.misses + excluded.misses;\n");
    ragg_cells_done(g);
}

/* The batch's reads: counted in the read aggregates (after its writes
 * noted their keys' classes, as store.c does), the recorded ones in one
 * COPY into read_log. */
static int put_reads(struct pgstore *s, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    for (size_t i = 0; i < st->nrpending; i++) {
        const struct pending_ref *p = &st->rpending[i];
        if (!ragg_note_read(&st->ragg, p->run, p->row)) {
            agg_sql_reads(st); /* full or another run: this transaction flushes */
            st->agg_flush = true;
            ragg_note_read(&st->ragg, p->run, p->row);
        }
        st->agg_counted = true;
        if (!p->row->sampled_out)
            encode_read(st, p->run, p->row);
    }
    if (st->reads.failed) {
        snprintf(err, errlen, "%s: out of memory for a batch of reads", s->shown);
        return -1;
    }
    if (!st->reads.len)
        return 0;
    PGresult *res = PQexec(s->conn, "COPY read_log (run_id, seq, after_write, conn_id, t_ns, cmd,"
                                    " key, key_hash, key_len, hit, value_len, flags, exptime,"
                                    " class_id) FROM STDIN");
    if (PQresultStatus(res) != PGRES_COPY_IN)
        return res_ok(s, res, PGRES_COPY_IN, "starting COPY into read_log", err, errlen);
    PQclear(res);
    bool sent = PQputCopyData(s->conn, st->reads.data, (int)st->reads.len) == 1;
    if (PQputCopyEnd(s->conn, sent ? NULL : "slabtap: send failed") != 1 || !sent) {
        conn_fail(s, "sending reads", err, errlen);
        while ((res = PQgetResult(s->conn)))
            PQclear(res);
        return -1;
    }
    res = PQgetResult(s->conn);
    int rc = res_ok(s, res, PGRES_COMMAND_OK, "COPY into read_log", err, errlen);
    while ((res = PQgetResult(s->conn)))
        PQclear(res);
    buf_reset(&st->reads);
    return rc;
}

/* After a transaction that counted or upserted aggregates: committed
 * or not, the counts it carried are cleared or kept. */
static void agg_done(struct pgstore_state *st, bool committed)
{
    if (committed && st->agg_flush) {
        if (st->agg.used)
            wagg_clear(&st->agg);
        ragg_cells_done(&st->ragg);
        buf_reset(&st->carry_sql);
        st->agg_carry = false;
        st->agg_written_ns = clock_wall_ns();
    } else if (committed) {
        wagg_batch_done(&st->agg, true);
        st->agg_carry = st->agg_carry || st->agg_counted;
    } else {
        wagg_batch_done(&st->agg, false);
        memcpy(st->ragg.cell, st->ragg_keep.cell, st->ragg_keep.ncells * sizeof *st->ragg.cell);
        st->ragg.ncells = st->ragg_keep.ncells;
        st->ragg.run = st->ragg_keep.run;
    }
    st->agg_flush = st->agg_counted = st->unsure = false;
}

/* A transaction whose COMMIT had no answer: whether it committed, from
 * its token (the connection made again first). 0, or -1 when the server
 * cannot tell now (the counts wait). */
static int agg_settle(struct pgstore *s, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    if (!st->unsure)
        return 0;
    int64_t v = pgstore_meta_int(s, st->token_run, AGG_TOKEN_KEY);
    if (v < 0) {
        snprintf(err, errlen, "%s: cannot learn whether the last aggregates committed", s->shown);
        return -1;
    }
    agg_done(st, v == st->token);
    return 0;
}

/* The transaction's start for the aggregates: the read cells kept for a
 * rollback. */
static void agg_begin(struct pgstore_state *st)
{
    memcpy(st->ragg_keep.cell, st->ragg.cell, st->ragg.ncells * sizeof *st->ragg.cell);
    st->ragg_keep.ncells = st->ragg.ncells;
    st->ragg_keep.run = st->ragg.run;
    st->agg_flush = st->agg_counted = false;
}

/* The transaction's end: its new key prefixes, the carried aggregates when
 * a flush is due (PGSTORE_AGG_FLUSH_MS since the last, or forced), the
 * token when counts are at stake, and COMMIT -- one round trip. A failure
 * that lost the connection leaves the outcome unsure (agg_settle). */
/* How long the carried aggregates wait at most (--agg-interval). */
static int64_t agg_interval_ns(const struct pgstore *s)
{
    return (int64_t)(s->agg_flush_ms ? s->agg_flush_ms : PGSTORE_AGG_FLUSH_MS) * INT64_C(1000000);
}

static int agg_commit(struct pgstore *s, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    struct buf *b = &st->agg_sql;
    if (agg_sql_prefixes(s)) {
        snprintf(err, errlen, "%s: out of memory for the batch's key prefixes", s->shown);
        agg_done(st, false);
        return -1;
    }
    if (clock_wall_ns() >= st->agg_written_ns + agg_interval_ns(s) || wagg_should_flush(&st->agg))
        st->agg_flush = true;
    if (st->agg_flush) {
        buf_append(b, st->carry_sql.data, st->carry_sql.len);
        agg_sql_writes(st, b);
        agg_sql_reads(st);
    }
    int64_t run = st->agg_run ? st->agg_run : st->ragg.run;
    bool stake = run && (st->agg_counted || (st->agg_flush && b->len));
    if (stake) {
        int64_t now = clock_wall_ns();
        st->token = now > st->token ? now : st->token + 1;
        st->token_run = run;
        buf_printf(b,
                   "INSERT INTO run_meta (run_id, key, value) VALUES (%lld, '%s', '%lld')"
                   " ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value;\n",
                   (long long)run, AGG_TOKEN_KEY, (long long)st->token);
    }
    buf_puts(b, "COMMIT");
    if (b->failed) {
        snprintf(err, errlen, "%s: out of memory for a batch's aggregates", s->shown);
        buf_reset(b);
        agg_done(st, false);
        return -1;
    }
    int rc = exec(s, b->data, "committing a batch", err, errlen);
    buf_reset(b);
    if (rc && stake && PQstatus(s->conn) != CONNECTION_OK)
        st->unsure = true; /* counts kept as they are until agg_settle */
    else
        agg_done(st, rc == 0);
    return rc;
}

int pgstore_begin(struct pgstore *s, char *err, size_t errlen)
{
    batch_forget(s->st);
    if (ensure_conn(s, err, errlen) || agg_settle(s, err, errlen))
        return -1;
    if (exec(s, "BEGIN", "starting a batch", err, errlen))
        return -1;
    agg_begin(s->st);
    s->st->in_batch = true;
    return 0;
}

int64_t pgstore_aggregates_due_ns(const struct pgstore *s)
{
    const struct pgstore_state *st = s->st;
    if (!st || !(st->agg_carry || st->ragg.ncells || st->carry_sql.len || st->unsure))
        return 0;
    return st->agg_written_ns + agg_interval_ns(s);
}

int pgstore_write_aggregates(struct pgstore *s, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    if (!pgstore_aggregates_due_ns(s))
        return 0;
    batch_forget(st);
    int rc = ensure_conn(s, err, errlen) || agg_settle(s, err, errlen) ||
             exec(s, "BEGIN", "starting to write the aggregates", err, errlen);
    if (!rc && pgstore_aggregates_due_ns(s)) { /* settled: may be none left */
        agg_begin(st);
        st->agg_flush = true;
        rc = agg_commit(s, err, errlen);
    } else if (!rc) {
        rc = exec(s, "COMMIT", "writing the aggregates", err, errlen);
    }
    if (rc) {
        if (PQtransactionStatus(s->conn) != PQTRANS_IDLE) {
            char ignored[256];
            exec(s, "ROLLBACK", "rolling back the aggregates", ignored, sizeof ignored);
        }
        st->agg_written_ns = clock_wall_ns(); /* kept; due again in one interval */
    }
    return rc ? -1 : 0;
}

/* A row the batch holds until pgstore_commit. */
static int put_tap_row(struct pgstore *s, int64_t run_id, const struct rec_row *r, char *err,
                       size_t errlen);
static int put_tap_rows(struct pgstore *s, char *err, size_t errlen);
static int put_tap_snapshot(struct pgstore *s, int64_t run_id, const struct rec_job *j, char *err,
                            size_t errlen);

static int pend(struct pgstore *s, struct pending_ref **list, size_t *n, size_t *cap,
                int64_t run_id, const struct rec_row *row, char *err, size_t errlen)
{
    if (!BUF_GROW(*list, *cap, *n + 1)) {
        snprintf(err, errlen, "%s: out of memory for a batch of %zu rows", s->shown, *n + 1);
        return -1;
    }
    (*list)[(*n)++] =
        (struct pending_ref){ run_id, row->seq > INT64_MAX ? INT64_MAX : (int64_t)row->seq, row };
    return 0;
}

int pgstore_put_row(struct pgstore *s, int64_t run_id, const struct rec_row *row, char *err,
                    size_t errlen)
{
    struct pgstore_state *st = s->st;
    if (row->kind == REC_ROW_READ)
        return pend(s, &st->rpending, &st->nrpending, &st->rpending_cap, run_id, row, err, errlen);
    if (row->kind == REC_ROW_GETS) {
        char v[7][32];
        snprintf(v[0], sizeof v[0], "%lld", (long long)run_id);
        snprintf(v[1], sizeof v[1], "%lld", (long long)row->second);
        snprintf(v[2], sizeof v[2], "%llu", (unsigned long long)row->requests);
        snprintf(v[3], sizeof v[3], "%llu", (unsigned long long)row->keys);
        snprintf(v[4], sizeof v[4], "%llu", (unsigned long long)row->hits);
        snprintf(v[5], sizeof v[5], "%llu", (unsigned long long)row->misses);
        snprintf(v[6], sizeof v[6], "%llu", (unsigned long long)row->bytes_returned);
        const char *params[8] = { v[0], v[1], mc_cmd_name((enum mc_cmd)row->cmd), v[2], v[3], v[4],
                                  v[5], v[6] };
        return run_prepared(s, "gets", 8, params, "inserting read counts", err, errlen);
    }
    if (row->kind == REC_ROW_EVENT || row->kind == REC_ROW_ITEM)
        return put_tap_row(s, run_id, row, err, errlen);
    return pend(s, &st->pending, &st->npending, &st->pending_cap, run_id, row, err, errlen);
}

static int put_sample(struct pgstore *s, const char *id, const char *target,
                      const struct rec_job *j, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    char t[32], phase[32];
    snprintf(t, sizeof t, "%lld", (long long)j->t_ns);
    snprintf(phase, sizeof phase, "%lld", (long long)j->phase_id);
    /* the classes as one object {"<class_id>": fields, ...} */
    struct buf *o = &st->job_classes;
    buf_reset(o);
    buf_puts(o, "{");
    for (size_t i = 0; i < j->nclasses; i++) {
        buf_printf(o, "%s\"%u\":", i ? "," : "", j->class_ids[i]);
        buf_put_clean(o, j->class_json[i], strlen(j->class_json[i]));
    }
    buf_puts(o, "}");
    if (o->failed || o->len > JOB_TEXT_MAX) {
        snprintf(err, errlen, "%s: a stats sample of %zu classes: too large or out of memory",
                 s->shown, j->nclasses);
        return -1;
    }
    json_unnul(o->data);
    const char *stats = job_clean(&st->job_text, j->text ? j->text : "{}", true);
    if (!stats) {
        snprintf(err, errlen, "%s: a stats sample: too large or out of memory", s->shown);
        return -1;
    }
    if (target) { /* a shadow's (issue 23) */
        const char *params[6] = { id, target, t, j->final ? "1" : "0", stats, o->data };
        return run_prepared(s, "shadow_sample", 6, params, "inserting a shadow's stats sample", err,
                            errlen);
    }
    const char *params[6] = { id,    t,      j->phase_id > 0 ? phase : NULL, j->final ? "1" : "0",
                              stats, o->data };
    return run_prepared(s, "sample", 6, params, "inserting a stats sample", err, errlen);
}

/* A shadow's job (issue 23): its settings, event or one second's counts
 * (its samples: put_sample). target: the shadow's name, cleaned. */
_Static_assert(REC_SHADOW_NCOUNTS == 10, "the statement shadow_counts has 10 counts");
/* A settings job's memcached version, cleaned to UTF-8 into small (each
 * byte may become three), or NULL when it has none. */
static const char *job_version(const struct rec_job *j, char *small, size_t cap)
{
    if (!j->version)
        return NULL;
    size_t vn = strlen(j->version);
    if (vn > (cap - 1) / 3)
        vn = (cap - 1) / 3;
    small[utf8_clean(small, j->version, vn)] = '\0';
    return small;
}

static int put_shadow_job(struct pgstore *s, const char *id, const char *target,
                          const struct rec_job *j, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    char t[32], small[256];
    snprintf(t, sizeof t, "%lld", (long long)j->t_ns);
    switch (j->kind) {
    case REC_JOB_SETTINGS: {
        const char *text = job_clean(&st->job_text, j->text ? j->text : "{}", true);
        if (!text)
            break;
        const char *params[5] = { id, target, t, job_version(j, small, sizeof small), text };
        return run_prepared(s, "shadow_settings", 5, params, "inserting a shadow's settings", err,
                            errlen);
    }
    case REC_JOB_SHADOW_EVENT: {
        size_t en = j->text ? strlen(j->text) : 0;
        if (en > (sizeof small - 1) / 3)
            en = (sizeof small - 1) / 3;
        small[utf8_clean(small, j->text ? j->text : "", en)] = '\0';
        const char *detail = j->version ? job_clean(&st->job_text, j->version, false) : NULL;
        if (j->version && !detail)
            break;
        const char *params[5] = { id, target, t, small, detail };
        return run_prepared(s, "shadow_event", 5, params, "inserting a shadow's event", err,
                            errlen);
    }
    case REC_JOB_SHADOW_COUNTS: {
        char v[REC_SHADOW_NCOUNTS + 1][24];
        const char *params[REC_SHADOW_NCOUNTS + 3] = { id, target, v[0] };
        snprintf(v[0], sizeof v[0], "%lld", (long long)(j->t_ns / 1000000000));
        for (int i = 0; i < REC_SHADOW_NCOUNTS; i++) {
            snprintf(v[i + 1], sizeof v[i + 1], "%lld", (long long)j->counts[i]);
            params[3 + i] = v[i + 1];
        }
        return run_prepared(s, "shadow_counts", REC_SHADOW_NCOUNTS + 3, params,
                            "inserting a shadow's counts", err, errlen);
    }
    default:
        snprintf(err, errlen, "%s: job kind %d has no shadow table", s->shown, (int)j->kind);
        return -1;
    }
    snprintf(err, errlen, "%s: a shadow job's text is too large or out of memory", s->shown);
    return -1;
}

int pgstore_put_job(struct pgstore *s, int64_t run_id, const struct rec_job *j, char *err,
                    size_t errlen)
{
    struct pgstore_state *st = s->st;
    char id[32], t[32], phase[32];
    snprintf(id, sizeof id, "%lld", (long long)run_id);
    snprintf(t, sizeof t, "%lld", (long long)j->t_ns);
    snprintf(phase, sizeof phase, "%lld", (long long)j->phase_id);
    const char *text;
    char small[256];
    if (j->target || j->kind == REC_JOB_SHADOW_EVENT || j->kind == REC_JOB_SHADOW_COUNTS) {
        char target[3 * 128 + 1];
        if (!j->target) {
            snprintf(err, errlen, "%s: a shadow's job without its target", s->shown);
            return -1;
        }
        size_t tn = strlen(j->target);
        if (tn > (sizeof target - 1) / 3)
            tn = (sizeof target - 1) / 3;
        target[utf8_clean(target, j->target, tn)] = '\0';
        if (j->kind == REC_JOB_SAMPLE)
            return put_sample(s, id, target, j, err, errlen);
        return put_shadow_job(s, id, target, j, err, errlen);
    }
    switch (j->kind) {
    case REC_JOB_SAMPLE: return put_sample(s, id, NULL, j, err, errlen);
    case REC_JOB_SETTINGS: {
        text = job_clean(&st->job_text, j->text ? j->text : "{}", true);
        if (!text)
            break;
        const char *params[4] = { id, t, job_version(j, small, sizeof small), text };
        return run_prepared(s, "settings", 4, params, "inserting settings", err, errlen);
    }
    case REC_JOB_META: {
        size_t kn = j->version ? strlen(j->version) : 0;
        if (kn > (sizeof small - 1) / 3)
            kn = (sizeof small - 1) / 3;
        small[utf8_clean(small, j->version ? j->version : "", kn)] = '\0';
        text = j->text ? job_clean(&st->job_text, j->text, false) : NULL;
        if (j->text && !text)
            break;
        const char *params[3] = { id, small, text };
        return run_prepared(s, "meta", 3, params, "inserting run_meta", err, errlen);
    }
    case REC_JOB_PHASE: {
        const char *ep[3] = { id, t, phase };
        if (run_prepared(s, "end_phase", 3, ep, "ending a phase", err, errlen))
            return -1;
        text = job_clean(&st->job_text, j->text ? j->text : "", false);
        if (!text)
            break;
        const char *params[4] = { phase, id, text, t };
        return run_prepared(s, "phase", 4, params, "inserting a phase", err, errlen);
    }
    case REC_JOB_SNAPSHOT: return put_tap_snapshot(s, run_id, j, err, errlen);
    default: snprintf(err, errlen, "%s: unknown job kind %d", s->shown, (int)j->kind); return -1;
    }
    snprintf(err, errlen, "%s: a job's text is too large or out of memory", s->shown);
    return -1;
}

static int pending_cmp(const void *a, const void *b)
{
    const struct pending_ref *x = a, *y = b;
    if (x->run != y->run)
        return x->run < y->run ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int copy_send(struct pgstore *s, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    if (st->copy_len && PQputCopyData(s->conn, st->copy, (int)st->copy_len) != 1)
        return conn_fail(s, "sending writes", err, errlen);
    st->copy_len = 0;
    return 0;
}

/* The batch's writes: counted in the aggregates (every one, in (run, seq)
 * order), the recorded ones' days' partitions, then one COPY of those. */
static int put_pending(struct pgstore *s, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    struct pending_ref *p = st->pending;
    size_t n = st->npending, rows = 0;
    if (!n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if (pending_cmp(&p[i - 1], &p[i]) > 0) {
            qsort(p, n, sizeof *p, pending_cmp);
            break;
        }
    }
    int64_t last = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        const struct rec_row *r = p[i].row;
        if (i == 0)
            agg_start_run(st, p[i].run);
        if (p[i].run == st->agg_run) {
            st->agg_counted = true;
            int64_t pid = st->agg_prefix ? prefix_id(st, r) : 0;
            if (pid < 0) {
                snprintf(err, errlen, "%s: out of memory for the batch's key prefixes", s->shown);
                return -1;
            }
            wagg_note(&st->agg, r, pid, cmd_id_of(st, r),
                      answer_id_of(st, r->answer, strnlen(r->answer, sizeof r->answer)));
        }
        if (r->class_id > 0) /* a later miss on the key counts in its class */
            ragg_note_write(&st->ragg, r->key_hash, r->class_id);
        if (r->sampled_out)
            continue;
        rows++;
        int64_t day = floor_day(r->t_ns);
        if (day != last && ensure_day(s, day, err, errlen))
            return -1;
        last = day;
    }
    if (!rows)
        return 0;
    PGresult *res = PQexec(s->conn, "COPY writes (run_id, seq, t_ns, conn_id, key_hash, key_ref,"
                                    " op, sizes, extra) FROM STDIN (FORMAT binary)");
    if (PQresultStatus(res) != PGRES_COPY_IN)
        return res_ok(s, res, PGRES_COPY_IN, "starting COPY into writes", err, errlen);
    PQclear(res);
    /* header: signature, flags, extension length */
    static const char header[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";
    memcpy(st->copy, header, sizeof header);
    st->copy_len = sizeof header;
    const char *why = NULL;
    for (size_t i = 0; i < n && !why; i++) {
        if (p[i].row->sampled_out)
            continue;
        if (st->copy_len + PGSTORE_ROW_MAX > PGSTORE_COPY_BUF && copy_send(s, err, errlen))
            why = "";
        size_t k = why ? 0 : encode_row(st, p[i].run, p[i].row, st->copy + st->copy_len);
        if (!why && !k)
            why = "a write does not fit PGSTORE_ROW_MAX";
        st->copy_len += k;
    }
    if (!why) {
        put_be16(st->copy + st->copy_len, UINT16_MAX); /* a field count of -1: the end */
        st->copy_len += 2;
        if (copy_send(s, err, errlen))
            why = "";
    }
    if (PQputCopyEnd(s->conn, why ? (*why ? why : "slabtap: send failed") : NULL) != 1 && !why) {
        conn_fail(s, "ending COPY into writes", err, errlen);
        why = "";
    }
    res = PQgetResult(s->conn);
    int rc = why ? -1 : 0;
    if (!why)
        rc = res_ok(s, res, PGRES_COMMAND_OK, "COPY into writes", err, errlen);
    else {
        if (*why)
            pg_fail(s, "COPY into writes", why, err, errlen);
        PQclear(res);
    }
    while ((res = PQgetResult(s->conn)))
        PQclear(res);
    return rc;
}

int pgstore_commit(struct pgstore *s, int failed, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    char ignored[256];
    if (!failed && !put_pending(s, err, errlen) && !put_reads(s, err, errlen) &&
        !put_tap_rows(s, err, errlen) && !agg_commit(s, err, errlen)) {
        for (size_t i = 0; i < st->nnew_days; i++)
            day_remember(st, st->new_days[i]);
        st->nnew_prefixes = 0; /* in key_prefixes now */
        batch_forget(st);
        return 0;
    }
    if (!st->unsure && (st->agg_counted || st->agg_flush))
        agg_done(st, false); /* failed before the COMMIT was sent */
    /* a failed COPY or COMMIT can leave the transaction open (or aborted) */
    if (PQtransactionStatus(s->conn) != PQTRANS_IDLE)
        exec(s, "ROLLBACK", "rolling back a batch", failed ? err : ignored,
             failed ? errlen : sizeof ignored);
    batch_forget(st);
    return -1;
}

int64_t pgstore_max_phase_id(struct pgstore *s, int64_t run_id)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)run_id);
    const char *params[1] = { id };
    PGresult *res =
        PQexecParams(s->conn, "SELECT coalesce(max(phase_id), 0) FROM phases WHERE run_id = $1", 1,
                     NULL, params, NULL, NULL, 0);
    int64_t v = 0;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return v;
}

int64_t pgstore_meta_int(struct pgstore *s, int64_t run_id, const char *key)
{
    char id[32], ignored[256];
    if (ensure_conn(s, ignored, sizeof ignored))
        return -1;
    snprintf(id, sizeof id, "%lld", (long long)run_id);
    const char *params[2] = { id, key };
    PGresult *res = PQexecParams(s->conn,
                                 "SELECT coalesce((SELECT value FROM run_meta"
                                 " WHERE run_id = $1 AND key = $2), '0')",
                                 2, NULL, params, NULL, NULL, 0);
    int64_t v = -1;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        v = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return v;
}

int pgstore_save_meta(const char *uri, int64_t run_id, const char *key, const char *value,
                      char *err, size_t errlen)
{
    char shown[PGSTORE_URI_MAX], id[24];
    const char *vals[] = { id, key, value };
    PGconn *c = (PGconn *)pgstore_connect(uri, NULL);
    PGresult *res = NULL;
    int rc = -1;
    pgstore_redact(uri, shown, sizeof shown);
    snprintf(id, sizeof id, "%lld", (long long)run_id);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        pgstore_say(shown, c ? PQpass(c) : NULL, "cannot connect",
                    c ? PQerrorMessage(c) : "out of memory", err, errlen);
        goto out;
    }
    res = PQexecParams(c,
                       "INSERT INTO run_meta (run_id, key, value) VALUES ($1, $2, $3)"
                       " ON CONFLICT (run_id, key) DO UPDATE SET value = EXCLUDED.value",
                       3, NULL, vals, NULL, NULL, 0);
    if (!res || PQresultStatus(res) != PGRES_COMMAND_OK)
        pgstore_say(shown, PQpass(c), "writing run_meta",
                    res ? PQresultErrorMessage(res) : PQerrorMessage(c), err, errlen);
    else
        rc = 0;
out:
    PQclear(res);
    PQfinish(c);
    return rc;
}

/* --- taps without a proxy (issue 22): item_events, snapshot_items, snapshots ---------
 * Each row is encoded as it comes into a COPY text line (record/itemrow.h's
 * values, the key as its text like read_log's), sent by one COPY per table
 * at pgstore_commit in the batch's transaction: a snapshot of millions of
 * items goes in at COPY's speed. A snapshot's header is one upsert. */

/* The row's key as a COPY text field (valid UTF-8, escaped), or \N. */
static void tap_key(struct buf *b, const struct rec_row *r)
{
    char key[3 * (MC_KEY_MAX + 1)], esc[6 * (MC_KEY_MAX + 1) + 4];
    size_t len, o = 0;
    const char *text = itemrow_key(r, &len);
    if (!text) {
        buf_puts(b, "\\N");
        return;
    }
    size_t n = utf8_clean(key, text, len);
    for (size_t i = 0; i < n; i++) {
        char c = key[i];
        if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
            esc[o++] = '\\';
            c = c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : '\\';
        }
        esc[o++] = c;
    }
    buf_append(b, esc, o);
}

static void tap_opt(struct buf *b, struct itemrow_opt o)
{
    if (o.null)
        buf_puts(b, "\t\\N");
    else
        buf_printf(b, "\t%lld", (long long)o.v);
}

static int put_tap_row(struct pgstore *s, int64_t run_id, const struct rec_row *r, char *err,
                       size_t errlen)
{
    struct pgstore_state *st = s->st;
    if (r->sampled_out) /* --sample-keys: no row */
        return 0;
    if (r->kind == REC_ROW_EVENT) {
        struct itemrow_event e;
        struct buf *b = &st->tap_events;
        itemrow_event(r, &e);
        buf_printf(b, "%lld\t%lld\t%lld\t%lld\t%lld\t", (long long)run_id, (long long)e.seq,
                   (long long)e.t_ns, (long long)e.event, (long long)e.key_hash);
        tap_key(b, r);
        buf_printf(b, "\t%lld\t%lld", (long long)e.key_len, (long long)e.class_id);
        tap_opt(b, e.size);
        tap_opt(b, e.fetched);
        tap_opt(b, e.idle_s);
        tap_opt(b, e.ttl_left);
        buf_printf(b, "\t%s\n", e.cmd ? e.cmd : "\\N");
    } else {
        struct itemrow_item it;
        struct buf *b = &st->tap_items;
        itemrow_item(r, &it);
        buf_printf(b, "%lld\t%lld\t%lld\t%lld\t", (long long)run_id, (long long)it.snap,
                   (long long)it.seq, (long long)it.key_hash);
        tap_key(b, r);
        buf_printf(b, "\t%lld\t%lld\t%lld\t%lld\t%lld\t%lld", (long long)it.key_len,
                   (long long)it.class_id, (long long)it.size, (long long)it.ttl_left,
                   (long long)it.idle_s, (long long)it.fetched);
        tap_opt(b, it.flags);
        buf_puts(b, "\n");
    }
    if (st->tap_events.failed || st->tap_items.failed) {
        snprintf(err, errlen, "%s: out of memory for a batch of item rows", s->shown);
        return -1;
    }
    return 0;
}

/* One COPY of the text lines in b into table (cols); b emptied. */
static int tap_copy(struct pgstore *s, struct buf *b, const char *table, const char *cols,
                    char *err, size_t errlen)
{
    char sql[512], what[96];
    if (!b->len)
        return 0;
    snprintf(sql, sizeof sql, "COPY %s (%s) FROM STDIN", table, cols);
    snprintf(what, sizeof what, "COPY into %s", table);
    PGresult *res = PQexec(s->conn, sql);
    if (PQresultStatus(res) != PGRES_COPY_IN)
        return res_ok(s, res, PGRES_COPY_IN, what, err, errlen);
    PQclear(res);
    bool sent = true;
    for (size_t at = 0; sent && at < b->len; at += 1u << 20) { /* 1 MB at a time */
        size_t n = b->len - at < (1u << 20) ? b->len - at : (1u << 20);
        sent = PQputCopyData(s->conn, b->data + at, (int)n) == 1;
    }
    if (PQputCopyEnd(s->conn, sent ? NULL : "slabtap: send failed") != 1 || !sent) {
        conn_fail(s, what, err, errlen);
        while ((res = PQgetResult(s->conn)))
            PQclear(res);
        return -1;
    }
    res = PQgetResult(s->conn);
    int rc = res_ok(s, res, PGRES_COMMAND_OK, what, err, errlen);
    while ((res = PQgetResult(s->conn)))
        PQclear(res);
    buf_reset(b);
    return rc;
}

static int put_tap_rows(struct pgstore *s, char *err, size_t errlen)
{
    struct pgstore_state *st = s->st;
    return tap_copy(s, &st->tap_events, "item_events",
                    "run_id, seq, t_ns, event, key_hash, key_ref, key_len, class_id, size,"
                    " fetched, idle_s, ttl_left, cmd",
                    err, errlen) ||
                   tap_copy(s, &st->tap_items, "snapshot_items",
                            "run_id, snap, seq, key_hash, key_ref, key_len, class_id, size,"
                            " ttl_left, idle_s, fetched, flags",
                            err, errlen)
               ? -1
               : 0;
}

static int put_tap_snapshot(struct pgstore *s, int64_t run_id, const struct rec_job *j, char *err,
                            size_t errlen)
{
    struct itemrow_snapshot sn;
    char v[7][32];
    itemrow_snapshot(j, &sn);
    snprintf(v[0], sizeof v[0], "%lld", (long long)run_id);
    snprintf(v[1], sizeof v[1], "%lld", (long long)sn.snap);
    snprintf(v[2], sizeof v[2], "%lld", (long long)sn.t_ns);
    snprintf(v[3], sizeof v[3], "%lld", (long long)sn.ended_ns.v);
    snprintf(v[4], sizeof v[4], "%lld", (long long)sn.items);
    snprintf(v[5], sizeof v[5], "%lld", (long long)sn.bytes);
    snprintf(v[6], sizeof v[6], "%lld", (long long)sn.complete);
    const char *header = j->text ? job_clean(&s->st->job_text, j->text, false) : NULL;
    if (j->text && !header) {
        snprintf(err, errlen, "%s: a snapshot header: too large or out of memory", s->shown);
        return -1;
    }
    const char *params[8] = { v[0], v[1], v[2], sn.ended_ns.null ? NULL : v[3],
                              v[4], v[5], v[6], header };
    return run_prepared(s, "snapshot", 8, params, "inserting a snapshot", err, errlen);
}
