/* app: store + recorder + proxy + poller + admin HTTP, started and stopped
 * in the one order that loses nothing; what a sample becomes is
 * server/jobs.c's, the admin endpoint's routes server/routes.c's (its
 * /metrics server/scrape.c's). Loop thread only, except app_mark_phase
 * (atomics plus the recorder's locked job queue). */
#include "server/app.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/jsonb.h"
#include "core/log.h"
#include "core/sample.h"
#include "server/routes.h"

/* --- samples: the latest, and a final one that has settled ---------------- */

static void app_final_done(struct app *a);

/* memcached's per-class counters (number, mem_requested, used chunks) in
 * two samples agree? Its LRU maintainer moves items between sub-LRUs in the
 * background, and a sample taken mid-move can be one item off in a class. */
static bool app_settled(const struct stats_sample *a, const struct stats_sample *b)
{
    static const char *const fields[] = { "number", "mem_requested", "used_chunks" };
    unsigned max = a->max_class_id > b->max_class_id ? a->max_class_id : b->max_class_id;
    for (unsigned id = 0; id <= max; id++)
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
            int64_t x = -1, y = -1;
            bool hx = stats_sample_get(a, id, fields[f], &x);
            bool hy = stats_sample_get(b, id, fields[f], &y);
            if (hx != hy || x != y)
                return false;
        }
    return true;
}

static void on_settle_timer(uv_timer_t *t)
{
    struct app *a = t->data;
    poller_sample_now(&a->poller);
}

/* The final sample is the first that agrees with the one before it (at
 * most APP_FINAL_TRIES tries, APP_FINAL_SETTLE_MS apart): the model gate
 * compares against it, and a counter caught mid-move would fail it. */
static bool app_final_sample(struct app *a, const struct stats_sample *s)
{
    bool settled = a->final_tries > 0 && app_settled(&a->final_prev, s);
    if (settled || a->final_tries >= APP_FINAL_TRIES)
        return true;
    a->final_tries++;
    stats_sample_copy(&a->final_prev, s);
    uv_timer_start(&a->settle_timer, on_settle_timer, APP_FINAL_SETTLE_MS, 0);
    return false;
}

/* --- shadows (server/shadow.h) ------------------------------------------------ */

static void app_maybe_final(struct app *a);

static void app_shadow_sample(void *ud, struct shadow *sh, const struct stats_sample *s)
{
    struct app *a = ud;
    bool final = a->closing && a->shadow_final_asked[sh->index] &&
                 !a->shadow_final_got[sh->index] && s->requested;
    jobs_shadow_sample(&a->jobs, sh->name, s, final);
    if (final) {
        a->shadow_final_got[sh->index] = true;
        app_maybe_final(a);
    }
}

static void app_shadow_second(void *ud, struct shadow *sh, int64_t second,
                              const struct shadow_counters *d)
{
    struct app *a = ud;
    int64_t counts[REC_SHADOW_NCOUNTS];
    int k = 0;
#define SHADOW_COUNT(f, label, help) counts[k++] = (int64_t)d->f;
    SHADOW_COUNTERS(SHADOW_COUNT)
#undef SHADOW_COUNT
    jobs_shadow_counts(&a->jobs, sh->name, second, counts);
}

static void app_shadows_refused(struct app *a, const char *why);

static void app_shadow_event(void *ud, struct shadow *sh, const char *event, const char *detail)
{
    struct app *a = ud;
    jobs_shadow_event(&a->jobs, sh->name, clock_wall_ns(), event, detail);
    /* a started memcached that exits before it ever answered refused its
     * flags (memcached's own line says why): the proxy must not run on
     * without the shadow it was asked for */
    if (!strcmp(event, "exited") && sh->spec.kind == SHADOW_STARTED && !sh->ever_up &&
        !sh->restarts && !a->closing && !a->shadows_refused) {
        char why[1536];
        snprintf(why, sizeof why,
                 "--shadow '%s': memcached exited before it answered (%s): see its message "
                 "above; command: %s",
                 sh->name, detail, sh->command);
        app_shadows_refused(a, why);
    }
}

/* Shadows that cannot start (too small a sample): logged, recorded, and
 * the caller told (the proxy exits 2: it must not run half-configured). */
