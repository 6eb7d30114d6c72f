#!/usr/bin/python3
"""test_retention_model: `slabtap model predict` on runs whose rows were
expired by retention (--max-db-size, record/retain.h), per docs/retention.md
("Bounding the database") and docs/model.md ("Rows or aggregates").

- bounded: a proxy with --max-db-size 1m in front of a real memcached
  (-m 256: nothing is evicted) takes 150,000 pipelined sets of distinct
  keys in four sizes (no overwrite, delete or refusal), so retention
  expires the early rows while the load runs. After the proxy stops:
  `--source aggregates` says "EXACT from aggregates", verdict EXACT, and
  its table equals memcached's own per-class counters, read here directly
  (used_chunks, mem_requested, pages); `--source rows` on the same run says
  INCOMPLETE (older rows expired) and never EXACT.
- unbounded: the same kind of load without a bound keeps every row; on a
  copy of the file, predict from the rows and from the aggregates give the
  same table class by class, both EXACT.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown. Runs in about 15 s.
"""
import os
import re
import shutil
import socket
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

run_slabtap = mctest.run_slabtap

# one class of predict's table: class, chunk | predicted, memcached
# used_chunks | mem_requested | pages | verdict (as test_model_agg.py)
ROW = re.compile(r"^\s*(\d+)\s+(\d+) \|\s+(\d+)\s+(-?\d+) \|\s+(\d+)\s+(-?\d+) \|"
                 r"\s+(\d+)\s+(-?\d+) \| (.*)$", re.M)
# predict's per-class estimate from the aggregates: class, stored W_c,
# estimate, bound lo..hi, memcached's number, diff
BOUND = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\.\.(\d+)\s+(-?\d+)\s+([-+]\d+)(.*)$", re.M)
SIZES = (40, 300, 900, 2500)  # values: four slab classes with the default ladder


def send_sets(port, prefix, n):
    """n pipelined `set PREFIX:i ... noreply`, value SIZES[i % 4], then mn to
    know memcached has them all."""
    with socket.create_connection((mctest.HOST, port), timeout=60) as s:
        buf = bytearray()
        for i in range(n):
            vl = SIZES[i % len(SIZES)]
            buf += b"set %s:%d 0 0 %d noreply\r\n" % (prefix, i, vl) + b"v" * vl + b"\r\n"
            if len(buf) > 128 * 1024:
                s.sendall(buf)
                buf = bytearray()
        s.sendall(bytes(buf) + b"mn\r\n")
        line = mctest.recv_line(s, timeout=60)
        assert line == b"MN\r\n", line


class RetentionModelTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-retmodel-"

    def record(self, name, n, extra=()):
        """A run of n distinct-key sets through a proxy; (db, memcached's
        classes after the load, curr_items)."""
        mc = self.mc(extra=["-m", "256"], name="mc-" + name)
        px = self.proxy(mc.port, http=True, name="px-" + name,
                        extra=["--run", name, "--stats-interval", "200"] + list(extra))
        send_sets(px.port, name.encode(), n)
        mctest.wait_for(lambda: mctest.http_json(px.http_port, "GET", "/health")
                        ["recorder"]["rows_recorded"] >= n, 30, what="rows recorded")
        health = mctest.http_json(px.http_port, "GET", "/health")
        classes = mctest.mc_classes(mc.port)
        curr = int(mctest.mc_stats(mc.port)["curr_items"])
        self.stop_clean(px)
        self.assertEqual(curr, n, "memcached kept every item (no eviction)")
        return px.db, classes, health

    def predict(self, db, name, source):
        return run_slabtap(["model", "predict", "--db", db, "--run", name, "--source", source])

    def assert_equals_memcached(self, table, classes, ctx):
        """Each class of predict's table: predicted == memcached's column,
        and memcached's column == what memcached says now."""
        self.assertEqual(len(table), len(SIZES), ctx)
        for cls, _chunk, used, used_mc, req, req_mc, pages, pages_mc, _ in table:
            c = classes[int(cls)]
            self.assertEqual((int(used), int(req), int(pages)),
                             (int(used_mc), int(req_mc), int(pages_mc)), ctx)
            self.assertEqual((int(used_mc), int(req_mc), int(pages_mc)),
                             (c["used_chunks"], c["mem_requested"], c["total_pages"]), ctx)

    def test_bounded_rows_expired(self):
        n = 150000
        db, classes, health = self.record("bounded", n, ["--max-db-size", "1m"])
        r = health["store"]["retention"]
        self.assertTrue(r["bound_reached"], r)
        self.assertGreater(r["rows_expired"], n // 2, r)
        kept = mctest.db_scalar(db, "SELECT count(*) FROM writes")
        self.assertLess(kept, n)
        self.assertEqual(mctest.db_scalar(db, "SELECT rows_recorded FROM runs"), n)

        rc, aggs, err = self.predict(db, "bounded", "aggregates")
        ctx = aggs + err
        self.assertEqual(rc, 0, ctx)
        self.assertIn("basis: aggregates -- %d of %d rows left" % (kept, n), aggs)
        self.assertIn("basis: EXACT from aggregates", aggs)
        self.assertIn("verdict: EXACT", aggs)
        self.assertNotIn("OUTSIDE THE BOUND", aggs)
        self.assert_equals_memcached(ROW.findall(aggs), classes, ctx)
        # the stated bound is tight (no overwrite): each class's estimate is
        # memcached's number, n / 4 items each
        bounds = BOUND.findall(aggs)
        self.assertEqual(len(bounds), len(SIZES), ctx)
        for cls, written, est, lo, hi, obs, diff, _ in bounds:
            self.assertEqual({written, est, lo, hi, obs}, {str(n // len(SIZES))}, ctx)
            self.assertEqual(int(obs), classes[int(cls)]["number"], ctx)
            self.assertEqual(diff, "+0", ctx)

        rc, rows, err = self.predict(db, "bounded", "rows")
        ctx = rows + err
        self.assertIn("basis: rows -- every recorded write replayed (%d rows) -- INCOMPLETE: "
                      "older rows were expired" % kept, rows, ctx)
        self.assertIn("writes: %d rows" % kept, rows, ctx)
        self.assertNotIn("verdict: EXACT", rows, ctx)
        self.assertNotIn("EXACT from aggregates", rows, ctx)
        # auto picks the aggregates for an expired run
        rc, auto, err = self.predict(db, "bounded", "auto")
        self.assertEqual(rc, 0, auto + err)
        self.assertIn("basis: EXACT from aggregates", auto)

    def test_unbounded_rows_and_aggregates_agree(self):
        n = 20000
        db, classes, health = self.record("unbounded", n)
        self.assertEqual(health["store"]["retention"].get("rows_expired", 0), 0, health)
        copy = self.path("unbounded-copy.db")
        shutil.copy(db, copy)
        self.assertEqual(mctest.db_scalar(copy, "SELECT count(*) FROM writes"), n)

        rc, rows, err = self.predict(copy, "unbounded", "rows")
        self.assertEqual(rc, 0, rows + err)
        self.assertIn("basis: rows", rows)
        self.assertIn("verdict: EXACT", rows)
        rc, aggs, err = self.predict(copy, "unbounded", "aggregates")
        ctx = rows + aggs + err
        self.assertEqual(rc, 0, ctx)
        self.assertIn("basis: EXACT from aggregates", aggs)
        self.assertIn("verdict: EXACT", aggs)
        t_rows, t_aggs = ROW.findall(rows), ROW.findall(aggs)
        self.assertEqual(t_rows, t_aggs, ctx)
        self.assert_equals_memcached(t_aggs, classes, ctx)


if __name__ == "__main__":
    unittest.main()
