/* scrape: /metrics from the proxy, the recorder and the latest stats
 * sample. Loop thread only. */
#include "server/scrape.h"

#include <stdio.h>
#include <string.h>

#include "record/retain.h"
#include "server/metrics.h"

static const struct {
    const char *name, *help;
    enum prom_type type;
    uint64_t scale; /* field units per exported unit (METRIC_SCALE_*) */
} proxy_metrics[] = {
#define METRIC_ROW(name, type, unit, help) \
    { #name METRIC_SUFFIX_##unit, help, PROM_##type, METRIC_SCALE_##unit },
#define PROM_counter PROM_COUNTER
#define PROM_gauge PROM_GAUGE
    SLABTAP_METRICS(METRIC_ROW)
#undef METRIC_ROW
};

static uint64_t metric_value(const struct proxy *px, size_t i)
{
    const uint64_t *v = (const uint64_t *)&px->m;
    return v[i];
}

/* The tables of server/metrics.h, as rows: (name, type, stats field or
 * NULL, help). */
struct stats_family {
    const char *name;
    enum prom_type type;
    const char *field, *help;
};

#define STATS_FAMILY_ROW(name, type, field, help) { #name, PROM_##type, field, help },
static const struct stats_family memcached_families[] = { MEMCACHED_METRICS(STATS_FAMILY_ROW) };
static const struct stats_family class_families[] = { MEMCACHED_SLAB_METRICS(STATS_FAMILY_ROW) };
#undef STATS_FAMILY_ROW

static const struct {
    const char *command, *status, *field;
} memcached_commands[] = {
#define COMMAND_ROW(command, status, field) { command, status, field },
    MEMCACHED_COMMANDS(COMMAND_ROW)
#undef COMMAND_ROW
};

/* The gauges the recorder and retention keep, into the proxy's struct
 * metrics for this scrape. */
static void scrape_refresh(const struct scrape_sources *src)
{
    struct proxy *px = src->px;
    struct recorder *rec = src->rec;
    px->m.recorder_queue_depth = rec_depth(rec);
    px->m.rows_dropped = rec->dropped;
    px->m.recorder_stalls = rec->stalls;
    struct rec_spill_state sp;
    char why[8];
    rec_spill_state(rec, &sp);
    px->m.recording_degraded = rec_degraded(rec, why, sizeof why);
    px->m.spill_backlog_rows = sp.rows;
    px->m.spill_backlog_bytes = sp.bytes;
    px->m.rows_spilled = sp.spilled;
    px->m.rows_shipped = sp.shipped;
    px->m.buffer_bytes = pbuf_pool_bytes(&px->pool) + px->pending_bytes;
    struct retain_stats rs;
    char file[1024];
    rec_retain_state(rec, &rs, file, sizeof file, &px->m.db_rotations);
    px->m.rows_expired = rs.rows_expired;
    px->m.retention_bound_reached = rs.bound_reached;
    px->m.oldest_row_timestamp_seconds =
        rs.oldest_ns > 0 ? (uint64_t)(rs.oldest_ns / 1000000000) : 0;
    /* the file on disk, WAL included, retention or not (rs.file_bytes is
     * retention's view: pages in use, and only while retention is on) */
    px->m.db_file_bytes = src->store == SINK_SQLITE ? retain_disk_bytes(file) : 0;
    px->m.db_free_bytes = rs.free_bytes;
    px->m.retention_steps = rs.steps;
    px->m.retention_step_max_us = rs.step_max_us;
    px->m.retention_us = rs.step_total_us;
}

/* One sample per loss reason of the family just declared. */
static void scrape_losses(struct prom_writer *w, struct recorder *rec,
                          uint64_t (*count)(struct recorder *, enum rec_loss))
{
    for (int reason = 0; reason < REC_LOST__COUNT; reason++) {
        struct prom_label l = { "reason", rec_loss_label((enum rec_loss)reason) };
        prom_sample_u64(w, &l, 1, count(rec, (enum rec_loss)reason));
    }
}

/* The value of one SLABTAP_SHADOW_METRICS family for sh. */
static uint64_t scrape_shadow_value(const struct shadow *sh, const char *name)
{
    if (!strcmp(name, "slabtap_shadow_requests_dropped_total"))
        return sh->c.dropped;
    if (!strcmp(name, "slabtap_shadow_fills_total"))
        return sh->c.fills;
    if (!strcmp(name, "slabtap_shadow_restarts_total"))
        return sh->restarts;
    if (!strcmp(name, "slabtap_shadow_up"))
        return sh->state == SHADOW_S_UP;
    if (!strcmp(name, "slabtap_shadow_queued_bytes"))
        return sh->queued_bytes;
    return sh->inflight;
}

/* slabtap_*: the proxy's and the recorder's families. */
static void scrape_proxy(struct prom_writer *w, const struct scrape_sources *src)
{
    char name[PROM_NAME_MAX + 1];
    const struct proxy *px = src->px;
    struct recorder *rec = src->rec;
    for (size_t i = 0; i < sizeof proxy_metrics / sizeof proxy_metrics[0]; i++) {
        snprintf(name, sizeof name, "slabtap_%s%s", proxy_metrics[i].name,
                 proxy_metrics[i].type == PROM_COUNTER ? "_total" : "");
        prom_declare(w, name, proxy_metrics[i].type, proxy_metrics[i].help);
        if (proxy_metrics[i].scale == 1)
            prom_sample_u64(w, NULL, 0, metric_value(px, i));
        else
            prom_sample_double(w, NULL, 0,
                               (double)metric_value(px, i) / (double)proxy_metrics[i].scale);
    }
    prom_declare(w, "slabtap_requests_by_command_total", PROM_COUNTER,
                 "Requests parsed from clients, by command");
    for (int c = 0; c < MC_CMD_COUNT; c++) {
        if (!px->requests_by_cmd[c])
            continue;
        struct prom_label l = { "command", mc_cmd_name((enum mc_cmd)c) };
        prom_sample_u64(w, &l, 1, px->requests_by_cmd[c]);
    }
    prom_declare(w, "slabtap_rows_lost_total", PROM_COUNTER,
                 "Writes not recorded, by reason: queue_full (--on-full drop), write_error "
                 "(the store failed past --max-stall), shutdown (still failing at exit), "
                 "spill_full (past --spill-max), store_unavailable (--record-optional), "
                 "file_deleted (the SQLite file was deleted or replaced while recording), "
                 "wal_full (past --wal-max while a reader held a snapshot), "
                 "memcached_dropped (slabtap watch: log lines memcached dropped, skipped=N and "
                 "log_worker_dropped/log_watcher_skipped)");
    scrape_losses(w, rec, rec_lost);
    prom_declare(w, "slabtap_read_rows_lost_total", PROM_COUNTER,
                 "Read rows (one per key asked for) the writer could not record, by reason "
                 "(as slabtap_rows_lost_total; read rows dropped from a full queue are counted "
                 "there, with the writes)");
    scrape_losses(w, rec, rec_reads_lost);
    prom_declare(w, "slabtap_recorder_failing", PROM_GAUGE,
                 "1 while the store fails to write (batches are kept and tried again)");
    prom_sample_u64(w, NULL, 0, rec_failing_since(rec, NULL, 0) != 0);
    prom_declare(w, "slabtap_upstream_up", PROM_GAUGE,
                 "1 when the stats connection to memcached is up");
    prom_sample_u64(w, NULL, 0, src->poller->connected);
    prom_declare(w, "slabtap_stats_samples_total", PROM_COUNTER, "Stats samples taken");
    prom_sample_u64(w, NULL, 0, src->poller->counters.samples);
}

/* The targets of a scrape: the primary (index 0), then each shadow. */
struct scrape_target {
    const char *name;                /* "primary", or the shadow's */
    const struct stats_sample *last; /* NULL: nothing to show */
    bool up;
};

/* Fills t (SHADOW_MAX + 1): the primary, then the shadows; the count. */
static size_t scrape_targets(const struct scrape_sources *src, struct scrape_target *t)
{
    size_t n = 0;
    t[n++] = (struct scrape_target){ "primary", src->last, src->poller->connected && src->last };
    unsigned nsh = src->shadows && !src->shadows->closing ? src->shadows->n : 0;
    for (unsigned i = 0; i < nsh && i < SHADOW_MAX; i++) {
        const struct shadow *sh = &src->shadows->sh[i];
        bool up = sh->state == SHADOW_S_UP && sh->have_last;
        t[n++] = (struct scrape_target){ sh->name, sh->have_last ? &sh->last : NULL, up };
    }
    return n;
}

/* l[0] the target label (when there are shadows), then extra; the count. */
static size_t scrape_labels(struct prom_label *l, size_t ntargets, const struct scrape_target *t,
                            const struct prom_label *extra, size_t nextra)
{
    size_t n = 0;
    if (ntargets > 1)
        l[n++] = (struct prom_label){ "target", t->name };
    for (size_t i = 0; i < nextra; i++)
        l[n++] = extra[i];
    return n;
}

/* memcached-wide families from the latest sample, as memcached_exporter
 * exports them. memcached_up is 1 while the stats poller's connection is
 * up and a sample has arrived; the other families have samples only then
 * (the exporter writes none when it cannot reach memcached either), so a
 * graph shows a gap, never a stale value as if it were current. With
 * shadows (issue 23) every family has a sample per target, labelled
 * target="primary" or target="NAME" (the shadow's: up while connected
 * with a sample); without them the primary's samples carry no label. */
static void scrape_memcached(struct prom_writer *w, const struct scrape_sources *src)
{
    struct scrape_target ts[SHADOW_MAX + 1];
    size_t nt = scrape_targets(src, ts);
    struct prom_label l[3];
    int64_t v, set, hits, misses, badval;

    prom_declare(w, "memcached_up", PROM_GAUGE,
                 "Could the memcached server be reached (slabtap's stats poller is connected "
                 "and has a sample).");
    for (size_t t = 0; t < nt; t++)
        prom_sample_u64(w, l, scrape_labels(l, nt, &ts[t], NULL, 0), ts[t].up);
    for (size_t i = 0; i < sizeof memcached_families / sizeof memcached_families[0]; i++) {
        prom_declare(w, memcached_families[i].name, memcached_families[i].type,
                     memcached_families[i].help);
        for (size_t t = 0; t < nt; t++)
            if (ts[t].up && stats_sample_global(ts[t].last, memcached_families[i].field, &v))
                prom_sample_i64(w, l, scrape_labels(l, nt, &ts[t], NULL, 0), v);
    }
    prom_declare(w, "memcached_commands_total", PROM_COUNTER, MEMCACHED_COMMANDS_HELP);
    for (size_t t = 0; t < nt; t++) {
        const struct stats_sample *last = ts[t].last;
        if (!ts[t].up)
            continue;
        for (size_t i = 0; i < sizeof memcached_commands / sizeof memcached_commands[0]; i++) {
            struct prom_label cs[2] = { { "command", memcached_commands[i].command },
                                        { "status", memcached_commands[i].status } };
            if (stats_sample_global(last, memcached_commands[i].field, &v))
                prom_sample_i64(w, l, scrape_labels(l, nt, &ts[t], cs, 2), v);
        }
        if (stats_sample_global(last, "cmd_set", &set) &&
            stats_sample_global(last, "cas_hits", &hits) &&
            stats_sample_global(last, "cas_misses", &misses) &&
            stats_sample_global(last, "cas_badval", &badval)) {
            struct prom_label cs[2] = { { "command", "set" }, { "status", "hit" } };
            prom_sample_i64(w, l, scrape_labels(l, nt, &ts[t], cs, 2),
                            set - (hits + misses + badval));
        }
    }
}

/* Per class of each target's latest sample (the primary's whether its
 * poller is connected or not, as before shadows; a shadow's while up). */
static void scrape_classes(struct prom_writer *w, const struct scrape_sources *src)
{
    struct scrape_target ts[SHADOW_MAX + 1];
    size_t nt = scrape_targets(src, ts);
    struct prom_label l[2];
    for (size_t g = 0; g < sizeof class_families / sizeof class_families[0]; g++) {
        prom_declare(w, class_families[g].name, class_families[g].type, class_families[g].help);
        for (size_t t = 0; t < nt; t++) {
            const struct stats_sample *last = ts[t].last;
            if (t > 0 && !ts[t].up)
                continue;
            for (unsigned id = 0; last && id <= last->max_class_id; id++) {
                int64_t v, allocated;
                char label[16];
                if (!stats_sample_class(last, id))
                    continue;
                if (class_families[g].field
                        ? !stats_sample_get(last, id, class_families[g].field, &v)
                        : !stats_sample_class_waste(last, id, &allocated, &v))
                    continue;
                snprintf(label, sizeof label, "%u", id);
                struct prom_label slab = { "slab", label };
                prom_sample_i64(w, l, scrape_labels(l, nt, &ts[t], &slab, 1), v);
            }
        }
    }
}

/* slabtap_shadow_*: each shadow's counters (server/shadow.h), labelled
 * shadow="NAME"; the families are declared with or without shadows. */
static void scrape_shadows(struct prom_writer *w, const struct shadow_set *set)
{
    unsigned n = set && !set->closing ? set->n : 0;
    prom_declare(w, "slabtap_shadow_requests_total", PROM_COUNTER,
                 "Requests mirrored to a shadow memcached and answered, by result (the "
                 "results add up to the answered requests; fills are among stored and "
                 "not_stored)");
    for (unsigned i = 0; i < n; i++) {
        const struct shadow *sh = &set->sh[i];
        /* read = hit + miss + read errors, write = stored + not_stored + write
         * errors, fill is counted in those, dropped has its own family: a
         * sum over result must not count a request twice */
#define SHADOW_SAMPLE(f, label, help) \
    if (strcmp(label, "read") && strcmp(label, "write") && strcmp(label, "fill") && \
        strcmp(label, "dropped")) { \
        struct prom_label l[2] = { { "shadow", sh->name }, { "result", label } }; \
        prom_sample_u64(w, l, 2, sh->c.f); \
    }
        SHADOW_COUNTERS(SHADOW_SAMPLE)
#undef SHADOW_SAMPLE
    }
#define SHADOW_FAMILY(family, type, field, help) \
    prom_declare(w, #family, PROM_##type, help); \
    for (unsigned i = 0; i < n; i++) { \
        const struct shadow *sh = &set->sh[i]; \
        struct prom_label l = { "shadow", sh->name }; \
        prom_sample_u64(w, &l, 1, scrape_shadow_value(sh, #family)); \
    }
    SLABTAP_SHADOW_METRICS(SHADOW_FAMILY)
#undef SHADOW_FAMILY
}

enum prom_err scrape_write(struct prom_writer *w, const struct scrape_sources *src)
{
    scrape_refresh(src);
    scrape_proxy(w, src);
    scrape_memcached(w, src);
    scrape_classes(w, src);
    scrape_shadows(w, src->shadows);
    return prom_writer_finish(w);
}
