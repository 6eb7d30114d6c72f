-- Two runs side by side: memcached version and settings, classes, pages,
-- allocated vs requested bytes, waste, evictions, writes. Pick them with
-- `.parameter set @a NAME_OR_ID` and `.parameter set @b NAME_OR_ID`; the two
-- latest runs when unset.
WITH a AS (SELECT * FROM run_summary
           WHERE (@a IS NULL AND run_id = (SELECT run_id FROM runs ORDER BY run_id DESC
                                           LIMIT 1 OFFSET 1))
              OR run_id = @a OR name = @a ORDER BY run_id DESC LIMIT 1),
     b AS (SELECT * FROM run_summary
           WHERE (@b IS NULL AND run_id = (SELECT max(run_id) FROM runs))
              OR run_id = @b OR name = @b ORDER BY run_id DESC LIMIT 1)
SELECT 'run' AS metric, a.name AS a, b.name AS b FROM a, b
UNION ALL SELECT 'memcached_version', a.memcached_version, b.memcached_version FROM a, b
UNION ALL SELECT 'growth_factor', a.growth_factor, b.growth_factor FROM a, b
UNION ALL SELECT 'chunk_size_min', a.chunk_size_min, b.chunk_size_min FROM a, b
UNION ALL SELECT 'slab_automove', a.slab_automove, b.slab_automove FROM a, b
UNION ALL SELECT 'classes_in_use', a.classes_in_use, b.classes_in_use FROM a, b
UNION ALL SELECT 'pages', a.pages, b.pages FROM a, b
UNION ALL SELECT 'allocated', a.allocated, b.allocated FROM a, b
UNION ALL SELECT 'mem_requested', a.mem_requested, b.mem_requested FROM a, b
UNION ALL SELECT 'waste_bytes', a.waste_bytes, b.waste_bytes FROM a, b
UNION ALL SELECT 'waste_pct', a.waste_pct, b.waste_pct FROM a, b
UNION ALL SELECT 'evictions', a.evictions, b.evictions FROM a, b
UNION ALL SELECT 'curr_items', a.curr_items, b.curr_items FROM a, b
UNION ALL SELECT 'writes_recorded', a.writes_recorded, b.writes_recorded FROM a, b
UNION ALL SELECT 'rows_dropped', a.rows_dropped, b.rows_dropped FROM a, b;
