/* shadow: memcacheds with candidate settings that receive a copy of the
 * traffic the proxy forwards (issue 23) -- started by slabtap itself
 * (`--shadow "FLAGS"`: the binary of --memcached, on a unix socket in a
 * private directory, stopped at exit, restarted when it dies) or an
 * operator's own (`--shadow-upstream ADDR`). Their answers are read and
 * counted, never sent to a client.
 *
 * What is mirrored, as meta commands whose every answer is one line (so
 * the answers pair with the requests by order alone):
 *   - a write (set add replace append prepend ms) as `ms KEY LEN [F][T][M]`
 *     with LEN filler bytes ('0's: an incr still finds a number); cas and
 *     ms with C only when the primary stored it, as a plain set (the cas
 *     unique is the primary's); a write the primary answered with an error
 *     line is not mirrored;
 *   - every key of a read (get gets gat gats mg) as `mg KEY k` (gat: `T`);
 *     a miss on the shadow (`EN kKEY`) of a key the primary hit with a known
 *     value length is followed by `ms KEY LEN F<flags>` (the demand fill the
 *     application would have done; TTL 0: a get does not tell the item's);
 *   - delete as `md`, touch as `mg KEY T`, incr/decr as `ma` (delta 1: the
 *     parser keeps no delta; only a length change moves memory),
 *     flush_all as itself.
 * Never mirrored: stats, watch, lru_crawler, verbosity, version, admin.
 * Keys outside a shadow's sample (--shadow-sample 1/N: core/sample.h's
 * sample_keep on keyfmt_hash, as --sample-keys) are not sent to it.
 *
 * Owns: each shadow's child process, its connection, its output buffer
 * (bounded by queue_bytes), the FIFO of requests in flight (bounded by
 * SHADOW_INFLIGHT_MAX), its counters and restarts, and a stats poller per
 * shadow whose samples go to the caller's callback tagged with the target.
 * Must never: make a client wait (a shadow that is slow, full, frozen or
 * dead has its requests dropped and counted), block the loop (no blocking
 * spawn or connect), send a client a shadow's byte, or leave a started
 * memcached running after shadow_set_close (nor after the proxy is killed:
 * started through `setpriv --pdeathsig KILL`). Loop thread only. */
#ifndef SLABTAP_SHADOW_H
#define SLABTAP_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/addr.h"
#include "core/buf.h"
#include "core/dial.h"
#include "core/log.h"
#include "protocol/mc_parse.h"
#include "protocol/stats_parse.h"
#include "server/poller.h"

#define SHADOW_MAX 4
#define SHADOW_NAME_MAX 128
#define SHADOW_FLAGS_MAX 512
/* mirrored bytes waiting for one shadow before its requests are dropped */
#define SHADOW_DEFAULT_QUEUE (8u * 1024 * 1024)
/* requests sent to one shadow and not yet answered */
#define SHADOW_INFLIGHT_MAX 65536
/* Mirrored requests are written in batches: at SHADOW_BATCH_BYTES, or
 * SHADOW_BATCH_MS after the first one waiting (no client waits for a
 * shadow; a write and a wake-up of the shadow per loop iteration cost the
 * proxy more than the mirroring itself) */
#define SHADOW_BATCH_BYTES (64u * 1024)
#define SHADOW_BATCH_MS 2
#define SHADOW_RESTART_MIN_MS 200
#define SHADOW_RESTART_MAX_MS 5000
/* a sampled shadow needs at least this many 1 MB pages per slab class the
 * primary uses, and never fewer than SHADOW_MIN_PAGES in all */
#define SHADOW_MIN_PAGES_PER_CLASS 2
#define SHADOW_MIN_PAGES 8

/* X(field, result label, help): the counters of one shadow, one list for
 * the struct, /metrics (slabtap_shadow_requests_total{shadow,result}), the
 * per-second rows (record/row.h REC_SC_*, same order) and /health. */
#define SHADOW_COUNTERS(X) \
    X(reads, "read", "Keys read mirrored and answered") \
    X(hits, "hit", "Mirrored reads the shadow answered with the item") \
    X(misses, "miss", "Mirrored reads the shadow did not have") \
    X(fills, "fill", "Demand-fill sets sent after a shadow miss on a primary hit") \
    X(writes, "write", "Writes (and fills) mirrored and answered") \
    X(stored, "stored", "Mirrored writes the shadow stored") \
    X(not_stored, "not_stored", "Mirrored writes the shadow refused (NS, EX, NF)") \
    X(others, "other", \
      "Deletes, touches, incr/decr and flush_all mirrored and answered (no error)") \
    X(errors, "error", "Mirrored requests answered with an error line") \
    X(dropped, "dropped", "Requests not mirrored: the shadow was slow, full, frozen or down")

