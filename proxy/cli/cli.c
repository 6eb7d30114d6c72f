/* cli: what every subcommand answers the same way (cli.h). */
#include "cli/cli.h"

#include <stdio.h>

int cli_usage_error(const char *command, const char *err)
{
    fprintf(stderr, "%s\nsee: slabtap %s --help\n", err, command);
    return 2;
}
