#!/usr/bin/python3
"""test_proxy_burst: a pipelined burst loses no row and no answer.

1. 4 connections each pipeline 25,000 sets (keys c{conn}:{i}, value length
   (i*7) % 3000) through the proxy, writer and reader on separate threads;
   every answer must be STORED. After SIGTERM the proxy exits 0 with no
   sanitizer report, `sets` holds exactly 100,000 rows, value_len matches
   each key, and per conn_id the seq order is the send order. The same
   burst straight to memcached is timed too, for comparison.
2. noreply: 20,000 `set ... noreply` then `mn` on one connection, and a
   second connection mixing noreply sets with mg/get reads: the client gets
   exactly the bytes memcached sends direct (the proxy's own `mn` barriers
   and their MN answers never show), and every set is recorded 'noreply'.

Needs memcached on PATH and $SLABTAP. 127.0.0.1 only; bounded waits.
"""
import os
import re
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

NCONN = 4
PER_CONN = 25000
NOREPLY_N = 20000


def vlen(i):
    return (i * 7) % 3000


def value(conn, i):
    n = vlen(i)
    pat = b"%d:%d|" % (conn, i)
    return (pat * (n // len(pat) + 1))[:n]


def set_payload(conn, n, noreply=False, prefix="c"):
    nr = b" noreply" if noreply else b""
    return b"".join(b"set %s%d:%d %d 0 %d%s\r\n%s\r\n"
                    % (prefix.encode(), conn, i, i % 65536, vlen(i), nr, value(conn, i))
                    for i in range(n))


def pipeline(port, payloads, expected, timeout=100):
    """Sends payloads[k] on connection k while reading its answer on another
    thread; returns (seconds, [answers]). Each reader stops after exactly
    len(expected[k]) bytes."""
    socks = [mctest.connect(port, timeout=timeout) for _ in payloads]
    got = [None] * len(payloads)
    errors = []

    def writer(s, data):
        try:
            view = memoryview(data)
            for off in range(0, len(data), 1 << 18):
                s.sendall(view[off:off + (1 << 18)])
        except OSError as e:
            errors.append("send: %r" % e)

    def reader(k):
        try:
            got[k] = mctest.recv_exact(socks[k], len(expected[k]), timeout=timeout)
        except AssertionError as e:
            errors.append("conn %d: %s" % (k, e))

    threads = []
    t0 = time.monotonic()
    for k, s in enumerate(socks):
        threads.append(threading.Thread(target=reader, args=(k,), daemon=True))
        threads.append(threading.Thread(target=writer, args=(s, payloads[k]), daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 10)
    secs = time.monotonic() - t0
    stuck = [t for t in threads if t.is_alive()]
    for s in socks:
        s.close()
    if stuck or errors:
        raise AssertionError("burst failed: %d threads stuck; %s" % (len(stuck), errors[:4]))
    return secs, got


class Burst(mctest.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.shared_mc = cls.class_mc(extra=["-m", "1024"])

    def test_1_burst_100k_sets(self):
        payloads = [set_payload(k, PER_CONN) for k in range(NCONN)]
        expected = [b"STORED\r\n" * PER_CONN] * NCONN
        mbytes = sum(len(p) for p in payloads) / 1e6

        direct_s, got = pipeline(self.shared_mc.port, payloads, expected)
        self.assertEqual(got, expected, "direct burst: memcached did not store everything")

        px = self.proxy(self.shared_mc.port, keys="full", name="proxy-burst")
        proxy_s, got = pipeline(px.port, payloads, expected)
        for k in range(NCONN):
            self.assertEqual(got[k], expected[k], "conn %d: answers through the proxy" % k)
        print("\n# burst of %d sets (%.1f MB) on %d connections: direct %.2f s, through the "
              "proxy %.2f s (%.0f sets/s)" % (NCONN * PER_CONN, mbytes, NCONN, direct_s, proxy_s,
                                               NCONN * PER_CONN / proxy_s), file=sys.stderr)

        self.stop_clean(px, timeout=90)
        db = px.db
        self.assertEqual(mctest.db_scalar(db, "SELECT count(*) FROM sets"), NCONN * PER_CONN)
        rows = mctest.db_rows(db, "SELECT seq, conn_id, key, value_len, flags, cmd, answer, key_len"
                              " FROM sets ORDER BY seq")
        by_conn = {}
        for r in rows:
            self.assertEqual((r["cmd"], r["answer"]), ("set", "STORED"), r)
            conn, i = r["key"][1:].split(":")
            conn, i = int(conn), int(i)
            self.assertEqual(r["value_len"], vlen(i), r)
            self.assertEqual(r["flags"], i % 65536, r)
            self.assertEqual(r["key_len"], len(r["key"]), r)
            by_conn.setdefault(r["conn_id"], []).append((conn, i))
        self.assertEqual(len(by_conn), NCONN, "conn_ids: %s" % sorted(by_conn))
        seen = set()
        for cid, seq_order in by_conn.items():
            conns = {c for c, _ in seq_order}
            self.assertEqual(len(conns), 1, "conn_id %d holds keys of client connections %s"
                             % (cid, conns))
            seen |= conns
            self.assertEqual([i for _, i in seq_order], list(range(PER_CONN)),
                             "conn_id %d: seq order is not the send order" % cid)
        self.assertEqual(seen, set(range(NCONN)))
        run = mctest.db_rows(db, "SELECT * FROM runs")[0]
        self.assertIsNotNone(run["ended_ns"])
        self.assertEqual((run["rows_recorded"], run["rows_dropped"]), (NCONN * PER_CONN, 0))

    def test_2_noreply_burst(self):
        # connection 0: 20,000 noreply sets, then one mn
        p0 = set_payload(0, NOREPLY_N, noreply=True, prefix="n") + b"mn\r\n"
        # connection 1: noreply sets with reads in between, whose answers
        # must arrive intact around the proxy's swallowed barriers
        parts, exp1 = [], []
        for i in range(5000):
            v = value(1, i)
            parts.append(b"set n1:%d %d 0 %d noreply\r\n%s\r\n" % (i, i % 65536, len(v), v))
            if i % 250 == 249:
                k = i - 100
                kv = value(1, k)
                parts.append(b"mg n1:%d v\r\nget n1:%d\r\nmn\r\n" % (k, k))
                exp1.append(b"VA %d\r\n%s\r\nVALUE n1:%d %d %d\r\n%s\r\nEND\r\nMN\r\n"
                            % (len(kv), kv, k, k % 65536, len(kv), kv))
        parts.append(b"mn\r\n")
        exp1.append(b"MN\r\n")
        p1 = b"".join(parts)
        expected = [b"MN\r\n", b"".join(exp1)]

        _, got = pipeline(self.shared_mc.port, [p0, p1], expected)
        self.assertEqual(got, expected, "direct: memcached's own answers are not what the test expects")
        # nothing more may follow, direct or proxied: checked by an extra mn below

        px = self.proxy(self.shared_mc.port, keys="full", name="proxy-noreply")
        secs, got = pipeline(px.port, [p0, p1], expected)
        self.assertEqual(got[0], expected[0], "noreply burst: client must see only MN")
        self.assertEqual(got[1], expected[1], "mixed noreply/read connection")
        # a quiet connection must not carry a stray byte afterwards either
        with mctest.connect(px.port) as s:
            s.sendall(b"set n2:0 0 0 1 noreply\r\nx\r\n")
            s.sendall(b"mn\r\n")
            self.assertEqual(mctest.recv_exact(s, 4), b"MN\r\n")
            s.sendall(b"mn\r\n")
            self.assertEqual(mctest.recv_exact(s, 4), b"MN\r\n")
        print("\n# noreply burst through the proxy: %.2f s" % secs, file=sys.stderr)

        self.stop_clean(px, timeout=90)
        db = px.db
        counts = mctest.db_rows(db, "SELECT substr(key, 1, 2) AS p, answer, count(*) AS n,"
                                " sum(value_len) AS bytes FROM sets GROUP BY 1, 2 ORDER BY 1, 2")
        self.assertEqual([(c["p"], c["answer"], c["n"]) for c in counts],
                         [("n0", "noreply", NOREPLY_N), ("n1", "noreply", 5000), ("n2", "noreply", 1)])
        self.assertEqual(counts[0]["bytes"], sum(vlen(i) for i in range(NOREPLY_N)))
        order = [r["key"] for r in mctest.db_rows(
            db, "SELECT key FROM sets WHERE key LIKE 'n0:%' ORDER BY seq")]
        self.assertEqual(order, ["n0:%d" % i for i in range(NOREPLY_N)])
        reads = mctest.db_rows(db, "SELECT cmd, sum(requests) AS r, sum(hits) AS h FROM get_counts"
                               " GROUP BY cmd ORDER BY cmd")
        self.assertEqual([(r["cmd"], r["r"], r["h"]) for r in reads], [("get", 20, 20), ("mg", 20, 20)])

    def test_3_barriers_reach_memcached_and_are_swallowed(self):
        """memcached -vv logs every command it reads, so the proxy's own `mn`
        barriers can be counted: each noreply set read on its own is followed
        by one, and none of their MN answers reaches the client."""
        mc = self.mc(extra=["-vv"], name="mc-vv")
        px = self.proxy(mc.port, keys="full", name="proxy-vv")

        def mn_lines():
            return len(re.findall(r"^<\d+ mn$", mc.stderr_text(), re.M))

        rounds = 30
        with mctest.connect(px.port) as s:
            for i in range(rounds):
                s.sendall(b"set b:%d 0 0 1 noreply\r\nx\r\n" % i)
                # the barrier follows the set in the same write: wait
                # until memcached has read it before sending more
                mctest.wait_for(lambda: mn_lines() >= 2 * i + 1, 10,
                                what="barrier %d in memcached's log" % i)
                s.sendall(b"mn\r\n")
                self.assertEqual(mctest.recv_exact(s, 4), b"MN\r\n")
                mctest.wait_for(lambda: mn_lines() >= 2 * i + 2, 10, what="client mn %d" % i)
            s.sendall(b"get b:%d\r\n" % (rounds - 1))
            self.assertEqual(mctest.recv_until(s, b"END\r\n"),
                             b"VALUE b:%d 0 1\r\nx\r\nEND\r\n" % (rounds - 1))
        self.assertEqual(mn_lines(), 2 * rounds)
        self.stop_clean(px)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM sets WHERE answer ="
                                          " 'noreply'"), rounds)


if __name__ == "__main__":
    unittest.main(verbosity=2)
