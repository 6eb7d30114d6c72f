/* cli_proxy: `slabtap proxy` -- flags, start-up, signals, orderly shutdown.
 * Owns the order things open and close in: store, recorder, proxy; and on
 * SIGINT/SIGTERM the reverse, so nothing recorded is lost.
 * Must never exit without closing the recorder once it has rows. */
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "cli.h"
#include "proxy.h"
#include "recorder.h"
#include "store.h"

#define DEFAULT_QUEUE_ROWS 65536

struct proxy_app {
    uv_loop_t loop;
    uv_signal_t sigint, sigterm;
    struct store store;
    struct recorder rec;
    struct proxy px;
    bool stopping;
    int exit_code;
};

static void proxy_usage(FILE *out)
{
    fprintf(out,
        "usage: slabtap proxy --upstream HOST:PORT --db FILE [options]\n"
        "\n"
        "Forwards memcached's text and meta protocols byte for byte and records\n"
        "every write (set add replace append prepend cas ms), delete, touch and\n"
        "incr/decr into SQLite; reads are counted per second.\n"
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
        "  -h, --help           this text\n",
        DEFAULT_QUEUE_ROWS, PROXY_DEFAULT_MAX_PENDING, PROXY_DEFAULT_DRAIN_MS);
}

/* HOST:PORT (IPv4 or [IPv6]:PORT) into a sockaddr. */
int cli_parse_addr(const char *text, struct sockaddr_storage *out)
{
    char host[256];
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || strlen(colon + 1) == 0)
        return -1;
    size_t hl = (size_t)(colon - text);
    if (hl >= sizeof host)
        return -1;
    memcpy(host, text, hl);
    host[hl] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return -1;
    if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
        host[hl - 1] = '\0';
        return uv_ip6_addr(host + 1, (int)port, (struct sockaddr_in6 *)out) ? -1 : 0;
    }
    if (!strcmp(host, "localhost"))
        strcpy(host, "127.0.0.1");
    return uv_ip4_addr(host, (int)port, (struct sockaddr_in *)out) ? -1 : 0;
}

