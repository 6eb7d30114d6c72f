"""mctest: the shared base of slabtap's Python integration tests.

Every tests/integration/test_*.py builds on this file:
  ServerTestCase   a work directory per test (self.w.path) and every server
                   the test starts (self.mc(), self.proxy()) killed when it
                   ends, passed or not; servers a class shares are started in
                   setUpClass with cls.class_mc() / cls.class_proxy()
  Memcached, Proxy a real memcached / `slabtap proxy` on 127.0.0.1, every
                   wait bounded; run_slabtap() runs one slabtap command
  connect, recv_*, exchange, http_*   raw sockets that read exact byte counts
                   with deadlines, so a test fails instead of hanging
  mc_stats, mc_classes, db_rows, db_scalar, ntotal   what memcached and the
                   database say, and memcached 1.6's item size
Whatever is started is also killed at exit, as a safety net.

Ports: never fixed, never picked and then lost to a race. A server's port is
reserved first (reserve_port: a socket bound to 127.0.0.1:0 with SO_REUSEADDR
that never listens, so connections to it are refused) and held until the
server on it answers. memcached and slabtap (libuv) set SO_REUSEADDR too, so
they can bind the reserved port while nothing else gets it: the kernel gives
a bound port to no one as an ephemeral port, and a bind without SO_REUSEADDR
fails. Should a server still find its port taken (EADDRINUSE), the start
helpers try again on a new one.

Environment: SLABTAP (the binary; default build/slabtap of the repo),
SLABTAP_SRC (the repo root; default two folders up from here). The SQL the
build derives from schema/ (schema.sql, pg/schema.sql, pg/queries/NAME.sql)
is read from GEN_SQL, the schema/ folder of the binary's build directory.
Run the tests with /usr/bin/python3.
"""
import atexit
import http.client
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import unittest

SRC = os.environ.get("SLABTAP_SRC") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(SRC, "tests", "data")
SLABTAP = os.environ.get("SLABTAP") or os.path.join(SRC, "build", "slabtap")
# what sqlgen derived from schema/schema.sql.in and schema/queries (CMakeLists)
GEN_SQL = os.path.join(os.path.dirname(os.path.abspath(SLABTAP)), "schema")
# pooled (the default, a small number) or per-client: set by ctest per run
UPSTREAM_CONNS = os.environ.get("SLABTAP_UPSTREAM_CONNS", "2")
POOLED = UPSTREAM_CONNS != "per-client"
HOST = "127.0.0.1"
PROXY_ERROR_LINE = b"SERVER_ERROR slabtap: upstream memcached unavailable\r\n"

_live = []  # every process started here, for the atexit net


def _reap_all():
    for p in list(_live):
        p.kill_hard()


atexit.register(_reap_all)


