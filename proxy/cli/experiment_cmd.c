/* experiment_cmd: `slabtap experiment SPEC...` -- flags and the default
 * Docker image; the runs themselves are experiment/experiment.c's. */
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/addr.h"
#include "core/log.h"
#include "core/opt.h"
#include "core/units.h"
#include "experiment/experiment.h"
#include "server/poller.h"

static void exp_usage(FILE *f)
{
    fprintf(f,
            "usage: slabtap experiment SPEC.exp [SPEC.exp ...] [options]\n\n"
            "For each run of the spec: starts memcached with the run's flags on a free\n"
            "loopback port, puts the recording proxy in front, sends the workload through\n"
            "it, takes a final stats sample, checks the gates (every write recorded,\n"
            "same-plan-as fingerprints, gate=model exactness), then writes the exports.\n\n"
            "  --db FILE          database (default RESULTS/runs.db)\n"
            "  --results DIR      where exports and charts go (env RESULTS_DIR, default "
            "results)\n"
            "  --memcached PATH   memcached binary (default: memcached on PATH)\n"
            "  --docker           run memcached with docker, image from docker/memcached.image\n"
            "  --image REF        the image for --docker (implies --docker; env MC_IMAGE)\n"
            "  --items N          item count of the runs with items= (experiments 1 and 2);\n"
            "                     the gates follow it (env N_ITEMS; default: the spec's)\n"
            "  --upstream HOST:PORT  an existing memcached (env MC_HOST, MC_PORT): runs whose\n"
            "                     flags its `stats settings` show use it, never restarted;\n"
            "                     the others are refused\n"
            "  --stats-interval MS  stats poll interval (default 250ms, at least %dms; 1s,\n"
            "                     '2 seconds': a number alone is milliseconds)\n"
            "  --http HOST:PORT   each run's proxy serves the admin endpoint there while it\n"
            "                     runs: the live page, /metrics (env SLABTAP_HTTP)\n"
            "  -v, --verbose      debug log lines too\n"
            "  -q, --quiet        warnings and errors only\n"
            "  -h, --help         this text\n"
            "  --progress-fd N    the live line goes to descriptor N instead of stderr\n"
            "On a terminal each run shows a live line (phase, ops done, ETA) on stderr\n"
            "(or --progress-fd); nothing of it otherwise.\n",
            POLLER_INTERVAL_MIN_MS);
}

/* docker/memcached.image of the repository the spec lives in (specs sit in
 * experiments/), else of the current directory. */
static int exp_default_image(char *out, size_t len, const char *spec)
{
    char path[512], copy[512];
    snprintf(copy, sizeof copy, "%s", spec);
    snprintf(path, sizeof path, "%.400s/../docker/memcached.image", dirname(copy));
    FILE *f = fopen(path, "r");
    if (!f)
        f = fopen("docker/memcached.image", "r");
    if (!f || !fgets(out, (int)len, f)) {
        if (f)
            fclose(f);
        return -1;
    }
    out[strcspn(out, "\r\n")] = '\0';
    fclose(f);
    return 0;
}

