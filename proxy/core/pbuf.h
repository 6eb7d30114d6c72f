/* pbuf: reference-counted read buffers and write requests, recycled through
 * free lists so the hot path never mallocs per request.
 * A buffer read from one socket is written to the other as it is: never
 * copied, never modified. Must never be touched off the loop thread. */
#ifndef SLABTAP_PBUF_H
#define SLABTAP_PBUF_H

#include <stddef.h>
#include <uv.h>

#define PBUF_SIZE (64 * 1024)
#define PWRITE_SEGS 8
#define PWRITE_INLINE 64

struct pbuf {
    struct pbuf *next_free;
    unsigned refs;
    char data[PBUF_SIZE];
};

/* One uv_write: up to PWRITE_SEGS slices of one pbuf, or inline bytes. */
struct pwrite {
    uv_write_t req;
    struct pwrite *next_free;
    struct pbuf *buf;           /* NULL for inline / static data */
    uv_buf_t segs[PWRITE_SEGS];
    unsigned nsegs;
    size_t bytes;
    void *owner;
    char inline_data[PWRITE_INLINE];
};

struct pbuf_pool {
    struct pbuf *free_bufs;
    struct pwrite *free_writes;
    size_t bufs_allocated, writes_allocated;
};

struct pbuf *pbuf_get(struct pbuf_pool *pool);
void pbuf_ref(struct pbuf *b);
void pbuf_unref(struct pbuf_pool *pool, struct pbuf *b);
struct pbuf *pbuf_from_base(char *base);

struct pwrite *pwrite_get(struct pbuf_pool *pool, struct pbuf *buf);
void pwrite_put(struct pbuf_pool *pool, struct pwrite *w);

void pbuf_pool_free(struct pbuf_pool *pool);

#endif
