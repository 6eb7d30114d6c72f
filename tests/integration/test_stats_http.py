#!/usr/bin/python3
"""test_stats_http: the stats time series and the admin HTTP endpoint.

- samples: --stats-interval 100 for ~1.5 s gives a sample per interval
  (>= 8, consecutive gaps < 500 ms), the last one final=1 after SIGTERM; in
  every sample the per-class mem_requested (from `stats items`, merged by
  class) sums to `stats` bytes; settings hold growth_factor 1.25 and the
  version memcached reports.
- known load: 10,000 sets of 945-byte items (class 12, chunk 1184): the
  final sample's slab_waste row is exact (20.19 % waste), run_summary and
  schema/queries/waste_by_class.sql agree, every write is tagged class 12.
- upstream restart: no sample while memcached is down (the gap is in t_ns),
  samples resume after it is back; /health reachable false, then true.
- HTTP: routes, JSON validity, phases (ids, rows, samples' phase_id), 405
  with Allow, 404, 400 for garbage, 413 for an oversize head, 400 for a
  phase without a name, --http off opens no port.
- /metrics: a strict validator of the text format 0.0.4 (names, HELP/TYPE,
  escaping, duplicates, values, _total on counters) plus exact counts.
- per-slab-class families under the official memcached_exporter's names
  (memcached_slab_*{slab="N"}) where they overlap, slabtap_ otherwise.
- known bugs, as expected failures: /api/runs "earlier" is [] when the
  runs need > 8 KiB.

Needs memcached on PATH and $SLABTAP. 127.0.0.1 only; bounded waits; every
proxy must exit 0 without a sanitizer report.
"""
import csv
import io
import json
import math
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

SRC = mctest.SRC
HOST = mctest.HOST
http_request = mctest.http_request
http_json = mctest.http_json


# --- small helpers ------------------------------------------------------------


