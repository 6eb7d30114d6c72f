-- Written once in schema/schema.sql.in; schema/sqlgen.c derives this file
-- (its rule is there). Edit that file, then: cmake --build build --target sql_files

-- slabtap schema for SQLite: every table and view (the file, its views, its
-- version); schema/pg/schema.sql is the same for PostgreSQL.
-- Embedded into the binary at build time and applied by store_open() after
-- the upgrade steps in proxy/record/store.c (store_upgrade) have brought an older
-- file up to date. Tables are only ever CREATEd IF NOT EXISTS; views are
-- dropped and recreated so they always match the binary that opened the file.
-- The version lives in PRAGMA user_version (bumped at the end of this file).
-- store_open runs the upgrade steps and this file in one transaction, so a
-- failed upgrade leaves the file as it was; WAL mode is set before that.

-- One row per proxy start (or experiment run).
CREATE TABLE IF NOT EXISTS runs (
  run_id        INTEGER PRIMARY KEY,
  name          TEXT NOT NULL,
  started_ns    INTEGER NOT NULL,          -- unix time, nanoseconds
  ended_ns      INTEGER,                   -- NULL while running or after a crash
  upstream      TEXT NOT NULL,             -- host:port of memcached
  slabtap_version TEXT NOT NULL,
  options       TEXT NOT NULL,             -- the proxy's command line options
  key_mode      TEXT NOT NULL,             -- full | prefix | hash
  rows_recorded INTEGER NOT NULL DEFAULT 0,   -- rows written to `writes` (view `sets`)
  rows_dropped  INTEGER NOT NULL DEFAULT 0,
  crashed       INTEGER NOT NULL DEFAULT 0  -- 1: never ended (killed); marked, with
                                           -- its rows counted, at the next open (v5)
);

-- Writes (set add replace append prepend cas, ms) and deletes, touches,
-- incr/decr/ma: one row each in `writes`, read back through the view `sets`
-- (below), which presents every column of the v3 `sets` table. The format
-- (schema v4) spends about 30 bytes per row on disk where v3 spent 64:
--
--   rowid       write_runs.base + seq: the run (whose rowid range holds it)
--               and the sequence number, for free. The writer inserts each
--               batch in seq order, and a rowid table filled in ascending
--               order packs its pages full.
--   key_hash    64-bit FNV-1a of the key as sent (signed).
--   key_ref     INTEGER: key_prefixes.prefix_id (--keys prefix); TEXT: the
--               key as recorded (--keys full, or a full prefix dictionary);
--               NULL: no key text (--keys hash).
--   op          key_len | class_id << 8 | cmd_id << 14 | answer_id << 20.
--               class_id 0: NULL; cmd_id 0 / answer_id 0: the command / the
--               answer is in `extra` (an answer with a digit in it, such as
--               an incr result or a meta opaque, or beyond the dictionary).
--   sizes       value_len and latency, each + 1 (0: NULL), packed by width:
--               w | unit << 5 | (value_len + 1) << 6 | (latency + 1) << (6 + w)
--               with w the bit length of value_len + 1. Latency is kept in
--               microseconds (unit 0; rounded) or, for rows upgraded from v3
--               whose nanoseconds are not whole microseconds, in ns (unit 1).
--   extra       NULL: flags 0 and exptime 0 (where the command has them,
--               cmds.has_flags / has_exptime); INTEGER: flags << 32 | exptime
--               (low 32 bits, signed); TEXT: a JSON object of what the packed
--               columns could not hold (answer; cmd and ms_mode; key_len,
--               value_len, latency_ns, class_id; flags and exptime unless both
--               are 0 where the command has them), which overrides them.
--
-- conn_id and t_ns are the same for every request of one read from one
-- client: `arrivals` holds them once per run of consecutive writes that share
-- them. A write's conn_id and t_ns are those of the arrival with the highest
-- rowid at or below its own, within its run's range.

-- Dictionaries. Filled here with the common values; the writer adds others.
CREATE TABLE IF NOT EXISTS cmds (
  cmd_id      INTEGER PRIMARY KEY,          -- 1..63 (op keeps 6 bits)
  cmd         TEXT NOT NULL,
  ms_mode     TEXT NOT NULL DEFAULT '',     -- ms M<mode> flag; '' for none
  has_flags   INTEGER NOT NULL DEFAULT 0,   -- the command carries flags
  has_exptime INTEGER NOT NULL DEFAULT 0,   -- ... and an exptime
  UNIQUE (cmd, ms_mode)
);
INSERT OR IGNORE INTO cmds (cmd_id, cmd, ms_mode, has_flags, has_exptime) VALUES
  (1, 'set', '', 1, 1), (2, 'add', '', 1, 1), (3, 'replace', '', 1, 1),
  (4, 'append', '', 1, 1), (5, 'prepend', '', 1, 1), (6, 'cas', '', 1, 1),
  (7, 'ms', '', 1, 1), (8, 'ms', 'E', 1, 1), (9, 'ms', 'A', 1, 1), (10, 'ms', 'P', 1, 1),
  (11, 'ms', 'R', 1, 1), (12, 'ms', 'S', 1, 1), (13, 'delete', '', 0, 0), (14, 'md', '', 0, 0),
  (15, 'touch', '', 0, 1), (16, 'incr', '', 0, 0), (17, 'decr', '', 0, 0), (18, 'ma', '', 0, 0);

