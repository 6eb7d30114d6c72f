/* spec: the experiment spec format (experiments/README.md, "Experiment
 * specs") -- `run` and `export` lines -- parsed and checked before anything
 * starts: every workload file must exist and parse, same-plan-as must name
 * an earlier run.
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

struct exp_spec {
    char path[EXP_PATH_MAX];
    char dir[EXP_PATH_MAX];
    struct exp_run runs[EXP_RUNS_MAX];
    size_t nruns;
    struct exp_export exports[EXP_EXPORTS_MAX];
    size_t nexports;
    char error[EXP_LINE_MAX * 2]; /* why spec_load failed */
};

/* Reads and checks the spec at path into sp. 0, or -1 with the reason,
 * naming file and line, in sp->error. */
int spec_load(struct exp_spec *sp, const char *path);

#endif
