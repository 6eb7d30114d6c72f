/* shadow: memcacheds with candidate settings fed a copy of the traffic
 * (see shadow.h). Every request is appended whole to the shadow's output
 * buffer or dropped whole; one small FIFO entry per request says what its
 * one-line answer is counted as. */
#include "server/shadow.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/keyfmt.h"
#include "core/sample.h"

enum inflight_kind { IF_READ, IF_WRITE, IF_FILL, IF_OTHER };

struct shadow_inflight {
    uint8_t kind;
    bool primary_hit; /* IF_READ: the primary had the key (with a known length) */
    bool b64;
    uint32_t flags;
    int64_t value_len;
};

enum timer_what { T_NONE, T_CONNECT, T_RESTART, T_KILL };

#define SHADOW_CONNECT_RETRY_MS 20
#define SHADOW_STOP_MS 3000
#define SHADOW_ARGS_MAX 96

/* --- pure parts ------------------------------------------------------------ */

static const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

int shadow_spec_parse(struct shadow_spec *s, const char *value, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->kind = SHADOW_STARTED;
    s->sample = 1;
    const char *p = skip_blanks(value ? value : "");
    size_t len = strlen(p);
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    if (len >= sizeof s->text) {
        snprintf(err, errlen, "--shadow '%s': longer than %zu bytes", p, sizeof s->text - 1);
        return -1;
    }
    memcpy(s->text, p, len);
    s->text[len] = '\0';
    const char *f = s->text;
    if (f[0] == '1' && f[1] == '/') {
        char *end;
        errno = 0;
        unsigned long n = strtoul(f + 2, &end, 10);
        if (end == f + 2 || errno || (*end && *end != ' ' && *end != '\t') || n < 1 ||
            n > SAMPLE_MAX_N) {
            snprintf(err, errlen,
                     "--shadow '%s': a sample is 1/N with N from 1 to %u, then the flags", s->text,
                     SAMPLE_MAX_N);
            return -1;
        }
        s->sample = (uint32_t)n;
        f = skip_blanks(end);
    }
    if (f[0] && f[0] != '-') {
        snprintf(err, errlen,
                 "--shadow '%s': expected memcached flags (\"-f 1.08\", \"-o slab_automove=2\"), "
                 "optionally after a sample \"1/N \"",
                 s->text);
        return -1;
    }
    /* flags slabtap sets itself */
    static const char *const own[] = {
        "-s",     "-p",       "-l",         "-U",      "-a", "-d", "--unix-socket",
        "--port", "--listen", "--udp-port", "--daemon"
    };
    char copy[SHADOW_FLAGS_MAX];
    snprintf(copy, sizeof copy, "%s", f);
    for (char *save = NULL, *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
        for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
            size_t ol = strlen(own[i]);
            if (!strncmp(t, own[i], ol) &&
                (t[ol] == '\0' || t[ol] == '=' || (ol == 2 && t[1] != '-'))) {
                snprintf(err, errlen,
                         "--shadow '%s': %s is slabtap's to set (the shadow runs on a "
                         "private unix socket)",
                         s->text, own[i]);
                return -1;
            }
        }
    snprintf(s->flags, sizeof s->flags, "%s", f);
    return 0;
}

enum shadow_answer shadow_answer_classify(const char *line, size_t len)
{
    size_t w = 0;
    while (w < len && line[w] != ' ')
        w++;
#define IS(word) (w == sizeof(word) - 1 && !memcmp(line, word, w))
    if (IS("HD") || IS("STORED") || IS("DELETED") || IS("TOUCHED") || IS("OK"))
        return SHADOW_A_HIT;
    if (IS("EN"))
        return SHADOW_A_MISS;
    if (IS("NS") || IS("EX") || IS("NF") || IS("NOT_STORED") || IS("EXISTS") || IS("NOT_FOUND"))
        return SHADOW_A_NOT_STORED;
    if (IS("ERROR") || IS("CLIENT_ERROR") || IS("SERVER_ERROR"))
        return SHADOW_A_ERROR;
#undef IS
    return SHADOW_A_OTHER;
}

/* FLAGS's -m (-m N, -mN, --memory-limit=N, --memory-limit N): 0 when none. */
static uint64_t flags_memory(const char *flags)
{
    char copy[SHADOW_FLAGS_MAX];
    snprintf(copy, sizeof copy, "%s", flags);
    uint64_t m = 0;
    bool next = false;
    for (char *save = NULL, *t = strtok_r(copy, " \t", &save); t;
         t = strtok_r(NULL, " \t", &save)) {
        const char *v = NULL;
        if (next)
            v = t;
        next = false;
        if (!strcmp(t, "-m") || !strcmp(t, "--memory-limit"))
            next = true;
        else if (!strncmp(t, "--memory-limit=", 15))
            v = t + 15;
        else if (!strncmp(t, "-m", 2) && isdigit((unsigned char)t[2]))
            v = t + 2;
        if (v)
            m = strtoull(v, NULL, 10);
    }
    return m;
}

int shadow_memory(const struct shadow_spec *s, uint64_t primary_mb, unsigned classes_in_use,
                  uint64_t *memory_mb, char *err, size_t errlen)
{
    uint64_t base = s->kind == SHADOW_STARTED ? flags_memory(s->flags) : 0;
    if (!base)
        base = primary_mb ? primary_mb : 64;
    uint32_t n = s->sample > 1 ? s->sample : 1;
    uint64_t mb = (base + n - 1) / n;
    if (!mb)
        mb = 1;
    *memory_mb = mb;
    if (n <= 1 || s->kind != SHADOW_STARTED)
        return 0;
    uint64_t need = (uint64_t)SHADOW_MIN_PAGES_PER_CLASS * classes_in_use;
    if (need < SHADOW_MIN_PAGES)
        need = SHADOW_MIN_PAGES;
    if (mb >= need)
        return 0;
    uint64_t most = base / need; /* the largest N whose scaled memory is enough */
    char advice[96];
    if (most >= 2)
        snprintf(advice, sizeof advice,
                 "give a larger sample (at most 1/%" PRIu64 ") or more memory", most);
    else
        snprintf(advice, sizeof advice, "no sample fits: give more memory (-m)");
    snprintf(err, errlen,
             "--shadow '%s': 1/%u of %" PRIu64 " MB is %" PRIu64 " page%s for %u slab class%s in "
             "use (at least %" PRIu64 " needed); %s",
             s->text, n, base, mb, mb == 1 ? "" : "s", classes_in_use,
             classes_in_use == 1 ? "" : "es", need, advice);
    return -1;
}

