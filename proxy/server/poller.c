/* poller: the side connection that samples memcached's stats (see
 * poller.h). Owns its stream (TCP or a unix socket), two timers and one
 * stats_sample. Must never deliver part of a sample, let requests pile up
 * behind a slow memcached, touch a client's connection, or free memory
 * outside a close callback. */
#include "server/poller.h"
#include "core/clock.h"
#include "core/log.h"

#include <string.h>
#include <time.h>

static const char *const poller_error_text[POLLER_E_COUNT] = {
#define POLLER_ERROR_TEXT(name, text) [name] = text,
    POLLER_ERRORS(POLLER_ERROR_TEXT)
#undef POLLER_ERROR_TEXT
};

const char *poller_error_str(enum poller_error e)
{
    return (unsigned)e < POLLER_E_COUNT ? poller_error_text[e] : "unknown poller error";
}

static void poller_start_connect(struct poller *p);
static void poller_on_backoff(uv_timer_t *t);
static void poller_on_write(uv_write_t *req, int status);

static uint64_t poller_ms_since(uint64_t then_ns)
{
    return (uv_hrtime() - then_ns) / 1000000;
}

/* ---- logging ----------------------------------------------------------- */

/* A memcached down for an hour fails a poll every backoff: one line when
 * the failing starts, one when it ends, and the count in between. */
static void poller_note_failure(struct poller *p, enum poller_error why, int uv_err)
{
    p->failed_polls++;
    if (p->failing)
        return;
    p->failing = true;
    p->failing_since_ns = uv_hrtime();
    log_write(LOG_LEVEL_WARN, p->peer, "stats polling failing: %s%s%s%s; retrying",
              poller_error_str(why), uv_err ? " (" : "", uv_err ? uv_strerror(uv_err) : "",
              uv_err ? ")" : "");
}

static void poller_note_success(struct poller *p)
{
    if (!p->failing)
        return;
    log_write(LOG_LEVEL_INFO, p->peer,
              "stats polling recovered after %.1f s down; %llu poll(s) failed meanwhile",
              (double)(uv_hrtime() - p->failing_since_ns) / 1e9,
              (unsigned long long)p->failed_polls);
    p->failing = false;
    p->failed_polls = 0;
}

/* ---- closing ----------------------------------------------------------- */

static void poller_release(struct poller *p)
{
    void (*on_closed)(struct poller *) = p->on_closed;

    stats_sample_fini(&p->sample);
    stats_kv_list_fini(&p->prev_settings);
    p->have_prev_settings = false;
    p->state = POLLER_IDLE;
    p->on_closed = NULL;
    if (on_closed)
        on_closed(p);
}

/* Every embedded handle's close callback ends here; the last one, once the
 * poller is closing, frees. */
static void poller_handle_closed(struct poller *p)
{
    p->open_handles--;
    if (p->open_handles == 0 && p->state == POLLER_CLOSING)
        poller_release(p);
}

static void poller_on_timer_closed(uv_handle_t *h)
{
    poller_handle_closed(h->data);
}

static void poller_schedule_reconnect(struct poller *p)
{
    p->state = POLLER_BACKOFF;
    uv_timer_start(&p->backoff, poller_on_backoff, p->backoff_ms, 0);
    p->backoff_ms =
        p->backoff_ms > POLLER_BACKOFF_MAX_MS / 2 ? POLLER_BACKOFF_MAX_MS : p->backoff_ms * 2;
}

static void poller_on_tcp_closed(uv_handle_t *h)
{
    struct poller *p = h->data;

    /* Only now may tcp be initialised again, so the backoff starts here. */
    if (p->state == POLLER_DRAINING && p->next_addr_now) {
        p->next_addr_now = false;
        poller_start_connect(p);
    } else if (p->state == POLLER_DRAINING) {
        poller_schedule_reconnect(p);
    }
    poller_handle_closed(p);
}

static void poller_close_tcp(struct poller *p)
{
    if (p->tcp_open) {
        p->tcp_open = false;
        uv_close((uv_handle_t *)&p->tcp, poller_on_tcp_closed);
    }
}

/* The one place a connection (or an attempt) ends in failure. A sample in
 * flight is dropped whole: the sample struct is simply refilled by the
 * next batch and never handed out. */
