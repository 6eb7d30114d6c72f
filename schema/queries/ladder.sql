-- memcached's chunk ladder for a run: the one the proxy tagged its writes
-- with (view run_ladder; from `stats settings` for runs recorded before
-- that). The run: @run (name or id), latest when unset.
SELECT l.class_id, l.chunk_size, l.origin
FROM run_ladder l
WHERE l.run_id = (SELECT run_id FROM runs WHERE @run IS NULL OR CAST(run_id AS TEXT) = @run OR name = @run
                  ORDER BY run_id DESC LIMIT 1)
ORDER BY l.class_id;
