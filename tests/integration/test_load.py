#!/usr/bin/python3
"""test_load: `slabtap load` against a real memcached.

1. A small workload (phases, fill/over sizes from the live ladder, a
   rewritten working set with noreply, gets, deletes) leaves exactly the
   items it should: `stats` curr_items / total_items and `stats items`
   number / mem_requested per class match what the plan implies, and the
   summary's answers match too; the same over a unix socket (--target
   unix:PATH into memcached -s PATH).
2. The fingerprint: the same workload twice (and its --dry-run) gives the
   same fingerprint; a one-byte change or another seed gives another.
3. Errors: a bad workload exits 1 naming file:line before connecting; a bad
   flag exits 2 with usage; --help exits 0; a closed port exits 1.
4. Trace replays (tests/data/twitter_sample.csv, cachelib_sample.csv): the
   answers and the items left equal a simulation of memcached's semantics
   over the trace's keys (per-key order is kept, so this is exact).
5. Recorded runs: a synthetic `sets` table (full, prefix-only and hash-only
   keys, two runs) and a run recorded by `slabtap proxy --keys hash` replay
   into a fresh memcached with the same items per slab class, byte for byte
   of mem_requested.
6. Counters (issue 11): a trace that sets keys and then increments them
   (tests/data/twitter_counters.csv), replayed through the proxy, gets every
   incr/decr counted: the answers, memcached's incr_hits/decr_hits and the
   values read back are what memcached's own arithmetic over the replay's
   numeric values gives; the run the proxy recorded replays into a fresh
   memcached with the same answers and the same items per class; from a
   pipe (no read-ahead) every value is digits, with a warning; a recorded
   incr refused as non-numeric is refused again. The trace's 256-byte key
   is cut to 250 with a warning naming file:line and a count.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded.
"""
import csv
import os
import re
import time
import sqlite3
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

SLABTAP = mctest.SLABTAP
DATA = mctest.DATA
TTL_MAX = 2592000


def run_load(args, timeout=300):
    """(rc, stdout, stderr) of `slabtap load ARGS`; fails on a sanitizer report."""
    return mctest.run_slabtap(["load"] + list(args), timeout)


def summary(out):
    """The `label: value` lines of the summary as a dict."""
    d = {}
    for line in out.splitlines():
        m = re.match(r"^([a-z/ ]+):\s+(.*)$", line)
        if m:
            d[m.group(1)] = m.group(2)
    return d


def counts(text):
    """'STORED 3, hit 2' -> {'STORED': 3, 'hit': 2}; 'none' -> {}."""
    if text == "none":
        return {}
    return {k: int(v) for k, v in (part.rsplit(" ", 1) for part in text.split(", "))}


mc_stats = mctest.mc_stats


def items_by_class(port):
    """{class: (number, mem_requested)} of the classes `stats items` lists."""
    return {c: (f.get("number", 0), f.get("mem_requested", 0))
            for c, f in mctest.mc_classes(port).items()
            if "number" in f}


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for c in b:
        h ^= c
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def mc_number(v):
    """What memcached's safe_strtoull makes of a value: strtoull skips
    leading blanks, needs a digit, must stop at a blank or the end, and the
    number must fit 64 bits; None when memcached would refuse to count."""
    blanks = " \t\n\v\f\r"
    s = v.lstrip(blanks)
    n = len(s) - len(s.lstrip("0123456789"))
    if n == 0 or (s[n:] and s[n] not in blanks):
        return None
    return int(s[:n]) if int(s[:n]) < 1 << 64 else None


