-- PostgreSQL (psql) form of schema/queries/compare_runs.sql, derived from it: the same
-- SQL, each parameter @NAME the psql variable NAME (unset or empty: NULL):
--   psql "$URI" -X -v a=NAME_OR_ID -v b=NAME_OR_ID -f pg/queries/compare_runs.sql
-- Edit the SQLite file and derive this one again (schema/sqlgen.c;
-- tests/integration/test_queries_pg.py checks that nothing else differs).
\if :{?a}
\else
\set a ''
\endif
\if :{?b}
\else
\set b ''
\endif
-- the SQLite file from here on, each @NAME a psql variable:
-- Two runs side by side: memcached version and settings, classes, pages,
-- allocated vs requested bytes, waste, evictions, writes. Pick them with
-- `.parameter set @a NAME_OR_ID` and `.parameter set @b NAME_OR_ID`; the two
-- latest runs when unset. A run not found (or a database with one run) gets
-- a row `note` that says so.
WITH a AS (SELECT * FROM run_summary
           WHERE (nullif(:'a', '') IS NULL AND run_id = (SELECT run_id FROM runs ORDER BY run_id DESC
                                           LIMIT 1 OFFSET 1))
              OR CAST(run_id AS TEXT) = nullif(:'a', '') OR name = nullif(:'a', '') ORDER BY run_id DESC LIMIT 1),
     b AS (SELECT * FROM run_summary
           WHERE (nullif(:'b', '') IS NULL AND run_id = (SELECT max(run_id) FROM runs))
              OR CAST(run_id AS TEXT) = nullif(:'b', '') OR name = nullif(:'b', '') ORDER BY run_id DESC LIMIT 1)
SELECT 'run' AS metric, a.name AS a, b.name AS b FROM a, b
UNION ALL SELECT 'memcached_version', a.memcached_version, b.memcached_version FROM a, b
UNION ALL SELECT 'growth_factor', CAST(a.growth_factor AS TEXT), CAST(b.growth_factor AS TEXT) FROM a, b
UNION ALL SELECT 'chunk_size_min', CAST(a.chunk_size_min AS TEXT), CAST(b.chunk_size_min AS TEXT) FROM a, b
UNION ALL SELECT 'slab_automove', CAST(a.slab_automove AS TEXT), CAST(b.slab_automove AS TEXT) FROM a, b
UNION ALL SELECT 'classes_in_use', CAST(a.classes_in_use AS TEXT), CAST(b.classes_in_use AS TEXT) FROM a, b
UNION ALL SELECT 'pages', CAST(a.pages AS TEXT), CAST(b.pages AS TEXT) FROM a, b
UNION ALL SELECT 'allocated', CAST(a.allocated AS TEXT), CAST(b.allocated AS TEXT) FROM a, b
UNION ALL SELECT 'mem_requested', CAST(a.mem_requested AS TEXT), CAST(b.mem_requested AS TEXT) FROM a, b
UNION ALL SELECT 'waste_bytes', CAST(a.waste_bytes AS TEXT), CAST(b.waste_bytes AS TEXT) FROM a, b
UNION ALL SELECT 'waste_pct', CAST(a.waste_pct AS TEXT), CAST(b.waste_pct AS TEXT) FROM a, b
UNION ALL SELECT 'evictions', CAST(a.evictions AS TEXT), CAST(b.evictions AS TEXT) FROM a, b
UNION ALL SELECT 'curr_items', CAST(a.curr_items AS TEXT), CAST(b.curr_items AS TEXT) FROM a, b
UNION ALL SELECT 'writes_recorded', CAST(a.writes_recorded AS TEXT), CAST(b.writes_recorded AS TEXT) FROM a, b
UNION ALL SELECT 'rows_dropped', CAST(a.rows_dropped AS TEXT), CAST(b.rows_dropped AS TEXT) FROM a, b
UNION ALL  -- nothing found says so
SELECT 'note',
       CASE WHEN (nullif(:'a', '') IS NULL OR nullif(:'b', '') IS NULL) AND (SELECT count(*) FROM runs) < 2
            THEN 'this database has ' || CAST((SELECT count(*) FROM runs) AS TEXT)
                 || ' run(s): compare_runs.sql compares two, given as parameters a and b'
                 || ' (a name or id each)'
            WHEN NOT EXISTS (SELECT 1 FROM a)
            THEN 'no run ' || coalesce(nullif(:'a', ''), '(the second latest)') || ' (a) in this database'
                 || ' (a name or id: SELECT run_id, name FROM runs lists them)'
            ELSE 'no run ' || coalesce(nullif(:'b', ''), '(the latest)') || ' (b) in this database'
                 || ' (a name or id: SELECT run_id, name FROM runs lists them)' END,
       NULL
WHERE NOT EXISTS (SELECT 1 FROM a) OR NOT EXISTS (SELECT 1 FROM b);