CREATE TABLE IF NOT EXISTS answers (
  answer_id INTEGER PRIMARY KEY,            -- 1..7 keep op in 3 bytes
  answer    TEXT NOT NULL UNIQUE
);
INSERT OR IGNORE INTO answers (answer_id, answer) VALUES
  (1, 'STORED'), (2, 'noreply'), (3, 'quiet'), (4, 'HD'), (5, 'NOT_STORED'), (6, 'EXISTS'),
  (7, 'NOT_FOUND'), (8, 'DELETED'), (9, 'TOUCHED'), (10, 'NS'), (11, 'EX'), (12, 'NF'),
  (13, 'upstream_error'), (14, 'no_answer'), (15, 'ERROR'),
  (16, 'SERVER_ERROR object too large for cache'),
  (17, 'SERVER_ERROR out of memory storing object'), (18, 'CLIENT_ERROR bad data chunk'),
  (19, 'CLIENT_ERROR bad command line format');

CREATE TABLE IF NOT EXISTS key_prefixes (
  prefix_id INTEGER PRIMARY KEY,
  prefix    TEXT NOT NULL UNIQUE
);

-- Where each run's writes are: rowids [lo, hi) of `writes`, seq = rowid - base.
CREATE TABLE IF NOT EXISTS write_runs (
  run_id INTEGER PRIMARY KEY,               -- runs.run_id (no FK: v3 rows of
                                            -- another tool may have no run)
  base   INTEGER NOT NULL,
  lo     INTEGER NOT NULL,
  hi     INTEGER NOT NULL,                  -- 2^62 while the run is the last
  t0     INTEGER NOT NULL                   -- unix ns; arrivals.dt counts from it
);

CREATE TABLE IF NOT EXISTS writes (
  key_hash INTEGER NOT NULL,
  key_ref,                                  -- no type: INTEGER or TEXT as stored
  op       INTEGER NOT NULL,
  sizes    INTEGER NOT NULL,
  extra                                     -- no type: NULL, INTEGER or TEXT
);

CREATE TABLE IF NOT EXISTS arrivals (
  dt      INTEGER NOT NULL,                 -- t_ns - write_runs.t0
  conn_id INTEGER NOT NULL
);

