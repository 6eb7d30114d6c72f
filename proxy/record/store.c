/* store: the SQLite database. schema.sql (derived from schema/schema.sql.in
 * and embedded at build time) is the only definition of tables and views; this file applies it, upgrades
 * older files and writes batches with prepared statements. Recorded writes
 * go into `writes` in the compact format schema.sql describes, through one
 * encoder (put_write) that both the writer thread and the v3 -> v4 upgrade
 * use, so what the view `sets` reads back is what was recorded.
 * Must never be used by two threads at once (the writer thread owns it),
 * nor print: every failure comes back as -1 with its reason in err. */
#include "record/store.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonb.h"
#include "core/keyfmt.h"
#include "core/log.h"
#include "protocol/mc_parse.h"
#include "record/itemrow.h"
#include "record/ragg.h"
#include "record/row.h"
#include "record/rowcode.h"
#include "record/wagg.h"

extern const char slabtap_schema_sql[];

/* write_runs.hi of the last run: its range ends where the next one begins */
#define WRITE_RUN_OPEN (INT64_C(1) << 62)
/* what the packed column `op` has room for (record/rowcode.h) */
#define OP_CMD_MAX ROWCODE_CMD_MAX
/* dictionary entries this process keeps in memory (and adds); texts beyond
 * are stored inline, which is always correct, only bigger */
#define ANSWERS_MAX 4096
#define PREFIXES_MAX 65536

/* compact writes go in by statements of this many rows (fewer statements
 * to run: a third less CPU per row than one INSERT each) */
#define STAGE_ROWS 32

#define CMD_KNOWN 1u
#define CMD_HAS_FLAGS 2u
#define CMD_HAS_EXPTIME 4u

/* --- a bounded text -> id map for the dictionaries ----------------------------- */

struct sdict_ent {
    uint64_t hash;
    int64_t id; /* 0: empty slot */
    uint32_t off, len;
};

struct sdict {
    struct sdict_ent *slots;
    size_t nslots, n, max;
    struct buf arena; /* the texts, back to back (offsets are uint32_t) */
};

static int64_t sdict_find(const struct sdict *d, const char *text, size_t len, uint64_t h)
{
    if (!d->nslots)
        return 0;
    for (size_t i = h & (d->nslots - 1);; i = (i + 1) & (d->nslots - 1)) {
        const struct sdict_ent *e = &d->slots[i];
        if (!e->id)
            return 0;
        if (e->hash == h && e->len == len && (!len || !memcmp(d->arena.data + e->off, text, len)))
            return e->id;
    }
}

static void sdict_place(struct sdict_ent *slots, size_t nslots, const struct sdict_ent *e)
{
    size_t i = e->hash & (nslots - 1);
    while (slots[i].id)
        i = (i + 1) & (nslots - 1);
    slots[i] = *e;
}

/* 0, or -1 when full or out of memory (the caller stores the text inline) */
static int sdict_add(struct sdict *d, const char *text, size_t len, uint64_t h, int64_t id)
{
    if (d->n >= d->max || len > UINT32_MAX / 2)
        return -1;
    if ((d->n + 1) * 2 > d->nslots) {
        size_t ns = d->nslots ? d->nslots * 2 : 256;
        struct sdict_ent *slots = calloc(ns, sizeof *slots);
        if (!slots)
            return -1;
        for (size_t i = 0; i < d->nslots; i++)
            if (d->slots[i].id)
                sdict_place(slots, ns, &d->slots[i]);
        free(d->slots);
        d->slots = slots;
        d->nslots = ns;
    }
    struct sdict_ent e = {
        .hash = h, .id = id, .off = (uint32_t)d->arena.len, .len = (uint32_t)len
    };
    if (buf_append(&d->arena, text, len))
        return -1;
    sdict_place(d->slots, d->nslots, &e);
    d->n++;
    return 0;
}

static void sdict_clear(struct sdict *d)
{
    if (d->slots)
        memset(d->slots, 0, d->nslots * sizeof *d->slots);
    d->n = 0;
    buf_reset(&d->arena);
}

static void sdict_free(struct sdict *d)
{
    free(d->slots);
    buf_free(&d->arena);
    d->slots = NULL;
    d->nslots = d->n = 0;
}

/* A compact write, bound to the next multi-row INSERT. key: the text when
 * key_ref is 0 (NULL: none); it stays valid until the stage is written. */
struct staged {
    int64_t rid, key_hash, key_ref, op, sizes, fe;
    const char *key;
    size_t key_len;
};

/* A write of the batch, until store_commit writes it. */
struct pending_ref {
    int64_t run, seq;
    const struct rec_row *row;
};

/* Appends row to a batch's pending rows (an array that grows to the batch
 * size once, then is reused): 0, or -1 out of memory. */
static int pending_add(struct pending_ref **pending, size_t *n, size_t *cap, int64_t run_id,
                       const struct rec_row *row)
{
    if (!BUF_GROW(*pending, *cap, *n + 1))
        return -1;
    (*pending)[(*n)++] =
        (struct pending_ref){ run_id, row->seq > INT64_MAX ? INT64_MAX : (int64_t)row->seq, row };
    return 0;
}

/* --- reads (REC_ROW_READ; schema.sql: read_rows, the view reads) ----------------- */

/* read_keys entries the writer remembers (hash, length, text -> key_id);
 * past it the cache starts over: keys read again get a new row, which is
 * correct, only bigger */
#define READ_KEYS_MAX (1u << 18)

/* A key the writer remembers: its 64-bit hash and length name it (two
 * keys alike in both would share a row: about 2^-64 per pair) */
struct read_key_slot {
    uint64_t hash;
    uint32_t len; /* key_len | 1 << 16 when the key has recorded text */
    int64_t id;   /* 0: empty */
};
#define READ_KEYS_SLOTS (2 * READ_KEYS_MAX)

struct store_reads {
    sqlite3_stmt *ins, *ins_n, *arr_ins, *arr_last, *arr_cover, *arr_next, *row_after, *max_rowid,
        *run_get, *key_add, *agg_st, *extra_ins;
    struct staged stage[STAGE_ROWS];
    size_t nstage;
    int64_t run_id; /* -1: none loaded */
    int64_t base, lo, hi, t0;
    bool arr_known;
    int64_t arr_rid, arr_dt, arr_conn, arr_aw;
    int64_t max_rid;
    struct read_key_slot *keys; /* nkeys_slots: (hash, length) -> read_keys.key_id */
    size_t nkeys_slots;         /* grows by doubling to READ_KEYS_SLOTS */
    size_t nkeys;
    struct pending_ref *pending;
    size_t npending, pending_cap;
    struct ragg agg; /* agg_reads (record/ragg.h) */
};

/* --- the encoder's state -------------------------------------------------------- */

struct store_writes {
    /* the WAL (store_wal_hook; here, not in struct store, which is moved
     * by value on rotation while the hook keeps its pointer): frames in it
     * after the last commit, and the autocheckpoint bound in pages */
    uint64_t wal_frames;
    unsigned wal_auto;
    sqlite3_stmt *ins_write, *ins_write_n, *ins_arrival, *arr_last, *arr_cover, *arr_next,
        *row_after, *max_rowid, *run_get, *cmd_find, *cmd_add, *answer_find, *answer_add,
        *prefix_find, *prefix_add;
    /* command -> cmds.cmd_id: 0 not looked up yet, -1 none (goes to extra) */
    int8_t cmd_plain[MC_CMD_COUNT];
    int8_t cmd_ms[256]; /* ms by its mode byte */
    uint8_t cmd_props[OP_CMD_MAX + 1];
    struct sdict answers, prefixes;
    /* the run rows are being written for */
    int64_t run_id; /* -1: none loaded */
    int64_t base, lo, hi, t0;
    bool prefix_keys;
    /* the key mode store_run_begin (or the upgrade) gave for mode_run */
    int64_t mode_run;
    bool mode_prefix;
    /* the run's last arrival (the one with the highest rowid) */
    bool arr_known;
    int64_t arr_rid, arr_dt, arr_conn; /* arr_rid -1: the run has none */
    int64_t max_rid;                   /* the run's highest write rowid; -1: not loaded */
    struct buf json;                   /* extra's JSON (record/rowcode.h) */
    /* the batch's writes, written at store_commit in (run, seq) order so
     * that pages fill up in rowid order */
    struct pending_ref *pending;
    size_t npending, pending_cap;
    struct staged stage[STAGE_ROWS];
    size_t nstage;
    bool stage_ok; /* keys outlive the stage (not so for the upgrade's) */
    /* write aggregates (record/wagg.h) of agg_run, written with a batch at
     * most every STORE_AGG_FLUSH_MS, and before a query reads them */
    struct wagg agg;
    int64_t agg_run;        /* 0: nothing counted yet */
    int64_t agg_written_ns; /* when they were last written */
    bool agg_in_batch;      /* this batch's transaction writes them */
    sqlite3_stmt *agg_size, *agg_latency, *agg_prefix, *agg_mark;
    sqlite3_stmt *agg_item, *agg_answer, *agg_pclass, *agg_mark2; /* issue 14's histograms */
    sqlite3_stmt *upd_counts;                                     /* store_put_counts */
    struct store_reads rd;                                        /* REC_ROW_READ rows */
    /* issue 22: item_events, snapshot_items, snapshots (put_tap_*) */
    sqlite3_stmt *ins_event, *ins_item, *ins_snap;
};

static void reads_forget(struct store_reads *r);
static int put_tap_row(struct store *s, int64_t run_id, const struct rec_row *row, char *err,
                       size_t errlen);
static int put_tap_snapshot(struct store *s, int64_t run_id, const struct rec_job *j, char *err,
                            size_t errlen);
static int read_run_begin(struct store *s, int64_t run_id, int64_t t0, char *err, size_t errlen);

/* After a rollback nothing cached can be trusted: dictionary entries and
 * arrivals of the batch are gone. Everything is looked up again. */
static void writes_forget(struct store_writes *w)
{
    w->npending = 0;
    w->nstage = 0;
    w->run_id = -1;
    w->arr_known = false;
    w->max_rid = -1;
    memset(w->cmd_plain, 0, sizeof w->cmd_plain);
    memset(w->cmd_ms, 0, sizeof w->cmd_ms);
    memset(w->cmd_props, 0, sizeof w->cmd_props);
    sdict_clear(&w->answers);
    sdict_clear(&w->prefixes);
    reads_forget(&w->rd);
}

static int exec(struct store *s, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "%.200s: %s", s->path, msg ? msg : "sqlite error");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* SQLite's reason for the last failure on s, with the file it concerns. */
static int store_fail(struct store *s, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
    return -1;
}

static int user_version(struct store *s)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* One value of a statement that returns at most one row: 1 with *v set, 0
 * for no row (or NULL), -1 on error. Resets st. */
static int step_int(sqlite3_stmt *st, int64_t *v)
{
    int rc = sqlite3_step(st);
    int got = rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL;
    if (got)
        *v = sqlite3_column_int64(st, 0);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        got = -1;
    sqlite3_reset(st);
    return got;
}

/* --- dictionaries ------------------------------------------------------------------ */

/* cmds.cmd_id of (cmd, ms_mode) ("" for none), added when missing with the
 * presence of flags and exptime of the write that brought it: 1..63, 0 when
 * it has (or can get) no id op can hold, -1 on error. */
