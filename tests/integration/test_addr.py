"""test_addr: the addresses slabtap listens on and connects to, against real
memcacheds.

- --listen :0 (every address: [::] dual-stack, 0.0.0.0 without IPv6), [::1]:0
  and unix:PATH (a stale file nothing answers on is replaced; 0660; removed
  at exit; a live one is refused): requests answered through each, the
  bound address printed on the `slabtap: listen ADDR` / `slabtap: http
  ADDR` lines and shown in /health.
- --upstream unix:PATH (memcached -s): requests through the proxy, in both
  upstream modes (ctest runs this file pooled and per-client), and the stats
  poller reads it (/health reachable, /api/slabs).
- --upstream with a name or :PORT whose first address refuses: the next
  one is tried (memcached on ::1 only).
- --upstream memcached.invalid:11211: the message names the cause; no
  database file.
- a second proxy on an admin port in use: the message names the address
  and --http, exit 1, no database file, no "handles left open".
- Authorization: bearer TOKEN (any case of the scheme) is accepted.
- top --memcached unix:PATH reads one frame; experiment --upstream unix:PATH
  runs against it.
"""
import os
import re
import signal
import socket
import stat
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

HOST = mctest.HOST


def ipv6_loopback():
    """True when this machine can bind ::1 (else the IPv6 tests skip)."""
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


HAS_V6 = ipv6_loopback()


def connect_addr(text, timeout=10):
    """A socket connected to an address as slabtap prints it."""
    if text.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(text[5:])
        return s
    host, port = text.rsplit(":", 1)
    host = host.strip("[]")
    if host in ("0.0.0.0", "::"):
        host = HOST
    s = socket.create_connection((host, int(port)), timeout=timeout)
    s.settimeout(timeout)
    return s


def set_get(sock, key=b"addr:k", value=b"hello"):
    """A set and a get through sock; the bytes memcached answered."""
    sock.sendall(b"set %s 0 0 %d\r\n%s\r\nget %s\r\n" % (key, len(value), value, key))
    return mctest.recv_until(sock, b"END\r\n")


def want_answer(key=b"addr:k", value=b"hello"):
    return b"STORED\r\nVALUE %s 0 %d\r\n%s\r\nEND\r\n" % (key, len(value), value)


