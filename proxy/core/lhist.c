#include "core/lhist.h"

#include <string.h>

void lhist_init(struct lhist *h)
{
    memset(h, 0, sizeof *h);
}

/* Values below LHIST_SUB get a bucket each; above, bucket = the power of
 * two (from LHIST_SUB_BITS on) times LHIST_SUB plus the next LHIST_SUB_BITS
 * bits below the top one. */
unsigned lhist_bucket(uint64_t v)
{
    if (v < LHIST_SUB)
        return (unsigned)v;
    unsigned top = 63u - (unsigned)__builtin_clzll(v); /* >= LHIST_SUB_BITS */
    unsigned sub = (unsigned)(v >> (top - LHIST_SUB_BITS)) & (LHIST_SUB - 1);
    return (top - LHIST_SUB_BITS + 1) * LHIST_SUB + sub;
}

uint64_t lhist_bucket_upper(unsigned b)
{
    if (b < LHIST_SUB)
        return b;
    unsigned top = b / LHIST_SUB + LHIST_SUB_BITS - 1;
    uint64_t sub = b % LHIST_SUB;
    uint64_t lo = (1ull << top) | (sub << (top - LHIST_SUB_BITS));
    return lo + ((1ull << (top - LHIST_SUB_BITS)) - 1);
}

void lhist_add(struct lhist *h, uint64_t v)
{
    unsigned b = lhist_bucket(v);
    h->buckets[b < LHIST_BUCKETS ? b : LHIST_BUCKETS - 1]++;
    h->count++;
    h->sum += v;
    if (v > h->max)
        h->max = v;
}

void lhist_merge(struct lhist *into, const struct lhist *from)
{
    for (unsigned i = 0; i < LHIST_BUCKETS; i++)
        into->buckets[i] += from->buckets[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->max > into->max)
        into->max = from->max;
}

uint64_t lhist_quantile(const struct lhist *h, double q)
{
    uint64_t rank, seen = 0;
    if (!h->count)
        return 0;
    if (q <= 0)
        q = 0;
    rank = (uint64_t)(q * (double)h->count);
    if (rank >= h->count)
        rank = h->count - 1;
    for (unsigned i = 0; i < LHIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen > rank) {
            uint64_t up = lhist_bucket_upper(i);
            return up < h->max ? up : h->max;
        }
    }
    return h->max;
}
