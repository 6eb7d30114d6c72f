#!/usr/bin/env bash
# The main job: the three experiments of the reference harness, through the
# recording proxy, each run against a memcached this script's runner starts
# itself (the memcached on PATH; MEMCACHED=/path/to/memcached for another,
# SLABTAP_DOCKER=1 for the digest-pinned image in docker/). Writes results/:
# the CSVs and summary.txt, every figure produced by a query in
# schema/queries over results/runs.db.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config libuv1-dev libhttp-parser-dev libsqlite3-dev sqlite3 memcached)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "experiments/run.sh: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

RESULTS=${RESULTS_DIR:-results}
mkdir -p "$RESULTS"
rm -f "$RESULTS/runs.db" "$RESULTS/runs.db-wal" "$RESULTS/runs.db-shm"
RUNNER=(build/slabtap experiment --db "$RESULTS/runs.db" --results "$RESULTS")
[ -n "${MEMCACHED:-}" ] && RUNNER+=(--memcached "$MEMCACHED")
[ -n "${SLABTAP_DOCKER:-}" ] && RUNNER+=(--docker)

{
  echo "slabtap $(build/slabtap --version | cut -d' ' -f2) -- memcached slab experiments through the recording proxy"
  echo "memcached: ${MEMCACHED:-$(command -v memcached)} ($(${MEMCACHED:-memcached} -V))"
  echo "started: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores"
  echo
  start=$(date +%s)
  "${RUNNER[@]}" experiments/exp1_rounding.exp experiments/exp2_growth_factor.exp \
                 experiments/exp3_calcification.exp 2>&1 | grep -v '^slabtap load: .*ETA'
  sqlite3 -header -csv "$RESULTS/runs.db" < schema/queries/run_metadata.sql > "$RESULTS/run_metadata.csv"
  echo "wrote $RESULTS/run_metadata.csv (schema/queries/run_metadata.sql)"
  echo
  echo "== results (schema/queries/headline.sql)"
  sqlite3 -header -column "$RESULTS/runs.db" < schema/queries/headline.sql
  echo
  echo "== exp1 worst case, per class (schema/queries/exp_waste.sql)"
  cat "$RESULTS/exp1_worst_case.csv"
  echo
  echo "== exp2 growth factor (schema/queries/exp2_growth_factor.sql)"
  cat "$RESULTS/exp2_growth_factor.csv"
  echo
  echo "== exp3 calcification (schema/queries/exp3_calcification.sql)"
  cat "$RESULTS/exp3_calcification.csv"
  echo
  echo "all three experiments in $(( $(date +%s) - start )) s; query them: sqlite3 $RESULTS/runs.db"
} 2>&1 | tee "$RESULTS/summary.txt"
exit "${PIPESTATUS[0]}"
