"""test_docker_files: docker/ without a Docker engine.

- docker/compose.yml, docker/compose.fleet.yml and docker/prometheus.yml
  parse as YAML (python3-yaml; the structure is checked by hand when it is
  missing: skipped) and hang together: every service has an image or a
  build, every secret, volume and depends_on it names is declared, the
  fleet has three memcached, three slabtaps each on its own memcached with
  its own --node, PostgreSQL, and a Prometheus whose config scrapes the
  three slabtaps' admin ports with the token.
- MC_IMAGE, PG_IMAGE, PROM_IMAGE, SLABTAP_BASE and SLABTAP_RUNTIME
  override the images (a machine that reaches Debian's archive but no
  registry: docs/docker.md, "Tested for real"); compose's own `config -q` accepts both
  files where a compose is installed (no daemon needed); every Dockerfile
  takes its base as a build argument, and the memcached, PostgreSQL and
  Prometheus ones install Debian's package and run as its user.
- The root .dockerignore keeps databases, build trees and results/ out of
  the build context.
- The Dockerfile's HEALTHCHECK, run here as Docker would run it, exits 0
  against a proxy whose /health is 200 and non-zero once memcached is gone.

Needs memcached on PATH and $SLABTAP. 127.0.0.1 only; bounded waits.
"""
import json
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mctest  # noqa: E402

DOCKER = os.path.join(mctest.SRC, "docker")

try:
    import yaml
except ImportError:  # pragma: no cover
    yaml = None


def interpolate(text, env=None):
    """Compose's ${VAR:-default} and ${VAR}, from env (default: none set,
    as a plain `docker compose up` sees them); $$ stays $$."""
    env = env or {}

    def sub(m):
        name, default = m.group(1), m.group(3) or ""
        return env.get(name) or default
    return re.sub(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}", sub, text)


def load(name, env=None):
    with open(os.path.join(DOCKER, name)) as f:
        # resolves anchors and << merge keys
        return yaml.safe_load(interpolate(f.read(), env))


