#!/usr/bin/env python3
"""faults.py: the README's fault table, measured.

Each scenario starts its own memcached (`-l 127.0.0.1 -U 0`) and `slabtap
proxy` on free loopback ports in a temporary directory (the helpers of
tests/integration/mctest.py), does one bad thing to them under client load,
counts what the clients saw and what the database holds, and stops and
removes everything it started, passed or not. Every loop and wait is
bounded; a scenario that overruns its alarm is reported as ERROR.

    bench/faults.py                     # every scenario (~2-3 minutes on 2 cores)
    bench/faults.py --only kill9        # one (or a comma list: --only kill9,slowloris)
    bench/faults.py --list              # the scenario names
    bench/faults.py --out FILE          # where the markdown goes (results/faults.md)

Prints one markdown table (fault | what was done | what clients saw | rows
recorded / acknowledged / counted lost | verdict) and writes it, with the
notes on each verdict's criterion, to --out. Exit status: 0 when every
scenario that ran held, 1 when one FAILED or hit an ERROR, 2 on bad usage.

Environment: SLABTAP (the binary; default build-faults/slabtap of the repo).
Python 3 stdlib only (sqlite3 included); needs memcached, and for `full`
root (a 4 MB tmpfs is mounted), for `fdlimit` prlimit (util-linux).
"""
import argparse
import collections
import hashlib
import json
import multiprocessing
import os
import random
import re
import selectors
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
os.environ.setdefault("SLABTAP", os.path.join(SRC, "build-faults", "slabtap"))
import mctest  # noqa: E402

SLABTAP = os.environ["SLABTAP"]
mctest.SLABTAP = SLABTAP
HOST = mctest.HOST


class ScenarioTimeout(Exception):
    pass


# --- small helpers ------------------------------------------------------------


def fmt_int(n):
    return "{:,}".format(int(n))


def proc_status(pid):
    """{field: kB} of /proc/PID/status for VmRSS and VmHWM (empty if gone)."""
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1


def metrics(px, timeout=5):
    """{name or name{labels}: value} of the proxy's /metrics."""
    _, _, body = mctest.http_request(px.http_port, "GET", "/metrics", timeout=timeout)
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def lost_by_reason(m):
    """{reason: n} from slabtap_rows_lost_total{reason="..."} lines."""
    out = {}
    for k, v in m.items():
        mm = re.match(r'slabtap_rows_lost_total\{reason="([^"]+)"\}$', k)
        if mm:
            out[mm.group(1)] = int(v)
    return out


def health(px, timeout=5):
    st, _, body = mctest.http_request(px.http_port, "GET", "/health", timeout=timeout)
    try:
        return st, json.loads(body)
    except ValueError:
        return st, {}


def db_connect(path):
    # read-write: after a kill -9 the WAL has to be read (and its index built)
    con = sqlite3.connect(path, timeout=10)
    return con


def count_rows(db, run_id=None):
    con = db_connect(db)
    try:
        if run_id is None:
            return con.execute("SELECT count(*) FROM sets").fetchone()[0]
        return con.execute("SELECT count(*) FROM sets WHERE run_id = ?", (run_id,)).fetchone()[0]
    finally:
        con.close()


def answers_by_kind(db, run_id=None):
    con = db_connect(db)
    try:
        q = "SELECT answer, count(*) FROM sets %s GROUP BY answer" % (
            "WHERE run_id = ?" if run_id is not None else "")
        return dict(con.execute(q, (run_id,) if run_id is not None else ()).fetchall())
    finally:
        con.close()


def runs_rows(db):
    con = db_connect(db)
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute("SELECT * FROM runs ORDER BY run_id")]
    finally:
        con.close()


def kinds_text(counter):
    """'STORED 12,345, SERVER_ERROR 17' from a {answer: n} mapping."""
    items = sorted(counter.items(), key=lambda kv: -kv[1])
    return ", ".join("%s %s" % (k, fmt_int(v)) for k, v in items) or "none"


def log_msg(line, workdir):
    """A slabtap log line without its timestamp and level, temp paths cut."""
    line = re.sub(r"^\S+Z slabtap (ERROR|WARN|INFO) ", "", line.strip())
    return line.replace(workdir + "/", "")


def short_answer(line):
    if line.startswith(b"SERVER_ERROR"):
        return "SERVER_ERROR"
    return line.decode("latin-1")


