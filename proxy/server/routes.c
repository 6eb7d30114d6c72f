/* routes: the admin endpoint's routes -- the page, /health, /metrics,
 * /api/runs, /api/slabs, /api/phase and /api/run/... -- over one running
 * app (server/app.h: each request's ud). Loop thread only. */
#include "server/routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/jsonb.h"
#include "protocol/stats_json.h"
#include "server/app.h"
#include "server/prom.h"
#include "server/scrape.h"
#include "server/webui.h"

static void routes_json(struct admin_http_response *resp, int status, struct buf *b)
{
    if (b->failed)
        admin_http_respond(resp, 500, "text/plain", "out of memory\n", 14);
    else
        admin_http_respond(resp, status, "application/json", b->data, b->len);
    buf_free(b);
}

/* {"error": ...} with status; json is the object, newline included. */
static void routes_error(struct admin_http_response *resp, int status, const char *json)
{
    struct buf b;
    buf_init(&b, JSONB_MAX);
    buf_puts(&b, json);
    routes_json(resp, status, &b);
}

/* What a probe needs: 200 only when memcached answers the stats poll, a
 * pooled connection is up and the recorder keeps up; else 503 and why. */
static const char *routes_health_state(const struct app *a, int *status)
{
    int64_t now = clock_wall_ns();
    int64_t stale_ns = (int64_t)a->cfg.stats_interval_ms * APP_STALE_INTERVALS * 1000000;
    if (stale_ns < (int64_t)APP_STALE_MIN_MS * 1000000)
        stale_ns = (int64_t)APP_STALE_MIN_MS * 1000000;
    *status = 503;
    /* per-client mode has no pooled connection to look at while idle */
    if (!a->poller.connected || (a->cfg.proxy.upstream_conns && !a->px.upstream_up))
        return "upstream_unreachable";
    if (!a->last_sample_ns || now - a->last_sample_ns > stale_ns)
        return "upstream_not_answering";
    /* slabtap watch: the watcher is what records (a proxy's is an extra) */
    if (a->cfg.tap_mode && a->tap_open && !a->tap.connected)
        return a->tap.state == TAP_STOPPED ? "watch_refused" : "watcher_unreachable";
    char why[8];
    /* a remote store: rows spill or are counted while it fails -- degraded
     * recording, the proxy serves; SQLite failing: as before */
    if (a->sink.kind == SINK_PG && rec_degraded((struct recorder *)&a->rec, why, sizeof why))
        return "recording_degraded";
    enum store_file_state fault = rec_file_fault((struct recorder *)&a->rec, NULL, NULL);
    if (fault != STORE_FILE_OK) /* the path lost the file being written */
        return store_file_state_label(fault);
    if (rec_failing_since((struct recorder *)&a->rec, NULL, 0))
        return "recorder_failing";
    *status = 200;
    return "ok";
}

/* "HOST:PORT" as a browser sends it for this endpoint: the bound address,
 * or a loopback name for the same port. */
static bool routes_host_ok(const struct app *a, const char *host)
{
    const char *port = strrchr(a->http_host, ':');
    const char *names[] = { "localhost", "127.0.0.1", "[::1]" };
    if (!strcmp(host, a->http_host))
        return true;
    for (size_t i = 0; port && i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (!strncmp(host, names[i], n) && !strcmp(host + n, port))
            return true;
    }
    return false;
}

/* Every request passes here first. With --http-token everything but
 * /health needs it. Without one (loopback only): a Host that names another
 * site is refused (DNS rebinding: a page that renamed itself to point at
 * us), and so is a POST from a page of another origin. */
static bool routes_admit(const struct admin_http_request *req, struct admin_http_response *resp)
{
    const struct app *a = req->ud;
    const char *host = admin_http_header(req, "Host");
    const char *origin = admin_http_header(req, "Origin");
    const char *auth = admin_http_header(req, "Authorization");
    if (a->cfg.http_token) {
        size_t n = strlen(a->cfg.http_token);
        /* the scheme is case-insensitive (RFC 7235 2.1) */
        bool ok = auth && !strncasecmp(auth, "Bearer ", 7) && strlen(auth + 7) == n &&
                  !memcmp(auth + 7, a->cfg.http_token, n);
        if (ok || !strcmp(req->path, "/health"))
            return true;
        admin_http_respond(resp, 401, "text/plain; charset=utf-8", "token required\n", 15);
        return false;
    }
    if (host && !routes_host_ok(a, host)) {
        admin_http_respond(resp, 403, "text/plain; charset=utf-8", "wrong Host\n", 11);
        return false;
    }
    if (origin && strcmp(req->method, "GET") && strcmp(req->method, "HEAD") &&
        (strncmp(origin, "http://", 7) || !routes_host_ok(a, origin + 7))) {
        admin_http_respond(resp, 403, "text/plain; charset=utf-8", "cross-origin\n", 13);
        return false;
    }
    return true;
}