-- Reads (issue 19): one row per key a get gets gat gats mg asked for, read
-- back through the view `reads` (below). About 15 bytes per read on disk
-- on a pipelined get-heavy load (docs/recording-reads.md):
--
--   read_rows.rowid   read_runs.base + seq (seq: the run's read sequence,
--                     from 1, given at parse time, each key of a multiget
--                     its own number in key order).
--   key_id            read_keys.key_id: the key once per file (the writer
--                     remembers 262,144 of them; a key it forgot gets a new
--                     row -- correct, only bigger).
--   op                hit | has_flags << 1 | cmd << 2 | class_id << 5
--                     | aw_delta << 11 | (value_len + 1) << 15; cmd 1 get,
--                     2 gets, 3 gat, 4 gats, 5 mg; class_id 0 and
--                     value_len + 1 = 0: NULL; aw_delta (0..15): the read's
--                     after_write minus its arrival's.
--   read_extra        flags << 32 | exptime (low 32 bits, signed), keyed by
--                     the read's rowid, only where one of them is not 0:
--                     flags where the answer told them (has_flags), exptime
--                     for gat/gats.
--
-- read_arrivals holds (time, conn_id, after_write) once per run of
-- consecutive reads that share time and connection and whose after_write
-- is within 15 of the arrival's: a read's are those of the arrival with the
-- highest rowid at or below its own, within its run's range.
CREATE TABLE IF NOT EXISTS read_runs (
  run_id INTEGER PRIMARY KEY,               -- runs.run_id
  base   INTEGER NOT NULL,
  lo     INTEGER NOT NULL,
  hi     INTEGER NOT NULL,                  -- 2^62 while the run is the last
  t0     INTEGER NOT NULL                   -- unix ns; read_arrivals.dt counts from it
);
CREATE TABLE IF NOT EXISTS read_keys (
  key_id   INTEGER PRIMARY KEY,
  key_hash INTEGER NOT NULL,                -- 64-bit FNV-1a of the key as sent (signed)
  key_len  INTEGER NOT NULL,
  key_ref                                   -- as writes.key_ref: prefix_id, text, or NULL
);
CREATE TABLE IF NOT EXISTS read_rows (
  key_id INTEGER NOT NULL,
  op     INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS read_extra (
  extra INTEGER NOT NULL                    -- rowid: the read's
);
CREATE TABLE IF NOT EXISTS read_arrivals (
  dt          INTEGER NOT NULL,             -- t_ns - read_runs.t0
  conn_id     INTEGER NOT NULL,
  after_write INTEGER NOT NULL              -- the write seq the reads came after
);
-- Reads per run, minute and slab class, every read counted (sampled-out
-- keys too): a hit in the class of the item returned, a miss in the class
-- the key was last written (or read) in -- 0 when unknown: never seen, or
-- beyond the writer's map of 786,432 keys.
CREATE TABLE IF NOT EXISTS agg_reads (
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  minute      INTEGER NOT NULL,            -- unix minutes
  class_id    INTEGER NOT NULL,
  reads       INTEGER NOT NULL,
  hits        INTEGER NOT NULL,
  misses      INTEGER NOT NULL,
  PRIMARY KEY (run_id, minute, class_id)
) WITHOUT ROWID;

-- Reads are also counted: one row per run, second, command (every read,
-- with or without --reads).
CREATE TABLE IF NOT EXISTS get_counts (
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  second      INTEGER NOT NULL,            -- unix seconds
  cmd         TEXT NOT NULL,               -- get gets gat gats mg
  requests    INTEGER NOT NULL,
  keys        INTEGER NOT NULL,
  hits        INTEGER NOT NULL,
  misses      INTEGER NOT NULL,
  bytes_returned INTEGER NOT NULL,
  PRIMARY KEY (run_id, second, cmd)
) WITHOUT ROWID;

-- Write aggregates, kept by the writer beside the rows (proxy/record/wagg.h)
-- so that the live page answers from a few rows per minute instead of
-- scanning a run's writes; a run listed in agg_runs has them from its first
-- write on (runs recorded before have none). Written with the batches at
-- most every 250 ms, so a crash loses at most what it loses of the rows.
CREATE TABLE IF NOT EXISTS agg_runs (
  run_id      INTEGER PRIMARY KEY REFERENCES runs(run_id)
);
-- Writes that store a whole item (set add replace cas, ms but append and
-- prepend pieces) by size: body = key length + value length + 4 when flags
-- are not 0; memcached's ntotal is 51 + body, + 8 with CAS.
CREATE TABLE IF NOT EXISTS agg_sizes (
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  minute      INTEGER NOT NULL,            -- unix minutes
  body        INTEGER NOT NULL,
  writes      INTEGER NOT NULL,
  value_bytes INTEGER NOT NULL,
  PRIMARY KEY (run_id, minute, body)
) WITHOUT ROWID;
-- Every recorded write by second and answer time: band_us keeps two
-- significant digits of the microseconds (-1: no answer).
CREATE TABLE IF NOT EXISTS agg_latency (
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  second      INTEGER NOT NULL,            -- unix seconds
  band_us     INTEGER NOT NULL,
  writes      INTEGER NOT NULL,
  PRIMARY KEY (run_id, second, band_us)
) WITHOUT ROWID;
-- Writes and value bytes per key prefix (--keys prefix runs).
CREATE TABLE IF NOT EXISTS agg_prefixes (
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  minute      INTEGER NOT NULL,
  prefix_id   INTEGER NOT NULL,            -- key_prefixes.prefix_id
  writes      INTEGER NOT NULL,
  value_bytes INTEGER NOT NULL,
  PRIMARY KEY (run_id, minute, prefix_id)
) WITHOUT ROWID;

-- The histograms that outlive the rows (issue 14; proxy/record/wagg.h),
-- written with the others. A run listed in agg_item_runs has them from its
-- first write on; `slabtap model predict` / `advise` read them when the
-- run's rows are gone.
CREATE TABLE IF NOT EXISTS agg_item_runs (
  run_id      INTEGER PRIMARY KEY REFERENCES runs(run_id)
);
-- Item-storing writes (as agg_sizes) by minute, slab class and outcome: a
-- sparse histogram of body (ntotal = 51 + body, + 8 with CAS), exact below
-- 16384; from 16384 on, body is the lower bound of a log-linear bucket
-- (128 per power of two: 128 bytes wide at 16 KB, 8 KB at 1 MB) and
-- body_bytes the exact sum of the bodies in it.
CREATE TABLE IF NOT EXISTS agg_items (
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  minute      INTEGER NOT NULL,            -- unix minutes
  class_id    INTEGER NOT NULL,            -- the proxy's tag (sets.class_id); 0: none
  body        INTEGER NOT NULL,
  outcome     INTEGER NOT NULL,            -- 1 stored (STORED, HD, noreply/quiet),
                                           -- 2 refused (allocated, freed again:
                                           -- NOT_STORED EXISTS NOT_FOUND NS EX NF,
                                           -- bad data chunk), 3 nothing stored
  writes      INTEGER NOT NULL,
  body_bytes  INTEGER NOT NULL,
  PRIMARY KEY (run_id, minute, class_id, body, outcome)
) WITHOUT ROWID;
-- Every recorded write by minute, command and answer (ids of cmds and
-- answers; answer_id 0: a number, such as an incr result, or an answer
-- beyond the dictionary).
CREATE TABLE IF NOT EXISTS agg_answers (
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  minute      INTEGER NOT NULL,
  cmd_id      INTEGER NOT NULL,
  answer_id   INTEGER NOT NULL,
  writes      INTEGER NOT NULL,
  value_bytes INTEGER NOT NULL,
  PRIMARY KEY (run_id, minute, cmd_id, answer_id)
) WITHOUT ROWID;
-- Stored items per key prefix and slab class (--keys prefix runs).
CREATE TABLE IF NOT EXISTS agg_prefix_classes (
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  minute      INTEGER NOT NULL,
  prefix_id   INTEGER NOT NULL,
  class_id    INTEGER NOT NULL,
  writes      INTEGER NOT NULL,
  body_bytes  INTEGER NOT NULL,
  PRIMARY KEY (run_id, minute, prefix_id, class_id)
) WITHOUT ROWID;

-- Phases of a run, marked over HTTP (POST /api/phase) or by the load
-- generator. A phase lasts until the next one starts (ended_ns NULL: until
-- the run ended).
CREATE TABLE IF NOT EXISTS phases (
  phase_id   INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  name       TEXT NOT NULL,
  started_ns INTEGER NOT NULL,
  ended_ns   INTEGER
);

-- One row per stats poll: `stats` as a JSON object holding every field
-- memcached sent (numbers as numbers, the rest as text), so the counters of
-- a newer memcached are never lost.
CREATE TABLE IF NOT EXISTS samples (
  sample_id  INTEGER PRIMARY KEY,
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  t_ns       INTEGER NOT NULL,
  phase_id   INTEGER,                      -- phase active when it was taken
  final      INTEGER NOT NULL DEFAULT 0,   -- 1: the snapshot taken at shutdown
  stats      TEXT NOT NULL                 -- JSON object: every `stats` field
);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id, t_ns);

