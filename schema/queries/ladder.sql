-- memcached's chunk ladder for a run, from its recorded `stats settings`
-- (view run_ladder). The run: @run (name or id), latest when unset.
SELECT l.class_id, l.chunk_size
FROM run_ladder l
WHERE l.run_id = (SELECT run_id FROM runs WHERE @run IS NULL OR run_id = @run OR name = @run
                  ORDER BY run_id DESC LIMIT 1)
ORDER BY l.class_id;
