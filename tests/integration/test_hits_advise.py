#!/usr/bin/env python3
"""`slabtap model advise --objective hits` end to end on a real memcached.

A seeded get-or-set workload (Zipf keys, per-key sizes) goes through the
proxy into memcached -m 12 (1.6.18's defaults otherwise: segmented LRU,
slab_automove=1), so that memcached evicts and the ladder matters. Then:

  * the reads recorded are the gets sent: one `reads` row per get, hits
    equal to memcached's get_hits;
  * `model advise --objective hits --verify --format json` (the default
    objective once reads are recorded): the JSON carries
    recommended.flags, .predicted.hit_ratio/.memory_bytes, the same for
    current, a measured object beside each verified prediction; every
    verified prediction is within 2 points of memcached's measurement, no
    candidate uses more memory than the budget, and the recommendation
    measures best of the candidates measured (ties within 0.2 points);
  * `model mrc --format json` gives a curve that never falls as memory
    grows (within 0.5 points: page granularity) and meets the current
    settings' own prediction at the run's -m;
  * `--save` puts both reports into run_meta.
"""
import json
import os
import unittest

import mctest

WORKLOAD = """seed 7
connections 2
pipeline 16
getset 60000 key=k:{zipf:20000:1.0:5} size=uniform(100,1000)
phase second_half
getset 60000 key=k:{zipf:20000:1.0:5} size=uniform(100,1000)
"""


class HitsAdvise(mctest.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        w = cls.cw.path
        with open(os.path.join(w, "gs.wl"), "w") as f:
            f.write(WORKLOAD)
        mc = cls.class_mc(extra=["-m", "12"])
        px = cls.class_proxy(mc.port)
        rc, out, err = mctest.run_slabtap(["load", "--workload", os.path.join(w, "gs.wl"),
                                           "--target", "127.0.0.1:%d" % px.port])
        assert rc == 0, out + err
        cls.load_out = out
        cls.stats = mctest.mc_stats(mc.port)
        assert px.stop() == 0, px.stderr_text()[-3000:]
        cls.db = px.db

    def test_reads_are_the_gets_sent(self):
        r = mctest.db_rows(self.db, "SELECT count(*) AS n, sum(hit) AS hits FROM reads")[0]
        n, hits = r["n"], r["hits"]
        self.assertEqual(n, 120000)
        self.assertEqual(hits, int(self.stats["get_hits"]))
        self.assertEqual(n - hits, int(self.stats["get_misses"]))
        # every miss was filled by the workload: a set per miss
        sets = mctest.db_scalar(self.db, "SELECT count(*) FROM sets WHERE cmd = 'set'")
        self.assertEqual(sets, int(self.stats["get_misses"]))

    def test_advise_verify_json(self):
        rc, out, err = mctest.run_slabtap(["model", "advise", "--db", self.db, "--verify",
                                           "--format", "json"], timeout=900)
        a = json.loads(out)
        self.assertEqual(a["objective"], "hits", err)
        for part in ("current", "recommended"):
            self.assertIn("-m ", a[part]["flags"])
            self.assertIn("slab_automove=", a[part]["flags"])
            p = a[part]["predicted"]
            self.assertTrue(0 < p["hit_ratio"] < 1, p)
            self.assertLessEqual(p["memory_bytes"], a["budget_bytes"])
            self.assertIn("measured", a[part])
        measured = [c for c in a["candidates"] if "measured" in c]
        self.assertGreaterEqual(len(measured), 2)
        for c in measured:
            d = abs(c["measured"]["hit_ratio"] - c["predicted"]["hit_ratio"])
            self.assertLessEqual(d, 0.02, "%s: predicted %.4f measured %.4f" % (
                c["label"], c["predicted"]["hit_ratio"], c["measured"]["hit_ratio"]))
            # memory actually used, as memcached reports it, within the budget
            self.assertLessEqual(c["measured"]["memory_bytes"], a["budget_bytes"], c["label"])
        best = max(c["measured"]["hit_ratio"] for c in measured)
        self.assertGreaterEqual(a["recommended"]["measured"]["hit_ratio"] + 0.002, best)
        self.assertEqual(a["failed_checks"], 0, err)
        self.assertEqual(rc, 0, err)

    def test_mrc_and_save(self):
        rc, out, err = mctest.run_slabtap(["model", "mrc", "--db", self.db, "--points", "6",
                                           "--memory-limit", "24", "--format", "json", "--save"])
        self.assertEqual(rc, 0, err)
        m = json.loads(out)
        pts = [p for p in m["curves"][0]["points"] if not p["over_budget"]]
        self.assertGreaterEqual(len(pts), 3)
        for a, b in zip(pts, pts[1:]):
            self.assertGreater(b["memory_bytes"], a["memory_bytes"] - 1)
            self.assertGreaterEqual(b["hit_ratio"], a["hit_ratio"] - 0.005)
        rc, out, err = mctest.run_slabtap(["model", "advise", "--db", self.db, "--save"],
                                          timeout=600)
        self.assertEqual(rc, 0, err)
        self.assertIn("recommended:", out)
        keys = {r["key"] for r in mctest.db_rows(self.db, "SELECT key FROM run_meta")}
        self.assertTrue({"hits_advice", "hits_mrc"} <= keys, keys)
        saved = json.loads(mctest.db_scalar(
            self.db, "SELECT value FROM run_meta WHERE key = 'hits_advice'"))
        self.assertEqual(saved["objective"], "hits")

    def test_bad_flags(self):
        rc, out, err = mctest.run_slabtap(["model", "advise", "--db", self.db, "--objective",
                                           "hitz"])
        self.assertEqual(rc, 2)
        self.assertIn("--objective is hits, memory or items", err)
        rc, out, err = mctest.run_slabtap(["model", "mrc", "--db", self.db, "--flags", "-f x"])
        self.assertEqual(rc, 2, err)
        self.assertIn("--flags", err)


if __name__ == "__main__":
    unittest.main()
