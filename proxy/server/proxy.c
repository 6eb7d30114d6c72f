/* proxy: libuv client/upstream pairs, in-order pairing, backpressure.
 *
 * Every client connection gets its own memcached connection, so quit,
 * verbosity, noreply and errors behave exactly as they do direct. Bytes read
 * on one side are written to the other from the same buffer; the parsers
 * only look. The one thing slabtap adds on the wire is an "mn" after a batch
 * that ends in noreply/quiet requests: its MN answer is swallowed, and it
 * tells the proxy that every silent request before it is done.
 * Must never block the loop, copy a value, or free a conn outside its last
 * close callback. */
#include "server/proxy.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/pending.h"
#include "record/store.h"
#include "core/clock.h"

enum up_state { UP_CONNECTING, UP_READY, UP_DOWN };

struct conn {
    struct proxy *px;
    struct conn *prev, *next;
    uint32_t id;
    uv_tcp_t client;
    uv_tcp_t upstream;
    uv_timer_t retry;
    uv_connect_t connect_req;
    uv_shutdown_t up_shutdown;
    uv_shutdown_t client_shutdown;
    enum up_state up;
    unsigned open_handles;
    bool up_handle_open;
    bool client_reading, up_reading;
    bool client_eof;      /* the client half-closed */
    bool closing;
    bool quit;            /* quit or watch forwarded: read no more */
    bool stream;          /* watch: upstream bytes pass unparsed */
    bool discard_current; /* the request in progress began on a lost upstream */
    bool in_multi;
    unsigned backoff_ms;
    size_t loud;          /* pending entries that will get an answer */
    size_t barriers;      /* injected mn not yet answered */
    uint64_t line_t0, unit_t0;
    uint32_t unit_hits;
    uint64_t unit_bytes;
    size_t held_len;      /* a partial "MN\r\n" held back from the client */
    char held[4];
    struct mc_req_parser rq;
    struct mc_resp_parser rs;
    struct pending pend;
};

static const char upstream_error_line[] = "SERVER_ERROR slabtap: upstream memcached unavailable\r\n";

