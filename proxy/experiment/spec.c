/* spec: experiment spec files, line by line. */
#include "experiment/spec.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "load/workload.h"

/* Next word of a spec line: `key=value`, `key="value with blanks"` or a bare
 * word; NULL at the end. */
static char *spec_word(char **p)
{
    char *s = *p, *start;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || *s == '#')
        return NULL;
    start = s;
    bool quoted = false;
    char *w = s;
    for (; *s; s++) {
        if (*s == '"') {
            quoted = !quoted;
            continue;
        }
        if (!quoted && (*s == ' ' || *s == '\t'))
            break;
        *w++ = *s;
    }
    if (*s)
        s++;
    *w = '\0';
    *p = s;
    return start;
}

static int spec_error(struct exp_spec *sp, unsigned line, const char *msg, const char *what)
{
    snprintf(sp->error, sizeof sp->error, "%s:%u: %s%s%s%s", sp->path, line, msg, what ? " '" : "",
             what ? what : "", what ? "'" : "");
    return -1;
}

static void spec_resolve(const struct exp_spec *sp, const char *rel, char *out, size_t len)
{
    size_t dl = rel[0] == '/' ? 0 : strlen(sp->dir) + 1, rl = strlen(rel);
    if (dl + rl + 1 > len) {
        out[0] = '\0'; /* too long: reported as a missing file */
        return;
    }
    if (dl) {
        memcpy(out, sp->dir, dl - 1);
        out[dl - 1] = '/';
    }
    memcpy(out + dl, rel, rl + 1);
}

static int spec_run_line(struct exp_spec *sp, char *rest, unsigned line)
{
    struct exp_run *r;
    char *w = spec_word(&rest);
    if (!w)
        return spec_error(sp, line, "run needs a name", NULL);
    if (sp->nruns == EXP_RUNS_MAX)
        return spec_error(sp, line, "too many runs", NULL);
    r = &sp->runs[sp->nruns++];
    memset(r, 0, sizeof *r);
    r->line = line;
    snprintf(r->name, sizeof r->name, "%s", w);
    while ((w = spec_word(&rest))) {
        if (!strncmp(w, "memcached=", 10))
            snprintf(r->mc_args, sizeof r->mc_args, "%s", w + 10);
        else if (!strncmp(w, "workload=", 9))
            spec_resolve(sp, w + 9, r->workload, sizeof r->workload);
        else if (!strcmp(w, "gate=model"))
            r->gate_model = true;
        else if (!strncmp(w, "same-plan-as=", 13))
            snprintf(r->same_plan_as, sizeof r->same_plan_as, "%s", w + 13);
        else
            return spec_error(sp, line, "unknown run option", w);
    }
    if (!r->workload[0])
        return spec_error(sp, line, "run needs workload=FILE", NULL);
    return 0;
}

static int spec_export_line(struct exp_spec *sp, char *rest, unsigned line)
{
    struct exp_export *e;
    char *w = spec_word(&rest);
    if (!w)
        return spec_error(sp, line, "export needs a file name", NULL);
    if (sp->nexports == EXP_EXPORTS_MAX)
        return spec_error(sp, line, "too many exports", NULL);
    e = &sp->exports[sp->nexports++];
    memset(e, 0, sizeof *e);
    e->line = line;
    snprintf(e->file, sizeof e->file, "%s", w);
    while ((w = spec_word(&rest))) {
        if (!strncmp(w, "query=", 6))
            spec_resolve(sp, w + 6, e->query, sizeof e->query);
        else if (!strncmp(w, "run=", 4))
            snprintf(e->run, sizeof e->run, "%s", w + 4);
        else if (!strncmp(w, "a=", 2))
            snprintf(e->a, sizeof e->a, "%s", w + 2);
        else if (!strncmp(w, "b=", 2))
            snprintf(e->b, sizeof e->b, "%s", w + 2);
        else
            return spec_error(sp, line, "unknown export option", w);
    }
    if (!e->query[0])
        return spec_error(sp, line, "export needs query=FILE.sql", NULL);
    return 0;
}

/* A run's workload must exist and parse before any run starts; ladder errors
 * (fill/over) can only show once its memcached answers `stats settings`. */
static int spec_check_workload(struct exp_spec *sp, const struct exp_run *r)
{
    struct workload *w = NULL;
    struct workload_error werr;
    char *text = NULL, msg[256], ferr[128];
    size_t tlen;
    if (!(text = fileio_read(r->workload, FILEIO_DEFAULT_MAX, &tlen, ferr, sizeof ferr))) {
        snprintf(msg, sizeof msg, "cannot read workload %s: %s", r->workload, ferr);
        return spec_error(sp, r->line, msg, NULL);
    }
    int rc = workload_parse(r->workload, text, tlen, &w, &werr) == WORKLOAD_OK ? 0 : -1;
    if (rc)
        snprintf(sp->error, sizeof sp->error,
                 "%s\n%s:%u: run %s: the workload above does not parse", werr.msg, sp->path,
                 r->line, r->name);
    workload_free(w);
    free(text);
    return rc;
}

int spec_load(struct exp_spec *sp, const char *path)
{
    char line[EXP_LINE_MAX], dircopy[EXP_PATH_MAX];
    unsigned lineno = 0;
    int rc = 0;
    FILE *f = fopen(path, "r");
    memset(sp, 0, sizeof *sp);
    snprintf(sp->path, sizeof sp->path, "%s", path);
    snprintf(dircopy, sizeof dircopy, "%s", path);
    snprintf(sp->dir, sizeof sp->dir, "%s", dirname(dircopy));
    if (!f) {
        snprintf(sp->error, sizeof sp->error, "%s: %s", path, strerror(errno));
        return -1;
    }
    while (!rc && fgets(line, sizeof line, f)) {
        char *p = line, *w;
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (!(w = spec_word(&p)))
            continue;
        if (!strcmp(w, "run"))
            rc = spec_run_line(sp, p, lineno);
        else if (!strcmp(w, "export"))
            rc = spec_export_line(sp, p, lineno);
        else
            rc = spec_error(sp, lineno, "unknown directive (want run or export)", w);
    }
    fclose(f);
    if (!rc && sp->nruns == 0)
        rc = spec_error(sp, lineno, "no run in the spec", NULL);
    for (size_t i = 0; !rc && i < sp->nruns; i++) {
        const char *other = sp->runs[i].same_plan_as;
        bool found = !other[0];
        for (size_t j = 0; j < i && !found; j++)
            found = !strcmp(sp->runs[j].name, other);
        if (!found)
            rc = spec_error(sp, sp->runs[i].line, "same-plan-as names no earlier run", other);
    }
    for (size_t i = 0; !rc && i < sp->nruns; i++)
        rc = spec_check_workload(sp, &sp->runs[i]);
    return rc;
}
