/* metrics: every /metrics family slabtap exposes from a table, declared
 * once, with its help text.
 *
 * Owns: the lists SLABTAP_METRICS (the proxy's own counters, fields of
 * struct metrics), MEMCACHED_METRICS and MEMCACHED_COMMANDS (memcached-wide
 * families from the stats poller's latest sample, under the official
 * memcached_exporter's names), and MEMCACHED_SLAB_METRICS (per slab class).
 * Must never: hold logic or state; name a unit other than Prometheus' base
 * units (seconds, bytes) in an exported name.
 * The X-macros are the only lists: /metrics (server/scrape.c), the docs and the
 * code use them. Counters are touched only on the event loop thread, never
 * locked. */
#ifndef SLABTAP_METRICS_H
#define SLABTAP_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* X(name, type, unit, help) -- type is counter or gauge. unit is one (a
 * count or bytes: the field is `name`, exported as slabtap_name) or us (the
 * field is `name_us` and counts microseconds; exported in seconds as
 * slabtap_name_seconds). Counters get _total after the unit. */
#define SLABTAP_METRICS(X) \
    X(connections_accepted, counter, one, "Client connections accepted") \
    X(connections_open, gauge, one, "Client connections currently open") \
    X(connections_limit, gauge, one, "Clients at once before new ones are refused (--max-conns)") \
    X(connections_refused, counter, one, \
      "Client connections refused: past the limit, accept failed, or no memory for them") \
    X(requests, counter, one, "Requests parsed from clients") \
    X(requests_write, counter, one, "Write requests (set add replace append prepend cas ms)") \
    X(requests_read, counter, one, "Read requests (get gets gat gats mg)") \
    X(requests_other, counter, one, "Other requests (delete touch incr decr stats ...)") \
    X(bytes_from_clients, counter, one, "Bytes read from clients and forwarded upstream") \
    X(bytes_to_clients, counter, one, "Bytes read from memcached and forwarded to clients") \
    X(writes_recorded, counter, one, "Rows handed to the recorder") \
    X(reads_recorded, counter, one, "Read rows (one per key asked for) handed to the recorder") \
    X(rows_dropped, counter, one, \
      "Rows dropped because the recorder queue was full (--on-full drop)") \
    X(recorder_queue_depth, gauge, one, "Rows waiting in the recorder queue") \
    X(recorder_stalls, counter, one, \
      "Times the proxy paused reading because the recorder queue was full") \
    X(recording_degraded, gauge, one, \
      "1 while rows do not reach the store as they come: no store, it fails, or a spill waits") \
    X(spill_backlog_rows, gauge, one, "Rows waiting in the spill file for the store (--spill)") \
    X(spill_backlog_bytes, gauge, one, \
      "Bytes of rows waiting in the spill file (bound: --spill-max)") \
    X(rows_spilled, counter, one, "Writes put into the spill file while the store failed") \
    X(rows_shipped, counter, one, "Writes shipped from the spill file to the store") \
    X(rows_expired, counter, one, \
      "Recorded writes deleted by retention (--retain, --max-db-size); the aggregates keep them") \
    X(retention_bound_reached, gauge, one, \
      "1 once --retain or --max-db-size has expired rows (information, not a failure)") \
    X(oldest_row_timestamp_seconds, gauge, one, \
      "Unix time of the oldest recorded write kept (SQLite)") \
    X(db_file_bytes, gauge, one, \
      "Bytes on disk of the SQLite file being written and its WAL (0 for PostgreSQL)") \
    X(db_free_bytes, gauge, one, "Bytes of free pages in the SQLite file, reused before it grows") \
    X(retention_steps, counter, one, \
      "Retention delete steps run by the writer thread, between batches") \
    X(retention_step_max, gauge, us, "The longest retention step, seconds") \
    X(retention, counter, us, "Writer thread time spent in retention steps, seconds") \
    X(db_rotations, counter, one, "New SQLite files opened by --db PATTERN rotation") \
    X(upstream_errors, counter, one, "Upstream connect failures and disconnects") \
    X(upstream_connections_open, gauge, one, \
      "Upstream memcached connections open (pooled and private)") \
    X(upstream_writes, counter, one, "Writes to memcached (each carries a batch of requests)") \
    X(upstream_reads, counter, one, \
      "Reads from memcached (each may carry answers for many clients)") \
    X(requests_assembled, counter, one, \
      "Requests split across reads, assembled before going to a shared upstream") \
    X(clients_moved, counter, one, \
      "Clients moved to a private upstream (watch, metadump, binary, oversize)") \
    X(clients_moved_big_answers, counter, one, \
      "Clients moved to a private upstream after an answer of --big-answer bytes or more") \
    X(slow_clients_closed, counter, one, \
      "Clients closed because they took none of their answers for a second past the backlog") \
    X(memory_clients_closed, counter, one, \
      "Clients closed because their unread answers pushed slabtap past 7/8 of --max-memory") \
    X(memory_pauses, counter, one, "Times slabtap stopped reading clients at --max-memory") \
    X(buffer_bytes, gauge, one, \
      "Bytes slabtap holds in buffers and request queues (what --max-memory bounds)") \
    X(binary_writes_unrecorded, counter, one, \
      "Binary-protocol writes not recorded (more waiting than binrec holds, or unframeable)") \
    X(upstream_closes_passed_on, counter, one, \
      "Client connections closed because memcached closed their own connection on purpose") \
    X(upstream_error_replies, counter, one, \
      "SERVER_ERROR lines the proxy sent because memcached was unreachable") \
    X(unpaired_responses, counter, one, \
      "Responses that could not be paired with a request (connection closed)") \
    X(protocol_errors, counter, one, \
      "Client connections closed for input memcached itself would close on")

