#!/usr/bin/env bash
# model_bench.sh: the capacity model (slabtap model advise --objective items
# --verify) over five size distributions, predicted beside measured on a
# real memcached. Builds build/ when $SLABTAP is not given. See
# bench/model_bench.py for the distributions and their sources.
#   bench/model_bench.sh            # about 2-4 minutes on 2 cores
#   bench/model_bench.sh --quick    # smaller counts
#   MEM_MB=64 SCALE=0.5 bench/model_bench.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
if [ -z "${SLABTAP:-}" ]; then
  cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$src/build" -j2 --target slabtap >/dev/null
  export SLABTAP="$src/build/slabtap"
fi
command -v memcached >/dev/null || { echo "model_bench: memcached not on PATH" >&2; exit 2; }
exec /usr/bin/python3 "$here/model_bench.py" "$@"
