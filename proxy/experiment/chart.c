/* chart: export rows -> svgchart -> SVG file. */
#include "experiment/chart.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiment/export.h"
#include "experiment/svgchart.h"

struct chart_fill {
    const struct exp_spec *sp;
    const struct exp_chart *c;
    struct svgchart *g;
    size_t from;    /* which export's rows are coming */
    int xcol, scol; /* column indices (-1: none) */
    int ycol[EXP_CHART_PANELS_MAX];
};

static int chart_col(const char *const *names, int ncol, const char *want)
{
    for (int i = 0; i < ncol; i++)
        if (names[i] && !strcmp(names[i], want))
            return i;
    return -1;
}

static int chart_columns(void *ud, int ncol, const char *const *names, char *err, size_t errlen)
{
    struct chart_fill *f = ud;
    const struct exp_export *e = &f->sp->exports[f->c->from[f->from]];
    const char *missing = NULL;
    if ((f->xcol = chart_col(names, ncol, f->c->x)) < 0)
        missing = f->c->x;
    f->scol = -1;
    if (f->c->series[0] && (f->scol = chart_col(names, ncol, f->c->series)) < 0)
        missing = f->c->series;
    for (size_t k = 0; k < f->c->ny; k++)
        if ((f->ycol[k] = chart_col(names, ncol, f->c->y[k])) < 0)
            missing = f->c->y[k];
    if (missing) {
        snprintf(err, errlen, "%s:%u: chart %s: %s has no column '%s'", f->sp->path, f->c->line,
                 f->c->file, e->query, missing);
        return -1;
    }
    return 0;
}

static bool chart_skipped(const char *skip, const char *x)
{
    size_t xl = strlen(x);
    for (const char *s = skip; *s;) {
        size_t n = strcspn(s, ",");
        if (n == xl && !memcmp(s, x, n))
            return true;
        s += n + (s[n] == ',');
    }
    return false;
}

/* The series of panel p this row belongs to (created on first use). */
static struct svgchart_series *chart_series(struct chart_fill *f, struct svgchart_panel *p,
                                            const char *name)
{
    for (size_t i = 0; i < p->nseries; i++)
        if (!strncmp(p->s[i].name, name, SVGCHART_TEXT_MAX - 1))
            return &p->s[i];
    (void)f;
    return svgchart_add_series(p, name);
}

static int chart_row(void *ud, int ncol, const char *const *v, char *err, size_t errlen)
{
    struct chart_fill *f = ud;
    const struct exp_chart *c = f->c;
    const struct exp_export *e = &f->sp->exports[c->from[f->from]];
    const char *x = v[f->xcol], *name;
    (void)ncol;
    if (!x || chart_skipped(c->skip, x))
        return 0;
    if (f->scol >= 0)
        name = v[f->scol] ? v[f->scol] : "";
    else if (c->names[f->from][0])
        name = c->names[f->from];
    else
        name = e->run[0] ? e->run : e->file;
    for (size_t k = 0; k < c->ny; k++) {
        const char *y = v[f->ycol[k]];
        if (!y)
            continue;
        struct svgchart_series *s = chart_series(f, &f->g->p[k], name);
        if (!s) {
            snprintf(err, errlen, "%s:%u: chart %s: more than %d series", f->sp->path, c->line,
                     c->file, SVGCHART_SERIES_MAX);
            return -1;
        }
        if (svgchart_add_point(s, x, y)) {
            snprintf(err, errlen,
                     "%s:%u: chart %s: cannot plot %s='%s' at %s='%s' (not a number, or more "
                     "than %d points)",
                     f->sp->path, c->line, c->file, c->y[k], y, c->x, x,
                     c->lines ? SVGCHART_POINTS_MAX : SVGCHART_CATS_MAX);
            return -1;
        }
    }
    return 0;
}

int chart_write(sqlite3 *db, const char *results_dir, const struct exp_spec *sp,
                const struct exp_chart *c, char *err, size_t errlen)
{
    struct svgchart *g = malloc(sizeof *g);
    char *svg = malloc(SVGCHART_OUT_MAX), path[EXP_PATH_MAX * 2];
    int rc = -1;
    if (!g || !svg) {
        snprintf(err, errlen, "chart %s: out of memory", c->file);
        goto out;
    }
    svgchart_init(g, c->title);
    for (size_t k = 0; k < c->ny; k++)
        svgchart_add_panel(g, c->lines ? SVGCHART_LINES : SVGCHART_BARS, c->ylabel[k],
                           c->xlabel[0] ? c->xlabel : c->x, c->ylabel[k]);
    struct chart_fill f = { .sp = sp, .c = c, .g = g };
    struct export_sink sink = { .columns = chart_columns, .row = chart_row, .ud = &f };
    for (f.from = 0; f.from < c->nfrom; f.from++) {
        /* a series per export, in from= order, even when it has no rows */
        if (!c->series[0]) {
            const struct exp_export *e = &sp->exports[c->from[f.from]];
            const char *name = c->names[f.from][0] ? c->names[f.from]
                               : e->run[0]         ? e->run
                                                   : e->file;
            for (size_t k = 0; k < c->ny; k++)
                chart_series(&f, &g->p[k], name);
        }
        if (export_query(db, &sp->exports[c->from[f.from]], &sink, err, errlen))
            goto out;
    }
    long n = svgchart_render(g, svg, SVGCHART_OUT_MAX);
    if (n < 0) {
        snprintf(err, errlen, "chart %s: larger than %u bytes", c->file, SVGCHART_OUT_MAX);
        goto out;
    }
    snprintf(path, sizeof path, "%s/%s", results_dir, c->file);
    FILE *o = fopen(path, "w");
    if (!o || fwrite(svg, 1, (size_t)n, o) != (size_t)n) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        if (o)
            fclose(o);
        goto out;
    }
    if (fclose(o)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        goto out;
    }
    int used = snprintf(err, errlen, "wrote %s (chart of", path);
    for (size_t i = 0; i < c->nfrom && used > 0 && (size_t)used < errlen; i++)
        used += snprintf(err + used, errlen - (size_t)used, "%s %s", i ? "," : "",
                         sp->exports[c->from[i]].file);
    if (used > 0 && (size_t)used < errlen)
        snprintf(err + used, errlen - (size_t)used, ")");
    rc = 0;
out:
    free(g);
    free(svg);
    return rc;
}
