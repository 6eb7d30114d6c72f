-- PostgreSQL (psql) form of schema/queries/waste_by_class.sql, derived from it: the same
-- SQL, each parameter @NAME the psql variable NAME (unset or empty: NULL):
--   psql "$URI" -X -v run=NAME_OR_ID -f pg/queries/waste_by_class.sql
-- Edit the SQLite file and derive this one again (schema/sqlgen.c;
-- tests/integration/test_queries_pg.py checks that nothing else differs).
\if :{?run}
\else
\set run ''
\endif
-- the SQLite file from here on, each @NAME a psql variable:
-- Rounding waste per slab class at the end of a run (its last stats sample),
-- with a TOTAL row (last). The run: `.parameter set @run NAME_OR_ID` in sqlite3,
-- latest run when unset; a run not found gets a row that says so.
--   sqlite3 -header -column runs.db < schema/queries/waste_by_class.sql
WITH chosen AS (
  SELECT run_id FROM runs
  WHERE nullif(:'run', '') IS NULL OR CAST(run_id AS TEXT) = nullif(:'run', '') OR name = nullif(:'run', '')
  ORDER BY run_id DESC LIMIT 1),
last AS (
  SELECT w.* FROM slab_waste w JOIN chosen c USING (run_id)
  WHERE w.sample_id = (SELECT max(sample_id) FROM samples s WHERE s.run_id = w.run_id)
    AND w.used_chunks > 0)
SELECT class_id, chunk_size, used_chunks, mem_requested, allocated, waste_bytes, waste_pct
FROM (
  SELECT CAST(class_id AS TEXT) AS class_id, chunk_size, used_chunks, mem_requested, allocated,
         waste_bytes, waste_pct, class_id AS k
  FROM last
  UNION ALL
  SELECT 'TOTAL', NULL, sum(used_chunks), sum(mem_requested), sum(allocated), sum(waste_bytes),
         round(100.0 * sum(waste_bytes) / nullif(sum(allocated), 0), 2), NULL
  FROM last
  UNION ALL  -- no such run says so
  SELECT CASE WHEN nullif(:'run', '') IS NULL THEN 'no runs in this database'
              ELSE 'no run ' || nullif(:'run', '') || ' in this database (a name or id: SELECT run_id, name FROM runs lists them)' END,
         NULL, NULL, NULL, NULL, NULL, NULL, -1
  WHERE NOT EXISTS (SELECT 1 FROM chosen)) AS t
ORDER BY k IS NULL, k;
