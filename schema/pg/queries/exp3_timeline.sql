-- PostgreSQL (psql) form of schema/queries/exp3_timeline.sql, derived from it: the same
-- SQL, each parameter @NAME the psql variable NAME (unset or empty: NULL):
--   psql "$URI" -X -v a=NAME_OR_ID -v b=NAME_OR_ID -f pg/queries/exp3_timeline.sql
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
-- Experiment 3 over time: for each run (@a, @b: names or ids) and each
-- stats sample, the seconds since the run started, the large class's pages
-- and its evictions so far. The large class is the one the run's last
-- write went to (the large working set). What results/exp3_timeline.csv
-- and the chart results/exp3_calcification.svg show.
WITH runs_ AS MATERIALIZED (
  SELECT r.run_id, r.name, r.started_ns, rs.slab_automove,
         (SELECT s.class_id FROM sets s WHERE s.run_id = r.run_id AND s.class_id IS NOT NULL
          ORDER BY s.seq DESC LIMIT 1) AS large_class
  FROM runs r JOIN run_settings rs USING (run_id)
  WHERE r.run_id IN (
    (SELECT run_id FROM runs WHERE CAST(run_id AS TEXT) = nullif(:'a', '') OR name = nullif(:'a', '') ORDER BY run_id DESC LIMIT 1),
    (SELECT run_id FROM runs WHERE CAST(run_id AS TEXT) = nullif(:'b', '') OR name = nullif(:'b', '') ORDER BY run_id DESC LIMIT 1)))
SELECT r.name AS run, r.slab_automove AS automove, r.large_class,
       round((sm.t_ns - r.started_ns) / 1e9, 2) AS seconds,
       coalesce(cs.total_pages, 0) AS large_class_pages,
       coalesce(cs.evicted, 0) AS large_class_evictions
FROM runs_ r
JOIN samples sm USING (run_id)
LEFT JOIN class_stats cs ON cs.sample_id = sm.sample_id AND cs.class_id = r.large_class
ORDER BY r.slab_automove, sm.t_ns;