static void app_shadows_refused(struct app *a, const char *why)
{
    a->shadows_refused = true;
    log_error("%s", why);
    if (a->cfg.on_shadow_refused)
        a->cfg.on_shadow_refused(a->cfg.shadow_ud, why);
}

/* After the primary's first sample: its -m (limit_maxbytes) is a shadow's
 * default, the classes with pages decide whether a sample is too small. */
static void app_open_shadows(struct app *a, const struct stats_sample *s)
{
    char err[768];
    int64_t maxbytes = 0, pages;
    a->shadows_tried = true;
    if (!stats_sample_global(s, "limit_maxbytes", &maxbytes))
        stats_sample_setting(s, "maxbytes", &maxbytes);
    uint64_t mb = maxbytes > 0 ? ((uint64_t)maxbytes + (1u << 20) - 1) >> 20 : 64;
    unsigned classes = 0;
    for (unsigned id = 0; id <= s->max_class_id; id++)
        classes += stats_sample_get(s, id, "total_pages", &pages) && pages > 0;
    for (unsigned i = 0; i < a->cfg.n_shadows; i++) {
        uint64_t m;
        if (shadow_memory(&a->cfg.shadows[i], mb, classes, &m, err, sizeof err)) {
            jobs_shadow_event(&a->jobs, a->cfg.shadows[i].text, clock_wall_ns(), "too_small", err);
            app_shadows_refused(a, err);
            return;
        }
    }
    struct shadow_hooks hooks = { app_shadow_sample, app_shadow_second, app_shadow_event, a };
    if (shadow_set_open(&a->shadows, a->loop, a->cfg.shadows, a->cfg.n_shadows,
                        a->cfg.shadow_memcached, mb, classes, a->cfg.shadow_queue,
                        a->cfg.stats_interval_ms, &hooks, err, sizeof err)) {
        app_shadows_refused(a, err);
        return;
    }
    a->shadows_open = true;
    uv_timer_init(a->loop, &a->shadow_timer);
    a->shadow_timer.data = a;
    a->shadow_timer_open = true;
    a->px.shadows = &a->shadows;
    log_info("%u shadow%s started (primary -m %llu MB, %u slab classes in use)", a->shadows.n,
             a->shadows.n == 1 ? "" : "s", (unsigned long long)mb, classes);
}

/* Closing: each shadow's final sample once what was mirrored to it is
 * answered (one that is down or not polled has none to give). */
static void on_shadow_timer(uv_timer_t *t)
{
    struct app *a = t->data;
    for (unsigned i = 0; i < a->shadows.n; i++) {
        struct shadow *sh = &a->shadows.sh[i];
        if (a->shadow_final_asked[i] || a->shadow_final_got[i])
            continue;
        if (sh->state != SHADOW_S_UP || !sh->poller_open || !sh->poller.connected) {
            a->shadow_final_got[i] = true;
        } else if (sh->inflight == 0) {
            a->shadow_final_asked[i] = true;
            poller_sample_now(&sh->poller);
        }
    }
    app_maybe_final(a);
}

static void on_sample(void *ud, const struct stats_sample *s)
{
    struct app *a = ud;
    bool final = a->closing && s->requested && app_final_sample(a, s);
    if (a->tap_open)
        tap_sample(&a->tap, s);
    jobs_sample(&a->jobs, s, atomic_load(&a->phase_id), final);
    if (stats_sample_copy(&a->last, s) == 0)
        a->have_last = true;
    a->last_sample_ns = clock_wall_ns();
    if (!a->shadows_tried && a->cfg.n_shadows && !a->cfg.tap_mode && !a->closing)
        app_open_shadows(a, s);
    if (final) {
        a->primary_final = true;
        app_maybe_final(a);
    }
}

/* --- phases ------------------------------------------------------------------ */

static int64_t app_phase_at(struct app *a, const char *name, int64_t t_ns)
{
    int64_t id = atomic_fetch_add(&a->next_phase_id, 1);
    if (!jobs_phase(&a->jobs, id, t_ns, name, APP_PHASE_NAME_MAX))
        return -1; /* not queued: the caller must not confirm it */
    atomic_store(&a->phase_id, id);
    return id;
}