class Sim:
    """memcached's text-protocol semantics over key identities, as the
    answers the load generator counts. The generator's values are letters,
    except those of counter keys (load/replay.h): the number 1 zero-padded
    for a set, zeros prepended, blanks appended; incr/decr by 1 does
    memcached's arithmetic on them (rewritten in place, padded with blanks,
    unless the number outgrows the value)."""

    def __init__(self, counters=()):
        self.live = {}  # identity -> (key_len, flags, value_len)
        self.vals = {}  # identity -> the value of a live counter key
        self.counters = set(counters)
        self.answers = {}
        self.hits = {"incr": 0, "decr": 0}
        self.misses = {"incr": 0, "decr": 0}

    def _ans(self, a):
        self.answers[a] = self.answers.get(a, 0) + 1

    def _store(self, ident, key_len, flags, value_len):
        self.live[ident] = (key_len, flags, value_len)
        if ident in self.counters:
            self.vals[ident] = "0" * (value_len - 1) + "1" if value_len else ""

    def op(self, cmd, ident, key_len, value_len=0, flags=0):
        have = ident in self.live
        if cmd in ("get", "gets"):
            self._ans("hit" if have else "miss")
        elif cmd == "set":
            self._store(ident, key_len, flags, value_len)
            self._ans("STORED")
        elif cmd == "add" or cmd == "replace":
            if have == (cmd == "replace"):
                self._store(ident, key_len, flags, value_len)
                self._ans("STORED")
            else:
                self._ans("NOT_STORED")
        elif cmd in ("append", "prepend"):
            if have:
                kl, fl, vl = self.live[ident]
                self.live[ident] = (kl, fl, vl + value_len)
                if ident in self.counters:
                    old = self.vals[ident]
                    self.vals[ident] = old + " " * value_len if cmd == "append" \
                        else "0" * value_len + old
                self._ans("STORED")
            else:
                self._ans("NOT_STORED")
        elif cmd == "delete":
            self._ans("DELETED" if have else "NOT_FOUND")
            self.live.pop(ident, None)
            self.vals.pop(ident, None)
        elif cmd == "touch":
            self._ans("TOUCHED" if have else "NOT_FOUND")
        elif cmd in ("incr", "decr"):
            # letters (a key that is no counter) are never counted
            n = mc_number(self.vals[ident]) if have and ident in self.counters else None
            if not have:
                self.misses[cmd] += 1
                self._ans("NOT_FOUND")
            elif n is None:
                self._ans("CLIENT_ERROR")
            else:
                old = self.vals[ident]
                n = (n + 1) % (1 << 64) if cmd == "incr" else max(n - 1, 0)
                new = str(n).ljust(len(old)) if len(str(n)) <= len(old) else str(n)
                kl, fl, _ = self.live[ident]
                self.live[ident] = (kl, fl, len(new))
                self.vals[ident] = new
                self.hits[cmd] += 1
                self._ans("NUMBER")
        else:
            raise AssertionError("unknown command " + cmd)

    def mem_requested(self):
        return sum(mctest.ntotal(kl, vl, fl) for kl, fl, vl in self.live.values())


class LoadBase(mctest.ServerTestCase):
    workdir_prefix = "slabtap-load-"

    def load_ok(self, args, timeout=300):
        rc, out, err = run_load(args, timeout)
        self.assertEqual(rc, 0, "slabtap load %s: rc %d\nstdout:\n%s\nstderr:\n%s"
                         % (" ".join(args), rc, out, err[-3000:]))
        return summary(out), err


WORKLOAD = """\
# integration workload: every item count below follows from these lines
connections 3
pipeline 16
seed 9
phase fill
set 3000 key=it:{i} size=over(12)
set 500 key=sm:{i} size=fill(3) flags=5
phase rewrite
repeat 3 {
  set 200 key=ws:{i%100} size=uniform(100,400) noreply
}
get 50 key=it:{i}
gets 5 key=nope:{i}
delete 10 key=it:{i}
"""


