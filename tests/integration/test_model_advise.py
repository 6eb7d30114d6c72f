#!/usr/bin/python3
"""test_model_advise: `slabtap model advise --verify` on recorded runs.

A run is recorded through `slabtap proxy` in front of a default memcached
(1.6.18: -n 48 -f 1.25), then `slabtap model advise --db ... --verify`
must
  (a) report strictly less waste for "best -f/-n" and for "fitted
      slab_sizes" than for "the run's own settings" (the printed
      percentages and byte counts);
  (b) print, for each of the three, a verify line -- the run replayed into
      a memcached started with those flags -- whose measured waste is
      within 0.1 percentage points of the prediction, ending in "ok";
  (c) exit 0.
Also, "the run's own settings" must equal the waste memcached itself
reports for the recorded run (sum of chunk_size * used_chunks minus
mem_requested over `stats slabs` / `stats items`), read directly.

Workloads: tests/data/bimodal.wl (12,000 items of ~300 bytes and 4,000 of
~5,000 bytes, uniform spreads, a third of the small ones rewritten) and
tests/data/exp2_worst_small.wl (experiment 2's worst case, small: 20,000
items of ntotal 945 with a 10-byte key and an 876-byte value: 20.19 %
waste under the default ladder). With --max-classes 4 the fitted ladder
has at most 3 custom sizes (memcached adds slab_chunk_max as the 4th).

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown.
"""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

DATA = mctest.DATA

LABELS = ("the run's own settings", "best -f/-n", "fitted slab_sizes")
EVAL = re.compile(r"^  (the run's own settings|best -f/-n|fitted slab_sizes)\s+(.*?)\s+"
                  r"waste\s+([\d.]+) %\s+\((\d+) of (\d+) bytes\)\s+"
                  r"classes (\d+) in ladder, (\d+) used$")
VERIFY = re.compile(r"^  verify (the run's own settings|best -f/-n|fitted slab_sizes)\s+"
                    r"memcached (.*): measured waste\s+([\d.]+) % \((\d+) of (\d+) bytes\), "
                    r"predicted\s+([\d.]+) %, difference ([+-][\d.]+) pp (.*)$")


run_slabtap = mctest.run_slabtap


mc_stats = mctest.mc_stats


def measured_waste(port):
    """(waste, allocated) of a live memcached, from its own counters."""
    classes = mctest.mc_classes(port).values()
    alloc = sum(f["chunk_size"] * f.get("used_chunks", 0) for f in classes if "chunk_size" in f)
    req = sum(f.get("mem_requested", 0) for f in classes)
    return alloc - req, alloc


def parse_advise(out):
    evals, verifies = {}, {}
    for line in out.splitlines():
        m = EVAL.match(line)
        if m:
            evals[m.group(1)] = {"flags": m.group(2), "pct": float(m.group(3)),
                                 "waste": int(m.group(4)), "alloc": int(m.group(5)),
                                 "classes": int(m.group(6)), "used": int(m.group(7))}
        m = VERIFY.match(line)
        if m:
            verifies[m.group(1)] = {"flags": m.group(2), "pct": float(m.group(3)),
                                    "waste": int(m.group(4)), "alloc": int(m.group(5)),
                                    "pred": float(m.group(6)), "diff": float(m.group(7)),
                                    "tail": m.group(8)}
    # a long slab_sizes list is printed on the next line
    m = re.search(r"^    (-o slab_sizes=[\d-]+)$", out, re.M)
    if m and "fitted slab_sizes" in evals and evals["fitted slab_sizes"]["flags"] == "(below)":
        evals["fitted slab_sizes"]["flags"] = m.group(1)
    return evals, verifies


class ModelAdviseTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-advise-"

    def record(self, name, workload):
        """Runs the workload through the proxy in front of a default
        memcached; returns (db, memcached's own (waste, allocated))."""
        mc = self.mc(extra=["-m", "256"], name="mc-" + name)
        px = self.proxy(mc.port, keys="hash", name="px-" + name, extra=["--run", name])
        rc, out, err = run_slabtap(["load", "--target", "127.0.0.1:%d" % px.port,
                                    "--workload", os.path.join(DATA, workload), "--quiet"])
        self.assertEqual(rc, 0, out + err)
        self.assertNotRegex(out, r"errors:\s+[1-9]")
        self.assertEqual(int(mc_stats(mc.port, "")["evictions"]), 0)
        own = measured_waste(mc.port)
        self.stop_clean(px)
        return px.db, own

    def advise(self, db, name, extra=()):
        rc, out, err = run_slabtap(["model", "advise", "--db", db, "--run", name, "--verify"]
                                   + list(extra))
        evals, verifies = parse_advise(out)
        return rc, out, err, evals, verifies

    def check_advise(self, db, name, own, extra=()):
        rc, out, err, ev, vf = self.advise(db, name, extra)
        ctx = "advise output:\n%s\nstderr:\n%s" % (out, err[-3000:])
        self.assertEqual(sorted(ev), sorted(LABELS), ctx)
        mine = ev["the run's own settings"]
        # the run's own settings, against memcached's own counters
        self.assertEqual((mine["waste"], mine["alloc"]), own, ctx)
        self.assertEqual(mine["flags"], "-n 48 -f 1.25", ctx)
        # (a) strictly less waste than the run's own settings
        for label in ("best -f/-n", "fitted slab_sizes"):
            self.assertLess(ev[label]["pct"], mine["pct"], label + "\n" + ctx)
            self.assertLess(ev[label]["waste"] * mine["alloc"], mine["waste"] * ev[label]["alloc"],
                            label + "\n" + ctx)
        # (b) one verify line each, within 0.1 pp, "ok"
        self.assertEqual(sorted(vf), sorted(LABELS), ctx)
        for label in LABELS:
            v = vf[label]
            self.assertLessEqual(abs(v["diff"]), 0.1, label + "\n" + ctx)
            self.assertLessEqual(abs(v["pct"] - v["pred"]), 0.1 + 0.006, label + "\n" + ctx)
            self.assertEqual(v["tail"], "ok", label + "\n" + ctx)
            self.assertAlmostEqual(v["pred"], ev[label]["pct"], places=2, msg=ctx)
        self.assertNotIn("OUT OF TOLERANCE", out)
        # (c) exit 0
        self.assertEqual(rc, 0, ctx)
        return ev, vf, out

    def test_bimodal(self):
        db, own = self.record("bimodal", "bimodal.wl")
        ev, vf, out = self.check_advise(db, "bimodal", own)
        self.assertIn("16000 items", out)
        # the fitted ladder was started as memcached flags in the verify run
        self.assertIn("-o slab_sizes=", vf["fitted slab_sizes"]["flags"])
        self.assertIn(ev["fitted slab_sizes"]["flags"], vf["fitted slab_sizes"]["flags"])
        # at most 3 custom sizes with --max-classes 4, still better than -f 1.25
        ev4, vf4, out4 = self.check_advise(db, "bimodal", own, ["--max-classes", "4"])
        m = re.match(r"-o slab_sizes=([\d-]+)$", ev4["fitted slab_sizes"]["flags"])
        self.assertTrue(m, out4)
        sizes = [int(x) for x in m.group(1).split("-")]
        self.assertGreaterEqual(len(sizes), 1)
        self.assertLessEqual(len(sizes), 3, out4)
        self.assertLessEqual(ev4["fitted slab_sizes"]["classes"], 4, out4)
        self.assertEqual(sizes, sorted(sizes))
        # fewer classes cannot fit better than 62 custom sizes may
        self.assertGreaterEqual(ev4["fitted slab_sizes"]["waste"] * ev["fitted slab_sizes"]["alloc"],
                                ev["fitted slab_sizes"]["waste"] * ev4["fitted slab_sizes"]["alloc"])

    def test_exp2_worst_case(self):
        db, own = self.record("exp2_worst", "exp2_worst_small.wl")
        # 20,000 items of 945 bytes in 1184-byte chunks
        self.assertEqual(own, (20000 * (1184 - 945), 20000 * 1184))
        ev, vf, out = self.check_advise(db, "exp2_worst", own)
        self.assertIn("20000 items, 1 distinct sizes", out)
        mine = ev["the run's own settings"]
        self.assertEqual(mine["pct"], 20.19)
        # a single size: the best any ladder can do is its 8-byte slot (952)
        for label in ("best -f/-n", "fitted slab_sizes"):
            self.assertEqual((ev[label]["waste"], ev[label]["alloc"]),
                             (20000 * (952 - 945), 20000 * 952), label + "\n" + out)
        # 1184 < 2 x 945: no cliff under the default ladder
        self.assertNotIn("cliff under the run's settings", out)
        ev4, _, out4 = self.check_advise(db, "exp2_worst", own, ["--max-classes", "4"])
        m = re.match(r"-o slab_sizes=([\d-]+)$", ev4["fitted slab_sizes"]["flags"])
        self.assertTrue(m, out4)
        self.assertLessEqual(len(m.group(1).split("-")), 3, out4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
