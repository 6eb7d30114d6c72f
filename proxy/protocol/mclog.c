/* mclog: the parser of memcached's watch lines and metadump listing (see
 * mclog.h). Pure: no I/O, no clock, no allocation. A line that arrives whole
 * in the caller's buffer is parsed in place (read only); only the part of a
 * line cut by the end of a buffer is copied into the parser's own buffer.
 *
 * What memcached prints, and so what this reads (logger.c / crawler.c,
 * checked against 1.6.18 running here and the newer sources):
 *   ts=S.U gid=N type=item_store key=K status=W cmd=W ttl=N clsid=N [cfd=N] [size=N]
 *   ts=S.U gid=N type=eviction key=K fetch=yes|no ttl=N la=N clsid=N [size=N]
 *   ts=S.U gid=N type=deleted key=K cmd=delete|md clsid=N size=N   (1.6.20+)
 *   skipped=N
 *   key=K exp=N la=N cas=N fetch=yes|no cls=N size=N [flags=N ][ext_page=N ...]
 *   END / OK (CRLF), or an error line instead of OK / the listing.
 * U is tv_usec printed with %d, not zero-padded (".79332" is 79,332 us), so
 * it is read as an integer count of microseconds (which also reads a padded
 * ".079332" right). cfd= appeared in 1.6.0, size= in 1.6.11, flags= (with a
 * trailing space before the '\n') in metadump after 1.6.18. */
#include "protocol/mclog.h"

#include <string.h>

static const char *const mclog_event_texts[MCLOG_EV__COUNT] = {
#define MCLOG_EV_TEXT(id, text) [MCLOG_EV_##id] = text,
    MCLOG_EVENTS(MCLOG_EV_TEXT)
#undef MCLOG_EV_TEXT
};

const char *mclog_event_text(enum mclog_event_kind k)
{
    return (unsigned)k < MCLOG_EV__COUNT ? mclog_event_texts[k] : "?";
}

static const char *const mclog_status_words[MCLOG_STATUS__COUNT] = { [MCLOG_STATUS_NONE] = "",
#define MCLOG_ST_WORD(id, word, answer) [MCLOG_STATUS_##id] = word,
                                                                     MCLOG_STATUSES(MCLOG_ST_WORD)
#undef MCLOG_ST_WORD
};

static const char *const mclog_status_answers[MCLOG_STATUS__COUNT] = {
    [MCLOG_STATUS_NONE] = "",
#define MCLOG_ST_ANSWER(id, word, answer) [MCLOG_STATUS_##id] = answer,
    MCLOG_STATUSES(MCLOG_ST_ANSWER)
#undef MCLOG_ST_ANSWER
};

const char *mclog_status_word(enum mclog_status s)
{
    return (unsigned)s < MCLOG_STATUS__COUNT ? mclog_status_words[s] : "";
}

const char *mclog_status_answer(enum mclog_status s)
{
    return (unsigned)s < MCLOG_STATUS__COUNT ? mclog_status_answers[s] : "";
}

static const char *const mclog_err_texts[MCLOG_ERR__COUNT] = {
#define MCLOG_ERR_TEXT(id, text) [MCLOG_ERR_##id] = text,
    MCLOG_ERRS(MCLOG_ERR_TEXT)
#undef MCLOG_ERR_TEXT
};

const char *mclog_err_text(enum mclog_err e)
{
    return (unsigned)e < MCLOG_ERR__COUNT ? mclog_err_texts[e] : "unknown mclog error";
}

void mclog_init(struct mclog_parser *p)
{
    memset(p, 0, sizeof *p);
}

size_t mclog_watch_request(char *out, size_t cap, bool mutations, bool evictions, bool deletions)
{
    static const char *const words[3] = { " mutations", " evictions", " deletions" };
    const bool want[3] = { mutations, evictions, deletions };
    size_t n = 5;

    if (!mutations && !evictions && !deletions)
        return 0; /* a bare "watch" would stream fetchers */
    for (int i = 0; i < 3; i++)
        n += want[i] ? strlen(words[i]) : 0;
    if (cap < n + 3)
        return 0;
    memcpy(out, "watch", 5);
    n = 5;
    for (int i = 0; i < 3; i++) {
        if (want[i]) {
            memcpy(out + n, words[i], strlen(words[i]));
            n += strlen(words[i]);
        }
    }
    memcpy(out + n, "\r\n", 3); /* with its NUL */
    return n + 2;
}