/* --- handles and events ------------------------------------------------------ */

static void set_closed_one(struct shadow_set *set);

static void sh_event(struct shadow *sh, const char *event, const char *detail)
{
    struct shadow_set *set = sh->set;
    if (set->hooks.on_event)
        set->hooks.on_event(set->hooks.ud, sh, event, detail ? detail : "");
}

static void sh_arm(struct shadow *sh, int what, uint64_t ms);
static void sh_connect(struct shadow *sh);
static void sh_spawn(struct shadow *sh);

/* The requests queued and in flight are lost with the connection. */
static void sh_lose_queue(struct shadow *sh)
{
    sh->c.dropped += sh->inflight;
    sh->inflight = 0;
    sh->fifo_head = 0;
    buf_reset(&sh->out);
    if (!sh->writing)
        buf_reset(&sh->sending);
    sh->queued_bytes = sh->out.len + (sh->writing ? sh->sending.len : 0);
    sh->rlen = 0;
}

static void on_stream_closed(uv_handle_t *h)
{
    struct shadow *sh = h->data;
    struct shadow_set *set = sh->set;
    sh->stream_open = false;
    set_closed_one(set);
    if (set->closing)
        return;
    /* a new connection: at once while the child runs (it may be starting),
     * after the backoff for an upstream */
    if (sh->spec.kind == SHADOW_UPSTREAM)
        sh_arm(sh, T_CONNECT, sh->backoff_ms);
    else if (sh->proc_running)
        sh_arm(sh, T_CONNECT, SHADOW_CONNECT_RETRY_MS * 5);
}

static void sh_disconnect(struct shadow *sh, const char *why)
{
    bool was_up = sh->state == SHADOW_S_UP;
    if (sh->stream_open && !uv_is_closing(&sh->stream.handle)) {
        uv_read_stop(&sh->stream.stream);
        uv_close(&sh->stream.handle, on_stream_closed);
    }
    sh_lose_queue(sh);
    if (sh->state != SHADOW_S_CLOSED && sh->state != SHADOW_S_TOO_SMALL)
        sh->state = sh->spec.kind == SHADOW_STARTED && sh->proc_running && !was_up
                        ? SHADOW_S_STARTING
                        : SHADOW_S_DOWN;
    if (was_up) {
        sh->disconnects++;
        /* a started one's exit says more, on its own line */
        log_throttled(&sh->lost_throttle,
                      sh->spec.kind == SHADOW_STARTED ? LOG_LEVEL_INFO : LOG_LEVEL_WARN, NULL,
                      "shadow '%s': connection lost (%s)", sh->name, why);
        sh_event(sh, "lost", why);
        if (sh->spec.kind == SHADOW_UPSTREAM && sh->backoff_ms < SHADOW_RESTART_MIN_MS)
            sh->backoff_ms = SHADOW_RESTART_MIN_MS;
    }
}

/* --- output ------------------------------------------------------------------- */

static void on_flusher(uv_check_t *c);
static void on_batch(uv_timer_t *t);

/* sh has requests waiting: written at once past SHADOW_BATCH_BYTES, else
 * when the batch timer fires */
static void sh_want_flush(struct shadow *sh)
{
    struct shadow_set *set = sh->set;
    if (set->closing)
        return;
    if (sh->out.len >= SHADOW_BATCH_BYTES)
        uv_check_start(&set->flusher, on_flusher);
    else if (!uv_is_active((uv_handle_t *)&set->batch))
        uv_timer_start(&set->batch, on_batch, SHADOW_BATCH_MS, 0);
}

static void on_write(uv_write_t *req, int status)
{
    struct shadow *sh = req->data;
    sh->writing = false;
    buf_reset(&sh->sending);
    sh->queued_bytes = sh->out.len;
    if (status < 0) {
        if (status != UV_ECANCELED && !sh->set->closing)
            sh_disconnect(sh, uv_strerror(status));
        return;
    }
    if (sh->out.len)
        sh_want_flush(sh);
}

static void sh_flush(struct shadow *sh)
{
    if (sh->writing || !sh->out.len || sh->state != SHADOW_S_UP)
        return;
    struct buf t = sh->sending;
    sh->sending = sh->out;
    sh->out = t;
    buf_reset(&sh->out);
    uv_buf_t b = uv_buf_init(sh->sending.data, (unsigned)sh->sending.len);
    sh->write_req.data = sh;
    int e = uv_write(&sh->write_req, &sh->stream.stream, &b, 1, on_write);
    if (e) {
        buf_reset(&sh->sending);
        sh_disconnect(sh, uv_strerror(e));
        return;
    }
    sh->writing = true;
}

static void flush_set(struct shadow_set *set)
{
    bool more = false;
    for (unsigned i = 0; i < set->n; i++) {
        sh_flush(&set->sh[i]);
        more |= set->sh[i].out.len > 0 && !set->sh[i].writing && set->sh[i].state == SHADOW_S_UP;
    }
    if (!more)
        uv_check_stop(&set->flusher);
}

static void on_flusher(uv_check_t *c)
{
    flush_set(c->data);
}

static void on_batch(uv_timer_t *t)
{
    flush_set(t->data);
}

