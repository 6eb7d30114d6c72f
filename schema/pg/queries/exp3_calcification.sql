-- PostgreSQL (psql) form of schema/queries/exp3_calcification.sql, derived from it: the same
-- SQL, each parameter @NAME the psql variable NAME (unset or empty: NULL):
--   psql "$URI" -X -v a=NAME_OR_ID -v b=NAME_OR_ID -f pg/queries/exp3_calcification.sql
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
-- Experiment 3: calcification. Per run (automove mode) and phase: global
-- evictions during the phase, the large class's pages at the phase's end,
-- the small class's free chunks at the phase's end, and the large class's
-- evictions during the phase. The small class is where the first phase's
-- writes went, the large class where the last phase's writes went (from
-- the model's class tag on every recorded write). The runs: @a and @b.
WITH runs_ AS (
  SELECT run_id, name FROM runs
  WHERE run_id IN (
    (SELECT run_id FROM runs WHERE CAST(run_id AS TEXT) = nullif(:'a', '') OR name = nullif(:'a', '') ORDER BY run_id DESC LIMIT 1),
    (SELECT run_id FROM runs WHERE CAST(run_id AS TEXT) = nullif(:'b', '') OR name = nullif(:'b', '') ORDER BY run_id DESC LIMIT 1))),
phase_class AS (   -- the class most writes of each phase went to
  SELECT p.run_id, p.phase_id, p.name,
         (SELECT s.class_id FROM sets s WHERE s.run_id = p.run_id AND s.t_ns >= p.started_ns
            AND (p.ended_ns IS NULL OR s.t_ns < p.ended_ns) AND s.class_id IS NOT NULL
          GROUP BY s.class_id ORDER BY count(*) DESC LIMIT 1) AS class_id
  FROM phases p JOIN runs_ USING (run_id)),
small AS (SELECT run_id, class_id FROM phase_class pc
          WHERE phase_id = (SELECT min(phase_id) FROM phases WHERE run_id = pc.run_id)),
large AS (SELECT run_id, class_id FROM phase_class pc
          WHERE phase_id = (SELECT max(phase_id) FROM phases WHERE run_id = pc.run_id)),
bounds AS (
  SELECT p.run_id, p.phase_id, p.name,
         (SELECT max(sample_id) FROM samples s WHERE s.run_id = p.run_id AND s.t_ns < p.started_ns)
           AS before_id,
         (SELECT max(sample_id) FROM samples s WHERE s.run_id = p.run_id
            AND (s.phase_id = p.phase_id OR (s.final = 1 AND p.ended_ns >= s.t_ns))) AS end_id
  FROM phases p JOIN runs_ USING (run_id))
SELECT r.name AS run, rs.slab_automove AS automove, b.name AS phase,
       sm.class_id AS small_class, lg.class_id AS large_class,
       CAST(json_extract(e.stats, '$.evictions') AS INTEGER)
       - coalesce(CAST(json_extract(f.stats, '$.evictions') AS INTEGER), 0) AS global_evictions,
       coalesce((SELECT total_pages FROM class_stats c WHERE c.sample_id = b.end_id
                 AND c.class_id = lg.class_id), 0) AS large_class_pages,
       (SELECT free_chunks FROM class_stats c WHERE c.sample_id = b.end_id AND c.class_id = sm.class_id)
         AS small_class_free_chunks,
       coalesce((SELECT evicted FROM class_stats c WHERE c.sample_id = b.end_id AND c.class_id = lg.class_id), 0)
       - coalesce((SELECT evicted FROM class_stats c WHERE c.sample_id = b.before_id AND c.class_id = lg.class_id), 0)
         AS large_class_evictions,
       CAST(json_extract(e.stats, '$.slabs_moved') AS INTEGER)
       - coalesce(CAST(json_extract(f.stats, '$.slabs_moved') AS INTEGER), 0) AS slabs_moved
FROM bounds b
JOIN runs_ r USING (run_id)
JOIN run_settings rs USING (run_id)
JOIN small sm USING (run_id)
JOIN large lg USING (run_id)
JOIN samples e ON e.sample_id = b.end_id
LEFT JOIN samples f ON f.sample_id = b.before_id
ORDER BY rs.slab_automove, b.run_id, b.phase_id;  -- PostgreSQL numbers phases per run
