"""mctest: shared helpers for slabtap's Python integration tests.

Starts a real memcached and the slabtap proxy on 127.0.0.1 only, with every
wait bounded, and stops whatever it started (in the caller's finally, and
again at exit as a safety net). Raw-socket helpers read exact byte counts
with deadlines so a test fails instead of hanging.

Environment: SLABTAP (the binary; default /tmp/bm/slabtap), SLABTAP_SRC
(repo root, unused here). Run the tests with /usr/bin/python3.
"""
import atexit
import os
import re
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import unittest

SLABTAP = os.environ.get("SLABTAP", "/tmp/bm/slabtap")
HOST = "127.0.0.1"
PROXY_ERROR_LINE = b"SERVER_ERROR slabtap: upstream memcached unavailable\r\n"

_live = []  # every process started here, for the atexit net


def _reap_all():
    for p in list(_live):
        p.kill_hard()


atexit.register(_reap_all)


def free_port():
    """A loopback port nobody listens on right now (the caller retries when
    someone else grabs it before it is used)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((HOST, 0))
        return s.getsockname()[1]
    finally:
        s.close()


def port_open(port, timeout=0.2):
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for(pred, timeout, interval=0.02, what="condition"):
    """Polls pred() until true; raises AssertionError after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.1fs waiting for %s" % (timeout, what))
        time.sleep(interval)


def mc_user_args():
    # memcached refuses to run as root without -u
    return ["-u", "root"] if os.geteuid() == 0 else []


def sanitizer_errors(text):
    """Lines of a sanitizer report in a process's stderr (empty when clean)."""
    bad = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
           "SUMMARY: UndefinedBehaviorSanitizer", "ERROR: ThreadSanitizer")
    return [l for l in text.splitlines() if any(b in l for b in bad)]


