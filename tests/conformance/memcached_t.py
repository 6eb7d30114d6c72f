#!/usr/bin/env python3
"""Run memcached's own perl test suite (t/*.t of a release) twice: against
the real memcached, and with slabtap in front of it.  python3 stdlib only.

Subcommands
  run   the driver (what memcached_t.sh calls): builds a scratch "build dir"
        holding t/, a `memcached-debug` and a `timedrun`, runs every test in
        every mode, prints the comparison table.
  wrap  what `memcached-debug` in the scratch build dir executes.  In mode
        `direct` it execs the real memcached with the test's arguments; in
        `pooled` / `per-client` it starts the real memcached on a free port
        with the same arguments and a slabtap proxy listening on the port the
        test asked for, and lives exactly as long as that memcached does.

Why a wrapper and not T_MEMD_USE_DAEMON: MemcachedTest.pm does honour
T_MEMD_USE_DAEMON=host:port, but then every new_memcached() returns a
connection to that one daemon and ignores the arguments the test passes
(-m 3, -I 2m, -o no_modern, -C, ...) and the test cannot stop it; most tests
would test the wrong server.  The harness locates the daemon as
"$cwd/memcached-debug", started through "$cwd/timedrun 600", so a scratch
directory with those two names in it is all that is needed; t/ is untouched.

Both modes see the same harness: `memcached-debug -h` prints memcached's help
without the `--unix-socket` line (so new_memcached() uses TCP, which is the
only thing slabtap listens on, instead of a unix socket), and `-s FILE` is
refused as an unknown option would be.  Everything else is memcached's.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

# the one free-port helper of the tests: a port reserved (bound, never
# listening) until the server started on it listens (mctest.py's docstring)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from mctest import reserve_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = ("direct", "pooled", "per-client")


# --------------------------------------------------------------------------
# wrapper: executed as  <scratch>/memcached-debug ARGS...
# --------------------------------------------------------------------------

def wlog(rec):
    path = os.environ.get("MCT_LOG")
    if not path:
        return
    rec = dict(rec)
    rec["t"] = round(time.time(), 3)
    rec["pid"] = os.getpid()
    line = (json.dumps(rec, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


OPTS = {  # short -> long, for the options the wrapper has to understand
    "-p": "--port", "-l": "--listen", "-U": "--udp-port",
    "-s": "--unix-socket", "-P": "--pidfile",
}


def parse_args(argv):
    """[(short, value, first_index, last_index)] for the options in OPTS, plus
    whether -d/--daemon was given.  memcached uses getopt_long; the harness
    passes its arguments as separate words."""
    found, daemon, i = [], False, 0
    while i < len(argv):
        a = argv[i]
        if a in ("-d", "--daemon"):
            daemon = True
        for short, long_ in OPTS.items():
            if a in (short, long_) and i + 1 < len(argv):
                found.append((short, argv[i + 1], i, i + 1))
                i += 1
                break
            if a.startswith(long_ + "="):
                found.append((short, a.split("=", 1)[1], i, i))
                break
            if a.startswith(short) and len(a) > 2 and not a.startswith("--"):
                found.append((short, a[2:], i, i))
                break
        i += 1
    return found, daemon


def opt(found, short):
    vals = [v for s, v, _, _ in found if s == short]
    return vals[-1] if vals else None


def rebuild(argv, found, repl):
    """argv with the options whose short name is in repl given new values."""
    out, skip = [], set()
    for s, _, a, b in found:
        if s in repl:
            skip.update(range(a, b + 1))
    for i, w in enumerate(argv):
        if i not in skip:
            out.append(w)
    for s, v in repl.items():
        if any(f[0] == s for f in found):
            out += [s, str(v)]
    return out


def strip_debug_only(argv):
    """new_memcached() always appends `-o relaxed_privileges`, a suboption
    that exists only in memcached-debug (it relaxes the seccomp filter of
    drop_privileges for the test build).  A release memcached rejects it
    ("Illegal suboption"), so it is dropped, in every mode alike."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a in ("-o", "--extended") and i + 1 < len(argv):
            subs = [x for x in argv[i + 1].split(",") if x != "relaxed_privileges"]
            if subs:
                out += [a, ",".join(subs)]
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def listening(port):
    """Is something LISTENing on TCP port `port`?  Read from /proc so that the
    check itself does not open a connection to memcached (that would count in
    its total_connections and make a pass-through test differ)."""
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def cmd_wrap(argv):
    real = os.environ.get("MCT_MEMCACHED", "/usr/bin/memcached")
    mode = os.environ.get("MCT_MODE", "direct")
    test = os.environ.get("MCT_TEST", "?")

    if any(a in ("-h", "--help") for a in argv):
        p = subprocess.run([real] + argv, stdout=subprocess.PIPE)
        out = b"".join(l for l in p.stdout.splitlines(True) if b"unix-socket" not in l)
        sys.stdout.buffer.write(out)
        sys.stdout.flush()
        wlog({"test": test, "mode": mode, "action": "help", "args": argv})
        return p.returncode
    if any(a in ("-V", "--version") for a in argv):
        os.execv(real, [real] + argv)

    argv = strip_debug_only(argv)
    found, daemon = parse_args(argv)
    if opt(found, "-s") is not None:
        sys.stderr.write("memcached-debug (memcached_t wrapper): unix sockets are "
                         "hidden from the harness; -s refused\n")
        wlog({"test": test, "mode": mode, "action": "refused", "reason": "-s", "args": argv})
        return 64

    def bypass(reason):
        wlog({"test": test, "mode": mode, "action": "bypass", "reason": reason, "args": argv})
        os.execv(real, [real] + argv)

    if mode == "direct":
        wlog({"test": test, "mode": mode, "action": "direct", "args": argv})
        os.execv(real, [real] + argv)

    port = opt(found, "-p")
    try:
        port_n = int(port) if port is not None else 0
    except ValueError:
        port_n = 0
    if port_n <= 0:
        bypass("no fixed TCP port (-p %s): nothing for the proxy to listen on" % port)
    listen = opt(found, "-l")
    if listen is not None and ("," in listen or ":" in listen):
        bypass("-l %s: several or prefixed listeners" % listen)
    lhost = listen if listen else "127.0.0.1"
    uhost = listen if listen and listen not in ("0.0.0.0", "::") else "127.0.0.1"

    up_res = reserve_port()  # released once memcached listens on it
    up = up_res.port
    repl = {"-p": up}
    if opt(found, "-U") not in (None, "0"):
        repl["-U"] = 0   # UDP would reach memcached around the proxy
    margv = rebuild(argv, found, repl)
    pidfile = opt(found, "-P")

    slabtap = os.environ["MCT_SLABTAP"]
    tmp = os.environ.get("MCT_TMP") or tempfile.mkdtemp(prefix="mct-wrap.")
    os.makedirs(tmp, exist_ok=True)
    tag = "%d.%d" % (os.getpid(), int(time.time() * 1000) % 100000)
    db = os.path.join(tmp, "slabtap.%s.db" % tag)
    slog = os.path.join(tmp, "slabtap.%s.log" % tag)

    procs = {}
    pending = []

    def on_signal(sig, _frame):
        pending.append(sig)
        m = procs.get("memcached")
        try:
            if m is not None and m.poll() is None:
                m.send_signal(sig)
            elif procs.get("daemon_pid"):
                os.kill(procs["daemon_pid"], sig)
        except OSError:
            pass

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(s, on_signal)

    rec = {"test": test, "mode": mode, "action": "proxied", "args": argv,
           "memcached_args": margv, "listen": "%s:%d" % (lhost, port_n),
           "upstream": "%s:%d" % (uhost, up), "slabtap_log": slog,
           "udp_disabled": "-U" in repl}
    mc = subprocess.Popen([real] + margv)
    procs["memcached"] = mc

    def mc_alive():
        if mc.poll() is None:
            return True
        if daemon and mc.returncode == 0:
            if not procs.get("daemon_pid") and pidfile:
                try:
                    with open(pidfile) as f:
                        procs["daemon_pid"] = int(f.read().strip() or 0)
                except (OSError, ValueError):
                    pass   # signals are forwarded to it once known
            # The daemon is nobody's child here: once killed it may stay a
            # zombie (kill(pid, 0) still succeeds), so what counts is what the
            # test sees directly: is memcached's port still listening.
            return listening(up)
        return False

    deadline = time.time() + 60
    while not listening(up):
        if not mc_alive() and not (daemon and mc.returncode == 0):
            rec.update(action="memcached_failed", rc=mc.returncode)
            wlog(rec)
            return finish(mc.returncode)
        if time.time() > deadline:
            rec.update(action="memcached_not_listening")
            wlog(rec)
            mc.kill()
            return 70
        time.sleep(0.01)
    up_res.release()

    cmd = [slabtap, "proxy", "--listen", "%s:%d" % (lhost, port_n),
           "--upstream", "%s:%d" % (uhost, up), "--db", db, "--http", "off",
           "--run", test, "--drain-ms", "1000"]
    if mode == "per-client":
        cmd += ["--upstream-conns", "per-client"]
    extra = os.environ.get("MCT_SLABTAP_ARGS", "").split()
    cmd += extra
    rec["slabtap_cmd"] = cmd
    with open(slog, "ab") as lf:
        st = subprocess.Popen(cmd, stdout=lf, stderr=lf)
    procs["slabtap"] = st
    wlog(rec)

    while True:
        if not mc_alive():
            break
        if st.poll() is not None:
            wlog({"test": test, "mode": mode, "action": "slabtap_died",
                  "rc": st.returncode, "slabtap_log": slog})
            try:
                if mc.poll() is None:
                    mc.terminate()
                elif procs.get("daemon_pid"):
                    os.kill(procs["daemon_pid"], signal.SIGTERM)
            except OSError:
                pass
            return 70
        time.sleep(0.02)

    # memcached is gone: take the proxy down with it, as the test expects the
    # port it asked for to close when "memcached" exits.
    st.send_signal(signal.SIGTERM)
    try:
        st.wait(5)
    except subprocess.TimeoutExpired:
        st.kill()
        st.wait()
    end = {"test": test, "mode": mode, "action": "exit", "memcached_rc": mc.returncode,
           "slabtap_rc": st.returncode, "slabtap_log": slog, "signals": pending}
    wlog(end)
    try:
        os.unlink(db)
        for suffix in ("-wal", "-shm", "-journal"):
            if os.path.exists(db + suffix):
                os.unlink(db + suffix)
    except OSError:
        pass
    return finish(mc.returncode if not daemon else 0)


