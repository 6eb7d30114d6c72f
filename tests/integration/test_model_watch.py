#!/usr/bin/python3
"""test_model_watch: `slabtap model predict` on a watch run (issue 22).

A watch run's writes are memcached's own log lines (`watch mutations`):
class_id is memcached's clsid and the client flags are unknown (the log
does not print them). predict takes flags as 0, compares the class of each
size with the clsid, takes a write whose clsid is the class only with the 4
bytes of a flags word as carrying flags, and allows each class's
mem_requested 4 bytes per item over the prediction (the flags it could not
see), never more.

The run: sets sent to a real memcached through `slabtap proxy` (which
records them with the class memcached gave each -- its tag equals
memcached's clsid, checked below against a `watch mutations` connection of
the test's own), then made a watch run as `slabtap watch` records one:
runs.kind 'watch' and no flags (the file's writes.extra keeps flags in its
high 32 bits; they are cleared). The clsid each store was logged with is
read from memcached by the test's own watcher and compared with the
recorded class_id row for row, so the converted run carries memcached's
clsid exactly.

  * flags 0 everywhere, items on every class boundary (exactly the chunk,
    one byte over): verdict EXACT, every class's used_chunks, total_pages
    and mem_requested equal to memcached's `stats slabs`/`stats items`,
    every store's class the same as the clsid, "0 writes not seen";
  * the same run with runs.rows_dropped set: "N writes not seen" and not
    EXACT;
  * non-zero flags on some items: those whose 4 flag bytes move them one
    class up are counted as inferred from the clsid and sized with flags;
    the others leave mem_requested 4 bytes per item over the prediction:
    verdict "EXACT CLASSES, SIZES WITHIN THE FLAGS' BOUND" with exactly
    that many flagged items, exit 0; items and pages equal memcached's.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown.
"""
import os
import re
import shutil
import sqlite3
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

run_slabtap = mctest.run_slabtap
ntotal = mctest.ntotal

ROW = re.compile(r"^\s*(\d+)\s+(\d+) \|\s+(\d+)\s+(-?\d+) \|\s+(\d+)\s+(-?\d+) \|"
                 r"\s+(\d+)\s+(-?\d+) \| (.*)$")


def ladder(flags=()):
    rc, out, err = run_slabtap(["model", "ladder"] + list(flags))
    if rc != 0:
        raise AssertionError("model ladder: rc %d %s" % (rc, err))
    return [int(m.group(1)) for m in re.finditer(r"chunk size\s+(\d+)", out)]


def predicted(text):
    out = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            out[int(m.group(1))] = {"used_chunks": int(m.group(3)),
                                    "mem_requested": int(m.group(5)),
                                    "total_pages": int(m.group(7)), "mark": m.group(9)}
    return out


def watch_lines(sock, n, timeout=30):
    """n item_store lines from a watcher socket: [(key, clsid, size)]."""
    buf = b""
    out = []
    while len(out) < n:
        data = mctest.recv_until(sock, b"\n", timeout=timeout)
        buf += data
        *lines, buf = buf.split(b"\n")
        for ln in lines:
            if b"type=item_store" not in ln:
                continue
            f = dict(p.split(b"=", 1) for p in ln.split() if b"=" in p)
            out.append((f[b"key"].decode(), int(f[b"clsid"]), int(f[b"size"])))
    return out


class WatchRunPredictTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-watchpredict-"

    def record(self, name, items):
        """items: [(key, flags, value_len)] sent through a proxy, answered
        STORED; returns (db, memcached's classes, clsid per store)."""
        mc = self.mc(extra=["-m", "256"], name="mc-" + name)
        watcher = mc.connect()
        self.addCleanup(watcher.close)
        watcher.sendall(b"watch mutations\r\n")
        self.assertEqual(mctest.recv_line(watcher), b"OK\r\n")
        px = self.proxy(mc.port, name="px-" + name, keys="full",
                        extra=["--run", name, "--stats-interval", "200"])
        payload = b"".join(b"set %s %d 0 %d\r\n%s\r\n" % (k.encode(), f, n, b"v" * n)
                           for k, f, n in items)
        got = mctest.exchange(px.port, payload, timeout=60)
        self.assertEqual(got, b"STORED\r\n" * len(items))
        logged = watch_lines(watcher, len(items))
        obs = mctest.mc_classes(mc.port)
        self.assertEqual(int(mctest.mc_stats(mc.port)["evictions"]), 0)
        self.stop_clean(px)
        # the proxy's class tags are memcached's own clsid, store for store
        rows = mctest.db_rows(px.db, "SELECT key, class_id, value_len FROM sets "
                                     "ORDER BY seq")
        self.assertEqual([(r["key"], r["class_id"], r["value_len"]) for r in rows], logged)
        # as `slabtap watch` records it: a watch run, flags unknown
        con = sqlite3.connect(px.db)
        con.execute("UPDATE runs SET kind = 'watch'")
        con.execute("UPDATE writes SET extra = (extra << 32) >> 32 "
                    "WHERE typeof(extra) = 'integer'")
        con.commit()
        con.close()
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM sets "
                                                 "WHERE coalesce(flags, 0) != 0"), 0)
        return px.db, obs, logged

    def boundary_items(self, chunks, flags_of):
        """Items of exactly each class's chunk size and one byte over, at
        flags 0 sizes (key 10 bytes), with the flags flags_of(i) gives."""
        items = []
        i = 0
        for c in chunks[:30]:
            for extra in (0, 1, -1):
                vlen = c + extra - ntotal(10, 0)
                if vlen < 0:
                    continue
                items.append(("k%09d" % i, flags_of(i), vlen))
                i += 1
        return items

    def predict(self, db, name):
        return run_slabtap(["model", "predict", "--db", db, "--run", name])

    def test_flags_zero_exact(self):
        chunks = ladder(["-m", "256"])
        items = self.boundary_items(chunks, lambda i: 0)
        db, obs, logged = self.record("w0", items)
        rc, out, err = self.predict(db, "w0")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("verdict: EXACT -- every class matches", out, out + err)
        self.assertIn("%d stores logged: %d the same, 0 one class up" % (len(items), len(items)),
                      out)
        self.assertIn("0 writes not seen", out)
        pred = predicted(out)
        for c in sorted(set(pred) | set(obs)):
            for field in ("used_chunks", "total_pages", "mem_requested"):
                self.assertEqual(pred.get(c, {}).get(field, 0), obs.get(c, {}).get(field, 0),
                                 "class %d %s\n%s" % (c, field, out))
        # writes memcached did not log: said, and no longer exact
        lost = os.path.join(self.w.path, "lost.db")
        shutil.copy(db, lost)
        con = sqlite3.connect(lost)
        con.execute("UPDATE runs SET rows_dropped = 7")
        con.commit()
        con.close()
        rc, out, err = self.predict(lost, "w0")
        self.assertEqual(rc, 0, out + err)
        self.assertIn("watch run: 7 writes not seen", out)
        self.assertIn("verdict: NOT COMPARABLE EXACTLY", out)
        self.assertIn("7 writes not seen (memcached dropped their log lines)", out)

    def test_flags_nonzero_bound(self):
        chunks = ladder(["-m", "256"])
        items = self.boundary_items(chunks, lambda i: 0 if i % 2 else 0xdeadbeef)
        db, obs, logged = self.record("wf", items)
        # what the flags did: one class up, or 4 bytes more in the same one
        up = same_flagged = 0
        for (k, f, vlen), (_, clsid, _) in zip(items, logged):
            if not f:
                continue
            c0 = next(i + 1 for i, c in enumerate(chunks) if c >= ntotal(10, vlen))
            if clsid != c0:
                self.assertEqual(clsid, c0 + 1)
                up += 1
            else:
                same_flagged += 1
        self.assertGreater(up, 10)
        self.assertGreater(same_flagged, 10)
        rc, out, err = self.predict(db, "wf")
        if os.environ.get("SHOW"):
            print(out)
        self.assertEqual(rc, 0, out + err)
        self.assertIn("%d one class up only with 4 bytes of flags" % up, out, out)
        self.assertIn(", 0 differ", out)
        self.assertIn("verdict: EXACT CLASSES, SIZES WITHIN THE FLAGS' BOUND", out, out)
        self.assertIn("each of %d items" % same_flagged, out, out)
        pred = predicted(out)
        extra = 0
        for c in sorted(set(pred) | set(obs)):
            p, o = pred.get(c, {}), obs.get(c, {})
            for field in ("used_chunks", "total_pages"):
                self.assertEqual(p.get(field, 0), o.get(field, 0),
                                 "class %d %s\n%s" % (c, field, out))
            d = o.get("mem_requested", 0) - p.get("mem_requested", 0)
            self.assertTrue(0 <= d <= 4 * o.get("used_chunks", 0) and d % 4 == 0, (c, d, out))
            extra += d
        self.assertEqual(extra, 4 * same_flagged)
        print("watch run, flags on %d of %d items: %d one class up (inferred from clsid), "
              "%d within the 4-byte bound" % (up + same_flagged, len(items), up, same_flagged))


if __name__ == "__main__":
    unittest.main()
