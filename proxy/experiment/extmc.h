/* extmc: a memcached the runner did not start (--upstream HOST:PORT,
 * MC_HOST/MC_PORT): one blocking round trip of `stats settings` and
 * `stats`, bounded by EXTMC_TIMEOUT_MS, to decide whether a run may use it.
 *
 * Owns that connection. Must never send anything but stats and version
 * requests (it is someone else's server), or wait without a bound. */
#ifndef SLABTAP_EXPERIMENT_EXTMC_H
#define SLABTAP_EXPERIMENT_EXTMC_H

#include <stddef.h>

#include "experiment/mcflags.h"

#define EXTMC_TIMEOUT_MS 5000
#define EXTMC_ANSWER_MAX (256u * 1024)

/* settings and stats filled from hostport's answers. 0, or -1 with err. */
int extmc_fetch(const char *hostport, struct mcflags_stats *settings, struct mcflags_stats *stats,
                char *err, size_t errlen);

#endif
