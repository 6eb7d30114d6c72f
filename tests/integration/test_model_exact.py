#!/usr/bin/python3
"""test_model_exact: `slabtap model predict` is EXACT wherever memcached is
deterministic (issue 11, items 1-5), against a real memcached started here.

  * -o slab_sizes servers (memcached does not report slab_sizes): issue
    11's repro, 20k sets of uniform(10,1500) on -o slab_sizes=100-200-400-
    800-1600 through the proxy, must be EXACT (exit 0) -- with no flags
    (the ladder is read from the chunk sizes memcached shows, and the
    disagreement with `stats settings` is logged as a warning and printed),
    with --slab-sizes and with --memcached-flags (then every write is
    tagged with its right class from the first one, and the view run_ladder
    shows the same ladder). A wrong --slab-sizes is reported, not used.
    The experiment runner hands its memcached flags to the ladder too.
  * -f 1.125 (printed as 1.12 by `stats settings`): the factor is
    recovered from the chunk sizes (or taken from --memcached-flags), and
    `model advise --verify` starts memcached with -f 1.125.
  * items memcached allocates and frees at once: a prepend's piece (set
    5000 bytes, prepend 10 -> class 1 holds a page), refused add / replace
    / cas / append / ms, a bad data chunk, a refused chunked add; noreply
    forms of them.
  * TTL 86400 writes, a failed incr, incr that lengthens a value, decr
    and touch: EXACT. An item read after it expired (get_expired) and a
    flush_all: NOT COMPARABLE, saying which.
  * a run recorded before run_meta 'ladder' existed gets run_ladder from
    its `stats settings` in SQL.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown.
"""
import os
import re
import sqlite3
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

run_slabtap = mctest.run_slabtap
SIZES5 = "100-200-400-800-1600"
LADDER5 = [104, 200, 400, 800, 1600, 524288]  # memcached -vv -o slab_sizes=SIZES5

ROW = re.compile(r"^\s*(\d+)\s+(\d+) \|\s+(\d+)\s+(-?\d+) \|\s+(\d+)\s+(-?\d+) \|"
                 r"\s+(\d+)\s+(-?\d+) \| (.*)$")
VERIFY = re.compile(r"^  verify (the run's own settings)\s+memcached (.*): measured waste\s+"
                    r"([\d.]+) % .*predicted\s+([\d.]+) %, difference ([+-][\d.]+) pp (.*)$", re.M)


def predicted(text):
    """{class: (chunk, used pred, requested pred, pages pred)} of predict's table."""
    out = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            out[int(m.group(1))] = (int(m.group(2)), int(m.group(3)), int(m.group(5)),
                                    int(m.group(7)))
    return out


class ModelExactTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-exact-"

    def start(self, mc_flags, name, proxy_extra=()):
        mc = self.mc(extra=["-m", "1024"] + list(mc_flags), name="mc-" + name)
        px = self.proxy(mc.port, name="px-" + name,
                        extra=["--run", name, "--stats-interval", "100"] + list(proxy_extra))
        return mc, px

    def load(self, px, workload):
        path = self.write("w-%d.wl" % px.port, workload)
        rc, out, err = run_slabtap(["load", "--target", "127.0.0.1:%d" % px.port,
                                    "--workload", path, "-q"], timeout=120)
        self.assertEqual(rc, 0, out + err)
        return out

    def predict(self, px, name, want_rc=0):
        rc, out, err = run_slabtap(["model", "predict", "--db", px.db, "--run", name])
        self.assertEqual(rc, want_rc, out + err)
        return out

    def assert_exact(self, mc, px, name):
        """Stops px, predicts, and checks every class against memcached's own
        counters read directly; returns predict's output."""
        obs = mctest.mc_classes(mc.port)
        self.stop_clean(px)
        out = self.predict(px, name)
        self.assertIn("verdict: EXACT", out, out)
        pred = predicted(out)
        for c in sorted(set(pred) | set(obs)):
            o = obs.get(c, {})
            p = pred.get(c, (o.get("chunk_size"), 0, 0, 0))
            self.assertEqual((p[0], p[1], p[2], p[3]),
                             (o.get("chunk_size"), o.get("used_chunks", 0),
                              o.get("mem_requested", 0), o.get("total_pages", 0)),
                             "class %d (chunk, used, requested, pages)\n%s" % (c, out))
        return out

    def ladder_view(self, db, name):
        return mctest.db_rows(db, "SELECT l.class_id, l.chunk_size, l.origin FROM run_ladder l"
                              " JOIN runs r USING (run_id) WHERE r.name = ? ORDER BY class_id",
                              (name,))

    def tags(self, db, name):
        rows = mctest.db_rows(db, "SELECT class_id, count(*) AS n FROM sets s JOIN runs r"
                              " USING (run_id) WHERE r.name = ? GROUP BY class_id", (name,))
        return {r["class_id"]: r["n"] for r in rows}

    # --- 1. -o slab_sizes -------------------------------------------------------------

    REPRO = ("connections 2\npipeline 32\nseed 11\n"
             "set 20000 key=ss:{i:6} size=uniform(10,1500)\n")

    def test_slab_sizes_repro_without_flags(self):
        """Issue 11's repro: 14 classes differed, exit 1. Now the chunk sizes
        memcached shows give the ladder, said so in the log and in predict."""
        mc, px = self.start(["-o", "slab_sizes=" + SIZES5], "ss_none")
        self.load(px, self.REPRO)
        out = self.assert_exact(mc, px, "ss_none")
        self.assertIn("ladder: -o slab_sizes=104-200-400-800-1600 (6 classes), from memcached's "
                      "chunk sizes", out)
        self.assertIn("disagrees with memcached: class 1 has 104-byte chunks there, 96", out)
        self.assertRegex(px.stderr_text(), r"WARN slab ladder .*disagrees with memcached")
        view = self.ladder_view(px.db, "ss_none")
        self.assertEqual([r["chunk_size"] for r in view], LADDER5)
        self.assertEqual({r["origin"] for r in view}, {"observed"})

    def test_slab_sizes_from_the_proxy_flags(self):
        """--slab-sizes / --memcached-flags: the right ladder from the first
        write -- predict, the class tags and run_ladder all agree."""
        for name, extra in (("ss_opt", ["--slab-sizes", SIZES5]),
                            ("ss_flags", ["--memcached-flags",
                                          "-m 1024 -t 2 -o slab_sizes=" + SIZES5])):
            mc, px = self.start(["-o", "slab_sizes=" + SIZES5], name, extra)
            self.load(px, self.REPRO)
            obs = mctest.mc_classes(mc.port)
            out = self.assert_exact(mc, px, name)
            self.assertIn("ladder: -o slab_sizes=100-200-400-800-1600 (6 classes), from "
                          "memcached's flags\n", out)
            self.assertNotIn("ladder note", out)
            self.assertNotIn("WARN", px.stderr_text())
            # every write tagged with the class memcached put it in
            self.assertEqual(self.tags(px.db, name),
                             {c: f["number"] for c, f in obs.items() if f.get("number")})
            self.assertEqual([r["chunk_size"] for r in self.ladder_view(px.db, name)], LADDER5)
            meta = mctest.db_rows(px.db, "SELECT value FROM run_meta WHERE key ="
                                  " 'memcached_flags'")
            self.assertEqual(len(meta), 1)
            self.assertIn("slab_sizes=" + SIZES5, meta[0]["value"])

    def test_wrong_slab_sizes_reported_not_used(self):
        mc, px = self.start(["-o", "slab_sizes=" + SIZES5], "ss_wrong",
                            ["--slab-sizes", "100-300-600-1200-1600"])
        self.load(px, self.REPRO)
        out = self.assert_exact(mc, px, "ss_wrong")
        self.assertIn("The ladder of the flags (-o slab_sizes=100-300-600-1200-1600) disagrees "
                      "with memcached: class 2 has 200-byte chunks there, 304", out)
        self.assertIn("from memcached's chunk sizes", out)
        self.assertRegex(px.stderr_text(), r"WARN slab ladder .*disagrees")

    def test_bad_ladder_flags_refused(self):
        for args, msg in ((["--slab-sizes", "100-x"], "--slab-sizes: slab size 'x' is not a"),
                          (["--memcached-flags", "-m 64 -Q"], "memcached has no flag -Q"),
                          (["--memcached-flags", "-f"], "-f needs a value")):
            rc, out, err = run_slabtap(["proxy", "--upstream", "127.0.0.1:1", "--db",
                                        self.path("x.db"), "--http", "off"] + args, timeout=30)
            self.assertEqual(rc, 2, err)
            self.assertIn(msg, err)

    def test_experiment_passes_its_flags(self):
        """A run the experiment runner started memcached for: its flags give
        the ladder (gate=model passes on a slab_sizes server)."""
        self.write("ss.wl", "connections 2\npipeline 16\nseed 3\n"
                            "set 4000 key=e:{i:5} size=uniform(10,1500)\n")
        spec = self.write("ss.exp", 'run exp_ss memcached="-m 64 -o slab_sizes=%s" '
                                    "workload=ss.wl gate=model\n" % SIZES5)
        db = self.path("exp.db")
        rc, out, err = run_slabtap(["experiment", spec, "--db", db, "--results",
                                    self.path("results")], timeout=120)
        self.assertEqual(rc, 0, out + err)
        self.assertRegex(out, r"(?m)^gate ok +exp_ss +slab model predicts every class exactly")
        view = self.ladder_view(db, "exp_ss")
        self.assertEqual([r["chunk_size"] for r in view], LADDER5)
        self.assertEqual({r["origin"] for r in view}, {"flags"})

    # --- 4. growth factor with three decimals ----------------------------------

    F1125 = ("connections 2\npipeline 32\nseed 5\n"
             "set 3000 key=f:{i:5} size=uniform(0,6000)\n")

    def test_factor_three_decimals(self):
        mc, px = self.start(["-f", "1.125"], "f1125")
        self.assertEqual(mctest.mc_stats(mc.port, "settings")["growth_factor"], "1.12")
        self.load(px, self.F1125)
        out = self.assert_exact(mc, px, "f1125")
        self.assertIn("ladder: -n 48 -f 1.125 (63 classes), from growth factor recovered", out)
        self.assertIn("-n 48 -f 1.125 -I 1048576", out)
        # --verify starts memcached with the recovered -f, and measures what
        # the model predicts
        rc, aout, err = run_slabtap(["model", "advise", "--db", px.db, "--run", "f1125",
                                     "--verify"], timeout=300)
        self.assertEqual(rc, 0, aout + err)
        m = VERIFY.search(aout)
        self.assertTrue(m, aout)
        self.assertIn("-n 48 -f 1.125", m.group(2))
        self.assertEqual(m.group(6), "ok", aout)
        self.assertIn("the run's own settings     -n 48 -f 1.125", aout)

    def test_factor_from_memcached_flags(self):
        mc, px = self.start(["-f", "1.125"], "f1125_flags", ["--memcached-flags", "-f 1.125"])
        self.load(px, self.F1125)
        out = self.assert_exact(mc, px, "f1125_flags")
        self.assertIn("ladder: -n 48 -f 1.125 (63 classes), from memcached's flags\n", out)
        self.assertNotIn("ladder note", out)

    # --- 3. items allocated and freed at once ----------------------------------

    def test_prepend_piece_takes_a_page(self):
        """Issue 11's repro: class 1 predicted 0 pages, memcached 1."""
        mc, px = self.start([], "prepend")
        got = mctest.exchange(px.port, b"set k 0 0 5000\r\n%s\r\nprepend k 0 0 10\r\n"
                              b"0123456789\r\n" % (b"x" * 5000))
        self.assertEqual(got, b"STORED\r\nSTORED\r\n")
        out = self.assert_exact(mc, px, "prepend")
        self.assertEqual(predicted(out)[1], (96, 0, 0, 1))

    def test_refused_writes_take_pages(self):
        mc, px = self.start([], "refused")
        got = mctest.exchange(px.port, b"".join([
            b"set s 0 0 1\r\n1\r\n",
            b"add s 0 0 300\r\n%s\r\n" % (b"a" * 300),                 # NOT_STORED
            b"replace nokey 0 0 2000\r\n%s\r\n" % (b"r" * 2000),      # NOT_STORED
            b"cas nokey 0 0 5000 1\r\n%s\r\n" % (b"c" * 5000),        # NOT_FOUND
            b"cas s 0 0 700 999999\r\n%s\r\n" % (b"c" * 700),         # EXISTS
            b"append nokey 0 0 20000\r\n%s\r\n" % (b"p" * 20000),     # NOT_STORED
            b"ms s 3000 ME\r\n%s\r\n" % (b"e" * 3000),                # NS
            b"add s 0 0 600000\r\n%s\r\n" % (b"z" * 600000),          # NOT_STORED, chunked
            b"set big 0 0 2000000\r\n%s\r\n" % (b"b" * 2000000),      # too large: nothing
            b"add s 0 0 40000 noreply\r\n%s\r\n" % (b"n" * 40000),    # refused silently
            b"replace none2 0 0 9000 noreply\r\n%s\r\n" % (b"n" * 9000),
        ]), timeout=60)
        self.assertEqual(got, b"STORED\r\nNOT_STORED\r\nNOT_STORED\r\nNOT_FOUND\r\nEXISTS\r\n"
                              b"NOT_STORED\r\nNS\r\nNOT_STORED\r\n"
                              b"SERVER_ERROR object too large for cache\r\n")
        out = self.assert_exact(mc, px, "refused")
        self.assertIn("also: 9 items allocated and freed at once", out)
        pred = predicted(out)
        for c in (2, 7, 11, 15, 17, 19, 22, 25, 28, 31, 39):  # a page, no item
            self.assertEqual(pred.get(c, (0, 0, 0, 0))[1:], (0, 0, 1), "class %d\n%s" % (c, out))

    def test_bad_data_chunk_takes_a_page(self):
        mc, px = self.start([], "badchunk")
        got = mctest.exchange(px.port, b"set b 0 0 300\r\n%sXX\r\n" % (b"x" * 300))
        self.assertTrue(got.startswith(b"CLIENT_ERROR bad data chunk\r\n"), got)
        out = self.assert_exact(mc, px, "badchunk")
        self.assertEqual(predicted(out)[7], (384, 0, 0, 1))

    # --- 5. what makes a run not comparable, and what does not --------------------

    def test_ttl_and_counters_exact(self):
        mc, px = self.start([], "ttl")
        mctest.exchange(px.port, b"".join(
            b"set t%d 0 86400 %d\r\n%s\r\n" % (i, i * 7, b"v" * (i * 7)) for i in range(300)))
        got = mctest.exchange(px.port, b"incr nokey 1\r\nincr t1 1\r\n"
                              b"set n 0 0 1\r\n9\r\nincr n 1\r\nincr n 5\r\ndecr n 7\r\n"
                              b"incr n 100000\r\ntouch t5 1000\r\n"
                              b"set n2 0 0 2 noreply\r\n50\r\ndecr n2 1 noreply\r\n"
                              b"gat 3600 t7\r\n")
        self.assertTrue(got.startswith(b"NOT_FOUND\r\nCLIENT_ERROR cannot increment or "
                                       b"decrement non-numeric value\r\nSTORED\r\n10\r\n15\r\n"
                                       b"8\r\n100008\r\nTOUCHED\r\n"), got)
        out = self.assert_exact(mc, px, "ttl")
        self.assertIn("302 live items", out)
        self.assertRegex(out, r"5 incr/decr applied, 301 writes with a TTL")

    def test_expired_item_read_not_comparable(self):
        mc, px = self.start([], "expired")
        mctest.exchange(px.port, b"set e 0 1 10\r\n0123456789\r\nset f 0 0 10\r\n0123456789\r\n")
        time.sleep(2.5)  # memcached's clock ticks each second: e is past its TTL
        self.assertEqual(mctest.exchange(px.port, b"get e\r\n"), b"END\r\n")
        self.stop_clean(px)
        out = self.predict(px, "expired")
        # read after its TTL: removed when read (or, had the LRU crawler come
        # first, reclaimed by it); either way the verdict says so
        self.assertRegex(out, r"verdict: NOT COMPARABLE EXACTLY -- (get_expired 1 \(expired items "
                              r"removed when read\)|crawler_reclaimed 1|reclaimed 1)")

    def test_flush_all_not_comparable(self):
        mc, px = self.start([], "flush")
        mctest.exchange(px.port, b"set a 0 0 10\r\n0123456789\r\nflush_all\r\n")
        self.stop_clean(px)
        out = self.predict(px, "flush")
        # (the items flush_all invalidated may be reclaimed already: said too)
        self.assertRegex(out, r"verdict: NOT COMPARABLE EXACTLY -- .*flush_all 1")

    # --- the view for runs recorded before run_meta 'ladder' ---------------------

    def test_run_ladder_fallback_for_old_runs(self):
        mc, px = self.start(["-f", "1.08"], "old")
        mctest.exchange(px.port, b"set a 0 0 10\r\n0123456789\r\n")
        self.stop_clean(px)
        recorded = self.ladder_view(px.db, "old")
        con = sqlite3.connect(px.db)
        con.execute("DELETE FROM run_meta WHERE key = 'ladder'")
        con.commit()
        con.close()
        rc, lad, err = run_slabtap(["model", "ladder", "-f", "1.08"])
        want = [int(x) for x in re.findall(r"chunk size\s+(\d+)", lad)]
        old = self.ladder_view(px.db, "old")
        self.assertEqual([r["chunk_size"] for r in old], want)
        self.assertEqual({r["origin"] for r in old}, {"settings (sql)"})
        self.assertEqual([r["chunk_size"] for r in recorded], want)
        self.assertEqual({r["origin"] for r in recorded}, {"settings"})
        self.assertIn("verdict: EXACT", self.predict(px, "old"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
