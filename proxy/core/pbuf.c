/* pbuf: recycled read buffers and write requests. Loop thread only. */
#include "core/pbuf.h"

#include <stddef.h>
#include <stdlib.h>

struct pbuf *pbuf_get(struct pbuf_pool *pool)
{
    struct pbuf *b = pool->free_bufs;
    if (b) {
        pool->free_bufs = b->next_free;
    } else {
        b = malloc(sizeof *b);
        if (!b)
            return NULL;
        pool->bufs_allocated++;
    }
    b->next_free = NULL;
    b->refs = 1;
    return b;
}

void pbuf_ref(struct pbuf *b)
{
    b->refs++;
}

void pbuf_unref(struct pbuf_pool *pool, struct pbuf *b)
{
    if (!b || --b->refs)
        return;
    b->next_free = pool->free_bufs;
    pool->free_bufs = b;
}

struct pbuf *pbuf_from_base(char *base)
{
    return (struct pbuf *)(base - offsetof(struct pbuf, data));
}

struct pwrite *pwrite_get(struct pbuf_pool *pool, struct pbuf *buf)
{
    struct pwrite *w = pool->free_writes;
    if (w) {
        pool->free_writes = w->next_free;
    } else {
        w = malloc(sizeof *w);
        if (!w)
            return NULL;
        pool->writes_allocated++;
    }
    w->next_free = NULL;
    w->buf = buf;
    if (buf)
        pbuf_ref(buf);
    w->nsegs = 0;
    w->bytes = 0;
    w->owner = NULL;
    return w;
}

void pwrite_put(struct pbuf_pool *pool, struct pwrite *w)
{
    pbuf_unref(pool, w->buf);
    w->buf = NULL;
    w->next_free = pool->free_writes;
    pool->free_writes = w;
}

void pbuf_pool_free(struct pbuf_pool *pool)
{
    while (pool->free_bufs) {
        struct pbuf *b = pool->free_bufs;
        pool->free_bufs = b->next_free;
        free(b);
    }
    while (pool->free_writes) {
        struct pwrite *w = pool->free_writes;
        pool->free_writes = w->next_free;
        free(w);
    }
}
