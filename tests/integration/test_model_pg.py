"""test_model_pg: `slabtap model predict/advise` select a fleet's runs.

Two memcacheds with the same flags, one proxy in front of each: one
records into a SQLite file, the other (--node cache-b) into a throwaway
PostgreSQL cluster (pgcluster.py). The same writes (sets of many sizes,
overwrites, deletes, appends, a refused add, TTLs) go through both; then
--node 'cache-%' / --since select runs on PostgreSQL (one per node, each
predicted on its own; a pattern that matches nothing fails with a
message), advise --node advises over the union of the nodes' items, the
node pattern works on the SQLite file too, and a password is never shown.
That each model command answers the same from either store is
test_engines.py's (predict, advise, mrc, --verify, --holdout-run, --save).

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
                               extra=["--node", "cache-a", "--stats-interval", "100"])
        px_b = cls.class_proxy(mc_b.port, db=cls.pg.uri(), name="px-b",
                               extra=["--node", "cache-b", "--stats-interval", "100"])
        load(px_a.port, b"a")
        load(px_b.port, b"b")
        for px in (px_a, px_b):
            rc = px.stop()
            assert rc == 0 and not mctest.sanitizer_errors(px.stderr_text()), \
                px.stderr_text()[-3000:]

    def model(self, *args):
        rc, out, err = mctest.run_slabtap(["model"] + list(args), timeout=300)
        return rc, out, err

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
