/* row: what the recorder carries from the event loop to the store -- one
 * fixed-size row per recorded write, per key a read asked for, or per-second
 * read counter, and the
 * rare variable-size jobs (stats samples, settings, phase marks).
 *
 * Owns only the types the recorder and the store share, so that neither
 * includes the other. Must never grow a pointer into a client's buffer:
 * rows are copied whole. */
#ifndef SLABTAP_RECORD_ROW_H
#define SLABTAP_RECORD_ROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/mc_parse.h"

/* REC_ROW_EVENT: an item memcached evicted or deleted (`watch evictions`,
 * `watch deletions`: table item_events); REC_ROW_ITEM: one resident item
 * of a snapshot (`lru_crawler metadump`: table snapshot_items). A write
 * memcached logged (`watch mutations`) is a REC_ROW_WRITE like the proxy's,
 * with class_id memcached's own clsid and no latency. */
enum rec_row_kind { REC_ROW_WRITE, REC_ROW_GETS, REC_ROW_READ, REC_ROW_EVENT, REC_ROW_ITEM };

/* rec_row.event of a REC_ROW_EVENT */
enum rec_item_event { REC_EVENT_EVICTED = 1, REC_EVENT_DELETED = 2 };

/* rec_row.cmd of a REC_ROW_READ, as the table read_rows keeps it (3 bits) */
enum rec_read_cmd {
    REC_READ_GET = 1,
    REC_READ_GETS = 2,
    REC_READ_GAT = 3,
    REC_READ_GATS = 4,
    REC_READ_MG = 5
};

/* One recorded write, one key of a read (REC_ROW_READ: seq is the read's
 * own sequence in the run, after_write the write seq it came after, hit,
 * value_len -1 on a miss, has_flags when the answer told the flags,
 * has_exptime for gat/gats, class_id of the item a hit returned, cmd an
 * enum mc_cmd), or one per-second read counter. Fixed size: the ring is
 * preallocated and rows are copied, never pointed to. */
struct rec_row {
    uint8_t kind;         /* enum rec_row_kind */
    uint8_t cmd;          /* enum mc_cmd */
    int16_t key_text_len; /* -1: no text kept (hash mode) */
    uint16_t key_len;
    uint32_t conn_id;
    uint32_t flags;
    bool has_flags;
    bool has_exptime;
    bool sampled_out; /* --sample-keys: a key not kept; the writer counts it
                         in the aggregates and inserts no row */
    uint64_t seq;
    int64_t t_ns; /* unix time, ns */
    uint64_t key_hash;
    int64_t value_len; /* -1: none */
    int64_t exptime;
    int64_t latency_ns; /* -1: no answer */
    uint32_t class_id;  /* predicted slab class, 0: none */
    char ms_mode;       /* ms M<mode>, 0: none */
    bool hit;           /* REC_ROW_READ: memcached returned the item */
    /* REC_ROW_EVENT / REC_ROW_ITEM (value_len: the value bytes memcached
       logged for an event, ITEM_ntotal for a snapshot item; exptime: the
       TTL left in seconds, -1 none; class_id: memcached's clsid) */
    uint8_t event;        /* enum rec_item_event */
    bool fetched;         /* fetch=yes */
    int64_t idle_s;       /* seconds since the item was last accessed */
    uint32_t snap;        /* REC_ROW_ITEM: the snapshot's number in its run (1..) */
    uint64_t after_write; /* REC_ROW_READ: the proxy's write seq when it was read */
    /* REC_ROW_GETS: counters for one second and command */
    int64_t second;
    uint64_t requests, keys, hits, misses, bytes_returned;
    char answer[96]; /* memcached's answer line (a meta answer's k flag
                        dropped unless --keys full), cut to fit: the longest
                        text answer to a write is 60 characters */
    char key_text[MC_KEY_MAX + 1];
};

/* Rare, variable-size records (a stats sample, settings, a phase mark, a
 * run_meta entry) travel as jobs: heap blobs handed over whole, written in
 * the same transactions as rows. */
/* REC_JOB_SNAPSHOT: one metadump's header row (table snapshots): phase_id
 * its number in the run (REC_ROW_ITEM.snap), t_ns when it started, text
 * JSON {"ended_ns":N,"items":N,"bytes":N,"complete":true|false} (complete:
 * memcached said END). */
/* REC_JOB_SAMPLE / REC_JOB_SETTINGS with target set: a shadow's (issue 23,
 * server/shadow.h), into shadow_samples / shadow_sample_classes /
 * shadow_settings. REC_JOB_SHADOW_EVENT: text the event ("started",
 * "restarted", "exited", "connected", "lost", "too_small"), version its
 * detail (for "started": JSON {"kind":"started"|"upstream","flags":"...",
 * "sample":N,"memory_mb":M,"command":"..."}), into shadow_events.
 * REC_JOB_SHADOW_COUNTS: one second (t_ns = the second's start) of one
 * shadow's counters, counts[] in enum rec_shadow_count order (the order of
 * SHADOW_COUNTERS), into shadow_counts. */
enum rec_job_kind {
    REC_JOB_SAMPLE,
    REC_JOB_SETTINGS,
    REC_JOB_PHASE,
    REC_JOB_META,
    REC_JOB_SNAPSHOT,
    REC_JOB_SHADOW_EVENT,
    REC_JOB_SHADOW_COUNTS
};

enum rec_shadow_count {
    REC_SC_READS,
    REC_SC_HITS,
    REC_SC_MISSES,
    REC_SC_FILLS,
    REC_SC_WRITES,
    REC_SC_STORED,
    REC_SC_NOT_STORED,
    REC_SC_OTHERS,
    REC_SC_ERRORS,
    REC_SC_DROPPED,
    REC_SHADOW_NCOUNTS
};

struct rec_job {
    struct rec_job *next;
    enum rec_job_kind kind;
    int64_t t_ns;
    int64_t phase_id; /* SAMPLE: phase active; PHASE: the new phase's id */
    bool final;       /* SAMPLE: the snapshot taken at shutdown */
    char *text;       /* SAMPLE: `stats` JSON; SETTINGS: settings JSON; PHASE: name;
                         META: the value */
    char *version;    /* SETTINGS; META: the run_meta key */
    size_t nclasses;  /* SAMPLE: per-class JSON objects */
    unsigned *class_ids;
    char **class_json;
    char *target;                       /* SAMPLE, SETTINGS: NULL the primary, else the shadow's
                     name; SHADOW_*: the shadow's name (heap, freed with it) */
    int64_t counts[REC_SHADOW_NCOUNTS]; /* SHADOW_COUNTS */
};

#endif
