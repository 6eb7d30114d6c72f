/* advice: the objective and the flags of the one capacity advice. */
#include "record/advice.h"

#include <stdio.h>
#include <string.h>

#include "core/sample.h"

/* Whether the run's memcached was full: evictions during the run, or
 * total_malloced (else its pages) at limit_maxbytes in the last sample. */
static bool advice_run_full(sqlite3 *db, const struct prediction *r, char *why, size_t len)
{
    sqlite3_stmt *st;
    bool full = false;
    snprintf(why, len, "the run's memcached was not full");
    if (r->evictions > 0) {
        snprintf(why, len, "the run's memcached was full: %lld evictions", (long long)r->evictions);
        return true;
    }
    if (!db || sqlite3_prepare_v2(
                   db,
                   "SELECT coalesce(json_extract(s.stats, '$.evictions'), 0),"
                   " coalesce(json_extract(s.stats, '$.limit_maxbytes'), 0),"
                   " coalesce(json_extract(s.stats, '$.total_malloced'),"
                   "  (SELECT sum(json_extract(c.fields, '$.total_pages')) FROM sample_classes c"
                   "   WHERE c.sample_id = s.sample_id) * 1048576, 0)"
                   " FROM samples s WHERE s.run_id = ?1 ORDER BY s.t_ns DESC LIMIT 1",
                   -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_int64(st, 1, r->run_id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        int64_t ev = sqlite3_column_int64(st, 0), lim = sqlite3_column_int64(st, 1),
                mal = sqlite3_column_int64(st, 2);
        if (ev > 0) {
            snprintf(why, len, "the run's memcached was full: %lld evictions", (long long)ev);
            full = true;
        } else if (lim > 0 && mal >= lim) {
            snprintf(why, len, "the run's memcached was full: total_malloced %lld of %lld",
                     (long long)mal, (long long)lim);
            full = true;
        }
    }
    sqlite3_finalize(st);
    return full;
}

/* run_meta 'sample_keys' of run_id: the N of --sample-keys 1/N, 0 none. */
static unsigned advice_sampled(sqlite3 *db, int64_t run_id)
{
    sqlite3_stmt *st;
    unsigned n = 0;
    if (!db || sqlite3_prepare_v2(db,
                                  "SELECT value FROM run_meta WHERE run_id = ?1 AND key = "
                                  "'sample_keys'",
                                  -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        uint32_t k = 0;
        if (v && !sample_parse(v, &k) && k > 1)
            n = k;
    }
    sqlite3_finalize(st);
    return n;
}

enum runs_basis advice_basis(sqlite3 *db, int64_t run_id, const struct runs_rows_status *rows,
                             bool capacity, char *why, size_t len)
{
    unsigned sampled = 0;
    if (why && len)
        snprintf(why, len, "every recorded write replayed in sequence");
    if (!db || !rows->have_aggs)
        return RUNS_BASIS_ROWS;
    if (!rows->complete) {
        if (why && len)
            snprintf(why, len, "only %lld of the run's %lld rows are left (retention)",
                     (long long)rows->present, (long long)rows->recorded);
        return RUNS_BASIS_AGGREGATES;
    }
    sampled = advice_sampled(db, run_id);
    if (sampled == SAMPLE_NONE) { /* no rows at all: whatever is asked */
        if (why && len)
            snprintf(why, len,
                     "the run records no rows (--sample-keys none); the aggregates count every "
                     "write");
        return RUNS_BASIS_AGGREGATES;
    }
    if (capacity && sampled) {
        if (why && len)
            snprintf(why, len,
                     "the rows keep one key in %u (--sample-keys); the aggregates count every "
                     "write",
                     sampled);
        return RUNS_BASIS_AGGREGATES;
    }
    return RUNS_BASIS_ROWS;
}

bool advice_hits_default(sqlite3 *db, int64_t run_id, const struct runs_rows_status *rows)
{
    sqlite3_stmt *st;
    bool yes = false;
    if (!db || advice_basis(db, run_id, rows, true, NULL, 0) != RUNS_BASIS_ROWS ||
        advice_sampled(db, run_id) ||
        sqlite3_prepare_v2(db, "SELECT 1 FROM reads WHERE run_id = ?1 LIMIT 1", -1, &st, NULL) !=
            SQLITE_OK)
        return false;
    sqlite3_bind_int64(st, 1, run_id);
    yes = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

void advice_plan(sqlite3 *db, const struct prediction *r, const char *objective,
                 uint64_t memory_limit_mb, struct advice_plan *out)
{
    memset(out, 0, sizeof *out);
    bool full = advice_run_full(db, r, out->why, sizeof out->why);
    out->chosen = !objective;
    out->obj = objective ? (!strcmp(objective, "memory") ? CAPACITY_OBJ_MEMORY : CAPACITY_OBJ_ITEMS)
               : full    ? CAPACITY_OBJ_ITEMS
                         : CAPACITY_OBJ_MEMORY;
    out->mem_mb = memory_limit_mb ? memory_limit_mb : r->settings.mem_limit / (1024 * 1024);
    out->mem_limit = out->mem_mb * 1024 * 1024;
}

void advice_candidate_flags(const struct advise_candidate *c, const struct advice_plan *p,
                            const char *version, char *out, size_t len)
{
    char err[256];
    uint64_t mem_mb = p->obj == CAPACITY_OBJ_ITEMS ? p->mem_mb : 0;
    if (!mem_mb)
        mem_mb = (c->cap.malloced + 1024 * 1024 - 1) / (1024 * 1024);
    if (slab_settings_flags_for(&c->s, mem_mb ? mem_mb : 1, version, out, len, err, sizeof err))
        snprintf(out, len, "(%s)", err);
}
