/* reader_engine: what an engine gives record/reader.c -- its SQL for each
 * question (one table per engine, the same columns in the same order) and
 * a cursor over one query -- behind one vtable. Only reader.c,
 * reader_sqlite.c and reader_pg.c include it.
 *
 * Owns the query numbering and the cursor contract: a cursor's texts stay
 * valid until its next step; at most a few cursors open at once on one
 * reader (a replay's writes and reads). Must never be used outside the
 * reader's files. */
#ifndef SLABTAP_RECORD_READER_ENGINE_H
#define SLABTAP_RECORD_READER_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/pgstore.h"
#include "record/reader.h"

/* Each question, with its parameters (i: int64, t: text) and columns. */
enum reader_q {
    RQ_RUN_FIND,       /* t name_or_id (NULL: latest) -> run_id */
    RQ_SETS_FIND,      /* t id -> run_id (a sets table without runs; NULL: none) */
    RQ_SETS_LATEST,    /* -> max(run_id) of sets (idem) */
    RQ_RUN,            /* i -> run_id name node started_ns ended_ns rows_recorded rows_dropped
                        kind */
    RQ_SELECT,         /* t node_like, i since_ns -> run_id node */
    RQ_SETTINGS_FIRST, /* i -> name value version t_ns (one settings row) */
    RQ_SETTINGS_LAST,
    RQ_META,         /* i, t key -> value */
    RQ_META_LADDER,  /* i -> class_id chunk_size */
    RQ_CHUNK_SIZES,  /* i, i since_ns -> class_id chunk_size */
    RQ_SAMPLE_FIRST, /* i -> sample_id */
    RQ_SAMPLE_LAST,
    RQ_COUNTERS,   /* i sample_id -> struct reader_counters' fields in order */
    RQ_CLASSES,    /* i sample_id -> class_id chunk_size used_chunks mem_requested
                        * total_pages number evicted */
    RQ_WRITES_SEQ, /* i -> READER_WRITE_COLS */
    RQ_WRITES_SCAN,
    RQ_WRITES_COUNTERS,
    RQ_WRITES_COUNT, /* i -> count */
    RQ_READS,        /* i -> READER_READ_COLS */
    RQ_READS_COUNT,  /* i -> count */
    RQ_ROWS_PRESENT, /* i -> count of the run's rows in writes */
    RQ_HAS_AGGS,     /* i -> 1 */
    RQ_AGG_ITEMS,    /* i -> class_id body outcome writes body_bytes */
    RQ_AGG_ANSWERS,  /* i -> writes deletes */
    /* issue 22: snapshots and item events */
    RQ_SNAPSHOTS,    /* i -> snap t_ns ended_ns items bytes complete */
    RQ_ITEMS,        /* i, i snap -> READER_ITEM_COLS */
    RQ_ITEMS_COUNT,  /* i, i snap -> count */
    RQ_EVENTS,       /* i -> READER_EVENT_COLS */
    RQ_EVENTS_COUNT, /* i -> count */
    RQ__COUNT
};
/* The columns of RQ_WRITES_*: cmd key key_hash key_len value_len flags
 * exptime answer seq ms_mode class_id. RQ_READS: cmd key key_hash key_len
 * hit value_len flags exptime seq after_write next_kind. RQ_ITEMS: seq key
 * key_hash key_len class_id size ttl_left idle_s fetched flags. RQ_EVENTS:
 * seq t_ns event key key_hash key_len class_id size fetched idle_s ttl_left
 * cmd. */

/* A query's SQL, and the forms to try in turn when it cannot be prepared
 * (a SQLite file from before schema v3 has no ms_mode; a table written by
 * another tool may lack class_id); NULL: none. A question the engine
 * cannot answer has sql NULL. */
#define READER_SQL_FORMS 3
struct reader_sql {
    const char *sql, *older, *oldest;
};

/* An engine's entry READER_SQL_SAME: SQLite's forms of the question, with
 * the engine's rule for what differs (PostgreSQL: $N for ?N). */
extern const char reader_sql_same[];
#define READER_SQL_SAME reader_sql_same
extern const struct reader_sql reader_sqlite_sql[RQ__COUNT];

struct reader_param {
    bool is_text;
    int64_t i;
    const char *t;
};
#define READER_INT(v) ((struct reader_param){ false, (v), NULL })
#define READER_TEXT(v) ((struct reader_param){ true, 0, (v) })
#define READER_PARAMS_MAX 4

struct reader_cursor {
    struct reader *r;
    void *impl;
};

struct reader_ops {
    enum reader_engine engine;
    const struct reader_sql *sql; /* RQ__COUNT entries */
    /* Starts sql with p[0..np) on c (c->r set): 0, or -1 with err. */
    int (*start)(struct reader_cursor *c, const char *sql, const struct reader_param *p, int np,
                 char *err, size_t errlen);
    /* 1 a row, 0 the end, -1 with err. */
    int (*step)(struct reader_cursor *c, char *err, size_t errlen);
    bool (*is_null)(const struct reader_cursor *c, int col);
    int64_t (*int64)(const struct reader_cursor *c, int col);
    const char *(*text)(const struct reader_cursor *c, int col, size_t *len);
    void (*finish)(struct reader_cursor *c);
    void (*close)(struct reader *r);
};

struct reader {
    const struct reader_ops *ops;
    void *impl;
    char name[PGSTORE_URI_MAX];
};

/* The engines' openers: r->ops, r->impl and r->name set; 0 or -1. */
int reader_sqlite_open(struct reader *r, const char *path, struct sqlite3 *borrowed, char *err,
                       size_t errlen);
int reader_pg_open(struct reader *r, const char *uri, char *err, size_t errlen);

#endif
