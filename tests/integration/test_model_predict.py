#!/usr/bin/python3
"""test_model_predict: `slabtap model predict` must equal memcached exactly.

Each case starts a real memcached (with -m large enough that nothing is
evicted) and `slabtap proxy` in front of it, and sends through the proxy
many (key length, value length, flags, CAS) combinations:

  * every key length 1..250 (values up to 2,500 bytes) and 400 more small
    items (values 0..6,000), flags 0 and non-zero (up to 2^32-1);
  * every class boundary of the server's own ladder: items of exactly the
    chunk size and one byte over it, with and without flags;
  * chunked items (ntotal > slab_chunk_max) up to the largest item -I
    allows (ntotal == item_size_max exactly), including data sizes that are
    an exact multiple of a chunk's capacity, one byte over it, and tails
    that land exactly on (and one byte over) a class boundary;
  * overwrites of the same key with a different size (small -> larger
    class, large -> small, small <-> chunked), deletes (and a delete of a
    missing key), append/prepend onto small items (onto chunked items is
    documented as not modelled and is avoided), add/replace that fail,
    cas that succeeds, fails with EXISTS and with NOT_FOUND;
  * a refused too-large set on an existing key, with and without noreply
    (memcached unlinks the old item either way), and a refused too-large
    meta set (ms) on an existing key (likewise);
  * noreply sets, meta sets (ms) and meta deletes (md);
  * a seeded random mix of 2,500 sets (noreply or not, key lengths up to
    250, one in 40 chunked), deletes and appends onto small items.

The refused noreply set and the refused ms caught two bugs in
proxy/model_replay.c (fixed there): both left the old item in the model
while memcached had unlinked it.

Runs: default memcached (--keys hash, and --keys full), -C (CAS off),
-f 1.08 -n 16, and -o slab_chunk_max=16384 (bytes on 1.6.18). The proxy
is stopped with SIGTERM (it takes a final stats sample); then
`slabtap model predict --db ... --run NAME` must print "verdict: EXACT"
and exit 0, and its predicted per-class used_chunks, total_pages and
mem_requested must equal memcached's own `stats slabs` / `stats items`,
fetched directly from memcached right after the load.

Not exact on purpose: a run with evictions (-m 2 and ~10 MB of items),
and appends whose result or appended data is chunked (documented as not
modelled; memcached builds those piece by piece: on 1.6.18 an append of
1,000 bytes onto a 600,000-byte item leaves chunks in classes 1, 2, 12,
31 and 39) must print "verdict: NOT COMPARABLE EXACTLY" and exit 0.

Needs memcached on PATH and $SLABTAP. Binds 127.0.0.1 only; every wait is
bounded; everything started is stopped in tearDown.
"""
import os
import random
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

ITEM_SIZE_MAX = 1024 * 1024


run_slabtap = mctest.run_slabtap


def ladder(flags):
    """[chunk sizes] of `slabtap model ladder FLAGS` (test_model_ladder checks
    that against memcached -vv line for line)."""
    rc, out, err = run_slabtap(["model", "ladder"] + flags)
    if rc != 0:
        raise AssertionError("model ladder %s: rc %d %s" % (flags, rc, err))
    return [int(m.group(1)) for m in re.finditer(r"chunk size\s+(\d+)", out)]


ntotal = mctest.ntotal  # (key_len, value_len, flags, cas)
mc_stats = mctest.mc_stats
# {class: {used_chunks, total_pages, chunk_size, mem_requested, number, ...}}
# straight from memcached's `stats slabs` and `stats items`
observed_classes = mctest.mc_classes


ROW = re.compile(r"^\s*(\d+)\s+(\d+) \|\s+(\d+)\s+(-?\d+) \|\s+(\d+)\s+(-?\d+) \|"
                 r"\s+(\d+)\s+(-?\d+) \| (.*)$")


def predicted_classes(text):
    """{class: {chunk_size, used_chunks, mem_requested, total_pages}} from the
    'pred' columns of `slabtap model predict`."""
    out = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            out[int(m.group(1))] = {"chunk_size": int(m.group(2)),
                                    "used_chunks": int(m.group(3)),
                                    "mem_requested": int(m.group(5)),
                                    "total_pages": int(m.group(7))}
    return out