def finish(rc):
    """Exit like the memcached we stood for: with its code, or by its signal."""
    if rc is not None and rc < 0:
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
        time.sleep(1)
    return rc or 0


# --------------------------------------------------------------------------
# TAP
# --------------------------------------------------------------------------

PLAN_RE = re.compile(r"^1\.\.(\d+)(?:\s*#\s*(?:skip|SKIP)\w*\s*(.*))?")
OK_RE = re.compile(r"^(not )?ok\s+(\d+)\s*(?:-\s*)?(.*)$")


def parse_tap(text):
    r = {"planned": None, "skip_all": None, "oks": 0, "fails": [], "skipped": 0,
         "todo": 0, "ran": 0, "bailout": None, "died": None}
    last_fail = None
    for line in text.splitlines():
        m = PLAN_RE.match(line)
        if m:
            r["planned"] = int(m.group(1))
            if r["planned"] == 0:
                r["skip_all"] = (m.group(2) or "").strip() or "skipped"
            continue
        m = OK_RE.match(line)
        if m:
            r["ran"] += 1
            desc = m.group(3)
            directive = ""
            dm = re.match(r"^(.*?)\s*(?<!\\)#\s*(skip|todo)\b(.*)$", desc, re.I)
            if dm:
                desc, directive = dm.group(1), dm.group(2) + dm.group(3)
            if directive.lower().startswith("skip"):
                r["skipped"] += 1
            if directive.lower().startswith("todo"):
                r["todo"] += 1
                last_fail = None
                continue
            if m.group(1):
                last_fail = {"n": int(m.group(2)), "desc": desc, "diag": []}
                r["fails"].append(last_fail)
            else:
                r["oks"] += 1
                last_fail = None
            continue
        if line.startswith("Bail out!"):
            r["bailout"] = line
            continue
        if line.startswith("#"):
            if last_fail is not None and len(last_fail["diag"]) < 12:
                last_fail["diag"].append(line)
            continue
        # perl dying outside a test ("... at t/x.t line N.")
        if re.search(r" at \S+\.(t|pm) line \d+", line) and not r["died"]:
            r["died"] = line.strip()
    return r