class Addr(mctest.ServerTestCase):
    def start_proxy(self, args, name="proxy"):
        """slabtap proxy ARGS (no --listen/--http defaults added); waits for the
        start-up line; returns (process, {'listen': ..., 'http': ...}) from
        the `slabtap: listen` / `slabtap: http` lines."""
        mode = [] if "--upstream-conns" in args else ["--upstream-conns", mctest.UPSTREAM_CONNS]
        p = self.started(mctest.Process([mctest.SLABTAP, "proxy"] + mode + list(args),
                                        self.path(name + ".log"), env=mctest.slabtap_env()))
        mctest.wait_for(lambda: "slabtap: proxy " in p.stderr_text() or not p.alive(), 30,
                        what="the proxy's start-up line")
        err = p.stderr_text()
        self.assertTrue(p.alive(), err)
        lines = err.splitlines()
        # the two lines, in this order, before the summary line
        at = [i for i, l in enumerate(lines) if l.startswith("slabtap: listen ")]
        self.assertEqual(len(at), 1, err)
        self.assertTrue(lines[at[0] + 1].startswith("slabtap: http "), err)
        self.assertTrue(lines[at[0] + 2].startswith("slabtap: proxy "), err)
        return p, {"listen": lines[at[0]][len("slabtap: listen "):],
                   "http": lines[at[0] + 1][len("slabtap: http "):]}

    def stop_process(self, p):
        """SIGTERM to a proxy of start_proxy: exit 0, no sanitizer report."""
        p.signal(signal.SIGTERM)
        rc = p.wait(60)
        err = p.stderr_text()
        p.kill_hard()
        self.assertEqual(mctest.sanitizer_errors(err), [], err[-4000:])
        self.assertEqual(rc, 0, err[-3000:])
        self.assertNotIn("handles left open", err)

    def health(self, http):
        return mctest.http_json(int(http.rsplit(":", 1)[1]), "GET", "/health")

    # --- listening ---------------------------------------------------------

    def test_listen_every_address_port_0(self):
        mcd = self.mc()
        p, bound = self.start_proxy(["--listen", ":0", "--http", "%s:0" % HOST,
                                     "--upstream", "%s:%d" % (HOST, mcd.port),
                                     "--db", self.path("a.db")])
        m = re.match(r"(\[::\]|0\.0\.0\.0):(\d+)$", bound["listen"])
        self.assertTrue(m, bound)
        port = int(m.group(2))
        self.assertNotEqual(port, 0)
        if HAS_V6:
            self.assertEqual(m.group(1), "[::]", "dual-stack [::] where IPv6 works")
        mh = re.match(r"127\.0\.0\.1:(\d+)$", bound["http"])
        self.assertTrue(mh and int(mh.group(1)) != 0, bound)
        with mctest.connect(port) as s:  # IPv4
            self.assertEqual(set_get(s), want_answer())
        if HAS_V6:
            with socket.create_connection(("::1", port), timeout=10) as s:
                self.assertEqual(set_get(s, b"addr:v6"), want_answer(b"addr:v6"))
        h = self.health(bound["http"])
        self.assertEqual((h["listen"], h["http"]), (bound["listen"], bound["http"]))
        self.stop_process(p)

    @unittest.skipUnless(HAS_V6, "no IPv6 loopback on this machine (socket.has_ipv6 false or "
                         "::1 cannot be bound)")
    def test_listen_v6_loopback(self):
        mcd = self.mc()
        p, bound = self.start_proxy(["--listen", "[::1]:0", "--http", "off",
                                     "--upstream", "%s:%d" % (HOST, mcd.port),
                                     "--db", self.path("a.db")])
        self.assertRegex(bound["listen"], r"^\[::1\]:[1-9]\d*$")
        self.assertEqual(bound["http"], "off")
        with connect_addr(bound["listen"]) as s:
            self.assertEqual(set_get(s), want_answer())
        self.stop_process(p)

    def test_listen_unix(self):
        mcd = self.mc()
        path = self.path("px.sock")
        # a stale socket file: bound, never listening, closed
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(path)
        stale.close()
        self.assertTrue(stat.S_ISSOCK(os.stat(path).st_mode))
        p, bound = self.start_proxy(["--listen", "unix:" + path, "--http", "%s:0" % HOST,
                                     "--upstream", "%s:%d" % (HOST, mcd.port),
                                     "--db", self.path("a.db")])
        self.assertEqual(bound["listen"], "unix:" + path)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o660)
        for i in range(3):
            with connect_addr(bound["listen"]) as s:
                self.assertEqual(set_get(s, b"addr:u%d" % i), want_answer(b"addr:u%d" % i))
        self.assertEqual(self.health(bound["http"])["listen"], "unix:" + path)
        # a second proxy on the same socket: refused, the file left alone
        rc, out, err = mctest.run_slabtap(
            ["proxy", "--listen", "unix:" + path, "--http", "off",
             "--upstream", "%s:%d" % (HOST, mcd.port), "--db", self.path("b.db")], timeout=60)
        self.assertEqual(rc, 1, err)
        self.assertIn("cannot listen on unix:%s: something answers there already" % path, err)
        self.assertFalse(os.path.exists(self.path("b.db")), err)
        with connect_addr(bound["listen"]) as s:
            self.assertEqual(set_get(s), want_answer())
        self.stop_process(p)
        self.assertFalse(os.path.exists(path), "the socket file is removed at exit")
        rows = mctest.db_scalar(self.path("a.db"), "SELECT count(*) FROM writes")
        self.assertEqual(rows, 4)

    def test_listen_unix_not_a_socket(self):
        path = self.write("plain", "not a socket\n")
        rc, out, err = mctest.run_slabtap(
            ["proxy", "--listen", "unix:" + path, "--http", "off",
             "--upstream", "%s:1" % HOST, "--db", self.path("a.db")], timeout=60)
        self.assertEqual(rc, 1, err)
        self.assertIn("cannot listen on unix:%s: the path is there and is not a socket" % path,
                      err)
        with open(path) as f:
            self.assertEqual(f.read(), "not a socket\n")
        self.assertFalse(os.path.exists(self.path("a.db")))

    # --- upstream -----------------------------------------------------------------

    def test_upstream_unix(self):
        sock = self.path("mc.sock")
        mcd = self.mc(unix=sock)
        px = self.proxy("unix:" + sock, http=True, extra=["--stats-interval", "100"])
        for i in range(3):  # a few clients: per-client mode opens one each
            with mctest.connect(px.port) as s:
                self.assertEqual(set_get(s, b"addr:mc%d" % i, b"v%d" % i),
                                 want_answer(b"addr:mc%d" % i, b"v%d" % i))
        with mcd.connect() as s:  # memcached itself has them
            s.sendall(b"get addr:mc2\r\n")
            self.assertEqual(mctest.recv_until(s, b"END\r\n"), b"VALUE addr:mc2 0 2\r\nv2\r\nEND\r\n")

        def polled():
            h = mctest.health(px.http_port)  # 503 until the first sample
            return h["upstream"]["reachable"] and h["upstream"]["last_sample_age_ms"] >= 0 and h
        h = mctest.wait_for(polled, 20, what="the stats poller over the unix socket")
        self.assertEqual(h["upstream"]["address"], "unix:" + sock)
        self.assertTrue(h["upstream"]["pool_up"] or not mctest.POOLED)
        self.stop_clean(px)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM writes"), 3)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT upstream FROM runs"), "unix:" + sock)

    @unittest.skipUnless(HAS_V6, "no IPv6 loopback on this machine (socket.has_ipv6 false or "
                         "::1 cannot be bound)")
    def test_upstream_every_address(self):
        # memcached on ::1 only; ":PORT" is 0.0.0.0:PORT (refused here) and
        # then [::]:PORT (::1): the second address answers
        mcd = self.mc(host="::1")
        px = self.proxy(":%d" % mcd.port, http=True, extra=["--stats-interval", "100"])
        for i in range(3):
            with mctest.connect(px.port) as s:
                self.assertEqual(set_get(s, b"addr:v6-%d" % i), want_answer(b"addr:v6-%d" % i))

        def polled():
            h = mctest.health(px.http_port)  # 503 until the first sample
            return h["upstream"]["reachable"]
        mctest.wait_for(polled, 20, what="the stats poller on the second address")
        self.stop_clean(px)
        self.assertNotIn("upstream memcached unavailable", px.stderr_text())
        # top too
        rc, out, err = mctest.run_slabtap(["top", "--once", "--memcached", ":%d" % mcd.port,
                                           "--interval", "0"], timeout=60)
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("slabtap top: :%d  memcached " % mcd.port), out)

    @unittest.skipUnless(HAS_V6, "no IPv6 loopback on this machine")
    def test_upstream_localhost_v6_only(self):
        addrs = {ai[4][0] for ai in socket.getaddrinfo("localhost", 1, type=socket.SOCK_STREAM)}
        if "::1" not in addrs:
            self.skipTest("localhost does not resolve to ::1 here (%s): the :PORT test covers "
                          "a first address that refuses" % sorted(addrs))
        mcd = self.mc(host="::1")
        px = self.proxy("localhost:%d" % mcd.port)
        with mctest.connect(px.port) as s:
            self.assertEqual(set_get(s), want_answer())
        self.stop_clean(px)

    def test_upstream_does_not_resolve(self):
        rc, out, err = mctest.run_slabtap(
            ["proxy", "--listen", "%s:0" % HOST, "--http", "off",
             "--upstream", "memcached.invalid:11211", "--db", self.path("a.db")], timeout=60)
        self.assertEqual(rc, 2, err)
        first = err.splitlines()[0]
        self.assertRegex(first, r"^slabtap proxy: --upstream 'memcached\.invalid:11211': the name "
                         r"'memcached\.invalid' does not resolve \(.+\)$")
        self.assertFalse(os.path.exists(self.path("a.db")))

    def test_bad_addresses(self):
        cases = [
            (["--listen", "11311"], "slabtap proxy: --listen '11311' has no port (want HOST:PORT, "
             ":PORT, [IPv6]:PORT or unix:PATH)"),
            (["--listen", "::1:11311"], "slabtap proxy: --listen '::1:11311': an IPv6 address "
             "goes in brackets ([::1]:11211)"),
            (["--http", "unix:/x"], "slabtap proxy: --http unix:/x: the admin endpoint takes "
             "HOST:PORT or off"),
            (["--http", "%s:99999" % HOST], "slabtap proxy: --http '127.0.0.1:99999': port "
             "'99999' is not a number from 0 to 65535 (or off)"),
        ]
        for extra, msg in cases:
            with self.subTest(extra=extra):
                args = ["proxy", "--upstream", "%s:1" % HOST, "--db", self.path("a.db")]
                if "--listen" not in extra:
                    args += ["--listen", "%s:0" % HOST]
                rc, out, err = mctest.run_slabtap(args + extra, timeout=60)
                self.assertEqual(rc, 2, err)
                self.assertEqual(err.splitlines()[0], msg)
                self.assertFalse(os.path.exists(self.path("a.db")))

    # --- the admin endpoint -------------------------------------------------------

    def test_second_proxy_same_admin_port(self):
        mcd = self.mc()
        first = self.proxy(mcd.port, http=True)
        db = self.path("second.db")
        rc, out, err = mctest.run_slabtap(
            ["proxy", "--listen", "%s:0" % HOST, "--http", "%s:%d" % (HOST, first.http_port),
             "--upstream", "%s:%d" % (HOST, mcd.port), "--db", db], timeout=60)
        self.assertEqual(rc, 1, err)
        self.assertIn("cannot serve the admin endpoint on %s:%d: the address is in use (another "
                      "slabtap?); give --http HOST:PORT for another address or --http off"
                      % (HOST, first.http_port), err)
        self.assertNotIn("handles left open", err)
        for suffix in ("", "-wal", "-shm", "-journal"):
            self.assertFalse(os.path.exists(db + suffix), db + suffix)
        self.stop_clean(first)

    def test_bearer_any_case(self):
        mcd = self.mc()
        px = self.proxy(mcd.port, http=True, extra=["--http-token", "s3cret"])
        for auth, want in (("Bearer s3cret", 200), ("bearer s3cret", 200),
                           ("BEARER s3cret", 200), ("bEaReR s3cret", 200),
                           ("bearer S3CRET", 401), ("bearer  s3cret", 401),
                           ("Basic s3cret", 401), (None, 401)):
            with self.subTest(auth=auth):
                st, _, body = mctest.http_request(px.http_port, "GET", "/api/runs",
                                                  headers={"Authorization": auth} if auth else {})
                self.assertEqual(st, want, body)
        self.stop_clean(px)

    # --- top ----------------------------------------------------------------------

    def test_top_unix(self):
        sock = self.path("mc.sock")
        mcd = self.mc(unix=sock)
        with mcd.connect() as s:
            mctest.set_items(s, [(b"top:%d" % i, b"v" * 300) for i in range(50)])
        rc, out, err = mctest.run_slabtap(["top", "--once", "--memcached", "unix:" + sock,
                                           "--interval", "0"], timeout=60)
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("slabtap top: unix:%s  memcached " % sock), out)
        rows = [l.split() for l in out.splitlines() if l.split() and l.split()[0].isdigit()]
        self.assertTrue(any(int(r[2]) == 50 for r in rows), out)

    # --- experiment -----------------------------------------------------------------

    def test_experiment_upstream_unix(self):
        sock = self.path("mc.sock")
        self.mc(unix=sock, extra=["-m", "64", "-c", "1022"])
        self.write("knob.wl", "connections 2\npipeline 32\nseed 5\nphase load\n"
                   "set 3000 key=knb:{i:6} size=876\n")
        spec = self.write("one.exp", 'run ext memcached="-m 64 -c 1022" workload=knob.wl '
                          "gate=model items=3000\n")
        rc, out, err = mctest.run_slabtap(
            ["experiment", "--upstream", "unix:" + sock, "--results", self.path("results"),
             "--db", self.path("runs.db"), spec], timeout=300)
        self.assertEqual(rc, 0, err[-3000:])
        self.assertIn("== run ext: external memcached ", err)
        self.assertIn(" at unix:%s (not started by slabtap)" % sock, err)
        self.assertRegex(out, r"(?m)^gate ok +ext +every write recorded: 3000 rows")
        self.assertEqual(mctest.db_scalar(self.path("runs.db"), "SELECT upstream FROM runs"),
                         "unix:" + sock)


if __name__ == "__main__":
    unittest.main()
