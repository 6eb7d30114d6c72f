/* advice: the objective and the flags of the one capacity advice. */
#include "record/advice.h"

#include <stdio.h>
#include <string.h>

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