/* Room for one request of len bytes (and its FIFO entry, and a fill's if
 * any may follow): false (counted dropped) when the shadow is not up, the
 * queue would pass its bound, or too many wait for answers. */
static bool sh_room(struct shadow *sh, size_t len)
{
    if (sh->state != SHADOW_S_UP || sh->inflight >= SHADOW_INFLIGHT_MAX ||
        sh->out.len + (sh->writing ? sh->sending.len : 0) + len > sh->set->queue_bytes ||
        buf_reserve(&sh->out, len) < 0) {
        sh->out.failed = false;
        sh->c.dropped++;
        return false;
    }
    return true;
}

static void sh_push(struct shadow *sh, const struct shadow_inflight *e)
{
    size_t at = (sh->fifo_head + sh->inflight) % SHADOW_INFLIGHT_MAX;
    sh->fifo[at] = *e;
    sh->inflight++;
    sh->queued_bytes = sh->out.len + (sh->writing ? sh->sending.len : 0);
    sh_want_flush(sh);
}

static void append_filler(struct buf *b, int64_t n)
{
    if (n <= 0)
        return;
    memset(b->data + b->len, '0', (size_t)n);
    b->len += (size_t)n;
    b->data[b->len] = '\0';
}

/* `ms KEY LEN [b] [F] [T] [M]` and LEN filler bytes */
static void sh_send_set(struct shadow *sh, const char *key, size_t klen, bool b64, int64_t len,
                        uint32_t flags, bool has_exptime, int64_t exptime, char mode,
                        enum inflight_kind kind)
{
    char head[MC_KEY_MAX + 128];
    if (len < 0)
        len = 0;
    int n = snprintf(head, sizeof head, "ms %.*s %" PRId64 "%s F%" PRIu32, (int)klen, key, len,
                     b64 ? " b" : "", flags);
    if (has_exptime && exptime)
        n += snprintf(head + n, sizeof head - (size_t)n, " T%" PRId64, exptime);
    if (mode && mode != 'S' && mode != 's')
        n += snprintf(head + n, sizeof head - (size_t)n, " M%c", mode);
    n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
    if (!sh_room(sh, (size_t)n + (size_t)len + 2))
        return;
    buf_append(&sh->out, head, (size_t)n);
    append_filler(&sh->out, len);
    buf_append(&sh->out, "\r\n", 2);
    struct shadow_inflight e = { .kind = (uint8_t)kind, .b64 = b64 };
    sh_push(sh, &e);
    if (kind == IF_FILL)
        sh->c.fills++;
}

static void sh_send_line(struct shadow *sh, const char *line, size_t len,
                         const struct shadow_inflight *e)
{
    if (!sh_room(sh, len))
        return;
    buf_append(&sh->out, line, len);
    sh_push(sh, e);
}

static bool sh_keeps(const struct shadow *sh, uint64_t hash)
{
    return sh->spec.sample <= 1 || sample_keep(hash, sh->spec.sample);
}

/* --- the mirror --------------------------------------------------------------- */

static bool answer_is(const char *a, size_t len, const char *word)
{
    size_t w = strlen(word);
    return len >= w && !memcmp(a, word, w) && (len == w || a[w] == ' ');
}

static void shadow_write(struct shadow_set *set, const struct mc_request *r, const char *answer,
                         size_t answer_len)
{
    if (r->bad_data || r->value_len < 0)
        return;
    bool stored = answer_is(answer, answer_len, "STORED") || answer_is(answer, answer_len, "HD") ||
                  answer_is(answer, answer_len, "quiet");
    char mode = 'S';
    bool cas = r->cmd == MC_CMD_CAS;
    switch (r->cmd) {
    case MC_CMD_ADD: mode = 'E'; break;
    case MC_CMD_REPLACE: mode = 'R'; break;
    case MC_CMD_APPEND: mode = 'A'; break;
    case MC_CMD_PREPEND: mode = 'P'; break;
    case MC_CMD_MS: mode = r->ms_mode ? r->ms_mode : 'S'; break;
    default: break;
    }
    /* ms with a C flag is not told apart by the parser: an ms the primary
     * refused with EX is a cas that failed, and not mirrored */
    if (r->cmd == MC_CMD_MS && answer_is(answer, answer_len, "EX"))
        return;
    if (cas && !stored)
        return;
    uint64_t h = keyfmt_hash(r->key, r->key_len_raw);
    for (unsigned i = 0; i < set->n; i++) {
        struct shadow *sh = &set->sh[i];
        if (!sh_keeps(sh, h))
            continue;
        sh_send_set(sh, r->key, r->key_len_raw, r->key_b64, r->value_len, r->flags, true,
                    r->exptime, mode, IF_WRITE);
    }
}

void shadow_read(struct shadow_set *set, const char *key, size_t key_len, bool b64, bool hit,
                 int64_t value_len, uint32_t flags, bool has_exptime, int64_t exptime)
{
    if (!shadow_active(set) || !key_len || key_len > MC_KEY_MAX)
        return;
    uint64_t h = keyfmt_hash(key, key_len);
    char line[MC_KEY_MAX + 64];
    int n = snprintf(line, sizeof line, "mg %.*s k%s", (int)key_len, key, b64 ? " b" : "");
    if (has_exptime)
        n += snprintf(line + n, sizeof line - (size_t)n, " T%" PRId64, exptime);
    n += snprintf(line + n, sizeof line - (size_t)n, "\r\n");
    struct shadow_inflight e = { .kind = IF_READ,
                                 .primary_hit = hit && value_len >= 0,
                                 .b64 = b64,
                                 .flags = flags,
                                 .value_len = value_len };
    for (unsigned i = 0; i < set->n; i++) {
        struct shadow *sh = &set->sh[i];
        if (sh_keeps(sh, h))
            sh_send_line(sh, line, (size_t)n, &e);
    }
}

