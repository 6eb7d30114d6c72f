/* load: the pipelined client engine behind `slabtap load`. One private
 * uv_loop per load_run; every callback runs on the thread that called it.
 * Allocations happen once per run (connections, the value pattern); the
 * per-op path only writes into fixed arenas. */
#include "load/load.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "core/addr.h"
#include "core/dial.h"
#include "core/keyfmt.h"
#include "load/replay.h"
#include "protocol/mc_parse.h"

#define LOAD_READ_BUF (64 * 1024)
#define LOAD_BATCH_TEXT (32 * 1024) /* request lines of one write */
#define LOAD_BATCH_BUFS 1024        /* iovecs of one write */
/* "prepend " + a 250-byte key + flags, exptime and length + " noreply\r\n" */
#define LOAD_HDR_MAX 320
/* Values are slices of this one buffer; a value longer than it is sent as
 * several slices (a 1 GiB value, memcached's largest, needs 512). */
#define LOAD_PATTERN_BYTES (2u * 1024 * 1024)
#define LOAD_FENCE "mn\r\n"
#define LOAD_FENCE_LEN 4

/* ---- tables ------------------------------------------------------------- */

static const char *const load_answer_text[LOAD_ANS_COUNT] = {
#define LOAD_ANSWER_ROW(id, text) text,
    LOAD_ANSWERS(LOAD_ANSWER_ROW)
#undef LOAD_ANSWER_ROW
};

static const char *const load_status_text[LOAD_STATUS_COUNT] = {
#define LOAD_STATUS_ROW(id, text) text,
    LOAD_STATUSES(LOAD_STATUS_ROW)
#undef LOAD_STATUS_ROW
};

const char *load_answer_name(enum load_answer a)
{
    return (unsigned)a < LOAD_ANS_COUNT ? load_answer_text[a] : "?";
}

const char *load_status_str(enum load_status st)
{
    return (unsigned)st < LOAD_STATUS_COUNT ? load_status_text[st] : "?";
}

/* ---- operation sources ------------------------------------------------------ */

struct load_source {
    enum load_source_kind kind;
    struct workload_plan plan;
    struct replay *replay;
    uint64_t mark_at, ops; /* cfg->mark_at_op; ops yielded so far */
    bool marked;
};

static void load_resolve(const struct load_config *cfg, struct load_result *res)
{
    const struct workload_settings *ws =
        cfg->source == LOAD_SRC_WORKLOAD && cfg->workload ? workload_settings(cfg->workload) : NULL;
    res->connections = cfg->connections            ? cfg->connections
                       : ws && ws->has_connections ? ws->connections
                                                   : LOAD_DEFAULT_CONNECTIONS;
    res->pipeline = cfg->pipeline            ? cfg->pipeline
                    : ws && ws->has_pipeline ? ws->pipeline
                                             : LOAD_DEFAULT_PIPELINE;
    res->seed = cfg->seed_set ? cfg->seed : ws && ws->has_seed ? ws->seed : 0;
}

/* Replays open before connecting (a bad file fails fast); a workload plan
 * opens once the ladder is known. */
static int load_source_open_replay(struct load_source *s, const struct load_config *cfg, char *err,
                                   size_t errlen)
{
    static const enum replay_kind kinds[] = { [LOAD_SRC_REPLAY_DB] = REPLAY_DB,
                                              [LOAD_SRC_TWITTER] = REPLAY_TWITTER,
                                              [LOAD_SRC_CACHELIB] = REPLAY_CACHELIB };
    memset(s, 0, sizeof *s);
    s->kind = cfg->source;
    s->mark_at = cfg->mark_at_op;
    if (cfg->source == LOAD_SRC_WORKLOAD)
        return 0;
    if (replay_open(&s->replay, kinds[cfg->source], cfg->path, cfg->replay_run, err, errlen) !=
        REPLAY_OK)
        return -1;
    if (cfg->source == LOAD_SRC_REPLAY_DB && cfg->replay_reads &&
        replay_db_reads(s->replay, cfg->demand_fill, err, errlen) != REPLAY_OK)
        return -1;
    return 0;
}

static int load_source_open_plan(struct load_source *s, const struct load_config *cfg,
                                 const struct slab_ladder *ladder, uint64_t seed, char *err,
                                 size_t errlen)
{
    struct workload_error werr;
    if (s->kind != LOAD_SRC_WORKLOAD)
        return 0;
    if (workload_plan_init(&s->plan, cfg->workload, ladder, seed, &werr) != WORKLOAD_OK) {
        snprintf(err, errlen, "%s", werr.msg);
        return -1;
    }
    return 0;
}

static enum workload_next load_source_next(struct load_source *s, struct workload_item *it,
                                           char *err, size_t errlen)
{
    enum workload_next nx;
    if (s->mark_at && !s->marked && s->ops == s->mark_at) { /* cfg->mark_at_op */
        s->marked = true;
        memset(it, 0, sizeof *it);
        it->kind = WORKLOAD_ITEM_PHASE;
        snprintf(it->phase, sizeof it->phase, "%s", LOAD_MARK_PHASE);
        return WORKLOAD_NEXT_ITEM;
    }
    nx = s->kind == LOAD_SRC_WORKLOAD ? workload_plan_next(&s->plan, it)
                                      : replay_next(s->replay, it, err, errlen);
    if (nx == WORKLOAD_NEXT_ITEM && it->kind == WORKLOAD_ITEM_OP)
        s->ops++;
    return nx;
}

static void load_source_close(struct load_source *s, struct load_result *res)
{
    if (s->replay) {
        res->skipped = replay_skipped(s->replay);
        res->replay_run = replay_run_id(s->replay);
        res->fill_skipped_next_write = replay_fill_next_write(s->replay);
        res->fill_skipped_unknown = replay_fill_unknown(s->replay);
        res->replay_reads = replay_reads_total(s->replay);
        res->counter_ops = replay_counter_ops(s->replay);
        res->counter_keys = replay_counter_keys(s->replay);
        replay_close(s->replay);
        s->replay = NULL;
    }
}

static uint64_t load_source_total(const struct load_source *s, const struct load_config *cfg)
{
    return s->kind == LOAD_SRC_WORKLOAD ? workload_total_ops(cfg->workload)
                                        : replay_total(s->replay);
}

static int load_check_config(const struct load_config *cfg, struct load_result *res)
{
    const char *why = NULL;
    if (cfg->source == LOAD_SRC_WORKLOAD && !cfg->workload)
        why = "no workload given";
    else if (cfg->source != LOAD_SRC_WORKLOAD && !cfg->path)
        why = "no trace or database file given";
    else if ((unsigned)cfg->source > LOAD_SRC_CACHELIB)
        why = "unknown source";
    else if (res->connections < 1 || res->connections > LOAD_CONNECTIONS_MAX)
        why = "connections out of range (1..256)";
    else if (res->pipeline < 1 || res->pipeline > LOAD_PIPELINE_MAX)
        why = "pipeline out of range (1..4096)";
    if (!why)
        return 0;
    res->status = LOAD_E_ARG;
    snprintf(res->error, sizeof res->error, "%s", why);
    return -1;
}

