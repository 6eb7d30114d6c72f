#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (-DSLABTAP_FUZZ=ON: every slabtap
# library instrumented, ASan + UBSan) in their own build dir and runs each
# tests/fuzz/fuzz_*.c for FUZZ_SECONDS (default 30) on a copy of its
# committed corpus (tests/fuzz/corpus/<target>/, never grown by a run).
# Prints each target's runs, exec/s and coverage; exits 1 if any target
# crashed, leaked, hung, tripped a sanitizer or broke one of its checks,
# after printing the reproducer (hex) and how to replay it.
#
#   FUZZ_SECONDS=0   build, then only replay each committed corpus once
#   FUZZ_BUILD_DIR   default build-fuzz
#   FUZZ_TARGETS     e.g. "fuzz_trace fuzz_workload" (default: all)
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_EACH=${FUZZ_SECONDS:-30}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
CORPUS=tests/fuzz/corpus
if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a TARGETS <<<"$FUZZ_TARGETS"
else
  TARGETS=()
  for src in tests/fuzz/fuzz_*.c; do TARGETS+=("$(basename "$src" .c)"); done
fi

# Longest input per target: past each parser's interesting bounds (the admin
# head bound is 8 KiB and its read chunk 16 KiB; a stats batch runs to ~8 KiB;
# the shared-connection target's clients send multigets past memcached's
# 16 KiB read buffer and non-get lines past 2048 bytes).
max_len() {
  case "$1" in
    fuzz_admin_http) echo 20000 ;;
    fuzz_shared_conn) echo 32768 ;;
    fuzz_stats_parse) echo 16384 ;;
    fuzz_mclog) echo 9000 ;; # past MCLOG_LINE_MAX (4096) twice
    *) echo 4096 ;;
  esac
}

command -v clang >/dev/null || { echo "tests/fuzz/run.sh: needs clang (apt-get install clang libclang-rt-dev)" >&2; exit 1; }
echo "tests/fuzz/run.sh: building ${TARGETS[*]} in $BUILD"
mkdir -p "$BUILD"
CC=clang cmake -S . -B "$BUILD" -DSLABTAP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$BUILD/configure.log" 2>&1 ||
  { cat "$BUILD/configure.log" >&2; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" --target "${TARGETS[@]}"

export ASAN_OPTIONS=${FUZZ_ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${FUZZ_UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# the last libFuzzer status line's FIELD value ("cov: 412" -> 412)
field() { { grep -aoE "$2: [0-9/a-zA-Z]+" <<<"$1" || true; } | tail -1 | cut -d' ' -f2; }

passed=0
failed=0
summary=$(printf '%-18s %10s %8s %12s %8s %11s %7s  %s' target runs exec/s cov ft corpus rss_mb result)
for t in "${TARGETS[@]}"; do
  work="$BUILD/fuzz-run/$t"
  rm -rf "$work"
  mkdir -p "$work/corpus"
  [ -d "$CORPUS/$t" ] && cp -R "$CORPUS/$t/." "$work/corpus/"
  args=(-rss_limit_mb=2048 -timeout=20 -max_len="$(max_len "$t")" -print_final_stats=1
        -artifact_prefix="$work/")
  if [ "$SECONDS_EACH" -gt 0 ]; then
    args+=(-max_total_time="$SECONDS_EACH")
  else
    args+=(-runs=0)
  fi
  rc=0
  "$BUILD/$t" "${args[@]}" "$work/corpus" >"$work/log" 2>&1 || rc=$?
  status=$(grep -aE '^#[0-9]+[[:space:]]+(INITED|NEW|REDUCE|pulse|DONE)' "$work/log" || true)
  first=$(grep -aE 'INITED' <<<"$status" | tail -1 || true)
  last=$(tail -1 <<<"$status")
  runs=$(awk '/^stat::number_of_executed_units:/ {print $2}' "$work/log")
  eps=$(awk '/^stat::average_exec_per_sec:/ {print $2}' "$work/log")
  rss=$(awk '/^stat::peak_rss_mb:/ {print $2}' "$work/log")
  cov="$(field "$first" cov)->$(field "$last" cov)"
  reports=$(grep -acE 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|check failed' "$work/log" || true)
  if [ "$rc" -eq 0 ] && [ "${reports:-0}" -eq 0 ]; then
    result=ok
    passed=$((passed + 1))
  else
    result="FAILED (exit $rc)"
    failed=$((failed + 1))
  fi
  line=$(printf '%-18s %10s %8s %12s %8s %11s %7s  %s' "$t" "${runs:-?}" "${eps:-?}" "$cov" \
    "$(field "$last" ft)" "$(field "$last" corp)" "${rss:-?}" "$result")
  echo "$line"
  summary+=$'\n'"$line"
  if [ "$result" != ok ]; then
    echo "---- $t: $work/log (sanitizer/libFuzzer report) ----"
    grep -anE 'check failed|ERROR:|runtime error:|SUMMARY:|^    #[0-9]+ ' "$work/log" | head -60 || true
    for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$work"/slow-unit-*; do
      [ -e "$a" ] || continue
      echo "---- reproducer $a ($(wc -c <"$a") bytes), replay: $BUILD/$t $a"
      od -An -tx1 -v "$a" | head -40
    done
  fi
done
echo
echo "$summary"
echo "(cov: edges covered after replaying the committed corpus -> at the end; each run ${SECONDS_EACH}s)"
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
