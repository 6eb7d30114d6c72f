/* export: SQL file -> rows -> CSV. */
#include "experiment/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

#define EXPORT_COLS_MAX 256

static void csv_field(FILE *f, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void bind_named(sqlite3_stmt *st, const char *name, const char *value)
{
    int i = sqlite3_bind_parameter_index(st, name);
    if (i > 0 && value && value[0])
        sqlite3_bind_text(st, i, value, -1, SQLITE_TRANSIENT);
}

int export_query(sqlite3 *db, const struct exp_export *e, const struct export_sink *sink, char *err,
                 size_t errlen)
{
    char *sql = NULL, ferr[128];
    const char *cells[EXPORT_COLS_MAX];
    size_t len;
    int rc = -1;
    if (!(sql = fileio_read(e->query, FILEIO_DEFAULT_MAX, &len, ferr, sizeof ferr))) {
        snprintf(err, errlen, "%s: %s", e->query, ferr);
        return -1;
    }
    const char *tail = sql;
    while (tail && *tail) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, tail, -1, &st, &tail) != SQLITE_OK) {
            snprintf(err, errlen, "%s: %s", e->query, sqlite3_errmsg(db));
            goto out;
        }
        if (!st)
            continue;
        bind_named(st, "@run", e->run);
        bind_named(st, "@a", e->a);
        bind_named(st, "@b", e->b);
        int ncol = sqlite3_column_count(st);
        if (ncol > EXPORT_COLS_MAX) {
            snprintf(err, errlen, "%s: more than %d columns", e->query, EXPORT_COLS_MAX);
            sqlite3_finalize(st);
            goto out;
        }
        if (ncol > 0) {
            for (int c = 0; c < ncol; c++)
                cells[c] = sqlite3_column_name(st, c);
            if (sink->columns(sink->ud, ncol, cells, err, errlen)) {
                sqlite3_finalize(st);
                goto out;
            }
        }
        int step;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            for (int c = 0; c < ncol; c++)
                cells[c] = (const char *)sqlite3_column_text(st, c);
            if (sink->row(sink->ud, ncol, cells, err, errlen)) {
                sqlite3_finalize(st);
                goto out;
            }
        }
        sqlite3_finalize(st);
        if (step != SQLITE_DONE) {
            snprintf(err, errlen, "%s: %s", e->query, sqlite3_errmsg(db));
            goto out;
        }
    }
    rc = 0;
out:
    free(sql);
    return rc;
}

struct csv_out {
    const char *path;
    FILE *f;
};

/* The rows of the last statement that returns columns become the CSV. */
static int csv_columns(void *ud, int ncol, const char *const *names, char *err, size_t errlen)
{
    struct csv_out *c = ud;
    if (c->f)
        fclose(c->f);
    if (!(c->f = fopen(c->path, "w"))) {
        snprintf(err, errlen, "%s: %s", c->path, strerror(errno));
        return -1;
    }
    for (int i = 0; i < ncol; i++) {
        if (i)
            fputc(',', c->f);
        csv_field(c->f, names[i]);
    }
    fputc('\n', c->f);
    return 0;
}

static int csv_row(void *ud, int ncol, const char *const *values, char *err, size_t errlen)
{
    struct csv_out *c = ud;
    (void)err, (void)errlen;
    for (int i = 0; i < ncol; i++) {
        if (i)
            fputc(',', c->f);
        csv_field(c->f, values[i]);
    }
    fputc('\n', c->f);
    return 0;
}

int export_csv(sqlite3 *db, const char *results_dir, const struct exp_export *e, char *err,
               size_t errlen)
{
    char path[EXP_PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", results_dir, e->file);
    struct csv_out c = { .path = path };
    struct export_sink sink = { .columns = csv_columns, .row = csv_row, .ud = &c };
    int rc = export_query(db, e, &sink, err, errlen);
    if (!rc && !c.f) {
        snprintf(err, errlen, "%s: returns no rows to export", e->query);
        rc = -1;
    }
    if (c.f && fclose(c.f) && !rc) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    }
    if (!rc)
        snprintf(err, errlen, "wrote %s (%s)", path, e->query);
    return rc;
}
