# Latency mix for bench/compare_proxies.sh (load `latency`): 90 % get /
# 10 % set, 100-byte values, 5,000 keys of 7 bytes (lm:0000 .. lm:4999)
# drawn at random, interleaved 9 gets : 1 set. Sent open loop by
# `slabtap load --rate RATE --no-probe --connections 4 --pipeline 16`;
# the script rewrites the repeat count so the run sends RATE x
# LATENCY_SECONDS ops (12,000 x 10 = 120,000 here: 6 s at 20,000 ops/s).
# bench/latency_preload.wl writes every key first, so the gets hit.
connections 4
pipeline 16
seed 7
repeat 12000 {
  get 9 key=lm:{rand:5000:4}
  set 1 key=lm:{rand:5000:4} size=100
}
