/* rowseq: a recorded run's writes read back in sequence order, as a replay
 * sends them -- the one reader behind the capacity advice of
 * `slabtap model advise` (cli/model_cmd.c) and of the page's
 * /api/run/advice (record/query.c), and the key and command rules
 * load/replay.c sends recorded runs by.
 *
 * Owns: which recorded command is sent as which (cas and ms as set, ms
 * with mode E/A/P/R as add/append/prepend/replace, md as delete, ma as
 * incr), the key a recorded row is sent with (the text when it is the
 * whole key its hash was taken of and usable, else regenerated from the
 * hash: load/replay.h says how), and the capacity sequence of a run's
 * writes (rowseq_capacity): one row in memory at a time besides the
 * sequence itself, with progress.
 * Must never write to the database, print, or open a connection: the
 * caller hands over its reader (record/reader.h; the page's advice: a
 * reader on a read-only connection of its own, never the writer's). */
#ifndef SLABTAP_RECORD_ROWSEQ_H
#define SLABTAP_RECORD_ROWSEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/capacity.h"
#include "protocol/mc_parse.h"
#include "record/reader.h"

#define ROWSEQ_HASH_DIGITS 11 /* base-64 digits that hold 64 bits */

/* A byte string memcached's text protocol accepts as a key: 1..250 bytes,
 * no control characters, blanks or DEL. */
bool rowseq_key_usable(const char *key, size_t len);
/* The regenerated key into out[key_len + 1]: [prefix] + 11 base-64 digits
 * of hash, padded with '.' or cut to key_len (1..250); the prefix only
 * when usable and the 11 digits still fit. */
void rowseq_key_make(uint64_t hash, const char *prefix, size_t prefix_len, uint32_t key_len,
                     char *out);
/* The key a recorded row is sent with (out[key_len + 1]): its text when
 * that is the whole key (key_text_len == key_len and the hash matches) and
 * usable, else regenerated from hash with the text as prefix. */
void rowseq_key(const char *key, size_t key_text_len, uint64_t hash, uint32_t key_len, char *out);

/* A recorded write command (and the ms mode beside it, 0: none) to what is
 * sent: MC_CMD_SET ADD REPLACE APPEND PREPEND DELETE INCR DECR TOUCH;
 * false for a command that cannot be replayed (reads included). */
bool rowseq_write_cmd(const char *cmd, char ms_mode, enum mc_cmd *out);

/* Called every ROWSEQ_PROGRESS_ROWS rows read (and at the end): rows read
 * of total; false stops the reading (rowseq_capacity returns -1, "stopped"). */
#define ROWSEQ_PROGRESS_ROWS 20000
typedef bool (*rowseq_progress_fn)(void *ud, uint64_t done, uint64_t total);

/* The writes of run run_id (0: the latest) from rd (either engine), in seq order, as the
 * capacity sequence a replay on one connection makes: each key the hash of
 * the key as sent, every request at t = 0 (the replay sends as fast as it
 * can: exptimes count from its start); rows whose command cannot be
 * replayed are passed over. *total (may be NULL) gets the run's rows. 0, or
 * -1 with err (a run without writes, a malformed row, out of memory). */
int rowseq_capacity(struct reader *rd, int64_t run_id, struct capacity_seq *out,
                    rowseq_progress_fn progress, void *ud, uint64_t *total, char *err,
                    size_t errlen);

#endif
