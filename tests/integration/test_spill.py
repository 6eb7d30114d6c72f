#!/usr/bin/python3
"""test_spill: the PostgreSQL spill's faults (docs/fleet.md: --spill,
--spill-max, exactly-once shipping by batch number).

A throwaway PostgreSQL (pgcluster.py), a real memcached, one proxy with
--db postgresql://... --spill FILE:

- 01 full spill: PostgreSQL stopped, --spill-max 1m (a few batches: a
  batch larger than the bound is refused whole, and one of REC_WAKE_ROWS
  rows is ~300 KB, so at the flag's minimum, 64k, nothing would ever wait
  in the spill): the rows past it are dropped and counted (spill_full, in /metrics and in the
  runs row), no client sees an error or waits past --max-stall (plus
  slack); once PostgreSQL is back, rows recorded + counted lost = writes
  sent, each recorded once.
- 02 kill -9 with a spill waiting and PostgreSQL down; PostgreSQL started,
  a new proxy with the same --spill and --node ships it at start: every
  write sent is in PostgreSQL exactly once (seq unique per run), and the
  log says so.
- 03 a damaged spill file at start (garbage bytes; a truncated file): the
  proxy starts, moves the file aside (FILE.damaged-...) with a warning that
  names both files, and records into a fresh spill; the damaged file is
  kept as it was (nothing silently lost, nothing garbage shipped).
- 04 the lost COMMIT answer: a relay between the proxy and PostgreSQL cuts
  the connection right after the server's CommandComplete "COMMIT" of a
  batch and before the proxy reads it; the batch is committed, the proxy
  sees a failure, tries again, finds committed_batch and does not send it
  twice: every write exactly once.

Needs PostgreSQL (initdb). 127.0.0.1 only; bounded waits.
"""
import os
import re
import signal
import socket
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
import pgcluster  # noqa: E402
from test_fleet import metric, restart_pg, stop_pg  # noqa: E402

from pymemcache.client.base import Client  # noqa: E402

MAX_STALL_MS = 300
SLACK_S = 2.0  # an ASan build and a busy 2-core machine


def http_get(px, path):
    return mctest.http_request(px.http_port, "GET", path)[2].decode()


class Relay:
    """A TCP relay 127.0.0.1:port -> PostgreSQL that, once armed, cuts the
    connection right after the server's CommandComplete "COMMIT" of a batch
    of rows (the server has committed; the client never reads the answer).
    A batch's transaction is the one that sends its number (the
    "committed_batch" run_meta key); the aggregates' own flush, which
    commits on its timer between batches, is let through."""

    def __init__(self, target_port):
        self.target = target_port
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.port = self.ls.getsockname()[1]
        self.armed = threading.Event()
        self.batch_sent = threading.Event()  # armed, and a batch's number went up
        self.cut = threading.Event()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.closed = True
        try:
            self.ls.close()
        except OSError:
            pass

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            try:
                s = socket.create_connection(("127.0.0.1", self.target), timeout=10)
                s.settimeout(None)
            except OSError:
                c.close()
                continue
            threading.Thread(target=self._up, args=(c, s), daemon=True).start()
            threading.Thread(target=self._down, args=(s, c), daemon=True).start()

    def _up(self, c, s):
        tail = b""  # the key may straddle two reads
        try:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                # one writer thread, one transaction at a time: the next
                # COMMIT answered after this is that batch's
                if self.armed.is_set() and b"committed_batch" in tail + d:
                    self.batch_sent.set()
                tail = d[-32:]
                s.sendall(d)
        except OSError:
            pass
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _down(self, s, c):
        """Server to client, message by message (sslmode/gssencmode disabled:
        every message is typed)."""
        buf = b""
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                buf += d
                out = b""
                while len(buf) >= 5:
                    n = struct.unpack("!I", buf[1:5])[0]
                    if len(buf) < 1 + n:
                        break
                    msg, buf = buf[:1 + n], buf[1 + n:]
                    if (msg[:1] == b"C" and msg[5:].rstrip(b"\0") == b"COMMIT"
                            and self.batch_sent.is_set() and not self.cut.is_set()):
                        self.cut.set()
                        c.sendall(out)
                        raise OSError("cut after COMMIT")
                    out += msg
                if out:
                    c.sendall(out)
        except OSError:
            pass
        for x in (c, s):
            try:
                x.shutdown(socket.SHUT_RDWR)
                x.close()
            except OSError:
                pass


