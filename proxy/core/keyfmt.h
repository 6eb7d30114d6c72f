/* keyfmt: what of a key gets recorded -- the whole key, its prefix, or only
 * its hash -- so operators can keep key text out of the database.
 * Must never allocate; output goes into the caller's fixed buffer. */
#ifndef SLABTAP_KEYFMT_H
#define SLABTAP_KEYFMT_H

#include <stddef.h>
#include <stdint.h>

enum keyfmt_mode { KEYFMT_FULL, KEYFMT_PREFIX, KEYFMT_HASH };

/* "full" / "prefix" / "hash"; returns -1 for anything else. */
int keyfmt_parse_mode(const char *s, enum keyfmt_mode *out);
const char *keyfmt_mode_name(enum keyfmt_mode mode);

/* 64-bit FNV-1a of the key bytes. */
uint64_t keyfmt_hash(const char *key, size_t len);

/* Writes the recorded text of key into out (at most cap-1 bytes, NUL
 * terminated) and returns its length, or -1 when the mode keeps no text.
 * Prefix: the part before the first ':' '/' '.' or '|' (empty when the key
 * has none, so undelimited keys never leak into the database). */
int keyfmt_text(enum keyfmt_mode mode, const char *key, size_t len, char *out, size_t cap);

#endif
