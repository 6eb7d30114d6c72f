/* stats_parse: line parser, batch sequencer and stats_sample for memcached's
 * stats replies. Pure: no I/O, no libuv, no clock. Never writes into the
 * caller's input buffer (every line is copied into the parser's own
 * buffer first) and never drops an unknown field; see stats_parse.h. */
#include "protocol/stats_parse.h"

#include <stdlib.h>
#include <string.h>

static const char *const stats_parse_error_text[STATS_PARSE_E_COUNT] = {
#define STATS_PARSE_ERROR_TEXT(name, text) [name] = text,
    STATS_PARSE_ERRORS(STATS_PARSE_ERROR_TEXT)
#undef STATS_PARSE_ERROR_TEXT
};

const char *stats_parse_error_str(enum stats_parse_error e)
{
    return (unsigned)e < STATS_PARSE_E_COUNT ? stats_parse_error_text[e]
                                             : "unknown stats_parse error";
}

/* ---- line level ---------------------------------------------------- */

void stats_parse_init(struct stats_parser *p)
{
    memset(p, 0, sizeof *p);
}

void stats_parse_reset(struct stats_parser *p)
{
    p->len = 0;
    p->in_block = false;
    p->error = STATS_PARSE_E_NONE;
    p->line[0] = '\0';
}

bool stats_parse_int64(const char *s, size_t n, int64_t *out)
{
    bool neg = n > 0 && s[0] == '-';
    size_t i = neg ? 1 : 0;
    bool ok = i < n && n - i <= 19; /* 19 digits cannot wrap a uint64 */
    uint64_t acc = 0;

    for (; ok && i < n; i++) {
        ok = s[i] >= '0' && s[i] <= '9';
        if (ok)
            acc = acc * 10 + (uint64_t)(s[i] - '0');
    }
    ok = ok && acc <= (uint64_t)INT64_MAX + (neg ? 1 : 0);
    if (ok)
        *out = neg ? (int64_t)(0 - acc) : (int64_t)acc;
    return ok;
}

bool stats_parse_class_name(const char *name, size_t name_len, unsigned long *class_id,
                            const char **field, size_t *field_len)
{
    size_t i = 0;
    unsigned long id = 0;

    bool ok;

    if (name_len > 6 && !memcmp(name, "items:", 6))
        i = 6;
    size_t digits_at = i;
    /* Ten digits is already beyond any class id; stop before id can wrap. */
    while (i < name_len && name[i] >= '0' && name[i] <= '9' && i - digits_at < 10)
        id = id * 10 + (unsigned long)(name[i++] - '0');
    ok = i > digits_at && i + 1 < name_len && name[i] == ':';
    if (ok) {
        *class_id = id;
        *field = name + i + 1;
        *field_len = name_len - i - 1;
    }
    return ok;
}

/* "STAT <name> <value>": the value is the rest of the line, spaces and
 * all, so a future value with a space is kept whole. */
static enum stats_parse_error parse_stat_line(struct stats_parser *p, struct stats_parse_event *ev)
{
    char *name = p->line + 5;
    char *sp = memchr(name, ' ', p->len - 5);
    size_t name_len = sp ? (size_t)(sp - name) : p->len - 5;
    enum stats_parse_error err = STATS_PARSE_E_NONE;

    if (name_len == 0) {
        err = STATS_PARSE_E_BAD_STAT;
    } else {
        ev->kind = STATS_EV_STAT;
        ev->name = name;
        ev->name_len = name_len;
        if (sp) {
            *sp = '\0'; /* our own copy of the line, never the caller's */
            ev->value = sp + 1;
            ev->value_len = p->len - 5 - name_len - 1;
        }
        p->in_block = true;
    }
    return err;
}

/* ERROR, CLIENT_ERROR <msg>, SERVER_ERROR <msg>; false if none of them. */
static bool parse_error_line(struct stats_parser *p, struct stats_parse_event *ev)
{
    static const struct {
        const char *word;
        enum stats_error_reply kind;
    } words[] = {
        { "ERROR", STATS_REPLY_ERROR },
        { "CLIENT_ERROR", STATS_REPLY_CLIENT_ERROR },
        { "SERVER_ERROR", STATS_REPLY_SERVER_ERROR },
    };
    bool found = false;

    for (size_t i = 0; i < sizeof words / sizeof words[0] && !found; i++) {
        size_t wl = strlen(words[i].word);
        if (p->len < wl || memcmp(p->line, words[i].word, wl) ||
            (p->len > wl && p->line[wl] != ' '))
            continue;
        found = true;
        ev->kind = STATS_EV_ERROR_REPLY;
        ev->error_reply = words[i].kind;
        ev->value = p->len > wl ? p->line + wl + 1 : "";
        ev->value_len = p->len > wl ? p->len - wl - 1 : 0;
        /* memcached sends an error line instead of a block (it builds the
         * block before sending), so it ends whatever was open. */
        p->in_block = false;
    }
    return found;
}