def status_of(res):
    t = res["tap"]
    if res["timed_out"]:
        return "timeout"
    if t["skip_all"] is not None:
        return "skip"
    if res["rc"] == 0 and not t["fails"] and t["planned"] is not None and t["ran"] == t["planned"]:
        return "pass"
    return "fail"


def cell(res):
    if res is None:
        return "-"
    s = status_of(res)
    t = res["tap"]
    if s == "skip":
        return "skip"
    if s == "pass":
        out = "pass %d" % t["planned"]
        if t["skipped"]:
            out += " (%d skip)" % t["skipped"]
        return out
    planned = t["planned"] if t["planned"] is not None else "?"
    notrun = (t["planned"] - t["ran"]) if t["planned"] is not None else 0
    out = "%s %d/%s" % ("TIMEOUT" if s == "timeout" else "FAIL", len(t["fails"]), planned)
    if notrun > 0:
        out += " +%d not run" % notrun
    return out


# --------------------------------------------------------------------------
# classification of every known direct-pass / slabtap-fail difference.
# Keyed by test file; each entry: (regex over "desc|at t/x.t line N", class,
# explanation).  Classes: a = slabtap bug (bytes differ), b = memcached's
# global counters changed by slabtap's side connection / pooling, c = needs
# something a proxy cannot give.  Written by reading the failing test code;
# see README.md.  A difference with no matching entry is printed as
# UNCLASSIFIED, which means: read the test and add an entry.
# --------------------------------------------------------------------------

