/* model_hits: `slabtap model advise --objective hits`, `slabtap model
 * mrc` and `slabtap model shadows` -- the printing and the replays around
 * model/hitadvise (shadows: each target's measured totals, views targets
 * and target_totals, beside hitadvise_at over the requests since its
 * start).
 * Owns: reading the run's request sequence (writes and reads, through
 * load/verify's reader), the run's slab_automove and LRU from its recorded
 * `stats settings`, the text and JSON reports, and --verify's verdicts.
 * Must never: compute a hit ratio itself (model/capacity and
 * model/hitadvise do) or recommend what hitadvise did not.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/wrapout.h"

#include "core/jsonb.h"
#include "load/verify.h"
#include "model/hitadvise.h"
#include "model/predict.h"
#include "record/pgstore.h"
#include "record/qsql.h"
#include "record/reader.h"
#include "record/sink.h"

/* The run's slab_automove and LRU mode from its first `stats settings`
 * (1.6.18's defaults when none was recorded). */
struct lru_settings {
    unsigned automove;
    enum capacity_lru lru;
};

static int lru_setting(void *ud, const char *name, const char *value)
{
    struct lru_settings *l = ud;
    if (!strcmp(name, "slab_automove")) {
        long a = strtol(value, NULL, 10);
        l->automove = a >= 0 && a <= 2 ? (unsigned)a : 1;
    } else if (!strcmp(name, "lru_maintainer_thread") && !strcmp(value, "no")) {
        l->lru = CAPACITY_LRU_PLAIN;
    }
    return 0;
}

static void run_lru_settings(struct reader *rd, int64_t run_id, unsigned *automove,
                             enum capacity_lru *lru)
{
    struct lru_settings l = { 1, CAPACITY_LRU_SEGMENTED };
    char err[256];
    reader_settings(rd, run_id, READER_FIRST, lru_setting, &l, NULL, 0, NULL, err, sizeof err);
    *automove = l.automove;
    *lru = l.lru;
}

/* --save: text as run_meta key of the run (record/sink.h: a connection of
 * its own; the reader's is read-only). 0, or -1 said on stderr. */