/* Turns the complete line in p->line (terminator stripped, NUL-terminated)
 * into an event. */
static enum stats_parse_result classify_line(struct stats_parser *p, struct stats_parse_event *ev)
{
    enum stats_parse_error err = STATS_PARSE_E_NONE;

    memset(ev, 0, sizeof *ev);
    ev->name = ev->value = "";
    if (memchr(p->line, '\0', p->len)) {
        /* names and values are handed out as C strings */
        err = STATS_PARSE_E_NUL_BYTE;
    } else if (p->len > 5 && !memcmp(p->line, "STAT ", 5)) {
        err = parse_stat_line(p, ev);
    } else if (p->len == 3 && !memcmp(p->line, "END", 3)) {
        ev->kind = STATS_EV_END;
        p->in_block = false;
    } else if (p->len > 8 && !memcmp(p->line, "VERSION ", 8)) {
        ev->kind = STATS_EV_VERSION;
        ev->value = p->line + 8;
        ev->value_len = p->len - 8;
        if (p->in_block)
            err = STATS_PARSE_E_UNEXPECTED;
    } else if (!parse_error_line(p, ev)) {
        err = STATS_PARSE_E_UNKNOWN_LINE;
    }
    p->error = err;
    return err == STATS_PARSE_E_NONE ? STATS_PARSE_OK : STATS_PARSE_ERROR;
}

enum stats_parse_result stats_parse_next(struct stats_parser *p, const char *buf, size_t len,
                                         size_t *consumed, struct stats_parse_event *ev)
{
    enum stats_parse_result rc = STATS_PARSE_ERROR;
    const char *nl = p->error == STATS_PARSE_E_NONE ? memchr(buf, '\n', len) : NULL;
    size_t take = nl ? (size_t)(nl - buf) + 1 : len;

    *consumed = 0;
    if (p->error != STATS_PARSE_E_NONE) {
        /* sticky: the stream is out of step until reset */
    } else if (p->len + take > STATS_PARSE_LINE_MAX) {
        p->error = STATS_PARSE_E_LINE_TOO_LONG;
    } else {
        memcpy(p->line + p->len, buf, take);
        p->len += take;
        *consumed = take;
        rc = STATS_PARSE_NEED_MORE;
        if (nl) {
            p->len--; /* the '\n' */
            if (p->len > 0 && p->line[p->len - 1] == '\r')
                p->len--;
            p->line[p->len] = '\0';
            p->lines++;
            rc = classify_line(p, ev);
            /* The event's strings stay in line[] until the next call
             * overwrites them; len only counts a partial line. */
            p->len = 0;
        }
    }
    return rc;
}

/* ---- kv lists ------------------------------------------------------ */

void stats_kv_list_init(struct stats_kv_list *l, uint32_t max_fields, uint32_t max_text)
{
    *l = (struct stats_kv_list){ .max_fields = max_fields, .max_text = max_text };
    buf_init(&l->text, (size_t)max_text + 1); /* + the NUL buf keeps after the last byte */
}

void stats_kv_list_fini(struct stats_kv_list *l)
{
    free(l->kv);
    buf_free(&l->text);
    stats_kv_list_init(l, l->max_fields, l->max_text);
}

void stats_kv_list_clear(struct stats_kv_list *l)
{
    l->n = 0;
    buf_reset(&l->text);
}

/* Room for need entries in l->kv and more_text bytes after l->text. Both
 * grow rather than preallocate: a real sample uses ~5 % of the bounds. */
static bool kv_list_reserve(struct stats_kv_list *l, uint32_t need, size_t more_text)
{
    return need <= l->max_fields && l->text.len + more_text <= l->max_text &&
           BUF_GROW(l->kv, l->cap, need) && !buf_reserve(&l->text, more_text);
}

