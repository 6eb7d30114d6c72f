-- One row per run of the experiments: memcached's version and command
-- line, slabtap's version, the workload, its SHA-256 fingerprint, counts.
-- Every run that has run_meta rows (the experiment runner writes them).
SELECT r.run_id, r.name AS run,
       max(CASE WHEN m.key = 'memcached_version' THEN m.value END) AS memcached_version,
       max(CASE WHEN m.key = 'memcached_flags' THEN m.value END) AS memcached_flags,
       max(CASE WHEN m.key = 'memcached_command' THEN m.value END) AS memcached_command,
       max(CASE WHEN m.key = 'slabtap_version' THEN m.value END) AS slabtap_version,
       max(CASE WHEN m.key = 'workload' THEN m.value END) AS workload,
       max(CASE WHEN m.key = 'workload_sha256' THEN m.value END) AS workload_sha256,
       max(CASE WHEN m.key = 'seed' THEN m.value END) AS seed,
       max(CASE WHEN m.key = 'ops_sent' THEN m.value END) AS ops_sent,
       max(CASE WHEN m.key = 'writes_sent' THEN m.value END) AS writes_sent,
       r.rows_recorded, r.rows_dropped,
       (SELECT CAST(json_extract(stats, '$.curr_items') AS INTEGER) FROM samples s WHERE s.run_id = r.run_id
        ORDER BY s.final DESC, s.t_ns DESC LIMIT 1) AS items_at_end,
       max(CASE WHEN m.key = 'connections' THEN m.value END) AS connections,
       max(CASE WHEN m.key = 'pipeline' THEN m.value END) AS pipeline,
       max(CASE WHEN m.key = 'load_seconds' THEN m.value END) AS load_seconds
FROM runs r JOIN run_meta m USING (run_id)
GROUP BY r.run_id
ORDER BY r.run_id;
