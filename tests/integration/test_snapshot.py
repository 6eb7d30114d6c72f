"""`slabtap snapshot` against a real memcached (issue 22): its resident items
from `lru_crawler metadump all`, no proxy in front.

- 200k items written directly to memcached -> one snapshot equal item for
  item (key with --keys full, class, size == mctest.ntotal == what
  memcached's own metadump prints, TTL left, fetched), the count per class
  equal to `stats items`, and slabtap's peak RSS while it dumps them (read
  from /proc: VmHWM) under a bound that does not grow with the items;
- items over slab_chunk_max (-I 2m, 1.5 MB values): sizes and classes as
  memcached prints them;
- memcached -X and -o no_lru_crawler: refused, exit 1, memcached's words;
- --every 1s --count 3: three snapshots in one run, each complete;
- SIGTERM mid-dump (a relay holds memcached's output after K lines): the
  partial snapshot is recorded incomplete with exactly the K items read;
  a connection cut after K lines: incomplete, exit 1, the K items stored.
"""
import json
import os
import select
import signal
import socket
import threading
import time
import unittest

import mctest
from mctest import (HOST, Process, ServerTestCase, connect, db_rows, db_scalar, mc_classes,
                    mc_stats, ntotal, recv_exact, recv_until, run_slabtap, sanitizer_errors,
                    slabtap_env, wait_for)

SLABTAP = mctest.SLABTAP
N_ITEMS = 200000
# slabtap's peak RSS while dumping N_ITEMS with --queue RSS_QUEUE may exceed
# its peak on a 1,000-item dump by at most this: memory is bounded by the
# queue (RSS_QUEUE rows of ~600 bytes: 2.4 MiB), the SQLite page cache and
# one read buffer, never by the items. Under ASan its quarantine (freed
# blocks held back) is capped for these runs, else it alone grows to 256 MiB.
RSS_QUEUE = 4096
RSS_GROWTH_BOUND_KB = 24 * 1024
# metadump is not an atomic snapshot: memcached's crawler skips an item
# whose lock it cannot take at once (trylock) and walks each class's LRUs
# while the LRU maintainer moves items between them (HOT, WARM, COLD), and
# while the hash table grows (past 1.5 items per bucket its maintenance
# thread migrates the buckets, holding their locks) -- so an item can be
# missed or listed twice (seen: 199,982 of 200,000 right after writing
# them). Tests that compare item for item run memcached with no
# maintainer (one LRU per class: nothing moves) and a table big enough from
# the start (hashpower 20: no expansion).
STILL = ["-o", "no_lru_maintainer,hashpower=20"]


def metadump(port, timeout=120):
    """memcached's own listing: [(key bytes decoded, fields dict)] up to END."""
    with connect(port, timeout=timeout) as s:
        s.sendall(b"lru_crawler metadump all\r\n")
        data = recv_until(s, b"END\r\n", timeout=timeout, limit=1 << 30)
    out = []
    for line in data.split(b"\n"):
        line = line.rstrip(b"\r")
        if not line.startswith(b"key="):
            continue
        f = dict(p.split(b"=", 1) for p in line.split(b" "))
        raw = f[b"key"]
        dec, i = bytearray(), 0
        while i < len(raw):
            if raw[i:i + 1] == b"%":
                dec.append(int(raw[i + 1:i + 3], 16))
                i += 3
            else:
                dec.append(raw[i])
                i += 1
        key = bytes(dec)
        out.append((key, {k.decode(): v.decode() for k, v in f.items()}))
    return out


def write_items(port, items, batch=2000):
    """items: (key, flags, exptime, value) pipelined as sets, all STORED."""
    with connect(port, timeout=60) as s:
        for i in range(0, len(items), batch):
            chunk = items[i:i + batch]
            s.sendall(b"".join(b"set %s %d %d %d\r\n%s\r\n" % (k, f, e, len(v), v)
                               for k, f, e, v in chunk))
            want = b"STORED\r\n" * len(chunk)
            got = recv_exact(s, len(want), timeout=60)
            assert got == want, got[:200]


