#!/usr/bin/env bash
# Measures the README's fault table: builds slabtap into build-faults/
# (RelWithDebInfo, -j2, incremental: only what changed is rebuilt) unless
# SLABTAP names a binary or NO_BUILD=1, then runs bench/faults.py with the
# arguments given (--only NAME[,NAME], --list, --out FILE, --kill-reps N).
#   bench/faults.sh                      # every scenario, table to results/faults.md
#   bench/faults.sh --only kill9         # one scenario
set -euo pipefail
cd "$(dirname "$0")/.."
command -v memcached >/dev/null || { echo "faults.sh: memcached is not installed" >&2; exit 2; }
if [ -z "${SLABTAP:-}" ]; then
  export SLABTAP="$PWD/build-faults/slabtap"
  if [ "${NO_BUILD:-0}" != 1 ] || [ ! -x "$SLABTAP" ]; then
    cmake -S . -B build-faults -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build-faults -j2 --target slabtap >/dev/null
  fi
fi
exec /usr/bin/python3 bench/faults.py "$@"