KNOWN_PATH = os.path.join(HERE, "known_differences.json")


def load_known():
    try:
        with open(KNOWN_PATH) as f:
            return json.load(f)
    except OSError:
        return {}


def classify(known, test, mode, failure_text):
    for e in known.get(test, []) if not test.startswith("_") else []:
        if e.get("modes") and mode not in e["modes"]:
            continue
        if re.search(e["match"], failure_text):
            return e["class"], e["why"]
    return None, None


# --------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------

# seconds each took direct on 2 cores with 4 jobs (order hint only)
SLOW = {"binary-extstore.t": 200, "maxconns.t": 200, "watcher.t": 120, "binary.t": 30, "restart.t": 30,
        "chunked-extstore.t": 26, "metaget.t": 20, "extstore.t": 19, "lru-maintainer.t": 18,
        "chunked-items.t": 16, "lru-crawler.t": 16, "extstore-jbod.t": 15,
        "extstore-buckets.t": 14, "00-startup.t": 14, "watcher.t": 14,
        "idle-timeout.t": 13, "getset.t": 13, "dash-M.t": 12, "dyn-maxbytes.t": 12,
        "slabs-reassign2.t": 12, "error-extstore.t": 11}
TOO_SLOW = {"binary-extstore.t", "maxconns.t"}   # left out unless --slow
SERIAL = {"issue_67.t", "proxy.t"}   # fixed port numbers: never two at once


def prepare(tdir, work):
    build = os.path.join(work, "build")
    os.makedirs(build)
    shutil.copytree(tdir, os.path.join(build, "t"), symlinks=True)
    proto = os.path.join(os.path.dirname(tdir), "doc", "protocol.txt")
    if os.path.exists(proto):
        os.makedirs(os.path.join(build, "doc"))
        shutil.copy(proto, os.path.join(build, "doc", "protocol.txt"))
    me = os.path.abspath(__file__)
    with open(os.path.join(build, "memcached-debug"), "w") as f:
        f.write('#!/bin/sh\nexec %s %s wrap "$@"\n' % (sys.executable, me))
    # memcached's timedrun forwards signals to the daemon and kills it after
    # N seconds.  Exec'ing keeps the pid the harness signals the wrapper's
    # (or direct memcached's) own; the per-test timeout of the driver and
    # the kill of the test's process group replace the alarm.
    with open(os.path.join(build, "timedrun"), "w") as f:
        f.write('#!/bin/sh\nshift\nexec "$@"\n')
    for n in ("memcached-debug", "timedrun"):
        os.chmod(os.path.join(build, n), 0o755)
    return build


def run_one(build, work, test, mode, timeout, env_base):
    logdir = os.path.join(work, "logs", mode)
    tmp = os.path.join(work, "tmp", mode, test)
    os.makedirs(logdir, exist_ok=True)
    os.makedirs(tmp, exist_ok=True)
    wl = os.path.join(logdir, test + ".jsonl")
    env = dict(env_base)
    env.update(MCT_MODE=mode, MCT_TEST=test, MCT_LOG=wl, MCT_TMP=tmp)
    t0 = time.time()
    p = subprocess.Popen(["perl", "t/" + test], cwd=build, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, start_new_session=True)
    timed_out = False
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = p.communicate()
    # whatever the test left running (daemons, wrappers, proxies)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except OSError:
            break
        time.sleep(0.3)
    text = out.decode("utf-8", "replace")
    with open(os.path.join(logdir, test + ".out"), "w") as f:
        f.write(text)
    wrap = []
    if os.path.exists(wl):
        with open(wl) as f:
            wrap = [json.loads(l) for l in f if l.strip()]
    return {"test": test, "mode": mode, "rc": p.returncode, "timed_out": timed_out,
            "secs": round(time.time() - t0, 1), "tap": parse_tap(text), "wrap": wrap,
            "out": os.path.join(logdir, test + ".out")}


