/* reader: the one read interface over a recorded store -- a SQLite file or
 * a fleet's PostgreSQL (a postgresql:// URI) -- as the questions slabtap
 * asks of a recording, each with one meaning and the same answer from
 * either engine: which run a name means, a run's settings, run_meta values
 * and samples, its writes in sequence order and its reads, whether its
 * rows are all there, its write aggregates, and (issue 22) its snapshots'
 * resident items and its evictions and deletions. The same shape the write
 * side has in record/sink.h; record/runs.h (the model's run), rowseq,
 * advice, load/replay and the model commands read only through it.
 *
 * Owns the connection it opened (read-only: SQLITE_OPEN_READONLY, or a
 * PostgreSQL session whose transactions are read only) and its cursors;
 * each engine's SQL lives in its file (record/reader_sqlite.c,
 * record/reader_pg.c, behind the vtable of record/reader_engine.h), this
 * interface and record/reader.c hold none.
 * Must never write, print, or hold a run's rows in memory: writes and
 * reads are streamed (SQLite steps its statement; PostgreSQL fetches
 * READER_FETCH_ROWS rows at a time from a server-side cursor, so two
 * cursors -- writes and reads, merged by a replay -- stream side by side
 * on one connection). Failures return -1 (or -1 ids) with the reason in
 * err; a PostgreSQL password is never in it (record/pgstore.h's
 * redaction). Not for two threads at once. */
#ifndef SLABTAP_RECORD_READER_H
#define SLABTAP_RECORD_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/predict.h"

struct sqlite3;

/* PostgreSQL: rows fetched per round trip from a cursor. */
#define READER_FETCH_ROWS 2000
/* A SQLite reader's busy timeout (ms): what holds the file may be a
 * transaction of another program; the recording proxy never blocks
 * readers (WAL, normal locking: docs/live-sql.md). */
#define READER_BUSY_MS 5000

enum reader_engine { READER_SQLITE, READER_PG };

struct reader;

/* db: a file (opened read-only; reader_sqlite_check says why one cannot be
 * read) or a postgresql:// URI (libpq; the password from the environment
 * or a passfile). 0, or -1 with the reason in err (*out NULL). */
int reader_open(struct reader **out, const char *db, char *err, size_t errlen);
/* A reader over a SQLite connection the caller owns and keeps open until
 * reader_close (the page's writer thread); name: its file. */
int reader_open_sqlite(struct reader **out, struct sqlite3 *db, const char *name, char *err,
                       size_t errlen);
void reader_close(struct reader *r);
/* The file, or the connection string without its password. */
const char *reader_name(const struct reader *r);
enum reader_engine reader_engine(const struct reader *r);
const char *reader_engine_name(enum reader_engine e); /* "sqlite", "postgresql" */

/* --- runs ------------------------------------------------------------------ */

/* NAME_OR_ID (NULL: the latest run) to a run id; -1 when there is none. A
 * name used by several runs means the latest of them. The one resolver of
 * run names (`model --run`, `--holdout-run`, `load --replay-run`). The
 * latest run is the highest run_id in `runs` (a run exists from the moment
 * the proxy starts, before its first write). A SQLite file with a sets
 * table and no runs row for it (written by another tool) resolves an id
 * found in sets, and its latest is the highest run_id in sets. */
int64_t reader_run_find(struct reader *r, const char *name_or_id);

struct reader_run {
    int64_t run_id;
    char name[128];
    char node[128];        /* PostgreSQL runs.node; SQLite run_meta 'node'; "" none */
    int64_t started_ns;    /* unix ns */
    int64_t ended_ns;      /* 0: running, or crashed */
    int64_t rows_recorded; /* -1: unknown */
    int64_t rows_dropped;
    char kind[16]; /* runs.kind: proxy, experiment, watch, snapshot ("proxy":
                      a store older than the column) */
};
/* Run run_id's row: 0, or -1 (no such run; err says so). */
int reader_run_get(struct reader *r, int64_t run_id, struct reader_run *out, char *err,
                   size_t errlen);

