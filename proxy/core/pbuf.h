/* pbuf: reference-counted byte buffers and write requests, recycled through
 * free lists so the hot path never mallocs per request.
 *
 * A buffer read from one socket is written to the other as it is: never
 * copied, never modified; a write holds a reference on every buffer it
 * sends slices of, so one write can carry the requests of many clients
 * (an upstream batch) or the answers of many reads. Read buffers are
 * PBUF_SIZE bytes and recycled; a larger buffer (a request assembled across
 * reads, up to the item size limit) is allocated to size and freed when its
 * last reference goes.
 *
 * Owns the free lists. Must never be touched off the loop thread, and never
 * free a buffer a write still references. */
#ifndef SLABTAP_PBUF_H
#define SLABTAP_PBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define PBUF_SIZE (64 * 1024)
/* Free buffers kept for reuse; more go back to the system, so a burst of
 * connections does not leave its memory pinned in the pool for good. */
#define PBUF_POOL_KEEP 64
/* Slices per write: one writev. An upstream batch of many small requests
 * fills several writes of this many slices. */
#define PWRITE_SEGS 64

struct pbuf {
    struct pbuf *next_free;
    unsigned refs;
    size_t cap; /* PBUF_SIZE for pooled buffers */
    size_t len; /* bytes filled, for buffers built by copying */
    char data[];
};

/* One uv_write of up to PWRITE_SEGS slices, each holding a reference on the
 * buffer it points into. */
struct pwrite {
    uv_write_t req;
    struct pwrite *next_free;
    uv_buf_t segs[PWRITE_SEGS];
    struct pbuf *bufs[PWRITE_SEGS];
    unsigned nsegs;
    unsigned first; /* segs before this one were sent by try_write */
    size_t bytes;
    void *owner;
};

struct pbuf_pool {
    struct pbuf *free_bufs;
    struct pwrite *free_writes;
    size_t bufs_allocated, writes_allocated; /* live now */
    size_t free_count, free_writes_count;
    size_t big_bytes;      /* bytes held in buffers larger than PBUF_SIZE */
    size_t peak_bytes;     /* highest pbuf_pool_bytes since the last trim */
    uint64_t last_trim_ms; /* pbuf_pool_trim's clock */
};

/* A PBUF_SIZE buffer (refs 1), or NULL when memory ran out. */
struct pbuf *pbuf_get(struct pbuf_pool *pool);
/* A buffer of at least cap bytes (refs 1); pooled when cap <= PBUF_SIZE. */
struct pbuf *pbuf_get_size(struct pbuf_pool *pool, size_t cap);
/* Appends len bytes to *b (a buffer built by copying; NULL: a new one),
 * moving them to a larger buffer when they do not fit. false: no memory
 * (*b unchanged). */
bool pbuf_append(struct pbuf_pool *pool, struct pbuf **b, const char *data, size_t len);
void pbuf_ref(struct pbuf *b);
void pbuf_unref(struct pbuf_pool *pool, struct pbuf *b);
struct pbuf *pbuf_from_base(char *base);

struct pwrite *pwrite_get(struct pbuf_pool *pool);
/* Drops the references of every slice and recycles w. */
void pwrite_put(struct pbuf_pool *pool, struct pwrite *w);
/* Appends the slice b->data[off, off + len) (taking a reference), merged
 * with the previous slice when they touch. false when w is full. */
bool pwrite_add(struct pwrite *w, struct pbuf *b, size_t off, size_t len);

/* Sends w on stream: first uv_try_write (a write that completes at once
 * costs no epoll_ctl and no callback), then uv_write for what is left.
 * With compact, what is left is copied into one buffer of its own when it
 * fits PBUF_SIZE, so a reader that is slow pins its unsent bytes, not the
 * 64 KiB read buffers they were slices of. Returns 1 when everything went
 * out now (w has been recycled; cb is not called), 0 when queued (cb runs
 * later with w's req), or a libuv error (w recycled). */
int pwrite_send(struct pbuf_pool *pool, uv_stream_t *stream, struct pwrite *w, uv_write_cb cb,
                bool compact);

/* Bytes the pool holds from the system now: read buffers (free ones
 * included), larger buffers and write requests. What --max-memory bounds. */
size_t pbuf_pool_bytes(const struct pbuf_pool *pool);
/* Gives free heap pages back to the system (malloc_trim) once the pool has
 * shrunk to half of what it held at the last trim: freed 64 KiB buffers
 * otherwise stay in the process after a burst. At most once a second by
 * now_ms; returns whether it trimmed. */
bool pbuf_pool_trim(struct pbuf_pool *pool, uint64_t now_ms);

void pbuf_pool_free(struct pbuf_pool *pool);

#endif
