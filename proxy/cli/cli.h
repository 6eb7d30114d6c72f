/* cli: the entry points of slabtap's subcommands, one per module that owns
 * a command. Each takes argv with argv[0] = the subcommand name and returns
 * the process exit status (0 ok, 1 failure, 2 usage). */
#ifndef SLABTAP_CLI_H
#define SLABTAP_CLI_H

struct cli_command {
    const char *name;
    const char *help;
    int (*main)(int argc, char **argv);
};

int cli_proxy_main(int argc, char **argv);

int cli_model_main(int argc, char **argv);
int cli_experiment_main(int argc, char **argv);
int cli_load_main(int argc, char **argv);

#endif
