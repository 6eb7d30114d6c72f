#!/usr/bin/python3
"""test_schema: the database file across slabtap versions, and the shipped
queries.

- upgrade: a v1 file (runs, sets without class_id, get_counts;
  user_version 1) with rows in it is opened by the proxy: afterwards
  user_version is 3 (v1 -> v2 adds class_id, v2 -> v3 ms_mode), the old
  rows are intact, the new run's writes carry class_id, and the upgraded
  file opens again.
- refusal: user_version 99 (newer than this slabtap) and a file that is not
  SQLite are refused with a clear message and exit 1, and left untouched.
- schema/queries/*.sql: each runs without error (sqlite3 -bail) against a
  file with two runs -- with the parameters unset and set to the earlier
  run -- and yields rows.
- known bugs, as expected failures: a failed upgrade is not atomic; waste
  totals go negative with chunked (> slab_chunk_max) items.

Needs memcached and sqlite3 on PATH and $SLABTAP. 127.0.0.1 only; bounded
waits; every proxy run must exit cleanly without a sanitizer report.
"""
import csv
import glob
import io
import os
import re
import sqlite3
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

SRC = mctest.SRC
HOST = mctest.HOST

# The schema as slabtap 1 wrote it (schema/schema.sql at user_version 1).
V1_DDL = """
PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS runs (
  run_id        INTEGER PRIMARY KEY,
  name          TEXT NOT NULL,
  started_ns    INTEGER NOT NULL,
  ended_ns      INTEGER,
  upstream      TEXT NOT NULL,
  slabtap_version TEXT NOT NULL,
  options       TEXT NOT NULL,
  key_mode      TEXT NOT NULL,
  rows_recorded INTEGER NOT NULL DEFAULT 0,
  rows_dropped  INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS sets (
  run_id     INTEGER NOT NULL REFERENCES runs(run_id),
  seq        INTEGER NOT NULL,
  conn_id    INTEGER NOT NULL,
  t_ns       INTEGER NOT NULL,
  cmd        TEXT NOT NULL,
  key        TEXT,
  key_hash   INTEGER NOT NULL,
  key_len    INTEGER NOT NULL,
  value_len  INTEGER,
  flags      INTEGER,
  exptime    INTEGER,
  answer     TEXT NOT NULL,
  latency_ns INTEGER,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS get_counts (
  run_id      INTEGER NOT NULL REFERENCES runs(run_id),
  second      INTEGER NOT NULL,
  cmd         TEXT NOT NULL,
  requests    INTEGER NOT NULL,
  keys        INTEGER NOT NULL,
  hits        INTEGER NOT NULL,
  misses      INTEGER NOT NULL,
  bytes_returned INTEGER NOT NULL,
  PRIMARY KEY (run_id, second, cmd)
) WITHOUT ROWID;
PRAGMA user_version = 1;
"""

V1_RUN = dict(run_id=1, name="v1-run", started_ns=1700000000000000000,
              ended_ns=1700000005000000000, upstream="127.0.0.1:11211",
              slabtap_version="0.1.0", options="--upstream 127.0.0.1:11211 --db x.db",
              key_mode="prefix", rows_recorded=2, rows_dropped=0)
V1_SETS = [
    dict(run_id=1, seq=1, conn_id=1, t_ns=1700000001000000000, cmd="set", key="user",
         key_hash=-1234567890123, key_len=9, value_len=100, flags=0, exptime=0,
         answer="STORED", latency_ns=52000),
    dict(run_id=1, seq=2, conn_id=1, t_ns=1700000002000000000, cmd="delete", key="user",
         key_hash=42, key_len=9, value_len=None, flags=None, exptime=None,
         answer="DELETED", latency_ns=None),
]
V1_GETS = dict(run_id=1, second=1700000001, cmd="get", requests=3, keys=4, hits=2, misses=2,
               bytes_returned=200)


def make_v1(path):
    con = sqlite3.connect(path)
    try:
        con.executescript(V1_DDL)
        with con:
            for table, rows in (("runs", [V1_RUN]), ("sets", V1_SETS), ("get_counts", [V1_GETS])):
                for r in rows:
                    con.execute("INSERT INTO %s (%s) VALUES (%s)"
                                % (table, ", ".join(r), ", ".join("?" * len(r))),
                                list(r.values()))
    finally:
        con.close()


