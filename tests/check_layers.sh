#!/usr/bin/env bash
# Fails when a file under proxy/ includes a header from a folder above its
# own. The order (lower first); folders on one rank may not include each
# other:
#   core < protocol < model < record < server = load < experiment < cli
# Also fails on a source file directly in proxy/ (every file has a room) and
# on a project include without its folder ("foo.h" instead of "core/foo.h").
# Usage: tests/check_layers.sh [PROXY_DIR]   (default: this checkout's proxy/)
set -u
cd "${1:-$(dirname "$0")/../proxy}" || exit 2
declare -A rank=([core]=0 [protocol]=1 [model]=2 [record]=3 [server]=4 [load]=4
                 [experiment]=5 [cli]=6)
bad=0
for f in *.c *.h; do
  [ -e "$f" ] || continue
  echo "proxy/$f: not in a subsystem folder"; bad=1
done
while IFS= read -r f; do
  dir=${f%%/*}
  if [ -z "${rank[$dir]+x}" ]; then
    echo "proxy/$f: folder '$dir' has no rank in tests/check_layers.sh"; bad=1; continue
  fi
  while IFS=: read -r line inc; do
    target=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$inc")
    tdir=${target%%/*}
    if [ "$tdir" = "$target" ]; then
      echo "proxy/$f:$line: include \"$target\" lacks its folder"; bad=1; continue
    fi
    if [ -z "${rank[$tdir]+x}" ]; then
      echo "proxy/$f:$line: include \"$target\": unknown folder"; bad=1; continue
    fi
    if [ "$tdir" != "$dir" ] && [ "${rank[$tdir]}" -ge "${rank[$dir]}" ]; then
      echo "proxy/$f:$line: $dir/ includes $target (${tdir}/ is not below ${dir}/)"; bad=1
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f")
done < <(find . -mindepth 2 -name '*.[ch]' | sed 's|^\./||' | sort)
if [ "$bad" -ne 0 ]; then
  echo "check_layers: FAILED"
  exit 1
fi
echo "check_layers: every include points down ($(find . -mindepth 2 -name '*.[ch]' | wc -l) files)"
