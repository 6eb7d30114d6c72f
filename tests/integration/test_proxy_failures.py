#!/usr/bin/python3
"""test_proxy_failures: what clients see when things go wrong.

- memcached unreachable at start: SERVER_ERROR lines, the connection stays
  open, and once memcached listens the same connection is served again.
- memcached killed (SIGKILL) with requests pending: each gets SERVER_ERROR,
  the client stays connected, a restarted memcached serves it again; the
  rows say upstream_error.
- a request line over 2048 bytes without a newline closes only that client
  (memcached does the same); a long multiget line does not.
- random garbage gets memcached's own answers, byte for byte.
- SIGTERM (and SIGHUP, a closed terminal) with traffic in flight: exit 0,
  every answered write recorded, runs.ended_ns set; SIGHUP after N sets
  answered: N rows recorded, 0 lost.
- --on-full drop --queue 16 under a burst: clients get every answer;
  rows_dropped + rows recorded == writes answered.
- bad flags: usage and exit 2; --help: exit 0.
Every proxy run must exit without a sanitizer report.

Needs memcached on PATH and $SLABTAP. 127.0.0.1 only; bounded waits.
"""
import os
import random
import re
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

ERR = mctest.PROXY_ERROR_LINE


def until_served(s, timeout=20):
    """Sends `version` on s until memcached answers it (not the proxy's
    SERVER_ERROR); bounded. Returns how many SERVER_ERROR answers came."""
    deadline = time.monotonic() + timeout
    errors = 0
    while True:
        s.sendall(b"version\r\n")
        line = mctest.recv_line(s, timeout=10)
        if line.startswith(b"VERSION "):
            return errors
        if line != ERR:
            raise AssertionError("unexpected answer while waiting for memcached: %r" % line)
        errors += 1
        if time.monotonic() > deadline:
            raise AssertionError("memcached not reachable through the proxy after %ds" % timeout)
        time.sleep(0.05)


