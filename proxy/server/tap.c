/* tap: memcached's watcher stream into the recorder (see tap.h). Owns its
 * stream, two timers and the parser; frees nothing outside a close
 * callback (it allocates nothing but run_meta jobs, handed over whole). */
#include "server/tap.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/sample.h"

static const char *const tap_stop_texts[] = {
#define TAP_STOP_TEXT(id, text) text,
    TAP_STOPS(TAP_STOP_TEXT)
#undef TAP_STOP_TEXT
};

const char *tap_stop_text(enum tap_stop s)
{
    return (unsigned)s < TAP_STOP__COUNT ? tap_stop_texts[s] : "?";
}

static void tap_connect(struct tap *t);
static void tap_fail(struct tap *t, const char *why, int uv_err);
static void tap_close_sock(struct tap *t);

/* --- run_meta ---------------------------------------------------------------- */

static void tap_meta(struct tap *t, const char *key, const char *value)
{
    struct rec_job *j = calloc(1, sizeof *j);
    if (!j)
        return;
    j->kind = REC_JOB_META;
    j->t_ns = clock_wall_ns();
    j->version = strdup(key);
    j->text = strdup(value);
    if (!j->version || !j->text) {
        rec_job_free(j);
        return;
    }
    rec_push_job(t->cfg.rec, j);
}

/* run_meta memcached_dropped: what was counted lost and from what. */
static void tap_meta_drops(struct tap *t)
{
    char v[512];
    snprintf(v, sizeof v,
             "{\"lines\":%" PRIu64 ",\"episodes\":%" PRIu64 ",\"skipped_reported\":%" PRIu64
             ",\"worker_dropped\":%" PRIu64 ",\"watcher_skipped\":%" PRIu64
             ",\"counted\":\"max(skipped_reported, rise of log_watcher_skipped) + rise of "
             "log_worker_dropped, per memcached process\"}",
             t->c.lost_counted, t->episodes, t->c.skipped_reported, t->worker_rise,
             t->watcher_rise);
    tap_meta(t, "memcached_dropped", v);
}

/* --- losses ------------------------------------------------------------------ */

/* What is counted lost now; the rise is handed to the recorder. */
static void tap_count_lost(struct tap *t)
{
    uint64_t watcher =
        t->watcher_rise > t->skipped_since_base ? t->watcher_rise : t->skipped_since_base;
    uint64_t now = t->lost_before + t->worker_rise + watcher;
    if (now <= t->c.lost_counted)
        return;
    rec_count_lost(t->cfg.rec, REC_LOST_MEMCACHED_DROPPED, now - t->c.lost_counted);
    t->c.lost_counted = now;
}

/* One line per episode: when lines start being dropped, with the flag that
 * would help; one when a sample shows no more. */
static void tap_episode(struct tap *t, uint64_t lost_at_last_sample)
{
    bool rose = t->c.lost_counted > lost_at_last_sample;
    if (rose && !t->in_episode) {
        t->in_episode = true;
        t->episodes++;
        t->episode_lost0 = lost_at_last_sample;
        t->episode_from_ns = clock_wall_ns();
        char flag[160] = "";
        if (t->worker_rose)
            snprintf(flag, sizeof flag, "-o worker_logbuf_size=%lld (KiB; now %lld)",
                     (long long)(t->worker_logbuf ? t->worker_logbuf / 512 : 128),
                     (long long)(t->worker_logbuf ? t->worker_logbuf / 1024 : 64));
        else
            snprintf(flag, sizeof flag, "-o watcher_logbuf_size=%lld (KiB; now %lld)",
                     (long long)(t->watcher_logbuf ? t->watcher_logbuf / 512 : 512),
                     (long long)(t->watcher_logbuf ? t->watcher_logbuf / 1024 : 256));
        log_write(LOG_LEVEL_WARN, t->peer,
                  "memcached drops watch lines: %" PRIu64 " so far (counted lost: "
                  "memcached_dropped)%s; starting memcached with %s would help%s",
                  t->c.lost_counted - t->episode_lost0,
                  t->c.paused ? ", slabtap's recorder was full at times" : "", flag,
                  t->last.watchers > 1 ? " (other watchers are connected: memcached's counters "
                                         "count their lines too)"
                                       : "");
    } else if (!rose && t->in_episode) {
        t->in_episode = false;
        log_write(LOG_LEVEL_INFO, t->peer,
                  "memcached stopped dropping watch lines: %" PRIu64 " in %.1f s (%" PRIu64
                  " in all)",
                  t->c.lost_counted - t->episode_lost0,
                  (double)(clock_wall_ns() - t->episode_from_ns) / 1e9, t->c.lost_counted);
        tap_meta_drops(t);
    }
    t->worker_rose = t->watcher_rose = false;
}

