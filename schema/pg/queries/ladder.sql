-- PostgreSQL (psql) form of schema/queries/ladder.sql, derived from it: the same
-- SQL, each parameter @NAME the psql variable NAME (unset or empty: NULL):
--   psql "$URI" -X -v run=NAME_OR_ID -f pg/queries/ladder.sql
-- Edit the SQLite file and derive this one again (schema/sqlgen.c;
-- tests/integration/test_queries_pg.py checks that nothing else differs).
\if :{?run}
\else
\set run ''
\endif
-- the SQLite file from here on, each @NAME a psql variable:
-- memcached's chunk ladder for a run: the one the proxy tagged its writes
-- with (view run_ladder; from `stats settings` for runs recorded before
-- that). The run: @run (name or id), latest when unset; a run not found
-- gets a row (origin) that says so.
WITH chosen AS (
  SELECT run_id FROM runs WHERE nullif(:'run', '') IS NULL OR CAST(run_id AS TEXT) = nullif(:'run', '') OR name = nullif(:'run', '')
  ORDER BY run_id DESC LIMIT 1)
SELECT l.class_id, l.chunk_size, l.origin
FROM run_ladder l JOIN chosen USING (run_id)
UNION ALL  -- no such run says so
SELECT NULL, NULL,
       CASE WHEN nullif(:'run', '') IS NULL THEN 'no runs in this database'
            ELSE 'no run ' || nullif(:'run', '') || ' in this database (a name or id: SELECT run_id, name FROM runs lists them)' END
WHERE NOT EXISTS (SELECT 1 FROM chosen)
ORDER BY class_id;
