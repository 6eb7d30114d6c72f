"""test_model_pg: every `slabtap model` command and `load --replay-db` read
a fleet's PostgreSQL as they read a SQLite file (record/reader.h: one read
interface, one implementation per engine).

Two memcacheds with the same flags, one proxy in front of each, both
recording reads: one records into a SQLite file, the other (--node cache-b)
into a throwaway PostgreSQL cluster (pgcluster.py). The same writes (sets
of many sizes, overwrites, deletes, appends, a refused add, TTLs) and the
same gets go through both; then, on each store:
- predict prints the same (per class, verdict and ladder), EXACT;
- advise prints the same: the default (the hits advice: the run recorded
  reads), the capacity advice (--objective items and memory), --holdout-run
  and the JSON hits report;
- advise --verify replays the run from either store into memcached and
  measures the same waste; --objective hits --verify measures from either;
- predict and advise from the write aggregates (--source aggregates) give
  the same estimate from either;
- mrc gives the same curves; --save keeps the report in the run's run_meta
  on PostgreSQL as in the file;
- load --replay-db sends the same operations (the same fingerprint, reads
  merged in) from either, and replays into a memcached from PostgreSQL;
- --node 'cache-%' / --since select runs on PostgreSQL (one per node,
  each predicted on its own; a pattern that matches nothing fails with a
  message); advise --node advises over the union of the nodes' items.

Needs memcached, PostgreSQL (initdb) and $SLABTAP. 127.0.0.1 only; bounded
waits.
"""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
import pgcluster  # noqa: E402


def load(port, salt):
    """The same writes on every call (salt only names nothing: keys equal)."""
    with mctest.connect(port) as s:
        items = []
        for i in range(600):
            size = 40 + (i * 37) % 3000
            items.append((b"k:%d" % i, bytes([97 + i % 26]) * size))
        mctest.set_items(s, items)
        # overwrites into other classes, deletes, appends, a refused add, TTLs
        mctest.set_items(s, [(b"k:%d" % i, b"z" * (5000 + i)) for i in range(0, 600, 7)])
        for i in range(1, 600, 11):
            s.sendall(b"delete k:%d\r\n" % i)
            mctest.recv_line(s)
        for i in range(2, 600, 13):
            s.sendall(b"append k:%d 0 0 5\r\nxxxxx\r\n" % i)
            mctest.recv_line(s)
        s.sendall(b"add k:3 0 0 1\r\nq\r\n")
        assert mctest.recv_line(s) == b"NOT_STORED\r\n"
        for i in range(50):
            s.sendall(b"set t:%d 0 86400 %d\r\n%s\r\n" % (i, 100 + i, b"t" * (100 + i)))
            assert mctest.recv_line(s) == b"STORED\r\n"
        # reads: hits, misses (deleted keys), a multi-key get
        for i in range(0, 600, 3):
            s.sendall(b"get k:%d\r\n" % i)
            mctest.recv_until(s, b"END\r\n")
        s.sendall(b"get t:1 t:2 k:5 nope\r\n")
        mctest.recv_until(s, b"END\r\n")


def body(out):
    """predict/advise output without what names the run or the store."""
    keep = []
    for line in out.splitlines():
        line = re.sub(r"run \d+", "run N", line)
        line = re.sub(r"'[^']*'", "'X'", line)
        keep.append(line)
    return keep


