/* chart: one `chart` line of a spec -- the rows of the exports it names,
 * run again from their SQL with their bindings (so a chart shows exactly
 * what the CSVs hold), drawn by svgchart into results/FILE.svg.
 *
 * Owns the mapping from query columns to panels and series. Must never
 * format a plotted number in C (every value reaches the SVG as the text
 * SQLite gave, data-value), or print: the outcome is returned for the
 * runner's report. */
#ifndef SLABTAP_EXPERIMENT_CHART_H
#define SLABTAP_EXPERIMENT_CHART_H

#include <sqlite3.h>
#include <stddef.h>

#include "experiment/spec.h"

/* Writes results_dir/c->file. 0 with "wrote FILE (chart of ...)" in err,
 * or -1 with the reason. */
int chart_write(sqlite3 *db, const char *results_dir, const struct exp_spec *sp,
                const struct exp_chart *c, char *err, size_t errlen);

#endif
