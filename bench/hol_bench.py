#!/usr/bin/env python3
"""Head-of-line blocking behind big answers: small gets beside one big reader.

One memcached (-m 1024 -I 2m) and, in front of it, the paths below, all
started once on free 127.0.0.1 ports and measured in the same invocation:

  direct      clients -> memcached
  per-client  slabtap proxy --upstream-conns per-client
  pooled      slabtap proxy (default flags: 2 shared upstreams, --big-answer 4m)
  pooled-ba0  slabtap proxy --big-answer 0 (big readers stay on the shared
              connections: the old behaviour, minus the 32 MiB disconnect)
  twemproxy   nutcracker 0.5 (one pool, one server, server_connections 1)

For each scenario (a multiget of BIG x 1 MB values: 50 and 20 by default)
and each path, one run of SECONDS seconds:

  * 8 small clients (one process, nonblocking sockets): `get` of a random one
    of 1,000 keys with a 100-byte value, one request per round trip, closed
    loop; every answer's latency is kept (a request still waiting at the end
    of the run is waited for, up to 10 s, and counted);
  * 1 big client (its own process): `get` of the BIG keys in one multiget,
    again and again on one connection, reading 64 KB per recv(), as fast as
    loopback allows; every answer is checked against the one memcached gave
    directly (length and CRC-32 of the whole answer; the reference answers
    are also SHA-256'd), and a closed connection is counted and reopened.

Rounds interleave the paths (the order rotates every round) so the machine's
drift hits every path alike; the table shows medians over rounds and
per-round ratios to per-client. During each slabtap run /metrics is polled
every 20 ms for slabtap_buffer_bytes (its high-water is shown), and the
proxy's VmHWM is reset before (`echo 5 > /proc/PID/clear_refs`) and read
after the run. After the timed rounds, the first two BIG-key multigets of a
fresh connection through pooled (the first rides a shared upstream, the next
a private one) and through pooled-ba0 are SHA-256'd against direct's.

  bench/hol_bench.py                           # ~6 minutes: 3 rounds x 2 scenarios x 5 paths x 10 s
  bench/hol_bench.py --rounds 5 --seconds 8
  bench/hol_bench.py --paths direct,per-client,pooled --big 50
  bench/hol_bench.py --slabtap build-rel/slabtap --keep

Needs python3 (stdlib), memcached, nutcracker (apt-get install nutcracker) and
a slabtap binary (default: build-rel/slabtap, else build-bench/slabtap, else
build/slabtap). Helpers (free ports, /proc readers, memcached one-liners) come
from bench/compare_proxies.py. Exit 0 whatever the target says (--strict:
exit 3 when pooled p99 > 1.5 x per-client's in a scenario), 1 on an error.
"""
import argparse
import array
import hashlib
import json
import multiprocessing as mp
import os
import random
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_proxies as cp  # noqa: E402  (freeport, listen_ports, alive, hwm_kb, cpu_ticks, mc_command)

H = "127.0.0.1"
ALL_PATHS = ["direct", "per-client", "pooled", "pooled-ba0", "twemproxy"]
SLABTAP_PATHS = {"per-client": ["--upstream-conns", "per-client"],
                 "pooled": [],
                 "pooled-ba0": ["--big-answer", "0"]}
SMALL_KEYS = 1000
SMALL_SIZE = 100
BIG_SIZE = 1 << 20          # 1 MiB values
READ_CHUNK = 64 * 1024
SMALL_CLIENTS = 8
METRIC_NAMES = ("buffer_bytes", "clients_moved_big_answers", "slow_clients_closed",
                "memory_clients_closed", "memory_pauses", "upstream_connections_open")


def die(msg):
    print(f"hol_bench: {msg}", file=sys.stderr)
    sys.exit(1)


# --------------------------------------------------------------------------- processes

