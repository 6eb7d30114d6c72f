/* metrics: every proxy counter declared once, with its help text.
 * The X-macro is the only list: /metrics, the docs and the code use it.
 * Counters are touched only on the event loop thread, never locked. */
#ifndef SLABTAP_METRICS_H
#define SLABTAP_METRICS_H

#include <stdint.h>

/* X(name, type, help) -- type is counter or gauge */
#define SLABTAP_METRICS(X) \
    X(connections_accepted, counter, "Client connections accepted") \
    X(connections_open, gauge, "Client connections currently open") \
    X(connections_limit, gauge, "Clients at once before new ones are refused (--max-conns)") \
    X(connections_refused, counter, \
      "Client connections refused: past the limit, accept failed, or no memory for them") \
    X(requests, counter, "Requests parsed from clients") \
    X(requests_write, counter, "Write requests (set add replace append prepend cas ms)") \
    X(requests_read, counter, "Read requests (get gets gat gats mg)") \
    X(requests_other, counter, "Other requests (delete touch incr decr stats ...)") \
    X(bytes_from_clients, counter, "Bytes read from clients and forwarded upstream") \
    X(bytes_to_clients, counter, "Bytes read from memcached and forwarded to clients") \
    X(writes_recorded, counter, "Rows handed to the recorder") \
    X(reads_recorded, counter, "Read rows (one per key asked for) handed to the recorder") \
    X(rows_dropped, counter, "Rows dropped because the recorder queue was full (--on-full drop)") \
    X(recorder_queue_depth, gauge, "Rows waiting in the recorder queue") \
    X(recorder_stalls, counter, \
      "Times the proxy paused reading because the recorder queue was full") \
    X(recording_degraded, gauge, \
      "1 while rows do not reach the store as they come: no store, it fails, or a spill waits") \
    X(spill_backlog_rows, gauge, "Rows waiting in the spill file for the store (--spill)") \
    X(spill_backlog_bytes, gauge, "Bytes of rows waiting in the spill file (bound: --spill-max)") \
    X(rows_spilled, counter, "Writes put into the spill file while the store failed") \
    X(rows_shipped, counter, "Writes shipped from the spill file to the store") \
    X(rows_expired, counter, \
      "Recorded writes deleted by retention (--retain, --max-db-size); the aggregates keep them") \
    X(retention_bound_reached, gauge, \
      "1 once --retain or --max-db-size has expired rows (information, not a failure)") \
    X(oldest_row_timestamp_seconds, gauge, "Unix time of the oldest recorded write kept (SQLite)") \
    X(db_file_bytes, gauge, "Size of the SQLite database file (pages * page size, WAL excluded)") \
    X(db_free_bytes, gauge, "Bytes of free pages in the SQLite file, reused before it grows") \
    X(retention_steps, counter, \
      "Retention delete steps run by the writer thread, between batches") \
    X(retention_step_max_us, gauge, "The longest retention step, microseconds") \
    X(retention_us, counter, "Writer thread time spent in retention steps, microseconds") \
    X(db_rotations, counter, "New SQLite files opened by --db PATTERN rotation") \
    X(upstream_errors, counter, "Upstream connect failures and disconnects") \
    X(upstream_connections_open, gauge, \
      "Upstream memcached connections open (pooled and private)") \
    X(upstream_writes, counter, "Writes to memcached (each carries a batch of requests)") \
    X(upstream_reads, counter, "Reads from memcached (each may carry answers for many clients)") \
    X(requests_assembled, counter, \
      "Requests split across reads, assembled before going to a shared upstream") \
    X(clients_moved, counter, \
      "Clients moved to a private upstream (watch, metadump, binary, oversize)") \
    X(clients_moved_big_answers, counter, \
      "Clients moved to a private upstream after an answer of --big-answer bytes or more") \
    X(slow_clients_closed, counter, \
      "Clients closed because they took none of their answers for a second past the backlog") \
    X(memory_clients_closed, counter, \
      "Clients closed because their unread answers pushed slabtap past 7/8 of --max-memory") \
    X(memory_pauses, counter, "Times slabtap stopped reading clients at --max-memory") \
    X(buffer_bytes, gauge, \
      "Bytes slabtap holds in buffers and request queues (what --max-memory bounds)") \
    X(binary_writes_unrecorded, counter, \
      "Binary-protocol writes not recorded (more waiting than binrec holds, or unframeable)") \
    X(upstream_closes_passed_on, counter, \
      "Client connections closed because memcached closed their own connection on purpose") \
    X(upstream_error_replies, counter, \
      "SERVER_ERROR lines the proxy sent because memcached was unreachable") \
    X(unpaired_responses, counter, \
      "Responses that could not be paired with a request (connection closed)") \
    X(protocol_errors, counter, \
      "Client connections closed for input memcached itself would close on")

struct metrics {
#define METRIC_FIELD(name, type, help) uint64_t name;
    SLABTAP_METRICS(METRIC_FIELD)
#undef METRIC_FIELD
};

#endif
