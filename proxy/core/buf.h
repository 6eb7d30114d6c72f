/* buf: the one growable buffer -- bytes (JSON text, a spill batch, an HTTP
 * body, an output line) and, through buf_grow, the arrays that grow one
 * element at a time (a batch of pending rows, a parsed list).
 *
 * Bytes: a struct buf holds len bytes, always NUL-terminated once anything
 * was written, in a block that doubles (amortized O(1) per append) and is
 * kept across buf_reset, so a buffer reused row after row allocates only
 * while it still grows. It never grows past the max given to buf_init: an
 * append that would (or that finds no memory) appends nothing and sets
 * failed, later appends do nothing, and the caller checks failed once at
 * the end (buf_take returns NULL then).
 *
 * Owns only its block. Must never print, log, or grow past max. */
#ifndef SLABTAP_CORE_BUF_H
#define SLABTAP_CORE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* no bound but memory (buf_init's max) */
#define BUF_UNBOUNDED SIZE_MAX

struct buf {
    char *data; /* NULL until the first append; then NUL-terminated */
    size_t len;
    size_t cap; /* bytes allocated (len + 1 at least once data != NULL) */
    size_t max; /* the most data may hold, its NUL included */
    bool failed;
};

void buf_init(struct buf *b, size_t max);
void buf_free(struct buf *b); /* and buf_init again with the same max */
/* Empties b (len 0, failed cleared) and keeps its block for reuse. */
void buf_reset(struct buf *b);
/* Room for n more bytes (and the NUL): 0, or -1 with failed set. */
int buf_reserve(struct buf *b, size_t n);
/* Appends n bytes: 0, or -1 (nothing appended; failed set). */
int buf_append(struct buf *b, const void *data, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the NUL-terminated bytes to the caller, who frees them ("" when
 * nothing was appended; NULL when failed or out of memory); b is empty
 * again, with the same max. */
char *buf_take(struct buf *b);

/* Arrays: p (NULL or a block of *cap elements of elem bytes from an earlier
 * buf_grow) with room for at least need elements. Returns p when it has
 * room, else a larger block holding p's elements (capacity doubled, at
 * least 16, *cap updated), or NULL when memory ran out or need * elem
 * overflows (p untouched, still the caller's). BUF_GROW is the usual call. */
void *buf_grow(void *p, size_t *cap, size_t need, size_t elem);
/* Makes the array ptr (capacity cap, a size_t) hold need elements: true,
 * or false when out of memory (ptr and cap unchanged). */
#define BUF_GROW(ptr, cap, need) \
    __extension__({ \
        void *buf_np_ = buf_grow((ptr), &(cap), (need), sizeof *(ptr)); \
        if (buf_np_) \
            (ptr) = buf_np_; \
        buf_np_ != NULL; \
    })

#endif
