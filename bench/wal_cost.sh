#!/usr/bin/env bash
# What reading a live run costs the writer (docs/live-sql.md): the store
# before (exclusive locking: no reader while it records) and after (WAL
# with normal locking, FILE.lock for the one writer, the store's own
# PASSIVE checkpoints), both built Release from source, alternating,
# ROUNDS times, in one run on one machine. Per variant and round:
#   - writer_bench ROWS: the writer thread alone, rows/s end to end and its
#     CPU per row;
#   - a set-heavy load (WL, default bench/sets_400k.wl) through `slabtap
#     proxy`: ops/s, the proxy's CPU per op (utime+stime from /proc, every
#     thread), rows recorded;
#   - "after+rd": the same load with a reader running `sqlite3 FILE
#     'SELECT count(*) FROM writes'` in a loop meanwhile (impossible
#     before: "database is locked"), and how many of its reads answered.
#   bench/wal_cost.sh [ROUNDS]        (default 3)
# BEFORE_REV=rev (default: where this branch left main), ROWS (default 1000000), WL.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
REV=${BEFORE_REV:-$(git merge-base HEAD main)}
ROWS=${ROWS:-1000000}
WL=${WL:-bench/sets_400k.wl}
AFTER=build-rel
BEFORE=build-wal-before
cmake -S . -B "$AFTER" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$AFTER" -j2 --target slabtap writer_bench >/dev/null
if [ ! -x "$BEFORE/build/slabtap" ] || [ "$(cat "$BEFORE/rev" 2>/dev/null)" != "$(git rev-parse "$REV")" ]; then
  rm -rf "$BEFORE"; mkdir -p "$BEFORE/src"
  git archive "$REV" | tar -x -C "$BEFORE/src"
  cmake -S "$BEFORE/src" -B "$BEFORE/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BEFORE/build" -j2 --target slabtap writer_bench >/dev/null
  git rev-parse "$REV" > "$BEFORE/rev"
fi
. bench/proc_lib.sh
echo "before: $REV ($(git rev-parse --short "$REV")), after: the working tree ($(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')); ROWS=$ROWS WL=$WL"
printf '%-5s %-9s %12s %12s %10s %10s %9s %9s\n' round variant writer_rows/s writer_us/row \
  ops/s cpu_us/op rows reads_ok
for r in $(seq "$ROUNDS"); do
  for variant in before after after+rd; do
    case $variant in before) BIN=$BEFORE/build ;; *) BIN=$AFTER ;; esac
    wrs=- wus=-
    if [ "$variant" != after+rd ]; then
      "$BIN/writer_bench" "$ROWS" > "$TMP/wb.out" 2>&1
      wrs=$(sed -n 's/.* \([0-9]*\) rows\/s end to end.*/\1/p' "$TMP/wb.out")
      wus=$(sed -n 's/.*writer thread [0-9.]* s (\([0-9.]*\) us\/row).*/\1/p' "$TMP/wb.out")
    fi
    mc_start "$TMP/mc.err" -m 1024 || { cat "$TMP/mc.err" >&2; exit 1; }
    MC=$MC_PORT MCPID=$MC_PID; PIDS+=($MCPID)
    proxy_start "$BIN/slabtap" "$TMP/proxy.log" --upstream 127.0.0.1:$MC --db "$TMP/w.db" \
      --http off || { cat "$TMP/proxy.log" >&2; exit 1; }
    PX=$PX_PORT PXPID=$PX_PID; PIDS+=($PXPID)
    sleep 0.3
    RDPID=
    if [ "$variant" = after+rd ]; then
      (ok=0; while :; do
         sqlite3 "$TMP/w.db" 'SELECT count(*) FROM writes' >/dev/null 2>&1 && ok=$((ok + 1))
         echo $ok > "$TMP/reads_ok"; sleep 0.2
       done) & RDPID=$!; PIDS+=($RDPID)
    fi
    c0=$(ticks $PXPID)
    "$BIN/slabtap" load --target 127.0.0.1:$PX --workload "$WL" --quiet > "$TMP/load.out" 2>&1
    # the writer finishes what is queued: CPU settles
    prev=-1; cur=$(ticks $PXPID)
    while [ "$cur" != "$prev" ]; do prev=$cur; sleep 0.3; cur=$(ticks $PXPID); done
    c1=$cur
    reads_ok=-
    if [ -n "$RDPID" ]; then kill $RDPID; wait $RDPID 2>/dev/null || true; reads_ok=$(cat "$TMP/reads_ok"); fi
    kill -TERM $PXPID; wait $PXPID || true
    kill $MCPID; wait $MCPID 2>/dev/null || true
    ops=$(sed -n 's/^ops: *\([0-9]*\).*/\1/p' "$TMP/load.out" | tail -1)
    ops_s=$(sed -n 's/^ops\/s: *\([0-9.]*\).*/\1/p' "$TMP/load.out" | tail -1)
    rows=$(sqlite3 "$TMP/w.db" 'SELECT count(*) FROM writes')
    awk -v r="$r" -v v="$variant" -v wrs="$wrs" -v wus="$wus" -v ops="${ops:-0}" \
      -v ops_s="${ops_s:-0}" -v t=$((c1 - c0)) -v hz="$HZ" -v rows="$rows" -v rd="$reads_ok" 'BEGIN {
      printf "%-5s %-9s %12s %12s %10.0f %10.2f %9d %9s\n", r, v, wrs, wus, ops_s,
        ops ? t * 1e6 / hz / ops : 0, rows, rd }'
    rm -f "$TMP"/w.db*
  done
done
