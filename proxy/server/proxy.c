/* proxy: client connections -- parsing their requests, sending each to its
 * upstream (server/upstream.c), answering for memcached only when it cannot
 * be reached, recording, backpressure, shutdown.
 *
 * A client shares a pooled upstream with others (the default) or has one of
 * its own (--upstream-conns per-client, and from its first watch, lru_crawler
 * metadump, stats detail dump or binary request on). On a shared upstream
 * only whole requests go out: a request split across reads is assembled in
 * a buffer of its own first, bounded per request (max_request) and in all
 * (max_assembly); a client whose request does not fit moves to a private
 * upstream, where bytes pass as they come. What may go on a shared upstream
 * is mc_req_shareable()'s verdict (docs/shared-connections.md): quit and
 * HTTP lines are answered here (we close the client's connection, as
 * memcached would close its own), a get with a key over 250 bytes too, and
 * anything else memcached would close on, stream, or frame differently
 * across versions moves its client to a private upstream first. A client
 * that gets an answer of big_answer bytes moves for its next requests. Bytes are forwarded as slices of the buffers they were read
 * into, never modified. The one thing slabtap adds on the wire is an "mn"
 * after a batch that ends in noreply/quiet requests (its MN is swallowed).
 * Must never block the loop, or free a client outside its last close
 * callback. Messages name the peer they are about in brackets. */
#include "server/proxy.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/sample.h"
#include "server/binrec.h"
#include "server/conn.h"
#include "server/readrec.h"
#include "server/shadow.h"

void proxy_config_defaults(struct proxy_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->key_mode = KEYFMT_PREFIX;
    cfg->max_pending = PROXY_DEFAULT_MAX_PENDING;
    cfg->write_backlog_max = PROXY_DEFAULT_WRITE_BACKLOG;
    cfg->drain_timeout_ms = PROXY_DEFAULT_DRAIN_MS;
    cfg->backoff_min_ms = 50;
    cfg->backoff_max_ms = 2000;
    cfg->upstream_conns = PROXY_DEFAULT_UPSTREAM_CONNS;
    cfg->max_request = PROXY_DEFAULT_MAX_REQUEST;
    cfg->max_assembly = PROXY_DEFAULT_MAX_ASSEMBLY;
    cfg->max_memory = PROXY_DEFAULT_MAX_MEMORY;
    cfg->big_answer = PROXY_DEFAULT_BIG_ANSWER;
}

/* No buffer for a write: the stream cannot stay in step, so the
 * connection goes. Every connection may hit this at once: throttled. */
static void conn_nomem(struct conn *c)
{
    log_throttled(&c->px->throttle.nomem, LOG_LEVEL_ERROR, c->peer,
                  "connection %u: no buffer (out of memory); closing it", c->id);
    conn_close(c, false);
}

/* --- recording ------------------------------------------------------------ */

static bool cmd_is_recorded(enum mc_cmd cmd)
{
    switch (cmd) {
    case MC_CMD_SET:
    case MC_CMD_ADD:
    case MC_CMD_REPLACE:
    case MC_CMD_APPEND:
    case MC_CMD_PREPEND:
    case MC_CMD_CAS:
    case MC_CMD_MS:
    case MC_CMD_DELETE:
    case MC_CMD_MD:
    case MC_CMD_TOUCH:
    case MC_CMD_INCR:
    case MC_CMD_DECR:
    case MC_CMD_MA: return true;
    default: return false;
    }
}

