#!/usr/bin/env python3
"""Helpers for bench/compare_proxies.sh (python3 standard library only).

  freeport                          print a free 127.0.0.1 TCP port
  wait-listen PID PORT [SECS]       wait until process PID listens on PORT
                                    (PORT 0: on any port; print it). Exit 1 when
                                    PID died, 2 on timeout
  mc HOST:PORT COMMAND              send one text command, print the first line
  ping HOST:PORT                    exit 0 when `version` gets VERSION
  cpu PID                           utime+stime of PID (all threads), in ticks
  cpu-settle PID...                 the same for each PID, once all are idle
  hwm PID                           VmHWM of PID in kB
  pyload --target H:P --workload F [--scale X]
                                    pipelined sets from a workload file (the
                                    subset below): a second generator, to
                                    check `slabtap load`'s figures (PYLOAD=1)
  wl-scale FILE FACTOR              print FILE with every set count scaled
  wl-ops FILE OPS                   print FILE with its one top-level `repeat`
                                    count set so the file sends about OPS ops
  parse-memcaslap FILE              print "OPS SECONDS OPS_PER_S"
  parse-load FILE                   same, from `slabtap load` / pyload output
  parse-latency FILE                from `slabtap load --rate` output, one line
                                    per command: "CMD P50 P99 P99.9 MAX ANSWERS
                                    LATE MISSES" (latencies in us)
  parse-strace FILE                 print "TOTAL READ WRITE EPOLL_CTL WRITEV TOP"
  report DIR                        print the tables and the target summary

Workload subset understood by pyload (bench/sets_400k.wl and
bench/large_values.wl are written in it; `slabtap load` reads the same
files; bench/latency_*.wl are for `slabtap load` only): `connections N`, `pipeline D`,
`seed S` (ignored: nothing is random), `phase NAME` (ignored), comments,
`repeat R { ... }`, and `set COUNT key=PATTERN size=BYTES [flags=F] [ttl=T]`
with `{i}` / `{i:W}` in the pattern. Ops go to connections round-robin (slabtap load hashes
the key instead; the per-connection load is the same on average).
"""
import collections
import itertools
import os
import random
import re
import selectors
import socket
import statistics
import sys
import time


# --------------------------------------------------------------------------- /proc

def listen_ports(pid):
    """TCP ports (IPv4) on which process pid has a listening socket."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        return None
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    p = line.split()
                    if p[3] == "0A" and p[9] in inodes:
                        ports.append(int(p[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return ports


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
        return st[st.rindex(")") + 2] != "Z"
    except (OSError, ValueError):
        return False


def cmd_wait_listen(pid, port, secs=15.0):
    pid, port = int(pid), int(port)
    end = time.monotonic() + float(secs)
    while time.monotonic() < end:
        if not alive(pid):
            return 1
        ports = listen_ports(pid) or []
        if (port == 0 and ports) or port in ports:
            print(ports[0] if port == 0 else port)
            return 0
        time.sleep(0.02)
    return 2


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])   # utime, stime (fields 14, 15)


def cmd_cpu_settle(pids, window=0.3, limit=10.0):
    """Wait until no PID used more than one tick in `window` seconds (the
    recorder thread may still be writing rows after the last answer), then
    print their CPU ticks."""
    end = time.monotonic() + limit
    last = [cpu_ticks(p) for p in pids]
    while time.monotonic() < end:
        time.sleep(window)
        now = [cpu_ticks(p) for p in pids]
        if all(b - a <= 1 for a, b in zip(last, now)):
            last = now
            break
        last = now
    print(" ".join(str(t) for t in last))
    return 0


def hwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def ports_in_use():
    """Every local TCP port some socket holds (any state), from /proc."""
    used = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    used.add(int(line.split()[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return used


def freeport():
    """A port for a program that cannot bind port 0 and say which it got
    (nutcracker): a random one below the kernel's ephemeral range that no
    socket holds now -- never bound and closed here. The caller starts the
    program and checks that it is the one listening (listen_ports), and
    tries another port if it lost a race."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    used = ports_in_use()
    for _ in range(1000):
        p = random.randrange(10000, max(low, 10001))
        if p not in used:
            return p
    raise SystemExit("freeport: no free port below %d" % low)