bool stats_kv_list_add(struct stats_kv_list *l, const char *name, size_t name_len,
                       const char *value, size_t value_len)
{
    bool ok = name_len <= UINT16_MAX && value_len <= UINT16_MAX &&
              kv_list_reserve(l, l->n + 1, name_len + 1 + value_len + 1);

    if (ok) { /* the room is there: the appends cannot fail */
        struct stats_kv *kv = &l->kv[l->n++];
        kv->name_off = (uint32_t)l->text.len;
        kv->name_len = (uint16_t)name_len;
        buf_append(&l->text, name, name_len);
        buf_append(&l->text, "", 1);
        kv->value_off = (uint32_t)l->text.len;
        kv->value_len = (uint16_t)value_len;
        buf_append(&l->text, value, value_len);
        buf_append(&l->text, "", 1);
        kv->has_num = stats_parse_int64(value, value_len, &kv->num);
        if (!kv->has_num)
            kv->num = 0;
    }
    return ok;
}

int stats_kv_list_copy(struct stats_kv_list *dst, const struct stats_kv_list *src)
{
    bool ok;

    stats_kv_list_clear(dst);
    dst->max_fields = src->max_fields;
    dst->max_text = src->max_text;
    dst->text.max = src->text.max; /* the bounds go with the contents */
    ok = kv_list_reserve(dst, src->n, src->text.len);
    if (ok) {
        if (src->n)
            memcpy(dst->kv, src->kv, (size_t)src->n * sizeof *src->kv);
        buf_append(&dst->text, src->text.data, src->text.len);
        dst->n = src->n;
    }
    return ok ? 0 : -1;
}

const struct stats_kv *stats_kv_find(const struct stats_kv_list *l, const char *name)
{
    const struct stats_kv *found = NULL;
    size_t len = strlen(name);

    for (uint32_t i = 0; i < l->n && !found; i++)
        if (l->kv[i].name_len == len && !memcmp(stats_kv_name(l, i), name, len))
            found = &l->kv[i];
    return found;
}

bool stats_kv_equal(const struct stats_kv_list *a, const struct stats_kv_list *b)
{
    /* Offsets follow from the lengths, so equal text and lengths is enough. */
    bool eq = a->n == b->n && a->text.len == b->text.len;

    for (uint32_t i = 0; eq && i < a->n; i++)
        eq = a->kv[i].name_len == b->kv[i].name_len && a->kv[i].value_len == b->kv[i].value_len;
    return eq && (a->text.len == 0 || !memcmp(a->text.data, b->text.data, a->text.len));
}

/* ---- the sample ---------------------------------------------------- */

void stats_sample_init(struct stats_sample *s)
{
    memset(s, 0, sizeof *s);
    stats_kv_list_init(&s->stats, STATS_LIST_FIELDS_MAX, STATS_LIST_TEXT_MAX);
    stats_kv_list_init(&s->settings, STATS_LIST_FIELDS_MAX, STATS_LIST_TEXT_MAX);
    stats_kv_list_init(&s->slab_globals, STATS_LIST_FIELDS_MAX, STATS_LIST_TEXT_MAX);
    for (unsigned i = 0; i < STATS_CLASS_ID_LIMIT; i++)
        stats_kv_list_init(&s->classes[i].kv, STATS_CLASS_FIELDS_MAX, STATS_CLASS_TEXT_MAX);
}

void stats_sample_fini(struct stats_sample *s)
{
    stats_kv_list_fini(&s->stats);
    stats_kv_list_fini(&s->settings);
    stats_kv_list_fini(&s->slab_globals);
    for (unsigned i = 0; i < STATS_CLASS_ID_LIMIT; i++)
        stats_kv_list_fini(&s->classes[i].kv);
    stats_sample_init(s);
}

void stats_sample_clear(struct stats_sample *s, unsigned which)
{
    s->t_ns = 0;
    s->mono_ns = s->rtt_ns = s->seq = s->connection = 0;
    s->requested = s->settings_fresh = s->settings_changed = false;
    if (which & STATS_R_GENERAL)
        stats_kv_list_clear(&s->stats);
    if (which & STATS_R_SETTINGS) {
        stats_kv_list_clear(&s->settings);
        s->has_settings = false;
    }
    if (which & STATS_R_VERSION) {
        s->version[0] = '\0';
        s->has_version = false;
    }
    /* Classes mix slabs and items, so either clears the whole merge. */
    if (which & (STATS_R_SLABS | STATS_R_ITEMS)) {
        stats_kv_list_clear(&s->slab_globals);
        for (unsigned i = 0; i <= s->max_class_id && i < STATS_CLASS_ID_LIMIT; i++) {
            s->classes[i].present = false;
            s->classes[i].sources = 0;
            stats_kv_list_clear(&s->classes[i].kv);
        }
        s->n_classes = 0;
        s->max_class_id = 0;
        s->classes_partial = 0;
    }
    s->fields_dropped = 0;
}

