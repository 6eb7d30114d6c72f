/* top_view: snapshots of a memcached's slab classes and their rendering
 * (see top_view.h for the contract). */
#include "cli/top_view.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* memcached's counters that make up ops (top_ops_fields) */
#define TOP_OPS_FIELDS 9

/* --- sort keys --------------------------------------------------------------- */

static const struct {
    const char *name;
    int letter;
    const char *title;
} top_sorts[TOP_SORT__COUNT] = {
#define TOP_SORT_ROW(n, l, t) { #n, l, t },
    TOP_SORTS(TOP_SORT_ROW)
#undef TOP_SORT_ROW
};

const char *top_sort_name(enum top_sort k)
{
    return (unsigned)k < TOP_SORT__COUNT ? top_sorts[k].name : "?";
}

int top_sort_from_letter(int c)
{
    for (int k = 0; k < TOP_SORT__COUNT; k++)
        if (top_sorts[k].letter == c)
            return k;
    return -1;
}

int top_view_key(struct top_view_opts *o, int c)
{
    int k = top_sort_from_letter(c);
    if (c == 'q' || c == 'Q' || c == 3 /* ^C without ISIG */)
        return -1;
    if (c == 'r' || c == 'R') {
        o->reverse = !o->reverse;
        return 1;
    }
    if (c == 't' || c == 'T')
        return TOP_KEY_TARGET;
    if (k < 0)
        return 0;
    /* a new sort starts its own way round: reverse was for the last one */
    o->sort = (enum top_sort)k;
    o->reverse = false;
    return 1;
}

/* --- snapshots --------------------------------------------------------------- */

static void top_class_init(struct top_class *c, unsigned id)
{
    c->id = id;
    c->chunk_size = c->pages = c->total_chunks = c->used_chunks = TOP_UNKNOWN;
    c->items = c->mem_requested = c->evicted = c->cmd_set = TOP_UNKNOWN;
}

void top_snapshot_init(struct top_snapshot *s)
{
    s->t_ns = 0;
    s->source[0] = s->version[0] = '\0';
    s->uptime = s->bytes = s->limit_maxbytes = s->total_malloced = s->curr_items = TOP_UNKNOWN;
    s->get_hits = s->get_misses = s->cmd_get = s->cmd_set = s->evictions = TOP_UNKNOWN;
    s->ops = TOP_UNKNOWN;
    s->n_classes = 0;
    s->target[0] = '\0';
    s->n_targets = 0;
}

const char *top_next_target(const struct top_snapshot *s)
{
    if (s->n_targets < 2)
        return NULL;
    for (unsigned i = 0; i < s->n_targets; i++)
        if (!strcmp(s->targets[i], s->target))
            return s->targets[(i + 1) % s->n_targets];
    return s->targets[0];
}

static void top_copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static int64_t top_global(const struct stats_sample *sm, const char *name)
{
    int64_t v;
    return stats_sample_global(sm, name, &v) && v >= 0 ? v : TOP_UNKNOWN;
}

/* A number of a struct by its memcached name. */
struct top_field {
    const char *name;
    size_t off;
};

/* Sets the field of base named name (every one of that name; none when
 * the table has no such name). */
static void top_field_set(const struct top_field *t, size_t n, void *base, const char *name,
                          int64_t v)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, t[i].name))
            *(int64_t *)((char *)base + t[i].off) = v;
}

/* The totals of the header under memcached's `stats` (and `stats slabs`)
 * names, and the counters whose sum is ops. */
static const struct top_field top_globals[] = {
    { "uptime", offsetof(struct top_snapshot, uptime) },
    { "bytes", offsetof(struct top_snapshot, bytes) },
    { "limit_maxbytes", offsetof(struct top_snapshot, limit_maxbytes) },
    { "total_malloced", offsetof(struct top_snapshot, total_malloced) },
    { "curr_items", offsetof(struct top_snapshot, curr_items) },
    { "get_hits", offsetof(struct top_snapshot, get_hits) },
    { "get_misses", offsetof(struct top_snapshot, get_misses) },
    { "cmd_get", offsetof(struct top_snapshot, cmd_get) },
    { "cmd_set", offsetof(struct top_snapshot, cmd_set) },
    { "evictions", offsetof(struct top_snapshot, evictions) },
};
static const char *const top_ops_fields[TOP_OPS_FIELDS] = {
    "cmd_get",   "cmd_set",     "cmd_touch", "delete_hits", "delete_misses",
    "incr_hits", "incr_misses", "decr_hits", "decr_misses"
};