static const char *routes_shadow_state(enum shadow_state s)
{
    switch (s) {
    case SHADOW_S_UP: return "up";
    case SHADOW_S_STARTING: return "starting";
    case SHADOW_S_TOO_SMALL: return "too_small";
    case SHADOW_S_CLOSED: return "closed";
    default: return "down";
    }
}

/* "shadows":[...] (server/shadow.h): each shadow's state and counters;
 * [] without shadows, or before the primary's first sample started them. */
static void routes_health_shadows(const struct app *a, struct buf *b)
{
    buf_puts(b, "\"shadows\":[");
    for (unsigned i = 0; i < a->shadows.n; i++) {
        const struct shadow *sh = &a->shadows.sh[i];
        buf_puts(b, i ? ",{\"target\":" : "{\"target\":");
        jsonb_string(b, sh->name, strlen(sh->name));
        buf_printf(b,
                   ",\"kind\":\"%s\",\"state\":\"%s\",\"sample\":%u,\"memory_mb\":%llu,"
                   "\"restarts\":%llu,\"disconnects\":%llu,\"up_since_ns\":%lld,"
                   "\"queued_bytes\":%zu,\"inflight\":%zu,\"last_sample_age_ms\":%lld",
                   sh->spec.kind == SHADOW_UPSTREAM ? "upstream" : "started",
                   routes_shadow_state(sh->state), sh->spec.sample > 1 ? sh->spec.sample : 1,
                   (unsigned long long)sh->memory_mb, (unsigned long long)sh->restarts,
                   (unsigned long long)sh->disconnects, (long long)sh->up_since_ns,
                   sh->queued_bytes, sh->inflight,
                   sh->last_sample_ns
                       ? (long long)((clock_wall_ns() - sh->last_sample_ns) / 1000000)
                       : -1LL);
#define SHADOW_JSON(f, label, help) buf_printf(b, ",\"%s\":%llu", #f, (unsigned long long)sh->c.f);
        SHADOW_COUNTERS(SHADOW_JSON)
#undef SHADOW_JSON
        buf_puts(b, "}");
    }
    buf_puts(b, "],");
}

