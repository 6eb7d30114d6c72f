/* app: store + recorder + proxy + poller + admin HTTP, started and stopped
 * in the one order that loses nothing. Loop thread only, except
 * app_mark_phase (atomics plus the recorder's locked job queue). */
#include "server/app.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/jsonb.h"
#include "core/log.h"
#include "core/sample.h"
#include "protocol/stats_json.h"
#include "server/prom.h"
#include "server/webui.h"

/* --- samples -> database ------------------------------------------------- */

static struct rec_job *job_new(enum rec_job_kind kind, int64_t t_ns)
{
    struct rec_job *j = calloc(1, sizeof *j);
    if (j) {
        j->kind = kind;
        j->t_ns = t_ns;
    }
    return j;
}

static struct rec_job *sample_job(struct app *a, const struct stats_sample *s, bool final)
{
    struct rec_job *j = job_new(REC_JOB_SAMPLE, s->t_ns);
    struct jsonb b;
    if (!j)
        return NULL;
    j->phase_id = atomic_load(&a->phase_id);
    j->final = final;
    jsonb_init(&b);
    stats_json_object(&b, &s->stats);
    j->text = jsonb_take(&b);
    j->class_ids = calloc(s->n_classes ? s->n_classes : 1, sizeof *j->class_ids);
    j->class_json = calloc(s->n_classes ? s->n_classes : 1, sizeof *j->class_json);
    if (!j->text || !j->class_ids || !j->class_json)
        goto fail;
    for (unsigned id = 0; id <= s->max_class_id; id++) {
        const struct stats_kv_list *kv = stats_sample_class(s, id);
        if (!kv || j->nclasses == s->n_classes)
            continue;
        stats_json_object(&b, kv);
        j->class_json[j->nclasses] = jsonb_take(&b);
        if (!j->class_json[j->nclasses])
            goto fail;
        j->class_ids[j->nclasses++] = id;
    }
    return j;
fail:
    rec_job_free(j);
    return NULL;
}

/* --- the ladder writes are tagged with ---------------------------------- */

/* One run_meta entry, written with the rows (value is taken over). */
static void meta_job(struct app *a, int64_t t_ns, const char *key, char *value)
{
    struct rec_job *j = job_new(REC_JOB_META, t_ns);
    if (!j || !value || !(j->version = strdup(key))) {
        free(value);
        rec_job_free(j);
        return;
    }
    j->text = value;
    rec_push_job(&a->rec, j);
}

/* run_meta 'ladder': what the writes are tagged with from now on, read
 * back by the view run_ladder and checked by `model predict`. */
static char *ladder_json(const struct app *a)
{
    const struct ladder_choice *c = &a->ladder_choice;
    struct jsonb b;
    char flags[1024];
    ladder_choice_flags(c, flags, sizeof flags);
    jsonb_init(&b);
    jsonb_printf(&b, "{\"origin\":\"%s\",\"trusted\":%s,\"partial\":%s,\"flags\":",
                 ladder_origin_key(c->origin), c->trusted ? "true" : "false",
                 c->partial ? "true" : "false");
    jsonb_string(&b, flags, strlen(flags));
    jsonb_raw(&b, ",\"chunk_sizes\":[");
    for (uint32_t id = 1; id <= c->ladder.n_classes; id++)
        jsonb_printf(&b, "%s%u", id > 1 ? "," : "", c->ladder.cls[id].chunk_size);
    jsonb_raw(&b, "],\"note\":");
    jsonb_string(&b, c->note, strlen(c->note));
    jsonb_raw(&b, "}");
    return jsonb_take(&b);
}

/* The chunk sizes of the classes with a page, into a->ladder_seen; true
 * when one is new. A class with another size than before means memcached
 * restarted with another ladder: what was seen before is forgotten. */
static bool app_ladder_observe(struct app *a, const struct stats_sample *s)
{
    bool fresh = false;
    for (int pass = 0; pass < 2; pass++) {
        bool contradicted = false;
        for (unsigned id = 1; id <= s->max_class_id && id <= SLAB_MODEL_MAX_CLASSES; id++) {
            int64_t chunk;
            if (!stats_sample_get(s, id, "chunk_size", &chunk) || chunk <= 0)
                continue;
            int r = ladder_observed_add(&a->ladder_seen, id, (uint64_t)chunk);
            fresh |= r == 1;
            contradicted |= r < 0;
        }
        if (!contradicted)
            break;
        ladder_observed_init(&a->ladder_seen);
        fresh = true;
    }
    return fresh;
}

/* The ladder each write is tagged with: memcached's `stats settings`, the
 * flags the proxy knows (cfg.memcached_flags) and the chunk sizes memcached
 * shows, through the same rule `model predict` applies to the recorded run
 * (model/ladder_source.h); chosen again when the settings change or a class
 * shows a chunk size for the first time. A ladder that disagrees with
 * memcached is logged as a warning, and recorded (run_meta 'ladder'). */
