/* slab_model: memcached 1.6's slab ladder, item sizes and predicted
 * per-class counters, as pure arithmetic (see slab_model.h for the scope).
 * Owns: the rules copied (as behaviour, not code) from memcached 1.6.18's
 * slabs.c slabs_init/slabs_clsid, items.c item_make_header/do_item_alloc/
 * do_item_alloc_chunk and memcached.c's start-up checks.
 * Must never: do I/O, allocate memory, keep state between calls, or
 * "improve" on memcached: where memcached truncates, so do we.
 */
#include "model/slab_model.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* memcached.h KEY_MAX_LENGTH: longer keys never reach the allocator. */
#define SLAB_MODEL_KEY_MAX 250u

const char *slab_status_str(enum slab_status st)
{
    switch (st) {
    case SLAB_OK: return "ok";
    case SLAB_ERR_ARG: return "bad argument";
    case SLAB_ERR_SYNTAX: return "not a number";
    case SLAB_ERR_SETTINGS: return "memcached would refuse these settings";
    case SLAB_ERR_TOO_LARGE: return "object too large for cache";
    case SLAB_ERR_UNDERFLOW: return "removing more than was added";
    case SLAB_ERR_SPACE: return "buffer too small";
    }
    return "unknown status";
}

/* snprintf into an optional caller buffer; returns st so call sites stay
 * one line. */
