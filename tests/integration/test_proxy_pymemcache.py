#!/usr/bin/python3
"""test_proxy_pymemcache: an unmodified client sees no difference.

1. pymemcache runs one scripted sequence straight to a real memcached and,
   after flush_all, again through `slabtap proxy` in front of the same
   memcached: every result must be equal (cas numbers compared by order of
   appearance, stats by the names of the stats). After SIGTERM the proxy must
   exit 0 with no sanitizer report, and table `sets` must hold one row per
   write, in order, with the right cmd, key, key_len, value_len, flags,
   exptime and answer; get_counts must count every read.
2. Raw sockets: meta commands (ms mg md ma mn me with q, O, k and base64
   keys), an unknown command, `set k 0 0 abc` garbage and a pipelined mix
   get byte-identical answers through the proxy and direct. These run
   against two fresh memcached instances (one direct, one behind a second
   proxy) fed the same bytes, so cas numbers match too.

Needs memcached on PATH, python3-pymemcache and $SLABTAP (see mctest.py).
Everything listens on 127.0.0.1; every wait is bounded.
"""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

from pymemcache.client.base import Client  # noqa: E402
from pymemcache import exceptions as mcexc  # noqa: E402


def client(port):
    return Client((mctest.HOST, port), default_noreply=False, connect_timeout=5, timeout=20)


class Script:
    """Runs the sequence, keeping every result and the row each write must
    leave in `sets` (cmd, key, value_len, flags, exptime, answer)."""

    def __init__(self, c):
        self.c = c
        self.results = []
        self.rows = []
        self.reads = {}  # cmd -> [requests, keys, hits, misses, bytes]

    def op(self, label, fn, row=None):
        try:
            r = fn()
        except mcexc.MemcacheError as e:
            msg = e.args[0] if e.args else ""
            r = ("raised", type(e).__name__, msg.decode() if isinstance(msg, bytes) else str(msg))
        self.results.append((label, r))
        if row is not None:
            self.rows.append(row)
        return r

    def read(self, cmd, label, fn, keys):
        r = self.op(label, fn)
        found = r if isinstance(r, dict) else ({keys[0]: r} if r not in (None, (None, None)) else {})
        g = self.reads.setdefault(cmd, [0, 0, 0, 0, 0])
        g[0] += 1
        g[1] += len(keys)
        g[2] += len(found)
        g[3] += len(keys) - len(found)
        for v in found.values():
            g[4] += len(v[0] if isinstance(v, tuple) else v)
        return r


def W(cmd, key, vlen, flags, exptime, answer):
    return dict(cmd=cmd, key=key, key_len=len(key), value_len=vlen, flags=flags,
                exptime=exptime, answer=answer)


def O(cmd, key, answer, exptime=None):
    """A recorded non-store command: no value_len and no flags."""
    return dict(cmd=cmd, key=key, key_len=len(key), value_len=None, flags=None,
                exptime=exptime, answer=answer)


