/* upstream: memcached connections -- connecting with backoff, batching the
 * requests of one loop iteration into one write, reading answers and
 * pairing each with the request it answers, whichever client sent it.
 *
 * An upstream connection carries one FIFO (struct pending) of the requests
 * it forwarded. Answers come back in that order, so the head of the FIFO
 * says whose answer starts next -- except for requests whose answer may be
 * suppressed (noreply, meta q): pending_owner skips those that cannot have
 * produced the line. The first line of an answer therefore decides its
 * owner; while that line is incomplete and its owner ambiguous, its bytes
 * are held back (at most UP_HELD_MAX). Everything else is forwarded as
 * slices of the buffer it was read into. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/escape.h"
#include "core/log.h"
#include "server/binrec.h"
#include "server/conn.h"
#include "server/readrec.h"

/* How an upstream connection ended: never made, closed by memcached (EOF
 * or reset), or reset by slabtap because what came could not be trusted. */
enum up_loss { UP_LOSS_CONNECT, UP_LOSS_CLOSED, UP_LOSS_BROKEN };
/* how long memcached has to answer the probe's mn before it counts as gone */
#define UP_PROBE_TIMEOUT_MS 1000
static void up_down(struct upconn *up, const char *why, enum up_loss loss);
static void up_closed_by_memcached(struct upconn *up);
static void up_connect(struct upconn *up);

static bool any_upstream_ready(const struct proxy *px)
{
    for (const struct upconn *u = px->ups; u; u = u->next)
        if (u->state == UP_READY)
            return true;
    return false;
}

/* --- lifecycle ------------------------------------------------------------- */

static void up_on_closed(uv_handle_t *h)
{
    struct upconn *up = h->data;
    struct proxy *px = up->px;
    if (h == (uv_handle_t *)&up->sock)
        up->sock_open = false;
    if (--up->open_handles)
        return;
    if (up->prev)
        up->prev->next = up->next;
    else
        px->ups = up->next;
    if (up->next)
        up->next->prev = up->prev;
    pending_free(&up->pend);
    free(up);
    px->upstreams_open--;
    proxy_maybe_stopped(px);
}

static void up_close_sock(struct upconn *up)
{
    if (up->state == UP_READY)
        up->px->m.upstream_connections_open--;
    if (up->sock_open && !uv_is_closing((uv_handle_t *)&up->sock))
        uv_close((uv_handle_t *)&up->sock, up_on_closed);
    up->reading = false;
}

struct upconn *upconn_open(struct proxy *px, bool shared, struct conn *owner)
{
    static uint32_t next_id;
    struct upconn *up = calloc(1, sizeof *up);
    if (!up)
        return NULL;
    up->px = px;
    up->id = ++next_id;
    up->shared = shared;
    up->owner = owner;
    up->backoff_ms = px->cfg.backoff_min_ms;
    up->state = UP_DOWN;
    pending_init(&up->pend, &px->pending_bytes);
    mc_resp_init(&up->rs);
    uv_timer_init(px->loop, &up->retry);
    up->retry.data = up;
    up->open_handles = 1;
    up->next = px->ups;
    if (px->ups)
        px->ups->prev = up;
    px->ups = up;
    px->upstreams_open++;
    up_connect(up);
    return up;
}

static void up_undirty(struct upconn *up)
{
    struct upconn **p = &up->px->dirty;
    while (*p && *p != up)
        p = &(*p)->dirty_next;
    if (*p)
        *p = up->dirty_next;
    up->dirty = false;
    if (up->out) {
        pwrite_put(&up->px->pool, up->out);
        up->out = NULL;
    }
}

/* --- the FIFO ------------------------------------------------------------- */

/* The answer being read is over: nobody owns the next bytes yet. */
static void up_unit_done(struct upconn *up)
{
    up->cur = NULL;
    up->cur_resolved = false;
}

static void up_pop(struct upconn *up, struct pending_entry *e)
{
    struct conn *c = e->owner;
    if (e->req.reply != MC_REPLY_SILENT || e->barrier)
        up->loud--;
    if (e->barrier)
        up->barriers--;
    pending_pop(&up->pend);
    if (c)
        conn_entry_done(c);
}

/* Answers of slabtap's own that have reached the head go out now: every
 * answer before them is in. */