bool proxy_cmd_is_read(enum mc_cmd cmd)
{
    return cmd == MC_CMD_GET || cmd == MC_CMD_GETS || cmd == MC_CMD_GAT || cmd == MC_CMD_GATS ||
           cmd == MC_CMD_MG;
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

void proxy_count_read(struct proxy *px, const struct pending_entry *e, const struct mc_line *l,
                      uint32_t hits, uint64_t bytes)
{
    /* the second the request was read in: no clock read per answer */
    struct proxy_get_counter *g = gets_counter(px, e->req.cmd, e->t_wall_ns);
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
    g->hits += hits;
    g->misses += e->req.nkeys > hits ? e->req.nkeys - hits : 0;
    g->bytes += bytes;
}

/* answer_len SIZE_MAX: answer is a NUL-terminated label of slabtap's own. */
void proxy_record(struct proxy *px, const struct pending_entry *e, const char *answer,
                  size_t answer_len, int64_t latency_ns)
{
    const struct mc_request *r = &e->req;
    struct rec_row row;
    if (e->rseq) /* a read: the rows of its keys not made yet (misses but mg's) */
        readrec_finish(px, (struct pending_entry *)e, answer,
                       answer_len == SIZE_MAX ? strlen(answer) : answer_len);
    if (r->cmd == MC_CMD_FLUSH_ALL && shadow_active(px->shadows)) {
        /* not recorded, but mirrored when answered like the rest: in the
         * order memcached saw it among the writes around it */
        shadow_answered(px->shadows, r, answer, answer_len);
        return;
    }
    if (!e->seq)
        return;
    if (answer_len == SIZE_MAX)
        answer_len = strlen(answer);
    if (shadow_active(px->shadows))
        shadow_answered(px->shadows, r, answer, answer_len);
    memset(&row, 0, offsetof(struct rec_row, answer));
    row.kind = REC_ROW_WRITE;
    row.cmd = (uint8_t)r->cmd;
    row.seq = e->seq;
    row.conn_id = e->conn_id;
    row.t_ns = e->t_wall_ns;
    row.key_hash = keyfmt_hash(r->key, r->key_len_raw);
    row.key_len = r->key_len;
    row.key_text_len = (int16_t)keyfmt_text(px->cfg.key_mode, r->key, r->key_len_raw, row.key_text,
                                            sizeof row.key_text);
    row.value_len = r->value_len;
    row.has_flags = r->is_write;
    row.flags = r->flags;
    row.has_exptime = r->is_write || r->cmd == MC_CMD_TOUCH;
    row.exptime = r->exptime;
    row.latency_ns = latency_ns;
    row.ms_mode = r->cmd == MC_CMD_MS ? r->ms_mode : 0;
    proxy_record_row(px, &row, answer, answer_len);
}

/* The answer as recorded: cut to fit, and, unless whole keys are kept,
 * without the key a meta answer echoes (its k flag), so that --keys hash
 * and prefix keep no key text in answers either. */
static void proxy_answer_text(enum keyfmt_mode mode, const char *answer, size_t len, char *out,
                              size_t cap)
{
    size_t o = 0;
    bool meta = len >= 2 && answer[0] >= 'A' && answer[0] <= 'Z' && answer[1] >= 'A' &&
                answer[1] <= 'Z' && (len == 2 || answer[2] == ' ');
    for (size_t i = 0; i < len && o + 1 < cap;) {
        size_t end = i;
        while (end < len && answer[end] != ' ')
            end++;
        /* a token: answer[i, end) */
        if (!(meta && mode != KEYFMT_FULL && i > 0 && answer[i] == 'k')) {
            if (o && o + 1 < cap)
                out[o++] = ' ';
            for (size_t j = i; j < end && o + 1 < cap; j++)
                out[o++] = answer[j];
        }
        i = end < len ? end + 1 : end;
    }
    out[o] = '\0';
}

void proxy_record_row(struct proxy *px, struct rec_row *row, const char *answer, size_t answer_len)
{
    bool kept = sample_keep(row->key_hash, px->cfg.sample_keys);
    if (!kept && !px->cfg.sample_aggregate)
        return;
    /* the class and the answer: the aggregates count a key not kept by
     * both (agg_items, agg_answers), as a kept one's row */
    if (px->ladder && row->value_len >= 0) {
        struct slab_item_layout it;
        if (slab_item_layout(px->ladder, row->key_len, row->flags, (uint64_t)row->value_len, &it) ==
            SLAB_OK)
            row->class_id = it.lru_class;
    }
    proxy_answer_text(px->cfg.key_mode, answer, answer_len, row->answer, sizeof row->answer);
    if (!kept) { /* a key not kept: only what the aggregates count (core/sample.h) */
        row->sampled_out = true;
        rec_push(px->rec, row);
        return;
    }
    rec_push(px->rec, row);
    px->m.writes_recorded++;
}

/* --- answers to clients ------------------------------------------------------ */

static void conn_touch(struct conn *c)
{
    if (c->on_reply_list)
        return;
    c->on_reply_list = true;
    c->reply_next = c->px->replying;
    c->px->replying = c;
}

static void conn_untouch(struct conn *c)
{
    struct conn **p = &c->px->replying;
    while (*p && *p != c)
        p = &(*p)->reply_next;
    if (*p)
        *p = c->reply_next;
    c->on_reply_list = false;
}

static void on_client_write_done(uv_write_t *req, int status)
{
    struct pwrite *w = (struct pwrite *)req;
    struct conn *c = w->owner;
    /* a failed write shows up as a read error on that socket */
    if (status == 0)
        c->drained_ms = uv_now(c->px->loop);
    pwrite_put(&c->px->pool, w);
    if (c->px->memory_paused)
        proxy_memory_check(c->px);
    if (c->closing)
        return;
    conn_update_reading(c);
    if (c->up && !c->up->shared)
        upconn_update_reading(c->up);
}

/* Has c taken none of its answers for PROXY_STALL_MS? */
static bool conn_stalled(const struct conn *c)
{
    return uv_now(c->px->loop) - c->drained_ms >= PROXY_STALL_MS;
}

static void on_check_timer(uv_timer_t *t);

/* Looks again every PROXY_STALL_MS / 4 (see proxy_check). */
static void proxy_arm_check(struct proxy *px)
{
    if (!px->stopped && !uv_is_active((uv_handle_t *)&px->check_timer))
        uv_timer_start(&px->check_timer, on_check_timer, PROXY_STALL_MS / 4, PROXY_STALL_MS / 4);
}

/* A shared upstream cannot wait for a client that does not read: past
 * PROXY_SLOW_CLIENT_FACTOR x the backlog bound, with nothing taken for
 * PROXY_STALL_MS, it is disconnected. A client that reads is not: its
 * answers are bounded with everyone's by max_memory (proxy_memory_check).
 * true: c is over the bound and still taking answers (look again). */
static bool conn_check_slow(struct conn *c)
{
    struct proxy *px = c->px;
    size_t q = dial_queued(&c->client);
    if (c->closing || !c->up || !c->up->shared ||
        q <= PROXY_SLOW_CLIENT_FACTOR * px->cfg.write_backlog_max)
        return false;
    if (!conn_stalled(c))
        return true;
    px->m.slow_clients_closed++;
    log_throttled(&px->throttle.slow_client, LOG_LEVEL_WARN, c->peer,
                  "connection %u: %zu bytes of answers unread, none taken for %d ms; closing it",
                  c->id, q, PROXY_STALL_MS);
    conn_close(c, false);
    return false;
}

static void conn_check_backlog(struct conn *c)
{
    struct proxy *px = c->px;
    size_t q = dial_queued(&c->client);
    if (conn_check_slow(c)) {
        proxy_arm_check(px);
    } else if (!c->closing && q >= px->cfg.write_backlog_max) {
        conn_update_reading(c);
        if (c->up && !c->up->shared)
            upconn_update_reading(c->up);
    }
    if (!c->closing)
        proxy_memory_check(px);
}

/* --- the memory bound ------------------------------------------------------ */

/* The client pinning the most unsent answers, at least a read buffer's
 * worth, among those that took none for PROXY_STALL_MS (one that reads is
 * paused with everyone, never closed for it). */
static struct conn *proxy_heaviest_reader(struct proxy *px)
{
    struct conn *best = NULL;
    size_t most = PBUF_SIZE;
    for (struct conn *c = px->conns; c; c = c->next) {
        size_t q = c->closing || !conn_stalled(c) ? 0 : dial_queued(&c->client);
        if (q >= most) {
            most = q;
            best = c;
        }
    }
    return best;
}

/* Bytes of answers queued to clients, not yet taken by them. */
static size_t proxy_answer_bytes(struct proxy *px)
{
    size_t sum = 0;
    for (struct conn *c = px->conns; c; c = c->next)
        sum += c->closing ? 0 : dial_queued(&c->client);
    return sum;
}

/* Keeps the buffers of the whole process under cfg.max_memory. Past 7/8 of
 * it, the clients that pin the most unsent answers and took none of them
 * for PROXY_STALL_MS are closed (largest first) until what they pin brings
 * the total back under 3/4: memory held for a client that does not read is
 * memory taken from those that do. Past the bound itself, no client is read
 * until the total is back under 3/4; while answers that clients are still
 * taking hold an eighth of it, memcached is not read either (every
 * upstream pauses: every client waits a little, none that reads is cut), and a timer
 * looks again every PROXY_STALL_MS / 4, so a client that stops reading
 * meanwhile is found. Called where buffers are taken for answers and where
 * they come back. */
/* The timer: clients over the backlog that stopped taking answers are
 * cut, the memory bound looked at again; it stops once neither waits. */
static void on_check_timer(uv_timer_t *t)
{
    struct proxy *px = t->data;
    bool again = false;
    for (struct conn *c = px->conns, *next; c; c = next) {
        next = c->next;
        again = conn_check_slow(c) || again;
    }
    proxy_memory_check(px);
    if (!again && !px->memory_paused)
        uv_timer_stop(t);
}

void proxy_memory_check(struct proxy *px)
{
    size_t limit = px->cfg.max_memory, bytes = pbuf_pool_bytes(&px->pool) + px->pending_bytes;
    if (!limit)
        return;
    if (bytes > limit / 8 * 7 && !px->shedding) {
        size_t freed = 0;
        struct conn *c;
        px->shedding = true; /* conn_close below must not come back here */
        while (bytes - freed > limit / 4 * 3 && (c = proxy_heaviest_reader(px)) != NULL) {
            size_t q = dial_queued(&c->client);
            freed += q < bytes - freed ? q : bytes - freed;
            px->m.memory_clients_closed++;
            log_throttled(&px->throttle.memory, LOG_LEVEL_WARN, c->peer,
                          "connection %u: %zu bytes of answers unread while slabtap holds %zu of "
                          "--max-memory %zu; closing it",
                          c->id, q, bytes, limit);
            conn_close(c, false);
        }
        px->shedding = false;
    }
    if (!px->memory_paused && bytes > limit) {
        px->memory_paused = true;
        px->m.memory_pauses++;
        log_warn("buffers hold %zu bytes, over --max-memory %zu: clients are not read until "
                 "they are back under %zu",
                 bytes, limit, limit / 4 * 3);
        proxy_arm_check(px);
        proxy_update_reading(px);
    } else if (px->memory_paused && bytes < limit / 4 * 3) {
        px->memory_paused = false;
        log_info("buffers back to %zu bytes: reading clients again", bytes);
        proxy_update_reading(px);
    }
    /* over the bound, answers waiting for clients (an eighth of it or
     * more) stop memcached being read too: they drain as their clients
     * read, or go with a client that stalls (the timer); with fewer, the
     * memory is requests in flight, which only memcached's answers free */
    bool answers = bytes > limit && proxy_answer_bytes(px) >= limit / 8;
    if (answers != px->answers_paused) {
        px->answers_paused = answers;
        for (struct upconn *up = px->ups; up; up = up->next)
            upconn_update_reading(up);
    }
    pbuf_pool_trim(&px->pool, uv_now(px->loop));
}

/* Sends what was collected for c: 1 sent now, 0 queued, < 0 failed. */
static int conn_reply_write(struct conn *c)
{
    struct pwrite *w = c->reply;
    c->reply = NULL;
    if (!w)
        return 1;
    w->owner = c;
    c->px->m.bytes_to_clients += w->bytes;
    return pwrite_send(&c->px->pool, (uv_stream_t *)&c->client, w, on_client_write_done, true);
}

static void conn_reply_send(struct conn *c)
{
    int rc = conn_reply_write(c);
    if (rc < 0)
        conn_close(c, false);
    else if (rc == 0)
        conn_check_backlog(c);
}

void conn_reply(struct conn *c, struct pbuf *b, size_t off, size_t len)
{
    if (c->closing || len == 0)
        return;
    conn_touch(c);
    c->answer_bytes += len;
    if (c->up && c->up->shared && c->px->cfg.big_answer && c->answer_bytes >= c->px->cfg.big_answer)
        c->go_private = true;
    if (c->reply && !pwrite_add(c->reply, b, off, len))
        conn_reply_send(c);
    if (c->closing)
        return;
    if (!c->reply) {
        if (!(c->reply = pwrite_get(&c->px->pool))) {
            conn_nomem(c);
            return;
        }
        pwrite_add(c->reply, b, off, len);
    }
}

void conn_reply_copy(struct conn *c, const char *data, size_t len)
{
    struct pbuf *b = pbuf_get_size(&c->px->pool, len);
    if (!b) {
        conn_nomem(c);
        return;
    }
    memcpy(b->data, data, len);
    conn_reply(c, b, 0, len);
    pbuf_unref(&c->px->pool, b);
}

static void conn_check_done(struct conn *c);

void conn_reply_flush_all(struct proxy *px)
{
    struct conn *c;
    while ((c = px->replying) != NULL) {
        px->replying = c->reply_next;
        c->on_reply_list = false;
        if (c->closing) {
            if (c->reply)
                pwrite_put(&px->pool, c->reply);
            c->reply = NULL;
            continue;
        }
        conn_reply_send(c);
        if (!c->closing)
            conn_check_done(c);
    }
}

/* --- reading control ---------------------------------------------------------- */

static bool conn_mid_request(const struct conn *c)
{
    return !c->raw && !mc_req_at_boundary(&c->rq);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = h->data;
    struct pbuf *b = pbuf_get(&c->px->pool);
    (void)suggested;
    *buf = b ? uv_buf_init(b->data, PBUF_SIZE) : uv_buf_init(NULL, 0);
}

static void on_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

void conn_update_reading(struct conn *c)
{
    struct proxy *px = c->px;
    struct upconn *up = c->up;
    if (c->closing)
        return;
    /* a client whose request is partly read is read until it is whole,
     * when stopping or at the pending bound: on a private upstream,
     * memcached holds back answers while it waits for the rest of a data
     * block, so the answers that would let us go on might never come */
    bool mid = conn_mid_request(c);
    bool want = !rec_blocked(px->rec) && !px->memory_paused && !c->client_eof && !c->quit &&
                !c->moving && !c->held && up && (!px->stopping || mid) &&
                up->state != UP_CONNECTING && (c->inflight < px->cfg.max_pending || mid) &&
                dial_queued(&c->client) < px->cfg.write_backlog_max &&
                (up->state != UP_READY || dial_queued(&up->sock) < px->cfg.write_backlog_max);
    if (want == c->client_reading)
        return;
    if (want)
        uv_read_start((uv_stream_t *)&c->client, on_alloc, on_client_read);
    else
        uv_read_stop((uv_stream_t *)&c->client);
    c->client_reading = want;
}

void proxy_update_reading(void *arg)
{
    struct proxy *px = arg;
    px->all_paused = rec_blocked(px->rec);
    for (struct conn *c = px->conns; c; c = c->next)
        conn_update_reading(c);
    for (struct upconn *up = px->ups; up; up = up->next)
        upconn_update_reading(up);
}

/* A full recorder must pause every connection at once, not each at its
 * next read, so the overflow stash stays bounded. */
void proxy_after_read(struct proxy *px)
{
    rec_flush(px->rec);
    if (px->memory_paused)
        proxy_memory_check(px);
    if (rec_blocked(px->rec) && !px->all_paused) {
        px->all_paused = true;
        proxy_update_reading(px);
    }
}

/* --- requests ------------------------------------------------------------------- */

static void count_request(struct proxy *px, const struct mc_request *r)
{
    px->m.requests++;
    px->requests_by_cmd[r->cmd]++;
    if (r->is_write)
        px->m.requests_write++;
    else if (proxy_cmd_is_read(r->cmd))
        px->m.requests_read++;
    else
        px->m.requests_other++;
}

/* A request memcached will never see: answer it as a broken server would. */
static void conn_request_unforwarded(struct conn *c, const struct mc_request *r, int64_t wall)
{
    struct pending_entry e = { .req = *r, .t_wall_ns = wall, .conn_id = c->id };
    if (cmd_is_recorded(r->cmd))
        e.seq = ++c->px->next_seq;
    readrec_capture(c->px, &e, &c->rq);
    if (r->reply == MC_REPLY_CLOSE || r->reply == MC_REPLY_STREAM) {
        c->quit = true;
        conn_touch(c); /* closes once its other answers are out */
        return;
    }
    if (r->reply != MC_REPLY_SILENT) {
        conn_reply_copy(c, PROXY_UPSTREAM_ERROR_LINE, sizeof PROXY_UPSTREAM_ERROR_LINE - 1);
        c->px->m.upstream_error_replies++;
    }
    proxy_record(c->px, &e, "upstream_error", SIZE_MAX, -1);
}

static bool conn_request(struct conn *c, const struct mc_request *r, uint64_t now, int64_t wall)
{
    struct upconn *up = c->up;
    struct pending_entry *e = upconn_push(up, c);
    if (!e)
        return false;
    e->req = *r;
    e->t_sent = now;
    e->t_wall_ns = wall;
    if (cmd_is_recorded(r->cmd))
        e->seq = ++c->px->next_seq;
    readrec_capture(c->px, e, &c->rq);
    if (r->reply != MC_REPLY_SILENT)
        up->loud++;
    if (r->reply == MC_REPLY_CLOSE || r->reply == MC_REPLY_STREAM)
        c->quit = true;
    return true;
}

/* The requests in b[from, to) go to c's upstream. Their entries are
 * queued already: bytes that cannot follow them put the upstream out of
 * step, so it is reset (every client on it gets its SERVER_ERRORs). */
static void conn_forward(struct conn *c, struct pbuf *b, size_t from, size_t to)
{
    if (to > from && !upconn_send(c->up, b, from, to - from)) {
        upconn_fail(c->up, "out of memory for a write");
        conn_nomem(c);
    }
}

static void conn_release_assembly(struct conn *c)
{
    for (unsigned i = 0; i < c->asm_n; i++)
        pbuf_unref(&c->px->pool, c->asm_segs[i].b);
    c->asm_n = 0;
    c->asm_len = 0;
    c->asm_tail_own = false;
    c->px->assembly_bytes -= c->asm_reserved;
    c->asm_reserved = 0;
}

/* Appends the assembled bytes, in order, to *out (a copied buffer). */
static bool conn_assembly_append_to(const struct conn *c, struct pbuf **out)
{
    bool ok = true;
    for (unsigned i = 0; i < c->asm_n && ok; i++)
        ok = pbuf_append(&c->px->pool, out, c->asm_segs[i].b->data + c->asm_segs[i].off,
                         c->asm_segs[i].len);
    return ok;
}

static void conn_go_private(struct conn *c)
{
    struct proxy *px = c->px;
    upconn_forget_client(c->up, c);
    c->up = upconn_open(px, false, c);
    if (!c->up)
        conn_nomem(c);
}

/* From the request at b[from] on, c needs an upstream of its own: keep
 * what it sent (the request being assembled, the rest of b), stop reading
 * it, and move once its answers from the shared upstream are all in. */
static void conn_move(struct conn *c, struct pbuf *b, size_t from, size_t n)
{
    struct proxy *px = c->px;
    if (!conn_assembly_append_to(c, &c->deferred) ||
        !pbuf_append(&px->pool, &c->deferred, b->data + from, n - from)) {
        conn_nomem(c);
        return;
    }
    conn_release_assembly(c);
    c->moving = true;
    mc_req_init(&c->rq); /* the deferred bytes are parsed again, from a boundary */
    c->rq.started = !c->raw;
    px->m.clients_moved++;
    conn_update_reading(c);
    if (c->inflight == 0)
        conn_go_private(c);
}

static void conn_client_data(struct conn *c, struct pbuf *b, size_t n);

/* Keeps b[from, n) (after what c->deferred holds) for later. */
static void conn_defer(struct conn *c, struct pbuf *b, size_t from, size_t n)
{
    if (from < n && !pbuf_append(&c->px->pool, &c->deferred, b->data + from, n - from))
        conn_nomem(c);
}

void conn_watch_answered(struct conn *c, bool streaming)
{
    struct pbuf *d = c->deferred;
    c->deferred = NULL;
    c->quit = false;
    if (streaming) {
        /* from now on its bytes pass unparsed (memcached reads and ignores
         * them), and its close is seen, so memcached's watcher goes too */
        c->raw = true;
    } else {
        /* refused ("ERROR cannot pipeline other commands before watch"):
         * the client goes on as memcached does */
        mc_req_init(&c->rq);
        c->rq.started = true;
    }
    if (d) {
        if (streaming)
            conn_forward(c, d, 0, d->len);
        else
            conn_client_data(c, d, d->len);
        pbuf_unref(&c->px->pool, d);
    }
    conn_update_reading(c);
}

/* Bytes the request being parsed will take in all, as far as known now. */
static size_t conn_request_size(const struct conn *c)
{
    if (c->rq.state == MC_REQ_DATA)
        return c->rq.bytes + c->rq.data_left;
    if (c->rq.state == MC_REQ_LINE)
        return MC_LINE_MAX + 2;
    return SIZE_MAX; /* a multiget line longer than MC_LINE_MAX: no bound */
}

/* Counts need bytes (the whole request, as far as known) against the
 * bounds; false when it is too big to assemble (the caller moves the
 * client). */
static bool conn_assembly_reserve(struct conn *c, size_t need)
{
    struct proxy *px = c->px;
    if (need <= c->asm_reserved)
        return true;
    if (need > px->cfg.max_request ||
        px->assembly_bytes - c->asm_reserved + need > px->cfg.max_assembly)
        return false;
    px->assembly_bytes += need - c->asm_reserved;
    c->asm_reserved = need;
    return true;
}

/* Adds b[off, off + len) to the request being assembled: a slice of b when
 * it is large, a copy when small. false: no slice left or no memory. */
static bool conn_assembly_append(struct conn *c, struct pbuf *b, size_t off, size_t len)
{
    struct asm_seg *t = c->asm_n ? &c->asm_segs[c->asm_n - 1] : NULL;
    if (len == 0)
        return true;
    if (len < CONN_ASM_COPY_MAX && t && c->asm_tail_own && t->b->len + len <= t->b->cap) {
        memcpy(t->b->data + t->b->len, b->data + off, len);
        t->b->len += len;
        t->len += (uint32_t)len;
    } else if (c->asm_n == CONN_ASM_SEGS) {
        return false;
    } else if (len < CONN_ASM_COPY_MAX) {
        struct pbuf *own = pbuf_get(&c->px->pool);
        if (!own)
            return false;
        memcpy(own->data, b->data + off, len);
        own->len = len;
        c->asm_segs[c->asm_n++] = (struct asm_seg){ own, 0, (uint32_t)len };
        c->asm_tail_own = true;
    } else {
        pbuf_ref(b);
        c->asm_segs[c->asm_n++] = (struct asm_seg){ b, (uint32_t)off, (uint32_t)len };
        c->asm_tail_own = false;
    }
    c->asm_len += len;
    return true;
}

static void conn_protocol_error(struct conn *c)
{
    struct proxy *px = c->px;
    /* the whole requests before the bad line are memcached's to run, as
     * direct: a private upstream sends them before it goes */
    if (c->up && !c->up->shared)
        upconn_flush(c->up);
    px->m.protocol_errors++;
    log_throttled(&px->throttle.protocol_error, LOG_LEVEL_WARN, c->peer,
                  "connection %u: input memcached closes the connection on (a request line "
                  "over %d bytes); closing it",
                  c->id, MC_LINE_MAX);
    conn_close(c, false);
}

/* What to do with one whole request before it is forwarded. */
enum req_action { REQ_FORWARD, REQ_MOVE, REQ_QUIT, REQ_REFUSE };

/* memcached refuses watch and lru_crawler metadump behind answers it has
 * not sent yet (resp_has_stack: an earlier request of the same read, unless
 * a get or mn flushed them); proto_text.c's words. A get with a key over
 * 250 bytes is answered CLIENT_ERROR -- and memcached drops every answer it
 * had queued on the connection, which on a shared one are other clients':
 * slabtap answers it itself. */
static const char *conn_refusal(const struct mc_request *r, bool stacked)
{
    if (r->key_too_long)
        return "CLIENT_ERROR bad command line format\r\n";
    /* a line starting with 0x80 on a connection that has seen other bytes
     * is an unknown command to memcached (ERROR); forwarded, it could be
     * the first bytes of a fresh connection, and moved it would be: binary */
    if (r->binary_magic && r->reply != MC_REPLY_CLOSE)
        return "ERROR\r\n";
    if (!r->exclusive || !stacked)
        return NULL;
    return r->cmd == MC_CMD_WATCH   ? "ERROR cannot pipeline other commands before watch\r\n"
           : r->cmd == MC_CMD_OTHER ? "ERROR cannot pipeline other commands before metadump\r\n"
                                    : NULL;
}

static enum req_action conn_classify(const struct conn *c, const struct mc_request *r)
{
    if (!c->up->shared || mc_req_shareable(r))
        return REQ_FORWARD;
    if (conn_refusal(r, c->stacked))
        return REQ_REFUSE;
    /* quit and an HTTP line close the connection, whatever its mode: the
     * client's, here */
    if (r->reply == MC_REPLY_CLOSE && !r->version_dependent)
        return REQ_QUIT;
    /* the rest (watch, dumps, a long line memcached's read may cut wherever
     * other clients' bytes put it, what the versions frame differently)
     * goes on a connection of its own: there it is the client's own doing,
     * as direct */
    return REQ_MOVE;
}

/* After r: does memcached hold answers back (direct, in the same read)?
 * A get and mn flush them (conn_mwrite); the others stack. */
static void conn_note_stack(struct conn *c, const struct mc_request *r)
{
    bool flushes = r->cmd == MC_CMD_GET || r->cmd == MC_CMD_GETS || r->cmd == MC_CMD_GAT ||
                   r->cmd == MC_CMD_GATS || r->cmd == MC_CMD_MN;
    c->stacked = !flushes || r->key_too_long;
    c->stack_n = c->stacked ? c->stack_n + 1 : 0;
    if (c->data_spanned) {
        /* its data block ended in a read of exactly what was missing
         * (conn_nread): memcached's buffer is empty, it writes what it
         * holds, this answer included */
        c->data_spanned = false;
        c->stacked = false;
        c->stack_n = 0;
    }
}

/* memcached drops the answers it holds for the connection when a get's key
 * is too long (it resets them for its CLIENT_ERROR) and when a request
 * closes the connection at once (an HTTP line: conn_closing; quit writes
 * them first). On a shared upstream those held answers are c's requests
 * of this read since the last get or mn: theirs are dropped here. */
static void conn_drop_stacked(struct conn *c, const struct mc_request *r)
{
    bool drops = r->key_too_long || (r->reply == MC_REPLY_CLOSE && r->cmd != MC_CMD_QUIT);
    if (drops && c->stack_n && c->up->shared)
        upconn_mute_tail(c->up, c, c->stack_n);
}

/* One whole request whose bytes are b[from, end) (from is SIZE_MAX when it
 * began in an earlier buffer of a private upstream) -- forwarded, answered
 * here, or the start of a move. Returns false when nothing after it may be
 * handled now (moved, quit, closed). */
static bool conn_handle_request(struct conn *c, const struct mc_request *req, struct pbuf *b,
                                size_t *fwd_from, size_t from, size_t end, size_t n, uint64_t now,
                                int64_t wall, bool *fwd)
{
    struct upconn *up = c->up;
    enum req_action act = conn_classify(c, req);
    if (act == REQ_REFUSE || act == REQ_QUIT) {
        if (*fwd) /* the requests before it go first, then lose their answers */
            conn_forward(c, b, *fwd_from, from);
        *fwd_from = from;
        conn_drop_stacked(c, req);
    }
    conn_note_stack(c, req);
    switch (act) {
    case REQ_REFUSE:
        count_request(c->px, req);
        if (*fwd) /* the requests before it go first: its answer follows theirs */
            conn_forward(c, b, *fwd_from, from);
        *fwd_from = end;
        upconn_push_local(up, c, conn_refusal(req, true));
        if (req->exclusive) {
            mc_req_init(&c->rq); /* refused: memcached reads on after it */
            c->rq.started = true;
        }
        return true;
    case REQ_MOVE: /* counted when it is parsed again, on its own upstream */
        if (*fwd)
            conn_forward(c, b, *fwd_from, from);
        conn_move(c, b, from, n);
        return false;
    case REQ_QUIT:
        count_request(c->px, req);
        if (*fwd)
            conn_forward(c, b, *fwd_from, from);
        c->quit = true;
        conn_touch(c); /* closes once its answers are out */
        return false;
    case REQ_FORWARD: break;
    }
    count_request(c->px, req);
    if (!*fwd) {
        conn_request_unforwarded(c, req, wall);
        if (c->discard_current) {
            c->discard_current = false;
            *fwd = up->state == UP_READY;
            *fwd_from = end;
        }
        return !c->quit;
    }
    if (from != SIZE_MAX && upconn_needs_split(up, req)) {
        conn_forward(c, b, *fwd_from, from);
        *fwd_from = from;
        upconn_push_barrier(up);
    }
    if (!conn_request(c, req, now, wall)) {
        if (from != SIZE_MAX)
            conn_forward(c, b, *fwd_from, from);
        conn_nomem(c);
        return false;
    }
    if (req->reply == MC_REPLY_STREAM) {
        /* watch: what follows waits for memcached's answer -- a stream
         * (then it passes unparsed) or a refusal (then it is parsed again) */
        conn_forward(c, b, *fwd_from, end);
        *fwd_from = n;
        conn_defer(c, b, end, n);
        return false;
    }
    if (req->exclusive && !up->shared) {
        /* lru_crawler metadump: memcached hands the connection to its
         * crawler, and what else its read held stays unread until the
         * client's next bytes arrive (1.6.18: a request glued to it is not
         * answered until then). Bytes the client wrote later must not be
         * glued to it (they were, when the move to this connection took
         * longer than the client's pause): what follows waits for the
         * dump's end and goes in a write of its own, as a direct client's
         * next write would -- held, the client not read meanwhile. One
         * difference stays: a request the client itself sent in the same
         * write as the metadump is answered after the dump here, where
         * memcached waits for the client's next bytes to answer it. */
        conn_forward(c, b, *fwd_from, end);
        *fwd_from = n;
        conn_defer(c, b, end, n);
        c->held = c->held_dump = true;
        conn_update_reading(c);
        return false;
    }
    return true;
}

/* The client has a request being assembled: b continues it. Returns where
 * the rest of b starts, or SIZE_MAX when b is used up (or c moved). */
static size_t conn_assembly_continue(struct conn *c, struct pbuf *b, size_t n, uint64_t now,
                                     int64_t wall)
{
    struct mc_request req;
    size_t used, fwd_from = 0;
    bool fwd = c->up->state == UP_READY;
    enum mc_result r = mc_req_parse(&c->rq, b->data, n, &used, &req);
    if (r == MC_ERROR) {
        conn_protocol_error(c);
        return SIZE_MAX;
    }
    size_t need = r == MC_OK                   ? c->asm_len + used
                  : c->rq.state == MC_REQ_DATA ? c->asm_len + used + c->rq.data_left
                                               : conn_request_size(c);
    if (need == SIZE_MAX || !conn_assembly_reserve(c, need)) {
        conn_move(c, b, 0, n);
        return SIZE_MAX;
    }
    if (r == MC_NEED_MORE) {
        if (!conn_assembly_append(c, b, 0, used))
            conn_move(c, b, 0, n);
        return SIZE_MAX;
    }
    enum req_action act = conn_classify(c, &req);
    if (!conn_assembly_append(c, b, 0, used) || act == REQ_MOVE) {
        /* the assembled request and the rest of b go to its own upstream */
        conn_move(c, b, act == REQ_MOVE ? used : 0, n);
        return SIZE_MAX;
    }
    c->px->m.requests_assembled++;
    if (act == REQ_FORWARD && fwd) {
        conn_note_stack(c, &req);
        /* whole: out as the slices it was assembled from */
        if (upconn_needs_split(c->up, &req))
            upconn_push_barrier(c->up);
        count_request(c->px, &req);
        if (!conn_request(c, &req, now, wall)) {
            conn_nomem(c);
            return SIZE_MAX;
        }
        for (unsigned i = 0; i < c->asm_n && !c->closing; i++)
            conn_forward(c, c->asm_segs[i].b, c->asm_segs[i].off,
                         (size_t)c->asm_segs[i].off + c->asm_segs[i].len);
        conn_release_assembly(c);
        return used;
    }
    /* answered here (quit, a refusal, memcached unreachable): from one
     * contiguous copy, through the common path */
    struct pbuf *a = NULL;
    if (!conn_assembly_append_to(c, &a)) {
        pbuf_unref(&c->px->pool, a);
        conn_nomem(c);
        return SIZE_MAX;
    }
    conn_release_assembly(c);
    bool go_on = conn_handle_request(c, &req, a, &fwd_from, 0, a->len, a->len, now, wall, &fwd);
    /* not go_on: quit or an HTTP line, answered here; none of it goes out */
    if (go_on && fwd && !c->closing)
        conn_forward(c, a, fwd_from, a->len);
    pbuf_unref(&c->px->pool, a);
    return go_on ? used : SIZE_MAX;
}

/* A request began at b[from] and did not end in b: on a shared upstream
 * it is assembled before it goes out. */
static void conn_assembly_start(struct conn *c, struct pbuf *b, size_t from, size_t n)
{
    size_t need = conn_request_size(c);
    if (need == SIZE_MAX || !conn_assembly_reserve(c, need) ||
        !conn_assembly_append(c, b, from, n - from)) {
        conn_release_assembly(c);
        conn_move(c, b, from, n);
    }
}

static void conn_binary(struct conn *c, struct pbuf *b, size_t n)
{
    /* memcached speaks the binary protocol to a connection whose first
     * byte is 0x80: slabtap passes it through unchanged on a connection of
     * its own, and binrec records its writes from copies of the bytes */
    c->raw = true;
    c->bin = binrec_open(c->px, c->id);
    if (c->up->shared) {
        conn_move(c, b, 0, n); /* recorded when forwarded from its own */
        return;
    }
    if (c->up->state != UP_READY) {
        conn_close(c, false);
        return;
    }
    c->up->stream = true;
    binrec_requests(c->bin, b->data, n);
    conn_forward(c, b, 0, n);
}

static void conn_client_data(struct conn *c, struct pbuf *b, size_t n)
{
    struct proxy *px = c->px;
    struct upconn *up = c->up;
    uint64_t now = uv_hrtime();
    int64_t wall = clock_wall_ns();
    bool fwd = up->state == UP_READY && !c->discard_current;
    size_t fwd_from = 0, pos = 0;

    c->stacked = false; /* a new read: memcached sent what it held */
    c->stack_n = 0;
    c->data_spanned = c->rq.state == MC_REQ_DATA;
    if (c->raw) {
        binrec_requests(c->bin, b->data, n);
        conn_forward(c, b, 0, n);
        return;
    }
    if (c->go_private && up->shared && !px->stopping) {
        /* it pulls big answers: the next ones come on its own connection,
         * so nobody waits behind them on the shared one */
        c->go_private = false;
        px->m.clients_moved_big_answers++;
        log_write(LOG_LEVEL_DEBUG, c->peer,
                  "connection %u: an answer of %zu bytes or more; moving it to a connection of "
                  "its own",
                  c->id, px->cfg.big_answer);
        conn_move(c, b, 0, n);
        return;
    }
    if (c->asm_n) {
        pos = fwd_from = conn_assembly_continue(c, b, n, now, wall);
        if (pos == SIZE_MAX || px->stopping)
            return; /* at shutdown nothing after the request in progress */
    }
    /* where the request being parsed began in b; SIZE_MAX: in an earlier
     * buffer, already forwarded, too late to put a barrier before it */
    size_t req_begin = mc_req_at_boundary(&c->rq) ? pos : SIZE_MAX;
    while (pos < n && !c->closing) {
        struct mc_request req;
        size_t used;
        bool started = c->rq.started;
        if (mc_req_at_boundary(&c->rq)) {
            req_begin = pos;
            if (c->inflight >= px->cfg.max_pending) {
                /* the pending bound holds inside one read too: the rest
                 * waits, whole, until answers bring it back under */
                conn_defer(c, b, pos, n);
                c->held = true;
                n = pos;
                break;
            }
        }
        enum mc_result r = mc_req_parse(&c->rq, b->data + pos, n - pos, &used, &req);
        pos += used;
        if (r == MC_ERROR && !started && (unsigned char)b->data[req_begin] == 0x80) {
            conn_binary(c, b, n);
            return;
        }
        if (r == MC_ERROR) {
            /* the whole requests before it go out: their entries are queued */
            if (fwd && req_begin != SIZE_MAX)
                conn_forward(c, b, fwd_from, req_begin);
            conn_protocol_error(c);
            return;
        }
        if (r == MC_NEED_MORE)
            break;
        if (!conn_handle_request(c, &req, b, &fwd_from, req_begin, pos, n, now, wall, &fwd))
            return;
        if (px->stopping) {
            n = pos; /* the request in progress at shutdown is whole: forward
                        nothing after it (see conn_update_reading) */
            break;
        }
    }
    if (c->closing)
        return;
    if (conn_mid_request(c) && req_begin != SIZE_MAX && req_begin < n) {
        /* a request still arriving */
        if (up->shared) {
            if (fwd)
                conn_forward(c, b, fwd_from, req_begin);
            conn_assembly_start(c, b, req_begin, n);
            return;
        }
        if (fwd && upconn_needs_split(up, NULL)) {
            conn_forward(c, b, fwd_from, req_begin);
            fwd_from = req_begin;
            upconn_push_barrier(up);
        }
    }
    if (fwd)
        conn_forward(c, b, fwd_from, n);
}

static void conn_client_eof(struct conn *c)
{
    c->client_eof = true;
    conn_release_assembly(c); /* never whole: memcached would drop it too */
    if (c->deferred) {
        pbuf_unref(&c->px->pool, c->deferred);
        c->deferred = NULL;
    }
    c->moving = false;
    uv_read_stop((uv_stream_t *)&c->client);
    c->client_reading = false;
    if (c->inflight && c->up && !c->up->shared && c->up->state == UP_READY) {
        /* let memcached finish what it read, as it would direct */
        upconn_shutdown_write(c->up);
        return;
    }
    conn_touch(c); /* closes once its answers are out */
}

static void on_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    struct proxy *px = c->px;
    struct pbuf *b = buf->base ? pbuf_from_base(buf->base) : NULL;
    if (nread > 0 && !c->closing) {
        px->m.bytes_from_clients += (uint64_t)nread;
        conn_client_data(c, b, (size_t)nread);
    } else if (nread < 0 && !c->closing) {
        conn_client_eof(c);
    }
    if (b)
        pbuf_unref(&px->pool, b);
    conn_reply_flush_all(px);
    proxy_after_read(px);
    conn_update_reading(c);
}

