/* verify: `slabtap model advise --verify` -- a recorded run replayed
 * against a memcached started with candidate settings, and the rounding
 * waste that memcached then reports, beside the model's prediction.
 *
 * Owns the memcached it starts for each check (stopped on every path) and
 * nothing else: the replay is the load engine's, the prediction the
 * model's. Must never print: the caller reports the verify_result. */
#ifndef SLABTAP_LOAD_VERIFY_H
#define SLABTAP_LOAD_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "model/advise.h"
#include "model/predict.h"
#include "model/slab_model.h"

/* A prediction and the measurement agree when they are this close. */
#define VERIFY_TOLERANCE_PP 0.1

struct verify_result {
    char flags[1024]; /* the memcached flags used */
    double measured_pct, predicted_pct;
    uint64_t waste, allocated; /* measured, bytes */
    bool measured;             /* false: error says why */
    bool ok;                   /* measured within VERIFY_TOLERANCE_PP */
    char error[512];
};

/* Starts memcached (binary memcached, NULL: on PATH) with s's flags and
 * memory for every item twice over, replays run r from db_path into it,
 * measures. Returns 0 when measured and within tolerance, else -1. */
int verify_settings(const char *db_path, const struct prediction *r, const struct slab_settings *s,
                    const struct advise_eval *pred, const char *memcached,
                    struct verify_result *out);

#endif