static void shadow_other(struct shadow_set *set, const struct mc_request *r)
{
    char line[MC_KEY_MAX + 64];
    const char *b = r->key_b64 ? " b" : "";
    int kl = r->key_len_raw;
    int n;
    switch (r->cmd) {
    case MC_CMD_DELETE:
    case MC_CMD_MD: n = snprintf(line, sizeof line, "md %.*s%s\r\n", kl, r->key, b); break;
    case MC_CMD_TOUCH:
        n = snprintf(line, sizeof line, "mg %.*s%s T%" PRId64 "\r\n", kl, r->key, b, r->exptime);
        break;
    case MC_CMD_INCR:
    case MC_CMD_MA: n = snprintf(line, sizeof line, "ma %.*s%s\r\n", kl, r->key, b); break;
    case MC_CMD_DECR: n = snprintf(line, sizeof line, "ma %.*s%s MD\r\n", kl, r->key, b); break;
    case MC_CMD_FLUSH_ALL:
        n = r->exptime ? snprintf(line, sizeof line, "flush_all %" PRId64 "\r\n", r->exptime)
                       : snprintf(line, sizeof line, "flush_all\r\n");
        break;
    default: return;
    }
    if (r->cmd != MC_CMD_FLUSH_ALL && (!r->key_len_raw || r->key_len_raw > MC_KEY_MAX))
        return;
    uint64_t h = r->cmd == MC_CMD_FLUSH_ALL ? 0 : keyfmt_hash(r->key, r->key_len_raw);
    struct shadow_inflight e = { .kind = IF_OTHER };
    for (unsigned i = 0; i < set->n; i++) {
        struct shadow *sh = &set->sh[i];
        if (r->cmd == MC_CMD_FLUSH_ALL || sh_keeps(sh, h))
            sh_send_line(sh, line, (size_t)n, &e);
    }
}

void shadow_answered(struct shadow_set *set, const struct mc_request *r, const char *answer,
                     size_t answer_len)
{
    if (!shadow_active(set))
        return;
    if (answer_len == SIZE_MAX)
        answer_len = strlen(answer);
    /* memcached refused it, or never saw it: nothing to mirror */
    static const char *const refused[] = { "ERROR", "CLIENT_ERROR", "SERVER_ERROR",
                                           "upstream_error", "no_answer" };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (answer_is(answer, answer_len, refused[i]))
            return;
    if (r->is_write)
        shadow_write(set, r, answer, answer_len);
    else
        shadow_other(set, r);
}

/* --- answers ----------------------------------------------------------------- */

/* The k token of an EN line: the key (as the mg sent it). */
static bool en_key(const char *line, size_t len, const char **key, size_t *klen)
{
    for (size_t i = 2; i < len;) {
        while (i < len && line[i] == ' ')
            i++;
        size_t start = i;
        while (i < len && line[i] != ' ')
            i++;
        if (i > start + 1 && line[start] == 'k') {
            *key = line + start + 1;
            *klen = i - start - 1;
            return true;
        }
    }
    return false;
}

