# test_experiment.py fixture: items that exactly fill class 12's chunk.
connections 2
pipeline 32
seed 1
phase load
set 2000 key=pf:{i:7} size=fill(12)
