/* verify: replay a run against memcacheds with candidate settings and
 * measure. The replay runs on this thread (load_run), so the caller must
 * have SIGPIPE ignored, as load.h says. */
#include "load/verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "core/addr.h"
#include "load/load.h"
#include "load/mcserver.h"
#include "protocol/stats_parse.h"

/* Measured rounding waste of a live memcached: sum over classes. */
static int measure_waste(int port, double *pct, uint64_t *waste, uint64_t *allocated, char *errout,
                         size_t errlen)
{
    struct stats_sample *s = malloc(sizeof *s);
    char err[256];
    int rc = -1;
    if (!s) {
        snprintf(errout, errlen, "out of memory");
        return -1;
    }
    stats_sample_init(s);
    if (mcserver_stats(port, s, err, sizeof err) == 0) {
        uint64_t alloc = 0, req = 0;
        for (unsigned id = 0; id <= s->max_class_id; id++) {
            int64_t chunk, used, r;
            if (stats_sample_get(s, id, "chunk_size", &chunk) &&
                stats_sample_get(s, id, "used_chunks", &used)) {
                alloc += (uint64_t)(chunk * used);
                if (stats_sample_get(s, id, "mem_requested", &r))
                    req += (uint64_t)r;
            }
        }
        *allocated = alloc;
        *waste = alloc - req;
        *pct = alloc ? 100.0 * (double)(alloc - req) / (double)alloc : 0;
        rc = 0;
    } else {
        snprintf(errout, errlen, "%s", err);
    }
    stats_sample_fini(s);
    free(s);
    return rc;
}

int verify_settings(const char *db_path, const struct prediction *r, const struct slab_settings *s,
                    const struct advise_eval *pred, const char *memcached,
                    struct verify_result *out)
{
    uv_loop_t loop;
    struct mcserver mc;
    struct load_result *lr = calloc(1, sizeof *lr);
    struct load_config lc = { 0 };
    char err[MCSERVER_ERR_MAX];
    int rc = -1;
    /* room for every item twice over, so nothing is evicted */
    uint64_t mem_mb = pred->allocated / (1024 * 1024) * 2 + 64;
    memset(out, 0, sizeof *out);
    out->predicted_pct = pred->waste_pct;
    slab_settings_flags(s, mem_mb, out->flags, sizeof out->flags);
    uv_loop_init(&loop);
    if (!lr || mcserver_start(&mc, &loop, memcached, false, NULL, out->flags, err, sizeof err)) {
        snprintf(out->error, sizeof out->error, "%s", lr ? err : "out of memory");
        goto out;
    }
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", mc.port);
    addr_parse(target, &lc.target);
    lc.source = LOAD_SRC_REPLAY_DB;
    lc.path = db_path;
    lc.replay_run = r->run_id;
    lc.progress = LOAD_PROGRESS_OFF;
    if (load_run(&lc, lr)) {
        snprintf(out->error, sizeof out->error, "replay: %s", lr->error);
    } else if (measure_waste(mc.port, &out->measured_pct, &out->waste, &out->allocated, out->error,
                             sizeof out->error) == 0) {
        out->measured = true;
        out->ok = fabs(out->measured_pct - pred->waste_pct) <= VERIFY_TOLERANCE_PP;
        rc = out->ok ? 0 : -1;
    }
    mcserver_stop(&mc);
out:
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    free(lr);
    return rc;
}
