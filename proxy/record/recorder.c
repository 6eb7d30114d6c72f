/* recorder: bounded queue from the event loop to one writer thread that
 * commits batches to the sink (SQLite or PostgreSQL), spills them while a
 * remote sink fails and ships them back in order. The loop thread copies
 * rows in under a short lock and never waits for the writer; the writer
 * copies a batch out, unlocks, then commits it. */
#include "record/recorder.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "record/dblock.h"
#include "record/query.h"
#include "record/sink.h"
#include "record/spill.h"

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
    free(j->target);
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
        writes += rows[i].kind == REC_ROW_WRITE && !rows[i].sampled_out;
    return writes;
}

static size_t rec_count_reads(const struct rec_row *rows, size_t n)
{
    size_t reads = 0;
    for (size_t i = 0; i < n; i++)
        reads += rows[i].kind == REC_ROW_READ && !rows[i].sampled_out;
    return reads;
}

/* Rows of one kind (REC_ROW_EVENT, REC_ROW_ITEM) a batch stores. */
static size_t rec_count_kind(const struct rec_row *rows, size_t n, enum rec_row_kind kind)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += rows[i].kind == kind && !rows[i].sampled_out;
    return k;
}

static void rec_free_jobs(struct rec_job *jobs)
{
    while (jobs) {
        struct rec_job *next = jobs->next;
        rec_job_free(jobs);
        jobs = next;
    }
}

static void rec_time_text(int64_t ns, char *out, size_t outlen)
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Writer thread: one transaction for the batch of run_id, numbered
 * batch_no. recheck: an earlier try may have committed it (its answer
 * lost): the sink is asked first, and a batch it has is not sent again. A
 * failure rolls back and returns -1; the caller keeps the batch. The
 * outage is logged once when it starts and once when it ends (a full disk
 * or a server that is gone fails every try): nobody else could. own: the
 * rows are the running run's (runs.rows_recorded counts them). */