static void up_give_local(const struct pending_entry *e)
{
    if (e->owner && !e->muted)
        conn_reply_copy(e->owner, e->local, strlen(e->local));
}

static void up_deliver_locals(struct upconn *up)
{
    struct pending_entry *e;
    while ((e = pending_head(&up->pend)) != NULL && e->local) {
        up_give_local(e);
        up_pop(up, e);
    }
}

static void up_entry_done(struct upconn *up, struct pending_entry *e)
{
    up_pop(up, e);
    up_deliver_locals(up);
}

static const char *silent_label(const struct mc_request *r)
{
    return mc_cmd_name(r->cmd)[0] == 'm' ? "quiet" : "noreply";
}

/* Every forwarded request still waiting gets its row, in order, and --
 * when tell -- memcached's kind of answer for a broken server (not when
 * memcached closed on purpose: direct, the client reads nothing more). */
static void up_fail_pending(struct upconn *up, const char *answer, bool tell)
{
    struct proxy *px = up->px;
    struct pending_entry *e;
    while ((e = pending_head(&up->pend)) != NULL) {
        struct conn *c = e->owner;
        if (tell && !e->barrier && !e->muted && e->req.reply != MC_REPLY_SILENT &&
            e->req.reply != MC_REPLY_CLOSE && c && !c->closing && !c->client_eof) {
            conn_reply_copy(c, PROXY_UPSTREAM_ERROR_LINE, sizeof PROXY_UPSTREAM_ERROR_LINE - 1);
            px->m.upstream_error_replies++;
        }
        if (!e->barrier)
            proxy_record(px, e,
                         e->req.reply == MC_REPLY_SILENT && !strcmp(answer, "no_answer")
                             ? silent_label(&e->req)
                             : answer,
                         SIZE_MAX, -1);
        up_entry_done(up, e);
    }
    up->in_multi = false;
    up->held_len = 0;
    up->barriers = 0;
    up->loud = 0;
    up_unit_done(up);
    conn_reply_flush_all(px);
}

void upconn_close(struct upconn *up)
{
    if (up->closing)
        return;
    up->closing = true;
    up_undirty(up);
    up_fail_pending(up, "no_answer", true);
    up_close_sock(up);
    up->state = UP_DOWN;
    uv_timer_stop(&up->retry);
    uv_close((uv_handle_t *)&up->retry, up_on_closed);
}

void upconn_forget_client(struct upconn *up, struct conn *c)
{
    for (size_t i = 0; i < up->pend.count; i++) {
        struct pending_entry *e = pending_at(&up->pend, i);
        if (e->owner == c)
            e->owner = NULL;
    }
    if (up->cur == c)
        up->cur = NULL;
    if (up->owner == c)
        up->owner = NULL;
    if (up->shared && up->clients)
        up->clients--;
}

struct pending_entry *upconn_push(struct upconn *up, struct conn *c)
{
    struct pending_entry *e = pending_push(&up->pend);
    if (!e)
        return NULL;
    e->owner = c;
    e->conn_id = c ? c->id : 0;
    if (c)
        c->inflight++;
    return e;
}

static bool is_meta_write_or_read(enum mc_cmd cmd)
{
    return cmd == MC_CMD_MS || cmd == MC_CMD_MG || cmd == MC_CMD_MD || cmd == MC_CMD_MA;
}

/* A meta-quiet request's answer, when one comes, looks like the next
 * request's (ms q then ms, or ms q then ms q: both may answer NS). With O
 * or k the answer names its request; without, a barrier between them tells
 * the two apart. None is needed before an mn. */
bool upconn_needs_split(struct upconn *up, const struct mc_request *next)
{
    struct pending_entry *t = pending_tail(&up->pend);
    return t && !t->barrier && t->req.reply == MC_REPLY_SILENT &&
           is_meta_write_or_read(t->req.cmd) && !t->req.has_opaque && !t->req.want_key &&
           !up->stream && (!next || next->cmd != MC_CMD_MN);
}

/* --- writing requests ------------------------------------------------------ */

static void up_on_write_done(uv_write_t *req, int status)
{
    struct pwrite *w = (struct pwrite *)req;
    struct upconn *up = w->owner;
    struct proxy *px = up->px;
    (void)status; /* a failed write shows up as a read error */
    pwrite_put(&px->pool, w);
    if (!up->closing && up->backlogged && dial_queued(&up->sock) < px->cfg.write_backlog_max) {
        up->backlogged = false;
        proxy_update_reading(px);
    }
}

