/* sample: key sampling for very hot nodes (`proxy --sample-keys 1/N`) --
 * which keys' rows are kept, and what a count made from the kept keys says
 * about all of them.
 *
 * A key is kept when a mix of its 64-bit hash (the row's key_hash: FNV-1a
 * of the whole key, core/keyfmt.h) is divisible by N, so every write of a
 * kept key is kept (appends, overwrites, deletes stay exact per key) and
 * each key is kept with probability 1/N independently of its size.
 *
 * A total over the kept keys (items in a class, their bytes) scaled by N
 * estimates the total over all keys without bias; its variance under this
 * Bernoulli(1/N) selection of keys is (N-1) * sum over all keys of x^2,
 * estimated from the kept keys as N(N-1) * sum over kept keys of x^2. The
 * stated error is SAMPLE_Z standard deviations of that, with the kept sum
 * of squares never taken below one key of size x_floor (so a class the
 * sample missed still has an error of about SAMPLE_Z * N keys).
 *
 * Owns the selection function and that arithmetic. Must never keep state,
 * allocate or do I/O: pure functions, the same on every thread, and the
 * same in tests/integration (which recomputes the selection in Python). */
#ifndef SLABTAP_CORE_SAMPLE_H
#define SLABTAP_CORE_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

/* the largest N of 1/N */
#define SAMPLE_MAX_N 1000000u
/* standard deviations in the stated error: 3 (99.7 % per class if normal) */
#define SAMPLE_Z 3.0

/* --sample-keys none: no key's rows are kept (the aggregates count every
 * write: a fleet node recording aggregates only) */
#define SAMPLE_NONE UINT32_MAX

/* "1/N" or "N" (N >= 1) into *n; "1/1", "1", "off" and "all" keep every
 * key (*n = 1); "none" keeps none (*n = SAMPLE_NONE). 0, or -1 when
 * text is none of those. */
int sample_parse(const char *text, uint32_t *n);
/* The key with this hash is kept under 1/n (n <= 1: every key;
 * SAMPLE_NONE: none). */
bool sample_keep(uint64_t key_hash, uint32_t n);
/* The estimate over all keys from a sum over the kept ones (n below
 * SAMPLE_NONE: nothing estimates from no keys). */
double sample_scale(double kept_sum, uint32_t n);
/* The stated error of sample_scale(sum, n) given the kept keys' sum of
 * squares: SAMPLE_Z * sqrt(n (n-1) max(kept_sumsq, x_floor^2)); 0 for n <= 1. */
double sample_error(double kept_sumsq, double x_floor, uint32_t n);

#endif