static int rec_commit(struct recorder *r, const struct rec_row *rows, size_t n,
                      struct rec_job *jobs, int64_t run_id, int64_t batch_no, bool recheck,
                      bool own)
{
    char err[1536] = "";
    size_t njobs = 0;
    int rc = 0;
    bool already = recheck && batch_no > 0 && sink_committed_batch(r->sink, run_id) >= batch_no;
    if (!already) {
        rc = sink_begin(r->sink, err, sizeof err);
        for (size_t i = 0; i < n && !rc; i++)
            rc = sink_put_row(r->sink, run_id, &rows[i], err, sizeof err);
        for (struct rec_job *j = jobs; j; j = j->next, njobs++)
            if (!rc)
                rc = sink_put_job(r->sink, run_id, j, err, sizeof err);
        if (!rc && own && sink_sqlite(r->sink)) {
            /* the runs row says what the file holds with every batch, so a
             * run that cannot end (a full disk at exit) still reads true */
            pthread_mutex_lock(&r->mu);
            uint64_t recorded = r->written - r->written0 + rec_count_writes(rows, n);
            uint64_t lost = r->dropped_view + r->lost_shutdown + r->mc_dropped_view;
            for (int i = 0; i < REC_LOST__COUNT; i++)
                lost += r->wlost[i];
            pthread_mutex_unlock(&r->mu);
            rc = store_put_counts(&r->sink->sq, run_id, recorded, lost, err, sizeof err);
        }
        if (sink_commit(r->sink, run_id, batch_no, rc, err, sizeof err))
            rc = -1;
    }
    char t0[32], t1[32];
    pthread_mutex_lock(&r->mu);
    bool started = false, ended = false;
    int64_t since = r->failing_since_ns, now = clock_wall_ns();
    if (rc) {
        r->write_errors++;
        if (!r->failing) {
            r->failing = true;
            r->failing_since_ns = since = now;
            started = true;
        }
        snprintf(r->last_error, sizeof r->last_error, "%.*s", (int)sizeof r->last_error - 1, err);
    } else {
        if (own) {
            r->written += rec_count_writes(rows, n);
            r->reads_written += rec_count_reads(rows, n);
            r->events_written += rec_count_kind(rows, n, REC_ROW_EVENT);
            r->items_written += rec_count_kind(rows, n, REC_ROW_ITEM);
        }
        if (r->failing) {
            r->failing = false;
            r->recovered = true; /* the loop stops shedding */
            ended = true;
            uv_async_send(&r->wake);
        }
    }
    uint64_t backlog = r->spill_rows;
    pthread_mutex_unlock(&r->mu);
    rec_time_text(since, t0, sizeof t0);
    rec_time_text(now, t1, sizeof t1);
    if (started)
        log_error("recorder: %s: outage from %s: a batch of %zu rows and %zu jobs was not written "
                  "(kept, tried again%s): %s",
                  sink_name(r->sink), t0, n, njobs,
                  r->spill ? "; spilled once it has failed for --max-stall" : "", err);
    else if (rc)
        log_throttled(&r->write_throttle, LOG_LEVEL_DEBUG, NULL,
                      "recorder: still failing: a batch of %zu rows and %zu jobs: %s", n, njobs,
                      err);
    if (ended) {
        log_info("recorder: %s: outage over: from %s to %s (%.1f s)%s", sink_name(r->sink), t0, t1,
                 (double)(now - since) / 1e9, backlog ? "; shipping the spill" : "");
        if (backlog)
            log_info("recorder: %llu rows wait in the spill, shipped oldest first",
                     (unsigned long long)backlog);
    }
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

/* Writer thread: the spill's counts, for the loop's /metrics and /health. */
static void rec_spill_mirror(struct recorder *r)
{
    pthread_mutex_lock(&r->mu);
    r->spill_batches = r->spill->batches;
    r->spill_rows = r->spill->rows;
    r->spill_bytes = r->spill->bytes;
    pthread_mutex_unlock(&r->mu);
}

/* Writer thread: the sink opened late (--record-optional) and its run
 * begun; 0, or -1 (tried again after REC_RETRY_MAX_MS). */
static int rec_try_open(struct recorder *r)
{
    char err[1536];
    int64_t now = clock_wall_ns();
    if (now < r->next_open_ns)
        return -1;
    r->next_open_ns = now + (int64_t)REC_RETRY_MAX_MS * 1000000;
    int64_t id = -1;
    if (sink_open(r->sink, r->db, err, sizeof err) == 0 &&
        (id = sink_run_begin(r->sink, &r->run, err, sizeof err)) < 0)
        sink_close(r->sink);
    if (id < 0) {
        log_throttled(&r->write_throttle, LOG_LEVEL_DEBUG, NULL, "recorder: still no store: %s",
                      err);
        pthread_mutex_lock(&r->mu);
        snprintf(r->last_error, sizeof r->last_error, "%.*s", (int)sizeof r->last_error - 1, err);
        pthread_mutex_unlock(&r->mu);
        return -1;
    }
    pthread_mutex_lock(&r->mu);
    r->run_id = id;
    r->sink_ready = true;
    uint64_t lost = r->wlost[REC_LOST_STORE_UNAVAILABLE];
    pthread_mutex_unlock(&r->mu);
    log_info("recorder: %s: connected; recording from now on as run %lld (%llu writes were not "
             "recorded before: store_unavailable)",
             sink_name(r->sink), (long long)id, (unsigned long long)lost);
    return 0;
}

/* Writer thread: the batch into the spill. 0 when it is there (or was
 * counted lost because the spill is full), -1 when the spill failed. */
static int rec_spill_batch(struct recorder *r, const struct rec_row *batch, size_t n,
                           struct rec_job *jobs, int64_t batch_no)
{
    char err[1536];
    uint64_t writes = rec_count_writes(batch, n), reads = rec_count_reads(batch, n);
    enum spill_put_result res =
        spill_put(r->spill, r->run_id, batch_no, batch, n, jobs, err, sizeof err);
    if (res == SPILL_ERROR) {
        log_throttled(&r->stash_throttle, LOG_LEVEL_ERROR, NULL, "recorder: %s", err);
        return -1;
    }
    pthread_mutex_lock(&r->mu);
    if (res == SPILL_FULL) {
        r->wlost[REC_LOST_SPILL_FULL] += writes;
        r->rlost[REC_LOST_SPILL_FULL] += reads;
    } else
        r->spilled += writes;
    pthread_mutex_unlock(&r->mu);
    rec_spill_mirror(r);
    if (res == SPILL_FULL)
        log_throttled(&r->stash_throttle, LOG_LEVEL_ERROR, NULL,
                      "recorder: the spill %s is full (--spill-max %llu bytes): %llu writes "
                      "dropped and counted (spill_full)",
                      r->spill->path, (unsigned long long)r->spill->max_bytes,
                      (unsigned long long)writes);
    else if (!r->outage_spilled) {
        r->outage_spilled = true;
        log_warn("recorder: %s fails: rows go to the spill %s until it writes again, then are "
                 "shipped in order",
                 sink_name(r->sink), r->spill->path);
    }
    return 0;
}

/* --- retention and rotation (SQLite; record/retain.h) ------------------------ */

/* Writer thread, under mu (released meanwhile): one retention step between
 * batches, its figures mirrored for the loop. Never a failure of the
 * recording: a step that fails is logged (throttled) and tried again. */
static void rec_retain_run(struct recorder *r, size_t rows_in)
{
    sqlite3 *db = r->sink_ready ? sink_sqlite(r->sink) : NULL;
    if (!db || !retain_enabled(&r->retain) || r->failing || r->wal_over)
        return;
    char err[512];
    pthread_mutex_unlock(&r->mu);
    int rc = retain_step(&r->retain, db, clock_wall_ns(), rows_in, err, sizeof err);
    if (rc > 0)
        store_rows_expired(&r->sink->sq);
    else if (rc < 0)
        log_throttled(&r->write_throttle, LOG_LEVEL_WARN, NULL, "recorder: %s", err);
    pthread_mutex_lock(&r->mu);
    r->retain_view = r->retain.st;
}

/* The newest settings, the run's run_meta and its open phase, read from
 * the file being left, and each shadow's (issue 23) newest settings and
 * latest start and restart: the next file's run starts with them, so
 * `slabtap model` and the targets view read one day's file alone. Best
 * effort: NULL when none. */
static struct rec_job *rec_carry_jobs(sqlite3 *db, int64_t run_id)
{
    static const char *const sql[] = {
        "SELECT 0, t_ns, version, settings, NULL FROM settings WHERE run_id = ?1"
        " ORDER BY t_ns DESC LIMIT 1",
        "SELECT 1, 0, key, value, NULL FROM run_meta WHERE run_id = ?1 AND key != '" SINK_BATCH_KEY
        "'",
        "SELECT 2, started_ns, phase_id, name, NULL FROM phases WHERE run_id = ?1 AND ended_ns IS"
        " NULL ORDER BY phase_id DESC LIMIT 1",
        "SELECT 3, t_ns, version, settings, target FROM shadow_settings s WHERE run_id = ?1"
        " AND t_ns = (SELECT max(t_ns) FROM shadow_settings s2 WHERE s2.run_id = s.run_id"
        " AND s2.target = s.target)",
        "SELECT 4, t_ns, event, detail, target FROM shadow_events e WHERE run_id = ?1"
        " AND event IN ('started', 'restarted') AND t_ns = (SELECT max(t_ns) FROM shadow_events"
        " e2 WHERE e2.run_id = e.run_id AND e2.target = e.target AND e2.event = e.event)",
    };
    static const enum rec_job_kind kinds[] = { REC_JOB_SETTINGS, REC_JOB_META, REC_JOB_PHASE,
                                               REC_JOB_SETTINGS, REC_JOB_SHADOW_EVENT };
    struct rec_job *head = NULL, **tail = &head;
    for (size_t q = 0; q < sizeof sql / sizeof sql[0]; q++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, sql[q], -1, &st, NULL) != SQLITE_OK)
            continue;
        sqlite3_bind_int64(st, 1, run_id);
        while (sqlite3_step(st) == SQLITE_ROW) {
            struct rec_job *j = calloc(1, sizeof *j);
            const char *a = (const char *)sqlite3_column_text(st, 2);
            const char *b = (const char *)sqlite3_column_text(st, 3);
            const char *target = (const char *)sqlite3_column_text(st, 4);
            if (!j)
                break;
            j->t_ns = sqlite3_column_int64(st, 1);
            j->kind = kinds[q];
            if (q == 2) {
                j->phase_id = sqlite3_column_int64(st, 2);
                j->text = strdup(b ? b : "");
            } else if (q == 4) { /* text the event, version its detail */
                j->text = strdup(a ? a : "");
                j->version = b ? strdup(b) : NULL;
            } else {
                j->version = a ? strdup(a) : NULL;
                j->text = strdup(b ? b : "");
            }
            if (target && !(j->target = strdup(target))) {
                rec_job_free(j);
                break;
            }
            *tail = j;
            tail = &j->next;
        }
        sqlite3_finalize(st);
    }
    return head;
}