static void app_ladder_update(struct app *a, const struct stats_sample *s)
{
    struct ladder_choice c;
    char err[160] = "";
    bool redo = false;
    if (s->has_settings && (s->settings_changed || !a->ladder_have_reported)) {
        if (slab_settings_from_stats(&a->ladder_reported, stats_sample_setting_lookup, (void *)s,
                                     err, sizeof err) != SLAB_OK) {
            a->ladder_have_reported = false;
            a->px.ladder = NULL;
            log_warn("memcached's settings give no ladder (%s); writes stay untagged", err);
            return;
        }
        if (a->ladder_have_reported) /* restarted with other settings */
            ladder_observed_init(&a->ladder_seen);
        a->ladder_have_reported = true;
        redo = true;
    }
    if (!a->ladder_have_reported)
        return;
    redo |= app_ladder_observe(a, s);
    if (!redo)
        return;
    if (ladder_choose(&a->ladder_reported, a->cfg.memcached_flags,
                      s->has_version ? s->version : NULL, &a->ladder_seen, &c, err,
                      sizeof err) != SLAB_OK) {
        a->px.ladder = NULL;
        log_warn("memcached's settings give no ladder (%s); writes stay untagged", err);
        return;
    }
    bool had = a->px.ladder != NULL;
    bool same_ladder = had && slab_ladder_same(&c.ladder, &a->ladder);
    bool same = same_ladder && c.origin == a->ladder_choice.origin &&
                c.trusted == a->ladder_choice.trusted && !strcmp(c.note, a->ladder_choice.note);
    a->ladder_choice = c;
    a->ladder = c.ladder;
    a->px.ladder = &a->ladder;
    if (same)
        return;
    char flags[1024];
    ladder_choice_flags(&c, flags, sizeof flags);
    if (!c.trusted || (c.mismatch_class && !same_ladder))
        log_warn("slab ladder %s (%u classes) from %s: %s", flags, c.ladder.n_classes,
                 ladder_origin_str(c.origin), c.note);
    else if (c.origin == LADDER_SETTINGS && !c.note[0])
        log_debug("slab ladder %s (%u classes) from %s", flags, c.ladder.n_classes,
                  ladder_origin_str(c.origin));
    else
        log_info("slab ladder %s (%u classes) from %s%s%s", flags, c.ladder.n_classes,
                 ladder_origin_str(c.origin), c.note[0] ? ": " : "", c.note);
    meta_job(a, s->t_ns, "ladder", ladder_json(a));
}

static void settings_job(struct app *a, const struct stats_sample *s)
{
    struct rec_job *j = job_new(REC_JOB_SETTINGS, s->t_ns);
    struct jsonb b;
    if (!j)
        return;
    jsonb_init(&b);
    stats_json_object(&b, &s->settings);
    j->text = jsonb_take(&b);
    j->version = strdup(s->has_version ? s->version : "");
    if (!j->text || !j->version) {
        rec_job_free(j);
        return;
    }
    rec_push_job(&a->rec, j);
}

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

static void on_sample(void *ud, const struct stats_sample *s)
{
    struct app *a = ud;
    struct rec_job *j;
    bool final = a->closing && s->requested && app_final_sample(a, s);
    if (s->has_settings && (s->settings_changed || !a->ladder_have_reported))
        settings_job(a, s);
    app_ladder_update(a, s);
    if ((j = sample_job(a, s, final)))
        rec_push_job(&a->rec, j);
    if (stats_sample_copy(&a->last, s) == 0)
        a->have_last = true;
    a->last_sample_ns = clock_wall_ns();
    if (final)
        app_final_done(a);
}

/* --- phases ------------------------------------------------------------------ */

int64_t app_mark_phase(struct app *a, const char *name)
{
    int64_t id = atomic_fetch_add(&a->next_phase_id, 1);
    struct rec_job *j = job_new(REC_JOB_PHASE, clock_wall_ns());
    if (!j)
        return -1;
    j->phase_id = id;
    j->text = strndup(name, APP_PHASE_NAME_MAX);
    if (!j->text) {
        rec_job_free(j);
        return -1;
    }
    if (!rec_push_job(&a->rec, j))
        return -1; /* not queued: the caller must not confirm it */
    atomic_store(&a->phase_id, id);
    return id;
}

/* --- admin HTTP routes ------------------------------------------------------- */

static void json_reply(struct admin_http_response *resp, int status, struct jsonb *b)
{
    if (b->failed)
        admin_http_respond(resp, 500, "text/plain", "out of memory\n", 14);
    else
        admin_http_respond(resp, status, "application/json", b->data, b->len);
    jsonb_free(b);
}

/* What a probe needs: 200 only when memcached answers the stats poll, a
 * pooled connection is up and the recorder keeps up; else 503 and why. */
static const char *app_health(const struct app *a, int *status)
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

static bool app_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    if (ss->ss_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
    return false;
}

/* "HOST:PORT" as a browser sends it for this endpoint: the bound address,
 * or a loopback name for the same port. */
static bool app_host_ok(const struct app *a, const char *host)
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
static bool app_admit(const struct admin_http_request *req, struct admin_http_response *resp)
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
    if (host && !app_host_ok(a, host)) {
        admin_http_respond(resp, 403, "text/plain; charset=utf-8", "wrong Host\n", 11);
        return false;
    }
    if (origin && strcmp(req->method, "GET") && strcmp(req->method, "HEAD") &&
        (strncmp(origin, "http://", 7) || !app_host_ok(a, origin + 7))) {
        admin_http_respond(resp, 403, "text/plain; charset=utf-8", "cross-origin\n", 13);
        return false;
    }
    return true;
}