class Procs:
    """Every process started, stopped on every exit path."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = {}

    def start_listener(self, name, argv_tpl, conf_tpl=None, conf_path=None):
        """Run argv_tpl (@PORT@, @PORT2@ replaced by free ports) until the new
        process listens on the first; a port lost between choosing and binding
        is retried with new ones. Returns (Popen, port, port2)."""
        log = open(os.path.join(self.tmp, f"{name}.log"), "ab")
        for _ in range(20):
            p1, p2 = cp.freeport(), cp.freeport()
            while p2 == p1:
                p2 = cp.freeport()
            argv = [a.replace("@PORT@", str(p1)).replace("@PORT2@", str(p2)) for a in argv_tpl]
            if conf_tpl:
                with open(conf_path, "w") as f:
                    f.write(conf_tpl.replace("@PORT@", str(p1)))
            pr = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
            end = time.monotonic() + 15
            while time.monotonic() < end and pr.poll() is None:
                if p1 in (cp.listen_ports(pr.pid) or []):
                    break
                time.sleep(0.02)
            if pr.poll() is None and p1 in (cp.listen_ports(pr.pid) or []):
                self.procs[name] = pr
                return pr, p1, p2, argv
            pr.kill()
            pr.wait()
            log.write(f"  ({name} did not come up on port {p1}, retrying)\n".encode())
            log.flush()
        die(f"{name} would not start: see {self.tmp}/{name}.log")

    def check(self, when):
        for name, pr in self.procs.items():
            if pr.poll() is not None:
                tail = open(os.path.join(self.tmp, f"{name}.log"), errors="replace").read()[-800:]
                die(f"{name} (pid {pr.pid}) is gone {when}: exit status {pr.returncode}\n{tail}")

    def stop(self):
        for pr in self.procs.values():
            if pr.poll() is None:
                pr.terminate()
        end = time.monotonic() + 5
        for pr in self.procs.values():
            try:
                pr.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                pr.kill()
                pr.wait()


def wait_ping(port, secs=15):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        try:
            if cp.mc_command(f"{H}:{port}", "version", 1.0).startswith("VERSION"):
                return
        except OSError:
            pass
        time.sleep(0.05)
    die(f"no VERSION from port {port}")


def settle(pids, window=0.3, limit=10.0):
    """Wait until none of pids used more than one CPU tick in `window` s."""
    end = time.monotonic() + limit
    last = [cp.cpu_ticks(p) for p in pids]
    while time.monotonic() < end:
        time.sleep(window)
        now = [cp.cpu_ticks(p) for p in pids]
        if all(b - a <= 1 for a, b in zip(last, now)):
            return
        last = now


def reset_hwm(pid):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def metrics(http_port):
    with urllib.request.urlopen(f"http://{H}:{http_port}/metrics", timeout=2) as r:
        txt = r.read().decode(errors="replace")
    out = {}
    for line in txt.splitlines():
        if line.startswith("slabtap_"):
            k, _, v = line.partition(" ")
            k = k[len("slabtap_"):]
            if k.endswith("_total"):     # counters
                k = k[:-len("_total")]
            try:
                out[k] = float(v.split()[0])
            except (ValueError, IndexError):
                pass
    return out


class Poller(threading.Thread):
    """Polls /metrics every `every` s; keeps buffer_bytes' high-water."""

    def __init__(self, http_port, every=0.02):
        super().__init__(daemon=True)
        self.port, self.every = http_port, every
        self.stop_evt = threading.Event()
        self.hw = 0
        self.polls = self.fails = 0

    def run(self):
        while not self.stop_evt.is_set():
            try:
                b = metrics(self.port).get("buffer_bytes", 0)
                self.hw = max(self.hw, b)
                self.polls += 1
            except OSError:
                self.fails += 1
            self.stop_evt.wait(self.every)


# --------------------------------------------------------------------------- memcached data

def recv_exact(s, n):
    buf = bytearray()
    while len(buf) < n:
        d = s.recv(min(1 << 20, n - len(buf)))
        if not d:
            raise OSError("closed")
        buf += d
    return bytes(buf)