def via(res):
    """How the servers of a slabtap-mode test were run: proxied/bypassed."""
    if res is None or res["mode"] == "direct":
        return ""
    w = res["wrap"]
    prox = sum(1 for r in w if r["action"] == "proxied")
    byp = sum(1 for r in w if r["action"] == "bypass")
    died = sum(1 for r in w if r["action"] == "slabtap_died")
    bad = sum(1 for r in w if r["action"] == "exit" and r.get("slabtap_rc") not in (0, None))
    parts = []
    if prox:
        parts.append("%dp" % prox)
    if byp:
        parts.append("%db" % byp)
    if died or bad:
        parts.append("%d!" % (died + bad))
    return "[" + ",".join(parts) + "]" if parts else "[0p]"


def fail_text(res, f):
    at = ""
    for d in f["diag"]:
        m = re.search(r"at (t/\S+) line (\d+)", d)
        if m:
            at = "%s line %s" % (m.group(1), m.group(2))
            break
    return at


def cmd_run(a):
    tdir = a.t or os.environ.get("MEMCACHED_T")
    work = a.work or tempfile.mkdtemp(prefix="mct.")
    os.makedirs(work, exist_ok=True)
    if not tdir:
        tdir = os.path.join(work, "src", "t")
        os.makedirs(os.path.dirname(tdir), exist_ok=True)
        # line-lengths.t reads doc/protocol.txt relative to the build dir
        arch = subprocess.Popen(["git", "-C", a.mirror, "archive", a.tag, "t/", "doc/protocol.txt"],
                                stdout=subprocess.PIPE)
        subprocess.check_call(["tar", "-x", "-C", os.path.dirname(tdir)], stdin=arch.stdout)
        if arch.wait() != 0:
            sys.exit("git archive %s t/ from %s failed" % (a.tag, a.mirror))
    tdir = os.path.abspath(tdir)
    if not os.path.exists(os.path.join(tdir, "lib", "MemcachedTest.pm")):
        sys.exit("%s does not look like memcached's t/ (no lib/MemcachedTest.pm)" % tdir)
    build = prepare(tdir, work)
    tests = sorted(f for f in os.listdir(os.path.join(build, "t")) if f.endswith(".t"))
    if a.only:
        want = set(x if x.endswith(".t") else x + ".t" for x in a.only.split(","))
        tests = [t for t in tests if t in want]
    if a.exclude:
        drop = set(x if x.endswith(".t") else x + ".t" for x in a.exclude.split(","))
        tests = [t for t in tests if t not in drop]
    not_run = set()
    if not a.slow and not a.only:
        not_run = set(t for t in tests if t in TOO_SLOW)
    modes = a.modes.split(",")
    for m in modes:
        if m not in MODES:
            sys.exit("unknown mode %s (want %s)" % (m, ",".join(MODES)))

    env = {k: v for k, v in os.environ.items()
           if k not in ("T_MEMD_USE_DAEMON", "SSL_TEST", "VALGRIND_TEST", "MEMCACHED_PORT_FILENAME")}
    env.update(MCT_MEMCACHED=os.path.abspath(a.memcached), MCT_SLABTAP=os.path.abspath(a.slabtap))
    ver = subprocess.run([a.memcached, "-V"], stdout=subprocess.PIPE).stdout.decode().strip()
    print("memcached_t: %s, tests from %s, %d tests x modes %s, jobs %d, timeout %ds, work %s"
          % (ver, tdir, len(tests), ",".join(modes), a.jobs, a.timeout, work), flush=True)

    jobs = [(t, m) for t in tests for m in modes if t not in not_run]
    # longest first helps the pool finish together; the serial ones go last
    results = {}
    lock = threading.Lock()
    t_start = time.time()

    def go(job):
        t, m = job
        r = run_one(build, work, t, m, max(a.timeout, 450) if t in TOO_SLOW else a.timeout, env)
        with lock:
            results[(t, m)] = r
            if a.verbose:
                print("  %-28s %-10s %-26s %5.1fs %s" % (t, m, cell(r), r["secs"], via(r)), flush=True)
        return r

    # slowest first, so that the pool does not end waiting on one of them
    par = sorted((j for j in jobs if j[0] not in SERIAL),
                 key=lambda j: (-SLOW.get(j[0], 0), j[0], modes.index(j[1])))
    ser = [j for j in jobs if j[0] in SERIAL]
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        list(ex.map(go, par))
    for j in ser:
        go(j)
    elapsed = time.time() - t_start

    known = load_known()
    report = render(tests, modes, results, known, elapsed, not_run)
    print(report)
    with open(os.path.join(work, "report.txt"), "w") as f:
        f.write(report)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump({"%s|%s" % k: v for k, v in results.items()}, f, indent=1, default=str)
    print("work dir (test output, wrapper logs, slabtap logs): %s" % work)
    unclassified = report.count("UNCLASSIFIED")
    return 1 if unclassified and a.strict else 0


