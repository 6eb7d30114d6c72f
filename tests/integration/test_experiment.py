#!/usr/bin/python3
"""test_experiment: `slabtap experiment SPEC.exp` end to end, against the
memcached on PATH, with small fixtures from tests/data/exp_*.

1. A tiny two-run experiment (one fixed-size plan under -f 1.25 and -f 1.08,
   gate=model on both, same-plan-as on the second): exit 0, every gate line,
   the CSV exports with their headers and numbers computed here from
   memcached's ladder (class 12 of the default ladder: used_chunks 3000,
   waste (1184 - 945) / 1184), the runs / run_meta / samples rows, and no
   memcached left behind (the runner's process group is empty, pgrep of the
   fixture's marker flags shows nothing new, the ports it used are closed).
2. same-plan-as over two different workloads: exit 1, GATE FAILED on stderr
   (the other gates pass, and the over(12) run's rows are checked too).
3. Spec errors (unknown directive, run without workload=, same-plan-as naming
   no earlier run, a missing workload, a workload that does not parse): exit
   1 with `file:line:` and before any memcached starts; a bad flag exits 2
   with usage; --help exits 0.
4. memcached refusing its flags (-f 0.5): exit 1, the error names the flags.
5. SIGINT while a 2,000,000-set run is going: exit 130 within seconds, the
   run's row ended and every write memcached stored recorded, the next run
   never started; also SIGINT right as the run starts (before the load).
6. --docker with no engine: a clear error, non-zero, nothing left running.
7. The README's experiments: experiments/run.sh takes ~50 s, so instead every
   experiments/*.exp parses (its runs reach "start memcached"), every
   experiments/*.wl passes `slabtap load --dry-run`, and the runs of each
   same-plan-as pair (exp2's growth factors) share a dry-run fingerprint.

Needs memcached on PATH and $SLABTAP; $SLABTAP_SRC is the repo root (see
mctest.py). Binds 127.0.0.1 only; every wait is bounded.
"""
import csv
import json
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

SLABTAP = mctest.SLABTAP
SRC = mctest.SRC
DATA = mctest.DATA
EXPERIMENTS = os.path.join(SRC, "experiments")
# the fixtures' memcacheds carry `-c MARKER` (1021..1027), for pgrep
MARKERS = tuple(str(m) for m in range(1021, 1028))

WASTE_HEADER = ["class_id", "chunk_size", "used_chunks", "mem_requested", "allocated",
                "waste_bytes", "waste_pct"]
PAIR_HEADER = ["run", "growth_factor", "classes_in_ladder", "classes_in_use", "items",
               "mem_requested", "allocated", "waste_bytes", "waste_pct", "global_bytes"]


# --- memcached's arithmetic, written out independently of slab_model.c ------

def ladder(factor=1.25, chunk_size=48, page=1024 * 1024, chunk_max=None):
    """Chunk sizes of classes 1..N, as memcached 1.6's slabs_init builds them:
    48-byte item header + -n, 8-aligned, times the factor (truncated to an
    unsigned int) until chunk_max / factor, then a last class of chunk_max."""
    chunk_max = chunk_max or page // 2
    sizes, size, i = [], 48 + chunk_size, 0
    while True:
        i += 1
        if i >= 63 or size >= chunk_max / factor:
            break
        if size % 8:
            size += 8 - size % 8
        sizes.append(size)
        size = int(size * factor)
    sizes.append(chunk_max)
    return sizes


ntotal = mctest.ntotal  # (key_len, value_len, flags=0, cas=True)


def class_of(lad, total):
    """(class id, chunk size) of the first class whose chunk holds total."""
    for i, c in enumerate(lad):
        if c >= total:
            return i + 1, c
    raise AssertionError("%d bytes fit no class" % total)


# --- processes ----------------------------------------------------------------

def group_pids(pgid):
    """Live processes (not zombies) of process group pgid."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            pids.append(int(d))
    return pids


def marked_memcacheds(marker):
    """{pid: command line} of memcacheds whose command line carries `-c MARKER`."""
    p = subprocess.run(["pgrep", "-af", r"memcached .*-c %s( |$)" % marker],
                       capture_output=True, timeout=10, text=True)
    return dict(line.split(" ", 1) for line in p.stdout.splitlines() if " " in line)


def pgid_of(pid):
    try:
        return os.getpgid(int(pid))
    except OSError:
        return None


def listener_pids(port):
    """pids of the processes listening on 127.0.0.1:port (from /proc): a
    port the runner released may be taken at once by anyone else on the
    machine (a concurrent test), which is no leftover of the runner's."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add("socket:[%s]" % cols[9])
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir("/proc/%s/fd" % pid)
            if any(os.readlink("/proc/%s/fd/%s" % (pid, fd)) in inodes for fd in fds):
                pids.append(int(pid))
        except OSError:
            continue
    return pids


def used_ports(err):
    """The memcached ports the runner announced (`== run NAME: ... -p PORT`)."""
    return [int(m.group(1)) for m in re.finditer(r"^== run \S+: .* -p (\d+) ", err, re.M)]


def mc_stats(port):
    return mctest.mc_stats(port, timeout=2)


class Runner(mctest.Process):
    """One `slabtap experiment` in its own session (self.pgid), stdout and
    stderr in files (a memcached left behind would hold a pipe open
    forever)."""

    def __init__(self, args, workdir, cwd=None, name="experiment"):
        mctest.Process.__init__(self, [SLABTAP, "experiment"] + list(args),
                                os.path.join(workdir, name + ".err"), env=mctest.slabtap_env(),
                                outpath=os.path.join(workdir, name + ".out"), cwd=cwd)
        self.pgid = self.pid

    def text(self, which):
        return self.stdout_text() if which == "out" else self.stderr_text()

    def leftovers(self):
        """Processes the runner left in its group: none, or they get killed
        and reported."""
        left = group_pids(self.pgid)
        if not left:
            return []
        desc = []
        for pid in left:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    desc.append("%d: %s" % (pid, f.read().replace(b"\0", b" ").decode()))
            except OSError:
                pass
        self.kill_group()
        return desc


class ExperimentTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-exp-"

    def setUp(self):
        super().setUp()
        self.tmp = self.w.path
        self.runners = []
        self.addCleanup(self._kill_runners)  # runs before the directory goes

    def _kill_runners(self):
        for r in self.runners:  # safety net: nothing of ours outlives a test
            if r.p.poll() is None or group_pids(r.pgid):
                r.kill_group()
            r.kill_hard()  # closes its files

    def start(self, spec_or_args, db=None, results=None, extra=(), cwd=None, name="experiment"):
        args = [spec_or_args] if isinstance(spec_or_args, str) else list(spec_or_args)
        if db is not False:
            args += ["--db", db or os.path.join(self.tmp, "runs.db")]
        if results is not False:
            args += ["--results", results or os.path.join(self.tmp, "results")]
        before = {m: marked_memcacheds(m) for m in MARKERS}
        r = Runner(args + list(extra), self.tmp, cwd=cwd, name=name)
        r.before = before
        self.runners.append(r)
        return r

    def finish(self, r, timeout):
        """(rc, stdout, stderr) once r exits; fails on a sanitizer report or on
        any memcached it left running."""
        rc = r.wait(timeout)
        out, err = r.text("out"), r.text("err")
        err_rc = "exit %s; stderr:\n%s" % (rc, err[-3000:])
        self.assertEqual(mctest.sanitizer_errors(err), [], "sanitizer report:\n" + err[-6000:])
        self.assertEqual(r.leftovers(), [], "left running by the runner; " + err_rc)
        ports = used_ports(err)
        for m in MARKERS:
            # new since the start, and this runner's: in its group or on one
            # of its ports (a concurrent copy of this test has others)
            new = {pid: cmd for pid, cmd in marked_memcacheds(m).items()
                   if pid not in r.before[m] and (pgid_of(pid) == r.pgid or any(
                       re.search(r" -p %d( |$)" % port, cmd) for port in ports))}
            self.assertEqual(new, {}, "memcached -c %s still running" % m)
        for port in ports:
            if mctest.port_open(port):
                mine = [p for p in listener_pids(port) if pgid_of(p) == r.pgid]
                self.assertEqual(mine, [], "port %d still accepts connections" % port)
        return rc, out, err

    def run_exp(self, spec, timeout=60, **kw):
        return self.finish(self.start(spec, **kw), timeout)

    def no_memcached_started(self, err):
        self.assertNotIn("== run", err, "a run started despite the spec error")
        self.assertEqual(used_ports(err), [])

    def read_csv(self, path):
        self.assertTrue(os.path.exists(path), path + " was not written")
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        self.assertGreater(len(rows), 0, path + " is empty")
        return rows[0], [dict(zip(rows[0], r)) for r in rows[1:]]


# --- 1. a tiny experiment, end to end ---------------------------------------------

# exp_tiny.wl: 3000 items of 876-byte values and 1000 of 50, 10-byte keys, no
# flags; 100 of the small ones deleted, 500 noreply rewrites of 250 big ones.
TINY_KEY = 10
TINY_GROUPS = [(ntotal(TINY_KEY, 876), 3000), (ntotal(TINY_KEY, 50), 900)]
TINY_WRITES, TINY_OPS = 3000 + 1000 + 500, 3000 + 1000 + 100 + 500 + 300


