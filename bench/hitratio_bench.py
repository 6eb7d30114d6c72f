#!/usr/bin/env python3
"""Hit-ratio advice, end to end: record get-or-set workloads through the
proxy, ask `slabtap model advise --objective hits --verify`, and tabulate
predicted beside measured hit ratio at equal memory actually used.

For each (workload, -m) below, in one invocation:

  1. memcached -m M (every other flag at 1.6.18's defaults: -f 1.25,
     segmented LRU, slab_automove=1) on a free 127.0.0.1 port, and
     `slabtap proxy --db RUN.db` in front of it (reads recorded: --reads on,
     the default);
  2. `slabtap load --workload experiments/hitratio/W.wl --target PROXY`:
     the workload's get-or-set requests through the proxy (every get and
     set recorded); memcached's own get_hits/get_misses over the second
     half are the run's hit ratio;
  3. `slabtap model advise --db RUN.db --objective hits --verify --format
     json`: every candidate simulated request by request at the largest -m
     whose total_malloced stays within what the run's own settings used;
     the current settings, the recommendation and the best of each family
     replayed with demand-fill into real memcacheds, hits counted over the
     second half.

Prints a markdown table (and writes it with --out): hit ratio of the
default settings (recorded live, and the replay's measurement), the
advised setting predicted / measured, the best candidate measured, the
memory used by each, and the memory advice (the smallest memory keeping
the default's hit ratio, predicted).

  bench/hitratio_bench.py                                # all workloads, ~15 min
  bench/hitratio_bench.py --only etc_zipf:64 --keep
  bench/hitratio_bench.py --slabtap build-rel/slabtap --out docs/benchmarks-hitratio.md

Needs python3, memcached and a slabtap binary (default build-rel/slabtap,
else build/slabtap). Servers come from tests/integration/mctest.py.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))

WORKLOADS = [("etc_zipf", 32), ("etc_zipf", 64), ("two_pop", 64), ("shift", 64), ("scan", 64)]


def pick_binary(arg):
    if arg:
        return os.path.abspath(arg)
    for b in ("build-rel/slabtap", "build/slabtap"):
        p = os.path.join(SRC, b)
        if os.path.exists(p):
            return p
    sys.exit("hitratio_bench: no slabtap binary (build it, or --slabtap PATH)")


def one(mctest, name, mem, workdir, keep):
    wl = os.path.join(SRC, "experiments", "hitratio", name + ".wl")
    db = os.path.join(workdir, "%s_m%d.db" % (name, mem))
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)
    mc = mctest.Memcached(workdir, extra=["-m", str(mem)], name="mc-%s-%d" % (name, mem))
    px = mctest.Proxy(workdir, mc.port, db=db, name="px-%s-%d" % (name, mem))
    t0 = time.monotonic()
    rc, out, err = mctest.run_slabtap(["load", "--workload", wl, "--target",
                                       "127.0.0.1:%d" % px.port], timeout=1800)
    rec_s = time.monotonic() - t0
    if rc != 0:
        raise SystemExit("load %s failed: %s %s" % (name, out[-2000:], err[-2000:]))
    live = mctest.mc_stats(mc.port)
    px.stop()
    mc.stop()
    t0 = time.monotonic()
    rc, out, err = mctest.run_slabtap(["model", "advise", "--db", db, "--objective", "hits",
                                       "--verify", "--format", "json"], timeout=3600)
    adv_s = time.monotonic() - t0
    try:
        a = json.loads(out)
    except ValueError:
        raise SystemExit("advise %s: no JSON (rc %d): %s %s" % (name, rc, out[-2000:],
                                                                err[-2000:]))
    if not keep:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
    return {"name": name, "mem": mem, "load_out": out, "advise": a, "rc": rc,
            "record_s": rec_s, "advise_s": adv_s,
            "live_hits": int(live.get("get_hits", 0)), "live_misses": int(live.get("get_misses", 0))}


def pct(x):
    return "%.1f %%" % (100 * x) if x is not None else "-"


def mbs(b):
    return "%.1f MB" % (b / 1048576.0)


def table(results):
    lines = ["| workload, -m | default measured (memory used) | advised | advised predicted / "
             "measured (memory used) | best candidate measured | prediction error, advised | "
             "same hit ratio in | candidates | advise time |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        a = r["advise"]
        cur, rec = a["current"], a["recommended"]
        measured = [c for c in a["candidates"] if "measured" in c]
        best = max(measured, key=lambda c: c["measured"]["hit_ratio"]) if measured else None
        cm = cur.get("measured", {})
        rm = rec.get("measured", {})
        err = (100 * (rm["hit_ratio"] - rec["predicted"]["hit_ratio"])) if rm else None
        small = a.get("smallest_memory_same_hit_ratio")
        budget = a["budget_bytes"]
        lines.append("| %s, -m %d | %s (%s) | %s | %s / %s (%s) | %s (%s) | %s | %s | %d | %.0f s |" % (
            r["name"], r["mem"], pct(cm.get("hit_ratio")), mbs(cm.get("memory_bytes", 0)),
            "`%s`" % rec["flags"], pct(rec["predicted"]["hit_ratio"]), pct(rm.get("hit_ratio")),
            mbs(rm.get("memory_bytes", 0)),
            pct(best["measured"]["hit_ratio"]) if best else "-", best["label"] if best else "-",
            "%+.2f points" % err if err is not None else "-",
            ("%s (%.0f %% less)" % (mbs(small["predicted"]["memory_bytes"]),
                                    100.0 * (budget - small["predicted"]["memory_bytes"]) / budget)
             if small else "-"),
            len(a["candidates"]), r["advise_s"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--slabtap")
    ap.add_argument("--only", help="NAME:MB[,NAME:MB...]")
    ap.add_argument("--out")
    ap.add_argument("--keep", action="store_true", help="keep the recorded databases")
    args = ap.parse_args()
    os.environ["SLABTAP"] = pick_binary(args.slabtap)
    import mctest
    wls = WORKLOADS
    if args.only:
        wls = [(x.split(":")[0], int(x.split(":")[1])) for x in args.only.split(",")]
    w = mctest.Workdir("slabtap-hitratio-")
    results = []
    try:
        for name, mem in wls:
            r = one(mctest, name, mem, w.path, args.keep)
            results.append(r)
            print("%s -m %d: recorded in %.0f s, advised in %.0f s (rc %d)" % (
                name, mem, r["record_s"], r["advise_s"], r["rc"]), file=sys.stderr)
            print(json.dumps(r["advise"], indent=1)[:4000], file=sys.stderr)
    finally:
        if not args.keep:
            w.cleanup()
        else:
            print("kept: %s" % w.path, file=sys.stderr)
    t = table(results)
    print(t)
    if args.out:
        with open(args.out, "w") as f:
            f.write(t + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
