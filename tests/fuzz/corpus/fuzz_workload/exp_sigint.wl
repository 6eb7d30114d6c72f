# test_experiment.py fixture: far more small sets than the test lets finish
# (it sends SIGINT while they run).
connections 4
pipeline 64
seed 9
phase flood
set 2000000 key=sg:{i:7} size=10
