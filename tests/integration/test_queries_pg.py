"""test_queries_pg: the canned queries (schema/queries) on PostgreSQL.

Every canned query that makes sense for a fleet has a psql form in
schema/pg/queries/NAME.sql (same columns, same rows), its parameters psql
variables (`psql URI -v run=NAME -f ...`; unset or empty = SQLite's unbound
@run). Those marked DERIVED are the SQLite file itself with each @NAME
outside comments replaced by `nullif(:'NAME', '')` behind a fixed header
(`python3 tests/integration/test_queries_pg.py --derive NAME...` writes
them); the others are written for PostgreSQL (jsonb, strpos/least, an
explicit order). NOT_FLEET names the queries that have no PostgreSQL form,
with why (docs/recording.md, "SQL", says the same).

The same small load goes through two proxies, one recording into a SQLite
file, one into a throwaway PostgreSQL cluster (pgcluster.py), each in front
of its own memcached with the same flags: two runs (the second against
memcacheds with -f 1.08), each with two phases (POST /api/phase) of keys
under several prefixes and sizes, stats polled every 100 ms. Then every
query runs on both (sqlite3 -csv with `.parameter set`, psql --csv with
-v), with no parameters and with runs picked by name and by id, and the
rows must be equal (numbers by value: 20.1 and 20.10 are equal). Two
queries print a row per stats sample, and the two proxies' pollers do not
tick together: for them the state at each phase's end (exp3_timeline: each
run's) is compared, seconds left out (engines.part_ends); the load waits 5
polls after each step so that the state a step makes is what its end shows.
The helpers (the query runners, the comparison) are engines.py's, shared
with test_engines.py.

Needs memcached, PostgreSQL (initdb, psql), sqlite3 and $SLABTAP.
127.0.0.1 only; bounded waits.
"""
import glob
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
from engines import PG_QUERIES, QUERIES, compare_query, run_pg, run_sqlite  # noqa: E402

DERIVED = ["compare_runs", "exp2_growth_factor", "exp3_timeline", "ladder", "pages_timeline",
           "waste_by_class"]
WRITTEN = ["exp_waste", "exp3_calcification", "run_metadata", "top_prefixes"]
NOT_FLEET = {
    "headline": "the three experiments' headline: it reads the runs by the names "
                "`slabtap experiment` gives them, and experiment records into SQLite only",
}
INTERVAL_MS = 100
SETTLE_S = 5 * INTERVAL_MS / 1000.0

MARK = "-- the SQLite file from here on, each @NAME a psql variable:\n"


# --- the PostgreSQL form of a portable query ---------------------------------------

def query_params(sql):
    """The @NAME parameters of sql, in order, outside comments."""
    out = []
    for line in sql.splitlines():
        for p in re.findall(r"@(\w+)", line.split("--", 1)[0]):
            if p not in out:
                out.append(p)
    return out


def derive(name):
    """schema/pg/queries/NAME.sql for a DERIVED query: a header that sets each
    psql variable left unset to '', then the SQLite file with each @NAME
    outside comments replaced by nullif(:'NAME', '')."""
    with open(os.path.join(QUERIES, name + ".sql")) as f:
        sql = f.read()
    ps = query_params(sql)
    head = ("-- PostgreSQL (psql) form of schema/queries/%s.sql, derived from it: the same\n"
            "-- SQL, each parameter @NAME the psql variable NAME (unset or empty: NULL):\n"
            "--   psql \"$URI\" -X %s-f pg/queries/%s.sql\n"
            "-- Edit the SQLite file and derive this one again (tests/integration/\n"
            "-- test_queries_pg.py checks that nothing else differs).\n"
            % (name, "".join("-v %s=NAME_OR_ID " % p for p in ps), name))
    for p in ps:
        head += "\\if :{?%s}\n\\else\n\\set %s ''\n\\endif\n" % (p, p)
    body = []
    for line in sql.splitlines(keepends=True):
        code, sep, comment = line.partition("--")
        body.append(re.sub(r"@(\w+)", r"nullif(:'\1', '')", code) + sep + comment)
    return head + MARK + "".join(body)


class QueryFiles(unittest.TestCase):
    """No servers: which files exist and what the derived ones hold."""

    def test_every_query_is_ported_or_said_why_not(self):
        names = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(QUERIES, "*.sql")))
        pg = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(PG_QUERIES, "*.sql")))
        self.assertEqual(sorted(DERIVED + WRITTEN + list(NOT_FLEET)), names)
        self.assertEqual(sorted(DERIVED + WRITTEN), pg)
        with open(os.path.join(mctest.SRC, "docs", "recording.md")) as f:
            doc = f.read()
        for name in NOT_FLEET:
            self.assertTrue("`%s` has no PostgreSQL form" % name in doc,
                            "docs/recording.md does not say why not %s" % name)

    def test_derived_files_are_the_sqlite_files(self):
        for name in DERIVED:
            with open(os.path.join(PG_QUERIES, name + ".sql")) as f:
                self.assertEqual(f.read(), derive(name),
                                 "%s: run tests/integration/test_queries_pg.py --derive %s"
                                 % (name, name))