class LineReader:
    """Lines (without \\r\\n) from a blocking socket with deadlines."""

    def __init__(self, sock):
        self.s = sock
        self.buf = bytearray()
        self.eof = False

    def line(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                out = bytes(self.buf[:i])
                del self.buf[:i + 2]
                return out
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("no line within %.1fs" % timeout)
            self.s.settimeout(min(left, 1.0))
            try:
                d = self.s.recv(65536)
            except socket.timeout:
                continue
            if not d:
                self.eof = True
                raise ConnectionError("closed by the proxy")
            self.buf += d


class Writer(threading.Thread):
    """Sets on one connection, up to `depth` in flight, each timed from its
    send to its answer; counts the answers by kind. stop() makes it send no
    more and collect the answers still owed (bounded). Never reconnects: an
    EOF is recorded (closed=True)."""

    def __init__(self, port, prefix, depth=1, vsize=100, pace=0.0):
        super().__init__(daemon=True)
        self.port, self.prefix, self.depth, self.vsize = port, prefix, depth, vsize
        self.pace = pace
        self.sent = 0
        self.kinds = collections.Counter()
        self.latencies = []      # (t_answer, seconds)
        self.first_error_t = None
        self.last_error_t = None
        self.first_ok_after_error_t = None
        self.closed = False
        self.error = None
        self._halt = threading.Event()

    def stop(self):
        self._halt.set()

    @property
    def answered(self):
        return sum(self.kinds.values())

    @property
    def worst(self):
        return max((l for _, l in self.latencies), default=0.0)

    def run(self):
        value = b"v" * self.vsize
        inflight = collections.deque()
        try:
            with mctest.connect(self.port, timeout=30) as s:
                rd = LineReader(s)
                i = 0
                while True:
                    stopping = self._halt.is_set()
                    if stopping and not inflight:
                        break
                    while not stopping and len(inflight) < self.depth:
                        s.sendall(b"set %s:%d 0 0 %d\r\n%s\r\n"
                                  % (self.prefix, i % 50000, len(value), value))
                        inflight.append(time.monotonic())
                        self.sent += 1
                        i += 1
                    line = rd.line(timeout=30)
                    now = time.monotonic()
                    self.latencies.append((now, now - inflight.popleft()))
                    kind = short_answer(line)
                    self.kinds[kind] += 1
                    if kind == "SERVER_ERROR":
                        self.last_error_t = now
                        if self.first_error_t is None:
                            self.first_error_t = now
                    elif self.last_error_t is not None and self.first_ok_after_error_t is None:
                        self.first_ok_after_error_t = now
                    if self.pace:
                        time.sleep(self.pace)
        except ConnectionError as e:
            self.closed = True
            self.error = e
        except Exception as e:  # reported by the scenario
            self.error = e


def stop_writers(writers, timeout=40):
    for w in writers:
        w.stop()
    for w in writers:
        w.join(timeout)
    stuck = [w for w in writers if w.is_alive()]
    if stuck:
        raise AssertionError("%d writer(s) did not finish within %ds" % (len(stuck), timeout))


class Scenario:
    """A work directory, the processes started in it, mounts; all undone by
    close() whatever happened."""

    def __init__(self, name):
        self.name = name
        self.w = mctest.Workdir(prefix="slabtap-faults-%s-" % name)
        self.procs = []
        self.mounts = []
        self.socks = []

    def path(self, *p):
        return os.path.join(self.w.path, *p)

    def mc(self, **kw):
        p = mctest.Memcached(self.w.path, **kw)
        self.procs.append(p)
        return p

    def proxy(self, upstream_port, **kw):
        kw.setdefault("keys", "prefix")
        p = mctest.Proxy(self.w.path, upstream_port, **kw)
        self.procs.append(p)
        return p

    def close(self):
        for s in self.socks:
            try:
                s.close()
            except OSError:
                pass
        for p in reversed(self.procs):
            try:
                os.kill(p.pid, signal.SIGCONT)  # a SIGSTOPped memcached dies too
            except OSError:
                pass
            p.kill_group()
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", m], capture_output=True)
        self.w.cleanup()


def result(fault, done, saw, rows, ok, why="", notes=()):
    return {"fault": fault, "done": done, "saw": saw, "rows": rows,
            "verdict": "held" if ok else "FAILED" + (": " + why if why else ""),
            "ok": ok, "notes": list(notes)}


def skipped(fault, why):
    return {"fault": fault, "done": "--", "saw": "--", "rows": "--",
            "verdict": "skipped (%s)" % why, "ok": True, "skipped": True, "notes": []}


# --- 1. kill -9 under saturating load ------------------------------------------

STORED = b"STORED\r\n"


def _saturating_writer(port, idx, depth, vsize, go, stop_at, conn):
    """A writer process: `depth` pipelined sets in flight on one connection,
    sent in batches of 32, until the connection drops or stop_at (monotonic
    seconds) passes. Sends back its counts: acknowledged = STORED answers
    read; other = bytes that were not STORED."""
    out = {"acks": 0, "sent": 0, "other": 0, "end": "deadline", "t_last_ack": None}
    try:
        s = socket.create_connection((HOST, port), timeout=10)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        value = b"x" * vsize
        per = 32
        batches = [b"".join(b"set w%d:%d 0 0 %d\r\n%s\r\n" % (idx, b * per + k, vsize, value)
                            for k in range(per)) for b in range(64)]
        big = STORED * 8192
        go.wait(30)
        inflight = 0
        b = 0
        tail = b""
        s.settimeout(0.5)
        while time.monotonic() < stop_at:
            while inflight + per <= depth:
                s.sendall(batches[b % len(batches)])
                b += 1
                inflight += per
                out["sent"] += per
            try:
                d = s.recv(1 << 16)
            except socket.timeout:
                continue
            if not d:
                out["end"] = "eof"
                break
            data = tail + d
            n = len(data) // 8
            whole = data[:n * 8]
            tail = data[n * 8:]
            if whole == big[:n * 8]:
                ok = n
            else:
                ok = whole.count(STORED)
                out["other"] += len(whole) - ok * 8
            out["acks"] += ok
            inflight -= n
            out["t_last_ack"] = time.monotonic()
    except (ConnectionResetError, BrokenPipeError):
        out["end"] = "reset"
    except Exception as e:
        out["end"] = "error: %r" % e
    conn.send(out)
    conn.close()


def scenario_kill9(args):
    fault = "kill -9 under saturating load"
    reps, writers, depth, vsize, load_s = args.kill_reps, 4, 256, 100, 2.0
    sc = Scenario("kill9")
    try:
        mc = sc.mc(extra=["-m", "1024", "-t", "2"])
        db = sc.path("kill9.db")
        ctx = multiprocessing.get_context("fork")
        per_rep = []
        for rep in range(reps):
            px = sc.proxy(mc.port, db=db, name="proxy%d" % rep, http=True)
            run_id = run_id_of(px)
            go = ctx.Event()
            pipes, procs = [], []
            stop_at = time.monotonic() + load_s + 15
            for k in range(writers):
                a, b = ctx.Pipe(duplex=False)
                p = ctx.Process(target=_saturating_writer,
                                args=(px.port, k, depth, vsize, go, stop_at, b))
                p.start()
                b.close()
                pipes.append(a)
                procs.append(p)
            time.sleep(0.3)  # connected
            t_go = time.monotonic()
            go.set()
            time.sleep(load_s)
            try:  # what the recorder holds just before the kill
                h = health(px, timeout=2)[1].get("recorder", {})
            except OSError:
                h = {}
            os.kill(px.pid, signal.SIGKILL)
            t_kill = time.monotonic()
            px.wait(10)
            px.kill_hard()
            outs = []
            for a, p in zip(pipes, procs):
                if a.poll(20):
                    outs.append(a.recv())
                p.join(10)
                if p.is_alive():
                    p.kill()
            if len(outs) != writers:
                raise AssertionError("a writer process gave no counts")
            acks = sum(o["acks"] for o in outs)
            other = sum(o["other"] for o in outs)
            rows = count_rows(db, run_id)
            rate = acks / (t_kill - t_go)
            lost = acks - rows
            per_rep.append({"acks": acks, "rows": rows, "lost": lost, "rate": rate,
                            "lost_ms": 1000.0 * lost / rate if rate else 0.0,
                            "other": other, "ends": [o["end"] for o in outs],
                            "run_id": run_id, "depth": h.get("queue_depth", -1),
                            "bound": h.get("queue_bound", 65536)})
        # open the file once more (a proxy start) so the last run is marked too
        px = sc.proxy(mc.port, db=db, name="proxy-reopen")
        rc = px.stop(timeout=30)
        runs = {r["run_id"]: r for r in runs_rows(db)}
        marked_ok = True
        mark_notes = []
        for r in per_rep:
            row = runs[r["run_id"]]
            good = (row["crashed"] == 1 and row["ended_ns"] is not None
                    and row["rows_recorded"] == r["rows"])
            marked_ok &= good
            if not good:
                mark_notes.append("run %d: crashed=%r ended_ns=%r rows_recorded=%r, rows %d"
                                  % (r["run_id"], row["crashed"], row["ended_ns"],
                                     row["rows_recorded"], r["rows"]))
        last = max(runs)
        clean_last = runs[last]["crashed"] == 0 and runs[last]["ended_ns"] is not None and rc == 0
        lost = sorted(r["lost"] for r in per_rep)
        lost_ms = sorted(r["lost_ms"] for r in per_rep)
        rates = sorted(r["rate"] for r in per_rep)
        neg = [r for r in per_rep if r["lost"] < 0]
        other = sum(r["other"] for r in per_rep)
        # criterion: only rows still in the recorder's queue (bounded by
        # --queue) or in the batch the writer holds (4,096 at most) may be
        # lost; a kill that loses more lost rows some other way
        bound = per_rep[0]["bound"] + 4096
        ok = marked_ok and clean_last and lost[-1] <= bound and other == 0
        why = []
        if not marked_ok:
            why.append("crashed runs not marked right (%s)" % "; ".join(mark_notes))
        if not clean_last:
            why.append("the reopening run did not end cleanly (rc %r)" % rc)
        if lost[-1] > bound:
            why.append("a kill lost %d rows (> --queue + one batch, %d)" % (lost[-1], bound))
        if other:
            why.append("%d answer bytes were not STORED" % other)
        done = ("%d writer processes x %d pipelined `set` (%d B values) in flight; "
                "`kill -9` of the proxy after %.0f s; %d times on one file, then one more "
                "proxy start on it" % (writers, depth, vsize, load_s, reps))
        saw = ("connection reset/EOF at the kill; %s writes/s acknowledged (min %s, max %s)"
               % (fmt_int(statistics.median(rates)), fmt_int(rates[0]), fmt_int(rates[-1])))
        rows_txt = ("per kill: %s recorded / %s acknowledged (median); lost %s / **%s** / %s "
                    "(min/median/max) = %.1f / **%.1f** / %.1f ms of writes; "
                    "every killed run marked `crashed=1`, `ended_ns` set, `rows_recorded` "
                    "= its rows: %s"
                    % (fmt_int(statistics.median(r["rows"] for r in per_rep)),
                       fmt_int(statistics.median(r["acks"] for r in per_rep)),
                       fmt_int(lost[0]), fmt_int(statistics.median(lost)), fmt_int(lost[-1]),
                       lost_ms[0], statistics.median(lost_ms), lost_ms[-1],
                       "yes" if marked_ok else "NO"))
        notes = ["kill9: per kill (acknowledged / recorded / lost @ writes/s, recorder queue "
                 "depth from /health just before the kill): " + "; ".join(
                     "%s / %s / %s @ %s, queue %s" % (
                         fmt_int(r["acks"]), fmt_int(r["rows"]), fmt_int(r["lost"]),
                         fmt_int(r["rate"]), fmt_int(r["depth"])) for r in per_rep),
                 "kill9: held = no kill loses more than the recorder can hold uncommitted "
                 "(--queue %s + a 4,096-row batch), each killed run is marked crashed with "
                 "its rows counted at the next open, and the next run ends cleanly. The "
                 "writer commits every 2,048 rows or 20 ms when it keeps up; when it falls "
                 "behind, the queue (not the commit interval) sets the loss"
                 % fmt_int(per_rep[0]["bound"])]
        if neg:
            notes.append("kill9: %d kill(s) recorded more rows than the clients saw acknowledged "
                         "(answers in the proxy's buffers at the kill): negative loss"
                         % len(neg))
        return result(fault, done, saw, rows_txt, ok, "; ".join(why), notes)
    finally:
        sc.close()


def run_id_of(px):
    """The run id a started proxy announced in its start-up line (its file
    is locked while it runs)."""
    m = re.search(r"run (\d+) '", px.stderr_text())
    if not m:
        raise AssertionError("no run id in the proxy's start-up line: %r"
                             % px.stderr_text()[-500:])
    return int(m.group(1))


# --- 2. memcached killed under load, restarted ----------------------------------

def scenario_mckill(args):
    fault = "memcached killed under load, restarted"
    sc = Scenario("mckill")
    try:
        mc = sc.mc()
        px = sc.proxy(mc.port, http=True)
        ws = [Writer(px.port, b"m%d" % k, depth=d) for k, d in enumerate((1, 1, 16, 16))]
        for w in ws:
            w.start()
        time.sleep(1.0)
        port = mc.port
        t_kill = time.monotonic()
        mc.kill_group()
        time.sleep(1.0)
        mc2 = sc.mc(port=port, name="memcached-restarted")
        t_up = time.monotonic()
        # served again: every writer's answers are STORED again
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if all(w.first_ok_after_error_t or not w.first_error_t for w in ws):
                break
            time.sleep(0.05)
        time.sleep(1.0)
        stop_writers(ws)
        m = metrics(px)
        rc = px.stop()
        sent = sum(w.sent for w in ws)
        kinds = collections.Counter()
        for w in ws:
            kinds.update(w.kinds)
        rows = count_rows(px.db)
        ans = answers_by_kind(px.db)
        run = runs_rows(px.db)[-1]
        closed = sum(w.closed for w in ws)
        errs = [w.error for w in ws if w.error]
        back = [w.first_ok_after_error_t - t_up for w in ws if w.first_ok_after_error_t]
        served_again = len(back) == sum(1 for w in ws if w.first_error_t)
        ok = (closed == 0 and not errs and rows == sent and kinds.get("SERVER_ERROR", 0) > 0
              and served_again and run["rows_dropped"] == 0 and rc == 0
              and sum(kinds.values()) == sent)
        why = []
        if closed or errs:
            why.append("writers: %d closed, errors %r" % (closed, errs[:2]))
        if rows != sent:
            why.append("rows %d != writes sent %d" % (rows, sent))
        if not served_again:
            why.append("not every writer served again after the restart")
        done = ("4 writers (2 one at a time, 2 with 16 pipelined) for 1 s; memcached `kill -9`; "
                "restarted on its port 1 s later; writers go on until served again + 1 s")
        saw = ("answers %s; connections closed: %d; STORED again %.2f-%.2f s after the "
               "restart (%.1f s after the kill); `upstream_error_replies` %d"
               % (kinds_text(kinds), closed, min(back) if back else -1, max(back) if back else -1,
                  (max(back) + t_up - t_kill) if back else -1,
                  int(m.get("slabtap_upstream_error_replies_total",
                            m.get("slabtap_upstream_error_replies", 0)))))
        rows_txt = ("%s rows / %s writes sent (every one answered); rows by answer: %s; "
                    "counted lost %d" % (fmt_int(rows), fmt_int(sent), kinds_text(ans),
                                         run["rows_dropped"]))
        return result(fault, done, saw, rows_txt, ok, "; ".join(why),
                      ["mckill: held = no client connection closed, SERVER_ERROR while "
                       "memcached is gone, STORED again after the restart, a row for every "
                       "write sent, nothing dropped, exit 0"])
    finally:
        sc.close()


# --- 3. memcached frozen (SIGSTOP 3 s) -------------------------------------------

def scenario_mcfreeze(args):
    fault = "memcached frozen (SIGSTOP 3 s)"
    sc = Scenario("mcfreeze")
    try:
        mc = sc.mc()
        px = sc.proxy(mc.port, http=True)
        ws = [Writer(px.port, b"f%d" % k, depth=d) for k, d in enumerate((1, 1, 8))]
        for w in ws:
            w.start()
        time.sleep(1.0)
        os.kill(mc.pid, signal.SIGSTOP)
        t_stop = time.monotonic()
        probes = []
        while time.monotonic() - t_stop < 3.0:
            t = time.monotonic()
            try:
                st, h = health(px, timeout=3)
                probes.append((round(t - t_stop, 1), st, h.get("status")))
            except OSError as e:
                probes.append((round(t - t_stop, 1), "error", repr(e)))
            time.sleep(0.5)
        os.kill(mc.pid, signal.SIGCONT)
        t_cont = time.monotonic()
        time.sleep(1.0)
        stop_writers(ws)
        rc = px.stop()
        sent = sum(w.sent for w in ws)
        kinds = collections.Counter()
        for w in ws:
            kinds.update(w.kinds)
        lat_in = [l for w in ws for (t, l) in w.latencies if t >= t_stop]
        worst = max(lat_in) if lat_in else 0.0
        # answers that arrived during the freeze
        during = sum(1 for w in ws for (t, _) in w.latencies if t_stop + 0.05 < t < t_cont)
        rows = count_rows(px.db)
        ans = answers_by_kind(px.db)
        run = runs_rows(px.db)[-1]
        closed = sum(w.closed for w in ws)
        states = sorted(set("%s %s" % (st, s) for _, st, s in probes))
        ok = (closed == 0 and rows == sent and sum(kinds.values()) == sent
              and run["rows_dropped"] == 0 and rc == 0 and not [w for w in ws if w.error])
        done = ("3 writers (2 one at a time, 1 with 8 pipelined); memcached SIGSTOP for 3 s, "
                "then SIGCONT; `/health` polled every 0.5 s meanwhile")
        saw = ("no answer for the freeze: %d answers in it, then all; worst set %.2f s; answers "
               "%s; connections closed %d; `/health` during the freeze: %s"
               % (during, worst, kinds_text(kinds), closed, ", ".join(states)))
        rows_txt = ("%s rows / %s writes sent; by answer: %s; counted lost %d"
                    % (fmt_int(rows), fmt_int(sent), kinds_text(ans), run["rows_dropped"]))
        why = "" if ok else "rows %d, sent %d, answered %d, closed %d, rc %r" % (
            rows, sent, sum(kinds.values()), closed, rc)
        return result(fault, done, saw, rows_txt, ok, why,
                      ["mcfreeze: held = clients wait (no error, no close), every write is "
                       "answered after SIGCONT and has a row, exit 0. `/health` turns 503 "
                       "`upstream_not_answering` only when the last stats sample is older than "
                       "max(3 x --stats-interval, 3 s) (APP_STALE_MIN_MS), so a 3 s freeze "
                       "does not show in it. /health probes "
                       "(s after SIGSTOP, status): %s" % probes])
    finally:
        sc.close()


# --- 4. the database locked by another process ------------------------------------

def _hold_exclusive(db, hold_s, out):
    """BEGIN EXCLUSIVE on db (busy timeout hold_s), held for hold_s once got.
    out: got (bool), waited (s), error."""
    t = time.monotonic()
    try:
        con = sqlite3.connect(db, timeout=hold_s, isolation_level=None)
        con.execute("BEGIN EXCLUSIVE")
        out["got"] = True
        out["waited"] = time.monotonic() - t
        time.sleep(hold_s)
        con.execute("ROLLBACK")
        con.close()
    except sqlite3.Error as e:
        out["got"] = False
        out["waited"] = time.monotonic() - t
        out["error"] = str(e)


def scenario_dblock(args):
    fault = "database locked by another process"
    sc = Scenario("dblock")
    try:
        mc = sc.mc()
        # a) while the proxy runs and clients write
        px = sc.proxy(mc.port, http=True, extra=["--max-stall", "400"])
        ws = [Writer(px.port, b"l%d" % k, depth=1) for k in range(3)]
        for w in ws:
            w.start()
        time.sleep(0.5)
        hold = {}
        t0 = time.monotonic()
        th = threading.Thread(target=_hold_exclusive, args=(px.db, 5.0, hold), daemon=True)
        th.start()
        th.join(15)
        t1 = time.monotonic()
        time.sleep(0.3)
        stop_writers(ws)
        m = metrics(px)
        lost_m = lost_by_reason(m)
        rc = px.stop()
        sent = sum(w.sent for w in ws)
        stored = sum(w.kinds.get("STORED", 0) for w in ws)
        worst = max(w.worst for w in ws)
        worst_in = max((l for w in ws for (t, l) in w.latencies if t0 <= t <= t1), default=0.0)
        rows = count_rows(px.db)
        run = runs_rows(px.db)[-1]
        accounted = rows + run["rows_dropped"] == sent
        # b) the lock already held when a proxy starts on the file
        db2 = sc.path("prelocked.db")
        con = sqlite3.connect(db2, isolation_level=None)
        con.execute("CREATE TABLE filler(x)")
        con.execute("BEGIN EXCLUSIVE")
        con.execute("INSERT INTO filler VALUES (1)")
        t = time.monotonic()
        p = subprocess.run([SLABTAP, "proxy", "--listen", "%s:0" % HOST, "--upstream",
                            "%s:%d" % (HOST, mc.port), "--db", db2, "--http", "off"],
                           capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
        took_b = time.monotonic() - t
        con.execute("ROLLBACK")
        con.close()
        msg_b = p.stderr.decode(errors="replace").strip().splitlines()
        msg_b = log_msg(msg_b[-1], sc.w.path) if msg_b else ""
        refused_b = p.returncode != 0 and "in use by another process" in msg_b
        ok = (accounted and worst < 0.4 + 1.0 and rc == 0 and refused_b
              and not [w for w in ws if w.error or w.closed] and stored == sent)
        why = []
        if not accounted:
            why.append("rows %d + lost %d != sent %d" % (rows, run["rows_dropped"], sent))
        if worst >= 1.4:
            why.append("a client waited %.2f s (> --max-stall 0.4 s + 1 s)" % worst)
        if not refused_b:
            why.append("start on a locked file: rc %r, %r" % (p.returncode, msg_b))
        got = ("got it after %.2f s" % hold["waited"] if hold.get("got") else
               "refused after %.2f s: \"%s\"" % (hold.get("waited", -1), hold.get("error")))
        done = ("a) 3 writers (one at a time) through a proxy with `--max-stall 400`; another "
                "process runs `BEGIN EXCLUSIVE` on its file (busy timeout 5 s, to hold it 5 s); "
                "b) a proxy started on a file another process holds in `BEGIN EXCLUSIVE`")
        saw = ("a) the other process never gets the lock (%s); worst set %.3f s while it tried "
               "(%.3f s overall), answers %s; b) proxy exit %d after %.1f s: \"%s\""
               % (got, worst_in, worst, kinds_text(collections.Counter(
                   k for w in ws for k in w.kinds.elements())), p.returncode, took_b, msg_b))
        rows_txt = ("a) %s rows / %s writes sent, counted lost %d (runs.rows_dropped; /metrics "
                    "%s): rows + lost = sent: %s"
                    % (fmt_int(rows), fmt_int(sent), run["rows_dropped"],
                       ", ".join("%s=%d" % kv for kv in sorted(lost_m.items())) or "none",
                       "yes" if accounted else "NO"))
        return result(fault, done, saw, rows_txt, ok, "; ".join(why),
                      ["dblock: the proxy holds its file with `locking_mode=EXCLUSIVE` from "
                       "open to exit, so no other process can lock it while it runs; the "
                       "`--max-stall` path is exercised by `full` instead. held = clients "
                       "undisturbed, rows + counted losses = writes sent, and a start on a "
                       "file locked elsewhere refused with \"in use by another process\""])
    finally:
        sc.close()


# --- 5. the database's disk full (4 MB tmpfs) ---------------------------------

def scenario_full(args):
    fault = "database full (4 MB tmpfs)"
    if os.geteuid() != 0:
        return skipped(fault, "needs root to mount a tmpfs")
    import test_recorder_faults as trf  # its mount and filler approach
    sc = Scenario("full")
    try:
        disk = sc.path("disk")
        if not trf.mount_tmpfs(disk, "4m"):
            return skipped(fault, "cannot mount a tmpfs here")
        sc.mounts.append(disk)
        mc = sc.mc(extra=["-m", "256"])
        db = os.path.join(disk, "runs.db")
        px = sc.proxy(mc.port, db=db, http=True, extra=["--max-stall", "400", "--queue", "2048"])
        st = os.statvfs(disk)
        free = st.f_bavail * st.f_frsize
        filler = os.path.join(disk, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, free - 96 * 1024))
        ws = [Writer(px.port, b"d%d" % k, depth=1) for k in range(3)]
        for w in ws:
            w.start()
        t0 = time.monotonic()
        mctest.wait_for(lambda: health(px)[1].get("status") == "recorder_failing", 30,
                        what="the recorder failing on the full disk")
        t_fail = time.monotonic() - t0
        mctest.wait_for(lambda: lost_by_reason(metrics(px)).get("write_error", 0) > 0, 30,
                        what="rows lost (write_error) counted")
        t_lost = time.monotonic() - t0
        sent_failing = sum(w.sent for w in ws)
        time.sleep(1.0)
        moving = sum(w.sent for w in ws) - sent_failing
        os.remove(filler)
        t_space = time.monotonic()
        mctest.wait_for(lambda: health(px)[1].get("status") == "ok", 30,
                        what="recording again once space is back")
        t_resume = time.monotonic() - t_space
        time.sleep(0.5)
        stop_writers(ws)
        lost_m = lost_by_reason(metrics(px))
        rc = px.stop()
        sent = sum(w.sent for w in ws)
        stored = sum(w.kinds.get("STORED", 0) for w in ws)
        worst = max(w.worst for w in ws)
        rows = count_rows(db)
        run = runs_rows(db)[-1]
        accounted = rows + run["rows_dropped"] == sent
        resumed_msg = "recording every row again" in px.stderr_text()
        ok = (accounted and worst < 1.4 and run["rows_dropped"] > 0 and stored == sent
              and resumed_msg and moving > 100 and rc == 0
              and not [w for w in ws if w.error or w.closed])
        why = []
        if not accounted:
            why.append("rows %d + lost %d != sent %d" % (rows, run["rows_dropped"], sent))
        if worst >= 1.4:
            why.append("a client waited %.2f s" % worst)
        if rc != 0:
            why.append("exit %r" % rc)
        done = ("`--max-stall 400 --queue 2048`, file on a 4 MB tmpfs filled to 96 KB free; 3 "
                "writers (one at a time); the filler removed after rows were lost for 1 s")
        saw = ("worst set %.3f s; answers %s; %d sets in the 1 s of failing; `/health` "
               "`recorder_failing` after %.1f s, `ok` %.1f s after space came back"
               % (worst, kinds_text(collections.Counter(
                   k for w in ws for k in w.kinds.elements())), moving, t_fail, t_resume))
        rows_txt = ("%s rows + %s counted lost (runs.rows_dropped; /metrics %s) = %s; writes "
                    "sent %s: %s"
                    % (fmt_int(rows), fmt_int(run["rows_dropped"]),
                       ", ".join("%s=%d" % kv for kv in sorted(lost_m.items())),
                       fmt_int(rows + run["rows_dropped"]), fmt_int(sent),
                       "equal" if accounted else "NOT equal"))
        return result(fault, done, saw, rows_txt, ok, "; ".join(why),
                      ["full: held = no set waits 1 s beyond --max-stall (1.4 s), clients keep "
                       "going while the disk is full, rows + counted losses = writes sent, "
                       "recording resumes by itself (\"recording every row again\"), exit 0; "
                       "losses counted after %.1f s" % t_lost])
    finally:
        sc.close()


# --- 6. a corrupt database file -------------------------------------------------

def _start_refused(sc, mc, db, name):
    """Runs a proxy on db; (rc, last stderr line, seconds, listened)."""
    listen = mctest.reserve_port()
    port = listen.port
    argv = [SLABTAP, "proxy", "--listen", "%s:%d" % (HOST, port), "--upstream",
            "%s:%d" % (HOST, mc.port), "--db", db, "--http", "off"]
    t = time.monotonic()
    p = mctest.Process(argv, sc.path(name + ".log"))
    sc.procs.append(p)
    listen.release()
    listened = False
    while p.alive() and time.monotonic() - t < 10:
        if "slabtap: proxy " in p.stderr_text():
            listened = True
            break
        time.sleep(0.02)
    if listened:
        return None, p.stderr_text().strip(), time.monotonic() - t, True, p
    rc = p.wait(20)
    took = time.monotonic() - t
    p.kill_hard()
    lines = p.stderr_text().strip().splitlines()
    return rc, (log_msg(lines[-1], sc.w.path) if lines else ""), took, False, p


def scenario_corrupt(args):
    fault = "database file corrupt"
    sc = Scenario("corrupt")
    try:
        mc = sc.mc()
        # a) garbage from the first byte
        db = sc.path("garbage.db")
        with open(db, "wb") as f:
            f.write(random.Random(7).randbytes(64 * 1024))
        before = hashlib.sha256(open(db, "rb").read()).hexdigest()
        rc, msg, took, listened, _ = _start_refused(sc, mc, db, "proxy-garbage")
        after = hashlib.sha256(open(db, "rb").read()).hexdigest()
        a_ok = (not listened and rc not in (0, None) and "not a SQLite database" in msg
                and before == after)
        # b) a real slabtap file whose pages after the first are garbage
        db2 = sc.path("pages.db")
        px = sc.proxy(mc.port, db=db2, name="proxy-make")
        with mctest.connect(px.port) as s:
            mctest.set_items(s, [(b"k%d" % i, b"v" * 100) for i in range(2000)])
        px.stop()
        con = sqlite3.connect(db2)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = con.execute("PRAGMA page_size").fetchone()[0]
        con.close()
        size = os.path.getsize(db2)
        rnd = random.Random(8)
        with open(db2, "r+b") as f:
            f.seek(page)
            f.write(rnd.randbytes(size - page))
        before2 = hashlib.sha256(open(db2, "rb").read()).hexdigest()
        rc2, msg2, took2, listened2, p2 = _start_refused(sc, mc, db2, "proxy-pages")
        after2 = hashlib.sha256(open(db2, "rb").read()).hexdigest()
        if listened2:
            p2.kill_group()
        b_ok = not listened2 and rc2 not in (0, None) and before2 == after2
        ok = a_ok and b_ok
        done = ("a) `--db` a file of 64 KB of random bytes; b) `--db` a slabtap file (2,000 "
                "rows) whose pages after the first were overwritten with random bytes")
        saw = ("a) %s: exit %r after %.2f s: \"%s\"; file unchanged: %s. "
               "b) %s: exit %r after %.2f s: \"%s\"; file unchanged: %s"
               % ("refused" if not listened else "STARTED", rc, took, msg,
                  "yes" if before == after else "NO",
                  "refused" if not listened2 else "STARTED", rc2, took2,
                  msg2.splitlines()[-1] if msg2 else "", "yes" if before2 == after2 else "NO"))
        why = []
        if not a_ok:
            why.append("garbage file: listened=%s rc=%r msg=%r unchanged=%s"
                       % (listened, rc, msg, before == after))
        if not b_ok:
            why.append("corrupt pages: listened=%s rc=%r msg=%r unchanged=%s"
                       % (listened2, rc2, msg2[-300:], before2 == after2))
        return result(fault, done, saw, "-- (nothing served)", ok, "; ".join(why),
                      ["corrupt: held = the proxy does not start (non-zero exit, no "
                       "listener) with a message naming the file, and leaves the file as "
                       "it was"])
    finally:
        sc.close()


# --- 7. fd exhaustion --------------------------------------------------------------

def _open_clients(port, n, wait_s):
    """n connections, each sends `version`; after wait_s: (served sockets,
    closed-without-a-word count, no-answer count, connect errors, refused
    count: memcached's own "ERROR Too many open connections" line)."""
    sel = selectors.DefaultSelector()
    socks, connect_err = [], 0
    for _ in range(n):
        try:
            s = socket.create_connection((HOST, port), timeout=2)
            s.sendall(b"version\r\n")
            s.setblocking(False)
            socks.append(s)
            sel.register(s, selectors.EVENT_READ, bytearray())
        except OSError:
            connect_err += 1
    served, closed, refused = [], 0, 0
    pending = set(socks)
    deadline = time.monotonic() + wait_s
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.1):
            s = key.fileobj
            try:
                d = s.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                d = b""
            if not d:
                closed += 1
                sel.unregister(s)
                pending.discard(s)
                s.close()
                continue
            key.data.extend(d)
            if key.data.endswith(b"\r\n"):
                sel.unregister(s)
                pending.discard(s)
                if key.data.startswith(b"VERSION "):
                    served.append(s)
                elif key.data == b"ERROR Too many open connections\r\n":
                    refused += 1
                    s.close()
                else:
                    closed += 1
                    s.close()
    noanswer = len(pending)
    for s in pending:
        s.close()
    sel.close()
    return served, closed, noanswer, connect_err, refused


