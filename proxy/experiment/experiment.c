/* experiment: spec -> runs (memcached + proxy + workload) -> gates -> CSV.
 * The proxy runs on this thread's loop, the load generator on a thread of
 * its own with its own loop; they meet only over loopback TCP, the phase
 * callback (app_mark_phase is thread-safe) and one uv_async at the end. */
#include "experiment/experiment.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/addr.h"
#include "core/fileio.h"
#include "core/log.h"
#include "experiment/chart.h"
#include "experiment/export.h"
#include "experiment/extmc.h"
#include "experiment/mcflags.h"
#include "experiment/spec.h"
#include "load/load.h"
#include "load/mcserver.h"
#include "load/workload.h"
#include "model/predict.h"
#include "record/runs.h"
#include "record/store.h"
#include "server/app.h"

struct exp_outcome {
    char name[EXP_NAME_MAX];
    int64_t run_id;
    struct load_result load;
    char mc_cmdline[1024];
    unsigned long long items; /* items=N of the run, as --items made it (0: none) */
    bool ok;
};

static atomic_bool exp_interrupted;

/* The runner's report -- runs starting, gates, exports, the errors of the
 * spec and workloads it was given -- is its output, like a compiler's:
 * plain lines ("FILE:LINE: message", "GATE FAILED ..."), no log prefix.
 * Diagnostics of slabtap itself go through the logger. */