def rows(path, sql, args=()):
    return mctest.db_rows(path, sql, args)


def user_version(path):
    return mctest.db_scalar(path, "PRAGMA user_version")


def columns(path, table):
    return [r["name"] for r in rows(path, "PRAGMA table_info(%s)" % table)]


def run_refused(db):
    """Runs the proxy on db expecting it to refuse the file at once: returns
    (exit code, stderr text). A proxy that starts instead (on a port of the
    kernel's choosing, port 0) is killed by the timeout and the test fails."""
    with mctest.reserve_port() as upstream:  # refuses connections
        argv = [mctest.SLABTAP, "proxy", "--listen", "%s:0" % HOST,
                "--upstream", "%s:%d" % (HOST, upstream.port), "--db", db, "--http", "off"]
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
                               env=mctest.slabtap_env())
        except subprocess.TimeoutExpired as e:
            raise AssertionError("the proxy accepted %s and kept running: %r" % (db, e.stderr))
    return r.returncode, r.stderr.decode("utf-8", "replace") + r.stdout.decode("utf-8", "replace")


def run_query(db, path, params=None):
    """sqlite3 -bail -header -csv db < (params + file): the rows as dicts."""
    with open(path) as f:
        sql = f.read()
    head = "".join(".parameter set %s %s\n" % (k, v) for k, v in (params or {}).items())
    r = subprocess.run(["sqlite3", "-bail", "-header", "-csv", db], input=(head + sql).encode(),
                       capture_output=True, timeout=30)
    if r.returncode != 0 or r.stderr:
        raise AssertionError("%s %r: exit %d: %s" % (os.path.basename(path), params, r.returncode,
                                                     r.stderr.decode(errors="replace")))
    return list(csv.DictReader(io.StringIO(r.stdout.decode("utf-8"))))


def send_sets(port, items):
    with mctest.connect(port, timeout=30) as s:
        mctest.set_items(s, items)