static int cmd_lookup(struct store *s, const char *cmd, size_t len, const char *mode, size_t mlen,
                      bool has_flags, bool has_exptime)
{
    struct store_writes *w = s->w;
    sqlite3_stmt *st = w->cmd_find;
    int64_t id = 0, hf = 0, he = 0;
    sqlite3_bind_text(st, 1, cmd, (int)len, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, mode, (int)mlen, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        id = sqlite3_column_int64(st, 0);
        hf = sqlite3_column_int64(st, 1);
        he = sqlite3_column_int64(st, 2);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return -1;
    if (rc == SQLITE_DONE) {
        st = w->cmd_add;
        sqlite3_bind_text(st, 1, cmd, (int)len, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, mode, (int)mlen, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, has_flags);
        sqlite3_bind_int(st, 4, has_exptime);
        rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
            return -1;
        if (!sqlite3_changes(s->db))
            return 0; /* 63 commands already */
        id = sqlite3_last_insert_rowid(s->db);
        hf = has_flags;
        he = has_exptime;
    }
    if (id < 1 || id > OP_CMD_MAX)
        return 0;
    w->cmd_props[id] = CMD_KNOWN | (hf ? CMD_HAS_FLAGS : 0) | (he ? CMD_HAS_EXPTIME : 0);
    return (int)id;
}

/* The id of a command of the parser's table (mode: ms M<mode>, 0 none). */
static int cmd_id_of(struct store *s, enum mc_cmd cmd, char mode, bool has_flags, bool has_exptime)
{
    struct store_writes *w = s->w;
    int8_t *slot = NULL;
    if ((unsigned)cmd < MC_CMD_COUNT && !mode)
        slot = &w->cmd_plain[cmd];
    else if (cmd == MC_CMD_MS)
        slot = &w->cmd_ms[(unsigned char)mode];
    if (slot && *slot)
        return *slot > 0 ? *slot : 0;
    const char *name = mc_cmd_name(cmd);
    int id = cmd_lookup(s, name, strlen(name), &mode, mode ? 1 : 0, has_flags, has_exptime);
    if (id >= 0 && slot)
        *slot = (int8_t)(id ? id : -1);
    return id;
}

/* The id of a dictionary text (answers, key_prefixes), looked up or added:
 * > 0, 0 when it stays inline, -1 on error. */
static int64_t dict_id(struct store *s, struct sdict *d, sqlite3_stmt *find, sqlite3_stmt *add,
                       const char *text, size_t len)
{
    uint64_t h = keyfmt_hash(text, len);
    int64_t id = sdict_find(d, text, len, h);
    if (id || d->n >= d->max || len > 1024 * 1024)
        return id;
    sqlite3_bind_text(find, 1, text, (int)len, SQLITE_STATIC);
    int got = step_int(find, &id);
    if (got < 0)
        return -1;
    if (!got) {
        sqlite3_bind_text(add, 1, text, (int)len, SQLITE_STATIC);
        int rc = sqlite3_step(add);
        sqlite3_reset(add);
        if (rc != SQLITE_DONE)
            return -1;
        id = sqlite3_last_insert_rowid(s->db);
    }
    sdict_add(d, text, len, h, id); /* full: looked up again next time */
    return id;
}

/* Answers with a digit (incr results, meta flags such as opaques) would
 * fill the dictionary with one-off texts: they stay inline. */
static int64_t answer_id(struct store *s, const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (text[i] >= '0' && text[i] <= '9')
            return 0;
    return dict_id(s, &s->w->answers, s->w->answer_find, s->w->answer_add, text, len);
}

/* --- compact writes, STAGE_ROWS at a time -------------------------------------------- */

static void bind_staged(sqlite3_stmt *st, int at, const struct staged *x)
{
    sqlite3_bind_int64(st, at + 1, x->rid);
    sqlite3_bind_int64(st, at + 2, x->key_hash);
    if (x->key_ref > 0)
        sqlite3_bind_int64(st, at + 3, x->key_ref);
    else if (x->key)
        sqlite3_bind_text(st, at + 3, x->key, (int)x->key_len, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, at + 3);
    sqlite3_bind_int64(st, at + 4, x->op);
    sqlite3_bind_int64(st, at + 5, x->sizes);
    if (x->fe)
        sqlite3_bind_int64(st, at + 6, x->fe);
    else
        sqlite3_bind_null(st, at + 6);
}

static int step_reset(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Writes the staged rows: 0, or -1 with SQLite's error on the connection. */
static int stage_flush(struct store *s)
{
    struct store_writes *w = s->w;
    size_t n = w->nstage;
    w->nstage = 0;
    if (n == STAGE_ROWS) {
        for (size_t i = 0; i < n; i++)
            bind_staged(w->ins_write_n, (int)i * 6, &w->stage[i]);
        return step_reset(w->ins_write_n);
    }
    for (size_t i = 0; i < n; i++) {
        bind_staged(w->ins_write, 0, &w->stage[i]);
        if (step_reset(w->ins_write))
            return -1;
    }
    return 0;
}

/* --- runs and arrivals ------------------------------------------------------------ */

/* Reserves the rowids of a run's writes: from the first rowid after every
 * write in the file; the run before (the open one) ends there. first_seq:
 * the lowest seq the run will have (1 for the proxy). */
static int write_run_begin(struct store *s, int64_t run_id, int64_t t0, int64_t first_seq,
                           char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int64_t max = 0;
    int rc = -1;
    if (sqlite3_prepare_v2(s->db, "SELECT max(rowid) FROM writes", -1, &st, NULL) != SQLITE_OK ||
        step_int(st, &max) < 0)
        goto fail;
    sqlite3_finalize(st);
    st = NULL;
    int64_t lo = max + 1;
    if (first_seq > INT64_MAX / 4 || first_seq < -(INT64_MAX / 4) || lo >= WRITE_RUN_OPEN / 2) {
        snprintf(err, errlen, "%s: run %lld: no room for its rows (seq from %lld)", s->path,
                 (long long)run_id, (long long)first_seq);
        return -1;
    }
    if (sqlite3_prepare_v2(s->db, "UPDATE write_runs SET hi = ?1 WHERE hi > ?1", -1, &st, NULL) !=
        SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(st, 1, lo);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR REPLACE INTO write_runs (run_id, base, lo, hi, t0)"
                           " VALUES (?1, ?2, ?3, ?4, ?5)",
                           -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, lo - first_seq);
    sqlite3_bind_int64(st, 3, lo);
    sqlite3_bind_int64(st, 4, WRITE_RUN_OPEN);
    sqlite3_bind_int64(st, 5, t0);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    s->w->run_id = -1;
    rc = 0;
    goto out;
fail:
    store_fail(s, "reserving the run's rows", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

static int run_ctx(struct store *s, int64_t run_id, char *err, size_t errlen)
{
    struct store_writes *w = s->w;
    if (w->run_id == run_id)
        return 0;
    if (stage_flush(s))
        return store_fail(s, "inserting writes", err, errlen);
    sqlite3_stmt *st = w->run_get;
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        w->base = sqlite3_column_int64(st, 0);
        w->lo = sqlite3_column_int64(st, 1);
        w->hi = sqlite3_column_int64(st, 2);
        w->t0 = sqlite3_column_int64(st, 3);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) {
        snprintf(err, errlen, "%s: run %lld has no row in write_runs", s->path, (long long)run_id);
        return -1;
    }
    if (rc != SQLITE_ROW)
        return store_fail(s, "reading the run's row range", err, errlen);
    w->run_id = run_id;
    w->prefix_keys = w->mode_run == run_id && w->mode_prefix;
    w->arr_known = false;
    w->max_rid = -1;
    return 0;
}

static int arrival_insert(struct store *s, int64_t rid, int64_t dt, int64_t conn)
{
    sqlite3_stmt *st = s->w->ins_arrival;
    sqlite3_bind_int64(st, 1, rid);
    sqlite3_bind_int64(st, 2, dt);
    sqlite3_bind_int64(st, 3, conn);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* The arrival (dt, conn) of the write at rowid rid. The invariant: the
 * arrival with the highest rowid <= a write's rowid (within its run) holds
 * that write's conn_id and time. Writes mostly come in rowid order, so
 * the common case compares with the run's last arrival and writes nothing
 * (or one row); a write older than others already written takes a look at
 * the table, and restores the arrival of the writes after it if it has to
 * start a new one in their midst. */
static int arrival(struct store *s, int64_t rid, int64_t dt, int64_t conn)
{
    struct store_writes *w = s->w;
    sqlite3_stmt *st;
    if (w->max_rid < 0) {
        if (stage_flush(s))
            return -1;
        sqlite3_bind_int64(w->max_rowid, 1, w->lo);
        sqlite3_bind_int64(w->max_rowid, 2, w->hi);
        int got = step_int(w->max_rowid, &w->max_rid);
        if (got < 0)
            return -1;
        if (!got)
            w->max_rid = w->lo - 1;
    }
    if (!w->arr_known) {
        st = w->arr_last;
        sqlite3_bind_int64(st, 1, w->lo);
        sqlite3_bind_int64(st, 2, w->hi);
        int rc = sqlite3_step(st);
        w->arr_rid = -1;
        if (rc == SQLITE_ROW) {
            w->arr_rid = sqlite3_column_int64(st, 0);
            w->arr_dt = sqlite3_column_int64(st, 1);
            w->arr_conn = sqlite3_column_int64(st, 2);
        }
        sqlite3_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return -1;
        w->arr_known = true;
    }
    if (w->arr_rid >= 0 && rid >= w->arr_rid && dt == w->arr_dt && conn == w->arr_conn)
        return 0;
    if (rid > w->max_rid && rid >= w->arr_rid) { /* nothing after it: a new last arrival */
        if (arrival_insert(s, rid, dt, conn))
            return -1;
        w->arr_rid = rid;
        w->arr_dt = dt;
        w->arr_conn = conn;
        return 0;
    }
    /* in the midst of what is written: the arrival covering rid */
    if (stage_flush(s))
        return -1;
    st = w->arr_cover;
    sqlite3_bind_int64(st, 1, w->lo);
    sqlite3_bind_int64(st, 2, rid);
    int rc = sqlite3_step(st);
    bool cover = rc == SQLITE_ROW;
    int64_t cdt = 0, cconn = 0;
    if (cover) {
        cdt = sqlite3_column_int64(st, 1);
        cconn = sqlite3_column_int64(st, 2);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return -1;
    if (cover && cdt == dt && cconn == conn)
        return 0;
    if (cover) {
        /* the writes between rid and the next arrival keep the covering one */
        int64_t next = w->hi, after = 0;
        sqlite3_bind_int64(w->arr_next, 1, rid);
        sqlite3_bind_int64(w->arr_next, 2, w->hi);
        if (step_int(w->arr_next, &next) < 0)
            return -1;
        sqlite3_bind_int64(w->row_after, 1, rid);
        sqlite3_bind_int64(w->row_after, 2, next);
        int got = step_int(w->row_after, &after);
        if (got < 0 || (got && arrival_insert(s, after, cdt, cconn)))
            return -1;
    }
    if (arrival_insert(s, rid, dt, conn))
        return -1;
    w->arr_known = false;
    return 0;
}

/* --- the encoder -------------------------------------------------------------------- */

struct opt {
    bool has;
    int64_t v;
};

/* One write as the view shows it, with its dictionary ids resolved. */
struct wr {
    int64_t seq, t_ns, conn_id, key_hash;
    int cmd_id; /* 1..63, or 0: cmd and ms_mode go to extra */
    const char *cmd, *ms_mode;
    size_t cmd_len, ms_len;
    int64_t answer_id; /* >= 1, or 0: the answer goes to extra */
    const char *answer;
    size_t answer_len;
    int64_t key_ref; /* > 0: key_prefixes.prefix_id; else key (NULL: none) */
    const char *key;
    size_t key_text_len;
    struct opt key_len, value_len, flags, exptime, latency_ns, class_id;
    bool latency_exact; /* keep nanoseconds that are not whole microseconds */
};

static int put_write(struct store *s, int64_t run_id, const struct wr *r, char *err, size_t errlen)
{
    struct store_writes *w = s->w;
    if (run_ctx(s, run_id, err, errlen))
        return -1;
    if (r->seq > INT64_MAX / 4 || r->seq < -(INT64_MAX / 4) || w->base + r->seq < w->lo ||
        w->base + r->seq >= w->hi) {
        snprintf(err, errlen, "%s: run %lld: seq %lld is outside the run's row range", s->path,
                 (long long)run_id, (long long)r->seq);
        return -1;
    }
    int64_t rid = w->base + r->seq;
    /* the bits and extra's JSON: record/rowcode.h, shared with pgstore.c */
    unsigned props = r->cmd_id > 0 ? w->cmd_props[r->cmd_id] : 0;
#define STORE_OPT(o) ((struct rowcode_opt){ (o).has, (o).v })
    struct rowcode_in in = { .cmd_id = r->cmd_id,
                             .cmd_has_flags = props & CMD_HAS_FLAGS,
                             .cmd_has_exptime = props & CMD_HAS_EXPTIME,
                             .cmd = r->cmd,
                             .ms_mode = r->ms_mode,
                             .cmd_len = r->cmd_len,
                             .ms_len = r->ms_len,
                             .answer_id = r->answer_id,
                             .answer = r->answer,
                             .answer_len = r->answer_len,
                             .key_len = STORE_OPT(r->key_len),
                             .value_len = STORE_OPT(r->value_len),
                             .flags = STORE_OPT(r->flags),
                             .exptime = STORE_OPT(r->exptime),
                             .latency_ns = STORE_OPT(r->latency_ns),
                             .class_id = STORE_OPT(r->class_id),
                             .latency_exact = r->latency_exact };
#undef STORE_OPT
    struct buf *j = &w->json;
    struct rowcode_out enc;
    if (rowcode_encode(&in, ROWCODE_TEXT_BYTES, j, &enc)) {
        snprintf(err, errlen, "%s: out of memory encoding a write", s->path);
        return -1;
    }
    bool json = enc.json;

    if (arrival(s, rid, r->t_ns - w->t0, r->conn_id))
        return store_fail(s, "inserting an arrival", err, errlen);
    struct staged x = { .rid = rid,
                        .key_hash = r->key_hash,
                        .key_ref = r->key_ref,
                        .op = enc.op,
                        .sizes = enc.sizes,
                        .fe = enc.fe,
                        .key = r->key,
                        .key_len = r->key_text_len };
    if (rid > w->max_rid)
        w->max_rid = rid;
    if (!json && w->stage_ok) {
        w->stage[w->nstage++] = x;
        if (w->nstage == STAGE_ROWS && stage_flush(s))
            return store_fail(s, "inserting writes", err, errlen);
        return 0;
    }
    /* rare: extra is JSON (or the key text is about to change) */
    if (stage_flush(s))
        return store_fail(s, "inserting writes", err, errlen);
    bind_staged(w->ins_write, 0, &x);
    if (json)
        sqlite3_bind_text(w->ins_write, 6, j->data, (int)j->len, SQLITE_STATIC);
    if (step_reset(w->ins_write))
        return store_fail(s, "inserting a write", err, errlen);
    return 0;
}

/* The key text as recorded, by reference when the run keeps prefixes. */
static int key_of(struct store *s, struct wr *r, const char *text, size_t len)
{
    r->key = text;
    r->key_text_len = len;
    r->key_ref = 0;
    if (text && s->w->prefix_keys) {
        r->key_ref = dict_id(s, &s->w->prefixes, s->w->prefix_find, s->w->prefix_add, text, len);
        if (r->key_ref < 0)
            return -1;
    }
    return 0;
}

static int put_rec_write(struct store *s, int64_t run_id, const struct rec_row *row, char *err,
                         size_t errlen)
{
    struct wr r = { 0 };
    char mode = row->ms_mode;
    if (run_ctx(s, run_id, err, errlen))
        return -1;
    if (row->sampled_out) { /* --sample-keys: the aggregates count it, no row */
        r.cmd_id = cmd_id_of(s, (enum mc_cmd)row->cmd, mode, row->has_flags, row->has_exptime);
        r.answer_id = answer_id(s, row->answer, strnlen(row->answer, sizeof row->answer));
        if (r.cmd_id < 0 || r.answer_id < 0 ||
            key_of(s, &r, row->key_text_len >= 0 ? row->key_text : NULL,
                   row->key_text_len >= 0 ? (size_t)row->key_text_len : 0))
            return store_fail(s, "looking up a dictionary", err, errlen);
        goto aggregate;
    }
    r.seq = row->seq > INT64_MAX ? INT64_MAX : (int64_t)row->seq;
    r.t_ns = row->t_ns;
    r.conn_id = row->conn_id;
    r.key_hash = (int64_t)row->key_hash;
    r.key_len = (struct opt){ true, row->key_len };
    r.value_len = (struct opt){ row->value_len >= 0, row->value_len };
    r.flags = (struct opt){ row->has_flags, row->flags };
    r.exptime = (struct opt){ row->has_exptime, row->exptime };
    r.latency_ns = (struct opt){ row->latency_ns >= 0, row->latency_ns };
    r.class_id = (struct opt){ row->class_id > 0, row->class_id };
    r.cmd_id = cmd_id_of(s, (enum mc_cmd)row->cmd, mode, row->has_flags, row->has_exptime);
    r.cmd = mc_cmd_name((enum mc_cmd)row->cmd);
    r.cmd_len = strlen(r.cmd);
    r.ms_mode = mode ? &mode : NULL;
    r.ms_len = mode ? 1 : 0;
    r.answer = row->answer;
    r.answer_len = strnlen(row->answer, sizeof row->answer);
    r.answer_id = answer_id(s, r.answer, r.answer_len);
    if (r.cmd_id < 0 || r.answer_id < 0 ||
        key_of(s, &r, row->key_text_len >= 0 ? row->key_text : NULL,
               row->key_text_len >= 0 ? (size_t)row->key_text_len : 0))
        return store_fail(s, "looking up a dictionary", err, errlen);
    if (put_write(s, run_id, &r, err, errlen))
        return -1;
aggregate:
    if (row->class_id > 0) /* a later miss on the key counts in its class */
        ragg_note_write(&s->w->rd.agg, row->key_hash, row->class_id);
    if (s->w->agg.e && (s->w->agg_run == run_id || !s->w->agg_run)) {
        s->w->agg_run = run_id;
        wagg_note(&s->w->agg, row, r.key_ref, r.cmd_id, r.answer_id);
    }
    return 0;
}

/* --- schema and upgrades ------------------------------------------------------------- */

/* Upgrade steps, one per schema version, for files written by older
 * slabtap builds. schema.sql itself only ever CREATEs IF NOT EXISTS, so a
 * step only has to change what already exists. */
static const char *const upgrade_steps[STORE_SCHEMA_VERSION] = {
    [0] = NULL, /* 0: a fresh file; schema.sql creates everything */
    /* 1 -> 2: writes are tagged with the slab class the model predicts */
    [1] = "ALTER TABLE sets ADD COLUMN class_id INTEGER;",
    /* 2 -> 3: ms keeps its mode (add, append, prepend, replace, set) */
    [2] = "ALTER TABLE sets ADD COLUMN ms_mode TEXT;",
    /* 3 -> 4: the table steps aside for the view `sets`; its rows move to
     * `writes` once schema.sql has run (upgrade_v3_rows). Legacy mode: the
     * old views are not rewritten, schema.sql replaces them. */
    [3] = "PRAGMA legacy_alter_table = ON; ALTER TABLE sets RENAME TO sets_v3;"
          " PRAGMA legacy_alter_table = OFF;",
    /* 4 -> 5: a run that never ended is marked crashed at the next open */
    [4] = "ALTER TABLE runs ADD COLUMN crashed INTEGER NOT NULL DEFAULT 0;",
    /* 5 -> 6: what recorded the run (issue 22: watch, snapshot) */
    [5] = "ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'proxy';",
    /* 6 -> 7: the shadows (issue 23): new tables and views only, which
     * schema.sql creates */
    [6] = NULL,
};

/* A run without an end when the file is opened was cut short (killed, or
 * the machine went down): PATH.lock is ours, so no proxy is still writing
 * it. It gets its last write's time as its end and the rows
 * it did record, so run_summary never shows it as a clean run with 0 rows. */
static int store_mark_crashed(struct store *s, char *err, size_t errlen)
{
    int marked = sqlite3_total_changes(s->db);
    if (exec(s,
             "UPDATE runs SET crashed = 1,"
             " ended_ns = coalesce((SELECT max(t_ns) FROM sets w WHERE w.run_id = runs.run_id),"
             " started_ns),"
             /* the counts each batch kept in the row (store_put_counts), unless the
              * file holds more (written before they were kept) */
             " rows_recorded = max(rows_recorded,"
             " (SELECT count(*) FROM sets w WHERE w.run_id = runs.run_id))"
             " WHERE ended_ns IS NULL",
             err, errlen))
        return -1;
    marked = sqlite3_total_changes(s->db) - marked;
    if (marked > 0)
        log_warn("%s: %d run(s) had not ended (slabtap was killed?): marked crashed, with the "
                 "rows they recorded",
                 s->path, marked);
    return 0;
}

static int store_upgrade(struct store *s, int from, char *err, size_t errlen)
{
    if (from > STORE_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: schema version %d is newer than this slabtap (%d)", s->path,
                 from, STORE_SCHEMA_VERSION);
        return -1;
    }
    if (from == 0)
        return 0;
    for (int v = from; v < STORE_SCHEMA_VERSION; v++)
        if (upgrade_steps[v] && exec(s, upgrade_steps[v], err, errlen))
            return -1;
    return 0;
}

enum {
    V3_RUN,
    V3_SEQ,
    V3_CONN,
    V3_T,
    V3_CMD,
    V3_KEY,
    V3_HASH,
    V3_KEY_LEN,
    V3_VALUE_LEN,
    V3_FLAGS,
    V3_EXPTIME,
    V3_ANSWER,
    V3_LATENCY,
    V3_CLASS,
    V3_MS_MODE,
    V3_KEY_MODE,
    V3_COLS
};
static const char *const v3_names[V3_COLS] = { "run_id",     "seq",      "conn_id",  "t_ns",
                                               "cmd",        "key",      "key_hash", "key_len",
                                               "value_len",  "flags",    "exptime",  "answer",
                                               "latency_ns", "class_id", "ms_mode",  "key_mode" };

/* The column's value when it has the type the v3 schema gave it. */
static bool v3_col(sqlite3_stmt *st, int col, int type, bool nullable, struct opt *o)
{
    int t = sqlite3_column_type(st, col);
    o->has = t != SQLITE_NULL;
    o->v = o->has && type == SQLITE_INTEGER ? sqlite3_column_int64(st, col) : 0;
    return t == type || (nullable && t == SQLITE_NULL);
}

/* 3 -> 4: every row of the old table, through the same encoder, run by run
 * in seq order; then the old table goes. */
static int upgrade_v3_rows(struct store *s, char *err, size_t errlen)
{
    struct store_writes *w = s->w;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    bool have_run = false;
    int64_t run = 0;
    if (sqlite3_prepare_v2(
            s->db,
            "SELECT s.run_id, s.seq, s.conn_id, s.t_ns, s.cmd, s.key, s.key_hash, s.key_len,"
            " s.value_len, s.flags, s.exptime, s.answer, s.latency_ns, s.class_id, s.ms_mode,"
            " (SELECT r.key_mode FROM runs r WHERE r.run_id = s.run_id)"
            " FROM sets_v3 s ORDER BY s.run_id, s.seq",
            -1, &st, NULL) != SQLITE_OK) {
        store_fail(s, "reading the v3 table sets", err, errlen);
        goto out;
    }
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        static const struct {
            int type;
            bool nullable;
        } want[V3_COLS] = {
            [V3_RUN] = { SQLITE_INTEGER, false },      [V3_SEQ] = { SQLITE_INTEGER, false },
            [V3_CONN] = { SQLITE_INTEGER, false },     [V3_T] = { SQLITE_INTEGER, false },
            [V3_CMD] = { SQLITE_TEXT, false },         [V3_KEY] = { SQLITE_TEXT, true },
            [V3_HASH] = { SQLITE_INTEGER, false },     [V3_KEY_LEN] = { SQLITE_INTEGER, false },
            [V3_VALUE_LEN] = { SQLITE_INTEGER, true }, [V3_FLAGS] = { SQLITE_INTEGER, true },
            [V3_EXPTIME] = { SQLITE_INTEGER, true },   [V3_ANSWER] = { SQLITE_TEXT, false },
            [V3_LATENCY] = { SQLITE_INTEGER, true },   [V3_CLASS] = { SQLITE_INTEGER, true },
            [V3_MS_MODE] = { SQLITE_TEXT, true },      [V3_KEY_MODE] = { SQLITE_TEXT, true },
        };
        struct opt v[V3_COLS];
        for (int c = 0; c < V3_COLS; c++) {
            if (!v3_col(st, c, want[c].type, want[c].nullable, &v[c])) {
                snprintf(err, errlen,
                         "%s: cannot upgrade to schema %d: sets row (run %lld, seq %lld): %s "
                         "is not %s",
                         s->path, STORE_SCHEMA_VERSION, (long long)sqlite3_column_int64(st, 0),
                         (long long)sqlite3_column_int64(st, 1), v3_names[c],
                         want[c].type == SQLITE_TEXT ? "text" : "an integer");
                goto out;
            }
        }
        if (!have_run || v[V3_RUN].v != run) {
            run = v[V3_RUN].v;
            have_run = true;
            const char *km = (const char *)sqlite3_column_text(st, V3_KEY_MODE);
            w->mode_run = run;
            w->mode_prefix = km && !strcmp(km, "prefix");
            if (write_run_begin(s, run, v[V3_T].v, v[V3_SEQ].v, err, errlen) ||
                run_ctx(s, run, err, errlen))
                goto out;
        }
        struct wr r = {
            .seq = v[V3_SEQ].v,
            .t_ns = v[V3_T].v,
            .conn_id = v[V3_CONN].v,
            .key_hash = v[V3_HASH].v,
            .key_len = v[V3_KEY_LEN],
            .value_len = v[V3_VALUE_LEN],
            .flags = v[V3_FLAGS],
            .exptime = v[V3_EXPTIME],
            .latency_ns = v[V3_LATENCY],
            .class_id = v[V3_CLASS],
            .latency_exact = true,
        };
        r.cmd = (const char *)sqlite3_column_text(st, V3_CMD);
        r.cmd_len = (size_t)sqlite3_column_bytes(st, V3_CMD);
        r.ms_mode = (const char *)sqlite3_column_text(st, V3_MS_MODE);
        r.ms_len = r.ms_mode ? (size_t)sqlite3_column_bytes(st, V3_MS_MODE) : 0;
        r.answer = (const char *)sqlite3_column_text(st, V3_ANSWER);
        r.answer_len = (size_t)sqlite3_column_bytes(st, V3_ANSWER);
        const char *key = (const char *)sqlite3_column_text(st, V3_KEY);
        size_t key_len = key ? (size_t)sqlite3_column_bytes(st, V3_KEY) : 0;
        /* an empty ms_mode would read back as no mode: it stays inline */
        r.cmd_id = r.ms_mode && !r.ms_len
                       ? 0
                       : cmd_lookup(s, r.cmd, r.cmd_len, r.ms_mode ? r.ms_mode : "", r.ms_len,
                                    r.flags.has, r.exptime.has);
        r.answer_id = answer_id(s, r.answer, r.answer_len);
        if (r.cmd_id < 0 || r.answer_id < 0 || key_of(s, &r, key, key_len)) {
            store_fail(s, "looking up a dictionary", err, errlen);
            goto out;
        }
        if (put_write(s, run, &r, err, errlen))
            goto out;
    }
    if (step != SQLITE_DONE) {
        store_fail(s, "reading the v3 table sets", err, errlen);
        goto out;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (exec(s, "DROP TABLE sets_v3", err, errlen))
        goto out;
    rc = 0;
out:
    sqlite3_finalize(st);
    w->run_id = -1;
    w->mode_run = -1;
    return rc;
}

/* --- open and close ----------------------------------------------------------------- */

static int prepare(struct store *s, const char *sql, sqlite3_stmt **st)
{
    return sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) == SQLITE_OK
               ? 0
               : -1;
}

static int prepare_all(struct store *s)
{
    struct store_writes *w = s->w;
    struct store_reads *r = &w->rd;
    char sql[64 + STAGE_ROWS * 32], rsql[64 + STAGE_ROWS * 32];
    size_t len = (size_t)snprintf(sql, sizeof sql,
                                  "INSERT INTO writes (rowid, key_hash, key_ref, op, sizes, extra)"
                                  " VALUES (?,?,?,?,?,?)");
    for (int i = 1; i < STAGE_ROWS; i++)
        len += (size_t)snprintf(sql + len, sizeof sql - len, ",(?,?,?,?,?,?)");
    len = (size_t)snprintf(rsql, sizeof rsql,
                           "INSERT INTO read_rows (rowid, key_id, op) VALUES (?,?,?)");
    for (int i = 1; i < STAGE_ROWS; i++)
        len += (size_t)snprintf(rsql + len, sizeof rsql - len, ",(?,?,?)");
    return prepare(s, rsql, &r->ins_n) ||
           prepare(s, "INSERT INTO read_rows (rowid, key_id, op) VALUES (?1,?2,?3)", &r->ins) ||
           prepare(s, "INSERT OR REPLACE INTO read_extra (rowid, extra) VALUES (?1,?2)",
                   &r->extra_ins) ||
           prepare(s,
                   "INSERT OR REPLACE INTO read_arrivals (rowid, dt, conn_id, after_write)"
                   " VALUES (?1,?2,?3,?4)",
                   &r->arr_ins) ||
           prepare(s,
                   "SELECT rowid, dt, conn_id, after_write FROM read_arrivals"
                   " WHERE rowid >= ?1 AND rowid < ?2 ORDER BY rowid DESC LIMIT 1",
                   &r->arr_last) ||
           prepare(s,
                   "SELECT rowid, dt, conn_id, after_write FROM read_arrivals"
                   " WHERE rowid BETWEEN ?1 AND ?2 ORDER BY rowid DESC LIMIT 1",
                   &r->arr_cover) ||
           prepare(s, "SELECT min(rowid) FROM read_arrivals WHERE rowid > ?1 AND rowid < ?2",
                   &r->arr_next) ||
           prepare(s, "SELECT min(rowid) FROM read_rows WHERE rowid > ?1 AND rowid < ?2",
                   &r->row_after) ||
           prepare(s, "SELECT max(rowid) FROM read_rows WHERE rowid >= ?1 AND rowid < ?2",
                   &r->max_rowid) ||
           prepare(s, "SELECT base, lo, hi, t0 FROM read_runs WHERE run_id = ?1", &r->run_get) ||
           prepare(s, "INSERT INTO read_keys (key_hash, key_len, key_ref) VALUES (?1,?2,?3)",
                   &r->key_add) ||
           prepare(s,
                   "INSERT INTO agg_reads (run_id, minute, class_id, reads, hits, misses)"
                   " VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT (run_id, minute, class_id) DO UPDATE"
                   " SET reads = reads + excluded.reads, hits = hits + excluded.hits,"
                   " misses = misses + excluded.misses",
                   &r->agg_st) ||
           prepare(s, sql, &w->ins_write_n) ||
           prepare(s,
                   "INSERT INTO writes (rowid, key_hash, key_ref, op, sizes, extra)"
                   " VALUES (?1,?2,?3,?4,?5,?6)",
                   &w->ins_write) ||
           prepare(s, "INSERT OR REPLACE INTO arrivals (rowid, dt, conn_id) VALUES (?1,?2,?3)",
                   &w->ins_arrival) ||
           prepare(s,
                   "SELECT rowid, dt, conn_id FROM arrivals WHERE rowid >= ?1 AND rowid < ?2"
                   " ORDER BY rowid DESC LIMIT 1",
                   &w->arr_last) ||
           prepare(s,
                   "SELECT rowid, dt, conn_id FROM arrivals WHERE rowid BETWEEN ?1 AND ?2"
                   " ORDER BY rowid DESC LIMIT 1",
                   &w->arr_cover) ||
           prepare(s, "SELECT min(rowid) FROM arrivals WHERE rowid > ?1 AND rowid < ?2",
                   &w->arr_next) ||
           prepare(s, "SELECT min(rowid) FROM writes WHERE rowid > ?1 AND rowid < ?2",
                   &w->row_after) ||
           prepare(s, "SELECT max(rowid) FROM writes WHERE rowid >= ?1 AND rowid < ?2",
                   &w->max_rowid) ||
           prepare(s, "SELECT base, lo, hi, t0 FROM write_runs WHERE run_id = ?1", &w->run_get) ||
           prepare(s,
                   "SELECT cmd_id, has_flags, has_exptime FROM cmds WHERE cmd = ?1"
                   " AND ms_mode = ?2",
                   &w->cmd_find) ||
           prepare(s,
                   "INSERT INTO cmds (cmd_id, cmd, ms_mode, has_flags, has_exptime)"
                   " SELECT coalesce(max(cmd_id), 0) + 1, ?1, ?2, ?3, ?4 FROM cmds"
                   " HAVING coalesce(max(cmd_id), 0) < 63",
                   &w->cmd_add) ||
           prepare(s, "SELECT answer_id FROM answers WHERE answer = ?1", &w->answer_find) ||
           prepare(s, "INSERT INTO answers (answer) VALUES (?1)", &w->answer_add) ||
           prepare(s, "SELECT prefix_id FROM key_prefixes WHERE prefix = ?1", &w->prefix_find) ||
           prepare(s, "INSERT INTO key_prefixes (prefix) VALUES (?1)", &w->prefix_add) ||
           prepare(s,
                   "INSERT INTO samples (run_id, t_ns, phase_id, final, stats)"
                   " VALUES (?1,?2,?3,?4,?5)",
                   &s->ins_sample) ||
           prepare(s, "INSERT INTO sample_classes (sample_id, class_id, fields) VALUES (?1,?2,?3)",
                   &s->ins_class) ||
           prepare(s,
                   "INSERT OR REPLACE INTO settings (run_id, t_ns, version, settings) "
                   "VALUES (?1,?2,?3,?4)",
                   &s->ins_settings) ||
           prepare(s,
                   "INSERT INTO phases (phase_id, run_id, name, started_ns) VALUES (?1,?2,?3,?4)",
                   &s->ins_phase) ||
           prepare(s,
                   "UPDATE phases SET ended_ns = ?2 WHERE run_id = ?1 AND ended_ns IS NULL "
                   "AND phase_id != ?3",
                   &s->end_phase) ||
           prepare(s,
                   "INSERT INTO get_counts (run_id, second, cmd, requests, keys, hits, misses, "
                   "bytes_returned)"
                   " VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT (run_id, second, cmd) DO "
                   "UPDATE SET"
                   " requests = requests + excluded.requests, keys = keys + excluded.keys,"
                   " hits = hits + excluded.hits, misses = misses + excluded.misses,"
                   " bytes_returned = bytes_returned + excluded.bytes_returned",
                   &s->ins_gets);
}

/* The file and WAL open now, as the path names them (store_file_check). */
static void store_identify(struct store *s)
{
    struct stat st;
    char wal[sizeof s->path + 8];
    snprintf(wal, sizeof wal, "%s-wal", s->path);
    if (stat(s->path, &st) == 0) {
        s->dev = st.st_dev;
        s->ino = st.st_ino;
    }
    if (stat(wal, &st) == 0) {
        s->wal_dev = st.st_dev;
        s->wal_ino = st.st_ino;
    }
}

int store_open(struct store *s, const char *path, char *err, size_t errlen)
{
    int rc = -1;
    char ignored[1536];
    memset(s, 0, sizeof *s);
    s->lock.fd = -1;
    snprintf(s->path, sizeof s->path, "%s", path);
    s->w = calloc(1, sizeof *s->w);
    if (!s->w) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    s->w->run_id = s->w->mode_run = -1;
    s->w->max_rid = -1;
    buf_init(&s->w->json, JSONB_MAX);
    s->w->rd.run_id = -1;
    s->w->rd.max_rid = -1;
    if (wagg_init(&s->w->agg)) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    s->w->answers.max = ANSWERS_MAX;
    s->w->prefixes.max = PREFIXES_MAX;
    buf_init(&s->w->answers.arena, UINT32_MAX);
    buf_init(&s->w->prefixes.arena, UINT32_MAX);
    /* the one writer: taken before the file is opened (a second proxy must
     * not mark the first one's run crashed) */
    if (dblock_take(&s->lock, path, err, errlen))
        goto out;
    /* one thread at a time (the loop thread until rec_open, then the
     * writer): no mutex around every call */
    if (sqlite3_open_v2(path, &s->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, s->db ? sqlite3_errmsg(s->db) : "cannot open");
        goto out;
    }
    sqlite3_busy_timeout(s->db, 5000);
    /* Normal locking: readers in other processes read the file while it is
     * written (WAL: they never block this writer, nor it them); PATH.lock
     * keeps the writer one. */
    int from = user_version(s);
    if (from < 0 &&
        (sqlite3_errcode(s->db) == SQLITE_BUSY || sqlite3_errcode(s->db) == SQLITE_LOCKED)) {
        /* another program holds it exclusively (an older slabtap proxy, or
         * any program in locking_mode exclusive) */
        snprintf(err, errlen, "%s: database is locked by another process: %s", path,
                 sqlite3_errmsg(s->db));
        goto out;
    }
    if (from < 0) {
        snprintf(err, errlen, "%s: not a SQLite database (%s)", path, sqlite3_errmsg(s->db));
        goto out;
    }
    /* a new file gives freed pages back (record/retain.h): set before its
     * first table, a no-op on a file that has tables */
    if (from == 0 && exec(s, "PRAGMA auto_vacuum = INCREMENTAL", err, errlen))
        goto out;
    if (exec(s, "PRAGMA journal_mode = WAL", err, errlen) ||
        exec(s, "PRAGMA synchronous = NORMAL", err, errlen) ||
        exec(s, "BEGIN IMMEDIATE", err, errlen))
        goto out;
    /* upgrade and schema in one transaction: all of it or none */
    if (store_upgrade(s, from, err, errlen) || exec(s, slabtap_schema_sql, err, errlen))
        goto rollback;
    if (prepare_all(s)) {
        store_fail(s, "preparing statements", err, errlen);
        goto rollback;
    }
    if (from > 0 && from < 4 && upgrade_v3_rows(s, err, errlen))
        goto rollback;
    if (store_mark_crashed(s, err, errlen))
        goto rollback;
    if (exec(s, "COMMIT", err, errlen))
        goto rollback;
    sqlite3_stmt *ps = NULL;
    if (sqlite3_prepare_v2(s->db, "PRAGMA page_size", -1, &ps, NULL) == SQLITE_OK &&
        sqlite3_step(ps) == SQLITE_ROW)
        s->page_size = (uint64_t)sqlite3_column_int64(ps, 0);
    sqlite3_finalize(ps);
    if (!s->page_size)
        s->page_size = 4096;
    /* SQLite's autocheckpoint bound, checkpointed by the store's hook; a
     * WAL that grew past 4 times it (a reader held a snapshot) is cut back
     * when it starts over */
    if (store_wal_limit(s, STORE_WAL_AUTO_PAGES, err, errlen))
        goto out;
    store_identify(s);
    store_reserve_take(s);
    rc = 0;
    goto out;
rollback:
    exec(s, "ROLLBACK", ignored, sizeof ignored);
out:
    if (rc)
        store_close(s);
    return rc;
}

/* A file of STORE_RESERVE_BYTES beside the database, taken while there is
 * room: on a full disk, giving it back lets the run's last row (its counts)
 * be written after all. Not for in-memory or URI databases. */
void store_reserve_take(struct store *s)
{
    if (!s->path[0] || !strcmp(s->path, ":memory:") || !strncmp(s->path, "file:", 5))
        return;
    snprintf(s->reserve, sizeof s->reserve, "%s-reserve", s->path);
    int fd = open(s->reserve, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || posix_fallocate(fd, 0, STORE_RESERVE_BYTES) != 0) {
        if (fd >= 0)
            unlink(s->reserve);
        s->reserve[0] = '\0'; /* no room now: nothing to give back later */
    }
    if (fd >= 0)
        close(fd);
}

bool store_reserve_release(struct store *s)
{
    if (!s->reserve[0])
        return false;
    unlink(s->reserve);
    s->reserve[0] = '\0';
    return true;
}

static void finalize(sqlite3_stmt **st)
{
    sqlite3_finalize(*st);
    *st = NULL;
}

void store_close(struct store *s)
{
    struct store_writes *w = s->w;
    sqlite3_stmt **stmts[] = { &s->ins_gets,      &s->ins_sample,   &s->ins_class,
                               &s->ins_settings,  &s->ins_phase,    &s->end_phase,
                               &s->shadow_sample, &s->shadow_class, &s->shadow_settings,
                               &s->shadow_event,  &s->shadow_counts };
    for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++)
        finalize(stmts[i]);
    if (w) {
        sqlite3_stmt **ws[] = { &w->ins_write_n, &w->ins_write,   &w->ins_arrival, &w->arr_last,
                                &w->arr_cover,   &w->arr_next,    &w->row_after,   &w->max_rowid,
                                &w->run_get,     &w->cmd_find,    &w->cmd_add,     &w->answer_find,
                                &w->answer_add,  &w->prefix_find, &w->prefix_add,  &w->agg_size,
                                &w->agg_latency, &w->agg_prefix,  &w->agg_mark,    &w->agg_item,
                                &w->agg_answer,  &w->agg_pclass,  &w->agg_mark2,   &w->upd_counts,
                                &w->ins_event,   &w->ins_item,    &w->ins_snap };
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
            finalize(ws[i]);
        struct store_reads *r = &w->rd;
        sqlite3_stmt **rs[] = { &r->ins,       &r->ins_n,    &r->arr_ins,   &r->arr_last,
                                &r->arr_cover, &r->arr_next, &r->row_after, &r->max_rowid,
                                &r->run_get,   &r->key_add,  &r->agg_st,    &r->extra_ins };
        for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
            finalize(rs[i]);
    }
    if (s->db)
        sqlite3_close(s->db);
    s->db = NULL;
    store_reserve_release(s);
    dblock_release(&s->lock);
    if (w) {
        sdict_free(&w->answers);
        sdict_free(&w->prefixes);
        free(w->rd.keys);
        ragg_free(&w->rd.agg);
        free(w->rd.pending);
        wagg_free(&w->agg);
        buf_free(&w->json);
        free(w->pending);
        free(w);
        s->w = NULL;
    }
}

int64_t store_run_begin(struct store *s, const char *name, const char *upstream,
                        const char *options, const char *key_mode, const char *kind)
{
    sqlite3_stmt *st;
    int64_t id = -1;
    char err[256];
    int64_t now = clock_wall_ns();
    if (exec(s, "BEGIN", err, sizeof err))
        return -1;
    if (sqlite3_prepare_v2(
            s->db,
            "INSERT INTO runs (name, started_ns, upstream, slabtap_version, options, key_mode,"
            " kind) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 2, now);
        sqlite3_bind_text(st, 3, upstream, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 4, SLABTAP_VERSION, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, options, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 6, key_mode, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 7, kind ? kind : "proxy", -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_DONE)
            id = sqlite3_last_insert_rowid(s->db);
        sqlite3_finalize(st);
    }
    if (id < 0 || write_run_begin(s, id, now, 1, err, sizeof err) ||
        read_run_begin(s, id, now, err, sizeof err) || exec(s, "COMMIT", err, sizeof err)) {
        exec(s, "ROLLBACK", err, sizeof err);
        s->w->run_id = -1;
        return -1;
    }
    s->w->mode_run = id;
    s->w->mode_prefix = key_mode && !strcmp(key_mode, "prefix");
    return id;
}

int store_run_end(struct store *s, int64_t run_id, uint64_t recorded, uint64_t dropped, char *err,
                  size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = store_write_aggregates(s, err, errlen);
    sqlite3_reset(s->end_phase);
    sqlite3_bind_int64(s->end_phase, 1, run_id);
    sqlite3_bind_int64(s->end_phase, 2, clock_wall_ns());
    sqlite3_bind_int64(s->end_phase, 3, -1);
    /* a phase left open must not keep the counts from the run row */
    if (sqlite3_step(s->end_phase) != SQLITE_DONE)
        rc = store_fail(s, "ending the last phase", err, errlen);
    if (sqlite3_prepare_v2(s->db,
                           "UPDATE runs SET ended_ns = ?2, rows_recorded = ?3, rows_dropped = ?4 "
                           "WHERE run_id = ?1",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = store_fail(s, "ending the run", err, errlen);
        goto out;
    }
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, clock_wall_ns());
    sqlite3_bind_int64(st, 3, (int64_t)recorded);
    sqlite3_bind_int64(st, 4, (int64_t)dropped);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = store_fail(s, "ending the run", err, errlen);
out:
    sqlite3_finalize(st);
    return rc;
}

static int bind_gets(sqlite3_stmt *st, int64_t run_id, const struct rec_row *r)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, r->second);
    sqlite3_bind_text(st, 3, mc_cmd_name((enum mc_cmd)r->cmd), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (int64_t)r->requests);
    sqlite3_bind_int64(st, 5, (int64_t)r->keys);
    sqlite3_bind_int64(st, 6, (int64_t)r->hits);
    sqlite3_bind_int64(st, 7, (int64_t)r->misses);
    sqlite3_bind_int64(st, 8, (int64_t)r->bytes_returned);
    return sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
}

static int pending_cmp(const void *a, const void *b)
{
    const struct pending_ref *x = a, *y = b;
    if (x->run != y->run)
        return x->run < y->run ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* --- reads: read_rows, read_arrivals, read_keys, agg_reads ----------------------------- */

static void reads_forget(struct store_reads *r)
{
    r->nstage = 0;
    r->npending = 0;
    r->run_id = -1;
    r->arr_known = false;
    r->max_rid = -1;
    ragg_cells_done(&r->agg);
    if (r->keys)
        memset(r->keys, 0, r->nkeys_slots * sizeof *r->keys);
    r->nkeys = 0;
}

static int rd_stage_flush(struct store *s)
{
    struct store_reads *r = &s->w->rd;
    size_t n = r->nstage;
    r->nstage = 0;
    if (n == STAGE_ROWS) {
        for (size_t i = 0; i < n; i++) {
            const struct staged *x = &r->stage[i];
            sqlite3_bind_int64(r->ins_n, (int)i * 3 + 1, x->rid);
            sqlite3_bind_int64(r->ins_n, (int)i * 3 + 2, x->key_ref);
            sqlite3_bind_int64(r->ins_n, (int)i * 3 + 3, x->op);
        }
        if (step_reset(r->ins_n))
            return -1;
    } else {
        for (size_t i = 0; i < n; i++) {
            const struct staged *x = &r->stage[i];
            sqlite3_bind_int64(r->ins, 1, x->rid);
            sqlite3_bind_int64(r->ins, 2, x->key_ref);
            sqlite3_bind_int64(r->ins, 3, x->op);
            if (step_reset(r->ins))
                return -1;
        }
    }
    for (size_t i = 0; i < n; i++) { /* flags and exptime, where not 0 */
        const struct staged *x = &r->stage[i];
        if (!x->fe)
            continue;
        sqlite3_bind_int64(r->extra_ins, 1, x->rid);
        sqlite3_bind_int64(r->extra_ins, 2, x->fe);
        if (step_reset(r->extra_ins))
            return -1;
    }
    return 0;
}

/* Reserves the rowids of a run's reads, as write_run_begin does for its
 * writes: seq 1 is the first rowid after every read in the file. */
static int read_run_begin(struct store *s, int64_t run_id, int64_t t0, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int64_t max = 0;
    int rc = -1;
    if (sqlite3_prepare_v2(s->db, "SELECT max(rowid) FROM read_rows", -1, &st, NULL) != SQLITE_OK ||
        step_int(st, &max) < 0)
        goto fail;
    sqlite3_finalize(st);
    st = NULL;
    int64_t lo = max + 1;
    if (sqlite3_prepare_v2(s->db, "UPDATE read_runs SET hi = ?1 WHERE hi > ?1", -1, &st, NULL) !=
        SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(st, 1, lo);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(s->db,
                           "INSERT OR REPLACE INTO read_runs (run_id, base, lo, hi, t0)"
                           " VALUES (?1, ?2, ?3, ?4, ?5)",
                           -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, lo - 1);
    sqlite3_bind_int64(st, 3, lo);
    sqlite3_bind_int64(st, 4, WRITE_RUN_OPEN);
    sqlite3_bind_int64(st, 5, t0);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    s->w->rd.run_id = -1;
    rc = 0;
    goto out;
fail:
    snprintf(err, errlen, "%.200s: reserving the run's read rows: %s", s->path,
             sqlite3_errmsg(s->db));
out:
    sqlite3_finalize(st);
    return rc;
}

static int rd_run_ctx(struct store *s, int64_t run_id, char *err, size_t errlen)
{
    struct store_reads *r = &s->w->rd;
    if (r->run_id == run_id)
        return 0;
    if (rd_stage_flush(s))
        return store_fail(s, "inserting reads", err, errlen);
    sqlite3_stmt *st = r->run_get;
    sqlite3_bind_int64(st, 1, run_id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        r->base = sqlite3_column_int64(st, 0);
        r->lo = sqlite3_column_int64(st, 1);
        r->hi = sqlite3_column_int64(st, 2);
        r->t0 = sqlite3_column_int64(st, 3);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE) {
        snprintf(err, errlen, "%s: run %lld has no row in read_runs", s->path, (long long)run_id);
        return -1;
    }
    if (rc != SQLITE_ROW)
        return store_fail(s, "reading the run's read range", err, errlen);
    r->run_id = run_id;
    r->arr_known = false;
    r->max_rid = -1;
    return 0;
}

static int rd_arrival_insert(struct store *s, int64_t rid, int64_t dt, int64_t conn, int64_t aw)
{
    sqlite3_stmt *st = s->w->rd.arr_ins;
    sqlite3_bind_int64(st, 1, rid);
    sqlite3_bind_int64(st, 2, dt);
    sqlite3_bind_int64(st, 3, conn);
    sqlite3_bind_int64(st, 4, aw);
    return step_reset(st);
}

/* arrival() for reads: the read_arrivals row with the highest rowid at or
 * below a read's holds its time and connection, and the after_write its
 * op adds up to READ_AW_SPAN - 1 to (a read-heavy run starts a new arrival
 * per client read, not per write between reads). *base: that after_write. */
#define READ_AW_SPAN 16
static bool rd_same(int64_t dt, int64_t conn, int64_t aw, int64_t adt, int64_t aconn, int64_t aaw)
{
    return dt == adt && conn == aconn && aw >= aaw && aw - aaw < READ_AW_SPAN;
}

static int rd_arrival(struct store *s, int64_t rid, int64_t dt, int64_t conn, int64_t aw,
                      int64_t *base)
{
    struct store_reads *r = &s->w->rd;
    sqlite3_stmt *st;
    *base = aw;
    if (r->max_rid < 0) {
        if (rd_stage_flush(s))
            return -1;
        sqlite3_bind_int64(r->max_rowid, 1, r->lo);
        sqlite3_bind_int64(r->max_rowid, 2, r->hi);
        int got = step_int(r->max_rowid, &r->max_rid);
        if (got < 0)
            return -1;
        if (!got)
            r->max_rid = r->lo - 1;
    }
    if (!r->arr_known) {
        st = r->arr_last;
        sqlite3_bind_int64(st, 1, r->lo);
        sqlite3_bind_int64(st, 2, r->hi);
        int rc = sqlite3_step(st);
        r->arr_rid = -1;
        if (rc == SQLITE_ROW) {
            r->arr_rid = sqlite3_column_int64(st, 0);
            r->arr_dt = sqlite3_column_int64(st, 1);
            r->arr_conn = sqlite3_column_int64(st, 2);
            r->arr_aw = sqlite3_column_int64(st, 3);
        }
        sqlite3_reset(st);
        if (rc != SQLITE_ROW && rc != SQLITE_DONE)
            return -1;
        r->arr_known = true;
    }
    if (r->arr_rid >= 0 && rid >= r->arr_rid &&
        rd_same(dt, conn, aw, r->arr_dt, r->arr_conn, r->arr_aw)) {
        *base = r->arr_aw;
        return 0;
    }
    if (rid > r->max_rid && rid >= r->arr_rid) { /* nothing after it: a new last arrival */
        if (rd_arrival_insert(s, rid, dt, conn, aw))
            return -1;
        r->arr_rid = rid;
        r->arr_dt = dt;
        r->arr_conn = conn;
        r->arr_aw = aw;
        return 0;
    }
    /* in the midst of what is written (a read answered after later ones) */
    if (rd_stage_flush(s))
        return -1;
    st = r->arr_cover;
    sqlite3_bind_int64(st, 1, r->lo);
    sqlite3_bind_int64(st, 2, rid);
    int rc = sqlite3_step(st);
    bool cover = rc == SQLITE_ROW;
    int64_t cdt = 0, cconn = 0, caw = 0;
    if (cover) {
        cdt = sqlite3_column_int64(st, 1);
        cconn = sqlite3_column_int64(st, 2);
        caw = sqlite3_column_int64(st, 3);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return -1;
    if (cover && rd_same(dt, conn, aw, cdt, cconn, caw)) {
        *base = caw;
        return 0;
    }
    if (cover) {
        /* the reads between rid and the next arrival keep the covering one */
        int64_t next = r->hi, after = 0;
        sqlite3_bind_int64(r->arr_next, 1, rid);
        sqlite3_bind_int64(r->arr_next, 2, r->hi);
        if (step_int(r->arr_next, &next) < 0)
            return -1;
        sqlite3_bind_int64(r->row_after, 1, rid);
        sqlite3_bind_int64(r->row_after, 2, next);
        int got = step_int(r->row_after, &after);
        if (got < 0 || (got && rd_arrival_insert(s, after, cdt, cconn, caw)))
            return -1;
    }
    if (rd_arrival_insert(s, rid, dt, conn, aw))
        return -1;
    r->arr_known = false;
    return 0;
}

static int rd_agg_flush(struct store *s, char *err, size_t errlen)
{
    struct store_reads *r = &s->w->rd;
    for (size_t i = 0; i < r->agg.ncells; i++) {
        const struct ragg_cell *c = &r->agg.cell[i];
        sqlite3_stmt *st = r->agg_st;
        sqlite3_bind_int64(st, 1, r->agg.run);
        sqlite3_bind_int64(st, 2, c->minute);
        sqlite3_bind_int64(st, 3, c->class_id);
        sqlite3_bind_int64(st, 4, (int64_t)c->reads);
        sqlite3_bind_int64(st, 5, (int64_t)c->hits);
        sqlite3_bind_int64(st, 6, (int64_t)c->misses);
        if (step_reset(st))
            return store_fail(s, "writing the read aggregates", err, errlen);
    }
    ragg_cells_done(&r->agg);
    return 0;
}

static int rd_agg_note(struct store *s, int64_t run_id, const struct rec_row *row, char *err,
                       size_t errlen)
{
    struct ragg *g = &s->w->rd.agg;
    if (!ragg_note_read(g, run_id, row) &&
        (rd_agg_flush(s, err, errlen) || !ragg_note_read(g, run_id, row)))
        return -1;
    return 0;
}

/* read_keys.key_id of the row's key (hash, length, recorded text),
 * remembered or inserted; -1 on error. */
/* Doubles the key table (from 4096 slots): false when it may not grow. */
static bool rd_keys_grow(struct store_reads *r)
{
    size_t ns = r->nkeys_slots ? r->nkeys_slots * 2 : 4096;
    if (ns > READ_KEYS_SLOTS)
        return false;
    struct read_key_slot *t = calloc(ns, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < r->nkeys_slots; i++) {
        const struct read_key_slot *e = &r->keys[i];
        if (!e->id)
            continue;
        size_t j = (e->hash ^ (e->hash >> 29)) & (ns - 1);
        while (t[j].id)
            j = (j + 1) & (ns - 1);
        t[j] = *e;
    }
    free(r->keys);
    r->keys = t;
    r->nkeys_slots = ns;
    return true;
}

/* read_keys.key_id of the row's key (hash, length, recorded text),
 * remembered or inserted; -1 on error. */
static int64_t rd_key_id(struct store *s, int64_t run_id, const struct rec_row *row)
{
    struct store_writes *w = s->w;
    struct store_reads *r = &w->rd;
    size_t tl = row->key_text_len > 0 ? (size_t)row->key_text_len : 0;
    uint32_t len = row->key_len | (row->key_text_len >= 0 ? 1u << 16 : 0);
    size_t mask = r->nkeys_slots - 1;
    if (r->keys) {
        for (size_t at = (row->key_hash ^ (row->key_hash >> 29)) & mask; r->keys[at].id;
             at = (at + 1) & mask)
            if (r->keys[at].hash == row->key_hash && r->keys[at].len == len)
                return r->keys[at].id;
    }
    sqlite3_stmt *st = r->key_add;
    sqlite3_bind_int64(st, 1, (int64_t)row->key_hash);
    sqlite3_bind_int64(st, 2, row->key_len);
    bool prefix = w->mode_run == run_id && w->mode_prefix;
    if (row->key_text_len < 0) {
        sqlite3_bind_null(st, 3);
    } else if (prefix) {
        int64_t pid = dict_id(s, &w->prefixes, w->prefix_find, w->prefix_add, row->key_text, tl);
        if (pid < 0)
            return -1;
        if (pid)
            sqlite3_bind_int64(st, 3, pid);
        else
            sqlite3_bind_text(st, 3, row->key_text, (int)tl, SQLITE_STATIC);
    } else {
        sqlite3_bind_text(st, 3, row->key_text, (int)tl, SQLITE_STATIC);
    }
    if (step_reset(st))
        return -1;
    int64_t id = sqlite3_last_insert_rowid(s->db);
    if ((r->nkeys + 1) * 2 > r->nkeys_slots && !rd_keys_grow(r)) {
        if (!r->keys)
            return id;
        /* at its bound: starts over (bounded memory) */
        memset(r->keys, 0, r->nkeys_slots * sizeof *r->keys);
        r->nkeys = 0;
    }
    mask = r->nkeys_slots - 1;
    size_t at = (row->key_hash ^ (row->key_hash >> 29)) & mask;
    while (r->keys[at].id)
        at = (at + 1) & mask;
    r->keys[at] = (struct read_key_slot){ row->key_hash, len, id };
    r->nkeys++;
    return id;
}

static int rd_cmd_code(uint8_t cmd)
{
    switch ((enum mc_cmd)cmd) {
    case MC_CMD_GET: return REC_READ_GET;
    case MC_CMD_GETS: return REC_READ_GETS;
    case MC_CMD_GAT: return REC_READ_GAT;
    case MC_CMD_GATS: return REC_READ_GATS;
    case MC_CMD_MG: return REC_READ_MG;
    default: return 0;
    }
}

static int put_rec_read(struct store *s, int64_t run_id, const struct rec_row *row, char *err,
                        size_t errlen)
{
    struct store_reads *r = &s->w->rd;
    if (rd_agg_note(s, run_id, row, err, errlen))
        return -1;
    if (row->sampled_out)
        return 0;
    if (rd_run_ctx(s, run_id, err, errlen))
        return -1;
    int64_t seq = row->seq > INT64_MAX / 4 ? INT64_MAX / 4 : (int64_t)row->seq;
    int64_t rid = r->base + seq;
    if (rid < r->lo || rid >= r->hi) {
        snprintf(err, errlen, "%s: run %lld: read seq %lld is outside the run's read range",
                 s->path, (long long)run_id, (long long)seq);
        return -1;
    }
    int64_t key_id = rd_key_id(s, run_id, row);
    if (key_id < 0)
        return store_fail(s, "inserting a read key", err, errlen);
    int64_t aw = row->after_write > INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)row->after_write;
    int64_t base;
    if (rd_arrival(s, rid, row->t_ns - r->t0, row->conn_id, aw, &base))
        return store_fail(s, "inserting a read arrival", err, errlen);
    /* op: hit | has_flags << 1 | cmd << 2 | class_id << 5
     *     | (after_write - the arrival's) << 11 | (value_len + 1) << 15 */
    int64_t vl = row->hit && row->value_len >= 0 && row->value_len < (INT64_C(1) << 46)
                     ? row->value_len + 1
                     : 0;
    uint32_t cls = row->hit && row->class_id < 64 ? row->class_id : 0;
    int64_t op = (int64_t)row->hit | (int64_t)(row->has_flags ? 2 : 0) |
                 (int64_t)rd_cmd_code(row->cmd) << 2 | (int64_t)cls << 5 | (aw - base) << 11 |
                 vl << 15;
    int64_t fe = 0;
    if ((row->has_flags && row->flags) || (row->has_exptime && row->exptime))
        fe = (int64_t)((uint64_t)(row->has_flags ? row->flags : 0) << 32 |
                       (uint32_t)(row->has_exptime ? row->exptime : 0));
    if (rid > r->max_rid)
        r->max_rid = rid;
    r->stage[r->nstage++] = (struct staged){ .rid = rid, .key_ref = key_id, .op = op, .fe = fe };
    if (r->nstage == STAGE_ROWS && rd_stage_flush(s))
        return store_fail(s, "inserting reads", err, errlen);
    return 0;
}

/* The batch's reads in (run, seq) order, then their aggregates, in the
 * batch's transaction. */
static int put_pending_reads(struct store *s, char *err, size_t errlen)
{
    struct store_reads *r = &s->w->rd;
    struct pending_ref *p = r->pending;
    size_t n = r->npending;
    int rc = 0;
    r->npending = 0;
    for (size_t i = 1; i < n; i++) {
        if (pending_cmp(&p[i - 1], &p[i]) > 0) {
            qsort(p, n, sizeof *p, pending_cmp);
            break;
        }
    }
    for (size_t i = 0; i < n && !rc; i++)
        rc = put_rec_read(s, p[i].run, p[i].row, err, errlen);
    if (!rc && rd_stage_flush(s))
        rc = store_fail(s, "inserting reads", err, errlen);
    if (!rc)
        rc = rd_agg_flush(s, err, errlen);
    return rc;
}

/* The batch's writes in (run, seq) order: mostly in order already, and
 * then nothing moves. */
static int put_pending(struct store *s, char *err, size_t errlen)
{
    struct store_writes *w = s->w;
    struct pending_ref *p = w->pending;
    size_t n = w->npending;
    int rc = 0;
    w->npending = 0;
    for (size_t i = 1; i < n; i++) {
        if (pending_cmp(&p[i - 1], &p[i]) > 0) {
            qsort(p, n, sizeof *p, pending_cmp);
            break;
        }
    }
    w->stage_ok = true;
    for (size_t i = 0; i < n && !rc; i++)
        rc = put_rec_write(s, p[i].run, p[i].row, err, errlen);
    w->stage_ok = false;
    if (!rc && stage_flush(s))
        rc = store_fail(s, "inserting writes", err, errlen);
    if (!rc)
        rc = put_pending_reads(s, err, errlen);
    return rc;
}

int store_begin(struct store *s, char *err, size_t errlen)
{
    return exec(s, "BEGIN", err, errlen);
}

/* Upserts every aggregate counted (committed batches and this one) in the
 * transaction open now. */
static int agg_write(struct store *s, char *err, size_t errlen)
{
    struct store_writes *w = s->w;
    static const char *const sql[] = {
        "INSERT INTO agg_sizes (run_id, minute, body, writes, value_bytes) VALUES (?1,?2,?3,?4,?5)"
        " ON CONFLICT (run_id, minute, body) DO UPDATE SET writes = writes + excluded.writes,"
        " value_bytes = value_bytes + excluded.value_bytes",
        "INSERT INTO agg_latency (run_id, second, band_us, writes) VALUES (?1,?2,?3,?4)"
        " ON CONFLICT (run_id, second, band_us) DO UPDATE SET writes = writes + excluded.writes",
        "INSERT INTO agg_prefixes (run_id, minute, prefix_id, writes, value_bytes)"
        " VALUES (?1,?2,?3,?4,?5) ON CONFLICT (run_id, minute, prefix_id) DO UPDATE SET"
        " writes = writes + excluded.writes, value_bytes = value_bytes + excluded.value_bytes",
        "INSERT OR IGNORE INTO agg_runs (run_id) VALUES (?1)",
        "INSERT INTO agg_items (run_id, minute, class_id, body, outcome, writes, body_bytes)"
        " VALUES (?1,?2,?3,?4,?5,?6,?7) ON CONFLICT (run_id, minute, class_id, body, outcome)"
        " DO UPDATE SET writes = writes + excluded.writes,"
        " body_bytes = body_bytes + excluded.body_bytes",
        "INSERT INTO agg_answers (run_id, minute, cmd_id, answer_id, writes, value_bytes)"
        " VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT (run_id, minute, cmd_id, answer_id)"
        " DO UPDATE SET writes = writes + excluded.writes,"
        " value_bytes = value_bytes + excluded.value_bytes",
        "INSERT INTO agg_prefix_classes (run_id, minute, prefix_id, class_id, writes, body_bytes)"
        " VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT (run_id, minute, prefix_id, class_id)"
        " DO UPDATE SET writes = writes + excluded.writes,"
        " body_bytes = body_bytes + excluded.body_bytes",
        "INSERT OR IGNORE INTO agg_item_runs (run_id) VALUES (?1)",
    };
    sqlite3_stmt **st[] = { &w->agg_size, &w->agg_latency, &w->agg_prefix, &w->agg_mark,
                            &w->agg_item, &w->agg_answer,  &w->agg_pclass, &w->agg_mark2 };
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
        if (!*st[i] && sqlite3_prepare_v2(s->db, sql[i], -1, st[i], NULL) != SQLITE_OK)
            return store_fail(s, "preparing the aggregates", err, errlen);
    if (!w->agg_run)
        return 0;
    for (int m = 0; m < 2; m++) {
        sqlite3_stmt *q = m ? w->agg_mark2 : w->agg_mark;
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, w->agg_run);
        if (sqlite3_step(q) != SQLITE_DONE)
            return store_fail(s, "writing the aggregates", err, errlen);
    }
    for (size_t i = 0; i < w->agg.used; i++) {
        const struct wagg_ent *e = &w->agg.e[w->agg.slots[i]];
        sqlite3_stmt *q = e->kind == WAGG_SIZE      ? w->agg_size
                          : e->kind == WAGG_LATENCY ? w->agg_latency
                          : e->kind == WAGG_PREFIX  ? w->agg_prefix
                          : e->kind == WAGG_ITEM    ? w->agg_item
                          : e->kind == WAGG_ANSWER  ? w->agg_answer
                                                    : w->agg_pclass;
        int64_t cols[WAGG_COLS];
        size_t nc = wagg_row(e, cols);
        if (!(e->n + e->batch_n))
            continue;
        sqlite3_reset(q);
        sqlite3_bind_int64(q, 1, w->agg_run);
        for (size_t c = 0; c < nc; c++)
            sqlite3_bind_int64(q, (int)c + 2, cols[c]);
        if (sqlite3_step(q) != SQLITE_DONE)
            return store_fail(s, "writing the aggregates", err, errlen);
    }
    return 0;
}

int store_commit(struct store *s, int failed, char *err, size_t errlen)
{
    char ignored[1536];
    struct store_writes *w = s->w;
    int64_t now = clock_wall_ns();
    bool flush = w->agg_run && (now - w->agg_written_ns >= STORE_AGG_FLUSH_MS * 1000000ll ||
                                wagg_should_flush(&w->agg));
    if (!failed && !put_pending(s, err, errlen) && (!flush || !agg_write(s, err, errlen)) &&
        !exec(s, "COMMIT", err, errlen)) {
        if (flush) {
            wagg_clear(&w->agg);
            w->agg_written_ns = now;
        } else {
            wagg_batch_done(&w->agg, true);
        }
        return 0;
    }
    /* the code of what failed, before the rollback resets it */
    s->last_full = sqlite3_errcode(s->db) == SQLITE_FULL;
    if (failed)
        exec(s, "ROLLBACK", err, errlen);
    else if (!sqlite3_get_autocommit(s->db)) /* a failed COMMIT can leave it open */
        exec(s, "ROLLBACK", ignored, sizeof ignored);
    wagg_batch_done(&w->agg, false);
    writes_forget(s->w);
    return -1;
}

int64_t store_aggregates_due_ns(const struct store *s)
{
    const struct store_writes *w = s->w;
    if (!w || !w->agg_run || !w->agg.used)
        return 0;
    return w->agg_written_ns + STORE_AGG_FLUSH_MS * INT64_C(1000000);
}

int store_write_aggregates(struct store *s, char *err, size_t errlen)
{
    struct store_writes *w = s->w;
    char ignored[1536];
    if (!w->agg_run || !w->agg.used)
        return 0;
    if (exec(s, "BEGIN", err, errlen)) {
        w->agg_written_ns = clock_wall_ns(); /* kept; due again in STORE_AGG_FLUSH_MS */
        return -1;
    }
    if (agg_write(s, err, errlen) || exec(s, "COMMIT", err, errlen)) {
        if (!sqlite3_get_autocommit(s->db))
            exec(s, "ROLLBACK", ignored, sizeof ignored);
        w->agg_written_ns = clock_wall_ns(); /* kept; due again in STORE_AGG_FLUSH_MS */
        return -1;
    }
    wagg_clear(&w->agg);
    w->agg_written_ns = clock_wall_ns();
    return 0;
}

int store_put_row(struct store *s, int64_t run_id, const struct rec_row *row, char *err,
                  size_t errlen)
{
    struct store_writes *w = s->w;
    if (row->kind == REC_ROW_READ) {
        struct store_reads *r = &w->rd;
        if (pending_add(&r->pending, &r->npending, &r->pending_cap, run_id, row)) {
            snprintf(err, errlen, "%s: out of memory for a batch of %zu reads", s->path,
                     r->npending + 1);
            return -1;
        }
        return 0;
    }
    if (row->kind == REC_ROW_EVENT || row->kind == REC_ROW_ITEM)
        return put_tap_row(s, run_id, row, err, errlen);
    if (row->kind != REC_ROW_GETS) {
        if (pending_add(&w->pending, &w->npending, &w->pending_cap, run_id, row)) {
            snprintf(err, errlen, "%s: out of memory for a batch of %zu writes", s->path,
                     w->npending + 1);
            return -1;
        }
        return 0;
    }
    if (bind_gets(s->ins_gets, run_id, row))
        return store_fail(s, "inserting read counts", err, errlen);
    return 0;
}

static int step_done(struct store *s, sqlite3_stmt *st, const char *what, char *err, size_t errlen)
{
    if (sqlite3_step(st) == SQLITE_DONE)
        return 0;
    return store_fail(s, what, err, errlen);
}

static int put_sample(struct store *s, int64_t run_id, const struct rec_job *j, char *err,
                      size_t errlen)
{
    sqlite3_stmt *st = s->ins_sample;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, j->t_ns);
    if (j->phase_id > 0)
        sqlite3_bind_int64(st, 3, j->phase_id);
    else
        sqlite3_bind_null(st, 3);
    sqlite3_bind_int(st, 4, j->final);
    sqlite3_bind_text(st, 5, j->text, -1, SQLITE_STATIC);
    if (step_done(s, st, "inserting a stats sample", err, errlen))
        return -1;
    int64_t sample_id = sqlite3_last_insert_rowid(s->db);
    for (size_t i = 0; i < j->nclasses; i++) {
        st = s->ins_class;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, sample_id);
        sqlite3_bind_int64(st, 2, j->class_ids[i]);
        sqlite3_bind_text(st, 3, j->class_json[i], -1, SQLITE_STATIC);
        if (step_done(s, st, "inserting a sample's class", err, errlen))
            return -1;
    }
    return 0;
}