/* A total or an ops part by its memcached name (any other name: nothing). */
static void top_global_set(struct top_snapshot *s, int64_t ops_parts[TOP_OPS_FIELDS],
                           const char *name, int64_t v)
{
    top_field_set(top_globals, sizeof top_globals / sizeof top_globals[0], s, name, v);
    for (size_t i = 0; i < TOP_OPS_FIELDS; i++)
        if (!strcmp(name, top_ops_fields[i]))
            ops_parts[i] = v;
}

/* ops: the sum of the parts memcached gave, known once cmd_get and cmd_set are. */
static void top_ops_sum(struct top_snapshot *s, const int64_t ops_parts[TOP_OPS_FIELDS])
{
    if (s->cmd_get < 0 || s->cmd_set < 0)
        return;
    s->ops = 0;
    for (size_t i = 0; i < TOP_OPS_FIELDS; i++)
        s->ops += ops_parts[i] > 0 ? ops_parts[i] : 0;
}

static void top_ops_init(int64_t ops_parts[TOP_OPS_FIELDS])
{
    for (size_t i = 0; i < TOP_OPS_FIELDS; i++)
        ops_parts[i] = TOP_UNKNOWN;
}

static int64_t top_class_field(const struct stats_sample *sm, unsigned id, const char *name)
{
    int64_t v;
    return stats_sample_get(sm, id, name, &v) && v >= 0 ? v : TOP_UNKNOWN;
}

void top_snapshot_from_sample(struct top_snapshot *s, const struct stats_sample *sm, uint64_t t_ns,
                              const char *source)
{
    int64_t ops_parts[TOP_OPS_FIELDS];
    top_snapshot_init(s);
    top_ops_init(ops_parts);
    s->t_ns = t_ns;
    top_copy_text(s->source, sizeof s->source, source);
    top_copy_text(s->version, sizeof s->version, stats_sample_global_text(sm, "version"));
    for (size_t i = 0; i < sizeof top_globals / sizeof top_globals[0]; i++)
        top_global_set(s, ops_parts, top_globals[i].name, top_global(sm, top_globals[i].name));
    for (size_t i = 0; i < TOP_OPS_FIELDS; i++)
        top_global_set(s, ops_parts, top_ops_fields[i], top_global(sm, top_ops_fields[i]));
    top_ops_sum(s, ops_parts);
    for (unsigned id = 0; id <= sm->max_class_id && id < TOP_CLASSES_MAX; id++) {
        if (!stats_sample_class(sm, id))
            continue;
        struct top_class *c = &s->classes[s->n_classes++];
        top_class_init(c, id);
        c->chunk_size = top_class_field(sm, id, "chunk_size");
        c->pages = top_class_field(sm, id, "total_pages");
        c->total_chunks = top_class_field(sm, id, "total_chunks");
        c->used_chunks = top_class_field(sm, id, "used_chunks");
        c->cmd_set = top_class_field(sm, id, "cmd_set");
        c->items = top_class_field(sm, id, "number");
        c->mem_requested = top_class_field(sm, id, "mem_requested");
        c->evicted = top_class_field(sm, id, "evicted");
        /* `stats items` skips a class without items: none, not unknown */
        if (!(sm->classes[id].sources & STATS_R_ITEMS)) {
            c->items = c->items < 0 ? 0 : c->items;
            c->mem_requested = c->mem_requested < 0 ? 0 : c->mem_requested;
        }
        if (!(sm->classes[id].sources & STATS_R_SLABS) && c->pages < 0)
            c->pages = 0;
    }
}

/* --- a small JSON reader: only what /api/slabs needs -------------------------- */

struct tj {
    const char *p, *end;
    unsigned depth;
    const char *why; /* the first problem */
};

static bool tj_fail(struct tj *j, const char *why)
{
    if (!j->why)
        j->why = why;
    return false;
}

static void tj_ws(struct tj *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool tj_peek(struct tj *j, char c)
{
    tj_ws(j);
    return j->p < j->end && *j->p == c;
}

static bool tj_eat(struct tj *j, char c)
{
    if (!tj_peek(j, c))
        return false;
    j->p++;
    return true;
}

/* A string; its text (escapes decoded, \u as '?') into out when it fits
 * in cap - 1 bytes (*fits), else only consumed. */
static bool tj_string(struct tj *j, char *out, size_t cap, bool *fits)
{
    size_t n = 0;
    *fits = true;
    if (!tj_eat(j, '"'))
        return tj_fail(j, "a string expected");
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if ((unsigned char)c < 0x20)
            return tj_fail(j, "a control byte in a string");
        if (c == '\\') {
            if (j->p >= j->end)
                break;
            char e = *j->p++;
            switch (e) {
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u':
                for (int i = 0; i < 4; i++, j->p++)
                    if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p)
                        return tj_fail(j, "a bad \\u escape");
                c = '?';
                break;
            case '"':
            case '\\':
            case '/': c = e; break;
            default: return tj_fail(j, "a bad escape in a string");
            }
        }
        if (n + 1 < cap)
            out[n++] = c;
        else
            *fits = false;
    }
    if (j->p >= j->end)
        return tj_fail(j, "a string without its end");
    j->p++;
    if (cap)
        out[n < cap ? n : cap - 1] = '\0';
    return true;
}

