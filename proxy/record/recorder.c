/* recorder: bounded queue from the event loop to one SQLite writer thread.
 * The loop thread copies rows in under a short lock and never waits for the
 * writer; the writer copies a batch out, unlocks, then commits it. */
#include "record/recorder.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "record/query.h"
#include "record/store.h"

#define REC_BATCH_MAX 4096
/* Reading resumes once the ring is at most this full (percent), so the
 * proxy does not flap between paused and reading on every batch. */
#define REC_RESUME_PCT 50
/* The loop wakes the writer only once this many rows wait (or a job, or
 * the end); otherwise the writer looks again after REC_LINGER_MS. One
 * futex wake and one transaction per thousands of rows, not per loop
 * iteration, and a row waits at most REC_LINGER_MS plus a commit. */
#define REC_WAKE_ROWS 2048
#define REC_LINGER_MS 20

void rec_job_free(struct rec_job *j)
{
    if (!j)
        return;
    for (size_t i = 0; i < j->nclasses; i++)
        free(j->class_json[i]);
    free(j->class_json);
    free(j->class_ids);
    free(j->text);
    free(j->version);
    free(j);
}

static const char *const rec_loss_labels[] = {
#define REC_LOSS_LABEL(name, label) label,
    REC_LOSS_REASONS(REC_LOSS_LABEL)
#undef REC_LOSS_LABEL
};

const char *rec_loss_label(enum rec_loss reason)
{
    return (unsigned)reason < REC_LOST__COUNT ? rec_loss_labels[reason] : "?";
}

static size_t rec_count_writes(const struct rec_row *rows, size_t n)
{
    size_t writes = 0; /* runs.rows_recorded counts writes, not read counters */
    for (size_t i = 0; i < n; i++)
        writes += rows[i].kind == REC_ROW_WRITE;
    return writes;
}

static void rec_free_jobs(struct rec_job *jobs)
{
    while (jobs) {
        struct rec_job *next = jobs->next;
        rec_job_free(jobs);
        jobs = next;
    }
}

/* Writer thread: one transaction for the batch. A failure rolls back and
 * returns -1; the caller keeps the batch and tries again. Logged here, at
 * most once a second (a full disk fails every try): nobody else could. */
static int rec_commit(struct recorder *r, const struct rec_row *rows, size_t n,
                      struct rec_job *jobs)
{
    char err[1536] = "";
    size_t njobs = 0;
    int rc = store_begin(r->store, err, sizeof err);
    for (size_t i = 0; i < n && !rc; i++)
        rc = store_put_row(r->store, r->run_id, &rows[i], err, sizeof err);
    for (struct rec_job *j = jobs; j; j = j->next, njobs++)
        if (!rc)
            rc = store_put_job(r->store, r->run_id, j, err, sizeof err);
    if (store_commit(r->store, rc, err, sizeof err))
        rc = -1;
    pthread_mutex_lock(&r->mu);
    if (rc) {
        r->write_errors++;
        if (!r->failing) {
            r->failing = true;
            r->failing_since_ns = clock_wall_ns();
        }
        snprintf(r->last_error, sizeof r->last_error, "%s", err);
    } else {
        r->written += rec_count_writes(rows, n);
    }
    pthread_mutex_unlock(&r->mu);
    if (rc)
        log_throttled(&r->write_throttle, LOG_LEVEL_ERROR, NULL,
                      "recorder: a batch of %zu rows and %zu jobs was not written (kept, tried "
                      "again): %s",
                      n, njobs, err);
    return rc;
}

/* Writer thread, under mu: waits ms, or less when stopped. */
static void rec_writer_sleep(struct recorder *r, unsigned ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    until.tv_sec += ms / 1000 + until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    if (!r->stop)
        pthread_cond_timedwait(&r->cv, &r->mu, &until);
}

/* Writer thread, under mu (released while writing): the batch is written,
 * tried again with backoff while the store fails -- never dropped -- until
 * the store writes again, or the recorder is stopping and has given the
 * store REC_SHUTDOWN_GRACE_MS. */