static void exp_report(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void exp_report(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fflush(f);
}

/* Between runs (gates, exports) no loop watches signals, and libuv puts the
 * default action back when a run's watchers close: this handler, installed
 * again after every run, turns Ctrl-C into a clean exit 130 there too. */
static void exp_note_signal(int sig)
{
    (void)sig;
    atomic_store(&exp_interrupted, true);
}

static void exp_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = exp_note_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* --- one run ------------------------------------------------------------------ */

struct exp_live {
    uv_loop_t loop;
    uv_async_t done;
    uv_signal_t sigint, sigterm;
    struct app app;
    struct load_config lc;
    struct load_result lr;
    atomic_bool stop;
    int load_rc;
    bool closing;
    /* the live progress line (stderr a terminal only) */
    uv_timer_t progress;
    bool progress_on, progress_shown;
    int progress_fd;
    const char *run_name;
    uint64_t total_ops, t_start;
    uv_mutex_t phase_lock;
    char phase[WORKLOAD_NAME_MAX];
};

#define EXP_PROGRESS_MS 250

static void exp_load_phase(void *ud, const char *name)
{
    struct exp_live *x = ud;
    uv_mutex_lock(&x->phase_lock);
    snprintf(x->phase, sizeof x->phase, "%s", name);
    uv_mutex_unlock(&x->phase_lock);
    app_mark_phase(&x->app, name);
}

/* "\r== exp1_worst  phase load  123456/400000 ops  ETA 0:03": requests the
 * proxy has forwarded (the fences behind noreply ops included) against
 * the plan's ops. */
static void exp_progress_line(struct exp_live *x, bool final)
{
    char phase[WORKLOAD_NAME_MAX], eta[48] = "";
    uint64_t done = 0;
    for (int c = 0; c < MC_CMD_COUNT; c++)
        done += x->app.px.requests_by_cmd[c];
    if (x->total_ops && done > x->total_ops)
        done = x->total_ops;
    uv_mutex_lock(&x->phase_lock);
    snprintf(phase, sizeof phase, "%s", x->phase[0] ? x->phase : "-");
    uv_mutex_unlock(&x->phase_lock);
    double secs = (double)(uv_hrtime() - x->t_start) / 1e9;
    if (!final && done && x->total_ops > done && secs > 0) {
        uint64_t left = (uint64_t)((double)(x->total_ops - done) / ((double)done / secs));
        snprintf(eta, sizeof eta, "  ETA %llu:%02llu", (unsigned long long)(left / 60),
                 (unsigned long long)(left % 60));
    } else if (final) {
        snprintf(eta, sizeof eta, "  %.1f s", secs);
    }
    fflush(stderr);
    dprintf(x->progress_fd, "\r== %s  phase %s  %llu/%llu ops%s\033[K%s", x->run_name, phase,
            (unsigned long long)done, (unsigned long long)x->total_ops, eta, final ? "\n" : "");
    x->progress_shown = true;
}

static void exp_on_progress(uv_timer_t *t)
{
    exp_progress_line(t->data, false);
}

static void exp_load_thread(void *arg)
{
    struct exp_live *x = arg;
    x->load_rc = load_run(&x->lc, &x->lr);
    uv_async_send(&x->done);
}

static void exp_app_closed(struct app *a)
{
    struct exp_live *x = (struct exp_live *)((char *)a - offsetof(struct exp_live, app));
    uv_close((uv_handle_t *)&x->done, NULL);
    uv_stop(&x->loop);
}

static void exp_on_done(uv_async_t *h)
{
    struct exp_live *x = h->data;
    if (x->closing)
        return;
    x->closing = true;
    if (x->progress_on) {
        uv_timer_stop(&x->progress);
        uv_close((uv_handle_t *)&x->progress, NULL);
        exp_progress_line(x, true);
    }
    app_close(&x->app, exp_app_closed);
}

static void exp_on_signal(uv_signal_t *h, int sig)
{
    struct exp_live *x = h->data;
    log_warn("signal %d: stopping the load, then everything", sig);
    atomic_store(&exp_interrupted, true);
    atomic_store(&x->stop, true);
}

static void exp_app_config(struct app_config *cfg, const struct experiment_options *o,
                           const struct exp_run *r, int proxy_port, const char *upstream,
                           char *options, size_t olen)
{
    char addr[64];
    memset(cfg, 0, sizeof *cfg);
    proxy_config_defaults(&cfg->proxy);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", proxy_port);
    char why[8]; /* both checked by experiment_cmd */
    addr_resolve(addr, &cfg->proxy.listen_addrs, why, sizeof why);
    snprintf(cfg->proxy.upstream_text, sizeof cfg->proxy.upstream_text, "%s", upstream);
    addr_resolve(cfg->proxy.upstream_text, &cfg->proxy.upstream_addrs, why, sizeof why);
    cfg->db_path = o->db;
    cfg->run_name = r->name;
    cfg->run_kind = "experiment";
    snprintf(options, olen, "experiment run %s: memcached %s; workload %s", r->name, r->mc_args,
             r->workload);
    cfg->options_text = options;
    cfg->queue_rows = 65536;
    cfg->on_full = REC_BLOCK;
    cfg->stats_interval_ms = o->stats_ms;
    cfg->memcached_flags = r->mc_args; /* the ladder: what memcached was started with */
    cfg->http_enabled = o->http && !addr_parse(o->http, &cfg->http_addr);
}

/* Starts the load thread and serves the proxy until both are done. */
static int exp_serve(struct exp_live *x)
{
    uv_thread_t tid;
    uv_async_init(&x->loop, &x->done, exp_on_done);
    x->done.data = x;
    x->t_start = uv_hrtime();
    if (x->progress_on) {
        uv_timer_init(&x->loop, &x->progress);
        x->progress.data = x;
        uv_timer_start(&x->progress, exp_on_progress, EXP_PROGRESS_MS, EXP_PROGRESS_MS);
    }
    if (uv_thread_create(&tid, exp_load_thread, x)) {
        log_error("cannot start the load thread");
        x->load_rc = -1;
        uv_async_send(&x->done);
        uv_run(&x->loop, UV_RUN_DEFAULT);
        return -1;
    }
    uv_run(&x->loop, UV_RUN_DEFAULT);
    uv_thread_join(&tid);
    return 0;
}

/* A memcached someone else started may serve run r when its settings are
 * the ones r's flags give and it has stored nothing yet: slabtap cannot
 * restart it, and items from before would be counted as the run's. */
static int exp_external_check(const struct experiment_options *o, const struct exp_run *r,
                              char *version, size_t vlen)
{
    struct mcflags_stats *settings = calloc(1, sizeof *settings);
    struct mcflags_stats *stats = calloc(1, sizeof *stats);
    char err[1024];
    int rc = -1;
    if (!settings || !stats) {
        exp_report(stderr, "run %s: out of memory", r->name);
        goto out;
    }
    if (extmc_fetch(o->upstream, settings, stats, err, sizeof err)) {
        exp_report(stderr, "run %s: --upstream %s", r->name, err);
        goto out;
    }
    if (mcflags_check(r->mc_args, settings, err, sizeof err)) {
        exp_report(stderr,
                   "run %s refused: the memcached at %s was not started with the run's flags "
                   "\"%s\": %s. slabtap cannot restart a memcached it did not start: start one "
                   "with `memcached %s` for this run, or leave out --upstream / MC_HOST / MC_PORT "
                   "and let slabtap start its own",
                   r->name, o->upstream, r->mc_args, err, r->mc_args);
        goto out;
    }
    const char *stored = mcflags_stats_get(stats, "total_items");
    if (!stored || strcmp(stored, "0")) {
        exp_report(stderr,
                   "run %s refused: the memcached at %s has stored %s items since it started; "
                   "the run's figures need one that has stored nothing yet (flush_all does not "
                   "give slab pages back): restart it yourself",
                   r->name, o->upstream, stored ? stored : "some");
        goto out;
    }
    const char *v = mcflags_stats_get(stats, "version");
    snprintf(version, vlen, "%s", v ? v : "?");
    rc = 0;
out:
    free(settings);
    free(stats);
    return rc;
}

static int exp_run_one(const struct experiment_options *o, const struct exp_run *r,
                       struct exp_outcome *out)
{
    struct exp_live *x = calloc(1, sizeof *x);
    struct workload *w = NULL;
    struct workload_error werr;
    struct mcserver mc;
    char err[MCSERVER_ERR_MAX], options[1200], *text = NULL;
    char ferr[128], upstream[ADDR_TEXT_MAX + 16];
    size_t tlen;
    int rc = -1;
    bool own_mc = !o->upstream;

    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", r->name);
    out->items = r->items && o->items ? o->items : r->items;
    if (!x)
        return -1;
    uv_loop_init(&x->loop);
    uv_mutex_init(&x->phase_lock);
    x->run_name = r->name;
    x->progress_fd = o->progress_fd > 0 ? o->progress_fd : STDERR_FILENO;
    x->progress_on = isatty(x->progress_fd);
    /* from before memcached starts until it is stopped: a signal anywhere in
     * between stops the run instead of killing us with memcached left behind */
    uv_signal_init(&x->loop, &x->sigint);
    uv_signal_init(&x->loop, &x->sigterm);
    x->sigint.data = x->sigterm.data = x;
    uv_signal_start(&x->sigint, exp_on_signal, SIGINT);
    uv_signal_start(&x->sigterm, exp_on_signal, SIGTERM);
    if (!(text = fileio_read(r->workload, FILEIO_DEFAULT_MAX, &tlen, ferr, sizeof ferr))) {
        exp_report(stderr, "%s: %s", r->workload, ferr);
        goto out_loop;
    }
    if (r->items && o->items) {
        char *moved, ierr[160];
        size_t mlen;
        if (spec_items_text(text, tlen, r->items, o->items, &moved, &mlen, ierr, sizeof ierr)) {
            exp_report(stderr, "run %s: %s", r->name, ierr);
            goto out_loop;
        }
        free(text);
        text = moved;
        tlen = mlen;
    }
    if (workload_parse(r->workload, text, tlen, &w, &werr) != WORKLOAD_OK) {
        exp_report(stderr, "%s", werr.msg);
        goto out_loop;
    }
    x->total_ops = workload_total_ops(w);
    if (!own_mc) {
        char version[64];
        if (exp_external_check(o, r, version, sizeof version))
            goto out_loop;
        snprintf(upstream, sizeof upstream, "%s", o->upstream);
        snprintf(out->mc_cmdline, sizeof out->mc_cmdline,
                 "external memcached %s at %s (not started by slabtap)", version, o->upstream);
    } else {
        if (mcserver_start(&mc, &x->loop, o->memcached, o->docker, o->image, r->mc_args, err,
                           sizeof err)) {
            exp_report(stderr, "run %s: %s", r->name, err);
            goto out_loop;
        }
        snprintf(upstream, sizeof upstream, "127.0.0.1:%d", mc.port);
        snprintf(out->mc_cmdline, sizeof out->mc_cmdline, "%s", mc.argv_text);
    }
    uv_run(&x->loop, UV_RUN_NOWAIT); /* a signal that came during the start */
    if (atomic_load(&exp_interrupted))
        goto out_mc;
    struct app_config cfg;
    /* port 0: the kernel picks a free one, read back below */
    exp_app_config(&cfg, o, r, 0, upstream, options, sizeof options);
    exp_report(stderr, "== run %s: %s", r->name, out->mc_cmdline);
    if (app_open(&x->app, &x->loop, &cfg))
        goto out_mc;
    out->run_id = x->app.run_id;
    int namelen = (int)sizeof x->lc.target;
    if (uv_tcp_getsockname(&x->app.px.listener.tcp, (struct sockaddr *)&x->lc.target, &namelen))
        x->lc.target = cfg.proxy.listen_addrs.a[0];
    x->lc.source = LOAD_SRC_WORKLOAD;
    x->lc.workload = w;
    x->lc.on_phase = exp_load_phase;
    x->lc.ud = x;
    /* no lc.progress: the runner draws its own line, exp_progress_line */
    x->lc.stop = &x->stop;
    exp_serve(x);
    out->load = x->lr;
    /* exp_serve returns once the app has closed: finish it exactly once */
    if (app_finish(&x->app, NULL)) {
        exp_report(stderr, "run %s: rows could not be written", r->name);
        goto out_mc;
    }
    if (x->load_rc) {
        exp_report(stderr, "run %s: load failed: %s: %s", r->name, load_status_str(x->lr.status),
                   x->lr.error);
        goto out_mc;
    }
    rc = 0;
out_mc:
    if (own_mc)
        mcserver_stop(&mc);
out_loop:
    uv_close((uv_handle_t *)&x->sigint, NULL);
    uv_close((uv_handle_t *)&x->sigterm, NULL);
    uv_run(&x->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&x->loop))
        log_warn("experiment: handles left open");
    workload_free(w);
    free(text);
    uv_mutex_destroy(&x->phase_lock);
    free(x);
    out->ok = rc == 0;
    return rc;
}

