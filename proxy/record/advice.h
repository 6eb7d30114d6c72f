/* advice: the one capacity advice of a recorded run, the same for
 * `slabtap model advise` (cli/model_cmd.c) and the page's
 * /api/run/advice (record/query.c): which objective (the most items in
 * the run's -m when its memcached was full, else the least memory for the
 * whole working set), at which memory, and each candidate's memcached
 * flags. The candidates themselves are model/advise.h's advise_capacity.
 *
 * Owns: the rule that picks the basis (advice_basis: the run's rows,
 * replayed in sequence by record/rowseq.h, or its write aggregates), the
 * rule that picks the objective (advice_plan, with what tells whether the
 * run's memcached was full; advice_hits_default), and the
 * text of a candidate's flags. Must never write to the database, print, or choose
 * candidates another way than advise_capacity. */
#ifndef SLABTAP_RECORD_ADVICE_H
#define SLABTAP_RECORD_ADVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/advise.h"
#include "model/predict.h"
#include "record/runs.h"

#define ADVICE_WHY_MAX 160

struct advice_plan {
    enum capacity_objective obj;
    uint64_t mem_mb;          /* the objective's memory (-m) in MB */
    uint64_t mem_limit;       /* the same in bytes */
    bool chosen;              /* the objective was chosen (not given) */
    char why[ADVICE_WHY_MAX]; /* whether the run's memcached was full, and why */
};

/* The one rule for which records of run_id an advice reads (the page's
 * and `slabtap model advise|predict|mrc --source auto`): its rows, unless
 * they are not all kept and the run has write aggregates -- older rows
 * expired (retention), or, for the capacity advice (capacity), rows of one
 * key in N (--sample-keys; the aggregates count every write), or no rows
 * at all (--sample-keys none: the aggregates, whatever is asked). The same
 * on either engine (rd: record/reader.h). why (may be NULL) gets the
 * reason in words. */
enum runs_basis advice_basis(struct reader *rd, int64_t run_id,
                             const struct reader_rows_status *rows, bool capacity, char *why,
                             size_t len);

/* Whether `slabtap model advise` without --objective gives the hits
 * advice: run_id recorded reads and its rows are the basis (all kept, not
 * sampled). Otherwise capacity (advice_plan). */
bool advice_hits_default(struct reader *rd, int64_t run_id, const struct reader_rows_status *rows);

/* The plan for run r (rd may be NULL: then only r's evictions tell
 * whether it was full). objective "items", "memory" or NULL (chosen: items
 * when full); memory_limit_mb 0: the run's own -m. */
void advice_plan(struct reader *rd, const struct prediction *r, const char *objective,
                 uint64_t memory_limit_mb, struct advice_plan *out);

/* Candidate c's memcached flags at the plan's memory: -m, the ladder and
 * every other flag that differs from the defaults (-I, slab_chunk_max,
 * -C), in the units of memcached version. */
void advice_candidate_flags(const struct advise_candidate *c, const struct advice_plan *p,
                            const char *version, char *out, size_t len);

#endif