class Failures(mctest.ServerTestCase):

    def test_upstream_unreachable_at_start(self):
        # a port that refuses connections until memcached starts on it
        # (reserved: nothing else can take it meanwhile)
        closed = mctest.reserve_port()
        self.addCleanup(closed.release)
        port = closed.port
        px = self.proxy(port, name="proxy-unreach")
        with mctest.connect(px.port) as s:
            s.sendall(b"get a\r\n")
            self.assertEqual(mctest.recv_line(s), ERR)
            s.sendall(b"set a 0 0 1\r\nx\r\nset b 0 0 1 noreply\r\ny\r\nmg a v\r\n")
            self.assertEqual(mctest.recv_exact(s, 2 * len(ERR)), ERR * 2)
            mc = self.mc(port=port, name="mc-late")
            closed.release()
            until_served(s)
            s.sendall(b"set a 0 0 2\r\nok\r\nget a\r\n")
            self.assertEqual(mctest.recv_until(s, b"END\r\n"), b"STORED\r\nVALUE a 0 2\r\nok\r\nEND\r\n")
        self.stop_clean(px)
        rows = mctest.db_rows(px.db, "SELECT cmd, key, answer FROM sets ORDER BY seq")
        self.assertEqual([(r["cmd"], r["key"], r["answer"]) for r in rows],
                         [("set", "a", "upstream_error"), ("set", "b", "upstream_error"),
                          ("set", "a", "STORED")])
        mc.stop()

    def test_memcached_killed_with_requests_pending(self):
        mc = self.mc(name="mc-killed")
        port = mc.port
        px = self.proxy(port, name="proxy-killed")
        with mctest.connect(px.port) as s, mctest.connect(px.port) as idle:
            s.sendall(b"set k 0 0 1\r\nv\r\n")
            self.assertEqual(mctest.recv_line(s), b"STORED\r\n")
            idle.sendall(b"version\r\n")
            self.assertTrue(mctest.recv_line(idle).startswith(b"VERSION "))
            # memcached stops answering; three requests go out and wait
            mc.signal(signal.SIGSTOP)
            s.sendall(b"get k\r\nset k2 0 0 1\r\ny\r\nincr n 1\r\nset k3 0 0 1 noreply\r\nz\r\n")
            time.sleep(0.3)  # not needed for correctness: the answers are the same either way
            mc.kill_hard()   # SIGKILL
            self.assertEqual(mctest.recv_exact(s, 3 * len(ERR), timeout=20), ERR * 3)
            # still connected; memcached is gone: the proxy answers for it
            s.sendall(b"get k\r\n")
            self.assertEqual(mctest.recv_line(s), ERR)
            mc2 = self.mc(port=port, name="mc-restarted")
            until_served(s)
            until_served(idle)
            s.sendall(b"get k\r\nset k 0 0 2\r\nv2\r\nget k\r\n")
            self.assertEqual(mctest.recv_until(s, b"END\r\nSTORED\r\nVALUE k 0 2\r\nv2\r\nEND\r\n"),
                             b"END\r\nSTORED\r\nVALUE k 0 2\r\nv2\r\nEND\r\n")
        self.stop_clean(px)
        rows = mctest.db_rows(px.db, "SELECT cmd, key, answer FROM sets ORDER BY seq")
        self.assertEqual([(r["cmd"], r["key"], r["answer"]) for r in rows],
                         [("set", "k", "STORED"), ("set", "k2", "upstream_error"),
                          ("incr", "n", "upstream_error"), ("set", "k3", "upstream_error"),
                          ("set", "k", "STORED")])
        mc2.stop()

    def test_connection_limit_refuses_in_memcacheds_words(self):
        """Past --max-conns (by default what the fd limit leaves room for) a
        new client reads memcached's own refusal line and is closed, and
        each is counted; before, libuv at the fd limit accepted and closed
        them itself, unseen (153 of 200 clients, 0 counted)."""
        mc = self.mc()
        px = self.proxy(mc.port, http=True, extra=["--max-conns", "10"])
        held, refused = [], 0
        try:
            for _ in range(25):
                c = mctest.connect(px.port)
                c.sendall(b"version\r\n")
                line = mctest.recv_line(c)
                if line.startswith(b"VERSION "):
                    held.append(c)
                    continue
                self.assertEqual(line, b"ERROR Too many open connections\r\n")
                closed, rest = mctest.wait_closed(c, timeout=10)
                self.assertTrue(closed)
                self.assertEqual(rest, b"")
                c.close()
                refused += 1
            self.assertEqual((len(held), refused), (10, 15))
            m = mctest.http_request(px.http_port, "GET", "/metrics")[2].decode()
            self.assertIn("slabtap_connections_refused_total 15\n", m)
            self.assertIn("slabtap_connections_limit 10\n", m)
        finally:
            for c in held:
                c.close()
        # room again once they have gone
        mctest.wait_for(lambda: "slabtap_connections_open 0\n" in
                        mctest.http_request(px.http_port, "GET", "/metrics")[2].decode(), 10,
                        what="connections closed")
        with mctest.connect(px.port) as c:
            c.sendall(b"version\r\n")
            self.assertTrue(mctest.recv_line(c).startswith(b"VERSION "))
        self.assertIn("refusing a new one", px.stderr_text())
        self.stop_clean(px)

    def test_long_line_closes_only_that_client(self):
        mc = self.mc(name="mc-long")
        px = self.proxy(mc.port, name="proxy-long")
        for port in (mc.port, px.port):
            with mctest.connect(port) as other, mctest.connect(port) as bad:
                other.sendall(b"set o 0 0 1\r\no\r\n")
                self.assertEqual(mctest.recv_line(other), b"STORED\r\n")
                bad.sendall(b"x" * 3000)
                closed, data = mctest.wait_closed(bad, timeout=10)
                self.assertTrue(closed, "port %d: a 3000-byte line did not close the client" % port)
                self.assertEqual(data, b"")
                other.sendall(b"get o\r\n")
                self.assertEqual(mctest.recv_until(other, b"END\r\n"), b"VALUE o 0 1\r\no\r\nEND\r\n")
            # requests before the long line: memcached may or may not answer
            # them before it closes; the proxy must not answer for it
            with mctest.connect(port) as bad:
                bad.sendall(b"get o\r\nset p 0 0 1\r\np\r\n" + b"y" * 3000)
                closed, data = mctest.wait_closed(bad, timeout=10)
                self.assertTrue(closed)
                self.assertIn(data, (b"", b"VALUE o 0 1\r\no\r\nEND\r\n",
                                     b"VALUE o 0 1\r\no\r\nEND\r\nSTORED\r\n"),
                              "port %d: answers before the close" % port)
        # a multiget line may be longer than 2048 bytes
        keys = b" ".join(b"key%05d" % i for i in range(400)) + b" o"
        line = b"get " + keys + b"\r\n"
        self.assertGreater(len(line), 3000)
        a = mctest.exchange(mc.port, line)
        b = mctest.exchange(px.port, line)
        self.assertEqual(a, b"VALUE o 0 1\r\no\r\nEND\r\n")
        self.assertEqual(a, b)
        self.stop_clean(px)

    def test_garbage_gets_memcacheds_answers(self):
        direct = self.mc(name="mc-g1")
        behind = self.mc(name="mc-g2")
        px = self.proxy(behind.port, name="proxy-garbage")
        for seed in range(40):
            g = garbage(random.Random(seed), 3000)
            a = norm(mctest.exchange(direct.port, g, timeout=10))
            b = norm(mctest.exchange(px.port, g, timeout=10))
            self.assertEqual(a, b, "seed %d: garbage %r" % (seed, g[:200]))
        self.stop_clean(px)

    def test_delete_key_named_noreply(self):
        """`delete noreply` deletes the key "noreply" and is answered
        (memcached looks for noreply only when delete has more than 3
        tokens): through the proxy too, recorded as one delete of key
        "noreply". Regression (mc_parse.c, parse_simple): the proxy once took
        it as silent, paired its NOT_FOUND with the next request and closed
        the client ("pairs with no request")."""
        mc = self.mc(name="mc-dn")
        px = self.proxy(mc.port, name="proxy-dn")
        payload = b"delete noreply\r\nget x\r\n"
        a = mctest.exchange(mc.port, payload)
        self.assertEqual(a, b"NOT_FOUND\r\nEND\r\n")
        b = mctest.exchange(px.port, payload, timeout=5)
        self.stop_clean(px)
        self.assertEqual(a, b)
        rows = mctest.db_rows(px.db, "SELECT cmd, key, answer FROM sets")
        self.assertEqual(rows, [{"cmd": "delete", "key": "noreply", "answer": "NOT_FOUND"}])

    def test_sigterm_with_traffic_in_flight(self):
        self.stop_with_traffic_in_flight(signal.SIGTERM)

    def test_sighup_with_traffic_in_flight(self):
        # a closed terminal: the proxy drains and writes its rows as on SIGTERM
        self.stop_with_traffic_in_flight(signal.SIGHUP)

    def test_sighup_every_write_recorded(self):
        """SIGHUP right after N sets were answered: rows recorded = writes sent
        (the rows still queued are written, not lost with the process)."""
        mc = self.mc(name="mc-hup")
        px = self.proxy(mc.port, name="proxy-hup")
        n = 5000
        with mctest.connect(px.port, timeout=30) as s:
            s.sendall(b"".join(b"set h:%d 0 0 4\r\nabcd\r\n" % i for i in range(n)))
            got = mctest.recv_exact(s, 8 * n, timeout=60)
            px.signal(signal.SIGHUP)
            rc = px.wait(30)
        px.kill_hard()
        px.assert_clean_exit(self, rc)
        self.assertEqual(got, b"STORED\r\n" * n)
        self.assertIn("slabtap: stopped; %d rows recorded, 0 lost" % n, px.stderr_text())
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM sets"), n)
        run = mctest.db_rows(px.db, "SELECT * FROM runs")[0]
        self.assertIsNotNone(run["ended_ns"])
        self.assertEqual((run["rows_recorded"], run["rows_dropped"]), (n, 0))

    def stop_with_traffic_in_flight(self, sig):
        name = signal.Signals(sig).name
        mc = self.mc(name="mc-term")
        # a long drain: a proxy waiting for answers that cannot come (a
        # partly forwarded request at SIGTERM) would show as a timeout below
        px = self.proxy(mc.port, name="proxy-term", extra=["--drain-ms", "60000"])
        n = 200000
        payload = b"".join(b"set t:%d 0 0 4\r\nabcd\r\n" % i for i in range(n))
        s = mctest.connect(px.port, timeout=30)
        answers = bytearray()
        state = {"eof": None}

        def writer():
            try:
                view = memoryview(payload)
                for off in range(0, len(payload), 1 << 16):
                    s.sendall(view[off:off + (1 << 16)])
            except OSError:
                pass  # the proxy stopped reading and closed

        def reader():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    d = s.recv(1 << 16)
                except OSError as e:
                    state["eof"] = repr(e)
                    return
                if not d:
                    state["eof"] = "EOF"
                    return
                answers.extend(d)

        tw = threading.Thread(target=writer, daemon=True)
        tr = threading.Thread(target=reader, daemon=True)
        tw.start()
        tr.start()
        mctest.wait_for(lambda: len(answers) >= 8 * 2000, 30, what="2000 answers")
        px.signal(sig)
        t0 = time.monotonic()
        rc = px.wait(30)
        stop_s = time.monotonic() - t0
        tr.join(70)
        tw.join(10)
        s.close()
        self.assertFalse(tr.is_alive(), "client connection still open after the proxy exited")
        px.kill_hard()
        px.assert_clean_exit(self, rc)
        got = bytes(answers)
        answered = len(got) // 8
        self.assertEqual(got, b"STORED\r\n" * answered, "answers: %r" % got[-100:])
        self.assertGreaterEqual(answered, 2000)
        rows = mctest.db_rows(px.db, "SELECT key, answer FROM sets ORDER BY seq")
        stored = [r["key"] for r in rows if r["answer"] == "STORED"]
        # every write the client saw answered has its row, in send order
        self.assertEqual(stored[:answered], ["t:%d" % i for i in range(answered)])
        self.assertEqual(stored, ["t:%d" % i for i in range(len(stored))])
        # memcached answered everything the proxy forwarded: no row waits
        self.assertEqual(len(stored), len(rows), "rows not STORED: %r"
                         % [r for r in rows if r["answer"] != "STORED"][:5])
        run = mctest.db_rows(px.db, "SELECT * FROM runs")[0]
        self.assertIsNotNone(run["ended_ns"])
        self.assertEqual(run["rows_recorded"], len(rows))
        self.assertEqual(run["rows_dropped"], 0)
        print("\n# %s after %d of %d sets answered; %d rows (%d STORED), client saw %s;"
              " proxy exited %.2f s after it"
              % (name, answered, n, len(rows), len(stored), state["eof"], stop_s),
              file=sys.stderr)

    def test_sigterm_mid_value(self):
        """SIGTERM while a request's data block is half read. On a private
        upstream memcached holds it half read and keeps back the answers of
        the requests before it, so the proxy must read that client until the
        request is whole, forward it and nothing after it, and deliver every
        answer. On a shared upstream the proxy assembles it: memcached never
        sees half a request, the earlier answer comes at once, and the
        request still goes out whole when its last bytes arrive."""
        mc = self.mc(name="mc-midvalue", extra=["-vv"])
        px = self.proxy(mc.port, name="proxy-midvalue", extra=["--drain-ms", "60000"], http=True)
        first = b"set a 0 0 1\r\nx\r\nset b 0 0 10\r\nabc"
        with mctest.connect(px.port) as s:
            s.sendall(first)
            if mctest.POOLED:
                self.assertEqual(mctest.recv_exact(s, 8), b"STORED\r\n")
                mctest.wait_for(lambda: self.metric(px, "slabtap_bytes_from_clients_total")
                                == len(first), 10, what="the proxy reading set b's first bytes")
                self.assertNotRegex(mc.stderr_text(), r"(?m)^<\d+ set b",
                                    "half a request reached a shared upstream")
            else:
                mctest.wait_for(lambda: re.search(r"^<\d+ set b 0 0 10$", mc.stderr_text(), re.M),
                                10, what="memcached reading set b")
            px.signal(signal.SIGTERM)
            mctest.wait_for(lambda: "stopping" in px.stderr_text(), 10, what="the proxy's stop")
            s.sendall(b"defghij\r\nset c 0 0 1\r\nz\r\n")
            closed, data = mctest.wait_closed(s, timeout=30)
            self.assertTrue(closed, "client still open 30 s after SIGTERM; got %r" % data)
            self.assertEqual(data, b"STORED\r\n" if mctest.POOLED else b"STORED\r\nSTORED\r\n")
        rc = px.wait(30)
        px.kill_hard()
        px.assert_clean_exit(self, rc)
        rows = mctest.db_rows(px.db, "SELECT cmd, key, value_len, answer FROM sets ORDER BY seq")
        self.assertEqual([(r["key"], r["value_len"], r["answer"]) for r in rows],
                         [("a", 1, "STORED"), ("b", 10, "STORED")])
        self.assertEqual(mctest.exchange(mc.port, b"get a b c\r\n"),
                         b"VALUE a 0 1\r\nx\r\nVALUE b 0 10\r\nabcdefghij\r\nEND\r\n")

    @staticmethod
    def metric(px, name):
        _, _, body = mctest.http_request(px.http_port, "GET", "/metrics")
        m = re.search(r"(?m)^%s (\d+)$" % re.escape(name), body.decode())
        return int(m.group(1)) if m else None

    def test_on_full_drop(self):
        mc = self.mc(name="mc-drop", extra=["-m", "256"])
        px = self.proxy(mc.port, name="proxy-drop", extra=["--on-full", "drop", "--queue", "16"])
        nconn, per = 4, 20000
        socks = [mctest.connect(px.port, timeout=60) for _ in range(nconn)]
        got = [None] * nconn
        errors = []

        def run(k):
            payload = b"".join(b"set d%d:%d 0 0 %d\r\n%s\r\n" % (k, i, i % 200, b"d" * (i % 200))
                               for i in range(per))
            t = threading.Thread(target=socks[k].sendall, args=(payload,), daemon=True)
            t.start()
            try:
                got[k] = mctest.recv_exact(socks[k], 8 * per, timeout=90)
            except AssertionError as e:
                errors.append(str(e))
            t.join(30)

        threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(nconn)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        for s in socks:
            s.close()
        self.assertEqual(errors, [])
        for k in range(nconn):
            self.assertEqual(got[k], b"STORED\r\n" * per, "conn %d" % k)
        self.stop_clean(px)
        run_row = mctest.db_rows(px.db, "SELECT * FROM runs")[0]
        rows = mctest.db_scalar(px.db, "SELECT count(*) FROM sets")
        self.assertEqual(run_row["rows_recorded"], rows)
        self.assertEqual(run_row["rows_dropped"] + run_row["rows_recorded"], nconn * per)
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM sets WHERE answer != 'STORED'"), 0)
        print("\n# --on-full drop --queue 16: %d rows recorded, %d dropped of %d writes"
              % (rows, run_row["rows_dropped"], nconn * per), file=sys.stderr)

    def test_cli_flags(self):
        def run(*args):
            return mctest.run_slabtap(["proxy"] + list(args), timeout=30)

        rc, out, err = run("--help")
        self.assertEqual(rc, 0, err)
        self.assertIn("usage: slabtap proxy", out)
        self.assertEqual(mctest.sanitizer_errors(err), [])
        db = self.path("cli.db")
        for args in (["--bogus"], ["--upstream", "127.0.0.1:1"], ["--db", db],
                     ["--upstream", "127.0.0.1:1", "--db", db, "--keys", "some"],
                     ["--upstream", "127.0.0.1:1", "--db", db, "--on-full", "spill"],
                     ["--upstream", "127.0.0.1:1", "--db", db, "--queue", "0"],
                     ["--upstream", "nohost", "--db", db],
                     ["--upstream", "127.0.0.1:1", "--db", db, "extra"]):
            rc, out, err = run(*args)
            self.assertEqual(rc, 2, "%s: exit %d, stderr %s" % (args, rc, err))
            self.assertIn("see: slabtap proxy --help", err, args)
            self.assertEqual(out, "", args)
            self.assertEqual(mctest.sanitizer_errors(err), [], args)
        self.assertFalse(os.path.exists(db), "a refused command line created the database")