def preload(port, nbig, seed=1):
    """Small keys hs:0..999 (100 bytes) and big keys hb:0..nbig-1 (1 MiB of
    seeded random bytes each), straight to memcached."""
    rnd = random.Random(seed)
    s = socket.create_connection((H, port), timeout=30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    small = b"".join(b"set hs:%d 0 0 %d noreply\r\n%s\r\n" % (i, SMALL_SIZE, b"v" * SMALL_SIZE)
                     for i in range(SMALL_KEYS))
    s.sendall(small)
    for i in range(nbig):
        s.sendall(b"set hb:%d 0 0 %d\r\n" % (i, BIG_SIZE) + rnd.randbytes(BIG_SIZE) + b"\r\n")
        line = b""
        while not line.endswith(b"\r\n"):
            d = s.recv(64)
            if not d:
                raise OSError("closed during preload")
            line += d
        if line != b"STORED\r\n":
            die(f"preload: set hb:{i} answered {line!r} (is -I 2m set?)")
    s.close()


def multiget_cmd(nbig):
    return b"get " + b" ".join(b"hb:%d" % i for i in range(nbig)) + b"\r\n"


def fetch_answer(port, cmd, times=1):
    """The whole answers to `times` sends of cmd on one new connection."""
    s = socket.create_connection((H, port), timeout=60)
    out = []
    for _ in range(times):
        s.sendall(cmd)
        buf = bytearray()
        while not buf.endswith(b"END\r\n") or not complete(buf):
            d = s.recv(1 << 20)
            if not d:
                raise OSError("closed")
            buf += d
        out.append(bytes(buf))
    s.close()
    return out


def complete(buf):
    """True when buf is whole VALUE blocks followed by END\\r\\n."""
    i = 0
    n = len(buf)
    while True:
        if buf.startswith(b"END\r\n", i):
            return i + 5 == n
        if not buf.startswith(b"VALUE ", i):
            return False
        j = buf.find(b"\r\n", i)
        if j < 0:
            return False
        size = int(buf[i:j].split()[3])
        i = j + 2 + size + 2
        if i > n:
            return False


# --------------------------------------------------------------------------- clients

def small_clients(port, nclients, secs, ready, go, q):
    """nclients closed-loop get clients in one selector loop; puts
    (latencies_bytes, misses, disconnects, errors) on q."""
    try:
        rnd = random.Random(os.getpid())
        sel = selectors.DefaultSelector()
        conns = []
        for _ in range(nclients):
            s = socket.create_connection((H, port), timeout=10)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)
            c = {"s": s, "buf": b"", "t": None}
            conns.append(c)
            sel.register(s, selectors.EVENT_READ, c)
        lat = array.array("d")
        misses = disc = errors = 0
        ready.set()
        go.wait()
        t0 = time.monotonic()
        deadline = t0 + secs
        hard_end = deadline + 10

        def send(c):
            c["s"].send(b"get hs:%d\r\n" % rnd.randrange(SMALL_KEYS))
            c["t"] = time.monotonic()

        for c in conns:
            send(c)
        outstanding = nclients
        while outstanding:
            now = time.monotonic()
            if now > hard_end:
                for c in conns:   # never answered: counted as waiting until now
                    if c["t"] is not None:
                        lat.append(now - c["t"])
                break
            for key, _ in sel.select(timeout=0.5):
                c = key.data
                try:
                    d = c["s"].recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    d = b""
                if not d:            # closed: count, reopen, resend
                    disc += 1
                    sel.unregister(c["s"])
                    c["s"].close()
                    s = socket.create_connection((H, port), timeout=10)
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    s.setblocking(False)
                    c["s"], c["buf"] = s, b""
                    sel.register(s, selectors.EVENT_READ, c)
                    if time.monotonic() < deadline:
                        send(c)
                    else:
                        c["t"] = None
                        outstanding -= 1
                    continue
                c["buf"] += d
                if not c["buf"].endswith(b"END\r\n"):
                    continue
                t1 = time.monotonic()
                lat.append(t1 - c["t"])
                if not c["buf"].startswith(b"VALUE "):
                    misses += 1
                    if c["buf"] != b"END\r\n":
                        errors += 1
                c["buf"] = b""
                if t1 < deadline:
                    send(c)
                else:
                    c["t"] = None
                    outstanding -= 1
        for c in conns:
            c["s"].close()
        q.put(("small", lat.tobytes(), misses, disc, errors))
    except Exception as e:   # noqa: BLE001 (reported to the parent)
        q.put(("small-error", repr(e)))


