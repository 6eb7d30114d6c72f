#!/usr/bin/python3
"""test_shared_conn: what one client sends never breaks a connection others share.

On a shared upstream connection slabtap forwards only whole requests that
memcached answers on that connection without closing it, swallowing other
bytes or changing its mode (docs/shared-connections.md lists every case from
memcached's sources). Each test here sends one hostile or unusual stream
from one client while victim clients on the same connection
(--upstream-conns 1) set and get their own keys and check every answer; the
hostile client's own bytes must equal what a direct memcached answers.

 1. quit split over two reads ("q", "uit\\r\\n"), 20 times
 2. an HTTP request line split in two ("version\\r\\nP", "OST /x HTTP/1.0\\r\\n"),
    in both upstream modes (per-client: memcached's bytes, then the close,
    never slabtap's SERVER_ERROR)
 3. a 20 KB request line without a get (memcached closes the connection)
 4. a valid 3.4 KB set line (padded with spaces) while victims fill the
    shared connection with 13 KB writes: it moves to a connection of its own
 5. gat with a bad exptime and a 251-byte key: memcached's own error
 6. a 50 x 1 MB multiget read 64 KB at a time: all of it, no disconnect, and
    the client moves off the shared connection for its next ones

Needs memcached, $SLABTAP (see mctest.py). 127.0.0.1 only; every wait is
bounded.
"""
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

ERR = mctest.PROXY_ERROR_LINE


def note(msg):
    sys.stderr.write("[shared:%s] %s\n" % ("pooled" if mctest.POOLED else "per-client", msg))
    sys.stderr.flush()


def metrics(px):
    return mctest.proxy_metrics(px)


class Victims:
    """n clients on their own connections through the proxy, each setting and
    getting keys of its own (v<i>:<n>, values naming key and round) and
    checking every byte of every answer; batch > 1 pipelines that many
    set+get pairs per write (a batch of 40 is ~13 KB on the wire)."""

    def __init__(self, port, n=8, batch=1):
        self.port, self.n, self.batch = port, n, batch
        self.stop = threading.Event()
        self.errors = []
        self.rounds = [0] * n
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                        for i in range(n)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.finish()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(30)
        if any(t.is_alive() for t in self.threads):
            self.errors.append("a victim did not finish in 30 s")

    def _run(self, i):
        try:
            s = mctest.connect(self.port)
        except OSError as e:
            self.errors.append("victim %d: connect: %s" % (i, e))
            return
        with s:
            n = 0
            while not self.stop.is_set():
                req, want = [], []
                for _ in range(self.batch):
                    key = b"v%d:%d" % (i, n % 500)
                    val = b"%s=%d" % (key, n) + b"." * (n % 200)
                    req.append(b"set %s 0 0 %d\r\n%s\r\nget %s\r\n" % (key, len(val), val, key))
                    want.append(b"STORED\r\nVALUE %s 0 %d\r\n%s\r\nEND\r\n" % (key, len(val), val))
                    n += 1
                want = b"".join(want)
                try:
                    s.sendall(b"".join(req))
                    got = mctest.recv_exact(s, len(want), timeout=20)
                except Exception as e:  # a disconnect or a short answer
                    self.errors.append("victim %d round %d: %r" % (i, self.rounds[i], e))
                    return
                if got != want:
                    self.errors.append("victim %d round %d: got %r, want %r"
                                       % (i, self.rounds[i], got[:200], want[:200]))
                    return
                self.rounds[i] += 1


def send_split(port, pieces, pause=0.05, wait=5):
    """Sends pieces as separate TCP writes with pauses between (each its own
    read at the other end) and returns (closed, bytes answered)."""
    with mctest.connect(port) as s:
        for k, p in enumerate(pieces):
            if k:
                time.sleep(pause)
            try:
                s.sendall(p)
            except (BrokenPipeError, ConnectionResetError):
                break
        return mctest.wait_closed(s, timeout=wait)


