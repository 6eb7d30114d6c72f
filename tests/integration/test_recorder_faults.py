#!/usr/bin/env python3
"""A failing recorder never takes the application down and never hides a
lost row: with the database on a full disk, clients wait at most about
--max-stall, every write is either recorded or counted as lost (by reason,
in the runs row, /health and /metrics), and recording resumes by itself
when space comes back. A second SIGTERM stops waiting for a store that
still fails. The disk is a small tmpfs the test mounts (root only)."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402


def mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path],
                       capture_output=True)
    return r.returncode == 0


def metric(body, name, labels=""):
    for line in body.splitlines():
        if line.startswith(name + labels + " "):
            return int(float(line.split()[-1]))
    return None


class Writer(threading.Thread):
    """Sets in a loop on its own connection, one at a time, timing each; stops
    when told. Counts what memcached answered."""

    def __init__(self, port, prefix):
        super().__init__(daemon=True)
        self.port, self.prefix = port, prefix
        self.sent = self.stored = 0
        self.worst = 0.0
        self.stop = threading.Event()
        self.error = None

    def run(self):
        try:
            with mctest.connect(self.port, timeout=30) as s:
                i = 0
                while not self.stop.is_set():
                    t = time.monotonic()
                    s.sendall(b"set %s:%d 0 0 100\r\n%s\r\n" % (self.prefix, i, b"v" * 100))
                    self.sent += 1
                    line = mctest.recv_line(s, timeout=30)
                    self.worst = max(self.worst, time.monotonic() - t)
                    self.stored += line == b"STORED\r\n"
                    i += 1
        except Exception as e:  # reported by the test
            self.error = e


class RecorderFaults(mctest.ServerTestCase):
    workdir_prefix = "slabtap-recfault-"

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("mounting a small tmpfs needs root")
        self.disk = self.path("disk")
        if not mount_tmpfs(self.disk, "4m"):
            self.skipTest("cannot mount a tmpfs here")
        self.addCleanup(lambda: subprocess.run(["umount", "-l", self.disk]))

    def health(self, px):
        _, _, body = mctest.http_request(px.http_port, "GET", "/health")
        return json.loads(body)

    def metrics(self, px):
        _, _, body = mctest.http_request(px.http_port, "GET", "/metrics")
        return body.decode()

    def fill_disk(self, leave_kb):
        """A filler file taking all but leave_kb of the tmpfs."""
        st = os.statvfs(self.disk)
        free = st.f_bavail * st.f_frsize
        filler = os.path.join(self.disk, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, free - leave_kb * 1024))
        return filler

    def test_disk_full_then_space_back(self):
        mc = self.mc(name="mc-full", extra=["-m", "256"])
        db = os.path.join(self.disk, "runs.db")
        px = self.proxy(mc.port, name="proxy-full", db=db, http=True,
                        extra=["--max-stall", "400", "--queue", "2048"])
        filler = self.fill_disk(leave_kb=96)
        writers = [Writer(px.port, b"w%d" % k) for k in range(3)]
        for w in writers:
            w.start()
        mctest.wait_for(lambda: self.health(px)["status"] == "recorder_failing", 30,
                        what="the recorder failing on the full disk")
        mctest.wait_for(lambda: (metric(self.metrics(px), "slabtap_rows_lost_total",
                                        '{reason="write_error"}') or 0) > 0, 30,
                        what="rows lost (write_error) counted")
        st, _, _ = mctest.http_request(px.http_port, "GET", "/health")
        self.assertEqual(st, 503)
        sent_failing = sum(w.sent for w in writers)
        time.sleep(1.0)
        self.assertGreater(sum(w.sent for w in writers), sent_failing + 100,
                           "clients stalled while the store fails")
        os.remove(filler)  # space comes back
        mctest.wait_for(lambda: self.health(px)["status"] == "ok", 30,
                        what="recording again once space is back")
        time.sleep(0.5)
        for w in writers:
            w.stop.set()
        for w in writers:
            w.join(30)
            self.assertIsNone(w.error)
        rc = px.stop()
        px.assert_clean_exit(self, rc)
        sent = sum(w.sent for w in writers)
        stored = sum(w.stored for w in writers)
        worst = max(w.worst for w in writers)
        run = mctest.db_rows(db, "SELECT rows_recorded, rows_dropped FROM runs")[0]
        rows = mctest.db_scalar(db, "SELECT count(*) FROM sets")
        print("\n# disk full: %d sets sent (%d STORED), %d rows recorded, %d counted lost; "
              "worst set round trip %.3f s" % (sent, stored, rows, run["rows_dropped"], worst),
              file=sys.stderr)
        self.assertEqual(stored, sent, "memcached answered every set")
        self.assertEqual(run["rows_recorded"], rows)
        # nothing lost silently: every write is a row or a counted loss
        self.assertEqual(rows + run["rows_dropped"], sent)
        self.assertGreater(run["rows_dropped"], 0)
        # the stall bound: --max-stall 400 ms, and then some for a busy machine
        self.assertLess(worst, 5.0)
        self.assertIn("recording every row again", px.stderr_text())

    def test_second_sigterm_gives_up_on_a_failing_store(self):
        mc = self.mc(name="mc-give-up")
        db = os.path.join(self.disk, "runs.db")
        px = self.proxy(mc.port, name="proxy-give-up", db=db, http=True,
                        extra=["--max-stall", "300"])
        self.fill_disk(leave_kb=64)
        w = Writer(px.port, b"g")
        w.start()
        mctest.wait_for(lambda: self.health(px)["status"] == "recorder_failing", 30,
                        what="the recorder failing")
        w.stop.set()
        w.join(30)
        t = time.monotonic()
        px.signal(signal.SIGTERM)
        time.sleep(0.3)
        px.signal(signal.SIGTERM)
        rc = px.wait(30)
        took = time.monotonic() - t
        px.kill_hard()
        self.assertLess(took, 10.0, "exit after the second SIGTERM took %.1f s" % took)
        self.assertIn("giving up", px.stderr_text())
        self.assertRegex(px.stderr_text(), r"writes not recorded|rows that do not fit")
        self.assertIn(rc, (0, 1))


if __name__ == "__main__":
    unittest.main(verbosity=2)
