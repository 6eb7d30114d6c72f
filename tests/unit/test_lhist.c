/* lhist: bucket edges, relative precision at every power of two, quantiles
 * against a sorted reference, merge. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/lhist.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_buckets(void)
{
    /* small values are exact */
    for (uint64_t v = 0; v < LHIST_SUB; v++)
        CHECK(lhist_bucket(v) == v && lhist_bucket_upper((unsigned)v) == v, "small %llu",
              (unsigned long long)v);
    /* every value lies in its bucket, within 1/LHIST_SUB of the edge */
    for (unsigned shift = 0; shift < 63; shift++) {
        uint64_t vals[] = { 1ull << shift, (1ull << shift) + 1, (1ull << shift) * 3 / 2,
                            ((1ull << shift) << 1) - 1 };
        for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
            uint64_t v = vals[i];
            unsigned b = lhist_bucket(v);
            uint64_t up = lhist_bucket_upper(b);
            uint64_t lo = b ? lhist_bucket_upper(b - 1) + 1 : 0;
            CHECK(b < LHIST_BUCKETS && lo <= v && v <= up, "v %llu in bucket %u [%llu, %llu]",
                  (unsigned long long)v, b, (unsigned long long)lo, (unsigned long long)up);
            CHECK((double)(up - v) <= (double)v / LHIST_SUB + 1, "precision at %llu: up %llu",
                  (unsigned long long)v, (unsigned long long)up);
        }
    }
    /* buckets are contiguous: the next bucket starts right after this one */
    for (unsigned b = 1; b < LHIST_BUCKETS - LHIST_SUB; b++)
        CHECK(lhist_bucket(lhist_bucket_upper(b - 1) + 1) == b, "bucket %u follows", b);
}

static void test_quantiles(void)
{
    enum { N = 20000 };
    static uint64_t vals[N];
    struct lhist h, a, b;
    uint64_t seed = 42;
    lhist_init(&h);
    lhist_init(&a);
    lhist_init(&b);
    CHECK(lhist_quantile(&h, 0.5) == 0, "empty");
    for (int i = 0; i < N; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        /* a skewed latency-like spread: 20 us .. ~20 ms */
        vals[i] = 20000 + (seed >> 33) % 100000 * ((seed >> 20) % 8 == 0 ? 200 : 1);
        lhist_add(&h, vals[i]);
        lhist_add(i % 2 ? &a : &b, vals[i]);
    }
    qsort(vals, N, sizeof vals[0], cmp_u64);
    double qs[] = { 0.5, 0.9, 0.99, 0.999 };
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        uint64_t want = vals[(size_t)(qs[i] * N)];
        uint64_t got = lhist_quantile(&h, qs[i]);
        CHECK(got >= want && (double)(got - want) <= (double)want / LHIST_SUB + 1,
              "q%.3f: got %llu want %llu", qs[i], (unsigned long long)got,
              (unsigned long long)want);
    }
    CHECK(lhist_quantile(&h, 1.0) == vals[N - 1] && h.max == vals[N - 1], "max");
    lhist_merge(&a, &b);
    CHECK(a.count == h.count && a.max == h.max && a.sum == h.sum &&
              !memcmp(a.buckets, h.buckets, sizeof a.buckets),
          "merge equals the whole");
}

int main(void)
{
    test_buckets();
    test_quantiles();
    return check_done("lhist");
}
