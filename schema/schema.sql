-- slabtap schema: the single source of truth for every table and view.
-- Embedded into the binary at build time and applied by store_open().
-- The version lives in PRAGMA user_version; upgrade steps for files written
-- by older versions are in proxy/store.c (store_upgrade).
PRAGMA journal_mode = WAL;

CREATE TABLE IF NOT EXISTS runs (
  run_id        INTEGER PRIMARY KEY,
  name          TEXT NOT NULL,
  started_ns    INTEGER NOT NULL,          -- unix time, nanoseconds
  ended_ns      INTEGER,                   -- NULL while running or after a crash
  upstream      TEXT NOT NULL,             -- host:port of memcached
  slabtap_version TEXT NOT NULL,
  options       TEXT NOT NULL,             -- the proxy's command line options
  key_mode      TEXT NOT NULL,             -- full | prefix | hash
  rows_recorded INTEGER NOT NULL DEFAULT 0,
  rows_dropped  INTEGER NOT NULL DEFAULT 0
);

-- One row per write (set add replace append prepend cas, ms) and per delete,
-- touch, incr/decr (value_len NULL for those).
CREATE TABLE IF NOT EXISTS sets (
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  seq        INTEGER NOT NULL,             -- order the proxy saw the request, per run
  conn_id    INTEGER NOT NULL,             -- client connection number, per run
  t_ns       INTEGER NOT NULL,             -- unix time the request was read, ns
  cmd        TEXT NOT NULL,                -- set add ... ms md delete touch incr decr ma
  key        TEXT,                         -- full key, or prefix, or NULL (per key_mode)
  key_hash   INTEGER NOT NULL,             -- 64-bit FNV-1a of the whole key (signed)
  key_len    INTEGER NOT NULL,
  value_len  INTEGER,                      -- data block without \r\n
  flags      INTEGER,
  exptime    INTEGER,
  answer     TEXT NOT NULL,                -- STORED NOT_STORED ... | noreply | quiet | upstream_error
  latency_ns INTEGER,                      -- last request byte forwarded -> first answer byte
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

-- Reads are counted, not recorded row by row: one row per run, second, command.
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

PRAGMA user_version = 1;
