/* wagg: write aggregates kept beside the rows -- per run, how many stored
 * items of each size were written per minute, how many writes answered in
 * each latency band per second, how many writes and value bytes each key
 * prefix took per minute; and the histograms that outlive the rows (issue
 * 14): per minute, slab class and outcome a sparse histogram of item
 * sizes (exact below WAGG_EXACT_BELOW, log-linear buckets above, with the
 * exact sum of the sizes in each), answers by command, and stored items
 * per key prefix and class. The live page reads these instead of scanning a
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
 * leaving room for a whole batch (4096 rows, six entries a row at most) */
#define WAGG_FLUSH_AT (WAGG_CAP / 2)

enum wagg_kind {
    WAGG_SIZE = 1,     /* agg_sizes */
    WAGG_LATENCY,      /* agg_latency */
    WAGG_PREFIX,       /* agg_prefixes */
    WAGG_ITEM,         /* agg_items: k = wagg_item_key(bucket, class, outcome) */
    WAGG_ANSWER,       /* agg_answers: k = cmd_id | answer_id << 8 */
    WAGG_PREFIX_CLASS, /* agg_prefix_classes: k = prefix_id | class_id << 40 */
};

/* Item sizes (body) below this are kept exactly; from it on, in
 * log-linear buckets of 2^WAGG_BUCKET_BITS per power of two (each at most
 * 1/128 of its size wide: 128 bytes at 16 KB, 8 KB at 1 MB). */
#define WAGG_EXACT_BELOW 16384
#define WAGG_BUCKET_BITS 7

/* What memcached did with an item-storing write (agg_items.outcome). */
enum wagg_outcome {
    WAGG_STORED = 1,  /* STORED, HD, or no answer asked for (noreply, quiet) */
    WAGG_REFUSED = 2, /* allocated and freed again: NOT_STORED EXISTS NOT_FOUND NS EX NF,
                         bad data chunk */
    WAGG_OTHER = 3,   /* nothing stored: too large, out of memory, no answer, errors */
};

struct wagg_ent {
    uint8_t kind;     /* enum wagg_kind; 0: free slot */
    int64_t t;        /* minute (unix), but WAGG_LATENCY: second */
    int64_t k;        /* body; latency band in us (-1: no answer); prefix id; or as above */
    int64_t n, bytes; /* committed, not yet written */
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
/* The bucket an item body falls in: body itself below WAGG_EXACT_BELOW,
 * else the bucket's lower bound; and a bucket's width (1 below). */
int64_t wagg_size_bucket(int64_t body);
int64_t wagg_bucket_width(int64_t bucket);
/* What memcached did with a row wagg_stores is true for. */
enum wagg_outcome wagg_outcome_of(const struct rec_row *row);
/* agg_items' key: bucket (< 2^40), class (0..255), outcome. */
int64_t wagg_item_key(int64_t bucket, uint32_t class_id, enum wagg_outcome o);
void wagg_item_unkey(int64_t k, int64_t *bucket, uint32_t *class_id, enum wagg_outcome *o);
/* Counts a written row into the batch; prefix_id > 0 when the run keeps
 * key prefixes; cmd_id and answer_id: the store's dictionary ids (cmds,
 * answers; answer_id 0: a number, or an answer beyond the dictionary). */
void wagg_note(struct wagg *g, const struct rec_row *row, int64_t prefix_id, int64_t cmd_id,
               int64_t answer_id);
/* The batch committed (its counts join the unwritten ones) or not (they
 * are dropped). */
void wagg_batch_done(struct wagg *g, bool committed);
/* After a commit that wrote every entry's n + batch_n: all cleared. */
void wagg_clear(struct wagg *g);
bool wagg_should_flush(const struct wagg *g);
/* The row an entry adds to its table (schema.sql: agg_sizes, agg_latency,
 * agg_prefixes, agg_items, agg_answers, agg_prefix_classes), the columns
 * after run_id in the table's order: the minute (agg_latency: second), the
 * key columns, writes (n + batch_n), and but for agg_latency the bytes
 * (bytes + batch_bytes). Returns how many, at most WAGG_COLS. */
#define WAGG_COLS 6
size_t wagg_row(const struct wagg_ent *e, int64_t cols[WAGG_COLS]);

/* --- reading them back: re-binning for the model -------------------------
 * One agg_items cell summed over a window: writes items of bodies in
 * [bucket, bucket + wagg_bucket_width(bucket)), body_bytes their exact sum. */
struct wagg_cell {
    uint32_t class_id;
    int64_t bucket, writes, body_bytes;
};

/* At most this many distinct sizes a bucket's items are spread over. */
#define WAGG_SPREAD 16

/* count items of cell c as sizes: at most WAGG_SPREAD distinct ones,
 * evenly over the widest interval around the cell's mean (body_bytes /
 * writes) that stays in the bucket, so their mean is the cell's own (to a
 * rounding) and each is a size the bucket holds; an exact bucket gives
 * its one size. Calls add(ctx, body,
 * n) for each; stops at the first non-zero return and returns it. */
int wagg_cell_spread(const struct wagg_cell *c, uint64_t count,
                     int (*add)(void *ctx, int64_t body, uint64_t n), void *ctx);

/* Scales in[0..n) to integers out[0..n) summing to exactly target,
 * each in[i] * target / sum(in) rounded by largest remainder (ties in a
 * fixed scrambled order of the index, so that sorted cells do not give the
 * extra items to one end); all 0 when the sum is 0. */
void wagg_scale_counts(const int64_t *in, size_t n, uint64_t target, uint64_t *out);

#endif
