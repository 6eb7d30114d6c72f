#!/usr/bin/env python3
"""test_webapi: the live page's JSON API (/api/runs, /api/run/sizes, classes,
series, traffic, advice) on a proxy in front of a real memcached under a
small load: shapes, numbers equal to SQL over the file once the proxy has
stopped and to memcached's own `stats slabs`, 400 for bad parameters, 404
for an unknown run, a finished run answered by a second proxy on the same
file. /api/run/reads and /api/run/reports on a getset run recorded through
the proxy (`slabtap load`): live totals equal to the load's own counts,
then, the run finished, every byte of the answer built again here from
agg_reads and run_ladder, and the reports `slabtap model advise --objective
hits --save` and `slabtap model mrc --save` stored, byte for byte (null
before they are saved, for a run without them, and for one that is not
JSON). With SLABTAP_WEBAPI_BIG=ROWS (e.g. 3000000) it also writes a run of
that many rows into a file and prints each endpoint's latency on it."""
import json
import math
import os
import re
import sqlite3
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

http_json = mctest.http_json
http_request = mctest.http_request

SIZES = (100, 300, 900, 2000, 5000)
PREFIXES = ("user", "sess", "img")


def prefix_of(i):
    """user for half the keys, sess for a third, img for a sixth"""
    return PREFIXES[(0, 0, 0, 1, 1, 2)[i % 6]]


def load(port, n=600):
    """n sets over prefixes and sizes, then gets (hits and misses); the
    (key, value length) of what was set."""
    written = []
    with mctest.connect(port) as s:
        out = []
        for i in range(n):
            key = "%s:%d" % (prefix_of(i), i)
            size = SIZES[i % len(SIZES)]
            out.append(b"set %s %d 0 %d\r\n%s\r\n" % (key.encode(), i % 2, size, b"x" * size))
            written.append((key, size, i % 2))
        s.sendall(b"".join(out))
        mctest.recv_exact(s, len(b"STORED\r\n") * n)
        for i in range(0, n, 3):
            s.sendall(b"get %s:%d missing:%d\r\n" % (prefix_of(i).encode(), i, i))
            mctest.recv_until(s, b"END\r\n")
    return written


# a small get-or-set run: one connection, so the order of requests (and
# the advice) is the same on every run; memcached -m 4 evicts
GETSET = """seed 11
connections 1
pipeline 32
getset 15000 key=k:{zipf:15000:0.9:5} size=uniform(100,600)
getset 15000 key=k:{zipf:15000:0.9:5} size=uniform(100,600)
"""
GETSET_READS = 30000