/* The runs of the fleet: node LIKE node_like (NULL: any node) and, when
 * since_ns > 0, still running or ended at or after since_ns (unix ns). Ids
 * into *ids (malloc'd, oldest first), their nodes into *nodes (malloc'd,
 * one strdup'd string each). 0, or -1 with the reason in err. */
int reader_runs_select(struct reader *r, const char *node_like, int64_t since_ns, int64_t **ids,
                       char ***nodes, size_t *n, char *err, size_t errlen);
void reader_runs_select_free(int64_t *ids, char **nodes, size_t n);

/* One name/value of `stats settings` (values as text: "yes", "1048576"). */
typedef int (*reader_pair_fn)(void *ud, const char *name, const char *value);

enum reader_which { READER_FIRST, READER_LAST };

/* Run run_id's first or last recorded `stats settings`, each pair to fn
 * (a non-zero return stops and is returned); its memcached version into
 * version (may be NULL) and its time into *t_ns (may be NULL). 0 (also
 * when none was recorded: fn never called, *t_ns 0), or -1 with err. */
int reader_settings(struct reader *r, int64_t run_id, enum reader_which which, reader_pair_fn fn,
                    void *ud, char *version, size_t vlen, int64_t *t_ns, char *err, size_t errlen);

/* run_meta's value of key for run_id, malloc'd; NULL when absent. Keys in
 * use: memcached_flags, node, ladder, sample_keys, hits_advice, ... */
char *reader_meta(struct reader *r, int64_t run_id, const char *key);

/* One (slab class, chunk size). */
typedef int (*reader_chunk_fn)(void *ud, uint32_t class_id, int64_t chunk_size);
/* The ladder the proxy recorded for the run (run_meta 'ladder', its
 * chunk_sizes; class 1 first): each class to fn. The count of classes
 * (0: none recorded, or not JSON), or -1. */
int reader_meta_ladder(struct reader *r, int64_t run_id, reader_chunk_fn fn, void *ud);
/* Every (class, chunk size) the run's samples showed at or after since_ns,
 * each once. 0 or -1. */
int reader_chunk_sizes(struct reader *r, int64_t run_id, int64_t since_ns, reader_chunk_fn fn,
                       void *ud);

/* --- samples (stats over time) ------------------------------------------- */

/* The run's first or last sample (by t_ns, then sample_id); -1: none. */
int64_t reader_sample_edge(struct reader *r, int64_t run_id, enum reader_which which);

/* memcached's global counters in one sample (`stats`; 0 when absent). */
struct reader_counters {
    int64_t evictions, slabs_moved, reclaimed, crawler_reclaimed, get_expired, cmd_flush;
    int64_t curr_items, pid, uptime, limit_maxbytes;
    int64_t total_malloced; /* else the classes' total_pages in MB, in bytes */
};
int reader_sample_counters(struct reader *r, int64_t sample_id, struct reader_counters *out,
                           char *err, size_t errlen);

/* One class of a sample (class_stats: `stats slabs` with `stats items`). */
typedef int (*reader_class_fn)(void *ud, uint32_t class_id, const struct predict_observed *o);
int reader_sample_classes(struct reader *r, int64_t sample_id, reader_class_fn fn, void *ud,
                          char *err, size_t errlen);

/* --- writes and reads, streamed ------------------------------------------ */

/* One recorded write (the view `sets`). Texts are valid until the next
 * reader_next_* on the cursor. */
struct reader_write {
    int64_t seq;
    const char *cmd;
    char ms_mode;    /* ms M<mode> (schema v3), 0: none */
    const char *key; /* as recorded (--keys), NULL: hash only */
    size_t key_text_len;
    uint64_t key_hash;
    int64_t key_len;
    int64_t value_len;  /* -1: NULL */
    int64_t flags;      /* 0: NULL */
    int64_t exptime;    /* 0: NULL */
    const char *answer; /* NULL: none */
    uint32_t class_id;  /* 0: NULL */
};

