/* jobs: what a run records beside the rows -- each stats sample, memcached's
 * settings when they change, phases and run_meta entries -- as recorder
 * jobs, and the ladder the proxy tags each write with, chosen again as the
 * samples show more of memcached.
 *
 * Owns: turning a stats sample into its jobs (sample, settings, run_meta
 * 'ladder'), the ladder state (memcached's `stats settings`, the chunk
 * sizes seen, the choice of model/ladder_source.h) and the proxy's ladder
 * pointer (px->ladder: NULL while writes stay untagged), and logging a
 * ladder that changes or disagrees with memcached.
 * Must never: write to the store (jobs go through rec_push_job, to the
 * writer thread), keep a sample, or decide when a sample is final (the
 * caller's lifecycle does). Loop thread only, but jobs_phase (any thread:
 * the recorder's job queue is locked). */
#ifndef SLABTAP_JOBS_H
#define SLABTAP_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include "model/ladder_source.h"
#include "model/slab_model.h"
#include "protocol/stats_parse.h"
#include "record/recorder.h"
#include "server/proxy.h"

struct jobs {
    struct recorder *rec;
    struct proxy *px;            /* its ladder is set here */
    const char *memcached_flags; /* the flags slabtap knows memcached runs with (NULL: none) */
    struct slab_ladder ladder;   /* what px->ladder points at once chosen */
    /* what decides it: `stats settings`, memcached_flags and the chunk sizes
     * memcached showed (model/ladder_source.h) */
    struct slab_settings reported;
    bool have_reported;
    struct ladder_observed seen;
    struct ladder_choice choice;
};

void jobs_init(struct jobs *j, struct recorder *rec, struct proxy *px, const char *memcached_flags);
/* One stats sample of phase phase_id (final: the snapshot taken at
 * shutdown): its settings when new, the ladder chosen again when it shows
 * more, then the sample itself, queued. A job the queue cannot take is
 * counted there (jobs_dropped). */
void jobs_sample(struct jobs *j, const struct stats_sample *s, int64_t phase_id, bool final);
/* One run_meta entry, written with the rows; value (NULL: none) is taken
 * over. */
void jobs_meta(struct jobs *j, int64_t t_ns, const char *key, char *value);
/* Phase id named name (at most name_max bytes of it) starts at t_ns. true
 * when queued: only then may the caller confirm it. */
bool jobs_phase(struct jobs *j, int64_t id, int64_t t_ns, const char *name, size_t name_max);
/* memcached's reported settings, NULL until a sample carried them. */
const struct slab_settings *jobs_reported(const struct jobs *j);

#endif