int64_t app_mark_phase(struct app *a, const char *name)
{
    return app_phase_at(a, name, clock_wall_ns());
}

/* --- lifecycle ------------------------------------------------------------- */

/* Without --http-token the admin endpoint binds to loopback only. */
static bool app_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    return false;
}

/* The listeners first -- the proxy's and the admin endpoint's -- so that
 * a start that cannot bind leaves no database file (nor run row) behind. */
static int app_listen(struct app *a, const struct app_config *cfg, char *err, size_t errlen)
{
    struct sockaddr_storage bound;
    int len = sizeof bound;
    if (!cfg->tap_mode && proxy_open(&a->px, a->loop, &cfg->proxy, &a->rec, err, errlen)) {
        log_error("%s", err);
        return -1;
    }
    if (!cfg->http_enabled)
        return 0;
    int rc = admin_http_open(&a->http, a->loop, (const struct sockaddr *)&cfg->http_addr,
                             routes_table, routes_count, a);
    a->http_open = true;
    if (rc != ADMIN_HTTP_OK) {
        char at[ADDR_TEXT_MAX];
        addr_format((const struct sockaddr *)&cfg->http_addr, at, sizeof at);
        if (a->http.uv_err == UV_EADDRINUSE)
            log_error("cannot serve the admin endpoint on %s: the address is in use (another "
                      "slabtap?); give --http HOST:PORT for another address or --http off",
                      at);
        else
            log_error("cannot serve the admin endpoint on %s: %s (%s)", at,
                      admin_http_strerror((enum admin_http_err)rc),
                      a->http.uv_err ? uv_strerror(a->http.uv_err) : "");
        return -1;
    }
    if (uv_tcp_getsockname(&a->http.listener, (struct sockaddr *)&bound, &len) == 0)
        addr_format((const struct sockaddr *)&bound, a->http_host, sizeof a->http_host);
    return 0;
}

static void app_teardown_one(struct app *a)
{
    a->teardown_pending--;
}

static void on_teardown_proxy(struct proxy *px)
{
    app_teardown_one((struct app *)((char *)px - offsetof(struct app, px)));
}

static void on_teardown_http(struct admin_http *h)
{
    app_teardown_one((struct app *)((char *)h - offsetof(struct app, http)));
}

static void on_teardown_poller(struct poller *p)
{
    app_teardown_one((struct app *)((char *)p - offsetof(struct app, poller)));
}

static void on_teardown_tap(struct tap *t)
{
    app_teardown_one((struct app *)((char *)t - offsetof(struct app, tap)));
}

/* A start that failed half way: close what was opened and turn the loop
 * until exactly that is closed -- never until the loop is empty, which
 * the caller's own handles (an experiment's memcached and signal
 * watchers) would make forever. */
static void app_teardown(struct app *a)
{
    a->teardown_pending = !a->cfg.tap_mode + a->http_open + a->poller_open + a->tap_open;
    if (a->tap_open)
        tap_close(&a->tap, on_teardown_tap);
    if (a->http_open)
        admin_http_close(&a->http, on_teardown_http);
    if (a->poller_open)
        poller_close(&a->poller, on_teardown_poller);
    if (!a->cfg.tap_mode)
        proxy_close(&a->px, on_teardown_proxy);
    for (int turns = 0; a->teardown_pending > 0 && turns < 100000; turns++)
        uv_run(a->loop, UV_RUN_ONCE);
    /* the close callbacks of the handles closed last, then the buffers:
     * nothing left for uv_loop_close to find */
    uv_run(a->loop, UV_RUN_NOWAIT);
    pbuf_pool_free(&a->px.pool);
}

/* What the steps of app_open hand each other. */
struct app_start {
    const char *db; /* the store: cfg->db_path, or the file a pattern names now */
    bool rotating;  /* --db PATTERN (record/retain.h) */
    bool spilling;  /* a remote store with --spill, in block mode */
    struct rec_config rec;
    char err[1536];
};

/* The store: a SQLite file or PostgreSQL (record/sink.h), and the spill
 * file of a remote one. */
