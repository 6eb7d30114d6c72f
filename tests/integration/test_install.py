"""test_install: `cmake --install` into a temporary DESTDIR, and what it puts there.

- bin/slabtap runs; share/slabtap holds every canned query of
  schema/queries (the sources) and what the build derived from schema/
  (build/schema: schema.sql, pg/schema.sql, pg/queries/NAME.sql, one per
  canned query), byte for byte, and queries/attach_days.sh, executable.
- share/man/man1/slabtap.1 carries every line of `slabtap --help`, of each
  command's --help and of each `slabtap model SUB --help` (inserted at build
  time, so they cannot drift), a section for each command and model
  subcommand, the sections a man page has (EXIT STATUS, SIGNALS, FILES,
  ...), and every path its FILES names under the prefix is installed there;
  installed under a second prefix, FILES names that prefix's paths.
- share/man/man7/slabtap.7 describes every route of the admin endpoint's
  table in proxy/server/ and lists /metrics families.
- `man -l` (and groff -ww) render both pages without a warning (where
  installed).
- the bash completion completes commands, model's subcommands and each
  command's flags, as read from the installed binary's --help.
- the example systemd unit restarts on failure, keeps its files in a
  StateDirectory, runs the installed binary, and every flag it passes is
  one `slabtap proxy --help` lists.
- InstallPrefixes: two real prefixes, each unit naming its own (ExecStart,
  EnvironmentFile), `systemd-analyze verify` passing on both; /usr puts the
  environment file in /etc/default; the shipped defaults bound the disk.

The build tree is the one of $SLABTAP (ctest sets it); the man pages and
the derived SQL are built there first when missing (targets slabtap_man,
sql_files). Bounded waits; no servers.
"""
import filecmp
import glob
import json
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


def install_into(build, prefix):
    """cmake --install BUILD --prefix PREFIX into a new DESTDIR; returns it."""
    dest = tempfile.mkdtemp(prefix="slabtap-install.")
    env = dict(os.environ, DESTDIR=dest)
    rc, out, err = run(["cmake", "--install", build, "--prefix", prefix], env=env, timeout=300)
    assert rc == 0, out[-3000:] + err[-3000:]
    return dest


# --- man pages and queries: helpers ------------------------------------------------

def man_text(roff):
    """The page's text with dist/manpage.cmake's escaping of verbatim lines undone."""
    return "\n".join(re.sub(r"^\\&", "", ln).replace("\\e", "\\")
                     for ln in roff.splitlines())


def man_files(roff):
    """The paths the FILES section's entries name (the .I/.IR tag of each .TP),
    absolute ones only."""
    m = re.search(r"^\.SH FILES\n(.*?)^\.SH ", roff, re.S | re.M)
    assert m, "slabtap.1 has no FILES section"
    return [p.replace("\\-", "-")
            for p in re.findall(r"^\.TP\n\.IR? (/\S+)", m.group(1), re.M)]


def render_warnings(page):
    """Warnings of man -l and groff -ww for PAGE ("" when clean, None when neither exists)."""
    said, ran = [], False
    man = shutil.which("man")
    if man:
        ran = True
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="0")
        rc, out, err = run([man, "--warnings", "-l", page], env=env, timeout=60)
        said.append(err.strip() if rc == 0 else "man exited %d: %s" % (rc, err))
    groff = shutil.which("groff")
    if groff:
        ran = True
        rc, out, err = run([groff, "-man", "-ww", "-z", page], timeout=60)
        said.append(err.strip() if rc == 0 else "groff exited %d: %s" % (rc, err))
    return "\n".join(x for x in said if x) if ran else None


