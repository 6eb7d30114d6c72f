# Experiment 2: the worst-case size of the default ladder -- items of 945
# bytes (48-byte header + 10-byte key + 1 + 876-byte value + 2 + 8 CAS), one
# byte over the 944 chunk -- stored under two growth factors. The size is
# fixed in bytes, not relative to the ladder, so both runs send the very
# same plan (the runner checks the fingerprints).
connections 4
pipeline 64
seed 2
phase load
set 400000 key=e2w:{i:6} size=876
