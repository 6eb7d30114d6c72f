# A bimodal size mix for `slabtap model advise` (tests/integration/
# test_model_advise.py): many small items around 300 bytes and many large
# ones around 5,000 bytes. The default ladder (-f 1.25) has no class that
# fits either cluster well; a finer -f, or a slab_sizes ladder fitted to
# the two clusters, wastes less. Fixed-length keys (12 bytes) so every
# item's size is its value length + 71 (48 header + 13 key + 2 + 8 CAS).
connections 4
pipeline 64
seed 11
phase small
set 12000 key=bm:s:{i:7} size=uniform(240,360)
phase large
set 4000 key=bm:l:{i:7} size=uniform(4700,5300)
phase rewrite
# a third of the small ones rewritten with another size from the same spread
set 4000 key=bm:s:{i:7} size=uniform(240,360)