/* ---- fields ---------------------------------------------------------- */

/* Every field name any line kind uses; a line's tokens are sorted into
 * these slots (the first occurrence wins; unknown names are skipped: a newer
 * memcached may add fields). */
enum mclog_field {
    F_TS,
    F_GID,
    F_TYPE,
    F_KEY,
    F_STATUS,
    F_CMD,
    F_TTL,
    F_CLSID,
    F_CFD,
    F_SIZE,
    F_FETCH,
    F_LA,
    F_EXP,
    F_CAS,
    F_CLS,
    F_FLAGS,
    F__COUNT
};

static const char *const field_names[F__COUNT] = {
    [F_TS] = "ts",         [F_GID] = "gid",   [F_TYPE] = "type",   [F_KEY] = "key",
    [F_STATUS] = "status", [F_CMD] = "cmd",   [F_TTL] = "ttl",     [F_CLSID] = "clsid",
    [F_CFD] = "cfd",       [F_SIZE] = "size", [F_FETCH] = "fetch", [F_LA] = "la",
    [F_EXP] = "exp",       [F_CAS] = "cas",   [F_CLS] = "cls",     [F_FLAGS] = "flags",
};

static const unsigned char field_lens[F__COUNT] = {
    [F_TS] = 2,  [F_GID] = 3,   [F_TYPE] = 4, [F_KEY] = 3,   [F_STATUS] = 6, [F_CMD] = 3,
    [F_TTL] = 3, [F_CLSID] = 5, [F_CFD] = 3,  [F_SIZE] = 4,  [F_FETCH] = 5,  [F_LA] = 2,
    [F_EXP] = 3, [F_CAS] = 3,   [F_CLS] = 3,  [F_FLAGS] = 5,
};

struct fields {
    const char *v[F__COUNT];
    size_t n[F__COUNT];
    bool set[F__COUNT];
};

static void split_fields(const char *s, size_t n, struct fields *f)
{
    size_t i = 0;

    memset(f->set, 0, sizeof f->set);
    while (i < n) {
        while (i < n && s[i] == ' ')
            i++;
        size_t start = i;
        while (i < n && s[i] != ' ')
            i++;
        const char *tok = s + start;
        size_t tlen = i - start;
        const char *eq = tlen ? memchr(tok, '=', tlen) : NULL;
        if (!eq)
            continue;
        size_t nlen = (size_t)(eq - tok);
        for (int k = 0; k < F__COUNT; k++) {
            if (field_names[k][0] == tok[0] && field_lens[k] == nlen && !f->set[k] &&
                !memcmp(field_names[k], tok, nlen)) {
                f->set[k] = true;
                f->v[k] = eq + 1;
                f->n[k] = tlen - nlen - 1;
                break;
            }
        }
    }
}

static bool is_word(const char *v, size_t n, const char *w)
{
    return strlen(w) == n && !memcmp(v, w, n);
}

/* Digits only (no sign), at most 20, no wrap. */
static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t acc = 0;

    if (n == 0 || n > 20)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (acc > (UINT64_MAX - d) / 10)
            return false;
        acc = acc * 10 + d;
    }
    *out = acc;
    return true;
}

/* An optional '-', then digits; within int64. */
static bool parse_i64(const char *s, size_t n, int64_t *out)
{
    bool neg = n > 0 && s[0] == '-';
    uint64_t u;

    if (!parse_u64(s + neg, n - neg, &u) || u > (uint64_t)INT64_MAX)
        return false;
    *out = neg ? -(int64_t)u : (int64_t)u;
    return true;
}

static bool parse_u32(const char *s, size_t n, uint32_t *out)
{
    uint64_t u;

    if (!parse_u64(s, n, &u) || u > UINT32_MAX)
        return false;
    *out = (uint32_t)u;
    return true;
}

static bool parse_i32(const char *s, size_t n, int32_t *out)
{
    int64_t v;

    if (!parse_i64(s, n, &v) || v < INT32_MIN || v > INT32_MAX)
        return false;
    *out = (int32_t)v;
    return true;
}

