#!/usr/bin/python3
"""test_cli_flags: every subcommand parses its flags with the one option
table parser (proxy/core/opt.h) and answers mistakes the same way.

1. Bad flags -- unknown, not a number, `300abc`, out of range, a sign where
   none belongs, a missing value, a value given to a flag -- exit 2 with
   nothing on stdout and, on stderr, exactly `slabtap COMMAND: MESSAGE` as
   the first line, then the command's usage.
2. --help / -h exit 0 with the usage (which names -v and -q) on stdout and
   nothing on stderr.
3. -v/--verbose and -q/--quiet are accepted everywhere and change no
   result; --name=value works like --name value; options may follow
   positionals.

No server is started: every command line here fails before it would, or
is a --dry-run / model ladder. Needs $SLABTAP (default /tmp/bm/slabtap).
"""
import os
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
    (["proxy"], ["--stats-interval", "300abc"], '--stats-interval: "300abc" is not a number'),
    (["proxy"], ["--stats-interval=49"], "--stats-interval: 49 is below the minimum 50"),
    (["proxy"], ["--stats-interval", "4294967296"],
     "--stats-interval: 4294967296 is above the maximum 4294967295"),
    (["proxy"], ["--max-pending", "-1"], '--max-pending: "-1" must be a number without a sign'),
    (["proxy"], ["--drain-ms", "0"], "--drain-ms: 0 is below the minimum 1"),
    (["proxy"], ["--keys", "some"], '--keys: "some" is not one of full, prefix, hash'),
    (["proxy"], ["--on-full", "spill"], '--on-full: "spill" is not one of block, drop'),
    (["proxy"], ["--verbose=1"], "--verbose takes no value"),
    (["proxy"], ["--upstream", UP], "--upstream and --db are required"),
    (["proxy"], ["--upstream", UP, "--db", "x.db", "extra"], "unexpected argument 'extra'"),
    # experiment
    (["experiment"], ["--bogus", SPEC], "unknown option --bogus"),
    (["experiment"], ["--stats-interval", "300abc", SPEC],
     '--stats-interval: "300abc" is not a number'),
    (["experiment"], [SPEC, "--stats-interval", "10"],
     "--stats-interval: 10 is below the minimum 50"),
    (["experiment"], ["--stats-interval", "-300", SPEC],
     '--stats-interval: "-300" must be a number without a sign'),
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
    (["load"], ["--dry-run", "--workload", WL, "-m", "0"], "-m: 0 is below the minimum 1"),
    (["load"], ["--dry-run", "--workload", WL, "-f", "1.2x"], '-f: "1.2x" is not a number'),
    (["load"], ["--dry-run", "--workload", WL, "-I", "1.5m"],
     '-I: "1.5m" is not a size (digits, then optionally k or m)'),
    (["load"], ["--dry-run", "--workload", WL, "stray"], "unexpected argument 'stray'"),
    (["load"], ["--workload", WL], "--target HOST:PORT is required (or --dry-run)"),
    # model
    (["model"], ["--bogus"], "unknown subcommand '--bogus'"),
    (["model", "ladder"], ["--bogus"], "unknown option --bogus"),
    (["model", "ladder"], ["-m", "0"], "-m: 0 is below the minimum 1"),
    (["model", "ladder"], ["-m", "1073741825"], "-m: 1073741825 is above the maximum 1073741824"),
    (["model", "ladder"], ["-n", "300abc"], '-n: "300abc" is not a number'),
    (["model", "ladder"], ["-f"], "-f needs a value"),
    (["model", "ladder"], ["--slab-chunk-max", "0"], "--slab-chunk-max: 0 is below the minimum 1"),
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
]

HELP = [["proxy"], ["experiment"], ["load"], ["model"], ["model", "ladder"],
        ["model", "predict"], ["model", "advise"]]


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
                self.assertTrue(err.startswith(head), err)
                self.assertEqual(err.splitlines()[0], head + msg)
                self.assertIn(usage_line(words), err)
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