def scenario_fdlimit(args):
    fault = "fd limit at accept"
    if not shutil_which("prlimit"):
        return skipped(fault, "no prlimit")
    sc = Scenario("fdlimit")
    old = mctest.SLABTAP
    try:
        mc = sc.mc()
        wrapper = sc.path("slabtap-nofile64")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec prlimit --nofile=64:64 %s \"$@\"\n" % SLABTAP)
        os.chmod(wrapper, 0o755)
        mctest.SLABTAP = wrapper
        px = sc.proxy(mc.port, http=True)
        mctest.SLABTAP = old
        with open("/proc/%d/limits" % px.pid) as f:
            lim = [l for l in f if l.startswith("Max open files")][0].split()[3:5]
        fds0 = fd_count(px.pid)
        served, closed, noanswer, cerr, refused = _open_clients(px.port, 200, 3.0)
        fds_peak = fd_count(px.pid)
        alive_during = px.alive()
        for s in served:
            s.close()
        time.sleep(0.5)
        m = metrics(px)
        refused_ctr = int(m.get("slabtap_connections_refused_total", -1))
        accepted = int(m.get("slabtap_connections_accepted_total", -1))
        after, closed2, noanswer2, cerr2, _ = _open_clients(px.port, 20, 3.0)
        n_after = len(after)
        limit = int(m.get("slabtap_connections_limit", 20))
        want_after = min(20, limit)
        for s in after:
            s.close()
        rc = px.stop()
        log = px.stderr_text()
        logged = len([l for l in log.splitlines() if "refusing" in l])
        ok = (alive_during and n_after == want_after and rc == 0 and refused_ctr == refused + closed
              and closed == 0 and len(served) + closed + noanswer + cerr + refused == 200
              and len(served) > 0)
        why = []
        if n_after != want_after:
            why.append("after the clients closed only %d of %d new ones served" %
                       (n_after, want_after))
        if refused_ctr != refused + closed:
            why.append("connections_refused = %d, clients turned away %d" %
                       (refused_ctr, refused + closed))
        if closed:
            why.append("%d closed without a word" % closed)
        if len(served) + closed + noanswer + cerr + refused != 200:
            why.append("clients unaccounted")
        notes = ["fdlimit: held = the proxy stays up, refuses what it cannot take, counts it, "
                 "and serves new clients once fds are free; exit 0"]
        if refused_ctr >= 0 and refused_ctr < closed:
            notes.append("fdlimit: %d clients were closed unanswered but `connections_refused` "
                     "is %d: at EMFILE libuv (%s) accepts and closes the waiting clients itself "
                     "(its reserved-fd trick) and calls the proxy's connection callback only "
                     "when that trick fails, so the proxy never learns of them (nothing counted, "
                     "nothing logged)" % (closed, refused_ctr, libuv_version()))
        done = ("proxy under `prlimit --nofile=64:64` (limits %s, %d fds open at start); 200 "
                "clients connect and each sends `version`, answers awaited 3 s; then all "
                "close and 20 new ones connect" % ("/".join(lim), fds0))
        saw = ("%d served, %d refused with `ERROR Too many open connections`, %d closed by the "
               "proxy without a word, %d no answer in 3 s, %d connect errors (proxy at %d fds); "
               "`connections_accepted` = %d, `connections_refused` = %d, %d \"refusing\" log "
               "lines; `connections_limit` %d; after they closed: %d of 20 new clients served"
               % (len(served), refused, closed, noanswer, cerr, fds_peak, accepted, refused_ctr,
                  logged, limit, n_after))
        return result(fault, done, saw, "-- (no writes)", ok, "; ".join(why), notes)
    finally:
        mctest.SLABTAP = old
        sc.close()


