/* retain: bounded storage for a SQLite file left running for days --
 * --retain DURATION and --max-db-size SIZE expire the oldest recorded
 * writes (tables `writes` and `arrivals`), and with them the reads that
 * came before the first write kept (`read_rows`, `read_extra`,
 * `read_arrivals`; the oldest reads alone once no write is left; issue
 * 19), in bounded steps on the writer
 * thread, between batches; and --db PATTERN (strftime, UTC) rotates to a
 * new file when the expanded name changes (a file per day with %Y%m%d).
 *
 * What is expired: only rows of `writes` and the `arrivals` no kept write
 * needs, the read rows as above, and (issue 22) the evictions and
 * deletions (`item_events`) and snapshots (`snapshot_items`, then the
 * `snapshots` row) older than the oldest write kept (and than --retain's
 * cutoff): with no write left, events before snapshots. runs, write_runs, read_runs, phases,
 * samples, settings, run_meta, get_counts, the dictionaries (read_keys
 * too) and the aggregates (agg_*, agg_reads) are kept: the
 * aggregates are what outlives the rows. Oldest first: rowid order, which
 * is the order the writes arrived in (a run's rowids follow the runs
 * before it).
 *
 * Space: freed pages go to SQLite's freelist and are reused by the next
 * inserts, so a file whose deletions keep up stops growing, with or
 * without auto_vacuum. Files slabtap creates use auto_vacuum=INCREMENTAL,
 * so one that is over the bound (the bound was lowered, or it was written
 * before) is also shrunk, RETAIN_VACUUM_PAGES per step; an older file
 * without it keeps its size (`sqlite3 FILE VACUUM` offline shrinks it).
 *
 * Owns the planner (pure: what to delete now, from what the file looks
 * like) and one delete step on a connection it is handed. Must never run
 * on the event loop thread (but retain_disk_bytes: two stat()s, for
 * /metrics), hold a transaction across steps, delete more than the
 * planner's rows in one step, fail the recording (a step that fails is
 * rolled back, logged by the caller and tried again), nor print. */
#ifndef SLABTAP_RECORD_RETAIN_H
#define SLABTAP_RECORD_RETAIN_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* one step deletes at most this many rows, and takes about RETAIN_STEP_MS:
 * the planner halves its rows after a slower step and doubles them after
 * a quick one, within [RETAIN_STEP_MIN, RETAIN_STEP_MAX] */
#define RETAIN_STEP_MIN 256
#define RETAIN_STEP_MAX 65536
#define RETAIN_STEP_START 8192
#define RETAIN_STEP_MS 8
/* pages given back to the file system per step when the file is over the
 * bound (auto_vacuum=INCREMENTAL files only) */
#define RETAIN_VACUUM_PAGES 512
/* the age of the oldest row is looked at this often (--retain) */
#define RETAIN_AGE_CHECK_MS 250
/* bytes per row before a step has measured it */
#define RETAIN_BYTES_PER_ROW 36

struct retain_cfg {
    int64_t retain_ns;  /* --retain: rows older than this go (0: no age bound) */
    uint64_t max_bytes; /* --max-db-size: the file stays under it (0: no bound) */
};

/* What the file looks like now (PRAGMA page_size, page_count,
 * freelist_count; the oldest write's time, -1 when there is none). */
struct retain_obs {
    int64_t now_ns;
    uint64_t page_size, page_count, free_pages;
    int64_t oldest_ns;
    bool incremental; /* auto_vacuum = INCREMENTAL */
    uint64_t rows_in; /* rows written since the last step: over the size
                         bound, a step deletes at least 5/4 of them, so
                         deletion keeps up whatever a step's time */
    bool disk_full;   /* the disk is full: a step of the oldest rows goes and
                         free pages go back, under the bound or not */
};

/* The planner's memory between steps. */
struct retain_planner {
    uint64_t step_rows;   /* rows the next step may delete */
    double bytes_per_row; /* measured: pages freed per row deleted */
};

struct retain_plan {
    uint64_t rows;         /* delete up to this many of the oldest rows (0: none) */
    int64_t cutoff_ns;     /* and none at or after this time (INT64_MAX: no age limit) */
    uint64_t vacuum_pages; /* then PRAGMA incremental_vacuum(N) */
    bool over_size;        /* the size bound is what asks for it */
};

void retain_planner_init(struct retain_planner *p);
/* The slack kept free under max_bytes: deletion starts when the pages in
 * use pass max - slack and frees down to max - 2 * slack. */
uint64_t retain_slack(uint64_t max_bytes, uint64_t page_size);
/* What to do now; false when nothing. */
bool retain_plan(const struct retain_cfg *cfg, const struct retain_planner *p,
                 const struct retain_obs *o, struct retain_plan *out);
/* A step deleted rows, freed pages (freelist grew by) and took elapsed_ns. */
void retain_feedback(struct retain_planner *p, uint64_t rows, uint64_t pages_freed,
                     uint64_t page_size, int64_t elapsed_ns);

/* --- rotation --------------------------------------------------------------- */

/* Whether path has a strftime conversion (% followed by a letter): --db
 * names a pattern, a new file each time its expansion changes. %% alone
 * is not one. */