class Plan:
    """Builds the requests (as wire bytes, in batches) and remembers which
    keys it made so later steps can overwrite, delete and append."""

    def __init__(self, chunks, scm, cas):
        self.chunks = chunks          # the ladder's chunk sizes, class 1..n
        self.scm = scm                # slab_chunk_max
        self.cas = cas
        self.batches = []             # [bytes]: each sent with mctest.exchange
        self.cur = []
        self.small = []               # (key, flags, value_len) of small items set
        self.chunked = []

    def overhead(self, key_len, flags):
        return ntotal(key_len, 0, flags, self.cas)

    def value_for(self, key_len, flags, size):
        """The value length whose item is exactly size bytes (None if < 0)."""
        v = size - self.overhead(key_len, flags)
        return v if v >= 0 else None

    def set(self, key, flags, vlen, cmd="set", noreply=False, track=True):
        self.cur.append(b"%s %s %d 0 %d%s\r\n%s\r\n" % (
            cmd.encode(), key, flags, vlen, b" noreply" if noreply else b"",
            b"v" * vlen))
        if track and cmd == "set" and ntotal(len(key), vlen, flags, self.cas) <= ITEM_SIZE_MAX:
            (self.chunked if ntotal(len(key), vlen, flags, self.cas) > self.scm
             else self.small).append((key, flags, vlen))

    def raw(self, data):
        self.cur.append(data)

    def flush(self):
        if self.cur:
            self.batches.append(b"".join(self.cur))
            self.cur = []


