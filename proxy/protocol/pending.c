/* pending: in-order queue of forwarded requests and the pairing rule.
 * Pure: no I/O; the ring grows by doubling and is reused, never per request. */
#include "protocol/pending.h"

#include <stdlib.h>
#include <string.h>

#define PENDING_INITIAL 64

void pending_init(struct pending *q, size_t *account)
{
    memset(q, 0, sizeof *q);
    q->account = account;
}

static void pending_release(struct pending *q)
{
    for (size_t i = 0; i < q->count; i++) { /* a read's keys, never recorded */
        free(q->ring[(q->head + i) % q->cap].rkeys);
        q->ring[(q->head + i) % q->cap].rkeys = NULL;
    }
    if (q->account)
        *q->account -= q->cap * sizeof *q->ring;
    free(q->ring);
    q->ring = NULL;
    q->cap = q->head = q->count = 0;
}

void pending_free(struct pending *q)
{
    pending_release(q);
    q->account = NULL;
}

static int pending_grow(struct pending *q)
{
    size_t ncap = q->cap ? q->cap * 2 : PENDING_INITIAL;
    struct pending_entry *n = malloc(ncap * sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; i < q->count; i++)
        n[i] = q->ring[(q->head + i) % q->cap];
    free(q->ring);
    if (q->account)
        *q->account += (ncap - q->cap) * sizeof *n;
    q->ring = n;
    q->cap = ncap;
    q->head = 0;
    return 0;
}

struct pending_entry *pending_push(struct pending *q)
{
    if (q->count == q->cap && pending_grow(q))
        return NULL;
    struct pending_entry *e = &q->ring[(q->head + q->count) % q->cap];
    q->count++;
    e->seq = 0;
    e->t_sent = 0;
    e->t_wall_ns = 0;
    e->barrier = false;
    e->muted = false;
    e->owner = NULL;
    e->conn_id = 0;
    e->local = NULL;
    e->rseq = 0;
    e->after_write = 0;
    e->rkeys = NULL;
    e->rk_n = e->rk_next = 0;
    return e;
}

struct pending_entry *pending_head(struct pending *q)
{
    return q->count ? &q->ring[q->head] : NULL;
}

struct pending_entry *pending_tail(struct pending *q)
{
    return q->count ? &q->ring[(q->head + q->count - 1) % q->cap] : NULL;
}

struct pending_entry *pending_at(struct pending *q, size_t i)
{
    return i < q->count ? &q->ring[(q->head + i) % q->cap] : NULL;
}

void pending_pop(struct pending *q)
{
    if (!q->count)
        return;
    free(q->ring[q->head].rkeys); /* NULL once its rows are made */
    q->ring[q->head].rkeys = NULL;
    q->head = (q->head + 1) % q->cap;
    if (--q->count == 0 && q->cap > PENDING_KEEP)
        pending_release(q);
}

struct pending_entry *pending_owner(struct pending *q, const struct mc_line *line,
                                    void (*on_silent)(void *ud, struct pending_entry *e), void *ud)
{
    struct pending_entry *e;
    while ((e = pending_head(q)) != NULL) {
        if (e->barrier || mc_reply_is_mine(&e->req, line))
            return e;
        on_silent(ud, e);
        pending_pop(q);
    }
    return NULL;
}