def ceil_div(a, b):
    return -(-a // b)


def reads_json(db, run, points=300, top=7):
    """The exact bytes /api/run/reads?run=RUN&points=P&top=N answers for a
    finished run, built from agg_reads and run_ladder (record/query.c)."""
    rows = mctest.db_rows(db, "SELECT minute, class_id, reads, hits, misses FROM agg_reads"
                          " WHERE run_id = ?", (run,))
    ladder = {}
    for r in mctest.db_rows(db, "SELECT class_id, chunk_size FROM run_ladder WHERE run_id = ?"
                            " ORDER BY class_id", (run,)):
        ladder.setdefault(r["class_id"], r["chunk_size"])
    lo = min((r["minute"] for r in rows), default=0)
    hi = max((r["minute"] for r in rows), default=-1)
    width, nb = 1, 0
    if hi >= lo:
        width = ceil_div(hi - lo + 1, points)
        nb = ceil_div(hi - lo + 1, width)
    tot, per = {}, {}
    for r in rows:
        c, k = r["class_id"], (r["minute"] - lo) // width
        t = tot.setdefault(c, [0, 0, 0])
        for i, key in enumerate(("reads", "hits", "misses")):
            t[i] += r[key]
        p = per.setdefault(c, ([0] * nb, [0] * nb))
        p[0][k] += r["reads"]
        p[1][k] += r["hits"]
    allv = [sum(t[i] for t in tot.values()) for i in range(3)]

    def ratio(h, n):
        return "%.6f" % (h / n) if n > 0 else "null"

    def chunk(c):
        return str(ladder[c]) if c in ladder else "null"

    def ints(v):
        return ",".join(str(x) for x in v)
    out = ['{"run_id":%d,"bucket_ns":%d,"t":[%s]' % (
        run, width * 60 * 10**9, ints((lo + k * width) * 60 * 10**9 for k in range(nb)))]
    out.append(',"total":{"reads":%d,"hits":%d,"misses":%d,"hit_ratio":%s}' % (
        allv[0], allv[1], allv[2], ratio(allv[1], allv[0])))
    out.append(',"classes":[%s]' % ",".join(
        '{"class_id":%d,"chunk_size":%s,"reads":%d,"hits":%d,"misses":%d,"hit_ratio":%s}'
        % (c, chunk(c), t[0], t[1], t[2], ratio(t[1], t[0])) for c, t in sorted(tot.items())))
    order = sorted((c for c in tot if c >= 1), key=lambda c: (-tot[c][0], c))
    lines = ['{"class_id":%d,"chunk_size":%s,"reads":[%s],"hits":[%s]}'
             % (c, chunk(c), ints(per[c][0]), ints(per[c][1])) for c in order[:top]]
    rest = order[top:]
    if rest:
        lines.append('{"class_id":null,"chunk_size":null,"other_classes":[%s],"reads":[%s],'
                     '"hits":[%s]}' % (ints(rest),
                                       ints(sum(per[c][0][k] for c in rest) for k in range(nb)),
                                       ints(sum(per[c][1][k] for c in rest) for k in range(nb))))
    out.append(',"lines":[%s]}\n' % ",".join(lines))
    return "".join(out)


def reports_json(db, run, stored):
    """The exact bytes of /api/run/reports?run=RUN: the stored texts (trailing
    white space cut) or null, and the commands that save them."""
    def val(k):
        v = stored.get(k)
        return v.rstrip(" \t\r\n") if v is not None else "null"
    return ('{"run_id":%d,"hits_advice":%s,"hits_mrc":%s,"commands":{"hits_advice":'
            '"slabtap model advise --db %s --run %d --objective hits --save","hits_mrc":'
            '"slabtap model mrc --db %s --run %d --save"}}\n'
            % (run, val("hits_advice"), val("hits_mrc"), db, run, db, run))


def get(port, path, expect=200):
    """The JSON of GET path, retried while 503 (busy) or 202 (advice being
    computed) for a bounded time."""
    deadline = time.monotonic() + 20
    while True:
        st, hdrs, body = http_request(port, "GET", path)
        if st not in (503, 202) or expect in (503, 202) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if st != expect:
        raise AssertionError("GET %s: %d (want %d): %r" % (path, st, expect, body[:300]))
    assert hdrs.get("content-type", "").startswith("application/json"), hdrs
    return json.loads(body)


class WebApiTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-webapi-"

    def check_bad(self, hp):
        for path in ("/api/run/sizes?buckets=7", "/api/run/sizes?buckets=abc",
                     "/api/run/sizes?run=1&run=1", "/api/run/sizes?nope=1",
                     "/api/run/series?points=9", "/api/run/series?from=10&to=5",
                     "/api/run/traffic?top=51", "/api/run/traffic?points=",
                     "/api/run/classes?run=-1", "/api/run/classes?run=0",
                     "/api/run/advice?run=1%20OR%201=1"):
            d = get(hp, path, expect=400)
            self.assertIn("error", d, path)
            self.assertTrue(d["error"], path)
        for path in ("/api/run/sizes?run=999", "/api/run/classes?run=999",
                     "/api/run/series?run=999", "/api/run/traffic?run=999",
                     "/api/run/advice?run=999"):
            self.assertIn("error", get(hp, path, expect=404), path)

    def test_endpoints(self):
        mc = self.mc(name="mc")
        db = self.path("web.db")
        px = self.proxy(mc.port, db=db, http=True, keys="prefix",
                        extra=("--stats-interval", "100"))
        hp = px.http_port
        written = load(px.port)
        # the live run: every row recorded and a sample after the load
        mctest.wait_for(lambda: http_json(hp, "GET", "/api/runs")["current"]["rows_recorded"]
                        >= len(written), 20, what="rows recorded")
        time.sleep(0.5)
        runs = http_json(hp, "GET", "/api/runs")
        cur = runs["current"]
        self.assertEqual(cur["stats_interval_ms"], 100)
        self.assertEqual(runs["runs"][0]["run_id"], cur["run_id"])
        self.assertIsNone(runs["runs"][0]["ended_ns"])
        self.assertFalse(runs["runs"][0]["crashed"])
        self.assertEqual(runs["runs"][0]["settings"]["growth_factor"], 1.25)
        run = cur["run_id"]

        classes = get(hp, "/api/run/classes")
        mine = mctest.mc_classes(mc.port)
        self.assertEqual(classes["run_id"], run)
        got = {c["class_id"]: c for c in classes["classes"]}
        for cid, f in mine.items():
            if "chunk_size" not in f:
                continue
            self.assertIn(cid, got)
            self.assertEqual(got[cid]["chunk_size"], f["chunk_size"])
            self.assertEqual(got[cid]["pages"], f["total_pages"])
            self.assertEqual(got[cid]["used_chunks"], f["used_chunks"])
            self.assertEqual(got[cid]["mem_requested"], f.get("mem_requested", 0))
        for c in classes["classes"]:
            for k in ("class_id", "chunk_size", "pages", "total_chunks", "used_chunks",
                      "mem_requested", "evicted", "evicted_per_s", "waste_pct"):
                self.assertIn(k, c)

        sizes = get(hp, "/api/run/sizes?buckets=16")
        self.assertEqual(len(sizes["buckets"]), 16)
        self.assertEqual(sum(b["writes"] for b in sizes["buckets"]), len(written))
        nts = [mctest.ntotal(len(k), v, f) for k, v, f in written]
        self.assertEqual(sum(b["bytes"] for b in sizes["buckets"]), sum(nts))
        self.assertEqual(sizes["buckets"][0]["lo"], min(nts))
        self.assertEqual(sizes["buckets"][-1]["hi"], max(nts) + 1)
        for b in sizes["buckets"]:
            inside = [n for n in nts if b["lo"] <= n < b["hi"]]
            self.assertEqual(b["writes"], len(inside), b)
        self.assertEqual(sum(c["writes"] for c in sizes["classes"]), len(written))
        ladder = {c["class_id"]: c["chunk_size"] for c in sizes["ladder"]}
        for c in sizes["classes"]:
            self.assertEqual(ladder[c["class_id"]], c["chunk_size"])
            # every item is stored in exactly one chunk of its class here
            self.assertEqual(c["bytes_allocated"], c["writes"] * c["chunk_size"])
            self.assertEqual(c["writes"], got[c["class_id"]]["used_chunks"])

        series = get(hp, "/api/run/series?points=20")
        self.assertLessEqual(len(series["t"]), 21)
        self.assertEqual(len(series["t"]), len(series["total_malloced"]))
        self.assertEqual(series["t"], sorted(series["t"]))
        for c in series["classes"]:
            self.assertEqual(len(c["pages"]), len(series["t"]))
            self.assertEqual(len(c["evicted"]), len(series["t"]))

        traffic = get(hp, "/api/run/traffic?points=10&top=2")
        n = len(traffic["t"])
        for k in ("writes", "reads", "hits", "misses", "write_p50_us", "write_p99_us"):
            self.assertEqual(len(traffic[k]), n, k)
        self.assertEqual([p["prefix"] for p in traffic["top_prefixes"]], ["user", "sess"])
        self.assertEqual(len(traffic["top_prefixes"]), 2)

        advice = get(hp, "/api/run/advice")
        self.assertIn(advice["verdict"], ("EXACT", "MISMATCH", "NOT COMPARABLE", "NO SAMPLE"))
        self.assertTrue(advice["candidates"])
        self.assertEqual(sum(1 for c in advice["candidates"] if c["recommended"]), 1)
        # computed once: asked again, the same answer (its computed_s too),
        # at once; how it was obtained is in it
        self.assertEqual(get(hp, "/api/run/advice"), advice)
        for k in ("basis", "writes_seen", "objective", "objective_why", "memory_limit_bytes",
                  "ladder_source", "command", "recommended"):
            self.assertIn(k, advice)
        self.assertEqual(advice["recommended"], [c for c in advice["candidates"] if c["recommended"]][0])
        self.check_bad(hp)
        self.stop_clean(px)
        # the command it shows gives the same recommendation
        argv = advice["command"].split()
        rc, out, err = mctest.run_slabtap(argv[1:])
        self.assertEqual(rc, 0, out + err)
        self.assertIn("  memcached flags: %s\n" % advice["recommended"]["flags"], out)

        # what SQL says over the file, now that the proxy has stopped
        rows = mctest.db_rows(db, "SELECT count(*) AS n, sum(value_len) AS v FROM sets"
                              " WHERE run_id = ? AND cmd = 'set'", (run,))[0]
        self.assertEqual(rows["n"], len(written))
        self.assertEqual(rows["v"], sum(v for _, v, _ in written))
        width = traffic["bucket_ns"] / 1e9  # rates per second: times the bucket, counts
        self.assertAlmostEqual(sum(traffic["writes"]) * width, mctest.db_scalar(
            db, "SELECT count(*) FROM sets WHERE run_id = ?", (run,)), delta=0.01)
        lat = sorted(r["l"] for r in mctest.db_rows(
            db, "SELECT latency_ns / 1000 AS l FROM sets WHERE run_id = ? AND latency_ns"
            " IS NOT NULL", (run,)))
        if n == 1:  # one bucket: its median is the run's (two significant digits)
            med = lat[math.ceil(0.5 * len(lat)) - 1]
            self.assertLessEqual(abs(traffic["write_p50_us"][0] - med), max(1, med * 0.1))
        prefixes = {r["key"]: r["n"] for r in mctest.db_rows(
            db, "SELECT key, count(*) AS n FROM sets WHERE run_id = ? GROUP BY key", (run,))}
        for p in traffic["top_prefixes"]:
            self.assertEqual(p["writes"], prefixes[p["prefix"]])
        last = mctest.db_rows(db, "SELECT class_id, total_pages, used_chunks FROM class_stats"
                              " WHERE sample_id = (SELECT sample_id FROM last_samples"
                              " WHERE run_id = ?)", (run,))

        reads = {key: mctest.db_scalar(db, "SELECT sum(%s) FROM get_counts WHERE run_id = ?"
                                       % col, (run,))
                 for col, key in (("keys", "reads"), ("hits", "hits"), ("misses", "misses"))}

        # a second proxy on the same file answers for the finished run
        px2 = self.proxy(mc.port, db=db, http=True, name="proxy2")
        hp2 = px2.http_port
        runs2 = http_json(hp2, "GET", "/api/runs")
        self.assertEqual(runs2["runs"][1]["run_id"], run)
        self.assertIsNotNone(runs2["runs"][1]["ended_ns"])
        self.assertEqual(runs2["runs"][1]["rows_recorded"], len(written))
        c2 = get(hp2, "/api/run/classes?run=%d" % run)
        pages = {c["class_id"]: c["pages"] for c in c2["classes"]}
        for r in last:
            self.assertEqual(pages[r["class_id"]], r["total_pages"] or 0)
        s2 = get(hp2, "/api/run/sizes?run=%d&buckets=16" % run)
        self.assertEqual(s2["buckets"], sizes["buckets"])
        self.assertEqual(s2, get(hp2, "/api/run/sizes?run=%d&buckets=16" % run))  # cached
        t2 = get(hp2, "/api/run/traffic?run=%d&points=10&top=2" % run)
        # read counters of a second reach the file when the next second's
        # first read comes, or at exit: compare the finished run's
        width2 = t2["bucket_ns"] / 1e9
        self.assertAlmostEqual(sum(t2["writes"]) * width2, len(written), delta=0.01)
        for key, want in reads.items():
            self.assertGreater(want, 0)
            self.assertAlmostEqual(sum(t2[key]) * width2, want, delta=0.01)
        self.assertEqual(get(hp2, "/api/run/series?run=%d" % run)["run_id"], run)
        self.assertEqual(get(hp2, "/api/run/advice?run=%d" % run)["run_id"], run)
        # the new run has no writes yet: empty, not an error
        self.assertEqual(get(hp2, "/api/run/sizes")["buckets"], [])
        self.stop_clean(px2)

    def test_reads_and_reports(self):
        mc = self.mc(name="mc-reads", extra=["-m", "4"])
        db = self.path("reads.db")
        px = self.proxy(mc.port, db=db, http=True, extra=("--stats-interval", "100"))
        hp = px.http_port
        run = http_json(hp, "GET", "/api/runs")["current"]["run_id"]
        # the live run without reads yet, and without reports
        empty = get(hp, "/api/run/reads")
        self.assertEqual((empty["t"], empty["classes"], empty["lines"]), ([], [], []))
        self.assertEqual(empty["total"], {"reads": 0, "hits": 0, "misses": 0, "hit_ratio": None})
        st, _, body = http_request(hp, "GET", "/api/run/reports")
        self.assertEqual((st, body.decode()), (200, reports_json(db, run, {})))
        rc, out, err = mctest.run_slabtap(["load", "--workload", self.write("getset.wl", GETSET),
                                           "--target", "%s:%d" % (mctest.HOST, px.port), "-q"])
        self.assertEqual(rc, 0, err)
        m = re.search(r"^reads: +(\d+) gets, (\d+) hits, (\d+) misses", out, re.M)
        self.assertIsNotNone(m, out)
        gets, hits, misses = (int(x) for x in m.groups())
        self.assertEqual(gets, GETSET_READS)
        self.assertGreater(hits, 0)
        self.assertGreater(misses, 0)
        # live: every read counted, in its class
        mctest.wait_for(lambda: get(hp, "/api/run/reads")["total"]["reads"] == gets, 20,
                        what="every read in agg_reads")
        live = get(hp, "/api/run/reads?top=3&points=10")
        self.assertEqual(live["total"], {"reads": gets, "hits": hits, "misses": misses,
                                         "hit_ratio": round(hits / gets, 6)})
        cls = live["classes"]
        self.assertEqual([c["class_id"] for c in cls], sorted(c["class_id"] for c in cls))
        for key in ("reads", "hits", "misses"):
            self.assertEqual(sum(c[key] for c in cls), live["total"][key], key)
        for c in cls:
            self.assertEqual(c["reads"], c["hits"] + c["misses"], c)
        stored_classes = {c["class_id"]: c["chunk_size"] for c in get(hp, "/api/run/sizes")["ladder"]}
        for c in cls:
            if c["class_id"]:  # a hit's class is the item's: in the ladder
                self.assertEqual(c["chunk_size"], stored_classes[c["class_id"]], c)
        self.assertGreaterEqual(len([c for c in cls if c["class_id"]]), 4)  # sizes 100..600
        top = sorted((c for c in cls if c["class_id"]), key=lambda c: (-c["reads"], c["class_id"]))
        self.assertEqual([ln["class_id"] for ln in live["lines"][:3]],
                         [c["class_id"] for c in top[:3]])
        other = live["lines"][3]
        self.assertIsNone(other["class_id"])
        self.assertEqual(other["other_classes"], [c["class_id"] for c in top[3:]])
        self.assertEqual(sum(other["reads"]), sum(c["reads"] for c in top[3:]))
        self.assertEqual(sum(sum(ln["reads"]) for ln in live["lines"]),
                         gets - sum(c["reads"] for c in cls if c["class_id"] == 0))
        for ln in live["lines"]:
            self.assertEqual(len(ln["reads"]), len(live["t"]))
            self.assertEqual(len(ln["hits"]), len(live["t"]))
        self.stop_clean(px)

        # the finished run, byte for byte, and its reports once saved
        want_reads = reads_json(db, run, top=3)
        want_reads10 = reads_json(db, run, points=10, top=50)
        for args in (["model", "advise", "--db", db, "--run", str(run), "--objective", "hits",
                      "--save"],
                     ["model", "mrc", "--db", db, "--run", str(run), "--memory-limit", "16",
                      "--save"]):
            rc, out, err = mctest.run_slabtap(args)
            self.assertEqual(rc, 0, out + err)
        stored = {r["key"]: r["value"] for r in mctest.db_rows(
            db, "SELECT key, value FROM run_meta WHERE run_id = ? AND key IN"
            " ('hits_advice', 'hits_mrc')", (run,))}
        self.assertEqual(sorted(stored), ["hits_advice", "hits_mrc"])
        px2 = self.proxy(mc.port, db=db, http=True, name="proxy2")
        hp2 = px2.http_port
        for path, want in (("/api/run/reads?run=%d&top=3" % run, want_reads),
                           ("/api/run/reads?run=%d&points=10&top=50" % run, want_reads10),
                           ("/api/run/reports?run=%d" % run, reports_json(db, run, stored))):
            st, h, body = http_request(hp2, "GET", path)
            self.assertEqual(st, 200, body[:300])
            self.assertTrue(h["content-type"].startswith("application/json"), h)
            self.assertEqual(body.decode(), want, path)
        rep = get(hp2, "/api/run/reports?run=%d" % run)
        adv, mrc = rep["hits_advice"], rep["hits_mrc"]
        self.assertEqual(adv, json.loads(stored["hits_advice"]))
        for k in ("current", "recommended"):
            for f in ("hit_ratio", "memory_bytes"):
                self.assertIn(f, adv[k]["predicted"], k)
            self.assertTrue(adv[k]["label"] and adv[k]["flags"], adv[k])
        self.assertGreater(adv["budget_bytes"], 0)
        self.assertEqual(adv["current"]["predicted"]["gets"] > 0, True)
        self.assertEqual(mrc["run_id"], run)
        self.assertEqual([c["settings"] for c in mrc["curves"]], ["current"])
        self.assertGreaterEqual(len(mrc["curves"][0]["points"]), 2)
        for p in mrc["curves"][0]["points"]:
            self.assertEqual(sorted(p), ["budget_bytes", "hit_ratio", "mem_mb", "memory_bytes",
                                         "over_budget"])
            self.assertTrue(0 <= p["hit_ratio"] <= 1, p)
        self.assertEqual(get(hp2, "/api/run/reads?run=%d" % run)["total"]["reads"], gets)
        # the new run: no reports, no reads
        run2 = http_json(hp2, "GET", "/api/runs")["current"]["run_id"]
        st, _, body = http_request(hp2, "GET", "/api/run/reports")
        self.assertEqual(body.decode(), reports_json(db, run2, {}))
        self.assertEqual(get(hp2, "/api/run/reads")["classes"], [])
        for path in ("/api/run/reads?top=0", "/api/run/reads?top=51", "/api/run/reads?points=9",
                     "/api/run/reads?buckets=10", "/api/run/reports?points=10",
                     "/api/run/reports?run=0"):
            self.assertIn("error", get(hp2, path, expect=400), path)
        for path in ("/api/run/reads?run=999", "/api/run/reports?run=999"):
            self.assertIn("error", get(hp2, path, expect=404), path)
        self.stop_clean(px2)

        # a stored report that is not JSON is answered as null
        con = sqlite3.connect(db)
        con.execute("INSERT OR REPLACE INTO run_meta (run_id, key, value) VALUES (?, 'hits_mrc',"
                    " '{\"curves\": [')", (run2,))
        con.execute("INSERT OR REPLACE INTO run_meta (run_id, key, value) VALUES (?, 'hits_advice',"
                    " '{\"x\": 1}\n\n')", (run2,))
        # and reads over days, with an idle day: read a day of minutes per
        # step, idle minutes skipped; the same bytes as built here
        t0 = mctest.db_scalar(db, "SELECT started_ns FROM runs WHERE run_id = ?", (run2,))
        m0 = t0 // (60 * 10**9) - 4 * 1440
        con.executemany(
            "INSERT INTO agg_reads (run_id, minute, class_id, reads, hits, misses)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(run2, m0 + i, c, 10 + (i * c) % 7, (i * c) % 7, 10)
             for i in list(range(0, 1440 + 300)) + list(range(3 * 1440, 3 * 1440 + 50))
             for c in (1, 3, 5, 6, 9) if (i + c) % 4])
        con.commit()
        con.close()
        want = {q: reads_json(db, run2, points=pts, top=top) for q, pts, top in (
            ("points=10&top=2", 10, 2), ("", 300, 7), ("points=2000&top=1", 2000, 1))}
        self.assertEqual(len(json.loads(want["points=2000&top=1"])["t"]), 1457)  # 3 minutes each
        px3 = self.proxy(mc.port, db=db, http=True, name="proxy3")
        st, _, body = http_request(px3.http_port, "GET", "/api/run/reports?run=%d" % run2)
        self.assertEqual(body.decode(), reports_json(db, run2, {"hits_advice": '{"x": 1}'}))
        for q, body_want in want.items():
            st, _, body = http_request(px3.http_port, "GET", "/api/run/reads?run=%d&%s" % (run2, q))
            self.assertEqual((st, body.decode()), (200, body_want), q)
        self.stop_clean(px3)

    def test_advice_rows(self):
        """The page's advice of a run with overwrites and evictions (60k sets
        over 20k keys into memcached -m 8) is exactly what plain `slabtap
        model advise --db D --run R` prints: both replay the rows in
        sequence (the basis both pick by one rule); the aggregates give
        another recommendation on this run, so the comparison can fail.
        While it computes, every 202 says how far it is."""
        mc = self.mc(name="mc-rows", extra=["-m", "8"])
        db = self.path("rows.db")
        px = self.proxy(mc.port, db=db, http=True, keys="prefix")
        hp = px.http_port
        run = http_json(hp, "GET", "/api/runs")["current"]["run_id"]
        wl = self.write("rows.wl", "connections 1\npipeline 64\nseed 7\nphase load\n"
                        "set 60000 key=big:{rand:20000} size=uniform(100,2000) noreply\n")
        rc, out, err = mctest.run_slabtap(["load", "--workload", wl, "--target",
                                           "%s:%d" % (mctest.HOST, px.port), "-q"])
        self.assertEqual(rc, 0, out + err)
        mctest.wait_for(lambda: http_json(hp, "GET", "/api/runs")["current"]["rows_recorded"] >= 60000,
                        60, interval=0.2, what="every write recorded")
        progress = []
        deadline = time.monotonic() + 180
        while True:
            st, _, body = http_request(hp, "GET", "/api/run/advice?run=%d" % run)
            if st != 202 or time.monotonic() > deadline:
                break
            progress.append(json.loads(body)["computing"])
            time.sleep(0.2)
        self.assertEqual(st, 200, body[:300])
        adv = json.loads(body)
        print("\ntest_webapi: advice of a 60k-write run: %d progress texts %r, computed in %.2f s"
              % (len(progress), progress[:3], adv["computed_s"]), file=sys.stderr)
        for t in progress:
            self.assertRegex(t, r"computing advice: (started on [0-9]+ writes \(rows\)|reading the items"
                                r"|replaying [0-9]+ of [0-9]+ writes|[0-9]+ % \([0-9]+ of at most)")
        self.assertEqual(adv["basis"], "rows")
        self.assertEqual(adv["rows_used"], 60000)
        self.assertEqual(adv["command"], "slabtap model advise --db %s --run %d" % (db, run))
        self.stop_clean(px)

        def recommended(extra):
            rc, out, err = mctest.run_slabtap(["model", "advise", "--db", db, "--run", str(run)] + extra)
            self.assertEqual(rc, 0, out + err)
            return [ln.split("memcached flags: ", 1)[1].strip() for ln in out.splitlines()
                    if ln.strip().startswith("memcached flags: ")], out
        flags, out = recommended([])
        self.assertIn("basis: rows", out)
        self.assertIn("evictions", out)
        self.assertEqual(flags, [adv["recommended"]["flags"]], out)
        agg, out = recommended(["--source", "aggregates"])
        self.assertNotEqual(agg, flags, "the aggregates' advice equals the rows' on this run: the "
                            "comparison above could not fail")

    @unittest.skipUnless(os.environ.get("SLABTAP_WEBAPI_BIG"), "SLABTAP_WEBAPI_BIG=ROWS not set")
    def test_big_run_latency(self):
        rows = int(os.environ["SLABTAP_WEBAPI_BIG"])
        mc = self.mc(name="mc-big")
        db = self.path("big.db")
        px = self.proxy(mc.port, db=db, keys="prefix", extra=("--stats-interval", "100"))
        load(px.port, 300)
        time.sleep(0.5)
        self.stop_clean(px)
        big = add_big_run(db, rows)
        px = self.proxy(mc.port, db=db, http=True, name="proxy-big")
        hp = px.http_port
        print("\nrun of %d rows:" % rows, file=sys.stderr)
        for path in ("/api/runs", "/api/run/sizes?run=%d" % big, "/api/run/classes?run=%d" % big,
                     "/api/run/series?run=%d" % big, "/api/run/traffic?run=%d" % big,
                     "/api/run/advice?run=%d" % big, "/api/run/sizes?run=%d" % big):
            t0 = time.monotonic()
            st, _, body = http_request(hp, "GET", path, timeout=60)
            ms = (time.monotonic() - t0) * 1000
            print("  %-32s %d %8.1f ms %7d bytes" % (path, st, ms, len(body)), file=sys.stderr)
            self.assertIn(st, (200, 503), body[:200])
        self.stop_clean(px)


