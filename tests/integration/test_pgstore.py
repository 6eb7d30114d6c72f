#!/usr/bin/python3
"""test_pgstore: the PostgreSQL store (proxy/record/pgstore.c) against a
throwaway cluster (pgcluster.py), driven by bench/pg_writer_bench.

- rows: 30,000 writes of every shape the encoder has a case for, pushed out
  of order within reads and across a UTC midnight, read back through the
  view `sets` by the bench (--check: every column of every row), and here:
  each seq exactly once, in two day partitions, the run row's counts.
- two nodes at once: two benches writing simultaneously with different
  --node (both crossing the same midnight, so both create partitions at
  once) get distinct run ids, and each run holds exactly its rows.
- views: every view of schema.sql and the fleet views answer, and say what
  the two nodes wrote (fleet_settings_diff names growth_factor, fleet_sizes
  counts every write, fleet_waste has a total per node).
- names: the PostgreSQL schema (build/schema/pg/schema.sql) has the tables,
  columns and views of the SQLite one (build/schema/schema.sql, applied to
  SQLite here), but for the documented dialect differences (the -- @sqlite /
  -- @pg sections of schema/schema.sql.in, whence schema/sqlgen.c derives
  both at build time).
- versions: a second open leaves the schema alone; a newer version is
  refused with a clear message.
- crashed: a bench killed mid-run is marked crashed with its rows counted
  when the next store opens; a live run is not.
- login refused: a wrong password gives a clear error naming the role, and
  neither the password given nor the right one appears anywhere in what
  the bench prints; the right password works.

Needs PostgreSQL (initdb; tests/run.sh installs it) and pg_writer_bench
(beside $SLABTAP, or $PG_WRITER_BENCH). 127.0.0.1 only; bounded waits.
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
import pgcluster  # noqa: E402

BENCH = os.environ.get("PG_WRITER_BENCH") or os.path.join(os.path.dirname(mctest.SLABTAP),
                                                          "pg_writer_bench")
# Both schemas come from schema/schema.sql.in (schema/sqlgen.c): these are
# its -- @sqlite and -- @pg sections. Reads (issue 19): SQLite's compact
# tables; PostgreSQL keeps plain columns in read_log; the view `reads` is in
# both.
SQLITE_ONLY_TABLES = {"arrivals", "write_runs",
                      "read_runs", "read_keys", "read_rows", "read_extra", "read_arrivals"}
PG_ONLY_TABLES = {"schema_version", "read_log"}
PG_EXTRA_COLUMNS = {"writes": {"run_id", "seq", "t_ns", "conn_id"}, "runs": {"node"}}
# issue 22's views (item_events, snapshots, snapshot_items)
TAP_VIEWS = {"item_event_keys", "snapshot_item_keys", "evictions", "evictions_per_class_minute",
             "evictions_by_prefix", "snapshot_class_sizes", "snapshot_size_histogram",
             "snapshot_age_histogram", "snapshot_idle_histogram", "snapshot_ttl_histogram",
             "snapshot_prefixes"}
# issue 23's views over the shadows (test_shadow_store.py checks them on both)
SHADOW_VIEWS = {"shadow_starts", "targets", "target_samples", "target_sample_classes",
                "target_latest", "target_span", "target_class_latest", "target_totals",
                "target_compare", "target_reads_per_second"}
FLEET_VIEWS = {"fleet_runs", "fleet_waste", "fleet_pages", "fleet_sizes", "fleet_settings_diff",
               "fleet_sizes_agg", "fleet_waste_agg", "fleet_evictions"}


SINK_TWIN = os.environ.get("SINK_TWIN") or os.path.join(os.path.dirname(mctest.SLABTAP),
                                                        "sink_twin")
# the aggregates (schema.sql), each with every column but run_id; a prefix
# by its text (key_prefixes: each store numbers its own)
AGG_TABLES = {
    "agg_sizes": "minute, body, writes, value_bytes",
    "agg_latency": "second, band_us, writes",
    "agg_prefixes": "minute, (SELECT prefix FROM key_prefixes k WHERE k.prefix_id = a.prefix_id),"
                    " writes, value_bytes",
    "agg_items": "minute, class_id, body, outcome, writes, body_bytes",
    "agg_answers": "minute, cmd_id, answer_id, writes, value_bytes",
    "agg_prefix_classes": "minute, (SELECT prefix FROM key_prefixes k"
                          " WHERE k.prefix_id = a.prefix_id), class_id, writes, body_bytes",
    "agg_reads": "minute, class_id, reads, hits, misses",
    "agg_runs": "run_id - run_id",  # listed: one row
    "agg_item_runs": "run_id - run_id",
}


def sink_twin(db, rows, *args):
    """sink_twin's run id (the same rows into a SQLite file or PostgreSQL)."""
    p = subprocess.run([SINK_TWIN, db, str(rows)] + list(args), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=mctest.slabtap_env(), timeout=300)
    assert p.returncode == 0 and not mctest.sanitizer_errors(p.stderr), p.stdout + p.stderr
    return int(p.stdout.split()[2])


