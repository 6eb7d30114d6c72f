"""pgcluster: a throwaway PostgreSQL cluster for slabtap's integration tests.

    with pgcluster.PgCluster() as pg:      # or pg = PgCluster(); ...; pg.stop()
        pg.uri()                           # postgresql://postgres@127.0.0.1:PORT/slabtap
        pg.psql("SELECT count(*) FROM runs")   # rows as lists of str (None: NULL)
        pg.uri(user=pg.PW_ROLE, password=pg.password)   # the password-protected role

What it does: initdb into a fresh temporary directory (as the `postgres`
user when run as root: initdb and postgres refuse root; the directory is
chowned to it), starts `postgres` on a free loopback port with its unix
socket inside that directory, trust authentication on 127.0.0.1 for every
role except PW_ROLE, which must give its password (scram-sha-256: a login
refused is testable), and creates the database `slabtap`. stop() (also run
at exit, and by the context manager) stops the server and removes the
directory.

Ports: reserved as mctest does (a socket bound to 127.0.0.1:0 with
SO_REUSEADDR that never listens) until the server answers; postgres sets
SO_REUSEADDR on its listening socket, so it can bind the reserved port.
Should it still find the port taken, a new one is tried. Every wait is
bounded. The binaries: $PG_BINDIR, else the newest /usr/lib/postgresql/*/bin
(Debian's postgresql package), else initdb on PATH.
"""
import atexit
import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time

import mctest

PW_ROLE = "slabtap_pw"
DB = "slabtap"
START_TIMEOUT = 60
_clusters = []


def _stop_all():
    for c in list(_clusters):
        c.stop()


atexit.register(_stop_all)


def bindir():
    """The directory of initdb, postgres and psql; AssertionError when absent."""
    d = os.environ.get("PG_BINDIR")
    if d:
        return d

    def version(p):
        v = p.split("/")[-2]
        return [int(x) for x in v.split(".") if x.isdigit()]
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: version(os.path.dirname(p)))
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    if initdb:
        return os.path.dirname(os.path.realpath(initdb))
    raise AssertionError("PostgreSQL is not installed (initdb not found): apt-get install "
                         "postgresql (tests/run.sh does), or set PG_BINDIR")