/* --- metadata, gates, exports ---------------------------------------------------- */

static void meta_put(sqlite3 *db, int64_t run_id, const char *key, const char *value)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO run_meta (run_id, key, value) VALUES (?1,?2,?3)",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, value, -1, SQLITE_STATIC);
    sqlite3_step(st);
    sqlite3_finalize(st);
}

static uint64_t writes_sent(const struct load_result *l)
{
    uint64_t n = 0;
    for (int c = 0; c < WORKLOAD_CMD_COUNT; c++)
        if (workload_cmd_is_write((enum workload_cmd)c))
            n += l->ops_by_cmd[c];
    return n;
}

static void exp_write_meta(sqlite3 *db, const struct exp_spec *sp, const struct exp_run *r,
                           const struct exp_outcome *o)
{
    char v[64];
    meta_put(db, o->run_id, "experiment", sp->path);
    meta_put(db, o->run_id, "memcached_command", o->mc_cmdline);
    meta_put(db, o->run_id, "memcached_flags", r->mc_args);
    meta_put(db, o->run_id, "memcached_version", o->load.server_version);
    meta_put(db, o->run_id, "slabtap_version", SLABTAP_VERSION);
    meta_put(db, o->run_id, "workload", r->workload);
    meta_put(db, o->run_id, "workload_sha256", o->load.fingerprint);
    snprintf(v, sizeof v, "%llu", (unsigned long long)o->load.seed);
    meta_put(db, o->run_id, "seed", v);
    snprintf(v, sizeof v, "%llu", (unsigned long long)o->load.ops);
    meta_put(db, o->run_id, "ops_sent", v);
    snprintf(v, sizeof v, "%llu", (unsigned long long)writes_sent(&o->load));
    meta_put(db, o->run_id, "writes_sent", v);
    snprintf(v, sizeof v, "%u", o->load.connections);
    meta_put(db, o->run_id, "connections", v);
    snprintf(v, sizeof v, "%u", o->load.pipeline);
    meta_put(db, o->run_id, "pipeline", v);
    snprintf(v, sizeof v, "%.3f", o->load.elapsed_ns / 1e9);
    meta_put(db, o->run_id, "load_seconds", v);
    if (r->items) {
        snprintf(v, sizeof v, "%llu", o->items);
        meta_put(db, o->run_id, "items", v);
    }
}

