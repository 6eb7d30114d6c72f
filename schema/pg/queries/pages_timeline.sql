-- PostgreSQL (psql) form of schema/queries/pages_timeline.sql, derived from it: the same
-- SQL, each parameter @NAME the psql variable NAME (unset or empty: NULL):
--   psql "$URI" -X -v run=NAME_OR_ID -f pg/queries/pages_timeline.sql
-- Edit the SQLite file and derive this one again (schema/sqlgen.c;
-- tests/integration/test_queries_pg.py checks that nothing else differs).
\if :{?run}
\else
\set run ''
\endif
-- the SQLite file from here on, each @NAME a psql variable:
-- Pages per slab class over time (calcification: a class that took every
-- page keeps them). One row per sample and class that holds pages.
-- The run: `.parameter set @run NAME_OR_ID`, latest run when unset; a run
-- not found gets a row (phase) that says so.
--   sqlite3 -header -csv runs.db < schema/queries/pages_timeline.sql
WITH chosen AS (
  SELECT run_id, started_ns FROM runs
  WHERE nullif(:'run', '') IS NULL OR CAST(run_id AS TEXT) = nullif(:'run', '') OR name = nullif(:'run', '')
  ORDER BY run_id DESC LIMIT 1)
SELECT round((w.t_ns - c.started_ns) / 1e9, 3) AS seconds, p.name AS phase, w.class_id AS class_id,
       w.chunk_size, w.total_pages, w.used_chunks, cs.free_chunks, cs.evicted
FROM slab_waste w
JOIN chosen c USING (run_id)
JOIN class_stats cs ON cs.sample_id = w.sample_id AND cs.class_id = w.class_id
LEFT JOIN phases p ON p.run_id = w.run_id AND p.phase_id = w.phase_id
WHERE w.total_pages > 0
UNION ALL  -- no such run says so
SELECT NULL,
       CASE WHEN nullif(:'run', '') IS NULL THEN 'no runs in this database'
            ELSE 'no run ' || nullif(:'run', '') || ' in this database (a name or id: SELECT run_id, name FROM runs lists them)' END,
       NULL, NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM chosen)
ORDER BY seconds, class_id;
