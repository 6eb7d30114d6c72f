#!/usr/bin/python3
"""test_cli_flags: every subcommand parses its flags with the one option
table parser (proxy/core/opt.h) and answers mistakes the same way.

1. Bad flags -- unknown, not a number, `300abc`, out of range, a sign where
   none belongs, a missing value, a value given to a flag, a size or a
   duration that is none -- exit 2 with nothing on stdout and, on stderr,
   exactly two lines: `slabtap COMMAND: MESSAGE` and `see: slabtap COMMAND
   --help` (never the whole usage).
2. --help / -h exit 0 with the usage (which names -v and -q) on stdout and
   nothing on stderr.
3. -v/--verbose and -q/--quiet are accepted everywhere and change no
   result; --name=value works like --name value; options may follow
   positionals.
4. Sizes and durations (core/units.h) end to end: the spellings of issue 20
   (--max-db-size 8MB, --max-memory 1G, --stats-interval 1s, --retain 3600,
   --retain 1h30m) start a real proxy in front of a real memcached, and its
   /health and /api/runs show the values they mean; experiment, top, model
   ladder and load --dry-run take them too, and a size given in another
   spelling gives the very same ladder and plan. -V prints what --version
   prints.

CliFlags starts no server: every command line there fails before it would,
or is a --dry-run / model ladder. UnitsEndToEnd starts memcached and
proxies (mctest). Needs $SLABTAP (default /tmp/bm/slabtap).
"""
import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

SRC = os.environ.get("SLABTAP_SRC") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(SRC, "tests", "data")
SPEC = os.path.join(DATA, "exp_tiny.exp")
WL = os.path.join(DATA, "exp_tiny.wl")
UP = "127.0.0.1:1"  # never dialled: every proxy line below is refused first

