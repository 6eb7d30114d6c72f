/* jobs: what a run records beside the rows -- each stats sample, memcached's
 * settings when they change, phases and run_meta entries -- as recorder
 * jobs, and the ladder the proxy tags each write with, chosen again as the
 * samples show more of memcached.
 *
 * Owns: turning a stats sample into its jobs (sample, settings, run_meta
 * 'ladder'; a shadow's sample, settings, events and per-second counts), the ladder state (memcached's `stats settings`, the chunk
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

/* shadows whose settings are followed (shadow.h SHADOW_MAX is 4) and the
 * longest target name kept for that (SHADOW_NAME_MAX) */
#define JOBS_SHADOW_TARGETS 8
#define JOBS_TARGET_MAX 128

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
    /* the shadows (server/shadow.h) whose settings were queued once */
    char shadow_settled[JOBS_SHADOW_TARGETS][JOBS_TARGET_MAX];
    unsigned n_shadow_settled;
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
/* A shadow's stats sample (issue 23, server/shadow.h), target its name:
 * its settings the first time they come and when they change, then the
 * sample (REC_JOB_SAMPLE / REC_JOB_SETTINGS with target; no ladder, no
 * phase). */
void jobs_shadow_sample(struct jobs *j, const char *target, const struct stats_sample *s,
                        bool final);
/* A shadow's event ("started", "restarted", "exited", "connected", "lost",
 * "too_small") at t_ns with its detail (NULL: none), into shadow_events. */
void jobs_shadow_event(struct jobs *j, const char *target, int64_t t_ns, const char *event,
                       const char *detail);
/* One second (unix s) of a shadow's counters in enum rec_shadow_count
 * order, into shadow_counts. */
void jobs_shadow_counts(struct jobs *j, const char *target, int64_t second,
                        const int64_t counts[REC_SHADOW_NCOUNTS]);
/* memcached's reported settings, NULL until a sample carried them. */
const struct slab_settings *jobs_reported(const struct jobs *j);

#endif