static void px_log(struct proxy *px, const char *fmt, ...)
{
    va_list ap;
    (void)px;
    fprintf(stderr, "slabtap: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void proxy_config_defaults(struct proxy_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->key_mode = KEYFMT_PREFIX;
    cfg->max_pending = PROXY_DEFAULT_MAX_PENDING;
    cfg->write_backlog_max = PROXY_DEFAULT_WRITE_BACKLOG;
    cfg->drain_timeout_ms = PROXY_DEFAULT_DRAIN_MS;
    cfg->backoff_min_ms = 50;
    cfg->backoff_max_ms = 2000;
}

static void conn_close(struct conn *c, bool graceful);
static void conn_update_reading(struct conn *c);
static void proxy_maybe_stopped(struct proxy *px);

/* --- recording ------------------------------------------------------------ */

static bool cmd_is_recorded(enum mc_cmd cmd)
{
    switch (cmd) {
    case MC_CMD_SET: case MC_CMD_ADD: case MC_CMD_REPLACE: case MC_CMD_APPEND:
    case MC_CMD_PREPEND: case MC_CMD_CAS: case MC_CMD_MS: case MC_CMD_DELETE:
    case MC_CMD_MD: case MC_CMD_TOUCH: case MC_CMD_INCR: case MC_CMD_DECR: case MC_CMD_MA:
        return true;
    default:
        return false;
    }
}

static bool cmd_is_read(enum mc_cmd cmd)
{
    return cmd == MC_CMD_GET || cmd == MC_CMD_GETS || cmd == MC_CMD_GAT ||
           cmd == MC_CMD_GATS || cmd == MC_CMD_MG;
}

static void gets_flush(struct proxy *px)
{
    for (int cmd = 0; cmd < MC_CMD_COUNT; cmd++) {
        struct proxy_get_counter *g = &px->gets[cmd];
        if (!g->requests)
            continue;
        struct rec_row row;
        memset(&row, 0, sizeof row);
        row.kind = REC_ROW_GETS;
        row.cmd = (uint8_t)cmd;
        row.second = px->get_second;
        row.requests = g->requests;
        row.keys = g->keys;
        row.hits = g->hits;
        row.misses = g->misses;
        row.bytes_returned = g->bytes;
        rec_push(px->rec, &row);
        memset(g, 0, sizeof *g);
    }
}

static struct proxy_get_counter *gets_counter(struct proxy *px, enum mc_cmd cmd, int64_t wall_ns)
{
    int64_t sec = wall_ns / 1000000000;
    if (sec != px->get_second) {
        gets_flush(px);
        px->get_second = sec;
    }
    return &px->gets[cmd];
}

static void record(struct conn *c, const struct pending_entry *e, const char *answer,
                   size_t answer_len, int64_t latency_ns)
{
    struct proxy *px = c->px;
    const struct mc_request *r = &e->req;
    struct rec_row row;
    if (!e->seq)
        return;
    memset(&row, 0, offsetof(struct rec_row, answer));
    row.kind = REC_ROW_WRITE;
    row.cmd = (uint8_t)r->cmd;
    row.seq = e->seq;
    row.conn_id = c->id;
    row.t_ns = e->t_wall_ns;
    row.key_hash = keyfmt_hash(r->key, r->key_len_raw);
    row.key_len = r->key_len;
    row.key_text_len = (int16_t)keyfmt_text(px->cfg.key_mode, r->key, r->key_len_raw,
                                            row.key_text, sizeof row.key_text);
    row.value_len = r->value_len;
    row.has_flags = r->is_write;
    row.flags = r->flags;
    row.has_exptime = r->is_write || r->cmd == MC_CMD_TOUCH;
    row.exptime = r->exptime;
    row.latency_ns = latency_ns;
    row.ms_mode = r->cmd == MC_CMD_MS ? r->ms_mode : 0;
    if (px->ladder && r->value_len >= 0) {
        struct slab_item_layout it;
        if (slab_item_layout(px->ladder, r->key_len, r->flags, (uint64_t)r->value_len, &it) == SLAB_OK)
            row.class_id = it.lru_class;
    }
    if (answer_len >= sizeof row.answer)
        answer_len = sizeof row.answer - 1;
    memcpy(row.answer, answer, answer_len);
    row.answer[answer_len] = '\0';
    rec_push(px->rec, &row);
    px->m.writes_recorded++;
}

static void record_text(struct conn *c, const struct pending_entry *e, const char *answer)
{
    record(c, e, answer, strlen(answer), -1);
}

/* --- writes ----------------------------------------------------------------- */

static void on_write_done(uv_write_t *req, int status)
{
    struct pwrite *w = (struct pwrite *)req;
    struct conn *c = w->owner;
    (void)status; /* a failed write shows up as a read error on that socket */
    pwrite_put(&c->px->pool, w);
    if (!c->closing)
        conn_update_reading(c);
}

static int conn_write(struct conn *c, uv_tcp_t *to, struct pwrite *w)
{
    w->owner = c;
    int rc = uv_write(&w->req, (uv_stream_t *)to, w->segs, w->nsegs, on_write_done);
    if (rc) {
        pwrite_put(&c->px->pool, w);
        return rc;
    }
    if (to == &c->client)
        c->px->m.bytes_to_clients += w->bytes;
    return 0;
}

static void conn_write_inline(struct conn *c, uv_tcp_t *to, const char *data, size_t len)
{
    struct pwrite *w = pwrite_get(&c->px->pool, NULL);
    if (!w || len > PWRITE_INLINE) {
        if (w)
            pwrite_put(&c->px->pool, w);
        conn_close(c, false);
        return;
    }
    memcpy(w->inline_data, data, len);
    w->segs[0] = uv_buf_init(w->inline_data, (unsigned)len);
    w->nsegs = 1;
    w->bytes = len;
    conn_write(c, to, w);
}

/* Collects slices of one read buffer into as few uv_writes as possible. */
struct seg_writer {
    struct conn *c;
    uv_tcp_t *to;
    struct pbuf *buf;
    struct pwrite *w;
};

static void seg_flush(struct seg_writer *sw)
{
    if (sw->w && sw->w->nsegs)
        conn_write(sw->c, sw->to, sw->w);
    else if (sw->w)
        pwrite_put(&sw->c->px->pool, sw->w);
    sw->w = NULL;
}

static void seg_add(struct seg_writer *sw, size_t off, size_t len)
{
    if (len == 0 || sw->c->closing)
        return;
    if (sw->w && sw->w->nsegs == PWRITE_SEGS)
        seg_flush(sw);
    if (!sw->w && !(sw->w = pwrite_get(&sw->c->px->pool, sw->buf))) {
        conn_close(sw->c, false);
        return;
    }
    sw->w->segs[sw->w->nsegs++] = uv_buf_init(sw->buf->data + off, (unsigned)len);
    sw->w->bytes += len;
}

/* --- reading control ---------------------------------------------------------- */

static size_t wq(uv_tcp_t *t)
{
    return uv_stream_get_write_queue_size((uv_stream_t *)t);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = h->data;
    struct pbuf *b = pbuf_get(&c->px->pool);
    (void)suggested;
    *buf = b ? uv_buf_init(b->data, PBUF_SIZE) : uv_buf_init(NULL, 0);
}

static void on_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_up_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void conn_update_reading(struct conn *c)
{
    struct proxy *px = c->px;
    if (c->closing)
        return;
    bool rec_ok = !rec_blocked(px->rec);
    /* a client whose request was partly forwarded is read until that
     * request is whole, when stopping or at the pending bound: memcached
     * holds back answers while it waits for the rest of a data block, so
     * the answers that would let us go on might never come */
    bool mid_request = !mc_req_at_boundary(&c->rq);
    bool want_client = rec_ok && !c->client_eof && !c->quit &&
                       (!px->stopping || mid_request) &&
                       c->up != UP_CONNECTING &&
                       (c->pend.count < px->cfg.max_pending || mid_request) &&
                       wq(&c->client) < px->cfg.write_backlog_max &&
                       (c->up != UP_READY || wq(&c->upstream) < px->cfg.write_backlog_max);
    bool want_up = rec_ok && c->up == UP_READY && wq(&c->client) < px->cfg.write_backlog_max;
    if (want_client != c->client_reading) {
        if (want_client)
            uv_read_start((uv_stream_t *)&c->client, on_alloc, on_client_read);
        else
            uv_read_stop((uv_stream_t *)&c->client);
        c->client_reading = want_client;
    }
    if (want_up != c->up_reading) {
        if (want_up)
            uv_read_start((uv_stream_t *)&c->upstream, on_alloc, on_up_read);
        else
            uv_read_stop((uv_stream_t *)&c->upstream);
        c->up_reading = want_up;
    }
}

void proxy_update_reading(void *arg)
{
    struct proxy *px = arg;
    px->all_paused = rec_blocked(px->rec);
    for (struct conn *c = px->conns; c; c = c->next)
        conn_update_reading(c);
}

/* --- answers ------------------------------------------------------------------- */

static void count_read(struct conn *c, const struct pending_entry *e, const struct mc_line *l)
{
    /* the second the request was read in: no clock read per answer */
    struct proxy_get_counter *g = gets_counter(c->px, e->req.cmd, e->t_wall_ns);
    g->requests++;
    if (e->req.cmd == MC_CMD_MG) {
        bool hit = l && (l->code == MC_CODE_HD || l->code == MC_CODE_VA);
        g->keys++;
        g->hits += hit;
        g->misses += !hit;
        g->bytes += (l && l->code == MC_CODE_VA && l->data_len > 0) ? (uint64_t)l->data_len : 0;
        return;
    }
    g->keys += e->req.nkeys;
    g->hits += c->unit_hits;
    g->misses += e->req.nkeys > c->unit_hits ? e->req.nkeys - c->unit_hits : 0;
    g->bytes += c->unit_bytes;
}

static void entry_done(struct conn *c, struct pending_entry *e)
{
    if (e->req.reply != MC_REPLY_SILENT || e->barrier)
        c->loud--;
    if (e->barrier)
        c->barriers--;
    pending_pop(&c->pend);
}

/* The answer to e is complete; line is its first (or, for a multi, last). */
static void conn_answered(struct conn *c, struct pending_entry *e, const struct mc_line *l)
{
    int64_t latency = c->unit_t0 >= e->t_sent ? (int64_t)(c->unit_t0 - e->t_sent) : 0;
    if (cmd_is_read(e->req.cmd))
        count_read(c, e, l);
    record(c, e, l->text, l->len, latency);
    entry_done(c, e);
}

static const char *silent_label(const struct mc_request *r)
{
    return mc_cmd_name(r->cmd)[0] == 'm' ? "quiet" : "noreply";
}

static void on_silent(void *ud, struct pending_entry *e)
{
    struct conn *c = ud;
    if (e->req.cmd == MC_CMD_MG) {
        c->unit_hits = 0;
        count_read(c, e, NULL); /* a quiet mg is silent only on a miss */
    }
    record_text(c, e, silent_label(&e->req)); /* pending_owner pops it */
}

static void count_value(struct conn *c, const struct mc_line *l)
{
    if (l->code == MC_CODE_VALUE) {
        c->unit_hits++;
        c->unit_bytes += l->data_len > 0 ? (uint64_t)l->data_len : 0;
    }
}

/* Handles one complete answer line; returns true when its bytes are
 * slabtap's own (a barrier's MN) and must not reach the client. */
static bool conn_answer_line(struct conn *c, const struct mc_line *l)
{
    struct pending_entry *e;
    if (c->in_multi) {
        e = pending_head(&c->pend);
        count_value(c, l);
        if (mc_line_ends_multi(l)) {
            c->in_multi = false;
            conn_answered(c, e, l);
        }
        return false;
    }
    e = pending_owner(&c->pend, l, on_silent, c);
    if (!e) {
        c->px->m.unpaired_responses++;
        px_log(c->px, "connection %u: answer '%.60s' pairs with no request; closing it", c->id, l->text);
        conn_close(c, false);
        return false;
    }
    if (e->barrier) {
        bool ok = l->code == MC_CODE_MN || l->code == MC_CODE_ERROR;
        entry_done(c, e);
        if (!ok) {
            c->px->m.unpaired_responses++;
            px_log(c->px, "connection %u: expected MN, got '%.60s'; closing it", c->id, l->text);
            conn_close(c, false);
        }
        return true;
    }
    c->unit_t0 = c->line_t0;
    c->unit_hits = 0;
    c->unit_bytes = 0;
    if (e->req.reply == MC_REPLY_STREAM) {
        c->stream = true;
        entry_done(c, e);
        return false;
    }
    count_value(c, l);
    if (e->req.reply == MC_REPLY_MULTI && !mc_line_ends_multi(l)) {
        c->in_multi = true;
        return false;
    }
    conn_answered(c, e, l);
    return false;
}

static bool held_prefix_ok(const char *s, size_t n)
{
    return n > 0 && n <= 3 && !memcmp(s, "MN\r", n);
}

/* The buffer ended inside a line. If that line may be a barrier's MN, keep
 * its bytes (at most 3) back from the client until the line is complete.
 * Returns where the next slice to forward starts. */
static size_t conn_hold_partial(struct conn *c, struct pbuf *b, size_t n, size_t line_begin,
                                size_t seg_start, struct seg_writer *sw)
{
    if (c->held_len) {
        /* the line began in an earlier buffer, held: all of b continues it */
        if (c->held_len + n <= 3 && memcmp(b->data, &"MN\r"[c->held_len], n) == 0) {
            memcpy(c->held + c->held_len, b->data, n);
            c->held_len += n;
            return n;
        }
        conn_write_inline(c, &c->client, c->held, c->held_len);
        c->held_len = 0;
        return seg_start;
    }
    if (line_begin == SIZE_MAX || !c->barriers || c->rs.state != MC_RESP_LINE)
        return seg_start;
    size_t part = n - line_begin;
    if (!held_prefix_ok(b->data + line_begin, part))
        return seg_start;
    memcpy(c->held, b->data + line_begin, part);
    c->held_len = part;
    seg_add(sw, seg_start, line_begin - seg_start);
    return n;
}

static void conn_upstream_data(struct conn *c, struct pbuf *b, size_t n)
{
    uint64_t now = uv_hrtime();
    struct seg_writer sw = {c, &c->client, b, NULL};
    size_t pos = 0, seg_start = 0;

    while (pos < n && !c->stream && !c->closing) {
        size_t line_begin = SIZE_MAX;
        if (mc_resp_at_boundary(&c->rs)) {
            c->line_t0 = now;
            line_begin = pos;
        }
        struct mc_line line;
        size_t used;
        enum mc_result r = mc_resp_parse(&c->rs, b->data + pos, n - pos, &used, &line);
        pos += used;
        if (r == MC_ERROR) {
            px_log(c->px, "connection %u: malformed answer from memcached; closing it", c->id);
            conn_close(c, false);
            break;
        }
        if (r == MC_NEED_MORE) {
            seg_start = conn_hold_partial(c, b, n, line_begin, seg_start, &sw);
            break;
        }
        size_t here = line.bytes - c->held_len; /* bytes of the line in this buffer */
        if (conn_answer_line(c, &line)) {
            seg_add(&sw, seg_start, pos - here - seg_start);
            seg_start = pos;
        } else if (c->held_len && !c->closing) {
            conn_write_inline(c, &c->client, c->held, c->held_len);
        }
        c->held_len = 0;
    }
    if (!c->closing)
        seg_add(&sw, seg_start, n - seg_start);
    seg_flush(&sw);
}

/* --- upstream lifecycle ------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    if (h == (uv_handle_t *)&c->upstream)
        c->up_handle_open = false;
    if (--c->open_handles)
        return;
    struct proxy *px = c->px;
    pending_free(&c->pend);
    free(c);
    proxy_maybe_stopped(px);
}

static void conn_close_upstream(struct conn *c)
{
    if (c->up_handle_open && !uv_is_closing((uv_handle_t *)&c->upstream))
        uv_close((uv_handle_t *)&c->upstream, on_handle_closed);
    c->up_reading = false;
}

/* Every forwarded request still waiting gets memcached's kind of answer for
 * a broken server, in order, and its row. */
static void conn_fail_pending(struct conn *c, const char *answer)
{
    struct pending_entry *e;
    while ((e = pending_head(&c->pend)) != NULL) {
        if (!e->barrier && e->req.reply != MC_REPLY_SILENT && e->req.reply != MC_REPLY_CLOSE &&
            !c->closing && !c->client_eof) {
            conn_write_inline(c, &c->client, upstream_error_line, sizeof upstream_error_line - 1);
            c->px->m.upstream_error_replies++;
        }
        if (!e->barrier)
            record_text(c, e, e->req.reply == MC_REPLY_SILENT && !strcmp(answer, "no_answer")
                                  ? silent_label(&e->req) : answer);
        entry_done(c, e);
    }
    c->in_multi = false;
    c->held_len = 0;
    c->barriers = 0;
    c->loud = 0;
}

static void conn_connect_upstream(struct conn *c);

static void on_retry(uv_timer_t *t)
{
    struct conn *c = t->data;
    if (!c->closing && !c->up_handle_open)
        conn_connect_upstream(c);
    else if (!c->closing)
        uv_timer_start(&c->retry, on_retry, 10, 0); /* old handle still closing */
}

static void conn_upstream_down(struct conn *c, const char *why)
{
    struct proxy *px = c->px;
    bool expected = c->quit || c->client_eof;
    conn_close_upstream(c);
    c->up = UP_DOWN;
    mc_resp_init(&c->rs);
    if (!expected) {
        px->m.upstream_errors++;
        px_log(px, "connection %u: upstream %s: %s", c->id, px->cfg.upstream_text, why);
    }
    if (expected || px->stopping) {
        conn_fail_pending(c, "no_answer");
        conn_close(c, true);
        return;
    }
    conn_fail_pending(c, "upstream_error");
    uv_timer_start(&c->retry, on_retry, c->backoff_ms, 0);
    c->backoff_ms = c->backoff_ms * 2 > px->cfg.backoff_max_ms ? px->cfg.backoff_max_ms
                                                               : c->backoff_ms * 2;
    conn_update_reading(c);
}

static void on_up_connect(uv_connect_t *req, int status)
{
    struct conn *c = req->data;
    if (c->closing)
        return;
    if (status < 0) {
        c->px->upstream_up = false;
        conn_upstream_down(c, uv_strerror(status));
        return;
    }
    c->px->upstream_up = true;
    c->up = UP_READY;
    c->backoff_ms = c->px->cfg.backoff_min_ms;
    c->discard_current = !mc_req_at_boundary(&c->rq);
    mc_resp_init(&c->rs);
    conn_update_reading(c);
}

static void conn_connect_upstream(struct conn *c)
{
    uv_tcp_init(c->px->loop, &c->upstream);
    c->upstream.data = c;
    c->up_handle_open = true;
    c->open_handles++;
    c->up = UP_CONNECTING;
    c->connect_req.data = c;
    uv_tcp_nodelay(&c->upstream, 1);
    int rc = uv_tcp_connect(&c->connect_req, &c->upstream,
                            (const struct sockaddr *)&c->px->cfg.upstream_addr, on_up_connect);
    if (rc)
        conn_upstream_down(c, uv_strerror(rc));
    else
        conn_update_reading(c);
}

/* A full recorder must pause every connection at once, not each at its
 * next read, so the overflow stash stays bounded. */
static void conn_after_read(struct conn *c)
{
    struct proxy *px = c->px;
    rec_flush(px->rec);
    if (rec_blocked(px->rec)) {
        if (!px->all_paused) {
            px->all_paused = true;
            proxy_update_reading(px);
        }
    } else if (!c->closing) {
        conn_update_reading(c);
    }
}

static void on_up_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    struct pbuf *b = buf->base ? pbuf_from_base(buf->base) : NULL;
    if (nread > 0 && !c->closing)
        conn_upstream_data(c, b, (size_t)nread);
    else if (nread < 0 && !c->closing)
        conn_upstream_down(c, nread == UV_EOF ? "closed the connection" : uv_strerror((int)nread));
    if (b)
        pbuf_unref(&c->px->pool, b);
    if (!c->closing && c->px->stopping && c->loud == 0)
        conn_close(c, true);
    conn_after_read(c);
}