static int app_open_store(struct app *a, const struct app_config *cfg, struct app_start *st)
{
    st->db = cfg->db_path;
    st->rotating = !sink_is_remote(st->db) && retain_path_rotates(st->db);
    if (st->rotating) { /* --db PATTERN: the file for now (record/retain.h) */
        if (retain_path_expand(st->db, (time_t)(clock_wall_ns() / 1000000000), a->db_file,
                               sizeof a->db_file)) {
            log_error("--db %s: the pattern expands to nothing or too long a name", st->db);
            return -1;
        }
        st->db = a->db_file;
    }
    sink_init(&a->sink, st->db);
    a->sink.agg_flush_ms = cfg->agg_flush_ms;
    bool remote = a->sink.kind == SINK_PG;
    if (sink_open(&a->sink, st->db, st->err, sizeof st->err)) {
        if (!remote || !cfg->record_optional) {
            log_error("%s%s", st->err,
                      remote ? " (--record-optional: forward without recording until it answers)"
                             : "");
            return -1;
        }
        log_error("%s; --record-optional: forwarding without recording, every write counted "
                  "lost (store_unavailable) until it answers",
                  st->err);
    }
    /* the spill keeps what block mode would wait for; drop mode drops and counts */
    st->spilling = remote && cfg->spill_path && cfg->on_full == REC_BLOCK;
    if (st->spilling &&
        spill_open(&a->spill, cfg->spill_path, cfg->spill_max, st->err, sizeof st->err)) {
        log_error("%s", st->err);
        sink_close(&a->sink);
        return -1;
    }
    if (st->spilling && a->spill.batches)
        log_warn("spill %s: %llu rows of an earlier run wait; shipped once the store writes",
                 a->spill.path, (unsigned long long)a->spill.rows);
    return 0;
}

/* The runs /api/runs lists beside the current one. */
static void app_earlier_runs(struct app *a)
{
    /* SQLite: read once here, before the writer thread owns the file;
     * PostgreSQL: by the page's query thread (webapi_open_pg) */
    if (sink_sqlite(&a->sink))
        a->runs_all = query_runs_json(sink_sqlite(&a->sink), -1, QUERY_RUNS_MAX - 1);
}

static void app_rec_config(const struct app_config *cfg, struct app_start *st)
{
    st->rec = (struct rec_config){
        .cap = cfg->queue_rows,
        .on_full = cfg->on_full,
        .max_stall_ms = cfg->max_stall_ms,
        .spill = NULL,
        .db = cfg->db_path,
        .retain = { cfg->retain_ns, cfg->max_db_bytes },
        .wal_max = cfg->wal_max,
        .rotate = st->rotating ? cfg->db_path : NULL,
        .path = st->db,
        .run = { cfg->run_name, cfg->proxy.upstream_text,
                 cfg->options_text ? cfg->options_text : "", keyfmt_mode_name(cfg->proxy.key_mode),
                 cfg->node ? cfg->node : "", cfg->run_kind },
    };
}

/* --max-db-size and SQLite's WAL on a file system with less room than
 * both: a smaller WAL, or the bound cannot be met (said once, here) */
static void app_check_room(const struct app *a, const struct app_config *cfg, struct app_start *st)
{
    uint64_t room;
    enum retain_room fit;
    if (a->sink.kind == SINK_PG || !cfg->max_db_bytes ||
        retain_room(st->db, cfg->max_db_bytes, &room, &st->rec.wal_pages, &fit) != 0)
        return;
    if (fit == RETAIN_ROOM_SMALL_WAL)
        log_warn("--max-db-size %llu and SQLite's WAL (%u pages) do not both fit in the %llu "
                 "bytes the file system of %s has for them: the WAL is checkpointed every %u "
                 "pages instead",
                 (unsigned long long)cfg->max_db_bytes, RETAIN_WAL_PAGES, (unsigned long long)room,
                 st->db, st->rec.wal_pages);
    else if (fit == RETAIN_ROOM_NO)
        log_warn("--max-db-size %llu cannot be met: the file system of %s has %llu bytes for "
                 "the file and its WAL, the bound needs %llu more at least; the disk fills "
                 "first (then the oldest rows are expired to make room)",
                 (unsigned long long)cfg->max_db_bytes, st->db, (unsigned long long)room,
                 (unsigned long long)(cfg->max_db_bytes + 2 * RETAIN_WAL_MIN_PAGES * 4096 - room));
}