static void on_proxy_stopped(struct proxy *px)
{
    struct proxy_app *app = (struct proxy_app *)((char *)px - offsetof(struct proxy_app, px));
    uv_close((uv_handle_t *)&app->sigint, NULL);
    uv_close((uv_handle_t *)&app->sigterm, NULL);
    uv_stop(&app->loop);
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct proxy_app *app = h->data;
    if (app->stopping) {
        fprintf(stderr, "slabtap: second signal %d, still draining\n", signum);
        return;
    }
    app->stopping = true;
    fprintf(stderr, "slabtap: signal %d: stopping (finishing in-flight requests)\n", signum);
    proxy_close(&app->px, on_proxy_stopped);
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

int cli_proxy_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'}, {"upstream", required_argument, NULL, 'u'},
        {"db", required_argument, NULL, 'd'},     {"run", required_argument, NULL, 'r'},
        {"keys", required_argument, NULL, 'k'},   {"queue", required_argument, NULL, 'q'},
        {"on-full", required_argument, NULL, 'f'}, {"max-pending", required_argument, NULL, 'p'},
        {"drain-ms", required_argument, NULL, 'D'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct proxy_app *app = calloc(1, sizeof *app);
    struct proxy_config cfg;
    const char *listen = "127.0.0.1:11311", *upstream = NULL, *db = NULL, *run = "proxy";
    size_t queue = DEFAULT_QUEUE_ROWS, drain = PROXY_DEFAULT_DRAIN_MS;
    enum rec_on_full on_full = REC_BLOCK;
    char options[1024], err[512];
    int c, rc = 2;

    if (!app)
        return 1;
    proxy_config_defaults(&cfg);
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': listen = optarg; break;
        case 'u': upstream = optarg; break;
        case 'd': db = optarg; break;
        case 'r': run = optarg; break;
        case 'k':
            if (keyfmt_parse_mode(optarg, &cfg.key_mode)) {
                fprintf(stderr, "slabtap proxy: --keys must be full, prefix or hash\n");
                goto usage;
            }
            break;
        case 'q':
            if (parse_size(optarg, &queue)) {
                fprintf(stderr, "slabtap proxy: --queue needs a positive number of rows\n");
                goto usage;
            }
            break;
        case 'f':
            if (!strcmp(optarg, "block")) on_full = REC_BLOCK;
            else if (!strcmp(optarg, "drop")) on_full = REC_DROP;
            else {
                fprintf(stderr, "slabtap proxy: --on-full must be block or drop\n");
                goto usage;
            }
            break;
        case 'p':
            if (parse_size(optarg, &cfg.max_pending)) {
                fprintf(stderr, "slabtap proxy: --max-pending needs a positive number\n");
                goto usage;
            }
            break;
        case 'D':
            if (parse_size(optarg, &drain)) {
                fprintf(stderr, "slabtap proxy: --drain-ms needs a positive number\n");
                goto usage;
            }
            break;
        case 'h':
            proxy_usage(stdout);
            rc = 0;
            goto out;
        default:
            goto usage;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "slabtap proxy: unexpected argument '%s'\n", argv[optind]);
        goto usage;
    }
    if (!upstream || !db) {
        fprintf(stderr, "slabtap proxy: --upstream and --db are required\n");
        goto usage;
    }
    if (cli_parse_addr(listen, &cfg.listen_addr)) {
        fprintf(stderr, "slabtap proxy: bad --listen address '%s' (want HOST:PORT)\n", listen);
        goto usage;
    }
    if (cli_parse_addr(upstream, &cfg.upstream_addr)) {
        fprintf(stderr, "slabtap proxy: bad --upstream address '%s' (want HOST:PORT)\n", upstream);
        goto usage;
    }
    snprintf(cfg.upstream_text, sizeof cfg.upstream_text, "%s", upstream);
    cfg.drain_timeout_ms = (unsigned)drain;
    join_args(argc, argv, options, sizeof options);

    rc = 1;
    uv_loop_init(&app->loop);
    if (store_open(&app->store, db, err, sizeof err)) {
        fprintf(stderr, "slabtap proxy: %s\n", err);
        goto out_loop;
    }
    int64_t run_id = store_run_begin(&app->store, run, upstream, options,
                                     keyfmt_mode_name(cfg.key_mode));
    if (run_id < 0) {
        fprintf(stderr, "slabtap proxy: %s: cannot create the run row\n", db);
        store_close(&app->store);
        goto out_loop;
    }
    if (rec_open(&app->rec, &app->loop, &app->store, run_id, queue, on_full,
                 proxy_update_reading, &app->px)) {
        rec_close(&app->rec);
        goto out_loop;
    }
    if (proxy_open(&app->px, &app->loop, &cfg, &app->rec)) {
        uv_close((uv_handle_t *)&app->px.listener, NULL);
        uv_close((uv_handle_t *)&app->px.drain_timer, NULL);
        rec_close(&app->rec);
        goto out_loop;
    }
    uv_signal_init(&app->loop, &app->sigint);
    uv_signal_init(&app->loop, &app->sigterm);
    app->sigint.data = app->sigterm.data = app;
    uv_signal_start(&app->sigint, on_signal, SIGINT);
    uv_signal_start(&app->sigterm, on_signal, SIGTERM);
    fprintf(stderr, "slabtap: proxy %s -> %s, recording run %lld '%s' into %s\n",
            listen, upstream, (long long)run_id, run, db);
    uv_run(&app->loop, UV_RUN_DEFAULT);

    /* the loop is idle: flush every row, finish the run, close the file */
    rc = rec_close(&app->rec) ? 1 : 0;
    fprintf(stderr, "slabtap: stopped; %llu rows recorded, %llu dropped\n",
            (unsigned long long)app->rec.written, (unsigned long long)app->rec.dropped);
out_loop:
    uv_run(&app->loop, UV_RUN_DEFAULT); /* finish closing every handle */
    pbuf_pool_free(&app->px.pool);
    uv_loop_close(&app->loop);
    goto out;
usage:
    proxy_usage(stderr);
out:
    free(app);
    return rc;
}