/* A number; *is_int when it is a whole int64 (no fraction or exponent). */
static bool tj_number(struct tj *j, int64_t *v, bool *is_int)
{
    bool neg = false, digits = false;
    uint64_t acc = 0;
    *is_int = true;
    if (j->p < j->end && *j->p == '-') {
        neg = true;
        j->p++;
    }
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        unsigned d = (unsigned)(*j->p++ - '0');
        digits = true;
        if (acc > (UINT64_MAX - d) / 10)
            *is_int = false;
        else
            acc = acc * 10 + d;
    }
    if (!digits)
        return tj_fail(j, "a value expected");
    while (j->p < j->end && strchr(".eE+-0123456789", *j->p) && *j->p) {
        *is_int = false;
        j->p++;
    }
    if (acc > (uint64_t)INT64_MAX)
        *is_int = false;
    *v = *is_int ? (neg ? -(int64_t)acc : (int64_t)acc) : 0;
    return true;
}

static bool tj_value_skip(struct tj *j);

typedef bool (*tj_member_fn)(struct tj *j, const char *name, bool fits, void *ud);

/* An object: member() consumes each member's value. */
static bool tj_object(struct tj *j, tj_member_fn member, void *ud)
{
    char name[TOP_JSON_NAME_MAX + 1];
    bool fits;
    if (!tj_eat(j, '{'))
        return tj_fail(j, "an object expected");
    if (++j->depth > TOP_JSON_DEPTH_MAX)
        return tj_fail(j, "nested too deep");
    if (!tj_eat(j, '}')) {
        do {
            if (!tj_string(j, name, sizeof name, &fits) || !tj_eat(j, ':'))
                return tj_fail(j, "a member name and ':' expected");
            if (!member(j, name, fits, ud))
                return false;
        } while (tj_eat(j, ','));
        if (!tj_eat(j, '}'))
            return tj_fail(j, "',' or '}' expected");
    }
    j->depth--;
    return true;
}

/* An array: element() consumes each element. */
static bool tj_array(struct tj *j, bool (*element)(struct tj *j, void *ud), void *ud)
{
    if (!tj_eat(j, '['))
        return tj_fail(j, "an array expected");
    if (++j->depth > TOP_JSON_DEPTH_MAX)
        return tj_fail(j, "nested too deep");
    if (!tj_eat(j, ']')) {
        do {
            if (!element(j, ud))
                return false;
        } while (tj_eat(j, ','));
        if (!tj_eat(j, ']'))
            return tj_fail(j, "',' or ']' expected");
    }
    j->depth--;
    return true;
}

static bool tj_skip_member(struct tj *j, const char *name, bool fits, void *ud)
{
    (void)name, (void)fits, (void)ud;
    return tj_value_skip(j);
}

static bool tj_skip_element(struct tj *j, void *ud)
{
    (void)ud;
    return tj_value_skip(j);
}

static bool tj_literal(struct tj *j, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n))
        return tj_fail(j, "a value expected");
    j->p += n;
    return true;
}

static bool tj_value_skip(struct tj *j)
{
    char scratch[1];
    bool fits, is_int;
    int64_t v;
    tj_ws(j);
    if (j->p >= j->end)
        return tj_fail(j, "a value expected");
    switch (*j->p) {
    case '{': return tj_object(j, tj_skip_member, NULL);
    case '[': return tj_array(j, tj_skip_element, NULL);
    case '"': return tj_string(j, scratch, sizeof scratch, &fits);
    case 't': return tj_literal(j, "true");
    case 'f': return tj_literal(j, "false");
    case 'n': return tj_literal(j, "null");
    default: return tj_number(j, &v, &is_int);
    }
}

/* A value that should be a whole number: *v, or TOP_UNKNOWN for anything
 * else (consumed either way). */
static bool tj_int(struct tj *j, int64_t *v)
{
    bool is_int;
    *v = TOP_UNKNOWN;
    tj_ws(j);
    if (j->p < j->end && (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))) {
        int64_t n;
        if (!tj_number(j, &n, &is_int))
            return false;
        if (is_int && n >= 0)
            *v = n;
        return true;
    }
    return tj_value_skip(j);
}

struct tj_class {
    struct top_class c;
    bool have_id;
    int64_t id;
};