static void routes_health(const struct admin_http_request *req, struct admin_http_response *resp)
{
    if (!routes_admit(req, resp))
        return;
    struct app *a = req->ud;
    struct buf b;
    int status;
    const char *state = routes_health_state(a, &status);
    int64_t age = a->last_sample_ns ? (clock_wall_ns() - a->last_sample_ns) / 1000000 : -1;
    buf_init(&b, JSONB_MAX);
    buf_printf(&b, "{\"status\":\"%s\",\"run_id\":%lld,\"listen\":", state,
               (long long)rec_run_id(&a->rec));
    /* the addresses bound (a port asked as 0 is the one the kernel gave) */
    jsonb_string(&b, a->px.listen_text, strlen(a->px.listen_text));
    buf_puts(&b, ",\"http\":");
    jsonb_string(&b, a->http_host, strlen(a->http_host));
    buf_puts(&b, ",\"upstream\":{\"address\":");
    jsonb_string(&b, a->cfg.proxy.upstream_text, strlen(a->cfg.proxy.upstream_text));
    /* last_error only while it is the reason: a stale one after recovery
     * would send a reader after a problem that is gone */
    buf_printf(&b,
               ",\"reachable\":%s,\"pool_up\":%s,\"last_error\":\"%s\",\"reconnects\":%llu,"
               "\"last_sample_age_ms\":%lld},",
               a->poller.connected ? "true" : "false", a->px.upstream_up ? "true" : "false",
               status == 200 ? "" : poller_error_str(a->poller.last_error),
               (unsigned long long)a->poller.counters.reconnects, (long long)age);
    buf_printf(&b,
               "\"recorder\":{\"queue_depth\":%zu,\"queue_bound\":%zu,\"blocked\":%s,"
               "\"on_full\":\"%s\",\"rows_recorded\":%llu,\"rows_dropped\":%llu,"
               "\"write_errors\":%llu,\"jobs_dropped\":%llu,\"lost_total\":%llu,\"lost\":{",
               rec_depth(&a->rec), a->rec.cap, rec_blocked(&a->rec) ? "true" : "false",
               a->rec.on_full == REC_DROP ? "drop" : "block",
               (unsigned long long)rec_recorded(&a->rec), (unsigned long long)a->rec.dropped,
               (unsigned long long)a->rec.write_errors, (unsigned long long)a->rec.jobs_dropped,
               (unsigned long long)rec_lost_total(&a->rec));
    for (int reason = 0; reason < REC_LOST__COUNT; reason++)
        buf_printf(&b, "%s\"%s\":%llu", reason ? "," : "", rec_loss_label((enum rec_loss)reason),
                   (unsigned long long)rec_lost(&a->rec, (enum rec_loss)reason));
    buf_printf(&b, "},\"reads_recorded\":%llu,\"reads_lost\":{",
               (unsigned long long)rec_reads_recorded(&a->rec));
    for (int reason = 0; reason < REC_LOST__COUNT; reason++)
        buf_printf(&b, "%s\"%s\":%llu", reason ? "," : "", rec_loss_label((enum rec_loss)reason),
                   (unsigned long long)rec_reads_lost(&a->rec, (enum rec_loss)reason));
    buf_puts(&b, "}},");
    /* the store and the spill: why recording is degraded while it is */
    char why[512];
    struct rec_spill_state sp;
    bool degraded = rec_degraded(&a->rec, why, sizeof why);
    rec_spill_state(&a->rec, &sp);
    buf_puts(&b, "\"store\":{\"kind\":");
    jsonb_string(&b, a->sink.kind == SINK_PG ? "postgresql" : "sqlite",
                 a->sink.kind == SINK_PG ? 10 : 6);
    /* the file written now (rotation changes it) and retention's figures */
    char file[1024];
    struct retain_stats rs;
    uint64_t rotations;
    rec_retain_state(&a->rec, &rs, file, sizeof file, &rotations);
    buf_puts(&b, ",\"name\":");
    if (a->sink.kind == SINK_PG)
        jsonb_string(&b, sink_name(&a->sink), strlen(sink_name(&a->sink)));
    else
        jsonb_string(&b, file, strlen(file));
    buf_printf(&b,
               ",\"retention\":{\"enabled\":%s,\"retain_s\":%.3f,\"max_db_bytes\":%llu,"
               "\"bound_reached\":%s,\"kept_over_bound\":%s,\"rows_expired\":%llu,"
               "\"oldest_row_ns\":%lld,\"file_bytes\":%llu,\"free_bytes\":%llu,"
               "\"steps\":%llu,\"step_max_us\":%llu,\"step_total_us\":%llu,"
               "\"rotations\":%llu}",
               rs.enabled ? "true" : "false", (double)rs.retain_ns / 1e9,
               (unsigned long long)rs.max_bytes, rs.bound_reached ? "true" : "false",
               rs.kept_over ? "true" : "false", (unsigned long long)rs.rows_expired,
               (long long)rs.oldest_ns, (unsigned long long)rs.file_bytes,
               (unsigned long long)rs.free_bytes, (unsigned long long)rs.steps,
               (unsigned long long)rs.step_max_us, (unsigned long long)rs.step_total_us,
               (unsigned long long)rotations);
    int64_t fault_ns;
    uint64_t fault_events;
    enum store_file_state fault = rec_file_fault(&a->rec, &fault_ns, &fault_events);
    buf_printf(&b, ",\"file\":{\"fault\":\"%s\",\"fault_ns\":%lld,\"faults\":%llu}",
               fault == STORE_FILE_OK ? "" : store_file_state_label(fault),
               (long long)(fault == STORE_FILE_OK ? 0 : fault_ns),
               (unsigned long long)fault_events);
    buf_printf(&b, ",\"degraded\":%s,\"reason\":", degraded ? "true" : "false");
    jsonb_string(&b, degraded ? why : "", degraded ? strlen(why) : 0);
    buf_printf(&b,
               ",\"spill\":{\"enabled\":%s,\"backlog_batches\":%llu,\"backlog_rows\":%llu,"
               "\"backlog_bytes\":%llu,\"spilled\":%llu,\"shipped\":%llu}},",
               sp.enabled ? "true" : "false", (unsigned long long)sp.batches,
               (unsigned long long)sp.rows, (unsigned long long)sp.bytes,
               (unsigned long long)sp.spilled, (unsigned long long)sp.shipped);
    if (a->tap_open) /* the watcher (server/tap.h) */
        buf_printf(
            &b,
            "\"watcher\":{\"connected\":%s,\"stopped\":\"%s\",\"deletions\":%s,"
            "\"lines\":%llu,\"writes\":%llu,\"evictions\":%llu,\"deletions_seen\":%llu,"
            "\"memcached_dropped\":%llu,\"skipped_reported\":%llu,\"reconnects\":%llu,"
            "\"restarts\":%llu,\"paused\":%llu},",
            a->tap.connected ? "true" : "false",
            a->tap.stop == TAP_STOP_NONE ? "" : tap_stop_text(a->tap.stop),
            a->tap.deletions ? "true" : "false", (unsigned long long)a->tap.c.lines,
            (unsigned long long)a->tap.c.writes, (unsigned long long)a->tap.c.evictions,
            (unsigned long long)a->tap.c.deletions, (unsigned long long)a->tap.c.lost_counted,
            (unsigned long long)a->tap.c.skipped_reported, (unsigned long long)a->tap.c.reconnects,
            (unsigned long long)a->tap.c.restarts, (unsigned long long)a->tap.c.paused);
    routes_health_shadows(a, &b);
    buf_printf(&b, "\"connections\":%llu,\"samples\":%llu}\n",
               (unsigned long long)a->px.m.connections_open,
               (unsigned long long)a->poller.counters.samples);
    routes_json(resp, status, &b);
}

