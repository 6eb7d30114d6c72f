# Pipelined sets for bench/compare_proxies.sh: experiments/exp1_worst.wl
# with the value size written out: 876-byte values make 945-byte items,
# over(12) for these 10-byte keys on memcached's default ladder (same
# fingerprint as exp1_worst.wl), so no `stats settings` probe is needed for
# the sizes (twemproxy does not answer it). 400,000 sets, ~470 MB of chunks.
connections 4
pipeline 64
seed 1
set 400000 key=e1w:{i:6} size=876