/* --- requests ------------------------------------------------------------------- */

static void count_request(struct proxy *px, const struct mc_request *r)
{
    px->m.requests++;
    px->requests_by_cmd[r->cmd]++;
    if (r->is_write)
        px->m.requests_write++;
    else if (cmd_is_read(r->cmd))
        px->m.requests_read++;
    else
        px->m.requests_other++;
}

/* A request memcached will never see: answer it as a broken server would. */
static void conn_request_unforwarded(struct conn *c, const struct mc_request *r, int64_t wall)
{
    struct pending_entry e = {.req = *r, .t_wall_ns = wall};
    if (cmd_is_recorded(r->cmd))
        e.seq = ++c->px->next_seq;
    if (r->reply == MC_REPLY_CLOSE || r->reply == MC_REPLY_STREAM) {
        conn_close(c, true);
        return;
    }
    if (r->reply != MC_REPLY_SILENT) {
        conn_write_inline(c, &c->client, upstream_error_line, sizeof upstream_error_line - 1);
        c->px->m.upstream_error_replies++;
    }
    record_text(c, &e, "upstream_error");
}

static bool conn_request(struct conn *c, const struct mc_request *r, uint64_t now, int64_t wall)
{
    struct pending_entry *e = pending_push(&c->pend);
    if (!e)
        return false;
    e->req = *r;
    e->t_sent = now;
    e->t_wall_ns = wall;
    if (cmd_is_recorded(r->cmd))
        e->seq = ++c->px->next_seq;
    if (r->reply != MC_REPLY_SILENT)
        c->loud++;
    if (r->reply == MC_REPLY_CLOSE || r->reply == MC_REPLY_STREAM)
        c->quit = true;
    return true;
}

