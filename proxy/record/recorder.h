/* recorder: the bounded queue between the event loop and the one thread
 * that writes rows to the sink (record/sink.h: SQLite or PostgreSQL).
 *
 * Owns the writer thread, the ring of rows, the overflow stash, the sink
 * and the spill file (record/spill.h) once rec_open has them. A remote sink
 * that fails past max_stall_ms has its batches spilled, in order, and
 * shipped oldest first when it writes again, each exactly once (its batch
 * number committed with it: sink.h SINK_BATCH_KEY); a sink not open yet
 * (--record-optional) is opened by the writer, tried again every
 * REC_RETRY_MAX_MS, its rows counted lost until then.
 * Must never make the loop thread wait on the sink or on the writer: rec_push
 * only takes a short lock to copy a row. In block mode a full ring sends
 * rows to the stash and sets rec_blocked() so the proxy stops reading until
 * the writer has drained (the writer wakes the loop through uv_async);
 * in drop mode rows are dropped and counted. Must never print what it can
 * return: only a batch the writer thread could not write (it has no caller)
 * and a row lost to a failed allocation are logged, throttled. */
#ifndef SLABTAP_RECORDER_H
#define SLABTAP_RECORDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/log.h"
#include "record/row.h"

#include "record/retain.h"
#include "record/sink.h"

struct query_queue;
struct spill;

/* Frees a job and everything it holds. */
void rec_job_free(struct rec_job *j);

enum rec_on_full { REC_BLOCK, REC_DROP };

/* Why a row was not recorded. X(name, label): one list for the counters,
 * /metrics (rows_lost_total{reason=label}) and the log. memcached_dropped:
 * lines memcached's logger dropped before a watcher (server/tap.h) got
 * them, counted by the tap with rec_count_lost; like the writer's losses
 * they are in runs.rows_dropped. */
#define REC_LOSS_REASONS(X) \
    X(REC_LOST_QUEUE_FULL, "queue_full") \
    X(REC_LOST_WRITE_ERROR, "write_error") \
    X(REC_LOST_SHUTDOWN, "shutdown") \
    X(REC_LOST_SPILL_FULL, "spill_full") \
    X(REC_LOST_STORE_UNAVAILABLE, "store_unavailable") \
    X(REC_LOST_FILE_DELETED, "file_deleted") \
    X(REC_LOST_READ_KEY_CUT, "read_key_cut") \
    X(REC_LOST_READ_KEY_NOMEM, "read_key_nomem") \
    X(REC_LOST_WAL_FULL, "wal_full") \
    X(REC_LOST_MEMCACHED_DROPPED, "memcached_dropped")

enum rec_loss {
#define REC_LOSS_ENUM(name, label) name,
    REC_LOSS_REASONS(REC_LOSS_ENUM)
#undef REC_LOSS_ENUM
        REC_LOST__COUNT
};

const char *rec_loss_label(enum rec_loss reason);

/* A failed batch is tried again after this long, doubling up to the max. */
#define REC_RETRY_MIN_MS 50
#define REC_RETRY_MAX_MS 2000
/* At shutdown a failing store gets this long before what it holds is
 * given up (counted as lost: shutdown). */
#define REC_SHUTDOWN_GRACE_MS 3000
#define REC_DEFAULT_MAX_STALL_MS 2000
/* SQLite: the writer looks this often whether the path still names the
 * file (and WAL) it writes (store_file_check: two stat() calls) */
#define REC_FILE_CHECK_MS 1000

#define REC_JOBS_MAX 4096 /* queued jobs beyond this are dropped and counted */
/* Rows are staged on the loop thread and moved into the ring under one lock
 * per batch (at the latest once per loop iteration), not one per row. */
#define REC_STAGE_ROWS 512

