/* load_cli: `slabtap load`, the command line face of the load engine.
 * Owns: flag parsing, reading the workload file, the --dry-run ladder from
 * memcached-style flags, SIGINT/SIGPIPE handling for this process, and the
 * summary printed at the end.
 * Must never: plan, send or count anything itself (load.c and workload.c
 * do), or exit with a status other than cli.h's 0 ok / 1 failure / 2 usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/addr.h"
#include "core/fileio.h"
#include "load/load.h"
#include "model/slab_model.h"
#include "load/workload.h"

/* 4096 statements of at most 1 KiB each, with room for comments */

static atomic_bool load_cli_stop;

struct load_cli_args {
    const char *target, *workload, *replay_db, *twitter, *cachelib;
    long long replay_run, connections, pipeline;
    unsigned long long seed;
    bool seed_set, dry_run, quiet, ladder_flags;
    struct slab_settings settings; /* --dry-run's ladder */
};

enum load_cli_parse { LOAD_CLI_OK, LOAD_CLI_HELP, LOAD_CLI_USAGE };

static void load_cli_usage(FILE *out)
{
    fprintf(out,
        "usage: slabtap load --target HOST:PORT SOURCE [options]\n"
        "       slabtap load --dry-run SOURCE [ladder flags]\n"
        "\n"
        "Sends an operation plan to memcached (or to `slabtap proxy` in front of it)\n"
        "over pipelined text-protocol connections, counts the answers, and prints a\n"
        "summary with the plan's fingerprint (sha256 of every op, in order).\n"
        "\n"
        "SOURCE, exactly one of:\n"
        "  --workload FILE        a workload file (experiments/README.md, \"Workload files\")\n"
        "  --replay-db FILE       the writes `slabtap proxy` recorded in FILE\n"
        "  --replay-run N         which run of --replay-db (default: the newest)\n"
        "  --twitter-trace FILE   a twitter/cache-trace CSV\n"
        "  --cachelib-trace FILE  a CacheLib kvcache trace CSV (with its header row)\n"
        "\n"
        "options:\n"
        "  --target HOST:PORT     memcached or the proxy\n"
        "  --connections N        connections, 1..%d (default: the workload's, else %d)\n"
        "  --pipeline D           requests in flight per connection, 1..%d\n"
        "                         (default: the workload's, else %d)\n"
        "  --seed S               random seed (default: the workload's, else 0)\n"
        "  --dry-run              print op count and fingerprint; connect to nothing\n"
        "  --quiet                no progress line on stderr\n"
        "  -h, --help             this text\n"
        "\n"
        "ladder flags, for --dry-run only (a live run reads `stats settings`):\n"
        "  -n BYTES  -f FACTOR  -I SIZE  -m MEGABYTES  --slab-chunk-max BYTES\n"
        "  --no-cas, -C           same meaning and defaults as memcached 1.6.18\n",
        LOAD_CONNECTIONS_MAX, LOAD_DEFAULT_CONNECTIONS, LOAD_PIPELINE_MAX,
        LOAD_DEFAULT_PIPELINE);
}

static int load_cli_number(const char *text, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* --name VALUE / --name=VALUE / -x VALUE / -xVALUE; NULL if argv[*i] is
 * not this option, *missing when it is but the value is absent. */
static const char *load_cli_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n))
        return NULL;
    if (arg[n] == '=' && name[1] == '-')
        return arg + n + 1;
    if (arg[n])
        return name[1] == '-' ? NULL : arg + n;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

/* A memcached ladder flag into a->settings; -1 on a bad value. */
static int load_cli_ladder_flag(struct load_cli_args *a, const char *opt, const char *val)
{
    long long v;
    struct slab_settings *s = &a->settings;
    char *end;
    a->ladder_flags = true;
    if (!strcmp(opt, "-f")) {
        s->growth_factor = strtod(val, &end);
        return end == val || *end ? -1 : 0;
    }
    if (!strcmp(opt, "-I"))
        return slab_parse_size(val, &s->item_size_max) == SLAB_OK ? 0 : -1;
    if (!strcmp(opt, "-n") && !load_cli_number(val, 1, INT_MAX, &v))
        s->chunk_size_min = (uint32_t)v;
    else if (!strcmp(opt, "-m") && !load_cli_number(val, 1, 1LL << 30, &v))
        s->mem_limit = (uint64_t)v * 1024 * 1024;
    else if (!strcmp(opt, "--slab-chunk-max") && !load_cli_number(val, 1, UINT32_MAX, &v))
        s->slab_chunk_max = (uint32_t)v;
    else
        return -1;
    return 0;
}

