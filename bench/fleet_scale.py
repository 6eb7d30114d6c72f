#!/usr/bin/python3
"""fleet_scale: what recording a fleet into ONE PostgreSQL costs, per recording
mode, and how the fleet views' query time grows with nodes and days.

    bench/fleet_scale.py                      # load phase + view grid (~30 min here)
    bench/fleet_scale.py --smoke              # both phases, tiny (ctest: 189 s under ASan here)
    bench/fleet_scale.py --no-views           # the load phase only
    bench/fleet_scale.py --no-load --view-nodes 1,10 --view-days 1,7
    SLABTAP=build/slabtap bench/fleet_scale.py   # a build without sanitizers

One throwaway PostgreSQL (tests/integration/pgcluster.py; fsync off -- a
local server on 2 shared cores, the disk is not what is measured -- and
full_page_writes on, so WAL bytes are what a real server writes).

Load phase (docs/fleet.md, "Scale"): per recording mode, a database of its
own, one memcached (preloaded directly with 20,000 sets, so every mode's
stats samples carry the same slab classes) and --nodes real `slabtap proxy
--db postgresql://... --node node-I --reads off` processes in front of it,
each driven by its own open-loop `slabtap load --rate R` (sets only, 16 key
prefixes, values uniform 20..4000 bytes: several slab classes), all at once
for --seconds. Modes, one after the other:

  idle     the proxies run --seconds and are sent nothing: a node's fixed
           cost (its stats sample every second), per node-second
  rows     every write is a row (the default recording)
  sampled  --sample-keys 1/N: the rows of one key in N (plus the write
           aggregates, where the build writes them to PostgreSQL)
  aggs     aggregates only (--sample-keys none, where the build's
           `proxy --help` names it; else skipped, and said so)

Per mode, between a snapshot taken once the proxies are idle and one taken
after they exited: PostgreSQL's CPU (the postmaster, its live children and
the children it reaped: /proc utime+stime+cutime+cstime), WAL bytes
(pg_current_wal_insert_lsn, cluster-wide: modes never overlap), disk
bytes (pg_total_relation_size of every table of the mode's database:
partitions, TOAST and indexes included), network bytes both ways on the
proxies' TCP connections to PostgreSQL (ss -ti: bytes_received +
bytes_sent), the slabtap writer thread's CPU (the proxy thread other than
the event loop with the most CPU) and the whole proxies' CPU, read once no
proxy's CPU has moved for a second (every writer has committed). Printed
per write, less what idle cost per node-second over the mode's window: the
marginal cost of a write; with the aggregate upserts per write
(pg_stat_user_tables: n_tup_ins + n_tup_upd of agg_*). rows/s: rows stored
/ (load start .. the last writer's last CPU movement); lag: how long after
the last answer that was. Then, on paper, --fleet-nodes nodes at
--fleet-rate writes/s each (default 100 x 50,000): per-write cost x
writes/s + the idle cost per node-second x nodes, per mode.

View phase: per day count D in --view-days, a database whose schema one
short real proxy run creates (its rows become the template and are then
removed), then synthetic history INSERT ... SELECT generate_series straight
into the real tables: per node and day one run (ended), --writes-per-day
writes in that day's partition of `writes` (the template's rows, run and
time shifted), a stats sample every --sample-every seconds with the
template's last `stats` and per-class rows, the template's settings (one
node in 10 with another growth_factor, so fleet_settings_diff has rows),
run_meta, and the template's aggregate rows (agg_* tables, when the build
has them: the template run's minute of them --agg-copies times per node and
day, minute/second shifted into the day). Nodes are added 1 -> 10 -> 50 -> 100 in the same
database, ANALYZEd after each step, and every view named fleet_* is timed:
EXPLAIN (ANALYZE, TIMING OFF) planning + execution time, best of 3 (one
run when it takes over 10 s).

No figure is asserted: this is a benchmark. --smoke checks only that every
number was produced (and, mode rows, that every write sent is a row).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import mctest  # noqa: E402
import pgcluster  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
NS_DAY = 86400 * 10**9
PREFIXES = 16
KEYS = 1000000
FLAT_OUT = 50000
PRELOAD = 20000
# the template run: enough writes that a minute of its aggregates holds
# nearly every size the workload draws (as a minute of a busy node does)
TEMPLATE_WRITES = 20000


# ------------------------------------------------------------------ /proc

def _stat_fields(path):
    """Fields of /proc/.../stat after the command name (field 3 is [0])."""
    with open(path) as f:
        text = f.read()
    return text[text.rindex(")") + 2:].split()


def _cpu_once(postmaster_pid):
    """(ticks of the postmaster with its reaped children, ticks of its live
    children, the postmaster's cutime+cstime)."""
    f = _stat_fields("/proc/%d/stat" % postmaster_pid)
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(postmaster_pid)],
                         capture_output=True, text=True).stdout
    live = 0
    for pid in out.split():
        try:
            c = _stat_fields("/proc/%s/stat" % pid)
        except OSError:
            return None  # exited while we looked: look again
        live += int(c[11]) + int(c[12])
    return sum(int(x) for x in f[11:15]), live, int(f[13]) + int(f[14])


