/* escape: output that is either streamed into a sink or stored in a
 * bounded buffer with snprintf's contract, and JSON string escaping on top
 * of it. Used by jsonb (JSON bodies, stats samples) and by prom (the
 * Prometheus escapers share the bounded/streamed output).
 *
 * Owns the byte layout of every JSON string slabtap emits. Must never do
 * I/O, allocate, or keep global state. */
#ifndef SLABTAP_CORE_ESCAPE_H
#define SLABTAP_CORE_ESCAPE_H

#include <stddef.h>

/* A sink: accept all len bytes and return 0, or accept none and return
 * non-zero. */
typedef int (*esc_write_fn)(void *ctx, const char *data, size_t len);

/* One escaper serves both the bounded snprintf-style functions and the
 * streaming writer, so the two can never escape differently. */
struct esc_out {
    esc_write_fn write; /* streaming when non-NULL */
    void *ctx;
    int failed;
    char *dst; /* bounded mode */
    size_t cap;
    size_t used; /* bytes actually stored in dst */
    int full;    /* stop storing: keeps dst a prefix of the full output */
    size_t len;  /* bytes the full output needs */
};

void esc_out_init_bounded(struct esc_out *o, char *dst, size_t cap);
void esc_out_init_sink(struct esc_out *o, esc_write_fn write, void *ctx);
/* whole: the piece is an escape sequence or a UTF-8 character, so a
 * bounded buffer takes all of it or none. */
void esc_out_put(struct esc_out *o, const char *p, size_t n, int whole);
/* NUL-terminates a bounded buffer; returns the length the full output
 * needs (so "return >= cap" means truncated). */
size_t esc_out_finish(struct esc_out *o);

/* JSON string content (no surrounding quotes): escapes " and \, writes
 * \b \f \n \r \t and \u00XX for other control bytes, and replaces every byte
 * that is not part of well-formed UTF-8 (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF) with \ufffd, so the output is always
 * valid JSON even for binary memcached keys. snprintf's contract, and an
 * escape sequence is never cut in half. */
size_t json_escape(char *dst, size_t cap, const char *src, size_t len);
/* How a string is escaped: JSON_ESC_TEXT as json_escape does; the other
 * two are the escapings of the strings a store keeps (record/rowcode's
 * extra, the recorded format: never change one): every control byte as
 * \u00XX (no short escapes), " and \ escaped, and
 *   JSON_ESC_STORE_BYTES: every byte >= 0x80 as it is (SQLite's json_extract
 *                         gives the bytes back exactly);
 *   JSON_ESC_STORE_UTF8:  NUL and every byte not part of well-formed UTF-8
 *                         as \ufffd (PostgreSQL's jsonb takes nothing else). */
enum json_esc_mode { JSON_ESC_TEXT, JSON_ESC_STORE_BYTES, JSON_ESC_STORE_UTF8 };
/* A string escaped by mode streamed into a sink; returns 0, or non-zero if
 * the sink refused (output is then incomplete). */
int json_escape_write(esc_write_fn write, void *ctx, const char *src, size_t len,
                      enum json_esc_mode mode);
/* Length of the well-formed UTF-8 sequence at s (avail bytes left): 1 for
 * ASCII but NUL, 2..4, or 0 (NUL, or not well-formed). */
size_t esc_utf8_len(const unsigned char *s, size_t avail);

#endif