/* One valued option; -1 on a bad value. */
static int load_cli_apply(struct load_cli_args *a, const char *opt, const char *val)
{
    const char **paths[] = {&a->target, &a->workload, &a->replay_db, &a->twitter, &a->cachelib};
    static const char *const path_opts[] = {"--target", "--workload", "--replay-db",
                                            "--twitter-trace", "--cachelib-trace"};
    for (size_t k = 0; k < sizeof path_opts / sizeof path_opts[0]; k++)
        if (!strcmp(opt, path_opts[k])) {
            *paths[k] = val;
            return 0;
        }
    if (!strcmp(opt, "--replay-run"))
        return load_cli_number(val, 1, INT64_MAX, &a->replay_run);
    if (!strcmp(opt, "--connections"))
        return load_cli_number(val, 1, LOAD_CONNECTIONS_MAX, &a->connections);
    if (!strcmp(opt, "--pipeline"))
        return load_cli_number(val, 1, LOAD_PIPELINE_MAX, &a->pipeline);
    if (!strcmp(opt, "--seed")) {
        char *end;
        errno = 0;
        a->seed = strtoull(val, &end, 10);
        a->seed_set = true;
        return errno || end == val || *end || val[0] == '-' ? -1 : 0;
    }
    return load_cli_ladder_flag(a, opt, val);
}

static enum load_cli_parse load_cli_parse_flags(int argc, char **argv, struct load_cli_args *a)
{
    static const char *const valued[] = {
        "--target", "--workload", "--replay-db", "--replay-run", "--twitter-trace",
        "--cachelib-trace", "--connections", "--pipeline", "--seed", "--slab-chunk-max",
        "-n", "-f", "-I", "-m"};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        bool missing = false;
        size_t k;
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help"))
            return LOAD_CLI_HELP;
        if (!strcmp(arg, "--dry-run")) {
            a->dry_run = true;
            continue;
        }
        if (!strcmp(arg, "--quiet")) {
            a->quiet = true;
            continue;
        }
        if (!strcmp(arg, "--no-cas") || !strcmp(arg, "-C")) {
            a->settings.use_cas = false;
            a->ladder_flags = true;
            continue;
        }
        for (k = 0; k < sizeof valued / sizeof valued[0]; k++)
            if ((val = load_cli_value(argc, argv, &i, valued[k], &missing)) || missing)
                break;
        if (missing || !val) {
            fprintf(stderr, missing ? "slabtap load: %s needs a value\n"
                                    : "slabtap load: unknown option '%s'\n", arg);
            return LOAD_CLI_USAGE;
        }
        if (load_cli_apply(a, valued[k], val)) {
            fprintf(stderr, "slabtap load: bad value '%s' for %s\n", val, valued[k]);
            return LOAD_CLI_USAGE;
        }
    }
    return LOAD_CLI_OK;
}

/* Cross-flag rules: one source, a target unless dry, ladder flags only dry. */
static int load_cli_check(const struct load_cli_args *a, struct load_config *cfg)
{
    int sources = !!a->workload + !!a->replay_db + !!a->twitter + !!a->cachelib;
    if (sources != 1) {
        fprintf(stderr, "slabtap load: give exactly one of --workload, --replay-db, "
                        "--twitter-trace, --cachelib-trace\n");
        return -1;
    }
    if (a->replay_run && !a->replay_db) {
        fprintf(stderr, "slabtap load: --replay-run needs --replay-db\n");
        return -1;
    }
    if (a->ladder_flags && !a->dry_run) {
        fprintf(stderr, "slabtap load: -n -f -I -m --slab-chunk-max --no-cas only apply to "
                        "--dry-run; a live run reads them from the server\n");
        return -1;
    }
    if (!a->dry_run && !a->target) {
        fprintf(stderr, "slabtap load: --target HOST:PORT is required (or --dry-run)\n");
        return -1;
    }
    if (a->target && addr_parse(a->target, &cfg->target)) {
        fprintf(stderr, "slabtap load: bad --target address '%s' (want HOST:PORT)\n", a->target);
        return -1;
    }
    return 0;
}

static void load_cli_on_phase(void *ud, const char *name)
{
    (void)ud;
    fprintf(stderr, "%sslabtap load: phase %s\n", isatty(STDERR_FILENO) ? "\r\033[K" : "", name);
}

static void load_cli_on_signal(int sig)
{
    (void)sig;
    atomic_store(&load_cli_stop, true);
}

static void load_cli_counts(const char *label, const uint64_t *v, unsigned n,
                            const char *(*name)(unsigned))
{
    printf("%-18s", label);
    bool any = false;
    for (unsigned i = 0; i < n; i++)
        if (v[i]) {
            printf("%s%s %" PRIu64, any ? ", " : "", name(i), v[i]);
            any = true;
        }
    printf("%s\n", any ? "" : "none");
}

static const char *load_cli_cmd_name(unsigned i)
{
    return workload_cmd_name((enum workload_cmd)i);
}

static const char *load_cli_answer_name(unsigned i)
{
    return load_answer_name((enum load_answer)i);
}

