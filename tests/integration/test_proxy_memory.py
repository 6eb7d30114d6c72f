#!/usr/bin/env python3
"""--max-memory: clients that never read cannot take slabtap's memory, and the
clients that do read are served meanwhile.

Thirty clients pipeline `get` of a 1000-byte value (150 bytes of answer per
byte of request) and never read; one client does get/set round trips beside
them. Before the bound (and the per-client pending bound inside one read),
this took 2.3 GB of RSS, kept it after the clients left, and the reading
client waited 7.8 s for one answer."""
import os
import socket
import threading
import time
import unittest

import mctest

HOGS = 30
HOG_SECONDS = 4.0  # the hogs send at least this long...
ROUNDS = 25        # ...and until the reading client has made this many round trips
HOG_CAP_SECONDS = 120  # bound of the whole loop on a very slow machine
LIMIT_MB = 32


def proc_status_mb(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no %s in /proc/%d/status" % (field, pid))


def sanitized(pid):
    """ASan's shadow memory and quarantine make RSS say nothing about ours."""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def metrics(port):
    status, _, body = mctest.http_request(port, "GET", "/metrics")
    assert status == 200, status
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def hog(port, stop, sent):
    """Pipelines gets and never reads, until told to stop or closed."""
    s = socket.create_connection((mctest.HOST, port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.setblocking(False)
    req = b"get big\r\n" * 2000
    n = 0
    try:
        while not stop.is_set():
            try:
                n += s.send(req)
            except BlockingIOError:
                time.sleep(0.005)
            except OSError:
                break
    finally:
        sent.append(n)
        s.close()


class MaxMemory(mctest.ServerTestCase):
    def test_non_reading_clients_stay_under_the_bound(self):
        mc = self.mc(extra=["-m", "128"])
        px = self.proxy(mc.port, http=True, extra=["--max-memory", "%dm" % LIMIT_MB])
        c = mctest.connect(px.port)
        c.sendall(b"set big 0 0 1000\r\n" + b"v" * 1000 + b"\r\n")
        self.assertEqual(mctest.recv_line(c), b"STORED\r\n")
        asan = sanitized(px.pid)

        start = time.monotonic()
        until, cap = start + HOG_SECONDS, start + HOG_CAP_SECONDS
        sent, stop = [], threading.Event()
        threads = [threading.Thread(target=hog, args=(px.port, stop, sent)) for _ in range(HOGS)]
        for t in threads:
            t.start()
        worst, rounds, peak_buffers = 0.0, 0, 0.0
        # round trips while the hogs send: a count, not a rate, so a slow
        # machine takes longer instead of failing (each answer within 10 s)
        while (rounds < ROUNDS or time.monotonic() < until) and time.monotonic() < cap:
            t0 = time.monotonic()
            key = b"k%d" % rounds
            c.sendall(b"set " + key + b" 0 0 2\r\nok\r\nget " + key + b"\r\n")
            got = mctest.recv_until(c, b"END\r\n", timeout=10)
            self.assertEqual(got, b"STORED\r\nVALUE " + key + b" 0 2\r\nok\r\nEND\r\n")
            worst = max(worst, time.monotonic() - t0)
            rounds += 1
            if rounds % 20 == 0:
                peak_buffers = max(peak_buffers, metrics(px.http_port)["slabtap_buffer_bytes"])
            time.sleep(0.005)
        stop.set()
        for t in threads:
            t.join(30)
        m = metrics(px.http_port)
        print("\n# %d round trips beside %d non-reading clients (%.0f MB of gets sent): "
              "worst %.0f ms; buffers peaked at %.1f MB of --max-memory %d MB; %d closed "
              "for memory, %d as slow" % (
                  rounds, HOGS, sum(sent) / 1e6, worst * 1000, peak_buffers / 2**20, LIMIT_MB,
                  m["slabtap_memory_clients_closed_total"],
                  m["slabtap_slow_clients_closed_total"]))
        # the reading client was served all along
        self.assertGreaterEqual(rounds, ROUNDS)
        # the non-readers were the ones to go
        self.assertGreater(m["slabtap_memory_clients_closed_total"], 0)
        self.assertLessEqual(peak_buffers, LIMIT_MB * 2**20)
        if not asan:
            hwm = proc_status_mb(px.pid, "VmHWM")
            print("# proxy peak RSS %.0f MB" % hwm)
            # the bound, the recorder's queue and the process itself
            self.assertLess(hwm, LIMIT_MB + 96)
        # when they are gone, the memory is given back
        mctest.wait_for(lambda: metrics(px.http_port)["slabtap_buffer_bytes"] < 8 * 2**20, 10,
                        what="buffers back under 8 MB")
        if not asan:
            rss_after = proc_status_mb(px.pid, "VmRSS")
            print("# proxy RSS after they left %.0f MB" % rss_after)
            self.assertLess(rss_after, LIMIT_MB + 64)
        c.sendall(b"get big\r\n")
        self.assertTrue(mctest.recv_until(c, b"END\r\n").startswith(b"VALUE big 0 1000\r\n"))
        self.stop_clean(px)


if __name__ == "__main__":
    unittest.main(verbosity=2)
