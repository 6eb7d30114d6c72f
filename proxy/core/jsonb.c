/* jsonb: JSON strings and numbers into a core/buf. */
#include "core/jsonb.h"

/* core/escape's sink */
static int jsonb_write(void *ctx, const char *data, size_t len)
{
    return buf_append(ctx, data, len);
}

void jsonb_string(struct buf *b, const char *s, size_t len)
{
    jsonb_string_as(b, s, len, JSON_ESC_TEXT);
}

void jsonb_string_as(struct buf *b, const char *s, size_t len, enum json_esc_mode mode)
{
    buf_append(b, "\"", 1);
    if (json_escape_write(jsonb_write, b, s, len, mode))
        b->failed = true;
    buf_append(b, "\"", 1);
}

void jsonb_int64s(struct buf *b, const int64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        buf_printf(b, "%s%lld", i ? "," : "", (long long)v[i]);
}