static void sh_answer(struct shadow *sh, const char *line, size_t len)
{
    if (!sh->inflight) { /* bytes no request asked for: out of step */
        sh_disconnect(sh, "an answer no request asked for");
        return;
    }
    struct shadow_inflight e = sh->fifo[sh->fifo_head];
    sh->fifo_head = (sh->fifo_head + 1) % SHADOW_INFLIGHT_MAX;
    sh->inflight--;
    enum shadow_answer a = shadow_answer_classify(line, len);
    bool err = a == SHADOW_A_ERROR || a == SHADOW_A_OTHER;
    sh->c.errors += err;
    switch (e.kind) {
    case IF_READ:
        sh->c.reads++;
        if (a == SHADOW_A_HIT) {
            sh->c.hits++;
        } else if (a == SHADOW_A_MISS) {
            sh->c.misses++;
            const char *key;
            size_t klen;
            if (e.primary_hit && en_key(line, len, &key, &klen))
                sh_send_set(sh, key, klen, e.b64, e.value_len, e.flags, false, 0, 'S', IF_FILL);
        }
        break;
    case IF_WRITE:
    case IF_FILL:
        sh->c.writes++;
        sh->c.stored += a == SHADOW_A_HIT;
        sh->c.not_stored += a == SHADOW_A_NOT_STORED;
        break;
    default: sh->c.others += !err; break;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct shadow *sh = h->data;
    (void)suggested;
    *b = uv_buf_init(sh->rbuf + sh->rlen, (unsigned)(sizeof sh->rbuf - sh->rlen));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct shadow *sh = s->data;
    (void)b;
    if (nread < 0) {
        sh_disconnect(sh, nread == UV_EOF ? "memcached closed the connection"
                                          : uv_strerror((int)nread));
        return;
    }
    sh->rlen += (size_t)nread;
    size_t at = 0;
    for (;;) {
        char *nl = memchr(sh->rbuf + at, '\n', sh->rlen - at);
        if (!nl)
            break;
        size_t len = (size_t)(nl - (sh->rbuf + at));
        if (len && sh->rbuf[at + len - 1] == '\r')
            len--;
        sh_answer(sh, sh->rbuf + at, len);
        if (sh->state != SHADOW_S_UP) /* disconnected while counting */
            return;
        at = (size_t)(nl - sh->rbuf) + 1;
    }
    if (at) {
        memmove(sh->rbuf, sh->rbuf + at, sh->rlen - at);
        sh->rlen -= at;
    }
    if (sh->rlen == sizeof sh->rbuf)
        sh_disconnect(sh, "an answer line too long");
}

/* --- connecting ---------------------------------------------------------------- */

static void on_poller_sample(void *ud, const struct stats_sample *s)
{
    struct shadow *sh = ud;
    if (stats_sample_copy(&sh->last, s) == 0)
        sh->have_last = true;
    sh->last_sample_ns = clock_wall_ns();
    if (sh->set->hooks.on_sample)
        sh->set->hooks.on_sample(sh->set->hooks.ud, sh, s);
}

static void on_connect(uv_connect_t *req, int status)
{
    struct shadow *sh = req->data;
    struct shadow_set *set = sh->set;
    sh->connecting = false;
    if (set->closing)
        return;
    if (status < 0) {
        if (sh->stream_open && !uv_is_closing(&sh->stream.handle))
            uv_close(&sh->stream.handle, on_stream_closed);
        if (sh->spec.kind == SHADOW_UPSTREAM) {
            if (!sh->logged_down)
                log_warn("shadow '%s': cannot connect (%s); retrying", sh->name,
                         uv_strerror(status));
            sh->logged_down = true;
            sh->backoff_ms = sh->backoff_ms ? sh->backoff_ms * 2 : SHADOW_RESTART_MIN_MS;
            if (sh->backoff_ms > SHADOW_RESTART_MAX_MS)
                sh->backoff_ms = SHADOW_RESTART_MAX_MS;
        }
        return;
    }
    sh->state = SHADOW_S_UP;
    sh->ever_up = true;
    sh->rlen = 0;
    sh->backoff_ms = 0;
    if (sh->logged_down)
        log_info("shadow '%s': connected again", sh->name);
    sh->logged_down = false;
    uv_read_start(&sh->stream.stream, on_alloc, on_read);
    char detail[ADDR_TEXT_MAX + 16];
    snprintf(detail, sizeof detail, "%s",
             sh->spec.kind == SHADOW_UPSTREAM ? sh->spec.upstream : sh->sock_path);
    sh_event(sh, "connected", detail);
    if (!sh->poller_open && poller_open(&sh->poller, set->loop, &sh->addrs, set->stats_interval_ms,
                                        on_poller_sample, sh) == 0) {
        sh->poller_open = true;
        set->open_handles++;
    }
}

static void sh_connect(struct shadow *sh)
{
    struct shadow_set *set = sh->set;
    if (set->closing || sh->stream_open || sh->connecting || !sh->addrs.n)
        return;
    if (sh->spec.kind == SHADOW_STARTED && !sh->proc_running)
        return;
    const struct sockaddr *sa = (const struct sockaddr *)&sh->addrs.a[0];
    if (dial_init(set->loop, &sh->stream, sa->sa_family)) {
        sh_arm(sh, T_CONNECT, 100);
        return;
    }
    sh->stream.handle.data = sh;
    sh->stream_open = true;
    set->open_handles++;
    sh->connect_req.data = sh;
    int e = dial_connect(&sh->connect_req, &sh->stream, sa, on_connect);
    if (e) {
        uv_close(&sh->stream.handle, on_stream_closed);
        return;
    }
    sh->connecting = true;
}

/* --- the child ------------------------------------------------------------------ */

static void on_proc_closed(uv_handle_t *h)
{
    struct shadow *sh = h->data;
    sh->proc_handle_open = false;
    set_closed_one(sh->set);
}

static void on_sh_handle_closed(uv_handle_t *h);

static void on_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct shadow *sh = p->data;
    struct shadow_set *set = sh->set;
    char detail[96];
    sh->proc_running = false;
    uv_close((uv_handle_t *)p, on_proc_closed);
    if (sig)
        snprintf(detail, sizeof detail, "signal %d", sig);
    else
        snprintf(detail, sizeof detail, "status %" PRId64, status);
    if (set->closing) {
        if (sh->timer_open) {
            uv_timer_stop(&sh->timer);
            sh->timer_open = false;
            uv_close((uv_handle_t *)&sh->timer, on_sh_handle_closed);
        }
        return;
    }
    log_throttled(&sh->throttle, LOG_LEVEL_WARN, NULL,
                  "shadow '%s': memcached exited (%s); restarting it (its data starts again)",
                  sh->name, detail);
    sh_event(sh, "exited", detail);
    sh_disconnect(sh, "memcached exited");
    sh->state = SHADOW_S_DOWN;
    sh->backoff_ms = sh->backoff_ms ? sh->backoff_ms * 2 : SHADOW_RESTART_MIN_MS;
    if (sh->backoff_ms > SHADOW_RESTART_MAX_MS)
        sh->backoff_ms = SHADOW_RESTART_MAX_MS;
    sh_arm(sh, T_RESTART, sh->backoff_ms);
}

/* argv of a started shadow into args (strings in store). */
static int sh_argv(struct shadow *sh, const char *binary, char *store, size_t storelen, char **argv,
                   char *mbuf, size_t mlen)
{
    int n = 0;
    bool has_t = false, skip_next = false;
    argv[n++] = (char *)binary;
    snprintf(store, storelen, "%s", sh->spec.flags);
    for (char *save = NULL, *t = strtok_r(store, " \t", &save); t;
         t = strtok_r(NULL, " \t", &save)) {
        if (skip_next) {
            skip_next = false;
            continue;
        }
        if (!strcmp(t, "-m") || !strcmp(t, "--memory-limit")) {
            skip_next = true;
            continue;
        }
        if (!strncmp(t, "--memory-limit=", 15) ||
            (!strncmp(t, "-m", 2) && isdigit((unsigned char)t[2])))
            continue;
        if (!strcmp(t, "-t") || !strncmp(t, "--threads", 9) ||
            (!strncmp(t, "-t", 2) && isdigit((unsigned char)t[2])))
            has_t = true;
        if (n >= SHADOW_ARGS_MAX - 14)
            return -1;
        argv[n++] = t;
    }
    snprintf(mbuf, mlen, "%" PRIu64, sh->memory_mb);
    argv[n++] = "-m";
    argv[n++] = mbuf;
    if (!has_t) {
        argv[n++] = "-t";
        argv[n++] = "1";
    }
    argv[n++] = "-s";
    argv[n++] = sh->sock_path;
    argv[n++] = "-a";
    argv[n++] = "0600";
    if (geteuid() == 0) {
        argv[n++] = "-u";
        argv[n++] = "root";
    }
    argv[n] = NULL;
    return n;
}

