#!/usr/bin/env bash
# Compares paths to one memcached on this machine, in one run:
#   direct      clients -> memcached
#   slabtap     clients -> slabtap proxy (pooled upstream connections, the
#               default; recording into SQLite) -> memcached
#   slabtap-pc  the same with --upstream-conns per-client (MODES has per-client)
#   twemproxy   clients -> nutcracker (one pool, one server, server_connections 1)
#               -> memcached
# under four loads, in alternating rounds (direct, slabtap, [slabtap-pc,]
# twemproxy, ROUNDS times), so every ratio is taken on the same noisy machine
# at the same time:
#   a) memcaslap -T 1 -c 16 -t DURATION -X 100 (90 % get / 10 % set, 100 B)
#   b) pipelined sets, $SETS_WL (bench/sets_400k.wl: 400k sets of 876 B values)
#   c) 100 KB values, $LARGE_WL (bench/large_values.wl: 30k sets)
#   d) latency: $LATENCY_WL (bench/latency_mix.wl: 90 % get / 10 % set, 100 B,
#      5,000 keys, preloaded) open loop at RATE ops/s for LATENCY_SECONDS,
#      `slabtap load --rate RATE --no-probe --connections 4 --pipeline 16`
# b) and c) run with `slabtap load --no-probe` on every path (no `stats
# settings` probe, which twemproxy would refuse); PYLOAD=1 adds
# `compare_proxies.py pyload` (same workload file, connections, pipeline).
# Per round: throughput, CPU us/op of the proxy and of memcached (utime+stime
# deltas from /proc/PID/stat, taken once the processes are idle again), the
# proxy's peak RSS (VmHWM, reset before each round), for d) p50/p99/p99.9/max
# per command; one extra short round per proxy under `strace -c -f -p PROXY`
# gives syscalls per request.
# Prints a table per load and the targets. bench/README.md explains the output.
#
#   bench/compare_proxies.sh
#   MODES="pooled per-client" bench/compare_proxies.sh
# Environment (defaults):
#   ROUNDS=3  DURATION=4 (memcaslap seconds)  LOADS="memcaslap sets large latency"
#   MODES=pooled: slabtap proxies to run, each its own process and path:
#     pooled (path `slabtap`, the default upstream pool) and/or per-client
#     (path `slabtap-pc`, --upstream-conns per-client). The targets are on
#     `slabtap` (on `slabtap-pc` when it is the only one)
#   SETS_WL=bench/sets_400k.wl  LARGE_WL=bench/large_values.wl
#   RATE=20000 (ops/s)  LATENCY_SECONDS=6 (RATE x LATENCY_SECONDS ops a run)
#   LATENCY_WL=bench/latency_mix.wl  LATENCY_PRELOAD=bench/latency_preload.wl
#     (sent straight to memcached before every latency run, untimed)
#   PYLOAD=0 (1: also pyload rows for b and c, a second generator)
#   STRACE=1 (0: skip the strace rounds)  STRACE_DURATION=2  STRACE_SCALE=0.25
#     (the strace rounds of b and c send this fraction of the workload; the
#     strace round of d runs STRACE_DURATION seconds at RATE)
#   SLABTAP=path (default: build build-bench/ in Release from the working tree)
#   SLABTAP_REV=commit: build that commit instead (git archive into the
#     temporary directory; the working tree is not touched), e.g. for the
#     "before" side of a change: SLABTAP_REV=HEAD (its `slabtap load` must
#     know --no-probe and --rate)
#   SLABTAP_ARGS="..." extra `slabtap proxy` flags, for every slabtap path
#   STRICT=1: exit 3 when a target is missed (default: exit 0)
#   KEEP=1: keep the temporary directory (logs, runs*.db, raw results)
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-4}; DURATION=${DURATION%s}
STRACE=${STRACE:-1}
STRACE_DURATION=${STRACE_DURATION:-2}; STRACE_DURATION=${STRACE_DURATION%s}
STRACE_SCALE=${STRACE_SCALE:-0.25}
LOADS=${LOADS:-memcaslap sets large latency}
MODES=${MODES:-pooled}
SETS_WL=${SETS_WL:-bench/sets_400k.wl}
LARGE_WL=${LARGE_WL:-bench/large_values.wl}
LATENCY_WL=${LATENCY_WL:-bench/latency_mix.wl}
LATENCY_PRELOAD=${LATENCY_PRELOAD:-bench/latency_preload.wl}
RATE=${RATE:-20000}
LATENCY_SECONDS=${LATENCY_SECONDS:-6}; LATENCY_SECONDS=${LATENCY_SECONDS%s}
LAT_CONNS=4 LAT_PIPELINE=16
PYLOAD=${PYLOAD:-0}
read -r -a EXTRA_ARGS <<< "${SLABTAP_ARGS:-}"
HELPER=(python3 bench/compare_proxies.py)
H=127.0.0.1

