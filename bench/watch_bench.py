#!/usr/bin/python3
"""bench/watch_bench.py: what tapping a memcached costs it (issue 22), one run.

A) memcached's throughput and CPU per op (its own `stats` rusage_user +
   rusage_system deltas) with no tap, with `slabtap watch` attached, and
   through `slabtap proxy`, same loads, a fresh memcached each:
     memcaslap -T 1 -c 16 -t SECONDS -X 100 (90 % get / 10 % set, 100 B),
     as bench/compare_proxies.sh runs it;
     pipelined sets: N sets of 100-byte values on one connection, batches
     of 500 answered sets (this script's own client).
   The tap's own CPU per op (utime+stime from /proc) is printed beside it.
B) the set rate at which memcached starts dropping watch lines, default
   buffers and raised ones (-o watcher_logbuf_size=, worker_logbuf_size=):
   noreply sets paced at each rate for ~2 s with `slabtap watch` attached;
   drops from `stats` (log_worker_dropped, log_watcher_skipped deltas) and
   what slabtap counted (its /health: writes recorded, memcached_dropped,
   which includes the skipped=N lines).
C) `slabtap snapshot` of ITEMS items: wall time per million items, and
   memcached's get latency (p50/p99/max, one connection, one get at a time,
   a separate process) during the dump vs the same client with no dump.
   Also a raw metadump read by this script (memcached's side alone).

   bench/watch_bench.py                 # the whole run (~3 min)
   bench/watch_bench.py --smoke         # small sizes, < 60 s
   bench/watch_bench.py --items 10000000 --mc-mem 4096
   SLABTAP=build/slabtap (default: build/slabtap of this tree, Release)

Prints one table per part. Not a test (not in ctest): figures, no verdicts.
"""
import argparse
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("SLABTAP", os.path.join(ROOT, "build", "slabtap"))
os.environ.setdefault("SLABTAP_SRC", ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import mctest  # noqa: E402
from mctest import HOST, Memcached, Process, Proxy, Workdir, mc_stats, reserve_port  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def mc_cpu(port):
    st = mc_stats(port)
    return float(st["rusage_user"]) + float(st["rusage_system"]), st


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def settle(port, timeout=10.0):
    """Waits until memcached's logger has handed out (or dropped) every line
    its workers wrote: log_watcher_sent + log_watcher_skipped stops moving."""
    last, deadline = None, time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = mc_stats(port)
        now = (st.get("log_worker_written"), st.get("log_watcher_sent"),
               st.get("log_watcher_skipped"))
        if now == last:
            return st
        last = now
        time.sleep(0.2)
    return mc_stats(port)


def drain_until(s, want_lines, suffix=b"\r\n"):
    """Reads until want_lines lines arrived; returns their text."""
    buf = b""
    while buf.count(suffix) < want_lines:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk
    return buf


# ----------------------------------------------------------------- taps

class Watch(Process):
    def __init__(self, wd, mc_port, name="watch"):
        env = mctest.slabtap_env()
        env.setdefault("STATE_DIRECTORY", wd)
        admin = reserve_port()
        self.http_port = admin.port
        self.db = os.path.join(wd, name + ".db")
        argv = [mctest.SLABTAP, "watch", "--memcached", "%s:%d" % (HOST, mc_port), "--db", self.db,
                "--http", "%s:%d" % (HOST, admin.port), "--keys", "prefix", "-q"]
        err = self._try_start(argv, os.path.join(wd, name + ".log"), [admin],
                              lambda: self._ready(mc_port), env=env)
        if err is not None:
            raise RuntimeError("slabtap watch did not start: " + err[-2000:])

    def _ready(self, mc_port):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            if int(mc_stats(mc_port).get("log_watchers", 0)) >= 1:
                return True
            time.sleep(0.05)
        return False

    def health(self):
        try:
            status, _, body = mctest.http_request(self.http_port, "GET", "/health")
            return json.loads(body) if status == 200 else {}
        except OSError:
            return {}

    def stop(self):
        self.signal(signal.SIGTERM)
        rc = self.wait(60)
        self.kill_hard()
        return rc


def start_tap(kind, wd, mc):
    """(port the load goes to, the tap process or None)"""
    if kind == "none":
        return mc.port, None
    if kind == "watch":
        return mc.port, Watch(wd, mc.port)
    px = Proxy(wd, mc.port, keys="prefix", extra=("-q",))
    return px.port, px


# ----------------------------------------------------------------- loads

def memcaslap(port, seconds):
    out = subprocess.run(["memcaslap", "-s", "%s:%d" % (HOST, port), "-T", "1", "-c", "16",
                          "-t", "%ds" % seconds, "-X", "100"],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    m = re.findall(r"Run time:\s*([\d.]+)s\s+Ops:\s*(\d+)\s+TPS:\s*(\d+)", out)
    if not m:
        raise RuntimeError("memcaslap printed no totals:\n" + out[-2000:])
    secs, ops, _ = m[-1]
    return int(ops), float(secs)


def set_batches(n, value_len, batch, prefix=b"k", noreply=False):
    v = b"v" * value_len
    tail = b" noreply\r\n" if noreply else b"\r\n"
    out = []
    for start in range(0, n, batch):
        out.append(b"".join(b"set %s:%d 0 0 %d%s%s\r\n" % (prefix, i, value_len, tail, v)
                            for i in range(start, min(n, start + batch))))
    return out


def pipelined_sets(port, n, batches=None, batch=500):
    batches = batches or set_batches(n, 100, batch)
    s = socket.create_connection((HOST, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.monotonic()
    sent = 0
    for b in batches:
        s.sendall(b)
        k = min(batch, n - sent)
        sent += k
        got = drain_until(s, k)
        if got.count(b"STORED\r\n") != k:
            raise RuntimeError("not every set was stored: " + got[:200].decode(errors="replace"))
    el = time.monotonic() - t0
    s.close()
    return n, el


def paced_sets(port, rate, seconds, max_n, batch=100, prefix=b"r"):
    """noreply sets at `rate`/s for `seconds` (rate 0: max_n sets unpaced),
    in batches of `batch`; then mn to know memcached read them all. Returns
    (sent, elapsed)."""
    n = int(rate * seconds) if rate else max_n
    batches = set_batches(n, 100, batch, prefix=prefix, noreply=True)
    s = socket.create_connection((HOST, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.monotonic()
    for i, b in enumerate(batches):
        due = t0 + i * batch / rate if rate else t0
        now = time.monotonic()
        if due > now:
            time.sleep(due - now)
        s.sendall(b)
    s.sendall(b"mn\r\n")
    drain_until(s, 1)
    el = time.monotonic() - t0
    s.close()
    return n, el


def load_items(port, n, value_len=100, conns=2):
    """n items k:0..n-1 with noreply sets, then mn; untimed preparation."""
    socks = [socket.create_connection((HOST, port)) for _ in range(conns)]
    v = b"v" * value_len
    step = 5000
    for start in range(0, n, step):
        s = socks[(start // step) % conns]
        s.sendall(b"".join(b"set k:%d 0 0 %d noreply\r\n%s\r\n" % (i, value_len, v)
                           for i in range(start, min(n, start + step))))
    for s in socks:
        s.sendall(b"mn\r\n")
        drain_until(s, 1)
        s.close()


# ----------------------------------------------------------------- latency client

def latclient_main(port, nkeys):
    """A separate process: gets of random loaded keys, one at a time, until
    SIGTERM; prints 'n p50_us p99_us p999_us max_us'."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    s = socket.create_connection((HOST, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rnd = random.Random(7)
    lat = []
    print("ready", flush=True)
    while not stop:
        req = b"get k:%d\r\n" % rnd.randrange(nkeys)
        t0 = time.perf_counter_ns()
        s.sendall(req)
        buf = b""
        while not buf.endswith(b"END\r\n"):
            buf += s.recv(65536)
        lat.append(time.perf_counter_ns() - t0)
    lat.sort()

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] / 1000.0 if lat else 0.0
    print("%d %.1f %.1f %.1f %.1f" % (len(lat), pct(0.5), pct(0.99), pct(0.999),
                                       lat[-1] / 1000.0 if lat else 0.0), flush=True)


class LatClient:
    def __init__(self, port, nkeys):
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "latclient",
                                   str(port), str(nkeys)], stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline().strip() == "ready"

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        out, _ = self.p.communicate(timeout=30)
        n, p50, p99, p999, mx = out.split()
        return dict(n=int(n), p50=float(p50), p99=float(p99), p999=float(p999), max=float(mx))


def raw_metadump(port):
    """lru_crawler metadump all read to END; (items, seconds)."""
    s = socket.create_connection((HOST, port))
    t0 = time.monotonic()
    s.sendall(b"lru_crawler metadump all\r\n")
    items, tail = 0, b""
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise RuntimeError("metadump: connection closed")
        items += chunk.count(b"\n")
        tail = (tail + chunk)[-5:]
        if tail == b"END\r\n":
            break
    el = time.monotonic() - t0
    s.close()
    return items - 1, el


# ----------------------------------------------------------------- parts

def fmt_row(cols, widths):
    return "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in
                     enumerate(zip(cols, widths)))


def part_a(args, wd):
    print("\nA) memcached with no tap, with `slabtap watch`, through `slabtap proxy` "
          "(memcached -t 4 -m 1024, a fresh one per row)")
    widths = [30, 8, 10, 10, 12, 12, 10]
    print(fmt_row(["load / path", "ops", "seconds", "ops/s", "mc us/op", "tap us/op",
                   "dropped"], widths))
    batches = set_batches(args.sets, 100, 500)
    for load in ("memcaslap", "sets"):
        for kind in ("none", "watch", "proxy"):
            mc = Memcached(wd, extra=["-m", "1024", "-t", "4"])
            port, tap = start_tap(kind, wd, mc)
            try:
                cpu0, st0 = mc_cpu(mc.port)
                tcpu0 = proc_cpu(tap.p.pid) if tap else 0.0
                if load == "memcaslap":
                    ops, el = memcaslap(port, args.seconds)
                else:
                    ops, el = pipelined_sets(port, args.sets, batches)
                st1 = settle(mc.port)
                cpu1 = float(st1["rusage_user"]) + float(st1["rusage_system"])
                time.sleep(0.3)
                tcpu1 = proc_cpu(tap.p.pid) if tap else 0.0
                dropped = "-"
                if kind == "watch":
                    dropped = ((int(st1["log_worker_dropped"]) - int(st0["log_worker_dropped"])) +
                               (int(st1["log_watcher_skipped"]) - int(st0["log_watcher_skipped"])))
                print(fmt_row(["%s / %s" % (load, kind), ops, "%.2f" % el, "%.0f" % (ops / el),
                               "%.2f" % ((cpu1 - cpu0) / ops * 1e6),
                               "%.2f" % ((tcpu1 - tcpu0) / ops * 1e6) if tap else "-",
                               dropped], widths), flush=True)
            finally:
                if tap:
                    tap.stop()
                mc.stop()


def quiet_health(w, timeout=15.0):
    """slabtap watch's /health watcher counters once writes + memcached_dropped
    stop moving (what an earlier row sent is all counted)."""
    last, deadline = None, time.monotonic() + timeout
    while True:
        h = w.health().get("watcher", {})
        now = (h.get("writes", 0), h.get("memcached_dropped", 0))
        if now == last or time.monotonic() > deadline:
            return h
        last = now
        time.sleep(0.5)


def part_b(args, wd):
    print("\nB) the set rate at which memcached drops watch lines (`slabtap watch` attached; "
          "noreply sets of 100 B, paced, ~%g s each)" % args.rate_seconds)
    widths = [26, 9, 9, 9, 9, 9, 9, 9, 9, 9]
    print(fmt_row(["buffers", "rate", "achieved", "sets", "worker_dr", "watcher_sk", "mc_sent",
                   "dropped%", "tap_rows", "tap_lost"], widths))
    configs = [("default (64k/256k)", [])] if args.buffers != "raised" else []
    configs += [] if args.buffers == "default" else [
               ("raised (%s/%s)" % (args.worker_kb, args.watcher_kb),
                ["-o", "worker_logbuf_size=%d,watcher_logbuf_size=%d" % (args.worker_kb,
                                                                         args.watcher_kb)])]
    for name, extra in configs:
        mc = Memcached(wd, extra=["-m", "1024", "-t", "4"] + extra)
        w = Watch(wd, mc.port, name="watch-rate")
        try:
            for i, rate in enumerate(args.rates):
                st0 = settle(mc.port)
                h0 = quiet_health(w)
                n, el = paced_sets(mc.port, rate, args.rate_seconds, args.sets, prefix=b"r%d" % i)
                st1 = settle(mc.port)
                # slabtap counts memcached's drops from its stats poll: wait
                # until rows + lost cover what was sent (or 15 s)
                deadline = time.monotonic() + 15
                while True:
                    h1 = w.health().get("watcher", {})
                    seen = (h1.get("writes", 0) - h0.get("writes", 0) +
                            h1.get("memcached_dropped", 0) - h0.get("memcached_dropped", 0))
                    if seen >= n or time.monotonic() > deadline:
                        break
                    time.sleep(0.2)
                wd_ = int(st1["log_worker_dropped"]) - int(st0["log_worker_dropped"])
                ws = int(st1["log_watcher_skipped"]) - int(st0["log_watcher_skipped"])
                sent = int(st1["log_watcher_sent"]) - int(st0["log_watcher_sent"])
                rows = h1.get("writes", 0) - h0.get("writes", 0)
                lost = h1.get("memcached_dropped", 0) - h0.get("memcached_dropped", 0)
                print(fmt_row([name, rate or "max", "%.0f" % (n / el), n, wd_, ws, sent,
                               "%.1f" % (100.0 * (wd_ + ws) / n), rows, lost], widths), flush=True)
        finally:
            w.stop()
            mc.stop()


def part_d(args, wd):
    print("\nD) drops after idle: 1 s of sets at %d/s, after an idle spell or right after the "
          "previous one (`slabtap watch` attached, default buffers)" % args.burst_rate)
    widths = [22, 9, 9, 11, 9, 9]
    print(fmt_row(["before", "sets", "achieved", "worker_dr", "dropped%", "tap_lost"], widths))
    mc = Memcached(wd, extra=["-m", "1024", "-t", "4"])
    w = Watch(wd, mc.port, name="watch-burst")
    try:
        for i, idle in enumerate([3.0, 0.0, 3.0, 0.0, 0.3, 1.0, 10.0]):
            h0 = quiet_health(w) if idle else w.health().get("watcher", {})
            time.sleep(idle)
            st0 = mc_stats(mc.port)
            n, el = paced_sets(mc.port, args.burst_rate, 1.0, 0, prefix=b"d%d" % i)
            st1 = settle(mc.port)
            h1 = quiet_health(w)
            wd_ = int(st1["log_worker_dropped"]) - int(st0["log_worker_dropped"])
            lost = h1.get("memcached_dropped", 0) - h0.get("memcached_dropped", 0)
            print(fmt_row(["%g s idle" % idle if idle else "no pause (~1 s)", n, "%.0f" % (n / el),
                           wd_, "%.1f" % (100.0 * wd_ / n), lost], widths), flush=True)
    finally:
        w.stop()
        mc.stop()


def part_c(args, wd):
    n = args.items
    print("\nC) `slabtap snapshot` of %d items (100-byte values, memcached -m %d); get latency "
          "from one client, one get at a time (us)" % (n, args.mc_mem))
    mc = Memcached(wd, extra=["-m", str(args.mc_mem), "-t", "4"])
    try:
        t0 = time.monotonic()
        load_items(mc.port, n)
        resident = int(mc_stats(mc.port)["curr_items"])
        print("loaded %d items in %.1f s (curr_items %d)" % (n, time.monotonic() - t0, resident))
        widths = [34, 9, 10, 12, 9, 9, 9, 9]
        print(fmt_row(["what", "items", "seconds", "s/M items", "gets", "p50", "p99", "max"],
                      widths))

        lc = LatClient(mc.port, n)
        time.sleep(args.idle_seconds)
        lat = lc.stop()
        print(fmt_row(["no dump (%gs)" % args.idle_seconds, "-", "-", "-", lat["n"], lat["p50"],
                       lat["p99"], lat["max"]], widths), flush=True)

        lc = LatClient(mc.port, n)
        items, el = raw_metadump(mc.port)
        lat = lc.stop()
        print(fmt_row(["raw metadump read (this script)", items, "%.2f" % el,
                       "%.2f" % (el / (items / 1e6)), lat["n"], lat["p50"], lat["p99"],
                       lat["max"]], widths), flush=True)

        db = os.path.join(wd, "snap.db")
        lc = LatClient(mc.port, n)
        t0 = time.monotonic()
        r = subprocess.run([mctest.SLABTAP, "snapshot", "--memcached", "%s:%d" % (HOST, mc.port),
                            "--db", db, "--http", "off", "--keys", "prefix", "-q"],
                           capture_output=True, text=True, timeout=3600, env=mctest.slabtap_env())
        el = time.monotonic() - t0
        lat = lc.stop()
        if r.returncode != 0:
            raise RuntimeError("slabtap snapshot failed: " + r.stderr[-2000:])
        rec = mctest.db_rows(db, "SELECT items, complete FROM snapshots")
        items = rec[0]["items"] if rec else -1
        print(fmt_row(["slabtap snapshot (SQLite)", items, "%.2f" % el,
                       "%.2f" % (el / (max(items, 1) / 1e6)), lat["n"], lat["p50"], lat["p99"],
                       lat["max"]], widths), flush=True)
        if rec and not rec[0]["complete"]:
            print("  (the snapshot is marked incomplete)")
        print("  db: %.1f MB" % (os.path.getsize(db) / 1e6))
    finally:
        mc.stop()


def main(argv):
    if argv[1:2] == ["latclient"]:
        latclient_main(int(argv[2]), int(argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="small sizes, under a minute")
    ap.add_argument("--parts", default="abcd")
    ap.add_argument("--burst-rate", type=int, default=50000, help="set rate of D")
    ap.add_argument("--seconds", type=int, default=4, help="memcaslap seconds")
    ap.add_argument("--sets", type=int, default=300000, help="pipelined sets in A")
    ap.add_argument("--rates", default="50000,100000,150000,200000,300000,0",
                    help="set rates of B (0: as fast as this client goes)")
    ap.add_argument("--rate-seconds", type=float, default=2.0)
    ap.add_argument("--buffers", choices=("both", "default", "raised"), default="both")
    ap.add_argument("--worker-kb", type=int, default=1024, help="raised worker_logbuf_size (KB)")
    ap.add_argument("--watcher-kb", type=int, default=8192, help="raised watcher_logbuf_size (KB)")
    ap.add_argument("--items", type=int, default=1000000)
    ap.add_argument("--mc-mem", type=int, default=1024)
    ap.add_argument("--idle-seconds", type=float, default=3.0)
    a = ap.parse_args(argv[1:])
    if a.smoke:
        a.seconds, a.sets, a.rates, a.rate_seconds = 1, 30000, "50000,0", 0.5
        a.items, a.idle_seconds = 50000, 0.5
    a.rates = [int(x) for x in a.rates.split(",")]
    if not os.access(mctest.SLABTAP, os.X_OK):
        sys.exit("watch_bench: no slabtap at %s (build it, or SLABTAP=...)" % mctest.SLABTAP)
    mc_version = subprocess.run(["memcached", "-V"], capture_output=True, text=True).stdout.strip()
    print("watch_bench: %s, slabtap %s, %d cores, load average %s at start" %
          (mc_version, mctest.SLABTAP, os.cpu_count(), " ".join("%.2f" % x for x in os.getloadavg())))
    wd = Workdir("watch-bench-")
    try:
        if "a" in a.parts:
            part_a(a, wd.path)
        if "b" in a.parts:
            part_b(a, wd.path)
        if "c" in a.parts:
            part_c(a, wd.path)
        if "d" in a.parts:
            part_d(a, wd.path)
    finally:
        wd.cleanup()
    print("load average %s at the end" % " ".join("%.2f" % x for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