class TinyExperiment(ExperimentTest):
    def expected_classes(self, factor):
        lad = ladder(factor)
        by_class = {}
        for total, n in TINY_GROUPS:
            cid, chunk = class_of(lad, total)
            c = by_class.setdefault(cid, {"chunk": chunk, "used": 0, "req": 0})
            c["used"] += n
            c["req"] += n * total
        return lad, by_class

    def check_waste_csv(self, path, factor):
        header, rows = self.read_csv(path)
        self.assertEqual(header, WASTE_HEADER)
        lad, want = self.expected_classes(factor)
        classes = {int(r["class_id"]): r for r in rows if r["class_id"].isdigit()}
        self.assertEqual(sorted(classes), sorted(want), "classes in use, -f %s" % factor)
        tot_used = tot_req = tot_alloc = 0
        for cid, w in want.items():
            r = classes[cid]
            alloc = w["used"] * w["chunk"]
            self.assertEqual(int(r["chunk_size"]), w["chunk"], "class %d chunk" % cid)
            self.assertEqual(int(r["used_chunks"]), w["used"], "class %d used_chunks" % cid)
            self.assertEqual(int(r["mem_requested"]), w["req"], "class %d mem_requested" % cid)
            self.assertEqual(int(r["allocated"]), alloc)
            self.assertEqual(int(r["waste_bytes"]), alloc - w["req"])
            self.assertAlmostEqual(float(r["waste_pct"]), 100.0 * (alloc - w["req"]) / alloc,
                                   delta=0.0051, msg="class %d waste_pct" % cid)
            tot_used += w["used"]
            tot_req += w["req"]
            tot_alloc += alloc
        total = [r for r in rows if r["class_id"] == "TOTAL"]
        glob = [r for r in rows if r["class_id"] == "global_bytes"]
        self.assertEqual(len(total), 1)
        self.assertEqual(len(glob), 1)
        self.assertEqual(int(total[0]["used_chunks"]), tot_used)
        self.assertEqual(int(total[0]["mem_requested"]), tot_req)
        self.assertEqual(int(total[0]["allocated"]), tot_alloc)
        self.assertAlmostEqual(float(total[0]["waste_pct"]),
                               100.0 * (tot_alloc - tot_req) / tot_alloc, delta=0.0051)
        self.assertEqual(int(glob[0]["mem_requested"]), tot_req, "memcached's bytes")
        return lad, want, classes

    def test_tiny_experiment(self):
        spec = os.path.join(DATA, "exp_tiny.exp")
        results = os.path.join(self.tmp, "results")  # does not exist yet
        db = os.path.join(self.tmp, "runs.db")
        rc, out, err = self.run_exp(spec, db=db, results=results, timeout=80)
        self.assertEqual(rc, 0, "stdout:\n%s\nstderr:\n%s" % (out, err[-4000:]))
        self.assertEqual(len(used_ports(err)), 2, err)

        # the gates, each on its own line
        for run in ("tiny_f1_25", "tiny_f1_08"):
            self.assertRegex(out, r"(?m)^gate ok +%s +every write recorded: %d rows = %d writes"
                             % (run, TINY_WRITES, TINY_WRITES))
            self.assertRegex(out, r"(?m)^gate ok +%s +slab model predicts every class exactly"
                             % run)
        self.assertRegex(out, r"(?m)^gate ok +tiny_f1_08 +same workload as tiny_f1_25")
        self.assertNotIn("GATE FAILED", out + err)

        # the exports: the default ladder's worst case, by hand
        default = ladder(1.25)
        self.assertEqual((default[10], default[11], len(default)), (944, 1184, 39))
        self.assertEqual(ntotal(TINY_KEY, 876), 945)
        for name in ("tiny_f1_25.csv", "tiny_f1_08.csv", "tiny_pair.csv"):
            self.assertIn("wrote %s" % os.path.join(results, name), out)
        _, _, rows = self.check_waste_csv(os.path.join(results, "tiny_f1_25.csv"), 1.25)
        self.assertEqual(int(rows[12]["used_chunks"]), 3000)
        self.assertAlmostEqual(float(rows[12]["waste_pct"]), 100.0 * (1184 - 945) / 1184,
                               delta=0.0051)
        lad108, want108, _ = self.check_waste_csv(os.path.join(results, "tiny_f1_08.csv"), 1.08)

        header, pair = self.read_csv(os.path.join(results, "tiny_pair.csv"))
        self.assertEqual(header, PAIR_HEADER)
        self.assertEqual([r["run"] for r in pair], ["tiny_f1_25", "tiny_f1_08"])
        for r, factor, lad in ((pair[0], 1.25, default), (pair[1], 1.08, lad108)):
            _, want = self.expected_classes(factor)
            alloc = sum(w["used"] * w["chunk"] for w in want.values())
            req = sum(w["req"] for w in want.values())
            self.assertAlmostEqual(float(r["growth_factor"]), factor)
            self.assertEqual(int(r["classes_in_ladder"]), len(lad))
            self.assertEqual(int(r["classes_in_use"]), len(want))
            self.assertEqual(int(r["items"]), sum(w["used"] for w in want.values()))
            self.assertEqual(int(r["mem_requested"]), req)
            self.assertEqual(int(r["allocated"]), alloc)
            self.assertEqual(int(r["waste_bytes"]), alloc - req)
            self.assertAlmostEqual(float(r["waste_pct"]), 100.0 * (alloc - req) / alloc,
                                   delta=0.0051)
            self.assertEqual(int(r["global_bytes"]), req)
        # a finer ladder wastes less on the same items
        self.assertLess(float(pair[1]["waste_pct"]), float(pair[0]["waste_pct"]))

        # the database
        rc, fp_out, fp_err = mctest.run_slabtap(["load", "--dry-run", "--workload",
                                                 os.path.join(DATA, "exp_tiny.wl")], timeout=60)
        self.assertEqual(rc, 0, fp_err)
        dry_fp = re.search(r"fingerprint:\s+([0-9a-f]{64})", fp_out).group(1)
        version = subprocess.run(["memcached", "-V"], capture_output=True, text=True,
                                 timeout=10).stdout.split()[1]
        self.assertEqual(version, "1.6.18")
        with sqlite3.connect(db) as con:
            runs = con.execute("SELECT run_id, name, started_ns, ended_ns, rows_dropped "
                               "FROM runs ORDER BY run_id").fetchall()
            self.assertEqual([r[1] for r in runs], ["tiny_f1_25", "tiny_f1_08"])
            for run_id, name, started, ended, dropped in runs:
                self.assertIsNotNone(ended, name + ": runs.ended_ns")
                self.assertGreaterEqual(ended, started)
                self.assertEqual(dropped, 0)
                meta = dict(con.execute("SELECT key, value FROM run_meta WHERE run_id = ?",
                                        (run_id,)).fetchall())
                self.assertEqual(meta.get("memcached_version"), version, meta)
                self.assertRegex(meta.get("workload_sha256", ""), r"^[0-9a-f]{64}$")
                self.assertEqual(meta["workload_sha256"], dry_fp, "live vs dry-run fingerprint")
                self.assertEqual(meta["writes_sent"], str(TINY_WRITES))
                self.assertEqual(meta["ops_sent"], str(TINY_OPS))
                self.assertEqual(meta["seed"], "7")
                self.assertTrue(meta["workload"].endswith("exp_tiny.wl"), meta["workload"])
                flags = "-m 64 -c 1021" if name == "tiny_f1_25" else "-m 64 -f 1.08 -c 1021"
                self.assertEqual(meta["memcached_flags"], flags)
                self.assertIn(flags + " -p ", meta["memcached_command"])
                self.assertIn("-l 127.0.0.1", meta["memcached_command"])
                port = int(re.search(r" -p (\d+)", meta["memcached_command"]).group(1))
                self.assertIn(port, used_ports(err))
                n = con.execute("SELECT count(*), sum(value_len IS NOT NULL), "
                                "sum(cmd = 'delete') FROM sets WHERE run_id = ?",
                                (run_id,)).fetchone()
                self.assertEqual(n, (TINY_WRITES + 100, TINY_WRITES, 100))
                phases = [p[0] for p in con.execute(
                    "SELECT name FROM phases WHERE run_id = ? ORDER BY phase_id", (run_id,))]
                self.assertEqual(phases, ["big", "small", "rewrite"])
                final = con.execute("SELECT json_extract(stats, '$.curr_items') FROM samples "
                                    "WHERE run_id = ? AND final = 1", (run_id,)).fetchall()
                self.assertEqual(final, [(3900,)], name + ": one final sample")


# --- 2. a same-plan-as gate that fails --------------------------------------------

class SamePlanGate(ExperimentTest):
    def test_different_workloads_fail_the_gate(self):
        db = os.path.join(self.tmp, "runs.db")
        rc, out, err = self.run_exp(os.path.join(DATA, "exp_plan_mismatch.exp"), db=db,
                                    timeout=60)
        self.assertEqual(rc, 1, "stdout:\n%s\nstderr:\n%s" % (out, err[-4000:]))
        self.assertRegex(err, r"(?m)^GATE FAILED plan_fill: workload fingerprint [0-9a-f]{16} "
                              r"differs from plan_over's [0-9a-f]{16}")
        self.assertEqual(err.count("GATE FAILED"), 1, err)
        for run in ("plan_over", "plan_fill"):
            self.assertRegex(out, r"(?m)^gate ok +%s +every write recorded: 2000 rows" % run)
            self.assertRegex(out, r"(?m)^gate ok +%s +slab model predicts" % run)
        # over(12) from the live ladder: every item one byte over class 11
        lad = ladder(1.25)
        with sqlite3.connect(db) as con:
            rid = con.execute("SELECT run_id FROM runs WHERE name = 'plan_over'").fetchone()[0]
            vals = con.execute("SELECT DISTINCT key_len, value_len FROM sets WHERE run_id = ?",
                               (rid,)).fetchall()
            self.assertEqual(vals, [(10, lad[10] + 1 - ntotal(10, 0))])
            fps = {n: fp for n, fp in con.execute(
                "SELECT r.name, m.value FROM runs r JOIN run_meta m USING (run_id) "
                "WHERE m.key = 'workload_sha256'")}
        self.assertEqual(len(fps), 2)
        self.assertNotEqual(fps["plan_over"], fps["plan_fill"])
        header, rows = self.read_csv(os.path.join(self.tmp, "results", "plan_over.csv"))
        self.assertEqual(header, WASTE_HEADER)
        self.assertEqual(rows[0]["class_id"], "12")
        self.assertEqual(int(rows[0]["used_chunks"]), 2000)
        self.assertAlmostEqual(float(rows[0]["waste_pct"]), 100.0 * (1184 - 945) / 1184,
                               delta=0.0051)