/* --- state changes of a client ----------------------------------------------------- */

void conn_entry_done(struct conn *c)
{
    c->answer_bytes = 0;
    if (c->inflight)
        c->inflight--;
    /* conn_check_done after this read: the last answer, or back under the
     * bound (reading goes on, held requests go out) */
    if (c->inflight == 0 || c->inflight + 1 == c->px->cfg.max_pending)
        conn_touch(c);
}

/* Called once the answers of a read are sent: a client waiting for its
 * last answer (to quit, to move, to stop) goes on. */
static void conn_check_done(struct conn *c)
{
    struct proxy *px = c->px;
    if (c->held && c->inflight < px->cfg.max_pending && !c->closing &&
        !(c->held_dump && c->inflight)) {
        struct pbuf *d = c->deferred;
        c->deferred = NULL;
        c->held = c->held_dump = false;
        if (d) {
            conn_client_data(c, d, d->len);
            pbuf_unref(&px->pool, d);
        }
    }
    conn_update_reading(c);
    if (c->closing || c->inflight)
        return;
    if (c->moving && c->up && c->up->shared) {
        conn_go_private(c);
        return;
    }
    /* quit on a private upstream goes to memcached, which closes: that
     * closes the client, unless memcached was not there to get it */
    if ((c->quit && (!c->up || c->up->shared || c->up->state != UP_READY)) || c->client_eof ||
        (px->stopping && !conn_mid_request(c) && !c->moving))
        conn_close(c, true);
}