-- Per sample and slab class: `stats slabs` (<class>:<field>) merged with
-- `stats items` (items:<class>:<field>) by class id, as one JSON object.
-- Every row has its `stats slabs` half (chunk_size, total_pages, ...): a
-- class `stats items` named and `stats slabs` did not is left out of its
-- sample (issue 18; proxy/protocol/stats_parse.h). The `stats items` half
-- may be absent: a class with pages and no items (number, mem_requested
-- NULL in class_stats; slab_waste takes mem_requested as 0).
CREATE TABLE IF NOT EXISTS sample_classes (
  sample_id  INTEGER NOT NULL REFERENCES samples(sample_id),
  class_id   INTEGER NOT NULL,
  fields     TEXT NOT NULL,                -- JSON object: the class's fields
  PRIMARY KEY (sample_id, class_id)
) WITHOUT ROWID;

-- `stats settings` and `version`, at start and whenever they change.
CREATE TABLE IF NOT EXISTS settings (
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  t_ns       INTEGER NOT NULL,
  version    TEXT,
  settings   TEXT NOT NULL,                -- JSON object: every `stats settings` field
  PRIMARY KEY (run_id, t_ns)
) WITHOUT ROWID;

-- What the experiment runner (or any tool) knows about a run beyond the
-- proxy: memcached's command line and version, the workload and its
-- SHA-256 fingerprint, item counts.
CREATE TABLE IF NOT EXISTS run_meta (
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  key        TEXT NOT NULL,
  value      TEXT,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

-- ---------------------------------------------------------------- views

-- One row per recorded write, with the columns of the v3 table `sets`
-- (run_id, seq) is unique; ORDER BY seq sorts (the rowid order is seq order,
-- but SQLite does not know it).
DROP VIEW IF EXISTS sets;
CREATE VIEW sets AS
SELECT r.run_id AS run_id,
       w.rowid - r.base AS seq,
       (SELECT a.conn_id FROM arrivals a WHERE a.rowid BETWEEN r.lo AND w.rowid
        ORDER BY a.rowid DESC LIMIT 1) AS conn_id,
       r.t0 + (SELECT a.dt FROM arrivals a WHERE a.rowid BETWEEN r.lo AND w.rowid
               ORDER BY a.rowid DESC LIMIT 1) AS t_ns,
       CASE WHEN (w.op >> 14) & 63 THEN (SELECT c.cmd FROM cmds c WHERE c.cmd_id = (w.op >> 14) & 63)
            ELSE json_extract(w.extra, '$.cmd') END AS cmd,
       CASE typeof(w.key_ref)
            WHEN 'integer' THEN (SELECT p.prefix FROM key_prefixes p WHERE p.prefix_id = w.key_ref)
            ELSE w.key_ref END AS key,
       w.key_hash AS key_hash,
       CASE WHEN typeof(w.extra) = 'text' AND json_type(w.extra, '$.key_len') IS NOT NULL
            THEN json_extract(w.extra, '$.key_len') ELSE w.op & 255 END AS key_len,
       CASE WHEN typeof(w.extra) = 'text' AND json_type(w.extra, '$.value_len') IS NOT NULL
            THEN json_extract(w.extra, '$.value_len')
            ELSE nullif((w.sizes >> 6) & ((1 << (w.sizes & 31)) - 1), 0) - 1 END AS value_len,
       CASE WHEN typeof(w.extra) = 'text' AND json_type(w.extra, '$.flags') IS NOT NULL
            THEN json_extract(w.extra, '$.flags')
            WHEN (SELECT c.has_flags FROM cmds c WHERE c.cmd_id = (w.op >> 14) & 63)
            THEN CASE typeof(w.extra) WHEN 'integer' THEN (w.extra >> 32) & 4294967295 ELSE 0 END
            END AS flags,
       CASE WHEN typeof(w.extra) = 'text' AND json_type(w.extra, '$.exptime') IS NOT NULL
            THEN json_extract(w.extra, '$.exptime')
            WHEN (SELECT c.has_exptime FROM cmds c WHERE c.cmd_id = (w.op >> 14) & 63)
            THEN CASE typeof(w.extra) WHEN 'integer' THEN (w.extra << 32) >> 32 ELSE 0 END
            END AS exptime,
       CASE WHEN w.op >> 20 THEN (SELECT n.answer FROM answers n WHERE n.answer_id = w.op >> 20)
            ELSE json_extract(w.extra, '$.answer') END AS answer,
       CASE WHEN typeof(w.extra) = 'text' AND json_type(w.extra, '$.latency_ns') IS NOT NULL
            THEN json_extract(w.extra, '$.latency_ns')
            ELSE (nullif(w.sizes >> (6 + (w.sizes & 31)), 0) - 1)
                 * CASE WHEN w.sizes & 32 THEN 1 ELSE 1000 END END AS latency_ns,
       CASE WHEN typeof(w.extra) = 'text' AND json_type(w.extra, '$.class_id') IS NOT NULL
            THEN json_extract(w.extra, '$.class_id') ELSE nullif((w.op >> 8) & 63, 0) END AS class_id,
       CASE WHEN (w.op >> 14) & 63
            THEN (SELECT nullif(c.ms_mode, '') FROM cmds c WHERE c.cmd_id = (w.op >> 14) & 63)
            ELSE json_extract(w.extra, '$.ms_mode') END AS ms_mode
FROM write_runs r CROSS JOIN writes w ON w.rowid >= r.lo AND w.rowid < r.hi;

-- One row per key a read asked for (issue 19). Replay and the model read
-- reads through this view only: its columns stay as they are.
-- Order with writes: a read was parsed after write seq `after_write` and
-- before write after_write + 1, so a run's requests in the order the proxy
-- read them sort by (position, rank) where a write with seq s sorts at
-- (s, 0) and a read at (after_write, seq) -- reads before any write have
-- after_write 0. As SQL:
--   SELECT 'w' AS kind, seq AS pos, 0 AS rank, key_hash FROM sets WHERE run_id = ?
--   UNION ALL SELECT 'r', after_write, seq, key_hash FROM reads WHERE run_id = ?
--   ORDER BY pos, rank;
DROP VIEW IF EXISTS reads;
CREATE VIEW reads AS
SELECT r.run_id AS run_id,
       x.rowid - r.base AS seq,
       a.after_write + ((x.op >> 11) & 15) AS after_write,
       a.conn_id AS conn_id,
       r.t0 + a.dt AS t_ns,
       CASE (x.op >> 2) & 7 WHEN 1 THEN 'get' WHEN 2 THEN 'gets' WHEN 3 THEN 'gat'
            WHEN 4 THEN 'gats' WHEN 5 THEN 'mg' END AS cmd,
       CASE typeof(k.key_ref)
            WHEN 'integer' THEN (SELECT p.prefix FROM key_prefixes p WHERE p.prefix_id = k.key_ref)
            ELSE k.key_ref END AS key,
       k.key_hash AS key_hash,
       k.key_len AS key_len,
       x.op & 1 AS hit,
       nullif(x.op >> 15, 0) - 1 AS value_len,
       CASE WHEN x.op & 2 THEN coalesce((e.extra >> 32) & 4294967295, 0) END AS flags,
       CASE WHEN (x.op >> 2) & 7 IN (3, 4) THEN coalesce((e.extra << 32) >> 32, 0) END AS exptime,
       nullif((x.op >> 5) & 63, 0) AS class_id
FROM read_runs r CROSS JOIN read_rows x ON x.rowid >= r.lo AND x.rowid < r.hi
LEFT JOIN read_arrivals a
       ON a.rowid = (SELECT a2.rowid FROM read_arrivals a2 WHERE a2.rowid BETWEEN r.lo AND x.rowid
                     ORDER BY a2.rowid DESC LIMIT 1)
LEFT JOIN read_keys k ON k.key_id = x.key_id
LEFT JOIN read_extra e ON e.rowid = x.rowid;

DROP VIEW IF EXISTS class_stats;
CREATE VIEW class_stats AS
SELECT s.run_id, s.sample_id, s.t_ns, s.phase_id, s.final, c.class_id,
       CAST(json_extract(c.fields, '$.chunk_size') AS INTEGER)       AS chunk_size,
       CAST(json_extract(c.fields, '$.chunks_per_page') AS INTEGER)  AS chunks_per_page,
       CAST(json_extract(c.fields, '$.total_pages') AS INTEGER)      AS total_pages,
       CAST(json_extract(c.fields, '$.total_chunks') AS INTEGER)     AS total_chunks,
       CAST(json_extract(c.fields, '$.used_chunks') AS INTEGER)      AS used_chunks,
       CAST(json_extract(c.fields, '$.free_chunks') AS INTEGER)      AS free_chunks,
       CAST(json_extract(c.fields, '$.mem_requested') AS INTEGER)    AS mem_requested,
       CAST(json_extract(c.fields, '$.number') AS INTEGER)           AS number,
       CAST(json_extract(c.fields, '$.evicted') AS INTEGER)          AS evicted,
       CAST(json_extract(c.fields, '$.outofmemory') AS INTEGER)      AS outofmemory,
       CAST(json_extract(c.fields, '$.reclaimed') AS INTEGER)        AS reclaimed,
       CAST(json_extract(c.fields, '$.cmd_set') AS INTEGER)          AS cmd_set,
       c.fields
FROM samples s JOIN sample_classes c USING (sample_id);

-- Rounding waste per run, sample and class: what memcached pinned
-- (used_chunks * chunk_size) minus what the items asked for (mem_requested).
DROP VIEW IF EXISTS slab_waste;
CREATE VIEW slab_waste AS
-- A chunked item (larger than slab_chunk_max) is counted whole in the
-- largest class's mem_requested while its header and tail chunks sit in
-- smaller classes with no mem_requested: per class those show as negative
-- and full waste, and only the sum over classes is the item's true waste.
SELECT run_id, sample_id, t_ns, phase_id, final, class_id, chunk_size, used_chunks,
       total_pages, coalesce(mem_requested, 0) AS mem_requested,
       used_chunks * chunk_size                                  AS allocated,
       used_chunks * chunk_size - coalesce(mem_requested, 0)     AS waste_bytes,
       CASE WHEN used_chunks * chunk_size > 0
            THEN round(100.0 * (used_chunks * chunk_size - coalesce(mem_requested, 0))
                       / (used_chunks * chunk_size), 2) END AS waste_pct
FROM class_stats
WHERE chunk_size IS NOT NULL;

-- The last sample of each run (the final one when the run ended cleanly).
DROP VIEW IF EXISTS last_samples;
CREATE VIEW last_samples AS
SELECT s.* FROM samples s
WHERE s.sample_id = (SELECT s2.sample_id FROM samples s2 WHERE s2.run_id = s.run_id
                     ORDER BY s2.t_ns DESC, s2.sample_id DESC LIMIT 1);

DROP VIEW IF EXISTS run_settings;
CREATE VIEW run_settings AS
SELECT st.run_id, st.version,
       CAST(json_extract(st.settings, '$.growth_factor') AS REAL)     AS growth_factor,
       CAST(json_extract(st.settings, '$.chunk_size') AS INTEGER)     AS chunk_size_min,
       CAST(json_extract(st.settings, '$.item_size_max') AS INTEGER)  AS item_size_max,
       CAST(json_extract(st.settings, '$.slab_chunk_max') AS INTEGER) AS slab_chunk_max,
       CAST(json_extract(st.settings, '$.maxbytes') AS INTEGER)       AS maxbytes,
       CAST(json_extract(st.settings, '$.slab_automove') AS INTEGER)  AS slab_automove,
       json_extract(st.settings, '$.cas_enabled')                    AS cas_enabled,
       st.settings
FROM settings st
WHERE st.t_ns = (SELECT max(t_ns) FROM settings s2 WHERE s2.run_id = st.run_id);

-- memcached's chunk ladder for each run: the one the proxy tagged the
-- run's writes with and `slabtap model predict` uses (run_meta 'ladder',
-- JSON: chunk_sizes, origin, flags, note; proxy/model/ladder_source.h:
-- `stats settings`, the flags slabtap knew, the chunk sizes memcached
-- showed -- so -o slab_sizes servers and -f with more than two decimals
-- come out right). Runs without it (recorded before it existed) get the
-- ladder rebuilt in SQL from their `stats settings`: the arithmetic of
-- slab_model.c, -n/-f only (origin 'settings (sql)').
DROP VIEW IF EXISTS run_ladder;
CREATE VIEW run_ladder AS
WITH RECURSIVE recorded AS (
  SELECT m.run_id, CAST(j.key AS INTEGER) + 1 AS class_id, j.value AS chunk_size,
         coalesce(json_extract(m.value, '$.origin'), 'recorded') AS origin
  FROM run_meta m,
       json_each(CASE WHEN m.key = 'ladder' AND json_valid(m.value) THEN m.value ELSE '{}' END,
                 '$.chunk_sizes') j
  WHERE m.key = 'ladder'),