/* A metric of unit `unit` (see SLABTAP_METRICS): its field, what its
 * exported name adds, and how many field units make one exported unit. */
#define METRIC_FIELD_one(name) name
#define METRIC_FIELD_us(name) name##_us
#define METRIC_SUFFIX_one ""
#define METRIC_SUFFIX_us "_seconds"
#define METRIC_SCALE_one 1
#define METRIC_SCALE_us 1000000

struct metrics {
#define METRIC_FIELD(name, type, unit, help) uint64_t METRIC_FIELD_##unit(name);
    SLABTAP_METRICS(METRIC_FIELD)
#undef METRIC_FIELD
};

/* Per shadow (server/shadow.h), labelled shadow="NAME", beside
 * slabtap_shadow_requests_total{shadow,result} whose results are
 * SHADOW_COUNTERS's labels. X(name, type, NULL, help): the memcached
 * tables' shape (no stats field), served under its own name. */
#define SLABTAP_SHADOW_METRICS(X) \
    X(slabtap_shadow_requests_dropped_total, counter, NULL, \
      "Requests not mirrored to the shadow: it was slow, full, frozen or down") \
    X(slabtap_shadow_fills_total, counter, NULL, \
      "Demand-fill sets sent to the shadow after it missed a key the primary hit") \
    X(slabtap_shadow_restarts_total, counter, NULL, \
      "Times a started shadow memcached was started again after it died") \
    X(slabtap_shadow_up, gauge, NULL, \
      "1 while the shadow's connection is up (requests are mirrored)") \
    X(slabtap_shadow_queued_bytes, gauge, NULL, \
      "Mirrored bytes waiting to be written to the shadow") \
    X(slabtap_shadow_inflight, gauge, NULL, "Requests mirrored to the shadow and not yet answered")

/* memcached-wide families from the latest `stats` sample, as the official
 * memcached_exporter (github.com/prometheus/memcached_exporter,
 * pkg/exporter/exporter.go) names them, so its dashboards and alerts read
 * slabtap's /metrics as they read the exporter's. memcached_up and
 * memcached_commands_total{command,status} are written by hand beside them
 * (memcached_up has no stats field; the commands come from
 * MEMCACHED_COMMANDS).
 * X(name, type, stats field, help) */
#define MEMCACHED_METRICS(X) \
    X(memcached_limit_bytes, gauge, "limit_maxbytes", \
      "Number of bytes this server is allowed to use for storage.") \
    X(memcached_current_bytes, gauge, "bytes", "Current number of bytes used to store items.") \
    X(memcached_current_items, gauge, "curr_items", \
      "Current number of items stored by this instance.") \
    X(memcached_items_evicted_total, counter, "evictions", \
      "Total number of valid items removed from cache to free memory for new items.")

/* memcached_commands_total{command,status}: X(command, status, stats field),
 * the exporter's mapping. The one computed sample, {set,hit}, is cmd_set
 * minus cas_misses, cas_hits and cas_badval (memcached counts a cas in
 * cmd_set too), as the exporter computes it. */
#define MEMCACHED_COMMANDS_HELP \
    "Total number of all requests broken down by command (get, set, etc.) and status."
#define MEMCACHED_COMMANDS(X) \
    X("get", "hit", "get_hits") \
    X("get", "miss", "get_misses") \
    X("delete", "hit", "delete_hits") \
    X("delete", "miss", "delete_misses") \
    X("incr", "hit", "incr_hits") \
    X("incr", "miss", "incr_misses") \
    X("decr", "hit", "decr_hits") \
    X("decr", "miss", "decr_misses") \
    X("cas", "hit", "cas_hits") \
    X("cas", "miss", "cas_misses") \
    X("touch", "hit", "touch_hits") \
    X("touch", "miss", "touch_misses") \
    X("cas", "badval", "cas_badval") \
    X("flush", "hit", "cmd_flush")

/* Per slab class from the last sample, labelled slab="N". Where
 * memcached_exporter exports the same field, the family has its name, type
 * and label; what only slabtap computes keeps the slabtap_ prefix (field
 * NULL: used_chunks * chunk_size - mem_requested). No node label: each
 * slabtap is its own scrape target and Prometheus adds `instance`.
 * X(name, type, stats field, help) */
#define MEMCACHED_SLAB_METRICS(X) \
    X(memcached_slab_current_pages, gauge, "total_pages", \
      "Number of pages allocated to this slab class (stats slabs total_pages, last sample)") \
    X(memcached_slab_current_chunks, gauge, "total_chunks", \
      "Number of chunks allocated to this slab class (stats slabs total_chunks, last sample)") \
    X(memcached_slab_chunks_used, gauge, "used_chunks", \
      "Number of chunks allocated to an item (stats slabs used_chunks, last sample)") \
    X(memcached_slab_chunk_size_bytes, gauge, "chunk_size", \
      "Number of bytes allocated to each chunk within this slab class") \
    X(memcached_slab_mem_requested_bytes, gauge, "mem_requested", \
      "Number of bytes of memory actual items take up within a slab (stats items mem_requested)") \
    X(memcached_slab_current_items, gauge, "number", \
      "Number of items currently stored in this slab class (stats items number)") \
    X(memcached_slab_items_evicted_total, counter, "evicted", \
      "Total number of times an item had to be evicted from the LRU before it expired " \
      "(stats items evicted)") \
    X(slabtap_slab_waste_bytes, gauge, NULL, \
      "used_chunks * chunk_size - mem_requested: rounding waste of the slab class")

#endif
