#!/usr/bin/python3
"""cachesim_accuracy: how close the cache simulator (model/capacity.h, via
cachesim_driver) comes to a real memcached on seeded get-or-set sequences
(the generator and client of tests/integration/test_cachesim_exact.py:
Zipf keys, one connection, 100 gets pipelined then a set for each miss).
Prints one line per configuration: memcached's and the simulator's hit
ratio, evictions, moves. Not a test (docs/cache-model.md has the figures).

  CACHESIM_DRIVER=build/cachesim_driver python3 bench/cachesim_accuracy.py [quick|phases]

phases: a two-phase sequence (small values, then large values) sent at a
fixed request rate over ~80 s, for slab_automove=1 (its 30-second window)
and 2; takes minutes.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import mctest  # noqa: E402
import test_cachesim_exact as tc  # noqa: E402


def one(w, name, mem, extra_o, seq, batch=100, pace=None):
    flags = "-m %d" % mem + (" -o " + extra_o if extra_o else "")
    mc = mctest.Memcached(w, extra=flags.split())
    try:
        started = time.monotonic()
        refused = []
        if pace:
            lines = []
            for i in range(0, len(seq), pace[0]):
                lines += tc.run_on_memcached(mc.port, seq[i:i + pace[0]], None, batch,
                                             refused)
                due = started + (i + pace[0]) / pace[0] * pace[1]
                if due > time.monotonic():
                    time.sleep(due - time.monotonic())
        else:
            lines = tc.run_on_memcached(mc.port, seq, None, batch, refused)
        real = tc.mc_counts(mc.port)
    finally:
        mc.kill_hard()
    sim = tc.simulate(w, name, lines, flags)
    rr = real["hits"] / (real["hits"] + real["misses"])
    sr = sim["hits"] / sim["gets"]
    print("%-34s memcached %.4f sim %.4f diff %+.2f pts | evictions %d / %d | moves %d / %d"
          " | malloced %d / %d | sets memcached refused %d" %
          (name, rr, sr, 100 * (sr - rr), real["evictions"], sim["evictions"], real["moves"],
           sim["moves"], real["malloced"] >> 20, sim["malloced"] >> 20, sum(refused)),
          flush=True)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "quick"
    w = mctest.Workdir().path
    if mode == "quick":
        for sizes, keys, zs in (("uniform", 30000, 0.99), ("bimodal", 30000, 0.99),
                                ("uniform", 50000, 0.8), ("bimodal", 50000, 1.1)):
            seq = tc.make_sequence(7, keys, 200000, sizes, zipf_s=zs)
            for mem in (8, 16, 24):
                for lru, o in (("plain", "no_lru_maintainer,no_lru_crawler,slab_automove=0"),
                               ("seg am0", "slab_automove=0"), ("seg am1", "slab_automove=1"),
                               ("seg am2", "slab_automove=2")):
                    one(w, "%s z%.2f %dk -m%d %s" % (sizes, zs, keys // 1000, mem, lru), mem, o,
                        seq)
    else:
        small = tc.make_sequence(11, 40000, 100000, "uniform", zipf_s=0.9)
        big = [(k + 100000, 6000 + v, e) for k, v, e in
               tc.make_sequence(12, 3000, 100000, "uniform", zipf_s=0.9)]
        seq = small + big
        for o in ("slab_automove=1", "slab_automove=2", "slab_automove=0"):
            one(w, "phases -m 16 %s" % o, 16, o, seq, pace=(2500, 1.0))


if __name__ == "__main__":
    main()
