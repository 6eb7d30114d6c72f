"""test_queries_pg: the canned queries (schema/queries) on PostgreSQL, and
the SQL's one source.

Every canned query is written once, in SQLite's SQL (schema/queries/NAME.sql,
parameters @NAME); its psql form pg/queries/NAME.sql is derived by
schema/sqlgen.c (a header that sets each psql variable left unset to '',
then the SQLite text with each @NAME outside comments replaced by
`nullif(:'NAME', '')`) into the build directory (build/schema/, part of
`all`; target sql_files) and installed. Where the engines' functions
differ (json_extract, instr, printf, min of several values), the PostgreSQL schema defines SQLite's under their
names (schema/schema.sql.in, "Compatibility functions"): the difference
lives there and nowhere else. The same way the build's schema.sql and
pg/schema.sql are sqlgen's output from schema/schema.sql.in. Only the
sources are in git; the files the build derived (mctest.GEN_SQL, read by
every test) must be exactly what sqlgen writes from the sources now, one
psql form per canned query and no other (no servers needed).

The same small load goes through two proxies, one recording into a SQLite
file, one into a throwaway PostgreSQL cluster (pgcluster.py), each in front
of its own memcached with the same flags: two runs r1 and r2 (the second
against memcacheds with -f 1.08), then the six runs `slabtap experiment`
names, which headline.sql reads (exp1_*, exp2_f1_25 / _f1_08 with those
growth factors, exp3_automove0 / 2 with those -o slab_automove), each with
two phases (POST /api/phase) of keys under several prefixes and sizes,
stats polled every 100 ms. Then every query runs on both (sqlite3 -csv
with `.parameter set`, psql --csv with -v), with no parameters and with
runs picked by name and by id, and the rows must be equal (numbers by
value: 20.1 and 20.10 are equal; headline's text exactly). Two queries
print a row per stats sample, and the two proxies' pollers do not tick
together: for them the state at each phase's end (exp3_timeline: each
run's) is compared, seconds left out (engines.part_ends); the load waits 5
polls after each step so that the state a step makes is what its end shows.
The helpers (the query runners, the comparison) are engines.py's, shared
with test_engines.py.

Needs memcached, PostgreSQL (initdb, psql), sqlite3, $SLABTAP and sqlgen
beside it (or $SQLGEN). 127.0.0.1 only; bounded waits.
"""
import glob
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
from engines import PG_QUERIES, QUERIES, SCHEMA, compare_query, run_pg, run_sqlite  # noqa: E402

SQLGEN = os.environ.get("SQLGEN") or os.path.join(os.path.dirname(mctest.SLABTAP), "sqlgen")
RUNS = [("r1", []), ("r2", ["-f", "1.08"]),  # (name, memcached flags)
        ("exp1_worst", []), ("exp1_best", []),
        ("exp2_f1_25", ["-f", "1.25"]), ("exp2_f1_08", ["-f", "1.08"]),
        ("exp3_automove0", ["-o", "slab_automove=0"]), ("exp3_automove2", ["-o", "slab_automove=2"])]
INTERVAL_MS = 100
SETTLE_S = 5 * INTERVAL_MS / 1000.0



# --- the one source ----------------------------------------------------------------

