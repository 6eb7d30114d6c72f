/* snapshot: connect, send the one request, parse item lines into rows,
 * stop reading while the recorder is full, and end with a header job. */
#include "server/snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jsonb.h"
#include "core/log.h"
#include "core/sample.h"

static const char *const snapshot_end_texts[] = {
#define SNAPSHOT_END_TEXT(id, text) text,
    SNAPSHOT_ENDS(SNAPSHOT_END_TEXT)
#undef SNAPSHOT_END_TEXT
};

const char *snapshot_end_text(enum snapshot_end e)
{
    return (unsigned)e < SNAPSHOT_END__COUNT ? snapshot_end_texts[e] : "?";
}

static void snapshot_connect(struct snapshot *s);

/* --- ending ------------------------------------------------------------------ */

static void snapshot_on_retry(uv_timer_t *t)
{
    snapshot_connect(t->data);
}

/* The socket's close callback starts what waited for it: the next address
 * of the name, or a try after BUSY (the handle is reused only now). */
static void snapshot_handle_closed(uv_handle_t *h)
{
    struct snapshot *s = h->data;
    if (--s->open_handles == 0 && s->on_done) {
        s->on_done(s);
        return;
    }
    if (h == &s->sock.handle && s->retry_ms && !s->done)
        uv_timer_start(&s->timer, snapshot_on_retry, s->retry_ms - 1, 0);
    if (h == &s->sock.handle)
        s->retry_ms = 0;
}

char *snapshot_header_json(const struct snapshot *s)
{
    struct buf b;
    buf_init(&b, BUF_UNBOUNDED);
    buf_printf(&b, "{\"ended_ns\":%lld,\"items\":%llu,\"bytes\":%llu,\"complete\":%s",
               (long long)s->ended_ns, (unsigned long long)s->items, (unsigned long long)s->bytes,
               s->end == SNAPSHOT_END_COMPLETE ? "true" : "false");
    if (s->end != SNAPSHOT_END_COMPLETE) {
        const char *why = snapshot_end_text(s->end);
        buf_puts(&b, ",\"reason\":");
        jsonb_string(&b, why, strlen(why));
    }
    buf_printf(&b, ",\"bad_lines\":%llu,\"sampled_out\":%llu}", (unsigned long long)s->bad_lines,
               (unsigned long long)s->sampled_out);
    return buf_take(&b);
}

/* The header: once memcached accepted the request (an item or END came,
 * or the dump was cut after it was sent) -- a refusal records nothing. */
static void snapshot_record_header(struct snapshot *s)
{
    struct rec_job *j;
    if (!s->accepted || s->recorded)
        return;
    rec_flush(s->rec); /* the rows first: the header says how many */
    j = calloc(1, sizeof *j);
    if (!j)
        return;
    j->kind = REC_JOB_SNAPSHOT;
    j->t_ns = s->started_ns;
    j->phase_id = s->snap;
    j->text = snapshot_header_json(s);
    if (!j->text) {
        free(j);
        return;
    }
    s->recorded = rec_push_job(s->rec, j);
}

static void snapshot_close_sock(struct snapshot *s)
{
    if (!s->sock_open)
        return;
    s->sock_open = false;
    s->connected = false;
    s->reading = false;
    uv_close(&s->sock.handle, snapshot_handle_closed);
}

static void snapshot_finish(struct snapshot *s, enum snapshot_end end, int uv_err)
{
    if (s->done)
        return;
    s->done = true;
    s->end = end;
    s->uv_err = uv_err;
    s->ended_ns = clock_wall_ns();
    snapshot_record_header(s);
    uv_timer_stop(&s->timer);
    snapshot_close_sock(s);
    uv_close((uv_handle_t *)&s->timer, snapshot_handle_closed);
}

/* --- items ------------------------------------------------------------------- */

static void snapshot_item(struct snapshot *s, const struct mclog_event *ev, int64_t now_ns)
{
    struct rec_row *row = &s->row;
    int64_t now_s = now_ns / 1000000000;
    uint64_t key_hash = keyfmt_hash(ev->key, ev->key_len);
    if (!sample_keep(key_hash, s->cfg.sample_keys)) {
        s->sampled_out++;
        return;
    }
    memset(row, 0, offsetof(struct rec_row, answer));
    row->answer[0] = '\0';
    row->kind = REC_ROW_ITEM;
    row->seq = s->items + 1;
    row->snap = s->snap;
    row->t_ns = now_ns;
    row->key_hash = key_hash;
    row->key_len = (uint16_t)ev->key_len;
    row->key_text_len = (int16_t)keyfmt_text(s->cfg.key_mode, ev->key, ev->key_len, row->key_text,
                                             sizeof row->key_text);
    row->class_id = ev->clsid;
    row->value_len = ev->size;
    /* memcached prints exp=-1 for an item that never expires; one past its
     * time but not yet reclaimed has no TTL left */
    row->has_exptime = true;
    row->exptime = ev->exp < 0 ? -1 : (ev->exp > now_s ? ev->exp - now_s : 0);
    row->idle_s = ev->la < now_s ? now_s - ev->la : 0;
    row->fetched = ev->fetched;
    row->has_flags = ev->has_flags;
    row->flags = (uint32_t)ev->flags;
    row->latency_ns = -1;
    rec_push(s->rec, row);
    s->items++;
    s->bytes += ev->size > 0 ? (uint64_t)ev->size : 0;
}