static void up_send_out(struct upconn *up)
{
    struct proxy *px = up->px;
    struct pwrite *w = up->out;
    up->out = NULL;
    if (!w)
        return;
    if (!w->nsegs || up->state != UP_READY || !up->sock_open) {
        pwrite_put(&px->pool, w);
        return;
    }
    w->owner = up;
    px->m.upstream_writes++;
    int rc = pwrite_send(&px->pool, (uv_stream_t *)&up->sock, w, up_on_write_done, false);
    if (rc < 0)
        up_down(up, uv_strerror(rc), UP_LOSS_CLOSED);
    else if (rc == 0 && dial_queued(&up->sock) >= px->cfg.write_backlog_max)
        up->backlogged = true; /* its clients pause until it drains */
}

bool upconn_send(struct upconn *up, struct pbuf *b, size_t off, size_t len)
{
    struct proxy *px = up->px;
    if (len == 0)
        return true;
    if (!up->dirty) {
        up->dirty = true;
        up->dirty_next = px->dirty;
        px->dirty = up;
    }
    if (up->out && !pwrite_add(up->out, b, off, len))
        up_send_out(up); /* a full batch goes now; the next one follows it */
    if (!up->out) {
        if (!(up->out = pwrite_get(&px->pool)))
            return false;
        pwrite_add(up->out, b, off, len);
    }
    return true;
}

void upconn_push_local(struct upconn *up, struct conn *c, const char *answer)
{
    struct pending_entry *e;
    if (!pending_head(&up->pend)) {
        conn_reply_copy(c, answer, strlen(answer)); /* nothing before it */
        return;
    }
    if (upconn_needs_split(up, NULL))
        upconn_push_barrier(up); /* the quiet request before it must not look like it */
    if (!(e = upconn_push(up, c)))
        return;
    memset(&e->req, 0, sizeof e->req);
    e->req.cmd = MC_CMD_NONE;
    e->req.reply = MC_REPLY_SILENT; /* never a line of memcached's */
    e->local = answer;
    /* a silent request before it is confirmed by a barrier, which the
     * batch gets because its tail is silent now */
}

void upconn_mute_tail(struct upconn *up, struct conn *c, size_t n)
{
    for (size_t i = up->pend.count; i > 0 && n > 0; i--) {
        struct pending_entry *e = pending_at(&up->pend, i - 1);
        if (e->owner == c && !e->barrier) {
            e->muted = true;
            n--;
        }
    }
}

void upconn_push_barrier(struct upconn *up)
{
    struct pending_entry *e = upconn_push(up, NULL);
    if (!e)
        return;
    memset(&e->req, 0, sizeof e->req);
    e->req.cmd = MC_CMD_MN;
    e->req.reply = MC_REPLY_LINE;
    e->barrier = true;
    up->loud++;
    up->barriers++;
    upconn_send(up, up->px->mn_buf, 0, 4);
}

/* A batch that ends in silent requests gets a barrier: its MN tells, at
 * once, that every silent request before it is done (and which failed). A
 * private upstream may be in the middle of a client's request: not then. */
static void up_maybe_barrier(struct upconn *up)
{
    struct pending_entry *t = pending_tail(&up->pend);
    if (!t || t->barrier || t->req.reply != MC_REPLY_SILENT || up->stream)
        return;
    if (!up->shared && up->owner && (up->owner->quit || !mc_req_at_boundary(&up->owner->rq)))
        return;
    upconn_push_barrier(up);
}

void upconn_flush(struct upconn *up)
{
    if (up->closing || up->state != UP_READY) {
        up_undirty(up);
        return;
    }
    up_maybe_barrier(up);
    up_send_out(up);
}

void upconn_flush_all(struct proxy *px)
{
    struct upconn *up;
    while ((up = px->dirty) != NULL) {
        px->dirty = up->dirty_next;
        up->dirty = false;
        upconn_flush(up);
    }
}

void upconn_shutdown_write(struct upconn *up)
{
    upconn_flush(up);
    up->draining = true;
    if (up->sock_open && up->state == UP_READY)
        uv_shutdown(&up->shutdown_req, (uv_stream_t *)&up->sock, NULL);
}

/* --- reading answers ------------------------------------------------------- */