static int64_t count_rows(sqlite3 *db, int64_t run_id)
{
    sqlite3_stmt *st;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM sets WHERE run_id = ?1 AND value_len IS NOT NULL",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* memcached's curr_items at the run's end (final sample), -1: unknown. */
static int64_t items_at_end(sqlite3 *db, int64_t run_id)
{
    sqlite3_stmt *st;
    int64_t n = -1;
    if (sqlite3_prepare_v2(db, "SELECT curr_items FROM run_summary WHERE run_id = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, run_id);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static int exp_gates(sqlite3 *db, const struct exp_spec *sp, const struct exp_run *r,
                     const struct exp_outcome *o, const struct exp_outcome *all)
{
    int failed = 0;
    if (o->items) {
        int64_t have = items_at_end(db, o->run_id);
        if (have < 0 || (uint64_t)have != o->items) {
            exp_report(stderr, "GATE FAILED %s: memcached holds %lld items at the end, items=%llu",
                       r->name, (long long)have, o->items);
            failed++;
        } else {
            exp_report(stdout, "gate ok   %-14s memcached holds the %llu items of items=%llu",
                       r->name, o->items, o->items);
        }
    }
    int64_t rows = count_rows(db, o->run_id);
    uint64_t sent = writes_sent(&o->load);
    if (rows < 0 || (uint64_t)rows != sent) {
        exp_report(stderr, "GATE FAILED %s: %lld writes recorded, %llu sent", r->name,
                   (long long)rows, (unsigned long long)sent);
        failed++;
    } else {
        exp_report(stdout, "gate ok   %-14s every write recorded: %lld rows = %llu writes sent",
                   r->name, (long long)rows, (unsigned long long)sent);
    }
    if (r->same_plan_as[0]) {
        for (size_t i = 0; i < sp->nruns; i++) {
            if (strcmp(sp->runs[i].name, r->same_plan_as))
                continue;
            if (strcmp(all[i].load.fingerprint, o->load.fingerprint)) {
                exp_report(stderr,
                           "GATE FAILED %s: workload fingerprint %.16s differs from %s's %.16s",
                           r->name, o->load.fingerprint, r->same_plan_as, all[i].load.fingerprint);
                failed++;
            } else {
                exp_report(stdout, "gate ok   %-14s same workload as %s (sha256 %.16s...)", r->name,
                           r->same_plan_as, o->load.fingerprint);
            }
        }
    }
    if (r->gate_model) {
        struct prediction *m = calloc(1, sizeof *m);
        struct reader *rd = NULL;
        char err[256] = "out of memory";
        if (!m || reader_open_sqlite(&rd, db, sqlite3_db_filename(db, "main"), err, sizeof err) ||
            runs_read_prediction(rd, o->run_id, m, err, sizeof err)) {
            exp_report(stderr, "GATE FAILED %s: model: %s", r->name, err);
            failed++;
        } else if (!m->exact_expected || predict_mismatches(m)) {
            exp_report(stderr,
                       "GATE FAILED %s: memcached's counters differ from the slab model:", r->name);
            predict_print(m, stderr);
            failed++;
        } else {
            exp_report(stdout,
                       "gate ok   %-14s slab model predicts every class exactly (used_chunks, "
                       "mem_requested, pages)",
                       r->name);
        }
        reader_close(rd);
        if (m)
            predict_free(m);
        free(m);
    }
    return failed;
}

bool experiment_interrupted(void)
{
    return atomic_load(&exp_interrupted);
}

void experiment_catch_signals(void)
{
    exp_catch_signals();
}

/* What would fail after the runs -- or after memcached started -- fails
 * now: the database, the results directory, a Docker engine. */
static int exp_preflight(const struct experiment_options *o, const struct exp_spec *sp)
{
    char err[1536];
    struct store s;
    if (sp->nexports && fileio_mkdirs(o->results, err, sizeof err)) {
        exp_report(stderr, "--results: %s", err);
        return -1;
    }
    if (store_open(&s, o->db, err, sizeof err)) {
        exp_report(stderr, "--db: %s", err);
        return -1;
    }
    store_close(&s);
    if (o->docker && system("docker info >/dev/null 2>&1") != 0) {
        exp_report(stderr, "--docker: no Docker engine answers (`docker info` failed)");
        return -1;
    }
    return 0;
}

int experiment_run_spec(const struct experiment_options *o, const char *path)
{
    struct exp_spec *sp = calloc(1, sizeof *sp);
    struct exp_outcome *all = calloc(EXP_RUNS_MAX, sizeof *all);
    sqlite3 *db = NULL;
    int failed = 0;
    if (!sp || !all || spec_load(sp, path)) {
        exp_report(stderr, "%s", sp ? sp->error : "out of memory");
        failed = 1;
        goto out;
    }
    if (exp_preflight(o, sp)) {
        failed = 1;
        goto out;
    }
    for (size_t i = 0; i < sp->nruns && !atomic_load(&exp_interrupted); i++) {
        if (exp_run_one(o, &sp->runs[i], &all[i]))
            failed++;
        exp_catch_signals();
    }
    if (failed || atomic_load(&exp_interrupted)) {
        failed += !failed;
        goto out;
    }
    if (sqlite3_open(o->db, &db) != SQLITE_OK) {
        log_error("%s: %s", o->db, sqlite3_errmsg(db));
        failed++;
        goto out;
    }
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (size_t i = 0; i < sp->nruns; i++)
        exp_write_meta(db, sp, &sp->runs[i], &all[i]);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    for (size_t i = 0; i < sp->nruns; i++)
        failed += exp_gates(db, sp, &sp->runs[i], &all[i], all);
    for (size_t i = 0; i < sp->nexports; i++) {
        char msg[EXP_LINE_MAX * 2];
        int bad = export_csv(db, o->results, &sp->exports[i], msg, sizeof msg) != 0;
        exp_report(bad ? stderr : stdout, "%s", msg);
        failed += bad;
    }
    for (size_t i = 0; i < sp->ncharts; i++) {
        char msg[EXP_LINE_MAX * 2];
        int bad = chart_write(db, o->results, sp, &sp->charts[i], msg, sizeof msg) != 0;
        exp_report(bad ? stderr : stdout, "%s", msg);
        failed += bad;
    }
out:
    sqlite3_close(db);
    free(sp);
    free(all);
    return failed;
}
