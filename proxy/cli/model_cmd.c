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
#include <time.h>

#include "cli/cli.h"
#include "cli/wrapout.h"
#include "core/log.h"
#include "core/opt.h"
#include "load/verify.h"
#include "model/advise.h"
#include "model/ladder_source.h"
#include "model/predict.h"
#include "model/slab_model.h"
#include "record/advice.h"
#include "record/pgstore.h"
#include "record/rowseq.h"
#include "record/runs.h"

struct model_subcommand {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv);
};

static int model_ladder(int argc, char **argv);
static int model_predict(int argc, char **argv);
static int model_advise(int argc, char **argv);
static int model_mrc(int argc, char **argv);
static int model_shadows(int argc, char **argv);

static const struct model_subcommand subcommands[] = {
    { "ladder", "print the chunk ladder, line for line as memcached -vv prints it", model_ladder },
    { "predict", "a recorded run's per-class counters, predicted beside memcached's own",
      model_predict },
    { "advise", "settings that serve more hits or waste less for a recorded run (--verify replays)",
      model_advise },
    { "mrc", "a recorded run's hit ratio at many memory sizes (the miss-ratio curve)", model_mrc },
    { "shadows", "each shadow memcached of a run measured beside the model's prediction",
      model_shadows },
};

static const char settings_usage[] =
    "memcached settings (same meaning and defaults as memcached 1.6.18):\n"
    "  -n BYTES               minimum space for key+value+flags (-n, default 48)\n"
    "  -f FACTOR              chunk size growth factor (-f, default 1.25)\n"
    "  -I SIZE                max item size (-I, default 1m)\n"
    "  -m MEGABYTES           memory limit; only checked against -I (-m, default 64;\n"
    "                         64, 1g, 1.5GiB: a number alone is megabytes)\n"
    "  --slab-chunk-max BYTES largest chunk, in BYTES (default 524288; memcached's\n"
    "                         -o slab_chunk_max takes bytes up to 1.6.23, KILOBYTES\n"
    "                         from 1.6.24)\n"
    "  --slab-sizes A-B-C     explicit class sizes (-o slab_sizes=A-B-C)\n"
    "  --no-cas, -C           CAS off: items are 8 bytes smaller (-C)\n"
    "SIZE, BYTES: a number of bytes or with a unit, any case, binary (x1024):\n"
    "  512k 8M 8MB 8MiB 1.5g.\n";

