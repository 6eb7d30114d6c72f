/* sink_twin: the same recorded rows into either store, for
 * tests/integration/test_pgstore.py to compare what each keeps of them (the
 * aggregates, row for row).
 *
 *   sink_twin DB ROWS [--sample 1/N|none] [--node NAME] [--keys full|prefix]
 *
 * DB: a SQLite file or a postgresql:// URI (record/sink.h). ROWS rows, a
 * function of their number alone, in batches of 1,000 committed with their
 * batch number as the recorder does: four writes in five (set mostly; add,
 * replace, cas, append, ms in several modes, delete, incr, touch; values
 * from empty to 300 KB, so item sizes fall in exact and in bucketed cells;
 * flags or none; slab classes; stored, refused, failed and numeric
 * answers; latencies or none), one read in five (get hits with their class,
 * misses on keys written before or never), over three minutes from a fixed
 * time. --sample keeps the rows of the keys core/sample.h keeps; the others
 * go as sampled_out, as the proxy sends them. --keys: what of a key is
 * recorded (default full; prefix: 50 prefixes, agg_prefixes). Prints
 * "sink_twin: run ID". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/keyfmt.h"
#include "core/sample.h"
#include "record/row.h"
#include "record/sink.h"

#define BATCH 1000
#define T0 INT64_C(1764633600000000000) /* 2025-12-02 00:00 UTC */

static uint64_t mix(uint64_t x) /* splitmix64 */
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

struct twin {
    uint64_t wseq, rseq;
    uint32_t sample;
    enum keyfmt_mode keys;
};

static void gen_row(struct twin *tw, uint64_t i, struct rec_row *row)
{
    static const struct {
        enum mc_cmd cmd;
        char mode;
    } cmds[] = { { MC_CMD_SET, 0 },    { MC_CMD_SET, 0 },    { MC_CMD_SET, 0 },
                 { MC_CMD_SET, 0 },    { MC_CMD_ADD, 0 },    { MC_CMD_REPLACE, 0 },
                 { MC_CMD_CAS, 0 },    { MC_CMD_APPEND, 0 }, { MC_CMD_MS, 0 },
                 { MC_CMD_MS, 'S' },   { MC_CMD_MS, 'A' },   { MC_CMD_MS, 'E' },
                 { MC_CMD_DELETE, 0 }, { MC_CMD_INCR, 0 },   { MC_CMD_TOUCH, 0 },
                 { MC_CMD_SET, 0 } };
    static const char *const answers[] = { "STORED",    "STORED",
                                           "STORED",    "noreply",
                                           "HD",        "NOT_STORED",
                                           "EXISTS",    "SERVER_ERROR out of memory storing object",
                                           "NOT_FOUND", "" };
    uint64_t h = mix(i);
    char key[64];
    int klen = snprintf(key, sizeof key, "k%u:%u", (unsigned)(h % 50), (unsigned)((h >> 8) % 3000));
    memset(row, 0, sizeof *row);
    row->key_hash = keyfmt_hash(key, (size_t)klen);
    row->key_len = (uint16_t)klen;
    row->key_text_len =
        (int16_t)keyfmt_text(tw->keys, key, (size_t)klen, row->key_text, sizeof row->key_text);
    row->conn_id = (uint32_t)(h >> 60) + 1;
    row->t_ns = T0 + (int64_t)i * 9000000; /* 9 ms apart */
    row->sampled_out = !sample_keep(row->key_hash, tw->sample);
    if (i % 5 == 0) { /* a read */
        row->kind = REC_ROW_READ;
        row->cmd = MC_CMD_GET;
        row->seq = ++tw->rseq;
        row->after_write = tw->wseq;
        row->hit = (h >> 13) % 3 != 0;
        row->value_len = row->hit ? (int64_t)((h >> 20) % 2000) : -1;
        row->has_flags = row->hit;
        row->class_id = row->hit ? (uint32_t)((h >> 30) % 30) + 1 : 0;
        row->latency_ns = -1;
        return;
    }
    unsigned c = (unsigned)((h >> 16) % (sizeof cmds / sizeof cmds[0]));
    row->kind = REC_ROW_WRITE;
    row->cmd = (uint8_t)cmds[c].cmd;
    row->ms_mode = cmds[c].mode;
    row->seq = ++tw->wseq;
    bool stores =
        cmds[c].cmd != MC_CMD_DELETE && cmds[c].cmd != MC_CMD_INCR && cmds[c].cmd != MC_CMD_TOUCH;
    row->value_len = -1;
    if (stores) {
        uint64_t v = (h >> 24) % 100;
        row->value_len = v < 3    ? 0
                         : v < 90 ? (int64_t)((h >> 32) % 3000)
                                  : (int64_t)((h >> 32) % 300000);
        row->has_flags = true;
        row->flags = (h >> 5) & 1 ? (uint32_t)((h >> 40) & 0xff) : 0;
        row->has_exptime = true;
        row->exptime = (int64_t)((h >> 48) % 3) * 60;
        row->class_id = (uint32_t)((h >> 30) % 40) + 1;
    }
    const char *a = answers[(h >> 52) % (sizeof answers / sizeof answers[0])];
    if (cmds[c].cmd == MC_CMD_INCR)
        a = (h >> 7) & 1 ? "42" : "NOT_FOUND";
    else if (cmds[c].cmd == MC_CMD_DELETE)
        a = (h >> 7) & 1 ? "DELETED" : "NOT_FOUND";
    else if (cmds[c].cmd == MC_CMD_TOUCH)
        a = "TOUCHED";
    snprintf(row->answer, sizeof row->answer, "%s", *a ? a : "no_answer");
    row->latency_ns = (h >> 9) % 17 ? (int64_t)((h >> 36) % 3000000) : -1;
}

