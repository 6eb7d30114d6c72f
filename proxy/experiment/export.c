/* export: SQL file -> CSV. */
#include "experiment/export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

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

/* Runs every statement of the query file; the rows of the last one that
 * returns columns become the CSV. */
int export_csv(sqlite3 *db, const char *results_dir, const struct exp_export *e, char *err,
               size_t errlen)
{
    char *sql = NULL, path[EXP_PATH_MAX * 2];
    size_t len;
    int rc = -1;
    FILE *out = NULL;
    char ferr[128];
    if (!(sql = fileio_read(e->query, FILEIO_DEFAULT_MAX, &len, ferr, sizeof ferr))) {
        snprintf(err, errlen, "%s: %s", e->query, ferr);
        return -1;
    }
    snprintf(path, sizeof path, "%s/%s", results_dir, e->file);
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
        if (ncol > 0) {
            if (out)
                fclose(out);
            if (!(out = fopen(path, "w"))) {
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                sqlite3_finalize(st);
                goto out;
            }
            for (int c = 0; c < ncol; c++) {
                if (c)
                    fputc(',', out);
                csv_field(out, sqlite3_column_name(st, c));
            }
            fputc('\n', out);
        }
        int step;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            for (int c = 0; c < ncol; c++) {
                if (c)
                    fputc(',', out);
                csv_field(out, (const char *)sqlite3_column_text(st, c));
            }
            fputc('\n', out);
        }
        sqlite3_finalize(st);
        if (step != SQLITE_DONE) {
            snprintf(err, errlen, "%s: %s", e->query, sqlite3_errmsg(db));
            goto out;
        }
    }
    rc = out ? 0 : -1;
    if (rc)
        snprintf(err, errlen, "%s: returns no rows to export", e->query);
    else
        snprintf(err, errlen, "wrote %s (%s)", path, e->query);
out:
    if (out)
        fclose(out);
    free(sql);
    return rc;
}