static void load_fingerprint_final(struct sha256_ctx *fp, struct load_result *res)
{
    uint8_t d[SHA256_DIGEST_LEN];
    sha256_final(fp, d);
    sha256_hex(d, res->fingerprint);
}

int load_plan_digest(const struct load_config *cfg, struct load_result *out)
{
    struct load_source src;
    struct workload_item it;
    struct sha256_ctx fp;
    enum workload_next nx;
    memset(out, 0, sizeof *out);
    load_resolve(cfg, out);
    if (load_check_config(cfg, out))
        return -1;
    sha256_init(&fp);
    if (load_source_open_replay(&src, cfg, out->error, sizeof out->error) ||
        load_source_open_plan(&src, cfg, cfg->ladder, out->seed, out->error, sizeof out->error)) {
        out->status = LOAD_E_SOURCE;
        load_source_close(&src, out);
        return -1;
    }
    while ((nx = load_source_next(&src, &it, out->error, sizeof out->error)) ==
           WORKLOAD_NEXT_ITEM) {
        if (it.kind == WORKLOAD_ITEM_PHASE)
            out->phases++;
        if (it.kind != WORKLOAD_ITEM_OP)
            continue;
        workload_op_digest(&fp, &it.op);
        out->ops++;
        out->ops_by_cmd[it.op.cmd]++;
    }
    load_source_close(&src, out);
    load_fingerprint_final(&fp, out);
    if (nx == WORKLOAD_NEXT_ERROR) {
        out->status = LOAD_E_SOURCE;
        return -1;
    }
    return 0;
}

/* ---- the engine --------------------------------------------------------------- */

enum load_slot_kind { LOAD_SLOT_REPLY, LOAD_SLOT_SILENT, LOAD_SLOT_FENCE };

/* What a slot's op is to get-or-set. */
enum load_role { LOAD_ROLE_PLAIN, LOAD_ROLE_FILL_READ, LOAD_ROLE_FILL_SET };

struct load_slot {
    uint8_t cmd;  /* enum workload_cmd */
    uint8_t kind; /* enum load_slot_kind */
    uint8_t role; /* enum load_role */
    uint64_t due; /* uv_hrtime the op was due (rate) or written */
};

struct load_batch {
    uv_write_t req;
    unsigned nbufs;
    size_t text_len;
    uv_buf_t bufs[LOAD_BATCH_BUFS];
    char text[LOAD_BATCH_TEXT];
};

struct load_conn {
    union dial_stream sock; /* TCP or a unix socket */
    uv_connect_t connect_req;
    struct load_engine *e;
    unsigned id;
    bool connected;
    bool writing;  /* batch[fill ^ 1] is being written */
    unsigned fill; /* the batch new requests go into */
    struct load_batch batch[2];
    struct load_slot *fifo; /* ring of pipeline + 1 (room for one fence) */
    unsigned head, count;
    struct workload_op *defer; /* ring of LOAD_DEFER_MAX ops, in plan order */
    uint64_t *defer_due;       /* when each deferred op was due */
    unsigned defer_head, defer_count;
    /* get-or-set, only when the source can fill: the fill of each fill
     * read in flight (parallel to fifo), the fills due after misses (a
     * ring of pipeline + 1, sent before anything else), and per key-hash
     * bucket the fill reads whose fill is not queued yet */
    struct workload_op *fill_of;
    struct workload_op *fills_due;
    unsigned fills_head, fills_count;
    uint16_t *fill_wait;
    struct mc_resp_parser rp;
    bool in_get; /* inside a get's VALUE ... END answer */
    uint32_t get_hits;
    char rbuf[LOAD_READ_BUF];
};

enum load_state {
    LOAD_ST_CONNECTING,
    LOAD_ST_PROBING, /* `stats settings` + `version` on connection 0 */
    LOAD_ST_RUNNING,
    LOAD_ST_BARRIER, /* waiting for every answer before `barrier` */
    LOAD_ST_SLEEPING,
    LOAD_ST_DONE,
};

enum load_barrier { LOAD_BAR_PHASE, LOAD_BAR_SLEEP, LOAD_BAR_END };

struct load_engine {
    uv_loop_t loop;
    const struct load_config *cfg;
    struct load_result *res;
    struct load_source src;
    struct workload_item item; /* fetched, not yet queued */
    bool have_item;
    enum load_state state;
    enum load_barrier barrier;
    char phase[WORKLOAD_NAME_MAX];
    uint32_t sleep_ms;
    struct load_conn *conns;
    unsigned n_conns, n_connected;
    unsigned pipeline;
    char *pattern;
    /* counter keys' values (load/replay.h), LOAD_PATTERN_BYTES + 1 bytes of
     * each form: for set (add, replace), prepend and append; only when the
     * replay has counter keys */
    char *digits[3];
    uv_timer_t tick, sleep_timer;
    /* the rate clock: a timerfd set to the next op's due time, to the
     * microsecond (libuv timers tick in milliseconds, which would add up
     * to a millisecond of false latency to every paced op) */
    int rate_fd;
    uv_poll_t rate_poll;
    uint64_t paced;  /* ops released by the rate so far */
    bool have_due;   /* e->item's due time is in op_due */
    uint64_t op_due; /* when the op being queued was due */
    struct sha256_ctx fp;
    uint64_t t_begin, t_start, t_progress;
    uint64_t done, total;
    bool progress_shown, handles_open;
    uv_write_t probe_req;
    char probe_cmd[STATS_BATCH_CMD_MAX];
    struct stats_parse_batch probe;
    struct stats_sample *sample;
    struct slab_ladder ladder;
    bool can_fill;                      /* the source may yield fill reads */
    bool server_ok;                     /* the target answered `stats` */
    struct load_server_counts at_start; /* the target's counters at run start */
    struct load_server_counts at_phase; /* ... at the current phase's start */
};

static char load_crlf[] = "\r\n";

/* A text-protocol noreply request is only ever answered by
 * out_errstring() ("SERVER_ERROR out of memory ..."); mc_parse knows. */
static const struct mc_request load_silent_request = {
    .cmd = MC_CMD_SET, .reply = MC_REPLY_SILENT, .is_write = true, .noreply = true
};

static void load_pump(struct load_engine *e);
static void load_shutdown(struct load_engine *e);