static void rec_write_batch(struct recorder *r, const struct rec_row *batch, size_t n,
                            struct rec_job *jobs)
{
    unsigned backoff = REC_RETRY_MIN_MS;
    for (;;) {
        pthread_mutex_unlock(&r->mu);
        int rc = rec_commit(r, batch, n, jobs);
        pthread_mutex_lock(&r->mu);
        if (rc == 0) {
            if (r->failing) {
                log_info("recorder: writing again after %.1f s of failures",
                         (double)(clock_wall_ns() - r->failing_since_ns) / 1e9);
                r->failing = false;
                r->recovered = true; /* the loop stops shedding */
                uv_async_send(&r->wake);
            }
            break;
        }
        if (r->stop && (atomic_load(&r->give_up) ||
                        clock_wall_ns() - r->stop_since_ns >= (int64_t)r->grace_ms * 1000000)) {
            r->lost_shutdown += rec_count_writes(batch, n); /* given up: counted */
            break;
        }
        rec_writer_sleep(r, backoff);
        backoff = backoff * 2 > REC_RETRY_MAX_MS ? REC_RETRY_MAX_MS : backoff * 2;
    }
    pthread_mutex_unlock(&r->mu);
    rec_free_jobs(jobs);
    pthread_mutex_lock(&r->mu);
}

static size_t rec_wake_rows(const struct recorder *r)
{
    return r->cap / 4 < REC_WAKE_ROWS ? (r->cap / 4 ? r->cap / 4 : 1) : REC_WAKE_ROWS;
}

/* Under mu: until there is a batch worth writing, a job, the end, or rows
 * that have waited REC_LINGER_MS. */
static void rec_writer_wait(struct recorder *r)
{
    struct timespec until;
    bool lingering = false;
    while (!r->stop && !r->jobs_head && r->count < rec_wake_rows(r) && !r->loop_blocked &&
           !(r->queries && query_pending(r->queries))) {
        r->writer_idle = true;
        if (r->count == 0) {
            lingering = false;
            pthread_cond_wait(&r->cv, &r->mu);
        } else if (!lingering) {
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += REC_LINGER_MS * 1000000L;
            until.tv_sec += until.tv_nsec / 1000000000L;
            until.tv_nsec %= 1000000000L;
            lingering = true;
        } else if (pthread_cond_timedwait(&r->cv, &r->mu, &until) == ETIMEDOUT) {
            break;
        }
    }
    r->writer_idle = false;
}