st AS (
  SELECT run_id, growth_factor AS f, chunk_size_min + 48 AS first, slab_chunk_max AS cmax
  FROM run_settings WHERE run_id NOT IN (SELECT run_id FROM recorded)),
l(run_id, class_id, size) AS (
  SELECT run_id, 1, first FROM st WHERE first < cmax / f
  UNION ALL
  SELECT l.run_id, l.class_id + 1, CAST(((l.size + 7) / 8 * 8) * st.f AS INTEGER)
  FROM l JOIN st USING (run_id)
  WHERE l.class_id < 62 AND CAST(((l.size + 7) / 8 * 8) * st.f AS INTEGER) < st.cmax / st.f)
SELECT run_id, class_id, chunk_size, origin FROM recorded
UNION ALL
SELECT run_id, class_id, (size + 7) / 8 * 8 AS chunk_size, 'settings (sql)' FROM l
UNION ALL
SELECT st.run_id, (SELECT count(*) FROM l WHERE l.run_id = st.run_id) + 1, st.cmax,
       'settings (sql)' FROM st;

DROP VIEW IF EXISTS run_summary;
CREATE VIEW run_summary AS
SELECT r.run_id, r.name, rs.version AS memcached_version,
       rs.growth_factor, rs.chunk_size_min, rs.item_size_max, rs.maxbytes, rs.slab_automove,
       rs.cas_enabled,
       (SELECT count(*) FROM run_ladder l WHERE l.run_id = r.run_id) AS classes_in_ladder,
       (SELECT count(*) FROM slab_waste w WHERE w.sample_id = ls.sample_id AND w.used_chunks > 0)
         AS classes_in_use,
       (SELECT sum(total_pages) FROM slab_waste w WHERE w.sample_id = ls.sample_id) AS pages,
       (SELECT sum(allocated) FROM slab_waste w WHERE w.sample_id = ls.sample_id) AS allocated,
       (SELECT sum(mem_requested) FROM slab_waste w WHERE w.sample_id = ls.sample_id) AS mem_requested,
       (SELECT sum(waste_bytes) FROM slab_waste w WHERE w.sample_id = ls.sample_id) AS waste_bytes,
       (SELECT round(100.0 * sum(waste_bytes) / nullif(sum(allocated), 0), 2)
          FROM slab_waste w WHERE w.sample_id = ls.sample_id) AS waste_pct,
       CAST(json_extract(ls.stats, '$.evictions') AS INTEGER) AS evictions,
       CAST(json_extract(ls.stats, '$.curr_items') AS INTEGER) AS curr_items,
       CAST(json_extract(ls.stats, '$.bytes') AS INTEGER) AS bytes,
       (SELECT count(*) FROM sets s WHERE s.run_id = r.run_id) AS writes_recorded,
       r.rows_dropped,
       r.crashed
