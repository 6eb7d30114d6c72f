/* pbuf: recycled read buffers and write requests. Loop thread only. */
#include "core/pbuf.h"

#include <malloc.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct pbuf *pbuf_get(struct pbuf_pool *pool)
{
    struct pbuf *b = pool->free_bufs;
    if (b) {
        pool->free_bufs = b->next_free;
        pool->free_count--;
    } else {
        b = malloc(sizeof *b + PBUF_SIZE);
        if (!b)
            return NULL;
        b->cap = PBUF_SIZE;
        pool->bufs_allocated++;
    }
    b->next_free = NULL;
    b->refs = 1;
    b->len = 0;
    return b;
}

struct pbuf *pbuf_get_size(struct pbuf_pool *pool, size_t cap)
{
    struct pbuf *b;
    if (cap <= PBUF_SIZE)
        return pbuf_get(pool);
    b = malloc(sizeof *b + cap);
    if (!b)
        return NULL;
    b->next_free = NULL;
    b->refs = 1;
    b->cap = cap;
    b->len = 0;
    pool->big_bytes += cap;
    return b;
}

bool pbuf_append(struct pbuf_pool *pool, struct pbuf **b, const char *data, size_t len)
{
    struct pbuf *old = *b, *nb;
    size_t have = old ? old->len : 0;
    if (old && have + len <= old->cap) {
        memcpy(old->data + have, data, len);
        old->len += len;
        return true;
    }
    if (!(nb = pbuf_get_size(pool, have + len)))
        return false;
    if (have)
        memcpy(nb->data, old->data, have);
    memcpy(nb->data + have, data, len);
    nb->len = have + len;
    pbuf_unref(pool, old);
    *b = nb;
    return true;
}

void pbuf_ref(struct pbuf *b)
{
    b->refs++;
}

void pbuf_unref(struct pbuf_pool *pool, struct pbuf *b)
{
    if (!b || --b->refs)
        return;
    if (b->cap != PBUF_SIZE) {
        pool->big_bytes -= b->cap;
        free(b);
        return;
    }
    if (pool->free_count >= PBUF_POOL_KEEP) {
        pool->bufs_allocated--;
        free(b);
        return;
    }
    b->next_free = pool->free_bufs;
    pool->free_bufs = b;
    pool->free_count++;
}

struct pbuf *pbuf_from_base(char *base)
{
    return (struct pbuf *)(base - offsetof(struct pbuf, data));
}

struct pwrite *pwrite_get(struct pbuf_pool *pool)
{
    struct pwrite *w = pool->free_writes;
    if (w) {
        pool->free_writes = w->next_free;
        pool->free_writes_count--;
    } else {
        w = malloc(sizeof *w);
        if (!w)
            return NULL;
        pool->writes_allocated++;
    }
    w->next_free = NULL;
    w->nsegs = 0;
    w->first = 0;
    w->bytes = 0;
    w->owner = NULL;
    return w;
}

void pwrite_put(struct pbuf_pool *pool, struct pwrite *w)
{
    for (unsigned i = 0; i < w->nsegs; i++)
        pbuf_unref(pool, w->bufs[i]);
    w->nsegs = 0;
    if (pool->free_writes_count >= PBUF_POOL_KEEP) {
        pool->writes_allocated--;
        free(w);
        return;
    }
    w->next_free = pool->free_writes;
    pool->free_writes = w;
    pool->free_writes_count++;
}

bool pwrite_add(struct pwrite *w, struct pbuf *b, size_t off, size_t len)
{
    if (len == 0)
        return true;
    if (w->nsegs) {
        uv_buf_t *last = &w->segs[w->nsegs - 1];
        if (w->bufs[w->nsegs - 1] == b && last->base + last->len == b->data + off) {
            last->len += len;
            w->bytes += len;
            return true;
        }
    }
    if (w->nsegs == PWRITE_SEGS)
        return false;
    pbuf_ref(b);
    w->bufs[w->nsegs] = b;
    w->segs[w->nsegs++] = uv_buf_init(b->data + off, (unsigned)len);
    w->bytes += len;
    return true;
}

/* Skips the first n bytes of w's slices (sent by uv_try_write). */
static void pwrite_advance(struct pwrite *w, size_t n)
{
    while (n && w->first < w->nsegs) {
        uv_buf_t *s = &w->segs[w->first];
        if (n < s->len) {
            s->base += n;
            s->len -= n;
            return;
        }
        n -= s->len;
        w->first++;
    }
}

/* The unsent slices of w into one new buffer, when they fit one. */
static void pwrite_compact(struct pbuf_pool *pool, struct pwrite *w)
{
    size_t left = 0, off = 0;
    struct pbuf *nb;
    for (unsigned i = w->first; i < w->nsegs; i++)
        left += w->segs[i].len;
    if (left > PBUF_SIZE || w->nsegs - w->first < 2 || !(nb = pbuf_get(pool)))
        return;
    for (unsigned i = w->first; i < w->nsegs; i++) {
        memcpy(nb->data + off, w->segs[i].base, w->segs[i].len);
        off += w->segs[i].len;
    }
    for (unsigned i = 0; i < w->nsegs; i++)
        pbuf_unref(pool, w->bufs[i]);
    w->bufs[0] = nb;
    w->segs[0] = uv_buf_init(nb->data, (unsigned)left);
    w->nsegs = 1;
    w->first = 0;
}

int pwrite_send(struct pbuf_pool *pool, uv_stream_t *stream, struct pwrite *w, uv_write_cb cb,
                bool compact)
{
    int n = uv_try_write(stream, w->segs, w->nsegs);
    int rc;
    if (n >= 0 && (size_t)n == w->bytes) {
        pwrite_put(pool, w);
        return 1;
    }
    if (n > 0)
        pwrite_advance(w, (size_t)n);
    else if (n != UV_EAGAIN && n != UV_ENOSYS) {
        pwrite_put(pool, w);
        return n;
    }
    if (compact)
        pwrite_compact(pool, w);
    rc = uv_write(&w->req, stream, w->segs + w->first, w->nsegs - w->first, cb);
    if (rc) {
        pwrite_put(pool, w);
        return rc;
    }
    return 0;
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

size_t pbuf_pool_bytes(const struct pbuf_pool *pool)
{
    return pool->bufs_allocated * (sizeof(struct pbuf) + PBUF_SIZE) + pool->big_bytes +
           pool->writes_allocated * sizeof(struct pwrite);
}

bool pbuf_pool_trim(struct pbuf_pool *pool, uint64_t now_ms)
{
    size_t now = pbuf_pool_bytes(pool);
    if (now > pool->peak_bytes)
        pool->peak_bytes = now;
    if (now > pool->peak_bytes / 2 || now_ms < pool->last_trim_ms + 1000)
        return false;
    pool->last_trim_ms = now_ms;
    pool->peak_bytes = now;
    malloc_trim(0);
    return true;
}