/* Writer thread, under mu (released meanwhile): when --db is a pattern and
 * its expansion for now is not the file open, the run ends in this file
 * and continues, same name, as a new run in the next (opened first: a
 * file that cannot be opened leaves recording where it was, tried again in
 * 10 s). Not while a web API query is under way on the old connection. */
static void rec_rotate(struct recorder *r)
{
    char next[sizeof r->store_path], err[1536];
    int64_t now = clock_wall_ns();
    if (!r->rotate || !r->sink_ready || !sink_sqlite(r->sink) || now < r->next_rotate_ns ||
        (r->queries && query_pending(r->queries)))
        return;
    if (retain_path_expand(r->rotate, (time_t)(now / 1000000000), next, sizeof next) ||
        !strcmp(next, r->store_path))
        return;
    int64_t old_id = r->run_id;
    uint64_t written = r->written, written0 = r->written0;
    pthread_mutex_unlock(&r->mu);
    struct sink *nk = malloc(2 * sizeof *nk), *old = nk ? nk + 1 : NULL;
    int64_t id = -1;
    if (nk) {
        sink_init(nk, next);
        if (sink_open(nk, next, err, sizeof err) == 0 &&
            (id = sink_run_begin(nk, &r->run, err, sizeof err)) < 0)
            sink_close(nk);
    } else {
        snprintf(err, sizeof err, "out of memory");
    }
    if (id < 0) {
        log_error("recorder: cannot rotate to %s (recording stays in %s, tried again in 10 s): "
                  "%s",
                  next, sink_name(r->sink), err);
        free(nk);
        pthread_mutex_lock(&r->mu);
        r->next_rotate_ns = now + 10 * INT64_C(1000000000);
        return;
    }
    if (r->wal_pages && store_wal_limit(&nk->sq, r->wal_pages, err, sizeof err))
        log_warn("recorder: %s", err);
    struct rec_job *carry = rec_carry_jobs(sink_sqlite(r->sink), old_id);
    int rc = sink_begin(nk, err, sizeof err);
    for (struct rec_job *j = carry; j && !rc; j = j->next)
        rc = sink_put_job(nk, id, j, err, sizeof err);
    if (sink_commit(nk, id, 0, rc, err, sizeof err))
        log_warn("recorder: %s: the run's settings and ladder were not carried over: %s", next,
                 err);
    rec_free_jobs(carry);
    if (sink_run_end(r->sink, old_id, written - written0, 0, err, sizeof err))
        log_error("recorder: ending run %lld in %s: %s", (long long)old_id, sink_name(r->sink),
                  err);
    char old_name[sizeof r->store_path];
    snprintf(old_name, sizeof old_name, "%s", sink_name(r->sink));
    pthread_mutex_lock(&r->mu);
    *old = *r->sink;
    *r->sink = *nk; /* the store's connection and statements move as they are */
    r->run_id = id;
    r->written0 = written;
    r->reads_written0 = r->reads_written;
    r->rotations++;
    snprintf(r->store_path, sizeof r->store_path, "%s", next);
    pthread_mutex_unlock(&r->mu);
    sink_close(old); /* its last checkpoint: not under the lock the loop takes */
    free(nk);
    if (retain_enabled(&r->retain))
        retain_observe(&r->retain, sink_sqlite(r->sink), now);
    log_info("recorder: rotated: %s closed (run %lld, %llu writes), recording into %s as run %lld",
             old_name, (long long)old_id, (unsigned long long)(written - written0), next,
             (long long)id);
    pthread_mutex_lock(&r->mu);
    r->retain_view = r->retain.st;
}

/* --- the file deleted under the writer (store_file_check) ------------------ */

/* Writer thread, mu released: the path names another file or none: the
 * rows of this run went to a file nobody can read, and so would every later
 * one. They are counted lost (file_deleted), the connection is closed and a
 * new file made at the path, a new run of the same name with what rotation
 * carries over and why it started (run_meta 'started_because'). A file
 * that cannot be made leaves the sink closed, opened again as
 * --record-optional's is (its writes counted store_unavailable). */
