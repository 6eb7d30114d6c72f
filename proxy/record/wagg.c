/* wagg: write aggregates, counted on the writer thread. See wagg.h. */
#include "record/wagg.h"

#include <stdlib.h>
#include <string.h>

int wagg_init(struct wagg *g)
{
    memset(g, 0, sizeof *g);
    g->e = calloc(WAGG_CAP, sizeof *g->e);
    g->slots = malloc(WAGG_CAP * sizeof *g->slots);
    if (!g->e || !g->slots) {
        wagg_free(g);
        return -1;
    }
    return 0;
}

void wagg_free(struct wagg *g)
{
    free(g->e);
    free(g->slots);
    memset(g, 0, sizeof *g);
}

int64_t wagg_latency_band(int64_t latency_ns)
{
    int64_t us;
    if (latency_ns < 0)
        return -1;
    us = (latency_ns + 500) / 1000;
    if (us < 100)
        return us;
    if (us < 1000)
        return us / 10 * 10;
    if (us < 10000)
        return us / 100 * 100;
    if (us < 100000)
        return us / 1000 * 1000;
    return us / 10000 * 10000;
}

bool wagg_stores(const struct rec_row *row)
{
    switch ((enum mc_cmd)row->cmd) {
    case MC_CMD_SET:
    case MC_CMD_ADD:
    case MC_CMD_REPLACE:
    case MC_CMD_CAS: return row->value_len >= 0;
    case MC_CMD_MS:
        return row->value_len >= 0 && row->ms_mode != 'A' && row->ms_mode != 'a' &&
               row->ms_mode != 'P' && row->ms_mode != 'p';
    default: return false;
    }
}

static uint64_t wagg_hash(uint8_t kind, int64_t t, int64_t k)
{
    uint64_t h = (uint64_t)kind * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)t + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
    h ^= (uint64_t)k + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static void wagg_add(struct wagg *g, uint8_t kind, int64_t t, int64_t k, int64_t bytes)
{
    size_t i = (size_t)(wagg_hash(kind, t, k) & (WAGG_CAP - 1));
    for (size_t probe = 0; probe < WAGG_CAP; probe++, i = (i + 1) & (WAGG_CAP - 1)) {
        struct wagg_ent *e = &g->e[i];
        if (!e->kind) {
            if (g->used + 1 >= WAGG_CAP) /* keep one slot free: probes end */
                break;
            *e = (struct wagg_ent){ .kind = kind, .t = t, .k = k };
            g->slots[g->used++] = (uint32_t)i;
        } else if (e->kind != kind || e->t != t || e->k != k) {
            continue;
        }
        e->batch_n++;
        e->batch_bytes += bytes;
        return;
    }
    g->overflow = true;
    g->lost++;
}

int64_t wagg_size_bucket(int64_t body)
{
    int bits = 0;
    if (body < WAGG_EXACT_BELOW)
        return body;
    for (uint64_t v = (uint64_t)body; v; v >>= 1)
        bits++;
    int shift = bits - 1 - WAGG_BUCKET_BITS;
    return (int64_t)(((uint64_t)body >> shift) << shift);
}

int64_t wagg_bucket_width(int64_t bucket)
{
    int bits = 0;
    if (bucket < WAGG_EXACT_BELOW)
        return 1;
    for (uint64_t v = (uint64_t)bucket; v; v >>= 1)
        bits++;
    return (int64_t)1 << (bits - 1 - WAGG_BUCKET_BITS);
}

/* The answer is the word w, alone or followed by flags. */
static bool answer_word(const char *a, const char *w)
{
    size_t n = strlen(w);
    return !strncmp(a, w, n) && (a[n] == 0 || a[n] == ' ');
}

enum wagg_outcome wagg_outcome_of(const struct rec_row *row)
{
    static const char *const stored[] = { "STORED", "HD", "noreply", "quiet" };
    static const char *const refused[] = { "NOT_STORED", "EXISTS", "NOT_FOUND", "NS", "EX", "NF" };
    const char *a = row->answer;
    for (size_t i = 0; i < sizeof stored / sizeof stored[0]; i++)
        if (answer_word(a, stored[i]))
            return WAGG_STORED;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (answer_word(a, refused[i]))
            return WAGG_REFUSED;
    if (!strncmp(a, "CLIENT_ERROR bad data chunk", 27))
        return WAGG_REFUSED;
    return WAGG_OTHER;
}

int64_t wagg_item_key(int64_t bucket, uint32_t class_id, enum wagg_outcome o)
{
    return bucket | (int64_t)(class_id & 255) << 40 | (int64_t)o << 48;
}

void wagg_item_unkey(int64_t k, int64_t *bucket, uint32_t *class_id, enum wagg_outcome *o)
{
    *bucket = k & (((int64_t)1 << 40) - 1);
    *class_id = (uint32_t)(k >> 40) & 255;
    *o = (enum wagg_outcome)(k >> 48);
}