def printable(text):
    return "".join(c if (c.isprintable() and ord(c) < 0x7f) or c == " " else "\\x%02x" % (ord(c) & 0xff)
                   for c in text)


def render(tests, modes, results, known, elapsed, not_run=()):
    L = []
    smodes = [m for m in modes if m != "direct"]
    hdr = "%-28s" % "test" + "".join("%-30s" % m for m in modes)
    L.append("")
    L.append(hdr.rstrip())
    L.append("-" * len(hdr.rstrip()))
    for t in tests:
        row = "%-28s" % t
        for m in modes:
            r = results.get((t, m))
            if t in not_run:
                c = "not run (slow)"
            else:
                c = cell(r) + ((" " + via(r)) if m != "direct" else "")
            row += "%-30s" % c
        L.append(row.rstrip())
    L.append("")
    if not_run:
        L.append("not run (slow): %s take 130-200 s each even direct on 2 cores; "
                 "--slow (MCT_SLOW=1) or --only runs them." % ", ".join(sorted(not_run)))
    reasons = {}
    for t in tests:
        d = results.get((t, "direct"))
        if d is not None and d["tap"]["skip_all"] is not None:
            reasons.setdefault(d["tap"]["skip_all"], []).append(t)
    for why, ts in sorted(reasons.items()):
        L.append("skip (all modes alike): %s: %s" % (", ".join(ts), why))
    L.append("[Np] = servers the test started that ran behind slabtap; [Nb] = started "
             "without a fixed TCP port, so memcached ran alone (bypass); [N!] = slabtap "
             "exited abnormally.")
    counts = {}
    for m in modes:
        c = {}
        for t in tests:
            r = results.get((t, m))
            if r:
                s = status_of(r)
                c[s] = c.get(s, 0) + 1
        counts[m] = c
    L.append("totals: " + "; ".join("%s: %s" % (m, ", ".join("%d %s" % (v, k) for k, v in sorted(c.items())))
                                    for m, c in counts.items()) + "; wall time %.0fs" % elapsed)

    # differences
    L.append("")
    L.append("Differences (passes direct, not through slabtap) and their class:")
    L.append("  a = slabtap bug (bytes differ)   b = memcached's global counters changed by "
             "slabtap's side connection / pooling   c = needs what a proxy cannot give")
    any_diff = False
    for t in tests:
        d = results.get((t, "direct"))
        if d is None or status_of(d) != "pass":
            continue
        for m in smodes:
            r = results.get((t, m))
            if r is None or status_of(r) == "pass":
                continue
            any_diff = True
            L.append("")
            L.append("%s [%s]: %s   (output: %s)" % (t, m, cell(r), r["out"]))
            items = []
            for f in r["tap"]["fails"]:
                items.append(("not ok %d - %s  (%s)" % (f["n"], f["desc"], fail_text(r, f)),
                              "%s|%s" % (f["desc"], fail_text(r, f)), f["diag"]))
            if r["timed_out"]:
                items.append(("timed out", "TIMEOUT", []))
            elif r["tap"]["planned"] is not None and r["tap"]["ran"] < r["tap"]["planned"]:
                items.append(("died after %d of %d: %s" % (r["tap"]["ran"], r["tap"]["planned"],
                                                           r["tap"]["died"] or "?"),
                              "DIED|%s" % (r["tap"]["died"] or ""), []))
            elif r["rc"] != 0 and not r["tap"]["fails"]:
                items.append(("exit code %s" % r["rc"], "EXIT|%s" % r["rc"], []))
            for w in r["wrap"]:
                if w["action"] == "slabtap_died" or (w["action"] == "exit" and w.get("slabtap_rc") not in (0, None)):
                    items.append(("slabtap exited rc=%s (log %s)" % (w.get("rc", w.get("slabtap_rc")), w["slabtap_log"]),
                                  "SLABTAP_DIED", []))
            shown, said = 0, set()
            for label, key, diag in items:
                cls, why = classify(known, t, m, key)
                if shown < 25:
                    L.append("  " + label)
                    for dl in diag[2:8]:
                        L.append("      " + printable(dl))
                    if not cls:
                        L.append("    => UNCLASSIFIED (read the test)")
                    elif why in said:
                        L.append("    => (%s) as above" % cls)
                    else:
                        said.add(why)
                        L.extend(textwrap.wrap("(%s) %s" % (cls, why), 100,
                                               initial_indent="    => ", subsequent_indent="       "))
                shown += 1
            if shown > 25:
                L.append("  ... %d more" % (shown - 25))
    if not any_diff:
        L.append("  none")
    # the other way round is worth a line too
    rev = []
    for t in tests:
        d = results.get((t, "direct"))
        if d is None or status_of(d) == "pass":
            continue
        for m in smodes:
            r = results.get((t, m))
            if r is not None and status_of(r) == "pass":
                rev.append("%s [%s]" % (t, m))
    df = [t for t in tests if results.get((t, "direct")) and status_of(results[(t, "direct")]) != "pass"
          and results[(t, "direct")]["tap"]["skip_all"] is None]
    if df:
        L.append("")
        L.append("Failing direct too (not compared):")
        for t in df:
            note = known.get("_direct_failures", {}).get(t, "see %s" % results[(t, "direct")]["out"])
            L.append("  %s: %s" % (t, note))
    if rev:
        L.append("")
        L.append("Pass through slabtap but not direct (flaky or environment): " + ", ".join(rev))
    return "\n".join(L) + "\n"


