/* cli: the entry points of slabtap's subcommands, one per module that owns
 * a command. Each takes argv with argv[0] = the subcommand name and returns
 * the process exit status (0 ok, 1 failure, 2 usage).
 *
 * Every subcommand parses its flags with core/opt.h's table parser and
 * answers the same way: -h/--help prints its usage to stdout (exit 0); a
 * mistake prints two lines to stderr, "slabtap COMMAND: MESSAGE" and
 * "see: slabtap COMMAND --help" (cli_usage_error; exit 2), never the whole
 * usage. The rows every command shares are defined here once. */
#ifndef SLABTAP_CLI_H
#define SLABTAP_CLI_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "core/opt.h"
#include "core/units.h"
#include "model/slab_model.h"

struct cli_command {
    const char *name;
    const char *help;
    int (*main)(int argc, char **argv);
};

int cli_proxy_main(int argc, char **argv);
int cli_watch_main(int argc, char **argv);

/* A usage mistake: err (opt's "slabtap COMMAND: MESSAGE" line) and
 * "see: slabtap COMMAND --help" on stderr. Returns 2, the exit status. */
int cli_usage_error(const char *command, const char *err);

int cli_model_main(int argc, char **argv);
int cli_experiment_main(int argc, char **argv);
int cli_load_main(int argc, char **argv);
int cli_top_main(int argc, char **argv);
/* `slabtap snapshot` (cli/snapshot_cmd.c) */
int cli_snapshot_main(int argc, char **argv);

/* `model advise --objective hits` and `model mrc` (cli/model_hits.c), called
 * by model_cmd.c once the run is open. */
struct prediction;
struct reader;
struct cli_hits_args {
    const char *db;        /* the store the run is replayed from: a file or a URI */
    struct reader *reader; /* the same, open (record/reader.h) */
    int64_t run_id;
    const struct prediction *r; /* the run's prediction: its settings and version */
    uint64_t memory_limit_mb;   /* 0: the memory the run's own settings use */
    uint32_t max_classes;
    double warmup; /* share of the requests before hits are counted */
    bool verify, json;
    bool save;             /* --save: the JSON into run_meta (below) */
    const char *memcached; /* --verify's binary; NULL: on PATH */
};
/* --save keeps the JSON report in the run's run_meta, where the page reads
 * it: advise under CLI_META_HITS_ADVICE, mrc under CLI_META_HITS_MRC. */
#define CLI_META_HITS_ADVICE "hits_advice"
#define CLI_META_HITS_MRC "hits_mrc"
/* The number of failed checks (0: all well); 1 when it could not run. */
int cli_model_hits_advise(const struct cli_hits_args *a);
/* The miss-ratio curve of the run's settings (and of other, when not NULL)
 * at `points` memory sizes up to --memory-limit (default twice the run's
 * -m). 0 or 1. */
int cli_model_hits_mrc(const struct cli_hits_args *a, size_t points,
                       const struct slab_settings *other, unsigned other_automove);
/* `slabtap model shadows`: each target of the run (the primary and its
 * shadows, issue 23) measured (view target_totals: since its last
 * (re)start) beside the cache model's prediction for its flags over the
 * recorded requests since that start (a 1/N shadow on the same sample of
 * keys); a run without reads: said, nothing predicted. 0 or 1. */
int cli_model_hits_shadows(const struct cli_hits_args *a);

/* -v/--verbose and -q/--quiet: two table rows writing an int log level
 * (start it at log_get_level(); log_set_level() it after parsing). seen
 * (may be NULL) is set when -q/--quiet is given. */
#define CLI_OPTS_VERBOSITY(level, quiet_seen) \
    { "verbose", 'v', OPT_SET, .dest = (level), .set_value = LOG_LEVEL_DEBUG }, \
    { \
        "quiet", 'q', OPT_SET, .dest = (level), .set_value = LOG_LEVEL_WARN, .seen = (quiet_seen) \
    }

/* memcached's ladder flags, the same bounds in `model` and `load --dry-run`:
 * -n -f -I -m --slab-chunk-max --no-cas/-C. Start with
 * cli_ladder_flags_init, parse into the fields with CLI_OPTS_LADDER, then
 * cli_ladder_flags_apply puts them into s. given: any of them was given. */
struct cli_ladder_flags {
    struct slab_settings s;
    uint64_t chunk_size_min, item_size_max, mem_mb, slab_chunk_max;
    bool no_cas, given;
};

/* -m: memcached refuses 0 (the -I check: 1024 > 0 / 2), so 1..2^30 MB.
 * Every size takes core/units.h's spellings; a number alone is bytes, for
 * -m megabytes (memcached's units). */
#define CLI_OPTS_LADDER(f) \
    { NULL, \
      'n', \
      OPT_SIZE, \
      .dest = &(f)->chunk_size_min, \
      .min = 1, \
      .max = INT_MAX, \
      .seen = &(f)->given }, \
        { NULL, 'f', OPT_DOUBLE, .dest = &(f)->s.growth_factor, .seen = &(f)->given }, \
        { NULL, 'I', OPT_SIZE, .dest = &(f)->item_size_max, .max = UINT32_MAX, .seen = &(f)->given }, \
        { NULL, \
          'm', \
          OPT_SIZE, \
          .dest = &(f)->mem_mb, \
          .unit = UNITS_MIB, \
          .min = 1, \
          .max = 1ull << 30, \
          .seen = &(f)->given }, \
        { "slab-chunk-max",   0, \
          OPT_SIZE,           .dest = &(f)->slab_chunk_max, \
          .min = 1,           .max = UINT32_MAX, \
          .seen = &(f)->given }, \
    { \
        "no-cas", 'C', OPT_FLAG, .dest = &(f)->no_cas, .seen = &(f)->given \
    }

/* A replay that found incr/decr ahead (load_result's counter_ops and
 * counter_keys of source, a file) sent every write to those keys with
 * digits: cli_replay_counted counts such a replay (ops 0: not one), and
 * cli_replay_counters_say says it in one INFO line with the count of
 * replays -- once, however many candidates `model advise --verify`
 * replayed the same run for. */
void cli_replay_counted(const char *source, uint64_t ops, uint64_t keys);
void cli_replay_counters_say(void);

/* memcached 1.6.18's defaults, in s and in the fields the rows write. */
void cli_ladder_flags_init(struct cli_ladder_flags *f);
/* The parsed fields into f->s, then f->s into *out. */
void cli_ladder_flags_apply(struct cli_ladder_flags *f, struct slab_settings *out);

#endif