struct recorder {
    /* shared with the writer thread, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct rec_row *ring;
    size_t cap, head, count;
    bool stop;
    bool writer_idle;  /* the writer waits for rows: wake it for a batch */
    bool loop_blocked; /* the loop waits for room: tell it when there is */
    struct rec_job *jobs_head, *jobs_tail;
    size_t jobs_count;
    uint64_t jobs_dropped;
    uint64_t written;      /* write rows committed (runs.rows_recorded) */
    uint64_t write_errors; /* batches that failed (each is tried again) */
    bool failing;          /* the last try to write failed */
    bool recovered;        /* it wrote again: the loop may stop shedding */
    int64_t failing_since_ns;
    uint64_t lost_shutdown; /* writes given up at shutdown */
    int64_t stop_since_ns;
    unsigned grace_ms;   /* a failing store's time at shutdown (REC_SHUTDOWN_GRACE_MS) */
    atomic_bool give_up; /* a second signal: stop waiting for the store */
    char last_error[256];
    uint64_t wlost[REC_LOST__COUNT]; /* writes the writer could not keep, by reason */
    /* read rows (REC_ROW_READ) apart: they are not in runs.rows_recorded,
     * which counts writes; their losses are counted here by reason */
    uint64_t reads_written, reads_written0; /* committed; at the current file's start */
    uint64_t rlost[REC_LOST__COUNT];        /* reads not recorded, by reason */
    uint64_t reads_lost_shutdown;
    /* issue 22: evictions/deletions (REC_ROW_EVENT) and snapshot items
     * (REC_ROW_ITEM) committed, apart from writes and reads */
    uint64_t events_written, items_written;
    uint64_t spill_batches, spill_rows, spill_bytes; /* the spill's backlog now */
    uint64_t spilled, shipped; /* writes put into the spill, and shipped from it */
    bool sink_ready;           /* the sink is open and the run begun */
    /* writer thread only */
    struct spill *spill;  /* NULL: none (rows of a failing sink wait, then are shed) */
    struct rec_row *ship; /* REC_BATCH_MAX rows read back from the spill */
    int64_t batch_no;     /* the last batch's number in the run */
    int64_t next_ship_ns, next_open_ns;
    unsigned ship_backoff;
    bool outage_spilled;   /* this outage's rows went to the spill (logged once) */
    const char *db;        /* --db: for a sink opened late */
    struct sink_run run;   /* the run row it begins then */
    struct rec_row *batch; /* REC_BATCH_MAX rows copied out of the ring */
    struct log_throttle write_throttle;
    /* loop thread only */
    enum rec_on_full on_full;
    struct rec_row *stage; /* REC_STAGE_ROWS rows waiting for rec_flush */
    size_t stage_count;
    uv_check_t flusher;    /* flushes the stage after every loop iteration */
    struct rec_row *stash; /* rows that did not fit while blocked */
    size_t stash_count, stash_cap;
    bool blocked;
    bool shedding;         /* the writer fails past max_stall: drop, do not block */
    unsigned max_stall_ms; /* --max-stall */
    uv_timer_t stall_timer;
    uint64_t pushed, dropped, stalls;
    uint64_t lost[REC_LOST__COUNT]; /* writes not recorded, by reason (loop's view) */
    struct log_throttle stash_throttle;
    uv_async_t wake; /* writer -> loop: space freed */
    void (*on_unblock)(void *ud);
    void *ud;
    pthread_t thread;
    bool thread_started;
    struct sink *sink;
    int64_t run_id;              /* under mu while the sink is not ready */
    struct query_queue *queries; /* under mu: run by the writer between batches */
    /* retention and rotation (record/retain.h; SQLite only) */
    struct retain retain;            /* writer thread only */
    struct retain_stats retain_view; /* under mu: the writer's copy for /health, /metrics */
    const char *rotate;              /* --db PATTERN (NULL: one file) */
    char store_path[1024];           /* under mu: the file written now */
    uint64_t written0;               /* under mu: r->written when this file's run began */
    uint64_t rotations;              /* under mu */
    int64_t next_rotate_ns;          /* writer: a failed rotation is tried again then */
    /* the file deleted or replaced under the writer (store_file_check) */
    enum store_file_state file_fault; /* under mu: STORE_FILE_OK, or what is wrong */
    int64_t file_fault_ns;            /* under mu: when it was seen */
    uint64_t file_events;             /* under mu: faults seen */
    int64_t next_file_check_ns;       /* writer */
    uint64_t dropped_view;            /* under mu: the loop's dropped, for the runs row */
    uint64_t mc_dropped_view;         /* under mu: lost[REC_LOST_MEMCACHED_DROPPED], likewise */
    unsigned wal_pages;               /* the WAL's bound in pages (0: SQLite's) */
    uint64_t wal_max;                 /* --wal-max (0: none) */
    bool wal_over;                    /* writer: past it, rows counted wal_full */
    uint64_t wal_lost0;               /* writer: wal_full writes when it began */
    bool full_logged;                 /* writer: making room on a full disk, logged once */
};

