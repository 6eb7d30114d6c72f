"""slabtap watch (issue 22): a memcached recorded from its own logger, no
proxy, against a real memcached 1.6.18.

  - N sets sent directly to memcached at a rate it keeps up with -> N write
    rows, every row's class memcached's own (rows per class == `stats items`
    number per class), runs.kind 'watch', answers, no flags, no latency;
    /health and /metrics of a watch run; SIGTERM -> every row in the file
  - evictions under a small -m -> item_events rows == `stats` evictions,
    each with memcached's class
  - a rate where memcached drops lines (tiny logger buffers, a pipelined
    burst) -> rows + counted drops == writes sent == what memcached counted,
    runs.rows_recorded + rows_dropped == writes sent, run_meta
    memcached_dropped, the log names the -o flag that would help
  - memcached killed and started again on the same port under a watcher ->
    the run goes on after a gap, said as a restart (log, run_meta watch_gaps,
    a phase 'memcached restarted'); every write of both processes recorded
  - memcached -W -> slabtap watch exits 1 with memcached's own words
  - a fake server for what 1.6.18 does not print: deletions (1.6.20+), a
    line without size= (refused: too old), lines that do not parse
  - slabtap proxy --watch-evictions -> the proxy's run has the evictions
  - the same counts into PostgreSQL (pgcluster) when it is installed
"""
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
from mctest import (HOST, SLABTAP, Memcached, Process, ServerTestCase, db_scalar,  # noqa: E402
                    http_json, http_request, mc_stats, reserve_port, slabtap_env, wait_for)


def db_rows(path, sql):
    """Rows as tuples."""
    return [tuple(r.values()) for r in mctest.db_rows(path, sql)]


