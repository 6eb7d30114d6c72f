# 100 KB values for bench/compare_proxies.sh: 3,000 keys of 102,400-byte
# values (~300 MB resident in memcached) written 10 times over: 30,000
# sets, ~3 GB through the proxy, 4 connections x 16 in flight.
connections 4
pipeline 16
seed 1
repeat 10 {
  set 3000 key=lv:{i:4} size=102400
}
