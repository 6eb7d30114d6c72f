#!/usr/bin/python3
"""test_page_shadows: the page's Shadows panel (issue 23) on a real run.

A proxy in front of a real memcached (-m 8) with one shadow
(--shadow "-f 1.08"), a load of mixed sizes that fills memory and evicts,
reads that hit and miss; midway the shadow's memcached (the proxy's child)
is killed with SIGKILL, the proxy restarts it, and more load follows.

  * /api/run/targets: the primary and the shadow, the shadow's verdict
    "-f 1.08: ..." (not "no sample yet"), its events with the restart;
  * the page in headless chromium: the Shadows panel is shown with two
    targets; one verdict line, for "-f 1.08", whose text is the API's
    verdict; the memory and waste per class, hit ratio and evictions charts
    drawn with points for both targets (a dataset each); the restart marked
    on the time charts (data-marks >= 2: the start and the restart); the
    totals table has a row per target with /api/run/targets' numbers; no
    error of any kind in the browser or the page; a screenshot is saved in
    the artifact dir;
  * `slabtap top --proxy --target "-f 1.08" --once`: the header names the
    target, the rows are the shadow's classes (/api/slabs?target=); the
    primary's by default; on a terminal the key t switches to the shadow
    and back; an unknown target refused with the names;
  * `slabtap model shadows` on the finished run: both targets measured and
    predicted, the shadow's prediction from its restart on;
  * a run without shadows (the same page on a proxy without --shadow): the
    panel stays hidden; a run with a shadow and --reads off: model shadows
    says the prediction needs reads.

Skipped, with a message, when no `chromium` is installed (the API is
checked all the same). Needs memcached on PATH and $SLABTAP. 127.0.0.1 only,
reserved ports, every wait bounded.
"""
import glob
import json
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402
import test_page  # noqa: E402  (its headless chromium driver)
import test_top  # noqa: E402  (its pseudo-terminal driver)

SHADOW = "-f 1.08"
# one browser run is enough (the page does not depend on the proxy's
# upstream mode): proxies started through a local name, so that this file
# is not registered a second time for per-client mode (as test_page)
StartProxy = mctest.Proxy


def children(pid):
    """The direct children of pid (every thread's)."""
    out = set()
    for path in glob.glob("/proc/%d/task/*/children" % pid):
        try:
            with open(path) as f:
                out |= {int(x) for x in f.read().split()}
        except OSError:
            pass
    return out


def targets(port):
    """GET /api/run/targets, asked again while it answers 503 (busy: the
    query went over its budget on a loaded machine), as the page does."""
    def ask():
        st, _, body = mctest.http_request(port, "GET", "/api/run/targets")
        if st == 503:
            return None
        if st != 200:
            raise AssertionError("GET /api/run/targets: %d %r" % (st, body[:300]))
        return json.loads(body.decode("utf-8"))
    return mctest.wait_for(ask, 30, interval=0.5, what="/api/run/targets not busy")