/* A line that is not an item before the first item: memcached's answer to
 * the request. BUSY: tried again later; NOTSTARTED (nothing to crawl): an
 * empty snapshot; anything else: refused, in memcached's words. */
static void snapshot_answer(struct snapshot *s, const char *line)
{
    snprintf(s->words, sizeof s->words, "%s", line);
    if (!strncmp(line, "NOTSTARTED", 10)) {
        s->accepted = true;
        snapshot_finish(s, SNAPSHOT_END_COMPLETE, 0);
        return;
    }
    if (strncmp(line, "BUSY", 4) != 0) {
        snapshot_finish(s, SNAPSHOT_END_REFUSED, 0);
        return;
    }
    s->busy_tries++;
    if (s->busy_tries > s->cfg.busy_retries) {
        snapshot_finish(s, SNAPSHOT_END_BUSY, 0);
        return;
    }
    if (s->busy_tries == 1) /* once per snapshot: the tries are counted in busy_tries */
        log_write(LOG_LEVEL_INFO, s->peer,
                  "snapshot %u: memcached's crawler is busy (%s): trying again every %u ms, "
                  "at most %u times",
                  s->snap, line, s->cfg.busy_wait_ms, s->cfg.busy_retries);
    /* a fresh connection later: this one may hold nothing else */
    uv_timer_stop(&s->timer);
    s->addr_at = 0;
    s->retry_ms = s->cfg.busy_wait_ms + 1;
    snapshot_close_sock(s);
}

/* Every line in buf[0..len). */
static void snapshot_feed(struct snapshot *s, const char *buf, size_t len)
{
    int64_t now_ns = clock_wall_ns();
    size_t at = 0;
    while (!s->done && at < len && s->sock_open) {
        size_t used = 0;
        enum mclog_result r = mclog_next(&s->parser, buf + at, len - at, &used, &s->ev);
        at += used;
        if (r == MCLOG_NEED_MORE)
            break;
        switch (s->ev.kind) {
        case MCLOG_EV_ITEM:
            s->accepted = true;
            snapshot_item(s, &s->ev, now_ns);
            break;
        case MCLOG_EV_END:
            s->accepted = true;
            snapshot_finish(s, SNAPSHOT_END_COMPLETE, 0);
            break;
        case MCLOG_EV_ERROR:
            if (!s->accepted && !s->items) {
                snapshot_answer(s, s->ev.line);
                break;
            }
            s->bad_lines++;
            break;
        default:
            if (!s->accepted) {
                snapshot_answer(s, s->ev.line);
                break;
            }
            s->other_lines++;
            break;
        }
        if (used == 0) /* defensive: the parser always consumes a line */
            break;
    }
}

/* --- libuv ------------------------------------------------------------------- */

static void snapshot_on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct snapshot *s = h->data;
    (void)hint;
    buf->base = s->rbuf;
    buf->len = sizeof s->rbuf;
}

static void snapshot_on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct snapshot *s = st->data;
    if (s->done || !s->sock_open)
        return;
    if (nread < 0) {
        snapshot_finish(s, nread == UV_EOF ? SNAPSHOT_END_CUT : SNAPSHOT_END_IO,
                        nread == UV_EOF ? 0 : (int)nread);
        return;
    }
    if (nread == 0)
        return;
    s->last_byte_mono_ns = clock_mono_ns();
    snapshot_feed(s, buf->base, (size_t)nread);
    if (s->done || !s->sock_open)
        return;
    /* the rows of this read into the ring: a full one stops reading here,
     * so memcached's crawler waits on TCP, not on our memory */
    rec_flush(s->rec);
    if (rec_blocked(s->rec) && s->reading) {
        uv_read_stop(&s->sock.stream);
        s->reading = false;
        s->paused = true;
        s->pauses++;
    }
}

void snapshot_resume(struct snapshot *s)
{
    if (!s || s->done || !s->paused || !s->sock_open || rec_blocked(s->rec))
        return;
    s->paused = false;
    s->last_byte_mono_ns = clock_mono_ns();
    int rc = uv_read_start(&s->sock.stream, snapshot_on_alloc, snapshot_on_read);
    if (rc < 0) {
        snapshot_finish(s, SNAPSHOT_END_IO, rc);
        return;
    }
    s->reading = true;
}

