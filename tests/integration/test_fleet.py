#!/usr/bin/python3
"""test_fleet: a memcached fleet recording into one PostgreSQL (issue 13).

A throwaway PostgreSQL (pgcluster.py), three memcached, three proxies with
--node node-0..2 and --db postgresql://..., and a real client hashing keys
over the three proxies (pymemcache's HashClient):

- 01 fleet: every write is in PostgreSQL exactly once, on the node the
  client sent it to; the same writes through three SQLite proxies (each
  node's keys sent to its own proxy) give the same per-node counts, size
  histogram (fleet_sizes) and per-node waste (fleet_waste).
- 02 block mode: PostgreSQL stopped mid-load and started again on the same
  port: clients never see an error or wait past a bound; /health says
  recording_degraded and /metrics shows the spill's backlog during the
  outage; afterwards every write is in PostgreSQL exactly once (the spill
  shipped), nothing is counted lost, the outage is logged once (start and
  end).
- 03 drop mode: the same outage with --on-full drop and a small queue:
  clients see no error; rows recorded + rows counted lost (queue_full) =
  writes sent.
- 04 login refused: a wrong password stops the proxy at start (exit 1, a
  clear message without the password); with --record-optional it forwards
  every request and counts every write lost (store_unavailable).

Every proxy exits without a sanitizer report. Needs PostgreSQL (initdb;
tests/run.sh installs it). 127.0.0.1 only; reserved ports; bounded waits.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
import pgcluster  # noqa: E402

from pymemcache.client.base import Client  # noqa: E402
from pymemcache.client.hash import HashClient  # noqa: E402

NODES = 3
WRITES = int(os.environ.get("FLEET_WRITES", "3000"))
SET_TIMEOUT = 10  # a client never waits longer than this for one answer


def value_len(i):
    return 40 + (i * 7919) % 3000


def metric(body, name):
    """The value of one sample line of a /metrics text."""
    m = re.search(r"^%s (\d+)$" % re.escape(name), body, re.M)
    if not m:
        raise AssertionError("no %s in /metrics:\n%s" % (name, body[:3000]))
    return int(m.group(1))


def restart_pg(pg):
    """Starts pg's postgres again on its own port (the proxies keep their URI)."""
    argv = [os.path.join(pg.bin, "postgres"), "-D", pg.data, "-p", str(pg.port),
            "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + pg.sock,
            "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=50"]
    with open(os.path.join(pg.root, "postgres.log"), "ab") as lf:
        pg.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=lf, stderr=lf,
                                   env=pg._env(), preexec_fn=pg._demote, cwd=pg.root,
                                   start_new_session=True)
    mctest.wait_for(pg._ready, 60, interval=0.1, what="postgres restarted")


def stop_pg(pg):
    pg.proc.send_signal(signal.SIGINT)  # fast shutdown: sessions are cut
    pg.proc.wait(timeout=30)