# --------------------------------------------------------------------------
# repro: the class (a) differences as bytes, without perl
# --------------------------------------------------------------------------

def _bin_header(opcode):
    # magic, opcode, key len, extras len, data type, vbucket, body len, opaque, cas
    return bytes([0x80, opcode]) + bytes(22)


REPROS = [
    ("binary.t line 473: binary QUITQ (0x17)", [], [_bin_header(0x17)]),
    ("binary QUIT (0x07)", [], [_bin_header(0x07)]),
    ("conn-limits.t line 42: 500 stacked 'mg foo v' over read_buf_mem_limit",
     ["-o", "read_buf_mem_limit=1", "-t", "32", "-R", "500"], [b"mg foo v\r\n" * 500]),
    ("idle-timeout.t line 38: idle client past idle_timeout=3",
     ["-o", "idle_timeout=3"], [b"version\r\n", 5.0]),
    ("issue_50.t: text bytes (no newline) to a -B binary memcached",
     ["-B", "binary"], [b"Here's a bunch of garbage that doesn't look like the bin prot."]),
]


def _maxconns_steps(port, wait):
    """maxconns.t: open connections (holding them) until one is turned away;
    memcached -c 40 sends 'ERROR Too many open connections' and closes."""
    socks, seen = [], None
    try:
        for i in range(60):
            s = socket.create_connection(("127.0.0.1", port))
            s.settimeout(0.3)
            socks.append(s)
            try:
                b = s.recv(100)
            except socket.timeout:
                continue
            rest, state = b, "EOF (closed)"
            try:
                while True:
                    more = s.recv(100)
                    if not more:
                        break
                    rest += more
            except socket.timeout:
                state = "still open"
            seen = (i + 1, rest, state)
            break
    finally:
        for s in socks:
            s.close()
    if seen is None:
        return b"", "no answer on any of 60 connections (none turned away, none closed)"
    return seen[1], "%s (connection #%d)" % (seen[2], seen[0])


REPROS.append(("maxconns.t: open connections until memcached -c 40 turns one away",
               ["-c", "40"], _maxconns_steps))


def _wait_listen(port, deadline=10.0):
    end = time.time() + deadline
    while time.time() < end:
        if listening(port):
            return True
        time.sleep(0.02)
    return False