def sqlgen(*args):
    """sqlgen's output for args (the OUT argument added), as text."""
    fd, out = tempfile.mkstemp(prefix="sqlgen-", suffix=".sql")
    os.close(fd)
    p = subprocess.run([SQLGEN] + list(args) + [out], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    try:
        with open(out) as f:
            return f.read()
    finally:
        os.unlink(out)


def read(path):
    with open(path) as f:
        return f.read()


class SqlFiles(unittest.TestCase):
    """No servers: the files the build derived are sqlgen's output from the
    sources as they are now (a source edited since the build fails here)."""

    def names(self, folder):
        return sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(folder, "*.sql")))

    def test_every_query_has_its_derived_psql_form(self):
        self.assertEqual(self.names(PG_QUERIES), self.names(QUERIES))
        for name in self.names(QUERIES):
            with self.subTest(name=name):
                self.assertEqual(read(os.path.join(PG_QUERIES, name + ".sql")),
                                 sqlgen("query", name, os.path.join(QUERIES, name + ".sql")),
                                 "%s: rebuild (cmake --build build)" % name)

    def test_schemas_are_derived_from_one_source(self):
        src = os.path.join(SCHEMA, "schema.sql.in")
        for dialect, path in [("sqlite", "schema.sql"), ("pg", os.path.join("pg", "schema.sql"))]:
            with self.subTest(dialect=dialect):
                self.assertEqual(read(os.path.join(mctest.GEN_SQL, path)),
                                 sqlgen("schema", dialect, src),
                                 "%s: rebuild (cmake --build build)" % path)

    def test_only_the_sources_are_in_the_tree(self):
        """schema/ holds the sources only: no derived file beside them."""
        self.assertEqual(sorted(glob.glob(os.path.join(SCHEMA, "*.sql"))), [])
        self.assertFalse(os.path.exists(os.path.join(SCHEMA, "pg")))

    def test_the_rule(self):
        """What sqlgen does to a shared line, a section, a query parameter."""
        fd, src = tempfile.mkstemp(prefix="sqlgen-src-", suffix=".sql")
        os.close(fd)
        with open(src, "w") as f:
            f.write("CREATE TABLE t (\n"
                    "  id INTEGER PRIMARY KEY,\n"
                    "  r INTEGER PRIMARY KEY REFERENCES runs(run_id),\n"
                    "  f REAL, s TEXT, -- INTEGER TEXT in a comment stay\n"
                    "  j TEXT NOT NULL -- JSON object\n"
                    ") WITHOUT ROWID;\n"
                    "INSERT OR IGNORE INTO t VALUES\n"
                    "  (1, 'INTEGER -- @x');\n"
                    "DROP VIEW IF EXISTS v;\n"
                    "-- @sqlite\nPRAGMA user_version = 5;\n-- @end\n"
                    "-- @pg\nCREATE FUNCTION f() RETURNS INTEGER;\n-- @end\n"
                    "SELECT @a, '@b' FROM t WHERE x = @a; -- @c\n")
        try:
            self.assertEqual(sqlgen("schema", "pg", src),
                             "CREATE TABLE t (\n"
                             "  id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,\n"
                             "  r bigint PRIMARY KEY REFERENCES runs(run_id),\n"
                             "  f double precision, s text, -- INTEGER TEXT in a comment stay\n"
                             "  j jsonb NOT NULL -- JSON object\n"
                             ");\n"
                             "INSERT INTO t VALUES\n"
                             "  (1, 'INTEGER -- @x')\nON CONFLICT DO NOTHING;\n"
                             "DROP VIEW IF EXISTS v CASCADE;\n"
                             "CREATE FUNCTION f() RETURNS INTEGER;\n"
                             "SELECT @a, '@b' FROM t WHERE x = @a; -- @c\n")
            lite = sqlgen("schema", "sqlite", src)
            self.assertIn("PRAGMA user_version = 5;\n", lite)
            self.assertNotIn("CREATE FUNCTION", lite)
            self.assertNotIn("-- @", lite.replace("-- @x", "").replace("-- @c", ""))
            q = sqlgen("query", "t", src)
            self.assertIn("\\if :{?a}\n\\else\n\\set a ''\n\\endif\n", q)
            self.assertNotIn("{?b}", q)  # in a string: psql would not see it either
            self.assertNotIn("{?c}", q)  # in a comment
            self.assertIn("SELECT nullif(:'a', ''), '@b' FROM t WHERE x = nullif(:'a', ''); -- @c",
                          q)
        finally:
            os.unlink(src)
        with open(src, "w") as f:
            f.write("-- @pg\nx\n")
        try:
            p = subprocess.run([SQLGEN, "schema", "pg", src, src + ".out"], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 1)
            self.assertIn("not closed", p.stderr)
            self.assertFalse(os.path.exists(src + ".out"))
        finally:
            os.unlink(src)


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
        for salt, (run, flags) in enumerate(RUNS):
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

    def test_headline(self):
        """headline.sql's three rows, text for text (printf on PostgreSQL is the
        schema's compatibility function)."""
        rows = self.compare("headline", {})
        self.assertEqual([r[0] for r in rows],
                         ["1 rounding waste", "2 growth factor", "3 calcification"])
        self.assertIn("-f 1.25 wastes", rows[1][1])
        self.assertIn("-f 1.08 wastes", rows[1][1])
        self.assertIn("automove=0 stays at", rows[2][1])

    def test_the_load_shows(self):
        """What the comparison rests on: both stores hold the load's shape."""
        rows = self.compare("top_prefixes", {"run": "r1"})
        self.assertEqual(sorted(r[0] for r in rows),
                         sorted(["user", "sess", "img", "a", "(no prefix)", ""]))
        ladder = self.compare("ladder", {"run": "r2"})
        self.assertGreater(len(ladder), 40)  # -f 1.08: a long ladder
        calc = self.compare("exp3_calcification", {"a": "r1", "b": "r2"})
        self.assertEqual([r[2] for r in calc], ["small", "large", "small", "large"])


if __name__ == "__main__":
    unittest.main()
