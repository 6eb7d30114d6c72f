#!/usr/bin/env bash
# Run memcached's own test suite (t/*.t of release 1.6.18) against the
# installed memcached directly and through slabtap, and compare.
# See tests/conformance/README.md.
#
#   tests/conformance/memcached_t.sh [driver options]
#   tests/conformance/memcached_t.sh repro     the class (a) differences as raw bytes
#
# Environment:
#   MEMCACHED_T=/path/to/t    use this t/ instead of extracting it from the mirror
#   MEMCACHED_MIRROR=DIR      git dir of memcached (default /work/.mirror/memcached+memcached/repo)
#   MEMCACHED_TAG=TAG         release whose t/ to extract (default 1.6.18)
#   MEMCACHED=/path           the real memcached (default: memcached on PATH)
#   SLABTAP=/path             slabtap binary (default: build-mct/slabtap, build/slabtap;
#                             built into build-conformance/ when neither exists)
#   MCT_MODES=direct,pooled,per-client   modes (per-client = --upstream-conns per-client)
#   MCT_JOBS=6 MCT_TIMEOUT=120
#   MCT_SLOW=1                also run binary-extstore.t and maxconns.t (200 s+ each)
# Driver options (passed through): --only a.t,b.t  --exclude c.t  --work DIR  -v  --strict
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

command -v perl >/dev/null || { echo "memcached_t: perl is required" >&2; exit 2; }
perl -MTest::More -e1 2>/dev/null || { echo "memcached_t: perl Test::More is required" >&2; exit 2; }
command -v python3 >/dev/null || { echo "memcached_t: python3 is required" >&2; exit 2; }

memcached="${MEMCACHED:-$(command -v memcached || true)}"
[ -x "$memcached" ] || { echo "memcached_t: no memcached (set MEMCACHED=)" >&2; exit 2; }

slabtap="${SLABTAP:-}"
if [ -z "$slabtap" ]; then
  for c in "$root/build-mct/slabtap" "$root/build/slabtap"; do
    if [ -x "$c" ]; then slabtap="$c"; break; fi
  done
fi
if [ -z "$slabtap" ]; then
  echo "memcached_t: building slabtap into $root/build-conformance" >&2
  cmake -S "$root" -B "$root/build-conformance" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$root/build-conformance" -j2 --target slabtap >/dev/null
  slabtap="$root/build-conformance/slabtap"
fi

if [ "${1:-}" = repro ]; then
  shift
  exec python3 "$here/memcached_t.py" repro --slabtap "$slabtap" --memcached "$memcached" "$@"
fi

args=(run --slabtap "$slabtap" --memcached "$memcached"
      --mirror "${MEMCACHED_MIRROR:-/work/.mirror/memcached+memcached/repo}"
      --tag "${MEMCACHED_TAG:-1.6.18}"
      --modes "${MCT_MODES:-direct,pooled,per-client}"
      --jobs "${MCT_JOBS:-6}" --timeout "${MCT_TIMEOUT:-120}")
if [ -n "${MEMCACHED_T:-}" ]; then args+=(--t "$MEMCACHED_T"); fi
if [ -n "${MCT_SLOW:-}" ]; then args+=(--slow); fi

exec python3 "$here/memcached_t.py" "${args[@]}" "$@"