struct shadow_counters {
#define SHADOW_COUNTER_FIELD(f, label, help) uint64_t f;
    SHADOW_COUNTERS(SHADOW_COUNTER_FIELD)
#undef SHADOW_COUNTER_FIELD
};

enum shadow_kind { SHADOW_STARTED, SHADOW_UPSTREAM };

/* One --shadow or --shadow-upstream as the command line gave it. */
struct shadow_spec {
    enum shadow_kind kind;
    char flags[SHADOW_FLAGS_MAX]; /* STARTED: memcached's flags, the "1/N " prefix removed */
    char upstream[ADDR_TEXT_MAX]; /* UPSTREAM: HOST:PORT or unix:PATH */
    uint32_t sample;              /* 1/N of the keys (0, 1: every key) */
    char text[SHADOW_NAME_MAX];   /* the value as given (trimmed): the target's name */
};

/* Parses one --shadow value: "FLAGS" or "1/N FLAGS" (a sample of its own).
 * 0, or -1 with the reason in err. */
int shadow_spec_parse(struct shadow_spec *s, const char *value, char *err, size_t errlen);

/* What one answer line of a shadow says (pure; the line without \r\n). */
enum shadow_answer {
    SHADOW_A_HIT,        /* HD (and STORED, DELETED, TOUCHED, OK: done) */
    SHADOW_A_MISS,       /* EN */
    SHADOW_A_NOT_STORED, /* NS, EX, NF (and NOT_STORED, EXISTS, NOT_FOUND) */
    SHADOW_A_ERROR,      /* ERROR, CLIENT_ERROR, SERVER_ERROR */
    SHADOW_A_OTHER       /* anything else (counted as an error) */
};
enum shadow_answer shadow_answer_classify(const char *line, size_t len);
/* The -m a started shadow runs with: FLAGS's -m (else primary_mb), divided
 * by the sample (rounded up), at least 1; and whether a sampled one is too
 * small (0, or -1 with the reason in err, naming the shadow). Pure. */
int shadow_memory(const struct shadow_spec *s, uint64_t primary_mb, unsigned classes_in_use,
                  uint64_t *memory_mb, char *err, size_t errlen);

enum shadow_state {
    SHADOW_S_STARTING,  /* the child is spawned, its socket not yet answering */
    SHADOW_S_UP,        /* connected: requests are mirrored */
    SHADOW_S_DOWN,      /* no connection (reconnecting or restarting): requests dropped */
    SHADOW_S_TOO_SMALL, /* sampled memory too few pages per class: refused at start */
    SHADOW_S_CLOSED
};

struct shadow_inflight; /* shadow.c: what each request in flight expects */

struct shadow {
    /* public, read-only */
    char name[SHADOW_NAME_MAX]; /* the target: "-f 1.08", "1/100 -f 1.08" or the address */
    struct shadow_spec spec;
    enum shadow_state state;
    struct shadow_counters c;
    uint64_t restarts;        /* times the started memcached was started again */
    uint64_t disconnects;     /* connections lost */
    bool ever_up;             /* connected at least once (a started one that exits
                                 before: memcached refused its flags) */
    uint64_t memory_mb;       /* the -m it runs with (STARTED) */
    int64_t up_since_ns;      /* when its data started (last (re)start), unix ns */
    size_t queued_bytes;      /* mirrored bytes not yet written */
    size_t inflight;          /* requests sent, answer not yet read */
    char command[1024];       /* STARTED: the memcached command line */
    struct stats_sample last; /* its latest stats sample (have_last) */
    bool have_last;
    int64_t last_sample_ns;
    /* private: shadow.c */
    struct shadow_set *set;
    unsigned index;
    uv_process_t proc;
    bool proc_running;
    union dial_stream stream;
    bool stream_open, writing;
    uv_connect_t connect_req;
    uv_write_t write_req;
    uv_timer_t timer; /* restart / reconnect backoff */
    unsigned backoff_ms;
    struct buf out, sending; /* appended to / being written */
    struct shadow_inflight *fifo;
    size_t fifo_head;
    char rbuf[16384];
    size_t rlen;
    struct addr_list addrs;
    struct poller poller;
    bool poller_open;
    bool logged_down;
    unsigned open_handles;
    int64_t second; /* the per-second counts being gathered */
    struct shadow_counters at_second;
    int timer_what;        /* what timer is armed for (shadow.c) */
    bool proc_handle_open; /* proc initialised and not yet closed */
    bool connecting;       /* connect_req outstanding */
    bool timer_open;
    bool exited_logged;                          /* a line about its exits was written */
    struct log_throttle throttle, lost_throttle; /* exits and start failures; lost connections */
    char sock_path[ADDR_UNIX_PATH_MAX + 1];
    char base[SHADOW_NAME_MAX]; /* the name before a " #2" */
};

