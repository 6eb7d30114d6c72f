/* runs: SQL over recorded runs, read-only. */
#include "record/runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/slab_model.h"

static int64_t runs_max_in_sets(sqlite3 *db)
{
    sqlite3_stmt *st;
    int64_t id = -1;
    if (sqlite3_prepare_v2(db, "SELECT max(run_id) FROM sets", -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

int64_t runs_latest(sqlite3 *db)
{
    int64_t id = runs_find(db, NULL);
    /* a sets table written by another tool, with no runs beside it */
    return id >= 0 ? id : runs_max_in_sets(db);
}

int64_t runs_find(sqlite3 *db, const char *name_or_id)
{
    sqlite3_stmt *st;
    int64_t id = -1;
    if (sqlite3_prepare_v2(
            db,
            "SELECT run_id FROM runs WHERE ?1 IS NULL OR CAST(run_id AS TEXT) = ?1 OR name = ?1"
            " ORDER BY run_id DESC LIMIT 1",
            -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (name_or_id)
        sqlite3_bind_text(st, 1, name_or_id, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

/* `stats settings` of one recorded settings row, as name/value pairs. */
struct settings_pairs {
    char **names, **values;
    size_t n;
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

static int settings_pairs_add(struct settings_pairs *p, const char *k, const char *v)
{
    char **nn = realloc(p->names, (p->n + 1) * sizeof *nn);
    if (nn)
        p->names = nn;
    char **nv = realloc(p->values, (p->n + 1) * sizeof *nv);
    if (nv)
        p->values = nv;
    if (!nn || !nv)
        return -1;
    p->names[p->n] = strdup(k);
    p->values[p->n] = strdup(v);
    p->n++;
    return p->names[p->n - 1] && p->values[p->n - 1] ? 0 : -1;
}

static int read_settings(sqlite3 *db, int64_t run_id, struct slab_settings *s, char *version,
                         size_t vlen, int64_t *t_ns, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    struct settings_pairs p = { 0 };
    int rc = -1;
    if (sqlite3_prepare_v2(
            db,
            "SELECT j.key, j.value, s.version, s.t_ns FROM settings s, json_each(s.settings) j"
            " WHERE s.run_id = ?1 AND s.t_ns = (SELECT max(t_ns) FROM settings WHERE run_id = ?1)",
            -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, run_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        const char *v = (const char *)sqlite3_column_text(st, 1);
        const char *ver = (const char *)sqlite3_column_text(st, 2);
        if (k && v && settings_pairs_add(&p, k, v)) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        if (ver)
            snprintf(version, vlen, "%s", ver);
        *t_ns = sqlite3_column_int64(st, 3);
    }
    if (!p.n) {
        snprintf(err, errlen, "run %lld has no recorded `stats settings`", (long long)run_id);
        goto out;
    }
    rc = slab_settings_from_stats(s, settings_pairs_lookup, &p, err, errlen) == SLAB_OK ? 0 : -1;
out:
    sqlite3_finalize(st);
    settings_pairs_free(&p);
    return rc;
}

static int replay_writes(sqlite3 *db, struct prediction *r)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(
            db,
            "SELECT cmd, key_hash, key_len, value_len, coalesce(flags, 0), answer,"
            " coalesce(exptime, 0), ms_mode, coalesce(class_id, 0) FROM sets WHERE run_id = ?1"
            " ORDER BY seq",
            -1, &st, NULL) != SQLITE_OK &&
        /* before schema v3 there is no ms_mode: every ms was a set */
        sqlite3_prepare_v2(
            db,
            "SELECT cmd, key_hash, key_len, value_len, coalesce(flags, 0), answer,"
            " coalesce(exptime, 0), NULL, 0 FROM sets WHERE run_id = ?1 ORDER BY seq",
            -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, r->run_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *mode = (const char *)sqlite3_column_text(st, 7);
        struct predict_write w = {
            .cmd = (const char *)sqlite3_column_text(st, 0),
            .ms_mode = mode ? mode[0] : 0,
            .key_hash = (uint64_t)sqlite3_column_int64(st, 1),
            .key_len = (uint32_t)sqlite3_column_int64(st, 2),
            .value_len =
                sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3),
            .flags = (uint32_t)sqlite3_column_int64(st, 4),
            .answer = (const char *)sqlite3_column_text(st, 5),
            .has_ttl = sqlite3_column_int64(st, 6) != 0,
            .class_id = (uint32_t)sqlite3_column_int64(st, 8),
        };
        predict_apply(r, &w);
    }
    sqlite3_finalize(st);
    return 0;
}

/* One run_meta value (NULL: none, or no run_meta table); free it. */
static char *read_meta(sqlite3 *db, int64_t run_id, const char *key)
{
    sqlite3_stmt *st;
    char *v = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM run_meta WHERE run_id = ?1 AND key = ?2", -1, &st,
                           NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

/* Every chunk size memcached showed since the run's settings were read
 * (a restart with other settings starts a new ladder). */
static void read_chunk_sizes(sqlite3 *db, int64_t run_id, int64_t since_ns,
                             struct ladder_observed *o)
{
    sqlite3_stmt *st;
    ladder_observed_init(o);
    if (sqlite3_prepare_v2(db,
                           "SELECT DISTINCT c.class_id, json_extract(c.fields, '$.chunk_size')"
                           " FROM samples s JOIN sample_classes c USING (sample_id)"
                           " WHERE s.run_id = ?1 AND s.t_ns >= ?2"
                           " AND json_extract(c.fields, '$.chunk_size') IS NOT NULL",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_int64(st, 2, since_ns);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), chunk = sqlite3_column_int64(st, 1);
        if (id >= 1 && id <= SLAB_MODEL_MAX_CLASSES && chunk > 0)
            ladder_observed_add(o, (uint32_t)id, (uint64_t)chunk);
    }
    sqlite3_finalize(st);
}

/* Whether the ladder the proxy recorded for the run (run_meta 'ladder',
 * its chunk_sizes) is the one predict chose: 0 none, 1 same, -1 not. */
static int recorded_ladder(sqlite3 *db, int64_t run_id, const struct slab_ladder *l)
{
    sqlite3_stmt *st;
    uint32_t n = 0;
    int rc = 1;
    if (sqlite3_prepare_v2(db,
                           "SELECT CAST(j.key AS INTEGER) + 1, j.value FROM run_meta m,"
                           " json_each(CASE WHEN json_valid(m.value) THEN m.value ELSE '{}' END,"
                           " '$.chunk_sizes') j WHERE m.run_id = ?1 AND m.key = 'ladder'",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_int64(st, 1, run_id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t c = sqlite3_column_int64(st, 0), chunk = sqlite3_column_int64(st, 1);
        n++;
        if (c < 1 || c > (int64_t)l->n_classes || l->cls[c].chunk_size != chunk)
            rc = -1;
    }
    sqlite3_finalize(st);
    return n == 0 ? 0 : n != l->n_classes ? -1 : rc;
}

/* memcached's global counters that change memory besides the writes. */
enum {
    K_EVICT,
    K_MOVED,
    K_RECLAIMED,
    K_CRAWLER,
    K_GET_EXPIRED,
    K_FLUSH,
    K_CURR,
    K_PID,
    K_UPTIME,
    K_COUNT
};

static void read_counters(sqlite3 *db, int64_t sample_id, int64_t *v)
{
    sqlite3_stmt *st;
    memset(v, 0, K_COUNT * sizeof *v);
    if (sqlite3_prepare_v2(db,
                           "SELECT coalesce(json_extract(stats, '$.evictions'), 0),"
                           " coalesce(json_extract(stats, '$.slabs_moved'), 0),"
                           " coalesce(json_extract(stats, '$.reclaimed'), 0),"
                           " coalesce(json_extract(stats, '$.crawler_reclaimed'), 0),"
                           " coalesce(json_extract(stats, '$.get_expired'), 0),"
                           " coalesce(json_extract(stats, '$.cmd_flush'), 0),"
                           " coalesce(json_extract(stats, '$.curr_items'), 0),"
                           " coalesce(json_extract(stats, '$.pid'), 0),"
                           " coalesce(json_extract(stats, '$.uptime'), 0)"
                           " FROM samples WHERE sample_id = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, sample_id);
    if (sqlite3_step(st) == SQLITE_ROW)
        for (int i = 0; i < K_COUNT; i++)
            v[i] = sqlite3_column_int64(st, i);
    sqlite3_finalize(st);
}

/* The run's first or last sample id (-1: none). */
static int64_t edge_sample(sqlite3 *db, int64_t run_id, bool last)
{
    sqlite3_stmt *st;
    int64_t id = -1;
    if (sqlite3_prepare_v2(db,
                           last ? "SELECT sample_id FROM samples WHERE run_id = ?1"
                                  " ORDER BY t_ns DESC, sample_id DESC LIMIT 1"
                                : "SELECT sample_id FROM samples WHERE run_id = ?1"
                                  " ORDER BY t_ns ASC, sample_id ASC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return id;
}

static void read_observed(sqlite3 *db, struct prediction *r)
{
    sqlite3_stmt *st;
    int64_t first_id = edge_sample(db, r->run_id, false),
            last_id = edge_sample(db, r->run_id, true);
    int64_t a[K_COUNT], b[K_COUNT];
    if (last_id < 0)
        return;
    if (sqlite3_prepare_v2(
            db,
            "SELECT class_id, chunk_size, used_chunks, mem_requested, total_pages, number, evicted"
            " FROM class_stats WHERE sample_id = ?1",
            -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, last_id);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t c = sqlite3_column_int64(st, 0);
            struct predict_observed o = {
                .chunk_size = sqlite3_column_int64(st, 1),
                .used_chunks = sqlite3_column_int64(st, 2),
                .mem_requested = sqlite3_column_int64(st, 3),
                .total_pages = sqlite3_column_int64(st, 4),
                .number = sqlite3_column_int64(st, 5),
                .evicted = sqlite3_column_int64(st, 6),
            };
            if (c >= 1 && c <= SLAB_MODEL_MAX_CLASSES)
                predict_observe(r, (uint32_t)c, &o);
        }
        sqlite3_finalize(st);
    }
    /* what happened DURING the run: the last sample's counters less the
     * first's (memcached's are cumulative since it started) */
    read_counters(db, last_id, b);
    if (first_id != last_id)
        read_counters(db, first_id, a);
    else
        memset(a, 0, sizeof a);
    if (first_id != last_id && (a[K_PID] != b[K_PID] || b[K_UPTIME] < a[K_UPTIME])) {
        r->restarted = true;
        memset(a, 0, sizeof a); /* the counters started again */
    }
    r->evictions = b[K_EVICT] - a[K_EVICT];
    r->slabs_moved = b[K_MOVED] - a[K_MOVED];
    r->reclaimed = b[K_RECLAIMED] - a[K_RECLAIMED];
    r->crawler_reclaimed = b[K_CRAWLER] - a[K_CRAWLER];
    r->get_expired = b[K_GET_EXPIRED] - a[K_GET_EXPIRED];
    r->flushes = b[K_FLUSH] - a[K_FLUSH];
    r->observed_curr_items = b[K_CURR];
    if (sqlite3_prepare_v2(db, "SELECT rows_dropped FROM runs WHERE run_id = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_int64(st, 1, r->run_id);
        if (sqlite3_step(st) == SQLITE_ROW)
            r->rows_dropped = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
}

int runs_read_prediction(sqlite3 *db, int64_t run_id, struct prediction *r, char *err,
                         size_t errlen)
{
    struct slab_settings s;
    struct ladder_observed *obs = malloc(sizeof *obs);
    struct ladder_choice *choice = malloc(sizeof *choice);
    char version[64] = "", name[128] = "", *flags = NULL;
    int64_t settings_ns = 0;
    sqlite3_stmt *st;
    int rc = -1;
    memset(r, 0, sizeof *r);
    if (!obs || !choice) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (run_id < 0) {
        snprintf(err, errlen, "no such run");
        goto out;
    }
    if (sqlite3_prepare_v2(db, "SELECT name FROM runs WHERE run_id = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_int64(st, 1, run_id);
        if (sqlite3_step(st) == SQLITE_ROW)
            snprintf(name, sizeof name, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
    }
    if (read_settings(db, run_id, &s, version, sizeof version, &settings_ns, err, errlen))
        goto out;
    /* the same three witnesses, and the same rule, as the proxy's tags */
    flags = read_meta(db, run_id, "memcached_flags");
    read_chunk_sizes(db, run_id, settings_ns, obs);
    if (ladder_choose(&s, flags, version, obs, choice, err, errlen) != SLAB_OK ||
        predict_begin_choice(r, run_id, choice, err, errlen))
        goto out;
    r->recorded_ladder = recorded_ladder(db, run_id, &r->ladder);
    snprintf(r->run_name, sizeof r->run_name, "%s", name);
    snprintf(r->version, sizeof r->version, "%s", version);
    if (replay_writes(db, r)) {
        snprintf(err, errlen, "%s", sqlite3_errmsg(db));
        goto out;
    }
    read_observed(db, r);
    if (predict_end(r)) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    rc = 0;
out:
    free(obs);
    free(choice);
    free(flags);
    return rc;
}
