/* clock: the two clocks slabtap uses -- wall time for what gets recorded,
 * monotonic time for latencies and timeouts.
 *
 * Owns nothing but the clock_gettime calls. Must never allocate or fail:
 * a clock that cannot be read gives 0, which no caller mistakes for now. */
#ifndef SLABTAP_CORE_CLOCK_H
#define SLABTAP_CORE_CLOCK_H

#include <stdint.h>

/* Unix time in nanoseconds (CLOCK_REALTIME): timestamps in the database. */
int64_t clock_wall_ns(void);
/* CLOCK_MONOTONIC in nanoseconds: intervals only, never stored. */
uint64_t clock_mono_ns(void);

#endif
