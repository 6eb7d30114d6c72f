"""engines: what the tests that compare slabtap's two stores share.

slabtap records into a SQLite file or into PostgreSQL, and every reader
(the model commands, replay, the canned queries, the page's API, top) must
give the same answer from either for the same recorded load. The tests
that check so (test_engines.py, the suite over every reader;
test_queries_pg.py, the canned queries on more runs) use these helpers:

  run_sqlite, run_pg      one canned query (schema/queries/NAME.sql with
                          sqlite3, its psql form pg/queries/NAME.sql of the
                          build's derived SQL, mctest.GEN_SQL, with psql), its
                          (header, rows) with NULL as None
  query_answer            what two stores must agree on for a query's rows
                          (numbers by value; per-sample queries as the state
                          at each phase's or run's end, see part_ends)
  compare_query           the same query on both, answers equal
  meta_rows               a run's run_meta rows from either store
  text_body, json_without the normalizers: what names the run, the store,
                          the node or a time left out, each named

Needs sqlite3 and psql (pgcluster.bindir()).
"""
import csv
import io
import os
import re
import subprocess

import mctest

SCHEMA = os.path.join(mctest.SRC, "schema")
QUERIES = os.path.join(SCHEMA, "queries")
PG_QUERIES = os.path.join(mctest.GEN_SQL, "pg", "queries")
NULL = "\\N"
# queries with a row per stats sample: (their time column, the column that
# says which part of the recording a sample belongs to). The two proxies'
# pollers do not tick together and a load step takes as many polls as the
# machine makes it take, so these compare as the state at the end of each
# part (see part_ends), where the load waited for several polls.
PER_SAMPLE = {"pages_timeline": ("seconds", "phase"), "exp3_timeline": ("seconds", "run")}


# --- the canned queries --------------------------------------------------------------

def parse_csv(text):
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], [[None if v == NULL else v for v in r] for r in rows[1:]]


def run_sqlite(db, name, params):
    """(header, rows) of schema/queries/NAME.sql on the SQLite file db, each
    @NAME of params set with `.parameter set`."""
    with open(os.path.join(QUERIES, name + ".sql")) as f:
        sql = f.read()
    pre = "".join(".parameter set @%s '%s'\n" % (k, v) for k, v in params.items())
    p = subprocess.run(["sqlite3", "-bail", "-header", "-csv", "-nullvalue", NULL, db],
                       input=pre + sql, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stderr, (name, params, p.stderr)
    return parse_csv(p.stdout)


def run_pg(psql, uri, name, params):
    """(header, rows) of build/schema/pg/queries/NAME.sql on PostgreSQL uri, each
    parameter a psql variable (-v NAME=VALUE)."""
    argv = [psql, "-X", "-q", "--csv", "-v", "ON_ERROR_STOP=1", "-P", "null=" + NULL]
    for k, v in params.items():
        argv += ["-v", "%s=%s" % (k, v)]
    argv += ["-f", os.path.join(PG_QUERIES, name + ".sql"), uri]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and not p.stderr, (name, params, p.stderr)
    return parse_csv(p.stdout)


def part_ends(header, rows, time_col, part_col):
    """rows of a per-sample query as the last sample of each part: the rows
    of one sample (time_col left out, each distinct row once) for each run
    of consecutive samples whose part_col (a phase, a run) is the same. A
    sample is the rows of one time_col value: two samples whose rounded
    times are equal (the final one, taken as the proxy stops, can come
    within a millisecond of the poll before) read as one, and at a part's
    end both hold the same state."""
    t, p = header.index(time_col), header.index(part_col)
    samples, last = [], object()
    for r in rows:
        if r[t] != last or not samples:
            samples.append([])
            last = r[t]
        samples[-1].append(r)
    ends = []
    for i, sample in enumerate(samples):
        if i + 1 == len(samples) or samples[i + 1][0][p] != sample[0][p]:
            ends.append(list(dict.fromkeys(tuple(v for j, v in enumerate(r) if j != t)
                                           for r in sample)))
    return ends


def query_answer(name, header, rows):
    """What two stores must agree on for canned query NAME's (header, rows):
    numbers as numbers (20.1 and 20.10 alike, to 12 significant digits), a
    per-sample query's rows as its part ends' rows (part_ends)."""
    if name in PER_SAMPLE:
        rows = [list(r) for s in part_ends(header, rows, *PER_SAMPLE[name]) for r in s]

    def value(v):
        try:
            return "%.12g" % float(v)
        except (TypeError, ValueError):
            return v
    return header, [[value(v) for v in r] for r in rows]


def compare_query(tc, sqlite_db, psql, uri, name, params):
    """Asserts (on unittest case tc) that query NAME with params gives the
    same header and rows on the SQLite file and on PostgreSQL, and at least
    one row (a per-sample query: two part ends); returns the SQLite
    answer's rows."""
    what = "%s %r" % (name, params)
    sqlite_rows = run_sqlite(sqlite_db, name, params)
    h1, r1 = query_answer(name, *sqlite_rows)
    h2, r2 = query_answer(name, *run_pg(psql, uri, name, params))
    tc.assertTrue(sqlite_rows[1], what + ": no rows on SQLite, nothing compared")
    if name in PER_SAMPLE:
        tc.assertGreaterEqual(len(part_ends(*sqlite_rows, *PER_SAMPLE[name])), 2,
                              what + ": no time series")
    tc.assertEqual(h2, h1, what)
    tc.assertEqual(r2, r1, what)
    return r1


# --- run_meta ------------------------------------------------------------------------

def meta_rows(store, run_name, keys):
    """{key: value} of run_meta for the newest run named run_name, only the
    given keys; store is a SQLite path or a pgcluster.PgCluster."""
    marks = ",".join("'%s'" % k for k in keys)
    sql = ("SELECT m.key, m.value FROM run_meta m WHERE m.key IN (%s) AND m.run_id = "
           "(SELECT max(run_id) FROM runs WHERE name = '%s') ORDER BY m.key" % (marks, run_name))
    if isinstance(store, str):
        rows = [(r["key"], r["value"]) for r in mctest.db_rows(store, sql)]
    else:
        rows = [tuple(r) for r in store.psql(sql)]
    return dict(rows)


# --- normalizers ---------------------------------------------------------------------

def text_body(out, names=None, patterns=()):
    """Text output as lines with what names a run or a store left out: run
    ids ('run 3' -> 'run N'), each key of names (the store's path or URI,
    its node name) replaced by its value, then each (regex, replacement) of
    patterns."""
    keep = []
    for line in out.splitlines():
        for old, new in (names or {}).items():
            line = line.replace(old, new)
        line = re.sub(r"run \d+", "run N", line)
        for pat, rep in patterns:
            line = re.sub(pat, rep, line)
        keep.append(line)
    return keep


def json_without(doc, fields, subs=None):
    """doc (parsed JSON) with every object member whose name is in fields
    replaced by "<left out>" at any depth (the member stays: a field that
    disappears on one engine still shows), and in every string each key of
    subs replaced by its value."""
    if isinstance(doc, dict):
        return {k: ("<left out>" if k in fields else json_without(v, fields, subs))
                for k, v in doc.items()}
    if isinstance(doc, list):
        return [json_without(v, fields, subs) for v in doc]
    if isinstance(doc, str):
        for old, new in (subs or {}).items():
            doc = doc.replace(old, new)
    return doc
