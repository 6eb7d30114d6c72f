/* model_cli: `slabtap model <subcommand>`, the command line face of
 * slab_model.
 * Owns: flag parsing for memcached's slab settings (cli_ladder_flags_*,
 * which `load --dry-run` shares through cli.h), the subcommand table, and
 * printing; all the arithmetic stays in slab_model.
 * Must never: compute a ladder or an item size itself (slab_model,
 * model_replay and model_advise do). Exit codes: 0 ok, 1 failure, 2 usage.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/log.h"
#include "core/opt.h"
#include "load/verify.h"
#include "model/advise.h"
#include "model/predict.h"
#include "model/slab_model.h"
#include "record/runs.h"

struct model_subcommand {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv);
};

static int model_ladder(int argc, char **argv);
static int model_predict(int argc, char **argv);
static int model_advise(int argc, char **argv);

static const struct model_subcommand subcommands[] = {
    { "ladder", "print the chunk ladder, line for line as memcached -vv prints it", model_ladder },
    { "predict", "a recorded run's per-class counters, predicted beside memcached's own",
      model_predict },
    { "advise", "settings that waste less for a recorded run's sizes (--verify replays)",
      model_advise },
};

static const char settings_usage[] =
    "memcached settings (same meaning and defaults as memcached 1.6.18):\n"
    "  -n BYTES               minimum space for key+value+flags (-n, default 48)\n"
    "  -f FACTOR              chunk size growth factor (-f, default 1.25)\n"
    "  -I SIZE                max item size, k/m suffix allowed (-I, default 1m)\n"
    "  -m MEGABYTES           memory limit; only checked against -I (-m, default 64)\n"
    "  --slab-chunk-max BYTES largest chunk, in BYTES as 1.6.18 reads\n"
    "                         -o slab_chunk_max (default 524288)\n"
    "  --slab-sizes A-B-C     explicit class sizes (-o slab_sizes=A-B-C)\n"
    "  --no-cas, -C           CAS off: items are 8 bytes smaller (-C)\n";

static void usage_model(FILE *out)
{
    fprintf(out, "usage: slabtap model <subcommand> [options]\n\n"
                 "memcached's slab ladder and item sizes, predicted without a server.\n\n"
                 "subcommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].help);
    fprintf(out, "\nslabtap model <subcommand> --help for its options; every subcommand\n"
                 "takes -v/--verbose (debug log lines too) and -q/--quiet (warnings and\n"
                 "errors only).\n");
}

static void usage_ladder(FILE *out)
{
    fprintf(out,
            "usage: slabtap model ladder [options]\n\n"
            "Prints the slab classes memcached would create, in the exact format of\n"
            "the `slab class ...` lines `memcached -vv` writes to stderr at start-up.\n\n"
            "%s  -v, --verbose          debug log lines too\n"
            "  -q, --quiet            warnings and errors only\n"
            "  -h, --help             this text\n",
            settings_usage);
}

void cli_ladder_flags_init(struct cli_ladder_flags *f)
{
    memset(f, 0, sizeof *f);
    slab_settings_default(&f->s);
    f->chunk_size_min = f->s.chunk_size_min;
    f->item_size_max = f->s.item_size_max;
    f->mem_mb = f->s.mem_limit / (1024 * 1024);
    f->slab_chunk_max = f->s.slab_chunk_max;
}

void cli_ladder_flags_apply(struct cli_ladder_flags *f, struct slab_settings *out)
{
    /* CLI_OPTS_LADDER bounds each field to what its slab_settings member holds */
    f->s.chunk_size_min = (uint32_t)f->chunk_size_min;
    f->s.item_size_max = (uint32_t)f->item_size_max;
    f->s.mem_limit = f->mem_mb * 1024 * 1024;
    f->s.slab_chunk_max = (uint32_t)f->slab_chunk_max;
    if (f->no_cas)
        f->s.use_cas = false;
    *out = f->s;
}

/* --slab-sizes A-B-C into the settings (range checks come with the ladder). */
static int model_slab_sizes(void *dest, const char *value, char *err, size_t errlen)
{
    return slab_parse_slab_sizes(value, dest, err, errlen) == SLAB_OK ? 0 : -1;
}