/* ts=S.U: S unix seconds, U microseconds as an integer (see the top). */
static bool parse_ts(const char *s, size_t n, int64_t *ns)
{
    const char *dot = memchr(s, '.', n);
    size_t sn = dot ? (size_t)(dot - s) : n;
    uint64_t sec, usec = 0;

    if (!parse_u64(s, sn, &sec) || sec > (uint64_t)INT64_MAX / 1000000000u - 1)
        return false;
    if (dot && (!parse_u64(dot + 1, n - sn - 1, &usec) || usec > 999999))
        return false;
    *ns = (int64_t)(sec * 1000000000u + usec * 1000u);
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* memcached's uriencode undone: %XX (either case) is one byte, every other
 * byte stands for itself. Empty, over MC_KEY_MAX decoded, or a '%' not
 * followed by two hex digits: false. */
static bool decode_key(const char *s, size_t n, struct mclog_event *ev)
{
    size_t k = 0;

    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (k == MC_KEY_MAX)
            return false;
        if (s[i] == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return false;
            ev->key[k++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            ev->key[k++] = s[i];
        }
    }
    ev->key[k] = '\0';
    ev->key_len = k;
    return true;
}

static void copy_line(struct mclog_event *ev, const char *s, size_t n)
{
    if (n > sizeof ev->line - 1)
        n = sizeof ev->line - 1;
    memcpy(ev->line, s, n);
    ev->line[n] = '\0';
}

/* ---- line kinds -------------------------------------------------------- */

#define NEED(f) \
    do { \
        if (!fl.set[f]) \
            return MCLOG_ERR_MISSING_FIELD; \
    } while (0)
#define NUM(ok) \
    do { \
        if (!(ok)) \
            return MCLOG_ERR_BAD_NUMBER; \
    } while (0)

static enum mclog_err parse_fetch(const char *v, size_t n, bool *fetched)
{
    if (is_word(v, n, "yes"))
        *fetched = true;
    else if (is_word(v, n, "no"))
        *fetched = false;
    else
        return MCLOG_ERR_BAD_WORD;
    return MCLOG_ERR_NONE;
}

/* A line starting "ts=": a watch line. Not one of the three item types:
 * OTHER. Required fields per type as every version since 1.5 prints them;
 * cfd (1.6.0+) and size (1.6.11+) may be absent. */
static enum mclog_err parse_watch_line(const char *s, size_t n, struct mclog_event *ev)
{
    struct fields fl;

    split_fields(s, n, &fl);
    if (!fl.set[F_TYPE])
        ev->kind = MCLOG_EV_OTHER;
    else if (is_word(fl.v[F_TYPE], fl.n[F_TYPE], "item_store"))
        ev->kind = MCLOG_EV_STORE;
    else if (is_word(fl.v[F_TYPE], fl.n[F_TYPE], "eviction"))
        ev->kind = MCLOG_EV_EVICTION;
    else if (is_word(fl.v[F_TYPE], fl.n[F_TYPE], "deleted"))
        ev->kind = MCLOG_EV_DELETION;
    else
        ev->kind = MCLOG_EV_OTHER;
    if (ev->kind == MCLOG_EV_OTHER) {
        copy_line(ev, s, n);
        return MCLOG_ERR_NONE;
    }

    NEED(F_TS);
    NEED(F_GID);
    NEED(F_KEY);
    NEED(F_CLSID);
    NUM(parse_ts(fl.v[F_TS], fl.n[F_TS], &ev->ts_ns));
    NUM(parse_u64(fl.v[F_GID], fl.n[F_GID], &ev->gid));
    if (!decode_key(fl.v[F_KEY], fl.n[F_KEY], ev))
        return MCLOG_ERR_BAD_KEY;
    NUM(parse_u32(fl.v[F_CLSID], fl.n[F_CLSID], &ev->clsid));
    if (fl.set[F_SIZE]) {
        NUM(parse_i64(fl.v[F_SIZE], fl.n[F_SIZE], &ev->size) && ev->size >= 0);
        ev->has_size = true;
    }

    if (ev->kind == MCLOG_EV_STORE) {
        static const struct {
            const char *w;
            enum mc_cmd c;
        } cmds[] = { { "set", MC_CMD_SET },         { "add", MC_CMD_ADD },
                     { "replace", MC_CMD_REPLACE }, { "append", MC_CMD_APPEND },
                     { "prepend", MC_CMD_PREPEND }, { "cas", MC_CMD_CAS } };
        int64_t ttl;

        NEED(F_STATUS);
        NEED(F_CMD);
        NEED(F_TTL);
        for (int i = MCLOG_STATUS_NONE + 1; i < MCLOG_STATUS__COUNT; i++)
            if (is_word(fl.v[F_STATUS], fl.n[F_STATUS], mclog_status_words[i]))
                ev->status = (enum mclog_status)i;
        if (ev->status == MCLOG_STATUS_NONE)
            return MCLOG_ERR_BAD_WORD;
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
            if (is_word(fl.v[F_CMD], fl.n[F_CMD], cmds[i].w)) {
                ev->cmd = cmds[i].c;
                ev->has_cmd = true;
            }
        }
        /* "na" / "null": memcached's own words for a command it has no
           name for; the line is good, the command unknown */
        if (!ev->has_cmd && !is_word(fl.v[F_CMD], fl.n[F_CMD], "na") &&
            !is_word(fl.v[F_CMD], fl.n[F_CMD], "null"))
            return MCLOG_ERR_BAD_WORD;
        /* %u of a 32-bit difference: an exptime already past wraps
           (4294967230 is -66) */
        NUM(parse_i64(fl.v[F_TTL], fl.n[F_TTL], &ttl) && ttl >= INT32_MIN && ttl <= UINT32_MAX);
        ev->ttl = ttl > INT32_MAX ? ttl - ((int64_t)1 << 32) : ttl;
        ev->cfd = -1;
        if (fl.set[F_CFD])
            NUM(parse_i32(fl.v[F_CFD], fl.n[F_CFD], &ev->cfd));
    } else if (ev->kind == MCLOG_EV_EVICTION) {
        NEED(F_FETCH);
        NEED(F_TTL);
        NEED(F_LA);
        enum mclog_err e = parse_fetch(fl.v[F_FETCH], fl.n[F_FETCH], &ev->fetched);
        if (e != MCLOG_ERR_NONE)
            return e;
        NUM(parse_i64(fl.v[F_TTL], fl.n[F_TTL], &ev->ttl));
        NUM(parse_i64(fl.v[F_LA], fl.n[F_LA], &ev->la));
    } else {
        NEED(F_CMD);
        if (is_word(fl.v[F_CMD], fl.n[F_CMD], "delete")) {
            ev->cmd = MC_CMD_DELETE;
            ev->has_cmd = true;
        } else if (is_word(fl.v[F_CMD], fl.n[F_CMD], "md")) {
            ev->cmd = MC_CMD_MD;
            ev->has_cmd = true;
        } else if (!is_word(fl.v[F_CMD], fl.n[F_CMD], "na") &&
                   !is_word(fl.v[F_CMD], fl.n[F_CMD], "null")) {
            return MCLOG_ERR_BAD_WORD;
        }
    }
    return MCLOG_ERR_NONE;
}