static void snapshot_on_write(uv_write_t *req, int status)
{
    struct snapshot *s = req->data;
    if (status < 0 && !s->done && status != UV_ECANCELED)
        snapshot_finish(s, SNAPSHOT_END_IO, status);
}

static void snapshot_on_tick(uv_timer_t *t);

static void snapshot_on_connect(uv_connect_t *req, int status)
{
    struct snapshot *s = req->data;
    static const char request[] = SNAPSHOT_REQUEST;
    if (s->done || !s->sock_open)
        return;
    if (status < 0) {
        if (s->addr_at + 1 < s->cfg.memcached->n) {
            s->addr_at++; /* the next address of the name, once this socket is closed */
            uv_timer_stop(&s->timer);
            s->retry_ms = 1;
            snapshot_close_sock(s);
            return;
        }
        snapshot_finish(s, SNAPSHOT_END_CONNECT, status);
        return;
    }
    s->connected = true;
    s->started_ns = clock_wall_ns(); /* the request goes now (after BUSY: again) */
    s->last_byte_mono_ns = clock_mono_ns();
    mclog_init(&s->parser);
    uv_buf_t b = uv_buf_init((char *)request, sizeof request - 1);
    s->write_req.data = s;
    int rc = uv_write(&s->write_req, &s->sock.stream, &b, 1, snapshot_on_write);
    if (rc == 0)
        rc = uv_read_start(&s->sock.stream, snapshot_on_alloc, snapshot_on_read);
    if (rc < 0) {
        snapshot_finish(s, SNAPSHOT_END_IO, rc);
        return;
    }
    s->reading = true;
    uv_timer_start(&s->timer, snapshot_on_tick, 1000, 1000);
}

/* Once a second: the connect and idle timeouts. */
static void snapshot_on_tick(uv_timer_t *t)
{
    struct snapshot *s = t->data;
    uint64_t now = clock_mono_ns();
    if (s->done)
        return;
    if (!s->connected && s->sock_open &&
        now - s->attempt_mono_ns >= (uint64_t)SNAPSHOT_CONNECT_TIMEOUT_MS * 1000000) {
        snapshot_finish(s, SNAPSHOT_END_CONNECT, UV_ETIMEDOUT);
        return;
    }
    if (s->connected && s->reading &&
        now - s->last_byte_mono_ns >= (uint64_t)s->cfg.idle_timeout_ms * 1000000) {
        snapshot_finish(s, SNAPSHOT_END_TIMEOUT, UV_ETIMEDOUT);
        return;
    }
}

static void snapshot_connect(struct snapshot *s)
{
    const struct addr_list *al = s->cfg.memcached;
    if (s->done)
        return;
    const struct sockaddr *sa = (const struct sockaddr *)&al->a[s->addr_at];
    int rc = dial_init(s->loop, &s->sock, sa->sa_family);
    if (rc < 0) {
        snapshot_finish(s, SNAPSHOT_END_SETUP, rc);
        return;
    }
    s->sock.handle.data = s;
    s->sock_open = true;
    s->open_handles++;
    s->attempt_mono_ns = clock_mono_ns();
    addr_format(sa, s->peer, sizeof s->peer);
    s->connect_req.data = s;
    rc = dial_connect(&s->connect_req, &s->sock, sa, snapshot_on_connect);
    if (rc < 0) {
        snapshot_finish(s, SNAPSHOT_END_CONNECT, rc);
        return;
    }
    uv_timer_start(&s->timer, snapshot_on_tick, 1000, 1000);
}

int snapshot_open(struct snapshot *s, uv_loop_t *loop, struct recorder *rec,
                  const struct snapshot_config *cfg, uint32_t snap, snapshot_done_cb on_done,
                  void *data)
{
    if (!loop || !rec || !cfg || !cfg->memcached || !cfg->memcached->n)
        return UV_EINVAL;
    memset(s, 0, offsetof(struct snapshot, rbuf));
    s->loop = loop;
    s->rec = rec;
    s->cfg = *cfg;
    if (!s->cfg.busy_wait_ms)
        s->cfg.busy_wait_ms = SNAPSHOT_BUSY_WAIT_MS;
    if (!s->cfg.idle_timeout_ms)
        s->cfg.idle_timeout_ms = SNAPSHOT_IDLE_TIMEOUT_MS;
    s->snap = snap;
    s->on_done = on_done;
    s->data = data;
    s->started_ns = clock_wall_ns();
    int rc = uv_timer_init(loop, &s->timer);
    if (rc < 0)
        return rc;
    s->timer.data = s;
    s->open_handles = 1;
    snapshot_connect(s);
    return 0;
}

void snapshot_stop(struct snapshot *s)
{
    if (!s || s->done)
        return;
    /* the request was sent: what memcached dumped so far is a snapshot */
    if (s->connected)
        s->accepted = true;
    snapshot_finish(s, SNAPSHOT_END_STOPPED, 0);
}