# --- the load ----------------------------------------------------------------------

PREFIXES = [  # (key format, sizes of the small phase, of the large phase)
    (b"user:%d", [60, 90, 130], [2000]),
    (b"sess/%d", [300, 420], [5000, 7000]),
    (b"img.%d", [900], [12000, 20000]),
    (b"a|%d", [33], [3300]),
    (b"plain%d", [200], [1500]),
    (b":lead%d", [70], [700]),
]


def phase_items(phase, salt):
    items = []
    for pi, (fmt, small, large) in enumerate(PREFIXES):
        sizes = small if phase == 0 else large
        n = 40 + 10 * pi if phase == 0 else 6 + pi
        for i in range(n):
            size = sizes[i % len(sizes)] + (i * 7) % 13
            key = fmt % (i + 1000 * phase + 10000 * salt)
            items.append((key, bytes([97 + (i + pi) % 26]) * size))
    return items


class QueriesOnBoth(mctest.ServerTestCase):
    workdir_prefix = "slabtap-qpg-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        import pgcluster  # noqa: E402 (only the server tests need PostgreSQL)
        cls.pg = pgcluster.PgCluster()
        cls.addClassCleanup(cls.pg.stop)
        cls.psql = os.path.join(pgcluster.bindir(), "psql")
        cls.sqlite = os.path.join(cls.cw.path, "runs.db")
        cls.uri = cls.pg.uri()
        for salt, (run, flags) in enumerate([("r1", []), ("r2", ["-f", "1.08"])]):
            mcs = [cls.class_mc(name="mc-%s-%d" % (run, i), extra=flags) for i in range(2)]
            pxs = [cls.class_proxy(mc.port, db=db, name="px-%s-%d" % (run, i), http=True,
                                   extra=["--run", run, "--node", "node-%d" % i,
                                          "--stats-interval", str(INTERVAL_MS)])
                   for i, (mc, db) in enumerate(zip(mcs, [cls.sqlite, cls.uri]))]
            time.sleep(SETTLE_S)
            for phase, pname in enumerate(["small", "large"]):
                for px in pxs:  # lockstep: the same step on both, then a settle
                    mctest.http_json(px.http_port, "POST", "/api/phase?name=" + pname)
                    with mctest.connect(px.port) as s:
                        mctest.set_items(s, phase_items(phase, salt))
                time.sleep(SETTLE_S)
            for px in pxs:
                rc = px.stop()
                assert rc == 0 and not mctest.sanitizer_errors(px.stderr_text()), \
                    px.stderr_text()[-3000:]
            for mc in mcs:
                mc.stop()

    def compare(self, name, params):
        return compare_query(self, self.sqlite, self.psql, self.uri, name, params)

    def test_run_queries(self):
        for name in ["waste_by_class", "pages_timeline", "top_prefixes", "ladder", "exp_waste"]:
            for params in ({}, {"run": "r1"}, {"run": "1"}, {"run": "r2"}):
                with self.subTest(name=name, params=params):
                    self.compare(name, params)
            # a run neither store has: the same row that says so
            with self.subTest(name=name, params="nosuch"):
                h1, r1 = run_sqlite(self.sqlite, name, {"run": "nosuch"})
                h2, r2 = run_pg(self.psql, self.uri, name, {"run": "nosuch"})
                self.assertEqual((h2, r2), (h1, r1))
                self.assertIn("no run nosuch in this database (a name or id: SELECT run_id, name"
                              " FROM runs lists them)", [v for r in r1 for v in r])

    def test_two_run_queries(self):
        for name in ["compare_runs", "exp2_growth_factor", "exp3_calcification",
                     "exp3_timeline"]:
            cases = [{"a": "r1", "b": "r2"}, {"a": "2", "b": "r1"}]
            if name == "compare_runs":
                cases += [{}, {"a": "nosuch", "b": "r1"}]
            for params in cases:
                with self.subTest(name=name, params=params):
                    self.compare(name, params)

    def test_run_metadata(self):
        self.compare("run_metadata", {})

    def test_the_load_shows(self):
        """What the comparison rests on: both stores hold the load's shape."""
        rows = self.compare("top_prefixes", {"run": "r1"})
        self.assertEqual(sorted(r[0] for r in rows),
                         sorted(["user", "sess", "img", "a", "(no prefix)", ""]))
        ladder = self.compare("ladder", {"run": "r2"})
        self.assertGreater(len(ladder), 40)  # -f 1.08: a long ladder
        calc = self.compare("exp3_calcification", {"a": "r1", "b": "r2"})
        self.assertEqual([r[2] for r in calc], ["small", "large", "small", "large"])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--derive":
        for name in sys.argv[2:]:
            with open(os.path.join(PG_QUERIES, name + ".sql"), "w") as f:
                f.write(derive(name))
        return
    unittest.main()


if __name__ == "__main__":
    main()