/* key=K exp=N la=N cas=N fetch=yes|no cls=N size=N [flags=N] */
static enum mclog_err parse_item_line(const char *s, size_t n, struct mclog_event *ev)
{
    struct fields fl;
    uint64_t u;

    ev->kind = MCLOG_EV_ITEM;
    split_fields(s, n, &fl);
    NEED(F_KEY);
    NEED(F_EXP);
    NEED(F_LA);
    NEED(F_CAS);
    NEED(F_FETCH);
    NEED(F_CLS);
    NEED(F_SIZE);
    if (!decode_key(fl.v[F_KEY], fl.n[F_KEY], ev))
        return MCLOG_ERR_BAD_KEY;
    NUM(parse_i64(fl.v[F_EXP], fl.n[F_EXP], &ev->exp));
    NUM(parse_u64(fl.v[F_LA], fl.n[F_LA], &u) && u <= (uint64_t)INT64_MAX);
    ev->la = (int64_t)u;
    NUM(parse_u64(fl.v[F_CAS], fl.n[F_CAS], &ev->cas));
    enum mclog_err e = parse_fetch(fl.v[F_FETCH], fl.n[F_FETCH], &ev->fetched);
    if (e != MCLOG_ERR_NONE)
        return e;
    NUM(parse_u32(fl.v[F_CLS], fl.n[F_CLS], &ev->clsid));
    NUM(parse_u64(fl.v[F_SIZE], fl.n[F_SIZE], &u) && u <= (uint64_t)INT64_MAX);
    ev->size = (int64_t)u;
    ev->has_size = true;
    if (fl.set[F_FLAGS]) {
        NUM(parse_u64(fl.v[F_FLAGS], fl.n[F_FLAGS], &ev->flags));
        ev->has_flags = true;
    }
    return MCLOG_ERR_NONE;
}

#undef NEED
#undef NUM

static bool starts_with(const char *s, size_t n, const char *w)
{
    size_t wn = strlen(w);
    return n >= wn && !memcmp(s, w, wn);
}