static bool is_meta_write_or_read(enum mc_cmd cmd)
{
    return cmd == MC_CMD_MS || cmd == MC_CMD_MG || cmd == MC_CMD_MD || cmd == MC_CMD_MA;
}

/* A meta-quiet request's answer, when one comes, looks like the next
 * request's (ms q then ms, or ms q then ms q: both may answer NS). With O
 * or k the answer names its request; without, a barrier between them tells
 * the two apart. None is needed before the client's own mn. */
static bool conn_needs_split(struct conn *c, const struct mc_request *next)
{
    struct pending_entry *t = pending_tail(&c->pend);
    return t && !t->barrier && t->req.reply == MC_REPLY_SILENT &&
           is_meta_write_or_read(t->req.cmd) && !t->req.has_opaque && !t->req.want_key &&
           !c->quit && (!next || next->cmd != MC_CMD_MN);
}

/* Sends slabtap's own `mn` at the current position of the upstream stream
 * (the caller guarantees a request boundary); its MN is swallowed. */
static void conn_push_barrier(struct conn *c)
{
    struct pending_entry *e = pending_push(&c->pend);
    if (!e)
        return;
    memset(&e->req, 0, sizeof e->req);
    e->req.cmd = MC_CMD_MN;
    e->req.reply = MC_REPLY_LINE;
    e->barrier = true;
    c->loud++;
    c->barriers++;
    conn_write_inline(c, &c->upstream, "mn\r\n", 4);
}