FROM runs r
LEFT JOIN last_samples ls ON ls.run_id = r.run_id
LEFT JOIN run_settings rs ON rs.run_id = r.run_id;

-- Every recorded write with the phase it fell in.
DROP VIEW IF EXISTS sets_phased;
CREATE VIEW sets_phased AS
SELECT s.*, p.phase_id, p.name AS phase
FROM sets s
LEFT JOIN phases p ON p.run_id = s.run_id AND s.t_ns >= p.started_ns
                  AND (p.ended_ns IS NULL OR s.t_ns < p.ended_ns);

-- Size histogram of recorded writes: power-of-two buckets of value_len.
DROP VIEW IF EXISTS write_size_histogram;
CREATE VIEW write_size_histogram AS
SELECT run_id,
       CASE
            WHEN value_len >= 134217728 THEN 134217728
            WHEN value_len >= 67108864 THEN 67108864
            WHEN value_len >= 33554432 THEN 33554432
            WHEN value_len >= 16777216 THEN 16777216
            WHEN value_len >= 8388608 THEN 8388608
            WHEN value_len >= 4194304 THEN 4194304
            WHEN value_len >= 2097152 THEN 2097152
            WHEN value_len >= 1048576 THEN 1048576
            WHEN value_len >= 524288 THEN 524288
            WHEN value_len >= 262144 THEN 262144
            WHEN value_len >= 131072 THEN 131072
            WHEN value_len >= 65536 THEN 65536
            WHEN value_len >= 32768 THEN 32768
            WHEN value_len >= 16384 THEN 16384
            WHEN value_len >= 8192 THEN 8192
            WHEN value_len >= 4096 THEN 4096
            WHEN value_len >= 2048 THEN 2048
            WHEN value_len >= 1024 THEN 1024
            WHEN value_len >= 512 THEN 512
            WHEN value_len >= 256 THEN 256
            WHEN value_len >= 128 THEN 128
            WHEN value_len >= 64 THEN 64
            WHEN value_len >= 32 THEN 32
            WHEN value_len >= 16 THEN 16
            WHEN value_len >= 8 THEN 8
            WHEN value_len >= 4 THEN 4
            WHEN value_len >= 2 THEN 2
            WHEN value_len >= 1 THEN 1
            ELSE 0 END AS bucket_min,
       count(*) AS writes,
       sum(value_len) AS value_bytes,
       min(value_len) AS min_len, max(value_len) AS max_len