/* --- shadows (issue 23) ---------------------------------------------------------------- */

/* *st prepared (once) from sql and reset: 0, or -1 with SQLite's reason */
static int shadow_stmt(struct store *s, sqlite3_stmt **st, const char *sql, char *err,
                       size_t errlen)
{
    if (!*st && prepare(s, sql, st))
        return store_fail(s, "preparing a shadow insert", err, errlen);
    sqlite3_reset(*st);
    sqlite3_clear_bindings(*st);
    return 0;
}

static int put_shadow_job(struct store *s, int64_t run_id, const struct rec_job *j, char *err,
                          size_t errlen)
{
    sqlite3_stmt *st;
    switch (j->kind) {
    case REC_JOB_SAMPLE:
        if (shadow_stmt(s, &s->shadow_sample,
                        "INSERT INTO shadow_samples (run_id, target, t_ns, final, stats)"
                        " VALUES (?1,?2,?3,?4,?5)",
                        err, errlen))
            return -1;
        st = s->shadow_sample;
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, j->target, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, j->t_ns);
        sqlite3_bind_int(st, 4, j->final);
        sqlite3_bind_text(st, 5, j->text ? j->text : "{}", -1, SQLITE_STATIC);
        if (step_done(s, st, "inserting a shadow's stats sample", err, errlen))
            return -1;
        int64_t sample_id = sqlite3_last_insert_rowid(s->db);
        for (size_t i = 0; i < j->nclasses; i++) {
            if (shadow_stmt(s, &s->shadow_class,
                            "INSERT INTO shadow_sample_classes (sample_id, class_id, fields)"
                            " VALUES (?1,?2,?3)",
                            err, errlen))
                return -1;
            st = s->shadow_class;
            sqlite3_bind_int64(st, 1, sample_id);
            sqlite3_bind_int64(st, 2, j->class_ids[i]);
            sqlite3_bind_text(st, 3, j->class_json[i], -1, SQLITE_STATIC);
            if (step_done(s, st, "inserting a shadow sample's class", err, errlen))
                return -1;
        }
        return 0;
    case REC_JOB_SETTINGS:
        if (shadow_stmt(s, &s->shadow_settings,
                        "INSERT OR REPLACE INTO shadow_settings (run_id, target, t_ns, version,"
                        " settings) VALUES (?1,?2,?3,?4,?5)",
                        err, errlen))
            return -1;
        st = s->shadow_settings;
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, j->target, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, j->t_ns);
        sqlite3_bind_text(st, 4, j->version, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, j->text ? j->text : "{}", -1, SQLITE_STATIC);
        return step_done(s, st, "inserting a shadow's settings", err, errlen);
    case REC_JOB_SHADOW_EVENT:
        if (shadow_stmt(s, &s->shadow_event,
                        "INSERT INTO shadow_events (run_id, target, t_ns, event, detail)"
                        " VALUES (?1,?2,?3,?4,?5)",
                        err, errlen))
            return -1;
        st = s->shadow_event;
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, j->target, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, j->t_ns);
        sqlite3_bind_text(st, 4, j->text ? j->text : "", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, j->version, -1, SQLITE_STATIC);
        return step_done(s, st, "inserting a shadow's event", err, errlen);
    case REC_JOB_SHADOW_COUNTS:
        /* the same second twice is added up */
        if (shadow_stmt(s, &s->shadow_counts,
                        "INSERT INTO shadow_counts (run_id, target, second, reads, hits, misses,"
                        " fills, writes, stored, not_stored, others, errors, dropped)"
                        " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)"
                        " ON CONFLICT (run_id, target, second) DO UPDATE SET"
                        " reads = reads + excluded.reads, hits = hits + excluded.hits,"
                        " misses = misses + excluded.misses, fills = fills + excluded.fills,"
                        " writes = writes + excluded.writes, stored = stored + excluded.stored,"
                        " not_stored = not_stored + excluded.not_stored,"
                        " others = others + excluded.others, errors = errors + excluded.errors,"
                        " dropped = dropped + excluded.dropped",
                        err, errlen))
            return -1;
        st = s->shadow_counts;
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, j->target, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, j->t_ns / 1000000000);
        for (int i = 0; i < REC_SHADOW_NCOUNTS; i++)
            sqlite3_bind_int64(st, 4 + i, j->counts[i]);
        return step_done(s, st, "inserting a shadow's counts", err, errlen);
    default: break;
    }
    snprintf(err, errlen, "%s: job kind %d has no shadow table", s->path, (int)j->kind);
    return -1;
}

