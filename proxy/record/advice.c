/* advice: the objective and the flags of the one capacity advice. */
#include "record/advice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sample.h"

/* Whether the run's memcached was full: evictions during the run, or
 * total_malloced (else its pages) at limit_maxbytes in the last sample. */
static bool advice_run_full(struct reader *rd, const struct prediction *r, char *why, size_t len)
{
    struct reader_counters k;
    char err[256];
    int64_t last;
    snprintf(why, len, "the run's memcached was not full");
    if (r->evictions > 0) {
        snprintf(why, len, "the run's memcached was full: %lld evictions", (long long)r->evictions);
        return true;
    }
    if (!rd || (last = reader_sample_edge(rd, r->run_id, READER_LAST)) < 0 ||
        reader_sample_counters(rd, last, &k, err, sizeof err))
        return false;
    if (k.evictions > 0) {
        snprintf(why, len, "the run's memcached was full: %lld evictions", (long long)k.evictions);
        return true;
    }
    if (k.limit_maxbytes > 0 && k.total_malloced >= k.limit_maxbytes) {
        snprintf(why, len, "the run's memcached was full: total_malloced %lld of %lld",
                 (long long)k.total_malloced, (long long)k.limit_maxbytes);
        return true;
    }
    return false;
}

/* run_meta 'sample_keys' of run_id: the N of --sample-keys 1/N, 0 none. */
static unsigned advice_sampled(struct reader *rd, int64_t run_id)
{
    char *v = reader_meta(rd, run_id, "sample_keys");
    uint32_t k = 0;
    unsigned n = v && !sample_parse(v, &k) && k > 1 ? k : 0;
    free(v);
    return n;
}

enum runs_basis advice_basis(struct reader *rd, int64_t run_id,
                             const struct reader_rows_status *rows, bool capacity, char *why,
                             size_t len)
{
    unsigned sampled = 0;
    if (why && len)
        snprintf(why, len, "every recorded write replayed in sequence");
    if (!rows->have_aggs)
        return RUNS_BASIS_ROWS;
    if (!rows->complete) {
        if (why && len)
            snprintf(why, len, "only %lld of the run's %lld rows are left (retention)",
                     (long long)rows->present, (long long)rows->recorded);
        return RUNS_BASIS_AGGREGATES;
    }
    sampled = advice_sampled(rd, run_id);
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

bool advice_hits_default(struct reader *rd, int64_t run_id, const struct reader_rows_status *rows)
{
    return advice_basis(rd, run_id, rows, true, NULL, 0) == RUNS_BASIS_ROWS &&
           !advice_sampled(rd, run_id) && reader_reads_count(rd, run_id) > 0;
}

void advice_plan(struct reader *rd, const struct prediction *r, const char *objective,
                 uint64_t memory_limit_mb, struct advice_plan *out)
{
    memset(out, 0, sizeof *out);
    bool full = advice_run_full(rd, r, out->why, sizeof out->why);
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
