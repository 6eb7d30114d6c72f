/* load: the load generator's engine -- a libuv client that sends an
 * operation plan (a workload file, a recorded run, a cache trace) to
 * memcached or to the proxy over N pipelined text-protocol connections,
 * and counts the answers.
 *
 * Owns: its own uv_loop (load_run may run on any thread, e.g. next to a
 * proxy on the main loop), the connections, the wire format of requests,
 * pairing answers with requests, the plan fingerprint, phase barriers and
 * the progress figures (handed to the caller's progress callback: cli/
 * draws the line).
 * Must never: allocate per operation (values are slices of one shared
 * pattern buffer; request lines go into fixed per-connection arenas), keep
 * more than `pipeline` requests (plus one `mn` fence) in flight on a
 * connection, print, or touch global state.
 *
 * Ordering: an op's key picks its connection, so memcached sees each key's
 * ops in plan order; up to LOAD_DEFER_MAX ops per connection wait for a
 * full window without stalling the others.
 *
 * libuv writes with write(2): a process calling load_run must ignore
 * SIGPIPE (slabtap's commands do), or a server closing on it kills it.
 *
 * Phases: when the plan reaches a phase mark, no later op is sent until
 * every earlier op has been answered on every connection (noreply ops are
 * confirmed by an `mn` no-op behind them); then on_phase runs, on the
 * load thread, and sending resumes. So a phase's ops are exactly those
 * between its mark and the next.
 *
 * Get-or-set: an op with fill set (a getset statement, a replayed read
 * with demand fill) is a read; when its answer is a miss, the engine sends
 * `set key flags ttl value_len` on the same connection. Until that set is
 * queued, no later op of the same key (by a LOAD_FILL_BUCKETS hash bucket:
 * a collision only delays an op) leaves that connection, so per key the
 * server sees get, set, then the rest, as a sequential client would send
 * them. Fills are not plan ops: they are counted apart (fills, and per
 * phase) and are not in the fingerprint, which has the fill flag instead.
 *
 * Hits: gets/hits/misses/fills are counted per phase (the ops before the
 * first mark are phase ""), and the target's own `stats` (get_hits,
 * get_misses, cmd_set, evictions) is read on a side connection, blocking,
 * before the first op, at every phase mark and at the end (everything is
 * answered then), so its deltas cover exactly the phase's ops. A target
 * that refuses `stats` (or --no-probe) gives no server deltas and a note.
 */
#ifndef SLABTAP_LOAD_H
#define SLABTAP_LOAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "core/lhist.h"
#include "core/sha256.h"
#include "load/workload.h"
#include "model/slab_model.h"
#include "protocol/stats_parse.h"

#define LOAD_CONNECTIONS_MAX WORKLOAD_CONNECTIONS_MAX
#define LOAD_PIPELINE_MAX WORKLOAD_PIPELINE_MAX
/* Ops waiting for their connection's window, per connection: the key
 * picks the connection, so without this one full window would stall the
 * plan while the others sit idle. */
#define LOAD_DEFER_MAX 64
#define LOAD_DEFAULT_CONNECTIONS 4
#define LOAD_DEFAULT_PIPELINE 64
#define LOAD_ERR_MAX 384
#define LOAD_VERSION_MAX STATS_VERSION_MAX
#define LOAD_CONNECT_TIMEOUT_MS 10000
#define LOAD_PROGRESS_TTY_MS 250   /* at most 4 refreshes a second on a terminal */
#define LOAD_PROGRESS_PIPE_MS 5000 /* one plain line per 5 s otherwise */
#define LOAD_FILL_BUCKETS 1024     /* per connection: fill reads pending, by key hash */
#define LOAD_PHASES_MAX 32         /* phases counted apart; later ones add to the last */
#define LOAD_STATS_TIMEOUT_MS 2000 /* the side connection's `stats`, each way */
#define LOAD_NOTE_MAX 160
#define LOAD_MARK_PHASE "measured" /* the phase load_config.mark_at_op starts */