void conn_upstream_ready(struct conn *c)
{
    struct pbuf *d = c->deferred;
    if (c->closing)
        return;
    if (c->up->state == UP_READY)
        c->discard_current = !c->up->shared && conn_mid_request(c);
    if (c->moving && !c->up->shared && c->up->state != UP_CONNECTING) {
        /* moved: what it sent since goes out on its own connection now
         * (or is answered SERVER_ERROR if memcached cannot be reached) */
        c->moving = false;
        c->deferred = NULL;
        if (d) {
            if (c->raw && c->up->state == UP_READY)
                c->up->stream = true;
            conn_client_data(c, d, d->len);
            pbuf_unref(&c->px->pool, d);
        }
        conn_reply_flush_all(c->px);
    }
    conn_update_reading(c);
}

void conn_upstream_gone(struct conn *c)
{
    conn_close(c, true);
}

static void on_client_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    struct proxy *px = c->px;
    if (--c->open_handles)
        return;
    free(c);
    proxy_memory_check(px);
    proxy_maybe_stopped(px);
}

static void on_client_shutdown(uv_shutdown_t *req, int status)
{
    struct conn *c = req->data;
    (void)status;
    uv_close((uv_handle_t *)&c->client, on_client_closed);
}

void conn_close(struct conn *c, bool graceful)
{
    struct proxy *px = c->px;
    if (c->closing)
        return;
    c->closing = true;
    binrec_close(c->bin);
    c->bin = NULL;
    conn_release_assembly(c);
    if (c->deferred)
        pbuf_unref(&px->pool, c->deferred);
    c->deferred = NULL;
    if (c->on_reply_list)
        conn_untouch(c);
    if (graceful && c->reply)
        conn_reply_write(c); /* answers collected for it go out before the shutdown */
    if (c->reply)
        pwrite_put(&px->pool, c->reply);
    c->reply = NULL;
    /* its requests still waiting on a shared upstream are answered there
     * and recorded; a private upstream goes with it ("no_answer" rows) */
    if (c->up) {
        struct upconn *up = c->up;
        upconn_forget_client(up, c);
        if (!up->shared)
            upconn_close(up);
        c->up = NULL;
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        px->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    px->m.connections_open--;
    log_write(LOG_LEVEL_DEBUG, c->peer, "connection %u closed", c->id);
    c->client_shutdown.data = c;
    if (!graceful ||
        uv_shutdown(&c->client_shutdown, (uv_stream_t *)&c->client, on_client_shutdown))
        uv_close((uv_handle_t *)&c->client, on_client_closed);
}

/* --- accepting ------------------------------------------------------------------------ */

/* Once, at accept: every later message about the connection names it. */
static void conn_peer_text(struct conn *c)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (c->px->listen_family == AF_UNIX) { /* a unix client has no name of its own */
        snprintf(c->peer, sizeof c->peer, "%s", c->px->listen_text);
        return;
    }
    bool ok = uv_tcp_getpeername(&c->client.tcp, (struct sockaddr *)&ss, &len) == 0;
    addr_format(ok ? (const struct sockaddr *)&ss : NULL, c->peer, sizeof c->peer);
}

