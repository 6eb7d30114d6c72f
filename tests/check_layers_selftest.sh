#!/usr/bin/env bash
# check_layers.sh must fail on each kind of violation and pass on the tree.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$here/check_layers.sh" "$here/../proxy" >/dev/null
expect_fail() { # description, then a command that breaks the copy
  rm -rf "$tmp/p"; cp -r "$here/../proxy" "$tmp/p"
  (cd "$tmp/p" && eval "$2")
  if "$here/check_layers.sh" "$tmp/p" >"$tmp/out" 2>&1; then
    echo "check_layers passed a tree with $1"; exit 1
  fi
  echo "ok: refuses $1: $(head -1 "$tmp/out")"
}
expect_fail "core including server" 'echo "#include \"server/proxy.h\"" >> core/clock.c'
expect_fail "protocol including model" 'echo "#include \"model/slab_model.h\"" >> protocol/pending.h'
expect_fail "load including server (same rank)" 'echo "#include \"server/app.h\"" >> load/load.c'
expect_fail "an include without its folder" 'echo "#include \"clock.h\"" >> core/log.c'
expect_fail "a file at the top of proxy/" 'touch stray.c'
