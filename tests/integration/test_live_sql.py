#!/usr/bin/env python3
"""SQL on the live run (issue 20; docs/live-sql.md): the SQLite file a proxy
records into is read while it is written.

- While a load runs through the proxy: the sqlite3 CLI's `count(*)` of the
  run's writes grows from one read to the next, `slabtap model predict --db`
  answers about the running run, `slabtap load --replay-db` replays it (the
  writes committed when it starts), and the proxy's clients see no error;
  at the end every write sent is in the file.
- A second `slabtap proxy --db` on the same file is refused, naming the
  first (pid, start, command line from FILE.lock), and leaves the first
  one's run alone (not marked crashed); once the first stops, FILE.lock is
  gone and the file can be recorded into again.
- --db in a directory that does not exist: said so.
- A file held exclusively by another program: every reader says "database
  is locked by pid N (its command line)", never "no run" nor "is it a
  slabtap database?".
- Checkpoint starvation: a reader holding one snapshot (BEGIN; SELECT; left
  open) during a load. The WAL stays within --wal-max (plus one batch);
  past it rows are counted lost (wal_full), logged once with the reader's
  pid; clients get every answer; once the reader ends, recording resumes;
  rows in the file + rows counted lost = writes sent.
"""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

HOST = mctest.HOST

# a reader in another process: BEGIN, one SELECT (its snapshot), then waits
# for a line on stdin (or EOF) before it ends the read
HOLD_SNAPSHOT = r"""
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
con.execute("BEGIN")
print(con.execute("SELECT count(*) FROM writes").fetchone()[0], flush=True)
sys.stdin.readline()
con.execute("COMMIT")
print("done", flush=True)
"""

# a program holding the file exclusively (SQLite's own locking_mode
# exclusive, after a read): every other reader gets SQLITE_BUSY
HOLD_EXCLUSIVE = r"""
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
con.execute("PRAGMA locking_mode = EXCLUSIVE")
con.execute("BEGIN EXCLUSIVE")
con.execute("SELECT count(*) FROM runs").fetchone()
print("held", flush=True)
sys.stdin.readline()
"""


def load_proc(port, wl, extra=()):
    return subprocess.Popen([mctest.SLABTAP, "load", "--target", "%s:%d" % (HOST, port),
                             "--workload", wl, "-q"] + list(extra),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=mctest.slabtap_env())


def load_result(tc, p, timeout=300):
    out, err = p.communicate(timeout=timeout)
    out, err = out.decode(), err.decode()
    tc.assertEqual(p.returncode, 0, out + err)
    tc.assertEqual(mctest.sanitizer_errors(err), [], err[-4000:])
    tc.assertRegex(out, r"(?m)^errors:\s+0$", out)
    return out


def sqlite3_count(db):
    """The sqlite3 CLI's count of run 1's writes: (rc, count or None, stderr)."""
    r = subprocess.run(["sqlite3", db, "SELECT count(*) FROM sets WHERE run_id = 1"],
                       capture_output=True, timeout=60)
    out = r.stdout.decode().strip()
    return r.returncode, int(out) if out.isdigit() else None, r.stderr.decode()


def lost_wal_full(px):
    return int(mctest.proxy_metrics(px).get('slabtap_rows_lost_total{reason="wal_full"}', 0))