/* The pooled upstream with the fewest clients. */
static struct upconn *proxy_pick_upstream(struct proxy *px)
{
    struct upconn *best = NULL;
    for (unsigned i = 0; i < px->cfg.upstream_conns; i++) {
        struct upconn *u = px->pool_ups[i];
        if (u && (!best || u->clients < best->clients))
            best = u;
    }
    return best;
}

static void on_spare_closed(uv_handle_t *h)
{
    struct proxy *px = h->data;
    px->spare_busy = false;
    proxy_maybe_stopped(px);
}

/* No memory for a client: it is accepted and closed at once, or libuv
 * would stop offering new connections until this one is taken. */
static void proxy_refuse(struct proxy *px, uv_stream_t *server)
{
    px->m.connections_refused++;
    log_throttled(&px->throttle.accept, LOG_LEVEL_ERROR, NULL,
                  "out of memory for a new connection; refusing it");
    if (px->spare_busy)
        return;
    dial_init(px->loop, &px->spare, px->listen_family);
    px->spare.handle.data = px;
    px->spare_busy = true;
    uv_accept(server, (uv_stream_t *)&px->spare);
    uv_close((uv_handle_t *)&px->spare, on_spare_closed);
}

/* A client past the connection limit, accepted only to be told so. */
struct refused {
    union dial_stream sock;
};

