#!/usr/bin/env bash
# docker/ tested for real, on a machine that reaches Debian's package
# archive but no image registry (docs/docker.md ("Tested for real")). By hand, as root,
# from the repository root; not part of ctest (it installs packages,
# debootstraps ~200 MB and builds five images: minutes):
#   docker/test-real.sh            # images, the compose example, the fleet
#   EXPERIMENTS=1 docker/test-real.sh   # and experiments/run.sh on MC_IMAGE
# Steps: Debian's docker.io daemon (started here when none answers, with its
# own data root and log), a base image debootstrapped from Debian's archive,
# memcached/PostgreSQL/Prometheus images from Debian's packages and
# slabtap's image on it, a local registry (Debian's docker-registry) so the
# memcached image is pinned by the digest the push prints, then
# docker/compose.yml and docker/compose.fleet.yml up, driven and checked:
# every write recorded, /metrics accepted by promtool, the fleet's rows in
# PostgreSQL per node, Prometheus scraping the three sidecars. Publishes the
# compose files' host ports (11311-11313, 11380, 9090) and the registry's
# (REGISTRY_PORT, default 5000): run it where they are free. Stops what it
# started (daemon, registry, containers, volumes) on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${WORK:-/tmp/slabtap-docker-real}
REGISTRY_PORT=${REGISTRY_PORT:-5000}
mkdir -p "$WORK"
say() { printf '== %s\n' "$*"; }
fail() { printf 'docker/test-real.sh: %s\n' "$*" >&2; exit 1; }

PKGS=(docker.io docker-compose docker-registry debootstrap prometheus python3)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

single=(docker-compose -p slabtap-real-single -f docker/compose.yml)
fleet=(docker-compose -p slabtap-real-fleet -f docker/compose.fleet.yml)
started=() made_secrets=()
cleanup() {
  set +e
  "${single[@]}" down -v >/dev/null 2>&1
  "${fleet[@]}" down -v >/dev/null 2>&1
  rm -f "${made_secrets[@]}"
  for pid in "${started[@]}"; do kill "$pid" 2>/dev/null; done
}
trap cleanup EXIT

if ! docker info >/dev/null 2>&1; then
  say "starting dockerd (log: $WORK/dockerd.log)"
  dockerd --data-root "$WORK/data" >"$WORK/dockerd.log" 2>&1 &
  started+=($!)
  for _ in $(seq 30); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { tail -n 20 "$WORK/dockerd.log" >&2; fail "dockerd did not answer in 30 s"; }
fi
say "docker: $(docker version --format '{{.Server.Version}}')"

if ! docker image inspect slabtap-base:bookworm >/dev/null 2>&1; then
  say "debootstrap bookworm into $WORK/rootfs"
  [ -x "$WORK/rootfs/bin/bash" ] ||
    debootstrap --variant=minbase bookworm "$WORK/rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log"
  tar -C "$WORK/rootfs" -c . | docker import - slabtap-base:bookworm
fi
BASE=(--build-arg BASE=slabtap-base:bookworm)
say "images on slabtap-base:bookworm"
docker build -q "${BASE[@]}" -f docker/memcached.Dockerfile -t slabtap-memcached:1.6.18 docker
docker build -q "${BASE[@]}" -f docker/postgres.Dockerfile -t slabtap-postgres:15 docker
docker build -q "${BASE[@]}" -f docker/prometheus.Dockerfile -t slabtap-prometheus:2.42 docker
docker build -q "${BASE[@]}" --build-arg RUNTIME=slabtap-base:bookworm -f docker/Dockerfile -t slabtap:local .

if ! curl -sf "127.0.0.1:$REGISTRY_PORT/v2/" >/dev/null; then
  printf 'version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: %s/registry\nhttp:\n  addr: 127.0.0.1:%s\n' \
    "$WORK" "$REGISTRY_PORT" >"$WORK/registry.yml"
  docker-registry serve "$WORK/registry.yml" >"$WORK/registry.log" 2>&1 &
  started+=($!)
  for _ in $(seq 30); do curl -sf "127.0.0.1:$REGISTRY_PORT/v2/" >/dev/null && break; sleep 0.2; done