void wagg_note(struct wagg *g, const struct rec_row *row, int64_t prefix_id, int64_t cmd_id,
               int64_t answer_id)
{
    int64_t value = row->value_len > 0 ? row->value_len : 0;
    int64_t minute = row->t_ns / 60000000000ll;
    if (row->kind != REC_ROW_WRITE)
        return;
    wagg_add(g, WAGG_LATENCY, row->t_ns / 1000000000, wagg_latency_band(row->latency_ns), 0);
    wagg_add(g, WAGG_ANSWER, minute, (cmd_id & 255) | (answer_id & 0xffffffff) << 8, value);
    if (wagg_stores(row)) {
        int64_t body = (int64_t)row->key_len + row->value_len + (row->flags ? 4 : 0);
        enum wagg_outcome o = wagg_outcome_of(row);
        wagg_add(g, WAGG_SIZE, minute, body, value);
        wagg_add(g, WAGG_ITEM, minute, wagg_item_key(wagg_size_bucket(body), row->class_id, o),
                 body);
        if (prefix_id > 0 && o == WAGG_STORED)
            wagg_add(g, WAGG_PREFIX_CLASS, minute, prefix_id | (int64_t)(row->class_id & 255) << 40,
                     body);
    }
    if (prefix_id > 0)
        wagg_add(g, WAGG_PREFIX, minute, prefix_id, value);
}

void wagg_batch_done(struct wagg *g, bool committed)
{
    for (size_t i = 0; i < g->used; i++) {
        struct wagg_ent *e = &g->e[g->slots[i]];
        if (committed) {
            e->n += e->batch_n;
            e->bytes += e->batch_bytes;
        }
        e->batch_n = e->batch_bytes = 0;
    }
}

void wagg_clear(struct wagg *g)
{
    for (size_t i = 0; i < g->used; i++)
        g->e[g->slots[i]].kind = 0;
    g->used = 0;
}

bool wagg_should_flush(const struct wagg *g)
{
    return g->used >= WAGG_FLUSH_AT;
}

size_t wagg_row(const struct wagg_ent *e, int64_t cols[WAGG_COLS])
{
    size_t c = 0;
    cols[c++] = e->t;
    if (e->kind == WAGG_ITEM) { /* class_id, body, outcome */
        int64_t bucket;
        uint32_t cls;
        enum wagg_outcome o;
        wagg_item_unkey(e->k, &bucket, &cls, &o);
        cols[c++] = cls;
        cols[c++] = bucket;
        cols[c++] = o;
    } else if (e->kind == WAGG_ANSWER) { /* cmd_id, answer_id */
        cols[c++] = e->k & 255;
        cols[c++] = e->k >> 8;
    } else if (e->kind == WAGG_PREFIX_CLASS) { /* prefix_id, class_id */
        cols[c++] = e->k & (((int64_t)1 << 40) - 1);
        cols[c++] = e->k >> 40;
    } else {
        cols[c++] = e->k;
    }
    cols[c++] = e->n + e->batch_n;
    if (e->kind != WAGG_LATENCY)
        cols[c++] = e->bytes + e->batch_bytes;
    return c;
}

int wagg_cell_spread(const struct wagg_cell *c, uint64_t count,
                     int (*add)(void *ctx, int64_t body, uint64_t n), void *ctx)
{
    int64_t w = wagg_bucket_width(c->bucket);
    if (!count)
        return 0;
    if (w <= 1 || c->writes <= 0)
        return add(ctx, c->bucket, count);
    uint64_t k = count < WAGG_SPREAD ? count : WAGG_SPREAD;
    /* k sizes evenly over the widest interval around the cell's mean that
     * stays in the bucket: the mean is kept, and every size is one the
     * bucket holds */
    double mean = (double)c->body_bytes / (double)c->writes;
    double top = (double)(c->bucket + w - 1);
    if (mean < (double)c->bucket)
        mean = (double)c->bucket;
    if (mean > top)
        mean = top;
    double radius = mean - (double)c->bucket < top - mean ? mean - (double)c->bucket : top - mean;
    for (uint64_t i = 0; i < k; i++) {
        uint64_t n = count / k + (i < count % k);
        double at = mean + radius * ((2.0 * (double)i + 1.0) / (double)k - 1.0);
        int64_t body = (int64_t)(at + 0.5);
        if (body < c->bucket)
            body = c->bucket;
        if (body > c->bucket + w - 1)
            body = c->bucket + w - 1;
        int rc = n ? add(ctx, body, n) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

struct wagg_rem {
    long double r;
    size_t i;
};

static int rem_cmp(const void *x, const void *y)
{
    const struct wagg_rem *a = x, *b = y;
    if (a->r != b->r)
        return a->r > b->r ? -1 : 1;
    /* ties (many cells of one write each) in a fixed scrambled order, not
     * by index: cells come sorted by size, and the lower index would give
     * the extra items to the smallest sizes */
    uint64_t ha = wagg_hash(0, (int64_t)a->i, 0), hb = wagg_hash(0, (int64_t)b->i, 0);
    return ha < hb ? -1 : ha > hb;
}

void wagg_scale_counts(const int64_t *in, size_t n, uint64_t target, uint64_t *out)
{
    long double sum = 0;
    uint64_t given = 0;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        sum += in[i] > 0 ? (long double)in[i] : 0;
    struct wagg_rem *rem = n ? malloc(n * sizeof *rem) : NULL;
    for (size_t i = 0; i < n; i++) {
        out[i] = 0;
        if (sum > 0 && in[i] > 0) {
            long double x = (long double)in[i] * target / sum;
            out[i] = (uint64_t)x;
            given += out[i];
            if (rem)
                rem[m++] = (struct wagg_rem){ x - (long double)out[i], i };
        }
    }
    /* the rest, one each, to the largest remainders;
     * without memory for the order, to the first cells */
    if (rem)
        qsort(rem, m, sizeof *rem, rem_cmp);
    for (size_t j = 0; given < target && sum > 0; j = (j + 1) % (rem ? m : n)) {
        size_t i = rem ? rem[j].i : j;
        if (in[i] > 0) {
            out[i]++;
            given++;
        }
    }
    free(rem);
}