# --- 3. spec errors, usage ------------------------------------------------------------

class SpecErrors(ExperimentTest):
    def spec_error(self, fixture, pattern):
        spec = os.path.join(DATA, fixture)
        rc, out, err = self.run_exp(spec, timeout=30)
        self.assertEqual(rc, 1, "%s: stderr:\n%s" % (fixture, err))
        self.assertRegex(err, pattern)
        self.no_memcached_started(err)
        self.assertEqual(out, "")
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "runs.db")),
                         "a spec error must not touch the database")
        return err

    def test_unknown_directive(self):
        self.spec_error("exp_bad_directive.exp",
                        r"(?m)^\S*exp_bad_directive\.exp:3: unknown directive.*'runs'")

    def test_run_without_workload(self):
        self.spec_error("exp_bad_no_workload.exp",
                        r"(?m)^\S*exp_bad_no_workload\.exp:4: run needs workload=")

    def test_same_plan_as_no_earlier_run(self):
        self.spec_error("exp_bad_same_plan.exp",
                        r"(?m)^\S*exp_bad_same_plan\.exp:2: same-plan-as names no earlier "
                        r"run 'second'")

    def test_missing_workload_file(self):
        self.spec_error("exp_bad_missing_wl.exp",
                        r"(?m)^\S*exp_bad_missing_wl\.exp:4: .*exp_no_such_file\.wl.*"
                        r"No such file")

    def test_workload_syntax_error(self):
        err = self.spec_error("exp_bad_syntax.exp",
                              r"(?m)^\S*exp_bad_syntax\.wl:6: unknown size 'fil\(12\)'")
        self.assertRegex(err, r"(?m)^\S*exp_bad_syntax\.exp:4: ")

    def test_spec_file_missing(self):
        rc, out, err = self.run_exp(os.path.join(self.tmp, "nope.exp"), timeout=30)
        self.assertEqual(rc, 1)
        self.assertIn("nope.exp", err)
        self.no_memcached_started(err)

    def test_bad_db_or_results_fail_before_any_run(self):
        """Found before memcached starts, not after every run has finished."""
        spec = os.path.join(DATA, "exp_tiny.exp")
        rc, out, err = self.run_exp(spec, db=os.path.join(self.tmp, "no", "such", "dir", "r.db"),
                                    timeout=30)
        self.assertEqual(rc, 1, err)
        self.assertIn("--db: ", err)
        self.no_memcached_started(err)
        blocker = os.path.join(self.tmp, "afile")
        open(blocker, "w").close()
        rc, out, err = self.run_exp(spec, results=os.path.join(blocker, "res"), timeout=30)
        self.assertEqual(rc, 1, err)
        self.assertIn("--results: ", err)
        self.no_memcached_started(err)

    def test_usage(self):
        spec = os.path.join(DATA, "exp_tiny.exp")
        for args in (["--bogus", spec], [], ["--stats-interval", "1", spec]):
            r = self.start(args, db=False, results=False, name="usage")
            rc, out, err = self.finish(r, 30)
            self.assertEqual(rc, 2, "%s: %s" % (args, err))
            self.assertIn("see: slabtap experiment --help", err)
            self.no_memcached_started(err)
        r = self.start(["--help"], db=False, results=False, name="help")
        rc, out, err = self.finish(r, 30)
        self.assertEqual(rc, 0, err)
        self.assertIn("usage: slabtap experiment", out)
        self.assertIn("--stats-interval", out)


# --- 4. memcached refuses its flags ----------------------------------------------------

class RefusedFlags(ExperimentTest):
    def test_memcached_refuses_flags(self):
        rc, out, err = self.run_exp(os.path.join(DATA, "exp_refused.exp"), timeout=30)
        self.assertEqual(rc, 1, err)
        self.assertRegex(err, r"run refused: .*exited with status \d+ before answering "
                              r"\(flags: -f 0\.5 -c 1027\)")
        self.assertNotIn("gate ok", out)


# --- 5. SIGINT ----------------------------------------------------------------------------

