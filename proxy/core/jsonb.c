/* jsonb: growable JSON text buffer. */
#include "core/jsonb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"

void jsonb_init(struct jsonb *b)
{
    memset(b, 0, sizeof *b);
}

void jsonb_free(struct jsonb *b)
{
    free(b->data);
    jsonb_init(b);
}

char *jsonb_take(struct jsonb *b)
{
    char *s = b->failed ? NULL : b->data;
    if (!s)
        free(b->data);
    jsonb_init(b);
    return s;
}

int jsonb_write(void *ctx, const char *data, size_t len)
{
    struct jsonb *b = ctx;
    if (b->failed)
        return -1;
    if (b->len + len + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 256;
        while (ncap < b->len + len + 1)
            ncap *= 2;
        char *n = ncap <= JSONB_MAX ? realloc(b->data, ncap) : NULL;
        if (!n) {
            b->failed = true;
            return -1;
        }
        b->data = n;
        b->cap = ncap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

void jsonb_raw(struct jsonb *b, const char *s)
{
    jsonb_write(b, s, strlen(s));
}

void jsonb_printf(struct jsonb *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        jsonb_write(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    jsonb_write(b, big, (size_t)n);
    free(big);
}

void jsonb_string(struct jsonb *b, const char *s, size_t len)
{
    jsonb_write(b, "\"", 1);
    if (json_escape_write(jsonb_write, b, s, len))
        b->failed = true;
    jsonb_write(b, "\"", 1);
}

void jsonb_int64s(struct jsonb *b, const int64_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        jsonb_printf(b, "%s%lld", i ? "," : "", (long long)v[i]);
}
