/* cli_proxy: `slabtap proxy` -- its own flags; the recording flags, the
 * signals and the loop around app are cli/recopts.h's (shared with
 * `slabtap watch`). Must never exit without app_finish once app_open
 * succeeded: that is what writes the last rows. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/recopts.h"
#include "core/addr.h"
#include "core/opt.h"
#include "core/sample.h"
#include "core/units.h"
#include "record/sink.h"
#include "server/app.h"
#include "server/proxy.h"
#include "server/shadow.h"

static void proxy_usage(FILE *out)
{
    fprintf(
        out,
        "usage: slabtap proxy --upstream HOST:PORT --db FILE|postgresql://... [options]\n"
        "\n"
        "Forwards memcached's text and meta protocols byte for byte and records\n"
        "every write (set add replace append prepend cas ms), delete, touch and\n"
        "incr/decr into SQLite or PostgreSQL, and every key a read asks for\n"
        "(--reads); reads are also counted per second;\n"
        "memcached's stats are polled on a side connection and kept as a time series.\n"
        "\n"
        "SIZE: bytes, or a unit, any case, binary (x1024): 512k 8M 8MB 8MiB 1.5g 2t.\n"
        "MS, DURATION: 250ms 1s 90s 5m 1h30m 2d '1 hour'; a number alone is in the\n"
        "unit the flag names (MS: milliseconds; --retain: seconds).\n"
        "\n"
        "  --listen ADDR        address for clients (default 127.0.0.1:11311): HOST:PORT,\n"
        "                       :PORT (every address: [::] dual-stack, else 0.0.0.0),\n"
        "                       [IPv6]:PORT, unix:PATH (mode 0660, removed at exit);\n"
        "                       port 0: the kernel's choice, printed on the line\n"
        "                       `slabtap: listen ADDR` (and `slabtap: http ADDR`)\n"
        "  --upstream ADDR      memcached to forward to (required): HOST:PORT (every\n"
        "                       address of the name tried in turn), [IPv6]:PORT,\n"
        "                       unix:PATH (memcached -s PATH)\n"
        "  --reads on|off       a row per key every get gets gat gats mg asks for:\n"
        "                       hit or miss, value length, flags, and its place among\n"
        "                       the writes (view `reads`; docs/recording-reads.md).\n"
        "                       Default on: the hit ratio is what the model is for;\n"
        "                       about 16 bytes a read on disk and 1 us of CPU (5 %%\n"
        "                       of the proxy's on request/response loads, more on\n"
        "                       deep pipelines: --sample-keys). off: reads are\n"
        "                       only counted per second (get_counts)\n"
        "  --watch-evictions    also run a watcher (`watch evictions deletions`) on a\n"
        "                       side connection: every eviction and deletion memcached\n"
        "                       logs becomes a row of item_events in this run (key per\n"
        "                       --keys, class, fetched, idle time, TTL left;\n"
        "                       docs/watch.md). Refused by memcached (-W): logged, the\n"
        "                       proxy goes on without it\n"
        "  --max-pending N      requests in flight per connection before reading\n"
        "                       that client pauses (default %d)\n"
        "  --drain-ms MS        on SIGINT/SIGTERM/SIGHUP, wait this long for answers (default %d)\n"
        "  --upstream-conns N|per-client\n"
        "                       memcached connections the clients share (default %d,\n"
        "                       at most %d); per-client: one for each client\n"
        "  --max-request SIZE   largest request assembled for a shared connection\n"
        "                       (default %uk; a bigger one moves its client to a\n"
        "                       connection of its own)\n"
        "  --max-assembly SIZE  bytes of partial requests held at once (default %um)\n"
        "  --max-conns N        clients at once (default: what the fd limit allows,\n"
        "                       raised to its hard limit); beyond, a new client reads\n"
        "                       ERROR Too many open connections and is closed\n"
        "  --max-memory SIZE    buffers of the whole proxy: past 7/8 of it the clients\n"
        "                       pinning most unread answers that took none for a\n"
        "                       second are closed, past it no client is read (nor\n"
        "                       memcached, when answers hold it) (default %um; 0: none)\n"
        "  --big-answer SIZE    a pooled client that gets an answer this big moves to a\n"
        "                       connection of its own for its next requests, so no one\n"
        "                       waits behind its answers (default %um; 0: never)\n"
        "\n"
        "Shadows (docs/shadow.md): memcacheds with candidate settings fed a copy of\n"
        "the traffic; their answers are counted, never sent to a client:\n"
        "  --shadow \"FLAGS\"     start a memcached with these flags (\"-f 1.08\",\n"
        "                       \"-o slab_automove=2\", \"-m 32 -o slab_sizes=...\") on a\n"
        "                       private unix socket once the primary's first stats\n"
        "                       sample is in (its -m is the default -m), restarted\n"
        "                       when it dies, stopped at exit; \"1/N FLAGS\": only the\n"
        "                       keys of a 1/N sample, in 1/N of the memory (refused\n"
        "                       when that is too few pages per slab class in use).\n"
        "                       Repeatable; at most %d with --shadow-upstream\n"
        "  --shadow-upstream ADDR\n"
        "                       mirror into an operator's own memcached (HOST:PORT or\n"
        "                       unix:PATH; never started or stopped). Repeatable\n"
        "  --shadow-sample 1/N  the sample of every shadow without its own (default 1/1)\n"
        "  --shadow-queue SIZE  mirrored bytes buffered per shadow before its requests\n"
        "                       are dropped and counted (default %um)\n"
        "  --memcached PATH     the memcached binary shadows run (default: memcached\n"
        "                       on PATH)\n"
        "\n"
        "Recording (the same flags as `slabtap watch`):\n",
        PROXY_DEFAULT_MAX_PENDING, PROXY_DEFAULT_DRAIN_MS, PROXY_DEFAULT_UPSTREAM_CONNS,
        PROXY_UPSTREAM_CONNS_MAX, PROXY_DEFAULT_MAX_REQUEST / 1024,
        PROXY_DEFAULT_MAX_ASSEMBLY / (1024 * 1024), PROXY_DEFAULT_MAX_MEMORY / (1024 * 1024),
        PROXY_DEFAULT_BIG_ANSWER / (1024 * 1024), SHADOW_MAX, SHADOW_DEFAULT_QUEUE / (1024 * 1024));
    cli_rec_usage(out);
}

/* --upstream-conns: a number of pooled connections, or per-client (0). */
static int parse_upstream_conns(void *dest, const char *value, char *err, size_t errlen)
{
    unsigned *out = dest;
    char *end;
    unsigned long n;
    if (!strcmp(value, "per-client")) {
        *out = 0;
        return 0;
    }
    n = value[0] >= '0' && value[0] <= '9' ? strtoul(value, &end, 10) : 0;
    if (!n || *end || n > PROXY_UPSTREAM_CONNS_MAX) {
        snprintf(err, errlen, "\"%s\" is not per-client or a number from 1 to %d", value,
                 PROXY_UPSTREAM_CONNS_MAX);
        return -1;
    }
    *out = (unsigned)n;
    return 0;
}