class WorkloadRun(LoadBase):
    def assert_workload_answers(self, s):
        """The summary s of WORKLOAD's run: every op answered as planned."""
        self.assertEqual(int(s["ops"]), 3000 + 500 + 600 + 50 + 5 + 10)
        self.assertEqual(counts(s["answers"]),
                         {"STORED": 3500, "hit": 50, "miss": 5, "DELETED": 10})
        self.assertEqual(s["writes answered"], "3500")
        self.assertTrue(s["noreply"].startswith("600 confirmed"), s["noreply"])
        self.assertEqual(s["errors"], "0")

    def test_items_match_the_plan(self):
        mc = self.mc()
        wl = self.write("it.wl", WORKLOAD)
        s, err = self.load_ok(["--target", "127.0.0.1:%d" % mc.port, "--workload", wl])
        self.assert_workload_answers(s)
        self.assertEqual(s["phases"], "2")
        self.assertIn("phase fill", err)
        self.assertIn("phase rewrite", err)
        st = mc_stats(mc.port)
        self.assertEqual(int(st["curr_items"]), 2990 + 500 + 100)
        self.assertEqual(int(st["total_items"]), 3000 + 500 + 600)
        items = items_by_class(mc.port)
        # over(12): 945 bytes, just past class 11's 944; fill(3): exactly 152
        self.assertEqual(items[12], (2990, 2990 * 945))
        self.assertEqual(items[3], (500, 500 * 152))
        ws = sum(n for c, (n, _) in items.items() if c not in (3, 12))
        self.assertEqual(ws, 100)

    def test_unix_socket_target(self):
        """--target unix:PATH (memcached -s PATH): the same plan, the same
        answers and items as over TCP, and the side connection's `stats`
        deltas over the socket too."""
        sock = self.path("mc.sock")
        mc = self.mc(unix=sock)
        wl = self.write("it.wl", WORKLOAD)
        s, err = self.load_ok(["--target", "unix:" + sock, "--workload", wl])
        self.assertTrue(s["target"].startswith("unix:%s (memcached " % sock), s["target"])
        self.assert_workload_answers(s)
        self.assertRegex(s["server"], r"^get_hits 50, get_misses 5, hit ratio [\d.]+ %, "
                         r"cmd_set 4100, evictions 0$")
        with mc.connect() as c:  # memcached itself holds what the plan left
            c.sendall(b"stats\r\n")
            st = dict(l.split(" ", 2)[1:] for l in
                      mctest.recv_until(c, b"END\r\n").decode().splitlines()
                      if l.startswith("STAT "))
        self.assertEqual(int(st["curr_items"]), 2990 + 500 + 100)
        self.assertEqual(int(st["total_items"]), 3000 + 500 + 600)
        # nothing listening on the path: refused like a closed port
        rc, out, err = run_load(["--target", "unix:" + self.path("none.sock"), "--workload", wl])
        self.assertEqual(rc, 1, err)
        self.assertIn("cannot connect", err)

    def test_ladder_comes_from_the_server(self):
        # -f 1.08 -n 32: over(12) must land one byte past that ladder's class 11
        mc = self.mc(extra=["-f", "1.08", "-n", "32"])
        wl = self.write("f108.wl", "set 100 key=k{i} size=over(12)\nset 100 key=j{i} size=fill(20)\n")
        ladder = subprocess.run([SLABTAP, "model", "ladder", "-f", "1.08", "-n", "32"],
                                capture_output=True, timeout=60).stdout.decode()
        chunks = [int(m) for m in re.findall(r"chunk size\s+(\d+)", ladder)]
        self.load_ok(["--target", "127.0.0.1:%d" % mc.port, "--workload", wl, "--quiet"])
        items = items_by_class(mc.port)
        self.assertEqual(items[12], (100, 100 * (chunks[10] + 1)))
        self.assertEqual(items[20], (100, 100 * chunks[19]))


