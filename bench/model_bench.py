#!/usr/bin/python3
"""model_bench: the capacity model against real memcached, per size
distribution. For each distribution: record a run through `slabtap proxy`
in front of a roomy memcached (-m 1024), then `slabtap model advise
--objective items --memory-limit M --verify`, which predicts and measures
(replaying the run into memcacheds started with -m M) items held by the
run's own settings (memcached's defaults), the best -f/-n and the best
slab_sizes ladder. Prints one table.

Distributions (all generated here, nothing downloaded):
  exp1_worst   experiments/exp1_worst.wl, 400,000 -> SCALE of its count
  exp2_worst   experiments/exp2_worst.wl, the same
  exp3_calcify experiments/exp3_calcify.wl: the tiny fill and the large
               rewrites, counts scaled, sleeps dropped
  bimodal      tests/data/bimodal.wl
  etc          Facebook's ETC pool as published by Atikoglu et al., "Workload
               Analysis of a Large-Scale Key-Value Store", SIGMETRICS 2012,
               section 3.2 / figure 2: key size ~ generalized extreme value
               (mu 30.7984, sigma 8.20449, k 0.078688), value size ~
               generalized Pareto (theta 0, sigma 214.476, k 0.348238);
               sampled here (seeded) into a CacheLib kvcache CSV of sets.
Usage: bench/model_bench.sh [--quick]  (env: SLABTAP, MEM_MB, SCALE)
"""
import math
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the one free-port helper of the tests: a port reserved (bound, never
# listening) until the server started on it listens (mctest.py's docstring)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from mctest import reserve_port  # noqa: E402
SLABTAP = os.environ.get("SLABTAP") or os.path.join(SRC, "build", "slabtap")
QUICK = "--quick" in sys.argv
SCALE = float(os.environ.get("SCALE", "0.05" if QUICK else "0.25"))
ETC_ITEMS = int(os.environ.get("ETC_ITEMS", "30000" if QUICK else "150000"))


def wait_port(port, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("port %d never opened" % port)


def scaled_wl(path, out, drop_sleep=False):
    """A workload file with every COUNT scaled by SCALE (at least 1)."""
    lines = []
    for line in open(path):
        m = re.match(r"^(\s*)(set|add|replace|append|prepend|get|delete)\s+(\d+)(.*)$", line)
        if m:
            n = max(1, int(int(m.group(3)) * SCALE))
            line = "%s%s %d%s\n" % (m.group(1), m.group(2), n, m.group(4))
        m = re.match(r"^(\s*)repeat\s+(\d+)(.*)$", line)
        if m:
            line = "%srepeat %d%s\n" % (m.group(1), max(1, int(int(m.group(2)) * SCALE)), m.group(3))
        if drop_sleep and re.match(r"^\s*sleep\s", line):
            continue
        lines.append(line)
    open(out, "w").write("".join(lines))
    return ["--workload", out]


def gev(rng, mu, sigma, k):
    u = rng.random()
    return mu + sigma * ((-math.log(u)) ** (-k) - 1) / k


def gpd(rng, theta, sigma, k):
    u = rng.random()
    return theta + sigma * (u ** (-k) - 1) / k


def etc_trace(out):
    """ETC-like sets as a CacheLib kvcache CSV (key sizes 8..250, values
    1..500,000 bytes)."""
    rng = random.Random(2012)
    with open(out, "w") as f:
        f.write("op_time,key,key_size,op,op_count,size,cache_hits,ttl\n")
        for i in range(ETC_ITEMS):
            ks = min(250, max(8, int(round(gev(rng, 30.7984, 8.20449, 0.078688)))))
            vs = min(500000, max(1, int(round(gpd(rng, 0, 214.476, 0.348238)))))
            f.write("%d,%d,%d,SET,1,%d,0,\n" % (i, i, ks, vs))
    return ["--cachelib-trace", out]


def record(tmp, name, load_args):
    db = os.path.join(tmp, name + ".db")
    res = [reserve_port() for _ in range(3)]  # each held until its server listens
    mp, pp, hp = (r.port for r in res)
    user = ["-u", "root"] if os.geteuid() == 0 else []
    mc = subprocess.Popen(["memcached", "-p", str(mp), "-l", "127.0.0.1", "-U", "0",
                           "-m", "1024"] + user)
    px = None
    try:
        wait_port(mp)
        res[0].release()
        px = subprocess.Popen([SLABTAP, "proxy", "-q", "--listen", "127.0.0.1:%d" % pp,
                               "--upstream", "127.0.0.1:%d" % mp, "--db", db, "--run", name,
                               "--keys", "hash", "--http", "127.0.0.1:%d" % hp],
                              stderr=subprocess.DEVNULL)
        wait_port(pp)
        wait_port(hp)
        for r in res:
            r.release()
        subprocess.run([SLABTAP, "load", "--target", "127.0.0.1:%d" % pp, "--quiet"] + load_args,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.2)  # one more stats sample
        px.send_signal(2)
        px.wait(timeout=30)
    finally:
        for r in res:
            r.release()
        if px and px.poll() is None:
            px.kill()
        mc.kill()
        mc.wait()
    return db


CAND = re.compile(r"^  (\S.*?)\s+chunk waste\s+(\d+) B \(\s*([\d.]+) %\)\s+page slack\s+(\d+) B\s+"
                  r"memory\s+(\d+) B\s+items held\s+(\d+)")
VCAP = re.compile(r"^  verify capacity (.*?)\s+memcached (.*): items held (\d+) \(predicted (\d+)\)")


def advise(db, name, mem_mb):
    p = subprocess.run([SLABTAP, "model", "advise", "--db", db, "--run", name, "--objective",
                        "items", "--memory-limit", str(mem_mb), "--verify"],
                       capture_output=True, text=True)
    lines = p.stdout.splitlines()
    cands = {}
    for i, line in enumerate(lines):
        m = CAND.match(line)
        if m and i + 1 < len(lines):
            cands[lines[i + 1].strip()] = m
    rows = []
    rf = re.search(r"(?m)^  memcached flags: (.*)$", p.stdout)
    rec_flags = rf.group(1) if rf and not re.search(r"(?m)^recommended: keep", p.stdout) else None
    for line in lines:
        m = VCAP.match(line)
        if not m:
            continue
        flags = m.group(2).replace(" -o slab_automove=0", "")
        c = cands.get(flags)
        label = m.group(1)
        kind = ("default" if label.startswith("the run's") else
                "advised -f -n" if label.startswith("-f/-n") else "advised slab_sizes")
        short = re.sub(r"^-m \d+ ", "", flags)
        if len(short) > 34:
            short = short[:31] + "..."
        if rec_flags and flags == rec_flags:
            kind += " (recommended)"
        rows.append((kind, short, float(c.group(3)) if c else float("nan"),
                     int(c.group(4)) if c else -1, int(m.group(4)), int(m.group(3))))
    rec = re.search(r"(?m)^recommended: (.*)$", p.stdout)
    return rows, rec.group(1) if rec else "?", p.returncode, p.stdout + p.stderr


def main():
    # small enough that every distribution overflows it
    mem = {"exp1_worst": 16, "exp2_worst": 16, "exp3_calcify": 4 if QUICK else 16, "bimodal": 8,
           "etc": 4 if QUICK else 16}
    if os.environ.get("MEM_MB"):
        mem = {k: int(os.environ["MEM_MB"]) for k in mem}
    with tempfile.TemporaryDirectory(prefix="model-bench-") as tmp:
        dists = [
            ("exp1_worst", scaled_wl(os.path.join(SRC, "experiments", "exp1_worst.wl"),
                                     os.path.join(tmp, "e1.wl"))),
            ("exp2_worst", scaled_wl(os.path.join(SRC, "experiments", "exp2_worst.wl"),
                                     os.path.join(tmp, "e2.wl"))),
            ("exp3_calcify", scaled_wl(os.path.join(SRC, "experiments", "exp3_calcify.wl"),
                                       os.path.join(tmp, "e3.wl"), drop_sleep=True)),
            ("bimodal", ["--workload", os.path.join(SRC, "tests", "data", "bimodal.wl")]),
            ("etc", etc_trace(os.path.join(tmp, "etc.csv"))),
        ]
        print("scale %.2f of the experiments' counts, %d ETC sets; memcached %s" % (
            SCALE, ETC_ITEMS, subprocess.run(["memcached", "-V"], capture_output=True,
                                             text=True).stdout.strip()))
        print("| distribution | -m | settings | flags | chunk waste | page slack | "
              "items held, predicted | measured |")
        print("|---|---|---|---|---|---|---|---|")
        bad = 0
        recs = []
        for name, args in dists:
            db = record(tmp, name, args)
            rows, rec, rc, out = advise(db, name, mem[name])
            if rc != 0 or not rows:
                bad += 1
                sys.stderr.write("advise %s exit %d:\n%s\n" % (name, rc, out[-4000:]))
            for kind, flags, wpct, slack, pred, meas in rows:
                print("| %s | %d | %s | `%s` | %.2f %% | %.1f MB | %d | %d%s |" % (
                    name, mem[name], kind, flags, wpct, slack / 1048576.0, pred, meas,
                    "" if pred == meas else " (differs)"))
                bad += pred != meas
            recs.append("%s: %s" % (name, rec))
            sys.stdout.flush()
        print()
        for r in recs:
            print("recommended for " + r)
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