class PortReservation:
    """127.0.0.1:port bound with SO_REUSEADDR and never listening: connecting
    to it is refused, and no one can take the port until release(), except a
    server started on it here (it sets SO_REUSEADDR too). A context manager."""

    def __init__(self, port=0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind((HOST, port))
        except OSError:
            self.sock.close()
            raise
        self.port = self.sock.getsockname()[1]

    def release(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def reserve_port(port=0):
    """A PortReservation of a free loopback port (or of port)."""
    return PortReservation(port)


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


def slabtap_env():
    """The environment slabtap runs in: ours, with leak checks and UBSan stack
    traces on unless the caller set them otherwise."""
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    # `slabtap model` wraps its text lines at COLUMNS (else 100 columns when
    # not a terminal): whole lines for the tests that parse them;
    # test_model_advise checks the wrapping itself without it
    env["COLUMNS"] = "0"
    return env


def _addr_in_use(text):
    return "address already in use" in text.lower()


class Process:
    """A process in a session of its own (its group can be killed whole), with
    stderr, and stdout too unless outpath is given, in the file errpath."""

    def __init__(self, argv, errpath, env=None, outpath=None, cwd=None):
        self.argv = argv
        self.errpath = errpath
        self.outpath = outpath
        self._files = [open(errpath, "wb")]
        if outpath:
            self._files.append(open(outpath, "wb"))
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._files[-1],
                                  stderr=self._files[0] if outpath else subprocess.STDOUT,
                                  env=env, cwd=cwd, start_new_session=True)
        self.pid = self.p.pid
        self.t0 = time.monotonic()
        _live.append(self)

    def alive(self):
        return self.p.poll() is None

    @staticmethod
    def _read(path):
        try:
            with open(path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def stderr_text(self):
        return self._read(self.errpath)

    def stdout_text(self):
        """stdout when it has a file of its own (outpath), else ''."""
        return self._read(self.outpath) if self.outpath else ""

    def signal(self, sig):
        if self.alive():
            self.p.send_signal(sig)

    def wait(self, timeout):
        """Exit code (and self.elapsed, seconds since the start), or raises
        AssertionError after timeout, when the process and its group are
        killed."""
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_group()
            raise AssertionError("%s did not exit within %.0fs; stderr:\n%s"
                                 % (" ".join(self.argv), timeout, self.stderr_text()[-3000:]))
        self.elapsed = time.monotonic() - self.t0
        return rc

    def _try_start(self, argv, errpath, reserved, ready, env=None):
        """Starts argv and waits with ready(); the reserved ports are released
        either way once that is known. None when it is ready, else its
        stderr (and it is killed)."""
        try:
            Process.__init__(self, argv, errpath, env=env)
            ok = ready()
        finally:
            for r in reserved:
                r.release()
        if ok:
            return None
        err = self.stderr_text()
        self.kill_hard()
        return err

    def kill_group(self):
        """SIGKILL to the whole process group (what the process started too)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self.kill_hard()

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
        for f in self._files:
            if not f.closed:
                f.close()


class Memcached(Process):
    """A real memcached on 127.0.0.1: on a reserved free port, or on port (to
    start one again on the port of one that stopped; tried again while the
    port is still in use). host="::1" listens there instead (the port is
    reserved on 127.0.0.1, so free on loopback); unix=PATH on that unix
    socket only (memcached -s PATH; self.port is None)."""

    def __init__(self, workdir, port=None, extra=(), name="memcached", tries=3, host=HOST,
                 unix=None):
        last = ""
        self.host, self.unix = host, unix
        for attempt in range(tries):
            if unix:
                reserved, self.port = [], None
                argv = ["memcached"] + mc_user_args() + ["-s", unix] + list(extra)
            else:
                reserved = [reserve_port()] if port is None else []
                self.port = reserved[0].port if reserved else port
                argv = ["memcached"] + mc_user_args() + ["-p", str(self.port), "-l", host,
                                                         "-U", "0"] + list(extra)
            last = self._try_start(argv, os.path.join(workdir, "%s-%d.log" % (name, attempt)),
                                   reserved, lambda: self._wait_ready(10))
            if last is None:
                return
            if not _addr_in_use(last):
                break
            time.sleep(0.1 * (attempt + 1))
        raise AssertionError("memcached did not start on port %d: %s" % (self.port, last[-2000:]))

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            try:
                with self.connect(timeout=1) as s:
                    s.settimeout(2)
                    s.sendall(b"version\r\n")
                    if recv_until(s, b"\r\n", timeout=2).startswith(b"VERSION "):
                        return self.alive()
            except (OSError, AssertionError):
                pass
            time.sleep(0.02)
        return False

    def connect(self, timeout=10):
        """A socket connected to it (TCP or its unix socket)."""
        if self.unix:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(timeout)
            try:
                s.connect(self.unix)
            except OSError:
                s.close()
                raise
            return s
        return socket.create_connection((self.host, self.port), timeout=timeout)

    def stop(self):
        # SIGKILL: a SIGTERM'd memcached waits for its next clock tick; the
        # tests never need what it holds after they are done with it.
        self.kill_hard()


class Proxy(Process):
    """slabtap proxy --listen 127.0.0.1:PORT --upstream 127.0.0.1:UP --db DB on
    a reserved port (self.port); UP may be an address as text instead. The admin endpoint is off, or with http=True
    on a reserved port of its own (self.http_port; None when off or when extra
    names --http itself). self.db defaults to NAME.db in workdir; a start
    that finds a port taken is tried again with new ports (and, when the file
    is the default one, a new file: a refused start leaves a run row)."""

    def __init__(self, workdir, upstream_port, db=None, extra=(), name="proxy",
                 keys="full", tries=3, http=False):
        self.db = db or os.path.join(workdir, name + ".db")
        env = slabtap_env()
        # files slabtap puts in its state directory (a PostgreSQL run's
        # default spill) go into the test's own directory
        env.setdefault("STATE_DIRECTORY", workdir)
        last = ""
        # a port on 127.0.0.1, or any address as text ("unix:PATH", "[::1]:P")
        upstream = (upstream_port if isinstance(upstream_port, str)
                    else "%s:%d" % (HOST, upstream_port))
        for attempt in range(tries):
            listen = reserve_port()
            admin = reserve_port() if http and "--http" not in extra else None
            self.port = listen.port
            self.http_port = admin.port if admin else None
            # the admin endpoint defaults to a fixed port: off unless asked
            # for, so that proxies of concurrent tests do not collide
            if "--http" in extra:
                http_args = []
            elif admin:
                http_args = ["--http", "%s:%d" % (HOST, admin.port)]
            else:
                http_args = ["--http", "off"]
            # every integration test runs in both upstream modes: ctest
            # registers each file twice (see CMakeLists.txt); a test that
            # names --upstream-conns itself keeps its own choice
            mode = [] if "--upstream-conns" in extra else ["--upstream-conns", UPSTREAM_CONNS]
            argv = [SLABTAP, "proxy", "--listen", "%s:%d" % (HOST, self.port),
                    "--upstream", upstream, "--db", self.db,
                    "--keys", keys] + mode + http_args + list(extra)
            last = self._try_start(argv, os.path.join(workdir, "%s-%d.log" % (name, attempt)),
                                   [listen] + ([admin] if admin else []),
                                   lambda: self._wait_listening(20), env=env)
            if last is None:
                return
            if not _addr_in_use(last):
                break
            if db is None:
                for suffix in ("", "-wal", "-shm", "-journal"):
                    if os.path.exists(self.db + suffix):
                        os.remove(self.db + suffix)
        raise AssertionError("proxy did not start: %s" % last[-2000:])

    def _wait_listening(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            # the start-up line is printed once the listeners are open
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


def proxy_metrics(px):
    """{sample name (labels included): value} of proxy px's /metrics (it
    must have been started with http=True)."""
    st, _, body = http_request(px.http_port, "GET", "/metrics")
    if st != 200:
        raise AssertionError("/metrics: status %d" % st)
    out = {}
    for line in body.decode("utf-8").splitlines():
        if line and not line.startswith("#"):
            name, val = line.rsplit(" ", 1)
            out[name] = float(val)
    return out


def db_file_bytes_settled(px, tries=50):
    """(slabtap_db_file_bytes of px's /metrics, bytes of px.db and its WAL
    on disk) from a scrape the disk did not change around (the writer adds
    a stats sample every --stats-interval, so a few tries may be needed);
    fails after `tries` scrapes that all raced a write."""
    def disk():
        return sum(os.path.getsize(f) for f in (px.db, px.db + "-wal") if os.path.exists(f))
    for _ in range(tries):
        before = disk()
        got = proxy_metrics(px)["slabtap_db_file_bytes"]
        if disk() == before:
            return int(got), before
    raise AssertionError("%s changed around each of %d scrapes" % (px.db, tries))


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


def set_items(s, items, timeout=30):
    """Pipelines `set KEY 0 0 LEN` for the (key, value) byte strings on socket
    s; AssertionError unless every answer is STORED."""
    s.sendall(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v) for k, v in items))
    want = b"STORED\r\n" * len(items)
    got = recv_exact(s, len(want), timeout=timeout)
    if got != want:
        raise AssertionError("not every set was STORED: %r" % got[:300])


# --- HTTP (the admin endpoint) ---------------------------------------------------

def http_request(port, method, path, body=None, headers=None, timeout=10):
    """(status, headers dict lower-cased, body bytes) on a new connection."""
    c = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        c.close()


def http_json(port, method, path, expect=200):
    """The JSON body of METHOD path; AssertionError unless the status is expect
    and the content type JSON."""
    st, hdrs, body = http_request(port, method, path)
    if st != expect:
        raise AssertionError("%s %s: status %d (want %d): %r" % (method, path, st, expect, body[:500]))
    if not hdrs.get("content-type", "").startswith("application/json"):
        raise AssertionError("%s %s: content-type %r" % (method, path, hdrs.get("content-type")))
    return json.loads(body.decode("utf-8"))


def health(port):
    """/health's JSON whatever its status (503 until the poller's first
    sample, or while degraded: the body says why either way)."""
    st, hdrs, body = http_request(port, "GET", "/health")
    if st not in (200, 503):
        raise AssertionError("GET /health: status %d: %r" % (st, body[:500]))
    return json.loads(body.decode("utf-8"))


def health_ok(port, timeout=20):
    """/health's JSON once it answers 200 (the first stats sample can come a
    while after the start-up line on a loaded machine)."""
    return wait_for(lambda: (lambda r: json.loads(r[2].decode("utf-8")) if r[0] == 200 else None)(
        http_request(port, "GET", "/health")), timeout, what="/health 200")


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


# --- slabtap commands, memcached's counters ------------------------------------

def run_slabtap(args, timeout=300):
    """(rc, stdout, stderr) of `slabtap ARGS`; fails on a sanitizer report."""
    p = subprocess.run([SLABTAP] + list(args), stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=timeout, env=slabtap_env())
    out, err = p.stdout.decode(), p.stderr.decode()
    bad = sanitizer_errors(err)
    if bad:
        raise AssertionError("sanitizer report from slabtap %s:\n%s"
                             % (" ".join(list(args)[:1]), err[-6000:]))
    return p.returncode, out, err


def parse_stats(data):
    """{name: value} of the STAT lines of a `stats` answer (text)."""
    d = {}
    for line in data.splitlines():
        if line.startswith("STAT "):
            _, k, v = line.split(" ", 2)
            d[k] = v
    return d


def mc_stats(port, what="", timeout=20):
    """{name: value} of memcached's `stats [what]`, read directly."""
    cmd = ("stats %s" % what).strip().encode() + b"\r\n"
    with connect(port, timeout=timeout) as s:
        s.sendall(cmd)
        data = recv_until(s, b"END\r\n", timeout=timeout).decode()
    return parse_stats(data)