FROM sets
WHERE value_len IS NOT NULL
GROUP BY run_id, bucket_min;

-- The same histogram from the aggregates (they outlive the rows): bodies
-- (key + value + 4 with flags), not value lengths, of item-storing writes
-- in power-of-two buckets; outcome as agg_items.
DROP VIEW IF EXISTS write_size_histogram_agg;
CREATE VIEW write_size_histogram_agg AS
SELECT run_id, outcome, (x4 | (x4 >> 16)) - ((x4 | (x4 >> 16)) >> 1) AS bucket_min,
       sum(writes) AS writes, sum(body_bytes) AS body_bytes,
       min(body) AS min_body, max(body) AS max_body
FROM (SELECT run_id, outcome, body, writes, body_bytes, x3 | (x3 >> 8) AS x4
      FROM (SELECT *, x2 | (x2 >> 4) AS x3
            FROM (SELECT *, x1 | (x1 >> 2) AS x2
                  FROM (SELECT *, body | (body >> 1) AS x1 FROM agg_items) AS b1) AS b2) AS b3) AS b4
GROUP BY run_id, outcome, bucket_min;

-- Item sizes by slab class from the aggregates, over the whole run: ntotal
-- with the run's CAS setting (bucket lower bound from 16384 on).
DROP VIEW IF EXISTS item_sizes_agg;
CREATE VIEW item_sizes_agg AS
SELECT a.run_id, a.class_id, a.body,
       51 + a.body + CASE WHEN CAST(coalesce(rs.cas_enabled, 'yes') AS TEXT) IN ('no', '0', 'false')
                          THEN 0 ELSE 8 END AS ntotal,
       a.outcome, sum(a.writes) AS writes, sum(a.body_bytes) AS body_bytes
