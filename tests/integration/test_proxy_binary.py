#!/usr/bin/env python3
"""Binary-protocol clients: their bytes pass through unchanged (the same
bytes as direct, on a memcached connection of their own) and their writes
are recorded like text writes -- quiet ones too, from the silence memcached
keeps until a later answer proves them done."""
import os
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

SET, ADD, APPEND, NOOP, QUITQ = 0x01, 0x02, 0x0E, 0x0A, 0x17
SETQ, APPENDQ = 0x11, 0x19


def req(op, key=b"", value=b"", extras=b"", opaque=0, cas=0):
    body = extras + key + value
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, len(body),
                       opaque, cas) + body


def store(op, key, value, flags=0, exptime=0, opaque=0):
    return req(op, key, value, struct.pack(">II", flags, exptime), opaque)


def read_responses(s, n):
    """n binary responses, as bytes, and their (opcode, status, opaque)."""
    raw, heads = b"", []
    for _ in range(n):
        head = mctest.recv_exact(s, 24)
        body = mctest.recv_exact(s, struct.unpack(">I", head[8:12])[0])
        raw += head + body
        heads.append((head[1], struct.unpack(">H", head[6:8])[0],
                      struct.unpack(">I", head[12:16])[0]))
    return raw, heads


PAYLOAD = (store(SET, b"bin:a", b"x" * 100, flags=5, opaque=1) +
           store(SETQ, b"bin:b", b"y" * 300, opaque=2) +
           store(ADD, b"bin:a", b"z", opaque=3) +              # exists
           req(APPENDQ, b"bin:missing", b"tail", opaque=4) +    # not stored: answered
           store(SETQ, b"bin:c", b"w" * 2000, exptime=3600, opaque=5) +
           req(NOOP, opaque=6))


class Binary(mctest.ServerTestCase):
    def test_writes_recorded_and_bytes_unchanged(self):
        direct = self.mc(name="mc-direct")
        mc = self.mc(name="mc-behind")
        px = self.proxy(mc.port)

        def run(port):
            with mctest.connect(port) as s:
                # split at an awkward place: the parser resumes across reads
                s.sendall(PAYLOAD[:37])
                s.sendall(PAYLOAD[37:])
                raw, heads = read_responses(s, 4)
                s.sendall(req(QUITQ))
                closed, rest = mctest.wait_closed(s, timeout=10)
                self.assertTrue(closed)
                return raw + rest, heads
        want, heads = run(direct.port)
        got, _ = run(px.port)
        self.assertEqual(got, want)
        self.assertEqual(heads, [(SET, 0, 1), (ADD, 2, 3), (APPENDQ, 5, 4), (NOOP, 0, 6)])
        self.stop_clean(px)
        rows = mctest.db_rows(px.db, "SELECT cmd, key, key_len, value_len, flags, exptime, "
                                     "answer, latency_ns IS NOT NULL AS timed FROM sets "
                                     "ORDER BY seq")
        self.assertEqual([(r["cmd"], r["key"], r["key_len"], r["value_len"], r["flags"],
                           r["exptime"], r["answer"]) for r in rows],
                         [("set", "bin:a", 5, 100, 5, 0, "STORED"),
                          ("set", "bin:b", 5, 300, 0, 0, "STORED"),
                          ("add", "bin:a", 5, 1, 0, 0, "EXISTS"),
                          ("append", "bin:missing", 11, 4, None, None, "NOT_STORED"),
                          ("set", "bin:c", 5, 2000, 0, 3600, "STORED")])
        self.assertTrue(all(r["timed"] for r in rows))
        # the model tags them like text writes
        self.assertEqual(mctest.db_scalar(px.db, "SELECT count(*) FROM sets "
                                                 "WHERE class_id > 0"), 5)

    def test_unanswered_writes_are_recorded_no_answer(self):
        mc = self.mc()
        px = self.proxy(mc.port)
        with mctest.connect(px.port) as s:
            s.sendall(store(SET, b"k1", b"v", opaque=1))
            read_responses(s, 1)
            s.sendall(store(SETQ, b"k2", b"v", opaque=2))  # nothing proves it done
        self.stop_clean(px)
        rows = mctest.db_rows(px.db, "SELECT key, answer FROM sets ORDER BY seq")
        self.assertEqual([(r["key"], r["answer"]) for r in rows],
                         [("k1", "STORED"), ("k2", "no_answer")])


if __name__ == "__main__":
    unittest.main(verbosity=2)