die() { echo "compare_proxies: $*" >&2; exit 1; }
for t in memcached nutcracker memcaslap python3 getconf; do
  command -v "$t" >/dev/null || die "$t not found (apt-get install memcached nutcracker libmemcached-tools python3)"
done
[ "$STRACE" = 0 ] || command -v strace >/dev/null || die "strace not found (or STRACE=0)"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || die "DURATION must be whole seconds"
[[ $LATENCY_SECONDS =~ ^[1-9][0-9]*$ ]] || die "LATENCY_SECONDS must be whole seconds"
[[ $RATE =~ ^[0-9]+(\.[0-9]+)?$ ]] && [[ ! $RATE =~ ^0+(\.0*)?$ ]] || die "RATE must be a positive number (ops/s)"
for load in $LOADS; do
  case $load in memcaslap|sets|large|latency) ;; *) die "unknown load '$load' (memcaslap sets large latency)";; esac
done
SL_PATHS=()        # slabtap paths, in MODES order
for mode in $MODES; do
  case $mode in pooled) p=slabtap;; per-client) p=slabtap-pc;; *) die "unknown mode '$mode' (pooled per-client)";; esac
  [[ " ${SL_PATHS[*]-} " == *" $p "* ]] && die "mode '$mode' given twice"
  SL_PATHS+=("$p")