static void sh_spawn(struct shadow *sh)
{
    struct shadow_set *set = sh->set;
    if (set->closing)
        return;
    if (sh->proc_handle_open) { /* the last child's handle is still closing */
        sh_arm(sh, T_RESTART, 20);
        return;
    }
    char store[SHADOW_FLAGS_MAX], *argv[SHADOW_ARGS_MAX], mbuf[24];
    const char *binary = set->memcached && *set->memcached ? set->memcached : "memcached";
    if (sh_argv(sh, binary, store, sizeof store, argv, mbuf, sizeof mbuf) < 0) {
        log_error("shadow '%s': too many flags", sh->name);
        return;
    }
    size_t len = 0;
    sh->command[0] = '\0';
    for (int i = 0; argv[i] && len < sizeof sh->command; i++)
        len += (size_t)snprintf(sh->command + len, sizeof sh->command - len, "%s%s", i ? " " : "",
                                argv[i]);
    uv_stdio_container_t stdio[3];
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_INHERIT_FD;
    stdio[1].data.fd = 2;
    stdio[2].flags = UV_INHERIT_FD;
    stdio[2].data.fd = 2;
    /* util-linux's setpriv (Debian: always there) execs memcached with a
     * parent-death signal: a proxy killed with -9 takes its shadows along */
    static const char setpriv[] = "/usr/bin/setpriv";
    char *wrapped[SHADOW_ARGS_MAX + 4];
    char **args = argv;
    if (access(setpriv, X_OK) == 0) {
        wrapped[0] = (char *)setpriv;
        wrapped[1] = "--pdeathsig";
        wrapped[2] = "KILL";
        wrapped[3] = "--";
        for (int i = 0;; i++) {
            wrapped[4 + i] = argv[i];
            if (!argv[i])
                break;
        }
        args = wrapped;
    }
    uv_process_options_t opt = { 0 };
    opt.file = args[0];
    opt.args = args;
    opt.exit_cb = on_exit_cb;
    opt.stdio = stdio;
    opt.stdio_count = 3;
    sh->proc.data = sh;
    int e = uv_spawn(set->loop, &sh->proc, &opt);
    sh->proc_handle_open = true;
    set->open_handles++;
    if (e) {
        uv_close((uv_handle_t *)&sh->proc, on_proc_closed);
        log_throttled(&sh->throttle, LOG_LEVEL_ERROR, NULL, "shadow '%s': cannot start %s: %s",
                      sh->name, argv[0], uv_strerror(e));
        sh->state = SHADOW_S_DOWN;
        sh->backoff_ms = sh->backoff_ms ? sh->backoff_ms * 2 : SHADOW_RESTART_MIN_MS;
        if (sh->backoff_ms > SHADOW_RESTART_MAX_MS)
            sh->backoff_ms = SHADOW_RESTART_MAX_MS;
        sh_arm(sh, T_RESTART, sh->backoff_ms);
        return;
    }
    sh->proc_running = true;
    sh->state = SHADOW_S_STARTING;
    sh->up_since_ns = clock_wall_ns();
    sh_arm(sh, T_CONNECT, SHADOW_CONNECT_RETRY_MS);
}

static void on_timer(uv_timer_t *t)
{
    struct shadow *sh = t->data;
    int what = sh->timer_what;
    sh->timer_what = T_NONE;
    switch (what) {
    case T_CONNECT:
        if (!sh->stream_open && !sh->connecting)
            sh_connect(sh);
        /* a started child's socket may not exist yet: try again until it
         * answers (the connect's own failure closes the stream) */
        if (sh->spec.kind == SHADOW_STARTED && sh->state != SHADOW_S_UP && sh->proc_running &&
            sh->timer_what == T_NONE)
            sh_arm(sh, T_CONNECT, 50);
        break;
    case T_RESTART: {
        sh_spawn(sh);
        if (sh->proc_running) {
            sh->restarts++;
            sh_event(sh, "restarted", sh->command);
        }
        break;
    }
    case T_KILL:
        if (sh->proc_running)
            uv_process_kill(&sh->proc, SIGKILL);
        break;
    default: break;
    }
}

static void sh_arm(struct shadow *sh, int what, uint64_t ms)
{
    if (!sh->timer_open)
        return;
    sh->timer_what = what;
    uv_timer_start(&sh->timer, on_timer, ms, 0);
}

/* --- the tick ------------------------------------------------------------------- */

static uint64_t ms_to_next_second(void)
{
    int64_t now = clock_wall_ns();
    return (uint64_t)(1000 - (now / 1000000) % 1000) + 2;
}

static void sh_second(struct shadow *sh, int64_t second)
{
    struct shadow_counters d;
    bool any = false;
#define SHADOW_DELTA(f, label, help) \
    d.f = sh->c.f - sh->at_second.f; \
    any |= d.f != 0;
    SHADOW_COUNTERS(SHADOW_DELTA)
#undef SHADOW_DELTA
    sh->at_second = sh->c;
    sh->second = second + 1;
    if (any && sh->set->hooks.on_second)
        sh->set->hooks.on_second(sh->set->hooks.ud, sh, second, &d);
}

static void on_tick(uv_timer_t *t)
{
    struct shadow_set *set = t->data;
    int64_t second = clock_wall_ns() / 1000000000 - 1; /* the second that just ended */
    for (unsigned i = 0; i < set->n; i++)
        if (set->sh[i].state != SHADOW_S_TOO_SMALL)
            sh_second(&set->sh[i], second);
    uv_timer_start(&set->tick, on_tick, ms_to_next_second(), 0);
}

/* --- open / close ------------------------------------------------------------ */

static void on_set_handle_closed(uv_handle_t *h)
{
    struct shadow_set *set = h->data;
    set_closed_one(set);
}

static void on_sh_handle_closed(uv_handle_t *h)
{
    struct shadow *sh = h->data;
    set_closed_one(sh->set);
}

