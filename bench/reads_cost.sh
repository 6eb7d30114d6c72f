#!/usr/bin/env bash
# What recording every read costs (docs/recording-reads.md): the same
# pipelined get-heavy workload (default bench/reads_mix.wl: 90 % get) sent
# through `slabtap proxy` with --reads on and --reads off, alternating,
# ROUNDS times. Per run: ops/s, the proxy's CPU per op (utime+stime from
# /proc, all threads: loop and writer), the file's size, reads recorded and
# bytes per read -- the whole file over the reads, and the read tables
# alone (read_rows, read_arrivals, read_keys and their share of pages, from
# SQLite's dbstat).
#   bench/reads_cost.sh [WORKLOAD] [ROUNDS]
# SLABTAP=path (default build-rel/slabtap, built in Release when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
WL=${1:-bench/reads_mix.wl}
ROUNDS=${2:-3}
SLABTAP=${SLABTAP:-build-rel/slabtap}
if [ ! -x "$SLABTAP" ]; then
  cmake -S . -B build-rel -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-rel -j2 --target slabtap >/dev/null
fi
. bench/proc_lib.sh
printf '%-6s %-5s %10s %10s %11s %9s %9s %10s %11s\n' round reads ops/s cpu_us/op file_bytes reads \
  writes B/read B/read_tbl
for r in $(seq "$ROUNDS"); do
  for mode in on off; do
    mc_start "$TMP/mc.err" -m 1024 || { cat "$TMP/mc.err" >&2; exit 1; }
    MC=$MC_PORT MCPID=$MC_PID; PIDS+=($MCPID)
    proxy_start "$SLABTAP" "$TMP/proxy.log" --upstream 127.0.0.1:$MC --db "$TMP/r.db" \
      --http off --reads $mode || { cat "$TMP/proxy.log" >&2; exit 1; }
    PX=$PX_PORT PXPID=$PX_PID; PIDS+=($PXPID)
    sleep 0.3
    c0=$(ticks $PXPID)
    "$SLABTAP" load --target 127.0.0.1:$PX --workload "$WL" --quiet > "$TMP/load.out" 2>&1
    # the writer finishes what is queued: CPU settles
    prev=-1; cur=$(ticks $PXPID)
    while [ "$cur" != "$prev" ]; do prev=$cur; sleep 0.3; cur=$(ticks $PXPID); done
    c1=$cur
    kill -TERM $PXPID; wait $PXPID || true
    kill $MCPID; wait $MCPID 2>/dev/null || true
    ops=$(sed -n 's/^ops: *\([0-9]*\).*/\1/p' "$TMP/load.out" | tail -1)
    ops_s=$(sed -n 's/^ops\/s: *\([0-9.]*\).*/\1/p' "$TMP/load.out" | tail -1)
    sqlite3 "$TMP/r.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
    bytes=$(stat -c %s "$TMP/r.db")
    reads=$(sqlite3 "$TMP/r.db" 'SELECT count(*) FROM read_rows')
    writes=$(sqlite3 "$TMP/r.db" 'SELECT count(*) FROM writes')
    tbl=$(sqlite3 "$TMP/r.db" "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN
      ('read_rows', 'read_arrivals', 'read_keys')" 2>/dev/null || echo 0)
    awk -v r="$r" -v m="$mode" -v ops="${ops:-0}" -v ops_s="${ops_s:-0}" -v t=$((c1 - c0)) \
      -v hz="$HZ" -v b="$bytes" -v n="$reads" -v w="$writes" -v tb="$tbl" 'BEGIN {
      printf "%-6s %-5s %10.0f %10.2f %11d %9d %9d %10s %11s\n", r, m, ops_s,
        ops ? t * 1e6 / hz / ops : 0, b, n, w, n ? sprintf("%.1f", b / n) : "-",
        n ? sprintf("%.1f", tb / n) : "-" }'
    rm -f "$TMP"/r.db*
  done
done