int store_put_job(struct store *s, int64_t run_id, const struct rec_job *j, char *err,
                  size_t errlen)
{
    sqlite3_stmt *st;
    if (j->target || j->kind == REC_JOB_SHADOW_EVENT || j->kind == REC_JOB_SHADOW_COUNTS) {
        if (!j->target) {
            snprintf(err, errlen, "%s: a shadow's job without its target", s->path);
            return -1;
        }
        return put_shadow_job(s, run_id, j, err, errlen);
    }
    switch (j->kind) {
    case REC_JOB_SAMPLE: return put_sample(s, run_id, j, err, errlen);
    case REC_JOB_SETTINGS:
        st = s->ins_settings;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, j->t_ns);
        sqlite3_bind_text(st, 3, j->version, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, j->text, -1, SQLITE_STATIC);
        return step_done(s, st, "inserting settings", err, errlen);
    case REC_JOB_META: /* rare (the ladder, the flags the proxy was given) */
        if (sqlite3_prepare_v2(s->db,
                               "INSERT OR REPLACE INTO run_meta (run_id, key, value) VALUES "
                               "(?1,?2,?3)",
                               -1, &st, NULL) != SQLITE_OK)
            return store_fail(s, "preparing a run_meta insert", err, errlen);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_text(st, 2, j->version, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, j->text, -1, SQLITE_STATIC);
        if (step_done(s, st, "inserting run_meta", err, errlen)) {
            sqlite3_finalize(st);
            return -1;
        }
        sqlite3_finalize(st);
        return 0;
    case REC_JOB_PHASE:
        st = s->end_phase;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, j->t_ns);
        sqlite3_bind_int64(st, 3, j->phase_id);
        if (step_done(s, st, "ending a phase", err, errlen))
            return -1;
        st = s->ins_phase;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, j->phase_id);
        sqlite3_bind_int64(st, 2, run_id);
        sqlite3_bind_text(st, 3, j->text, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, j->t_ns);
        return step_done(s, st, "inserting a phase", err, errlen);
    case REC_JOB_SNAPSHOT: return put_tap_snapshot(s, run_id, j, err, errlen);
    case REC_JOB_SHADOW_EVENT:
    case REC_JOB_SHADOW_COUNTS: break; /* above */
    }
    snprintf(err, errlen, "%s: unknown job kind %d", s->path, (int)j->kind);
    return -1;
}