def big_client(port, cmd, exp_len, exp_crc, secs, ready, go, q):
    """Multigets cmd again and again on one connection, 64 KB per recv;
    puts (bytes before the deadline, answers, bad answers, disconnects,
    answer durations) on q."""
    try:
        def conn():
            s = socket.create_connection((H, port), timeout=60)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s

        s = conn()
        buf = bytearray(READ_CHUNK)
        mv = memoryview(buf)
        got_bytes = answers = bad = disc = 0
        durs = []
        ready.set()
        go.wait()
        t0 = time.monotonic()
        deadline = t0 + secs
        while time.monotonic() < deadline:
            ta = time.monotonic()
            s.sendall(cmd)
            got = crc = 0
            closed = False
            while got < exp_len:
                try:
                    n = s.recv_into(mv, min(READ_CHUNK, exp_len - got))
                except OSError:
                    n = 0
                if not n:
                    closed = True
                    break
                crc = zlib.crc32(mv[:n], crc)
                got += n
                if time.monotonic() < deadline:
                    got_bytes += n
            if closed:
                disc += 1
                s.close()
                s = conn()
                continue
            answers += 1
            durs.append(time.monotonic() - ta)
            if crc != exp_crc:
                bad += 1
        s.close()
        q.put(("big", got_bytes, answers, bad, disc, durs))
    except Exception as e:   # noqa: BLE001
        q.put(("big-error", repr(e)))


# --------------------------------------------------------------------------- one run

def pct(sorted_xs, p):
    if not sorted_xs:
        return None
    k = max(0, min(len(sorted_xs) - 1, int(round(p / 100.0 * len(sorted_xs) + 0.5)) - 1))
    return sorted_xs[k]


