# Experiment 2's worst case, small (tests/integration/test_model_advise.py):
# items of 945 bytes -- 48-byte header + 10-byte key + 1 + 876-byte value
# + 2 + 8 CAS -- one byte over the default ladder's 944 chunk, so each
# takes a 1184-byte chunk (20.19 % waste). experiments/exp2_worst.wl
# stores 400,000 of them; 20,000 are enough to see it.
connections 4
pipeline 64
seed 2
phase load
set 20000 key=e2w:{i:6} size=876
