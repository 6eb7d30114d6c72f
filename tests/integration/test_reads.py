#!/usr/bin/python3
"""test_reads: every key a read asks for is a row of the view `reads`
(issue 19; proxy/server/readrec.h, schema/schema.sql.in), through a real
memcached and a real `slabtap proxy`:

  * get / gets / gat / gats / mg: one row per key asked for, with the right
    hit/miss, value_len, flags (NULL where unknown), exptime (gat/gats),
    cmd, conn_id and class_id (the class the set of the same item got), and
    after_write placing it among the writes (set, get, delete, get);
  * multigets of 100 keys with some missing, pipelined, from two clients;
    a multiget line longer than the 2,048 bytes the parser keeps: the keys
    past it are counted lost (read_key_cut), kept + lost = asked;
  * quiet mg misses (silent answers) are miss rows;
  * --keys hash (no key text) and --keys prefix (the prefix);
  * --reads off records none (get_counts still counts them);
  * --sample-keys 1/4: exactly the sampled keys' reads and writes, all of
    them; agg_reads still counts every read;
  * --max-db-size: reads expire with the writes, oldest first;
  * SIGTERM right after a burst: every read recorded;
  * PostgreSQL (pgcluster.py): the same view `reads`, the same rows.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown.
"""
import json
import os
import random
import socket
import sqlite3
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
import pgcluster  # noqa: E402

M64 = (1 << 64) - 1


def fnv1a(key):
    h = 0xcbf29ce484222325
    for c in key:
        h ^= c
        h = (h * 0x100000001b3) & M64
    return h


def signed(h):
    return h - (1 << 64) if h >= 1 << 63 else h


def kept(key, n):
    """core/sample.h sample_keep: FNV-1a, splitmix64's finalizer, mod n."""
    h = fnv1a(key)
    h ^= h >> 30
    h = (h * 0xbf58476d1ce4e5b9) & M64
    h ^= h >> 27
    h = (h * 0x94d049bb133111eb) & M64
    h ^= h >> 31
    return h % n == 0


def q(path, sql):
    """Tuples (mctest.db_rows gives dicts)."""
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def talk(s, payload, end, timeout=20, count=1):
    """Sends payload; reads until end has come count times."""
    s.sendall(payload)
    deadline = time.monotonic() + timeout
    buf = b""
    while buf.count(end) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("timed out waiting for %r x%d; got %r" % (end, count, buf[-300:]))
        s.settimeout(min(left, 5))
        try:
            d = s.recv(1 << 20)
        except socket.timeout:
            continue
        if not d:
            raise AssertionError("connection closed; got %r" % buf[-300:])
        buf += d
    return buf


COLS = ("run_id, seq, after_write, conn_id, t_ns, cmd, key, key_hash, key_len, hit, value_len,"
        " flags, exptime, class_id")


class ReadsTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-reads-"

    def reads(self, px, where="1"):
        return q(px.db, "SELECT %s FROM reads WHERE %s ORDER BY run_id, seq"
                              % (COLS, where))

    def test_commands_and_order(self):
        mc = self.mc(extra=["-m", "64"])
        px = self.proxy(mc.port)
        a = mctest.connect(px.port)
        b = mctest.connect(px.port)
        talk(a, b"set a 5 0 3\r\nabc\r\n", b"STORED\r\n")
        talk(a, b"get a nope a\r\n", b"END\r\n")
        talk(a, b"delete a\r\n", b"DELETED\r\n")
        talk(a, b"get a\r\n", b"END\r\n")
        talk(b, b"set k:1 7 0 100\r\n" + b"x" * 100 + b"\r\n", b"STORED\r\n")
        talk(b, b"mg k:1 v f s\r\nmg k:1 s\r\nmg k:1 v\r\nmg zz v\r\nmg zz q v\r\nmg zz2 q\r\n"
             b"mn\r\n", b"MN\r\n")
        talk(b, b"gat 100 k:1 a\r\n", b"END\r\n")
        talk(b, b"gats 0 k:1\r\n", b"END\r\n")
        talk(b, b"gets k:1\r\n", b"END\r\n")
        a.close()
        b.close()
        self.stop_clean(px)
        rows = self.reads(px)
        sets = q(px.db, "SELECT seq, key, class_id FROM sets ORDER BY seq")
        self.assertEqual([s[1] for s in sets], ["a", "a", "k:1"], sets)
        cls_a, cls_k = sets[0][2], sets[2][2]
        self.assertIsNotNone(cls_a)
        got = [(r[1], r[2], r[5], r[6], r[9], r[10], r[11], r[12], r[13]) for r in rows]
        want = [
            # seq, after_write, cmd, key, hit, value_len, flags, exptime, class_id
            (1, 1, "get", "a", 1, 3, 5, None, cls_a),
            (2, 1, "get", "nope", 0, None, None, None, None),
            (3, 1, "get", "a", 1, 3, 5, None, cls_a),
            (4, 2, "get", "a", 0, None, None, None, None),
            (5, 3, "mg", "k:1", 1, 100, 7, None, cls_k),
            (6, 3, "mg", "k:1", 1, 100, None, None, cls_k),  # HD with s: size, no flags
            (7, 3, "mg", "k:1", 1, 100, None, None, cls_k),
            (8, 3, "mg", "zz", 0, None, None, None, None),
            (9, 3, "mg", "zz", 0, None, None, None, None),  # quiet miss: silent
            (10, 3, "mg", "zz2", 0, None, None, None, None),
            (11, 3, "gat", "k:1", 1, 100, 7, 100, cls_k),
            (12, 3, "gat", "a", 0, None, None, 100, None),
            (13, 3, "gats", "k:1", 1, 100, 7, 0, cls_k),
            (14, 3, "gets", "k:1", 1, 100, 7, None, cls_k),
        ]
        self.assertEqual(got, want)
        conns = {r[1]: r[3] for r in rows}
        self.assertEqual(len({conns[1], conns[2], conns[3], conns[4]}), 1)
        self.assertEqual(len({conns[i] for i in range(5, 15)}), 1)
        self.assertNotEqual(conns[1], conns[5])
        for r in rows:
            self.assertEqual(r[7], signed(fnv1a(r[6].encode())), r)
            self.assertEqual(r[8], len(r[6]), r)
        # the order: set(1) get get get delete(2) get set(3) ...
        merged = q(
            px.db, "SELECT kind, pos, rank FROM (SELECT 'w' AS kind, seq AS pos, 0 AS rank"
            " FROM sets UNION ALL SELECT 'r', after_write, seq FROM reads) ORDER BY pos, rank")
        self.assertEqual("".join(m[0] for m in merged), "wrrrwrw" + "r" * 10)
        # aggregates: every read, hits in the item's class, the miss on a
        # (deleted) key in its last class, never-written keys in class 0
        agg = dict(((c, (n, h, m)) for c, n, h, m in q(
            px.db, "SELECT class_id, sum(reads), sum(hits), sum(misses) FROM agg_reads"
            " GROUP BY class_id")))
        self.assertEqual(sum(v[0] for v in agg.values()), 14, agg)
        self.assertEqual(agg[0], (4, 0, 4), agg)  # nope, zz, zz (quiet), zz2
        self.assertEqual(agg[cls_a], (4, 2, 2), agg)  # a's misses after its delete
        self.assertEqual(agg[cls_k], (6, 6, 0), agg)

    def test_multigets(self):
        mc = self.mc(extra=["-m", "64"])
        px = self.proxy(mc.port, http=True)
        rnd = random.Random(7)
        keys = [b"mk:%d" % i for i in range(100)]
        present = {k: rnd.randint(1, 900) for k in keys if rnd.random() < 0.6}
        s = mctest.connect(px.port)
        mctest.set_items(s, [(k, b"v" * n) for k, n in present.items()])
        line = b"get " + b" ".join(keys) + b"\r\n"
        c2 = mctest.connect(px.port)
        talk(s, line * 5, b"END\r\n", count=5)
        talk(c2, line.replace(b"get ", b"gets ") * 3, b"END\r\n", count=3)
        # a line longer than the 2,048 bytes the parser keeps
        long_keys = [b"long:%040d" % i for i in range(100)]
        talk(s, b"get " + b" ".join(long_keys) + b" mk:0\r\n", b"END\r\n")
        h = mctest.http_json(px.http_port, "GET", "/health")
        s.close()
        c2.close()
        self.stop_clean(px)
        rows = self.reads(px)
        multi = [r for r in rows if r[6].startswith("mk:")]
        self.assertEqual(len(multi), 800, len(multi))  # the long line's mk:0 is past the cut
        for i, r in enumerate(multi[:800]):
            k = keys[i % 100]
            self.assertEqual(r[6], k.decode(), r)
            self.assertEqual(r[5], "get" if i < 500 else "gets", r)
            self.assertEqual(r[9], 1 if k in present else 0, r)
            self.assertEqual(r[10], present.get(k), r)
        # seqs have no holes, each multiget's keys in key order
        self.assertEqual([r[1] for r in rows], list(range(1, len(rows) + 1)))
        longs = [r for r in rows if r[6].startswith("long:")]
        lost = h["recorder"]["lost"]["read_key_cut"]
        self.assertGreater(lost, 0, h["recorder"]["lost"])
        self.assertEqual(len(longs) + lost, 101, lost)
        self.assertEqual([r[6] for r in longs], [k.decode() for k in long_keys[:len(longs)]])
        self.assertTrue(all(r[9] == 0 for r in longs))

    def test_key_modes(self):
        mc = self.mc()
        for mode, want in (("hash", None), ("prefix", "user")):
            px = self.proxy(mc.port, keys=mode, name="px-" + mode)
            s = mctest.connect(px.port)
            talk(s, b"set user:1 0 0 2\r\nhi\r\nget user:1 user:2\r\n", b"END\r\n")
            s.close()
            self.stop_clean(px)
            rows = self.reads(px)
            self.assertEqual([(r[6], r[7], r[8], r[9]) for r in rows],
                             [(want, signed(fnv1a(b"user:1")), 6, 1),
                              (want, signed(fnv1a(b"user:2")), 6, 0)], mode)

    def test_reads_off(self):
        mc = self.mc()
        px = self.proxy(mc.port, extra=["--reads", "off"])
        s = mctest.connect(px.port)
        talk(s, b"set x 0 0 1\r\n1\r\nget x y\r\nmg x v\r\n", b"VA 1\r\n1\r\n")
        s.close()
        self.stop_clean(px)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM reads"), 0)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM read_rows"), 0)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT sum(keys) FROM get_counts"), 3)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM sets"), 1)

    def test_sample_keys(self):
        n = 4
        mc = self.mc(extra=["-m", "64"])
        px = self.proxy(mc.port, extra=["--sample-keys", "1/%d" % n])
        keys = [b"sk:%d" % i for i in range(400)]
        s = mctest.connect(px.port)
        mctest.set_items(s, [(k, b"z" * 50) for k in keys[:300]])
        asked = 0
        for i in range(0, 400, 50):
            talk(s, b"get " + b" ".join(keys[i:i + 50]) + b"\r\n", b"END\r\n")
            asked += 50
        for k in keys[::7]:
            talk(s, b"mg " + k + b" v\r\n", b"\r\n")
            asked += 1
        s.close()
        self.stop_clean(px)
        want_reads = [k.decode() for i in range(0, 400, 50) for k in keys[i:i + 50]
                      if kept(k, n)] + [k.decode() for k in keys[::7] if kept(k, n)]
        rows = self.reads(px)
        self.assertEqual([r[6] for r in rows], want_reads)
        self.assertTrue(0 < len(want_reads) < asked)
        writes = [r[0] for r in q(px.db, "SELECT key FROM sets ORDER BY seq")]
        self.assertEqual(writes, [k.decode() for k in keys[:300] if kept(k, n)])
        self.assertEqual(mctest.db_scalar(px.db, "SELECT sum(reads) FROM agg_reads"), asked)
        hits = sum(1 for i in range(0, 400) if i < 300) + sum(1 for k in keys[::7]
                                                           if int(k[3:]) < 300)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT sum(hits) FROM agg_reads"), hits)

    def test_max_db_size_expires_reads(self):
        mc = self.mc(extra=["-m", "256"])
        px = self.proxy(mc.port, http=True, extra=["--max-db-size", "1m"])
        wl = self.write("r.wl", "connections 2\npipeline 64\nseed 3\n"
                        "repeat 6 {\n"
                        "set 6000 key=r:{rand:20000} size=uniform(10,300)\n"
                        "get 30000 key=r:{rand:20000}\n"
                        "}\n")
        rc, out, err = mctest.run_slabtap(["load", "--target", "127.0.0.1:%d" % px.port,
                                           "--workload", wl, "-q"], timeout=240)
        self.assertEqual(rc, 0, out + err)
        total = 6 * 30000
        mctest.wait_for(lambda: mctest.http_json(px.http_port, "GET", "/health")
                        ["recorder"]["rows_recorded"] >= 6 * 6000, 60, what="rows recorded")
        h = mctest.http_json(px.http_port, "GET", "/health")
        self.stop_clean(px)
        self.assertGreater(h["store"]["retention"]["rows_expired"], 0, h)
        n = mctest.db_scalar(px.db, "SELECT count(*) FROM reads")
        self.assertGreater(n, 0)
        self.assertLess(n, total // 2, "reads were not expired")
        # what is left is the newest: a suffix of the run's reads, which
        # all come after the oldest write kept
        lo, hi = q(px.db, "SELECT min(seq), max(seq) FROM reads")[0]
        self.assertEqual(hi, total)
        # a read answered after a step expired its neighbours outlives them
        # until the next step: the newest 80 % are whole
        newest = int(n * 0.8)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM reads WHERE seq > ?",
                                          (hi - newest,)), newest)
        # the reads kept came after the writes expired (the workload ends in
        # reads only: once no write is left, the oldest reads go on their own)
        oldest_write = mctest.db_scalar(px.db, "SELECT min(seq) FROM sets")
        expired_to = oldest_write - 1 if oldest_write is not None else 6 * 6000
        self.assertGreaterEqual(
            mctest.db_scalar(px.db, "SELECT min(after_write) FROM reads WHERE seq > ?",
                             (hi - newest,)), expired_to)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT sum(reads) FROM agg_reads"), total)
        self.assertLessEqual(os.path.getsize(px.db), (1 << 20) + 65536)

    def test_file_deleted_reads_counted_lost(self):
        """The file deleted under a read load: the reads it held are counted
        lost (file_deleted) in /health, /metrics and the last line, and the
        new file's reads + those = the keys asked for."""
        mc = self.mc(extra=["-m", "64"])
        px = self.proxy(mc.port, http=True)
        s = mctest.connect(px.port)
        mctest.set_items(s, [(b"d:%d" % i, b"q" * 20) for i in range(100)])
        batch = b"".join(b"get d:%d\r\n" % (i % 200) for i in range(2000))

        def health():  # 503 while the deleted file is being replaced
            st, _, body = mctest.http_request(px.http_port, "GET", "/health")
            return json.loads(body)["recorder"]

        talk(s, batch, b"END\r\n", count=2000)
        mctest.wait_for(lambda: health()["reads_recorded"] == 2000, 30, what="2000 reads")
        os.remove(px.db)
        mctest.wait_for(lambda: health()["reads_lost"]["file_deleted"] == 2000, 30,
                        what="the deleted file's 2000 reads counted lost")
        talk(s, batch, b"END\r\n", count=2000)
        mctest.wait_for(lambda: health()["reads_recorded"] == 2000, 30,
                        what="2000 reads in the new file")
        st, _, body = mctest.http_request(px.http_port, "GET", "/metrics")
        self.assertIn(b'slabtap_read_rows_lost_total{reason="file_deleted"} 2000', body)
        s.close()
        self.stop_clean(px)
        self.assertIn("2000 read rows recorded, 2000 lost (file_deleted 2000)",
                      px.stderr_text())
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM reads"), 2000)

    def test_sigterm_loses_nothing(self):
        mc = self.mc(extra=["-m", "64"])
        px = self.proxy(mc.port)
        s = mctest.connect(px.port)
        mctest.set_items(s, [(b"t:%d" % i, b"q" * 20) for i in range(0, 1000, 2)])
        batch = b"".join(b"get t:%d t:%d t:%d\r\n" % (i, i + 1, i + 2) for i in range(1000))
        sent = got = 0
        deadline = time.monotonic() + 60
        for _ in range(10):
            s.sendall(batch)
            sent += 3000
            # every answer read, the last ones just now: their rows are
            # still on their way to the file when SIGTERM comes
            buf = b""
            while buf.count(b"END\r\n") < 1000 and time.monotonic() < deadline:
                s.settimeout(max(0.1, deadline - time.monotonic()))
                try:
                    chunk = s.recv(1 << 20)
                except socket.timeout:
                    break
                if not chunk:
                    break
                buf += chunk
            got += buf.count(b"END\r\n")
        self.assertEqual(got, 10000)
        self.stop_clean(px)
        s.close()
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM reads"), sent)
        hits = 10 * sum(1 for i in range(1000) for k in (i, i + 1, i + 2) if k % 2 == 0 and k < 1000)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT sum(hit) FROM reads"), hits)

    def test_postgresql(self):
        with pgcluster.PgCluster() as pg:
            mc = self.mc()
            px = self.proxy(mc.port, db=pg.uri(), extra=["--spill", "off"])
            s = mctest.connect(px.port)
            talk(s, b"set p:1 3 0 4\r\nabcd\r\nget p:1 p:2\r\ndelete p:1\r\n"
                 b"mg p:1 v\r\ngat 9 p:2\r\n", b"END\r\n", count=2)
            s.close()
            self.stop_clean(px)
            got = pg.psql("SELECT seq, after_write, cmd, key, key_hash, key_len, hit, value_len,"
                          " flags, exptime, class_id IS NOT NULL FROM reads ORDER BY seq")
            h1, h2 = signed(fnv1a(b"p:1")), signed(fnv1a(b"p:2"))
            N = None
            want = [["1", "1", "get", "p:1", str(h1), "3", "1", "4", "3", N, "t"],
                    ["2", "1", "get", "p:2", str(h2), "3", "0", N, N, N, "f"],
                    ["3", "2", "mg", "p:1", str(h1), "3", "0", N, N, N, "f"],
                    ["4", "2", "gat", "p:2", str(h2), "3", "0", N, N, "9", "f"]]
            self.assertEqual([list(r) for r in got], want)


if __name__ == "__main__":
    unittest.main(verbosity=2)