def touch_reads(port, keys, batch=500):
    """A get of each key: memcached marks them fetched."""
    with connect(port, timeout=60) as s:
        for i in range(0, len(keys), batch):
            s.sendall(b"get " + b" ".join(keys[i:i + batch]) + b"\r\n")
            recv_until(s, b"END\r\n", timeout=60, limit=1 << 30)


def vm_hwm_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def run_measured(tc, args, timeout=300):
    """(rc, stderr, peak RSS kB): slabtap run as a Process, its VmHWM read
    from /proc until it exits (the last reading before exit is the peak
    so far; the exit path allocates nothing big)."""
    env = slabtap_env()
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=4"
    p = tc.started(Process([SLABTAP] + args, tc.path("slabtap-%d.log" % time.monotonic_ns()),
                           env=env))
    peak = 0
    deadline = time.monotonic() + timeout
    while p.alive() and time.monotonic() < deadline:
        v = vm_hwm_kb(p.pid)
        if v:
            peak = max(peak, v)
        time.sleep(0.01)
    rc = p.wait(timeout=max(1, deadline - time.monotonic()))
    err = p.stderr_text()
    bad = sanitizer_errors(err)
    tc.assertEqual(bad, [], err[-4000:])
    return rc, err, peak


def snap_items(db, run_id, snap):
    return db_rows(db, "SELECT key_ref, key_hash, key_len, class_id, size, ttl_left, idle_s, "
                       "fetched, flags FROM snapshot_items WHERE run_id = ? AND snap = ?",
                   (run_id, snap))


def snapshots(db, run_id):
    return db_rows(db, "SELECT snap, t_ns, ended_ns, items, bytes, complete FROM snapshots "
                       "WHERE run_id = ? ORDER BY snap", (run_id,))


def only_run(tc, db):
    runs = db_rows(db, "SELECT run_id, kind FROM runs")
    tc.assertEqual(len(runs), 1, runs)
    tc.assertEqual(runs[0]["kind"], "snapshot")
    return runs[0]["run_id"]