def one_run(path, info, nbig, ref, secs, procs):
    port = info["port"]
    pid = info.get("pid")
    http = info.get("http")
    settle([p for p in (pid, info["mc_pid"]) if p])
    procs.check(f"before {path}")
    hwm_ok = reset_hwm(pid) if pid else False
    m0 = metrics(http) if http else {}
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    r1, r2, go = ctx.Event(), ctx.Event(), ctx.Event()
    ps = ctx.Process(target=small_clients, args=(port, SMALL_CLIENTS, secs, r1, go, q))
    pb = ctx.Process(target=big_client,
                     args=(port, multiget_cmd(nbig), ref["len"], ref["crc"], secs, r2, go, q))
    ps.start()
    pb.start()
    if not (r1.wait(15) and r2.wait(15)):
        ps.kill()
        pb.kill()
        die(f"{path}: clients did not connect")
    poller = Poller(http) if http else None
    if poller:
        poller.start()
    go.set()
    res = {}
    end = time.monotonic() + secs + 60
    while len(res) < 2 and time.monotonic() < end:
        try:
            item = q.get(timeout=1)
        except Exception:   # noqa: BLE001 (queue.Empty)
            if not ps.is_alive() and not pb.is_alive() and q.empty():
                break
            continue
        if item[0].endswith("-error"):
            res.setdefault("errors", []).append(item[1])
            res[item[0][:-6]] = None
        else:
            res[item[0]] = item
    ps.join(5)
    pb.join(5)
    for p in (ps, pb):
        if p.is_alive():
            p.kill()
    if poller:
        poller.stop_evt.set()
        poller.join()
    procs.check(f"after {path}")
    out = {"path": path, "errors": res.get("errors", [])}
    if res.get("small"):
        _, lb, misses, disc, errors = res["small"]
        lat = array.array("d")
        lat.frombytes(lb)
        xs = sorted(lat)
        out.update(n=len(xs), p50=pct(xs, 50) * 1e3, p99=pct(xs, 99) * 1e3,
                   p999=pct(xs, 99.9) * 1e3, max=xs[-1] * 1e3 if xs else None,
                   misses=misses, small_disc=disc, small_errors=errors)
    if res.get("big"):
        _, nbytes, answers, bad, disc, durs = res["big"]
        out.update(mbs=nbytes / secs / 1e6, answers=answers, bad=bad, big_disc=disc,
                   first_ms=durs[0] * 1e3 if durs else None,
                   later_ms=statistics.median(durs[1:]) * 1e3 if len(durs) > 1 else None)
    if pid:
        out["hwm_kb"] = cp.hwm_kb(pid)   # since the reset (since the start when it failed)
        out["hwm_reset"] = hwm_ok
    if http:
        m1 = metrics(http)
        out["buf_hw"] = poller.hw
        out["polls"] = poller.polls
        for k in METRIC_NAMES[1:5]:
            out[k] = m1.get(k, 0) - m0.get(k, 0)
    return out


# --------------------------------------------------------------------------- report

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def f(x, fmt="{:.2f}"):
    return "-" if x is None else fmt.format(x)