def pg_cpu_seconds(postmaster_pid, tries=50):
    """CPU of PostgreSQL so far: the postmaster (with the children it reaped:
    cutime, cstime) and every live child (backends, checkpointer, walwriter,
    autovacuum). Read again while a child is reaped during the reading (its
    CPU would be in neither sum, or in both)."""
    for _ in range(tries):
        one = _cpu_once(postmaster_pid)
        if one is None:
            continue
        after = _stat_fields("/proc/%d/stat" % postmaster_pid)
        if int(after[13]) + int(after[14]) == one[2]:
            return (one[0] + one[1]) / TICK
        time.sleep(0.05)
    die("PostgreSQL's processes never held still long enough to be read")


def wait_backends_gone(pg, db, timeout=60):
    """Until no session is connected to db (the proxies' backends have exited
    and been reaped, so their CPU is in the postmaster's cutime)."""
    deadline = time.monotonic() + timeout
    while int(pg.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = '%s'" % db,
                        db="postgres")):
        if time.monotonic() > deadline:
            die("sessions on %s still open %d s after the proxies exited" % (db, timeout))
        time.sleep(0.1)
    time.sleep(0.2)


def thread_cpu(pid):
    """{tid: CPU seconds} of process pid's threads."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            f = _stat_fields("/proc/%d/task/%s/stat" % (pid, tid))
        except OSError:
            continue
        out[int(tid)] = (int(f[11]) + int(f[12])) / TICK
    return out


def writers_idle_cpu(proxies, timeout=120):
    """[(writer thread CPU s, whole proxy CPU s, monotonic time its CPU last
    moved or None)] once no proxy's CPU has moved for a second (each writer
    has committed what it was given; a stats poll costs less than a tick).
    The writer is the thread other than the event loop with the most CPU."""
    last = [None] * len(proxies)
    moved = [None] * len(proxies)
    still = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        cpus = [thread_cpu(px.pid) for px in proxies]
        now = time.monotonic()
        busy = False
        for i, cpu in enumerate(cpus):
            total = sum(cpu.values())
            if last[i] is not None and total - last[i] >= 0.015:
                busy, moved[i] = True, now
            last[i] = total
        still = 0 if busy else still + 1
        if still >= 5:
            break
        time.sleep(0.25)
    out = []
    for px, cpu, m in zip(proxies, cpus, moved):
        others = [v for t, v in cpu.items() if t != px.pid]
        out.append(((max(others) if others else 0.0), sum(cpu.values()), m))
    return out


def pg_net_bytes(port):
    """Bytes the clients' TCP connections to PostgreSQL on port carried so
    far, both ways (ss -ti on the server's side: bytes_received + bytes_sent)."""
    out = subprocess.run(["ss", "-tinH", "state", "established", "( sport = :%d )" % port],
                         capture_output=True, text=True).stdout
    return sum(int(n) for n in re.findall(r"\bbytes_(?:received|sent):(\d+)", out))


# ------------------------------------------------------------------ helpers

def die(msg):
    raise SystemExit("fleet_scale: " + msg)


def proxy_help():
    return subprocess.run([mctest.SLABTAP, "proxy", "--help"], capture_output=True,
                          text=True).stdout


def aggs_only_flag(helptext):
    """--sample-keys none (aggregates only) when the build's --help names
    it, else None (a build from before PostgreSQL aggregates)."""
    if re.search(r"--sample-keys 1/N\|none\b", helptext):
        return ["--sample-keys", "none"]
    return None


def write_workload(path, count, seed):
    with open(path, "w") as f:
        f.write("# fleet_scale: sets only, %d prefixes, values 20..4000 bytes\n"
                "connections 2\npipeline 16\nseed %d\n"
                "set %d key=p{rand:%d:2}:{rand:%d} size=uniform(20,4000)\n"
                % (PREFIXES, seed, count, PREFIXES, KEYS))


def table_bytes(pg, db):
    """{group: bytes} over every table of the public schema (partitions,
    TOAST and indexes included): writes, reads, agg, other."""
    rows = pg.psql("""
        SELECT CASE WHEN c.relname LIKE 'writes%' THEN 'writes'
                    WHEN c.relname IN ('read_log', 'get_counts') THEN 'reads'
                    WHEN c.relname LIKE 'agg%' THEN 'agg' ELSE 'other' END,
               sum(pg_total_relation_size(c.oid))
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'm') GROUP BY 1""", db=db)
    out = {"writes": 0, "reads": 0, "agg": 0, "other": 0}
    out.update({k: int(v) for k, v in rows})
    return out


def agg_tuples(pg, db):
    """Rows inserted or updated in the agg_* tables so far (pg_stat: each
    aggregate upsert is one or the other)."""
    return int(pg.scalar("SELECT coalesce(sum(n_tup_ins + n_tup_upd), 0) FROM "
                         "pg_stat_user_tables WHERE relname LIKE 'agg%'", db=db))


def wal_lsn(pg):
    return pg.scalar("SELECT pg_current_wal_insert_lsn()", db="postgres")


def wal_bytes(pg, a, b):
    return int(pg.scalar("SELECT pg_wal_lsn_diff('%s', '%s')" % (b, a), db="postgres"))


def run_load(port, workload, rate):
    argv = [mctest.SLABTAP, "load", "--target", "127.0.0.1:%d" % port,
            "--workload", workload, "-q"]
    if rate:
        argv += ["--rate", str(rate)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True)


def load_result(p, timeout):
    out, _ = p.communicate(timeout=timeout)
    if p.returncode:
        die("slabtap load failed:\n" + out)
    ops = None
    for line in out.splitlines():
        m = re.match(r"ops:\s+(\d+)", line)
        if m:
            ops = int(m.group(1))
    if ops is None:
        die("no op count in slabtap load's output:\n" + out)
    return ops


# ------------------------------------------------------------------ load phase

def measure_mode(pg, wd, mode, flags, a):
    """Totals of one mode's run (mode idle: the proxies run --seconds and
    are sent nothing); window: seconds between the two snapshots."""
    db = "fleet_" + mode
    pg.psql("CREATE DATABASE %s" % db, db="postgres")
    uri = pg.uri(db=db)
    # --rate 0: as fast as answers allow, FLAT_OUT sets a second's worth per second asked
    count = (a.rate or FLAT_OUT) * a.seconds
    mc = mctest.Memcached(wd, extra=["-m", "2048", "-t", "1"], name="mc-" + mode)
    proxies = []
    try:
        # memcached holds the workload's classes before any proxy polls it,
        # so every mode's stats samples (idle's too) carry the same classes
        pre = os.path.join(wd, "preload.wl")
        write_workload(pre, PRELOAD, 1)
        load_result(run_load(mc.port, pre, 0), timeout=300)
        for i in range(a.nodes):
            proxies.append(mctest.Proxy(
                wd, mc.port, db=uri, keys="prefix", name="%s-node-%d" % (mode, i),
                extra=["--node", "node-%d" % i, "--reads", "off", "-q",
                       "--spill", os.path.join(wd, "spill-%s-%d.db" % (mode, i))] + flags))
        wls = []
        for i in range(a.nodes):
            wl = os.path.join(wd, "node-%d.wl" % i)
            write_workload(wl, count, 1000 + i)
            wls.append(wl)
        pg.psql("CHECKPOINT", db="postgres")
        pxcpu0 = writers_idle_cpu(proxies, timeout=10)
        size0 = table_bytes(pg, db)
        lsn0 = wal_lsn(pg)
        net0 = pg_net_bytes(pg.port)
        cpu0 = pg_cpu_seconds(pg.proc.pid)
        t0 = time.monotonic()
        if mode == "idle":
            time.sleep(a.seconds)
            sent = 0
        else:
            loads = [run_load(px.port, wl, a.rate) for px, wl in zip(proxies, wls)]
            sent = sum(load_result(p, timeout=a.seconds * 20 + 120) for p in loads)
        t_sent = time.monotonic() - t0
        pxcpu1 = writers_idle_cpu(proxies)
        net1 = pg_net_bytes(pg.port)
        t_stored = max([c[2] - t0 for c in pxcpu1 if c[2]] + [t_sent])
        for px in proxies:
            rc = px.stop(timeout=300)
            if rc != 0:
                die("proxy exit %r:\n%s" % (rc, px.stderr_text()[-3000:]))
        # what the mode leaves to autovacuum is done now, in its window (a
        # later mode's window would get it otherwise)
        pg.psql("VACUUM ANALYZE", db=db, timeout=1200)
        wait_backends_gone(pg, db)
        cpu1 = pg_cpu_seconds(pg.proc.pid)
        window = time.monotonic() - t0
        lsn1 = wal_lsn(pg)
        size1 = table_bytes(pg, db)
        time.sleep(0.6)  # the exited backends' table statistics reach pg_stat
        upserts = agg_tuples(pg, db)
    finally:
        for px in proxies:
            px.kill_hard()
        mc.stop()
    stored = int(pg.scalar("SELECT count(*) FROM writes", db=db))
    # every write counted once in the aggregates, the prefix ones too (--keys prefix)
    counted = [int(pg.scalar("SELECT coalesce(sum(writes), 0) FROM %s" % t, db=db))
               for t in ("agg_sizes", "agg_prefixes")]
    grew = {k: size1[k] - size0[k] for k in size1}
    return {"mode": mode, "flags": " ".join(flags), "sent": sent, "stored": stored,
            "secs_sent": t_sent, "secs": t_stored, "window": window,
            "pg_cpu": cpu1 - cpu0, "wal": wal_bytes(pg, lsn0, lsn1), "net": net1 - net0,
            "disk": sum(grew.values()), "grew": grew, "upserts": upserts, "counted": counted,
            "writer": sum(y[0] - x[0] for x, y in zip(pxcpu0, pxcpu1)),
            "proxy": sum(y[1] - x[1] for x, y in zip(pxcpu0, pxcpu1))}


COSTS = ("pg_cpu", "wal", "net", "disk", "writer", "proxy")


def per_write(r, idle, a):
    """r's costs per write sent, less what the idle run cost per node-second
    over r's window (the stats samples every node writes whatever its load)."""
    out = {}
    for k in COSTS:
        fixed = idle[k] / idle["window"] * r["window"] if idle else 0.0
        out[k] = (r[k] - fixed) / r["sent"]
    return out


def md_table(hdr, rows):
    """A markdown table: hdr, then each row (a sequence of cells as text)."""
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for r in rows:
        print("| " + " | ".join(r) + " |")


def print_fleet(res, idle, a):
    """The arithmetic for --fleet-nodes nodes at --fleet-rate writes/s each:
    per-write cost x writes/s + a node's fixed cost x nodes."""
    w_s = a.fleet_nodes * a.fleet_rate
    node_s = idle["window"] * a.nodes
    fixed = {k: idle[k] / node_s * a.fleet_nodes for k in COSTS}
    print("\n%d nodes x %d writes/s = %d writes/s, on paper (per-write cost as measured "
          "above x writes/s + fixed cost per node-second x nodes):"
          % (a.fleet_nodes, a.fleet_rate, w_s))
    rows = []
    for r in res:
        if r["mode"] == "idle":
            continue
        w = per_write(r, idle, a)
        f = {k: w[k] * w_s + fixed[k] for k in COSTS}
        rows.append([r["mode"], "%.1f" % f["pg_cpu"], "%.0f" % (f["disk"] * 86400 / 1e9),
                     "%.0f" % (f["wal"] / 1e6), "%.0f" % (f["net"] / 1e6),
                     "%.2f" % (w["writer"] * a.fleet_rate), "%.2f" % (w["proxy"] * a.fleet_rate)])
    md_table(("mode", "PG CPU cores", "disk GB/day", "WAL MB/s", "network MB/s",
              "writer cores/node", "proxy cores/node"), rows)


def print_modes(res, a):
    idle = next((r for r in res if r["mode"] == "idle"), None)
    print("\nLoad: %d nodes (proxies), each open-loop %d sets/s for %d s, one PostgreSQL"
          % (a.nodes, a.rate, a.seconds))
    if idle:
        print("\nA node's fixed cost (mode idle: proxies recording nothing but their stats "
              "samples, --stats-interval 1s), per node-second:")
        ns = idle["window"] * a.nodes
        print("  PG CPU %.2f ms, WAL %.0f B, disk %.0f B, network %.0f B, proxy CPU %.2f ms"
              % (1e3 * idle["pg_cpu"] / ns, idle["wal"] / ns, idle["disk"] / ns,
                 idle["net"] / ns, 1e3 * idle["proxy"] / ns))
    print("\nPer write%s:" % (" (the idle cost of the run's window taken off)" if idle else ""))
    rows = []
    for r in res:
        if r["mode"] == "idle":
            continue
        w = per_write(r, idle, a)
        rows.append([r["mode"] + (" (%s)" % r["flags"] if r["flags"] else ""), "%d" % r["sent"],
                     "%.0f" % (r["sent"] / r["secs_sent"]), "%d" % r["stored"],
                     "%.0f" % (r["stored"] / r["secs"]), "%.1f" % (r["secs"] - r["secs_sent"]),
                     "%.2f" % (r["upserts"] / r["sent"]), "%.2f" % (1e6 * w["pg_cpu"]),
                     "%.2f" % (1e6 * w["writer"]), "%.2f" % (1e6 * w["proxy"]),
                     "%.1f" % w["disk"], "%.1f" % w["wal"], "%.1f" % w["net"]])
    md_table(("mode", "writes", "writes/s", "rows", "rows/s", "lag s", "agg upserts",
              "PG CPU us", "writer CPU us", "proxy CPU us", "disk B", "WAL B", "net B"), rows)
    if idle:
        print_fleet(res, idle, a)
    print("\nRaw totals:")
    for r in res:
        print("  %s: %s" % (r["mode"], json.dumps({k: (round(v, 3) if isinstance(v, float)
                                                       else v) for k, v in r.items()})))


# ------------------------------------------------------------------ view phase

def columns(pg, db, table):
    return [r[0] for r in pg.psql(
        "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' "
        "AND table_name = '%s' ORDER BY ordinal_position" % table, db=db)]


def run_tables(pg, db):
    """Tables of the public schema with a run_id column, runs excepted."""
    return [r[0] for r in pg.psql(
        "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t"
        " USING (table_schema, table_name) WHERE c.table_schema = 'public' AND"
        " t.table_type = 'BASE TABLE' AND c.column_name = 'run_id' AND c.table_name <> 'runs'"
        " AND c.table_name NOT LIKE 'writes\\_%' ORDER BY 1", db=db)]


def make_template(pg, wd, db, a):
    """A short real run into db (the schema), kept in schema bench as the
    template, then removed from the public tables."""
    pg.psql("CREATE DATABASE %s" % db, db="postgres")
    mc = mctest.Memcached(wd, extra=["-m", "256"], name="mc-" + db)
    try:
        px = mctest.Proxy(wd, mc.port, db=pg.uri(db=db), keys="prefix", name="tmpl-" + db,
                          extra=["--node", "template", "--reads", "off", "-q",
                                 "--stats-interval", "200ms",
                                 "--spill", os.path.join(wd, "spill-%s.db" % db)])
        wl = os.path.join(wd, "template.wl")
        write_workload(wl, max(a.writes_per_day, a.template_writes), 7)
        load_result(run_load(px.port, wl, 0), timeout=300)
        time.sleep(0.5)  # a stats sample after the last write
        rc = px.stop(timeout=120)
        if rc != 0:
            die("template proxy exit %r:\n%s" % (rc, px.stderr_text()[-3000:]))
    finally:
        mc.stop()
    tables = run_tables(pg, db)
    sql = ["CREATE SCHEMA bench",
           "CREATE TABLE bench.t_run AS SELECT * FROM runs",
           "CREATE TABLE bench.t_writes AS SELECT * FROM writes",
           "CREATE TABLE bench.t_stats AS SELECT stats FROM samples"
           " ORDER BY t_ns DESC LIMIT 1",
           "CREATE TABLE bench.t_classes AS SELECT class_id, fields FROM sample_classes"
           " WHERE sample_id = (SELECT sample_id FROM samples ORDER BY t_ns DESC LIMIT 1)",
           "CREATE TABLE bench.t_settings AS SELECT version, settings FROM settings"
           " ORDER BY t_ns DESC LIMIT 1"]
    aggs = [t for t in tables if t.startswith("agg")]
    sql += ["CREATE TABLE bench.t_%s AS SELECT * FROM %s" % (t, t) for t in aggs + ["run_meta"]]
    sql += ["DELETE FROM sample_classes"]
    sql += ["DELETE FROM %s" % t for t in tables if t != "samples"]
    sql += ["DELETE FROM samples", "DELETE FROM runs"]
    sql += ["TRUNCATE writes"]
    pg.psql(";\n".join(sql), db=db)
    if int(pg.scalar("SELECT count(*) FROM bench.t_classes", db=db)) == 0:
        die("the template run has no stats sample with classes")
    return aggs


def agg_copy_sql(pg, db, table, copies):
    """INSERT of the template's rows of agg table `table` for every run of g:
    `copies` times a day, spread evenly, minute/second columns shifted into
    the run's day (a table with neither, such as agg_runs, once)."""
    cols = columns(pg, db, table)
    unit = {"minute": 60, "second": 1}
    timed = [c for c in cols if c in unit]
    n = copies if timed else 1
    sel = []
    for c in cols:
        if c == "run_id":
            sel.append("g.run_id")
        elif c in unit:
            sel.append("x.%s - (SELECT min(%s) FROM bench.t_%s) + g.day_ns / %d + k * %d"
                       % (c, c, table, unit[c] * 10**9, 86400 // n // unit[c]))
        else:
            sel.append("x." + c)
    return ("INSERT INTO %s (%s) SELECT %s FROM g, bench.t_%s x, generate_series(0, %d) k"
            % (table, ", ".join(cols), ", ".join(sel), table, n - 1))


def add_history(pg, db, n0, n1, days, a, aggs):
    """Nodes n0..n1-1, each with `days` days of history ending yesterday."""
    today = time.time_ns() // NS_DAY
    base = today - days
    per_day = 86400 // a.sample_every
    w = a.writes_per_day
    seqs = int(pg.scalar("SELECT count(*) FROM bench.t_writes", db=db))
    if seqs < w:
        die("the template has %d writes, fewer than --writes-per-day %d" % (seqs, w))
    sql = [
        "SELECT slabtap_writes_partition(d) FROM generate_series(%d, %d) d" % (base, today - 1),
        "CREATE TEMP TABLE g AS SELECT n, d, d::bigint * %d AS day_ns FROM "
        "generate_series(%d, %d) n, generate_series(%d, %d) d" % (NS_DAY, n0, n1 - 1, base,
                                                                  today - 1),
        "ALTER TABLE g ADD run_id bigint",
        "UPDATE g SET run_id = nextval(pg_get_serial_sequence('runs', 'run_id'))",
        "INSERT INTO runs (run_id, name, node, started_ns, ended_ns, upstream, slabtap_version,"
        " options, key_mode, rows_recorded) SELECT g.run_id, 'history', 'node-' ||"
        " lpad(g.n::text, 3, '0'), g.day_ns, g.day_ns + %d, t.upstream, t.slabtap_version,"
        " t.options, t.key_mode, %d FROM g, bench.t_run t" % (NS_DAY - 1, w),
        "INSERT INTO writes SELECT g.run_id, w.seq, g.day_ns + (w.seq - 1) * %d, w.conn_id,"
        " w.key_hash, w.key_ref, w.op, w.sizes, w.extra FROM g, bench.t_writes w"
        " WHERE w.seq <= %d" % (NS_DAY // w, w),
        "INSERT INTO samples (run_id, t_ns, phase_id, final, stats) SELECT g.run_id,"
        " g.day_ns + k * %d, NULL, (k = %d)::int, t.stats FROM g, generate_series(0, %d) k,"
        " bench.t_stats t" % (a.sample_every * 10**9, per_day - 1, per_day - 1),
        "INSERT INTO sample_classes (sample_id, class_id, fields) SELECT s.sample_id,"
        " c.class_id, c.fields FROM samples s JOIN g USING (run_id), bench.t_classes c",
        "INSERT INTO settings (run_id, t_ns, version, settings) SELECT g.run_id, g.day_ns,"
        " t.version, CASE WHEN g.n % 10 = 9 THEN t.settings ||"
        " '{\"growth_factor\": \"1.10\"}'::jsonb ELSE t.settings END FROM g, bench.t_settings t",
        "INSERT INTO run_meta (run_id, key, value) SELECT g.run_id, m.key, m.value"
        " FROM g, bench.t_run_meta m"]
    for t in aggs:
        sql.append(agg_copy_sql(pg, db, t, a.agg_copies))
    sql.append("DROP TABLE g")
    pg.psql(";\n".join(sql), db=db, timeout=3600)
    pg.psql("ANALYZE", db=db, timeout=3600)


def time_view(pg, db, view, tries=3, slow_ms=10000):
    """(best execution + planning ms of `tries` runs, rows): one run only
    when it took more than slow_ms (the grid's largest steps)."""
    best = None
    for _ in range(tries):
        out = pg.psql("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) SELECT * FROM %s" % view,
                      db=db, timeout=3600)
        plan = json.loads("\n".join(r[0] for r in out))[0]
        ms = plan["Execution Time"] + plan["Planning Time"]
        best = ms if best is None else min(best, ms)
        rows = plan["Plan"]["Actual Rows"]
        if ms > slow_ms:
            break
    return best, rows


def view_grid(pg, wd, a):
    out = []
    for days in a.view_days:
        db = "fleet_hist_%d" % days
        aggs = make_template(pg, wd, db, a)
        views = [r[0] for r in pg.psql("SELECT viewname FROM pg_views WHERE schemaname ="
                                       " 'public' AND viewname LIKE 'fleet%' ORDER BY 1",
                                       db=db)]
        have = 0
        for nodes in a.view_nodes:
            t0 = time.monotonic()
            add_history(pg, db, have, nodes, days, a, aggs)
            have = nodes
            gen = time.monotonic() - t0
            counts = pg.psql("SELECT (SELECT count(*) FROM writes), (SELECT count(*) FROM "
                             "samples), (SELECT count(*) FROM sample_classes), "
                             "pg_database_size(current_database())", db=db)[0]
            row = {"days": days, "nodes": nodes, "gen_s": gen, "writes": int(counts[0]),
                   "samples": int(counts[1]), "classes": int(counts[2]),
                   "db_bytes": int(counts[3]), "views": {}}
            for v in views:
                row["views"][v] = time_view(pg, db, v)
            out.append(row)
            print("days %2d nodes %3d: %s (history %d writes, %d samples, %d class rows, "
                  "%.0f MB; generated in %.0f s)"
                  % (days, nodes, ", ".join("%s %.1f ms" % (v, ms)
                                             for v, (ms, _) in row["views"].items()),
                     row["writes"], row["samples"], row["classes"], row["db_bytes"] / 1e6,
                     gen), flush=True)
        pg.psql("DROP DATABASE %s" % db, db="postgres", timeout=600)
    return out


def print_views(grid, a):
    if not grid:
        return
    views = list(grid[0]["views"])
    print("\nFleet views: ms (EXPLAIN ANALYZE, TIMING OFF; best of 3); history per node "
          "and day: 1 run, %d writes, a sample every %d s" % (a.writes_per_day,
                                                             a.sample_every))
    md_table(["days", "nodes", "writes", "class rows"] + views,
             [["%d" % r["days"], "%d" % r["nodes"], "%d" % r["writes"], "%d" % r["classes"]]
              + ["%.1f" % r["views"][v][0] for v in views] for r in grid])


# ------------------------------------------------------------------ main

def ints(text):
    return [int(x) for x in text.split(",") if x]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=4, help="proxies in the load phase")
    ap.add_argument("--rate", type=int, default=2500, help="sets/s per node (0: flat out)")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--modes", default="idle,rows,sampled,aggs")
    ap.add_argument("--sample", type=int, default=16, help="sampled: --sample-keys 1/N")
    ap.add_argument("--view-nodes", type=ints, default=[1, 10, 50, 100])
    ap.add_argument("--view-days", type=ints, default=[1, 7, 30])
    ap.add_argument("--writes-per-day", type=int, default=1000,
                    help="synthetic writes per node and day")
    ap.add_argument("--sample-every", type=int, default=3600,
                    help="synthetic stats sample interval, seconds")
    ap.add_argument("--agg-copies", type=int, default=1,
                    help="synthetic: the template's minute of aggregates, copies per node-day")
    ap.add_argument("--fleet-nodes", type=int, default=100, help="the fleet on paper")
    ap.add_argument("--fleet-rate", type=int, default=50000,
                    help="the fleet on paper: writes/s per node")
    ap.add_argument("--template-writes", type=int, default=TEMPLATE_WRITES,
                    help="writes of the view phase's template run")
    ap.add_argument("--no-load", action="store_true")
    ap.add_argument("--no-views", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="tiny figures, every number checked")
    a = ap.parse_args()
    if a.smoke:
        a.nodes, a.rate, a.seconds = 2, 1000, 2
        a.view_nodes, a.view_days = [1, 2], [1, 2]
        a.writes_per_day, a.sample_every, a.template_writes = 200, 7200, 2000
    helptext = proxy_help()
    flags = {"idle": [], "rows": [], "sampled": ["--sample-keys", "1/%d" % a.sample],
             "aggs": aggs_only_flag(helptext)}
    print("fleet_scale: %s; %s" % (mctest.SLABTAP, time.strftime("%Y-%m-%d %H:%M UTC",
                                                                  time.gmtime())))
    wd = mctest.Workdir(prefix="slabtap-fleet-scale-")
    res, grid = [], []
    try:
        with pgcluster.PgCluster(settings={"full_page_writes": "on"}) as pg:
            if not a.no_load:
                for mode in a.modes.split(","):
                    if flags.get(mode) is None:
                        print("mode %s: not measured: this build's `slabtap proxy --help` "
                              "has no --sample-keys none" % mode)
                        continue
                    r = measure_mode(pg, wd.path, mode, flags[mode], a)
                    res.append(r)
                    print("mode %-8s %d writes, %d rows in %.1f s" % (mode, r["sent"],
                                                                      r["stored"], r["window"]),
                          flush=True)
                print_modes(res, a)
            if not a.no_views:
                grid = view_grid(pg, wd.path, a)
                print_views(grid, a)
    finally:
        wd.cleanup()
    if a.smoke:
        for r in res:
            if r["mode"] == "rows" and r["stored"] != r["sent"]:
                die("mode rows: %d writes sent, %d rows stored" % (r["sent"], r["stored"]))
            if r["mode"] not in ("rows", "idle") and r["stored"] >= r["sent"]:
                die("mode %s stored every write (%d)" % (r["mode"], r["stored"]))
            if r["counted"] != [r["sent"]] * 2:
                die("mode %s: %d writes sent, counted %r in agg_sizes, agg_prefixes"
                    % (r["mode"], r["sent"], r["counted"]))
            if not (r["pg_cpu"] > 0 and r["wal"] > 0 and r["disk"] > 0 and r["net"] > 0):
                die("mode %s: a figure was not measured: %r" % (r["mode"], r))
        for g in grid:
            if not g["views"] or g["writes"] != g["nodes"] * g["days"] * a.writes_per_day:
                die("view grid: history or views missing: %r" % g)


if __name__ == "__main__":
    main()