static void rec_file_reopen(struct recorder *r, enum store_file_state what, int64_t now)
{
    char err[1536], when[32], path[sizeof r->store_path];
    pthread_mutex_lock(&r->mu);
    int64_t old_id = r->run_id;
    uint64_t gone = r->written - r->written0;
    r->wlost[REC_LOST_FILE_DELETED] += gone;
    r->written -= gone; /* recorded: rows in files that are still there */
    uint64_t rgone = r->reads_written - r->reads_written0;
    r->rlost[REC_LOST_FILE_DELETED] += rgone;
    r->reads_written -= rgone;
    r->sink_ready = false;
    snprintf(path, sizeof path, "%s", r->store_path);
    pthread_mutex_unlock(&r->mu);
    rec_time_text(now, when, sizeof when);
    log_error("recorder: %s was %s while recording (found at %s): the %llu writes of run %lld "
              "in it are gone, counted lost (%s); recording goes on in a new file at the path, "
              "/health is 503 until it is open and checked",
              path, what == STORE_FILE_DELETED ? "deleted" : "replaced by another file", when,
              (unsigned long long)gone, (long long)old_id, rec_loss_label(REC_LOST_FILE_DELETED));
    struct rec_job *carry = rec_carry_jobs(sink_sqlite(r->sink), old_id);
    struct rec_job *why = calloc(1, sizeof *why);
    char text[1536];
    if (why) {
        snprintf(
            text, sizeof text, "%s: %s was %s at %s; run %lld and its %llu writes went with it",
            store_file_state_label(what), path, what == STORE_FILE_DELETED ? "deleted" : "replaced",
            when, (long long)old_id, (unsigned long long)gone);
        why->kind = REC_JOB_META;
        why->t_ns = now;
        why->version = strdup("started_because");
        why->text = strdup(text);
        why->next = carry;
        carry = why;
    }
    /* closed before the new file opens: a WAL left at the path by the old
     * file must not be read into the new one (and one that is not ours is
     * not deleted: store_forsake) */
    struct sink *old = malloc(sizeof *old);
    if (!old) {
        rec_free_jobs(carry);
        return;
    }
    pthread_mutex_lock(&r->mu);
    *old = *r->sink;
    sink_init(r->sink, path);
    pthread_mutex_unlock(&r->mu);
    store_forsake(&old->sq);
    sink_close(old);
    free(old);
    struct sink nk;
    int64_t id = -1;
    sink_init(&nk, path);
    if (sink_open(&nk, path, err, sizeof err) == 0 &&
        (id = sink_run_begin(&nk, &r->run, err, sizeof err)) < 0)
        sink_close(&nk);
    if (id < 0) {
        log_error("recorder: cannot make a new file at %s (tried again every %d ms; writes "
                  "meanwhile counted lost: store_unavailable): %s",
                  path, REC_RETRY_MAX_MS, err);
        rec_free_jobs(carry);
        pthread_mutex_lock(&r->mu);
        snprintf(r->last_error, sizeof r->last_error, "%.*s", (int)sizeof r->last_error - 1, err);
        r->db = r->store_path; /* rec_try_open opens it */
        r->next_open_ns = 0;
        pthread_mutex_unlock(&r->mu);
        return;
    }
    if (r->wal_pages && store_wal_limit(&nk.sq, r->wal_pages, err, sizeof err))
        log_warn("recorder: %s", err);
    int rc = sink_begin(&nk, err, sizeof err);
    for (struct rec_job *j = carry; j && !rc; j = j->next)
        rc = sink_put_job(&nk, id, j, err, sizeof err);
    if (sink_commit(&nk, id, 0, rc, err, sizeof err))
        log_warn("recorder: %s: the run's settings and ladder were not carried over: %s", path,
                 err);
    rec_free_jobs(carry);
    pthread_mutex_lock(&r->mu);
    *r->sink = nk;
    r->run_id = id;
    r->written0 = r->written;
    r->reads_written0 = r->reads_written;
    r->sink_ready = true;
    pthread_mutex_unlock(&r->mu);
    if (retain_enabled(&r->retain))
        retain_observe(&r->retain, sink_sqlite(r->sink), now);
    log_info("recorder: recording into a new %s as run %lld (run_meta started_because: %s)", path,
             (long long)id, store_file_state_label(what));
}

/* Writer thread, under mu (released meanwhile): every REC_FILE_CHECK_MS,
 * whether the path still names the file and WAL written. A deleted WAL is
 * made again after its rows are checkpointed into the file (nothing lost);
 * a deleted or replaced file: rec_file_reopen. The fault shows in /health
 * until a later check finds the new file in place. */
static void rec_file_check(struct recorder *r)
{
    char err[1536];
    int64_t now = clock_wall_ns();
    if (!r->sink_ready || !sink_sqlite(r->sink) || now < r->next_file_check_ns ||
        (r->queries && query_pending(r->queries)))
        return;
    r->next_file_check_ns = now + (int64_t)REC_FILE_CHECK_MS * 1000000;
    pthread_mutex_unlock(&r->mu);
    enum store_file_state st = store_file_check(&r->sink->sq);
    pthread_mutex_lock(&r->mu);
    enum store_file_state was = r->file_fault;
    if (st == STORE_FILE_OK) {
        r->file_fault = STORE_FILE_OK;
        if (was != STORE_FILE_OK)
            log_info("recorder: %s is in place again (%s resolved); recording as run %lld",
                     r->store_path, store_file_state_label(was), (long long)r->run_id);
        return;
    }
    r->file_fault = st;
    r->file_fault_ns = now;
    r->file_events++;
    pthread_mutex_unlock(&r->mu);
    if (st != STORE_FILE_WAL_DELETED) {
        rec_file_reopen(r, st, now);
    } else if (store_wal_recreate(&r->sink->sq, err, sizeof err)) {
        log_error("recorder: %s-wal was deleted while recording; making a new one failed "
                  "(tried again in %d ms): %s",
                  r->sink->sq.path, REC_FILE_CHECK_MS, err);
    } else {
        log_error("recorder: %s-wal was deleted while recording: its committed rows are "
                  "checkpointed into %s and a new WAL made, nothing lost; /health is 503 until "
                  "the next check",
                  r->sink->sq.path, r->sink->sq.path);
    }
    pthread_mutex_lock(&r->mu);
}

/* Writer thread, mu released: a batch failed on a full disk. The WAL's
 * space goes back to the file system (wal_checkpoint(TRUNCATE)); from the
 * second try on, retention (when on) expires a step of the oldest rows and
 * gives their pages back (incremental_vacuum), so recording can resume. */
