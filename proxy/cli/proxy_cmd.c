/* cli_proxy: `slabtap proxy` -- flags, signals, and the loop around app.
 * Must never exit without app_finish once app_open succeeded: that is what
 * writes the last rows. */
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "cli/cli.h"
#include "core/addr.h"
#include "server/proxy.h"
#include "server/app.h"

#define DEFAULT_QUEUE_ROWS 65536
#define DEFAULT_HTTP "127.0.0.1:11380"

struct proxy_app {
    uv_loop_t loop;
    uv_signal_t sigint, sigterm;
    struct app app;
    bool stopping;
};

static void proxy_usage(FILE *out)
{
    fprintf(out,
        "usage: slabtap proxy --upstream HOST:PORT --db FILE [options]\n"
        "\n"
        "Forwards memcached's text and meta protocols byte for byte and records\n"
        "every write (set add replace append prepend cas ms), delete, touch and\n"
        "incr/decr into SQLite; reads are counted per second; memcached's stats\n"
        "are polled on a side connection and kept as a time series.\n"
        "\n"
        "  --listen HOST:PORT   address for clients (default 127.0.0.1:11311)\n"
        "  --upstream HOST:PORT memcached to forward to (required)\n"
        "  --db FILE            SQLite database (created if missing; required)\n"
        "  --run NAME           name of this run (default: proxy)\n"
        "  --keys MODE          full | prefix | hash: what of each key is kept\n"
        "                       (default prefix: text before the first : / . |,\n"
        "                       plus a 64-bit hash of the whole key)\n"
        "  --queue ROWS         recorder queue bound (default %d)\n"
        "  --on-full MODE       block | drop when the queue is full (default block:\n"
        "                       stop reading clients until it drains, lose nothing)\n"
        "  --max-pending N      requests in flight per connection before reading\n"
        "                       that client pauses (default %d)\n"
        "  --drain-ms MS        on SIGINT/SIGTERM, wait this long for answers (default %d)\n"
        "  --stats-interval MS  poll stats, stats slabs, stats items every MS\n"
        "                       milliseconds (default %d, at least %d)\n"
        "  --http HOST:PORT|off admin endpoint: /health /metrics /api/runs /api/slabs\n"
        "                       POST /api/phase?name=N (default %s)\n"
        "  -h, --help           this text\n",
        DEFAULT_QUEUE_ROWS, PROXY_DEFAULT_MAX_PENDING, PROXY_DEFAULT_DRAIN_MS,
        APP_DEFAULT_STATS_MS, POLLER_INTERVAL_MIN_MS, DEFAULT_HTTP);
}

static void on_app_closed(struct app *a)
{
    struct proxy_app *pa = (struct proxy_app *)((char *)a - offsetof(struct proxy_app, app));
    uv_close((uv_handle_t *)&pa->sigint, NULL);
    uv_close((uv_handle_t *)&pa->sigterm, NULL);
    uv_stop(&pa->loop);
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct proxy_app *pa = h->data;
    if (pa->stopping) {
        fprintf(stderr, "slabtap: signal %d again: still draining\n", signum);
        return;
    }
    pa->stopping = true;
    fprintf(stderr, "slabtap: signal %d: stopping (finishing in-flight requests)\n", signum);
    app_close(&pa->app, on_app_closed);
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || end == s || v == 0)
        return -1;
    *out = (size_t)v;
    return 0;
}

static void join_args(int argc, char **argv, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 1; i < argc && len + 1 < cap; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i > 1 ? " " : "", argv[i]);
}

enum args_result { ARGS_OK, ARGS_HELP, ARGS_USAGE };

