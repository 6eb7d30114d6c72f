# bench/proc_lib.sh: what the benches that start memcached and a proxy
# share; sourced from the repository root (bench/reads_cost.sh,
# bench/wal_cost.sh, bench/proxy_overhead.sh). Defines mc_start and
# proxy_start (tests/integration/ports.sh: servers on free ports, read back
# from the servers themselves), ticks PID (utime+stime in clock ticks, every
# thread), HZ, TMP (a temporary directory) and PIDS (processes to kill):
# both cleaned up at exit.
. tests/integration/ports.sh
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TMP=$(mktemp -d); PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
HZ=$(getconf CLK_TCK)