class ModelOnPostgres(mctest.ServerTestCase):
    workdir_prefix = "slabtap-modelpg-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.pg = pgcluster.PgCluster()
        cls.addClassCleanup(cls.pg.stop)
        mc_a = cls.class_mc(name="mc-a")
        mc_b = cls.class_mc(name="mc-b")
        cls.sqlite = os.path.join(cls.cw.path, "a.db")
        px_a = cls.class_proxy(mc_a.port, db=cls.sqlite, name="px-a",
                               extra=["--node", "cache-a", "--stats-interval", "100",
                                      "--reads", "on"])
        px_b = cls.class_proxy(mc_b.port, db=cls.pg.uri(), name="px-b",
                               extra=["--node", "cache-b", "--stats-interval", "100",
                                      "--reads", "on"])
        load(px_a.port, b"a")
        load(px_b.port, b"b")
        for px in (px_a, px_b):
            rc = px.stop()
            assert rc == 0 and not mctest.sanitizer_errors(px.stderr_text()), \
                px.stderr_text()[-3000:]

    def model(self, *args):
        rc, out, err = mctest.run_slabtap(["model"] + list(args), timeout=300)
        return rc, out, err

    def test_predict_same_on_both(self):
        rc_a, out_a, err_a = self.model("predict", "--db", self.sqlite)
        rc_b, out_b, err_b = self.model("predict", "--db", self.pg.uri())
        self.assertEqual(rc_a, 0, out_a + err_a)
        self.assertEqual(rc_b, 0, out_b + err_b)
        self.assertIn("EXACT", out_a)
        self.assertEqual(body(out_b), body(out_a))

    def both(self, *args, rc=0, flag="--db"):
        """`slabtap ARGS FLAG X` on the file and on PostgreSQL: (out_a, out_b)."""
        rc_a, out_a, err_a = mctest.run_slabtap(list(args) + [flag, self.sqlite], timeout=300)
        rc_b, out_b, err_b = mctest.run_slabtap(list(args) + [flag, self.pg.uri()], timeout=300)
        self.assertEqual(rc_a, rc, out_a + err_a)
        self.assertEqual(rc_b, rc, out_b + err_b)
        self.assertNotIn("SQLite", out_b + err_b)
        return out_a, out_b

    def test_advise_same_on_both(self):
        # the default: the hits advice (the run recorded reads), with the
        # chunk-waste part before it
        out_a, out_b = self.both("model", "advise")
        self.assertIn("hit ratio", out_a)
        self.assertEqual(body(out_b), body(out_a))

    def test_capacity_same_on_both(self):
        for objective in ("items", "memory"):
            out_a, out_b = self.both("model", "advise", "--objective", objective)
            self.assertIn("capacity: objective %s" % objective, out_a)
            self.assertIn("recommended:", out_a)
            self.assertEqual(body(out_b), body(out_a))

    def test_holdout_run_same_on_both(self):
        out_a, out_b = self.both("model", "advise", "--objective", "items", "--run", "proxy",
                                 "--holdout-run", "proxy")
        self.assertIn("hold-out:", out_a)
        self.assertEqual(body(out_b), body(out_a))

    def test_verify_same_on_both(self):
        # the waste memcached reports after the same replay, from either store
        out_a, out_b = self.both("model", "advise", "--objective", "items", "--verify",
                                 "--run", "proxy")
        self.assertIn("verifying capacity by replaying run", out_a)
        self.assertNotIn("MISMATCH", out_a + out_b)
        self.assertEqual(body(out_b), body(out_a))

    def test_hits_verify_on_both(self):
        # measured hit ratios vary by a tie between replays (VERIFY_HITS_TIE):
        # the predictions and the verdicts are the same
        out_a, out_b = self.both("model", "advise", "--objective", "hits", "--verify",
                                 "--run", "proxy")

        def predicted(out):
            return [ln for ln in body(out) if not ln.lstrip().startswith(("verify", "memcached"))
                    and "measured" not in ln]
        self.assertEqual(predicted(out_b), predicted(out_a))
        verdicts = [re.findall(r"\b(ok|MISMATCH|NOT THE BEST MEASURED)\s*$", o, re.M)
                    for o in (out_a, out_b)]
        self.assertTrue(verdicts[0])
        self.assertEqual(verdicts[1], verdicts[0])

    def test_hits_json_and_mrc_same_on_both(self):
        for args in (("model", "advise", "--objective", "hits", "--format", "json"),
                     ("model", "mrc", "--format", "json"),
                     ("model", "mrc", "--flags", "-f 1.1 -o slab_automove=0")):
            out_a, out_b = self.both(*args)
            self.assertEqual(re.sub(r'"run_id":\d+', "", out_b),
                             re.sub(r'"run_id":\d+', "", out_a), args)

    def test_aggregates_same_on_both(self):
        # the write aggregates (agg_items, agg_answers) PostgreSQL keeps as
        # the file does, read back for the model
        for args in (("model", "predict", "--source", "aggregates"),
                     ("model", "advise", "--source", "aggregates", "--objective", "items")):
            out_a, out_b = self.both(*args)
            self.assertIn("basis: aggregates", out_a)
            self.assertEqual(body(out_b), body(out_a))

    def test_save_on_postgres(self):
        rc, out, err = self.model("advise", "--objective", "hits", "--save", "--db", self.pg.uri())
        self.assertEqual(rc, 0, out + err)
        self.assertIn("saved: run_meta 'hits_advice'", out)
        saved = self.pg.scalar("SELECT value FROM run_meta WHERE key = 'hits_advice'")
        rc, js, err = self.model("advise", "--objective", "hits", "--format", "json",
                                 "--db", self.pg.uri())
        self.assertEqual(rc, 0, err)
        self.assertEqual(saved.strip(), js.strip())

    def test_replay_db_same_on_both(self):
        out_a, out_b = self.both("load", "--dry-run", flag="--replay-db")
        fp = [re.search(r"^fingerprint:\s+(\S+)$", o, re.M) for o in (out_a, out_b)]
        self.assertTrue(fp[0] and fp[1], out_a + out_b)
        self.assertEqual(fp[1].group(1), fp[0].group(1))
        ops = re.search(r"^ops by command:.*$", out_a, re.M).group(0)
        self.assertIn("get", ops)  # the reads, merged in
        self.assertIn(ops, out_b)
        # and sent, from PostgreSQL, into a memcached
        mc = self.mc(name="mc-replay")
        rc, out, err = mctest.run_slabtap(["load", "--target", "127.0.0.1:%d" % mc.port,
                                           "--replay-db", self.pg.uri(), "--replay-run", "proxy"],
                                          timeout=300)
        self.assertEqual(rc, 0, out + err)
        self.assertIn(fp[0].group(1), out)
        self.assertEqual(re.search(r"^errors:\s+(\d+)$", out, re.M).group(1), "0", out)

    def test_node_and_since(self):
        rc, out, err = self.model("predict", "--db", self.pg.uri(), "--node", "cache-%",
                                  "--since", "1 hour")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(re.findall(r"^node '([^']*)', run \d+:$", out, re.M), ["cache-b"])
        rc, out, err = self.model("predict", "--db", self.pg.uri(), "--node", "nope-%")
        self.assertEqual(rc, 1)
        self.assertIn("no run of a node like 'nope-%'", err)
        rc, out, err = self.model("predict", "--db", self.pg.uri(), "--since", "fortnight")
        self.assertEqual(rc, 2)
        rc, out, err = self.model("advise", "--db", self.pg.uri(), "--node", "cache-%")
        self.assertEqual(rc, 0, err)
        self.assertIn("fleet: 1 runs of 1 nodes like 'cache-%'", out)
        # the same node pattern on the SQLite file (its node in run_meta)
        rc, out, err = self.model("predict", "--db", self.sqlite, "--node", "cache-a")
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(re.findall(r"^node '([^']*)', run \d+:$", out, re.M), ["cache-a"])

    def test_password_never_shown(self):
        uri = "postgresql://%s:sekrit@127.0.0.1:%d/slabtap?connect_timeout=5" % (
            pgcluster.PW_ROLE, self.pg.port)
        rc, out, err = self.model("predict", "--db", uri)
        self.assertEqual(rc, 1)
        self.assertNotIn("sekrit", out + err)


if __name__ == "__main__":
    unittest.main()
