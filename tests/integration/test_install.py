"""test_install: `cmake --install` into a temporary DESTDIR, and what it puts there.

- bin/slabtap runs; share/slabtap holds schema.sql, pg/schema.sql and every
  canned query of schema/queries (and schema/pg/queries), byte for byte.
- share/man/man1/slabtap.1 carries every line of `slabtap --help`, of each
  command's --help and of each `slabtap model SUB --help` (the page is made
  from them at build time, so they cannot drift), and `man -l` renders it
  without a warning (where man is installed).
- the bash completion completes commands, model's subcommands and each
  command's flags, as read from the installed binary's --help.
- the example systemd unit restarts on failure, keeps its files in a
  StateDirectory, runs the installed binary, and every flag it passes is
  one `slabtap proxy --help` lists.

The build tree is the one of $SLABTAP (ctest sets it); slabtap.1 is built
there first when missing (target slabtap_man). Bounded waits; no servers.
"""
import filecmp
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

PREFIX = "/usr/local"


def run(argv, timeout=120, env=None, **kw):
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                       env=env, **kw)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def help_text(binary, *args):
    rc, out, err = run([binary] + list(args) + ["--help"], env=mctest.slabtap_env())
    assert rc == 0, (args, rc, err)
    return out


def listed(text, header):
    names, on = [], False
    for line in text.splitlines():
        if line == header + ":":
            on = True
        elif on and re.match(r"  [a-z]+ ", line):
            names.append(line.split()[0])
        elif on:
            on = False
    return names


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.build = os.path.dirname(os.path.abspath(mctest.SLABTAP))
        if not os.path.exists(os.path.join(cls.build, "CMakeCache.txt")):
            raise unittest.SkipTest("%s is not a CMake build tree" % cls.build)
        if not os.path.exists(os.path.join(cls.build, "slabtap.1")):
            rc, out, err = run(["cmake", "--build", cls.build, "--target", "slabtap_man"],
                               timeout=600)
            assert rc == 0, out[-3000:] + err[-3000:]
        cls.dest = tempfile.mkdtemp(prefix="slabtap-install.")
        env = dict(os.environ, DESTDIR=cls.dest)
        rc, out, err = run(["cmake", "--install", cls.build, "--prefix", PREFIX], env=env,
                           timeout=300)
        assert rc == 0, out[-3000:] + err[-3000:]
        cls.root = cls.dest + PREFIX
        cls.bin = os.path.join(cls.root, "bin", "slabtap")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(getattr(cls, "dest", ""), ignore_errors=True)

    def p(self, rel):
        return os.path.join(self.root, rel)

    def test_binary(self):
        self.assertTrue(os.access(self.bin, os.X_OK))
        rc, out, _ = run([self.bin, "--version"], env=mctest.slabtap_env())
        self.assertEqual(rc, 0)
        self.assertRegex(out, r"^slabtap \d+\.\d+\.\d+\n$")

    def test_schema_and_queries(self):
        src = os.path.join(mctest.SRC, "schema")
        share = self.p("share/slabtap")
        wanted = [os.path.relpath(f, src) for f in glob.glob(os.path.join(src, "**", "*.sql"),
                                                             recursive=True)]
        self.assertIn("schema.sql", wanted)
        self.assertIn("pg/schema.sql", wanted)
        self.assertIn("queries/headline.sql", wanted)
        for rel in wanted:
            self.assertTrue(filecmp.cmp(os.path.join(src, rel), os.path.join(share, rel),
                                        shallow=False), rel)

    def test_man_page_is_the_help(self):
        page = self.p("share/man/man1/slabtap.1")
        with open(page) as f:
            roff = f.read()
        self.assertTrue(roff.lstrip().startswith(".\\\""))
        self.assertIn(".TH SLABTAP 1", roff)
        # undo the escaping of dist/manpage.cmake
        text = "\n".join(re.sub(r"^\\&", "", ln).replace("\\e", "\\")
                         for ln in roff.splitlines())
        top = help_text(self.bin)
        commands = listed(top, "commands")
        self.assertIn("proxy", commands)
        self.assertIn("model", commands)
        texts = [top]
        for c in commands:
            h = help_text(self.bin, c)
            texts.append(h)
            for s in listed(h, "subcommands"):
                texts.append(help_text(self.bin, c, s))
        self.assertGreater(len(texts), len(commands) + 1)  # model's subcommands too
        for t in texts:
            for line in t.rstrip("\n").splitlines():
                self.assertIn(line, text, "a --help line missing from slabtap.1")
        man = shutil.which("man")
        if not man:
            return
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="0")
        rc, out, err = run([man, "--warnings", "-l", page], env=env, timeout=60)
        self.assertEqual(rc, 0, err)
        self.assertEqual(err.strip(), "", "man warnings")
        out = re.sub(".\x08", "", out)  # overstrike bold/underline, when not a terminal
        self.assertIn("SLABTAP PROXY", out)
        self.assertIn("slabtap model predict", out)

    def complete(self, *words):
        """COMPREPLY of the installed completion for the command line words
        (the last is the word being completed)."""
        comp = self.p("share/bash-completion/completions/slabtap")
        words = [self.bin] + list(words)
        script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
                  '_slabtap; printf "%s\\n" "${COMPREPLY[@]}"')
        rc, out, err = run(["bash", "-c", script, "bash", comp] + words,
                           env=mctest.slabtap_env(), timeout=60)
        self.assertEqual(rc, 0, err)
        return set(out.split())

    def test_bash_completion(self):
        self.assertIn("proxy", self.complete("pr"))
        self.assertTrue({"proxy", "experiment", "model", "load", "top"} <= self.complete(""))
        self.assertEqual(self.complete("model", "pr"), {"predict"})
        self.assertIn("--upstream", self.complete("proxy", "--up"))
        self.assertIn("--run", self.complete("model", "predict", "--r"))
        self.assertIn("--holdout-run", self.complete("model", "advise", "--hold"))
        self.assertEqual(self.complete("proxy", "--keys", "p"), {"prefix"})
        # every enum flag's words, from the option parser's own list
        self.assertEqual(self.complete("top", "--sort", ""),
                         {"class", "chunk", "items", "pages", "used", "waste", "evict", "sets"})
        self.assertEqual(self.complete("top", "--memcached", "h:1", "--sort", "w"), {"waste"})
        self.assertEqual(self.complete("proxy", "--reads", ""), {"on", "off"})
        self.assertEqual(self.complete("proxy", "--on-full", ""), {"block", "drop"})
        self.assertEqual(self.complete("model", "advise", "--objective", ""),
                         {"hits", "memory", "items"})
        # every flag offered is one the command's --help lists
        for f in self.complete("proxy", "--"):
            self.assertIn(f, help_text(self.bin, "proxy"))

    def test_systemd_unit(self):
        unit = self.p("lib/systemd/system/slabtap.service")
        with open(unit) as f:
            text = f.read()
        keys = {}
        for line in text.splitlines():
            m = re.match(r"([A-Za-z]+)=(.*)$", line)
            if m:
                keys.setdefault(m.group(1), []).append(m.group(2))
        self.assertEqual(keys["Restart"], ["on-failure"])
        self.assertEqual(keys["StateDirectory"], ["slabtap"])
        self.assertEqual(keys["WorkingDirectory"], ["%S/slabtap"])
        self.assertIn("multi-user.target", keys["WantedBy"])
        exec_start = keys["ExecStart"][0]
        self.assertTrue(exec_start.startswith(PREFIX + "/bin/slabtap proxy "), exec_start)
        proxy_help = help_text(self.bin, "proxy")
        for flag in re.findall(r"--[a-z-]+", exec_start):
            self.assertIn(flag, proxy_help, "the unit passes a flag slabtap does not take")
        self.assertNotIn("@", exec_start)  # configured
        env = self.p("share/slabtap/slabtap.env")
        with open(env) as f:
            self.assertIn("SLABTAP_UPSTREAM=", f.read())
        systemd_analyze = shutil.which("systemd-analyze")
        if systemd_analyze:
            # syntax only: the binary is in DESTDIR, not at ExecStart's path
            rc, out, err = run([systemd_analyze, "verify", "--man=no", unit], timeout=60)
            bad = [ln for ln in (out + err).splitlines()
                   if ln.strip() and "is not executable" not in ln
                   and "No such file" not in ln and "Command " not in ln]
            self.assertEqual(bad, [], out + err)


if __name__ == "__main__":
    unittest.main()
