#!/usr/bin/env bash
# Runs each hit-ratio workload against a fresh memcached (-m 64, then -m 32)
# and prints the whole-run and second-half hit ratios from memcached's own
# stats (the deltas `slabtap load` reads on a side connection).
#   experiments/hitratio/run.sh [SLABTAP] [MEMCACHED]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
slabtap=${1:-$here/../../build/slabtap}
memcached=${2:-memcached}
port=${HITRATIO_PORT:-22799}
printf '%-13s %4s %10s %10s %10s %8s\n' workload "-m" "whole" "2nd half" evictions seconds
for wl in etc_zipf two_pop shift scan; do
    for mem in 64 32; do
        extra=()
        [ "$(id -u)" = 0 ] && extra=(-u root)
        "$memcached" -p "$port" -l 127.0.0.1 -U 0 -m "$mem" "${extra[@]}" &
        mc=$!
        trap 'kill $mc 2>/dev/null || true' EXIT
        for _ in $(seq 50); do
            (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
            sleep 0.1
        done
        out=$("$slabtap" load --workload "$here/$wl.wl" --target "127.0.0.1:$port" -q)
        kill "$mc"
        wait "$mc" 2>/dev/null || true
        echo "$out" | awk -v wl="$wl" -v mem="$mem" '
            /^server:/ { split($0, a, "hit ratio "); split(a[2], b, " "); whole = b[1];
                         split($0, e, "evictions "); ev = e[2] }
            /^phase second_half:/ { inphase = 1; next }
            inphase && /^  server:/ { split($0, a, "hit ratio "); split(a[2], b, " "); half = b[1]; inphase = 0 }
            /^elapsed:/ { secs = $2 }
            END { printf "%-13s %4s %9s%% %9s%% %10s %8s\n", wl, mem, whole, half, ev, secs }'
    done
done