/* One field of a class, under the name memcached gives it (or the flat
 * name of /api/run/classes). */
static void top_class_set(struct top_class *c, const char *name, int64_t v)
{
    static const struct top_field fields[] = {
        { "chunk_size", offsetof(struct top_class, chunk_size) },
        { "total_pages", offsetof(struct top_class, pages) },
        { "pages", offsetof(struct top_class, pages) },
        { "total_chunks", offsetof(struct top_class, total_chunks) },
        { "used_chunks", offsetof(struct top_class, used_chunks) },
        { "number", offsetof(struct top_class, items) },
        { "items", offsetof(struct top_class, items) },
        { "mem_requested", offsetof(struct top_class, mem_requested) },
        { "evicted", offsetof(struct top_class, evicted) },
        { "cmd_set", offsetof(struct top_class, cmd_set) },
    };
    top_field_set(fields, sizeof fields / sizeof fields[0], c, name, v);
}

static bool tj_class_field(struct tj *j, const char *name, bool fits, void *ud)
{
    struct tj_class *k = ud;
    int64_t v;
    if (!tj_int(j, &v))
        return false;
    if (fits)
        top_class_set(&k->c, name, v);
    return true;
}

static bool tj_class_member(struct tj *j, const char *name, bool fits, void *ud)
{
    struct tj_class *k = ud;
    if (fits && !strcmp(name, "fields"))
        return tj_peek(j, '{') ? tj_object(j, tj_class_field, k) : tj_value_skip(j);
    if (fits && !strcmp(name, "class_id")) {
        bool is_int;
        tj_ws(j);
        if (!tj_number(j, &k->id, &is_int) || !is_int)
            return tj_fail(j, "class_id is not a whole number");
        k->have_id = true;
        return true;
    }
    return tj_class_field(j, name, fits, ud);
}

struct tj_top {
    struct top_snapshot *s;
    int64_t ops_parts[TOP_OPS_FIELDS];
    bool have_stats; /* a whole sample, as top_snapshot_from_sample reads */
    char error[128];
};

static bool tj_class_element(struct tj *j, void *ud)
{
    struct top_snapshot *s = ((struct tj_top *)ud)->s;
    struct tj_class k = { .have_id = false };
    unsigned i;
    top_class_init(&k.c, 0);
    if (!tj_peek(j, '{'))
        return tj_value_skip(j); /* not a class: ignored */
    if (!tj_object(j, tj_class_member, &k))
        return false;
    if (!k.have_id || k.id < 0 || k.id >= TOP_CLASSES_MAX)
        return tj_fail(j, "a class without a class_id in 0..255");
    k.c.id = (unsigned)k.id;
    for (i = 0; i < s->n_classes && s->classes[i].id < k.c.id; i++)
        ;
    if (i < s->n_classes && s->classes[i].id == k.c.id)
        return tj_fail(j, "a class listed twice");
    memmove(&s->classes[i + 1], &s->classes[i], (s->n_classes - i) * sizeof s->classes[0]);
    s->classes[i] = k.c;
    s->n_classes++;
    return true;
}

/* One field of memcached's `stats` (or `stats slabs` globals): version
 * is text, the totals and ops parts numbers, the rest skipped. */
static bool tj_stats_member(struct tj *j, const char *name, bool fits, void *ud)
{
    struct tj_top *t = ud;
    int64_t v;
    bool sfits;
    if (fits && !strcmp(name, "version") && tj_peek(j, '"'))
        return tj_string(j, t->s->version, sizeof t->s->version, &sfits);
    if (!tj_int(j, &v))
        return false;
    if (fits)
        top_global_set(t->s, t->ops_parts, name, v);
    return true;
}

/* One name of "targets": kept when it fits and there is room. */
static bool tj_target_element(struct tj *j, void *ud)
{
    struct top_snapshot *s = ((struct tj_top *)ud)->s;
    char name[TOP_TARGET_MAX];
    bool fits;
    if (!tj_peek(j, '"'))
        return tj_value_skip(j);
    if (!tj_string(j, name, sizeof name, &fits))
        return false;
    if (fits && s->n_targets < TOP_TARGETS_MAX)
        memcpy(s->targets[s->n_targets++], name, sizeof name);
    return true;
}