/* The run's row (none while a --record-optional store is away) and the
 * phase ids after the ones it has. */
static int app_begin_run(struct app *a, struct app_start *st)
{
    a->run_id = -1;
    if (a->sink.open) {
        a->run_id = sink_run_begin(&a->sink, &st->rec.run, st->err, sizeof st->err);
        if (a->run_id < 0) {
            log_error("%s", st->err);
            return -1;
        }
        atomic_store(&a->next_phase_id, sink_max_phase_id(&a->sink, a->run_id) + 1);
    } else {
        atomic_store(&a->next_phase_id, 1);
    }
    a->started_ns = clock_wall_ns();
    return 0;
}

/* The page's /api/run/... queries (server/webapi.h): on the writer thread
 * for a SQLite file, on a query thread of their own for PostgreSQL. */
static void app_open_webapi(struct app *a, struct app_start *st)
{
    if (a->sink.kind == SINK_PG
            ? webapi_open_pg(&a->web, a->loop, &a->http, st->db, a->run_id, &a->runs_all, st->err,
                             sizeof st->err)
            : webapi_open(&a->web, a->loop, &a->http, &a->rec, a->run_id, st->err, sizeof st->err))
        log_warn("the /api/run endpoints are off: %s", st->err);
}

/* run_meta entries `model predict` and `advise` read. */
static void app_record_meta(struct app *a, const struct app_config *cfg)
{
    if (cfg->memcached_flags && *cfg->memcached_flags)
        jobs_meta(&a->jobs, a->started_ns, "memcached_flags", strdup(cfg->memcached_flags));
    if (cfg->proxy.sample_keys > 1) {
        char rate[32];
        if (cfg->proxy.sample_keys == SAMPLE_NONE)
            snprintf(rate, sizeof rate, "none");
        else
            snprintf(rate, sizeof rate, "1/%u", (unsigned)cfg->proxy.sample_keys);
        jobs_meta(&a->jobs, a->started_ns, "sample_keys", strdup(rate));
    }
}

/* The stats poller, and the timers of the final sample. */
static int app_start_poller(struct app *a, const struct app_config *cfg)
{
    int rc = poller_open(&a->poller, a->loop, &a->px.cfg.upstream_addrs, cfg->stats_interval_ms,
                         on_sample, a);
    if (rc) {
        log_error("cannot start the stats poller: %s", uv_strerror(rc));
        return -1;
    }
    a->poller_open = true;
    uv_timer_init(a->loop, &a->final_timer);
    a->final_timer.data = a;
    uv_timer_init(a->loop, &a->settle_timer);
    a->settle_timer.data = a;
    stats_sample_init(&a->final_prev);
    a->closing_handles = 1;
    return 0;
}

/* Tap mode: the recorder filled or drained; the caller's source decides. */
static void app_tap_unblock(void *ud)
{
    struct app *a = ud;
    if (a->tap_open)
        tap_update_reading(&a->tap);
    if (a->cfg.tap_unblock)
        a->cfg.tap_unblock(a->cfg.tap_ud);
}

/* A proxy with a watcher: the proxy's reading, and the watcher's. */
static void app_proxy_unblock(void *ud)
{
    struct app *a = ud;
    proxy_update_reading(&a->px);
    if (a->tap_open)
        tap_update_reading(&a->tap);
}

static void app_watch_stopped(void *ud, enum tap_stop why, const char *words)
{
    struct app *a = ud;
    if (a->cfg.on_watch_stop) {
        a->cfg.on_watch_stop(a->cfg.watch_ud, why, words);
        return;
    }
    log_write(LOG_LEVEL_ERROR, a->tap.peer, "%s%s%s; recording goes on without it",
              tap_stop_text(why), *words ? ": " : "", words);
}

