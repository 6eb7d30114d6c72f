-- Written once in schema/schema.sql.in; schema/sqlgen.c derives this file
-- (its rule is there). Edit that file, then: cmake --build build --target sql_files

-- slabtap schema for PostgreSQL: the same tables, columns and views as
-- schema/schema.sql (SQLite), for a fleet of proxies writing into one
-- server. Embedded into the binary at build time and applied by
-- pgstore_open() (proxy/record/pgstore.c), in one transaction, under an
-- advisory lock so that nodes starting together apply it once.
--
-- Versioning, as in SQLite: tables are only ever CREATEd IF NOT EXISTS, an
-- older database is brought up to date by the upgrade steps in pgstore.c
-- (pgstore_upgrade, one per version) before this file runs, views are
-- dropped and recreated. The version lives in the table schema_version
-- (SQLite: PRAGMA user_version), with the SHA-256 of the text that set it:
-- pgstore_open applies this file only when the version or the text differs
-- from the binary's (so a node starting does not take DDL locks while the
-- others write), and refuses a database whose version is newer.
--
-- Dialect differences from schema/schema.sql (its -- @sqlite / -- @pg
-- sections in schema/schema.sql.in), and why (test_pgstore checks that names
-- and columns agree everywhere else):
--   * writes carries run_id, seq, t_ns and conn_id itself: PostgreSQL has no
--     rowid to derive (run, seq) from, and t_ns is the partition key. The
--     SQLite-only tables write_runs and arrivals (rowid ranges, arrivals
--     kept once per read) do not exist here. key_hash, key_ref, op, sizes
--     and extra are encoded exactly as schema.sql describes, except:
--       key_ref  text: the key as recorded (NULL: none), never a
--                dictionary id. key_prefixes names only the prefixes of the
--                prefix aggregates (agg_prefixes, agg_prefix_classes), each
--                id a 40-bit hash of the prefix's text, so that no node
--                waits on another's numbering. Bytes that are not UTF-8 are
--                stored as U+FFFD (key_hash is the hash of the exact key).
--       extra    jsonb: NULL, a number (flags << 32 | exptime), or an object.
--       op       cmd_id / answer_id only ever point at the rows this file
--                puts into cmds / answers; anything else goes into extra.
--   * writes is partitioned by t_ns, one partition per UTC day
--     (writes_YYYYMMDD), created on demand by pgstore through
--     slabtap_writes_partition(); there is no default partition.
--   * runs has a `node` (slabtap proxy --node): which memcached of the fleet.
--     run_id is an identity column: unique per node and start, taken without
--     a lock any other node waits for (a sequence is not transactional).
--   * phases are keyed (run_id, phase_id): each node numbers its own.
--   * JSON columns are jsonb (stats, fields, settings); run_meta.value stays
--     text (not every value is JSON).
--   * fleet_* views: the fleet across nodes (end of file).

CREATE TABLE IF NOT EXISTS schema_version (
  one       boolean PRIMARY KEY DEFAULT true CHECK (one),
  version   integer NOT NULL,
  sha256    text NOT NULL                -- of the schema text that set it
);

