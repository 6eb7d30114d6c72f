#!/usr/bin/python3
"""test_retention: bounded storage for a SQLite file left running
(record/retain.h).

- --max-db-size 3m under 240,000 pipelined sets (rows need ~4x that): the
  file stays under the bound (tolerance: one page, 4096 bytes, for the
  pages in use as /health reports them while the load runs, and for the
  file on disk after exit), the oldest rows are expired and the kept ones
  are the newest, every one whole (conn_id, t_ns); the write aggregates
  equal what the test sent, counted here per body size; /health stays 200
  with the expiry shown; /metrics has it; a probe client doing round trips
  beside the load never waits more than PROBE_MAX_S.
- --retain 2s: rows older than two seconds go while new ones stay.
- --db 'r-%H%M%S.db': a new file per second; the union of the files holds
  every row exactly once (seq 1..N), each file a run of the same name with
  its settings and ladder carried over, `slabtap model predict` reads one
  file alone, and schema/queries/attach_days.sh reads them together.

Needs memcached on PATH and $SLABTAP. Each test runs in well under 30 s.
"""
import glob
import json
import os
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

HOST = mctest.HOST
PAGE = 4096
PROBE_MAX_S = 1.0  # a client's worst round trip while rows are expired


def value_len(i):
    return 20 + (i * 7919) % 300


def send_sets(port, start, n, prefix=b"k"):
    """n pipelined `set ... noreply` (keys prefix:i, values value_len(i)),
    then mn to know they are all done; {body: count} of what was sent."""
    sizes = {}
    with socket.create_connection((HOST, port), timeout=60) as s:
        buf = bytearray()
        for i in range(start, start + n):
            key = b"%s:%d" % (prefix, i)
            vl = value_len(i)
            buf += b"set %s 0 0 %d noreply\r\n" % (key, vl) + b"v" * vl + b"\r\n"
            body = len(key) + vl
            sizes[body] = sizes.get(body, 0) + 1
            if len(buf) > 128 * 1024:
                s.sendall(buf)
                buf = bytearray()
        s.sendall(bytes(buf) + b"mn\r\n")
        line = mctest.recv_line(s, timeout=60)
        assert line == b"MN\r\n", line
    return sizes