static void routes_metrics(const struct admin_http_request *req, struct admin_http_response *resp)
{
    if (!routes_admit(req, resp))
        return;
    struct app *a = req->ud;
    struct prom_writer w;
    struct scrape_sources src = {
        &a->px, &a->rec, &a->poller, a->sink.kind, a->have_last ? &a->last : NULL, &a->shadows
    };
    admin_http_set_status(resp, 200, PROM_CONTENT_TYPE);
    prom_writer_init(&w, admin_http_body_sink, resp);
    if (scrape_write(&w, &src) != PROM_OK)
        admin_http_respond(resp, 500, "text/plain", "metrics failed\n", 15);
}

static void routes_runs(const struct admin_http_request *req, struct admin_http_response *resp)
{
    if (!routes_admit(req, resp))
        return;
    struct app *a = req->ud;
    struct buf b;
    buf_init(&b, JSONB_MAX);
    buf_printf(&b, "{\"current\":{\"run_id\":%lld,\"kind\":\"%s\",\"name\":", (long long)a->run_id,
               a->cfg.run_kind ? a->cfg.run_kind : "proxy");
    jsonb_string(&b, a->cfg.run_name, strlen(a->cfg.run_name));
    buf_printf(&b, ",\"started_ns\":%lld,\"upstream\":", (long long)a->started_ns);
    jsonb_string(&b, a->cfg.proxy.upstream_text, strlen(a->cfg.proxy.upstream_text));
    buf_printf(&b,
               ",\"rows_recorded\":%llu,\"rows_dropped\":%llu,\"phase_id\":%lld,"
               "\"stats_interval_ms\":%u},\"earlier\":[%s],\"runs\":[",
               (unsigned long long)a->rec.written, (unsigned long long)a->rec.dropped,
               (long long)atomic_load(&a->phase_id), a->cfg.stats_interval_ms,
               a->runs_all ? a->runs_all : "");
    /* the running run first (newest), then the file's earlier ones */
    buf_printf(&b, "{\"run_id\":%lld,\"kind\":\"%s\",\"name\":", (long long)a->run_id,
               a->cfg.run_kind ? a->cfg.run_kind : "proxy");
    jsonb_string(&b, a->cfg.run_name, strlen(a->cfg.run_name));
    buf_printf(&b,
               ",\"started_ns\":%lld,\"ended_ns\":null,\"rows_recorded\":%llu,"
               "\"crashed\":false,\"upstream\":",
               (long long)a->started_ns, (unsigned long long)a->rec.written);
    jsonb_string(&b, a->cfg.proxy.upstream_text, strlen(a->cfg.proxy.upstream_text));
    const struct slab_settings *reported = jobs_reported(&a->jobs);
    if (reported)
        buf_printf(&b,
                   ",\"settings\":{\"growth_factor\":%g,\"chunk_size\":%u,"
                   "\"item_size_max\":%u,\"slab_page_size\":%u}}",
                   reported->growth_factor, reported->chunk_size_min, reported->item_size_max,
                   reported->slab_page_size);
    else
        buf_puts(&b, ",\"settings\":null}");
    if (a->runs_all && *a->runs_all)
        buf_printf(&b, ",%s", a->runs_all);
    buf_puts(&b, "]}\n");
    routes_json(resp, 200, &b);
}