def compose_cli():
    """argv of a compose that can check a file without a daemon
    (`docker compose` v2 or Debian's docker-compose v1), or None."""
    for argv in (["docker", "compose"], ["docker-compose"]):
        try:
            p = subprocess.run(argv + ["version"], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if p.returncode == 0:
            return argv
    return None


class ComposeFiles(unittest.TestCase):
    def setUp(self):
        if yaml is None:
            self.skipTest("python3-yaml is not installed")

    def check_compose(self, doc):
        services = doc["services"]
        secrets = set(doc.get("secrets") or {})
        volumes = set(doc.get("volumes") or {})
        for name, svc in services.items():
            self.assertTrue("image" in svc or "build" in svc, name)
            for s in svc.get("secrets", []):
                self.assertIn(s, secrets, name)
            for v in svc.get("volumes", []):
                src = v.split(":")[0]
                if not src.startswith("."):
                    self.assertIn(src, volumes, name)
                else:
                    self.assertTrue(os.path.exists(os.path.join(DOCKER, src)), (name, src))
            deps = svc.get("depends_on", [])
            for d in deps:
                self.assertIn(d, services, name)
            for p in svc.get("ports", []):
                self.assertRegex(p, r"^127\.0\.0\.1:\d+:\d+$", name)
            if "build" in svc:
                self.assertTrue(os.path.exists(os.path.join(DOCKER, svc["build"]["context"],
                                                            svc["build"]["dockerfile"])))
        for s in secrets:
            self.assertIn("file", doc["secrets"][s])
        return services

    def test_single_node(self):
        services = self.check_compose(load("compose.yml"))
        self.assertEqual(set(services), {"memcached", "slabtap"})
        cmd = " ".join(services["slabtap"]["entrypoint"])
        self.assertIn("--http-token", cmd)  # beyond loopback: required

    def test_fleet(self):
        doc = load("compose.fleet.yml")
        services = self.check_compose(doc)
        mcs = sorted(n for n, s in services.items() if str(s.get("image", "")).startswith(
            "memcached:"))
        taps = sorted(n for n, s in services.items() if "build" in s)
        self.assertEqual(len(mcs), 3, mcs)
        self.assertEqual(taps, ["cache-01", "cache-02", "cache-03"])
        with open(os.path.join(DOCKER, "memcached.image")) as f:
            pinned = f.read().strip()
        upstreams = set()
        for t in taps:
            svc = services[t]
            env = svc["environment"]
            self.assertEqual(env["NODE"], t)  # --node = service name = instance host
            self.assertIn(env["UPSTREAM"].split(":")[0], mcs)
            upstreams.add(env["UPSTREAM"])
            script = svc["entrypoint"][-1]
            for flag in ("--node \"$$NODE\"", "--upstream \"$$UPSTREAM\"",
                         "--db postgresql://", "--http-token", "--http 0.0.0.0:11380"):
                self.assertIn(flag, script)
            self.assertNotRegex(script, r"postgresql://[^ ]*:[^ ]*@", "password in the URI")
            self.assertIn("pg_password", svc["secrets"])
        self.assertEqual(len(upstreams), 3)
        for m in mcs:
            self.assertEqual(services[m]["image"], pinned)
        self.assertIn("postgres", services)
        self.assertIn("POSTGRES_PASSWORD_FILE", services["postgres"]["environment"])
        prom = services["prometheus"]
        self.assertIn("./prometheus.yml:/etc/prometheus/prometheus.yml:ro", prom["volumes"])
        self.assertIn("slabtap_token", prom["secrets"])

    def test_images_overridable(self):
        """MC_IMAGE replaces the pinned memcached (an image built from
        Debian's package where no registry is reachable: docs/docker.md, "Tested for real"),
        SLABTAP_BASE/SLABTAP_RUNTIME the bases of slabtap's image."""
        env = {"MC_IMAGE": "localhost:5000/mc@sha256:" + "a" * 64,
               "SLABTAP_BASE": "base:x", "SLABTAP_RUNTIME": "rt:y"}
        for name in ("compose.yml", "compose.fleet.yml"):
            services = load(name, env)["services"]
            mcs = [n for n, svc in services.items() if "memcached" in svc.get("command", [])]
            self.assertTrue(mcs, name)
            for n in mcs:
                self.assertEqual(services[n]["image"], env["MC_IMAGE"], (name, n))
            taps = [svc for svc in services.values() if "build" in svc]
            self.assertTrue(taps, name)
            for svc in taps:
                self.assertEqual(svc["build"]["args"], {"BASE": "base:x", "RUNTIME": "rt:y"})
                self.assertEqual(svc["image"], "slabtap:local")
        services = load("compose.fleet.yml", {"PG_IMAGE": "pg:z", "PROM_IMAGE": "prom:w"})[
            "services"]
        self.assertEqual(services["postgres"]["image"], "pg:z")
        self.assertEqual(services["prometheus"]["image"], "prom:w")

    def test_compose_config(self):
        """compose itself accepts both files (`config -q` needs no daemon)."""
        argv = compose_cli()
        if argv is None:
            self.skipTest("neither `docker compose` nor docker-compose is installed")
        token = os.path.join(DOCKER, "fleet-token.txt")
        pg = os.path.join(DOCKER, "pg-password.txt")
        made = [f for f in (token, pg) if not os.path.exists(f)]
        try:
            for f in made:  # the secrets' files must exist; never committed
                with open(f, "w") as out:
                    out.write("test\n")
            for name in ("compose.yml", "compose.fleet.yml"):
                p = subprocess.run(argv + ["-f", os.path.join(DOCKER, name), "config", "-q"],
                                   capture_output=True, timeout=60, cwd=DOCKER)
                self.assertEqual(p.returncode, 0, (name, p.stderr.decode()[-2000:]))
        finally:
            for f in made:
                os.unlink(f)

    def test_prometheus_config(self):
        doc = load("prometheus.yml")
        jobs = doc["scrape_configs"]
        self.assertEqual(len(jobs), 1)
        job = jobs[0]
        self.assertEqual(job["metrics_path"], "/metrics")
        self.assertEqual(job["authorization"]["type"], "Bearer")
        self.assertEqual(job["authorization"]["credentials_file"], "/run/secrets/slabtap_token")
        targets = [t for sc in job["static_configs"] for t in sc["targets"]]
        self.assertEqual(targets, ["cache-01:11380", "cache-02:11380", "cache-03:11380"])
        # no relabelling: `instance` is the node (docs/prometheus.md)
        self.assertNotIn("relabel_configs", job)


class Dockerfiles(unittest.TestCase):
    def test_bases_are_arguments(self):
        """Both stages of slabtap's image, and the memcached image, take
        their base as a build argument (a debootstrapped base where no
        registry is reachable), defaulting to Debian's official images."""
        with open(os.path.join(DOCKER, "Dockerfile")) as f:
            text = f.read()
        self.assertIn("ARG BASE=debian:bookworm\n", text)
        self.assertIn("ARG RUNTIME=debian:bookworm-slim\n", text)
        self.assertEqual(re.findall(r"^FROM (\S+)", text, re.M), ["${BASE}", "${RUNTIME}"])
        # the images of the compose files, from Debian's packages
        for name, package, user in (("memcached", "memcached", "memcache"),
                                    ("postgres", "postgresql-15", "postgres"),
                                    ("prometheus", "prometheus", "prometheus")):
            with open(os.path.join(DOCKER, name + ".Dockerfile")) as f:
                text = f.read()
            self.assertEqual(re.findall(r"^FROM (\S+)", text, re.M), ["${BASE}"], name)
            self.assertRegex(text, r"apt-get install [^\n]*%s" % package, name)
            self.assertRegex(text, r"(?m)^USER %s$" % user, name)  # never root
        with open(os.path.join(DOCKER, "memcached.Dockerfile")) as f:
            self.assertIn('CMD ["memcached"]', f.read())  # `docker run IMAGE memcached ARGS`


class DockerIgnore(unittest.TestCase):
    def test_context_excludes(self):
        with open(os.path.join(mctest.SRC, ".dockerignore")) as f:
            pats = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]

        def rx(p):
            # Docker's matcher (filepath.Match plus **): * and ? stop at /
            out, i = "", 0
            p = p.rstrip("/")
            while i < len(p):
                if p.startswith("**/", i):
                    out, i = out + "(.*/)?", i + 3
                elif p.startswith("**", i):
                    out, i = out + ".*", i + 2
                elif p[i] == "*":
                    out, i = out + "[^/]*", i + 1
                elif p[i] == "?":
                    out, i = out + "[^/]", i + 1
                else:
                    out, i = out + re.escape(p[i]), i + 1
            return re.compile(out + r"\Z")
        rxs = [rx(p) for p in pats]

        def ignored(path):
            # a directory that matches is not walked: its files are out too
            parts = path.split("/")
            return any(r.match("/".join(parts[:i])) for i in range(1, len(parts) + 1)
                       for r in rxs)
        for path in ("results/runs.db", "runs.db", "results/exp1_worst_case.csv", "build/slabtap",
                     "build-read/CMakeCache.txt", ".git/HEAD", "x.db-wal", "bench/a/runs.db",
                     "docker/fleet-token.txt", "docker/pg-password.txt"):
            self.assertTrue(ignored(path), path)
        for path in ("CMakeLists.txt", "proxy/cli/main.c", "schema/schema.sql.in",
                     "schema/queries/headline.sql", "web/app.js", "bench/writer_bench.c",
                     "docker/Dockerfile", "cmake/embed.cmake"):
            self.assertFalse(ignored(path), path)


