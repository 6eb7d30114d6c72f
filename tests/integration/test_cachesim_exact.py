#!/usr/bin/python3
"""test_cachesim_exact: the request-by-request cache simulator
(model/capacity.h, through the cachesim_driver program) against a real
memcached started here, on seeded get-or-set sequences sent in order on ONE
connection, one request at a time (a get that misses is followed at once by
a set of the key: the simulator's demand-fill).

  * -o no_lru_maintainer,no_lru_crawler,slab_automove=0 (plain LRU): the
    simulator is EXACT -- get_hits, get_misses, get_expired, evictions,
    reclaimed, curr_items, total_malloced, cmd_set -- on Zipf keys with
    two value-size distributions, some fills with an exptime already past
    (expired on the next read or reclaimed at the tail), a memory limit
    small enough to evict, and a few classes' first pages past -m.
  * memcached's defaults (segmented LRU, maintainer and crawler threads)
    with slab_automove=0 and =1: the hit ratio within 2 percentage points
    (HIT_RATIO_TOLERANCE); how close it came is printed.

The simulator is given t = memcached's own clock (`stats` uptime, whole
seconds) read before each batch. Needs memcached on PATH and $CACHESIM_DRIVER
(set by ctest). Binds 127.0.0.1 only; every wait is bounded.
"""
import bisect
import json
import os
import random
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

HIT_RATIO_TOLERANCE = 0.02
DRIVER = os.environ.get("CACHESIM_DRIVER", "")


def zipf_cdf(n, s):
    acc, out = 0.0, []
    for i in range(n):
        acc += 1.0 / (i + 1) ** s
        out.append(acc)
    return out


def make_sequence(seed, n_keys, n_req, sizes, zipf_s=0.99, expire_share=0.0):
    """[(key index, value length, exptime)]: n_req get-or-set requests over
    Zipf(zipf_s) keys; a key's value length is fixed (sizes: 'uniform' 50..
    1500 bytes, or 'bimodal': 80 % of keys 20..200 bytes, 20 % 2000..6000);
    expire_share of the keys are stored with exptime -1."""
    rnd = random.Random(seed)
    cdf = zipf_cdf(n_keys, zipf_s)
    total = cdf[-1]
    vlen, exp = [], []
    perm = list(range(n_keys))
    rnd.shuffle(perm)  # popularity rank is not size order
    for _ in range(n_keys):
        if sizes == "uniform":
            vlen.append(rnd.randint(50, 1500))
        else:
            vlen.append(rnd.randint(20, 200) if rnd.random() < 0.8 else rnd.randint(2000, 6000))
        exp.append(-1 if rnd.random() < expire_share else 0)
    seq = []
    for _ in range(n_req):
        k = perm[bisect.bisect_left(cdf, rnd.random() * total)]
        seq.append((k, vlen[k], exp[k]))
    return seq


def key_name(k):
    return b"k%07d" % k


def recv_count(s, buf, marker, count):
    """Reads until buf holds count markers; returns buf."""
    while buf.count(marker) < count:
        chunk = s.recv(1 << 20)
        if not chunk:
            raise AssertionError("memcached closed the connection")
        buf += chunk
    return buf


def set_cmd(key, vlen, exptime, payload):
    data = payload.get(vlen)
    if data is None:
        data = payload[vlen] = b"x" * vlen
    return b"set %s 0 %d %d\r\n%s\r\n" % (key, exptime, vlen, data)


def mc_clock(s):
    """memcached's own clock (`stats` uptime, whole seconds) on connection s."""
    s.sendall(b"stats\r\n")
    for line in recv_count(s, b"", b"END\r\n", 1).split(b"\r\n"):
        if line.startswith(b"STAT uptime "):
            return int(line.split()[2])
    raise AssertionError("no uptime in stats")


def run_on_memcached(port, seq, started, batch, refused=None):
    """Sends the get-or-set sequence on one connection; returns the ops
    file's lines (what memcached was sent, in its order, with t = whole
    seconds since `started`, or memcached's own clock read before each batch
    when started is None). batch 1: one request at a time, a get that
    misses is followed at once by its set (the simulator's demand-fill,
    fill=1). batch N: N gets pipelined, then a set for each that missed,
    pipelined (written as plain sets): no get holds an item while a set
    allocates, so memcached's order is the order written. A set memcached
    refuses fails the test, or is counted into the list `refused`."""
    lines = []
    payload = {}
    with mctest.connect(port, timeout=30) as s:
        for i in range(0, len(seq), batch):
            part = seq[i:i + batch]
            t = mc_clock(s) if started is None else int(time.monotonic() - started)
            s.sendall(b"".join(b"get " + key_name(k) + b"\r\n" for k, _, _ in part))
            answers = recv_count(s, b"", b"END\r\n", len(part)).split(b"END\r\n")
            fills = [p for p, a in zip(part, answers) if not a.startswith(b"VALUE ")]
            if batch == 1:
                k, vlen, exptime = part[0]
                lines.append("get %d 8 0 %d %d %d 1" % (k + 1, vlen, t, exptime))
            else:
                lines.extend("get %d 8 0 %d %d %d 0" % (k + 1, vlen, t, exptime)
                             for k, vlen, exptime in part)
                lines.extend("set %d 8 0 %d %d %d 0" % (k + 1, vlen, t, exptime)
                             for k, vlen, exptime in fills)
            if not fills:
                continue
            s.sendall(b"".join(set_cmd(key_name(k), vlen, exptime, payload)
                               for k, vlen, exptime in fills))
            got = recv_count(s, b"", b"\r\n", len(fills))
            if got != b"STORED\r\n" * len(fills):
                if refused is None:
                    raise AssertionError("sets answered %r" % got[:200])
                refused.append(len(fills) - got.count(b"STORED\r\n"))
    return lines