static void app_watch_gap(void *ud, bool restart, int64_t from_ns, int64_t to_ns)
{
    struct app *a = ud;
    (void)from_ns;
    /* from when the watcher was back: what the new memcached logged since
     * (its times are memcached's clock; this is ours, the same on one host) */
    if (restart)
        app_phase_at(a, "memcached restarted", to_ns);
}

/* The watcher (cfg.watch), after the poller: it reads the samples. */
static int app_start_tap(struct app *a, const struct app_config *cfg)
{
    if (!cfg->watch)
        return 0;
    struct tap_config tc = {
        .upstream = &a->px.cfg.upstream_addrs,
        .watch = cfg->watch,
        .key_mode = cfg->proxy.key_mode,
        .sample_keys = cfg->proxy.sample_keys,
        .sample_aggregate = cfg->proxy.sample_aggregate,
        .rec = &a->rec,
        .on_stop = app_watch_stopped,
        .on_gap = app_watch_gap,
        .ud = a,
        .m = &a->px.m,
    };
    int rc = tap_open(&a->tap, a->loop, &tc);
    if (rc) {
        log_error("cannot start the watcher: %s", uv_strerror(rc));
        return -1;
    }
    a->tap_open = true;
    return 0;
}

int app_open(struct app *a, uv_loop_t *loop, const struct app_config *cfg)
{
    struct app_start st = { 0 };
    memset(a, 0, sizeof *a);
    a->loop = loop;
    a->cfg = *cfg;
    if (cfg->tap_mode) {
        /* no pooled connection: /health looks at the poller (and the tap) */
        a->cfg.proxy.upstream_conns = 0;
        /* what a proxy would read of its config (the poller's addresses,
         * the key policy) is where it would be; listen_text stays "" */
        a->px.cfg = a->cfg.proxy;
    }
    stats_sample_init(&a->last);
    jobs_init(&a->jobs, &a->rec, &a->px, cfg->memcached_flags);
    if (cfg->http_enabled && !cfg->http_token && !app_loopback(&cfg->http_addr)) {
        log_error("the admin endpoint binds beyond loopback: --http-token is required");
        goto fail;
    }
    if (app_listen(a, cfg, st.err, sizeof st.err) || app_open_store(a, cfg, &st))
        goto unbind;
    app_earlier_runs(a);
    app_rec_config(cfg, &st);
    st.rec.spill = st.spilling ? &a->spill : NULL;
    app_check_room(a, cfg, &st);
    if (app_begin_run(a, &st))
        goto close_store;
    if (rec_open(&a->rec, loop, &a->sink, a->run_id, &st.rec,
                 cfg->tap_mode ? app_tap_unblock
                 : cfg->watch  ? app_proxy_unblock
                               : proxy_update_reading,
                 cfg->tap_mode || cfg->watch ? (void *)a : (void *)&a->px, st.err, sizeof st.err)) {
        log_error("recorder: %s", st.err);
        goto close_rec;
    }
    app_open_webapi(a, &st);
    app_record_meta(a, cfg);
    if (app_start_poller(a, cfg) || app_start_tap(a, cfg))
        goto stop;
    return 0;
stop:
    app_teardown(a);
    rec_close(&a->rec, NULL, st.err, sizeof st.err); /* why the start failed is logged above */
    webapi_close(&a->web);
    uv_run(loop, UV_RUN_NOWAIT);
    goto fail;
close_rec:
    /* ends the run row; one turn runs the close callbacks of the recorder's
     * handles and leaves the caller's (an experiment's memcached) alone */
    rec_close(&a->rec, NULL, st.err, sizeof st.err);
    app_teardown(a);
    goto fail;
close_store:
    app_teardown(a);
    sink_close(&a->sink);
    if (st.spilling)
        spill_close(&a->spill);
    goto fail;
unbind:
    app_teardown(a);
fail:
    stats_sample_fini(&a->last);
    free(a->runs_all);
    a->runs_all = NULL;
    return -1;
}

static void app_component_closed(struct app *a)
{
    if (--a->closing_handles == 0 && a->on_closed)
        a->on_closed(a);
}

static void on_poller_closed(struct poller *p)
{
    app_component_closed((struct app *)((char *)p - offsetof(struct app, poller)));
}

static void on_http_closed(struct admin_http *h)
{
    app_component_closed((struct app *)((char *)h - offsetof(struct app, http)));
}

