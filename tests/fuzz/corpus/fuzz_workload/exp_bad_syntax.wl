# test_experiment.py fixture: line 6 has an unknown size
connections 2
seed 1
phase load
set 10 key=bs:{i:7} size=over(12)
set 10 key=bs:{i:7} size=fil(12)