int main(int argc, char **argv)
{
    struct twin tw = { .sample = 1, .keys = KEYFMT_FULL };
    const char *node = "twin";
    char err[1536];
    if (argc < 3) {
        fprintf(stderr, "usage: sink_twin DB ROWS [--sample 1/N|none] [--node NAME]"
                        " [--keys full|prefix]\n");
        return 2;
    }
    uint64_t rows = strtoull(argv[2], NULL, 10);
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sample") && !sample_parse(argv[i + 1], &tw.sample))
            continue;
        if (!strcmp(argv[i], "--node")) {
            node = argv[i + 1];
            continue;
        }
        if (!strcmp(argv[i], "--keys") && keyfmt_parse_mode(argv[i + 1], &tw.keys) == 0)
            continue;
        fprintf(stderr, "sink_twin: %s %s?\n", argv[i], argv[i + 1]);
        return 2;
    }
    struct sink k;
    sink_init(&k, argv[1]);
    if (sink_open(&k, argv[1], err, sizeof err)) {
        fprintf(stderr, "sink_twin: %s\n", err);
        return 1;
    }
    struct sink_run run = { "sink_twin", "-", "sink_twin", keyfmt_mode_name(tw.keys), node, NULL };
    int64_t id = sink_run_begin(&k, &run, err, sizeof err);
    struct rec_row *batch = calloc(BATCH, sizeof *batch);
    int rc = id < 0 || !batch;
    uint64_t recorded = 0;
    for (uint64_t i = 1, no = 1; !rc && i <= rows; no++) {
        size_t n = 0;
        for (; n < BATCH && i <= rows; n++, i++) {
            gen_row(&tw, i, &batch[n]);
            recorded += batch[n].kind == REC_ROW_WRITE && !batch[n].sampled_out;
        }
        rc = sink_begin(&k, err, sizeof err);
        for (size_t j = 0; j < n && !rc; j++)
            rc = sink_put_row(&k, id, &batch[j], err, sizeof err);
        if (sink_commit(&k, id, (int64_t)no, rc, err, sizeof err))
            rc = -1;
    }
    if (!rc && sink_run_end(&k, id, recorded, 0, err, sizeof err))
        rc = -1;
    if (rc)
        fprintf(stderr, "sink_twin: %s\n", id < 0 || batch ? err : "out of memory");
    else
        printf("sink_twin: run %" PRId64 "\n", id);
    free(batch);
    sink_close(&k);
    return rc ? 1 : 0;
}