class Watch(Process):
    """slabtap watch --memcached 127.0.0.1:PORT --db DB with the admin endpoint
    on a reserved port (self.http_port); ready once it printed its start line."""

    def __init__(self, workdir, mc_port, db, extra=(), name="watch", ready=True):
        self.db = db
        env = slabtap_env()
        env.setdefault("STATE_DIRECTORY", workdir)
        admin = reserve_port()
        self.http_port = admin.port
        argv = [SLABTAP, "watch", "--memcached", "%s:%d" % (HOST, mc_port), "--db", db,
                "--http", "%s:%d" % (HOST, admin.port), "--stats-interval", "100ms"] + list(extra)
        err = self._try_start(argv, os.path.join(workdir, name + ".log"), [admin],
                              (lambda: self._wait_started(20)) if ready else (lambda: True),
                              env=env)
        if err is not None:
            raise AssertionError("slabtap watch did not start: %s" % err[-2000:])

    def _wait_started(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            if "slabtap: watch " in self.stderr_text():
                return True
            time.sleep(0.02)
        return False

    def health(self):
        status, _, body = http_request(self.http_port, "GET", "/health")
        return status, json.loads(body)

    def watcher(self):
        return self.health()[1].get("watcher", {})

    def stop(self, timeout=60):
        self.signal(signal.SIGTERM)
        rc = self.wait(timeout)
        self.kill_hard()
        return rc

    def assert_clean_exit(self, tc, rc):
        err = self.stderr_text()
        tc.assertEqual(mctest.sanitizer_errors(err), [], err[-6000:])
        tc.assertEqual(rc, 0, "watch exit code %r; stderr:\n%s" % (rc, err[-3000:]))


def set_many(mc, items, timeout=60):
    """Sets (key, value bytes, ttl) one at a time, each answered before the
    next: a rate memcached's logger keeps up with."""
    with mc.connect(timeout=timeout) as s:
        for key, value, ttl in items:
            s.sendall(b"set %s 0 %d %d\r\n%s\r\n" % (key, ttl, len(value), value))
            line = mctest.recv_line(s, timeout=timeout)
            assert line == b"STORED\r\n", line


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def signed64(x):
    return x - (1 << 64) if x >= 1 << 63 else x


def stat(stats, name):
    return int(stats.get(name, 0))


def classes_numbers(port):
    """{class id: items memcached holds} from `stats items`."""
    out = {}
    for k, v in mc_stats(port, "items").items():
        m = re.match(r"items:(\d+):number$", k)
        if m and int(v):
            out[int(m.group(1))] = int(v)
    return out


# ctest runs a file that starts a proxy a second time with per-client
# upstream connections: only the proxy's test has anything to do with that
proxy_free = unittest.skipUnless(mctest.POOLED, "no proxy: the pooled run covers it")


@proxy_free
class WatchTest(ServerTestCase):

    def watch(self, mc_port, db=None, **kw):
        w = Watch(self.w.path, mc_port, db or self.path("watch.db"), **kw)
        return self.started(w)

    def wait_lines(self, w, mc, what="lines"):
        """Until memcached's logger has handed out every line it logged and the
        watcher has read them all (bounded)."""
        def caught_up():
            # every set logged by a worker (or dropped), every line a worker
            # wrote handed to the watcher (or skipped), every line sent read
            st = mc_stats(mc.port)
            written = stat(st, "log_worker_written")
            sent = stat(st, "log_watcher_sent")
            wt = w.watcher()
            return (written + stat(st, "log_worker_dropped") >= stat(st, "cmd_set")
                    and sent + stat(st, "log_watcher_skipped") >= written
                    and wt.get("connected") and wt.get("lines", 0) >= sent)
        wait_for(caught_up, 60, what=what)

    # ------------------------------------------------------------------

    def test_sets_rows_classes_health_metrics(self):
        mc = self.mc(extra=["-m", "64"])
        w = self.watch(mc.port)
        wait_for(lambda: w.watcher().get("connected"), 20, what="the watcher connected")
        n = 3000
        items = [(b"user:%d" % i, b"v" * ((i * 37) % 3000), 0 if i % 3 else 100)
                 for i in range(n)]
        set_many(mc, items)
        self.wait_lines(w, mc)
        status, h = w.health()
        self.assertEqual(status, 200, h)
        self.assertEqual(h["status"], "ok", h)
        self.assertEqual(h["watcher"]["writes"], n, h)
        self.assertEqual(h["watcher"]["memcached_dropped"], 0, h)
        status, _, metrics = http_request(w.http_port, "GET", "/metrics")
        self.assertEqual(status, 200)
        metrics = metrics.decode()
        self.assertIn('slabtap_rows_lost_total{reason="memcached_dropped"} 0', metrics)
        self.assertIn("slabtap_writes_recorded_total %d" % n, metrics)
        per_class = classes_numbers(mc.port)
        rc = w.stop()
        w.assert_clean_exit(self, rc)
        db = w.db
        kind, recorded, dropped = db_rows(db, "SELECT kind, rows_recorded, rows_dropped FROM runs")[0]
        self.assertEqual((kind, recorded, dropped), ("watch", n, 0))
        self.assertEqual(db_scalar(db, "SELECT count(*) FROM sets"), n)
        rows = dict(db_rows(db, "SELECT class_id, count(*) FROM sets GROUP BY class_id"))
        print("rows per class %s; memcached's `stats items` %s" % (rows, per_class))
        self.assertEqual(rows, per_class)
        # what the log says, and what it does not
        self.assertEqual(db_rows(db, "SELECT DISTINCT answer, latency_ns, flags FROM sets"),
                         [("STORED", None, None)])
        self.assertEqual(db_scalar(db, "SELECT count(*) FROM sets WHERE exptime = 100"),
                         sum(1 for _, _, ttl in items if ttl))
        self.assertEqual(db_scalar(db, "SELECT sum(value_len) FROM sets"),
                         sum(len(v) for _, v, _ in items))
        # every key, and its value length, as sent (--keys prefix: the hash)
        self.assertEqual(db_scalar(db, "SELECT count(DISTINCT key_hash) FROM sets"), n)
        self.assertEqual(db_rows(db, "SELECT DISTINCT key FROM sets"), [("user",)])
        # key_hash as the proxy computes it: FNV-1a 64 of the whole key
        self.assertEqual(db_scalar(db, "SELECT key_hash FROM sets WHERE seq = 1"),
                         signed64(fnv1a64(b"user:0")))

    def test_evictions_recorded(self):
        mc = self.mc(extra=["-m", "2"])
        w = self.watch(mc.port, extra=["--keys", "full"])
        wait_for(lambda: w.watcher().get("connected"), 20, what="the watcher connected")
        items = [(b"big:%d" % i, b"x" * 20000, 0) for i in range(600)]
        set_many(mc, items)
        self.wait_lines(w, mc)
        st = mc_stats(mc.port)
        evictions = stat(st, "evictions")
        self.assertGreater(evictions, 0, "memcached -m 2 evicted nothing")
        rc = w.stop()
        w.assert_clean_exit(self, rc)
        got = db_scalar(w.db, "SELECT count(*) FROM item_events WHERE event = 1")
        print("evictions: memcached %d, item_events %d" % (evictions, got))
        self.assertEqual(got, evictions)
        # the oldest keys went first, unfetched, each with memcached's class
        first = db_rows(w.db, "SELECT key, fetched, class_id, size FROM evictions "
                              "ORDER BY seq LIMIT 1")[0]
        self.assertEqual(first[0], "big:0")
        self.assertEqual(first[1], 0)
        write_class = db_scalar(w.db, "SELECT class_id FROM sets WHERE key = 'big:0'")
        self.assertEqual(first[2], write_class)
        self.assertEqual(first[3], 20000)

    def test_drops_counted(self):
        # memcached's worker log buffer is 64 KiB: a pipelined burst of
        # noreply sets outruns the logger thread
        mc = self.mc(extra=["-m", "256", "-o", "watcher_logbuf_size=1"])
        w = self.watch(mc.port)
        wait_for(lambda: w.watcher().get("connected"), 20, what="the watcher connected")
        n = 100000
        with mc.connect(timeout=60) as s:
            s.sendall(b"".join(b"set d:%d 0 0 10 noreply\r\n0123456789\r\n" % i
                               for i in range(n)) + b"mn\r\n")
            mctest.recv_until(s, b"MN\r\n", timeout=60)
        st = mc_stats(mc.port)
        self.assertEqual(stat(st, "cmd_set"), n)

        def all_accounted():
            st = mc_stats(mc.port)
            return (stat(st, "log_worker_written") + stat(st, "log_worker_dropped") >= n)
        wait_for(all_accounted, 60, what="memcached's logger accounted every set")
        self.wait_lines(w, mc)
        st = mc_stats(mc.port)
        rc = w.stop()
        w.assert_clean_exit(self, rc)
        recorded, dropped = db_rows(w.db, "SELECT rows_recorded, rows_dropped FROM runs")[0]
        mc_dropped = stat(st, "log_worker_dropped") + stat(st, "log_watcher_skipped")
        print("writes sent %d: rows %d + counted lost %d (memcached: worker_dropped %d, "
              "watcher_skipped %d, watcher_sent %d)"
              % (n, recorded, dropped, stat(st, "log_worker_dropped"),
                 stat(st, "log_watcher_skipped"), stat(st, "log_watcher_sent")))
        self.assertGreater(mc_dropped, 0, "memcached dropped nothing: the test tests nothing")
        self.assertEqual(recorded + dropped, n)
        self.assertEqual(dropped, mc_dropped)
        self.assertEqual(db_scalar(w.db, "SELECT count(*) FROM sets"), recorded)
        meta = json.loads(db_scalar(w.db, "SELECT value FROM run_meta "
                                          "WHERE key = 'memcached_dropped'"))
        self.assertEqual(meta["lines"], dropped)
        err = w.stderr_text()
        self.assertIn("memcached drops watch lines", err)
        self.assertRegex(err, r"-o (worker|watcher)_logbuf_size=\d+")
        self.assertIn("memcached_dropped %d" % dropped, err)

    def test_restart_resumes(self):
        mc = self.mc()
        port = mc.port
        w = self.watch(port, extra=["--keys", "full"])
        wait_for(lambda: w.watcher().get("connected"), 20, what="the watcher connected")
        set_many(mc, [(b"a:%d" % i, b"1234", 0) for i in range(100)])
        self.wait_lines(w, mc)
        mc.stop()
        wait_for(lambda: not w.watcher().get("connected"), 20, what="the watcher saw it go")
        mc2 = self.started(Memcached(self.w.path, port=port, name="memcached-again"))
        wait_for(lambda: w.watcher().get("connected"), 30, what="the watcher back")
        set_many(mc2, [(b"b:%d" % i, b"123456", 0) for i in range(50)])
        try:
            wait_for(lambda: w.watcher().get("writes") == 150, 30, what="every write read")
        except AssertionError:
            raise AssertionError("watcher %s\nmemcached %s\n%s" % (
                w.watcher(), {k: v for k, v in mc_stats(port).items() if k.startswith("log_")},
                w.stderr_text()[-3000:]))
        wait_for(lambda: w.watcher().get("restarts") == 1, 20, what="the restart said")
        rc = w.stop()
        w.assert_clean_exit(self, rc)
        self.assertEqual(db_scalar(w.db, "SELECT count(*) FROM runs"), 1)
        self.assertEqual(db_scalar(w.db, "SELECT rows_recorded FROM runs"), 150)
        gaps = json.loads(db_scalar(w.db, "SELECT value FROM run_meta WHERE key = 'watch_gaps'"))
        self.assertEqual((gaps["gaps"], gaps["restarts"]), (1, 1))
        self.assertTrue(gaps["list"][0]["restart"])
        self.assertEqual(db_rows(w.db, "SELECT name FROM phases"), [("memcached restarted",)])
        # the writes after the restart are in the phase it starts
        self.assertEqual(db_scalar(w.db, "SELECT count(*) FROM sets_phased "
                                         "WHERE phase = 'memcached restarted'"), 50)
        self.assertIn("memcached restarted", w.stderr_text())

    def test_refused_by_disable_watch(self):
        mc = self.mc(extra=["-W"])
        w = self.watch(mc.port, ready=False)
        rc = w.wait(30)
        err = w.stderr_text()
        self.assertEqual(rc, 1, err)
        self.assertEqual(mctest.sanitizer_errors(err), [], err)
        lines = [ln for ln in err.splitlines() if ln.startswith("slabtap watch: ")]
        self.assertEqual(lines, ["slabtap watch: memcached refused the watch: "
                                 "CLIENT_ERROR watch commands not allowed"], err)

class FakeMemcached:
    """A server that answers `watch ...` with OK and then the given lines (what
    a newer or older memcached than the one installed prints), and closes
    every other connection (the stats poller's: it retries)."""

    def __init__(self, lines):
        self.lines = lines
        self.asked = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((HOST, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.stop = False
        self.t = threading.Thread(target=self._serve, daemon=True)
        self.t.start()

    def _serve(self):
        self.sock.settimeout(0.2)
        while not self.stop:
            try:
                c, _ = self.sock.accept()
            except OSError:
                continue
            c.settimeout(5)
            try:
                first = mctest.recv_line(c, timeout=5)
            except AssertionError:
                c.close()
                continue
            if not first.startswith(b"watch"):
                c.close()
                continue
            self.asked.append(first)
            c.sendall(b"OK\r\n" + b"".join(ln + b"\n" for ln in self.lines))
            self.conns.append(c)

    def close(self):
        self.stop = True
        self.t.join(5)
        for c in self.conns:
            c.close()
        self.sock.close()


@proxy_free
class WatchFakeServerTest(ServerTestCase):
    """Lines memcached 1.6.18 does not print: deletions (1.6.20+), a line
    without size= (older than 1.6.18's item_store size), lines that do not
    parse."""

    def fake(self, lines):
        f = FakeMemcached(lines)
        self.addCleanup(f.close)
        return f

    def test_deletions_and_bad_lines(self):
        f = self.fake([
            b"ts=1796212227.409860 gid=2 type=item_store key=a%2520b status=stored cmd=set "
            b"ttl=0 clsid=1 cfd=25 size=3",
            b"ts=1796212227.500000 gid=3 type=deleted key=a%2520b cmd=delete clsid=1 size=3",
            b"ts=1796212227.600000 gid=4 type=something_new key=x",
            b"this is not a log line",
            b"ts=1796212227.700000 gid=5 type=deleted key=m cmd=md clsid=2 size=70",
            b"ts=1796212227.800000 gid=6 type=item_store key=c status=not_stored cmd=add "
            b"ttl=9 clsid=3 cfd=26 size=500",
        ])
        w = self.started(Watch(self.w.path, f.port, self.path("fake.db"),
                               extra=["--keys", "full"]))
        try:
            wait_for(lambda: w.watcher().get("writes") == 2
                     and w.watcher().get("deletions_seen") == 2, 20, what="the fake lines read")
        except (AssertionError, OSError):
            raise AssertionError(w.stderr_text()[-4000:])
        self.assertEqual(f.asked, [b"watch mutations evictions deletions\r\n"])
        rc = w.stop()
        w.assert_clean_exit(self, rc)
        db = w.db
        self.assertEqual(db_rows(db, "SELECT key, cmd, answer, class_id, value_len, exptime "
                                     "FROM sets ORDER BY seq"),
                         [("a%20b", "set", "STORED", 1, 3, 0),
                          ("c", "add", "NOT_STORED", 3, 500, 9)])
        self.assertEqual(db_rows(db, "SELECT key, cmd, class_id, size, fetched, idle_s, ttl_left "
                                     "FROM item_event_keys WHERE event = 2 ORDER BY seq"),
                         [("a%20b", "delete", 1, 3, None, None, None),
                          ("m", "md", 2, 70, None, None, None)])
        self.assertEqual(db_scalar(db, "SELECT t_ns FROM item_events ORDER BY seq LIMIT 1"),
                         1796212227500000000)

    def test_too_old_refused(self):
        f = self.fake([b"ts=1.000001 gid=2 type=item_store key=a status=stored cmd=set "
                       b"ttl=0 clsid=1 cfd=25"])
        w = self.started(Watch(self.w.path, f.port, self.path("old.db"), ready=False))
        rc = w.wait(30)
        err = w.stderr_text()
        self.assertEqual(rc, 1, err)
        self.assertEqual(mctest.sanitizer_errors(err), [], err)
        self.assertIn("slabtap watch: memcached does not print size= on its watch lines "
                      "(too old for slabtap watch)", err)


class WatchProxyTest(ServerTestCase):
    """slabtap proxy --watch-evictions (both upstream modes)."""

    def test_proxy_watch_evictions(self):
        mc = self.mc(extra=["-m", "2"])
        px = self.proxy(mc.port, extra=["--watch-evictions"], http=True)
        wait_for(lambda: http_json(px.http_port, "GET", "/health")
                 .get("watcher", {}).get("connected"), 20, what="the proxy's watcher")
        with mctest.connect(px.port) as s:
            for i in range(600):
                s.sendall(b"set p:%d 0 0 20000\r\n%s\r\n" % (i, b"y" * 20000))
                self.assertEqual(mctest.recv_line(s), b"STORED\r\n")
        evictions = stat(mc_stats(mc.port), "evictions")
        self.assertGreater(evictions, 0)
        wait_for(lambda: http_json(px.http_port, "GET", "/health")
                 ["watcher"]["evictions"] >= evictions, 30, what="the evictions read")
        rc = px.stop()
        px.assert_clean_exit(self, rc)
        self.assertEqual(db_scalar(px.db, "SELECT count(*) FROM item_events WHERE event = 1"),
                         evictions)
        self.assertEqual(db_scalar(px.db, "SELECT count(*) FROM sets"), 600)


@proxy_free
class WatchPostgresTest(ServerTestCase):
    """The same counts into PostgreSQL."""

    def test_sets_into_postgres(self):
        try:
            import pgcluster
            pgcluster.bindir()
        except (ImportError, AssertionError) as e:
            self.skipTest("no PostgreSQL: %s" % e)
        with pgcluster.PgCluster() as pg:
            mc = self.mc(extra=["-m", "2"])
            w = self.started(Watch(self.w.path, mc.port, pg.uri()))
            wait_for(lambda: w.watcher().get("connected"), 20, what="the watcher connected")
            items = [(b"pg:%d" % i, b"z" * ((i * 53) % 30000), 0) for i in range(400)]
            set_many(mc, items)
            st = mc_stats(mc.port)

            def caught_up():
                sent = stat(mc_stats(mc.port), "log_watcher_sent")
                return w.watcher().get("lines", 0) >= sent
            wait_for(caught_up, 60, what="every line read")
            per_class = classes_numbers(mc.port)
            rc = w.stop()
            self.assertEqual(rc, 0, w.stderr_text()[-3000:])
            self.assertEqual(pg.psql("SELECT kind, rows_recorded, rows_dropped FROM runs"),
                             [["watch", "400", "0"]])
            got = pg.psql("SELECT count(*) FROM item_events WHERE event = 1")[0][0]
            self.assertEqual(int(got), stat(st, "evictions"))
            # the items memcached still holds are the last writes of each class
            # that it did not evict: rows per class minus evictions per class
            rows = {int(c): int(n) for c, n in pg.psql(
                "SELECT class_id, count(*) FROM sets GROUP BY class_id")}
            ev = {int(c): int(n) for c, n in pg.psql(
                "SELECT class_id, count(*) FROM item_events WHERE event = 1 GROUP BY class_id")}
            held = {c: rows[c] - ev.get(c, 0) for c in rows if rows[c] - ev.get(c, 0)}
            print("postgres: rows per class %s, evicted %s, memcached holds %s"
                  % (rows, ev, per_class))
            self.assertEqual(held, per_class)


if __name__ == "__main__":
    unittest.main(verbosity=2)