static void on_refused_closed(uv_handle_t *h)
{
    free(h->data);
}

/* At the connection limit: memcached's own refusal line, then the close
 * (as memcached past its -c). Counted; logged once a second at most. */
static void proxy_refuse_full(struct proxy *px, uv_stream_t *server)
{
    static char line[] = "ERROR Too many open connections\r\n";
    struct refused *r = malloc(sizeof *r);
    if (!r) {
        proxy_refuse(px, server);
        return;
    }
    px->m.connections_refused++;
    log_throttled(&px->throttle.accept, LOG_LEVEL_WARN, NULL,
                  "%llu connections open, the limit (--max-conns, from the fd limit): refusing "
                  "a new one",
                  (unsigned long long)px->m.connections_open);
    dial_init(px->loop, &r->sock, px->listen_family);
    r->sock.handle.data = r;
    if (uv_accept(server, &r->sock.stream) == 0) {
        uv_buf_t b = uv_buf_init(line, sizeof line - 1);
        uv_try_write(&r->sock.stream, &b, 1);
    }
    uv_close(&r->sock.handle, on_refused_closed);
}

/* Clients the fd limit leaves room for: each takes one fd (two with a
 * memcached connection of its own), after PROXY_FD_RESERVE for the rest of
 * the process. The soft limit is raised to the hard one first. Without this
 * bound libuv, out of fds, accepts and closes new clients itself, unseen. */