def run_sequence(port, item_size_max):
    s = Script(client(port))
    c = s.c
    s.op("set k1", lambda: c.set("k1", b"v1", flags=5), W("set", "k1", 2, 5, 0, "STORED"))
    s.read("get", "get k1", lambda: c.get("k1"), ["k1"])
    s.op("add k1", lambda: c.add("k1", b"x"), W("add", "k1", 1, 0, 0, "NOT_STORED"))
    s.op("add k2", lambda: c.add("k2", b"two", expire=100), W("add", "k2", 3, 0, 100, "STORED"))
    s.op("replace k3", lambda: c.replace("k3", b"nope"), W("replace", "k3", 4, 0, 0, "NOT_STORED"))
    s.op("replace k2", lambda: c.replace("k2", b"TWO", flags=7, expire=200),
         W("replace", "k2", 3, 7, 200, "STORED"))
    s.op("append k2", lambda: c.append("k2", b"+a"), W("append", "k2", 2, 0, 0, "STORED"))
    s.op("prepend k2", lambda: c.prepend("k2", b"p-"), W("prepend", "k2", 2, 0, 0, "STORED"))
    s.op("append nokey", lambda: c.append("nokey", b"z"), W("append", "nokey", 1, 0, 0, "NOT_STORED"))
    s.read("get", "get k2", lambda: c.get("k2"), ["k2"])
    val, cas = s.read("gets", "gets k1", lambda: c.gets("k1"), ["k1"])
    s.op("cas k1 ok", lambda: c.cas("k1", b"v1new", cas, flags=9), W("cas", "k1", 5, 9, 0, "STORED"))
    s.op("cas k1 stale", lambda: c.cas("k1", b"again", cas), W("cas", "k1", 5, 0, 0, "EXISTS"))
    s.op("cas nokey", lambda: c.cas("nokey", b"x", "12345"), W("cas", "nokey", 1, 0, 0, "NOT_FOUND"))
    s.read("gets", "gets nokey", lambda: c.gets("nokey"), ["nokey"])
    s.op("delete k2", lambda: c.delete("k2"), O("delete", "k2", "DELETED"))
    s.op("delete k2 again", lambda: c.delete("k2"), O("delete", "k2", "NOT_FOUND"))
    s.op("set ctr", lambda: c.set("ctr", b"10"), W("set", "ctr", 2, 0, 0, "STORED"))
    s.op("incr ctr", lambda: c.incr("ctr", 5), O("incr", "ctr", "15"))
    s.op("decr ctr", lambda: c.decr("ctr", 20), O("decr", "ctr", "0"))
    s.op("incr nokey", lambda: c.incr("nokey", 1), O("incr", "nokey", "NOT_FOUND"))
    s.op("decr nokey", lambda: c.decr("nokey", 1), O("decr", "nokey", "NOT_FOUND"))
    s.op("touch k1", lambda: c.touch("k1", 300), O("touch", "k1", "TOUCHED", 300))
    s.op("touch nokey", lambda: c.touch("nokey", 5), O("touch", "nokey", "NOT_FOUND", 5))
    s.op("set_many", lambda: c.set_many({"m1": b"a", "m2": b"bb", "m3": b"ccc"}, flags=3, expire=50))
    for k, n in (("m1", 1), ("m2", 2), ("m3", 3)):
        s.rows.append(W("set", k, n, 3, 50, "STORED"))
    s.read("get", "get_many", lambda: c.get_many(["m1", "m2", "m3", "nothere"]),
           ["m1", "m2", "m3", "nothere"])
    # noreply: memcached answers nothing, whatever the outcome
    s.op("set nr1 noreply", lambda: c.set("nr1", b"quiet", noreply=True, flags=1),
         W("set", "nr1", 5, 1, 0, "noreply"))
    s.op("add nr1 noreply", lambda: c.add("nr1", b"no", noreply=True), W("add", "nr1", 2, 0, 0, "noreply"))
    s.op("append nr1 noreply", lambda: c.append("nr1", b"!", noreply=True),
         W("append", "nr1", 1, 0, 0, "noreply"))
    s.op("set nrc noreply", lambda: c.set("nrc", b"1", noreply=True), W("set", "nrc", 1, 0, 0, "noreply"))
    s.op("incr nrc noreply", lambda: c.incr("nrc", 4, noreply=True), O("incr", "nrc", "noreply"))
    s.op("touch nr1 noreply", lambda: c.touch("nr1", 10, noreply=True), O("touch", "nr1", "noreply", 10))
    s.op("set_many noreply", lambda: c.set_many({"n1": b"1", "n2": b"22"}, noreply=True))
    s.rows += [W("set", "n1", 1, 0, 0, "noreply"), W("set", "n2", 2, 0, 0, "noreply")]
    s.op("delete n1 noreply", lambda: c.delete("n1", noreply=True), O("delete", "n1", "noreply"))
    s.op("cas nr1 noreply", lambda: c.cas("nr1", b"zz", "1", noreply=True), W("cas", "nr1", 2, 0, 0, "noreply"))
    s.read("get", "get nr after noreply",
           lambda: c.get_many(["nr1", "nrc", "n1", "n2"]), ["nr1", "nrc", "n1", "n2"])
    # values the protocol must carry as opaque bytes
    binv = b"\r\nEND\r\nVALUE x 0 1\r\nSTORED\r\nMN\r\n\x00\xff\r"
    s.op("set bin", lambda: c.set("bin", binv, flags=2), W("set", "bin", len(binv), 2, 0, "STORED"))
    s.read("get", "get bin", lambda: c.get("bin"), ["bin"])
    big = bytes(range(256)) * 1953 + b"\r\n" * 16  # 500,000 bytes
    assert len(big) == 500000
    s.op("set big", lambda: c.set("big", big), W("set", "big", 500000, 0, 0, "STORED"))
    s.read("get", "get big", lambda: c.get("big"), ["big"])
    huge = b"h" * item_size_max
    s.op("set huge", lambda: c.set("huge", huge),
         W("set", "huge", item_size_max, 0, 0, "SERVER_ERROR object too large for cache"))
    s.op("set huge noreply", lambda: c.set("huge2", huge, noreply=True),
         W("set", "huge2", item_size_max, 0, 0, "noreply"))
    s.read("get", "get huge", lambda: c.get_many(["huge", "huge2", "k1"]), ["huge", "huge2", "k1"])
    s.op("stats", lambda: sorted(c.stats().keys()))
    s.op("stats settings", lambda: sorted(c.stats("settings").keys()))
    s.op("version", lambda: c.version())
    s.op("flush_all", lambda: c.flush_all())
    s.read("get", "get after flush", lambda: c.get("k1"), ["k1"])
    s.op("set after flush", lambda: c.set("k1", b"fresh"), W("set", "k1", 5, 0, 0, "STORED"))
    s.op("flush_all noreply", lambda: c.flush_all(noreply=True))
    s.read("get", "get after flush noreply", lambda: c.get("k1"), ["k1"])
    c.close()
    return s