/* Flags into o and image; the spec files are argv[*first..argc-1]. */
static enum opt_result exp_parse_args(int argc, char **argv, struct experiment_options *o,
                                      char *image, size_t image_len, char *upstream,
                                      size_t upstream_len, int *first, char *err, size_t errlen)
{
    const char *image_arg = getenv("MC_IMAGE");
    const char *upstream_arg = NULL, *items_env = getenv("N_ITEMS");
    uint64_t stats_ms = o->stats_ms, items = 0, progress_fd = 0;
    int level = (int)log_get_level();
    const struct opt_spec table[] = {
        { "db", 0, OPT_STRING, .dest = &o->db },
        { "results", 0, OPT_STRING, .dest = &o->results },
        { "memcached", 0, OPT_STRING, .dest = &o->memcached },
        { "docker", 0, OPT_FLAG, .dest = &o->docker },
        { "image", 0, OPT_STRING, .dest = &image_arg },
        { "items", 0, OPT_UINT, .dest = &items, .min = 1, .max = 1000000000000ull },
        { "upstream", 0, OPT_STRING, .dest = &upstream_arg },
        { "progress-fd", 0, OPT_UINT, .dest = &progress_fd, .min = 1, .max = 1023 },
        { "http", 0, OPT_STRING, .dest = &o->http },
        { "stats-interval", 0, OPT_DURATION, .dest = &stats_ms, .unit = UNITS_MS,
          .min = POLLER_INTERVAL_MIN_MS, .max = UINT_MAX },
        CLI_OPTS_VERBOSITY(&level, NULL),
    };
    enum opt_result r = opt_parse("experiment", table, sizeof table / sizeof table[0], argc, argv,
                                  first, err, errlen);
    if (r != OPT_OK)
        return r;
    log_set_level((enum log_level)level);
    o->stats_ms = (unsigned)stats_ms;
    if (!items && items_env && items_env[0]) {
        char *end;
        items = strtoull(items_env, &end, 10);
        if (*end || !items || items_env[0] == '-')
            return opt_error(err, errlen, "experiment", "N_ITEMS: want a count of 1 or more");
    }
    o->items = items;
    o->progress_fd = (int)progress_fd;
    if (!o->http && getenv("SLABTAP_HTTP") && getenv("SLABTAP_HTTP")[0])
        o->http = getenv("SLABTAP_HTTP");
    if (o->http) {
        struct addr_list a;
        char why[384];
        if (addr_resolve(o->http, &a, why, sizeof why))
            return opt_error(err, errlen, "experiment", "--http / SLABTAP_HTTP %s", why);
        if (a.a[0].ss_family == AF_UNIX)
            return opt_error(err, errlen, "experiment",
                             "--http / SLABTAP_HTTP %s: the admin endpoint takes HOST:PORT",
                             o->http);
    }
    if (upstream_arg)
        snprintf(upstream, upstream_len, "%s", upstream_arg);
    else if ((getenv("MC_HOST") && getenv("MC_HOST")[0]) ||
             (getenv("MC_PORT") && getenv("MC_PORT")[0]))
        snprintf(upstream, upstream_len, "%s:%s",
                 getenv("MC_HOST") && getenv("MC_HOST")[0] ? getenv("MC_HOST") : "127.0.0.1",
                 getenv("MC_PORT") && getenv("MC_PORT")[0] ? getenv("MC_PORT") : "11311");
    if (upstream[0]) {
        struct addr_list a;
        char why[384];
        if (addr_resolve(upstream, &a, why, sizeof why))
            return opt_error(err, errlen, "experiment", "--upstream / MC_HOST:MC_PORT %s", why);
        if (o->docker || o->memcached)
            return opt_error(err, errlen, "experiment",
                             "--upstream is a memcached slabtap does not start: not with "
                             "--docker or --memcached");
        o->upstream = upstream;
    }
    if (image_arg && image_arg[0] && !upstream[0])
        o->docker = true;
    if (*first >= argc)
        return opt_error(err, errlen, "experiment", "need a spec file");
    snprintf(image, image_len, "%s", image_arg && o->docker ? image_arg : "");
    if (o->docker && !image[0] && exp_default_image(image, image_len, argv[*first]))
        return opt_error(err, errlen, "experiment",
                         "--docker needs docker/memcached.image or --image");
    return OPT_OK;
}

int cli_experiment_main(int argc, char **argv)
{
    const char *rd = getenv("RESULTS_DIR");
    struct experiment_options o = { .db = NULL,
                                    .results = rd && rd[0] ? rd : "results",
                                    .stats_ms = 250 };
    char image[256] = "", upstream[ADDR_TEXT_MAX + 16] = "", err[512], db[1024];
    int first = argc, failed = 0;
    switch (exp_parse_args(argc, argv, &o, image, sizeof image, upstream, sizeof upstream, &first,
                           err, sizeof err)) {
    case OPT_HELP: exp_usage(stdout); return 0;
    case OPT_ERROR: return cli_usage_error("experiment", err);
    case OPT_OK: break;
    }
    if (!o.db) {
        snprintf(db, sizeof db, "%s/runs.db", o.results);
        o.db = db;
    }
    o.image = image;
    /* load_run and the proxy write with write(2): a client or memcached that
     * closes on us (the load stopping on Ctrl-C) must be EPIPE, not death */
    signal(SIGPIPE, SIG_IGN);
    experiment_catch_signals();
    for (int i = first; i < argc && !experiment_interrupted(); i++)
        failed += experiment_run_spec(&o, argv[i]);
    if (experiment_interrupted())
        return 130;
    return failed ? 1 : 0;
}