static void up_emit(struct upconn *up, struct pbuf *b, size_t from, size_t to)
{
    if (up->cur && to > from)
        conn_reply(up->cur, b, from, to - from);
}

static void up_on_silent(void *ud, struct pending_entry *e)
{
    struct upconn *up = ud;
    struct proxy *px = up->px;
    if (e->local) { /* it was waiting for the silent ones before it */
        up_give_local(e);
        if (e->owner)
            conn_entry_done(e->owner);
        return;
    }
    if (e->req.cmd == MC_CMD_MG)
        proxy_count_read(px, e, NULL, 0, 0); /* a quiet mg is silent only on a miss */
    proxy_record(px, e, silent_label(&e->req), SIZE_MAX, -1);
    /* pending_owner pops it (never a barrier, never a loud one): the
     * bookkeeping of up_entry_done without the pop */
    if (e->owner)
        conn_entry_done(e->owner);
}

static void up_count_value(struct upconn *up, struct pending_entry *e, const struct mc_line *l)
{
    if (l->code == MC_CODE_VALUE) {
        if (e->rseq)
            readrec_value(up->px, e, l);
        up->unit_hits++;
        up->unit_bytes += l->data_len > 0 ? (uint64_t)l->data_len : 0;
    }
}

/* The answer at the head is complete; l is its first (or, for a multi,
 * last) line. */
static void up_answered(struct upconn *up, const struct mc_line *l)
{
    struct proxy *px = up->px;
    struct pending_entry *e = pending_head(&up->pend);
    int64_t latency = up->unit_t0 >= e->t_sent ? (int64_t)(up->unit_t0 - e->t_sent) : 0;
    if (proxy_cmd_is_read(e->req.cmd))
        proxy_count_read(px, e, l, up->unit_hits, up->unit_bytes);
    proxy_record(px, e, l->text, l->len, latency);
    up_entry_done(up, e);
}

/* What memcached sends a connection past its -c limit, then closes it. */
static const char MC_TOO_MANY_CONNS[] = "ERROR Too many open connections";

static void up_unpaired(struct upconn *up, const struct mc_line *l, const char *what)
{
    char shown[128];
    if (!up->shared && up->owner && l->len == sizeof MC_TOO_MANY_CONNS - 1 &&
        !memcmp(l->text, MC_TOO_MANY_CONNS, l->len)) {
        /* memcached refused this client's own connection: the client gets
         * the refusal and the close, as direct */
        static const char line[] = "ERROR Too many open connections\r\n";
        conn_reply_copy(up->owner, line, sizeof line - 1);
        up_closed_by_memcached(up);
        return;
    }
    up->px->m.unpaired_responses++;
    json_escape(shown, sizeof shown, l->text, l->len < 60 ? l->len : 60);
    log_throttled(&up->px->throttle.unpaired, LOG_LEVEL_WARN, up->px->upstream_peer,
                  "upstream %u: %s '%s'; reconnecting", up->id, what, shown);
    up_down(up, "sent an answer nobody asked for", UP_LOSS_BROKEN);
}

/* The first line of an answer is known (l, or NULL when the head is a loud
 * request, whose answer this must be): whose answer it is. Returns false
 * when the stream can no longer be trusted (the upstream is being reset). */
static bool up_resolve(struct upconn *up, const struct mc_line *l)
{
    struct pending_entry *e =
        l ? pending_owner(&up->pend, l, up_on_silent, up) : pending_head(&up->pend);
    if (!e) {
        up_unpaired(up, l, "answer pairs with no request:");
        return false;
    }
    up->cur = e->barrier || e->muted ? NULL : e->owner;
    up->cur_resolved = true;
    up->unit_t0 = up->line_t0;
    up->unit_hits = 0;
    up->unit_bytes = 0;
    if (up->held_len && up->cur)
        conn_reply_copy(up->cur, up->held, up->held_len);
    up->held_len = 0;
    return true;
}

static void up_emit_to(struct upconn *up, struct pbuf *b, size_t *seg_start, size_t pos)
{
    up_emit(up, b, *seg_start, pos);
    *seg_start = pos;
}

