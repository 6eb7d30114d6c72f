/* binrec: recording the writes of a binary-protocol client. Its bytes pass
 * through unchanged on a memcached connection of its own (proxy.c); binrec
 * reads copies of both directions with protocol/mc_binary, pairs every
 * response (and every quiet write's silent success) with its request, and
 * hands each write to the recorder like a text write: key, lengths, flags,
 * exptime, memcached's answer (mcb_answer_label), latency.
 *
 * Owns the parsers, the pairing queue and the writes waiting for their
 * answer, at most BINREC_MAX_PENDING requests; past that (a client sending
 * that many quiet writes without one request memcached must answer) or on
 * a stream it cannot frame, it stops recording that connection and counts
 * every write it did not record (binary_writes_unrecorded), never silently.
 * Must never change, hold back or reorder a byte; never block. */
#ifndef SLABTAP_BINREC_H
#define SLABTAP_BINREC_H

#include <stddef.h>
#include <stdint.h>

struct proxy;
struct binrec;

#define BINREC_MAX_PENDING 16384

/* NULL when out of memory (the connection then goes unrecorded, counted). */
struct binrec *binrec_open(struct proxy *px, uint32_t conn_id);
/* Bytes the client sent, as forwarded to memcached. */
void binrec_requests(struct binrec *br, const char *data, size_t len);
/* Bytes memcached answered, as forwarded to the client. */
void binrec_responses(struct binrec *br, const char *data, size_t len);
/* The connection ended: what memcached never answered is recorded
 * no_answer (quiet writes before a quitq as succeeded); br is freed. */
void binrec_close(struct binrec *br);

#endif
