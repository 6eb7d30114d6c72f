#!/usr/bin/env bash
# The main job. Until the experiment runner lands this is a demo: it builds
# slabtap, starts its own memcached on a free loopback port, puts the proxy
# in front, sends a small load through it and prints what was recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(build-essential cmake pkg-config libuv1-dev libhttp-parser-dev libsqlite3-dev sqlite3 memcached python3 python3-pymemcache)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
mkdir -p results
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
MC_PORT=$(free_port); PX_PORT=$(free_port)
USER_FLAG=(); [ "$(id -u)" -eq 0 ] && USER_FLAG=(-u root)
memcached "${USER_FLAG[@]}" -l 127.0.0.1 -p "$MC_PORT" -U 0 -m 64 & MC=$!
trap 'kill $MC ${PX:-} 2>/dev/null || true' EXIT
rm -f results/demo.db
build/slabtap proxy --listen 127.0.0.1:$PX_PORT --upstream 127.0.0.1:$MC_PORT --db results/demo.db --run demo & PX=$!
sleep 0.5
/usr/bin/python3 - "$PX_PORT" <<'PY'
import sys
from pymemcache.client.base import Client
c = Client(("127.0.0.1", int(sys.argv[1])))
for i in range(10000):
    c.set(f"demo:{i}", b"x" * (i % 2000), noreply=False)
print("sent 10000 sets through the proxy")
PY
kill -TERM $PX; wait $PX
sqlite3 -header -column results/demo.db "select cmd, answer, count(*) writes, sum(value_len) bytes from sets group by 1,2"
