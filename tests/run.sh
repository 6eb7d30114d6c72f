#!/usr/bin/env bash
# Runs every slabtap test on a fresh Debian machine: installs what is
# missing, configures, builds, runs ctest, then fuzzes every tests/fuzz
# target for SLABTAP_FUZZ_SECONDS each (default 30, 0 skips; see the fuzz
# step below). SLABTAP_SANITIZE=ON (the CI default) builds with
# AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

SANITIZE=${SLABTAP_SANITIZE:-ON}
BUILD_DIR=${BUILD_DIR:-build-test}

# Debian packages the build and the tests use (prometheus: promtool checks /metrics).
PKGS=(build-essential cmake pkg-config libuv1-dev libhttp-parser-dev libsqlite3-dev
      sqlite3 memcached python3 python3-pymemcache python3-yaml libjs-chart.js chromium libpq-dev
      postgresql prometheus)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "tests/run.sh: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B "$BUILD_DIR" -DSLABTAP_SANITIZE="$SANITIZE" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$BUILD_DIR" -j"$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
(cd "$BUILD_DIR" && ctest --output-on-failure -j2 "$@")

# Fuzz step: every tests/fuzz target for SLABTAP_FUZZ_SECONDS each (default
# 30; 0 skips the step) in its own clang build (tests/fuzz/run.sh, which
# fails on any crash, leak or sanitizer report). clang and libFuzzer's
# runtime (libclang-rt-dev; clang only recommends it) are installed here only.
FUZZ_SECONDS=${SLABTAP_FUZZ_SECONDS:-30}
if [ "$FUZZ_SECONDS" != 0 ]; then
  FUZZ_PKGS=(clang libclang-rt-dev)
  missing=()
  for p in "${FUZZ_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "tests/run.sh: installing ${missing[*]} (fuzz step; SLABTAP_FUZZ_SECONDS=0 skips it)"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  FUZZ_SECONDS="$FUZZ_SECONDS" tests/fuzz/run.sh
fi