int stats_sample_copy(struct stats_sample *dst, const struct stats_sample *src)
{
    int rc = -1;

    stats_sample_clear(dst, STATS_R_ALL);
    if (stats_kv_list_copy(&dst->stats, &src->stats) ||
        stats_kv_list_copy(&dst->settings, &src->settings) ||
        stats_kv_list_copy(&dst->slab_globals, &src->slab_globals))
        goto fail;
    for (unsigned i = 0; i <= src->max_class_id && i < STATS_CLASS_ID_LIMIT; i++) {
        if (!src->classes[i].present)
            continue;
        if (stats_kv_list_copy(&dst->classes[i].kv, &src->classes[i].kv))
            goto fail;
        dst->classes[i].present = true;
        dst->classes[i].sources = src->classes[i].sources;
    }
    dst->t_ns = src->t_ns;
    dst->mono_ns = src->mono_ns;
    dst->rtt_ns = src->rtt_ns;
    dst->seq = src->seq;
    dst->connection = src->connection;
    dst->requested = src->requested;
    dst->settings_fresh = src->settings_fresh;
    dst->settings_changed = src->settings_changed;
    dst->has_settings = src->has_settings;
    dst->has_version = src->has_version;
    memcpy(dst->version, src->version, sizeof dst->version);
    dst->n_classes = src->n_classes;
    dst->max_class_id = src->max_class_id;
    dst->fields_dropped = src->fields_dropped;
    dst->classes_partial = src->classes_partial;
    rc = 0;
    goto out;
fail:
    /* max_class_id tells clear how far classes may be dirty. */
    dst->max_class_id = STATS_CLASS_ID_LIMIT - 1;
    stats_sample_clear(dst, STATS_R_ALL);
out:
    return rc;
}

bool stats_sample_add(struct stats_sample *s, enum stats_reply from, const char *name,
                      size_t name_len, const char *value, size_t value_len)
{
    struct stats_kv_list *l = NULL;
    struct stats_class *c = NULL;
    unsigned long id = 0;
    const char *field;
    size_t field_len;
    bool ok;

    switch (from) {
    case STATS_R_GENERAL: l = &s->stats; break;
    case STATS_R_SETTINGS: l = &s->settings; break;
    case STATS_R_SLABS:
    case STATS_R_ITEMS:
        l = &s->slab_globals;
        /* Slabs names are "N:f", items names "items:N:f"; a slabs line
         * named "items:..." or an items line without the prefix is not a
         * class field, so it stays global under its full name. */
        if (stats_parse_class_name(name, name_len, &id, &field, &field_len) &&
            id < STATS_CLASS_ID_LIMIT &&
            (from == STATS_R_ITEMS) == (name_len > 6 && !memcmp(name, "items:", 6))) {
            c = &s->classes[id];
            l = &c->kv;
            name = field;
            name_len = field_len;
        }
        break;
    case STATS_R_VERSION: break;
    }
    ok = l && stats_kv_list_add(l, name, name_len, value, value_len);
    if (ok && c) {
        if (!c->present) {
            c->present = true;
            s->n_classes++;
            if (id > s->max_class_id)
                s->max_class_id = (unsigned)id;
        }
        c->sources |= (unsigned)from;
    }
    if (!ok)
        s->fields_dropped++;
    return ok;
}

void stats_sample_set_version(struct stats_sample *s, const char *v, size_t len)
{
    if (len >= sizeof s->version)
        len = sizeof s->version - 1;
    memcpy(s->version, v, len);
    s->version[len] = '\0';
    s->has_version = true;
}

unsigned stats_sample_drop_partial(struct stats_sample *s)
{
    unsigned dropped = 0, max_id = 0;

    for (unsigned i = 0; i <= s->max_class_id && i < STATS_CLASS_ID_LIMIT; i++) {
        struct stats_class *c = &s->classes[i];
        if (c->present && !(c->sources & STATS_R_SLABS)) {
            c->present = false;
            c->sources = 0;
            stats_kv_list_clear(&c->kv);
            s->n_classes--;
            dropped++;
        } else if (c->present) {
            max_id = i;
        }
    }
    s->max_class_id = max_id;
    s->classes_partial += dropped;
    return dropped;
}