static void conn_inject_barrier(struct conn *c)
{
    struct pending_entry *t = pending_tail(&c->pend);
    if (!t || t->barrier || t->req.reply != MC_REPLY_SILENT || c->quit ||
        !mc_req_at_boundary(&c->rq))
        return;
    conn_push_barrier(c);
}

/* Forwards what came before the request starting at `at`, then a barrier. */
static size_t conn_split_at(struct conn *c, struct seg_writer *sw, size_t fwd_from, size_t at)
{
    seg_add(sw, fwd_from, at - fwd_from);
    seg_flush(sw);
    if (!c->closing)
        conn_push_barrier(c);
    return at;
}

static void conn_client_data(struct conn *c, struct pbuf *b, size_t n)
{
    struct proxy *px = c->px;
    uint64_t now = uv_hrtime();
    int64_t wall = clock_wall_ns();
    struct seg_writer sw = {c, &c->upstream, b, NULL};
    bool fwd = c->up == UP_READY && !c->discard_current;
    size_t fwd_from = 0, pos = 0;

    /* where the request being parsed began in b; SIZE_MAX: in an earlier
     * buffer, already forwarded, too late to put a barrier before it */
    size_t req_begin = mc_req_at_boundary(&c->rq) ? 0 : SIZE_MAX;

    px->m.bytes_from_clients += n;
    while (pos < n && !c->closing) {
        struct mc_request req;
        size_t used;
        if (mc_req_at_boundary(&c->rq))
            req_begin = pos;
        enum mc_result r = mc_req_parse(&c->rq, b->data + pos, n - pos, &used, &req);
        pos += used;
        if (r == MC_ERROR) {
            px->m.protocol_errors++;
            px_log(px, "connection %u: input memcached closes the connection on (a request "
                       "line over %d bytes, or the binary protocol); closing it", c->id, MC_LINE_MAX);
            conn_close(c, false);
            return;
        }
        if (r == MC_NEED_MORE)
            break;
        count_request(px, &req);
        if (fwd) {
            if (req_begin != SIZE_MAX && conn_needs_split(c, &req))
                fwd_from = conn_split_at(c, &sw, fwd_from, req_begin);
            if (!conn_request(c, &req, now, wall)) {
                conn_close(c, false);
                return;
            }
        } else {
            conn_request_unforwarded(c, &req, wall);
            if (c->discard_current) {
                c->discard_current = false;
                fwd = c->up == UP_READY;
                fwd_from = pos;
            }
        }
        if (px->stopping) {
            n = pos; /* the request in progress at shutdown is whole: forward
                        nothing after it (see conn_update_reading) */
            break;
        }
    }
    /* a request still arriving after a quiet one: split before it now, as
     * its first bytes are in this buffer */
    if (fwd && !c->closing && !mc_req_at_boundary(&c->rq) && req_begin != SIZE_MAX &&
        req_begin < n && conn_needs_split(c, NULL))
        fwd_from = conn_split_at(c, &sw, fwd_from, req_begin);
    if (fwd && !c->closing) {
        seg_add(&sw, fwd_from, n - fwd_from);
        seg_flush(&sw);
        conn_inject_barrier(c);
    }
}