def libuv_version():
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libuv1"],
                             capture_output=True, timeout=10).stdout.decode().strip()
        return "libuv " + out if out else "libuv"
    except (OSError, subprocess.SubprocessError):
        return "libuv"


def shutil_which(name):
    import shutil
    return shutil.which(name)


# --- 8. clients that never read -------------------------------------------------

def _nonreaders(port, n, seconds, value_key, stop_evt, stats):
    """n connections pipelining `get KEY` as fast as the kernel takes them,
    never reading, for `seconds`. stats: sent (requests), closed (by peer)."""
    socks = []
    for _ in range(n):
        s = socket.create_connection((HOST, port), timeout=5)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setblocking(False)
        socks.append(s)
    chunk = (b"get %s\r\n" % value_key) * 512
    live = set(range(n))
    end = time.monotonic() + seconds
    while time.monotonic() < end and live and not stop_evt.is_set():
        progress = False
        for i in list(live):
            try:
                k = socks[i].send(chunk)
                stats["sent"] += k // (len(chunk) // 512)
                progress = True
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                live.discard(i)
                stats["closed"] += 1
        if not progress:
            time.sleep(0.002)
    stats["live_at_end"] = len(live)
    return socks


def _normal_client(port, seconds, conn):
    """A process (no GIL shared with the non-readers): get/set round trips on
    one connection for `seconds`, each timed; sends back the latencies."""
    out = {"lat": [], "errors": []}
    end = time.monotonic() + seconds
    try:
        with mctest.connect(port, timeout=30) as s:
            rd = LineReader(s)
            i = 0
            while time.monotonic() < end:
                t = time.monotonic()
                if i % 2:
                    s.sendall(b"set n:%d 0 0 100\r\n%s\r\n" % (i, b"n" * 100))
                    if rd.line(30) != b"STORED":
                        out["errors"].append("set")
                else:
                    s.sendall(b"get big\r\n")
                    rd.line(30)
                    rd.line(30)
                    if rd.line(30) != b"END":
                        out["errors"].append("get")
                out["lat"].append(time.monotonic() - t)
                i += 1
                time.sleep(0.001)
    except Exception as e:
        out["errors"].append(repr(e))
    conn.send(out)
    conn.close()