def rendered(page):
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="0")
    rc, out, err = run(["man", "-l", page], env=env, timeout=60)
    assert rc == 0, err
    return re.sub(".\x08", "", out)  # overstrike bold/underline, when not a terminal


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.build = os.path.dirname(os.path.abspath(mctest.SLABTAP))
        if not os.path.exists(os.path.join(cls.build, "CMakeCache.txt")):
            raise unittest.SkipTest("%s is not a CMake build tree" % cls.build)
        for target, made in [("slabtap_man", ("slabtap.1.tmpl", "slabtap.7.tmpl")),
                             ("sql_files", ("schema/pg/queries",))]:
            if not all(os.path.exists(os.path.join(cls.build, p)) for p in made):
                rc, out, err = run(["cmake", "--build", cls.build, "--target", target],
                                   timeout=600)
                assert rc == 0, out[-3000:] + err[-3000:]
        cls.dest = install_into(cls.build, PREFIX)
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
        queries = sorted(os.path.basename(f) for f in glob.glob(os.path.join(src, "queries",
                                                                             "*.sql")))
        self.assertIn("headline.sql", queries)
        wanted = [(src, "queries/" + q) for q in queries]  # (from where, path under share)
        wanted += [(mctest.GEN_SQL, rel) for rel in ["schema.sql", "pg/schema.sql"]
                   + ["pg/queries/" + q for q in queries]]
        for top, rel in wanted:
            self.assertTrue(filecmp.cmp(os.path.join(top, rel), os.path.join(share, rel),
                                        shallow=False), rel)
        installed = sorted(os.path.relpath(f, share)
                           for f in glob.glob(os.path.join(share, "**", "*.sql"), recursive=True))
        self.assertEqual(installed, sorted(rel for _, rel in wanted))
        days = os.path.join(share, "queries", "attach_days.sh")
        self.assertTrue(filecmp.cmp(os.path.join(src, "queries", "attach_days.sh"), days,
                                    shallow=False))
        self.assertTrue(os.access(days, os.X_OK), "attach_days.sh is not executable")

    def test_man_page_is_the_help(self):
        page = self.p("share/man/man1/slabtap.1")
        with open(page) as f:
            roff = f.read()
        self.assertTrue(roff.lstrip().startswith(".\\\""))
        self.assertIn(".TH SLABTAP 1", roff)
        text = man_text(roff)
        top = help_text(self.bin)
        commands = listed(top, "commands")
        self.assertIn("proxy", commands)
        self.assertIn("model", commands)
        texts = [top]
        sections = []
        for c in commands:
            h = help_text(self.bin, c)
            texts.append(h)
            sections.append(c)
            for s in listed(h, "subcommands"):
                texts.append(help_text(self.bin, c, s))
                sections.append(c + " " + s)
        self.assertGreater(len(texts), len(commands) + 1)  # model's subcommands too
        for t in texts:
            for line in t.rstrip("\n").splitlines():
                self.assertIn(line, text, "a --help line missing from slabtap.1")
        # every long option of every (sub)command, once more by name
        for t in texts:
            for opt in set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", t)):
                self.assertIn(opt, text, "option %s missing from slabtap.1" % opt)
        # a described section per command and subcommand, and a man page's sections
        for sec in sections:
            self.assertIn("\n.SS slabtap %s\n" % sec, roff, "no section for slabtap " + sec)
        for sh in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXAMPLES", "EXIT STATUS",
                   "SIGNALS", "ENVIRONMENT", "FILES", "SEE ALSO"):
            self.assertRegex(roff, r"(?m)^\.SH \"?%s\"?$" % sh)
        self.assertIsNone(re.search(r"@[A-Z]+@|^@HELP", roff, re.M), "a placeholder left")
        warnings = render_warnings(page)
        if warnings is None:
            return
        self.assertEqual(warnings, "", "man/groff warnings")
        if shutil.which("man"):
            out = rendered(page)
            self.assertIn("slabtap proxy", out)
            self.assertIn("slabtap model predict", out)
            self.assertIn("EXIT STATUS", out)

    def test_man_page_files_are_installed_there(self):
        """Every path under the prefix that slabtap(1)'s FILES names is installed
        at that path (the settings file is an example to copy, not installed)."""
        with open(self.p("share/man/man1/slabtap.1")) as f:
            files = man_files(f.read())
        self.assertIn(PREFIX + "/share/slabtap/queries/", files)
        self.assertIn(PREFIX + "/share/slabtap/queries/attach_days.sh", files)
        under = [f for f in files if f.startswith(PREFIX + "/")]
        self.assertGreaterEqual(len(under), 8, files)
        for f in under:
            self.assertTrue(os.path.exists(self.dest + f), "FILES names %s, not installed" % f)
        self.assertIn(os.path.join(self.dest + PREFIX, "share/slabtap/queries/waste_by_class.sql"),
                      glob.glob(self.dest + PREFIX + "/share/slabtap/queries/*.sql"))

    def test_man_pages_follow_the_prefix(self):
        """Installed under another prefix, FILES names that prefix's paths."""
        other = "/opt/slabtap-test"
        dest = install_into(self.build, other)
        try:
            for n in ("1", "7"):
                self.assertTrue(os.path.exists(dest + other + "/share/man/man%s/slabtap.%s"
                                               % (n, n)))
            with open(dest + other + "/share/man/man1/slabtap.1") as f:
                roff = f.read()
            files = man_files(roff)
            self.assertIn(other + "/share/slabtap/queries/attach_days.sh", files)
            self.assertNotIn(PREFIX + "/", roff.replace("\\-", "-"))
            for f in files:
                if f.startswith(other + "/"):
                    self.assertTrue(os.path.exists(dest + f), "FILES names %s, not installed" % f)
        finally:
            shutil.rmtree(dest, ignore_errors=True)

    def test_man7_endpoint_and_metrics(self):
        page = self.p("share/man/man7/slabtap.7")
        with open(page) as f:
            roff = f.read()
        self.assertIn(".TH SLABTAP 7", roff)
        text = roff.replace("\\-", "-").replace("\\&", "")
        # every route of the admin endpoint's tables
        routes = set()
        for c in glob.glob(os.path.join(mctest.SRC, "proxy", "server", "*.c")):
            with open(c) as f:
                routes |= set(re.findall(r'\{ "(?:GET|POST)", "(/[a-z/]*)",', f.read()))
        self.assertIn("/metrics", routes)
        self.assertIn("/api/run/advice", routes)
        for r in routes:
            self.assertRegex(text, r"(GET|POST) %s(\?|\s|$)" % re.escape(r),
                             "route %s missing from slabtap.7" % r)
        families = re.findall(r'^\.BR ([a-z_0-9]+) " \((?:counter|gauge)\)"$', roff, re.M)
        self.assertIn("slabtap_rows_lost_total", families)
        self.assertIn("memcached_slab_current_pages", families)
        warnings = render_warnings(page)
        if warnings is not None:
            self.assertEqual(warnings, "", "man/groff warnings")

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