def _exchange(port, steps, wait):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(0.1)
    for st in steps:
        if isinstance(st, float):
            time.sleep(st)
        else:
            s.sendall(st)
    got, end_state, end = b"", "still open after %.0fs" % wait, time.time() + wait
    while time.time() < end:
        try:
            b = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            end_state = "RST"
            break
        if not b:
            end_state = "EOF (closed)"
            break
        got += b
    s.close()
    return got, end_state


def _show(b):
    r = repr(b)
    return r if len(r) <= 160 else "%s... (%d bytes: %d x %r)" % (r[:100], len(b), len(b) // max(1, len(b.split(b"\r\n")[0]) + 2), b.split(b"\r\n")[0] + b"\r\n") if b.count(b"\r\n") > 1 else r[:150] + "... (%d bytes)" % len(b)


def cmd_repro(a):
    real, slabtap = a.memcached, a.slabtap
    tmp = tempfile.mkdtemp(prefix="mct-repro.")
    for title, mcargs, steps in REPROS:
        print("== %s" % title)
        print("   memcached %s" % " ".join(mcargs or ["(defaults)"]))
        if callable(steps):
            print("   sent:       nothing; one new connection after another, each kept open")
        else:
            sent = b"".join(x for x in steps if isinstance(x, bytes))
            print("   sent:       %s%s" % (_show(sent), "  then idle %.0fs" % sum(x for x in steps if isinstance(x, float)) if any(isinstance(x, float) for x in steps) else ""))
        for mode in a.modes.split(","):
            with reserve_port() as up_res:
                up = up_res.port
                mc = subprocess.Popen([real, "-U", "0", "-p", str(up)] + (["-u", "root"] if os.geteuid() == 0 else []) + mcargs)
                procs = [mc]
                port = up
                _wait_listen(up)
            try:
                if mode != "direct":
                    with reserve_port() as px_res:
                        port = px_res.port
                        cmd = [slabtap, "proxy", "--listen", "127.0.0.1:%d" % port, "--upstream", "127.0.0.1:%d" % up,
                               "--db", os.path.join(tmp, "r%d.db" % port), "--http", "off", "-q"]
                        if mode == "per-client":
                            cmd += ["--upstream-conns", "per-client"]
                        procs.insert(0, subprocess.Popen(cmd, stderr=subprocess.DEVNULL))
                        _wait_listen(port)
                    time.sleep(0.2)
                got, state = steps(port, a.wait) if callable(steps) else _exchange(port, steps, a.wait)
            finally:
                for p in procs:
                    p.terminate()
                for p in procs:
                    p.wait()
            print("   %-11s %s, then %s" % (mode + ":", _show(got) if got else "nothing", state))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "wrap":
        sys.exit(cmd_wrap(sys.argv[2:]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--t", help="memcached's t/ directory (default: $MEMCACHED_T, else extract from the mirror)")
    r.add_argument("--mirror", default="/work/.mirror/memcached+memcached/repo")
    r.add_argument("--tag", default="1.6.18")
    r.add_argument("--memcached", default=shutil.which("memcached") or "/usr/bin/memcached")
    r.add_argument("--slabtap", required=True)
    r.add_argument("--modes", default="direct,pooled")
    r.add_argument("--jobs", type=int, default=6)
    r.add_argument("--timeout", type=int, default=120,
                   help="seconds per test (at least 450 for %s)" % ", ".join(sorted(TOO_SLOW)))
    r.add_argument("--only", help="comma-separated test names")
    r.add_argument("--exclude", help="comma-separated test names")
    r.add_argument("--work", help="work directory (default: a new temp dir)")
    r.add_argument("--slow", action="store_true", help="also run %s" % ", ".join(sorted(TOO_SLOW)))
    r.add_argument("--strict", action="store_true", help="exit 1 if a difference is unclassified")
    r.add_argument("-v", "--verbose", action="store_true", help="a line per test as it finishes")
    rp = sub.add_parser("repro", help="replay the class (a) differences as raw bytes")
    rp.add_argument("--memcached", default=shutil.which("memcached") or "/usr/bin/memcached")
    rp.add_argument("--slabtap", required=True)
    rp.add_argument("--modes", default="direct,pooled,per-client")
    rp.add_argument("--wait", type=float, default=2.0, help="seconds to wait for an answer or EOF")
    a = ap.parse_args()
    sys.exit(cmd_run(a) if a.cmd == "run" else cmd_repro(a))


if __name__ == "__main__":
    main()
