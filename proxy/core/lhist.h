/* lhist: a latency histogram with log-linear buckets -- every power of two
 * split into LHIST_SUB equal buckets, so any value is kept within 1/LHIST_SUB
 * (3 %) of itself from 1 ns to 2^64 ns, in a fixed array; quantiles and the
 * exact maximum, mergeable by adding counts.
 *
 * Owns nothing but its counts. Must never allocate or fail: a value too
 * large for the last bucket goes into it. */
#ifndef SLABTAP_CORE_LHIST_H
#define SLABTAP_CORE_LHIST_H

#include <stdint.h>

#define LHIST_SUB_BITS 5
#define LHIST_SUB (1u << LHIST_SUB_BITS)
#define LHIST_BUCKETS ((64u - LHIST_SUB_BITS + 1) * LHIST_SUB)

struct lhist {
    uint64_t count;
    uint64_t max;
    uint64_t sum;
    uint64_t buckets[LHIST_BUCKETS];
};

void lhist_init(struct lhist *h);
void lhist_add(struct lhist *h, uint64_t value);
void lhist_merge(struct lhist *into, const struct lhist *from);
/* The value at quantile q (0..1): the upper edge of the bucket holding it,
 * never above the maximum seen; 0 when empty. */
uint64_t lhist_quantile(const struct lhist *h, double q);
/* Bucket index of a value and the largest value that bucket holds (tests). */
unsigned lhist_bucket(uint64_t value);
uint64_t lhist_bucket_upper(unsigned bucket);

#endif