# ---- the unit names the prefix installed into (issue 20) ----------------------

def unit_keys(path):
    """{Key: [values]} of a unit or environment file's Key=value lines (a
    quoted Environment="K=V" loses its quotes)."""
    keys = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"([A-Za-z_]+)=(.*)$", line.rstrip("\n"))
            if m:
                keys.setdefault(m.group(1), []).append(m.group(2).strip('"'))
    return keys


class InstallPrefixes(unittest.TestCase):
    """`cmake --install BUILD --prefix P` into two real prefixes (no
    DESTDIR, so the paths the unit names exist): the unit's ExecStart is
    P/bin/slabtap and its EnvironmentFile P/etc/default/slabtap, for each P
    (they were /usr/local's whatever P was), `systemd-analyze verify` passes
    on both, and prefix /usr puts the environment file at /etc/default.
    The shipped defaults bound the disk (--max-db-size, --retain), with
    flags a real proxy starts with."""

    @classmethod
    def setUpClass(cls):
        cls.build = os.path.dirname(os.path.abspath(mctest.SLABTAP))
        if not os.path.exists(os.path.join(cls.build, "CMakeCache.txt")):
            raise unittest.SkipTest("%s is not a CMake build tree" % cls.build)
        if not os.path.exists(os.path.join(cls.build, "slabtap.1")):
            rc, out, err = run(["cmake", "--build", cls.build, "--target", "slabtap_man"],
                               timeout=600)
            assert rc == 0, out[-3000:] + err[-3000:]
        cls.tmp = tempfile.mkdtemp(prefix="slabtap-prefixes.")
        cls.prefixes = [os.path.join(cls.tmp, "one"), os.path.join(cls.tmp, "two", "opt")]
        for prefix in cls.prefixes:
            rc, out, err = run(["cmake", "--install", cls.build, "--prefix", prefix], timeout=300)
            assert rc == 0, out[-3000:] + err[-3000:]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(getattr(cls, "tmp", ""), ignore_errors=True)

    def test_unit_names_the_prefix(self):
        for prefix in self.prefixes:
            unit = os.path.join(prefix, "lib/systemd/system/slabtap.service")
            keys = unit_keys(unit)
            binary = os.path.join(prefix, "bin/slabtap")
            self.assertTrue(keys["ExecStart"][0].startswith(binary + " proxy "), keys["ExecStart"])
            self.assertTrue(os.access(binary, os.X_OK))
            env_file = os.path.join(prefix, "etc/default/slabtap")
            self.assertEqual(keys["EnvironmentFile"], ["-" + env_file])
            example = os.path.join(prefix, "share/slabtap/slabtap.env")
            with open(unit) as f:
                self.assertIn("(example: %s)" % example, f.read())
            with open(example) as f:
                self.assertIn("copy to %s and edit" % env_file, f.read())
            for other in self.prefixes:
                if other != prefix:
                    with open(unit) as f:
                        self.assertNotIn(other, f.read())

    def test_systemd_analyze_verify(self):
        systemd_analyze = shutil.which("systemd-analyze")
        if not systemd_analyze:
            self.skipTest("systemd-analyze is not installed (Debian: systemd)")
        for prefix in self.prefixes:
            unit = os.path.join(prefix, "lib/systemd/system/slabtap.service")
            rc, out, err = run([systemd_analyze, "verify", "--man=no", unit], timeout=60)
            self.assertEqual((rc, out + err), (0, ""), unit)

    def test_prefix_usr_uses_etc(self):
        dest = os.path.join(self.tmp, "destdir")
        env = dict(os.environ, DESTDIR=dest)
        rc, out, err = run(["cmake", "--install", self.build, "--prefix", "/usr"], env=env,
                           timeout=300)
        self.assertEqual(rc, 0, out[-3000:] + err[-3000:])
        keys = unit_keys(os.path.join(dest, "usr/lib/systemd/system/slabtap.service"))
        self.assertEqual(keys["EnvironmentFile"], ["-/etc/default/slabtap"])
        self.assertTrue(keys["ExecStart"][0].startswith("/usr/bin/slabtap proxy "))

    def test_defaults_bound_the_disk(self):
        prefix = self.prefixes[0]
        unit = unit_keys(os.path.join(prefix, "lib/systemd/system/slabtap.service"))
        env = unit_keys(os.path.join(prefix, "share/slabtap/slabtap.env"))
        self.assertIn("SLABTAP_RETENTION=--max-db-size 2g --retain 7d", unit["Environment"])
        self.assertEqual(env["SLABTAP_RETENTION"], ["--max-db-size 2g --retain 7d"])
        self.assertIn("$SLABTAP_RETENTION", unit["ExecStart"][0])
        # slabtap takes them as written: a proxy (this build's, which was
        # installed) starts with them, shows the bound in /health, and stops
        # cleanly
        flags = env["SLABTAP_RETENTION"][0].split()
        work = mctest.Workdir("slabtap-prefix-run-")
        try:
            mc = mctest.Memcached(work.path)
            px = mctest.Proxy(work.path, mc.port, http=True, extra=flags)
            try:
                _, _, body = mctest.http_request(px.http_port, "GET", "/health")
                r = json.loads(body)["store"]["retention"]
                self.assertTrue(r["enabled"], r)
                self.assertEqual(r["max_db_bytes"], 2 << 30)
                self.assertEqual(r["retain_s"], 7 * 86400)
            finally:
                px.assert_clean_exit(self, px.stop())
                mc.stop()
        finally:
            work.cleanup()


if __name__ == "__main__":
    unittest.main()