def normalize(results):
    """cas numbers by order of appearance: the cas counter of one memcached
    keeps rising between the two runs."""
    seen = {}
    out = []
    for label, r in results:
        if isinstance(r, tuple) and len(r) == 2 and isinstance(r[1], bytes) and r[1].isdigit():
            r = (r[0], "cas#%d" % seen.setdefault(r[1], len(seen)))
        out.append((label, r))
    return out


class PymemcacheThroughProxy(mctest.ServerTestCase):
    def test_same_results_and_rows(self):
        mc = self.mc(extra=["-m", "256"])
        px = self.proxy(mc.port, keys="full", extra=["--run", "pymemcache"])
        c = client(mc.port)
        item_size_max = int(c.stats("settings")[b"item_size_max"])
        self.assertEqual(c.flush_all(), True)
        c.close()

        direct = run_sequence(mc.port, item_size_max)
        c = client(mc.port)
        c.flush_all()
        c.close()
        proxied = run_sequence(px.port, item_size_max)

        # the comparison means something only if the script did what it says
        d = dict(direct.results)
        self.assertEqual(d["get k2"], b"p-TWO+a")
        self.assertEqual(d["cas k1 stale"], False)
        self.assertEqual(d["cas nokey"], None)
        self.assertEqual(d["get bin"], b"\r\nEND\r\nVALUE x 0 1\r\nSTORED\r\nMN\r\n\x00\xff\r")
        self.assertEqual(len(d["get big"]), 500000)
        self.assertEqual(d["set huge"], ("raised", "MemcacheServerError", "object too large for cache"))
        self.assertEqual(d["get nr after noreply"], {"nr1": b"quiet!", "nrc": b"5", "n2": b"22"})
        self.assertEqual(d["get after flush"], None)

        dn, pn = normalize(direct.results), normalize(proxied.results)
        for (label, a), (_, b) in zip(dn, pn):
            self.assertEqual(a, b, "result of %r differs: direct %r, through the proxy %r"
                             % (label, a, b))
        self.assertEqual(len(dn), len(pn))

        self.stop_clean(px)

        rows = mctest.db_rows(px.db, "SELECT * FROM sets ORDER BY seq")
        got = [{k: r[k] for k in ("cmd", "key", "key_len", "value_len", "flags", "exptime", "answer")}
               for r in rows]
        for i, (want, have) in enumerate(zip(proxied.rows, got)):
            self.assertEqual(want, have, "row %d (seq order)" % i)
        self.assertEqual(len(got), len(proxied.rows), "rows in sets: %r" % got[len(proxied.rows):])
        self.assertEqual([r["seq"] for r in rows], list(range(1, len(rows) + 1)))
        for r in rows:
            self.assertIsNotNone(r["t_ns"])
            self.assertEqual(r["latency_ns"] is None, r["answer"] == "noreply", r)

        run = mctest.db_rows(px.db, "SELECT * FROM runs")
        self.assertEqual(len(run), 1)
        self.assertEqual(run[0]["name"], "pymemcache")
        self.assertEqual(run[0]["key_mode"], "full")
        self.assertIsNotNone(run[0]["ended_ns"])
        self.assertEqual(run[0]["rows_dropped"], 0)

        counts = mctest.db_rows(px.db, "SELECT cmd, sum(requests) AS requests, sum(keys) AS keys,"
                                " sum(hits) AS hits, sum(misses) AS misses,"
                                " sum(bytes_returned) AS bytes FROM get_counts GROUP BY cmd")
        have = {r["cmd"]: [r["requests"], r["keys"], r["hits"], r["misses"], r["bytes"]] for r in counts}
        self.assertEqual(have, proxied.reads)
        # rows_recorded counts the rows of `sets` (writes), not read counters
        self.assertEqual(run[0]["rows_recorded"], len(rows))