def _one_nonreader_run(sc, mc, extra, seconds, tag):
    px = sc.proxy(mc.port, http=True, name="proxy-" + tag, extra=extra)
    with mctest.connect(px.port) as s:
        mctest.set_items(s, [(b"big", b"b" * 1000)])
    rss0 = proc_status(px.pid)
    ctx = multiprocessing.get_context("fork")
    a, b = ctx.Pipe(duplex=False)
    nc = ctx.Process(target=_normal_client, args=(px.port, seconds + 0.5, b))
    nc.start()
    b.close()
    st = {"sent": 0, "closed": 0}
    socks = _nonreaders(px.port, 30, seconds, b"big", threading.Event(), st)
    sc.socks.extend(socks)
    m = metrics(px, timeout=30)
    peak = proc_status(px.pid).get("VmHWM", 0)
    normal = a.recv() if a.poll(60) else {"lat": [], "errors": ["no result"]}
    nc.join(10)
    if nc.is_alive():
        nc.kill()
    for s in socks:
        s.close()
    # RSS once they are gone (the answers they never read freed)
    time.sleep(2.0)
    rss_after = proc_status(px.pid).get("VmRSS", 0)
    m_after = metrics(px, timeout=30)
    alive = px.alive()
    rc = px.stop()
    lat = sorted(normal["lat"])
    return {"peak_kb": peak, "rss0_kb": rss0.get("VmRSS", 0), "rss_after_kb": rss_after,
            "closed_metric": int(m.get("slabtap_slow_clients_closed_total", -1)),
            "mem_closed": int(m.get("slabtap_memory_clients_closed_total", -1)),
            "mem_pauses": int(m.get("slabtap_memory_pauses_total", -1)),
            "buffer_after": int(m_after.get("slabtap_buffer_bytes", -1)),
            "open_after": int(m_after.get("slabtap_connections_open", -1)),
            "closed_seen": st["closed"], "sent": st["sent"],
            "normal_max": lat[-1] if lat else -1,
            "normal_p99": lat[int(0.99 * (len(lat) - 1))] if lat else -1,
            "normal_ops": len(lat), "normal_errors": normal["errors"],
            "alive": alive, "rc": rc}