def simulate(workdir, name, lines, flags):
    path = os.path.join(workdir, name + ".ops")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    out = subprocess.run([DRIVER, "--flags", flags, path], capture_output=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError("cachesim_driver: %s" % out.stderr.decode(errors="replace"))
    return json.loads(out.stdout)["result"]


def mc_counts(port):
    st = mctest.mc_stats(port)
    sl = mctest.mc_stats(port, "slabs")
    return {
        "hits": int(st["get_hits"]),
        "misses": int(st["get_misses"]),
        "expired": int(st["get_expired"]),
        "evictions": int(st["evictions"]),
        "reclaimed": int(st["reclaimed"]),
        "items": int(st["curr_items"]),
        "sets": int(st["cmd_set"]),
        "malloced": int(sl["total_malloced"]),
        "moves": int(st["slabs_moved"]),
    }


@unittest.skipUnless(DRIVER and os.access(DRIVER, os.X_OK), "CACHESIM_DRIVER not set")
class CachesimExact(mctest.ServerTestCase):
    def compare(self, name, mem_mb, extra_o, seq, batch):
        flags = "-m %d" % mem_mb + (" -o " + extra_o if extra_o else "")
        mc = self.mc(extra=flags.split())
        t0 = time.monotonic()
        lines = run_on_memcached(mc.port, seq, None, batch)
        sent = time.monotonic() - t0
        real = mc_counts(mc.port)
        sim = simulate(self.w.path, name, lines, flags)
        sim["sets_sent"] = sum(1 for line in lines if line.startswith("set "))
        print("%s: %d requests in %.1f s; memcached hits %d misses %d evictions %d "
              "items %d malloced %d moves %d; simulator hits %d misses %d evictions %d "
              "items %d malloced %d moves %d" %
              (name, len(seq), sent, real["hits"], real["misses"], real["evictions"],
               real["items"], real["malloced"], real["moves"], sim["hits"], sim["misses"],
               sim["evictions"], sim["items"], sim["malloced"], sim["moves"]),
              file=sys.stderr)
        self.assertEqual(real["hits"] + real["misses"], len(seq), "every get counted")
        self.assertGreater(real["evictions"], 1000, "%s: the limit must evict" % name)
        return real, sim

    def test_plain_lru_exact(self):
        for i, (sizes, n_keys, n_req, mem, exp_share, batch) in enumerate(
                (("uniform", 30000, 200000, 8, 0.0, 100),
                 ("bimodal", 20000, 200000, 6, 0.03, 100),
                 ("uniform", 20000, 25000, 4, 0.02, 1))):
            name = "plain-%s-batch%d" % (sizes, batch)
            seq = make_sequence(1000 + i, n_keys, n_req, sizes, expire_share=exp_share)
            real, sim = self.compare(name, mem, "no_lru_maintainer,no_lru_crawler,slab_automove=0",
                                     seq, batch)
            for field in ("hits", "misses", "expired", "evictions", "reclaimed", "items",
                          "malloced"):
                self.assertEqual(sim[field], real[field], "%s %s" % (name, field))
            self.assertEqual(sim["fills"] + sim["sets_sent"], real["sets"], name + " sets")
            if batch == 1:
                self.assertEqual(sim["fills"], real["misses"], name + ": a fill per miss")
            if exp_share:
                self.assertGreater(real["expired"], 0, name + ": the sequence must expire items")
            self.assertGreater(sim["malloced"], mem << 20, name + ": first pages past -m")

    def test_segmented_hit_ratio(self):
        seq = make_sequence(2000, 30000, 200000, "uniform")
        for automove in (0, 1):
            real, sim = self.compare("segmented-am%d" % automove, 8,
                                     "slab_automove=%d" % automove, seq, 100)
            real_ratio = real["hits"] / (real["hits"] + real["misses"])
            sim_ratio = sim["hits"] / sim["gets"]
            print("segmented slab_automove=%d: memcached hit ratio %.4f, simulator %.4f, "
                  "difference %+.2f points" %
                  (automove, real_ratio, sim_ratio, 100 * (sim_ratio - real_ratio)),
                  file=sys.stderr)
            self.assertLess(abs(sim_ratio - real_ratio), HIT_RATIO_TOLERANCE,
                            "automove=%d" % automove)


if __name__ == "__main__":
    unittest.main(verbosity=2)