def children(pid):
    """[(pid, argv)] of the processes whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            if int(st[st.rindex(")") + 2:].split()[1]) != pid:
                continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = [a.decode() for a in f.read().split(b"\0") if a]
        except (OSError, ValueError):
            continue
        out.append((int(d), argv))
    return out


def mc_classes(port, timeout=20):
    """{class id: {field: int}}: memcached's `stats slabs` (CLASS:FIELD) and
    `stats items` (items:CLASS:FIELD; mem_requested is there in 1.6) merged,
    read directly. A class has the fields of whichever of the two lists it."""
    out = {}
    for what, pat in (("slabs", r"(\d+):(\w+)$"), ("items", r"items:(\d+):(\w+)$")):
        for k, v in mc_stats(port, what, timeout).items():
            m = re.match(pat, k)
            if m and re.match(r"-?\d+$", v):
                out.setdefault(int(m.group(1)), {})[m.group(2)] = int(v)
    return out


def ntotal(key_len, value_len, flags=0, cas=True):
    """memcached 1.6's item size: the 48-byte header, the key and its NUL,
    4 bytes of client flags when not 0, the value with its \\r\\n, 8 bytes of
    CAS unless -C."""
    return 48 + key_len + 1 + (4 if flags else 0) + value_len + 2 + (8 if cas else 0)


# --- the test case ----------------------------------------------------------------

class ServerTestCase(unittest.TestCase):
    """A test case that starts real servers. Each test has its own work
    directory (self.w.path); self.mc() / self.proxy() start servers in it and
    whatever a test started (self.procs) is killed when it ends, passed or
    not, before the directory goes. Servers the tests of a class share are
    started in setUpClass (after super().setUpClass()) with cls.class_mc() /
    cls.class_proxy(), in cls.cw.path, and killed after the class's last
    test, also when setUpClass fails half-way."""
    workdir_prefix = "slabtap-it-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.cw = Workdir(prefix=cls.workdir_prefix)
        cls.addClassCleanup(cls.cw.cleanup)

    @classmethod
    def class_mc(cls, **kw):
        p = Memcached(cls.cw.path, **kw)
        cls.addClassCleanup(p.kill_hard)
        return p

    @classmethod
    def class_proxy(cls, upstream_port, **kw):
        p = Proxy(cls.cw.path, upstream_port, **kw)
        cls.addClassCleanup(p.kill_hard)
        return p

    def setUp(self):
        self.w = Workdir(prefix=self.workdir_prefix)
        self.addCleanup(self.w.cleanup)
        self.procs = []
        self.addCleanup(self._kill_procs)

    def _kill_procs(self):
        for p in reversed(self.procs):
            p.kill_hard()

    def started(self, p):
        """p, killed when the test ends."""
        self.procs.append(p)
        return p

    def mc(self, **kw):
        return self.started(Memcached(self.w.path, **kw))

    def proxy(self, upstream_port, **kw):
        return self.started(Proxy(self.w.path, upstream_port, **kw))

    def stop_clean(self, px, timeout=60):
        """Stops proxy px (SIGTERM) and asserts exit 0 without a sanitizer
        report."""
        px.assert_clean_exit(self, px.stop(timeout=timeout))

    def path(self, name):
        """name in the test's work directory."""
        return os.path.join(self.w.path, name)

    def write(self, name, text):
        """Writes text to name in the work directory; returns its path."""
        path = self.path(name)
        with open(path, "w") as f:
            f.write(text)
        return path