/* One recorded read (the view `reads`) with what comes next for its key. */
struct reader_read {
    int64_t seq, after_write; /* after_write A: after write A, before A + 1 */
    const char *cmd;
    const char *key;
    size_t key_text_len;
    uint64_t key_hash;
    int64_t key_len;
    bool hit;
    int64_t value_len; /* -1: NULL */
    int64_t flags, exptime;
    /* the next request for the key in the merged order (writes before
     * the reads that follow them): 0 a write, 1 a read, -1 none */
    int next_kind;
};

struct reader_cursor;

enum reader_writes_order {
    READER_SEQ,      /* ORDER BY seq */
    READER_SCAN,     /* the store's own order, cheaper on SQLite (seq order
                  * unless a row says not: the caller checks seq) */
    READER_COUNTERS, /* only incr/decr/ma not refused as non-numeric */
};
/* Run run_id's writes, streamed. 0, or -1 with err. */
int reader_writes_open(struct reader *r, int64_t run_id, enum reader_writes_order order,
                       struct reader_cursor **out, char *err, size_t errlen);
/* Run run_id's reads, ORDER BY after_write, seq, each with next_kind. 0
 * (*out NULL when the store has no reads: an older file), or -1. */
int reader_reads_open(struct reader *r, int64_t run_id, struct reader_cursor **out, char *err,
                      size_t errlen);
/* 1 with the next row, 0 at the end, -1 with err. */
int reader_next_write(struct reader_cursor *c, struct reader_write *w, char *err, size_t errlen);
int reader_next_read(struct reader_cursor *c, struct reader_read *rd, char *err, size_t errlen);
void reader_cursor_close(struct reader_cursor *c);

/* Rows of run_id in `sets` / in `reads` (-1: error, or no reads view). */
int64_t reader_writes_count(struct reader *r, int64_t run_id);
int64_t reader_reads_count(struct reader *r, int64_t run_id);

/* --- rows status and aggregates (issue 14) --------------------------------- */

/* Whether a run's rows are all there, and what else it has. */
struct reader_rows_status {
    int64_t recorded; /* runs.rows_recorded (-1: unknown) */
    int64_t present;  /* rows of the run in `writes` (-1: unknown) */
    bool complete;    /* present >= recorded, or nothing to tell */
    bool have_aggs;   /* the run has write aggregates (agg_item_runs) */
};
int reader_rows_status(struct reader *r, int64_t run_id, struct reader_rows_status *out);

/* One agg_items cell summed over the run (record/wagg.h's cell). */
typedef int (*reader_agg_fn)(void *ud, uint32_t class_id, int64_t body, int64_t outcome,
                             int64_t writes, int64_t body_bytes);
/* agg_items of run_id grouped by (class_id, body, outcome), ORDER BY body,
 * class_id. 0, or -1 with err (a store without the tables says so). */
int reader_agg_items(struct reader *r, int64_t run_id, reader_agg_fn fn, void *ud, char *err,
                     size_t errlen);
/* agg_answers of run_id: every write, and the deletes that deleted. */
int reader_agg_answers(struct reader *r, int64_t run_id, uint64_t *writes, uint64_t *deletes,
                       char *err, size_t errlen);

/* --- snapshots and item events (issue 22) ----------------------------------
 * What `slabtap snapshot` (tables snapshots, snapshot_items) and `slabtap
 * watch` / proxy --watch-evictions (table item_events) recorded, streamed
 * like writes. The same rows, in the same order, from either engine. */

/* One metadump of a run (table snapshots). */
struct reader_snapshot {
    int64_t snap;     /* its number in the run (1..) */
    int64_t t_ns;     /* started, unix ns */
    int64_t ended_ns; /* 0: not ended (the dump was cut short) */
    int64_t items, bytes;
    bool complete; /* memcached said END */
};
typedef int (*reader_snapshot_fn)(void *ud, const struct reader_snapshot *s);
/* Run run_id's snapshots ORDER BY snap, each to fn (a non-zero return
 * stops and is returned). 0 (also when it has none), or -1 with err (a
 * store without the table, a file no slabtap of issue 22 opened to write,
 * says so). The counts below are -1 there. */
int reader_snapshots(struct reader *r, int64_t run_id, reader_snapshot_fn fn, void *ud, char *err,
                     size_t errlen);

