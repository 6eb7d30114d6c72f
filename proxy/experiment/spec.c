/* spec: experiment spec files, line by line. */
#include "experiment/spec.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
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
        else if (!strncmp(w, "items=", 6)) {
            char *end;
            errno = 0;
            r->items = strtoull(w + 6, &end, 10);
            if (errno || *end || w[6] < '1' || w[6] > '9')
                return spec_error(sp, line, "items= wants a count (1 or more)", w + 6);
        } else
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

/* Copies the next comma-separated item of *list into out (cut to len). */
static bool spec_list_next(const char **list, char *out, size_t len)
{
    const char *s = *list;
    if (!s || !*s)
        return false;
    size_t n = strcspn(s, ",");
    snprintf(out, len, "%.*s", (int)n, s);
    *list = s[n] ? s + n + 1 : s + n;
    return true;
}

static int spec_chart_from(struct exp_spec *sp, struct exp_chart *c, const char *list,
                           unsigned line)
{
    char name[EXP_PATH_MAX];
    while (spec_list_next(&list, name, sizeof name)) {
        size_t i = 0;
        while (i < sp->nexports && strcmp(sp->exports[i].file, name))
            i++;
        if (i == sp->nexports)
            return spec_error(sp, line, "from= names no earlier export", name);
        if (c->nfrom == EXP_CHART_FROM_MAX)
            return spec_error(sp, line, "too many exports in from=", name);
        c->from[c->nfrom++] = i;
    }
    return 0;
}

static int spec_chart_y(struct exp_spec *sp, struct exp_chart *c, const char *list, unsigned line)
{
    char item[EXP_NAME_MAX + EXP_TEXT_MAX];
    while (spec_list_next(&list, item, sizeof item)) {
        if (c->ny == EXP_CHART_PANELS_MAX)
            return spec_error(sp, line, "too many columns in y=", item);
        char *colon = strchr(item, ':');
        if (colon)
            *colon = '\0';
        snprintf(c->y[c->ny], EXP_NAME_MAX, "%.*s", EXP_NAME_MAX - 1, item);
        snprintf(c->ylabel[c->ny], EXP_TEXT_MAX, "%.*s", EXP_TEXT_MAX - 1,
                 colon ? colon + 1 : item);
        c->ny++;
    }
    return 0;
}

static int spec_chart_line(struct exp_spec *sp, char *rest, unsigned line)
{
    struct exp_chart *c;
    char *w = spec_word(&rest);
    if (!w)
        return spec_error(sp, line, "chart needs a file name", NULL);
    if (sp->ncharts == EXP_CHARTS_MAX)
        return spec_error(sp, line, "too many charts", NULL);
    c = &sp->charts[sp->ncharts++];
    memset(c, 0, sizeof *c);
    c->line = line;
    snprintf(c->file, sizeof c->file, "%s", w);
    bool kind = false;
    while ((w = spec_word(&rest))) {
        int rc = 0;
        if (!strcmp(w, "kind=bars") || !strcmp(w, "kind=lines")) {
            c->lines = w[5] == 'l';
            kind = true;
        } else if (!strncmp(w, "from=", 5))
            rc = spec_chart_from(sp, c, w + 5, line);
        else if (!strncmp(w, "x=", 2))
            snprintf(c->x, sizeof c->x, "%s", w + 2);
        else if (!strncmp(w, "y=", 2))
            rc = spec_chart_y(sp, c, w + 2, line);
        else if (!strncmp(w, "series=", 7))
            snprintf(c->series, sizeof c->series, "%s", w + 7);
        else if (!strncmp(w, "skip=", 5))
            snprintf(c->skip, sizeof c->skip, "%s", w + 5);
        else if (!strncmp(w, "names=", 6)) {
            const char *list = w + 6;
            for (size_t i = 0; i < EXP_CHART_FROM_MAX; i++)
                if (!spec_list_next(&list, c->names[i], sizeof c->names[i]))
                    break;
        } else if (!strncmp(w, "title=", 6))
            snprintf(c->title, sizeof c->title, "%s", w + 6);
        else if (!strncmp(w, "xlabel=", 7))
            snprintf(c->xlabel, sizeof c->xlabel, "%s", w + 7);
        else
            return spec_error(sp, line, "unknown chart option", w);
        if (rc)
            return rc;
    }
    if (!kind)
        return spec_error(sp, line, "chart needs kind=bars or kind=lines", NULL);
    if (!c->nfrom || !c->x[0] || !c->ny)
        return spec_error(sp, line, "chart needs from=EXPORT.csv, x=COLUMN and y=COLUMN", NULL);
    return 0;
}

int spec_items_text(const char *text, size_t len, unsigned long long from, unsigned long long to,
                    char **out, size_t *outlen, char *err, size_t errlen)
{
    char want[32], put[32];
    size_t wl = (size_t)snprintf(want, sizeof want, "%llu", from);
    size_t pl = (size_t)snprintf(put, sizeof put, "%llu", to);
    size_t hits = 0;
    struct buf o;
    buf_init(&o, BUF_UNBOUNDED);
    buf_reserve(&o, len); /* the usual size: a few bytes more per line hit */
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && text[end] != '\n')
            end++;
        if (end < len)
            end++; /* the line, its \n included */
        size_t j = i;
        while (j < end && (text[j] == ' ' || text[j] == '\t'))
            j++;
        size_t k = j + 3;
        bool hit =
            end - j > 4 && !memcmp(text + j, "set", 3) && (text[k] == ' ' || text[k] == '\t');
        if (hit) {
            while (k < end && (text[k] == ' ' || text[k] == '\t'))
                k++;
            hit = end - k > wl && !memcmp(text + k, want, wl) &&
                  (text[k + wl] == ' ' || text[k + wl] == '\t');
        }
        if (hit) {
            buf_append(&o, text + i, k - i);
            buf_append(&o, put, pl);
            buf_append(&o, text + k + wl, end - (k + wl));
            hits++;
        } else {
            buf_append(&o, text + i, end - i);
        }
        i = end;
    }
    if (o.failed || !hits) {
        buf_free(&o);
        if (!hits)
            snprintf(err, errlen, "items=%llu: the workload has no `set %llu ...` line", from,
                     from);
        else
            snprintf(err, errlen, "out of memory");
        return -1;
    }
    *outlen = o.len;
    *out = buf_take(&o);
    return *out ? 0 : -1;
}

/* A run's workload must exist and parse before any run starts; ladder errors
 * (fill/over) can only show once its memcached answers `stats settings`. */
static int spec_check_workload(struct exp_spec *sp, const struct exp_run *r)
{
    struct workload *w = NULL;
    struct workload_error werr;
    char *text = NULL, msg[EXP_PATH_MAX + 256], ferr[128];
    size_t tlen;
    if (!(text = fileio_read(r->workload, FILEIO_DEFAULT_MAX, &tlen, ferr, sizeof ferr))) {
        snprintf(msg, sizeof msg, "cannot read workload %s: %s", r->workload, ferr);
        return spec_error(sp, r->line, msg, NULL);
    }
    if (r->items) {
        char *moved, ierr[128];
        size_t mlen;
        if (spec_items_text(text, tlen, r->items, r->items, &moved, &mlen, ierr, sizeof ierr)) {
            free(text);
            snprintf(msg, sizeof msg, "run %.63s: %.127s", r->name, ierr);
            return spec_error(sp, r->line, msg, NULL);
        }
        free(moved);
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
        else if (!strcmp(w, "chart"))
            rc = spec_chart_line(sp, p, lineno);
        else
            rc = spec_error(sp, lineno, "unknown directive (want run, export or chart)", w);
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