static bool tap_stat(const struct stats_kv_list *l, const char *name, int64_t *out)
{
    const struct stats_kv *kv = stats_kv_find(l, name);
    if (!kv || !kv->has_num)
        return false;
    *out = kv->num;
    return true;
}

/* --- gaps -------------------------------------------------------------------- */

static void tap_gap_decide(struct tap *t, const struct tap_drops *now)
{
    /* the pid alone is not enough (pid 1 in a container) */
    bool restart = now->pid != t->gap_pid || now->uptime < t->gap_uptime;
    t->gap_pending = false;
    t->c.gaps++;
    t->c.restarts += restart;
    double secs = (double)(t->gap_to_ns - t->gap_from_ns) / 1e9;
    if (restart)
        log_write(LOG_LEVEL_WARN, t->peer,
                  "memcached restarted (pid %lld -> %lld, up %lld s): the watcher was away "
                  "%.1f s; the run goes on after a gap (phase 'memcached restarted', run_meta "
                  "watch_gaps); what memcached stored before is gone, what it logged in the gap "
                  "is not recorded",
                  (long long)t->gap_pid, (long long)now->pid, (long long)now->uptime, secs);
    else
        log_write(LOG_LEVEL_WARN, t->peer,
                  "the watcher was away %.1f s, memcached did not restart (pid %lld): the run "
                  "goes on after a gap (run_meta watch_gaps); what memcached logged in the gap "
                  "is not recorded",
                  secs, (long long)now->pid);
    if (t->gaps_len + 160 < sizeof t->gaps_json) {
        int n = snprintf(t->gaps_json + t->gaps_len, sizeof t->gaps_json - t->gaps_len,
                         "%s{\"from_ns\":%lld,\"to_ns\":%lld,\"restart\":%s,\"pid_before\":%lld,"
                         "\"pid_after\":%lld}",
                         t->gaps_len ? "," : "", (long long)t->gap_from_ns, (long long)t->gap_to_ns,
                         restart ? "true" : "false", (long long)t->gap_pid, (long long)now->pid);
        t->gaps_len += n > 0 ? (size_t)n : 0;
    }
    char v[sizeof t->gaps_json + 64];
    snprintf(v, sizeof v, "{\"gaps\":%" PRIu64 ",\"restarts\":%" PRIu64 ",\"list\":[%s]}",
             t->c.gaps, t->c.restarts, t->gaps_json);
    tap_meta(t, "watch_gaps", v);
    if (t->cfg.on_gap)
        t->cfg.on_gap(t->cfg.ud, restart, t->gap_from_ns, t->gap_to_ns);
}