enum load_source_kind {
    LOAD_SRC_WORKLOAD,  /* cfg.workload */
    LOAD_SRC_REPLAY_DB, /* cfg.path: a slabtap database, run cfg.replay_run */
    LOAD_SRC_TWITTER,   /* cfg.path: twitter/cache-trace CSV */
    LOAD_SRC_CACHELIB,  /* cfg.path: CacheLib kvcache trace CSV */
};

/* Progress so far, for the caller to show (load/ never prints). */
struct load_progress {
    uint64_t done;       /* ops answered */
    uint64_t total;      /* ops planned; 0: not known */
    uint64_t elapsed_ns; /* since the first op */
    bool final;          /* the last call: the load has ended */
};

/* What an answer was. X(id, text) */
/* clang-format off */
#define LOAD_ANSWERS(X) \
    X(STORED, "STORED") X(NOT_STORED, "NOT_STORED") X(EXISTS, "EXISTS") \
    X(NOT_FOUND, "NOT_FOUND") X(DELETED, "DELETED") X(TOUCHED, "TOUCHED") \
    X(NUMBER, "NUMBER") X(HIT, "hit") X(MISS, "miss") X(SERVER_ERROR, "SERVER_ERROR") \
    X(CLIENT_ERROR, "CLIENT_ERROR") X(ERROR, "ERROR") X(OTHER, "other")
/* clang-format on */

enum load_answer {
#define LOAD_ANSWER_ENUM(id, text) LOAD_ANS_##id,
    LOAD_ANSWERS(LOAD_ANSWER_ENUM)
#undef LOAD_ANSWER_ENUM
        LOAD_ANS_COUNT
};

const char *load_answer_name(enum load_answer a);

#define LOAD_STATUSES(X) \
    X(LOAD_OK, "ok") \
    X(LOAD_E_ARG, "bad configuration") \
    X(LOAD_E_SOURCE, "the operation source failed") \
    X(LOAD_E_CONNECT, "cannot connect") \
    X(LOAD_E_SETTINGS, "cannot read the server's slab settings") \
    X(LOAD_E_PROTOCOL, "unexpected answer") \
    X(LOAD_E_IO, "connection lost") \
    X(LOAD_E_STOPPED, "stopped") \
    X(LOAD_E_MEMORY, "out of memory")

enum load_status {
#define LOAD_STATUS_ENUM(id, text) id,
    LOAD_STATUSES(LOAD_STATUS_ENUM)
#undef LOAD_STATUS_ENUM
        LOAD_STATUS_COUNT
};

const char *load_status_str(enum load_status st);

struct load_config {
    struct sockaddr_storage target; /* unused by load_plan_digest */
    enum load_source_kind source;
    const struct workload *workload; /* LOAD_SRC_WORKLOAD */
    const char *path;                /* the other sources */
    int64_t replay_run;              /* LOAD_SRC_REPLAY_DB; 0: the newest run */
    /* LOAD_SRC_REPLAY_DB: the run's reads too, merged with its writes,
     * when the file has them (false: writes only, e.g. capacity checks);
     * demand_fill: a replayed read fills its miss (load/replay.h) */
    bool replay_reads, demand_fill;
    /* > 0: a phase mark named LOAD_MARK_PHASE after this many plan ops (a
     * measured window: on_phase and the server's stats deltas start there,
     * e.g. `model advise --verify` counting hits after a warm-up) */
    uint64_t mark_at_op;
    /* NULL: load_run builds it from the target's `stats settings`;
     * load_plan_digest needs it when the workload uses fill/over. */
    const struct slab_ladder *ladder;
    unsigned connections; /* 0: the workload's, else the default */
    unsigned pipeline;    /* 0: the workload's, else the default */
    bool seed_set;        /* else the workload's seed, else 0 */
    uint64_t seed;
    void (*on_phase)(void *ud, const char *name); /* may be NULL */
    void *ud;
    /* optional: called on the load's thread at most every progress_ms
     * (0: LOAD_PROGRESS_PIPE_MS) while ops are answered, and once more
     * with final set at the end if it was called before */
    void (*progress)(void *arg, const struct load_progress *p);
    void *progress_arg;
    unsigned progress_ms;
    atomic_bool *stop; /* optional: set true to stop early */
    /* ops per second, open loop: op i is due at start + i / rate whatever
     * the answers do, and its latency counts from then (so a slow answer
     * cannot hide the ops queued behind it); 0: as fast as the pipeline
     * allows, latency from the moment each op is written */
    double rate;
    /* skip `stats settings` + `version` when the plan needs no ladder (a
     * proxy such as twemproxy that refuses `stats` can be driven) */
    bool no_probe;
};