static void load_fail(struct load_engine *e, enum load_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void load_fail(struct load_engine *e, enum load_status st, const char *fmt, ...)
{
    if (e->state == LOAD_ST_DONE)
        return;
    if (e->res->status == LOAD_OK) {
        va_list ap;
        va_start(ap, fmt);
        e->res->status = st;
        vsnprintf(e->res->error, sizeof e->res->error, fmt, ap);
        va_end(ap);
    }
    load_shutdown(e);
}

/* ---- progress ------------------------------------------------------------------- */

static void load_progress(struct load_engine *e, bool final)
{
    if (!e->cfg->progress || !e->t_start)
        return;
    uint64_t now = uv_hrtime();
    unsigned ms = e->cfg->progress_ms ? e->cfg->progress_ms : LOAD_PROGRESS_PIPE_MS;
    if (!final && now - e->t_progress < ms * 1000000ull)
        return;
    if (final && !e->progress_shown)
        return;
    e->t_progress = now;
    struct load_progress p = {
        .done = e->done, .total = e->total, .elapsed_ns = now - e->t_start, .final = final
    };
    e->cfg->progress(e->cfg->progress_arg, &p);
    e->progress_shown = true;
}

static void load_on_tick(uv_timer_t *t)
{
    struct load_engine *e = t->data;
    if (e->cfg->stop && atomic_load(e->cfg->stop)) {
        load_fail(e, LOAD_E_STOPPED, "stopped after %" PRIu64 " ops", e->res->ops);
        return;
    }
    if (e->state == LOAD_ST_CONNECTING &&
        uv_hrtime() - e->t_begin > LOAD_CONNECT_TIMEOUT_MS * 1000000ull) {
        load_fail(e, LOAD_E_CONNECT, "cannot connect: no answer within %d ms",
                  LOAD_CONNECT_TIMEOUT_MS);
        return;
    }
    load_progress(e, false);
}

/* ---- requests ------------------------------------------------------------------- */

static size_t load_put_str(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return n;
}

static size_t load_put_u64(char *p, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        p[i] = tmp[n - 1 - i];
    return n;
}

static size_t load_put_i64(char *p, int64_t v)
{
    if (v >= 0)
        return load_put_u64(p, (uint64_t)v);
    p[0] = '-';
    return 1 + load_put_u64(p + 1, (uint64_t)0 - (uint64_t)v);
}

/* The request line of op (without any data block) into p; at most
 * LOAD_HDR_MAX bytes. */
static size_t load_format_request(char *p, const struct workload_op *op)
{
    const char *name = workload_cmd_name(op->cmd);
    size_t n = load_put_str(p, name, strlen(name));
    p[n++] = ' ';
    if (op->cmd == WORKLOAD_CMD_GAT) {
        n += load_put_i64(p + n, op->ttl);
        p[n++] = ' ';
    }
    n += load_put_str(p + n, op->key, op->key_len);
    if (workload_cmd_is_write(op->cmd)) {
        p[n++] = ' ';
        n += load_put_u64(p + n, op->flags);
        p[n++] = ' ';
        n += load_put_i64(p + n, op->ttl);
        p[n++] = ' ';
        n += load_put_u64(p + n, op->value_len);
    } else if (op->cmd == WORKLOAD_CMD_TOUCH) {
        p[n++] = ' ';
        n += load_put_i64(p + n, op->ttl);
    } else if (op->cmd == WORKLOAD_CMD_INCR || op->cmd == WORKLOAD_CMD_DECR) {
        p[n++] = ' ';
        n += load_put_u64(p + n, op->value_len);
    }
    if (op->noreply && !workload_cmd_is_read(op->cmd))
        n += load_put_str(p + n, " noreply", 8);
    n += load_put_str(p + n, "\r\n", 2);
    return n;
}

static unsigned load_value_slices(uint64_t value_len)
{
    return (unsigned)((value_len + LOAD_PATTERN_BYTES - 1) / LOAD_PATTERN_BYTES);
}

/* Room in the filling batch for op and, after it, one fence. */
static bool load_batch_room(const struct load_conn *c, const struct workload_op *op)
{
    const struct load_batch *b = &c->batch[c->fill];
    unsigned bufs = 2 + (workload_cmd_is_write(op->cmd) ? load_value_slices(op->value_len) + 1 : 0);
    return b->nbufs + bufs <= LOAD_BATCH_BUFS &&
           b->text_len + LOAD_HDR_MAX + LOAD_FENCE_LEN <= LOAD_BATCH_TEXT;
}

static void load_batch_add(struct load_batch *b, char *base, size_t len)
{
    b->bufs[b->nbufs++] = uv_buf_init(base, (unsigned)len);
}

/* The slot's index in the fifo ring. */
static unsigned load_slot_push(struct load_conn *c, enum workload_cmd cmd, enum load_slot_kind kind,
                               enum load_role role)
{
    unsigned cap = c->e->pipeline + 1, at = (c->head + c->count) % cap;
    struct load_slot *s = &c->fifo[at];
    s->cmd = (uint8_t)cmd;
    s->kind = (uint8_t)kind;
    s->role = (uint8_t)role;
    s->due = c->e->op_due;
    c->count++;
    return at;
}

/* The oldest op is answered: its latency, then its slot goes. */
static void load_slot_pop(struct load_conn *c)
{
    const struct load_slot *s = &c->fifo[c->head];
    if (s->kind == LOAD_SLOT_REPLY && s->role != LOAD_ROLE_FILL_SET) {
        uint64_t now = uv_hrtime();
        lhist_add(&c->e->res->latency[s->cmd], now > s->due ? now - s->due : 0);
    }
    c->head = (c->head + 1) % (c->e->pipeline + 1);
    c->count--;
}

static const struct load_slot *load_slot_front(const struct load_conn *c)
{
    return c->count ? &c->fifo[c->head] : NULL;
}

static const struct load_slot *load_slot_back(const struct load_conn *c)
{
    return c->count ? &c->fifo[(c->head + c->count - 1) % (c->e->pipeline + 1)] : NULL;
}

/* Which of e->digits a counter key's write takes. */
static unsigned load_digit_form(enum workload_cmd cmd)
{
    return cmd == WORKLOAD_CMD_PREPEND ? 1 : cmd == WORKLOAD_CMD_APPEND ? 2 : 0;
}

static const enum workload_cmd load_digit_cmds[3] = { WORKLOAD_CMD_SET, WORKLOAD_CMD_PREPEND,
                                                      WORKLOAD_CMD_APPEND };

static unsigned load_fill_bucket(const struct workload_op *op)
{
    return (unsigned)(keyfmt_hash(op->key, op->key_len) % LOAD_FILL_BUCKETS);
}

static struct load_phase_result *load_phase_cur(struct load_engine *e)
{
    return &e->res->phase_result[e->res->n_phase_results - 1];
}

/* role: LOAD_ROLE_FILL_SET for a fill (not a plan op); else the op's own. */
static void load_queue_op(struct load_conn *c, const struct workload_op *op, enum load_role role)
{
    struct load_engine *e = c->e;
    struct load_batch *b = &c->batch[c->fill];
    char *line = b->text + b->text_len;
    size_t n = load_format_request(line, op);
    b->text_len += n;
    load_batch_add(b, line, n);
    if (workload_cmd_is_write(op->cmd) && e->digits[0] && replay_value_numeric(e->src.replay, op)) {
        /* a value's last bytes are its form's last bytes, what comes before
         * them is the form's first byte repeated */
        char *form = e->digits[load_digit_form(op->cmd)];
        uint64_t left = op->value_len;
        for (; left > LOAD_PATTERN_BYTES; left -= LOAD_PATTERN_BYTES)
            load_batch_add(b, form, LOAD_PATTERN_BYTES);
        if (left)
            load_batch_add(b, form + LOAD_PATTERN_BYTES + 1 - left, (size_t)left);
        load_batch_add(b, load_crlf, 2);
    } else if (workload_cmd_is_write(op->cmd)) {
        for (uint64_t left = op->value_len; left;) {
            size_t take = left < LOAD_PATTERN_BYTES ? (size_t)left : LOAD_PATTERN_BYTES;
            load_batch_add(b, e->pattern, take);
            left -= take;
        }
        load_batch_add(b, load_crlf, 2);
    }
    if (role != LOAD_ROLE_FILL_SET && op->fill && c->fill_of && workload_cmd_is_read(op->cmd))
        role = LOAD_ROLE_FILL_READ;
    unsigned at = load_slot_push(
        c, op->cmd,
        op->noreply && !workload_cmd_is_read(op->cmd) ? LOAD_SLOT_SILENT : LOAD_SLOT_REPLY, role);
    if (role == LOAD_ROLE_FILL_SET) {
        e->res->fills++;
        load_phase_cur(e)->fills++;
        return;
    }
    if (role == LOAD_ROLE_FILL_READ) {
        struct workload_op *f = &c->fill_of[at];
        *f = *op;
        f->cmd = WORKLOAD_CMD_SET;
        f->fill = false;
        f->noreply = false;
        c->fill_wait[load_fill_bucket(op)]++;
    }
    e->res->ops++;
    e->res->ops_by_cmd[op->cmd]++;
    load_phase_cur(e)->ops++;
}

/* noreply requests are only known to be done once something behind them
 * is answered: an `mn` no-op, when nothing else will follow for now. */
static void load_queue_fence(struct load_conn *c)
{
    const struct load_slot *tail = load_slot_back(c);
    if (!tail || tail->kind != LOAD_SLOT_SILENT)
        return;
    struct load_batch *b = &c->batch[c->fill];
    char *p = b->text + b->text_len;
    memcpy(p, LOAD_FENCE, LOAD_FENCE_LEN);
    b->text_len += LOAD_FENCE_LEN;
    load_batch_add(b, p, LOAD_FENCE_LEN);
    load_slot_push(c, WORKLOAD_CMD_SET, LOAD_SLOT_FENCE, LOAD_ROLE_PLAIN);
    c->e->res->fences++;
}

/* ---- answers ------------------------------------------------------------------- */

static enum load_answer load_classify(const struct mc_line *l)
{
    switch (l->code) {
    case MC_CODE_STORED: return LOAD_ANS_STORED;
    case MC_CODE_NOT_STORED: return LOAD_ANS_NOT_STORED;
    case MC_CODE_EXISTS: return LOAD_ANS_EXISTS;
    case MC_CODE_NOT_FOUND: return LOAD_ANS_NOT_FOUND;
    case MC_CODE_DELETED: return LOAD_ANS_DELETED;
    case MC_CODE_TOUCHED: return LOAD_ANS_TOUCHED;
    case MC_CODE_NUMBER: return LOAD_ANS_NUMBER;
    case MC_CODE_SERVER_ERROR: return LOAD_ANS_SERVER_ERROR;
    case MC_CODE_CLIENT_ERROR: return LOAD_ANS_CLIENT_ERROR;
    case MC_CODE_ERROR: return LOAD_ANS_ERROR;
    default: return LOAD_ANS_OTHER;
    }
}

static bool load_answer_is_error(enum load_answer a)
{
    return a == LOAD_ANS_SERVER_ERROR || a == LOAD_ANS_CLIENT_ERROR || a == LOAD_ANS_ERROR;
}

/* Could cmd have been answered so? Anything else means the stream and
 * our FIFO are out of step, which must stop the run, not skew counts. */
static bool load_answer_fits(enum workload_cmd cmd, enum load_answer a)
{
    if (load_answer_is_error(a))
        return true;
    if (workload_cmd_is_write(cmd))
        return a == LOAD_ANS_STORED || a == LOAD_ANS_NOT_STORED || a == LOAD_ANS_EXISTS ||
               a == LOAD_ANS_NOT_FOUND;
    switch (cmd) {
    case WORKLOAD_CMD_DELETE: return a == LOAD_ANS_DELETED || a == LOAD_ANS_NOT_FOUND;
    case WORKLOAD_CMD_TOUCH: return a == LOAD_ANS_TOUCHED || a == LOAD_ANS_NOT_FOUND;
    case WORKLOAD_CMD_INCR:
    case WORKLOAD_CMD_DECR: return a == LOAD_ANS_NUMBER || a == LOAD_ANS_NOT_FOUND;
    default: return false;
    }
}

static void load_count(struct load_engine *e, enum workload_cmd cmd, enum load_answer a)
{
    e->res->answers[a]++;
    if (load_answer_is_error(a))
        e->res->errors++;
    if (workload_cmd_is_write(cmd))
        e->res->writes_answered++;
    e->done++;
}

/* One line of a get's answer: VALUE lines (data already skipped by the
 * parser) until END, or a single error line. */
static bool load_on_get_line(struct load_conn *c, const struct load_slot *s,
                             const struct mc_line *l)
{
    enum load_answer a;
    if (l->code == MC_CODE_VALUE) {
        c->in_get = true;
        c->get_hits++;
        return true;
    }
    if (l->code == MC_CODE_END)
        a = c->get_hits ? LOAD_ANS_HIT : LOAD_ANS_MISS;
    else if (mc_line_is_error(l))
        a = load_classify(l);
    else
        return false;
    c->in_get = false;
    c->get_hits = 0;
    load_count(c->e, (enum workload_cmd)s->cmd, a);
    if (a == LOAD_ANS_HIT || a == LOAD_ANS_MISS) {
        struct load_phase_result *ph = load_phase_cur(c->e);
        c->e->res->gets++;
        ph->gets++;
        c->e->res->hits += a == LOAD_ANS_HIT;
        ph->hits += a == LOAD_ANS_HIT;
        c->e->res->misses += a == LOAD_ANS_MISS;
        ph->misses += a == LOAD_ANS_MISS;
    }
    if (s->role == LOAD_ROLE_FILL_READ) {
        const struct workload_op *f = &c->fill_of[c->head];
        if (a == LOAD_ANS_MISS) /* its bucket waits on until the fill is queued */
            c->fills_due[(c->fills_head + c->fills_count++) % (c->e->pipeline + 1)] = *f;
        else
            c->fill_wait[load_fill_bucket(f)]--;
    }
    load_slot_pop(c);
    return true;
}

/* Lines while the oldest slot is a noreply op: the `mn` behind the run of
 * silent ops confirms them all; an out-of-memory error is the one answer
 * memcached still sends for a noreply write. */
static bool load_on_silent_line(struct load_conn *c, const struct mc_line *l)
{
    struct load_engine *e = c->e;
    const struct load_slot *s = load_slot_front(c);
    if (mc_reply_is_mine(&load_silent_request, l)) {
        load_count(e, (enum workload_cmd)s->cmd, load_classify(l));
        load_slot_pop(c);
        return true;
    }
    if (l->code != MC_CODE_MN)
        return false;
    while ((s = load_slot_front(c)) && s->kind == LOAD_SLOT_SILENT) {
        e->res->silent++;
        e->done++;
        load_slot_pop(c);
    }
    if (!s)
        return false;
    load_slot_pop(c); /* the fence */
    return true;
}

static bool load_on_line(struct load_conn *c, const struct mc_line *l)
{
    const struct load_slot *s = load_slot_front(c);
    if (!s)
        return false;
    if (s->kind == LOAD_SLOT_SILENT)
        return load_on_silent_line(c, l);
    if (s->kind == LOAD_SLOT_FENCE) {
        if (l->code != MC_CODE_MN)
            return false;
        load_slot_pop(c);
        return true;
    }
    if (workload_cmd_is_read((enum workload_cmd)s->cmd))
        return load_on_get_line(c, s, l);
    enum load_answer a = load_classify(l);
    if (!load_answer_fits((enum workload_cmd)s->cmd, a))
        return false;
    if (s->role == LOAD_ROLE_FILL_SET) {
        c->e->res->fills_stored += a == LOAD_ANS_STORED;
        load_phase_cur(c->e)->fills_stored += a == LOAD_ANS_STORED;
        c->e->res->errors += load_answer_is_error(a);
    } else {
        load_count(c->e, (enum workload_cmd)s->cmd, a);
    }
    load_slot_pop(c);
    return true;
}

/* Every complete answer line in p[0..n); false when the run failed. */
static bool load_feed(struct load_conn *c, const char *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        size_t used = 0;
        struct mc_line line;
        enum mc_result r = mc_resp_parse(&c->rp, p + off, n - off, &used, &line);
        off += used;
        if (r == MC_NEED_MORE)
            break;
        if (r == MC_ERROR) {
            load_fail(c->e, LOAD_E_PROTOCOL, "connection %u: a data block without its \\r\\n",
                      c->id);
            return false;
        }
        if (!load_on_line(c, &line)) {
            const struct load_slot *s = load_slot_front(c);
            load_fail(c->e, LOAD_E_PROTOCOL, "connection %u: answer '%.*s' to %s", c->id,
                      (int)(line.len > 80 ? 80 : line.len), line.text,
                      !s                           ? "nothing in flight"
                      : s->kind == LOAD_SLOT_FENCE ? "mn"
                                                   : workload_cmd_name((enum workload_cmd)s->cmd));
            return false;
        }
    }
    return true;
}