class LiveSql(mctest.ServerTestCase):
    workdir_prefix = "slabtap-live-"

    def test_readers_while_recording(self):
        mc = self.mc(extra=["-m", "256"])
        px = self.proxy(mc.port, http=True)
        n = 150000
        wl = self.write("live.wl", "connections 2\npipeline 16\nseed 7\n"
                        "set %d key=l:{rand:60000} size=uniform(10,400)\n" % n)
        load = load_proc(px.port, wl, ["--rate", "15000"])
        counts = []
        try:
            # bounded: the load lasts about 10 s; at most 300 reads
            for _ in range(300):
                rc, c, err = sqlite3_count(px.db)
                self.assertEqual(rc, 0, err)
                self.assertEqual(err, "")
                counts.append(c)
                if len(set(counts)) >= 4 or load.poll() is not None:
                    break
            self.assertGreaterEqual(len(set(counts)), 3, counts)
            self.assertEqual(counts, sorted(counts))
            # the model reads the running run
            rc, out, err = mctest.run_slabtap(["model", "predict", "--db", px.db], timeout=120)
            self.assertEqual(rc, 0, out + err)
            self.assertIn("run 1 'proxy'", out)
            self.assertNotIn("locked", err)
            # and the running run replays into another memcached
            mc2 = self.mc(name="mc-replay", extra=["-m", "256"])
            rc, out, err = mctest.run_slabtap(["load", "--target", "%s:%d" % (HOST, mc2.port),
                                               "--replay-db", px.db, "-q"], timeout=240)
            self.assertEqual(rc, 0, out + err)
            replayed = int(re.search(r"(?m)^ops:\s+(\d+)", out).group(1))
            self.assertGreater(replayed, 0, out)
            self.assertLessEqual(replayed, n)
        finally:
            load_result(self, load)
        mctest.wait_for(lambda: mctest.http_json(px.http_port, "GET", "/health")
                        ["recorder"]["rows_recorded"] >= n, 60, what="every write recorded")
        self.stop_clean(px)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM sets"), n)
        self.assertEqual(mctest.db_rows(px.db, "SELECT rows_recorded, rows_dropped, crashed"
                                               " FROM runs"),
                         [dict(rows_recorded=n, rows_dropped=0, crashed=0)])

    def test_second_writer_names_the_first(self):
        mc = self.mc()
        px = self.proxy(mc.port)
        rc, out, err = mctest.run_slabtap(
            ["proxy", "--listen", "%s:0" % HOST, "--upstream", "%s:%d" % (HOST, mc.port),
             "--db", px.db, "--http", "off"], timeout=60)
        self.assertNotEqual(rc, 0)
        self.assertIn("%s is being recorded by slabtap proxy pid %d (started " % (px.db, px.pid),
                      err)
        self.assertIn("--upstream %s:%d" % (HOST, mc.port), err)
        self.assertIn("use another --db", err)
        with open(px.db + ".lock") as f:
            self.assertIn("pid %d\n" % px.pid, f.read())
        self.stop_clean(px)
        # the refused one did not touch the file: one run, ended cleanly
        self.assertEqual(mctest.db_rows(px.db, "SELECT run_id, crashed FROM runs"),
                         [dict(run_id=1, crashed=0)])
        self.assertFalse(os.path.exists(px.db + ".lock"))
        px2 = self.proxy(mc.port, db=px.db, name="proxy-again")
        self.stop_clean(px2)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM runs"), 2)

    def test_missing_directory(self):
        mc = self.mc()
        missing = self.path("no/such/dir")
        rc, out, err = mctest.run_slabtap(
            ["proxy", "--listen", "%s:0" % HOST, "--upstream", "%s:%d" % (HOST, mc.port),
             "--db", os.path.join(missing, "runs.db"), "--http", "off"], timeout=60)
        self.assertNotEqual(rc, 0)
        self.assertIn("the directory %s does not exist" % missing, err)
        self.assertFalse(os.path.exists(self.path("no")))

    def test_locked_by_another_program(self):
        mc = self.mc()
        px = self.proxy(mc.port)
        self.stop_clean(px)
        holder = subprocess.Popen([sys.executable, "-c", HOLD_EXCLUSIVE, px.db],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.addCleanup(holder.stdout.close)
        try:
            self.assertEqual(holder.stdout.readline(), b"held\n")
            readers = [["model", "predict", "--db"],
                       ["load", "--target", "%s:%d" % (HOST, mc.port), "--replay-db"]]
            for r in readers:
                rc, _, err = mctest.run_slabtap(r + [px.db], timeout=60)
                self.assertNotEqual(rc, 0)
                self.assertIn("database is locked by pid %d (" % holder.pid, err)
                self.assertNotIn("no run", err)
                self.assertNotIn("is it a slabtap database", err)
        finally:
            holder.stdin.close()
            holder.wait(timeout=30)

    def test_reader_holding_a_snapshot(self):
        wal_max = 8 << 20
        mc = self.mc(extra=["-m", "512"])
        px = self.proxy(mc.port, http=True, extra=["--wal-max", "8m"])
        n = 400000
        wl = self.write("starve.wl", "connections 2\npipeline 32\nseed 5\n"
                        "set %d key=s:{rand:200000} size=uniform(10,400)\n" % n)
        load = load_proc(px.port, wl, ["--rate", "20000"])
        reader = None
        try:
            mctest.wait_for(lambda: (sqlite3_count(px.db)[1] or 0) > 5000, 120,
                            interval=0.1, what="rows before the reader")
            reader = subprocess.Popen([sys.executable, "-c", HOLD_SNAPSHOT, px.db],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self.addCleanup(reader.stdout.close)
            self.addCleanup(reader.stdin.close)
            held = int(reader.stdout.readline())
            self.assertGreater(held, 0)
            mctest.wait_for(lambda: lost_wal_full(px) > 0 or load.poll() is not None, 240,
                            interval=0.1, what="rows counted wal_full")
            self.assertGreater(lost_wal_full(px), 0, "the load ended before the WAL filled")
            # the WAL stays within the bound and one batch (a few hundred KB)
            wal = os.path.getsize(px.db + "-wal")
            self.assertLessEqual(wal, wal_max + (2 << 20), wal)
            log = px.stderr_text()
            self.assertIn("past --wal-max", log)
            self.assertIn("pid %d (" % reader.pid, log)
            reader.stdin.write(b"\n")
            reader.stdin.flush()
            self.assertEqual(reader.stdout.readline(), b"done\n")
            reader.wait(timeout=30)
            mctest.wait_for(lambda: "started over" in px.stderr_text()
                            or load.poll() is not None, 240, interval=0.1,
                            what="recording resumed")
        finally:
            if reader and reader.poll() is None:
                reader.kill()
                reader.wait()
            load_result(self, load)
        lost = lost_wal_full(px)
        self.assertLessEqual(os.path.getsize(px.db + "-wal"), wal_max + (2 << 20))
        self.stop_clean(px)
        self.assertIn("started over", px.stderr_text())
        recorded = mctest.db_scalar(px.db, "SELECT count(*) FROM sets")
        run = mctest.db_rows(px.db, "SELECT rows_recorded, rows_dropped FROM runs")[0]
        self.assertEqual(run["rows_recorded"], recorded)
        self.assertEqual(run["rows_dropped"], lost)
        self.assertEqual(recorded + lost, n)
        # rows written after the reader ended: recording resumed
        self.assertGreater(recorded, held)


if __name__ == "__main__":
    unittest.main(verbosity=2)