const struct stats_kv_list *stats_sample_class(const struct stats_sample *s, unsigned class_id)
{
    return class_id < STATS_CLASS_ID_LIMIT && s->classes[class_id].present
               ? &s->classes[class_id].kv
               : NULL;
}

static bool kv_num(const struct stats_kv *kv, int64_t *v)
{
    bool ok = kv && kv->has_num;

    if (ok)
        *v = kv->num;
    return ok;
}

static const char *kv_text(const struct stats_kv_list *l, const struct stats_kv *kv)
{
    return kv ? l->text.data + kv->value_off : NULL;
}

bool stats_sample_get(const struct stats_sample *s, unsigned class_id, const char *field,
                      int64_t *v)
{
    const struct stats_kv_list *l = stats_sample_class(s, class_id);
    return l && kv_num(stats_kv_find(l, field), v);
}

const char *stats_sample_get_text(const struct stats_sample *s, unsigned class_id,
                                  const char *field)
{
    const struct stats_kv_list *l = stats_sample_class(s, class_id);
    return l ? kv_text(l, stats_kv_find(l, field)) : NULL;
}

bool stats_sample_global(const struct stats_sample *s, const char *name, int64_t *v)
{
    const struct stats_kv *kv = stats_kv_find(&s->stats, name);
    if (!kv)
        kv = stats_kv_find(&s->slab_globals, name);
    return kv_num(kv, v);
}

const char *stats_sample_global_text(const struct stats_sample *s, const char *name)
{
    const struct stats_kv *kv = stats_kv_find(&s->stats, name);

    return kv ? kv_text(&s->stats, kv)
              : kv_text(&s->slab_globals, stats_kv_find(&s->slab_globals, name));
}

bool stats_sample_setting(const struct stats_sample *s, const char *name, int64_t *v)
{
    return s->has_settings && kv_num(stats_kv_find(&s->settings, name), v);
}

const char *stats_sample_setting_text(const struct stats_sample *s, const char *name)
{
    return s->has_settings ? kv_text(&s->settings, stats_kv_find(&s->settings, name)) : NULL;
}

/* ---- a pipelined batch ---------------------------------------------- */

/* The order a batch is sent and answered in. `stats items` comes before
 * `stats slabs` so that every class items names is named by slabs too
 * (issue 18; the argument from memcached's sources is at enum
 * stats_reply in stats_parse.h). `stats` stays next to `stats items`: its
 * `bytes` is checked against the classes' summed mem_requested. */
static const struct {
    enum stats_reply bit;
    const char *cmd;
} batch_cmds[] = {
    { STATS_R_GENERAL, "stats\r\n" },     { STATS_R_ITEMS, "stats items\r\n" },
    { STATS_R_SLABS, "stats slabs\r\n" }, { STATS_R_SETTINGS, "stats settings\r\n" },
    { STATS_R_VERSION, "version\r\n" },
};

/* The reply being read: the first pending one in the batch's order. */
static unsigned batch_current(unsigned pending)
{
    for (size_t i = 0; i < sizeof batch_cmds / sizeof batch_cmds[0]; i++)
        if (pending & batch_cmds[i].bit)
            return batch_cmds[i].bit;
    return 0;
}

size_t stats_parse_batch_command(unsigned which, char *out, size_t cap)
{
    size_t len = 0;

    for (size_t i = 0; i < sizeof batch_cmds / sizeof batch_cmds[0]; i++) {
        size_t cl = strlen(batch_cmds[i].cmd);
        if (!(which & batch_cmds[i].bit))
            continue;
        if (len + cl + 1 > cap) {
            len = 0;
            break;
        }
        memcpy(out + len, batch_cmds[i].cmd, cl);
        len += cl;
    }
    if (cap > 0)
        out[len] = '\0';
    return len;
}

void stats_parse_batch_begin(struct stats_parse_batch *b, struct stats_sample *s, unsigned which)
{
    stats_parse_init(&b->parser);
    b->sample = s;
    b->expect = which & STATS_R_ALL;
    b->pending = b->expect;
    b->refused = 0;
    b->error = STATS_PARSE_E_NONE;
    b->refusal[0] = '\0';
    stats_sample_clear(s, b->expect);
}