class SpillTest(mctest.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.pg = pgcluster.PgCluster()
        cls.addClassCleanup(cls.pg.stop)

    def setUp(self):
        super().setUp()
        if self.pg.proc is None or self.pg.proc.poll() is not None:
            restart_pg(self.pg)  # an earlier test failed with it stopped
        if self.pg.scalar("SELECT to_regclass('writes') IS NULL") == "f":
            self.pg.psql("TRUNCATE writes, runs, samples, sample_classes, settings, phases,"
                         " run_meta, get_counts CASCADE")

    def spill_proxy(self, mc, spill, extra=(), name="proxy", uri=None):
        return self.proxy(mc.port, db=uri or self.pg.uri(), http=True, name=name,
                          extra=["--node", "node-s", "--spill", spill,
                                 "--max-stall", str(MAX_STALL_MS)] + list(extra))

    def sets(self, px, start, count, value=b"v" * 200):
        """count sets, each timed; returns the slowest answer (s)."""
        c = Client(("127.0.0.1", px.port), timeout=10, connect_timeout=10)
        slowest = 0.0
        try:
            for i in range(start, start + count):
                t0 = time.monotonic()
                self.assertTrue(c.set("spill:%d" % i, value, noreply=False), "set %d" % i)
                slowest = max(slowest, time.monotonic() - t0)
        finally:
            c.quit()
        return slowest

    def pg_writes(self):
        """(rows, distinct (run_id, seq)) in PostgreSQL."""
        r = self.pg.psql("SELECT count(*), count(DISTINCT (run_id, seq)) FROM writes")[0]
        return int(r[0]), int(r[1])

    # --- 01 ------------------------------------------------------------------------

    def test_01_full_spill_counted(self):
        mc = self.mc()
        px = self.spill_proxy(mc, self.path("spill.db"), ["--spill-max", "1m"])
        sent = 100
        self.sets(px, 0, sent)
        mctest.wait_for(lambda: self.pg_writes()[0] == sent, 20, interval=0.1,
                        what="the first writes in PostgreSQL")
        stop_pg(self.pg)
        n = 12000
        slowest = self.sets(px, sent, n)
        sent += n
        self.assertLess(slowest, MAX_STALL_MS / 1000 + SLACK_S, "a client stalled")
        lost_re = 'slabtap_rows_lost_total{reason="spill_full"}'
        mctest.wait_for(lambda: metric(http_get(px, "/metrics"), lost_re) > 0, 20,
                        interval=0.1, what="rows counted spill_full")
        body = http_get(px, "/metrics")
        self.assertGreater(metric(body, "slabtap_spill_backlog_rows"), 0)
        self.assertLessEqual(metric(body, "slabtap_spill_backlog_bytes"), 1 << 20)
        restart_pg(self.pg)
        mctest.wait_for(lambda: '"status":"ok"' in http_get(px, "/health"), 30,
                        interval=0.2, what="/health ok after the outage")
        body = http_get(px, "/metrics")
        lost = metric(body, lost_re)
        self.assertEqual(metric(body, "slabtap_spill_backlog_rows"), 0)
        self.assertEqual(metric(body, "slabtap_rows_spilled_total"),
                         metric(body, "slabtap_rows_shipped_total"))
        self.stop_clean(px)
        rows, distinct = self.pg_writes()
        self.assertEqual(rows, distinct, "a write recorded twice")
        self.assertEqual(rows + lost, sent)
        self.assertEqual(self.pg.psql("SELECT rows_recorded, rows_dropped FROM runs"),
                         [[str(rows), str(lost)]])
        self.assertIn("spill_full", px.stderr_text())

    # --- 02 ------------------------------------------------------------------------

    def test_02_kill9_spill_shipped_by_next_start(self):
        mc = self.mc()
        spill = self.path("spill.db")
        a = self.spill_proxy(mc, spill, name="proxy-a")
        self.sets(a, 0, 200)
        mctest.wait_for(lambda: self.pg_writes()[0] == 200, 20, interval=0.1,
                        what="the first writes in PostgreSQL")
        stop_pg(self.pg)
        self.sets(a, 200, 1000)
        sent = 1200
        # every write past the first 200 has gone to the spill
        mctest.wait_for(lambda: metric(http_get(a, "/metrics"),
                                       "slabtap_rows_spilled_total") == 1000, 20,
                        interval=0.1, what="1000 writes in the spill")
        backlog = metric(http_get(a, "/metrics"), "slabtap_spill_backlog_rows")
        self.assertGreaterEqual(backlog, 1000)
        a.p.send_signal(signal.SIGKILL)
        a.wait(10)
        self.assertTrue(os.path.getsize(spill) > 0)
        restart_pg(self.pg)
        b = self.spill_proxy(mc, spill, name="proxy-b")
        mctest.wait_for(lambda: "the spill is shipped" in b.stderr_text(), 20, interval=0.1,
                        what="the spill shipped by the new start")
        self.sets(b, sent, 100)
        sent += 100
        self.stop_clean(b)
        log = b.stderr_text()
        self.assertRegex(log, r"spill .*: \d+ rows of an earlier run wait")
        per_run = self.pg.psql("SELECT run_id, count(*), count(DISTINCT seq) FROM writes"
                               " GROUP BY run_id ORDER BY run_id")
        self.assertEqual(len(per_run), 2, per_run)
        for run_id, rows, distinct in per_run:
            self.assertEqual(rows, distinct, "run %s: a write recorded twice" % run_id)
        self.assertEqual([int(r[1]) for r in per_run], [1200, 100])
        self.assertEqual(self.pg_writes(), (sent, sent))
        self.assertEqual(self.pg.psql("SELECT DISTINCT node FROM runs"), [["node-s"]])

    # --- 03 ------------------------------------------------------------------------

    def damaged_start(self, spill, damage):
        mc = self.mc()
        with open(spill, "rb") as f:
            before = f.read()
        base = self.pg_writes()[0]  # an earlier proxy's
        px = self.spill_proxy(mc, spill, name="proxy-d")
        log = px.stderr_text()
        moved = [f for f in os.listdir(self.w.path)
                 if f.startswith("spill.db.damaged-") and not f.endswith(("-wal", "-shm"))]
        self.assertEqual(len(moved), 1, (damage, os.listdir(self.w.path), log[-3000:]))
        self.assertIn(moved[0], log)
        self.assertRegex(log, r"(?i)warn.*spill .*damaged")
        with open(self.path(moved[0]), "rb") as f:
            self.assertEqual(f.read(), before, "the damaged file was changed")
        # a fresh spill: the proxy records, and spills again when it must
        self.sets(px, 0, 50)
        mctest.wait_for(lambda: self.pg_writes()[0] == base + 50, 20, interval=0.1,
                        what="writes recorded after the damaged start")
        self.stop_clean(px)
        self.assertEqual(self.pg_writes(), (base + 50, base + 50))
        return log

    def test_03a_garbage_spill_moved_aside(self):
        spill = self.path("spill.db")
        with open(spill, "wb") as f:
            f.write(os.urandom(8192))
        self.damaged_start(spill, "garbage")

    def test_03b_truncated_spill_moved_aside(self):
        self.truncated_start(lambda size: size // 3 + 100)

    def test_03c_tail_cut_spill_moved_aside(self):
        """Only the last pages gone (the end of the last batch's data): the
        rows' b-tree still reads, the damage is in a batch's blob."""
        self.truncated_start(lambda size: size - 3 * 4096)

    def truncated_start(self, cut):
        mc = self.mc()
        spill = self.path("spill.db")
        a = self.spill_proxy(mc, spill, name="proxy-a")
        self.sets(a, 0, 10)
        mctest.wait_for(lambda: self.pg_writes()[0] == 10, 20, interval=0.1,
                        what="the first writes in PostgreSQL")
        stop_pg(self.pg)
        self.sets(a, 10, 2000, value=b"t" * 1000)
        mctest.wait_for(lambda: metric(http_get(a, "/metrics"),
                                       "slabtap_rows_spilled_total") == 2000, 20,
                        interval=0.1, what="2000 writes in the spill")
        a.p.send_signal(signal.SIGKILL)
        a.wait(10)
        restart_pg(self.pg)
        self.truncate_spill(spill, cut)
        self.damaged_start(spill, "truncated")

    def truncate_spill(self, spill, cut):
        """The file checkpointed (no -wal) and cut to cut(size) bytes."""
        import sqlite3
        db = sqlite3.connect(spill)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode = DELETE")
        db.close()
        size = os.path.getsize(spill)
        self.assertGreater(size, 3 * 4096)
        with open(spill, "r+b") as f:
            f.truncate(cut(size))

    # --- 04 ------------------------------------------------------------------------

    def test_04_lost_commit_answer_not_sent_twice(self):
        relay = Relay(self.pg.port)
        self.addCleanup(relay.close)
        uri = "postgresql://postgres@127.0.0.1:%d/%s?sslmode=disable&gssencmode=disable" % (
            relay.port, pgcluster.DB)
        mc = self.mc()
        px = self.spill_proxy(mc, self.path("spill.db"), uri=uri)
        self.sets(px, 0, 100)
        mctest.wait_for(lambda: self.pg_writes()[0] == 100, 20, interval=0.1,
                        what="the first writes in PostgreSQL")
        relay.armed.set()
        self.sets(px, 100, 100)
        mctest.wait_for(relay.cut.is_set, 10, what="a COMMIT answer cut")
        mctest.wait_for(lambda: self.pg_writes()[0] >= 200, 20, interval=0.1,
                        what="every write in PostgreSQL")
        time.sleep(0.5)
        self.stop_clean(px)
        self.assertEqual(self.pg_writes(), (200, 200))
        self.assertEqual(self.pg.psql("SELECT rows_recorded, rows_dropped FROM runs"),
                         [["200", "0"]])
        self.assertIn("outage from", px.stderr_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