def raw_http(port, payload, timeout=10):
    """Sends payload on a raw socket and returns everything until the server
    closes (or timeout); the status code of the first response."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(payload)
        closed, data = mctest.wait_closed(s, timeout=timeout)
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", data)
    return (int(m.group(1)) if m else None), data, closed


def mc_command(port, cmd, end=b"END\r\n"):
    with mctest.connect(port) as s:
        s.sendall(cmd)
        return mctest.recv_until(s, end, timeout=10)


def mc_version(port):
    line = mc_command(port, b"version\r\n", end=b"\r\n")
    assert line.startswith(b"VERSION "), line
    return line[8:-2].decode()


def listening_ports(pid):
    """TCP ports process pid listens on (from /proc: its socket inodes that
    are in LISTEN state in /proc/net/tcp{,6})."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            t = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]", t)
        if m:
            inodes.add(m.group(1))
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[3] == "0A" and parts[9] in inodes:
                ports.add(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


# --- a strict Prometheus text format (0.0.4) validator ------------------------

NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
# Counters that may not end in _total, with the reason. Empty: every counter
# slabtap exposes must follow the naming rule.
DOCUMENTED_COUNTERS = {}
# Counters known to lack the _total suffix (tolerated by parse_metrics so
# everything else stays checked). Empty: the per-class evictions are
# memcached_slab_items_evicted_total, as memcached_exporter names them.
KNOWN_BAD_COUNTER_NAMES = set()


class ExpositionError(AssertionError):
    pass


def _unescape(text, allowed, where):
    """Undoes \\\\ \\n (and \\" when allowed has it); any other escape, a
    trailing backslash or (for label values) a bare quote is an error."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            if i + 1 >= len(text) or text[i + 1] not in allowed:
                raise ExpositionError("%s: bad escape in %r" % (where, text))
            out.append({"\\": "\\", "n": "\n", '"': '"'}[text[i + 1]])
            i += 2
            continue
        if ch == '"' and '"' in allowed:
            raise ExpositionError("%s: unescaped quote in %r" % (where, text))
        out.append(ch)
        i += 1
    return "".join(out)


def _parse_labels(text, where):
    """text is what is between { and } of a sample; returns [(name, value)]."""
    labels = []
    i = 0
    while i < len(text):
        m = re.match(r'([^=]*)="', text[i:])
        if not m:
            raise ExpositionError("%s: bad label syntax at %r" % (where, text[i:]))
        lname = m.group(1)
        if not LABEL_RE.match(lname) or lname.startswith("__"):
            raise ExpositionError("%s: bad label name %r" % (where, lname))
        j = i + m.end()
        start = j
        while True:  # find the closing quote, skipping escapes
            if j >= len(text):
                raise ExpositionError("%s: unterminated label value" % where)
            if text[j] == "\\":
                j += 2
                continue
            if text[j] == '"':
                break
            j += 1
        labels.append((lname, _unescape(text[start:j], '\\n"', where)))
        j += 1
        if j < len(text):
            if text[j] != ",":
                raise ExpositionError("%s: expected ',' after a label, got %r" % (where, text[j:]))
            j += 1
            if j >= len(text):
                raise ExpositionError("%s: trailing comma in labels" % where)
        i = j
    names = [n for n, _ in labels]
    if len(set(names)) != len(names):
        raise ExpositionError("%s: a label name repeats" % where)
    return labels


def parse_exposition(text, allowed_counters=None):
    """Validates text strictly; returns {family: {"type", "help",
    "samples": {frozenset(labels): value}}} or raises ExpositionError."""
    if text and not text.endswith("\n"):
        raise ExpositionError("exposition does not end in a newline")
    families = {}
    closed = set()      # families whose samples are complete (another began)
    current = None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = "line %d %r" % (n, line)
        if line == "":
            raise ExpositionError("%s: empty line" % where)
        if line.startswith("#"):
            m = re.match(r"# (HELP|TYPE) (\S+)(?: (.*))?\Z", line)
            if not m:
                if line.startswith("# HELP") or line.startswith("# TYPE"):
                    raise ExpositionError("%s: malformed HELP/TYPE" % where)
                continue  # a plain comment
            kind, name, rest = m.group(1), m.group(2), m.group(3)
            if not NAME_RE.match(name):
                raise ExpositionError("%s: bad metric name" % where)
            fam = families.setdefault(name, {"type": None, "help": None, "samples": {},
                                             "has_samples": False})
            if fam["has_samples"]:
                raise ExpositionError("%s: %s after the family's samples" % (where, kind))
            if kind == "HELP":
                if fam["help"] is not None:
                    raise ExpositionError("%s: second HELP" % where)
                fam["help"] = _unescape(rest or "", "\\n", where)
            else:
                if fam["type"] is not None:
                    raise ExpositionError("%s: second TYPE" % where)
                if rest not in ("counter", "gauge"):
                    raise ExpositionError("%s: TYPE must be counter or gauge" % where)
                fam["type"] = rest
                if rest == "counter" and not name.endswith("_total") \
                        and name not in DOCUMENTED_COUNTERS \
                        and name not in (allowed_counters or ()):
                    raise ExpositionError("%s: counter name does not end in _total" % where)
            continue
        m = re.match(r"([^{\s]+)(?:\{(.*)\})? (\S+)(?: (-?\d+))?\Z", line)
        if not m:
            raise ExpositionError("%s: not `name{labels} value` or `name value`" % where)
        name, ltext, vtext = m.group(1), m.group(2), m.group(3)
        if not NAME_RE.match(name):
            raise ExpositionError("%s: bad metric name %r" % (where, name))
        fam = families.get(name)
        if fam is None or fam["help"] is None or fam["type"] is None:
            raise ExpositionError("%s: sample before its family's HELP and TYPE" % where)
        if name in closed:
            raise ExpositionError("%s: family %s resumes after another family" % (where, name))
        if current is not None and current != name:
            closed.add(current)
        current = name
        labels = _parse_labels(ltext, where) if ltext else []
        if vtext in ("+Inf", "-Inf", "NaN"):
            value = float(vtext.replace("Inf", "inf").replace("NaN", "nan"))
        else:
            if not re.match(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\Z", vtext):
                raise ExpositionError("%s: value %r is not a float" % (where, vtext))
            value = float(vtext)
        if fam["type"] == "counter" and (math.isnan(value) or value < 0):
            raise ExpositionError("%s: counter value %r" % (where, vtext))
        key = frozenset(labels)
        if key in fam["samples"]:
            raise ExpositionError("%s: duplicate series" % where)
        fam["samples"][key] = value
        fam["has_samples"] = True
    for name, fam in families.items():
        if fam["help"] is None or fam["type"] is None:
            raise ExpositionError("family %s lacks HELP or TYPE" % name)
    return families


def parse_metrics(text):
    """parse_exposition for slabtap's /metrics, tolerating only the known
    counter-naming bug (see KNOWN_BAD_COUNTER_NAMES)."""
    return parse_exposition(text, KNOWN_BAD_COUNTER_NAMES)


def metric(fams, name, **labels):
    fam = fams.get(name)
    if fam is None:
        return None
    return fam["samples"].get(frozenset(labels.items()))


# --- memcached_exporter's memcached-wide families -----------------------------

# name: type, as github.com/prometheus/memcached_exporter (pkg/exporter/
# exporter.go) exports them
EXPORTER_FAMILIES = {
    "memcached_up": "gauge",
    "memcached_limit_bytes": "gauge",
    "memcached_current_bytes": "gauge",
    "memcached_current_items": "gauge",
    "memcached_items_evicted_total": "counter",
    "memcached_commands_total": "counter",
}


def exporter_families(stats):
    """{(family, frozenset(labels)): value} that memcached_exporter makes of
    memcached's `stats` (a dict of strings), written here from its source
    independently of slabtap's table."""
    n = {k: int(v) for k, v in stats.items() if re.fullmatch(r"-?[0-9]+", v)}
    out = {("memcached_up", frozenset()): 1,
           ("memcached_limit_bytes", frozenset()): n["limit_maxbytes"],
           ("memcached_current_bytes", frozenset()): n["bytes"],
           ("memcached_current_items", frozenset()): n["curr_items"],
           ("memcached_items_evicted_total", frozenset()): n["evictions"]}

    def cmd(command, status, value):
        out[("memcached_commands_total",
             frozenset({"command": command, "status": status}.items()))] = value
    for op in ("get", "delete", "incr", "decr", "cas", "touch"):
        cmd(op, "hit", n[op + "_hits"])
        cmd(op, "miss", n[op + "_misses"])
    cmd("cas", "badval", n["cas_badval"])
    cmd("flush", "hit", n["cmd_flush"])
    # memcached counts a cas in cmd_set too
    cmd("set", "hit", n["cmd_set"] - n["cas_misses"] - n["cas_hits"] - n["cas_badval"])
    return out


# --- the tests ------------------------------------------------------------------

class StatsHttp(mctest.ServerTestCase):
    workdir_prefix = "slabtap-statshttp-"

    def proxy(self, upstream_port, interval=100, http=True, name="proxy", extra=(), db=None):
        """A proxy sampling every interval ms, with its own admin port
        (px.http_port; None when off)."""
        return super().proxy(upstream_port, name=name, db=db, http=http,
                             extra=["--stats-interval", str(interval)] + list(extra))

    def health(self, px, want=None):
        """/health's JSON; a probe reads the status code too: 200 ok, 503
        with the reason otherwise (want: the code it must be)."""
        st, hdrs, body = http_request(px.http_port, "GET", "/health")
        h = json.loads(body.decode())
        self.assertEqual(st, 200 if h["status"] == "ok" else 503, h)
        if want is not None:
            self.assertEqual(st, want, h)
        return h

    def wait_samples(self, px, more, timeout=15):
        """Waits until /health counts `more` samples beyond the current
        count; returns the new count."""
        base = self.health(px)["samples"]
        return mctest.wait_for(lambda: (lambda n: n if n >= base + more else 0)(
            self.health(px)["samples"]), timeout, interval=0.05,
            what="%d more stats samples" % more)

    # ---- samples --------------------------------------------------------------

    def test_samples_time_series(self):
        mc = self.mc(name="mc-samples")
        version = mc_version(mc.port)
        # items of many sizes, written before the proxy starts, so every
        # sample sees the same settled memory (the poller's three stats
        # commands are not one atomic snapshot)
        with mctest.connect(mc.port) as s:
            sizes = [1, 10, 50, 100, 300, 700, 1000, 3000, 9000, 20000, 100000, 600000]
            mctest.set_items(s, [(b"pre:%d:%d" % (sz, i), b"v" * sz)
                          for sz in sizes for i in range(3)])
        items = mc_command(mc.port, b"stats items\r\n").decode()
        item_classes = set(re.findall(r"STAT items:(\d+):number ", items))
        self.assertGreaterEqual(len(item_classes), 8, items)
        px = self.proxy(mc.port, interval=100, name="proxy-samples")
        self.wait_samples(px, 1)
        time.sleep(1.5)
        t_stop = time.time_ns()
        self.stop_clean(px)
        rows = mctest.db_rows(px.db, "SELECT sample_id, t_ns, final, stats FROM samples "
                                     "ORDER BY t_ns, sample_id")
        non_final = [r for r in rows if not r["final"]]
        self.assertGreaterEqual(len(non_final), 8, "fewer than 8 samples in 1.5 s at 100 ms")
        gaps = [(b["t_ns"] - a["t_ns"]) / 1e6 for a, b in zip(rows, rows[1:])]
        self.assertLess(max(gaps), 500, "a gap between samples over 500 ms: %r" % gaps)
        self.assertTrue(all(g >= 0 for g in gaps))
        finals = [r for r in rows if r["final"]]
        self.assertEqual(len(finals), 1, "exactly one final sample")
        self.assertEqual(rows[-1]["final"], 1, "the last sample is the final one")
        self.assertEqual(rows[-1]["sample_id"], max(r["sample_id"] for r in rows))
        self.assertGreaterEqual(rows[-1]["t_ns"], t_stop)
        # every sample: sum of per-class mem_requested == stats bytes
        per = mctest.db_rows(px.db,
            "SELECT s.sample_id, json_extract(s.stats, '$.bytes') AS bytes,"
            " json_extract(s.stats, '$.curr_items') AS items,"
            " (SELECT sum(json_extract(c.fields, '$.mem_requested')) FROM sample_classes c"
            "   WHERE c.sample_id = s.sample_id) AS req,"
            " (SELECT sum(json_extract(c.fields, '$.number')) FROM sample_classes c"
            "   WHERE c.sample_id = s.sample_id) AS number,"
            " (SELECT count(*) FROM sample_classes c WHERE c.sample_id = s.sample_id"
            "   AND json_extract(c.fields, '$.chunk_size') IS NOT NULL"
            "   AND json_extract(c.fields, '$.mem_requested') IS NOT NULL) AS merged,"
            " (SELECT count(*) FROM sample_classes c WHERE c.sample_id = s.sample_id"
            "   AND json_extract(c.fields, '$.number') IS NOT NULL) AS classes"
            " FROM samples s ORDER BY s.sample_id")
        self.assertEqual(len(per), len(rows))
        for r in per:
            self.assertGreater(r["bytes"], 0, r)
            self.assertEqual(r["req"], r["bytes"],
                             "sample %d: sum of mem_requested != stats bytes" % r["sample_id"])
            self.assertEqual(r["number"], r["items"], r)
            self.assertEqual(r["items"], 3 * len(sizes), r)
            # one class per size in `stats items` (a chunked item counts in
            # the largest class; its header and tail chunks sit in classes
            # that only `stats slabs` lists), each merged with its slab fields
            self.assertEqual(r["classes"], len(item_classes), r)
            self.assertEqual(r["merged"], r["classes"],
                             "sample %d: a class of `stats items` lacks its `stats slabs` fields"
                             % r["sample_id"])
        st = mctest.db_rows(px.db, "SELECT version, json_extract(settings, '$.growth_factor') AS gf,"
                                   " json_extract(settings, '$.chunk_size') AS cs FROM settings")
        self.assertGreaterEqual(len(st), 1)
        for r in st:
            self.assertEqual(r["gf"], 1.25)
            self.assertEqual(r["cs"], 48)
            self.assertEqual(r["version"], version)
        self.assertEqual(version, "1.6.18", "tests are written against memcached 1.6.18")
        rs = mctest.db_rows(px.db, "SELECT growth_factor, version FROM run_settings")
        self.assertEqual(rs, [{"growth_factor": 1.25, "version": version}])

    # ---- known load ------------------------------------------------------------

    def test_known_load_waste(self):
        mc = self.mc(name="mc-load", extra=["-m", "1024"])
        px = self.proxy(mc.port, interval=1000, name="proxy-load")
        n, key_len, value_len = 10000, 10, 876
        total = 48 + key_len + 1 + value_len + 2 + 8
        self.assertEqual(total, 945)
        value = b"w" * value_len
        with mctest.connect(px.port, timeout=30) as s:
            for start in range(0, n, 500):
                mctest.set_items(s, [(b"key:%06d" % i, value) for i in range(start, start + 500)])
        self.stop_clean(px)
        db = px.db
        w = mctest.db_rows(db, "SELECT * FROM slab_waste WHERE final = 1 AND used_chunks > 0")
        self.assertEqual(len(w), 1, w)
        w = w[0]
        self.assertEqual(w["class_id"], 12)
        self.assertEqual(w["chunk_size"], 1184)
        self.assertEqual(w["used_chunks"], n)
        self.assertEqual(w["mem_requested"], n * total)
        self.assertEqual(w["mem_requested"], 9450000)
        self.assertEqual(w["allocated"], 11840000)
        self.assertEqual(w["waste_bytes"], 11840000 - 9450000)
        self.assertIn(w["waste_pct"], (20.18, 20.19))
        self.assertGreaterEqual(w["total_pages"], math.ceil(n / (1048576 // 1184)))
        # the final sample is the run's last one and holds the invariant
        last = mctest.db_rows(db, "SELECT sample_id, final, json_extract(stats, '$.bytes') AS b,"
                                  " json_extract(stats, '$.curr_items') AS items FROM last_samples")
        self.assertEqual(len(last), 1)
        self.assertEqual(last[0]["sample_id"], w["sample_id"])
        self.assertEqual((last[0]["b"], last[0]["items"]), (9450000, n))
        rs = mctest.db_rows(db, "SELECT * FROM run_summary")
        self.assertEqual(len(rs), 1, rs)
        rs = rs[0]
        self.assertEqual(rs["classes_in_use"], 1)
        self.assertEqual(rs["allocated"], 11840000)
        self.assertEqual(rs["mem_requested"], 9450000)
        self.assertIn(rs["waste_pct"], (20.18, 20.19))
        self.assertEqual(rs["writes_recorded"], n)
        self.assertEqual(rs["curr_items"], n)
        self.assertEqual(rs["growth_factor"], 1.25)
        self.assertEqual(rs["rows_dropped"], 0)
        # the shipped query, as README.md and docs/recording.md run it
        qpath = os.path.join(SRC, "schema", "queries", "waste_by_class.sql")
        with open(qpath, "rb") as q:
            r = subprocess.run(["sqlite3", "-header", "-csv", db], stdin=q,
                               capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, b"")
        out = list(csv.DictReader(io.StringIO(r.stdout.decode())))
        self.assertEqual([o["class_id"] for o in out], ["12", "TOTAL"], out)
        for o in out:
            self.assertEqual(int(o["used_chunks"]), n)
            self.assertEqual(int(o["mem_requested"]), 9450000)
            self.assertEqual(int(o["allocated"]), 11840000)
            self.assertIn(o["waste_pct"], ("20.18", "20.19"))
        self.assertEqual(out[0]["chunk_size"], "1184")
        # every write tagged with the class memcached put it in
        sets = mctest.db_rows(db, "SELECT class_id, cmd, answer, key_len, value_len, flags,"
                                  " count(*) AS n FROM sets GROUP BY 1, 2, 3, 4, 5, 6")
        self.assertEqual(sets, [{"class_id": 12, "cmd": "set", "answer": "STORED",
                                 "key_len": key_len, "value_len": value_len, "flags": 0,
                                 "n": n}])

    # ---- upstream restart -----------------------------------------------------------

    def test_upstream_restart(self):
        mc = self.mc(name="mc-r1")
        port = mc.port
        px = self.proxy(port, interval=100, name="proxy-restart")
        self.wait_samples(px, 3)
        h = self.health(px, want=200)
        self.assertTrue(h["upstream"]["reachable"])
        self.assertEqual(h["status"], "ok")
        self.assertEqual(h["upstream"]["last_error"], "")
        mc.kill_hard()  # SIGKILL and reaped: memcached is gone from here on
        t_down = time.time_ns()
        h = mctest.wait_for(lambda: (lambda j: j if not j["upstream"]["reachable"] else None)(
            self.health(px)), 10, interval=0.05, what="/health reachable false")
        self.assertEqual(h["status"], "upstream_unreachable")
        self.assertNotEqual(h["upstream"]["last_error"], "")
        self.health(px, want=503)
        st, _, body = http_request(px.http_port, "GET", "/metrics")
        self.assertEqual(st, 200)
        self.assertEqual(metric(parse_metrics(body.decode()), "slabtap_upstream_up"), 0)
        down_samples = self.health(px)["samples"]
        time.sleep(1.0)  # a gap well above the interval
        self.assertEqual(self.health(px)["samples"], down_samples, "samples while memcached is down")
        t_up = time.time_ns()
        mc2 = self.mc(port=port, name="mc-r2")
        mctest.wait_for(lambda: self.health(px)["upstream"]["reachable"], 15, interval=0.05,
                        what="/health reachable true again")
        self.wait_samples(px, 3)
        h = self.health(px, want=200)
        self.assertEqual(h["status"], "ok")
        self.assertEqual(h["upstream"]["last_error"], "", "a stale error after recovery")
        self.assertGreaterEqual(h["upstream"]["reconnects"], 1)
        self.stop_clean(px)
        mc2.stop()
        ts = [r["t_ns"] for r in mctest.db_rows(px.db, "SELECT t_ns FROM samples ORDER BY t_ns")]
        before = [t for t in ts if t < t_down]
        during = [t for t in ts if t_down <= t <= t_up]
        after = [t for t in ts if t > t_up]
        self.assertGreaterEqual(len(before), 3)
        self.assertEqual(during, [], "samples dated while memcached was down")
        self.assertGreaterEqual(len(after), 3, "samples did not resume")
        gap = (after[0] - before[-1]) / 1e6
        self.assertGreaterEqual(gap, (t_up - t_down) / 1e6)
        self.assertGreater(gap, 500)

    # ---- HTTP routes -------------------------------------------------------------------

    def test_http_routes_and_phases(self):
        mc = self.mc(name="mc-http")
        px = self.proxy(mc.port, interval=100, name="proxy-http")
        hp = px.http_port
        with mctest.connect(px.port) as s:
            mctest.set_items(s, [(b"h:%d" % i, b"x" * 100) for i in range(10)])
        self.wait_samples(px, 2)
        h = http_json(hp, "GET", "/health")
        self.assertEqual(h["status"], "ok")
        self.assertTrue(h["upstream"]["reachable"])
        self.assertEqual(h["upstream"]["address"], "%s:%d" % (HOST, mc.port))
        runs = http_json(hp, "GET", "/api/runs")
        self.assertEqual(runs["current"]["run_id"], h["run_id"])
        self.assertEqual(runs["earlier"], [])
        self.assertEqual(runs["current"]["phase_id"], 0)
        slabs = http_json(hp, "GET", "/api/slabs")
        in_use = [c for c in slabs["classes"] if c["fields"].get("used_chunks")]
        self.assertEqual(len(in_use), 1, slabs)
        c = in_use[0]
        # 48 + 3 + 1 + 100 + 2 + 8 = 162 bytes: class 4 (chunk 192) at -f 1.25
        self.assertEqual((c["class_id"], c["fields"]["chunk_size"]), (4, 192))
        self.assertEqual(c["fields"]["used_chunks"], 10)
        self.assertEqual(c["fields"]["mem_requested"], 10 * 162)
        self.assertEqual(c["allocated"], 10 * c["fields"]["chunk_size"])
        self.assertEqual(c["waste_bytes"], c["allocated"] - c["fields"]["mem_requested"])
        st, hdrs, body = http_request(hp, "GET", "/metrics")
        self.assertEqual(st, 200)
        self.assertTrue(hdrs["content-type"].startswith("text/plain; version=0.0.4"), hdrs)
        parse_metrics(body.decode("utf-8"))

        # phases
        p1 = http_json(hp, "POST", "/api/phase?name=warmup")
        self.assertEqual(p1["name"], "warmup")
        n = p1["phase_id"]
        self.assertIsInstance(n, int)
        self.assertGreaterEqual(n, 1)
        self.assertEqual(http_json(hp, "GET", "/api/runs")["current"]["phase_id"], n)
        self.wait_samples(px, 2)
        odd = 'st"e\\ady\n\u00e9'
        p2 = http_json(hp, "POST", "/api/phase?name=st%22e%5Cady%0A%C3%A9")
        self.assertEqual(p2, {"phase_id": n + 1, "name": odd})
        self.wait_samples(px, 2)

        # errors
        st, hdrs, body = http_request(hp, "GET", "/api/phase")
        self.assertEqual(st, 405, body)
        self.assertIn("POST", hdrs.get("allow", ""), hdrs)
        st, _, _ = http_request(hp, "POST", "/health")
        self.assertEqual(st, 405)
        st, _, _ = http_request(hp, "GET", "/no/such/route")
        self.assertEqual(st, 404)
        st, _, body = http_request(hp, "POST", "/api/phase")
        self.assertEqual(st, 400)
        self.assertIn("error", json.loads(body))
        st, _, body = http_request(hp, "POST", "/api/phase?name=")
        self.assertEqual(st, 400)
        st, _, body = http_request(hp, "POST", "/api/phase?name=" + "x" * 129)
        self.assertEqual(st, 400)
        st, _, body = http_request(hp, "POST", "/api/phase?name=a%00b")
        self.assertEqual(st, 400)
        code, data, closed = raw_http(hp, b"\x16\x03\x01\x00\xa5garbage\x00\xff\r\n\r\n")
        self.assertEqual(code, 400, data[:200])
        self.assertTrue(closed)
        big = (b"GET /health HTTP/1.1\r\nHost: a\r\nX-Pad: " + b"a" * 9000 + b"\r\n\r\n")
        code, data, closed = raw_http(hp, big)
        self.assertEqual(code, 413, data[:200])
        self.assertTrue(closed)
        # the server still serves after all that
        self.assertEqual(http_json(hp, "GET", "/health")["status"], "ok")
        t_before_stop = time.time_ns()
        self.stop_clean(px)

        db = px.db
        phases = mctest.db_rows(db, "SELECT * FROM phases ORDER BY phase_id")
        self.assertEqual([(p["phase_id"], p["name"]) for p in phases],
                         [(n, "warmup"), (n + 1, odd)])
        run_id = h["run_id"]
        self.assertTrue(all(p["run_id"] == run_id for p in phases))
        self.assertEqual(phases[0]["ended_ns"], phases[1]["started_ns"])
        self.assertIsNotNone(phases[1]["ended_ns"], "the last phase ends with the run")
        self.assertGreaterEqual(phases[1]["ended_ns"], t_before_stop)
        samples = mctest.db_rows(db, "SELECT t_ns, phase_id FROM samples ORDER BY t_ns")
        s1, s2 = phases[0]["started_ns"], phases[1]["started_ns"]
        for smp in samples:
            # a sample is stamped when its batch is sent and tagged when it
            # arrives: one sent just before a mark may carry the new phase
            if smp["t_ns"] > s2:
                self.assertEqual(smp["phase_id"], n + 1, smp)
            elif smp["t_ns"] > s1:
                self.assertIn(smp["phase_id"], (n, n + 1), smp)
            else:
                self.assertIn(smp["phase_id"], (None, n), smp)
        self.assertGreaterEqual(sum(1 for s_ in samples if s_["phase_id"] == n), 1)
        self.assertGreaterEqual(sum(1 for s_ in samples if s_["phase_id"] == n + 1), 2)
        self.assertGreaterEqual(sum(1 for s_ in samples if s_["phase_id"] is None), 1)
        deltas = mctest.db_rows(db, "SELECT phase_id, phase FROM phase_deltas ORDER BY phase_id")
        self.assertEqual(deltas, [{"phase_id": n, "phase": "warmup"},
                                  {"phase_id": n + 1, "phase": odd}])

        # a second run in the same file continues the phase ids and lists
        # the first run as earlier
        px2 = self.proxy(mc.port, interval=100, name="proxy-http2", db=db)
        runs = http_json(px2.http_port, "GET", "/api/runs")
        self.assertEqual([r["run_id"] for r in runs["earlier"]], [run_id])
        self.assertEqual(runs["earlier"][0]["ended_ns"] is not None, True)
        p3 = http_json(px2.http_port, "POST", "/api/phase?name=again")
        self.assertEqual(p3["phase_id"], n + 2)
        self.stop_clean(px2)

    def test_api_runs_lists_earlier_runs_with_long_names(self):
        """/api/runs lists earlier runs even when their names are long: 21
        earlier runs with names of a few hundred bytes are listed (regression:
        app_read_runs once kept the JSON in a fixed 8192-byte buffer and
        "earlier" silently became [] past it)."""
        mc = self.mc(name="mc-long")
        first = self.proxy(mc.port, interval=1000, http=False, name="proxy-long0")
        self.stop_clean(first)
        con = sqlite3.connect(first.db)
        with con:
            for i in range(20):
                con.execute("INSERT INTO runs (name, started_ns, ended_ns, upstream,"
                            " slabtap_version, options, key_mode) VALUES (?, ?, ?, ?, ?, ?, ?)",
                            ("run-%02d-" % i + "n" * 400, i, i + 1, "127.0.0.1:1", "0", "", "full"))
        con.close()
        px = self.proxy(mc.port, interval=1000, name="proxy-long1", db=first.db)
        try:
            runs = http_json(px.http_port, "GET", "/api/runs")
        finally:
            self.stop_clean(px)
        self.assertGreater(len(runs["earlier"]), 0, "21 earlier runs, none listed")

    def test_http_off_opens_no_port(self):
        mc = self.mc(name="mc-off")
        on = self.proxy(mc.port, interval=1000, name="proxy-on")
        # the check itself can fail: with --http the admin port is seen
        self.assertEqual(listening_ports(on.pid), {on.port, on.http_port})
        self.stop_clean(on)
        off = self.proxy(mc.port, interval=1000, http=False, name="proxy-off")
        self.assertIn("admin off", off.stderr_text())
        with mctest.connect(off.port) as s:
            s.sendall(b"version\r\n")
            self.assertTrue(mctest.recv_line(s).startswith(b"VERSION "))
        self.assertEqual(listening_ports(off.pid), {off.port})
        self.stop_clean(off)

    # ---- /metrics -----------------------------------------------------------------------

    def test_validator_rejects_bad_expositions(self):
        good = ('# HELP a_total Things, with \\\\ and \\n\n# TYPE a_total counter\n'
                'a_total{x="q\\"\\\\\\n",y="2"} 3\na_total 4\n'
                '# HELP g A gauge\n# TYPE g gauge\ng -1.5e3\ng{z=""} NaN\ng{z="i"} +Inf\n')
        fams = parse_exposition(good)
        self.assertEqual(metric(fams, "a_total", x='q"\\\n', y="2"), 3)
        self.assertEqual(metric(fams, "g"), -1500)
        bad = {
            "no TYPE": "# HELP a_total x\na_total 1\n",
            "no HELP": "# TYPE a_total counter\na_total 1\n",
            "two HELP": "# HELP a x\n# HELP a y\n# TYPE a gauge\na 1\n",
            "two TYPE": "# HELP a x\n# TYPE a gauge\n# TYPE a gauge\na 1\n",
            "TYPE after samples": "# HELP a x\na 1\n# TYPE a gauge\n",
            "untyped": "# HELP a x\n# TYPE a untyped\na 1\n",
            "counter without _total": "# HELP a x\n# TYPE a counter\na 1\n",
            "bad name": "# HELP 1a x\n# TYPE 1a gauge\n1a 1\n",
            "bad label name": '# HELP a x\n# TYPE a gauge\na{1x="v"} 1\n',
            "reserved label": '# HELP a x\n# TYPE a gauge\na{__x="v"} 1\n',
            "bad escape": '# HELP a x\n# TYPE a gauge\na{x="\\q"} 1\n',
            "bare quote": '# HELP a x\n# TYPE a gauge\na{x="a"b"} 1\n',
            "unterminated": '# HELP a x\n# TYPE a gauge\na{x="ab} 1\n',
            "dup series": '# HELP a x\n# TYPE a gauge\na{x="1"} 1\na{x="1"} 2\n',
            "dup series, label order": ('# HELP a x\n# TYPE a gauge\na{x="1",y="2"} 1\n'
                                        'a{y="2",x="1"} 2\n'),
            "dup unlabelled": "# HELP a x\n# TYPE a gauge\na 1\na 2\n",
            "bad value": "# HELP a x\n# TYPE a gauge\na one\n",
            "no value": "# HELP a x\n# TYPE a gauge\na\n",
            "negative counter": "# HELP a_total x\n# TYPE a_total counter\na_total -1\n",
            "family split": ("# HELP a x\n# TYPE a gauge\n# HELP b x\n# TYPE b gauge\n"
                             "a 1\nb 1\na{x=\"1\"} 1\n"),
            "no final newline": "# HELP a x\n# TYPE a gauge\na 1",
            "empty line": "# HELP a x\n# TYPE a gauge\n\na 1\n",
            "bad HELP escape": "# HELP a x\\y\n# TYPE a gauge\na 1\n",
            "trailing comma": '# HELP a x\n# TYPE a gauge\na{x="1",} 1\n',
        }
        for what, text in bad.items():
            with self.assertRaises(ExpositionError, msg=what):
                parse_exposition(text)

    def test_counters_end_in_total(self):
        """Every counter, the per-slab-class ones included, ends in _total
        (Prometheus naming; OpenMetrics wants it)."""
        mc = self.mc(name="mc-total")
        px = self.proxy(mc.port, interval=100, name="proxy-total")
        try:
            with mctest.connect(px.port) as s:
                mctest.set_items(s, [(b"t", b"v")])
            mctest.wait_for(lambda: http_json(px.http_port, "GET", "/api/slabs")["classes"],
                            15, interval=0.05, what="a sample with a class")
            st, _, body = http_request(px.http_port, "GET", "/metrics")
            self.assertEqual(st, 200)
            parse_exposition(body.decode("utf-8"))  # strict: no exceptions
        finally:
            self.stop_clean(px)

    def test_metrics_format_and_counts(self):
        mc = self.mc(name="mc-metrics")
        px = self.proxy(mc.port, interval=100, name="proxy-metrics")
        hp = px.http_port
        st, hdrs, body = http_request(hp, "GET", "/metrics")
        self.assertEqual(st, 200)
        self.assertEqual(hdrs["content-type"], "text/plain; version=0.0.4; charset=utf-8")
        parse_metrics(body.decode("utf-8"))
        # known traffic: sets in three classes, gets, one delete
        plan = {100: 57, 1000: 23, 10000: 7}
        n_sets = sum(plan.values())
        with mctest.connect(px.port) as s:
            for size, count in plan.items():
                mctest.set_items(s, [(b"m:%d:%d" % (size, i), b"q" * size) for i in range(count)])
            s.sendall(b"get m:100:0\r\nget nope\r\n")
            mctest.recv_until(s, b"END\r\nEND\r\n")
            s.sendall(b"delete m:100:1\r\n")
            self.assertEqual(mctest.recv_line(s), b"DELETED\r\n")
        slabs = {}

        def loaded():
            j = http_json(hp, "GET", "/api/slabs")
            used = sum(c["fields"].get("used_chunks", 0) for c in j["classes"])
            if used == n_sets - 1:
                slabs.update({c["class_id"]: c for c in j["classes"]})
                return True
            return False
        mctest.wait_for(loaded, 15, interval=0.05, what="a stats sample after the load")
        st, hdrs, body = http_request(hp, "GET", "/metrics")
        self.assertEqual(st, 200)
        text = body.decode("utf-8")
        fams = parse_metrics(text)
        self.assertEqual(metric(fams, "slabtap_requests_by_command_total", command="set"), n_sets)
        self.assertEqual(metric(fams, "slabtap_requests_by_command_total", command="get"), 2)
        self.assertEqual(metric(fams, "slabtap_requests_by_command_total", command="delete"), 1)
        self.assertEqual(metric(fams, "slabtap_requests_write_total"), n_sets)
        self.assertEqual(metric(fams, "slabtap_requests_read_total"), 2)
        self.assertEqual(metric(fams, "slabtap_requests_total"), n_sets + 3)
        self.assertEqual(metric(fams, "slabtap_upstream_up"), 1)
        self.assertGreaterEqual(metric(fams, "slabtap_stats_samples_total"), 1)
        self.assertEqual(metric(fams, "slabtap_connections_accepted_total"), 1)
        # slabtap's own families are slabtap_*; per-class families that
        # memcached_exporter also exports carry its names (memcached_slab_*)
        for name, fam in fams.items():
            self.assertTrue(name.startswith("slabtap_") or name.startswith("memcached_"), name)
        self.assertEqual({n for n in fams if n.startswith("memcached_")},
                         {"memcached_slab_current_pages", "memcached_slab_current_chunks",
                          "memcached_slab_chunks_used", "memcached_slab_chunk_size_bytes",
                          "memcached_slab_mem_requested_bytes", "memcached_slab_current_items",
                          "memcached_slab_items_evicted_total"} | set(EXPORTER_FAMILIES))
        self.assertEqual(fams["memcached_slab_items_evicted_total"]["type"], "counter")
        # per-class families, labelled slab="N" (memcached_exporter's label),
        # matching memcached's numbers (class sets may differ by a sample;
        # compare with the same sample's numbers only through used_chunks
        # totals)
        used = fams["memcached_slab_chunks_used"]["samples"]
        self.assertTrue(used, "no per-class samples after load")
        classes = set()
        for key in used:
            labels = dict(key)
            self.assertEqual(list(labels), ["slab"])
            self.assertRegex(labels["slab"], r"^[1-9][0-9]*$")
            classes.add(int(labels["slab"]))
        self.assertEqual(sum(used.values()), n_sets - 1)
        in_use = {cid for cid, c in slabs.items() if c["fields"].get("used_chunks")}
        self.assertEqual(len(in_use), 3, slabs.keys())
        for fam in ("memcached_slab_current_pages", "memcached_slab_chunk_size_bytes",
                    "memcached_slab_mem_requested_bytes", "slabtap_slab_waste_bytes",
                    "memcached_slab_chunks_used", "memcached_slab_current_chunks",
                    "memcached_slab_current_items"):
            self.assertIn(fam, fams)
            self.assertEqual(fams[fam]["type"], "gauge", fam)
            got = {int(dict(k)["slab"]) for k in fams[fam]["samples"]}
            self.assertTrue(in_use <= got, "%s lacks classes %r" % (fam, in_use - got))
        for cid in in_use:
            chunk = metric(fams, "memcached_slab_chunk_size_bytes", slab=str(cid))
            u = metric(fams, "memcached_slab_chunks_used", slab=str(cid))
            req = metric(fams, "memcached_slab_mem_requested_bytes", slab=str(cid))
            waste = metric(fams, "slabtap_slab_waste_bytes", slab=str(cid))
            self.assertEqual(waste, chunk * u - req, cid)
            self.assertGreaterEqual(metric(fams, "memcached_slab_current_pages", slab=str(cid)), 1)
            self.assertEqual(metric(fams, "memcached_slab_current_items", slab=str(cid)), u)
            self.assertGreaterEqual(metric(fams, "memcached_slab_current_chunks", slab=str(cid)),
                                    u)
        self.stop_clean(px)
        n_rows = mctest.db_scalar(px.db, "SELECT count(*) FROM sets WHERE cmd = 'set'")
        self.assertEqual(n_rows, n_sets)


    def test_promtool_and_memcached_families(self):
        """Prometheus' own checker accepts a real scrape (exit 0, nothing
        said), with memcached up and down; the memcached-wide families under
        memcached_exporter's names equal memcached's own `stats`, read here
        directly and mapped as the exporter maps them; slabtap_db_file_bytes
        is the file and its WAL on disk, retention off."""
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool missing: apt-get install prometheus "
                             "(tests/run.sh installs it)")
        # 4 MB: the 100 KB items below evict each other
        mc = self.mc(name="mc-prom", extra=["-m", "4"])
        px = self.proxy(mc.port, interval=100, name="proxy-prom")

        def promtool_ok(body):
            p = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True,
                               timeout=60)
            self.assertEqual((p.returncode, p.stdout + p.stderr), (0, b""))

        with mctest.connect(px.port) as s:
            def ask(cmd, want):
                s.sendall(cmd)
                self.assertEqual(mctest.recv_line(s), want, cmd)
            ask(b"flush_all\r\n", b"OK\r\n")
            mctest.set_items(s, [(b"p:%d" % i, b"v" * 10) for i in range(20)])
            s.sendall(b"get p:0 p:1 p:2 nope\r\n")
            mctest.recv_until(s, b"END\r\n")
            ask(b"delete p:3\r\n", b"DELETED\r\n")
            ask(b"delete nope\r\n", b"NOT_FOUND\r\n")
            ask(b"set n 0 0 1\r\n5\r\n", b"STORED\r\n")
            ask(b"incr n 2\r\n", b"7\r\n")
            ask(b"incr nope 1\r\n", b"NOT_FOUND\r\n")
            ask(b"decr n 1\r\n", b"6\r\n")
            ask(b"decr nope 1\r\n", b"NOT_FOUND\r\n")
            ask(b"touch p:4 100\r\n", b"TOUCHED\r\n")
            ask(b"touch nope 100\r\n", b"NOT_FOUND\r\n")
            s.sendall(b"gets p:5\r\n")
            cas = int(mctest.recv_line(s).split()[4])
            self.assertEqual(mctest.recv_line(s), b"v" * 10 + b"\r\n")
            self.assertEqual(mctest.recv_line(s), b"END\r\n")
            ask(b"cas p:5 0 0 1 %d\r\nx\r\n" % cas, b"STORED\r\n")
            ask(b"cas p:5 0 0 1 %d\r\nx\r\n" % cas, b"EXISTS\r\n")
            ask(b"cas nope 0 0 1 1\r\nx\r\n", b"NOT_FOUND\r\n")
            big = b"b" * 100000
            for i in range(80):
                s.sendall(b"set big:%d 0 0 %d noreply\r\n" % (i, len(big)) + big + b"\r\n")
            ask(b"mn\r\n", b"MN\r\n")
        self.wait_samples(px, 2)  # a sample taken after the last answer
        stats = mctest.mc_stats(mc.port)
        st, _, body = http_request(px.http_port, "GET", "/metrics")
        self.assertEqual(st, 200)
        promtool_ok(body)
        fams = parse_metrics(body.decode("utf-8"))
        got = {(name, key): value for name in EXPORTER_FAMILIES
               for key, value in fams[name]["samples"].items()}
        self.assertEqual(got, exporter_families(stats))
        for name, want in EXPORTER_FAMILIES.items():
            self.assertEqual(fams[name]["type"], want, name)
        # and what that traffic makes of them (the mapping is not a no-op)
        cmds = {tuple(sorted(dict(k).items())): v
                for k, v in fams["memcached_commands_total"]["samples"].items()}
        for (command, status), n in {("get", "hit"): 4, ("get", "miss"): 1,
                                     ("delete", "hit"): 1, ("delete", "miss"): 1,
                                     ("incr", "hit"): 1, ("incr", "miss"): 1,
                                     ("decr", "hit"): 1, ("decr", "miss"): 1,
                                     ("touch", "hit"): 1, ("touch", "miss"): 1,
                                     ("cas", "hit"): 1, ("cas", "badval"): 1,
                                     ("cas", "miss"): 1, ("flush", "hit"): 1,
                                     ("set", "hit"): 20 + 1 + 80}.items():
            self.assertEqual(cmds[(("command", command), ("status", status))], n,
                             (command, status))
        self.assertEqual(metric(fams, "memcached_up"), 1)
        self.assertEqual(metric(fams, "memcached_limit_bytes"), 4 << 20)
        self.assertGreater(metric(fams, "memcached_items_evicted_total"), 0)
        # the SQLite file and its WAL, retention off (it was 0 then)
        on_disk, disk = mctest.db_file_bytes_settled(px)
        self.assertEqual(on_disk, disk)
        self.assertGreater(on_disk, 0)
        # memcached gone: up 0, the memcached-wide families without samples
        mc.stop()

        def down():
            st, _, body = http_request(px.http_port, "GET", "/metrics")
            f = parse_metrics(body.decode("utf-8"))
            return (f, body) if metric(f, "memcached_up") == 0 else None
        fams, body = mctest.wait_for(down, 15, interval=0.05, what="memcached_up 0")
        promtool_ok(body)
        for name in EXPORTER_FAMILIES:
            if name != "memcached_up":
                self.assertEqual(fams[name]["samples"], {}, name)
        self.stop_clean(px)


    def test_promtool_with_a_shadow(self):
        """A proxy with a shadow (--shadow "-f 1.08", issue 23): promtool
        accepts the scrape; every memcached_* family has a sample per
        target, target="primary" equal to memcached's own `stats` as the
        exporter maps it, target="-f 1.08" with the shadow's items (every
        set mirrored); the shadow's per-class pages equal its last sample
        (GET /api/slabs?target=), which differs from the primary's classes
        (another growth factor)."""
        promtool = shutil.which("promtool")
        self.assertIsNotNone(promtool, "promtool missing: apt-get install prometheus")
        mc = self.mc(name="mc-shadow", extra=["-m", "16"])
        px = self.proxy(mc.port, interval=100, name="proxy-shadow",
                        extra=["--shadow", "-f 1.08"])
        mctest.wait_for(lambda: self.health(px)["shadows"] and
                        self.health(px)["shadows"][0]["state"] == "up", 30, interval=0.05,
                        what="the shadow up")
        n = 400
        with mctest.connect(px.port) as s:
            mctest.set_items(s, [(b"s:%d" % i, b"v" * (50 + 7 * i)) for i in range(n)])
        tgt = frozenset({("target", "-f 1.08")})

        def scraped():
            st, _, body = http_request(px.http_port, "GET", "/metrics")
            self.assertEqual(st, 200)
            f = parse_metrics(body.decode("utf-8"))
            stats = mctest.mc_stats(mc.port)
            prim = {(k[0], k[1] | {("target", "primary")}): v
                    for k, v in exporter_families(stats).items()}
            got = {(name, key): value for name in EXPORTER_FAMILIES
                   for key, value in f[name]["samples"].items() if ("target", "primary") in key}
            ok = (f["memcached_current_items"]["samples"].get(tgt) == n and got == prim)
            return (f, body) if ok else None
        fams, body = mctest.wait_for(scraped, 30, interval=0.1,
                                     what="both targets' samples caught up")
        p = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True,
                           timeout=60)
        self.assertEqual((p.returncode, p.stdout + p.stderr), (0, b""))
        self.assertEqual(fams["memcached_up"]["samples"],
                         {frozenset({("target", "primary")}): 1, tgt: 1})
        # every family labelled: no sample without a target
        for name, fam in fams.items():
            if name.startswith("memcached_"):
                for key in fam["samples"]:
                    self.assertIn("target", dict(key), (name, key))

        def same_sample():
            a = mctest.http_json(px.http_port, "GET", "/api/slabs?target=-f%201.08")
            st, _, body = http_request(px.http_port, "GET", "/metrics")
            b = mctest.http_json(px.http_port, "GET", "/api/slabs?target=-f%201.08")
            return (a, parse_metrics(body.decode("utf-8"))) if a["t_ns"] == b["t_ns"] else None
        sl, fams = mctest.wait_for(same_sample, 30, interval=0.01, what="one shadow sample")
        self.assertEqual(sl["target"], "-f 1.08")
        self.assertEqual(sl["targets"], ["primary", "-f 1.08"])
        pages = {int(dict(k)["slab"]): v
                 for k, v in fams["memcached_slab_current_pages"]["samples"].items()
                 if ("target", "-f 1.08") in k}
        self.assertEqual(pages, {c["class_id"]: c["fields"]["total_pages"] for c in sl["classes"]
                                 if "total_pages" in c["fields"]})
        prim = {int(dict(k)["slab"]) for k in fams["memcached_slab_current_pages"]["samples"]
                if ("target", "primary") in k}
        self.assertNotEqual(set(pages), prim)
        st, _, _ = http_request(px.http_port, "GET", "/api/slabs?target=nope")
        self.assertEqual(st, 404)
        self.stop_clean(px)


class AdminGuard(mctest.ServerTestCase):
    """The admin endpoint answers only its own address (a page that renamed
    itself via DNS to point at us is refused), takes no cross-origin
    writes, honours --http-token, and never confirms a phase it drops."""
    workdir_prefix = "slabtap-guard-"
    health = StatsHttp.health

    def proxy(self, upstream_port, name="proxy", extra=()):
        return mctest.ServerTestCase.proxy(self, upstream_port, name=name, http=True,
                                           extra=["--stats-interval", "100"] + list(extra))

    wait_samples = StatsHttp.wait_samples

    def test_host_and_origin(self):
        mc = self.mc(name="mc-guard")
        px = self.proxy(mc.port, name="proxy-guard")
        host = "127.0.0.1:%d" % px.http_port
        st, _, _ = http_request(px.http_port, "GET", "/metrics", headers={"Host": host})
        self.assertEqual(st, 200)
        st, _, _ = http_request(px.http_port, "GET", "/metrics",
                                headers={"Host": "localhost:%d" % px.http_port})
        self.assertEqual(st, 200)
        st, _, body = http_request(px.http_port, "GET", "/api/runs",
                                   headers={"Host": "evil.example:%d" % px.http_port})
        self.assertEqual(st, 403, body)
        st, _, body = http_request(px.http_port, "POST", "/api/phase?name=x",
                                   headers={"Host": host, "Origin": "http://evil.example"})
        self.assertEqual(st, 403, body)
        st, _, body = http_request(px.http_port, "POST", "/api/phase?name=ok",
                                   headers={"Host": host, "Origin": "http://" + host})
        self.assertEqual(st, 200, body)
        self.stop_clean(px)
        self.assertEqual([r["name"] for r in mctest.db_rows(px.db, "SELECT name FROM phases")],
                         ["ok"])

    def test_token(self):
        mc = self.mc(name="mc-token")
        px = self.proxy(mc.port, name="proxy-token", extra=["--http-token", "s3cret"])
        st, _, _ = http_request(px.http_port, "GET", "/metrics")
        self.assertEqual(st, 401)
        st, _, _ = http_request(px.http_port, "GET", "/metrics",
                                headers={"Authorization": "Bearer wrong"})
        self.assertEqual(st, 401)
        st, _, _ = http_request(px.http_port, "GET", "/metrics",
                                headers={"Authorization": "Bearer s3cret"})
        self.assertEqual(st, 200)
        self.wait_samples(px, 1)
        self.health(px, want=200)  # probes need no token
        self.stop_clean(px)

    def test_beyond_loopback_needs_a_token(self):
        rc, out, err = mctest.run_slabtap(["proxy", "--upstream", "127.0.0.1:1", "--db",
                                           self.path("x.db"), "--http", "0.0.0.0:0",
                                           "--listen", "127.0.0.1:0"], timeout=30)
        self.assertEqual(rc, 1, err)
        self.assertIn("--http-token is required", err)
        # refused before anything was opened: not even the database
        self.assertFalse(os.path.exists(self.path("x.db")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