static void on_poller_closed(struct poller *p)
{
    struct shadow *sh = (struct shadow *)((char *)p - offsetof(struct shadow, poller));
    set_closed_one(sh->set);
}

static void sh_remove_files(struct shadow_set *set)
{
    for (unsigned i = 0; i < set->n; i++)
        if (set->sh[i].sock_path[0])
            unlink(set->sh[i].sock_path);
    if (set->dir[0])
        rmdir(set->dir);
}

static void set_closed_one(struct shadow_set *set)
{
    if (set->open_handles)
        set->open_handles--;
    if (set->open_handles || !set->closing)
        return;
    for (unsigned i = 0; i < set->n; i++) {
        struct shadow *sh = &set->sh[i];
        buf_free(&sh->out);
        buf_free(&sh->sending);
        free(sh->fifo);
        sh->fifo = NULL;
        stats_sample_fini(&sh->last);
        sh->have_last = false;
        sh->state = SHADOW_S_CLOSED;
    }
    sh_remove_files(set);
    if (set->on_closed)
        set->on_closed(set);
}

static int sh_init(struct shadow_set *set, unsigned i, const struct shadow_spec *spec,
                   unsigned classes_in_use, char *err, size_t errlen)
{
    struct shadow *sh = &set->sh[i];
    memset(sh, 0, sizeof *sh);
    sh->set = set;
    sh->index = i;
    sh->spec = *spec;
    const char *name = spec->text[0]                   ? spec->text
                       : spec->kind == SHADOW_UPSTREAM ? spec->upstream
                       : spec->flags[0]                ? spec->flags
                                                       : "(no flags)";
    snprintf(sh->name, sizeof sh->name, "%s", name);
    unsigned dup = 1;
    for (unsigned k = 0; k < i; k++)
        dup += !strcmp(set->sh[k].base, name);
    snprintf(sh->base, sizeof sh->base, "%s", name);
    if (dup > 1)
        snprintf(sh->name, sizeof sh->name, "%.*s #%u", (int)sizeof sh->name - 8, name,
                 dup % 100); /* dup <= SHADOW_MAX: says so to -Wformat-truncation */
    if (shadow_memory(spec, set->primary_mb, classes_in_use, &sh->memory_mb, err, errlen))
        return -1;
    stats_sample_init(&sh->last);
    buf_init(&sh->out, BUF_UNBOUNDED);
    buf_init(&sh->sending, BUF_UNBOUNDED);
    if (spec->kind == SHADOW_UPSTREAM) {
        sh->memory_mb = 0;
        if (addr_resolve(spec->upstream, &sh->addrs, err, errlen)) {
            char why[256];
            snprintf(why, sizeof why, "%s", err);
            snprintf(err, errlen, "--shadow-upstream %s: %s", spec->upstream, why);
            return -1;
        }
    } else {
        struct sockaddr_un un = { .sun_family = AF_UNIX };
        snprintf(sh->sock_path, sizeof sh->sock_path, "%.90s/shadow%u.sock", set->dir, i);
        snprintf(un.sun_path, sizeof un.sun_path, "%s", sh->sock_path);
        sh->addrs.n = 0;
        addr_list_add(&sh->addrs, (const struct sockaddr *)&un, sizeof un);
    }
    sh->fifo = malloc(SHADOW_INFLIGHT_MAX * sizeof *sh->fifo);
    if (!sh->fifo) {
        snprintf(err, errlen, "out of memory for shadow '%s'", sh->name);
        return -1;
    }
    return 0;
}

/* The binary a started shadow runs exists and is executable (a path, or
 * a name found on PATH). */
static bool shadow_binary_found(const char *memcached)
{
    const char *bin = memcached && *memcached ? memcached : "memcached";
    if (strchr(bin, '/'))
        return access(bin, X_OK) == 0;
    const char *path = getenv("PATH");
    char dir[4096];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(dir, sizeof dir, "%.*s/%s", (int)len, len ? p : ".", bin);
        if (access(dir, X_OK) == 0)
            return true;
        p += len;
        if (*p == ':')
            p++;
    }
    return false;
}

