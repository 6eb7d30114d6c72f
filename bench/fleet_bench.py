#!/usr/bin/python3
"""fleet_bench: the proxy's throughput with the PostgreSQL sink vs the SQLite
sink, in one run, and the rows/s each sink commits.

    bench/fleet_bench.py [--rounds N] [--workload FILE]
    SLABTAP=build/slabtap bench/fleet_bench.py     # a build without sanitizers

Starts a throwaway PostgreSQL (tests/integration/pgcluster.py, fsync off as
in the tests: a local server on the same 2 cores) and, per round and sink,
a fresh memcached and a proxy in front of it (--db FILE, or --db
postgresql://...), sends the workload (default bench/sets_400k.wl:
400,000 pipelined sets over 4 connections) with `slabtap load`, then stops
the proxy. Rounds alternate SQLite / PostgreSQL (these machines are noisy:
compare within a run). Per sink it prints the median over rounds of:

  ops/s      what `slabtap load` measured through the proxy
  rows/s     rows recorded / (load start .. the proxy's exit: every row
             committed and the run row ended)

and the ratios PostgreSQL / SQLite. Every round checks rows recorded =
writes sent.
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import mctest  # noqa: E402
import pgcluster  # noqa: E402


def load(port, workload):
    p = subprocess.run([mctest.SLABTAP, "load", "--target", "127.0.0.1:%d" % port,
                        "--workload", workload, "-q"], capture_output=True, text=True,
                       timeout=900, stdin=subprocess.DEVNULL)
    if p.returncode:
        raise SystemExit("slabtap load failed:\n" + p.stdout + p.stderr)
    for line in p.stdout.splitlines():
        if line.startswith("ops/s:"):
            return float(line.split()[1])
    raise SystemExit("no ops/s in:\n" + p.stdout)


def one(kind, wd, pg, workload, rnd):
    mc = mctest.Memcached(wd, extra=["-m", "1024"])
    try:
        if kind == "pg":
            db = pg.uri()
            extra = ["--spill", os.path.join(wd, "spill-%d.db" % rnd)]
        else:
            db = os.path.join(wd, "bench-%d.db" % rnd)
            extra = []
        px = mctest.Proxy(wd, mc.port, db=db, keys="prefix", name="%s-%d" % (kind, rnd),
                          extra=["--node", "bench-%s-%d" % (kind, rnd), "-q"] + extra)
        t0 = time.monotonic()
        ops = load(px.port, workload)
        rc = px.stop(timeout=600)
        secs = time.monotonic() - t0
        if rc != 0:
            raise SystemExit("proxy exit %r:\n%s" % (rc, px.stderr_text()[-3000:]))
        if kind == "pg":
            rows = int(pg.scalar("SELECT rows_recorded FROM runs WHERE node = 'bench-pg-%d'" % rnd))
        else:
            con = sqlite3.connect(db)
            rows = con.execute("SELECT rows_recorded FROM runs ORDER BY run_id DESC").fetchone()[0]
            con.close()
        return ops, rows, rows / secs
    finally:
        mc.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workload", default=os.path.join(HERE, "sets_400k.wl"))
    a = ap.parse_args()
    print("fleet_bench: %s, %d rounds, %s" % (mctest.SLABTAP, a.rounds,
                                               os.path.basename(a.workload)))
    res = {"sqlite": [], "pg": []}
    wd = mctest.Workdir(prefix="slabtap-fleet-bench-")
    with pgcluster.PgCluster() as pg:
        try:
            for rnd in range(a.rounds):
                for kind in ("sqlite", "pg"):
                    ops, rows, rps = one(kind, wd.path, pg, a.workload, rnd)
                    res[kind].append((ops, rows, rps))
                    print("round %d %-6s ops/s %9.0f  rows %8d  rows/s %9.0f"
                          % (rnd + 1, kind, ops, rows, rps), flush=True)
        finally:
            wd.cleanup()
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[2] for x in v))
           for k, v in res.items()}
    rows = {x[1] for v in res.values() for x in v}
    print("\nsink        ops/s (median)   rows/s (median)")
    for k in ("sqlite", "pg"):
        print("%-10s %14.0f %17.0f" % ({"sqlite": "SQLite", "pg": "PostgreSQL"}[k], *med[k]))
    print("PostgreSQL / SQLite: ops/s %.2f, rows/s %.2f"
          % (med["pg"][0] / med["sqlite"][0], med["pg"][1] / med["sqlite"][1]))
    if len(rows) != 1:
        raise SystemExit("rows recorded differ between rounds: %s" % sorted(rows))


if __name__ == "__main__":
    main()
