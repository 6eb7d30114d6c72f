"""Meta-quiet requests followed by ordinary ones: every answer is recorded on
the request that caused it.

memcached suppresses only the nominal answer of a meta request with q (HD
for ms/md/ma, EN for mg); its failures (NS, EX, NF) still come. `ms k q`
followed by `ms k ME` can both answer NS, so without help a proxy cannot
tell whose NS arrived. slabtap puts an `mn` of its own between them and
swallows the MN. Checked here: the client sees exactly memcached's bytes,
and the rows name the right answers -- whole batches, batches sent byte by
byte, and the split falling in every place.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402


def ms(key, value, flags=b""):
    return b"ms %s %d%s\r\n%s\r\n" % (key, len(value), (b" " + flags) if flags else b"", value)


# (payload, expected answers per recorded write, in seq order)
CASES = [
    # quiet set succeeds silently, then an add on the same key is refused:
    # the NS is the add's, not the quiet set's
    (ms(b"q1", b"aa", b"q") + ms(b"q1", b"bb", b"ME") + b"mn\r\n",
     ["quiet", "NS"]),
    # quiet add refused (its own NS), then a plain set succeeds
    (ms(b"q1", b"cc", b"q ME") + ms(b"q2", b"dd") + b"mn\r\n",
     ["NS", "HD"]),
    # quiet replace of a missing key (NS), quiet set (silent), replace ok
    (ms(b"missing", b"ee", b"q MR") + ms(b"q3", b"ff", b"q") + ms(b"q3", b"gg", b"MR")
     + b"mn\r\n",
     ["NS", "quiet", "HD"]),
    # quiet delete of a missing key (NF) then a delete that works
    (b"md nope q\r\n" + b"md q3\r\n" + b"mn\r\n",
     ["NF", "HD"]),
    # two quiet requests: the first silent, the second refused -- the NS
    # is the second's
    (ms(b"q4", b"hh", b"q ME") + ms(b"q4", b"ii", b"q ME") + b"mn\r\n",
     ["quiet", "NS"]),
    # with an opaque the answer names its request: no barrier needed
    (ms(b"q5", b"jj", b"q ME O5") + ms(b"q5", b"kk", b"q ME O6") + ms(b"q5", b"ll", b"ME")
     + b"mn\r\n",
     ["quiet", "NS O6", "NS"]),
]


class QuietThenLoud(mctest.ServerTestCase):
    def setUp(self):
        super().setUp()
        self.mc_behind = self.mc()
        self.direct = self.mc(name="direct")

    def run_cases(self, chunk):
        px = self.proxy(self.mc_behind.port, name="proxy-%s" % chunk)
        expected = []
        for payload, answers in CASES:
            want = mctest.exchange(self.direct.port, payload)
            got = mctest.exchange(px.port, payload, chunk=chunk)
            self.assertEqual(got, want, "client bytes differ for %r" % payload)
            expected += answers
        self.stop_clean(px)
        rows = mctest.db_rows(px.db, "SELECT cmd, key, answer FROM sets ORDER BY seq")
        self.assertEqual([r["answer"] for r in rows], expected, rows)

    def test_whole_batches(self):
        self.run_cases(None)

    def test_byte_by_byte(self):
        self.run_cases(1)

    def test_odd_pieces(self):
        self.run_cases(7)


if __name__ == "__main__":
    unittest.main(verbosity=2)