# (subcommand words, args, the message after "slabtap <command>: ")
BAD = [
    # proxy
    (["proxy"], ["--bogus"], "unknown option --bogus"),
    (["proxy"], ["--upstream", UP, "--db"], "--db needs a value"),
    (["proxy"], ["--db", "--upstream", UP], "--db needs a value"),
    (["proxy"], ["--queue", "0"], "--queue: 0 is below the minimum 1"),
    (["proxy"], ["--queue", "abc"], '--queue: "abc" is not a number'),
    (["proxy"], ["--stats-interval", "300abc"],
     '--stats-interval: "300abc" is not a duration (examples: 250ms, 1s, 1h30m, \'2 days\'; '
     'a number alone is in milliseconds)'),
    (["proxy"], ["--stats-interval=49"], "--stats-interval: 49 is below the minimum 50ms"),
    (["proxy"], ["--stats-interval", "10ms"], "--stats-interval: 10ms is below the minimum 50ms"),
    (["proxy"], ["--stats-interval", "4294967296"],
     "--stats-interval: 4294967296 is above the maximum 4294967295ms"),
    (["proxy"], ["--stats-interval", "0.5"],
     '--stats-interval: "0.5" is not a whole number of milliseconds'),
    (["proxy"], ["--max-pending", "-1"], '--max-pending: "-1" must be a number without a sign'),
    (["proxy"], ["--drain-ms", "0"], "--drain-ms: 0 is below the minimum 1ms"),
    (["proxy"], ["--max-stall", "2 fortnights"],
     '--max-stall: "2 fortnights" is not a duration (examples: 250ms, 1s, 1h30m, \'2 days\'; '
     'a number alone is in milliseconds)'),
    (["proxy"], ["--max-db-size", "8XB"],
     '--max-db-size: "8XB" is not a size (examples: 512k, 8MB, 1.5GiB)'),
    (["proxy"], ["--max-db-size", "512k"], "--max-db-size: 512k is below the minimum 1MiB"),
    (["proxy"], ["--max-db-size", "1.3b"], '--max-db-size: "1.3b" is not a whole number of bytes'),
    (["proxy"], ["--max-db-size", "99999999999999999999k"],
     "--max-db-size: 99999999999999999999k is above the maximum 18446744073709551615B"),
    (["proxy"], ["--max-request", "2g"], "--max-request: 2g is above the maximum 1GiB"),
    (["proxy"], ["--spill-max", "256k"], "--spill-max: 256k is below the minimum 512KiB"),
    (["proxy"], ["--retain", "1500ms"], '--retain: "1500ms" is not a whole number of seconds'),
    (["proxy"], ["--retain", "0s"], "--retain: 0s is below the minimum 1s"),
    (["proxy"], ["--retain", "30m1h"],
     '--retain: "30m1h" is not a duration (examples: 250ms, 1s, 1h30m, \'2 days\'; '
     'a number alone is in seconds)'),
    (["proxy"], ["--keys", "some"], '--keys: "some" is not one of full, prefix, hash'),
    (["proxy"], ["--on-full", "spill"], '--on-full: "spill" is not one of block, drop'),
    (["proxy"], ["--verbose=1"], "--verbose takes no value"),
    (["proxy"], ["--upstream", UP], "--upstream and --db are required"),
    (["proxy"], ["--upstream", UP, "--db", "x.db", "extra"], "unexpected argument 'extra'"),
    # experiment
    (["experiment"], ["--bogus", SPEC], "unknown option --bogus"),
    (["experiment"], ["--stats-interval", "300abc", SPEC],
     '--stats-interval: "300abc" is not a duration (examples: 250ms, 1s, 1h30m, \'2 days\'; '
     'a number alone is in milliseconds)'),
    (["experiment"], [SPEC, "--stats-interval", "10"],
     "--stats-interval: 10 is below the minimum 50ms"),
    (["experiment"], ["--stats-interval", "-300", SPEC],
     '--stats-interval: "-300" is not a duration (examples: 250ms, 1s, 1h30m, \'2 days\'; '
     'a number alone is in milliseconds)'),
    (["experiment"], [SPEC, "--db"], "--db needs a value"),
    (["experiment"], ["--docker=yes", SPEC], "--docker takes no value"),
    (["experiment"], ["-q"], "need a spec file"),
    # load
    (["load"], ["--bogus"], "unknown option --bogus"),
    (["load"], ["--dry-run", "--workload", WL, "--connections", "0"],
     "--connections: 0 is below the minimum 1"),
    (["load"], ["--dry-run", "--workload", WL, "--connections", "257"],
     "--connections: 257 is above the maximum 256"),
    (["load"], ["--dry-run", "--workload", WL, "--pipeline=300abc"],
     '--pipeline: "300abc" is not a number'),
    (["load"], ["--dry-run", "--workload", WL, "--seed", "-1"],
     '--seed: "-1" must be a number without a sign'),
    # --replay-run takes a run's name or id (a run not found: exit 1, test_load)
    (["load"], ["--dry-run", "--workload", WL, "--replay-run", "0"],
     "--replay-run needs --replay-db"),
    (["load"], ["--dry-run", "--workload"], "--workload needs a value"),
    (["load"], ["--dry-run", "--workload", WL, "-m", "0"], "-m: 0 is below the minimum 1MiB"),
    (["load"], ["--dry-run", "--workload", WL, "-m", "512k"],
     '-m: "512k" is not a whole number of megabytes'),
    (["load"], ["--dry-run", "--workload", WL, "-f", "1.2x"], '-f: "1.2x" is not a number'),
    (["load"], ["--dry-run", "--workload", WL, "-I", "1.3k"],
     '-I: "1.3k" is not a whole number of bytes'),
    (["load"], ["--dry-run", "--workload", WL, "-I", "1mm"],
     '-I: "1mm" is not a size (examples: 512k, 8MB, 1.5GiB)'),
    (["load"], ["--dry-run", "--workload", WL, "stray"], "unexpected argument 'stray'"),
    (["load"], ["--workload", WL], "--target ADDR is required (or --dry-run)"),
    # model
    (["model"], ["--bogus"], "unknown subcommand '--bogus'"),
    (["model", "ladder"], ["--bogus"], "unknown option --bogus"),
    (["model", "ladder"], ["-m", "0"], "-m: 0 is below the minimum 1MiB"),
    (["model", "ladder"], ["-m", "1073741825"], "-m: 1073741825 is above the maximum 1024TiB"),
    (["model", "ladder"], ["-m", "8XB"],
     '-m: "8XB" is not a size (examples: 512k, 8MB, 1.5GiB; a number alone is in megabytes)'),
    (["model", "ladder"], ["-n", "300abc"],
     '-n: "300abc" is not a size (examples: 512k, 8MB, 1.5GiB)'),
    (["model", "ladder"], ["-f"], "-f needs a value"),
    (["model", "ladder"], ["--slab-chunk-max", "0"],
     "--slab-chunk-max: 0 is below the minimum 1B"),
    (["model", "ladder"], ["--slab-sizes", "100-x"],
     "--slab-sizes: slab size 'x' is not a number"),
    (["model", "ladder"], ["-Cv"], "unknown option -Cv"),
    (["model", "predict"], [], "--db FILE|URI is required"),
    (["model", "predict"], ["--db", "x.db", "--max-classes", "5"],
     "unknown option --max-classes"),
    (["model", "advise"], ["--db", "x.db", "--max-classes", "1"],
     "--max-classes: 1 is below the minimum 2"),
    (["model", "advise"], ["--db", "x.db", "--max-classes", "64"],
     "--max-classes: 64 is above the maximum 63"),
    (["model", "advise"], ["--db", "x.db", "--max-classes", "300abc"],
     '--max-classes: "300abc" is not a number'),
    (["model", "advise"], ["--db"], "--db needs a value"),
    (["model", "advise"], ["--db", "x.db", "--memory-limit", "2t"],
     "--memory-limit: 2t is above the maximum 1TiB"),
    (["model", "predict"], ["--db", "x.db", "--since", "fortnight"],
     '--since: "fortnight" is not a duration (examples: 250ms, 1s, 1h30m, \'2 days\'; '
     'a number alone is in seconds)'),
    # top
    (["top"], ["--bogus"], "unknown option --bogus"),
    (["top"], ["--memcached", UP, "--interval", "2h"], "--interval: 2h is above the maximum 1h"),
    (["top"], ["--memcached", UP, "--timeout", "5ms"], "--timeout: 5ms is below the minimum 10ms"),
]