static bool tj_top_member(struct tj *j, const char *name, bool fits, void *ud)
{
    struct tj_top *t = ud;
    int64_t v;
    bool sfits;
    if (!fits)
        return tj_value_skip(j);
    if (!strcmp(name, "classes"))
        return tj_array(j, tj_class_element, t);
    if (!strcmp(name, "targets") && tj_peek(j, '['))
        return tj_array(j, tj_target_element, t);
    if (!strcmp(name, "target") && tj_peek(j, '"')) {
        if (!tj_string(j, t->s->target, sizeof t->s->target, &sfits))
            return false;
        if (!sfits)
            t->s->target[0] = '\0';
        return true;
    }
    if (!strcmp(name, "stats") || !strcmp(name, "slab_globals")) {
        if (!tj_peek(j, '{'))
            return tj_value_skip(j);
        t->have_stats = true;
        return tj_object(j, tj_stats_member, t);
    }
    if (!strcmp(name, "error") && tj_peek(j, '"')) {
        if (!tj_string(j, t->error, sizeof t->error, &sfits))
            return false;
        return tj_fail(j, "the endpoint answered an error");
    }
    if (!tj_int(j, &v))
        return false;
    if (!strcmp(name, "t_ns"))
        t->s->t_ns = v > 0 ? (uint64_t)v : 0;
    else if (!strcmp(name, "total_malloced"))
        t->s->total_malloced = v;
    else if (!strcmp(name, "limit_maxbytes"))
        t->s->limit_maxbytes = v;
    return true;
}

/* The sum of one field over the classes that know it; unknown if none do. */
static int64_t top_class_sum(const struct top_snapshot *s, size_t off)
{
    int64_t sum = TOP_UNKNOWN;
    for (unsigned i = 0; i < s->n_classes; i++) {
        int64_t v = *(const int64_t *)((const char *)&s->classes[i] + off);
        if (v >= 0)
            sum = (sum < 0 ? 0 : sum) + v;
    }
    return sum;
}

int top_snapshot_from_json(struct top_snapshot *s, const char *json, size_t len, const char *source,
                           char *err, size_t errlen)
{
    struct tj j = { .p = json, .end = json + len, .depth = 0, .why = NULL };
    struct tj_top t = { .s = s, .error = "" };
    top_snapshot_init(s);
    top_ops_init(t.ops_parts);
    top_copy_text(s->source, sizeof s->source, source);
    if (!tj_object(&j, tj_top_member, &t) || (tj_ws(&j), j.p != j.end)) {
        if (t.error[0])
            snprintf(err, errlen, "the endpoint answered: %s", t.error);
        else
            snprintf(err, errlen, "not the JSON of /api/slabs: %s at byte %zu",
                     j.why ? j.why : "bytes after the object", (size_t)(j.p - json));
        s->n_classes = 0;
        return -1;
    }
    top_ops_sum(s, t.ops_parts);
    /* a whole sample: as from one, a class `stats items` left out holds
     * no items (none, not unknown) */
    for (unsigned i = 0; t.have_stats && i < s->n_classes; i++) {
        struct top_class *c = &s->classes[i];
        if (c->items < 0 && c->mem_requested < 0)
            c->items = c->mem_requested = 0;
    }
    /* without memcached's `stats`: what the classes add up to */
    if (s->cmd_set < 0)
        s->cmd_set = top_class_sum(s, offsetof(struct top_class, cmd_set));
    if (s->evictions < 0)
        s->evictions = top_class_sum(s, offsetof(struct top_class, evicted));
    if (s->curr_items < 0)
        s->curr_items = top_class_sum(s, offsetof(struct top_class, items));
    return 0;
}

/* --- rows ------------------------------------------------------------------ */

double top_rate(int64_t cur, int64_t prev, uint64_t dt_ns)
{
    if (cur < 0 || prev < 0 || cur < prev || dt_ns == 0)
        return NAN;
    return (double)(cur - prev) * 1e9 / (double)dt_ns;
}

struct top_row {
    const struct top_class *c;
    unsigned index;
    double key[TOP_SORT__COUNT]; /* NAN: unknown */
};

static double top_pct(int64_t part, int64_t whole)
{
    return part < 0 || whole <= 0 ? NAN : (double)part * 100.0 / (double)whole;
}

static double top_num(int64_t v)
{
    return v < 0 ? NAN : (double)v;
}

static const struct top_class *top_find_class(const struct top_snapshot *s, unsigned id)
{
    for (unsigned i = 0; s && i < s->n_classes; i++)
        if (s->classes[i].id == id)
            return &s->classes[i];
    return NULL;
}

static uint64_t top_dt(const struct top_snapshot *cur, const struct top_snapshot *prev)
{
    return prev && cur->t_ns > prev->t_ns ? cur->t_ns - prev->t_ns : 0;
}