/* ---- connections ------------------------------------------------------------------ */

static void load_probe_feed(struct load_engine *e, const char *p, size_t n);

static void load_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct load_conn *c = h->data;
    (void)suggested;
    *buf = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void load_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    struct load_conn *c = stream->data;
    struct load_engine *e = c->e;
    if (e->state == LOAD_ST_DONE || nread == 0)
        return;
    if (nread < 0) {
        load_fail(e, LOAD_E_IO, "connection %u: %s with %u requests in flight", c->id,
                  nread == UV_EOF ? "closed by the server" : uv_strerror((int)nread), c->count);
        return;
    }
    if (e->state == LOAD_ST_PROBING && c->id == 0) {
        load_probe_feed(e, buf->base, (size_t)nread);
        return;
    }
    if (load_feed(c, buf->base, (size_t)nread))
        load_pump(e);
}

static void load_on_write(uv_write_t *req, int status)
{
    struct load_conn *c = req->data;
    struct load_engine *e = c->e;
    c->writing = false;
    if (e->state == LOAD_ST_DONE)
        return;
    if (status < 0) {
        load_fail(e, LOAD_E_IO, "connection %u: write failed: %s", c->id, uv_strerror(status));
        return;
    }
    load_pump(e);
}

/* Hands the filling batch to libuv and starts filling the other one. */
static void load_flush(struct load_conn *c)
{
    struct load_batch *b = &c->batch[c->fill];
    if (c->writing || b->nbufs == 0)
        return;
    c->writing = true;
    c->fill ^= 1;
    c->batch[c->fill].nbufs = 0;
    c->batch[c->fill].text_len = 0;
    b->req.data = c;
    int rc = uv_write(&b->req, &c->sock.stream, b->bufs, b->nbufs, load_on_write);
    if (rc) {
        c->writing = false;
        load_fail(c->e, LOAD_E_IO, "connection %u: write failed: %s", c->id, uv_strerror(rc));
    }
}