def hostport(s):
    h, p = s.rsplit(":", 1)
    return h, int(p)


def mc_command(target, command, timeout=5.0):
    s = socket.create_connection(hostport(target), timeout=timeout)
    s.sendall(command.encode() + b"\r\n")
    buf = b""
    while b"\n" not in buf:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    s.close()
    return buf.split(b"\r\n", 1)[0].decode(errors="replace")


# --------------------------------------------------------------------------- workloads

class WlError(Exception):
    pass


def parse_wl(path, scale=1.0):
    """(connections, pipeline, [(count, header %-format, value+CRLF, fields)])."""
    conns, pipeline = 4, 64
    stack = [(1, [], 0)]      # (repeat count, body, line) of the open blocks
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            words = []
            for w in raw.split():
                if w.startswith("#"):
                    break
                words.append(w)
            if not words:
                continue
            where = f"{path}:{lineno}"
            body = stack[-1][1]
            if words[0] == "connections":
                conns = int(words[1])
            elif words[0] == "pipeline":
                pipeline = int(words[1])
            elif words[0] in ("seed", "phase"):
                pass
            elif words[0] == "repeat":
                if len(words) != 3 or words[2] != "{":
                    raise WlError(f"{where}: repeat R {{")
                stack.append((int(words[1]), [], lineno))
            elif words == ["}"]:
                if len(stack) == 1:
                    raise WlError(f"{where}: '}}' without repeat")
                times, inner, _ = stack.pop()
                stack[-1][1].extend(inner * times)
            elif words[0] == "set":
                count = max(1, int(int(words[1]) * scale))
                opts = dict(w.split("=", 1) for w in words[2:] if "=" in w)
                if "noreply" in words[2:]:
                    raise WlError(f"{where}: noreply is not supported here")
                if "key" not in opts or "size" not in opts or not opts["size"].isdigit():
                    raise WlError(f"{where}: need key=PATTERN size=BYTES (bytes, no ladder sizes)")
                pat = opts["key"]
                if re.search(r"\{(?!i(:\d+)?\})", pat):
                    raise WlError(f"{where}: only {{i}} and {{i:W}} fields are supported")
                fmt = re.sub(r"\{i:(\d+)\}", r"%0\1d", pat.replace("%", "%%").replace("{i}", "%d"))
                size = int(opts["size"])
                hdr = (f"set {fmt} {int(opts.get('flags', 0))} {int(opts.get('ttl', 0))} "
                       f"{size}\r\n").encode()
                body.append((count, hdr, b"v" * size + b"\r\n", len(re.findall(r"\{i", pat))))
            else:
                raise WlError(f"{where}: '{words[0]}' is not supported by pyload")
    if len(stack) > 1:
        raise WlError(f"{path}:{stack[-1][2]}: 'repeat' block opened here is never closed")
    return conns, pipeline, stack[0][1]


def cmd_wl_scale(path, factor):
    factor = float(factor)
    with open(path) as f:
        for line in f:
            m = re.match(r"(\s*set\s+)(\d+)(.*)", line, re.S)
            if m:
                line = f"{m.group(1)}{max(1, int(int(m.group(2)) * factor))}{m.group(3)}"
            sys.stdout.write(line)
    return 0


OPS_WORDS = {"set", "add", "replace", "append", "prepend", "get", "gets", "delete", "touch",
             "incr", "decr"}


def cmd_wl_ops(path, ops):
    """FILE with the count of its one top-level `repeat` block chosen so that
    the file sends about OPS ops (at least one round of the block)."""
    ops = float(ops)
    lines = open(path).read().splitlines(keepends=True)
    depth, at, inside, outside, blocks = 0, None, 0, 0, 0
    for n, raw in enumerate(lines):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "repeat":
            if depth == 0:
                at, blocks = n, blocks + 1
            elif depth >= 1:
                print(f"wl-ops: {path}:{n + 1}: nested repeat is not supported here", file=sys.stderr)
                return 1
            depth += 1
        elif words == ["}"]:
            depth -= 1
        elif words[0] in OPS_WORDS:
            if depth:
                inside += int(words[1])
            else:
                outside += int(words[1])
    if blocks != 1 or not inside:
        print(f"wl-ops: {path}: needs exactly one top-level repeat block with ops in it",
              file=sys.stderr)
        return 1
    times = max(1, round((ops - outside) / inside))
    lines[at] = re.sub(r"repeat\s+\d+", f"repeat {times}", lines[at], count=1)
    sys.stdout.write("".join(lines))
    return 0