static void batch_refuse(struct stats_parse_batch *b, unsigned current,
                         const struct stats_parse_event *ev)
{
    static const char *const kinds[] = { "ERROR", "CLIENT_ERROR", "SERVER_ERROR" };

    b->refused |= current;
    if (b->refusal[0] == '\0') {
        size_t cap = sizeof b->refusal;
        const char *k = kinds[ev->error_reply];
        size_t kl = strlen(k);
        size_t ml = ev->value_len;
        if (kl + 1 + ml >= cap)
            ml = cap - kl - 2;
        memcpy(b->refusal, k, kl);
        b->refusal[kl] = ml ? ' ' : '\0';
        memcpy(b->refusal + kl + 1, ev->value, ml);
        b->refusal[kl + 1 + ml] = '\0';
    }
}

/* One event of the reply `current`; STATS_PARSE_E_UNEXPECTED if it cannot
 * belong there (the pipeline is out of step). */
static enum stats_parse_error batch_event(struct stats_parse_batch *b, unsigned current,
                                          const struct stats_parse_event *ev)
{
    enum stats_parse_error err = STATS_PARSE_E_NONE;
    bool want_version = current == STATS_R_VERSION;

    switch (ev->kind) {
    case STATS_EV_STAT:
        if (want_version)
            err = STATS_PARSE_E_UNEXPECTED;
        else /* a dropped field is counted in the sample, not a stream error */
            (void)stats_sample_add(b->sample, (enum stats_reply)current, ev->name, ev->name_len,
                                   ev->value, ev->value_len);
        break;
    case STATS_EV_END:
        if (want_version)
            err = STATS_PARSE_E_UNEXPECTED;
        else if (current == STATS_R_SETTINGS)
            b->sample->has_settings = true;
        break;
    case STATS_EV_VERSION:
        if (!want_version)
            err = STATS_PARSE_E_UNEXPECTED;
        else
            stats_sample_set_version(b->sample, ev->value, ev->value_len);
        break;
    case STATS_EV_ERROR_REPLY:
        /* An error replaces the whole reply, so the pipeline stays in
         * step: move on to the next expected reply. */
        if (current == STATS_R_SETTINGS) {
            stats_kv_list_clear(&b->sample->settings);
            b->sample->has_settings = false;
        }
        batch_refuse(b, current, ev);
        break;
    }
    if (err == STATS_PARSE_E_NONE && ev->kind != STATS_EV_STAT)
        b->pending &= ~current;
    return err;
}

enum stats_parse_result stats_parse_batch_feed(struct stats_parse_batch *b, const char *buf,
                                               size_t len, size_t *consumed)
{
    enum stats_parse_result rc = STATS_PARSE_NEED_MORE;
    size_t off = 0;

    if (b->error == STATS_PARSE_E_NONE && b->expect == 0)
        b->error = STATS_PARSE_E_BAD_BATCH;
    while (b->error == STATS_PARSE_E_NONE && b->pending && off < len) {
        struct stats_parse_event ev;
        size_t used;
        unsigned current = batch_current(b->pending);
        enum stats_parse_result r = stats_parse_next(&b->parser, buf + off, len - off, &used, &ev);

        off += used;
        if (r == STATS_PARSE_NEED_MORE)
            break;
        b->error = r == STATS_PARSE_ERROR ? b->parser.error : batch_event(b, current, &ev);
    }
    if (b->error != STATS_PARSE_E_NONE && b->error != STATS_PARSE_E_ERROR_REPLY) {
        rc = STATS_PARSE_ERROR;
    } else if (b->pending == 0) {
        if ((b->expect & (STATS_R_SLABS | STATS_R_ITEMS)) == (STATS_R_SLABS | STATS_R_ITEMS))
            (void)stats_sample_drop_partial(b->sample);
        rc = b->refused & STATS_R_REQUIRED ? STATS_PARSE_REFUSED : STATS_PARSE_OK;
        if (rc == STATS_PARSE_REFUSED)
            b->error = STATS_PARSE_E_ERROR_REPLY;
    }
    *consumed = off;
    return rc;
}

const char *stats_sample_setting_lookup(void *sample, const char *name)
{
    const struct stats_sample *s = sample;
    return s->has_settings ? stats_sample_setting_text(s, name) : NULL;
}
