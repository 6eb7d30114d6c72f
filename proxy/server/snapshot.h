/* snapshot: one `lru_crawler metadump all` of a memcached -- its resident
 * items as they are now -- streamed into the recorder: a REC_ROW_ITEM per
 * item, then one REC_JOB_SNAPSHOT (the snapshot's header: complete when
 * memcached said END, else why not).
 *
 * Owns: its own connection to memcached (TCP or a unix socket; never a
 * client's, never the poller's: metadump takes the connection over until
 * END, and memcached refuses a metadump pipelined behind anything), the
 * read buffer, the mclog parser state, one timer (the retry after BUSY and
 * the idle timeout), and turning an item line into a row (key per --keys,
 * key_hash as the proxy computes it, TTL left, idle seconds).
 * Must never: send anything but `lru_crawler metadump all\r\n` on that
 * connection; hold more than one read's worth of rows while the recorder
 * is full (it stops reading the socket -- uv_read_stop -- so TCP pushes
 * back on memcached's crawler, and reads again from snapshot_resume); print
 * (the caller says what the end reason and memcached's words mean; the
 * one diagnostic it logs, through core/log, is the first BUSY of a
 * snapshot); free memory anywhere but a close callback.
 *
 * Loop thread only. One snapshot at a time per struct; a struct may be
 * opened again once on_done has run. */
#ifndef SLABTAP_SNAPSHOT_H
#define SLABTAP_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/addr.h"
#include "core/dial.h"
#include "core/keyfmt.h"
#include "protocol/mclog.h"
#include "record/recorder.h"

/* memcached answers BUSY while its crawler runs (another metadump, the
 * automatic crawler): tried again this many times, this far apart */
#define SNAPSHOT_BUSY_RETRIES 10
#define SNAPSHOT_BUSY_WAIT_MS 500
/* No byte from memcached this long while slabtap reads: the dump is cut */
#define SNAPSHOT_IDLE_TIMEOUT_MS 30000
#define SNAPSHOT_CONNECT_TIMEOUT_MS 5000
/* One read's worth: at most this many bytes of lines (~700 items) are
 * parsed into rows after the recorder said it is full. */
#define SNAPSHOT_READ_BUF 65536
#define SNAPSHOT_REQUEST "lru_crawler metadump all\r\n"

/* X(id, text): how a snapshot ended */
#define SNAPSHOT_ENDS(X) \
    X(COMPLETE, "complete") \
    X(REFUSED, "memcached refused the metadump") \
    X(BUSY, "memcached's crawler stayed busy") \
    X(CONNECT, "could not connect to memcached") \
    X(CUT, "memcached closed the connection before END") \
    X(IO, "reading from or writing to memcached failed") \
    X(TIMEOUT, "memcached sent nothing for too long") \
    X(STOPPED, "stopped before END") \
    X(SETUP, "could not set up the socket or timer")

enum snapshot_end {
#define SNAPSHOT_END_ENUM(id, text) SNAPSHOT_END_##id,
    SNAPSHOT_ENDS(SNAPSHOT_END_ENUM)
#undef SNAPSHOT_END_ENUM
        SNAPSHOT_END__COUNT
};
const char *snapshot_end_text(enum snapshot_end e);

struct snapshot_config {
    const struct addr_list *memcached; /* the caller's; outlives the snapshot */
    enum keyfmt_mode key_mode;
    uint32_t sample_keys;     /* --sample-keys N (core/sample.h; 0 or 1: every key) */
    unsigned busy_retries;    /* 0: none */
    unsigned busy_wait_ms;    /* 0: SNAPSHOT_BUSY_WAIT_MS */
    unsigned idle_timeout_ms; /* 0: SNAPSHOT_IDLE_TIMEOUT_MS */
};

struct snapshot;
typedef void (*snapshot_done_cb)(struct snapshot *s);

struct snapshot {
    /* public, read-only; final once on_done runs */
    uint32_t snap; /* its number in the run */
    enum snapshot_end end;
    bool recorded;                /* the header job was queued (memcached accepted) */
    int64_t started_ns, ended_ns; /* the request sent (the last try), the end */
    uint64_t items, bytes;        /* items read and stored; their ITEM_ntotal summed */
    uint64_t sampled_out;         /* items read, not stored (--sample-keys) */
    uint64_t bad_lines;           /* lines that did not parse (not stored) */
    uint64_t other_lines;         /* lines that were neither an item nor END */
    uint64_t pauses;              /* times reading stopped for the recorder */
    uint64_t busy_tries;          /* BUSY answers */
    int uv_err;                   /* CONNECT, IO, SETUP: libuv's code */
    char words[256];              /* REFUSED, BUSY: memcached's line, as it sent it */
    char peer[ADDR_TEXT_MAX];
    void *data; /* the caller's */

    /* private */
    uv_loop_t *loop;
    struct recorder *rec;
    struct snapshot_config cfg;
    snapshot_done_cb on_done;
    union dial_stream sock;
    uv_connect_t connect_req;
    uv_write_t write_req;
    uv_timer_t timer;
    unsigned open_handles;
    bool sock_open, connected, accepted, reading, paused, done, stopping;
    size_t addr_at;
    unsigned retry_ms; /* +1: connect again this long after the socket closed */
    uint64_t last_byte_mono_ns, attempt_mono_ns;
    struct mclog_parser parser;
    struct mclog_event ev;
    struct rec_row row;
    char rbuf[SNAPSHOT_READ_BUF];
};

/* Starts one metadump now (connecting to cfg->memcached's addresses in
 * turn); rows and the header job go to rec, which must be in block mode.
 * on_done runs on the loop thread once it has ended and every handle is
 * closed. 0, or a libuv error (nothing open, on_done never runs). */
int snapshot_open(struct snapshot *s, uv_loop_t *loop, struct recorder *rec,
                  const struct snapshot_config *cfg, uint32_t snap, snapshot_done_cb on_done,
                  void *data);
/* The recorder has room again (its on_unblock): read again if paused. */
void snapshot_resume(struct snapshot *s);
/* Ends it now (a signal): what was read is stored, the header says
 * incomplete (SNAPSHOT_END_STOPPED). on_done follows. */
void snapshot_stop(struct snapshot *s);
/* The header's JSON text (REC_JOB_SNAPSHOT): {"ended_ns","items","bytes",
 * "complete"[,"reason": snapshot_end_text when not complete],"bad_lines",
 * "sampled_out"};
 * malloc'ed, NULL when out of memory. */
char *snapshot_header_json(const struct snapshot *s);

#endif