def build_plan(chunks, scm, cas):
    p = Plan(chunks, scm, cas)
    # 1. every key length, values 0..2,500, flags 0 and non-zero
    for n in range(1, 251):
        key = (b"A%d_" % n).ljust(n, b"k")[:n]
        flags = 0 if n % 2 else (4294967295 if n == 250 else n * 1000 + 1)
        p.set(key, flags, (n * 131) % 2501)
    p.flush()
    # more small items to overwrite, delete and append to below
    for j in range(400):
        p.set(b"S:%d" % j, (j % 4) * 1000003, (j * 977) % 6000)
    p.flush()
    # 2. every class boundary: exactly the chunk, one byte over
    for c, ch in enumerate(chunks, 1):
        for flags in (0, 0xDEADBEEF):
            for delta in (0, 1):
                key = b"B%03d%d%d%s" % (c, flags & 1, delta, b"b" * 3)  # 10 bytes
                v = p.value_for(len(key), flags, ch + delta)
                if v is not None and ch + delta <= ITEM_SIZE_MAX:
                    p.set(key, flags, v)
    p.flush()
    # 3. chunked items: above slab_chunk_max up to the largest -I allows
    cap = scm - 48                      # data bytes a full chunk holds
    key = b"C" * 10
    sizes = [scm + 1, 600000, 786432, 900000, ITEM_SIZE_MAX]
    data_sizes = [cap, cap + 1, 2 * cap, 2 * cap - 1, 2 * cap + 1]
    # tails exactly on, and one byte over, some class boundaries
    for ch in chunks[::3] + chunks[-2:-1]:
        for delta in (0, 1):
            if ch + delta - 48 > 0 and ch + delta <= scm:
                data_sizes.append(cap + ch + delta - 48)
    i = 0
    for flags in (0, 7):
        for s in sizes:
            v = p.value_for(10, flags, s)
            p.set(b"C%d%08d" % (flags, i), flags, v)
            i += 1
        for d in data_sizes:
            v = d - 2
            if ntotal(10, v, flags, cas) > scm and ntotal(10, v, flags, cas) <= ITEM_SIZE_MAX:
                p.set(b"C%d%08d" % (flags, i), flags, v)
                i += 1
        p.flush()
    # a long key and flags on a chunked item
    p.set(b"L" * 250, 123456, 700000)
    p.flush()
    # one byte over -I on a new key: refused, nothing stored
    p.set(key, 0, p.value_for(10, 0, ITEM_SIZE_MAX + 1), track=False)
    p.flush()
    # 4. overwrites with a different size: small -> larger class, -> smaller,
    #    small -> chunked, chunked -> small
    small = list(p.small)
    chunked = list(p.chunked)
    for j, (k, f, v) in enumerate(small[:250:5]):
        p.set(k, f ^ (j & 1), (v * 3 + 17) % 3000)
    for j, (k, f, v) in enumerate(small[250:290]):
        p.set(k, f, v // 2)
    for k, f, v in small[300:304]:
        p.set(k, f, 650000)
    for k, f, v in chunked[:4]:
        p.set(k, f, 100)
    for k, f, v in chunked[4:6]:
        p.set(k, f, v + 50000 if ntotal(len(k), v + 50000, f, cas) <= ITEM_SIZE_MAX else v - 50000)
    p.flush()
    # 5. deletes: small and chunked; a missing key
    for k, f, v in small[310:340]:
        p.raw(b"delete %s\r\n" % k)
    for k, f, v in chunked[8:10]:
        p.raw(b"delete %s\r\n" % k)
    p.raw(b"delete no-such-key\r\n")
    p.raw(b"delete %s noreply\r\n" % small[341][0])
    p.flush()
    # 6. append / prepend onto small items (staying small), a missing key
    for j, (k, f, v) in enumerate(small[350:400]):
        if ntotal(len(k), v + 500, f, cas) > scm:
            continue
        cmd = b"append" if j % 2 else b"prepend"
        add = 1 + (j * 37) % 500
        p.raw(b"%s %s 99 0 %d\r\n%s\r\n" % (cmd, k, add, b"a" * add))
    p.raw(b"append missing-key 0 0 5\r\naaaaa\r\n")
    p.raw(b"prepend missing-key 0 0 5 noreply\r\naaaaa\r\n")
    p.flush()
    # 7. add / replace: both outcomes
    p.raw(b"add %s 0 0 10\r\n%s\r\n" % (small[400][0], b"x" * 10))          # NOT_STORED
    p.raw(b"add new-added-key 5 0 321\r\n%s\r\n" % (b"x" * 321))            # STORED
    p.raw(b"replace %s 0 0 1200\r\n%s\r\n" % (small[401][0], b"x" * 1200))  # STORED
    p.raw(b"replace missing-key 0 0 12\r\n%s\r\n" % (b"x" * 12))            # NOT_STORED
    p.flush()
    # 8. refused too-large sets on existing keys unlink the old item, with
    #    and without noreply; so does a refused ms
    too = ITEM_SIZE_MAX
    p.raw(b"set %s 0 0 %d\r\n%s\r\n" % (small[402][0], too, b"z" * too))
    p.raw(b"set %s 0 0 %d noreply\r\n%s\r\n" % (small[403][0], too, b"z" * too))
    p.raw(b"set %s 0 0 %d\r\n%s\r\n" % (chunked[10][0], too, b"z" * too))
    p.raw(b"ms %s %d T0\r\n%s\r\n" % (small[404][0], too, b"z" * too))
    p.flush()
    # 9. noreply sets (new keys and overwrites), meta set / delete
    for j in range(300):
        p.set(b"N:%d" % j, j % 3, (j * 53) % 4000, noreply=True)
    for k, f, v in small[410:430]:
        p.set(k, f, v + 900, noreply=True)
    p.raw(b"ms meta-a 1000 F77 T0\r\n%s\r\n" % (b"m" * 1000))
    p.raw(b"ms meta-b 70000 q\r\n%s\r\n" % (b"m" * 70000))
    p.raw(b"ms meta-a 20 F0\r\n%s\r\n" % (b"m" * 20))
    p.raw(b"ms meta-c 5 q\r\nmmmmm\r\n")
    p.raw(b"md meta-c q\r\n")
    p.raw(b"md meta-missing\r\n")
    # ms modes (recorded in sets.ms_mode): append, prepend, add (refused on
    # an existing key, stored on a new one), replace (refused on a missing
    # key, stored on an existing one)
    p.raw(b"ms meta-a 300 MA\r\n%s\r\n" % (b"a" * 300))
    p.raw(b"ms meta-a 40 MP q\r\n%s\r\n" % (b"p" * 40))
    p.raw(b"ms meta-a 9 ME\r\n%s\r\n" % (b"e" * 9))
    p.raw(b"ms meta-d 900 ME\r\n%s\r\n" % (b"e" * 900))
    p.raw(b"ms meta-none 50 MR\r\n%s\r\n" % (b"r" * 50))
    p.raw(b"ms meta-d 3000 MR\r\n%s\r\n" % (b"r" * 3000))
    p.flush()
    # 10. a seeded random mix over 600 keys: sets (one in 40 chunked),
    #     noreply sets, deletes and appends onto items known to be small
    rng = random.Random(7)
    sizes = {}
    for j in range(2500):
        key = b"R%d:" % rng.randrange(600)
        key = key.ljust(rng.choice((len(key), 20, 64, 250)), b"r")
        r = rng.random()
        if r < 0.6:
            flags = rng.choice((0, 1, 65535, 4294967295))
            v = (rng.randrange(max(0, scm - 2000), ITEM_SIZE_MAX - 400) if rng.random() < 0.025
                 else int(rng.expovariate(1 / 1500.0)) % 40000)
            p.set(key, flags, v, noreply=rng.random() < 0.2, track=False)
            sizes[key] = (flags, v)
        elif r < 0.8:
            p.raw(b"delete %s%s\r\n" % (key, b" noreply" if rng.random() < 0.3 else b""))
            sizes.pop(key, None)
        else:
            add = rng.randrange(0, 300)
            old = sizes.get(key)
            if old and ntotal(len(key), old[1] + add, old[0], cas) > scm:
                continue  # append onto or into a chunked item: not modelled
            cmd = rng.choice((b"append", b"prepend"))
            p.raw(b"%s %s 0 0 %d\r\n%s\r\n" % (cmd, key, add, b"p" * add))
            if old:
                sizes[key] = (old[0], old[1] + add)
        if j % 200 == 199:
            p.flush()
    p.flush()
    return p


def cas_ops(port, cas):
    """gets + cas (stored), a cas with a stale unique (EXISTS) and on a
    missing key (NOT_FOUND); straight through the given port."""
    got = mctest.exchange(port, b"set cas-key 3 0 40\r\n%s\r\ngets cas-key\r\n" % (b"c" * 40))
    m = re.search(rb"VALUE cas-key 3 40 (\d+)\r\n", got)
    if not m:
        raise AssertionError("gets answer %r" % got)
    unique = int(m.group(1))
    ans = mctest.exchange(port, b"cas cas-key 9 0 3000 %d\r\n%s\r\n"
                          b"cas cas-key 9 0 50 %d\r\n%s\r\n"
                          b"cas cas-missing 0 0 50 1\r\n%s\r\n"
                          % (unique, b"c" * 3000, unique, b"c" * 50, b"c" * 50))
    # -C: gets reports unique 0 and memcached 1.6.18 answers EXISTS to any cas
    want = (b"STORED\r\nEXISTS\r\nNOT_FOUND\r\n" if cas
            else b"EXISTS\r\nEXISTS\r\nNOT_FOUND\r\n")
    if ans != want:
        raise AssertionError("cas answers %r" % ans)
    return ans


class ModelPredictTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-predict-"

    def start(self, mc_flags, keys, name):
        mc = self.mc(extra=mc_flags, name="mc-" + name)
        px = self.proxy(mc.port, keys=keys, name="px-" + name,
                        extra=["--run", name, "--stats-interval", "200"])
        return mc, px

    def predict(self, db, name):
        rc, out, err = run_slabtap(["model", "predict", "--db", db, "--run", name])
        return rc, out, err

    def check_exact(self, name, mc_flags, ladder_flags, keys, cas, scm=524288):
        chunks = ladder(ladder_flags)
        self.assertEqual(chunks[-1], scm)
        mc, px = self.start(mc_flags, keys, name)
        plan = build_plan(chunks, scm, cas)
        answers = []
        for b in plan.batches:
            answers.append(mctest.exchange(px.port, b, timeout=60))
        cas_ops(px.port, cas)
        text = b"".join(answers)
        # the plan did what it meant to: stores, refusals, misses
        self.assertEqual(text.count(b"SERVER_ERROR object too large for cache"), 4, text[-400:])
        self.assertNotIn(b"CLIENT_ERROR", text)
        self.assertNotIn(b"SERVER_ERROR out of memory", text)
        self.assertIn(b"NOT_FOUND", text)
        self.assertIn(b"NOT_STORED", text)
        obs = observed_classes(mc.port)
        general = mc_stats(mc.port, "")
        self.assertEqual(int(general["evictions"]), 0)
        self.stop_clean(px)
        rc, out, err = self.predict(px.db, name)
        self.assertIn("verdict: EXACT", out, "predict for %s:\n%s\n%s" % (name, out, err))
        self.assertEqual(rc, 0, out + err)
        self.assertIn("CAS %s" % ("on" if cas else "off"), out)
        pred = predicted_classes(out)
        self.assertTrue(pred, out)
        # memcached's own counters, fetched directly, class for class
        for c in sorted(set(pred) | set(obs)):
            p = pred.get(c, {})
            o = obs.get(c, {})
            for field in ("used_chunks", "total_pages", "mem_requested"):
                self.assertEqual(p.get(field, 0), o.get(field, 0),
                                 "%s class %d (chunk %s) %s: predicted %s, memcached %s\n%s"
                                 % (name, c, o.get("chunk_size"), field, p.get(field, 0),
                                    o.get(field, 0), out))
            if c in pred and "chunk_size" in o:
                self.assertEqual(p["chunk_size"], o["chunk_size"])
        # chunked items were there: the largest class holds items
        last = len(chunks)
        self.assertGreater(obs.get(last, {}).get("number", 0), 0, obs)
        live = int(general["curr_items"])
        m = re.search(r"(\d+) live items", out)
        self.assertTrue(m, out)
        self.assertEqual(int(m.group(1)), live)
        return out

    def test_default_hash_keys(self):
        self.check_exact("default_hash", ["-m", "1024"], [], "hash", True)

    def test_default_full_keys(self):
        self.check_exact("default_full", ["-m", "1024"], [], "full", True)

    def test_cas_off(self):
        self.check_exact("cas_off", ["-m", "1024", "-C"], ["-C"], "full", False)

    def test_f108_n16(self):
        self.check_exact("f108_n16", ["-m", "1024", "-f", "1.08", "-n", "16"],
                         ["-f", "1.08", "-n", "16"], "hash", True)

    def test_slab_chunk_max_16k(self):
        self.check_exact("scm16k", ["-m", "1024", "-o", "slab_chunk_max=16384"],
                         ["--slab-chunk-max", "16384"], "full", True, scm=16384)

    def test_append_onto_chunked_not_exact(self):
        """Appends whose result or data is chunked are documented as not
        modelled (memcached builds them piece by piece): the verdict must say
        the run is not comparable exactly, never EXACT or MISMATCH."""
        for name, first, extra in (("app_onto_chunked", 600000, 1000),
                                   ("app_into_chunked", 500000, 100000),
                                   ("app_chunked_data", 500, 600000)):
            mc, px = self.start(["-m", "1024"], "full", name)
            got = mctest.exchange(px.port, b"set a 0 0 %d\r\n%s\r\nappend a 0 0 %d\r\n%s\r\n"
                                  b"set b 0 0 10\r\n0123456789\r\nappend b 0 0 5\r\nabcde\r\n"
                                  % (first, b"v" * first, extra, b"w" * extra), timeout=60)
            self.assertEqual(got, b"STORED\r\n" * 4)
            self.stop_clean(px)
            rc, out, err = self.predict(px.db, name)
            self.assertIn("verdict: NOT COMPARABLE EXACTLY", out, name + "\n" + out + err)
            self.assertIn("1 appends/prepends with chunked data", out)
            self.assertEqual(rc, 0, out + err)

    def test_evictions_not_exact(self):
        mc, px = self.start(["-m", "2"], "hash", "evict")
        for b in range(10):
            payload = b"".join(b"set ev:%d:%d 0 0 2000\r\n%s\r\n" % (b, j, b"e" * 2000)
                               for j in range(500))
            mctest.exchange(px.port, payload, timeout=60)
        self.assertGreater(int(mc_stats(mc.port, "")["evictions"]), 0)
        self.stop_clean(px)
        rc, out, err = self.predict(px.db, "evict")
        self.assertIn("verdict: NOT COMPARABLE EXACTLY", out, out + err)
        self.assertNotIn("verdict: EXACT", out)
        self.assertRegex(out, r"evictions [1-9]\d*")
        self.assertEqual(rc, 0, out + err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
