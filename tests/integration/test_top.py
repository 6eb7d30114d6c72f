#!/usr/bin/python3
"""test_top: `slabtap top` against a real memcached and a real proxy.

- --once --memcached: every row equals memcached's own `stats slabs` /
  `stats items` (chunk size, pages, items; used % and waste % from
  used_chunks, total_chunks, mem_requested), one row per class with pages,
  no terminal codes; the header's malloced and limit are memcached's.
- --once --proxy (a proxy with its admin endpoint in front of the same
  memcached): the same rows; ops/s, get/s and the hit ratio as numbers
  after gets through the proxy; --http-token: refused without it, exit 1;
  a proxy recording into PostgreSQL (pgcluster): the same rows and memory
  line (its /api/run/classes read from PostgreSQL).
- rates: sets into one class during --once's two samples put that class
  first under --sort sets with sets/s > 0.
- errors: a refused address, memcached where HTTP is expected and HTTP
  where memcached is: one clear line, exit 1; bad flags: usage, exit 2.
- a terminal (pty): frames redraw in place, keys sort (w: waste; r
  reverses it; i then sorts items largest first again), q and
  SIGTERM leave the terminal as it was (cooked mode, main screen, cursor);
  SIGWINCH fits the width. Not a terminal, no --once: a snapshot per
  interval until SIGTERM, exit 0.

Needs memcached on PATH and $SLABTAP. 127.0.0.1 only; bounded waits.
"""
import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

HOST = mctest.HOST
TOKEN = "top-secret-token"

# (value length, count): items in five classes, one of them with several
# pages and one nearly empty
FILL = [(40, 200), (300, 500), (900, 2500), (5000, 300), (60000, 20)]


def fill(port):
    with mctest.connect(port) as s:
        for size, count in FILL:
            for start in range(0, count, 100):
                mctest.set_items(s, [(b"top:%d:%d" % (size, i), b"v" * size)
                                     for i in range(start, min(count, start + 100))])


def rows_of(out):
    """{class id: (chunk, items, pages, used, waste, evict/s, sets/s)} as
    text from --once output, in the order printed (a list of ids too)."""
    lines = out.splitlines()
    at = [i for i, l in enumerate(lines) if l.split()[:2] == ["CLASS", "CHUNK"]]
    assert len(at) == 1, out
    rows, order = {}, []
    for l in lines[at[0] + 1:]:
        f = l.split()
        assert len(f) == 8 and f[0].isdigit(), "not a row: %r in\n%s" % (l, out)
        rows[int(f[0])] = tuple(f[1:])
        order.append(int(f[0]))
    return rows, order


def pct(part, whole):
    return "-" if whole <= 0 else "%.1f" % (part * 100.0 / whole)


