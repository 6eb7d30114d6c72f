/* query_targets: the primary and its shadow memcacheds (issue 23) side by
 * side, as the JSON the page (/api/run/targets), `slabtap top` and
 * `slabtap model shadows` read, from the store's views (targets,
 * target_totals, target_class_latest, target_samples, shadow_events) on
 * either engine, with a one-line verdict per shadow.
 *
 *   {"run":R,"targets":[{"target":"primary","kind":"primary","flags":..,
 *     "sample_n":1,"memory_mb":..,"started_ns":..,"restarts":0,
 *     "data_since_ns":..,"totals":{target_totals' columns}|null,
 *     "classes":[{class_id,chunk_size,total_pages,used_chunks,
 *       mem_requested,waste_bytes,evicted,get_hits}...],
 *     "series":[{"t":unix_s,"hit_ratio":x|null,"hits":n,"misses":n,
 *       "evictions":n,"bytes":n}...],
 *     "events":[{"t_ns":..,"event":..,"detail":..}...],"verdict":null},
 *    {shadow..., "verdict":"-f 1.08: +2.1 points hit ratio, 3.2 MB less
 *     waste, 41 more classes, 0.4 fewer evictions/s"}]}
 *
 * A run without shadows has "targets":[]. Series points are deltas between
 * samples, thinned in SQL to about QUERY_TARGETS_POINTS per target (the
 * first and the latest always; a counter that went down means memcached
 * restarted: its value is the delta). The verdict compares the shadow
 * (target_totals: its first sample since its data last started to its
 * latest) with the primary over the same interval (its latest samples at
 * or before either end): hit ratio in points (a 1/N shadow's adjusted
 * as SHARDS does: 1 - N x its misses / the primary's reads),
 * waste (the shadow's times N for a 1/N sample, said so), classes with
 * pages, evictions per second (times N for a sample); "no sample yet" or
 * "too small: ..." when that is all there is to say.
 *
 * Owns: the SQL texts of that answer and the verdict's rule.
 * Must never: run SQL on a connection its caller does not own the thread
 * of, or print. */
#ifndef SLABTAP_RECORD_QUERY_TARGETS_H
#define SLABTAP_RECORD_QUERY_TARGETS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "record/qsql.h"

#define QUERY_TARGETS_MAX 16     /* targets answered (the primary and SHADOW_MAX shadows fit) */
#define QUERY_TARGETS_POINTS 300 /* series points per target */
#define QUERY_TARGETS_EVENTS 100 /* events per target */

enum query_targets_rc { QT_OK = 0, QT_TIMEOUT = 1, QT_ERROR = -1 };

/* The JSON of run run_id appended to out (a JSONB_MAX buf; out->failed
 * when it did not fit). QT_ERROR with the reason in err; QT_TIMEOUT when a
 * statement went over the connection's budget. */
enum query_targets_rc query_targets_json(struct qsql_db *db, int64_t run_id, struct buf *out,
                                         char *err, size_t errlen);

/* The verdict line of one shadow (exposed for its unit test): name, its
 * 1/sample_n, its hit ratio (< 0: no reads), waste bytes, classes with
 * pages and evictions per second over an interval, and the primary's over
 * the same interval. */
struct query_targets_side {
    double hit_ratio; /* < 0: no reads in the interval */
    int64_t waste_bytes;
    int64_t classes;
    double evictions_per_s; /* < 0: unknown */
};
void query_targets_verdict(char *out, size_t outlen, const char *name, int64_t sample_n,
                           const struct query_targets_side *shadow,
                           const struct query_targets_side *primary);

#endif
