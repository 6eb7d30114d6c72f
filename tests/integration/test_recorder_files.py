#!/usr/bin/env python3
"""Rows that vanish unseen (issue 18): the SQLite file the proxy writes, and
what it says about it.

- The file and its WAL deleted under load: seen within a check
  (REC_FILE_CHECK_MS), /health 503 (file_deleted) until a new file at the
  path is open and checked, the writes of the deleted file counted lost
  (file_deleted) and recording goes on in a new file (run_meta
  started_because). Exactly: rows in the new file + counted lost = sets sent
  (every reason, in the last line and in the runs row).
- The WAL alone deleted under load, then kill -9: its committed rows are
  checkpointed into the file and a new WAL made, so every row the proxy
  said it recorded is in the file after the kill.
- --max-db-size 6m on a 9 MB file system (bound + SQLite's WAL do not fit):
  said once at start, the WAL kept smaller, recording never stops, nothing
  lost.
- A disk-full exit: the runs row and the last line agree with the file and
  with what was counted (every reason).
- Readers (model predict, load --replay-db) on a file a proxy records into
  read it; on a file cut short, or something else, each says what is wrong.

The small file systems are tmpfs mounts (root only; skipped otherwise).
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

HOST = mctest.HOST


def send_sets(port, start, n, prefix=b"k", vlen=100):
    """n pipelined `set ... noreply`, then mn: all of them are done."""
    with socket.create_connection((HOST, port), timeout=120) as s:
        buf = bytearray()
        for i in range(start, start + n):
            buf += b"set %s:%d 0 0 %d noreply\r\n" % (prefix, i, vlen) + b"v" * vlen + b"\r\n"
            if len(buf) > 128 * 1024:
                s.sendall(buf)
                buf = bytearray()
        s.sendall(bytes(buf) + b"mn\r\n")
        line = mctest.recv_line(s, timeout=120)
        assert line == b"MN\r\n", line
    return n


class Loader(threading.Thread):
    """Batches of pipelined sets until told to stop; sent: the sets of the
    batches that were answered (mn)."""

    def __init__(self, port, prefix, batch=5000):
        super().__init__(daemon=True)
        self.port, self.prefix, self.batch = port, prefix, batch
        self.sent, self.error = 0, None
        self.stop = threading.Event()

    def run(self):
        try:
            while not self.stop.is_set():
                self.sent += send_sets(self.port, self.sent, self.batch, self.prefix)
        except Exception as e:  # reported by the test
            self.error = e


def health(px):
    st, _, body = mctest.http_request(px.http_port, "GET", "/health")
    return st, json.loads(body)


def faults(h):
    """File faults seen (store.file.faults; 0 from a proxy that has none)."""
    return h["store"].get("file", {}).get("faults", 0)


def done(h):
    """Rows recorded + counted lost, every reason."""
    return h["recorder"]["rows_recorded"] + sum(h["recorder"]["lost"].values())


def last_line(px):
    m = re.search(r"stopped; (\d+) rows recorded, (\d+) (?:lost|dropped)", px.stderr_text())
    assert m, px.stderr_text()[-2000:]
    return int(m.group(1)), int(m.group(2))


def mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", path],
                       capture_output=True)
    return r.returncode == 0


class FileDeleted(mctest.ServerTestCase):
    workdir_prefix = "slabtap-recfiles-"

    def test_file_and_wal_deleted_under_load(self):
        mc = self.mc(name="mc-del", extra=["-m", "256"])
        db = self.path("runs.db")
        px = self.proxy(mc.port, name="proxy-del", db=db, http=True)
        before = send_sets(px.port, 0, 50000, b"a")
        mctest.wait_for(lambda: health(px)[1]["recorder"]["rows_recorded"] == before, 30,
                        what="the first rows recorded")
        load = Loader(px.port, b"b")
        load.start()
        time.sleep(0.3)
        t_rm = time.monotonic()
        os.remove(db)
        os.remove(db + "-wal")
        seen = None
        statuses = set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            st, h = health(px)
            if faults(h) >= 1:
                seen = seen or time.monotonic()
                statuses.add((st, h["status"]))
                if st == 200:
                    break
            time.sleep(0.01)
        self.assertIsNotNone(seen, "the deleted file was not seen within 10 s")
        latency = seen - t_rm
        self.assertIn((503, "file_deleted"), statuses)
        time.sleep(0.5)
        load.stop.set()
        load.join(60)
        self.assertIsNone(load.error)
        after = send_sets(px.port, 0, 20000, b"c")
        sent = before + load.sent + after
        mctest.wait_for(lambda: done(health(px)[1]) == sent, 30,
                        what="every row recorded or counted")
        _, h = health(px)
        lost = h["recorder"]["lost"]["file_deleted"]
        self.assertEqual(h["status"], "ok")
        self.stop_clean(px)
        self.assertTrue(os.path.exists(db), "no new file at the path")
        rows = mctest.db_scalar(db, "SELECT count(*) FROM writes")
        run = mctest.db_rows(db, "SELECT run_id, rows_recorded, rows_dropped FROM runs")
        why = mctest.db_rows(db, "SELECT value FROM run_meta WHERE key = 'started_because'")
        recorded, counted = last_line(px)
        print("\n# file deleted: seen %.3f s after rm; %d sets sent, %d in the new file, "
              "%d counted lost (file_deleted)" % (latency, sent, rows, lost), file=sys.stderr)
        self.assertGreater(lost, before - 1, "the rows of the deleted file are not all counted")
        self.assertGreater(rows, 0)
        # exact: recorded counts only rows in files that still exist
        self.assertEqual(rows + lost, sent)
        self.assertEqual((recorded, counted), (rows, lost))
        self.assertEqual(len(run), 1)
        self.assertEqual((run[0]["rows_recorded"], run[0]["rows_dropped"]), (rows, lost))
        self.assertEqual(len(why), 1)
        self.assertTrue(why[0]["value"].startswith("file_deleted:"), why[0]["value"])
        self.assertIn("was deleted while recording", px.stderr_text())
        self.assertLess(latency, 3.0)

    def test_wal_deleted_then_kill9(self):
        mc = self.mc(name="mc-wal", extra=["-m", "256"])
        db = self.path("runs.db")
        px = self.proxy(mc.port, name="proxy-wal", db=db, http=True)
        load = Loader(px.port, b"w")
        load.start()
        time.sleep(0.5)
        os.remove(db + "-wal")
        # seen within a check (REC_FILE_CHECK_MS), and /health 200 again
        # after the next one
        time.sleep(2.5)
        st, h = health(px)
        load.stop.set()
        load.join(60)
        self.assertIsNone(load.error)
        sent = load.sent
        mctest.wait_for(lambda: health(px)[1]["recorder"]["rows_recorded"] == sent, 30,
                        what="every row recorded")
        px.signal(signal.SIGKILL)
        px.wait(10)
        px.kill_hard()
        rows = mctest.db_scalar(db, "SELECT count(*) FROM writes")
        print("\n# WAL deleted, then kill -9: %d sets recorded, %d rows in the file"
              % (sent, rows), file=sys.stderr)
        self.assertEqual(rows, sent)
        self.assertEqual(st, 200)
        self.assertGreaterEqual(faults(h), 1, "the deleted WAL was not seen")
        self.assertIn("-wal was deleted while recording", px.stderr_text())


class SmallDisk(mctest.ServerTestCase):
    workdir_prefix = "slabtap-recdisk-"

    def mount(self, size):
        if os.geteuid() != 0:
            self.skipTest("mounting a small tmpfs needs root")
        disk = self.path("disk")
        if not mount_tmpfs(disk, size):
            self.skipTest("cannot mount a tmpfs here (mount -t tmpfs failed)")
        self.addCleanup(lambda: subprocess.run(["umount", "-l", disk]))
        return disk

    def test_bound_and_wal_do_not_fit(self):
        disk = self.mount("9m")
        mc = self.mc(name="mc-small", extra=["-m", "512"])
        db = os.path.join(disk, "runs.db")
        px = self.proxy(mc.port, name="proxy-small", db=db, http=True,
                        extra=["--max-db-size", "6m"])
        sent = 0
        for k in range(6):
            sent += send_sets(px.port, 0, 100000, b"s%d" % k)
        mctest.wait_for(lambda: done(health(px)[1]) == sent, 60,
                        what="every row recorded or counted")
        st, h = health(px)
        self.assertEqual(sum(h["recorder"]["lost"].values()), 0, h["recorder"])
        self.assertEqual((st, h["status"]), (200, "ok"), h)
        self.assertGreater(h["store"]["retention"]["rows_expired"], 0)
        self.stop_clean(px)
        self.assertRegex(px.stderr_text(), r"--max-db-size \d+ and SQLite's WAL")
        run = mctest.db_rows(db, "SELECT rows_recorded, rows_dropped FROM runs")[0]
        self.assertEqual((run["rows_recorded"], run["rows_dropped"]), (sent, 0))
        self.assertLessEqual(os.path.getsize(db), 6 * 1024 * 1024 + 4096)
        self.assertEqual(last_line(px), (sent, 0))

    def test_disk_full_exit_counts_agree(self):
        disk = self.mount("4m")
        mc = self.mc(name="mc-fullexit", extra=["-m", "256"])
        db = os.path.join(disk, "runs.db")
        px = self.proxy(mc.port, name="proxy-fullexit", db=db, http=True,
                        extra=["--max-stall", "300", "--queue", "4096"])
        st = os.statvfs(disk)
        filler = os.path.join(disk, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - 1536 * 1024))
        sent = 0
        for k in range(4):
            sent += send_sets(px.port, 0, 50000, b"f%d" % k)
        mctest.wait_for(lambda: health(px)[1]["status"] == "recorder_failing", 30,
                        what="the disk full")
        rc = px.stop()
        self.assertIn(rc, (0, 1))
        os.remove(filler)  # so that the file can be read
        rows = mctest.db_scalar(db, "SELECT count(*) FROM writes")
        run = mctest.db_rows(db, "SELECT rows_recorded, rows_dropped FROM runs")[0]
        recorded, lost = last_line(px)
        print("\n# disk-full exit: %d sent, %d rows in the file, runs row %d / %d, last line "
              "%d / %d" % (sent, rows, run["rows_recorded"], run["rows_dropped"], recorded,
                           lost), file=sys.stderr)
        self.assertGreater(rows, 0)
        self.assertEqual(run["rows_recorded"], rows)
        self.assertEqual(recorded, rows)
        self.assertEqual(run["rows_dropped"], lost)
        self.assertEqual(rows + lost, sent)


class Readers(mctest.ServerTestCase):
    workdir_prefix = "slabtap-readers-"

    def test_readers_say_what_is_wrong(self):
        mc = self.mc(name="mc-readers")
        db = self.path("held.db")
        px = self.proxy(mc.port, name="proxy-readers", db=db)
        send_sets(px.port, 0, 100, b"r")
        readers = [["model", "predict", "--db"], ["model", "advise", "--db"],
                   ["load", "--target", "%s:%d" % (HOST, mc.port), "--replay-db"]]
        # a file being recorded is read (test_live_sql.py: while a load runs)
        mctest.wait_for(lambda: mctest.db_scalar(db, "SELECT count(*) FROM sets") == 100, 60,
                        interval=0.05, what="the sets committed")
        for r in readers:
            rc, out, err = mctest.run_slabtap(r + [db], timeout=60)
            self.assertEqual(rc, 0, out + err)
            self.assertNotIn("locked", err)
        self.stop_clean(px)
        cut = self.path("cut.db")
        with open(db, "rb") as f, open(cut, "wb") as g:
            g.write(f.read()[:20000])
        other = self.path("other.db")
        shutil.copy(os.path.join(mctest.SRC, "CMakeLists.txt"), other)
        for path, want in ((cut, "half-written"), (other, "not a SQLite database")):
            for r in readers:
                rc, _, err = mctest.run_slabtap(r + [path], timeout=60)
                self.assertNotEqual(rc, 0)
                self.assertIn(want, err)
                self.assertNotIn("no run at all", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
