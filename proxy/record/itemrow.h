/* itemrow: the one encoding of issue 22's rows for both stores -- an
 * eviction or deletion memcached logged (REC_ROW_EVENT: table item_events),
 * one resident item of a snapshot (REC_ROW_ITEM: table snapshot_items) and
 * a snapshot's header (REC_JOB_SNAPSHOT: table snapshots) -- as the column
 * values schema/schema.sql.in documents, with their NULLs said, so that
 * store.c (SQLite) and pgstore.c (PostgreSQL) write the same rows.
 *
 * Owns only the mapping from a row or job to column values (pure). Must
 * never touch a database, allocate, or print. The key is not here: each
 * store keeps it as it keeps a write's (--keys: store.c's key_prefixes
 * dictionary, pgstore.c's text). */
#ifndef SLABTAP_RECORD_ITEMROW_H
#define SLABTAP_RECORD_ITEMROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rec_row;
struct rec_job;

/* A column that may be NULL. */
struct itemrow_opt {
    bool null;
    int64_t v;
};

/* item_events' columns but run_id and key_ref. */
struct itemrow_event {
    int64_t seq, t_ns, event, key_hash, key_len, class_id;
    struct itemrow_opt size;                      /* NULL: memcached logged none */
    struct itemrow_opt fetched, idle_s, ttl_left; /* NULL for a deletion */
    const char *cmd;                              /* a deletion's; NULL for an eviction */
};

/* snapshot_items' columns but run_id and key_ref. */
struct itemrow_item {
    int64_t snap, seq, key_hash, key_len, class_id, size, ttl_left, idle_s, fetched;
    struct itemrow_opt flags; /* NULL: unknown (metadump prints none) */
};

/* snapshots' columns but run_id. */
struct itemrow_snapshot {
    int64_t snap, t_ns;
    struct itemrow_opt ended_ns; /* NULL: not said, or 0 */
    int64_t items, bytes, complete;
};

void itemrow_event(const struct rec_row *r, struct itemrow_event *out);
void itemrow_item(const struct rec_row *r, struct itemrow_item *out);
/* The job's text is JSON {"ended_ns":N,"items":N,"bytes":N,"complete":B};
 * a field it lacks reads 0 (NULL for ended_ns). */
void itemrow_snapshot(const struct rec_job *j, struct itemrow_snapshot *out);
/* The key text the row recorded (NULL: none, --keys hash) and its length. */
const char *itemrow_key(const struct rec_row *r, size_t *len);

#endif
