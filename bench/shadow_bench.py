#!/usr/bin/python3
"""shadow_bench: what shadow memcacheds cost the proxy (issue 23, docs/shadow.md).

For each configuration -- memcached direct, the proxy with 0 shadows, 1 and
3 full-size shadows, 1 and 3 shadows sampled 1/8 -- a fresh primary
memcached (-m 64) and a fresh `slabtap proxy --db FILE` (SQLite) in front of
it, then two loads of `slabtap load` (a get-or-set Zipf workload, 4
connections x pipeline 32):

  throughput  closed loop, as fast as answers come: ops/s, and the proxy's
              CPU per request (utime+stime of /proc/PID/stat over the load,
              all threads, the recorder's included, once it is idle again,
              divided by the requests the client sent: gets + fills)
  latency     open loop (--rate), the same rate for every configuration:
              the get p99 and its difference to memcached direct at that rate
  memory      the proxy's VmRSS and VmHWM after the loads, and each shadow
              memcached's VmRSS

One invocation prints one markdown table (and the command line); the
figures depend on the machine (2 shared cores here): they are printed,
never asserted.

  /usr/bin/python3 bench/shadow_bench.py [--slabtap build/slabtap]
      [--ops 300000] [--rate 20000] [--seconds 5] [--only NAME,...]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "integration"))

SHADOWS3 = ["-f 1.08", "-o slab_automove=2", "-f 1.15"]
CONFIGS = [
    ("direct", None, []),
    ("proxy, 0 shadows", [], []),
    ("1 shadow", ["-f 1.08"], []),
    ("3 shadows", SHADOWS3, []),
    ("1 shadow, 1/8", ["1/8 -f 1.08"], []),
    ("3 shadows, 1/8", ["1/8 " + s for s in SHADOWS3], []),
]

WORKLOAD = """connections 4
pipeline 32
seed 1
getset %d key=b:{zipf:200000:1.0:6} size=uniform(100,1000)
"""


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


def cpu_settled(pid, window=0.3, limit=10.0):
    """The CPU ticks of pid once it used at most one tick in window seconds
    (the recorder may still be writing after the last answer)."""
    end = time.monotonic() + limit
    last = cpu_ticks(pid)
    while time.monotonic() < end:
        time.sleep(window)
        now = cpu_ticks(pid)
        if now - last <= 1:
            return now
        last = now
    return last


def status_kb(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_load(slabtap, target, wl, extra=()):
    p = subprocess.run([slabtap, "load", "--target", target, "--workload", wl, "-q"] + list(extra),
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit("slabtap load failed (%d): %s %s" % (p.returncode, p.stdout[-1500:],
                                                            p.stderr[-1500:]))
    out = p.stdout
    ops = float(re.search(r"^ops/s:\s+([\d.]+)", out, re.M).group(1))
    m = re.search(r"^reads:\s+(\d+) gets, (\d+) hits, (\d+) misses, .*?(\d+) fills", out, re.M)
    gets, hits, misses, fills = (int(x) for x in m.groups())
    p50 = p99 = None
    m = re.search(r"^latency get:\s+p50 ([\d.]+) us\s+p99 ([\d.]+) us", out, re.M)
    if m:
        p50, p99 = float(m.group(1)), float(m.group(2))
    errors = int(re.search(r"^errors:\s+(\d+)", out, re.M).group(1))
    return {"ops_s": ops, "gets": gets, "hits": hits, "fills": fills, "p50": p50, "p99": p99,
            "errors": errors}


def measure(a, mctest, work, wl_tp, wl_lat, name, shadows, extra, tag):
    """One configuration once: a fresh memcached (and proxy), both loads."""
    mc = mctest.Memcached(work, extra=["-m", "64"], name="mc")
    px = None
    try:
        if shadows is None:
            target, pid = "127.0.0.1:%d" % mc.port, None
        else:
            args = []
            for s in shadows:
                args += ["--shadow", s]
            px = mctest.Proxy(work, mc.port, db=os.path.join(work, "bench-%s.db" % tag),
                              http=True, extra=args + ["--shadow-queue", "64m"] + list(extra),
                              name="proxy")
            target, pid = "127.0.0.1:%d" % px.port, px.pid
            if shadows:
                mctest.wait_for(lambda: (lambda sh: len(sh) == len(shadows) and all(
                    x["state"] == "up" for x in sh))(mctest.health(px.http_port).get(
                        "shadows", [])), 30, what="shadows up")
        t0 = cpu_settled(pid) if pid else 0
        tp = run_load(a.slabtap, target, wl_tp)
        t1 = cpu_settled(pid) if pid else 0
        lat = run_load(a.slabtap, target, wl_lat, ["--rate", str(a.rate)])
        row = {"ops_s": tp["ops_s"], "p50": lat["p50"], "p99": lat["p99"],
               "errors": tp["errors"] + lat["errors"]}
        if pid:
            hz = os.sysconf("SC_CLK_TCK")
            row["cpu_us"] = (t1 - t0) / hz * 1e6 / (tp["gets"] + tp["fills"])
            row["rss"] = status_kb(pid, "VmRSS")
            row["hwm"] = status_kb(pid, "VmHWM")
            row["shadow_rss"] = [status_kb(c, "VmRSS") for c, _ in sorted(mctest.children(pid))]
            if shadows:
                sh = mctest.health(px.http_port).get("shadows", [])
                row["dropped"] = sum(x["dropped"] for x in sh)
        return row
    finally:
        if px:
            px.stop()
            px.kill_group()  # its shadows, should it not have stopped them
        mc.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--slabtap", default=os.environ.get("SLABTAP") or
                    os.path.join(os.path.dirname(HERE), "build", "slabtap"))
    ap.add_argument("--ops", type=int, default=200000)
    ap.add_argument("--rate", type=int, default=4000)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    a.slabtap = os.path.abspath(a.slabtap)
    os.environ["SLABTAP"] = a.slabtap
    import mctest  # after SLABTAP is set

    work = tempfile.mkdtemp(prefix="shadow-bench-")
    wl_tp = os.path.join(work, "tp.wl")
    wl_lat = os.path.join(work, "lat.wl")
    with open(wl_tp, "w") as f:
        f.write(WORKLOAD % a.ops)
    with open(wl_lat, "w") as f:
        f.write(WORKLOAD % int(a.rate * a.seconds))
    only = [s.strip() for s in a.only.split(",") if s.strip()]
    configs = [c for c in CONFIGS if not only or c[0] in only or c[0] == "direct"]
    runs = {name: [] for name, _, _ in configs}
    for rnd in range(a.repeat):
        direct = {}
        for name, shadows, extra in configs:
            row = measure(a, mctest, work, wl_tp, wl_lat, name, shadows, extra,
                          "%d-%d" % (rnd, len(runs[name])))
            if name == "direct":
                direct = row
            elif row["p99"] is not None and direct["p99"] is not None:
                row["added"] = row["p99"] - direct["p99"]
                row["added50"] = row["p50"] - direct["p50"]
            runs[name].append(row)
            print("# round %d, %s: %s" % (rnd + 1, name, row), file=sys.stderr)
    rows = []
    for name, _, _ in configs:
        rs = runs[name]
        row = {"name": name}
        for k in ("ops_s", "p50", "p99", "added50", "added", "cpu_us", "rss", "hwm"):
            vals = [r[k] for r in rs if r.get(k) is not None]
            row[k] = statistics.median(vals) if vals else None
        if rs[0].get("shadow_rss"):
            row["shadow_rss"] = [statistics.median(r["shadow_rss"][i] for r in rs
                                                   if len(r["shadow_rss"]) > i)
                                 for i in range(len(rs[0]["shadow_rss"]))]
        row["dropped"] = sum(r["dropped"] for r in rs) if "dropped" in rs[0] else None
        row["errors"] = sum(r["errors"] for r in rs)
        rows.append(row)

    print("`/usr/bin/python3 bench/shadow_bench.py --ops %d --rate %d --seconds %g --repeat %d` "
          "(primary memcached -m 64; shadows %s, sampled: `1/8 ` before each; Zipf 1.0 "
          "get-or-set over 200,000 keys, 100..1,000 B; 4 connections x pipeline 32; "
          "medians of %d rounds)\n" % (a.ops, a.rate, a.seconds, a.repeat,
                                       ", ".join("`%s`" % s for s in SHADOWS3), a.repeat))
    print("| configuration | ops/s (closed loop) | proxy CPU per request | get p50 / p99 at %d/s "
          "| added vs direct: p50 / p99 | proxy RSS (peak) | shadow memcacheds' RSS | dropped "
          "| errors |" % a.rate)
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %d |" % (
            r["name"], "{:,.0f}".format(r["ops_s"]),
            ("%.1f us" % r["cpu_us"]) if r["cpu_us"] is not None else "",
            ("%.0f / %.0f us" % (r["p50"], r["p99"])) if r["p99"] is not None else "",
            ("%+.0f / %+.0f us" % (r["added50"], r["added"])) if r["added"] is not None else "",
            ("%.1f MB (%.1f)" % (r["rss"] / 1024, r["hwm"] / 1024)) if r["rss"] else "",
            " + ".join("%.1f MB" % (k / 1024) for k in r.get("shadow_rss", [])),
            "" if r["dropped"] is None else r["dropped"], r["errors"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