def scenario_nonreaders(args):
    fault = "clients that never read"
    sc = Scenario("nonreaders")
    try:
        mc = sc.mc(extra=["-m", "256"])
        seconds = 5.0
        r = _one_nonreader_run(sc, mc, [], seconds, "default")
        has_mm = "--max-memory" in subprocess.run(
            [SLABTAP, "proxy", "--help"], capture_output=True).stdout.decode()
        r2 = _one_nonreader_run(sc, mc, ["--max-memory", "64m"], seconds, "maxmem") if has_mm \
            else None

        def txt(r):
            extra = ""
            if r["mem_closed"] >= 0:
                extra = (", `memory_clients_closed` %d, `memory_pauses` %d; `buffer_bytes` %s "
                         "after" % (r["mem_closed"], r["mem_pauses"], fmt_int(r["buffer_after"])))
            return ("peak RSS %.0f MB (start %.0f MB), %.0f MB 2 s after they closed; normal "
                    "client: %d round trips, max %.3f s (p99 %.4f s), errors %d; %d of 30 closed "
                    "by the proxy within the %.0f s (`slow_clients_closed` %d%s)"
                    % (r["peak_kb"] / 1024, r["rss0_kb"] / 1024, r["rss_after_kb"] / 1024,
                       r["normal_ops"], r["normal_max"], r["normal_p99"],
                       len(r["normal_errors"]), r["closed_seen"], seconds, r["closed_metric"],
                       extra))
        saw = "default flags: " + txt(r)
        if r2:
            saw += "; `--max-memory 64m`: " + txt(r2)
        else:
            saw += "; no `--max-memory` flag in this build"
        ok = True
        why = []
        for name, x in (("default", r), ("--max-memory 64m", r2)):
            if not x:
                continue
            if not (x["alive"] and x["rc"] == 0):
                why.append("%s: proxy alive=%s rc=%r" % (name, x["alive"], x["rc"]))
            if x["normal_errors"]:
                why.append("%s: normal client errors %r" % (name, x["normal_errors"][:3]))
            if x["normal_max"] >= 2.0 or x["normal_ops"] < 100:
                why.append("%s: normal client starved: %d round trips, one waited %.2f s"
                           % (name, x["normal_ops"], x["normal_max"]))
            if x["rss_after_kb"] > x["rss0_kb"] + 256 * 1024:
                why.append("%s: %.0f MB RSS kept after every client closed"
                           % (name, x["rss_after_kb"] / 1024))
        if r2 and r2["peak_kb"] > 1.5 * 64 * 1024 + r2["rss0_kb"]:
            why.append("--max-memory 64m: peak RSS %.0f MB" % (r2["peak_kb"] / 1024))
        ok = not why
        done = ("30 clients pipeline `get big` (1,000-byte value) as fast as the kernel takes "
                "them, never reading (SO_RCVBUF 4 KB), for %.0f s; one normal client does "
                "get/set round trips meanwhile%s"
                % (seconds, "; again with `--max-memory 64m`" if r2 else ""))
        return result(fault, done, saw, "-- (gets)", ok, "; ".join(why),
                      ["nonreaders: held = the proxy stays up and exits 0; the normal client "
                       "(its own process) gets every answer right, completes at least 100 round "
                       "trips and never waits 2 s (the generator saturates a core of 2); RSS "
                       "2 s after the 30 closed is within 256 MB of the start%s. Requests the "
                       "30 got into the kernel: %s (default run)"
                       % ("; with --max-memory 64m peak RSS <= start + 96 MB" if r2 else "",
                          fmt_int(r["sent"]))])
    finally:
        sc.close()