HELP = [["proxy"], ["experiment"], ["load"], ["model"], ["model", "ladder"],
        ["model", "predict"], ["model", "advise"], ["top"]]


def usage_line(words):
    return "usage: slabtap " + " ".join(words if words[0] == "model" and len(words) > 1
                                        else words[:1])


class CliFlags(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="slabtap-cli-")
        self.cwd = os.getcwd()
        os.chdir(self.tmp)  # a refused line must not leave files anywhere that matters

    def tearDown(self):
        os.chdir(self.cwd)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_bad_flags_exit_2_with_message_and_usage(self):
        for words, args, msg in BAD:
            with self.subTest(cmd=" ".join(words + args)):
                rc, out, err = mctest.run_slabtap(words + args, timeout=30)
                head = "slabtap %s: " % " ".join(words)
                self.assertEqual(rc, 2, err)
                self.assertEqual(out, "")
                self.assertEqual(err, "%s%s\nsee: slabtap %s --help\n"
                                 % (head, msg, " ".join(words)))
        self.assertEqual(os.listdir(self.tmp), [], "a refused command line left files")

    def test_help_exits_0_with_usage_on_stdout(self):
        for words in HELP:
            for flag in ("--help", "-h"):
                with self.subTest(cmd=" ".join(words + [flag])):
                    rc, out, err = mctest.run_slabtap(words + [flag], timeout=30)
                    self.assertEqual(rc, 0, err)
                    self.assertEqual(err, "")
                    self.assertTrue(out.startswith(usage_line(words)), out)
                    self.assertIn("--verbose", out)
                    self.assertIn("--quiet", out)

    def test_typo_flag_is_two_lines(self):
        """The issue's case word for word: the error and where the help is,
        not the 70 lines of help."""
        rc, out, err = mctest.run_slabtap(["proxy", "--upstrem", "127.0.0.1:11211"], timeout=30)
        self.assertEqual((rc, out), (2, ""))
        self.assertEqual(err, "slabtap proxy: unknown option --upstrem\n"
                              "see: slabtap proxy --help\n")
        rc, out, err = mctest.run_slabtap(["proxi"], timeout=30)
        self.assertEqual((rc, out), (2, ""))
        self.assertEqual(err, "slabtap: unknown command 'proxi'\nsee: slabtap --help\n")
        rc, out, err = mctest.run_slabtap(["model", "ladr"], timeout=30)
        self.assertEqual((rc, out), (2, ""))
        self.assertEqual(err, "slabtap model: unknown subcommand 'ladr'\n"
                              "see: slabtap model --help\n")

    def test_version(self):
        rc, want, err = mctest.run_slabtap(["--version"], timeout=30)
        self.assertEqual((rc, err), (0, ""))
        self.assertRegex(want, r"^slabtap \d+\.\d+\.\d+\n$")
        rc, out, err = mctest.run_slabtap(["-V"], timeout=30)
        self.assertEqual((rc, out, err), (0, want, ""))

    def test_sizes_in_any_spelling_give_the_same_ladder_and_plan(self):
        def ladder(*args):
            rc, out, err = mctest.run_slabtap(["model", "ladder"] + list(args), timeout=30)
            self.assertEqual(rc, 0, (args, err))
            return out

        want = ladder("-m", "1024", "-I", "1572864", "-n", "64")
        self.assertIn("slab class", want)
        self.assertNotEqual(want, ladder())
        for args in (["-m", "1G", "-I", "1.5m", "-n", "64b"],
                     ["-m", "1GiB", "-I", "1.5MB", "-n", "64 bytes"],
                     ["-m1gb", "-I1536k", "-n", "0.0625k"],
                     ["-m", "1048576k", "-I", "1.5MiB", "-n", "64"]):
            self.assertEqual(ladder(*args), want, args)

        def plan(*args):
            rc, out, err = mctest.run_slabtap(["load", "--dry-run", "--workload", WL]
                                              + list(args), timeout=60)
            self.assertEqual(rc, 0, (args, err))
            self.assertIn("fingerprint:", out)
            return out

        want = plan("-m", "128", "-I", "2097152")
        for args in (["-m", "128MB", "-I", "2m"], ["-m", "0.125g", "-I", "2 MiB"]):
            self.assertEqual(plan(*args), want, args)

    def test_help_says_how_sizes_and_durations_are_spelled(self):
        rc, out, err = mctest.run_slabtap(["proxy", "--help"], timeout=30)
        self.assertEqual(rc, 0, err)
        self.assertIn("binary (x1024)", out)
        self.assertIn("1h30m", out)
        self.assertIn("a number alone is in the", out)
        rc, out, err = mctest.run_slabtap(["model", "ladder", "--help"], timeout=30)
        self.assertEqual(rc, 0, err)
        self.assertIn("binary (x1024)", out)

    def test_help_wins_when_it_comes_first(self):
        rc, out, err = mctest.run_slabtap(["proxy", "--help", "--queue", "0"], timeout=30)
        self.assertEqual(rc, 0, err)
        self.assertIn("usage: slabtap proxy", out)
        rc, out, err = mctest.run_slabtap(["proxy", "--queue", "0", "--help"], timeout=30)
        self.assertEqual(rc, 2, err)

    def test_verbosity_and_equals_forms_change_no_result(self):
        rc, want, err = mctest.run_slabtap(["model", "ladder", "-f", "1.08"], timeout=30)
        self.assertEqual(rc, 0, err)
        for extra in (["-v"], ["-q"], ["--verbose"], ["--quiet"], ["-q", "-v"]):
            rc, out, err = mctest.run_slabtap(["model", "ladder", "-f", "1.08"] + extra,
                                              timeout=30)
            self.assertEqual((rc, out), (0, want), (extra, err))
        rc, want, err = mctest.run_slabtap(["load", "--dry-run", "--workload", WL,
                                            "--seed", "5", "-m", "128"], timeout=60)
        self.assertEqual(rc, 0, err)
        self.assertIn("fingerprint:", want)
        for args in (["--dry-run", "--workload=" + WL, "--seed=5", "-m128", "-v"],
                     ["-q", "--workload", WL, "--dry-run", "-m", "128", "--seed", "5"]):
            rc, out, err = mctest.run_slabtap(["load"] + args, timeout=60)
            self.assertEqual((rc, out), (0, want), (args, err))