struct rec_config {
    size_t cap; /* --queue ROWS */
    enum rec_on_full on_full;
    /* how long a FAILING sink may keep clients waiting (block mode; 0:
     * REC_DEFAULT_MAX_STALL_MS); after it rows go to the spill, or without
     * one, rows that do not fit are dropped and counted until the sink
     * writes again. A slow sink blocks as long as it needs. */
    unsigned max_stall_ms;
    struct spill *spill; /* an open spill file, owned from rec_open on; NULL: none */
    /* for a sink that is not open (run_id < 0): what opens it and its run */
    const char *db;
    struct sink_run run;
    /* SQLite: expire old rows (--retain, --max-db-size), and rotate to the
     * file rotate expands to (strftime, UTC) when it changes; path: the
     * file open now (the expansion at start) */
    struct retain_cfg retain;
    const char *rotate;
    const char *path;
    /* SQLite: the WAL checkpointed at this many pages and truncated to
     * them (0: SQLite's 1000), for a disk with little room beside the
     * bound (retain_room) */
    unsigned wal_pages;
    /* SQLite: --wal-max, the WAL's bound in bytes (0: none). A reader that
     * holds one snapshot keeps the WAL from starting over after a
     * checkpoint; past the bound, batches' rows are not written but counted
     * lost (wal_full) -- nobody waits -- until a checkpoint gets every
     * frame into the file (the reader is done), then the next commit
     * starts the WAL over. Logged once each time, with the reader's pid. */
    uint64_t wal_max;
};
/* --wal-max's default */
#define REC_DEFAULT_WAL_MAX ((uint64_t)256 << 20)

/* The sink is open with its run begun (run_id), or closed (run_id -1: the
 * writer opens it with cfg->db and begins cfg->run). The recorder owns the
 * sink and the spill from now on and closes them in rec_close, which must
 * be called whatever this returns. Returns 0, or -1 with the reason in err
 * (errlen bytes). */
int rec_open(struct recorder *r, uv_loop_t *loop, struct sink *sink, int64_t run_id,
             const struct rec_config *cfg, void (*on_unblock)(void *), void *ud, char *err,
             size_t errlen);
/* Loop thread. Never blocks on the writer: stages the row. */
void rec_push(struct recorder *r, const struct rec_row *row);
/* Moves staged rows into the ring (one lock); sets rec_blocked() when the
 * ring is full in block mode. Called by the flusher and by the proxy after
 * each read so a full queue pauses reading at once. */
void rec_flush(struct recorder *r);
/* Loop thread. Takes ownership of job (freed even when dropped); false
 * when it was dropped (REC_JOBS_MAX queued) and counted in jobs_dropped. */
bool rec_push_job(struct recorder *r, struct rec_job *job);
bool rec_blocked(const struct recorder *r);
/* Loop thread: the writer runs one step of q's pending queries between
 * batches (record/query.h), each within its time budget. */
