#!/usr/bin/python3
"""test_page_taps: the page's API on watch and snapshot runs (issue 22).

Two recorded runs in one SQLite file, then a proxy with the admin endpoint
on that file, asked through /api as the page asks:

  * run 1, kind 'watch', with its evictions: a real memcached (-m 2) takes
    4,000 sets of 1,000 bytes under two key prefixes (user:, sess:) and
    evicts; the test's own `watch evictions` connection reads every
    eviction line until their number is memcached's `evictions`, and they
    are stored as the run's item_events rows (as slabtap watch / proxy
    --watch-evictions write them);
  * run 2, kind 'snapshot': another memcached holds items of two prefixes
    and sizes in several classes; the test's own `lru_crawler metadump
    all` is stored as the run's snapshot 1;
  * /api/runs lists each run with its kind (the running proxy's 'proxy');
  * /api/run/evictions?run=1: totals equal memcached's evictions counter
    and the lines' never-fetched count; per class equal to memcached's
    `stats items` evicted per class; the time buckets sum to the total;
    per prefix equal to the lines counted by prefix;
  * /api/run/snapshot?run=2: snapshot 1 picked; per class items equal to
    memcached's `stats items` number, bytes to the sum of the listed sizes,
    waste_bytes = chunk_size x items - bytes; the idle histogram's items sum
    to the items; the prefixes' items and bytes equal those counted;
    ?snap=2 (none): the list and snap null;
  * /api/run/evictions on the snapshot run: zeros, no error;
  * the page in headless chromium (when installed; said when not): the run
    picker says each kind; run 1's evicted-items table has a row per class
    with memcached's per-class counts, its note the total; run 2's
    resident-items panel is shown with a row per class and its items; no
    error of any kind in the browser or the page;
  * `slabtap top --once --proxy` names the running slabtap's run and kind.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown.
"""
import os
import sqlite3
import sys
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
import test_page  # noqa: E402  (its headless chromium driver)


def read_lines(sock, want, what, state, timeout=30):
    """Lines of type=WHAT from a watcher until want(lines) is true; state
    keeps a partial line between calls."""
    buf, out = state.get("buf", b""), []
    deadline = time.monotonic() + timeout
    sock.settimeout(0.5)
    while not want(out):
        if time.monotonic() > deadline:
            raise AssertionError("%d %s lines, wanted more" % (len(out), what))
        try:
            data = sock.recv(65536)
        except OSError:
            continue
        if not data:
            break
        buf += data
        *lines, buf = buf.split(b"\n")
        for ln in lines:
            if b"type=" + what.encode() not in ln:
                continue
            f = dict(p.split(b"=", 1) for p in ln.split() if b"=" in p)
            out.append({k.decode(): v.decode() for k, v in f.items()})
    state["buf"] = buf
    return out


def metadump(mc):
    with mc.connect(timeout=30) as s:
        for _ in range(200):
            s.sendall(b"lru_crawler metadump all\r\n")
            data = mctest.recv_until(s, b"\r\n", timeout=30)
            if not data.startswith(b"BUSY"):
                break
            time.sleep(0.05)
        if not data.endswith(b"END\r\n"):
            data += mctest.recv_until(s, b"END\r\n", timeout=60)
    out = []
    for line in data.decode().splitlines():
        if line.startswith("key="):
            f = dict(p.split("=", 1) for p in line.split())
            out.append({"key": urllib.parse.unquote(f["key"]), "cls": int(f["cls"]),
                        "size": int(f["size"]), "fetch": f["fetch"] == "yes",
                        "la": int(f["la"]), "exp": int(f["exp"])})
    return out


def prefix(key):
    cut = [key.index(c) for c in ":/.|" if c in key]
    return key[:min(cut)] if cut else ""


class PageTapsTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-pagetaps-"

    def test_watch_and_snapshot_runs(self):
        db = self.path("taps.db")
        # run 1: evictions, watched
        mc = self.mc(extra=["-m", "2"], name="mc-ev")
        watcher = mc.connect()
        self.addCleanup(watcher.close)
        watcher.sendall(b"watch evictions\r\n")
        self.assertEqual(mctest.recv_line(watcher), b"OK\r\n")
        px = self.proxy(mc.port, db=db, name="px-ev", extra=["--run", "ev"])
        lines, state = [], {}
        for batch in range(16):  # the watcher read between batches: no line dropped
            payload = b"".join(b"set %s:%d 0 0 1000\r\n%s\r\n"
                               % (b"user" if i % 3 else b"sess", i, b"e" * 1000)
                               for i in range(batch * 250, batch * 250 + 250))
            self.assertEqual(mctest.exchange(px.port, payload, timeout=60), b"STORED\r\n" * 250)
            evicted = int(mctest.mc_stats(mc.port)["evictions"])
            lines += read_lines(watcher, lambda o: len(lines) + len(o) >= evicted, "eviction",
                                state)
        self.assertGreater(evicted, 1000)
        self.assertEqual(int(mctest.mc_stats(mc.port)["log_watcher_skipped"]), 0)
        items_ev = mctest.mc_stats(mc.port, "items")
        self.assertEqual(len(lines), evicted)
        self.stop_clean(px)
        # run 2: a snapshot
        mc2 = self.mc(extra=["-m", "64"], name="mc-snap")
        px2 = self.proxy(mc2.port, db=db, name="px-snap", extra=["--run", "snap"])
        sizes = [10, 100, 700, 3000, 20000]
        payload = b"".join(b"set %s:%d 0 0 %d\r\n%s\r\n"
                           % (b"img" if i % 2 else b"txt", i, sizes[i % 5], b"s" * sizes[i % 5])
                           for i in range(1000))
        self.assertEqual(mctest.exchange(px2.port, payload, timeout=60), b"STORED\r\n" * 1000)
        with mc2.connect() as s:  # a few fetched
            s.sendall(b"get txt:0 txt:2 txt:4\r\n")
            mctest.recv_until(s, b"END\r\n")
        obs2 = mctest.mc_classes(mc2.port)
        dump = metadump(mc2)
        self.stop_clean(px2)
        self.assertEqual(len(dump), 1000)

        con = sqlite3.connect(db)
        con.execute("UPDATE runs SET kind = 'watch' WHERE run_id = 1")
        con.execute("UPDATE runs SET kind = 'snapshot' WHERE run_id = 2")
        con.executemany(
            "INSERT INTO item_events (run_id, seq, t_ns, event, key_hash, key_ref, key_len,"
            " class_id, size, fetched, idle_s, ttl_left, cmd) VALUES (1, ?, ?, 1, ?, ?, ?, ?, ?,"
            " ?, ?, ?, NULL)",
            [(i + 1, int(float(e["ts"]) * 1e9), i + 1,
              urllib.parse.unquote(e["key"]), len(urllib.parse.unquote(e["key"])),
              int(e["clsid"]), int(e["size"]), int(e["fetch"] == "yes"), int(e["la"]),
              int(e["ttl"])) for i, e in enumerate(lines)])
        t0 = time.time_ns()
        now = int(time.time())
        con.execute("INSERT INTO snapshots (run_id, snap, t_ns, ended_ns, items, bytes, complete)"
                    " VALUES (2, 1, ?, ?, ?, ?, 1)",
                    (t0, t0 + 1, len(dump), sum(d["size"] for d in dump)))
        con.executemany(
            "INSERT INTO snapshot_items (run_id, snap, seq, key_hash, key_ref, key_len, class_id,"
            " size, ttl_left, idle_s, fetched, flags) VALUES (2, 1, ?, ?, ?, ?, ?, ?, -1, ?, ?,"
            " NULL)",
            [(i + 1, i + 1, d["key"], len(d["key"]), d["cls"], d["size"],
              max(0, now - d["la"]), int(d["fetch"])) for i, d in enumerate(dump)])
        con.commit()
        con.close()

        # the page, on a proxy recording run 3 into the same file
        mc3 = self.mc(name="mc-page")
        px3 = self.proxy(mc3.port, db=db, name="px-page", http=True, extra=["--run", "page"])
        runs = mctest.http_json(px3.http_port, "GET", "/api/runs")
        kinds = {r["run_id"]: r["kind"] for r in runs["runs"]}
        self.assertEqual(kinds, {1: "watch", 2: "snapshot", 3: "proxy"}, runs)
        self.assertEqual(runs["current"]["kind"], "proxy")

        ev = mctest.http_json(px3.http_port, "GET", "/api/run/evictions?run=1&points=20")
        self.assertEqual(ev["totals"]["evictions"], evicted, ev["totals"])
        self.assertEqual(ev["totals"]["never_fetched"],
                         sum(1 for e in lines if e["fetch"] == "no"))
        self.assertEqual(ev["totals"]["deletions"], 0)
        per_class = {c["class_id"]: c["evictions"] for c in ev["classes"]}
        want = {}
        for k, v in items_ev.items():
            p = k.split(":")
            if len(p) == 3 and p[2] == "evicted" and int(v):
                want[int(p[1])] = int(v)
        self.assertEqual(per_class, want)
        self.assertEqual(sum(s["evictions"] for s in ev["series"]), evicted)
        self.assertTrue(all(s["t_ns"] >= ev["from_ns"] - 60 * 10**9 for s in ev["series"]))
        by_prefix = {}
        for e in lines:
            p = prefix(urllib.parse.unquote(e["key"]))
            by_prefix[p] = by_prefix.get(p, 0) + 1
        got = {}
        for p in ev["prefixes"]:
            got[p["prefix"]] = got.get(p["prefix"], 0) + p["evictions"]
        self.assertEqual(got, by_prefix)

        sn = mctest.http_json(px3.http_port, "GET", "/api/run/snapshot?run=2")
        self.assertEqual(sn["snap"], 1)
        self.assertEqual([s["snap"] for s in sn["snapshots"]], [1])
        self.assertTrue(sn["snapshots"][0]["complete"])
        classes = {c["class_id"]: c for c in sn["classes"]}
        self.assertEqual({c: v["items"] for c, v in classes.items()},
                         {c: o["number"] for c, o in obs2.items() if o.get("number")})
        for c, v in classes.items():
            self.assertEqual(v["bytes"], sum(d["size"] for d in dump if d["cls"] == c))
            self.assertEqual(v["chunk_size"], obs2[c]["chunk_size"])
            self.assertEqual(v["waste_bytes"], v["chunk_size"] * v["items"] - v["bytes"])
        self.assertEqual(sum(h["items"] for h in sn["idle"]), 1000)
        self.assertEqual(sum(h["never_fetched"] for h in sn["idle"]),
                         sum(1 for d in dump if not d["fetch"]))
        self.assertEqual(sum(h["items"] for h in sn["age"]), 1000)
        pre = {p["prefix"]: (p["items"], p["bytes"]) for p in sn["prefixes"]}
        want = {}
        for d in dump:
            i, b = want.get(prefix(d["key"]), (0, 0))
            want[prefix(d["key"])] = (i + 1, b + d["size"])
        self.assertEqual(pre, want)
        none = mctest.http_json(px3.http_port, "GET", "/api/run/snapshot?run=2&snap=2")
        self.assertIsNone(none["snap"])
        self.assertEqual(len(none["snapshots"]), 1)
        empty = mctest.http_json(px3.http_port, "GET", "/api/run/evictions?run=2")
        self.assertEqual(empty["totals"]["evictions"], 0)
        self.assertEqual(empty["classes"], [])
        self.check_browser(px3, per_class, evicted, classes)
        # top says what the running slabtap records
        rc, out, err = mctest.run_slabtap(["top", "--once", "--proxy",
                                           "%s:%d" % (mctest.HOST, px3.http_port)])
        self.assertEqual(rc, 0, err)
        self.assertIn("via slabtap /api/slabs, proxy run #3", out.splitlines()[0])
        self.stop_clean(px3)

    def check_browser(self, px, ev_per_class, evicted, snap_classes):
        if not test_page.CHROMIUM:
            print("test_page_taps: no chromium installed: the page itself not checked")
            return
        br = test_page.Browser(self.w.path)
        self.addCleanup(br.close)
        base = "http://%s:%d/" % (mctest.HOST, px.http_port)
        rows = ("Array.from(document.querySelectorAll('.view table.%s tbody tr[data-class-id]'))"
                ".map(tr => [Number(tr.dataset.classId), Number(tr.children[%d].dataset.v)])")
        br.open(base + "?run=1")
        br.wait("document.querySelector('.view[data-ready=\"1\"]') && "
                "document.querySelectorAll('.view table.evlog tbody tr').length > 0", 30,
                "run 1's evicted-items table")
        labels = br.eval("Array.from(document.querySelectorAll('#run-picker option'))"
                         ".map(o => o.textContent)")
        self.assertTrue(any(t.startswith("#1 ev (watch)") for t in labels), labels)
        self.assertTrue(any(t.startswith("#2 snap (snapshot)") for t in labels), labels)
        got = {c: v for c, v in br.eval(rows % ("evlog", 1))}
        self.assertEqual(got, ev_per_class)
        note = br.eval("document.querySelector('.view .evlog-note').textContent")
        self.assertIn("{:,} evictions logged".format(evicted), note)
        self.assertTrue(br.eval("document.querySelector('.view [data-panel=\"snapshot\"]').hidden"))
        br.open(base + "?run=2")
        br.wait("document.querySelector('.view[data-ready=\"1\"]') && "
                "document.querySelectorAll('.view table.snapclasses tbody tr').length > 0", 30,
                "run 2's resident-items table")
        self.assertFalse(br.eval("document.querySelector('.view [data-panel=\"snapshot\"]').hidden"))
        got = {c: v for c, v in br.eval(rows % ("snapclasses", 2))}
        self.assertEqual(got, {c: v["items"] for c, v in snap_classes.items()})
        self.assertIn("(snapshot)", br.eval("document.querySelector('.view .run-title').textContent"))
        self.assertEqual(br.problems(), [])
        self.assertEqual(br.eval("document.body.dataset.errors"), "0")


if __name__ == "__main__":
    unittest.main()