/* The first word of a line memcached sends instead of OK or a listing
 * (proto_text.c: watch, lru_crawler metadump). */
static bool is_refusal(const char *s, size_t n)
{
    static const char *const words[] = { "ERROR",          "CLIENT_ERROR",
                                         "SERVER_ERROR",   "WATCHER_TOO_MANY",
                                         "WATCHER_FAILED", "BUSY",
                                         "BADCLASS",       "NOTSTARTED" };
    size_t w = 0;

    while (w < n && s[w] != ' ')
        w++;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (is_word(s, w, words[i]))
            return true;
    return false;
}

/* One line without its '\n' (and '\r'). */
static enum mclog_result parse_line(const char *s, size_t n, struct mclog_event *ev)
{
    enum mclog_err e = MCLOG_ERR_NONE;

    if (n > 0 && s[n - 1] == '\r')
        n--;
    if (starts_with(s, n, "ts=")) {
        e = parse_watch_line(s, n, ev);
    } else if (starts_with(s, n, "key=")) {
        e = parse_item_line(s, n, ev);
    } else if (starts_with(s, n, "skipped=")) {
        ev->kind = MCLOG_EV_SKIPPED;
        e = parse_u64(s + 8, n - 8, &ev->skipped) ? MCLOG_ERR_NONE : MCLOG_ERR_BAD_NUMBER;
    } else if (is_word(s, n, "END")) {
        ev->kind = MCLOG_EV_END;
    } else if (is_word(s, n, "OK")) {
        ev->kind = MCLOG_EV_OK;
    } else if (is_refusal(s, n)) {
        ev->kind = MCLOG_EV_REFUSED;
        copy_line(ev, s, n);
    } else {
        ev->kind = MCLOG_EV_OTHER;
        copy_line(ev, s, n);
    }
    if (e == MCLOG_ERR_NONE)
        return MCLOG_OK;
    /* whatever was filled in before the failure is cleared: an ERROR event
       carries only err and the line */
    memset(ev, 0, sizeof *ev);
    ev->kind = MCLOG_EV_ERROR;
    ev->err = e;
    copy_line(ev, s, n);
    return MCLOG_ERROR;
}

/* ---- framing ----------------------------------------------------------- */

enum mclog_result mclog_next(struct mclog_parser *p, const char *buf, size_t len, size_t *used,
                             struct mclog_event *ev)
{
    size_t off = 0;

    memset(ev, 0, sizeof *ev);
    if (p->discarding) {
        const char *nl = len ? memchr(buf, '\n', len) : NULL;
        if (!nl) {
            *used = len;
            return MCLOG_NEED_MORE;
        }
        off = (size_t)(nl - buf) + 1;
        p->discarding = false;
    }

    const char *nl = off < len ? memchr(buf + off, '\n', len - off) : NULL;
    size_t n = nl ? (size_t)(nl - (buf + off)) : len - off; /* without the '\n' */

    /* A line is at most MCLOG_LINE_MAX bytes with its '\n': more than
       MCLOG_LINE_MAX - 1 before it is too long, whether or not the '\n' is
       here yet (the same one error for any split of the same bytes). */
    if (p->len + n > MCLOG_LINE_MAX - 1) {
        size_t head = p->len < sizeof ev->line - 1 ? p->len : sizeof ev->line - 1;
        size_t more = sizeof ev->line - 1 - head;
        ev->kind = MCLOG_EV_ERROR;
        ev->err = MCLOG_ERR_LINE_TOO_LONG;
        memcpy(ev->line, p->buf, head);
        memcpy(ev->line + head, buf + off, n < more ? n : more);
        ev->line[head + (n < more ? n : more)] = '\0';
        p->len = 0;
        p->lines++;
        p->discarding = nl == NULL;
        *used = nl ? (size_t)(nl - buf) + 1 : len;
        return MCLOG_ERROR;
    }
    if (!nl) {
        memcpy(p->buf + p->len, buf + off, n);
        p->len += n;
        *used = len;
        return MCLOG_NEED_MORE;
    }

    *used = (size_t)(nl - buf) + 1;
    p->lines++;
    if (p->len == 0)
        return parse_line(buf + off, n, ev); /* whole in the caller's buffer */
    memcpy(p->buf + p->len, buf + off, n);
    n += p->len;
    p->len = 0;
    return parse_line(p->buf, n, ev);
}