/* One complete line (its data block included) at pos. false: stop. */
static bool up_line(struct upconn *up, const struct mc_line *l, struct pbuf *b, size_t *seg_start,
                    size_t pos)
{
    struct pending_entry *e;
    bool first = !up->in_multi;
    if (first && !up->cur_resolved && !up_resolve(up, l))
        return false;
    e = pending_head(&up->pend);
    if (first && e->barrier) {
        bool ok = l->code == MC_CODE_MN || l->code == MC_CODE_ERROR;
        up_entry_done(up, e);
        *seg_start = pos; /* slabtap's own: never reaches a client */
        up_unit_done(up);
        if (!ok)
            up_unpaired(up, l, "expected MN, got");
        return ok;
    }
    if (first && e->req.reply == MC_REPLY_STREAM) {
        struct conn *c = e->owner;
        bool ok = l->code == MC_CODE_OK;
        up->stream = ok; /* watch: the rest is the client's, unparsed */
        if (!ok)         /* refused: its line goes out before anything it unblocks */
            up_emit_to(up, b, seg_start, pos);
        up_answered(up, l);
        if (c)
            conn_watch_answered(c, ok);
        if (ok)
            return false;
        up_unit_done(up);
        return true;
    }
    up_count_value(up, e, l);
    if (!mc_answer_ends(&e->req, l, first)) {
        up->in_multi = true;
        return true;
    }
    up->in_multi = false;
    /* the answer's bytes first: answers of slabtap's own that its end
     * releases must come after them */
    up_emit_to(up, b, seg_start, pos);
    up_answered(up, l);
    up_unit_done(up);
    return true;
}

/* The buffer ended inside the first line of an answer (or its data block).
 * Decide the owner now if possible, else hold the line's bytes back. */
static bool up_partial_first_line(struct upconn *up, struct pbuf *b, size_t *seg_start, size_t n)
{
    struct pending_entry *h = pending_head(&up->pend);
    if (up->rs.state == MC_RESP_DATA) /* the line is whole, its data is not */
        return up_resolve(up, &up->rs.pending);
    if (h && !h->barrier && h->req.reply != MC_REPLY_SILENT)
        return up_resolve(up, NULL);
    if (up->held_len + (n - *seg_start) > sizeof up->held) {
        up->px->m.unpaired_responses++;
        up_down(up, "sent an over-long answer line nobody can own", UP_LOSS_BROKEN);
        return false;
    }
    memcpy(up->held + up->held_len, b->data + *seg_start, n - *seg_start);
    up->held_len += n - *seg_start;
    *seg_start = n;
    return true;
}

static void up_data(struct upconn *up, struct pbuf *b, size_t n)
{
    uint64_t now = uv_hrtime();
    size_t pos = 0, seg_start = 0;
    while (pos < n && !up->stream && !up->closing && up->state == UP_READY) {
        struct mc_line line;
        size_t used;
        if (mc_resp_at_boundary(&up->rs))
            up->line_t0 = now;
        enum mc_result r = mc_resp_parse(&up->rs, b->data + pos, n - pos, &used, &line);
        pos += used;
        if (r == MC_ERROR) {
            log_throttled(&up->px->throttle.malformed, LOG_LEVEL_WARN, up->px->upstream_peer,
                          "upstream %u: malformed answer from memcached; reconnecting", up->id);
            up_down(up, "sent a malformed answer", UP_LOSS_BROKEN);
            return;
        }
        if (r == MC_NEED_MORE) {
            if (!up->in_multi && !up->cur_resolved && !up_partial_first_line(up, b, &seg_start, n))
                return;
            break;
        }
        if (!up_line(up, &line, b, &seg_start, pos)) {
            if (!up->stream)
                return;
            break;
        }
    }
    if (up->state == UP_READY && !up->closing)
        up_emit(up, b, seg_start, n);
}

static void up_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct upconn *up = h->data;
    struct pbuf *b = pbuf_get(&up->px->pool);
    (void)suggested;
    *buf = b ? uv_buf_init(b->data, PBUF_SIZE) : uv_buf_init(NULL, 0);
}