FROM agg_items a LEFT JOIN run_settings rs ON rs.run_id = a.run_id
GROUP BY a.run_id, a.class_id, a.body, a.outcome, rs.cas_enabled;

-- Answers by command from the aggregates.
DROP VIEW IF EXISTS answers_agg;
CREATE VIEW answers_agg AS
SELECT a.run_id, c.cmd, nullif(c.ms_mode, '') AS ms_mode,
       CASE WHEN a.answer_id = 0 THEN '(other)' ELSE n.answer END AS answer,
       sum(a.writes) AS writes, sum(a.value_bytes) AS value_bytes
FROM agg_answers a LEFT JOIN cmds c ON c.cmd_id = a.cmd_id
LEFT JOIN answers n ON n.answer_id = a.answer_id
GROUP BY a.run_id, a.cmd_id, a.answer_id, c.cmd, c.ms_mode, n.answer;

-- Answer times from the aggregates (bands of two significant digits).
DROP VIEW IF EXISTS latency_histogram_agg;
CREATE VIEW latency_histogram_agg AS
SELECT run_id, band_us, sum(writes) AS writes FROM agg_latency GROUP BY run_id, band_us;

-- Per phase: global counters at the phase's first and last sample.
DROP VIEW IF EXISTS phase_deltas;
CREATE VIEW phase_deltas AS
WITH bounds AS (
  SELECT p.run_id, p.phase_id, p.name,
         (SELECT sample_id FROM samples s WHERE s.run_id = p.run_id AND s.phase_id = p.phase_id
          ORDER BY t_ns ASC LIMIT 1) AS first_id,
         (SELECT sample_id FROM samples s WHERE s.run_id = p.run_id AND s.phase_id = p.phase_id
          ORDER BY t_ns DESC LIMIT 1) AS last_id
  FROM phases p)
SELECT b.run_id, b.phase_id, b.name AS phase,
       CAST(json_extract(l.stats, '$.evictions') AS INTEGER)
       - CAST(json_extract(f.stats, '$.evictions') AS INTEGER) AS evictions,
       CAST(json_extract(l.stats, '$.cmd_set') AS INTEGER)
       - CAST(json_extract(f.stats, '$.cmd_set') AS INTEGER) AS cmd_set,
       CAST(json_extract(l.stats, '$.bytes') AS INTEGER)
       - CAST(json_extract(f.stats, '$.bytes') AS INTEGER) AS bytes,
       CAST(json_extract(l.stats, '$.curr_items') AS INTEGER)
       - CAST(json_extract(f.stats, '$.curr_items') AS INTEGER) AS curr_items,
       CAST(json_extract(l.stats, '$.slabs_moved') AS INTEGER)
       - CAST(json_extract(f.stats, '$.slabs_moved') AS INTEGER) AS slabs_moved,
       (l.t_ns - f.t_ns) / 1e9 AS seconds
FROM bounds b JOIN samples f ON f.sample_id = b.first_id JOIN samples l ON l.sample_id = b.last_id;

PRAGMA user_version = 5;