static void route_health(const struct admin_http_request *req, struct admin_http_response *resp)
{
    if (!app_admit(req, resp))
        return;
    struct app *a = req->ud;
    struct jsonb b;
    int status;
    const char *state = app_health(a, &status);
    int64_t age = a->last_sample_ns ? (clock_wall_ns() - a->last_sample_ns) / 1000000 : -1;
    jsonb_init(&b);
    jsonb_printf(&b, "{\"status\":\"%s\",\"run_id\":%lld,\"listen\":", state,
                 (long long)rec_run_id(&a->rec));
    /* the addresses bound (a port asked as 0 is the one the kernel gave) */
    jsonb_string(&b, a->px.listen_text, strlen(a->px.listen_text));
    jsonb_raw(&b, ",\"http\":");
    jsonb_string(&b, a->http_host, strlen(a->http_host));
    jsonb_raw(&b, ",\"upstream\":{\"address\":");
    jsonb_string(&b, a->cfg.proxy.upstream_text, strlen(a->cfg.proxy.upstream_text));
    /* last_error only while it is the reason: a stale one after recovery
     * would send a reader after a problem that is gone */
    jsonb_printf(&b,
                 ",\"reachable\":%s,\"pool_up\":%s,\"last_error\":\"%s\",\"reconnects\":%llu,"
                 "\"last_sample_age_ms\":%lld},",
                 a->poller.connected ? "true" : "false", a->px.upstream_up ? "true" : "false",
                 status == 200 ? "" : poller_error_str(a->poller.last_error),
                 (unsigned long long)a->poller.counters.reconnects, (long long)age);
    jsonb_printf(&b,
                 "\"recorder\":{\"queue_depth\":%zu,\"queue_bound\":%zu,\"blocked\":%s,"
                 "\"on_full\":\"%s\",\"rows_recorded\":%llu,\"rows_dropped\":%llu,"
                 "\"write_errors\":%llu,\"jobs_dropped\":%llu,\"lost_total\":%llu,\"lost\":{",
                 rec_depth(&a->rec), a->rec.cap, rec_blocked(&a->rec) ? "true" : "false",
                 a->rec.on_full == REC_DROP ? "drop" : "block",
                 (unsigned long long)rec_recorded(&a->rec), (unsigned long long)a->rec.dropped,
                 (unsigned long long)a->rec.write_errors, (unsigned long long)a->rec.jobs_dropped,
                 (unsigned long long)rec_lost_total(&a->rec));
    for (int reason = 0; reason < REC_LOST__COUNT; reason++)
        jsonb_printf(&b, "%s\"%s\":%llu", reason ? "," : "", rec_loss_label((enum rec_loss)reason),
                     (unsigned long long)rec_lost(&a->rec, (enum rec_loss)reason));
    jsonb_printf(&b, "},\"reads_recorded\":%llu,\"reads_lost\":{",
                 (unsigned long long)rec_reads_recorded(&a->rec));
    for (int reason = 0; reason < REC_LOST__COUNT; reason++)
        jsonb_printf(&b, "%s\"%s\":%llu", reason ? "," : "", rec_loss_label((enum rec_loss)reason),
                     (unsigned long long)rec_reads_lost(&a->rec, (enum rec_loss)reason));
    jsonb_raw(&b, "}},");
    /* the store and the spill: why recording is degraded while it is */
    char why[512];
    struct rec_spill_state sp;
    bool degraded = rec_degraded(&a->rec, why, sizeof why);
    rec_spill_state(&a->rec, &sp);
    jsonb_raw(&b, "\"store\":{\"kind\":");
    jsonb_string(&b, a->sink.kind == SINK_PG ? "postgresql" : "sqlite",
                 a->sink.kind == SINK_PG ? 10 : 6);
    /* the file written now (rotation changes it) and retention's figures */
    char file[1024];
    struct retain_stats rs;
    uint64_t rotations;
    rec_retain_state(&a->rec, &rs, file, sizeof file, &rotations);
    jsonb_raw(&b, ",\"name\":");
    if (a->sink.kind == SINK_PG)
        jsonb_string(&b, sink_name(&a->sink), strlen(sink_name(&a->sink)));
    else
        jsonb_string(&b, file, strlen(file));
    jsonb_printf(&b,
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
    jsonb_printf(&b, ",\"file\":{\"fault\":\"%s\",\"fault_ns\":%lld,\"faults\":%llu}",
                 fault == STORE_FILE_OK ? "" : store_file_state_label(fault),
                 (long long)(fault == STORE_FILE_OK ? 0 : fault_ns),
                 (unsigned long long)fault_events);
    jsonb_printf(&b, ",\"degraded\":%s,\"reason\":", degraded ? "true" : "false");
    jsonb_string(&b, degraded ? why : "", degraded ? strlen(why) : 0);
    jsonb_printf(&b,
                 ",\"spill\":{\"enabled\":%s,\"backlog_batches\":%llu,\"backlog_rows\":%llu,"
                 "\"backlog_bytes\":%llu,\"spilled\":%llu,\"shipped\":%llu}},",
                 sp.enabled ? "true" : "false", (unsigned long long)sp.batches,
                 (unsigned long long)sp.rows, (unsigned long long)sp.bytes,
                 (unsigned long long)sp.spilled, (unsigned long long)sp.shipped);
    jsonb_printf(&b, "\"connections\":%llu,\"samples\":%llu}\n",
                 (unsigned long long)a->px.m.connections_open,
                 (unsigned long long)a->poller.counters.samples);
    json_reply(resp, status, &b);
}

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

static uint64_t metric_value(const struct app *a, size_t i)
{
    const uint64_t *v = (const uint64_t *)&a->px.m;
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

/* memcached-wide families from the latest sample, as memcached_exporter
 * exports them. memcached_up is 1 while the stats poller's connection is
 * up and a sample has arrived; the other families have samples only then
 * (the exporter writes none when it cannot reach memcached either), so a
 * graph shows a gap, never a stale value as if it were current. */
static void metrics_memcached(struct app *a, struct prom_writer *w)
{
    bool up = a->poller.connected && a->have_last;
    int64_t v, set, hits, misses, badval;

    prom_declare(w, "memcached_up", PROM_GAUGE,
                 "Could the memcached server be reached (slabtap's stats poller is connected "
                 "and has a sample).");
    prom_sample_u64(w, NULL, 0, up);
    for (size_t i = 0; i < sizeof memcached_families / sizeof memcached_families[0]; i++) {
        prom_declare(w, memcached_families[i].name, memcached_families[i].type,
                     memcached_families[i].help);
        if (up && stats_sample_global(&a->last, memcached_families[i].field, &v))
            prom_sample_i64(w, NULL, 0, v);
    }
    prom_declare(w, "memcached_commands_total", PROM_COUNTER, MEMCACHED_COMMANDS_HELP);
    for (size_t i = 0; up && i < sizeof memcached_commands / sizeof memcached_commands[0]; i++) {
        struct prom_label l[2] = { { "command", memcached_commands[i].command },
                                   { "status", memcached_commands[i].status } };
        if (stats_sample_global(&a->last, memcached_commands[i].field, &v))
            prom_sample_i64(w, l, 2, v);
    }
    if (up && stats_sample_global(&a->last, "cmd_set", &set) &&
        stats_sample_global(&a->last, "cas_hits", &hits) &&
        stats_sample_global(&a->last, "cas_misses", &misses) &&
        stats_sample_global(&a->last, "cas_badval", &badval)) {
        struct prom_label l[2] = { { "command", "set" }, { "status", "hit" } };
        prom_sample_i64(w, l, 2, set - (hits + misses + badval));
    }
}

static void metrics_classes(struct app *a, struct prom_writer *w)
{
    for (size_t g = 0; g < sizeof class_families / sizeof class_families[0]; g++) {
        prom_declare(w, class_families[g].name, class_families[g].type, class_families[g].help);
        for (unsigned id = 0; a->have_last && id <= a->last.max_class_id; id++) {
            int64_t v, chunk, used, req;
            char label[16];
            if (!stats_sample_class(&a->last, id))
                continue;
            if (class_families[g].field) {
                if (!stats_sample_get(&a->last, id, class_families[g].field, &v))
                    continue;
            } else {
                if (!stats_sample_get(&a->last, id, "chunk_size", &chunk) ||
                    !stats_sample_get(&a->last, id, "used_chunks", &used))
                    continue;
                if (!stats_sample_get(&a->last, id, "mem_requested", &req))
                    req = 0;
                v = chunk * used - req;
            }
            snprintf(label, sizeof label, "%u", id);
            struct prom_label l = { "slab", label };
            prom_sample_i64(w, &l, 1, v);
        }
    }
}

static void route_metrics(const struct admin_http_request *req, struct admin_http_response *resp)
{
    if (!app_admit(req, resp))
        return;
    struct app *a = req->ud;
    struct prom_writer w;
    char name[PROM_NAME_MAX + 1];
    admin_http_set_status(resp, 200, PROM_CONTENT_TYPE);
    prom_writer_init(&w, admin_http_body_sink, resp);
    a->px.m.recorder_queue_depth = rec_depth(&a->rec);
    a->px.m.rows_dropped = a->rec.dropped;
    a->px.m.recorder_stalls = a->rec.stalls;
    struct rec_spill_state sp;
    char why[8];
    rec_spill_state(&a->rec, &sp);
    a->px.m.recording_degraded = rec_degraded(&a->rec, why, sizeof why);
    a->px.m.spill_backlog_rows = sp.rows;
    a->px.m.spill_backlog_bytes = sp.bytes;
    a->px.m.rows_spilled = sp.spilled;
    a->px.m.rows_shipped = sp.shipped;
    a->px.m.buffer_bytes = pbuf_pool_bytes(&a->px.pool) + a->px.pending_bytes;
    struct retain_stats rs;
    char file[1024];
    rec_retain_state(&a->rec, &rs, file, sizeof file, &a->px.m.db_rotations);
    a->px.m.rows_expired = rs.rows_expired;
    a->px.m.retention_bound_reached = rs.bound_reached;
    a->px.m.oldest_row_timestamp_seconds =
        rs.oldest_ns > 0 ? (uint64_t)(rs.oldest_ns / 1000000000) : 0;
    /* the file on disk, WAL included, retention or not (rs.file_bytes is
     * retention's view: pages in use, and only while retention is on) */
    a->px.m.db_file_bytes = a->sink.kind == SINK_SQLITE ? retain_disk_bytes(file) : 0;
    a->px.m.db_free_bytes = rs.free_bytes;
    a->px.m.retention_steps = rs.steps;
    a->px.m.retention_step_max_us = rs.step_max_us;
    a->px.m.retention_us = rs.step_total_us;
    for (size_t i = 0; i < sizeof proxy_metrics / sizeof proxy_metrics[0]; i++) {
        snprintf(name, sizeof name, "slabtap_%s%s", proxy_metrics[i].name,
                 proxy_metrics[i].type == PROM_COUNTER ? "_total" : "");
        prom_declare(&w, name, proxy_metrics[i].type, proxy_metrics[i].help);
        if (proxy_metrics[i].scale == 1)
            prom_sample_u64(&w, NULL, 0, metric_value(a, i));
        else
            prom_sample_double(&w, NULL, 0,
                               (double)metric_value(a, i) / (double)proxy_metrics[i].scale);
    }
    prom_declare(&w, "slabtap_requests_by_command_total", PROM_COUNTER,
                 "Requests parsed from clients, by command");
    for (int c = 0; c < MC_CMD_COUNT; c++) {
        if (!a->px.requests_by_cmd[c])
            continue;
        struct prom_label l = { "command", mc_cmd_name((enum mc_cmd)c) };
        prom_sample_u64(&w, &l, 1, a->px.requests_by_cmd[c]);
    }
    prom_declare(&w, "slabtap_rows_lost_total", PROM_COUNTER,
                 "Writes not recorded, by reason: queue_full (--on-full drop), write_error "
                 "(the store failed past --max-stall), shutdown (still failing at exit), "
                 "spill_full (past --spill-max), store_unavailable (--record-optional), "
                 "file_deleted (the SQLite file was deleted or replaced while recording), "
                 "wal_full (past --wal-max while a reader held a snapshot)");
    for (int reason = 0; reason < REC_LOST__COUNT; reason++) {
        struct prom_label l = { "reason", rec_loss_label((enum rec_loss)reason) };
        prom_sample_u64(&w, &l, 1, rec_lost(&a->rec, (enum rec_loss)reason));
    }
    prom_declare(&w, "slabtap_read_rows_lost_total", PROM_COUNTER,
                 "Read rows (one per key asked for) the writer could not record, by reason "
                 "(as slabtap_rows_lost_total; read rows dropped from a full queue are counted "
                 "there, with the writes)");
    for (int reason = 0; reason < REC_LOST__COUNT; reason++) {
        struct prom_label l = { "reason", rec_loss_label((enum rec_loss)reason) };
        prom_sample_u64(&w, &l, 1, rec_reads_lost(&a->rec, (enum rec_loss)reason));
    }
    prom_declare(&w, "slabtap_recorder_failing", PROM_GAUGE,
                 "1 while the store fails to write (batches are kept and tried again)");
    prom_sample_u64(&w, NULL, 0, rec_failing_since(&a->rec, NULL, 0) != 0);
    prom_declare(&w, "slabtap_upstream_up", PROM_GAUGE,
                 "1 when the stats connection to memcached is up");
    prom_sample_u64(&w, NULL, 0, a->poller.connected);
    prom_declare(&w, "slabtap_stats_samples_total", PROM_COUNTER, "Stats samples taken");
    prom_sample_u64(&w, NULL, 0, a->poller.counters.samples);
    metrics_memcached(a, &w);
    metrics_classes(a, &w);
    if (prom_writer_finish(&w) != PROM_OK)
        admin_http_respond(resp, 500, "text/plain", "metrics failed\n", 15);
}

static void route_runs(const struct admin_http_request *req, struct admin_http_response *resp)
{
    if (!app_admit(req, resp))
        return;
    struct app *a = req->ud;
    struct jsonb b;
    jsonb_init(&b);
    jsonb_printf(&b, "{\"current\":{\"run_id\":%lld,\"name\":", (long long)a->run_id);
    jsonb_string(&b, a->cfg.run_name, strlen(a->cfg.run_name));
    jsonb_printf(&b, ",\"started_ns\":%lld,\"upstream\":", (long long)a->started_ns);
    jsonb_string(&b, a->cfg.proxy.upstream_text, strlen(a->cfg.proxy.upstream_text));
    jsonb_printf(&b,
                 ",\"rows_recorded\":%llu,\"rows_dropped\":%llu,\"phase_id\":%lld,"
                 "\"stats_interval_ms\":%u},\"earlier\":%s,\"runs\":[",
                 (unsigned long long)a->rec.written, (unsigned long long)a->rec.dropped,
                 (long long)atomic_load(&a->phase_id), a->cfg.stats_interval_ms,
                 a->runs_before ? a->runs_before : "[]");
    /* the running run first (newest), then the file's earlier ones */
    jsonb_printf(&b, "{\"run_id\":%lld,\"name\":", (long long)a->run_id);
    jsonb_string(&b, a->cfg.run_name, strlen(a->cfg.run_name));
    jsonb_printf(&b,
                 ",\"started_ns\":%lld,\"ended_ns\":null,\"rows_recorded\":%llu,"
                 "\"crashed\":false,\"upstream\":",
                 (long long)a->started_ns, (unsigned long long)a->rec.written);
    jsonb_string(&b, a->cfg.proxy.upstream_text, strlen(a->cfg.proxy.upstream_text));
    if (a->ladder_have_reported)
        jsonb_printf(&b,
                     ",\"settings\":{\"growth_factor\":%g,\"chunk_size\":%u,"
                     "\"item_size_max\":%u,\"slab_page_size\":%u}}",
                     a->ladder_reported.growth_factor, a->ladder_reported.chunk_size_min,
                     a->ladder_reported.item_size_max, a->ladder_reported.slab_page_size);
    else
        jsonb_raw(&b, ",\"settings\":null}");
    if (a->runs_all && *a->runs_all)
        jsonb_printf(&b, ",%s", a->runs_all);
    jsonb_raw(&b, "]}\n");
    json_reply(resp, 200, &b);
}

static void route_slabs(const struct admin_http_request *req, struct admin_http_response *resp)
{
    if (!app_admit(req, resp))
        return;
    struct app *a = req->ud;
    struct jsonb b;
    jsonb_init(&b);
    if (!a->have_last) {
        jsonb_raw(&b, "{\"error\":\"no stats sample yet\"}\n");
        json_reply(resp, 503, &b);
        return;
    }
    jsonb_printf(&b, "{\"run_id\":%lld,\"t_ns\":%lld,\"classes\":[", (long long)a->run_id,
                 (long long)a->last.t_ns);
    bool first = true;
    for (unsigned id = 0; id <= a->last.max_class_id; id++) {
        const struct stats_kv_list *kv = stats_sample_class(&a->last, id);
        int64_t chunk, used, reqd;
        if (!kv)
            continue;
        jsonb_printf(&b, "%s{\"class_id\":%u", first ? "" : ",", id);
        first = false;
        if (stats_sample_get(&a->last, id, "chunk_size", &chunk) &&
            stats_sample_get(&a->last, id, "used_chunks", &used)) {
            if (!stats_sample_get(&a->last, id, "mem_requested", &reqd))
                reqd = 0;
            jsonb_printf(&b, ",\"allocated\":%lld,\"waste_bytes\":%lld", (long long)(chunk * used),
                         (long long)(chunk * used - reqd));
        }
        jsonb_raw(&b, ",\"fields\":");
        stats_json_object(&b, kv);
        jsonb_raw(&b, "}");
    }
    /* memcached's totals of the same sample: what `slabtap top --proxy`
     * shows in its header (ops/s, get/s, hit ratio, uptime) */
    jsonb_raw(&b, "],\"stats\":");
    stats_json_object(&b, &a->last.stats);
    jsonb_raw(&b, ",\"slab_globals\":");
    stats_json_object(&b, &a->last.slab_globals);
    jsonb_raw(&b, "}\n");
    json_reply(resp, 200, &b);
}

static void route_phase(const struct admin_http_request *req, struct admin_http_response *resp)
{
    if (!app_admit(req, resp))
        return;
    struct app *a = req->ud;
    char name[APP_PHASE_NAME_MAX + 1];
    struct jsonb b;
    int n = admin_http_query_param(req, "name", name, sizeof name);
    jsonb_init(&b);
    if (n <= 0) {
        jsonb_raw(&b, "{\"error\":\"need ?name=PHASE (1 to 128 bytes)\"}\n");
        json_reply(resp, 400, &b);
        return;
    }
    int64_t id = app_mark_phase(a, name);
    if (id <= 0) {
        /* the recorder's job queue is full: say so, never confirm a phase
         * that will not be stored (counted in jobs_dropped) */
        jsonb_raw(&b, "{\"error\":\"the recorder cannot take the phase now; retry\"}\n");
        json_reply(resp, 503, &b);
        return;
    }
    jsonb_printf(&b, "{\"phase_id\":%lld,\"name\":", (long long)id);
    jsonb_string(&b, name, (size_t)n);
    jsonb_raw(&b, "}\n");
    json_reply(resp, 200, &b);
}

/* The page and its assets (server/webui.h). They hold no data, so with
 * --http-token they are served without it (a browser sends no Bearer
 * header when it opens a page; the page sends the token it is given in
 * its URL, /#token=TOKEN, with every API call); otherwise admitted as
 * every route is. */
static void route_webui(const struct admin_http_request *req, struct admin_http_response *resp)
{
    const struct app *a = req->ud;
    if (!a->cfg.http_token && !app_admit(req, resp))
        return;
    if (webui_serve(req, resp) != ADMIN_HTTP_OK)
        admin_http_respond(resp, 500, "text/plain; charset=utf-8", "page failed\n", 12);
}

#define APP_WEBUI_ROUTE(path) { "GET", path, route_webui },
/* /api/run/...: the live page's queries (server/webapi.h) */
#define APP_WEBAPI_ROUTE(fn, route) \
    static void fn(const struct admin_http_request *req, struct admin_http_response *resp) \
    { \
        if (app_admit(req, resp)) \
            webapi_handle(&((struct app *)req->ud)->web, route, req, resp); \
    }
APP_WEBAPI_ROUTE(route_run_sizes, WEBAPI_SIZES)
APP_WEBAPI_ROUTE(route_run_classes, WEBAPI_CLASSES)
APP_WEBAPI_ROUTE(route_run_series, WEBAPI_SERIES)
APP_WEBAPI_ROUTE(route_run_traffic, WEBAPI_TRAFFIC)
APP_WEBAPI_ROUTE(route_run_advice, WEBAPI_ADVICE)
APP_WEBAPI_ROUTE(route_run_reads, WEBAPI_READS)
APP_WEBAPI_ROUTE(route_run_reports, WEBAPI_REPORTS)

static const struct admin_http_route app_routes[] = {
    // clang-format off: one entry per path of the page
    WEBUI_PATHS(APP_WEBUI_ROUTE)
    // clang-format on
    { "GET", "/health", route_health },
    { "GET", "/metrics", route_metrics },
    { "GET", "/api/runs", route_runs },
    { "GET", "/api/slabs", route_slabs },
    { "POST", "/api/phase", route_phase },
    { "GET", "/api/run/sizes", route_run_sizes },
    { "GET", "/api/run/classes", route_run_classes },
    { "GET", "/api/run/series", route_run_series },
    { "GET", "/api/run/traffic", route_run_traffic },
    { "GET", "/api/run/advice", route_run_advice },
    { "GET", "/api/run/reads", route_run_reads },
    { "GET", "/api/run/reports", route_run_reports },
};

/* --- lifecycle ------------------------------------------------------------- */

/* Earlier runs of the file, read once before the writer thread owns it, so
 * /api/runs never reads SQLite on the loop. */
static void app_read_runs(struct app *a)
{
    sqlite3_stmt *st;
    struct jsonb b;
    jsonb_init(&b);
    jsonb_raw(&b, "[");
    if (sqlite3_prepare_v2(
            sink_sqlite(&a->sink),
            "SELECT json_object('run_id', run_id, 'name', name, 'started_ns', started_ns,"
            " 'ended_ns', ended_ns, 'upstream', upstream, 'rows_recorded', rows_recorded,"
            " 'rows_dropped', rows_dropped) FROM runs ORDER BY run_id DESC LIMIT 20",
            -1, &st, NULL) == SQLITE_OK) {
        for (int i = 0; sqlite3_step(st) == SQLITE_ROW; i++) {
            if (i)
                jsonb_raw(&b, ",");
            jsonb_raw(&b, (const char *)sqlite3_column_text(st, 0));
        }
        sqlite3_finalize(st);
    }
    jsonb_raw(&b, "]");
    a->runs_before = jsonb_take(&b);
}

/* The listeners first -- the proxy's and the admin endpoint's -- so that
 * a start that cannot bind leaves no database file (nor run row) behind. */
static int app_listen(struct app *a, const struct app_config *cfg, char *err, size_t errlen)
{
    struct sockaddr_storage bound;
    int len = sizeof bound;
    if (proxy_open(&a->px, a->loop, &cfg->proxy, &a->rec, err, errlen)) {
        log_error("%s", err);
        return -1;
    }
    if (!cfg->http_enabled)
        return 0;
    int rc = admin_http_open(&a->http, a->loop, (const struct sockaddr *)&cfg->http_addr,
                             app_routes, sizeof app_routes / sizeof app_routes[0], a);
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

/* A start that failed half way: close what was opened and turn the loop
 * until exactly that is closed -- never until the loop is empty, which
 * the caller's own handles (an experiment's memcached and signal
 * watchers) would make forever. */
static void app_teardown(struct app *a)
{
    a->teardown_pending = 1 + a->http_open + a->poller_open;
    if (a->http_open)
        admin_http_close(&a->http, on_teardown_http);
    if (a->poller_open)
        poller_close(&a->poller, on_teardown_poller);
    proxy_close(&a->px, on_teardown_proxy);
    for (int turns = 0; a->teardown_pending > 0 && turns < 100000; turns++)
        uv_run(a->loop, UV_RUN_ONCE);
    /* the close callbacks of the handles closed last, then the buffers:
     * nothing left for uv_loop_close to find */
    uv_run(a->loop, UV_RUN_NOWAIT);
    pbuf_pool_free(&a->px.pool);
}

int app_open(struct app *a, uv_loop_t *loop, const struct app_config *cfg)
{
    char err[1536];
    int rc = -1;
    memset(a, 0, sizeof *a);
    a->loop = loop;
    a->cfg = *cfg;
    stats_sample_init(&a->last);
    if (cfg->http_enabled && !cfg->http_token && !app_loopback(&cfg->http_addr)) {
        log_error("the admin endpoint binds beyond loopback: --http-token is required");
        goto out;
    }
    if (app_listen(a, cfg, err, sizeof err))
        goto unbind;
    /* the store: a SQLite file or PostgreSQL (record/sink.h) */
    const char *db = cfg->db_path;
    bool rotating = !sink_is_remote(db) && retain_path_rotates(db);
    if (rotating) { /* --db PATTERN: the file for now (record/retain.h) */
        if (retain_path_expand(db, (time_t)(clock_wall_ns() / 1000000000), a->db_file,
                               sizeof a->db_file)) {
            log_error("--db %s: the pattern expands to nothing or too long a name", db);
            goto unbind;
        }
        db = a->db_file;
    }
    sink_init(&a->sink, db);
    bool remote = a->sink.kind == SINK_PG;
    if (sink_open(&a->sink, db, err, sizeof err)) {
        if (!remote || !cfg->record_optional) {
            log_error("%s%s", err,
                      remote ? " (--record-optional: forward without recording until it answers)"
                             : "");
            goto unbind;
        }
        log_error("%s; --record-optional: forwarding without recording, every write counted "
                  "lost (store_unavailable) until it answers",
                  err);
    }
    /* the spill keeps what block mode would wait for; drop mode drops and counts */
    bool spilling = remote && cfg->spill_path && cfg->on_full == REC_BLOCK;
    if (spilling && spill_open(&a->spill, cfg->spill_path, cfg->spill_max, err, sizeof err)) {
        log_error("%s", err);
        sink_close(&a->sink);
        goto unbind;
    }
    if (spilling && a->spill.batches)
        log_warn("spill %s: %llu rows of an earlier run wait; shipped once the store writes",
                 a->spill.path, (unsigned long long)a->spill.rows);
    if (sink_sqlite(&a->sink)) {
        app_read_runs(a);
        a->runs_all = query_runs_json(sink_sqlite(&a->sink), -1, QUERY_RUNS_MAX - 1);
    } else {
        a->runs_before = strdup("[]"); /* the fleet's runs: ask PostgreSQL */
    }
    struct rec_config rc_cfg = {
        .cap = cfg->queue_rows,
        .on_full = cfg->on_full,
        .max_stall_ms = cfg->max_stall_ms,
        .spill = spilling ? &a->spill : NULL,
        .db = cfg->db_path,
        .retain = { cfg->retain_ns, cfg->max_db_bytes },
        .wal_max = cfg->wal_max,
        .rotate = rotating ? cfg->db_path : NULL,
        .path = db,
        .run = { cfg->run_name, cfg->proxy.upstream_text,
                 cfg->options_text ? cfg->options_text : "", keyfmt_mode_name(cfg->proxy.key_mode),
                 cfg->node ? cfg->node : "" },
    };
    /* --max-db-size and SQLite's WAL on a file system with less room than
     * both: a smaller WAL, or the bound cannot be met (said once, here) */
    uint64_t room;
    enum retain_room fit;
    if (!remote && cfg->max_db_bytes &&
        retain_room(db, cfg->max_db_bytes, &room, &rc_cfg.wal_pages, &fit) == 0) {
        if (fit == RETAIN_ROOM_SMALL_WAL)
            log_warn("--max-db-size %llu and SQLite's WAL (%u pages) do not both fit in the %llu "
                     "bytes the file system of %s has for them: the WAL is checkpointed every %u "
                     "pages instead",
                     (unsigned long long)cfg->max_db_bytes, RETAIN_WAL_PAGES,
                     (unsigned long long)room, db, rc_cfg.wal_pages);
        else if (fit == RETAIN_ROOM_NO)
            log_warn(
                "--max-db-size %llu cannot be met: the file system of %s has %llu bytes for "
                "the file and its WAL, the bound needs %llu more at least; the disk fills "
                "first (then the oldest rows are expired to make room)",
                (unsigned long long)cfg->max_db_bytes, db, (unsigned long long)room,
                (unsigned long long)(cfg->max_db_bytes + 2 * RETAIN_WAL_MIN_PAGES * 4096 - room));
    }
    a->run_id = -1;
    if (a->sink.open) {
        a->run_id = sink_run_begin(&a->sink, &rc_cfg.run, err, sizeof err);
        if (a->run_id < 0) {
            log_error("%s", err);
            goto unlisten;
        }
        atomic_store(&a->next_phase_id, sink_max_phase_id(&a->sink, a->run_id) + 1);
    } else {
        atomic_store(&a->next_phase_id, 1);
    }
    a->started_ns = clock_wall_ns();
    if (rec_open(&a->rec, loop, &a->sink, a->run_id, &rc_cfg, proxy_update_reading, &a->px, err,
                 sizeof err)) {
        log_error("recorder: %s", err);
        goto close_rec;
    }
    if (!sink_sqlite(&a->sink))
        log_debug("the /api/run endpoints read SQLite: off with %s", sink_name(&a->sink));
    else if (webapi_open(&a->web, loop, &a->http, &a->rec, a->run_id, err, sizeof err))
        log_warn("the /api/run endpoints are off: %s", err);
    if (cfg->memcached_flags && *cfg->memcached_flags) /* read by `model predict` */
        meta_job(a, a->started_ns, "memcached_flags", strdup(cfg->memcached_flags));
    if (cfg->proxy.sample_keys > 1) { /* read by `model predict` and `advise` */
        char rate[32];
        if (cfg->proxy.sample_keys == SAMPLE_NONE)
            snprintf(rate, sizeof rate, "none");
        else
            snprintf(rate, sizeof rate, "1/%u", (unsigned)cfg->proxy.sample_keys);
        meta_job(a, a->started_ns, "sample_keys", strdup(rate));
    }
    rc = poller_open(&a->poller, a->loop, &a->px.cfg.upstream_addrs, cfg->stats_interval_ms,
                     on_sample, a);
    if (rc) {
        log_error("cannot start the stats poller: %s", uv_strerror(rc));
        rc = -1;
        goto stop;
    }
    a->poller_open = true;
    uv_timer_init(loop, &a->final_timer);
    a->final_timer.data = a;
    uv_timer_init(loop, &a->settle_timer);
    a->settle_timer.data = a;
    stats_sample_init(&a->final_prev);
    a->closing_handles = 1;
    goto out;
stop:
    app_teardown(a);
    rec_close(&a->rec, NULL, err, sizeof err); /* why the start failed is logged above */
    webapi_close(&a->web);
    uv_run(loop, UV_RUN_NOWAIT);
    goto out;
close_rec:
    /* ends the run row; one turn runs the close callbacks of the recorder's
     * handles and leaves the caller's (an experiment's memcached) alone */
    rec_close(&a->rec, NULL, err, sizeof err);
    app_teardown(a);
    goto out;
unlisten:
    app_teardown(a);
    sink_close(&a->sink);
    if (spilling)
        spill_close(&a->spill);
    goto out;
unbind:
    app_teardown(a);
out:
    if (rc) {
        stats_sample_fini(&a->last);
        free(a->runs_before);
        a->runs_before = NULL;
        free(a->runs_all);
        a->runs_all = NULL;
    }
    return rc;
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

static void app_final_done(struct app *a)
{
    if (a->final_done)
        return;
    a->final_done = true;
    uv_timer_stop(&a->final_timer);
    uv_timer_stop(&a->settle_timer);
    a->closing_handles = 2 + a->poller_open + a->http_open;
    uv_close((uv_handle_t *)&a->final_timer, on_final_timer_closed);
    uv_close((uv_handle_t *)&a->settle_timer, on_final_timer_closed);
    if (a->poller_open)
        poller_close(&a->poller, on_poller_closed);
    if (a->http_open)
        admin_http_close(&a->http, on_http_closed);
}

static void on_final_timeout(uv_timer_t *t)
{
    struct app *a = t->data;
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
}

void app_close(struct app *a, void (*on_closed)(struct app *a))
{
    if (a->closing)
        return;
    a->closing = true;
    a->on_closed = on_closed;
    proxy_close(&a->px, on_proxy_stopped);
}

void app_force(struct app *a)
{
    rec_give_up(&a->rec);
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
    free(a->runs_before);
    a->runs_before = NULL;
    free(a->runs_all);
    a->runs_all = NULL;
    return rc;
}
