/* experiment_cmd: `slabtap experiment SPEC...` -- flags and the default
 * Docker image; the runs themselves are experiment/experiment.c's. */
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
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
        "  --db FILE          database (default results/runs.db)\n"
        "  --results DIR      where exports go (default results)\n"
        "  --memcached PATH   memcached binary (default: memcached on PATH)\n"
        "  --docker           run memcached with docker, image from docker/memcached.image\n"
        "  --image REF        the image for --docker\n"
        "  --stats-interval MS  stats poll interval (default 250)\n"
        "  -h, --help         this text\n");
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

int cli_experiment_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'}, {"results", required_argument, NULL, 'r'},
        {"memcached", required_argument, NULL, 'm'}, {"docker", no_argument, NULL, 'D'},
        {"image", required_argument, NULL, 'i'}, {"stats-interval", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    struct experiment_options o = {.db = "results/runs.db", .results = "results", .stats_ms = 250};
    char image[256] = "";
    int c, failed = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'd': o.db = optarg; break;
        case 'r': o.results = optarg; break;
        case 'm': o.memcached = optarg; break;
        case 'D': o.docker = true; break;
        case 'i': snprintf(image, sizeof image, "%s", optarg); break;
        case 's': o.stats_ms = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'h': exp_usage(stdout); return 0;
        default: exp_usage(stderr); return 2;
        }
    }
    if (optind >= argc || o.stats_ms < POLLER_INTERVAL_MIN_MS) {
        fprintf(stderr, "slabtap experiment: %s\n", optind >= argc ? "need a spec file"
                                                                  : "--stats-interval too small");
        exp_usage(stderr);
        return 2;
    }
    if (o.docker && !image[0] && exp_default_image(image, sizeof image, argv[optind])) {
        fprintf(stderr, "slabtap experiment: --docker needs docker/memcached.image or --image\n");
        return 2;
    }
    o.image = image;
    /* load_run and the proxy write with write(2): a client or memcached that
     * closes on us (the load stopping on Ctrl-C) must be EPIPE, not death */
    signal(SIGPIPE, SIG_IGN);
    experiment_catch_signals();
    for (int i = optind; i < argc && !experiment_interrupted(); i++)
        failed += experiment_run_spec(&o, argv[i]);
    if (experiment_interrupted())
        return 130;
    return failed ? 1 : 0;
}

