-- Per slab class at the end of one run: chunk size, used chunks, the bytes
-- the items asked for (mem_requested), what memcached pinned for them
-- (allocated = used_chunks * chunk_size), the rounding waste; then a TOTAL
-- row and memcached's global `bytes` (which must equal the summed
-- mem_requested). The run: @run (name or id), latest when unset; a run not
-- found gets a row that says so.
-- Used for results/exp1_*.csv and exp2_f*.csv.
WITH chosen AS (
  SELECT run_id FROM runs
  WHERE @run IS NULL OR CAST(run_id AS TEXT) = @run OR name = @run
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
  SELECT 'global_bytes', NULL, NULL, CAST(json_extract(stats, '$.bytes') AS INTEGER), NULL, NULL,
         NULL, 2, NULL
  FROM last_sample
  UNION ALL  -- no such run says so
  SELECT CASE WHEN @run IS NULL THEN 'no runs in this database'
              ELSE 'no run ' || @run || ' in this database (a name or id: SELECT run_id, name FROM runs lists them)' END,
         NULL, NULL, NULL, NULL, NULL, NULL, 3, NULL
  WHERE NOT EXISTS (SELECT 1 FROM chosen)) AS t
ORDER BY part, k;  -- a UNION ALL has no order of its own (PostgreSQL)