bool retain_path_rotates(const char *path);
/* path expanded at unix time t (UTC) into out; 0, or -1 when it does not
 * fit or expands to nothing. */
int retain_path_expand(const char *path, time_t t, char *out, size_t outlen);

/* --- the delete step -------------------------------------------------------- */

/* What the store has expired so far, and the file now (for /health and
 * /metrics; the recorder mirrors it under its lock). */
struct retain_stats {
    bool enabled;
    int64_t retain_ns;
    uint64_t max_bytes;
    bool bound_reached;     /* a bound asked for a deletion at least once */
    bool kept_over;         /* what is kept (no rows left to expire) is over the bound */
    uint64_t rows_expired;  /* rows deleted (writes, reads), since the proxy started */
    int64_t oldest_ns;      /* the oldest write kept (-1: none) */
    uint64_t file_bytes;    /* page_count * page_size */
    uint64_t free_bytes;    /* on the freelist, reused before the file grows */
    uint64_t steps;         /* delete steps run */
    uint64_t step_max_us;   /* the longest one */
    uint64_t step_total_us; /* all of them: the writer's time spent expiring */
};

struct retain {
    struct retain_cfg cfg;
    struct retain_planner plan;
    struct retain_stats st;
    int64_t next_age_check_ns;
    uint64_t rows_in; /* written since the last step (retain_obs.rows_in) */
    bool logged_bound, logged_kept;
    bool make_room; /* retain_make_room's step: the disk is full */
};

void retain_init(struct retain *r, const struct retain_cfg *cfg);
bool retain_enabled(const struct retain *r);
/* The writer thread, between batches, on the store's connection (no
 * transaction open): looks at the file and, when a bound asks for it,
 * deletes one planned step of the oldest rows in a transaction of its own;
 * rows_in: the rows the batch just written added.
 * 1 when it deleted or vacuumed (the caller forgets what it cached about
 * the rows: store_rows_expired), 0 when there was nothing to do, -1 with
 * the reason in err (rolled back). Logs once when a bound is first reached
 * and once when what is kept alone is over it. */
int retain_step(struct retain *r, sqlite3 *db, int64_t now_ns, uint64_t rows_in, char *err,
                size_t errlen);
/* The disk is full (a batch failed with SQLITE_FULL): one step of the
 * oldest rows is deleted (a quarter of a planned step, at least
 * RETAIN_STEP_MIN) and RETAIN_VACUUM_PAGES free pages given back to the
 * file system (auto_vacuum=INCREMENTAL files), whatever the bounds say, so
 * that recording can resume. As retain_step: 1, 0, or -1 with err. */
int retain_make_room(struct retain *r, sqlite3 *db, int64_t now_ns, char *err, size_t errlen);

/* --- room on the file system ----------------------------------------------- */

/* SQLite's WAL: a checkpoint at this many pages (wal_autocheckpoint), and
 * the largest transaction on top of it (a retention step of RETAIN_STEP_MAX
 * rows) */
#define RETAIN_WAL_PAGES 1000
#define RETAIN_WAL_STEP_BYTES ((uint64_t)2 << 20)
#define RETAIN_WAL_MIN_PAGES 64

#define RETAIN_ROOM_RESULTS(X) \
    X(RETAIN_ROOM_OK, "fits") \
    X(RETAIN_ROOM_SMALL_WAL, "fits with a smaller WAL") \
    X(RETAIN_ROOM_NO, "cannot be met")

enum retain_room {
#define RETAIN_ROOM_ENUM(name, label) name,
    RETAIN_ROOM_RESULTS(RETAIN_ROOM_ENUM)
#undef RETAIN_ROOM_ENUM
        RETAIN_ROOM__COUNT
};
const char *retain_room_label(enum retain_room r);

/* Pure: whether max_bytes and SQLite's WAL fit in room bytes (what the
 * file system has free plus what the file and its WAL take now): OK with
 * SQLite's WAL; SMALL_WAL with *wal_pages set to a WAL that fits (half of
 * what is left beside the bound, the other half for the transaction on
 * top); NO when not even RETAIN_WAL_MIN_PAGES do (*wal_pages then
 * RETAIN_WAL_MIN_PAGES). */
enum retain_room retain_room_plan(uint64_t max_bytes, uint64_t room, uint64_t page_size,
                                  unsigned *wal_pages);
/* retain_room_plan for the file at path (statvfs of its folder, stat of it
 * and PATH-wal); the figures into room (bytes). -1 when the file system
 * cannot be asked. */
int retain_room(const char *path, uint64_t max_bytes, uint64_t *room, unsigned *wal_pages,
                enum retain_room *out);
/* Bytes on disk of the SQLite file at path plus its WAL (PATH-wal); what
 * does not exist counts 0. Two stat()s and nothing else, so any thread may
 * ask (/metrics asks on the event loop: slabtap_db_file_bytes). */
uint64_t retain_disk_bytes(const char *path);

/* The file's size and oldest row, refreshed without deleting (for a fresh
 * file after rotation, and /health before the first step). */
void retain_observe(struct retain *r, sqlite3 *db, int64_t now_ns);

#endif