class RateAndLatency(LoadBase):
    def test_open_loop_rate(self):
        """--rate paces ops to the schedule (not to the answers) and reports
        p50/p99/p99.9/max per command; --no-probe sends nothing but the plan."""
        mc = self.mc()
        wl = self.write("rate.wl", "connections 2\npipeline 8\nset 1500 key=r{i} size=100\n"
                                   "get 500 key=r{i}\n")
        t0 = time.monotonic()
        s, _ = self.load_ok(["--target", "127.0.0.1:%d" % mc.port, "--workload", wl,
                             "--rate", "1000", "--no-probe", "--quiet"])
        took = time.monotonic() - t0
        # 2000 ops at 1000/s: the last is due 1.999 s after the first
        self.assertGreaterEqual(took, 1.95, "ran faster than the rate")
        self.assertLess(took, 20)
        self.assertEqual(counts(s["answers"]), {"STORED": 1500, "hit": 500})
        for cmd, n in (("set", 1500), ("get", 500)):
            line = s["latency " + cmd]
            m = re.match(r"p50 ([\d.]+) us  p99 ([\d.]+) us  p99.9 ([\d.]+) us  max ([\d.]+) us"
                         r"  \((\d+) answers\)$", line)
            self.assertIsNotNone(m, line)
            p50, p99, p999, mx = (float(m.group(i)) for i in range(1, 5))
            self.assertTrue(0 < p50 <= p99 <= p999 <= mx, line)
            self.assertEqual(int(m.group(5)), n)
        self.assertRegex(s["rate"], r"^1000 ops/s asked, \d+ ops sent over 1 ms late$")
        # no probe: memcached saw no `stats` command from the load
        self.assertEqual(int(mc_stats(mc.port)["cmd_get"]), 500)

    def test_rate_is_validated(self):
        rc, out, err = run_load(["--target", "127.0.0.1:1", "--workload", "x.wl",
                                 "--rate", "0"], 30)
        self.assertEqual(rc, 2)
        self.assertIn("slabtap load: --rate", err)


class Fingerprints(LoadBase):
    def fp(self, args):
        s, _ = self.load_ok(args)
        self.assertRegex(s["fingerprint"], r"^[0-9a-f]{64}$")
        return s["fingerprint"]

    def test_same_plan_same_fingerprint(self):
        mc = self.mc()
        text = "set 2000 key=f:{rand:500} size=uniform(1,3000)\nget 100 key=f:{i}\n"
        wl = self.write("fp.wl", text)
        target = ["--target", "127.0.0.1:%d" % mc.port, "--quiet"]
        a = self.fp(target + ["--workload", wl])
        b = self.fp(target + ["--workload", wl, "--connections", "1", "--pipeline", "3"])
        dry = self.fp(["--dry-run", "--workload", wl])
        self.assertEqual(a, b)
        self.assertEqual(a, dry)
        self.assertNotEqual(a, self.fp(["--dry-run", "--workload", wl, "--seed", "1"]))
        changed = self.write("fp2.wl", text.replace("3000", "3001"))
        self.assertNotEqual(a, self.fp(target + ["--workload", changed]))

    def test_dry_run_ladder_flags(self):
        wl = self.write("d.wl", "set 10 key=d{i} size=fill(12)\n")
        default = self.fp(["--dry-run", "--workload", wl])
        self.assertEqual(default, self.fp(["--dry-run", "--workload", wl, "-f", "1.25"]))
        self.assertNotEqual(default, self.fp(["--dry-run", "--workload", wl, "-f", "1.08"]))
        self.assertNotEqual(default, self.fp(["--dry-run", "--workload", wl, "--no-cas"]))