# --- raw sockets: byte-identical answers -------------------------------------

META = (
    b"ms mk1 3 T0 F5\r\nabc\r\n"
    b"ms mk2 3 q\r\nxyz\r\n"
    b"ms mk3 2 O77 k\r\nhi\r\n"
    b"ms mk4 2 q O8 k\r\nzz\r\n"
    b"ms mk5 2 MA q\r\nno\r\n"          # append to nothing: NS, not suppressed
    b"ms mk1 1 MR I\r\nR\r\n"
    b"ms mk1 2 ME\r\nEE\r\n"            # add on an existing key: NS
    b"mg mk1 v f t s\r\n"
    b"mg mk2 v q k O1\r\n"
    b"mg nokey v q\r\n"
    b"mg nokey v q k O2\r\n"
    b"mg nokey v\r\n"
    b"mg nokey v k O3\r\n"
    b"mg mk3 k O4 c\r\n"
    b"mn\r\n"
    b"md mk3 q\r\n"
    b"md mk3\r\n"
    b"md mk3 q O5 k\r\n"
    b"md mk2 O6\r\n"
    b"ma cnt N0 J13 v\r\n"
    b"ma cnt q\r\n"
    b"ma cnt v MI D5\r\n"
    b"ma cnt v MD D100 O9\r\n"
    b"ma nokey\r\n"
    b"ma nokey q O10\r\n"
    b"ma mk1\r\n"                       # not a number
    b"mn\r\n"
    b"ms Zm9vYmFy 3 b\r\nbar\r\n"       # base64 key "foobar"
    b"mg Zm9vYmFy b v k\r\n"
    b"get foobar\r\n"
    b"ms Zm9vYmF6 2 b q k\r\nbz\r\n"
    b"mg Zm9vYmF6 b v k q\r\n"
    b"md Zm9vYmFy b q\r\n"
    b"mg Zm9vYmFy b v\r\n"
    b"ms !!!! 3 b\r\nabc\r\n"           # bad base64: refused, data block swallowed
    b"ms mk6 2 Z\r\nhi\r\n"             # unknown flag
    b"ms mk6 abc\r\n"
    b"ms mk6\r\n"
    b"mg\r\n"
    b"mg mk1 O" + b"x" * 40 + b" v\r\n"   # opaque too long
    b"mn\r\n"
    b"me mk1\r\n"
    b"me nokey\r\n"
    b"me\r\n"
    b"mx foo\r\n"
)

PIPELINE = (
    b"set p1 0 0 5\r\nhello\r\n"
    b"get p1 p1 nokey p1\r\n"
    b"set p2 1 0 3 noreply\r\nabc\r\n"
    b"gets p2\r\n"
    b"add p2 0 0 1 noreply\r\nx\r\n"
    b"ms p3 2 q\r\nqq\r\n"
    b"mg p3 v\r\n"
    b"incr p1 1\r\n"
    b"set p4 0 0 2\r\n12\r\n"
    b"incr p4 8\r\n"
    b"decr p4 100 noreply\r\n"
    b"get p4\r\n"
    b"set p5 0 0 3\r\nabcd\r\n"        # bad data chunk, then a stray line
    b"set p6 0 0 abc\r\n"
    b"hello world\r\n"
    b"\r\n"
    b"get\r\n"
    b"delete p1 0\r\n"
    b"delete p1 noreply\r\n"
    b"delete p1 1 2 3\r\n"
    b"touch p2 10\r\n"
    b"gat 100 p2 p4\r\n"
    b"gats 0 p2\r\n"
    b"stats nosuchgroup\r\n"
    b"verbosity 1\r\n"
    b"verbosity 0 noreply\r\n"
    b"flush_all noreply\r\n"
    b"get p2\r\n"
    b"set " + b"k" * 251 + b" 0 0 1\r\nx\r\n"   # key too long
    b"cas p2 0 0 1\r\nx\r\n"             # cas without its unique: ERROR
    b"set p7 0 0 4 noreply\r\nab\r\n\r\n"
    b"get p7\r\n"
    b"mn\r\n"
)


