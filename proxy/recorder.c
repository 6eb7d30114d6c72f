/* recorder: bounded queue from the event loop to one SQLite writer thread.
 * The loop thread copies rows in under a short lock and never waits for the
 * writer; the writer copies a batch out, unlocks, then commits it. */
#include "recorder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#define REC_BATCH_MAX 4096
/* Reading resumes once the ring is at most this full (percent), so the
 * proxy does not flap between paused and reading on every batch. */
#define REC_RESUME_PCT 50

static void *rec_writer(void *arg)
{
    struct recorder *r = arg;
    struct rec_row *batch = malloc(sizeof *batch * REC_BATCH_MAX);
    if (!batch) {
        fprintf(stderr, "slabtap: recorder: out of memory\n");
        return NULL;
    }
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (r->count == 0 && !r->stop)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->count == 0 && r->stop)
            break;
        size_t n = 0;
        while (n < REC_BATCH_MAX && r->count > 0) {
            batch[n++] = r->ring[r->head];
            r->head = (r->head + 1) % r->cap;
            r->count--;
        }
        bool wake = r->count * 100 <= r->cap * REC_RESUME_PCT;
        pthread_mutex_unlock(&r->mu);
        if (wake)
            uv_async_send(&r->wake);
        int rc = store_write_rows(r->store, r->run_id, batch, n);
        pthread_mutex_lock(&r->mu);
        if (rc)
            r->write_errors++;
        else
            r->written += n;
    }
    pthread_mutex_unlock(&r->mu);
    free(batch);
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
    if (!r->blocked)
        return;
    if (!rec_unstash(r))
        return;
    pthread_mutex_lock(&r->mu);
    bool low = r->count * 100 <= r->cap * REC_RESUME_PCT;
    pthread_mutex_unlock(&r->mu);
    if (low) {
        r->blocked = false;
        if (r->on_unblock)
            r->on_unblock(r->ud);
    }
}

int rec_open(struct recorder *r, uv_loop_t *loop, struct store *store, int64_t run_id,
             size_t cap, enum rec_on_full on_full, void (*on_unblock)(void *), void *ud)
{
    memset(r, 0, sizeof *r);
    r->cap = cap < 16 ? 16 : cap;
    r->ring = malloc(sizeof *r->ring * r->cap);
    if (!r->ring) {
        fprintf(stderr, "slabtap: recorder: cannot allocate a queue of %zu rows\n", r->cap);
        return -1;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    r->on_full = on_full;
    r->on_unblock = on_unblock;
    r->ud = ud;
    r->store = store;
    r->run_id = run_id;
    uv_async_init(loop, &r->wake, rec_on_wake);
    r->wake.data = r;
    if (pthread_create(&r->thread, NULL, rec_writer, r)) {
        fprintf(stderr, "slabtap: recorder: cannot start the writer thread\n");
        return -1;
    }
    r->thread_started = true;
    return 0;
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
            return;
        }
        r->stash = n;
        r->stash_cap = ncap;
    }
    r->stash[r->stash_count++] = *row;
}

void rec_push(struct recorder *r, const struct rec_row *row)
{
    bool full;
    if (r->blocked) {
        rec_stash(r, row);
        r->pushed++;
        return;
    }
    pthread_mutex_lock(&r->mu);
    full = r->count == r->cap;
    if (!full) {
        r->ring[(r->head + r->count) % r->cap] = *row;
        r->count++;
        if (r->count == 1 || r->count % 256 == 0)
            pthread_cond_signal(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    if (!full) {
        r->pushed++;
        return;
    }
    if (r->on_full == REC_DROP) {
        r->dropped++;
        return;
    }
    r->blocked = true;
    r->stalls++;
    rec_stash(r, row);
    r->pushed++;
}

bool rec_blocked(const struct recorder *r)
{
    return r->blocked;
}

size_t rec_depth(struct recorder *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->count;
    pthread_mutex_unlock(&r->mu);
    return n + r->stash_count;
}

int rec_close(struct recorder *r)
{
    int rc = 0;
    if (r->thread_started) {
        /* the loop is idle now: waiting here is allowed */
        while (r->stash_count) {
            rec_unstash(r);
            if (r->stash_count) {
                pthread_mutex_lock(&r->mu);
                pthread_cond_signal(&r->cv);
                pthread_mutex_unlock(&r->mu);
                uv_sleep(1);
            }
        }
        pthread_mutex_lock(&r->mu);
        r->stop = true;
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
        r->thread_started = false;
    }
    if (r->store) {
        if (store_run_end(r->store, r->run_id, r->written, r->dropped))
            rc = -1;
        store_close(r->store);
        r->store = NULL;
    }
    if (r->write_errors)
        rc = -1;
    if (!uv_is_closing((uv_handle_t *)&r->wake))
        uv_close((uv_handle_t *)&r->wake, NULL);
    free(r->ring);
    free(r->stash);
    r->ring = r->stash = NULL;
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    return rc;
}
