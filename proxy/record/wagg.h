/* wagg: write aggregates kept beside the rows -- per run, how many stored
 * items of each size were written per minute, how many writes answered in
 * each latency band per second, how many writes and value bytes each key
 * prefix took per minute. The live page reads these instead of scanning a
 * run's rows (a few million rows answer in milliseconds), and they are
 * what outlives the rows when those are expired.
 *
 * Sizes are kept as body = key length + value length + 4 when flags are
 * not 0: memcached's item size (ntotal) is 51 + body + 8 with CAS, which
 * only the run's settings tell, so the reader adds it.
 *
 * Counts arrive in two generations: the batch being written, and what
 * committed batches added since the aggregates were last written. A batch
 * that is rolled back is dropped from the first (wagg_batch_done), so the
 * aggregates count every committed row exactly once; the store writes the
 * sum of both in the same transaction as a batch, and clears both when
 * that commits.
 *
 * Owns the table of counters, at most WAGG_CAP entries. Must never do I/O
 * (the store writes it) or count a row twice. */
#ifndef SLABTAP_RECORD_WAGG_H
#define SLABTAP_RECORD_WAGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/row.h"

#define WAGG_CAP 65536
/* past this many entries the store writes them out at the next commit,
 * leaving room for a whole batch (three entries a row at most) */
#define WAGG_FLUSH_AT (WAGG_CAP / 2)

enum wagg_kind { WAGG_SIZE = 1, WAGG_LATENCY, WAGG_PREFIX };

struct wagg_ent {
    uint8_t kind;                 /* enum wagg_kind; 0: free slot */
    int64_t t;                    /* WAGG_SIZE, WAGG_PREFIX: minute; WAGG_LATENCY: second (unix) */
    int64_t k;                    /* body; latency band in us (-1: no answer); prefix id */
    int64_t n, bytes;             /* committed, not yet written */
    int64_t batch_n, batch_bytes; /* the batch being written */
};

struct wagg {
    struct wagg_ent *e; /* WAGG_CAP slots, open addressing */
    uint32_t *slots;    /* the used ones, in the order they were taken */
    size_t used;
    bool overflow; /* a row found no slot: counted in lost */
    uint64_t lost; /* rows not counted because the table was full */
};

int wagg_init(struct wagg *g);
void wagg_free(struct wagg *g);
/* The latency band a write's answer time falls in, in microseconds: two
 * significant digits (the page's percentiles), -1 when it had no answer. */
int64_t wagg_latency_band(int64_t latency_ns);
/* Whether the row stores a whole item (set add replace cas, ms but its
 * append/prepend modes): the rows the size histogram is made of. */
bool wagg_stores(const struct rec_row *row);
/* Counts a written row into the batch; prefix_id > 0 when the run keeps
 * key prefixes. */
void wagg_note(struct wagg *g, const struct rec_row *row, int64_t prefix_id);
/* The batch committed (its counts join the unwritten ones) or not (they
 * are dropped). */
void wagg_batch_done(struct wagg *g, bool committed);
/* After a commit that wrote every entry's n + batch_n: all cleared. */
void wagg_clear(struct wagg *g);
bool wagg_should_flush(const struct wagg *g);

#endif