/* The target's counters from `stats` (whole server, all clients). */
struct load_server_counts {
    uint64_t get_hits, get_misses, cmd_set, evictions;
};

/* What one phase's reads did. */
struct load_phase_result {
    char name[WORKLOAD_NAME_MAX]; /* "" before the first mark */
    uint64_t ops;                 /* plan ops of the phase */
    uint64_t gets, hits, misses;  /* reads (get, gets, gat) answered */
    uint64_t fills, fills_stored; /* sets sent on a miss, and STORED */
    bool merged;                  /* later phases added here (over LOAD_PHASES_MAX) */
    bool has_server;              /* server: deltas of the target's `stats` */
    struct load_server_counts server;
};

struct load_result {
    enum load_status status;
    char error[LOAD_ERR_MAX]; /* why, when status != LOAD_OK */
    uint64_t ops;             /* ops sent */
    uint64_t ops_by_cmd[WORKLOAD_CMD_COUNT];
    uint64_t answers[LOAD_ANS_COUNT];
    uint64_t writes_answered; /* answers to set/add/replace/append/prepend */
    uint64_t silent;          /* noreply ops, confirmed by a later answer */
    uint64_t errors;          /* ERROR / CLIENT_ERROR / SERVER_ERROR answers */
    uint64_t fences;          /* `mn` no-ops sent behind noreply ops */
    uint64_t phases;
    uint64_t skipped;               /* recorded rows with no replay */
    uint64_t elapsed_ns;            /* first op sent -> last answer */
    unsigned connections, pipeline; /* what was used */
    uint64_t seed;
    int64_t replay_run; /* LOAD_SRC_REPLAY_DB: the run replayed */
    char server_version[LOAD_VERSION_MAX];
    char fingerprint[SHA256_HEX_LEN + 1];     /* sha256 of the plan's canonical lines */
    struct lhist latency[WORKLOAD_CMD_COUNT]; /* ns, per command, answered ops only */
    uint64_t late;                            /* rate: ops sent after they were due */
    /* reads and fills, whole run (fills are not in ops or answers) */
    uint64_t gets, hits, misses, fills, fills_stored;
    unsigned n_phase_results;
    struct load_phase_result phase_result[LOAD_PHASES_MAX];
    bool has_server; /* server: the target's `stats` deltas over the run */
    struct load_server_counts server;
    char server_note[LOAD_NOTE_MAX]; /* why !has_server */
    /* replay with demand fill: reads given no fill (reason) */
    uint64_t replay_reads; /* reads in the replayed run (0: none, or writes only) */
    /* replay: incr/decr found ahead and the keys they name, whose writes
     * were sent with digits (replay_counter_ops); 0 for other sources */
    uint64_t counter_ops, counter_keys;
    uint64_t fill_skipped_next_write, fill_skipped_unknown;
};

/* Runs the whole plan against cfg->target on a private loop; blocks until
 * done. 0 when every op was sent and answered (answers that are errors
 * are counted, not failures), -1 otherwise with out->status and
 * out->error set; the counters hold what happened until then. */
int load_run(const struct load_config *cfg, struct load_result *out);

/* The plan alone: ops and fingerprint, without connecting (--dry-run). */
int load_plan_digest(const struct load_config *cfg, struct load_result *out);

#endif
