"""test_taps_store: issue 22's rows on both engines -- evictions and
deletions (item_events), snapshots and their resident items (snapshots,
snapshot_items) -- and every view over them gives the same rows from a
SQLite file and from PostgreSQL.

sink_twin (tests/unit/sink_twin.c) writes the same rows into a fresh
SQLite file and into a throwaway PostgreSQL cluster (pgcluster.py): a
stats sample whose classes give their chunk sizes, TAPS evictions and
deletions (one in four a deletion), two snapshots of TAPS/2 items each
(the second cut short), with --keys full, prefix and hash, and once with
--sample-keys 1/4 (sampled-out rows are not stored). For each:
  - what record/reader.h reads back (sink_twin --dump: snapshots, every
    item of each in order, every event in order, every field) is the same
    text from both stores;
  - every table and view of issue 22 (the key as text where kept, run_id
    left out) holds the same rows on both, and the views add up (events
    and items counted once; chunk sizes from the sample; waste = chunk *
    items - bytes);
  - the counts are those written (TAPS events, TAPS/2 items a snapshot),
    fewer but some with the key sample.
Also prints the bytes a snapshot item takes in a SQLite file (200k items,
--keys hash and full: the table and its index, dbstat).

Needs PostgreSQL (initdb, psql), $SLABTAP's build directory (sink_twin).
127.0.0.1 only; bounded waits.
"""
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
import pgcluster  # noqa: E402

SINK_TWIN = os.environ.get("SINK_TWIN") or os.path.join(os.path.dirname(mctest.SLABTAP),
                                                        "sink_twin")
ROWS = 2000   # ordinary writes and reads first, as a watch run has them
TAPS = 6000
# every table and view of issue 22, each with its columns but run_id
RELATIONS = {
    "item_event_keys": "seq, t_ns, event, key_hash, key, key_len, class_id, size, fetched,"
                       " idle_s, ttl_left, cmd",
    "snapshots": "snap, t_ns, ended_ns, items, bytes, complete, header",
    "snapshot_item_keys": "snap, seq, key_hash, key, key_len, class_id, size, ttl_left, idle_s,"
                          " fetched, flags",
    "evictions": "seq, t_ns, key_hash, key, key_len, class_id, size, fetched, idle_s, ttl_left",
    "evictions_per_class_minute": "minute, class_id, evictions, never_fetched",
    "evictions_by_prefix": "prefix, class_id, evictions, never_fetched",
    "snapshot_class_sizes": "snap, class_id, items, bytes, min_size, max_size, chunk_size,"
                            " waste_bytes",
    "snapshot_size_histogram": "snap, class_id, bucket_lo, bucket_hi, items",
    "snapshot_age_histogram": "snap, class_id, bucket, bucket_hi, items, never_fetched",
    "snapshot_idle_histogram": "snap, class_id, bucket, bucket_hi, items, never_fetched",
    "snapshot_ttl_histogram": "snap, class_id, bucket, bucket_hi, items, never_fetched",
    "snapshot_prefixes": "snap, prefix, class_id, items, bytes",
}


def twin(db, *args):
    p = subprocess.run([SINK_TWIN, db] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, env=mctest.slabtap_env(), timeout=300)
    assert p.returncode == 0 and not mctest.sanitizer_errors(p.stderr), p.stdout + p.stderr
    return p.stdout


def norm(v):
    if v is None:
        return None
    s = str(v)
    try:  # numbers by value (PostgreSQL's sum() is numeric)
        f = float(s)
        return str(int(f)) if f == int(f) else s
    except ValueError:
        return s


def rows_sorted(rows):
    return sorted(([norm(v) for v in r] for r in rows),
                  key=lambda r: [("" if v is None else v) for v in r])


class TapsStoreTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(SINK_TWIN):
            raise AssertionError("%s is not built" % SINK_TWIN)
        cls.pg = pgcluster.PgCluster()
        cls.tmp = tempfile.TemporaryDirectory(prefix="taps_store_")

    @classmethod
    def tearDownClass(cls):
        cls.pg.stop()
        cls.tmp.cleanup()

    def both(self, name, *args):
        """(SQLite file, its run id, the PostgreSQL run id) of the same rows."""
        db = os.path.join(self.tmp.name, name + ".db")
        lite = int(twin(db, ROWS, "--taps", TAPS, *args).split()[2])
        pg = int(twin(self.pg.uri(), ROWS, "--taps", TAPS, "--node", name, *args).split()[2])
        return db, lite, pg

    def lite_rows(self, db, rel, run):
        with sqlite3.connect(db) as c:
            return c.execute("SELECT %s FROM %s WHERE run_id = ?" % (RELATIONS[rel], rel),
                             (run,)).fetchall()

    def pg_rows(self, rel, run):
        return self.pg.psql("SELECT %s FROM %s WHERE run_id = %d" % (RELATIONS[rel], rel, run))

    def same_everywhere(self, name, *args):
        db, lite, pg = self.both(name, *args)
        # the reader: the same text from both
        a, b = twin(db, "--dump", lite), twin(self.pg.uri(), "--dump", pg)
        self.assertGreater(len(a.splitlines()), TAPS // 8)
        self.assertEqual(a, b, "the reader reads the same from both stores")
        got = {}
        for rel in RELATIONS:
            x, y = rows_sorted(self.lite_rows(db, rel, lite)), rows_sorted(self.pg_rows(rel, pg))
            self.assertTrue(x, "%s has rows (%s)" % (rel, name))
            self.assertEqual(len(x), len(y), "%s: as many rows on both (%s)" % (rel, name))
            for i, (r1, r2) in enumerate(zip(x, y)):
                self.assertEqual(r1, r2, "%s row %d (%s)" % (rel, i, name))
            got[rel] = x
            print("  %-28s %6d rows, the same on both (%s)" % (rel, len(x), name))
        return db, lite, got

    def check_sums(self, got, sampled):
        cols = {rel: [c.strip() for c in RELATIONS[rel].split(",")] for rel in RELATIONS}

        def col(rel, name):
            i = cols[rel].index(name)
            return [r[i] for r in got[rel]]

        def total(rel, name):
            return sum(int(v) for v in col(rel, name))

        events = got["item_event_keys"]
        evicted = [r for r in events if r[2] == "1"]
        deleted = [r for r in events if r[2] == "2"]
        items = got["snapshot_item_keys"]
        if sampled:
            self.assertTrue(0 < len(events) < TAPS, len(events))
            self.assertTrue(0 < len(items) < TAPS, len(items))
        else:
            self.assertEqual(len(events), TAPS)
            self.assertEqual(len(items), TAPS)
            self.assertEqual(col("snapshot_item_keys", "snap").count("1"), TAPS // 2)
        self.assertTrue(evicted and deleted)
        # a deletion: fetched, idle_s, ttl_left NULL, cmd delete or md
        self.assertTrue(any(r[7] is None for r in deleted))  # no size logged: NULL
        for r in deleted:
            self.assertEqual(r[8:11], [None, None, None], r)
            self.assertIn(r[11], ("delete", "md"), r)
        for r in evicted:
            self.assertIsNone(r[11], r)
        self.assertEqual(len(got["evictions"]), len(evicted))
        self.assertEqual(total("evictions_per_class_minute", "evictions"), len(evicted))
        self.assertEqual(total("evictions_by_prefix", "evictions"), len(evicted))
        never = sum(1 for r in evicted if r[8] == "0")
        self.assertEqual(total("evictions_per_class_minute", "never_fetched"), never)
        for rel in ("snapshot_size_histogram", "snapshot_idle_histogram", "snapshot_age_histogram",
                    "snapshot_ttl_histogram", "snapshot_prefixes", "snapshot_class_sizes"):
            self.assertEqual(total(rel, "items"), len(items), rel)
        # waste per class: the sample's chunk (sink_twin's ladder) x items - bytes
        for r in got["snapshot_class_sizes"]:
            chunk, n, b = int(r[6]), int(r[2]), int(r[3])
            self.assertEqual(int(r[7]), chunk * n - b, r)
            self.assertTrue(int(r[5]) <= chunk, r)  # sink_twin's sizes fit their chunk
        for r in got["snapshot_size_histogram"]:
            self.assertTrue(int(r[2]) < int(r[3]), r)
        # snapshots: 1 complete, 2 cut short
        self.assertEqual([r[0] for r in got["snapshots"]], ["1", "2"])
        self.assertEqual([r[5] for r in got["snapshots"]], ["1", "0"])
        self.assertTrue(all(r[6].startswith('{"ended_ns":') for r in got["snapshots"]))

    def test_keys_full(self):
        _, _, got = self.same_everywhere("full")
        self.check_sums(got, False)
        prefixes = {r[0] for r in got["evictions_by_prefix"]}
        self.assertIn("", prefixes)  # keys without a delimiter
        self.assertTrue(any(p.startswith("e") for p in prefixes if p), prefixes)

    def test_keys_prefix(self):
        _, _, got = self.same_everywhere("prefix", "--keys", "prefix")
        self.check_sums(got, False)
        self.assertTrue(all(r[3] is not None and ":" not in r[3]
                            for r in got["snapshot_item_keys"]))

    def test_keys_hash(self):
        _, _, got = self.same_everywhere("hash", "--keys", "hash")
        self.check_sums(got, False)
        self.assertTrue(all(r[3] is None for r in got["snapshot_item_keys"]))
        self.assertEqual({r[1] for r in got["snapshot_prefixes"]}, {None})

    def test_sampled(self):
        _, _, got = self.same_everywhere("sampled", "--sample", "1/4")
        self.check_sums(got, True)

    def test_bytes_per_item_sqlite(self):
        """A figure: bytes per snapshot item in a SQLite file."""
        for keys in ("hash", "full"):
            db = os.path.join(self.tmp.name, "size-%s.db" % keys)
            twin(db, 0, "--taps", 200000, "--keys", keys)
            with sqlite3.connect(db) as c:
                try:
                    sizes = dict(c.execute("SELECT name, sum(pgsize) FROM dbstat WHERE name IN"
                                           " ('snapshot_items', 'snapshot_items_snap')"
                                           " GROUP BY name").fetchall())
                except sqlite3.OperationalError:  # no dbstat: the whole file
                    n = c.execute("PRAGMA page_count").fetchone()[0]
                    sizes = {"file": n * c.execute("PRAGMA page_size").fetchone()[0]}
                items = c.execute("SELECT count(*) FROM snapshot_items").fetchone()[0]
            self.assertEqual(items, 200000)
            per = sum(sizes.values()) / items
            print("  --keys %s: %.1f bytes per snapshot item (%s)"
                  % (keys, per, ", ".join("%s %.1f" % (k, v / items) for k, v in sizes.items())))
            self.assertLess(per, 200)


if __name__ == "__main__":
    unittest.main(verbosity=2)