static void usage_model(FILE *out)
{
    fprintf(out, "usage: slabtap model <subcommand> [options]\n\n"
                 "memcached's slab ladder and item sizes, predicted without a server.\n\n"
                 "subcommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].help);
    fprintf(out, "\nslabtap model <subcommand> --help for its options; every subcommand\n"
                 "takes -v/--verbose (debug log lines too) and -q/--quiet (warnings and\n"
                 "errors only). Text lines longer than the terminal's width wrap, indented\n"
                 "(not on a terminal: at 100 columns; COLUMNS=N sets the width, COLUMNS=0\n"
                 "never wraps); --format json, where a subcommand has it, is for scripts.\n");
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

/* cli_replay_counted's: the source, its counts and the replays. */
static struct {
    char source[256];
    uint64_t ops, keys;
    unsigned replays;
} cli_counters;

void cli_replay_counted(const char *source, uint64_t ops, uint64_t keys)
{
    if (!ops)
        return;
    pgstore_redact(source, cli_counters.source, sizeof cli_counters.source); /* no password */
    cli_counters.ops = ops;
    cli_counters.keys = keys;
    cli_counters.replays++;
}

void cli_replay_counters_say(void)
{
    if (!cli_counters.replays)
        return;
    if (cli_counters.replays > 1)
        log_info("%s: %llu incr/decr on %llu keys: every write to those keys was sent with digits "
                 "(in each of the %u replays)",
                 cli_counters.source, (unsigned long long)cli_counters.ops,
                 (unsigned long long)cli_counters.keys, cli_counters.replays);
    else
        log_info("%s: %llu incr/decr on %llu keys: every write to those keys was sent with digits",
                 cli_counters.source, (unsigned long long)cli_counters.ops,
                 (unsigned long long)cli_counters.keys);
    cli_counters.replays = 0;
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
    case OPT_ERROR: return cli_usage_error("model ladder", perr);
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

/* --db FILE|URI [--run N | --node PATTERN --since DURATION] [--max-classes K]
 * [--verify] [--memcached PATH] [--objective memory|items] [--memory-limit MB]
 * [--holdout] [--holdout-run N] */
struct run_opts {
    const char *db, *run, *memcached, *node, *since;
    int64_t since_ns; /* from --since: unix ns, 0 without */
    long long max_classes;
    bool verify;
    const char *objective, *holdout_run;
    uint64_t memory_limit_mb; /* 0: the run's -m */
    bool holdout;
    const char *source; /* --source auto|rows|aggregates (NULL: auto) */
    const char *format; /* --format text|json (NULL: text) */
    double warmup;      /* --warmup: share of the requests before hits count */
    uint64_t points;    /* mrc --points */
    const char *flags;  /* mrc --flags: other settings' curve */
    bool save;          /* --save: the hits report into run_meta */
    uint64_t snapshot;  /* advise --snapshot N (0: none; a snapshot run: its latest) */
    int mode;           /* 0 predict, 1 advise, 2 mrc */
};

/* Where open_run's last prediction came from (issue 14): its rows, or the
 * write aggregates when the rows are gone (or --source aggregates). */
static enum runs_basis run_basis;
static char run_basis_why[200];
static bool run_hits; /* advise: the hits advice (given, or the default: advice_hits_default) */
static struct runs_agg_info run_agg;
static struct reader_rows_status run_rows;
/* advise on a snapshot (issue 22): --snapshot N, or a snapshot run's latest */
static bool run_snapshot;
static struct runs_snapshot_info run_snap;

/* predict's and advise's flags (advise adds --max-classes, --verify,
 * --memcached). */
static enum opt_result parse_run_opts(int argc, char **argv, struct run_opts *o, int mode,
                                      char *err, size_t errlen)
{
    bool advise = mode != 0; /* 0 predict, 1 advise, 2 mrc */
    const char *command = mode == 2 ? "model mrc" : advise ? "model advise" : "model predict";
    int level = (int)log_get_level();
    uint64_t max_classes = SLAB_MODEL_MAX_CLASSES, since_s = 0;
    memset(o, 0, sizeof *o);
    o->mode = mode;
    o->warmup = 0.5;
    o->points = 16;
    const struct opt_spec table[] = {
        { "db", 0, OPT_STRING, .dest = &o->db },
        { "run", 0, OPT_STRING, .dest = &o->run },
        { "node", 0, OPT_STRING, .dest = &o->node },
        { "since", 0, OPT_DURATION, .dest = &since_s, .unit = UNITS_S, .min = 1,
          .max = INT64_MAX / UNITS_S, .text = &o->since },
        { "source", 0, OPT_STRING, .dest = &o->source },
        CLI_OPTS_VERBOSITY(&level, NULL),
        /* advise only, from here */
        { "max-classes", 0, OPT_UINT, .dest = &max_classes, .min = 2,
          .max = SLAB_MODEL_MAX_CLASSES },
        { "verify", 0, OPT_FLAG, .dest = &o->verify },
        { "memcached", 0, OPT_STRING, .dest = &o->memcached },
        { "objective", 0, OPT_STRING, .dest = &o->objective },
        { "memory-limit", 0, OPT_SIZE, .dest = &o->memory_limit_mb, .unit = UNITS_MIB, .min = 1,
          .max = 1024 * 1024 },
        { "holdout", 0, OPT_FLAG, .dest = &o->holdout },
        { "holdout-run", 0, OPT_STRING, .dest = &o->holdout_run },
        { "format", 0, OPT_STRING, .dest = &o->format },
        { "warmup", 0, OPT_DOUBLE, .dest = &o->warmup, .dmin = 0, .dmax = 0.95 },
        { "points", 0, OPT_UINT, .dest = &o->points, .min = 2, .max = 64 },
        { "flags", 0, OPT_STRING, .dest = &o->flags },
        { "save", 0, OPT_FLAG, .dest = &o->save },
        { "snapshot", 0, OPT_UINT, .dest = &o->snapshot, .min = 1, .max = INT64_MAX },
    };
    size_t n = sizeof table / sizeof table[0] - (advise ? 0 : 13);
    enum opt_result r = opt_parse(command, table, n, argc, argv, NULL, err, errlen);
    if (r != OPT_OK)
        return r;
    log_set_level((enum log_level)level);
    o->max_classes = (long long)max_classes;
    if (!o->db)
        return opt_error(err, errlen, command, "--db FILE|URI is required");
    if (o->run && (o->node || o->since))
        return opt_error(err, errlen, command, "--run or --node/--since, not both");
    if (o->since) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        o->since_ns =
            (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec - (int64_t)since_s * 1000000000LL;
    }
    if (advise && (o->node || o->since) && (o->verify || o->holdout || o->holdout_run))
        return opt_error(err, errlen, command,
                         "--verify and --holdout take one run (--run), not --node/--since");
    if (o->snapshot && (o->node || o->since || o->source || o->holdout || o->holdout_run))
        return opt_error(err, errlen, command,
                         "--snapshot takes one run (--run), without --node/--since, --source, "
                         "--holdout");
    if (o->source && strcmp(o->source, "auto") && strcmp(o->source, "rows") &&
        strcmp(o->source, "aggregates"))
        return opt_error(err, errlen, command, "--source is auto, rows or aggregates");
    if (o->objective && strcmp(o->objective, "memory") && strcmp(o->objective, "items") &&
        strcmp(o->objective, "hits"))
        return opt_error(err, errlen, command, "--objective is hits, memory or items");
    if (o->format && strcmp(o->format, "text") && strcmp(o->format, "json"))
        return opt_error(err, errlen, command, "--format is text or json");
    return OPT_OK;
}

static void usage_predict(FILE *out)
{
    fprintf(out,
            "usage: slabtap model predict --db FILE|URI [--run NAME_OR_ID] [-v|-q]\n"
            "       slabtap model predict --db FILE|URI [--node PATTERN] [--since DURATION]\n\n"
            "Replays the run's recorded writes through memcached's slab model and prints,\n"
            "per class, the predicted used_chunks, mem_requested and pages beside the\n"
            "run's last stats sample. The ladder is the one memcached ran: from its\n"
            "`stats settings`, the flags slabtap knew (experiments, proxy --slab-sizes /\n"
            "--memcached-flags) and the chunk sizes it showed; printed with where it\n"
            "came from. When something besides the writes changed memcached's memory\n"
            "(evictions, page moves, expiries, flush_all, ...) the verdict says which.\n"
            "Exit 1 when an exact prediction does not match.\n\n"
            "  --db FILE|URI        a SQLite file, or a fleet's PostgreSQL\n"
            "                       (postgresql://USER@HOST/DB; the password from\n"
            "                       PGPASSWORD or ~/.pgpass)\n"
            "  --run NAME_OR_ID     the run (default: the latest)\n"
            "  --node PATTERN       every run of the nodes matching PATTERN (SQL LIKE:\n"
            "                       'cache-%%'), each predicted on its own\n"
            "  --since DURATION     the runs still running or ended within DURATION\n"
            "                       ('1 hour', 30m, 2h, '1 day'; a number alone is\n"
            "                       seconds); each run whole\n"
            "  --source auto|rows|aggregates\n"
            "                       the run's rows, or its write histograms (agg_items):\n"
            "                       auto takes the histograms when rows were expired;\n"
            "                       from them the live items are the stored sizes scaled\n"
            "                       to the last curr_items, an estimate with a per-class\n"
            "                       bound (printed)\n"
            "  -v, --verbose  debug log lines too\n"
            "  -q, --quiet    warnings and errors only\n"
            "  -h, --help     this text\n");
}

static void usage_advise(FILE *out)
{
    fprintf(out,
            "usage: slabtap model advise --db FILE|URI [--run NAME_OR_ID |\n"
            "                           --node PATTERN [--since DURATION]] [--max-classes K]\n"
            "                           [--objective hits|memory|items] [--memory-limit MB]\n"
            "                           [--warmup SHARE] [--format text|json] [--save]\n"
            "                           [--holdout | --holdout-run NAME_OR_ID]\n"
            "                           [--verify [--memcached PATH]] [-v|-q]\n"
            "       slabtap model advise --db FILE|URI [--run NAME_OR_ID] [--snapshot N]\n"
            "                           [--max-classes K] [--objective memory|items]\n"
            "                           [--verify [--memcached PATH]]\n\n"
            "--snapshot N (and a snapshot run, `slabtap snapshot`, by default its latest):\n"
            "the input is what memory held at that moment -- every resident item of the\n"
            "metadump with the size memcached listed (ITEM_ntotal: header, key, value,\n"
            "flags and CAS already in it); --verify writes those items once each, as\n"
            "sets of exactly those sizes, into memcacheds with each setting and measures\n"
            "the waste; capacity takes them as the working set, each written once.\n\n"
            "--objective hits (the default when the run recorded reads and all its\n"
            "rows are kept, unsampled): the setting\n"
            "that serves the most hits from the memory the run's own settings actually\n"
            "use (total_malloced; --memory-limit MB sets another budget), never at equal\n"
            "-m. Candidates: the run's own, -f 1.05..2.00, slab_sizes ladders fitted to\n"
            "the item sizes and to the sizes weighted by reads, the best three crossed\n"
            "with slab_automove 0/1/2; each simulated request by request (segmented or\n"
            "plain LRU as the run's memcached ran, demand-fill: a read that misses is\n"
            "set again unless the recording writes it next) at the largest -m that\n"
            "stays within the budget. Hits are counted after the first SHARE of the\n"
            "requests (--warmup, default 0.5). Also: the smallest memory that keeps the\n"
            "run's hit ratio. --verify replays the run with demand-fill into memcacheds\n"
            "with the current, the recommended and the best of each family, and prints\n"
            "measured beside predicted (within 2 points) and whether the recommendation\n"
            "measured best. --format json prints one object: recommended.flags,\n"
            "recommended.predicted.hit_ratio and .memory_bytes, the same for current,\n"
            "and with --verify a measured object beside each predicted. --save keeps\n"
            "that object in the run's run_meta ('hits_advice'), where the page shows it.\n\n"
            "For the items the run left in memcached: the chunk waste under the run's\n"
            "own settings, under the best -f/-n, and under a slab_sizes ladder fitted to\n"
            "the sizes (at most K classes, 2..%d, default %d); warns about cliffs.\n"
            "Then capacity: the run's writes through each candidate with whole 1 MB\n"
            "pages and memcached's memory limit, ranked by the objective:\n"
            "  --objective memory    least memory for the whole working set (pages)\n"
            "  --objective items     most items (then bytes) held in --memory-limit MB\n"
            "                        (default: the run's -m)\n"
            "default: items when the run's memcached was full (evictions, or\n"
            "total_malloced reached limit_maxbytes), else memory. A setting that does\n"
            "not beat the run's own on the objective is never recommended.\n"
            "--holdout fits on the first half of the run and checks on the second;\n"
            "--holdout-run checks the advice on another recorded run.\n"
            "--verify replays the run against memcacheds started with the advised\n"
            "flags: the measured waste beside the prediction, and items held,\n"
            "evictions and total_malloced at the objective's -m (slab_automove=0).\n"
            "--db takes a SQLite file or a postgresql:// URI (the password from\n"
            "PGPASSWORD or ~/.pgpass). --node PATTERN (SQL LIKE, 'cache-%%') and\n"
            "--since DURATION ('1 hour', 30m, '1 day': runs still running or ended\n"
            "within it, each whole) advise for the fleet: the items all those runs\n"
            "left behind, as one size distribution, under the first run's settings\n"
            "(capacity, --verify and --holdout need one run, from either store).\n"
            "--source auto|rows|aggregates: the run's rows, or its write histograms\n"
            "(auto, the page's rule too: the histograms when rows were expired or,\n"
            "for capacity, keep one key in N (--sample-keys)); from the histograms the\n"
            "sizes are the stored ones scaled to the last curr_items, and capacity takes\n"
            "them as the working set, each item written once (no --verify/--holdout).\n"
            "MB: a size, binary (x1024), any case: 512, 2g, 1.5GiB (a number alone is\n"
            "megabytes); DURATION: 30m, 2h, '1 day' (a number alone is seconds).\n\n"
            "  -v, --verbose  debug log lines too\n"
            "  -q, --quiet    warnings and errors only\n"
            "  -h, --help     this text\n",
            SLAB_MODEL_MAX_CLASSES, SLAB_MODEL_MAX_CLASSES);
}

static void usage_mrc(FILE *out)
{
    fprintf(out,
            "usage: slabtap model mrc --db FILE [--run NAME_OR_ID] [--memory-limit MB]\n"
            "                         [--points N] [--flags \"MEMCACHED FLAGS\"]\n"
            "                         [--warmup SHARE] [--format text|json] [--save] [-v|-q]\n\n"
            "The miss-ratio curve of a recorded run (writes and reads): its requests\n"
            "simulated request by request under the run's own settings at N memory\n"
            "sizes (default 16, spread geometrically from 1/16 of --memory-limit to it;\n"
            "default limit: twice the run's -m), each the memory actually used\n"
            "(total_malloced), with the hit ratio after the first SHARE of the requests\n"
            "(--warmup, default 0.5). --flags adds a second curve for other memcached\n"
            "settings, e.g. --flags \"-f 1.08 -o slab_automove=2\". --save keeps the\n"
            "curves in the run's run_meta ('hits_mrc'), where the page draws them.\n"
            "MB: a size, binary (x1024), any case: 512, 2g, 1.5GiB (a number alone is\n"
            "megabytes).\n\n"
            "  -v, --verbose  debug log lines too\n"
            "  -q, --quiet    warnings and errors only\n"
            "  -h, --help     this text\n");
}

/* The flags of predict (mode 0), advise (1) or mrc (2): true to go on; false
 * with the exit status in *rc (help 0, usage 2) once usage is printed. */
static bool run_opts_or_usage(int argc, char **argv, struct run_opts *o, int mode, int *rc)
{
    char err[512];
    void (*usage)(FILE *) = mode == 2 ? usage_mrc : mode ? usage_advise : usage_predict;
    const char *command = mode == 2 ? "model mrc" : mode ? "model advise" : "model predict";
    switch (parse_run_opts(argc, argv, o, mode, err, sizeof err)) {
    case OPT_HELP:
        usage(stdout);
        *rc = 0;
        return false;
    case OPT_ERROR: *rc = cli_usage_error(command, err); return false;
    case OPT_OK: break;
    }
    return true;
}

static int open_src(const struct run_opts *o, struct reader **src)
{
    char err[512];
    if (reader_open(src, o->db, err, sizeof err)) {
        char shown[PGSTORE_URI_MAX];
        pgstore_redact(o->db, shown, sizeof shown);
        fprintf(stderr, "slabtap model: %s: %s\n", shown, err);
        return -1;
    }
    return 0;
}

static int open_run(const struct run_opts *o, struct reader *src, int64_t id, struct prediction *r)
{
    char err[512];
    if (id < 0)
        id = reader_run_find(src, o->run);
    if (id < 0) {
        fprintf(stderr, "slabtap model: %s: no run %s\n", reader_name(src),
                o->run ? o->run : "at all");
        return -1;
    }
    /* advise (and predict) on a snapshot: --snapshot N, or a snapshot
     * run's latest; predict then sets the resident items' counters beside
     * the run's last sample (not exact: a metadump is not atomic) */
    struct reader_run run;
    run_snapshot =
        o->mode != 2 && (o->snapshot || (!reader_run_get(src, id, &run, err, sizeof err) &&
                                         !strcmp(run.kind, "snapshot")));
    if (run_snapshot) {
        run_hits = false;
        run_basis = RUNS_BASIS_ROWS;
        if (runs_read_snapshot(src, id, (int64_t)o->snapshot, r, &run_snap, err, sizeof err)) {
            fprintf(stderr, "slabtap model: %s: run %lld: %s\n", reader_name(src), (long long)id,
                    err);
            return -1;
        }
        return 0;
    }
    /* --source rows|aggregates, else the one rule the page's advice takes
     * (record/advice.h): the rows unless they are not all kept and the
     * run has aggregates */
    bool want_aggs = o->source && !strcmp(o->source, "aggregates");
    reader_rows_status(src, id, &run_rows);
    run_hits = o->mode == 1 && (o->objective ? !strcmp(o->objective, "hits")
                                             : advice_hits_default(src, id, &run_rows));
    snprintf(run_basis_why, sizeof run_basis_why, "as --source %s asks",
             o->source ? o->source : "");
    if (!o->source || !strcmp(o->source, "auto")) {
        want_aggs = advice_basis(src, id, &run_rows, o->mode == 1 && !run_hits, run_basis_why,
                                 sizeof run_basis_why) == RUNS_BASIS_AGGREGATES;
        if (!run_rows.complete && !run_rows.have_aggs)
            fprintf(stderr,
                    "slabtap model: run %lld: only %lld of its %lld rows are left and it has no "
                    "write histograms: predicting from what is left\n",
                    (long long)id, (long long)run_rows.present, (long long)run_rows.recorded);
    }
    run_basis = want_aggs ? RUNS_BASIS_AGGREGATES : RUNS_BASIS_ROWS;
    if (want_aggs ? runs_read_prediction_agg(src, id, r, &run_agg, err, sizeof err)
                  : runs_read_prediction(src, id, r, err, sizeof err)) {
        fprintf(stderr, "slabtap model: %s: run %lld: %s\n", reader_name(src), (long long)id, err);
        return -1;
    }
    return 0;
}

/* Which basis the prediction of r has, in one line; from aggregates, per
 * class the estimate, its bound and memcached's own count. */
static void print_basis(const struct prediction *r, bool classes)
{
    const struct runs_agg_info *a = &run_agg;
    if (run_snapshot) {
        const struct runs_snapshot_info *s = &run_snap;
        wrapout_printf("basis: snapshot %lld -- the %llu items memory held (%llu bytes of "
                       "ITEM_ntotal, as memcached listed them: flags included)%s; %llu never "
                       "fetched\n",
                       (long long)s->snap, (unsigned long long)s->items,
                       (unsigned long long)s->bytes,
                       s->complete ? "" : " -- CUT SHORT: memcached did not say END",
                       (unsigned long long)s->never_fetched);
        if (s->class_differs || s->too_large)
            wrapout_printf("basis: %llu items are in another class than their size gives under "
                           "the run's ladder, %llu larger than it holds (the ladder is not the "
                           "one memcached ran?)\n",
                           (unsigned long long)s->class_differs, (unsigned long long)s->too_large);
        else
            wrapout_printf("basis: every item is in the class its size gives under the run's "
                           "ladder\n");
        return;
    }
    if (run_basis == RUNS_BASIS_ROWS) {
        wrapout_printf("basis: rows -- every recorded write replayed (%llu rows)%s\n",
                       (unsigned long long)r->rows,
                       run_rows.complete ? "" : " -- INCOMPLETE: older rows were expired");
        return;
    }
    wrapout_printf("basis: aggregates -- %s\n", run_basis_why);
    wrapout_printf(
        "basis: aggregates -- %lld of %lld rows left; %llu stored writes, %llu refused, %llu "
        "deletes; live items %llu (%s)\n",
        (long long)run_rows.present, (long long)run_rows.recorded, (unsigned long long)a->stored,
        (unsigned long long)a->refused, (unsigned long long)a->deletes, (unsigned long long)a->live,
        a->from_curr_items ? "the last sample's curr_items" : "stores less deletes");
    if (a->exact)
        wrapout_printf(
            "basis: EXACT from aggregates -- every stored item is still live and every size "
            "is known to the byte: the written sizes are the live ones\n");
    else
        wrapout_printf(
            "basis: ESTIMATE from aggregates -- the stored sizes scaled to the live count "
            "(overwrites and deletes are not followed per key); per class the live items "
            "lie within [max(0, N - (W - W_c)), min(W_c, N)]%s\n",
            a->wide_items ? "; sizes of 16 KB and more within 1/128" : "");
    if (a->live_by_class)
        wrapout_printf(
            "basis: advise's sizes -- each class's stored sizes scaled to the last sample's "
            "`stats items` number of the class (%llu items)\n",
            (unsigned long long)a->per_class_live);
    if (!classes)
        return;
    uint64_t abs_err = 0, obs_total = 0;
    wrapout_printf("%5s %12s %12s %25s %12s %9s\n", "class", "stored W_c", "est items", "bound",
                   "obs number", "diff");
    for (uint32_t c = 1; c <= r->ladder.n_classes; c++) {
        const struct predict_observed *o = &r->observed[c];
        if (!a->written[c] && !o->present)
            continue;
        long long d = (long long)a->est[c] - (long long)o->number;
        abs_err += (uint64_t)(d < 0 ? -d : d);
        obs_total += (uint64_t)o->number;
        wrapout_printf(
            "%5u %12llu %12llu %12llu..%-12llu %12lld %+9lld%s\n", c,
            (unsigned long long)a->written[c], (unsigned long long)a->est[c],
            (unsigned long long)a->lo[c], (unsigned long long)a->hi[c], (long long)o->number, d,
            o->present && ((uint64_t)o->number < a->lo[c] || (uint64_t)o->number > a->hi[c])
                ? "  OUTSIDE THE BOUND"
                : "");
    }
    wrapout_printf("basis: per-class items misplaced %llu of %llu (%.2f %%)\n",
                   (unsigned long long)abs_err / 2, (unsigned long long)obs_total,
                   obs_total ? 50.0 * (double)abs_err / (double)obs_total : 0);
}

/* The runs --node/--since select; 0 with at least one, else -1 (said). */
static int select_runs(const struct run_opts *o, struct reader *src, int64_t **ids, char ***nodes,
                       size_t *n)
{
    char err[512];
    if (reader_runs_select(src, o->node, o->since_ns, ids, nodes, n, err, sizeof err)) {
        fprintf(stderr, "slabtap model: %s: selecting runs: %s\n", reader_name(src), err);
        return -1;
    }
    if (*n == 0) {
        fprintf(stderr, "slabtap model: %s: no run of a node like '%s'%s%s\n", reader_name(src),
                o->node ? o->node : "%", o->since ? " within " : "", o->since ? o->since : "");
        return -1;
    }
    return 0;
}

static int model_predict(int argc, char **argv)
{
    struct run_opts o;
    struct reader *src = NULL;
    struct prediction *r = calloc(1, sizeof *r);
    int64_t *ids = NULL;
    char **nodes = NULL;
    size_t n = 0;
    int rc = 1;
    if (!run_opts_or_usage(argc, argv, &o, 0, &rc) || !r)
        goto out;
    if (open_src(&o, &src))
        goto out;
    if (!o.node && !o.since) {
        if (open_run(&o, src, -1, r))
            goto out;
        predict_print(r, stdout);
        print_basis(r, true);
        rc = r->exact_expected && predict_mismatches(r) ? 1 : 0;
        goto out;
    }
    /* the fleet: each selected run on its own */
    if (select_runs(&o, src, &ids, &nodes, &n))
        goto out;
    rc = 0;
    for (size_t i = 0; i < n; i++) {
        wrapout_printf("%snode '%s', run %lld:\n", i ? "\n" : "", nodes[i], (long long)ids[i]);
        if (open_run(&o, src, ids[i], r)) {
            rc = 1;
        } else {
            predict_print(r, stdout);
            print_basis(r, true);
            if (r->exact_expected && predict_mismatches(r))
                rc = 1;
        }
        predict_free(r);
    }
out:
    if (r)
        predict_free(r);
    free(r);
    reader_runs_select_free(ids, nodes, n);
    reader_close(src);
    return rc;
}

static void print_eval(const char *what, const char *flags, const struct advise_eval *e)
{
    wrapout_printf(
        "  %-26s %-34s waste %6.2f %%  (%llu of %llu bytes)  classes %u in ladder, %u used\n", what,
        flags, e->waste_pct, (unsigned long long)e->waste, (unsigned long long)e->allocated,
        e->classes_in_ladder, e->classes_used);
}

static int model_verify_one(const struct run_opts *o, const char *label, const struct prediction *r,
                            const struct slab_settings *s, const struct advise_eval *pred)
{
    struct verify_result v;
    int rc = run_snapshot
                 ? verify_settings_hist(&r->live, r->ladder.use_cas, s, pred, o->memcached, &v)
                 : verify_settings(o->db, r, s, pred, o->memcached, &v);
    cli_replay_counted(o->db, v.counter_ops, v.counter_keys);
    if (!v.measured) {
        fprintf(stderr, "slabtap model advise --verify: %s: %s\n", label, v.error);
        return -1;
    }
    wrapout_printf("  verify %-24s memcached %s: measured waste %6.2f %% (%llu of %llu bytes), "
                   "predicted %6.2f %%, difference %+.3f pp %s\n",
                   label, v.flags, v.measured_pct, (unsigned long long)v.waste,
                   (unsigned long long)v.allocated, v.predicted_pct,
                   v.measured_pct - v.predicted_pct, v.ok ? "ok" : "OUT OF TOLERANCE");
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
    if (run_snapshot)
        wrapout_printf("verifying by writing snapshot %lld of run %lld into memcached with each "
                       "setting:\n",
                       (long long)run_snap.snap, (long long)r->run_id);
    else
        wrapout_printf("verifying by replaying run %lld against memcached with each setting:\n",
                       (long long)r->run_id);
    if (run_snapshot)
        wrapout_printf("  (the snapshot's %llu items written once each as sets, each of its "
                       "ITEM_ntotal)\n",
                       (unsigned long long)r->live_items);
    failed += model_verify_one(o, "the run's own settings", r, &r->settings, &own) != 0;
    failed += model_verify_one(o, "best -f/-n", r, best, best_eval) != 0;
    failed += model_verify_one(o, "fitted slab_sizes", r, fitted, fitted_eval) != 0;
    return failed;
}

/* --- capacity ---------------------------------------------------------- */

static void print_candidate(const struct advise_candidate *c, bool recommended, const char *flags)
{
    const struct capacity_result *k = &c->cap;
    double pct = k->chunk_bytes ? 100.0 * (double)k->chunk_waste / (double)k->chunk_bytes : 0;
    wrapout_printf("  %-24s chunk waste %11llu B (%5.2f %%)  page slack %11llu B  memory %11llu B  "
                   "items held %9llu  bytes held %11llu  evictions %8llu  %s%s%s\n",
                   c->label, (unsigned long long)k->chunk_waste, pct,
                   (unsigned long long)k->page_slack, (unsigned long long)k->malloced,
                   (unsigned long long)k->items, (unsigned long long)k->requested,
                   (unsigned long long)k->evictions,
                   c->vs_current > 0   ? "better"
                   : c->vs_current < 0 ? "worse"
                                       : "same",
                   c->over_limit ? "  (over -m: first pages past the limit)" : "",
                   recommended ? "  <- recommended" : "");
    wrapout_printf("      %s\n", flags);
}

/* The best candidate whose label starts with prefix and that is not over
 * -m; -1 when none. */
static int best_of(const struct advise_candidate *c, size_t n, const char *prefix,
                   enum capacity_objective obj)
{
    int b = -1;
    for (size_t i = 1; i < n; i++)
        if (!strncmp(c[i].label, prefix, strlen(prefix)) && !c[i].over_limit &&
            (b < 0 || capacity_compare(obj, &c[i].cap, &c[b].cap) > 0))
            b = (int)i;
    return b;
}

/* Replays the run into a memcached with candidate c at the objective's
 * memory; 0 when the measurement is the prediction. *items gets what it
 * held (memory objective: total_malloced). */
static int model_verify_capacity(const struct run_opts *o, const struct prediction *r,
                                 const struct advise_candidate *c, enum capacity_objective obj,
                                 uint64_t mem_mb, uint64_t *held)
{
    struct verify_capacity_result v;
    verify_capacity(o->db, r->run_id, &c->s, obj == CAPACITY_OBJ_ITEMS ? mem_mb : 0,
                    c->cap.malloced, o->memcached, &v);
    cli_replay_counted(o->db, v.counter_ops, v.counter_keys);
    if (!v.measured) {
        fprintf(stderr, "slabtap model advise --verify: %s: %s\n", c->label, v.error);
        return -1;
    }
    bool ok = v.items == c->cap.items && v.evictions == c->cap.evictions &&
              (obj == CAPACITY_OBJ_ITEMS || v.malloced == c->cap.malloced);
    wrapout_printf(
        "  verify capacity %-24s memcached %s: items held %llu (predicted %llu), evictions "
        "%llu (predicted %llu), total_malloced %llu (predicted %llu) %s\n",
        c->label, v.flags, (unsigned long long)v.items, (unsigned long long)c->cap.items,
        (unsigned long long)v.evictions, (unsigned long long)c->cap.evictions,
        (unsigned long long)v.malloced, (unsigned long long)c->cap.malloced,
        ok ? "ok" : "MISMATCH");
    *held = obj == CAPACITY_OBJ_ITEMS ? v.items : v.malloced;
    return ok ? 0 : -1;
}

/* Hold-out: each candidate fitted on one part, run on another. */
static void model_holdout(const char *what, const struct advise_candidate *c, size_t n, int rec,
                          const struct capacity_seq *seq, size_t from, size_t to,
                          enum capacity_objective obj, uint64_t mem_limit)
{
    struct capacity_result base, k;
    if (advise_capacity_eval(&c[0].s, seq, from, to, obj, mem_limit, &base))
        return;
    wrapout_printf("hold-out: the candidates on %s (%zu writes):\n", what, to - from);
    for (size_t i = 0; i < n; i++) {
        if (advise_capacity_eval(&c[i].s, seq, from, to, obj, mem_limit, &k))
            continue;
        int vs = capacity_compare(obj, &k, &base);
        wrapout_printf("  hold-out %-24s items held %9llu (fitted part %9llu)  memory %11llu B  "
                       "vs the run's own %+lld items, %+lld B  %s%s\n",
                       c[i].label, (unsigned long long)k.items, (unsigned long long)c[i].cap.items,
                       (unsigned long long)k.malloced, (long long)k.items - (long long)base.items,
                       (long long)k.malloced - (long long)base.malloced,
                       vs > 0   ? "better"
                       : vs < 0 ? "worse"
                                : "same",
                       (int)i == rec ? "  <- recommended" : "");
        if ((int)i == rec && rec != 0)
            wrapout_printf("  hold-out: the recommendation %s on %s%s\n",
                           vs > 0   ? "still beats the run's own settings"
                           : vs < 0 ? "LOSES to the run's own settings"
                                    : "only ties the run's own settings",
                           what, vs < 0 ? " (overfitted to the fitted part)" : "");
    }
}

/* advise's capacity part; the number of failed checks. */
static int model_capacity(const struct run_opts *o, struct reader *rd, const struct prediction *r)
{
    struct capacity_seq seq, other;
    struct advise_candidate *c = calloc(ADVISE_MAX_CANDIDATES, sizeof *c);
    struct advise_hist half;
    struct advice_plan plan;
    char why[160], err[512], flags[1024];
    size_t n = 0, from = 0, to;
    int failed = 0, rec;
    capacity_seq_init(&seq);
    capacity_seq_init(&other);
    advise_hist_init(&half);
    bool from_hist = run_basis == RUNS_BASIS_AGGREGATES || run_snapshot;
    if (run_snapshot)
        wrapout_printf("capacity: the snapshot's resident items as the working set, each written "
                       "once%s\n",
                       o->verify ? " (--verify above checks the waste; capacity is not replayed)"
                                 : "");
    if (run_basis == RUNS_BASIS_AGGREGATES && (o->holdout || o->holdout_run || o->verify)) {
        wrapout_printf("capacity: --verify and --holdout replay the run's rows; from aggregates, "
                       "capacity only\n");
        failed = 1;
        goto out;
    }
    if (!c ||
        (from_hist ? advise_seq_from_hist(&r->live, r->settings.use_cas, &seq)
                   : rowseq_capacity(rd, r->run_id, &seq, NULL, NULL, NULL, err, sizeof err))) {
        fprintf(stderr, "slabtap model advise: capacity: %s\n",
                c && !from_hist ? err : "out of memory");
        failed = 1;
        goto out;
    }
    /* the objective and memory as the page's advice picks them */
    advice_plan(rd, r, o->objective, o->memory_limit_mb, &plan);
    enum capacity_objective obj = plan.obj;
    uint64_t mem_mb = plan.mem_mb, mem_limit = plan.mem_limit;
    snprintf(why, sizeof why, "%s", plan.why);
    to = seq.n;
    const struct advise_hist *h = &r->live;
    if (o->holdout) { /* fit on the first half */
        to = seq.n / 2;
        if (advise_hist_from_seq(&seq, 0, to, r->settings.use_cas, &half) || half.n == 0) {
            fprintf(stderr, "slabtap model advise: --holdout: the first half leaves no items\n");
            failed = 1;
            goto out;
        }
        h = &half;
    }
    rec = advise_capacity(&r->settings, h, &seq, from, to, obj, mem_limit, (uint32_t)o->max_classes,
                          c, &n, NULL, NULL);
    if (rec < 0) {
        fprintf(stderr, "slabtap model advise: capacity: out of memory\n");
        failed = 1;
        goto out;
    }
    if (obj == CAPACITY_OBJ_ITEMS)
        wrapout_printf("capacity: objective items -- most items held in -m %llu (%llu bytes)%s%s; "
                       "%zu writes%s:\n",
                       (unsigned long long)mem_mb, (unsigned long long)mem_limit,
                       o->objective ? "" : ", chosen because ", o->objective ? "" : why, to - from,
                       o->holdout ? " (the first half)" : "");
    else
        wrapout_printf("capacity: objective memory -- least memory for the whole working set%s%s; "
                       "%zu writes%s:\n",
                       o->objective ? "" : ", chosen because ", o->objective ? "" : why, to - from,
                       o->holdout ? " (the first half)" : "");
    for (size_t i = 0; i < n; i++) {
        advice_candidate_flags(&c[i], &plan, r->version, flags, sizeof flags);
        print_candidate(&c[i], (int)i == rec, flags);
    }
    advice_candidate_flags(&c[rec], &plan, r->version, flags, sizeof flags);
    if (rec == 0) {
        wrapout_printf("recommended: keep the run's own settings -- no candidate %s\n",
                       obj == CAPACITY_OBJ_ITEMS ? "holds more items in this memory"
                                                 : "holds the working set in less memory");
    } else if (obj == CAPACITY_OBJ_ITEMS) {
        long long d = (long long)c[rec].cap.items - (long long)c[0].cap.items;
        wrapout_printf(
            "recommended: %s: %llu items held, %+lld (%+.1f %%) over the run's own settings\n",
            c[rec].label, (unsigned long long)c[rec].cap.items, d,
            c[0].cap.items ? 100.0 * (double)d / (double)c[0].cap.items : 0);
    } else {
        long long d = (long long)c[rec].cap.malloced - (long long)c[0].cap.malloced;
        wrapout_printf("recommended: %s: %llu bytes of pages for the working set, %+lld (%+.1f %%) "
                       "against the run's own settings\n",
                       c[rec].label, (unsigned long long)c[rec].cap.malloced, d,
                       c[0].cap.malloced ? 100.0 * (double)d / (double)c[0].cap.malloced : 0);
    }
    wrapout_printf("  memcached flags: %s\n", flags);
    if (o->holdout)
        model_holdout("the second half", c, n, rec, &seq, to, seq.n, obj, mem_limit);
    if (o->holdout_run) {
        int64_t id = reader_run_find(rd, o->holdout_run);
        if (id < 0 || rowseq_capacity(rd, id, &other, NULL, NULL, NULL, err, sizeof err)) {
            fprintf(stderr, "slabtap model advise: --holdout-run %s: %s\n", o->holdout_run,
                    id < 0 ? "no such run" : err);
            failed++;
        } else {
            snprintf(why, sizeof why, "run %lld", (long long)id);
            model_holdout(why, c, n, rec, &other, 0, other.n, obj, mem_limit);
        }
    }
    if (o->verify && !o->holdout && !run_snapshot) {
        int pick[4] = { 0, best_of(c, n, "-f/-n", obj), best_of(c, n, "slab_sizes", obj), rec };
        uint64_t held[4] = { 0 };
        bool done[ADVISE_MAX_CANDIDATES] = { false };
        wrapout_printf("verifying capacity by replaying run %lld on one connection:\n",
                       (long long)r->run_id);
        for (int i = 0; i < 4; i++) {
            if (pick[i] < 0 || done[pick[i]]) {
                if (pick[i] >= 0 && i == 3)
                    held[3] = held[pick[3] == pick[0] ? 0 : pick[3] == pick[1] ? 1 : 2];
                continue;
            }
            done[pick[i]] = true;
            failed += model_verify_capacity(o, r, &c[pick[i]], obj, mem_mb, &held[i]) != 0;
        }
        bool ok = obj == CAPACITY_OBJ_ITEMS ? held[3] >= held[0] : held[3] <= held[0];
        wrapout_printf(
            "  verify: the recommendation (%s) %s %llu, the run's own settings %llu: %s\n",
            c[rec].label, obj == CAPACITY_OBJ_ITEMS ? "holds" : "takes",
            (unsigned long long)held[3], (unsigned long long)held[0],
            ok ? "ok" : "WORSE THAN THE CURRENT SETTINGS");
        failed += !ok;
    }
out:
    capacity_seq_free(&seq);
    capacity_seq_free(&other);
    advise_hist_free(&half);
    free(c);
    return failed;
}

/* --node/--since: every selected run's leftover items added into r (the
 * first run's prediction, its settings the fleet's baseline); 0 or -1
 * (said). */
static int fleet_union(const struct run_opts *o, struct reader *src, struct prediction *r,
                       size_t *nruns, size_t *nnodes)
{
    int64_t *ids = NULL;
    char **nodes = NULL;
    size_t n = 0, differ = 0;
    int rc = -1;
    struct prediction *other = calloc(1, sizeof *other);
    if (!other || select_runs(o, src, &ids, &nodes, &n) || open_run(o, src, ids[0], r))
        goto out;
    *nnodes = 1;
    for (size_t i = 1; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen = seen || !strcmp(nodes[i], nodes[j]);
        *nnodes += !seen;
        if (open_run(o, src, ids[i], other))
            goto out;
        for (size_t k = 0; k < other->live.n; k++)
            if (advise_hist_add(&r->live, other->live.ntotal[k], other->live.count[k])) {
                fprintf(stderr, "slabtap model advise: out of memory\n");
                goto out;
            }
        r->live_items += other->live_items;
        if (other->ladder.n_classes != r->ladder.n_classes ||
            memcmp(other->ladder.cls, r->ladder.cls, sizeof r->ladder.cls))
            differ++;
        predict_free(other);
    }
    advise_hist_sort(&r->live);
    wrapout_printf("fleet: %zu runs of %zu nodes like '%s'%s%s (first: run %lld, node '%s')\n", n,
                   *nnodes, o->node ? o->node : "%", o->since ? ", within " : "",
                   o->since ? o->since : "", (long long)ids[0], nodes[0]);
    if (differ)
        wrapout_printf("  %zu of them ran another chunk ladder than the first: \"the run's own "
                       "settings\" below are the first run's\n",
                       differ);
    *nruns = n;
    rc = 0;
out:
    if (other)
        predict_free(other);
    free(other);
    reader_runs_select_free(ids, nodes, n);
    return rc;
}

/* The hits report's arguments from advise's or mrc's flags. */
static struct cli_hits_args hits_args(const struct run_opts *o, struct reader *src,
                                      const struct prediction *r)
{
    return (struct cli_hits_args){ .db = o->db,
                                   .reader = src,
                                   .run_id = r->run_id,
                                   .r = r,
                                   .memory_limit_mb = o->memory_limit_mb,
                                   .max_classes = (uint32_t)o->max_classes,
                                   .warmup = o->warmup,
                                   .verify = o->verify,
                                   .json = o->format && !strcmp(o->format, "json"),
                                   .save = o->save,
                                   .memcached = o->memcached };
}

static int model_mrc(int argc, char **argv)
{
    struct run_opts o;
    struct reader *src = NULL;
    struct prediction *r = calloc(1, sizeof *r);
    struct slab_settings other;
    unsigned given = 0, automove = 1;
    char err[256];
    int rc = 1;
    if (!run_opts_or_usage(argc, argv, &o, 2, &rc) || !r)
        goto out;
    if (open_src(&o, &src) || open_run(&o, src, -1, r))
        goto out;
    if (run_basis == RUNS_BASIS_AGGREGATES) {
        fprintf(stderr, "slabtap model mrc: replays one run's rows, which are not all kept\n");
        goto out;
    }
    if (o.flags) {
        const char *a = strstr(o.flags, "slab_automove=");
        if (slab_settings_from_flags(&other, &given, o.flags, r->version, err, sizeof err) !=
            SLAB_OK) {
            fprintf(stderr, "slabtap model mrc: --flags: %s\n", err);
            rc = 2;
            goto out;
        }
        if (a)
            automove = (unsigned)(a[14] - '0') <= 2 ? (unsigned)(a[14] - '0') : 1;
    }
    struct cli_hits_args ha = hits_args(&o, src, r);
    rc = cli_model_hits_mrc(&ha, (size_t)o.points, o.flags ? &other : NULL, automove);
out:
    if (r)
        predict_free(r);
    free(r);
    reader_close(src);
    return rc;
}

static void usage_shadows(FILE *out)
{
    fprintf(out,
            "usage: slabtap model shadows --db FILE|URI [--run NAME_OR_ID] [--format text|json]\n"
            "                             [-v|-q]\n\n"
            "The shadow memcacheds of a recorded proxy run (proxy --shadow, issue 23),\n"
            "each measured -- its hit ratio, evictions, waste, pages and classes with\n"
            "pages from its stats samples since its last (re)start (view target_totals)\n"
            "-- beside the cache model's prediction for its flags and -m over the\n"
            "recorded requests from that start (the hit-ratio simulator of model mrc);\n"
            "a 1/N shadow is predicted on the same 1/N of the keys in its own memory.\n"
            "The primary comes first, with its own settings from the run's start: the\n"
            "model's error on this traffic. The prediction needs the run's reads (proxy\n"
            "--reads on, the default); a run without them is said and not predicted.\n\n"
            "  --db FILE|URI       the store (SQLite file or postgresql:// URI)\n"
            "  --run NAME_OR_ID    the run (default: the newest)\n"
            "  --format text|json  json: one object, a member per target (for scripts)\n"
            "  -v, --verbose       debug log lines too\n"
            "  -q, --quiet         warnings and errors only\n"
            "  -h, --help          this text\n");
}

static int model_shadows(int argc, char **argv)
{
    struct run_opts o;
    struct reader *src = NULL;
    struct prediction *r = calloc(1, sizeof *r);
    int level = (int)log_get_level(), rc = 1;
    char err[512];
    memset(&o, 0, sizeof o);
    o.mode = 2;
    const struct opt_spec table[] = {
        { "db", 0, OPT_STRING, .dest = &o.db },
        { "run", 0, OPT_STRING, .dest = &o.run },
        { "format", 0, OPT_STRING, .dest = &o.format },
        CLI_OPTS_VERBOSITY(&level, NULL),
    };
    switch (opt_parse("model shadows", table, sizeof table / sizeof table[0], argc, argv, NULL, err,
                      sizeof err)) {
    case OPT_HELP:
        usage_shadows(stdout);
        free(r);
        return 0;
    case OPT_ERROR: free(r); return cli_usage_error("model shadows", err);
    case OPT_OK: break;
    }
    log_set_level((enum log_level)level);
    if (!o.db) {
        free(r);
        return cli_usage_error("model shadows", "model shadows: --db FILE|URI is required");
    }
    if (o.format && strcmp(o.format, "text") && strcmp(o.format, "json")) {
        free(r);
        return cli_usage_error("model shadows", "model shadows: --format is text or json");
    }
    if (!r || open_src(&o, &src) || open_run(&o, src, -1, r))
        goto out;
    struct cli_hits_args ha = hits_args(&o, src, r);
    rc = cli_model_hits_shadows(&ha);
out:
    if (r)
        predict_free(r);
    free(r);
    reader_close(src);
    return rc;
}

static int model_advise(int argc, char **argv)
{
    struct run_opts o;
    struct reader *src = NULL;
    struct prediction *r = calloc(1, sizeof *r);
    size_t nruns = 1, nnodes = 1;
    struct slab_settings best, fitted;
    struct advise_eval cur, beste, fite;
    struct advise_cliff cliffs[8];
    char flags[1024], f[32];
    int rc = 1;
    if (!run_opts_or_usage(argc, argv, &o, 1, &rc) || !r)
        goto out;
    if (open_src(&o, &src))
        goto out;
    bool fleet = o.node || o.since;
    if (fleet ? fleet_union(&o, src, r, &nruns, &nnodes) : open_run(&o, src, -1, r))
        goto out;
    bool hits = run_hits && (!fleet || o.objective);
    struct cli_hits_args ha = hits_args(&o, src, r);
    bool json = ha.json;
    if (hits && (fleet || run_basis == RUNS_BASIS_AGGREGATES)) {
        fprintf(stderr, "slabtap model advise: --objective hits replays one run's rows (writes "
                        "and reads), all kept (--run ID)\n");
        goto out;
    }
    if (hits && predict_sampled(r)) {
        fprintf(stderr,
                "slabtap model advise: --objective hits: run %lld keeps one key in %u "
                "(--sample-keys); use `slabtap model mrc` for its scaled curve\n",
                (long long)r->run_id, r->sample_keys);
        goto out;
    }
    if (json && !hits) {
        fprintf(stderr, "slabtap model advise: --format json is for --objective hits\n");
        goto out;
    }
    if (json) {
        rc = cli_model_hits_advise(&ha) ? 1 : 0;
        goto out;
    }
    if (r->live.n == 0) {
        fprintf(stderr, "slabtap model advise: the run left no items to size\n");
        goto out;
    }
    advise_evaluate(&r->ladder, &r->live, &cur);
    bool no_factor = advise_search_factor_max(&r->settings, &r->live, (uint32_t)o.max_classes,
                                              &best, &beste) != 0;
    if (no_factor) { /* -f 2.0 -n 512 still makes 11 classes */
        best = r->settings;
        beste = cur;
    }
    if (advise_fit_sizes(&r->settings, &r->live, (uint32_t)o.max_classes - 1, &fitted, &fite)) {
        fprintf(stderr, "slabtap model advise: no valid ladder found\n");
        goto out;
    }
    if (fleet)
        wrapout_printf("fleet: %llu items, %u distinct sizes (memcached %s)\n",
                       (unsigned long long)r->live_items, (unsigned)r->live.n, r->version);
    else
        wrapout_printf("run %lld '%s': %llu items, %u distinct sizes (memcached %s)\n",
                       (long long)r->run_id, r->run_name, (unsigned long long)r->live_items,
                       (unsigned)r->live.n, r->version);
    if (!fleet)
        print_basis(r, false);
    if (r->watch && !run_snapshot)
        wrapout_printf(
            "watch run: client flags are not in memcached's log, taken as 0 -- except "
            "%llu stores memcached's class showed carrying them: an item with flags is "
            "4 bytes larger than sized here (a snapshot lists sizes whole: --snapshot)\n",
            (unsigned long long)r->flags_inferred);
    if (predict_sampled(r)) /* --sample-keys: r->live counts each kept item N times */
        wrapout_printf(
            "sampled: --sample-keys 1/%u -- the sizes are the %llu items of the kept keys "
            "(hash sampling keeps sizes unbiased), each counted %u times; waste shares are "
            "the sample's, item and byte counts scaled estimates\n",
            r->sample_keys, (unsigned long long)r->live_items, r->sample_keys);
    /* the run's own ladder as memcached took it: -o slab_sizes, or -f exact */
    ladder_choice_flags(&r->choice, flags, sizeof flags);
    print_eval("the run's own settings", strlen(flags) > 34 ? "(below)" : flags, &cur);
    if (strlen(flags) > 34)
        wrapout_printf("    %s\n", flags);
    slab_factor_text(best.growth_factor, f, sizeof f);
    snprintf(flags, sizeof flags, "-n %u -f %s", best.chunk_size_min, f);
    print_eval("best -f/-n", flags, &beste);
    if (no_factor)
        wrapout_printf("    (no -f/-n ladder has at most %lld classes: the run's own settings)\n",
                       o.max_classes);
    else if (beste.waste * cur.allocated > cur.waste * beste.allocated)
        wrapout_printf(
            "    (more chunk waste than the run's own settings: no -f/-n with at most %lld "
            "classes wastes less)\n",
            o.max_classes);
    slab_sizes_flag(&fitted, flags, sizeof flags);
    print_eval("fitted slab_sizes", fitted.n_slab_sizes > 6 ? "(below)" : flags, &fite);
    if (fitted.n_slab_sizes > 6)
        wrapout_printf("    %s\n", flags);
    if (fite.waste * cur.allocated > cur.waste * fite.allocated)
        wrapout_printf(
            "    (more chunk waste than the run's own settings: no slab_sizes ladder of at "
            "most %lld classes wastes less)\n",
            o.max_classes);
    struct slab_ladder bl;
    if (slab_ladder_build(&best, &bl, NULL, 0) == SLAB_OK) {
        size_t nc = advise_cliffs(&bl, &r->live, cliffs, 8);
        for (size_t i = 0; i < nc; i++)
            wrapout_printf(
                "  cliff under -n %u -f %s: class %u (%u-byte chunks) takes items of %llu..%llu "
                "bytes; %llu of yours land there\n",
                best.chunk_size_min, f, cliffs[i].class_id, cliffs[i].chunk_size,
                (unsigned long long)cliffs[i].lo, (unsigned long long)cliffs[i].hi,
                (unsigned long long)cliffs[i].items);
    }
    size_t nc = advise_cliffs(&r->ladder, &r->live, cliffs, 8);
    for (size_t i = 0; i < nc; i++)
        wrapout_printf("  cliff under the run's settings: class %u (%u-byte chunks) holds items of "
                       "%llu..%llu bytes (%llu items)\n",
                       cliffs[i].class_id, cliffs[i].chunk_size,
                       (unsigned long long)cliffs[i].min_item,
                       (unsigned long long)cliffs[i].max_item, (unsigned long long)cliffs[i].items);
    rc = 0;
    if (predict_sampled(r) && !fleet) { /* its writes are one key in N */
        wrapout_printf("verify, capacity: not on a sampled run (its writes are one key in %u: a "
                       "memcached of -m M holds another mix of them than of all keys)\n",
                       r->sample_keys);
        goto out;
    }
    if (hits) { /* waste above is context; the hits advice replaces capacity */
        rc = cli_model_hits_advise(&ha) ? 1 : 0;
        goto out;
    }
    if (o.verify)
        rc = model_verify_all(&o, r, &best, &beste, &fitted, &fite) ? 1 : 0;
    /* capacity replays one run's writes */
    if (fleet)
        wrapout_printf("capacity: per run (--run ID); not for %zu runs of %zu nodes\n", nruns,
                       nnodes);
    else if (model_capacity(&o, src, r))
        rc = 1;
out:
    if (r)
        predict_free(r);
    free(r);
    reader_close(src);
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
        if (!strcmp(argv[1], subcommands[i].name)) {
            /* text lines wrapped at the terminal's width (JSON is written
             * around it, whole) */
            wrapout_open(stdout);
            int rc = subcommands[i].run(argc - 1, argv + 1);
            wrapout_close();
            cli_replay_counters_say();
            return rc;
        }
    fprintf(stderr, "slabtap model: unknown subcommand '%s'\nsee: slabtap model --help\n", argv[1]);
    return 2;
}
