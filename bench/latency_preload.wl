# Preload for bench/latency_mix.wl: every key it reads (lm:0000 ..
# lm:4999), 100-byte values. compare_proxies.sh sends it straight to
# memcached, as fast as it goes, before each measured latency run (after
# flush_all), so those sets are neither timed nor seen by the proxy.
connections 4
pipeline 64
seed 1
set 5000 key=lm:{i:4} size=100
