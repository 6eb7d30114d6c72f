#!/usr/bin/python3
"""test_model_agg: `slabtap model predict` / `advise` from the write
aggregates when a run's rows are gone (issue 14).

Each case records a small run through `slabtap proxy` in front of a real
memcached (-m large enough that nothing is evicted), predicts and advises
from the rows, then copies the file, deletes the run's rows (DELETE FROM
writes, as retention does: the aggregates stay) and predicts and advises
again:

  * sets of distinct keys only, every size below 16 KB: from the
    aggregates predict is labelled "EXACT from aggregates" and equals
    memcached per class (used_chunks, mem_requested, pages), exit 0;
  * overwrites with other sizes, deletes, a refused add and items of
    16 KB .. 200 KB: from the rows EXACT; from the aggregates "ESTIMATE
    from aggregates", the estimates sum to curr_items and every class's
    memcached number lies within the stated bound
    [max(0, N - (W - W_c)), min(W_c, N)] (no "OUTSIDE THE BOUND"), and
    advise works from the histogram (basis line, capacity from it).

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown.
"""
import os
import random
import re
import shutil
import sqlite3
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

run_slabtap = mctest.run_slabtap

ROW = re.compile(r"^\s*(\d+)\s+(\d+) \|\s+(\d+)\s+(-?\d+) \|\s+(\d+)\s+(-?\d+) \|"
                 r"\s+(\d+)\s+(-?\d+) \| (.*)$", re.M)
BOUND = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\.\.(\d+)\s+(-?\d+)\s+([-+]\d+)(.*)$", re.M)


def send(port, cmds):
    """Sends each (command line, data or None), one at a time; returns the
    answers."""
    answers = []
    with mctest.connect(port) as s:
        for line, data in cmds:
            s.sendall(line.encode() + b"\r\n" + (data + b"\r\n" if data is not None else b""))
            answers.append(mctest.recv_until(s, b"\r\n").decode().strip())
    return answers


class ModelAggTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-agg-"

    def record(self, name, cmds):
        mc = self.mc(extra=["-m", "256"], name="mc-" + name)
        px = self.proxy(mc.port, keys="hash", name="px-" + name, extra=["--run", name])
        answers = send(px.port, cmds)
        curr = int(mctest.mc_stats(mc.port)["curr_items"])
        self.stop_clean(px)
        return px.db, answers, curr

    def expire(self, db):
        """A copy of db without the run's rows (the aggregates kept)."""
        gone = db + ".gone.db"
        shutil.copy(db, gone)
        con = sqlite3.connect(gone)
        con.execute("DELETE FROM writes")
        con.execute("DELETE FROM arrivals")
        con.commit()
        n = con.execute("SELECT count(*) FROM agg_items").fetchone()[0]
        con.close()
        self.assertGreater(n, 0, "the aggregates are there")
        return gone

    def predict(self, db, name, extra=()):
        rc, out, err = run_slabtap(["model", "predict", "--db", db, "--run", name] + list(extra))
        return rc, out, err

    def test_distinct_keys_exact(self):
        rnd = random.Random(14)
        cmds = [("set k%d 0 0 %d" % (i, n), b"x" * n)
                for i, n in enumerate(rnd.randint(1, 12000) for _ in range(1500))]
        db, answers, curr = self.record("distinct", cmds)
        self.assertEqual(set(answers), {"STORED"})
        rc, rows, err = self.predict(db, "distinct")
        self.assertEqual(rc, 0, rows + err)
        self.assertIn("verdict: EXACT", rows)
        self.assertIn("basis: rows", rows)
        gone = self.expire(db)
        rc, aggs, err = self.predict(gone, "distinct")
        ctx = aggs + err
        self.assertEqual(rc, 0, ctx)
        self.assertIn("basis: aggregates -- 0 of 1500 rows left", aggs)
        self.assertIn("basis: EXACT from aggregates", aggs)
        self.assertIn("verdict: EXACT", aggs)
        # per class the same table as from the rows
        self.assertEqual(ROW.findall(rows), ROW.findall(aggs), ctx)
        # forcing the rows on the expired copy says they are incomplete
        rc, out, err = self.predict(gone, "distinct", ["--source", "rows"])
        self.assertIn("INCOMPLETE", out)
        # advise from the aggregates: the same waste lines as from the rows
        rc1, a1, e1 = run_slabtap(["model", "advise", "--db", db, "--run", "distinct"])
        rc2, a2, e2 = run_slabtap(["model", "advise", "--db", gone, "--run", "distinct"])
        self.assertEqual(rc1, 0, a1 + e1)
        self.assertEqual(rc2, 0, a2 + e2)
        waste = re.compile(r"^  (the run's own settings|best -f/-n|fitted slab_sizes) .*$", re.M)
        self.assertEqual([m.group(0) for m in waste.finditer(a1)],
                         [m.group(0) for m in waste.finditer(a2)], a1 + a2)

    def test_overwrites_estimate(self):
        rnd = random.Random(140)
        cmds = []
        for i in range(1200):  # small items, some with flags
            n = rnd.randint(1, 3000)
            cmds.append(("set k%d %d 0 %d" % (i, rnd.choice((0, 7)), n), b"s" * n))
        for i in range(60):  # 16 KB .. 200 KB: log-linear buckets
            n = rnd.randint(16384, 200000)
            cmds.append(("set big%d 0 0 %d" % (i, n), b"b" * n))
        for _ in range(600):  # overwrites with other sizes
            i = rnd.randrange(1200)
            n = rnd.randint(1, 6000)
            cmds.append(("set k%d 0 0 %d" % (i, n), b"o" * n))
        for i in range(0, 300, 2):  # deletes
            cmds.append(("delete k%d" % i, None))
        cmds.append(("add k1 0 0 5", b"added"))  # refused: k1 exists
        db, answers, curr = self.record("churn", cmds)
        self.assertEqual(answers[-1], "NOT_STORED")
        rc, rows, err = self.predict(db, "churn")
        self.assertEqual(rc, 0, rows + err)
        self.assertIn("verdict: EXACT", rows)
        gone = self.expire(db)
        rc, aggs, err = self.predict(gone, "churn")
        ctx = aggs + err
        self.assertEqual(rc, 0, ctx)
        self.assertIn("basis: ESTIMATE from aggregates", aggs)
        self.assertIn("1860 stored writes, 1 refused, 150 deletes", aggs)
        self.assertIn("live items %d (the last sample's curr_items)" % curr, aggs)
        self.assertIn("sizes of 16 KB and more within 1/128", aggs)
        self.assertNotIn("verdict: EXACT", aggs)
        self.assertNotIn("OUTSIDE THE BOUND", aggs)
        est = 0
        classes = BOUND.findall(aggs)
        self.assertGreater(len(classes), 3, ctx)
        for c, written, e, lo, hi, obs, diff, tail in classes:
            est += int(e)
            self.assertLessEqual(int(lo), int(obs), ctx)
            self.assertLessEqual(int(obs), int(hi), ctx)
            # the estimate itself is within the bound too
            self.assertLessEqual(int(lo), int(e), ctx)
            self.assertLessEqual(int(e), int(hi), ctx)
        self.assertEqual(est, curr, ctx)
        # the measured error: items put in another class than memcached's
        m = re.search(r"misplaced (\d+) of (\d+) \(([\d.]+) %\)", aggs)
        self.assertTrue(m, ctx)
        self.assertLess(float(m.group(3)), 10.0, ctx)
        # advise from the histogram, capacity from it as the working set
        rc, adv, err = run_slabtap(["model", "advise", "--db", gone, "--run", "churn"])
        self.assertEqual(rc, 0, adv + err)
        self.assertIn("basis: ESTIMATE from aggregates", adv)
        self.assertIn("basis: advise's sizes -- each class's stored sizes scaled", adv)
        self.assertIn("the run's own settings", adv)
        self.assertRegex(adv, r"capacity: objective memory .*; %d writes" % curr)
        rc, adv, err = run_slabtap(["model", "advise", "--db", gone, "--run", "churn",
                                    "--holdout"])
        self.assertIn("--verify and --holdout replay the run's rows", adv)


if __name__ == "__main__":
    unittest.main()