static void poller_fail(struct poller *p, enum poller_error why, int uv_err)
{
    p->last_error = why;
    p->last_uv_error = uv_err;
    p->counters.errors[why]++;
    poller_note_failure(p, why, uv_err);
    if (p->in_flight)
        p->counters.samples_discarded++;
    p->in_flight = false;
    if (p->state == POLLER_CONNECTING) {
        p->counters.connect_failures++;
        p->upstream_at++; /* a name's next address next time */
        p->addr_tried = 0;
    } else if (p->state == POLLER_CONNECTED)
        p->counters.disconnects++;
    p->connected = false;
    p->state = POLLER_DRAINING;
    poller_close_tcp(p);
}

/* ---- sampling ---------------------------------------------------------- */

static void poller_send_batch(struct poller *p)
{
    unsigned what = STATS_R_REQUIRED;
    uv_buf_t buf;
    int rc;

    if (p->want_now || p->want_settings || p->fresh_connection ||
        poller_ms_since(p->settings_ns) >= POLLER_SETTINGS_EVERY_MS)
        what |= STATS_R_SETTINGS | STATS_R_VERSION;
    p->batch_requested = p->want_now;
    p->want_now = false;
    p->batch_what = what;
    p->cmd_len = stats_parse_batch_command(what, p->cmd, sizeof p->cmd);
    stats_parse_batch_begin(&p->batch, &p->sample, what);
    p->sample.t_ns = clock_wall_ns();
    p->sample.mono_ns = uv_hrtime();
    p->attempt_ns = p->sample.mono_ns;
    buf = uv_buf_init(p->cmd, (unsigned)p->cmd_len);
    p->write_req.data = p;
    rc = uv_write(&p->write_req, (uv_stream_t *)&p->tcp, &buf, 1, poller_on_write);
    if (rc < 0) {
        poller_fail(p, POLLER_E_WRITE, rc);
    } else {
        p->write_pending = true;
        p->in_flight = true;
    }
}

/* Sends if a batch is due and the pipe is free; never while the callback
 * holds the sample, since a batch starts by clearing it. */
static void poller_maybe_send(struct poller *p, bool tick)
{
    if (p->state == POLLER_CONNECTED && !p->in_flight && !p->write_pending && !p->in_callback &&
        (tick || p->want_now))
        poller_send_batch(p);
}

static void poller_deliver(struct poller *p)
{
    struct stats_sample *s = &p->sample;

    s->rtt_ns = uv_hrtime() - s->mono_ns;
    s->seq = ++p->counters.samples;
    s->connection = p->connection;
    s->requested = p->batch_requested;
    s->settings_fresh = (p->batch_what & STATS_R_SETTINGS) != 0;
    s->settings_changed = false;
    if (s->settings_fresh) {
        p->settings_ns = s->mono_ns;
        p->want_settings = false;
        if (s->has_settings) {
            if (p->have_prev_settings && !stats_kv_equal(&p->prev_settings, &s->settings)) {
                s->settings_changed = true;
                p->want_settings = true; /* follow the change until it settles */
            }
            p->have_prev_settings = stats_kv_list_copy(&p->prev_settings, &s->settings) == 0;
        }
    }
    if (s->classes_partial) {
        p->counters.classes_partial += s->classes_partial;
        if (!p->warned_partial)
            log_write(LOG_LEVEL_WARN, p->peer,
                      "memcached named %u class(es) in `stats items` that `stats slabs` did not;"
                      " left out of the sample (counted from now on, not logged again)",
                      (unsigned)s->classes_partial);
        p->warned_partial = true;
    }
    p->fresh_connection = false;
    p->backoff_ms = POLLER_BACKOFF_MIN_MS;
    poller_note_success(p);
    p->in_callback = true;
    p->on_sample(p->ud, s);
    p->in_callback = false;
}

static void poller_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct poller *p = h->data;

    (void)suggested;
    /* One fixed buffer suffices: each read is parsed (and copied as
     * needed) before the next one is allocated. */
    *buf = uv_buf_init(p->rbuf, sizeof p->rbuf);
}