class Probe(threading.Thread):
    """Round trips (set + get of a small item) every 5 ms; the worst one."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.worst, self.count, self.stop = port, 0.0, 0, False

    def run(self):
        with socket.create_connection((HOST, self.port), timeout=30) as s:
            while not self.stop:
                t = time.monotonic()
                s.sendall(b"set probe 0 0 2\r\nok\r\n")
                assert mctest.recv_line(s, timeout=30) == b"STORED\r\n"
                self.worst = max(self.worst, time.monotonic() - t)
                self.count += 1
                time.sleep(0.005)


class RetentionTest(mctest.ServerTestCase):

    def test_max_db_size(self):
        bound = 3 << 20
        mc = self.mc(extra=["-m", "256"])
        px = self.proxy(mc.port, http=True, extra=["--max-db-size", "3m",
                                                   "--stats-interval", "200"])
        probe = Probe(px.port)
        probe.start()
        seen = {"max_in_use": 0, "stop": False}

        def watch():  # the file's pages as the writer sees them, all along
            while not seen["stop"]:
                # 503 until the first stats sample: the figures are there anyway
                _, _, body = mctest.http_request(px.http_port, "GET", "/health")
                r = json.loads(body)["store"]["retention"]
                seen["max_in_use"] = max(seen["max_in_use"], r["file_bytes"])
                seen["polls"] = seen.get("polls", 0) + 1
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        total = 240000
        sizes = send_sets(px.port, 1, total)
        mctest.wait_for(lambda: mctest.http_json(px.http_port, "GET", "/health")
                        ["recorder"]["rows_recorded"] >= total, 30, what="rows recorded")
        time.sleep(0.3)
        seen["stop"] = True
        watcher.join(5)
        probe.stop = True
        probe.join(10)
        h = mctest.http_json(px.http_port, "GET", "/health")
        r = h["store"]["retention"]
        self.assertEqual(h["status"], "ok", h)
        self.assertTrue(r["enabled"] and r["bound_reached"], r)
        self.assertGreater(r["rows_expired"], total // 2, r)
        self.assertGreater(r["oldest_row_ns"], 0, r)
        self.assertGreater(seen.get("polls", 0), 10, seen)
        self.assertGreater(seen["max_in_use"], bound // 2, seen)
        self.assertLessEqual(seen["max_in_use"], bound + PAGE, seen)
        st, _, body = mctest.http_request(px.http_port, "GET", "/metrics")
        self.assertEqual(st, 200)
        metrics = dict(line.split(" ", 1) for line in body.decode().splitlines()
                       if line and not line.startswith("#"))
        self.assertEqual(int(metrics["slabtap_rows_expired_total"]), r["rows_expired"])
        self.assertEqual(metrics["slabtap_retention_bound_reached"], "1")
        self.assertGreater(int(metrics["slabtap_oldest_row_timestamp_seconds"]), 0)
        # the file on disk with its WAL, whatever the pages in use are
        got, disk = mctest.db_file_bytes_settled(px)
        self.assertEqual(got, disk)
        print("\n  max-db-size 3m: %d writes, %d expired, %d steps (longest %.1f ms, "
              "%.0f ms in all); probe: %d round trips, worst %.1f ms"
              % (total, r["rows_expired"], r["steps"], r["step_max_us"] / 1000,
                 r["step_total_us"] / 1000, probe.count, probe.worst * 1000), file=sys.stderr)
        self.assertLess(probe.worst, PROBE_MAX_S)
        self.stop_clean(px)

        self.assertLessEqual(os.path.getsize(px.db), bound + PAGE)
        kept = mctest.db_rows(px.db, "SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi,"
                              " sum(conn_id IS NULL OR t_ns IS NULL) AS bad FROM sets"
                              " WHERE key != 'probe'")[0]
        self.assertEqual(kept["bad"], 0)
        self.assertGreater(kept["n"], 0)
        # the newest are kept: no write is missing after the oldest one kept
        span = mctest.db_rows(px.db, "SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi"
                              " FROM sets")[0]
        self.assertEqual(span["n"], span["hi"] - span["lo"] + 1, span)
        # the aggregates count every write, expired or not
        got = {row["body"]: row["n"] for row in mctest.db_rows(
            px.db, "SELECT body, sum(writes) AS n FROM agg_sizes WHERE body != 7"
                   " GROUP BY body")}  # 7: the probe's key (5) + value (2)
        self.assertEqual(got, sizes)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT sum(writes) FROM agg_sizes"),
                         total + probe.count)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT sum(writes) FROM agg_latency"),
                         total + probe.count)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT rows_recorded FROM runs"),
                         total + probe.count)

    def test_retain_age(self):
        # The old rows go first, then the new ones are sent: expiry runs in
        # steps between the writer's batches (an idle writer's only batches
        # are the 200 ms stats samples), so on a slow machine expiring
        # 20,000 rows can take seconds; sending the new rows only once the
        # old ones are gone keeps the new ones young whatever that takes.
        # --retain 8s: the new rows are 8 s from expiring when they arrive,
        # time enough to check and stop.
        mc = self.mc()
        px = self.proxy(mc.port, http=True, extra=["--retain", "8s",
                                                   "--stats-interval", "200"])

        def retention():
            return mctest.http_json(px.http_port, "GET", "/health")["store"]["retention"]

        send_sets(px.port, 1, 20000, prefix=b"old")
        mctest.wait_for(lambda: retention()["rows_expired"] >= 20000, 60, what="expiry")
        self.assertEqual(retention()["rows_expired"], 20000)
        t_new = time.time_ns()
        send_sets(px.port, 20001, 5000, prefix=b"new")
        mctest.wait_for(lambda: mctest.http_json(px.http_port, "GET", "/health")
                        ["recorder"]["rows_recorded"] >= 25000, 30, what="the new rows")
        # the oldest row kept is a new one once a step has looked again
        mctest.wait_for(lambda: retention()["oldest_row_ns"] >= t_new - 50_000_000, 10,
                        what="the oldest row kept to be a new one")
        r = retention()
        self.assertEqual(r["rows_expired"], 20000, r)
        self.stop_clean(px)
        self.assertLess(time.time_ns() - t_new, 8_000_000_000,
                        "too slow to check before the new rows expire")
        kept = mctest.db_rows(px.db, "SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi"
                              " FROM sets")[0]
        self.assertEqual((kept["n"], kept["lo"], kept["hi"]), (5000, 20001, 25000))
        self.assertEqual(mctest.db_scalar(px.db, "SELECT sum(writes) FROM agg_sizes"), 25000)
        # no arrival is left below the one the oldest kept write needs
        self.assertEqual(mctest.db_scalar(px.db, "SELECT min(rowid) FROM arrivals"),
                         mctest.db_scalar(px.db, "SELECT max(rowid) FROM arrivals WHERE rowid <="
                                          " (SELECT min(rowid) FROM writes)"))

    def test_rotation(self):
        mc = self.mc()
        pattern = self.path("r-%H%M%S.db")
        px = self.proxy(mc.port, db=pattern, extra=["--stats-interval", "200"])
        total, step = 0, 15000
        t_end = time.monotonic() + 3.2
        while time.monotonic() < t_end:
            send_sets(px.port, total + 1, step)
            total += step
            time.sleep(0.2)
        self.stop_clean(px)
        files = sorted(glob.glob(self.path("r-*.db")))
        files = [f for f in files if not f.endswith(("-wal", "-shm"))]
        self.assertGreaterEqual(len(files), 3, files)
        seqs, with_rows, carried = [], [], False
        for f in files:
            runs = mctest.db_rows(f, "SELECT name, rows_recorded, crashed FROM runs")
            self.assertEqual(len(runs), 1, (f, runs))
            self.assertEqual(runs[0]["name"], "proxy")
            self.assertEqual(runs[0]["crashed"], 0)
            # settings and the ladder: carried into every file from the first
            # that has them (a file of the first second may precede them)
            has = (mctest.db_scalar(f, "SELECT count(*) FROM settings"),
                   mctest.db_scalar(f, "SELECT count(*) FROM run_meta WHERE key = 'ladder'"))
            if carried or has != (0, 0):
                self.assertEqual(has, (1, 1), f)
                carried = True
            s = [row["seq"] for row in mctest.db_rows(f, "SELECT seq FROM sets")]
            self.assertEqual(len(s), runs[0]["rows_recorded"], f)
            self.assertEqual(mctest.db_scalar(f, "SELECT coalesce(sum(writes), 0)"
                                              " FROM agg_sizes"), len(s), f)
            seqs += s
            if s:
                with_rows.append(f)
        self.assertTrue(carried)
        self.assertEqual(sorted(seqs), list(range(1, total + 1)))
        # one day's file alone is a whole run for the model
        rc, out, err = mctest.run_slabtap(["model", "predict", "--db", with_rows[-1]])
        self.assertEqual(rc, 0, err)
        # the recipe: the files attached together (at most 10 at once)
        script = os.path.join(mctest.SRC, "schema", "queries", "attach_days.sh")
        sql = subprocess.run(["bash", script] + files[-10:], capture_output=True, check=True,
                             text=True).stdout
        sql += "SELECT count(*), count(DISTINCT seq) FROM days_sets;\n"
        out = subprocess.run(["sqlite3", ":memory:"], input=sql, capture_output=True,
                             text=True, check=True).stdout.strip().splitlines()[-1]
        n = sum(mctest.db_scalar(f, "SELECT count(*) FROM writes") for f in files[-10:])
        self.assertEqual(out, "%d|%d" % (n, n))


if __name__ == "__main__":
    unittest.main(verbosity=2)