static void up_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct upconn *up = s->data;
    struct proxy *px = up->px;
    struct pbuf *b = buf->base ? pbuf_from_base(buf->base) : NULL;
    if (nread > 0 && !up->closing) {
        px->m.upstream_reads++;
        if (up->stream) {
            if (up->owner && up->owner->bin)
                binrec_responses(up->owner->bin, b->data, (size_t)nread);
            if (up->owner)
                conn_reply(up->owner, b, 0, (size_t)nread);
        } else {
            up_data(up, b, (size_t)nread);
        }
    } else if (nread < 0 && !up->closing) {
        up_down(up, nread == UV_EOF ? "closed the connection" : uv_strerror((int)nread),
                UP_LOSS_CLOSED);
    }
    if (b)
        pbuf_unref(&px->pool, b);
    conn_reply_flush_all(px);
    proxy_after_read(px);
    if (px->stopping && !px->conns && !up->pend.count)
        proxy_maybe_stopped(px); /* the last answers of a stopping proxy are in */
}

void upconn_update_reading(struct upconn *up)
{
    struct proxy *px = up->px;
    bool want = !up->closing && up->state == UP_READY && up->sock_open && !rec_blocked(px->rec) &&
                !px->answers_paused &&
                (up->shared || !up->owner || up->owner->closing ||
                 dial_queued(&up->owner->client) < px->cfg.write_backlog_max);
    if (want == up->reading)
        return;
    if (want)
        uv_read_start((uv_stream_t *)&up->sock, up_on_alloc, up_on_read);
    else
        uv_read_stop((uv_stream_t *)&up->sock);
    up->reading = want;
}

/* --- connecting and failing --------------------------------------------------- */

static void up_on_retry(uv_timer_t *t)
{
    struct upconn *up = t->data;
    if (up->closing)
        return;
    if (!up->sock_open)
        up_connect(up);
    else
        uv_timer_start(&up->retry, up_on_retry, 10, 0); /* old handle still closing */
}

static void up_tell_clients(struct upconn *up, bool ready)
{
    struct proxy *px = up->px;
    if (!up->shared) {
        if (up->owner && ready)
            conn_upstream_ready(up->owner);
        else if (up->owner)
            conn_update_reading(up->owner);
        return;
    }
    for (struct conn *c = px->conns, *next; c; c = next) {
        next = c->next;
        if (c->up != up)
            continue;
        if (ready)
            conn_upstream_ready(c);
        else
            conn_update_reading(c);
    }
}

/* memcached closed a connection it had accepted: it may have meant to
 * (idle_timeout, its connection limit, a request it refuses) or it may be
 * going away. A private connection's client must see what it would see
 * direct, so memcached is asked (up_probe); a pooled connection is
 * slabtap's own and is made again at once, clients waiting meanwhile
 * (unless the last one did not last a second: then the usual backoff). */
static bool up_should_probe(const struct upconn *up, enum up_loss loss)
{
    struct proxy *px = up->px;
    if (loss != UP_LOSS_CLOSED || up->probing || px->stopping || up->closing)
        return false;
    return !up->shared || uv_now(px->loop) - up->ready_ms >= 1000;
}

/* Connection lost or never made. memcached going away under a private
 * upstream whose client quit or half-closed is the expected end. */
static void up_down(struct upconn *up, const char *why, enum up_loss loss)
{
    struct proxy *px = up->px;
    struct conn *owner = up->owner;
    /* a binary client's connection is its own, and no text line may be
     * put into its stream: when memcached closes it (QUIT, idle timeout),
     * the client gets EOF, as direct */
    bool expected =
        up->draining || (!up->shared && owner && (owner->quit || owner->client_eof || owner->raw));
    bool probe = !expected && up_should_probe(up, loss);
    up_undirty(up);
    up_close_sock(up);
    up->state = UP_DOWN;
    up->stream = false;
    mc_resp_init(&up->rs);
    px->upstream_up = any_upstream_ready(px);
    if (probe) {
        /* a private connection's requests wait for the verdict (answered
         * SERVER_ERROR, or the client closed as memcached closed it); a
         * shared one's are lost either way. Clients are not read meanwhile. */
        log_write(LOG_LEVEL_DEBUG, px->upstream_peer, "upstream %u%s: %s %s; connecting again",
                  up->id, up->shared ? " (pooled)" : "", px->cfg.upstream_text, why);
        if (up->shared)
            up_fail_pending(up, "upstream_error", true);
        up->probing = !up->shared;
        up->state = UP_CONNECTING;
        uv_timer_start(&up->retry, up_on_retry, 0, 0);
        up_tell_clients(up, false);
        return;
    }
    if (!expected && !up->closing) {
        px->m.upstream_errors++;
        log_throttled(
            loss == UP_LOSS_CONNECT ? &px->throttle.upstream_connect : &px->throttle.upstream_lost,
            LOG_LEVEL_WARN, px->upstream_peer, "upstream %u%s: %s %s: %s", up->id,
            up->shared ? " (pooled)" : "", loss == UP_LOSS_CONNECT ? "cannot connect" : "lost",
            px->cfg.upstream_text, why);
    }
    if (expected || px->stopping || up->closing) {
        /* after quit or an HTTP line memcached sends nothing more: what it
         * had not sent when it closed (conn_closing drops it) is not sent */
        up_fail_pending(up, "no_answer", !expected);
        if (owner && !up->shared)
            conn_upstream_gone(owner);
        return;
    }
    up_fail_pending(up, "upstream_error", true);
    uv_timer_start(&up->retry, up_on_retry, up->backoff_ms, 0);
    up->backoff_ms =
        up->backoff_ms * 2 > px->cfg.backoff_max_ms ? px->cfg.backoff_max_ms : up->backoff_ms * 2;
    up_tell_clients(up, false);
}

