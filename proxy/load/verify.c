/* verify: replay a run against memcacheds with candidate settings and
 * measure. The replay runs on this thread (load_run), so the caller must
 * have SIGPIPE ignored, as load.h says. */
#include "load/verify.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "core/addr.h"
#include "core/keyfmt.h"
#include "load/load.h"
#include "load/mcserver.h"
#include "load/replay.h"
#include "protocol/stats_parse.h"
#include "record/rowseq.h"

/* A live memcached's `stats` (with slabs and items), or NULL with err set;
 * stats_drop frees it. */
static struct stats_sample *stats_fetch(int port, char *err, size_t errlen)
{
    struct stats_sample *s = malloc(sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    stats_sample_init(s);
    if (mcserver_stats(port, s, err, errlen)) {
        stats_sample_fini(s);
        free(s);
        return NULL;
    }
    return s;
}

static void stats_drop(struct stats_sample *s)
{
    stats_sample_fini(s);
    free(s);
}

/* Measured rounding waste of a live memcached: sum over classes. */
static int measure_waste(int port, double *pct, uint64_t *waste, uint64_t *allocated, char *errout,
                         size_t errlen)
{
    struct stats_sample *s = stats_fetch(port, errout, errlen);
    uint64_t alloc = 0, req = 0;
    if (!s)
        return -1;
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
    stats_drop(s);
    return 0;
}

/* Starts memcached with flags on loop and replays run_id of db_path into
 * it (connections 0: the load's default). 0: replayed; 1: memcached runs
 * but the replay failed; -1: memcached did not start. error says why. */
static int verify_start_replay(struct mcserver *mc, uv_loop_t *loop, const char *memcached,
                               const char *flags, const char *db_path, int64_t run_id,
                               unsigned connections, struct load_result *lr, char *error,
                               size_t errlen)
{
    char err[MCSERVER_ERR_MAX], target[64];
    struct load_config lc = { 0 };
    if (mcserver_start(mc, loop, memcached, false, NULL, flags, err, sizeof err)) {
        snprintf(error, errlen, "%s", err);
        return -1;
    }
    snprintf(target, sizeof target, "127.0.0.1:%d", mc->port);
    addr_parse(target, &lc.target);
    lc.source = LOAD_SRC_REPLAY_DB;
    lc.path = db_path;
    lc.replay_run = run_id;
    lc.connections = connections;
    if (load_run(&lc, lr)) {
        snprintf(error, errlen, "replay: %s", lr->error);
        return 1;
    }
    return 0;
}

/* What both verifications start with: *out cleared with the prediction,
 * a load result, and the flags of s in the units of the memcached that
 * will run them, with room for every item twice over (nothing evicted).
 * The load result (caller frees), or NULL with out->error. */
static struct load_result *verify_begin(const struct slab_settings *s,
                                        const struct advise_eval *pred, const char *memcached,
                                        struct verify_result *out)
{
    struct load_result *lr = calloc(1, sizeof *lr);
    uint64_t mem_mb = pred->allocated / (1024 * 1024) * 2 + 64;
    memset(out, 0, sizeof *out);
    out->predicted_pct = pred->waste_pct;
    if (!lr) {
        snprintf(out->error, sizeof out->error, "out of memory");
        return NULL;
    }
    if (mcserver_version(memcached, false, NULL, out->version, sizeof out->version, out->error,
                         sizeof out->error) ||
        slab_settings_flags_for(s, mem_mb, out->version, out->flags, sizeof out->flags, out->error,
                                sizeof out->error)) {
        free(lr);
        return NULL;
    }
    return lr;
}

int verify_settings(const char *db_path, const struct prediction *r, const struct slab_settings *s,
                    const struct advise_eval *pred, const char *memcached,
                    struct verify_result *out)
{
    uv_loop_t loop;
    struct mcserver mc;
    int rc = -1;
    struct load_result *lr = verify_begin(s, pred, memcached, out);
    if (!lr)
        return -1;
    uv_loop_init(&loop);
    int replayed = verify_start_replay(&mc, &loop, memcached, out->flags, db_path, r->run_id, 0, lr,
                                       out->error, sizeof out->error);
    out->counter_ops = lr->counter_ops;
    out->counter_keys = lr->counter_keys;
    if (replayed < 0)
        goto out;
    if (replayed == 0 && measure_waste(mc.port, &out->measured_pct, &out->waste, &out->allocated,
                                       out->error, sizeof out->error) == 0) {
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

/* --- a size distribution (a snapshot) ------------------------------------ */

/* Key number i in klen bytes (base 62, 's' first when there is room). */
static void hist_key(uint64_t i, uint32_t klen, char *out)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    for (uint32_t k = klen; k-- > 0;) {
        out[k] = digits[i % 62];
        i /= 62;
    }
    if (klen > 1)
        out[0] = 's';
    out[klen] = 0;
}

/* h as a Twitter-format trace of sets into f: each item a key of up to 10
 * bytes and the value that makes its ntotal. 0, or -1 with error. */
static int hist_trace(FILE *f, const struct advise_hist *h, bool use_cas, char *error,
                      size_t errlen)
{
    uint64_t n = 0;
    char key[16];
    for (size_t i = 0; i < h->n; i++) {
        uint32_t klen = 10;
        while (klen > 1 && slab_item_ntotal(use_cas, klen, 0, 0) > h->ntotal[i])
            klen--;
        uint64_t base = slab_item_ntotal(use_cas, klen, 0, 0);
        if (h->ntotal[i] < base || h->ntotal[i] - base > WORKLOAD_VALUE_MAX) {
            snprintf(error, errlen, "no item is %llu bytes", (unsigned long long)h->ntotal[i]);
            return -1;
        }
        for (uint64_t k = 0; k < h->count[i]; k++, n++) {
            hist_key(n, klen, key);
            if (fprintf(f, "0,%s,%u,%llu,1,set,0\n", key, klen,
                        (unsigned long long)(h->ntotal[i] - base)) < 0) {
                snprintf(error, errlen, "writing the trace: %s", strerror(errno));
                return -1;
            }
        }
    }
    if (fflush(f)) {
        snprintf(error, errlen, "writing the trace: %s", strerror(errno));
        return -1;
    }
    return 0;
}

int verify_settings_hist(const struct advise_hist *h, bool use_cas, const struct slab_settings *s,
                         const struct advise_eval *pred, const char *memcached,
                         struct verify_result *out)
{
    uv_loop_t loop;
    struct mcserver mc;
    struct load_config lc = { 0 };
    char path[256], target[64], err[MCSERVER_ERR_MAX];
    const char *tmp = getenv("TMPDIR");
    int rc = -1, fd;
    FILE *f = NULL;
    struct load_result *lr = verify_begin(s, pred, memcached, out);
    if (!lr)
        return -1;
    snprintf(path, sizeof path, "%s/slabtap-verify-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if ((fd = mkstemp(path)) < 0 || !(f = fdopen(fd, "w"))) {
        snprintf(out->error, sizeof out->error, "temporary trace %.200s: %s", path,
                 strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        free(lr);
        return -1;
    }
    if (hist_trace(f, h, use_cas, out->error, sizeof out->error)) {
        fclose(f);
        unlink(path);
        free(lr);
        return -1;
    }
    fclose(f);
    uv_loop_init(&loop);
    if (mcserver_start(&mc, &loop, memcached, false, NULL, out->flags, err, sizeof err)) {
        snprintf(out->error, sizeof out->error, "%s", err);
        goto done;
    }
    snprintf(target, sizeof target, "127.0.0.1:%d", mc.port);
    addr_parse(target, &lc.target);
    lc.source = LOAD_SRC_TWITTER;
    lc.path = path;
    if (load_run(&lc, lr))
        snprintf(out->error, sizeof out->error, "replay: %s", lr->error);
    else if (measure_waste(mc.port, &out->measured_pct, &out->waste, &out->allocated, out->error,
                           sizeof out->error) == 0) {
        out->measured = true;
        out->ok = fabs(out->measured_pct - pred->waste_pct) <= VERIFY_TOLERANCE_PP;
        rc = out->ok ? 0 : -1;
    }
    mcserver_stop(&mc);
done:
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    unlink(path);
    free(lr);
    return rc;
}

/* --- capacity ----------------------------------------------------------- */

int verify_read_sequence(const char *db_path, int64_t run_id, bool reads, struct capacity_seq *out,
                         char *err, size_t errlen)
{
    struct replay *rp;
    struct workload_item *it = malloc(sizeof *it);
    int rc = -1;
    if (!it) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (replay_open(&rp, REPLAY_DB, db_path, run_id, err, errlen) != REPLAY_OK) {
        free(it);
        return -1;
    }
    /* the run's reads too, each marked for demand-fill as a replay sends it */
    if (reads && replay_db_reads(rp, true, err, errlen) != REPLAY_OK) {
        replay_close(rp);
        free(it);
        return -1;
    }
    for (;;) {
        enum workload_next nx = replay_next(rp, it, err, errlen);
        if (nx == WORKLOAD_NEXT_END) {
            rc = 0;
            break;
        }
        if (nx == WORKLOAD_NEXT_ERROR)
            break;
        if (it->kind != WORKLOAD_ITEM_OP)
            continue;
        const struct workload_op *op = &it->op;
        enum capacity_kind k;
        switch (op->cmd) {
        case WORKLOAD_CMD_SET: k = CAPACITY_SET; break;
        case WORKLOAD_CMD_ADD: k = CAPACITY_ADD; break;
        case WORKLOAD_CMD_REPLACE: k = CAPACITY_REPLACE; break;
        case WORKLOAD_CMD_APPEND: k = CAPACITY_APPEND; break;
        case WORKLOAD_CMD_PREPEND: k = CAPACITY_PREPEND; break;
        case WORKLOAD_CMD_DELETE: k = CAPACITY_DELETE; break;
        case WORKLOAD_CMD_GET:
        case WORKLOAD_CMD_GETS: k = CAPACITY_GET; break;
        case WORKLOAD_CMD_TOUCH: k = CAPACITY_TOUCH; break;
        case WORKLOAD_CMD_GAT: k = CAPACITY_GAT; break;
        default: k = CAPACITY_OTHER; break;
        }
        bool write = workload_cmd_is_write(op->cmd), read = k == CAPACITY_GET || k == CAPACITY_GAT;
        /* a read carries the length and flags its demand-fill would set;
         * the replay sends times compressed, so no request has an age */
        struct capacity_req req = {
            .kind = k,
            .key_len = op->key_len,
            .flags = write || (read && op->fill) ? op->flags : 0,
            .value_len = write || (read && op->fill) ? op->value_len : 0,
            .exptime = write || k == CAPACITY_TOUCH || k == CAPACITY_GAT ? (int32_t)op->ttl : 0,
            .fill = read && op->fill,
        };
        if (capacity_seq_add_req(out, keyfmt_hash(op->key, op->key_len), &req)) {
            snprintf(err, errlen, "out of memory, or a write memcached never takes");
            break;
        }
    }
    replay_close(rp);
    free(it);
    return rc;
}

int verify_capacity(const char *db_path, int64_t run_id, const struct slab_settings *s,
                    uint64_t mem_mb, uint64_t mem_hint_bytes, const char *memcached,
                    struct verify_capacity_result *out)
{
    uv_loop_t loop;
    struct mcserver mc;
    struct load_result *lr = calloc(1, sizeof *lr);
    struct stats_sample *st = malloc(sizeof *st);
    int rc = -1;
    size_t len;
    memset(out, 0, sizeof *out);
    if (!lr || !st) {
        snprintf(out->error, sizeof out->error, "out of memory");
        free(lr);
        free(st);
        return -1;
    }
    stats_sample_init(st);
    if (!mem_mb)
        mem_mb = mem_hint_bytes / (1024 * 1024) * 2 + 64;
    if (mcserver_version(memcached, false, NULL, out->version, sizeof out->version, out->error,
                         sizeof out->error) ||
        slab_settings_flags_for(s, mem_mb, out->version, out->flags, sizeof out->flags, out->error,
                                sizeof out->error))
        goto early;
    len = strlen(out->flags);
    snprintf(out->flags + len, sizeof out->flags - len, " -o slab_automove=0");
    uv_loop_init(&loop);
    /* one connection: memcached sees the recorded order */
    int replayed = verify_start_replay(&mc, &loop, memcached, out->flags, db_path, run_id, 1, lr,
                                       out->error, sizeof out->error);
    out->counter_ops = lr->counter_ops;
    out->counter_keys = lr->counter_keys;
    if (replayed < 0)
        goto out;
    if (replayed == 0 && mcserver_stats(mc.port, st, out->error, sizeof out->error) == 0) {
        int64_t items = 0, ev = 0, mal = 0, oom;
        stats_sample_global(st, "curr_items", &items);
        stats_sample_global(st, "evictions", &ev);
        stats_sample_global(st, "total_malloced", &mal);
        for (unsigned id = 1; id <= st->max_class_id; id++)
            if (stats_sample_get(st, id, "outofmemory", &oom))
                out->outofmemory += (uint64_t)oom;
        out->items = (uint64_t)items;
        out->evictions = (uint64_t)ev;
        out->malloced = (uint64_t)mal;
        out->measured = true;
        rc = 0;
    }
    mcserver_stop(&mc);
out:
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
early:
    stats_sample_fini(st);
    free(st);
    free(lr);
    return rc;
}

/* --- hits ---------------------------------------------------------------- */

int verify_hits(const char *db_path, int64_t run_id, const struct slab_settings *s, uint64_t mem_mb,
                unsigned automove, bool plain_lru, uint64_t measure_from, const char *memcached,
                struct verify_hits_result *out)
{
    uv_loop_t loop;
    struct mcserver mc;
    struct load_result *lr = calloc(1, sizeof *lr);
    struct load_config lc = { 0 };
    char err[MCSERVER_ERR_MAX], target[64];
    int rc = -1;
    size_t len;
    memset(out, 0, sizeof *out);
    if (!lr) {
        snprintf(out->error, sizeof out->error, "out of memory");
        return -1;
    }
    if (mcserver_version(memcached, false, NULL, out->version, sizeof out->version, out->error,
                         sizeof out->error) ||
        slab_settings_flags_for(s, mem_mb, out->version, out->flags, sizeof out->flags, out->error,
                                sizeof out->error)) {
        free(lr);
        return -1;
    }
    len = strlen(out->flags);
    snprintf(out->flags + len, sizeof out->flags - len, " -o slab_automove=%u%s", automove,
             plain_lru ? " -o no_lru_maintainer,no_lru_crawler" : "");
    uv_loop_init(&loop);
    if (mcserver_start(&mc, &loop, memcached, false, NULL, out->flags, err, sizeof err)) {
        snprintf(out->error, sizeof out->error, "%s", err);
        goto out;
    }
    snprintf(target, sizeof target, "127.0.0.1:%d", mc.port);
    addr_parse(target, &lc.target);
    lc.source = LOAD_SRC_REPLAY_DB;
    lc.path = db_path;
    lc.replay_run = run_id;
    lc.replay_reads = true;
    lc.demand_fill = true;
    lc.connections = 1; /* memcached sees the recorded order */
    lc.mark_at_op = measure_from;
    int failed = load_run(&lc, lr);
    out->counter_ops = lr->counter_ops;
    out->counter_keys = lr->counter_keys;
    if (failed) {
        snprintf(out->error, sizeof out->error, "replay: %s", lr->error);
    } else {
        /* the server's deltas over the measured window: the phase the mark
         * started (load.h), or the whole run */
        const struct load_server_counts *sc = lr->has_server ? &lr->server : NULL;
        if (measure_from) {
            sc = NULL;
            for (unsigned i = 0; i < lr->n_phase_results; i++)
                if (!strcmp(lr->phase_result[i].name, LOAD_MARK_PHASE) &&
                    lr->phase_result[i].has_server)
                    sc = &lr->phase_result[i].server;
        }
        if (!sc) {
            snprintf(out->error, sizeof out->error, "no stats deltas over the measured window: %s",
                     lr->server_note[0] ? lr->server_note : "the replay sent fewer operations");
        } else {
            /* memory used and evictions at the end */
            struct stats_sample *st = stats_fetch(mc.port, out->error, sizeof out->error);
            if (st) {
                int64_t mal = 0, ev = 0;
                stats_sample_global(st, "total_malloced", &mal);
                stats_sample_global(st, "evictions", &ev);
                stats_drop(st);
                out->hits = sc->get_hits;
                out->gets = sc->get_hits + sc->get_misses;
                out->hit_ratio = out->gets ? (double)out->hits / (double)out->gets : 0;
                out->malloced = (uint64_t)mal;
                out->evictions = (uint64_t)ev;
                out->fills = lr->fills;
                out->measured = true;
                rc = 0;
            }
        }
    }
    mcserver_stop(&mc);
out:
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    free(lr);
    return rc;
}