def bench(uri, rows, *args, timeout=300):
    p = subprocess.run([BENCH, uri, str(rows)] + list(args), stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=mctest.slabtap_env(), timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_id_of(out):
    for line in out.splitlines():
        if line.startswith("pg_writer_bench: run "):
            return int(line.split()[2])
    raise AssertionError("no run id in:\n" + out)


class PgStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(BENCH):
            raise AssertionError("%s is not built (cmake --build ... --target pg_writer_bench)"
                                 % BENCH)
        cls.pg = pgcluster.PgCluster()

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()

    def ok(self, rc, out, err):
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(mctest.sanitizer_errors(err), [], err)

    def test_01_rows_exactly_once(self):
        rc, out, err = bench(self.pg.uri(), 30000, "--check", "--jobs", "--midnight",
                             "--node", "solo", "--batch", "1000")
        self.ok(rc, out, err)
        self.assertIn("every row reads back exactly through the view sets", out)
        run = run_id_of(out)
        n, distinct, lo, hi = self.pg.psql(
            "SELECT count(*), count(DISTINCT seq), min(seq), max(seq) FROM writes"
            " WHERE run_id = %d" % run)[0]
        self.assertEqual((n, distinct, lo, hi), ("30000", "30000", "1", "30000"))
        parts = self.pg.psql("SELECT tableoid::regclass, count(*) FROM writes WHERE run_id = %d"
                             " GROUP BY 1 ORDER BY 1" % run)
        self.assertEqual(len(parts), 2, parts)  # both sides of midnight
        node, rec, ended, crashed = self.pg.psql(
            "SELECT node, rows_recorded, ended_ns IS NOT NULL, crashed FROM runs"
            " WHERE run_id = %d" % run)[0]
        self.assertEqual((node, rec, ended, crashed), ("solo", "30000", "t", "0"))

    def test_02_two_nodes_at_once(self):
        results = {}

        def go(node, growth):
            results[node] = bench(self.pg.uri(), 20000, "--check", "--jobs", "--midnight",
                                  "--node", node, "--growth", growth, "--batch", "500")
        threads = [threading.Thread(target=go, args=a) for a in (("a", "1.25"), ("b", "1.08"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        runs = {}
        for node in ("a", "b"):
            rc, out, err = results[node]
            self.ok(rc, out, err)
            self.assertIn("every row reads back exactly", out)
            runs[node] = run_id_of(out)
        self.assertNotEqual(runs["a"], runs["b"])
        for node, run in runs.items():
            got = self.pg.psql("SELECT r.node, count(w.*), count(DISTINCT w.seq) FROM runs r"
                               " JOIN writes w USING (run_id) WHERE run_id = %d GROUP BY r.node"
                               % run)
            self.assertEqual(got, [[node, "20000", "20000"]])

    def test_03_views_answer(self):
        if not self.pg.scalar("SELECT count(*) FROM runs WHERE node IN ('a', 'b')") == "2":
            self.test_02_two_nodes_at_once()
        views = [r[0] for r in self.pg.psql(
            "SELECT table_name FROM information_schema.views WHERE table_schema = 'public'"
            " ORDER BY 1")]
        for v in views:
            rows = self.pg.psql("SELECT count(*) FROM (SELECT * FROM %s) v" % v)
            # the bench records no reads: test_reads.py checks `reads` in PostgreSQL;
            # nor evictions or snapshots: test_taps_store.py checks TAP_VIEWS on both;
            # nor shadows: test_shadow_store.py checks SHADOW_VIEWS on both
            if v not in {"fleet_settings_diff", "reads"} | TAP_VIEWS | SHADOW_VIEWS:
                self.assertGreater(int(rows[0][0]), 0, "view %s is empty" % v)
        diff = self.pg.psql("SELECT node, value FROM fleet_settings_diff"
                            " WHERE setting = 'growth_factor' AND node IN ('a', 'b') ORDER BY 1")
        self.assertEqual(diff, [["a", "1.25"], ["b", "1.08"]])
        total = self.pg.scalar("SELECT count(*) FROM sets WHERE value_len IS NOT NULL")
        self.assertEqual(self.pg.scalar("SELECT sum(writes) FROM fleet_sizes"), total)
        totals = self.pg.psql("SELECT node, allocated > 0, waste_pct FROM fleet_waste"
                              " WHERE class_id IS NULL AND node IN ('a', 'b') ORDER BY 1")
        self.assertEqual([r[:2] for r in totals], [["a", "t"], ["b", "t"]])
        pages = self.pg.psql("SELECT count(*), count(DISTINCT node) FROM fleet_pages"
                             " WHERE node IN ('a', 'b')")[0]
        self.assertGreater(int(pages[0]), 2)
        self.assertEqual(pages[1], "2")
        # the ladder rebuilt from the settings, as schema.sql's run_ladder does
        ladder = self.pg.psql("SELECT l.chunk_size FROM run_ladder l JOIN runs r USING (run_id)"
                              " WHERE r.node = 'a' ORDER BY class_id LIMIT 4")
        self.assertEqual([r[0] for r in ladder], ["96", "120", "152", "192"])

    def test_04_names_match_sqlite(self):
        with open(os.path.join(mctest.GEN_SQL, "schema.sql")) as f:
            db = sqlite3.connect(":memory:")
            db.executescript(f.read())
        lite = {}
        for name, kind in db.execute("SELECT name, type FROM sqlite_master"
                                     " WHERE type IN ('table', 'view')"):
            lite[name] = (kind, {r[1] for r in db.execute("PRAGMA table_info(%s)" % name)})
        pg = {}
        for name, kind, col in self.pg.psql(
                "SELECT c.table_name, t.table_type, c.column_name FROM information_schema.columns c"
                " JOIN information_schema.tables t USING (table_schema, table_name)"
                " WHERE c.table_schema = 'public' AND c.table_name NOT LIKE 'writes\\_2%'"):
            kind = "view" if kind == "VIEW" else "table"
            pg.setdefault(name, (kind, set()))[1].add(col)
        self.assertEqual(set(lite) - SQLITE_ONLY_TABLES, set(pg) - PG_ONLY_TABLES - FLEET_VIEWS)
        for name, (kind, cols) in lite.items():
            if name in SQLITE_ONLY_TABLES:
                continue
            self.assertEqual(pg[name][0], kind, name)
            self.assertEqual(pg[name][1] - PG_EXTRA_COLUMNS.get(name, set()), cols, name)

    def test_05_schema_versions(self):
        rc, out, err = bench(self.pg.uri(), 10)
        self.ok(rc, out, err)
        before = self.pg.psql("SELECT version, sha256 FROM schema_version")
        self.assertEqual(before[0][0], "4")
        oid = self.pg.scalar("SELECT 'sets'::regclass::oid")
        rc, out, err = bench(self.pg.uri(), 10)
        self.ok(rc, out, err)
        # same version and text: nothing reapplied (the view is the same object)
        self.assertEqual(self.pg.scalar("SELECT 'sets'::regclass::oid"), oid)
        self.pg.psql("UPDATE schema_version SET version = 99")
        try:
            rc, out, err = bench(self.pg.uri(), 10)
            self.assertEqual(rc, 1, out + err)
            self.assertIn("schema version 99 is newer than this slabtap (4)", err)
        finally:
            self.pg.psql("UPDATE schema_version SET version = 4")
        # a changed text (same version) is applied again
        self.pg.psql("UPDATE schema_version SET sha256 = 'x'")
        rc, out, err = bench(self.pg.uri(), 10)
        self.ok(rc, out, err)
        self.assertEqual(self.pg.psql("SELECT version, sha256 FROM schema_version"), before)
        # a version 1 database (no aggregates, issue 21; no runs.kind, issue
        # 22; no shadows, issue 23) is brought up to 4
        self.pg.psql("DROP TABLE agg_sizes, agg_items, agg_reads CASCADE;"
                     " DROP TABLE shadow_sample_classes, shadow_samples, shadow_settings,"
                     " shadow_counts, shadow_events CASCADE;"
                     " ALTER TABLE runs DROP COLUMN kind CASCADE;"
                     " UPDATE schema_version SET version = 1")
        rc, out, err = bench(self.pg.uri(), 10)
        self.ok(rc, out, err)
        self.assertEqual(self.pg.psql("SELECT version, sha256 FROM schema_version"), before)
        self.assertEqual(self.pg.scalar("SELECT sum(writes) FROM agg_sizes WHERE run_id = %d"
                                        % run_id_of(out)), "10")
        self.assertEqual(self.pg.scalar("SELECT kind FROM runs WHERE run_id = %d"
                                        % run_id_of(out)), "bench")

    def test_06_crashed_run(self):
        p = subprocess.Popen([BENCH, self.pg.uri(), "1000000", "--node", "victim", "--batch",
                              "1000", "--pause-ms", "20"], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=mctest.slabtap_env())
        try:
            run = run_id_of(p.stdout.readline())
            mctest.wait_for(lambda: int(self.pg.scalar(
                "SELECT count(*) FROM writes WHERE run_id = %d" % run)) >= 3000, 60,
                what="the victim's rows")
            # a store opening meanwhile leaves the live run alone
            rc, out, err = bench(self.pg.uri(), 10, "--node", "bystander")
            self.ok(rc, out, err)
            self.assertEqual(self.pg.scalar("SELECT crashed FROM runs WHERE run_id = %d" % run),
                             "0")
            p.kill()
            p.wait(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=30)
            p.stdout.close()
            p.stderr.close()
        # its session is gone once the server has noticed the closed socket
        def marked():
            bench(self.pg.uri(), 10, "--node", "next")
            return self.pg.scalar("SELECT crashed FROM runs WHERE run_id = %d" % run) == "1"
        mctest.wait_for(marked, 30, interval=0.2, what="the killed run marked crashed")
        rec, n, ended = self.pg.psql(
            "SELECT rows_recorded, (SELECT count(*) FROM writes WHERE run_id = %d),"
            " ended_ns IS NOT NULL FROM runs WHERE run_id = %d" % (run, run))[0]
        self.assertEqual(rec, n)
        self.assertGreaterEqual(int(n), 3000)
        self.assertEqual(ended, "t")

    def aggregates_pg(self, run):
        return {t: sorted(list(r) for r in self.pg.psql(
            "SELECT %s FROM %s a WHERE run_id = %d" % (cols, t, run)))
            for t, cols in AGG_TABLES.items()}

    @staticmethod
    def aggregates_sqlite(db, run):
        return {t: sorted([str(v) for v in r.values()] for r in mctest.db_rows(
            db, "SELECT %s FROM %s a WHERE run_id = ?" % (cols, t), (run,)))
            for t, cols in AGG_TABLES.items()}

    def test_08_aggregates_as_sqlite(self):
        """The same rows through sink_twin into a SQLite file and into
        PostgreSQL: every aggregate table holds the same rows, value for
        value; sampled (1/4) and aggregates-only (none) runs of those rows
        keep only the kept keys' rows (none at all) and the very aggregates
        of the run that kept every row."""
        rows = 30000
        tmp = tempfile.mkdtemp(prefix="slabtap-twin-")
        self.addCleanup(shutil.rmtree, tmp, True)
        full = None
        for mode in ("all", "1/4", "none"):
            db = os.path.join(tmp, "twin-%s.db" % mode.replace("/", "_"))
            lite_run = sink_twin(db, rows, "--sample", mode)
            pg_run = sink_twin(self.pg.uri(), rows, "--sample", mode, "--node", "twin-" + mode)
            lite = self.aggregates_sqlite(db, lite_run)
            pg = self.aggregates_pg(pg_run)
            for t in AGG_TABLES:
                self.assertEqual(pg[t], lite[t], "%s, --sample %s" % (t, mode))
            # every table but the prefix ones (a --keys full run) has rows
            self.assertEqual([t for t in AGG_TABLES if not pg[t]],
                             ["agg_prefixes", "agg_prefix_classes"], mode)
            self.assertEqual(sum(int(r[2]) for r in pg["agg_latency"]), rows // 5 * 4, mode)
            self.assertEqual(sum(int(r[2]) for r in pg["agg_reads"]), rows // 5, mode)
            # the rows: the kept keys' writes and reads, as in the SQLite file
            writes = int(self.pg.scalar("SELECT count(*) FROM writes WHERE run_id = %d"
                                        % pg_run))
            reads = int(self.pg.scalar("SELECT count(*) FROM read_log WHERE run_id = %d"
                                       % pg_run))
            self.assertEqual(writes, mctest.db_scalar(
                db, "SELECT count(*) FROM sets WHERE run_id = ?", (lite_run,)), mode)
            self.assertEqual(reads, mctest.db_scalar(
                db, "SELECT count(*) FROM reads WHERE run_id = ?", (lite_run,)), mode)
            self.assertEqual(self.pg.scalar("SELECT rows_recorded FROM runs WHERE run_id = %d"
                                            % pg_run), str(writes))
            if mode == "all":
                full = pg
                self.assertEqual((writes, reads), (rows // 5 * 4, rows // 5))
                continue
            self.assertEqual({t: v for t, v in pg.items() if t not in ("agg_runs",
                                                                     "agg_item_runs")},
                             {t: v for t, v in full.items() if t not in ("agg_runs",
                                                                       "agg_item_runs")},
                             "--sample %s: the aggregates of every row" % mode)
            if mode == "none":
                self.assertEqual((writes, reads), (0, 0))
            else:  # about one key in four
                self.assertTrue(rows // 5 * 4 // 8 < writes < rows // 5 * 4 // 2, writes)
                self.assertTrue(rows // 5 // 8 < reads < rows // 5 // 2, reads)
        # --keys prefix: the prefix aggregates too, by prefix (50 of them)
        db = os.path.join(tmp, "twin-prefix.db")
        lite = self.aggregates_sqlite(db, sink_twin(db, rows, "--keys", "prefix"))
        pg = self.aggregates_pg(sink_twin(self.pg.uri(), rows, "--keys", "prefix", "--node",
                                          "twin-prefix"))
        for t in AGG_TABLES:
            self.assertEqual(pg[t], lite[t], "%s, --keys prefix" % t)
        self.assertEqual(len({r[1] for r in pg["agg_prefixes"]}), 50)
        self.assertEqual(pg["agg_sizes"], full["agg_sizes"])

    def agg_writes(self, run):
        return int(self.pg.scalar("SELECT coalesce(sum(writes), 0) FROM agg_sizes"
                                  " WHERE run_id = %d" % run))

    def test_09_aggregates_on_a_timer(self):
        """A proxy's aggregates are carried across batches and upserted at
        most every STORE_AGG_FLUSH_MS: the idle writer upserts what it
        carries (the count reaches the writes while the proxy runs on),
        SIGTERM right after a burst loses none of it, and while its
        PostgreSQL sessions are killed again and again under load (batches
        and flushes rolled back or without an answer, then sent again) each
        stored write is counted exactly once, prefixes included."""
        from pymemcache.client.base import Client
        wd = tempfile.mkdtemp(prefix="slabtap-aggtimer-")
        self.addCleanup(shutil.rmtree, wd, True)
        mc = mctest.Memcached(wd)
        self.addCleanup(mc.stop)
        sets_before = 0
        for node, kill in (("timer", False), ("killed", True)):
            px = mctest.Proxy(wd, mc.port, db=self.pg.uri(), keys="prefix", name=node,
                              extra=["--node", node, "--reads", "off", "--on-full", "block",
                                     "--max-stall", "60s"])
            self.addCleanup(px.kill_hard)
            run = int(mctest.wait_for(lambda: self.pg.scalar(
                "SELECT max(run_id) FROM runs WHERE node = '%s'" % node), 10, what="run row"))
            c = Client(("127.0.0.1", px.port), timeout=10)
            sent = 0
            stop = threading.Event()
            killed = []

            def killer():
                while not stop.wait(0.15):
                    killed.append(int(self.pg.scalar(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                        " WHERE application_name = 'slabtap'")))
            t = threading.Thread(target=killer)
            if kill:
                t.start()
            deadline = time.monotonic() + 60
            burst = 0
            # killed: until its sessions were killed a few times under load
            while burst < 3 or (kill and sum(killed) < 5 and time.monotonic() < deadline):
                burst += 1
                for i in range(400):
                    # acknowledged: a noreply set still in the socket at
                    # SIGTERM was never read, so never reached memcached
                    self.assertTrue(c.set("p%d:%d-%d" % (i % 5, burst, i), b"v" * (10 + i),
                                          noreply=False))
                    sent += 1
                if not kill:  # idle now: the carried counts reach PostgreSQL
                    mctest.wait_for(lambda: self.agg_writes(run) == sent, 10,
                                    what="%d writes in agg_sizes while idle" % sent)
            stop.set()
            if kill:
                t.join(10)
            for i in range(300):  # a burst, then at once SIGTERM
                self.assertTrue(c.set("p%d:last-%d" % (i % 5, i), b"w" * (20 + i),
                                      noreply=False))
                sent += 1
            c.close()
            self.assertEqual(px.stop(timeout=60), 0, px.stderr_text()[-3000:])
            if kill:  # its sessions were killed under it, and it went on
                self.assertGreater(sum(killed), 0)
            stored = int(self.pg.scalar("SELECT count(*) FROM writes WHERE run_id = %d" % run))
            self.assertEqual(stored, sent, "%s: %s\n%s" % (node, self.pg.psql(
                "SELECT rows_recorded, rows_dropped FROM runs WHERE run_id = %d" % run),
                px.stderr_text()[-3000:]))
            # and every set memcached saw through this proxy is a row
            mc_sets = int(mctest.mc_stats(mc.port)["cmd_set"])
            self.assertEqual(mc_sets - sets_before, sent, node)
            sets_before = mc_sets
            self.assertEqual(self.agg_writes(run), sent, node)
            self.assertEqual(int(self.pg.scalar(
                "SELECT coalesce(sum(writes), 0) FROM agg_prefixes WHERE run_id = %d" % run)),
                sent, node)
            self.assertEqual(int(self.pg.scalar(
                "SELECT count(DISTINCT prefix_id) FROM agg_prefixes WHERE run_id = %d" % run)),
                5, node)

    def test_10_agg_interval(self):
        """--agg-interval: the carried aggregates wait for their interval
        (the rows of a second burst are in PostgreSQL while its counts are
        not), and SIGTERM writes them before the run ends."""
        from pymemcache.client.base import Client
        wd = tempfile.mkdtemp(prefix="slabtap-agginterval-")
        self.addCleanup(shutil.rmtree, wd, True)
        mc = mctest.Memcached(wd)
        self.addCleanup(mc.stop)
        px = mctest.Proxy(wd, mc.port, db=self.pg.uri(), keys="prefix", name="interval",
                          extra=["--node", "interval", "--reads", "off", "--agg-interval", "1h"])
        self.addCleanup(px.kill_hard)
        run = int(mctest.wait_for(lambda: self.pg.scalar(
            "SELECT max(run_id) FROM runs WHERE node = 'interval'"), 10, what="run row"))
        c = Client(("127.0.0.1", px.port), timeout=10)

        def stored():
            return int(self.pg.scalar("SELECT count(*) FROM writes WHERE run_id = %d" % run))
        for i in range(200):
            c.set("b:%d" % i, b"w" * (10 + i))
        mctest.wait_for(lambda: stored() == 200, 10, what="200 rows")
        self.assertEqual(self.agg_writes(run), 0, "counted before the interval was over")
        c.close()
        self.assertEqual(px.stop(timeout=60), 0, px.stderr_text()[-3000:])
        self.assertEqual(self.agg_writes(run), 200)

    def test_07_login_refused(self):
        wrong = "wrong-" + self.pg.password[::-1]
        for uri in (self.pg.uri(user=pgcluster.PW_ROLE, password=wrong),
                    "postgresql://%s@127.0.0.1:%d/slabtap?password=%s&connect_timeout=5"
                    % (pgcluster.PW_ROLE, self.pg.port, wrong),
                    "host=127.0.0.1 port=%d dbname=slabtap user=%s password='%s'"
                    % (self.pg.port, pgcluster.PW_ROLE, wrong)):
            rc, out, err = bench(uri, 10)
            self.assertEqual(rc, 1, out + err)
            self.assertIn('password authentication failed for user "%s"' % pgcluster.PW_ROLE,
                          err)
            self.assertIn("127.0.0.1", err)
            for secret in (wrong, self.pg.password):
                self.assertNotIn(secret, out + err)
        # PGPASSWORD, not in the URI: the same error, nothing of it printed
        env = dict(mctest.slabtap_env(), PGPASSWORD=wrong)
        p = subprocess.run([BENCH, self.pg.uri(user=pgcluster.PW_ROLE), "10"],
                           capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("password authentication failed", p.stderr)
        self.assertNotIn(wrong, p.stdout + p.stderr)
        # the right one works, and is not shown either (the role may write; the
        # partitions it needs are made by slabtap_writes_partition, SECURITY DEFINER)
        self.pg.psql("GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO %s;"
                     " GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO %s"
                     % (pgcluster.PW_ROLE, pgcluster.PW_ROLE))
        rc, out, err = bench(self.pg.uri(user=pgcluster.PW_ROLE, password=self.pg.password), 100)
        self.ok(rc, out, err)
        self.assertIn("postgresql://%s@127.0.0.1:%d/slabtap" % (pgcluster.PW_ROLE, self.pg.port),
                      out)
        self.assertNotIn(self.pg.password, out + err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
