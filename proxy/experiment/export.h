/* export: one `export` line of a spec -- a SQL file run over the database,
 * the rows of its last statement written as a CSV into results/.
 *
 * Owns the CSV format (RFC 4180 quoting, header row). Must never format a
 * number in C (what the query returns is written as SQLite prints it), or
 * print: the outcome is returned for the runner's report. */
#ifndef SLABTAP_EXPERIMENT_EXPORT_H
#define SLABTAP_EXPERIMENT_EXPORT_H

#include <sqlite3.h>

#include "experiment/spec.h"

/* Runs every statement of e->query, binding @run, @a and @b from e; writes
 * results_dir/e->file. 0 with "wrote FILE (QUERY)" in err, or -1 with the
 * reason. */
int export_csv(sqlite3 *db, const char *results_dir, const struct exp_export *e, char *err,
               size_t errlen);

/* What export_query hands over: columns() at the start of every statement
 * that returns columns, then row() per row (a NULL value is NULL). Either
 * returns non-zero to stop, with the reason in err. */
struct export_sink {
    int (*columns)(void *ud, int ncol, const char *const *names, char *err, size_t errlen);
    int (*row)(void *ud, int ncol, const char *const *values, char *err, size_t errlen);
    void *ud;
};

/* Runs every statement of e->query with e's bindings into sink: the rows
 * export_csv writes, for other consumers (the charts). 0 or -1 with err. */
int export_query(sqlite3 *db, const struct exp_export *e, const struct export_sink *sink, char *err,
                 size_t errlen);

#endif
