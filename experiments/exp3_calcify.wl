# Experiment 3: calcification. Fill a 64 MB cache with tiny items so every
# page belongs to the small class, then rewrite a large working set (about
# 44 pages of 23,600-byte chunks once rebalanced) 40 times under sustained
# pressure. Without automove the large class keeps its one page and
# thrashes; with slab_automove=2 memcached moves pages to it.
connections 4
pipeline 64
seed 3
phase fill_small
set 1200000 key=s:{i:7} size=10
phase large_rewrite
repeat 40 {
  set 1800 key=L:{i:4} size=20000
}