static void on_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    struct pbuf *b = buf->base ? pbuf_from_base(buf->base) : NULL;
    if (nread > 0 && !c->closing) {
        conn_client_data(c, b, (size_t)nread);
    } else if (nread < 0 && !c->closing) {
        c->client_eof = true;
        if (c->up == UP_READY && c->pend.count) {
            /* let memcached finish what it read, as it would direct */
            uv_read_stop(s);
            c->client_reading = false;
            uv_shutdown(&c->up_shutdown, (uv_stream_t *)&c->upstream, NULL);
        } else {
            conn_close(c, false);
        }
    }
    if (b)
        pbuf_unref(&c->px->pool, b);
    conn_after_read(c);
}

/* --- connection lifecycle ---------------------------------------------------------- */

static void on_client_shutdown(uv_shutdown_t *req, int status)
{
    struct conn *c = req->data;
    (void)status;
    uv_close((uv_handle_t *)&c->client, on_handle_closed);
}

static void conn_close(struct conn *c, bool graceful)
{
    struct proxy *px = c->px;
    if (c->closing)
        return;
    /* closing first: the requests still waiting get their rows but no
     * "upstream unavailable" line -- memcached is fine, and it would not
     * answer a client it closes either */
    c->closing = true;
    conn_fail_pending(c, "no_answer");
    if (c->prev)
        c->prev->next = c->next;
    else
        px->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    px->m.connections_open--;
    conn_close_upstream(c);
    uv_close((uv_handle_t *)&c->retry, on_handle_closed);
    c->client_shutdown.data = c;
    if (!graceful ||
        uv_shutdown(&c->client_shutdown, (uv_stream_t *)&c->client, on_client_shutdown))
        uv_close((uv_handle_t *)&c->client, on_handle_closed);
}