/* A batch came back whole: deliver it, or count memcached's refusal. */
static void poller_batch_done(struct poller *p, enum stats_parse_result r)
{
    p->in_flight = false;
    if (r == STATS_PARSE_REFUSED) {
        /* The stream is in step; keep the connection, try again next tick. */
        p->counters.samples_refused++;
        p->counters.errors[POLLER_E_REFUSED]++;
        p->last_error = POLLER_E_REFUSED;
        p->last_uv_error = 0;
        poller_note_failure(p, POLLER_E_REFUSED, 0);
    } else {
        poller_deliver(p);
        poller_maybe_send(p, false); /* a poller_sample_now from the callback */
    }
}

static void poller_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct poller *p = stream->data;
    enum stats_parse_result r;
    size_t used = 0;

    if (p->state != POLLER_CONNECTED || nread == 0) {
        /* closing, or libuv's "nothing this time" */
    } else if (nread < 0) {
        poller_fail(p, nread == UV_EOF ? POLLER_E_EOF : POLLER_E_READ, (int)nread);
    } else if (!p->in_flight) {
        poller_fail(p, POLLER_E_UNSOLICITED, 0);
    } else {
        r = stats_parse_batch_feed(&p->batch, buf->base, (size_t)nread, &used);
        if (r == STATS_PARSE_ERROR)
            poller_fail(p, POLLER_E_PROTOCOL, 0);
        else if (r != STATS_PARSE_NEED_MORE && used < (size_t)nread)
            poller_fail(p, POLLER_E_UNSOLICITED, 0); /* one batch at a time: out of step */
        else if (r != STATS_PARSE_NEED_MORE)
            poller_batch_done(p, r);
    }
}

static void poller_on_write(uv_write_t *req, int status)
{
    struct poller *p = req->data;

    p->write_pending = false;
    /* After a failure or close the write is cancelled: already handled. */
    if (p->state == POLLER_CONNECTED) {
        if (status < 0)
            poller_fail(p, POLLER_E_WRITE, status);
        else
            poller_maybe_send(p, false);
    }
}

/* ---- connecting -------------------------------------------------------- */

static void poller_on_connect(uv_connect_t *req, int status)
{
    struct poller *p = req->data;
    int rc;

    /* A closed or timed-out attempt reports UV_ECANCELED here; its failure
     * was already counted. */
    if (p->state != POLLER_CONNECTING) {
        /* nothing */
    } else if (status < 0 && ++p->addr_tried < p->upstream->n) {
        /* a name's next address at once, quietly: it may well answer */
        p->upstream_at++;
        p->next_addr_now = true;
        p->state = POLLER_DRAINING;
        poller_close_tcp(p);
    } else if (status < 0) {
        p->addr_tried = 0;
        poller_fail(p, POLLER_E_CONNECT, status);
    } else {
        p->addr_tried = 0;
        p->counters.connects++;
        if (p->counters.connects > 1 || p->counters.connect_failures > 0)
            p->counters.reconnects++;
        p->connection++;
        p->connected = true;
        p->state = POLLER_CONNECTED;
        p->fresh_connection = true;
        p->in_flight = false;
        rc = uv_read_start((uv_stream_t *)&p->tcp, poller_on_alloc, poller_on_read);
        if (rc < 0)
            poller_fail(p, POLLER_E_READ, rc);
        else /* at once: after a reconnect the gap should be no longer than the outage */
            poller_maybe_send(p, true);
    }
}

static void poller_start_connect(struct poller *p)
{
    int rc;

    p->state = POLLER_CONNECTING;
    p->attempt_ns = uv_hrtime();
    const struct sockaddr *sa = (const struct sockaddr *)&p->upstream
                                    ->a[p->upstream_at % (p->upstream->n ? p->upstream->n : 1)];
    rc = p->upstream->n ? dial_init(p->loop, &p->tcp, sa->sa_family) : UV_EAI_NONAME;
    if (rc < 0) {
        /* No handle to close: go straight to the backoff. */
        p->last_error = POLLER_E_SETUP;
        p->last_uv_error = rc;
        p->counters.errors[POLLER_E_SETUP]++;
        p->counters.connect_failures++;
        poller_note_failure(p, POLLER_E_SETUP, rc);
        poller_schedule_reconnect(p);
    } else {
        p->tcp.handle.data = p;
        p->tcp_open = true;
        p->open_handles++;
        p->connect_req.data = p;
        addr_format(sa, p->peer, sizeof p->peer);
        rc = dial_connect(&p->connect_req, &p->tcp, sa, poller_on_connect);
        if (rc < 0)
            poller_fail(p, POLLER_E_CONNECT, rc);
    }
}