class Relay:
    """A TCP relay in front of memcached that forwards everything, except
    that on the connection that asks for a metadump it forwards memcached's
    output only up to the end of its first `lines` lines; then it holds the
    rest (mode 'hold') or closes that connection (mode 'cut')."""

    def __init__(self, upstream_port, lines, mode):
        self.up, self.lines, self.mode = upstream_port, lines, mode
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind((HOST, 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        self.stop = False
        self.held = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        pairs = {}  # socket -> (peer socket, state dict)
        self.ls.settimeout(0.05)
        while not self.stop:
            try:
                c, _ = self.ls.accept()
                u = socket.create_connection((HOST, self.up), timeout=10)
                st = {"dump": False, "sent_lines": 0, "done": False, "c": c}
                pairs[c] = (u, st, "c2u")
                pairs[u] = (c, st, "u2c")
            except socket.timeout:
                pass
            if not pairs:
                continue
            # a held side is not read at all (and not polled: no busy loop)
            live = [x for x, (_, st, way) in pairs.items() if not (way == "u2c" and st["done"])]
            r, _, _ = select.select(live, [], [], 0.05)
            for s in r:
                if s not in pairs:
                    continue
                peer, st, way = pairs[s]
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    for x in (s, peer):
                        pairs.pop(x, None)
                        x.close()
                    continue
                if way == "c2u" and b"metadump" in data:
                    st["dump"] = True
                if way == "u2c" and st["dump"]:
                    left = self.lines - st["sent_lines"]
                    cut = 0
                    for _ in range(left):
                        nl = data.find(b"\n", cut)
                        if nl < 0:
                            cut = len(data)
                            break
                        cut = nl + 1
                        st["sent_lines"] += 1
                    if st["sent_lines"] >= self.lines:
                        peer.sendall(data[:cut])
                        st["done"] = True
                        self.held.set()
                        if self.mode == "cut":
                            for x in (s, peer):
                                pairs.pop(x, None)
                                x.close()
                        continue
                    data = data[:cut] if cut else data
                peer.sendall(data)
        for s in list(pairs):
            s.close()
        self.ls.close()

    def close(self):
        self.stop = True
        self.t.join(timeout=10)


class SnapshotTest(ServerTestCase):

    def test_200k_items_equal_item_for_item(self):
        mc = self.mc(extra=["-m", "512"] + STILL)
        items = []
        for i in range(N_ITEMS):
            # keys memcached prints URI-encoded (: / % space-free), sizes over
            # many classes, some with client flags, some with a TTL
            key = b"p%d:k/%d%%x%07d" % (i % 13, i % 3, i)
            flags = 7 if i % 7 == 0 else 0
            exptime = 86400 if i % 5 == 0 else 0
            items.append((key, flags, exptime, b"v" * ((i * 37) % 1500)))
        write_items(mc.port, items)
        touch_reads(mc.port, [k for k, _, _, _ in items[::3]])
        classes = mc_classes(mc.port)
        want_count = {c: f["number"] for c, f in classes.items() if f.get("number")}
        chunk = sorted((f["chunk_size"], c) for c, f in classes.items() if "chunk_size" in f)
        dump = {k: f for k, f in metadump(mc.port)}
        self.assertEqual(len(dump), N_ITEMS)

        # a small dump first: the RSS a dump costs whatever its size
        small = self.mc(extra=STILL)
        write_items(small.port, items[:1000])
        rc, err, rss_small = run_measured(self, ["snapshot", "--http", "off", "--memcached", "%s:%d" % (HOST, small.port),
                                                 "--db", self.path("small.db"), "--keys", "full",
                                                 "--queue", str(RSS_QUEUE)])
        self.assertEqual(rc, 0, err)

        db = self.path("snap.db")
        t0 = time.monotonic()
        rc, err, rss = run_measured(self, ["snapshot", "--http", "off", "--memcached", "%s:%d" % (HOST, mc.port),
                                           "--db", db, "--keys", "full", "--queue", str(RSS_QUEUE)])
        took = time.monotonic() - t0
        self.assertEqual(rc, 0, err)
        print("\n%d items: slabtap snapshot took %.2f s (%.0f items/s); peak RSS %d kB, "
              "%d kB on a 1,000-item dump (bound: +%d kB; --queue %d)"
              % (N_ITEMS, took, N_ITEMS / took, rss, rss_small, RSS_GROWTH_BOUND_KB, RSS_QUEUE))
        for line in err.splitlines():
            if "snapshot 1:" in line:
                print(line)
        self.assertLessEqual(rss, rss_small + RSS_GROWTH_BOUND_KB)

        run_id = only_run(self, db)
        hdr = snapshots(db, run_id)
        self.assertEqual(len(hdr), 1, hdr)
        self.assertEqual(hdr[0]["snap"], 1)
        self.assertEqual(hdr[0]["complete"], 1)
        self.assertEqual(hdr[0]["items"], N_ITEMS)
        rows = snap_items(db, run_id, 1)
        self.assertEqual(len(rows), N_ITEMS)
        got = {r["key_ref"].encode(): r for r in rows}
        self.assertEqual(len(got), N_ITEMS, "a key twice")
        now = time.time()
        for i, (key, flags, exptime, value) in enumerate(items):
            r = got.get(key)
            self.assertIsNotNone(r, key)
            size = ntotal(len(key), len(value), flags)
            want_cls = next(c for cs, c in chunk if cs >= size)
            d = dump[key]
            self.assertEqual((r["size"], r["class_id"], r["key_len"]),
                             (size, want_cls, len(key)), key)
            self.assertEqual((r["size"], r["class_id"]), (int(d["size"]), int(d["cls"])), key)
            self.assertEqual(r["fetched"], 1 if i % 3 == 0 else 0, key)
            if exptime:
                # TTL left, whole seconds, read while dumping
                self.assertTrue(86400 - 120 <= r["ttl_left"] <= 86400, (key, r["ttl_left"]))
            else:
                self.assertEqual(r["ttl_left"], -1, key)
            self.assertTrue(0 <= r["idle_s"] <= 600, (key, r["idle_s"]))
        per_class = {r["class_id"]: r["n"] for r in db_rows(
            db, "SELECT class_id, count(*) AS n FROM snapshot_items WHERE run_id = ? "
                "GROUP BY class_id", (run_id,))}
        self.assertEqual(per_class, want_count)
        self.assertEqual(hdr[0]["bytes"], sum(ntotal(len(k), len(v), f) for k, f, _, v in items))
        # a stats sample beside it (the waste views need each class's chunk size)
        self.assertGreaterEqual(db_scalar(db, "SELECT count(*) FROM samples WHERE run_id = ?",
                                          (run_id,)), 1)

    def test_items_over_slab_chunk_max(self):
        mc = self.mc(extra=["-I", "2m", "-m", "128"] + STILL)
        items = [(b"big:%d" % i, 0, 0, b"x" * (1536 * 1024)) for i in range(6)]
        items += [(b"mid:%d" % i, 3, 0, b"y" * (600 * 1024 + i)) for i in range(6)]
        items += [(b"small:%d" % i, 0, 0, b"z" * 100) for i in range(6)]
        write_items(mc.port, items, batch=4)
        dump = {k: f for k, f in metadump(mc.port)}
        db = self.path("big.db")
        rc, out, err = run_slabtap(["snapshot", "--http", "off", "--memcached", "%s:%d" % (HOST, mc.port),
                                    "--db", db, "--keys", "full"])
        self.assertEqual(rc, 0, err)
        run_id = only_run(self, db)
        rows = {r["key_ref"].encode(): r for r in snap_items(db, run_id, 1)}
        self.assertEqual(set(rows), set(k for k, _, _, _ in items))
        for k, flags, _, v in items:
            self.assertEqual(rows[k]["size"], int(dump[k]["size"]), k)
            self.assertEqual(rows[k]["class_id"], int(dump[k]["cls"]), k)
            self.assertEqual(rows[k]["size"], ntotal(len(k), len(v), flags), k)
        print("\nover slab_chunk_max: %s" % sorted({(int(f["cls"]), int(f["size"]))
                                                    for f in dump.values()}))

    def test_refused_with_memcached_words(self):
        for flags, words in ((["-X"], "ERROR metadump not allowed"),
                             (["-o", "no_lru_crawler"], "CLIENT_ERROR lru crawler disabled")):
            mc = self.mc(extra=flags)
            db = self.path("refused-%d.db" % mc.port)
            rc, out, err = run_slabtap(["snapshot", "--http", "off", "--memcached", "%s:%d" % (HOST, mc.port),
                                        "--db", db])
            self.assertEqual(rc, 1, err)
            lines = [l for l in err.splitlines() if words in l]
            self.assertEqual(len(lines), 1, err)
            print("\nmemcached %s: %s" % (" ".join(flags), lines[0]))
            run_id = only_run(self, db)
            self.assertEqual(snapshots(db, run_id), [])

    def test_every_count(self):
        mc = self.mc(extra=STILL)
        write_items(mc.port, [(b"e:%d" % i, 0, 0, b"v" * (i % 300)) for i in range(3000)])
        db = self.path("every.db")
        rc, out, err = run_slabtap(["snapshot", "--http", "off", "--memcached", "%s:%d" % (HOST, mc.port),
                                    "--db", db, "--every", "1s", "--count", "3"])
        self.assertEqual(rc, 0, err)
        run_id = only_run(self, db)
        hdr = snapshots(db, run_id)
        self.assertEqual([h["snap"] for h in hdr], [1, 2, 3], hdr)
        for h in hdr:
            self.assertEqual((h["complete"], h["items"]), (1, 3000), h)
            self.assertEqual(db_scalar(db, "SELECT count(*) FROM snapshot_items WHERE run_id = ? "
                                           "AND snap = ?", (run_id, h["snap"])), 3000)
        # --every counts from one start to the next: never sooner (a lower
        # bound only; how much later depends on the machine, printed)
        gaps = [(b["t_ns"] - a["t_ns"]) / 1e6 for a, b in zip(hdr, hdr[1:])]
        print("\n--every 1s: starts %s ms apart" % ["%.1f" % g for g in gaps])
        for g in gaps:
            self.assertGreaterEqual(g, 999.0, hdr)

    def test_busy_tried_again(self):
        """memcached's crawler busy with another metadump: BUSY, tried again
        until it is free, then the whole snapshot; with --busy-retries 0,
        exit 1 with memcached's words. The other dump is this test's own,
        read as fast as it comes, slowed by `lru_crawler sleep 1000000` (a
        second per 1,000 items, the crawler's lock free while it sleeps:
        a request then is answered BUSY at once). Not by leaving it unread:
        a crawler blocked on its client keeps that lock, and a second
        metadump then blocks a memcached worker thread until the first is
        read (crawler.c's lru_crawler_start takes the lock blocking)."""
        mc = self.mc(extra=STILL)
        items = [(b"busy:%06d" % i, 0, 0, b"") for i in range(20000)]
        write_items(mc.port, items)
        with connect(mc.port) as s:
            s.sendall(b"lru_crawler sleep 1000000\r\n")
            self.assertEqual(recv_until(s, b"\r\n"), b"OK\r\n")
        got = {"data": b"", "done": False}
        holder = connect(mc.port, timeout=120)
        self.addCleanup(holder.close)

        def drain():
            try:
                got["data"] = recv_until(holder, b"END\r\n", timeout=120, limit=1 << 30)
            finally:
                got["done"] = True
        holder.sendall(b"lru_crawler metadump all\r\n")
        th = threading.Thread(target=drain, daemon=True)
        th.start()
        self.addCleanup(th.join, 130)
        time.sleep(0.2)

        rc, out, err = run_slabtap(["snapshot", "--http", "off", "--memcached",
                                    "%s:%d" % (HOST, mc.port), "--db", self.path("busy0.db"),
                                    "--busy-retries", "0"])
        self.assertFalse(got["done"], "the other dump ended too soon: nothing was tested")
        self.assertEqual(rc, 1, err)
        lines = [l for l in err.splitlines() if "BUSY currently processing crawler request" in l]
        self.assertEqual(len(lines), 1, err)
        print("\n--busy-retries 0: %s" % lines[0])

        db = self.path("busy.db")
        p = self.started(Process([SLABTAP, "snapshot", "--http", "off", "--memcached",
                                  "%s:%d" % (HOST, mc.port), "--db", db, "--keys", "full",
                                  "--busy-retries", "1000"],
                                 self.path("busy.log"), env=slabtap_env()))
        wait_for(lambda: "crawler is busy" in p.stderr_text() or not p.alive(), 60, 0.05,
                 "slabtap told BUSY")
        self.assertTrue(p.alive(), p.stderr_text())
        self.assertFalse(got["done"], "the other dump ended too soon: nothing was tested")
        with connect(mc.port) as s:  # the other dump at full speed: the crawler frees up
            s.sendall(b"lru_crawler sleep 0\r\n")
            self.assertEqual(recv_until(s, b"\r\n"), b"OK\r\n")
        rc = p.wait(120)
        err = p.stderr_text()
        self.assertEqual(sanitizer_errors(err), [], err)
        self.assertEqual(rc, 0, err)
        run_id = only_run(self, db)
        hdr = snapshots(db, run_id)
        self.assertEqual([(h["complete"], h["items"]) for h in hdr], [(1, len(items))], hdr)
        print([l for l in err.splitlines() if "busy" in l or "snapshot 1:" in l])

    def _partial(self, mode):
        mc = self.mc(extra=STILL)
        items = [(b"s:%06d" % i, 0, 0, b"v" * (i % 700)) for i in range(20000)]
        write_items(mc.port, items)
        dump = metadump(mc.port)
        k_lines = 5000
        relay = Relay(mc.port, k_lines, mode)
        self.addCleanup(relay.close)
        db = self.path("partial-%s.db" % mode)
        p = self.started(Process([SLABTAP, "snapshot", "--http", "off", "--memcached", "%s:%d" % (HOST, relay.port),
                                  "--db", db, "--keys", "full"],
                                 self.path("partial-%s.log" % mode), env=slabtap_env()))
        self.assertTrue(relay.held.wait(60), "the relay never reached line %d" % k_lines)
        if mode == "hold":
            # the K items are in slabtap once their rows reach the store
            wait_for(lambda: os.path.exists(db) and db_scalar(
                db, "SELECT count(*) FROM snapshot_items") == k_lines, 60, 0.05,
                "the %d items read stored" % k_lines)
            p.signal(signal.SIGTERM)
        rc = p.wait(60)
        err = p.stderr_text()
        self.assertEqual(sanitizer_errors(err), [], err)
        self.assertEqual(rc, 0 if mode == "hold" else 1, err)
        run_id = only_run(self, db)
        hdr = snapshots(db, run_id)
        self.assertEqual(len(hdr), 1, hdr)
        self.assertEqual((hdr[0]["complete"], hdr[0]["items"]), (0, k_lines), hdr)
        rows = snap_items(db, run_id, 1)
        self.assertEqual(sorted(r["key_ref"].encode() for r in rows),
                         sorted(k for k, _ in dump[:k_lines]))
        print("\n%s after %d lines: %s" % (mode, k_lines,
                                           [l for l in err.splitlines() if "snapshot 1" in l]))

    def test_postgresql(self):
        """The same snapshot into PostgreSQL: every item, class and size as
        memcached prints them, per class equal to `stats items`."""
        import pgcluster
        pg = pgcluster.PgCluster()
        self.addCleanup(pg.stop)
        mc = self.mc(extra=STILL)
        items = [(b"pg:%d" % i, 1 if i % 4 == 0 else 0, 0, b"w" * (i % 900)) for i in range(20000)]
        write_items(mc.port, items)
        want = {c: f["number"] for c, f in mc_classes(mc.port).items() if f.get("number")}
        dump = {k: (int(f["cls"]), int(f["size"])) for k, f in metadump(mc.port)}
        rc, out, err = run_slabtap(["snapshot", "--http", "off", "--memcached", "%s:%d" % (HOST, mc.port),
                                    "--db", pg.uri(), "--keys", "full", "--count", "2"])
        self.assertEqual(rc, 0, err)
        runs = pg.psql("SELECT run_id, kind FROM runs")
        self.assertEqual(len(runs), 1, runs)
        self.assertEqual(runs[0][1], "snapshot")
        run_id = int(runs[0][0])
        hdr = pg.psql("SELECT snap, items, complete FROM snapshots WHERE run_id = %d ORDER BY snap"
                      % run_id)
        self.assertEqual([(int(a), int(b), c) for a, b, c in hdr],
                         [(1, 20000, "1"), (2, 20000, "1")], hdr)
        got = {r[0].encode(): (int(r[1]), int(r[2])) for r in pg.psql(
            "SELECT key_ref, class_id, size FROM snapshot_items WHERE run_id = %d AND snap = 1"
            % run_id)}
        self.assertEqual(got, dump)
        per_class = {int(c): int(n) for c, n in pg.psql(
            "SELECT class_id, count(*) FROM snapshot_items WHERE run_id = %d AND snap = 2 "
            "GROUP BY class_id" % run_id)}
        self.assertEqual(per_class, want)

    def test_sigterm_mid_dump_partial_incomplete(self):
        self._partial("hold")

    def test_cut_mid_dump_partial_incomplete(self):
        self._partial("cut")


if __name__ == "__main__":
    unittest.main(verbosity=2)
