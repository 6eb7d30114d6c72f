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

Capacity (test_capacity_full, test_capacity_roomy): a run recorded in
front of a memcached started with -m 8 and written more than 8 MB (a
bimodal mix, a third of the small keys rewritten); `advise` must choose the
items objective by itself (the run's memcached evicted), print chunk
waste, page slack and items held for every candidate, and with --verify
replay the run into memcacheds started with -m 8 and each of the run's
own, the best -f/-n and the best slab_sizes settings: items held,
evictions and total_malloced measured must equal the prediction, and the
recommendation must hold at least as many items as the run's own settings
(measured). The same run with --objective memory: no limit, the working
set's pages predicted to the byte. --holdout prints the candidates on the
second half.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown.
"""
import os
import re
import subprocess
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

VERIFY_CAP = re.compile(r"^  verify capacity (.*?)\s+memcached (.*): items held (\d+) \(predicted "
                        r"(\d+)\), evictions (\d+) \(predicted (\d+)\), total_malloced (\d+) "
                        r"\(predicted (\d+)\) (ok|MISMATCH)$")
CAND = re.compile(r"^  (\S.*?)\s+chunk waste\s+(\d+) B \(\s*([\d.]+) %\)\s+page slack\s+(\d+) B\s+"
                  r"memory\s+(\d+) B\s+items held\s+(\d+)\s+bytes held\s+(\d+)\s+"
                  r"evictions\s+(\d+)\s+(better|worse|same)(.*)$")


def parse_candidates(out):
    """The capacity table: label -> fields, in order (labels may repeat)."""
    cands = []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = CAND.match(line)
        if m:
            cands.append({"label": m.group(1), "waste": int(m.group(2)),
                          "slack": int(m.group(4)), "memory": int(m.group(5)),
                          "items": int(m.group(6)), "bytes": int(m.group(7)),
                          "evictions": int(m.group(8)), "vs": m.group(9),
                          "recommended": "<- recommended" in m.group(10),
                          "over": "over -m" in m.group(10),
                          "flags": lines[i + 1].strip() if i + 1 < len(lines) else ""})
    return cands


CAPACITY_WL = """connections 4
pipeline 64
seed 5
set 6000 key=cap:s:{i:6} size=uniform(200,400)
set 2500 key=cap:l:{i:6} size=uniform(4000,6000)
set 3000 key=cap:s:{i%6000:6} size=uniform(200,400)
"""

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
        m = VERIFY_CAP.match(line)
        if m:
            verifies["cap:" + m.group(1)] = {"flags": m.group(2), "items": int(m.group(3)),
                                             "pred_items": int(m.group(4)),
                                             "evictions": int(m.group(5)),
                                             "pred_evictions": int(m.group(6)),
                                             "malloced": int(m.group(7)),
                                             "pred_malloced": int(m.group(8)),
                                             "tail": m.group(9)}
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
        # (a) strictly less waste than the run's own settings (no -f/-n
        # ladder has 4 classes: then the run's own, said so)
        few = "--max-classes" in extra
        if few:
            self.assertIn("no -f/-n ladder has at most 4 classes", out, ctx)
        for label in ("fitted slab_sizes",) if few else ("best -f/-n", "fitted slab_sizes"):
            self.assertLess(ev[label]["pct"], mine["pct"], label + "\n" + ctx)
            self.assertLess(ev[label]["waste"] * mine["alloc"], mine["waste"] * ev[label]["alloc"],
                            label + "\n" + ctx)
        # (b) one verify line each, within 0.1 pp, "ok"
        self.assertEqual(sorted(k for k in vf if not k.startswith("cap:")), sorted(LABELS), ctx)
        for label in LABELS:
            v = vf[label]
            self.assertLessEqual(abs(v["diff"]), 0.1, label + "\n" + ctx)
            self.assertLessEqual(abs(v["pct"] - v["pred"]), 0.1 + 0.006, label + "\n" + ctx)
            self.assertEqual(v["tail"], "ok", label + "\n" + ctx)
            self.assertAlmostEqual(v["pred"], ev[label]["pct"], places=2, msg=ctx)
        self.assertNotIn("OUT OF TOLERANCE", out)
        self.assertNotIn("MISMATCH", out)
        self.assertNotIn("WORSE THAN THE CURRENT", out)
        # never a recommendation that loses to the current settings
        for c in parse_candidates(out):
            if c["recommended"]:
                self.assertIn(c["vs"], ("better", "same"), ctx)
        # (c) exit 0
        self.assertEqual(rc, 0, ctx)
        return ev, vf, out

    def test_wrapped_and_said_once(self):
        """Issue 20: not on a terminal (and no COLUMNS), no line of `model
        advise` is longer than 100 columns: long lines wrap at a space, a
        slab_sizes list after a '-', continuations indented, nothing lost
        but the spaces at the breaks (COLUMNS=0: the same text unwrapped).
        A run with incr/decr says once, with the count of replays, that
        writes to its counter keys are sent with digits -- not once per
        replay of --verify."""
        mc = self.mc(extra=["-m", "256"], name="mc-wrap")
        px = self.proxy(mc.port, name="px-wrap", extra=["--run", "wrap"])
        wl = os.path.join(self.w.path, "wrap.wl")
        with open(wl, "w") as f:
            # incr on keys never set: NOT_FOUND, and counter keys all the same
            f.write("seed 3\nset 3000 key=k:{i} size=uniform(100,6000)\n"
                    "incr 200 key=c:{i%100}\n")
        rc, out, err = run_slabtap(["load", "--target", "127.0.0.1:%d" % px.port, "--workload", wl,
                                    "--quiet"])
        self.assertEqual(rc, 0, out + err)
        self.stop_clean(px)
        env = mctest.slabtap_env()
        del env["COLUMNS"]

        def advise(*extra, columns=None):
            e = dict(env)
            if columns is not None:
                e["COLUMNS"] = columns
            p = subprocess.run([mctest.SLABTAP, "model", "advise", "--db", px.db, "--run", "wrap"]
                               + list(extra), stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=600, env=e)
            self.assertEqual(mctest.sanitizer_errors(p.stderr), [])
            return p.returncode, p.stdout, p.stderr

        rc, out, err = advise("--verify")
        ctx = "advise output:\n%s\nstderr:\n%s" % (out, err[-3000:])
        self.assertEqual(rc, 0, ctx)
        self.assertEqual([l for l in out.splitlines() if len(l) > 100], [], ctx)
        said = [l for l in err.splitlines() if "incr/decr on" in l]
        self.assertEqual(len(said), 1, ctx)
        m = re.search(r"INFO.*: (\d+) incr/decr on (\d+) keys: every write to those keys was sent "
                      r"with digits \(in each of the (\d+) replays\)$", said[0])
        self.assertTrue(m, said[0])
        self.assertEqual(int(m.group(1)), 200, said[0])
        self.assertGreaterEqual(int(m.group(3)), 3, said[0])  # one per candidate verified
        # the same text unwrapped, and it had lines to wrap
        rc, narrow, _ = advise()
        self.assertEqual(rc, 0)
        rc, wide, _ = advise(columns="0")
        self.assertEqual(rc, 0)
        self.assertTrue([l for l in wide.splitlines() if len(l) > 100], wide)
        self.assertEqual("".join(narrow.split()), "".join(wide.split()))
        self.assertEqual([l for l in narrow.splitlines() if len(l) > 100], [], narrow)
        self.assertRegex(narrow, r"(?m)^ {8}\d+(-\d+)+-?$")  # a slab_sizes list, continued
        rc, sixty, _ = advise(columns="60")
        self.assertEqual([l for l in sixty.splitlines() if len(l) > 60], [], sixty)

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

    def record_full(self, name, mem_mb):
        """The capacity workload through the proxy in front of memcached -m
        mem_mb (full: it evicts); returns (db, curr_items, evictions)."""
        wl = os.path.join(self.w.path, "capacity.wl")
        with open(wl, "w") as f:
            f.write(CAPACITY_WL)
        mc = self.mc(extra=["-m", str(mem_mb)], name="mc-" + name)
        px = self.proxy(mc.port, keys="hash", name="px-" + name, extra=["--run", name])
        rc, out, err = run_slabtap(["load", "--target", "127.0.0.1:%d" % px.port,
                                    "--workload", wl, "--quiet"])
        self.assertEqual(rc, 0, out + err)
        st = mc_stats(mc.port, "")
        self.stop_clean(px)
        return px.db, int(st["curr_items"]), int(st["evictions"])

    def test_capacity_full(self):
        db, items, evictions = self.record_full("cap8", 8)
        self.assertGreater(evictions, 0)  # more data than fits in 8 MB
        rc, out, err = run_slabtap(["model", "advise", "--db", db, "--run", "cap8", "--verify"])
        ctx = "advise output:\n%s\nstderr:\n%s" % (out, err[-3000:])
        self.assertEqual(rc, 0, ctx)
        # the objective follows from the full run; -m from the run's settings
        self.assertIn("capacity: objective items -- most items held in -m 8 (8388608 bytes), "
                      "chosen because the run's memcached was full", out, ctx)
        cands = parse_candidates(out)
        self.assertGreaterEqual(len(cands), 4, ctx)
        own = cands[0]
        self.assertEqual(own["label"], "the run's own settings", ctx)
        self.assertEqual(own["flags"], "-m 8 -n 48 -f 1.25", ctx)
        for c in cands:  # memory = held + chunk waste + page slack
            self.assertEqual(c["bytes"] + c["waste"] + c["slack"], c["memory"], ctx)
        rec = [c for c in cands if c["recommended"]]
        self.assertEqual(len(rec), 1, ctx)
        self.assertGreaterEqual(rec[0]["items"], own["items"], ctx)
        self.assertFalse(rec[0]["over"], ctx)
        self.assertRegex(out, r"(?m)^  memcached flags: -m 8 ", ctx)
        _, vf = parse_advise(out)
        caps = {k[4:]: v for k, v in vf.items() if k.startswith("cap:")}
        self.assertIn("the run's own settings", caps, ctx)
        self.assertGreaterEqual(len(caps), 2, ctx)
        for label, v in caps.items():
            # predicted items held == measured, at -m 8, evictions too
            self.assertEqual(v["items"], v["pred_items"], label + "\n" + ctx)
            self.assertEqual(v["evictions"], v["pred_evictions"], label + "\n" + ctx)
            self.assertEqual(v["malloced"], v["pred_malloced"], label + "\n" + ctx)
            self.assertEqual(v["tail"], "ok", ctx)
            self.assertIn("-m 8 ", v["flags"], ctx)
        # replayed on one connection in the recorded order: the run's own
        # settings hold what the recorded memcached held
        self.assertEqual(caps["the run's own settings"]["items"], items, ctx)
        self.assertEqual(caps["the run's own settings"]["evictions"], evictions, ctx)
        self.assertGreater(evictions, 0, ctx)
        self.assertRegex(out, r"(?m)^  verify: the recommendation .* holds (\d+), the run's own "
                              r"settings (\d+): ok$", ctx)
        m = re.search(r"(?m)^  verify: the recommendation .* holds (\d+), the run's own "
                      r"settings (\d+): ok$", out)
        self.assertGreaterEqual(int(m.group(1)), int(m.group(2)), ctx)

        # hold-out: fitted on the first half, checked on the second
        rc, out, err = run_slabtap(["model", "advise", "--db", db, "--run", "cap8", "--holdout"])
        self.assertEqual(rc, 0, out + err)
        self.assertIn("hold-out: the candidates on the second half", out)
        self.assertRegex(out, r"(?m)^  hold-out the run's own settings\s+items held\s+\d+")

    def test_capacity_roomy(self):
        db, items, evictions = self.record_full("cap8m", 8)
        rc, out, err = run_slabtap(["model", "advise", "--db", db, "--run", "cap8m", "--verify",
                                    "--objective", "memory", "--max-classes", "20"])
        ctx = "advise output:\n%s\nstderr:\n%s" % (out, err[-3000:])
        self.assertEqual(rc, 0, ctx)
        self.assertIn("capacity: objective memory -- least memory for the whole working set", out)
        cands = parse_candidates(out)
        own = cands[0]
        for c in cands:
            self.assertEqual(c["evictions"], 0, ctx)  # no limit
            self.assertEqual(c["items"], own["items"], ctx)
        rec = [c for c in cands if c["recommended"]][0]
        self.assertLessEqual(rec["memory"], own["memory"], ctx)
        # every ladder within --max-classes 20 (item 7): slab_sizes <= 19 sizes
        for c in cands[1:]:
            m = re.search(r"slab_sizes=([\d-]+)", c["flags"])
            if m:
                self.assertLessEqual(len(m.group(1).split("-")), 19, ctx)
        _, vf = parse_advise(out)
        caps = {k[4:]: v for k, v in vf.items() if k.startswith("cap:")}
        self.assertGreaterEqual(len(caps), 2, ctx)
        for label, v in caps.items():
            self.assertEqual(v["malloced"], v["pred_malloced"], label + "\n" + ctx)
            self.assertEqual(v["items"], v["pred_items"], label + "\n" + ctx)
            self.assertEqual(v["evictions"], 0, ctx)


if __name__ == "__main__":
    unittest.main(verbosity=2)
