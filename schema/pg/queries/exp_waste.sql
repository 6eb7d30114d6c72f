-- PostgreSQL (psql) form of schema/queries/exp_waste.sql: the same columns
-- and rows; written for PostgreSQL because `stats` is jsonb here (->>, not
-- json_extract) and because a UNION ALL has no order of its own (the rows
-- come as SQLite gives them: classes by id, TOTAL, global_bytes).
--   psql "$URI" -X -v run=NAME_OR_ID -f pg/queries/exp_waste.sql
-- The run: psql variable run (name or id), latest when unset or empty; a
-- run not found gets a row that says so.
\if :{?run}
\else
\set run ''
\endif
WITH chosen AS (
  SELECT run_id FROM runs
  WHERE nullif(:'run', '') IS NULL OR CAST(run_id AS TEXT) = nullif(:'run', '')
     OR name = nullif(:'run', '')
  ORDER BY run_id DESC LIMIT 1),
last_sample AS (
  SELECT s.* FROM samples s JOIN chosen USING (run_id)
  ORDER BY s.final DESC, s.t_ns DESC LIMIT 1),
classes AS (
  SELECT w.* FROM slab_waste w JOIN last_sample l USING (sample_id) WHERE w.used_chunks > 0)
SELECT class_id, chunk_size, used_chunks, mem_requested, allocated, waste_bytes, waste_pct
FROM (
  SELECT CAST(class_id AS TEXT) AS class_id, chunk_size, used_chunks, mem_requested, allocated,
         waste_bytes, waste_pct, 0 AS part, class_id AS k
  FROM classes
  UNION ALL
  SELECT 'TOTAL', NULL, sum(used_chunks), sum(mem_requested), sum(allocated), sum(waste_bytes),
         round(100.0 * sum(waste_bytes) / nullif(sum(allocated), 0), 2), 1, NULL
  FROM classes
  UNION ALL
  SELECT 'global_bytes', NULL, NULL, (stats ->> 'bytes')::bigint, NULL, NULL, NULL, 2, NULL
  FROM last_sample
  UNION ALL  -- no such run says so
  SELECT CASE WHEN nullif(:'run', '') IS NULL THEN 'no runs in this database'
              ELSE 'no run ' || nullif(:'run', '') || ' in this database (a name or id: SELECT run_id, name FROM runs lists them)' END,
         NULL, NULL, NULL, NULL, NULL, NULL, 3, NULL
  WHERE NOT EXISTS (SELECT 1 FROM chosen)) AS t
ORDER BY part, k;