class PageShadowsTest(mctest.ServerTestCase):
    workdir_prefix = "slabtap-pageshadows-"

    def load(self, port, first, n):
        """n sets of sizes 100..6000 (several classes), a get per 2 sets of
        a key written earlier or never (hits and misses)."""
        sizes = [100, 400, 900, 2000, 6000]
        with mctest.connect(port) as s:
            for lo in range(first, first + n, 500):
                items = [(b"k:%d" % i, b"v" * sizes[i % 5]) for i in range(lo, min(lo + 500, first + n))]
                mctest.set_items(s, items, timeout=60)
                keys = b" ".join(b"k:%d" % (i // 2 if i % 4 else i * 7) for i in range(lo, lo + 250, 2))
                s.sendall(b"get " + keys + b"\r\n")
                mctest.recv_until(s, b"END\r\n", timeout=60)

    def test_shadow_panel(self):
        mc = self.mc(name="mc", extra=["-m", "8"])
        px = self.started(StartProxy(self.w.path, mc.port, http=True, name="px",
                                     extra=["--stats-interval", "500", "--shadow", SHADOW]))
        shadow = lambda: (mctest.health(px.http_port).get("shadows") or [{}])[0]  # noqa: E731
        mctest.wait_for(lambda: shadow().get("state") == "up", 30, interval=0.05,
                        what="the shadow up")
        self.load(px.port, 0, 6000)
        # the shadow's memcached: the proxy's child; killed, restarted
        kids = children(px.pid)
        self.assertEqual(len(kids), 1, kids)
        os.kill(kids.pop(), signal.SIGKILL)
        mctest.wait_for(lambda: shadow().get("restarts", 0) >= 1 and shadow().get("state") == "up",
                        30, interval=0.05, what="the shadow restarted")
        self.load(px.port, 6000, 6000)
        self.assertGreater(int(mctest.mc_stats(mc.port)["evictions"]), 0)

        def targets_ready():
            d = targets(px.http_port)
            ts = d["targets"]
            if len(ts) != 2 or not ts[1].get("verdict") or "no sample" in ts[1]["verdict"]:
                return None
            if not any(e["event"] == "restarted" for e in ts[1]["events"]):
                return None
            return d if all(len(t["series"]) >= 3 for t in ts) else None
        d = mctest.wait_for(targets_ready, 60, interval=0.2, what="/api/run/targets with a verdict")
        prim, sh = d["targets"]
        self.assertEqual((prim["target"], prim["kind"]), ("primary", "primary"))
        self.assertEqual((sh["target"], sh["kind"]), (SHADOW, "started"))
        self.assertTrue(sh["verdict"].startswith(SHADOW + ": "), sh["verdict"])
        self.check_top(px)
        br = self.check_browser(px)
        if br:  # off the page before its proxy stops (no failed loads after)
            br.open("about:blank")
            time.sleep(0.5)
            br.events.clear()
        self.stop_clean(px)
        self.check_model(px.db, d)

        # a run without shadows: no panel
        px2 = self.started(StartProxy(self.w.path, mc.port, http=True, name="px2",
                                      extra=["--stats-interval", "200"]))
        self.load(px2.port, 20000, 500)
        d = targets(px2.http_port)
        self.assertNotIn("shadow", [t["kind"] for t in d["targets"]], d)
        self.assertLess(len(d["targets"]), 2, d)
        if br:  # the same browser: one profile directory
            br.open("http://%s:%d/" % (mctest.HOST, px2.http_port))
            br.wait("document.body && document.body.dataset.state === 'ready' && "
                    "document.querySelector('.view[data-polls]') && "
                    "document.querySelector('.view[data-polls]').dataset.polls >= 2", 60,
                    "two polls of the page")
            self.assertTrue(br.eval("document.querySelector('[data-panel=\"shadows\"]').hidden"))
            self.assertEqual(br.problems(), [])
            self.assertEqual(br.eval("document.body.dataset.errors"), "0")
        self.stop_clean(px2)

        # a run with a shadow and no reads recorded: model shadows says so
        px3 = self.started(StartProxy(self.w.path, mc.port, http=True, name="px3",
                                      extra=["--stats-interval", "200", "--reads", "off",
                                             "--shadow", SHADOW]))
        mctest.wait_for(lambda: (mctest.health(px3.http_port).get("shadows") or [{}])[0]
                        .get("state") == "up", 30, interval=0.05, what="px3's shadow up")
        self.load(px3.port, 30000, 500)
        self.stop_clean(px3)
        rc, out, err = mctest.run_slabtap(["model", "shadows", "--db", px3.db])
        self.assertEqual(rc, 0, err)
        self.assertIn("not predicted: needs the run's reads, and the run has none", out)

    def check_top(self, px):
        """slabtap top --proxy --target: the shadow's classes, the header
        naming it; an unknown target refused with the names."""
        addr = "%s:%d" % (mctest.HOST, px.http_port)
        rc, out, err = mctest.run_slabtap(["top", "--proxy", addr, "--target", SHADOW, "--once",
                                           "--interval", "0"])
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[1], "target: %s (2 of 2)" % SHADOW, out)
        sl = mctest.http_json(px.http_port, "GET", "/api/slabs?target=" +
                              SHADOW.replace(" ", "%20"))
        rows = [ln.split()[0] for ln in lines[lines.index("") + 2:] if ln.strip()]
        self.assertEqual(sorted(int(r) for r in rows), sorted(c["class_id"] for c in sl["classes"]))
        rc, out, err = mctest.run_slabtap(["top", "--proxy", addr, "--once", "--interval", "0"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines()[1], "target: primary (1 of 2)", out)
        # on a terminal: t switches to the shadow and back
        t = test_top.Pty([mctest.SLABTAP, "top", "--proxy", addr, "--interval", "200"])
        self.addCleanup(t.close)
        t.read_until(lambda o: any(b"target: primary (1 of 2)" in f for f in t.frames()))
        self.assertIn(b"t target  q quit", t.frames()[-1])
        os.write(t.fd, b"t")
        t.read_until(lambda o: ("target: %s (2 of 2)" % SHADOW).encode() in o)
        mark = len(t.out)
        os.write(t.fd, b"t")
        t.read_until(lambda o: b"target: primary (1 of 2)" in o[mark:])
        os.write(t.fd, b"q")
        self.assertEqual(t.wait(), 0)
        rc, out, err = mctest.run_slabtap(["top", "--proxy", addr, "--target", "nope", "--once",
                                           "--interval", "0"])
        self.assertEqual(rc, 1)
        self.assertIn("HTTP 404", err)
        self.assertIn("-f 1.08", err)

    def check_model(self, db, api):
        """slabtap model shadows on the finished run: both targets measured
        as target_totals says (the route's totals), each predicted over the
        requests since its start -- the shadow's since its restart."""
        rc, out, err = mctest.run_slabtap(["model", "shadows", "--db", db, "--format", "json"])
        self.assertEqual(rc, 0, err)
        m = json.loads(out)
        self.assertEqual([t["target"] for t in m["targets"]], ["primary", SHADOW])
        prim, sh = m["targets"]
        self.assertGreater(m["requests"], 12000)
        for t in m["targets"]:
            self.assertIsNotNone(t["measured"], t)
            self.assertIsNotNone(t["predicted"], t)
            self.assertGreater(t["predicted"]["reads"], 0, t)
            self.assertGreater(t["predicted"]["result"]["pages"], 0, t)
        self.assertEqual(prim["predicted"]["from_request"], 0)
        # the shadow was restarted after 6,000 sets: its prediction starts there
        self.assertGreater(sh["predicted"]["from_request"], 6000)
        self.assertLess(sh["predicted"]["from_request"], m["requests"])
        self.assertLess(sh["predicted"]["reads"], prim["predicted"]["reads"])
        for t in m["targets"]:
            print("test_page_shadows: model shadows %-8s measured hit ratio %s, predicted %.4f "
                  "(from request %d)" % (t["target"], t["measured"]["hit_ratio"],
                                         t["predicted"]["result"]["hit_ratio"],
                                         t["predicted"]["from_request"]))
        rc, out, err = mctest.run_slabtap(["model", "shadows", "--db", db])
        self.assertEqual(rc, 0, err)
        self.assertIn("predicted", out)
        self.assertIn(SHADOW, out)

    def check_browser(self, px):
        if not test_page.CHROMIUM:
            print("test_page_shadows: no chromium installed: the page itself not checked")
            return None
        br = test_page.Browser(self.w.path)
        self.addCleanup(br.close)
        br.viewport(1280, 900, False)
        base = "http://%s:%d/" % (mctest.HOST, px.http_port)
        br.open(base)
        sec = "document.querySelector('[data-panel=\"shadows\"]')"
        br.wait(sec + " && !" + sec + ".hidden && " + sec + ".dataset.targets === '2' && "
                "document.querySelectorAll('ul.verdicts li.verdict-line').length === 1", 60,
                "the Shadows panel with one verdict")
        for name in ("tmemory", "twaste", "thits", "tevictions"):
            br.wait("Number(document.querySelector('canvas[data-chart=\"%s\"]').dataset.points) > 0"
                    % name, 30, "points in " + name)
            self.assertEqual(br.eval("document.querySelector('canvas[data-chart=\"%s\"]')"
                                     ".dataset.datasets" % name), "2", name)
        for name in ("thits", "tevictions"):
            br.wait("Number(document.querySelector('canvas[data-chart=\"%s\"]').dataset.marks) >= 2"
                    % name, 30, "the start and the restart marked on " + name)
        li = "document.querySelector('ul.verdicts li.verdict-line')"
        self.assertEqual(br.eval(li + ".dataset.target"), SHADOW)

        # the verdict line is the API's verdict (both move while the run is
        # live: asked again until one poll of the page and the API agree)
        def same():
            api = targets(px.http_port)["targets"][1]["verdict"]
            got = br.eval(li + ".querySelector('.verdict-text').textContent")
            return got if got == api else None
        verdict = mctest.wait_for(same, 30, interval=0.3, what="the page's verdict = the API's")
        self.assertTrue(verdict.startswith(SHADOW + ": "), verdict)
        rows = br.eval("Array.from(document.querySelectorAll('table.targets tbody tr'))"
                       ".map(tr => [tr.dataset.target, Number(tr.querySelector("
                       "'td[data-key=\"pages\"]').dataset.v)])")
        api = targets(px.http_port)["targets"]
        self.assertEqual([r[0] for r in rows], ["primary", SHADOW])
        self.assertEqual(len(rows), len(api))
        for (_, pages), t in zip(rows, api):
            self.assertGreater(pages, 0)
            self.assertLessEqual(abs(pages - t["totals"]["pages"]), 2)  # a sample apart at most
        os.makedirs(os.path.join(test_page.ARTIFACTS), exist_ok=True)
        png = os.path.join(test_page.ARTIFACTS, "shadows-1280.png")
        br.screenshot(png, 1280, False)
        print("test_page_shadows: screenshot %s" % png)
        self.assertEqual(br.problems(), [])
        self.assertEqual(br.eval("document.body.dataset.errors"), "0")
        return br


if __name__ == "__main__":
    unittest.main()