void tap_sample(struct tap *t, const struct stats_sample *s)
{
    struct tap_drops now = { 0 };
    int64_t v;
    if (t->state == TAP_IDLE || t->state == TAP_CLOSING)
        return;
    if (!tap_stat(&s->stats, "pid", &now.pid) || !tap_stat(&s->stats, "uptime", &now.uptime))
        return;
    now.worker_dropped = tap_stat(&s->stats, "log_worker_dropped", &v) && v > 0 ? (uint64_t)v : 0;
    now.watcher_skipped = tap_stat(&s->stats, "log_watcher_skipped", &v) && v > 0 ? (uint64_t)v : 0;
    now.watchers = tap_stat(&s->stats, "log_watchers", &v) && v > 0 ? (uint64_t)v : 0;
    now.have = true;
    if (s->has_settings && tap_stat(&s->settings, "worker_logbuf_size", &v))
        t->worker_logbuf = v;
    if (s->has_settings && tap_stat(&s->settings, "watcher_logbuf_size", &v))
        t->watcher_logbuf = v;
    if (s->has_version)
        snprintf(t->version, sizeof t->version, "%s", s->version);
    bool new_process = t->last.have && (now.pid != t->last.pid || now.uptime < t->last.uptime);
    if (new_process) {
        /* memcached's counters started again from 0 with this process */
        t->lost_before = t->c.lost_counted;
        t->base = (struct tap_drops){ .pid = now.pid, .uptime = 0, .have = true };
        t->worker_rise = t->watcher_rise = t->skipped_since_base = 0;
        t->base_set = true;
    }
    if (t->gap_pending && t->connected)
        tap_gap_decide(t, &now);
    if (!t->in_gap && !t->gap_pending) {
        t->gap_pid = now.pid;
        t->gap_uptime = now.uptime;
    }
    if (t->connected && !t->base_set) {
        t->base = now;
        t->base_set = true;
    }
    if (t->base_set) {
        uint64_t w = now.worker_dropped >= t->base.worker_dropped
                         ? now.worker_dropped - t->base.worker_dropped
                         : 0;
        uint64_t k = now.watcher_skipped >= t->base.watcher_skipped
                         ? now.watcher_skipped - t->base.watcher_skipped
                         : 0;
        t->worker_rose |= w > t->worker_rise;
        t->watcher_rose |= k > t->watcher_rise;
        t->worker_rise = w > t->worker_rise ? w : t->worker_rise;
        t->watcher_rise = k > t->watcher_rise ? k : t->watcher_rise;
        tap_count_lost(t);
    }
    t->last = now;
    if (!t->first_sample && t->state == TAP_BACKOFF) { /* the first: watch now */
        uv_timer_stop(&t->backoff_timer);
        tap_connect(t);
    }
    t->first_sample = true;
    tap_episode(t, t->lost_at_sample);
    t->lost_at_sample = t->c.lost_counted;
}

/* --- rows -------------------------------------------------------------------- */

/* The key as the proxy keeps it: hash of the whole key, text per --keys,
 * and whether --sample-keys keeps its rows. */
static bool tap_key(struct tap *t, const struct mclog_event *ev, struct rec_row *row)
{
    row->key_hash = keyfmt_hash(ev->key, ev->key_len);
    row->key_len = (uint16_t)ev->key_len;
    row->key_text_len = (int16_t)keyfmt_text(t->cfg.key_mode, ev->key, ev->key_len, row->key_text,
                                             sizeof row->key_text);
    return sample_keep(row->key_hash, t->cfg.sample_keys);
}

static void tap_store(struct tap *t, const struct mclog_event *ev)
{
    struct rec_row row;
    memset(&row, 0, offsetof(struct rec_row, answer));
    row.kind = REC_ROW_WRITE;
    row.cmd = (uint8_t)ev->cmd;
    row.conn_id = (uint32_t)ev->cfd;
    row.t_ns = ev->ts_ns ? ev->ts_ns : clock_wall_ns();
    row.value_len = ev->size;
    row.has_flags = false; /* the log does not say */
    row.has_exptime = true;
    row.exptime = ev->ttl;
    row.latency_ns = -1;
    row.class_id = ev->clsid; /* memcached's own choice */
    snprintf(row.answer, sizeof row.answer, "%s", mclog_status_answer(ev->status));
    bool kept = tap_key(t, ev, &row);
    t->c.writes++;
    if (!kept) {
        t->c.rows_sampled_out++;
        if (!t->cfg.sample_aggregate)
            return;
        row.sampled_out = true;
        rec_push(t->cfg.rec, &row);
        return;
    }
    row.seq = ++t->seq;
    rec_push(t->cfg.rec, &row);
    if (t->cfg.m)
        t->cfg.m->writes_recorded++;
}

static void tap_item_event(struct tap *t, const struct mclog_event *ev)
{
    struct rec_row row;
    bool evicted = ev->kind == MCLOG_EV_EVICTION;
    memset(&row, 0, offsetof(struct rec_row, answer));
    row.kind = REC_ROW_EVENT;
    row.event = evicted ? REC_EVENT_EVICTED : REC_EVENT_DELETED;
    row.cmd = evicted ? 0 : (uint8_t)ev->cmd;
    row.t_ns = ev->ts_ns ? ev->ts_ns : clock_wall_ns();
    row.value_len = ev->has_size ? ev->size : -1;
    row.class_id = ev->clsid;
    row.fetched = ev->fetched;
    row.idle_s = evicted ? ev->la : 0;
    row.exptime = evicted ? ev->ttl : -1;
    row.has_exptime = evicted;
    row.latency_ns = -1;
    row.answer[0] = '\0';
    if (evicted)
        t->c.evictions++;
    else
        t->c.deletions++;
    /* a key --sample-keys does not keep: none of its rows, events neither */
    if (!tap_key(t, ev, &row))
        return;
    row.seq = ++t->event_seq;
    rec_push(t->cfg.rec, &row);
}

