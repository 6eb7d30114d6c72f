-- PostgreSQL (psql) form of schema/queries/exp2_growth_factor.sql, derived from it: the same
-- SQL, each parameter @NAME the psql variable NAME (unset or empty: NULL):
--   psql "$URI" -X -v a=NAME_OR_ID -v b=NAME_OR_ID -f pg/queries/exp2_growth_factor.sql
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
-- Experiment 2: the same worst-case items under two growth factors. One row
-- per run: the factor, how many classes the ladder has, how many the items
-- used, what they asked for and what memcached pinned, the waste.
-- The runs: @a and @b (names or ids).
SELECT r.name AS run, s.growth_factor, s.classes_in_ladder, s.classes_in_use,
       s.curr_items AS items, s.mem_requested, s.allocated, s.waste_bytes, s.waste_pct,
       s.bytes AS global_bytes
FROM run_summary s JOIN runs r USING (run_id)
WHERE r.run_id IN (
  (SELECT run_id FROM runs WHERE CAST(run_id AS TEXT) = nullif(:'a', '') OR name = nullif(:'a', '') ORDER BY run_id DESC LIMIT 1),
  (SELECT run_id FROM runs WHERE CAST(run_id AS TEXT) = nullif(:'b', '') OR name = nullif(:'b', '') ORDER BY run_id DESC LIMIT 1))
ORDER BY s.growth_factor DESC;
