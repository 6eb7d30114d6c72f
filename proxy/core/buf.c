/* buf: the growable byte buffer and array growth. */
#include "core/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_FIRST 256 /* bytes of a first block */
#define BUF_FIRST_ELEMS 16

void buf_init(struct buf *b, size_t max)
{
    *b = (struct buf){ .max = max };
}

void buf_free(struct buf *b)
{
    free(b->data);
    buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    b->failed = false;
    if (b->data)
        b->data[0] = '\0';
}

int buf_reserve(struct buf *b, size_t n)
{
    if (b->failed)
        return -1;
    if (n < b->cap - b->len) /* cap > len whenever data is set */
        return 0;
    if (n >= b->max - b->len || n >= SIZE_MAX / 2 - b->len) {
        b->failed = true;
        return -1;
    }
    size_t need = b->len + n + 1;
    size_t nc = b->cap ? b->cap : BUF_FIRST;
    while (nc < need)
        nc *= 2;
    if (nc > b->max)
        nc = b->max;
    char *p = realloc(b->data, nc);
    if (!p) {
        b->failed = true;
        return -1;
    }
    if (!b->data)
        p[0] = '\0';
    b->data = p;
    b->cap = nc;
    return 0;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
    if (buf_reserve(b, n))
        return -1;
    if (n)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

void buf_puts(struct buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
    /* straight into the block: a second pass only when it had to grow */
    if (buf_reserve(b, 0))
        return;
    for (int pass = 0; pass < 2; pass++) {
        size_t room = b->cap - b->len;
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->data + b->len, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->data[b->len] = '\0';
            b->failed = true;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        b->data[b->len] = '\0';
        if (buf_reserve(b, (size_t)n))
            return;
    }
}

char *buf_take(struct buf *b)
{
    char *s = NULL;
    if (!b->failed)
        s = b->data ? b->data : strdup("");
    else
        free(b->data);
    buf_init(b, b->max);
    return s;
}

void *buf_grow(void *p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return p;
    size_t nc = *cap ? *cap : BUF_FIRST_ELEMS;
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return NULL;
        nc *= 2;
    }
    if (elem && nc > SIZE_MAX / elem)
        return NULL;
    void *np = realloc(p, nc * elem);
    if (!np)
        return NULL;
    *cap = nc;
    return np;
}