# --- 9. slowloris on the admin port -------------------------------------------

def scenario_slowloris(args):
    fault = "slowloris on the admin port"
    sc = Scenario("slowloris")
    try:
        mc = sc.mc()
        px = sc.proxy(mc.port, http=True)
        req = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: %s\r\n" % (
            px.http_port, b"a" * 200)
        n, seconds = 32, 12.0
        state = {"closed": 0, "opened": 0}
        socks = [None] * n
        pos = [0] * n

        def reopen(i):
            try:
                s = socket.create_connection((HOST, px.http_port), timeout=2)
                s.setblocking(False)
                socks[i] = s
                pos[i] = 0
                state["opened"] += 1
            except OSError:
                socks[i] = None
        for i in range(n):
            reopen(i)
        stop = threading.Event()

        def loris():
            while not stop.is_set():
                for i in range(n):
                    s = socks[i]
                    if s is None:
                        reopen(i)
                        continue
                    try:
                        try:
                            if s.recv(4096) == b"":
                                raise ConnectionError
                        except BlockingIOError:
                            pass
                        s.send(req[pos[i] % len(req):pos[i] % len(req) + 1])
                        pos[i] += 1
                    except (OSError, ConnectionError):
                        state["closed"] += 1
                        s.close()
                        reopen(i)
                stop.wait(1.0)
        tl = threading.Thread(target=loris, daemon=True)
        tl.start()
        probes = []
        t0 = time.monotonic()
        time.sleep(0.5)
        while time.monotonic() - t0 < seconds:
            t = time.monotonic()
            try:
                st, _, body = mctest.http_request(px.http_port, "GET", "/health", timeout=5)
                probes.append((st, time.monotonic() - t))
            except OSError as e:
                probes.append(("error " + type(e).__name__, time.monotonic() - t))
            time.sleep(0.5)
        stop.set()
        tl.join(10)
        for s in socks:
            if s:
                s.close()
        rc = px.stop()
        ok200 = [d for st, d in probes if st == 200]
        worst = max(d for _, d in probes)
        ok = len(ok200) == len(probes) and worst < 2.0 and rc == 0
        done = ("%d connections to the admin port each send one byte of a `GET /health` head "
                "per second (reopened when closed) for %.0f s; `/health` probed every 0.5 s"
                % (n, seconds))
        saw = ("%d of %d probes answered 200, median %.1f ms, worst %.0f ms; slowloris "
               "connections closed by the proxy: %d (opened %d)"
               % (len(ok200), len(probes), 1000 * statistics.median(d for _, d in probes),
                  1000 * worst, state["closed"], state["opened"]))
        why = "" if ok else "probes %r" % [p for p in probes if p[0] != 200 or p[1] >= 2.0][:5]
        return result(fault, done, saw, "--", ok, why,
                      ["slowloris: held = every /health probe answered 200 within 2 s"])
    finally:
        sc.close()