/* Called with each stats sample of a shadow (the sample is the poller's:
 * copy what is needed), and once a second with each shadow's counts of that
 * second (for record/row.h REC_JOB_SHADOW_COUNTS), and on each event
 * ("started", "restarted", "exited", "connected", "lost", "too_small";
 * detail: text, for shadow_events). */
struct shadow_hooks {
    void (*on_sample)(void *ud, struct shadow *sh, const struct stats_sample *s);
    void (*on_second)(void *ud, struct shadow *sh, int64_t second,
                      const struct shadow_counters *delta);
    void (*on_event)(void *ud, struct shadow *sh, const char *event, const char *detail);
    void *ud;
};

struct shadow_set {
    uv_loop_t *loop;
    struct shadow sh[SHADOW_MAX];
    unsigned n;
    size_t queue_bytes;    /* --shadow-queue */
    char dir[256];         /* private directory of the sockets (mkdtemp) */
    const char *memcached; /* --memcached PATH (NULL: memcached on PATH) */
    uint64_t primary_mb;   /* the primary's -m, the default of a shadow's */
    struct shadow_hooks hooks;
    uv_timer_t tick; /* once a second: counts, restarts */
    bool tick_open, closing;
    uv_check_t flusher; /* writes what was mirrored, once SHADOW_BATCH_BYTES wait */
    bool flusher_open;
    uv_timer_t batch; /* ... or SHADOW_BATCH_MS after the first of a batch */
    bool batch_open;
    unsigned open_handles; /* handles of the set and its shadows still open */
    unsigned stats_interval_ms;
    void (*on_closed)(struct shadow_set *set);
};

/* Starts every shadow of specs (n <= SHADOW_MAX): a started one is spawned
 * at once with `-s DIR/shadowK.sock` (plus `-u root` as root, `-t 1`
 * unless FLAGS say -t), its -m FLAGS's, else primary_mb, divided by its
 * sample; one whose scaled memory is below SHADOW_MIN_PAGES or
 * SHADOW_MIN_PAGES_PER_CLASS x classes_in_use pages is refused (-1, the
 * reason in err, nothing started). Connecting is asynchronous and retried;
 * nothing here waits for a shadow. */
int shadow_set_open(struct shadow_set *set, uv_loop_t *loop, const struct shadow_spec *specs,
                    unsigned n, const char *memcached, uint64_t primary_mb, unsigned classes_in_use,
                    size_t queue_bytes, unsigned stats_interval_ms,
                    const struct shadow_hooks *hooks, char *err, size_t errlen);
/* SIGTERMs the started memcacheds, closes everything; on_closed (may be
 * NULL) once every handle is closed and the child has exited. */
void shadow_set_close(struct shadow_set *set, void (*on_closed)(struct shadow_set *set));

/* The mirror, called by the proxy when the primary's answer is known. */
/* A recorded command r (a write: set add replace append prepend cas ms;
 * else delete md touch incr decr ma, or flush_all) the primary answered
 * with answer (a label of slabtap's own for noreply; answer_len SIZE_MAX:
 * NUL-terminated): mirrored unless the primary refused it or never saw it. */
void shadow_answered(struct shadow_set *set, const struct mc_request *r, const char *answer,
                     size_t answer_len);
/* One key of a read: the primary hit it (value_len -1: size unknown) with
 * flags; exptime for gat/gats (has_exptime). key as sent (b64: base64). */
void shadow_read(struct shadow_set *set, const char *key, size_t key_len, bool b64, bool hit,
                 int64_t value_len, uint32_t flags, bool has_exptime, int64_t exptime);
/* Any shadow to mirror to (cheap: the proxy's test before any work). */
static inline bool shadow_active(const struct shadow_set *set)
{
    return set && set->n > 0;
}

#endif
