/* readrec: every key a read (get gets gat gats mg) asks for becomes a row
 * (record/row.h REC_ROW_READ): its keys are taken from the request line at
 * parse time, numbered in key order with the run's read sequence and the
 * write sequence they came after, and paired with memcached's VALUE lines
 * (hits, in request order; a key with none is a miss) when the answer is
 * read.
 *
 * Owns each multiget's key block (the hash, length and recorded text of
 * every key past the first -- the whole key when shadows are mirrored to,
 * server/shadow.h, its recorded text then made at emit -- one allocation
 * held by the pending entry from readrec_capture until readrec_finish
 * frees it). With shadows every key read goes to shadow_read, whether or
 * not reads are recorded (--reads off: no row) or its key is sampled. Must never keep a
 * pointer into a client's buffer, nor lose a key silently: a key the
 * parser did not keep whole (past MC_LINE_MAX of the line) or that memory
 * did not allow to keep is counted lost (REC_LOST_READ_KEY_CUT /
 * REC_LOST_READ_KEY_NOMEM). */
#ifndef SLABTAP_SERVER_READREC_H
#define SLABTAP_SERVER_READREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_parse.h"
#include "protocol/pending.h"

struct proxy;

/* One key of a multiget, as recorded. */
struct readrec_key {
    uint64_t hash;     /* keyfmt_hash of the key as sent */
    uint16_t len;      /* bytes as sent */
    int16_t text_len;  /* recorded text (keyfmt_text), -1: none */
    uint32_t text_off; /* into readrec_keys.text */
};

struct readrec_keys {
    uint32_t n;
    bool full;                /* text holds whole keys (shadows were mirrored to when it
                  was captured), else the --keys text */
    struct readrec_key *keys; /* n, in the order asked */
    char *text;
};

/* Pure: the keys of a get/gets/gat/gats request line as the parser keeps
 * it (line: len bytes): calls fn (if not NULL) for each key in order and
 * returns how many there are. A line the parser cut (fewer keys than the
 * request's nkeys) may end in part of a key: the caller drops the last. */
size_t readrec_split(const char *line, size_t len, enum mc_cmd cmd,
                     void (*fn)(void *ud, const char *key, size_t key_len), void *ud);

/* The request e (forwarded or answered here) was just parsed by p: its
 * keys get their read sequence numbers and are kept for the answer. */
void readrec_capture(struct proxy *px, struct pending_entry *e, const struct mc_req_parser *p);
/* A VALUE line of e's answer (get family): the hit of the next key it
 * names; the keys before it are misses. */
void readrec_value(struct proxy *px, struct pending_entry *e, const struct mc_line *l);
/* e's answer is over (answer: its first line for mg, END or an error, a
 * label of slabtap's own for a silent or failed one): the rows of every
 * key not yet recorded; frees the key block. */
void readrec_finish(struct proxy *px, struct pending_entry *e, const char *answer, size_t len);

#endif