/* memcached answered the connection tried after it closed one: it closed
 * that one on purpose. A client with a connection of its own sees what it
 * would see direct: its connection closes (requests left unanswered are
 * recorded no_answer). The pool just goes on. */
static void up_closed_by_memcached(struct upconn *up)
{
    struct proxy *px = up->px;
    px->m.upstream_closes_passed_on++;
    log_write(LOG_LEVEL_INFO, px->upstream_peer,
              "upstream %u: memcached closed connection %u's memcached connection; closing it too",
              up->id, up->owner ? up->owner->id : 0);
    /* direct, the client would read nothing more either: answers memcached
     * had not sent when it closed are dropped with the connection */
    up_fail_pending(up, "no_answer", false);
    conn_upstream_gone(up->owner);
}

/* The probe's verdict: memcached answered (it closed the last connection
 * on purpose), or it did not (gone, or too slow to count as there). */
static void up_probe_done(struct upconn *up, bool answered, const char *why)
{
    uv_timer_stop(&up->retry);
    up->probing = false;
    if (answered && up->owner) {
        up_closed_by_memcached(up);
        return;
    }
    up_down(up, why, UP_LOSS_CONNECT);
}

static void up_on_probe_timeout(uv_timer_t *t)
{
    struct upconn *up = t->data;
    if (!up->closing && up->probing)
        up_probe_done(up, false, "no answer to mn");
}

static void up_on_probe_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct upconn *up = h->data;
    (void)suggested;
    *buf = uv_buf_init(up->held, sizeof up->held); /* read and dropped */
}

static void up_on_probe_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct upconn *up = s->data;
    (void)buf;
    if (nread == 0 || up->closing || !up->probing)
        return;
    uv_read_stop(s);
    up_probe_done(up, nread > 0, nread > 0 ? "" : uv_strerror((int)nread));
    conn_reply_flush_all(up->px);
}

/* Connected after memcached closed the last connection: does it answer?
 * A TCP connect alone proves nothing (a dying process's listener can still
 * complete the handshake), an answer to mn does (MN, or the refusal memcached
 * sends past its connection limit). */
static void up_probe(struct upconn *up)
{
    static char mn[] = "mn\r\n";
    uv_buf_t b = uv_buf_init(mn, sizeof mn - 1);
    int rc = uv_try_write((uv_stream_t *)&up->sock, &b, 1);
    if (rc != (int)(sizeof mn - 1)) {
        up_probe_done(up, false, rc < 0 ? uv_strerror(rc) : "short write");
        return;
    }
    uv_read_start((uv_stream_t *)&up->sock, up_on_probe_alloc, up_on_probe_read);
    uv_timer_start(&up->retry, up_on_probe_timeout, UP_PROBE_TIMEOUT_MS, 0);
}

/* --- addresses ------------------------------------------------------------------ */

/* The name of --upstream again, after every address it had failed: a
 * container may have moved. One that stops resolving leaves no address:
 * clients get SERVER_ERROR (as for memcached down) until it resolves. */