-- Compatibility functions: what SQLite has and PostgreSQL has not, under
-- SQLite's names, so that the views and canned queries written once in
-- SQLite's SQL run here unchanged (schema/sqlgen.c; the difference between
-- the engines' functions lives here and nowhere else).
-- json_extract(json, '$.a.b'): the value as text (NULL: absent or JSON null);
-- callers CAST it where they compute with it, as they do on SQLite.
CREATE OR REPLACE FUNCTION json_extract(j jsonb, path text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT j #>> string_to_array(substr(path, 3), '.') $$;
-- instr(haystack, needle): strpos
CREATE OR REPLACE FUNCTION instr(s text, sub text) RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT strpos(s, sub) $$;
-- min(a, b, ...) of two values or more (min(x) stays the aggregate): NULL
-- when one of them is, as SQLite's
CREATE OR REPLACE FUNCTION min(a anycompatible, VARIADIC r anycompatiblearray)
RETURNS anycompatible LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN a IS NULL OR array_position(r, NULL) IS NOT NULL THEN NULL
              ELSE least(a, (SELECT min(x) FROM unnest(r) x)) END $$;
-- printf(format, numbers...): SQLite's printf for what the canned queries
-- use: %s, %d, %,d (thousands separated by ','), %.Nf, %%.
CREATE OR REPLACE FUNCTION printf(fmt text, VARIADIC args double precision[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  out text := '';
  i int := 1;
  k int := 1;
  spec text;
  v double precision;
  d text;
BEGIN
  WHILE i <= length(fmt) LOOP
    IF substr(fmt, i, 1) <> '%' THEN
      out := out || substr(fmt, i, 1);
      i := i + 1;
      CONTINUE;
    END IF;
    spec := substring(substr(fmt, i) FROM '^%(?:%|s|,?d|\.[0-9]+f|f)');
    IF spec IS NULL THEN
      RAISE EXCEPTION 'printf: format % is not one slabtap''s printf knows', substr(fmt, i);
    END IF;
    i := i + length(spec);
    IF spec = '%%' THEN
      out := out || '%';
      CONTINUE;
    END IF;
    v := args[k];
    k := k + 1;
    IF v IS NULL THEN
      d := '';
    ELSIF spec = '%s' THEN
      d := v::text;
    ELSIF spec LIKE '%d' THEN
      d := trunc(v)::bigint::text;
      IF spec = '%,d' THEN
        d := regexp_replace(d, '(\d)(?=(\d{3})+$)', '\1,', 'g');
      END IF;
    ELSE
      d := round(v::numeric, coalesce(nullif(substring(spec FROM '[0-9]+'), '')::int, 6))::text;
    END IF;
    out := out || d;
  END LOOP;
  RETURN out;
END $$;

-- One row per proxy start (or experiment run).
CREATE TABLE IF NOT EXISTS runs (
  run_id        bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  name          text NOT NULL,
  node          text NOT NULL DEFAULT '',  -- the fleet member (--node)
  started_ns    bigint NOT NULL,          -- unix time, nanoseconds
  ended_ns      bigint,                   -- NULL while running or after a crash
  upstream      text NOT NULL,             -- host:port of memcached
  slabtap_version text NOT NULL,
  options       text NOT NULL,             -- the proxy's command line options
  key_mode      text NOT NULL,             -- full | prefix | hash
  rows_recorded bigint NOT NULL DEFAULT 0,   -- rows written to `writes` (view `sets`)
  rows_dropped  bigint NOT NULL DEFAULT 0,
  crashed       bigint NOT NULL DEFAULT 0  -- 1: never ended (killed); marked, with
                                           -- its rows counted, at the next open (v5)
);
CREATE INDEX IF NOT EXISTS runs_node ON runs (node, started_ns);

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
  cmd_id      bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,          -- 1..63 (op keeps 6 bits)
  cmd         text NOT NULL,
  ms_mode     text NOT NULL DEFAULT '',     -- ms M<mode> flag; '' for none
  has_flags   bigint NOT NULL DEFAULT 0,   -- the command carries flags
  has_exptime bigint NOT NULL DEFAULT 0,   -- ... and an exptime
  UNIQUE (cmd, ms_mode)
);
INSERT INTO cmds (cmd_id, cmd, ms_mode, has_flags, has_exptime) VALUES
  (1, 'set', '', 1, 1), (2, 'add', '', 1, 1), (3, 'replace', '', 1, 1),
  (4, 'append', '', 1, 1), (5, 'prepend', '', 1, 1), (6, 'cas', '', 1, 1),
  (7, 'ms', '', 1, 1), (8, 'ms', 'E', 1, 1), (9, 'ms', 'A', 1, 1), (10, 'ms', 'P', 1, 1),
  (11, 'ms', 'R', 1, 1), (12, 'ms', 'S', 1, 1), (13, 'delete', '', 0, 0), (14, 'md', '', 0, 0),
  (15, 'touch', '', 0, 1), (16, 'incr', '', 0, 0), (17, 'decr', '', 0, 0), (18, 'ma', '', 0, 0)
ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS answers (
  answer_id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,            -- 1..7 keep op in 3 bytes
  answer    text NOT NULL UNIQUE
);
INSERT INTO answers (answer_id, answer) VALUES
  (1, 'STORED'), (2, 'noreply'), (3, 'quiet'), (4, 'HD'), (5, 'NOT_STORED'), (6, 'EXISTS'),
  (7, 'NOT_FOUND'), (8, 'DELETED'), (9, 'TOUCHED'), (10, 'NS'), (11, 'EX'), (12, 'NF'),
  (13, 'upstream_error'), (14, 'no_answer'), (15, 'ERROR'),
  (16, 'SERVER_ERROR object too large for cache'),
  (17, 'SERVER_ERROR out of memory storing object'), (18, 'CLIENT_ERROR bad data chunk'),
  (19, 'CLIENT_ERROR bad command line format')
ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS key_prefixes (
  prefix_id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  prefix    text NOT NULL UNIQUE
);

-- Recorded writes: one row each, read back through the view `sets`.
-- Partitions: slabtap_writes_partition(day) below.
CREATE TABLE IF NOT EXISTS writes (
  run_id   bigint NOT NULL,
  seq      bigint NOT NULL,
  t_ns     bigint NOT NULL,
  conn_id  bigint NOT NULL,
  key_hash bigint NOT NULL,
  key_ref  text,
  op       bigint NOT NULL,
  sizes    bigint NOT NULL,
  extra    jsonb
) PARTITION BY RANGE (t_ns);
-- A run's rows: a BRIN index on run_id (a node writes its rows in run
-- order, so block ranges hold few runs). A btree on (run_id, seq) halved
-- COPY's throughput (190 k against 400 k+ rows/s, bench/pg_writer_bench).
CREATE INDEX IF NOT EXISTS writes_run ON writes USING brin (run_id) WITH (autosummarize = on);

-- The partition of writes for UTC day `day` (t_ns / 86400e9, floored),
-- created when missing: a table of its own first, then attached (ATTACH
-- takes SHARE UPDATE EXCLUSIVE on writes, which does not wait for other
-- nodes' COPY; CREATE TABLE ... PARTITION OF would). Nodes reaching a new
-- day together serialize on an advisory lock, once a day. Returns the
-- partition's name. SECURITY DEFINER: a node's role needs no ownership of
-- writes (only INSERT) to add a day; the owner is the role that applied
-- this file.
CREATE OR REPLACE FUNCTION slabtap_writes_partition(day bigint) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
  ns_per_day constant bigint := 86400000000000;
  part text := 'writes_' || to_char(to_timestamp(day * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD');
  lo text := CASE WHEN day <= -106752 THEN 'MINVALUE' ELSE (day * ns_per_day)::text END;
  hi text := CASE WHEN day >= 106751 THEN 'MAXVALUE' ELSE ((day + 1) * ns_per_day)::text END;
BEGIN
  IF day < -106752 OR day > 106751 THEN
    RAISE EXCEPTION 'slabtap: day % is outside what t_ns can hold', day;
  END IF;
  PERFORM pg_advisory_xact_lock(6004217345223557119);  -- 'SLABTAP' partitions
  IF to_regclass(part) IS NULL THEN
    EXECUTE format('CREATE TABLE %I (LIKE writes INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
    EXECUTE format('ALTER TABLE writes ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                   part, lo, hi);
  END IF;
  RETURN part;
END $$;

-- text -> jsonb, NULL when it is not JSON (run_meta values need not be)
CREATE OR REPLACE FUNCTION slabtap_try_jsonb(t text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RETURN t::jsonb;
EXCEPTION WHEN others THEN
  RETURN NULL;
END $$;

-- Reads (issue 19): one row per key a get gets gat gats mg asked for, read
-- back through the view `reads` (the columns of schema.sql's). Plain
-- columns: the compact encoding is SQLite's; here the server's storage
-- (and TOAST/compression) decides. A BRIN index on run_id, as writes.
CREATE TABLE IF NOT EXISTS read_log (
  run_id      bigint NOT NULL,
  seq         bigint NOT NULL,             -- the run's read sequence, from 1
  after_write bigint NOT NULL,             -- the write seq it came after
  conn_id     bigint NOT NULL,
  t_ns        bigint NOT NULL,
  cmd         text NOT NULL,               -- get gets gat gats mg
  key         text,                        -- as recorded (--keys); NULL: hash only
  key_hash    bigint NOT NULL,
  key_len     integer NOT NULL,
  hit         smallint NOT NULL,
  value_len   bigint,
  flags       bigint,
  exptime     bigint,
  class_id    integer
);
CREATE INDEX IF NOT EXISTS read_log_run ON read_log USING brin (run_id) WITH (autosummarize = on);

-- Reads per run, minute and slab class, every read counted (sampled-out
-- keys too): a hit in the class of the item returned, a miss in the class
-- the key was last written (or read) in -- 0 when unknown: never seen, or
-- beyond the writer's map of 786,432 keys.
CREATE TABLE IF NOT EXISTS agg_reads (
  run_id      bigint NOT NULL REFERENCES runs(run_id),
  minute      bigint NOT NULL,            -- unix minutes
  class_id    bigint NOT NULL,
  reads       bigint NOT NULL,
  hits        bigint NOT NULL,
  misses      bigint NOT NULL,
  PRIMARY KEY (run_id, minute, class_id)
);

-- Reads are also counted: one row per run, second, command (every read,
-- with or without --reads).
CREATE TABLE IF NOT EXISTS get_counts (
  run_id      bigint NOT NULL REFERENCES runs(run_id),
  second      bigint NOT NULL,            -- unix seconds
  cmd         text NOT NULL,               -- get gets gat gats mg
  requests    bigint NOT NULL,
  keys        bigint NOT NULL,
  hits        bigint NOT NULL,
  misses      bigint NOT NULL,
  bytes_returned bigint NOT NULL,
  PRIMARY KEY (run_id, second, cmd)
);

-- Write aggregates, kept by the writer beside the rows (proxy/record/wagg.h)
-- so that the live page answers from a few rows per minute instead of
-- scanning a run's writes; a run listed in agg_runs has them from its first
-- write on (runs recorded before have none). Written with the batches at
-- most every 250 ms, so a crash loses at most what it loses of the rows.
CREATE TABLE IF NOT EXISTS agg_runs (
  run_id      bigint PRIMARY KEY REFERENCES runs(run_id)
);
-- Writes that store a whole item (set add replace cas, ms but append and
-- prepend pieces) by size: body = key length + value length + 4 when flags
-- are not 0; memcached's ntotal is 51 + body, + 8 with CAS.
CREATE TABLE IF NOT EXISTS agg_sizes (
  run_id      bigint NOT NULL REFERENCES runs(run_id),
  minute      bigint NOT NULL,            -- unix minutes
  body        bigint NOT NULL,
  writes      bigint NOT NULL,
  value_bytes bigint NOT NULL,
  PRIMARY KEY (run_id, minute, body)
);
-- Every recorded write by second and answer time: band_us keeps two
-- significant digits of the microseconds (-1: no answer).
CREATE TABLE IF NOT EXISTS agg_latency (
  run_id      bigint NOT NULL REFERENCES runs(run_id),
  second      bigint NOT NULL,            -- unix seconds
  band_us     bigint NOT NULL,
  writes      bigint NOT NULL,
  PRIMARY KEY (run_id, second, band_us)
);
-- Writes and value bytes per key prefix (--keys prefix runs).
CREATE TABLE IF NOT EXISTS agg_prefixes (
  run_id      bigint NOT NULL REFERENCES runs(run_id),
  minute      bigint NOT NULL,
  prefix_id   bigint NOT NULL,            -- key_prefixes.prefix_id
  writes      bigint NOT NULL,
  value_bytes bigint NOT NULL,
  PRIMARY KEY (run_id, minute, prefix_id)
);

-- The histograms that outlive the rows (issue 14; proxy/record/wagg.h),
-- written with the others. A run listed in agg_item_runs has them from its
-- first write on; `slabtap model predict` / `advise` read them when the
-- run's rows are gone.
CREATE TABLE IF NOT EXISTS agg_item_runs (
  run_id      bigint PRIMARY KEY REFERENCES runs(run_id)
);
-- Item-storing writes (as agg_sizes) by minute, slab class and outcome: a
-- sparse histogram of body (ntotal = 51 + body, + 8 with CAS), exact below
-- 16384; from 16384 on, body is the lower bound of a log-linear bucket
-- (128 per power of two: 128 bytes wide at 16 KB, 8 KB at 1 MB) and
-- body_bytes the exact sum of the bodies in it.
CREATE TABLE IF NOT EXISTS agg_items (
  run_id      bigint NOT NULL REFERENCES runs(run_id),
  minute      bigint NOT NULL,            -- unix minutes
  class_id    bigint NOT NULL,            -- the proxy's tag (sets.class_id); 0: none
  body        bigint NOT NULL,
  outcome     bigint NOT NULL,            -- 1 stored (STORED, HD, noreply/quiet),
                                           -- 2 refused (allocated, freed again:
                                           -- NOT_STORED EXISTS NOT_FOUND NS EX NF,
                                           -- bad data chunk), 3 nothing stored
  writes      bigint NOT NULL,
  body_bytes  bigint NOT NULL,
  PRIMARY KEY (run_id, minute, class_id, body, outcome)
);
-- Every recorded write by minute, command and answer (ids of cmds and
-- answers; answer_id 0: a number, such as an incr result, or an answer
-- beyond the dictionary).
CREATE TABLE IF NOT EXISTS agg_answers (
  run_id      bigint NOT NULL REFERENCES runs(run_id),
  minute      bigint NOT NULL,
  cmd_id      bigint NOT NULL,
  answer_id   bigint NOT NULL,
  writes      bigint NOT NULL,
  value_bytes bigint NOT NULL,
  PRIMARY KEY (run_id, minute, cmd_id, answer_id)
);
-- Stored items per key prefix and slab class (--keys prefix runs).
CREATE TABLE IF NOT EXISTS agg_prefix_classes (
  run_id      bigint NOT NULL REFERENCES runs(run_id),
  minute      bigint NOT NULL,
  prefix_id   bigint NOT NULL,
  class_id    bigint NOT NULL,
  writes      bigint NOT NULL,
  body_bytes  bigint NOT NULL,
  PRIMARY KEY (run_id, minute, prefix_id, class_id)
);

-- Phases of a run, marked over HTTP (POST /api/phase) or by the load
-- generator. A phase lasts until the next one starts (ended_ns NULL: until
-- the run ended).
CREATE TABLE IF NOT EXISTS phases (
  phase_id   bigint NOT NULL,            -- numbered per run (each node its own)
  run_id     bigint NOT NULL REFERENCES runs(run_id),
  name       text NOT NULL,
  started_ns bigint NOT NULL,
  ended_ns   bigint,
  PRIMARY KEY (run_id, phase_id)
);

-- One row per stats poll: `stats` as a JSON object holding every field
-- memcached sent (numbers as numbers, the rest as text), so the counters of
-- a newer memcached are never lost.
CREATE TABLE IF NOT EXISTS samples (
  sample_id  bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
  run_id     bigint NOT NULL REFERENCES runs(run_id),
  t_ns       bigint NOT NULL,
  phase_id   bigint,                      -- phase active when it was taken
  final      bigint NOT NULL DEFAULT 0,   -- 1: the snapshot taken at shutdown
  stats      jsonb NOT NULL                 -- JSON object: every `stats` field
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
  sample_id  bigint NOT NULL REFERENCES samples(sample_id),
  class_id   bigint NOT NULL,
  fields     jsonb NOT NULL,                -- JSON object: the class's fields
  PRIMARY KEY (sample_id, class_id)
);

-- `stats settings` and `version`, at start and whenever they change.
CREATE TABLE IF NOT EXISTS settings (
  run_id     bigint NOT NULL REFERENCES runs(run_id),
  t_ns       bigint NOT NULL,
  version    text,
  settings   jsonb NOT NULL,                -- JSON object: every `stats settings` field
  PRIMARY KEY (run_id, t_ns)
);

-- What the experiment runner (or any tool) knows about a run beyond the
-- proxy: memcached's command line and version, the workload and its
-- SHA-256 fingerprint, item counts.
CREATE TABLE IF NOT EXISTS run_meta (
  run_id     bigint NOT NULL REFERENCES runs(run_id),
  key        text NOT NULL,
  value      text,
  PRIMARY KEY (run_id, key)
);

-- ---------------------------------------------------------------- views

-- One row per recorded write, with the columns of schema.sql's view `sets`.
DROP VIEW IF EXISTS sets CASCADE;
CREATE VIEW sets AS
SELECT w.run_id, w.seq, w.conn_id, w.t_ns,
       CASE WHEN (w.op >> 14) & 63 <> 0 THEN c.cmd ELSE w.extra ->> 'cmd' END AS cmd,
       w.key_ref AS key,
       w.key_hash,
       CASE WHEN jsonb_typeof(w.extra) = 'object' AND w.extra ? 'key_len'
            THEN (w.extra ->> 'key_len')::bigint ELSE w.op & 255 END AS key_len,
       CASE WHEN jsonb_typeof(w.extra) = 'object' AND w.extra ? 'value_len'
            THEN (w.extra ->> 'value_len')::bigint
            ELSE nullif((w.sizes >> 6) & ((1::bigint << (w.sizes & 31)::int) - 1), 0) - 1
            END AS value_len,
       CASE WHEN jsonb_typeof(w.extra) = 'object' AND w.extra ? 'flags'
            THEN (w.extra ->> 'flags')::bigint
            WHEN c.has_flags <> 0
            THEN CASE jsonb_typeof(w.extra) WHEN 'number' THEN (w.extra::bigint >> 32) & 4294967295
                 ELSE 0 END
            END AS flags,
       CASE WHEN jsonb_typeof(w.extra) = 'object' AND w.extra ? 'exptime'
            THEN (w.extra ->> 'exptime')::bigint
            WHEN c.has_exptime <> 0
            THEN CASE jsonb_typeof(w.extra) WHEN 'number' THEN (w.extra::bigint << 32) >> 32
                 ELSE 0 END
            END AS exptime,
       CASE WHEN w.op >> 20 <> 0 THEN n.answer ELSE w.extra ->> 'answer' END AS answer,
       CASE WHEN jsonb_typeof(w.extra) = 'object' AND w.extra ? 'latency_ns'
            THEN (w.extra ->> 'latency_ns')::bigint
            ELSE (nullif(w.sizes >> (6 + (w.sizes & 31)::int), 0) - 1)
                 * CASE WHEN w.sizes & 32 <> 0 THEN 1 ELSE 1000 END END AS latency_ns,
       CASE WHEN jsonb_typeof(w.extra) = 'object' AND w.extra ? 'class_id'
            THEN (w.extra ->> 'class_id')::bigint ELSE nullif((w.op >> 8) & 63, 0) END
            AS class_id,
       CASE WHEN (w.op >> 14) & 63 <> 0 THEN nullif(c.ms_mode, '')
            ELSE w.extra ->> 'ms_mode' END AS ms_mode
FROM writes w
LEFT JOIN cmds c ON c.cmd_id = (w.op >> 14) & 63
LEFT JOIN answers n ON n.answer_id = w.op >> 20;

-- One row per key a read asked for: schema.sql's view `reads`, whose
-- comment says how reads and writes sort together.
DROP VIEW IF EXISTS reads CASCADE;
CREATE VIEW reads AS
SELECT run_id, seq, after_write, conn_id, t_ns, cmd, key, key_hash, key_len, hit, value_len,
       flags, exptime, class_id
FROM read_log;

DROP VIEW IF EXISTS class_stats CASCADE;
CREATE VIEW class_stats AS
SELECT s.run_id, s.sample_id, s.t_ns, s.phase_id, s.final, c.class_id,
       CAST(json_extract(c.fields, '$.chunk_size') AS bigint)       AS chunk_size,
       CAST(json_extract(c.fields, '$.chunks_per_page') AS bigint)  AS chunks_per_page,
       CAST(json_extract(c.fields, '$.total_pages') AS bigint)      AS total_pages,
       CAST(json_extract(c.fields, '$.total_chunks') AS bigint)     AS total_chunks,
       CAST(json_extract(c.fields, '$.used_chunks') AS bigint)      AS used_chunks,
       CAST(json_extract(c.fields, '$.free_chunks') AS bigint)      AS free_chunks,
       CAST(json_extract(c.fields, '$.mem_requested') AS bigint)    AS mem_requested,
       CAST(json_extract(c.fields, '$.number') AS bigint)           AS number,
       CAST(json_extract(c.fields, '$.evicted') AS bigint)          AS evicted,
       CAST(json_extract(c.fields, '$.outofmemory') AS bigint)      AS outofmemory,
       CAST(json_extract(c.fields, '$.reclaimed') AS bigint)        AS reclaimed,
       CAST(json_extract(c.fields, '$.cmd_set') AS bigint)          AS cmd_set,
       c.fields
FROM samples s JOIN sample_classes c USING (sample_id);

-- Rounding waste per run, sample and class: what memcached pinned
-- (used_chunks * chunk_size) minus what the items asked for (mem_requested).
DROP VIEW IF EXISTS slab_waste CASCADE;
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
DROP VIEW IF EXISTS last_samples CASCADE;
CREATE VIEW last_samples AS
SELECT s.* FROM samples s
WHERE s.sample_id = (SELECT s2.sample_id FROM samples s2 WHERE s2.run_id = s.run_id
                     ORDER BY s2.t_ns DESC, s2.sample_id DESC LIMIT 1);

DROP VIEW IF EXISTS run_settings CASCADE;
CREATE VIEW run_settings AS
SELECT st.run_id, st.version,
       CAST(json_extract(st.settings, '$.growth_factor') AS double precision)     AS growth_factor,
       CAST(json_extract(st.settings, '$.chunk_size') AS bigint)     AS chunk_size_min,
       CAST(json_extract(st.settings, '$.item_size_max') AS bigint)  AS item_size_max,
       CAST(json_extract(st.settings, '$.slab_chunk_max') AS bigint) AS slab_chunk_max,
       CAST(json_extract(st.settings, '$.maxbytes') AS bigint)       AS maxbytes,
       CAST(json_extract(st.settings, '$.slab_automove') AS bigint)  AS slab_automove,
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
DROP VIEW IF EXISTS run_ladder CASCADE;
-- (jsonb_array_elements for json_each; trunc: CAST rounds here, SQLite truncates)
CREATE VIEW run_ladder AS
WITH RECURSIVE recorded AS (
  SELECT m.run_id, (j.ord)::bigint AS class_id, (j.value)::bigint AS chunk_size,
         coalesce(slabtap_try_jsonb(m.value) ->> 'origin', 'recorded') AS origin
  FROM run_meta m,
       jsonb_array_elements_text(CASE jsonb_typeof(slabtap_try_jsonb(m.value) -> 'chunk_sizes')
                                 WHEN 'array' THEN slabtap_try_jsonb(m.value) -> 'chunk_sizes'
                                 ELSE '[]'::jsonb END) WITH ORDINALITY AS j(value, ord)
  WHERE m.key = 'ladder'),
st AS (
  SELECT run_id, growth_factor AS f, chunk_size_min + 48 AS first, slab_chunk_max AS cmax
  FROM run_settings WHERE run_id NOT IN (SELECT run_id FROM recorded)),
l(run_id, class_id, size) AS (
  SELECT run_id, 1::bigint, first FROM st WHERE first < cmax / f
  UNION ALL
  SELECT l.run_id, l.class_id + 1, trunc(((l.size + 7) / 8 * 8) * st.f)::bigint
  FROM l JOIN st USING (run_id)
  WHERE l.class_id < 62 AND trunc(((l.size + 7) / 8 * 8) * st.f) < st.cmax / st.f)
SELECT run_id, class_id, chunk_size, origin FROM recorded
UNION ALL
SELECT run_id, class_id, (size + 7) / 8 * 8 AS chunk_size, 'settings (sql)' FROM l
UNION ALL
SELECT st.run_id, (SELECT count(*) FROM l WHERE l.run_id = st.run_id) + 1, st.cmax,
       'settings (sql)' FROM st;

DROP VIEW IF EXISTS run_summary CASCADE;
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
       CAST(json_extract(ls.stats, '$.evictions') AS bigint) AS evictions,
       CAST(json_extract(ls.stats, '$.curr_items') AS bigint) AS curr_items,
       CAST(json_extract(ls.stats, '$.bytes') AS bigint) AS bytes,
       (SELECT count(*) FROM sets s WHERE s.run_id = r.run_id) AS writes_recorded,
       r.rows_dropped,
       r.crashed
FROM runs r
LEFT JOIN last_samples ls ON ls.run_id = r.run_id
LEFT JOIN run_settings rs ON rs.run_id = r.run_id;

-- Every recorded write with the phase it fell in.
DROP VIEW IF EXISTS sets_phased CASCADE;
CREATE VIEW sets_phased AS
SELECT s.*, p.phase_id, p.name AS phase
FROM sets s
LEFT JOIN phases p ON p.run_id = s.run_id AND s.t_ns >= p.started_ns
                  AND (p.ended_ns IS NULL OR s.t_ns < p.ended_ns);

-- Size histogram of recorded writes: power-of-two buckets of value_len.
DROP VIEW IF EXISTS write_size_histogram CASCADE;
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
DROP VIEW IF EXISTS write_size_histogram_agg CASCADE;
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
DROP VIEW IF EXISTS item_sizes_agg CASCADE;
CREATE VIEW item_sizes_agg AS
SELECT a.run_id, a.class_id, a.body,
       51 + a.body + CASE WHEN CAST(coalesce(rs.cas_enabled, 'yes') AS text) IN ('no', '0', 'false')
                          THEN 0 ELSE 8 END AS ntotal,
       a.outcome, sum(a.writes) AS writes, sum(a.body_bytes) AS body_bytes
FROM agg_items a LEFT JOIN run_settings rs ON rs.run_id = a.run_id
GROUP BY a.run_id, a.class_id, a.body, a.outcome, rs.cas_enabled;

-- Answers by command from the aggregates.
DROP VIEW IF EXISTS answers_agg CASCADE;
CREATE VIEW answers_agg AS
SELECT a.run_id, c.cmd, nullif(c.ms_mode, '') AS ms_mode,
       CASE WHEN a.answer_id = 0 THEN '(other)' ELSE n.answer END AS answer,
       sum(a.writes) AS writes, sum(a.value_bytes) AS value_bytes
FROM agg_answers a LEFT JOIN cmds c ON c.cmd_id = a.cmd_id
LEFT JOIN answers n ON n.answer_id = a.answer_id
GROUP BY a.run_id, a.cmd_id, a.answer_id, c.cmd, c.ms_mode, n.answer;

-- Answer times from the aggregates (bands of two significant digits).
DROP VIEW IF EXISTS latency_histogram_agg CASCADE;
CREATE VIEW latency_histogram_agg AS
SELECT run_id, band_us, sum(writes) AS writes FROM agg_latency GROUP BY run_id, band_us;

-- Per phase: global counters at the phase's first and last sample.
DROP VIEW IF EXISTS phase_deltas CASCADE;
CREATE VIEW phase_deltas AS
WITH bounds AS (
  SELECT p.run_id, p.phase_id, p.name,
         (SELECT sample_id FROM samples s WHERE s.run_id = p.run_id AND s.phase_id = p.phase_id
          ORDER BY t_ns ASC LIMIT 1) AS first_id,
         (SELECT sample_id FROM samples s WHERE s.run_id = p.run_id AND s.phase_id = p.phase_id
          ORDER BY t_ns DESC LIMIT 1) AS last_id
  FROM phases p)
SELECT b.run_id, b.phase_id, b.name AS phase,
       CAST(json_extract(l.stats, '$.evictions') AS bigint)
       - CAST(json_extract(f.stats, '$.evictions') AS bigint) AS evictions,
       CAST(json_extract(l.stats, '$.cmd_set') AS bigint)
       - CAST(json_extract(f.stats, '$.cmd_set') AS bigint) AS cmd_set,
       CAST(json_extract(l.stats, '$.bytes') AS bigint)
       - CAST(json_extract(f.stats, '$.bytes') AS bigint) AS bytes,
       CAST(json_extract(l.stats, '$.curr_items') AS bigint)
       - CAST(json_extract(f.stats, '$.curr_items') AS bigint) AS curr_items,
       CAST(json_extract(l.stats, '$.slabs_moved') AS bigint)
       - CAST(json_extract(f.stats, '$.slabs_moved') AS bigint) AS slabs_moved,
       (l.t_ns - f.t_ns) / 1e9 AS seconds
FROM bounds b JOIN samples f ON f.sample_id = b.first_id JOIN samples l ON l.sample_id = b.last_id;

-- ---------------------------------------------------------------- the fleet

-- Each node's latest run (by start), the one that says what the node is now.
DROP VIEW IF EXISTS fleet_runs CASCADE;
CREATE VIEW fleet_runs AS
SELECT DISTINCT ON (r.node) r.node, r.run_id, r.name, r.started_ns, r.ended_ns, r.crashed
FROM runs r
ORDER BY r.node, r.started_ns DESC, r.run_id DESC;

-- Rounding waste per node and class, from each node's latest sample of its
-- latest run, with the node's total as class_id NULL.
DROP VIEW IF EXISTS fleet_waste CASCADE;
CREATE VIEW fleet_waste AS
SELECT f.node, f.run_id, w.sample_id, w.t_ns, w.class_id, w.chunk_size, w.used_chunks,
       w.total_pages, w.mem_requested, w.allocated, w.waste_bytes, w.waste_pct
FROM fleet_runs f
JOIN last_samples ls ON ls.run_id = f.run_id
JOIN slab_waste w ON w.sample_id = ls.sample_id
UNION ALL
SELECT f.node, f.run_id, ls.sample_id, ls.t_ns, NULL, NULL, sum(w.used_chunks),
       sum(w.total_pages), sum(w.mem_requested), sum(w.allocated), sum(w.waste_bytes),
       round(100.0 * sum(w.waste_bytes) / nullif(sum(w.allocated), 0), 2)
FROM fleet_runs f
JOIN last_samples ls ON ls.run_id = f.run_id
JOIN slab_waste w ON w.sample_id = ls.sample_id
GROUP BY f.node, f.run_id, ls.sample_id, ls.t_ns;

-- Pages per node over time: one row per node and sample (every run of the
-- node), pages summed over classes; calcification shows as a flat line.
DROP VIEW IF EXISTS fleet_pages CASCADE;
CREATE VIEW fleet_pages AS
SELECT r.node, s.run_id, s.sample_id, s.t_ns,
       sum(s.total_pages) AS pages,
       count(*) FILTER (WHERE s.total_pages > 0) AS classes_with_pages,
       sum(s.evicted) AS evicted
FROM class_stats s JOIN runs r USING (run_id)
GROUP BY r.node, s.run_id, s.sample_id, s.t_ns;

-- The fleet's size distribution: every recorded write of every node, in the
-- buckets of write_size_histogram.
DROP VIEW IF EXISTS fleet_sizes CASCADE;
CREATE VIEW fleet_sizes AS
SELECT h.bucket_min, sum(h.writes) AS writes, sum(h.value_bytes) AS value_bytes,
       min(h.min_len) AS min_len, max(h.max_len) AS max_len,
       count(DISTINCT r.node) AS nodes,
       round(100.0 * sum(h.writes) / sum(sum(h.writes)) OVER (), 2) AS pct
FROM write_size_histogram h JOIN runs r USING (run_id)
GROUP BY h.bucket_min;

-- Settings that differ between nodes: for each setting (and `version`)
-- whose value is not the same on every node's latest run, one row per node
-- with its value (NULL: the node does not report it).
DROP VIEW IF EXISTS fleet_settings_diff CASCADE;
CREATE VIEW fleet_settings_diff AS
WITH latest AS (
  SELECT f.node, f.run_id, rs.settings || jsonb_build_object('version', rs.version) AS s
  FROM fleet_runs f JOIN run_settings rs ON rs.run_id = f.run_id),
kv AS (
  SELECT l.node, l.run_id, e.key AS setting, e.value
  FROM latest l, jsonb_each_text(l.s) e),
differing AS (
  SELECT setting FROM kv GROUP BY setting
  HAVING count(DISTINCT value) > 1 OR count(*) < (SELECT count(*) FROM latest))
SELECT l.node, l.run_id, d.setting, kv.value
FROM differing d CROSS JOIN latest l
LEFT JOIN kv ON kv.node = l.node AND kv.setting = d.setting;

-- BEGIN aggregates (issue 21)
-- The aggregates (agg_*, agg_reads) are written by pgstore as store.c
-- writes them (proxy/record/wagg.h, ragg.h): every write and read counted,
-- those of keys --sample-keys did not keep too, upserted in each batch's
-- transaction (a batch committed or shipped from the spill once adds them
-- once). They are never expired: the day partitions of writes may be
-- dropped, the aggregates stay (a few rows per run and minute).
-- The fleet over the aggregates: what fleet_sizes and fleet_waste say,
-- from a few rows per run and minute instead of every write, so they hold
-- for nodes recording a key sample (--sample-keys 1/N) or no rows at all
-- (--sample-keys none). node NULL: the whole fleet.

-- Item sizes (body = key + value length, + 4 when flags: what a slab class
-- holds, memcached's ntotal is 51 + body, + 8 with CAS) of every
-- item-storing write of every run, per node and fleet-wide, in the
-- power-of-two buckets of write_size_histogram; pct of the node's (or the
-- fleet's) writes.
DROP VIEW IF EXISTS fleet_sizes_agg CASCADE;
CREATE VIEW fleet_sizes_agg AS
WITH b AS (
  SELECT r.node, a.body, a.writes, a.value_bytes,
         CASE WHEN a.body >= 1 THEN 1::bigint << (length(ltrim(a.body::bit(64)::text, '0')) - 1)
              ELSE 0 END AS bucket_min
  FROM agg_sizes a JOIN runs r USING (run_id))
SELECT node, bucket_min, sum(writes) AS writes, sum(value_bytes) AS value_bytes,
       min(body) AS min_body, max(body) AS max_body, count(DISTINCT node) AS nodes,
       round(100.0 * sum(writes) / sum(sum(writes)) OVER (PARTITION BY node), 2) AS pct
FROM b
GROUP BY GROUPING SETS ((node, bucket_min), (bucket_min));

-- Rounding waste of the items each node's latest run stored (agg_items,
-- outcome 1) per class: used_chunks the items, mem_requested their ntotal,
-- allocated items times the class's chunk (run_ladder). It equals
-- fleet_waste (memcached's own figures at the last sample) when every key
-- was stored once and nothing left memcached; overwrites, deletes,
-- expiry and evictions make it the waste of what was written, not of what
-- is held. Node totals as class_id NULL, the fleet's as node NULL too.
DROP VIEW IF EXISTS fleet_waste_agg CASCADE;
CREATE VIEW fleet_waste_agg AS
WITH i AS (
  SELECT f.node, f.run_id, a.class_id, sum(a.writes) AS items,
         sum(a.body_bytes + a.writes * (51 + CASE WHEN coalesce(rs.cas_enabled, 'yes')
                                                      IN ('no', '0', 'false') THEN 0 ELSE 8 END))
           AS mem_requested
  FROM fleet_runs f
  JOIN agg_items a ON a.run_id = f.run_id
  LEFT JOIN run_settings rs ON rs.run_id = f.run_id
  WHERE a.outcome = 1 AND a.class_id > 0
  GROUP BY f.node, f.run_id, a.class_id),
w AS (
  SELECT i.node, i.run_id, i.class_id, l.chunk_size, i.items, i.mem_requested,
         i.items * l.chunk_size AS allocated
  FROM i LEFT JOIN run_ladder l ON l.run_id = i.run_id AND l.class_id = i.class_id)
SELECT node, CASE WHEN GROUPING(node) = 0 THEN min(run_id) END AS run_id, class_id,
       CASE WHEN GROUPING(class_id) = 0 THEN min(chunk_size) END AS chunk_size,
       sum(items) AS used_chunks,
       sum(mem_requested) AS mem_requested, sum(allocated) AS allocated,
       sum(allocated) - sum(mem_requested) AS waste_bytes,
       round(100.0 * (sum(allocated) - sum(mem_requested)) / nullif(sum(allocated), 0), 2)
         AS waste_pct
FROM w
GROUP BY GROUPING SETS ((node, class_id), (node), ());

-- Evictions per node and class at each node's latest sample of its latest
-- run (memcached's counters, cumulative since it started), beside the
-- items that run stored in the class (agg_items, outcome 1); node totals
-- as class_id NULL, the fleet's as node NULL too.
DROP VIEW IF EXISTS fleet_evictions CASCADE;
CREATE VIEW fleet_evictions AS
WITH e AS (
  SELECT f.node, f.run_id, c.class_id, coalesce(c.evicted, 0) AS evicted,
         coalesce(c.total_pages, 0) AS total_pages,
         coalesce((SELECT sum(a.writes) FROM agg_items a
                   WHERE a.run_id = f.run_id AND a.class_id = c.class_id AND a.outcome = 1), 0)
           AS stored_writes
  FROM fleet_runs f
  JOIN last_samples ls ON ls.run_id = f.run_id
  JOIN class_stats c ON c.sample_id = ls.sample_id)
SELECT node, CASE WHEN GROUPING(node) = 0 THEN min(run_id) END AS run_id, class_id,
       sum(evicted) AS evicted, sum(total_pages) AS total_pages,
       sum(stored_writes) AS stored_writes,
       round(1000.0 * sum(evicted) / nullif(sum(stored_writes), 0), 3)
         AS evicted_per_1000_writes
FROM e
GROUP BY GROUPING SETS ((node, class_id), (node), ());
-- END aggregates
