/* replay: sources of operations other than workload files -- a run slabtap
 * recorded (SQLite table `sets`), a Twitter cache trace
 * (twitter/cache-trace CSV) and a Meta CacheLib kvcache trace (CSV with a
 * header) -- read lazily, one row at a time, into workload_items.
 *
 * Owns: the row -> operation mapping (documented in experiments/README.md,
 * "Replaying"), deterministic key regeneration, and file:line errors.
 * Must never: hold more than one row in memory, send anything, or guess
 * silently: a malformed row is an error naming its line; the only rows
 * skipped on purpose (recorded commands with no text-protocol equivalent)
 * are counted.
 *
 * Keys: a row's key is sent as is when it is a usable memcached key of
 * exactly the recorded length. Otherwise (the recorder kept only a prefix
 * or a hash, or the trace's anonymized key is not as long as the original)
 * it is regenerated from the 64-bit key hash: [prefix] + 11 base-64 digits
 * of the hash, padded with '.' or cut to the recorded length. Equal keys
 * stay equal; distinct keys stay distinct whenever the length allows the
 * 11 digits (keys of 11 bytes or more).
 */
#ifndef SLABTAP_REPLAY_H
#define SLABTAP_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "load/workload.h"

#define REPLAY_LINE_MAX 4096 /* one CSV row, newline included */
#define REPLAY_FIELDS_MAX 32 /* CSV columns */
#define REPLAY_ERR_MAX 384
#define REPLAY_HASH_DIGITS 11        /* base-64 digits that hold 64 bits */
#define REPLAY_OP_COUNT_MAX 1000000u /* CacheLib op_count of one row */
/* memcached reads an exptime above 30 days as an absolute unix time; the
 * traces give relative TTLs, so longer ones are sent as 30 days. */
#define REPLAY_TTL_MAX 2592000

enum replay_kind { REPLAY_DB, REPLAY_TWITTER, REPLAY_CACHELIB };

#define REPLAY_STATUSES(X) \
    X(REPLAY_OK, "ok") \
    X(REPLAY_SKIP, "row carries no operation") \
    X(REPLAY_E_ARG, "bad argument") \
    X(REPLAY_E_OPEN, "cannot open") \
    X(REPLAY_E_FORMAT, "malformed row") \
    X(REPLAY_E_DB, "database error") \
    X(REPLAY_E_MEMORY, "out of memory")

enum replay_status {
#define REPLAY_STATUS_ENUM(id, text) id,
    REPLAY_STATUSES(REPLAY_STATUS_ENUM)
#undef REPLAY_STATUS_ENUM
        REPLAY_STATUS_COUNT
};

const char *replay_status_str(enum replay_status st);

struct replay; /* an open source */

/* run_id 0: the newest run recorded in the file (REPLAY_DB only). */
enum replay_status replay_open(struct replay **out, enum replay_kind kind, const char *path,
                               int64_t run_id, char *err, size_t errlen);
void replay_close(struct replay *r);
/* ITEM (always an op), END, or ERROR with err set ("file:line: why"). */
enum workload_next replay_next(struct replay *r, struct workload_item *it, char *err,
                               size_t errlen);
uint64_t replay_total(const struct replay *r);   /* ops to come; 0 when unknown */
uint64_t replay_skipped(const struct replay *r); /* recorded rows not replayable */
int64_t replay_run_id(const struct replay *r);   /* REPLAY_DB: the run read */

/* ---- the pure parts, exposed for tests -------------------------------- */

/* A byte string memcached's text protocol accepts as a key: 1..250 bytes,
 * no control characters, blanks or DEL. */
bool replay_key_usable(const char *key, size_t len);
/* The regenerated key (see above) into out[key_len + 1]; key_len 1..250. */
void replay_key_make(uint64_t hash, const char *prefix, size_t prefix_len, uint32_t key_len,
                     char *out);
/* A recorded command name -> what is sent (cas and ms as set, md as
 * delete, ma as incr); false for commands that cannot be replayed. */
bool replay_db_cmd(const char *cmd, enum workload_cmd *out);
/* The same with the ms mode recorded beside it (schema v3): ms ME is an
 * add, MA an append, MP a prepend, MR a replace, MS or none a set. */
bool replay_db_cmd_mode(const char *cmd, char ms_mode, enum workload_cmd *out);

/* One Twitter trace row (line without its newline; modified in place). */
enum replay_status replay_twitter_parse(char *line, struct workload_op *op, char *why,
                                        size_t whylen);

/* Column positions of a CacheLib kvcache header; -1 when absent. */
struct replay_cachelib_cols {
    int key, key_size, op, op_count, size, ttl;
    int n_fields;
};
enum replay_status replay_cachelib_header(char *line, struct replay_cachelib_cols *cols, char *why,
                                          size_t whylen);
/* One data row: the op and how many times it repeats (op_count). */
enum replay_status replay_cachelib_parse(char *line, const struct replay_cachelib_cols *cols,
                                         struct workload_op *op, uint64_t *count, char *why,
                                         size_t whylen);

#endif
