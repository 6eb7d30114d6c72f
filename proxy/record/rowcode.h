/* rowcode: the compact encoding of one recorded write -- the packed
 * integers `op` and `sizes`, flags + exptime in `fe`, and the JSON of
 * `extra` for what does not fit -- that schema/schema.sql.in documents bit by
 * bit and pg/schema.sql reads back the same way.
 *
 * Owns the bit layout and the JSON of extra, for both stores (store.c,
 * pgstore.c): one encoder, so SQLite and PostgreSQL can never disagree on
 * what a row means. Must never look anything up (dictionary ids come in
 * resolved), allocate beyond the caller's buf, or print: a row that
 * cannot be encoded returns -1 for the caller to report. */
#ifndef SLABTAP_ROWCODE_H
#define SLABTAP_ROWCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* what the packed column `op` has room for */
#define ROWCODE_KEY_LEN_MAX 255
#define ROWCODE_CLASS_MAX 63
#define ROWCODE_CMD_MAX 63
#define ROWCODE_ANSWER_MAX (INT64_C(1) << 42)

struct rowcode_opt {
    bool has;
    int64_t v;
};

/* One write with its dictionary ids resolved. */
struct rowcode_in {
    int cmd_id;                          /* 1..63, or 0: cmd and ms_mode go to extra */
    bool cmd_has_flags, cmd_has_exptime; /* what cmds says of cmd_id */
    const char *cmd, *ms_mode;           /* ms_mode NULL: none */
    size_t cmd_len, ms_len;
    int64_t answer_id; /* >= 1, or 0: the answer goes to extra */
    const char *answer;
    size_t answer_len;
    struct rowcode_opt key_len, value_len, flags, exptime, latency_ns, class_id;
    bool latency_exact; /* keep nanoseconds that are not whole microseconds */
};

/* How extra's strings are written: bytes as they are (SQLite: json_extract
 * gives them back exactly), or valid UTF-8 with every other byte as
 * U+FFFD (PostgreSQL's jsonb takes nothing else). */
enum rowcode_text { ROWCODE_TEXT_BYTES, ROWCODE_TEXT_UTF8 };

struct rowcode_out {
    int64_t op, sizes;
    int64_t fe; /* flags << 32 | exptime, when !json (0: both 0) */
    bool json;  /* extra is the JSON in the buffer (else fe, or NULL) */
};

/* Encodes in into out (and extra's JSON into buf, emptied first, when
 * out->json): 0, or -1 when the JSON did not fit buf (out of memory, or
 * past its max). buf is the caller's, reused row after row. */
int rowcode_encode(const struct rowcode_in *in, enum rowcode_text text, struct buf *buf,
                   struct rowcode_out *out);

#endif
