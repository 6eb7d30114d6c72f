# Hit ratio 3: the value sizes shift half way. Phase 1: 150,000 keys
# (Zipf 1.0) of small values (ETC sizes); phase 2 (second_half): a new
# key space of 30,000 keys (Zipf 1.0) of 2..6 KB values, which needs pages
# in classes phase 1 never used (the calcification question, hit-ratio side).
seed 3
connections 4
pipeline 64
getset 600000 key=small:{zipf:150000:1.0:6} size=etc
phase second_half
getset 600000 key=big:{zipf:30000:1.0:5} size=uniform(2000,6000)
