#!/usr/bin/python3
"""test_sampling: `proxy --sample-keys 1/10` against a real memcached.

  * rows are exactly the kept keys' writes: every write (set, overwrite,
    append, delete) of a key kept by the selection -- recomputed here in
    Python from the key (FNV-1a, then splitmix64's finalizer, modulo N;
    core/sample.h) -- is a row, and no other key has one;
  * the aggregates still count every write (agg_latency: all 33,000;
    agg_sizes: the 30,000 sets), runs.rows_recorded counts the rows, and
    run_meta 'sample_keys' says 1/10;
  * `model predict` says the run is sampled and every class's scaled
    counters (used chunks, mem_requested, pages) lie within its stated
    error of memcached's own, read directly; `model advise` says it works
    from the sampled sizes.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown.
"""
import os
import re
import sys
import unittest
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
import pgcluster  # noqa: E402

M64 = (1 << 64) - 1
N = 10
KEYS = 6000
WORKLOAD = ("connections 2\npipeline 32\nseed 5\n"
            "set 30000 key=s:{i%6000} size=uniform(10,1500)\n"
            "append 2000 key=s:{i} size=5\n"
            "delete 1000 key=s:{i}\n")
ROW = re.compile(r"^\s*(\d+)\s+(\d+) \|\s+(\d+) \+- (\d+)\s+(-?\d+) \|\s+(\d+) \+- (\d+)\s+(-?\d+)"
                 r" \|\s+(\d+) \+- (\d+)\s+(-?\d+) \| (within|OUTSIDE)$")


def fnv1a(key):
    h = 0xcbf29ce484222325
    for c in key:
        h ^= c
        h = (h * 0x100000001b3) & M64
    return h


def kept(key, n=N):
    h = fnv1a(key)
    h ^= h >> 30
    h = (h * 0xbf58476d1ce4e5b9) & M64
    h ^= h >> 27
    h = (h * 0x94d049bb133111eb) & M64
    h ^= h >> 31
    return h % n == 0


def expected_history():
    """{key: Counter(cmd)} of every write the workload sends."""
    hist = {}
    for i in range(KEYS):
        hist[b"s:%d" % i] = Counter(set=5)
    for i in range(2000):
        hist[b"s:%d" % i]["append"] += 1
    for i in range(1000):
        hist[b"s:%d" % i]["delete"] += 1
    return hist


class SamplingTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-sampling-"

    def test_sampled_run(self):
        mc = self.mc(extra=["-m", "1024"])
        px = self.proxy(mc.port, extra=["--run", "s10", "--keys", "full", "--stats-interval",
                                        "100", "--sample-keys", "1/%d" % N])
        path = self.write("w.wl", WORKLOAD)
        rc, out, err = mctest.run_slabtap(["load", "--target", "127.0.0.1:%d" % px.port,
                                           "--workload", path, "-q"], timeout=120)
        self.assertEqual(rc, 0, out + err)
        obs = mctest.mc_classes(mc.port)
        self.stop_clean(px)

        # rows: exactly the kept keys' whole histories
        want = {k: h for k, h in expected_history().items() if kept(k)}
        self.assertTrue(450 < len(want) < 750, len(want))  # 600 expected
        got = {}
        for r in mctest.db_rows(px.db, "SELECT key, cmd, count(*) AS n FROM sets GROUP BY 1, 2"):
            got.setdefault(r["key"].encode(), Counter())[r["cmd"]] = r["n"]
        self.assertEqual(set(got), set(want), "recorded keys are the kept ones")
        for k in want:
            self.assertEqual(got[k], want[k], k)
        nrows = sum(sum(h.values()) for h in want.values())
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM sets"), nrows)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT rows_recorded FROM runs"), nrows)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT value FROM run_meta WHERE key ="
                                          " 'sample_keys'"), "1/%d" % N)
        # aggregates: every write
        self.assertEqual(mctest.db_scalar(px.db, "SELECT sum(writes) FROM agg_latency"), 33000)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT sum(writes) FROM agg_sizes"), 30000)

        # predict: scaled, within its stated error of memcached's own counters
        rc, out, err = mctest.run_slabtap(["model", "predict", "--db", px.db])
        self.assertEqual(rc, 0, out + err)
        self.assertIn("sampled: --sample-keys 1/%d" % N, out)
        self.assertIn("verdict: SAMPLED 1/%d -- every class within the stated error" % N, out)
        rows = {int(m.group(1)): m for m in map(ROW.match, out.splitlines()) if m}
        self.assertTrue(rows, out)
        for c, o in obs.items():
            self.assertIn(c, rows, "class %d missing\n%s" % (c, out))
            m = rows[c]
            for est, e, name in ((3, 4, "used_chunks"), (6, 7, "mem_requested"),
                                 (9, 10, "total_pages")):
                self.assertLessEqual(abs(int(m.group(est)) - o.get(name, 0)),
                                     int(m.group(e)) + 1,
                                     "class %d %s\n%s" % (c, name, out))
        for c, m in rows.items():
            self.assertEqual(m.group(12), "within", out)

        # advise: by default (the page's rule, record/advice.h) the capacity
        # advice from the aggregates, which count every write
        rc, out, err = mctest.run_slabtap(["model", "advise", "--db", px.db])
        self.assertEqual(rc, 0, out + err)
        self.assertIn("basis: aggregates -- the rows keep one key in %d (--sample-keys)" % N, out)
        self.assertIn("\nrecommended: ", out)
        # from the sampled rows, asked for: sizes scaled, no capacity
        rc, out, err = mctest.run_slabtap(["model", "advise", "--db", px.db, "--source", "rows"])
        self.assertEqual(rc, 0, out + err)
        self.assertIn("sampled: --sample-keys 1/%d -- the sizes are the" % N, out)
        self.assertIn("verify, capacity: not on a sampled run", out)

    def test_sampled_run_postgresql(self):
        """The same load through a proxy recording into PostgreSQL: the rows
        are the kept keys' whole histories, the aggregates count every write
        and read (issue 21), run_meta says 1/10."""
        pg = pgcluster.PgCluster()
        self.addCleanup(pg.stop)
        mc = self.mc(extra=["-m", "1024"])
        px = self.proxy(mc.port, db=pg.uri(),
                        extra=["--run", "s10", "--keys", "full", "--stats-interval", "100",
                               "--sample-keys", "1/%d" % N, "--spill", self.path("spill.db")])
        path = self.write("w.wl", WORKLOAD + "get 3000 key=s:{i%6000}\n")
        rc, out, err = mctest.run_slabtap(["load", "--target", "127.0.0.1:%d" % px.port,
                                           "--workload", path, "-q"], timeout=120)
        self.assertEqual(rc, 0, out + err)
        self.stop_clean(px)
        want = {k: h for k, h in expected_history().items() if kept(k)}
        got = {}
        for key, cmd, n in pg.psql("SELECT key, cmd, count(*) FROM sets GROUP BY 1, 2"):
            got.setdefault(key.encode(), Counter())[cmd] = int(n)
        self.assertEqual(got, want)
        nrows = sum(sum(h.values()) for h in want.values())
        reads = {r[0].encode() for r in pg.psql("SELECT DISTINCT key FROM reads")}
        self.assertTrue(reads and all(kept(k) for k in reads), len(reads))
        self.assertEqual(pg.psql("SELECT rows_recorded FROM runs"), [[str(nrows)]])
        self.assertEqual(pg.scalar("SELECT value FROM run_meta WHERE key = 'sample_keys'"),
                         "1/%d" % N)
        self.assertEqual(pg.psql("SELECT (SELECT sum(writes) FROM agg_latency),"
                                 " (SELECT sum(writes) FROM agg_answers),"
                                 " (SELECT sum(writes) FROM agg_sizes),"
                                 " (SELECT sum(writes) FROM agg_items),"
                                 " (SELECT sum(reads) FROM agg_reads)"),
                         [["33000", "33000", "30000", "30000", "3000"]])
        # every set stored, in a class the proxy tagged (its key kept or not)
        self.assertEqual(pg.psql("SELECT outcome, class_id > 0, sum(writes) FROM agg_items"
                                 " GROUP BY 1, 2"), [["1", "t", "30000"]])

    def test_aggregates_only(self):
        """--sample-keys none: no write or read rows at all, every write and
        read in the aggregates; `model predict` works from them."""
        mc = self.mc(extra=["-m", "1024"])
        px = self.proxy(mc.port, extra=["--run", "agg", "--stats-interval", "100",
                                        "--sample-keys", "none"])
        path = self.write("w.wl", WORKLOAD + "get 3000 key=s:{i%6000}\n")
        rc, out, err = mctest.run_slabtap(["load", "--target", "127.0.0.1:%d" % px.port,
                                           "--workload", path, "-q"], timeout=120)
        self.assertEqual(rc, 0, out + err)
        self.stop_clean(px)
        q = lambda sql: mctest.db_scalar(px.db, sql)  # noqa: E731
        self.assertEqual((q("SELECT count(*) FROM sets"), q("SELECT count(*) FROM reads"),
                          q("SELECT rows_recorded FROM runs")), (0, 0, 0))
        self.assertEqual(q("SELECT value FROM run_meta WHERE key = 'sample_keys'"), "none")
        self.assertEqual((q("SELECT sum(writes) FROM agg_latency"),
                          q("SELECT sum(writes) FROM agg_items WHERE outcome = 1"),
                          q("SELECT sum(reads) FROM agg_reads")), (33000, 30000, 3000))
        rc, out, err = mctest.run_slabtap(["model", "predict", "--db", px.db])
        self.assertEqual(rc, 0, out + err)
        self.assertIn("basis: aggregates -- the run records no rows (--sample-keys none)", out)


if __name__ == "__main__":
    unittest.main()