static void on_accept(uv_stream_t *server, int status)
{
    struct proxy *px = server->data;
    struct conn *c;
    if (status < 0 || px->stopping)
        return;
    c = calloc(1, sizeof *c);
    if (!c)
        return;
    c->px = px;
    uv_tcp_init(px->loop, &c->client);
    c->client.data = c;
    if (uv_accept(server, (uv_stream_t *)&c->client)) {
        c->open_handles = 1;
        c->closing = true;
        uv_close((uv_handle_t *)&c->client, on_handle_closed);
        return;
    }
    uv_tcp_nodelay(&c->client, 1);
    uv_timer_init(px->loop, &c->retry);
    c->retry.data = c;
    c->open_handles = 2;
    c->id = ++px->next_conn_id;
    c->backoff_ms = px->cfg.backoff_min_ms;
    mc_req_init(&c->rq);
    mc_resp_init(&c->rs);
    pending_init(&c->pend);
    c->next = px->conns;
    if (px->conns)
        px->conns->prev = c;
    px->conns = c;
    px->m.connections_accepted++;
    px->m.connections_open++;
    conn_connect_upstream(c);
}

int proxy_open(struct proxy *px, uv_loop_t *loop, const struct proxy_config *cfg,
               struct recorder *rec)
{
    int rc;
    memset(px, 0, sizeof *px);
    px->loop = loop;
    px->cfg = *cfg;
    px->rec = rec;
    uv_tcp_init(loop, &px->listener);
    px->listener.data = px;
    px->listener_open = true;
    uv_timer_init(loop, &px->drain_timer);
    px->drain_timer.data = px;
    rc = uv_tcp_bind(&px->listener, (const struct sockaddr *)&cfg->listen_addr, 0);
    if (!rc)
        rc = uv_listen((uv_stream_t *)&px->listener, 1024, on_accept);
    if (rc)
        fprintf(stderr, "slabtap: cannot listen: %s\n", uv_strerror(rc));
    return rc ? -1 : 0;
}