class TopOnce(mctest.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.mcd = cls.class_mc(extra=["-m", "64"])
        fill(cls.mcd.port)
        cls.px = cls.class_proxy(cls.mcd.port, http=True, extra=["--stats-interval", "100"])
        cls.pxt = cls.class_proxy(cls.mcd.port, http=True, name="proxy-token",
                                  extra=["--stats-interval", "100", "--http-token", TOKEN])

    def top(self, *args, timeout=60):
        rc, out, err = mctest.run_slabtap(["top"] + list(args), timeout=timeout)
        return rc, out, err

    def assert_rows_equal_memcached(self, out):
        rows, order = rows_of(out)
        classes = {cid: f for cid, f in mctest.mc_classes(self.mcd.port).items()
                   if "chunk_size" in f}
        self.assertEqual(sorted(rows), sorted(classes), out)
        self.assertEqual(order, sorted(order), "class order by default")
        self.assertGreaterEqual(len(rows), len(FILL))
        for cid, f in classes.items():
            chunk, items, pages, used, waste = rows[cid][:5]
            with self.subTest(cls=cid):
                self.assertEqual(int(chunk), f["chunk_size"])
                self.assertEqual(int(pages), f["total_pages"])
                self.assertEqual(int(items), f.get("number", 0))
                self.assertEqual(used, pct(f["used_chunks"], f["total_chunks"]))
                alloc = f["used_chunks"] * f["chunk_size"]
                self.assertEqual(waste, pct(alloc - f.get("mem_requested", 0), alloc))
        return rows

    def assert_mem_line(self, out):
        """out's header has memcached's own memory used and its limit."""
        st = mctest.mc_stats(self.mcd.port)
        slabs = mctest.mc_stats(self.mcd.port, "slabs")
        mb = 1024 * 1024
        self.assertIn("mem: malloced %.1fM / limit %.1fM"
                      % (int(slabs["total_malloced"]) / mb, int(st["limit_maxbytes"]) / mb), out)

    def wait_proxy_sample(self, px, headers=None):
        def ready():
            st, _, _ = mctest.http_request(px.http_port, "GET", "/api/slabs", headers=headers)
            return st == 200
        mctest.wait_for(ready, 20, what="the proxy's first stats sample")

    def test_once_memcached_rows_equal_stats(self):
        rc, out, err = self.top("--once", "--memcached", "%s:%d" % (HOST, self.mcd.port),
                                "--interval", "0")
        self.assertEqual(rc, 0, err)
        self.assertNotIn("\033", out, "--once writes no terminal codes")
        self.assertTrue(out.startswith("slabtap top: %s:%d  memcached " % (HOST, self.mcd.port)),
                        out)
        self.assert_rows_equal_memcached(out)
        self.assert_mem_line(out)
        self.assertIn("classes %d" % len(rows_of(out)[0]), out)
        # one sample only: no rates
        self.assertIn("ops/s -  get/s -", out)

    def test_once_proxy_rows_equal_stats(self):
        self.wait_proxy_sample(self.px)
        rc, out, err = self.top("--once", "--proxy", "%s:%d" % (HOST, self.px.http_port),
                                "--interval", "300")
        self.assertEqual(rc, 0, err)
        self.assertIn("via slabtap /api/slabs", out.splitlines()[0])
        prows = self.assert_rows_equal_memcached(out)
        # memory used and its limit: memcached's own, through /api/run/classes
        self.assert_mem_line(out)
        rc, out2, err = self.top("--once", "--memcached", "%s:%d" % (HOST, self.mcd.port),
                                 "--interval", "0")
        self.assertEqual(rc, 0, err)
        mrows = rows_of(out2)[0]
        self.assertEqual({c: r[:5] for c, r in prows.items()},
                         {c: r[:5] for c, r in mrows.items()})
        # two samples of an idle memcached, 300 ms apart: known rates of 0
        for cid, r in prows.items():
            self.assertEqual(r[6], "0.0", "sets/s of class %d:\n%s" % (cid, out))

    def test_once_proxy_recording_into_postgresql(self):
        """--proxy in front of a proxy recording into PostgreSQL: the same
        rows, and memory used and its limit through /api/run/classes (read
        from PostgreSQL by the proxy's query thread)."""
        import pgcluster  # noqa: E402 (only this case needs PostgreSQL)
        pg = pgcluster.PgCluster()
        self.addCleanup(pg.stop)
        px = self.proxy(self.mcd.port, db=pg.uri(), http=True, name="proxy-pg",
                        extra=["--stats-interval", "100"])
        self.wait_proxy_sample(px)
        mctest.wait_for(lambda: mctest.http_request(px.http_port, "GET", "/api/run/classes")[0]
                        == 200 and b'"t_ns":null' not in mctest.http_request(
                            px.http_port, "GET", "/api/run/classes")[2], 20,
                        what="a sample in PostgreSQL")
        rc, out, err = self.top("--once", "--proxy", "%s:%d" % (HOST, px.http_port),
                                "--interval", "300")
        self.assertEqual(rc, 0, err)
        self.assertIn("via slabtap /api/slabs", out.splitlines()[0])
        self.assert_rows_equal_memcached(out)
        self.assert_mem_line(out)
        self.stop_clean(px)

    def test_proxy_header_has_rates_and_hits(self):
        """--proxy's header: ops/s, get/s and the hit ratio as numbers, from
        memcached's `stats` of the proxy's samples (/api/slabs "stats"),
        after gets through the proxy (one hit and one miss a request)."""
        self.wait_proxy_sample(self.px)
        stop = threading.Event()
        sent = [0]

        def reader():
            with mctest.connect(self.px.port) as s:
                while not stop.is_set():
                    s.sendall(b"get top:40:1 top:nosuch\r\n")
                    mctest.recv_until(s, b"END\r\n")
                    sent[0] += 1
                    time.sleep(0.002)
        t = threading.Thread(target=reader)
        t.start()
        try:
            mctest.wait_for(lambda: sent[0] > 0, 20, what="a get through the proxy")
            rc, out, err = self.top("--once", "--proxy", "%s:%d" % (HOST, self.px.http_port),
                                    "--interval", "800")
        finally:
            stop.set()
            t.join(30)
        self.assertEqual(rc, 0, err)
        # the running slabtap's run and kind (GET /api/runs, issue 22)
        self.assertTrue(re.match(r"slabtap top: %s:%d via slabtap /api/slabs, proxy run #\d+  "
                                 r"memcached " % (re.escape(HOST), self.px.http_port), out), out)
        m = re.search(r"^ops/s ([0-9.]+)  get/s ([0-9.]+)  set/s ([0-9.]+)  evict/s ([0-9.]+)"
                      r"  hit ([0-9.]+)%$", out, re.M)
        self.assertTrue(m, "numbers for ops/s, get/s and hit in:\n" + out)
        ops, gets, hit = float(m.group(1)), float(m.group(2)), float(m.group(5))
        self.assertGreater(gets, 0, out)
        self.assertGreaterEqual(ops, gets, out)
        self.assertTrue(0 < hit < 100, out)
        # and without gets in between: memcached's lifetime ratio, as --memcached
        rc, out, err = self.top("--once", "--proxy", "%s:%d" % (HOST, self.px.http_port),
                                "--interval", "0")
        self.assertEqual(rc, 0, err)
        st = mctest.mc_stats(self.mcd.port)
        hits, misses = int(st["get_hits"]), int(st["get_misses"])
        self.assertIn("  hit %s%% (lifetime)" % pct(hits, hits + misses), out)

    def test_proxy_token(self):
        self.wait_proxy_sample(self.pxt, headers={"Authorization": "Bearer " + TOKEN})
        addr = "%s:%d" % (HOST, self.pxt.http_port)
        rc, out, err = self.top("--once", "--proxy", addr, "--interval", "0")
        self.assertEqual((rc, out), (1, ""), err)
        self.assertIn("401, it wants --http-token", err)
        rc, out, err = self.top("--once", "--proxy", addr, "--interval", "0",
                                "--http-token", "wrong")
        self.assertEqual(rc, 1, err)
        self.assertIn("the --http-token was refused", err)
        rc, out, err = self.top("--once", "--proxy", addr, "--interval", "0",
                                "--http-token", TOKEN)
        self.assertEqual(rc, 0, err)
        self.assert_rows_equal_memcached(out)

    def test_rates_sort_by_sets(self):
        # an empty memcached of its own; sets into the 900-byte class only
        # while top takes its two samples
        mcd = self.mc()
        fill(mcd.port)
        stop = threading.Event()

        def writer():
            with mctest.connect(mcd.port) as s:
                i = 0
                while not stop.is_set():
                    mctest.set_items(s, [(b"rate:%d" % (i + k), b"r" * 900) for k in range(20)])
                    i += 20
                    time.sleep(0.005)
        t = threading.Thread(target=writer)
        t.start()
        try:
            rc, out, err = self.top("--once", "--memcached", "%s:%d" % (HOST, mcd.port),
                                    "--interval", "800", "--sort", "sets")
        finally:
            stop.set()
            t.join(30)
        self.assertEqual(rc, 0, err)
        rows, order = rows_of(out)
        chunk900 = min(c for c, f in mctest.mc_classes(mcd.port).items()
                       if f.get("chunk_size", 0) >= mctest.ntotal(len(b"rate:00000"), 900))
        self.assertEqual(order[0], chunk900, out)
        self.assertGreater(float(rows[chunk900][6]), 0.0, out)
        self.assertIn("sort: SETS/S descending", out)
        m = re.search(r"set/s ([0-9.]+)", out)
        self.assertTrue(m and float(m.group(1)) > 0, out)
        # reversed: the busiest class last among the known rates
        rc, out, err = self.top("--once", "--memcached", "%s:%d" % (HOST, mcd.port),
                                "--interval", "0", "--sort", "pages", "-r")
        self.assertEqual(rc, 0, err)
        pages = [int(rows_of(out)[0][c][2]) for c in rows_of(out)[1]]
        self.assertEqual(pages, sorted(pages))

    def test_bad_address_exit_1(self):
        with mctest.reserve_port() as r:  # bound, never listening: refused
            rc, out, err = self.top("--once", "--memcached", "%s:%d" % (HOST, r.port))
        self.assertEqual((rc, out), (1, ""))
        self.assertEqual(err, "slabtap top: cannot connect to %s:%d: Connection refused\n"
                         % (HOST, r.port))
        # memcached where the admin endpoint was meant, and the other way
        rc, out, err = self.top("--once", "--interval", "0", "--proxy",
                                "%s:%d" % (HOST, self.mcd.port), timeout=30)
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("not an HTTP response", err)
        rc, out, err = self.top("--once", "--interval", "0", "--memcached",
                                "%s:%d" % (HOST, self.px.http_port), timeout=30)
        self.assertEqual((rc, out), (1, ""))
        self.assertIn("not memcached's stats", err)
        self.assertEqual(len(err.splitlines()), 1, err)

    def test_bad_flags_exit_2(self):
        mc = "%s:%d" % (HOST, self.mcd.port)
        bad = [
            (["--bogus"], "unknown option --bogus"),
            ([], "give exactly one of --memcached and --proxy"),
            (["--memcached", mc, "--proxy", mc], "give exactly one of --memcached and --proxy"),
            (["--memcached", mc, "--http-token", "x"], "--http-token goes with --proxy"),
            (["--memcached", mc, "--interval", "10"],
             "--interval: 10 is below 100ms (below only with --once)"),
            (["--memcached", mc, "--interval", "50ms"],
             "--interval: 50ms is below 100ms (below only with --once)"),
            (["--memcached", mc, "--timeout", "1 hour"],
             "--timeout: 1 hour is above the maximum 10m"),
            (["--memcached", mc, "--sort", "size"], None),
            (["--memcached", mc, "--width", "0"], "--width: 0 is below the minimum 1"),
            (["--memcached", "nonsense"], "--memcached 'nonsense' has no port (want HOST:PORT, "
             ":PORT, [IPv6]:PORT or unix:PATH)"),
            (["--memcached", mc, "stray"], "unexpected argument 'stray'"),
        ]
        for args, msg in bad:
            with self.subTest(args=args):
                rc, out, err = self.top(*args, timeout=30)
                self.assertEqual((rc, out), (2, ""), err)
                self.assertTrue(err.startswith("slabtap top: "), err)
                if msg:
                    self.assertEqual(err.splitlines()[0], "slabtap top: " + msg)
                self.assertEqual(err.splitlines()[1:], ["see: slabtap top --help"], err)
        rc, out, err = self.top("--help")
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("usage: slabtap top", out)

    def test_batch_without_terminal(self):
        p = mctest.Process([mctest.SLABTAP, "top", "--memcached", "%s:%d" % (HOST, self.mcd.port),
                            "--interval", "150"], self.path("batch.err"),
                           env=mctest.slabtap_env(), outpath=self.path("batch.out"))
        self.started(p)
        mctest.wait_for(lambda: p.stdout_text().count("CLASS   CHUNK") >= 3, 20,
                        what="three snapshots")
        p.signal(signal.SIGTERM)
        self.assertEqual(p.wait(20), 0, p.stderr_text())
        out = p.stdout_text()
        self.assertNotIn("\033", out)
        self.assertEqual(mctest.sanitizer_errors(p.stderr_text()), [])
        # snapshots after the first have rates
        second = out.split("\nslabtap top: ")[1]
        self.assertRegex(second, r"ops/s [0-9.]+  get/s [0-9.]+")


def proc_state(pid):
    """The state letter of /proc/PID/stat (R, S, T for stopped, ...)."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


class Pty:
    """slabtap top in a pseudo-terminal of COLS x ROWS."""

    def __init__(self, argv, cols=100, rows=30, job_control=False):
        """job_control: top runs as a shell's job does -- in a foreground
        process group of its own whose parent (the session leader here) is
        in the session, so SIGTSTP really stops it (a process group without
        such a parent is orphaned, and the kernel discards SIGTSTP's stop)."""
        rpipe, wpipe = os.pipe()
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child
            try:
                os.close(rpipe)
                if job_control:
                    self._job(argv, wpipe)
                os.execve(argv[0], argv, mctest.slabtap_env())
            finally:
                os._exit(127)
        os.close(wpipe)
        with os.fdopen(rpipe) as r:  # the job's pid, or nothing
            self.job = int(r.read() or self.pid)
        self.resize(cols, rows, signal_child=False)
        self.out = b""
        self.status = None

    @staticmethod
    def _job(argv, wpipe):
        """In the child: fork the job into its own foreground group, tell
        the test its pid, wait for it and exit as it did."""
        job = os.fork()
        if job == 0:
            os.setpgid(0, 0)
            signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            os.tcsetpgrp(0, os.getpgrp())
            signal.signal(signal.SIGTTOU, signal.SIG_DFL)
            os.close(wpipe)
            os.execve(argv[0], argv, mctest.slabtap_env())
        os.write(wpipe, b"%d" % job)
        os.close(wpipe)
        while True:
            _, st = os.waitpid(job, 0)
            if not os.WIFSTOPPED(st):
                os._exit(os.waitstatus_to_exitcode(st) & 0xff)

    def resize(self, cols, rows, signal_child=True):
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        if signal_child:
            os.kill(self.job, signal.SIGWINCH)

    def read_until(self, pred, timeout=20):
        deadline = time.monotonic() + timeout
        while not pred(self.out):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("timed out; the terminal got %r" % self.out[-2000:])
            r, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if r:
                try:
                    d = os.read(self.fd, 65536)
                except OSError:  # EIO: the child is gone
                    d = b""
                if not d:
                    raise AssertionError("the terminal closed; it got %r" % self.out[-2000:])
                self.out += d

    def frames(self):
        """Every complete frame: from cursor-home to clear-below."""
        return re.findall(rb"\033\[H(.*?)\033\[J", self.out, re.S)

    def lflag(self):
        return termios.tcgetattr(self.fd)[3]

    def wait(self, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
                try:  # what was written before it exited
                    while select.select([self.fd], [], [], 0.1)[0]:
                        d = os.read(self.fd, 65536)
                        if not d:
                            break
                        self.out += d
                except OSError:
                    pass
                return self.status
            time.sleep(0.02)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError("top did not exit; the terminal got %r" % self.out[-2000:])

    def close(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
        os.close(self.fd)


class TopTerminal(mctest.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.mcd = cls.class_mc()
        fill(cls.mcd.port)

    def start(self, *extra, cols=100, rows=30, job_control=False):
        t = Pty([mctest.SLABTAP, "top", "--memcached", "%s:%d" % (HOST, self.mcd.port),
                 "--interval", "200"] + list(extra), cols=cols, rows=rows,
                job_control=job_control)
        self.addCleanup(t.close)
        return t

    def assert_restored(self, t, cooked_before):
        self.assertTrue(t.out.endswith(b"\033[?25h\033[?1049l"), t.out[-200:])
        self.assertTrue(t.out.startswith(b"\033[?1049h\033[?25l"), t.out[:100])
        lflag = t.lflag()
        self.assertEqual(lflag & (termios.ICANON | termios.ECHO),
                         cooked_before & (termios.ICANON | termios.ECHO),
                         "the terminal is left in raw mode")
        self.assertEqual([l for l in t.out.decode("utf-8", "replace").splitlines()
                          if "Sanitizer" in l or "runtime error" in l], [])

    def test_keys_refresh_and_quit(self):
        t = self.start()
        cooked = t.lflag()
        t.read_until(lambda o: len(re.findall(rb"\033\[J", o)) >= 3)  # three refreshes
        frame = t.frames()[-1].decode()
        self.assertIn("sort: CLASS ascending   keys: c k i p u w e s sort", frame)
        self.assertEqual(t.lflag() & termios.ICANON, 0, "raw while running")
        os.write(t.fd, b"w")
        t.read_until(lambda o: b"sort: WASTE% descending" in o)
        os.write(t.fd, b"r")
        t.read_until(lambda o: b"sort: WASTE% ascending" in o)
        # r was for the waste sort only: items starts largest first
        os.write(t.fd, b"i")
        t.read_until(lambda o: any(b"sort: ITEMS descending" in f for f in t.frames()))
        frame = [f for f in t.frames() if b"sort: ITEMS descending" in f][0]
        items = [int(l.split()[2]) for l in frame.decode().replace("\033[K", "")
                 .replace("\r", "").split("\n") if re.match(r"^ +[0-9]+ ", l)]
        self.assertGreaterEqual(len(items), len(FILL), frame)
        self.assertEqual(items, sorted(items, reverse=True))
        os.write(t.fd, b"q")
        self.assertEqual(t.wait(), 0)
        self.assert_restored(t, cooked)
        # every frame is within the 30 rows and 100 columns
        for f in t.frames():
            lines = f.decode().replace("\033[K", "").replace("\r", "").split("\n")
            self.assertLessEqual(len(lines), 30)
            self.assertLessEqual(max(len(l) for l in lines), 100)

    def test_sigterm_and_sigint_restore(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(sig=sig):
                t = self.start()
                cooked = t.lflag()
                t.read_until(lambda o: b"\033[J" in o)
                os.kill(t.job, sig)
                self.assertEqual(t.wait(), 0)
                self.assert_restored(t, cooked)

    def test_sigwinch_fits_width(self):
        t = self.start(cols=120)
        t.read_until(lambda o: b"\033[J" in o)
        t.resize(40, 30)
        n = len(t.frames())
        t.read_until(lambda o: len(re.findall(rb"\033\[H(.*?)\033\[J", o, re.S)) > n + 1)
        last = t.frames()[-1].decode().replace("\033[K", "").replace("\r", "").split("\n")
        self.assertEqual(max(len(l) for l in last), 40, last)
        os.write(t.fd, b"q")
        self.assertEqual(t.wait(), 0)

    def test_sigtstp_restores_then_resumes(self):
        t = self.start(job_control=True)
        cooked = t.lflag()
        t.read_until(lambda o: b"\033[J" in o)
        os.kill(t.job, signal.SIGTSTP)
        # stopped, with the terminal cooked again and the main screen back
        t.read_until(lambda o: o.endswith(b"\033[?25h\033[?1049l"))
        mctest.wait_for(lambda: proc_state(t.job) == "T", 10, what="top stopped")
        self.assertNotEqual(t.lflag() & termios.ICANON, 0, "cooked while stopped")
        os.kill(t.job, signal.SIGCONT)
        t.read_until(lambda o: o.rfind(b"\033[?1049h") > o.rfind(b"\033[?1049l")
                     and o.rfind(b"\033[J") > o.rfind(b"\033[?1049h"))
        self.assertEqual(t.lflag() & termios.ICANON, 0, "raw again after SIGCONT")
        os.write(t.fd, b"q")
        self.assertEqual(t.wait(), 0)
        self.assert_restored(t, cooked)


if __name__ == "__main__":
    unittest.main()
