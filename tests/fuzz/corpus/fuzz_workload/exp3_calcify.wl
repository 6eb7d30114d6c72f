# Experiment 3: calcification. Fill a 64 MB cache with tiny items so every
# page belongs to the small class (96-byte chunks), then rewrite a large
# working set -- 1,800 items of 21,696-byte chunks, 38 pages once rebalanced
# -- 150 times under sustained pressure, pausing 20 ms between rounds so the
# slab rebalancer has time to move pages. Without automove the large class
# keeps its one page and thrashes; with slab_automove=2 memcached moves
# pages to it, and once it holds the working set, evictions stop.
connections 4
pipeline 64
seed 3
phase fill_small
set 1000000 key=s:{i:7} size=10
phase large_rewrite
repeat 150 {
  set 1800 key=L:{i:4} size=20000
  sleep 20
}
