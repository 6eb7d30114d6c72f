/* jsonb: a growable heap buffer for building JSON text (stats samples for
 * the database, API bodies). Strings go through core/escape's json_escape so
 * binary keys still give valid JSON.
 * Must never grow past its cap; a failed append marks it failed, and the
 * caller checks once at the end. */
#ifndef SLABTAP_JSONB_H
#define SLABTAP_JSONB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSONB_MAX (16u * 1024 * 1024)

struct jsonb {
    char *data;
    size_t len, cap;
    bool failed;
};

void jsonb_init(struct jsonb *b);
void jsonb_free(struct jsonb *b);
/* Hands the NUL-terminated text to the caller (NULL when failed). */
char *jsonb_take(struct jsonb *b);
int jsonb_write(void *b, const char *data, size_t len); /* an esc_write_fn sink */
void jsonb_raw(struct jsonb *b, const char *s);
void jsonb_printf(struct jsonb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jsonb_string(struct jsonb *b, const char *s, size_t len); /* quoted and escaped */
/* n numbers, comma-separated (the inside of a JSON array) */
void jsonb_int64s(struct jsonb *b, const int64_t *v, size_t n);

#endif
