/* runs: a recorded run read back for the slab model, from either store
 * through record/reader.h (no SQL here). */
#include "record/runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/sample.h"
#include "model/slab_model.h"
#include "record/wagg.h"

/* `stats settings` of one recorded settings row, as name/value pairs. */
struct settings_pairs {
    char **names, **values;
    size_t n, cap_n, cap_v;
};

static const char *settings_pairs_lookup(void *ctx, const char *name)
{
    const struct settings_pairs *p = ctx;
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->names[i], name))
            return p->values[i];
    return NULL;
}

static void settings_pairs_free(struct settings_pairs *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->names[i]);
        free(p->values[i]);
    }
    free(p->names);
    free(p->values);
}

static int settings_pairs_add(void *ud, const char *k, const char *v)
{
    struct settings_pairs *p = ud;
    if (!BUF_GROW(p->names, p->cap_n, p->n + 1) || !BUF_GROW(p->values, p->cap_v, p->n + 1))
        return 1;
    p->names[p->n] = strdup(k);
    p->values[p->n] = strdup(v);
    p->n++;
    return p->names[p->n - 1] && p->values[p->n - 1] ? 0 : 1; /* 1: out of memory */
}

static int read_settings(struct reader *rd, int64_t run_id, struct slab_settings *s, char *version,
                         size_t vlen, int64_t *t_ns, char *err, size_t errlen)
{
    struct settings_pairs p = { 0 };
    int rc = reader_settings(rd, run_id, READER_LAST, settings_pairs_add, &p, version, vlen, t_ns,
                             err, errlen);
    if (rc > 0) {
        snprintf(err, errlen, "out of memory");
        rc = -1;
    } else if (rc == 0 && !p.n) {
        snprintf(err, errlen, "run %lld has no recorded `stats settings`", (long long)run_id);
        rc = -1;
    } else if (rc == 0) {
        rc =
            slab_settings_from_stats(s, settings_pairs_lookup, &p, err, errlen) == SLAB_OK ? 0 : -1;
    }
    settings_pairs_free(&p);
    return rc;
}

static int replay_writes(struct reader *rd, struct prediction *r, char *err, size_t errlen)
{
    struct reader_cursor *c;
    struct reader_write w;
    int rc;
    if (reader_writes_open(rd, r->run_id, READER_SEQ, &c, err, errlen))
        return -1;
    while ((rc = reader_next_write(c, &w, err, errlen)) == 1) {
        struct predict_write pw = {
            .cmd = w.cmd,
            .ms_mode = w.ms_mode,
            .key_hash = w.key_hash,
            .key_len = (uint32_t)w.key_len,
            .value_len = w.value_len,
            .flags = (uint32_t)w.flags,
            .answer = w.answer,
            .has_ttl = w.exptime != 0,
            .class_id = w.class_id,
            .flags_unknown = r->watch, /* memcached's log prints no flags */
        };
        predict_apply(r, &pw);
    }
    reader_cursor_close(c);
    return rc < 0 ? -1 : 0;
}

static int add_chunk(void *ud, uint32_t class_id, int64_t chunk)
{
    if (class_id >= 1 && class_id <= SLAB_MODEL_MAX_CLASSES && chunk > 0)
        ladder_observed_add(ud, class_id, (uint64_t)chunk);
    return 0;
}

/* Every chunk size memcached showed since the run's settings were read
 * (a restart with other settings starts a new ladder). */
static void read_chunk_sizes(struct reader *rd, int64_t run_id, int64_t since_ns,
                             struct ladder_observed *o)
{
    ladder_observed_init(o);
    reader_chunk_sizes(rd, run_id, since_ns, add_chunk, o);
}

struct ladder_check {
    const struct slab_ladder *l;
    int rc;
};

static int check_chunk(void *ud, uint32_t c, int64_t chunk)
{
    struct ladder_check *k = ud;
    if (c < 1 || c > k->l->n_classes || k->l->cls[c].chunk_size != chunk)
        k->rc = -1;
    return 0;
}

/* Whether the ladder the proxy recorded for the run (run_meta 'ladder',
 * its chunk_sizes) is the one predict chose: 0 none, 1 same, -1 not. */
