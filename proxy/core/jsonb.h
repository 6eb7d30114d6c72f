/* jsonb: JSON text written into a core/buf (stats samples for the
 * database, API bodies, extra's JSON of a recorded write): quoted strings
 * and number lists. Bytes go in with buf_puts / buf_printf; a buffer for
 * JSON is buf_init(&b, JSONB_MAX). Strings go through core/escape's
 * json_escape_write so binary keys still give valid JSON.
 *
 * Owns no memory (the buf does). Must never grow a buffer other than
 * through core/buf (so never past its max): a failed write marks the
 * buffer failed, and the caller checks once at the end. */
#ifndef SLABTAP_JSONB_H
#define SLABTAP_JSONB_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/escape.h"

#define JSONB_MAX (16u * 1024 * 1024)

void jsonb_string(struct buf *b, const char *s, size_t len); /* quoted and escaped */
/* The same with the escaping of mode (core/escape.h) */
void jsonb_string_as(struct buf *b, const char *s, size_t len, enum json_esc_mode mode);
/* n numbers, comma-separated (the inside of a JSON array) */
void jsonb_int64s(struct buf *b, const int64_t *v, size_t n);

#endif