def healthcheck_argv():
    """The HEALTHCHECK CMD of docker/Dockerfile (exec form, JSON)."""
    with open(os.path.join(DOCKER, "Dockerfile")) as f:
        text = f.read().replace("\\\n", " ")
    m = re.search(r"^HEALTHCHECK .*?CMD (\[.*\])\s*$", text, re.M)
    assert m, "no HEALTHCHECK ... CMD [...] in docker/Dockerfile"
    return json.loads(m.group(1))


class HealthCheck(mctest.ServerTestCase):
    workdir_prefix = "slabtap-docker-"

    def run_check(self, port):
        env = dict(os.environ, SLABTAP_HEALTH_PORT=str(port))
        return subprocess.run(healthcheck_argv(), env=env, timeout=10,
                              stdin=subprocess.DEVNULL, capture_output=True).returncode

    def test_healthcheck_uses_health(self):
        argv = healthcheck_argv()
        self.assertIn("/health", argv[-1])
        mc = self.mc(name="mc-health")
        px = self.proxy(mc.port, http=True, extra=["--stats-interval", "100"],
                        name="proxy-health")
        mctest.wait_for(lambda: self.run_check(px.http_port) == 0, 15, interval=0.1,
                        what="the HEALTHCHECK to pass")
        mc.kill_hard()
        mctest.wait_for(lambda: self.run_check(px.http_port) != 0, 15, interval=0.1,
                        what="the HEALTHCHECK to fail once memcached is gone")
        self.stop_clean(px)


if __name__ == "__main__":
    unittest.main()