done
[ ${#SL_PATHS[@]} -gt 0 ] || die "MODES is empty"
PATHS=(direct "${SL_PATHS[@]}" twemproxy)
for wl in "$SETS_WL" "$LARGE_WL" "$LATENCY_WL" "$LATENCY_PRELOAD"; do [ -r "$wl" ] || die "cannot read $wl"; done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/compare_proxies.XXXXXX")
PIDS=()            # every process started and not yet reaped
forget() { local p keep=(); for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done; PIDS=(${keep[@]+"${keep[@]}"}); }
cleanup() {
  local rc=$? p i
  trap - EXIT INT TERM HUP
  if [ ${#PIDS[@]} -gt 0 ]; then
    kill -TERM "${PIDS[@]}" 2>/dev/null || true
    for i in $(seq 50); do
      for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && break; p=; done
      [ -z "$p" ] && break; sleep 0.1
    done
    kill -KILL "${PIDS[@]}" 2>/dev/null || true
    wait 2>/dev/null || true
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP

# ---- slabtap binary (a private copy: a rebuild during the run changes nothing)
SLABTAP_DESC=
if [ -n "${SLABTAP_REV:-}" ]; then      # a committed revision, built apart from the tree
  rev=$(git rev-parse --short "$SLABTAP_REV^{commit}") || die "unknown revision $SLABTAP_REV"
  mkdir "$TMP/src"; git archive "$rev" | tar -x -C "$TMP/src"
  { cmake -S "$TMP/src" -B "$TMP/build" -DCMAKE_BUILD_TYPE=Release && cmake --build "$TMP/build" -j"$(nproc)" --target slabtap; } \
    >"$TMP/build.log" 2>&1 || { tail -20 "$TMP/build.log" >&2; die "build of $rev failed (log above)"; }
  SLABTAP=$TMP/build/slabtap; SLABTAP_DESC="$rev (SLABTAP_REV=$SLABTAP_REV, built from git archive)"
elif [ -z "${SLABTAP:-}" ]; then        # the working tree, as it is now
  { cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release && cmake --build build-bench -j"$(nproc)" --target slabtap; } \
    >"$TMP/build.log" 2>&1 || { tail -20 "$TMP/build.log" >&2; die "build failed (log above)"; }
  SLABTAP=build-bench/slabtap
fi
if [ -z "$SLABTAP_DESC" ]; then
  SLABTAP_DESC="$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- proxy CMakeLists.txt 2>/dev/null || echo ' + uncommitted changes') ($SLABTAP)"
fi
[ -x "$SLABTAP" ] || die "no slabtap binary at $SLABTAP"
cp "$SLABTAP" "$TMP/slabtap"; SLABTAP_BIN=$TMP/slabtap

USER_FLAG=(); [ "$(id -u)" -eq 0 ] && USER_FLAG=(-u root)
CLK_TCK=$(getconf CLK_TCK)

# start_listener NAME: runs "${CMD[@]}" (with @PORT@ and @PORT2@ replaced by
# free ports) until the new process itself listens on the first one; a lost
# race for a port (EADDRINUSE) just retries with new ones. Sets LPID, LPORT.
start_listener() {
  local name=$1 try p1 p2 pid a args
  for try in $(seq 20); do
    p1=$("${HELPER[@]}" freeport); p2=$("${HELPER[@]}" freeport)
    args=(); for a in "${CMD[@]}"; do a=${a//@PORT@/$p1}; args+=("${a//@PORT2@/$p2}"); done
    [ -n "${CONF_TEMPLATE:-}" ] && sed "s/@PORT@/$p1/g; s/@PORT2@/$p2/g" "$CONF_TEMPLATE" > "${CONF_TEMPLATE%.in}"
    "${args[@]}" >>"$TMP/$name.log" 2>&1 &
    pid=$!; PIDS+=("$pid")
    if "${HELPER[@]}" wait-listen "$pid" "$p1" 15 >/dev/null; then LPID=$pid; LPORT=$p1; return 0; fi
    kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; forget "$pid"
    echo "  ($name did not come up on port $p1, retrying)" >>"$TMP/$name.log"
  done
  tail -5 "$TMP/$name.log" >&2; die "$name would not start"
}

CMD=(memcached "${USER_FLAG[@]}" -t 2 -m 1024 -U 0 -l $H -p @PORT@)
start_listener memcached; MC_PID=$LPID; MC_PORT=$LPORT
until "${HELPER[@]}" ping $H:$MC_PORT; do sleep 0.05; done

declare -A PORT PID
PORT[direct]=$MC_PORT; PID[direct]=
PROCS=("memcached:$MC_PID")     # name (its log: $TMP/name.log):pid, checked by alive_or_die
for path in "${SL_PATHS[@]}"; do
  MODE_ARGS=(); db=runs.db
  [ "$path" = slabtap-pc ] && { MODE_ARGS=(--upstream-conns per-client); db=runs-pc.db; }
  CMD=("$SLABTAP_BIN" proxy --listen $H:@PORT@ --upstream $H:$MC_PORT --db "$TMP/$db" --http off
       ${EXTRA_ARGS[@]+"${EXTRA_ARGS[@]}"} ${MODE_ARGS[@]+"${MODE_ARGS[@]}"})
  start_listener "$path"; PID[$path]=$LPID; PORT[$path]=$LPORT; PROCS+=("$path:$LPID")
  until "${HELPER[@]}" ping $H:$LPORT; do sleep 0.05; done
done

cat > "$TMP/nutcracker.yml.in" <<EOF
bench:
  listen: $H:@PORT@
  hash: fnv1a_64
  distribution: ketama
  timeout: 10000
  preconnect: true
  auto_eject_hosts: false
  server_connections: 1
  servers:
   - $H:$MC_PORT:1
EOF
CONF_TEMPLATE=$TMP/nutcracker.yml.in
sed "s/@PORT@/1/" "$CONF_TEMPLATE" > "$TMP/nutcracker.yml"
nutcracker -t -c "$TMP/nutcracker.yml" >"$TMP/nutcracker.log" 2>&1 || { cat "$TMP/nutcracker.log" >&2; die "bad nutcracker config"; }
CMD=(nutcracker -c "$TMP/nutcracker.yml" -s @PORT2@ -a $H -o "$TMP/nutcracker.log")
start_listener nutcracker; TW_PID=$LPID; TW_PORT=$LPORT
unset CONF_TEMPLATE
until "${HELPER[@]}" ping $H:$TW_PORT; do sleep 0.05; done
PORT[twemproxy]=$TW_PORT; PID[twemproxy]=$TW_PID; PROCS+=("nutcracker:$TW_PID")

# generators of a load (each drives every path: `slabtap load --no-probe`
# sends no `stats` command, which twemproxy would answer by closing)
gens_of() {
  case $1 in
    memcaslap) echo memcaslap;;
    latency) echo slabtap-rate;;
    *) echo slabtap-load; [ "$PYLOAD" = 0 ] || echo pyload;;
  esac
}

# run_load GEN TARGET_PORT WORKLOAD OUT [SECONDS]: one generator run, in
# the background so that a signal reaches the trap at once.
run_load() {
  local gen=$1 port=$2 wl=$3 out=$4 arg=${5:-} pid rc=0
  case $gen in
    memcaslap) memcaslap -s $H:"$port" -T 1 -c 16 -t "${arg:-$DURATION}s" -X 100 >"$out" 2>&1 & ;;
    slabtap-load) "$SLABTAP_BIN" load --target $H:"$port" --workload "$wl" --no-probe --quiet >"$out" 2>&1 & ;;
    slabtap-rate) "$SLABTAP_BIN" load --target $H:"$port" --workload "$wl" --no-probe --quiet --rate "$RATE" \
                    --connections $LAT_CONNS --pipeline $LAT_PIPELINE >"$out" 2>&1 & ;;
    pyload) "${HELPER[@]}" pyload --target $H:"$port" --workload "$wl" >"$out" 2>&1 & ;;
  esac
  pid=$!; PIDS+=("$pid"); wait "$pid" || rc=$?; forget "$pid"
  return $rc
}
parse_out() { if [ "$1" = memcaslap ]; then "${HELPER[@]}" parse-memcaslap "$2"; else "${HELPER[@]}" parse-load "$2"; fi; }
flush_mc() { [ "$("${HELPER[@]}" mc $H:$MC_PORT flush_all)" = OK ] || die "flush_all failed"; }
# prepare LOAD: empty memcached; for the latency load, write the keys it reads
# (straight to memcached, untimed, unseen by the proxies)
prepare() {
  flush_mc
  [ "$1" = latency ] || return 0
  run_load slabtap-load "$MC_PORT" "$LATENCY_PRELOAD" "$TMP/preload.out" \
    && "${HELPER[@]}" parse-load "$TMP/preload.out" >/dev/null \
    || { cat "$TMP/preload.out" >&2; alive_or_die "during the latency preload"; die "latency preload failed"; }
}
# alive_or_die WHEN: memcached, every proxy and nutcracker must all still run
alive_or_die() {
  local name pid rc
  for name in "${PROCS[@]}"; do
    pid=${name#*:}
    kill -0 "$pid" 2>/dev/null && continue
    rc=0; wait "$pid" 2>/dev/null || rc=$?; forget "$pid"
    tail -5 "$TMP/${name%%:*}.log" >&2
    die "${name%%:*} (pid $pid) is gone $1: exit status $rc$( [ $rc -gt 128 ] && echo " ($(kill -l $((rc - 128))))")"
  done
}
# settle PID...: TICKS := CPU ticks of each PID once all are idle again
settle() {
  TICKS=$("${HELPER[@]}" cpu-settle "$@" 2>/dev/null) || { alive_or_die "$WHEN"; die "cannot read CPU of $*"; }
}

{
  echo "loads=$LOADS"; echo "rounds=$ROUNDS"; echo "clk_tck=$CLK_TCK"; echo "paths=${PATHS[*]}"
  echo "sets_wl=$SETS_WL"; echo "large_wl=$LARGE_WL"; echo "latency_wl=$LATENCY_WL"
  echo "rate=$RATE"; echo "latency_seconds=$LATENCY_SECONDS"
  echo "latency_conns=$LAT_CONNS"; echo "latency_pipeline=$LAT_PIPELINE"
} > "$TMP/meta.txt"
: > "$TMP/results.tsv"; : > "$TMP/strace.tsv"; : > "$TMP/latency.tsv"

echo "compare_proxies: $(nproc) cores, $(uname -sr); $(memcached -V); $(nutcracker -V 2>&1 | head -1);"
echo "  slabtap $SLABTAP_DESC${EXTRA_ARGS[*]:+, SLABTAP_ARGS: ${EXTRA_ARGS[*]}}"
where="memcached -t 2 -m 1024 on $H:$MC_PORT"
for path in "${SL_PATHS[@]}"; do
  where+="; $path on :${PORT[$path]}"
  if [ "$path" = slabtap-pc ]; then where+=" (--upstream-conns per-client)"; fi
done
echo "  $where; nutcracker on :$TW_PORT"
echo "  ROUNDS=$ROUNDS DURATION=${DURATION}s LOADS='$LOADS' MODES='$MODES' PYLOAD=$PYLOAD STRACE=$STRACE"
[[ " $LOADS " == *" latency "* ]] && echo "  latency: RATE=$RATE ops/s x LATENCY_SECONDS=${LATENCY_SECONDS}s, $LAT_CONNS connections x $LAT_PIPELINE"
echo

T0=$SECONDS
for load in $LOADS; do
  TL=$SECONDS
  case $load in
    memcaslap) wl=;;
    sets) wl=$SETS_WL;;
    large) wl=$LARGE_WL;;
    latency)   # RATE x LATENCY_SECONDS ops
      wl=$TMP/latency.wl
      "${HELPER[@]}" wl-ops "$LATENCY_WL" "$(awk -v r="$RATE" -v s="$LATENCY_SECONDS" 'BEGIN { printf "%d", r * s }')" \
        > "$wl" || die "cannot size $LATENCY_WL";;
  esac
  for r in $(seq "$ROUNDS"); do
    for path in "${PATHS[@]}"; do
      for gen in $(gens_of "$load"); do
        port=${PORT[$path]}; ppid=${PID[$path]}; out=$TMP/out.$load.$gen.$path.$r
        prepare "$load"
        if [ -n "$ppid" ]; then
          echo 5 > "/proc/$ppid/clear_refs" 2>/dev/null || true     # VmHWM := current RSS
          WHEN="before $load/$gen/$path round $r"; alive_or_die "$WHEN"
          settle "$ppid" "$MC_PID"; read -r p0 m0 <<< "$TICKS"
        else
          WHEN="before $load/$gen/$path round $r"; alive_or_die "$WHEN"
          settle "$MC_PID"; read -r m0 <<< "$TICKS"; p0=
        fi
        run_load "$gen" "$port" "$wl" "$out" || { cat "$out" >&2; alive_or_die "during $load/$gen/$path round $r"; die "$load/$gen/$path round $r failed"; }
        WHEN="after $load/$gen/$path round $r"
        if [ -n "$ppid" ]; then
          settle "$ppid" "$MC_PID"; read -r p1 m1 <<< "$TICKS"; pcpu=$((p1 - p0))
          rss=$("${HELPER[@]}" hwm "$ppid")
        else
          settle "$MC_PID"; read -r m1 <<< "$TICKS"; pcpu=-; rss=-
        fi
        alive_or_die "$WHEN"
        read -r ops secs rate < <(parse_out "$gen" "$out") || { cat "$out" >&2; die "cannot parse $out"; }
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$load" "$gen" "$path" "$r" "$ops" "$secs" \
          "$rate" "$pcpu" "$((m1 - m0))" "$rss" >> "$TMP/results.tsv"
        printf '  %-9s round %d %-10s %-12s %9s ops in %6ss = %8.0f ops/s  proxy %4s ticks  memcached %4s ticks\n' \
          "$load" "$r" "$path" "$gen" "$ops" "$secs" "$rate" "$pcpu" "$((m1 - m0))"
        if [ "$load" = latency ]; then
          "${HELPER[@]}" parse-latency "$out" > "$TMP/lat.txt" || { cat "$out" >&2; die "no latency lines in $out"; }
          line= lt= ms=0
          while read -r cmd p50 p99 p999 pmax n late miss; do
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$load" "$path" "$r" "$cmd" "$p50" \
              "$p99" "$p999" "$pmax" "$n" "$late" "$miss" >> "$TMP/latency.tsv"
            line+="$cmd p50/p99/p99.9/max $p50/$p99/$p999/$pmax us; "; lt=$late ms=$miss
          done < "$TMP/lat.txt"   # (read clears its variables at the end: lt, ms keep them)
          echo "      ${line}late $lt$( [ "$ms" = 0 ] || echo ", get misses $ms")"
        fi
      done
    done
  done

  if [ "$STRACE" = 0 ]; then echo "  ($load: $((SECONDS - TL)) s)"; continue; fi
  swl=$TMP/strace.$load.wl
  case $load in
    sets|large) "${HELPER[@]}" wl-scale "$wl" "$STRACE_SCALE" > "$swl";;
    latency) "${HELPER[@]}" wl-ops "$LATENCY_WL" "$(awk -v r="$RATE" -v s="$STRACE_DURATION" 'BEGIN { printf "%d", r * s }')" \
               > "$swl" || die "cannot size $LATENCY_WL";;
  esac
  for path in "${SL_PATHS[@]}" twemproxy; do
    for gen in $(gens_of "$load"); do
      port=${PORT[$path]}; ppid=${PID[$path]}; out=$TMP/strace-out.$load.$gen.$path
      prepare "$load"
      strace -c -f -p "$ppid" -o "$TMP/strace.txt" 2>"$TMP/strace.err" & spid=$!; PIDS+=("$spid")
      for i in $(seq 100); do grep -q attached "$TMP/strace.err" && break; sleep 0.05; done
      if ! grep -q attached "$TMP/strace.err"; then
        kill "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true; forget "$spid"
        echo "  WARNING: strace could not attach to $path ($(head -1 "$TMP/strace.err")); no syscall figures" \
             "(non-root: kernel.yama.ptrace_scope=0, or STRACE=0)" >&2
        STRACE=0; break 2
      fi
      if [ "$load" = memcaslap ]; then run_load "$gen" "$port" "" "$out" "$STRACE_DURATION"
      else run_load "$gen" "$port" "$swl" "$out"; fi || { cat "$out" >&2; die "strace round $load/$gen/$path failed"; }
      WHEN="after the strace round $load/$gen/$path"; settle "$ppid"
      kill -INT "$spid"; wait "$spid" || true; forget "$spid"
      read -r ops _ _ < <(parse_out "$gen" "$out") || die "cannot parse $out"
      read -r tot rd wr ep wv top < <("${HELPER[@]}" parse-strace "$TMP/strace.txt")
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$load" "$gen" "$path" "$ops" "$tot" "$rd" "$wr" \
        "$ep" "$wv" "$top" >> "$TMP/strace.tsv"
      printf '  %-9s strace  %-10s %-12s %9s ops, %9s syscalls\n' "$load" "$path" "$gen" "$ops" "$tot"
    done
  done
  echo "  ($load: $((SECONDS - TL)) s)"
done
echo "  (all loads: $((SECONDS - T0)) s)"

rc=0; "${HELPER[@]}" report "$TMP" || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] && die "report failed"
[ "${STRICT:-0}" = 1 ] && [ "$rc" -eq 3 ] && exit 3
exit 0