/* --- the stream ---------------------------------------------------------------- */

static void tap_stop_for_good(struct tap *t, enum tap_stop why, const char *words)
{
    t->stop = why;
    t->state = TAP_STOPPED;
    t->connected = false;
    tap_close_sock(t);
    if (t->cfg.on_stop)
        t->cfg.on_stop(t->cfg.ud, why, words);
}

static void tap_send_watch(struct tap *t, bool deletions)
{
    size_t n = mclog_watch_request(t->req, sizeof t->req, (t->cfg.watch & TAP_WATCH_MUTATIONS) != 0,
                                   (t->cfg.watch & TAP_WATCH_EVICTIONS) != 0, deletions);
    uv_buf_t b = uv_buf_init(t->req, (unsigned)n);
    t->deletions = deletions;
    t->state = TAP_ASKING;
    t->attempt_ns = uv_hrtime();
    uv_write_t *req = &t->write_req[deletions ? 0 : 1];
    req->data = t;
    int rc = n ? uv_write(req, &t->sock.stream, &b, 1, NULL) : UV_EINVAL;
    if (rc < 0)
        tap_fail(t, "cannot send `watch`", rc);
}

/* The watch is on: a gap ends here, the drop baseline is the last sample. */
static void tap_streaming(struct tap *t)
{
    t->state = TAP_STREAMING;
    t->connected = true;
    t->backoff_ms = TAP_BACKOFF_MIN_MS;
    t->c.connects++;
    if (t->in_gap) {
        t->in_gap = false;
        t->gap_to_ns = clock_wall_ns();
        t->gap_pending = true; /* the next sample says restart or blip */
        t->c.reconnects++;
    } else {
        int n = (int)strcspn(t->req, "\r");
        char v[256];
        log_write(LOG_LEVEL_INFO, t->peer, "watching memcached: %.*s", n, t->req);
        /* what the run is made of, and what the log cannot tell */
        snprintf(v, sizeof v,
                 "{\"request\":\"%.*s\",\"deletions\":%s,\"not_in_log\":[\"client flags\","
                 "\"latency\",\"client address\",\"reads\"]}",
                 n, t->req, t->deletions ? "true" : "false");
        tap_meta(t, "watch", v);
    }
    if (!t->base_set && t->last.have) {
        t->base = t->last;
        t->base_set = true;
    }
}

/* One event from the parser. false: stop reading this buffer. */
static bool tap_event(struct tap *t, const struct mclog_event *ev)
{
    t->c.lines += ev->kind != MCLOG_EV_OK && ev->kind != MCLOG_EV_REFUSED;
    switch (ev->kind) {
    case MCLOG_EV_OK:
        if (t->state == TAP_ASKING)
            tap_streaming(t);
        return true;
    case MCLOG_EV_REFUSED:
        if (t->state != TAP_ASKING) { /* mid-stream: a line that is not a log line */
            t->c.errors++;
            log_throttled(&t->bad_line, LOG_LEVEL_WARN, t->peer,
                          "a line in the watch stream that is not a log line: %s; skipped",
                          ev->line);
            return true;
        }
        if (t->deletions && !strcmp(ev->line, "ERROR") && !t->asked_without_deletions) {
            /* memcached before 1.6.20 knows no `watch deletions` */
            t->asked_without_deletions = true;
            log_write(LOG_LEVEL_WARN, t->peer,
                      "memcached%s%s does not know `watch deletions` (1.6.20 and later do): "
                      "deletions are not recorded (item_events holds evictions only)",
                      t->version[0] ? " " : "", t->version);
            tap_send_watch(t, false);
            return true;
        }
        tap_stop_for_good(t, TAP_STOP_REFUSED, ev->line);
        return false;
    case MCLOG_EV_STORE:
        if (!ev->has_size) {
            tap_stop_for_good(t, TAP_STOP_TOO_OLD, "");
            return false;
        }
        tap_store(t, ev);
        return true;
    case MCLOG_EV_EVICTION:
    case MCLOG_EV_DELETION: tap_item_event(t, ev); return true;
    case MCLOG_EV_SKIPPED:
        t->c.skipped_reported += ev->skipped;
        t->skipped_since_base += ev->skipped;
        t->watcher_rose = true;
        tap_count_lost(t);
        return true;
    case MCLOG_EV_ERROR:
        t->c.errors++;
        log_throttled(&t->bad_line, LOG_LEVEL_WARN, t->peer,
                      "a watch line that does not parse (%s): %s; skipped", mclog_err_text(ev->err),
                      ev->line);
        return true;
    default: t->c.other++; return true;
    }
}

