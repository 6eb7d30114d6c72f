#!/usr/bin/python3
"""test_model_snapshot: `slabtap model advise` on a snapshot (issue 22).

A snapshot lists the items memory holds, each with memcached's ITEM_ntotal:
advise takes that resident size distribution as its input, with no header
arithmetic, and --verify writes those items once each (sets of exactly
those sizes) into memcacheds started with each setting.

The snapshot: a real memcached (-m 256, nothing evicted) holds ~4,000 items
of seeded random sizes (one in three with non-zero client flags, whose 4
bytes the metadump's size includes; a few over slab_chunk_max), written
through `slabtap proxy` (the run's settings and stats samples); the test
takes `lru_crawler metadump all` itself and stores it as that run's
snapshot 1 (tables snapshots and snapshot_items, as `slabtap snapshot`
writes them; the run becomes kind 'snapshot').

  * the metadump lists every item: count per class = `stats items` number;
  * advise on the snapshot run (its latest snapshot by default) and with
    --snapshot 1: the items and bytes are the metadump's, every item in the
    class its size gives, the waste under the run's own settings is
    memcached's own (sum of chunk_size x used_chunks - mem_requested over
    the classes, to the byte), and --verify measures each setting within
    tolerance ("ok" three times), exit 0;
  * the same with 8 items over slab_chunk_max (chunked): --verify still
    agrees with the prediction, but the waste is not compared with the
    original memcached's: a chunked item's header chunk holds the key (and
    flags) and its data chunks the value, a split the metadump's one size
    does not give (the test prints both figures);
  * --snapshot 2 (none) fails and says so.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown.
"""
import os
import random
import re
import sqlite3
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

run_slabtap = mctest.run_slabtap


def metadump(mc):
    """[{key, cls, size, fetch, la, exp}] of `lru_crawler metadump all`."""
    with mc.connect(timeout=30) as s:
        for _ in range(200):  # the crawler may be busy: bounded retries
            s.sendall(b"lru_crawler metadump all\r\n")
            data = mctest.recv_until(s, b"\r\n", timeout=30)
            if not data.startswith(b"BUSY"):
                break
            time.sleep(0.05)
        if not data.endswith(b"END\r\n"):
            data += mctest.recv_until(s, b"END\r\n", timeout=60)
    out = []
    for line in data.decode().splitlines():
        if not line.startswith("key="):
            continue
        f = dict(p.split("=", 1) for p in line.split())
        out.append({"key": f["key"], "cls": int(f["cls"]), "size": int(f["size"]),
                    "fetch": f["fetch"] == "yes", "la": int(f["la"]), "exp": int(f["exp"])})
    return out


class SnapshotAdviseTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-snapadvise-"

    def test_advise_verify_on_snapshot(self):
        self.check_snapshot(chunked=False)

    def test_advise_verify_on_snapshot_chunked(self):
        self.check_snapshot(chunked=True)

    def check_snapshot(self, chunked):
        mc = self.mc(extra=["-m", "256"])
        px = self.proxy(mc.port, name="px", keys="full",
                        extra=["--run", "snap", "--stats-interval", "200"])
        rnd = random.Random(22)
        items = []
        for i in range(4000):
            vlen = int(rnd.lognormvariate(6.0, 1.3))
            if chunked and i % 500 == 7:
                vlen = 600000 + i  # over slab_chunk_max: chunked
            items.append((b"snap:%06d" % i, 0 if i % 3 else 0xabcd0000 + i, min(vlen, 1000000)))
        payload = b"".join(b"set %s %d 0 %d\r\n%s\r\n" % (k, f, n, b"x" * n)
                           for k, f, n in items)
        self.assertEqual(mctest.exchange(px.port, payload, timeout=120),
                         b"STORED\r\n" * len(items))
        obs = mctest.mc_classes(mc.port)
        self.assertEqual(int(mctest.mc_stats(mc.port)["evictions"]), 0)
        waste = sum(c["chunk_size"] * c["used_chunks"] - c["mem_requested"]
                    for c in obs.values() if "chunk_size" in c and "mem_requested" in c)
        alloc = sum(c["chunk_size"] * c["used_chunks"] for c in obs.values()
                    if "chunk_size" in c and "used_chunks" in c)
        t0 = time.time_ns()
        dump = metadump(mc)
        t1 = time.time_ns()
        self.stop_clean(px)
        # every item listed: count per class = memcached's own
        per_class = {}
        for it in dump:
            per_class[it["cls"]] = per_class.get(it["cls"], 0) + 1
        self.assertEqual(len(dump), len(items))
        self.assertEqual(per_class, {c: o["number"] for c, o in obs.items()
                                     if o.get("number")})
        # the run's snapshot 1, as `slabtap snapshot` stores one
        now = int(time.time())
        con = sqlite3.connect(px.db)
        run_id = con.execute("SELECT max(run_id) FROM runs").fetchone()[0]
        con.execute("UPDATE runs SET kind = 'snapshot' WHERE run_id = ?", (run_id,))
        con.execute("INSERT INTO snapshots (run_id, snap, t_ns, ended_ns, items, bytes, complete)"
                    " VALUES (?, 1, ?, ?, ?, ?, 1)",
                    (run_id, t0, t1, len(dump), sum(it["size"] for it in dump)))
        con.executemany(
            "INSERT INTO snapshot_items (run_id, snap, seq, key_hash, key_ref, key_len, class_id,"
            " size, ttl_left, idle_s, fetched, flags) VALUES (?, 1, ?, ?, NULL, ?, ?, ?, ?, ?, ?,"
            " NULL)",
            [(run_id, i + 1, hash(it["key"]) & 0x7fffffffffffffff, len(it["key"]), it["cls"],
              it["size"], -1 if it["exp"] < 0 else max(0, it["exp"] - now),
              max(0, now - it["la"]), int(it["fetch"])) for i, it in enumerate(dump)])
        con.commit()
        con.close()
        nbytes = sum(it["size"] for it in dump)

        for extra in ([], ["--snapshot", "1"]):
            rc, out, err = run_slabtap(["model", "advise", "--db", px.db, "--verify"] + extra,
                                       timeout=600)
            self.assertEqual(rc, 0, out + err)
            self.assertIn("basis: snapshot 1 -- the %d items memory held (%d bytes"
                          % (len(dump), nbytes), out)
            self.assertIn("every item is in the class its size gives", out)
            m = re.search(r"the run's own settings .* waste +[\d.]+ %  \((\d+) of (\d+) bytes\)",
                          out)
            self.assertTrue(m, out)
            if not chunked:
                self.assertEqual((int(m.group(1)), int(m.group(2))), (waste, alloc), out)
            else:  # a chunked item's header chunk depends on its key/value split
                print("with chunked items: predicted waste %s of %s bytes, memcached's own "
                      "%d of %d" % (m.group(1), m.group(2), waste, alloc))
            self.assertIn("verifying by writing snapshot 1", out)
            self.assertEqual(len(re.findall(r"  verify .* ok$", out, re.M)), 3, out)
            self.assertNotIn("OUT OF TOLERANCE", out)
        rc, out, err = run_slabtap(["model", "advise", "--db", px.db, "--snapshot", "2"])
        self.assertEqual(rc, 1, out + err)
        self.assertIn("has no snapshot 2", err)


if __name__ == "__main__":
    unittest.main()