/* One resident item of a snapshot (table snapshot_items). Texts are valid
 * until the next reader_next_item on the cursor. */
struct reader_item {
    int64_t seq;     /* its place in the dump (metadump order) */
    const char *key; /* as recorded (--keys), NULL: hash only */
    size_t key_text_len;
    uint64_t key_hash;
    int64_t key_len;
    uint32_t class_id; /* memcached's clsid */
    int64_t size;      /* ITEM_ntotal: header + key + suffix + value (+ cas) */
    int64_t ttl_left;  /* seconds, -1: no expiry */
    int64_t idle_s;    /* seconds since last access */
    bool fetched;
    int64_t flags; /* -1: unknown (metadump does not print flags) */
};
/* Snapshot snap of run run_id's items, streamed in dump order (seq). 0,
 * or -1 with err. */
int reader_items_open(struct reader *r, int64_t run_id, int64_t snap, struct reader_cursor **out,
                      char *err, size_t errlen);
/* 1 with the next item, 0 at the end, -1 with err. */
int reader_next_item(struct reader_cursor *c, struct reader_item *it, char *err, size_t errlen);
/* Items of snapshot snap of run_id in the store (-1: error / no table). */
int64_t reader_items_count(struct reader *r, int64_t run_id, int64_t snap);

/* One eviction or deletion memcached logged (table item_events). */
struct reader_event {
    int64_t seq;
    int64_t t_ns;    /* memcached's ts, unix ns */
    int event;       /* enum rec_item_event: 1 evicted, 2 deleted */
    const char *key; /* as recorded (--keys), NULL: hash only */
    size_t key_text_len;
    uint64_t key_hash;
    int64_t key_len;
    uint32_t class_id;
    int64_t size;     /* value bytes memcached logged, -1: none */
    int fetched;      /* 0/1, -1: NULL (a deletion) */
    int64_t idle_s;   /* -1: NULL (a deletion) */
    int64_t ttl_left; /* seconds; -1: no expiry; -2: NULL (a deletion) */
    const char *cmd;  /* a deletion's "delete" | "md"; NULL for an eviction */
};
/* Run run_id's item events ORDER BY seq, streamed. 0, or -1 with err. */
int reader_events_open(struct reader *r, int64_t run_id, struct reader_cursor **out, char *err,
                       size_t errlen);
int reader_next_event(struct reader_cursor *c, struct reader_event *ev, char *err, size_t errlen);
/* Item events of run_id (-1: error / no table). */
int64_t reader_events_count(struct reader *r, int64_t run_id);

/* --- SQLite files ---------------------------------------------------------
 * Whether a SQLite file can be read as a slabtap database now, and if not
 * why, for every reader to say the same: locked (reader_locked_why), a
 * file cut short or damaged, not SQLite at all, or SQLite without
 * slabtap's tables. The reason into err (without the path). */
#define READER_DB_STATES(X) \
    X(READER_DB_OK, "a slabtap database") \
    X(READER_DB_LOCKED, "database is locked") \
    X(READER_DB_HALF_WRITTEN, "half-written or damaged") \
    X(READER_DB_NOT_SQLITE, "not a SQLite database") \
    X(READER_DB_NOT_SLABTAP, "not a slabtap database")

enum reader_db_state {
#define READER_DB_ENUM(name, label) name,
    READER_DB_STATES(READER_DB_ENUM)
#undef READER_DB_ENUM
        READER_DB__COUNT
};
const char *reader_db_state_label(enum reader_db_state st);
enum reader_db_state reader_sqlite_check(struct sqlite3 *db, const char *path, char *err,
                                         size_t errlen);
/* The message of a read that found path locked (SQLITE_BUSY/LOCKED; msg:
 * SQLite's words): "database is locked by WHO: msg", WHO the process
 * holding SQLite's lock bytes of the file (as its lock file describes it
 * when that is the recording proxy, record/dblock.h), or the recording
 * proxy, or "another process". Every reader says it the same way. */
void reader_locked_why(const char *path, const char *msg, char *err, size_t errlen);

#endif
