/* cachesim_bench: the cache simulator's speed (model/capacity.h).
 *
 *   cachesim_bench [REQUESTS [KEYS [MEM_MB [ZIPF_S]]]]
 *
 * Builds a seeded get-or-set sequence (default 1,500,000 requests, Zipf
 * s = 0.99 over 200,000 keys, values of 100..4,000 bytes fixed per key,
 * every get demand-filled on a miss, one request per microsecond of t so
 * time moves), then times capacity_run over it for the segmented LRU
 * (automove 0, 1, 2) and the plain LRU at MEM_MB (default 64), and prints
 * requests per second and the hit ratio of each. Building the sequence is
 * not timed. Build Release: cmake -DCMAKE_BUILD_TYPE=Release. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model/capacity.h"
#include "model/slab_model.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_u64(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1500000;
    uint32_t keys = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 200000;
    uint64_t mem = (argc > 3 ? strtoull(argv[3], NULL, 10) : 64) * 1024 * 1024;
    double zs = argc > 4 ? strtod(argv[4], NULL) : 0.99;
    if (!n || !keys) {
        fprintf(stderr, "usage: cachesim_bench [REQUESTS [KEYS [MEM_MB [ZIPF_S]]]]\n");
        return 1;
    }
    double *cdf = malloc(keys * sizeof *cdf);
    if (!cdf)
        return 1;
    double sum = 0;
    for (uint32_t i = 0; i < keys; i++)
        cdf[i] = (sum += 1.0 / pow(i + 1.0, zs));
    struct capacity_seq s;
    capacity_seq_init(&s);
    for (size_t i = 0; i < n; i++) {
        double u = (double)(next_u64() >> 11) / 9007199254740992.0 * sum;
        uint32_t lo = 0, hi = keys - 1;
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (cdf[mid] < u)
                lo = mid + 1;
            else
                hi = mid;
        }
        uint64_t h = lo * 0x9e3779b97f4a7c15ULL + 1;
        struct capacity_req r = { .kind = CAPACITY_GET,
                                  .key_len = 12,
                                  .value_len = 100 + (h >> 20) % 3900,
                                  .t = (uint32_t)(i / 1000000),
                                  .fill = 1 };
        if (capacity_seq_add_req(&s, h, &r)) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
    }
    struct slab_settings st;
    struct slab_ladder l;
    slab_settings_default(&st);
    if (slab_ladder_build(&st, &l, NULL, 0) != SLAB_OK)
        return 1;
    static const struct {
        const char *name;
        enum capacity_lru lru;
        unsigned automove;
    } runs[] = { { "segmented automove=0", CAPACITY_LRU_SEGMENTED, 0 },
                 { "segmented automove=1", CAPACITY_LRU_SEGMENTED, 1 },
                 { "segmented automove=2", CAPACITY_LRU_SEGMENTED, 2 },
                 { "plain     automove=0", CAPACITY_LRU_PLAIN, 0 } };
    printf("%zu requests, %u keys (zipf %.2f), -m %llu\n", n, s.n_keys, zs,
           (unsigned long long)(mem >> 20));
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        struct capacity_config c;
        capacity_config_default(&c, mem);
        c.lru = runs[i].lru;
        c.automove = runs[i].automove;
        struct capacity_result r;
        double best = 1e9;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now_s();
            if (capacity_run(&l, &c, &s, 0, s.n, &r))
                return 1;
            double dt = now_s() - t0;
            if (dt < best)
                best = dt;
        }
        printf("%s: %.2f M requests/s (best of 3, %.3f s), hit ratio %.4f, evictions %llu, "
               "moves %llu\n",
               runs[i].name, (double)n / best / 1e6, best, capacity_hit_ratio(&r),
               (unsigned long long)r.evictions, (unsigned long long)r.moves);
    }
    capacity_seq_free(&s);
    free(cdf);
    return 0;
}
