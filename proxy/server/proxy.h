/* proxy: libuv client/upstream pairs -- one memcached connection per client
 * connection -- forwarding bytes unchanged both ways, pairing every answer
 * with its request in order, and handing finished writes to the recorder.
 *
 * Owns the listener, every connection and the read/write buffer pool.
 * Must never block the loop, copy a value, or answer in memcached's place
 * except with SERVER_ERROR when memcached cannot be reached. */
#ifndef SLABTAP_PROXY_H
#define SLABTAP_PROXY_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/keyfmt.h"
#include "server/metrics.h"
#include "core/pbuf.h"
#include "record/recorder.h"
#include "model/slab_model.h"

struct conn;

struct proxy_config {
    struct sockaddr_storage listen_addr;
    struct sockaddr_storage upstream_addr;
    char upstream_text[256];
    enum keyfmt_mode key_mode;
    size_t max_pending;        /* requests in flight per connection before
                                  the proxy stops reading that client */
    size_t write_backlog_max;  /* bytes queued to one socket before the
                                  proxy stops reading its source */
    unsigned drain_timeout_ms; /* shutdown: wait this long for answers */
    unsigned backoff_min_ms, backoff_max_ms;
};

#define PROXY_DEFAULT_MAX_PENDING 65536
#define PROXY_DEFAULT_WRITE_BACKLOG (8u * 1024 * 1024)
#define PROXY_DEFAULT_DRAIN_MS 5000

/* Reads are counted per second and command; flushed as REC_ROW_GETS rows. */
struct proxy_get_counter {
    uint64_t requests, keys, hits, misses, bytes;
};

struct proxy {
    uv_loop_t *loop;
    uv_tcp_t listener;
    uv_timer_t drain_timer;
    struct proxy_config cfg;
    struct metrics m;
    struct recorder *rec;
    struct pbuf_pool pool;
    struct conn *conns;        /* doubly linked list of live connections */
    uint32_t next_conn_id;
    uint64_t next_seq;
    bool stopping;
    bool stopped;
    bool listener_open;
    void (*on_stopped)(struct proxy *px);
    int64_t get_second;
    struct proxy_get_counter gets[MC_CMD_COUNT];
    uint64_t requests_by_cmd[MC_CMD_COUNT];
    const struct slab_ladder *ladder; /* tags writes with a class; NULL: untagged */
    bool all_paused;           /* paused everything for the recorder */
    bool upstream_up;          /* at least one upstream answered lately */
};

int proxy_open(struct proxy *px, uv_loop_t *loop, const struct proxy_config *cfg,
               struct recorder *rec);
/* Stops accepting, stops reading clients, waits (at most drain_timeout_ms)
 * for answers to what was forwarded, records every row, closes every
 * connection, then calls on_stopped. */
void proxy_close(struct proxy *px, void (*on_stopped)(struct proxy *px));
/* Re-evaluates every connection's reading (the recorder filled or drained). */
void proxy_update_reading(void *px);
void proxy_config_defaults(struct proxy_config *cfg);

#endif