/* The memcached settings flags of `model ladder` into *s. */
static enum opt_result parse_settings(int argc, char **argv, struct slab_settings *s, char *err,
                                      size_t errlen)
{
    struct cli_ladder_flags f;
    int level = (int)log_get_level();
    cli_ladder_flags_init(&f);
    const struct opt_spec table[] = {
        CLI_OPTS_LADDER(&f),
        { "slab-sizes", 0, OPT_CALL, .dest = &f.s, .call = model_slab_sizes },
        CLI_OPTS_VERBOSITY(&level, NULL),
    };
    enum opt_result r = opt_parse("model ladder", table, sizeof table / sizeof table[0], argc, argv,
                                  NULL, err, errlen);
    if (r != OPT_OK)
        return r;
    log_set_level((enum log_level)level);
    cli_ladder_flags_apply(&f, s);
    return OPT_OK;
}

static int model_ladder(int argc, char **argv)
{
    struct slab_settings s;
    char perr[512];
    switch (parse_settings(argc, argv, &s, perr, sizeof perr)) {
    case OPT_HELP: usage_ladder(stdout); return 0;
    case OPT_ERROR:
        fprintf(stderr, "%s\n\n", perr);
        usage_ladder(stderr);
        return 2;
    case OPT_OK: break;
    }
    struct slab_ladder ladder;
    char err[200] = "";
    enum slab_status st = slab_ladder_build(&s, &ladder, err, sizeof err);
    if (st != SLAB_OK) {
        /* memcached refuses to start on these (exit 64, EX_USAGE) */
        fprintf(stderr, "slabtap model ladder: %s\n", *err ? err : slab_status_str(st));
        return 2;
    }
    char text[(SLAB_MODEL_MAX_CLASSES + 1) * SLAB_MODEL_LINE_MAX];
    size_t n = slab_ladder_format(&ladder, text, sizeof text);
    if (n >= sizeof text) {
        fprintf(stderr, "slabtap model ladder: internal error: ladder text too long\n");
        return 1;
    }
    if (fwrite(text, 1, n, stdout) != n || fflush(stdout) != 0) {
        fprintf(stderr, "slabtap model ladder: write failed: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}

/* --db FILE [--run N] [--max-classes K] [--verify] [--memcached PATH] */
struct run_opts {
    const char *db, *run, *memcached;
    long long max_classes;
    bool verify;
};

/* predict's and advise's flags (advise adds --max-classes, --verify,
 * --memcached). */
static enum opt_result parse_run_opts(int argc, char **argv, struct run_opts *o, bool advise,
                                      char *err, size_t errlen)
{
    const char *command = advise ? "model advise" : "model predict";
    int level = (int)log_get_level();
    uint64_t max_classes = SLAB_MODEL_MAX_CLASSES;
    memset(o, 0, sizeof *o);
    const struct opt_spec table[] = {
        { "db", 0, OPT_STRING, .dest = &o->db },
        { "run", 0, OPT_STRING, .dest = &o->run },
        CLI_OPTS_VERBOSITY(&level, NULL),
        /* advise only, from here */
        { "max-classes", 0, OPT_UINT, .dest = &max_classes, .min = 2,
          .max = SLAB_MODEL_MAX_CLASSES },
        { "verify", 0, OPT_FLAG, .dest = &o->verify },
        { "memcached", 0, OPT_STRING, .dest = &o->memcached },
    };
    size_t n = sizeof table / sizeof table[0] - (advise ? 0 : 3);
    enum opt_result r = opt_parse(command, table, n, argc, argv, NULL, err, errlen);
    if (r != OPT_OK)
        return r;
    log_set_level((enum log_level)level);
    o->max_classes = (long long)max_classes;
    if (!o->db)
        return opt_error(err, errlen, command, "--db FILE is required");
    return OPT_OK;
}

static void usage_predict(FILE *out)
{
    fprintf(out, "usage: slabtap model predict --db FILE [--run NAME_OR_ID] [-v|-q]\n\n"
                 "Replays the run's recorded writes through memcached's slab model (with the\n"
                 "settings memcached reported for the run) and prints, per class, the\n"
                 "predicted used_chunks, mem_requested and pages beside the run's last\n"
                 "stats sample. Exit 1 when an exact prediction does not match.\n\n"
                 "  -v, --verbose  debug log lines too\n"
                 "  -q, --quiet    warnings and errors only\n"
                 "  -h, --help     this text\n");
}

static void usage_advise(FILE *out)
{
    fprintf(out,
            "usage: slabtap model advise --db FILE [--run NAME_OR_ID] [--max-classes K]\n"
            "                           [--verify [--memcached PATH]] [-v|-q]\n\n"
            "For the items the run left in memcached: the waste under the run's own\n"
            "settings, under the best -f/-n, and under a slab_sizes ladder fitted to\n"
            "the sizes (at most K classes, 2..%d, default %d); warns about cliffs.\n"
            "--verify replays the run against memcacheds started with the advised\n"
            "flags and prints the measured waste beside the prediction.\n\n"
            "  -v, --verbose  debug log lines too\n"
            "  -q, --quiet    warnings and errors only\n"
            "  -h, --help     this text\n",
            SLAB_MODEL_MAX_CLASSES, SLAB_MODEL_MAX_CLASSES);
}

/* The flags of predict (advise false) or advise: true to go on; false
 * with the exit status in *rc (help 0, usage 2) once usage is printed. */
static bool run_opts_or_usage(int argc, char **argv, struct run_opts *o, bool advise, int *rc)
{
    char err[512];
    void (*usage)(FILE *) = advise ? usage_advise : usage_predict;
    switch (parse_run_opts(argc, argv, o, advise, err, sizeof err)) {
    case OPT_HELP:
        usage(stdout);
        *rc = 0;
        return false;
    case OPT_ERROR:
        fprintf(stderr, "%s\n\n", err);
        usage(stderr);
        *rc = 2;
        return false;
    case OPT_OK: break;
    }
    return true;
}

static int open_run(const struct run_opts *o, sqlite3 **db, struct prediction *r)
{
    char err[256];
    if (sqlite3_open_v2(o->db, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "slabtap model: %s: %s\n", o->db, sqlite3_errmsg(*db));
        return -1;
    }
    int64_t id = runs_find(*db, o->run);
    if (id < 0) {
        fprintf(stderr, "slabtap model: %s: no run %s\n", o->db, o->run ? o->run : "at all");
        return -1;
    }
    if (runs_read_prediction(*db, id, r, err, sizeof err)) {
        fprintf(stderr, "slabtap model: %s: %s\n", o->db, err);
        return -1;
    }
    return 0;
}

static int model_predict(int argc, char **argv)
{
    struct run_opts o;
    sqlite3 *db = NULL;
    struct prediction *r = calloc(1, sizeof *r);
    int rc = 1;
    if (!run_opts_or_usage(argc, argv, &o, false, &rc) || !r)
        goto out;
    if (open_run(&o, &db, r))
        goto out;
    predict_print(r, stdout);
    rc = r->exact_expected && predict_mismatches(r) ? 1 : 0;
out:
    if (r)
        predict_free(r);
    free(r);
    sqlite3_close(db);
    return rc;
}

static void print_eval(const char *what, const char *flags, const struct advise_eval *e)
{
    printf("  %-26s %-34s waste %6.2f %%  (%llu of %llu bytes)  classes %u in ladder, %u used\n",
           what, flags, e->waste_pct, (unsigned long long)e->waste,
           (unsigned long long)e->allocated, e->classes_in_ladder, e->classes_used);
}

static int model_verify_one(const struct run_opts *o, const char *label, const struct prediction *r,
                            const struct slab_settings *s, const struct advise_eval *pred)
{
    struct verify_result v;
    int rc = verify_settings(o->db, r, s, pred, o->memcached, &v);
    if (!v.measured) {
        fprintf(stderr, "slabtap model advise --verify: %s: %s\n", label, v.error);
        return -1;
    }
    printf("  verify %-24s memcached %s: measured waste %6.2f %% (%llu of %llu bytes), "
           "predicted %6.2f %%, difference %+.3f pp %s\n",
           label, v.flags, v.measured_pct, (unsigned long long)v.waste,
           (unsigned long long)v.allocated, v.predicted_pct, v.measured_pct - v.predicted_pct,
           v.ok ? "ok" : "OUT OF TOLERANCE");
    return rc;
}

/* Replays the run against memcacheds with its own, the best and the fitted
 * settings; the number of checks that failed. */
static int model_verify_all(const struct run_opts *o, const struct prediction *r,
                            const struct slab_settings *best, const struct advise_eval *best_eval,
                            const struct slab_settings *fitted,
                            const struct advise_eval *fitted_eval)
{
    struct advise_eval own;
    int failed = 0;
    signal(SIGPIPE, SIG_IGN); /* load_run needs it (load.h) */
    advise_evaluate(&r->ladder, &r->live, &own);
    printf("verifying by replaying run %lld against memcached with each setting:\n",
           (long long)r->run_id);
    failed += model_verify_one(o, "the run's own settings", r, &r->settings, &own) != 0;
    failed += model_verify_one(o, "best -f/-n", r, best, best_eval) != 0;
    failed += model_verify_one(o, "fitted slab_sizes", r, fitted, fitted_eval) != 0;
    return failed;
}

static int model_advise(int argc, char **argv)
{
    struct run_opts o;
    sqlite3 *db = NULL;
    struct prediction *r = calloc(1, sizeof *r);
    struct slab_settings best, fitted;
    struct advise_eval cur, beste, fite;
    struct advise_cliff cliffs[8];
    char flags[1024];
    int rc = 1;
    if (!run_opts_or_usage(argc, argv, &o, true, &rc) || !r)
        goto out;
    if (open_run(&o, &db, r))
        goto out;
    if (r->live.n == 0) {
        fprintf(stderr, "slabtap model advise: the run left no items to size\n");
        goto out;
    }
    advise_evaluate(&r->ladder, &r->live, &cur);
    if (advise_search_factor(&r->settings, &r->live, &best, &beste) ||
        advise_fit_sizes(&r->settings, &r->live, (uint32_t)o.max_classes - 1, &fitted, &fite)) {
        fprintf(stderr, "slabtap model advise: no valid ladder found\n");
        goto out;
    }
    printf("run %lld '%s': %llu items, %u distinct sizes (memcached %s)\n", (long long)r->run_id,
           r->run_name, (unsigned long long)r->live_items, (unsigned)r->live.n, r->version);
    snprintf(flags, sizeof flags, "-n %u -f %.2f", r->settings.chunk_size_min,
             r->settings.growth_factor);
    print_eval("the run's own settings", flags, &cur);
    snprintf(flags, sizeof flags, "-n %u -f %.2f", best.chunk_size_min, best.growth_factor);
    print_eval("best -f/-n", flags, &beste);
    slab_sizes_flag(&fitted, flags, sizeof flags);
    print_eval("fitted slab_sizes", fitted.n_slab_sizes > 6 ? "(below)" : flags, &fite);
    if (fitted.n_slab_sizes > 6)
        printf("    %s\n", flags);
    struct slab_ladder bl;
    if (slab_ladder_build(&best, &bl, NULL, 0) == SLAB_OK) {
        size_t nc = advise_cliffs(&bl, &r->live, cliffs, 8);
        for (size_t i = 0; i < nc; i++)
            printf(
                "  cliff under -n %u -f %.2f: class %u (%u-byte chunks) takes items of %llu..%llu "
                "bytes; %llu of yours land there\n",
                best.chunk_size_min, best.growth_factor, cliffs[i].class_id, cliffs[i].chunk_size,
                (unsigned long long)cliffs[i].lo, (unsigned long long)cliffs[i].hi,
                (unsigned long long)cliffs[i].items);
    }
    size_t nc = advise_cliffs(&r->ladder, &r->live, cliffs, 8);
    for (size_t i = 0; i < nc; i++)
        printf("  cliff under the run's settings: class %u (%u-byte chunks) holds items of "
               "%llu..%llu bytes (%llu items)\n",
               cliffs[i].class_id, cliffs[i].chunk_size, (unsigned long long)cliffs[i].min_item,
               (unsigned long long)cliffs[i].max_item, (unsigned long long)cliffs[i].items);
    rc = 0;
    if (o.verify)
        rc = model_verify_all(&o, r, &best, &beste, &fitted, &fite) ? 1 : 0;
out:
    if (r)
        predict_free(r);
    free(r);
    sqlite3_close(db);
    return rc;
}

int cli_model_main(int argc, char **argv)
{
    if (argc < 2) {
        usage_model(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage_model(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(argv[1], subcommands[i].name))
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "slabtap model: unknown subcommand '%s'\n\n", argv[1]);
    usage_model(stderr);
    return 2;
}
