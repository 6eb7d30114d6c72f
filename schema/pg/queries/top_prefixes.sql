-- PostgreSQL (psql) form of schema/queries/top_prefixes.sql, derived from it: the same
-- SQL, each parameter @NAME the psql variable NAME (unset or empty: NULL):
--   psql "$URI" -X -v run=NAME_OR_ID -f pg/queries/top_prefixes.sql
-- Edit the SQLite file and derive this one again (schema/sqlgen.c;
-- tests/integration/test_queries_pg.py checks that nothing else differs).
\if :{?run}
\else
\set run ''
\endif
-- the SQLite file from here on, each @NAME a psql variable:
-- Key prefixes by bytes written, with the chunk bytes those writes pinned
-- (predicted class chunk size) and the rounding waste they carry. The prefix
-- is the text before the first ':' '/' '.' or '|' (what --keys prefix keeps;
-- with --keys full it is cut here; with --keys hash there is none).
-- The run: `.parameter set @run NAME_OR_ID`, latest run when unset; a run
-- not found gets a row (prefix) that says so.
WITH chosen AS (
  SELECT run_id, key_mode FROM runs
  WHERE nullif(:'run', '') IS NULL OR CAST(run_id AS TEXT) = nullif(:'run', '') OR name = nullif(:'run', '')
  ORDER BY run_id DESC LIMIT 1),
chunk AS (  -- chunk size per class from the run's last sample
  SELECT w.class_id, w.chunk_size FROM slab_waste w JOIN chosen c USING (run_id)
  WHERE w.sample_id = (SELECT max(sample_id) FROM samples s WHERE s.run_id = w.run_id)),
w AS (
  SELECT s.*,
         CASE WHEN s.key IS NULL THEN '(hash only)'
              WHEN s.key = '' THEN '(no prefix)'
              -- --keys prefix kept the prefix itself: it has no delimiter left
              WHEN c.key_mode = 'prefix' THEN s.key
              ELSE coalesce(nullif(substr(s.key, 1, min(
                     coalesce(nullif(instr(s.key, ':'), 0), 1 << 30),
                     coalesce(nullif(instr(s.key, '/'), 0), 1 << 30),
                     coalesce(nullif(instr(s.key, '.'), 0), 1 << 30),
                     coalesce(nullif(instr(s.key, '|'), 0), 1 << 30)) - 1), s.key), '(no prefix)')
         END AS prefix
  FROM sets s JOIN chosen c USING (run_id)
  WHERE s.value_len IS NOT NULL)
SELECT prefix, count(*) AS writes, count(DISTINCT key_hash) AS distinct_keys,
       sum(value_len) AS value_bytes, sum(chunk.chunk_size) AS chunk_bytes,
       round(100.0 * (sum(chunk.chunk_size) - sum(48 + key_len + 1 + value_len + 2 + 8))
             / nullif(sum(chunk.chunk_size), 0), 2) AS approx_waste_pct
FROM w LEFT JOIN chunk USING (class_id)
GROUP BY prefix
UNION ALL  -- no such run says so
SELECT CASE WHEN nullif(:'run', '') IS NULL THEN 'no runs in this database'
            ELSE 'no run ' || nullif(:'run', '') || ' in this database (a name or id: SELECT run_id, name FROM runs lists them)' END,
       NULL, NULL, NULL, NULL, NULL
WHERE NOT EXISTS (SELECT 1 FROM chosen)
ORDER BY value_bytes DESC
LIMIT 20;