static void *rec_writer(void *arg)
{
    struct recorder *r = arg;
    struct rec_row *batch = r->batch;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        rec_writer_wait(r);
        if (r->queries && !r->stop && query_pending(r->queries)) {
            /* one step of a web API query between batches (its time budget) */
            struct query_queue *q = r->queries;
            pthread_mutex_unlock(&r->mu);
            query_step(q, r->store->db);
            pthread_mutex_lock(&r->mu);
            if (r->count == 0 && !r->jobs_head && !r->stop)
                continue;
        }
        if (r->count == 0 && !r->jobs_head && r->stop)
            break;
        if (r->stop && atomic_load(&r->give_up)) {
            /* a second signal: what is still queued is counted, not written */
            while (r->count > 0) {
                r->lost_shutdown += r->ring[r->head].kind == REC_ROW_WRITE;
                r->head = (r->head + 1) % r->cap;
                r->count--;
            }
            rec_free_jobs(r->jobs_head);
            r->jobs_head = r->jobs_tail = NULL;
            break;
        }
        size_t n = 0;
        while (n < REC_BATCH_MAX && r->count > 0) {
            batch[n++] = r->ring[r->head];
            r->head = (r->head + 1) % r->cap;
            r->count--;
        }
        struct rec_job *jobs = r->jobs_head;
        r->jobs_head = r->jobs_tail = NULL;
        r->jobs_count = 0;
        bool wake = r->loop_blocked && r->count * 100 <= r->cap * REC_RESUME_PCT;
        if (wake)
            uv_async_send(&r->wake);
        rec_write_batch(r, batch, n, jobs);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* Moves stashed rows into the ring; true when the stash is empty. */
static bool rec_unstash(struct recorder *r)
{
    size_t moved = 0;
    pthread_mutex_lock(&r->mu);
    while (moved < r->stash_count && r->count < r->cap) {
        r->ring[(r->head + r->count) % r->cap] = r->stash[moved++];
        r->count++;
    }
    if (moved)
        pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    memmove(r->stash, r->stash + moved, (r->stash_count - moved) * sizeof *r->stash);
    r->stash_count -= moved;
    return r->stash_count == 0;
}

static void rec_on_wake(uv_async_t *h)
{
    struct recorder *r = h->data;
    pthread_mutex_lock(&r->mu);
    bool recovered = r->recovered;
    r->recovered = false;
    pthread_mutex_unlock(&r->mu);
    if (recovered && r->shedding) {
        r->shedding = false;
        log_info("recorder: recording every row again; %llu rows lost while the store failed",
                 (unsigned long long)r->lost[REC_LOST_WRITE_ERROR]);
    }
    if (!r->blocked)
        return;
    if (!rec_unstash(r))
        return;
    pthread_mutex_lock(&r->mu);
    bool low = r->count * 100 <= r->cap * REC_RESUME_PCT;
    pthread_mutex_unlock(&r->mu);
    if (low) {
        pthread_mutex_lock(&r->mu);
        r->loop_blocked = false;
        pthread_mutex_unlock(&r->mu);
        r->blocked = false;
        if (r->on_unblock)
            r->on_unblock(r->ud);
    }
}

static void rec_on_check(uv_check_t *h)
{
    rec_flush(h->data);
}

/* Clients have waited max_stall_ms for room. A store that is only slow
 * keeps them waiting (nothing is lost); one that fails sheds: what does not
 * fit is dropped and counted until it writes again. */
static void rec_on_stall(uv_timer_t *t)
{
    struct recorder *r = t->data;
    char why[256];
    if (!r->blocked)
        return;
    pthread_mutex_lock(&r->mu);
    bool failing = r->failing;
    snprintf(why, sizeof why, "%s", r->last_error);
    pthread_mutex_unlock(&r->mu);
    if (!failing) {
        uv_timer_start(&r->stall_timer, rec_on_stall, r->max_stall_ms, 0);
        return;
    }
    r->shedding = true;
    r->lost[REC_LOST_WRITE_ERROR] += r->stash_count;
    r->dropped += r->stash_count;
    log_warn("recorder: the store fails (%s); after %u ms of waiting, rows that do not fit the "
             "queue are dropped and counted until it writes again",
             why, r->max_stall_ms);
    r->stash_count = 0;
    pthread_mutex_lock(&r->mu);
    r->loop_blocked = false;
    pthread_mutex_unlock(&r->mu);
    r->blocked = false;
    if (r->on_unblock)
        r->on_unblock(r->ud);
}

int rec_open(struct recorder *r, uv_loop_t *loop, struct store *store, int64_t run_id, size_t cap,
             enum rec_on_full on_full, void (*on_unblock)(void *), void *ud, char *err,
             size_t errlen)
{
    int rc = -1;
    memset(r, 0, sizeof *r);
    /* everything rec_close tears down exists from here on, failed or not */
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->store = store;
    r->run_id = run_id;
    r->cap = cap < 16 ? 16 : cap;
    r->ring = malloc(sizeof *r->ring * r->cap);
    r->stage = malloc(sizeof *r->stage * REC_STAGE_ROWS);
    /* the writer's batch too, so the thread itself cannot fail */
    r->batch = malloc(sizeof *r->batch * REC_BATCH_MAX);
    if (!r->ring || !r->stage || !r->batch) {
        snprintf(err, errlen, "cannot allocate a queue of %zu rows", r->cap);
        goto out;
    }
    r->on_full = on_full;
    r->on_unblock = on_unblock;
    r->ud = ud;
    uv_async_init(loop, &r->wake, rec_on_wake);
    r->wake.data = r;
    uv_check_init(loop, &r->flusher);
    r->flusher.data = r;
    uv_check_start(&r->flusher, rec_on_check);
    uv_unref((uv_handle_t *)&r->flusher); /* never what keeps the loop alive */
    uv_timer_init(loop, &r->stall_timer);
    r->stall_timer.data = r;
    uv_unref((uv_handle_t *)&r->stall_timer);
    r->max_stall_ms = REC_DEFAULT_MAX_STALL_MS;
    r->grace_ms = REC_SHUTDOWN_GRACE_MS;
    if (pthread_create(&r->thread, NULL, rec_writer, r)) {
        snprintf(err, errlen, "cannot start the writer thread");
        goto out;
    }
    r->thread_started = true;
    rc = 0;
out:
    return rc;
}

static void rec_stash(struct recorder *r, const struct rec_row *row)
{
    if (r->stash_count == r->stash_cap) {
        /* bounded by what one read callback can produce before the proxy
         * pauses every connection; grows once, then is reused */
        size_t ncap = r->stash_cap ? r->stash_cap * 2 : 1024;
        struct rec_row *n = realloc(r->stash, ncap * sizeof *n);
        if (!n) {
            r->dropped++;
            log_throttled(&r->stash_throttle, LOG_LEVEL_ERROR, NULL,
                          "recorder: out of memory for %zu stashed rows; a row was dropped", ncap);
            return;
        }
        r->stash = n;
        r->stash_cap = ncap;
    }
    r->stash[r->stash_count++] = *row;
}

void rec_give_up(struct recorder *r)
{
    atomic_store(&r->give_up, true); /* async-signal-safe: a handler may call it */
}

void rec_flush(struct recorder *r)
{
    size_t moved = 0, n = r->stage_count;
    if (!n)
        return;
    pthread_mutex_lock(&r->mu);
    while (moved < n && r->count < r->cap) {
        r->ring[(r->head + r->count) % r->cap] = r->stage[moved++];
        r->count++;
    }
    bool full = moved < n && r->on_full == REC_BLOCK && !r->shedding;
    if (full)
        r->loop_blocked = true;
    if (r->writer_idle && (r->count >= rec_wake_rows(r) || full))
        pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    r->pushed += moved;
    r->stage_count = 0;
    if (moved == n)
        return;
    if (r->on_full == REC_DROP || r->shedding) {
        r->dropped += n - moved;
        r->lost[r->shedding ? REC_LOST_WRITE_ERROR : REC_LOST_QUEUE_FULL] += n - moved;
        return;
    }
    r->blocked = true;
    r->stalls++;
    uv_timer_start(&r->stall_timer, rec_on_stall, r->max_stall_ms, 0);
    for (size_t i = moved; i < n; i++) {
        rec_stash(r, &r->stage[i]);
        r->pushed++;
    }
}

void rec_push(struct recorder *r, const struct rec_row *row)
{
    if (r->blocked) {
        rec_stash(r, row);
        r->pushed++;
        return;
    }
    r->stage[r->stage_count++] = *row;
    if (r->stage_count == REC_STAGE_ROWS)
        rec_flush(r);
}

bool rec_push_job(struct recorder *r, struct rec_job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&r->mu);
    bool room = r->jobs_count < REC_JOBS_MAX;
    if (room) {
        if (r->jobs_tail)
            r->jobs_tail->next = job;
        else
            r->jobs_head = job;
        r->jobs_tail = job;
        r->jobs_count++;
        pthread_cond_signal(&r->cv);
    } else {
        r->jobs_dropped++;
    }
    pthread_mutex_unlock(&r->mu);
    if (!room)
        rec_job_free(job);
    return room;
}

