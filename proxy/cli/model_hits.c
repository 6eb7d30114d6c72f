/* model_hits: `slabtap model advise --objective hits` and `slabtap model
 * mrc` -- the printing and the replays around model/hitadvise.
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
#include <sqlite3.h>

#include "core/jsonb.h"
#include "load/verify.h"
#include "model/hitadvise.h"
#include "model/predict.h"
#include "record/runs.h"

/* The run's slab_automove and LRU mode from its first `stats settings`
 * (1.6.18's defaults when none was recorded). */
static void run_lru_settings(sqlite3 *db, int64_t run_id, unsigned *automove,
                             enum capacity_lru *lru)
{
    sqlite3_stmt *st;
    *automove = 1;
    *lru = CAPACITY_LRU_SEGMENTED;
    if (sqlite3_prepare_v2(db,
                           "SELECT json_extract(settings, '$.slab_automove'),"
                           " json_extract(settings, '$.lru_maintainer_thread')"
                           " FROM settings WHERE run_id = ?1 ORDER BY t_ns LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
            int64_t a = sqlite3_column_int64(st, 0);
            *automove = a >= 0 && a <= 2 ? (unsigned)a : 1;
        }
        const unsigned char *m = sqlite3_column_text(st, 1);
        if (m && !strcmp((const char *)m, "no"))
            *lru = CAPACITY_LRU_PLAIN;
    }
    sqlite3_finalize(st);
}

/* --save: text as run_meta key of the run (a connection of its own: the
 * reader's is read-only). 0, or -1 said on stderr. */
static int save_meta(const struct cli_hits_args *a, const char *key, const char *text)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_open_v2(a->db, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        goto out;
    sqlite3_busy_timeout(db, RUNS_BUSY_MS);
    if (sqlite3_prepare_v2(
            db, "INSERT OR REPLACE INTO run_meta (run_id, key, value) VALUES (?1, ?2, ?3)", -1, &st,
            NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, a->run_id);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, text, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_DONE)
        rc = 0;
out:
    if (rc && db &&
        ((sqlite3_errcode(db) & 0xff) == SQLITE_BUSY ||
         (sqlite3_errcode(db) & 0xff) == SQLITE_LOCKED)) {
        char why[1024];
        runs_locked_why(a->db, sqlite3_errmsg(db), why, sizeof why);
        fprintf(stderr, "slabtap model: --save: %s: %s\n", a->db, why);
    } else if (rc)
        fprintf(stderr, "slabtap model: --save: %s: %s\n", a->db,
                db ? sqlite3_errmsg(db) : "cannot open");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
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
    run_lru_settings(a->sqlite, a->run_id, &in->current_automove, &in->lru);
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