static enum slab_status fail(enum slab_status st, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum slab_status fail(enum slab_status st, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

void slab_settings_default(struct slab_settings *s)
{
    if (!s)
        return;
    memset(s, 0, sizeof *s);
    /* memcached.c settings_init() */
    s->chunk_size_min = 48;
    s->growth_factor = 1.25;
    s->item_size_max = 1024u * 1024u;
    s->mem_limit = 64ull * 1024 * 1024;
    s->slab_page_size = 1024u * 1024u;
    s->slab_chunk_max = s->slab_page_size / 2;
    s->use_cas = true;
}

/* One converter for every reader of `stats settings` (the live server in
 * the proxy and the load generator, a recorded run in predict): strict on
 * the three fields that decide the ladder, tolerant of the optional ones. */
enum slab_status slab_settings_from_stats(struct slab_settings *out, slab_stat_lookup_fn lookup,
                                          void *ctx, char *err, size_t errlen)
{
    static const char *const required[] = { "growth_factor", "chunk_size", "item_size_max" };
    double v[3];
    const char *text;
    char *end;
    slab_settings_default(out);
    for (size_t i = 0; i < 3; i++) {
        text = lookup(ctx, required[i]);
        v[i] = text ? strtod(text, &end) : 0;
        if (!text || end == text || *end || !(v[i] > 0) || v[i] > (double)UINT32_MAX ||
            (i > 0 && v[i] != (double)(uint64_t)v[i])) {
            if (err && errlen && text)
                snprintf(err, errlen, "`stats settings` has a bad %s: \"%.40s\"", required[i],
                         text);
            else if (err && errlen)
                snprintf(err, errlen, "`stats settings` lacks %s", required[i]);
            return SLAB_ERR_SETTINGS;
        }
    }
    out->growth_factor = v[0];
    out->chunk_size_min = (uint32_t)v[1];
    out->item_size_max = (uint32_t)v[2];
    /* slab_chunk_max is printed in bytes by 1.6 (the -o option changed
     * unit in 1.6.24, the internal value did not); older servers lack it */
    if ((text = lookup(ctx, "slab_chunk_max"))) {
        unsigned long long n = strtoull(text, &end, 10);
        if (end != text && !*end && n > 0 && n <= UINT32_MAX)
            out->slab_chunk_max = (uint32_t)n;
    }
    if ((text = lookup(ctx, "maxbytes"))) {
        unsigned long long n = strtoull(text, &end, 10);
        if (end != text && !*end && n > 0)
            out->mem_limit = (uint64_t)n;
    }
    if ((text = lookup(ctx, "cas_enabled")))
        out->use_cas = strcmp(text, "no") != 0;
    return SLAB_OK;
}

size_t slab_sizes_flag(const struct slab_settings *s, char *out, size_t len)
{
    size_t n = 0;
    if (len == 0)
        return 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < s->n_slab_sizes && n < len; i++) {
        int w = snprintf(out + n, len - n, "%s%u", i ? "-" : "-o slab_sizes=", s->slab_sizes[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    return n < len ? n : len - 1;
}

/* Digits only, no sign, no blanks; into a uint64_t that cannot overflow
 * for the <= 19 digits we accept. */
static enum slab_status parse_digits(const char *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 19)
        return n == 0 ? SLAB_ERR_SYNTAX : SLAB_ERR_ARG;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return SLAB_ERR_SYNTAX;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    *out = v;
    return SLAB_OK;
}

enum slab_status slab_parse_size(const char *text, uint32_t *out)
{
    if (!text || !out)
        return SLAB_ERR_ARG;
    size_t n = strlen(text);
    uint64_t mult = 1;
    if (n > 0) {
        char unit = text[n - 1];
        if (unit == 'k' || unit == 'K')
            mult = 1024;
        else if (unit == 'm' || unit == 'M')
            mult = 1024 * 1024;
        if (mult != 1)
            n--;
    }
    uint64_t v;
    enum slab_status st = parse_digits(text, n, &v);
    if (st != SLAB_OK)
        return st;
    if (v > UINT32_MAX / mult)
        return SLAB_ERR_ARG;
    *out = (uint32_t)(v * mult);
    return SLAB_OK;
}

enum slab_status slab_parse_slab_sizes(const char *text, struct slab_settings *s, char *err,
                                       size_t errlen)
{
    if (!text || !s)
        return SLAB_ERR_ARG;
    if (*text == '\0')
        return fail(SLAB_ERR_SYNTAX, err, errlen, "slab_sizes is empty");
    uint32_t count = 0;
    const char *p = text;
    for (;;) {
        const char *dash = strchr(p, '-');
        size_t n = dash ? (size_t)(dash - p) : strlen(p);
        uint64_t v;
        if (parse_digits(p, n, &v) != SLAB_OK || v > UINT32_MAX)
            return fail(SLAB_ERR_SYNTAX, err, errlen, "slab size '%.*s' is not a number", (int)n,
                        p);
        /* memcached.c _parse_slab_sizes: the 63rd size is refused. */
        if (count >= SLAB_MODEL_MAX_CUSTOM_SIZES)
            return fail(SLAB_ERR_SETTINGS, err, errlen, "too many slab classes specified");
        s->slab_sizes[count++] = (uint32_t)v;
        if (!dash)
            break;
        p = dash + 1;
    }
    s->n_slab_sizes = count;
    return SLAB_OK;
}

/* memcached.c main(): -f, -n and -I checks, in its order and wording. */
static enum slab_status validate_basic(const struct slab_settings *s, char *err, size_t errlen)
{
    if (!(s->growth_factor > 1.0)) /* also refuses NaN, which memcached lets through */
        return fail(SLAB_ERR_SETTINGS, err, errlen, "Factor must be greater than 1");
    if (s->chunk_size_min == 0)
        return fail(SLAB_ERR_SETTINGS, err, errlen, "Chunk size must be greater than 0");
    if (s->chunk_size_min > INT_MAX)
        return fail(SLAB_ERR_ARG, err, errlen, "Chunk size does not fit memcached's int");
    if (s->item_size_max < SLAB_MODEL_ITEM_SIZE_MAX_MIN)
        return fail(SLAB_ERR_SETTINGS, err, errlen,
                    "Item max size cannot be less than 1024 bytes.");
    if (s->item_size_max > s->mem_limit / 2)
        return fail(SLAB_ERR_SETTINGS, err, errlen,
                    "Cannot set item size limit higher than 1/2 of memory max.");
    if (s->item_size_max > SLAB_MODEL_ITEM_SIZE_MAX_MAX)
        return fail(SLAB_ERR_SETTINGS, err, errlen,
                    "Cannot set item size limit higher than a gigabyte.");
    return SLAB_OK;
}

/* memcached.c main(): slab_chunk_max against -I and the page size. */
static enum slab_status validate_chunk_max(const struct slab_settings *s, char *err, size_t errlen)
{
    uint32_t scm = s->slab_chunk_max, ism = s->item_size_max;
    /* memcached divides by it unchecked; we refuse instead of crashing */
    if (scm == 0 || s->slab_page_size == 0)
        return fail(SLAB_ERR_SETTINGS, err, errlen, "slab_chunk_max must be greater than 0");
    if (scm > ism)
        return fail(SLAB_ERR_SETTINGS, err, errlen,
                    "slab_chunk_max (bytes: %u) cannot be larger than -I (item_size_max %u)", scm,
                    ism);
    if (ism % scm != 0)
        return fail(SLAB_ERR_SETTINGS, err, errlen,
                    "-I (item_size_max: %u) must be evenly divisible by slab_chunk_max (bytes: %u)",
                    ism, scm);
    if (s->slab_page_size % scm != 0)
        return fail(SLAB_ERR_SETTINGS, err, errlen,
                    "slab_chunk_max (bytes: %u) must divide evenly into %u (slab_page_size)", scm,
                    s->slab_page_size);
    return SLAB_OK;
}

/* memcached.c _parse_slab_sizes: range and strictly-growing checks. Note
 * the lower bound is -n itself, not 48 + -n. */
static enum slab_status validate_slab_sizes(const struct slab_settings *s, char *err, size_t errlen)
{
    uint32_t last = 0;
    if (s->n_slab_sizes > SLAB_MODEL_MAX_CUSTOM_SIZES)
        return fail(SLAB_ERR_SETTINGS, err, errlen, "too many slab classes specified");
    for (uint32_t i = 0; i < s->n_slab_sizes; i++) {
        uint32_t size = s->slab_sizes[i];
        if (size < s->chunk_size_min || size > s->slab_chunk_max)
            return fail(SLAB_ERR_SETTINGS, err, errlen, "slab size %u is out of valid range", size);
        if (last >= size)
            return fail(SLAB_ERR_SETTINGS, err, errlen,
                        "slab size %u cannot be lower than or equal to a previous class size",
                        size);
        if (size <= last + SLAB_MODEL_CHUNK_ALIGN)
            return fail(SLAB_ERR_SETTINGS, err, errlen,
                        "slab size %u must be at least %d bytes larger than previous class", size,
                        SLAB_MODEL_CHUNK_ALIGN);
        last = size;
    }
    return SLAB_OK;
}

enum slab_status slab_settings_validate(const struct slab_settings *s, char *err, size_t errlen)
{
    if (!s)
        return SLAB_ERR_ARG;
    enum slab_status st = validate_basic(s, err, errlen);
    if (st == SLAB_OK)
        st = validate_chunk_max(s, err, errlen);
    if (st == SLAB_OK)
        st = validate_slab_sizes(s, err, errlen);
    return st;
}

static uint32_t align_up(uint32_t size)
{
    uint32_t rem = size % SLAB_MODEL_CHUNK_ALIGN;
    return rem ? size + (SLAB_MODEL_CHUNK_ALIGN - rem) : size;
}

/* The growth-factor loop of slabs_init. The stop test runs before the
 * alignment and compares in double, and the next size is truncated to an
 * unsigned int: both decide which class sizes exist, so they are kept. */
static uint32_t ladder_from_factor(const struct slab_settings *s, struct slab_ladder *l)
{
    uint32_t size = (uint32_t)(SLAB_MODEL_ITEM_HEADER + (uint64_t)s->chunk_size_min);
    double stop = (double)s->slab_chunk_max / s->growth_factor;
    uint32_t id = 0;
    while (++id < SLAB_MODEL_MAX_CLASSES) {
        if ((double)size >= stop)
            break;
        size = align_up(size);
        l->cls[id].chunk_size = size;
        l->cls[id].perslab = s->slab_page_size / size;
        size = (uint32_t)((double)size * s->growth_factor);
    }
    return id;
}

/* The slab_sizes branch of slabs_init: the given sizes, aligned. */
static uint32_t ladder_from_sizes(const struct slab_settings *s, struct slab_ladder *l)
{
    uint32_t id = 0;
    while (++id < SLAB_MODEL_MAX_CLASSES && id <= s->n_slab_sizes) {
        uint32_t size = align_up(s->slab_sizes[id - 1]);
        l->cls[id].chunk_size = size;
        l->cls[id].perslab = s->slab_page_size / size;
    }
    return id;
}

enum slab_status slab_ladder_build(const struct slab_settings *s, struct slab_ladder *out,
                                   char *err, size_t errlen)
{
    if (!s || !out)
        return SLAB_ERR_ARG;
    enum slab_status st = slab_settings_validate(s, err, errlen);
    if (st != SLAB_OK)
        return st;
    memset(out, 0, sizeof *out);
    uint32_t last = s->n_slab_sizes ? ladder_from_sizes(s, out) : ladder_from_factor(s, out);
    /* the last class is always slab_chunk_max, whatever came before */
    out->cls[last].chunk_size = s->slab_chunk_max;
    out->cls[last].perslab = s->slab_page_size / s->slab_chunk_max;
    out->n_classes = last;
    out->item_size_max = s->item_size_max;
    out->slab_chunk_max = s->slab_chunk_max;
    out->slab_page_size = s->slab_page_size;
    out->use_cas = s->use_cas;
    return SLAB_OK;
}

bool slab_ladder_same(const struct slab_ladder *a, const struct slab_ladder *b)
{
    if (a->n_classes != b->n_classes)
        return false;
    for (uint32_t c = 1; c <= a->n_classes; c++)
        if (a->cls[c].chunk_size != b->cls[c].chunk_size)
            return false;
    return true;
}

uint32_t slab_ladder_class_for(const struct slab_ladder *l, uint64_t size)
{
    if (!l || size == 0 || size > l->item_size_max || l->n_classes == 0)
        return 0;
    for (uint32_t id = 1; id <= l->n_classes; id++)
        if (size <= l->cls[id].chunk_size)
            return id;
    return l->n_classes;
}

int slab_ladder_format_line(const struct slab_ladder *l, uint32_t id, char *buf, size_t len)
{
    if (!l || id == 0 || id > l->n_classes || (!buf && len))
        return -1;
    /* slabs.c slabs_init, settings.verbose > 1 */
    return snprintf(buf, len, "slab class %3d: chunk size %9u perslab %7u\n", (int)id,
                    l->cls[id].chunk_size, l->cls[id].perslab);
}

size_t slab_ladder_format(const struct slab_ladder *l, char *buf, size_t len)
{
    size_t total = 0, written = 0;
    if (!l)
        return 0;
    for (uint32_t id = 1; id <= l->n_classes; id++) {
        char line[SLAB_MODEL_LINE_MAX];
        int n = slab_ladder_format_line(l, id, line, sizeof line);
        if (n < 0 || (size_t)n >= sizeof line)
            return 0;
        /* copy whole lines only, so a short buffer never ends mid-line */
        if (buf && written == total && written + (size_t)n < len) {
            memcpy(buf + written, line, (size_t)n);
            written += (size_t)n;
        }
        total += (size_t)n;
    }
    if (buf && len)
        buf[written] = '\0';
    return total;
}

uint64_t slab_item_ntotal(bool use_cas, uint32_t key_len, uint32_t flags, uint64_t value_len)
{
    /* item_make_header(nkey + 1, ...) + nbytes (value + "\r\n") + CAS */
    uint64_t ntotal = SLAB_MODEL_ITEM_HEADER + (uint64_t)key_len + 1 + value_len + 2;
    if (flags != 0)
        ntotal += sizeof(uint32_t);
    if (use_cas)
        ntotal += sizeof(uint64_t);
    return ntotal;
}

/* do_item_alloc's header for a chunked item: key, suffix and CAS like a
 * small item, plus one item_chunk, but none of the value. */
static uint32_t chunked_header_size(bool use_cas, uint32_t key_len, uint32_t flags)
{
    uint32_t htotal = key_len + 1 + SLAB_MODEL_ITEM_HEADER + SLAB_MODEL_CHUNK_HEADER;
    if (flags != 0)
        htotal += sizeof(uint32_t);
    if (use_cas)
        htotal += sizeof(uint64_t);
    return htotal;
}

/* read_into_chunked_item + do_item_alloc_chunk (text protocol): each new
 * chunk asks for min(bytes left + 48, slab_chunk_max) and holds that minus
 * the 48-byte chunk header, so every chunk but the last is slab_chunk_max
 * and the last is sized to the remainder. */
static enum slab_status layout_chunks(const struct slab_ladder *l, uint64_t nbytes,
                                      struct slab_item_layout *out)
{
    uint32_t cap = l->slab_chunk_max - SLAB_MODEL_CHUNK_HEADER;
    out->full_chunks = nbytes / cap;
    out->full_class = out->full_chunks ? slab_ladder_class_for(l, l->slab_chunk_max) : 0;
    uint64_t rest = nbytes % cap;
    out->tail_size = rest ? (uint32_t)(rest + SLAB_MODEL_CHUNK_HEADER) : 0;
    out->tail_class = rest ? slab_ladder_class_for(l, out->tail_size) : 0;
    return SLAB_OK;
}

enum slab_status slab_item_layout(const struct slab_ladder *l, uint32_t key_len, uint32_t flags,
                                  uint64_t value_len, struct slab_item_layout *out)
{
    if (!l || !out || l->n_classes == 0 || key_len > SLAB_MODEL_KEY_MAX)
        return SLAB_ERR_ARG;
    memset(out, 0, sizeof *out);
    out->ntotal = slab_item_ntotal(l->use_cas, key_len, flags, value_len);
    out->lru_class = slab_ladder_class_for(l, out->ntotal);
    if (out->lru_class == 0)
        return SLAB_ERR_TOO_LARGE;
    if (out->ntotal <= l->slab_chunk_max)
        return SLAB_OK;
    out->chunked = true;
    out->hdr_size = chunked_header_size(l->use_cas, key_len, flags);
    /* Below these, memcached itself would assert or loop forever; no real
     * configuration gets here (slab_chunk_max is at least 1 KiB in practice). */
    if (l->slab_chunk_max <= SLAB_MODEL_CHUNK_HEADER || out->hdr_size > l->slab_chunk_max)
        return SLAB_ERR_SETTINGS;
    out->hdr_class = slab_ladder_class_for(l, out->hdr_size);
    return layout_chunks(l, value_len + 2, out);
}

void slab_counters_init(struct slab_counters *c)
{
    if (c)
        memset(c, 0, sizeof *c);
}

/* Chunks the item takes, per class: need[id]. Returns false if the layout
 * names a class the ladder does not have. */
static bool chunks_by_class(const struct slab_ladder *l, const struct slab_item_layout *it,
                            uint64_t need[SLAB_MODEL_MAX_CLASSES + 1])
{
    memset(need, 0, sizeof(uint64_t) * (SLAB_MODEL_MAX_CLASSES + 1));
    if (it->lru_class == 0 || it->lru_class > l->n_classes)
        return false;
    if (!it->chunked) {
        need[it->lru_class] = 1;
        return true;
    }
    if (it->hdr_class == 0 || it->hdr_class > l->n_classes || it->full_class > l->n_classes ||
        it->tail_class > l->n_classes || (it->full_chunks && !it->full_class))
        return false;
    need[it->hdr_class] += 1;
    need[it->full_class] += it->full_chunks; /* class 0 (none) is ignored */
    if (it->tail_class)
        need[it->tail_class] += 1;
    return true;
}

/* Pages are only ever added: a class holds as many as its busiest moment
 * needed (no eviction, no slab moves). */
static void update_pages(struct slab_class_counters *k, uint32_t perslab)
{
    if (k->used_chunks > k->peak_used_chunks)
        k->peak_used_chunks = k->used_chunks;
    if (perslab == 0)
        return;
    k->total_pages = (k->peak_used_chunks + perslab - 1) / perslab;
    k->total_chunks = k->total_pages * perslab;
}

enum slab_status slab_counters_add(struct slab_counters *c, const struct slab_ladder *l,
                                   const struct slab_item_layout *it)
{
    uint64_t need[SLAB_MODEL_MAX_CLASSES + 1];
    if (!c || !l || !it || !chunks_by_class(l, it, need))
        return SLAB_ERR_ARG;
    for (uint32_t id = 1; id <= l->n_classes; id++) {
        if (!need[id])
            continue;
        c->cls[id].used_chunks += need[id];
        update_pages(&c->cls[id], l->cls[id].perslab);
    }
    c->cls[it->lru_class].number += 1;
    c->cls[it->lru_class].mem_requested += it->ntotal;
    return SLAB_OK;
}

enum slab_status slab_counters_remove(struct slab_counters *c, const struct slab_ladder *l,
                                      const struct slab_item_layout *it)
{
    uint64_t need[SLAB_MODEL_MAX_CLASSES + 1];
    if (!c || !l || !it || !chunks_by_class(l, it, need))
        return SLAB_ERR_ARG;
    /* check everything first so a bad remove changes nothing */
    struct slab_class_counters *lru = &c->cls[it->lru_class];
    if (lru->number < 1 || lru->mem_requested < it->ntotal)
        return SLAB_ERR_UNDERFLOW;
    for (uint32_t id = 1; id <= l->n_classes; id++)
        if (c->cls[id].used_chunks < need[id])
            return SLAB_ERR_UNDERFLOW;
    for (uint32_t id = 1; id <= l->n_classes; id++)
        c->cls[id].used_chunks -= need[id];
    lru->number -= 1;
    lru->mem_requested -= it->ntotal;
    return SLAB_OK;
}

int slab_factor_text(double f, char *out, size_t len)
{
    char buf[32]; /* a growth factor: "1." and at most 17 decimals */
    /* the fewest decimals (two at least) that strtod reads back as f */
    for (int d = 2; d <= 17; d++) {
        snprintf(buf, sizeof buf, "%.*f", d, f);
        if (strtod(buf, NULL) == f)
            break;
    }
    return snprintf(out, len, "%s", buf);
}

int slab_version_at_least(const char *version, unsigned a, unsigned b, unsigned c)
{
    unsigned v[3] = { 0, 0, 0 }, want[3] = { a, b, c };
    const char *p = version;
    if (!p)
        return -1;
    if (!strncmp(p, "memcached ", 10))
        p += 10;
    while (*p == ' ')
        p++;
    for (int i = 0; i < 3; i++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned long n = strtoul(p, (char **)&p, 10);
        v[i] = n > UINT_MAX ? UINT_MAX : (unsigned)n;
        if (i < 2) {
            if (*p != '.')
                return -1;
            p++;
        }
    }
    for (int i = 0; i < 3; i++)
        if (v[i] != want[i])
            return v[i] > want[i];
    return 1;
}

bool slab_chunk_max_in_kb(const char *version)
{
    /* memcached.c, `case SLAB_CHUNK_MAX:` -- 1.6.23: safe_strtol, bytes;
     * 1.6.24 (commit 1b3b855, "core: fix issues with -o slab_chunk_max=kb"):
     * refuses values over 1024 ("must be specified in kilobytes") and
     * multiplies by 1024. */
    return slab_version_at_least(version, 1, 6, 24) == 1;
}

/* --- memcached's command line ------------------------------------------- */

/* memcached.c 1.6.18 shortopts: the flag letters, ':' after those that
 * take an argument. */
static const char mc_shortopts[] = "a:AZp:s:U:m:Mc:khiVrvdl:u:P:f:n:t:D:LR:Cb:B:I:SFXWY:e:o:N:";

/* memcached.c longopts: name, takes an argument, its letter. */
static const struct {
    const char *name;
    bool arg;
    char letter;
} mc_longopts[] = {
    { "unix-mask", true, 'a' },
    { "enable-shutdown", false, 'A' },
    { "enable-ssl", false, 'Z' },
    { "port", true, 'p' },
    { "unix-socket", true, 's' },
    { "udp-port", true, 'U' },
    { "memory-limit", true, 'm' },
    { "disable-evictions", false, 'M' },
    { "conn-limit", true, 'c' },
    { "lock-memory", false, 'k' },
    { "help", false, 'h' },
    { "license", false, 'i' },
    { "version", false, 'V' },
    { "enable-coredumps", false, 'r' },
    { "verbose", false, 'v' },
    { "daemon", false, 'd' },
    { "listen", true, 'l' },
    { "user", true, 'u' },
    { "pidfile", true, 'P' },
    { "slab-growth-factor", true, 'f' },
    { "slab-min-size", true, 'n' },
    { "threads", true, 't' },
    { "enable-largepages", false, 'L' },
    { "max-reqs-per-event", true, 'R' },
    { "disable-cas", false, 'C' },
    { "listen-backlog", true, 'b' },
    { "protocol", true, 'B' },
    { "max-item-size", true, 'I' },
    { "enable-sasl", false, 'S' },
    { "disable-flush-all", false, 'F' },
    { "disable-dumping", false, 'X' },
    { "disable-watch", false, 'W' },
    { "auth-file", true, 'Y' },
    { "memory-file", true, 'e' },
    { "extended", true, 'o' },
    { "napi-ids", true, 'N' },
};

/* A whole decimal number into *out (at most UINT32_MAX). */
static bool flag_uint(const char *text, uint32_t *out)
{
    uint64_t v;
    if (parse_digits(text, strlen(text), &v) != SLAB_OK || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

/* One `-o` argument: comma-separated name[=value] (getsubopt). */
static enum slab_status flag_extended(struct slab_settings *s, unsigned *given, const char *arg,
                                      bool kb, char *err, size_t errlen)
{
    char buf[1024];
    if (strlen(arg) >= sizeof buf)
        return fail(SLAB_ERR_SYNTAX, err, errlen, "-o argument too long");
    strcpy(buf, arg);
    for (char *save = NULL, *opt = strtok_r(buf, ",", &save); opt;
         opt = strtok_r(NULL, ",", &save)) {
        char *value = strchr(opt, '=');
        if (value)
            *value++ = '\0';
        if (!strcmp(opt, "slab_sizes")) {
            if (!value)
                return fail(SLAB_ERR_SYNTAX, err, errlen, "-o slab_sizes needs a value");
            enum slab_status st = slab_parse_slab_sizes(value, s, err, errlen);
            if (st != SLAB_OK)
                return st;
            *given |= SLAB_GIVEN_SIZES;
        } else if (!strcmp(opt, "slab_chunk_max")) {
            uint32_t v;
            if (!value || !flag_uint(value, &v) || (kb && v > UINT32_MAX / 1024))
                return fail(SLAB_ERR_SYNTAX, err, errlen,
                            "-o slab_chunk_max needs a whole number (%s)",
                            kb ? "kilobytes from memcached 1.6.24" : "bytes before 1.6.24");
            s->slab_chunk_max = kb ? v * 1024 : v;
            *given |= SLAB_GIVEN_CHUNK_MAX;
        }
    }
    return SLAB_OK;
}

/* One flag (its letter) and its argument into s. */
static enum slab_status flag_apply(struct slab_settings *s, unsigned *given, char letter,
                                   const char *arg, bool kb, char *err, size_t errlen)
{
    char *end;
    uint32_t v;
    switch (letter) {
    case 'f':
        s->growth_factor = strtod(arg, &end);
        if (end == arg || *end)
            return fail(SLAB_ERR_SYNTAX, err, errlen, "-f '%.40s' is not a number", arg);
        *given |= SLAB_GIVEN_FACTOR;
        break;
    case 'n':
        if (!flag_uint(arg, &s->chunk_size_min))
            return fail(SLAB_ERR_SYNTAX, err, errlen, "-n '%.40s' is not a number", arg);
        *given |= SLAB_GIVEN_MIN;
        break;
    case 'I':
        if (slab_parse_size(arg, &s->item_size_max) != SLAB_OK)
            return fail(SLAB_ERR_SYNTAX, err, errlen, "-I '%.40s' is not a size", arg);
        *given |= SLAB_GIVEN_ITEM_MAX;
        break;
    case 'm':
        if (!flag_uint(arg, &v))
            return fail(SLAB_ERR_SYNTAX, err, errlen, "-m '%.40s' is not a number of megabytes",
                        arg);
        s->mem_limit = (uint64_t)v * 1024 * 1024;
        *given |= SLAB_GIVEN_MEM;
        break;
    case 'C':
        s->use_cas = false;
        *given |= SLAB_GIVEN_NO_CAS;
        break;
    case 'o': return flag_extended(s, given, arg, kb, err, errlen);
    default: break; /* does not shape the ladder */
    }
    return SLAB_OK;
}

/* "--name[=value]": its letter and whether it takes an argument; 0 when
 * memcached has no such option. */
static char flag_long(const char *tok, size_t n, bool *arg)
{
    for (size_t i = 0; i < sizeof mc_longopts / sizeof mc_longopts[0]; i++)
        if (strlen(mc_longopts[i].name) == n && !strncmp(mc_longopts[i].name, tok, n)) {
            *arg = mc_longopts[i].arg;
            return mc_longopts[i].letter;
        }
    return 0;
}

#define FLAGS_MAX_TOKENS 128

enum slab_status slab_settings_from_flags(struct slab_settings *out, unsigned *given,
                                          const char *flags, const char *version, char *err,
                                          size_t errlen)
{
    char buf[4096], *tok[FLAGS_MAX_TOKENS];
    unsigned dummy = 0;
    size_t nt = 0;
    bool kb = slab_chunk_max_in_kb(version);
    if (!out || !flags)
        return SLAB_ERR_ARG;
    if (!given)
        given = &dummy;
    *given = 0;
    slab_settings_default(out);
    if (strlen(flags) >= sizeof buf)
        return fail(SLAB_ERR_SYNTAX, err, errlen, "memcached flags too long");
    strcpy(buf, flags);
    for (char *save = NULL, *t = strtok_r(buf, " \t\r\n", &save); t;
         t = strtok_r(NULL, " \t\r\n", &save)) {
        if (nt == FLAGS_MAX_TOKENS)
            return fail(SLAB_ERR_SYNTAX, err, errlen, "too many memcached flags");
        tok[nt++] = t;
    }
    for (size_t i = 0; i < nt; i++) {
        const char *t = tok[i], *arg = NULL;
        enum slab_status st;
        if (t[0] != '-' || !t[1])
            return fail(SLAB_ERR_SYNTAX, err, errlen, "'%.40s' is not a memcached flag", t);
        if (t[1] == '-') { /* --name, --name=value, --name value */
            const char *eq = strchr(t + 2, '=');
            bool takes = false;
            char letter = flag_long(t + 2, eq ? (size_t)(eq - t - 2) : strlen(t + 2), &takes);
            if (!letter)
                return fail(SLAB_ERR_SYNTAX, err, errlen, "memcached has no option '%.40s'", t);
            if (takes && !eq && i + 1 == nt)
                return fail(SLAB_ERR_SYNTAX, err, errlen, "%.40s needs a value", t);
            arg = takes ? (eq ? eq + 1 : tok[++i]) : NULL;
            if ((st = flag_apply(out, given, letter, arg ? arg : "", kb, err, errlen)) != SLAB_OK)
                return st;
            continue;
        }
        for (const char *c = t + 1; *c; c++) { /* a cluster: -Cv, -f1.25, -vvv */
            const char *spec = *c != ':' ? strchr(mc_shortopts, *c) : NULL;
            if (!spec)
                return fail(SLAB_ERR_SYNTAX, err, errlen, "memcached has no flag -%c", *c);
            if (spec[1] != ':') {
                if ((st = flag_apply(out, given, *c, "", kb, err, errlen)) != SLAB_OK)
                    return st;
                continue;
            }
            if (c[1])
                arg = c + 1;
            else if (i + 1 < nt)
                arg = tok[++i];
            else
                return fail(SLAB_ERR_SYNTAX, err, errlen, "-%c needs a value", *c);
            if ((st = flag_apply(out, given, *c, arg, kb, err, errlen)) != SLAB_OK)
                return st;
            break;
        }
    }
    return SLAB_OK;
}

int slab_settings_flags_for(const struct slab_settings *s, uint64_t mem_mb, const char *version,
                            char *out, size_t len, char *err, size_t errlen)
{
    struct slab_settings d;
    char f[32];
    size_t n = 0;
    int w;
    bool kb = slab_chunk_max_in_kb(version);
    slab_settings_default(&d);
    if (!s || !out || len == 0)
        return -1;
    out[0] = '\0';
    if (s->slab_chunk_max != d.slab_chunk_max && kb && s->slab_chunk_max % 1024) {
        fail(SLAB_ERR_SETTINGS, err, errlen,
             "slab_chunk_max %u bytes is not a whole number of kilobytes, which memcached %s "
             "takes it in",
             s->slab_chunk_max, version);
        return -1;
    }
    w = snprintf(out, len, "-m %llu", (unsigned long long)mem_mb);
    n = w > 0 ? (size_t)w : 0;
    if (s->n_slab_sizes && n + 1 < len) {
        out[n++] = ' ';
        out[n] = '\0';
        n += slab_sizes_flag(s, out + n, len - n);
    } else if (n < len) {
        slab_factor_text(s->growth_factor, f, sizeof f);
        n += (size_t)snprintf(out + n, len - n, " -n %u -f %s", s->chunk_size_min, f);
    }
    if (s->item_size_max != d.item_size_max && n < len)
        n += (size_t)snprintf(out + n, len - n, " -I %u", s->item_size_max);
    if (s->slab_chunk_max != d.slab_chunk_max && n < len)
        n += (size_t)snprintf(out + n, len - n, " -o slab_chunk_max=%u",
                              kb ? s->slab_chunk_max / 1024 : s->slab_chunk_max);
    if (!s->use_cas && n < len)
        n += (size_t)snprintf(out + n, len - n, " -C");
    if (n >= len) {
        fail(SLAB_ERR_SPACE, err, errlen, "memcached flags do not fit %zu bytes", len);
        return -1;
    }
    return 0;
}

size_t slab_settings_flags(const struct slab_settings *s, uint64_t mem_mb, char *out, size_t len)
{
    if (slab_settings_flags_for(s, mem_mb, NULL, out, len, NULL, 0))
        return len ? strlen(out) : 0;
    return strlen(out);
}