static void rec_make_room(struct recorder *r, unsigned tries)
{
    char err[512];
    struct store *s = &r->sink->sq;
    int rc = store_wal_truncate(s, err, sizeof err);
    int expired = 0;
    if (tries > 1 && retain_enabled(&r->retain)) {
        expired = retain_make_room(&r->retain, s->db, clock_wall_ns(), err, sizeof err);
        if (expired > 0) {
            store_rows_expired(s);
            store_wal_truncate(s, err, sizeof err);
        }
    }
    if (!r->full_logged) {
        r->full_logged = true;
        log_warn("recorder: %s: the disk is full: the WAL is given back (checkpoint, "
                 "truncate)%s and the batch tried again%s",
                 s->path,
                 retain_enabled(&r->retain) ? ", then the oldest rows expired to make room" : "",
                 rc ? " (the checkpoint failed too)" : "");
    }
    pthread_mutex_lock(&r->mu);
    r->retain_view = r->retain.st;
    pthread_mutex_unlock(&r->mu);
}

/* Writer thread, under mu (released while it checkpoints): whether the WAL
 * is past --wal-max and cannot start over (a reader in another process
 * holds an old snapshot): the batch's rows are then counted lost
 * (wal_full) instead of written, so the WAL stays bounded and nobody waits.
 * Logged when it begins (naming the reader when PATH-shm's locks tell)
 * and when recording resumes. */
static bool rec_wal_full(struct recorder *r)
{
    if (!r->wal_max || !r->sink_ready || !sink_sqlite(r->sink) || r->failing)
        return false;
    struct store *s = &r->sink->sq;
    uint64_t bytes = store_wal_bytes(s);
    if (bytes < r->wal_max) {
        if (r->wal_over) {
            r->wal_over = false;
            log_info("recorder: %s-wal started over (%llu bytes): recording every row again; "
                     "%llu writes were counted lost (wal_full) meanwhile",
                     s->path, (unsigned long long)bytes,
                     (unsigned long long)(r->wlost[REC_LOST_WAL_FULL] - r->wal_lost0));
        }
        return false;
    }
    pthread_mutex_unlock(&r->mu);
    bool drained = store_wal_drained(s); /* PASSIVE: never waits */
    long reader = drained ? 0 : store_wal_reader(s);
    pthread_mutex_lock(&r->mu);
    if (drained)
        return false; /* this commit starts the WAL over */
    if (!r->wal_over) {
        char who[DBLOCK_TEXT_MAX] = "another process";
        if (reader > 0)
            dblock_process(reader, who, sizeof who);
        r->wal_over = true;
        r->wal_lost0 = r->wlost[REC_LOST_WAL_FULL];
        log_warn("recorder: %s-wal is past --wal-max (%llu of %llu bytes): a reader (%s) holds "
                 "a snapshot, so no checkpoint can start the WAL over; rows are counted lost "
                 "(wal_full), not written, until its read ends (clients are not slowed)",
                 s->path, (unsigned long long)bytes, (unsigned long long)r->wal_max, who);
    }
    return true;
}

/* Writer thread, under mu (released while writing): the batch is written,
 * tried again with backoff while the sink fails -- never dropped -- until
 * the sink writes again; or, with a spill, once it has failed for
 * max_stall_ms (at once when stopping, or while the spill holds older
 * batches: order), put into the spill; or the recorder is stopping and has
 * given the sink REC_SHUTDOWN_GRACE_MS. A sink not open yet: the batch is
 * counted lost (store_unavailable). */
static void rec_write_batch(struct recorder *r, const struct rec_row *batch, size_t n,
                            struct rec_job *jobs)
{
    unsigned backoff = REC_RETRY_MIN_MS, fulls = 0;
    bool tried = false;
    if (n && rec_wal_full(r)) {
        r->wlost[REC_LOST_WAL_FULL] += rec_count_writes(batch, n);
        r->rlost[REC_LOST_WAL_FULL] += rec_count_reads(batch, n);
        n = 0;
        if (!jobs)
            return; /* the jobs (settings, samples, phases) are still written */
    }
    int64_t batch_no = ++r->batch_no;
    for (;;) {
        bool ready = r->sink_ready, failing = r->failing, stop = r->stop;
        int64_t failing_for = failing ? clock_wall_ns() - r->failing_since_ns : 0;
        pthread_mutex_unlock(&r->mu);
        if (!ready && rec_try_open(r)) {
            pthread_mutex_lock(&r->mu);
            r->wlost[REC_LOST_STORE_UNAVAILABLE] += rec_count_writes(batch, n);
            r->rlost[REC_LOST_STORE_UNAVAILABLE] += rec_count_reads(batch, n);
            break;
        }
        int64_t stall_ns = (int64_t)r->max_stall_ms * 1000000;
        bool to_spill =
            r->spill && (r->spill->batches > 0 || (failing && (stop || failing_for >= stall_ns)));
        int rc = to_spill ? rec_spill_batch(r, batch, n, jobs, batch_no)
                          : rec_commit(r, batch, n, jobs, r->run_id, batch_no, tried, true);
        tried |= !to_spill;
        if (rc && !to_spill && sink_sqlite(r->sink) && r->sink->sq.last_full)
            rec_make_room(r, ++fulls);
        pthread_mutex_lock(&r->mu);
        if (rc == 0) {
            r->full_logged = false;
            break;
        }
        if (r->stop && (atomic_load(&r->give_up) ||
                        clock_wall_ns() - r->stop_since_ns >= (int64_t)r->grace_ms * 1000000)) {
            r->lost_shutdown += rec_count_writes(batch, n); /* given up: counted */
            r->reads_lost_shutdown += rec_count_reads(batch, n);
            break;
        }
        unsigned wait = backoff;
        if (r->spill && r->failing) { /* not past the moment it should spill */
            int64_t left = stall_ns - (clock_wall_ns() - r->failing_since_ns);
            if (left < (int64_t)wait * 1000000)
                wait = left > 1000000 ? (unsigned)(left / 1000000) : 1;
        }
        rec_writer_sleep(r, wait);
        backoff = backoff * 2 > REC_RETRY_MAX_MS ? REC_RETRY_MAX_MS : backoff * 2;
    }
    pthread_mutex_unlock(&r->mu);
    rec_free_jobs(jobs);
    pthread_mutex_lock(&r->mu);
}

