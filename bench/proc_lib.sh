# bench/proc_lib.sh: what the benches that start memcached and a proxy
# share; sourced (bench/reads_cost.sh, bench/wal_cost.sh). Defines
# free_port (a free loopback port), ticks PID (utime+stime in clock ticks,
# every thread), USER_FLAG (memcached's -u root when run as root), HZ,
# TMP (a temporary directory) and PIDS (processes to kill): both cleaned up
# at exit.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
USER_FLAG=(); [ "$(id -u)" -eq 0 ] && USER_FLAG=(-u root)
TMP=$(mktemp -d); PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$TMP"; }
trap cleanup EXIT
HZ=$(getconf CLK_TCK)
