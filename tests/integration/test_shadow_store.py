"""test_shadow_store: issue 23's rows on both engines -- the shadow
memcacheds' events, per-second counts, stats samples and their classes, and
settings (shadow_events, shadow_counts, shadow_samples,
shadow_sample_classes, shadow_settings) -- and every view over them
(shadow_starts, targets, target_samples, target_sample_classes,
target_class_latest, target_totals, target_compare,
target_reads_per_second) give the same rows from a SQLite file and from
PostgreSQL, and record/query_targets.h's JSON (the page's
/api/run/targets) is the same text from both.

sink_twin --shadows (tests/unit/shadow_gen.h) writes one run: the primary
sampled for 11 s with its read counts, a full-size shadow "-f 1.08", a
1/4-sampled shadow "1/4 -f 1.08" restarted at 5.5 s, an upstream never
sampled. Beyond "the same on both", the figures are checked against what
shadow_gen.h wrote: deltas since each target's data last started, the
sampled shadow's restart, the verdict lines, the canned query
schema/queries/shadows.sql. And a v6 file (no shadow tables) is upgraded
to v7 by the next open.

Needs PostgreSQL (initdb, psql), $SLABTAP's build directory (sink_twin).
127.0.0.1 only; bounded waits.
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
from engines import compare_query, run_sqlite  # noqa: E402
import pgcluster  # noqa: E402

SINK_TWIN = os.environ.get("SINK_TWIN") or os.path.join(os.path.dirname(mctest.SLABTAP),
                                                        "sink_twin")
SRC = os.environ.get("SLABTAP_SRC") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                    "..", "..")
T0 = 1764633600000000000
S = 1000000000
A, B, C = "-f 1.08", "1/4 -f 1.08", "127.0.0.1:1"
# every table and view of issue 23, each with its columns but run_id (JSON
# columns compared as JSON: SQLite keeps the text, PostgreSQL jsonb's)
RELATIONS = {
    "shadow_events": "target, t_ns, event, detail",
    "shadow_counts": "target, second, reads, hits, misses, fills, writes, stored, not_stored,"
                     " others, errors, dropped",
    "shadow_samples": "target, t_ns, final, stats",
    "shadow_settings": "target, t_ns, version, settings",
    "shadow_starts": "target, t_ns, kind, flags, sample_n, memory_mb",
    # the primary's started_ns is the run's start: not the same run twice
    "targets": "target, kind, flags, sample_n, memory_mb,"
               " CASE WHEN kind = 'primary' THEN NULL ELSE started_ns END, restarts,"
               " data_since_ns",
    "target_samples": "target, t_ns, final, stats",
    "target_sample_classes": "target, t_ns, class_id, fields",
    "target_class_latest": "target, class_id, chunk_size, total_pages, total_chunks,"
                           " used_chunks, mem_requested, waste_bytes, evicted, get_hits",
    "target_totals": "target, t_first_ns, t_last_ns, get_hits, get_misses, hit_ratio,"
                     " total_malloced, limit_maxbytes, evictions, curr_items, pages, waste_bytes,"
                     " classes",
    "target_compare": "target, class_id, primary_chunk_size, shadow_chunk_size, primary_pages,"
                      " shadow_pages, primary_used_chunks, shadow_used_chunks,"
                      " primary_mem_requested, shadow_mem_requested, primary_waste_bytes,"
                      " shadow_waste_bytes, primary_evicted, shadow_evicted",
    "target_reads_per_second": "target, second, reads, hits, misses",
}
JSON_COLS = {"stats", "settings", "fields"}


def twin(db, *args):
    p = subprocess.run([SINK_TWIN, db] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=mctest.slabtap_env(), timeout=300)
    assert p.returncode == 0 and not mctest.sanitizer_errors(p.stderr), p.stdout + p.stderr
    return p.stdout


def norm(v, is_json=False):
    if v is None:
        return None
    if is_json:
        return json.dumps(json.loads(v), sort_keys=True)
    s = str(v)
    try:
        return str(int(s))
    except ValueError:
        pass
    try:  # numbers by value (PostgreSQL's sum() and ratios are numeric)
        f = float(s)
        return str(int(f)) if f == int(f) else "%.9g" % f
    except ValueError:
        return s


def rows_sorted(rel, rows):
    cols = [c.strip() for c in RELATIONS[rel].split(",")]
    js = [c in JSON_COLS for c in cols] if len(cols) == len(rows[0] if rows else cols) else None
    out = []
    for r in rows:
        out.append([norm(v, bool(js and js[i])) for i, v in enumerate(r)])
    return sorted(out, key=lambda r: [("" if v is None else v) for v in r])


class ShadowStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(SINK_TWIN):
            raise AssertionError("%s is not built" % SINK_TWIN)
        cls.pg = pgcluster.PgCluster()
        cls.tmp = tempfile.TemporaryDirectory(prefix="shadow_store_")
        cls.db = os.path.join(cls.tmp.name, "shadows.db")
        cls.lite = int(twin(cls.db, 200, "--shadows").split()[2])
        cls.pgrun = int(twin(cls.pg.uri(), 200, "--shadows", "--node", "shadows").split()[2])

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()
        cls.tmp.cleanup()

    def lite_rows(self, rel):
        with sqlite3.connect(self.db) as c:
            return c.execute("SELECT %s FROM %s WHERE run_id = ?" % (RELATIONS[rel], rel),
                             (self.lite,)).fetchall()

    def pg_rows(self, rel):
        return self.pg.psql("SELECT %s FROM %s WHERE run_id = %d"
                            % (RELATIONS[rel], rel, self.pgrun))

    def both(self):
        got = {}
        for rel in RELATIONS:
            x, y = rows_sorted(rel, self.lite_rows(rel)), rows_sorted(rel, self.pg_rows(rel))
            self.assertTrue(x, "%s has rows" % rel)
            self.assertEqual(len(x), len(y), "%s: as many rows on both" % rel)
            for i, (r1, r2) in enumerate(zip(x, y)):
                self.assertEqual(r1, r2, "%s row %d" % (rel, i))
            got[rel] = x
            print("  %-26s %4d rows, the same on both" % (rel, len(x)))
        return got

    def test_01_same_rows(self):
        got = self.both()
        # what shadow_gen.h wrote
        ev = got["shadow_events"]
        self.assertEqual(len(ev), 3 + 2 + 2)
        self.assertEqual(sorted({r[0] for r in ev}), sorted([A, B, C]))
        self.assertEqual(len(got["shadow_counts"]), 20)
        self.assertEqual(len(got["shadow_samples"]), 20)
        self.assertEqual(len(got["target_samples"]), 31)
        self.assertEqual(len(got["target_sample_classes"]), 11 * 3 + 10 * 5 + 10 * 2)
        self.assertEqual(len(got["shadow_settings"]), 2)
        t = {r[0]: r for r in got["targets"]}
        self.assertEqual(sorted(t), sorted(["primary", A, B, C]))
        self.assertEqual(t["primary"][1:5], ["primary", "-m 64", "1", "64"])
        self.assertEqual(t[A][1:8], ["started", "-f 1.08", "1", "64", str(T0 + S // 2), "0",
                                     str(T0 + S // 2)])
        # the sampled shadow restarted at 5.5 s: its data since then
        self.assertEqual(t[B][1:8], ["started", "-f 1.08", "4", "16", str(T0 + S // 2), "1",
                                     str(T0 + 5 * S + S // 2)])
        self.assertEqual(t[C][1:4], ["upstream", "", "1"])
        tot = {r[0]: r for r in got["target_totals"]}
        self.assertNotIn(C, tot)  # never sampled
        # deltas since the data started: primary 0..10 s, A 1..10 s, B 6..10 s
        self.assertEqual(tot["primary"][1:6], [str(T0), str(T0 + 10 * S), "1000", "500",
                                               norm(1000 / 1500)])
        self.assertEqual(tot[A][3:6], ["1080", "270", "0.8"])
        self.assertEqual(tot[B][1:6], [str(T0 + 6 * S + 2000), str(T0 + 10 * S + 2000),
                                       "160", "40", "0.8"])
        # latest classes: pages, classes with pages, waste = used x chunk - requested
        self.assertEqual(tot["primary"][10:13], ["3", str(sum(10 * c * (ch - 80) for c, ch in
                                                              ((1, 96), (2, 120), (3, 152)))),
                                                 "3"])
        self.assertEqual(tot[A][12], "5")
        for r in got["target_class_latest"]:
            self.assertEqual(int(r[7]), int(r[5]) * int(r[2]) - int(r[6]), r)
        # compare: one row per shadow and class in either (A: 5, B: 3 = the primary's)
        cmp_ = [r for r in got["target_compare"]]
        self.assertEqual(sorted((r[0], r[1]) for r in cmp_),
                         sorted([(A, str(c)) for c in range(1, 6)] +
                                [(B, str(c)) for c in range(1, 4)]))
        b3 = [r for r in cmp_ if r[0] == B and r[1] == "3"][0]
        self.assertEqual((b3[2], b3[3], b3[5]), ("152", None, "0"))
        # reads per second: the primary from get_counts, the shadows from shadow_counts
        rps = got["target_reads_per_second"]
        self.assertEqual(sum(int(r[2]) for r in rps if r[0] == "primary"), 11 * 150)
        self.assertEqual(sum(int(r[3]) for r in rps if r[0] == A), 10 * 120)
        self.assertEqual(sum(int(r[3]) for r in rps if r[0] == B), 9 * 40)
        self.assertEqual(sum(int(r[11]) for r in got["shadow_counts"] if r[0] == B), 50)

    def test_02_targets_json(self):
        a = twin(self.db, "--targets", self.lite)
        b = twin(self.pg.uri(), "--targets", self.pgrun)
        ja, jb = json.loads(a), json.loads(b)
        for j in (ja, jb):
            for t in j["targets"]:
                if t["kind"] == "primary":
                    t["started_ns"] = None
        ja.pop("run")
        jb.pop("run")
        self.assertEqual(ja, jb, "the same answer from both stores")
        ts = {t["target"]: t for t in ja["targets"]}
        self.assertEqual([t["target"] for t in ja["targets"]][0], "primary")
        self.assertIsNone(ts["primary"]["verdict"])
        verdicts = {n: ts[n]["verdict"] for n in (A, B, C)}
        for n, v in sorted(verdicts.items()):
            print("  verdict: %s" % v)
        # A: 80 % hits against the primary's 66.7 % over 1..10 s; 5 classes
        # against 3; 2 evictions/s against 5
        self.assertEqual(verdicts[A], "-f 1.08: +13.3 points hit ratio, same waste,"
                                      " 2 more classes, 3.0 fewer evictions/s")
        # B (1/4, restarted at 6 s): 160 hits and 40 misses over 6..10 s,
        # the primary 400 and 200 there: SHARDS-adjusted 1 - 4 x 40 / 600 =
        # 73.3 % against 66.7 % (its raw 80 % would say +13.3)
        self.assertEqual(verdicts[B], "1/4 -f 1.08: +6.7 points hit ratio, same waste,"
                                      " 1 fewer classes, 5.0 fewer evictions/s"
                                      " (1/4 sample, memory \u00d74)")
        self.assertEqual(verdicts[C], "127.0.0.1:1: no sample yet")
        # series: deltas a step, the restart's drop taken as a new start
        sb = ts[B]["series"]
        self.assertEqual(len(sb), 9)
        self.assertEqual(sum(p["hits"] for p in sb), 4 * 40 + 0 + 4 * 40)
        self.assertEqual(ts["primary"]["series"][0], {"t": T0 // S + 1, "hit_ratio": 0.666667,
                                                      "hits": 100, "misses": 50, "evictions": 5,
                                                      "bytes": 1000})
        self.assertEqual([e["event"] for e in ts[B]["events"]],
                         ["started", "connected", "lost", "restarted"])
        self.assertEqual(len(ts[A]["classes"]), 5)
        self.assertEqual(ts[A]["totals"]["hit_ratio"], 0.8)

    def test_03_canned_query(self):
        """schema/queries/shadows.sql: per class, the primary beside each
        shadow, and a TOTAL row per sampled shadow; the same on both."""
        psql = os.path.join(pgcluster.bindir(), "psql")
        for params in ({"run": "sink_twin"}, {}):
            rows = compare_query(self, self.db, psql, self.pg.uri(), "shadows", params)
            for r in rows[:3] + rows[-2:]:
                print("  " + " | ".join(str(v) for v in r))
            # 8 classes (A: 5, B: 3) and a TOTAL for A and B (C has no sample)
            self.assertEqual(len(rows), 10)
            totals = {r[0]: r for r in rows if r[1] == "TOTAL"}
            self.assertEqual(sorted(totals), sorted([A, B]))
            self.assertEqual(totals[A][10:12], ["66.67", "80"])
        h, r = run_sqlite(self.db, "shadows", {"run": "nosuch"})
        self.assertTrue(r[0][0].startswith("no run nosuch"), r)

    def test_04_upgrade_v6(self):
        """A v6 file (before the shadows) is brought to v7 by the next open."""
        db = os.path.join(self.tmp.name, "v6.db")
        twin(db, 100)
        with sqlite3.connect(db) as c:
            for t in ("shadow_sample_classes", "shadow_samples", "shadow_settings",
                      "shadow_counts", "shadow_events"):
                c.execute("DROP TABLE %s" % t)
            c.execute("PRAGMA user_version = 6")
        run = int(twin(db, 0, "--shadows").split()[2])
        with sqlite3.connect(db) as c:
            self.assertEqual(c.execute("PRAGMA user_version").fetchone()[0], 7)
            self.assertEqual(c.execute("SELECT count(*) FROM targets WHERE run_id = ?",
                                       (run,)).fetchone()[0], 4)
            self.assertEqual(c.execute("SELECT count(*) FROM targets").fetchone()[0], 4)


if __name__ == "__main__":
    unittest.main(verbosity=2)
