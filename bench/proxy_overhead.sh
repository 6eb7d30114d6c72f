#!/usr/bin/env bash
# Prints what the recording proxy costs: the same pipelined workload sent
# straight to memcached and through `slabtap proxy` (recording every write
# into SQLite), in one run, alternating, so the ratio is measured on the
# same noisy machine at the same time. Also the proxy's peak RSS.
#   bench/proxy_overhead.sh [WORKLOAD] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
WL=${1:-experiments/exp1_worst.wl}
ROUNDS=${2:-3}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j"$(nproc)" >/dev/null
. bench/proc_lib.sh
ops_per_s() { sed -n 's/^ops\/s: *\([0-9.]*\).*/\1/p' "$1" | tail -1; }
printf '%-8s %14s %14s %8s %12s\n' round direct_ops/s proxy_ops/s ratio proxy_maxRSS
for r in $(seq "$ROUNDS"); do
  for mode in direct proxy; do
    mc_start "$TMP/mc.err" -m 1024 || { cat "$TMP/mc.err" >&2; exit 1; }
    MC=$MC_PORT MCPID=$MC_PID; PIDS+=($MCPID)
    TARGET=127.0.0.1:$MC
    if [ $mode = proxy ]; then
      proxy_start build/slabtap "$TMP/proxy.log" --upstream 127.0.0.1:$MC --db "$TMP/bench.db" \
        --http off || { cat "$TMP/proxy.log" >&2; exit 1; }
      PXPID=$PX_PID; PIDS+=($PXPID)
      TARGET=127.0.0.1:$PX_PORT
    fi
    build/slabtap load --target "$TARGET" --workload "$WL" --quiet > "$TMP/$mode.out" 2>&1
    if [ $mode = proxy ]; then
      awk '/VmHWM/ {print $2}' /proc/$PXPID/status > "$TMP/rss"   # peak RSS, KB
      kill -TERM $PXPID; wait $PXPID || true
    fi
    kill $MCPID; wait $MCPID 2>/dev/null || true
  done
  d=$(ops_per_s "$TMP/direct.out"); p=$(ops_per_s "$TMP/proxy.out")
  printf '%-8s %14s %14s %8s %10s KB\n' "$r" "$d" "$p" "$(awk -v a="$p" -v b="$d" 'BEGIN{printf "%.2f", a/b}')" "$(cat "$TMP/rss")"
  rm -f "$TMP"/bench.db*
done