# --- garbage ---------------------------------------------------------------

WORDS = [b"set", b"get", b"gets", b"mg", b"ms", b"md", b"ma", b"mn", b"me", b"delete", b"incr",
         b"touch", b"noreply", b"q", b"k", b"v", b"O1", b"T0", b"0", b"1", b"2", b"5", b"-1",
         b"abc", b"\x00", b"\r", b" ", b"  ", b"cas", b"b", b"S3", b"gat", b"add", b"append",
         b"flush_all", b"verbosity", b"stats", b"N0", b"Mx", b"MA", b"x", b"\xff"]


def garbage(rng, n):
    """Lines of random bytes, random protocol words and random short text,
    each under 2048 bytes. Never starts with 0x80 (memcached would switch to
    its binary protocol, which the proxy does not speak), and leaves out
    `delete noreply` (test_delete_key_named_noreply)."""
    out = bytearray()
    while len(out) < n:
        kind = rng.random()
        if kind < 0.5:
            line = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
        elif kind < 0.8:
            line = b" ".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 8)))
        else:
            line = bytes(rng.choice(b"abcdefgh 0123456789\r\x00") for _ in range(rng.randrange(0, 50)))
        if not out and line[:1] == b"\x80":
            line = b"x" + line
        if line.split(b"\x00")[0].rstrip(b"\r").split() == [b"delete", b"noreply"]:
            continue
        out += line + rng.choice([b"\r\n", b"\n", b"\r\n", b"\r\n"])
    return bytes(out)


def norm(data):
    # two memcached instances: stats values (pid, uptime, ...) differ
    return re.sub(rb"STAT (\S+) [^\r]*", rb"STAT \1 ?", mctest.cas_normalize(data))


if __name__ == "__main__":
    unittest.main(verbosity=2)