/* Flags into cfg; listen/http point into argv. */
static enum args_result proxy_parse_args(int argc, char **argv, struct app_config *cfg,
                                         const char **listen, const char **http,
                                         char *options, size_t options_len)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'}, {"upstream", required_argument, NULL, 'u'},
        {"db", required_argument, NULL, 'd'},     {"run", required_argument, NULL, 'r'},
        {"keys", required_argument, NULL, 'k'},   {"queue", required_argument, NULL, 'q'},
        {"on-full", required_argument, NULL, 'f'}, {"max-pending", required_argument, NULL, 'p'},
        {"drain-ms", required_argument, NULL, 'D'}, {"stats-interval", required_argument, NULL, 'S'},
        {"http", required_argument, NULL, 'H'},   {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *upstream = NULL;
    size_t drain = PROXY_DEFAULT_DRAIN_MS, interval = APP_DEFAULT_STATS_MS;
    int c;

    proxy_config_defaults(&cfg->proxy);
    cfg->run_name = "proxy";
    cfg->queue_rows = DEFAULT_QUEUE_ROWS;
    cfg->on_full = REC_BLOCK;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': *listen = optarg; break;
        case 'u': upstream = optarg; break;
        case 'd': cfg->db_path = optarg; break;
        case 'r': cfg->run_name = optarg; break;
        case 'H': *http = optarg; break;
        case 'k':
            if (keyfmt_parse_mode(optarg, &cfg->proxy.key_mode)) {
                fprintf(stderr, "slabtap proxy: --keys must be full, prefix or hash\n");
                return ARGS_USAGE;
            }
            break;
        case 'q':
            if (parse_size(optarg, &cfg->queue_rows)) {
                fprintf(stderr, "slabtap proxy: --queue needs a positive number of rows\n");
                return ARGS_USAGE;
            }
            break;
        case 'f':
            if (!strcmp(optarg, "block")) cfg->on_full = REC_BLOCK;
            else if (!strcmp(optarg, "drop")) cfg->on_full = REC_DROP;
            else {
                fprintf(stderr, "slabtap proxy: --on-full must be block or drop\n");
                return ARGS_USAGE;
            }
            break;
        case 'p':
            if (parse_size(optarg, &cfg->proxy.max_pending)) {
                fprintf(stderr, "slabtap proxy: --max-pending needs a positive number\n");
                return ARGS_USAGE;
            }
            break;
        case 'D':
            if (parse_size(optarg, &drain)) {
                fprintf(stderr, "slabtap proxy: --drain-ms needs a positive number\n");
                return ARGS_USAGE;
            }
            break;
        case 'S':
            if (parse_size(optarg, &interval) || interval < POLLER_INTERVAL_MIN_MS) {
                fprintf(stderr, "slabtap proxy: --stats-interval needs at least %d ms\n",
                        POLLER_INTERVAL_MIN_MS);
                return ARGS_USAGE;
            }
            break;
        case 'h':
            return ARGS_HELP;
        default:
            return ARGS_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "slabtap proxy: unexpected argument '%s'\n", argv[optind]);
        return ARGS_USAGE;
    }
    if (!upstream || !cfg->db_path) {
        fprintf(stderr, "slabtap proxy: --upstream and --db are required\n");
        return ARGS_USAGE;
    }
    if (addr_parse(*listen, &cfg->proxy.listen_addr)) {
        fprintf(stderr, "slabtap proxy: bad --listen address '%s' (want HOST:PORT)\n", *listen);
        return ARGS_USAGE;
    }
    if (addr_parse(upstream, &cfg->proxy.upstream_addr)) {
        fprintf(stderr, "slabtap proxy: bad --upstream address '%s' (want HOST:PORT)\n", upstream);
        return ARGS_USAGE;
    }
    cfg->http_enabled = strcmp(*http, "off") != 0;
    if (cfg->http_enabled && addr_parse(*http, &cfg->http_addr)) {
        fprintf(stderr, "slabtap proxy: bad --http address '%s' (want HOST:PORT or off)\n", *http);
        return ARGS_USAGE;
    }
    snprintf(cfg->proxy.upstream_text, sizeof cfg->proxy.upstream_text, "%s", upstream);
    cfg->proxy.drain_timeout_ms = (unsigned)drain;
    cfg->stats_interval_ms = (unsigned)interval;
    join_args(argc, argv, options, options_len);
    cfg->options_text = options;
    return ARGS_OK;
}

int cli_proxy_main(int argc, char **argv)
{
    struct proxy_app *pa = calloc(1, sizeof *pa);
    struct app_config cfg = {0};
    const char *listen = "127.0.0.1:11311", *http = DEFAULT_HTTP;
    char options[1024];
    int rc = 2;

    if (!pa)
        return 1;
    switch (proxy_parse_args(argc, argv, &cfg, &listen, &http, options, sizeof options)) {
    case ARGS_HELP:
        proxy_usage(stdout);
        rc = 0;
        goto out;
    case ARGS_USAGE:
        goto usage;
    case ARGS_OK:
        break;
    }
    rc = 1;
    uv_loop_init(&pa->loop);
    if (app_open(&pa->app, &pa->loop, &cfg))
        goto out_loop;
    uv_signal_init(&pa->loop, &pa->sigint);
    uv_signal_init(&pa->loop, &pa->sigterm);
    pa->sigint.data = pa->sigterm.data = pa;
    uv_signal_start(&pa->sigint, on_signal, SIGINT);
    uv_signal_start(&pa->sigterm, on_signal, SIGTERM);
    fprintf(stderr, "slabtap: proxy %s -> %s, run %lld '%s' into %s, admin %s\n", listen,
            cfg.proxy.upstream_text, (long long)pa->app.run_id, cfg.run_name, cfg.db_path, http);
    uv_run(&pa->loop, UV_RUN_DEFAULT);

    /* the loop is idle: write every row, finish the run, close the file */
    rc = app_finish(&pa->app) ? 1 : 0;
    fprintf(stderr, "slabtap: stopped; %llu rows recorded, %llu dropped\n",
            (unsigned long long)pa->app.rec.written, (unsigned long long)pa->app.rec.dropped);
out_loop:
    if (uv_loop_close(&pa->loop))
        fprintf(stderr, "slabtap: warning: handles left open at exit\n");
    goto out;
usage:
    proxy_usage(stderr);
out:
    free(pa);
    return rc;
}
