#!/usr/bin/python3
"""snapshot_bench: what `slabtap snapshot` costs (docs/snapshot.md).

Starts a memcached on a free loopback port, writes N items to it directly
(values 0..400 bytes, keys "bench:NNNNNNNN"), then measures, one after the
other on the same resident set:
  1. memcached's own dump time: `lru_crawler metadump all` read by this
     script and thrown away (what the crawler costs the server, with a reader
     that never pushes back);
  2. `slabtap snapshot --keys prefix` into a fresh SQLite file: wall time,
     items per second, peak RSS (VmHWM from /proc), the line slabtap prints;
  3. memcached's get latency (one connection, sequential gets of resident
     keys) while nothing runs and while slabtap dumps: p50/p99/max.

usage: /usr/bin/python3 bench/snapshot_bench.py [--items N] [--slabtap PATH]
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import mctest  # noqa: E402


def fill(port, n, batch=5000):
    with mctest.connect(port, timeout=120) as s:
        for i in range(0, n, batch):
            m = min(batch, n - i)
            s.sendall(b"".join(b"set bench:%08d 0 0 %d noreply\r\n%s\r\n"
                               % (j, (j * 37) % 401, b"v" * ((j * 37) % 401))
                               for j in range(i, i + m)))
        s.sendall(b"version\r\n")
        mctest.recv_until(s, b"\r\n", timeout=300)


def raw_dump(port):
    t0 = time.monotonic()
    n = 0
    tail = b""
    with mctest.connect(port, timeout=300) as s:
        s.sendall(b"lru_crawler metadump all\r\n")
        while True:
            d = s.recv(1 << 20)
            if not d:
                break
            n += d.count(b"\n")
            tail = (tail + d)[-16:]
            if tail.endswith(b"END\r\n"):
                break
    return time.monotonic() - t0, n - 1


def vm_hwm_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None


def latencies(port, n_keys, stop, out):
    with mctest.connect(port, timeout=30) as s:
        i = 0
        while not stop.is_set():
            k = b"bench:%08d" % ((i * 7919) % n_keys)
            t0 = time.perf_counter_ns()
            s.sendall(b"get " + k + b"\r\n")
            mctest.recv_until(s, b"END\r\n", timeout=30)
            out.append(time.perf_counter_ns() - t0)
            i += 1


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p))] / 1000.0 if v else float("nan")


def lat_line(name, v):
    return "%-22s %7d gets  p50 %7.1f us  p99 %7.1f us  max %8.1f us" % (
        name, len(v), pct(v, 0.5), pct(v, 0.99), (max(v) / 1000.0 if v else 0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1000000)
    ap.add_argument("--slabtap", default=mctest.SLABTAP)
    a = ap.parse_args()
    wd = tempfile.mkdtemp(prefix="slabtap-snapbench-")
    mc = mctest.Memcached(wd, extra=["-m", str(max(64, a.items * 600 // (1 << 20) + 64))])
    try:
        t0 = time.monotonic()
        fill(mc.port, a.items)
        print("filled %d items in %.1f s" % (a.items, time.monotonic() - t0))
        st = mctest.mc_stats(mc.port)
        print("memcached %s: curr_items %s, bytes %s" % (st.get("version"), st.get("curr_items"),
                                                         st.get("bytes")))
        idle = []
        stop = threading.Event()
        th = threading.Thread(target=latencies, args=(mc.port, a.items, stop, idle))
        th.start()
        time.sleep(2)
        stop.set()
        th.join()

        secs, lines = raw_dump(mc.port)
        print("memcached's metadump, read and discarded: %d items in %.2f s (%.0f items/s)"
              % (lines, secs, lines / secs))

        db = os.path.join(wd, "snap.db")
        during = []
        stop = threading.Event()
        th = threading.Thread(target=latencies, args=(mc.port, a.items, stop, during))
        th.start()
        t0 = time.monotonic()
        p = subprocess.Popen([a.slabtap, "snapshot", "--memcached", "127.0.0.1:%d" % mc.port,
                              "--db", db, "--keys", "prefix"], stderr=subprocess.PIPE)
        peak = 0
        while p.poll() is None:
            peak = max(peak, vm_hwm_kb(p.pid) or 0)
            time.sleep(0.01)
        took = time.monotonic() - t0
        stop.set()
        th.join()
        err = p.stderr.read().decode()
        print("slabtap snapshot (exit %d): %.2f s wall, %.0f items/s end to end, peak RSS %d kB"
              % (p.returncode, took, a.items / took, peak))
        for line in err.splitlines():
            if "snapshot 1:" in line or "ERROR" in line:
                print("  " + line)
        print("  SQLite file: %d bytes" % os.path.getsize(db))
        print(lat_line("get latency idle:", idle))
        print(lat_line("get latency dumping:", during))
    finally:
        mc.kill_hard()
        subprocess.run(["rm", "-rf", wd])


if __name__ == "__main__":
    main()