def same_shape(route, d, finished):
    """d (the JSON of /api/run/<route>) without what depends on when and
    where the run was recorded -- run ids, times, per-second rates, the
    store named in commands -- and with what a second recording of the same
    requests must give, as counts (reads only once the run is finished: a
    second's read counters reach the store when the next second's first
    read comes, or at exit)."""
    d = dict(d)
    d.pop("run_id", None)
    if route == "classes":
        d.pop("t_ns")
    elif route == "series":
        d = {"limit_maxbytes": d["limit_maxbytes"],
             "total_malloced": d["total_malloced"][-1:],
             "classes": [(c["class_id"], c["chunk_size"], c["pages"][-1:], c["evicted"][-1:])
                         for c in d["classes"]]}
    elif route == "traffic":
        width = d["bucket_ns"] / 1e9
        d = {"top_prefixes": d["top_prefixes"],
             "counts": [round(sum(d[k]) * width)
                        for k in ("writes", "reads", "hits", "misses")[:4 if finished else 1]],
             "answered": sum(1 for v in d["write_p50_us"] if v is not None) > 0}
    elif route == "reads":
        d = {"total": d["total"], "classes": d["classes"],
             "lines": [(x["class_id"], x["chunk_size"], sum(x["reads"]), sum(x["hits"]))
                       for x in d["lines"]]}
    elif route == "reports":
        d["commands"] = {k: re.sub(r"--db \S+", "--db DB", v) for k, v in d["commands"].items()}
    elif route == "advice":
        d.pop("computed_s")
        d["command"] = re.sub(r"--db \S+ --run \d+", "--db DB --run N", d["command"])
    return d


