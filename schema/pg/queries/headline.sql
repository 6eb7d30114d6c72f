-- PostgreSQL (psql) form of schema/queries/headline.sql, derived from it: the same
-- SQL, each parameter @NAME the psql variable NAME (unset or empty: NULL):
--   psql "$URI" -X -f pg/queries/headline.sql
-- Edit the SQLite file and derive this one again (schema/sqlgen.c;
-- tests/integration/test_queries_pg.py checks that nothing else differs).
-- the SQLite file from here on, each @NAME a psql variable:
-- The headline table of the three experiments, from the latest run of each
-- name: what results/summary.txt and the README show. A database without
-- those runs (a proxy's) gets one row that says so.
--   sqlite3 -header -column results/runs.db < schema/queries/headline.sql
WITH latest AS (
  SELECT s.*, r.name AS run FROM run_summary s JOIN runs r USING (run_id)
  WHERE r.run_id = (SELECT max(run_id) FROM runs r2 WHERE r2.name = r.name)),
big AS (    -- exp3: the class the last phase's writes went to, at the run's end
  SELECT l.run, l.slab_automove, cs.class_id, cs.total_pages, cs.evicted
  FROM latest l
  JOIN class_stats cs ON cs.sample_id = (SELECT max(sample_id) FROM samples WHERE run_id = l.run_id)
  WHERE cs.class_id = (SELECT s.class_id FROM sets s WHERE s.run_id = l.run_id AND s.class_id IS NOT NULL
                       ORDER BY s.seq DESC LIMIT 1))
SELECT '1 rounding waste' AS experiment,
       printf('same %,d items, chunk %d: %.1f %% of allocated wasted (just over the boundary) vs %.1f %% (snug fit); %.1f MB thrown away for identical data',
              w.curr_items, (SELECT max(chunk_size) FROM slab_waste WHERE sample_id =
                 (SELECT max(sample_id) FROM samples WHERE run_id = w.run_id) AND used_chunks > 0),
              w.waste_pct, b.waste_pct, w.waste_bytes / 1e6) AS headline
FROM latest w, latest b WHERE w.run = 'exp1_worst' AND b.run = 'exp1_best'
UNION ALL
SELECT '2 growth factor',
       printf('worst-case size: -f %s wastes %.1f %% across %d slab classes; -f %s wastes %.1f %% across %d classes',
              a.growth_factor, a.waste_pct, a.classes_in_ladder, b.growth_factor, b.waste_pct,
              b.classes_in_ladder)
FROM latest a, latest b WHERE a.run = 'exp2_f1_25' AND b.run = 'exp2_f1_08'
UNION ALL
SELECT '3 calcification',
       printf('same large working set: automove=%d stays at %d page(s), %,d large-class evictions; automove=%d rebalanced to %d pages, %,d evictions',
              a.slab_automove, a.total_pages, a.evicted, b.slab_automove, b.total_pages, b.evicted)
FROM big a, big b WHERE a.run = 'exp3_automove0' AND b.run = 'exp3_automove2'
UNION ALL  -- nothing found says so
SELECT 'none',
       'no experiment runs in this database: headline.sql reads the runs `slabtap experiment` names '
       || '(exp1_worst, exp1_best, exp2_f1_25, exp2_f1_08, exp3_automove0, exp3_automove2); '
       || 'for a proxy''s runs try waste_by_class.sql, top_prefixes.sql or compare_runs.sql'
WHERE NOT EXISTS (SELECT 1 FROM runs WHERE name IN ('exp1_worst', 'exp1_best', 'exp2_f1_25',
                                                    'exp2_f1_08', 'exp3_automove0',
                                                    'exp3_automove2'));