/* Writer thread: the oldest spilled batch shipped to the sink (its batch
 * number committed with it, and looked up first: a batch whose commit
 * answer was lost is not sent twice), then removed from the spill. */
static void rec_ship_one(struct recorder *r)
{
    char err[1536];
    struct spill_batch b;
    int got = spill_first(r->spill, &b, r->ship, REC_BATCH_MAX, err, sizeof err);
    if (got == 0)
        return;
    if (got == -2) { /* unreadable: dropped, counted */
        log_error("recorder: %s: %llu writes dropped (write_error)", err,
                  (unsigned long long)b.writes);
        pthread_mutex_lock(&r->mu);
        r->wlost[REC_LOST_WRITE_ERROR] += b.writes;
        pthread_mutex_unlock(&r->mu);
        if (spill_drop(r->spill, &b, err, sizeof err))
            log_error("recorder: %s", err);
        rec_spill_mirror(r);
        return;
    }
    int rc = got < 0 ? -1
                     : rec_commit(r, r->ship, b.n, b.jobs, b.run_id, b.batch_no, true,
                                  b.run_id == r->run_id);
    rec_free_jobs(b.jobs);
    if (got < 0)
        log_throttled(&r->stash_throttle, LOG_LEVEL_ERROR, NULL, "recorder: %s", err);
    if (rc == 0 && spill_drop(r->spill, &b, err, sizeof err)) {
        /* shipped, still in the file: the next try finds it committed */
        log_throttled(&r->stash_throttle, LOG_LEVEL_ERROR, NULL, "recorder: %s", err);
        rc = -1;
    }
    if (rc) {
        r->next_ship_ns = clock_wall_ns() + (int64_t)r->ship_backoff * 1000000;
        r->ship_backoff =
            r->ship_backoff * 2 > REC_RETRY_MAX_MS ? REC_RETRY_MAX_MS : r->ship_backoff * 2;
        return;
    }
    r->ship_backoff = REC_RETRY_MIN_MS;
    r->next_ship_ns = 0;
    pthread_mutex_lock(&r->mu);
    r->shipped += b.writes;
    uint64_t shipped = r->shipped;
    pthread_mutex_unlock(&r->mu);
    rec_spill_mirror(r);
    if (!r->spill->batches) {
        r->outage_spilled = false;
        log_info("recorder: the spill is shipped: %llu writes in all so far, in order",
                 (unsigned long long)shipped);
    }
}

/* Writer thread, under mu: when it has something to do besides batches
 * (open a sink that is not open, ship the spill), in wall ns; 0: nothing. */
static int64_t rec_duty_ns(const struct recorder *r)
{
    if (!r->sink_ready && r->db)
        return r->next_open_ns ? r->next_open_ns : 1;
    if (r->spill && r->spill_batches && r->sink_ready)
        return r->next_ship_ns ? r->next_ship_ns : 1;
    /* the aggregates, for readers in other processes (not while the
     * store fails or the WAL is past --wal-max) */
    int64_t agg =
        r->sink_ready && !r->failing && !r->wal_over ? sink_aggregates_due_ns(r->sink) : 0;
    if (r->sink_ready && sink_sqlite(r->sink)) { /* the file check, also while idle */
        int64_t check = r->next_file_check_ns ? r->next_file_check_ns : 1;
        return agg && agg < check ? agg : check;
    }
    return agg;
}

static size_t rec_wake_rows(const struct recorder *r)
{
    return r->cap / 4 < REC_WAKE_ROWS ? (r->cap / 4 ? r->cap / 4 : 1) : REC_WAKE_ROWS;
}

/* Under mu: until there is a batch worth writing, a job, the end, rows
 * that have waited REC_LINGER_MS, or a duty (rec_duty_ns) is due. */
