# test_experiment.py fixture: items one byte over class 11's chunk (over(12),
# from the live ladder), 10-byte keys.
connections 2
pipeline 32
seed 1
phase load
set 2000 key=po:{i:7} size=over(12)