static void tap_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct tap *t = h->data;
    (void)suggested;
    *buf = uv_buf_init(t->rbuf, sizeof t->rbuf);
}

static void tap_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct tap *t = s->data;
    if (nread == 0 || (t->state != TAP_ASKING && t->state != TAP_STREAMING))
        return;
    if (nread < 0) {
        tap_fail(t, nread == UV_EOF ? "memcached closed the watch connection" : "read failed",
                 nread == UV_EOF ? 0 : (int)nread);
        return;
    }
    size_t off = 0;
    while (off < (size_t)nread) {
        size_t used = 0;
        enum mclog_result r =
            mclog_next(&t->parser, buf->base + off, (size_t)nread - off, &used, &t->ev);
        off += used;
        if (r == MCLOG_NEED_MORE)
            break;
        if (!tap_event(t, &t->ev))
            return;
        if (used == 0 && r == MCLOG_OK)
            break; /* never spin */
    }
    rec_flush(t->cfg.rec);
    tap_update_reading(t);
}

void tap_update_reading(struct tap *t)
{
    bool want = (t->state == TAP_ASKING || t->state == TAP_STREAMING) && t->sock_open &&
                !rec_blocked(t->cfg.rec);
    if (want && !t->reading) {
        if (uv_read_start(&t->sock.stream, tap_on_alloc, tap_on_read) == 0)
            t->reading = true;
    } else if (!want && t->reading) {
        uv_read_stop(&t->sock.stream);
        t->reading = false;
        if (t->state == TAP_STREAMING)
            t->c.paused++;
    }
}

/* --- connecting ---------------------------------------------------------------- */

static void tap_handle_closed(struct tap *t)
{
    if (--t->open_handles == 0 && t->state == TAP_CLOSING) {
        t->state = TAP_IDLE;
        if (t->on_closed)
            t->on_closed(t);
    }
}

static void tap_on_timer_closed(uv_handle_t *h)
{
    tap_handle_closed(h->data);
}

static void tap_on_sock_closed(uv_handle_t *h)
{
    struct tap *t = h->data;
    if (t->state == TAP_DRAINING) {
        /* only now may the handle be initialised again */
        t->state = TAP_BACKOFF;
        if (!uv_is_active((uv_handle_t *)&t->backoff_timer))
            tap_connect(t);
    }
    tap_handle_closed(t);
}

static void tap_close_sock(struct tap *t)
{
    if (t->sock_open) {
        t->sock_open = false;
        t->reading = false;
        uv_close(&t->sock.handle, tap_on_sock_closed);
    }
}

static void tap_on_backoff(uv_timer_t *h)
{
    struct tap *t = h->data;
    if (t->state == TAP_BACKOFF)
        tap_connect(t);
}

/* A connection (or an attempt) ends: reconnect after the backoff. The
 * first failure of a gap is logged; the rest are counted. */
static void tap_fail(struct tap *t, const char *why, int uv_err)
{
    if (t->state == TAP_CLOSING || t->state == TAP_STOPPED || t->state == TAP_IDLE)
        return;
    if (t->connected) {
        t->c.disconnects++;
        t->in_gap = true;
        t->gap_from_ns = clock_wall_ns();
        t->gap_pending = false;
        log_write(LOG_LEVEL_WARN, t->peer, "watcher lost: %s%s%s%s; reconnecting", why,
                  uv_err ? " (" : "", uv_err ? uv_strerror(uv_err) : "", uv_err ? ")" : "");
    } else if (!t->in_gap && !t->c.connects && !t->failing_logged) {
        t->failing_logged = true;
        log_write(LOG_LEVEL_WARN, t->peer, "cannot watch memcached yet: %s%s%s%s; retrying", why,
                  uv_err ? " (" : "", uv_err ? uv_strerror(uv_err) : "", uv_err ? ")" : "");
    }
    if (t->state == TAP_CONNECTING)
        t->upstream_at++;
    t->connected = false;
    mclog_init(&t->parser);
    t->state = TAP_DRAINING;
    unsigned ms = t->backoff_ms;
    t->backoff_ms = ms >= TAP_BACKOFF_MAX_MS / 2 ? TAP_BACKOFF_MAX_MS : ms * 2;
    uv_timer_start(&t->backoff_timer, tap_on_backoff, ms, 0);
    if (t->sock_open)
        tap_close_sock(t);
    else
        t->state = TAP_BACKOFF;
}