static void rec_writer_wait(struct recorder *r)
{
    struct timespec until;
    bool lingering = false;
    int64_t duty;
    while (!r->stop && !r->jobs_head && r->count < rec_wake_rows(r) && !r->loop_blocked &&
           !(r->queries && query_pending(r->queries) && sink_sqlite(r->sink))) {
        duty = rec_duty_ns(r);
        if (duty && clock_wall_ns() >= duty)
            break;
        r->writer_idle = true;
        if (r->count == 0 && duty) {
            struct timespec d = { (time_t)(duty / 1000000000), (long)(duty % 1000000000) };
            pthread_cond_timedwait(&r->cv, &r->mu, &d); /* CLOCK_REALTIME, as clock_wall_ns */
        } else if (r->count == 0) {
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

/* Under mu: the duties that are due (released while doing them). At stop
 * the spill is shipped as long as the grace allows. */
static void rec_writer_duties(struct recorder *r)
{
    int64_t duty = rec_duty_ns(r);
    if (!duty || clock_wall_ns() < duty)
        return;
    bool ready = r->sink_ready, ship = r->spill && r->spill_batches;
    if (ready && !ship) {
        rec_file_check(r);
        int64_t agg =
            r->sink_ready && !r->failing && !r->wal_over ? sink_aggregates_due_ns(r->sink) : 0;
        if (agg && clock_wall_ns() >= agg) {
            char err[512];
            pthread_mutex_unlock(&r->mu);
            /* the counts are kept and tried again in one interval: said,
             * not lost */
            if (sink_write_aggregates(r->sink, err, sizeof err))
                log_throttled(&r->write_throttle, LOG_LEVEL_WARN, NULL,
                              "recorder: the aggregates were not written (kept, tried again): %s",
                              err);
            pthread_mutex_lock(&r->mu);
        }
        return;
    }
    pthread_mutex_unlock(&r->mu);
    if (!ready)
        rec_try_open(r);
    else
        rec_ship_one(r);
    pthread_mutex_lock(&r->mu);
}

static void *rec_writer(void *arg)
{
    struct recorder *r = arg;
    struct rec_row *batch = r->batch;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        rec_writer_wait(r);
        rec_writer_duties(r);
        if (r->count == 0 && !r->jobs_head && !r->stop && !r->loop_blocked &&
            !(r->queries && query_pending(r->queries)))
            continue; /* woken for a duty only */
        if (r->queries && !r->stop && query_pending(r->queries) && sink_sqlite(r->sink)) {
            /* one step of a web API query between batches (its time budget) */
            struct query_queue *q = r->queries;
            char ignored[256];
            pthread_mutex_unlock(&r->mu);
            /* the aggregates a query reads are the rows written so far */
            store_write_aggregates(&r->sink->sq, ignored, sizeof ignored);
            query_step(q, sink_sqlite(r->sink));
            pthread_mutex_lock(&r->mu);
            if (r->count == 0 && !r->jobs_head && !r->stop)
                continue;
        }
        if (r->count == 0 && !r->jobs_head && r->stop) {
            /* the spill's backlog, while the sink writes and the grace lasts */
            if (r->spill && r->spill_batches && r->sink_ready && !atomic_load(&r->give_up) &&
                clock_wall_ns() - r->stop_since_ns < (int64_t)r->grace_ms * 1000000) {
                if (rec_duty_ns(r) > clock_wall_ns())
                    rec_writer_sleep(r, REC_RETRY_MIN_MS);
                rec_writer_duties(r);
                continue;
            }
            break;
        }
        if (r->stop && atomic_load(&r->give_up)) {
            /* a second signal: what is still queued is counted, not written */
            while (r->count > 0) {
                r->lost_shutdown += r->ring[r->head].kind == REC_ROW_WRITE;
                r->reads_lost_shutdown += r->ring[r->head].kind == REC_ROW_READ;
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
        rec_file_check(r);
        rec_rotate(r);
        rec_write_batch(r, batch, n, jobs);
        rec_retain_run(r, n);
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
    if (!failing || r->spill) { /* with a spill the writer makes room itself */
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

int rec_open(struct recorder *r, uv_loop_t *loop, struct sink *sink, int64_t run_id,
             const struct rec_config *cfg, void (*on_unblock)(void *), void *ud, char *err,
             size_t errlen)
{
    int rc = -1;
    size_t cap = cfg->cap;
    memset(r, 0, sizeof *r);
    /* everything rec_close tears down exists from here on, failed or not */
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->sink = sink;
    r->run_id = run_id;
    r->sink_ready = run_id >= 0;
    r->spill = cfg->spill;
    r->db = cfg->db;
    r->run = cfg->run;
    r->ship_backoff = REC_RETRY_MIN_MS;
    retain_init(&r->retain, &cfg->retain);
    r->retain_view = r->retain.st;
    r->rotate = cfg->rotate;
    r->wal_pages = cfg->wal_pages;
    r->wal_max = cfg->wal_max;
    if (r->wal_pages && sink_sqlite(sink) && store_wal_limit(&sink->sq, r->wal_pages, err, errlen))
        goto out;
    snprintf(r->store_path, sizeof r->store_path, "%s", cfg->path ? cfg->path : sink_name(sink));
    if (r->sink_ready && retain_enabled(&r->retain) && sink_sqlite(sink)) {
        retain_observe(&r->retain, sink_sqlite(sink), clock_wall_ns());
        r->retain_view = r->retain.st;
    }
    if (r->spill && r->spill->moved[0])
        log_warn("recorder: the spill %s is damaged (%s): moved aside to %s, kept as it was; "
                 "its rows cannot be read, so they are neither shipped nor counted; recording "
                 "into a fresh spill",
                 r->spill->path, r->spill->moved_why, r->spill->moved);
    if (r->spill) {
        r->spill_batches = r->spill->batches;
        r->spill_rows = r->spill->rows;
        r->spill_bytes = r->spill->bytes;
    }
    r->cap = cap < 16 ? 16 : cap;
    r->ring = malloc(sizeof *r->ring * r->cap);
    r->stage = malloc(sizeof *r->stage * REC_STAGE_ROWS);
    /* the writer's batch too, so the thread itself cannot fail */
    r->batch = malloc(sizeof *r->batch * REC_BATCH_MAX);
    r->ship = r->spill ? malloc(sizeof *r->ship * REC_BATCH_MAX) : NULL;
    if (!r->ring || !r->stage || !r->batch || (r->spill && !r->ship)) {
        snprintf(err, errlen, "cannot allocate a queue of %zu rows", r->cap);
        goto out;
    }
    r->on_full = cfg->on_full;
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
    r->max_stall_ms = cfg->max_stall_ms ? cfg->max_stall_ms : REC_DEFAULT_MAX_STALL_MS;
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
    /* bounded by what one read callback can produce before the proxy
     * pauses every connection; grows to that, then is reused */
    if (!BUF_GROW(r->stash, r->stash_cap, r->stash_count + 1)) {
        r->dropped++;
        log_throttled(&r->stash_throttle, LOG_LEVEL_ERROR, NULL,
                      "recorder: out of memory for %zu stashed rows; a row was dropped",
                      r->stash_count + 1);
        return;
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
    r->dropped_view = r->dropped; /* for the runs row (rec_commit) */
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

void rec_count_lost(struct recorder *r, enum rec_loss reason, uint64_t n)
{
    if ((unsigned)reason < REC_LOST__COUNT)
        r->lost[reason] += n;
    if (reason == REC_LOST_MEMCACHED_DROPPED) { /* the runs row counts them */
        pthread_mutex_lock(&r->mu);
        r->mc_dropped_view = r->lost[reason];
        pthread_mutex_unlock(&r->mu);
    }
}

uint64_t rec_reads_recorded(struct recorder *r)
{
    pthread_mutex_lock(&r->mu);
    uint64_t n = r->reads_written;
    pthread_mutex_unlock(&r->mu);
    return n;
}

uint64_t rec_reads_lost(struct recorder *r, enum rec_loss reason)
{
    if ((unsigned)reason >= REC_LOST__COUNT)
        return 0;
    pthread_mutex_lock(&r->mu);
    uint64_t n = r->rlost[reason];
    pthread_mutex_unlock(&r->mu);
    return n;
}

uint64_t rec_reads_lost_total(struct recorder *r)
{
    uint64_t n = 0;
    for (int i = 0; i < REC_LOST__COUNT; i++)
        n += rec_reads_lost(r, (enum rec_loss)i);
    return n;
}

uint64_t rec_lost(struct recorder *r, enum rec_loss reason)
{
    if ((unsigned)reason >= REC_LOST__COUNT)
        return 0;
    pthread_mutex_lock(&r->mu);
    uint64_t w = r->wlost[reason];
    pthread_mutex_unlock(&r->mu);
    return r->lost[reason] + w;
}

void rec_spill_state(struct recorder *r, struct rec_spill_state *out)
{
    pthread_mutex_lock(&r->mu);
    *out = (struct rec_spill_state){ r->spill != NULL, r->spill_batches, r->spill_rows,
                                     r->spill_bytes,   r->spilled,       r->shipped };
    pthread_mutex_unlock(&r->mu);
}

int64_t rec_run_id(struct recorder *r)
{
    pthread_mutex_lock(&r->mu);
    int64_t id = r->sink_ready ? r->run_id : -1;
    pthread_mutex_unlock(&r->mu);
    return id;
}

bool rec_degraded(struct recorder *r, char *why, size_t whylen)
{
    bool degraded = true;
    pthread_mutex_lock(&r->mu);
    if (!r->sink_ready)
        snprintf(why, whylen, "no store (%s): rows are not recorded (store_unavailable)",
                 r->last_error);
    else if (r->failing && r->spill)
        snprintf(why, whylen, "the store fails (%s): rows go to the spill (%llu waiting)",
                 r->last_error, (unsigned long long)r->spill_rows);
    else if (r->failing)
        snprintf(why, whylen, "the store fails: %s", r->last_error);
    else if (r->spill_rows)
        snprintf(why, whylen, "shipping the spill: %llu rows waiting",
                 (unsigned long long)r->spill_rows);
    else
        degraded = false;
    pthread_mutex_unlock(&r->mu);
    return degraded;
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

enum store_file_state rec_file_fault(struct recorder *r, int64_t *since, uint64_t *events)
{
    pthread_mutex_lock(&r->mu);
    enum store_file_state st = r->file_fault;
    if (since)
        *since = r->file_fault_ns;
    if (events)
        *events = r->file_events;
    pthread_mutex_unlock(&r->mu);
    return st;
}

uint64_t rec_recorded(struct recorder *r)
{
    pthread_mutex_lock(&r->mu);
    uint64_t n = r->written;
    pthread_mutex_unlock(&r->mu);
    return n;
}

uint64_t rec_lost_total(struct recorder *r)
{
    uint64_t n = 0;
    for (int i = 0; i < REC_LOST__COUNT; i++)
        n += rec_lost(r, (enum rec_loss)i);
    return n;
}

void rec_totals(struct recorder *r, struct rec_totals *out)
{
    out->recorded = rec_recorded(r);
    out->reads_recorded = rec_reads_recorded(r);
    out->lost_total = out->reads_lost_total = 0;
    pthread_mutex_lock(&r->mu);
    out->events_recorded = r->events_written;
    out->items_recorded = r->items_written;
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < REC_LOST__COUNT; i++) {
        out->lost_total += out->lost[i] = rec_lost(r, (enum rec_loss)i);
        out->reads_lost_total += out->reads_lost[i] = rec_reads_lost(r, (enum rec_loss)i);
    }
}

void rec_retain_state(struct recorder *r, struct retain_stats *out, char *path, size_t pathlen,
                      uint64_t *rotations)
{
    pthread_mutex_lock(&r->mu);
    *out = r->retain_view;
    if (path && pathlen)
        snprintf(path, pathlen, "%s", r->store_path);
    if (rotations)
        *rotations = r->rotations;
    pthread_mutex_unlock(&r->mu);
}

size_t rec_depth(struct recorder *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->count;
    pthread_mutex_unlock(&r->mu);
    return n + r->stash_count + r->stage_count;
}

int rec_close(struct recorder *r, struct rec_totals *totals, char *err, size_t errlen)
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
                r->rlost[REC_LOST_SHUTDOWN] += rec_count_reads(r->stash, r->stash_count);
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
        r->rlost[REC_LOST_SHUTDOWN] += r->reads_lost_shutdown;
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
    if (r->sink) {
        uint64_t wl = 0;
        for (int i = 0; i < REC_LOST__COUNT; i++)
            wl += r->wlost[i];
        uint64_t lost =
            r->dropped + r->lost[REC_LOST_SHUTDOWN] + r->lost[REC_LOST_MEMCACHED_DROPPED] + wl;
        char ignored[256];
        if (r->sink_ready &&
            sink_run_end(r->sink, r->run_id, r->written - r->written0, lost, err, errlen)) {
            /* a full disk: the reserve given back (room for the WAL frames
             * of this last transaction), or the WAL's space, then once more
             * (the run row must say what the file holds and what was lost) */
            bool again =
                sink_sqlite(r->sink) && store_reserve_release(&r->sink->sq) &&
                !sink_run_end(r->sink, r->run_id, r->written - r->written0, lost, err, errlen);
            if (!again &&
                (!sink_sqlite(r->sink) ||
                 store_wal_truncate(&r->sink->sq, ignored, sizeof ignored) ||
                 sink_run_end(r->sink, r->run_id, r->written - r->written0, lost, err, errlen)))
                rc = -1;
        }
        sink_close(r->sink);
        r->sink = NULL;
    }
    if (r->spill) {
        if (r->spill->batches)
            log_warn("recorder: %llu rows wait in the spill %s: they are shipped when slabtap "
                     "starts again with this spill file",
                     (unsigned long long)r->spill->rows, r->spill->path);
        spill_close(r->spill);
        r->spill = NULL;
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
    free(r->ship);
    r->ship = NULL;
    r->stage = NULL;
    r->batch = NULL;
    free(r->stash);
    r->ring = r->stash = NULL;
    if (totals)
        rec_totals(r, totals);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    return rc;
}