class Interrupt(ExperimentTest):
    def wait_for_run(self, r, name, timeout=30):
        """The port of run `name`'s memcached once the runner announced it."""
        deadline = time.monotonic() + timeout
        pat = re.compile(r"^== run %s: .* -p (\d+) " % name, re.M)
        while time.monotonic() < deadline:
            m = pat.search(r.text("err"))
            if m:
                return int(m.group(1))
            if r.p.poll() is not None:
                break
            time.sleep(0.01)
        r.kill_group()
        raise AssertionError("run %s never started; stderr:\n%s" % (name, r.text("err")))

    def check_interrupted_db(self, db, stored_at_least=0):
        with sqlite3.connect(db) as con:
            runs = con.execute("SELECT run_id, name, ended_ns, rows_recorded FROM runs").fetchall()
            self.assertEqual([r[1] for r in runs], ["sig_flood"], "sig_never must not start")
            run_id, _, ended, recorded = runs[0]
            self.assertIsNotNone(ended, "runs.ended_ns of the interrupted run")
            n, stored = con.execute("SELECT count(*), sum(answer = 'STORED') FROM sets "
                                    "WHERE run_id = ?", (run_id,)).fetchone()
            self.assertEqual(n, recorded, "rows_recorded vs rows in sets")
            self.assertLess(n, 2000000, "the run was not interrupted")
            self.assertGreaterEqual(stored or 0, stored_at_least)
            final = con.execute("SELECT json_extract(stats, '$.total_items') FROM samples "
                                "WHERE run_id = ? AND final = 1", (run_id,)).fetchall()
            if n:
                # every write memcached stored is recorded, after the Ctrl-C too
                self.assertEqual(final, [(stored,)], "final sample vs STORED rows")
        return n

    def test_sigint_during_the_load(self):
        db = os.path.join(self.tmp, "runs.db")
        r = self.start(os.path.join(DATA, "exp_sigint.exp"), db=db)
        port = self.wait_for_run(r, "sig_flood")
        # the load is running once memcached has items
        mctest.wait_for(lambda: int(mc_stats(port).get("total_items", 0)) >= 2000,
                                30, interval=0.05, what="items in memcached")
        t = time.monotonic()
        r.p.send_signal(signal.SIGINT)  # the runner only, not its group
        rc, out, err = self.finish(r, 30)
        took = time.monotonic() - t
        self.assertEqual(rc, 130, err[-3000:])
        self.assertLess(took, 5.0, "exit after SIGINT took %.1f s" % took)
        self.assertIn("signal 2", err)
        self.assertNotIn("== run sig_never", err)
        self.assertFalse(mctest.port_open(port))
        n = self.check_interrupted_db(db, stored_at_least=2000)
        self.assertGreaterEqual(n, 2000)

    def test_sigint_as_the_run_starts(self):
        # the window between memcached answering and the load starting: a
        # signal there must still stop everything, memcached included
        db = os.path.join(self.tmp, "runs.db")
        r = self.start(os.path.join(DATA, "exp_sigint.exp"), db=db)
        port = self.wait_for_run(r, "sig_flood")
        t = time.monotonic()
        r.p.send_signal(signal.SIGINT)
        rc, out, err = self.finish(r, 30)
        self.assertEqual(rc, 130, err[-3000:])
        self.assertLess(time.monotonic() - t, 5.0)
        self.assertNotIn("== run sig_never", err)
        self.assertFalse(mctest.port_open(port))
        self.check_interrupted_db(db)


# --- 6. --docker without an engine -----------------------------------------------------

def docker_engine_up():
    try:
        return subprocess.run(["docker", "info"], capture_output=True,
                              timeout=15).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class Docker(ExperimentTest):
    def test_docker_without_engine(self):
        if docker_engine_up():
            self.skipTest("a docker engine answers here; this test is for machines without one")
        with open(os.path.join(SRC, "docker", "memcached.image")) as f:
            image = f.read().strip()
        spec = os.path.join(DATA, "exp_docker.exp")
        # from the repo root the runner finds docker/memcached.image itself;
        # from elsewhere it is given with --image
        for extra, cwd in (([], SRC), (["--image", image], self.tmp)):
            r = self.start([spec, "--docker"] + extra, cwd=cwd, name="docker")
            rc, out, err = self.finish(r, 60)
            self.assertNotEqual(rc, 0, err)
            self.assertNotEqual(rc, 2, "not a usage error: " + err)
            # found before any run starts: no memcached, no run row
            self.assertIn("--docker: no Docker engine answers", err)
            self.assertNotIn("== run dock", err)
            self.assertNotIn("gate ok", out)
            self.assertEqual(group_pids(r.pgid), [])


# --- 7. the README's experiments, without running them ------------------------------

LADDER_FLAGS = {"-m": "-m", "-f": "-f", "-n": "-n", "-I": "-I"}


def dry_run_flags(mc_flags):
    """The `slabtap load --dry-run` ladder flags of a memcached command line."""
    words, out, i = shlex.split(mc_flags), [], 0
    while i < len(words):
        w = words[i]
        if w in LADDER_FLAGS and i + 1 < len(words):
            out += [LADDER_FLAGS[w], words[i + 1]]
            i += 2
            continue
        if w == "-C":
            out.append("--no-cas")
        elif w == "-o" and i + 1 < len(words):
            for opt in words[i + 1].split(","):
                k, _, v = opt.partition("=")
                if k == "slab_chunk_max":
                    out += ["--slab-chunk-max", v]
            i += 1
        i += 1
    return out


def parse_spec(path):
    """Independent reading of a spec: runs (name, flags, workload, options)
    and exports; AssertionError on anything the format does not allow."""
    runs, exports = [], []
    base = os.path.dirname(path)
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            words = shlex.split(line, comments=True)
            if not words:
                continue
            where = "%s:%d" % (path, lineno)
            if words[0] == "run":
                run = {"name": words[1], "line": lineno, "memcached": "", "gate_model": False,
                       "same_plan_as": None, "workload": None}
                for w in words[2:]:
                    k, _, v = w.partition("=")
                    if k == "memcached":
                        run["memcached"] = v
                    elif k == "workload":
                        run["workload"] = os.path.join(base, v)
                    elif w == "gate=model":
                        run["gate_model"] = True
                    elif k == "items":
                        run["items"] = int(v)
                    elif k == "same-plan-as":
                        if v not in [r["name"] for r in runs]:
                            raise AssertionError(where + ": same-plan-as " + v)
                        run["same_plan_as"] = v
                    else:
                        raise AssertionError(where + ": run option " + w)
                if not run["workload"] or not os.path.isfile(run["workload"]):
                    raise AssertionError(where + ": workload " + str(run["workload"]))
                runs.append(run)
            elif words[0] == "export":
                exp = {"file": words[1], "line": lineno}
                for w in words[2:]:
                    k, _, v = w.partition("=")
                    if k not in ("query", "run", "a", "b"):
                        raise AssertionError(where + ": export option " + w)
                    exp[k] = os.path.join(base, v) if k == "query" else v
                if not os.path.isfile(exp.get("query", "")):
                    raise AssertionError(where + ": query " + str(exp.get("query")))
                exports.append(exp)
            elif words[0] == "chart":
                opts = dict(w.partition("=")[::2] for w in words[2:])
                for k in opts:
                    if k not in ("kind", "from", "x", "y", "series", "skip", "names", "title",
                                 "xlabel"):
                        raise AssertionError(where + ": chart option " + k)
                for f in opts["from"].split(","):
                    if f not in [e["file"] for e in exports]:
                        raise AssertionError(where + ": chart from " + f)
            else:
                raise AssertionError(where + ": directive " + words[0])
    names = [r["name"] for r in runs]
    if len(set(names)) != len(names):
        raise AssertionError(path + ": run names repeat")
    for e in exports:
        for k in ("run", "a", "b"):
            if k in e and e[k] not in names:
                raise AssertionError("%s:%d: %s=%s names no run" % (path, e["line"], k, e[k]))
    return runs, exports