static void top_row_fill(struct top_row *r, const struct top_snapshot *cur,
                         const struct top_snapshot *prev, unsigned index)
{
    const struct top_class *c = &cur->classes[index];
    const struct top_class *p = top_find_class(prev, c->id);
    uint64_t dt = top_dt(cur, prev);
    int64_t alloc = c->used_chunks >= 0 && c->chunk_size >= 0 ? c->used_chunks * c->chunk_size : -1;
    r->c = c;
    r->index = index;
    r->key[TOP_SORT_class] = c->id;
    r->key[TOP_SORT_chunk] = top_num(c->chunk_size);
    r->key[TOP_SORT_items] = top_num(c->items);
    r->key[TOP_SORT_pages] = top_num(c->pages);
    r->key[TOP_SORT_used] = top_pct(c->used_chunks, c->total_chunks);
    r->key[TOP_SORT_waste] = c->mem_requested < 0 ? NAN : top_pct(alloc - c->mem_requested, alloc);
    r->key[TOP_SORT_evict] = p ? top_rate(c->evicted, p->evicted, dt) : NAN;
    r->key[TOP_SORT_sets] = p ? top_rate(c->cmd_set, p->cmd_set, dt) : NAN;
}

/* <0 when a goes first. Unknown goes last either way round. */
static int top_row_cmp(const struct top_row *a, const struct top_row *b, enum top_sort k,
                       bool reverse)
{
    double x = a->key[k], y = b->key[k];
    int c = 0;
    if (isnan(x) || isnan(y)) {
        c = isnan(x) ? (isnan(y) ? 0 : 1) : -1;
    } else {
        c = x < y ? -1 : x > y;
        if (k != TOP_SORT_class)
            c = -c; /* largest first */
        if (reverse)
            c = -c;
    }
    if (c == 0)
        c = a->c->id < b->c->id ? -1 : a->c->id > b->c->id;
    return c;
}

static unsigned top_rows(const struct top_snapshot *cur, const struct top_snapshot *prev,
                         enum top_sort sort, bool reverse, struct top_row *rows)
{
    unsigned n = cur->n_classes < TOP_CLASSES_MAX ? cur->n_classes : TOP_CLASSES_MAX;
    if ((unsigned)sort >= TOP_SORT__COUNT)
        sort = TOP_SORT_class;
    for (unsigned i = 0; i < n; i++) {
        struct top_row r;
        unsigned at = i;
        top_row_fill(&r, cur, prev, i);
        /* insertion sort: at most 256 rows, and stable */
        while (at > 0 && top_row_cmp(&r, &rows[at - 1], sort, reverse) < 0) {
            rows[at] = rows[at - 1];
            at--;
        }
        rows[at] = r;
    }
    return n;
}

unsigned top_view_order(const struct top_snapshot *cur, const struct top_snapshot *prev,
                        enum top_sort sort, bool reverse, unsigned order[TOP_CLASSES_MAX])
{
    struct top_row rows[TOP_CLASSES_MAX];
    unsigned n = top_rows(cur, prev, sort, reverse, rows);
    for (unsigned i = 0; i < n; i++)
        order[i] = rows[i].index;
    return n;
}

/* --- text ------------------------------------------------------------------- */

#define TOP_FIELD_MAX 32

static const char *top_fmt_int(char *out, int64_t v)
{
    snprintf(out, TOP_FIELD_MAX, v < 0 ? "-" : "%lld", (long long)v);
    return out;
}

/* NAN: "-"; one decimal. */
static const char *top_fmt_1(char *out, double v)
{
    if (isnan(v))
        snprintf(out, TOP_FIELD_MAX, "-");
    else if (fabs(v) < 1e5)
        snprintf(out, TOP_FIELD_MAX, "%.1f", v);
    else
        snprintf(out, TOP_FIELD_MAX, "%.0f", v);
    return out;
}

/* 1023B, 1.5K, 830.0M, 1.0G (powers of 1024, as memcached's -m). */
static const char *top_fmt_bytes(char *out, int64_t v)
{
    static const char units[] = "KMGTPE";
    double d = (double)v;
    int u = -1;
    if (v < 0) {
        snprintf(out, TOP_FIELD_MAX, "-");
        return out;
    }
    if (v < 1024) {
        snprintf(out, TOP_FIELD_MAX, "%lldB", (long long)v);
        return out;
    }
    while (d >= 1024.0 && u < 5) {
        d /= 1024.0;
        u++;
    }
    snprintf(out, TOP_FIELD_MAX, "%.1f%c", d, units[u]);
    return out;
}

static const char *top_fmt_uptime(char *out, int64_t s)
{
    if (s < 0)
        snprintf(out, TOP_FIELD_MAX, "-");
    else
        snprintf(out, TOP_FIELD_MAX, "%lldd %02lld:%02lld:%02lld", (long long)(s / 86400),
                 (long long)(s / 3600 % 24), (long long)(s / 60 % 60), (long long)(s % 60));
    return out;
}