static uint64_t proxy_conn_limit(const struct proxy_config *cfg)
{
    struct rlimit rl;
    uint64_t fds, limit;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return cfg->max_conns ? cfg->max_conns : UINT64_MAX;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t want = rl.rlim_max;
        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            getrlimit(RLIMIT_NOFILE, &rl);
    }
    fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX / 4 : (uint64_t)rl.rlim_cur;
    fds = fds > PROXY_FD_RESERVE + cfg->upstream_conns
              ? fds - PROXY_FD_RESERVE - cfg->upstream_conns
              : 1;
    limit = cfg->upstream_conns == 0 ? fds / 2 : fds;
    if (limit == 0)
        limit = 1;
    return cfg->max_conns && cfg->max_conns < limit ? cfg->max_conns : limit;
}

static void on_accept(uv_stream_t *server, int status)
{
    struct proxy *px = server->data;
    struct conn *c;
    if (status == 0 && !px->stopping && px->m.connections_open >= px->conn_limit) {
        proxy_refuse_full(px, server);
        return;
    }
    if (status < 0) {
        /* libuv keeps listening (at the fd limit it accepts and closes with
         * a reserved fd): count and log, once a second at most */
        px->m.connections_refused++;
        log_throttled(&px->throttle.accept, LOG_LEVEL_ERROR, NULL, "accept failed: %s",
                      uv_strerror(status));
    }
    if (status < 0 || px->stopping)
        return;
    c = calloc(1, sizeof *c);
    if (!c) {
        proxy_refuse(px, server);
        return;
    }
    c->px = px;
    dial_init(px->loop, &c->client, px->listen_family);
    c->client.handle.data = c;
    c->open_handles = 1;
    if (uv_accept(server, (uv_stream_t *)&c->client)) {
        c->closing = true;
        uv_close((uv_handle_t *)&c->client, on_client_closed);
        return;
    }
    conn_peer_text(c);
    c->id = ++px->next_conn_id;
    c->drained_ms = uv_now(px->loop);
    mc_req_init(&c->rq);
    c->next = px->conns;
    if (px->conns)
        px->conns->prev = c;
    px->conns = c;
    px->m.connections_accepted++;
    px->m.connections_open++;
    log_write(LOG_LEVEL_DEBUG, c->peer, "connection %u accepted", c->id);
    if (px->cfg.upstream_conns == 0) {
        c->up = upconn_open(px, false, c);
    } else if ((c->up = proxy_pick_upstream(px)) != NULL) {
        c->up->clients++;
    }
    if (!c->up)
        conn_nomem(c);
    else
        conn_update_reading(c);
}

/* --- the proxy ---------------------------------------------------------------------------- */

/* After every loop iteration's I/O: the batched requests go to memcached,
 * one write per upstream, and any answers not sent yet go to clients. */
static void on_flush(uv_check_t *h)
{
    struct proxy *px = h->data;
    conn_reply_flush_all(px);
    upconn_flush_all(px);
}

/* A unix socket path already there: removed when nothing answers on it
 * (the file of a proxy that died), refused when something does or when it
 * is not a socket. 0, or -1 with why. */
static int proxy_unix_stale(const char *path, char *err, size_t errlen)
{
    struct stat st;
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "cannot listen on unix:%s: the path is there and is not a socket",
                 path);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on unix:%s: socket: %s", path, strerror(errno));
        return -1;
    }
    memcpy(un.sun_path, path, strlen(path) + 1);
    int rc = connect(fd, (const struct sockaddr *)&un, sizeof un), e = errno;
    close(fd);
    if (rc == 0) {
        snprintf(err, errlen, "cannot listen on unix:%s: something answers there already", path);
        return -1;
    }
    if (e == ECONNREFUSED && unlink(path) == 0)
        return 0;
    snprintf(err, errlen, "cannot listen on unix:%s: %s", path,
             strerror(e == ECONNREFUSED ? errno : e));
    return -1;
}

