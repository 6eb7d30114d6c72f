/* pending: one upstream connection's in-order queue of requests forwarded
 * to memcached and not yet answered (from one client or many), and the rule
 * that pairs an answer's first line with its request.
 *
 * Owns the ring of entries (grown by doubling, so no malloc per request;
 * a ring grown past PENDING_KEEP entries is freed when it empties, so one
 * burst does not pin it), and adds what it holds to *account.
 * Must never do I/O; the proxy decides what to do with popped entries. */
#ifndef SLABTAP_PENDING_H
#define SLABTAP_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_parse.h"

struct readrec_keys;

struct pending_entry {
    struct mc_request req;
    uint64_t seq;      /* 0 when the request is not recorded */
    uint64_t t_sent;   /* uv_hrtime when its last byte was forwarded */
    int64_t t_wall_ns; /* unix time it was read */
    bool barrier;      /* an "mn" slabtap injected: its MN is swallowed */
    bool muted;        /* memcached would drop this answer (a request later
                          in the same read closed the connection or reset its
                          answers): read and dropped, the row kept */
    void *owner;       /* whom the answer goes to (the proxy's client);
                              NULL: nobody, the answer is read and dropped */
    uint32_t conn_id;  /* the client's number, for its row */
    const char *local; /* an answer slabtap gives itself, in order (memcached
                          never sees the request); NULL for the others */
    /* a recorded read (server/readrec.h): its keys' rows are made as its
     * answer is read */
    uint64_t rseq;              /* the first key's read seq; 0: not recorded */
    uint64_t after_write;       /* the write seq it was read after */
    struct readrec_keys *rkeys; /* a multiget's keys (heap); NULL: req.key */
    uint32_t rk_n, rk_next;     /* keys kept, and the next one to record */
};

struct pending {
    struct pending_entry *ring;
    size_t cap, head, count;
    size_t *account; /* bytes of rings, summed over queues; may be NULL */
};

#define PENDING_KEEP 1024

/* account: a counter the ring's bytes are added to and taken from. */
void pending_init(struct pending *q, size_t *account);
void pending_free(struct pending *q);
/* A slot at the tail, or NULL when memory ran out. */
struct pending_entry *pending_push(struct pending *q);
struct pending_entry *pending_head(struct pending *q);
struct pending_entry *pending_tail(struct pending *q);
/* The i-th entry from the head (i < count). */
struct pending_entry *pending_at(struct pending *q, size_t i);
void pending_pop(struct pending *q);

/* Pops, through on_silent, every request at the head whose answer was
 * suppressed (noreply, meta q) and which cannot have produced line, and
 * returns the entry line answers -- NULL when none can (the answer is
 * unpaired). */
struct pending_entry *pending_owner(struct pending *q, const struct mc_line *line,
                                    void (*on_silent)(void *ud, struct pending_entry *e), void *ud);

#endif
