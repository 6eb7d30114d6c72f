# Experiment 1, best case: the same 400,000 items sized to fill the
# 1184-byte chunk of class 12 exactly.
connections 4
pipeline 64
seed 1
phase load
set 400000 key=e1b:{i:6} size=fill(12)