class Errors(LoadBase):
    def test_bad_workload_names_file_and_line(self):
        wl = self.write("bad.wl", "# a comment\nseed 3\nset 10 key=x{i} size=fil(12)\n")
        # the parse must fail before any connection (to a port refusing them)
        with mctest.reserve_port() as closed:
            rc, out, err = run_load(["--target", "127.0.0.1:%d" % closed.port, "--workload", wl])
        self.assertEqual(rc, 1, err)
        self.assertIn("%s:3: unknown size 'fil(12)'" % wl, err)

    def test_usage(self):
        rc, out, err = run_load(["--bogus"])
        self.assertEqual(rc, 2)
        self.assertIn("see: slabtap load --help", err)
        rc, out, err = run_load(["--help"])
        self.assertEqual(rc, 0)
        self.assertIn("usage: slabtap load", out)
        rc, out, err = run_load(["--workload", "x.wl"])  # no --target
        self.assertEqual(rc, 2)
        rc, out, err = run_load(["--target", "127.0.0.1:1", "--workload", "a", "--twitter-trace", "b"])
        self.assertEqual(rc, 2)

    def test_closed_port(self):
        wl = self.write("ok.wl", "set 1 key=a size=1\n")
        with mctest.reserve_port() as closed:  # bound, never listening: refused
            rc, out, err = run_load(["--target", "127.0.0.1:%d" % closed.port, "--workload", wl])
        self.assertEqual(rc, 1)
        self.assertIn("cannot connect", err)

    def test_bad_trace_line(self):
        path = self.write("bad.csv", "1,k1,2,10,1,set,0\n2,k1,2,10,1,get,0\n3,k2,2,1,1,frob,0\n")
        rc, out, err = run_load(["--dry-run", "--twitter-trace", path])
        self.assertEqual(rc, 1)
        self.assertIn("%s:3: unknown operation 'frob'" % path, err)


def twitter_ops(path):
    with open(path) as f:
        for row in csv.reader(f):
            if not row:
                continue
            key, ksize, vsize, op = ",".join(row[1:-5]), int(row[-5]), int(row[-4]), row[-2]
            ksize = min(ksize, 250)  # longer keys are cut to memcached's 250
            yield ("set" if op == "cas" else op), (key, ksize), ksize, vsize


def counter_idents(ops):
    """The identities some op increments or decrements: counter keys."""
    return {ident for cmd, ident, _, _ in ops if cmd in ("incr", "decr")}


def cachelib_ops(path):
    names = {"get": "get", "get_lease": "get", "set": "set", "set_lease": "set", "delete": "delete"}
    with open(path) as f:
        for row in csv.DictReader(f):
            ksize = min(int(row["key_size"]), 250)
            for _ in range(int(row["op_count"])):
                yield names[row["op"].lower()], (row["key"], ksize), ksize, int(row["size"] or 0)


class TraceReplay(LoadBase):
    def replay(self, flag, path, ops):
        mc = self.mc()
        sim = Sim(counter_idents(ops))
        n = 0
        for cmd, ident, klen, vlen in ops:
            sim.op(cmd, ident, klen, vlen if cmd not in ("get", "gets", "delete", "incr", "decr") else 0)
            n += 1
        s, _ = self.load_ok(["--target", "127.0.0.1:%d" % mc.port, flag, path,
                             "--connections", "3", "--pipeline", "4"])
        self.assertEqual(int(s["ops"]), n)
        self.assertEqual(counts(s["answers"]), sim.answers)
        st = mc_stats(mc.port)
        self.assertEqual(int(st["curr_items"]), len(sim.live))
        self.assertEqual(sum(r for _, r in items_by_class(mc.port).values()), sim.mem_requested())
        dry, _ = self.load_ok(["--dry-run", flag, path])
        self.assertEqual(dry["fingerprint"], s["fingerprint"])

    def test_twitter(self):
        path = os.path.join(DATA, "twitter_sample.csv")
        self.replay("--twitter-trace", path, list(twitter_ops(path)))

    def test_cachelib(self):
        path = os.path.join(DATA, "cachelib_sample.csv")
        self.replay("--cachelib-trace", path, list(cachelib_ops(path)))


SETS_DDL = """CREATE TABLE sets (run_id INTEGER NOT NULL, seq INTEGER NOT NULL,
  conn_id INTEGER NOT NULL, t_ns INTEGER NOT NULL, cmd TEXT NOT NULL, key TEXT,
  key_hash INTEGER NOT NULL, key_len INTEGER NOT NULL, value_len INTEGER, flags INTEGER,
  exptime INTEGER, answer TEXT NOT NULL, latency_ns INTEGER, class_id INTEGER,
  PRIMARY KEY (run_id, seq))"""


