# tests/integration/ports.sh: memcached and `slabtap proxy` on free loopback
# ports for the shell scripts (tests and benches), sourced. No port is
# picked and then bound: each server binds port 0 itself and the port it got
# is read back, so no other process can take it in between --
#   memcached -p -1 binds an ephemeral port and writes "TCP INET: PORT" to
#   $MEMCACHED_PORT_FILENAME once it listens;
#   slabtap proxy --listen 127.0.0.1:0 prints `slabtap: listen 127.0.0.1:PORT`
#   (and `slabtap: http ADDR`) once its listeners are open.
# (mctest.py's reserve_port is the same guarantee for the Python tests.)
#
#   mc_start ERRFILE [ARGS...]   memcached -l 127.0.0.1 -p -1 -U 0 ARGS (-u root
#                                as root), stdout to /dev/null, stderr to
#                                ERRFILE; sets MC_PID, and MC_PORT once it
#                                listens. Returns 1 when it exited first (a
#                                refusal: its reason is in ERRFILE) or did not
#                                listen within 10 s.
#   proxy_start BIN LOG [ARGS...] BIN proxy --listen 127.0.0.1:0 ARGS, stderr
#                                to LOG; sets PX_PID, and PX_PORT (PX_HTTP: the
#                                admin address, or off) once it listens.
#                                Returns 1 when it exited first or did not
#                                listen within 20 s.
# The caller stops them (kill "$MC_PID" ...).

mc_start() {
    local err=$1 i
    shift
    local user=()
    [[ $(id -u) -eq 0 ]] && user=(-u root)
    rm -f "$err.port"
    MEMCACHED_PORT_FILENAME="$err.port" memcached "${user[@]}" -l 127.0.0.1 -p -1 -U 0 "$@" \
        >/dev/null 2>"$err" &
    MC_PID=$!
    MC_PORT=
    for ((i = 0; i < 200; i++)); do
        # memcached writes the file under another name and renames it: whole
        MC_PORT=$(sed -n 's/^TCP INET: \([0-9]*\)$/\1/p' "$err.port" 2>/dev/null | head -1 || true)
        [[ -n "$MC_PORT" ]] && return 0
        kill -0 "$MC_PID" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

proxy_start() {
    local bin=$1 log=$2 i
    shift 2
    "$bin" proxy --listen 127.0.0.1:0 "$@" 2>"$log" &
    PX_PID=$!
    PX_PORT= PX_HTTP=
    for ((i = 0; i < 400; i++)); do
        PX_PORT=$(sed -n 's/^slabtap: listen 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$log" | head -1 || true)
        if [[ -n "$PX_PORT" ]]; then
            PX_HTTP=$(sed -n 's/^slabtap: http //p' "$log" | head -1 || true)
            return 0
        fi
        kill -0 "$PX_PID" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