def norm_me(data):
    # me's la= is seconds since last access: it may tick between two runs
    return re.sub(rb"la=\d+", b"la=?", data)


class RawBytesThroughProxy(mctest.ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.direct = cls.class_mc(name="mc-direct")
        cls.behind = cls.class_mc(name="mc-behind")
        cls.px = cls.class_proxy(cls.behind.port, keys="full")

    def both(self, payload, norm=lambda b: b, chunk=None):
        a = mctest.exchange(self.direct.port, payload, chunk)
        b = mctest.exchange(self.px.port, payload, chunk)
        self.assertEqual(norm(a), norm(b), "answers differ:\n direct %r\n proxied %r" % (a, b))
        return a

    def test_1_meta(self):
        a = self.both(META, norm_me)
        for want in (b"HD O77 kmk3\r\n", b"VA 3 kmk2 O1\r\nxyz\r\n", b"EN\r\n", b"MN\r\n",
                     b"NS\r\n", b"VA 3 kZm9vYmFy b\r\nbar\r\n", b"VALUE foobar 0 3\r\nbar\r\n",
                     b"CLIENT_ERROR", b"ME mk1 ", b"NF O5 k", b"ERROR\r\n"):
            self.assertIn(want, a)

    def test_2_unknown_command_keeps_connection(self):
        for port in (self.direct.port, self.px.port):
            with mctest.connect(port) as s:
                s.sendall(b"bogus_command arg1 arg2\r\n")
                self.assertEqual(mctest.recv_line(s), b"ERROR\r\n")
                s.sendall(b"set after_unknown 0 0 2\r\nok\r\nget after_unknown\r\n")
                self.assertEqual(mctest.recv_until(s, b"END\r\n"),
                                 b"STORED\r\nVALUE after_unknown 0 2\r\nok\r\nEND\r\n")

    def test_3_garbage_set(self):
        a = self.both(b"set k 0 0 abc\r\nset k 0 0 -1\r\nset k 0 0 2 3 4 5\r\nset k abc 0 1\r\n"
                      b"x\r\nget k\r\n")
        self.assertTrue(a.startswith(b"CLIENT_ERROR bad command line format\r\n"), a)
        # A get with a key over 250 bytes makes memcached drop the answers it
        # has queued but not yet sent on that connection (conn_release_items
        # in process_get_command), so it is only comparable on its own.
        a = self.both(b"get " + b"k" * 251 + b"\r\n")
        self.assertEqual(a, b"CLIENT_ERROR bad command line format\r\n")

    def test_4_pipelined_mix(self):
        a = self.both(PIPELINE, mctest.cas_normalize)
        self.assertIn(b"CLIENT_ERROR bad data chunk\r\n", a)
        self.assertIn(b"VALUE p1 0 5\r\nhello\r\nVALUE p1 0 5\r\nhello\r\nVALUE p1 0 5\r\nhello\r\nEND\r\n", a)
        # the same pipeline again, cut into small pieces at odd places
        for chunk in (1, 2, 7, 100):
            self.both(PIPELINE, mctest.cas_normalize, chunk=chunk)

    def test_5_quit(self):
        outs = []
        for port in (self.direct.port, self.px.port):
            with mctest.connect(port) as s:
                s.sendall(b"set q1 0 0 1\r\nq\r\nget q1\r\nquit\r\nget q1\r\n")
                closed, data = mctest.wait_closed(s, timeout=10)
                self.assertTrue(closed, "port %d: still open after quit" % port)
                outs.append(data)
        self.assertEqual(outs[0], b"STORED\r\nVALUE q1 0 1\r\nq\r\nEND\r\n")
        self.assertEqual(outs[0], outs[1])

    def test_6_quiet_meta_rows(self):
        """A quiet pipeline written the way memcached's docs ask (O and k on
        every quiet request): the rows pair each answer with its request."""
        payload = (b"ms qa 2 q O1 k\r\naa\r\n"
                   b"ms qb 2 MA q O2 k\r\nbb\r\n"
                   b"md qa q O3 k\r\n"
                   b"md qa q O4 k\r\n"
                   b"ms Zm9vYmFy 3 b O6 k F3 T0\r\nbar\r\n"
                   b"ms cnt 1 q O7\r\n5\r\n"
                   b"ma cnt q O8\r\n"
                   b"ma cnt O9 v\r\n"
                   b"ma nokey q O10\r\n"
                   b"mg Zm9vYmFy b q O11 k v\r\n"
                   b"mn\r\n")
        a = self.both(payload)
        self.assertEqual(a, b"NS O2 kqb\r\nNF O4 kqa\r\nHD O6 kZm9vYmFy b\r\nVA 1 O9\r\n7\r\n"
                         b"NF O10\r\nVA 3 O11 kZm9vYmFy b\r\nbar\r\nMN\r\n")
        RawBytesThroughProxy.quiet_conn_rows = [
            ("ms", "qa", 2, 2, "quiet"), ("ms", "qb", 2, 2, "NS O2 kqb"),
            ("md", "qa", 2, None, "quiet"), ("md", "qa", 2, None, "NF O4 kqa"),
            ("ms", "Zm9vYmFy", 6, 3, "HD O6 kZm9vYmFy b"), ("ms", "cnt", 3, 1, "quiet"),
            ("ma", "cnt", 3, None, "quiet"), ("ma", "cnt", 3, None, "VA 1 O9"),
            ("ma", "nokey", 5, None, "NF O10")]

    def test_7_quiet_meta_with_opaque_pairs_by_opaque(self):
        """Quiet meta requests with an opaque are paired by their O flag:
        `ma cnt q O1` (success suppressed) must not take the VA of the next
        `ma cnt v`; the rows and the client's answers match direct.
        Regression (mc_parse.c, mc_reply_is_mine): an answer line without O
        was once given to a quiet request that asked for one, every later
        row on the connection went off by one, and the proxy closed the
        connection ("expected MN, got 'END'")."""
        px = self.proxy(self.behind.port, name="proxy7")
        steps = [b"set cnt 0 0 1\r\n5\r\nma cnt q O1\r\nma cnt v\r\nmn\r\n",
                 b"get x\r\n", b"set a 0 0 1 noreply\r\nb\r\n", b"get y\r\n", b"mn\r\n"]
        ends = [b"MN\r\n", b"END\r\n", None, b"END\r\n", b"MN\r\n"]
        outs = []
        for port in (self.direct.port, px.port):
            out = []
            with mctest.connect(port) as s:
                for step, end in zip(steps, ends):
                    s.sendall(step)
                    if end:
                        out.append(mctest.recv_until(s, end, timeout=10))
            outs.append(out)
        self.stop_clean(px)
        rows = mctest.db_rows(px.db, "SELECT cmd, answer FROM sets ORDER BY seq")
        self.assertEqual([(r["cmd"], r["answer"]) for r in rows],
                         [("set", "STORED"), ("ma", "quiet"), ("ma", "VA 1"), ("set", "noreply")])
        self.assertEqual(outs[0], outs[1])

    def test_9_rows_and_clean_exit(self):
        self.stop_clean(self.px)
        want = getattr(self, "quiet_conn_rows", None)
        self.assertIsNotNone(want, "test_6 did not pass: nothing to check")
        # test_6's connection: the only one whose first row is ms qa
        conn = mctest.db_scalar(self.px.db, "SELECT conn_id FROM sets WHERE cmd = 'ms' AND key = 'qa'")
        rows = mctest.db_rows(self.px.db, "SELECT cmd, key, key_len, value_len, answer, flags, exptime"
                              " FROM sets WHERE conn_id = ? ORDER BY seq", (conn,))
        self.assertEqual([(r["cmd"], r["key"], r["key_len"], r["value_len"], r["answer"]) for r in rows],
                         want)
        self.assertEqual((rows[4]["flags"], rows[4]["exptime"]), (3, 0))
        run = mctest.db_rows(self.px.db, "SELECT * FROM runs")[0]
        self.assertIsNotNone(run["ended_ns"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