static void proxy_maybe_stopped(struct proxy *px)
{
    if (!px->stopping || px->conns || px->stopped)
        return;
    px->stopped = true;
    /* every connection closed: the last reads are counted, hand them over */
    gets_flush(px);
    void (*cb)(struct proxy *) = px->on_stopped;
    px->on_stopped = NULL;
    uv_timer_stop(&px->drain_timer);
    uv_close((uv_handle_t *)&px->drain_timer, NULL);
    if (cb)
        cb(px);
}

static void on_drain_timeout(uv_timer_t *t)
{
    struct proxy *px = t->data;
    px_log(px, "shutdown: %u ms passed, closing connections still waiting for answers",
           px->cfg.drain_timeout_ms);
    while (px->conns)
        conn_close(px->conns, false);
}

void proxy_close(struct proxy *px, void (*on_stopped)(struct proxy *px))
{
    px->stopping = true;
    px->on_stopped = on_stopped;
    if (px->listener_open) {
        uv_close((uv_handle_t *)&px->listener, NULL);
        px->listener_open = false;
    }
    uv_timer_start(&px->drain_timer, on_drain_timeout, px->cfg.drain_timeout_ms, 0);
    for (struct conn *c = px->conns, *next; c; c = next) {
        next = c->next;
        conn_update_reading(c);
        if (c->loud == 0 || c->up != UP_READY)
            conn_close(c, true);
    }
    proxy_maybe_stopped(px);
}
