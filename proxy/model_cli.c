/* model_cli: `slabtap model <subcommand>`, the command line face of
 * slab_model.
 * Owns: flag parsing for memcached's slab settings, the subcommand table,
 * and printing; all the arithmetic stays in slab_model.
 * Must never: compute a ladder or an item size itself, or pretend a
 * subcommand works when it does not (predict and advise need the SQLite
 * store and say so). Exit codes as in cli.h: 0 ok, 1 failure, 2 usage.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "slab_model.h"

enum parse_result { PARSE_OK, PARSE_HELP, PARSE_USAGE };

struct model_subcommand {
    const char *name;
    const char *help;
    int (*run)(int argc, char **argv);
};

static int model_ladder(int argc, char **argv);
static int model_predict(int argc, char **argv);
static int model_advise(int argc, char **argv);

static const struct model_subcommand subcommands[] = {
    {"ladder", "print the chunk ladder, line for line as memcached -vv prints it", model_ladder},
    {"predict", "predict stats slabs/items for a recorded run (not implemented yet)",
     model_predict},
    {"advise", "search -f/-n/slab_sizes for a recorded size mix (not implemented yet)",
     model_advise},
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
    fprintf(out, "\nslabtap model <subcommand> --help for its options.\n");
}

static void usage_ladder(FILE *out)
{
    fprintf(out, "usage: slabtap model ladder [options]\n\n"
                 "Prints the slab classes memcached would create, in the exact format of\n"
                 "the `slab class ...` lines `memcached -vv` writes to stderr at start-up.\n\n"
                 "%s  -h, --help             this text\n", settings_usage);
}

/* "--name=value", "--name value", "-nvalue" or "-n value": the value of
 * option `name` at argv[*i], advancing *i past it. NULL if argv[*i] is not
 * this option; *missing set if it is but has no value. */
static const char *option_value(int argc, char **argv, int *i, const char *name, int *missing)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return NULL;
    if (arg[n] == '=' && name[1] == '-')
        return arg + n + 1;
    if (arg[n] != '\0') {
        /* "-n48" is fine; "--slab-sizesX" is another option */
        return name[1] == '-' ? NULL : arg + n;
    }
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

static int parse_long(const char *text, long long min, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int parse_factor(const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end)
        return -1;
    *out = v;
    return 0;
}

/* One settings flag with its value; -1 on a bad value (message printed). */
static int apply_setting(const char *opt, const char *val, struct slab_settings *s)
{
    long long v;
    char err[160] = "";
    if (!strcmp(opt, "-n")) {
        if (parse_long(val, 1, INT_MAX, &v))
            goto bad;
        s->chunk_size_min = (uint32_t)v;
    } else if (!strcmp(opt, "-f")) {
        if (parse_factor(val, &s->growth_factor))
            goto bad;
    } else if (!strcmp(opt, "-I")) {
        if (slab_parse_size(val, &s->item_size_max) != SLAB_OK)
            goto bad;
    } else if (!strcmp(opt, "-m")) {
        if (parse_long(val, 0, 1LL << 30, &v))
            goto bad;
        s->mem_limit = (uint64_t)v * 1024 * 1024;
    } else if (!strcmp(opt, "--slab-chunk-max")) {
        if (parse_long(val, 1, UINT32_MAX, &v))
            goto bad;
        s->slab_chunk_max = (uint32_t)v;
    } else if (!strcmp(opt, "--slab-sizes")) {
        if (slab_parse_slab_sizes(val, s, err, sizeof err) != SLAB_OK)
            goto bad;
    }
    return 0;
bad:
    fprintf(stderr, "slabtap model: bad value '%s' for %s%s%s\n", val, opt, *err ? ": " : "",
            err);
    return -1;
}

/* The memcached settings flags shared by every model subcommand. */
static enum parse_result parse_settings(int argc, char **argv, struct slab_settings *s)
{
    static const char *const valued[] = {"-n", "-f", "-I", "-m", "--slab-chunk-max",
                                         "--slab-sizes"};
    slab_settings_default(s);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help"))
            return PARSE_HELP;
        if (!strcmp(arg, "--no-cas") || !strcmp(arg, "-C")) {
            s->use_cas = false;
            continue;
        }
        const char *val = NULL;
        int missing = 0;
        size_t k;
        for (k = 0; k < sizeof valued / sizeof valued[0]; k++)
            if ((val = option_value(argc, argv, &i, valued[k], &missing)) || missing)
                break;
        if (missing) {
            fprintf(stderr, "slabtap model: %s needs a value\n", arg);
            return PARSE_USAGE;
        }
        if (!val) {
            fprintf(stderr, "slabtap model: unknown option '%s'\n", arg);
            return PARSE_USAGE;
        }
        if (apply_setting(valued[k], val, s))
            return PARSE_USAGE;
    }
    return PARSE_OK;
}

static int model_ladder(int argc, char **argv)
{
    struct slab_settings s;
    switch (parse_settings(argc, argv, &s)) {
    case PARSE_HELP:
        usage_ladder(stdout);
        return 0;
    case PARSE_USAGE:
        fputc('\n', stderr);
        usage_ladder(stderr);
        return 2;
    case PARSE_OK:
        break;
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

/* predict/advise read recorded runs from the SQLite store, which is not
 * there yet: refuse plainly rather than print made-up numbers. */
static int not_implemented(const char *name, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: slabtap model %s ...\n\nnot implemented yet: needs the run store.\n",
                   name);
            return 0;
        }
    fprintf(stderr, "slabtap model %s: not implemented yet (needs the SQLite run store)\n",
            name);
    return 1;
}

static int model_predict(int argc, char **argv)
{
    return not_implemented("predict", argc, argv);
}

static int model_advise(int argc, char **argv)
{
    return not_implemented("advise", argc, argv);
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
