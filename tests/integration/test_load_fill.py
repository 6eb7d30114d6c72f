#!/usr/bin/python3
"""test_load_fill: get-or-set load and replay with reads (issue 19) against
a real memcached.

1. getset: a Zipf get-or-set workload (hot keys asked for again while their
   first get is still in flight) makes exactly one miss per key: memcached's
   cmd_set delta, its curr_items and total_items all equal the misses, and
   equal the fills `slabtap load` made and saw STORED; this client's hits and
   misses equal memcached's get_hits / get_misses deltas, per phase too. The
   items memcached holds have the per-key ETC size (computed here
   independently) and the flags asked for. A second run on the warm cache
   hits every time and fills nothing. --no-probe asks no `stats`, and says so.
2. Replay with reads: a run recorded by `slabtap proxy` (writes) plus a
   `reads` table this test fills (until the recorder writes reads itself):
   reads are sent in the merged order (a read recorded just before a key's
   write misses, just after it hits), a read whose key's next request is a
   write fills nothing, a read of a key known only from a recorded hit is
   filled with that length (so the next read hits); --no-demand-fill fills
   nothing. memcached's own counters agree with the summary.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded.
"""
import math
import os
import re
import sqlite3
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

M64 = (1 << 64) - 1


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & M64
    return h


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def key_unit(key, seed, stream=0):
    """workload_key_unit: splitmix64 over FNV-1a(key) ^ rotl(seed, 17) ^ stream << 56."""
    x = fnv1a64(key) ^ (((seed << 17) | (seed >> 47)) & M64) ^ ((stream << 56) & M64)
    z = (x + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    return ((z ^ (z >> 31)) >> 11) * 2.0 ** -53


def etc_size(key, seed):
    """size=etc: Generalized Pareto, scale 214.476, shape 0.348238, cap 500,000."""
    u = key_unit(key, seed)
    x = 214.476 * math.expm1(-0.348238 * math.log1p(-u)) / 0.348238
    return 500000 if not x < 500000 else (1 if x < 1 else int(x))


def run_load(args, timeout=120):
    return mctest.run_slabtap(["load"] + list(args), timeout)


def reads_line(text):
    """'N gets, H hits, M misses, hit ratio R %, F fills (S stored)' -> dict."""
    m = re.match(r"(\d+) gets, (\d+) hits, (\d+) misses, hit ratio ([\d.]+) %, "
                 r"(\d+) fills \((\d+) stored\)$", text.strip())
    assert m, text
    g = [int(x) for x in m.group(1, 2, 3, 5, 6)]
    return {"gets": g[0], "hits": g[1], "misses": g[2], "fills": g[3], "stored": g[4]}


def server_line(text):
    """'get_hits H, get_misses M, hit ratio R %, cmd_set S, evictions E' -> dict."""
    m = re.match(r"get_hits (\d+), get_misses (\d+), hit ratio [\d.]+ %, cmd_set (\d+), "
                 r"evictions (\d+)$", text.strip())
    assert m, text
    return dict(zip(("get_hits", "get_misses", "cmd_set", "evictions"),
                    (int(x) for x in m.groups())))


def summary_lines(out):
    """[(label, value)] in order, for labels that repeat (phase lines)."""
    rows = []
    for line in out.splitlines():
        m = re.match(r"^(\s*[^:]+):\s*(.*)$", line)
        if m:
            rows.append((m.group(1), m.group(2)))
    return rows


def after(rows, label, what):
    """The value of the first `what` line after the line labelled label."""
    seen = False
    for lab, val in rows:
        if seen and lab.strip() == what:
            return val
        seen = seen or lab == label
    raise AssertionError("no %s after %s in %s" % (what, label, rows))


GETSET = """\
seed 5
connections 3
pipeline 16
getset 6000 key=g:{zipf:1500:1.0:4} size=etc flags=2
phase second
getset 3000 key=g:{zipf:1500:1.0:4} size=etc flags=2
"""


class LoadFillBase(mctest.ServerTestCase):
    workdir_prefix = "slabtap-fill-"

    def load_ok(self, args):
        rc, out, err = run_load(args)
        self.assertEqual(rc, 0, "slabtap load %s: rc %d\nstdout:\n%s\nstderr:\n%s"
                         % (" ".join(args), rc, out, err[-3000:]))
        return out, summary_lines(out)


class GetOrSet(LoadFillBase):
    def test_misses_are_filled_once_then_hit(self):
        mc = self.mc()
        wl = self.write("gs.wl", GETSET)
        out, rows = self.load_ok(["--target", "127.0.0.1:%d" % mc.port, "--workload", wl, "-q"])
        d = dict(rows)
        r, s = reads_line(d["reads"]), server_line(d["server"])
        self.assertEqual(r["gets"], 9000)
        self.assertEqual(r["hits"] + r["misses"], 9000)
        # one miss per key: ordering per key held (hot keys were asked for
        # again while their first get was in flight)
        st = mctest.mc_stats(mc.port)
        self.assertGreater(r["misses"], 100)
        self.assertEqual(int(st["curr_items"]), r["misses"])
        self.assertEqual(int(st["total_items"]), r["misses"])
        self.assertEqual(r["fills"], r["misses"])
        self.assertEqual(r["stored"], r["misses"])
        self.assertEqual(s["cmd_set"], r["misses"])
        self.assertEqual((s["get_hits"], s["get_misses"]), (r["hits"], r["misses"]))
        self.assertEqual(s["evictions"], 0)
        # per phase: the two phases add up, and memcached agrees on each
        p1, p2 = reads_line(d["phase (start)"]), reads_line(d["phase second"])
        self.assertEqual((p1["gets"], p2["gets"]), (6000, 3000))
        self.assertEqual(p1["misses"] + p2["misses"], r["misses"])
        s2 = server_line(after(rows, "phase second", "server"))
        self.assertEqual((s2["get_hits"], s2["get_misses"], s2["cmd_set"]),
                         (p2["hits"], p2["misses"], p2["fills"]))
        # the items have their key's ETC size and the flags asked for
        keys = ["g:%04d" % i for i in range(1500)]
        got = {}
        with mctest.connect(mc.port) as sock:
            for i in range(0, len(keys), 100):
                sock.sendall(("get %s\r\n" % " ".join(keys[i:i + 100])).encode())
                data = mctest.recv_until(sock, b"END\r\n")
                for m in re.finditer(rb"VALUE (\S+) (\d+) (\d+)\r\n", data):
                    got[m.group(1).decode()] = (int(m.group(2)), int(m.group(3)))
        self.assertEqual(len(got), r["misses"])
        want = {k: (2, etc_size(k.encode(), 5)) for k in got}
        self.assertEqual(got, want)

        # warm cache: every get hits, nothing is filled
        out, rows = self.load_ok(["--target", "127.0.0.1:%d" % mc.port, "--workload", wl, "-q"])
        d = dict(rows)
        r, s = reads_line(d["reads"]), server_line(d["server"])
        self.assertEqual((r["hits"], r["misses"], r["fills"]), (9000, 0, 0))
        self.assertEqual((s["get_hits"], s["get_misses"], s["cmd_set"]), (9000, 0, 0))
        self.assertIn("hit ratio 100.00 %", d["reads"])

        # --no-probe: no `stats` asked, and the summary says so
        out, rows = self.load_ok(["--target", "127.0.0.1:%d" % mc.port, "--workload", wl, "-q",
                                  "--no-probe"])
        self.assertIn("not asked (--no-probe)", dict(rows)["server"])

    def test_fill_flag_in_the_fingerprint(self):
        wl = self.write("gs.wl", GETSET)
        plain = self.write("g.wl", GETSET.replace("getset", "get").replace(" size=etc flags=2", ""))
        fp = [dict(self.load_ok(["--dry-run", "--workload", w])[1])["fingerprint"]
              for w in (wl, plain)]
        self.assertNotEqual(fp[0], fp[1])


READS_DDL = """CREATE TABLE reads (run_id INTEGER, seq INTEGER, after_write INTEGER,
  conn_id INTEGER, t_ns INTEGER, cmd TEXT, key TEXT, key_hash INTEGER, key_len INTEGER,
  hit INTEGER, value_len INTEGER, flags INTEGER, exptime INTEGER, class_id INTEGER)"""


class ReplayWithReads(LoadFillBase):
    def recorded(self):
        """A run of 300 sets recorded by the proxy, plus reads written here;
        (db, run_id)."""
        a = self.mc(name="mc-a")
        px = self.proxy(a.port)
        wl = self.write("rec.wl", "seed 3\nconnections 1\n"
                        "set 300 key=r:{i:3} size=uniform(10,3000) flags=1\n")
        self.load_ok(["--target", "127.0.0.1:%d" % px.port, "--workload", wl, "-q"])
        self.stop_clean(px)
        con = sqlite3.connect(px.db)
        run = con.execute("SELECT max(run_id) FROM sets").fetchone()[0]
        writes = con.execute("SELECT seq, key, key_hash, key_len, value_len FROM sets "
                             "WHERE run_id = ? ORDER BY seq", (run,)).fetchall()
        self.assertEqual(len(writes), 300)
        exists = con.execute("SELECT type FROM sqlite_master WHERE name = 'reads'").fetchone()
        if exists:  # the recorder's own view: this test writes its own rows
            con.execute("DROP %s reads" % ("VIEW" if exists[0] == "view" else "TABLE"))
        con.execute(READS_DDL)
        rows, seq = [], 0

        def read(after_write, key, hit, vlen):
            nonlocal seq
            seq += 1
            kb = key.encode()
            rows.append((run, seq, after_write, 1, 0, "get" if seq % 3 else "mg", key,
                         signed64(fnv1a64(kb)), len(kb), hit, vlen if hit else None,
                         1 if hit else None, None, None))

        last = writes[-1][0]
        for wseq, key, _, _, vlen in writes:
            read(wseq - 1, key, 0, None)  # just before its write: a miss, the write follows
            read(wseq, key, 1, vlen)      # just after: a hit
        for i in range(50):               # keys the recording only saw hit
            read(last, "lost:%02d" % i, 1, 500)
            read(last, "lost:%02d" % i, 1, 500)
        con.executemany("INSERT INTO reads VALUES (%s)" % ",".join("?" * 14), rows)
        con.commit()
        con.close()
        return px.db, run

    def test_merged_order_and_demand_fill(self):
        db, run = self.recorded()
        for fill in (True, False):
            b = self.mc(name="mc-b%d" % fill)
            args = ["--target", "127.0.0.1:%d" % b.port, "--replay-db", db, "-q"]
            out, rows = self.load_ok(args + ([] if fill else ["--no-demand-fill"]))
            d = dict(rows)
            r, s = reads_line(d["reads"]), server_line(d["server"])
            self.assertEqual(d["ops"], "1000")
            self.assertIn("700 reads replayed", d["replayed reads"])
            if fill:
                self.assertEqual((r["gets"], r["hits"], r["misses"], r["fills"], r["stored"]),
                                 (700, 350, 350, 50, 50))
                self.assertIn("no fill: 300 (next request a write), 0 (size unknown)",
                              d["replayed reads"])
            else:
                self.assertEqual((r["gets"], r["hits"], r["misses"], r["fills"]),
                                 (700, 300, 400, 0))
            self.assertEqual((s["get_hits"], s["get_misses"], s["cmd_set"]),
                             (r["hits"], r["misses"], 300 + r["fills"]))
            st = mctest.mc_stats(b.port)
            self.assertEqual(int(st["curr_items"]), 300 + r["fills"])
            with mctest.connect(b.port) as sock:
                sock.sendall(b"get lost:07\r\n")
                data = mctest.recv_until(sock, b"END\r\n")
            self.assertEqual(data.startswith(b"VALUE lost:07 1 500\r\n"), fill, data[:60])
        fps = [dict(self.load_ok(["--dry-run", "--replay-db", db] + extra)[1])["fingerprint"]
               for extra in ([], ["--no-demand-fill"])]
        self.assertNotEqual(fps[0], fps[1])


if __name__ == "__main__":
    unittest.main(verbosity=2)
