# The run behind tests/data/hits_advice_verified.json (test_page checks the
# page's line of words for a report with measured numbers on it): memcached
# -m 8 (1.6.18), `slabtap proxy --db fx.db --run getset` in front, this file
# through `slabtap load --workload getset_page.wl`, the proxy stopped, then
# `slabtap model advise --db fx.db --run 1 --objective hits --verify --save`
# and the run_meta value 'hits_advice' written out (about 40 s).
seed 7
connections 2
pipeline 32
getset 50000 key=k:{zipf:50000:0.9:5} size=uniform(100,600)
phase second_half
getset 50000 key=k:{zipf:50000:0.9:5} size=uniform(100,600)