# --- driver ------------------------------------------------------------------------

SCENARIOS = [
    ("kill9", scenario_kill9, 120),
    ("mckill", scenario_mckill, 60),
    ("mcfreeze", scenario_mcfreeze, 60),
    ("dblock", scenario_dblock, 60),
    ("full", scenario_full, 90),
    ("corrupt", scenario_corrupt, 60),
    ("fdlimit", scenario_fdlimit, 60),
    ("nonreaders", scenario_nonreaders, 90),
    ("slowloris", scenario_slowloris, 60),
]


def _alarm(signum, frame):
    raise ScenarioTimeout("scenario overran its alarm")


def md_cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def table(results):
    lines = ["| fault | what was done | what clients saw | rows recorded / acknowledged / "
             "counted lost | verdict |", "|---|---|---|---|---|"]
    for r in results:
        lines.append("| %s |" % " | ".join(md_cell(r[k]) for k in
                                           ("fault", "done", "saw", "rows", "verdict")))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="comma list of scenarios (see --list)")
    ap.add_argument("--list", action="store_true", help="print the scenario names")
    ap.add_argument("--out", default=os.path.join(SRC, "results", "faults.md"),
                    help="markdown file to write (default results/faults.md)")
    ap.add_argument("--kill-reps", type=int, default=5, help="kills in kill9 (default 5)")
    args = ap.parse_args()
    names = [n for n, _, _ in SCENARIOS]
    if args.list:
        print("\n".join(names))
        return 0
    chosen = names
    if args.only:
        chosen = [x.strip() for x in args.only.split(",") if x.strip()]
        bad = [x for x in chosen if x not in names]
        if bad:
            ap.error("unknown scenario(s) %s; known: %s" % (", ".join(bad), ", ".join(names)))
    if not os.access(SLABTAP, os.X_OK):
        print("faults.py: no slabtap binary at %s (build it, or set SLABTAP)" % SLABTAP,
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGALRM, _alarm)
    results = []
    t_all = time.monotonic()
    for name, fn, budget in SCENARIOS:
        if name not in chosen:
            continue
        t = time.monotonic()
        print("faults: %s ..." % name, file=sys.stderr, flush=True)
        signal.alarm(budget)
        try:
            r = fn(args)
        except Exception as e:
            r = {"fault": name, "done": "--", "saw": "--", "rows": "--", "ok": False,
                 "verdict": "ERROR: %s" % (str(e).splitlines()[0][:300] if str(e) else repr(e)),
                 "notes": []}
        finally:
            signal.alarm(0)
        r["seconds"] = time.monotonic() - t
        print("faults: %s: %s (%.1f s)" % (name, r["verdict"], r["seconds"]), file=sys.stderr,
              flush=True)
        results.append(r)
    took = time.monotonic() - t_all
    md = table(results)
    head = ("Faults measured by `bench/faults.py%s` on %s: slabtap %s, %s, %d CPUs, "
            "uid %d; %.0f s in all."
            % (" --only " + args.only if args.only else "",
               time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), build_text(),
               mc_version(), os.cpu_count() or 0, os.geteuid(), took))
    notes = [n for r in results for n in r.get("notes", [])]
    text = head + "\n\n" + md + "\n\n" + "\n".join("* " + n for n in notes) + "\n"
    print(head + "\n\n" + md)
    print("\n(%.0f s; the notes on each verdict are in %s)" % (took, args.out))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    return 0 if all(r["ok"] for r in results) else 1


def build_text():
    """The binary, and the revision of the tree it was built from."""
    try:
        rev = subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"],
                             capture_output=True, timeout=10).stdout.decode().strip()
        dirty = subprocess.run(["git", "-C", SRC, "status", "--porcelain", "--", "proxy",
                                "schema", "CMakeLists.txt"],
                               capture_output=True, timeout=10).stdout.decode().strip()
    except (OSError, subprocess.SubprocessError):
        rev, dirty = "?", ""
    built = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(SLABTAP)))
    return "`%s` (built %s; tree at %s%s)" % (os.path.relpath(SLABTAP, SRC), built, rev,
                                               " + uncommitted changes" if dirty else "")


def mc_version():
    try:
        return subprocess.run(["memcached", "-V"], capture_output=True,
                              timeout=10).stdout.decode().strip()
    except (OSError, subprocess.SubprocessError):
        return "memcached ?"


if __name__ == "__main__":
    sys.exit(main())