class UnitsEndToEnd(mctest.ServerTestCase):
    """The spellings of issue 20 on real servers: accepted, and meaning
    what they say (the proxy's /health and /api/runs show the values)."""

    def check_proxy(self, extra, retain_s, max_db_bytes, interval_ms):
        mc = self.mc()
        px = self.proxy(mc.port, http=True, extra=extra)
        health = mctest.health_ok(px.http_port)  # after the first stats sample
        self.assertEqual(health["store"]["retention"]["retain_s"], retain_s, health)
        self.assertEqual(health["store"]["retention"]["max_db_bytes"], max_db_bytes, health)
        runs = mctest.http_json(px.http_port, "GET", "/api/runs")
        self.assertEqual(runs["current"]["stats_interval_ms"], interval_ms, runs)
        # and it forwards
        got = mctest.exchange(px.port, b"set k 0 0 1\r\nv\r\nget k\r\n")
        self.assertEqual(got, b"STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n")
        self.stop_clean(px)

    def test_proxy_takes_the_issues_spellings(self):
        self.check_proxy(["--max-db-size", "8MB", "--max-memory", "1G", "--stats-interval", "1s",
                          "--retain", "3600"], 3600, 8 << 20, 1000)

    def test_proxy_takes_combined_durations_and_bare_milliseconds(self):
        self.check_proxy(["--retain", "1h30m", "--max-db-size=1.5GiB", "--stats-interval", "250",
                          "--max-stall", "2 seconds", "--drain-ms", "1s", "--max-request", "64KB",
                          "--spill-max", "1mb"], 5400, 3 << 29, 250)
        self.check_proxy(["--retain", "2 days", "--max-db-size", "8mb", "--stats-interval",
                          "0.5s"], 172800, 8 << 20, 500)

    def test_experiment_takes_a_duration(self):
        # a spec of its own: -c 1031 is no marker test_experiment.py looks for
        spec = self.write("units.exp", 'run units memcached="-m 64 -c 1031" workload=%s '
                          "gate=model\n" % WL)
        os.mkdir(self.path("res"))
        rc, out, err = mctest.run_slabtap(["experiment", "-q", "--results", self.path("res"),
                                           "--stats-interval", "1s", spec], timeout=300)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(len(re.findall(r"^gate ok ", out, re.M)), 2, out)

    def test_top_takes_durations(self):
        mc = self.mc()
        for args in (["--interval", "250ms", "--timeout", "2s"],
                     ["--interval", "0.25s", "--timeout", "2000"]):
            rc, out, err = mctest.run_slabtap(["top", "--once", "--memcached",
                                               "127.0.0.1:%d" % mc.port] + args, timeout=60)
            self.assertEqual(rc, 0, (args, err))
            self.assertIn("127.0.0.1:%d" % mc.port, out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