class SharedConnection(mctest.ServerTestCase):
    workdir_prefix = "slabtap-shared-"

    def setUp(self):
        super().setUp()
        self.direct = self.mc(name="mc-direct", extra=["-m", "256"])
        self.behind = self.mc(name="mc-behind", extra=["-m", "256"])

    def pooled_proxy(self, *extra):
        conns = ["--upstream-conns", "1"] if mctest.POOLED else []
        return self.proxy(self.behind.port, http=True, extra=conns + list(extra))

    def assert_victims_ok(self, v, px):
        self.assertEqual(v.errors, [], "victims disturbed; proxy log:\n" +
                         px.stderr_text()[-3000:])
        self.assertGreater(min(v.rounds), 0, "a victim never finished a round")

    def assert_no_upstream_loss(self, px):
        m = metrics(px)
        self.assertEqual(m["slabtap_upstream_errors_total"], 0, px.stderr_text()[-3000:])
        self.assertEqual(m["slabtap_upstream_error_replies_total"], 0)
        self.assertEqual(m["slabtap_unpaired_responses_total"], 0)
        return m

    # 1 --------------------------------------------------------------------------------------
    def test_01_split_quit(self):
        px = self.pooled_proxy()
        want = send_split(self.direct.port, [b"q", b"uit\r\n"])
        self.assertEqual(want, (True, b""), "memcached itself answers otherwise")
        with Victims(px.port) as v:
            for k in range(20):
                got = send_split(px.port, [b"q", b"uit\r\n"])
                self.assertEqual(got, want, "split quit %d" % k)
                got = send_split(px.port, [b"mn\r\nqu", b"it", b"\r\n"])
                self.assertEqual(got, (True, b"MN\r\n"), "split quit after mn %d" % k)
        self.assert_victims_ok(v, px)
        self.assert_no_upstream_loss(px)
        self.stop_clean(px)

    # 2 --------------------------------------------------------------------------------------
    def test_02_split_http_line(self):
        px = self.pooled_proxy()
        cases = [[b"version\r\nP", b"OST /x HTTP/1.0\r\n"],
                 [b"version\r\nPOST /x HTTP/1.0\r\n"],
                 [b"GET / HT", b"TP/1.1\r\nHost: x\r\n\r\n"]]
        with Victims(px.port) as v:
            for pieces in cases:
                want = send_split(self.direct.port, pieces)
                self.assertTrue(want[0], "memcached did not close on %r" % pieces)
                for k in range(5):
                    got = send_split(px.port, pieces)
                    self.assertNotIn(ERR, got[1])
                    self.assertEqual(got, want, "%r, try %d" % (pieces, k))
        self.assert_victims_ok(v, px)
        self.assert_no_upstream_loss(px)
        self.stop_clean(px)

    # 3 --------------------------------------------------------------------------------------
    def test_03_long_line_closes_only_its_client(self):
        px = self.pooled_proxy()
        line = b"set k 0 0 1" + b" " * 20000 + b"\r\nx\r\n"
        want = send_split(self.direct.port, [line])
        self.assertEqual(want, (True, b""), "memcached itself answers otherwise")
        with Victims(px.port) as v:
            for k in range(10):
                self.assertEqual(send_split(px.port, [line]), want, "try %d" % k)
                self.assertEqual(send_split(px.port, [b"mn\r\n" + line]), (True, b"MN\r\n"))
        self.assert_victims_ok(v, px)
        self.assert_no_upstream_loss(px)
        self.stop_clean(px)

    # 4 --------------------------------------------------------------------------------------
    def test_04_long_valid_line_moves(self):
        """A 3.4 KB set line is served by memcached when it reads it whole;
        on a shared connection, behind 13 KB writes of the victims, memcached's
        16 KB read would end inside it and close the connection: it goes on
        a connection of its own."""
        px = self.pooled_proxy()
        val = b"hello"
        line = b"set long 0 0 5" + b" " * 3400 + b"\r\n" + val + b"\r\n"
        want = mctest.exchange(self.direct.port, line)
        self.assertEqual(want, b"STORED\r\n")
        with Victims(px.port, batch=40) as v:
            for k in range(20):
                self.assertEqual(mctest.exchange(px.port, line), want, "try %d" % k)
        self.assert_victims_ok(v, px)
        m = self.assert_no_upstream_loss(px)
        if mctest.POOLED:
            self.assertGreaterEqual(m["slabtap_clients_moved_total"], 20)
        with mctest.connect(px.port) as s:
            s.sendall(b"get long\r\n")
            self.assertEqual(mctest.recv_exact(s, 28), b"VALUE long 0 5\r\nhello\r\nEND\r\n")
        self.stop_clean(px)

    # 5 --------------------------------------------------------------------------------------
    def test_05_gat_bad_exptime_long_key(self):
        px = self.pooled_proxy()
        key = b"k" * 251
        for payload in (b"gat xx " + key + b"\r\n", b"gats -x " + key + b" b\r\n",
                        b"gat 10 " + key + b"\r\n", b"gat 1" + b"0" * 30 + b" a\r\n"):
            want = mctest.exchange(self.direct.port, payload)
            self.assertEqual(mctest.exchange(px.port, payload), want, payload[:40])
        self.stop_clean(px)

    # 6 --------------------------------------------------------------------------------------
    def test_06_big_multiget_reader_is_served(self):
        """50 x 1 MB in one multiget, read 64 KB at a time: every byte, as
        direct; pooled, the reader is not disconnected and moves to a
        connection of its own for the next multiget."""
        direct = self.mc(name="mc-direct-big", extra=["-m", "256"])
        behind = self.mc(name="mc-behind-big", extra=["-m", "256"])
        conns = ["--upstream-conns", "1"] if mctest.POOLED else []
        px = self.proxy(behind.port, http=True, extra=conns)
        val = bytes(range(256)) * 3900  # 998,400 bytes
        keys = [b"big%d" % i for i in range(50)]
        for port in (direct.port, px.port):
            with mctest.connect(port) as s:
                mctest.set_items(s, [(k, val) for k in keys])
        req = b"get " + b" ".join(keys) + b"\r\n"
        want = b"".join(b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(val), val) for k in keys) + b"END\r\n"

        def pull(port):
            with mctest.connect(port) as s:
                out = []
                for _ in range(2):
                    s.sendall(req)
                    buf = bytearray()
                    deadline = time.monotonic() + 60
                    while len(buf) < len(want) and time.monotonic() < deadline:
                        d = s.recv(65536)
                        if not d:
                            break
                        buf += d
                    out.append(bytes(buf))
                return out

        self.assertEqual(pull(direct.port), [want, want])
        with Victims(px.port, n=4) as v:
            got = pull(px.port)
        self.assertEqual(len(got[0]), len(want))
        self.assertTrue(got[0] == want and got[1] == want, "answers differ from direct")
        self.assert_victims_ok(v, px)
        m = self.assert_no_upstream_loss(px)
        self.assertEqual(m["slabtap_slow_clients_closed_total"], 0)
        self.assertEqual(m["slabtap_memory_clients_closed_total"], 0)
        if mctest.POOLED:
            self.assertEqual(m["slabtap_clients_moved_big_answers_total"], 1)
        self.stop_clean(px)


if __name__ == "__main__":
    unittest.main(verbosity=2)
