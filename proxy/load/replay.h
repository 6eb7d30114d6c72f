/* replay: sources of operations other than workload files -- a run slabtap
 * recorded (the view `sets` of a SQLite file or a PostgreSQL database, read
 * through record/reader.h), a Twitter cache trace
 * (twitter/cache-trace CSV) and a Meta CacheLib kvcache trace (CSV with a
 * header) -- read lazily, one row at a time, into workload_items (after
 * one read-ahead for counter keys, below).
 *
 * Owns: the row -> operation mapping (documented in experiments/README.md,
 * "Replaying"; for recorded runs the command and key rules are
 * record/rowseq.h's, shared with the capacity advice), which keys are
 * counters, and file:line errors.
 * Must never: hold more than one row in memory (besides the counter
 * filter, of fixed size), send anything, or guess silently: a malformed
 * row is an error naming its line; the only rows skipped on purpose
 * (recorded commands with no text-protocol equivalent) are counted, and
 * keys cut to 250 bytes are counted and logged.
 *
 * Keys: a row's key is sent as is when it is a usable memcached key of
 * exactly the recorded length. Otherwise (the recorder kept only a prefix
 * or a hash, or the trace's anonymized key is not as long as the original)
 * it is regenerated from the 64-bit key hash: [prefix] + 11 base-64 digits
 * of the hash, padded with '.' or cut to the recorded length. Equal keys
 * stay equal; distinct keys stay distinct whenever the length allows the
 * 11 digits (keys of 11 bytes or more).
 *
 * Keys over memcached's 250 bytes: Twitter's and CacheLib's caches hold
 * keys of up to 255 bytes, so their traces can name 251..255-byte keys that
 * memcached refuses. Both trace readers treat them alike: cut, counted and
 * warned about, never refused and never silent. A row whose key size is
 * 251..REPLAY_KEY_SIZE_MAX is replayed with a 250-byte key (regenerated from
 * the hash, so distinct keys stay distinct; the item is up to 5 bytes
 * smaller than the original's); the first such row is logged with its
 * file:line as it is read, and replay_close logs how many rows were cut.
 * A key size of 0 or above REPLAY_KEY_SIZE_MAX is a malformed row.
 * Recorded runs hold only keys memcached took (1..250 bytes); anything else
 * there is a malformed row.
 *
 * Counters: memcached counts (incr, decr, ma) only a value that reads as a
 * decimal number, and the load generator's values are letters, so a key
 * the source increments or decrements somewhere (a "counter key") gets
 * digits instead: every write to it carries a value of the recorded
 * length that reads as a number (replay_value_digits): a set (add,
 * replace, cas) the number 1 zero-padded ("0001"), so that an incr
 * rewrites it in place at the same length as on the original; a prepend
 * zeros and an append blanks (memcached pads a counter it rewrites in place
 * with blanks), so the value still reads as the same number afterwards
 * (appended digits would multiply it past 64 bits). A length of 0 stays
 * empty (memcached refuses to count it, as it would have then). memcached
 * reads any number of leading zeros, so lengths over 20 digits count too;
 * the one limit is memcached's own: a value it stores chunked (over
 * slab_chunk_max, 512 KiB by default) is never counted. Other keys keep
 * letter values.
 *
 * Which keys are counters is found before the first operation, by
 * replay_open: for a Twitter trace a first pass over the file that parses
 * only the incr/decr rows (then the file is read again from the start);
 * for a recorded run one query over the run's incr/decr/ma rows, leaving
 * out keys whose every recorded incr was refused as non-numeric (those
 * keep letters, so the replay is refused the same way); CacheLib kvcache
 * traces have no counter operations. Each counter key, as sent (after
 * regeneration), goes into a Bloom filter of REPLAY_COUNTER_BITS bits
 * (4 MiB, allocated on the first counter key) with REPLAY_COUNTER_PROBES
 * probes: memory is bounded whatever the trace. A false positive only
 * gives a key that is never counted digits instead of letters of the same
 * length, which changes no item size, slab class or answer; it happens to
 * 2e-8 of keys with 100,000 counter keys, 1.6e-4 with 1 M, 2 % with 4 M.
 * A trace that cannot be read twice (a pipe) gets digits for every value,
 * the filter's limit, with a warning.
 *
 * Reads (REPLAY_DB, after replay_db_reads): a store whose run has a
 * `reads` view or table (run_id, seq, after_write, conn_id, t_ns, cmd, key,
 * key_hash, key_len, hit, value_len, flags, exptime, class_id) is replayed
 * writes AND reads, merged: the read with after_write A goes after the
 * write with seq A and before the write A + 1 (A 0: before every write),
 * reads sharing an A in their seq order (replay_merge_take_write). Two
 * cursors stream side by side (sets ORDER BY seq, reads ORDER BY
 * after_write, seq): no more than one row of each in memory. A read is a
 * get (gets a gets, gat/gats a gat with the recorded exptime, mg a get).
 *
 * Demand fill (default on for a run with reads): a read carries fill, so
 * that a miss is followed by a set, with value_len and flags = the key's
 * last known value (its last write or last hit so far in the stream, this
 * read's own hit included) and ttl 0, unless the recording shows the next
 * request for that key is a write (then the recorded write follows and
 * fills it: fill = false), or no length is known (no fill). "Next" comes
 * from the store: LEAD over the merged order partitioned by key_hash, in
 * the reads query; SQLite and PostgreSQL sort for it with bounded memory,
 * spilling to temporary files, so the run is never held in memory here. The last known
 * lengths sit in a direct-mapped table of REPLAY_FILL_SLOTS entries by key
 * hash (16 MiB, allocated with the first read): a key whose entry another
 * key has taken since is unknown (no fill, counted in fill_unknown).
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
#define REPLAY_OP_COUNT_MAX 1000000u   /* CacheLib op_count of one row */
#define REPLAY_KEY_SIZE_MAX 65535u     /* a trace's key size; over 250 is cut */
#define REPLAY_COUNTER_BITS (1u << 25) /* Bloom filter of counter keys: 4 MiB */
#define REPLAY_COUNTER_PROBES 4
/* memcached reads an exptime above 30 days as an absolute unix time; the
 * traces give relative TTLs, so longer ones are sent as 30 days. */