static int recorded_ladder(struct reader *rd, int64_t run_id, const struct slab_ladder *l)
{
    struct ladder_check k = { l, 1 };
    int n = reader_meta_ladder(rd, run_id, check_chunk, &k);
    return n <= 0 ? 0 : (uint32_t)n != l->n_classes ? -1 : k.rc;
}

static int observe_class(void *ud, uint32_t c, const struct predict_observed *o)
{
    predict_observe(ud, c, o);
    return 0;
}

/* A watch run's writes memcached did not log: the lines it dropped
 * (skipped=N, log_worker_dropped, log_watcher_skipped), as the watcher
 * counted them into run_meta RUNS_META_NOT_SEEN (slabtap watch counts them
 * into rows_dropped as well: the rest of rows_dropped is the recorder's
 * own); without that entry, the run's rows_dropped. */
static void read_not_seen(struct reader *rd, struct prediction *r)
{
    char *v = reader_meta(rd, r->run_id, RUNS_META_NOT_SEEN);
    if (v) {
        /* a number, or slabtap watch's JSON {"lines":N,...}; the watcher
         * counts them into rows_dropped too: said once */
        const char *lines = strstr(v, "\"lines\":");
        r->not_seen = strtoll(lines ? lines + 8 : v, NULL, 10);
        r->rows_dropped = r->rows_dropped > r->not_seen ? r->rows_dropped - r->not_seen : 0;
        free(v);
    } else {
        r->not_seen = r->rows_dropped;
        r->rows_dropped = 0;
    }
}

static void read_observed(struct reader *rd, struct prediction *r)
{
    int64_t first_id = reader_sample_edge(rd, r->run_id, READER_FIRST);
    int64_t last_id = reader_sample_edge(rd, r->run_id, READER_LAST);
    struct reader_counters a, b;
    struct reader_run run;
    char err[256];
    if (last_id < 0)
        return;
    reader_sample_classes(rd, last_id, observe_class, r, err, sizeof err);
    /* what happened DURING the run: the last sample's counters less the
     * first's (memcached's are cumulative since it started) */
    reader_sample_counters(rd, last_id, &b, err, sizeof err);
    memset(&a, 0, sizeof a);
    if (first_id != last_id)
        reader_sample_counters(rd, first_id, &a, err, sizeof err);
    if (first_id != last_id && (a.pid != b.pid || b.uptime < a.uptime)) {
        r->restarted = true;
        memset(&a, 0, sizeof a); /* the counters started again */
    }
    r->evictions = b.evictions - a.evictions;
    r->slabs_moved = b.slabs_moved - a.slabs_moved;
    r->reclaimed = b.reclaimed - a.reclaimed;
    r->crawler_reclaimed = b.crawler_reclaimed - a.crawler_reclaimed;
    r->get_expired = b.get_expired - a.get_expired;
    r->flushes = b.cmd_flush - a.cmd_flush;
    r->observed_curr_items = b.curr_items;
    r->rows_dropped = reader_run_get(rd, r->run_id, &run, err, sizeof err) ? 0 : run.rows_dropped;
    if (r->watch)
        read_not_seen(rd, r);
}

/* What every prediction of a run starts from: its name, its settings, the
 * ladder chosen by the same three witnesses and the same rule as the
 * proxy's tags, and the ladder its writes were tagged with. 0, or -1 with
 * err. */
static int prediction_start(struct reader *rd, int64_t run_id, struct prediction *r, char *err,
                            size_t errlen)
{
    struct slab_settings s;
    struct ladder_observed *obs = malloc(sizeof *obs);
    struct ladder_choice *choice = malloc(sizeof *choice);
    struct reader_run run;
    char version[64] = "", *flags = NULL;
    int64_t settings_ns = 0;
    int rc = -1;
    if (!obs || !choice) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (reader_run_get(rd, run_id, &run, err, errlen))
        run.name[0] = 0; /* a sets table written by another tool */
    if (read_settings(rd, run_id, &s, version, sizeof version, &settings_ns, err, errlen))
        goto out;
    flags = reader_meta(rd, run_id, "memcached_flags");
    read_chunk_sizes(rd, run_id, settings_ns, obs);
    if (ladder_choose(&s, flags, version, obs, choice, err, errlen) != SLAB_OK ||
        predict_begin_choice(r, run_id, choice, err, errlen))
        goto out;
    r->recorded_ladder = recorded_ladder(rd, run_id, &r->ladder);
    r->watch = !strcmp(run.kind, "watch");
    snprintf(r->run_name, sizeof r->run_name, "%s", run.name);
    snprintf(r->version, sizeof r->version, "%s", version);
    rc = 0;
out:
    free(obs);
    free(choice);
    free(flags);
    return rc;
}