static void load_flush_all(struct load_engine *e)
{
    for (unsigned i = 0; i < e->n_conns && e->state != LOAD_ST_DONE; i++)
        load_flush(&e->conns[i]);
}

/* The connection op must go to: the key decides, so every op on one key
 * travels on one connection and memcached sees them in plan order (a get
 * after a set of the same key is a hit whatever the connection count). */
static struct load_conn *load_conn_for(struct load_engine *e, const struct workload_op *op)
{
    return &e->conns[keyfmt_hash(op->key, op->key_len) % e->n_conns];
}

static bool load_conn_room(const struct load_conn *c, const struct workload_op *op)
{
    return c->connected && c->count < c->e->pipeline && load_batch_room(c, op);
}

/* A plan op may go: room, no fill due first, and no fill read of its key
 * (bucket) still waiting for its answer or its fill. */
static bool load_conn_ready(const struct load_conn *c, const struct workload_op *op)
{
    return load_conn_room(c, op) &&
           (!c->fill_wait || (!c->fills_count && !c->fill_wait[load_fill_bucket(op)]));
}

/* ---- the target's own counters ------------------------------------------------------ */

/* The value of "STAT name N" in a `stats` answer, if there. */
static bool load_stat_value(const char *text, const char *name, uint64_t *v)
{
    char pat[64];
    snprintf(pat, sizeof pat, "STAT %s ", name);
    const char *p = strstr(text, pat);
    if (!p)
        return false;
    char *end;
    unsigned long long x = strtoull(p + strlen(pat), &end, 10);
    if (end == p + strlen(pat))
        return false;
    *v = x;
    return true;
}

/* One blocking `stats` on a fresh side connection to the target (every
 * wait bounded by LOAD_STATS_TIMEOUT_MS). 0, or -1 with why. */