def dry_run(workload, flags=()):
    rc, out, err = mctest.run_slabtap(["load", "--dry-run", "--workload", workload] + list(flags),
                                      timeout=120)
    m = re.search(r"(?m)^fingerprint:\s+([0-9a-f]{64})$", out)
    ops = re.search(r"(?m)^ops:\s+(\d+)$", out)
    return rc, m and m.group(1), ops and int(ops.group(1)), out + err


class ReadmeExperiments(ExperimentTest):
    def specs(self):
        specs = sorted(os.path.join(EXPERIMENTS, f) for f in os.listdir(EXPERIMENTS)
                       if f.endswith(".exp"))
        self.assertGreaterEqual(len(specs), 3, "experiments/*.exp")
        return specs

    def test_every_spec_parses(self):
        missing = os.path.join(self.tmp, "no-such-memcached")
        for spec in self.specs():
            runs, exports = parse_spec(spec)
            self.assertTrue(runs, spec)
            self.assertTrue(exports, spec)
            # the runner reads the whole spec and every workload before the
            # first run, which then gets as far as starting memcached
            r = self.start([spec, "--memcached", missing], name=os.path.basename(spec))
            rc, out, err = self.finish(r, 60)
            self.assertEqual(rc, 1, err)
            self.assertNotRegex(err, r"\.(exp|wl):\d+:", spec + ": a spec or workload error")
            self.assertIn("run %s: cannot start %s" % (runs[0]["name"], missing), err)
            self.no_memcached_started(err)

    def test_every_workload_dry_runs(self):
        wls = sorted(os.path.join(EXPERIMENTS, f) for f in os.listdir(EXPERIMENTS)
                     if f.endswith(".wl"))
        self.assertGreaterEqual(len(wls), 4)
        used = {os.path.realpath(r["workload"]) for s in self.specs() for r in parse_spec(s)[0]}
        for wl in wls:
            rc, fp, ops, text = dry_run(wl)
            self.assertEqual(rc, 0, text)
            self.assertTrue(fp and ops, text)
            self.assertIn(os.path.realpath(wl), used, wl + " is used by no spec")

    def test_same_plan_pairs_share_a_fingerprint(self):
        pairs, fps = 0, {}
        for spec in self.specs():
            runs = {r["name"]: r for r in parse_spec(spec)[0]}
            for r in runs.values():
                # every run's workload also dry-runs under its own ladder
                rc, fp, ops, text = dry_run(r["workload"], dry_run_flags(r["memcached"]))
                self.assertEqual(rc, 0, "%s run %s: %s" % (spec, r["name"], text))
                r["fp"] = fps[r["name"]] = fp
            for r in runs.values():
                if r["same_plan_as"]:
                    other = runs[r["same_plan_as"]]
                    self.assertEqual(r["fp"], other["fp"], "%s: %s vs %s"
                                     % (spec, r["name"], other["name"]))
                    pairs += 1
        self.assertGreaterEqual(pairs, 2, "exp2 and exp3 both pair their runs")
        # exp2 specifically: -f 1.25 and -f 1.08 send the very same plan...
        exp2 = {r["name"]: r for r in
                parse_spec(os.path.join(EXPERIMENTS, "exp2_growth_factor.exp"))[0]}
        a, b = exp2["exp2_f1_25"], exp2["exp2_f1_08"]
        self.assertEqual(b["same_plan_as"], "exp2_f1_25")
        self.assertIn("-f", dry_run_flags(b["memcached"]))
        self.assertEqual(fps["exp2_f1_25"], fps["exp2_f1_08"])
        # ...which means something: a ladder-relative plan (exp1's over(12))
        # does change with the growth factor
        worst = os.path.join(EXPERIMENTS, "exp1_worst.wl")
        fa = dry_run(worst, dry_run_flags(a["memcached"]))[1]
        fb = dry_run(worst, dry_run_flags(b["memcached"]))[1]
        self.assertTrue(fa and fb)
        self.assertNotEqual(fa, fb)


# --- 8. the reference harness's knobs, charts, progress ------------------------------

KNOB_WL = """connections 2
pipeline 32
seed 5
phase load
set 3000 key=knb:{i:6} size=876
"""
KNOB_SPEC = """run knob_a memcached="-m 64 -c 1022" workload=knob.wl gate=model items=3000
run knob_b memcached="-m 64 -f 1.08 -c 1022" workload=knob.wl gate=model items=3000 same-plan-as=knob_a
export knob_a.csv query=%(q)s/exp_waste.sql run=knob_a
export knob_b.csv query=%(q)s/exp_waste.sql run=knob_b
export knob_pair.csv query=%(q)s/exp2_growth_factor.sql a=knob_a b=knob_b
export knob_timeline.csv query=%(q)s/pages_timeline.sql run=knob_a
chart knob_waste.svg kind=bars from=knob_a.csv,knob_b.csv x=class_id skip=TOTAL,global_bytes y="waste_bytes:wasted bytes,waste_pct:waste <%%> & \'co\'" title="a <title> & more"
chart knob_pair.svg kind=bars from=knob_pair.csv names="one series" x=growth_factor y="classes_in_ladder:classes,waste_pct:waste"
chart knob_timeline.svg kind=lines from=knob_timeline.csv series=class_id x=seconds y="total_pages:pages,used_chunks:used chunks"
"""


def svg_values(path):
    """{(panel title, series): [(x or category, data-value)]} of one SVG,
    which must parse as XML."""
    import xml.etree.ElementTree as ET
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.parse(path).getroot()
    out = {}
    for panel in root.iter(ns + "g"):
        if panel.get("class") != "panel":
            continue
        title = panel.find(ns + "text").text or ""
        for g in panel.iter(ns + "g"):
            if g.get("class") != "series":
                continue
            pts = out.setdefault((title, g.get("data-series")), [])
            for el in g:
                if el.get("data-value") is not None:
                    pts.append((el.get("data-category", el.get("data-x")), el.get("data-value")))
    return root, out