void rec_set_queries(struct recorder *r, struct query_queue *q)
{
    pthread_mutex_lock(&r->mu);
    r->queries = q;
    pthread_mutex_unlock(&r->mu);
}

void rec_wake_writer(void *ud)
{
    struct recorder *r = ud;
    pthread_mutex_lock(&r->mu);
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

bool rec_blocked(const struct recorder *r)
{
    return r->blocked;
}

uint64_t rec_lost(struct recorder *r, enum rec_loss reason)
{
    return (unsigned)reason < REC_LOST__COUNT ? r->lost[reason] : 0;
}

int64_t rec_failing_since(struct recorder *r, char *err, size_t errlen)
{
    pthread_mutex_lock(&r->mu);
    int64_t since = r->failing ? r->failing_since_ns : 0;
    if (since && err)
        snprintf(err, errlen, "%s", r->last_error);
    pthread_mutex_unlock(&r->mu);
    return since;
}

size_t rec_depth(struct recorder *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->count;
    pthread_mutex_unlock(&r->mu);
    return n + r->stash_count + r->stage_count;
}

int rec_close(struct recorder *r, char *err, size_t errlen)
{
    int rc = 0;
    if (r->stage)
        rec_flush(r);
    if (r->thread_started) {
        /* the loop is idle now: waiting here is allowed -- for a store that
         * writes, as long as it takes; for one that fails, grace_ms */
        int64_t t0 = clock_wall_ns();
        while (r->stash_count) {
            rec_unstash(r);
            if (!r->stash_count)
                break;
            pthread_mutex_lock(&r->mu);
            bool failing = r->failing;
            pthread_cond_signal(&r->cv);
            pthread_mutex_unlock(&r->mu);
            if ((failing && clock_wall_ns() - t0 >= (int64_t)r->grace_ms * 1000000) ||
                atomic_load(&r->give_up)) {
                size_t writes = rec_count_writes(r->stash, r->stash_count);
                r->lost[REC_LOST_SHUTDOWN] += writes;
                r->stash_count = 0;
                break;
            }
            uv_sleep(1);
        }
        pthread_mutex_lock(&r->mu);
        r->stop = true;
        r->stop_since_ns = t0;
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
        r->thread_started = false;
        r->lost[REC_LOST_SHUTDOWN] += r->lost_shutdown;
        if (r->lost[REC_LOST_SHUTDOWN])
            log_error("recorder: the store still failed at shutdown: %llu writes not recorded",
                      (unsigned long long)r->lost[REC_LOST_SHUTDOWN]);
    }
    while (r->jobs_head) { /* only left when the thread never started */
        struct rec_job *j = r->jobs_head;
        r->jobs_head = j->next;
        rec_job_free(j);
    }
    if (r->lost[REC_LOST_SHUTDOWN]) {
        /* failed tries that succeeded later lost nothing; these did */
        snprintf(err, errlen, "%llu writes could not be recorded before exit",
                 (unsigned long long)r->lost[REC_LOST_SHUTDOWN]);
        rc = -1;
    }
    if (r->store) {
        if (store_run_end(r->store, r->run_id, r->written, r->dropped + r->lost[REC_LOST_SHUTDOWN],
                          err, errlen))
            rc = -1;
        store_close(r->store);
        r->store = NULL;
    }
    if (r->wake.loop && !uv_is_closing((uv_handle_t *)&r->wake))
        uv_close((uv_handle_t *)&r->wake, NULL);
    if (r->flusher.loop && !uv_is_closing((uv_handle_t *)&r->flusher))
        uv_close((uv_handle_t *)&r->flusher, NULL);
    if (r->stall_timer.loop && !uv_is_closing((uv_handle_t *)&r->stall_timer))
        uv_close((uv_handle_t *)&r->stall_timer, NULL);
    free(r->ring);
    free(r->stage);
    free(r->batch);
    r->stage = NULL;
    r->batch = NULL;
    free(r->stash);
    r->ring = r->stash = NULL;
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    return rc;
}