class WebApiPgTest(mctest.ServerTestCase):
    """The page's JSON API with a proxy recording into PostgreSQL: the same
    requests sent to two memcached run alike, one through a proxy recording
    into a SQLite file, one through a proxy recording into a throwaway
    PostgreSQL; /api/run/sizes, classes, series, traffic and reports answer
    the same on both (same_shape: but for run ids, times and rates), live
    and, from a second proxy on each store, for the finished run (cached:
    asked twice, the same bytes), reads too; /api/runs lists the earlier
    run alike, its node with it. The advice, computed from the run's rows
    read through record/reader on either engine, too."""
    workdir_prefix = "slabtap-webapi-pg-"

    ROUTES = ("sizes?buckets=16", "classes", "series?points=20", "traffic?points=10&top=3",
              "reports", "advice")

    def answers(self, hp, run=None):
        out = {}
        for r in self.ROUTES + (("reads?points=10&top=3",) if run is not None else ()):
            path = "/api/run/" + r
            if run is not None:
                path += ("&" if "?" in path else "?") + "run=%d" % run
            out[r.split("?")[0]] = same_shape(r.split("?")[0], get(hp, path), run is not None)
        return out

    def test_same_answers(self):
        import pgcluster  # noqa: E402 (only this case needs PostgreSQL)
        pg = pgcluster.PgCluster()
        self.addCleanup(pg.stop)
        stores = {"sqlite": self.path("web.db"), "pg": pg.uri()}
        pxs, runs, live = {}, {}, {}
        for name, db in stores.items():
            mc = self.mc(name="mc-" + name)
            pxs[name] = self.proxy(mc.port, db=db, http=True, keys="prefix", name="px-" + name,
                                   extra=("--stats-interval", "100", "--node", "node-a"))
        for name, px in pxs.items():
            written = load(px.port)
            hp = px.http_port
            mctest.wait_for(lambda: http_json(hp, "GET", "/api/runs")["current"]
                            ["rows_recorded"] >= len(written), 20, what="rows recorded")
        time.sleep(0.5)  # a stats sample after the load on both
        for name, px in pxs.items():
            runs[name] = http_json(px.http_port, "GET", "/api/runs")["current"]["run_id"]
            live[name] = self.answers(px.http_port)
        self.assertEqual(live["pg"], live["sqlite"])
        # the load shows in them (not two empty answers alike)
        self.assertEqual(sum(b["writes"] for b in live["pg"]["sizes"]["buckets"]), 600)
        self.assertEqual([p["prefix"] for p in live["pg"]["traffic"]["top_prefixes"]],
                         ["user", "sess", "img"])
        self.assertTrue(live["pg"]["classes"]["classes"])
        self.assertEqual(live["pg"]["advice"]["verdict"], "EXACT")
        self.assertEqual(live["pg"]["advice"]["writes_seen"], 600)
        for px in pxs.values():
            self.stop_clean(px)

        # a second proxy on each store: the finished run, from the store
        done, listed = {}, {}
        for name, db in stores.items():
            mc = self.mc(name="mc2-" + name)
            px = self.proxy(mc.port, db=db, http=True, name="px2-" + name,
                            extra=("--node", "node-b"))
            first = self.answers(px.http_port, runs[name])
            self.assertEqual(self.answers(px.http_port, runs[name]), first)  # cached
            done[name] = first
            earlier = http_json(px.http_port, "GET", "/api/runs")["runs"][1]
            self.assertEqual(earlier["run_id"], runs[name])
            self.assertIsNotNone(earlier.pop("ended_ns"))
            for k in ("run_id", "started_ns", "upstream"):
                earlier.pop(k)
            listed[name] = earlier
            self.stop_clean(px)
        self.assertEqual(done["pg"], done["sqlite"])
        self.assertEqual(done["pg"]["traffic"]["counts"][:2], [600, 400])
        self.assertEqual(done["pg"]["reads"]["total"]["reads"], 400)
        self.assertEqual(listed["pg"], listed["sqlite"])
        self.assertEqual(listed["pg"]["node"], "node-a")
        self.assertEqual(listed["pg"]["rows_recorded"], 600)