static void load_cli_summary(const struct load_cli_args *a, const struct load_result *r)
{
    const char *src = a->workload ? a->workload : a->replay_db ? a->replay_db
                      : a->twitter ? a->twitter : a->cachelib;
    if (!a->dry_run)
        printf("%-18s%s%s%s%s\n", "target:", a->target, r->server_version[0] ? " (memcached " : "",
               r->server_version, r->server_version[0] ? ")" : "");
    printf("%-18s%s", "source:", src);
    if (a->replay_db)
        printf(" run %" PRId64 " (%" PRIu64 " rows not replayable)", r->replay_run, r->skipped);
    printf(", seed %" PRIu64 "\n", r->seed);
    printf("%-18s%" PRIu64 "\n", "ops:", r->ops);
    load_cli_counts("ops by command:", r->ops_by_cmd, WORKLOAD_CMD_COUNT, load_cli_cmd_name);
    printf("%-18s%" PRIu64 "\n", "phases:", r->phases);
    if (!a->dry_run) {
        double secs = (double)r->elapsed_ns / 1e9;
        printf("%-18s%u x pipeline %u\n", "connections:", r->connections, r->pipeline);
        load_cli_counts("answers:", r->answers, LOAD_ANS_COUNT, load_cli_answer_name);
        printf("%-18s%" PRIu64 "\n", "writes answered:", r->writes_answered);
        printf("%-18s%" PRIu64 " confirmed (%" PRIu64 " mn fences)\n", "noreply:", r->silent, r->fences);
        printf("%-18s%" PRIu64 "\n", "errors:", r->errors);
        printf("%-18s%.3f s\n", "elapsed:", secs);
        printf("%-18s%.0f\n", "ops/s:", secs > 0 ? (double)r->ops / secs : 0.0);
    }
    printf("%-18s%s\n", "fingerprint:", r->fingerprint);
}

/* The source half of the config; the workload (if any) goes to *w. */
static int load_cli_source(const struct load_cli_args *a, struct load_config *cfg,
                           struct workload **w)
{
    if (a->workload) {
        size_t len = 0;
        struct workload_error err;
        char ferr[128];
        char *text = fileio_read(a->workload, FILEIO_DEFAULT_MAX, &len, ferr, sizeof ferr);
        if (!text) {
            fprintf(stderr, "slabtap load: cannot read %s: %s\n", a->workload, ferr);
            return -1;
        }
        enum workload_status st = workload_parse(a->workload, text, len, w, &err);
        free(text);
        if (st != WORKLOAD_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return -1;
        }
        cfg->source = LOAD_SRC_WORKLOAD;
        cfg->workload = *w;
        return 0;
    }
    cfg->source = a->replay_db ? LOAD_SRC_REPLAY_DB : a->twitter ? LOAD_SRC_TWITTER : LOAD_SRC_CACHELIB;
    cfg->path = a->replay_db ? a->replay_db : a->twitter ? a->twitter : a->cachelib;
    cfg->replay_run = a->replay_run;
    return 0;
}

static void load_cli_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = load_cli_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* a server that closes on us must be an error code, not a dead process */
    signal(SIGPIPE, SIG_IGN);
}

int cli_load_main(int argc, char **argv)
{
    struct load_cli_args a;
    struct load_config cfg;
    struct load_result res;
    struct workload *w = NULL;
    struct slab_ladder ladder;
    char err[256] = "";
    int rc = 1;
    memset(&a, 0, sizeof a);
    memset(&cfg, 0, sizeof cfg);
    slab_settings_default(&a.settings);
    switch (load_cli_parse_flags(argc, argv, &a)) {
    case LOAD_CLI_HELP:
        load_cli_usage(stdout);
        return 0;
    case LOAD_CLI_USAGE:
        goto usage;
    case LOAD_CLI_OK:
        break;
    }
    if (load_cli_check(&a, &cfg))
        goto usage;
    if (a.dry_run && slab_ladder_build(&a.settings, &ladder, err, sizeof err) != SLAB_OK) {
        fprintf(stderr, "slabtap load: memcached would refuse these settings: %s\n", err);
        goto usage;
    }
    if (load_cli_source(&a, &cfg, &w))
        goto out;
    cfg.connections = (unsigned)a.connections;
    cfg.pipeline = (unsigned)a.pipeline;
    cfg.seed = a.seed;
    cfg.seed_set = a.seed_set;
    cfg.ladder = a.dry_run ? &ladder : NULL;
    cfg.on_phase = a.dry_run ? NULL : load_cli_on_phase;
    cfg.progress = a.quiet ? LOAD_PROGRESS_OFF : LOAD_PROGRESS_AUTO;
    cfg.stop = &load_cli_stop;
    load_cli_signals();
    int ok = a.dry_run ? load_plan_digest(&cfg, &res) : load_run(&cfg, &res);
    if (ok == 0 || res.status == LOAD_E_STOPPED)
        load_cli_summary(&a, &res);
    if (ok != 0)
        fprintf(stderr, "slabtap load: %s: %s\n", load_status_str(res.status), res.error);
    rc = ok == 0 ? 0 : 1;
    goto out;
usage:
    fputc('\n', stderr);
    load_cli_usage(stderr);
    rc = 2;
out:
    workload_free(w);
    return rc;
}