/* The screen being written: whole lines, each cut to width. */
struct top_out {
    char *buf;
    size_t cap, len;
    unsigned width, lines, max_lines;
    bool full;
    char line[TOP_WIDTH_MAX + 1];
    size_t line_len;
};

static void top_line(struct top_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends to the current line (cut at TOP_WIDTH_MAX). */
static void top_line(struct top_out *o, const char *fmt, ...)
{
    va_list ap;
    size_t room = sizeof o->line - o->line_len;
    va_start(ap, fmt);
    int n = vsnprintf(o->line + o->line_len, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->line_len += (size_t)n < room ? (size_t)n : room - 1;
}

/* Ends the current line: cut to width, then into the buffer if it fits
 * whole (with its \n and the final NUL) and the height allows. */
static void top_line_end(struct top_out *o)
{
    size_t n = o->line_len < o->width ? o->line_len : o->width;
    o->line_len = 0;
    if (o->full || (o->max_lines && o->lines >= o->max_lines) || o->cap - o->len < n + 2) {
        o->full = true;
        return;
    }
    memcpy(o->buf + o->len, o->line, n);
    o->len += n;
    o->buf[o->len++] = '\n';
    o->buf[o->len] = '\0';
    o->lines++;
}

static void top_render_header(struct top_out *o, const struct top_snapshot *cur,
                              const struct top_snapshot *prev, const struct top_view_opts *opts)
{
    char a[TOP_FIELD_MAX], b[TOP_FIELD_MAX], c[TOP_FIELD_MAX], d[TOP_FIELD_MAX];
    uint64_t dt = top_dt(cur, prev);
    int64_t alloc = 0, req = 0, pages = 0;
    for (unsigned i = 0; i < cur->n_classes; i++) {
        const struct top_class *k = &cur->classes[i];
        if (k->used_chunks > 0 && k->chunk_size > 0 && k->mem_requested >= 0) {
            alloc += k->used_chunks * k->chunk_size;
            req += k->mem_requested;
        }
        pages += k->pages > 0 ? k->pages : 0;
    }

    top_line(o, "slabtap top: %s", cur->source[0] ? cur->source : "?");
    if (cur->version[0])
        top_line(o, "  memcached %s", cur->version);
    if (cur->uptime >= 0)
        top_line(o, "  up %s", top_fmt_uptime(a, cur->uptime));
    top_line_end(o);
    /* a proxy with shadows: which memcached this is (t: the next) */
    if (cur->n_targets > 1) {
        unsigned at = 0;
        while (at < cur->n_targets && strcmp(cur->targets[at], cur->target))
            at++;
        top_line(o, "target: %s (%u of %u)", cur->target[0] ? cur->target : "primary",
                 at < cur->n_targets ? at + 1 : 1, cur->n_targets);
        top_line_end(o);
    }

    top_line(o, "mem: malloced %s / limit %s", top_fmt_bytes(a, cur->total_malloced),
             top_fmt_bytes(b, cur->limit_maxbytes));
    if (cur->total_malloced >= 0 && cur->limit_maxbytes > 0)
        top_line(o, " (%s%%)", top_fmt_1(a, top_pct(cur->total_malloced, cur->limit_maxbytes)));
    top_line(o, "  pages %lld  classes %u  items %s", (long long)pages, cur->n_classes,
             top_fmt_int(a, cur->curr_items));
    top_line_end(o);
    double waste = top_pct(alloc - req, alloc);
    top_line(o, "slabs: allocated %s  requested %s  waste %s%s", top_fmt_bytes(a, alloc),
             top_fmt_bytes(b, req), top_fmt_1(c, waste), isnan(waste) ? "" : "%");
    top_line_end(o);

    /* hit ratio over the interval; over memcached's lifetime without one */
    double hit = NAN;
    const char *hit_note = "";
    if (prev && prev->get_hits >= 0 && prev->get_misses >= 0 && cur->get_hits >= prev->get_hits &&
        cur->get_misses >= prev->get_misses &&
        cur->get_hits + cur->get_misses > prev->get_hits + prev->get_misses)
        hit = top_pct(cur->get_hits - prev->get_hits,
                      cur->get_hits - prev->get_hits + cur->get_misses - prev->get_misses);
    else if (cur->get_hits >= 0 && cur->get_misses >= 0 && cur->get_hits + cur->get_misses > 0) {
        hit = top_pct(cur->get_hits, cur->get_hits + cur->get_misses);
        hit_note = " (lifetime)";
    }
    const struct top_snapshot *p = prev ? prev : cur;
    top_line(o, "ops/s %s  get/s %s  set/s %s  evict/s %s",
             top_fmt_1(a, top_rate(cur->ops, p->ops, dt)),
             top_fmt_1(b, top_rate(cur->cmd_get, p->cmd_get, dt)),
             top_fmt_1(c, top_rate(cur->cmd_set, p->cmd_set, dt)),
             top_fmt_1(d, top_rate(cur->evictions, p->evictions, dt)));
    top_line(o, "  hit %s%s%s", top_fmt_1(a, hit), isnan(hit) ? "" : "%", hit_note);
    top_line_end(o);

    enum top_sort k = (unsigned)opts->sort < TOP_SORT__COUNT ? opts->sort : TOP_SORT_class;
    bool ascending = (k == TOP_SORT_class) != opts->reverse;
    top_line(o, "sort: %s %s", top_sorts[k].title, ascending ? "ascending" : "descending");
    if (opts->keys_help)
        top_line(o, "   keys: c k i p u w e s sort  r reverse it  %sq quit",
                 cur->n_targets > 1 ? "t target  " : "");
    top_line_end(o);
    if (opts->note) {
        top_line(o, "! %s", opts->note);
        top_line_end(o);
    }
    top_line_end(o); /* blank */
    top_line(o, "%5s %7s %10s %6s %6s %7s %9s %9s", top_sorts[TOP_SORT_class].title,
             top_sorts[TOP_SORT_chunk].title, top_sorts[TOP_SORT_items].title,
             top_sorts[TOP_SORT_pages].title, top_sorts[TOP_SORT_used].title,
             top_sorts[TOP_SORT_waste].title, top_sorts[TOP_SORT_evict].title,
             top_sorts[TOP_SORT_sets].title);
    top_line_end(o);
}

size_t top_view_render(const struct top_snapshot *cur, const struct top_snapshot *prev,
                       const struct top_view_opts *opts, char *out, size_t cap)
{
    static struct top_out zero;
    struct top_out o = zero;
    struct top_row rows[TOP_CLASSES_MAX];
    char f[8][TOP_FIELD_MAX];
    if (!cap)
        return 0;
    o.buf = out;
    o.cap = cap;
    o.width = opts->width && opts->width < TOP_WIDTH_MAX ? opts->width : TOP_WIDTH_MAX;
    o.max_lines = opts->height;
    out[0] = '\0';
    top_render_header(&o, cur, prev, opts);
    unsigned n = top_rows(cur, prev, opts->sort, opts->reverse, rows);
    if (n == 0) {
        top_line(&o, "(no slab classes yet: memcached has stored nothing)");
        top_line_end(&o);
    }
    for (unsigned i = 0; i < n; i++) {
        const struct top_row *r = &rows[i];
        top_line(&o, "%5u %7s %10s %6s %6s %7s %9s %9s", r->c->id,
                 top_fmt_int(f[0], r->c->chunk_size), top_fmt_int(f[1], r->c->items),
                 top_fmt_int(f[2], r->c->pages), top_fmt_1(f[3], r->key[TOP_SORT_used]),
                 top_fmt_1(f[4], r->key[TOP_SORT_waste]), top_fmt_1(f[5], r->key[TOP_SORT_evict]),
                 top_fmt_1(f[6], r->key[TOP_SORT_sets]));
        top_line_end(&o);
    }
    return o.len;
}

/* --- the running slabtap's run: GET /api/runs ------------------------------- */

/* The first "name": at or after p in [p, end), NULL when none. */
static const char *top_find(const char *p, const char *end, const char *name)
{
    size_t n = strlen(name);
    for (; p && p + n <= end; p++)
        if (!memcmp(p, name, n))
            return p + n;
    return NULL;
}

int top_current_run(const char *json, size_t len, int64_t *run_id, char *kind, size_t kindlen)
{
    const char *end = json + len, *cur = top_find(json, end, "\"current\":{");
    if (!cur)
        return -1;
    /* the current run's object: up to its closing brace (it nests none) */
    const char *close = cur;
    while (close < end && *close != '}')
        close++;
    const char *id = top_find(cur, close, "\"run_id\":");
    if (!id)
        return -1;
    int64_t v = 0;
    for (; id < close && *id >= '0' && *id <= '9' && v < INT64_MAX / 10; id++)
        v = v * 10 + (*id - '0');
    *run_id = v;
    const char *k = top_find(cur, close, "\"kind\":\"");
    size_t n = 0;
    while (k && k + n < close && k[n] != '"' && n + 1 < kindlen && k[n] >= 'a' && k[n] <= 'z')
        n++;
    if (!k || !n || k + n >= close || k[n] != '"') /* the kind's closing quote, within */
        snprintf(kind, kindlen, "proxy");
    else
        snprintf(kind, kindlen, "%.*s", (int)n, k);
    return 0;
}