def add_big_run(db, n):
    """A finished run of n writes in the `writes` format (sets of 100..4099
    bytes over 5 prefixes, 10 writes per arrival over 600 s), with the first
    run's settings and samples copied; its run id."""
    con = sqlite3.connect(db)
    cur = con.cursor()
    src = cur.execute("SELECT max(run_id) FROM runs").fetchone()[0]
    t0 = cur.execute("SELECT started_ns FROM runs WHERE run_id = ?", (src,)).fetchone()[0]
    run = src + 1
    span = 600 * 10**9
    lo = (cur.execute("SELECT max(rowid) FROM writes").fetchone()[0] or 0) + 1
    cur.execute("UPDATE write_runs SET hi = ? WHERE hi > ?", (lo, lo))
    cur.execute("INSERT INTO runs (run_id, name, started_ns, ended_ns, upstream, slabtap_version,"
                " options, key_mode, rows_recorded) VALUES (?, 'big', ?, ?, 'x', 'x', '',"
                " 'prefix', ?)", (run, t0, t0 + span, n))
    cur.execute("INSERT INTO write_runs (run_id, base, lo, hi, t0) VALUES (?, ?, ?, ?, ?)",
                (run, lo - 1, lo, lo + n, t0))
    for i, p in enumerate(PREFIXES + ("feed", "cart")):
        cur.execute("INSERT OR IGNORE INTO key_prefixes (prefix) VALUES (?)", (p,))
    ids = [r[0] for r in cur.execute("SELECT prefix_id FROM key_prefixes LIMIT 5")]
    # op: key_len 20 | set << 14 | STORED << 20; sizes: width 13, value+1, latency+1
    cur.execute(
        "INSERT INTO writes (rowid, key_hash, key_ref, op, sizes, extra)"
        " WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ? - 1)"
        " SELECT ? + i, (i * 2654435761) % 200000, ? + i % 5 * 0,"
        " 20 | (1 << 14) | (1 << 20),"
        " 13 | (((100 + (i * 7919) % 4000) + 1) << 6) | (((40 + i % 300) + 1) << 19),"
        " NULL FROM s", (n, lo, ids[0]))
    cur.execute("UPDATE writes SET key_ref = ? + (rowid % 5) WHERE rowid >= ?", (ids[0], lo))
    cur.execute(
        "INSERT INTO arrivals (rowid, dt, conn_id)"
        " WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 10 FROM s WHERE i < ? - 10)"
        " SELECT ? + i, i * ? / ?, i % 16 FROM s", (n, lo, span, n))
    cur.execute(
        "INSERT INTO get_counts (run_id, second, cmd, requests, keys, hits, misses,"
        " bytes_returned) WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s"
        " WHERE i < 599) SELECT ?, ? / 1000000000 + i, 'get', 100, 100, 90, 10, 9000 FROM s",
        (run, t0))
    cur.execute("INSERT INTO settings (run_id, t_ns, version, settings) SELECT ?, t_ns, version,"
                " settings FROM settings WHERE run_id = ?", (run, src))
    samples = cur.execute("SELECT sample_id, stats FROM samples WHERE run_id = ?"
                          " ORDER BY t_ns", (src,)).fetchall()
    for k in range(600):
        sid, stats = samples[min(k, len(samples) - 1)]
        cur.execute("INSERT INTO samples (run_id, t_ns, stats) VALUES (?, ?, ?)",
                    (run, t0 + k * 10**9, stats))
        new = cur.lastrowid
        cur.execute("INSERT INTO sample_classes (sample_id, class_id, fields)"
                    " SELECT ?, class_id, fields FROM sample_classes WHERE sample_id = ?",
                    (new, sid))
    con.commit()
    con.close()
    return run


if __name__ == "__main__":
    unittest.main(verbosity=2)