/* --shadow "FLAGS" / --shadow-upstream ADDR, repeatable: into cfg's list. */
static int parse_shadow(void *dest, const char *value, char *err, size_t errlen)
{
    struct app_config *cfg = dest;
    if (cfg->n_shadows >= SHADOW_MAX) {
        snprintf(err, errlen, "at most %d shadows (--shadow and --shadow-upstream together)",
                 SHADOW_MAX);
        return -1;
    }
    struct shadow_spec *s = &cfg->shadows[cfg->n_shadows];
    char why[384];
    if (shadow_spec_parse(s, value, why, sizeof why)) {
        /* the reason names the flag already: drop that prefix */
        const char *w = strncmp(why, "--shadow ", 9) ? why : why + 9;
        snprintf(err, errlen, "%s", w);
        return -1;
    }
    cfg->n_shadows++;
    return 0;
}

static int parse_shadow_upstream(void *dest, const char *value, char *err, size_t errlen)
{
    struct app_config *cfg = dest;
    struct addr_spec as;
    char why[256];
    if (cfg->n_shadows >= SHADOW_MAX) {
        snprintf(err, errlen, "at most %d shadows (--shadow and --shadow-upstream together)",
                 SHADOW_MAX);
        return -1;
    }
    if (addr_split(value, &as, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    if (strlen(value) >= ADDR_TEXT_MAX) {
        snprintf(err, errlen, "\"%s\" is too long", value);
        return -1;
    }
    struct shadow_spec *s = &cfg->shadows[cfg->n_shadows++];
    memset(s, 0, sizeof *s);
    s->kind = SHADOW_UPSTREAM;
    s->sample = 1;
    snprintf(s->upstream, sizeof s->upstream, "%s", value);
    snprintf(s->text, sizeof s->text, "%s", value);
    return 0;
}

static int parse_shadow_sample(void *dest, const char *value, char *err, size_t errlen)
{
    uint32_t *n = dest;
    if (sample_parse(value, n) || *n == SAMPLE_NONE) {
        snprintf(err, errlen, "\"%s\" is not 1/N (N from 1 to %u)", value, SAMPLE_MAX_N);
        return -1;
    }
    return 0;
}

/* What the proxy's own rows write before it goes into app_config. */
struct proxy_args {
    struct cli_rec_args rec; /* the recording flags (cli/recopts.h) */
    const char *listen, *upstream;
    uint64_t max_pending, drain, max_request, max_assembly, max_memory, big_answer;
    int reads;
    bool watch_evictions;
    uint32_t shadow_sample; /* --shadow-sample: of the shadows without their own */
    uint64_t shadow_queue;
};

/* Required flags and addresses, after the table; err set on a mistake. */
static enum opt_result proxy_check_args(const struct proxy_args *a, struct app_config *cfg,
                                        char *err, size_t errlen)
{
    if (!a->upstream || !cfg->db_path)
        return opt_error(err, errlen, "proxy", "--upstream and --db are required");
    char why[384];
    if (addr_resolve(a->listen, &cfg->proxy.listen_addrs, why, sizeof why))
        return opt_error(err, errlen, "proxy", "--listen %s", why);
    if (addr_resolve(a->upstream, &cfg->proxy.upstream_addrs, why, sizeof why))
        return opt_error(err, errlen, "proxy", "--upstream %s", why);
    return OPT_OK;
}

/* Flags into cfg and a; the strings point into argv. */
static enum opt_result proxy_parse_args(int argc, char **argv, struct app_config *cfg,
                                        struct proxy_args *a, char *err, size_t errlen)
{
    static const struct opt_word onoff[] = { { "on", 1 }, { "off", 0 }, { NULL, 0 } };
    struct opt_spec table[17 + CLI_REC_OPTS] = {
        { "listen", 0, OPT_STRING, .dest = &a->listen },
        { "upstream", 0, OPT_STRING, .dest = &a->upstream },
        { "reads", 0, OPT_ENUM, .dest = &a->reads, .words = onoff },
        { "max-pending", 0, OPT_UINT, .dest = &a->max_pending, .min = 1, .max = SIZE_MAX },
        { "drain-ms", 0, OPT_DURATION, .dest = &a->drain, .unit = UNITS_MS, .min = 1,
          .max = UINT_MAX },
        { "upstream-conns", 0, OPT_CALL, .dest = &cfg->proxy.upstream_conns,
          .call = parse_upstream_conns },
        { "max-request", 0, OPT_SIZE, .dest = &a->max_request, .min = 1024, .max = 1u << 30 },
        { "max-assembly", 0, OPT_SIZE, .dest = &a->max_assembly, .min = 1024, .max = SIZE_MAX },
        { "max-memory", 0, OPT_SIZE, .dest = &a->max_memory, .min = 0, .max = SIZE_MAX },
        { "big-answer", 0, OPT_SIZE, .dest = &a->big_answer, .min = 0, .max = SIZE_MAX },
        { "max-conns", 0, OPT_UINT, .dest = &cfg->proxy.max_conns, .min = 1, .max = UINT32_MAX },
        { "watch-evictions", 0, OPT_FLAG, .dest = &a->watch_evictions },
        { "shadow", 0, OPT_CALL, .dest = cfg, .call = parse_shadow },
        { "shadow-upstream", 0, OPT_CALL, .dest = cfg, .call = parse_shadow_upstream },
        { "shadow-sample", 0, OPT_CALL, .dest = &a->shadow_sample, .call = parse_shadow_sample },
        { "shadow-queue", 0, OPT_SIZE, .dest = &a->shadow_queue, .min = 4096, .max = 1ull << 34 },
        { "memcached", 0, OPT_STRING, .dest = &cfg->shadow_memcached },
    };
    cli_rec_opts(table + 17, &a->rec, cfg);
    enum opt_result r =
        opt_parse("proxy", table, sizeof table / sizeof table[0], argc, argv, NULL, err, errlen);
    if (r != OPT_OK)
        return r;
    if (cli_rec_finish("proxy", &a->rec, cfg, err, errlen) != OPT_OK)
        return OPT_ERROR;
    cfg->proxy.record_reads = a->reads != 0;
    cfg->proxy.max_pending = (size_t)a->max_pending;
    cfg->proxy.drain_timeout_ms = (unsigned)a->drain;
    cfg->proxy.max_request = (size_t)a->max_request;
    cfg->proxy.max_assembly = (size_t)a->max_assembly;
    cfg->proxy.max_memory = (size_t)a->max_memory;
    cfg->proxy.big_answer = (size_t)a->big_answer;
    cfg->watch = a->watch_evictions ? TAP_WATCH_EVICTIONS | TAP_WATCH_DELETIONS : 0;
    cfg->shadow_queue = (size_t)a->shadow_queue;
    /* the default sample: every shadow that did not say "1/N" itself */
    for (unsigned i = 0; i < cfg->n_shadows; i++) {
        struct shadow_spec *s = &cfg->shadows[i];
        if (s->kind == SHADOW_UPSTREAM || strncmp(s->text, "1/", 2))
            s->sample = a->shadow_sample > 1 ? a->shadow_sample : 1;
    }
    return proxy_check_args(a, cfg, err, errlen);
}

/* Defaults, the table, the checks; options is the command line as recorded. */
static enum opt_result proxy_read_args(int argc, char **argv, struct app_config *cfg,
                                       struct proxy_args *a, char *options, size_t options_len,
                                       char *err, size_t errlen)
{
    proxy_config_defaults(&cfg->proxy);
    *a = (struct proxy_args){ .listen = "127.0.0.1:11311",
                              .reads = 1,
                              .max_pending = cfg->proxy.max_pending,
                              .drain = PROXY_DEFAULT_DRAIN_MS,
                              .max_request = cfg->proxy.max_request,
                              .max_assembly = cfg->proxy.max_assembly,
                              .max_memory = cfg->proxy.max_memory,
                              .big_answer = cfg->proxy.big_answer,
                              .shadow_sample = 1,
                              .shadow_queue = SHADOW_DEFAULT_QUEUE };
    cli_rec_defaults(&a->rec, cfg, "proxy");
    enum opt_result r = proxy_parse_args(argc, argv, cfg, a, err, errlen);
    if (r != OPT_OK)
        return r;
    snprintf(cfg->proxy.upstream_text, sizeof cfg->proxy.upstream_text, "%s", a->upstream);
    cli_rec_join_args(argc, argv, options, options_len);
    cfg->options_text = options;
    return OPT_OK;
}

/* Shadows that cannot start (the reason is logged): exit 2. */
static void proxy_shadow_refused(void *ud, const char *why)
{
    (void)why;
    cli_app_stop(ud, 2);
}

int cli_proxy_main(int argc, char **argv)
{
    struct cli_app *pa = calloc(1, sizeof *pa);
    struct app_config cfg = { 0 };
    struct proxy_args a;
    char options[1024], err[512];
    int rc = 2;

    if (!pa)
        return 1;
    switch (proxy_read_args(argc, argv, &cfg, &a, options, sizeof options, err, sizeof err)) {
    case OPT_HELP:
        proxy_usage(stdout);
        rc = 0;
        goto out;
    case OPT_ERROR: goto usage;
    case OPT_OK: break;
    }
    rc = 1;
    cfg.on_shadow_refused = proxy_shadow_refused;
    cfg.shadow_ud = pa;
    if (cli_app_open(pa, &cfg))
        goto out;
    /* the addresses bound, for scripts: `--listen 127.0.0.1:0` gives the port here */
    fprintf(stderr, "slabtap: listen %s\nslabtap: http %s\n", pa->app.px.listen_text,
            cfg.http_enabled ? pa->app.http_host : "off");
    fprintf(stderr, "slabtap: proxy %s -> %s, run %lld '%s' node '%s' into %s%s%s, admin %s%s\n",
            pa->app.px.listen_text, cfg.proxy.upstream_text, (long long)pa->app.run_id,
            cfg.run_name, cfg.node, sink_name(&pa->app.sink), cfg.spill_path ? ", spill " : "",
            cfg.spill_path ? cfg.spill_path : "", cfg.http_enabled ? pa->app.http_host : "off",
            cfg.watch ? ", watching evictions" : "");
    rc = cli_app_run(pa);
    goto out;
usage:
    cli_usage_error("proxy", err);
out:
    free(pa);
    return rc;
}
