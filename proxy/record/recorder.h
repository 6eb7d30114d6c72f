/* recorder: the bounded queue between the event loop and the one thread
 * that writes rows to SQLite.
 *
 * Owns the writer thread, the ring of rows and the overflow stash.
 * Must never make the loop thread wait on SQLite or on the writer: rec_push
 * only takes a short lock to copy a row. In block mode a full ring sends
 * rows to the stash and sets rec_blocked() so the proxy stops reading until
 * the writer has drained (the writer wakes the loop through uv_async);
 * in drop mode rows are dropped and counted. Must never print what it can
 * return: only a batch the writer thread could not write (it has no caller)
 * and a row lost to a failed allocation are logged, throttled. */
#ifndef SLABTAP_RECORDER_H
#define SLABTAP_RECORDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/log.h"
#include "record/row.h"

struct store;

/* Frees a job and everything it holds. */
void rec_job_free(struct rec_job *j);

enum rec_on_full { REC_BLOCK, REC_DROP };

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
    uint64_t written; /* write rows committed (runs.rows_recorded) */
    uint64_t write_errors;
    /* writer thread only */
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
    uint64_t pushed, dropped, stalls;
    struct log_throttle stash_throttle;
    uv_async_t wake; /* writer -> loop: space freed */
    void (*on_unblock)(void *ud);
    void *ud;
    pthread_t thread;
    bool thread_started;
    struct store *store;
    int64_t run_id;
};

/* cap = --queue ROWS. The store must be open; the recorder owns it from now
 * on and closes it in rec_close, which must be called whatever this
 * returns. Returns 0, or -1 with the reason in err (errlen bytes). */
int rec_open(struct recorder *r, uv_loop_t *loop, struct store *store, int64_t run_id, size_t cap,
             enum rec_on_full on_full, void (*on_unblock)(void *), void *ud, char *err,
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
size_t rec_depth(struct recorder *r);
/* Flushes the stash and the ring, stops the thread, finishes the run row,
 * closes the store. Blocks: call once, at shutdown, after the loop is idle.
 * 0, or -1 with the reason in err when a batch or the run row could not be
 * written. */
int rec_close(struct recorder *r, char *err, size_t errlen);

#endif
