/* cachesim_driver: the cache simulator (model/capacity.h) from a text file,
 * for tests/integration/test_cachesim_exact.py. Not a test itself.
 *
 *   cachesim_driver [--flags "MEMCACHED FLAGS"] [--measure-from N] [--move-busy REQS]
 *                   [--mrc MB,MB,...] OPS
 *
 * OPS: one request a line, "kind key_hash key_len flags value_len t exptime
 * fill" (kind as capacity_kind_str: set, add, replace, append, prepend,
 * delete, other, get, touch, gat; key_hash decimal). --flags are the
 * memcached flags the sequence is compared with (memcached 1.6.18's
 * defaults when absent): the ladder and -m through slab_settings_from_flags,
 * the LRU from -o no_lru_maintainer (plain) and slab_automove from -o
 * slab_automove=N (default 1). Prints one JSON object (the result, and
 * "mrc": one object per size when --mrc is given); exit 1 with a message
 * on stderr for bad input. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonb.h"
#include "model/capacity.h"
#include "model/slab_model.h"

static void lru_flags(const char *flags, struct capacity_config *c)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", flags);
    for (char *save = NULL, *w = strtok_r(buf, " ,\t", &save); w;
         w = strtok_r(NULL, " ,\t", &save)) {
        if (!strcmp(w, "no_lru_maintainer"))
            c->lru = CAPACITY_LRU_PLAIN;
        else if (!strcmp(w, "lru_maintainer"))
            c->lru = CAPACITY_LRU_SEGMENTED;
        else if (!strncmp(w, "slab_automove=", 14))
            c->automove = (unsigned)atoi(w + 14);
    }
}

static void put_result(struct buf *b, const struct slab_ladder *l, const struct capacity_result *r)
{
    buf_printf(b,
               "{\"mem_limit\":%" PRIu64 ",\"malloced\":%" PRIu64 ",\"pages\":%" PRIu64
               ",\"items\":%" PRIu64 ",\"requested\":%" PRIu64 ",\"evictions\":%" PRIu64
               ",\"outofmemory\":%" PRIu64 ",\"too_large\":%" PRIu64 ",\"not_stored\":%" PRIu64
               ",\"gets\":%" PRIu64 ",\"hits\":%" PRIu64 ",\"misses\":%" PRIu64
               ",\"measured_gets\":%" PRIu64 ",\"measured_hits\":%" PRIu64
               ",\"hit_ratio\":%.6f,\"touches\":%" PRIu64 ",\"touch_hits\":%" PRIu64
               ",\"fills\":%" PRIu64 ",\"expired\":%" PRIu64 ",\"reclaimed\":%" PRIu64
               ",\"moves\":%" PRIu64 ",\"move_evictions\":%" PRIu64 ",\"pool_pages\":%u",
               r->mem_limit, r->malloced, r->pages, r->items, r->requested, r->evictions,
               r->outofmemory, r->too_large, r->not_stored, r->gets, r->hits, r->misses,
               r->measured_gets, r->measured_hits, capacity_hit_ratio(r), r->touches, r->touch_hits,
               r->fills, r->expired, r->reclaimed, r->moves, r->move_evictions, r->pool_pages);
    buf_puts(b, ",\"classes\":{");
    bool first = true;
    for (uint32_t c = 1; c <= l->n_classes; c++) {
        const struct capacity_class *k = &r->cls[c];
        if (!k->pages && !k->hits && !k->misses)
            continue;
        buf_printf(b,
                   "%s\"%u\":{\"pages\":%" PRIu64 ",\"used_chunks\":%" PRIu64 ",\"items\":%" PRIu64
                   ",\"evictions\":%" PRIu64 ",\"hits\":%" PRIu64 ",\"misses\":%" PRIu64
                   ",\"fills\":%" PRIu64 ",\"hot\":%" PRIu64 ",\"warm\":%" PRIu64
                   ",\"cold\":%" PRIu64 "}",
                   first ? "" : ",", c, k->pages, k->used_chunks, k->items, k->evictions, k->hits,
                   k->misses, k->fills, k->lru_items[0], k->lru_items[1], k->lru_items[2]);
        first = false;
    }
    buf_puts(b, "}}");
}

int main(int argc, char **argv)
{
    const char *flags = "", *path = NULL, *mrc = NULL;
    size_t measure_from = 0;
    int move_busy = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--flags") && i + 1 < argc)
            flags = argv[++i];
        else if (!strcmp(argv[i], "--measure-from") && i + 1 < argc)
            measure_from = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--move-busy") && i + 1 < argc)
            move_busy = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mrc") && i + 1 < argc)
            mrc = argv[++i];
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else {
            fprintf(stderr,
                    "usage: cachesim_driver [--flags F] [--measure-from N] [--move-busy REQS] "
                    "[--mrc MB,..] OPS\n");
            return 1;
        }
    }
    if (!path) {
        fprintf(stderr, "cachesim_driver: no ops file\n");
        return 1;
    }
    struct slab_settings st;
    struct slab_ladder l;
    char err[256];
    if (slab_settings_from_flags(&st, NULL, flags, NULL, err, sizeof err) != SLAB_OK ||
        slab_ladder_build(&st, &l, err, sizeof err) != SLAB_OK) {
        fprintf(stderr, "cachesim_driver: %s\n", err);
        return 1;
    }
    struct capacity_config cfg;
    capacity_config_default(&cfg, st.mem_limit);
    cfg.use_cas = st.use_cas;
    cfg.measure_from = measure_from;
    lru_flags(flags, &cfg);
    if (move_busy >= 0)
        cfg.move_busy_reqs = (uint32_t)move_busy;

    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 1;
    }
    struct capacity_seq s;
    capacity_seq_init(&s);
    char line[256], kind[32];
    size_t lineno = 0;
    int rc = 1;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        uint64_t hash, vlen;
        unsigned klen, fl, t, fill;
        int exptime;
        if (sscanf(line, "%31s %" SCNu64 " %u %u %" SCNu64 " %u %d %u", kind, &hash, &klen, &fl,
                   &vlen, &t, &exptime, &fill) != 8) {
            fprintf(stderr, "%s:%zu: not 8 fields\n", path, lineno);
            goto out;
        }
        struct capacity_req r = { .key_len = klen,
                                  .flags = fl,
                                  .value_len = vlen,
                                  .t = t,
                                  .exptime = exptime,
                                  .fill = (uint8_t)(fill != 0) };
        if (capacity_kind_parse(kind, &r.kind) || capacity_seq_add_req(&s, hash, &r)) {
            fprintf(stderr, "%s:%zu: bad request\n", path, lineno);
            goto out;
        }
    }
    struct capacity_result res;
    if (capacity_run(&l, &cfg, &s, 0, s.n, &res)) {
        fprintf(stderr, "cachesim_driver: out of memory\n");
        goto out;
    }
    struct buf b;
    buf_init(&b, JSONB_MAX);
    buf_puts(&b, "{\"result\":");
    put_result(&b, &l, &res);
    if (mrc) {
        buf_puts(&b, ",\"mrc\":[");
        char buf[512];
        snprintf(buf, sizeof buf, "%s", mrc);
        bool first = true;
        for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            uint64_t mem = strtoull(w, NULL, 10) * 1024 * 1024;
            if (capacity_mrc(&l, &cfg, &s, 0, s.n, &mem, 1, &res)) {
                buf_free(&b);
                goto out;
            }
            buf_puts(&b, first ? "" : ",");
            put_result(&b, &l, &res);
            first = false;
        }
        buf_puts(&b, "]");
    }
    buf_puts(&b, "}\n");
    char *text = buf_take(&b);
    if (!text) {
        fprintf(stderr, "cachesim_driver: JSON too large\n");
        goto out;
    }
    fputs(text, stdout);
    free(text);
    rc = 0;
out:
    fclose(f);
    capacity_seq_free(&s);
    return rc;
}