static void poller_on_backoff(uv_timer_t *t)
{
    struct poller *p = t->data;

    if (p->state == POLLER_BACKOFF)
        poller_start_connect(p);
}

/* The tick drives sampling and both timeouts, so no timer per request. */
static void poller_on_tick(uv_timer_t *t)
{
    struct poller *p = t->data;

    switch (p->state) {
    case POLLER_CONNECTING:
        if (poller_ms_since(p->attempt_ns) >= POLLER_CONNECT_TIMEOUT_MS)
            poller_fail(p, POLLER_E_CONNECT_TIMEOUT, UV_ETIMEDOUT);
        break;
    case POLLER_CONNECTED:
        if (!p->in_flight) {
            poller_maybe_send(p, true);
        } else if (poller_ms_since(p->attempt_ns) >= POLLER_REPLY_TIMEOUT_MS) {
            poller_fail(p, POLLER_E_REPLY_TIMEOUT, UV_ETIMEDOUT);
        } else {
            /* Skip rather than queue: a slow memcached gets one request at
             * a time, and samples never pile up. */
            p->counters.ticks_skipped++;
        }
        break;
    case POLLER_IDLE:
    case POLLER_DRAINING:
    case POLLER_BACKOFF:
    case POLLER_CLOSING: break;
    }
}

/* ---- public ------------------------------------------------------------ */

int poller_open(struct poller *p, uv_loop_t *loop, const struct addr_list *upstream,
                unsigned interval_ms, poller_sample_cb cb, void *ud)
{
    int rc = UV_EINVAL;

    memset(p, 0, sizeof *p);
    if (!loop || !cb || !upstream || !upstream->n)
        goto out;
    p->upstream = upstream;
    addr_format((const struct sockaddr *)&upstream->a[0], p->peer, sizeof p->peer);
    p->loop = loop;
    p->interval_ms = interval_ms < POLLER_INTERVAL_MIN_MS ? POLLER_INTERVAL_MIN_MS : interval_ms;
    p->backoff_ms = POLLER_BACKOFF_MIN_MS;
    p->on_sample = cb;
    p->ud = ud;
    stats_sample_init(&p->sample);
    stats_kv_list_init(&p->prev_settings, STATS_LIST_FIELDS_MAX, STATS_LIST_TEXT_MAX);
    rc = uv_timer_init(loop, &p->tick);
    if (rc < 0)
        goto out;
    rc = uv_timer_init(loop, &p->backoff);
    if (rc < 0)
        goto fail_tick;
    p->tick.data = p;
    p->backoff.data = p;
    p->open_handles = 2;
    /* The first sample comes from the connect callback, not the first tick. */
    uv_timer_start(&p->tick, poller_on_tick, p->interval_ms, p->interval_ms);
    poller_start_connect(p);
    goto out;
fail_tick:
    /* Nothing was allocated yet, so nothing waits on the close callback. */
    uv_close((uv_handle_t *)&p->tick, NULL);
out:
    return rc;
}

void poller_sample_now(struct poller *p)
{
    if (p->state != POLLER_IDLE && p->state != POLLER_CLOSING) {
        p->counters.requested++;
        p->want_now = true;
        poller_maybe_send(p, false);
    }
}

void poller_close(struct poller *p, void (*on_closed)(struct poller *))
{
    /* A second close, or a close of a poller never opened, has nothing to
     * do; its on_closed would have no handle left to wait for. */
    if (p->state != POLLER_IDLE && p->state != POLLER_CLOSING) {
        if (p->in_flight)
            p->counters.samples_discarded++;
        p->in_flight = false;
        p->connected = false;
        p->want_now = false;
        p->state = POLLER_CLOSING;
        p->on_closed = on_closed;
        uv_timer_stop(&p->tick);
        uv_timer_stop(&p->backoff);
        uv_close((uv_handle_t *)&p->tick, poller_on_timer_closed);
        uv_close((uv_handle_t *)&p->backoff, poller_on_timer_closed);
        /* While draining, tcp is already closing and its callback is pending. */
        poller_close_tcp(p);
    }
}
