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

void wagg_note(struct wagg *g, const struct rec_row *row, int64_t prefix_id)
{
    int64_t value = row->value_len > 0 ? row->value_len : 0;
    if (row->kind != REC_ROW_WRITE)
        return;
    wagg_add(g, WAGG_LATENCY, row->t_ns / 1000000000, wagg_latency_band(row->latency_ns), 0);
    if (wagg_stores(row)) {
        int64_t body = (int64_t)row->key_len + row->value_len + (row->flags ? 4 : 0);
        wagg_add(g, WAGG_SIZE, row->t_ns / 60000000000ll, body, value);
    }
    if (prefix_id > 0)
        wagg_add(g, WAGG_PREFIX, row->t_ns / 60000000000ll, prefix_id, value);
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
