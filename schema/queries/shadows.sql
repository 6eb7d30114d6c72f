-- Shadow memcacheds (issue 23: slabtap proxy --shadow "FLAGS"): per slab
-- class, the primary beside each shadow in their latest samples -- chunk
-- size, pages, waste (used chunks x chunk size - mem_requested) and
-- evictions (memcached's counters) -- then a TOTAL row per shadow: pages,
-- waste, evictions and hit ratio (%) of each over the shadow's data (since
-- its last (re)start; the primary's since the run's first sample). A class
-- id is a place in each one's ladder: with other -f its chunk size differs.
-- A 1/N-sampled shadow ("1/N FLAGS") holds 1/N of the keys in 1/N of the
-- memory. The run: `.parameter set @run NAME_OR_ID` in sqlite3, latest run
-- when unset; a run not found, or without shadows, gets a row that says so.
--   sqlite3 -header -column runs.db < schema/queries/shadows.sql
WITH chosen AS (
  SELECT run_id FROM runs
  WHERE @run IS NULL OR CAST(run_id AS TEXT) = @run OR name = @run
  ORDER BY run_id DESC LIMIT 1),
c AS (SELECT t.* FROM target_compare t JOIN chosen USING (run_id)),
tot AS (SELECT t.* FROM target_totals t JOIN chosen USING (run_id))
SELECT target, class_id, primary_chunk_size, shadow_chunk_size, primary_pages, shadow_pages,
       primary_waste_bytes, shadow_waste_bytes, primary_evicted, shadow_evicted,
       primary_hit_pct, shadow_hit_pct
FROM (
  SELECT target, CAST(class_id AS TEXT) AS class_id, primary_chunk_size, shadow_chunk_size,
         primary_pages, shadow_pages, primary_waste_bytes, shadow_waste_bytes, primary_evicted,
         shadow_evicted, NULL AS primary_hit_pct, NULL AS shadow_hit_pct, class_id AS k
  FROM c
  UNION ALL
  SELECT s.target, 'TOTAL', NULL, NULL, p.pages, s.pages, p.waste_bytes, s.waste_bytes,
         p.evictions, s.evictions, round(100.0 * p.hit_ratio, 2), round(100.0 * s.hit_ratio, 2),
         NULL
  FROM tot s JOIN tot p ON p.target = 'primary'
  WHERE s.target <> 'primary'
  UNION ALL  -- a run without shadows says so
  SELECT 'run ' || CAST(chosen.run_id AS TEXT) || ' has no shadows (slabtap proxy --shadow "FLAGS")',
         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, -1
  FROM chosen
  WHERE NOT EXISTS (SELECT 1 FROM targets t WHERE t.run_id = chosen.run_id)
  UNION ALL  -- no such run says so
  SELECT CASE WHEN @run IS NULL THEN 'no runs in this database'
              ELSE 'no run ' || @run || ' in this database (a name or id: SELECT run_id, name FROM runs lists them)' END,
         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, -1
  WHERE NOT EXISTS (SELECT 1 FROM chosen)) AS t
ORDER BY target, k IS NULL, k;