static void on_final_timer_closed(uv_handle_t *h)
{
    app_component_closed(h->data);
}

static void on_tap_closed(struct tap *t)
{
    app_component_closed((struct app *)((char *)t - offsetof(struct app, tap)));
}

static void on_shadows_closed(struct shadow_set *set)
{
    app_component_closed((struct app *)((char *)set - offsetof(struct app, shadows)));
}

static void app_final_done(struct app *a)
{
    if (a->final_done)
        return;
    a->final_done = true;
    uv_timer_stop(&a->final_timer);
    uv_timer_stop(&a->settle_timer);
    a->closing_handles =
        2 + a->poller_open + a->http_open + a->tap_open + a->shadows_open + a->shadow_timer_open;
    if (a->shadow_timer_open) {
        a->shadow_timer_open = false;
        uv_timer_stop(&a->shadow_timer);
        uv_close((uv_handle_t *)&a->shadow_timer, on_final_timer_closed);
    }
    if (a->shadows_open) { /* the children stopped, their last counts given */
        a->px.shadows = NULL;
        shadow_set_close(&a->shadows, on_shadows_closed);
    }
    uv_close((uv_handle_t *)&a->final_timer, on_final_timer_closed);
    uv_close((uv_handle_t *)&a->settle_timer, on_final_timer_closed);
    if (a->tap_open) /* after the final sample: its drop counters are counted */
        tap_close(&a->tap, on_tap_closed);
    if (a->poller_open)
        poller_close(&a->poller, on_poller_closed);
    if (a->http_open)
        admin_http_close(&a->http, on_http_closed);
}

/* The primary's final sample is in, and each shadow's (or it has none). */
static void app_maybe_final(struct app *a)
{
    if (!a->primary_final || a->final_done)
        return;
    for (unsigned i = 0; a->shadows_open && i < a->shadows.n; i++)
        if (!a->shadow_final_got[i])
            return;
    app_final_done(a);
}

static void on_final_timeout(uv_timer_t *t)
{
    struct app *a = t->data;
    if (a->primary_final)
        log_warn("no final stats sample from every shadow within %d ms (frozen or slow?)",
                 APP_FINAL_SAMPLE_WAIT_MS);
    else
        log_warn("no final stats sample within %d ms (memcached unreachable?)",
                 APP_FINAL_SAMPLE_WAIT_MS);
    app_final_done(a);
}

static void on_proxy_stopped(struct proxy *px)
{
    struct app *a = (struct app *)((char *)px - offsetof(struct app, px));
    /* every forwarded request is answered: the final sample sees them all */
    poller_sample_now(&a->poller);
    uv_timer_start(&a->final_timer, on_final_timeout, APP_FINAL_SAMPLE_WAIT_MS, 0);
    if (a->shadow_timer_open) /* each shadow's, once drained */
        uv_timer_start(&a->shadow_timer, on_shadow_timer, 0, 10);
}

void app_close(struct app *a, void (*on_closed)(struct app *a))
{
    if (a->closing)
        return;
    a->closing = true;
    a->on_closed = on_closed;
    if (a->cfg.tap_mode) /* the caller's source has stopped: the final sample now */
        on_proxy_stopped(&a->px);
    else
        proxy_close(&a->px, on_proxy_stopped);
}

void app_force(struct app *a)
{
    rec_give_up(&a->rec);
    if (!a->cfg.tap_mode)
        proxy_force_stop(&a->px);
}

int app_finish(struct app *a, struct rec_totals *totals)
{
    char err[256];
    int rc = rec_close(&a->rec, totals, err, sizeof err);
    if (rc)
        log_error("recorder: %s", err);
    webapi_close(&a->web); /* the writer has stopped: queries left are dropped */
    /* one turn runs the close callback of the recorder's async handle;
     * other handles on the loop (an experiment's memcached) stay alive */
    uv_run(a->loop, UV_RUN_NOWAIT);
    pbuf_pool_free(&a->px.pool);
    stats_sample_fini(&a->final_prev);
    stats_sample_fini(&a->last);
    free(a->runs_all);
    a->runs_all = NULL;
    return rc;
}