static int proxy_listen_unix(struct proxy *px, const struct sockaddr_un *un, char *err,
                             size_t errlen)
{
    int rc;
    if (proxy_unix_stale(un->sun_path, err, errlen))
        return -1;
    uv_pipe_init(px->loop, &px->listener.pipe, 0);
    px->listener_open = true;
    px->listen_family = AF_UNIX;
    /* clients of the owner and its group only (0660), from the start: the
     * socket is created with the umask (start-up: one thread) */
    mode_t old = umask(0117);
    rc = uv_pipe_bind(&px->listener.pipe, un->sun_path);
    umask(old);
    px->unix_bound = rc == 0;
    if (rc == 0)
        rc = uv_listen(&px->listener.stream, 1024, on_accept);
    if (rc)
        snprintf(err, errlen, "cannot listen on unix:%s: %s", un->sun_path, uv_strerror(rc));
    return rc ? -1 : 0;
}

/* One TCP address: a socket bound and listening (an IPv6 one dual-stack),
 * or -errno. */
static int proxy_listen_fd(const struct sockaddr *sa)
{
    int one = 1, zero = 0;
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (sa->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, sa, addr_len(sa)) == 0 && listen(fd, 1024) == 0)
        return fd;
    int e = errno;
    close(fd);
    return -e;
}

/* The first address of the list that binds; an IPv6 wildcard first (:PORT:
 * dual-stack [::] takes IPv4 too; 0.0.0.0 where there is no IPv6). */
static int proxy_listen_tcp(struct proxy *px, const struct addr_list *l, char *err, size_t errlen)
{
    size_t order[ADDR_LIST_MAX], n = 0, used = 0;
    int fd = -1;
    for (size_t i = 0; i < l->n; i++)
        if (l->a[i].ss_family == AF_INET6 && addr_is_wildcard((const struct sockaddr *)&l->a[i]))
            order[n++] = i;
    for (size_t i = 0; i < l->n; i++)
        if (!(l->a[i].ss_family == AF_INET6 && addr_is_wildcard((const struct sockaddr *)&l->a[i])))
            order[n++] = i;
    err[0] = '\0';
    for (size_t k = 0; k < n && fd < 0; k++) {
        char text[ADDR_TEXT_MAX];
        const struct sockaddr *sa = (const struct sockaddr *)&l->a[order[k]];
        fd = proxy_listen_fd(sa);
        if (fd < 0 && used < errlen)
            used += (size_t)snprintf(err + used, errlen - used, "%s%s: %s",
                                     used ? "; " : "cannot listen on ",
                                     addr_format(sa, text, sizeof text), strerror(-fd));
    }
    if (fd < 0)
        return -1;
    uv_tcp_init(px->loop, &px->listener.tcp);
    px->listener_open = true;
    px->listen_family = AF_INET;
    int rc = uv_tcp_open(&px->listener.tcp, fd);
    if (rc)
        close(fd); /* not the handle's */
    else
        rc = uv_listen(&px->listener.stream, 1024, on_accept);
    if (rc) {
        snprintf(err, errlen, "cannot listen: %s", uv_strerror(rc));
        return -1;
    }
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (uv_tcp_getsockname(&px->listener.tcp, (struct sockaddr *)&ss, &len) == 0)
        addr_format((const struct sockaddr *)&ss, px->listen_text, sizeof px->listen_text);
    return 0;
}

int proxy_open(struct proxy *px, uv_loop_t *loop, const struct proxy_config *cfg,
               struct recorder *rec, char *err, size_t errlen)
{
    memset(px, 0, sizeof *px);
    px->loop = loop;
    px->cfg = *cfg;
    px->conn_limit = proxy_conn_limit(cfg);
    px->m.connections_limit = px->conn_limit;
    px->rec = rec;
    addr_format((const struct sockaddr *)&cfg->upstream_addrs.a[0], px->upstream_peer,
                sizeof px->upstream_peer);
    uv_timer_init(loop, &px->drain_timer);
    px->drain_timer.data = px;
    uv_timer_init(loop, &px->check_timer);
    px->check_timer.data = px;
    uv_check_init(loop, &px->flusher);
    px->flusher.data = px;
    uv_check_start(&px->flusher, on_flush);
    px->mn_buf = pbuf_get(&px->pool);
    if (px->mn_buf)
        memcpy(px->mn_buf->data, "mn\r\n", 4);
    if (cfg->upstream_conns)
        px->pool_ups = calloc(cfg->upstream_conns, sizeof *px->pool_ups);
    if (!px->mn_buf || (cfg->upstream_conns && !px->pool_ups)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const struct sockaddr *first = (const struct sockaddr *)&cfg->listen_addrs.a[0];
    if (cfg->listen_addrs.n && first->sa_family == AF_UNIX) {
        addr_format(first, px->listen_text, sizeof px->listen_text);
        if (proxy_listen_unix(px, (const struct sockaddr_un *)first, err, errlen))
            return -1;
    } else if (proxy_listen_tcp(px, &cfg->listen_addrs, err, errlen)) {
        return -1;
    }
    px->listener.handle.data = px;
    for (unsigned i = 0; i < cfg->upstream_conns; i++) {
        if (!(px->pool_ups[i] = upconn_open(px, true, NULL))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    return 0;
}

void proxy_maybe_stopped(struct proxy *px)
{
    if (!px->stopping || px->conns || px->stopped || px->spare_busy)
        return;
    /* every client gone: the pool goes once memcached has answered what
     * it was sent (those answers are rows, whoever asked), or at the drain
     * deadline; then we are done */
    for (struct upconn *up = px->ups; up; up = up->next) {
        if (up->closing)
            continue;
        if (up->state == UP_READY && up->pend.count && !px->drain_expired)
            upconn_flush(up); /* a silent tail gets its barrier */
        else
            upconn_close(up);
    }
    if (px->upstreams_open)
        return;
    if (px->resolving) { /* up_on_resolved comes back here */
        uv_cancel((uv_req_t *)&px->resolve_req);
        return;
    }
    px->stopped = true;
    /* every connection closed: the last reads are counted, hand them over */
    gets_flush(px);
    void (*cb)(struct proxy *) = px->on_stopped;
    px->on_stopped = NULL;
    uv_timer_stop(&px->drain_timer);
    uv_close((uv_handle_t *)&px->drain_timer, NULL);
    uv_timer_stop(&px->check_timer);
    uv_close((uv_handle_t *)&px->check_timer, NULL);
    uv_check_stop(&px->flusher);
    uv_close((uv_handle_t *)&px->flusher, NULL);
    pbuf_unref(&px->pool, px->mn_buf);
    px->mn_buf = NULL;
    free(px->pool_ups);
    px->pool_ups = NULL;
    if (cb)
        cb(px);
}

static void on_drain_timeout(uv_timer_t *t)
{
    struct proxy *px = t->data;
    size_t open = 0;
    for (struct conn *c = px->conns; c; c = c->next)
        open++;
    log_warn("shutdown: %u ms passed, closing %zu connection(s) still waiting for answers",
             px->cfg.drain_timeout_ms, open);
    px->drain_expired = true;
    while (px->conns)
        conn_close(px->conns, false);
    proxy_maybe_stopped(px);
}

void proxy_force_stop(struct proxy *px)
{
    if (px->stopping && !px->stopped)
        on_drain_timeout(&px->drain_timer);
}

void proxy_close(struct proxy *px, void (*on_stopped)(struct proxy *px))
{
    px->stopping = true;
    px->on_stopped = on_stopped;
    if (px->listener_open) {
        uv_close(&px->listener.handle, NULL);
        px->listener_open = false;
    }
    if (px->unix_bound) { /* ours: bound by proxy_listen_unix */
        unlink(((const struct sockaddr_un *)&px->cfg.listen_addrs.a[0])->sun_path);
        px->unix_bound = false;
    }
    uv_timer_start(&px->drain_timer, on_drain_timeout, px->cfg.drain_timeout_ms, 0);
    for (struct conn *c = px->conns, *next; c; c = next) {
        next = c->next;
        conn_update_reading(c);
        if (c->up && c->up->state != UP_READY && !c->moving)
            conn_close(c, true);
        else
            conn_check_done(c);
    }
    proxy_maybe_stopped(px);
}