/* GET /api/slabs[?target=NAME]: a target's latest sample (the primary's
 * by default, a shadow's by its name), and "targets": every target's name,
 * the primary first. */
static void routes_slabs(const struct admin_http_request *req, struct admin_http_response *resp)
{
    if (!routes_admit(req, resp))
        return;
    struct app *a = req->ud;
    const struct shadow_set *set = &a->shadows;
    char target[SHADOW_NAME_MAX + 1];
    const struct stats_sample *last = a->have_last ? &a->last : NULL;
    const char *name = "primary";
    struct buf b;
    int n = admin_http_query_param(req, "target", target, sizeof target);
    if (n == 0 || (n < 0 && n != -ADMIN_HTTP_ERR_NO_PARAM)) {
        routes_error(resp, 400, "{\"error\":\"?target= must name a target (see targets)\"}\n");
        return;
    }
    if (n > 0 && strcmp(target, "primary")) {
        unsigned i = 0;
        while (i < set->n && strcmp(set->sh[i].name, target))
            i++;
        if (i == set->n) {
            buf_init(&b, JSONB_MAX);
            buf_puts(&b, "{\"error\":\"no such target\",\"targets\":[\"primary\"");
            for (unsigned k = 0; k < set->n; k++) {
                buf_puts(&b, ",");
                jsonb_string(&b, set->sh[k].name, strlen(set->sh[k].name));
            }
            buf_puts(&b, "]}\n");
            routes_json(resp, 404, &b);
            return;
        }
        name = set->sh[i].name;
        last = set->sh[i].have_last ? &set->sh[i].last : NULL;
    }
    if (!last) {
        routes_error(resp, 503, "{\"error\":\"no stats sample yet\"}\n");
        return;
    }
    buf_init(&b, JSONB_MAX);
    buf_printf(&b, "{\"run_id\":%lld,\"t_ns\":%lld,\"target\":", (long long)a->run_id,
               (long long)last->t_ns);
    jsonb_string(&b, name, strlen(name));
    buf_puts(&b, ",\"targets\":[\"primary\"");
    for (unsigned k = 0; k < set->n; k++) {
        buf_puts(&b, ",");
        jsonb_string(&b, set->sh[k].name, strlen(set->sh[k].name));
    }
    buf_puts(&b, "],\"classes\":[");
    bool first = true;
    for (unsigned id = 0; id <= last->max_class_id; id++) {
        const struct stats_kv_list *kv = stats_sample_class(last, id);
        int64_t allocated, waste;
        if (!kv)
            continue;
        buf_printf(&b, "%s{\"class_id\":%u", first ? "" : ",", id);
        first = false;
        if (stats_sample_class_waste(last, id, &allocated, &waste))
            buf_printf(&b, ",\"allocated\":%lld,\"waste_bytes\":%lld", (long long)allocated,
                       (long long)waste);
        buf_puts(&b, ",\"fields\":");
        stats_json_object(&b, kv);
        buf_puts(&b, "}");
    }
    /* memcached's totals of the same sample: what `slabtap top --proxy`
     * shows in its header (ops/s, get/s, hit ratio, uptime) */
    buf_puts(&b, "],\"stats\":");
    stats_json_object(&b, &last->stats);
    buf_puts(&b, ",\"slab_globals\":");
    stats_json_object(&b, &last->slab_globals);
    buf_puts(&b, "}\n");
    routes_json(resp, 200, &b);
}