fi
repo=localhost:$REGISTRY_PORT/slabtap-memcached
docker tag slabtap-memcached:1.6.18 "$repo:1.6.18"
digest=$(docker push "$repo:1.6.18" | sed -n 's/.*digest: \(sha256:[0-9a-f]*\).*/\1/p')
[ -n "$digest" ] || fail "no digest from the push"
export MC_IMAGE=$repo:1.6.18@$digest PG_IMAGE=slabtap-postgres:15 PROM_IMAGE=slabtap-prometheus:2.42
say "MC_IMAGE=$MC_IMAGE ($(docker run --rm "$MC_IMAGE" memcached -V))"

if [ -n "${EXPERIMENTS:-}" ]; then
  say "experiments/run.sh on MC_IMAGE"
  RESULTS_DIR="$WORK/results" experiments/run.sh | tail -n 3
fi

for f in docker/fleet-token.txt docker/pg-password.txt; do
  [ -e "$f" ] || { openssl rand -hex 16 >"$f"; made_secrets+=("$f"); }
done

# up, healthy (bounded), then 1000 writes through each sidecar's port
up() { # compose argv..., --, ports...
  local argv=() log="$WORK/up.log"
  while [ "$1" != -- ]; do argv+=("$1"); shift; done
  shift
  "${argv[@]}" up -d --no-build >"$log" 2>&1 || { cat "$log"; fail "${argv[*]}: up failed"; }
  for _ in $(seq 90); do
    "${argv[@]}" ps | grep -q "health: starting" || break
    sleep 1
  done
  if "${argv[@]}" ps | grep -q "unhealthy\|starting\|Exit"; then
    "${argv[@]}" ps
    fail "${argv[*]}: not healthy in 90 s"
  fi
  python3 - "$@" <<'EOF'
import socket, sys
for port in map(int, sys.argv[1:]):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"".join(b"set k%d 0 0 945 noreply\r\n" % i + b"x" * 945 + b"\r\n"
                           for i in range(1000)) + b"mn\r\n")
        data = b""
        while not data.endswith(b"MN\r\n"):
            data += s.recv(4096)
EOF
}

say "docker/compose.yml"
up "${single[@]}" -- 11311
for _ in $(seq 50); do  # the next stats sample (--stats-interval: 1 s)
  curl -sf -H "Authorization: Bearer $(cat docker/fleet-token.txt)" 127.0.0.1:11380/metrics \
    >"$WORK/metrics.txt"
  grep -qx "memcached_current_items 1000" "$WORK/metrics.txt" && break
  sleep 0.1
done
grep -qx "memcached_current_items 1000" "$WORK/metrics.txt" || fail "memcached_current_items is not 1000"
promtool check metrics <"$WORK/metrics.txt" || fail "promtool refused the sidecar's /metrics"
"${single[@]}" stop slabtap >/dev/null 2>&1
"${single[@]}" logs slabtap | grep -q "1000 rows recorded, 0 lost" ||
  fail "compose.yml: the sidecar did not record the 1000 writes"
"${single[@]}" down -v >/dev/null 2>&1
say "docker/compose.yml: ok (promtool accepts /metrics, 1000 rows recorded, 0 lost)"

say "docker/compose.fleet.yml"
up "${fleet[@]}" -- 11311 11312 11313
up=0
for _ in $(seq 40); do  # Prometheus scrapes every 15 s
  up=$(curl -s 127.0.0.1:9090/api/v1/query --data-urlencode 'query=sum(up{job="slabtap"})' |
       python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
  [ "$up" = 3 ] && break
  sleep 1
done
[ "$up" = 3 ] || fail "Prometheus does not scrape the three sidecars (up: $up)"
"${fleet[@]}" stop cache-01 cache-02 cache-03 >/dev/null 2>&1
rows=$("${fleet[@]}" exec -T postgres psql -U slabtap slabtap -Atc \
  "SELECT string_agg(node || '=' || n, ' ' ORDER BY node) FROM
     (SELECT r.node, count(*) AS n FROM sets s JOIN runs r USING (run_id) GROUP BY r.node) c")
[ "$rows" = "cache-01=1000 cache-02=1000 cache-03=1000" ] || fail "fleet rows per node: $rows"
"${fleet[@]}" down -v >/dev/null 2>&1
say "docker/compose.fleet.yml: ok (rows per node: $rows; Prometheus scraped all three)"