def cmd_pyload(argv):
    target, wl, scale = None, None, 1.0
    it = iter(argv)
    for a in it:
        if a == "--target":
            target = next(it)
        elif a == "--workload":
            wl = next(it)
        elif a == "--scale":
            scale = float(next(it))
        else:
            print(f"pyload: unknown argument {a}", file=sys.stderr)
            return 2
    try:
        nconn, depth, sets = parse_wl(wl, scale)
    except (OSError, WlError, ValueError) as e:
        print(f"pyload: {e}", file=sys.stderr)
        return 1

    total = sum(s[0] for s in sets)
    cursor = [0, 0]   # line of `sets`, next {i}

    def take(n):
        """Up to n requests as one buffer, and how many."""
        parts, got = [], 0
        while got < n and cursor[0] < len(sets):
            count, hdr, value, fields = sets[cursor[0]]
            a = cursor[1]
            b = min(count, a + n - got)
            if fields == 1:
                heads = [hdr % i for i in range(a, b)]
            else:
                heads = [hdr % ((i,) * fields) for i in range(a, b)]
            if len(value) < 8192:
                parts.append(value.join(heads) + value)
            else:                       # big values: gathered by sendmsg, never copied
                for h in heads:
                    parts.append(h)
                    parts.append(value)
            got += b - a
            cursor[1] = b
            if b == count:
                cursor[0], cursor[1] = cursor[0] + 1, 0
        return parts, got

    sel = selectors.DefaultSelector()
    conns = []
    for _ in range(nconn):
        s = socket.create_connection(hostport(target))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        c = {"s": s, "inflight": 0, "out": collections.deque(), "tail": b""}
        conns.append(c)
    stored = answered = sent = 0
    other = {}
    exhausted = False
    refill = max(1, depth // 2)

    def fill(c):
        nonlocal sent, exhausted
        if exhausted or c["inflight"] > depth - refill:
            return
        bufs, n = take(depth - c["inflight"])
        if n < depth - c["inflight"]:
            exhausted = True
        c["inflight"] += n
        sent += n
        c["out"].extend(memoryview(x) for x in bufs)

    def events(c):
        return selectors.EVENT_READ | (selectors.EVENT_WRITE if c["out"] else 0)

    def flush(c):
        out = c["out"]
        while out:
            try:
                n = c["s"].sendmsg(list(itertools.islice(out, 0, 512)))
            except BlockingIOError:
                return
            while n:
                if n >= len(out[0]):
                    n -= len(out.popleft())
                else:
                    out[0] = out[0][n:]
                    n = 0

    t0 = time.monotonic()
    for c in conns:
        fill(c)
        flush(c)
        sel.register(c["s"], events(c), c)
    while answered < total:
        ready = sel.select(timeout=30)
        if not ready:
            print(f"pyload: no answer for 30 s after {answered} answers", file=sys.stderr)
            return 1
        for key, ev in ready:
            c = key.data
            if ev & selectors.EVENT_WRITE:
                flush(c)
            if ev & selectors.EVENT_READ:
                try:
                    d = c["s"].recv(1 << 18)
                except BlockingIOError:
                    d = None
                if d is not None:
                    if not d:
                        print(f"pyload: connection closed by the server after {answered} answers",
                              file=sys.stderr)
                        return 1
                    buf = c["tail"] + d
                    cut = buf.rfind(b"\n") + 1
                    done, c["tail"] = buf[:cut], buf[cut:]
                    if done:
                        n = done.count(b"\n")
                        ok = done.count(b"STORED\r\n") - done.count(b"NOT_STORED\r\n")
                        if ok != n:
                            for line in done.split(b"\r\n"):
                                if line and line != b"STORED":
                                    w = line.split(b" ")[0].decode(errors="replace")
                                    other[w] = other.get(w, 0) + 1
                        stored += ok
                        answered += n
                        c["inflight"] -= n
            fill(c)
            flush(c)
            sel.modify(c["s"], events(c), c)
    el = time.monotonic() - t0
    for c in conns:
        c["s"].close()
    print(f"target:           {target} (pyload)")
    print(f"source:           {wl}, scale {scale:g}")
    print(f"ops:              {answered}")
    print(f"connections:      {nconn} x pipeline {depth}")
    print(f"answers:          STORED {stored}" + "".join(f", {k} {v}" for k, v in other.items()))
    print(f"errors:           {answered - stored}")
    print(f"elapsed:          {el:.3f} s")
    print(f"ops/s:            {answered / el:.0f}")
    return 0 if answered == total and stored == total else 1


# --------------------------------------------------------------------------- parsers

def cmd_parse_memcaslap(path):
    txt = open(path, errors="replace").read()
    m = re.findall(r"Run time:\s*([\d.]+)s\s+Ops:\s*(\d+)\s+TPS:\s*(\d+)", txt)
    if not m:
        return 1
    secs, ops, tps = m[-1]
    print(ops, secs, tps)
    return 0


def cmd_parse_load(path):
    txt = open(path, errors="replace").read()
    ops = re.search(r"^ops:\s+(\d+)", txt, re.M)
    el = re.search(r"^elapsed:\s+([\d.]+)", txt, re.M)
    rate = re.search(r"^ops/s:\s+([\d.]+)", txt, re.M)
    err = re.search(r"^errors:\s+(\d+)", txt, re.M)
    if not (ops and el and rate) or (err and int(err.group(1))):
        return 1
    print(ops.group(1), el.group(1), rate.group(1))
    return 0


LAT_RE = re.compile(r"^latency (\S+):\s+p50 ([\d.]+) us\s+p99 ([\d.]+) us\s+p99\.9 ([\d.]+) us"
                    r"\s+max ([\d.]+) us\s+\((\d+) answers\)", re.M)


def cmd_parse_latency(path):
    txt = open(path, errors="replace").read()
    lat = LAT_RE.findall(txt)
    late = re.search(r"^rate:.*?(\d+) ops sent over 1 ms late", txt, re.M)
    ans = re.search(r"^answers:\s+(.*)$", txt, re.M)
    miss = re.search(r"\bmiss (\d+)", ans.group(1)) if ans else None
    if not lat:
        return 1
    for cmd, p50, p99, p999, mx, n in lat:
        print(cmd, p50, p99, p999, mx, n, late.group(1) if late else "-",
              miss.group(1) if miss else 0)
    return 0


def cmd_parse_strace(path):
    calls = {}
    total = 0
    for line in open(path, errors="replace"):
        p = line.split()
        if len(p) < 5 or not re.match(r"^[\d.]+$", p[0]):
            continue
        if p[-1] == "total":
            total = int(p[3])
        else:
            calls[p[-1]] = calls.get(p[-1], 0) + int(p[3])
    if not total:
        total = sum(calls.values())
    top = sorted(calls.items(), key=lambda kv: -kv[1])[:6]
    tops = ",".join(f"{k}={v}" for k, v in top) or "-"
    print(total, calls.get("read", 0), calls.get("write", 0), calls.get("epoll_ctl", 0),
          calls.get("writev", 0), tops)
    return 0


# --------------------------------------------------------------------------- report

LOADS = ["memcaslap", "sets", "large", "latency"]
DEFAULT_PATHS = ["direct", "slabtap", "twemproxy"]


def load_title(load, meta):
    if load == "memcaslap":
        return "a) memcaslap -T 1 -c 16 -X 100 (90% get / 10% set, 100-byte values)"
    if load == "sets":
        return f"b) pipelined sets: {meta.get('sets_wl', '')}"
    if load == "large":
        return f"c) 100 KB values (sets): {meta.get('large_wl', '')}"
    return (f"d) latency: open loop at {meta.get('rate', '?')} ops/s for "
            f"{meta.get('latency_seconds', '?')} s, {meta.get('latency_wl', '')} "
            f"({meta.get('latency_conns', '?')} connections x {meta.get('latency_pipeline', '?')})")


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fnum(x, fmt="{:.2f}", none="-"):
    return none if x is None else fmt.format(x)


def read_tsv(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [line.rstrip("\n").split("\t") for line in f if line.strip()]


def cmd_report(d):
    rows = []   # load gen path round ops secs ops_s pcpu mcpu rss
    for p in read_tsv(d, "results.tsv"):
        rows.append({"load": p[0], "gen": p[1], "path": p[2], "round": int(p[3]),
                     "ops": int(p[4]), "secs": float(p[5]), "ops_s": float(p[6]),
                     "pcpu": None if p[7] == "-" else int(p[7]),
                     "mcpu": int(p[8]), "rss": None if p[9] == "-" else int(p[9])})
    st = {}
    for p in read_tsv(d, "strace.tsv"):
        ops = int(p[3])
        if ops > 0:
            st[(p[0], p[1], p[2])] = {"ops": ops, "total": int(p[4]) / ops,
                                      "read": int(p[5]) / ops, "write": int(p[6]) / ops,
                                      "epoll_ctl": int(p[7]) / ops, "writev": int(p[8]) / ops,
                                      "top": p[9]}
    lat = {}    # (path, round) -> {cmd: {...}}, and "late"/"misses" per run
    for p in read_tsv(d, "latency.tsv"):
        # load path round cmd p50 p99 p99.9 max answers late misses
        run = lat.setdefault((p[1], int(p[2])), {"cmds": {}})
        run["cmds"][p[3]] = {"p50": float(p[4]), "p99": float(p[5]), "p999": float(p[6]),
                             "max": float(p[7]), "n": int(p[8])}
        run["late"] = None if p[9] == "-" else int(p[9])
        run["misses"] = int(p[10])
    meta = {}
    mp = os.path.join(d, "meta.txt")
    if os.path.exists(mp):
        for line in open(mp):
            k, _, v = line.rstrip("\n").partition("=")
            meta[k] = v
    tck = int(meta.get("clk_tck", os.sysconf("SC_CLK_TCK")))
    us = 1e6 / tck
    paths = meta.get("paths", "").split() or DEFAULT_PATHS
    # the targets are on the pooled slabtap (or on the only slabtap path there is)
    tp = "slabtap" if "slabtap" in paths else next((x for x in paths if x.startswith("slabtap")),
                                                   "slabtap")

    def per_round(load, gen):
        out = {}
        for r in rows:
            if r["load"] == load and r["gen"] == gen:
                out.setdefault(r["round"], {})[r["path"]] = r
        return out

    summary = {}
    for load in LOADS:
        gens = []
        for r in rows:
            if r["load"] == load and r["gen"] not in gens:
                gens.append(r["gen"])
        if not gens:
            continue
        print()
        print(f"== {load_title(load, meta)}")
        hdr = (f"{'path':<10} {'generator':<13} {'ops/s (med)':>12} {'/direct':>8} {'/twemproxy':>10} "
               f"{'proxy us/op':>11} {'mc us/op':>9} {'sys/req':>8} {'read':>6} {'write':>6} "
               f"{'writev':>6} {'ep_ctl':>6} {'peak RSS':>10}")
        print(hdr)
        print("-" * len(hdr))
        for gen in gens:
            pr = per_round(load, gen)
            for path in paths:
                mine = [rr[path] for rr in pr.values() if path in rr]
                if not mine:
                    continue
                tput = med([m["ops_s"] for m in mine])
                rdir = med([rr[path]["ops_s"] / rr["direct"]["ops_s"]
                            for rr in pr.values() if path in rr and "direct" in rr])
                rtw = med([rr[path]["ops_s"] / rr["twemproxy"]["ops_s"]
                           for rr in pr.values() if path in rr and "twemproxy" in rr])
                pcpu = med([m["pcpu"] * us / m["ops"] for m in mine if m["pcpu"] is not None])
                mcpu = med([m["mcpu"] * us / m["ops"] for m in mine])
                rss = max([m["rss"] for m in mine if m["rss"] is not None], default=None)
                s = st.get((load, gen, path))
                print(f"{path:<10} {gen:<13} {tput:>12,.0f} {fnum(rdir):>8} {fnum(rtw):>10} "
                      f"{fnum(pcpu):>11} {fnum(mcpu):>9} "
                      f"{fnum(s and s['total']):>8} {fnum(s and s['read']):>6} "
                      f"{fnum(s and s['write']):>6} {fnum(s and s['writev']):>6} "
                      f"{fnum(s and s['epoll_ctl']):>6} "
                      f"{fnum(rss and rss / 1024, '{:.1f} MB'):>10}")
                summary[(load, gen, path)] = {"tput": tput, "rdir": rdir, "rtw": rtw,
                                              "pcpu": pcpu, "mcpu": mcpu}
        for gen in gens:
            for path in paths:
                s = st.get((load, gen, path))
                if s:
                    print(f"  strace {path}/{gen}: {s['ops']} ops; top calls: {s['top']}")
        if load == "latency" and lat:
            latency_table(lat, paths, summary)
    print()
    print("ops/s: median over rounds; /direct and /twemproxy: median of the per-round ratios")
    print("(paths alternate within a round); us/op: (utime+stime) delta / ops, median over")
    print("rounds (memcached's includes the slabtap proxies' stats polling); sys/req: strace")
    print("-c -f on the proxy during one extra short round, calls / ops; peak RSS: VmHWM,")
    print("reset before each round, max over rounds.")

    # ---- targets
    print()
    print(f"== targets ({tp} vs direct / twemproxy, same generator)")
    verdicts = []

    def check(name, val, op, limit, detail):
        if val is None:
            verdicts.append(None)
            print(f"  [ n/a] {name}: {detail}")
            return
        ok = val <= limit if op == "<=" else val >= limit
        verdicts.append(ok)
        print(f"  [{'PASS' if ok else 'FAIL'}] {name}: {val:.2f} {op} {limit:g}  ({detail})")

    def g(load, gen, path, k):
        v = summary.get((load, gen, path))
        return v and v[k]

    all_gens = ("memcaslap", "slabtap-load", "pyload", "slabtap-rate")
    for load in LOADS:
        for gen in all_gens:
            sl, tw = g(load, gen, tp, "pcpu"), g(load, gen, "twemproxy", "pcpu")
            if sl is not None and tw:
                check(f"proxy CPU/op {tp}/twemproxy, {load} [{gen}]", sl / tw, "<=", 0.5,
                      f"{sl:.2f} vs {tw:.2f} us/op")
    for load in LOADS:
        for gen in all_gens:
            sl, di = g(load, gen, tp, "mcpu"), g(load, gen, "direct", "mcpu")
            if sl is not None and di:
                check(f"memcached CPU/op behind {tp} / direct, {load} [{gen}]", sl / di, "<=", 1.0,
                      f"{sl:.2f} vs {di:.2f} us/op")
    if any(r["load"] == "memcaslap" for r in rows):
        check(f"memcaslap throughput {tp}/direct", g("memcaslap", "memcaslap", tp, "rdir"),
              ">=", 0.8, "median per-round ratio")
        check(f"memcaslap throughput {tp}/twemproxy", g("memcaslap", "memcaslap", tp, "rtw"),
              ">=", 1.5, "median per-round ratio")
    if any(r["load"] == "sets" for r in rows):
        check(f"pipelined sets throughput {tp}/direct [slabtap-load]",
              g("sets", "slabtap-load", tp, "rdir"), ">=", 0.9, "median per-round ratio")
    for cmd in ("get", "set"):
        a = summary.get(("latency-added", cmd, tp))
        b = summary.get(("latency-added", cmd, "twemproxy"))
        if not lat:
            continue
        name = f"p99 added latency {tp} < twemproxy, {cmd}"
        if a is None or b is None:
            verdicts.append(None)
            print(f"  [ n/a] {name}")
            continue
        ok = a["p99"] < b["p99"]
        verdicts.append(ok)
        print(f"  [{'PASS' if ok else 'FAIL'}] {name}: {a['p99']:+.1f} us < {b['p99']:+.1f} us  "
              f"(median over rounds of p99 minus direct's p99 of the same round)")
    met = sum(1 for v in verdicts if v)
    known = sum(1 for v in verdicts if v is not None)
    print(f"  {met}/{known} targets met")
    return 0 if met == known else 3


def latency_table(lat, paths, summary):
    """Per command and path: p50/p99/p99.9 (median over rounds), max (over all
    rounds), the same percentiles minus direct's of the same round (median over
    rounds), late ops per run and get misses."""
    rounds = sorted({r for _, r in lat})
    cmds = []
    for run in lat.values():
        for c in run["cmds"]:
            if c not in cmds:
                cmds.append(c)
    cmds.sort(key=lambda c: (c != "get", c))
    print()
    hdr = (f"{'cmd':<4} {'path':<10} {'p50 us':>8} {'p99 us':>8} {'p99.9 us':>9} {'max us':>9}  "
           f"{'+p50':>7} {'+p99':>8} {'+p99.9':>8}  {'answers':>8}")
    print(hdr)
    print("-" * len(hdr))
    for cmd in cmds:
        for path in paths:
            mine = [lat[(path, r)]["cmds"][cmd] for r in rounds
                    if (path, r) in lat and cmd in lat[(path, r)]["cmds"]]
            if not mine:
                continue
            row = {k: med([m[k] for m in mine]) for k in ("p50", "p99", "p999")}
            mx = max(m["max"] for m in mine)
            added = {}
            for k in ("p50", "p99", "p999"):
                diffs = [lat[(path, r)]["cmds"][cmd][k] - lat[("direct", r)]["cmds"][cmd][k]
                         for r in rounds
                         if (path, r) in lat and ("direct", r) in lat
                         and cmd in lat[(path, r)]["cmds"] and cmd in lat[("direct", r)]["cmds"]]
                added[k] = med(diffs) if path != "direct" else None
            if path != "direct":
                summary[("latency-added", cmd, path)] = added
            print(f"{cmd:<4} {path:<10} {row['p50']:>8.1f} {row['p99']:>8.1f} {row['p999']:>9.1f} "
                  f"{mx:>9.1f}  {fnum(added['p50'], '{:+.1f}'):>7} {fnum(added['p99'], '{:+.1f}'):>8} "
                  f"{fnum(added['p999'], '{:+.1f}'):>8}  {sum(m['n'] for m in mine):>8}")
    late = []
    for path in paths:
        ls = [lat[(path, r)]["late"] for r in rounds if (path, r) in lat]
        if ls:
            late.append(f"{path} {fnum(med(ls), '{:.0f}')} (max {max((x for x in ls if x is not None), default='-')})")
    print("  late (ops the generator released over 1 ms after their due time, median per run):")
    print("    " + ", ".join(late))
    misses = {p: sum(lat[(p, r)]["misses"] for r in rounds if (p, r) in lat) for p in paths}
    if any(misses.values()):
        print("  WARNING: get misses (the preload did not take?): "
              + ", ".join(f"{p} {n}" for p, n in misses.items() if n))
    else:
        print("  every get hit (preloaded keys)")
    print("  p50/p99/p99.9: median over rounds; max: over all rounds; +p50/+p99/+p99.9: this")
    print("  path's percentile minus direct's in the same round, median over rounds; answers:")
    print("  summed over rounds. Latency is timed from each op's due time (open loop).")


# --------------------------------------------------------------------------- main

def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    if cmd == "freeport":
        print(freeport())
        return 0
    if cmd == "wait-listen":
        return cmd_wait_listen(*args)
    if cmd == "mc":
        try:
            print(mc_command(args[0], args[1]))
            return 0
        except OSError as e:
            print(f"mc {args[0]}: {e}", file=sys.stderr)
            return 1
    if cmd == "ping":
        try:
            return 0 if mc_command(args[0], "version", 1.0).startswith("VERSION") else 1
        except OSError:
            return 1
    if cmd == "cpu":
        print(cpu_ticks(int(args[0])))
        return 0
    if cmd == "cpu-settle":
        return cmd_cpu_settle([int(a) for a in args])
    if cmd == "hwm":
        print(hwm_kb(int(args[0])))
        return 0
    if cmd == "pyload":
        return cmd_pyload(args)
    if cmd == "wl-scale":
        return cmd_wl_scale(*args)
    if cmd == "parse-memcaslap":
        return cmd_parse_memcaslap(args[0])
    if cmd == "parse-load":
        return cmd_parse_load(args[0])
    if cmd == "wl-ops":
        return cmd_wl_ops(*args)
    if cmd == "parse-latency":
        return cmd_parse_latency(args[0])
    if cmd == "parse-strace":
        return cmd_parse_strace(args[0])
    if cmd == "report":
        return cmd_report(args[0])
    print(f"unknown command {cmd}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