void rec_set_queries(struct recorder *r, struct query_queue *q);
/* Any thread: wakes the writer (a query_queue's wake callback; ud: r). */
void rec_wake_writer(void *r);
/* A second Ctrl-C: no more waiting for the store at shutdown (what it has
 * not written is counted as lost). Any thread, or a signal handler. */
void rec_give_up(struct recorder *r);
/* Loop thread: n rows the proxy could not make, for reason: a multiget's
 * keys past what the parser keeps of its line (read_key_cut), or past
 * what memory allowed to keep until the answer (read_key_nomem), or lines
 * memcached dropped before a watcher got them (memcached_dropped: these
 * count in runs.rows_dropped). */
void rec_count_lost(struct recorder *r, enum rec_loss reason, uint64_t n);
/* Writes lost so far for reason (loop thread; includes what the writer gave
 * up at shutdown once rec_close has returned). */
uint64_t rec_lost(struct recorder *r, enum rec_loss reason);
/* The writer's state, for /health: failing since (0: not failing). */
int64_t rec_failing_since(struct recorder *r, char *err, size_t errlen);
/* The SQLite file (or its WAL) was deleted or replaced while recording and
 * recording has not yet gone on in a new file at the path, open and
 * checked: what is wrong (since: when it was seen); STORE_FILE_OK when
 * nothing is. events: faults seen since the start. */
enum store_file_state rec_file_fault(struct recorder *r, int64_t *since, uint64_t *events);
/* Writes recorded into files that still hold them (those of a deleted
 * file are counted lost instead: file_deleted), and all lost writes
 * (every reason); loop thread. */
uint64_t rec_recorded(struct recorder *r);
uint64_t rec_lost_total(struct recorder *r);
/* Read rows committed (the files still there), and read rows not recorded
 * by reason and in all: the queue's drops (queue_full, shutdown from the
 * loop) are counted with the writes in rec_lost, every loss on the writer's
 * side here. */
uint64_t rec_reads_recorded(struct recorder *r);
uint64_t rec_reads_lost(struct recorder *r, enum rec_loss reason);
uint64_t rec_reads_lost_total(struct recorder *r);
/* Every count above at once (any thread while open; rec_close fills one
 * with the final counts, which are read from nothing else after it). */
struct rec_totals {
    uint64_t recorded, lost[REC_LOST__COUNT], lost_total;
    uint64_t reads_recorded, reads_lost[REC_LOST__COUNT], reads_lost_total;
    uint64_t events_recorded, items_recorded; /* issue 22: item_events, snapshot_items */
};
void rec_totals(struct recorder *r, struct rec_totals *out);
/* The spill's backlog (rows, bytes) and the writes spilled and shipped. */
struct rec_spill_state {
    bool enabled;
    uint64_t batches, rows, bytes, spilled, shipped;
};
void rec_spill_state(struct recorder *r, struct rec_spill_state *out);
/* The run being recorded: its id, or -1 while the sink is not open yet. */
int64_t rec_run_id(struct recorder *r);
/* Recording is degraded -- the sink is not open, fails, or rows wait in the
 * spill -- and why (into why); false when every row reaches the sink. */
bool rec_degraded(struct recorder *r, char *why, size_t whylen);
size_t rec_depth(struct recorder *r);
/* Retention's figures (record/retain.h) and the file written now (path,
 * pathlen bytes; rotation changes it), any thread. */
void rec_retain_state(struct recorder *r, struct retain_stats *out, char *path, size_t pathlen,
                      uint64_t *rotations);
/* Flushes the stash and the ring, stops the thread, finishes the run row,
 * closes the store. Blocks: call once, at shutdown, after the loop is idle.
 * totals (NULL: not wanted) gets the final counts: no accessor may be
 * called once this has returned (the lock is gone). 0, or -1 with the
 * reason in err when a batch or the run row could not be written. */
int rec_close(struct recorder *r, struct rec_totals *totals, char *err, size_t errlen);

#endif