void store_rows_expired(struct store *s)
{
    if (!s->w)
        return;
    s->w->arr_known = false;
    s->w->max_rid = -1;
    s->w->rd.arr_known = false;
    s->w->rd.max_rid = -1;
}

int64_t store_max_phase_id(struct store *s)
{
    sqlite3_stmt *st;
    int64_t id = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT coalesce(max(phase_id), 0) FROM phases", -1, &st, NULL) !=
        SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

static const char *const store_file_labels[] = {
#define STORE_FILE_LABEL(name, label) label,
    STORE_FILE_STATES(STORE_FILE_LABEL)
#undef STORE_FILE_LABEL
};

const char *store_file_state_label(enum store_file_state st)
{
    return (unsigned)st < STORE_FILE__COUNT ? store_file_labels[st] : "?";
}

enum store_file_state store_file_check(struct store *s)
{
    struct stat st;
    char wal[sizeof s->path + 8];
    if (!s->db || !s->ino)
        return STORE_FILE_OK; /* nothing known to compare with */
    if (stat(s->path, &st) != 0)
        return STORE_FILE_DELETED;
    if (st.st_ino != s->ino || st.st_dev != s->dev)
        return STORE_FILE_REPLACED;
    snprintf(wal, sizeof wal, "%s-wal", s->path);
    if (stat(wal, &st) != 0)
        return s->wal_ino ? STORE_FILE_WAL_DELETED : STORE_FILE_OK;
    if (!s->wal_ino) { /* made after the open */
        s->wal_dev = st.st_dev;
        s->wal_ino = st.st_ino;
    }
    return st.st_ino != s->wal_ino || st.st_dev != s->wal_dev ? STORE_FILE_WAL_DELETED
                                                              : STORE_FILE_OK;
}

int store_wal_recreate(struct store *s, char *err, size_t errlen)
{
    /* leaving WAL mode checkpoints every committed frame of the WAL still
     * open (deleted or not) into the database file */
    if (exec(s, "PRAGMA journal_mode = DELETE", err, errlen))
        return -1;
    if (exec(s, "PRAGMA journal_mode = WAL", err, errlen))
        return -1;
    /* the new WAL exists from the next transaction on */
    if (exec(s, "BEGIN IMMEDIATE; COMMIT", err, errlen))
        return -1;
    s->wal_ino = 0;
    store_identify(s);
    return 0;
}

void store_forsake(struct store *s)
{
    struct stat st;
    char wal[sizeof s->path + 8];
    int persist = 1;
    snprintf(wal, sizeof wal, "%s-wal", s->path);
    if (s->db && stat(wal, &st) == 0 && (st.st_ino != s->wal_ino || st.st_dev != s->wal_dev))
        sqlite3_file_control(s->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
}

int store_wal_truncate(struct store *s, char *err, size_t errlen)
{
    if (sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) != SQLITE_OK)
        return store_fail(s, "checkpoint", err, errlen);
    return 0;
}

/* After every commit (SQLite's WAL hook, in place of its autocheckpoint,
 * which it replaces): the frames in the WAL, and a PASSIVE checkpoint once
 * they reach wal_auto. PASSIVE never waits: a reader's snapshot only stops
 * it short (and the WAL from starting over). */
static int store_wal_hook(void *ud, sqlite3 *db, const char *name, int frames)
{
    struct store_writes *w = ud;
    w->wal_frames = frames > 0 ? (uint64_t)frames : 0;
    if (w->wal_auto && w->wal_frames >= w->wal_auto) {
        sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    }
    return SQLITE_OK;
}

int store_wal_limit(struct store *s, unsigned pages, char *err, size_t errlen)
{
    char sql[128];
    /* the WAL file is cut back to this when it starts over (a reader may
     * have made it grow far past the checkpoint bound) */
    snprintf(sql, sizeof sql, "PRAGMA journal_size_limit = %llu",
             (unsigned long long)pages * s->page_size *
                 (pages == STORE_WAL_AUTO_PAGES ? STORE_WAL_KEEP_FACTOR : 1));
    if (exec(s, sql, err, errlen))
        return -1;
    s->w->wal_auto = pages;
    sqlite3_wal_hook(s->db, store_wal_hook, s->w);
    return 0;
}

uint64_t store_wal_bytes(const struct store *s)
{
    return s->w ? s->w->wal_frames * (s->page_size + 24) : 0;
}

bool store_wal_drained(struct store *s)
{
    int log = 0, done = 0;
    if (sqlite3_wal_checkpoint_v2(s->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done) != SQLITE_OK)
        return false;
    return log <= 0 || done >= log;
}

long store_wal_reader(const struct store *s)
{
    char shm[sizeof s->path + 8];
    snprintf(shm, sizeof shm, "%s-shm", s->path);
    int fd = open(shm, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    /* unix VFS: the shm locks are bytes 120..127, the read marks 123..127
     * (WAL_READ_LOCK(0..4)); locks of this process are not reported */
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 123, .l_len = 5 };
    long pid = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? (long)fl.l_pid : 0;
    close(fd);
    return pid;
}

int store_put_counts(struct store *s, int64_t run_id, uint64_t recorded, uint64_t dropped,
                     char *err, size_t errlen)
{
    struct store_writes *w = s->w;
    if (!w->upd_counts && sqlite3_prepare_v2(s->db,
                                             "UPDATE runs SET rows_recorded = ?2, rows_dropped = ?3"
                                             " WHERE run_id = ?1",
                                             -1, &w->upd_counts, NULL) != SQLITE_OK)
        return store_fail(s, "preparing the run's counts", err, errlen);
    sqlite3_reset(w->upd_counts);
    sqlite3_bind_int64(w->upd_counts, 1, run_id);
    sqlite3_bind_int64(w->upd_counts, 2, (int64_t)recorded);
    sqlite3_bind_int64(w->upd_counts, 3, (int64_t)dropped);
    if (sqlite3_step(w->upd_counts) != SQLITE_DONE)
        return store_fail(s, "the run's counts", err, errlen);
    return 0;
}

/* --- taps without a proxy (issue 22): item_events, snapshot_items, snapshots ---------
 * Inserted as they come, one prepared statement per row, in the batch's
 * transaction (a rollback takes them back with it); the column values are
 * record/itemrow.h's, the key kept as a write's (key_prefixes with --keys
 * prefix). */

static void bind_opt(sqlite3_stmt *st, int col, struct itemrow_opt o)
{
    if (o.null)
        sqlite3_bind_null(st, col);
    else
        sqlite3_bind_int64(st, col, o.v);
}

/* key_ref of row in run_id as writes.key_ref: the prefix's id, the text,
 * or NULL. 0, or -1 (a dictionary lookup failed). */
static int bind_tap_key(struct store *s, int64_t run_id, sqlite3_stmt *st, int col,
                        const struct rec_row *row)
{
    struct store_writes *w = s->w;
    size_t len;
    const char *text = itemrow_key(row, &len);
    if (!text) {
        sqlite3_bind_null(st, col);
        return 0;
    }
    if (w->mode_run == run_id && w->mode_prefix) {
        int64_t pid = dict_id(s, &w->prefixes, w->prefix_find, w->prefix_add, text, len);
        if (pid < 0)
            return -1;
        if (pid) {
            sqlite3_bind_int64(st, col, pid);
            return 0;
        }
    }
    sqlite3_bind_text(st, col, text, (int)len, SQLITE_STATIC);
    return 0;
}

static int put_tap_row(struct store *s, int64_t run_id, const struct rec_row *row, char *err,
                       size_t errlen)
{
    struct store_writes *w = s->w;
    sqlite3_stmt *st;
    if (row->sampled_out) /* --sample-keys: no row */
        return 0;
    if (row->kind == REC_ROW_EVENT) {
        struct itemrow_event e;
        if (!w->ins_event &&
            prepare(s,
                    "INSERT INTO item_events (run_id, seq, t_ns, event, key_hash, key_ref,"
                    " key_len, class_id, size, fetched, idle_s, ttl_left, cmd)"
                    " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)",
                    &w->ins_event))
            return store_fail(s, "preparing an item event insert", err, errlen);
        st = w->ins_event;
        itemrow_event(row, &e);
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, run_id);
        sqlite3_bind_int64(st, 2, e.seq);
        sqlite3_bind_int64(st, 3, e.t_ns);
        sqlite3_bind_int64(st, 4, e.event);
        sqlite3_bind_int64(st, 5, e.key_hash);
        if (bind_tap_key(s, run_id, st, 6, row))
            return store_fail(s, "looking up a key prefix", err, errlen);
        sqlite3_bind_int64(st, 7, e.key_len);
        sqlite3_bind_int64(st, 8, e.class_id);
        bind_opt(st, 9, e.size);
        bind_opt(st, 10, e.fetched);
        bind_opt(st, 11, e.idle_s);
        bind_opt(st, 12, e.ttl_left);
        if (e.cmd)
            sqlite3_bind_text(st, 13, e.cmd, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 13);
        return step_done(s, st, "inserting an item event", err, errlen);
    }
    struct itemrow_item it;
    if (!w->ins_item &&
        prepare(s,
                "INSERT INTO snapshot_items (run_id, snap, seq, key_hash, key_ref, key_len,"
                " class_id, size, ttl_left, idle_s, fetched, flags)"
                " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
                &w->ins_item))
        return store_fail(s, "preparing a snapshot item insert", err, errlen);
    st = w->ins_item;
    itemrow_item(row, &it);
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, it.snap);
    sqlite3_bind_int64(st, 3, it.seq);
    sqlite3_bind_int64(st, 4, it.key_hash);
    if (bind_tap_key(s, run_id, st, 5, row))
        return store_fail(s, "looking up a key prefix", err, errlen);
    sqlite3_bind_int64(st, 6, it.key_len);
    sqlite3_bind_int64(st, 7, it.class_id);
    sqlite3_bind_int64(st, 8, it.size);
    sqlite3_bind_int64(st, 9, it.ttl_left);
    sqlite3_bind_int64(st, 10, it.idle_s);
    sqlite3_bind_int64(st, 11, it.fetched);
    bind_opt(st, 12, it.flags);
    return step_done(s, st, "inserting a snapshot item", err, errlen);
}