static void tap_on_connect(uv_connect_t *req, int status)
{
    struct tap *t = req->data;
    if (t->state != TAP_CONNECTING)
        return;
    if (status < 0) {
        tap_fail(t, "connect failed", status);
        return;
    }
    tap_send_watch(t, (t->cfg.watch & TAP_WATCH_DELETIONS) != 0 && !t->asked_without_deletions);
    tap_update_reading(t);
}

static void tap_connect(struct tap *t)
{
    const struct addr_list *l = t->cfg.upstream;
    const struct sockaddr *sa = (const struct sockaddr *)&l->a[t->upstream_at % l->n];
    t->state = TAP_CONNECTING;
    t->attempt_ns = uv_hrtime();
    addr_format(sa, t->peer, sizeof t->peer);
    int rc = dial_init(t->loop, &t->sock, sa->sa_family);
    if (rc < 0) {
        tap_fail(t, "cannot make a socket", rc);
        return;
    }
    t->sock.handle.data = t;
    t->sock_open = true;
    t->open_handles++;
    t->connect_req.data = t;
    mclog_init(&t->parser);
    rc = dial_connect(&t->connect_req, &t->sock, sa, tap_on_connect);
    if (rc < 0)
        tap_fail(t, "connect failed", rc);
}

static void tap_on_tick(uv_timer_t *h)
{
    struct tap *t = h->data;
    uint64_t waited_ms = (uv_hrtime() - t->attempt_ns) / 1000000;
    if ((t->state == TAP_CONNECTING || t->state == TAP_ASKING) &&
        waited_ms >= TAP_CONNECT_TIMEOUT_MS)
        tap_fail(t,
                 t->state == TAP_CONNECTING ? "connect timed out"
                                            : "memcached did not answer `watch` in time",
                 0);
}

/* --- public -------------------------------------------------------------------- */

int tap_open(struct tap *t, uv_loop_t *loop, const struct tap_config *cfg)
{
    memset(t, 0, sizeof *t);
    if (!cfg->upstream || !cfg->upstream->n || !cfg->rec || !cfg->watch)
        return UV_EINVAL;
    t->cfg = *cfg;
    t->loop = loop;
    t->backoff_ms = TAP_BACKOFF_MIN_MS;
    addr_format((const struct sockaddr *)&cfg->upstream->a[0], t->peer, sizeof t->peer);
    int rc = uv_timer_init(loop, &t->tick);
    if (rc < 0)
        return rc;
    rc = uv_timer_init(loop, &t->backoff_timer);
    if (rc < 0) {
        uv_close((uv_handle_t *)&t->tick, NULL);
        return rc;
    }
    t->tick.data = t->backoff_timer.data = t;
    t->open_handles = 2;
    uv_timer_start(&t->tick, tap_on_tick, TAP_TICK_MS, TAP_TICK_MS);
    /* the watch starts after the first stats sample (tap_sample), so the
     * drop counters have a baseline from before it; at the latest after
     * TAP_FIRST_SAMPLE_WAIT_MS (then the first sample after it is the
     * baseline) */
    t->state = TAP_BACKOFF;
    uv_timer_start(&t->backoff_timer, tap_on_backoff, TAP_FIRST_SAMPLE_WAIT_MS, 0);
    return 0;
}

void tap_close(struct tap *t, void (*on_closed)(struct tap *t))
{
    if (t->state == TAP_IDLE || t->state == TAP_CLOSING) {
        if (on_closed && t->state == TAP_IDLE)
            on_closed(t);
        return;
    }
    tap_count_lost(t);
    if (t->c.lost_counted || t->episodes)
        tap_meta_drops(t);
    t->state = TAP_CLOSING;
    t->connected = false;
    t->on_closed = on_closed;
    uv_timer_stop(&t->tick);
    uv_timer_stop(&t->backoff_timer);
    uv_close((uv_handle_t *)&t->tick, tap_on_timer_closed);
    uv_close((uv_handle_t *)&t->backoff_timer, tap_on_timer_closed);
    tap_close_sock(t);
}