class FleetTest(mctest.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.pg = pgcluster.PgCluster()
        cls.addClassCleanup(cls.pg.stop)

    # --- helpers ----------------------------------------------------------------------

    def fleet(self, db_of, extra=(), n=NODES):
        """n memcached, each with a proxy of node node-i into db_of(i)."""
        mcs = [self.mc() for _ in range(n)]
        spill = lambda i: (["--spill", self.path("spill-%d.db" % i)]  # noqa: E731
                           if db_of(i).startswith("postgresql:") and "--spill" not in extra
                           else [])
        pxs = [self.proxy(mcs[i].port, db=db_of(i), http=True, name="proxy-%d" % i,
                          extra=["--node", "node-%d" % i, "--stats-interval", "200"]
                          + spill(i) + list(extra))
               for i in range(n)]
        return mcs, pxs

    def assign(self, pxs, keys):
        """{key: node index} as a HashClient over the proxies places them."""
        hc = HashClient([("127.0.0.1", p.port) for p in pxs], use_pooling=False)
        by_port = {p.port: i for i, p in enumerate(pxs)}
        out = {}
        for k in keys:
            out[k] = by_port[hc._get_client(k).server[1]]
        hc.quit()
        return out

    def hash_load(self, pxs, start, count, errors, stop_at=None):
        """count sets through a HashClient; exceptions and slow answers go to errors."""
        hc = HashClient([("127.0.0.1", p.port) for p in pxs], use_pooling=False,
                        connect_timeout=SET_TIMEOUT, timeout=SET_TIMEOUT, ignore_exc=False,
                        retry_attempts=0, dead_timeout=3600)
        sent = 0
        try:
            for i in range(start, start + count):
                t0 = time.monotonic()
                try:
                    ok = hc.set("fleet:%d" % i, b"v" * value_len(i), noreply=False)
                except Exception as e:  # noqa: BLE001 -- what the client saw
                    errors.append("set %d: %r" % (i, e))
                    continue
                if not ok:
                    errors.append("set %d: not stored" % i)
                if time.monotonic() - t0 > SET_TIMEOUT:
                    errors.append("set %d took %.1fs" % (i, time.monotonic() - t0))
                sent += 1
        finally:
            hc.quit()
        return sent

    def node_counts_pg(self):
        rows = self.pg.psql("SELECT r.node, count(*), count(DISTINCT (w.run_id, w.seq))"
                            " FROM writes w JOIN runs r USING (run_id) GROUP BY r.node")
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def wipe_pg(self):
        if self.pg.scalar("SELECT to_regclass('writes') IS NULL") == "t":
            return  # no proxy has applied the schema yet
        self.pg.psql("TRUNCATE writes, runs, samples, sample_classes, settings, phases, run_meta,"
                     " get_counts CASCADE")

    def stop_all(self, pxs):
        for p in pxs:
            self.stop_clean(p)

    # --- the fleet --------------------------------------------------------------------

    def test_01_fleet_equals_sqlite(self):
        self.wipe_pg()
        uri = self.pg.uri()
        mcs, pxs = self.fleet(lambda i: uri)
        errors = []
        sent = self.hash_load(pxs, 0, WRITES, errors)
        self.assertEqual(errors, [])
        self.assertEqual(sent, WRITES)
        where = self.assign(pxs, ["fleet:%d" % i for i in range(WRITES)])
        self.stop_all(pxs)
        per_node = [sum(1 for v in where.values() if v == n) for n in range(NODES)]
        self.assertTrue(all(per_node), per_node)
        counts = self.node_counts_pg()
        self.assertEqual(counts, {"node-%d" % n: (per_node[n], per_node[n])
                                  for n in range(NODES)})
        runs = self.pg.psql("SELECT node, rows_recorded, rows_dropped, ended_ns IS NOT NULL"
                            " FROM runs ORDER BY node")
        self.assertEqual(runs, [["node-%d" % n, str(per_node[n]), "0", "t"]
                                for n in range(NODES)])
        # the same writes, each node's to its own SQLite proxy (fresh memcached)
        dbs = [self.path("node-%d.db" % i) for i in range(NODES)]
        mcs2, pxs2 = self.fleet(lambda i: dbs[i])
        for n in range(NODES):
            c = Client(("127.0.0.1", pxs2[n].port), timeout=SET_TIMEOUT)
            for i in range(WRITES):
                if where["fleet:%d" % i] == n:
                    self.assertTrue(c.set("fleet:%d" % i, b"v" * value_len(i), noreply=False))
            c.quit()
        self.stop_all(pxs2)
        for n in range(NODES):
            self.assertEqual(mctest.db_scalar(dbs[n], "SELECT count(*) FROM sets"), per_node[n])
            self.assertEqual(mctest.db_scalar(dbs[n], "SELECT value FROM run_meta"
                                              " WHERE key = 'node'"), "node-%d" % n)
        # fleet_sizes = the three files' write_size_histogram summed
        want = {}
        for db in dbs:
            for r in mctest.db_rows(db, "SELECT bucket_min, writes, value_bytes"
                                    " FROM write_size_histogram"):
                x = want.setdefault(int(r["bucket_min"]), [0, 0])
                x[0] += int(r["writes"])
                x[1] += int(r["value_bytes"])
        got = {int(r[0]): [int(r[1]), int(r[2])]
               for r in self.pg.psql("SELECT bucket_min, writes, value_bytes FROM fleet_sizes")}
        self.assertEqual(got, want)
        # fleet_waste's node totals = each file's last sample
        got = {r[0]: tuple(int(x) for x in r[1:]) for r in self.pg.psql(
            "SELECT node, used_chunks, mem_requested, allocated, waste_bytes FROM fleet_waste"
            " WHERE class_id IS NULL")}
        for n, db in enumerate(dbs):
            row = mctest.db_rows(db, "SELECT sum(used_chunks) u, sum(mem_requested) m,"
                                 " sum(allocated) a, sum(waste_bytes) w FROM slab_waste"
                                 " WHERE sample_id = (SELECT sample_id FROM last_samples)")[0]
            self.assertEqual(got["node-%d" % n], tuple(int(row[k]) for k in "umaw"),
                             "node-%d" % n)
        # the password-free options text, and one runs row per node
        self.assertEqual(self.pg.scalar("SELECT count(DISTINCT node) FROM fleet_runs"), "3")

    def test_05_fleet_views_over_aggregates(self):
        """Three nodes: node-0 records every row, node-1 --sample-keys 1/4,
        node-2 --sample-keys none. Each key is set once (no overwrite, no
        eviction: memcached holds what was written), so:
        fleet_sizes_agg is, per node and fleet-wide, the sizes the client
        sent (whatever each node kept of the rows) and, for node-0, what its
        rows say (the row view's buckets and write_size_histogram's totals);
        fleet_waste_agg equals fleet_waste (memcached's own counters) per node
        and class; fleet_evictions counts no eviction and every stored write;
        node-2 has no write rows, node-1 about a quarter."""
        self.wipe_pg()
        uri = self.pg.uri()
        modes = [[], ["--sample-keys", "1/4"], ["--sample-keys", "none"]]
        mcs = [self.mc(extra=["-m", "256"]) for _ in range(NODES)]
        pxs = [self.proxy(mcs[i].port, db=uri, http=True, name="proxy-%d" % i,
                          extra=["--node", "node-%d" % i, "--stats-interval", "200",
                                 "--spill", self.path("spill-%d.db" % i)] + modes[i])
               for i in range(NODES)]
        # the ladder known first: every write tagged with its class
        mctest.wait_for(lambda: self.pg.scalar("SELECT count(DISTINCT r.node) FROM samples s"
                                               " JOIN runs r USING (run_id)") == str(NODES),
                        60, what="a stats sample of every node")
        errors = []
        self.assertEqual(self.hash_load(pxs, 0, WRITES, errors), WRITES)
        self.assertEqual(errors, [])
        where = self.assign(pxs, ["fleet:%d" % i for i in range(WRITES)])
        self.stop_all(pxs)

        def bucket(body):
            return 1 << (body.bit_length() - 1)
        want = {}
        for i in range(WRITES):
            body = len("fleet:%d" % i) + value_len(i)
            for node in ("node-%d" % where["fleet:%d" % i], None):
                w = want.setdefault((node, bucket(body)), [0, 0, body, body])
                w[0] += 1
                w[1] += value_len(i)
                w[2] = min(w[2], body)
                w[3] = max(w[3], body)
        got = {(r[0], int(r[1])): [int(x) for x in r[2:]] for r in self.pg.psql(
            "SELECT node, bucket_min, writes, value_bytes, min_body, max_body"
            " FROM fleet_sizes_agg")}
        self.assertEqual(got, want)
        # node-0 kept every row: the rows say the same
        rows = {int(r[0]): [int(x) for x in r[1:]] for r in self.pg.psql(
            "SELECT b, count(*), sum(value_len), min(body), max(body) FROM"
            " (SELECT key_len + value_len + CASE WHEN flags <> 0 THEN 4 ELSE 0 END AS body,"
            "   value_len, 1::bigint << (length(ltrim((key_len + value_len"
            "   + CASE WHEN flags <> 0 THEN 4 ELSE 0 END)::bit(64)::text, '0')) - 1) AS b"
            "  FROM sets s JOIN runs r USING (run_id) WHERE r.node = 'node-0'"
            "  AND cmd = 'set') x GROUP BY b")}
        self.assertEqual(rows, {b: v for (n, b), v in got.items() if n == "node-0"})
        self.assertEqual(self.pg.psql(
            "SELECT sum(h.writes), sum(h.value_bytes) FROM write_size_histogram h"
            " JOIN runs r USING (run_id) WHERE r.node = 'node-0'"),
            self.pg.psql("SELECT sum(writes), sum(value_bytes) FROM fleet_sizes_agg"
                         " WHERE node = 'node-0'"))
        per_node = [sum(1 for v in where.values() if v == n) for n in range(NODES)]
        counts = self.node_counts_pg()
        self.assertEqual(counts.get("node-0"), (per_node[0], per_node[0]))
        self.assertTrue(per_node[1] // 8 < counts["node-1"][0] < per_node[1] // 2, counts)
        self.assertNotIn("node-2", counts)
        # waste: the aggregates' = memcached's, per node and class
        cols = "used_chunks, mem_requested, allocated, waste_bytes"
        agg = self.pg.psql("SELECT node, class_id, chunk_size, %s FROM fleet_waste_agg"
                           " WHERE node IS NOT NULL ORDER BY 1, 2" % cols)
        mc = self.pg.psql("SELECT node, class_id, chunk_size, %s FROM fleet_waste"
                          " WHERE used_chunks > 0 OR class_id IS NULL ORDER BY 1, 2" % cols)
        self.assertEqual(agg, mc)
        self.assertEqual(len({r[0] for r in agg}), NODES)
        self.assertGreater(len(agg), 3 * NODES)  # several classes per node
        fleet = self.pg.psql("SELECT used_chunks FROM fleet_waste_agg WHERE node IS NULL")
        self.assertEqual(fleet, [[str(WRITES)]])
        ev = self.pg.psql("SELECT node, evicted, stored_writes FROM fleet_evictions"
                          " WHERE class_id IS NULL ORDER BY node NULLS LAST")
        self.assertEqual(ev, [["node-%d" % n, "0", str(per_node[n])] for n in range(NODES)]
                         + [[None, "0", str(WRITES)]])

    # --- faults ------------------------------------------------------------------------

    def outage(self, extra, check_degraded):
        """One node; PostgreSQL stopped while a client writes, started again.
        Returns (proxy, writes sent, client errors, health seen, metrics seen)."""
        self.wipe_pg()
        uri = self.pg.uri()
        mcs, pxs = self.fleet(lambda i: uri, extra=["--max-stall", "300"] + list(extra), n=1)
        px = pxs[0]
        errors, sent = [], [0]
        done = threading.Event()
        total = WRITES * 2

        def load():
            try:
                sent[0] = self.hash_load(pxs, 0, total, errors)
            finally:
                done.set()
        t = threading.Thread(target=load)
        t.start()
        mctest.wait_for(lambda: self.node_counts_pg().get("node-0", (0, 0))[0] > 0 or
                        done.is_set(), 60, what="first rows in PostgreSQL")
        stop_pg(self.pg)
        health, metrics = None, ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not done.is_set():
            status, body = mctest.http_request(px.http_port, "GET", "/health")[0::2]
            if check_degraded(body):
                health = (status, body)
                metrics = mctest.http_request(px.http_port, "GET", "/metrics")[2]
                break
            time.sleep(0.1)
        time.sleep(1.0)  # the outage lasts past --max-stall
        restart_pg(self.pg)
        t.join(timeout=300)
        self.assertFalse(t.is_alive(), "the client is stuck")
        return px, sent[0], errors, health, metrics

    def test_02_pg_stopped_block_mode_spill_shipped(self):
        px, sent, errors, health, metrics = self.outage(
            ["--spill", self.path("spill.db")],
            lambda body: b"recording_degraded" in body)
        self.assertEqual(errors, [])
        self.assertIsNotNone(health, "/health never said recording_degraded during the outage")
        self.assertEqual(health[0], 503)
        self.assertIn(b'"degraded":true', health[1])
        self.assertRegex(metrics.decode(), r"slabtap_spill_backlog_rows \d+")
        self.assertRegex(metrics.decode(), r"slabtap_recording_degraded 1")
        # the backlog ships, and /health is ok again
        mctest.wait_for(lambda: b'"status":"ok"' in
                        mctest.http_request(px.http_port, "GET", "/health")[2], 60,
                        interval=0.2, what="/health ok after the outage")
        body = mctest.http_request(px.http_port, "GET", "/metrics")[2].decode()
        self.assertIn("slabtap_spill_backlog_rows 0", body)
        spilled = metric(body, "slabtap_rows_spilled_total")
        shipped = metric(body, "slabtap_rows_shipped_total")
        self.stop_clean(px)
        self.assertEqual(self.node_counts_pg(), {"node-0": (sent, sent)})
        self.assertEqual(self.pg.psql("SELECT rows_recorded, rows_dropped FROM runs"),
                         [[str(sent), "0"]])
        # the aggregates too: every batch's, committed or shipped, exactly once
        self.assertEqual(self.pg.psql("SELECT (SELECT sum(writes) FROM agg_latency),"
                                      " (SELECT sum(writes) FROM agg_sizes)"),
                         [[str(sent), str(sent)]])
        self.assertGreater(spilled, 0, "nothing went through the spill")
        self.assertEqual(spilled, shipped)
        log = px.stderr_text()
        self.assertEqual(log.count("outage from"), 1, log[-4000:])
        self.assertEqual(log.count("outage over"), 1, log[-4000:])
        self.assertIn("the spill is shipped", log)

    def test_03_pg_stopped_drop_mode_counted(self):
        px, sent, errors, health, _ = self.outage(
            ["--on-full", "drop", "--queue", "256"],
            lambda body: b"recording_degraded" in body)
        self.assertEqual(errors, [])
        self.assertIsNotNone(health)
        mctest.wait_for(lambda: b'"status":"ok"' in
                        mctest.http_request(px.http_port, "GET", "/health")[2], 60,
                        interval=0.2, what="/health ok after the outage")
        body = mctest.http_request(px.http_port, "GET", "/metrics")[2].decode()
        lost = metric(body, 'slabtap_rows_lost_total{reason="queue_full"}')
        self.stop_clean(px)
        recorded = self.node_counts_pg()["node-0"]
        self.assertEqual(recorded[0], recorded[1])  # exactly once
        self.assertGreater(lost, 0, "nothing was dropped: the outage was too short")
        self.assertEqual(recorded[0] + lost, sent)
        self.assertEqual(self.pg.psql("SELECT rows_recorded, rows_dropped FROM runs"),
                         [[str(recorded[0]), str(lost)]])

    def test_04_login_refused(self):
        uri = self.pg.uri(user=self.pg.PW_ROLE, password="wrong-" + self.pg.password)
        mc = self.mc()
        # refused: exit 1 with a clear message, no password anywhere
        p = subprocess.run([mctest.SLABTAP, "proxy", "--listen", "127.0.0.1:0",
                            "--upstream", "127.0.0.1:%d" % mc.port, "--db", uri,
                            "--http", "off"], stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, env=mctest.slabtap_env(), timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("password authentication failed", p.stderr)
        self.assertIn(self.pg.PW_ROLE, p.stderr)
        self.assertNotIn(self.pg.password, p.stderr)
        self.assertEqual(mctest.sanitizer_errors(p.stderr), [])
        # --record-optional: forwards, counts every write lost, says so in /health
        px = self.proxy(mc.port, db=uri, http=True,
                        extra=["--record-optional", "--spill", self.path("spill.db")])
        c = Client(("127.0.0.1", px.port), timeout=SET_TIMEOUT)
        for i in range(200):
            self.assertTrue(c.set("opt:%d" % i, b"x" * 100, noreply=False))
        self.assertEqual(c.get("opt:7"), b"x" * 100)
        c.quit()
        status, body = mctest.http_request(px.http_port, "GET", "/health")[0::2]
        self.assertEqual(status, 503)
        self.assertIn(b"recording_degraded", body)
        mctest.wait_for(lambda: b"slabtap_rows_lost_total{reason=\"store_unavailable\"} 200" in
                        mctest.http_request(px.http_port, "GET", "/metrics")[2], 10,
                        what="200 writes counted lost (store_unavailable)")
        self.stop_clean(px)
        self.assertNotIn(self.pg.password, px.stderr_text())


if __name__ == "__main__":
    unittest.main(verbosity=2)