class Schema(mctest.ServerTestCase):
    workdir_prefix = "slabtap-schema-"

    def proxy(self, upstream_port, db, name, keys="full", extra=(), http=False):
        return super().proxy(upstream_port, db=db, name=name, keys=keys, http=http,
                             extra=["--stats-interval", "100"] + list(extra))

    # ---- upgrade -------------------------------------------------------------------

    def test_upgrade_from_v1(self):
        db = self.path("v1.db")
        make_v1(db)
        self.assertEqual(user_version(db), 1)
        self.assertNotIn("class_id", columns(db, "sets"))
        mc = self.mc(name="mc-up")
        px = self.proxy(mc.port, db, "proxy-up")
        send_sets(px.port, [(b"new:1", b"abc"), (b"new:22", b"x" * 500), (b"new:333", b"y" * 5000)])
        self.stop_clean(px)

        self.assertEqual(user_version(db), 3)
        self.assertIn("class_id", columns(db, "sets"))
        self.assertIn("ms_mode", columns(db, "sets"))
        for t in ("phases", "samples", "sample_classes", "settings"):
            self.assertTrue(columns(db, t), "table %s missing after the upgrade" % t)
        # the old rows, column for column
        self.assertEqual(rows(db, "SELECT * FROM runs WHERE run_id = 1"), [V1_RUN])
        old = rows(db, "SELECT * FROM sets WHERE run_id = 1 ORDER BY seq")
        self.assertEqual(old, [dict(r, class_id=None, ms_mode=None) for r in V1_SETS])
        self.assertEqual(rows(db, "SELECT * FROM get_counts WHERE run_id = 1"), [V1_GETS])
        # the new run, tagged
        new_runs = rows(db, "SELECT run_id, name, ended_ns, rows_recorded FROM runs WHERE run_id != 1")
        self.assertEqual(len(new_runs), 1, new_runs)
        self.assertEqual(new_runs[0]["run_id"], 2)
        self.assertIsNotNone(new_runs[0]["ended_ns"])
        self.assertEqual(new_runs[0]["rows_recorded"], 3)
        new = rows(db, "SELECT key, class_id, answer FROM sets WHERE run_id = 2 ORDER BY seq")
        # the model's class for each write is the class memcached put it in
        # (48 + 5 + 1 + 3 + 2 + 8 = 67 bytes: class 1, chunk 96)
        self.assertEqual([r["key"] for r in new], ["new:1", "new:22", "new:333"])
        self.assertTrue(all(r["class_id"] is not None for r in new), new)
        self.assertTrue(all(r["answer"] == "STORED" for r in new), new)
        final_classes = {r["class_id"] for r in rows(
            db, "SELECT class_id FROM slab_waste WHERE run_id = 2 AND final = 1 AND used_chunks > 0")}
        self.assertEqual({r["class_id"] for r in new}, final_classes)
        self.assertEqual(new[0]["class_id"], 1)
        # the views cover both runs
        summary = rows(db, "SELECT run_id, writes_recorded FROM run_summary ORDER BY run_id")
        self.assertEqual(summary, [{"run_id": 1, "writes_recorded": 2},
                                   {"run_id": 2, "writes_recorded": 3}])

        # the upgraded file opens again, unchanged in shape
        px = self.proxy(mc.port, db, "proxy-up2")
        send_sets(px.port, [(b"again", b"z")])
        self.stop_clean(px)
        self.assertEqual(user_version(db), 3)
        self.assertEqual(rows(db, "SELECT * FROM runs WHERE run_id = 1"), [V1_RUN])
        self.assertEqual(mctest.db_scalar(db, "SELECT count(*) FROM runs"), 3)
        self.assertEqual(mctest.db_scalar(db, "SELECT class_id FROM sets WHERE run_id = 3"), 1)

    def test_newer_version_refused(self):
        db = self.path("v99.db")
        con = sqlite3.connect(db)
        con.executescript("CREATE TABLE future (x); INSERT INTO future VALUES (7);"
                          "PRAGMA user_version = 99;")
        con.close()
        rc, err = run_refused(db)
        self.assertEqual(rc, 1, err)
        self.assertEqual(mctest.sanitizer_errors(err), [], err)
        self.assertIn("schema version 99", err)
        self.assertIn("newer", err)
        self.assertIn(db, err)
        self.assertEqual(user_version(db), 99)
        self.assertEqual([r["name"] for r in rows(db, "SELECT name FROM sqlite_master")], ["future"])

    def test_not_sqlite_refused(self):
        for name, content in (("text.db", b"this is not a database\n" * 300),
                              ("header.db", b"SQLite format 3\x00" + os.urandom(4080))):
            db = self.path(name)
            with open(db, "wb") as f:
                f.write(content)
            rc, err = run_refused(db)
            self.assertEqual(rc, 1, err)
            self.assertEqual(mctest.sanitizer_errors(err), [], err)
            self.assertIn("not a SQLite database", err, name)
            self.assertIn(db, err)
            with open(db, "rb") as f:
                self.assertEqual(f.read(), content, "%s was changed" % name)
            self.assertFalse(os.path.exists(db + "-wal"), name)

    def test_failed_upgrade_leaves_file_reopenable(self):
        """KNOWN BUG (proxy/store.c, store_upgrade/store_open): the 1 -> 2
        step (ALTER TABLE sets ADD COLUMN class_id) is committed on its own,
        before schema.sql runs and bumps user_version. When anything after
        it fails (here a table where schema.sql drops a view; equally a
        crash or a full disk), the file stays at user_version 1 WITH
        class_id, and every later open fails for good: "duplicate column
        name: class_id". The upgrade and the version bump must be one
        transaction. Remove the decorator once fixed."""
        db = self.path("v1-blocked.db")
        make_v1(db)
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE class_stats (x)")  # schema.sql: DROP VIEW class_stats fails
        con.close()
        rc, err = run_refused(db)
        self.assertEqual(rc, 1, err)
        self.assertEqual(user_version(db), 1)
        con = sqlite3.connect(db)
        con.execute("DROP TABLE class_stats")
        con.close()
        # the obstacle is gone: the upgrade must now go through
        self.assertNotIn("class_id", columns(db, "sets"),
                         "a refused upgrade left sets.class_id behind at user_version 1")
        mc = self.mc(name="mc-blocked")
        px = self.proxy(mc.port, db, "proxy-blocked")
        self.stop_clean(px)
        self.assertEqual(user_version(db), 3)

    # ---- shipped queries ------------------------------------------------------------

    RUNS = (("exp2_f1_25", "1.25", "full"), ("exp2_f1_08", "1.08", "prefix"))

    def two_runs(self):
        """A file with two runs named like experiment 2's (so the experiment
        queries find them too): -f 1.25 with --keys full, -f 1.08 with
        --keys prefix. Each has a phase 'small' (small writes) then a phase
        'large' (larger writes under three prefixes), reads, a stats time
        series, and run_meta rows as the experiment runner writes them."""
        db = self.path("two.db")
        for run, factor, keys in self.RUNS:
            mc = self.mc(name="mc-" + run, extra=["-f", factor])
            px = self.proxy(mc.port, db, "proxy-" + run, keys=keys, http=True,
                            extra=["--run", run])
            mctest.http_json(px.http_port, "POST", "/api/phase?name=small")
            send_sets(px.port, [(b"session/%d" % i, b"s" * (20 + i)) for i in range(60)])
            mctest.http_json(px.http_port, "POST", "/api/phase?name=large")
            items = []
            for i in range(60):
                items.append((b"user:%d" % i, b"u" * (100 + 37 * i)))
                items.append((b"blob.%d" % i, b"b" * (3000 + 401 * i)))
            send_sets(px.port, items)
            with mctest.connect(px.port) as s:
                s.sendall(b"get user:1 user:2 nope\r\n")
                mctest.recv_until(s, b"END\r\n")
            self.stop_clean(px)
            mc.stop()
        con = sqlite3.connect(db)
        with con:
            for run_id, (run, factor, _) in enumerate(self.RUNS, 1):
                for k, v in (("memcached_version", "1.6.18"), ("memcached_flags", "-f " + factor),
                             ("workload", "test"), ("writes_sent", "180")):
                    con.execute("INSERT INTO run_meta (run_id, key, value) VALUES (?, ?, ?)",
                                (run_id, k, v))
        con.close()
        return db

    def test_queries_on_two_runs(self):
        db = self.two_runs()
        (a_name, a_f, _), (b_name, b_f, _) = self.RUNS
        self.assertEqual([r["name"] for r in rows(db, "SELECT name FROM runs ORDER BY run_id")],
                         [a_name, b_name])
        files = sorted(glob.glob(os.path.join(SRC, "schema", "queries", "*.sql")))
        names = [os.path.basename(f) for f in files]
        for want in ("compare_runs.sql", "waste_by_class.sql", "pages_timeline.sql",
                     "top_prefixes.sql"):
            self.assertIn(want, names)
        by_name = {"@a": "'%s'" % a_name, "@b": "'%s'" % b_name, "@run": "'%s'" % a_name}
        by_id = {"@a": "1", "@b": "2", "@run": "1"}
        for f in files:
            base = os.path.basename(f)
            with open(f) as fh:
                sql = fh.read()
            used = sorted(set(re.findall(r"@[A-Za-z_]\w*", sql)) & set(by_name))
            # a query whose every parameter has a default (`@x IS NULL`) must
            # yield rows with none set, too
            defaults = all(("%s IS NULL" % p) in sql for p in used)
            variants = [({p: by_name[p] for p in used}, True), ({p: by_id[p] for p in used}, True),
                        ({}, defaults)]
            for params, want_rows in variants:
                out = run_query(db, f, params)
                if want_rows:
                    self.assertGreater(len(out), 0, "%s %r: no rows" % (base, params))
                if not params:
                    continue
                if base == "compare_runs.sql":
                    by = {r["metric"]: r for r in out}
                    self.assertEqual((by["run"]["a"], by["run"]["b"]), (a_name, b_name))
                    self.assertEqual((float(by["growth_factor"]["a"]), float(by["growth_factor"]["b"])),
                                     (float(a_f), float(b_f)))
                    self.assertEqual((by["writes_recorded"]["a"], by["writes_recorded"]["b"]),
                                     ("180", "180"))
                    self.assertEqual(by["memcached_version"]["a"], by["memcached_version"]["b"])
                elif base in ("waste_by_class.sql", "exp_waste.sql"):
                    classes = [r for r in out if r["class_id"].isdigit()]
                    total = [r for r in out if r["class_id"] == "TOTAL"]
                    self.assertEqual(len(total), 1, out)
                    self.assertGreater(len(classes), 2, out)
                    self.assertEqual(int(total[0]["used_chunks"]),
                                     sum(int(r["used_chunks"]) for r in classes))
                    self.assertEqual(int(total[0]["used_chunks"]), 180)
                    glob_rows = [r for r in out if r["class_id"] == "global_bytes"]
                    if glob_rows:  # memcached's bytes == the summed mem_requested
                        self.assertEqual(glob_rows[0]["mem_requested"], total[0]["mem_requested"])
                elif base == "top_prefixes.sql":
                    self.assertEqual({r["prefix"] for r in out}, {"user", "session", "blob"}, out)
                    self.assertEqual(sum(int(r["writes"]) for r in out), 180)
                    for r in out:
                        self.assertNotEqual(r["chunk_bytes"], "", r)
                elif base == "pages_timeline.sql":
                    self.assertTrue(all(int(r["total_pages"]) > 0 for r in out))
                    self.assertTrue(all(float(r["seconds"]) >= 0 for r in out))
                    self.assertTrue({r["phase"] for r in out} <= {"small", "large", ""}, out)
                elif base == "exp2_growth_factor.sql":
                    self.assertEqual(sorted(r["run"] for r in out), sorted([a_name, b_name]))
                    ladder = {r["run"]: int(r["classes_in_ladder"]) for r in out}
                    self.assertGreater(ladder[b_name], ladder[a_name])
        # the ladder view rebuilt from `stats settings` matches the chunk
        # sizes memcached reported, class by class, in both runs
        if "run_ladder" in {r["name"] for r in rows(db, "SELECT name FROM sqlite_master")}:
            bad = rows(db, "SELECT DISTINCT c.run_id, c.class_id, c.chunk_size, l.chunk_size AS model"
                           " FROM class_stats c LEFT JOIN run_ladder l"
                           "   ON l.run_id = c.run_id AND l.class_id = c.class_id"
                           " WHERE l.chunk_size IS NOT c.chunk_size")
            self.assertEqual(bad, [])
            # and the writes' class tags are classes memcached filled
            untagged = rows(db, "SELECT count(*) AS n FROM sets WHERE class_id IS NULL")
            self.assertEqual(untagged, [{"n": 0}])

    def test_waste_totals_with_chunked_items(self):
        """KNOWN BUG (schema/schema.sql, views slab_waste / run_summary, and
        schema/queries/waste_by_class.sql): an item over slab_chunk_max
        (512 KiB by default) is counted in `stats items` of the largest
        class (mem_requested = its whole size) while its header and tail
        chunk pin chunks of smaller classes that have no mem_requested. The
        largest class then shows negative waste, the small ones NULL waste,
        and the totals are wrong: waste_bytes != allocated - mem_requested
        (negative, even). Remove the decorator once fixed."""
        db = self.path("chunked.db")
        mc = self.mc(name="mc-chunked")
        px = self.proxy(mc.port, db, "proxy-chunked")
        send_sets(px.port, [(b"big", b"z" * 600000), (b"small", b"a" * 100)])
        self.stop_clean(px)
        s = rows(db, "SELECT allocated, mem_requested, waste_bytes FROM run_summary")[0]
        self.assertEqual(s["mem_requested"], 600000 + 3 + 48 + 1 + 2 + 8 + 100 + 5 + 48 + 1 + 2 + 8)
        self.assertEqual(s["waste_bytes"], s["allocated"] - s["mem_requested"], s)
        self.assertGreaterEqual(s["waste_bytes"], 0, s)
        out = run_query(db, os.path.join(SRC, "schema", "queries", "waste_by_class.sql"))
        total = out[-1]
        self.assertEqual(int(total["waste_bytes"]),
                         int(total["allocated"]) - int(total["mem_requested"]), out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