int shadow_set_open(struct shadow_set *set, uv_loop_t *loop, const struct shadow_spec *specs,
                    unsigned n, const char *memcached, uint64_t primary_mb, unsigned classes_in_use,
                    size_t queue_bytes, unsigned stats_interval_ms,
                    const struct shadow_hooks *hooks, char *err, size_t errlen)
{
    memset(set, 0, sizeof *set);
    set->loop = loop;
    set->memcached = memcached;
    set->primary_mb = primary_mb;
    set->queue_bytes = queue_bytes ? queue_bytes : SHADOW_DEFAULT_QUEUE;
    set->stats_interval_ms = stats_interval_ms ? stats_interval_ms : 1000;
    if (hooks)
        set->hooks = *hooks;
    if (n > SHADOW_MAX) {
        snprintf(err, errlen, "at most %d shadows (--shadow and --shadow-upstream together)",
                 SHADOW_MAX);
        return -1;
    }
    bool any_started = false;
    for (unsigned i = 0; i < n; i++)
        any_started |= specs[i].kind == SHADOW_STARTED;
    if (any_started && !shadow_binary_found(memcached)) {
        snprintf(err, errlen, "--shadow: %s is not an executable file%s (give --memcached PATH)",
                 memcached && *memcached ? memcached : "memcached",
                 memcached && strchr(memcached, '/') ? "" : " on PATH");
        return -1;
    }
    if (any_started) {
        const char *tmp = getenv("TMPDIR");
        snprintf(set->dir, sizeof set->dir, "%s/slabtap-shadow-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (strlen(set->dir) + 16 > ADDR_UNIX_PATH_MAX || !mkdtemp(set->dir)) {
            snprintf(err, errlen,
                     "cannot make a private directory for the shadows' sockets (%s): %s", set->dir,
                     strlen(set->dir) + 16 > ADDR_UNIX_PATH_MAX ? "path too long"
                                                                : strerror(errno));
            set->dir[0] = '\0';
            return -1;
        }
    }
    for (unsigned i = 0; i < n; i++) {
        if (sh_init(set, i, &specs[i], classes_in_use, err, errlen)) {
            for (unsigned k = 0; k <= i; k++) {
                free(set->sh[k].fifo);
                set->sh[k].fifo = NULL;
                if (k < i)
                    stats_sample_fini(&set->sh[k].last);
            }
            set->n = i + 1;
            sh_remove_files(set);
            set->n = 0;
            return -1;
        }
    }
    set->n = n;
    uv_timer_init(loop, &set->tick);
    set->tick.data = set;
    set->tick_open = true;
    set->open_handles++;
    uv_check_init(loop, &set->flusher);
    set->flusher.data = set;
    set->flusher_open = true;
    set->open_handles++;
    uv_timer_init(loop, &set->batch);
    set->batch.data = set;
    set->batch_open = true;
    set->open_handles++;
    int64_t second = clock_wall_ns() / 1000000000;
    for (unsigned i = 0; i < n; i++) {
        struct shadow *sh = &set->sh[i];
        uv_timer_init(loop, &sh->timer);
        sh->timer.data = sh;
        sh->timer_open = true;
        set->open_handles++;
        sh->second = second;
        char detail[SHADOW_FLAGS_MAX + 1400];
        if (sh->spec.kind == SHADOW_STARTED) {
            sh_spawn(sh);
            /* the JSON detail (record/row.h): flags and command escaped
             * plainly (they hold no quotes a shell-free flag list needs) */
            char fl[SHADOW_FLAGS_MAX], cmd[sizeof sh->command];
            size_t a = 0, b = 0;
            for (const char *p = sh->spec.flags; *p && a + 2 < sizeof fl; p++) {
                if (*p == '"' || *p == '\\')
                    fl[a++] = '\\';
                fl[a++] = *p;
            }
            fl[a] = '\0';
            for (const char *p = sh->command; *p && b + 2 < sizeof cmd; p++) {
                if (*p == '"' || *p == '\\')
                    cmd[b++] = '\\';
                cmd[b++] = *p;
            }
            cmd[b] = '\0';
            snprintf(detail, sizeof detail,
                     "{\"kind\":\"started\",\"flags\":\"%s\",\"sample\":%u,\"memory_mb\":%" PRIu64
                     ",\"command\":\"%s\"}",
                     fl, sh->spec.sample > 1 ? sh->spec.sample : 1, sh->memory_mb, cmd);
            sh_event(sh, "started", detail);
            if (!sh->proc_running && sh->timer_what != T_RESTART)
                sh->state = SHADOW_S_DOWN;
        } else {
            sh->state = SHADOW_S_DOWN;
            sh->up_since_ns = clock_wall_ns();
            snprintf(detail, sizeof detail,
                     "{\"kind\":\"upstream\",\"flags\":\"\",\"sample\":%u,\"memory_mb\":0,"
                     "\"command\":\"%s\"}",
                     sh->spec.sample > 1 ? sh->spec.sample : 1, sh->spec.upstream);
            sh_event(sh, "started", detail);
            sh_connect(sh);
        }
    }
    uv_timer_start(&set->tick, on_tick, ms_to_next_second(), 0);
    return 0;
}

void shadow_set_close(struct shadow_set *set, void (*on_closed)(struct shadow_set *set))
{
    set->on_closed = on_closed;
    if (set->closing)
        return;
    if (!set->tick_open) { /* never opened */
        set->closing = true;
        if (on_closed)
            on_closed(set);
        return;
    }
    /* the last partial second's counts; what was mirrored and never
     * answered is dropped */
    int64_t second = clock_wall_ns() / 1000000000;
    for (unsigned i = 0; i < set->n; i++) {
        set->sh[i].c.dropped += set->sh[i].inflight;
        set->sh[i].inflight = 0;
        sh_second(&set->sh[i], second);
    }
    set->closing = true;
    /* one extra count while closing so that nothing reaches zero early */
    set->open_handles++;
    uv_timer_stop(&set->tick);
    set->tick_open = false;
    uv_close((uv_handle_t *)&set->tick, on_set_handle_closed);
    uv_check_stop(&set->flusher);
    set->flusher_open = false;
    uv_close((uv_handle_t *)&set->flusher, on_set_handle_closed);
    uv_timer_stop(&set->batch);
    set->batch_open = false;
    uv_close((uv_handle_t *)&set->batch, on_set_handle_closed);
    for (unsigned i = 0; i < set->n; i++) {
        struct shadow *sh = &set->sh[i];
        sh->state = SHADOW_S_CLOSED;
        if (sh->poller_open) {
            sh->poller_open = false;
            poller_close(&sh->poller, on_poller_closed);
        }
        if (sh->stream_open && !uv_is_closing(&sh->stream.handle)) {
            uv_read_stop(&sh->stream.stream);
            uv_close(&sh->stream.handle, on_stream_closed);
        }
        if (sh->proc_running) {
            uv_process_kill(&sh->proc, SIGTERM);
            uv_process_kill(&sh->proc, SIGCONT); /* a frozen one must see it */
            uv_timer_stop(&sh->timer);
            sh->timer_what = T_KILL;
            uv_timer_start(&sh->timer, on_timer, SHADOW_STOP_MS, 0);
        } else {
            uv_timer_stop(&sh->timer);
        }
    }
    /* each timer closes once its child has gone (the kill timer fires first
     * when it does not); see on_kill_wait */
    for (unsigned i = 0; i < set->n; i++) {
        struct shadow *sh = &set->sh[i];
        if (!sh->proc_running) {
            sh->timer_open = false;
            uv_close((uv_handle_t *)&sh->timer, on_sh_handle_closed);
        }
    }
    set_closed_one(set);
}
