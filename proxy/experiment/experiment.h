/* experiment: `slabtap experiment SPEC` -- runs an experiment spec: for
 * each run its own memcached with the run's flags, the recording proxy in
 * front of it, the workload through the proxy on a second thread, a final
 * stats sample; then the verification gates and the CSV exports, each
 * produced by a SQL file over the database.
 *
 * Then the charts (results/ SVG files), drawn from the same queries.
 *
 * Owns the spec format (experiments/README.md, "Experiment specs"), the
 * whole lifecycle of what it starts, its report -- runs starting, gates,
 * exports and the errors of the spec, plain lines like a compiler's (gates
 * passed on stdout, failures on stderr): the one place outside cli/ that
 * prints -- and the live progress line (stderr, only when it is a
 * terminal). Must never leave a memcached or a proxy
 * behind (done, error or Ctrl-C), restart or write to a memcached it did
 * not start beyond the run's own workload, and never format a result
 * number in C: every figure in results/ comes out of a query. */
#ifndef SLABTAP_EXPERIMENT_H
#define SLABTAP_EXPERIMENT_H

#include <stdbool.h>

struct experiment_options {
    const char *db;        /* the database every run records into */
    const char *results;   /* where exports go */
    const char *memcached; /* binary; NULL: memcached on PATH */
    const char *image;     /* with docker */
    bool docker;
    unsigned stats_ms; /* the proxy's stats poll interval */
    /* runs with items=N store this many instead (0: the spec's N) */
    unsigned long long items;
    /* HOST:PORT of a memcached someone else started: runs whose flags its
     * `stats settings` show use it (never restarted, must have stored
     * nothing yet); the others are refused. NULL: start our own. */
    const char *upstream;
    /* where the live progress line goes when it is a terminal (0: stderr;
     * experiments/run.sh pipes stderr into summary.txt and hands over the
     * terminal as another descriptor) */
    int progress_fd;
    /* HOST:PORT of the admin endpoint (the live page, /metrics) each run's
     * proxy serves while it runs; NULL: none */
    const char *http;
};

/* Runs every run of the spec at path, then the gates and the exports.
 * Returns the number of failures (0: all gates held). */
int experiment_run_spec(const struct experiment_options *o, const char *path);
/* SIGINT/SIGTERM seen: stop between runs (exit 130). */
bool experiment_interrupted(void);
/* Installs (again) the handler that turns Ctrl-C between runs into
 * experiment_interrupted(). */
void experiment_catch_signals(void);

#endif