#define REPLAY_TTL_MAX 2592000
#define REPLAY_FILL_SLOTS (1u << 20) /* last known value lengths, by key hash */

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

/* run_id 0: the newest run recorded in the store (REPLAY_DB only: path a
 * SQLite file or a postgresql:// URI). */
enum replay_status replay_open(struct replay **out, enum replay_kind kind, const char *path,
                               int64_t run_id, char *err, size_t errlen);
void replay_close(struct replay *r);
/* ITEM (always an op), END, or ERROR with err set ("file:line: why"). */
enum workload_next replay_next(struct replay *r, struct workload_item *it, char *err,
                               size_t errlen);
uint64_t replay_total(const struct replay *r);    /* ops to come; 0 when unknown */
uint64_t replay_skipped(const struct replay *r);  /* recorded rows not replayable */
int64_t replay_run_id(const struct replay *r);    /* REPLAY_DB: the run read */
uint64_t replay_keys_cut(const struct replay *r); /* rows whose key was cut to 250 */
/* incr/decr operations found ahead, and the counter keys they name (as
 * marked in the filter: distinct keys, less the filter's collisions):
 * every write to those keys is sent with digits. The caller says so (once,
 * however many times it replays the same run). */
uint64_t replay_counter_ops(const struct replay *r);
uint64_t replay_counter_keys(const struct replay *r);
/* Whether some write may need digits (so the sender needs a digit buffer). */
bool replay_has_counters(const struct replay *r);
/* Whether op, a write from this source, must carry replay_value_digits
 * (its key is a counter key); false for anything but writes. */
bool replay_value_numeric(const struct replay *r, const struct workload_op *op);

/* REPLAY_DB: also the run's reads, when the file has a `reads` view or
 * table (older files have none: writes only, as before, and this is a
 * no-op); demand_fill marks them as above. Call before the first
 * replay_next. */
enum replay_status replay_db_reads(struct replay *r, bool demand_fill, char *err, size_t errlen);
uint64_t replay_reads_total(const struct replay *r); /* reads to come (of replay_total) */
bool replay_can_fill(const struct replay *r);        /* reads with demand fill */
/* Reads given no fill: the next request for the key was a recorded
 * write; no length known for the key. */
uint64_t replay_fill_next_write(const struct replay *r);
uint64_t replay_fill_unknown(const struct replay *r);

/* ---- the pure parts, exposed for tests -------------------------------- */

/* The merge: whether the next op is the pending write (seq w_seq) rather
 * than the pending read (after_write r_after); has_*: the cursor has one. */
bool replay_merge_take_write(bool has_write, int64_t w_seq, bool has_read, int64_t r_after);
/* A recorded read command -> what is sent (get, gets, gat, gats as gat, mg
 * as get); false for anything else. */
bool replay_db_read_cmd(const char *cmd, enum workload_cmd *out);

/* A recorded command name -> what is sent (the rule is record/rowseq.h's
 * rowseq_write_cmd: cas and ms as set, md as delete, ma as incr); false
 * for commands that cannot be replayed. */
bool replay_db_cmd(const char *cmd, enum workload_cmd *out);
/* The same with the ms mode recorded beside it (schema v3): ms ME is an
 * add, MA an append, MP a prepend, MR a replace, MS or none a set. */
bool replay_db_cmd_mode(const char *cmd, char ms_mode, enum workload_cmd *out);

/* A counter key's value of len bytes for write cmd into out (not
 * NUL-terminated): set/add/replace len - 1 '0's then '1', prepend len
 * '0's, append len blanks; nothing for len 0. The value of len bytes is
 * always the last len bytes of a longer one (one byte repeated, then at
 * most one other), so a sender may cut a long value from a short buffer. */
void replay_value_digits(enum workload_cmd cmd, char *out, uint64_t len);

/* One Twitter trace row (line without its newline; modified in place).
 * *cut_from (may be NULL) is set to the row's key size when the key was cut
 * to 250 bytes, else to 0. */
enum replay_status replay_twitter_parse(char *line, struct workload_op *op, uint32_t *cut_from,
                                        char *why, size_t whylen);
/* Whether a Twitter row (line without its newline) is an incr or decr:
 * the test the first pass makes before parsing a row. */
bool replay_twitter_is_counter_row(const char *line, size_t len);

/* Column positions of a CacheLib kvcache header; -1 when absent. */
struct replay_cachelib_cols {
    int key, key_size, op, op_count, size, ttl;
    int n_fields;
};
/* A header that lacks a required column (key, op, size) or names a known
 * column twice is refused with every such column named. */
enum replay_status replay_cachelib_header(char *line, struct replay_cachelib_cols *cols, char *why,
                                          size_t whylen);
/* One data row: the op and how many times it repeats (op_count); cut_from
 * as for replay_twitter_parse. */
enum replay_status replay_cachelib_parse(char *line, const struct replay_cachelib_cols *cols,
                                         struct workload_op *op, uint64_t *count,
                                         uint32_t *cut_from, char *why, size_t whylen);

#endif
