#!/usr/bin/env bash
# retention_bench.sh: what leaving slabtap running costs on disk, and what
# expiring rows costs the writer (docs/retention.md).
#   bench/retention_bench.sh [BUILD_DIR]   (default build-rel; needs the
#                                           retention_bench target)
# Three runs of retention_bench (ROWS rows stamped at 10,000 writes/s):
#   rows kept     no bound: bytes per write on disk
#   rows expired  --max-db-size 16 MiB, far below what the rows need: the
#                 writer's throughput while it deletes, and its time in steps
#   aggregates    what the aggregates take per hour of writes at that rate
# then prints disk per hour per 10k writes/s for each mode.
set -eu
BUILD=${1:-build-rel}
BIN=$BUILD/retention_bench
ROWS=${ROWS:-2000000}
[ -x "$BIN" ] || { echo "build it first: cmake --build $BUILD --target retention_bench" >&2; exit 2; }
kept=$("$BIN" "$ROWS")
bound=$("$BIN" "$ROWS" --max-db-size $((16 << 20)))
echo "rows kept:    $kept"
echo "rows expired: $bound"
get() { sed -E "s/.* $2=([^ ]+).*/\1/" <<<"$1"; }
python3 - "$kept" "$bound" <<'PY'
import sys
def d(line): return dict(kv.split("=", 1) for kv in line.split())
k, b = d(sys.argv[1]), d(sys.argv[2])
per_hour = 10000 * 3600
bpw = float(k["bytes_per_write"])
agg_h = float(k["agg_bytes_per_hour"])
print()
print("writer: %s rows/s with rows kept, %s rows/s while expiring (%s steps, longest %s ms,"
      " %s s of %s s in steps)" % (k["rows_per_s"], b["rows_per_s"], b["steps"],
      b["step_max_ms"], b["retention_s"], b["secs"]))
print("file under --max-db-size 16 MiB: %.2f MiB on disk, %s rows kept, %s expired"
      % (int(b["file_bytes"]) / 2**20, b["kept"], b["expired"]))
print()
print("| mode | bytes per write | disk per hour at 10k writes/s |")
print("|---|---|---|")
print("| rows kept | %.1f | %.2f GB |" % (bpw, bpw * per_hour / 1e9))
print("| rows expired (--max-db-size M) | -- | 0 once at M (the file stays at M) |")
print("| aggregates only (what outlives the rows) | %.3f | %.1f MB |"
      % (agg_h / per_hour, agg_h / 1e6))
PY