def report(runs, paths, scenarios, rounds, secs):
    verdicts = []
    for nbig in scenarios:
        print()
        print(f"== {nbig} x 1 MB multiget beside {SMALL_CLIENTS} small-get clients "
              f"({rounds} rounds x {secs} s per path)")
        hdr = (f"{'path':<11} {'p50 ms':>7} {'p99 ms':>7} {'p99.9 ms':>8} {'max ms':>7} "
               f"{'p99/pc':>6} {'gets/s':>7} {'big MB/s':>8} {'big/pc':>6} {'answers':>7} "
               f"{'bad':>3} {'disc':>4} {'peak RSS':>9} {'buf hw':>8} {'moved':>5}")
        print(hdr)
        print("-" * len(hdr))
        for path in paths:
            mine = [runs[(path, nbig, r)] for r in range(rounds) if (path, nbig, r) in runs]
            if not mine:
                continue
            ratio = med([runs[(path, nbig, r)].get("p99") / runs[("per-client", nbig, r)]["p99"]
                         for r in range(rounds)
                         if (path, nbig, r) in runs and ("per-client", nbig, r) in runs
                         and runs[("per-client", nbig, r)].get("p99")
                         and runs[(path, nbig, r)].get("p99") is not None])
            bratio = med([runs[(path, nbig, r)].get("mbs") / runs[("per-client", nbig, r)]["mbs"]
                          for r in range(rounds)
                          if (path, nbig, r) in runs and ("per-client", nbig, r) in runs
                          and runs[("per-client", nbig, r)].get("mbs")
                          and runs[(path, nbig, r)].get("mbs") is not None])
            hwm = max((m["hwm_kb"] for m in mine if m.get("hwm_kb")), default=None)
            bhw = max((m["buf_hw"] for m in mine if "buf_hw" in m), default=None)
            moved = sum(m.get("clients_moved_big_answers", 0) for m in mine) if bhw is not None else None
            disc = sum(m.get("big_disc", 0) + m.get("small_disc", 0) for m in mine)
            print(f"{path:<11} {f(med([m.get('p50') for m in mine])):>7} "
                  f"{f(med([m.get('p99') for m in mine])):>7} "
                  f"{f(med([m.get('p999') for m in mine])):>8} "
                  f"{f(max((m['max'] for m in mine if m.get('max') is not None), default=None), '{:.1f}'):>7} "
                  f"{f(ratio):>6} {f(med([m.get('n', 0) / secs for m in mine]), '{:.0f}'):>7} "
                  f"{f(med([m.get('mbs') for m in mine]), '{:.0f}'):>8} {f(bratio):>6} "
                  f"{sum(m.get('answers', 0) for m in mine):>7} {sum(m.get('bad', 0) for m in mine):>3} "
                  f"{disc:>4} {f(hwm and hwm / 1024, '{:.1f} MB'):>9} "
                  f"{f(bhw and bhw / 1048576, '{:.1f} MiB') if bhw is not None else '-':>8} "
                  f"{f(moved, '{:.0f}') if moved is not None else '-':>5}")
        pc = [runs[("pooled", nbig, r)]["p99"] / runs[("per-client", nbig, r)]["p99"]
              for r in range(rounds) if ("pooled", nbig, r) in runs and ("per-client", nbig, r) in runs
              and runs[("pooled", nbig, r)].get("p99") and runs[("per-client", nbig, r)].get("p99")]
        if pc:
            v = med(pc)
            ok = v <= 1.5
            verdicts.append(ok)
            print(f"  [{'PASS' if ok else 'FAIL'}] pooled small-get p99 / per-client's: {v:.2f} <= 1.5 "
                  f"(median of per-round ratios: {', '.join(f'{x:.2f}' for x in pc)})")
        other = []
        for path in paths:
            for r in range(rounds):
                m = runs.get((path, nbig, r))
                if not m:
                    continue
                for k in ("slow_clients_closed", "memory_clients_closed", "memory_pauses"):
                    if m.get(k):
                        other.append(f"{path} round {r + 1}: {k} {m[k]:.0f}")
                if m.get("misses"):
                    other.append(f"{path} round {r + 1}: {m['misses']} small-get misses")
                if m.get("errors"):
                    other.append(f"{path} round {r + 1}: client errors {m['errors']}")
        for line in other:
            print("  " + line)
    print()
    print("p50/p99/p99.9: small gets' round trips (all 8 clients of a run pooled), median over rounds;")
    print("max: over all rounds; p99/pc: median over rounds of p99 / per-client's p99 of the same round;")
    print("gets/s: small gets answered per second (all 8), median; big MB/s: 10^6 bytes/s the big")
    print("client read in the run, median; big/pc: its per-round ratio to per-client's, median;")
    print("answers: whole big answers (all rounds); bad: answers whose length+CRC-32 differ from")
    print("direct's; disc: connections closed on the clients (big + small, all rounds); peak RSS:")
    print("the proxy's VmHWM (reset before each run), max over rounds; buf hw: high-water of")
    print("slabtap_buffer_bytes (/metrics polled every 20 ms), max over rounds; moved:")
    print("clients_moved_big_answers, summed over rounds.")
    return verdicts


# --------------------------------------------------------------------------- main