static void routes_phase(const struct admin_http_request *req, struct admin_http_response *resp)
{
    if (!routes_admit(req, resp))
        return;
    struct app *a = req->ud;
    char name[APP_PHASE_NAME_MAX + 1];
    struct buf b;
    int n = admin_http_query_param(req, "name", name, sizeof name);
    if (n <= 0) {
        routes_error(resp, 400, "{\"error\":\"need ?name=PHASE (1 to 128 bytes)\"}\n");
        return;
    }
    int64_t id = app_mark_phase(a, name);
    if (id <= 0) {
        /* the recorder's job queue is full: say so, never confirm a phase
         * that will not be stored (counted in jobs_dropped) */
        routes_error(resp, 503, "{\"error\":\"the recorder cannot take the phase now; retry\"}\n");
        return;
    }
    buf_init(&b, JSONB_MAX);
    buf_printf(&b, "{\"phase_id\":%lld,\"name\":", (long long)id);
    jsonb_string(&b, name, (size_t)n);
    buf_puts(&b, "}\n");
    routes_json(resp, 200, &b);
}

/* The page and its assets (server/webui.h). They hold no data, so with
 * --http-token they are served without it (a browser sends no Bearer
 * header when it opens a page; the page sends the token it is given in
 * its URL, /#token=TOKEN, with every API call); otherwise admitted as
 * every route is. */
static void routes_webui(const struct admin_http_request *req, struct admin_http_response *resp)
{
    const struct app *a = req->ud;
    if (!a->cfg.http_token && !routes_admit(req, resp))
        return;
    if (webui_serve(req, resp) != ADMIN_HTTP_OK)
        admin_http_respond(resp, 500, "text/plain; charset=utf-8", "page failed\n", 12);
}

#define ROUTES_WEBUI(path) { "GET", path, routes_webui },
/* /api/run/...: the live page's queries (server/webapi.h) */
#define ROUTES_WEBAPI(fn, route) \
    static void fn(const struct admin_http_request *req, struct admin_http_response *resp) \
    { \
        if (routes_admit(req, resp)) \
            webapi_handle(&((struct app *)req->ud)->web, route, req, resp); \
    }
ROUTES_WEBAPI(routes_run_sizes, WEBAPI_SIZES)
ROUTES_WEBAPI(routes_run_classes, WEBAPI_CLASSES)
ROUTES_WEBAPI(routes_run_series, WEBAPI_SERIES)
ROUTES_WEBAPI(routes_run_traffic, WEBAPI_TRAFFIC)
ROUTES_WEBAPI(routes_run_advice, WEBAPI_ADVICE)
ROUTES_WEBAPI(routes_run_reads, WEBAPI_READS)
ROUTES_WEBAPI(routes_run_reports, WEBAPI_REPORTS)
ROUTES_WEBAPI(routes_run_evictions, WEBAPI_EVICTIONS)
ROUTES_WEBAPI(routes_run_snapshot, WEBAPI_SNAPSHOT)
ROUTES_WEBAPI(routes_run_targets, WEBAPI_TARGETS)

const struct admin_http_route routes_table[] = {
    // clang-format off: one entry per path of the page
    WEBUI_PATHS(ROUTES_WEBUI)
    // clang-format on
    { "GET", "/health", routes_health },
    { "GET", "/metrics", routes_metrics },
    { "GET", "/api/runs", routes_runs },
    { "GET", "/api/slabs", routes_slabs },
    { "POST", "/api/phase", routes_phase },
    { "GET", "/api/run/sizes", routes_run_sizes },
    { "GET", "/api/run/classes", routes_run_classes },
    { "GET", "/api/run/series", routes_run_series },
    { "GET", "/api/run/traffic", routes_run_traffic },
    { "GET", "/api/run/advice", routes_run_advice },
    { "GET", "/api/run/reads", routes_run_reads },
    { "GET", "/api/run/reports", routes_run_reports },
    { "GET", "/api/run/evictions", routes_run_evictions },
    { "GET", "/api/run/snapshot", routes_run_snapshot },
    { "GET", "/api/run/targets", routes_run_targets },
};

const size_t routes_count = sizeof routes_table / sizeof routes_table[0];