class PgCluster:
    PW_ROLE = PW_ROLE

    def __init__(self, fsync=False, settings=None):
        """fsync=False: a throwaway cluster need not survive a power cut (the
        tests run faster); settings: more `-c name=value` for postgres."""
        self.bin = bindir()
        self.root = tempfile.mkdtemp(prefix="slabtap-pg.")
        self.data = os.path.join(self.root, "data")
        self.sock = os.path.join(self.root, "sock")
        os.mkdir(self.sock)
        self.password = "pw-" + secrets.token_hex(12)
        self.proc = None
        self.port = None
        self._user = None
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")  # KeyError: the postgresql package makes it
            self._user = (pw.pw_uid, pw.pw_gid, pw.pw_dir)
            for d, _, files in os.walk(self.root):
                os.chown(d, pw.pw_uid, pw.pw_gid)
                for f in files:
                    os.chown(os.path.join(d, f), pw.pw_uid, pw.pw_gid)
        _clusters.append(self)
        try:
            self._initdb()
            self._start(fsync, settings or {})
            self.psql("CREATE ROLE %s LOGIN PASSWORD '%s'" % (PW_ROLE, self.password),
                      db="postgres")
            self.psql("CREATE DATABASE %s" % DB, db="postgres")
            self.psql("GRANT ALL ON SCHEMA public TO %s" % PW_ROLE)
        except BaseException:
            self.stop()
            raise

    # --- processes as the cluster's owner -------------------------------------------

    def _demote(self):
        if self._user:
            uid, gid, _ = self._user
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)

    def _env(self):
        env = dict(os.environ)
        env.pop("PGPASSWORD", None)
        env["LC_ALL"] = "C.UTF-8"
        if self._user:
            env["HOME"] = self._user[2]
        return env

    def _run(self, argv, timeout=120):
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           env=self._env(), preexec_fn=self._demote, timeout=timeout,
                           cwd=self.root)
        if p.returncode:
            raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(argv), p.returncode,
                                                           p.stdout, p.stderr))
        return p.stdout

    def _initdb(self):
        self._run([os.path.join(self.bin, "initdb"), "-D", self.data, "-U", "postgres",
                   "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
        with open(os.path.join(self.data, "pg_hba.conf"), "w") as f:
            f.write("# pgcluster.py: trust, except the password-protected role\n"
                    "local all all trust\n"
                    "host all %s 127.0.0.1/32 scram-sha-256\n"
                    "host all all 127.0.0.1/32 trust\n" % PW_ROLE)
        if self._user:
            os.chown(os.path.join(self.data, "pg_hba.conf"), self._user[0], self._user[1])

    def _start(self, fsync, settings):
        opts = {"listen_addresses": "127.0.0.1", "unix_socket_directories": self.sock,
                "fsync": "on" if fsync else "off", "full_page_writes": "on" if fsync else "off",
                "logging_collector": "off", "max_connections": "50"}
        opts.update(settings)
        log = os.path.join(self.root, "postgres.log")
        for attempt in range(5):
            res = mctest.reserve_port()
            argv = [os.path.join(self.bin, "postgres"), "-D", self.data, "-p", str(res.port)]
            for k, v in opts.items():
                argv += ["-c", "%s=%s" % (k, v)]
            try:
                with open(log, "ab") as lf:
                    self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=lf,
                                                 stderr=lf, env=self._env(),
                                                 preexec_fn=self._demote, cwd=self.root,
                                                 start_new_session=True)
                self.port = res.port
                deadline = time.monotonic() + START_TIMEOUT
                while time.monotonic() < deadline and self.proc.poll() is None:
                    if self._ready():
                        return
                    time.sleep(0.05)
            finally:
                res.release()
            text = self.log_text()
            self._kill()
            if "already in use" not in text:
                raise AssertionError("postgres did not start within %ds:\n%s"
                                     % (START_TIMEOUT, text[-3000:]))
        raise AssertionError("postgres found every port taken:\n%s" % self.log_text()[-3000:])

    def _ready(self):
        p = subprocess.run([os.path.join(self.bin, "pg_isready"), "-q", "-h", "127.0.0.1",
                            "-p", str(self.port), "-t", "2"],
                           stdin=subprocess.DEVNULL, capture_output=True, env=self._env())
        return p.returncode == 0

    def log_text(self):
        try:
            with open(os.path.join(self.root, "postgres.log"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    # --- what the tests use ----------------------------------------------------------

    def uri(self, user="postgres", password=None, db=DB):
        auth = user + (":" + password if password is not None else "")
        return "postgresql://%s@127.0.0.1:%d/%s" % (auth, self.port, db)

    def psql(self, sql, db=DB, timeout=120):
        """Runs sql (ON_ERROR_STOP) over the unix socket as postgres; the rows
        of the last statement as lists of strings, None for NULL."""
        out = subprocess.run([os.path.join(self.bin, "psql"), "-X", "-q", "-A", "-t",
                              "-v", "ON_ERROR_STOP=1", "-P", "null=\\N", "-F", "\t",
                              "-h", self.sock, "-p", str(self.port), "-U", "postgres",
                              "-d", db, "-c", sql],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             env=self._env(), timeout=timeout)
        if out.returncode:
            raise AssertionError("psql %r failed (%d): %s" % (sql[:200], out.returncode,
                                                              out.stderr))
        return [[None if v == "\\N" else v for v in line.split("\t")]
                for line in out.stdout.splitlines() if line]

    def scalar(self, sql, db=DB):
        rows = self.psql(sql, db=db)
        return rows[0][0] if rows else None

    def stop(self):
        """Stops the server (fast shutdown, then kill) and removes its directory."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(2)  # SIGINT: fast shutdown
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._kill()
        self.proc = None
        shutil.rmtree(self.root, ignore_errors=True)
        if self in _clusters:
            _clusters.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
