#!/usr/bin/env bash
# test_model_ladder: `slabtap model ladder` must print, line for line, the
# `slab class ...` lines a real memcached prints with -vv at start-up, for
# each flag set below; and must refuse what memcached refuses.
# Needs: $SLABTAP (the built binary, set by ctest) and memcached on PATH.
# Starts memcached on 127.0.0.1 only; every wait is bounded; the trap kills
# whatever this script started.
set -euo pipefail

: "${SLABTAP:?SLABTAP must point at the slabtap binary}"
command -v memcached >/dev/null || { echo "memcached not on PATH" >&2; exit 1; }
. "$(dirname "$0")/ports.sh" # mc_start: memcached on a free port it picks itself

work=$(mktemp -d)
mc_pid=""
cleanup() {
    if [[ -n "$mc_pid" ]]; then
        kill "$mc_pid" 2>/dev/null || true
        wait "$mc_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# slab_chunk_max is read in bytes up to 1.6.23 and in kilobytes from 1.6.24.
mc_version=$(memcached -V | awk '{print $2}')
if [[ $(printf '%s\n%s\n' "$mc_version" 1.6.24 | sort -V | head -1) == 1.6.24 ]]; then
    scm_unit=1024
else
    scm_unit=1
fi
echo "# memcached $mc_version, slab_chunk_max unit: $scm_unit byte(s)"

# SIGKILL: the ladder is already on disk (stderr is unbuffered), and a
# SIGTERM'd memcached waits for its next one-second clock tick to exit.
stop_mc() {
    kill -KILL "$mc_pid" 2>/dev/null || true
    wait "$mc_pid" 2>/dev/null || true
    mc_pid=""
}

# Run memcached -vv with "$@" and write its ladder lines to $work/mc.ladder.
# Returns 1 if it did not come up (a refusal: its stderr is in $work/mc.err).
# Up means listening (slabs_init, which prints the ladder, runs before the
# listen socket opens).
capture_ladder() {
    local rc=0
    mc_start "$work/mc.err" -vv "$@" || rc=1
    mc_pid=$MC_PID
    stop_mc
    [[ $rc -eq 0 ]] || return 1
    grep '^slab class' "$work/mc.err" >"$work/mc.ladder" || true
}

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok - $*"; }
not_ok() { fail=$((fail + 1)); echo "not ok - $*"; }

# check "description" "memcached flags" "slabtap flags"
check() {
    local desc=$1 mc_flags=$2 st_flags=$3
    # shellcheck disable=SC2086 # the flag strings are word lists on purpose
    if ! capture_ladder $mc_flags; then
        not_ok "$desc: memcached did not start: $(head -1 "$work/mc.err")"
        return
    fi
    if [[ ! -s "$work/mc.ladder" ]]; then
        not_ok "$desc: memcached printed no ladder lines"
        return
    fi
    local rc=0
    # shellcheck disable=SC2086
    "$SLABTAP" model ladder $st_flags >"$work/ours" 2>"$work/ours.err" || rc=$?
    if [[ $rc -ne 0 ]]; then
        not_ok "$desc: slabtap exited $rc: $(head -1 "$work/ours.err")"
        return
    fi
    if diff -u "$work/mc.ladder" "$work/ours" >"$work/diff"; then
        ok "$desc ($(wc -l <"$work/ours") classes)"
    else
        not_ok "$desc: ladder differs (- memcached, + slabtap)"
        sed 's/^/#   /' "$work/diff"
    fi
}

# check_refused "description" "memcached flags" "slabtap flags"
check_refused() {
    local desc=$1 mc_flags=$2 st_flags=$3
    # shellcheck disable=SC2086
    if capture_ladder $mc_flags; then
        not_ok "$desc: memcached started, expected a refusal"
        return
    fi
    local rc=0
    # shellcheck disable=SC2086
    "$SLABTAP" model ladder $st_flags >/dev/null 2>"$work/ours.err" || rc=$?
    if [[ $rc -eq 2 ]]; then
        ok "$desc refused by both (memcached: $(head -1 "$work/mc.err"))"
    else
        not_ok "$desc: memcached refused ($(head -1 "$work/mc.err")), slabtap exited $rc"
    fi
}

scm() { echo "slab_chunk_max=$(($1 / scm_unit))"; }

check "defaults" "" ""
check "-f 1.08" "-f 1.08" "-f 1.08"
check "-n 5 -f 1.05" "-n 5 -f 1.05" "-n 5 -f 1.05"
check "slab_chunk_max 16384" "-o $(scm 16384)" "--slab-chunk-max 16384"
check "-I 4m" "-I 4m" "-I 4m"
check "-I 512k" "-I 512k" "-I 512k"
check "slab_sizes 100-200-1000-9000" "-o slab_sizes=100-200-1000-9000" \
    "--slab-sizes 100-200-1000-9000"
check "-I 2m slab_chunk_max 262144" "-I 2m -o $(scm 262144)" "-I 2m --slab-chunk-max 262144"
check "-n 10 -f 2" "-n 10 -f 2" "-n 10 -f 2"
# a factor with three decimals (stats settings prints 1.12) and issue 11's slab_sizes
check "-f 1.125" "-f 1.125" "-f 1.125"
check "slab_sizes 100-200-400-800-1600" "-o slab_sizes=100-200-400-800-1600" \
    "--slab-sizes 100-200-400-800-1600"
check "-C (ladder unchanged)" "-C" "--no-cas"
check "62 slab_sizes" "-o slab_sizes=$(seq -s- 100 10 710)" "--slab-sizes $(seq -s- 100 10 710)"

check_refused "-I 256k (chunk max above -I)" "-I 256k" "-I 256k"
check_refused "-I 1500000 (not a multiple of chunk max)" "-I 1500000" "-I 1500000"
check_refused "slab_sizes 100-108 (steps of 8 or less)" "-o slab_sizes=100-108" \
    "--slab-sizes 100-108"

# The comparison itself must be able to fail: a different factor must not
# match memcached's default ladder.
if capture_ladder && "$SLABTAP" model ladder -f 1.3 >"$work/ours" &&
    ! diff -q "$work/mc.ladder" "$work/ours" >/dev/null; then
    ok "self-check: -f 1.3 differs from memcached's default ladder"
else
    not_ok "self-check: the comparison did not notice a different ladder"
fi

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
