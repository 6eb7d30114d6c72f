/* spec: the experiment spec format (experiments/README.md, "Experiment
 * specs") -- `run`, `export` and `chart` lines -- parsed and checked before anything
 * starts: every workload file must exist and parse, same-plan-as must name
 * an earlier run, a chart's from= must name earlier exports; a run's
 * items=N must be the COUNT of some set line of its workload.
 *
 * Owns the spec structs. Must never start a process, touch a database or
 * print: every error names the spec file and line, in exp_spec.error. */
#ifndef SLABTAP_EXPERIMENT_SPEC_H
#define SLABTAP_EXPERIMENT_SPEC_H

#include <stdbool.h>
#include <stddef.h>

#define EXP_RUNS_MAX 16
#define EXP_EXPORTS_MAX 32
#define EXP_NAME_MAX 64
#define EXP_PATH_MAX 512
#define EXP_ARGS_MAX 512
#define EXP_LINE_MAX 1024

struct exp_run {
    char name[EXP_NAME_MAX];
    /* items=N: the run stores N items -- its workload's set lines whose
     * COUNT is N; spec_set_items moves them to another N */
    unsigned long long items;
    char mc_args[EXP_ARGS_MAX];
    char workload[EXP_PATH_MAX];
    char same_plan_as[EXP_NAME_MAX];
    bool gate_model;
    unsigned line;
};

struct exp_export {
    char file[EXP_PATH_MAX];
    char query[EXP_PATH_MAX];
    char run[EXP_NAME_MAX], a[EXP_NAME_MAX], b[EXP_NAME_MAX];
    unsigned line;
};

/* `chart FILE.svg kind=bars|lines from=EXPORT.csv[,...] x=COL y="COL:LABEL[,...]"
 * [series=COL] [skip=X,...] [names=NAME,...] [title=T] [xlabel=L]`: a chart
 * of the rows of the named exports' queries (the same SQL, the same
 * bindings as their CSVs), one panel per y column. */
#define EXP_CHARTS_MAX 8
#define EXP_CHART_FROM_MAX 6   /* series from exports (svgchart's SERIES_MAX) */
#define EXP_CHART_PANELS_MAX 4 /* svgchart's PANELS_MAX */
#define EXP_TEXT_MAX 96

struct exp_chart {
    char file[EXP_PATH_MAX];
    bool lines; /* kind=lines, else bars */
    size_t nfrom;
    size_t from[EXP_CHART_FROM_MAX];              /* indices into exports */
    char names[EXP_CHART_FROM_MAX][EXP_TEXT_MAX]; /* a series per from ("": its run) */
    char x[EXP_NAME_MAX], series[EXP_NAME_MAX];
    size_t ny;
    char y[EXP_CHART_PANELS_MAX][EXP_NAME_MAX];
    char ylabel[EXP_CHART_PANELS_MAX][EXP_TEXT_MAX];
    char skip[EXP_ARGS_MAX]; /* x values left out, comma-separated */
    char title[EXP_TEXT_MAX], xlabel[EXP_TEXT_MAX];
    unsigned line;
};

struct exp_spec {
    char path[EXP_PATH_MAX];
    char dir[EXP_PATH_MAX];
    struct exp_run runs[EXP_RUNS_MAX];
    size_t nruns;
    struct exp_export exports[EXP_EXPORTS_MAX];
    size_t nexports;
    struct exp_chart charts[EXP_CHARTS_MAX];
    size_t ncharts;
    char error[EXP_LINE_MAX * 2]; /* why spec_load failed */
};

/* Reads and checks the spec at path into sp. 0, or -1 with the reason,
 * naming file and line, in sp->error. */
int spec_load(struct exp_spec *sp, const char *path);
/* The workload text of a run with items=N, its set lines of COUNT N made
 * COUNT `items` instead, into a new buffer (*out, *outlen; free it). 0, or
 * -1 with the reason in err (no such line, out of memory). */
int spec_items_text(const char *text, size_t len, unsigned long long from, unsigned long long to,
                    char **out, size_t *outlen, char *err, size_t errlen);

#endif
