/* main: the slabtap command line; dispatches to one subcommand.
 * Owns nothing but the table below; every subcommand parses its own flags
 * with core/opt.h's table parser and must exit 2 with the error and where
 * its help is on a bad flag (cli.h). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct cli_command commands[] = {
    { "proxy", "run the recording proxy in front of memcached", cli_proxy_main },
    { "watch", "record a memcached from its own logger (watch), no proxy", cli_watch_main },
    { "experiment", "run an experiment spec: memcached, proxy, workload, gates, CSVs",
      cli_experiment_main },
    { "model", "memcached's slab ladder and item sizes, predicted", cli_model_main },
    { "load", "send a workload, a trace or a recorded run to memcached or the proxy",
      cli_load_main },
    { "snapshot", "record memcached's resident items (lru_crawler metadump), no proxy",
      cli_snapshot_main },
    { "top", "a live view of memcached's slab classes: memory, waste, evictions", cli_top_main },
};

static void usage(FILE *out)
{
    fprintf(out,
            "slabtap %s: a memcached proxy that records what the slab allocator does\n\n"
            "usage: slabtap <command> [options]   (slabtap <command> --help for its options)\n"
            "       slabtap -V | --version\n\n"
            "commands:\n",
            SLABTAP_VERSION);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv)
{
    /* a client that resets its connection must cost that connection, not
     * the process: writes to it fail with EPIPE instead */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("slabtap %s\n", SLABTAP_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].main(argc - 1, argv + 1);
    fprintf(stderr, "slabtap: unknown command '%s'\nsee: slabtap --help\n", argv[1]);
    return 2;
}