static int load_server_sample(const struct sockaddr_storage *ss, struct load_server_counts *out,
                              char *why, size_t whylen)
{
    static const char cmd[] = "stats\r\n";
    char buf[32 * 1024];
    size_t len = 0;
    int rc = -1, fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = { .tv_sec = LOAD_STATS_TIMEOUT_MS / 1000,
                          .tv_usec = (LOAD_STATS_TIMEOUT_MS % 1000) * 1000 };
    socklen_t slen = addr_len((const struct sockaddr *)ss);
    if (fd < 0) {
        snprintf(why, whylen, "socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, (const struct sockaddr *)ss, slen) ||
        send(fd, cmd, sizeof cmd - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof cmd - 1)) {
        snprintf(why, whylen, "%s", strerror(errno));
        goto out;
    }
    for (;;) {
        ssize_t n = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (n <= 0) {
            snprintf(why, whylen, "%s", n == 0 ? "closed" : strerror(errno));
            goto out;
        }
        len += (size_t)n;
        buf[len] = '\0';
        if (len >= 5 && !memcmp(buf + len - 5, "END\r\n", 5))
            break;
        if (strstr(buf, "ERROR") || len == sizeof buf - 1) {
            snprintf(why, whylen, "answer '%.40s'", buf);
            goto out;
        }
    }
    memset(out, 0, sizeof *out);
    if (!load_stat_value(buf, "get_hits", &out->get_hits) ||
        !load_stat_value(buf, "get_misses", &out->get_misses)) {
        snprintf(why, whylen, "no get_hits/get_misses in the answer");
        goto out;
    }
    load_stat_value(buf, "cmd_set", &out->cmd_set);
    load_stat_value(buf, "evictions", &out->evictions);
    rc = 0;
out:
    close(fd);
    return rc;
}

static void load_server_sub(struct load_server_counts *acc, const struct load_server_counts *now,
                            const struct load_server_counts *then)
{
    acc->get_hits += now->get_hits - then->get_hits;
    acc->get_misses += now->get_misses - then->get_misses;
    acc->cmd_set += now->cmd_set - then->cmd_set;
    acc->evictions += now->evictions - then->evictions;
}

/* The current phase is over (everything answered): the server's deltas. */
static void load_phase_close(struct load_engine *e)
{
    struct load_server_counts now;
    char why[LOAD_NOTE_MAX - 64];
    if (!e->server_ok)
        return;
    if (load_server_sample(&e->cfg->target, &now, why, sizeof why)) {
        e->server_ok = false;
        snprintf(e->res->server_note, sizeof e->res->server_note,
                 "`stats` failed mid-run (%s): no server counts", why);
        return;
    }
    struct load_phase_result *ph = load_phase_cur(e);
    ph->has_server = true;
    load_server_sub(&ph->server, &now, &e->at_phase);
    e->at_phase = now;
}

static void load_phase_open(struct load_engine *e, const char *name)
{
    struct load_result *r = e->res;
    if (r->n_phase_results < LOAD_PHASES_MAX)
        snprintf(r->phase_result[r->n_phase_results++].name, WORKLOAD_NAME_MAX, "%s", name);
    else
        load_phase_cur(e)->merged = true;
}

/* Before the first op: the server's counters to subtract later. */
static void load_server_begin(struct load_engine *e)
{
    char why[LOAD_NOTE_MAX - 64];
    e->res->n_phase_results = 1;
    if (e->cfg->no_probe) {
        snprintf(e->res->server_note, sizeof e->res->server_note,
                 "not asked (--no-probe): no server counts");
        return;
    }
    if (load_server_sample(&e->cfg->target, &e->at_start, why, sizeof why)) {
        snprintf(e->res->server_note, sizeof e->res->server_note,
                 "the target refused `stats` (%s): no server counts", why);
        return;
    }
    e->server_ok = true;
    e->at_phase = e->at_start;
}

static void load_server_end(struct load_engine *e)
{
    load_phase_close(e);
    if (!e->server_ok)
        return;
    e->res->has_server = true;
    load_server_sub(&e->res->server, &e->at_phase, &e->at_start);
}

/* ---- pumping and barriers -------------------------------------------------------- */

static bool load_op_silent(const struct workload_op *op)
{
    return op->noreply && !workload_cmd_is_read(op->cmd);
}

static void load_barrier_begin(struct load_engine *e, enum load_barrier kind)
{
    e->barrier = kind;
    if (kind == LOAD_BAR_PHASE)
        memcpy(e->phase, e->item.phase, sizeof e->phase);
    e->sleep_ms = kind == LOAD_BAR_SLEEP ? e->item.sleep_ms : 0;
    e->state = LOAD_ST_BARRIER;
}

static void load_send(struct load_conn *c, const struct workload_op *op, enum load_role role)
{
    /* an answer right behind silent ops would be ambiguous: fence first */
    if (!load_op_silent(op))
        load_queue_fence(c);
    load_queue_op(c, op, role);
    if (c->count >= c->e->pipeline)
        load_queue_fence(c);
}

/* Fills due first, then deferred ops, in their order, wherever a window
 * has opened. */
static void load_drain(struct load_engine *e)
{
    for (unsigned i = 0; i < e->n_conns; i++) {
        struct load_conn *c = &e->conns[i];
        while (c->fills_count && load_conn_room(c, &c->fills_due[c->fills_head])) {
            const struct workload_op *f = &c->fills_due[c->fills_head];
            e->op_due = uv_hrtime();
            load_send(c, f, LOAD_ROLE_FILL_SET);
            c->fill_wait[load_fill_bucket(f)]--;
            c->fills_head = (c->fills_head + 1) % (e->pipeline + 1);
            c->fills_count--;
        }
        while (c->defer_count && load_conn_ready(c, &c->defer[c->defer_head])) {
            e->op_due = c->defer_due[c->defer_head];
            load_send(c, &c->defer[c->defer_head], LOAD_ROLE_PLAIN);
            c->defer_head = (c->defer_head + 1) % LOAD_DEFER_MAX;
            c->defer_count--;
        }
    }
}

/* The next plan item into e->item; false at a barrier, the end or an error. */
static bool load_fetch(struct load_engine *e)
{
    char err[LOAD_ERR_MAX];
    enum workload_next nx = load_source_next(&e->src, &e->item, err, sizeof err);
    if (nx == WORKLOAD_NEXT_ERROR) {
        load_fail(e, LOAD_E_SOURCE, "%s", err);
        return false;
    }
    if (nx == WORKLOAD_NEXT_END) {
        load_barrier_begin(e, LOAD_BAR_END);
        return false;
    }
    if (e->item.kind != WORKLOAD_ITEM_OP) {
        load_barrier_begin(e,
                           e->item.kind == WORKLOAD_ITEM_PHASE ? LOAD_BAR_PHASE : LOAD_BAR_SLEEP);
        return false;
    }
    /* the fingerprint follows plan order, not the order connections send */
    workload_op_digest(&e->fp, &e->item.op);
    e->have_item = true;
    return true;
}

static void load_on_rate(uv_poll_t *p, int status, int events)
{
    struct load_engine *e = p->data;
    uint64_t expirations;
    (void)status;
    (void)events;
    if (read(e->rate_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        load_fail(e, LOAD_E_IO, "rate timer: %s", strerror(errno));
    load_pump(e);
}

static void load_rate_arm(struct load_engine *e, uint64_t due)
{
    struct itimerspec its = { .it_value = { .tv_sec = (time_t)(due / 1000000000u),
                                            .tv_nsec = (long)(due % 1000000000u) } };
    if (timerfd_settime(e->rate_fd, TFD_TIMER_ABSTIME, &its, NULL))
        load_fail(e, LOAD_E_IO, "rate timer: %s", strerror(errno));
}

/* With a rate: true when the next op is due now (e->op_due set); else the
 * rate timer is armed for it. Without: due is now. */
static bool load_op_due(struct load_engine *e, uint64_t *now)
{
    if (!*now)
        *now = uv_hrtime();
    if (e->cfg->rate <= 0) {
        e->op_due = *now;
        return true;
    }
    uint64_t due = e->t_start + (uint64_t)((double)e->paced * 1e9 / e->cfg->rate);
    if (due > *now) {
        load_rate_arm(e, due);
        return false;
    }
    e->op_due = due;
    if (*now - due > 1000000)
        e->res->late++; /* more than 1 ms behind: the generator could not keep up */
    return true;
}

/* Queues ops while their connections have room, up to the next barrier. */
static void load_fill(struct load_engine *e)
{
    uint64_t now = 0;
    load_drain(e);
    while (e->state == LOAD_ST_RUNNING) {
        if (!e->have_item && !load_fetch(e))
            return;
        if (!e->have_due && !load_op_due(e, &now))
            return;
        e->have_due = true;
        struct load_conn *c = load_conn_for(e, &e->item.op);
        if (!c->defer_count && load_conn_ready(c, &e->item.op)) {
            load_send(c, &e->item.op, LOAD_ROLE_PLAIN);
        } else if (c->defer_count < LOAD_DEFER_MAX) {
            unsigned at = (c->defer_head + c->defer_count++) % LOAD_DEFER_MAX;
            c->defer[at] = e->item.op;
            c->defer_due[at] = e->op_due;
        } else {
            return;
        }
        e->paced++;
        e->have_item = false;
        e->have_due = false;
    }
}

static bool load_quiet(const struct load_engine *e)
{
    for (unsigned i = 0; i < e->n_conns; i++) {
        const struct load_conn *c = &e->conns[i];
        if (c->count || c->defer_count || c->fills_count || c->writing || c->batch[c->fill].nbufs)
            return false;
    }
    return true;
}

static void load_finish(struct load_engine *e)
{
    e->res->elapsed_ns = uv_hrtime() - e->t_start;
    load_server_end(e);
    load_progress(e, true);
    load_shutdown(e);
}

static void load_on_sleep(uv_timer_t *t)
{
    struct load_engine *e = t->data;
    if (e->state != LOAD_ST_SLEEPING)
        return;
    e->state = LOAD_ST_RUNNING;
    load_pump(e);
}

/* Every answer is in: act on the barrier. True when sending resumes now. */
static bool load_barrier_pass(struct load_engine *e)
{
    switch (e->barrier) {
    case LOAD_BAR_PHASE:
        e->res->phases++;
        load_phase_close(e);
        load_phase_open(e, e->phase);
        e->state = LOAD_ST_RUNNING;
        if (e->cfg->on_phase)
            e->cfg->on_phase(e->cfg->ud, e->phase);
        return true;
    case LOAD_BAR_SLEEP:
        e->state = LOAD_ST_SLEEPING;
        uv_timer_start(&e->sleep_timer, load_on_sleep, e->sleep_ms, 0);
        return false;
    case LOAD_BAR_END: load_finish(e); return false;
    }
    return false;
}

/* The one driver, called after every event that may free room: a loop,
 * not recursion, so a run of phase marks cannot grow the stack. */
static void load_pump(struct load_engine *e)
{
    for (;;) {
        load_fill(e);
        /* at a barrier nothing follows a silent tail: confirm it with mn,
         * once the connection's deferred ops are out */
        for (unsigned i = 0; i < e->n_conns && e->state == LOAD_ST_BARRIER; i++)
            if (!e->conns[i].defer_count)
                load_queue_fence(&e->conns[i]);
        load_flush_all(e);
        if (e->state != LOAD_ST_BARRIER || !load_quiet(e))
            return;
        if (!load_barrier_pass(e))
            return;
    }
}

/* ---- the settings probe ----------------------------------------------------------- */

static bool load_needs_ladder(const struct load_engine *e)
{
    return e->cfg->source == LOAD_SRC_WORKLOAD && workload_needs_ladder(e->cfg->workload);
}

static void load_probe_done(struct load_engine *e)
{
    const struct slab_ladder *ladder = e->cfg->ladder;
    char err[LOAD_ERR_MAX] = "";
    if (e->sample && e->sample->has_version)
        snprintf(e->res->server_version, sizeof e->res->server_version, "%s", e->sample->version);
    if (!ladder && load_needs_ladder(e)) {
        struct slab_settings s;
        if (slab_settings_from_stats(&s, stats_sample_setting_lookup, e->sample, err, sizeof err) ||
            slab_ladder_build(&s, &e->ladder, err, sizeof err) != SLAB_OK) {
            load_fail(e, LOAD_E_SETTINGS, "the server's slab settings: %s", err);
            return;
        }
        ladder = &e->ladder;
    }
    if (load_source_open_plan(&e->src, e->cfg, ladder, e->res->seed, err, sizeof err)) {
        load_fail(e, LOAD_E_SOURCE, "%s", err);
        return;
    }
    e->state = LOAD_ST_RUNNING;
    e->t_start = e->t_progress = uv_hrtime();
    load_pump(e);
}

static void load_probe_feed(struct load_engine *e, const char *p, size_t n)
{
    size_t used = 0;
    enum stats_parse_result r = stats_parse_batch_feed(&e->probe, p, n, &used);
    if (r == STATS_PARSE_NEED_MORE)
        return;
    if (r == STATS_PARSE_ERROR || used < n) {
        load_fail(e, LOAD_E_SETTINGS, "bad answer to `stats settings`: %s",
                  stats_parse_error_str(e->probe.error));
        return;
    }
    load_probe_done(e);
}

static void load_on_probe_write(uv_write_t *req, int status)
{
    struct load_engine *e = req->data;
    if (status < 0 && e->state != LOAD_ST_DONE)
        load_fail(e, LOAD_E_IO, "connection 0: write failed: %s", uv_strerror(status));
}

/* `stats settings` and `version` on connection 0 before any op: the ladder
 * must come from the server the ops go to. */
static void load_probe_begin(struct load_engine *e)
{
    unsigned which = STATS_R_SETTINGS | STATS_R_VERSION;
    e->state = LOAD_ST_PROBING;
    e->sample = malloc(sizeof *e->sample);
    if (!e->sample) {
        load_fail(e, LOAD_E_MEMORY, "out of memory");
        return;
    }
    stats_sample_init(e->sample);
    stats_parse_batch_begin(&e->probe, e->sample, which);
    size_t n = stats_parse_batch_command(which, e->probe_cmd, sizeof e->probe_cmd);
    uv_buf_t b = uv_buf_init(e->probe_cmd, (unsigned)n);
    e->probe_req.data = e;
    int rc = uv_write(&e->probe_req, &e->conns[0].sock.stream, &b, 1, load_on_probe_write);
    if (rc)
        load_fail(e, LOAD_E_IO, "connection 0: write failed: %s", uv_strerror(rc));
}

static void load_on_connect(uv_connect_t *req, int status)
{
    struct load_conn *c = req->data;
    struct load_engine *e = c->e;
    if (e->state == LOAD_ST_DONE)
        return;
    if (status < 0) {
        load_fail(e, LOAD_E_CONNECT, "cannot connect: %s", uv_strerror(status));
        return;
    }
    c->connected = true;
    int rc = uv_read_start(&c->sock.stream, load_on_alloc, load_on_read);
    if (rc) {
        load_fail(e, LOAD_E_IO, "connection %u: %s", c->id, uv_strerror(rc));
        return;
    }
    if (++e->n_connected < e->n_conns)
        return;
    if (e->cfg->no_probe && !load_needs_ladder(e))
        load_probe_done(e); /* nothing to learn from the server first */
    else
        load_probe_begin(e);
}

/* ---- the run ------------------------------------------------------------------------ */

static void load_shutdown(struct load_engine *e)
{
    e->state = LOAD_ST_DONE;
    if (!e->handles_open)
        return;
    e->handles_open = false;
    for (unsigned i = 0; i < e->n_conns; i++)
        uv_close(&e->conns[i].sock.handle, NULL);
    uv_close((uv_handle_t *)&e->tick, NULL);
    uv_close((uv_handle_t *)&e->sleep_timer, NULL);
    if (e->rate_fd >= 0)
        uv_close((uv_handle_t *)&e->rate_poll, NULL);
}

static void load_start(struct load_engine *e)
{
    uv_timer_init(&e->loop, &e->tick);
    uv_timer_init(&e->loop, &e->sleep_timer);
    e->tick.data = e->sleep_timer.data = e;
    if (e->rate_fd >= 0) {
        uv_poll_init(&e->loop, &e->rate_poll, e->rate_fd);
        e->rate_poll.data = e;
        uv_poll_start(&e->rate_poll, UV_READABLE, load_on_rate);
    }
    for (unsigned i = 0; i < e->n_conns; i++) {
        struct load_conn *c = &e->conns[i];
        dial_init(&e->loop, &c->sock, e->cfg->target.ss_family);
        c->sock.handle.data = c->connect_req.data = c;
    }
    e->handles_open = true;
    e->t_begin = uv_hrtime();
    uv_timer_start(&e->tick, load_on_tick, 50, 50);
    for (unsigned i = 0; i < e->n_conns && e->state != LOAD_ST_DONE; i++) {
        struct load_conn *c = &e->conns[i];
        int rc = dial_connect(&c->connect_req, &c->sock, (const struct sockaddr *)&e->cfg->target,
                              load_on_connect);
        if (rc)
            load_fail(e, LOAD_E_CONNECT, "cannot connect: %s", uv_strerror(rc));
    }
}

static int load_alloc(struct load_engine *e)
{
    e->rate_fd = -1;
    if (e->cfg->rate > 0 &&
        (e->rate_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) < 0)
        return -1;
    e->conns = calloc(e->n_conns, sizeof *e->conns);
    e->pattern = malloc(LOAD_PATTERN_BYTES);
    if (!e->conns || !e->pattern)
        return -1;
    for (unsigned f = 0; f < 3 && replay_has_counters(e->src.replay); f++) {
        if (!(e->digits[f] = malloc(LOAD_PATTERN_BYTES + 1)))
            return -1;
        replay_value_digits(load_digit_cmds[f], e->digits[f], LOAD_PATTERN_BYTES + 1);
    }
    for (unsigned i = 0; i < e->n_conns; i++) {
        struct load_conn *c = &e->conns[i];
        c->e = e;
        c->id = i;
        mc_resp_init(&c->rp);
        c->fifo = calloc(e->pipeline + 1, sizeof *c->fifo);
        c->defer = calloc(LOAD_DEFER_MAX, sizeof *c->defer);
        c->defer_due = calloc(LOAD_DEFER_MAX, sizeof *c->defer_due);
        if (!c->fifo || !c->defer || !c->defer_due)
            return -1;
        if (!e->can_fill)
            continue;
        c->fill_of = calloc(e->pipeline + 1, sizeof *c->fill_of);
        c->fills_due = calloc(e->pipeline + 1, sizeof *c->fills_due);
        c->fill_wait = calloc(LOAD_FILL_BUCKETS, sizeof *c->fill_wait);
        if (!c->fill_of || !c->fills_due || !c->fill_wait)
            return -1;
    }
    /* printable and not all alike, so a value read back is recognisable */
    static const char alphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
    for (uint32_t i = 0; i < LOAD_PATTERN_BYTES; i++)
        e->pattern[i] = alphabet[(i * 2654435761u) >> 26];
    return 0;
}

static void load_free(struct load_engine *e)
{
    for (unsigned i = 0; e->conns && i < e->n_conns; i++) {
        free(e->conns[i].fifo);
        free(e->conns[i].defer);
        free(e->conns[i].defer_due);
        free(e->conns[i].fill_of);
        free(e->conns[i].fills_due);
        free(e->conns[i].fill_wait);
    }
    free(e->conns);
    free(e->pattern);
    for (unsigned f = 0; f < 3; f++)
        free(e->digits[f]);
    if (e->rate_fd >= 0)
        close(e->rate_fd);
    if (e->sample) {
        stats_sample_fini(e->sample);
        free(e->sample);
    }
    free(e);
}

int load_run(const struct load_config *cfg, struct load_result *out)
{
    memset(out, 0, sizeof *out);
    load_resolve(cfg, out);
    if (load_check_config(cfg, out))
        return -1;
    struct load_engine *e = calloc(1, sizeof *e);
    if (!e) {
        out->status = LOAD_E_MEMORY;
        snprintf(out->error, sizeof out->error, "out of memory");
        return -1;
    }
    e->cfg = cfg;
    e->res = out;
    e->n_conns = out->connections;
    e->pipeline = out->pipeline;
    sha256_init(&e->fp);
    if (load_source_open_replay(&e->src, cfg, out->error, sizeof out->error)) {
        out->status = LOAD_E_SOURCE;
        goto out;
    }
    e->total = load_source_total(&e->src, cfg);
    e->can_fill = cfg->source == LOAD_SRC_WORKLOAD ? workload_has_fills(cfg->workload)
                                                   : replay_can_fill(e->src.replay);
    if (load_alloc(e) || uv_loop_init(&e->loop)) {
        out->status = LOAD_E_MEMORY;
        snprintf(out->error, sizeof out->error, "out of memory");
        goto out_source;
    }
    load_server_begin(e);
    load_start(e);
    uv_run(&e->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&e->loop) == UV_EBUSY) {
        uv_run(&e->loop, UV_RUN_DEFAULT);
        uv_loop_close(&e->loop);
    }
    if (out->status != LOAD_OK && e->t_start)
        out->elapsed_ns = uv_hrtime() - e->t_start;
out_source:
    load_source_close(&e->src, out);
    load_fingerprint_final(&e->fp, out);
out:
    load_free(e);
    return out->status == LOAD_OK ? 0 : -1;
}
