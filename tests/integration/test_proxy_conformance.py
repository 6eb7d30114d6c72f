#!/usr/bin/env python3
"""Answers that must be memcached's, byte for byte, in the corners a review
found wrong: a quiet `ma` that creates its counter, `stats sizes_enable`
(STAT lines without END), an HTTP request line (memcached closes without a
word), a refused `watch`, `watch` connections that close, a complete request
in the same read as an over-long line. Each case runs against memcached
directly and through the proxy (pooled and, in the .per_client run, one
connection per client) and compares."""
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402


def talk(port, payload, until, timeout=10):
    """Sends payload on a new connection and reads until the bytes end with
    until; returns them."""
    with mctest.connect(port) as s:
        s.sendall(payload)
        return mctest.recv_until(s, until, timeout=timeout)


class Conformance(mctest.ServerTestCase):
    workdir_prefix = "slabtap-conf-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.direct = cls.class_mc(name="mc-direct")
        cls.behind = cls.class_mc(name="mc-behind")
        cls.px = cls.class_proxy(cls.behind.port, name="proxy-conf", http=True)

    def both(self, payload, until):
        a = talk(self.direct.port, payload, until)
        b = talk(self.px.port, payload, until)
        self.assertEqual(b, a, "through the proxy %r, direct %r" % (b, a))
        return a

    def test_quiet_ma_that_creates_answers_hd(self):
        got = self.both(b"ma ctr N0 q\r\nmn\r\n", b"MN\r\n")
        self.assertEqual(got, b"HD\r\nMN\r\n")
        got = self.both(b"set w1 0 0 1\r\n1\r\nma ctr2 N5 J7 q\r\nget w1\r\n",
                        b"VALUE w1 0 1\r\n1\r\nEND\r\n")
        self.assertEqual(got, b"STORED\r\nHD\r\nVALUE w1 0 1\r\n1\r\nEND\r\n")
        # an update of an existing counter is silent under q
        got = self.both(b"ma ctr q\r\nmn\r\n", b"MN\r\n")
        self.assertEqual(got, b"MN\r\n")

    def test_stats_sizes_toggles_have_no_end(self):
        payload = b"stats sizes_enable\r\nset a 0 0 1\r\n1\r\nms b 1 q\r\nx\r\nmn\r\n"
        got = self.both(payload, b"MN\r\n")
        self.assertEqual(got, b"STAT sizes_status enabled\r\nSTORED\r\nMN\r\n")
        got = self.both(b"stats sizes_disable\r\nget a\r\n", b"END\r\n")
        self.assertEqual(got, b"STAT sizes_status disabled\r\nVALUE a 0 1\r\n1\r\nEND\r\n")
        # the connection goes on afterwards
        self.assertEqual(self.both(b"version\r\n", b"\r\n")[:8], b"VERSION ")

    def test_http_request_line_closes_without_forwarding(self):
        for port, mc in ((self.direct.port, self.direct), (self.px.port, self.behind)):
            with mctest.connect(port) as s:
                s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n")
                time.sleep(0.3)
                try:
                    s.sendall(b"set proxy_pwned 0 0 3\r\nyes\r\n")
                except OSError:
                    pass
                closed, data = mctest.wait_closed(s, timeout=10)
                self.assertTrue(closed, "port %d: still open" % port)
                self.assertEqual(data, b"")
            self.assertEqual(mctest.exchange(mc.port, b"get proxy_pwned\r\n"), b"END\r\n",
                             "port %d: the body after the HTTP line was run" % port)
        # the proxy's other clients and its upstreams are unaffected
        self.assertEqual(talk(self.px.port, b"mn\r\n", b"MN\r\n"), b"MN\r\n")

    def test_refused_watch_goes_on(self):
        # memcached refuses a watch behind another request in the same read
        a = talk(self.direct.port, b"version\r\nwatch\r\nget nope\r\n", b"END\r\n")
        b = talk(self.px.port, b"version\r\nwatch\r\nget nope\r\n", b"END\r\n")
        self.assertRegex(a, rb"^VERSION [^\r]+\r\nERROR cannot pipeline other commands before "
                            rb"watch\r\nEND\r\n$")
        self.assertEqual(b.split(b"\r\n", 1)[1], a.split(b"\r\n", 1)[1])

    def test_watch_connections_close_with_their_clients(self):
        for _ in range(25):  # memcached allows 20 watchers at most
            with mctest.connect(self.px.port) as s:
                s.sendall(b"watch mutations\r\n")
                self.assertEqual(mctest.recv_exact(s, 4), b"OK\r\n")
        # the watchers are gone: a new one is accepted, and it sees a mutation
        with mctest.connect(self.px.port) as w:
            w.sendall(b"watch mutations\r\n")
            self.assertEqual(mctest.recv_exact(w, 4), b"OK\r\n")
            self.assertEqual(talk(self.px.port, b"set wm 0 0 1\r\nz\r\n", b"\r\n"),
                             b"STORED\r\n")
            line = mctest.recv_until(w, b"\n")  # watch lines end in \n alone
            self.assertIn(b"key=wm", line)
        mctest.wait_for(lambda: int(mctest.mc_stats(self.behind.port)["curr_connections"]) < 12,
                        10, what="memcached's watch connections closing")

    def test_request_before_an_overlong_line_is_run(self):
        for port, mc in ((self.direct.port, self.direct), (self.px.port, self.behind)):
            with mctest.connect(port) as s:
                s.sendall(b"set s3l 0 0 1\r\nx\r\n" + b"q" * 3000)
                closed, data = mctest.wait_closed(s, timeout=10)
                self.assertTrue(closed)
                self.assertIn(data, (b"", b"STORED\r\n"))
            mctest.wait_for(lambda: mctest.exchange(mc.port, b"get s3l\r\n") ==
                            b"VALUE s3l 0 1\r\nx\r\nEND\r\n", 5, what="s3l stored")
            mctest.exchange(mc.port, b"delete s3l\r\n")

    def test_binary_protocol_passes_through(self):
        # a binary-protocol NOOP (opcode 0x0a) and VERSION (0x0b)
        def req(op, opaque):
            return bytes([0x80, op, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) + opaque + bytes(8)
        payload = req(0x0a, b"\x00\x00\x00\x01") + req(0x0b, b"\x00\x00\x00\x02")

        def ask(port):
            with mctest.connect(port) as s:
                s.sendall(payload)
                head = mctest.recv_exact(s, 24)
                first = head + mctest.recv_exact(s, int.from_bytes(head[8:12], "big"))
                head = mctest.recv_exact(s, 24)
                return first + head + mctest.recv_exact(s, int.from_bytes(head[8:12], "big"))
        self.assertEqual(ask(self.px.port), ask(self.direct.port))


class MemcachedCloses(mctest.ServerTestCase):
    """memcached closing a connection on purpose (idle_timeout, its -c limit)
    closes the client that owns that connection, as direct; a memcached that
    is gone is SERVER_ERROR and a connection that stays (test_proxy_failures).
    A pooled connection is slabtap's: memcached closing it is not the
    clients' business, and the next request is served on a new one."""
    workdir_prefix = "slabtap-closes-"

    def test_idle_timeout(self):
        mc = self.mc(extra=["-o", "idle_timeout=1"])
        px = self.proxy(mc.port, http=True)
        direct = mctest.connect(mc.port)
        s = mctest.connect(px.port)
        for c in (direct, s):
            c.sendall(b"set k 0 0 1\r\nv\r\n")
            self.assertEqual(mctest.recv_line(c), b"STORED\r\n")
        # memcached's idle check runs every second or so: wait past two
        closed, data = mctest.wait_closed(direct, timeout=10)
        self.assertTrue(closed)
        self.assertEqual(data, b"")
        if mctest.POOLED:
            time.sleep(0.5)
            s.sendall(b"get k\r\n")
            self.assertEqual(mctest.recv_until(s, b"END\r\n"), b"VALUE k 0 1\r\nv\r\nEND\r\n")
        else:
            closed, data = mctest.wait_closed(s, timeout=10)
            self.assertTrue(closed)
            self.assertEqual(data, b"")
            m = mctest.http_request(px.http_port, "GET", "/metrics")[2].decode()
            self.assertIn("slabtap_upstream_closes_passed_on_total 1\n", m)
            self.assertIn("slabtap_upstream_error_replies_total 0\n", m)
        direct.close()
        s.close()
        self.stop_clean(px)

    def test_connection_limit(self):
        """memcached -c: the client past the limit reads memcached's
        refusal line, then EOF, through a connection of its own."""
        mc = self.mc(extra=["-c", "16", "-t", "1"])
        px = self.proxy(mc.port)

        def fill(port, limit=40):
            """Connects until memcached refuses; the refused one's bytes."""
            held = []
            try:
                for _ in range(limit):
                    c = mctest.connect(port)
                    held.append(c)
                    c.sendall(b"version\r\n")
                    line = mctest.recv_line(c)
                    if not line.startswith(b"VERSION "):
                        closed, rest = mctest.wait_closed(c, timeout=10)
                        return line + rest, closed
                return None, False
            finally:
                for c in held:
                    c.close()
        direct, closed = fill(mc.port)
        self.assertEqual(direct, b"ERROR Too many open connections\r\n")
        self.assertTrue(closed)
        def room():
            try:  # at the limit, the stats connection itself is refused
                return int(mctest.mc_stats(mc.port)["curr_connections"]) < 6
            except (AssertionError, OSError):
                return False
        mctest.wait_for(room, 10, what="memcached's connections closing")
        got, closed = fill(px.port)
        if mctest.POOLED:
            self.assertIsNone(got)  # 2 connections for all clients: never refused
        else:
            self.assertEqual(got, direct)
            self.assertTrue(closed)
        self.stop_clean(px)


if __name__ == "__main__":
    unittest.main(verbosity=2)