class RecordedReplay(LoadBase):
    def test_synthetic_sets_table(self):
        db = os.path.join(self.w.path, "rec.db")
        con = sqlite3.connect(db)
        con.execute(SETS_DDL)
        sim = Sim(("user:%05d:profile" % (i % 120)).encode() for i in range(8, 300, 10))
        rows = []
        for i in range(300):
            key = "user:%05d:profile" % (i % 120)
            kb = key.encode()
            mode = i % 3  # 0 full key, 1 prefix only, 2 hash only
        # keys 8, 18, ...: only ever incremented (NOT_FOUND), counter keys
            text = key if mode == 0 else ("user" if mode == 1 else None)
            cmd = ["set", "set", "cas", "ms", "add", "delete", "md", "touch", "incr", "append"][i % 10]
            vlen = None if cmd in ("delete", "md", "touch", "incr") else 50 + (i * 37) % 2000
            flags = None if vlen is None else i % 3
            answer = "noreply" if i % 11 == 0 and cmd == "set" else "STORED"
            rows.append((2, i, 1, 0, cmd, text, signed64(fnv1a64(kb)), len(kb), vlen, flags, 0, answer))
            sent = {"cas": "set", "ms": "set", "md": "delete"}.get(cmd, cmd)
            before = dict(sim.answers)
            sim.op(sent, kb, len(kb), vlen or 0, flags or 0)
            if answer == "noreply":
                sim.answers = before
        rows.append((1, 0, 1, 0, "set", "other", 1, 5, 10, 0, 0, "STORED"))
        rows.append((2, 999, 1, 0, "get", "x", 2, 1, None, None, None, "hit"))  # not replayable
        con.executemany("INSERT INTO sets (run_id, seq, conn_id, t_ns, cmd, key, key_hash, key_len,"
                        " value_len, flags, exptime, answer) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        con.commit()
        con.close()
        mc = self.mc()
        s, _ = self.load_ok(["--target", "127.0.0.1:%d" % mc.port, "--replay-db", db])
        self.assertIn("run 2 (1 rows not replayable)", s["source"])
        self.assertEqual(int(s["ops"]), 300)
        self.assertEqual(counts(s["answers"]), sim.answers)
        self.assertEqual(int(mc_stats(mc.port)["curr_items"]), len(sim.live))
        self.assertEqual(sum(r for _, r in items_by_class(mc.port).values()), sim.mem_requested())
        s1, _ = self.load_ok(["--dry-run", "--replay-db", db, "--replay-run", "1"])
        self.assertEqual(s1["ops"], "1")

    def test_run_recorded_by_the_proxy(self):
        a = self.mc(name="mc-a")
        px = self.proxy(a.port, keys="hash")
        wl = self.write("rec.wl", "seed 4\nset 2000 key=r:{i} size=uniform(10,5000) flags=3\n"
                        "set 500 key=r:{rand:3000} size=choice(60,900,20000) noreply\n"
                        "delete 100 key=r:{i}\nappend 50 key=r:{i%300} size=7\n")
        self.load_ok(["--target", "127.0.0.1:%d" % px.port, "--workload", wl, "--quiet"])
        self.stop_clean(px)
        want = items_by_class(a.port)
        b = self.mc(name="mc-b")
        s, _ = self.load_ok(["--target", "127.0.0.1:%d" % b.port, "--replay-db", px.db])
        self.assertEqual(int(s["ops"]), 2650)
        self.assertEqual(items_by_class(b.port), want)
        self.assertEqual(mc_stats(b.port)["curr_items"], mc_stats(a.port)["curr_items"])

    def test_replay_run_by_name(self):
        """--replay-run takes a run's name as `model --run` does (the newest
        run of that name), or its id; a name no run has is refused with
        the file named, exit 1."""
        a = self.mc(name="mc-named")
        db = self.path("named.db")
        for name, n in (("small", 30), ("big", 120)):
            px = self.proxy(a.port, db=db, name="proxy-" + name, extra=["--run", name])
            wl = self.write(name + ".wl", "seed 1\nset %d key=%s:{i} size=100\n" % (n, name))
            self.load_ok(["--target", "127.0.0.1:%d" % px.port, "--workload", wl, "--quiet"])
            self.stop_clean(px)
        for run, ops in (("small", 30), ("big", 120), ("1", 30), ("2", 120), (None, 120)):
            with self.subTest(run=run):
                s, _ = self.load_ok(["--dry-run", "--replay-db", db]
                                    + (["--replay-run", run] if run else []))
                self.assertEqual(int(s["ops"]), ops, s)
        rc, out, err = run_load(["--dry-run", "--replay-db", db, "--replay-run", "nosuch"])
        self.assertEqual(rc, 1, err)
        self.assertIn("%s: no run named 'nosuch'" % db, err)


COUNTERS = os.path.join(DATA, "twitter_counters.csv")


class CounterReplay(LoadBase):
    """Issue 11, item 6: keys a trace sets and later increments replay as
    counters (numeric values of the recorded lengths), so incr/decr hit."""

    def expected(self, ops):
        sim = Sim(counter_idents(ops))
        for cmd, ident, klen, vlen in ops:
            sim.op(cmd, ident, klen, 0 if cmd in ("get", "delete", "incr", "decr") else vlen)
        return sim

    def values(self, port, keys):
        """{key: value} as memcached holds them (get, read directly)."""
        out = {}
        with mctest.connect(port) as s:
            for k in keys:
                s.sendall(b"get %s\r\n" % k.encode())
                head = mctest.recv_line(s)
                if head == b"END\r\n":
                    continue
                n = int(head.split()[3])
                out[k] = mctest.recv_exact(s, n + 2)[:n].decode()
                self.assertEqual(mctest.recv_line(s), b"END\r\n")
        return out

    def test_through_the_proxy_and_back(self):
        ops = list(twitter_ops(COUNTERS))
        sim = self.expected(ops)
        # what the file holds, worked out by hand: 22 incr/decr counted, one
        # refused (an empty value: memcached would not have counted it
        # either), two on keys not set (yet, or any more)
        self.assertEqual((sim.answers["NUMBER"], sim.answers["CLIENT_ERROR"],
                          sim.answers["NOT_FOUND"]), (22, 1, 2))
        a = self.mc(name="mc-a")
        px = self.proxy(a.port)
        s, err = self.load_ok(["--target", "127.0.0.1:%d" % px.port, "--twitter-trace", COUNTERS,
                               "--connections", "3", "--pipeline", "4"])
        self.assertEqual(int(s["ops"]), len(ops))
        self.assertEqual(counts(s["answers"]), sim.answers)
        st = mc_stats(a.port)
        self.assertEqual((int(st["incr_hits"]), int(st["decr_hits"]), int(st["incr_misses"])),
                         (sim.hits["incr"], sim.hits["decr"], sim.misses["incr"]))
        self.assertEqual((sim.hits["incr"], sim.hits["decr"]), (18, 4))
        # values read back: memcached's arithmetic, lengths as recorded
        keys = ["c:%d" % i for i in range(1, 8)]
        want = {k: sim.vals[(k, 3)] for k in keys if (k, 3) in sim.vals}
        self.assertEqual(self.values(a.port, keys), want)
        self.assertEqual(want["c:1"], "4  ")           # "1", 2 incr, 2 blanks appended, incr
        self.assertEqual(want["c:2"], "0       ")      # 8 digits: 1, incr, 3 decr (floor 0)
        self.assertEqual(want["c:6"], "2" + " " * 11)  # 5 digits, 3 zeros before, 4 blanks after
        self.assertEqual(want["c:7"], "9 ")            # 1 digit, 9 incr (outgrows it), decr
        self.assertEqual(sum(r for _, r in items_by_class(a.port).values()),
                         sim.mem_requested())
        self.assertIn("%s: 25 incr/decr on 9 keys" % COUNTERS, err)
        self.assertIn("%s:24: key of 256 bytes cut to memcached's 250" % COUNTERS, err)
        self.assertIn("%s: 2 rows had a key over memcached's 250 bytes, cut to 250 (the first at "
                      "line 24)" % COUNTERS, err)
        self.stop_clean(px)
        answers = [r["answer"] for r in mctest.db_rows(
            px.db, "SELECT answer FROM sets WHERE cmd IN ('incr', 'decr') ORDER BY seq")]
        self.assertEqual(sum(a.isdigit() for a in answers), 22)
        # the recorded run, into a fresh memcached: the same counters
        b = self.mc(name="mc-b")
        s2, _ = self.load_ok(["--target", "127.0.0.1:%d" % b.port, "--replay-db", px.db])
        got = counts(s2["answers"])
        self.assertEqual((got["NUMBER"], got["CLIENT_ERROR"], got["NOT_FOUND"]), (22, 1, 2))
        self.assertEqual(self.values(b.port, keys), want)
        self.assertEqual(items_by_class(b.port), items_by_class(a.port))

    def test_from_a_pipe(self):
        """A pipe cannot be read twice: every value is digits, which counts
        the same (only the counter keys are ever counted)."""
        ops = list(twitter_ops(COUNTERS))
        sim = self.expected(ops)
        mc = self.mc()
        with open(COUNTERS, "rb") as f:
            data = f.read()
        p = subprocess.run([SLABTAP, "load", "--target", "127.0.0.1:%d" % mc.port,
                            "--twitter-trace", "/dev/stdin"], input=data, capture_output=True,
                           timeout=120, env=mctest.slabtap_env())
        out, err = p.stdout.decode(), p.stderr.decode()
        self.assertFalse(mctest.sanitizer_errors(err), err[-4000:])
        self.assertEqual(p.returncode, 0, err[-3000:])
        self.assertIn("/dev/stdin: not a regular file", err)
        self.assertEqual(counts(summary(out)["answers"]), sim.answers)
        self.assertEqual(sum(r for _, r in items_by_class(mc.port).values()),
                         sim.mem_requested())

    def test_recorded_refusals_stay_refused(self):
        """A recorded run keeps letters for a key whose every incr memcached
        refused as non-numeric, so the replay is refused the same way."""
        db = self.path("refused.db")
        con = sqlite3.connect(db)
        con.execute(SETS_DDL)
        refused = "CLIENT_ERROR cannot increment or decrement non-numeric value"
        rows = [("set", "a", 5, "STORED"), ("incr", "a", None, refused),
                ("set", "b", 3, "STORED"), ("incr", "b", None, "2"), ("decr", "b", None, "1"),
                ("set", "c", 2, "noreply"), ("incr", "c", None, "noreply")]
        con.executemany("INSERT INTO sets (run_id, seq, conn_id, t_ns, cmd, key, key_hash, key_len,"
                        " value_len, flags, exptime, answer) VALUES (1,?,1,0,?,?,?,1,?,0,0,?)",
                        [(i, c, k, signed64(fnv1a64(k.encode())), v, a)
                         for i, (c, k, v, a) in enumerate(rows)])
        con.commit()
        con.close()
        mc = self.mc()
        s, _ = self.load_ok(["--target", "127.0.0.1:%d" % mc.port, "--replay-db", db])
        self.assertEqual(counts(s["answers"]), {"STORED": 2, "CLIENT_ERROR": 1, "NUMBER": 2})
        v = self.values(mc.port, ["a", "b", "c"])
        self.assertEqual((len(v["a"]), mc_number(v["a"])), (5, None))  # letters
        self.assertEqual((v["b"], v["c"]), ("1  ", "2 "))


if __name__ == "__main__":
    unittest.main(verbosity=2)
