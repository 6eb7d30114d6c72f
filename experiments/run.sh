#!/usr/bin/env bash
# The main job: the three experiments of the reference harness, through the
# recording proxy, each run against a memcached this script's runner starts
# itself (the memcached on PATH; MEMCACHED=/path/to/memcached for another,
# SLABTAP_DOCKER=1 for the digest-pinned image in docker/). Writes results/:
# the CSVs, the charts (SVG, drawn by slabtap from the same queries) and
# summary.txt, every figure produced by a query in schema/queries over
# results/runs.db.
#
# The reference harness's knobs, read by `slabtap experiment` itself:
#   RESULTS_DIR  where everything goes (default results)
#   N_ITEMS      items of experiments 1 and 2 (default 400000; gates follow)
#   MC_IMAGE     run memcached from this Docker image (implies docker)
#   MC_HOST, MC_PORT  an existing memcached (default 127.0.0.1, 11311): the
#                runs whose flags its `stats settings` show use it, the others
#                are refused (slabtap cannot restart someone else's server)
# On a terminal each run shows a live progress line; never in summary.txt.
# SLABTAP_HTTP=127.0.0.1:11380 serves the live page (and /metrics) of the run
# in progress there: open http://127.0.0.1:11380/ and watch exp3's pages move.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake pkg-config libuv1-dev libhttp-parser-dev libsqlite3-dev sqlite3 memcached libjs-chart.js)
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
[ -n "${SLABTAP_DOCKER:-}" ] && [ -z "${MC_IMAGE:-}" ] && RUNNER+=(--docker)
# the progress line goes to the terminal, not through tee into summary.txt
if [ -t 2 ]; then exec 3>&2; RUNNER+=(--progress-fd 3); fi
if [ -n "${MC_HOST:-}${MC_PORT:-}" ]; then
  MC_DESC="existing memcached at ${MC_HOST:-127.0.0.1}:${MC_PORT:-11311}"
elif [ -n "${MC_IMAGE:-}" ]; then
  MC_DESC="docker image $MC_IMAGE"
else
  MC_DESC="${MEMCACHED:-$(command -v memcached)} ($(${MEMCACHED:-memcached} -V))"
fi

{
  echo "slabtap $(build/slabtap --version | cut -d' ' -f2) -- memcached slab experiments through the recording proxy"
  echo "memcached: $MC_DESC"
  echo "started: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(nproc) cores"
  echo
  start=$(date +%s)
  "${RUNNER[@]}" experiments/exp1_rounding.exp experiments/exp2_growth_factor.exp \
                 experiments/exp3_calcification.exp 2>&1
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
