/* qsql: the dialect rule that derives a query's PostgreSQL text from its
 * SQLite text -- each rewrite, literals and nesting left intact, and what
 * only SQLite has refused (such a query names its PostgreSQL text). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "record/qsql.h"

static void test_derived(void)
{
    static const struct {
        const char *lite, *pg;
    } cases[] = {
        { "SELECT 1 FROM agg_runs WHERE run_id = ?1", "SELECT 1 FROM agg_runs WHERE run_id = $1" },
        { "SELECT ?12, ?3", "SELECT $12, $3" },
        /* a literal is copied as is: its ? and function names too */
        { "SELECT 'max(a, b) ?1 it''s', ?2", "SELECT 'max(a, b) ?1 it''s', $2" },
        { "SELECT json_extract(s.stats, '$.total_malloced')",
          "SELECT ((s.stats) ->> 'total_malloced')::numeric" },
        { "coalesce(json_extract(st.settings, '$.slab_page_size'), 1048576)",
          "coalesce(((st.settings) ->> 'slab_page_size')::numeric, 1048576)" },
        /* nested: the argument derived too */
        { "sum(json_extract(c.fields, '$.total_pages')) * ?2",
          "sum(((c.fields) ->> 'total_pages')::numeric) * $2" },
        { "WHERE json_valid(value)", "WHERE (slabtap_try_jsonb(value) IS NOT NULL)" },
        /* max/min of two: greatest/least; the aggregates stay */
        { "SELECT max(0, (second - ?2) * ?3 / ?4), max(t_ns), min(a, min(b, ?1))",
          "SELECT greatest(0, (second - $2) * $3 / $4), max(t_ns), least(a, least(b, $1))" },
        { "ORDER BY p.prefix COLLATE BINARY", "ORDER BY p.prefix COLLATE \"C\"" },
        /* words that only contain a rewritten name are left alone */
        { "SELECT maxrow, my_max(a, b), rowids FROM t",
          "SELECT maxrow, my_max(a, b), rowids FROM t" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = qsql_dialect_pg(cases[i].lite);
        CHECK_STR(got, cases[i].pg);
        free(got);
    }
}

static void test_refused(void)
{
    static const char *const lite[] = {
        "SELECT max(rowid) FROM writes",
        "SELECT w.rowid FROM writes w",
        "WHERE typeof(w.key_ref) = 'integer'",
        "SELECT json_type(x, '$.a')",
        "SELECT json_object('a', 1)",
        "SELECT json('true')",
        "SELECT json_extract(x, 'a')",      /* not a '$.' path */
        "SELECT json_extract(x, '$.a', 2)", /* more than one path */
        "SELECT max(1, 2",                  /* unbalanced */
    };
    for (size_t i = 0; i < sizeof lite / sizeof *lite; i++) {
        char *got = qsql_dialect_pg(lite[i]);
        CHECK(got == NULL, "derived %s into %s", lite[i], got ? got : "");
        free(got);
    }
}

/* A statement on SQLite: bound integers, rows, NULL, text, reset. */
static void test_sqlite(void)
{
    sqlite3 *db = NULL;
    struct qsql_db d = { 0 };
    struct qsql q;
    CHECK_INT(sqlite3_open(":memory:", &db), SQLITE_OK);
    d.lite = db;
    CHECK_INT(qsql_prepare(&q, &d, "SELECT ?1 + ?2, NULL, 'x' || ?1", NULL), 0);
    qsql_bind(&q, 1, 40);
    qsql_bind(&q, 2, 2);
    CHECK_INT(qsql_step(&q), QSQL_ROW);
    CHECK_INT(qsql_int(&q, 0), 42);
    CHECK_TRUE(qsql_null(&q, 1));
    CHECK_STR(qsql_text(&q, 2), "x40");
    CHECK_INT(qsql_bytes(&q, 2), 3);
    CHECK_INT(qsql_step(&q), QSQL_DONE);
    qsql_reset(&q);
    qsql_bind(&q, 1, 1);
    CHECK_INT(qsql_step(&q), QSQL_ROW);
    CHECK_INT(qsql_int(&q, 0), 3);
    qsql_finalize(&q);
    CHECK_INT(qsql_prepare(&q, &d, "SELECT nope FROM nothing", NULL), -1);
    CHECK(strstr(qsql_errmsg(&d), "nothing") != NULL, "error: %s", qsql_errmsg(&d));
    CHECK_STR(qsql_name(&d), "");
    sqlite3_close(db);
}

int main(void)
{
    test_derived();
    test_refused();
    test_sqlite();
    return check_done("test_qsql");
}
