/* experiment: `slabtap experiment SPEC` -- runs an experiment spec: for
 * each run its own memcached with the run's flags, the recording proxy in
 * front of it, the workload through the proxy on a second thread, a final
 * stats sample; then the verification gates and the CSV exports, each
 * produced by a SQL file over the database.
 *
 * Owns the spec format (experiments/README.md, "Experiment specs") and the
 * whole lifecycle of what it starts. Must never leave a memcached or a
 * proxy behind (done, error or Ctrl-C), and never format a result number
 * in C: every figure in results/ comes out of a query. */
#ifndef SLABTAP_EXPERIMENT_H
#define SLABTAP_EXPERIMENT_H

#include "model_advise.h"
#include "model_replay.h"

#define EXP_RUNS_MAX 16
#define EXP_EXPORTS_MAX 32
#define EXP_NAME_MAX 64
#define EXP_PATH_MAX 512
#define EXP_ARGS_MAX 512
#define EXP_LINE_MAX 1024

/* `slabtap model advise --verify`: replays run r against memcacheds started
 * with each candidate's flags and prints the measured waste beside the
 * prediction. 0 when every measurement is within 0.1 percentage points. */
int model_verify(const char *db_path, const struct replay_result *r,
                 const struct slab_settings *best, const struct advise_eval *best_eval,
                 const struct slab_settings *fitted, const struct advise_eval *fitted_eval,
                 const char *memcached);

/* Flags memcached needs to build the ladder of s (beyond its defaults). */
void experiment_memcached_flags(const struct slab_settings *s, uint64_t mem_mb, char *out,
                                size_t len);

#endif