def find_slabtap(root):
    for d in ("build-rel", "build-bench", "build"):
        p = os.path.join(root, d, "slabtap")
        if os.access(p, os.X_OK):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10, help="seconds per run (10)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (3)")
    ap.add_argument("--big", default="50,20", help="values per big multiget, scenarios (50,20)")
    ap.add_argument("--paths", default=",".join(ALL_PATHS), help=",".join(ALL_PATHS))
    ap.add_argument("--slabtap", help="slabtap binary (default: build-rel/slabtap, ...)")
    ap.add_argument("--mbuf", type=int, default=0,
                    help="nutcracker -m (mbuf bytes; 0: its default, 16384)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--json", help="also write every run's figures to this file")
    ap.add_argument("--report-from", metavar="JSON",
                    help="print the tables of a file written by --json, run nothing")
    ap.add_argument("--strict", action="store_true", help="exit 3 when the target is missed")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [p for p in a.paths.split(",") if p]
    for p in paths:
        if p not in ALL_PATHS:
            die(f"unknown path {p}")
    scenarios = [int(x) for x in a.big.split(",") if x]
    if a.report_from:
        d = json.load(open(a.report_from))
        runs = {(r["path"], r["nbig"], r["round"]): r for r in d["runs"]}
        report(runs, d["paths"], d["scenarios"], d["rounds"], d["seconds"])
        return 0
    nmax = max(scenarios)
    need = ["memcached"] + (["nutcracker"] if "twemproxy" in paths else [])
    for t in need:
        if not shutil.which(t):
            die(f"{t} not found (apt-get install memcached nutcracker)")
    slabtap = a.slabtap or find_slabtap(root)
    if any(p in SLABTAP_PATHS for p in paths) and not slabtap:
        die("no slabtap binary: build one (cmake ... -DCMAKE_BUILD_TYPE=Release) or pass --slabtap")

    tmp = tempfile.mkdtemp(prefix="hol_bench.")
    procs = Procs(tmp)

    def on_signal(sig, _frm):
        raise SystemExit(128 + sig)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    try:
        if slabtap:
            shutil.copy(slabtap, os.path.join(tmp, "slabtap"))   # a rebuild during the run changes nothing
            sl_bin = os.path.join(tmp, "slabtap")
        user = ["-u", "root"] if os.getuid() == 0 else []
        mc, mc_port, _, mc_argv = procs.start_listener(
            "memcached", ["memcached", *user, "-m", "1024", "-I", "2m", "-l", H, "-p", "@PORT@"])
        wait_ping(mc_port)
        info = {"direct": {"port": mc_port, "mc_pid": mc.pid}}
        cmdlines = {"memcached": mc_argv}
        for path in paths:
            if path not in SLABTAP_PATHS:
                continue
            pr, port, http, argv = procs.start_listener(
                path, [sl_bin, "proxy", "--listen", f"{H}:@PORT@", "--upstream", f"{H}:{mc_port}",
                       "--db", os.path.join(tmp, f"{path}.db"), "--http", f"{H}:@PORT2@",
                       *SLABTAP_PATHS[path]])
            wait_ping(port)
            info[path] = {"port": port, "pid": pr.pid, "http": http, "mc_pid": mc.pid}
            cmdlines[path] = argv
        if "twemproxy" in paths:
            conf = os.path.join(tmp, "nutcracker.yml")
            tpl = (f"bench:\n  listen: {H}:@PORT@\n  hash: fnv1a_64\n  distribution: ketama\n"
                   f"  timeout: 10000\n  preconnect: true\n  auto_eject_hosts: false\n"
                   f"  server_connections: 1\n  servers:\n   - {H}:{mc_port}:1\n")
            extra = ["-m", str(a.mbuf)] if a.mbuf else []
            pr, port, _, argv = procs.start_listener(
                "twemproxy", ["nutcracker", "-c", conf, "-s", "@PORT2@", "-a", H,
                              "-o", os.path.join(tmp, "twemproxy.log"), *extra],
                conf_tpl=tpl, conf_path=conf)
            wait_ping(port)
            info["twemproxy"] = {"port": port, "pid": pr.pid, "mc_pid": mc.pid}
            cmdlines["twemproxy"] = argv
        info = {p: info[p] for p in paths}

        preload(mc_port, nmax)
        refs = {}
        for nbig in scenarios:
            ans = fetch_answer(mc_port, multiget_cmd(nbig))[0]
            refs[nbig] = {"len": len(ans), "crc": zlib.crc32(ans),
                          "sha": hashlib.sha256(ans).hexdigest()}

        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip() or "?"
        print(f"hol_bench: {os.cpu_count()} cores, {os.uname().sysname} {os.uname().release}; "
              f"{subprocess.run(['memcached', '-V'], capture_output=True, text=True).stdout.strip()}")
        print(f"  command: {' '.join([os.path.relpath(sys.argv[0], root) if sys.argv[0].startswith(root) else sys.argv[0], *sys.argv[1:]])}")
        if slabtap:
            print(f"  slabtap: {slabtap} (tree at {rev})")
        for name, argv in cmdlines.items():
            shown = [os.path.basename(x) if x == sl_bin else x.replace(tmp, "$TMP") for x in argv]
            print(f"  {name}: {' '.join(shown)}")
        print(f"  small: {SMALL_CLIENTS} clients, get of 1 of {SMALL_KEYS} keys ({SMALL_SIZE}-byte "
              f"values), closed loop; big: 1 client, multiget of N x {BIG_SIZE}-byte values, "
              f"{READ_CHUNK // 1024} KB per recv")
        for nbig in scenarios:
            print(f"  reference answer {nbig} x 1 MB (direct): {refs[nbig]['len']} bytes, "
                  f"sha256 {refs[nbig]['sha'][:16]}...")
        print(f"  rounds {a.rounds} x scenarios {scenarios} x paths {paths} x {a.seconds:g} s")
        print(flush=True)

        runs = {}
        t0 = time.monotonic()
        for r in range(a.rounds):
            for nbig in scenarios:
                order = paths[r % len(paths):] + paths[:r % len(paths)]
                for path in order:
                    m = one_run(path, info[path], nbig, refs[nbig], a.seconds, procs)
                    runs[(path, nbig, r)] = m
                    m.update(nbig=nbig, round=r)
                    if a.json:
                        with open(a.json, "w") as fj:
                            json.dump({"paths": paths, "scenarios": scenarios, "rounds": a.rounds,
                                       "seconds": a.seconds, "runs": list(runs.values())}, fj)
                    print(f"round {r + 1} {nbig:>2}x1MB {path:<11} n={m.get('n', 0):>6} "
                          f"p50 {f(m.get('p50'))} p99 {f(m.get('p99'))} p99.9 {f(m.get('p999'))} "
                          f"max {f(m.get('max'), '{:.1f}')} ms | big {f(m.get('mbs'), '{:.0f}')} MB/s "
                          f"answers {m.get('answers', 0)} bad {m.get('bad', 0)} "
                          f"disc {m.get('big_disc', 0)}/{m.get('small_disc', 0)} "
                          f"first {f(m.get('first_ms'), '{:.0f}')} later {f(m.get('later_ms'), '{:.0f}')} ms"
                          + (f" | RSS {m['hwm_kb'] / 1024:.1f} MB" if m.get("hwm_kb") else "")
                          + (f" buf {m['buf_hw'] / 1048576:.1f} MiB moved "
                             f"{m['clients_moved_big_answers']:.0f}" if "buf_hw" in m else "")
                          + (f" ERR {m['errors']}" if m.get("errors") else ""), flush=True)
        elapsed = time.monotonic() - t0

        # bytes: the first two answers of a fresh connection, SHA-256 against direct's
        print()
        for nbig in scenarios:
            for path in paths:
                if path == "direct":
                    continue
                try:
                    got = fetch_answer(info[path]["port"], multiget_cmd(nbig), times=2)
                    shas = [hashlib.sha256(x).hexdigest() for x in got]
                    same = all(s == refs[nbig]["sha"] for s in shas)
                    print(f"bytes {nbig}x1MB via {path:<11}: answers 1 and 2 of a new connection "
                          f"{'== direct (sha256)' if same else 'DIFFER from direct'}"
                          f" [{', '.join(s[:12] for s in shas)}]")
                except OSError as e:
                    print(f"bytes {nbig}x1MB via {path:<11}: FAILED ({e})")
        verdicts = report(runs, paths, scenarios, a.rounds, a.seconds)
        print(f"\nmeasured in {elapsed:.0f} s")
        if a.strict and not all(verdicts):
            return 3
        return 0
    finally:
        procs.stop()
        if a.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