static int save_meta(const struct cli_hits_args *a, const char *key, const char *text)
{
    char err[1024];
    if (sink_save_meta(a->db, a->run_id, key, text, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "slabtap model: --save: %s\n", err);
    return -1;
}

/* The run's request sequence into *seq and the model's input over it (the
 * run's settings, automove, LRU, warm-up); what = the command for errors.
 * 0, or -1 said on stderr. */
static int hits_input(const struct cli_hits_args *a, const char *what, struct capacity_seq *seq,
                      struct hitadvise_input *in)
{
    char err[512];
    if (verify_read_sequence(a->db, a->run_id, true, seq, err, sizeof err)) {
        fprintf(stderr, "slabtap model %s: %s\n", what, err);
        return -1;
    }
    memset(in, 0, sizeof *in);
    in->current = &a->r->settings;
    run_lru_settings(a->reader, a->run_id, &in->current_automove, &in->lru);
    in->seq = seq;
    in->measure_from = (size_t)((double)seq->n * a->warmup);
    in->current_mem_mb = a->r->settings.mem_limit / HITADVISE_MB;
    in->budget = a->memory_limit_mb * HITADVISE_MB;
    in->max_classes = a->max_classes;
    in->try_automove = true;
    return 0;
}

static void cand_flags(const struct hitadvise_candidate *c, const char *version, char *out,
                       size_t len)
{
    char err[256];
    if (slab_settings_flags_for(&c->s, c->mem_mb, version, out, len, err, sizeof err)) {
        snprintf(out, len, "(%s)", err);
        return;
    }
    size_t n = strlen(out);
    snprintf(out + n, len - n, " -o slab_automove=%u", c->automove);
}

static double mb(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

static void print_cand(const struct hitadvise_candidate *c, bool rec)
{
    const struct capacity_result *k = &c->res;
    wrapout_printf("  %-34s -m %4" PRIu64 "  used %7.1f MB  hit ratio %6.2f %%  misses %9" PRIu64
                   "  evictions %9" PRIu64 "  items %8" PRIu64 "  classes %2u%s%s\n",
                   c->label, c->mem_mb, mb(k->malloced), 100 * c->hit_ratio,
                   k->measured_gets - k->measured_hits, k->evictions, k->items, c->classes,
                   c->over_budget ? "  (over the budget at any -m)" : "",
                   rec ? "  <- recommended" : "");
}

static void json_cand(struct buf *b, const char *name, const struct hitadvise_candidate *c,
                      const char *version, const struct verify_hits_result *v)
{
    char flags[1024];
    cand_flags(c, version, flags, sizeof flags);
    if (name) {
        jsonb_string(b, name, strlen(name));
        buf_puts(b, ":");
    }
    buf_puts(b, "{\"label\":");
    jsonb_string(b, c->label, strlen(c->label));
    buf_puts(b, ",\"flags\":");
    jsonb_string(b, flags, strlen(flags));
    buf_printf(
        b,
        ",\"automove\":%u,\"classes\":%u,\"over_budget\":%s,\"predicted\":{\"hit_ratio\":%.6f,"
        "\"memory_bytes\":%" PRIu64 ",\"gets\":%" PRIu64 ",\"hits\":%" PRIu64
        ",\"evictions\":%" PRIu64 ",\"items\":%" PRIu64 ",\"fills\":%" PRIu64 "}",
        c->automove, c->classes, c->over_budget ? "true" : "false", c->hit_ratio, c->res.malloced,
        c->res.measured_gets, c->res.measured_hits, c->res.evictions, c->res.items, c->res.fills);
    if (v && v->measured)
        buf_printf(b,
                   ",\"measured\":{\"hit_ratio\":%.6f,\"memory_bytes\":%" PRIu64
                   ",\"gets\":%" PRIu64 ",\"hits\":%" PRIu64 ",\"evictions\":%" PRIu64
                   ",\"memcached_flags\":",
                   v->hit_ratio, v->malloced, v->gets, v->hits, v->evictions);
    if (v && v->measured) {
        jsonb_string(b, v->flags, strlen(v->flags));
        buf_puts(b, "}");
    }
    buf_puts(b, "}");
}

/* Replays candidate c; prints the verdict line (text). 0 when within the
 * tolerance. */
static int verify_one(const struct cli_hits_args *a, const struct hitadvise_input *in,
                      const struct hitadvise_candidate *c, struct verify_hits_result *v)
{
    verify_hits(a->db, a->run_id, &c->s, c->mem_mb, c->automove, in->lru == CAPACITY_LRU_PLAIN,
                in->measure_from, a->memcached, v);
    if (!v->measured) {
        fprintf(stderr, "slabtap model advise --verify: %s: %s\n", c->label, v->error);
        return -1;
    }
    double d = 100 * (v->hit_ratio - c->hit_ratio);
    bool ok = d <= VERIFY_HITS_TOLERANCE_PP && d >= -VERIFY_HITS_TOLERANCE_PP;
    if (!a->json)
        wrapout_printf(
            "  verify %-34s measured %6.2f %% (predicted %6.2f %%, %+.2f points), memory "
            "used %.1f MB (predicted %.1f MB), %" PRIu64 " fills  %s\n      memcached %s\n",
            c->label, 100 * v->hit_ratio, 100 * c->hit_ratio, d, mb(v->malloced),
            mb(c->res.malloced), v->fills, ok ? "ok" : "MISMATCH", v->flags);
    return ok ? 0 : -1;
}

int cli_model_hits_advise(const struct cli_hits_args *a)
{
    struct capacity_seq seq;
    struct hitadvise_candidate *c = calloc(HITADVISE_MAX, sizeof *c), minc;
    struct verify_hits_result *v = calloc(HITADVISE_MAX, sizeof *v);
    struct hitadvise_input in;
    char flags[1024];
    size_t n = 0;
    uint64_t budget = 0;
    int failed = 1, rec, minrc = 1;
    capacity_seq_init(&seq);
    if (!c || !v) {
        fprintf(stderr, "slabtap model advise: out of memory\n");
        goto out;
    }
    if (hits_input(a, "advise", &seq, &in))
        goto out;
    rec = hitadvise_run(&in, c, &n, &budget);
    if (rec < 0) {
        fprintf(stderr, "slabtap model advise: hits: out of memory, or the run's settings give "
                        "no ladder\n");
        goto out;
    }
    if (!c[0].res.measured_gets) {
        fprintf(stderr,
                "slabtap model advise: --objective hits: run %lld has no reads recorded "
                "after its warm-up (record with --reads on)\n",
                (long long)a->run_id);
        goto out;
    }
    minrc = hitadvise_min_memory(&in, &c[rec].s, c[rec].automove, c[0].hit_ratio,
                                 budget / HITADVISE_MB, &minc);
    failed = 0;
    if (!a->json) {
        wrapout_printf("hits: %zu requests, %" PRIu64
                       " reads measured from request %zu on (warm-up %.0f "
                       "%%); %s LRU, the run's slab_automove %u\n",
                       seq.n, c[0].res.measured_gets, in.measure_from, 100 * a->warmup,
                       in.lru == CAPACITY_LRU_PLAIN ? "plain" : "segmented", in.current_automove);
        wrapout_printf(
            "budget: %.1f MB of memory actually used (total_malloced)%s; each candidate runs "
            "at the largest -m that stays within it\n",
            mb(budget),
            a->memory_limit_mb ? " (--memory-limit)" : ", the run's own settings at its -m");
        for (size_t i = 0; i < n; i++)
            print_cand(&c[i], (int)i == rec);
        cand_flags(&c[rec], a->r->version, flags, sizeof flags);
        if (rec == 0)
            wrapout_printf(
                "recommended: keep the run's own settings -- no candidate predicts more hits in "
                "%.1f MB\n",
                mb(budget));
        else
            wrapout_printf(
                "recommended: %s: hit ratio %.2f %% (%+.2f points over %.2f %%) in %.1f MB "
                "used\n",
                c[rec].label, 100 * c[rec].hit_ratio, 100 * (c[rec].hit_ratio - c[0].hit_ratio),
                100 * c[0].hit_ratio, mb(c[rec].res.malloced));
        wrapout_printf("  memcached flags: %s\n", flags);
        if (minrc == 0)
            wrapout_printf(
                "memory: %s keeps the run's hit ratio (%.2f %%) in %.1f MB used (-m %" PRIu64
                "): %.1f %% less memory than %.1f MB\n",
                rec ? "the recommendation" : "the run's own settings", 100 * c[0].hit_ratio,
                mb(minc.res.malloced), minc.mem_mb,
                budget ? 100.0 * (double)(budget - minc.res.malloced) / (double)budget : 0,
                mb(budget));
    }
    if (a->verify) {
        /* the current settings, the recommendation, and the best of each
         * family, each measured once */
        int pick[HITADVISE_MAX], np = 0;
        const char *fam[] = { "-f ", "slab_sizes", ", automove" };
        pick[np++] = 0;
        if (rec)
            pick[np++] = rec;
        for (size_t f = 0; f < 3; f++) {
            int b = -1;
            for (size_t i = 1; i < n; i++)
                if (!c[i].over_budget && strstr(c[i].label, fam[f]) &&
                    (b < 0 || c[i].hit_ratio > c[b].hit_ratio))
                    b = (int)i;
            bool dup = false;
            for (int j = 0; j < np; j++)
                dup |= pick[j] == b;
            if (b >= 0 && !dup)
                pick[np++] = b;
        }
        if (!a->json)
            wrapout_printf("verifying: run %lld replayed with demand-fill into memcached %s, one "
                           "connection, hits counted from request %zu on:\n",
                           (long long)a->run_id, "(each candidate's flags)", in.measure_from);
        int best = -1;
        for (int j = 0; j < np; j++) {
            failed += verify_one(a, &in, &c[pick[j]], &v[pick[j]]) != 0;
            if (v[pick[j]].measured && (best < 0 || v[pick[j]].hit_ratio > v[best].hit_ratio))
                best = pick[j];
            cli_replay_counted(a->db, v[pick[j]].counter_ops, v[pick[j]].counter_keys);
        }
        /* the recommendation must measure best, within what one replay of
         * the same run varies by (VERIFY_HITS_TIE) */
        bool ok =
            best >= 0 && v[rec].measured && v[rec].hit_ratio + VERIFY_HITS_TIE >= v[best].hit_ratio;
        if (!a->json)
            wrapout_printf("  verify: the recommendation (%s) measured %.2f %%, the best of the %d "
                           "measured %.2f %% (%s): %s\n",
                           c[rec].label, 100 * v[rec].hit_ratio, np,
                           best >= 0 ? 100 * v[best].hit_ratio : 0,
                           best >= 0 ? c[best].label : "none", ok ? "ok" : "NOT THE BEST MEASURED");
        failed += !ok;
    }
    if (a->json || a->save) {
        struct buf b;
        buf_init(&b, JSONB_MAX);
        buf_printf(&b,
                   "{\"run_id\":%lld,\"objective\":\"hits\",\"requests\":%zu,\"measure_from\":%zu,"
                   "\"budget_bytes\":%" PRIu64 ",\"lru\":\"%s\",",
                   (long long)a->run_id, seq.n, in.measure_from, budget,
                   in.lru == CAPACITY_LRU_PLAIN ? "plain" : "segmented");
        json_cand(&b, "current", &c[0], a->r->version, a->verify ? &v[0] : NULL);
        buf_puts(&b, ",");
        json_cand(&b, "recommended", &c[rec], a->r->version, a->verify ? &v[rec] : NULL);
        if (minrc == 0) {
            buf_puts(&b, ",");
            json_cand(&b, "smallest_memory_same_hit_ratio", &minc, a->r->version, NULL);
        }
        buf_puts(&b, ",\"candidates\":[");
        for (size_t i = 0; i < n; i++) {
            if (i)
                buf_puts(&b, ",");
            json_cand(&b, NULL, &c[i], a->r->version, a->verify ? &v[i] : NULL);
        }
        buf_printf(&b, "],\"verified\":%s,\"failed_checks\":%d}\n", a->verify ? "true" : "false",
                   failed);
        char *t = buf_take(&b);
        if (t && a->json)
            fputs(t, stdout);
        if (a->save && (!t || save_meta(a, CLI_META_HITS_ADVICE, t)))
            failed++;
        else if (a->save && !a->json)
            wrapout_printf("saved: run_meta '%s' of run %lld (the page shows it)\n",
                           CLI_META_HITS_ADVICE, (long long)a->run_id);
        free(t);
    }
out:
    capacity_seq_free(&seq);
    free(c);
    free(v);
    return failed;
}

int cli_model_hits_mrc(const struct cli_hits_args *a, size_t points,
                       const struct slab_settings *other, unsigned other_automove)
{
    struct capacity_seq seq;
    struct hitadvise_input in;
    struct hitadvise_candidate *c = NULL, *o = NULL;
    uint64_t mem[64];
    int rc = 1;
    capacity_seq_init(&seq);
    if (hits_input(a, "mrc", &seq, &in))
        goto out;
    uint64_t hi = (a->memory_limit_mb ? a->memory_limit_mb : in.current_mem_mb * 2) * HITADVISE_MB;
    if (points > 64)
        points = 64;
    /* below the memory every class's first page takes there is no curve:
     * start at the larger of that floor and 1/16 of the top */
    struct hitadvise_candidate *floor = calloc(1, sizeof *floor);
    uint64_t lo = hi / 16 > HITADVISE_MB ? hi / 16 : HITADVISE_MB;
    if (!floor ||
        hitadvise_fit(&in, "floor", in.current, in.current_automove, HITADVISE_MB, floor)) {
        free(floor);
        fprintf(stderr, "slabtap model mrc: out of memory, or settings that give no ladder\n");
        goto out;
    }
    if (floor->res.malloced > lo && a->r->sample_keys <= 1)
        lo = floor->res.malloced;
    free(floor);
    size_t np = hitadvise_mrc_points(lo, hi, points, mem);
    c = calloc(np ? np : 1, sizeof *c);
    o = calloc(np ? np : 1, sizeof *o);
    uint32_t sample = a->r->sample_keys > 1 ? a->r->sample_keys : 0;
    if (!c || !o ||
        (sample ? hitadvise_mrc_sampled(&in, in.current, in.current_automove, sample, mem, np, c)
                : hitadvise_mrc(&in, in.current, in.current_automove, mem, np, c)) ||
        (other && (sample ? hitadvise_mrc_sampled(&in, other, other_automove, sample, mem, np, o)
                          : hitadvise_mrc(&in, other, other_automove, mem, np, o)))) {
        fprintf(stderr, "slabtap model mrc: out of memory, or settings that give no ladder\n");
        goto out;
    }
    if (a->json || a->save) {
        struct buf b;
        buf_init(&b, JSONB_MAX);
        buf_printf(&b, "{\"run_id\":%lld,\"measure_from\":%zu,\"sample_keys\":%u,\"curves\":[",
                   (long long)a->run_id, in.measure_from, sample ? sample : 1);
        for (int k = 0; k < (other ? 2 : 1); k++) {
            struct hitadvise_candidate *x = k ? o : c;
            char flags[1024];
            cand_flags(&x[0], a->r->version, flags, sizeof flags);
            buf_puts(&b, k ? ",{\"settings\":" : "{\"settings\":");
            jsonb_string(&b, k ? "other" : "current", k ? 5 : 7);
            buf_puts(&b, ",\"points\":[");
            for (size_t i = 0; i < np; i++)
                buf_printf(&b,
                           "%s{\"budget_bytes\":%" PRIu64 ",\"memory_bytes\":%" PRIu64
                           ",\"mem_mb\":%" PRIu64 ",\"hit_ratio\":%.6f,\"over_budget\":%s}",
                           i ? "," : "", mem[i], x[i].res.malloced, x[i].mem_mb, x[i].hit_ratio,
                           x[i].over_budget ? "true" : "false");
            buf_puts(&b, "]}");
        }
        buf_puts(&b, "]}\n");
        char *t = buf_take(&b);
        if (t && a->json)
            fputs(t, stdout);
        if (a->save && (!t || save_meta(a, CLI_META_HITS_MRC, t))) {
            free(t);
            goto out;
        }
        free(t);
    }
    if (!a->json) {
        wrapout_printf(
            "miss-ratio curve of run %lld: %zu requests, hits counted from request %zu on;\n"
            "each point at the largest -m whose memory used stays within the size (* over it\n"
            "even at -m 1: each class's first page is granted past -m)\n",
            (long long)a->run_id, seq.n, in.measure_from);
        if (sample)
            wrapout_printf(
                "sampled run (--sample-keys 1/%u): each point is the sample in 1/%u of the "
                "memory (SHARDS), -m as given, memory used scaled up; * too few pages per "
                "class for the sample to mean anything (not run)\n",
                sample, sample);
        wrapout_printf("  %10s  %14s %10s%s\n", "memory MB", "current -m/used", "hit ratio",
                       other ? "   other -m/used  hit ratio" : "");
        for (size_t i = 0; i < np; i++) {
            wrapout_printf("  %10.0f  %5" PRIu64 "/%7.1f  %8.2f %%%s", mb(mem[i]), c[i].mem_mb,
                           mb(c[i].res.malloced), 100 * c[i].hit_ratio,
                           c[i].over_budget ? "*" : " ");
            if (other)
                wrapout_printf("   %5" PRIu64 "/%7.1f  %7.2f %%%s", o[i].mem_mb,
                               mb(o[i].res.malloced), 100 * o[i].hit_ratio,
                               o[i].over_budget ? "*" : " ");
            wrapout_printf("\n");
        }
    }
    rc = 0;
out:
    capacity_seq_free(&seq);
    free(c);
    free(o);
    return rc;
}

/* --- model shadows (issue 23) ----------------------------------------------- */

/* One target of the run as the store has it (views targets, target_totals). */
struct shadow_row {
    char target[160], kind[16], flags[512];
    int64_t sample_n, memory_mb, since_ns;
    bool have_totals;
    int64_t hits, misses, evictions, pages, waste, classes;
    double hit_ratio; /* < 0: no reads measured */
    int64_t first_ns, last_ns;
    /* the prediction */
    bool predicted;
    char why[160]; /* when not predicted */
    size_t from;   /* the first request the shadow saw */
    struct hitadvise_candidate c;
};

#define SHADOW_ROWS_MAX 16

static const char SQL_SH_TARGETS[] =
    "SELECT target, kind, coalesce(flags, ''), coalesce(sample_n, 1), coalesce(memory_mb, 0),"
    " coalesce(data_since_ns, started_ns, 0) FROM targets WHERE run_id = ?1"
    " ORDER BY kind <> 'primary', target";
static const char SQL_SH_TOTALS[] =
    "SELECT target, get_hits, get_misses, evictions, pages, waste_bytes, classes, t_first_ns,"
    " t_last_ns FROM target_totals WHERE run_id = ?1";
/* the requests recorded before a time: where a (re)started shadow's data
 * begins in the replayed sequence (writes, then reads: the sequence is
 * their merge in time order) */
static const char SQL_SH_WRITES_BEFORE[] =
    "SELECT count(*) FROM sets WHERE run_id = ?1 AND t_ns < ?2";
static const char SQL_SH_READS_BEFORE[] =
    "SELECT count(*) FROM reads WHERE run_id = ?1 AND t_ns < ?2";

static int64_t sh_count(struct qsql_db *db, const char *sql, int64_t run_id, int64_t t_ns)
{
    struct qsql q;
    int64_t n = -1;
    if (qsql_prepare(&q, db, sql, NULL))
        return -1;
    qsql_bind(&q, 1, run_id);
    qsql_bind(&q, 2, t_ns);
    if (qsql_step(&q) == QSQL_ROW)
        n = qsql_int(&q, 0);
    qsql_finalize(&q);
    return n;
}

static void sh_copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* The run's targets and their measured totals; the count, or -1 said. */
static int sh_read(struct qsql_db *db, int64_t run_id, struct shadow_row *rows)
{
    struct qsql q;
    int n = 0, rc;
    if (qsql_prepare(&q, db, SQL_SH_TARGETS, NULL)) {
        fprintf(stderr, "slabtap model shadows: %s (a store from before shadows?)\n",
                qsql_errmsg(db));
        return -1;
    }
    qsql_bind(&q, 1, run_id);
    while (n < SHADOW_ROWS_MAX && (rc = qsql_step(&q)) == QSQL_ROW) {
        struct shadow_row *r = &rows[n++];
        memset(r, 0, sizeof *r);
        sh_copy(r->target, sizeof r->target, qsql_text(&q, 0));
        sh_copy(r->kind, sizeof r->kind, qsql_text(&q, 1));
        sh_copy(r->flags, sizeof r->flags, qsql_text(&q, 2));
        r->sample_n = qsql_int(&q, 3);
        r->memory_mb = qsql_int(&q, 4);
        r->since_ns = qsql_int(&q, 5);
        r->hit_ratio = -1;
    }
    qsql_finalize(&q);
    if (qsql_prepare(&q, db, SQL_SH_TOTALS, NULL)) {
        fprintf(stderr, "slabtap model shadows: %s\n", qsql_errmsg(db));
        return -1;
    }
    qsql_bind(&q, 1, run_id);
    while (qsql_step(&q) == QSQL_ROW) {
        const char *t = qsql_text(&q, 0);
        for (int i = 0; t && i < n; i++) {
            struct shadow_row *r = &rows[i];
            if (strcmp(r->target, t))
                continue;
            r->have_totals = true;
            r->hits = qsql_int(&q, 1);
            r->misses = qsql_int(&q, 2);
            r->evictions = qsql_int(&q, 3);
            r->pages = qsql_int(&q, 4);
            r->waste = qsql_int(&q, 5);
            r->classes = qsql_int(&q, 6);
            r->first_ns = qsql_int(&q, 7);
            r->last_ns = qsql_int(&q, 8);
            if (r->hits + r->misses > 0)
                r->hit_ratio = (double)r->hits / (double)(r->hits + r->misses);
        }
    }
    qsql_finalize(&q);
    return n;
}

static int sh_open(const char *dbname, struct qsql_db *db)
{
    char err[512];
    memset(db, 0, sizeof *db);
    if (pgstore_is_uri(dbname)) {
        if (qsql_open_pg(db, dbname, err, sizeof err) == 0)
            return 0;
        fprintf(stderr, "slabtap model shadows: %s\n", err);
        return -1;
    }
    if (sqlite3_open_v2(dbname, &db->lite, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
        return 0;
    fprintf(stderr, "slabtap model shadows: %s: %s\n", dbname,
            db->lite ? sqlite3_errmsg(db->lite) : "cannot open");
    return -1;
}

static void sh_close(struct qsql_db *db)
{
    if (db->pg)
        qsql_close_pg(db);
    if (db->lite)
        sqlite3_close(db->lite);
}

/* slab_automove from a target's flags (-o slab_automove=N), else def. */
static unsigned sh_automove(const char *flags, unsigned def)
{
    const char *a = strstr(flags, "slab_automove=");
    return a && a[14] >= '0' && a[14] <= '2' ? (unsigned)(a[14] - '0') : def;
}

static void sh_json_side(struct buf *b, double hit_ratio, int64_t evictions, int64_t pages,
                         int64_t waste, int64_t classes)
{
    if (hit_ratio < 0)
        buf_puts(b, "{\"hit_ratio\":null");
    else
        buf_printf(b, "{\"hit_ratio\":%.6f", hit_ratio);
    buf_printf(b, ",\"evictions\":%lld,\"pages\":%lld,\"waste_bytes\":%lld,\"classes\":%lld}",
               (long long)evictions, (long long)pages, (long long)waste, (long long)classes);
}

int cli_model_hits_shadows(const struct cli_hits_args *a)
{
    struct shadow_row *rows = calloc(SHADOW_ROWS_MAX, sizeof *rows);
    struct capacity_seq seq;
    struct hitadvise_input in;
    struct qsql_db db;
    bool have_seq = false, have_db = false;
    char seq_why[200] = "";
    int n, rc = 1;
    capacity_seq_init(&seq);
    if (!rows) {
        fprintf(stderr, "slabtap model shadows: out of memory\n");
        return 1;
    }
    if (sh_open(a->db, &db))
        goto out;
    have_db = true;
    if ((n = sh_read(&db, a->run_id, rows)) < 0)
        goto out;
    int shadows = 0;
    for (int i = 0; i < n; i++)
        shadows += strcmp(rows[i].kind, "primary") != 0;
    if (!shadows) {
        if (a->json)
            printf("{\"run_id\":%lld,\"targets\":[]}\n", (long long)a->run_id);
        else
            wrapout_printf("run %lld has no shadows (proxy --shadow FLAGS records them)\n",
                           (long long)a->run_id);
        rc = 0;
        goto out;
    }
    /* the prediction replays the run's requests, reads included: without
     * reads there is no hit ratio to predict */
    int64_t nreads = reader_reads_count(a->reader, a->run_id);
    if (nreads <= 0) {
        snprintf(seq_why, sizeof seq_why,
                 "needs the run's reads, and the run has none recorded (proxy --reads on)");
    } else {
        char err[512];
        if (verify_read_sequence(a->db, a->run_id, true, &seq, err, sizeof err)) {
            snprintf(seq_why, sizeof seq_why, "the requests could not be read: %.150s", err);
        } else {
            have_seq = true;
            memset(&in, 0, sizeof in);
            in.current = &a->r->settings;
            run_lru_settings(a->reader, a->run_id, &in.current_automove, &in.lru);
            in.seq = &seq;
        }
    }
    for (int i = 0; i < n; i++) {
        struct shadow_row *r = &rows[i];
        bool primary = !strcmp(r->kind, "primary");
        struct slab_settings s;
        unsigned given = 0, automove = in.current_automove;
        char err[256];
        if (!have_seq) {
            snprintf(r->why, sizeof r->why, "%s", seq_why);
            continue;
        }
        if (!strcmp(r->kind, "upstream")) {
            snprintf(r->why, sizeof r->why,
                     "an operator's memcached: its flags are not known to slabtap");
            continue;
        }
        if (primary) {
            s = a->r->settings;
            r->from = 0;
            r->memory_mb = (int64_t)(s.mem_limit / HITADVISE_MB);
        } else {
            if (slab_settings_from_flags(&s, &given, r->flags, a->r->version, err, sizeof err) !=
                SLAB_OK) {
                snprintf(r->why, sizeof r->why, "its flags: %.140s", err);
                continue;
            }
            automove = sh_automove(r->flags, 1);
            int64_t w = sh_count(&db, SQL_SH_WRITES_BEFORE, a->run_id, r->since_ns);
            int64_t rd = sh_count(&db, SQL_SH_READS_BEFORE, a->run_id, r->since_ns);
            if (w < 0 || rd < 0) {
                snprintf(r->why, sizeof r->why, "where its data starts: %.130s", qsql_errmsg(&db));
                continue;
            }
            r->from = (size_t)(w + rd) < seq.n ? (size_t)(w + rd) : seq.n;
        }
        if (r->memory_mb <= 0) {
            snprintf(r->why, sizeof r->why, "its memory (-m) is not recorded");
            continue;
        }
        if (hitadvise_at(&in, &s, automove, (uint64_t)r->memory_mb,
                         r->sample_n > 1 ? (uint32_t)r->sample_n : 1, r->from, &r->c)) {
            snprintf(r->why, sizeof r->why, "out of memory, or flags that give no ladder");
            continue;
        }
        r->predicted = true;
    }
    if (a->json) {
        struct buf b;
        buf_init(&b, JSONB_MAX);
        buf_printf(&b, "{\"run_id\":%lld,\"requests\":%zu,\"targets\":[", (long long)a->run_id,
                   seq.n);
        for (int i = 0; i < n; i++) {
            struct shadow_row *r = &rows[i];
            buf_puts(&b, i ? ",{\"target\":" : "{\"target\":");
            jsonb_string(&b, r->target, strlen(r->target));
            buf_puts(&b, ",\"kind\":");
            jsonb_string(&b, r->kind, strlen(r->kind));
            buf_puts(&b, ",\"flags\":");
            jsonb_string(&b, r->flags, strlen(r->flags));
            buf_printf(&b, ",\"sample_n\":%lld,\"memory_mb\":%lld,\"since_ns\":%lld,\"measured\":",
                       (long long)r->sample_n, (long long)r->memory_mb, (long long)r->since_ns);
            if (r->have_totals)
                sh_json_side(&b, r->hit_ratio, r->evictions, r->pages, r->waste, r->classes);
            else
                buf_puts(&b, "null");
            buf_puts(&b, ",\"predicted\":");
            if (r->predicted) {
                const struct capacity_result *k = &r->c.res;
                buf_printf(&b, "{\"from_request\":%zu,\"reads\":%llu,\"result\":", r->from,
                           (unsigned long long)k->measured_gets);
                sh_json_side(&b, k->measured_gets ? r->c.hit_ratio : -1, (int64_t)k->evictions,
                             (int64_t)k->pages, (int64_t)k->chunk_waste, (int64_t)k->classes_used);
                buf_puts(&b, "}");
            } else {
                buf_puts(&b, "null,\"why\":");
                jsonb_string(&b, r->why, strlen(r->why));
            }
            buf_puts(&b, "}");
        }
        buf_puts(&b, "]}\n");
        if (b.failed) {
            fprintf(stderr, "slabtap model shadows: out of memory\n");
            buf_free(&b);
            goto out;
        }
        fwrite(b.data, 1, b.len, stdout);
        buf_free(&b);
    } else {
        wrapout_printf("run %lld: each target measured (its stats samples since its last "
                       "(re)start) beside the model's prediction for its flags over the "
                       "recorded requests from that start (%zu requests in all); a 1/N "
                       "shadow: its own keys and memory, not scaled\n",
                       (long long)a->run_id, seq.n);
        wrapout_printf("  %-28s %-9s %9s %9s %10s %6s %10s %7s\n", "target", "", "hit ratio",
                       "evictions", "waste MB", "pages", "classes", "-m");
        for (int i = 0; i < n; i++) {
            struct shadow_row *r = &rows[i];
            char hr[32];
            if (r->have_totals && r->hit_ratio >= 0)
                snprintf(hr, sizeof hr, "%7.2f %%", 100 * r->hit_ratio);
            else
                snprintf(hr, sizeof hr, "%9s", "-");
            if (r->have_totals)
                wrapout_printf("  %-28.28s %-9s %9s %9lld %10.1f %6lld %10lld %7lld\n", r->target,
                               "measured", hr, (long long)r->evictions, mb((uint64_t)r->waste),
                               (long long)r->pages, (long long)r->classes, (long long)r->memory_mb);
            else
                wrapout_printf("  %-28.28s %-9s no sample yet\n", r->target, "measured");
            if (r->predicted) {
                const struct capacity_result *k = &r->c.res;
                if (k->measured_gets)
                    snprintf(hr, sizeof hr, "%7.2f %%", 100 * r->c.hit_ratio);
                else
                    snprintf(hr, sizeof hr, "%9s", "-");
                wrapout_printf("  %-28s %-9s %9s %9llu %10.1f %6llu %10u %7lld\n", "", "predicted",
                               hr, (unsigned long long)k->evictions, mb(k->chunk_waste),
                               (unsigned long long)k->pages, k->classes_used,
                               (long long)r->memory_mb);
            } else {
                wrapout_printf("  %-28s %-9s not predicted: %s\n", "", "predicted", r->why);
            }
        }
    }
    rc = 0;
out:
    if (have_db)
        sh_close(&db);
    capacity_seq_free(&seq);
    free(rows);
    return rc;
}