int runs_read_prediction(struct reader *rd, int64_t run_id, struct prediction *r, char *err,
                         size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (run_id < 0) {
        snprintf(err, errlen, "no such run");
        return -1;
    }
    if (prediction_start(rd, run_id, r, err, errlen) || replay_writes(rd, r, err, errlen))
        return -1;
    read_observed(rd, r);
    char *sample = reader_meta(rd, run_id, "sample_keys"); /* --sample-keys 1/N */
    if (sample && sample_parse(sample, &r->sample_keys))
        r->sample_keys = 0;
    free(sample);
    if (predict_end(r)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* --- from the aggregates (issue 14) --------------------------------------- */

/* One agg_items cell summed over the run, stored writes only. */
struct agg_cells {
    struct wagg_cell *c;
    int64_t *writes;
    uint64_t *live;
    size_t n, cap;
};

/* One agg_items row: counted by outcome, a stored cell kept. */
struct agg_read {
    struct agg_cells *cells;
    struct runs_agg_info *info;
};

static int agg_cell(void *ud, uint32_t class_id, int64_t body, int64_t outcome, int64_t n,
                    int64_t body_bytes)
{
    struct agg_read *a = ud;
    struct agg_cells *cs = a->cells;
    if (outcome == WAGG_REFUSED) {
        a->info->refused += (uint64_t)n;
    } else if (outcome != WAGG_STORED) {
        a->info->failed += (uint64_t)n;
    } else {
        if (!BUF_GROW(cs->c, cs->cap, cs->n + 1))
            return -1;
        cs->c[cs->n++] = (struct wagg_cell){ class_id, body, n, body_bytes };
        a->info->stored += (uint64_t)n;
    }
    return 0;
}

/* What wagg_cell_spread hands out, applied to the prediction. */
struct agg_apply {
    struct prediction *r;
    struct runs_agg_info *info;
    bool live; /* false: count the written items per class only */
};

static int agg_apply_item(void *ctx, int64_t body, uint64_t n)
{
    struct agg_apply *a = ctx;
    struct slab_item_layout l;
    /* the key's length is not kept: one byte of key, the rest value (the
     * same ntotal; only a chunked item's header chunk could differ) */
    uint32_t key_len = body >= 1 ? 1 : 0;
    if (!key_len)
        return 0;
    if (slab_item_layout(&a->r->ladder, key_len, 0, (uint64_t)(body - key_len), &l) != SLAB_OK)
        return 0; /* too large: memcached refused it, nothing live */
    if (!a->live) {
        a->info->written[l.lru_class] += n;
        return 0;
    }
    a->info->est[l.lru_class] += n;
    if (body >= WAGG_EXACT_BELOW)
        a->info->wide_items += n;
    for (uint64_t i = 0; i < n; i++)
        if (slab_counters_add(&a->r->predicted, &a->r->ladder, &l) != SLAB_OK)
            return -1;
    a->r->live_items += n;
    return advise_hist_add(&a->r->live, l.ntotal, n);
}

static int agg_hist_item(void *ctx, int64_t body, uint64_t n)
{
    struct agg_apply *a = ctx;
    struct slab_item_layout l;
    if (body < 1 || slab_item_layout(&a->r->ladder, 1, 0, (uint64_t)(body - 1), &l) != SLAB_OK)
        return 0;
    return advise_hist_add(&a->r->live, l.ntotal, n);
}

/* r->live again, each class's cells scaled to the last sample's number. */
static int per_class_live(struct prediction *r, struct agg_cells *cells, struct runs_agg_info *info)
{
    uint32_t *cls = malloc(cells->n * sizeof *cls);
    size_t *idx = malloc(cells->n * sizeof *idx);
    int64_t *w = malloc(cells->n * sizeof *w);
    uint64_t *out = malloc(cells->n * sizeof *out);
    struct agg_apply a = { r, info, true };
    int rc = -1;
    if (!cls || !idx || !w || !out)
        goto done;
    for (size_t i = 0; i < cells->n; i++) {
        struct slab_item_layout l;
        int64_t mean = cells->c[i].body_bytes / (cells->c[i].writes ? cells->c[i].writes : 1);
        cls[i] =
            mean >= 1 && slab_item_layout(&r->ladder, 1, 0, (uint64_t)(mean - 1), &l) == SLAB_OK
                ? l.lru_class
                : 0;
    }
    advise_hist_free(&r->live);
    advise_hist_init(&r->live);
    info->per_class_live = 0;
    for (uint32_t c = 1; c <= r->ladder.n_classes; c++) {
        size_t k = 0;
        uint64_t written = 0;
        for (size_t i = 0; i < cells->n; i++)
            if (cls[i] == c) {
                idx[k] = i;
                w[k++] = cells->c[i].writes;
                written += (uint64_t)cells->c[i].writes;
            }
        uint64_t target = r->observed[c].present && r->observed[c].number > 0
                              ? (uint64_t)r->observed[c].number
                              : 0;
        if (target > written)
            target = written;
        info->per_class_live += target;
        wagg_scale_counts(w, k, target, out);
        for (size_t j = 0; j < k; j++)
            if (wagg_cell_spread(&cells->c[idx[j]], out[j], agg_hist_item, &a))
                goto done;
    }
    advise_hist_sort(&r->live);
    info->live_by_class = true;
    rc = 0;
done:
    free(cls);
    free(idx);
    free(w);
    free(out);
    return rc;
}

int runs_read_prediction_agg(struct reader *rd, int64_t run_id, struct prediction *r,
                             struct runs_agg_info *info, char *err, size_t errlen)
{
    struct agg_cells cells = { 0 };
    struct agg_read ar = { &cells, info };
    struct reader_rows_status rows;
    int rc = -1;
    memset(r, 0, sizeof *r);
    memset(info, 0, sizeof *info);
    if (reader_rows_status(rd, run_id, &rows) || !rows.have_aggs) {
        snprintf(err, errlen,
                 "run %lld has no write histograms (agg_items: recorded by an older slabtap)",
                 (long long)run_id);
        goto out;
    }
    if (prediction_start(rd, run_id, r, err, errlen))
        goto out;
    read_observed(rd, r);
    /* the histogram, over the whole run */
    if (reader_agg_items(rd, run_id, agg_cell, &ar, err, errlen) ||
        reader_agg_answers(rd, run_id, &info->writes, &info->deletes, err, errlen))
        goto out;

    /* N: memcached's own count of what is left, never more than was stored */
    info->from_curr_items = r->have_sample;
    uint64_t n_live = r->have_sample && r->observed_curr_items >= 0
                          ? (uint64_t)r->observed_curr_items
                          : (info->stored > info->deletes ? info->stored - info->deletes : 0);
    if (n_live > info->stored)
        n_live = info->stored;
    info->live = n_live;
    info->exact =
        info->stored == n_live && info->deletes == 0 && info->refused == 0 && info->failed == 0;
    for (size_t i = 0; i < cells.n; i++)
        if (cells.c[i].bucket >= WAGG_EXACT_BELOW)
            info->exact = false; /* sizes known within a bucket only */

    cells.writes = malloc((cells.n ? cells.n : 1) * sizeof *cells.writes);
    cells.live = malloc((cells.n ? cells.n : 1) * sizeof *cells.live);
    if (!cells.writes || !cells.live) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < cells.n; i++)
        cells.writes[i] = cells.c[i].writes;
    wagg_scale_counts(cells.writes, cells.n, n_live, cells.live);
    struct agg_apply written = { r, info, false }, live = { r, info, true };
    for (size_t i = 0; i < cells.n; i++)
        if (wagg_cell_spread(&cells.c[i], (uint64_t)cells.c[i].writes, agg_apply_item, &written) ||
            wagg_cell_spread(&cells.c[i], cells.live[i], agg_apply_item, &live)) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
    for (uint32_t c = 1; c <= SLAB_MODEL_MAX_CLASSES; c++) {
        uint64_t w = info->written[c], rest = info->stored - w;
        info->lo[c] = n_live > rest ? n_live - rest : 0;
        info->hi[c] = w < n_live ? w : n_live;
    }
    /* advise's histogram: with a sample, each class's stored sizes scaled
     * to memcached's own count of the class (stats items number), which
     * follows evictions and overwrites class by class */
    if (r->have_sample && cells.n && per_class_live(r, &cells, info)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    r->rows = 0;
    r->applied = info->stored;
    r->failed = info->failed;
    r->deletes = info->deletes;
    r->throwaway = info->refused;
    if (predict_end(r)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    /* never EXACT from an estimate; said whichever way */
    if (!info->exact) {
        size_t len = strlen(r->why_not);
        snprintf(r->why_not + len, sizeof r->why_not - len,
                 "%sfrom aggregates: %llu stored writes, %llu deletes, %llu live: the sizes of "
                 "what is left are the stored sizes scaled, not followed per key",
                 len ? "; " : "", (unsigned long long)info->stored,
                 (unsigned long long)info->deletes, (unsigned long long)n_live);
        r->exact_expected = false;
    }
    rc = 0;
out:
    free(cells.c);
    free(cells.writes);
    free(cells.live);
    return rc;
}

/* --- from a snapshot (issue 22) --------------------------------------------- */

struct snap_pick {
    int64_t want; /* 0: the latest */
    struct runs_snapshot_info *info;
    bool found;
};

static int snap_pick(void *ud, const struct reader_snapshot *s)
{
    struct snap_pick *p = ud;
    if (p->want && s->snap != p->want)
        return 0;
    p->found = true;
    p->info->snap = s->snap;
    p->info->t_ns = s->t_ns;
    p->info->ended_ns = s->ended_ns;
    p->info->complete = s->complete;
    p->info->header_items = s->items;
    return 0;
}

/* One resident item of ntotal bytes into r: the histogram and the class
 * counters. The layout from the size alone: the key's own length, the rest
 * value (flags, when the item has them, counted as value bytes: the same
 * ntotal, the same class). */
static int snap_item(struct prediction *r, struct runs_snapshot_info *info,
                     const struct reader_item *it)
{
    struct slab_item_layout l;
    uint32_t key_len = it->key_len > 0 && it->key_len <= 250 ? (uint32_t)it->key_len : 1;
    uint64_t base = slab_item_ntotal(r->ladder.use_cas, key_len, 0, 0);
    if (it->size <= 0)
        return 0;
    info->items++;
    info->bytes += (uint64_t)it->size;
    info->never_fetched += !it->fetched;
    if ((uint64_t)it->size < base) { /* another key length: the size decides */
        key_len = 1;
        base = slab_item_ntotal(r->ladder.use_cas, 1, 0, 0);
    }
    if ((uint64_t)it->size < base ||
        slab_item_layout(&r->ladder, key_len, 0, (uint64_t)it->size - base, &l) != SLAB_OK) {
        info->too_large++;
        return 0;
    }
    if (it->class_id && it->class_id != l.lru_class)
        info->class_differs++;
    if (slab_counters_add(&r->predicted, &r->ladder, &l) != SLAB_OK)
        return -1;
    r->live_items++;
    return advise_hist_add(&r->live, (uint64_t)it->size, 1);
}

int runs_read_snapshot(struct reader *rd, int64_t run_id, int64_t snap, struct prediction *r,
                       struct runs_snapshot_info *info, char *err, size_t errlen)
{
    struct snap_pick pick = { snap, info, false };
    struct reader_cursor *c = NULL;
    struct reader_item it;
    int rc;
    memset(r, 0, sizeof *r);
    memset(info, 0, sizeof *info);
    if (reader_snapshots(rd, run_id, snap_pick, &pick, err, errlen))
        return -1;
    if (!pick.found) {
        if (snap)
            snprintf(err, errlen, "run %lld has no snapshot %lld", (long long)run_id,
                     (long long)snap);
        else
            snprintf(err, errlen, "run %lld has no snapshot (slabtap snapshot records them)",
                     (long long)run_id);
        return -1;
    }
    if (prediction_start(rd, run_id, r, err, errlen))
        return -1;
    read_observed(rd, r);
    if (reader_items_open(rd, run_id, info->snap, &c, err, errlen))
        return -1;
    while ((rc = reader_next_item(c, &it, err, errlen)) == 1)
        if (snap_item(r, info, &it)) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
    reader_cursor_close(c);
    if (rc < 0)
        return -1;
    advise_hist_sort(&r->live);
    r->applied = info->items;
    r->exact_expected = false;
    snprintf(r->why_not, sizeof r->why_not, "from snapshot %lld: the resident items as listed",
             (long long)info->snap);
    return 0;
}