class Knobs(ExperimentTest):
    def write_knob_spec(self):
        d = os.path.join(self.tmp, "spec")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "knob.wl"), "w") as f:
            f.write(KNOB_WL)
        with open(os.path.join(d, "knob.exp"), "w") as f:
            f.write(KNOB_SPEC % {"q": os.path.join(SRC, "schema", "queries")})
        return os.path.join(d, "knob.exp")

    def start_env(self, spec, env, **kw):
        from unittest import mock
        with mock.patch.dict(os.environ, env):
            return self.start(spec, **kw)

    def check_items(self, n, rc, out, err, results):
        self.assertEqual(rc, 0, err[-3000:])
        for run in ("knob_a", "knob_b"):
            self.assertRegex(out, r"(?m)^gate ok +%s +memcached holds the %d items of items=%d$"
                             % (run, n, n))
            self.assertRegex(out, r"(?m)^gate ok +%s +every write recorded: %d rows = %d writes"
                             % (run, n, n))
            _, rows = self.read_csv(os.path.join(results, run + ".csv"))
            # -f 1.25: class 12 (1184-byte chunks); -f 1.08: another, same items
            if run == "knob_a":
                self.assertEqual(rows[0]["class_id"], "12")
            self.assertEqual(int(rows[0]["used_chunks"]), n)
            self.assertEqual(int(rows[0]["mem_requested"]), n * ntotal(10, 876))
        self.assertRegex(out, r"(?m)^gate ok +knob_b +same workload as knob_a")
        db = os.path.join(self.tmp, "runs.db")
        self.assertEqual(mctest.db_rows(db, "SELECT value FROM run_meta WHERE key = 'items' "
                                            "ORDER BY run_id"), [{"value": str(n)}] * 2)

    def test_n_items_env_and_flag(self):
        spec = self.write_knob_spec()
        res = os.path.join(self.tmp, "r1")
        rc, out, err = self.finish(self.start_env(spec, {"N_ITEMS": "1234"}, results=res), 90)
        self.check_items(1234, rc, out, err, res)
        os.unlink(os.path.join(self.tmp, "runs.db"))
        res = os.path.join(self.tmp, "r2")  # the flag wins over the environment
        rc, out, err = self.finish(self.start_env(spec, {"N_ITEMS": "1234"}, results=res,
                                                  extra=["--items", "777"]), 90)
        self.check_items(777, rc, out, err, res)
        os.unlink(os.path.join(self.tmp, "runs.db"))
        res = os.path.join(self.tmp, "r3")  # neither: the spec's own count
        rc, out, err = self.finish(self.start_env(spec, {"N_ITEMS": ""}, results=res), 90)
        self.check_items(3000, rc, out, err, res)

    def test_bad_items(self):
        spec = self.write_knob_spec()
        r = self.start_env(spec, {"N_ITEMS": "lots"})
        rc, out, err = self.finish(r, 30)
        self.assertEqual(rc, 2, err)
        self.assertIn("N_ITEMS", err)
        # items= that no set line of the workload has: a spec error, nothing starts
        with open(spec) as f:
            text = f.read()
        with open(spec, "w") as f:
            f.write(text.replace("items=3000", "items=2999", 1))
        rc, out, err = self.run_exp(spec)
        self.assertEqual(rc, 1, err)
        self.assertRegex(err, r"knob\.exp:1: run knob_a: items=2999: the workload has no "
                              r"`set 2999 \.\.\.` line")
        self.no_memcached_started(err)

    def test_charts_match_the_csvs(self):
        spec = self.write_knob_spec()
        res = os.path.join(self.tmp, "results")
        rc, out, err = self.run_exp(spec, timeout=90)
        self.assertEqual(rc, 0, err[-3000:])
        for name in ("knob_waste", "knob_pair", "knob_timeline"):
            self.assertRegex(out, r"(?m)^wrote \S*/%s\.svg \(chart of " % name)
        root, vals = svg_values(os.path.join(res, "knob_waste.svg"))
        self.assertEqual(root.find("{http://www.w3.org/2000/svg}title").text, "a <title> & more")
        for run in ("knob_a", "knob_b"):
            _, rows = self.read_csv(os.path.join(res, run + ".csv"))
            rows = [r for r in rows if r["class_id"] not in ("TOTAL", "global_bytes")]
            self.assertEqual(vals[("wasted bytes", run)],
                             [(r["class_id"], r["waste_bytes"]) for r in rows])
            self.assertEqual(vals[("waste <%> & 'co'", run)],
                             [(r["class_id"], r["waste_pct"]) for r in rows])
        _, vals = svg_values(os.path.join(res, "knob_pair.svg"))
        _, rows = self.read_csv(os.path.join(res, "knob_pair.csv"))
        self.assertEqual(vals[("classes", "one series")],
                         [(r["growth_factor"], r["classes_in_ladder"]) for r in rows])
        self.assertEqual(vals[("waste", "one series")],
                         [(r["growth_factor"], r["waste_pct"]) for r in rows])
        _, vals = svg_values(os.path.join(res, "knob_timeline.svg"))
        _, rows = self.read_csv(os.path.join(res, "knob_timeline.csv"))
        self.assertGreater(len(rows), 0)
        for cls in set(r["class_id"] for r in rows):
            mine = [r for r in rows if r["class_id"] == cls]
            self.assertEqual(vals[("pages", cls)], [(r["seconds"], r["total_pages"]) for r in mine])
            self.assertEqual(vals[("used chunks", cls)],
                             [(r["seconds"], r["used_chunks"]) for r in mine])
        # same data, same bytes: the charts again from the same database
        # would need the runs again; the unit test checks determinism

    def external(self, flags):
        mc = mctest.Memcached(self.tmp, extra=flags.split())
        self.addCleanup(mc.kill_hard)
        return mc

    def test_external_memcached_with_matching_flags(self):
        mc = self.external("-m 64 -c 1022")
        pid = mc_pid = mctest.mc_stats(mc.port)["pid"]
        spec = os.path.join(self.tmp, "one.exp")
        os.makedirs(os.path.join(self.tmp, "spec"), exist_ok=True)
        with open(os.path.join(self.tmp, "knob.wl"), "w") as f:
            f.write(KNOB_WL)
        with open(spec, "w") as f:
            f.write('run ext memcached="-m 64 -c 1022" workload=knob.wl gate=model items=3000\n')
        r = self.start_env(spec, {"MC_HOST": "127.0.0.1", "MC_PORT": str(mc.port)})
        rc, out, err = self.finish(r, 60)
        self.assertEqual(rc, 0, err[-3000:])
        self.assertRegex(err, r"(?m)^== run ext: external memcached \S+ at 127\.0\.0\.1:%d "
                              r"\(not started by slabtap\)$" % mc.port)
        self.assertRegex(out, r"(?m)^gate ok +ext +slab model predicts every class exactly")
        self.assertTrue(mc.alive(), "the external memcached was stopped")
        st = mctest.mc_stats(mc.port)
        self.assertEqual(st["pid"], pid, "restarted")
        self.assertEqual(int(st["curr_items"]), 3000)
        self.assertEqual(mc_pid, pid)
        # the same server again: it has stored items now, so it is refused
        # (slabtap cannot restart it, and the figures would count them)
        os.unlink(os.path.join(self.tmp, "runs.db"))
        rc, out, err = self.run_exp(spec, extra=["--upstream", "127.0.0.1:%d" % mc.port])
        self.assertEqual(rc, 1, err)
        self.assertRegex(err, r"run ext refused: the memcached at 127\.0\.0\.1:%d has stored "
                              r"3000 items since it started" % mc.port)
        self.assertEqual(mctest.mc_stats(mc.port)["pid"], pid)

    def test_external_memcached_with_other_flags_is_refused(self):
        mc = self.external("-m 64 -f 1.08 -c 1022")
        with open(os.path.join(self.tmp, "knob.wl"), "w") as f:
            f.write(KNOB_WL)
        spec = os.path.join(self.tmp, "one.exp")
        with open(spec, "w") as f:
            f.write('run ext memcached="-m 64 -c 1022" workload=knob.wl\n')
        rc, out, err = self.run_exp(spec, extra=["--upstream", "127.0.0.1:%d" % mc.port])
        self.assertEqual(rc, 1, err)
        self.assertIn("run ext refused: the memcached at 127.0.0.1:%d was not started with the "
                      "run's flags \"-m 64 -c 1022\": growth_factor is 1.08, the run needs 1.25 "
                      "(default -f 1.25). slabtap cannot restart a memcached it did not start"
                      % mc.port, err)
        self.assertNotIn("== run", err)
        self.assertEqual(int(mctest.mc_stats(mc.port)["total_items"]), 0, "it was written to")
        self.assertTrue(mc.alive())
        # a flag stats settings cannot confirm is refused too, never guessed
        with open(spec, "w") as f:
            f.write('run ext memcached="-m 64 -f 1.08 -c 1022 -R 5" workload=knob.wl\n')
        rc, out, err = self.run_exp(spec, extra=["--upstream", "127.0.0.1:%d" % mc.port])
        self.assertEqual(rc, 1, err)
        self.assertIn("cannot check -R against stats settings", err)
        # nobody there: a clear error
        with mctest.reserve_port() as free:
            rc, out, err = self.run_exp(spec, extra=["--upstream", "127.0.0.1:%d" % free.port])
        self.assertEqual(rc, 1, err)
        self.assertIn("no memcached answers there", err)

    def run_with_stderr(self, spec, tty, timeout=60):
        """(rc, stderr bytes) of one runner whose stderr is a pty or a pipe."""
        import pty
        import select
        args = [SLABTAP, "experiment", spec, "--db", os.path.join(self.tmp, "p.db"),
                "--results", os.path.join(self.tmp, "pres")]
        if tty:
            master, slave = pty.openpty()
        else:
            master, slave = os.pipe()
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL,
                             env=mctest.slabtap_env(), start_new_session=True)
        os.close(slave)
        data, deadline = b"", time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 0.5)
                if ready:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:  # pty closed
                        break
                    if not chunk:
                        break
                    data += chunk
                elif p.poll() is not None:
                    break
            rc = p.wait(timeout=max(1, deadline - time.monotonic()))
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            os.close(master)
        return rc, data

    def test_page_served_while_a_run_runs(self):
        """--http: each run's proxy serves the admin endpoint (the live page)
        while it runs, so exp3's pages can be watched moving."""
        with open(os.path.join(self.tmp, "slow.wl"), "w") as f:
            f.write("phase fill\nset 20000 key=pg:{i:6} size=100\nphase wait\nsleep 3000\n")
        spec = os.path.join(self.tmp, "slow.exp")
        with open(spec, "w") as f:
            f.write('run watched memcached="-m 64" workload=slow.wl\n')
        admin = mctest.reserve_port()  # held while the proxies bind it (SO_REUSEADDR)
        self.addCleanup(admin.release)
        port = admin.port
        r = self.start(spec, extra=["--http", "127.0.0.1:%d" % port])
        seen = {}

        def current():
            try:
                st, _, body = mctest.http_request(port, "GET", "/api/runs", timeout=2)
            except OSError:
                return False
            if st == 200:
                seen.update(json.loads(body)["current"])
            return seen.get("name") == "watched"
        mctest.wait_for(current, 30, what="the run's admin endpoint")
        st, hdrs, body = mctest.http_request(port, "GET", "/")
        self.assertEqual(st, 200)
        self.assertIn(b"<html", body.lower())
        rc, out, err = self.finish(r, 60)
        self.assertEqual(rc, 0, err[-3000:])
        self.assertIn("gate ok", out)

    def test_progress_only_on_a_terminal(self):
        with open(os.path.join(self.tmp, "slow.wl"), "w") as f:
            f.write("phase fill\nset 20000 key=sl:{i:6} size=100\nphase wait\nsleep 800\n")
        spec = os.path.join(self.tmp, "slow.exp")
        with open(spec, "w") as f:
            f.write('run slow memcached="-m 64 -c 1023" workload=slow.wl\n')
        rc, data = self.run_with_stderr(spec, tty=True)
        self.assertEqual(rc, 0, data[-3000:])
        lines = re.findall(rb"\r== slow  phase (\S+)  (\d+)/20000 ops([^\r\n\x1b]*)", data)
        self.assertGreater(len(lines), 1, data[-3000:])
        self.assertIn((b"wait", b"20000"), [(ph, n) for ph, n, _ in lines])
        self.assertTrue(any(b"ETA" in rest for _, _, rest in lines) or
                        all(n == b"20000" for _, n, _ in lines), lines)
        os.unlink(os.path.join(self.tmp, "p.db"))
        rc, data = self.run_with_stderr(spec, tty=False)
        self.assertEqual(rc, 0, data[-3000:])
        self.assertNotIn(b"\r", data)
        self.assertNotIn(b"ops", data.replace(b"ops_", b""))
        self.assertIn(b"== run slow", data)


if __name__ == "__main__":
    unittest.main(verbosity=2)