static void up_on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct proxy *px = req->data;
    struct addr_list *l = &px->cfg.upstream_addrs;
    px->resolving = false;
    if (status == UV_ECANCELED) {
        proxy_maybe_stopped(px);
        return;
    }
    if (status < 0) {
        l->n = 0;
        log_throttled(&px->throttle.upstream_connect, LOG_LEVEL_WARN, NULL,
                      "upstream %s: the name does not resolve any more (%s); clients get "
                      "SERVER_ERROR until it does",
                      px->cfg.upstream_text, uv_strerror(status));
    } else {
        addr_list_from_addrinfo(l, res);
    }
    px->upstream_at = 0;
    uv_freeaddrinfo(res);
    if (px->stopping)
        proxy_maybe_stopped(px);
}

static void up_resolve_name(struct proxy *px)
{
    struct addr_spec s;
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    char err[8], port[8];
    if (px->resolving || px->stopping || addr_split(px->cfg.upstream_text, &s, err, sizeof err) ||
        !addr_is_name(&s))
        return;
    snprintf(port, sizeof port, "%u", s.port);
    px->resolve_req.data = px;
    if (uv_getaddrinfo(px->loop, &px->resolve_req, up_on_resolved, s.host, port, &hints) == 0)
        px->resolving = true;
}

/* A connect failed: the next address of the name at once, or -- every one
 * tried -- down (backoff), and the name is resolved again meanwhile. */
static void up_connect_failed(struct upconn *up, const char *why)
{
    struct proxy *px = up->px;
    size_t n = px->cfg.upstream_addrs.n;
    if (!up->probing && !px->stopping && n && ++up->addr_tried < n) {
        char text[ADDR_TEXT_MAX];
        log_write(
            LOG_LEVEL_DEBUG, px->upstream_peer, "upstream %u: %s: %s; trying %s", up->id,
            px->cfg.upstream_text, why,
            addr_format((const struct sockaddr *)&px->cfg.upstream_addrs.a[(up->addr_at + 1) % n],
                        text, sizeof text));
        up->addr_at = (up->addr_at + 1) % n;
        up_close_sock(up);
        uv_timer_start(&up->retry, up_on_retry, 0, 0);
        return;
    }
    up->addr_tried = 0;
    up->probing = false;
    up_resolve_name(px);
    up_down(up, why, UP_LOSS_CONNECT);
}

static void up_on_connect(uv_connect_t *req, int status)
{
    struct upconn *up = req->data;
    struct proxy *px = up->px;
    if (up->closing)
        return;
    if (status < 0) {
        up_connect_failed(up, uv_strerror(status));
        return;
    }
    /* new connections start where this one got through */
    px->upstream_at = up->addr_at;
    up->addr_tried = 0;
    if (px->cfg.upstream_addrs.n)
        addr_format((const struct sockaddr *)&px->cfg.upstream_addrs
                        .a[up->addr_at % px->cfg.upstream_addrs.n],
                    px->upstream_peer, sizeof px->upstream_peer);
    if (up->probing) {
        up_probe(up);
        return;
    }
    up->state = UP_READY;
    up->ready_ms = uv_now(px->loop);
    px->m.upstream_connections_open++;
    px->upstream_up = true;
    up->backoff_ms = px->cfg.backoff_min_ms;
    mc_resp_init(&up->rs);
    up_unit_done(up);
    up->in_multi = false;
    up_tell_clients(up, true);
    upconn_update_reading(up);
}

static void up_connect(struct upconn *up)
{
    struct proxy *px = up->px;
    const struct addr_list *l = &px->cfg.upstream_addrs;
    up->state = UP_CONNECTING;
    up->draining = false;
    if (!l->n) { /* the name stopped resolving */
        up->addr_tried = 0;
        up_connect_failed(up, "the name does not resolve");
        return;
    }
    if (up->addr_tried == 0)
        up->addr_at = px->upstream_at % l->n;
    const struct sockaddr *sa = (const struct sockaddr *)&l->a[up->addr_at % l->n];
    dial_init(px->loop, &up->sock, sa->sa_family);
    up->sock.handle.data = up;
    up->sock_open = true;
    up->open_handles++;
    up->connect_req.data = up;
    int rc = dial_connect(&up->connect_req, &up->sock, sa, up_on_connect);
    if (rc)
        up_connect_failed(up, uv_strerror(rc));
}

void upconn_fail(struct upconn *up, const char *why)
{
    if (!up->closing && up->state == UP_READY)
        up_down(up, why, UP_LOSS_BROKEN);
}