class _Proc:
    def __init__(self, argv, errpath, env=None):
        self.argv = argv
        self.errpath = errpath
        self._err = open(errpath, "wb")
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._err,
                                  stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
        self.pid = self.p.pid
        _live.append(self)

    def alive(self):
        return self.p.poll() is None

    def stderr_text(self):
        try:
            with open(self.errpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def signal(self, sig):
        if self.alive():
            self.p.send_signal(sig)

    def wait(self, timeout):
        """Exit code, or raises AssertionError (and kills) after timeout."""
        try:
            return self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_hard()
            raise AssertionError("%s did not exit within %.0fs; stderr:\n%s"
                                 % (self.argv[0], timeout, self.stderr_text()[-3000:]))

    def kill_hard(self):
        if self.p.poll() is None:
            try:
                self.p.kill()
            except OSError:
                pass
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self in _live:
            _live.remove(self)
        if not self._err.closed:
            self._err.close()


class Memcached(_Proc):
    """A real memcached on 127.0.0.1:port (a free one unless given)."""

    def __init__(self, workdir, port=None, extra=(), name="memcached", tries=3):
        last = ""
        for attempt in range(tries):
            self.port = port or free_port()
            argv = ["memcached"] + mc_user_args() + ["-p", str(self.port), "-l", HOST,
                                                     "-U", "0"] + list(extra)
            errpath = os.path.join(workdir, "%s-%d.log" % (name, attempt))
            _Proc.__init__(self, argv, errpath)
            if self._wait_ready(10):
                return
            last = self.stderr_text()
            self.kill_hard()
            if port is not None and "Address already in use" not in last:
                break
        raise AssertionError("memcached did not start: %s" % last[-2000:])

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            try:
                with socket.create_connection((HOST, self.port), timeout=1) as s:
                    s.settimeout(2)
                    s.sendall(b"version\r\n")
                    if recv_until(s, b"\r\n", timeout=2).startswith(b"VERSION "):
                        return True
            except (OSError, AssertionError):
                pass
            time.sleep(0.02)
        return False

    def stop(self):
        # SIGKILL: a SIGTERM'd memcached waits for its next clock tick; the
        # tests never need what it holds after they are done with it.
        self.kill_hard()


class Proxy(_Proc):
    """slabtap proxy --listen 127.0.0.1:port --upstream 127.0.0.1:up --db db."""

    def __init__(self, workdir, upstream_port, db=None, extra=(), name="proxy",
                 keys="full", tries=3, wait_listen=True):
        self.db = db or os.path.join(workdir, name + ".db")
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        last = ""
        for attempt in range(tries):
            self.port = free_port()
            # the admin endpoint defaults to a fixed port: off, so that
            # proxies of concurrent tests do not collide
            http = [] if "--http" in extra else ["--http", "off"]
            argv = [SLABTAP, "proxy", "--listen", "%s:%d" % (HOST, self.port),
                    "--upstream", "%s:%d" % (HOST, upstream_port), "--db", self.db,
                    "--keys", keys] + http + list(extra)
            errpath = os.path.join(workdir, "%s-%d.log" % (name, attempt))
            _Proc.__init__(self, argv, errpath, env=env)
            if not wait_listen or self._wait_listening(20):
                return
            last = self.stderr_text()
            self.kill_hard()
            if "cannot listen" not in last:
                break
        raise AssertionError("proxy did not start: %s" % last[-2000:])

    def _wait_listening(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            # the start-up line is printed once the listener is open
            if "slabtap: proxy " in self.stderr_text():
                return True
            time.sleep(0.02)
        return False

    def stop(self, timeout=60):
        """SIGTERM, wait; returns the exit code."""
        self.signal(signal.SIGTERM)
        rc = self.wait(timeout)
        self.kill_hard()  # closes the log
        return rc

    def assert_clean_exit(self, tc, rc):
        """rc 0 and no sanitizer report in stderr (ASan/UBSan build)."""
        err = self.stderr_text()
        bad = sanitizer_errors(err)
        tc.assertEqual(bad, [], "proxy stderr has an AddressSanitizer/UBSan report "
                       "(ERROR: AddressSanitizer / runtime error:):\n" + err[-6000:])
        tc.assertEqual(rc, 0, "proxy exit code %r; stderr:\n%s" % (rc, err[-3000:]))


class Workdir:
    def __init__(self, prefix="slabtap-it-"):
        self.path = tempfile.mkdtemp(prefix=prefix)

    def cleanup(self):
        import shutil
        shutil.rmtree(self.path, ignore_errors=True)


# --- raw sockets -------------------------------------------------------------

def connect(port, timeout=10):
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(timeout)
    return s


def recv_exact(s, n, timeout=20):
    """Exactly n bytes; AssertionError on EOF or when timeout passes."""
    deadline = time.monotonic() + timeout
    chunks, got = [], 0
    while got < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("timed out: got %d of %d bytes; last: %r"
                                 % (got, n, b"".join(chunks)[-200:]))
        s.settimeout(min(left, 5))
        try:
            d = s.recv(min(n - got, 1 << 20))
        except socket.timeout:
            continue
        if not d:
            raise AssertionError("connection closed after %d of %d bytes; got: %r"
                                 % (got, n, b"".join(chunks)[-200:]))
        chunks.append(d)
        got += len(d)
    return b"".join(chunks)


def recv_until(s, suffix, timeout=20, limit=64 << 20):
    """Bytes up to and including the first point where the data read so far
    ends with suffix (the caller chooses a suffix no earlier answer ends at)."""
    deadline = time.monotonic() + timeout
    buf = bytearray()
    while not buf.endswith(suffix):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("timed out waiting for %r; got %r" % (suffix, bytes(buf[-300:])))
        s.settimeout(min(left, 5))
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        if not d:
            raise AssertionError("connection closed waiting for %r; got %r"
                                 % (suffix, bytes(buf[-300:])))
        buf += d
        if len(buf) > limit:
            raise AssertionError("over %d bytes without %r" % (limit, suffix))
    return bytes(buf)


def recv_line(s, timeout=20):
    """One line ending in \\r\\n, read a byte at a time (nothing past it)."""
    deadline = time.monotonic() + timeout
    buf = bytearray()
    while not buf.endswith(b"\r\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("timed out reading a line; got %r" % bytes(buf))
        s.settimeout(min(left, 5))
        try:
            d = s.recv(1)
        except socket.timeout:
            continue
        if not d:
            raise AssertionError("connection closed reading a line; got %r" % bytes(buf))
        buf += d
    return bytes(buf)


def wait_closed(s, timeout=10):
    """True when the peer closes (EOF or reset) within timeout; data that
    arrives first is returned too: (closed, data)."""
    deadline = time.monotonic() + timeout
    data = bytearray()
    while time.monotonic() < deadline:
        s.settimeout(max(0.05, min(1, deadline - time.monotonic())))
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        except (ConnectionResetError, BrokenPipeError):
            return True, bytes(data)
        if not d:
            return True, bytes(data)
        data += d
    return False, bytes(data)


def exchange(port, payload, chunk=None, timeout=30):
    """Sends payload (in pieces of chunk bytes when given) and a sentinel on a
    new connection and returns every byte answered before the sentinel's
    answer; then checks that nothing more follows: a second sentinel's
    answer must come next, byte for byte. The sentinel is a meta get miss
    with a random opaque, an answer no payload produces by accident."""
    nonce = os.urandom(8).hex().encode()
    sentinel = b"mg slabtap-sentinel O" + nonce + b"\r\n"
    answer = b"EN O" + nonce + b"\r\n"
    with connect(port) as s:
        if chunk:
            for i in range(0, len(payload), chunk):
                s.sendall(payload[i:i + chunk])
        else:
            s.sendall(payload)
        s.sendall(sentinel)
        got = recv_until(s, answer, timeout=timeout)
        s.sendall(sentinel)
        again = recv_exact(s, len(answer), timeout=timeout)
        if again != answer:
            raise AssertionError("extra bytes after the answer: %r" % again)
        return got[:-len(answer)]


def cas_normalize(data):
    """Replaces the cas unique numbers in VALUE lines of gets/gats answers
    with their order of appearance, for comparing two runs against one
    memcached (its cas counter keeps rising)."""
    seen = {}

    def sub(m):
        n = seen.setdefault(m.group(2), len(seen))
        return m.group(1) + b"<cas%d>" % n
    return re.sub(rb"(VALUE \S+ \d+ \d+ )(\d+)", sub, data)


# --- database -----------------------------------------------------------------

def db_rows(path, sql, args=()):
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(sql, args).fetchall()]
    finally:
        con.close()


def db_scalar(path, sql, args=()):
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)
    try:
        return con.execute(sql, args).fetchone()[0]
    finally:
        con.close()


# --- shared by the tests that run slabtap commands and read memcached ------------

def run_slabtap(args, timeout=300):
    """(rc, stdout, stderr) of `slabtap ARGS`; fails on a sanitizer report."""
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    p = subprocess.run([SLABTAP] + list(args), stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=timeout, env=env)
    out, err = p.stdout.decode(), p.stderr.decode()
    bad = sanitizer_errors(err)
    if bad:
        raise AssertionError("sanitizer report from slabtap %s:\n%s" % (args[0], err[-6000:]))
    return p.returncode, out, err


def mc_stats(port, what="", timeout=20):
    """{name: value} of memcached's `stats [what]`, read directly."""
    cmd = ("stats %s" % what).strip().encode() + b"\r\n"
    with connect(port, timeout=timeout) as s:
        s.sendall(cmd)
        data = recv_until(s, b"END\r\n", timeout=timeout).decode()
    d = {}
    for line in data.splitlines():
        if line.startswith("STAT "):
            _, k, v = line.split(" ", 2)
            d[k] = v
    return d


class ServerTestCase(unittest.TestCase):
    """A test case that starts real servers in its own work directory and
    kills whatever it started when the test ends, passed or not."""
    workdir_prefix = "slabtap-it-"

    def setUp(self):
        self.w = Workdir(prefix=self.workdir_prefix)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill_hard()
        self.w.cleanup()

    def mc(self, **kw):
        p = Memcached(self.w.path, **kw)
        self.procs.append(p)
        return p