static int put_tap_snapshot(struct store *s, int64_t run_id, const struct rec_job *j, char *err,
                            size_t errlen)
{
    struct store_writes *w = s->w;
    struct itemrow_snapshot sn;
    if (!w->ins_snap &&
        prepare(s,
                "INSERT INTO snapshots (run_id, snap, t_ns, ended_ns, items, bytes, complete,"
                " header) VALUES (?1,?2,?3,?4,?5,?6,?7,?8) ON CONFLICT (run_id, snap) DO UPDATE"
                " SET t_ns = excluded.t_ns, ended_ns = excluded.ended_ns, items = excluded.items,"
                " bytes = excluded.bytes, complete = excluded.complete, header = excluded.header",
                &w->ins_snap))
        return store_fail(s, "preparing a snapshot insert", err, errlen);
    sqlite3_stmt *st = w->ins_snap;
    itemrow_snapshot(j, &sn);
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, sn.snap);
    sqlite3_bind_int64(st, 3, sn.t_ns);
    bind_opt(st, 4, sn.ended_ns);
    sqlite3_bind_int64(st, 5, sn.items);
    sqlite3_bind_int64(st, 6, sn.bytes);
    sqlite3_bind_int64(st, 7, sn.complete);
    if (j->text)
        sqlite3_bind_text(st, 8, j->text, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 8);
    return step_done(s, st, "inserting a snapshot", err, errlen);
}
